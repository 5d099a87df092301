/* reduce.c - reductions: Reduce{Sum,Mean,Max,Min,Prod,L1,L2,
 * SumSquare,LogSum,LogSumExp} over constant axes or axes given at run
 * time (below), ArgMax/ArgMin and CumSum/CumProd (axis a constant input
 * or given at run time), for every dtype the reference
 * interpreter (ir/ref/reduce.c) accepts, plus the loop-nest helpers the
 * normalizations (norm.c) share.
 *
 * Each output element gets one iteration of the loops over the kept dims
 * (flattened into one parallel loop when their extents are constant), and
 * inside it one pass over the reduced dims per statistic with scalar
 * accumulators; a float sum along the unit-stride last dim keeps a
 * vector's worth of partial results so that it vectorizes without
 * reassociation, and a float max or min (exact in any order) runs that
 * dim as a VECTOR loop that the emitter widens into vector partials.
 * Reductions and scans that keep a wide last dim instead accumulate in
 * the output, row by row, vectorized along that dim.
 * Integers accumulate in 64 bits, wrapping, and are truncated to their
 * dtype at the store: the same bits as the reference's exact 64-bit
 * arithmetic. Floats accumulate in their compute dtype (f32 for
 * f16/bf16); the transcendental reductions of integers (L2, LogSum,
 * LogSumExp) go through f64 as the reference does.
 */
#include "codegen/lower/reduce.h"
#include "ir/ops.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---- shared helpers --------------------------------------------------------- */

kir_block *red_nest(lctx *c, kir_block *b, int n, const ir_dim *dims, kir_expr **idx)
{
    kir_kernel *k = c->k;
    bool top = b == &k->body, flat = n >= 2;
    for (int i = 0; i < n; i++)
        if (!ir_dim_is_const(dims[i]))
            flat = false;
    if (flat) {
        int64_t total = 1;
        for (int i = 0; i < n; i++)
            total *= dims[i].v;
        int v = kir_new_var(k);
        kir_stmt *l = lw_loop(c, b, v, lw_i64c(k, total), top ? KIR_PARALLEL : KIR_SERIAL);
        if (!l)
            return NULL;
        kir_expr *f = kir_var(k, v);
        int64_t stride = 1;
        for (int i = n - 1; i >= 0; i--) {
            kir_expr *q = stride == 1 ? f : kir_op2(k, KIR_DIV, IR_I64, f, lw_i64c(k, stride));
            idx[i] = i == 0 ? q : kir_op2(k, KIR_REM, IR_I64, q, lw_i64c(k, dims[i].v));
            stride *= dims[i].v;
        }
        return &l->body;
    }
    for (int i = 0; i < n; i++) {
        int v = kir_new_var(k);
        kir_stmt *l = lw_loop(c, b, v, lw_dim_of(k, dims[i]), top && i == 0 ? KIR_PARALLEL : KIR_SERIAL);
        if (!l)
            return NULL;
        idx[i] = kir_var(k, v);
        b = &l->body;
    }
    return b;
}

kir_block *red_outer(lctx *c, const ir_type *t, const bool *red, kir_expr **idx)
{
    ir_dim dims[IR_MAX_RANK];
    kir_expr *sub[IR_MAX_RANK];
    int n = 0;
    for (int d = 0; d < t->rank; d++)
        if (!red[d])
            dims[n++] = t->dims[d];
    kir_block *b = red_nest(c, c->root ? c->root : &c->k->body, n, dims, sub);
    n = 0;
    for (int d = 0; b && d < t->rank; d++)
        if (!red[d])
            idx[d] = sub[n++];
    return b;
}

/* idx[d] of the dims of t whose red[d] is `which`, from their row-major
 * flat position f (constant dims). */
static void gpu_unflatten(kir_kernel *k, kir_expr *f, const ir_type *t, const bool *red, bool which, kir_expr **idx)
{
    int64_t ext[IR_MAX_RANK];
    int pos[IR_MAX_RANK], n = 0;
    for (int d = 0; d < t->rank; d++)
        if (red[d] == which) {
            ext[n] = t->dims[d].v;
            pos[n++] = d;
        }
    kir_expr *sub[IR_MAX_RANK];
    lw_unflatten_c(k, f, n, ext, sub);
    for (int i = 0; i < n; i++)
        idx[pos[i]] = sub[i];
}

kir_block *red_outer_rows(lctx *c, const ir_type *t, const bool *red, kir_expr **idx)
{
    kir_kernel *k = c->k;
    if (!c->s->gpu_rows || c->root || k->body.n || !ir_type_is_static(t))
        return red_outer(c, t, red, idx);
    int64_t rows = 1, kept = 1;
    for (int d = 0; d < t->rank; d++)
        *(red[d] ? &rows : &kept) *= t->dims[d].v;
    if (rows < 64 || kept < 1)
        return red_outer(c, t, red, idx);
    int vg = kir_new_var(k), vt = kir_new_var(k);
    kir_stmt *lg = lw_loop(c, &k->body, vg, lw_i64c(k, kept), KIR_GRID);
    kir_stmt *lt = lg ? lw_loop(c, &lg->body, vt, lw_i64c(k, RED_GPU_THREADS), KIR_THREAD) : NULL;
    if (!lt)
        return NULL;
    gpu_unflatten(k, kir_var(k, vg), t, red, false, idx);
    c->gpu_row = kir_var(k, vt);
    return &lt->body;
}

/* CUDA rows: the thread's share of the row, appended to b: for j, r =
 * j * RED_GPU_THREADS + t, if r < count; idx[] of the marked dims from r.
 * Returns the if's body. */
static kir_block *gpu_pass(lctx *c, kir_block *b, const ir_type *t, const bool *red, kir_expr **idx)
{
    kir_kernel *k = c->k;
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++)
        if (red[d])
            n *= t->dims[d].v;
    int v = kir_new_var(k);
    kir_stmt *l = lw_loop(c, b, v, lw_i64c(k, (n + RED_GPU_THREADS - 1) / RED_GPU_THREADS), KIR_SERIAL);
    if (!l)
        return NULL;
    kir_expr *r = kir_iadd(k, lw_imulc(k, kir_var(k, v), RED_GPU_THREADS), c->gpu_row);
    kir_stmt *in = kir_if(k, &l->body, kir_op2(k, KIR_LT, IR_BOOL, r, lw_i64c(k, n)));
    if (!in)
        return NULL;
    gpu_unflatten(k, r, t, red, true, idx);
    return &in->body;
}

