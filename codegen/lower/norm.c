/* norm.c - the normalizations and the softmax family: Softmax,
 * LogSoftmax, Hardmax, LayerNormalization (with its Mean and InvStdDev
 * outputs), RMSNormalization, GroupNormalization, InstanceNormalization,
 * BatchNormalization (inference), LpNormalization,
 * MeanVarianceNormalization and LRN, with the formulas of the reference
 * interpreter (ir/ref/nn.c, ir/ref/nn_norm.c).
 *
 * Statistics take one pass each over the normalized dims (the mean, then
 * the mean of squared deviations, so the variance never goes negative),
 * with partial results along a long last dim (red_reduce); the final pass
 * writes the outputs and, when the normalized dims end with the input's
 * last one, is a unit-stride vector loop. Computation is in f32 for
 * f16/bf16, else in the input's dtype.
 */
#include "codegen/lower/reduce.h"
#include "ir/ops.h"

#include <math.h>
#include <string.h>

static kir_expr *fc(lctx *c, double v) { return kir_const_f(c->k, c->cdt, v); }

static kir_expr *op2(lctx *c, kir_op op, kir_expr *a, kir_expr *b) { return kir_op2(c->k, op, c->cdt, a, b); }

/* An axis attribute normalized against rank r; false when out of range. */
static bool norm_axis(const ir_node *n, int64_t def, int r, int *axis)
{
    int64_t a = ir_attr_int(n, "axis", def);
    a = a < 0 ? a + r : a;
    if (a < 0 || a >= r)
        return false;
    *axis = (int)a;
    return true;
}

/* The innermost loop kind of a final pass: vector when the reduced dims
 * include the last one (unit stride), else serial. */
static kir_loop store_kind(const ir_type *t, const bool *red)
{
    return t->rank > 0 && red[t->rank - 1] ? KIR_VECTOR : KIR_SERIAL;
}

/* s / n, or 0 when n is 0 (the reference's empty-row mean). */
static kir_expr *mean_of(lctx *c, kir_expr *s, kir_expr *n)
{
    kir_kernel *k = c->k;
    kir_expr *z = kir_op2(k, KIR_EQ, IR_BOOL, n, lw_i64c(k, 0));
    return kir_op3(k, KIR_SELECT, c->cdt, z, fc(c, 0), op2(c, KIR_DIV, s, kir_op1(k, KIR_CAST, c->cdt, n)));
}

/* x's index from GroupNorm's view [N, G, C/G, spatial...]: channel =
 * group * C/G + member. */
static void view_to_x(lctx *c, kir_expr **vi, int cg, int xrank, kir_expr **xi)
{
    xi[0] = vi[0];
    xi[1] = kir_iadd(c->k, kir_imul(c->k, vi[1], lw_i64c(c->k, cg)), vi[2]);
    for (int d = 2; d < xrank; d++)
        xi[d] = vi[d + 1];
}

/* Terms of the statistics: x, x - mean, (x - mean)^2 or |x| of input 0
 * at ix (an index of GroupNorm's view when grp_cg > 0). */
typedef struct {
    kir_expr *mean;            /* subtracted when set */
    bool square, abs;
    int grp_cg;                /* GroupNorm: C/G */
    int xrank;                 /* GroupNorm: x's rank */
} stat_term;

static kir_expr *stat(lctx *c, kir_expr **ix, void *ud)
{
    const stat_term *s = ud;
    kir_expr *xi[IR_MAX_RANK];
    if (s->grp_cg > 0) {
        view_to_x(c, ix, s->grp_cg, s->xrank, xi);
        ix = xi;
    }
    kir_expr *x = red_load(c, 0, ix, c->cdt);
    if (s->mean)
        x = op2(c, KIR_SUB, x, s->mean);
    if (s->abs)
        x = kir_op1(c->k, KIR_ABS, c->cdt, x);
    return s->square ? op2(c, KIR_MUL, x, x) : x;
}

/* 1 / sqrt(var + eps) */
static kir_expr *inv_sqrt(lctx *c, kir_expr *var, double eps)
{
    return op2(c, KIR_DIV, fc(c, 1), kir_op1(c->k, KIR_SQRT, c->cdt, op2(c, KIR_ADD, var, fc(c, eps))));
}

