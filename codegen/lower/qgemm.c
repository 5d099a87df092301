/* qgemm.c - MatMulInteger (u8/i8 A [..., M, K] x u8/i8 B [K, N] -> i32)
 * as a register-blocked kernel on pairs of k.
 *
 * y[i, j] = sum_k (a[i,k] - za) * (b[k,j] - zb[j])
 *         = sum_k a'[i,k] * b[k,j] - zb[j] * sum_k a'[i,k],  a' = a - za
 * (exact in wrapping i32, as the reference's sum). The rows of A (all its
 * dims but the last, flattened) come in blocks of R: each block's a' is
 * packed once into a thread scratch of i16 (zero past K, so an odd K's
 * last pair adds nothing) with its row sums, and then every column panel
 * of W lanes of the parallel chunk runs over it: R x W/lanes vector
 * accumulators (thread scratch with constant offsets, which LLVM keeps in
 * registers) and per pair of k one pmaddwd intrinsic per row
 * (kir_intrinsics.def): B's rows 2p and 2p+1 interleaved, widened to i16
 * and multiplied by a'[i, 2p..2p+1] broadcast, summed pairwise into i32
 * (AVX2 vpmaddwd, 16 multiply-adds; i16 x i16 products cannot
 * saturate, unlike vpmaddubsw's). B is read in place, never repacked; the
 * zero point of B costs one multiply per output. The last column panel
 * starts at N - W (it recomputes columns of the one before it: the sums
 * run over all of K in registers, so nothing is accumulated twice) and
 * rows past M are clamped to the last row, so no load leaves B or A.
 * Parallel chunks are row blocks x column panels as in tile.c, a chunk's
 * columns (up to ~256) keeping its B panel in L2.
 */
#include "codegen/lower/qgemm.h"

enum { QG_MAX_ROWS = 32 };

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int64_t numel(const ir_type *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++)
        n *= t->dims[d].v;
    return n;
}

static bool type_const(const ir_type *t)
{
    for (int d = 0; d < t->rank; d++)
        if (!ir_dim_is_const(t->dims[d]) || t->dims[d].v < 1)
            return false;
    return true;
}

bool qgemm_ok(const lctx *c)
{
    const ir_node *n = c->n;
    const ir_type *ta = &n->in[0]->type, *tb = &n->in[1]->type;
    if (tb->rank != 2 || ta->rank < 2 || !type_const(ta) || !type_const(tb) || c->s->lanes < 4)
        return false;
    int64_t k = tb->dims[0].v, nn = tb->dims[1].v;
    /* the panel must fit in a row of B; the lane count of one intrinsic */
    return nn >= c->s->lanes && k < (INT64_C(1) << 30) && numel(ta) < (INT64_C(1) << 40);
}

/* Zero point input i (absent: NULL) at index ch (a per-row or per-column
 * vector; ignored for a single value), in i32. */
static kir_expr *zp(lctx *c, int i, kir_expr *ch)
{
    const ir_node *n = c->n;
    if (n->nin <= i || !n->in[i] || c->buf[i] < 0)
        return NULL;
    const ir_type *t = &n->in[i]->type;
    kir_expr *idx[IR_MAX_RANK];
    for (int d = 0; d < t->rank; d++)
        idx[d] = numel(t) == 1 ? lw_i64c(c->k, 0) : ch;
    return kir_op1(c->k, KIR_CAST, IR_I32, kir_load(c->k, c->buf[i], idx));
}

/* Index of a row-major [rows, cols] view of a buffer of rank r: the
 * backends linearize, so the flat row in the second-to-last index with
 * zeros before it addresses the element (lower_unflatten's note). */
static void flat_idx(kir_kernel *k, int r, kir_expr *row, kir_expr *col, kir_expr **ix)
{
    for (int d = 0; d < r - 2; d++)
        ix[d] = lw_i64c(k, 0);
    ix[r - 2] = row;
    ix[r - 1] = col;
}

