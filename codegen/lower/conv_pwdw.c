/* conv_pwdw.c - ConvPwDwNCHWc (passes/pwdw.c, ir/ref/conv_dw_blocked.c):
 * a 1x1 blocked conv, a Clip and a depthwise blocked conv in one kernel,
 * the intermediate kept out of memory.
 *
 * With X [N, CB, H, W, cb], W1 [MB, CB, 1, 1, cb, mb], W2 [MB, kh, kw,
 * mb] and Y [N, MB, OH, OW, mb], output channel block m of the depthwise
 * conv reads only block m of the 1x1 conv's result. So one parallel trip
 * is (batch item, strip of RS output rows, group of V channel blocks),
 * the groups fastest (consecutive trips, one thread's share, read the
 * same strip of X, which stays in L2); V and RS are cg_pwdw_plan's
 * (schedule.h). A trip
 *  1. computes the 1x1 conv's V blocks over the input rows its strip's
 *     windows cover, (RS - 1) s + kh of them, into T [V, rows, pl + W +
 *     pr, mb] on the thread's stack (CG_PWDW_SCRATCH_BYTES; the rows
 *     shared with the next strip computed again), clipped; rows above
 *     and below the input and the pl and pr columns are zeros, so
 *  2. the depthwise conv over T needs no bounds: per block and output
 *     row, tiles of R pixels, one W2 vector per tap shared by the R FMAs,
 *     the bias first and the fused epilogue at the one store.
 * The 1x1 conv's register tile is R pixels of a row by V vectors (the
 * blocks), each broadcast of X feeding V FMAs: with one vector the
 * broadcasts held the FMAs to half their rate. Its reduction (the input
 * channels) is short, 16 to 32 in MobileNets, so the tile's setup, the
 * Clip and the stores weigh: constant bounds take a compare and a blend
 * each (lw_max_const). Static sizes only (the pass fuses static ones).
 */
#include "codegen/lower/internal.h"
#include "codegen/schedule.h"
#include "ir/ops.h"

#include <string.h>

/* the most accumulators either tile takes (the schedule's pwdw_acc and
 * pwdw_dw_acc are at most these) */
enum { PD_MOST = 28, PD_DW_MOST = 14 };

typedef struct {
    int64_t N, CB, H, W, CL, MB, ML, KH, KW, OH, OW, Wp;
    int64_t s[2], p[4];
    int V;                        /* channel blocks per trip */
    int64_t RS, S, TR;            /* output rows per strip, strips, scratch rows */
} pwdw;

static bool pd_geom(const ir_node *n, pwdw *g)
{
    if (n->op != IR_OP_CONV_PWDW_NCHWC || n->nin < 3 || n->nout != 1)
        return false;
    const ir_value *x = n->in[0], *w1 = n->in[1], *w2 = n->in[2], *y = n->out[0];
    const ir_value *b1 = n->nin > 3 ? n->in[3] : NULL, *b2 = n->nin > 4 ? n->in[4] : NULL;
    if (!x || !w1 || !w2 || !lw_static_as(x, 5, IR_F32) || !lw_f32_static(w1, 6) || (b1 && !lw_f32_static(b1, 2)) ||
        !lw_f32_static(w2, 4) || (b2 && !lw_f32_static(b2, 2)) || !lw_static_as(y, 5, IR_F32))
        return false;
    for (int i = 5; i < n->nin; i++)
        if (n->in[i] && (n->in[i]->type.dtype != IR_F32 || !ir_type_is_static(&n->in[i]->type)))
            return false;
    const char *act = ir_attr_string(n, "activation", "clip");
    if (strcmp(act, "clip") && strcmp(act, "silu") && strcmp(act, "hardswish"))
        return false;
    *g = (pwdw){0};
    const ir_dim *xd = x->type.dims, *wd = w1->type.dims, *vd = w2->type.dims, *yd = y->type.dims;
    g->N = xd[0].v, g->CB = xd[1].v, g->H = xd[2].v, g->W = xd[3].v, g->CL = xd[4].v;
    g->MB = wd[0].v, g->ML = wd[5].v, g->KH = vd[1].v, g->KW = vd[2].v, g->OH = yd[2].v, g->OW = yd[3].v;
    int64_t dl[2];
    if (!lw_blocked_ints(n, "strides", 2, 1, 1, g->s) || !lw_blocked_ints(n, "dilations", 2, 1, 1, dl) ||
        !lw_blocked_ints(n, "pads", 4, 0, 0, g->p) || dl[0] != 1 || dl[1] != 1)
        return false;
    if (wd[1].v != g->CB || wd[2].v != 1 || wd[3].v != 1 || wd[4].v != g->CL || vd[0].v != g->MB ||
        vd[3].v != g->ML || yd[0].v != g->N || yd[1].v != g->MB || yd[4].v != g->ML)
        return false;
    g->Wp = g->W + g->p[1] + g->p[3];
    /* the windows fit the padded input (shape inference's extents) */
    if (g->H + g->p[0] + g->p[2] < g->KH || g->Wp < g->KW || (g->H + g->p[0] + g->p[2] - g->KH) / g->s[0] + 1 != g->OH ||
        (g->Wp - g->KW) / g->s[1] + 1 != g->OW)
        return false;
    if (!cg_pwdw_plan(g->MB, g->ML, g->OH, g->Wp, g->KH, g->s[0], &g->V, &g->RS))
        return false;
    g->S = (g->OH + g->RS - 1) / g->RS;
    g->TR = (g->RS - 1) * g->s[0] + g->KH;
    return true;
}