/* Appends the two statistics passes over red[] inside body: *mean (0 for
 * RMS) and *var of input 0 (population variance; for RMS the mean of
 * squares). grp_cg: as in stat_term. */
static int moments(lctx *c, kir_block *body, const ir_type *t, const bool *red, kir_expr **ix,
                   bool rms, int grp_cg, kir_expr **mean, kir_expr **var)
{
    kir_kernel *k = c->k;
    kir_expr *cnt = red_count(c, t, red);
    int xrank = grp_cg > 0 ? t->rank - 1 : t->rank;
    *mean = fc(c, 0);
    if (!rms) {
        int s = kir_new_acc(k, c->cdt);
        stat_term st = {.grp_cg = grp_cg, .xrank = xrank};
        if (!kir_acc_set(k, body, s, fc(c, 0)) || red_reduce(c, body, t, red, ix, s, KIR_ADD, stat, &st) < 0)
            return -1;
        /* the mean is used in many passes: one accumulator holds it */
        int m = kir_new_acc(k, c->cdt);
        if (!kir_acc_set(k, body, m, mean_of(c, kir_acc(k, s), cnt)))
            return -1;
        *mean = kir_acc(k, m);
    }
    int q = kir_new_acc(k, c->cdt);
    stat_term sq = {.mean = rms ? NULL : *mean, .square = true, .grp_cg = grp_cg, .xrank = xrank};
    if (!kir_acc_set(k, body, q, fc(c, 0)) || red_reduce(c, body, t, red, ix, q, KIR_ADD, stat, &sq) < 0)
        return -1;
    int v = kir_new_acc(k, c->cdt);
    if (!kir_acc_set(k, body, v, mean_of(c, kir_acc(k, q), cnt)))
        return -1;
    *var = kir_acc(k, v);
    return 0;
}

/* ---- Softmax, LogSoftmax, Hardmax -------------------------------------------- */

/* The output at ix (a statistic of what a pass stored there). */
static kir_expr *out_term(lctx *c, kir_expr **ix, void *ud)
{
    (void)ud;
    return kir_load(c->k, c->out, ix);
}

/* e^(x - m) with m the expression ud. */
static kir_expr *exp_term(lctx *c, kir_expr **ix, void *ud)
{
    return kir_op1(c->k, KIR_EXP, c->cdt, op2(c, KIR_SUB, red_load(c, 0, ix, c->cdt), ud));
}

/* m = max x; s = sum e^(x-m); y = e^(x-m)/s, or (x-m) - log s. When the
 * output holds the compute dtype, the exponentials are stored by one pass,
 * summed by the next and divided by the last. */
static int lower_softmax(lctx *c, int axis)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *t = &n->in[0]->type;
    ir_dtype ct = c->cdt, ot = n->out[0]->type.dtype;
    bool lg = n->op == IR_OP_LOG_SOFTMAX, scratch = !lg && ot == ct;
    bool red[IR_MAX_RANK] = {0};
    red[axis] = true;
    kir_expr *ix[IR_MAX_RANK];
    kir_block *body = red_outer_rows(c, t, red, ix);
    if (!body)
        return -1;
    int mx = kir_new_acc(k, ct), sum = kir_new_acc(k, ct);
    stat_term plain = {0};
    if (!kir_acc_set(k, body, mx, fc(c, -INFINITY)) ||
        red_reduce(c, body, t, red, ix, mx, KIR_MAX, stat, &plain) < 0)
        return -1;
    if (!kir_acc_set(k, body, sum, fc(c, 0)))
        return -1;
    kir_block *p;
    if (scratch) {
        /* exponentials stored by a loop without a reduction (it vectorizes),
         * then summed like any statistic */
        if (!(p = red_pass(c, body, t, red, ix, store_kind(t, red), ot)))
            return -1;
        kir_expr *e = kir_op1(k, KIR_EXP, ct, op2(c, KIR_SUB, red_load(c, 0, ix, ct), kir_acc(k, mx)));
        if (!kir_store(k, p, c->out, ix, e) ||
            red_reduce(c, body, t, red, ix, sum, KIR_ADD, out_term, NULL) < 0)
            return -1;
    } else if (red_reduce(c, body, t, red, ix, sum, KIR_ADD, exp_term, kir_acc(k, mx)) < 0) {
        return -1;
    }
    kir_expr *lsum = NULL;
    if (lg) {
        int l = kir_new_acc(k, ct);
        if (!kir_acc_set(k, body, l, kir_op1(k, KIR_LOG, ct, kir_acc(k, sum))))
            return -1;
        lsum = kir_acc(k, l);
    }
    if (!(p = red_pass(c, body, t, red, ix, store_kind(t, red), ot)))
        return -1;
    kir_expr *y;
    if (scratch)
        y = op2(c, KIR_DIV, kir_load(k, c->out, ix), kir_acc(k, sum));
    else if (lg)
        y = op2(c, KIR_SUB, op2(c, KIR_SUB, red_load(c, 0, ix, ct), kir_acc(k, mx)), lsum);
    else
        y = op2(c, KIR_DIV, kir_op1(k, KIR_EXP, ct, op2(c, KIR_SUB, red_load(c, 0, ix, ct), kir_acc(k, mx))),
                kir_acc(k, sum));
    return kir_store(k, p, c->out, ix, lw_to_out(c, lower_epi(c, y, ix))) ? 0 : -1;
}

