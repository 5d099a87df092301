/* coalesce.c - the loop nest of an elementwise kernel over coalesced
 * dims (lw_coalesce), then split between threads (lw_parallelize).
 *
 * The elementwise family loops over the output's dims, the last one a
 * VECTOR loop. When that dim is short (a blocked layout's 16 lanes, a
 * 48-wide plane row) the vector loop runs one or two steps per iteration
 * of the loop around it and LLVM, unrolling it, vectorized the outer loop
 * instead with strided accesses and run-time alias checks: a Cast of an
 * NCHWc tensor to bf16 ran at 0.8 GFLOP/s. Here, after the formula is
 * built, the innermost VECTOR loop absorbs the loop around it (A x B
 * iterations become one loop of A*B) whenever every access is either
 * over both dims whole (buffer dims [.., A, B] indexed [.., a, b]: the
 * access becomes a view of that buffer with the two dims merged, indexed
 * by the merged variable) or over neither (a broadcast, unchanged); any
 * other use of the two variables (a per-row broadcast [A, 1], arithmetic
 * on them) leaves the loops as they are. Repeated while it applies, so a
 * contiguous tensor becomes one loop.
 *
 * The nest is built without a PARALLEL loop (mv_nest with par false);
 * lw_parallelize then makes the outermost loops one PARALLEL loop over
 * their flattened product (at least `least` iterations where the sizes
 * allow), each former loop variable recomputed from it by div/rem.
 * Kernel IR expressions are a DAG whose VAR nodes are made per use, so
 * both rewrite nodes in place: a VAR node becomes its replacement, a load
 * its view.
 */
#include "codegen/lower/internal.h"

#include <stdlib.h>
#include <string.h>

static bool is_var(const kir_expr *x, int v) { return x && x->op == KIR_VAR && x->var == v; }


/* Whether x reads loop variable v, through the values of the lets it
 * reads too. */
static bool uses(const kir_kernel *k, const kir_expr *x, int v)
{
    if (!x)
        return false;
    switch (x->op) {
    case KIR_VAR: return x->var == v;
    case KIR_LETV: return uses(k, k->let_value[x->var], v);
    case KIR_CONST: case KIR_SYM: case KIR_ACC: return false;
    case KIR_LOAD:
        for (int i = 0; i < x->nidx; i++)
            if (uses(k, x->idx[i], v))
                return true;
        return false;
    default:
        for (int i = 0; i < kir_op_arity(x->op); i++)
            if (uses(k, x->a[i], v))
                return true;
        return false;
    }
}

typedef struct {
    kir_kernel *k;
    int a, b;                  /* the outer and the inner (vector) loop's variables */
    int64_t A, B;
} merge;

/* An access of buffer buf at idx: 1 over both dims whole (the last two
 * indices a and b over dims A and B), 0 over neither, -1 otherwise. */
static int access_kind(const merge *m, int buf, int nidx, kir_expr *const *idx)
{
    const kir_buf *bb = &m->k->bufs[buf];
    int64_t da, db;
    bool whole = nidx >= 2 && is_var(idx[nidx - 1], m->b) && is_var(idx[nidx - 2], m->a) &&
                 bb->kind != KIR_BUF_SCRATCH && bb->kind != KIR_BUF_STATUS && lw_const_i(bb->dims[nidx - 1], &db) &&
                 lw_const_i(bb->dims[nidx - 2], &da) && da == m->A && db == m->B;
    for (int i = 0; i < nidx - (whole ? 2 : 0); i++)
        if (uses(m->k, idx[i], m->a) || uses(m->k, idx[i], m->b))
            return -1;
    return whole ? 1 : 0;
}

static bool check_expr(const merge *m, const kir_expr *x)
{
    if (!x)
        return true;
    switch (x->op) {
    case KIR_VAR: return x->var != m->a && x->var != m->b;
    case KIR_LETV: return true;    /* its LET statement is checked (inside the vector loop) */
    case KIR_LOAD: {
        int kind = access_kind(m, x->buf, x->nidx, x->idx);
        if (kind < 0)
            return false;
        for (int i = 0; i < x->nidx - 2 * kind; i++)
            if (!check_expr(m, x->idx[i]))
                return false;
        return true;
    }
    default:
        for (int i = 0; i < kir_op_arity(x->op); i++)
            if (!check_expr(m, x->a[i]))
                return false;
        return true;
    }
}