bool cg_can_lower_pwdw(const ir_node *n)
{
    pwdw g;
    return pd_geom(n, &g);
}

/* Zeros T's rows [lo, hi), columns [c0, c1) (constants or expressions). */
static int pd_zero(lctx *c, const pwdw *g, kir_block *b, int t, kir_expr *lo, kir_expr *hi, int64_t c0, int64_t c1)
{
    kir_kernel *k = c->k;
    if (c1 <= c0)
        return 0;
    int vv = kir_new_var(k), vr = kir_new_var(k), vc = kir_new_var(k), vj = kir_new_var(k);
    kir_stmt *lv = kir_for(k, b, vv, lw_i64c(k, 0), lw_i64c(k, g->V), KIR_SERIAL, 0);
    kir_stmt *lr = lv ? kir_for(k, &lv->body, vr, lo, hi, KIR_SERIAL, 0) : NULL;
    kir_stmt *lc = lr ? kir_for(k, &lr->body, vc, lw_i64c(k, c0), lw_i64c(k, c1), KIR_SERIAL, 0) : NULL;
    kir_stmt *lj = lc ? kir_for(k, &lc->body, vj, lw_i64c(k, 0), lw_i64c(k, g->ML), KIR_VECTOR, (int)g->ML) : NULL;
    if (!lj)
        return -1;
    kir_expr *ti[4] = {kir_var(k, vv), kir_var(k, vr), kir_var(k, vc), kir_var(k, vj)};
    return kir_store(k, &lj->body, t, ti, kir_const_f(k, IR_F32, 0)) ? 0 : -1;
}

/* Step 1 for T's rows [lo, hi) of the trip's V blocks from mb0: row tr
 * is input row ih0 + tr. A register tile of R pixels x V vectors. */
