/* conv_dw.c - depthwise 2-D Conv (conv_direct.h) on NCHW.
 *
 * Every output channel m reads one input channel (m / mg), so there is
 * no reduction over channels to amortize a pass over the output: the
 * generic vector schedule (conv.c, lower_conv_fast) adds one tap at a
 * time into the output rows and so loads and stores each output vector
 * kh x kw times. Here, per (batch, channel) plane and output row, a
 * VECTOR loop along the row keeps the sum in a register over all the
 * row's taps: the kh taps inside the input (a range, uniform per row)
 * times the kw taps, unrolled, each one FMA with a broadcast weight and
 * a load of x at ow*s + kw*d - pad (unit stride at stride 1, a strided
 * load otherwise). The loop covers the interior [owl, owh) where every
 * kw tap is inside the row, so no load is masked; the few positions at
 * the row's ends (pad / stride of them) run as a scalar loop whose kw
 * taps are a range. The bias starts the sum and a fused epilogue is
 * applied to the final value before its one store.
 */
#include "codegen/lower/conv_direct.h"
#include "ir/ops.h"

enum { DW_MAX_UNROLL = 16 };   /* kw taps written out; wider kernels loop */


/* max(0, ceil(a / s)) for s > 0 (a truncating division clamped). */
static kir_expr *cdiv0(kir_kernel *k, kir_expr *a, int64_t s)
{
    return lw_imax(k, lw_i64c(k, 0), lw_idivc(k, lw_iaddc(k, a, s - 1), s));
}

static int64_t ceil_div0(int64_t a, int64_t s)
{
    return a <= 0 ? 0 : (a + s - 1) / s;
}

/* The begin pad of dim j: fixed, or SAME's from the run's size. */
static kir_expr *dw_pad(kir_kernel *k, const cg_conv2d *g, int j)
{
    return g->same[j] ? cg_same_pad(k, g->ind[j], g->outd[j], g->s[j], g->dk[j], g->same[j], false)
                      : lw_i64c(k, g->pb[j]);
}

/* o*s - pad: the first input position of output position o's window. */
static kir_expr *dw_start(kir_kernel *k, const cg_conv2d *g, int j, kir_expr *o)
{
    return cg_less_pad(k, lw_imulc(k, o, g->s[j]), g->same[j], g->ind[j], g->outd[j], g->s[j], g->dk[j], g->pb[j]);
}

/* Rows narrower than a vector leave the loop mostly to its scalar ends:
 * there the generic schedule, which vectorizes over the flattened plane,
 * measured faster (512 channels of 7x7: 0.045 against 0.066 ms). */
bool cg_conv_dw_ok(const lctx *c, const cg_conv2d *g)
{
    const ir_node *n = c->n;
    /* a symbolic row: taken as wide (the detectors' rows are) */
    if (n->op != IR_OP_CONV || g->cg != 1 || g->group < 2 || (!g->outd[1].sym && g->out[1] < c->s->lanes))
        return false;
    for (int i = 0; i < n->nin && i < 3; i++)
        if (n->in[i] && n->in[i]->type.dtype != IR_F32)
            return false;
    return n->out[0]->type.dtype == IR_F32 && n->in[0]->type.rank == 4;
}

typedef struct {
    const cg_conv2d *g;
    kir_expr *nb, *m, *ci, *oh, *ih0, *khlo, *khhi;
    int acc;
} dwrow;

/* acc += the taps kh in [khlo, khhi) x kw of output position ow; with
 * kwlo/kwhi (the row's ends) the kw taps are that range, else all. */
static int dw_taps(lctx *c, const dwrow *r, kir_block *b, kir_expr *ow, kir_expr *kwlo, kir_expr *kwhi)
{
    kir_kernel *k = c->k;
    const cg_conv2d *g = r->g;
    int vh = kir_new_var(k);
    kir_stmt *lh = kir_for(k, b, vh, r->khlo, r->khhi, KIR_SERIAL, 0);
    if (!lh)
        return -1;
    kir_expr *kh = kir_var(k, vh);
    kir_expr *ih = kir_iadd(k, r->ih0, lw_imulc(k, kh, g->d[0]));
    kir_expr *iw0 = dw_start(k, g, 1, ow);
    kir_block *in = &lh->body;
    bool unroll = !kwlo && g->k[1] <= DW_MAX_UNROLL;
    int64_t nkw = unroll ? g->k[1] : 1;
    for (int64_t t = 0; t < nkw; t++) {
        kir_expr *kw;
        kir_block *tb = in;
        if (unroll) {
            kw = lw_i64c(k, t);
        } else {
            int vw = kir_new_var(k);
            kir_stmt *lw = kir_for(k, in, vw, kwlo ? kwlo : lw_i64c(k, 0), kwhi ? kwhi : lw_i64c(k, g->k[1]),
                                   KIR_SERIAL, 0);
            if (!lw)
                return -1;
            tb = &lw->body;
            kw = kir_var(k, vw);
        }
        kir_expr *xi[4] = {r->nb, r->ci, ih, kir_iadd(k, iw0, lw_imulc(k, kw, g->d[1]))};
        kir_expr *wi[4] = {r->m, lw_i64c(k, 0), kh, kw};
        kir_expr *nv = kir_op3(k, KIR_FMA, IR_F32, lw_load_in(c, 0, xi), lw_load_in(c, 1, wi), kir_acc(k, r->acc));
        if (!kir_acc_set(k, tb, r->acc, nv))
            return -1;
    }
    return 0;
}

/* One loop over output positions [lo, hi) of the row: the sum from the
 * bias over the taps, the epilogue, one store. */
