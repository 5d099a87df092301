/* movement.c - data movement whose source positions follow from
 * the shapes and constant operands alone: reshapes (a flat copy in
 * row-major order), Transpose, Concat, Split, Slice, Expand, Tile, Pad,
 * CenterCropPad, DepthToSpace, SpaceToDepth, Trilu, and the generators
 * ConstantOfShape, EyeLike, Range, Shape and Size. Movement copies the
 * buffer's own dtype, so every dtype is handled. Where the innermost
 * accesses are unit-stride (Concat, Split, Slice with step 1, the
 * interior of Pad, Tile's rows) the innermost loop is a VECTOR loop so
 * LLVM emits vector moves. Ops driven by index tensors live in
 * gather_scatter.c.
 */
#include "codegen/lower/movement.h"
#include "ir/ops.h"
#include "ir/ref/movement.h"
#include "ir/ref/ref.h"

#include <string.h>

/* ---- shared helpers ------------------------------------------------------ */

int mv_width(lctx *c, ir_dtype dt)
{
    int w = c->s->lanes * 4 / (int)ir_dtype_size(dt);
    return w > 0 ? w : 1;
}

kir_block *mv_nest(lctx *c, kir_block *b, const ir_type *t, bool par, bool vec, kir_expr **idx)
{
    kir_kernel *k = c->k;
    int r = t->rank, d = 0;
    if (par && r > 0) {
        /* Leading dims of 1 (a batch of one) would leave the threads idle:
         * the parallel loop runs over the product of the leading dims up
         * to the schedule's par_min positions, unflattened per iteration.
         * A symbolic dim counts as 1 first (a batch), 16 after (a plane's
         * rows): a symbolic image's batch of one is not the threads' only
         * work (lw_chunk_parallel splits the product). */
        int64_t par_min = c->s->par_min;
        int last = vec && r > 1 ? r - 1 : r, nf = 0;
        int64_t p = 1;
        bool sym = false;
        while (nf < last && (nf == 0 || p < par_min)) {
            ir_dim dd = t->dims[nf];
            int64_t w = ir_dim_is_const(dd) ? dd.v : dd.sym > 0 ? (nf ? 16 : 1) : -1;
            if (w < 1 || p > (INT64_C(1) << 40) / w)
                break;
            sym = sym || !ir_dim_is_const(dd);
            p *= w;
            nf++;
        }
        if (nf == 0)
            nf = 1;
        kir_expr *hi = NULL;
        for (int j = 0; j < nf; j++)
            hi = hi ? kir_imul(k, hi, lw_dim_of(k, t->dims[j])) : lw_dim_of(k, t->dims[j]);
        int v = kir_new_var(k);
        kir_stmt *l = kir_for(k, b, v, lw_i64c(k, 0), nf == 1 || sym ? hi : lw_i64c(k, p), KIR_PARALLEL, 0);
        if (!l)
            return NULL;
        b = &l->body;
        kir_expr *flat = kir_var(k, v), *stride = NULL;
        for (int j = nf - 1; j >= 0; j--) {
            kir_expr *q = stride ? kir_op2(k, KIR_DIV, IR_I64, flat, stride) : flat;
            bool one = ir_dim_is_const(t->dims[j]) && t->dims[j].v == 1;
            idx[j] = nf > 1 && one ? lw_i64c(k, 0) : j == 0 ? q : kir_op2(k, KIR_REM, IR_I64, q, lw_dim_of(k, t->dims[j]));
            if (nf > 1 && !one)
                stride = stride ? kir_imul(k, stride, lw_dim_of(k, t->dims[j])) : lw_dim_of(k, t->dims[j]);
        }
        d = nf;
    }
    for (; d < r; d++) {
        int v = kir_new_var(k);
        kir_loop kind = d == r - 1 && vec ? KIR_VECTOR : KIR_SERIAL;
        kir_stmt *l = kir_for(k, b, v, lw_i64c(k, 0), lw_dim_of(k, t->dims[d]), kind,
                              kind == KIR_VECTOR ? mv_width(c, t->dtype) : 0);
        if (!l)
            return NULL;
        b = &l->body;
        idx[d] = kir_var(k, v);
    }
    return b;
}

kir_expr *mv_const(lctx *c, ir_dtype dt, double v)
{
    return ir_dtype_is_float(dt) ? kir_const_f(c->k, dt, v) : kir_const_i(c->k, dt, (int64_t)v);
}

kir_expr *mv_index_dim(lctx *c, kir_expr *v, ir_dim n)
{
    kir_kernel *k = c->k;
    if (v && v->dtype != IR_I64)
        v = kir_op1(k, KIR_CAST, IR_I64, v);
    kir_expr *neg = kir_op2(k, KIR_LT, IR_BOOL, v, lw_i64c(k, 0));
    v = kir_op3(k, KIR_SELECT, IR_I64, neg, kir_iadd(k, v, kir_dim(k, n)), v);
    v = kir_op2(k, KIR_MAX, IR_I64, v, lw_i64c(k, 0));
    kir_expr *top = n.sym > 0 ? kir_op2(k, KIR_MAX, IR_I64, kir_iadd(k, kir_dim(k, n), lw_i64c(k, -1)), lw_i64c(k, 0))
                              : lw_i64c(k, n.v > 0 ? n.v - 1 : 0);
    return kir_op2(k, KIR_MIN, IR_I64, v, top);
}

kir_expr *mv_index(lctx *c, kir_expr *v, int64_t n)
{
    return mv_index_dim(c, v, ir_dim_const(n));
}

kir_expr *mv_index_checked_dim(lctx *c, kir_block *b, kir_expr *v, ir_dim n)
{
    kir_kernel *k = c->k;
    if (v && v->dtype != IR_I64)
        v = kir_op1(k, KIR_CAST, IR_I64, v);
    if (!(v = kir_let(k, b, v)))
        return NULL;
    kir_expr *bad = kir_op2(k, KIR_OR, IR_BOOL,
                            kir_op2(k, KIR_LT, IR_BOOL, v, kir_op1(k, KIR_NEG, IR_I64, kir_dim(k, n))),
                            kir_op2(k, KIR_LE, IR_BOOL, kir_dim(k, n), v));
    kir_stmt *chk = kir_if(k, b, bad);
    char msg[400], dim[64];
    if (n.sym > 0)
        snprintf(dim, sizeof dim, "%.60s", ir_graph_sym_name(c->g, n.sym));
    else
        snprintf(dim, sizeof dim, "%lld", (long long)n.v);
    snprintf(msg, sizeof msg, "node '%.200s' (%s): an index is out of range for a dim of %s", c->n->name,
             ir_ops[c->n->op].name, dim);
    if (!chk || !kir_fail(k, &chk->body, msg))
        return NULL;
    return mv_index_dim(c, v, n);
}

kir_expr *mv_index_checked(lctx *c, kir_block *b, kir_expr *v, int64_t n)
{
    return mv_index_checked_dim(c, b, v, ir_dim_const(n));
}

bool mv_axis(int64_t axis, int rank, int *out)
{
    if (axis < -rank || axis >= rank)
        return false;
    *out = (int)(axis < 0 ? axis + rank : axis);
    return true;
}

static bool is_const_in(const ir_node *n, int i)
{
    return i < n->nin && n->in[i] && n->in[i]->kind == IR_VAL_CONST;
}