int lower_qgemm(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *ta = &n->in[0]->type, *tb = &n->in[1]->type;
    int ra = ta->rank;
    int64_t M = numel(ta) / ta->dims[ra - 1].v, K = tb->dims[0].v, N = tb->dims[1].v, Mrow = ta->dims[ra - 2].v;
    int L = c->s->lanes;
    int regs = c->s->tile_rows * c->s->tile_vecs; /* accumulator registers */
    int R = M < c->s->tile_rows ? (int)M : c->s->tile_rows;
    if (R < 1 || R > QG_MAX_ROWS)
        return -1;
    int V = regs / R;
    if (V > 8)
        V = 8;
    if (V > N / L)
        V = (int)(N / L);
    int64_t W = (int64_t)V * L;
    int64_t nb = cdiv(M, R), np = cdiv(N, W);
    int64_t ncp = 256 / W > 1 ? 256 / W : 1, mcb = c->s->tile_mc_blocks;
    int64_t nrc = cdiv(nb, mcb), ncc = cdiv(np, ncp);
    while (nrc * ncc < c->s->min_chunks && (nrc < nb || ncc < np)) {
        if (ncc < np && (nrc >= nb || np * nrc >= nb * ncc))
            ncc++;
        else
            nrc++;
    }
    mcb = cdiv(nb, nrc);
    ncp = cdiv(np, ncc);
    nrc = cdiv(nb, mcb);
    ncc = cdiv(np, ncp);
    int64_t kp = (K + 1) / 2 * 2;
    if (kp < 2 * W)
        kp = 2 * W; /* the pair operand is checked as spanning 2 W elements */
    bool has_zb = zp(c, 3, lw_i64c(k, 0)) != NULL;
    int a16 = kir_add_scratch(k, "qa16", KIR_SPACE_THREAD, IR_I16, 2, (int64_t[]){R, kp});
    int acc = kir_add_scratch(k, "qacc", KIR_SPACE_THREAD, IR_I32, 2, (int64_t[]){R, W});
    int rs = has_zb ? kir_add_scratch(k, "qrowsum", KIR_SPACE_THREAD, IR_I32, 1, (int64_t[]){R}) : 0;
    if (a16 < 0 || acc < 0 || rs < 0)
        return -1;
    kir_intrin op = n->in[1]->type.dtype == IR_U8 ? KIR_IN_PMADDWD_U8 : KIR_IN_PMADDWD_S8;

    int pv = kir_new_var(k), rbv = kir_new_var(k), qv = kir_new_var(k);
    kir_stmt *lp = kir_for(k, &k->body, pv, lw_i64c(k, 0), lw_i64c(k, nrc * ncc), KIR_PARALLEL, 0);
    if (!lp)
        return -1;
    kir_expr *p = kir_var(k, pv);
    kir_expr *rb0 = lw_imulc(k, lw_idivc(k, p, ncc), mcb), *q0 = lw_imulc(k, lw_iremc(k, p, ncc), ncp);
    kir_stmt *lrb = kir_for(k, &lp->body, rbv, rb0, lw_imin(k, lw_i64c(k, nb), lw_iaddc(k, rb0, mcb)), KIR_SERIAL, 0);
    if (!lrb)
        return -1;
    kir_block *bb = &lrb->body;
    kir_expr *rows[QG_MAX_ROWS];
    /* pack a' of the block's rows, and their sums */
    for (int r = 0; r < R; r++) {
        rows[r] = lw_imin(k, lw_iaddc(k, lw_imulc(k, kir_var(k, rbv), R), r), lw_i64c(k, M - 1));
        int kv = kir_new_var(k);
        kir_stmt *lk = kir_for(k, bb, kv, lw_i64c(k, 0), lw_i64c(k, K), KIR_VECTOR, 2 * L);
        if (!lk)
            return -1;
        kir_expr *ai[IR_MAX_RANK];
        flat_idx(k, ra, rows[r], kir_var(k, kv), ai);
        kir_expr *a = kir_op1(k, KIR_CAST, IR_I32, kir_load(k, c->buf[0], ai));
        kir_expr *za = zp(c, 2, lw_iremc(k, rows[r], Mrow));
        if (za)
            a = kir_op2(k, KIR_SUB, IR_I32, a, za);
        if (!kir_store(k, &lk->body, a16, (kir_expr *[]){lw_i64c(k, r), kir_var(k, kv)}, kir_op1(k, KIR_CAST, IR_I16, a)))
            return -1;
        for (int64_t z = K; z < kp; z++) /* at most 2 W: the pad past K */
            if (!kir_store(k, bb, a16, (kir_expr *[]){lw_i64c(k, r), lw_i64c(k, z)}, kir_const_i(k, IR_I16, 0)))
                return -1;
        if (has_zb) {
            int sv = kir_new_var(k), sa = kir_new_acc(k, IR_I32);
            if (sa < 0 || !kir_acc_set(k, bb, sa, kir_const_i(k, IR_I32, 0)))
                return -1;
            kir_stmt *ls = kir_for(k, bb, sv, lw_i64c(k, 0), lw_i64c(k, K), KIR_VECTOR, L);
            kir_expr *v = kir_load(k, a16, (kir_expr *[]){lw_i64c(k, r), kir_var(k, sv)});
            if (!ls || !kir_acc_set(k, &ls->body, sa, kir_op2(k, KIR_ADD, IR_I32, kir_acc(k, sa), kir_op1(k, KIR_CAST, IR_I32, v))))
                return -1;
            if (!kir_store(k, bb, rs, (kir_expr *[]){lw_i64c(k, r)}, kir_acc(k, sa)))
                return -1;
        }
    }
    /* the chunk's column panels over the packed rows */
    kir_stmt *lq = kir_for(k, bb, qv, q0, lw_imin(k, lw_i64c(k, np), lw_iaddc(k, q0, ncp)), KIR_SERIAL, 0);
    if (!lq)
        return -1;
    kir_block *qb = &lq->body;
    kir_expr *j0 = lw_imin(k, lw_imulc(k, kir_var(k, qv), W), lw_i64c(k, N - W));
    for (int r = 0; r < R; r++)
        for (int v = 0; v < V; v++) {
            int lv = kir_new_var(k);
            kir_stmt *l = kir_for(k, qb, lv, lw_i64c(k, 0), lw_i64c(k, L), KIR_VECTOR, L);
            kir_expr *ix[] = {lw_i64c(k, r), lw_iaddc(k, kir_var(k, lv), (int64_t)v * L)};
            if (!l || !kir_store(k, &l->body, acc, ix, kir_const_i(k, IR_I32, 0)))
                return -1;
        }
    int pk = kir_new_var(k);
    kir_stmt *lk = kir_for(k, qb, pk, lw_i64c(k, 0), lw_i64c(k, cdiv(K, 2)), KIR_SERIAL, 0);
    if (!lk)
        return -1;
    kir_expr *k0 = lw_imulc(k, kir_var(k, pk), 2);
    kir_expr *k1 = lw_imin(k, lw_iaddc(k, k0, 1), lw_i64c(k, K - 1));
    for (int r = 0; r < R; r++) {
        kir_expr *ia[] = {lw_i64c(k, r), lw_i64c(k, 0)}, *ip[] = {lw_i64c(k, r), k0};
        kir_expr *ib0[] = {k0, j0}, *ib1[] = {k1, j0};
        kir_iarg args[4] = {
            {.buf = acc, .nidx = 2, .idx = ia}, {.buf = a16, .nidx = 2, .idx = ip},
            {.buf = c->buf[1], .nidx = 2, .idx = ib0}, {.buf = c->buf[1], .nidx = 2, .idx = ib1},
        };
        if (!kir_intrinsic(k, &lk->body, op, (int)W, args))
            return -1;
    }
    /* y = acc - zb * rowsum, through the fused epilogue */
    for (int r = 0; r < R; r++)
        for (int v = 0; v < V; v++) {
            int lv = kir_new_var(k);
            kir_stmt *l = kir_for(k, qb, lv, lw_i64c(k, 0), lw_i64c(k, L), KIR_VECTOR, L);
            if (!l)
                return -1;
            kir_expr *col = lw_iaddc(k, kir_var(k, lv), (int64_t)v * L);
            kir_expr *y = kir_load(k, acc, (kir_expr *[]){lw_i64c(k, r), col});
            kir_expr *j = kir_iadd(k, j0, col);
            kir_expr *zb = zp(c, 3, j);
            if (zb)
                y = kir_op2(k, KIR_SUB, IR_I32, y,
                            kir_op2(k, KIR_MUL, IR_I32, zb, kir_load(k, rs, (kir_expr *[]){lw_i64c(k, r)})));
            kir_expr *oi[IR_MAX_RANK];
            ir_type lead = n->out[0]->type;
            lead.rank--;
            lower_unflatten(c, &lead, rows[r], oi);
            oi[lead.rank] = j;
            if (!kir_store(k, &l->body, c->out, oi, lw_to_out(c, lower_epi(c, y, oi))))
                return -1;
        }
    return 0;
}
