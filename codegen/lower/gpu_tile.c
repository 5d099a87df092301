/* gpu_tile.c - the GPU schedule of a contraction (gpu_tile.h). */
#include "codegen/lower/gpu_tile.h"

int cg_gpu_tile_size(int64_t nbat, int64_t m, int64_t n)
{
    return nbat * ((m + 63) / 64) * ((n + 63) / 64) >= 128 ? 4 : 2;
}

static kir_expr *zero(lctx *c)
{
    return kir_const_f(c->k, c->cdt, 0);
}

ir_dtype cg_gpu_tile_half(const cg_schedule *s, ir_dtype a, ir_dtype b)
{
    if (!s->gpu_mma)
        return IR_UNDEF;
    ir_dtype h = a == IR_F16 || a == IR_BF16 ? a : b;
    if (h != IR_F16 && h != IR_BF16)
        return IR_UNDEF;
    return (a == h || a == IR_F32) && (b == h || b == IR_F32) ? h : IR_UNDEF;
}

/* What both forms share: the grid loop over batch x tiles of bm x bm, the
 * thread loop inside it, the accumulators zeroed and the loop over blocks
 * of bk values of k. */
typedef struct {
    kir_expr *bat, *m0, *n0;   /* the batch item, the tile's first row and column */
    kir_expr *t;               /* the thread's index in the block */
    kir_block *thr;            /* the thread loop's body */
    kir_block *kb;             /* the k-block loop's body */
    kir_expr *k0;              /* the k block's first k */
} gt_nest;

static int gt_open(lctx *c, const cg_gpu_tile *t, int64_t bm, int64_t bk, int acc, int64_t nacc, gt_nest *g)
{
    kir_kernel *k = c->k;
    const int64_t tmn = (t->m + bm - 1) / bm, tnn = (t->n + bm - 1) / bm;
    int vg = kir_new_var(k), vt = kir_new_var(k), vz = kir_new_var(k), vk = kir_new_var(k);
    kir_stmt *lg = lw_loop(c, &k->body, vg, lw_i64c(k, t->nbat * tmn * tnn), KIR_GRID);
    if (!lg)
        return -1;
    kir_expr *G = kir_var(k, vg), *tile = lw_iremc(k, G, tmn * tnn);
    g->bat = lw_idivc(k, G, tmn * tnn);
    g->m0 = lw_imulc(k, lw_idivc(k, tile, tnn), bm);
    g->n0 = lw_imulc(k, lw_iremc(k, tile, tnn), bm);
    kir_stmt *lt = lw_loop(c, &lg->body, vt, lw_i64c(k, CG_GPU_SIDE * CG_GPU_SIDE), KIR_THREAD);
    if (!lt)
        return -1;
    g->t = kir_var(k, vt);
    g->thr = &lt->body;
    kir_stmt *lz = kir_for(k, g->thr, vz, lw_i64c(k, 0), lw_i64c(k, nacc), KIR_UNROLL, (int)nacc);
    kir_stmt *lk = lw_loop(c, g->thr, vk, lw_i64c(k, (t->k + bk - 1) / bk), KIR_SERIAL);
    if (!lz || !lk || !kir_store(k, &lz->body, acc, (kir_expr *[]){kir_var(k, vz)}, zero(c)))
        return -1;
    g->kb = &lk->body;
    g->k0 = lw_imulc(k, kir_var(k, vk), bk);
    return 0;
}

/* The block's copy of one operand's rows x bk piece into shared buffer
 * buf as dtype sdt, appended to the k-block loop: per elements a thread,
 * element e * threads + t of the piece, A's (side 0) k fastest, B's rows
 * (its columns) fastest, so each is read along its contiguous dim; stored
 * at [k, row] (k_major) or [row, k]. */