static int dw_span(lctx *c, const dwrow *r, kir_block *b, kir_expr *lo, kir_expr *hi, bool vector, int width)
{
    kir_kernel *k = c->k;
    const cg_conv2d *g = r->g;
    if (lo->op == KIR_CONST && hi->op == KIR_CONST && hi->c.i <= lo->c.i)
        return 0;
    int v = kir_new_var(k);
    kir_stmt *l = kir_for(k, b, v, lo, hi, vector ? KIR_VECTOR : KIR_SERIAL, vector ? width : 0);
    if (!l)
        return -1;
    if (vector)
        l->tail_mask = g->s[1] == 1;
    kir_expr *ow = kir_var(k, v);
    const ir_node *n = c->n;
    kir_expr *init = n->nin > 2 && n->in[2] ? lw_load_in(c, 2, (kir_expr *[]){r->m}) : kir_const_f(k, IR_F32, 0);
    kir_expr *kwlo = NULL, *kwhi = NULL;
    dwrow rs = *r;
    if ((rs.acc = kir_new_acc(k, IR_F32)) < 0)
        return -1;
    r = &rs;
    if (!kir_acc_set(k, &l->body, r->acc, init))
        return -1;
    if (!vector) {
        /* the kw with 0 <= ow*s + kw*d - pad < W */
        kir_expr *st = dw_start(k, g, 1, ow), *kc = lw_i64c(k, g->k[1]);
        kwlo = lw_imin(k, kc, cdiv0(k, lw_isub(k, lw_i64c(k, 0), st), g->d[1]));
        kwhi = lw_imin(k, kc, cdiv0(k, lw_isub(k, lw_dim_of(k, g->ind[1]), st), g->d[1]));
    }
    if (dw_taps(c, r, &l->body, ow, kwlo, kwhi) < 0)
        return -1;
    kir_expr *yi[4] = {r->nb, r->m, r->oh, ow};
    return kir_store(k, &l->body, c->out, yi, lw_to_out(c, lower_epi(c, kir_acc(k, r->acc), yi))) ? 0 : -1;
}

int lower_conv_dw(lctx *c, const cg_conv2d *g)
{
    kir_kernel *k = c->k;
    dwrow r = {.g = g};
    int vp = kir_new_var(k);
    kir_stmt *lp = lw_loop(c, &k->body, vp, lw_i64c(k, g->batch * g->cout), KIR_PARALLEL);
    if (!lp)
        return -1;
    r.nb = lw_idivc(k, kir_var(k, vp), g->cout);
    r.m = lw_iremc(k, kir_var(k, vp), g->cout);
    r.ci = lw_idivc(k, r.m, g->mg);
    int vh = kir_new_var(k);
    kir_stmt *lh = lw_loop(c, &lp->body, vh, lw_dim_of(k, g->outd[0]), KIR_SERIAL);
    if (!lh)
        return -1;
    r.oh = kir_var(k, vh);
    r.ih0 = dw_start(k, g, 0, r.oh);
    kir_expr *kc = lw_i64c(k, g->k[0]);
    r.khlo = lw_imin(k, kc, cdiv0(k, lw_isub(k, lw_i64c(k, 0), r.ih0), g->d[0]));
    r.khhi = lw_imin(k, kc, cdiv0(k, lw_isub(k, lw_dim_of(k, g->ind[0]), r.ih0), g->d[0]));
    /* the interior: ow*s - pad >= 0 and ow*s - pad + (kw-1)*d < W */
    int64_t OW = g->out[1];
    int64_t owl = ceil_div0(g->pb[1], g->s[1]);
    int64_t last = g->in[1] - 1 + g->pb[1] - (g->k[1] - 1) * g->d[1];   /* ow*s <= last */
    int64_t owh = last < 0 ? 0 : last / g->s[1] + 1;
    owl = owl < OW ? owl : OW;
    owh = owh < owl ? owl : owh > OW ? OW : owh;
    int width = c->s->lanes;
    kir_block *b = &lh->body;
    kir_expr *lo = lw_i64c(k, owl), *hi = lw_i64c(k, owh), *end = lw_i64c(k, OW);
    if (g->outd[1].sym || g->ind[1].sym) {
        /* the same bounds from the run's sizes: owh = floor(last / s) + 1
         * for last >= 0, else 0, clamped to [owl, OW] */
        end = lw_dim_of(k, g->outd[1]);
        kir_expr *l0 = lw_i64c(k, ceil_div0(g->pb[1], g->s[1]));
        kir_expr *lastx = lw_iaddc(k, lw_dim_of(k, g->ind[1]), g->pb[1] - 1 - (g->k[1] - 1) * g->d[1]);
        if (g->same[1]) {   /* SAME at a stride > 1: the pad is the run's */
            kir_expr *pad = dw_pad(k, g, 1);
            l0 = cdiv0(k, pad, g->s[1]);
            lastx = kir_iadd(k, lw_dim_of(k, g->ind[1]), lw_iaddc(k, pad, -1 - (g->k[1] - 1) * g->d[1]));
        }
        kir_expr *h = lw_idivc(k, lw_imax(k, lw_i64c(k, 0), lw_iaddc(k, lastx, g->s[1])), g->s[1]);
        lo = lw_imin(k, l0, end);
        hi = lw_imin(k, end, lw_imax(k, lo, h));
    }
    if (dw_span(c, &r, b, lw_i64c(k, 0), lo, false, 0) < 0 || dw_span(c, &r, b, lo, hi, true, width) < 0 ||
        dw_span(c, &r, b, hi, end, false, 0) < 0)
        return -1;
    return 0;
}
