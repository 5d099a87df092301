/* qgemm.c - the INT8 contractions: MatMulInteger (u8/i8 A [..., M, K] x
 * u8/i8 B [K, N], or B [..., K, N] with the output's batch dims -> i32)
 * and group-1 ConvInteger (im2col per parallel chunk, by output rows for
 * strided or padded windows), as a register-blocked kernel stepping 2 k by vpmaddwd (AVX2) or
 * 4 k by vpdpbusd (VNNI, MatMulInteger only), or by vpmaddubsw + vpmaddwd
 * by ones on AVX2 when constant B cannot saturate its i16 pair sums
 * (qg_ub_exact). docs/precision.md ("INT8 kernels") has the algebra and
 * the numbers.
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
 * (16 multiply-adds; i16 x i16 products cannot saturate, unlike
 * vpmaddubsw's). The zero point of B costs one multiply per output. The
 * last column panel starts at N - W (it recomputes columns of the one
 * before it: the sums run over all of K in registers, so nothing is
 * accumulated twice) and rows past M are clamped to the last row, so no
 * load leaves B or A. Parallel chunks are row blocks x column panels as
 * in tile.c; with 16+ rows a chunk first copies its panels of B into
 * thread scratch, K x W contiguous (internal: nothing outside this file
 * sees the layout). The quad form (schedule.int8_quads) shifts operands
 * into u8 x s8 and corrects with row and column sums.
 */
#include "codegen/lower/qgemm.h"

#include <string.h>

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

/* Operand t is 2-D, or its batch dims (all but the last two) are the
 * output o's (no broadcasting: a batched B reads the matrix of the
 * output's batch index, and so does a batched A). */
static bool batch_same(const ir_type *t, const ir_type *o)
{
    if (t->rank == 2)
        return true;
    if (t->rank != o->rank)
        return false;
    for (int d = 0; d < t->rank - 2; d++)
        if (t->dims[d].v != o->dims[d].v)
            return false;
    return true;
}

bool qgemm_ok(const lctx *c)
{
    const ir_node *n = c->n;
    const ir_type *ta = &n->in[0]->type, *tb = &n->in[1]->type, *to = &n->out[0]->type;
    if (tb->rank < 2 || ta->rank < 2 || !type_const(ta) || !type_const(tb) || c->s->lanes < 4)
        return false;
    int64_t k = tb->dims[tb->rank - 2].v, nn = tb->dims[tb->rank - 1].v;
    if (tb->rank > 2 && (!batch_same(ta, to) || !batch_same(tb, to)))
        return false;
    /* the panel must fit in a row of B; the lane count of one intrinsic */
    /* thread scratch (256 KiB a kernel): a' of the rows and B's panels
     * within 96 KiB each (a batched B is always copied into panels) */
    return nn >= c->s->lanes && k <= 8192 && numel(ta) < (INT64_C(1) << 40) &&
           (tb->rank == 2 || k * c->s->lanes * 8 <= (INT64_C(96) << 10));
}