/* CUDA rows: acc = op(acc, the row's terms) with each thread's partial
 * (from op's identity) combined in shared memory, a halving tree. */
static int gpu_reduce(lctx *c, kir_block *b, const ir_type *t, const bool *red, kir_expr **ix, int acc, kir_op op,
                      red_term_fn term, void *ud)
{
    kir_kernel *k = c->k;
    ir_dtype at = k->acc_dtype[acc];
    bool fl = ir_dtype_is_float(at);
    kir_expr *id = op == KIR_ADD ? red_const(c, at, 0)
                   : fl          ? red_const(c, at, op == KIR_MAX ? -INFINITY : INFINITY)
                                 : kir_const_i(k, at, op == KIR_MAX ? INT64_MIN : INT64_MAX);
    int p = kir_new_acc(k, at);
    int64_t shd[1] = {RED_GPU_THREADS};
    int sh = kir_add_scratch(k, "row_partials", KIR_SPACE_BLOCK, at, 1, shd);
    kir_block *in;
    if (p < 0 || sh < 0 || !kir_acc_set(k, b, p, id) || !(in = gpu_pass(c, b, t, red, ix)) ||
        !kir_acc_set(k, in, p, kir_op2(k, op, at, kir_acc(k, p), term(c, ix, ud))))
        return -1;
    kir_expr *T = c->gpu_row;
    if (!kir_store(k, b, sh, (kir_expr *[]){T}, kir_acc(k, p)) || !kir_barrier(k, b, KIR_SCOPE_BLOCK))
        return -1;
    for (int64_t s = RED_GPU_THREADS / 2; s >= 1; s /= 2) {
        kir_stmt *lo = kir_if(k, b, kir_op2(k, KIR_LT, IR_BOOL, T, lw_i64c(k, s)));
        kir_expr *other = kir_load(k, sh, (kir_expr *[]){lw_iaddc(k, T, s)});
        if (!lo || !kir_store(k, &lo->body, sh, (kir_expr *[]){T},
                              kir_op2(k, op, at, kir_load(k, sh, (kir_expr *[]){T}), other)) ||
            !kir_barrier(k, b, KIR_SCOPE_BLOCK))
            return -1;
    }
    /* and a barrier after everyone has read the total: the block's next
     * row (the grid loop's next trip) writes the buffer again */
    return kir_acc_set(k, b, acc, kir_op2(k, op, at, kir_acc(k, acc), kir_load(k, sh, (kir_expr *[]){lw_i64c(k, 0)}))) &&
                   kir_barrier(k, b, KIR_SCOPE_BLOCK)
               ? 0
               : -1;
}

int red_width(lctx *c, ir_dtype dt)
{
    int w = c->s->lanes * 4 / (int)ir_dtype_size(dt);
    return w > 0 ? w : 1;
}

/* red_pass with the VECTOR loop `width` lanes wide. */
static kir_block *pass_width(lctx *c, kir_block *b, const ir_type *t, const bool *red, kir_expr **idx,
                             kir_loop last, int width)
{
    kir_kernel *k = c->k;
    int inner = -1;
    for (int d = 0; d < t->rank; d++)
        if (red[d])
            inner = d;
    for (int d = 0; d < t->rank; d++) {
        if (!red[d])
            continue;
        kir_loop kind = d == inner ? last : KIR_SERIAL;
        int v = kir_new_var(k);
        kir_stmt *l = kir_for(k, b, v, lw_i64c(k, 0), lw_dim_of(k, t->dims[d]), kind,
                              kind == KIR_VECTOR ? width : 0);
        if (!l)
            return NULL;
        idx[d] = kir_var(k, v);
        b = &l->body;
    }
    return b;
}

kir_block *red_pass(lctx *c, kir_block *b, const ir_type *t, const bool *red, kir_expr **idx,
                    kir_loop last, ir_dtype vdt)
{
    if (c->gpu_row)
        return gpu_pass(c, b, t, red, idx);
    return pass_width(c, b, t, red, idx, last, red_width(c, vdt));
}

int red_reduce(lctx *c, kir_block *b, const ir_type *t, const bool *red, kir_expr **ix, int acc,
               kir_op op, red_term_fn term, void *ud)
{
    if (c->gpu_row)
        return gpu_reduce(c, b, t, red, ix, acc, op, term, ud);
    kir_kernel *k = c->k;
    ir_dtype at = k->acc_dtype[acc];
    int inner = -1, w = red_width(c, at);
    for (int d = 0; d < t->rank; d++)
        if (red[d])
            inner = d;
    bool split = ir_dtype_is_float(at) && inner >= 0 && inner == t->rank - 1 &&
                 ir_dim_is_const(t->dims[inner]) && t->dims[inner].v >= 2 * w && w > 1 && w <= 64 &&
                 (w & (w - 1)) == 0;
    kir_block *p;
    if (!split) {
        p = red_pass(c, b, t, red, ix, KIR_SERIAL, at);
    } else {
        /* one accumulator over a VECTOR loop along the last dim, which the
         * emitter widens into a vector of partial results (a float max or
         * min is exact in any order; a VECTOR loop's sum may be
         * reassociated), 4 registers wide when the dim has them: each
         * register's chain (a NaN-propagating max: a compare and a blend
         * each step) is then a quarter as long. As w scalar partials,
         * LLVM vectorized the loop across steps instead, gathering every
         * w-th element (ReduceMax of BERT's FFN activation, 393K floats,
         * ran at 4 GFLOP/s), or paired partials in 2-lane vectors (the
         * variance pass of BERT's LayerNorms, ~100 us each) */
        int vw = t->dims[inner].v >= 8 * w && w * 4 <= 64 ? 4 * w : w;
        p = pass_width(c, b, t, red, ix, KIR_VECTOR, vw);
    }
    return p && kir_acc_set(k, p, acc, kir_op2(k, op, at, kir_acc(k, acc), term(c, ix, ud))) ? 0 : -1;
}