/* Softmax along an axis other than the last: the last dim is taken in
 * chunks of a vector's width, each column with its own max and sum
 * accumulators, so the strided passes along the axis read whole vectors
 * and vectorize (a scalar tail takes the rest of the last dim). */
static int lower_softmax_cols(lctx *c, int axis)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *t = &n->in[0]->type;
    ir_dtype ct = c->cdt;
    bool lg = n->op == IR_OP_LOG_SOFTMAX;
    int r = t->rank, w = red_width(c, ct);
    int64_t len = t->dims[r - 1].v, nb = len / w;
    bool outer[IR_MAX_RANK] = {0}, red[IR_MAX_RANK] = {0};
    outer[axis] = outer[r - 1] = red[axis] = true;
    kir_expr *ix[IR_MAX_RANK];
    kir_block *body = red_outer(c, t, outer, ix);
    if (!body)
        return -1;
    for (int part = 0; part < 2; part++) {
        /* part 0: the chunks; part 1: the tail, one column at a time */
        if (part && nb * w == len)
            break;
        int cols = part ? 1 : w, cv = kir_new_var(k);
        kir_stmt *cl = part ? kir_for(k, body, cv, lw_i64c(k, nb * w), lw_i64c(k, len), KIR_SERIAL, 0)
                            : kir_for(k, body, cv, lw_i64c(k, 0), lw_i64c(k, nb), KIR_SERIAL, 0);
        if (!cl)
            return -1;
        kir_expr *col[64];
        int mx[64], sm[64];
        for (int l = 0; l < cols; l++) {
            col[l] = part ? kir_var(k, cv) : kir_iadd(k, kir_imul(k, kir_var(k, cv), lw_i64c(k, w)), lw_i64c(k, l));
            mx[l] = kir_new_acc(k, ct);
            sm[l] = kir_new_acc(k, ct);
            if (!kir_acc_set(k, &cl->body, mx[l], fc(c, -INFINITY)) || !kir_acc_set(k, &cl->body, sm[l], fc(c, 0)))
                return -1;
        }
        for (int pass = 0; pass < 3; pass++) {
            kir_block *p = red_pass(c, &cl->body, t, red, ix, KIR_SERIAL, ct);
            if (!p)
                return -1;
            for (int l = 0; l < cols; l++) {
                ix[r - 1] = col[l];
                kir_expr *x = red_load(c, 0, ix, ct), *m = kir_acc(k, mx[l]), *s = kir_acc(k, sm[l]);
                kir_expr *xm = op2(c, KIR_SUB, x, m);
                if (pass == 0 && !kir_acc_set(k, p, mx[l], op2(c, KIR_MAX, m, x)))
                    return -1;
                if (pass == 1 && !kir_acc_set(k, p, sm[l], op2(c, KIR_ADD, s, kir_op1(k, KIR_EXP, ct, xm))))
                    return -1;
                kir_expr *y = lg ? op2(c, KIR_SUB, xm, kir_op1(k, KIR_LOG, ct, s))
                                 : op2(c, KIR_DIV, kir_op1(k, KIR_EXP, ct, xm), s);
                if (pass == 2 && !kir_store(k, p, c->out, ix, lw_to_out(c, lower_epi(c, y, ix))))
                    return -1;
            }
        }
    }
    return 0;
}

