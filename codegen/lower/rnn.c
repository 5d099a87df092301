/* rnn.c - LSTM, GRU and RNN (ir/ref/rnn.c for their semantics) as one
 * kernel each, the time loop inside it. Every (direction, batch item)
 * pair is an independent recurrence, so the parallel loop runs over them
 * and each iteration walks its item's steps alone:
 *
 *   parallel p in [0, D * B)                        d = p / B, b = p % B
 *     h, c = initial state; len = sequence_lens[b] (or T)
 *     Y[t >= len] = 0
 *     for each block of TB steps                    s in [s0, s0 + n)
 *       X_proj[s - s0, g] = x_t W_d[g]^T + biases   the block's steps at once: rows
 *                                                   x gate rows g register tiles of
 *                                                   carried sums along I (X and W
 *                                                   both contiguous there)
 *       for s in the block                          t = s, or len - 1 - s reversed
 *         gates[g] = X_proj[s - s0, g] + h R_d[g]^T tiles of gate rows, carried
 *                                                   sums along H
 *         h, c, Y[t] = cell(gates, c)               VECTOR loop over H
 *     Y_h = h, Y_c = c
 *
 * GRU without linear_before_reset needs r before its third product, which
 * reads (r h): its gate rows run in two passes, z and r first. The input
 * projections keep both biases except GRU's Rb_h under linear_before_reset,
 * which r multiplies. The state, the gates and one block of projections
 * live in thread scratch: TB is what fits in 160 KiB, so any number of
 * steps runs in bounded memory while W is still reused across the rows
 * of a tile. Weights are read as they are: both products are dot
 * products along the rows of W and R, contiguous, so nothing needs
 * re-laying out.
 *
 * The steps and the batch may be symbolic (IR_F_SYMBOLIC: loop bounds
 * read them at run time); the input and hidden sizes must be constants.
 */
#include "codegen/lower/internal.h"
#include "ir/ops.h"
#include "ir/ref/rnn.h"

#include <math.h>

/* Thread scratch a block of projections may take: the rest of the
 * 256 KiB a kernel's thread and block scratch are capped at stays for the
 * state and gates (with H up to a few thousand). */
#define PROJ_THREAD_BYTES (160 * 1024)

typedef struct {
    ir_rnn_attrs a;
    int64_t I, H, G, GH;
    kir_expr *T, *B;           /* steps and batch (constants or the run's symbols) */
    int64_t TB;                /* steps of a projection block */
    int rows, cols;            /* register tiles: steps x gate rows, gate rows per pass */
    int64_t pw;                /* weights_t: the panel width of W and R, the VECTOR width of
                                  both products' tiles */
    int wf, rf;                /* weights_t: flat views of W and R */
    int proj;                  /* the projections of a block of steps: [TB, GH] */
    int hs, cs, gs, rh;        /* thread scratch: h, c (LSTM), gate sums, r h (GRU without
                                  linear_before_reset) */
    /* per parallel iteration */
    kir_expr *item, *d, *b;
    kir_expr *t, *rr;          /* the step's time index and its row in the block */
} rnn_geo;

static bool has_in(const ir_node *n, int i) { return i < n->nin && n->in[i]; }

bool cg_can_lower_rnn(const ir_node *n)
{
    if (n->op != IR_OP_LSTM && n->op != IR_OP_GRU && n->op != IR_OP_RNN)
        return false;
    ir_rnn_attrs a;
    if (ir_rnn_attrs_get(n, &a, NULL) < 0 || !ir_dtype_is_float(n->in[0]->type.dtype))
        return false;
    /* weights, biases and peepholes constant-shaped; X, the states and
     * the outputs may have symbolic steps and batch (the only dims that
     * are not sizes of W and R) */
    for (int i = IR_RNN_IN_W; i < n->nin; i++)
        if (n->in[i] && i != IR_RNN_IN_SEQ && i != IR_RNN_IN_H0 && i != IR_RNN_IN_C0 &&
            !ir_type_is_static(&n->in[i]->type))
            return false;
    const ir_type *x = &n->in[0]->type, *w = &n->in[1]->type, *r = &n->in[2]->type;
    if (x->rank != 3 || w->rank != 3 || r->rank != 3 || !ir_dim_is_const(x->dims[2]))
        return false;
    int64_t H = r->dims[ir_rnn_r_hidden_dim(a.weights_t)].v, GH = w->dims[ir_rnn_w_rows_dim(a.weights_t)].v;
    /* every operand's steps and batch are X's own (the same constant or
     * symbol): the kernel indexes them all by X's, and nothing checks two
     * different symbols against each other at run time */
    ir_dim T = x->dims[a.layout ? 1 : 0], B = x->dims[a.layout ? 0 : 1];
    if (T.sym == IR_DIM_UNKNOWN || B.sym == IR_DIM_UNKNOWN)
        return false;
    const ir_type *seq = has_in(n, IR_RNN_IN_SEQ) ? &n->in[IR_RNN_IN_SEQ]->type : NULL;
    if (seq && (seq->rank != 1 || !ir_dim_eq(seq->dims[0], B)))
        return false;
    for (int i = 0; i < 3 + n->nout; i++) {
        const ir_type *t = i < 2 ? (has_in(n, IR_RNN_IN_H0 + i) ? &n->in[IR_RNN_IN_H0 + i]->type : NULL)
                                 : i >= 3 ? &n->out[i - 3]->type : NULL;
        if (!t)
            continue;
        bool y = i == 3;
        int rank = y ? 4 : 3, bi = a.layout ? 0 : y ? 2 : 1;
        if (t->rank != rank || !ir_dim_eq(t->dims[bi], B) || (y && !ir_dim_eq(t->dims[a.layout ? 1 : 0], T)) ||
            !ir_dim_is_const(t->dims[rank - 1]) || t->dims[rank - 1].v != H)
            return false;
    }
    /* an empty batch or no steps: nothing runs; scratch dims must be positive */
    return H > 0 && GH > 0;
}

