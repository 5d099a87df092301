/* conv.c - convolution and pooling: Conv, ConvInteger,
 * ConvTranspose, MaxPool (with its Indices output), AveragePool, LpPool,
 * the global pools, and MatMulInteger, for any number of spatial dims
 * and static shapes.
 *
 * The window geometry (output sizes, effective pads) comes from the
 * reference's own nn_window_* functions, so both paths agree on every
 * auto_pad / ceil_mode corner. Per output position, the taps of a window
 * that fall inside the input are a range [lo, hi) computed with index
 * arithmetic, so no kernel branches on padding. f32 Conv runs as an
 * implicit GEMM on the contraction schedule's register tile (tile.h,
 * lower_conv_tiled), for CUDA on the GPU tile (gpu_tile.h, lower_conv_gpu); depthwise-like grouped f32 Conv keeps a vector loop
 * over output positions (lower_conv_fast); MatMulInteger and group-1
 * ConvInteger run the INT8 kernels of qgemm.c; everything else is one
 * accumulator per output element, the parallel loop over (batch, channel)
 * planes.
 */
#include "codegen/lower/gpu_tile.h"
#include "codegen/lower/tile.h"
#include "codegen/lower/conv_direct.h"
#include "codegen/lower/pool_blocked.h"
#include "codegen/lower/qgemm.h"
#include "ir/ops.h"
#include "ir/ref/nn.h"

#include <math.h>
#include <string.h>

/* ---- geometry ---------------------------------------------------------- */

typedef struct {
    int n;                                 /* spatial rank */
    int64_t batch, cin, cout, group, cg, mg;   /* cg/mg: channels per group */
    int64_t in[IR_MAX_RANK], out[IR_MAX_RANK], k[IR_MAX_RANK];
    int64_t s[IR_MAX_RANK], d[IR_MAX_RANK], pb[IR_MAX_RANK], pe[IR_MAX_RANK];
    /* Symbolic (cg_conv_symbolic): the batch or a spatial dim is known at
     * run time only; batch, in and out then hold -1 there, and bd, ind
     * and outd every one of them as dims (filled for static ones too). */
    bool sym;
    ir_dim bd, ind[IR_MAX_RANK], outd[IR_MAX_RANK];
    /* SAME padding at a stride > 1 over a symbolic dim: the pads depend on
     * the run's size (same: CG_PAD_SAME_UPPER/LOWER), pb and pe then
     * hold the largest values they take (for the choice of masks), and
     * g_pb/g_pe compute them at run time. */
    int same[IR_MAX_RANK];
    int64_t dk[IR_MAX_RANK];           /* (k-1)*d+1 where same */
} geom;

/* The extents of g as index expressions: the run's values where symbolic. */
static kir_expr *g_in(kir_kernel *k, const geom *g, int j) { return lw_dim_of(k, g->ind[j]); }
static kir_expr *g_out(kir_kernel *k, const geom *g, int j) { return lw_dim_of(k, g->outd[j]); }

/* The begin (end: the end) pad of spatial dim j as an index expression. */
static kir_expr *g_pad(kir_kernel *k, const geom *g, int j, bool end)
{
    if (!g->same[j])
        return lw_i64c(k, end ? g->pe[j] : g->pb[j]);
    return cg_same_pad(k, g->ind[j], g->outd[j], g->s[j], g->dk[j], g->same[j], end);
}
static kir_expr *g_pb(kir_kernel *k, const geom *g, int j) { return g_pad(k, g, j, false); }
static kir_expr *g_pe(kir_kernel *k, const geom *g, int j) { return g_pad(k, g, j, true); }

/* o*s - pb: the first input position of output position o's window in
 * dim j; g_tap: kk*d - pb, tap kk's offset from it (cg_less_pad). */
static kir_expr *g_shift(kir_kernel *k, const geom *g, int j, kir_expr *v)
{
    return cg_less_pad(k, v, g->same[j], g->ind[j], g->outd[j], g->s[j], g->dk[j], g->pb[j]);
}
static kir_expr *g_start(kir_kernel *k, const geom *g, int j, kir_expr *o)
{
    return g_shift(k, g, j, lw_imulc(k, o, g->s[j]));
}
static kir_expr *g_tap(kir_kernel *k, const geom *g, int j, kir_expr *kk)
{
    return g_shift(k, g, j, lw_imulc(k, kk, g->d[j]));
}

static bool node_static(const ir_node *n)
{
    for (int i = 0; i < n->nin; i++)
        if (n->in[i] && !ir_type_is_static(&n->in[i]->type))
            return false;
    for (int i = 0; i < n->nout; i++)
        if (!ir_type_is_static(&n->out[i]->type))
            return false;
    return true;
}

static bool is_pool(int op)
{
    return op == IR_OP_MAX_POOL || op == IR_OP_AVERAGE_POOL || op == IR_OP_LP_POOL;
}

static int64_t numel_of(const ir_type *t)
{
    int64_t p = 1;
    for (int i = 0; i < t->rank; i++)
        p *= t->dims[i].v;
    return p;
}

/* A window op with symbolic dims that the lowerings below take as they
 * are: static channels and weights, the batch the same in x and y, one or
 * two spatial dims; pads that depend on the input's size are SAME's at a
 * stride > 1 (computed at run time: geom.same), and an AveragePool
 * counting the padding must not use ceil_mode (its effective end pad
 * would). */
static bool window_sym_ok(const ir_node *n, const ir_type *x, const ir_type *y, const ir_type *w,
                          const nn_window *win)
{
    /* rank 5 only for a pool over layout.c's blocks: [N, C/cb, H, W, cb]
     * with a window of one lane (pool_blocked.c) */
    bool blocked = is_pool(n->op) && x->rank == 5 && !x->dims[4].sym && ir_dim_eq(x->dims[4], y->dims[4]) &&
                   win->kernel[2] == 1 && win->stride[2] == 1 && win->dilation[2] == 1;
    if ((x->rank > 4 && !blocked) || x->dims[1].sym || y->dims[1].sym || (w && !ir_type_is_static(w)))
        return false;
    for (int i = 0; i < x->rank; i++)
        if (x->dims[i].sym < 0 || y->dims[i].sym < 0)
            return false;
    /* counting pads with ceil_mode: the last window's divisor stops at the
     * end pad, which the plain lowering reads from the run's size
     * (tap_range over [-pb, in + pe)); pool_blocked.c does not */
    return !(n->op == IR_OP_AVERAGE_POOL && ir_attr_int(n, "count_include_pad", 0) && win->ceil_mode &&
             win->auto_pad == NN_PAD_NOTSET && blocked);
}

/* Dim i of g under SAME padding at a stride > 1 over a symbolic input:
 * the pads follow from the run's size (in = q*s - m, m in [0, s): the
 * total is max(0, dk - s + m)); pb and pe get the largest values. */
static bool same_dyn(geom *g, const nn_window *win, int i)
{
    int64_t dk, s = win->stride[i];
    if (!ir_mul_ok(win->kernel[i] - 1, win->dilation[i], &dk) || !ir_add_ok(dk, 1, &dk) || dk > (INT64_C(1) << 31) ||
        s > (INT64_C(1) << 31))
        return false;
    int64_t most = dk - 1;   /* m = s - 1 */
    g->same[i] = win->auto_pad == NN_PAD_SAME_UPPER ? CG_PAD_SAME_UPPER : CG_PAD_SAME_LOWER;
    g->dk[i] = dk;
    g->pb[i] = g->same[i] == CG_PAD_SAME_UPPER ? most / 2 : most - most / 2;
    g->pe[i] = most - g->pb[i];
    return true;
}

/* The geometry of Conv, ConvInteger and the windowed pools, checked
 * against the inferred output type; false when anything disagrees. */
static bool window_geom(const ir_node *n, geom *g)
{
    const ir_type *x = &n->in[0]->type, *y = &n->out[0]->type;
    bool pool = is_pool(n->op);
    const ir_type *w = pool ? NULL : &n->in[1]->type;
    memset(g, 0, sizeof *g);
    if (x->rank < 3 || y->rank != x->rank || (w && w->rank != x->rank))
        return false;
    g->n = x->rank - 2;
    ir_dim wk[IR_MAX_RANK];
    for (int i = 0; w && i < g->n; i++)
        wk[i] = w->dims[2 + i];
    icc_diag d;
    nn_window win;
    if (nn_window_parse(n, &d, g->n, pool ? NULL : wk, &win) < 0)
        return false;
    g->sym = !ir_type_is_static(x) || !ir_type_is_static(y);
    if (g->sym && !window_sym_ok(n, x, y, w, &win))
        return false;
    g->bd = x->dims[0];
    g->batch = x->dims[0].sym ? -1 : x->dims[0].v;
    g->cin = x->dims[1].v;
    g->cout = pool ? g->cin : w->dims[0].v;
    g->group = pool ? 1 : ir_attr_int(n, "group", 1);
    if (g->group < 1 || g->cin % g->group || g->cout % g->group)
        return false;
    g->cg = g->cin / g->group;
    g->mg = g->cout / g->group;
    if ((w && w->dims[1].v != g->cg) || !ir_dim_eq(y->dims[0], x->dims[0]) || y->dims[1].v != g->cout)
        return false;
    for (int i = 0; i < g->n; i++) {
        int64_t o;
        g->ind[i] = x->dims[2 + i];
        g->outd[i] = y->dims[2 + i];
        if (g->ind[i].sym || g->outd[i].sym) {
            /* the pads do not depend on the input's size here but for
             * SAME at a stride > 1 (same_dyn): any size gives them; the
             * output's size is the one shape inference derived */
            bool same = win.auto_pad == NN_PAD_SAME_UPPER || win.auto_pad == NN_PAD_SAME_LOWER;
            if (win.kernel[i] < 1)
                return false;
            if (same && win.stride[i] > 1) {
                if (!same_dyn(g, &win, i))
                    return false;
            } else if (nn_window_dim(n, &d, &win, i, INT64_C(1) << 20, &o, &g->pb[i], &g->pe[i]) < 0) {
                return false;
            }
            g->in[i] = g->ind[i].sym ? -1 : g->ind[i].v;
            g->out[i] = g->outd[i].sym ? -1 : g->outd[i].v;
            g->k[i] = win.kernel[i];
            g->s[i] = win.stride[i];
            g->d[i] = win.dilation[i];
            continue;
        }
        if (nn_window_dim(n, &d, &win, i, x->dims[2 + i].v, &o, &g->pb[i], &g->pe[i]) < 0 ||
            o != y->dims[2 + i].v || win.kernel[i] < 1)
            return false;
        g->in[i] = x->dims[2 + i].v;
        g->out[i] = o;
        g->k[i] = win.kernel[i];
        g->s[i] = win.stride[i];
        g->d[i] = win.dilation[i];
    }
    return true;
}

