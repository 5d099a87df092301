/* conv_dw_blocked.c - ConvDwNCHWc, the layout pass's blocked depthwise
 * 2-D convolution (ir/ref/conv_dw_blocked.c), and the blocked family's
 * dispatch between it and ConvNCHWc (conv_blocked.c).
 *
 * With X [N, C/cb, H, W, cb], W [C/cb, kh, kw, cb] and Y [N, C/cb, OH,
 * OW, cb], the cb channels of one pixel are contiguous in X, W and Y and
 * each output lane reads only its own input lane. So the vector loop is
 * the block's lanes (one register when cb is the target's width) and
 * nothing is ever strided, gathered or wasted on a plane narrower than a
 * vector (the NCHW schedule, conv_dw.c, vectorizes along an output row,
 * which a 7x7 plane does not fill). Per (batch item, channel block,
 * output row) the row is cut into tiles of R consecutive output pixels,
 * R accumulators each: per tap one vector load of W shared by the R
 * FMAs, whose X operand is a plain vector load. The taps along H that
 * leave the input are cut from the kh loop (a range uniform per row);
 * along W the row's interior, where every tap is inside, runs unmasked
 * and the few pixels at its ends (pad / stride of them) run one at a
 * time, each tap's load of a clamped position selected to 0 outside. So
 * padding costs no copy of the input (ConvNCHWc gets an explicitly
 * padded one). Bias starts the sums; the fused epilogue is applied once,
 * before the one store.
 */
#include "codegen/lower/internal.h"
#include "ir/ops.h"

enum { DWB_MAX_UNROLL = 16 };   /* kw taps written out; wider kernels loop */

typedef struct {
    int64_t N, CB, H, W, CL, KH, KW, OH, OW;
    int64_t s[2], d[2], p[4];
    kir_expr *nb, *cb, *oh, *ih0, *khlo, *khhi;
} dwb;

/* The geometry of n, checked against its operands' and result's types. */
static bool dwb_geom(const ir_node *n, dwb *g)
{
    if (n->op != IR_OP_CONV_DW_NCHWC || n->nin < 2 || n->nout != 1)
        return false;
    const ir_value *x = n->in[0], *w = n->in[1], *b = n->nin > 2 ? n->in[2] : NULL, *y = n->out[0];
    if (!lw_f32_static(x, 5) || !lw_f32_static(w, 4) || !lw_f32_static(y, 5) || (b && !lw_f32_static(b, 2)))
        return false;
    *g = (dwb){0};
    const ir_dim *xd = x->type.dims, *wd = w->type.dims, *yd = y->type.dims;
    g->N = xd[0].v, g->CB = xd[1].v, g->H = xd[2].v, g->W = xd[3].v, g->CL = xd[4].v;
    g->KH = wd[1].v, g->KW = wd[2].v, g->OH = yd[2].v, g->OW = yd[3].v;
    if (!lw_blocked_ints(n, "strides", 2, 1, 1, g->s) || !lw_blocked_ints(n, "dilations", 2, 1, 1, g->d) ||
        !lw_blocked_ints(n, "pads", 4, 0, 0, g->p))
        return false;
    if (wd[0].v != g->CB || wd[3].v != g->CL || yd[0].v != g->N || yd[1].v != g->CB || yd[4].v != g->CL ||
        (b && (b->type.dims[0].v != g->CB || b->type.dims[1].v != g->CL)))
        return false;
    for (int i = 0; i < 2; i++) {
        int64_t in = i ? g->W : g->H, k = i ? g->KW : g->KH, o = i ? g->OW : g->OH;
        int64_t span = (k - 1) * g->d[i] + 1, padded = in + g->p[i] + g->p[2 + i];
        if (padded < span || (padded - span) / g->s[i] + 1 != o)
            return false;
    }
    return true;
}

static kir_expr *isub(kir_kernel *k, kir_expr *a, kir_expr *b) { return kir_op2(k, KIR_SUB, IR_I64, a, b); }