static kir_expr *fc(lctx *c, double v) { return kir_const_f(c->k, c->cdt, v); }
static kir_expr *op1(lctx *c, kir_op op, kir_expr *a) { return kir_op1(c->k, op, c->cdt, a); }
static kir_expr *op2(lctx *c, kir_op op, kir_expr *a, kir_expr *b) { return kir_op2(c->k, op, c->cdt, a, b); }
static kir_expr *ic(lctx *c, int64_t v) { return lw_i64c(c->k, v); }

/* The activation at x (ir_rnn_act_apply's formulas). x is read several
 * times by some, so it is bound to a let in b first. */
static kir_expr *act(lctx *c, kir_block *b, const ir_rnn_act *f, kir_expr *x)
{
    kir_kernel *k = c->k;
    ir_dtype t = c->cdt;
    if (f->kind != IR_RNN_TANH && f->kind != IR_RNN_SIGMOID && f->kind != IR_RNN_AFFINE)
        x = kir_let(k, b, x);
    kir_expr *zero = fc(c, 0), *one = fc(c, 1);
    switch (f->kind) {
    case IR_RNN_RELU:
        return op2(c, KIR_MAX, x, zero);
    case IR_RNN_TANH:
        return op1(c, KIR_TANH, x);
    case IR_RNN_SIGMOID:
        return op2(c, KIR_DIV, one, op2(c, KIR_ADD, one, op1(c, KIR_EXP, op1(c, KIR_NEG, x))));
    case IR_RNN_AFFINE:
        return kir_op3(k, KIR_FMA, t, fc(c, f->alpha), x, fc(c, f->beta));
    case IR_RNN_LEAKY_RELU:
        return kir_op3(k, KIR_SELECT, t, kir_op2(k, KIR_LT, IR_BOOL, x, zero), op2(c, KIR_MUL, fc(c, f->alpha), x), x);
    case IR_RNN_THRESHOLDED_RELU:
        return kir_op3(k, KIR_SELECT, t, kir_op2(k, KIR_LT, IR_BOOL, fc(c, f->alpha), x), x, zero);
    case IR_RNN_SCALED_TANH:
        return op2(c, KIR_MUL, fc(c, f->alpha), op1(c, KIR_TANH, op2(c, KIR_MUL, fc(c, f->beta), x)));
    case IR_RNN_HARD_SIGMOID:
        return op2(c, KIR_MAX, zero,
                   op2(c, KIR_MIN, one, kir_op3(k, KIR_FMA, t, fc(c, f->alpha), x, fc(c, f->beta))));
    case IR_RNN_ELU:
        return kir_op3(k, KIR_SELECT, t, kir_op2(k, KIR_LT, IR_BOOL, x, zero),
                       op2(c, KIR_MUL, fc(c, f->alpha), lw_expm1(c, x)), x);
    case IR_RNN_SOFTSIGN:
        return op2(c, KIR_DIV, x, op2(c, KIR_ADD, one, op1(c, KIR_ABS, x)));
    case IR_RNN_SOFTPLUS: {
        /* max(x, 0) + log(1 + e^-|x|): no overflow for large x */
        kir_expr *e = op1(c, KIR_EXP, op1(c, KIR_NEG, op1(c, KIR_ABS, x)));
        return op2(c, KIR_ADD, op2(c, KIR_MAX, x, zero), op1(c, KIR_LOG, op2(c, KIR_ADD, one, e)));
    }
    }
    return x;
}

static kir_expr *clipv(lctx *c, const rnn_geo *g, kir_expr *v)
{
    if (!g->a.has_clip)
        return v;
    return op2(c, KIR_MIN, fc(c, g->a.clip), op2(c, KIR_MAX, fc(c, -g->a.clip), v));
}

/* ---- index maps ----------------------------------------------------------- */

static void x_idx(const rnn_geo *g, kir_expr *t, kir_expr *k, kir_expr **ix)
{
    ix[0] = g->a.layout ? g->b : t;
    ix[1] = g->a.layout ? t : g->b;
    ix[2] = k;
}

