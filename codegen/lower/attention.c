/* attention.c - Attention (ir/ref/attention.c for its semantics) as
 * one kernel that never stores the [Sq, T] scores, by the online softmax:
 * the output rows themselves accumulate sum_j e^(s_j - m) V[j] while the
 * running row max m and sum l live in accumulators; when a block of keys
 * raises m, what was accumulated is rescaled by e^(m_old - m_new), and
 * the rows are divided by l at the end.
 *
 *   parallel p in [0, B * Hq * Sq/R)            (batch, head, block of R rows)
 *     Y[rows] = 0; m_r = -inf; l_r = 0
 *     for jb in [0, ceil(T / J))                 (blocks of J keys)
 *       s_rj = sum_d Q[row r, d] K[key j, d]     one VECTOR loop over d, R x J
 *                                                carried sums (both loads contiguous)
 *       s_rj = bias(softcap(scale * s_rj))       mask, causal, padding: -inf
 *       m' = max(m, s_r.); c = e^(m - m'); p_rj = e^(s_rj - m')
 *       l_r = c l_r + sum_j p_rj;  m_r = m'
 *       Y[row r, e] = c Y[row r, e] + sum_j p_rj V[key j, e]   VECTOR loop over e
 *     Y[rows] /= l_r
 *
 * A block's R x J scores stay in registers; the rescaling costs one
 * exponential per row and block. A max of -inf (every key so far masked)
 * is replaced by 0 in the exponents so that nothing computes -inf - -inf;
 * a row with every key masked ends as 0/0 = NaN, like the reference. Keys
 * past T in the last block read the last key and are masked; R divides Sq
 * because the rows accumulate in memory, where two blocks sharing a row
 * would add twice. The caches present_key/present_value are copied by the
 * iteration of each kv head's first query head and first row block; the
 * scores output (qk_matmul_output) is stored as the scores are computed,
 * and in mode 3 turned into probabilities once the row's m and l are final.
 * Needs constant shapes and f32/f64 data: the output rows are the
 * accumulator, which f16 would round at every key block.
 */
#include "codegen/lower/internal.h"
#include "ir/ops.h"

#include <math.h>

enum {
    ROWS = 8,     /* query rows of a block */
    KEYS = 2,     /* keys of a block: ROWS x KEYS scores in registers */
};

typedef struct {
    bool three;
    int64_t b, hq, hkv, sq, skv, d, dv, past, total, reps, rows, nqb;
    int64_t mlen;                /* the mask's last dim */
    double scale, cap;
    bool causal;
    int mode;
    /* per parallel iteration */
    kir_expr *bi, *hi, *khi;
} att_geo;

static bool const_type(const ir_type *t)
{
    if (t->rank < 0)
        return false;
    for (int i = 0; i < t->rank; i++)
        if (!ir_dim_is_const(t->dims[i]) || t->dims[i].v < 0)
            return false;
    return true;
}

static void geo_init(const ir_node *n, att_geo *g)
{
    const ir_type *q = &n->in[0]->type, *k = &n->in[1]->type, *v = &n->in[2]->type;
    g->three = q->rank == 3;
    g->b = q->dims[0].v;
    if (g->three) {
        g->hq = ir_attr_int(n, "q_num_heads", 1);
        g->hkv = ir_attr_int(n, "kv_num_heads", 1);
        g->sq = q->dims[1].v;
        g->skv = k->dims[1].v;
        g->d = g->hq > 0 ? q->dims[2].v / g->hq : 0;
        g->dv = g->hkv > 0 ? v->dims[2].v / g->hkv : 0;
    } else {
        g->hq = q->dims[1].v;
        g->hkv = k->dims[1].v;
        g->sq = q->dims[2].v;
        g->skv = k->dims[2].v;
        g->d = q->dims[3].v;
        g->dv = v->dims[3].v;
    }
    g->past = n->nin > 4 && n->in[4] ? n->in[4]->type.dims[2].v : 0;
    g->total = g->past + g->skv;
    g->reps = g->hkv > 0 ? g->hq / g->hkv : 0;
    const ir_value *m = n->nin > 3 ? n->in[3] : NULL;
    g->mlen = m ? m->type.dims[m->type.rank - 1].v : 0;
    g->rows = 1;
    for (int r = ROWS; r > 1; r--)
        if (g->sq % r == 0) {
            g->rows = r;
            break;
        }
    g->nqb = g->rows ? g->sq / g->rows : 0;
    g->scale = ir_attr_float(n, "scale", (float)(1.0 / sqrt((double)(g->d > 0 ? g->d : 1))));
    g->cap = ir_attr_float(n, "softcap", 0);
    g->causal = ir_attr_int(n, "is_causal", 0) != 0;
    g->mode = (int)ir_attr_int(n, "qk_matmul_output_mode", 0);
}

