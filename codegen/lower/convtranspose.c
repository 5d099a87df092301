/* convtranspose.c - 2-D ConvTranspose with unit dilation (conv_direct.h):
 * per output row, one vector loop per phase of the stride along W.
 *
 * Output o of one spatial dim (op = o + pad) receives tap kk of input i
 * when op = i*s + kk, so kk = r + s*t with r = op mod s (the phase) and
 * i = q - t with q = op div s. Along H this gives, per output row, a
 * range of t (uniform over the row). Along W, the outputs of one phase r
 * are every s-th position, and for them x[q - t] is contiguous in q: so
 * per phase a VECTOR loop over q sums, for the row's H taps, the phase's
 * ceil((k - r) / s) W taps and the group's input channels (innermost: x
 * and w at a constant stride), a unit-stride load of x per FMA with a
 * broadcast weight; taps whose input q - t falls outside [0, in) are
 * masked (a clamped load, selected 0). The sums go to a row of thread
 * scratch, and a scalar loop interleaves them into y (out[q*s + r - pad]),
 * applying a fused epilogue: a vector store must be contiguous, and the
 * interleave is one store per output against ~k*k*C/s^2 FMAs.
 *
 * MB output channels of a group run together (CT_MB, or the largest
 * power of two dividing the group's): each x load feeds MB FMAs, one per
 * channel's scratch row (each channel alone re-read the whole input row
 * per output channel: a detector's 24 -> 24 2x2 upsampling ran at 30
 * GFLOP/s).
 *
 * The generic lowering (conv.c) instead loops over all k x k taps per
 * input channel per output element with a divisibility test, scalar, its
 * channels innermost at a stride of a whole plane.
 */
#include "codegen/lower/conv_direct.h"
#include "ir/ops.h"

enum { CT_MAX_ROW = 1 << 16,   /* scratch row length (floats) */
       CT_UNROLL = 8,             /* input channels per pass over the row */
       CT_MB = 8,                 /* output channels per trip (4: 0.71 of one's time, 8: 0.62) */
       CT_SYM_CHUNK = 512,        /* a symbolic row's phase in pieces of this many q */
       CT_UNI_FLOATS = 1 << 16 }; /* the most scratch floats for all phases at once */