static void y_idx(const rnn_geo *g, kir_expr *t, kir_expr *j, kir_expr **ix)
{
    if (g->a.layout) {
        ix[0] = g->b, ix[1] = t, ix[2] = g->d, ix[3] = j;
    } else {
        ix[0] = t, ix[1] = g->d, ix[2] = g->b, ix[3] = j;
    }
}

static void st_idx(const rnn_geo *g, kir_expr *j, kir_expr **ix)
{
    ix[0] = g->a.layout ? g->b : g->d;
    ix[1] = g->a.layout ? g->d : g->b;
    ix[2] = j;
}

static kir_expr *proj_at(lctx *c, const rnn_geo *g, kir_expr *rr, kir_expr *j)
{
    kir_expr *ix[2] = {rr, j};
    return kir_load(c->k, g->proj, ix);
}

static kir_expr *scr(lctx *c, int buf, kir_expr *j)
{
    return kir_load(c->k, buf, &j);
}

/* Bias vector `half` (0: Wb, 1: Rb) at gate row j of this direction. */
static kir_expr *bias(lctx *c, const rnn_geo *g, int half, kir_expr *j)
{
    kir_expr *ix[2] = {g->d, kir_iadd(c->k, j, ic(c, half * g->GH))};
    return lw_load_in(c, IR_RNN_IN_B, ix);
}

/* ---- the input projections ---------------------------------------------- */

/* The biases of gate row j (vector or scalar), both unless GRU's Rb_h
 * under linear_before_reset (r multiplies it, later), or NULL without B. */
static kir_expr *proj_bias(lctx *c, rnn_geo *g, kir_block *b, kir_expr *j)
{
    if (!has_in(c->n, IR_RNN_IN_B))
        return NULL;
    kir_kernel *k = c->k;
    kir_expr *rb = bias(c, g, 1, j);
    if (g->a.linear_before_reset)
        rb = kir_op3(k, KIR_SELECT, c->cdt, kir_op2(k, KIR_LT, IR_BOOL, j, ic(c, 2 * g->H)), rb, fc(c, 0));
    return kir_let(k, b, op2(c, KIR_ADD, bias(c, g, 0, j), rb));
}

/* weights_t: W (which 0) or R (1) at row kx of panel p (wp wide), lane
 * l: ir_rnn_panel_at's offset in the flat view. */
static kir_expr *wt_at(lctx *c, const rnn_geo *g, int which, kir_expr *p, kir_expr *wp, kir_expr *kx, kir_expr *l)
{
    kir_kernel *k = c->k;
    int64_t K = which ? g->H : g->I;
    kir_expr *base = kir_iadd(k, lw_imulc(k, g->d, K * g->GH), lw_imulc(k, p, g->pw * K));
    kir_expr *off = kir_iadd(k, base, kir_iadd(k, kir_imul(k, kx, wp), l));
    int buf = which ? g->rf : g->wf;
    return lw_widen(k, kir_load(k, buf, &off), k->bufs[buf].dtype);
}

/* weights_t: a serial loop over the panels of gate rows [j0, j1) in b,
 * and in it a VECTOR loop over the panel's lanes within them; *p, *wp
 * (the panel's width), *l and *j (= p pw + l) its variables. NULL on out
 * of memory. */
static kir_block *panel_loops(lctx *c, const rnn_geo *g, kir_block *b, int64_t j0, int64_t j1, kir_expr **p,
                              kir_expr **wp, kir_expr **l, kir_expr **j)
{
    kir_kernel *k = c->k;
    int pv = kir_new_var(k), lv = kir_new_var(k);
    kir_stmt *lp = kir_for(k, b, pv, ic(c, j0 / g->pw), ic(c, (j1 + g->pw - 1) / g->pw), KIR_SERIAL, 0);
    if (!lp)
        return NULL;
    *p = kir_var(k, pv);
    kir_expr *c0 = lw_imulc(k, *p, g->pw);
    *wp = g->GH % g->pw ? lw_imin(k, ic(c, g->pw), kir_op2(k, KIR_SUB, IR_I64, ic(c, g->GH), c0)) : ic(c, g->pw);
    kir_expr *lo = j0 % g->pw ? lw_imax(k, ic(c, 0), kir_op2(k, KIR_SUB, IR_I64, ic(c, j0), c0)) : ic(c, 0);
    kir_expr *hi = lw_imin(k, *wp, kir_op2(k, KIR_SUB, IR_I64, ic(c, j1), c0));
    if (j1 % g->pw == 0 && g->GH % g->pw == 0)
        hi = ic(c, g->pw);
    kir_stmt *ll = kir_for(k, &lp->body, lv, lo, hi, KIR_VECTOR, (int)g->pw);
    if (!ll)
        return NULL;
    *l = kir_var(k, lv);
    *j = kir_iadd(k, c0, *l);
    return &ll->body;
}