bool cg_can_lower_attention(const ir_node *n)
{
    if (n->op != IR_OP_ATTENTION || n->nin < 3)
        return false;
    ir_dtype dt = n->in[0]->type.dtype;
    if (dt != IR_F32 && dt != IR_F64)
        return false;
    for (int i = 0; i < n->nin; i++)
        if (n->in[i] && !const_type(&n->in[i]->type))
            return false;
    for (int i = 0; i < n->nout; i++)
        if (!const_type(&n->out[i]->type) || n->out[i]->type.dtype != dt)
            return false;
    att_geo g;
    geo_init(n, &g);
    /* the shape function checked the rest; empty problems stay with the
     * interpreter's definition (NaN over no keys) */
    return g.b > 0 && g.hq > 0 && g.hkv > 0 && g.sq > 0 && g.total > 0 && g.d > 0 && g.dv > 0 &&
           g.hq % g.hkv == 0 && (n->in[0]->type.rank == 3 || n->in[0]->type.rank == 4);
}

static kir_expr *irem(kir_kernel *k, kir_expr *a, int64_t b) { return kir_op2(k, KIR_REM, IR_I64, a, lw_i64c(k, b)); }
static kir_expr *iminc(kir_kernel *k, kir_expr *a, int64_t b) { return kir_op2(k, KIR_MIN, IR_I64, a, lw_i64c(k, b)); }
static kir_expr *imaxc(kir_kernel *k, kir_expr *a, int64_t b) { return kir_op2(k, KIR_MAX, IR_I64, a, lw_i64c(k, b)); }

static kir_expr *fc(lctx *c, double v) { return kir_const_f(c->k, c->cdt, v); }
static kir_expr *op2(lctx *c, kir_op op, kir_expr *a, kir_expr *b) { return kir_op2(c->k, op, c->cdt, a, b); }

static void y_idx(lctx *c, const att_geo *g, kir_expr *i, kir_expr *e, kir_expr **ix)
{
    kir_kernel *k = c->k;
    if (g->three) {
        ix[0] = g->bi;
        ix[1] = i;
        ix[2] = kir_iadd(k, kir_imul(k, g->hi, lw_i64c(k, g->dv)), e);
    } else {
        ix[0] = g->bi;
        ix[1] = g->hi;
        ix[2] = i;
        ix[3] = e;
    }
}

/* Key (val: value) j of the current kv head, element e, in the compute
 * dtype: the past cache for j < past, the new tokens after it. The index
 * of the side not taken is clamped into its buffer. */