kir_expr *cg_same_pad(kir_kernel *k, ir_dim in, ir_dim out, int64_t s, int64_t dk, int same, bool end)
{
    kir_expr *over = kir_op2(k, KIR_SUB, IR_I64, lw_iaddc(k, lw_imulc(k, lw_dim_of(k, out), s), dk - s),
                             lw_dim_of(k, in));
    kir_expr *total = lw_imax(k, lw_i64c(k, 0), over);
    /* the odd one goes to the end with UPPER: begin total/2, end the rest */
    bool half_down = (same == CG_PAD_SAME_UPPER) != end;
    return lw_idivc(k, half_down ? total : lw_iaddc(k, total, 1), 2);
}

kir_expr *cg_less_pad(kir_kernel *k, kir_expr *v, int same, ir_dim in, ir_dim out, int64_t s, int64_t dk, int64_t pb)
{
    if (same == CG_PAD_FIXED)
        return lw_iaddc(k, v, -pb);
    return kir_iadd(k, v, kir_op2(k, KIR_SUB, IR_I64, lw_i64c(k, 0), cg_same_pad(k, in, out, s, dk, same, false)));
}

/* Floor division by 2 of a possibly negative total padding. */
static int64_t floordiv2(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

/* ConvTranspose: W is [C, M/group, k...]; out = s*(in-1) + output_padding
 * + (k-1)*d+1 - pads unless output_shape or SAME fix it (then the total
 * padding follows, split as the reference does). */
static bool convt_geom(const ir_node *n, geom *g)
{
    const ir_type *x = &n->in[0]->type, *w = &n->in[1]->type, *y = &n->out[0]->type;
    memset(g, 0, sizeof *g);
    if (x->rank < 3 || w->rank != x->rank || y->rank != x->rank)
        return false;
    g->n = x->rank - 2;
    ir_dim wk[IR_MAX_RANK];
    for (int i = 0; i < g->n; i++)
        wk[i] = w->dims[2 + i];
    icc_diag d;
    nn_window win;
    if (nn_window_parse(n, &d, g->n, wk, &win) < 0)
        return false;
    int64_t opad[IR_MAX_RANK] = {0};
    const int64_t *v, *oshape = NULL;
    int cnt = ir_attr_ints(n, "output_padding", &v);
    if (cnt >= 0) {
        if (cnt != g->n && cnt != 2 * g->n)
            return false;
        for (int i = 0; i < g->n; i++)
            opad[i] = v[i];
    }
    cnt = ir_attr_ints(n, "output_shape", &v);
    if (cnt >= 0) {
        if (cnt != g->n && cnt != g->n + 2)
            return false;
        oshape = v + cnt - g->n;
    }
    /* symbolic: static channels and weights, the batch the same in x and
     * y, one or two spatial dims, and no output_shape (the padding then
     * does not depend on the input's size: with SAME the total is
     * output_padding + (k-1)*d + 1 - s) */
    g->sym = !ir_type_is_static(x) || !ir_type_is_static(y);
    if (g->sym && (x->rank > 4 || oshape || x->dims[1].sym || y->dims[1].sym || !ir_type_is_static(w)))
        return false;
    for (int i = 0; g->sym && i < x->rank; i++)
        if (x->dims[i].sym < 0 || y->dims[i].sym < 0)
            return false;
    g->bd = x->dims[0];
    g->batch = x->dims[0].sym ? -1 : x->dims[0].v;
    g->cin = x->dims[1].v;
    g->group = ir_attr_int(n, "group", 1);
    if (g->group < 1 || g->cin % g->group || w->dims[0].v != g->cin)
        return false;
    g->cg = g->cin / g->group;
    g->mg = w->dims[1].v;
    g->cout = g->mg * g->group;
    if (!ir_dim_eq(y->dims[0], x->dims[0]) || y->dims[1].v != g->cout)
        return false;
    bool same = win.auto_pad == NN_PAD_SAME_UPPER || win.auto_pad == NN_PAD_SAME_LOWER;
    for (int i = 0; i < g->n; i++) {
        int64_t in = x->dims[2 + i].v, k = wk[i].v, s = win.stride[i], dl = win.dilation[i];
        g->ind[i] = x->dims[2 + i];
        g->outd[i] = y->dims[2 + i];
        if (g->ind[i].sym || g->outd[i].sym) {
            if (k != win.kernel[i] || k > (INT64_C(1) << 31) || dl > (INT64_C(1) << 31) || s > (INT64_C(1) << 31) ||
                opad[i] < 0 || opad[i] > (INT64_C(1) << 31))
                return false;
            int64_t total = opad[i] + (k - 1) * dl + 1 - s;
            g->pb[i] = same ? (win.auto_pad == NN_PAD_SAME_UPPER ? floordiv2(total) : total - floordiv2(total))
                     : win.auto_pad == NN_PAD_VALID ? 0 : win.pads[i];
            g->in[i] = g->ind[i].sym ? -1 : g->ind[i].v;
            g->out[i] = g->outd[i].sym ? -1 : g->outd[i].v;
            g->k[i] = k;
            g->s[i] = s;
            g->d[i] = dl;
            continue;
        }
        if (k != win.kernel[i] || in < 1 || k > (INT64_C(1) << 31) || dl > (INT64_C(1) << 31) ||
            s > (INT64_C(1) << 31) || in > (INT64_C(1) << 31) || opad[i] < 0 || opad[i] > (INT64_C(1) << 31))
            return false;
        int64_t full = s * (in - 1) + opad[i] + (k - 1) * dl + 1, out, pb;
        if (oshape || same) {
            out = oshape ? oshape[i] : in * s;
            int64_t total = full - out;
            pb = win.auto_pad == NN_PAD_SAME_UPPER ? floordiv2(total) : total - floordiv2(total);
        } else if (win.auto_pad == NN_PAD_VALID) {
            pb = 0;
            out = full;
        } else {
            pb = win.pads[i];
            out = full - win.pads[i] - win.pads[g->n + i];
        }
        if (out != y->dims[2 + i].v)
            return false;
        g->in[i] = in;
        g->out[i] = out;
        g->k[i] = k;
        g->s[i] = s;
        g->d[i] = dl;
        g->pb[i] = pb;
    }
    return true;
}

/* ---- index arithmetic ---------------------------------------------------- */


/* max(0, ceil(a / s)) for s > 0: a negative numerator truncates to <= 0,
 * which the max clamps, so truncating division is enough. */
static kir_expr *cdiv0(kir_kernel *k, kir_expr *a, int64_t s)
{
    return lw_imax(k, lw_i64c(k, 0), lw_idivc(k, lw_iaddc(k, a, s - 1), s));
}

/* The taps kk in [0, kn) with a <= start + kk*d < b, as [*lo, *hi)
 * (*hi may be below *lo: an empty range). */
static void tap_range(kir_kernel *k, kir_expr *start, int64_t d, int64_t kn, kir_expr *a, kir_expr *b,
                      kir_expr **lo, kir_expr **hi)
{
    kir_expr *kc = lw_i64c(k, kn);
    *lo = lw_imin(k, kc, cdiv0(k, lw_isub(k, a, start), d));
    *hi = lw_imin(k, kc, cdiv0(k, lw_isub(k, b, start), d));
}

/* A VECTOR width for a loop of `extent` iterations: of lanes, lanes/2,
 * ... 4, the one with the fewest vector plus scalar-remainder steps. */
static int vec_width(lctx *c, int64_t extent)
{
    int best = 4;
    int64_t cost = INT64_MAX;
    for (int w = c->s->lanes > 4 ? c->s->lanes : 4; w >= 4; w /= 2) {
        int64_t t = extent / w + extent % w;
        if (t < cost) {
            cost = t;
            best = w;
        }
    }
    return best;
}

/* The parallel loop over the (batch, channel) planes, and each plane's
 * batch item and channel. A symbolic batch: the parallel loop runs over
 * the channels, each over the batch items. */
static kir_block *plane_loop(lctx *c, ir_dim batch, int64_t chans, kir_expr **nb, kir_expr **ch)
{
    kir_kernel *k = c->k;
    int v = kir_new_var(k);
    kir_stmt *l = lw_loop(c, &k->body, v, lw_i64c(k, batch.sym ? chans : batch.v * chans), KIR_PARALLEL);
    if (!l)
        return NULL;
    if (batch.sym) {
        int bv = kir_new_var(k);
        *ch = kir_var(k, v);
        if (!(l = lw_loop(c, &l->body, bv, kir_sym(k, batch.sym), KIR_SERIAL)))
            return NULL;
        *nb = kir_var(k, bv);
        return &l->body;
    }
    *nb = lw_idivc(k, kir_var(k, v), chans);
    *ch = lw_iremc(k, kir_var(k, v), chans);
    return &l->body;
}

/* Serial loops over the output's spatial positions, o[j] their values;
 * start[j] = o[j]*s - pb, the first input position of the window. */
static kir_block *spatial_loops(lctx *c, kir_block *b, const geom *g, kir_expr **o, kir_expr **start)
{
    kir_kernel *k = c->k;
    for (int j = 0; j < g->n; j++) {
        int v = kir_new_var(k);
        kir_stmt *l = lw_loop(c, b, v, g_out(k, g, j), KIR_SERIAL);
        if (!l)
            return NULL;
        b = &l->body;
        o[j] = kir_var(k, v);
        if (start)
            start[j] = g_start(k, g, j, o[j]);
    }
    return b;
}

static kir_expr *zero(kir_kernel *k, ir_dtype t)
{
    return ir_dtype_is_float(t) ? kir_const_f(k, t, 0) : kir_const_i(k, t, 0);
}

/* ---- pools ---------------------------------------------------------------- */

/* The p-norm pools sum their powers in f64, as the reference and
 * ReduceL2 do: squares of f32 below 1e-19 underflow (a lone -1e-30
 * pooled to 0, not 1e-30) and above 1.8e19 overflow. The accumulator
 * dtype of a pool computed in t. */
static ir_dtype pool_acc_dtype(const ir_node *n, ir_dtype t)
{
    bool lp = n->op == IR_OP_LP_POOL || n->op == IR_OP_GLOBAL_LP_POOL;
    return lp && ir_dtype_is_float(t) ? IR_F64 : t;
}

/* x's term of a p-norm sum in dtype at (p 0: x itself, as a sum's). */
static kir_expr *lp_term(kir_kernel *k, ir_dtype at, kir_expr *x, int64_t p)
{
    kir_expr *term = x->dtype != at ? kir_op1(k, KIR_CAST, at, x) : x;
    if (p == 2)
        term = kir_op2(k, KIR_MUL, at, term, term);
    else if (p >= 1)
        term = kir_op1(k, KIR_ABS, at, term);
    if (p > 2)
        term = kir_op2(k, KIR_POW, at, term, kir_const_f(k, at, (double)p));
    return term;
}

/* The p-th root of a p-norm sum v (dtype at), as dtype t. */
static kir_expr *lp_root(kir_kernel *k, ir_dtype t, ir_dtype at, kir_expr *v, int64_t p)
{
    if (p == 2)
        v = kir_op1(k, KIR_SQRT, at, v);
    else if (p > 2)
        v = kir_op2(k, KIR_POW, at, v, kir_const_f(k, at, 1.0 / (double)p));
    return at != t ? kir_op1(k, KIR_CAST, t, v) : v;
}

/* MaxPool: the first maximum of the window's inside taps (a window wholly
 * in the padding gives -inf, 0 for integers, and index -1); AveragePool
 * and LpPool: the mean or p-norm of the inside taps. */
static int lower_pool(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    geom g;
    if (!window_geom(n, &g))
        return -1;
    if (g.n == 3 && g.k[2] == 1 && g.s[2] == 1 && g.d[2] == 1 && !g.pb[2] && !g.pe[2] &&
        ir_dim_is_const(g.ind[2]) && ir_dim_eq(g.outd[2], g.ind[2]) && !g.same[0] && !g.same[1] &&
        cg_pool_blocked_ok(c)) {
        /* layout.c's pool over blocked data: the lanes are the vector */
        cg_pool2d pg = {.batch = g.batch, .cin = g.cin, .lanes = g.ind[2].v, .bd = g.bd};
        for (int i = 0; i < 2; i++)
            pg.in[i] = g.in[i], pg.out[i] = g.out[i], pg.k[i] = g.k[i], pg.s[i] = g.s[i], pg.d[i] = g.d[i],
            pg.pb[i] = g.pb[i], pg.pe[i] = g.pe[i], pg.ind[i] = g.ind[i], pg.outd[i] = g.outd[i];
        return lower_pool_blocked(c, &pg);
    }
    ir_dtype t = c->cdt;
    kir_expr *nb, *ch, *o[IR_MAX_RANK], *start[IR_MAX_RANK], *lo[IR_MAX_RANK], *hi[IR_MAX_RANK];
    kir_block *b = plane_loop(c, g.bd, g.cin, &nb, &ch);
    if (!b || !(b = spatial_loops(c, b, &g, o, start)))
        return -1;
    for (int j = 0; j < g.n; j++)
        tap_range(k, start[j], g.d[j], g.k[j], lw_i64c(k, 0), g_in(k, &g, j), &lo[j], &hi[j]);
    bool maxp = n->op == IR_OP_MAX_POOL;
    ir_dtype at = pool_acc_dtype(n, t);
    int best = kir_new_acc(k, at), bidx = -1, better = -1;
    if (maxp) {
        bidx = kir_new_acc(k, IR_I64);
        better = kir_new_acc(k, IR_BOOL);
        kir_expr *init = ir_dtype_is_float(t) ? kir_const_f(k, t, -INFINITY) : zero(k, t);
        if (!kir_acc_set(k, b, best, init) || !kir_acc_set(k, b, bidx, lw_i64c(k, -1)))
            return -1;
    } else if (!kir_acc_set(k, b, best, zero(k, at))) {
        return -1;
    }
    kir_block *in = b;
    kir_expr *xi[IR_MAX_RANK + 2] = {nb, ch}, *ip[IR_MAX_RANK];
    for (int j = 0; j < g.n; j++) {
        int v = kir_new_var(k);
        kir_stmt *l = kir_for(k, in, v, lo[j], hi[j], KIR_SERIAL, 0);
        if (!l)
            return -1;
        in = &l->body;
        ip[j] = xi[2 + j] = kir_iadd(k, start[j], lw_imulc(k, kir_var(k, v), g.d[j]));
    }
    kir_expr *x = lw_load_in(c, 0, xi);
    if (maxp) {
        /* the flat index: plane * pin + the offset, row- or column-major */
        bool colmajor = ir_attr_int(n, "storage_order", 0) == 1;
        int64_t pin = 1;
        for (int j = 0; j < g.n; j++)
            pin *= g.in[j];
        kir_expr *off = lw_i64c(k, 0), *flat;
        if (g.sym) {   /* the same with the run's sizes */
            kir_expr *sc = lw_i64c(k, 1);
            for (int jj = 0; jj < g.n; jj++) {
                int j = colmajor ? jj : g.n - 1 - jj;
                off = kir_iadd(k, off, kir_imul(k, ip[j], sc));
                sc = kir_imul(k, sc, g_in(k, &g, j));
            }
            flat = kir_iadd(k, kir_imul(k, kir_iadd(k, lw_imulc(k, nb, g.cin), ch), sc), off);
        } else {
            int64_t scale = 1;
            for (int jj = 0; jj < g.n; jj++) {
                int j = colmajor ? jj : g.n - 1 - jj;
                off = kir_iadd(k, off, lw_imulc(k, ip[j], scale));
                scale *= g.in[j];
            }
            flat = kir_iadd(k, lw_imulc(k, kir_iadd(k, lw_imulc(k, nb, g.cin), ch), pin), off);
        }
        kir_expr *first = kir_op2(k, KIR_LT, IR_BOOL, kir_acc(k, bidx), lw_i64c(k, 0));
        kir_expr *gt = kir_op2(k, KIR_LT, IR_BOOL, kir_acc(k, best), x);
        if (!kir_acc_set(k, in, better, kir_op2(k, KIR_OR, IR_BOOL, first, gt)) ||
            !kir_acc_set(k, in, best, kir_op3(k, KIR_SELECT, t, kir_acc(k, better), x, kir_acc(k, best))) ||
            !kir_acc_set(k, in, bidx, kir_op3(k, KIR_SELECT, IR_I64, kir_acc(k, better), flat, kir_acc(k, bidx))))
            return -1;
    } else {
        int64_t p = n->op == IR_OP_LP_POOL ? ir_attr_int(n, "p", 2) : 0;
        kir_expr *term = lp_term(k, at, x, p);
        if (!kir_acc_set(k, in, best, kir_op2(k, KIR_ADD, at, kir_acc(k, best), term)))
            return -1;
    }
    kir_expr *yi[IR_MAX_RANK + 2] = {nb, ch};
    for (int j = 0; j < g.n; j++)
        yi[2 + j] = o[j];
    kir_expr *v = kir_acc(k, best);
    if (n->op == IR_OP_AVERAGE_POOL) {
        bool incl = ir_attr_int(n, "count_include_pad", 0) != 0;
        kir_expr *cnt = lw_i64c(k, 1);
        for (int j = 0; j < g.n; j++) {
            kir_expr *a = lo[j], *e = hi[j];
            if (incl && g.same[j])
                tap_range(k, start[j], g.d[j], g.k[j], lw_isub(k, lw_i64c(k, 0), g_pb(k, &g, j)),
                          kir_iadd(k, g_in(k, &g, j), g_pe(k, &g, j)), &a, &e);
            else if (incl)
                tap_range(k, start[j], g.d[j], g.k[j], lw_i64c(k, -g.pb[j]), lw_iaddc(k, g_in(k, &g, j), g.pe[j]),
                          &a, &e);
            cnt = kir_imul(k, cnt, lw_imax(k, lw_i64c(k, 0), lw_isub(k, e, a)));
        }
        v = kir_op2(k, KIR_DIV, t, v, kir_op1(k, KIR_CAST, t, cnt));
    } else if (n->op == IR_OP_LP_POOL) {
        v = lp_root(k, t, at, v, ir_attr_int(n, "p", 2));
    }
    if (!lw_store_out(c, b, yi, lw_to_out(c, v)))
        return -1;
    if (maxp && n->nout > 1 && !kir_store(k, b, c->outs[1], yi, kir_acc(k, bidx)))
        return -1;
    return 0;
}

/* Global pools: one reduction per plane over its contiguous spatial
 * positions (the last index runs over all of them: the plane is
 * row-major, so the flat position addresses the same element). */
static int lower_global_pool(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *x = &n->in[0]->type;
    ir_dtype t = c->cdt;
    int r = x->rank;
    int64_t len = 1;
    kir_expr *lenx = NULL;     /* the plane's size when it is symbolic */
    for (int i = 2; i < r; i++) {
        len *= x->dims[i].v;
        if (x->dims[i].sym)
            lenx = lw_dim_of(k, x->dims[i]);
    }
    if (lenx) {
        lenx = lw_i64c(k, 1);
        for (int i = 2; i < r; i++)
            lenx = kir_imul(k, lenx, lw_dim_of(k, x->dims[i]));
    }
    kir_expr *nb, *ch;
    kir_block *b = plane_loop(c, x->dims[0], x->dims[1].v, &nb, &ch);
    if (!b)
        return -1;
    bool maxp = n->op == IR_OP_GLOBAL_MAX_POOL;
    int64_t p = n->op == IR_OP_GLOBAL_LP_POOL ? ir_attr_int(n, "p", 2) : 0;
    ir_dtype at = pool_acc_dtype(n, t);
    int acc = kir_new_acc(k, at);
    if (!kir_acc_set(k, b, acc, maxp ? kir_const_f(k, t, -INFINITY) : zero(k, at)))
        return -1;
    kir_expr *xi[IR_MAX_RANK] = {nb, ch}, *yi[IR_MAX_RANK] = {nb, ch};
    for (int i = 2; i < r; i++)
        xi[i] = yi[i] = lw_i64c(k, 0);
    kir_block *in = b;
    if (r > 2) {
        int v = kir_new_var(k);
        kir_stmt *l = lw_loop(c, b, v, lenx ? lenx : lw_i64c(k, len), KIR_SERIAL);
        if (!l)
            return -1;
        in = &l->body;
        xi[r - 1] = kir_var(k, v);
    }
    kir_expr *term = lp_term(k, at, lw_load_in(c, 0, xi), p);
    if (!kir_acc_set(k, in, acc, kir_op2(k, maxp ? KIR_MAX : KIR_ADD, at, kir_acc(k, acc), term)))
        return -1;
    kir_expr *v = kir_acc(k, acc);
    if (n->op == IR_OP_GLOBAL_AVERAGE_POOL)
        v = kir_op2(k, KIR_DIV, t, v, lenx ? kir_op1(k, KIR_CAST, t, lenx) : kir_const_f(k, t, (double)len));
    else if (p > 0)
        v = lp_root(k, t, at, v, p);
    return kir_store(k, b, c->out, yi, lw_to_out(c, v)) ? 0 : -1;
}

/* ---- convolutions: one accumulator per output element -------------------- */

/* Zero point input i of ConvInteger / MatMulInteger at per-channel index
 * ch (ignored for a single value), widened to i32; NULL when absent. */
static kir_expr *zero_point(lctx *c, int i, kir_expr *ch)
{
    const ir_node *n = c->n;
    if (n->nin <= i || !n->in[i])
        return NULL;
    const ir_type *t = &n->in[i]->type;
    kir_expr *idx[IR_MAX_RANK];
    bool single = numel_of(t) == 1;
    for (int d = 0; d < t->rank; d++)
        idx[d] = single ? lw_i64c(c->k, 0) : ch;
    return kir_op1(c->k, KIR_CAST, IR_I32, kir_load(c->k, c->buf[i], idx));
}

/* y[n,m,o] = b[m] + sum over c in m's group and inside taps kk of
 * x[n,c,o*s-pb+kk*d] * w[m,c,kk]; ConvInteger subtracts the zero points
 * and accumulates in i32 (wrapping like the reference's int64 sum stored
 * to i32). */
static int lower_conv_naive(lctx *c, const geom *g)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    bool isint = n->op == IR_OP_CONV_INTEGER;
    ir_dtype t = isint ? IR_I32 : c->cdt;
    kir_expr *nb, *m, *o[IR_MAX_RANK], *start[IR_MAX_RANK];
    kir_block *b = plane_loop(c, g->bd, g->cout, &nb, &m);
    if (!b || !(b = spatial_loops(c, b, g, o, start)))
        return -1;
    int acc = kir_new_acc(k, t);
    kir_expr *init = zero(k, t);
    if (!isint && n->nin > 2 && n->in[2])
        init = lw_load_in(c, 2, (kir_expr *[]){m});
    if (!kir_acc_set(k, b, acc, init))
        return -1;
    int cv = kir_new_var(k);
    kir_stmt *lc = lw_loop(c, b, cv, lw_i64c(k, g->cg), KIR_SERIAL);
    if (!lc)
        return -1;
    kir_block *in = &lc->body;
    kir_expr *xi[IR_MAX_RANK + 2], *wi[IR_MAX_RANK + 2];
    xi[0] = nb;
    xi[1] = kir_iadd(k, lw_imulc(k, lw_idivc(k, m, g->mg), g->cg), kir_var(k, cv));
    wi[0] = m;
    wi[1] = kir_var(k, cv);
    for (int j = 0; j < g->n; j++) {
        kir_expr *lo, *hi;
        tap_range(k, start[j], g->d[j], g->k[j], lw_i64c(k, 0), g_in(k, g, j), &lo, &hi);
        int v = kir_new_var(k);
        kir_stmt *l = kir_for(k, in, v, lo, hi, KIR_SERIAL, 0);
        if (!l)
            return -1;
        in = &l->body;
        wi[2 + j] = kir_var(k, v);
        xi[2 + j] = kir_iadd(k, start[j], lw_imulc(k, kir_var(k, v), g->d[j]));
    }
    kir_expr *xv = lw_load_in(c, 0, xi), *wv = lw_load_in(c, 1, wi), *nv;
    if (isint) {
        kir_expr *xz = zero_point(c, 2, m), *wz = zero_point(c, 3, m);
        xv = kir_op1(k, KIR_CAST, IR_I32, xv);
        wv = kir_op1(k, KIR_CAST, IR_I32, wv);
        if (xz)
            xv = kir_op2(k, KIR_SUB, IR_I32, xv, xz);
        if (wz)
            wv = kir_op2(k, KIR_SUB, IR_I32, wv, wz);
        nv = kir_op2(k, KIR_ADD, t, kir_acc(k, acc), kir_op2(k, KIR_MUL, t, xv, wv));
    } else {
        nv = kir_op3(k, KIR_FMA, t, xv, wv, kir_acc(k, acc));
    }
    if (!kir_acc_set(k, in, acc, nv))
        return -1;
    kir_expr *yi[IR_MAX_RANK + 2] = {nb, m};
    for (int j = 0; j < g->n; j++)
        yi[2 + j] = o[j];
    return kir_store(k, b, c->out, yi, lw_to_out(c, lower_epi(c, kir_acc(k, acc), yi))) ? 0 : -1;
}