/* The view of buffer buf with its last two dims merged (made once per
 * buffer: views[buf], indices past nviews are views themselves), or -1. */
static int view_of(merge *m, int *views, int nviews, int buf)
{
    if (buf >= nviews)
        return buf;
    if (views[buf] >= 0)
        return views[buf];
    const kir_buf *b = &m->k->bufs[buf];
    ir_type t = {.dtype = b->dtype, .rank = b->rank - 1};
    for (int i = 0; i < b->rank - 2; i++) {
        const kir_expr *d = b->dims[i];
        t.dims[i] = d->op == KIR_SYM ? (ir_dim){0, d->var} : ir_dim_const(d->c.i);
    }
    t.dims[b->rank - 2] = ir_dim_const(m->A * m->B);
    views[buf] = kir_add_buf(m->k, b->name, b->kind, &t, b->index, b->offset);
    return views[buf];
}

/* Rewrites the accesses of x over both dims to their views (in place); 0
 * or -1 on out of memory. */
static int rewrite_expr(merge *m, kir_expr *x, int *views, int nviews)
{
    if (!x)
        return 0;
    if (x->op == KIR_LOAD) {
        if (x->buf < nviews && access_kind(m, x->buf, x->nidx, x->idx) == 1) {
            int v = view_of(m, views, nviews, x->buf);
            kir_expr *idx[IR_MAX_RANK];
            for (int i = 0; i < x->nidx - 2; i++)
                idx[i] = x->idx[i];
            idx[x->nidx - 2] = kir_var(m->k, m->b);
            kir_expr *nl = v < 0 ? NULL : kir_load(m->k, v, idx);
            if (!nl)
                return -1;
            *x = *nl;
        }
        for (int i = 0; i < x->nidx; i++)
            if (rewrite_expr(m, x->idx[i], views, nviews) < 0)
                return -1;
        return 0;
    }
    if (x->op == KIR_LETV || x->op == KIR_VAR)
        return 0;
    for (int i = 0; i < kir_op_arity(x->op); i++)
        if (rewrite_expr(m, x->a[i], views, nviews) < 0)
            return -1;
    return 0;
}

/* Merges the vector loop `in` into `out` (whose body it is alone): 1
 * merged, 0 not possible, -1 out of memory. */
static int try_merge(kir_kernel *k, kir_stmt *out, kir_stmt *in)
{
    merge m = {k, out->var, in->var, 0, 0};
    int64_t lo;
    if (!lw_const_i(out->lo, &lo) || lo || !lw_const_i(in->lo, &lo) || lo || !lw_const_i(out->hi, &m.A) ||
        !lw_const_i(in->hi, &m.B) || m.A < 1 || m.B < 1 || m.A > (INT64_C(1) << 31) / m.B)
        return 0;
    const kir_block *body = &in->body;
    for (int i = 0; i < body->n; i++) {
        const kir_stmt *s = body->s[i];
        if (s->kind == KIR_S_LET) {
            if (!check_expr(&m, s->value))
                return 0;
        } else if (s->kind == KIR_S_STORE) {
            if (access_kind(&m, s->buf, s->nidx, s->idx) != 1 || !check_expr(&m, s->value))
                return 0;
            for (int d = 0; d < s->nidx - 2; d++)
                if (!check_expr(&m, s->idx[d]))
                    return 0;
        } else {
            return 0;
        }
    }
    int nviews = k->nbufs;
    int *views = malloc(sizeof *views * (size_t)(nviews + 1));
    if (!views)
        return -1;
    for (int i = 0; i < nviews; i++)
        views[i] = -1;
    int rc = 1;
    for (int i = 0; i < body->n && rc > 0; i++) {
        kir_stmt *s = body->s[i];
        if (rewrite_expr(&m, s->value, views, nviews) < 0) {
            rc = -1;
            break;
        }
        if (s->kind != KIR_S_STORE)
            continue;
        for (int d = 0; d < s->nidx - 2; d++)
            if (rewrite_expr(&m, s->idx[d], views, nviews) < 0)
                rc = -1;
        int v = view_of(&m, views, nviews, s->buf);
        kir_expr *bv = kir_var(k, m.b);
        if (v < 0 || !bv) {
            rc = -1;
            break;
        }
        k->bufs[v].written = true;
        s->buf = v;
        s->idx[s->nidx - 2] = bv;
        s->nidx--;
    }
    free(views);
    if (rc > 0 && !(in->hi = lw_i64c(k, m.A * m.B)))
        rc = -1;
    return rc;
}