static int gt_copy(lctx *c, const cg_gpu_tile *t, const gt_nest *g, int side, int64_t rows, int64_t bk, int buf,
                   bool k_major, ir_dtype sdt)
{
    kir_kernel *k = c->k;
    const int64_t nthr = CG_GPU_SIDE * CG_GPU_SIDE;
    int ve = kir_new_var(k), per = (int)(rows * bk / nthr);
    kir_stmt *le = kir_for(k, g->kb, ve, lw_i64c(k, 0), lw_i64c(k, per), KIR_UNROLL, per);
    if (!le)
        return -1;
    kir_expr *e = kir_iadd(k, lw_imulc(k, kir_var(k, ve), nthr), g->t);
    kir_expr *kk = side ? lw_idivc(k, e, rows) : lw_iremc(k, e, bk);
    kir_expr *r = side ? lw_iremc(k, e, rows) : lw_idivc(k, e, bk);
    kir_expr *gk = kir_iadd(k, g->k0, kk), *gkc = lw_imin(k, gk, lw_i64c(k, t->k - 1));
    kir_expr *gr = lw_imin(k, kir_iadd(k, side ? g->n0 : g->m0, r), lw_i64c(k, (side ? t->n : t->m) - 1));
    kir_expr *v = side ? t->b(c, t, g->bat, gkc, gr) : t->a(c, t, g->bat, gr, gkc);
    if (v && v->dtype != c->cdt)
        v = kir_op1(k, KIR_CAST, c->cdt, v);
    v = kir_op3(k, KIR_SELECT, c->cdt, kir_op2(k, KIR_LT, IR_BOOL, gk, lw_i64c(k, t->k)), v, zero(c));
    if (v && v->dtype != sdt)
        v = kir_op1(k, KIR_CAST, sdt, v);
    return kir_store(k, &le->body, buf, k_major ? (kir_expr *[]){kk, r} : (kir_expr *[]){r, kk}, v) ? 0 : -1;
}

/* The store of accumulator q at (row, col) when both are inside the
 * product, appended to the thread loop. */
static int gt_store(lctx *c, const cg_gpu_tile *t, const gt_nest *g, int acc, int64_t q, kir_expr *row,
                    kir_expr *col)
{
    kir_kernel *k = c->k;
    kir_stmt *in = kir_if(k, g->thr,
                          kir_op2(k, KIR_AND, IR_BOOL, kir_op2(k, KIR_LT, IR_BOOL, row, lw_i64c(k, t->m)),
                                  kir_op2(k, KIR_LT, IR_BOOL, col, lw_i64c(k, t->n))));
    kir_expr *v = kir_load(k, acc, (kir_expr *[]){lw_i64c(k, q)});
    if (v && v->dtype != c->cdt)
        v = kir_op1(k, KIR_CAST, c->cdt, v);
    return in && t->store(c, t, &in->body, g->bat, row, col, v) == 0 ? 0 : -1;
}

/* The tensor-core form (gpu_tile.h). */
enum { MMA_BM = 64, MMA_BK = 32, MMA_PITCH = MMA_BK + 8 };

static int lower_mma(lctx *c, const cg_gpu_tile *t)
{
    kir_kernel *k = c->k;
    int64_t td[2] = {MMA_BM, MMA_PITCH}, accd[1] = {16};
    int as = kir_add_scratch(k, "a_tile", KIR_SPACE_BLOCK, t->half, 2, td);
    int bs = kir_add_scratch(k, "b_tile", KIR_SPACE_BLOCK, t->half, 2, td);
    int acc = kir_add_scratch(k, "acc", KIR_SPACE_THREAD, IR_F32, 1, accd);
    gt_nest g;
    if (as < 0 || bs < 0 || acc < 0 || gt_open(c, t, MMA_BM, MMA_BK, acc, 16, &g) < 0 ||
        gt_copy(c, t, &g, 0, MMA_BM, MMA_BK, as, false, t->half) < 0 ||
        gt_copy(c, t, &g, 1, MMA_BM, MMA_BK, bs, false, t->half) < 0 || !kir_barrier(k, g.kb, KIR_SCOPE_BLOCK))
        return -1;
    /* warp w computes rows 16 (w / 2) and columns 32 (w % 2) of the tile */
    kir_expr *w = lw_idivc(k, g.t, 32), *lane = lw_iremc(k, g.t, 32);
    kir_expr *wr = lw_imulc(k, lw_idivc(k, w, 2), 16), *wc = lw_imulc(k, lw_iremc(k, w, 2), 32);
    for (int ks = 0; ks < MMA_BK; ks += 16)
        for (int j = 0; j < 4; j++) {
            kir_iarg args[3] = {
                {acc, 1, (kir_expr *[]){lw_i64c(k, 4 * j)}, 0, NULL},
                {as, 2, (kir_expr *[]){wr, lw_i64c(k, ks)}, 0, NULL},
                {bs, 2, (kir_expr *[]){lw_iaddc(k, wc, 8 * j), lw_i64c(k, ks)}, 0, NULL},
            };
            if (!kir_intrinsic(k, g.kb, KIR_IN_MMA_SYNC, 1, args))
                return -1;
        }
    if (!kir_barrier(k, g.kb, KIR_SCOPE_BLOCK))
        return -1;
    /* lane l holds rows l/4 (+8) and columns 2(l%4) (+1) of each 16 x 8 product */
    kir_expr *lr = lw_idivc(k, lane, 4), *lc = lw_imulc(k, lw_iremc(k, lane, 4), 2);
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 4; i++) {
            kir_expr *row = kir_iadd(k, g.m0, kir_iadd(k, wr, lw_iaddc(k, lr, i >= 2 ? 8 : 0)));
            kir_expr *col = kir_iadd(k, g.n0, kir_iadd(k, wc, lw_iaddc(k, lc, 8 * j + (i & 1))));
            if (gt_store(c, t, &g, acc, 4 * j + i, row, col) < 0)
                return -1;
        }
    return 0;
}