static bool has_in(const ir_node *n, int i)
{
    return i < n->nin && n->in[i];
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static kir_expr *irem(kir_kernel *k, kir_expr *a, int64_t b) { return kir_op2(k, KIR_REM, IR_I64, a, lw_i64c(k, b)); }

/* ---- reshapes, Transpose ---------------------------------------------------- */

void lower_unflatten(lctx *c, const ir_type *t, kir_expr *flat, kir_expr **idx)
{
    kir_kernel *k = c->k;
    kir_expr *stride = lw_i64c(k, 1);
    for (int d = t->rank - 1; d >= 0; d--) {
        kir_expr *q = kir_op2(k, KIR_DIV, IR_I64, flat, stride);
        idx[d] = kir_op2(k, KIR_REM, IR_I64, q, lw_dim_of(k, t->dims[d]));
        stride = kir_imul(k, stride, lw_dim_of(k, t->dims[d]));
    }
}

/* Buffer buf's element at row-major position flat: zeros for the leading
 * dims and flat as the last index. The backends linearize indices as
 * sum(idx[d] * stride[d]), so an index past its dim that keeps the
 * linear position inside the buffer addresses exactly that element. */
static kir_expr *flat_load(lctx *c, int buf, int rank, kir_expr *flat)
{
    kir_expr *idx[IR_MAX_RANK];
    for (int d = 0; d < rank; d++)
        idx[d] = d == rank - 1 ? flat : lw_i64c(c->k, 0);
    return kir_load(c->k, buf, idx);
}

enum { COPY_BLOCK = 4096 };

/* A parallel loop over the blocks of COPY_BLOCK elements of [0, n) (nblk
 * of them) in c->k's body, each one VECTOR loop over its elements (the
 * width of dt): the body of that loop, its variable in *v; NULL on out
 * of memory. */
static kir_block *flat_blocks(lctx *c, kir_expr *n, kir_expr *nblk, ir_dtype dt, kir_expr **v)
{
    kir_kernel *k = c->k;
    int bv = kir_new_var(k), ev = kir_new_var(k);
    kir_stmt *lb = lw_loop(c, &k->body, bv, nblk, KIR_PARALLEL);
    if (!lb)
        return NULL;
    kir_expr *lo = kir_imul(k, kir_var(k, bv), lw_i64c(k, COPY_BLOCK));
    kir_expr *hi = kir_op2(k, KIR_MIN, IR_I64, kir_iadd(k, lo, lw_i64c(k, COPY_BLOCK)), n);
    kir_stmt *l = kir_for(k, &lb->body, ev, lo, hi, KIR_VECTOR, mv_width(c, dt));
    *v = l ? kir_var(k, ev) : NULL;
    return l ? &l->body : NULL;
}

/* Reshapes keep the bytes in order: out[flat] = in[flat], as parallel
 * blocks of one vector loop each (no per-element index arithmetic). */
static int lower_copy(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_type *ti = &c->n->in[0]->type, *to = &c->n->out[0]->type;
    /* constant bounds when the shape is static: the runtime only splits
     * a parallel loop whose trip count is a constant */
    int64_t n = 1;
    kir_expr *numel = NULL, *nblk;
    for (int d = 0; d < to->rank; d++)
        if (ir_dim_is_const(to->dims[d]))
            n *= to->dims[d].v;
        else
            numel = numel ? kir_imul(k, numel, lw_dim_of(k, to->dims[d])) : lw_dim_of(k, to->dims[d]);
    if (numel) {
        numel = kir_imul(k, numel, lw_i64c(k, n));
        nblk = kir_op2(k, KIR_DIV, IR_I64, kir_iadd(k, numel, lw_i64c(k, COPY_BLOCK - 1)), lw_i64c(k, COPY_BLOCK));
    } else {
        numel = lw_i64c(k, n);
        nblk = lw_i64c(k, (n + COPY_BLOCK - 1) / COPY_BLOCK);
    }
    kir_expr *v, *oi[IR_MAX_RANK];
    kir_block *b = flat_blocks(c, numel, nblk, to->dtype, &v);
    if (!b)
        return -1;
    for (int d = 0; d < to->rank; d++)
        oi[d] = d == to->rank - 1 ? v : lw_i64c(k, 0);
    return kir_store(k, b, c->out, oi, flat_load(c, c->buf[0], ti->rank, v)) ? 0 : -1;
}

/* Dropout's optional mask output is all true at inference. */
static int lower_dropout(lctx *c)
{
    if (lower_copy(c) < 0)
        return -1;
    if (c->n->nout < 2)
        return 0;
    kir_expr *idx[IR_MAX_RANK];
    kir_block *b = mv_nest(c, &c->k->body, &c->n->out[1]->type, false, true, idx);
    return b && kir_store(c->k, b, c->outs[1], idx, kir_const_i(c->k, IR_BOOL, 1)) ? 0 : -1;
}

/* The product of dims [lo, hi) of t as an index expression (1 when
 * empty); *cv its value when every one is a constant, else -1. */
static kir_expr *dims_product(kir_kernel *k, const ir_type *t, int lo, int hi, int64_t *cv)
{
    kir_expr *e = NULL;
    int64_t c = 1;
    for (int d = lo; d < hi; d++) {
        if (ir_dim_is_const(t->dims[d]))
            c *= t->dims[d].v;
        else
            e = e ? kir_imul(k, e, lw_dim_of(k, t->dims[d])) : lw_dim_of(k, t->dims[d]);
    }
    *cv = e ? -1 : c;
    return e ? lw_imulc(k, e, c) : lw_i64c(k, c);
}

/* Indices of t addressing flat positions o, a, b of the runs [0, na),
 * [na, nb), [nb, r) of its dims (each run's last dim takes the position,
 * the others 0: the same linear element, as the backends linearize). */
static void run_index(const ir_type *t, int na, int nb, kir_expr *zero, kir_expr *o, kir_expr *a, kir_expr *b,
                      kir_expr **idx)
{
    for (int d = 0; d < t->rank; d++)
        idx[d] = d == na - 1 ? o : d == nb - 1 ? a : d == t->rank - 1 ? b : zero;
}

/* transpose_blocks over symbolic dims: input [O, A, B] (runs of dims
 * [0, oe), [a0, b0), [b0, r)) to [O, B, A], in n x n blocks wherever A
 * and B are both at least n at run time (the window's rows A or B
 * elements apart), else each (o, block) element by element; the trips
 * (O times A's blocks) are a product the chunking shares. 1 when
 * lowered, 0 when A or B is a constant under n, -1 on out of memory. */
static int transpose_blocks_sym(lctx *c, int oe, int a0, int b0)
{
    kir_kernel *k = c->k;
    const ir_type *ti = &c->n->in[0]->type, *to = &c->n->out[0]->type;
    int r = ti->rank;
    int64_t L = c->s->lanes, co, ca, cb;
    kir_expr *O = dims_product(k, ti, 0, oe, &co), *A = dims_product(k, ti, a0, b0, &ca);
    kir_expr *B = dims_product(k, ti, b0, r, &cb);
    if ((ca >= 0 && ca < L) || (cb >= 0 && cb < L))
        return 0;
    if (!O || !A || !B)
        return -1;
    kir_expr *na = lw_idivc(k, lw_iaddc(k, A, L - 1), L);
    int pv = kir_new_var(k);
    kir_stmt *lp = kir_for(k, &k->body, pv, lw_i64c(k, 0), kir_imul(k, O, na), KIR_PARALLEL, 0);
    if (!lp)
        return -1;
    kir_expr *p = kir_var(k, pv), *zero = lw_i64c(k, 0);
    kir_expr *o = kir_op2(k, KIR_DIV, IR_I64, p, na), *ia = kir_op2(k, KIR_REM, IR_I64, p, na);
    kir_expr *big = kir_op2(k, KIR_AND, IR_BOOL, kir_op2(k, KIR_LE, IR_BOOL, lw_i64c(k, L), A),
                            kir_op2(k, KIR_LE, IR_BOOL, lw_i64c(k, L), B));
    kir_stmt *st = kir_if(k, &lp->body, big);
    if (!st)
        return -1;
    /* the output's runs: O, then B over [oe, oe + r - b0), then A */
    int ob = oe + (r - b0);
    {
        int bv = kir_new_var(k);
        kir_stmt *lb = kir_for(k, &st->body, bv, zero, lw_idivc(k, lw_iaddc(k, B, L - 1), L), KIR_SERIAL, 0);
        if (!lb)
            return -1;
        kir_expr *i0 = lw_imin(k, lw_imulc(k, ia, L), lw_iaddc(k, A, -L));
        kir_expr *j0 = lw_imin(k, lw_imulc(k, kir_var(k, bv), L), lw_iaddc(k, B, -L));
        kir_expr *ii[IR_MAX_RANK], *oi[IR_MAX_RANK];
        run_index(ti, oe, b0, zero, o, i0, j0, ii);
        run_index(to, oe, ob, zero, o, j0, i0, oi);
        kir_iarg args[2] = {{.buf = c->out, .nidx = r, .idx = oi, .rows = A},
                            {.buf = c->buf[0], .nidx = r, .idx = ii, .rows = B}};
        if (!kir_intrinsic(k, &lb->body, KIR_IN_TRANSPOSE_F32, (int)L, args))
            return -1;
    }
    /* A or B under n: A's elements of this o (one block) one by one */
    int iv = kir_new_var(k), jv = kir_new_var(k);
    kir_stmt *li = kir_for(k, &st->orelse, iv, zero, A, KIR_SERIAL, 0);
    kir_stmt *lj = li ? kir_for(k, &li->body, jv, zero, B, KIR_SERIAL, 0) : NULL;
    if (!lj)
        return -1;
    kir_expr *ii[IR_MAX_RANK], *oi[IR_MAX_RANK];
    run_index(ti, oe, b0, zero, o, kir_var(k, iv), kir_var(k, jv), ii);
    run_index(to, oe, ob, zero, o, kir_var(k, jv), kir_var(k, iv), oi);
    return kir_store(k, &lj->body, c->out, oi, kir_load(k, c->buf[0], ii)) ? 1 : -1;
}

/* A Transpose that, with the dims that stay adjacent merged, swaps the
 * last two of static f32 [O, A, B] (O the rest) into [O, B, A], both A
 * and B at least the f32 lanes n, where the schedule has f32_transpose:
 * the blocked layout's reorders [N, C/cb, H, W, cb] <-> [N, C/cb, cb, H,
 * W] (A, B = HW, cb). As n x n blocks of transpose_f32 over flat views of
 * both buffers, parallel over O and A's blocks; the last block of A and
 * of B starts at A - n and B - n (it rewrites values the block before it
 * wrote, the same ones). Element by element, the from-blocked reorders
 * of a DBNet-style model ran at 10-15 GB/s (a gather per vector of
 * output). 1 when lowered, 0 when not this form, -1 on out of memory. */
static int transpose_blocks(lctx *c, const int *perm)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *ti = &n->in[0]->type, *to = &n->out[0]->type;
    int r = to->rank;
    int64_t L = c->s->lanes;
    if (!c->s->f32_transpose || ti->dtype != IR_F32 || r < 2 || c->buf[0] < 0)
        return 0;
    /* runs of output dims whose input dims are consecutive */
    int start[IR_MAX_RANK], m = 0;
    for (int d = 0; d < r; d++)
        if (d == 0 || perm[d] != perm[d - 1] + 1)
            start[m++] = d;
    /* [O.., B, A] read from input [O.., A, B]: the last two runs swapped,
     * every run before them in place */
    if (m < 2)
        return 0;
    for (int i = 0; i + 2 < m; i++)
        if (perm[start[i]] != start[i])
            return 0;
    int a0 = perm[start[m - 1]], b0 = perm[start[m - 2]];
    if (a0 != start[m - 2] || b0 <= a0)
        return 0;
    if (!ir_type_is_static(ti))
        return transpose_blocks_sym(c, start[m - 2], a0, b0);
    int64_t O = 1, A = 1, B = 1;
    for (int d = 0; d < start[m - 2]; d++)
        O *= ti->dims[d].v;
    for (int d = a0; d < b0; d++)
        A *= ti->dims[d].v;
    for (int d = b0; d < r; d++)
        B *= ti->dims[d].v;
    if (A < L || B < L)
        return 0;
    ir_type vi = {.dtype = IR_F32, .rank = 3, .dims = {ir_dim_const(O), ir_dim_const(A), ir_dim_const(B)}};
    ir_type vo = {.dtype = IR_F32, .rank = 3, .dims = {ir_dim_const(O), ir_dim_const(B), ir_dim_const(A)}};
    const kir_buf *bi = &k->bufs[c->buf[0]], *bo = &k->bufs[c->out];
    int in = kir_add_buf(k, bi->name, bi->kind, &vi, bi->index, bi->offset);
    int out = in < 0 ? -1 : kir_add_buf(k, bo->name, bo->kind, &vo, bo->index, bo->offset);
    if (out < 0)
        return -1;
    int64_t na = (A + L - 1) / L, nb = (B + L - 1) / L;
    int pv = kir_new_var(k), bv = kir_new_var(k);
    kir_stmt *lp = kir_for(k, &k->body, pv, lw_i64c(k, 0), lw_i64c(k, O * na), KIR_PARALLEL, 0);
    kir_stmt *lb = lp ? kir_for(k, &lp->body, bv, lw_i64c(k, 0), lw_i64c(k, nb), KIR_SERIAL, 0) : NULL;
    if (!lb)
        return -1;
    kir_expr *o = lw_idivc(k, kir_var(k, pv), na);
    kir_expr *i0 = lw_imin(k, lw_imulc(k, lw_iremc(k, kir_var(k, pv), na), L), lw_i64c(k, A - L));
    kir_expr *j0 = lw_imin(k, lw_imulc(k, kir_var(k, bv), L), lw_i64c(k, B - L));
    kir_iarg args[2] = {{.buf = out, .nidx = 3, .idx = (kir_expr *[]){o, j0, i0}},
                        {.buf = in, .nidx = 3, .idx = (kir_expr *[]){o, i0, j0}}};
    return kir_intrinsic(k, &lb->body, KIR_IN_TRANSPOSE_F32, (int)L, args) ? 1 : -1;
}