static void subst_block(kir_kernel *k, kir_block *b, int v, const kir_expr *r);

int lw_coalesce(kir_kernel *k)
{
    int merged = 0;
    /* serial loops of one iteration (a batch of one) go: their variable
     * is 0 */
    for (kir_block *pb = &k->body; pb->n == 1 && pb->s[0]->kind == KIR_S_FOR;) {
        kir_stmt *s = pb->s[0];
        int64_t lo, hi;
        if (s->loop == KIR_SERIAL && lw_const_i(s->lo, &lo) && lw_const_i(s->hi, &hi) && lo == 0 && hi == 1 &&
            s->body.n == 1) {
            kir_expr *zero = lw_i64c(k, 0);
            if (!zero)
                return -1;
            subst_block(k, &s->body, s->var, zero);
            pb->s[0] = s->body.s[0];
            continue;
        }
        pb = &s->body;
    }
    for (;;) {
        /* the chain of single-statement loops down to the innermost */
        kir_block *pb = &k->body;
        kir_stmt *out = NULL, *in = NULL;
        int pos = -1;
        while (pb->n == 1 && pb->s[0]->kind == KIR_S_FOR) {
            if (pb->s[0]->loop == KIR_VECTOR)
                break;
            out = pb->s[0];
            pos = 0;
            pb = &out->body;
        }
        if (!out || pb->n != 1 || pb->s[0]->kind != KIR_S_FOR || pb->s[0]->loop != KIR_VECTOR ||
            out->loop != KIR_SERIAL)
            return merged;
        in = pb->s[0];
        int rc = try_merge(k, out, in);
        if (rc <= 0)
            return rc < 0 ? -1 : merged;
        merged++;
        /* the merged loop takes the outer one's place */
        kir_block *gb = &k->body;
        while (gb->s[pos] != out)
            gb = &gb->s[0]->body;
        gb->s[pos] = in;
    }
}

/* Replaces every VAR node of variable v reachable from x by a copy of r. */
static void subst(const kir_kernel *k, kir_expr *x, int v, const kir_expr *r)
{
    if (!x || x->op == KIR_LETV)
        return;
    if (x->op == KIR_VAR) {
        if (x->var == v)
            *x = *r;
        return;
    }
    if (x->op == KIR_LOAD) {
        for (int i = 0; i < x->nidx; i++)
            subst(k, x->idx[i], v, r);
        return;
    }
    for (int i = 0; i < kir_op_arity(x->op); i++)
        subst(k, x->a[i], v, r);
}

static void subst_block(kir_kernel *k, kir_block *b, int v, const kir_expr *r)
{
    for (int i = 0; i < b->n; i++) {
        kir_stmt *s = b->s[i];
        subst(k, s->lo, v, r);
        subst(k, s->hi, v, r);
        subst(k, s->cond, v, r);
        subst(k, s->value, v, r);
        for (int d = 0; d < s->nidx; d++)
            subst(k, s->idx[d], v, r);
        for (int a = 0; a < s->nargs; a++) {
            for (int d = 0; d < s->args[a].nidx; d++)
                subst(k, s->args[a].idx[d], v, r);
            subst(k, s->args[a].rows, v, r);
        }
        if (s->kind == KIR_S_LET)
            continue;
        subst_block(k, &s->body, v, r);
        subst_block(k, &s->orelse, v, r);
    }
}

/* A kernel that is one VECTOR loop over [0, N) (a contiguous tensor, all
 * of it coalesced): PARALLEL chunks of c iterations (a multiple of the
 * width, about N / least of them, at least 4 vectors), each a vector loop
 * over its chunk, so the threads share it. */