/* ConvTranspose as a gather: y[n,m,o] = b[m] + sum over the input
 * channels c of m's group and taps kk with o = i*s - pb + kk*d (i inside
 * the input) of x[n,c,i] * w[c, m mod M/group, kk]. The tap range keeps i
 * in [0, in); a stride > 1 also needs s | o + pb - kk*d. */
static int lower_conv_transpose(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    geom g;
    if (!convt_geom(n, &g))
        return -1;
    ir_dtype t = c->cdt;
    kir_expr *nb, *m, *o[IR_MAX_RANK];
    kir_block *b = plane_loop(c, g.bd, g.cout, &nb, &m);
    if (!b || !(b = spatial_loops(c, b, &g, o, NULL)))
        return -1;
    int acc = kir_new_acc(k, t);
    kir_expr *init = n->nin > 2 && n->in[2] ? lw_load_in(c, 2, (kir_expr *[]){m}) : zero(k, t);
    if (!kir_acc_set(k, b, acc, init))
        return -1;
    int cv = kir_new_var(k);
    kir_stmt *lc = lw_loop(c, b, cv, lw_i64c(k, g.cg), KIR_SERIAL);
    if (!lc)
        return -1;
    kir_block *in = &lc->body;
    kir_expr *ch = kir_iadd(k, lw_imulc(k, lw_idivc(k, m, g.mg), g.cg), kir_var(k, cv));
    kir_expr *xi[IR_MAX_RANK + 2] = {nb, ch}, *wi[IR_MAX_RANK + 2] = {ch, lw_iremc(k, m, g.mg)};
    kir_expr *cond = NULL;
    for (int j = 0; j < g.n; j++) {
        /* t = o + pb - kk*d must lie in [0, (in-1)*s] */
        kir_expr *op = lw_iaddc(k, o[j], g.pb[j]);
        kir_expr *last = g.ind[j].sym ? lw_iaddc(k, lw_isub(k, op, lw_imulc(k, g_in(k, &g, j), g.s[j])), g.s[j])
                                      : lw_iaddc(k, op, -(g.in[j] - 1) * g.s[j]);
        kir_expr *lo = lw_imin(k, lw_i64c(k, g.k[j]), cdiv0(k, last, g.d[j]));
        kir_expr *hi = lw_imin(k, lw_i64c(k, g.k[j]), cdiv0(k, lw_iaddc(k, op, 1), g.d[j]));
        int v = kir_new_var(k);
        kir_stmt *l = kir_for(k, in, v, lo, hi, KIR_SERIAL, 0);
        if (!l)
            return -1;
        in = &l->body;
        wi[2 + j] = kir_var(k, v);
        kir_expr *tt = lw_isub(k, op, lw_imulc(k, kir_var(k, v), g.d[j]));
        xi[2 + j] = lw_idivc(k, tt, g.s[j]);
        if (g.s[j] > 1) {
            kir_expr *ok = kir_op2(k, KIR_EQ, IR_BOOL, lw_iremc(k, tt, g.s[j]), lw_i64c(k, 0));
            cond = cond ? kir_op2(k, KIR_AND, IR_BOOL, cond, ok) : ok;
        }
    }
    if (cond) {
        kir_stmt *s = kir_if(k, in, cond);
        if (!s)
            return -1;
        in = &s->body;
    }
    kir_expr *nv = kir_op3(k, KIR_FMA, t, lw_load_in(c, 0, xi), lw_load_in(c, 1, wi), kir_acc(k, acc));
    if (!kir_acc_set(k, in, acc, nv))
        return -1;
    kir_expr *yi[IR_MAX_RANK + 2] = {nb, m};
    for (int j = 0; j < g.n; j++)
        yi[2 + j] = o[j];
    return kir_store(k, b, c->out, yi, lw_to_out(c, lower_epi(c, kir_acc(k, acc), yi))) ? 0 : -1;
}