static int pd_pointwise(lctx *c, const pwdw *g, kir_block *b, int t, kir_expr *nb, kir_expr *mb0, kir_expr *ih0,
                        kir_expr *lo, kir_expr *hi)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    int most = c->s->pwdw_acc < PD_MOST ? c->s->pwdw_acc : PD_MOST;
    int V = g->V, R = lw_even_tile(g->W, most / V > 0 ? most / V : 1);
    int64_t NT = (g->W + R - 1) / R;
    int vr = kir_new_var(k), vt = kir_new_var(k), vj = kir_new_var(k);
    kir_stmt *lr = kir_for(k, b, vr, lo, hi, KIR_SERIAL, 0);
    kir_stmt *lt = lr ? kir_for(k, &lr->body, vt, lw_i64c(k, 0), lw_i64c(k, NT), KIR_SERIAL, 0) : NULL;
    kir_stmt *lj = lt ? kir_for(k, &lt->body, vj, lw_i64c(k, 0), lw_i64c(k, g->ML), KIR_VECTOR, (int)g->ML) : NULL;
    if (!lj)
        return -1;
    kir_expr *tr = kir_var(k, vr), *ih = kir_iadd(k, ih0, tr), *j = kir_var(k, vj), *px[PD_MOST], *mb[4];
    int acc[4][PD_MOST];
    for (int v = 0; v < V; v++) {
        mb[v] = lw_iaddc(k, mb0, v);
        kir_expr *init = n->nin > 3 && n->in[3] ? lw_load_in(c, 3, (kir_expr *[]){mb[v], j}) : kir_const_f(k, IR_F32, 0);
        for (int r = 0; r < R; r++)
            if ((acc[v][r] = kir_new_acc(k, IR_F32)) < 0 || !kir_acc_set(k, &lj->body, acc[v][r], init))
                return -1;
    }
    for (int r = 0; r < R; r++)
        px[r] = lw_imin(k, lw_iaddc(k, lw_imulc(k, kir_var(k, vt), R), r), lw_i64c(k, g->W - 1));
    int vb = kir_new_var(k), vi = kir_new_var(k);
    kir_stmt *lb = kir_for(k, &lj->body, vb, lw_i64c(k, 0), lw_i64c(k, g->CB), KIR_SERIAL, 0);
    kir_stmt *li = lb ? kir_for(k, &lb->body, vi, lw_i64c(k, 0), lw_i64c(k, g->CL), KIR_SERIAL, 0) : NULL;
    if (!li)
        return -1;
    kir_expr *icb = kir_var(k, vb), *ic = kir_var(k, vi), *z = lw_i64c(k, 0), *wv[4];
    for (int v = 0; v < V; v++)
        if (!(wv[v] = kir_let(k, &li->body, lw_load_in(c, 1, (kir_expr *[]){mb[v], icb, z, z, ic, j}))))
            return -1;
    for (int r = 0; r < R; r++) {
        kir_expr *xv = kir_let(k, &li->body, lw_load_in(c, 0, (kir_expr *[]){nb, icb, ih, px[r], ic}));
        for (int v = 0; v < V; v++)
            if (!kir_acc_set(k, &li->body, acc[v][r], kir_op3(k, KIR_FMA, IR_F32, xv, wv[v], kir_acc(k, acc[v][r]))))
                return -1;
    }
    /* the activation: SiLU as Sigmoid and Mul compute it (elementwise.c);
     * HardSwish x * HardSigmoid(x); a Clip (lower bound first, as the
     * op), on constant bounds a compare and a blend each (lw_max_const) */
    char act = ir_attr_string(n, "activation", "clip")[0];
    const ir_value *bl = n->nin > 5 ? n->in[5] : NULL, *bh = n->nin > 6 ? n->in[6] : NULL;
    kir_expr *lov = bl && bl->kind != IR_VAL_CONST ? lw_scalar_in(c, 5, IR_F32) : NULL;
    kir_expr *hiv = bh && bh->kind != IR_VAL_CONST ? lw_scalar_in(c, 6, IR_F32) : NULL;
    for (int v = 0; v < V; v++)
        for (int r = 0; r < R; r++) {
            kir_expr *x = kir_acc(k, acc[v][r]);
            if (act == 's')
                x = kir_op2(k, KIR_MUL, IR_F32, x, lw_sigmoid(k, IR_F32, x));
            else if (act == 'h')
                x = kir_op2(k, KIR_MUL, IR_F32, x, lw_hard_sigmoid(k, IR_F32, x, 1.0 / 6, 0.5));
            if (bl)
                x = lov ? kir_op2(k, KIR_MAX, IR_F32, x, lov) : lw_max_const(k, IR_F32, x, ir_tensor_getf(&bl->cval, 0));
            if (bh)
                x = hiv ? kir_op2(k, KIR_MIN, IR_F32, x, hiv) : lw_min_const(k, IR_F32, x, ir_tensor_getf(&bh->cval, 0));
            kir_expr *ti[4] = {lw_i64c(k, v), tr, lw_iaddc(k, px[r], g->p[1]), j};
            if (!kir_store(k, &lj->body, t, ti, x))
                return -1;
        }
    return 0;
}

