/* pool_blocked.c - MaxPool and AveragePool on NCHWc-blocked data
 * (pool_blocked.h).
 *
 * X is [N, C/cb, H, W, cb] and the window covers one lane, so every lane
 * is an independent pool over the same (H, W) window: per (item, block,
 * output row) and output pixel, a VECTOR loop over the cb lanes keeps
 * the max or the sum in a register over the window's taps inside the
 * input, whose ranges (kh and kw) are uniform in that loop, so every load
 * is one contiguous vector and nothing is masked. The generic schedule
 * (conv.c) ran the lanes as a third, serial window dim and tracked the
 * argmax index that only MaxPool's Indices output needs (ShuffleNet's
 * 3x3 MaxPool over 24 channels at 112x112: its slowest kernel).
 * AveragePool divides by the count of inside taps, or with
 * count_include_pad by those inside the padded input.
 */
#include "codegen/lower/pool_blocked.h"
#include "ir/ops.h"

#include <math.h>

bool cg_pool_blocked_ok(const lctx *c)
{
    const ir_node *n = c->n;
    if ((n->op != IR_OP_MAX_POOL || n->nout != 1) && n->op != IR_OP_AVERAGE_POOL)
        return false;
    return n->in[0]->type.dtype == IR_F32 && n->out[0]->type.dtype == IR_F32 && n->in[0]->type.rank == 5;
}


/* The taps t in [0, kn) with a <= start + t*d < b: [lo, hi). */
static void taps(kir_kernel *k, kir_expr *start, int64_t d, int64_t kn, kir_expr *a, kir_expr *b, kir_expr **lo,
                 kir_expr **hi)
{
    kir_expr *kc = lw_i64c(k, kn);
    kir_expr *l = lw_idivc(k, lw_iaddc(k, lw_isub(k, a, start), d - 1), d);
    kir_expr *h = lw_idivc(k, lw_iaddc(k, lw_isub(k, b, start), d - 1), d);
    *lo = lw_imin(k, kc, lw_imax(k, lw_i64c(k, 0), l));
    *hi = lw_imin(k, kc, lw_imax(k, lw_i64c(k, 0), h));
}