/* ---- f32 Conv: a VECTOR loop over output positions ---------------------- */

/* The schedule: per (batch item, block of MB output channels) the output
 * rows are set to the bias, then for each block of U input channels and
 * each kernel tap a VECTOR loop over the output positions that tap sees
 * inside the input adds sum_u w[m,c+u,tap] * x[n,c+u,...] to each of the
 * MB rows. The reduction sits outside the vector loop (so LLVM widens
 * it), the MB*U weights are loop-invariant there, each x load feeds MB
 * FMAs and each output load/store U of them.
 *
 * With stride 1 and every spatial dim but the first kept (out == in:
 * "same" padding, or none), the vector loop runs over the whole output
 * plane, flattened: a tap then reads the input at a constant offset from
 * the output position, the tap's range of valid first-dim rows bounds
 * the loop, and positions whose inner coordinates fall in the padding
 * are masked to 0 (their loads stay inside the plane: the loop is also
 * clipped to in-plane offsets, which only drops masked positions). So 7x7
 * and 14x14 planes still fill whole vectors. Otherwise (strides) the
 * vector loop runs along the last dim, the other dims looped outside.
 * Contiguous vector loops run their remainder as one masked step
 * (tail_mask): with 7..56-wide loops a scalar remainder would cost more
 * than the vector part (strided loads are left to the plain remainder,
 * which measured faster than masked interleaved loads). Long vector
 * loops are tiled so a tile's rows stay in L1 over the whole reduction.
 * The mask positions are computed in i32 (LLVM widens i32 division by a
 * constant, but scalarizes i64's). */
typedef struct {
    const geom *g;
    bool flat;                 /* the vector loop runs over the flattened output plane */
    int64_t mb;
    kir_expr *nb, *m0, *cbase; /* batch item, first output channel, group's first input channel */
    kir_expr *o[IR_MAX_RANK], *start[IR_MAX_RANK], *lo[IR_MAX_RANK], *hi[IR_MAX_RANK]; /* row form: outer dims */
    int64_t plane[IR_MAX_RANK];    /* flat form: the output plane's stride of each dim */
    int64_t vlen;              /* the vector dim's extent (-1: symbolic) */
    kir_expr *vend;            /* the same as an index expression */
    kir_expr *t0, *t1;         /* the current tile of it; NULL: whole */
    int width;
} fconv;

/* The index of output row m at vector position v. */
static void fc_out_idx(kir_kernel *k, const fconv *f, kir_expr *m, kir_expr *v, kir_expr **yi)
{
    int n = f->g->n;
    yi[0] = f->nb;
    yi[1] = m;
    for (int j = 0; j < n - 1; j++)
        yi[2 + j] = f->flat ? lw_i64c(k, 0) : f->o[j];
    yi[2 + n - 1] = v;
}

/* A tap loop over [lo, hi) of kernel dim j, or the constant 0 for a
 * 1-wide kernel dim. */
static kir_expr *tap_loop(lctx *c, kir_block **b, int64_t kn, kir_expr *lo, kir_expr *hi)
{
    kir_kernel *k = c->k;
    if (kn == 1 && !lo)
        return lw_i64c(k, 0);
    int v = kir_new_var(k);
    kir_stmt *l = kir_for(k, *b, v, lo ? lo : lw_i64c(k, 0), hi ? hi : lw_i64c(k, kn), KIR_SERIAL, 0);
    if (!l)
        return NULL;
    *b = &l->body;
    return kir_var(k, v);
}

/* The taps and vector loop adding input channels [ci0, ci0 + u) of the
 * group to the MB output rows. */
