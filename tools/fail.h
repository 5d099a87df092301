/* fail.h - the driver's one way to report an error: "icc: error: <msg>" as
 * one line on stderr; returns 1, the exit status of a failed command. */
#ifndef ICC_TOOLS_FAIL_H
#define ICC_TOOLS_FAIL_H

#include <stdarg.h>
#include <stdio.h>

static inline int icc_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int icc_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("icc: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

#endif
