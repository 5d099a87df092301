/* tile.c - the register-tiled contraction schedule (tile.h): a parallel
 * loop over chunks of (row blocks x column panels), in each the blocks of
 * the reduction, a VECTOR loop over a panel's columns and a register tile
 * of `rows` accumulators per vector carried across the reduction. The
 * caller (MatMul, Gemm, Conv, ConvNCHWc) supplies the reduction loops and
 * the operands through callbacks; this file decides only how the work is
 * split (and, with pack_a, where A's block is staged), so a schedule for
 * another target replaces it without touching what the families compute.
 */
#include "codegen/lower/tile.h"

static kir_expr *zero(lctx *c)
{
    return ir_dtype_is_float(c->cdt) ? kir_const_f(c->k, c->cdt, 0) : kir_const_i(c->k, c->cdt, 0);
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The tile's geometry inside one parallel chunk. */
typedef struct {
    int64_t nb, np, nq;       /* row blocks, column panels per group, panels in all */
    int64_t mcb, ncp;         /* row blocks and panels per chunk */
    kir_expr *rc, *cc;        /* this chunk's row and column chunk */
    kir_expr *nb_dyn;         /* m_dyn: the row blocks at run time (each chunk runs all) */
    kir_expr *np_dyn, *nq_dyn, *ncp_dyn;   /* n_dyn: np, nq and ncp at run time */
    int apk;                  /* pack_a: the packed A block (thread scratch [mcb, kc, rows]), or -1 */
} tile_geo;

/* The row of the register tile's row r in row block rb: past the last
 * row, the last row again (no row runs when there are none). */
static kir_expr *tile_row(lctx *c, cg_tile *t, kir_expr *rb, int r)
{
    kir_kernel *k = c->k;
    kir_expr *row = kir_iadd(k, kir_imul(k, rb, lw_i64c(k, t->rows)), lw_i64c(k, r));
    return lw_imin(k, row, t->m_dyn ? kir_op2(k, KIR_SUB, IR_I64, t->m_dyn, lw_i64c(k, 1)) : lw_i64c(k, t->m - 1));
}

/* pack_a: copies the chunk's row blocks [rb0, rb1) of A at reduction
 * block kb into q->apk, each [k step][row of the tile], in *b. */
static int tile_pack_a(lctx *c, cg_tile *t, const tile_geo *q, kir_block *b, kir_expr *kb, kir_expr *rb0,
                       kir_expr *rb1)
{
    kir_kernel *k = c->k;
    int rbv = kir_new_var(k);
    kir_stmt *l = kir_for(k, b, rbv, rb0, rb1, KIR_SERIAL, 0);
    if (!l)
        return -1;
    kir_block *kbody = &l->body;
    if (t->k_open(c, t, kb, lw_i64c(k, 0), &kbody) < 0)
        return -1;
    kir_expr *rel = kir_iadd(k, kir_var(k, rbv), kir_imul(k, rb0, lw_i64c(k, -1)));
    for (int r = 0; r < t->rows; r++) {
        kir_expr *si[] = {rel, t->kstep(c, t), lw_i64c(k, r)};
        if (!kir_store(k, kbody, q->apk, si, t->a(c, t, tile_row(c, t, kir_var(k, rbv), r))))
            return -1;
    }
    return 0;
}

/* The prefetch of the next B panel, in row block rb of the chunk's
 * [rb0, ..). With the reduction step known (kstep, kc) and more than one
 * row block, the panel's kc x L lines are spread evenly over all the
 * chunk's row blocks and steps: step s (of mcb x kc, s = the block's
 * place x kc + its step) hints line s L / mcb (its row of k and its line
 * in that row), so every step hints one line, consecutive steps the same
 * one when there are more steps than lines, and the fetches run at the
 * pace of the products from the panel's first step to its last. (Fetching
 * one line per step in the first L row blocks only, and none after them,
 * asked for L lines per step: a panel read from L3 or memory arrived
 * late. Xeon 6 (L2 2 MB, L3 13 GB/s), 1 thread, in turns: MatMul
 * 128x3072x3072 with B an input 0.931, 1024^3 0.949 with B a weight,
 * 0.952 an input, 128x3072x3072 a weight 0.869, 16x768x768 a weight
 * 0.854.) s L / mcb is a multiply and a shift, by a rounded-up
 * reciprocal (a line past the block's last is a line of the next block
 * or clamped by the callback). Else (one row block, or the row blocks
 * known at run time only): the first row block and each after it fetch
 * their share of the L lines of the next panel at the current k (all L
 * in a chunk of one row block; one each when the row blocks are known at
 * run time only, as if there were enough). */
static int tile_prefetch(lctx *c, cg_tile *t, const tile_geo *q, kir_block *b, kir_expr *rb, kir_expr *rb0,
                         kir_expr *g, kir_expr *j0)
{
    kir_kernel *k = c->k;
    int64_t L = t->pf_lines, mcb = q->nb_dyn ? L + 1 : q->mcb;
    kir_expr *rel = kir_iadd(k, rb, lw_imulc(k, rb0, -1));
    if (t->kstep && t->kc > 0 && !q->nb_dyn && mcb > 1) {
        kir_expr *ks = t->kstep(c, t);
        kir_expr *st = kir_iadd(k, lw_imulc(k, rel, t->kc), ks);
        kir_expr *line = kir_op2(k, KIR_SHR, IR_I64, lw_imulc(k, st, (L * 65536 + mcb - 1) / mcb), lw_i64c(k, 16));
        bool pow2 = (L & (L - 1)) == 0;
        int sh = 0;
        while (((int64_t)1 << sh) < L)
            sh++;
        kir_expr *row = L == 1 ? line : pow2 ? kir_op2(k, KIR_SHR, IR_I64, line, lw_i64c(k, sh)) : lw_idivc(k, line, L);
        kir_expr *in = L == 1 ? lw_i64c(k, 0)
                     : pow2   ? kir_op2(k, KIR_AND, IR_I64, line, lw_i64c(k, L - 1)) : lw_iremc(k, line, L);
        return t->prefetch(c, t, b, g, j0, kir_iadd(k, row, lw_imulc(k, ks, -1)), in);
    }
    for (int64_t i = 0; i < lw_spread_count(mcb, L); i++)
        if (t->prefetch(c, t, b, g, j0, NULL, lw_spread_item(k, rel, mcb, L, i)) < 0)
            return -1;
    return 0;
}

/* The reduction blocks [kb0, kb1) of the chunk, in *b. All but the last
 * block leave partial sums in the output as they are; `final` blocks
 * (only the last) store through the epilogues, which then run once per
 * element. */
static int tile_blocks(lctx *c, cg_tile *t, const tile_geo *q, kir_block *b, int64_t kb0, int64_t kb1, bool final)
{
    kir_kernel *k = c->k;
    int R = t->rows;
    int kbv = kir_new_var(k), qv = kir_new_var(k), jv = kir_new_var(k), rbv = kir_new_var(k);
    kir_stmt *lkb = kir_for(k, b, kbv, lw_i64c(k, kb0), lw_i64c(k, kb1), KIR_SERIAL, 0);
    if (!lkb)
        return -1;
    kir_expr *kb = kir_var(k, kbv);
    kir_expr *rb0 = q->nb_dyn ? lw_i64c(k, 0) : kir_imul(k, q->rc, lw_i64c(k, q->mcb));
    kir_expr *rb1 = q->nb_dyn ? q->nb_dyn : lw_imin(k, lw_i64c(k, q->nb), kir_iadd(k, rb0, lw_i64c(k, q->mcb)));
    if (q->apk >= 0 && tile_pack_a(c, t, q, &lkb->body, kb, rb0, rb1) < 0)
        return -1;
    kir_expr *ncp = q->ncp_dyn ? q->ncp_dyn : lw_i64c(k, q->ncp);
    kir_expr *q0 = kir_imul(k, q->cc, ncp);
    /* rows_outer (tile.h): the row blocks outside the panels */
    bool ro = t->rows_outer && q->apk < 0 && !t->pack;
    kir_stmt *lrb = ro ? kir_for(k, &lkb->body, rbv, rb0, rb1, KIR_SERIAL, 0) : NULL;
    if (ro && !lrb)
        return -1;
    kir_stmt *lq = kir_for(k, ro ? &lrb->body : &lkb->body, qv, q0,
                           lw_imin(k, q->nq_dyn ? q->nq_dyn : lw_i64c(k, q->nq), kir_iadd(k, q0, ncp)), KIR_SERIAL,
                           0);
    if (!lq)
        return -1;
    kir_expr *qx = kir_var(k, qv), *g, *j0, *j1;
    if (q->np_dyn) {
        g = kir_op2(k, KIR_DIV, IR_I64, qx, q->np_dyn);
        j0 = kir_imul(k, kir_op2(k, KIR_REM, IR_I64, qx, q->np_dyn), lw_i64c(k, t->width));
        j1 = lw_imin(k, t->n_dyn, kir_iadd(k, j0, lw_i64c(k, t->width)));
    } else {
        g = q->np > 1 ? lw_idivc(k, qx, q->np) : qx;
        j0 = q->np > 1 ? kir_imul(k, kir_op2(k, KIR_REM, IR_I64, qx, lw_i64c(k, q->np)), lw_i64c(k, t->width))
                       : lw_i64c(k, 0);
        j1 = lw_imin(k, lw_i64c(k, t->n), kir_iadd(k, j0, lw_i64c(k, t->width)));
    }
    if (t->pack && t->pack(c, t, &lq->body, kb, g, j0, j1) < 0)
        return -1;
    kir_stmt *lj = kir_for(k, &lq->body, jv, j0, j1, KIR_VECTOR, t->width);
    if (!lj)
        return -1;
    kir_expr *j = kir_var(k, jv);
    if (!ro && !(lrb = kir_for(k, &lj->body, rbv, rb0, rb1, KIR_SERIAL, 0)))
        return -1;
    kir_block *tb = ro ? &lj->body : &lrb->body;
    kir_expr *rows[TILE_MAX_ROWS];
    int acc[TILE_MAX_ROWS];
    kir_expr *first = kir_op2(k, KIR_EQ, IR_BOOL, kb, lw_i64c(k, 0));
    kir_expr *oi[IR_MAX_RANK];
    for (int r = 0; r < R; r++) {
        rows[r] = tile_row(c, t, kir_var(k, rbv), r);
        if ((acc[r] = kir_new_acc(k, c->cdt)) < 0)
            return -1;
        kir_expr *init = zero(c);
        if (t->nkb > 1) {
            t->out(c, t, rows[r], g, j, oi);
            init = kb0 > 0 ? kir_load(k, c->out, oi) : kb1 == 1 ? init
                 : kir_op3(k, KIR_SELECT, c->cdt, first, init, kir_load(k, c->out, oi));
        }
        if (!kir_acc_set(k, tb, acc[r], init))
            return -1;
    }
    kir_block *kbody = tb;
    if (t->k_open(c, t, kb, g, &kbody) < 0)
        return -1;
    kir_expr *bv = t->b(c, t, g, j);
    kir_expr *rel = q->apk >= 0 ? kir_iadd(k, kir_var(k, rbv), kir_imul(k, rb0, lw_i64c(k, -1))) : NULL;
    for (int r = 0; r < R; r++) {
        kir_expr *av = q->apk >= 0 ? kir_load(k, q->apk, (kir_expr *[]){rel, t->kstep(c, t), lw_i64c(k, r)})
                                   : t->a(c, t, rows[r]);
        kir_expr *f = kir_op3(k, KIR_FMA, c->cdt, av, bv, kir_acc(k, acc[r]));
        if (!kir_acc_set(k, kbody, acc[r], f))
            return -1;
    }
    if (!ro && t->prefetch && t->pf_lines > 0 && c->s->prefetch_b &&
        tile_prefetch(c, t, q, kbody, kir_var(k, rbv), rb0, g, j0) < 0)
        return -1;
    for (int r = 0; r < R; r++) {
        t->out(c, t, rows[r], g, j, oi);
        kir_expr *v = kir_acc(k, acc[r]);
        if (final) {
            if (t->epi)
                v = t->epi(c, t, v, rows[r], g, j);
            v = lower_epi(c, v, oi);
        }
        if (!kir_store(k, tb, c->out, oi, v))
            return -1;
    }
    return 0;
}

int cg_tile_lower(lctx *c, cg_tile *t)
{
    kir_kernel *k = c->k;
    int R = t->rows;
    if (R < 1 || R > TILE_MAX_ROWS || t->width < 1 || t->nkb < 1)
        return -1;
    tile_geo q = {.nb = t->m_dyn ? 1 : cdiv(t->m, R), .np = t->n_dyn ? 1 : cdiv(t->n, t->width), .apk = -1};
    q.nq = t->ng * q.np;
    if (t->m_dyn)
        q.nb_dyn = lw_idivc(k, kir_iadd(k, t->m_dyn, lw_i64c(k, R - 1)), R);
    /* chunks of row blocks x column panels, split evenly; more of them
     * when there are too few to share between threads (a stream: its
     * column chunks of whole panels only) */
    int64_t sc = t->stream_chunks > 1 ? t->stream_chunks : 1, nrc, ncc;
    int64_t mcb = t->mc_blocks > 0 ? t->mc_blocks : c->s->tile_mc_blocks;
    if (t->stream) {
        nrc = 1;
        ncc = sc < q.nq ? sc : q.nq;
    } else if (t->n_dyn) {
        nrc = cdiv(q.nb, mcb);
        ncc = 1;
    } else
        cg_schedule_tile_chunks(c->s, t->nbat, q.nb, q.nq, mcb, t->pack_a, t->b_copied, R, t->width, &nrc, &ncc);
    if (t->n_dyn) {
        /* panels known at run time: a constant number of column chunks,
         * enough for the threads, each taking its share */
        if (t->stream || t->pack_a || t->m_dyn)
            return -1;
        kir_expr *np = lw_idivc(k, lw_iaddc(k, t->n_dyn, t->width - 1), t->width);
        q.np_dyn = np;
        q.nq_dyn = kir_imul(k, t->ng_dyn, np);
        ncc = cdiv(4 * c->s->min_chunks, t->nbat * nrc);
        q.ncp_dyn = lw_idivc(k, lw_iaddc(k, q.nq_dyn, ncc - 1), ncc);
    }
    q.mcb = cdiv(q.nb, nrc);
    nrc = cdiv(q.nb, q.mcb);
    if (!t->n_dyn) {
        q.ncp = cdiv(q.nq, ncc);
        ncc = cdiv(q.nq, q.ncp);
    }
    int64_t nch = nrc * ncc;
    t->pf_same_panel = !t->n_dyn && q.ncp == 1 && t->nkb > 1;
    /* A packed only where each copied element is read by two panels or more */
    if (t->pack_a && t->kstep && t->kc > 0 && !t->m_dyn && !t->stream && q.ncp >= 2 &&
        (q.apk = kir_add_scratch(k, "apanel", KIR_SPACE_THREAD, c->cdt, 3, (int64_t[]){q.mcb, t->kc, R})) < 0)
        return -1;

    int pv = kir_new_var(k);
    kir_stmt *lp = kir_for(k, &k->body, pv, lw_i64c(k, 0), lw_i64c(k, t->nbat * nch), KIR_PARALLEL, 0);
    if (!lp)
        return -1;
    kir_expr *p = kir_var(k, pv);
    if (t->setup && t->setup(c, t, t->nbat > 1 ? lw_idivc(k, p, nch) : lw_i64c(k, 0)) < 0)
        return -1;
    kir_expr *pc = kir_op2(k, KIR_REM, IR_I64, p, lw_i64c(k, nch));
    q.rc = lw_idivc(k, pc, ncc);
    q.cc = kir_op2(k, KIR_REM, IR_I64, pc, lw_i64c(k, ncc));
    /* the first block starts from zero, the others from the partial sums
     * in the output: separate loops, because a select on the block index
     * is widened per lane (8 inserts per register) where the emitter does
     * not hoist it */
    if (t->nkb > 1 && tile_blocks(c, t, &q, &lp->body, 0, 1, false) < 0)
        return -1;
    if (t->nkb > 2 && tile_blocks(c, t, &q, &lp->body, 1, t->nkb - 1, false) < 0)
        return -1;
    return tile_blocks(c, t, &q, &lp->body, t->nkb - 1, t->nkb, true);
}