/* weights_t: the projections as the matmul kernels' register tile, per
 * panel of gate rows a VECTOR loop over its lanes around tiles of `rows`
 * steps, the sums of each step carried along k with x[t, k] broadcast:
 * no sum is split across lanes, and a tile reads its panel of W, one
 * contiguous stretch, once for all the block's steps. */
static int projections_t(lctx *c, rnn_geo *g, kir_block *body, kir_expr *s0, kir_expr *nb, kir_expr *len, bool rev)
{
    kir_kernel *k = c->k;
    int R = g->rows;
    int tbv = kir_new_var(k), kv = kir_new_var(k);
    kir_expr *p, *wp, *l, *j;
    kir_block *jb = panel_loops(c, g, body, 0, g->GH, &p, &wp, &l, &j);
    if (!jb)
        return -1;
    kir_expr *bsum = proj_bias(c, g, jb, j);
    kir_stmt *ltb = lw_loop(c, jb, tbv, lw_idivc(k, lw_iaddc(k, nb, R - 1), R), KIR_SERIAL);
    if (!ltb)
        return -1;
    kir_block *tb = &ltb->body;
    kir_expr *rs[16], *ts[16]; /* the tile's rows in the block and their steps */
    int acc[16];
    for (int r = 0; r < R; r++) {
        rs[r] = kir_let(k, tb, lw_imin(k, lw_iaddc(k, lw_imulc(k, kir_var(k, tbv), R), r), lw_iaddc(k, nb, -1)));
        kir_expr *st = kir_iadd(k, s0, rs[r]);
        ts[r] = kir_let(k, tb, rev ? kir_op2(k, KIR_SUB, IR_I64, lw_iaddc(k, len, -1), st) : st);
        if ((acc[r] = kir_new_acc(k, c->cdt)) < 0 || !kir_acc_set(k, tb, acc[r], bsum ? bsum : fc(c, 0)))
            return -1;
    }
    kir_stmt *lk = kir_for(k, tb, kv, ic(c, 0), ic(c, g->I), KIR_SERIAL, 0);
    if (!lk)
        return -1;
    kir_expr *kx = kir_var(k, kv), *wv = wt_at(c, g, 0, p, wp, kx, l);
    for (int r = 0; r < R; r++) {
        kir_expr *ix[3];
        x_idx(g, ts[r], kx, ix);
        if (!kir_acc_set(k, &lk->body, acc[r], kir_op3(k, KIR_FMA, c->cdt, lw_load_in(c, IR_RNN_IN_X, ix), wv,
                                                       kir_acc(k, acc[r]))))
            return -1;
    }
    for (int r = 0; r < R; r++)
        if (!kir_store(k, tb, g->proj, (kir_expr *[]){rs[r], j}, kir_acc(k, acc[r])))
            return -1;
    return 0;
}

/* X_proj[rr, j] = sum_k X[t(s0 + rr), b, k] W[d, j, k] + biases for the
 * block's nb steps: tiles of `rows` steps x `cols` gate rows, a VECTOR
 * loop over k carrying the sums (the emitter splits each across the
 * lanes). Past the block's last step or the last gate row a tile
 * recomputes the last one. The steps run from s0, reversed (t = len - 1 - s)
 * when rev. */
static int projections(lctx *c, rnn_geo *g, kir_block *body, kir_expr *s0, kir_expr *nb, kir_expr *len, bool rev)
{
    if (g->a.weights_t)
        return projections_t(c, g, body, s0, nb, len, rev);
    kir_kernel *k = c->k;
    int R = g->rows, Q = g->cols;
    int tbv = kir_new_var(k), jbv = kir_new_var(k), kv = kir_new_var(k);
    /* gate rows outer: a tile's rows of W stay in L1 while the block's
     * steps pass, so W is read once per block, X once per gate-row tile */
    kir_stmt *ljb = lw_loop(c, body, jbv, ic(c, (g->GH + Q - 1) / Q), KIR_SERIAL);
    kir_stmt *ltb = ljb ? lw_loop(c, &ljb->body, tbv, lw_idivc(k, lw_iaddc(k, nb, R - 1), R), KIR_SERIAL) : NULL;
    if (!ltb)
        return -1;
    kir_block *tb = &ltb->body;
    kir_expr *rs[16], *ts[16], *js[16];
    int acc[16][16];
    for (int r = 0; r < R; r++) {
        rs[r] = kir_let(k, tb, lw_imin(k, lw_iaddc(k, lw_imulc(k, kir_var(k, tbv), R), r), lw_iaddc(k, nb, -1)));
        kir_expr *st = kir_iadd(k, s0, rs[r]);
        ts[r] = kir_let(k, tb, rev ? kir_op2(k, KIR_SUB, IR_I64, lw_iaddc(k, len, -1), st) : st);
    }
    for (int q = 0; q < Q; q++)
        js[q] = lw_imin(k, lw_iaddc(k, lw_imulc(k, kir_var(k, jbv), Q), q), ic(c, g->GH - 1));
    for (int r = 0; r < R; r++)
        for (int q = 0; q < Q; q++)
            if ((acc[r][q] = kir_new_acc(k, c->cdt)) < 0 || !kir_acc_set(k, tb, acc[r][q], fc(c, 0)))
                return -1;
    kir_stmt *lk = kir_for(k, tb, kv, ic(c, 0), ic(c, g->I), KIR_VECTOR, c->s->lanes);
    if (!lk)
        return -1;
    kir_expr *kx = kir_var(k, kv), *xs[16], *ws[16];
    for (int r = 0; r < R; r++) {
        kir_expr *ix[3];
        x_idx(g, ts[r], kx, ix);
        xs[r] = lw_load_in(c, IR_RNN_IN_X, ix);
    }
    for (int q = 0; q < Q; q++) {
        kir_expr *ix[3] = {g->d, js[q], kx};
        ws[q] = lw_load_in(c, IR_RNN_IN_W, ix);
    }
    for (int r = 0; r < R; r++)
        for (int q = 0; q < Q; q++)
            if (!kir_acc_set(k, &lk->body, acc[r][q],
                             kir_op3(k, KIR_FMA, c->cdt, xs[r], ws[q], kir_acc(k, acc[r][q]))))
                return -1;
    for (int q = 0; q < Q; q++) {
        kir_expr *bsum = proj_bias(c, g, tb, js[q]);
        for (int r = 0; r < R; r++) {
            kir_expr *v = kir_acc(k, acc[r][q]);
            if (bsum)
                v = op2(c, KIR_ADD, v, bsum);
            kir_expr *ix[2] = {rs[r], js[q]};
            if (!kir_store(k, tb, g->proj, ix, v))
                return -1;
        }
    }
    return 0;
}