/* max(0, ceil(a / s)) for s > 0. */
static kir_expr *cdiv0(kir_kernel *k, kir_expr *a, int64_t s)
{
    return lw_imax(k, lw_i64c(k, 0), lw_idivc(k, lw_iaddc(k, a, s - 1), s));
}

static int64_t ceil_div0(int64_t a, int64_t s)
{
    return a <= 0 ? 0 : (a + s - 1) / s;
}

/* X at output pixel ow, tap (kh, kw), lane j; `masked`: ow may read
 * outside the row, so a clamped position is read and selected to 0. */
static kir_expr *dwb_x(lctx *c, const dwb *g, kir_expr *ow, kir_expr *kh, kir_expr *kw, kir_expr *j, bool masked)
{
    kir_kernel *k = c->k;
    kir_expr *ih = kir_iadd(k, g->ih0, lw_imulc(k, kh, g->d[0]));
    kir_expr *iw = lw_iaddc(k, kir_iadd(k, lw_imulc(k, ow, g->s[1]), lw_imulc(k, kw, g->d[1])), -g->p[1]);
    if (!masked) {
        kir_expr *xi[5] = {g->nb, g->cb, ih, iw, j};
        return lw_load_in(c, 0, xi);
    }
    kir_expr *cw = lw_imin(k, lw_i64c(k, g->W - 1), lw_imax(k, lw_i64c(k, 0), iw));
    kir_expr *xi[5] = {g->nb, g->cb, ih, cw, j};
    kir_expr *ok = kir_op2(k, KIR_EQ, IR_BOOL, cw, iw);
    return kir_op3(k, KIR_SELECT, IR_F32, ok, lw_load_in(c, 0, xi), kir_const_f(k, IR_F32, 0));
}

/* Output pixels [lo, hi) of the row in tiles of R (the last tile's extra
 * pixels clamped to hi - 1 and recomputed). */
static int dwb_span(lctx *c, const dwb *g, kir_block *b, int64_t lo, int64_t hi, int R, bool masked)
{
    kir_kernel *k = c->k;
    if (hi <= lo)
        return 0;
    int64_t ntile = (hi - lo + R - 1) / R;
    int vt = kir_new_var(k), vj = kir_new_var(k), vh = kir_new_var(k);
    kir_stmt *lt = kir_for(k, b, vt, lw_i64c(k, 0), lw_i64c(k, ntile), KIR_SERIAL, 0);
    kir_stmt *lj = lt ? kir_for(k, &lt->body, vj, lw_i64c(k, 0), lw_i64c(k, g->CL), KIR_VECTOR, (int)g->CL) : NULL;
    if (!lj)
        return -1;
    kir_expr *j = kir_var(k, vj), *ow[16];
    int acc[16];
    const ir_node *n = c->n;
    for (int r = 0; r < R; r++) {
        ow[r] = lw_imin(k, lw_iaddc(k, lw_imulc(k, kir_var(k, vt), R), lo + r), lw_i64c(k, hi - 1));
        if ((acc[r] = kir_new_acc(k, IR_F32)) < 0)
            return -1;
        kir_expr *init = n->nin > 2 && n->in[2] ? lw_load_in(c, 2, (kir_expr *[]){g->cb, j}) : kir_const_f(k, IR_F32, 0);
        if (!kir_acc_set(k, &lj->body, acc[r], init))
            return -1;
    }
    kir_stmt *lh = kir_for(k, &lj->body, vh, g->khlo, g->khhi, KIR_SERIAL, 0);
    if (!lh)
        return -1;
    kir_expr *kh = kir_var(k, vh);
    bool unroll = g->KW <= DWB_MAX_UNROLL;
    int64_t nkw = unroll ? g->KW : 1;
    for (int64_t t = 0; t < nkw; t++) {
        kir_block *tb = &lh->body;
        kir_expr *kw;
        if (unroll) {
            kw = lw_i64c(k, t);
        } else {
            int vw = kir_new_var(k);
            kir_stmt *lw = kir_for(k, tb, vw, lw_i64c(k, 0), lw_i64c(k, g->KW), KIR_SERIAL, 0);
            if (!lw)
                return -1;
            tb = &lw->body;
            kw = kir_var(k, vw);
        }
        kir_expr *wv = lw_load_in(c, 1, (kir_expr *[]){g->cb, kh, kw, j});
        for (int r = 0; r < R; r++) {
            kir_expr *f = kir_op3(k, KIR_FMA, IR_F32, dwb_x(c, g, ow[r], kh, kw, j, masked), wv, kir_acc(k, acc[r]));
            if (!kir_acc_set(k, tb, acc[r], f))
                return -1;
        }
    }
    for (int r = 0; r < R; r++) {
        kir_expr *yi[5] = {g->nb, g->cb, g->oh, ow[r], j};
        if (!kir_store(k, &lj->body, c->out, yi, lw_to_out(c, lower_epi(c, kir_acc(k, acc[r]), yi))))
            return -1;
    }
    return 0;
}

