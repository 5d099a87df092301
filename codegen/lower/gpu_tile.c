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

/* The tensor-core form (gpu_tile.h). */
enum { MMA_BM = 64, MMA_BK = 32, MMA_PITCH = MMA_BK + 8 };

static int lower_mma(lctx *c, const cg_gpu_tile *t)
{
    kir_kernel *k = c->k;
    const int64_t M = t->m, N = t->n, K = t->k, nthr = CG_GPU_SIDE * CG_GPU_SIDE;
    const int64_t tmn = (M + MMA_BM - 1) / MMA_BM, tnn = (N + MMA_BM - 1) / MMA_BM;
    ir_dtype h = t->half;
    int64_t td[2] = {MMA_BM, MMA_PITCH}, accd[1] = {16};
    int as = kir_add_scratch(k, "a_tile", KIR_SPACE_BLOCK, h, 2, td);
    int bs = kir_add_scratch(k, "b_tile", KIR_SPACE_BLOCK, h, 2, td);
    int acc = kir_add_scratch(k, "acc", KIR_SPACE_THREAD, IR_F32, 1, accd);
    int vg = kir_new_var(k), vt = kir_new_var(k), vz = kir_new_var(k), vk = kir_new_var(k);
    if (as < 0 || bs < 0 || acc < 0)
        return -1;
    kir_stmt *lg = lw_loop(c, &k->body, vg, lw_i64c(k, t->nbat * tmn * tnn), KIR_GRID);
    if (!lg)
        return -1;
    kir_expr *G = kir_var(k, vg), *tile = lw_iremc(k, G, tmn * tnn), *bat = lw_idivc(k, G, tmn * tnn);
    kir_expr *m0 = lw_imulc(k, lw_idivc(k, tile, tnn), MMA_BM), *n0 = lw_imulc(k, lw_iremc(k, tile, tnn), MMA_BM);
    kir_stmt *lt = lw_loop(c, &lg->body, vt, lw_i64c(k, nthr), KIR_THREAD);
    if (!lt)
        return -1;
    /* warp w computes rows 16 (w / 2) and columns 32 (w % 2) of the tile */
    kir_expr *T = kir_var(k, vt), *w = lw_idivc(k, T, 32), *lane = lw_iremc(k, T, 32);
    kir_expr *wr = lw_imulc(k, lw_idivc(k, w, 2), 16), *wc = lw_imulc(k, lw_iremc(k, w, 2), 32);
    kir_stmt *lz = kir_for(k, &lt->body, vz, lw_i64c(k, 0), lw_i64c(k, 16), KIR_UNROLL, 16);
    kir_stmt *lk = lw_loop(c, &lt->body, vk, lw_i64c(k, (K + MMA_BK - 1) / MMA_BK), KIR_SERIAL);
    if (!lz || !lk || !kir_store(k, &lz->body, acc, (kir_expr *[]){kir_var(k, vz)}, zero(c)))
        return -1;
    kir_expr *k0 = lw_imulc(k, kir_var(k, vk), MMA_BK);
    for (int side = 0; side < 2; side++) {
        /* 8 elements per thread: element e * nthr + t of the 64 x 32 piece,
         * A's k fastest, B's columns fastest (each read along its rows) */
        int ve = kir_new_var(k), per = MMA_BM * MMA_BK / (int)nthr;
        kir_stmt *le = kir_for(k, &lk->body, ve, lw_i64c(k, 0), lw_i64c(k, per), KIR_UNROLL, per);
        if (!le)
            return -1;
        kir_expr *e = kir_iadd(k, lw_imulc(k, kir_var(k, ve), nthr), T);
        kir_expr *kk = side ? lw_idivc(k, e, MMA_BM) : lw_iremc(k, e, MMA_BK);
        kir_expr *r = side ? lw_iremc(k, e, MMA_BM) : lw_idivc(k, e, MMA_BK);
        kir_expr *gk = kir_iadd(k, k0, kk), *gkc = lw_imin(k, gk, lw_i64c(k, K - 1));
        kir_expr *gr = lw_imin(k, kir_iadd(k, side ? n0 : m0, r), lw_i64c(k, (side ? N : M) - 1));
        kir_expr *v = side ? t->b(c, t, bat, gkc, gr) : t->a(c, t, bat, gr, gkc);
        if (v && v->dtype != c->cdt)
            v = kir_op1(k, KIR_CAST, c->cdt, v);
        v = kir_op3(k, KIR_SELECT, c->cdt, kir_op2(k, KIR_LT, IR_BOOL, gk, lw_i64c(k, K)), v, zero(c));
        if (!kir_store(k, &le->body, side ? bs : as, (kir_expr *[]){r, kk}, kir_op1(k, KIR_CAST, h, v)))
            return -1;
    }
    if (!kir_barrier(k, &lk->body, KIR_SCOPE_BLOCK))
        return -1;
    for (int ks = 0; ks < MMA_BK; ks += 16)
        for (int j = 0; j < 4; j++) {
            kir_iarg args[3] = {
                {acc, 1, (kir_expr *[]){lw_i64c(k, 4 * j)}, 0},
                {as, 2, (kir_expr *[]){wr, lw_i64c(k, ks)}, 0},
                {bs, 2, (kir_expr *[]){lw_iaddc(k, wc, 8 * j), lw_i64c(k, ks)}, 0},
            };
            if (!kir_intrinsic(k, &lk->body, KIR_IN_MMA_SYNC, 1, args))
                return -1;
        }
    if (!kir_barrier(k, &lk->body, KIR_SCOPE_BLOCK))
        return -1;
    /* lane l holds rows l/4 (+8) and columns 2(l%4) (+1) of each 16 x 8 product */
    kir_expr *lr = lw_idivc(k, lane, 4), *lc = lw_imulc(k, lw_iremc(k, lane, 4), 2);
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 4; i++) {
            kir_expr *row = kir_iadd(k, m0, kir_iadd(k, wr, lw_iaddc(k, lr, i >= 2 ? 8 : 0)));
            kir_expr *col = kir_iadd(k, n0, kir_iadd(k, wc, lw_iaddc(k, lc, 8 * j + (i & 1))));
            kir_stmt *in = kir_if(k, &lt->body,
                                  kir_op2(k, KIR_AND, IR_BOOL, kir_op2(k, KIR_LT, IR_BOOL, row, lw_i64c(k, M)),
                                          kir_op2(k, KIR_LT, IR_BOOL, col, lw_i64c(k, N))));
            kir_expr *v = kir_load(k, acc, (kir_expr *[]){lw_i64c(k, 4 * j + i)});
            if (v && c->cdt != IR_F32)
                v = kir_op1(k, KIR_CAST, c->cdt, v);
            if (!in || t->store(c, t, &in->body, bat, row, col, v) < 0)
                return -1;
        }
    return 0;
}