/* gs[j] = pre(j) + sum_k v[k] R[d, j, k] for gate rows j in [j0, j1):
 * tiles of `cols` rows, a VECTOR loop over k carrying the sums. pre adds
 * the step's projection (with_proj) and, for GRU's h rows under
 * linear_before_reset, Rb_h instead. */
static int recurrent(lctx *c, rnn_geo *g, kir_block *b, int v, int64_t j0, int64_t j1, bool with_proj)
{
    if (g->a.weights_t) {
        /* R's panels: per panel a VECTOR loop over its lanes, each lane's
         * sum carried along k with v[k] broadcast */
        kir_kernel *k = c->k;
        int kv = kir_new_var(k), acc = kir_new_acc(k, c->cdt);
        kir_expr *p, *wp, *l, *j;
        kir_block *jb = acc < 0 ? NULL : panel_loops(c, g, b, j0, j1, &p, &wp, &l, &j);
        if (!jb)
            return -1;
        kir_expr *s0 = with_proj ? proj_at(c, g, g->rr, j) : has_in(c->n, IR_RNN_IN_B) ? bias(c, g, 1, j) : fc(c, 0);
        kir_stmt *lk = kir_acc_set(k, jb, acc, s0) ? kir_for(k, jb, kv, ic(c, 0), ic(c, g->H), KIR_SERIAL, 0) : NULL;
        if (!lk)
            return -1;
        kir_expr *kx = kir_var(k, kv);
        kir_expr *f = kir_op3(k, KIR_FMA, c->cdt, scr(c, v, kx), wt_at(c, g, 1, p, wp, kx, l), kir_acc(k, acc));
        return kir_acc_set(k, &lk->body, acc, f) && kir_store(k, jb, g->gs, &j, kir_acc(k, acc)) ? 0 : -1;
    }
    kir_kernel *k = c->k;
    int Q = g->cols;
    int64_t nr = j1 - j0;
    int jbv = kir_new_var(k), kv = kir_new_var(k);
    kir_stmt *ljb = lw_loop(c, b, jbv, ic(c, (nr + Q - 1) / Q), KIR_SERIAL);
    if (!ljb)
        return -1;
    kir_block *jb = &ljb->body;
    kir_expr *js[16];
    int acc[16];
    for (int q = 0; q < Q; q++) {
        js[q] = lw_iaddc(k, lw_imin(k, lw_iaddc(k, lw_imulc(k, kir_var(k, jbv), Q), q), ic(c, nr - 1)), j0);
        if ((acc[q] = kir_new_acc(k, c->cdt)) < 0 || !kir_acc_set(k, jb, acc[q], fc(c, 0)))
            return -1;
    }
    kir_stmt *lk = kir_for(k, jb, kv, ic(c, 0), ic(c, g->H), KIR_VECTOR, c->s->lanes);
    if (!lk)
        return -1;
    kir_expr *kx = kir_var(k, kv);
    kir_expr *hv = scr(c, v, kx);
    for (int q = 0; q < Q; q++) {
        kir_expr *ix[3] = {g->d, js[q], kx};
        if (!kir_acc_set(k, &lk->body, acc[q],
                         kir_op3(k, KIR_FMA, c->cdt, hv, lw_load_in(c, IR_RNN_IN_R, ix), kir_acc(k, acc[q]))))
            return -1;
    }
    for (int q = 0; q < Q; q++) {
        kir_expr *s = kir_acc(k, acc[q]);
        if (with_proj)
            s = op2(c, KIR_ADD, s, proj_at(c, g, g->rr, js[q]));
        else if (has_in(c->n, IR_RNN_IN_B))
            s = op2(c, KIR_ADD, s, bias(c, g, 1, js[q]));
        if (!kir_store(k, jb, g->gs, &js[q], s))
            return -1;
    }
    return 0;
}