static int fconv_taps(lctx *c, const fconv *f, kir_block *b, kir_expr *ci0, int64_t u)
{
    kir_kernel *k = c->k;
    const geom *g = f->g;
    int n = g->n, L = n - 1;
    kir_expr *kk[IR_MAX_RANK], *ip[IR_MAX_RANK], *mask = NULL, *lo, *hi, *v;
    for (int j = 0; j < n; j++) {
        bool outer = !f->flat && j < L;
        if (!(kk[j] = tap_loop(c, &b, g->k[j], outer ? f->lo[j] : NULL, outer ? f->hi[j] : NULL)))
            return -1;
    }
    int var = kir_new_var(k);
    v = kir_var(k, var);
    if (f->flat) {
        /* input offset of the tap from the output position, flattened */
        kir_expr *off = lw_i64c(k, 0);
        for (int j = 0; j < n; j++)
            off = kir_iadd(k, off, lw_imulc(k, lw_iaddc(k, lw_imulc(k, kk[j], g->d[j]), -g->pb[j]), f->plane[j]));
        /* rows r with 0 <= r + kk0*d - pb < in0 */
        kir_expr *sh = lw_iaddc(k, lw_imulc(k, kk[0], g->d[0]), -g->pb[0]);
        kir_expr *rlo = lw_imax(k, lw_i64c(k, 0), lw_isub(k, lw_i64c(k, 0), sh));
        kir_expr *rhi = lw_imin(k, g_out(k, g, 0), lw_isub(k, g_in(k, g, 0), sh));
        lo = lw_imax(k, lw_imulc(k, rlo, f->plane[0]), lw_isub(k, lw_i64c(k, 0), off));
        hi = lw_imin(k, lw_imulc(k, rhi, f->plane[0]), lw_isub(k, lw_i64c(k, g->in[0] * f->plane[0]), off));
        ip[L] = kir_iadd(k, v, off);
        for (int j = 0; j < L; j++)
            ip[j] = lw_i64c(k, 0);
        for (int j = 1; j < n; j++) {
            if (g->k[j] == 1 && g->pb[j] == 0)
                continue;
            kir_expr *pos = kir_op1(k, KIR_CAST, IR_I32, v);
            kir_expr *ps = kir_const_i(k, IR_I32, f->plane[j]), *os = kir_const_i(k, IR_I32, g->out[j]);
            if (f->plane[j] > 1)
                pos = kir_op2(k, KIR_DIV, IR_I32, pos, ps);
            pos = kir_op2(k, KIR_REM, IR_I32, pos, os);
            kir_expr *q = kir_op2(k, KIR_ADD, IR_I32, pos,
                                  kir_op1(k, KIR_CAST, IR_I32, lw_iaddc(k, lw_imulc(k, kk[j], g->d[j]), -g->pb[j])));
            kir_expr *ok = kir_op2(k, KIR_AND, IR_BOOL,
                                   kir_op2(k, KIR_LE, IR_BOOL, kir_const_i(k, IR_I32, 0), q),
                                   kir_op2(k, KIR_LT, IR_BOOL, q, kir_const_i(k, IR_I32, g->in[j])));
            mask = mask ? kir_op2(k, KIR_AND, IR_BOOL, mask, ok) : ok;
        }
    } else {
        /* ox is inside when 0 <= ox*s + kx*d - pb < in */
        kir_expr *off = g_tap(k, g, L, kk[L]);
        kir_expr *ow = g_out(k, g, L);
        lo = lw_imin(k, ow, cdiv0(k, lw_isub(k, lw_i64c(k, 0), off), g->s[L]));
        hi = lw_imin(k, ow, cdiv0(k, lw_isub(k, g_in(k, g, L), off), g->s[L]));
        for (int j = 0; j < L; j++)
            ip[j] = kir_iadd(k, f->start[j], lw_imulc(k, kk[j], g->d[j]));
        ip[L] = kir_iadd(k, lw_imulc(k, v, g->s[L]), off);
    }
    if (f->t0) {
        lo = lw_imax(k, lo, f->t0);
        hi = lw_imin(k, hi, f->t1);
    }
    kir_stmt *l = kir_for(k, b, var, lo, hi, KIR_VECTOR, f->width);
    if (!l)
        return -1;
    l->tail_mask = f->flat || g->s[L] == 1;
    kir_expr *xv[16];
    for (int64_t q = 0; q < u; q++) {
        kir_expr *xi[IR_MAX_RANK + 2] = {f->nb, kir_iadd(k, f->cbase, lw_iaddc(k, ci0, q))};
        for (int j = 0; j < n; j++)
            xi[2 + j] = ip[j];
        xv[q] = lw_load_in(c, 0, xi);
        if (mask)
            xv[q] = kir_op3(k, KIR_SELECT, IR_F32, mask, xv[q], kir_const_f(k, IR_F32, 0));
    }
    for (int64_t mo = 0; mo < f->mb; mo++) {
        kir_expr *m = lw_iaddc(k, f->m0, mo), *yi[IR_MAX_RANK + 2];
        fc_out_idx(k, f, m, v, yi);
        kir_expr *sum = kir_load(k, c->out, yi);
        for (int64_t q = 0; q < u; q++) {
            kir_expr *wi[IR_MAX_RANK + 2] = {m, lw_iaddc(k, ci0, q)};
            for (int j = 0; j < n; j++)
                wi[2 + j] = kk[j];
            sum = kir_op3(k, KIR_FMA, IR_F32, lw_load_in(c, 1, wi), xv[q], sum);
        }
        if (!kir_store(k, &l->body, c->out, yi, sum))
            return -1;
    }
    return 0;
}

static bool fast_ok(const ir_node *n)
{
    for (int i = 0; i < n->nin && i < 3; i++)
        if (n->in[i] && n->in[i]->type.dtype != IR_F32)
            return false;
    return n->out[0]->type.dtype == IR_F32;
}


static int lower_conv_fast(lctx *c, const geom *g)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    fconv f = {.g = g, .flat = !g->sym};
    int L = g->n - 1;
    for (int j = 0; j < g->n; j++)
        f.flat = f.flat && g->s[j] == 1 && (j == 0 || g->out[j] == g->in[j]);
    int64_t pl = 1;
    for (int j = L; j >= 0; j--) {
        f.plane[j] = pl;
        pl *= g->out[j];
    }
    /* the masks compute positions in i32 */
    int64_t ipl = 1;
    for (int j = 0; j < g->n; j++)
        ipl *= g->in[j];
    if (pl >= (INT64_C(1) << 31) || ipl >= (INT64_C(1) << 31))
        f.flat = false;
    f.mb = g->mg % 4 == 0 ? 4 : g->mg % 2 == 0 ? 2 : 1;
    int64_t u = g->cg < c->s->conv_unroll ? g->cg : c->s->conv_unroll;
    int64_t nmb = g->cout / f.mb;
    kir_expr *mblk;
    kir_block *b = plane_loop(c, g->bd, nmb, &f.nb, &mblk);
    if (!b)
        return -1;
    f.m0 = lw_imulc(k, mblk, f.mb);
    f.cbase = lw_imulc(k, lw_idivc(k, f.m0, g->mg), g->cg);
    for (int j = 0; !f.flat && j < L; j++) {
        int v = kir_new_var(k);
        kir_stmt *l = lw_loop(c, b, v, g_out(k, g, j), KIR_SERIAL);
        if (!l)
            return -1;
        b = &l->body;
        f.o[j] = kir_var(k, v);
        f.start[j] = g_start(k, g, j, f.o[j]);
        tap_range(k, f.start[j], g->d[j], g->k[j], lw_i64c(k, 0), g_in(k, g, j), &f.lo[j], &f.hi[j]);
    }
    f.vlen = f.flat ? pl : g->out[L];
    f.vend = f.flat ? lw_i64c(k, pl) : g_out(k, g, L);
    /* a symbolic row is not tiled (its length is the run's) */
    int64_t tile = f.vlen < 0 ? f.vlen : f.vlen > 2 * c->s->conv_vtile ? c->s->conv_vtile : f.vlen;
    if (tile < f.vlen) {
        int v = kir_new_var(k);
        kir_stmt *l = lw_loop(c, b, v, lw_i64c(k, (f.vlen + tile - 1) / tile), KIR_SERIAL);
        if (!l)
            return -1;
        b = &l->body;
        f.t0 = lw_imulc(k, kir_var(k, v), tile);
        f.t1 = lw_imin(k, lw_i64c(k, f.vlen), lw_iaddc(k, f.t0, tile));
    }
    f.width = vec_width(c, tile < 0 ? INT64_C(1) << 20 : tile);
    /* the rows start as the bias */
    int v = kir_new_var(k);
    kir_stmt *li = kir_for(k, b, v, f.t0 ? f.t0 : lw_i64c(k, 0), f.t1 ? f.t1 : f.vend, KIR_VECTOR,
                           f.width);
    if (!li)
        return -1;
    for (int64_t mo = 0; mo < f.mb; mo++) {
        kir_expr *m = lw_iaddc(k, f.m0, mo), *yi[IR_MAX_RANK + 2];
        fc_out_idx(k, &f, m, kir_var(k, v), yi);
        kir_expr *init = n->nin > 2 && n->in[2] ? lw_load_in(c, 2, (kir_expr *[]){m}) : kir_const_f(k, IR_F32, 0);
        if (!kir_store(k, &li->body, c->out, yi, init))
            return -1;
    }
    int64_t full = g->cg / u, rest = g->cg % u;
    if (full > 0) {
        int cb = kir_new_var(k);
        kir_stmt *lc = lw_loop(c, b, cb, lw_i64c(k, full), KIR_SERIAL);
        if (!lc || fconv_taps(c, &f, &lc->body, lw_imulc(k, kir_var(k, cb), u), u) < 0)
            return -1;
    }
    if (rest > 0 && fconv_taps(c, &f, b, lw_i64c(k, full * u), rest) < 0)
        return -1;
    if (!c->epi_root)
        return 0;
    /* the sums are final once every channel went in: a fused group's
     * epilogue rewrites the tile in place */
    int ev = kir_new_var(k);
    kir_stmt *le = kir_for(k, b, ev, f.t0 ? f.t0 : lw_i64c(k, 0), f.t1 ? f.t1 : f.vend, KIR_VECTOR, f.width);
    if (!le)
        return -1;
    for (int64_t mo = 0; mo < f.mb; mo++) {
        kir_expr *yi[IR_MAX_RANK + 2];
        fc_out_idx(k, &f, lw_iaddc(k, f.m0, mo), kir_var(k, ev), yi);
        if (!kir_store(k, &le->body, c->out, yi, lower_epi(c, kir_load(k, c->out, yi), yi)))
            return -1;
    }
    return 0;
}

/* ---- f32 Conv as an implicit GEMM on the register tile ------------------- */

/* The row length the tile's width is chosen for when it is symbolic: one
 * vector wide, 12 rows. Detector rows past the stem are 10 to 80 wide, so
 * 4 vectors left most lanes idle (YOLO at 320x320: 33 ms with 64 lanes,
 * 25 with 32, 19 with 16). A pointwise conv's flattened plane is long. */
enum { SYM_ROW = 16 };

/* A 1x1 window at stride 1 without padding: each output position reads
 * its own input position, so the plane flattens whatever its sizes. */
static bool pointwise(const geom *g)
{
    for (int j = 0; j < g->n; j++)
        if (g->k[j] != 1 || g->s[j] != 1 || g->pb[j] || g->pe[j] || !ir_dim_eq(g->ind[j], g->outd[j]))
            return false;
    return true;
}