bool qgemm_packed_ok(const lctx *c)
{
    const ir_node *n = c->n;
    const ir_type *tb = &n->in[1]->type;
    int64_t pw = ir_attr_int(n, "packed_b", 0), L = c->s->lanes;
    if (pw == 0)
        return true;
    int64_t K = tb->dims[tb->rank - 2].v, N = tb->dims[tb->rank - 1].v;
    return ir_attr_int(n, "packed_k", 1) == 4 && tb->rank == 2 && tb->dtype == IR_I8 && c->buf[1] >= 0 &&
           K % 4 == 0 && K >= 4 && N % pw == 0 && pw % L == 0 && pw / L <= 16;
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

/* Index (first, 0, ..., 0, last) of a buffer of rank r: row `first` of
 * dim 0 and the flat position `last` inside it (the linearization). */
static void lin_idx(kir_kernel *k, int r, kir_expr *first, kir_expr *last, kir_expr **ix)
{
    ix[0] = first;
    for (int d = 1; d < r - 1; d++)
        ix[d] = lw_i64c(k, 0);
    ix[r - 1] = last;
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


/* ---- the kernel shared by both ops ----------------------------------------- */

/* One contraction y[row, col] = sum_k a'[row, k] * b[k, col] - zb(col) *
 * sum_k a'[row, k] on the pair kernel: R rows of a' packed in a16, W
 * columns of B (a 2-D buffer [K, cols]) per panel. */
typedef struct qg qg;
struct qg {
    int R, V, L;
    int64_t W, K, kp;          /* kp: a16's row length (of whole groups of 2 or 4 k, >= K, >= group x W) */
    int a16, acc, rs;          /* thread scratch; rs < 0: no B zero point */
    /* quads (VNNI): a16 holds a~ = a + aoff as u8 in groups of 4 k (a
     * tail group ending at K), B's u8 rows count as b - 128 (boff), and
     * cs the chunk's column sums of B from column cbase */
    bool quads;
    int aoff, boff, cs;
    kir_expr *cbase;
    int bbuf;                  /* B: [K, cols], or packed [panels, K, W] when bq is set */
    kir_expr *bq;              /* the packed panel of the current one (NULL: B in place) */
    int64_t wfix;              /* > 0: panels exactly this wide (B packed at compile time) */
    bool packed;               /* bbuf: a flat view of B packed in quads of k (packed_k = 4):
                                  panels of W columns, each [K/4, W, 4] */
    bool amx;                  /* AMX-INT8 (packed B, 32 rows): bamx, B's full panels as
                                  [panels x K/4, 4 W] rows of quads, the tiles' view */
    int bamx;
    int pst;                   /* AMX with K a multiple of 64: the pending panel (qg_pend_rows)
                                  in i64 thread scratch [on, j0, slot]; acc then has two slots
                                  of R rows. Else -1: each panel's epilogue right after it */
    kir_expr *row0;            /* ... and the output row of the block's row 0 (rows[0] unclamped) */
    int64_t mrows;             /* ... the rows past which rows[] clamp (M - 1 of batch bofs) */
    kir_expr *bofs;            /* ... the batch's first output row, or NULL */
    kir_intrin op;
    kir_expr *rows[QG_MAX_ROWS];
    kir_expr *colbase;         /* the output column of B's column 0 */
    int64_t ncols;             /* output columns: stores stop there */
    bool cols_in;              /* every panel's columns lie below ncols (its
                                  last one starts at ncols - W): the stores
                                  take whole vectors, no bound */
    void *u;
    kir_expr *(*a)(lctx *c, qg *q, int r, kir_expr *k);     /* a[row r, k] (u8/i8) */
    kir_expr *(*za)(lctx *c, qg *q, int r);                  /* i32, or NULL */
    kir_expr *(*zb)(lctx *c, qg *q, kir_expr *col);          /* at output column col: i32, or NULL */
    /* the output's index of (row r, output column col) */
    void (*out)(lctx *c, qg *q, int r, kir_expr *col, kir_expr **ix);
};

/* The quads' a~ of row r: groups of 4 k, the last one (K not a multiple
 * of 4) the quad ending at K with the k already counted zeroed. */
static int qg_pack_quads(lctx *c, qg *q, kir_block *b, int r)
{
    kir_kernel *k = c->k;
    int64_t k4 = q->K / 4 * 4;
    int kv = kir_new_var(k);
    kir_stmt *lk = kir_for(k, b, kv, lw_i64c(k, 0), lw_i64c(k, k4), KIR_VECTOR, 4 * q->L);
    if (!lk)
        return -1;
    kir_expr *a = kir_op1(k, KIR_CAST, IR_I32, q->a(c, q, r, kir_var(k, kv)));
    a = kir_op1(k, KIR_CAST, IR_U8, kir_op2(k, KIR_ADD, IR_I32, a, kir_const_i(k, IR_I32, q->aoff)));
    if (!kir_store(k, &lk->body, q->a16, (kir_expr *[]){lw_i64c(k, r), kir_var(k, kv)}, a))
        return -1;
    int64_t end = k4;
    if (q->K > k4) {
        for (int j = 0; j < 4; j++) {
            int64_t kk = q->K - 4 + j;
            kir_expr *v = kir_const_i(k, IR_U8, 0);
            if (kk >= k4)
                v = kir_op1(k, KIR_CAST, IR_U8, kir_op2(k, KIR_ADD, IR_I32, kir_op1(k, KIR_CAST, IR_I32, q->a(c, q, r, lw_i64c(k, kk))),
                                                         kir_const_i(k, IR_I32, q->aoff)));
            if (!kir_store(k, b, q->a16, (kir_expr *[]){lw_i64c(k, r), lw_i64c(k, k4 + j)}, v))
                return -1;
        }
        end += 4;
    }
    int pv = kir_new_var(k);
    kir_stmt *lz = kir_for(k, b, pv, lw_i64c(k, end), lw_i64c(k, q->kp), KIR_VECTOR, 4 * q->L);
    return lz && kir_store(k, &lz->body, q->a16, (kir_expr *[]){lw_i64c(k, r), kir_var(k, pv)}, kir_const_i(k, IR_U8, 0)) ? 0 : -1;
}

/* a' of the rows q->rows[] into a16 (zero past K; quads: a~), and their
 * sums into rs. */
static int qg_pack(lctx *c, qg *q, kir_block *b)
{
    kir_kernel *k = c->k;
    for (int r = 0; r < q->R; r++) {
        if (q->quads) {
            if (qg_pack_quads(c, q, b, r) < 0)
                return -1;
            goto sums;
        }
        int kv = kir_new_var(k);
        kir_stmt *lk = kir_for(k, b, kv, lw_i64c(k, 0), lw_i64c(k, q->K), KIR_VECTOR, 2 * q->L);
        if (!lk)
            return -1;
        kir_expr *a = kir_op1(k, KIR_CAST, IR_I32, q->a(c, q, r, kir_var(k, kv)));
        kir_expr *za = q->za(c, q, r);
        if (za)
            a = kir_op2(k, KIR_SUB, IR_I32, a, za);
        if (!kir_store(k, &lk->body, q->a16, (kir_expr *[]){lw_i64c(k, r), kir_var(k, kv)}, kir_op1(k, KIR_CAST, IR_I16, a)))
            return -1;
        int pv = kir_new_var(k); /* the pad past K */
        kir_stmt *lz = kir_for(k, b, pv, lw_i64c(k, q->K), lw_i64c(k, q->kp), KIR_VECTOR, 2 * q->L);
        if (!lz || !kir_store(k, &lz->body, q->a16, (kir_expr *[]){lw_i64c(k, r), kir_var(k, pv)}, kir_const_i(k, IR_I16, 0)))
            return -1;
    sums:
        if (q->rs < 0)
            continue;
        int sv = kir_new_var(k), sa = kir_new_acc(k, IR_I32);
        if (sa < 0 || !kir_acc_set(k, b, sa, kir_const_i(k, IR_I32, 0)))
            return -1;
        kir_stmt *ls = kir_for(k, b, sv, lw_i64c(k, 0), lw_i64c(k, q->kp), KIR_VECTOR, q->L);
        kir_expr *v = kir_load(k, q->a16, (kir_expr *[]){lw_i64c(k, r), kir_var(k, sv)});
        if (!ls || !kir_acc_set(k, &ls->body, sa, kir_op2(k, KIR_ADD, IR_I32, kir_acc(k, sa), kir_op1(k, KIR_CAST, IR_I32, v))))
            return -1;
        if (!kir_store(k, b, q->rs, (kir_expr *[]){lw_i64c(k, r)}, kir_acc(k, sa)))
            return -1;
    }
    return 0;
}

/* y = acc - zb * rowsum (quads: the shifts' sums too) for row r of the
 * panel of B's columns [j0, j0 + W), through the fused epilogue: its sums
 * in acc's row ar, its row sum at rs[rr], the output row q->rows[r]. */
static int qg_epi_row(lctx *c, qg *q, kir_block *b, kir_expr *j0, kir_expr *ar, kir_expr *rr, int r)
{
    kir_kernel *k = c->k;
    int L = q->L;
    /* One vector loop over the panel's W columns a row. A loop per
     * vector (column j0 + v L + lane) let LLVM's instcombine turn j0 + v L
     * into an `or` (j0 a multiple of 64), which the loop vectorizer could
     * not follow: it stored through scatters, and with a run-time bound
     * ran the loops scalar, a quarter of a 128x768x768 MatMulInteger's
     * time. Panels of a MatMulInteger end inside the row (cols_in), so
     * their bound is the constant W. */
    int lv = kir_new_var(k);
    kir_expr *c0 = kir_iadd(k, q->colbase, j0);
    kir_expr *hi = q->cols_in ? lw_i64c(k, q->W)
                              : lw_imin(k, lw_i64c(k, q->W), kir_op2(k, KIR_SUB, IR_I64, lw_i64c(k, q->ncols), c0));
    kir_stmt *l = kir_for(k, b, lv, lw_i64c(k, 0), hi, KIR_VECTOR, L);
    if (!l)
        return -1;
    kir_expr *bcol = kir_var(k, lv);
    kir_expr *y = kir_load(k, q->acc, (kir_expr *[]){ar, bcol});
    kir_expr *col = kir_iadd(k, c0, kir_var(k, lv));
    kir_expr *zb = q->rs >= 0 ? q->zb(c, q, col) : NULL;
    if (q->quads) {
        /* y = sum a~ b~ - za~ cs - zb~ rowsum + K za~ zb~ */
        kir_expr *zat = q->za(c, q, r), *zbt = zb;
        if (q->aoff)
            zat = kir_op2(k, KIR_ADD, IR_I32, zat ? zat : kir_const_i(k, IR_I32, 0), kir_const_i(k, IR_I32, q->aoff));
        if (q->boff)
            zbt = kir_op2(k, KIR_SUB, IR_I32, zbt ? zbt : kir_const_i(k, IR_I32, 0), kir_const_i(k, IR_I32, q->boff));
        if (zat) {
            kir_expr *ci = kir_op2(k, KIR_SUB, IR_I64, col, q->cbase);
            y = kir_op2(k, KIR_SUB, IR_I32, y, kir_op2(k, KIR_MUL, IR_I32, zat, kir_load(k, q->cs, &ci)));
        }
        if (zbt) {
            kir_expr *rsum = kir_load(k, q->rs, (kir_expr *[]){rr});
            y = kir_op2(k, KIR_SUB, IR_I32, y, kir_op2(k, KIR_MUL, IR_I32, zbt, rsum));
        }
        if (zat && zbt)
            y = kir_op2(k, KIR_ADD, IR_I32, y,
                        kir_op2(k, KIR_MUL, IR_I32, kir_const_i(k, IR_I32, q->K), kir_op2(k, KIR_MUL, IR_I32, zat, zbt)));
    } else if (zb) {
        y = kir_op2(k, KIR_SUB, IR_I32, y,
                    kir_op2(k, KIR_MUL, IR_I32, zb, kir_load(k, q->rs, (kir_expr *[]){rr})));
    }
    kir_expr *oi[IR_MAX_RANK];
    q->out(c, q, r, col, oi);
    if (!kir_store(k, &l->body, c->out, oi, lw_to_out(c, lower_epi(c, y, oi))))
        return -1;
    return 0;
}


/* y = acc - zb * rowsum for the panel of B's columns [j0, j0 + W): every
 * row of the block (qg_epi_row). */
static int qg_epilogue(lctx *c, qg *q, kir_block *b, kir_expr *j0)
{
    for (int r = 0; r < q->R; r++)
        if (qg_epi_row(c, q, b, j0, lw_i64c(c->k, r), lw_i64c(c->k, r), r) < 0)
            return -1;
    return 0;
}

/* The pending panel's rows [s P, min(R, s P + P)), P = ceil(R / ks), when
 * there is one (q->pst's on): step s of a k loop of ks steps, so the loop
 * puts all R rows out while the tile unit multiplies the next panel (a
 * Gelu's ~55 instructions a vector then cost no tile time). The rows are
 * a run-time variable here: q->rows[0] stands for the row while its code
 * is emitted. */
static int qg_pend_rows(lctx *c, qg *q, kir_block *b, kir_expr *s, int64_t ks)
{
    kir_kernel *k = c->k;
    int64_t P = (q->R + ks - 1) / ks;
    int rv = kir_new_var(k);
    kir_expr *lo = lw_imulc(k, s, P);
    kir_stmt *on = kir_if(k, b, kir_op2(k, KIR_NE, IR_BOOL, lower_amx_st(k, q->pst, 0), lw_i64c(k, 0)));
    kir_stmt *lr = on ? kir_for(k, &on->body, rv, lo, lw_imin(k, lw_iaddc(k, lo, P), lw_i64c(k, q->R)), KIR_SERIAL, 0)
                      : NULL;
    if (!lr)
        return -1;
    kir_expr *rr = kir_var(k, rv), *save = q->rows[0];
    kir_expr *row = lw_imin(k, kir_iadd(k, q->row0, rr), lw_i64c(k, q->mrows));
    q->rows[0] = q->bofs ? kir_iadd(k, q->bofs, row) : row;
    kir_expr *ar = kir_iadd(k, lw_imulc(k, lower_amx_st(k, q->pst, 2), q->R), rr);
    int rc = qg_epi_row(c, q, &lr->body, lower_amx_st(k, q->pst, 1), ar, rr, 0);
    q->rows[0] = save;
    return rc;
}

/* The panel of B's columns [j0, j0 + W) on AMX-INT8 tiles (q->bamx): per
 * 32 of its columns, the 32 rows of a~ (a16: rows of kp bytes) times B's
 * quads as they lie, 2 x 2 tiles of 16 x 16 i32 sums, per 64 k four loads
 * and four tdpbusd (u8 a~ x i8 b~, vpdpbusd's product); the sums stored to
 * acc, where the quads past the last 64 k (dpbusd_quads) add to them. */
static int qg_panel_amx(lctx *c, qg *q, kir_block *b, kir_expr *j0)
{
    kir_kernel *k = c->k;
    kir_expr *prow = lw_imulc(k, lw_idivc(k, j0, q->W), q->K / 4); /* the panel's first row of quads */
    /* with a pending panel (q->pst), this one's sums go to the other slot
     * of acc, and the k loops put the pending one out */
    kir_expr *sl = q->pst >= 0 ? kir_let(k, b, lower_amx_flip(k, lower_amx_st(k, q->pst, 2))) : NULL;
    kir_expr *ar = sl ? lw_imulc(k, sl, q->R) : lw_i64c(k, 0);
    int64_t ks = q->K / 64;
    for (int64_t h = 0; h < q->W / 32; h++) {
        kir_stmt *lk = lower_amx_kloop(c, b, q->a16, lw_i64c(k, 0), NULL, 64, q->bamx, prow, lw_i64c(k, 128 * h), 64,
                                       16, 0, ks, KIR_IN_AMX_DPBUSD);
        /* the pending rows spread over the panel's k loops: step s of
         * loop h is step h ks + s of W / 32 x ks */
        if (!lk ||
            (sl && qg_pend_rows(c, q, &lk->body, lw_iaddc(k, kir_var(k, lk->var), h * ks), q->W / 32 * ks) < 0) ||
            lower_amx_store(c, b, q->acc, ar, lw_i64c(k, 32 * h)) < 0)
            return -1;
    }
    if (sl) /* this panel is the pending one now */
        return lower_amx_st_set(k, b, q->pst, 0, lw_i64c(k, 1)) < 0 || lower_amx_st_set(k, b, q->pst, 1, j0) < 0 ||
                       lower_amx_st_set(k, b, q->pst, 2, sl) < 0
                   ? -1
                   : 0;
    if (q->K % 64 == 0)
        return 0;
    int pk = kir_new_var(k);
    kir_stmt *lk = kir_for(k, b, pk, lw_i64c(k, q->K / 64 * 16), lw_i64c(k, q->K / 4), KIR_SERIAL, 0);
    if (!lk)
        return -1;
    kir_expr *pf = kir_iadd(k, lw_imulc(k, j0, q->K), lw_imulc(k, kir_var(k, pk), 4 * q->W));
    for (int r = 0; r < q->R; r++) {
        kir_iarg args[3] = {
            {.buf = q->acc, .nidx = 2, .idx = (kir_expr *[]){lw_i64c(k, r), lw_i64c(k, 0)}},
            {.buf = q->a16, .nidx = 2, .idx = (kir_expr *[]){lw_i64c(k, r), lw_imulc(k, kir_var(k, pk), 4)}},
            {.buf = q->bbuf, .nidx = 1, .idx = (kir_expr *[]){pf}},
        };
        if (!kir_intrinsic(k, &lk->body, KIR_IN_DPBUSD_QUADS, (int)q->W, args))
            return -1;
    }
    return 0;
}

/* The panel of B's columns [j0, j0 + W): accumulators, the pairs of k,
 * and the epilogue through lower_epi. */
static int qg_panel(lctx *c, qg *q, kir_block *b, kir_expr *j0)
{
    kir_kernel *k = c->k;
    int R = q->R, V = q->V, L = q->L;
    if (q->amx)
        return qg_panel_amx(c, q, b, j0) < 0 ? -1 : q->pst >= 0 ? 0 : qg_epilogue(c, q, b, j0);
    for (int r = 0; r < R; r++)
        for (int v = 0; v < V; v++) {
            int lv = kir_new_var(k);
            kir_stmt *l = kir_for(k, b, lv, lw_i64c(k, 0), lw_i64c(k, L), KIR_VECTOR, L);
            kir_expr *ix[] = {lw_i64c(k, r), lw_iaddc(k, kir_var(k, lv), (int64_t)v * L)};
            if (!l || !kir_store(k, &l->body, q->acc, ix, kir_const_i(k, IR_I32, 0)))
                return -1;
        }
    int pk = kir_new_var(k);
    kir_stmt *lk = kir_for(k, b, pk, lw_i64c(k, 0), lw_i64c(k, cdiv(q->K, q->quads ? 4 : 2)), KIR_SERIAL, 0);
    if (!lk)
        return -1;
    if (q->quads) {
        kir_expr *k0 = lw_imulc(k, kir_var(k, pk), 4);
        kir_expr *kr = lw_imin(k, k0, lw_i64c(k, q->K - 4)); /* the tail quad's rows end at K */
        for (int r = 0; r < R; r++) {
            kir_expr *ia[] = {lw_i64c(k, r), lw_i64c(k, 0)}, *ip[] = {lw_i64c(k, r), k0}, *ib[] = {kr, j0};
            kir_expr *pb[] = {q->bq, kr, lw_i64c(k, 0)}, *pq[] = {q->bq, kir_var(k, pk), lw_i64c(k, 0)};
            kir_iarg args[3] = {
                {.buf = q->acc, .nidx = 2, .idx = ia}, {.buf = q->a16, .nidx = 2, .idx = ip},
                q->bq ? (kir_iarg){.buf = q->bbuf, .nidx = 3, .idx = pb} : (kir_iarg){.buf = q->bbuf, .nidx = 2, .idx = ib},
            };
            if (q->op == KIR_IN_PMADDUBSW_QUADS || (q->op == KIR_IN_DPBUSD_QUADS && !q->packed))
                /* the chunk's interleaved quad pk (the tail's rows end at K too) */
                args[2] = (kir_iarg){.buf = q->bbuf, .nidx = 3, .idx = pq};
            kir_expr *pf[1];
            if (q->packed) { /* the weights' own quads: K is a multiple of 4 */
                pf[0] = kir_iadd(k, lw_imulc(k, j0, q->K), lw_imulc(k, kir_var(k, pk), 4 * q->W));
                args[2] = (kir_iarg){.buf = q->bbuf, .nidx = 1, .idx = pf};
            }
            if (!kir_intrinsic(k, &lk->body, q->op, (int)q->W, args))
                return -1;
        }
        return qg_epilogue(c, q, b, j0);
    }
    kir_expr *k0 = lw_imulc(k, kir_var(k, pk), 2);
    kir_expr *k1 = lw_imin(k, lw_iaddc(k, k0, 1), lw_i64c(k, q->K - 1));
    for (int r = 0; r < R; r++) {
        kir_expr *ia[] = {lw_i64c(k, r), lw_i64c(k, 0)}, *ip[] = {lw_i64c(k, r), k0};
        kir_expr *ib0[] = {k0, j0}, *ib1[] = {k1, j0};
        kir_expr *pb0[] = {q->bq, k0, lw_i64c(k, 0)}, *pb1[] = {q->bq, k1, lw_i64c(k, 0)};
        kir_iarg args[4] = {
            {.buf = q->acc, .nidx = 2, .idx = ia}, {.buf = q->a16, .nidx = 2, .idx = ip},
            {.buf = q->bbuf, .nidx = 2, .idx = ib0}, {.buf = q->bbuf, .nidx = 2, .idx = ib1},
        };
        if (q->bq) {
            args[2] = (kir_iarg){.buf = q->bbuf, .nidx = 3, .idx = pb0};
            args[3] = (kir_iarg){.buf = q->bbuf, .nidx = 3, .idx = pb1};
        }
        if (!kir_intrinsic(k, &lk->body, q->op, (int)q->W, args))
            return -1;
    }
    return qg_epilogue(c, q, b, j0);
}

/* The tile for M rows and `cols` columns: R rows of V vectors within the
 * schedule's accumulator registers, and the scratch. */
static int qg_init(lctx *c, qg *q, int64_t M, int64_t K, int64_t cols, int64_t wmax, bool zb)
{
    kir_kernel *k = c->k;
    q->L = c->s->lanes;
    int regs = c->s->tile_rows * c->s->tile_vecs, rows = c->s->tile_rows; /* accumulator registers */
    if (q->amx) /* blocks of 2 x 2 tiles: 32 rows, sums in scratch */
        rows = 32, regs = 32 * (int)(q->wfix / q->L);
    if (q->op == KIR_IN_PMADDUBSW_ROWS_S8 || q->op == KIR_IN_PMADDUBSW_ROWS_U8 || q->op == KIR_IN_PMADDUBSW_QUADS) {
        /* vpmaddubsw's i16 products and the vector of ones take two
         * registers more than vpmaddwd's: 4 x 2 accumulators leave the
         * 16 ymm room for B's two vectors, the broadcast and both (6 x 2
         * spilled: 1.4x the instructions; 5 x 2 measured 1% fewer than
         * 4 x 2 under callgrind) */
        regs = regs < 8 ? regs : 8;
        rows = rows < 4 ? rows : 4;
    }
    q->R = M < rows ? (int)M : rows;
    if (q->R < 1 || q->R > QG_MAX_ROWS)
        return -1;
    q->V = regs / q->R;
    if (q->V > 8)
        q->V = 8;
    /* the quad intrinsics span at most 64 lanes (one 512-bit vector of
     * i32 per 16): few rows on a 16-lane target would ask for 128 */
    if (q->quads && q->V > 64 / q->L)
        q->V = 64 / q->L > 0 ? 64 / q->L : 1;
    if (q->V > cdiv(cols, q->L))
        q->V = (int)cdiv(cols, q->L);
    if (q->V > wmax / q->L)
        q->V = (int)(wmax / q->L);
    if (q->V < 1)
        q->V = 1;
    if (q->wfix > 0) /* (lower_qgemm checked: a multiple of the lanes, at most 16 vectors) */
        q->V = (int)(q->wfix / q->L);
    q->W = (int64_t)q->V * q->L;
    q->K = K;
    int grp = q->quads ? 4 : 2;
    q->kp = cdiv(K, grp) * grp;
    if (q->kp < grp * q->W)
        q->kp = grp * q->W; /* the group operand is checked as spanning grp W elements */
    /* a~'s rows for AMX a line longer when they are a multiple of 1 KiB:
     * rows 1 KiB apart fall in the same few L1 sets, so the tile loads of
     * a~'s 32 rows missed where they should hit (MatMulInteger 1024^3, one
     * core: 952-962 -> 974-997 G int-ops/s, four alternated rounds) */
    q->a16 = kir_add_scratch(k, q->quads ? "qa8" : "qa16", KIR_SPACE_THREAD, q->quads ? IR_U8 : IR_I16, 2,
                             (int64_t[]){q->R, q->amx && q->kp % 1024 == 0 ? q->kp + 64 : q->kp});
    q->acc = kir_add_scratch(k, "qacc", KIR_SPACE_THREAD, IR_I32, 2, (int64_t[]){q->pst >= 0 ? 2 * q->R : q->R, q->W});
    q->rs = zb ? kir_add_scratch(k, "qrowsum", KIR_SPACE_THREAD, IR_I32, 1, (int64_t[]){q->R}) : -1;
    return q->a16 < 0 || q->acc < 0 || (zb && q->rs < 0) ? -1 : 0;
}

/* Chunks of nb row blocks x np column panels (at least min_chunks with
 * nbat problems, as tile.c splits): *mcb blocks and *ncp panels each.
 * cols_first: split the columns before the rows (ConvInteger, where each
 * chunk builds x~ for its columns: a row split would build it again). */
static void qg_chunks(lctx *c, int64_t nbat, int64_t nb, int64_t np, bool cols_first, int64_t *mcb, int64_t *ncp,
                      int64_t *nrc, int64_t *ncc)
{
    int64_t rc = cdiv(nb, *mcb), cc = cdiv(np, *ncp);
    while (nbat * rc * cc < c->s->min_chunks && (rc < nb || cc < np)) {
        if (cc < np && (rc >= nb || cols_first || np * rc >= nb * cc))
            cc++;
        else
            rc++;
    }
    *mcb = cdiv(nb, rc);
    *ncp = cdiv(np, cc);
    *nrc = cdiv(nb, *mcb);
    *ncc = cdiv(np, *ncp);
}

/* The column sums of b~ = b - q->boff over the K rows of the 2-D buffer
 * buf into q->cs, appended to b: lanes [0, hi), lane l summing column
 * l + c0 (c0 NULL: l). 0, or -1 on out of memory. */
static int qg_colsums(lctx *c, qg *q, kir_block *b, int buf, kir_expr *hi, kir_expr *c0)
{
    kir_kernel *k = c->k;
    int lv = kir_new_var(k), kv = kir_new_var(k), sa = kir_new_acc(k, IR_I32);
    kir_stmt *ll = kir_for(k, b, lv, lw_i64c(k, 0), hi, KIR_VECTOR, q->L);
    if (sa < 0 || !ll || !kir_acc_set(k, &ll->body, sa, kir_const_i(k, IR_I32, -q->boff * q->K)))
        return -1;
    kir_stmt *lk = kir_for(k, &ll->body, kv, lw_i64c(k, 0), lw_i64c(k, q->K), KIR_SERIAL, 0);
    kir_expr *col = c0 ? kir_iadd(k, kir_var(k, lv), c0) : kir_var(k, lv);
    kir_expr *bv = kir_load(k, buf, (kir_expr *[]){kir_var(k, kv), col});
    if (!lk || !kir_acc_set(k, &lk->body, sa, kir_op2(k, KIR_ADD, IR_I32, kir_acc(k, sa), kir_op1(k, KIR_CAST, IR_I32, bv))))
        return -1;
    return kir_store(k, &ll->body, q->cs, (kir_expr *[]){kir_var(k, lv)}, kir_acc(k, sa)) ? 0 : -1;
}

/* Panels [0, np) of the 2-D buffer src (K rows of sdt; panel iv's columns
 * from min((q0 + iv) W, cmax), or iv W with q0 NULL) interleaved in quads of k into dst
 * [panels, K/4 rounded up, 4 W], appended to b: quad kq is rows kr..kr+3
 * from kr = min(4 kq, K - 4) (the tail quad as qg_panel reads it), b~ (u8
 * less 128). 0, or -1 on out of memory. */
static int qg_quad_panels(lctx *c, qg *q, kir_block *b, int dst, int src, ir_dtype sdt, kir_expr *np, kir_expr *q0,
                          int64_t cmax)
{
    kir_kernel *k = c->k;
    int kv = kir_new_var(k), iv = kir_new_var(k);
    kir_stmt *lk = kir_for(k, b, kv, lw_i64c(k, 0), lw_i64c(k, cdiv(q->K, 4)), KIR_SERIAL, 0);
    kir_stmt *li = lk ? kir_for(k, &lk->body, iv, lw_i64c(k, 0), np, KIR_SERIAL, 0) : NULL;
    if (!li)
        return -1;
    kir_expr *j0 = q0 ? lw_imin(k, lw_imulc(k, kir_iadd(k, q0, kir_var(k, iv)), q->W), lw_i64c(k, cmax))
                      : lw_imulc(k, kir_var(k, iv), q->W);
    kir_expr *kr = lw_imin(k, lw_imulc(k, kir_var(k, kv), 4), lw_i64c(k, q->K - 4));
    kir_expr *di[] = {kir_var(k, iv), kir_var(k, kv), lw_i64c(k, 0)}, *si[] = {kr, j0};
    kir_iarg args[2] = {{.buf = dst, .nidx = 3, .idx = di}, {.buf = src, .nidx = 2, .idx = si}};
    return kir_intrinsic(k, &li->body, sdt == IR_U8 ? KIR_IN_QUAD_PACK_U8 : KIR_IN_QUAD_PACK_S8, (int)q->W, args)
               ? 0 : -1;
}

/* ---- MatMulInteger ------------------------------------------------------------ */

/* |b~[k0, j]| + |b~[k0 + 1, j]| <= 128 for every column j. */
static bool ub_pair(const ir_tensor *t, int64_t k0, int64_t N, int boff)
{
    for (int64_t j = 0; j < N; j++) {
        int64_t b0 = ir_tensor_geti(t, k0 * N + j) - boff, b1 = ir_tensor_geti(t, (k0 + 1) * N + j) - boff;
        if ((b0 < 0 ? -b0 : b0) + (b1 < 0 ? -b1 : b1) > 128)
            return false;
    }
    return true;
}

/* Whether the quad kernel may run on vpmaddubsw (pmaddubsw_quads /
 * pmaddubsw_rows, AVX2 without VNNI) for B = bv: a constant [K, N]
 * whose b~ = b - boff has |b~0| + |b~1| <= 128 in every pair of k that
 * vpmaddubsw sums into a saturating i16, so that no sum of 255 x b~0 + 255 x b~1 leaves it
 * (32640 at most). The pairs are (4g, 4g + 1) and (4g + 2, 4g + 3) of
 * the whole quads, and in the tail quad (rows K-4 .. K-1, whose k below
 * K/4*4 have a~ = 0: a single product, which fits) only (K-2, K-1) when
 * both are past K/4*4. Weights of 7 bits ([-64, 63], passes/quantize.c's
 * on targets without VNNI, ORT's reduce_range) always pass. */
static bool qg_ub_exact(const lctx *c, const ir_value *bv, int64_t K, int64_t N, int boff)
{
    if (!c->s->target || !icc_target_has(c->s->target, ICC_TF_AVX2) || bv->kind != IR_VAL_CONST ||
        bv->type.rank != 2 || !bv->cval.data || bv->cval.numel != K * N)
        return false;
    int64_t k4 = K / 4 * 4;
    for (int64_t k0 = 0; k0 < k4; k0 += 2)
        if (!ub_pair(&bv->cval, k0, N, boff))
            return false;
    return K - k4 < 2 || ub_pair(&bv->cval, K - 2, N, boff);
}

typedef struct {
    int ra;                    /* A's rank */
    int64_t mrow;              /* A's second-to-last dim (per-row zero points) */
    bool a2;                   /* a batched B with a 2-D A: A's row is the output row mod M */
} qmm;

static kir_expr *mm_a(lctx *c, qg *q, int r, kir_expr *kx)
{
    kir_expr *ix[IR_MAX_RANK];
    qmm *u = q->u;
    flat_idx(c->k, u->ra, u->a2 ? lw_iremc(c->k, q->rows[r], u->mrow) : q->rows[r], kx, ix);
    return kir_load(c->k, c->buf[0], ix);
}

static kir_expr *mm_za(lctx *c, qg *q, int r) { return zp(c, 2, lw_iremc(c->k, q->rows[r], ((qmm *)q->u)->mrow)); }
static kir_expr *mm_zb(lctx *c, qg *q, kir_expr *col) { (void)q; return zp(c, 3, col); }

static void mm_out(lctx *c, qg *q, int r, kir_expr *col, kir_expr **ix)
{
    (void)q;
    ir_type lead = c->n->out[0]->type;
    lead.rank--;
    lower_unflatten(c, &lead, q->rows[r], ix);
    ix[lead.rank] = col;
}

int lower_qgemm(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *ta = &n->in[0]->type, *tb = &n->in[1]->type, *to = &n->out[0]->type;
    /* a batched B (qgemm_ok: batch dims of the output's): one problem of
     * M = A's rows per batch index; a 2-D B takes all A's rows as M */
    bool bat = tb->rank > 2;
    int64_t nbat = 1;
    for (int d = 0; bat && d < to->rank - 2; d++)
        nbat *= to->dims[d].v;
    qmm u = {.ra = ta->rank, .mrow = ta->dims[ta->rank - 2].v, .a2 = bat && ta->rank == 2};
    int64_t M = bat ? u.mrow : numel(ta) / ta->dims[u.ra - 1].v, K = tb->dims[tb->rank - 2].v,
            N = tb->dims[tb->rank - 1].v;
    qg q = {.u = &u, .a = mm_a, .za = mm_za, .zb = mm_zb, .out = mm_out, .bbuf = c->buf[1], .ncols = N,
            .op = tb->dtype == IR_U8 ? KIR_IN_PMADDWD_U8 : KIR_IN_PMADDWD_S8, .pst = -1};
    bool has_za = zp(c, 2, lw_i64c(k, 0)) != NULL, has_zb = zp(c, 3, lw_i64c(k, 0)) != NULL;
    int boff = tb->dtype == IR_U8 ? 128 : 0; /* b - 128 is an i8 */
    /* vpmaddubsw where exact (qg_ub_exact), with 16+ rows: the quads'
     * column sums of B, K x N adds per chunk, cost about as much as the
     * contraction of a single row */
    /* B packed in quads of k at compile time (the pack-b pass, on 512-bit
     * VNNI targets: i8, K and N multiples of 4 and of the panel width):
     * the quad kernel reads its panels in place with one load per 16
     * lanes, on any target (scalar lanes without VNNI) */
    int64_t pw = ir_attr_int(n, "packed_b", 0);
    bool packed = pw > 0; /* (qgemm_packed_ok: quads of an i8 B, whole panels) */
    bool ub = !packed && !c->s->int8_quads && K >= 4 && M >= 16 && !bat && qg_ub_exact(c, n->in[1], K, N, boff);
    if ((c->s->int8_quads || ub || packed) && K >= 4 && !bat) {
        q.quads = true;
        q.aoff = ta->dtype == IR_I8 ? 128 : 0; /* a + 128 is a u8 */
        q.boff = boff;
        q.op = packed ? KIR_IN_DPBUSD_QUADS
             : ub ? (tb->dtype == IR_U8 ? KIR_IN_PMADDUBSW_ROWS_U8 : KIR_IN_PMADDUBSW_ROWS_S8)
                  : (tb->dtype == IR_U8 ? KIR_IN_DPBUSD_ROWS_U8 : KIR_IN_DPBUSD_ROWS_S8);
        has_zb = has_zb || q.boff;
    }
    if (packed) {
        const kir_buf *bb = &k->bufs[c->buf[1]];
        ir_type ft = {.dtype = IR_I8, .rank = 1, .dims = {ir_dim_const(K * N)}};
        if ((q.bbuf = kir_add_buf(k, bb->name, bb->kind, &ft, bb->index, bb->offset)) < 0)
            return -1;
        q.packed = true;
        q.wfix = pw;
        /* AMX-INT8: blocks of 32 rows (a~ of 32 rows within 160 KiB of
         * thread scratch), panels of whole pairs of tiles, 64 k at least */
        q.amx = c->s->amx_int8 && M >= 32 && K >= 64 && pw % 32 == 0 && 32 * cdiv(K, 4) * 4 <= (INT64_C(160) << 10);
        ir_type at = {.dtype = IR_I8, .rank = 2, .dims = {ir_dim_const(K * N / (4 * pw)), ir_dim_const(4 * pw)}};
        if (q.amx && (q.bamx = kir_add_buf(k, bb->name, bb->kind, &at, bb->index, bb->offset)) < 0)
            return -1;
        /* K a multiple of 64 (no quads after the tiles' to add to the
         * sums): each panel's epilogue runs in the next one's k loop */
        if (q.amx && K % 64 == 0 &&
            (q.pst = kir_add_scratch(k, "qpend", KIR_SPACE_THREAD, IR_I64, 1, (int64_t[]){3})) < 0)
            return -1;
    }
    /* whole vectors inside B's rows (qgemm_ok: N >= lanes) */
    if (qg_init(c, &q, M, K, N / c->s->lanes * c->s->lanes, INT64_MAX, has_zb) < 0)
        return -1;
    /* panels stay inside B's rows: W <= N */
    if (q.W > N)
        return -1;
    q.colbase = lw_i64c(k, 0);
    q.cols_in = true; /* panels from min(qv W, N - W) */
    int64_t nb = cdiv(M, q.R), np = cdiv(N, q.W);
    int64_t ncp = 256 / q.W > 1 ? 256 / q.W : 1, mcb = c->s->tile_mc_blocks, nrc, ncc;
    /* with enough rows to share it, a chunk copies its panels of B into
     * thread scratch, each K x W contiguous (B's rows are N apart: read in
     * place, a panel touches a line per k) */
    bool pack = !packed && (bat || M >= 16) && K * q.W <= (INT64_C(96) << 10);
    if (bat && !pack)
        return -1; /* qgemm_ok keeps a batched B's panels within the scratch */
    /* vpmaddubsw on packed panels: B's quads interleaved once per chunk
     * (quad_pack), one 32-byte load per 8 lanes in the k loop */
    int64_t KQ = cdiv(K, 4), pbytes = ub && pack ? KQ * 4 * q.W : K * q.W;
    if (ub && pack && pbytes > (INT64_C(96) << 10))
        pack = false, pbytes = K * q.W; /* (K + 3) x W past the scratch: the rows read in place */
    if (ub && pack)
        q.op = KIR_IN_PMADDUBSW_QUADS;
    if (pack && ncp > (INT64_C(96) << 10) / pbytes)
        ncp = (INT64_C(96) << 10) / pbytes;
    qg_chunks(c, nbat, nb, np, false, &mcb, &ncp, &nrc, &ncc);
    int pv = kir_new_var(k), rbv = kir_new_var(k), qv = kir_new_var(k);
    int64_t per = nrc * ncc;
    kir_stmt *lp = kir_for(k, &k->body, pv, lw_i64c(k, 0), lw_i64c(k, nbat * per), KIR_PARALLEL, 0);
    if (!lp)
        return -1;
    kir_expr *p = nbat > 1 ? lw_iremc(k, kir_var(k, pv), per) : kir_var(k, pv);
    kir_expr *ob = nbat > 1 ? lw_idivc(k, kir_var(k, pv), per) : lw_i64c(k, 0); /* the batch index */
    kir_expr *rc, *cc;
    lw_chunk_at(k, p, nrc, ncc, !bat && N > M, &rc, &cc);   /* a 2-D B larger than A */
    kir_expr *rb0 = lw_imulc(k, rc, mcb), *q0 = lw_imulc(k, cc, ncp);
    if (q.quads && (has_za || q.aoff)) {
        /* the column sums of b~ over the chunk's columns [cbase, ...) */
        if ((q.cs = kir_add_scratch(k, "qcolsum", KIR_SPACE_THREAD, IR_I32, 1, (int64_t[]){ncp * q.W})) < 0)
            return -1;
        q.cbase = lw_imin(k, lw_imulc(k, q0, q.W), lw_i64c(k, N - q.W));
        if (packed) {
            /* B packed: each panel's sums by the quad kernel itself, on a
             * quad of ones (K/4 steps of W lanes: one row's work) */
            int ones = kir_add_scratch(k, "qones", KIR_SPACE_THREAD, IR_U8, 1, (int64_t[]){4});
            int iv = kir_new_var(k), kv = kir_new_var(k), zv = kir_new_var(k);
            if (ones < 0)
                return -1;
            for (int j = 0; j < 4; j++)
                if (!kir_store(k, &lp->body, ones, (kir_expr *[]){lw_i64c(k, j)}, kir_const_i(k, IR_U8, 1)))
                    return -1;
            kir_expr *nq = lw_imin(k, lw_i64c(k, ncp), kir_op2(k, KIR_SUB, IR_I64, lw_i64c(k, np), q0));
            kir_stmt *li = kir_for(k, &lp->body, iv, lw_i64c(k, 0), nq, KIR_SERIAL, 0);
            kir_stmt *lz = li ? kir_for(k, &li->body, zv, lw_i64c(k, 0), lw_i64c(k, q.W), KIR_VECTOR, q.L) : NULL;
            kir_expr *c0 = li ? lw_imulc(k, kir_var(k, iv), q.W) : NULL;
            if (!lz || !kir_store(k, &lz->body, q.cs, (kir_expr *[]){kir_iadd(k, c0, kir_var(k, zv))}, kir_const_i(k, IR_I32, 0)))
                return -1;
            kir_stmt *lk = kir_for(k, &li->body, kv, lw_i64c(k, 0), lw_i64c(k, K / 4), KIR_SERIAL, 0);
            if (!lk)
                return -1;
            kir_expr *f = kir_iadd(k, lw_imulc(k, kir_iadd(k, q0, kir_var(k, iv)), q.W * K), lw_imulc(k, kir_var(k, kv), 4 * q.W));
            kir_iarg args[3] = {{.buf = q.cs, .nidx = 1, .idx = (kir_expr *[]){c0}},
                                {.buf = ones, .nidx = 1, .idx = (kir_expr *[]){lw_i64c(k, 0)}},
                                {.buf = q.bbuf, .nidx = 1, .idx = (kir_expr *[]){f}}};
            if (!kir_intrinsic(k, &lk->body, KIR_IN_DPBUSD_QUADS, (int)q.W, args))
                return -1;
        } else {
            kir_expr *hi = lw_imin(k, lw_i64c(k, ncp * q.W), kir_op2(k, KIR_SUB, IR_I64, lw_i64c(k, N), q.cbase));
            if (qg_colsums(c, &q, &lp->body, c->buf[1], hi, q.cbase) < 0)
                return -1;
        }
    }
    if (pack && ub) {
        /* panel iv's quad kq: rows kr..kr+3 of B from kr = min(4 kq, K - 4)
         * (the panel's tail quad as qg_panel reads it), interleaved, b~ */
        int pb = kir_add_scratch(k, "qbquads", KIR_SPACE_THREAD, IR_I8, 3, (int64_t[]){ncp, KQ, 4 * q.W});
        kir_expr *nq = lw_imin(k, lw_i64c(k, ncp), kir_op2(k, KIR_SUB, IR_I64, lw_i64c(k, np), q0));
        if (pb < 0 || qg_quad_panels(c, &q, &lp->body, pb, c->buf[1], tb->dtype, nq, q0, N - q.W) < 0)
            return -1;
        q.bbuf = pb;
    } else if (pack) {
        int pb = kir_add_scratch(k, "qbpanel", KIR_SPACE_THREAD, tb->dtype, 3, (int64_t[]){ncp, K, q.W});
        int kv = kir_new_var(k), iv = kir_new_var(k), lv = kir_new_var(k);
        if (pb < 0)
            return -1;
        kir_stmt *lk = kir_for(k, &lp->body, kv, lw_i64c(k, 0), lw_i64c(k, K), KIR_SERIAL, 0);
        kir_expr *nq = lw_imin(k, lw_i64c(k, ncp), kir_op2(k, KIR_SUB, IR_I64, lw_i64c(k, np), q0));
        kir_stmt *li = lk ? kir_for(k, &lk->body, iv, lw_i64c(k, 0), nq, KIR_SERIAL, 0) : NULL;
        kir_stmt *ll = li ? kir_for(k, &li->body, lv, lw_i64c(k, 0), lw_i64c(k, q.W), KIR_VECTOR, (int)q.W) : NULL;
        if (!ll)
            return -1;
        kir_expr *j0 = lw_imin(k, lw_imulc(k, kir_iadd(k, q0, kir_var(k, iv)), q.W), lw_i64c(k, N - q.W));
        kir_expr *bi[IR_MAX_RANK];
        flat_idx(k, tb->rank, bat ? kir_iadd(k, lw_imulc(k, ob, K), kir_var(k, kv)) : kir_var(k, kv),
                 kir_iadd(k, kir_var(k, lv), j0), bi);
        kir_expr *bv = kir_load(k, c->buf[1], bi);
        if (!kir_store(k, &ll->body, pb, (kir_expr *[]){kir_var(k, iv), kir_var(k, kv), kir_var(k, lv)}, bv))
            return -1;
        q.bbuf = pb;
    }
    if (q.amx && !kir_intrinsic(k, &lp->body, KIR_IN_AMX_CONFIG, 0, NULL))
        return -1;
    if (q.pst >= 0 && (lower_amx_st_set(k, &lp->body, q.pst, 0, lw_i64c(k, 0)) < 0 ||
                       lower_amx_st_set(k, &lp->body, q.pst, 2, lw_i64c(k, 0)) < 0))
        return -1;
    kir_stmt *lrb = kir_for(k, &lp->body, rbv, rb0, lw_imin(k, lw_i64c(k, nb), lw_iaddc(k, rb0, mcb)), KIR_SERIAL, 0);
    if (!lrb)
        return -1;
    for (int r = 0; r < q.R; r++) { /* the output's rows (of batch ob) */
        q.rows[r] = lw_imin(k, lw_iaddc(k, lw_imulc(k, kir_var(k, rbv), q.R), r), lw_i64c(k, M - 1));
        if (nbat > 1)
            q.rows[r] = kir_iadd(k, lw_imulc(k, ob, M), q.rows[r]);
    }
    q.row0 = lw_imulc(k, kir_var(k, rbv), q.R);
    q.mrows = M - 1;
    q.bofs = nbat > 1 ? lw_imulc(k, ob, M) : NULL;
    if (qg_pack(c, &q, &lrb->body) < 0)
        return -1;
    kir_stmt *lq = kir_for(k, &lrb->body, qv, q0, lw_imin(k, lw_i64c(k, np), lw_iaddc(k, q0, ncp)), KIR_SERIAL, 0);
    if (!lq)
        return -1;
    if (pack)
        q.bq = kir_op2(k, KIR_SUB, IR_I64, kir_var(k, qv), q0);
    if (qg_panel(c, &q, &lq->body, lw_imin(k, lw_imulc(k, kir_var(k, qv), q.W), lw_i64c(k, N - q.W))) < 0)
        return -1;
    /* the row block's last panel goes out before the next block's rows
     * replace a16 and the row sums: its k-loop's P rows a step, all of them */
    if (q.pst >= 0 && (qg_pend_rows(c, &q, &lrb->body, lw_i64c(k, 0), 1) < 0 ||
                       lower_amx_st_set(k, &lrb->body, q.pst, 0, lw_i64c(k, 0)) < 0))
        return -1;
    return !q.amx || kir_intrinsic(k, &lp->body, KIR_IN_AMX_RELEASE, 0, NULL) ? 0 : -1;
}

/* ---- ConvInteger ---------------------------------------------------------------
 *
 * Per batch item y[m, p] = sum_k w'[m, k] * x~[k, p] - zx * sum_k w'[m, k]
 * with k = (channel, taps), p the flattened output position, w' = w -
 * zw[m] and x~ the im2col matrix, x where the window is inside the input
 * and zx in the padding (so padding adds nothing, as ConvInteger's
 * reference pads with the zero point). A parallel chunk builds x~ for its
 * columns (at most ~128 KiB of thread scratch) and runs the pair kernel
 * over it for its output channels; weights are the packed rows.
 *
 * With VNNI (schedule int8_quads) the chunk then interleaves each panel
 * of x~ in quads of k (quad_pack: x - 128 for u8 x, as vpdpbusd's signed
 * operand) and sums its columns, and the quad kernel runs vpdpbusd on the
 * weights' quads (w + 128 for i8 w: the unsigned operand, broadcast)
 * against them, one 64-byte load per 16 lanes; the shifts come back out
 * through the row and column sums (qg_panel's epilogue). */

typedef struct {
    const qconv_geom *g;
    int64_t taps, plane, nc;   /* taps per channel, output positions, columns per chunk */
    bool flat;                 /* stride 1 and inner dims of the input's size */
    int rw;                    /* the weight's rank */
    kir_expr *nb;              /* the chunk's batch item */
} qcv;

static kir_expr *cv_a(lctx *c, qg *q, int r, kir_expr *kx)
{
    kir_expr *ix[IR_MAX_RANK];
    lin_idx(c->k, ((qcv *)q->u)->rw, q->rows[r], kx, ix);
    return kir_load(c->k, c->buf[1], ix);
}

static kir_expr *cv_za(lctx *c, qg *q, int r) { return zp(c, 3, q->rows[r]); }
static kir_expr *cv_zb(lctx *c, qg *q, kir_expr *col) { (void)q; (void)col; return zp(c, 2, lw_i64c(c->k, 0)); }

static void cv_out(lctx *c, qg *q, int r, kir_expr *col, kir_expr **ix)
{
    qcv *u = q->u;
    const qconv_geom *g = u->g;
    ix[0] = u->nb;
    ix[1] = q->rows[r];
    if (c->epi_root) { /* a fused epilogue reads operands per dim */
        ir_type sp = {.rank = g->n};
        for (int j = 0; j < g->n; j++)
            sp.dims[j] = (ir_dim){.v = g->out[j]};
        lower_unflatten(c, &sp, col, ix + 2);
        return;
    }
    for (int j = 0; j < g->n - 1; j++)
        ix[2 + j] = lw_i64c(c->k, 0);
    ix[1 + g->n] = col;
}

bool qconv_ok(const lctx *c, const qconv_geom *g)
{
    if (c->s->lanes < 4 || g->n < 1)
        return false;
    int64_t taps = 1, plane = 1, iplane = 1;
    for (int j = 0; j < g->n; j++) {
        taps *= g->k[j];
        plane *= g->out[j];
        iplane *= g->in[j];
    }
    /* i32 index math; x~ for at least one panel of 8 vectors fits */
    return g->cin * taps <= 8192 && plane < (INT64_C(1) << 30) && iplane * g->cin < (INT64_C(1) << 30);
}

/* x~ for the chunk's columns [p0, p0 + nc) into buffer col: row (ci, t) of
 * lane l is x[nb, ci, o(p0 + l) * s - pb + t * d] inside the input, zx
 * elsewhere (and past the plane). The index math runs in i32; masked
 * lanes read element 0. */
static int cv_im2col(lctx *c, qcv *u, int col, kir_block *b, kir_expr *p0)
{
    kir_kernel *k = c->k;
    const qconv_geom *g = u->g;
    ir_dtype xt = c->n->in[0]->type.dtype;
    int cv = kir_new_var(k), tv = kir_new_var(k), lv = kir_new_var(k);
    kir_stmt *lc = kir_for(k, b, cv, lw_i64c(k, 0), lw_i64c(k, g->cin), KIR_SERIAL, 0);
    kir_stmt *lt = lc ? kir_for(k, &lc->body, tv, lw_i64c(k, 0), lw_i64c(k, u->taps), KIR_SERIAL, 0) : NULL;
    kir_stmt *ll = lt ? kir_for(k, &lt->body, lv, lw_i64c(k, 0), lw_i64c(k, u->nc), KIR_VECTOR, 2 * c->s->lanes) : NULL;
    if (!ll)
        return -1;
#define C32(v) kir_const_i(k, IR_I32, (v))
    kir_expr *pos = kir_op1(k, KIR_CAST, IR_I32, kir_iadd(k, p0, kir_var(k, lv)));
    kir_expr *ok = kir_op2(k, KIR_LT, IR_BOOL, pos, C32(u->plane)), *lin = C32(0);
    int64_t op = 1, ip = 1, tp = 1;
    for (int j = g->n - 1; j >= 0; j--) {
        kir_expr *o = op > 1 ? kir_op2(k, KIR_DIV, IR_I32, pos, C32(op)) : pos;
        if (j > 0)
            o = kir_op2(k, KIR_REM, IR_I32, o, C32(g->out[j]));
        kir_expr *t = kir_op1(k, KIR_CAST, IR_I32, lw_iremc(k, lw_idivc(k, kir_var(k, tv), tp), g->k[j]));
        kir_expr *ih = kir_op2(k, KIR_ADD, IR_I32, kir_op2(k, KIR_MUL, IR_I32, o, C32(g->s[j])),
                               kir_op2(k, KIR_SUB, IR_I32, kir_op2(k, KIR_MUL, IR_I32, t, C32(g->d[j])), C32(g->pb[j])));
        ok = kir_op2(k, KIR_AND, IR_BOOL, ok, kir_op2(k, KIR_LE, IR_BOOL, C32(0), ih));
        ok = kir_op2(k, KIR_AND, IR_BOOL, ok, kir_op2(k, KIR_LT, IR_BOOL, ih, C32(g->in[j])));
        lin = kir_op2(k, KIR_ADD, IR_I32, lin, ip > 1 ? kir_op2(k, KIR_MUL, IR_I32, ih, C32(ip)) : ih);
        op *= g->out[j];
        ip *= g->in[j];
        tp *= g->k[j];
    }
#undef C32
    kir_expr *xi[IR_MAX_RANK];
    xi[0] = u->nb;
    xi[1] = kir_var(k, cv);
    for (int j = 0; j < g->n - 1; j++)
        xi[2 + j] = lw_i64c(k, 0);
    kir_expr *zx = kir_const_i(k, xt, 0), *z0[IR_MAX_RANK] = {lw_i64c(k, 0)};
    if (c->n->nin > 2 && c->n->in[2] && c->buf[2] >= 0)
        zx = kir_load(k, c->buf[2], z0); /* a scalar or one value */
    kir_expr *row = kir_iadd(k, lw_imulc(k, kir_var(k, cv), u->taps), kir_var(k, tv));
    if (!u->flat) { /* a gather at the clamped index */
        xi[1 + g->n] = kir_op1(k, KIR_CAST, IR_I64, kir_op3(k, KIR_SELECT, IR_I32, ok, lin, kir_const_i(k, IR_I32, 0)));
        kir_expr *v = kir_op3(k, KIR_SELECT, xt, ok, kir_load(k, c->buf[0], xi), zx);
        return kir_store(k, &ll->body, col, (kir_expr *[]){row, kir_var(k, lv)}, v) ? 0 : -1;
    }
    /* stride 1, inner dims of the output's size: the tap reads at a
     * constant offset from the position, a contiguous load; lanes whose
     * element would lie outside x (all of them padding) get zx from loops
     * of their own, so no load leaves the buffer */
    kir_expr *off = lw_i64c(k, 0);
    int64_t st = 1, tq = 1;
    for (int j = g->n - 1; j >= 0; j--) {
        kir_expr *t = lw_iremc(k, lw_idivc(k, kir_var(k, tv), tq), g->k[j]);
        off = kir_iadd(k, off, lw_imulc(k, lw_iaddc(k, lw_imulc(k, t, g->d[j]), -g->pb[j]), st));
        st *= g->in[j];
        tq *= g->k[j];
    }
    kir_expr *base = kir_iadd(k, kir_iadd(k, lw_imulc(k, kir_iadd(k, lw_imulc(k, u->nb, g->cin), kir_var(k, cv)), st), p0), off);
    kir_expr *lo = lw_imin(k, lw_i64c(k, u->nc), lw_imax(k, lw_i64c(k, 0), kir_op2(k, KIR_SUB, IR_I64, lw_i64c(k, 0), base)));
    kir_expr *hi = lw_imax(k, lo, lw_imin(k, lw_i64c(k, u->nc),
                                          kir_op2(k, KIR_SUB, IR_I64, lw_i64c(k, g->batch * g->cin * st), base)));
    ll->lo = lo;
    ll->hi = hi;
    kir_expr *rel = kir_iadd(k, p0, off);
    xi[1 + g->n] = kir_iadd(k, kir_var(k, lv), rel);
    kir_expr *v = kir_op3(k, KIR_SELECT, xt, ok, kir_load(k, c->buf[0], xi), zx);
    if (!kir_store(k, &ll->body, col, (kir_expr *[]){row, kir_var(k, lv)}, v))
        return -1;
    kir_expr *ranges[2][2] = {{lw_i64c(k, 0), lo}, {hi, lw_i64c(k, u->nc)}};
    for (int i = 0; i < 2; i++) {
        int fv = kir_new_var(k);
        kir_stmt *lf = kir_for(k, &lt->body, fv, ranges[i][0], ranges[i][1], KIR_VECTOR, 2 * c->s->lanes);
        if (!lf || !kir_store(k, &lf->body, col, (kir_expr *[]){row, kir_var(k, fv)}, zx))
            return -1;
    }
    return 0;
}

/* x~ for the chunk's columns [p0, p0 + nc) by output rows (the last
 * spatial dim), for any stride and padding: per constant tap t the lanes
 * whose input lies inside the last dim form one range of each output row,
 * [ow_lo, ow_hi), known at compile time; there one vector loop reads x at
 * ow * s + const (contiguous, or every s-th byte: a wide load and a
 * shuffle, not a gather), and the rest of the row (and rows of padding in
 * the leading dims, and positions past the plane) get zx. No division
 * per element, and no load leaves x. At most QG_ROW_TAPS taps (each tap
 * is its own loops). */
enum { QG_ROW_TAPS = 64 };

static int cv_im2col_rows(lctx *c, qcv *u, int col, kir_block *b, kir_expr *p0)
{
    kir_kernel *k = c->k;
    const qconv_geom *g = u->g;
    ir_dtype xt = c->n->in[0]->type.dtype;
    int n = g->n, L2 = 2 * c->s->lanes;
    int64_t OL = g->out[n - 1], IL = g->in[n - 1];
    kir_expr *zx = kir_const_i(k, xt, 0), *z0[IR_MAX_RANK] = {lw_i64c(k, 0)};
    if (c->n->nin > 2 && c->n->in[2] && c->buf[2] >= 0)
        zx = kir_load(k, c->buf[2], z0);
    kir_expr *pend = lw_imin(k, lw_iaddc(k, p0, u->nc), lw_i64c(k, u->plane)); /* the chunk's last position + 1 */
    for (int64_t t = 0; t < u->taps; t++) {
        int64_t kc[IR_MAX_RANK], tq = 1;
        for (int j = n - 1; j >= 0; j--) {
            kc[j] = t / tq % g->k[j];
            tq *= g->k[j];
        }
        /* ow * s - pb + kc * d inside [0, IL) */
        int64_t off = kc[n - 1] * g->d[n - 1] - g->pb[n - 1], s = g->s[n - 1];
        int64_t ow_lo = off >= 0 ? 0 : (-off + s - 1) / s;
        int64_t ow_hi = IL - 1 - off < 0 ? 0 : (IL - 1 - off) / s + 1;
        if (ow_hi > OL)
            ow_hi = OL;
        if (ow_hi < ow_lo)
            ow_hi = ow_lo;
        int cv = kir_new_var(k), rv = kir_new_var(k);
        kir_stmt *lc = kir_for(k, b, cv, lw_i64c(k, 0), lw_i64c(k, g->cin), KIR_SERIAL, 0);
        if (!lc)
            return -1;
        kir_expr *row = lw_iaddc(k, lw_imulc(k, kir_var(k, cv), u->taps), t);
        kir_stmt *lr = kir_for(k, &lc->body, rv, lw_idivc(k, p0, OL), lw_idivc(k, lw_iaddc(k, pend, OL - 1), OL),
                               KIR_SERIAL, 0);
        if (!lr)
            return -1;
        kir_expr *orow = kir_var(k, rv), *ok = NULL, *lin = lw_i64c(k, 0);
        int64_t op = 1, ip = IL;
        for (int j = n - 2; j >= 0; j--) {
            kir_expr *o = lw_iremc(k, lw_idivc(k, orow, op), g->out[j]);
            kir_expr *ih = lw_iaddc(k, lw_imulc(k, o, g->s[j]), kc[j] * g->d[j] - g->pb[j]);
            kir_expr *in = kir_op2(k, KIR_AND, IR_BOOL, kir_op2(k, KIR_LE, IR_BOOL, lw_i64c(k, 0), ih),
                                   kir_op2(k, KIR_LT, IR_BOOL, ih, lw_i64c(k, g->in[j])));
            ok = ok ? kir_op2(k, KIR_AND, IR_BOOL, ok, in) : in;
            lin = kir_iadd(k, lin, lw_imulc(k, ih, ip));
            op *= g->out[j];
            ip *= g->in[j];
        }
        if (ok) /* a row of padding reads row 0 (and keeps zx) */
            lin = kir_op3(k, KIR_SELECT, IR_I64, ok, lin, lw_i64c(k, 0));
        kir_expr *rbase = lw_imulc(k, orow, OL);                              /* the row's first position */
        kir_expr *c_lo = lw_imax(k, lw_i64c(k, 0), kir_op2(k, KIR_SUB, IR_I64, p0, rbase));
        kir_expr *c_hi = lw_imin(k, lw_i64c(k, OL), kir_op2(k, KIR_SUB, IR_I64, pend, rbase));
        kir_expr *m_lo = lw_imin(k, c_hi, lw_imax(k, c_lo, lw_i64c(k, ow_lo)));
        kir_expr *m_hi = lw_imax(k, m_lo, lw_imin(k, c_hi, lw_i64c(k, ow_hi)));
        kir_expr *shift = kir_op2(k, KIR_SUB, IR_I64, rbase, p0);             /* column = ow + shift */
        kir_expr *ranges[3][2] = {{c_lo, m_lo}, {m_lo, m_hi}, {m_hi, c_hi}};
        for (int i = 0; i < 3; i++) {
            int ov = kir_new_var(k);
            kir_stmt *lo = kir_for(k, &lr->body, ov, ranges[i][0], ranges[i][1], KIR_VECTOR, L2);
            if (!lo)
                return -1;
            kir_expr *v = zx;
            if (i == 1) {
                kir_expr *xi[IR_MAX_RANK];
                xi[0] = u->nb;
                xi[1] = kir_var(k, cv);
                for (int j = 0; j < n - 1; j++)
                    xi[2 + j] = lw_i64c(k, 0);
                xi[1 + n] = kir_iadd(k, lin, lw_iaddc(k, lw_imulc(k, kir_var(k, ov), s), off));
                v = kir_load(k, c->buf[0], xi);
                if (ok)
                    v = kir_op3(k, KIR_SELECT, xt, ok, v, zx);
            }
            if (!kir_store(k, &lo->body, col, (kir_expr *[]){row, kir_iadd(k, kir_var(k, ov), shift)}, v))
                return -1;
        }
        /* positions past the plane (the last panel's columns nothing stores) */
        int fv = kir_new_var(k);
        kir_stmt *lf = kir_for(k, &lc->body, fv, kir_op2(k, KIR_SUB, IR_I64, pend, p0), lw_i64c(k, u->nc), KIR_VECTOR, L2);
        if (!lf || !kir_store(k, &lf->body, col, (kir_expr *[]){row, kir_var(k, fv)}, zx))
            return -1;
    }
    return 0;
}

/* The quad form's x~ (VNNI): per panel of the chunk's columns, its quads
 * of k interleaved into thread scratch [panels, K/4 rounded up, 4 W]
 * (x - boff; the tail quad is rows K-4 .. K-1, as qg_panel reads it), and
 * the column sums of x - boff over the K rows into q->cs (columns from
 * the chunk's first). Points q->bbuf at the quads. */
static int cv_quads(lctx *c, qg *q, qcv *u, int col, kir_block *b, int64_t ncp)
{
    kir_kernel *k = c->k;
    int pb = kir_add_scratch(k, "qxquads", KIR_SPACE_THREAD, IR_I8, 3, (int64_t[]){ncp, cdiv(q->K, 4), 4 * q->W});
    q->cs = kir_add_scratch(k, "qcolsum", KIR_SPACE_THREAD, IR_I32, 1, (int64_t[]){u->nc});
    if (pb < 0 || q->cs < 0)
        return -1;
    q->cbase = q->colbase;
    if (qg_quad_panels(c, q, b, pb, col, c->n->in[0]->type.dtype, lw_i64c(k, ncp), NULL, 0) < 0 ||
        qg_colsums(c, q, b, col, lw_i64c(k, u->nc), NULL) < 0)
        return -1;
    q->bbuf = pb;
    return 0;
}

int lower_qconv(lctx *c, const qconv_geom *g)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    qcv u = {.g = g, .taps = 1, .plane = 1, .rw = n->in[1]->type.rank, .flat = true};
    for (int j = 0; j < g->n; j++) {
        u.taps *= g->k[j];
        u.plane *= g->out[j];
        u.flat = u.flat && g->s[j] == 1 && (j == 0 || g->out[j] == g->in[j]);
    }
    int64_t K = g->cin * u.taps;
    bool zx = n->nin > 2 && n->in[2] && c->buf[2] >= 0;
    ir_dtype xt = n->in[0]->type.dtype;
    qg q = {.u = &u, .a = cv_a, .za = cv_za, .zb = cv_zb, .out = cv_out, .ncols = u.plane, .pst = -1,
            .op = xt == IR_U8 ? KIR_IN_PMADDWD_U8 : KIR_IN_PMADDWD_S8};
    /* (quads: a panel of x~ and its interleaved copy, at least one vector
     * of columns each, within the thread scratch: K up to ~6000) */
    if (c->s->int8_quads && K >= 4 && 2 * cdiv(K, 4) * 4 * c->s->lanes <= (INT64_C(192) << 10)) {
        q.quads = true;
        q.aoff = n->in[1]->type.dtype == IR_I8 ? 128 : 0; /* w + 128 is a u8 */
        q.boff = xt == IR_U8 ? 128 : 0;                    /* x - 128 is an i8 */
        q.op = KIR_IN_DPBUSD_QUADS;
        zx = zx || q.boff;
    }
    /* x~ (and with quads its interleaved copy, as large) within 128 KiB of
     * the 256 KiB of thread scratch a kernel may take */
    int64_t xbytes = q.quads ? (INT64_C(60) << 10) : (INT64_C(128) << 10);
    if (qg_init(c, &q, g->cout, K, u.plane, xbytes / K, zx) < 0)
        return -1;
    /* columns per chunk: x~ within 128 KiB, whole panels */
    int64_t ncp = xbytes / (cdiv(K, 4) * 4 * q.W), np = cdiv(u.plane, q.W);
    if (ncp < 1)
        ncp = 1;
    if (ncp > np)
        ncp = np;
    int64_t nb = cdiv(g->cout, q.R), mcb = nb, nrc, ncc;
    qg_chunks(c, g->batch, nb, np, true, &mcb, &ncp, &nrc, &ncc);
    u.nc = ncp * q.W;
    int col = kir_add_scratch(k, "qcol", KIR_SPACE_THREAD, n->in[0]->type.dtype, 2, (int64_t[]){K, u.nc});
    if (col < 0)
        return -1;
    q.bbuf = col;
    int pv = kir_new_var(k), rbv = kir_new_var(k), qv = kir_new_var(k);
    int64_t per = nrc * ncc;
    kir_stmt *lp = kir_for(k, &k->body, pv, lw_i64c(k, 0), lw_i64c(k, g->batch * per), KIR_PARALLEL, 0);
    if (!lp)
        return -1;
    kir_expr *p = kir_var(k, pv), *pc = lw_iremc(k, p, per);
    u.nb = lw_idivc(k, p, per);
    kir_expr *rb0 = lw_imulc(k, lw_iremc(k, pc, nrc), mcb), *p0 = lw_imulc(k, lw_idivc(k, pc, nrc), u.nc);
    q.colbase = p0;
    if ((!u.flat && u.taps <= QG_ROW_TAPS ? cv_im2col_rows(c, &u, col, &lp->body, p0)
                                          : cv_im2col(c, &u, col, &lp->body, p0)) < 0)
        return -1;
    if (q.quads && cv_quads(c, &q, &u, col, &lp->body, ncp) < 0)
        return -1;
    kir_stmt *lrb = kir_for(k, &lp->body, rbv, rb0, lw_imin(k, lw_i64c(k, nb), lw_iaddc(k, rb0, mcb)), KIR_SERIAL, 0);
    if (!lrb)
        return -1;
    for (int r = 0; r < q.R; r++)
        q.rows[r] = lw_imin(k, lw_iaddc(k, lw_imulc(k, kir_var(k, rbv), q.R), r), lw_i64c(k, g->cout - 1));
    if (qg_pack(c, &q, &lrb->body) < 0)
        return -1;
    kir_stmt *lq = kir_for(k, &lrb->body, qv, lw_i64c(k, 0), lw_i64c(k, ncp), KIR_SERIAL, 0);
    if (!lq)
        return -1;
    if (q.quads)
        q.bq = kir_var(k, qv);
    return qg_panel(c, &q, &lq->body, lw_imulc(k, kir_var(k, qv), q.W));
}
