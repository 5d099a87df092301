/* conv_dw_blocked.c - ConvDwNCHWc, the layout pass's blocked depthwise
 * 2-D convolution (ir/ref/conv_dw_blocked.c), and the blocked family's
 * dispatch between it, ConvNCHWc (conv_blocked.c) and ConvPwDwNCHWc
 * (conv_pwdw.c).
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
 * before the one store. Over a symbolic batch and plane (the layout pass
 * blocks a symbolic image's depthwise convs too) the same loops take the
 * run's sizes: the interior's bounds are index expressions, whole tiles
 * of R pixels, then the rest in tiles of 8, 4, 2 and 1.
 */
#include "codegen/lower/internal.h"
#include "ir/ops.h"

enum { DWB_MAX_UNROLL = 16 };   /* kw taps written out; wider kernels loop */

typedef struct {
    int64_t N, CB, H, W, CL, KH, KW, OH, OW;
    /* N, H, W, OH, OW as dims: symbolic ones are the run's values (their
     * int64_t fields then unused); sym: any of them is */
    ir_dim nd, hd, wd, ohd, owd;
    bool sym;
    int64_t s[2], d[2], p[4];
    kir_expr *nb, *cb, *oh, *ih0, *khlo, *khhi;
} dwb;

/* The geometry of n, checked against its operands' and result's types. */
static bool dwb_geom(const ir_node *n, dwb *g)
{
    if (n->op != IR_OP_CONV_DW_NCHWC || n->nin < 2 || n->nout != 1)
        return false;
    const ir_value *x = n->in[0], *w = n->in[1], *b = n->nin > 2 ? n->in[2] : NULL, *y = n->out[0];
    if (!lw_blocked_as(x, IR_F32) || !lw_f32_static(w, 4) || !lw_blocked_as(y, IR_F32) ||
        (b && !lw_f32_static(b, 2)))
        return false;
    *g = (dwb){0};
    const ir_dim *xd = x->type.dims, *wd = w->type.dims, *yd = y->type.dims;
    g->N = xd[0].v, g->CB = xd[1].v, g->H = xd[2].v, g->W = xd[3].v, g->CL = xd[4].v;
    g->KH = wd[1].v, g->KW = wd[2].v, g->OH = yd[2].v, g->OW = yd[3].v;
    g->nd = xd[0], g->hd = xd[2], g->wd = xd[3], g->ohd = yd[2], g->owd = yd[3];
    g->sym = !ir_type_is_static(&x->type) || !ir_type_is_static(&y->type);
    if (!lw_blocked_ints(n, "strides", 2, 1, 1, g->s) || !lw_blocked_ints(n, "dilations", 2, 1, 1, g->d) ||
        !lw_blocked_ints(n, "pads", 4, 0, 0, g->p))
        return false;
    if (wd[0].v != g->CB || wd[3].v != g->CL || !ir_dim_eq(yd[0], xd[0]) || yd[1].v != g->CB || yd[4].v != g->CL ||
        (b && (b->type.dims[0].v != g->CB || b->type.dims[1].v != g->CL)))
        return false;
    for (int i = 0; i < 2; i++) {
        /* a symbolic extent is the one shape inference derived from the
         * input's (shape_conv_dw_nchwc): a symbol in, a symbol out */
        if (xd[2 + i].sym || yd[2 + i].sym) {
            if (!xd[2 + i].sym || !yd[2 + i].sym)
                return false;
            continue;
        }
        int64_t in = i ? g->W : g->H, k = i ? g->KW : g->KH, o = i ? g->OW : g->OH;
        int64_t span = (k - 1) * g->d[i] + 1, padded = in + g->p[i] + g->p[2 + i];
        if (padded < span || (padded - span) / g->s[i] + 1 != o)
            return false;
    }
    return true;
}


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
    kir_expr *cw = lw_imin(k, lw_iaddc(k, lw_dim_of(k, g->wd), -1), lw_imax(k, lw_i64c(k, 0), iw));
    kir_expr *xi[5] = {g->nb, g->cb, ih, cw, j};
    kir_expr *ok = kir_op2(k, KIR_EQ, IR_BOOL, cw, iw);
    return kir_op3(k, KIR_SELECT, IR_F32, ok, lw_load_in(c, 0, xi), kir_const_f(k, IR_F32, 0));
}