/* out[i...] = in[j...] with j[perm[d]] = i[d]. */
static int lower_transpose(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *to = &n->out[0]->type;
    int r = to->rank, perm[IR_MAX_RANK] = {0};
    const int64_t *p;
    int np = ir_attr_ints(n, "perm", &p);
    for (int d = 0; d < r; d++)
        perm[d] = np == r ? (int)p[d] : r - 1 - d;
    int rc = transpose_blocks(c, perm);
    if (rc)
        return rc < 0 ? -1 : 0;
    kir_expr *oi[IR_MAX_RANK], *ii[IR_MAX_RANK];
    /* The input's contiguous last dim lands at output dim q before the
     * last: when it is short (a blocked layout's lanes), it is the
     * innermost loop, inside the vector loop over the output's last dim,
     * so that each vector of strided reads (a gather) touches the same
     * cache lines as the one before (from-blocked reorders [N, C/cb, H,
     * W, cb] -> [N, C/cb, cb, H, W] re-read every pixel's line from L2
     * once per lane). From rank 3, so that a dim is left for the
     * parallel loop besides the vector one. Where the schedule says
     * (transpose_lane_inner: not CUDA, whose threads take the output's
     * elements in order; a BERT layer's key transpose ran on 12 threads
     * this way). */
    int q = -1;
    for (int d = 0; d + 1 < r; d++)
        if (perm[d] == r - 1)
            q = d;
    const ir_type *ti = &n->in[0]->type;
    /* (a symbolic last dim too: a detector's W, the reorders over
     * symbolic H and W ran scalar, 3 ms for 1.2 M floats) */
    if (q >= 0 && r >= 3 && c->s->transpose_lane_inner && ir_dim_is_const(ti->dims[r - 1]) && ti->dims[r - 1].v <= 64 &&
        (ir_dim_is_const(to->dims[r - 1]) ? to->dims[r - 1].v >= 8 : to->dims[r - 1].sym > 0)) {
        ir_type t2 = *to;
        for (int d = q; d + 1 < r; d++)
            t2.dims[d] = to->dims[d + 1];
        t2.rank = r - 1;
        kir_expr *oi2[IR_MAX_RANK];
        kir_block *b2 = mv_nest(c, &k->body, &t2, true, true, oi2);
        int v = kir_new_var(k);
        kir_stmt *l = b2 ? kir_for(k, b2, v, lw_i64c(k, 0), lw_i64c(k, ti->dims[r - 1].v), KIR_SERIAL, 0) : NULL;
        if (!l)
            return -1;
        for (int d = 0, j = 0; d < r; d++)
            oi[d] = d == q ? kir_var(k, v) : oi2[j++];
        for (int d = 0; d < r; d++)
            ii[perm[d]] = oi[d];
        return kir_store(k, &l->body, c->out, oi, kir_load(k, c->buf[0], ii)) ? 0 : -1;
    }
    /* unit-stride on both sides only when the last dim stays last */
    kir_block *body = mv_nest(c, &k->body, to, true, r > 0 && perm[r - 1] == r - 1, oi);
    if (!body)
        return -1;
    for (int d = 0; d < r; d++)
        ii[perm[d]] = oi[d];
    return kir_store(k, body, c->out, oi, kir_load(k, c->buf[0], ii)) ? 0 : -1;
}

/* ---- Concat, Split ------------------------------------------------------------ */

/* Concat and Split: a parallel loop over the dims before the axis, then
 * one nest per piece over the axis and the dims after it, the piece's
 * axis position offset by the pieces before it. When the dims before the
 * axis hold few positions (concatenating along dim 0, or a batch of
 * one; a symbolic batch counts as one, as it usually is: a symbolic
 * detector's channel Concat ran on one thread), the parallel loop runs
 * over (outer, axis) rows instead and a chain of ifs picks the piece a
 * row belongs to. */
static int lower_concat_split(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    bool concat = n->op == IR_OP_CONCAT;
    const ir_type *whole = concat ? &n->out[0]->type : &n->in[0]->type;
    int r = whole->rank, axis;
    if (!mv_axis(ir_attr_int(n, "axis", 0), r, &axis))
        return -1;
    int64_t outer_n = 1;
    for (int d = 0; d < axis; d++)
        outer_n = ir_dim_is_const(whole->dims[d]) && outer_n < (1 << 20) ? outer_n * whole->dims[d].v : outer_n;
    bool rows = outer_n < 64 && axis < r - 1;
    ir_type outer = *whole;
    outer.rank = rows ? axis + 1 : axis;
    kir_expr *wi[IR_MAX_RANK], *pi[IR_MAX_RANK];
    kir_block *b = mv_nest(c, &k->body, &outer, true, false, wi);
    if (!b)
        return -1;
    kir_expr *a = rows ? wi[axis] : NULL;
    int npieces = concat ? n->nin : n->nout, lastp = -1;
    for (int i = 0; i < npieces; i++) {
        ir_dim len = (concat ? &n->in[i]->type : &n->out[i]->type)->dims[axis];
        if (len.sym || len.v > 0)
            lastp = i;
    }
    /* a piece's position along the axis: a constant, or (a Concat of
     * symbolic lengths) an expression of the run's values */
    int64_t at = 0;
    kir_expr *atx = NULL;
    for (int i = 0; i < npieces; i++) {
        const ir_type *pt = concat ? &n->in[i]->type : &n->out[i]->type;
        ir_dim lend = pt->dims[axis];
        int64_t len = lend.v;
        if (!lend.sym && len == 0)
            continue;
        if (lend.sym && !atx)
            atx = lw_i64c(k, at);
        kir_expr *pos = atx ? atx : lw_i64c(k, at);
        kir_block *target = b;
        if (rows && i != lastp) {
            kir_expr *end = atx ? kir_iadd(k, atx, lw_dim_of(k, lend)) : lw_i64c(k, at + len);
            kir_stmt *s = kir_if(k, b, kir_op2(k, KIR_LT, IR_BOOL, a, end));
            if (!s)
                return -1;
            target = &s->body;
            b = &s->orelse;
        }
        int from = rows ? axis + 1 : axis;
        ir_type inner = *pt;
        inner.rank = r - from;
        memmove(inner.dims, pt->dims + from, sizeof(ir_dim) * (size_t)inner.rank);
        for (int d = 0; d < axis; d++)
            pi[d] = wi[d];
        if (rows)
            pi[axis] = kir_op2(k, KIR_SUB, IR_I64, a, pos);
        kir_block *ib = mv_nest(c, target, &inner, false, true, pi + from);
        if (!ib)
            return -1;
        for (int d = from; d < r; d++)
            wi[d] = d == axis ? kir_iadd(k, pi[d], pos) : pi[d];
        kir_stmt *s = concat ? lw_store_out(c, ib, wi, kir_load(k, c->buf[i], pi))
                             : kir_store(k, ib, c->outs[i], pi, kir_load(k, c->buf[0], wi));
        if (!s)
            return -1;
        if (atx)
            atx = kir_iadd(k, atx, lw_dim_of(k, lend));
        else
            at += len;
    }
    return 0;
}

/* ---- ConcatNCHWc ----------------------------------------------------------- */

/* A channel Concat of blocked parts that need not be whole blocks (the
 * layout pass; ir/ops.def): a parallel nest over the pixels (N, H, W, the
 * run's dims), and in it, per part, its real channels as runs of lanes
 * that stay in one block on both sides: a part starting at lane l of an
 * output block splits each of its blocks into a run of cb - l lanes and
 * one of l, each a vector loop over its lanes (contiguous on both sides,
 * masked where shorter than a vector). The output's lanes past the
 * channels are stored 0. Stores go through lw_store_out (fuse's pad-out:
 * the result may land in a padded buffer's interior). */
static int lower_concat_nchwc(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *o = &n->out[0]->type;
    const int64_t *ch;
    if (ir_attr_ints(n, "channels", &ch) != n->nin || o->rank != 5 || !ir_dim_is_const(o->dims[1]) ||
        !ir_dim_is_const(o->dims[4]))
        return -1;
    int64_t cb = o->dims[4].v, total = o->dims[1].v * cb, at = 0;
    ir_type px = *o;
    px.rank = 3;
    px.dims[1] = o->dims[2];
    px.dims[2] = o->dims[3];
    kir_expr *pi[3];
    kir_block *b = mv_nest(c, &k->body, &px, true, false, pi);
    if (!b)
        return -1;
    int w = mv_width(c, o->dtype);
    kir_expr *zero = ir_dtype_is_float(o->dtype) ? kir_const_f(k, o->dtype, 0) : kir_const_i(k, o->dtype, 0);
    for (int i = 0; i <= n->nin; i++) {
        /* part i's channels, then (i == nin) the pad lanes */
        int64_t len = i < n->nin ? ch[i] : total - at;
        for (int64_t q = 0; q < len;) {
            int64_t oc = at + q, l = oc % cb, sl = q % cb;
            int64_t m = cb - l < cb - sl ? cb - l : cb - sl;
            m = m < len - q ? m : len - q;
            int v = kir_new_var(k);
            kir_stmt *lp = kir_for(k, b, v, lw_i64c(k, l), lw_i64c(k, l + m), KIR_VECTOR, w);
            if (!lp)
                return -1;
            kir_expr *oi[5] = {pi[0], lw_i64c(k, oc / cb), pi[1], pi[2], kir_var(k, v)}, *val = zero;
            if (i < n->nin) {
                kir_expr *ii[5] = {pi[0], lw_i64c(k, q / cb), pi[1], pi[2],
                                   kir_iadd(k, kir_var(k, v), lw_i64c(k, sl - l))};
                val = kir_load(k, c->buf[i], ii);
            }
            if (!val || !lw_store_out(c, &lp->body, oi, val))
                return -1;
            q += m;
        }
        if (i < n->nin)
            at += ch[i];
    }
    return 0;
}

/* ---- Slice --------------------------------------------------------------------- */

/* The first position and step of each dim of a slice with constant
 * operands over static data; false if malformed or not matching the
 * output's shape. */
static bool slice_params(const ir_node *n, int64_t *first, int64_t *step)
{
    const ir_type *x = &n->in[0]->type, *o = &n->out[0]->type;
    if (!ir_type_is_static(x) || !is_const_in(n, 1) || !is_const_in(n, 2) ||
        (has_in(n, 3) && !is_const_in(n, 3)) || (has_in(n, 4) && !is_const_in(n, 4)))
        return false;
    const ir_tensor *ts = &n->in[1]->cval, *te = &n->in[2]->cval;
    const ir_tensor *ta = has_in(n, 3) ? &n->in[3]->cval : NULL, *tp = has_in(n, 4) ? &n->in[4]->cval : NULL;
    int64_t cnt = ts->numel;
    if (cnt > x->rank || te->numel != cnt || (ta && ta->numel != cnt) || (tp && tp->numel != cnt) ||
        o->rank != x->rank)
        return false;
    bool sliced[IR_MAX_RANK] = {false};
    for (int d = 0; d < x->rank; d++) {
        first[d] = 0;
        step[d] = 1;
    }
    for (int64_t i = 0; i < cnt; i++) {
        int a;
        if (!mv_axis(ta ? ir_tensor_geti(ta, i) : i, x->rank, &a) || sliced[a])
            return false;
        sliced[a] = true;
        int64_t st = tp ? ir_tensor_geti(tp, i) : 1, d = x->dims[a].v;
        int64_t s = ir_tensor_geti(ts, i), e = ir_tensor_geti(te, i);
        if (st == 0)
            return false;
        if (st == INT64_MIN)
            st = -INT64_MAX;
        int64_t len = 0;
        if (d > 0) {
            if (s < 0)
                s += d;
            if (e < 0)
                e += d;
            if (st > 0) {
                s = clamp64(s, 0, d);
                e = clamp64(e, 0, d);
                len = e > s ? (e - s - 1) / st + 1 : 0;
            } else {
                s = clamp64(s, 0, d - 1);
                e = clamp64(e, -1, d - 1);
                len = s > e ? (s - e - 1) / -st + 1 : 0;
            }
        } else {
            s = 0;
        }
        if (len != o->dims[a].v)
            return false;
        first[a] = s;
        step[a] = len > 1 ? st : 1;
    }
    for (int d = 0; d < x->rank; d++)
        if (!sliced[d] && o->dims[d].v != x->dims[d].v)
            return false;
    return true;
}