static int split_vector(kir_kernel *k, int64_t least)
{
    int64_t n, lo;
    kir_stmt *s = k->body.n == 1 && k->body.s[0]->kind == KIR_S_FOR ? k->body.s[0] : NULL;
    if (!s || s->loop != KIR_VECTOR || !lw_const_i(s->lo, &lo) || lo || !lw_const_i(s->hi, &n) || n < 1)
        return 0;
    int64_t w = s->width > 0 ? s->width : 1, c = (n + least - 1) / least;
    c = (c + w - 1) / w * w;
    if (c < 4 * w)
        c = 4 * w;
    if (c >= n)
        return 0;
    int pv = kir_new_var(k), jv = kir_new_var(k);
    kir_expr *base = lw_imulc(k, kir_var(k, pv), c);
    kir_expr *r = kir_iadd(k, kir_var(k, jv), base);
    kir_expr *hi = lw_imin(k, lw_i64c(k, c), kir_op2(k, KIR_SUB, IR_I64, lw_i64c(k, n), base));
    kir_stmt *par;
    if (!r || !hi)
        return -1;
    subst_block(k, &s->body, s->var, r);
    /* the vector loop becomes the chunk's, inside a new PARALLEL one */
    kir_block inner = k->body;
    k->body = (kir_block){0};
    par = kir_for(k, &k->body, pv, lw_i64c(k, 0), lw_i64c(k, (n + c - 1) / c), KIR_PARALLEL, 0);
    if (!par)
        return -1;
    par->body = inner;
    s->var = jv;
    s->hi = hi;
    return 0;
}

int lw_parallelize(kir_kernel *k, int64_t least)
{
    kir_stmt *loops[IR_MAX_RANK + 1];
    int64_t n[IR_MAX_RANK + 1];
    int nl = 0;
    bool sym = false;
    kir_block *b = &k->body;
    int64_t p = 1, lo;
    /* the outermost single-statement serial loops from 0 over dims: a
     * constant size, or a symbol (counted as 1 toward `least`, so the
     * loops after a symbolic batch join it: at a batch of 1 they are
     * what the threads share) */
    while (nl <= IR_MAX_RANK && b->n == 1 && b->s[0]->kind == KIR_S_FOR && b->s[0]->loop == KIR_SERIAL &&
           lw_const_i(b->s[0]->lo, &lo) && !lo && (p < least || !nl)) {
        kir_stmt *s = b->s[0];
        if (s->hi && s->hi->op == KIR_SYM) {
            n[nl] = 0;
            sym = true;
        } else if (!lw_const_i(s->hi, &n[nl]) || n[nl] < 1 || p > (INT64_C(1) << 40) / n[nl]) {
            break;
        } else {
            p *= n[nl];
        }
        loops[nl++] = s;
        b = &s->body;
    }
    if (!nl)
        return split_vector(k, least);
    kir_stmt *first = loops[0];
    if (nl == 1) {
        first->loop = KIR_PARALLEL;
        return 0;
    }
    /* one PARALLEL loop over the product; loop j's variable is
     * (flat / (n[j+1] * ... )) % n[j] (a symbolic product: the chunks
     * lw_chunk_parallel makes share it) */
    int pv = kir_new_var(k);
    kir_expr *flat = kir_var(k, pv), *stride = NULL;
    int64_t cstride = 1;
    for (int j = nl - 1; j >= 0; j--) {
        kir_expr *q, *r;
        if (!sym) {
            q = cstride == 1 ? flat : lw_idivc(k, flat, cstride);
            r = j == 0 ? q : n[j] == 1 ? lw_i64c(k, 0) : lw_iremc(k, q, n[j]);
            cstride *= n[j];
        } else {
            q = stride ? kir_op2(k, KIR_DIV, IR_I64, flat, stride) : flat;
            r = j == 0 ? q : kir_op2(k, KIR_REM, IR_I64, q, loops[j]->hi);
            stride = stride ? kir_imul(k, stride, loops[j]->hi) : loops[j]->hi;
        }
        if (!r || (sym && !stride))
            return -1;
        subst_block(k, &loops[nl - 1]->body, loops[j]->var, r);
    }
    first->var = pv;
    first->hi = sym ? stride : lw_i64c(k, p);
    first->loop = KIR_PARALLEL;
    if (!first->hi)
        return -1;
    first->body = loops[nl - 1]->body;
    return 0;
}