/* Output pixels [lo, hi) of the row (hi >= lo) in tiles of R: `clamp`,
 * the last tile's extra pixels clamped to hi - 1 and recomputed; else
 * only the whole tiles, from lo (the caller runs the rest). */
static int dwb_span(lctx *c, const dwb *g, kir_block *b, kir_expr *lo, kir_expr *hi, int R, bool masked, bool clamp)
{
    kir_kernel *k = c->k;
    int64_t clo, chi;
    kir_expr *ntile;
    if (lw_const_i(lo, &clo) && lw_const_i(hi, &chi)) {
        if (chi <= clo)
            return 0;
        ntile = lw_i64c(k, clamp ? (chi - clo + R - 1) / R : (chi - clo) / R);
    } else {
        ntile = lw_idivc(k, lw_iaddc(k, lw_isub(k, hi, lo), clamp ? R - 1 : 0), R);
    }
    int vt = kir_new_var(k), vj = kir_new_var(k), vh = kir_new_var(k);
    kir_stmt *lt = kir_for(k, b, vt, lw_i64c(k, 0), ntile, KIR_SERIAL, 0);
    kir_stmt *lj = lt ? kir_for(k, &lt->body, vj, lw_i64c(k, 0), lw_i64c(k, g->CL), KIR_VECTOR, (int)g->CL) : NULL;
    if (!lj)
        return -1;
    kir_expr *j = kir_var(k, vj), *ow[16];
    int acc[16];
    const ir_node *n = c->n;
    for (int r = 0; r < R; r++) {
        ow[r] = kir_iadd(k, lw_iaddc(k, lw_imulc(k, kir_var(k, vt), R), r), lo);
        if (clamp)
            ow[r] = lw_imin(k, ow[r], lw_iaddc(k, hi, -1));
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
        if (!lw_store_out(c, &lj->body, yi, lw_to_out(c, lower_epi(c, kir_acc(k, acc[r]), yi))))
            return -1;
    }
    return 0;
}

/* The row's interior [owl, owh) where every tap is inside, as index
 * expressions (0 <= owl <= owh <= OW): ow*s - pad >= 0 and
 * ow*s - pad + (kw-1)*d < W. */
static void dwb_interior(kir_kernel *k, const dwb *g, kir_expr **owl, kir_expr **owh)
{
    int64_t lo = ceil_div0(g->p[1], g->s[1]), span = (g->KW - 1) * g->d[1];
    if (!g->sym) {
        int64_t OW = g->OW, last = g->W - 1 + g->p[1] - span;
        int64_t hi = last < 0 ? 0 : last / g->s[1] + 1;
        lo = lo < OW ? lo : OW;
        hi = hi < lo ? lo : hi > OW ? OW : hi;
        *owl = lw_i64c(k, lo), *owh = lw_i64c(k, hi);
        return;
    }
    kir_expr *OW = lw_dim_of(k, g->owd);
    *owl = lw_imin(k, lw_i64c(k, lo), OW);
    /* max(0, (last + s) / s): last / s + 1 for last >= 0, else 0 (the
     * division truncates toward 0) */
    kir_expr *last = lw_iaddc(k, lw_dim_of(k, g->wd), g->p[1] - 1 - span);
    kir_expr *hi = lw_imax(k, lw_i64c(k, 0), lw_idivc(k, lw_iaddc(k, last, g->s[1]), g->s[1]));
    *owh = lw_imin(k, lw_imax(k, hi, *owl), OW);
}