/* The same for symbolic dims, where the operands are shape values
 * (ir/shapeval.c) or constants: an axis ending at a symbol is read from 0
 * with step 1 (its length is the output's dim, checked against the data's
 * at run time), a symbolic data dim takes a form of ir_slice_sym_axis (its
 * bounds checked at run time, program.c; a first element counted from the
 * end sets fe[a], then first[a] is added to the dim), and constant dims
 * follow slice_params. */
static bool slice_params_dims(const ir_node *n, int64_t *first, int64_t *step, bool *fe)
{
    const ir_type *x = &n->in[0]->type, *o = &n->out[0]->type;
    ir_slice_entry en[IR_MAX_RANK];
    int cnt;
    if (!ir_slice_entries(n, en, &cnt) || o->rank != x->rank)
        return false;
    bool sliced[IR_MAX_RANK] = {false};
    for (int d = 0; d < x->rank; d++) {
        first[d] = 0;
        step[d] = 1;
        fe[d] = false;
        if (x->dims[d].sym < 0 || o->dims[d].sym < 0)
            return false;
    }
    for (int i = 0; i < cnt; i++) {
        ir_dim s = en[i].start, e = en[i].end, ax = en[i].axis, st = en[i].step;
        int a;
        if (s.sym || ax.sym || st.sym || e.sym < 0 || !mv_axis(ax.v, x->rank, &a) || sliced[a])
            return false;
        sliced[a] = true;
        ir_dim d = x->dims[a];
        if (e.sym > 0) {
            if (s.v != 0 || st.v != 1 || !ir_dim_eq(o->dims[a], e) || d.sym < 0)
                return false;
        } else if (d.sym > 0) {
            ir_slice_axis sa;
            if (!ir_slice_sym_axis(n->graph, d, s.v, e.v, st.v, &sa) || !ir_dim_eq(o->dims[a], sa.len))
                return false;
            first[a] = sa.first;
            fe[a] = sa.from_end;
            step[a] = st.v;
        } else {
                int64_t ss = s.v, ee = e.v, stp = st.v == INT64_MIN ? -INT64_MAX : st.v, len = 0;
            if (stp == 0)
                return false;
            if (d.v > 0) {
                if (ss < 0)
                    ss += d.v;
                if (ee < 0)
                    ee += d.v;
                if (stp > 0) {
                    ss = clamp64(ss, 0, d.v);
                    ee = clamp64(ee, 0, d.v);
                    len = ee > ss ? (ee - ss - 1) / stp + 1 : 0;
                } else {
                    ss = clamp64(ss, 0, d.v - 1);
                    ee = clamp64(ee, -1, d.v - 1);
                    len = ss > ee ? (ss - ee - 1) / -stp + 1 : 0;
                }
            } else {
                ss = 0;
            }
            if (!ir_dim_is_const(o->dims[a]) || len != o->dims[a].v)
                return false;
            first[a] = ss;
            step[a] = len > 1 ? stp : 1;
        }
    }
    for (int d = 0; d < x->rank; d++)
        if (!sliced[d] && !ir_dim_eq(o->dims[d], x->dims[d]))
            return false;
    return true;
}

static bool slice_any(const ir_node *n, int64_t *first, int64_t *step, bool *fe)
{
    for (int d = 0; d < IR_MAX_RANK; d++)
        fe[d] = false;
    return slice_params(n, first, step) || slice_params_dims(n, first, step, fe);
}

/* A unit-step Slice of static shapes that keeps every dim after its
 * first cut one whole: the output is runs of contiguous input elements
 * (one run when the dims before the cut are 1: dropping a padded
 * blocked layout's last channels), copied as a parallel loop over the
 * runs, or over blocks of one run, each a single vector loop (the nest
 * per dim ran 40-element rows: 2.8 GB/s for a YOLO head's output).
 * 1 when it lowered the slice, 0 when the shape is not of that form,
 * -1 on error. */
static int slice_runs(lctx *c, const int64_t *first, const int64_t *step)
{
    enum { MIN_RUN = 256 };
    kir_kernel *k = c->k;
    const ir_type *ti = &c->n->in[0]->type, *to = &c->n->out[0]->type;
    int r = to->rank, a = -1;
    if (r < 1 || ti->rank != r || !ir_type_is_static(ti) || !ir_type_is_static(to))
        return 0;
    for (int d = 0; d < r; d++) {
        if (step[d] != 1)
            return 0;
        if (a < 0 && to->dims[d].v != ti->dims[d].v)
            a = d;
        else if (a >= 0 && d > a && to->dims[d].v != ti->dims[d].v)
            return 0;
    }
    if (a < 0)
        a = 0;
    int64_t run = 1, outer = 1;
    for (int d = a; d < r; d++)
        run *= to->dims[d].v;
    for (int d = 0; d < a; d++)
        outer *= to->dims[d].v;
    if (run < MIN_RUN || outer < 1)
        return 0;
    /* one run: parallel over its blocks; several: parallel over the runs */
    kir_expr *v;
    kir_block *b;
    int pv = kir_new_var(k);
    if (outer == 1) {
        b = flat_blocks(c, lw_i64c(k, run), lw_i64c(k, (run + COPY_BLOCK - 1) / COPY_BLOCK), to->dtype, &v);
    } else {
        int ev = kir_new_var(k);
        kir_stmt *lp = lw_loop(c, &k->body, pv, lw_i64c(k, outer), KIR_PARALLEL);
        kir_stmt *l = lp ? kir_for(k, &lp->body, ev, lw_i64c(k, 0), lw_i64c(k, run), KIR_VECTOR, mv_width(c, to->dtype))
                         : NULL;
        b = l ? &l->body : NULL;
        v = kir_var(k, ev);
    }
    if (!b)
        return -1;
    /* a run's first element, then v along it: the backends linearize
     * sum(idx[d] * stride[d]), so v on the last index walks the run */
    kir_expr *oi[IR_MAX_RANK], *ii[IR_MAX_RANK], *ov[IR_MAX_RANK];
    if (outer > 1) {
        ir_type ot = *to;
        ot.rank = a;
        lower_unflatten(c, &ot, kir_var(k, pv), ov);
    }
    for (int d = 0; d < r; d++) {
        kir_expr *o = d < a && outer > 1 ? ov[d] : lw_i64c(k, 0);
        oi[d] = o;
        ii[d] = d <= a ? kir_iadd(k, lw_i64c(k, first[d]), o) : lw_i64c(k, 0);
    }
    oi[r - 1] = kir_iadd(k, oi[r - 1], v);
    ii[r - 1] = kir_iadd(k, ii[r - 1], v);
    return kir_store(k, b, c->out, oi, kir_load(k, c->buf[0], ii)) ? 1 : -1;
}

static int lower_slice(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_type *to = &c->n->out[0]->type;
    int64_t first[IR_MAX_RANK], step[IR_MAX_RANK];
    bool fe[IR_MAX_RANK];
    if (!slice_any(c->n, first, step, fe))
        return -1;
    int r = to->rank;
    kir_expr *oi[IR_MAX_RANK], *ii[IR_MAX_RANK];
    int rs = slice_runs(c, first, step);
    if (rs)
        return rs > 0 ? 0 : -1;
    kir_block *b = mv_nest(c, &k->body, to, true, r > 0 && step[r - 1] == 1, oi);
    if (!b)
        return -1;
    for (int d = 0; d < r; d++) {
        kir_expr *f = lw_i64c(k, first[d]);
        if (fe[d])
            f = kir_iadd(k, lw_dim_of(k, c->n->in[0]->type.dims[d]), f);
        ii[d] = kir_iadd(k, f, step[d] == 1 ? oi[d] : kir_imul(k, oi[d], lw_i64c(k, step[d])));
    }
    return kir_store(k, b, c->out, oi, kir_load(k, c->buf[0], ii)) ? 0 : -1;
}

/* ---- Expand, Tile ----------------------------------------------------------------- */

/* Expand: numpy broadcasting of the input to the output (constant or
 * symbolic dims; a symbolic input dim is the output's, cg_can_lower). */
enum { SHAPE_EXPAND, SHAPE_TILE, SHAPE_OF };

/* A shape operand (input j: Expand's shape, Tile's repeats,
 * ConstantOfShape's shape) given at run time: the finished kernel fails
 * the run unless its values give the output's dims, static or the run's
 * symbols (Expand: also when they do not broadcast with x). The output
 * shape came from elsewhere (a declared output, shape inference copying
 * one back), so values that disagree would be ignored silently. */
static int shape_operand_check(lctx *c, int j, int kind)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    if (j >= n->nin || !n->in[j] || n->in[j]->kind == IR_VAL_CONST || c->buf[j] < 0)
        return 0;
    const ir_type *ts = &n->in[j]->type, *to = &n->out[0]->type, *tx = &n->in[0]->type;
    if (ts->rank != 1 || !ir_dim_is_const(ts->dims[0]))
        return -1;
    int64_t L = ts->dims[0].v;
    int R = to->rank;
    kir_expr *bad = kir_const_i(k, IR_BOOL, 0), *one = lw_i64c(k, 1);
    for (int d = 0; d < R; d++) {
        int64_t si = kind == SHAPE_EXPAND ? d - (R - L) : d;
        kir_expr *sv = NULL;
        if (si >= 0 && si < L) {
            kir_expr *at = lw_i64c(k, si);
            sv = kir_load(k, c->buf[j], &at);
            sv = sv && sv->dtype != IR_I64 ? kir_op1(k, KIR_CAST, IR_I64, sv) : sv;
        }
        kir_expr *res;
        if (kind == SHAPE_OF) {
            res = sv;
        } else {
            int xd = kind == SHAPE_EXPAND ? d - (R - tx->rank) : d;
            kir_expr *xv = xd >= 0 ? lw_dim_of(k, tx->dims[xd]) : one;
            if (kind == SHAPE_TILE) {
                res = sv ? kir_imul(k, xv, sv) : xv;
            } else if (!sv) {
                res = xv;
            } else {
                /* broadcast: 1 takes the other; unequal dims neither 1 are an error */
                kir_expr *s1 = kir_op2(k, KIR_EQ, IR_BOOL, sv, one), *x1 = kir_op2(k, KIR_EQ, IR_BOOL, xv, one);
                res = kir_op3(k, KIR_SELECT, IR_I64, s1, xv, sv);
                kir_expr *clash = kir_op2(k, KIR_AND, IR_BOOL, kir_op1(k, KIR_NOT, IR_BOOL, kir_op2(k, KIR_OR, IR_BOOL, s1, x1)),
                                          kir_op2(k, KIR_NE, IR_BOOL, sv, xv));
                bad = kir_op2(k, KIR_OR, IR_BOOL, bad, clash);
            }
        }
        bad = kir_op2(k, KIR_OR, IR_BOOL, bad, kir_op2(k, KIR_NE, IR_BOOL, res, lw_dim_of(k, to->dims[d])));
    }
    kir_stmt *chk = kir_if(k, lw_check_block(k), bad);
    char msg[400];
    snprintf(msg, sizeof msg, "node '%.200s' (%s): the %s input does not give the output's shape", n->name,
             ir_ops[n->op].name, kind == SHAPE_TILE ? "repeats" : "shape");
    return chk && kir_fail(k, &chk->body, msg) ? 0 : -1;
}