/* Per batch item y[m, o] = b[m] + sum over k = (c, taps) of W[m, k] *
 * X[c, o*s - pb + taps*d], run by the contraction schedule (tile.h):
 * rows are output channels (the weight a broadcast), the vector loop runs
 * along the output positions, the reduction over taps (outer) and input
 * channels (inner, blocked for cache). With stride 1 and the inner dims
 * keeping their size, the vector loop runs over the flattened output
 * plane (a tap reads at a constant offset from the position; positions
 * whose window leaves the input are masked); otherwise along the last
 * output dim, a column group being one output row: its taps in the outer
 * dims are a range that stays inside the input, taps along the last dim
 * read through a mask (stride 2..4: a strided load). A select of a load
 * and 0 is a masked load, so padding touches no memory. With taps
 * outermost the masks are invariant in the channel loop. */
typedef struct {
    const geom *g;
    bool flat;
    int64_t plane[IR_MAX_RANK];        /* flat form: the output plane's stride of each dim */
    int64_t icb;                       /* input channels per block of the reduction */
    kir_expr *nb, *m0, *c0;            /* batch item, the group's first output and input channels */
    kir_expr *ic, *kk[IR_MAX_RANK];    /* the reduction's current channel and taps */
    kir_expr *start[IR_MAX_RANK];      /* row form: window starts of the outer dims */
} ctile;


/* The outer output coordinates of column group gr (row form). */
static void ct_outer(kir_kernel *k, const geom *g, kir_expr *gr, kir_expr **o)
{
    int64_t inner = 1;
    for (int j = g->n - 2; j >= 0; j--) {
        o[j] = lw_idivc(k, gr, inner);
        if (j > 0)
            o[j] = lw_iremc(k, o[j], g->out[j]);
        inner *= g->out[j];
    }
}

static int ct_setup(lctx *c, cg_tile *t, kir_expr *bat)
{
    kir_kernel *k = c->k;
    ctile *u = t->u;
    kir_expr *grp = lw_iremc(k, bat, u->g->group);
    u->nb = lw_idivc(k, bat, u->g->group);
    u->m0 = lw_imulc(k, grp, u->g->mg);
    u->c0 = lw_imulc(k, grp, u->g->cg);
    return 0;
}

static int ct_k_open(lctx *c, cg_tile *t, kir_expr *kb, kir_expr *gr, kir_block **b)
{
    kir_kernel *k = c->k;
    ctile *u = t->u;
    const geom *g = u->g;
    int L = g->n - 1;
    kir_expr *o[IR_MAX_RANK];
    if (!u->flat)
        ct_outer(k, g, gr, o);
    for (int j = 0; j < g->n; j++) {
        kir_expr *lo = NULL, *hi = NULL;
        if (!u->flat && j < L) {
            u->start[j] = g_start(k, g, j, o[j]);
            tap_range(k, u->start[j], g->d[j], g->k[j], lw_i64c(k, 0), g_in(k, g, j), &lo, &hi);
        }
        if (!(u->kk[j] = tap_loop(c, b, g->k[j], lo, hi)))
            return -1;
    }
    int v = kir_new_var(k);
    kir_expr *c0 = lw_imulc(k, kb, u->icb);
    kir_stmt *l = kir_for(k, *b, v, c0, lw_imin(k, lw_i64c(k, g->cg), lw_iaddc(k, c0, u->icb)), KIR_SERIAL, 0);
    if (!l)
        return -1;
    u->ic = kir_var(k, v);
    *b = &l->body;
    return 0;
}

static kir_expr *ct_a(lctx *c, cg_tile *t, kir_expr *row)
{
    ctile *u = t->u;
    kir_expr *wi[IR_MAX_RANK + 2] = {kir_iadd(c->k, u->m0, row), u->ic};
    for (int j = 0; j < u->g->n; j++)
        wi[2 + j] = u->kk[j];
    return lw_load_in(c, 1, wi);
}

static kir_expr *ct_b(lctx *c, cg_tile *t, kir_expr *gr, kir_expr *jv)
{
    (void)gr;
    kir_kernel *k = c->k;
    ctile *u = t->u;
    const geom *g = u->g;
    int L = g->n - 1;
    kir_expr *xi[IR_MAX_RANK + 2] = {u->nb, kir_iadd(k, u->c0, u->ic)};
    if (u->flat && g->sym) {   /* pointwise: the output position's own input */
        for (int j = 0; j < L; j++)
            xi[2 + j] = lw_i64c(k, 0);
        xi[2 + L] = jv;
        return lw_load_in(c, 0, xi);
    }
    if (u->flat) {
        /* the tap's input is at a constant offset from the output position;
         * positions whose window leaves the input in some dim read 0 */
        kir_expr *off = lw_i64c(k, 0), *ok = NULL;
        for (int j = 0; j < g->n; j++) {
            int64_t lo = -g->pb[j], hi = g->out[j] - 1 + (g->k[j] - 1) * g->d[j] - g->pb[j];
            kir_expr *sh = lw_iaddc(k, lw_imulc(k, u->kk[j], g->d[j]), -g->pb[j]);
            off = kir_iadd(k, off, lw_imulc(k, sh, u->plane[j]));
            if (lo >= 0 && hi < g->in[j])
                continue;
            kir_expr *q = kir_op1(k, KIR_CAST, IR_I32, jv);
            if (u->plane[j] > 1)
                q = kir_op2(k, KIR_DIV, IR_I32, q, kir_const_i(k, IR_I32, u->plane[j]));
            if (j > 0)
                q = kir_op2(k, KIR_REM, IR_I32, q, kir_const_i(k, IR_I32, g->out[j]));
            q = kir_op2(k, KIR_ADD, IR_I32, q, kir_op1(k, KIR_CAST, IR_I32, sh));
            if (lo < 0) {
                kir_expr *t0 = kir_op2(k, KIR_LE, IR_BOOL, kir_const_i(k, IR_I32, 0), q);
                ok = ok ? kir_op2(k, KIR_AND, IR_BOOL, ok, t0) : t0;
            }
            if (hi >= g->in[j]) {
                kir_expr *t1 = kir_op2(k, KIR_LT, IR_BOOL, q, kir_const_i(k, IR_I32, g->in[j]));
                ok = ok ? kir_op2(k, KIR_AND, IR_BOOL, ok, t1) : t1;
            }
        }
        for (int j = 0; j < L; j++)
            xi[2 + j] = lw_i64c(k, 0);
        xi[2 + L] = kir_iadd(k, jv, off);
        kir_expr *x = lw_load_in(c, 0, xi);
        return ok ? kir_op3(k, KIR_SELECT, IR_F32, ok, x, kir_const_f(k, IR_F32, 0)) : x;
    }
    for (int j = 0; j < L; j++)
        xi[2 + j] = kir_iadd(k, u->start[j], lw_imulc(k, u->kk[j], g->d[j]));
    kir_expr *off = g_tap(k, g, L, u->kk[L]);
    kir_expr *ix = kir_iadd(k, lw_imulc(k, jv, g->s[L]), off);
    xi[2 + L] = ix;
    kir_expr *x = lw_load_in(c, 0, xi), *ok = NULL;
    /* j*s + off in [0, in) <=> ceil(-off/s) <= j < ceil((in - off)/s):
     * uniform bounds (cdiv0 clamps them at 0, which j >= 0 satisfies
     * anyway), compared in i32 (half the registers of i64) */
    kir_expr *j32 = kir_op1(k, KIR_CAST, IR_I32, jv);
    if (g->pb[L] > 0) {
        kir_expr *lo = kir_op1(k, KIR_CAST, IR_I32, cdiv0(k, lw_isub(k, lw_i64c(k, 0), off), g->s[L]));
        ok = kir_op2(k, KIR_LE, IR_BOOL, lo, j32);
    }
    /* the last window passes the input's end (with symbolic sizes: only
     * where there is end padding, since the output is the floor; with
     * SAME the last window ends at in - 1 + pe) */
    if (g->sym ? g->pe[L] > 0 : (g->out[L] - 1) * g->s[L] + (g->k[L] - 1) * g->d[L] - g->pb[L] >= g->in[L]) {
        kir_expr *hi = kir_op1(k, KIR_CAST, IR_I32, cdiv0(k, lw_isub(k, g_in(k, g, L), off), g->s[L]));
        kir_expr *lt = kir_op2(k, KIR_LT, IR_BOOL, j32, hi);
        ok = ok ? kir_op2(k, KIR_AND, IR_BOOL, ok, lt) : lt;
    }
    return ok ? kir_op3(k, KIR_SELECT, IR_F32, ok, x, kir_const_f(k, IR_F32, 0)) : x;
}

static void ct_out(lctx *c, cg_tile *t, kir_expr *row, kir_expr *gr, kir_expr *jv, kir_expr **ix)
{
    kir_kernel *k = c->k;
    ctile *u = t->u;
    const geom *g = u->g;
    int L = g->n - 1;
    ix[0] = u->nb;
    ix[1] = kir_iadd(k, u->m0, row);
    if (u->flat)
        for (int j = 0; j < L; j++)
            ix[2 + j] = lw_i64c(k, 0);
    else
        ct_outer(k, g, gr, ix + 2);
    ix[2 + L] = jv;
}

static kir_expr *ct_epi(lctx *c, cg_tile *t, kir_expr *v, kir_expr *row, kir_expr *gr, kir_expr *jv)
{
    (void)gr;
    (void)jv;
    const ir_node *n = c->n;
    kir_expr *m = kir_iadd(c->k, ((ctile *)t->u)->m0, row);
    if (n->nin > 2 && n->in[2])
        return kir_op2(c->k, KIR_ADD, IR_F32, v, lw_load_in(c, 2, (kir_expr *[]){m}));
    return v;
}

/* True when the tiled form should run conv geometry g. */
static bool tiled_ok(const ir_node *n, const geom *g)
{
    /* per group, a tile needs rows (depthwise-like groups keep the plain
     * schedule, its vector loop over positions) */
    if (n->op != IR_OP_CONV || !fast_ok(n) || (g->group > 1 && g->mg < 8) || g->mg < 1 || g->cg < 1)
        return false;
    if (g->sym && (g->bd.sym || g->n > 2))   /* the tile's parallel loop is over constant batch items */
        return false;
    /* the masks' i32 math must not wrap */
    const int64_t lim = INT64_C(1) << 30;
    for (int j = 0; j < g->n; j++)
        if (g->out[j] >= lim || g->in[j] >= lim || g->pb[j] < 0 || g->pb[j] >= lim || g->d[j] < 1 ||
            g->s[j] < 1 || g->s[j] >= lim || g->k[j] - 1 >= lim / g->d[j])
            return false;
    return true;
}