static int lower_conv_dw_blocked(lctx *c)
{
    dwb gg, *g = &gg;
    if (!dwb_geom(c->n, g))
        return -1;
    kir_kernel *k = c->k;
    kir_expr *OH = lw_dim_of(k, g->ohd), *CBOH = g->sym ? lw_imulc(k, OH, g->CB) : lw_i64c(k, g->CB * g->OH);
    kir_expr *trips = g->sym ? kir_imul(k, lw_dim_of(k, g->nd), CBOH) : lw_i64c(k, g->N * g->CB * g->OH);
    int vp = kir_new_var(k);
    kir_stmt *lp = lw_loop(c, &k->body, vp, trips, KIR_PARALLEL);
    if (!lp)
        return -1;
    kir_expr *p = kir_var(k, vp);
    if (g->sym) {
        g->nb = kir_op2(k, KIR_DIV, IR_I64, p, CBOH);
        g->cb = lw_iremc(k, kir_op2(k, KIR_DIV, IR_I64, p, OH), g->CB);
        g->oh = kir_op2(k, KIR_REM, IR_I64, p, OH);
    } else {
        g->nb = lw_idivc(k, p, g->CB * g->OH);
        g->cb = lw_iremc(k, lw_idivc(k, p, g->OH), g->CB);
        g->oh = lw_iremc(k, p, g->OH);
    }
    g->ih0 = lw_iaddc(k, lw_imulc(k, g->oh, g->s[0]), -g->p[0]);
    kir_expr *kc = lw_i64c(k, g->KH);
    g->khlo = lw_imin(k, kc, cdiv0(k, lw_isub(k, lw_i64c(k, 0), g->ih0), g->d[0]));
    g->khhi = lw_imin(k, kc, cdiv0(k, lw_isub(k, lw_dim_of(k, g->hd), g->ih0), g->d[0]));
    kir_expr *owl, *owh;
    dwb_interior(k, g, &owl, &owh);
    /* accumulators: what the registers hold beside W's vector and the
     * loads' (12 of 16 with AVX2, 28 of 32 with AVX-512) */
    int lanes = c->s->lanes >= 4 ? c->s->lanes : 4;
    int64_t regs = (g->CL + lanes - 1) / lanes;
    int most = (int)((lanes >= 16 ? 14 : 6) / regs);
    most = most < 1 ? 1 : most > 16 ? 16 : most;
    kir_block *b = &lp->body;
    kir_expr *zero = lw_i64c(k, 0), *OW = lw_dim_of(k, g->owd);
    if (dwb_span(c, g, b, zero, owl, 1, true, true) < 0)
        return -1;
    if (!g->sym) {
        int64_t lo = owl->c.i, hi = owh->c.i;
        if (dwb_span(c, g, b, owl, owh, lw_even_tile(hi - lo, most), false, true) < 0)
            return -1;
    } else {
        /* whole tiles of `most` pixels, then of 8, 4, 2 and 1 (at most one
         * each): a 7-wide row's interior of 5 is a tile of 4 and one of 1,
         * not 5 of 1 */
        kir_expr *mid = owl;
        for (int R = most; R >= 1; R = R > 8 ? 8 : R / 2) {
            if (dwb_span(c, g, b, mid, owh, R, false, false) < 0)
                return -1;
            mid = kir_iadd(k, mid, lw_imulc(k, lw_idivc(k, lw_isub(k, owh, mid), R), R));
        }
    }
    return dwb_span(c, g, b, owh, OW, 1, true, true);
}

bool cg_can_lower_blocked(const ir_node *n)
{
    dwb g;
    if (n->op == IR_OP_CONV_DW_NCHWC)
        return dwb_geom(n, &g);
    if (n->op == IR_OP_CONV_PWDW_NCHWC)
        return cg_can_lower_pwdw(n);
    return cg_can_lower_conv_blocked(n);
}

int lower_blocked(lctx *c)
{
    return c->n->op == IR_OP_CONV_DW_NCHWC     ? lower_conv_dw_blocked(c)
           : c->n->op == IR_OP_CONV_PWDW_NCHWC ? lower_pwdw(c)
                                               : lower_conv_blocked(c);
}