/* Tile rows for m pixels: as even a split into tiles of at most `most`. */
static int dwb_rows(int64_t m, int most)
{
    if (m < 1)
        return 1;
    int64_t tiles = (m + most - 1) / most;
    return (int)((m + tiles - 1) / tiles);
}

static int lower_conv_dw_blocked(lctx *c)
{
    dwb gg, *g = &gg;
    if (!dwb_geom(c->n, g))
        return -1;
    kir_kernel *k = c->k;
    int vp = kir_new_var(k);
    kir_stmt *lp = lw_loop(c, &k->body, vp, lw_i64c(k, g->N * g->CB * g->OH), KIR_PARALLEL);
    if (!lp)
        return -1;
    kir_expr *p = kir_var(k, vp);
    g->nb = lw_idivc(k, p, g->CB * g->OH);
    g->cb = lw_iremc(k, lw_idivc(k, p, g->OH), g->CB);
    g->oh = lw_iremc(k, p, g->OH);
    g->ih0 = lw_iaddc(k, lw_imulc(k, g->oh, g->s[0]), -g->p[0]);
    kir_expr *kc = lw_i64c(k, g->KH);
    g->khlo = lw_imin(k, kc, cdiv0(k, isub(k, lw_i64c(k, 0), g->ih0), g->d[0]));
    g->khhi = lw_imin(k, kc, cdiv0(k, isub(k, lw_i64c(k, g->H), g->ih0), g->d[0]));
    /* the interior: ow*s - pad >= 0 and ow*s - pad + (kw-1)*d < W */
    int64_t OW = g->OW, owl = ceil_div0(g->p[1], g->s[1]);
    int64_t last = g->W - 1 + g->p[1] - (g->KW - 1) * g->d[1];
    int64_t owh = last < 0 ? 0 : last / g->s[1] + 1;
    owl = owl < OW ? owl : OW;
    owh = owh < owl ? owl : owh > OW ? OW : owh;
    /* accumulators: what the registers hold beside W's vector and the
     * loads' (12 of 16 with AVX2, 28 of 32 with AVX-512) */
    int lanes = c->s->lanes >= 4 ? c->s->lanes : 4;
    int64_t regs = (g->CL + lanes - 1) / lanes;
    int most = (int)((lanes >= 16 ? 14 : 6) / regs);
    most = most < 1 ? 1 : most > 16 ? 16 : most;
    kir_block *b = &lp->body;
    if (dwb_span(c, g, b, 0, owl, 1, true) < 0 || dwb_span(c, g, b, owl, owh, dwb_rows(owh - owl, most), false) < 0 ||
        dwb_span(c, g, b, owh, OW, 1, true) < 0)
        return -1;
    return 0;
}

bool cg_can_lower_blocked(const ir_node *n)
{
    dwb g;
    if (n->op == IR_OP_CONV_DW_NCHWC)
        return dwb_geom(n, &g);
    return cg_can_lower_conv_blocked(n);
}

int lower_blocked(lctx *c)
{
    return c->n->op == IR_OP_CONV_DW_NCHWC ? lower_conv_dw_blocked(c) : lower_conv_blocked(c);
}