kir_expr *red_count(lctx *c, const ir_type *t, const bool *red)
{
    int64_t cst = 1;
    kir_expr *e = NULL;
    for (int d = 0; d < t->rank; d++) {
        if (!red[d])
            continue;
        if (ir_dim_is_const(t->dims[d]))
            cst *= t->dims[d].v;
        else
            e = e ? kir_imul(c->k, e, lw_dim_of(c->k, t->dims[d])) : lw_dim_of(c->k, t->dims[d]);
    }
    return e ? (cst == 1 ? e : kir_imul(c->k, e, lw_i64c(c->k, cst))) : lw_i64c(c->k, cst);
}

kir_expr *red_cvt(lctx *c, kir_expr *v, ir_dtype dt)
{
    if (!v || v->dtype == dt)
        return v;
    if (ir_dtype_is_float(v->dtype) && ir_dtype_is_int(dt) && dt != IR_I64 && dt != IR_U64)
        v = kir_op1(c->k, KIR_CAST, IR_I64, v);
    return kir_op1(c->k, KIR_CAST, dt, v);
}

kir_expr *red_load(lctx *c, int i, kir_expr *const *idx, ir_dtype dt)
{
    return red_cvt(c, lower_in(c, i, idx), dt);
}

kir_expr *red_load_bcast(lctx *c, int i, kir_expr *const *idx, int r, ir_dtype dt)
{
    const ir_type *t = &c->n->in[i]->type;
    kir_expr *ix[IR_MAX_RANK];
    for (int d = 0; d < t->rank; d++) {
        bool one = ir_dim_is_const(t->dims[d]) && t->dims[d].v == 1;
        ix[d] = one ? lw_i64c(c->k, 0) : idx[r - t->rank + d];
    }
    return red_load(c, i, ix, dt);
}

kir_expr *red_const(lctx *c, ir_dtype dt, double v)
{
    return ir_dtype_is_float(dt) ? kir_const_f(c->k, dt, v) : kir_const_i(c->k, dt, (int64_t)v);
}

/* ---- Reduce* ------------------------------------------------------------------ */

static bool is_reduce(int op)
{
    switch (op) {
    case IR_OP_REDUCE_SUM: case IR_OP_REDUCE_MEAN: case IR_OP_REDUCE_MAX: case IR_OP_REDUCE_MIN:
    case IR_OP_REDUCE_PROD: case IR_OP_REDUCE_L1: case IR_OP_REDUCE_L2: case IR_OP_REDUCE_SUM_SQUARE:
    case IR_OP_REDUCE_LOG_SUM: case IR_OP_REDUCE_LOG_SUM_EXP:
        return true;
    default:
        return false;
    }
}

/* ---- axes given at run time ----------------------------------------------------- */

/* The length of a node's axes input i when it is not a constant: an
 * integer tensor of rank <= 1 whose length the type fixes. -1 when it is
 * absent, a constant or of unknown length. */
static int64_t dyn_axes_len(const ir_node *n, int i)
{
    const ir_value *a = n->nin > i ? n->in[i] : NULL;
    if (!a || a->kind == IR_VAL_CONST || !ir_dtype_is_int(a->type.dtype) || a->type.rank > 1 ||
        !ir_type_is_static(&a->type))
        return -1;
    return a->type.rank ? a->type.dims[0].v : 1;
}

#define DYN_MAX_MASKS 8

/* Reduce* whose axes only the run knows. The output's shape is fixed at
 * compile time, so the axes must be a set that gives it: L of them (L,
 * the input's length, is static), keeping every other dim (and a 1 for
 * each reduced one under keepdims) in order. Sets that differ only in
 * dims of extent 1 compute the same values in the same order, so one
 * stands for all of them. The kernel is compiled for each distinct set
 * that fits (at most DYN_MAX_MASKS) and picks the one the run's axes
 * are; axes out of range, repeated or fitting none fail. False when no
 * set fits (or too many do): the input must then be bound (--bind). */
static bool dyn_reduce_masks(const ir_node *n, bool masks[][IR_MAX_RANK], int *nmasks)
{
    *nmasks = 0;
    int64_t len = dyn_axes_len(n, 1);
    const ir_type *x = &n->in[0]->type, *y = &n->out[0]->type;
    if (len <= 0 || !ir_type_is_static(x) || !ir_type_is_static(y) || len > x->rank)
        return false;
    bool keep = ir_attr_int(n, "keepdims", 1);
    int r = x->rank;
    for (unsigned s = 1; s < (1u << r); s++) {
        if (__builtin_popcount(s) != len)
            continue;
        bool m[IR_MAX_RANK] = {0};
        int o = 0;
        bool fits = true;
        for (int d = 0; d < r && fits; d++) {
            m[d] = (s >> d) & 1;
            if (m[d] && !keep)
                continue;
            fits = o < y->rank && y->dims[o].v == (m[d] ? 1 : x->dims[d].v);
            o++;
        }
        if (!fits || o != y->rank)
            continue;
        bool same = false;
        for (int i = 0; i < *nmasks && !same; i++) {
            same = true;
            for (int d = 0; d < r; d++)
                if (x->dims[d].v != 1 && masks[i][d] != m[d])
                    same = false;
        }
        if (same)
            continue;
        if (*nmasks == DYN_MAX_MASKS)
            return false;
        memcpy(masks[(*nmasks)++], m, sizeof m);
    }
    return *nmasks > 0;
}

/* Reads the len run-time axes of input i (for a tensor of rank r) into
 * lets at the top of the kernel, sets cnt[d] to how many of them name
 * dim d and *oob to whether one is out of range (the caller's fail, so
 * that it can order the checks: one message per run). A failing run
 * still computes (fail does not stop the kernel), but only over the
 * compiled shapes, so it stays inside its buffers. */