static int lower_expand(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_type *ti = &c->n->in[0]->type, *to = &c->n->out[0]->type;
    kir_expr *oi[IR_MAX_RANK], *ii[IR_MAX_RANK];
    kir_block *b = mv_nest(c, &k->body, to, true, true, oi);
    if (!b)
        return -1;
    for (int d = 0; d < ti->rank; d++) {
        int od = to->rank - ti->rank + d;
        ii[d] = ir_dim_is_const(ti->dims[d]) && ti->dims[d].v == 1 ? lw_i64c(k, 0) : oi[od];
    }
    return kir_store(k, b, c->out, oi, kir_load(k, c->buf[0], ii)) ? shape_operand_check(c, 1, SHAPE_EXPAND) : -1;
}

/* Tile: loops over [r0, d0, r1, d1, ...] (repeat, then the input's dim),
 * so the innermost loop walks an input row. */
static int lower_tile_op(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *ti = &n->in[0]->type, *to = &n->out[0]->type;
    int r = ti->rank;
    kir_block *b = &k->body;
    kir_expr *oi[IR_MAX_RANK], *ii[IR_MAX_RANK];
    /* each dim's repeat count: the dims' quotient where both are static,
     * else the constant repeats, else (symbolic dims, repeats computed:
     * Tile(z, Shape(x))) the run's quotient of the dims (0 where the
     * input's dim is 0: integer division by 0 gives 0) */
    const int64_t *rc = n->in[1]->kind == IR_VAL_CONST && n->in[1]->cval.numel == r ? n->in[1]->cval.data : NULL;
    int64_t rep[IR_MAX_RANK];
    bool known = true;
    for (int d = 0; d < r; d++) {
        ir_dim xd = ti->dims[d], od = to->dims[d];
        rep[d] = ir_dim_is_const(xd) && ir_dim_is_const(od) ? (xd.v ? od.v / xd.v : 0) : rc ? rc[d] : -1;
        known = known && rep[d] >= 0;
    }
    if (2 * r <= IR_MAX_RANK && known) {
        /* mv_nest spreads small leading repeat counts over the threads */
        ir_type vt = *to;
        kir_expr *vi[IR_MAX_RANK];
        vt.rank = 2 * r;
        for (int d = 0; d < r; d++) {
            vt.dims[2 * d] = ir_dim_const(rep[d]);
            vt.dims[2 * d + 1] = ti->dims[d];
        }
        if (!(b = mv_nest(c, b, &vt, true, true, vi)))
            return -1;
        for (int d = 0; d < r; d++) {
            ii[d] = vi[2 * d + 1];
            oi[d] = kir_iadd(k, kir_imul(k, vi[2 * d], lw_dim_of(k, ti->dims[d])), ii[d]);
        }
        return kir_store(k, b, c->out, oi, kir_load(k, c->buf[0], ii)) ? shape_operand_check(c, 1, SHAPE_TILE) : -1;
    }
    for (int d = 0; d < r; d++) {
        kir_expr *dim = lw_dim_of(k, ti->dims[d]);
        kir_expr *repx = rep[d] >= 0 ? lw_i64c(k, rep[d]) : kir_op2(k, KIR_DIV, IR_I64, lw_dim_of(k, to->dims[d]), dim);
        int rv = kir_new_var(k), jv = kir_new_var(k);
        kir_stmt *lr = kir_for(k, b, rv, lw_i64c(k, 0), repx, d == 0 ? KIR_PARALLEL : KIR_SERIAL, 0);
        if (!lr)
            return -1;
        bool last = d == r - 1;
        kir_stmt *lj = kir_for(k, &lr->body, jv, lw_i64c(k, 0), dim, last ? KIR_VECTOR : KIR_SERIAL,
                               last ? mv_width(c, to->dtype) : 0);
        if (!lj)
            return -1;
        b = &lj->body;
        ii[d] = kir_var(k, jv);
        oi[d] = kir_iadd(k, kir_imul(k, kir_var(k, rv), dim), ii[d]);
    }
    return kir_store(k, b, c->out, oi, kir_load(k, c->buf[0], ii)) ? shape_operand_check(c, 1, SHAPE_TILE) : -1;
}


/* ---- Pad, CenterCropPad --------------------------------------------------------------- */

enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP };

/* Per dim: lo = begin pad (>= 0), hi = end pad (>= 0), crop = elements
 * cropped at the start, len = input elements kept; the output dim is lo +
 * len + hi. A symbolic dim (any mode) keeps the input's dim lend less cut
 * (both crops; len unused): pad_kept. */
typedef struct {
    int mode;
    int64_t lo[IR_MAX_RANK], hi[IR_MAX_RANK], crop[IR_MAX_RANK], len[IR_MAX_RANK], cut[IR_MAX_RANK];
    ir_dim lend[IR_MAX_RANK];
} pad_spec;

/* The kept length of symbolic dim d at run time. */
static kir_expr *pad_kept(kir_kernel *k, const pad_spec *sp, int d)
{
    return lw_iaddc(k, lw_dim_of(k, sp->lend[d]), -sp->cut[d]);
}

/* Fills sp from the signed begin/end pads of each dim; false when they
 * do not produce the output's shape or a mode has nothing to repeat. */
static bool pad_finish(const ir_node *n, const int64_t *b, const int64_t *e, pad_spec *sp)
{
    const ir_type *x = &n->in[0]->type, *o = &n->out[0]->type;
    if (o->rank != x->rank)
        return false;
    for (int d = 0; d < x->rank; d++) {
        int64_t dim = x->dims[d].v;
        sp->hi[d] = e[d] > 0 ? e[d] : 0;
        sp->lend[d] = ir_dim_const(0);
        sp->cut[d] = 0;
        if (x->dims[d].sym || o->dims[d].sym) {
            /* symbolic: the dim less its crops kept, padded around (a
             * reflect-padded time axis of an audio model: the mode maps at
             * run time); lower_pad checks the dim holds the crops */
            if (!n->graph || x->dims[d].sym <= 0 || !ir_dim_is_plus(n->graph, x->dims[d], o->dims[d], b[d] + e[d]))
                return false;
            sp->crop[d] = b[d] < 0 ? -b[d] : 0;
            sp->cut[d] = sp->crop[d] + (e[d] < 0 ? -e[d] : 0);
            sp->lo[d] = b[d] > 0 ? b[d] : 0;
            sp->lend[d] = x->dims[d];
            continue;
        }
        sp->crop[d] = b[d] < 0 ? -b[d] : 0;
        sp->len[d] = dim - sp->crop[d] - (e[d] < 0 ? -e[d] : 0);
        sp->lo[d] = b[d] > 0 ? b[d] : 0;
        if (sp->len[d] < 0 || sp->lo[d] + sp->len[d] + (e[d] > 0 ? e[d] : 0) != o->dims[d].v)
            return false;
        if (sp->mode != PAD_CONSTANT && sp->len[d] == 0 && o->dims[d].v > 0)
            return false;
    }
    return true;
}

static bool pad_params(const ir_node *n, pad_spec *sp)
{
    const ir_type *x = &n->in[0]->type;
    bool sym = !ir_type_is_static(x) || !ir_type_is_static(&n->out[0]->type);
    if (sym && (n->op != IR_OP_PAD || x->rank < 0 || x->rank != n->out[0]->type.rank))
        return false;
    for (int d = 0; sym && d < x->rank; d++)
        if (x->dims[d].sym < 0 || n->out[0]->type.dims[d].sym < 0)
            return false;
    int r = x->rank;
    int64_t b[IR_MAX_RANK] = {0}, e[IR_MAX_RANK] = {0};
    if (n->op == IR_OP_CENTER_CROP_PAD) {
        /* the static output holds the targets: the odd element goes last */
        sp->mode = PAD_CONSTANT;
        for (int d = 0; d < r; d++) {
            int64_t diff = n->out[0]->type.dims[d].v - x->dims[d].v;
            b[d] = diff / 2;
            e[d] = diff - b[d];
        }
        return pad_finish(n, b, e, sp);
    }
    static const char *const modes[] = {"constant", "reflect", "edge", "wrap"};
    const char *m = ir_attr_string(n, "mode", "constant");
    sp->mode = -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(m, modes[i]))
            sp->mode = i;
    if (sp->mode < 0 || !is_const_in(n, 1) || (has_in(n, 3) && !is_const_in(n, 3)))
        return false;
    if (has_in(n, 2) && n->in[2]->type.dtype != x->dtype)
        return false;
    const ir_tensor *tp = &n->in[1]->cval, *ta = has_in(n, 3) ? &n->in[3]->cval : NULL;
    int na = ta ? (int)ta->numel : r;
    if (na > r || tp->numel != 2 * na)
        return false;
    bool seen[IR_MAX_RANK] = {false};
    for (int i = 0; i < na; i++) {
        int a;
        if (!mv_axis(ta ? ir_tensor_geti(ta, i) : i, r, &a) || seen[a])
            return false;
        seen[a] = true;
        b[a] = ir_tensor_geti(tp, i);
        e[a] = ir_tensor_geti(tp, na + i);
        if (b[a] < -((int64_t)1 << 40) || b[a] > ((int64_t)1 << 40) || e[a] < -((int64_t)1 << 40) ||
            e[a] > ((int64_t)1 << 40))
            return false;
    }
    return pad_finish(n, b, e, sp);
}

/* Position i (relative to the kept input) mapped into [0, n) by a
 * non-constant mode: edge clamps, wrap is periodic, reflect mirrors about
 * the end elements without repeating them. */
static kir_expr *pad_map(kir_kernel *k, int mode, kir_expr *i, int64_t n)
{
    switch (mode) {
    case PAD_EDGE:
        return lw_imin(k, lw_imax(k, i, lw_i64c(k, 0)), lw_i64c(k, n - 1));
    case PAD_WRAP:
        return irem(k, kir_iadd(k, irem(k, i, n), lw_i64c(k, n)), n);
    default: {
        if (n == 1)
            return lw_i64c(k, 0);
        int64_t p = 2 * (n - 1);
        kir_expr *m = irem(k, kir_iadd(k, irem(k, i, p), lw_i64c(k, p)), p);
        kir_expr *lt = kir_op2(k, KIR_LT, IR_BOOL, m, lw_i64c(k, n));
        return kir_op3(k, KIR_SELECT, IR_I64, lt, m, kir_op2(k, KIR_SUB, IR_I64, lw_i64c(k, p), m));
    }
    }
}