int lw_chunk_parallel(kir_kernel *k, int64_t chunks)
{
    kir_stmt *s = k->body.n == 1 && k->body.s[0]->kind == KIR_S_FOR ? k->body.s[0] : NULL;
    int64_t lo;
    if (!s || s->loop != KIR_PARALLEL || !lw_const_i(s->lo, &lo) || lo || !s->hi || s->hi->op == KIR_CONST ||
        s->hi->op == KIR_SYM || chunks < 2)
        return 0;
    int pv = kir_new_var(k);
    kir_expr *t = s->hi;
    kir_expr *a = lw_idivc(k, kir_imul(k, kir_var(k, pv), t), chunks);
    kir_expr *e = lw_idivc(k, kir_imul(k, lw_iaddc(k, kir_var(k, pv), 1), t), chunks);
    if (!a || !e)
        return -1;
    kir_block inner = k->body;
    k->body = (kir_block){0};
    kir_stmt *par = kir_for(k, &k->body, pv, lw_i64c(k, 0), lw_i64c(k, chunks), KIR_PARALLEL, 0);
    if (!par)
        return -1;
    par->body = inner;
    s->loop = KIR_SERIAL;
    s->lo = a;
    s->hi = e;
    return 0;
}

/* ---- dropping the buffers no statement reaches ------------------------- */

/* Marks the buffers x loads (used[b]); with map, renumbers them: a load
 * of b becomes one of -(map[b] + 1) on the first visit (shared nodes are
 * seen again), made positive by the second pass (map NULL, fix). */
static void bufs_expr(kir_expr *x, bool *used, const int *map, bool fix)
{
    if (!x || x->op == KIR_LETV)
        return;
    if (x->op == KIR_LOAD) {
        if (fix) {
            if (x->buf < 0)
                x->buf = -x->buf - 1;
        } else if (map) {
            if (x->buf >= 0)
                x->buf = -map[x->buf] - 1;
        } else {
            used[x->buf] = true;
        }
        for (int i = 0; i < x->nidx; i++)
            bufs_expr(x->idx[i], used, map, fix);
        return;
    }
    for (int i = 0; i < kir_op_arity(x->op); i++)
        bufs_expr(x->a[i], used, map, fix);
}

static void bufs_block(kir_block *b, bool *used, const int *map, bool fix)
{
    for (int i = 0; i < b->n; i++) {
        kir_stmt *s = b->s[i];
        kir_expr *xs[4] = {s->lo, s->hi, s->cond, s->value};
        for (int j = 0; j < 4; j++)
            bufs_expr(xs[j], used, map, fix);
        for (int d = 0; d < s->nidx; d++)
            bufs_expr(s->idx[d], used, map, fix);
        for (int a = 0; a < s->nargs; a++) {
            for (int d = 0; d < s->args[a].nidx; d++)
                bufs_expr(s->args[a].idx[d], used, map, fix);
            if (s->args[a].buf >= 0 && !fix) {
                if (map)
                    s->args[a].buf = map[s->args[a].buf];
                else
                    used[s->args[a].buf] = true;
            }
        }
        if (s->kind == KIR_S_STORE && !fix) {
            if (map)
                s->buf = map[s->buf];
            else
                used[s->buf] = true;
        }
        bufs_block(&s->body, used, map, fix);
        bufs_block(&s->orelse, used, map, fix);
    }
}

int lw_drop_unused_bufs(kir_kernel *k)
{
    int n = k->nbufs;
    bool *used = calloc((size_t)n + 1, 1);
    int *map = malloc(sizeof *map * ((size_t)n + 1));
    if (!used || !map) {
        free(used);
        free(map);
        return -1;
    }
    bufs_block(&k->body, used, NULL, false);
    for (int i = 0; i < k->nlets; i++)
        bufs_expr(k->let_value[i], used, NULL, false);
    if (k->status_buf >= 0)
        used[k->status_buf] = true;
    int m = 0;
    for (int i = 0; i < n; i++)
        map[i] = used[i] ? m++ : -1;
    if (m < n) {
        bufs_block(&k->body, NULL, map, false);
        for (int i = 0; i < k->nlets; i++)
            bufs_expr(k->let_value[i], NULL, map, false);
        bufs_block(&k->body, NULL, NULL, true);
        for (int i = 0; i < k->nlets; i++)
            bufs_expr(k->let_value[i], NULL, NULL, true);
        for (int i = 0; i < n; i++)
            if (map[i] >= 0)
                k->bufs[map[i]] = k->bufs[i];
        k->nbufs = m;
        if (k->status_buf >= 0)
            k->status_buf = map[k->status_buf];
    }
    free(used);
    free(map);
    return 0;
}