static int dyn_axes_read(lctx *c, int i, int64_t len, int r, kir_expr **cnt, kir_expr **oob_out)
{
    kir_kernel *k = c->k;
    kir_block *top = &k->body;
    int ids[IR_MAX_RANK];
    kir_expr *oob = NULL;
    for (int64_t j = 0; j < len; j++) {
        kir_expr *idx[1] = {lw_i64c(k, j)};
        kir_expr *a = kir_let(k, top, kir_op1(k, KIR_CAST, IR_I64, lower_in(c, i, idx)));
        if (!a)
            return -1;
        int aid = a->var;
        kir_expr *bad = kir_op2(k, KIR_OR, IR_BOOL, kir_op2(k, KIR_LT, IR_BOOL, a, lw_i64c(k, -r)),
                                kir_op2(k, KIR_LE, IR_BOOL, lw_i64c(k, r), kir_letv(k, aid)));
        oob = oob ? kir_op2(k, KIR_OR, IR_BOOL, oob, bad) : bad;
        kir_expr *nv = kir_let(k, top, kir_op3(k, KIR_SELECT, IR_I64,
                                               kir_op2(k, KIR_LT, IR_BOOL, kir_letv(k, aid), lw_i64c(k, 0)),
                                               lw_iaddc(k, kir_letv(k, aid), r), kir_letv(k, aid)));
        if (!nv)
            return -1;
        ids[j] = nv->var;
    }
    if (!(*oob_out = kir_let(k, top, oob)))
        return -1;
    for (int d = 0; d < r; d++) {
        cnt[d] = lw_i64c(k, 0);
        for (int64_t j = 0; j < len; j++)
            cnt[d] = kir_iadd(k, cnt[d], kir_op3(k, KIR_SELECT, IR_I64,
                                                 kir_op2(k, KIR_EQ, IR_BOOL, kir_letv(k, ids[j]), lw_i64c(k, d)),
                                                 lw_i64c(k, 1), lw_i64c(k, 0)));
        if (!(cnt[d] = kir_let(k, top, cnt[d])))
            return -1;
    }
    return 0;
}

static int lower_reduce_mask(lctx *c, const bool *red);

/* The reduction for each set dyn_reduce_masks allows, under a test of
 * the run's axes: each dim named at most once, the dims of extent > 1
 * named exactly as in the set. One set needs no branch, so its loops
 * stay parallel; several run serially in their branch. */