/* A VECTOR loop over [0, H) in b; *j is its variable. */
static kir_block *hidden_loop(lctx *c, const rnn_geo *g, kir_block *b, kir_expr **j)
{
    int v = kir_new_var(c->k);
    kir_stmt *l = kir_for(c->k, b, v, ic(c, 0), ic(c, g->H), KIR_VECTOR, c->s->lanes);
    *j = kir_var(c->k, v);
    return l ? &l->body : NULL;
}

static kir_expr *peep(lctx *c, const rnn_geo *g, int which, kir_expr *j)
{
    kir_expr *ix[2] = {g->d, kir_iadd(c->k, j, ic(c, which * g->H))};
    return lw_load_in(c, IR_RNN_IN_P, ix);
}

static kir_expr *gate(lctx *c, const rnn_geo *g, int blk, kir_expr *j)
{
    return scr(c, g->gs, kir_iadd(c->k, j, ic(c, blk * g->H)));
}

/* The cell of one step at hidden index j: the new h (and c) into the
 * state and Y[t]. dir picks the activations. */
static int cell(lctx *c, rnn_geo *g, kir_block *b, const ir_rnn_act *f, kir_expr *j)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    kir_expr *h;
    if (g->a.op == IR_OP_LSTM) {
        bool peeps = has_in(n, IR_RNN_IN_P);
        kir_expr *cp = kir_let(k, b, scr(c, g->cs, j));
        kir_expr *pi = gate(c, g, 0, j), *po = gate(c, g, 1, j), *pf = gate(c, g, 2, j), *pc = gate(c, g, 3, j);
        if (peeps) {
            pi = kir_op3(k, KIR_FMA, c->cdt, peep(c, g, 0, j), cp, pi);
            pf = kir_op3(k, KIR_FMA, c->cdt, peep(c, g, 2, j), cp, pf);
        }
        kir_expr *ig = kir_let(k, b, act(c, b, &f[0], clipv(c, g, pi)));
        kir_expr *fg = g->a.input_forget ? op2(c, KIR_SUB, fc(c, 1), ig) : act(c, b, &f[0], clipv(c, g, pf));
        kir_expr *cg = act(c, b, &f[1], clipv(c, g, pc));
        kir_expr *cn = kir_let(k, b, kir_op3(k, KIR_FMA, c->cdt, fg, cp, op2(c, KIR_MUL, ig, cg)));
        if (peeps)
            po = kir_op3(k, KIR_FMA, c->cdt, peep(c, g, 1, j), cn, po);
        kir_expr *og = act(c, b, &f[0], clipv(c, g, po));
        h = op2(c, KIR_MUL, og, act(c, b, &f[2], cn));
        if (!kir_store(k, b, g->cs, &j, cn))
            return -1;
    } else if (g->a.op == IR_OP_GRU) {
        kir_expr *hp = kir_let(k, b, scr(c, g->hs, j));
        kir_expr *z = kir_let(k, b, act(c, b, &f[0], clipv(c, g, gate(c, g, 0, j))));
        kir_expr *pre = gate(c, g, 2, j);
        if (g->a.linear_before_reset) {
            kir_expr *r = act(c, b, &f[0], clipv(c, g, gate(c, g, 1, j)));
            pre = kir_op3(k, KIR_FMA, c->cdt, r, pre, proj_at(c, g, g->rr, kir_iadd(k, j, ic(c, 2 * g->H))));
        }
        kir_expr *nn = act(c, b, &f[1], clipv(c, g, pre));
        /* (1 - z) n + z h = n + z (h - n) */
        nn = kir_let(k, b, nn);
        h = kir_op3(k, KIR_FMA, c->cdt, z, op2(c, KIR_SUB, hp, nn), nn);
    } else {
        h = act(c, b, &f[0], clipv(c, g, gate(c, g, 0, j)));
    }
    h = kir_let(k, b, h);
    kir_expr *ix[4];
    y_idx(g, g->t, j, ix);
    return kir_store(k, b, g->hs, &j, h) && kir_store(k, b, c->outs[0], ix, lw_to_out_i(c, 0, h)) ? 0 : -1;
}