int cg_gpu_tile_lower(lctx *c, const cg_gpu_tile *t, int tm)
{
    if (t->half == IR_F16 || t->half == IR_BF16)
        return lower_mma(c, t);
    kir_kernel *k = c->k;
    const int64_t M = t->m, N = t->n, K = t->k, BM = CG_GPU_SIDE * tm, nthr = CG_GPU_SIDE * CG_GPU_SIDE;
    const int64_t tmn = (M + BM - 1) / BM, tnn = (N + BM - 1) / BM;
    ir_dtype cdt = c->cdt;
    /* A's rows one longer: its copy writes down the columns (k fastest),
     * BM + 1 apart, so a warp's stores fall in different banks */
    int64_t ad[2] = {CG_GPU_BK, BM + 1}, bd[2] = {CG_GPU_BK, BM}, accd[1] = {(int64_t)tm * tm};
    int as = kir_add_scratch(k, "a_tile", KIR_SPACE_BLOCK, cdt, 2, ad);
    int bs = kir_add_scratch(k, "b_tile", KIR_SPACE_BLOCK, cdt, 2, bd);
    int acc = kir_add_scratch(k, "acc", KIR_SPACE_THREAD, cdt, 1, accd);
    int vg = kir_new_var(k), vt = kir_new_var(k), vz = kir_new_var(k), vk = kir_new_var(k), vkk = kir_new_var(k);
    if (as < 0 || bs < 0 || acc < 0)
        return -1;
    kir_stmt *lg = lw_loop(c, &k->body, vg, lw_i64c(k, t->nbat * tmn * tnn), KIR_GRID);
    if (!lg)
        return -1;
    kir_expr *G = kir_var(k, vg), *tile = lw_iremc(k, G, tmn * tnn), *bat = lw_idivc(k, G, tmn * tnn);
    kir_expr *m0 = lw_imulc(k, lw_idivc(k, tile, tnn), BM), *n0 = lw_imulc(k, lw_iremc(k, tile, tnn), BM);
    kir_stmt *lt = lw_loop(c, &lg->body, vt, lw_i64c(k, nthr), KIR_THREAD);
    if (!lt)
        return -1;
    kir_expr *T = kir_var(k, vt), *tx = lw_iremc(k, T, CG_GPU_SIDE), *ty = lw_idivc(k, T, CG_GPU_SIDE);
    kir_stmt *lz = kir_for(k, &lt->body, vz, lw_i64c(k, 0), lw_i64c(k, (int64_t)tm * tm), KIR_UNROLL, tm * tm);
    kir_stmt *lk = lw_loop(c, &lt->body, vk, lw_i64c(k, (K + CG_GPU_BK - 1) / CG_GPU_BK), KIR_SERIAL);
    if (!lz || !lk || !kir_store(k, &lz->body, acc, (kir_expr *[]){kir_var(k, vz)}, zero(c)))
        return -1;
    kir_expr *k0 = lw_imulc(k, kir_var(k, vk), CG_GPU_BK);
    for (int side = 0; side < 2; side++) {
        /* tm elements per thread: element e * nthr + t of the piece */
        int ve = kir_new_var(k);
        kir_stmt *le = kir_for(k, &lk->body, ve, lw_i64c(k, 0), lw_i64c(k, tm), KIR_UNROLL, tm);
        if (!le)
            return -1;
        kir_expr *e = kir_iadd(k, lw_imulc(k, kir_var(k, ve), nthr), T);
        kir_expr *kk = side ? lw_idivc(k, e, BM) : lw_iremc(k, e, CG_GPU_BK);
        kir_expr *r = side ? lw_iremc(k, e, BM) : lw_idivc(k, e, CG_GPU_BK);
        kir_expr *gk = kir_iadd(k, k0, kk), *gkc = lw_imin(k, gk, lw_i64c(k, K - 1));
        kir_expr *gr = lw_imin(k, kir_iadd(k, side ? n0 : m0, r), lw_i64c(k, (side ? N : M) - 1));
        kir_expr *v = side ? t->b(c, t, bat, gkc, gr) : t->a(c, t, bat, gr, gkc);
        if (v && v->dtype != cdt)
            v = kir_op1(k, KIR_CAST, cdt, v);
        v = kir_op3(k, KIR_SELECT, cdt, kir_op2(k, KIR_LT, IR_BOOL, gk, lw_i64c(k, K)), v, zero(c));
        if (!kir_store(k, &le->body, side ? bs : as, (kir_expr *[]){kk, r}, v))
            return -1;
    }
    kir_stmt *lkk = kir_barrier(k, &lk->body, KIR_SCOPE_BLOCK)
                        ? kir_for(k, &lk->body, vkk, lw_i64c(k, 0), lw_i64c(k, CG_GPU_BK), KIR_UNROLL, CG_GPU_BK)
                        : NULL;
    if (!lkk || !kir_barrier(k, &lk->body, KIR_SCOPE_BLOCK))
        return -1;
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
        for (int j = 0; j < tm; j++) {
            kir_expr *row = kir_iadd(k, m0, lw_iaddc(k, ty, CG_GPU_SIDE * i));
            kir_expr *col = kir_iadd(k, n0, lw_iaddc(k, tx, CG_GPU_SIDE * j));
            kir_stmt *in = kir_if(k, &lt->body,
                                  kir_op2(k, KIR_AND, IR_BOOL, kir_op2(k, KIR_LT, IR_BOOL, row, lw_i64c(k, M)),
                                          kir_op2(k, KIR_LT, IR_BOOL, col, lw_i64c(k, N))));
            kir_expr *v = kir_load(k, acc, (kir_expr *[]){lw_i64c(k, (int64_t)i * tm + j)});
            if (!in || t->store(c, t, &in->body, bat, row, col, v) < 0)
                return -1;
        }
    return 0;
}