static int lower_reduce_dyn(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *x = &n->in[0]->type;
    bool masks[DYN_MAX_MASKS][IR_MAX_RANK];
    int nm, r = x->rank;
    if (!dyn_reduce_masks(n, masks, &nm))
        return -1;
    kir_expr *cnt[IR_MAX_RANK], *oob;
    if (dyn_axes_read(c, 1, dyn_axes_len(n, 1), r, cnt, &oob) < 0)
        return -1;
    kir_expr *rep = NULL, *none = NULL, *is[DYN_MAX_MASKS];
    for (int d = 0; d < r; d++) {
        kir_expr *t = kir_op2(k, KIR_LT, IR_BOOL, lw_i64c(k, 1), kir_letv(k, cnt[d]->var));
        rep = rep ? kir_op2(k, KIR_OR, IR_BOOL, rep, t) : t;
    }
    for (int i = 0; i < nm; i++) {
        kir_expr *e = kir_const_i(k, IR_BOOL, 1);
        for (int d = 0; d < r; d++)
            if (x->dims[d].v != 1)
                e = kir_op2(k, KIR_AND, IR_BOOL, e,
                            kir_op2(k, KIR_EQ, IR_BOOL, kir_letv(k, cnt[d]->var), lw_i64c(k, masks[i][d])));
        if (!(is[i] = kir_let(k, &k->body, e)))
            return -1;
        kir_expr *no = kir_op1(k, KIR_NOT, IR_BOOL, kir_letv(k, is[i]->var));
        none = none ? kir_op2(k, KIR_AND, IR_BOOL, none, no) : no;
    }
    /* one message per run, the first that applies: out of range, then
     * repeated, then not the compiled shape (named in the message) */
    rep = kir_let(k, &k->body, kir_op2(k, KIR_AND, IR_BOOL, rep, kir_op1(k, KIR_NOT, IR_BOOL, kir_letv(k, oob->var))));
    if (!rep)
        return -1;
    none = kir_op2(k, KIR_AND, IR_BOOL, none, kir_op1(k, KIR_NOT, IR_BOOL, kir_letv(k, oob->var)));
    none = kir_op2(k, KIR_AND, IR_BOOL, none, kir_op1(k, KIR_NOT, IR_BOOL, kir_letv(k, rep->var)));
    char msg[400], shp[128] = "";
    const ir_type *y = &n->out[0]->type;
    for (int d = 0; d < y->rank; d++)
        snprintf(shp + strlen(shp), sizeof shp - strlen(shp), "%s%lld", d ? "," : "", (long long)y->dims[d].v);
    const char *op = ir_ops[n->op].name;
    kir_stmt *f0 = kir_if(k, &k->body, kir_letv(k, oob->var));
    snprintf(msg, sizeof msg, "node '%.200s' (%s): an axis given at run time is out of range for rank %d", n->name,
             op, r);
    if (!f0 || !kir_fail(k, &f0->body, msg))
        return -1;
    kir_stmt *f1 = kir_if(k, &k->body, kir_letv(k, rep->var));
    snprintf(msg, sizeof msg, "node '%.200s' (%s): an axis given at run time is listed twice", n->name, op);
    if (!f1 || !kir_fail(k, &f1->body, msg))
        return -1;
    kir_stmt *f2 = kir_if(k, &k->body, none);
    snprintf(msg, sizeof msg,
             "node '%.200s' (%s): the axes given at run time do not give the output shape [%s] the model "
             "was compiled for",
             n->name, op, shp);
    if (!f2 || !kir_fail(k, &f2->body, msg))
        return -1;
    if (nm == 1)
        return lower_reduce_mask(c, masks[0]);
    for (int i = 0; i < nm; i++) {
        kir_stmt *br = kir_if(k, &k->body, kir_letv(k, is[i]->var));
        if (!br)
            return -1;
        c->root = &br->body;
        int rc = lower_reduce_mask(c, masks[i]);
        c->root = NULL;
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* The reduced dims from the constant axes input (absent or empty: all,
 * or none with noop_with_empty_axes: *noop). False for axes that are not
 * constant, out of range or repeated (the reference rejects those). */
static bool reduce_axes(const ir_node *n, bool *red, bool *noop)
{
    int r = n->in[0]->type.rank;
    memset(red, 0, sizeof(bool) * IR_MAX_RANK);
    *noop = false;
    const ir_value *a = n->nin > 1 ? n->in[1] : NULL;
    int64_t cnt = 0;
    if (a && a->kind != IR_VAL_CONST) {
        /* given at run time: only an empty list (its length is static) is
         * known now; dyn_reduce_masks handles the rest */
        if (dyn_axes_len(n, 1) != 0)
            return false;
    } else if (a) {
        if (!ir_dtype_is_int(a->cval.dtype) || a->cval.rank > 1)
            return false;
        cnt = a->cval.numel;
        for (int64_t i = 0; i < cnt; i++) {
            int64_t ax = ir_tensor_geti(&a->cval, i);
            ax = ax < 0 ? ax + r : ax;
            if (ax < 0 || ax >= r || red[ax])
                return false;
            red[ax] = true;
        }
    }
    if (cnt == 0) {
        if (ir_attr_int(n, "noop_with_empty_axes", 0))
            *noop = true;
        else
            for (int d = 0; d < r; d++)
                red[d] = true;
    }
    return true;
}

/* Products and L2 norms of floats in f64, as the reference takes them:
 * in f32 a product of 1e-30s underflows to 0 before an inf joins it (NaN,
 * where the reference has inf), and squares leave the range below 1e-19
 * and above 1.8e19. */
static bool acc_wide(int op, ir_dtype xt)
{
    return ir_dtype_is_float(xt) && xt != IR_F64 && (op == IR_OP_REDUCE_PROD || op == IR_OP_REDUCE_L2);
}

/* The accumulator dtype of a reduction of dtype xt: 64-bit integers
 * (keeping the signedness that decides Max/Min), f64 for the
 * transcendental ones of integers and for acc_wide, bool for Max/Min of
 * bool. */
static ir_dtype acc_dtype(int op, ir_dtype xt)
{
    if (acc_wide(op, xt))
        return IR_F64;
    if (ir_dtype_is_float(xt) || xt == IR_BOOL)
        return lw_compute_dtype(xt);
    if (op == IR_OP_REDUCE_L2 || op == IR_OP_REDUCE_LOG_SUM || op == IR_OP_REDUCE_LOG_SUM_EXP)
        return IR_F64;
    return ir_dtype_is_signed(xt) ? IR_I64 : IR_U64;
}

/* Floats in their compute dtype, integers in 64 bits of their signedness. */
static ir_dtype wide_dtype(ir_dtype xt)
{
    return ir_dtype_is_float(xt) ? lw_compute_dtype(xt) : ir_dtype_is_signed(xt) ? IR_I64 : IR_U64;
}

/* The smallest (hi false) or largest value of integer dtype t, as the
 * bits of a 64-bit accumulator of the same signedness. */
static int64_t int_limit(ir_dtype t, bool hi)
{
    int bits = (int)ir_dtype_size(t) * 8;
    if (t == IR_BOOL)
        return hi;
    if (ir_dtype_is_signed(t)) {
        int64_t max = (int64_t)(((uint64_t)1 << (bits - 1)) - 1);
        return hi ? max : -max - 1;
    }
    return hi ? (bits == 64 ? -1 : (int64_t)(((uint64_t)1 << bits) - 1)) : 0;
}

/* out = in, elementwise (noop_with_empty_axes with no axes). */
static int lower_copy_all(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_type *t = &c->n->in[0]->type;
    bool red[IR_MAX_RANK] = {0};
    kir_expr *idx[IR_MAX_RANK];
    if (t->rank > 0)
        red[t->rank - 1] = true;
    kir_block *b = red_outer(c, t, red, idx);
    b = b ? red_pass(c, b, t, red, idx, KIR_VECTOR, t->dtype) : NULL;
    return b && kir_store(k, b, c->out, idx, kir_load(k, c->buf[0], idx)) ? 0 : -1;
}

typedef struct {
    ir_dtype at;
    int op;
    kir_expr *shift;           /* LogSumExp's */
} red_term;

/* What Reduce* accumulates of the element at ix. */
static kir_expr *reduce_term(lctx *c, kir_expr **ix, void *ud)
{
    const red_term *r = ud;
    kir_kernel *k = c->k;
    kir_expr *x = red_load(c, 0, ix, r->at);
    switch (r->op) {
    case IR_OP_REDUCE_L1: return kir_op1(k, KIR_ABS, r->at, x);
    case IR_OP_REDUCE_L2: case IR_OP_REDUCE_SUM_SQUARE: return kir_op2(k, KIR_MUL, r->at, x, x);
    case IR_OP_REDUCE_LOG_SUM_EXP: return kir_op1(k, KIR_EXP, r->at, kir_op2(k, KIR_SUB, r->at, x, r->shift));
    default: return x;
    }
}

/* The output index of a reduction: kept dims' indices, 0 for reduced
 * dims under keepdims. */
static int reduce_out_index(lctx *c, const bool *red, kir_expr **ix, kir_expr **oi)
{
    const ir_node *n = c->n;
    bool keep = ir_attr_int(n, "keepdims", 1);
    int no = 0;
    for (int d = 0; d < n->in[0]->type.rank; d++)
        if (!red[d])
            oi[no++] = ix[d];
        else if (keep)
            oi[no++] = lw_i64c(c->k, 0);
    return no == n->out[0]->type.rank ? 0 : -1;
}

/* The combining op and start value of a reduction accumulating in at. */
static kir_expr *reduce_init(lctx *c, int op, ir_dtype xt, ir_dtype at, kir_op *kop)
{
    *kop = op == IR_OP_REDUCE_MAX ? KIR_MAX : op == IR_OP_REDUCE_MIN ? KIR_MIN
         : op == IR_OP_REDUCE_PROD ? KIR_MUL : KIR_ADD;
    if (ir_dtype_is_float(at)) {
        double v = *kop == KIR_MAX ? -INFINITY : *kop == KIR_MIN ? INFINITY : *kop == KIR_MUL;
        return kir_const_f(c->k, at, v);
    }
    if (*kop == KIR_MAX || *kop == KIR_MIN)
        return kir_const_i(c->k, at, int_limit(xt, *kop == KIR_MIN));
    return kir_const_i(c->k, at, *kop == KIR_MUL);
}

/* Reductions that keep the last dim accumulate in the output itself, in
 * input order: the loops over the dims from the first reduced one on
 * read x and update y with unit stride in the innermost (kept) dim, which
 * vectorizes; the dims before it are the parallel loop. Only where the
 * output holds the accumulator's dtype: floats of f32/f64, and integers
 * whose 64-bit results truncate to what native-width arithmetic gives. */
static bool rows_ok(const ir_node *n, const bool *red, int lanes)
{
    const ir_type *t = &n->in[0]->type;
    int op = n->op, r = t->rank;
    ir_dtype xt = t->dtype;
    if (r < 2 || red[r - 1] || op == IR_OP_REDUCE_LOG_SUM_EXP || acc_wide(op, t->dtype))
        return false;
    bool int_exact = op != IR_OP_REDUCE_MEAN && op != IR_OP_REDUCE_L2 && op != IR_OP_REDUCE_LOG_SUM;
    if (ir_dtype_is_float(xt) ? lw_compute_dtype(xt) != xt : !int_exact)
        return false;
    int w = lanes * 4 / (int)ir_dtype_size(xt);
    return !ir_dim_is_const(t->dims[r - 1]) || t->dims[r - 1].v >= w;
}

static int lower_reduce_rows(lctx *c, const bool *red)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *t = &n->in[0]->type;
    int op = n->op, r = t->rank, first = 0;
    ir_dtype xt = t->dtype, ot = n->out[0]->type.dtype;
    while (!red[first])
        first++;
    bool outer[IR_MAX_RANK] = {0}, kept[IR_MAX_RANK] = {0}, all[IR_MAX_RANK] = {0};
    for (int d = first; d < r; d++) {
        outer[d] = all[d] = true;
        kept[d] = !red[d];
    }
    kir_expr *ix[IR_MAX_RANK], *oi[IR_MAX_RANK];
    kir_block *body = red_outer(c, t, outer, ix);
    if (!body)
        return -1;
    kir_op kop;
    kir_expr *init = reduce_init(c, op, xt, xt, &kop);
    kir_block *p = red_pass(c, body, t, kept, ix, KIR_VECTOR, ot);
    if (!p || reduce_out_index(c, red, ix, oi) < 0 || !kir_store(k, p, c->out, oi, init))
        return -1;
    if (!(p = red_pass(c, body, t, all, ix, KIR_VECTOR, ot)) || reduce_out_index(c, red, ix, oi) < 0)
        return -1;
    red_term rt = {xt, op, NULL};
    if (!kir_store(k, p, c->out, oi, kir_op2(k, kop, xt, kir_load(k, c->out, oi), reduce_term(c, ix, &rt))))
        return -1;
    if (op != IR_OP_REDUCE_MEAN && op != IR_OP_REDUCE_L2 && op != IR_OP_REDUCE_LOG_SUM)
        return 0;
    if (!(p = red_pass(c, body, t, kept, ix, KIR_VECTOR, ot)) || reduce_out_index(c, red, ix, oi) < 0)
        return -1;
    kir_expr *y = kir_load(k, c->out, oi);
    if (op == IR_OP_REDUCE_MEAN)
        y = kir_op2(k, KIR_DIV, xt, y, kir_op1(k, KIR_CAST, xt, red_count(c, t, red)));
    else
        y = kir_op1(k, op == IR_OP_REDUCE_L2 ? KIR_SQRT : KIR_LOG, xt, y);
    return kir_store(k, p, c->out, oi, y) ? 0 : -1;
}

static int lower_reduce_op(lctx *c)
{
    bool red[IR_MAX_RANK], noop;
    if (!reduce_axes(c->n, red, &noop))
        return lower_reduce_dyn(c);
    if (noop)
        return lower_copy_all(c);
    return lower_reduce_mask(c, red);
}

/* The reduction over the dims red marks (at least one, or every dim of
 * extent 1). */
static int lower_reduce_mask(lctx *c, const bool *red)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *t = &n->in[0]->type;
    if (rows_ok(n, red, c->s->lanes))
        return lower_reduce_rows(c, red);
    int op = n->op;
    ir_dtype xt = t->dtype, at = acc_dtype(op, xt);
    kir_expr *ix[IR_MAX_RANK], *oi[IR_MAX_RANK];
    kir_block *body = red_outer(c, t, red, ix);
    if (!body)
        return -1;
    kir_expr *shift = NULL;
    if (op == IR_OP_REDUCE_LOG_SUM_EXP) {
        /* exp(x - max) never overflows; an infinite max shifts by 0 */
        int mx = kir_new_acc(k, at);
        red_term rt = {at, IR_OP_REDUCE_MAX, NULL};
        if (!kir_acc_set(k, body, mx, kir_const_f(k, at, -INFINITY)) ||
            red_reduce(c, body, t, red, ix, mx, KIR_MAX, reduce_term, &rt) < 0)
            return -1;
        kir_expr *m = kir_acc(k, mx);
        kir_expr *inf = kir_op2(k, KIR_EQ, IR_BOOL, kir_op1(k, KIR_ABS, at, m), kir_const_f(k, at, INFINITY));
        shift = kir_op3(k, KIR_SELECT, at, inf, kir_const_f(k, at, 0), m);
    }
    kir_op kop;
    int acc = kir_new_acc(k, at);
    if (!kir_acc_set(k, body, acc, reduce_init(c, op, xt, at, &kop)))
        return -1;
    red_term rt = {at, op, shift};
    /* products are not split: partial products overflow and underflow
     * where the sequential one may not */
    if (kop == KIR_MUL) {
        kir_block *p = red_pass(c, body, t, red, ix, KIR_SERIAL, at);
        if (!p || !kir_acc_set(k, p, acc, kir_op2(k, kop, at, kir_acc(k, acc), reduce_term(c, ix, &rt))))
            return -1;
    } else if (red_reduce(c, body, t, red, ix, acc, kop, reduce_term, &rt) < 0) {
        return -1;
    }
    kir_expr *v = kir_acc(k, acc);
    switch (op) {
    case IR_OP_REDUCE_MEAN: {
        kir_expr *cnt = red_count(c, t, red);
        v = kir_op2(k, KIR_DIV, at, v, kir_op1(k, KIR_CAST, at, cnt));
        break;
    }
    case IR_OP_REDUCE_L2: v = kir_op1(k, KIR_SQRT, at, v); break;
    case IR_OP_REDUCE_LOG_SUM: v = kir_op1(k, KIR_LOG, at, v); break;
    case IR_OP_REDUCE_LOG_SUM_EXP: v = kir_op2(k, KIR_ADD, at, kir_op1(k, KIR_LOG, at, v), shift); break;
    default: break;
    }
    if (reduce_out_index(c, red, ix, oi) < 0)
        return -1;
    return kir_store(k, body, c->out, oi, red_cvt(c, v, n->out[0]->type.dtype)) ? 0 : -1;
}