/* 1 at the first maximum along axis (the first element if none is
 * greater, e.g. all NaN), 0 elsewhere. */
static int lower_hardmax(lctx *c, int axis)
{
    kir_kernel *k = c->k;
    const ir_type *t = &c->n->in[0]->type;
    ir_dtype ct = c->cdt;
    bool red[IR_MAX_RANK] = {0};
    red[axis] = true;
    kir_expr *ix[IR_MAX_RANK];
    kir_block *body = red_outer(c, t, red, ix);
    if (!body)
        return -1;
    int best = kir_new_acc(k, IR_I64), mx = kir_new_acc(k, ct);
    if (!kir_acc_set(k, body, best, lw_i64c(k, 0)) || !kir_acc_set(k, body, mx, fc(c, -INFINITY)))
        return -1;
    kir_block *p = red_pass(c, body, t, red, ix, KIR_SERIAL, ct);
    if (!p)
        return -1;
    kir_expr *v = red_load(c, 0, ix, ct);
    kir_expr *better = kir_op2(k, KIR_OR, IR_BOOL, kir_op2(k, KIR_EQ, IR_BOOL, ix[axis], lw_i64c(k, 0)),
                               kir_op2(k, KIR_LT, IR_BOOL, kir_acc(k, mx), v));
    if (!kir_acc_set(k, p, best, kir_op3(k, KIR_SELECT, IR_I64, better, ix[axis], kir_acc(k, best))) ||
        !kir_acc_set(k, p, mx, kir_op3(k, KIR_SELECT, ct, better, v, kir_acc(k, mx))))
        return -1;
    if (!(p = red_pass(c, body, t, red, ix, store_kind(t, red), c->n->out[0]->type.dtype)))
        return -1;
    kir_expr *hit = kir_op2(k, KIR_EQ, IR_BOOL, ix[axis], kir_acc(k, best));
    kir_expr *y = kir_op3(k, KIR_SELECT, ct, hit, fc(c, 1), fc(c, 0));
    return kir_store(k, p, c->out, ix, lw_to_out(c, y)) ? 0 : -1;
}

/* ---- LayerNormalization, RMSNormalization ---------------------------------------- */

/* Rows are the dims before axis; each is scaled by 1/sqrt(var + eps),
 * centred first for LayerNorm; Scale and B broadcast against the input.
 * LayerNorm's Mean and InvStdDev outputs (dims from axis on are 1) are
 * written per row. */
static int lower_layernorm(lctx *c, int axis)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *t = &n->in[0]->type;
    bool rms = n->op == IR_OP_RMS_NORMALIZATION;
    int bi = !rms && n->nin > 2 && n->in[2] ? 2 : -1;
    double eps = ir_attr_float(n, "epsilon", 1e-5f);
    bool red[IR_MAX_RANK] = {0};
    for (int d = axis; d < t->rank; d++)
        red[d] = true;
    kir_expr *ix[IR_MAX_RANK], *mean, *var;
    kir_block *body = red_outer_rows(c, t, red, ix);
    if (!body || moments(c, body, t, red, ix, rms, 0, &mean, &var) < 0)
        return -1;
    int inv = kir_new_acc(k, c->cdt);
    if (!kir_acc_set(k, body, inv, inv_sqrt(c, var, eps)))
        return -1;
    kir_expr *oi[IR_MAX_RANK];
    for (int d = 0; d < t->rank; d++)
        oi[d] = red[d] ? lw_i64c(k, 0) : ix[d];
    for (int o = 1; o < n->nout && o < 3; o++)
        if (n->out[o] && !kir_store(k, body, c->outs[o], oi, lw_to_out_i(c, o, o == 1 ? mean : kir_acc(k, inv))))
            return -1;
    kir_block *p = red_pass(c, body, t, red, ix, KIR_VECTOR, n->out[0]->type.dtype);
    if (!p)
        return -1;
    kir_expr *y = op2(c, KIR_MUL, op2(c, KIR_SUB, red_load(c, 0, ix, c->cdt), mean), kir_acc(k, inv));
    y = op2(c, KIR_MUL, y, red_load_bcast(c, 1, ix, t->rank, c->cdt));
    if (bi >= 0)
        y = op2(c, KIR_ADD, y, red_load_bcast(c, bi, ix, t->rank, c->cdt));
    return kir_store(k, p, c->out, ix, lw_to_out(c, lower_epi(c, y, ix))) ? 0 : -1;
}

