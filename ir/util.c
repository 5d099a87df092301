/* util.c - diagnostics, checked size arithmetic, the arena, and a string test. */
#include "ir/ir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Messages are one line of text: fold newlines and other control bytes
 * (terminal escapes) that user strings bring in. */
static void fold_controls(char *s)
{
    for (char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
}

int ir_verrorf(icc_diag *d, const char *fmt, va_list ap)
{
    if (d) {
        vsnprintf(d->msg, sizeof d->msg, fmt, ap);
        fold_controls(d->msg);
    }
    return -1;
}

int ir_errorf(icc_diag *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ir_verrorf(d, fmt, ap);
    va_end(ap);
    return -1;
}

int ir_located_verrorf(icc_diag *d, const char *node, const char *op, const char *fmt, va_list ap)
{
    if (!d)
        return -1;
    char buf[768];
    vsnprintf(buf, sizeof buf, fmt, ap);
    return ir_errorf(d, "node '%.200s' (%.100s): %s", node, op, buf);
}

void ir_diag_prefix(icc_diag *d, const char *fmt, ...)
{
    if (!d)
        return;
    char pre[512], old[sizeof d->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    memcpy(old, d->msg, sizeof old);
    snprintf(d->msg, sizeof d->msg, "%s: %s", pre, old);
    fold_controls(d->msg);     /* the prefix may hold names from the model (a subgraph's path) */
}

FILE *ir_fopen_regular(const char *path, icc_diag *d)
{
    /* O_NONBLOCK so that opening a FIFO returns at once; cleared before
     * reading (regular files ignore it anyway). */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        ir_errorf(d, "%s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        ir_errorf(d, "%s: %s", path, S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
        close(fd);
        return NULL;
    }
    FILE *f;
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0 || !(f = fdopen(fd, "rb"))) {
        ir_errorf(d, "%s: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    return f;
}

bool ir_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

bool ir_mul_ok(int64_t a, int64_t b, int64_t *r)
{
    if (a < 0 || b < 0)
        return false;
    return !__builtin_mul_overflow(a, b, r);
}

bool ir_add_ok(int64_t a, int64_t b, int64_t *r)
{
    if (a < 0 || b < 0)
        return false;
    return !__builtin_add_overflow(a, b, r);
}

bool ir_add_signed_ok(int64_t a, int64_t b, int64_t *r)
{
    return !__builtin_add_overflow(a, b, r);
}

/* A zero dim makes the product 0 whatever the others are, but a negative
 * dim or an overflowing partial product anywhere is still rejected, so the
 * answer does not depend on the order of the dims. */
bool ir_numel_ok(const int64_t *dims, int n, int64_t *r)
{
    int64_t p = 1;
    bool zero = false, over = false;
    for (int i = 0; i < n; i++) {
        if (dims[i] < 0)
            return false;
        if (dims[i] == 0) {
            zero = true;
            continue;
        }
        if (!over && !ir_mul_ok(p, dims[i], &p))
            over = true;
    }
    if (over)
        return false;
    *r = zero ? 0 : p;
    return true;
}

/* ---- arena: a list of malloc'd blocks, bump allocation inside ---------- */

typedef struct ir_block {
    struct ir_block *next;
    size_t size, used;
    _Alignas(64) unsigned char data[];
} ir_block;

/* A file mapping the arena took over (a large external-data constant
 * read in place, not copied): unmapped when the arena goes. */
typedef struct ir_mapping {
    struct ir_mapping *next;
    void *addr;
    size_t len;
} ir_mapping;

struct ir_arena {
    ir_block *head;
    ir_mapping *maps;
    size_t total;
};

ir_arena *ir_arena_create(void)
{
    return calloc(1, sizeof(ir_arena));
}

void ir_arena_destroy(ir_arena *a)
{
    if (!a)
        return;
    for (ir_block *b = a->head, *n; b; b = n) {
        n = b->next;
        free(b);
    }
    for (ir_mapping *m = a->maps, *n; m; m = n) {
        n = m->next;
        munmap(m->addr, m->len);
        free(m);
    }
    free(a);
}

int ir_arena_adopt_mapping(ir_arena *a, void *addr, size_t len)
{
    ir_mapping *m = malloc(sizeof *m);
    if (!m)
        return -1;
    *m = (ir_mapping){a->maps, addr, len};
    a->maps = m;
    return 0;
}

void *ir_arena_alloc(ir_arena *a, size_t n)
{
    if (n > (size_t)IR_MAX_TENSOR_BYTES)
        return NULL;
    size_t need = (n + 63) & ~(size_t)63;
    if (need == 0)
        need = 64;
    ir_block *b = a->head;
    if (!b || b->size - b->used < need) {
        /* Large requests get a block of their own behind the current one,
         * so the current block's free space is not wasted. */
        size_t bs = need > 65536 ? need : 65536;
        ir_block *nb = aligned_alloc(64, (sizeof(ir_block) + bs + 63) & ~(size_t)63);
        if (!nb)
            return NULL;
        nb->size = bs;
        nb->used = 0;
        if (b && need > 65536) {
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            a->head = nb;
        }
        a->total += bs;
        b = nb;
    }
    void *p = b->data + b->used;
    b->used += need;
    memset(p, 0, need);
    return p;
}

char *ir_arena_strndup(ir_arena *a, const char *s, size_t n)
{
    char *p = ir_arena_alloc(a, n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

char *ir_arena_strdup(ir_arena *a, const char *s)
{
    return ir_arena_strndup(a, s, strlen(s));
}

size_t ir_arena_bytes(const ir_arena *a)
{
    return a->total;
}