/* Step 2: the depthwise conv of the strip's rows [0, rs) from T. */
static int pd_depthwise(lctx *c, const pwdw *g, kir_block *b, int t, kir_expr *nb, kir_expr *mb0, kir_expr *oh0,
                        kir_expr *rs)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    int R = lw_even_tile(g->OW, c->s->pwdw_dw_acc < PD_DW_MOST && c->s->pwdw_dw_acc > 0 ? c->s->pwdw_dw_acc : PD_DW_MOST);
    int64_t NT = (g->OW + R - 1) / R;
    int vv = kir_new_var(k), vr = kir_new_var(k), vt = kir_new_var(k), vj = kir_new_var(k), vh = kir_new_var(k);
    kir_stmt *lv = kir_for(k, b, vv, lw_i64c(k, 0), lw_i64c(k, g->V), KIR_SERIAL, 0);
    kir_stmt *lr = lv ? kir_for(k, &lv->body, vr, lw_i64c(k, 0), rs, KIR_SERIAL, 0) : NULL;
    kir_stmt *lt = lr ? kir_for(k, &lr->body, vt, lw_i64c(k, 0), lw_i64c(k, NT), KIR_SERIAL, 0) : NULL;
    kir_stmt *lj = lt ? kir_for(k, &lt->body, vj, lw_i64c(k, 0), lw_i64c(k, g->ML), KIR_VECTOR, (int)g->ML) : NULL;
    if (!lj)
        return -1;
    kir_expr *v = kir_var(k, vv), *mb = kir_iadd(k, mb0, v), *i = kir_var(k, vr), *j = kir_var(k, vj), *ow[PD_DW_MOST];
    int acc[PD_DW_MOST];
    kir_expr *init = n->nin > 4 && n->in[4] ? lw_load_in(c, 4, (kir_expr *[]){mb, j}) : kir_const_f(k, IR_F32, 0);
    for (int r = 0; r < R; r++) {
        ow[r] = lw_imin(k, lw_iaddc(k, lw_imulc(k, kir_var(k, vt), R), r), lw_i64c(k, g->OW - 1));
        if ((acc[r] = kir_new_acc(k, IR_F32)) < 0 || !kir_acc_set(k, &lj->body, acc[r], init))
            return -1;
    }
    kir_stmt *lh = kir_for(k, &lj->body, vh, lw_i64c(k, 0), lw_i64c(k, g->KH), KIR_SERIAL, 0);
    if (!lh)
        return -1;
    kir_expr *kh = kir_var(k, vh), *row = kir_iadd(k, lw_imulc(k, i, g->s[0]), kh);
    for (int64_t kw = 0; kw < g->KW; kw++) {
        kir_expr *wv = lw_load_in(c, 2, (kir_expr *[]){mb, kh, lw_i64c(k, kw), j});
        for (int r = 0; r < R; r++) {
            kir_expr *ti[4] = {v, row, lw_iaddc(k, lw_imulc(k, ow[r], g->s[1]), kw), j};
            kir_expr *f = kir_op3(k, KIR_FMA, IR_F32, kir_load(k, t, ti), wv, kir_acc(k, acc[r]));
            if (!kir_acc_set(k, &lh->body, acc[r], f))
                return -1;
        }
    }
    for (int r = 0; r < R; r++) {
        kir_expr *yi[5] = {nb, mb, kir_iadd(k, oh0, i), ow[r], j};
        if (!kir_store(k, &lj->body, c->out, yi, lw_to_out(c, lower_epi(c, kir_acc(k, acc[r]), yi))))
            return -1;
    }
    return 0;
}

int lower_pwdw(lctx *c)
{
    pwdw gg, *g = &gg;
    if (!pd_geom(c->n, g))
        return -1;
    kir_kernel *k = c->k;
    int t = kir_add_scratch(k, "pwdw_mid", KIR_SPACE_THREAD, IR_F32, 4, (int64_t[]){g->V, g->TR, g->Wp, g->ML});
    if (t < 0)
        return -1;
    int vp = kir_new_var(k);
    int64_t G = g->MB / g->V;
    kir_stmt *lp = lw_loop(c, &k->body, vp, lw_i64c(k, g->N * g->S * G), KIR_PARALLEL);
    if (!lp)
        return -1;
    /* trips (batch item, strip, group of V channel blocks), the groups
     * fastest */
    kir_expr *p = kir_var(k, vp);
    kir_expr *mb = lw_imulc(k, lw_iremc(k, p, G), g->V), *st = lw_iremc(k, lw_idivc(k, p, G), g->S);
    kir_expr *nb = g->N > 1 ? lw_idivc(k, p, G * g->S) : lw_i64c(k, 0);
    kir_block *b = &lp->body;
    /* the strip: output rows [oh0, oh0 + rs), T's row r input row ih0 + r,
     * `need` of them read; input rows inside [tlo, thi) */
    kir_expr *oh0 = kir_let(k, b, lw_imulc(k, st, g->RS));
    kir_expr *rs = kir_let(k, b, lw_imin(k, lw_i64c(k, g->RS), lw_isub(k, lw_i64c(k, g->OH), oh0)));
    kir_expr *ih0 = kir_let(k, b, lw_iaddc(k, lw_imulc(k, oh0, g->s[0]), -g->p[0]));
    kir_expr *need = kir_let(k, b, lw_iaddc(k, lw_imulc(k, lw_iaddc(k, rs, -1), g->s[0]), g->KH));
    kir_expr *tlo = kir_let(k, b, lw_imin(k, need, lw_imax(k, lw_i64c(k, 0), lw_isub(k, lw_i64c(k, 0), ih0))));
    kir_expr *thi = kir_let(k, b, lw_imin(k, need, lw_imax(k, tlo, lw_isub(k, lw_i64c(k, g->H), ih0))));
    if (!thi || pd_zero(c, g, b, t, lw_i64c(k, 0), tlo, 0, g->Wp) < 0 || pd_zero(c, g, b, t, thi, need, 0, g->Wp) < 0 ||
        pd_zero(c, g, b, t, tlo, thi, 0, g->p[1]) < 0 || pd_zero(c, g, b, t, tlo, thi, g->p[1] + g->W, g->Wp) < 0 ||
        pd_pointwise(c, g, b, t, nb, mb, ih0, tlo, thi) < 0)
        return -1;
    return pd_depthwise(c, g, b, t, nb, mb, oh0, rs);
}