/* One direction's recurrence for the current item, in body. */
static int recurrence(lctx *c, rnn_geo *g, kir_block *body, const ir_rnn_act *f, bool rev)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    /* the state */
    kir_expr *j;
    kir_block *ib = hidden_loop(c, g, body, &j);
    if (!ib)
        return -1;
    for (int s = 0; s < (g->a.op == IR_OP_LSTM ? 2 : 1); s++) {
        int in = s ? IR_RNN_IN_C0 : IR_RNN_IN_H0;
        kir_expr *ix[3];
        st_idx(g, j, ix);
        kir_expr *v = has_in(n, in) ? lw_load_in(c, in, ix) : fc(c, 0);
        if (!kir_store(k, ib, s ? g->cs : g->hs, &j, v))
            return -1;
    }
    /* the length; steps past it give 0 */
    kir_expr *len = g->T;
    if (has_in(n, IR_RNN_IN_SEQ)) {
        kir_expr *raw = kir_load(k, c->buf[IR_RNN_IN_SEQ], &g->b);
        if (raw->dtype != IR_I64)
            raw = kir_op1(k, KIR_CAST, IR_I64, raw);
        raw = kir_let(k, body, raw);
        kir_stmt *bad = kir_if(k, body, kir_op2(k, KIR_OR, IR_BOOL, kir_op2(k, KIR_LT, IR_BOOL, raw, ic(c, 0)),
                                                kir_op2(k, KIR_LT, IR_BOOL, g->T, raw)));
        char msg[300], tn[64];
        const ir_dim td = n->in[0]->type.dims[g->a.layout ? 1 : 0];
        if (ir_dim_is_const(td))
            snprintf(tn, sizeof tn, "%lld", (long long)td.v);
        else
            snprintf(tn, sizeof tn, "%.40s (the steps)", ir_graph_sym_name(c->g, td.sym));
        snprintf(msg, sizeof msg, "node '%.100s' (%s): a sequence_lens value is outside [0, %s]", n->name,
                 ir_ops[n->op].name, tn);
        if (!bad || !kir_fail(k, &bad->body, msg))
            return -1;
        len = kir_let(k, body, lw_imin(k, lw_imax(k, raw, ic(c, 0)), g->T));
        int tv = kir_new_var(k);
        kir_stmt *lt = kir_for(k, body, tv, len, g->T, KIR_SERIAL, 0);
        kir_block *zb = lt ? hidden_loop(c, g, &lt->body, &j) : NULL;
        kir_expr *ix[4];
        y_idx(g, kir_var(k, tv), j, ix);
        if (!zb || !kir_store(k, zb, c->outs[0], ix, lw_to_out_i(c, 0, fc(c, 0))))
            return -1;
    }
    /* blocks of TB steps: their projections, then their steps */
    int bv = kir_new_var(k), rv = kir_new_var(k);
    kir_stmt *lb = lw_loop(c, body, bv, lw_idivc(k, lw_iaddc(k, len, g->TB - 1), g->TB), KIR_SERIAL);
    if (!lb)
        return -1;
    kir_block *bb = &lb->body;
    kir_expr *s0 = kir_let(k, bb, lw_imulc(k, kir_var(k, bv), g->TB));
    kir_expr *nb = kir_let(k, bb, lw_imin(k, ic(c, g->TB), kir_op2(k, KIR_SUB, IR_I64, len, s0)));
    if (projections(c, g, bb, s0, nb, len, rev) < 0)
        return -1;
    kir_stmt *ls = lw_loop(c, bb, rv, nb, KIR_SERIAL);
    if (!ls)
        return -1;
    kir_block *sb = &ls->body;
    g->rr = kir_var(k, rv);
    kir_expr *s = kir_iadd(k, s0, g->rr);
    g->t = kir_let(k, sb, rev ? kir_op2(k, KIR_SUB, IR_I64, lw_iaddc(k, len, -1), s) : s);
    int64_t H = g->H;
    switch (g->a.op) {
    case IR_OP_LSTM:
        if (recurrent(c, g, sb, g->hs, 0, 4 * H, true) < 0)
            return -1;
        break;
    case IR_OP_GRU:
        if (g->a.linear_before_reset) {
            if (recurrent(c, g, sb, g->hs, 0, 2 * H, true) < 0 || recurrent(c, g, sb, g->hs, 2 * H, 3 * H, false) < 0)
                return -1;
        } else {
            /* r first, then (r h) R_h */
            if (recurrent(c, g, sb, g->hs, 0, 2 * H, true) < 0)
                return -1;
            kir_block *rb = hidden_loop(c, g, sb, &j);
            if (!rb)
                return -1;
            kir_expr *r = act(c, rb, &f[0], clipv(c, g, gate(c, g, 1, j)));
            if (!kir_store(k, rb, g->rh, &j, op2(c, KIR_MUL, r, scr(c, g->hs, j))) ||
                recurrent(c, g, sb, g->rh, 2 * H, 3 * H, true) < 0)
                return -1;
        }
        break;
    default:
        if (recurrent(c, g, sb, g->hs, 0, H, true) < 0)
            return -1;
        break;
    }
    kir_block *cb = hidden_loop(c, g, sb, &j);
    if (!cb || cell(c, g, cb, f, j) < 0)
        return -1;
    /* the final state */
    if (n->nout < 2)
        return 0;
    kir_block *fb = hidden_loop(c, g, body, &j);
    if (!fb)
        return -1;
    for (int o = 1; o < n->nout; o++) {
        kir_expr *ix[3];
        st_idx(g, j, ix);
        if (!kir_store(k, fb, c->outs[o], ix, lw_to_out_i(c, o, scr(c, o == 1 ? g->hs : g->cs, j))))
            return -1;
    }
    return 0;
}