/* ---- GroupNormalization, InstanceNormalization ------------------------------------ */

/* x is [N, C, spatial...]; statistics per (n, group) over the group's C/G
 * channels and the spatial dims; scale and bias per channel, or per group
 * when they have G values (GroupNorm of opset 18). InstanceNorm is the
 * case G = C. */
static int lower_groupnorm(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *t = &n->in[0]->type;
    bool inst = n->op == IR_OP_INSTANCE_NORMALIZATION;
    double eps = ir_attr_float(n, "epsilon", 1e-5f);
    ir_dim ch = t->dims[1], g = inst ? ch : ir_dim_const(ir_attr_int(n, "num_groups", 1));
    int64_t cg = inst ? 1 : ch.v / g.v;
    /* a view of x as [N, G, C/G, spatial...], the last rank-1 dims reduced */
    ir_type v = *t;
    v.rank = t->rank + 1;
    v.dims[1] = g;
    v.dims[2] = ir_dim_const(cg);
    for (int d = 2; d < t->rank; d++)
        v.dims[d + 1] = t->dims[d];
    bool red[IR_MAX_RANK + 1] = {0};
    for (int d = 2; d < v.rank; d++)
        red[d] = true;
    kir_expr *vi[IR_MAX_RANK + 1];
    ir_dim outer[2] = {v.dims[0], v.dims[1]};
    kir_block *body = red_nest(c, &k->body, 2, outer, vi);
    if (!body)
        return -1;
    kir_expr *mean, *var, *xi[IR_MAX_RANK];
    if (moments(c, body, &v, red, vi, false, (int)cg, &mean, &var) < 0)
        return -1;
    int inv = kir_new_acc(k, c->cdt);
    if (!kir_acc_set(k, body, inv, inv_sqrt(c, var, eps)))
        return -1;
    /* the innermost dim is unit-stride in x (a spatial dim, or the member
     * channel when there is none) */
    kir_block *p = red_pass(c, body, &v, red, vi, KIR_VECTOR, n->out[0]->type.dtype);
    if (!p)
        return -1;
    view_to_x(c, vi, (int)cg, t->rank, xi);
    kir_expr *y = op2(c, KIR_MUL, op2(c, KIR_SUB, red_load(c, 0, xi, c->cdt), mean), kir_acc(k, inv));
    const ir_type *ts = &n->in[1]->type, *tb = &n->in[2]->type;
    bool sg = !inst && !(ir_dim_is_const(ts->dims[0]) && ts->dims[0].v == ch.v);
    bool bg = !inst && !(ir_dim_is_const(tb->dims[0]) && tb->dims[0].v == ch.v);
    kir_expr *si[1] = {sg ? vi[1] : xi[1]}, *bi[1] = {bg ? vi[1] : xi[1]};
    y = op2(c, KIR_ADD, op2(c, KIR_MUL, red_load(c, 1, si, c->cdt), y), red_load(c, 2, bi, c->cdt));
    return kir_store(k, p, c->out, xi, lw_to_out(c, y)) ? 0 : -1;
}

/* ---- BatchNormalization, LRN ----------------------------------------------------- */

/* y = scale[c] * (x - mean[c]) / sqrt(var[c] + eps) + B[c], elementwise. */
static int lower_batchnorm(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *t = &n->in[0]->type;
    double eps = ir_attr_float(n, "epsilon", 1e-5f);
    bool red[IR_MAX_RANK] = {0};
    red[t->rank - 1] = true;
    kir_expr *ix[IR_MAX_RANK];
    kir_block *b = red_outer(c, t, red, ix);
    b = b ? red_pass(c, b, t, red, ix, KIR_VECTOR, n->out[0]->type.dtype) : NULL;
    if (!b)
        return -1;
    kir_expr *ci[1] = {ix[1]};
    kir_expr *sd = kir_op1(k, KIR_SQRT, c->cdt, op2(c, KIR_ADD, red_load(c, 4, ci, c->cdt), fc(c, eps)));
    kir_expr *d = op2(c, KIR_SUB, red_load(c, 0, ix, c->cdt), red_load(c, 3, ci, c->cdt));
    kir_expr *v = op2(c, KIR_DIV, d, sd);
    kir_expr *y = op2(c, KIR_ADD, op2(c, KIR_MUL, red_load(c, 1, ci, c->cdt), v), red_load(c, 2, ci, c->cdt));
    return kir_store(k, b, c->out, ix, lw_to_out(c, y)) ? 0 : -1;
}

