/* text_buf.h - a growing text buffer for tests that write IR text with
 * printf-style pieces (put(&b, "...", ...)); b.s is NUL-terminated and
 * malloc'd (free(b.s) when done). */
#ifndef ICC_TEST_TEXT_BUF_H
#define ICC_TEST_TEXT_BUF_H

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    char *s;
    size_t n, cap;
} buf;

static void put(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3), unused));
static void put(buf *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        ck_assert_int_ge(k, 0);
        if (b->s && b->n + (size_t)k < b->cap) {
            b->n += (size_t)k;
            return;
        }
        b->cap = (b->cap + (size_t)k + 1) * 2;
        b->s = realloc(b->s, b->cap);
        ck_assert_ptr_nonnull(b->s);
    }
}

#endif