int lower_rnn(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    rnn_geo g = {0};
    if (ir_rnn_attrs_get(n, &g.a, NULL) < 0)
        return -1;
    const ir_type *x = &n->in[0]->type;
    ir_dim td = x->dims[g.a.layout ? 1 : 0];
    ir_dim bd = x->dims[g.a.layout ? 0 : 1];
    g.T = lw_dim_of(k, td);
    g.B = lw_dim_of(k, bd);
    g.I = x->dims[2].v;
    g.H = n->in[IR_RNN_IN_R]->type.dims[ir_rnn_r_hidden_dim(g.a.weights_t)].v;
    g.G = g.a.gates;
    g.GH = g.G * g.H;
    /* tiles of carried sums, each split across a vector register's lanes:
     * rows x cols of them for the projections, cols for the recurrent
     * product (each reads cols weight rows against one h) */
    g.rows = c->s->dot_tiles + 2;
    g.cols = c->s->dot_tiles + 1;
    if (g.rows > 16 || g.cols > 16)
        g.rows = g.cols = 16;
    if (g.a.weights_t) {
        /* the matmul tile: tile_rows steps (fewer when that computes fewer
         * past a constant step count) x one panel */
        g.pw = g.a.weights_t;
        g.rows = ir_dim_is_const(td) ? cg_schedule_fewest_rows(c->s, td.v) : c->s->tile_rows;
        if (g.rows > 16)
            g.rows = 16;
        for (int i = 0; i < 2; i++) {
            const kir_buf *wb = &k->bufs[c->buf[IR_RNN_IN_W + i]];
            ir_type ft = {.dtype = wb->dtype, .rank = 1, .dims = {ir_dim_const(g.a.dirs * (i ? g.H : g.I) * g.GH)}};
            int *v = i ? &g.rf : &g.wf;
            if ((*v = kir_add_buf(k, wb->name, wb->kind, &ft, wb->index, wb->offset)) < 0)
                return -1;
        }
    }
    int64_t esz = (int64_t)ir_dtype_size(c->cdt), D = g.a.dirs;
    g.TB = PROJ_THREAD_BYTES / (g.GH * esz);
    if (ir_dim_is_const(td) && td.v < g.TB)
        g.TB = td.v;
    if (g.TB < 1)
        g.TB = 1;
    int64_t pd[2] = {g.TB, g.GH};
    g.proj = kir_add_scratch(k, "xproj", KIR_SPACE_THREAD, c->cdt, 2, pd);
    bool lstm = g.a.op == IR_OP_LSTM, two_pass = g.a.op == IR_OP_GRU && !g.a.linear_before_reset;
    g.hs = kir_add_scratch(k, "h", KIR_SPACE_THREAD, c->cdt, 1, &g.H);
    g.cs = lstm ? kir_add_scratch(k, "c", KIR_SPACE_THREAD, c->cdt, 1, &g.H) : 0;
    g.gs = kir_add_scratch(k, "gates", KIR_SPACE_THREAD, c->cdt, 1, &g.GH);
    g.rh = two_pass ? kir_add_scratch(k, "rh", KIR_SPACE_THREAD, c->cdt, 1, &g.H) : 0;
    if (g.proj < 0 || g.hs < 0 || g.cs < 0 || g.gs < 0 || g.rh < 0)
        return -1;
    int pv = kir_new_var(k);
    kir_stmt *lp = kir_for(k, &k->body, pv, ic(c, 0), ir_dim_is_const(bd) ? ic(c, bd.v * D) : lw_imulc(k, g.B, D),
                           KIR_PARALLEL, 0);
    if (!lp)
        return -1;
    kir_block *body = &lp->body;
    g.item = kir_var(k, pv);
    if (D == 1)
        g.d = ic(c, 0), g.b = g.item;
    else if (ir_dim_is_const(bd))
        g.d = lw_idivc(k, g.item, bd.v), g.b = lw_iremc(k, g.item, bd.v);
    else
        g.d = kir_op2(k, KIR_DIV, IR_I64, g.item, g.B), g.b = kir_op2(k, KIR_REM, IR_I64, g.item, g.B);
    g.d = kir_let(k, body, g.d);
    g.b = kir_let(k, body, g.b);
    if (D == 1)
        return recurrence(c, &g, body, g.a.act[0], g.a.reverse);
    /* the direction is uniform per iteration: one recurrence each, so the
     * activations and the walk are constants in the code */
    kir_stmt *fwd = kir_if(k, body, kir_op2(k, KIR_EQ, IR_BOOL, g.d, ic(c, 0)));
    if (!fwd || recurrence(c, &g, &fwd->body, g.a.act[0], false) < 0)
        return -1;
    return recurrence(c, &g, &fwd->orelse, g.a.act[1], true);
}