/* y = x / (bias + alpha/size * sum of x^2 over the channels
 * [c - floor((size-1)/2), c + ceil((size-1)/2)] clipped)^beta. */
static int lower_lrn(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *t = &n->in[0]->type;
    double alpha = ir_attr_float(n, "alpha", 1e-4f), beta = ir_attr_float(n, "beta", 0.75f);
    double bias = ir_attr_float(n, "bias", 1.0f);
    int64_t size = ir_attr_int(n, "size", 1), lo = (size - 1) / 2, hi = size - 1 - lo;
    bool none[IR_MAX_RANK] = {0};
    kir_expr *ix[IR_MAX_RANK], *wi[IR_MAX_RANK];
    kir_block *b = red_outer(c, t, none, ix);
    if (!b)
        return -1;
    int sq = kir_new_acc(k, c->cdt), j = kir_new_var(k);
    if (!kir_acc_set(k, b, sq, fc(c, 0)))
        return -1;
    kir_expr *jlo = kir_op2(k, KIR_MAX, IR_I64, kir_op2(k, KIR_SUB, IR_I64, ix[1], lw_i64c(k, lo)), lw_i64c(k, 0));
    kir_expr *jhi = kir_op2(k, KIR_MIN, IR_I64, kir_iadd(k, ix[1], lw_i64c(k, hi + 1)), lw_dim_of(k, t->dims[1]));
    kir_stmt *l = kir_for(k, b, j, jlo, jhi, KIR_SERIAL, 0);
    if (!l)
        return -1;
    memcpy(wi, ix, sizeof wi);
    wi[1] = kir_var(k, j);
    kir_expr *w = red_load(c, 0, wi, c->cdt);
    if (!kir_acc_set(k, &l->body, sq, op2(c, KIR_ADD, kir_acc(k, sq), op2(c, KIR_MUL, w, w))))
        return -1;
    kir_expr *den = op2(c, KIR_MUL, fc(c, alpha / (double)size), kir_acc(k, sq));
    den = op2(c, KIR_ADD, fc(c, bias), den);
    kir_expr *y = op2(c, KIR_DIV, red_load(c, 0, ix, c->cdt), op2(c, KIR_POW, den, fc(c, beta)));
    return kir_store(k, b, c->out, ix, lw_to_out(c, y)) ? 0 : -1;
}

/* ---- LpNormalization, MeanVarianceNormalization ------------------------------------ */

/* x / ||x||_p along axis (p 1 or 2); a zero norm gives 0. */
static int lower_lpnorm(lctx *c, int axis)
{
    kir_kernel *k = c->k;
    const ir_type *t = &c->n->in[0]->type;
    bool l1 = ir_attr_int(c->n, "p", 2) == 1;
    /* the L2 norm in f64, as the reference takes it: squares of f32 below
     * 1e-19 underflow (x / ||x|| was 0 for a lone -1e-30, not -1) and
     * above 1.8e19 overflow */
    if (!l1)
        c->cdt = IR_F64;
    bool red[IR_MAX_RANK] = {0};
    red[axis] = true;
    kir_expr *ix[IR_MAX_RANK];
    kir_block *body = red_outer(c, t, red, ix);
    if (!body)
        return -1;
    int s = kir_new_acc(k, c->cdt), nr = kir_new_acc(k, c->cdt);
    stat_term st = {.abs = l1, .square = !l1};
    if (!kir_acc_set(k, body, s, fc(c, 0)) || red_reduce(c, body, t, red, ix, s, KIR_ADD, stat, &st) < 0)
        return -1;
    if (!kir_acc_set(k, body, nr, l1 ? kir_acc(k, s) : kir_op1(k, KIR_SQRT, c->cdt, kir_acc(k, s))))
        return -1;
    kir_block *p;
    if (!(p = red_pass(c, body, t, red, ix, store_kind(t, red), c->n->out[0]->type.dtype)))
        return -1;
    kir_expr *z = kir_op2(k, KIR_EQ, IR_BOOL, kir_acc(k, nr), fc(c, 0));
    kir_expr *q = op2(c, KIR_DIV, red_load(c, 0, ix, c->cdt), kir_acc(k, nr));
    kir_expr *y = kir_op3(k, KIR_SELECT, c->cdt, z, fc(c, 0), q);
    return kir_store(k, p, c->out, ix, lw_to_out(c, y)) ? 0 : -1;
}