static int lower_conv_tiled(lctx *c, const geom *g)
{
    ctile u = {.g = g, .flat = !g->sym || pointwise(g)};
    int L = g->n - 1;
    int64_t taps = 1, plane = 1, iplane = 1;
    for (int j = 0; j < g->n; j++) {
        u.flat = u.flat && g->s[j] == 1 && (j == 0 || g->out[j] == g->in[j]);
        taps *= g->k[j];
        iplane *= g->in[j];
    }
    for (int j = L; j >= 0; j--) {
        u.plane[j] = plane;
        plane *= g->out[j];
    }
    /* the masks compute positions in i32 (LLVM widens i32 division by a
     * constant, but scalarizes i64's) */
    if (plane >= (INT64_C(1) << 31) || iplane >= (INT64_C(1) << 31))
        u.flat = false;
    int64_t nkb = (g->cg * taps + c->s->conv_kc - 1) / c->s->conv_kc;
    if (nkb > g->cg)
        nkb = g->cg;
    if (g->cg <= 16) /* few channels, many taps (a stem conv): one block, a constant channel loop */
        nkb = 1;
    u.icb = (g->cg + nkb - 1) / nkb;
    nkb = (g->cg + u.icb - 1) / u.icb;
    /* the tile: 4 vector registers wide at most (2 with 16 registers),
     * narrower for short rows, with as many rows as the accumulator
     * registers allow */
    int lanes = c->s->lanes >= 4 ? c->s->lanes : 4;
    int64_t n = u.flat ? plane : g->out[L], ng = u.flat ? 1 : plane / g->out[L];
    if (g->sym)   /* the run's sizes: a tile for SYM_ROW-wide rows, or for a long flattened plane */
        n = u.flat ? INT64_C(1) << 20 : SYM_ROW, ng = 0;
    kir_expr *plane_x = NULL;
    if (g->sym && u.flat) {   /* pointwise: the columns are the whole plane */
        plane_x = lw_i64c(c->k, 1);
        for (int j = 0; j < g->n; j++)
            plane_x = kir_imul(c->k, plane_x, g_out(c->k, g, j));
    }
    int maxw = lanes * (lanes >= 16 ? 4 : 2), regs = lanes >= 16 ? 24 : 12;
    int64_t width = lanes, rows = 1;
    double best = 0;
    for (int64_t w = maxw; w >= lanes; w /= 2) { /* powers of two: LLVM splits <48 x float> badly */
        int64_t r = regs / (w / lanes);
        if (r > regs / 2) /* more weight rows than an L1 set holds ways when K is a page multiple */
            r = regs / 2;
        if (r > g->mg)
            r = g->mg;
        /* lanes and rows computed (padding included); narrower tiles cost
         * more loads per FMA (measured on ResNet shapes: half width ~10%
         * slower, quarter width ~50%) */
        double pen = w == maxw ? 1 : w * 2 == maxw ? 1.1 : 1.5;
        double cost = (double)((n + w - 1) / w * w) * (double)((g->mg + r - 1) / r * r) * pen;
        if (best == 0 || cost < best) {
            best = cost;
            width = w;
            rows = r;
        }
    }
    cg_tile t = {
        .nbat = g->batch * g->group, .m = g->mg, .ng = ng, .n = n, .nkb = nkb, .rows = (int)rows, .width = (int)width,
        .u = &u, .setup = ct_setup, .k_open = ct_k_open, .a = ct_a, .b = ct_b, .out = ct_out, .epi = ct_epi,
    };
    /* a pointwise conv whose output outgrows half of L2 stores it row by
     * row (tile.h rows_outer): panel after panel across all of a row
     * block's rows, every store missed in cache (YOLO's 64 -> 255 head at
     * 40x40: 0.75 -> 0.37 ms in the model) */
    int64_t l2 = c->s->target && c->s->target->l2_bytes > 0 ? c->s->target->l2_bytes : INT64_C(1) << 20;
    t.rows_outer = u.flat && taps == 1 && !g->sym &&
                   g->cout * plane * (int64_t)ir_dtype_size(c->n->out[0]->type.dtype) > l2 / 2;
    if (g->sym) {
        t.n_dyn = plane_x ? plane_x : g_out(c->k, g, L);
        t.ng_dyn = L > 0 && !plane_x ? g_out(c->k, g, 0) : lw_i64c(c->k, 1);
    }
    return cg_tile_lower(c, &t);
}

/* The direct schedules' view of a 2-D geometry (conv_direct.h). */
static cg_conv2d conv2d_of(const geom *g)
{
    cg_conv2d d = {.batch = g->batch, .cin = g->cin, .cout = g->cout, .group = g->group, .cg = g->cg, .mg = g->mg,
                   .sym = g->sym};
    for (int j = 0; j < 2; j++) {
        d.in[j] = g->in[j], d.out[j] = g->out[j], d.k[j] = g->k[j];
        d.ind[j] = g->ind[j], d.outd[j] = g->outd[j];
        d.s[j] = g->s[j], d.d[j] = g->d[j], d.pb[j] = g->pb[j];
        d.same[j] = g->same[j], d.dk[j] = g->dk[j];
    }
    return d;
}

/* ---- CUDA: Conv as an implicit GEMM on the GPU tiles (gpu_tile.h) -------- */

/* Per batch item (image, group): rows are the group's output channels,
 * columns the output positions (row-major over the spatial dims), the
 * reduction the group's input channels times the taps; A is the weight
 * [M, C/group, k...] read in place (a row is contiguous), B the input at
 * each tap of each position (consecutive positions: consecutive input
 * elements at stride 1), zero where the tap falls in the padding. */
static int64_t gc_taps(const geom *g)
{
    int64_t t = 1;
    for (int j = 0; j < g->n; j++)
        t *= g->k[j];
    return t;
}

/* The output positions of a batch item. */
static int64_t gc_positions(const geom *g)
{
    int64_t p = 1;
    for (int j = 0; j < g->n; j++)
        p *= g->out[j];
    return p;
}

static kir_expr *gc_a(lctx *c, const cg_gpu_tile *t, kir_expr *bat, kir_expr *row, kir_expr *kx)
{
    const geom *g = t->u;
    kir_kernel *k = c->k;
    int64_t taps = gc_taps(g);
    kir_expr *wi[IR_MAX_RANK + 2];
    wi[0] = kir_iadd(k, lw_imulc(k, lw_iremc(k, bat, g->group), g->mg), row);
    wi[1] = lw_idivc(k, kx, taps);
    lw_unflatten_c(k, lw_iremc(k, kx, taps), g->n, g->k, wi + 2);
    return lw_load_in(c, 1, wi);
}

static kir_expr *gc_b(lctx *c, const cg_gpu_tile *t, kir_expr *bat, kir_expr *kx, kir_expr *col)
{
    const geom *g = t->u;
    kir_kernel *k = c->k;
    int64_t taps = gc_taps(g);
    kir_expr *xi[IR_MAX_RANK + 2], *tj[IR_MAX_RANK], *o[IR_MAX_RANK], *inb = NULL;
    xi[0] = lw_idivc(k, bat, g->group);
    xi[1] = kir_iadd(k, lw_imulc(k, lw_iremc(k, bat, g->group), g->cg), lw_idivc(k, kx, taps));
    lw_unflatten_c(k, lw_iremc(k, kx, taps), g->n, g->k, tj);
    lw_unflatten_c(k, col, g->n, g->out, o);
    for (int j = g->n - 1; j >= 0; j--) {
        kir_expr *i = kir_iadd(k, lw_iaddc(k, lw_imulc(k, o[j], g->s[j]), -g->pb[j]), lw_imulc(k, tj[j], g->d[j]));
        kir_expr *ok = kir_op2(k, KIR_AND, IR_BOOL, kir_op2(k, KIR_LE, IR_BOOL, lw_i64c(k, 0), i),
                               kir_op2(k, KIR_LT, IR_BOOL, i, lw_i64c(k, g->in[j])));
        inb = inb ? kir_op2(k, KIR_AND, IR_BOOL, inb, ok) : ok;
        xi[2 + j] = lw_imin(k, lw_imax(k, i, lw_i64c(k, 0)), lw_i64c(k, g->in[j] - 1));
    }
    kir_expr *v = lw_load_in(c, 0, xi);
    if (v && v->dtype != c->cdt)
        v = kir_op1(k, KIR_CAST, c->cdt, v);
    return kir_op3(k, KIR_SELECT, c->cdt, inb, v, kir_const_f(k, c->cdt, 0));
}

static int gc_store(lctx *c, const cg_gpu_tile *t, kir_block *blk, kir_expr *bat, kir_expr *row, kir_expr *col,
                    kir_expr *v)
{
    const geom *g = t->u;
    kir_kernel *k = c->k;
    kir_expr *yi[IR_MAX_RANK + 2];
    yi[0] = lw_idivc(k, bat, g->group);
    yi[1] = kir_iadd(k, lw_imulc(k, lw_iremc(k, bat, g->group), g->mg), row);
    lw_unflatten_c(k, col, g->n, g->out, yi + 2);
    if (c->n->nin > 2 && c->n->in[2])
        v = kir_op2(k, KIR_ADD, c->cdt, v, lw_load_in(c, 2, (kir_expr *[]){yi[1]}));
    return kir_store(k, blk, c->out, yi, lw_to_out(c, lower_epi(c, v, yi))) ? 0 : -1;
}

/* CUDA: a float Conv of static shapes whose groups have at least 8 output
 * channels and whose outputs have at least 16 positions. */
static bool conv_gpu_ok(const lctx *c, const geom *g)
{
    return c->s->gpu_gemm && c->n->op == IR_OP_CONV && !g->sym && !c->k->body.n && ir_dtype_is_float(c->cdt) &&
           g->mg >= 8 && gc_positions(g) >= 16 && g->cg >= 1;
}

static int lower_conv_gpu(lctx *c, const geom *g)
{
    cg_gpu_tile t = {.nbat = g->batch * g->group, .m = g->mg, .n = gc_positions(g), .k = g->cg * gc_taps(g), .u = (void *)g,
                     .half = cg_gpu_tile_half(c->s, lw_in_dtype(c, 1), lw_in_dtype(c, 0)),
                     .a = gc_a, .b = gc_b, .store = gc_store};
    return cg_gpu_tile_lower(c, &t, cg_gpu_tile_size(t.nbat, t.m, t.n));
}

static int lower_conv_op(lctx *c)
{
    geom g;
    if (!window_geom(c->n, &g))
        return -1;
    cg_conv2d d2 = g.n == 2 ? conv2d_of(&g) : (cg_conv2d){0};
    if ((!g.sym || !g.bd.sym) && g.n == 2 && g.cg > 0 && cg_conv_dw_ok(c, &d2))
        return lower_conv_dw(c, &d2);
    /* No input channels: the output is the bias (or zero); the schedules
     * below divide by the channel count. No output (no output channels,
     * or an empty plane): the naive loops run no trip, where the
     * schedules below would size scratch by zero. */
    if (g.cg == 0 || (!g.sym && numel_of(&c->n->out[0]->type) == 0))
        return lower_conv_naive(c, &g);
    if (conv_gpu_ok(c, &g))
        return lower_conv_gpu(c, &g);
    if (tiled_ok(c->n, &g))
        return lower_conv_tiled(c, &g);
    if (!g.sym && c->n->op == IR_OP_CONV_INTEGER && g.group == 1) {
        qconv_geom q = {.n = g.n, .batch = g.batch, .cin = g.cin, .cout = g.cout};
        for (int j = 0; j < g.n; j++) {
            q.in[j] = g.in[j], q.out[j] = g.out[j], q.k[j] = g.k[j];
            q.s[j] = g.s[j], q.d[j] = g.d[j], q.pb[j] = g.pb[j];
        }
        if (qconv_ok(c, &q))
            return lower_qconv(c, &q);
    }
    if (c->n->op == IR_OP_CONV && fast_ok(c->n))
        return lower_conv_fast(c, &g);
    return lower_conv_naive(c, &g);
}