static int64_t floor_div(int64_t a, int64_t b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* Position q's place in the scratch row: from the phase's first q (qlo),
 * or from the current piece's (qa) on a symbolic row. */
static kir_expr *ct_at(kir_kernel *k, bool sym, kir_expr *q, kir_expr *qa, int64_t qlo)
{
    return sym ? kir_op2(k, KIR_SUB, IR_I64, q, qa) : lw_iaddc(k, q, -qlo);
}

bool cg_convtranspose_ok(const ir_node *n, const cg_conv2d *g)
{
    if (n->op != IR_OP_CONV_TRANSPOSE || n->in[0]->type.rank != 4 || g->cg < 1 || g->batch < 0)
        return false;
    for (int j = 0; j < 2; j++)
        if (g->d[j] != 1 || g->s[j] < 1 || g->k[j] < 1 || g->s[j] > 64)
            return false;
    if (g->in[1] + g->k[1] + 2 > CT_MAX_ROW || g->out[1] / g->s[1] + 2 > CT_MAX_ROW)
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
    int64_t sw = g->s[1], pw = g->pb[1], OW = g->out[1];
    /* a symbolic row (sym): its phases run in pieces of CT_SYM_CHUNK
     * positions, the scratch row a constant length */
    bool sym = g->sym;
    int64_t rowlen = sym ? CT_SYM_CHUNK : OW / sw + 2;
    kir_expr *iwx = lw_dim_of(k, g->ind[1]), *owx = lw_dim_of(k, g->outd[1]);
    int64_t MB = CT_MB;
    while (g->mg % MB)
        MB /= 2;
    /* every phase over the same q (kernel = stride, no padding: the 2x2
     * stride-2 upsampling of detectors and segmenters): all phases' sums
     * stay in scratch, and one vector loop over q interleaves them, its
     * stores a full group at stride s that LLVM turns into shuffles and
     * whole-vector stores (a scalar loop per phase took 2/3 of DBNet's
     * 16-channel upsampling) */
    int64_t uqlo = floor_div(pw + sw - 1, sw), uqhi = floor_div(OW - 1 + pw, sw) + 1;   /* phase 0's q */
    bool uni = !sym && MB * sw * rowlen <= CT_UNI_FLOATS && uqhi > uqlo;
    for (int64_t r = 1; r < sw && uni; r++)
        uni = floor_div(pw - r + sw - 1, sw) == uqlo && floor_div(OW - 1 + pw - r, sw) + 1 == uqhi;
    int64_t nph = uni ? sw : 1;
    int tmp = kir_add_scratch(k, "convt_row", KIR_SPACE_THREAD, IR_F32, 3, (int64_t[]){MB, nph, rowlen});
    /* parallel over (batch, block of MB output channels) and, when those
     * are fewer than min_chunks, pieces of the output rows too (DBNet's
     * last upsampling to 1 channel ran on one thread) */
    int64_t bc = g->batch * (g->cout / MB), nrc = bc >= c->s->min_chunks || bc < 1 ? 1 : (c->s->min_chunks + bc - 1) / bc;
    if (ir_dim_is_const(g->outd[0]) && nrc > g->outd[0].v)
        nrc = g->outd[0].v > 0 ? g->outd[0].v : 1;
    int vp = kir_new_var(k);
    kir_stmt *lp = lw_loop(c, &k->body, vp, lw_i64c(k, bc * nrc), KIR_PARALLEL);
    if (tmp < 0 || !lp)
        return -1;
    kir_expr *pm = lw_idivc(k, kir_var(k, vp), nrc), *rc = lw_iremc(k, kir_var(k, vp), nrc);
    kir_expr *nb = lw_idivc(k, pm, g->cout / MB), *m = lw_imulc(k, lw_iremc(k, pm, g->cout / MB), MB);
    kir_expr *c0 = lw_imulc(k, lw_idivc(k, m, g->mg), g->cg), *mw = lw_iremc(k, m, g->mg);
    kir_expr *ohn = lw_dim_of(k, g->outd[0]), *ohc = lw_idivc(k, lw_iaddc(k, ohn, nrc - 1), nrc);
    kir_expr *oh0 = kir_imul(k, rc, ohc);
    int vh = kir_new_var(k);
    kir_stmt *lh = kir_for(k, &lp->body, vh, oh0, lw_imin(k, ohn, kir_iadd(k, oh0, ohc)), KIR_SERIAL, 0);
    if (!lh)
        return -1;
    kir_block *row = &lh->body;
    kir_expr *oh = kir_var(k, vh);
    /* the row's H taps: t in [thlo, thhi), none when oh + pad < 0 */
    kir_expr *op = lw_iaddc(k, oh, g->pb[0]);
    kir_expr *opc = lw_imax(k, op, lw_i64c(k, 0));
    kir_expr *rh = lw_iremc(k, opc, g->s[0]), *qh = lw_idivc(k, opc, g->s[0]);
    kir_expr *nth = lw_idivc(k, lw_iaddc(k, kir_op2(k, KIR_SUB, IR_I64, lw_i64c(k, g->k[0]), rh), g->s[0] - 1),
                             g->s[0]);
    kir_expr *thlo = sym ? lw_imax(k, lw_i64c(k, 0), kir_op2(k, KIR_SUB, IR_I64, lw_iaddc(k, qh, 1),
                                                           lw_dim_of(k, g->ind[0])))
                         : lw_imax(k, lw_i64c(k, 0), lw_iaddc(k, qh, 1 - g->in[0]));
    kir_expr *thhi = kir_op3(k, KIR_SELECT, IR_I64, kir_op2(k, KIR_LT, IR_BOOL, op, lw_i64c(k, 0)), lw_i64c(k, 0),
                             lw_imin(k, nth, lw_iaddc(k, qh, 1)));
    kir_expr *bias[CT_MB];
    for (int64_t j = 0; j < MB; j++)
        bias[j] = n->nin > 2 && n->in[2] ? lw_load_in(c, 2, (kir_expr *[]){lw_iaddc(k, m, j)}) : kir_const_f(k, IR_F32, 0);
    for (int64_t r = 0; r < sw && (sym || r < OW + pw); r++) {
        /* this phase's outputs ow = q*s + r - pad in [0, OW) */
        int64_t qlo = floor_div(pw - r + sw - 1, sw), qhi = floor_div(OW - 1 + pw - r, sw) + 1;
        if (!sym && qhi <= qlo)
            continue;
        int64_t ntw = (g->k[1] - r + sw - 1) / sw;   /* W taps of the phase */
        kir_block *blk = row;
        kir_expr *qa = lw_i64c(k, qlo), *qb = lw_i64c(k, qhi);
        if (sym) {
            /* qhi = floor((OW - 1 + pw - r) / s) + 1, its numerator >= -s */
            kir_expr *qh1 = lw_idivc(k, lw_iaddc(k, owx, pw - r - 1 + sw), sw);
            kir_expr *nck = lw_idivc(k, lw_iaddc(k, lw_imax(k, lw_i64c(k, 0), lw_iaddc(k, qh1, -qlo)),
                                                CT_SYM_CHUNK - 1), CT_SYM_CHUNK);
            int vck = kir_new_var(k);
            kir_stmt *lck = lw_loop(c, row, vck, nck, KIR_SERIAL);
            if (!lck)
                return -1;
            blk = &lck->body;
            qa = lw_iaddc(k, lw_imulc(k, kir_var(k, vck), CT_SYM_CHUNK), qlo);
            qb = lw_imin(k, qh1, lw_iaddc(k, qa, CT_SYM_CHUNK));
        }
        /* the phase's sums start as the bias */
        int vi = kir_new_var(k);
        kir_stmt *li = kir_for(k, blk, vi, qa, qb, KIR_VECTOR, c->s->lanes);
        if (!li)
            return -1;
        li->tail_mask = true;
        kir_expr *ph = lw_i64c(k, uni ? r : 0);
        for (int64_t j = 0; j < MB; j++)
            if (!kir_store(k, &li->body, tmp,
                           (kir_expr *[]){lw_i64c(k, j), ph, ct_at(k, sym, kir_var(k, vi), qa, qlo)}, bias[j]))
                return -1;
        int vt = kir_new_var(k);
        kir_stmt *lt = kir_for(k, blk, vt, thlo, thhi, KIR_SERIAL, 0);
        if (!lt)
            return -1;
        kir_expr *th = kir_var(k, vt);
        kir_expr *ih = kir_op2(k, KIR_SUB, IR_I64, qh, th), *kh = kir_iadd(k, rh, lw_imulc(k, th, g->s[0]));
        int64_t u = g->cg < CT_UNROLL ? g->cg : CT_UNROLL, full = g->cg / u, rest = g->cg % u;
        for (int part = 0; part < 2; part++) {
            int64_t nu = part ? rest : u;
            if (nu == 0 || (!part && full == 0))
                continue;
            kir_block *cb = &lt->body;
            kir_expr *cfirst = lw_iaddc(k, c0, full * u);
            if (!part) {
                int vc = kir_new_var(k);
                kir_stmt *lc = lw_loop(c, cb, vc, lw_i64c(k, full), KIR_SERIAL);
                if (!lc)
                    return -1;
                cb = &lc->body;
                cfirst = kir_iadd(k, c0, lw_imulc(k, kir_var(k, vc), u));
            }
            for (int64_t t = 0; t < ntw; t++) {
                /* only the q whose input q - t lies in [0, IW) (a tap
                 * past the row's ends adds nothing): the loads stay
                 * contiguous, where a clamped index and a select made
                 * LLVM gather (a symbolic row's phases ran 6.8x slower
                 * than the pinned row's) */
                int vq = kir_new_var(k);
                kir_expr *q0 = lw_imax(k, qa, lw_i64c(k, t)), *q1 = lw_imin(k, qb, lw_iaddc(k, iwx, t));
                kir_stmt *lq = kir_for(k, cb, vq, q0, q1, KIR_VECTOR, c->s->lanes);
                if (!lq)
                    return -1;
                lq->tail_mask = true;
                kir_expr *q = kir_var(k, vq), *iw = lw_iaddc(k, q, -t);
                kir_expr *at = ct_at(k, sym, q, qa, qlo), *sum[CT_MB];
                for (int64_t j = 0; j < MB; j++)
                    sum[j] = kir_load(k, tmp, (kir_expr *[]){lw_i64c(k, j), ph, at});
                for (int64_t uu = 0; uu < nu; uu++) {
                    kir_expr *ch = lw_iaddc(k, cfirst, uu);
                    kir_expr *xv = kir_let(k, &lq->body, lw_load_in(c, 0, (kir_expr *[]){nb, ch, ih, iw}));
                    for (int64_t j = 0; j < MB; j++) {
                        kir_expr *wv = lw_load_in(c, 1, (kir_expr *[]){ch, lw_iaddc(k, mw, j), kh,
                                                                          lw_i64c(k, r + sw * t)});
                        sum[j] = kir_op3(k, KIR_FMA, IR_F32, xv, wv, sum[j]);
                    }
                }
                for (int64_t j = 0; j < MB; j++)
                    if (!kir_store(k, &lq->body, tmp, (kir_expr *[]){lw_i64c(k, j), ph, at}, sum[j]))
                        return -1;
            }
        }
        if (uni)
            continue;
        /* interleave the phase into the row */
        int vs = kir_new_var(k);
        kir_stmt *ls = kir_for(k, blk, vs, qa, qb, KIR_SERIAL, 0);
        if (!ls)
            return -1;
        kir_expr *qs = kir_var(k, vs);
        for (int64_t j = 0; j < MB; j++) {
            kir_expr *yi[4] = {nb, lw_iaddc(k, m, j), oh, lw_iaddc(k, lw_imulc(k, qs, sw), r - pw)};
            kir_expr *si[3] = {lw_i64c(k, j), ph, ct_at(k, sym, qs, qa, qlo)};
            kir_expr *v = lw_to_out(c, lower_epi(c, kir_load(k, tmp, si), yi));
            if (!kir_store(k, &ls->body, c->out, yi, v))
                return -1;
        }
    }
    if (!uni)
        return 0;
    /* every phase at once: output q*s + r - pad for r < s, one group of stores */
    int vs = kir_new_var(k);
    kir_stmt *ls = kir_for(k, row, vs, lw_i64c(k, uqlo), lw_i64c(k, uqhi), KIR_VECTOR, c->s->lanes);
    if (!ls)
        return -1;
    kir_expr *qs = kir_var(k, vs);
    for (int64_t j = 0; j < MB; j++)
        for (int64_t r = 0; r < sw; r++) {
            kir_expr *yi[4] = {nb, lw_iaddc(k, m, j), oh, lw_iaddc(k, lw_imulc(k, qs, sw), r - pw)};
            kir_expr *si[3] = {lw_i64c(k, j), lw_i64c(k, r), lw_iaddc(k, qs, -uqlo)};
            kir_expr *v = lw_to_out(c, lower_epi(c, kir_load(k, tmp, si), yi));
            if (!kir_store(k, &ls->body, c->out, yi, v))
                return -1;
        }
    return 0;
}