/* pad_map for a symbolic dim of run-time length n (lower_pad fails an
 * empty one and copies nothing then; taken as at least 1 here all the
 * same, so no index math divides by 0 whatever the loops compute). */
static kir_expr *pad_map_sym(kir_kernel *k, int mode, kir_expr *i, kir_expr *n)
{
    kir_expr *one = lw_i64c(k, 1);
    n = lw_imax(k, n, one);
    switch (mode) {
    case PAD_EDGE:
        return lw_imin(k, lw_imax(k, i, lw_i64c(k, 0)), kir_op2(k, KIR_SUB, IR_I64, n, one));
    case PAD_WRAP: {
        kir_expr *m = kir_op2(k, KIR_REM, IR_I64, i, n);
        return kir_op2(k, KIR_REM, IR_I64, kir_iadd(k, m, n), n);
    }
    default: {
        /* the period 2 (n - 1), 1 for n = 1 (every position is 0 then) */
        kir_expr *p = lw_imax(k, kir_imul(k, lw_i64c(k, 2), kir_op2(k, KIR_SUB, IR_I64, n, one)), one);
        kir_expr *m = kir_op2(k, KIR_REM, IR_I64, kir_iadd(k, kir_op2(k, KIR_REM, IR_I64, i, p), p), p);
        kir_expr *lt = kir_op2(k, KIR_LT, IR_BOOL, m, n);
        return kir_op3(k, KIR_SELECT, IR_I64, lt, m, kir_op2(k, KIR_SUB, IR_I64, p, m));
    }
    }
}

/* Constant-mode Pad whose last dims are neither padded nor cropped (a
 * blocked conv's explicit padding: [N, C/cb, H, W, cb] padded in H and W):
 * the last padded dim and those after it as one row, in views of the
 * input and output buffers, so each row's kept part is one vector copy
 * (DBNet's [1, 4, 80, 80, 16] -> [1, 4, 82, 82, 16]: a test per 16 lanes
 * before); when that leaves too few rows for the threads, the dims after
 * the padded one alone. *merged gets the output's merged type (rank 0: nothing
 * merged), sp, *xb and *ob the merged row's pads and the views. */
static int pad_merge_rows(lctx *c, pad_spec *sp, ir_type *merged, int *xb, int *ob)
{
    const ir_node *n = c->n;
    const ir_type *ti = &n->in[0]->type, *to = &n->out[0]->type;
    int r = to->rank, m = 0;
    merged->rank = 0;
    if (sp->mode != PAD_CONSTANT || !ir_type_is_static(ti) || !ir_type_is_static(to) || *xb < 0 || *ob < 0 ||
        c->k->bufs[*xb].dtype != ti->dtype || c->k->bufs[*ob].dtype != to->dtype)
        return 0;
    while (m < r - 1 && !sp->lo[r - 1 - m] && !sp->hi[r - 1 - m] && !sp->crop[r - 1 - m])
        m++;
    int q = r - m - 1;   /* the merged row's dim */
    /* the rows before it are the parallel loop's positions: with fewer
     * than par_min of them (a channel Pad of [1, C, H, W]) the padded dim
     * stays a dim of rows and only the dims after it merge */
    int64_t outer = 1;
    for (int d = 0; d < q; d++)
        outer *= to->dims[d].v;
    if (m && outer < c->s->par_min) {
        if (m < 2)
            return 0;
        q++, m--;
    }
    if (!m)
        return 0;
    int64_t P = 1;
    for (int d = r - m; d < r; d++)
        P *= to->dims[d].v;
    ir_type xt = *ti, ot = *to;
    xt.rank = ot.rank = q + 1;
    xt.dims[q] = ir_dim_const(ti->dims[q].v * P);
    ot.dims[q] = ir_dim_const(to->dims[q].v * P);
    int vx = kir_add_buf(c->k, c->k->bufs[*xb].name, c->k->bufs[*xb].kind, &xt, c->k->bufs[*xb].index,
                         c->k->bufs[*xb].offset);
    /* (kir_add_buf may move bufs: the output's fields read after it) */
    int vo = vx < 0 ? -1 : kir_add_buf(c->k, c->k->bufs[*ob].name, c->k->bufs[*ob].kind, &ot, c->k->bufs[*ob].index,
                                       c->k->bufs[*ob].offset);
    if (vo < 0)
        return -1;
    sp->lo[q] *= P, sp->hi[q] *= P, sp->crop[q] *= P, sp->len[q] *= P;
    sp->lend[q] = ir_dim_const(sp->len[q]);
    *xb = vx, *ob = vo, *merged = ot;
    return 0;
}

/* Pad (and CenterCropPad): rows of the last dim in three runs, the
 * padding before, the kept input (a vector copy) and the padding after;
 * the outer dims map through the mode, or in constant mode select a row
 * of fill when they fall in the padding. */
static int lower_pad(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *to = &n->out[0]->type;
    ir_dtype dt = to->dtype;
    pad_spec sp;
    if (!pad_params(n, &sp))
        return -1;
    int r = to->rank, xb = c->buf[0], ob = c->out;
    if (r == 0)
        return kir_store(k, &k->body, ob, NULL, kir_load(k, xb, NULL)) ? 0 : -1;
    ir_type merged;
    if (pad_merge_rows(c, &sp, &merged, &xb, &ob) < 0)
        return -1;
    if (merged.rank) {
        to = &merged;
        r = merged.rank;
    }
    kir_expr *fill;
    if (n->op == IR_OP_PAD && has_in(n, 2) && n->in[2]->type.rank >= 0) {
        kir_expr *z[IR_MAX_RANK];
        for (int d = 0; d < n->in[2]->type.rank; d++)
            z[d] = lw_i64c(k, 0);
        /* an empty constant_value means the default 0 */
        int64_t cn = 1;
        for (int d = 0; d < n->in[2]->type.rank; d++)
            cn *= n->in[2]->type.dims[d].v;
        fill = cn > 0 ? kir_load(k, c->buf[2], z) : mv_const(c, dt, 0);
    } else {
        fill = mv_const(c, dt, 0);
    }
    /* a cropped symbolic dim must hold its crops (the interpreter's error) */
    for (int d = 0; d < r; d++)
        if (sp.lend[d].sym && sp.cut[d] > 0) {
            kir_stmt *chk = kir_if(k, &k->body, kir_op2(k, KIR_LT, IR_BOOL, pad_kept(k, &sp, d), lw_i64c(k, 0)));
            char msg[300];
            snprintf(msg, sizeof msg, "node '%.200s' (Pad): negative pads crop %lld from dim %d, which is shorter",
                     n->name, (long long)sp.cut[d], d);
            if (!chk || !kir_fail(k, &chk->body, msg))
                return -1;
        }
    /* a non-constant mode repeats data: a padded symbolic dim must not be
     * empty at run time (the interpreter's error); the rows are then not
     * copied at all (nothing to read) */
    kir_expr *full = NULL;
    for (int d = 0; d < r && sp.mode != PAD_CONSTANT; d++)
        if (sp.lend[d].sym && (sp.lo[d] > 0 || sp.hi[d] > 0)) {
            kir_expr *ne = kir_op2(k, KIR_LT, IR_BOOL, lw_i64c(k, 0), pad_kept(k, &sp, d));
            full = full ? kir_op2(k, KIR_AND, IR_BOOL, full, ne) : ne;
            kir_stmt *chk = kir_if(k, &k->body, kir_op2(k, KIR_EQ, IR_BOOL, pad_kept(k, &sp, d), lw_i64c(k, 0)));
            char msg[300];
            snprintf(msg, sizeof msg, "node '%.200s' (Pad): cannot pad an empty dim %d in this mode", n->name, d);
            if (!chk || !kir_fail(k, &chk->body, msg))
                return -1;
        }
    ir_type outer = *to;
    outer.rank = r - 1;
    kir_expr *oi[IR_MAX_RANK], *ii[IR_MAX_RANK];
    kir_block *b = mv_nest(c, &k->body, &outer, true, false, oi);
    if (!b)
        return -1;
    kir_expr *inside = NULL;
    for (int d = 0; d < r - 1; d++) {
        kir_expr *i = kir_op2(k, KIR_SUB, IR_I64, oi[d], lw_i64c(k, sp.lo[d]));
        if (sp.mode == PAD_CONSTANT) {
            if (sp.lo[d] > 0 || sp.hi[d] > 0) {
                kir_expr *len = sp.lend[d].sym ? pad_kept(k, &sp, d) : lw_i64c(k, sp.len[d]);
                kir_expr *in = kir_op2(k, KIR_AND, IR_BOOL, kir_op2(k, KIR_LE, IR_BOOL, lw_i64c(k, 0), i),
                                       kir_op2(k, KIR_LT, IR_BOOL, i, len));
                inside = inside ? kir_op2(k, KIR_AND, IR_BOOL, inside, in) : in;
            }
        } else if (sp.lo[d] > 0 || sp.hi[d] > 0) {
            i = sp.lend[d].sym ? pad_map_sym(k, sp.mode, i, pad_kept(k, &sp, d)) : pad_map(k, sp.mode, i, sp.len[d]);
        }
        ii[d] = kir_iadd(k, i, lw_i64c(k, sp.crop[d]));
    }
    int64_t lo = sp.lo[r - 1], len = sp.len[r - 1];
    bool symrow = sp.lend[r - 1].sym > 0;
    kir_expr *L = lw_dim_of(k, to->dims[r - 1]);
    int w = mv_width(c, dt);
    kir_block *rows = b;
    if (inside) {
        kir_stmt *s = kir_if(k, b, inside);
        if (!s)
            return -1;
        rows = &s->body;
        int v = kir_new_var(k);
        kir_stmt *l = kir_for(k, &s->orelse, v, lw_i64c(k, 0), L, KIR_VECTOR, w);
        oi[r - 1] = kir_var(k, v);
        if (!l || !kir_store(k, &l->body, ob, oi, fill))
            return -1;
    }
    /* before, kept, after (a symbolic row: its end the run's) */
    kir_expr *end = symrow ? lw_iaddc(k, pad_kept(k, &sp, r - 1), lo) : lw_i64c(k, lo + len);
    kir_expr *bounds[4] = {lw_i64c(k, 0), lw_i64c(k, lo), end, L};
    bool empty[3] = {lo <= 0, !symrow && len <= 0, symrow ? sp.hi[r - 1] <= 0 : to->dims[r - 1].v <= lo + len};
    for (int part = 0; part < 3; part++) {
        if (empty[part])
            continue;
        int v = kir_new_var(k);
        /* the fill runs of constant mode are vector stores too */
        bool vec = part == 1 || sp.mode == PAD_CONSTANT;
        kir_expr *hi = full ? kir_op3(k, KIR_SELECT, IR_I64, full, bounds[part + 1], bounds[part]) : bounds[part + 1];
        kir_stmt *l = kir_for(k, rows, v, bounds[part], hi, vec ? KIR_VECTOR : KIR_SERIAL, vec ? w : 0);
        if (!l)
            return -1;
        oi[r - 1] = kir_var(k, v);
        kir_expr *i = kir_op2(k, KIR_SUB, IR_I64, oi[r - 1], lw_i64c(k, lo));
        kir_expr *val;
        if (part != 1 && sp.mode == PAD_CONSTANT) {
            val = fill;
        } else {
            if (part != 1)
                i = symrow ? pad_map_sym(k, sp.mode, i, pad_kept(k, &sp, r - 1)) : pad_map(k, sp.mode, i, len);
            ii[r - 1] = kir_iadd(k, i, lw_i64c(k, sp.crop[r - 1]));
            val = kir_load(k, xb, ii);
        }
        if (!kir_store(k, &l->body, ob, oi, val))
            return -1;
    }
    return 0;
}