/* ---- ArgMax / ArgMin ------------------------------------------------------------ */

/* One pass along the axis from a sentinel (the worst value, which the
 * first element always beats or ties at index 0), so an empty axis never
 * reads out of bounds. NaN beats numbers, as in the reference. */
static int lower_arg(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *t = &n->in[0]->type;
    int64_t axis = ir_attr_int(n, "axis", 0);
    axis = axis < 0 ? axis + t->rank : axis;
    if (axis < 0 || axis >= t->rank)
        return -1;
    bool want_max = n->op == IR_OP_ARG_MAX, last = ir_attr_int(n, "select_last_index", 0);
    ir_dtype xt = t->dtype, at = wide_dtype(xt);
    bool flt = ir_dtype_is_float(at);
    bool red[IR_MAX_RANK] = {0};
    red[axis] = true;
    kir_expr *ix[IR_MAX_RANK], *oi[IR_MAX_RANK];
    kir_block *body = red_outer(c, t, red, ix);
    if (!body)
        return -1;
    int best = kir_new_acc(k, IR_I64), bv = kir_new_acc(k, at);
    kir_expr *init = flt ? kir_const_f(k, at, want_max ? -INFINITY : INFINITY)
                         : kir_const_i(k, at, int_limit(xt, !want_max));
    if (!kir_acc_set(k, body, best, lw_i64c(k, 0)) || !kir_acc_set(k, body, bv, init))
        return -1;
    /* An empty axis has no arg: the reference's error, not index 0. */
    if (!ir_dim_is_const(t->dims[axis]) || t->dims[axis].v == 0) {
        kir_stmt *chk = kir_if(k, body, kir_op2(k, KIR_EQ, IR_BOOL, lw_dim_of(k, t->dims[axis]), lw_i64c(k, 0)));
        char msg[400];
        snprintf(msg, sizeof msg, "node '%.200s' (%s): cannot take the arg%s of an empty axis", n->name,
                 ir_ops[n->op].name, want_max ? "max" : "min");
        if (!chk || !kir_fail(k, &chk->body, msg))
            return -1;
    }
    kir_block *p = red_pass(c, body, t, red, ix, KIR_SERIAL, at);
    if (!p)
        return -1;
    kir_expr *v = red_load(c, 0, ix, at), *a = kir_acc(k, bv);
    kir_expr *better;
    if (last)
        better = want_max ? kir_op2(k, KIR_LE, IR_BOOL, a, v) : kir_op2(k, KIR_LE, IR_BOOL, v, a);
    else
        better = want_max ? kir_op2(k, KIR_LT, IR_BOOL, a, v) : kir_op2(k, KIR_LT, IR_BOOL, v, a);
    if (flt) {
        /* last: v is NaN; first: v is NaN and the best so far is not */
        kir_expr *vnan = kir_op2(k, KIR_NE, IR_BOOL, v, v);
        kir_expr *anum = kir_op2(k, KIR_EQ, IR_BOOL, a, a);
        better = kir_op2(k, KIR_OR, IR_BOOL, better, last ? vnan : kir_op2(k, KIR_AND, IR_BOOL, vnan, anum));
    }
    if (!kir_acc_set(k, p, best, kir_op3(k, KIR_SELECT, IR_I64, better, ix[axis], kir_acc(k, best))) ||
        !kir_acc_set(k, p, bv, kir_op3(k, KIR_SELECT, at, better, v, a)))
        return -1;
    bool keep = ir_attr_int(n, "keepdims", 1);
    int no = 0;
    for (int d = 0; d < t->rank; d++)
        if (d != axis)
            oi[no++] = ix[d];
        else if (keep)
            oi[no++] = lw_i64c(k, 0);
    if (no != n->out[0]->type.rank)
        return -1;
    return kir_store(k, body, c->out, oi, red_cvt(c, kir_acc(k, best), n->out[0]->type.dtype)) ? 0 : -1;
}