static kir_expr *kv_at(lctx *c, const att_geo *g, bool val, kir_expr *j, kir_expr *e)
{
    kir_kernel *k = c->k;
    int cur = val ? 2 : 1, old = val ? 5 : 4;
    int64_t w = val ? g->dv : g->d;
    kir_expr *jn = g->past ? imaxc(k, kir_iadd(k, j, lw_i64c(k, -g->past)), 0) : j, *ix[4];
    if (g->three) {
        ix[0] = g->bi;
        ix[1] = jn;
        ix[2] = kir_iadd(k, kir_imul(k, g->khi, lw_i64c(k, w)), e);
    } else {
        ix[0] = g->bi;
        ix[1] = g->khi;
        ix[2] = jn;
        ix[3] = e;
    }
    kir_expr *now = lw_load_in(c, cur, ix);
    if (!g->past)
        return now;
    kir_expr *px[4] = {g->bi, g->khi, iminc(k, j, g->past - 1), e};
    kir_expr *was = lw_load_in(c, old, px);
    return kir_op3(k, KIR_SELECT, c->cdt, kir_op2(k, KIR_LT, IR_BOOL, j, lw_i64c(k, g->past)), was, now);
}

/* The score's bias terms: x unless masked out (-inf), plus an additive
 * mask; jraw is the unclamped key index (>= T in the last block's tail). */
static kir_expr *bias(lctx *c, const att_geo *g, kir_expr *x, kir_expr *i, kir_expr *j, kir_expr *jraw)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    kir_expr *ninf = fc(c, -INFINITY);
    kir_expr *hidden = kir_op2(k, KIR_LE, IR_BOOL, lw_i64c(k, g->total), jraw);
    if (n->nin > 3 && n->in[3]) {
        const ir_type *mt = &n->in[3]->type;
        kir_expr *full[4] = {g->bi, g->hi, i, iminc(k, j, g->mlen - 1)}, *ix[4];
        for (int d = 0; d < mt->rank; d++) {
            int od = 4 - mt->rank + d;
            ix[d] = mt->dims[d].v == 1 ? lw_i64c(k, 0) : full[od];
        }
        kir_expr *mv = kir_load(k, c->buf[3], ix);
        if (mt->dtype == IR_BOOL) {
            x = kir_op3(k, KIR_SELECT, c->cdt, mv, x, ninf);
        } else {
            if (mv->dtype != c->cdt)
                mv = kir_op1(k, KIR_CAST, c->cdt, mv);
            x = op2(c, KIR_ADD, x, mv);
        }
        if (g->mlen < g->total)
            hidden = kir_op2(k, KIR_OR, IR_BOOL, hidden, kir_op2(k, KIR_LE, IR_BOOL, lw_i64c(k, g->mlen), j));
    }
    if (g->causal)
        hidden = kir_op2(k, KIR_OR, IR_BOOL, hidden,
                         kir_op2(k, KIR_LT, IR_BOOL, kir_iadd(k, i, lw_i64c(k, g->past)), j));
    if (n->nin > 6 && n->in[6]) {
        kir_expr *bx[1] = {g->bi};
        kir_expr *len = kir_load(k, c->buf[6], bx);
        hidden = kir_op2(k, KIR_OR, IR_BOOL, hidden, kir_op2(k, KIR_LE, IR_BOOL, len, j));
    }
    return kir_op3(k, KIR_SELECT, c->cdt, hidden, ninf, x);
}

/* present_key / present_value of the current kv head: the concatenation. */
static int copy_present(lctx *c, const att_geo *g, kir_block *b)
{
    kir_kernel *k = c->k;
    for (int o = 1; o < 3 && o < c->n->nout; o++) {
        int jv = kir_new_var(k), ev = kir_new_var(k);
        kir_stmt *lj = lw_loop(c, b, jv, lw_i64c(k, g->total), KIR_SERIAL);
        kir_stmt *le = lj ? lw_loop(c, &lj->body, ev, lw_i64c(k, o == 1 ? g->d : g->dv), KIR_VECTOR) : NULL;
        if (!le)
            return -1;
        le->width = c->s->lanes;
        kir_expr *j = kir_var(k, jv), *e = kir_var(k, ev);
        kir_expr *ix[4] = {g->bi, g->khi, j, e};
        if (!kir_store(k, &le->body, c->outs[o], ix, lw_to_out_i(c, o, kv_at(c, g, o == 2, j, e))))
            return -1;
    }
    return 0;
}