/* The dims MVN's axes attribute (default [0, 2, 3]) names; false when one
 * is out of range. */
static bool mvn_axes(const ir_node *n, int r, bool *red)
{
    static const int64_t def[] = {0, 2, 3};
    const int64_t *ax;
    int na = ir_attr_ints(n, "axes", &ax);
    if (na < 0) {
        ax = def;
        na = 3;
    }
    memset(red, 0, sizeof(bool) * IR_MAX_RANK);
    for (int i = 0; i < na; i++) {
        int64_t a = ax[i] < 0 ? ax[i] + r : ax[i];
        if (a < 0 || a >= r)
            return false;
        red[a] = true;
    }
    return true;
}

/* (x - mean) / (sqrt(var) + 1e-9) over the axes. */
static int lower_mvn(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_type *t = &c->n->in[0]->type;
    bool red[IR_MAX_RANK];
    if (!mvn_axes(c->n, t->rank, red))
        return -1;
    kir_expr *ix[IR_MAX_RANK], *mean, *var;
    kir_block *body = red_outer(c, t, red, ix);
    if (!body || moments(c, body, t, red, ix, false, 0, &mean, &var) < 0)
        return -1;
    int den = kir_new_acc(k, c->cdt);
    if (!kir_acc_set(k, body, den, op2(c, KIR_ADD, kir_op1(k, KIR_SQRT, c->cdt, var), fc(c, 1e-9))))
        return -1;
    kir_block *p = red_pass(c, body, t, red, ix, store_kind(t, red), c->n->out[0]->type.dtype);
    if (!p)
        return -1;
    kir_expr *y = op2(c, KIR_DIV, op2(c, KIR_SUB, red_load(c, 0, ix, c->cdt), mean), kir_acc(k, den));
    return kir_store(k, p, c->out, ix, lw_to_out(c, y)) ? 0 : -1;
}

/* ---- the family ----------------------------------------------------------------- */

/* Input i is a float vector of per-channel values (C of them, or also G
 * for GroupNorm's scale and bias). */
static bool per_channel(const ir_node *n, int i, ir_dim ch, int64_t g)
{
    if (i >= n->nin || !n->in[i])
        return false;
    const ir_type *t = &n->in[i]->type;
    if (!ir_dtype_is_float(t->dtype) || t->rank != 1)
        return false;
    return ir_dim_eq(t->dims[0], ch) || (g > 0 && ir_dim_is_const(t->dims[0]) && t->dims[0].v == g);
}

/* Input i broadcasts (right-aligned) to type x. */
static bool bcasts(const ir_node *n, int i, const ir_type *x)
{
    const ir_type *t = &n->in[i]->type;
    if (!ir_dtype_is_float(t->dtype) || t->rank > x->rank)
        return false;
    for (int d = 0; d < t->rank; d++) {
        ir_dim a = t->dims[d], b = x->dims[x->rank - t->rank + d];
        if (!(ir_dim_is_const(a) && a.v == 1) && !ir_dim_eq(a, b))
            return false;
    }
    return true;
}

