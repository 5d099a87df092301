/* attention.c - Attention (ir/ref/attention.c for its semantics) as
 * one kernel that never stores the [Sq, T] scores in memory. Three
 * schedules: on AMX tiles where the bf16 rewrite gave it bf16 Q, K and V
 * (lower_attention_amx, below); the tiled one (lower_attention_tiled: register-tiled
 * Q·Kᵀ and P·V around a softmax of score rows in thread scratch) when
 * there is one output, no past cache, and the head's keys fit in scratch;
 * otherwise the general one, by the online softmax:
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
#include "codegen/kir_math.h"
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
    if (dt != IR_F32 && dt != IR_F64 && dt != IR_F16 && dt != IR_BF16)
        return false;
    for (int i = 0; i < n->nin; i++)
        if (n->in[i] && !const_type(&n->in[i]->type))
            return false;
    for (int i = 0; i < n->nout; i++)
        if (!const_type(&n->out[i]->type) || n->out[i]->type.dtype != dt)
            return false;
    att_geo g;
    geo_init(n, &g);
    /* f16/bf16 compute in f32; the probabilities output (mode 3) would be
     * read back from its narrow stores */
    if ((dt == IR_F16 || dt == IR_BF16) && n->nout > 3 && g.mode == 3)
        return false;
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

/* x softcapped: cap tanh(x / cap) where the node has a softcap. */
static kir_expr *softcap(lctx *c, const att_geo *g, kir_expr *x)
{
    return g->cap > 0 ? op2(c, KIR_MUL, fc(c, g->cap), kir_op1(c->k, KIR_TANH, c->cdt, op2(c, KIR_DIV, x, fc(c, g->cap))))
                      : x;
}

/* The exponents' base for a row whose max is m: 0 while every key is
 * masked (m = -inf), so that nothing computes -inf - -inf. */
static kir_expr *exp_base(lctx *c, kir_expr *m)
{
    return kir_op3(c->k, KIR_SELECT, c->cdt, kir_op2(c->k, KIR_EQ, IR_BOOL, m, fc(c, -INFINITY)), fc(c, 0), m);
}

/* Whether n has one output and no KV cache (the tiled and AMX schedules'
 * shape). */
static bool uncached(const ir_node *n, const att_geo *g)
{
    return n->nout == 1 && !g->past && !(n->nin > 4 && n->in[4]) && !(n->nin > 5 && n->in[5]);
}

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

/* Where row r's running sum lives: Y itself (ix as y_idx), or row r of
 * the compute-dtype scratch a narrow Y sums in. */