/* ---- DepthToSpace, SpaceToDepth ------------------------------------------------------------ */

/* DepthToSpace: out[n, c, h, w] = in[n, chan, h/b, w/b] with chan
 * (h%b * b + w%b) * C' + c (DCR) or c * b*b + h%b * b + w%b (CRD).
 * SpaceToDepth: out[n, oc, h, w] = in[n, oc % C, h*b + bh, w*b + bw]
 * with oc / C = bh * b + bw. */
static int lower_depth_space(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *ti = &n->in[0]->type, *to = &n->out[0]->type;
    int64_t b = ir_attr_int(n, "blocksize", 1);
    kir_expr *oi[4], *ii[4];
    kir_block *body = mv_nest(c, &k->body, to, true, false, oi);
    if (!body)
        return -1;
    ii[0] = oi[0];
    if (n->op == IR_OP_DEPTH_TO_SPACE) {
        int64_t C = to->dims[1].v;
        kir_expr *bh = irem(k, oi[2], b), *bw = irem(k, oi[3], b);
        bool crd = !strcmp(ir_attr_string(n, "mode", "DCR"), "CRD");
        kir_expr *blk = kir_iadd(k, kir_imul(k, bh, lw_i64c(k, b)), bw);
        ii[1] = crd ? kir_iadd(k, kir_imul(k, oi[1], lw_i64c(k, b * b)), blk)
                    : kir_iadd(k, kir_imul(k, blk, lw_i64c(k, C)), oi[1]);
        ii[2] = lw_idivc(k, oi[2], b);
        ii[3] = lw_idivc(k, oi[3], b);
    } else {
        int64_t C = ti->dims[1].v;
        kir_expr *q = lw_idivc(k, oi[1], C);
        ii[1] = irem(k, oi[1], C);
        ii[2] = kir_iadd(k, kir_imul(k, oi[2], lw_i64c(k, b)), lw_idivc(k, q, b));
        ii[3] = kir_iadd(k, kir_imul(k, oi[3], lw_i64c(k, b)), irem(k, q, b));
    }
    return kir_store(k, body, c->out, oi, kir_load(k, c->buf[0], ii)) ? 0 : -1;
}

/* ---- Trilu, EyeLike, ConstantOfShape, Range, Shape, Size ---------------------------------------- */

/* Trilu keeps (i, j) when j - i >= k (upper) or j - i <= k (lower). */
static int lower_trilu(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *to = &n->out[0]->type;
    int r = to->rank;
    bool upper = ir_attr_int(n, "upper", 1) != 0;
    kir_expr *oi[IR_MAX_RANK];
    kir_block *b = mv_nest(c, &k->body, to, true, true, oi);
    if (!b)
        return -1;
    kir_expr *kk = lw_i64c(k, 0);
    if (has_in(n, 1)) {
        kir_expr *z[IR_MAX_RANK];
        for (int d = 0; d < n->in[1]->type.rank; d++)
            z[d] = lw_i64c(k, 0);
        kk = kir_load(k, c->buf[1], z);
        if (kk && kk->dtype != IR_I64)
            kk = kir_op1(k, KIR_CAST, IR_I64, kk);
    }
    kir_expr *diff = kir_op2(k, KIR_SUB, IR_I64, oi[r - 1], oi[r - 2]);
    kir_expr *keep = upper ? kir_op2(k, KIR_LE, IR_BOOL, kk, diff) : kir_op2(k, KIR_LE, IR_BOOL, diff, kk);
    kir_expr *v = kir_op3(k, KIR_SELECT, to->dtype, keep, kir_load(k, c->buf[0], oi), mv_const(c, to->dtype, 0));
    return kir_store(k, b, c->out, oi, v) ? 0 : -1;
}

/* EyeLike: 1 where j - i == k. */
static int lower_eyelike(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_type *to = &c->n->out[0]->type;
    kir_expr *oi[2];
    kir_block *b = mv_nest(c, &k->body, to, true, true, oi);
    if (!b)
        return -1;
    kir_expr *diff = kir_op2(k, KIR_SUB, IR_I64, oi[1], oi[0]);
    kir_expr *on = kir_op2(k, KIR_EQ, IR_BOOL, diff, lw_i64c(k, ir_attr_int(c->n, "k", 0)));
    kir_expr *v = kir_op3(k, KIR_SELECT, to->dtype, on, mv_const(c, to->dtype, 1), mv_const(c, to->dtype, 0));
    return kir_store(k, b, c->out, oi, v) ? 0 : -1;
}

/* ConstantOfShape: the `value` attribute (default f32 0) everywhere. */
static int lower_constant_of_shape(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_type *to = &c->n->out[0]->type;
    const ir_attr *a = ir_node_attr(c->n, "value");
    kir_expr *v;
    if (a && a->kind == IR_ATTR_TENSOR && a->tensor && a->tensor->numel == 1) {
        if (a->tensor->dtype != to->dtype)
            return -1;
        v = ir_dtype_is_float(to->dtype) ? kir_const_f(k, to->dtype, ir_tensor_getf(a->tensor, 0))
                                         : kir_const_i(k, to->dtype, ir_tensor_geti(a->tensor, 0));
    } else {
        v = mv_const(c, to->dtype, 0);
    }
    kir_expr *oi[IR_MAX_RANK];
    kir_block *b = mv_nest(c, &k->body, to, true, true, oi);
    return b && kir_store(k, b, c->out, oi, v) ? shape_operand_check(c, 0, SHAPE_OF) : -1;
}

/* The finished kernel fails the run unless the range's count,
 * max(ceil((limit - start) / delta), 0) computed as the reference does
 * (range_count, in the compute dtype; integers in i64), is the output's
 * length: a length the run's values decide may come from a declared
 * output (ir/verify.c, infer_backward). A delta of 0 fails too. */
static int range_check(lctx *c, kir_expr *const *z)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    ir_dtype dt = n->in[0]->type.dtype, ct = lw_compute_dtype(dt);
    kir_block *cb = lw_check_block(k);
    kir_expr *s = lw_load_in(c, 0, z), *l = lw_load_in(c, 1, z), *e = lw_load_in(c, 2, z);
    if (!ir_dtype_is_float(dt)) {
        s = kir_op1(k, KIR_CAST, IR_I64, s);
        l = kir_op1(k, KIR_CAST, IR_I64, l);
        e = kir_op1(k, KIR_CAST, IR_I64, e);
        ct = IR_I64;
    }
    e = kir_let(k, cb, e);
    kir_expr *zero = ct == IR_I64 ? lw_i64c(k, 0) : kir_const_f(k, ct, 0);
    kir_expr *bad0 = kir_op2(k, KIR_EQ, IR_BOOL, e, zero);
    kir_expr *count;
    if (ct == IR_I64) {
        kir_expr *diff = kir_let(k, cb, kir_op2(k, KIR_SUB, IR_I64, l, s));
        kir_expr *es = kir_let(k, cb, kir_op3(k, KIR_SELECT, IR_I64, bad0, lw_i64c(k, 1), e));
        kir_expr *q = kir_op2(k, KIR_DIV, IR_I64, diff, es);
        kir_expr *up = kir_op2(k, KIR_AND, IR_BOOL,
                               kir_op2(k, KIR_NE, IR_BOOL, kir_op2(k, KIR_REM, IR_I64, diff, es), zero),
                               kir_op2(k, KIR_EQ, IR_BOOL, kir_op2(k, KIR_LT, IR_BOOL, zero, diff),
                                       kir_op2(k, KIR_LT, IR_BOOL, zero, es)));
        count = kir_op2(k, KIR_ADD, IR_I64, q, kir_op3(k, KIR_SELECT, IR_I64, up, lw_i64c(k, 1), zero));
    } else {
        /* NaN or too large: the comparison below fails, as the reference does */
        kir_expr *q = kir_op1(k, KIR_CEIL, ct, kir_op2(k, KIR_DIV, ct, kir_op2(k, KIR_SUB, ct, l, s), e));
        q = kir_let(k, cb, kir_op1(k, KIR_CAST, IR_F64, q));
        kir_expr *len = kir_op1(k, KIR_CAST, IR_F64, lw_dim_of(k, n->out[0]->type.dims[0]));
        kir_expr *cnt = kir_op3(k, KIR_SELECT, IR_F64, kir_op2(k, KIR_LT, IR_BOOL, kir_const_f(k, IR_F64, 0), q), q,
                                kir_const_f(k, IR_F64, 0));
        bad0 = kir_op2(k, KIR_OR, IR_BOOL, bad0, kir_op1(k, KIR_NOT, IR_BOOL, kir_op2(k, KIR_EQ, IR_BOOL, cnt, len)));
        count = NULL;
    }
    kir_expr *bad = bad0;
    if (count)
        bad = kir_op2(k, KIR_OR, IR_BOOL, bad0,
                      kir_op2(k, KIR_NE, IR_BOOL, kir_op2(k, KIR_MAX, IR_I64, count, zero),
                              lw_dim_of(k, n->out[0]->type.dims[0])));
    kir_stmt *chk = kir_if(k, cb, bad);
    char msg[400];
    snprintf(msg, sizeof msg, "node '%.200s' (Range): delta is 0, or the range's length is not the output's",
             n->name);
    return chk && kir_fail(k, &chk->body, msg) ? 0 : -1;
}

/* Range: out[i] = start + i * delta, floats in f32 (f64 for f64) like
 * the reference, integers wrapping. */
static int lower_range(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *to = &n->out[0]->type;
    ir_dtype ct = lw_compute_dtype(to->dtype);
    kir_expr *oi[1], *z[IR_MAX_RANK];
    for (int d = 0; d < IR_MAX_RANK; d++)
        z[d] = lw_i64c(k, 0);
    kir_block *b = mv_nest(c, &k->body, to, true, true, oi);
    if (!b)
        return -1;
    kir_expr *start = lw_load_in(c, 0, z), *delta = lw_load_in(c, 2, z);
    kir_expr *i = kir_op1(k, KIR_CAST, ct, oi[0]);
    kir_expr *v = kir_op2(k, KIR_ADD, ct, start, kir_op2(k, KIR_MUL, ct, i, delta));
    return kir_store(k, b, c->out, oi, lw_to_out(c, v)) ? range_check(c, z) : -1;
}

/* The window ops: w[n] = a0 - a1 cos(t) + a2 cos(2t), t = 2 pi n / N, in
 * f64 like the reference; N (size, or size - 1 when symmetric) is the
 * output's static length. */