/* ---- CumSum / CumProd ------------------------------------------------------------- */

/* The constant axis input of CumSum/CumProd, normalized; false if it is
 * not a constant single integer in range. */
static bool cum_axis(const ir_node *n, int *axis)
{
    const ir_value *a = n->nin > 1 ? n->in[1] : NULL;
    int r = n->in[0]->type.rank;
    if (!a || a->kind != IR_VAL_CONST || !ir_dtype_is_int(a->cval.dtype) || a->cval.rank > 1 ||
        a->cval.numel != 1)
        return false;
    int64_t ax = ir_tensor_geti(&a->cval, 0);
    ax = ax < 0 ? ax + r : ax;
    if (ax < 0 || ax >= r)
        return false;
    *axis = (int)ax;
    return true;
}

/* A scan along an axis other than the last runs row by row in the
 * output: y[j] = y[j-1] + x[j] (x[j-1] when exclusive) over the dims
 * after the axis, unit stride and vectorized; the dims before it are the
 * parallel loop. Only where the output holds the accumulator (not
 * f16/bf16; integers wrap the same in their own width). */
static int lower_cum_rows(lctx *c, int axis)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *t = &n->in[0]->type;
    bool excl = ir_attr_int(n, "exclusive", 0), rev = ir_attr_int(n, "reverse", 0);
    bool prod = n->op == IR_OP_CUM_PROD;
    ir_dtype xt = t->dtype;
    int64_t len = t->dims[axis].v;
    bool outer[IR_MAX_RANK] = {0}, inner[IR_MAX_RANK] = {0};
    for (int d = axis; d < t->rank; d++) {
        outer[d] = true;
        inner[d] = d > axis;
    }
    kir_expr *ix[IR_MAX_RANK], *pi[IR_MAX_RANK];
    kir_block *body = red_outer(c, t, outer, ix);
    kir_block *p = body ? red_pass(c, body, t, inner, ix, KIR_VECTOR, xt) : NULL;
    if (!p)
        return -1;
    ix[axis] = lw_i64c(k, rev ? len - 1 : 0);
    if (!kir_store(k, p, c->out, ix, excl ? red_const(c, xt, prod) : kir_load(k, c->buf[0], ix)))
        return -1;
    int tv = kir_new_var(k);
    kir_stmt *l = kir_for(k, body, tv, lw_i64c(k, 1), lw_i64c(k, len), KIR_SERIAL, 0);
    if (!l || !(p = red_pass(c, &l->body, t, inner, ix, KIR_VECTOR, xt)))
        return -1;
    kir_expr *step = kir_var(k, tv);
    ix[axis] = rev ? kir_op2(k, KIR_SUB, IR_I64, lw_i64c(k, len - 1), step) : step;
    memcpy(pi, ix, sizeof pi);
    pi[axis] = rev ? kir_op2(k, KIR_SUB, IR_I64, lw_i64c(k, len), step)
                   : kir_op2(k, KIR_SUB, IR_I64, step, lw_i64c(k, 1));
    kir_expr *x = kir_load(k, c->buf[0], excl ? pi : ix);
    kir_expr *y = kir_op2(k, prod ? KIR_MUL : KIR_ADD, xt, kir_load(k, c->out, pi), x);
    return kir_store(k, p, c->out, ix, y) ? 0 : -1;
}