static void y_acc_idx(lctx *c, const att_geo *g, bool narrow, int r, kir_expr *row, kir_expr *e, kir_expr **ix)
{
    if (!narrow) {
        y_idx(c, g, row, e, ix);
        return;
    }
    ix[0] = lw_i64c(c->k, r);
    ix[1] = e;
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

static kir_expr *or_cond(kir_kernel *k, kir_expr *a, kir_expr *b)
{
    return a ? kir_op2(k, KIR_OR, IR_BOOL, a, b) : b;
}

/* The score's bias terms: x unless masked out (-inf), plus an additive
 * mask; jraw is the unclamped key index (>= T in the last block's tail),
 * NULL when j never passes T. */
static kir_expr *bias(lctx *c, const att_geo *g, kir_expr *x, kir_expr *i, kir_expr *j, kir_expr *jraw)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    kir_expr *ninf = fc(c, -INFINITY);
    kir_expr *hidden = jraw ? kir_op2(k, KIR_LE, IR_BOOL, lw_i64c(k, g->total), jraw) : NULL;
    if (n->nin > 3 && n->in[3]) {
        const ir_type *mt = &n->in[3]->type;
        kir_expr *mj = g->mlen >= g->total ? j : iminc(k, j, g->mlen - 1);
        kir_expr *full[4] = {g->bi, g->hi, i, mj}, *ix[4];
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
            hidden = or_cond(k, hidden, kir_op2(k, KIR_LE, IR_BOOL, lw_i64c(k, g->mlen), j));
    }
    if (g->causal)
        hidden = or_cond(k, hidden, kir_op2(k, KIR_LT, IR_BOOL, kir_iadd(k, i, lw_i64c(k, g->past)), j));
    if (n->nin > 6 && n->in[6]) {
        kir_expr *bx[1] = {g->bi};
        kir_expr *len = kir_load(k, c->buf[6], bx);
        hidden = or_cond(k, hidden, kir_op2(k, KIR_LE, IR_BOOL, len, j));
    }
    return hidden ? kir_op3(k, KIR_SELECT, c->cdt, hidden, ninf, x) : x;
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

/* The parallel loop of the tiled and AMX schedules over (batch, head,
 * chunk of the nrb row blocks): heads split into chunks of *per blocks
 * until there are `want` iterations; g's batch and head indices set for
 * its body, *ch the chunk. NULL on out of memory. */
static kir_stmt *head_chunks(lctx *c, att_geo *g, int64_t nrb, int64_t want, int64_t *per, kir_expr **ch)
{
    kir_kernel *k = c->k;
    int64_t heads = g->b * g->hq, nch = 1;
    while (heads * nch < want && nch < nrb)
        nch++;
    *per = (nrb + nch - 1) / nch;
    nch = (nrb + *per - 1) / *per;
    int pv = kir_new_var(k);
    kir_stmt *lp = kir_for(k, &k->body, pv, lw_i64c(k, 0), lw_i64c(k, heads * nch), KIR_PARALLEL, 0);
    if (!lp)
        return NULL;
    kir_expr *p = kir_var(k, pv), *hp = lw_idivc(k, p, nch);
    g->bi = g->b > 1 ? lw_idivc(k, hp, g->hq) : lw_i64c(k, 0);
    g->hi = irem(k, hp, g->hq);
    g->khi = g->reps > 1 ? lw_idivc(k, g->hi, g->reps) : g->hi;
    *ch = lw_iremc(k, p, nch);
    return lp;
}

/* The loop over chunk ch's row blocks (head_chunks), appended to b. */
static kir_stmt *chunk_blocks(lctx *c, kir_block *b, int rbv, kir_expr *ch, int64_t per, int64_t nrb)
{
    kir_kernel *k = c->k;
    kir_expr *rlo = lw_imulc(k, ch, per);
    return kir_for(k, b, rbv, rlo, iminc(k, lw_iaddc(k, rlo, per), nrb), KIR_SERIAL, 0);
}

/* ---- the tiled schedule ------------------------------------------------------ */

enum {
    TILE_ROWS = 12,              /* the most query rows of a register tile (tile_shape) */
    SCRATCH_MAX = 192 * 1024,    /* bytes of thread scratch (the CPU caps it at 256 KiB) */
};

/* The tile of the tiled schedule: *rows query rows; P·V's vector loop
 * *wpv lanes wide, just covering a head's Dv (up to the schedule's
 * vectors per row), and as many rows as the accumulator registers
 * then hold, so a narrow head (Dv 32: 2 vectors) takes 12 rows instead
 * of computing 6 rows x 4 vectors of which half lie past Dv; Q·Kᵀ the
 * same rows x *wqk lanes within the same registers. */
static void tile_shape(const lctx *c, const att_geo *g, int64_t *rows, int *wqk, int *wpv)
{
    int lanes = c->s->lanes * 4 / (int)ir_dtype_size(c->cdt);
    if (lanes < 1)
        lanes = 1;
    int tv = c->s->tile_vecs > 0 ? c->s->tile_vecs : 1, budget = c->s->tile_rows * tv;
    int vpv = (int)((g->dv + lanes - 1) / lanes);
    if (vpv > tv)
        vpv = tv;
    if (vpv < 1)
        vpv = 1;
    int64_t R = budget / vpv;
    if (R > TILE_ROWS)
        R = TILE_ROWS;
    if (R > g->sq)
        R = g->sq;
    if (R < 1)
        R = 1;
    int vqk = (int)(budget / R);
    if (vqk > tv)
        vqk = tv;
    if (vqk < 1)
        vqk = 1;
    *rows = R;
    *wqk = vqk * lanes;
    *wpv = vpv * lanes;
}

/* Whether the tiled schedule takes n: one output, no cache, and the
 * head's transposed keys plus a tile's score rows fit in thread scratch. */
static bool tiled_fits(const lctx *c, const att_geo *g)
{
    const ir_node *n = c->n;
    if (!uncached(n, g))
        return false;
    int64_t es = (int64_t)ir_dtype_size(c->cdt), R;
    int wqk, wpv;
    tile_shape(c, g, &R, &wqk, &wpv);
    return (g->d + R) * g->total * es <= SCRATCH_MAX;
}

/* kt[d, j] = K[j, d] for the head g->khi into body: by n x n blocks of
 * transpose_f32 (n the f32 lanes, where the schedule has f32_transpose)
 * where K is an f32 buffer read in place and n divides T and D, else
 * element by element (LLVM stored that loop's vector form through
 * scatters: 16% of BERT's attention kernel on Zen 4). 0, or -1 on out of
 * memory. */
static int keys_transposed(lctx *c, const att_geo *g, int kt, kir_block *body)
{
    kir_kernel *k = c->k;
    int64_t T = g->total, n = c->s->lanes;
    int jv = kir_new_var(k), dv = kir_new_var(k);
    kir_expr *probe = kv_at(c, g, false, lw_i64c(k, 0), lw_i64c(k, 0));
    bool blocks = c->s->f32_transpose && T % n == 0 && g->d % n == 0 && k->bufs[kt].dtype == IR_F32 &&
                  probe && probe->op == KIR_LOAD && probe->buf == c->buf[1] && c->buf[1] >= 0 &&
                  k->bufs[c->buf[1]].dtype == IR_F32 && k->bufs[c->buf[1]].rank >= 2;
    if (blocks) {
        kir_stmt *lj = kir_for(k, body, jv, lw_i64c(k, 0), lw_i64c(k, T / n), KIR_SERIAL, 0);
        kir_stmt *ld = lj ? kir_for(k, &lj->body, dv, lw_i64c(k, 0), lw_i64c(k, g->d / n), KIR_SERIAL, 0) : NULL;
        if (!ld)
            return -1;
        kir_expr *j0 = lw_imulc(k, kir_var(k, jv), n), *d0 = lw_imulc(k, kir_var(k, dv), n);
        kir_expr *src = kv_at(c, g, false, j0, d0);
        kir_iarg args[2] = {{.buf = kt, .nidx = 2, .idx = (kir_expr *[]){d0, j0}},
                            {.buf = src->buf, .nidx = src->nidx, .idx = src->idx}};
        return kir_intrinsic(k, &ld->body, KIR_IN_TRANSPOSE_F32, (int)n, args) ? 0 : -1;
    }
    kir_stmt *lj = lw_loop(c, body, jv, lw_i64c(k, T), KIR_SERIAL);
    kir_stmt *ld = lj ? lw_loop(c, &lj->body, dv, lw_i64c(k, g->d), KIR_SERIAL) : NULL;
    if (!ld ||
        !kir_store(k, &ld->body, kt, (kir_expr *[]){kir_var(k, dv), kir_var(k, jv)},
                   kv_at(c, g, false, kir_var(k, jv), kir_var(k, dv))))
        return -1;
    return 0;
}

/* Attention as two register-tiled contractions around a softmax on rows
 * kept in thread scratch:
 *
 *   parallel p in [0, B * Hq * chunks)          (batch, head, chunk of row blocks)
 *     kt[d, j] = K[key j, d]                    the head's keys, transposed once
 *     for rb in the chunk's blocks of R rows    row(r) = min(R rb + r, Sq - 1)
 *       vector(W) j in [0, T)                   widened: R x W accumulators
 *         a_r = sum_d Q[row r, d] kt[d, j]      scalar Q (broadcast), vector kt
 *         sc[r, j] = bias(softcap(scale a_r))
 *       per row: m = max_j sc; sc = e^(sc - m); l = sum_j sc
 *       vector(W) e in [0, Dv)
 *         a_r = sum_j sc[r, j] V[key j, e]      scalar sc, vector V
 *         Y[row r, e] = a_r / l_r
 *
 * so both products are the GEMM tile's shape (no horizontal sums), the
 * scores never leave L1, and Q, K, V and Y are read in their own layout
 * (the 3-D [B, S, H*D] form included: no head-split copies). The last
 * block recomputes row Sq - 1 instead of branching; it stores the same
 * values. A row with every key masked gets m = -inf, exponents from base
 * 0, l = 0 and 0/0 = NaN, like the reference. */
static int lower_attention_tiled(lctx *c, att_geo *g)
{
    kir_kernel *k = c->k;
    ir_dtype ct = c->cdt;
    int64_t T = g->total, R;
    int lanes = c->s->lanes * 4 / (int)ir_dtype_size(ct);
    if (lanes < 1)
        lanes = 1;
    int W, wpv;
    tile_shape(c, g, &R, &W, &wpv);
    int64_t nrb = (g->sq + R - 1) / R, per;
    int kt = kir_add_scratch(k, "att_kt", KIR_SPACE_THREAD, ct, 2, (int64_t[]){g->d, T});
    int sc = kir_add_scratch(k, "att_scores", KIR_SPACE_THREAD, ct, 2, (int64_t[]){R, T});
    /* parallel iterations wanted, twice the schedule's chunks (16 on a
     * CPU; on a GPU every block of rows) */
    kir_expr *ch;
    kir_stmt *lp = kt < 0 || sc < 0 ? NULL : head_chunks(c, g, nrb, 2 * c->s->min_chunks, &per, &ch);
    if (!lp)
        return -1;
    kir_block *body = &lp->body;

    /* kt[d, j] = K[j, d] */
    if (keys_transposed(c, g, kt, body) < 0)
        return -1;

    int rbv = kir_new_var(k);
    kir_stmt *lrb = chunk_blocks(c, body, rbv, ch, per, nrb);
    if (!lrb)
        return -1;
    kir_block *rb = &lrb->body;
    kir_expr *row[TILE_ROWS];
    for (int r = 0; r < R; r++)
        row[r] = iminc(k, lw_iaddc(k, lw_imulc(k, kir_var(k, rbv), R), r), g->sq - 1);

    /* scores */
    int a[TILE_ROWS];
    for (int r = 0; r < R; r++)
        if ((a[r] = kir_new_acc(k, ct)) < 0)
            return -1;
    int sj = kir_new_var(k), sd = kir_new_var(k);
    kir_stmt *lsj = kir_for(k, rb, sj, lw_i64c(k, 0), lw_i64c(k, T), KIR_VECTOR, W);
    if (!lsj)
        return -1;
    for (int r = 0; r < R; r++)
        if (!kir_acc_set(k, &lsj->body, a[r], fc(c, 0)))
            return -1;
    kir_stmt *lsd = lw_loop(c, &lsj->body, sd, lw_i64c(k, g->d), KIR_SERIAL);
    if (!lsd)
        return -1;
    kir_expr *j = kir_var(k, sj), *d = kir_var(k, sd);
    kir_expr *kd = kir_load(k, kt, (kir_expr *[]){d, j});
    for (int r = 0; r < R; r++) {
        kir_expr *ix[4];
        if (g->three) {
            ix[0] = g->bi;
            ix[1] = row[r];
            ix[2] = kir_iadd(k, lw_imulc(k, g->hi, g->d), d);
        } else {
            ix[0] = g->bi;
            ix[1] = g->hi;
            ix[2] = row[r];
            ix[3] = d;
        }
        if (!kir_acc_set(k, &lsd->body, a[r], kir_op3(k, KIR_FMA, ct, lw_load_in(c, 0, ix), kd, kir_acc(k, a[r]))))
            return -1;
    }
    for (int r = 0; r < R; r++) {
        kir_expr *x = bias(c, g, softcap(c, g, op2(c, KIR_MUL, kir_acc(k, a[r]), fc(c, g->scale))), row[r], j, NULL);
        if (!kir_store(k, &lsj->body, sc, (kir_expr *[]){lw_i64c(k, r), j}, x))
            return -1;
    }

    /* softmax of the tile's rows, in place */
    int il[TILE_ROWS];
    for (int r = 0; r < R; r++) {
        kir_expr *rr = lw_i64c(k, r);
        int m = kir_new_acc(k, ct), bs = kir_new_acc(k, ct), l = kir_new_acc(k, ct);
        il[r] = kir_new_acc(k, ct);
        int v1 = kir_new_var(k), v2 = kir_new_var(k), v3 = kir_new_var(k);
        if (m < 0 || bs < 0 || l < 0 || il[r] < 0 || !kir_acc_set(k, rb, m, fc(c, -INFINITY)))
            return -1;
        kir_stmt *l1 = kir_for(k, rb, v1, lw_i64c(k, 0), lw_i64c(k, T), KIR_VECTOR, lanes);
        if (!l1 || !kir_acc_set(k, &l1->body, m, op2(c, KIR_MAX, kir_acc(k, m),
                                                      kir_load(k, sc, (kir_expr *[]){rr, kir_var(k, v1)}))))
            return -1;
        if (!kir_acc_set(k, rb, bs, exp_base(c, kir_acc(k, m))))
            return -1;
        kir_stmt *l2 = kir_for(k, rb, v2, lw_i64c(k, 0), lw_i64c(k, T), KIR_VECTOR, lanes);
        kir_expr *x2[2] = {rr, l2 ? kir_var(k, v2) : NULL};
        if (!l2 || !kir_store(k, &l2->body, sc, x2,
                              kir_op1(k, KIR_EXP, ct, op2(c, KIR_SUB, kir_load(k, sc, x2), kir_acc(k, bs)))))
            return -1;
        if (!kir_acc_set(k, rb, l, fc(c, 0)))
            return -1;
        kir_stmt *l3 = kir_for(k, rb, v3, lw_i64c(k, 0), lw_i64c(k, T), KIR_VECTOR, lanes);
        if (!l3 || !kir_acc_set(k, &l3->body, l, op2(c, KIR_ADD, kir_acc(k, l),
                                                      kir_load(k, sc, (kir_expr *[]){rr, kir_var(k, v3)}))))
            return -1;
        if (!kir_acc_set(k, rb, il[r], op2(c, KIR_DIV, fc(c, 1), kir_acc(k, l))))
            return -1;
    }

    /* Y = P V */
    int oe = kir_new_var(k), oj = kir_new_var(k);
    kir_stmt *loe = kir_for(k, rb, oe, lw_i64c(k, 0), lw_i64c(k, g->dv), KIR_VECTOR, wpv);
    if (!loe)
        return -1;
    for (int r = 0; r < R; r++)
        if (!kir_acc_set(k, &loe->body, a[r], fc(c, 0)))
            return -1;
    kir_stmt *loj = lw_loop(c, &loe->body, oj, lw_i64c(k, T), KIR_SERIAL);
    if (!loj)
        return -1;
    kir_expr *e = kir_var(k, oe), *jj = kir_var(k, oj);
    kir_expr *ve = kv_at(c, g, true, jj, e);
    for (int r = 0; r < R; r++) {
        kir_expr *pr = kir_load(k, sc, (kir_expr *[]){lw_i64c(k, r), jj});
        if (!kir_acc_set(k, &loj->body, a[r], kir_op3(k, KIR_FMA, ct, pr, ve, kir_acc(k, a[r]))))
            return -1;
    }
    for (int r = 0; r < R; r++) {
        kir_expr *ix[4];
        y_idx(c, g, row[r], e, ix);
        if (!kir_store(k, &loe->body, c->out, ix, lw_to_out(c, op2(c, KIR_MUL, kir_acc(k, a[r]), kir_acc(k, il[r])))))
            return -1;
    }
    return 0;
}

/* ---- bf16 on AMX tiles --------------------------------------------------------- */

enum {
    AMX_ROWS = 32,   /* query rows of a block: two tiles of 16 */
    SM_ROWS = 4,     /* rows the softmax takes at a time */
};

/* A 2-D view [rows, cols] of kernel buffer buf (an input's or the
 * output's), elements of dtype dt (K's bf16 pairs read as f32 by the
 * transposes); -1 on out of memory. */
static int amx_view(lctx *c, int buf, ir_dtype dt, int64_t rows, int64_t cols)
{
    const kir_buf *b = &c->k->bufs[buf];
    ir_type t = {.dtype = dt, .rank = 2, .dims = {ir_dim_const(rows), ir_dim_const(cols)}};
    return kir_add_buf(c->k, b->name, b->kind, &t, b->index, b->offset);
}

/* The thread scratch the AMX schedule takes: the head's keys as pairs
 * (f32 [D/2, T]), its values in pairs of keys (bf16 [T/2, 2 Dv]), a
 * block's scores (f32 [32, T]) and probabilities (bf16 [32, T]). */
static int64_t amx_scratch(const att_geo *g)
{
    return g->d * g->total * 2 + g->total * g->dv * 2 + AMX_ROWS * g->total * 6;
}

/* Whether the AMX schedule takes n: a target with AMX-BF16; Q, K and V
 * read as bf16 buffers (the bf16 rewrite's Casts in the kernel,
 * passes/precision.c) and an f32 output, none of them kernel scratch (they
 * are viewed as matrices); one output, no cache; head widths and the key
 * count whole tiles of 32, at least 32 query rows, and the scratch within
 * bounds. */
static bool amx_fits(const lctx *c, const att_geo *g)
{
    const ir_node *n = c->n;
    if (!c->s->amx_bf16 || !c->s->f32_transpose || !uncached(n, g) || c->k->bufs[c->out].dtype != IR_F32 ||
        c->k->bufs[c->out].kind == KIR_BUF_SCRATCH)
        return false;
    for (int i = 0; i < 3; i++) {
        const kir_buf *b = c->buf[i] >= 0 ? &c->k->bufs[c->buf[i]] : NULL;
        if (!b || b->dtype != IR_BF16 || b->kind == KIR_BUF_SCRATCH)
            return false;
    }
    return g->d % 32 == 0 && g->dv % 32 == 0 && g->total % 32 == 0 && g->sq >= AMX_ROWS &&
           amx_scratch(g) <= SCRATCH_MAX;
}

/* The row of head `head`'s row r (of S) in the matrix view of a 3-D [B,
 * S, H*W] or 4-D [B, H, S, W] buffer (amx_view): S rows per batch (3-D)
 * or per batch and head (4-D), for the current batch g->bi. */
static kir_expr *amx_row(kir_kernel *k, const att_geo *g, kir_expr *head, int64_t heads, int64_t S, kir_expr *r)
{
    kir_expr *base = g->three ? lw_imulc(k, g->bi, S) : lw_imulc(k, kir_iadd(k, lw_imulc(k, g->bi, heads), head), S);
    return kir_iadd(k, base, r);
}

/* The column where the current head's W elements start in such a view. */
static kir_expr *amx_col(kir_kernel *k, const att_geo *g, kir_expr *head, int64_t w)
{
    return g->three ? lw_imulc(k, head, w) : lw_i64c(k, 0);
}

/* Attention on AMX tiles (bf16 Q, K, V; f32 sums, softmax and output):
 *
 *   parallel p in [0, B * Hq * chunks)           (batch, head, chunk of row blocks)
 *     kp[d/2, j] = K[key j, d .. d+1]            a pair per f32: 16 x 16 transpose_f32 blocks
 *     vp[j/2, 2e + t] = V[key j + t, e]          pair_pack of two keys' rows
 *     for rb in the chunk's blocks of 32 rows    r0 = min(32 rb, Sq - 32)
 *       for jb: sc[.., 32 jb ..] = Q[rows] kp    2 x 2 tiles over D / 32 steps
 *       per row: sc = bias(softcap(scale sc)); m = max; sc = e^(sc - m);
 *                pr[r, j] = bf16(sc[r, j] / l)  l = sum_j sc[r, j]
 *       for eb: Y[rows, 32 eb ..] = pr vp        2 x 2 tiles over T / 32 steps, stored to Y
 *
 * K's rows read as f32 are its pairs of d, so their transpose is the B
 * operand of Q·Kᵀ as the tiles take it (rows of 16 keys' pairs of d);
 * V's rows interleaved in pairs of keys are P·V's. The probabilities are
 * rounded to bf16 once normalized, as the unfused bf16 graph rounds the
 * Softmax's output for its MatMul. A last block past Sq recomputes rows
 * of the one before (the same values). A row with every key masked gets
 * l = 0 and NaN, like the reference. */
static int lower_attention_amx(lctx *c, att_geo *g)
{
    kir_kernel *k = c->k;
    int64_t T = g->total, D = g->d, Dv = g->dv, heads = g->b * g->hq, nrb = (g->sq + AMX_ROWS - 1) / AMX_ROWS, per;
    int64_t qrows = g->three ? g->b * g->sq : heads * g->sq, krows = g->three ? g->b * g->skv : g->b * g->hkv * g->skv;
    int qv = amx_view(c, c->buf[0], IR_BF16, qrows, g->three ? g->hq * D : D);
    int kf = qv < 0 ? -1 : amx_view(c, c->buf[1], IR_F32, krows, (g->three ? g->hkv * D : D) / 2);
    int vv = kf < 0 ? -1 : amx_view(c, c->buf[2], IR_BF16, krows, g->three ? g->hkv * Dv : Dv);
    int yv = vv < 0 ? -1 : amx_view(c, c->out, IR_F32, qrows, g->three ? g->hq * Dv : Dv);
    int kp = yv < 0 ? -1 : kir_add_scratch(k, "att_kp", KIR_SPACE_THREAD, IR_F32, 2, (int64_t[]){D / 2, T});
    int vp = kp < 0 ? -1 : kir_add_scratch(k, "att_vp", KIR_SPACE_THREAD, IR_BF16, 2, (int64_t[]){T / 2, 2 * Dv});
    int sc = vp < 0 ? -1 : kir_add_scratch(k, "att_scores", KIR_SPACE_THREAD, IR_F32, 2, (int64_t[]){AMX_ROWS, T});
    int pr = sc < 0 ? -1 : kir_add_scratch(k, "att_probs", KIR_SPACE_THREAD, IR_BF16, 2, (int64_t[]){AMX_ROWS, T});
    /* a head's K and V are packed once per trip: whole heads a trip
     * unless there are fewer than the schedule's chunks */
    kir_expr *ch;
    kir_stmt *lp = pr < 0 ? NULL : head_chunks(c, g, nrb, c->s->min_chunks, &per, &ch);
    if (!lp || !kir_intrinsic(k, &lp->body, KIR_IN_AMX_CONFIG, 0, NULL))
        return -1;
    kir_block *body = &lp->body;

    /* kp, vp */
    int jv = kir_new_var(k), dv = kir_new_var(k), tv = kir_new_var(k), ev = kir_new_var(k);
    kir_stmt *lj = kir_for(k, body, jv, lw_i64c(k, 0), lw_i64c(k, T / 16), KIR_SERIAL, 0);
    kir_stmt *ld = lj ? kir_for(k, &lj->body, dv, lw_i64c(k, 0), lw_i64c(k, D / 32), KIR_SERIAL, 0) : NULL;
    if (!ld)
        return -1;
    kir_expr *j0 = lw_imulc(k, kir_var(k, jv), 16), *d0 = lw_imulc(k, kir_var(k, dv), 16);
    kir_iarg targs[2] = {{.buf = kp, .nidx = 2, .idx = (kir_expr *[]){d0, j0}},
                         {.buf = kf, .nidx = 2, .idx = (kir_expr *[]){amx_row(k, g, g->khi, g->hkv, g->skv, j0),
                                                                      kir_iadd(k, amx_col(k, g, g->khi, D / 2), d0)}}};
    if (!kir_intrinsic(k, &ld->body, KIR_IN_TRANSPOSE_F32, 16, targs))
        return -1;
    kir_stmt *lt = kir_for(k, body, tv, lw_i64c(k, 0), lw_i64c(k, T / 2), KIR_SERIAL, 0);
    kir_stmt *le = lt ? kir_for(k, &lt->body, ev, lw_i64c(k, 0), lw_i64c(k, Dv / 32), KIR_SERIAL, 0) : NULL;
    if (!le)
        return -1;
    kir_expr *e0 = lw_imulc(k, kir_var(k, ev), 32);
    kir_iarg pargs[2] = {{.buf = vp, .nidx = 2, .idx = (kir_expr *[]){kir_var(k, tv), lw_imulc(k, e0, 2)}},
                         {.buf = vv, .nidx = 2, .idx = (kir_expr *[]){amx_row(k, g, g->khi, g->hkv, g->skv,
                                                                              lw_imulc(k, kir_var(k, tv), 2)),
                                                                      kir_iadd(k, amx_col(k, g, g->khi, Dv), e0)}}};
    if (!kir_intrinsic(k, &le->body, KIR_IN_PAIR_PACK, 32, pargs))
        return -1;

    int rbv = kir_new_var(k);
    kir_stmt *lrb = chunk_blocks(c, body, rbv, ch, per, nrb);
    if (!lrb)
        return -1;
    kir_block *rb = &lrb->body;
    kir_expr *r0 = kir_let(k, rb, iminc(k, lw_imulc(k, kir_var(k, rbv), AMX_ROWS), g->sq - AMX_ROWS));
    kir_expr *qr = amx_row(k, g, g->hi, g->hq, g->sq, r0);

    /* scores: sc = Q[rows] kp */
    int jbv = kir_new_var(k);
    kir_stmt *ljb = r0 ? kir_for(k, rb, jbv, lw_i64c(k, 0), lw_i64c(k, T / 32), KIR_SERIAL, 0) : NULL;
    if (!ljb)
        return -1;
    kir_expr *jc = lw_imulc(k, kir_var(k, jbv), 32);
    if (!lower_amx_kloop(c, &ljb->body, qv, qr, amx_col(k, g, g->hi, D), 32, kp, NULL, jc, 16, 16, 0, D / 32,
                         KIR_IN_AMX_DPBF16PS) ||
        lower_amx_store(c, &ljb->body, sc, lw_i64c(k, 0), jc) < 0)
        return -1;

    /* the softmax, SM_ROWS rows at a time (their max and sum chains
     * independent: a NaN-propagating max is 5 dependent instructions a
     * step): probabilities rounded to bf16 */
    int lanes = c->s->lanes, rv = kir_new_var(k);
    kir_stmt *lr = kir_for(k, rb, rv, lw_i64c(k, 0), lw_i64c(k, AMX_ROWS / SM_ROWS), KIR_SERIAL, 0);
    if (!lr)
        return -1;
    kir_block *rw = &lr->body;
    int m[SM_ROWS], bs[SM_ROWS], l[SM_ROWS], il[SM_ROWS];
    kir_expr *rr[SM_ROWS];
    for (int u = 0; u < SM_ROWS; u++) {
        rr[u] = lw_iaddc(k, lw_imulc(k, kir_var(k, rv), SM_ROWS), u);
        if ((m[u] = kir_new_acc(k, IR_F32)) < 0 || (bs[u] = kir_new_acc(k, IR_F32)) < 0 ||
            (l[u] = kir_new_acc(k, IR_F32)) < 0 || (il[u] = kir_new_acc(k, IR_F32)) < 0 ||
            !kir_acc_set(k, rw, m[u], fc(c, -INFINITY)) || !kir_acc_set(k, rw, l[u], fc(c, 0)))
            return -1;
    }
    int v1 = kir_new_var(k), v2 = kir_new_var(k), v3 = kir_new_var(k);
    kir_stmt *l1 = kir_for(k, rw, v1, lw_i64c(k, 0), lw_i64c(k, T), KIR_VECTOR, lanes);
    if (!l1)
        return -1;
    for (int u = 0; u < SM_ROWS; u++) {
        kir_expr *x1[2] = {rr[u], kir_var(k, v1)};
        kir_expr *x = softcap(c, g, op2(c, KIR_MUL, kir_load(k, sc, x1), fc(c, g->scale)));
        kir_expr *xv = kir_let(k, &l1->body, bias(c, g, x, kir_iadd(k, r0, rr[u]), kir_var(k, v1), NULL));
        if (!xv || !kir_store(k, &l1->body, sc, x1, xv) ||
            !kir_acc_set(k, &l1->body, m[u], op2(c, KIR_MAX, kir_acc(k, m[u]), xv)))
            return -1;
    }
    for (int u = 0; u < SM_ROWS; u++)
        if (!kir_acc_set(k, rw, bs[u], exp_base(c, kir_acc(k, m[u]))))
            return -1;
    kir_stmt *l2 = kir_for(k, rw, v2, lw_i64c(k, 0), lw_i64c(k, T), KIR_VECTOR, lanes);
    if (!l2)
        return -1;
    for (int u = 0; u < SM_ROWS; u++) {
        kir_expr *x2[2] = {rr[u], kir_var(k, v2)};
        /* x - its row's max (0 for a fully masked row: -inf - 0): never
         * positive, on AMX a CPU kernel, so the shorter exp directly */
        kir_expr *ex = kir_let(k, &l2->body, kir_math_exp_nonpos_f32(k, op2(c, KIR_SUB, kir_load(k, sc, x2),
                                                                              kir_acc(k, bs[u]))));
        if (!ex || !kir_store(k, &l2->body, sc, x2, ex) ||
            !kir_acc_set(k, &l2->body, l[u], op2(c, KIR_ADD, kir_acc(k, l[u]), ex)))
            return -1;
    }
    for (int u = 0; u < SM_ROWS; u++)
        if (!kir_acc_set(k, rw, il[u], op2(c, KIR_DIV, fc(c, 1), kir_acc(k, l[u]))))
            return -1;
    kir_stmt *l3 = kir_for(k, rw, v3, lw_i64c(k, 0), lw_i64c(k, T), KIR_VECTOR, lanes);
    if (!l3)
        return -1;
    for (int u = 0; u < SM_ROWS; u++) {
        kir_expr *x3[2] = {rr[u], kir_var(k, v3)};
        if (!kir_store(k, &l3->body, pr, x3,
                       kir_op1(k, KIR_CAST, IR_BF16, op2(c, KIR_MUL, kir_load(k, sc, x3), kir_acc(k, il[u])))))
            return -1;
    }

    /* Y[rows] = pr vp */
    int ebv = kir_new_var(k);
    kir_stmt *leb = kir_for(k, rb, ebv, lw_i64c(k, 0), lw_i64c(k, Dv / 32), KIR_SERIAL, 0);
    if (!leb)
        return -1;
    kir_expr *ec = lw_imulc(k, kir_var(k, ebv), 32);
    if (!lower_amx_kloop(c, &leb->body, pr, lw_i64c(k, 0), NULL, 32, vp, NULL, lw_imulc(k, ec, 2), 32, 16, 0,
                         T / 32, KIR_IN_AMX_DPBF16PS) ||
        lower_amx_store(c, &leb->body, yv, qr, kir_iadd(k, amx_col(k, g, g->hi, Dv), ec)) < 0)
        return -1;
    return kir_intrinsic(k, body, KIR_IN_AMX_RELEASE, 0, NULL) ? 0 : -1;
}

int lower_attention(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    att_geo g;
    geo_init(n, &g);
    if (amx_fits(c, &g))
        return lower_attention_amx(c, &g);
    if (tiled_fits(c, &g))
        return lower_attention_tiled(c, &g);
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
    /* Y[rows] = 0; a narrower Y (f16, bf16) sums in a scratch of the
     * compute dtype, Y[rows] written once at the end */
    bool narrow = k->bufs[c->out].dtype != ct;
    int ya = narrow ? kir_add_scratch(k, "att_y", KIR_SPACE_THREAD, ct, 2, (int64_t[]){R, g.dv}) : c->out;
    if (ya < 0)
        return -1;
    kir_expr *e;
    kir_block *lz = rows_loop(c, body, g.dv, lanes, &e);
    if (!lz)
        return -1;
    for (int r = 0; r < R; r++) {
        kir_expr *ix[4];
        y_acc_idx(c, &g, narrow, r, row[r], e, ix);
        if (!kir_store(k, lz, ya, ix, fc(c, 0)))
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
            kir_expr *raw = op2(c, KIR_MUL, kir_acc(k, s[r][q]), fc(c, g.scale)), *x = softcap(c, &g, raw);
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
        int bs = kir_new_acc(k, ct);
        if (bs < 0 || !kir_acc_set(k, kb, bs, exp_base(c, kir_acc(k, nm))) ||
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
        y_acc_idx(c, &g, narrow, r, row[r], e, ix);
        kir_expr *acc = op2(c, KIR_MUL, kir_load(k, ya, ix), corr[r]);
        for (int q = 0; q < J; q++)
            acc = kir_op3(k, KIR_FMA, ct, kir_acc(k, pr[r][q]), vv[q], acc);
        if (!kir_store(k, lu, ya, ix, acc))
            return -1;
    }
    /* Y[rows] /= l */
    kir_block *lf = rows_loop(c, body, g.dv, lanes, &e);
    if (!lf)
        return -1;
    for (int r = 0; r < R; r++) {
        kir_expr *ix[4], *ax[4];
        y_idx(c, &g, row[r], e, ix);
        y_acc_idx(c, &g, narrow, r, row[r], e, ax);
        if (!kir_store(k, lf, c->out, ix, lw_to_out(c, op2(c, KIR_DIV, kir_load(k, ya, ax), kir_acc(k, l[r])))))
            return -1;
    }
    if (qk && g.mode == 3) {
        /* the stored biased scores become probabilities */
        for (int r = 0; r < R; r++) {
            int jv = kir_new_var(k), bs = kir_new_acc(k, ct);
            if (bs < 0 || !kir_acc_set(k, body, bs, exp_base(c, kir_acc(k, m[r]))))
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