int cg_gpu_tile_lower(lctx *c, const cg_gpu_tile *t, int tm)
{
    if (t->half == IR_F16 || t->half == IR_BF16)
        return lower_mma(c, t);
    kir_kernel *k = c->k;
    const int64_t BM = CG_GPU_SIDE * tm;
    ir_dtype cdt = c->cdt;
    /* A's rows one longer: its copy writes down the columns (k fastest),
     * BM + 1 apart, so a warp's stores fall in different banks */
    int64_t ad[2] = {CG_GPU_BK, BM + 1}, bd[2] = {CG_GPU_BK, BM}, accd[1] = {(int64_t)tm * tm};
    int as = kir_add_scratch(k, "a_tile", KIR_SPACE_BLOCK, cdt, 2, ad);
    int bs = kir_add_scratch(k, "b_tile", KIR_SPACE_BLOCK, cdt, 2, bd);
    int acc = kir_add_scratch(k, "acc", KIR_SPACE_THREAD, cdt, 1, accd);
    int vkk = kir_new_var(k);
    gt_nest g;
    if (as < 0 || bs < 0 || acc < 0 || gt_open(c, t, BM, CG_GPU_BK, acc, (int64_t)tm * tm, &g) < 0 ||
        gt_copy(c, t, &g, 0, BM, CG_GPU_BK, as, true, cdt) < 0 || gt_copy(c, t, &g, 1, BM, CG_GPU_BK, bs, true, cdt) < 0)
        return -1;
    kir_stmt *lkk = kir_barrier(k, g.kb, KIR_SCOPE_BLOCK)
                        ? kir_for(k, g.kb, vkk, lw_i64c(k, 0), lw_i64c(k, CG_GPU_BK), KIR_UNROLL, CG_GPU_BK)
                        : NULL;
    if (!lkk || !kir_barrier(k, g.kb, KIR_SCOPE_BLOCK))
        return -1;
    kir_expr *tx = lw_iremc(k, g.t, CG_GPU_SIDE), *ty = lw_idivc(k, g.t, CG_GPU_SIDE);
    kir_expr *av[8], *bv[8], *kv = kir_var(k, vkk);
    for (int i = 0; i < tm; i++) {
        av[i] = kir_let(k, &lkk->body, kir_load(k, as, (kir_expr *[]){kv, lw_iaddc(k, ty, CG_GPU_SIDE * i)}));
        bv[i] = kir_let(k, &lkk->body, kir_load(k, bs, (kir_expr *[]){kv, lw_iaddc(k, tx, CG_GPU_SIDE * i)}));
    }
    for (int i = 0; i < tm; i++)
        for (int j = 0; j < tm; j++) {
            kir_expr *q = lw_i64c(k, (int64_t)i * tm + j);
            if (!kir_store(k, &lkk->body, acc, (kir_expr *[]){q},
                           kir_op3(k, KIR_FMA, cdt, av[i], bv[j], kir_load(k, acc, (kir_expr *[]){q}))))
                return -1;
        }
    for (int i = 0; i < tm; i++)
        for (int j = 0; j < tm; j++)
            if (gt_store(c, t, &g, acc, (int64_t)i * tm + j, kir_iadd(k, g.m0, lw_iaddc(k, ty, CG_GPU_SIDE * i)),
                         kir_iadd(k, g.n0, lw_iaddc(k, tx, CG_GPU_SIDE * j))) < 0)
                return -1;
    return 0;
}