static int lower_cum_axis(lctx *c, int axis);

/* The axis given at run time: the output's shape is the input's whatever
 * the axis, so only the scan's direction waits for the run. The kernel
 * has one scan per axis, each under a test of the (normalized) run's
 * axis, and fails on one out of range. */
static int lower_cum_dyn(lctx *c)
{
    kir_kernel *k = c->k;
    int r = c->n->in[0]->type.rank;
    kir_expr *cnt[IR_MAX_RANK], *oob;
    if (dyn_axes_len(c->n, 1) != 1 || dyn_axes_read(c, 1, 1, r, cnt, &oob) < 0)
        return -1;
    char msg[400];
    snprintf(msg, sizeof msg, "node '%.200s' (%s): the axis given at run time is out of range for rank %d",
             c->n->name, ir_ops[c->n->op].name, r);
    kir_stmt *f = kir_if(k, &k->body, kir_letv(k, oob->var));
    if (!f || !kir_fail(k, &f->body, msg))
        return -1;
    for (int d = 0; d < r; d++) {
        kir_stmt *br = kir_if(k, &k->body, kir_op2(k, KIR_EQ, IR_BOOL, kir_letv(k, cnt[d]->var), lw_i64c(k, 1)));
        if (!br)
            return -1;
        c->root = &br->body;
        int rc = lower_cum_axis(c, d);
        c->root = NULL;
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int lower_cum(lctx *c)
{
    int axis;
    if (!cum_axis(c->n, &axis))
        return lower_cum_dyn(c);
    return lower_cum_axis(c, axis);
}

static int lower_cum_axis(lctx *c, int axis)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *t = &n->in[0]->type;
    const ir_dim *last = &t->dims[t->rank - 1];
    if (axis < t->rank - 1 && ir_dim_is_const(t->dims[axis]) && t->dims[axis].v >= 1 &&
        lw_compute_dtype(t->dtype) == t->dtype &&
        (!ir_dim_is_const(*last) || last->v >= red_width(c, t->dtype)))
        return lower_cum_rows(c, axis);
    bool excl = ir_attr_int(n, "exclusive", 0), rev = ir_attr_int(n, "reverse", 0);
    bool prod = n->op == IR_OP_CUM_PROD;
    ir_dtype xt = t->dtype, at = wide_dtype(xt);
    bool red[IR_MAX_RANK] = {0};
    red[axis] = true;
    kir_expr *ix[IR_MAX_RANK];
    kir_block *body = red_outer(c, t, red, ix);
    if (!body)
        return -1;
    int acc = kir_new_acc(k, at);
    if (!kir_acc_set(k, body, acc, red_const(c, at, prod)))
        return -1;
    kir_block *p = red_pass(c, body, t, red, ix, KIR_SERIAL, at);
    if (!p)
        return -1;
    if (rev) /* j = len - 1 - step */
        ix[axis] = kir_op2(k, KIR_SUB, IR_I64,
                           kir_op2(k, KIR_SUB, IR_I64, lw_dim_of(k, t->dims[axis]), lw_i64c(k, 1)), ix[axis]);
    ir_dtype ot = n->out[0]->type.dtype;
    if (excl && !kir_store(k, p, c->out, ix, red_cvt(c, kir_acc(k, acc), ot)))
        return -1;
    kir_expr *x = red_load(c, 0, ix, at);
    if (!kir_acc_set(k, p, acc, kir_op2(k, prod ? KIR_MUL : KIR_ADD, at, kir_acc(k, acc), x)))
        return -1;
    if (!excl && !kir_store(k, p, c->out, ix, red_cvt(c, kir_acc(k, acc), ot)))
        return -1;
    return 0;
}

/* ---- the family ------------------------------------------------------------------- */

bool cg_can_lower_reduce(const ir_node *n)
{
    if (n->nin < 1 || !n->in[0])
        return false;
    const ir_type *x = &n->in[0]->type;
    ir_dtype xt = x->dtype;
    bool num = ir_dtype_is_float(xt) || ir_dtype_is_int(xt);
    if (is_reduce(n->op)) {
        bool red[IR_MAX_RANK], noop;
        bool minmax = n->op == IR_OP_REDUCE_MAX || n->op == IR_OP_REDUCE_MIN;
        bool masks[DYN_MAX_MASKS][IR_MAX_RANK];
        int nm;
        return n->nout == 1 && (num || (minmax && xt == IR_BOOL)) && n->out[0]->type.dtype == xt &&
               (reduce_axes(n, red, &noop) || dyn_reduce_masks(n, masks, &nm));
    }
    switch (n->op) {
    case IR_OP_ARG_MAX: case IR_OP_ARG_MIN: {
        int64_t a = ir_attr_int(n, "axis", 0);
        return n->nout == 1 && num && x->rank >= 1 && a >= -x->rank && a < x->rank;
    }
    case IR_OP_CUM_SUM: case IR_OP_CUM_PROD: {
        int axis;
        /* a run-time axis: a scalar (or [1]) over a static input of rank >= 1 */
        bool dyn = dyn_axes_len(n, 1) == 1 && x->rank >= 1 && ir_type_is_static(x);
        return n->nout == 1 && num && n->out[0]->type.dtype == xt && (cum_axis(n, &axis) || dyn);
    }
    default:
        return false;
    }
}

int lower_reduce(lctx *c)
{
    int op = c->n->op;
    if (is_reduce(op))
        return lower_reduce_op(c);
    switch (op) {
    case IR_OP_ARG_MAX: case IR_OP_ARG_MIN: return lower_arg(c);
    case IR_OP_CUM_SUM: case IR_OP_CUM_PROD: return lower_cum(c);
    default: return -1;
    }
}