/* ---- MatMulInteger ------------------------------------------------------- */

/* y[..., i, j] = sum_k (a[..., i, k] - za[i]) * (b[..., k, j] - zb[j]) in
 * i32, batch dims broadcast as numpy does: the pmaddwd kernel (qgemm.c)
 * for a 2-D B of at least a vector's columns, else a scalar loop. */
static int lower_matmul_integer(lctx *c)
{
    if (qgemm_ok(c) && qgemm_packed_ok(c))
        return lower_qgemm(c);
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *ta = &n->in[0]->type, *tb = &n->in[1]->type, *to = &n->out[0]->type;
    int r = to->rank;
    kir_block *body = &k->body;
    kir_expr *ov[IR_MAX_RANK];
    for (int d = 0; d < r; d++) {
        int v = kir_new_var(k);
        kir_stmt *l = lw_loop(c, body, v, lw_i64c(k, to->dims[d].v), d == 0 ? KIR_PARALLEL : KIR_SERIAL);
        if (!l)
            return -1;
        body = &l->body;
        ov[d] = kir_var(k, v);
    }
    int acc = kir_new_acc(k, IR_I32), kv = kir_new_var(k);
    if (acc < 0 || !kir_acc_set(k, body, acc, kir_const_i(k, IR_I32, 0)))
        return -1;
    kir_stmt *lk = lw_loop(c, body, kv, lw_i64c(k, ta->dims[ta->rank - 1].v), KIR_SERIAL);
    if (!lk)
        return -1;
    kir_expr *ai[IR_MAX_RANK], *bi[IR_MAX_RANK];
    for (int side = 0; side < 2; side++) {
        const ir_type *t = side ? tb : ta;
        kir_expr **ix = side ? bi : ai;
        for (int d = 0; d < t->rank - 2; d++) {
            int od = r - 2 - (t->rank - 2) + d;
            ix[d] = t->dims[d].v == 1 ? lw_i64c(k, 0) : ov[od];
        }
        ix[t->rank - 2] = side ? kir_var(k, kv) : ov[r - 2];
        ix[t->rank - 1] = side ? ov[r - 1] : kir_var(k, kv);
    }
    int64_t pw = ir_attr_int(n, "packed_b", 0), pk = ir_attr_int(n, "packed_k", 1);
    if (pw > 0) {
        /* B [K, N] packed (lw_packed_at): element (k, j) at offset f of
         * the flat B (row f / N, column f % N: the backends linearize) */
        int64_t K = tb->dims[0].v, N = tb->dims[1].v;
        kir_expr *j = ov[r - 1], *j0, *wp;
        lw_packed_panel(k, N, pw, j, &j0, &wp);
        kir_expr *f = lw_packed_at(k, K, pk, 0, kir_var(k, kv), j0, wp, kir_op2(k, KIR_SUB, IR_I64, j, j0));
        bi[0] = lw_idivc(k, f, N);
        bi[1] = lw_iremc(k, f, N);
    }
    kir_expr *av = kir_op1(k, KIR_CAST, IR_I32, kir_load(k, c->buf[0], ai));
    kir_expr *bv = kir_op1(k, KIR_CAST, IR_I32, kir_load(k, c->buf[1], bi));
    kir_expr *za = zero_point(c, 2, ov[r - 2]), *zb = zero_point(c, 3, ov[r - 1]);
    if (za)
        av = kir_op2(k, KIR_SUB, IR_I32, av, za);
    if (zb)
        bv = kir_op2(k, KIR_SUB, IR_I32, bv, zb);
    kir_expr *nv = kir_op2(k, KIR_ADD, IR_I32, kir_acc(k, acc), kir_op2(k, KIR_MUL, IR_I32, av, bv));
    if (!kir_acc_set(k, &lk->body, acc, nv))
        return -1;
    return kir_store(k, body, c->out, ov, lw_to_out(c, lower_epi(c, kir_acc(k, acc), ov))) ? 0 : -1;
}

/* ---- the family ------------------------------------------------------------ */

static bool int8ish(const ir_value *v) { return v->type.dtype == IR_U8 || v->type.dtype == IR_I8; }

/* A zero point: absent, or of the operand's dtype with 1 or `per` values
 * (a scalar or a vector). */
static bool zp_ok(const ir_node *n, int i, int64_t per)
{
    if (n->nin <= i || !n->in[i])
        return true;
    const ir_type *t = &n->in[i]->type;
    int64_t cnt = numel_of(t);
    return int8ish(n->in[i]) && t->rank <= 1 && (cnt == 1 || (cnt == per && t->rank == 1));
}

/* Some spatial dim of g is symbolic. */
static bool spatial_sym(const geom *g)
{
    for (int j = 0; g->sym && j < g->n; j++)
        if (g->ind[j].sym || g->outd[j].sym)
            return true;
    return false;
}

/* Whether n, with symbolic dims, is lowered with them as they are (the
 * batch alone symbolic goes the per-item way instead: program.c). */
bool cg_conv_symbolic(const ir_node *n)
{
    geom g;
    switch (n->op) {
    case IR_OP_CONV: case IR_OP_CONV_INTEGER: case IR_OP_MAX_POOL: case IR_OP_AVERAGE_POOL: case IR_OP_LP_POOL:
        return window_geom(n, &g) && spatial_sym(&g);
    case IR_OP_CONV_TRANSPOSE:
        return convt_geom(n, &g) && spatial_sym(&g);
    case IR_OP_GLOBAL_AVERAGE_POOL: case IR_OP_GLOBAL_MAX_POOL: case IR_OP_GLOBAL_LP_POOL: {
        const ir_type *x = &n->in[0]->type, *y = &n->out[0]->type;
        bool spatial = false;
        if (x->rank < 3 || y->rank != x->rank || x->dims[1].sym || !ir_dim_eq(x->dims[0], y->dims[0]))
            return false;
        for (int i = 0; i < x->rank; i++) {
            if (x->dims[i].sym < 0 || (i != 0 && y->dims[i].sym))
                return false;
            spatial |= i >= 2 && x->dims[i].sym > 0;
        }
        return spatial;
    }
    default:
        return false;
    }
}

bool cg_can_lower_conv(const ir_node *n)
{
    if (n->nin < 1 || !n->in[0] || (!node_static(n) && !cg_conv_symbolic(n)))
        return false;
    const ir_type *x = &n->in[0]->type;
    ir_dtype dt = x->dtype;
    geom g;
    switch (n->op) {
    case IR_OP_CONV:
        if (!ir_dtype_is_float(dt) || n->nin < 2 || !n->in[1] || !window_geom(n, &g))
            return false;
        return n->nin < 3 || !n->in[2] || (n->in[2]->type.rank == 1 && n->in[2]->type.dims[0].v == g.cout);
    case IR_OP_CONV_INTEGER:
        return n->nin >= 2 && n->in[1] && int8ish(n->in[0]) && int8ish(n->in[1]) &&
               n->out[0]->type.dtype == IR_I32 && window_geom(n, &g) && zp_ok(n, 2, 1) &&
               zp_ok(n, 3, g.cout);
    case IR_OP_CONV_TRANSPOSE:
        if (!ir_dtype_is_float(dt) || n->nin < 2 || !n->in[1] || !convt_geom(n, &g))
            return false;
        return n->nin < 3 || !n->in[2] || (n->in[2]->type.rank == 1 && n->in[2]->type.dims[0].v == g.cout);
    case IR_OP_MAX_POOL:
        if (dt == IR_BOOL || !window_geom(n, &g))
            return false;
        return n->nout < 2 || n->out[1]->type.dtype == IR_I64;
    case IR_OP_AVERAGE_POOL:
    case IR_OP_LP_POOL:
        return ir_dtype_is_float(dt) && window_geom(n, &g) &&
               (n->op != IR_OP_LP_POOL || ir_attr_int(n, "p", 2) >= 1);
    case IR_OP_GLOBAL_AVERAGE_POOL:
    case IR_OP_GLOBAL_MAX_POOL:
    case IR_OP_GLOBAL_LP_POOL:
        return ir_dtype_is_float(dt) && x->rank >= 2 && n->out[0]->type.rank == x->rank &&
               (n->op != IR_OP_GLOBAL_LP_POOL || ir_attr_int(n, "p", 2) >= 1);
    case IR_OP_MATMUL_INTEGER: {
        if (n->nin < 2 || !n->in[1] || !int8ish(n->in[0]) || !int8ish(n->in[1]))
            return false;
        const ir_type *b = &n->in[1]->type, *y = &n->out[0]->type;
        if (x->rank < 2 || b->rank < 2 || y->dtype != IR_I32 || y->rank < 2 ||
            x->dims[x->rank - 1].v != b->dims[b->rank - 2].v)
            return false;
        /* B packed (the pack-b pass): 2-D, in whole groups of packed_k */
        int64_t pw = ir_attr_int(n, "packed_b", 0), pk = ir_attr_int(n, "packed_k", 1);
        if (pw < 0 || (pw > 0 && (b->rank != 2 || pk < 1 || pk > 64 || b->dims[0].v % pk)))
            return false;
        return zp_ok(n, 2, x->dims[x->rank - 2].v) && zp_ok(n, 3, b->dims[b->rank - 1].v);
    }
    default:
        return false;
    }
}

int lower_conv(lctx *c)
{
    switch (c->n->op) {
    case IR_OP_CONV:
    case IR_OP_CONV_INTEGER:
        return lower_conv_op(c);
    case IR_OP_CONV_TRANSPOSE: {
        geom g;
        if (convt_geom(c->n, &g) && g.n == 2) {
            cg_conv2d d2 = conv2d_of(&g);
            if (cg_convtranspose_ok(c->n, &d2))
                return lower_convtranspose_direct(c, &d2);
        }
        return lower_conv_transpose(c);
    }
    case IR_OP_MAX_POOL:
    case IR_OP_AVERAGE_POOL:
    case IR_OP_LP_POOL:
        return lower_pool(c);
    case IR_OP_GLOBAL_AVERAGE_POOL:
    case IR_OP_GLOBAL_MAX_POOL:
    case IR_OP_GLOBAL_LP_POOL:
        return lower_global_pool(c);
    case IR_OP_MATMUL_INTEGER:
        return lower_matmul_integer(c);
    default:
        return -1;
    }
}