int lower_pool_blocked(lctx *c, const cg_pool2d *g)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    bool maxp = n->op == IR_OP_MAX_POOL;
    int vp = kir_new_var(k), vw = kir_new_var(k), vj = kir_new_var(k), vh = kir_new_var(k), vx = kir_new_var(k);
    /* the extents: constants, or the run's values of symbolic dims (SPPF's
     * 5x5 pools in a YOLOv8 compiled for any image size) */
    kir_expr *in[2] = {lw_dim_of(k, g->ind[0]), lw_dim_of(k, g->ind[1])};
    kir_expr *oh_n = lw_dim_of(k, g->outd[0]), *ow_n = lw_dim_of(k, g->outd[1]);
    kir_expr *rows = kir_imul(k, lw_dim_of(k, g->bd), lw_imulc(k, oh_n, g->cin));
    kir_stmt *lp = lw_loop(c, &k->body, vp, rows, KIR_PARALLEL);
    kir_stmt *lw = lp ? lw_loop(c, &lp->body, vw, ow_n, KIR_SERIAL) : NULL;
    kir_stmt *lj = lw ? kir_for(k, &lw->body, vj, lw_i64c(k, 0), lw_i64c(k, g->lanes), KIR_VECTOR, (int)g->lanes)
                      : NULL;
    if (!lj)
        return -1;
    kir_expr *p = kir_var(k, vp), *ow = kir_var(k, vw), *j = kir_var(k, vj);
    bool sym = !ir_dim_is_const(g->outd[0]);
    kir_expr *q = sym ? kir_op2(k, KIR_DIV, IR_I64, p, oh_n) : lw_idivc(k, p, g->out[0]);
    kir_expr *nb = lw_idivc(k, q, g->cin), *cb = lw_iremc(k, q, g->cin);
    kir_expr *oh = sym ? kir_op2(k, KIR_REM, IR_I64, p, oh_n) : lw_iremc(k, p, g->out[0]);
    kir_expr *st[2] = {lw_iaddc(k, lw_imulc(k, oh, g->s[0]), -g->pb[0]), lw_iaddc(k, lw_imulc(k, ow, g->s[1]), -g->pb[1])};
    kir_expr *lo[2], *hi[2];
    for (int i = 0; i < 2; i++)
        taps(k, st[i], g->d[i], g->k[i], lw_i64c(k, 0), in[i], &lo[i], &hi[i]);
    /* MaxPool as the reference takes it: the window's first inside tap,
     * then each tap strictly greater, so a NaN counts only where it comes
     * first (a NaN-propagating max gave NaN where it came later; a window
     * with no inside tap is -inf): the first tap's value (read at an index
     * clamped into the input, when it has one) starts the max, and
     * `acc < x ? x : acc` (one vmaxps) takes the rest */
    kir_expr *init = kir_const_f(k, IR_F32, maxp ? -INFINITY : 0);
    /* an empty input has no tap to read (symbolic: the clamp keeps the
     * discarded read at the buffer's first pixel, arena memory: the
     * input is layout.c's blocked twin, never the caller's) */
    bool empty = (ir_dim_is_const(g->ind[0]) && g->in[0] <= 0) || (ir_dim_is_const(g->ind[1]) && g->in[1] <= 0);
    if (maxp && !empty) {
        kir_expr *fi[5] = {nb, cb, NULL, NULL, j};
        kir_expr *some = kir_const_i(k, IR_BOOL, 1);
        for (int i = 0; i < 2; i++) {
            kir_expr *at = kir_iadd(k, st[i], lw_imulc(k, lo[i], g->d[i]));
            fi[2 + i] = lw_imax(k, lw_i64c(k, 0), lw_imin(k, at, lw_iaddc(k, in[i], -1)));
            some = kir_op2(k, KIR_AND, IR_BOOL, some, kir_op2(k, KIR_LT, IR_BOOL, lo[i], hi[i]));
        }
        init = kir_op3(k, KIR_SELECT, IR_F32, some, lw_load_in(c, 0, fi), init);
    }
    int acc = kir_new_acc(k, IR_F32);
    if (acc < 0 || !kir_acc_set(k, &lj->body, acc, init))
        return -1;
    kir_stmt *lh = kir_for(k, &lj->body, vh, lo[0], hi[0], KIR_SERIAL, 0);
    kir_stmt *lx = lh ? kir_for(k, &lh->body, vx, lo[1], hi[1], KIR_SERIAL, 0) : NULL;
    if (!lx)
        return -1;
    kir_expr *xi[5] = {nb, cb, kir_iadd(k, st[0], lw_imulc(k, kir_var(k, vh), g->d[0])),
                       kir_iadd(k, st[1], lw_imulc(k, kir_var(k, vx), g->d[1])), j};
    kir_expr *x = lw_load_in(c, 0, xi), *a = kir_acc(k, acc);
    kir_expr *upd = maxp ? kir_op3(k, KIR_SELECT, IR_F32, kir_op2(k, KIR_LT, IR_BOOL, a, x), x, a)
                         : kir_op2(k, KIR_ADD, IR_F32, a, x);
    if (!kir_acc_set(k, &lx->body, acc, upd))
        return -1;
    kir_expr *v = kir_acc(k, acc);
    if (!maxp) {
        kir_expr *cnt = lw_i64c(k, 1);
        bool incl = ir_attr_int(n, "count_include_pad", 0) != 0;
        for (int i = 0; i < 2; i++) {
            kir_expr *a = lo[i], *e = hi[i];
            if (incl)
                taps(k, st[i], g->d[i], g->k[i], lw_i64c(k, -g->pb[i]), lw_iaddc(k, in[i], g->pe[i]), &a, &e);
            cnt = kir_imul(k, cnt, lw_imax(k, lw_i64c(k, 0), lw_isub(k, e, a)));
        }
        /* a uniform reciprocal: the widened loop has no varying division */
        kir_expr *r = kir_op2(k, KIR_DIV, IR_F32, kir_const_f(k, IR_F32, 1), kir_op1(k, KIR_CAST, IR_F32, cnt));
        v = kir_op2(k, KIR_MUL, IR_F32, v, r);
    }
    kir_expr *yi[5] = {nb, cb, oh, ow, j};
    return lw_store_out(c, &lj->body, yi, lw_to_out(c, v)) ? 0 : -1;
}