static int lower_window(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *to = &n->out[0]->type;
    double a[3], N = (double)(ir_attr_int(n, "periodic", 1) ? to->dims[0].v : to->dims[0].v - 1);
    ir_window_coeffs(n->op, a);
    kir_expr *oi[1];
    kir_block *b = mv_nest(c, &k->body, to, true, true, oi);
    if (!b)
        return -1;
    kir_expr *t = kir_op2(k, KIR_DIV, IR_F64,
                          kir_op2(k, KIR_MUL, IR_F64, kir_op1(k, KIR_CAST, IR_F64, oi[0]),
                                  kir_const_f(k, IR_F64, 6.283185307179586)),
                          kir_const_f(k, IR_F64, N));
    kir_expr *c1 = kir_op1(k, KIR_COS, IR_F64, t);
    kir_expr *c2 = kir_op1(k, KIR_COS, IR_F64, kir_op2(k, KIR_ADD, IR_F64, t, t));
    kir_expr *v = kir_op2(k, KIR_SUB, IR_F64, kir_const_f(k, IR_F64, a[0]),
                          kir_op2(k, KIR_MUL, IR_F64, kir_const_f(k, IR_F64, a[1]), c1));
    if (a[2] != 0)
        v = kir_op2(k, KIR_ADD, IR_F64, v, kir_op2(k, KIR_MUL, IR_F64, kir_const_f(k, IR_F64, a[2]), c2));
    return kir_store(k, b, c->out, oi, lw_to_out(c, v)) ? 0 : -1;
}

/* Shape and Size: the input's dims stored one by one, constants or the
 * run's symbol values (a symbolic batch's flatten reads Shape(x)[0]). */
static int lower_shape_size(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *ti = &n->in[0]->type;
    if (n->op == IR_OP_SIZE) {
        int64_t numel = 1;
        kir_expr *e = NULL;
        for (int d = 0; d < ti->rank; d++) {
            if (ti->dims[d].sym > 0)
                e = e ? kir_imul(k, e, lw_dim_of(k, ti->dims[d])) : lw_dim_of(k, ti->dims[d]);
            else
                numel *= ti->dims[d].v;
        }
        e = e ? lw_imulc(k, e, numel) : lw_i64c(k, numel);
        return kir_store(k, &k->body, c->out, NULL, e) ? 0 : -1;
    }
    int s, e;
    ir_shape_op_bounds(n, ti->rank, &s, &e);
    for (int d = s; d < e; d++) {
        kir_expr *idx[1] = {lw_i64c(k, d - s)};
        if (!kir_store(k, &k->body, c->out, idx, lw_dim_of(k, ti->dims[d])))
            return -1;
    }
    return 0;
}

/* ---- dispatch ------------------------------------------------------------------------- */

/* A Concat or Split (not IR_F_SYMBOLIC: along another axis than a
 * symbolic batch it goes per item) with a symbolic dim other than the
 * batch (a channel concat over H x W), or along a symbolic axis (a
 * detector's boxes of every scale): its nests read the dims, and a
 * Concat's piece positions, as the run's values. */
bool cg_movement_symbolic(const ir_node *n)
{
    pad_spec sp;
    if (n->op == IR_OP_PAD)   /* zeros around symbolic dims (pad_finish), or run-time pads */
        return pad_params(n, &sp) || cg_can_lower_movement2(n);
    if (n->op == IR_OP_TILE)
        return cg_can_lower_movement(n);
    if (n->op != IR_OP_CONCAT && n->op != IR_OP_SPLIT)
        return false;
    const ir_type *whole = n->op == IR_OP_CONCAT ? &n->out[0]->type : &n->in[0]->type;
    int axis;
    if (!mv_axis(ir_attr_int(n, "axis", 0), whole->rank, &axis))
        return false;
    for (int d = 0; d < whole->rank; d++)
        if (whole->dims[d].sym > 0 && (d > 0 || axis == 0))
            return cg_can_lower_movement(n);
    return false;
}

bool cg_can_lower_movement(const ir_node *n)
{
    const ir_type *x = n->nin > 0 && n->in[0] ? &n->in[0]->type : NULL;
    const ir_type *o = &n->out[0]->type;
    switch (n->op) {
    case IR_OP_RESHAPE: case IR_OP_FLATTEN: case IR_OP_SQUEEZE: case IR_OP_UNSQUEEZE:
    case IR_OP_IDENTITY:
        return n->nout == 1;
    case IR_OP_DROPOUT:
        return n->nout == 1 || (n->nout == 2 && n->out[1]->type.dtype == IR_BOOL);
    case IR_OP_TRANSPOSE: case IR_OP_CONCAT_NCHWC:
        return true;
    case IR_OP_CONCAT: case IR_OP_SPLIT: {
        const ir_type *whole = n->op == IR_OP_CONCAT ? o : x;
        int axis, np = n->op == IR_OP_CONCAT ? n->nin : n->nout;
        if (!mv_axis(ir_attr_int(n, "axis", 0), whole->rank, &axis))
            return false;
        /* the pieces may have symbolic lengths (then the later pieces'
         * positions are the run's sums; a Split's chunks of a symbolic
         * dim are checked to add up to it: codegen/program.c) */
        for (int i = 0; i < np; i++) {
            const ir_value *v = n->op == IR_OP_CONCAT ? n->in[i] : n->out[i];
            if (!v || v->type.rank != whole->rank || v->type.dims[axis].sym < 0)
                return false;
        }
        return true;
    }
    case IR_OP_SLICE: {
        int64_t f[IR_MAX_RANK], s[IR_MAX_RANK];
        bool fe[IR_MAX_RANK];
        return slice_any(n, f, s, fe) || cg_can_lower_movement2(n);
    }
    case IR_OP_EXPAND:
        /* symbolic dims broadcast only from a constant 1 or to the same dim */
        if (x->rank < 0 || o->rank < x->rank)
            return false;
        for (int d = 0; d < o->rank; d++)
            if (o->dims[d].sym < 0)
                return false;
        for (int d = 0; d < x->rank; d++)
            if (!(ir_dim_is_const(x->dims[d]) && x->dims[d].v == 1) &&
                !ir_dim_eq(x->dims[d], o->dims[o->rank - x->rank + d]))
                return false;
        return true;
    case IR_OP_TILE:
        /* symbolic dims: the run's values (shape inference made each
         * output dim the input's times its repeat count; the kernel checks
         * a computed repeats against them) */
        if (x->rank < 0 || o->rank != x->rank)
            return false;
        for (int d = 0; d < x->rank; d++) {
            if (x->dims[d].sym < 0 || o->dims[d].sym < 0)
                return false;
            if (ir_dim_is_const(x->dims[d]) && ir_dim_is_const(o->dims[d]) &&
                (x->dims[d].v ? o->dims[d].v % x->dims[d].v != 0 : o->dims[d].v != 0))
                return false;
        }
        return true;
    case IR_OP_PAD: case IR_OP_CENTER_CROP_PAD: {
        pad_spec sp;
        return pad_params(n, &sp) || (n->op == IR_OP_PAD && cg_can_lower_movement2(n));
    }
    case IR_OP_DEPTH_TO_SPACE: case IR_OP_SPACE_TO_DEPTH: {
        int64_t b = ir_attr_int(n, "blocksize", 0);
        if (!ir_type_is_static(x) || !ir_type_is_static(o) || x->rank != 4 || o->rank != 4 || b < 1)
            return false;
        if (n->op == IR_OP_DEPTH_TO_SPACE)
            return o->dims[1].v * b * b == x->dims[1].v && o->dims[2].v == x->dims[2].v * b &&
                   o->dims[3].v == x->dims[3].v * b;
        return x->dims[1].v * b * b == o->dims[1].v && x->dims[2].v == o->dims[2].v * b &&
               x->dims[3].v == o->dims[3].v * b;
    }
    case IR_OP_TRILU:
        return x->rank >= 2 && (!has_in(n, 1) || (n->in[1]->type.rank >= 0 && n->in[1]->type.rank <= 1 &&
                                                  ir_dtype_is_int(n->in[1]->type.dtype)));
    case IR_OP_EYE_LIKE:
        return o->rank == 2;
    case IR_OP_CONSTANT_OF_SHAPE:
        for (int d = 0; d < o->rank; d++)
            if (o->dims[d].sym < 0)
                return false;
        return o->rank >= 0;
    case IR_OP_RANGE: {
        ir_dtype t = o->dtype;
        return (ir_dtype_is_float(t) || ir_dtype_is_int(t)) && n->in[0]->type.dtype == t &&
               n->in[2]->type.dtype == t && n->in[0]->type.rank >= 0 && n->in[2]->type.rank >= 0 &&
               o->rank == 1;
    }
    case IR_OP_HANN_WINDOW: case IR_OP_HAMMING_WINDOW: case IR_OP_BLACKMAN_WINDOW:
        return o->rank == 1 && ir_dim_is_const(o->dims[0]) && ir_dtype_is_float(o->dtype);
    case IR_OP_SHAPE: case IR_OP_SIZE: {
        if (x->rank < 0 || o->dtype != IR_I64)
            return false;
        for (int d = 0; d < x->rank; d++)
            if (x->dims[d].sym < 0)
                return false;
        return true;
    }
    default:
        return cg_can_lower_movement2(n);
    }
}

int lower_movement(lctx *c)
{
    switch (c->n->op) {
    case IR_OP_TRANSPOSE: return lower_transpose(c);
    case IR_OP_DROPOUT: return lower_dropout(c);
    case IR_OP_CONCAT: case IR_OP_SPLIT: return lower_concat_split(c);
    case IR_OP_CONCAT_NCHWC: return lower_concat_nchwc(c);
    case IR_OP_SLICE: {
        int64_t f[IR_MAX_RANK], s[IR_MAX_RANK];
        bool fe[IR_MAX_RANK];
        return slice_any(c->n, f, s, fe) ? lower_slice(c) : lower_movement2(c);
    }
    case IR_OP_EXPAND: return lower_expand(c);
    case IR_OP_TILE: return lower_tile_op(c);
    case IR_OP_PAD: case IR_OP_CENTER_CROP_PAD: {
        pad_spec sp;
        return pad_params(c->n, &sp) || c->n->op != IR_OP_PAD ? lower_pad(c) : lower_movement2(c);
    }
    case IR_OP_DEPTH_TO_SPACE: case IR_OP_SPACE_TO_DEPTH: return lower_depth_space(c);
    case IR_OP_TRILU: return lower_trilu(c);
    case IR_OP_EYE_LIKE: return lower_eyelike(c);
    case IR_OP_CONSTANT_OF_SHAPE: return lower_constant_of_shape(c);
    case IR_OP_RANGE: return lower_range(c);
    case IR_OP_HANN_WINDOW: case IR_OP_HAMMING_WINDOW: case IR_OP_BLACKMAN_WINDOW: return lower_window(c);
    case IR_OP_SHAPE: case IR_OP_SIZE: return lower_shape_size(c);
    case IR_OP_RESHAPE: case IR_OP_FLATTEN: case IR_OP_SQUEEZE: case IR_OP_UNSQUEEZE:
    case IR_OP_IDENTITY:
        return lower_copy(c);
    default:
        return lower_movement2(c);
    }
}