bool cg_can_lower_norm(const ir_node *n)
{
    if (n->nin < 1 || !n->in[0])
        return false;
    const ir_type *x = &n->in[0]->type;
    int r = x->rank, axis;
    if (!ir_dtype_is_float(x->dtype) || r < 0 || n->out[0]->type.dtype != x->dtype)
        return false;
    switch (n->op) {
    case IR_OP_SOFTMAX: case IR_OP_LOG_SOFTMAX: case IR_OP_HARDMAX:
        return n->nout == 1 && r >= 1 && norm_axis(n, -1, r, &axis);
    case IR_OP_LAYER_NORMALIZATION: case IR_OP_RMS_NORMALIZATION:
        if (r < 1 || !norm_axis(n, -1, r, &axis) || n->nin < 2 || !n->in[1] || !bcasts(n, 1, x))
            return false;
        if (n->op == IR_OP_LAYER_NORMALIZATION && n->nin > 2 && n->in[2] && !bcasts(n, 2, x))
            return false;
        for (int o = 1; o < n->nout; o++)
            if (n->out[o] && !ir_dtype_is_float(n->out[o]->type.dtype))
                return false;
        return n->nout <= 3 && (n->op == IR_OP_LAYER_NORMALIZATION || n->nout == 1);
    case IR_OP_GROUP_NORMALIZATION: {
        int64_t g = ir_attr_int(n, "num_groups", 0);
        ir_dim ch = r >= 2 ? x->dims[1] : ir_dim_unknown();
        return n->nout == 1 && r >= 2 && r < IR_MAX_RANK && g >= 1 && ir_dim_is_const(ch) && ch.v % g == 0 &&
               per_channel(n, 1, ch, g) && per_channel(n, 2, ch, g);
    }
    case IR_OP_INSTANCE_NORMALIZATION:
        return n->nout == 1 && r >= 3 && r < IR_MAX_RANK && per_channel(n, 1, x->dims[1], 0) &&
               per_channel(n, 2, x->dims[1], 0);
    case IR_OP_BATCH_NORMALIZATION:
        if (n->nout != 1 || r < 2 || ir_attr_int(n, "training_mode", 0))
            return false;
        for (int i = 1; i < 5; i++)
            if (!per_channel(n, i, x->dims[1], 0))
                return false;
        return true;
    case IR_OP_LP_NORMALIZATION: {
        int64_t p = ir_attr_int(n, "p", 2);
        return n->nout == 1 && r >= 1 && (p == 1 || p == 2) && norm_axis(n, -1, r, &axis);
    }
    case IR_OP_MEAN_VARIANCE_NORMALIZATION: {
        bool red[IR_MAX_RANK];
        return n->nout == 1 && mvn_axes(n, r, red);
    }
    case IR_OP_LRN:
        return n->nout == 1 && r >= 3 && ir_attr_int(n, "size", 0) >= 1;
    default:
        return false;
    }
}

int lower_norm(lctx *c)
{
    const ir_node *n = c->n;
    int r = n->in[0]->type.rank, axis = 0;
    switch (n->op) {
    case IR_OP_SOFTMAX: case IR_OP_LOG_SOFTMAX: case IR_OP_HARDMAX:
    case IR_OP_LAYER_NORMALIZATION: case IR_OP_RMS_NORMALIZATION: case IR_OP_LP_NORMALIZATION:
        if (!norm_axis(n, -1, r, &axis))
            return -1;
        break;
    default:
        break;
    }
    switch (n->op) {
    case IR_OP_SOFTMAX: case IR_OP_LOG_SOFTMAX: {
        const ir_type *t = &n->in[0]->type;
        ir_dim last = t->dims[r - 1];
        int w = red_width(c, c->cdt);
        if (axis < r - 1 && ir_dim_is_const(last) && last.v >= w && w <= 64)
            return lower_softmax_cols(c, axis);
        return lower_softmax(c, axis);
    }
    case IR_OP_HARDMAX: return lower_hardmax(c, axis);
    case IR_OP_LAYER_NORMALIZATION: case IR_OP_RMS_NORMALIZATION: return lower_layernorm(c, axis);
    case IR_OP_GROUP_NORMALIZATION: case IR_OP_INSTANCE_NORMALIZATION: return lower_groupnorm(c);
    case IR_OP_BATCH_NORMALIZATION: return lower_batchnorm(c);
    case IR_OP_LP_NORMALIZATION: return lower_lpnorm(c, axis);
    case IR_OP_MEAN_VARIANCE_NORMALIZATION: return lower_mvn(c);
    case IR_OP_LRN: return lower_lrn(c);
    default: return -1;
    }
}