static void qk_idx(const att_geo *g, kir_expr *i, kir_expr *j, kir_expr **ix)
{
    ix[0] = g->bi;
    ix[1] = g->hi;
    ix[2] = i;
    ix[3] = j;
}

/* Appends a VECTOR loop over [0, n) and returns the block its statements
 * go in: a one-trip serial loop inside it, so that the emitter widens the
 * vector loop itself (docs/kernel-ir.md). Left to LLVM's vectoriser, the
 * loops that read and write several rows of Y stay scalar: it cannot
 * prove the rows apart. */
static kir_block *rows_loop(lctx *c, kir_block *b, int64_t n, int width, kir_expr **e)
{
    kir_kernel *k = c->k;
    int ev = kir_new_var(k), tv = kir_new_var(k);
    kir_stmt *lv = kir_for(k, b, ev, lw_i64c(k, 0), lw_i64c(k, n), KIR_VECTOR, width);
    kir_stmt *lt = lv ? lw_loop(c, &lv->body, tv, lw_i64c(k, 1), KIR_SERIAL) : NULL;
    *e = kir_var(k, ev);
    return lt ? &lt->body : NULL;
}

int lower_attention(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    att_geo g;
    geo_init(n, &g);
    ir_dtype ct = c->cdt;
    int R = (int)g.rows, J = KEYS;
    int64_t njb = (g.total + J - 1) / J;
    int lanes = c->s->lanes * 4 / (int)ir_dtype_size(ct);
    if (lanes < 1)
        lanes = 1;
    bool qk = n->nout > 3;

    int pv = kir_new_var(k);
    kir_stmt *lp = kir_for(k, &k->body, pv, lw_i64c(k, 0), lw_i64c(k, g.b * g.hq * g.nqb), KIR_PARALLEL, 0);
    if (!lp)
        return -1;
    kir_block *body = &lp->body;
    kir_expr *p = kir_var(k, pv);
    g.bi = g.b > 1 ? lw_idivc(k, p, g.hq * g.nqb) : lw_i64c(k, 0);
    g.hi = irem(k, lw_idivc(k, p, g.nqb), g.hq);
    g.khi = g.reps > 1 ? lw_idivc(k, g.hi, g.reps) : g.hi;
    kir_expr *qb = irem(k, p, g.nqb);
    if (n->nout > 1) {
        kir_expr *first = kir_op2(k, KIR_EQ, IR_BOOL, qb, lw_i64c(k, 0));
        if (g.reps > 1)
            first = kir_op2(k, KIR_AND, IR_BOOL, first,
                            kir_op2(k, KIR_EQ, IR_BOOL, irem(k, g.hi, g.reps), lw_i64c(k, 0)));
        kir_stmt *ifp = kir_if(k, body, first);
        if (!ifp || copy_present(c, &g, &ifp->body) < 0)
            return -1;
    }
    kir_expr *row[ROWS];
    int m[ROWS], l[ROWS], s[ROWS][KEYS], pr[ROWS][KEYS];
    for (int r = 0; r < R; r++) {
        row[r] = kir_iadd(k, kir_imul(k, qb, lw_i64c(k, R)), lw_i64c(k, r));
        if ((m[r] = kir_new_acc(k, ct)) < 0 || (l[r] = kir_new_acc(k, ct)) < 0 ||
            !kir_acc_set(k, body, m[r], fc(c, -INFINITY)) || !kir_acc_set(k, body, l[r], fc(c, 0)))
            return -1;
        for (int q = 0; q < J; q++)
            if ((s[r][q] = kir_new_acc(k, ct)) < 0 || (pr[r][q] = kir_new_acc(k, ct)) < 0)
                return -1;
    }
    /* Y[rows] = 0 */
    kir_expr *e;
    kir_block *lz = rows_loop(c, body, g.dv, lanes, &e);
    if (!lz)
        return -1;
    for (int r = 0; r < R; r++) {
        kir_expr *ix[4];
        y_idx(c, &g, row[r], e, ix);
        if (!kir_store(k, lz, c->out, ix, fc(c, 0)))
            return -1;
    }
    /* the key blocks */
    int jbv = kir_new_var(k);
    kir_stmt *ljb = lw_loop(c, body, jbv, lw_i64c(k, njb), KIR_SERIAL);
    if (!ljb)
        return -1;
    kir_block *kb = &ljb->body;
    kir_expr *jraw[KEYS], *key[KEYS];
    for (int q = 0; q < J; q++) {
        jraw[q] = kir_iadd(k, kir_imul(k, kir_var(k, jbv), lw_i64c(k, J)), lw_i64c(k, q));
        key[q] = iminc(k, jraw[q], g.total - 1);
        for (int r = 0; r < R; r++)
            if (!kir_acc_set(k, kb, s[r][q], fc(c, 0)))
                return -1;
    }
    int dv = kir_new_var(k);
    kir_stmt *ld = kir_for(k, kb, dv, lw_i64c(k, 0), lw_i64c(k, g.d), KIR_VECTOR, lanes);
    if (!ld)
        return -1;
    kir_expr *qv[ROWS], *kv[KEYS];
    for (int r = 0; r < R; r++) {
        kir_expr *ix[4];
        if (g.three) {
            ix[0] = g.bi;
            ix[1] = row[r];
            ix[2] = kir_iadd(k, kir_imul(k, g.hi, lw_i64c(k, g.d)), kir_var(k, dv));
        } else {
            ix[0] = g.bi;
            ix[1] = g.hi;
            ix[2] = row[r];
            ix[3] = kir_var(k, dv);
        }
        qv[r] = lw_load_in(c, 0, ix);
    }
    for (int q = 0; q < J; q++)
        kv[q] = kv_at(c, &g, false, key[q], kir_var(k, dv));
    for (int r = 0; r < R; r++)
        for (int q = 0; q < J; q++)
            if (!kir_acc_set(k, &ld->body, s[r][q], kir_op3(k, KIR_FMA, ct, qv[r], kv[q], kir_acc(k, s[r][q]))))
                return -1;
    /* scores -> exponents, the running max and sum */
    kir_expr *corr[ROWS] = {0};
    for (int r = 0; r < R; r++) {
        kir_expr *mx = kir_acc(k, m[r]);
        for (int q = 0; q < J; q++) {
            kir_expr *raw = op2(c, KIR_MUL, kir_acc(k, s[r][q]), fc(c, g.scale)), *x = raw;
            if (g.cap > 0)
                x = op2(c, KIR_MUL, fc(c, g.cap), kir_op1(k, KIR_TANH, ct, op2(c, KIR_DIV, x, fc(c, g.cap))));
            kir_expr *capped = x;
            x = bias(c, &g, x, row[r], key[q], jraw[q]);
            /* stored before the accumulator changes: raw and capped read it */
            if (qk) {
                kir_expr *ix[4], *sv = g.mode == 0 ? raw : g.mode == 1 ? capped : x;
                qk_idx(&g, row[r], key[q], ix);
                kir_stmt *in = kir_if(k, kb, kir_op2(k, KIR_LT, IR_BOOL, jraw[q], lw_i64c(k, g.total)));
                if (!in || !kir_store(k, &in->body, c->outs[3], ix, lw_to_out_i(c, 3, sv)))
                    return -1;
            }
            if (!kir_acc_set(k, kb, s[r][q], x))
                return -1;
            mx = op2(c, KIR_MAX, mx, kir_acc(k, s[r][q]));
        }
        int nm = kir_new_acc(k, ct), cr = kir_new_acc(k, ct);
        if (nm < 0 || cr < 0 || !kir_acc_set(k, kb, nm, mx))
            return -1;
        /* the exponents' base: 0 while every key so far is masked */
        kir_expr *base = kir_op3(k, KIR_SELECT, ct, kir_op2(k, KIR_EQ, IR_BOOL, kir_acc(k, nm), fc(c, -INFINITY)),
                                 fc(c, 0), kir_acc(k, nm));
        int bs = kir_new_acc(k, ct);
        if (bs < 0 || !kir_acc_set(k, kb, bs, base) ||
            !kir_acc_set(k, kb, cr, kir_op1(k, KIR_EXP, ct, op2(c, KIR_SUB, kir_acc(k, m[r]), kir_acc(k, bs)))))
            return -1;
        kir_expr *sum = NULL;
        for (int q = 0; q < J; q++) {
            if (!kir_acc_set(k, kb, pr[r][q], kir_op1(k, KIR_EXP, ct, op2(c, KIR_SUB, kir_acc(k, s[r][q]),
                                                                          kir_acc(k, bs)))))
                return -1;
            sum = sum ? op2(c, KIR_ADD, sum, kir_acc(k, pr[r][q])) : kir_acc(k, pr[r][q]);
        }
        if (!kir_acc_set(k, kb, l[r], kir_op3(k, KIR_FMA, ct, kir_acc(k, l[r]), kir_acc(k, cr), sum)) ||
            !kir_acc_set(k, kb, m[r], kir_acc(k, nm)))
            return -1;
        corr[r] = kir_acc(k, cr);
    }
    /* Y[row r] = c_r Y[row r] + sum_j p_rj V[j] */
    kir_block *lu = rows_loop(c, kb, g.dv, lanes, &e);
    if (!lu)
        return -1;
    kir_expr *vv[KEYS];
    for (int q = 0; q < J; q++)
        vv[q] = kv_at(c, &g, true, key[q], e);
    for (int r = 0; r < R; r++) {
        kir_expr *ix[4];
        y_idx(c, &g, row[r], e, ix);
        kir_expr *acc = op2(c, KIR_MUL, kir_load(k, c->out, ix), corr[r]);
        for (int q = 0; q < J; q++)
            acc = kir_op3(k, KIR_FMA, ct, kir_acc(k, pr[r][q]), vv[q], acc);
        if (!kir_store(k, lu, c->out, ix, acc))
            return -1;
    }
    /* Y[rows] /= l */
    kir_block *lf = rows_loop(c, body, g.dv, lanes, &e);
    if (!lf)
        return -1;
    for (int r = 0; r < R; r++) {
        kir_expr *ix[4];
        y_idx(c, &g, row[r], e, ix);
        if (!kir_store(k, lf, c->out, ix, op2(c, KIR_DIV, kir_load(k, c->out, ix), kir_acc(k, l[r]))))
            return -1;
    }
    if (qk && g.mode == 3) {
        /* the stored biased scores become probabilities */
        for (int r = 0; r < R; r++) {
            int jv = kir_new_var(k), bs = kir_new_acc(k, ct);
            kir_expr *mx = kir_acc(k, m[r]);
            if (bs < 0 || !kir_acc_set(k, body, bs, kir_op3(k, KIR_SELECT, ct,
                                                            kir_op2(k, KIR_EQ, IR_BOOL, mx, fc(c, -INFINITY)),
                                                            fc(c, 0), mx)))
                return -1;
            kir_stmt *lj = kir_for(k, body, jv, lw_i64c(k, 0), lw_i64c(k, g.total), KIR_SERIAL, 0);
            if (!lj)
                return -1;
            kir_expr *ix[4];
            qk_idx(&g, row[r], kir_var(k, jv), ix);
            kir_expr *e = kir_op1(k, KIR_EXP, ct, op2(c, KIR_SUB, kir_load(k, c->outs[3], ix), kir_acc(k, bs)));
            if (!kir_store(k, &lj->body, c->outs[3], ix, op2(c, KIR_DIV, e, kir_acc(k, l[r]))))
                return -1;
        }
    }
    return 0;
}
