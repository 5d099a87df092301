/* convtranspose.c - 2-D ConvTranspose with unit dilation (conv_direct.h)
 * as a gather over each output position's own taps.
 *
 * Output o (one spatial dim; op = o + pad) receives tap kk of input i
 * when op = i*s + kk. So kk = r + s*t with r = op mod s, and i = q - t
 * with q = op div s: the contributing taps are t in [max(0, q - in + 1),
 * min(ceil((k - r) / s), q + 1)), a range per output position. The
 * generic lowering (conv.c) walks all k taps per dim and tests each for
 * divisibility, which for a 4x4 stride-2 kernel runs 16 iterations per
 * input channel to use 4 of them; here the loops visit exactly the 4,
 * with no test. The input channels are the innermost loop (x and w at a
 * constant stride), the taps outside it.
 */
#include "codegen/lower/conv_direct.h"
#include "ir/ops.h"

bool cg_convtranspose_ok(const ir_node *n, const cg_conv2d *g)
{
    if (n->op != IR_OP_CONV_TRANSPOSE || n->in[0]->type.rank != 4 || g->cg < 1)
        return false;
    for (int j = 0; j < 2; j++)
        if (g->d[j] != 1 || g->s[j] < 1 || g->k[j] < 1)
            return false;
    for (int i = 0; i < n->nin && i < 3; i++)
        if (n->in[i] && n->in[i]->type.dtype != IR_F32)
            return false;
    return n->out[0]->type.dtype == IR_F32;
}

int lower_convtranspose_direct(lctx *c, const cg_conv2d *g)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    int vp = kir_new_var(k);
    kir_stmt *lp = lw_loop(c, &k->body, vp, lw_i64c(k, g->batch * g->cout), KIR_PARALLEL);
    if (!lp)
        return -1;
    kir_expr *nb = lw_idivc(k, kir_var(k, vp), g->cout), *m = lw_iremc(k, kir_var(k, vp), g->cout);
    kir_expr *c0 = lw_imulc(k, lw_idivc(k, m, g->mg), g->cg), *mw = lw_iremc(k, m, g->mg);
    kir_block *b = &lp->body;
    kir_expr *o[2], *r[2], *q[2], *tlo[2], *thi[2];
    for (int j = 0; j < 2; j++) {
        int v = kir_new_var(k);
        kir_stmt *l = lw_loop(c, b, v, lw_i64c(k, g->out[j]), KIR_SERIAL);
        if (!l)
            return -1;
        b = &l->body;
        o[j] = kir_var(k, v);
        /* o + pad >= 0 whenever a tap reaches o; below 0 the range is empty */
        kir_expr *op = lw_iaddc(k, o[j], g->pb[j]);
        kir_expr *opc = lw_imax(k, op, lw_i64c(k, 0));
        r[j] = lw_iremc(k, opc, g->s[j]);
        q[j] = lw_idivc(k, opc, g->s[j]);
        kir_expr *ntaps = lw_idivc(k, lw_iaddc(k, kir_op2(k, KIR_SUB, IR_I64, lw_i64c(k, g->k[j]), r[j]), g->s[j] - 1),
                                   g->s[j]);
        tlo[j] = lw_imax(k, lw_i64c(k, 0), lw_iaddc(k, q[j], 1 - g->in[j]));
        thi[j] = lw_imin(k, ntaps, lw_iaddc(k, q[j], 1));
        /* an op below 0 has no taps: make the range empty */
        thi[j] = kir_op3(k, KIR_SELECT, IR_I64, kir_op2(k, KIR_LT, IR_BOOL, op, lw_i64c(k, 0)), lw_i64c(k, 0), thi[j]);
    }
    int acc = kir_new_acc(k, IR_F32);
    kir_expr *init = n->nin > 2 && n->in[2] ? lw_load_in(c, 2, (kir_expr *[]){m}) : kir_const_f(k, IR_F32, 0);
    if (acc < 0 || !kir_acc_set(k, b, acc, init))
        return -1;
    kir_block *in = b;
    kir_expr *t[2];
    for (int j = 0; j < 2; j++) {
        int v = kir_new_var(k);
        kir_stmt *l = kir_for(k, in, v, tlo[j], thi[j], KIR_SERIAL, 0);
        if (!l)
            return -1;
        in = &l->body;
        t[j] = kir_var(k, v);
    }
    int vc = kir_new_var(k);
    kir_stmt *lc = lw_loop(c, in, vc, lw_i64c(k, g->cg), KIR_SERIAL);
    if (!lc)
        return -1;
    kir_expr *ch = kir_iadd(k, c0, kir_var(k, vc));
    kir_expr *xi[4] = {nb, ch, kir_op2(k, KIR_SUB, IR_I64, q[0], t[0]), kir_op2(k, KIR_SUB, IR_I64, q[1], t[1])};
    kir_expr *wi[4] = {ch, mw, kir_iadd(k, r[0], lw_imulc(k, t[0], g->s[0])),
                       kir_iadd(k, r[1], lw_imulc(k, t[1], g->s[1]))};
    kir_expr *nv = kir_op3(k, KIR_FMA, IR_F32, lw_load_in(c, 0, xi), lw_load_in(c, 1, wi), kir_acc(k, acc));
    if (!kir_acc_set(k, &lc->body, acc, nv))
        return -1;
    kir_expr *yi[4] = {nb, m, o[0], o[1]};
    return kir_store(k, b, c->out, yi, lw_to_out(c, lower_epi(c, kir_acc(k, acc), yi))) ? 0 : -1;
}
