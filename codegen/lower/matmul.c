/* matmul.c - contractions: MatMul (numpy semantics: batch broadcasting,
 * rank-1 operands; float and wrapping integer) and Gemm.
 *
 * The fast form is a register-blocked kernel over f32/f64/integer data:
 * parallel over (batch, chunk of row blocks x chunk of column panels), a
 * serial loop over blocks of K (cache), a VECTOR loop over the output
 * columns that the LLVM emitter widens itself (docs/kernel-ir.md: four
 * registers wide on AVX-512), and inside it tile_rows rows of vector
 * accumulators carried across the k loop, each step one uniform
 * (broadcast) load of A per row and contiguous vector loads of B. Partial
 * sums of a K block go through the output. Rows past M are clamped to the
 * last row, so the last block recomputes a row instead of branching.
 * This schedule is cg_tile_lower (tile.c), shared with Conv: the
 * caller supplies the reduction loops and the operands' loads through
 * callbacks. Gemm with transB uses dot-product tiles along k (lower_dot)
 * unless pack-b packed its weight (transB cleared). f16/bf16
 * (rounded at each store, so no partial sums in the output), symbolic
 * shapes and tiny N use the plain triple loop.
 *
 * Per K block and column panel, B's kc x width panel is copied into
 * thread scratch once and read contiguously by all the chunk's row
 * blocks (its rows are N apart in place: all in one L1 set when N is a
 * multiple of 1024). Skinny shapes (M <= 16) of a B that is not packed
 * take their tile from cg_schedule_gemm_tile (no row computed twice) and
 * stream B: short K blocks over all columns, so B is read row after row,
 * in one chunk (or, from 8 rows, a few column chunks for threads).
 * Constant weights arrive packed (packed_b, the pack-b pass): B's column
 * panels of `width` columns lie one after another, each [K, width], and
 * are read in place with no per-call copy. With more than one panel per
 * chunk, A's row blocks are copied per K block into scratch (tile.h
 * pack_a). GEMV-like products (M < CG_GEMV_M, schedule.h) hold all rows
 * in one tile over wider panels and run the whole reduction per panel,
 * so a chunk of panels is one contiguous stretch of the weights read
 * once; from 8 rows a packed B takes the general tile (blocks of K,
 * chunks of row blocks x panels; up to 16 rows the tile rows that compute
 * the fewest past M, cg_schedule_packed_rows). A bf16 A times a bf16 B packed in
 * pairs of k (packed_k = 2, on targets with vdpbf16ps) runs on the pair
 * kernel (lower_pairs). For CUDA, float products of static shapes with M
 * and N of at least 16 run on the GPU tile (gpu_tile.h, lower_gpu).
 */
#include "codegen/lower/gpu_tile.h"
#include "codegen/lower/tile.h"
#include "ir/ops.h"

#include <string.h>

bool cg_can_lower_matmul(const ir_node *n)
{
    const ir_type *x = &n->in[0]->type;
    int64_t pk = ir_attr_int(n, "packed_k", 1); /* as the reference checks it (ir/ref/nn.c) */
    if (pk < 1 || pk > 64)
        return false;
    switch (n->op) {
    case IR_OP_MATMUL:
        return (ir_dtype_is_float(x->dtype) || (ir_dtype_is_int(x->dtype) && x->dtype != IR_BOOL)) &&
               x->rank >= 1 && n->in[1]->type.rank >= 1 && n->in[1]->type.dtype == x->dtype;
    case IR_OP_GEMM:
        /* packed_b is for B [K, N] only (the pack-b pass clears transB) */
        return ir_dtype_is_float(x->dtype) && !(ir_attr_int(n, "transB", 0) && ir_attr_int(n, "packed_b", 0));
    default:
        return false;
    }
}

/* The geometry of one contraction: output dims are
 * [batch..., M (if A has rank > 1), N (if B has rank > 1)]. */
typedef struct {
    const ir_type *ta, *tb, *to;
    bool tA, tB, gemm;
    int nbatch;              /* output batch dims */
    bool has_m, has_n;
    ir_dim m, n, kd;
    int64_t pw;              /* B stored in column panels of pw columns (packed_b), or 0 */
    int64_t pk;              /* ... each [K/pk, width, pk] (packed_k: 2 for bf16 pairs), else 1 */
    int64_t pt;              /* ... in groups of pt rows as 16-column pieces (packed_t: the AMX tiles'), else 0 */
    int pbuf;                /* packed B: a flat view of its buffer, or -1 (read through its dims) */
} mm_geo;

static void operand_idx(lctx *c, const mm_geo *g, int side, kir_expr *const *bat, kir_expr *row, kir_expr *col,
                        kir_expr **ix);

static void geo_init(lctx *c, mm_geo *g)
{
    const ir_node *n = c->n;
    g->ta = &n->in[0]->type;
    g->tb = &n->in[1]->type;
    g->to = &n->out[0]->type;
    g->gemm = n->op == IR_OP_GEMM;
    g->tA = g->gemm && ir_attr_int(n, "transA", 0);
    g->tB = g->gemm && ir_attr_int(n, "transB", 0);
    g->has_m = g->ta->rank > 1;
    g->has_n = g->tb->rank > 1;
    g->nbatch = g->to->rank - g->has_m - g->has_n;
    g->kd = g->ta->dims[g->tA ? g->ta->rank - 2 : g->ta->rank - 1];
    g->m = g->has_m ? g->to->dims[g->nbatch] : (ir_dim){.v = 1};
    g->n = g->has_n ? g->to->dims[g->to->rank - 1] : (ir_dim){.v = 1};
    /* packed_b with one panel or more columns is B's own order */
    g->pw = ir_attr_int(n, "packed_b", 0);
    g->pk = g->pw > 0 ? ir_attr_int(n, "packed_k", 1) : 1;
    g->pt = g->pw > 0 ? ir_attr_int(n, "packed_t", 0) : 0;
    if (g->pw > 0 && g->pk == 1 && (!g->has_n || !ir_type_is_static(g->tb) || g->n.v <= g->pw))
        g->pw = 0;
    g->pbuf = -1;
}

/* The flat view of packed B's buffer (the panels are contiguous runs of
 * it, which B's [.., K, N] dims do not describe), when B has a buffer of
 * its own: 0, or -1 on out of memory. */
static int packed_view(lctx *c, mm_geo *g)
{
    if (!g->pw || c->buf[1] < 0)
        return 0;
    const kir_buf *b = &c->k->bufs[c->buf[1]];
    ir_type t = {.dtype = b->dtype, .rank = 1}; /* a bf16 weight: its buffer's */
    int64_t n = 1;
    for (int d = 0; d < g->tb->rank; d++)
        n *= g->tb->dims[d].v;
    t.dims[0] = ir_dim_const(n);
    g->pbuf = kir_add_buf(c->k, b->name, b->kind, &t, b->index, b->offset);
    return g->pbuf < 0 ? -1 : 0;
}

/* Packed B at row k, column jj of the panel that starts at column j0 and
 * is wp wide (lw_packed_at). jj is the vector variable plus a uniform
 * offset, as an ADD (j + -j0): the emitter sees unit stride only through
 * ADDs. */
/* The index in packed B's flat view (g->pbuf) of offset f in the matrix
 * that the output batch indices bat[] read (B's size-1 dims broadcast). */
static kir_expr *packed_flat(kir_kernel *kk, const mm_geo *g, kir_expr *const *bat, kir_expr *f)
{
    const ir_type *t = g->tb;
    kir_expr *mat = lw_i64c(kk, 0);
    for (int d = 0; d < t->rank - 2; d++) {
        int od = g->nbatch - (t->rank - 2) + d;
        kir_expr *bd = t->dims[d].v == 1 ? lw_i64c(kk, 0) : bat[od];
        mat = kir_iadd(kk, lw_imulc(kk, mat, t->dims[d].v), bd);
    }
    return kir_iadd(kk, lw_imulc(kk, mat, g->kd.v * g->n.v), f);
}

static kir_expr *packed_b_at(lctx *c, const mm_geo *g, kir_expr *const *bat, kir_expr *k, kir_expr *j0,
                             kir_expr *wp, kir_expr *jj)
{
    kir_kernel *kk = c->k;
    int64_t K = g->kd.v, N = g->n.v;
    kir_expr *f = lw_packed_at(kk, K, g->pk, g->pt, k, j0, wp, jj);
    if (g->pbuf >= 0) {
        kir_expr *e = kir_load(kk, g->pbuf, (kir_expr *[]){packed_flat(kk, g, bat, f)});
        ir_dtype bt = kk->bufs[g->pbuf].dtype;
        return lw_compute_dtype(bt) != bt ? kir_op1(kk, KIR_CAST, lw_compute_dtype(bt), e) : e;
    }
    /* no buffer of its own (a fused producer): through B's dims */
    kir_expr *ix[IR_MAX_RANK];
    operand_idx(c, g, 1, bat, lw_idivc(kk, f, N), kir_op2(kk, KIR_REM, IR_I64, f, lw_i64c(kk, N)), ix);
    return lw_load_in(c, 1, ix);
}

/* Packed B at (k, j), its panel found from j. */
static kir_expr *packed_b_kj(lctx *c, const mm_geo *g, kir_expr *const *bat, kir_expr *k, kir_expr *j)
{
    kir_expr *j0, *wp;
    lw_packed_panel(c->k, g->n.v, g->pw, j, &j0, &wp);
    return packed_b_at(c, g, bat, k, j0, wp, kir_op2(c->k, KIR_SUB, IR_I64, j, j0));
}

/* Index of operand side (0 = A, 1 = B) at (row, col) of its matrix, with
 * the output batch indices bat[] (right-aligned, size-1 dims broadcast). */
static void operand_idx(lctx *c, const mm_geo *g, int side, kir_expr *const *bat, kir_expr *row, kir_expr *col,
                        kir_expr **ix)
{
    kir_kernel *k = c->k;
    const ir_type *t = side ? g->tb : g->ta;
    if (t->rank == 1) {
        ix[0] = side ? row : col; /* A[k] is a row, B[k] a column */
        return;
    }
    for (int d = 0; d < t->rank - 2; d++) {
        int od = g->nbatch - (t->rank - 2) + d;
        bool one = ir_dim_is_const(t->dims[d]) && t->dims[d].v == 1;
        ix[d] = one ? lw_i64c(k, 0) : bat[od];
    }
    bool tr = side ? g->tB : g->tA;
    ix[t->rank - 2] = tr ? col : row;
    ix[t->rank - 1] = tr ? row : col;
}

static void out_idx(const mm_geo *g, kir_expr *const *bat, kir_expr *i, kir_expr *j, kir_expr **ix)
{
    int d = 0;
    for (; d < g->nbatch; d++)
        ix[d] = bat[d];
    if (g->has_m)
        ix[d++] = i;
    if (g->has_n)
        ix[d++] = j;
}

/* Gemm's epilogue: alpha * acc + beta * C[i, j] (C broadcast); MatMul: acc. */
static kir_expr *epilogue(lctx *c, const mm_geo *g, kir_expr *v, kir_expr *i, kir_expr *j)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    if (!g->gemm)
        return v;
    double alpha = ir_attr_float(n, "alpha", 1), beta = ir_attr_float(n, "beta", 1);
    if (alpha != 1)
        v = kir_op2(k, KIR_MUL, c->cdt, kir_const_f(k, c->cdt, alpha), v);
    if (n->nin > 2 && n->in[2] && beta != 0) {
        const ir_type *tc = &n->in[2]->type;
        kir_expr *ci[IR_MAX_RANK], *oi[] = {i, j};
        for (int d = 0; d < tc->rank; d++) {
            bool one = ir_dim_is_const(tc->dims[d]) && tc->dims[d].v == 1;
            ci[d] = one ? lw_i64c(k, 0) : oi[2 - tc->rank + d];
        }
        kir_expr *cv = lw_load_in(c, 2, ci);
        if (beta != 1)
            cv = kir_op2(k, KIR_MUL, c->cdt, kir_const_f(k, c->cdt, beta), cv);
        v = kir_op2(k, KIR_ADD, c->cdt, v, cv);
    }
    return v;
}

static kir_expr *zero(lctx *c)
{
    return ir_dtype_is_float(c->cdt) ? kir_const_f(c->k, c->cdt, 0) : kir_const_i(c->k, c->cdt, 0);
}

/* The plain form: one loop per output dim, a scalar accumulator over k;
 * the leading output loops merged into one parallel loop of at least the
 * schedule's par_min positions (lw_parallelize: on a CPU the rows of a
 * batch of one, for CUDA every output element a GPU thread). */
static int lower_plain(lctx *c, const mm_geo *g)
{
    kir_kernel *k = c->k;
    const ir_type *to = g->to;
    int r = to->rank;
    kir_block *body = &k->body;
    bool alone = k->body.n == 0;   /* the nest is the kernel: lw_parallelize can merge it */
    /* With the schedule's plain_vector_cols (CPUs) and B's rows contiguous
     * along the output's columns (not transposed, not packed), the column
     * loop is a VECTOR loop (its tail masked): per k an A broadcast against
     * B's row, one accumulator per lane. Symbolic sizes land here
     * (lower_tiled wants constant N and K): an attention's Q K^T and P V
     * over a symbolic sequence ran scalar, the whole nest flattened into one
     * loop with a division and a remainder per index, 1.7 GFLOP/s
     * (PaddleOCR v4's recognizer). */
    int lanes = c->s->plain_vector_cols && ir_dtype_size(c->cdt) > 0 ? c->s->lanes * 4 / (int)ir_dtype_size(c->cdt) : 0;
    bool vec_n = g->has_n && !g->tB && !g->pw && r > 0 && lanes >= 2;
    kir_expr *ov[IR_MAX_RANK] = {0};
    for (int d = 0; d < r; d++) {
        int v = kir_new_var(k);
        bool vec = vec_n && d == r - 1;
        kir_stmt *l = vec ? kir_for(k, body, v, lw_i64c(k, 0), lw_dim_of(k, to->dims[d]), KIR_VECTOR, lanes)
                          : lw_loop(c, body, v, lw_dim_of(k, to->dims[d]), d == 0 && !alone ? KIR_PARALLEL : KIR_SERIAL);
        if (!l)
            return -1;
        if (vec)
            l->tail_mask = true;
        ov[d] = kir_var(k, v);
        body = &l->body;
    }
    kir_expr *i = g->has_m ? ov[g->nbatch] : lw_i64c(k, 0);
    kir_expr *j = g->has_n ? ov[r - 1] : lw_i64c(k, 0);
    int acc = kir_new_acc(k, c->cdt), kv = kir_new_var(k);
    if (acc < 0 || !kir_acc_set(k, body, acc, zero(c)))
        return -1;
    kir_stmt *lk = lw_loop(c, body, kv, lw_dim_of(k, g->kd), KIR_SERIAL);
    if (!lk)
        return -1;
    kir_expr *ai[IR_MAX_RANK], *bi[IR_MAX_RANK], *oi[IR_MAX_RANK];
    operand_idx(c, g, 0, ov, i, kir_var(k, kv), ai);
    operand_idx(c, g, 1, ov, kir_var(k, kv), j, bi);
    kir_expr *bv = g->pw ? packed_b_kj(c, g, ov, kir_var(k, kv), j) : lw_load_in(c, 1, bi);
    kir_expr *prod = kir_op3(k, KIR_FMA, c->cdt, lw_load_in(c, 0, ai), bv, kir_acc(k, acc));
    if (!kir_acc_set(k, &lk->body, acc, prod))
        return -1;
    out_idx(g, ov, i, j, oi);
    if (!kir_store(k, body, c->out, oi, lw_to_out(c, lower_epi(c, epilogue(c, g, kir_acc(k, acc), i, j), oi))))
        return -1;
    return alone && r > 0 ? lw_parallelize(k, c->s->par_min) : 0;
}


/* ---- CUDA: the GPU tiles (gpu_tile.h) ------------------------------------ */

/* The output batch indices of the flat batch item b. */
static void gpu_bat(lctx *c, const mm_geo *g, kir_expr *b, kir_expr **bat)
{
    int64_t ext[IR_MAX_RANK];
    for (int d = 0; d < g->nbatch; d++)
        ext[d] = g->to->dims[d].v;
    lw_unflatten_c(c->k, b, g->nbatch, ext, bat);
}

static kir_expr *gpu_a(lctx *c, const cg_gpu_tile *t, kir_expr *b, kir_expr *row, kir_expr *k)
{
    const mm_geo *g = t->u;
    kir_expr *bat[IR_MAX_RANK], *ix[IR_MAX_RANK];
    gpu_bat(c, g, b, bat);
    operand_idx(c, g, 0, bat, row, k, ix);
    return lw_load_in(c, 0, ix);
}

static kir_expr *gpu_b(lctx *c, const cg_gpu_tile *t, kir_expr *b, kir_expr *k, kir_expr *col)
{
    const mm_geo *g = t->u;
    kir_expr *bat[IR_MAX_RANK], *ix[IR_MAX_RANK];
    gpu_bat(c, g, b, bat);
    if (g->pw)
        return packed_b_kj(c, g, bat, k, col);
    operand_idx(c, g, 1, bat, k, col, ix);
    return lw_load_in(c, 1, ix);
}

static int gpu_store(lctx *c, const cg_gpu_tile *t, kir_block *blk, kir_expr *b, kir_expr *row, kir_expr *col,
                     kir_expr *v)
{
    const mm_geo *g = t->u;
    kir_expr *bat[IR_MAX_RANK], *oi[IR_MAX_RANK];
    gpu_bat(c, g, b, bat);
    out_idx(g, bat, row, col, oi);
    return kir_store(c->k, blk, c->out, oi, lw_to_out(c, lower_epi(c, epilogue(c, g, v, row, col), oi))) ? 0 : -1;
}

/* Whether the GPU tiles take this contraction (CUDA): float, every dim
 * constant, M and N at least 16 (a GEMV keeps the plain form, a thread per
 * output reading its column of B). */
static bool gpu_ok(const lctx *c, const mm_geo *g)
{
    return c->s->gpu_gemm && !c->k->body.n && ir_dtype_is_float(c->cdt) && g->has_m && g->has_n &&
           ir_type_is_static(g->to) && ir_dim_is_const(g->kd) && g->m.v >= 16 && g->n.v >= 16 && g->kd.v >= 1;
}

static int lower_gpu(lctx *c, const mm_geo *g)
{
    cg_gpu_tile t = {.m = g->m.v, .n = g->n.v, .k = g->kd.v, .nbat = 1, .u = (void *)g,
                     .half = cg_gpu_tile_half(c->s, lw_in_dtype(c, 0), lw_in_dtype(c, 1)),
                     .a = gpu_a, .b = gpu_b, .store = gpu_store};
    for (int d = 0; d < g->nbatch; d++)
        t.nbat *= g->to->dims[d].v;
    return cg_gpu_tile_lower(c, &t, cg_gpu_tile_size(t.nbat, t.m, t.n));
}

/* ---- MatMul / Gemm on the tile ------------------------------------------ */

typedef struct {
    const mm_geo *g;
    kir_expr *bat[IR_MAX_RANK];
    bool flat;               /* the tile's rows are the output's batch dims and M flattened
                                (B 2-D, shared by every batch item; lower_tiled) */
    kir_expr *kv;
    int kc;                  /* reduction block */
    int pk;                  /* the packed B panel (thread scratch [kc, width]), or -1 */
    kir_expr *k0, *j0, *j1;  /* the current block's first k, the panel's columns [j0, j1) */
} mm_tile;

static int mm_setup(lctx *c, cg_tile *t, kir_expr *flat)
{
    mm_tile *u = t->u;
    if (u->g->nbatch > 0) {
        ir_type bt = *u->g->to;
        bt.rank = u->g->nbatch;
        lower_unflatten(c, &bt, flat, u->bat);
    }
    return 0;
}

static int mm_k_open(lctx *c, cg_tile *t, kir_expr *kb, kir_expr *g, kir_block **b)
{
    (void)g;
    kir_kernel *k = c->k;
    mm_tile *u = t->u;
    int kv = kir_new_var(k);
    kir_expr *k0 = u->k0 = kir_imul(k, kb, lw_i64c(k, u->kc));
    kir_stmt *lk = kir_for(k, *b, kv, k0, lw_imin(k, lw_i64c(k, u->g->kd.v), kir_iadd(k, k0, lw_i64c(k, u->kc))), KIR_SERIAL, 0);
    if (!lk)
        return -1;
    u->kv = kir_var(k, kv);
    *b = &lk->body;
    return 0;
}

/* Copies B[k0 .. k0 + kc, j0 .. j1) into the panel: the tile then reads
 * kc x width contiguous floats, where B's rows are N apart (a multiple
 * of 4 KB puts them all in one L1 set) and pages apart for large N. */
static int mm_pack(lctx *c, cg_tile *t, kir_block *b, kir_expr *kb, kir_expr *g, kir_expr *j0, kir_expr *j1)
{
    (void)g;
    kir_kernel *k = c->k;
    mm_tile *u = t->u;
    int kv = kir_new_var(k), jv = kir_new_var(k);
    kir_expr *k0 = kir_imul(k, kb, lw_i64c(k, u->kc));
    u->j0 = j0;
    kir_stmt *lk = kir_for(k, b, kv, k0, lw_imin(k, lw_i64c(k, u->g->kd.v), kir_iadd(k, k0, lw_i64c(k, u->kc))),
                           KIR_SERIAL, 0);
    kir_stmt *lj = lk ? kir_for(k, &lk->body, jv, lw_i64c(k, 0), kir_op2(k, KIR_SUB, IR_I64, j1, j0), KIR_VECTOR,
                                t->width) : NULL;
    if (!lj)
        return -1;
    kir_expr *ix[IR_MAX_RANK];
    operand_idx(c, u->g, 1, u->bat, kir_var(k, kv), kir_iadd(k, j0, kir_var(k, jv)), ix);
    kir_expr *si[] = {kir_op2(k, KIR_SUB, IR_I64, kir_var(k, kv), k0), kir_var(k, jv)};
    return kir_store(k, &lj->body, u->pk, si, lw_load_in(c, 1, ix)) ? 0 : -1;
}

/* Packed B (packed_b): the panel is already contiguous in the weights;
 * only its columns are noted for mm_b. */
static int mm_panel(lctx *c, cg_tile *t, kir_block *b, kir_expr *kb, kir_expr *g, kir_expr *j0, kir_expr *j1)
{
    (void)c, (void)b, (void)kb, (void)g;
    mm_tile *u = t->u;
    u->j0 = j0;
    u->j1 = j1;
    return 0;
}

/* The tile's hint (tile.h) for the panel after the one at j0: line
 * `line` of row kr, the current k plus dk clamped to the last k. Packed
 * B with a buffer of its own (packed_b, one k per row): the panels lie
 * one after another, K x pw apart; past the last full panel the hint
 * stays on it (then already in cache). B copied per panel (mm_pack): the
 * next panel's columns of row kr where B lies, or, with one panel a chunk
 * (pf_same_panel), this panel's columns kc rows further on. */
static int mm_prefetch(lctx *c, cg_tile *t, kir_block *b, kir_expr *g, kir_expr *j0, kir_expr *dk, kir_expr *line)
{
    (void)g;
    mm_tile *u = t->u;
    const mm_geo *mg = u->g;
    kir_kernel *k = c->k;
    int64_t K = mg->kd.v, N = mg->n.v;
    int pb = mg->pw ? mg->pbuf : c->buf[1];
    int64_t epl = 64 / (int64_t)ir_dtype_size(k->bufs[pb].dtype);
    kir_expr *kr = dk ? lw_imin(k, kir_iadd(k, u->kv, dk), lw_i64c(k, K - 1)) : u->kv;
    if (!mg->pw) {
        /* one panel a chunk: the next copy is this panel's next block of
         * K (32 x 768 x 768, B an input: 0.87 at 1 thread, 0.90 at 2) */
        bool same = t->pf_same_panel;
        if (same)
            kr = lw_imin(k, lw_iaddc(k, kr, u->kc), lw_i64c(k, K - 1));
        kir_expr *j = same ? j0 : lw_iaddc(k, j0, t->width);
        kir_expr *col = lw_imin(k, kir_iadd(k, j, lw_imulc(k, line, epl)), lw_i64c(k, N - 1));
        kir_expr *ix[IR_MAX_RANK];
        operand_idx(c, mg, 1, u->bat, kr, col, ix);
        kir_iarg a = {.buf = pb, .nidx = mg->tb->rank, .idx = ix};
        return kir_intrinsic(k, b, KIR_IN_PREFETCH_L2, 1, &a) ? 0 : -1;
    }
    int64_t W = mg->pw;
    kir_expr *jn = lw_imin(k, lw_iaddc(k, j0, W), lw_i64c(k, (N / W - 1) * W));
    kir_expr *f = lw_packed_at(k, K, 1, 0, kr, jn, lw_i64c(k, W), lw_imulc(k, line, epl));
    kir_iarg a = {.buf = mg->pbuf, .nidx = 1, .idx = (kir_expr *[]){packed_flat(k, mg, u->bat, f)}};
    return kir_intrinsic(k, b, KIR_IN_PREFETCH_L2, 1, &a) ? 0 : -1;
}

static kir_expr *mm_kstep(lctx *c, cg_tile *t)
{
    mm_tile *u = t->u;
    return kir_iadd(c->k, u->kv, lw_imulc(c->k, u->k0, -1));
}

/* A flat row's batch indices (*bat) and row of M (*m); unflattened only
 * with u->flat. */
static void mm_row(lctx *c, const mm_tile *u, kir_expr *row, kir_expr **bat, kir_expr **m)
{
    if (!u->flat) {
        for (int d = 0; d < u->g->nbatch; d++)
            bat[d] = u->bat[d];
        *m = row;
        return;
    }
    int64_t M = u->g->m.v;
    ir_type bt = *u->g->to;
    bt.rank = u->g->nbatch;
    lower_unflatten(c, &bt, lw_idivc(c->k, row, M), bat);
    *m = lw_iremc(c->k, row, M);
}

static kir_expr *mm_a(lctx *c, cg_tile *t, kir_expr *row)
{
    mm_tile *u = t->u;
    kir_expr *ix[IR_MAX_RANK], *bat[IR_MAX_RANK], *m;
    mm_row(c, u, row, bat, &m);
    operand_idx(c, u->g, 0, bat, m, u->kv, ix);
    return lw_load_in(c, 0, ix);
}

static kir_expr *mm_b(lctx *c, cg_tile *t, kir_expr *g, kir_expr *j)
{
    (void)g;
    mm_tile *u = t->u;
    kir_kernel *k = c->k;
    if (u->g->pw)
        return packed_b_at(c, u->g, u->bat, u->kv, u->j0, kir_op2(k, KIR_SUB, IR_I64, u->j1, u->j0),
                           kir_iadd(k, j, lw_imulc(k, u->j0, -1)));
    if (u->pk >= 0) {
        kir_expr *si[] = {kir_op2(k, KIR_SUB, IR_I64, u->kv, u->k0),
                          kir_iadd(k, j, kir_imul(k, u->j0, lw_i64c(k, -1)))};
        return kir_load(k, u->pk, si);
    }
    kir_expr *ix[IR_MAX_RANK];
    operand_idx(c, u->g, 1, u->bat, u->kv, j, ix);
    return lw_load_in(c, 1, ix);
}

static void mm_out(lctx *c, cg_tile *t, kir_expr *row, kir_expr *g, kir_expr *j, kir_expr **ix)
{
    (void)g;
    mm_tile *u = t->u;
    kir_expr *bat[IR_MAX_RANK], *m;
    mm_row(c, u, row, bat, &m);
    out_idx(u->g, bat, m, j, ix);
}

static kir_expr *mm_epi(lctx *c, cg_tile *t, kir_expr *v, kir_expr *row, kir_expr *g, kir_expr *j)
{
    (void)g;
    mm_tile *u = t->u;
    kir_expr *bat[IR_MAX_RANK], *m;
    mm_row(c, u, row, bat, &m);
    return epilogue(c, u->g, v, m, j);
}

/* The tile's rows for g (static sizes, else M) and its batch count: with
 * B 2-D, shared by every batch item, and A holding every item's rows (not
 * broadcast), the items' rows are one matrix of nbat x M rows, A's batch
 * dims and M flattened (*flat; a [32, 1, 256] x [256, 37] classifier ran
 * as 32 one-row products, each its own K blocks through the output). */
static int64_t tile_m(const mm_geo *g, int64_t *nbat, bool *flat)
{
    *nbat = 1;
    for (int d = 0; d < g->nbatch; d++)
        *nbat *= g->to->dims[d].v;
    *flat = *nbat > 1 && ir_dim_is_const(g->m) && g->has_m && !g->tA && g->tb->rank == 2 &&
            g->ta->rank == g->to->rank && ir_type_is_static(g->ta) && ir_type_is_static(g->to);
    for (int d = 0; *flat && d < g->nbatch; d++)
        *flat = ir_dim_eq(g->ta->dims[d], g->to->dims[d]);
    if (!*flat)
        return g->m.v;
    int64_t m = *nbat * g->m.v;
    *nbat = 1;
    return m;
}

/* The register-blocked form (see the file comment). Needs constant N, K
 * and batch dims (the parallel loop's bounds must be constant); M may be
 * symbolic (a batch of rows), then the chunks split the columns. Skinny
 * shapes (constant M <= CG_SKINNY_M) of a B not packed stream: short
 * reduction blocks over all columns, so B is read row after row; those
 * with enough rows to be bound by the FMAs split the columns between a
 * few chunks for threads (cg_schedule_skinny_chunks). With B packed they
 * are GEMV-like (below) or take the general tile. */
static int lower_tiled(lctx *c, const mm_geo *g, int width, int rows)
{
    int64_t nbat;
    bool mdyn = !ir_dim_is_const(g->m), flat;
    int64_t M = tile_m(g, &nbat, &flat);
    bool skinny = !mdyn && M <= CG_SKINNY_M;
    /* GEMV-like with B packed (schedule.h, CG_GEMV_M): one row block, the
     * whole reduction per panel, chunks of whole panels */
    bool gemv = skinny && g->pw && M < CG_GEMV_M;
    skinny = skinny && !g->pw;   /* packed from 8 rows: the general tile */
    int skc = M < CG_GEMV_M ? c->s->skinny_kc : c->s->skinny_fma_kc;
    /* few row blocks over a packed B: their panel block from L1 */
    bool few = g->pw && !gemv && !skinny && !mdyn && (M + rows - 1) / rows <= CG_FEW_ROW_BLOCKS;
    mm_tile u = {.g = g, .flat = flat, .kc = gemv ? (int)g->kd.v : skinny ? skc : few ? c->s->tile_kc_few : c->s->tile_kc, .pk = -1};
    int64_t mcb = !skinny && !mdyn ? c->s->gemm_apack_mc_blocks : c->s->gemm_mc_blocks;
    if (!skinny && !gemv && !mdyn && !few)
        cg_schedule_gemm_apack(c->s, (M + rows - 1) / rows, rows, width, (int)ir_dtype_size(c->cdt), !g->pw,
                               &u.kc, &mcb);
    if (ir_dim_is_const(g->kd) && g->kd.v > 0 && u.kc > g->kd.v)
        u.kc = (int)g->kd.v;   /* one block: the panel and packed A need no more rows than K */
    /* pack B's panel when several row blocks share it (with one block
     * the copy would be read once) */
    bool pack = !g->pw && (mdyn || M > rows);
    if (pack && (u.pk = kir_add_scratch(c->k, "bpanel", KIR_SPACE_THREAD, c->cdt, 2,
                                        (int64_t[]){u.kc, width})) < 0)
        return -1;
    cg_tile t = {
        .nbat = nbat, .m = mdyn ? 0 : M, .m_dyn = mdyn ? lw_dim_of(c->k, g->m) : NULL, .ng = 1, .n = g->n.v,
        .nkb = (g->kd.v + u.kc - 1) / u.kc, .stream = skinny, .mc_blocks = mcb,
        .stream_chunks = skinny ? cg_schedule_skinny_chunks(c->s, M, g->n.v,
                                                            g->kd.v * g->n.v * (int64_t)ir_dtype_size(c->cdt)) : 1,
        .rows = rows, .width = width, .u = &u, .pack_a = !skinny && !gemv && !mdyn, .b_copied = pack,
        .kc = u.kc, .kstep = mm_kstep,
        .setup = mm_setup, .k_open = mm_k_open, .pack = g->pw ? mm_panel : pack ? mm_pack : NULL, .a = mm_a, .b = mm_b, .out = mm_out, .epi = mm_epi,
    };
    /* the next panel's hints: B packed in panels (not in pairs or tiles,
     * not GEMV-like) or copied per panel (pack), from B's own buffer */
    int pb = g->pw ? g->pbuf : c->buf[1];
    if (g->pw ? pb >= 0 && g->pk == 1 && !g->pt && !gemv && g->n.v >= 2 * g->pw : pack && pb >= 0 && g->n.v >= 2 * width) {
        t.prefetch = mm_prefetch;
        t.pf_lines = (int)((width * (int64_t)ir_dtype_size(c->k->bufs[pb].dtype) + 63) / 64);
    }
    return cg_tile_lower(c, &t);
}

/* Gemm with transB (B is [N, K], as nn.Linear exports it): both operands
 * run along k, so the tile is DOT x DOT dot products, each a vector
 * accumulator over a VECTOR k loop summed across its lanes at the end (a
 * vector loop may split a carried sum: docs/kernel-ir.md). Per k chunk,
 * 2 DOT contiguous loads feed DOT^2 FMAs. Chunks of dot_chunk tiles of
 * rows x columns keep their A rows and B rows in L2. */
static int lower_dot(lctx *c, const mm_geo *g, int width, int dot)
{
    kir_kernel *k = c->k;
    /* a symbolic M (a batch of rows): every chunk runs all row blocks */
    bool mdyn = !ir_dim_is_const(g->m);
    int64_t M = mdyn ? 1 : g->m.v, N = g->n.v, K = g->kd.v;
    int64_t nbr = (M + dot - 1) / dot, nbc = (N + dot - 1) / dot;
    int64_t mcb = nbr < c->s->dot_chunk ? nbr : c->s->dot_chunk, ncb = nbc < c->s->dot_chunk ? nbc : c->s->dot_chunk;
    int64_t nrc = (nbr + mcb - 1) / mcb, ncc = (nbc + ncb - 1) / ncb;
    kir_expr *mx = mdyn ? lw_dim_of(k, g->m) : NULL;
    int pv = kir_new_var(k), cbv = kir_new_var(k), rbv = kir_new_var(k), kv = kir_new_var(k);
    kir_stmt *lp = kir_for(k, &k->body, pv, lw_i64c(k, 0), lw_i64c(k, nrc * ncc), KIR_PARALLEL, 0);
    if (!lp)
        return -1;
    kir_expr *p = kir_var(k, pv);
    kir_expr *rb0 = kir_imul(k, lw_idivc(k, p, ncc), lw_i64c(k, mcb));
    kir_expr *cb0 = kir_imul(k, kir_op2(k, KIR_REM, IR_I64, p, lw_i64c(k, ncc)), lw_i64c(k, ncb));
    kir_stmt *lc = kir_for(k, &lp->body, cbv, cb0, lw_imin(k, lw_i64c(k, nbc), kir_iadd(k, cb0, lw_i64c(k, ncb))),
                           KIR_SERIAL, 0);
    kir_expr *rb1 = mdyn ? lw_idivc(k, kir_iadd(k, mx, lw_i64c(k, dot - 1)), dot)
                         : lw_imin(k, lw_i64c(k, nbr), kir_iadd(k, rb0, lw_i64c(k, mcb)));
    kir_stmt *lr = lc ? kir_for(k, &lc->body, rbv, mdyn ? lw_i64c(k, 0) : rb0, rb1, KIR_SERIAL, 0) : NULL;
    if (!lr)
        return -1;
    kir_block *tb = &lr->body;
    kir_expr *rows[8], *cols[8];
    int acc[8][8];
    for (int r = 0; r < dot; r++) {
        kir_expr *i = kir_iadd(k, kir_imul(k, kir_var(k, rbv), lw_i64c(k, dot)), lw_i64c(k, r));
        kir_expr *j = kir_iadd(k, kir_imul(k, kir_var(k, cbv), lw_i64c(k, dot)), lw_i64c(k, r));
        rows[r] = lw_imin(k, i, mdyn ? kir_op2(k, KIR_SUB, IR_I64, mx, lw_i64c(k, 1)) : lw_i64c(k, M - 1));
        cols[r] = lw_imin(k, j, lw_i64c(k, N - 1));
    }
    for (int r = 0; r < dot; r++)
        for (int q = 0; q < dot; q++)
            if ((acc[r][q] = kir_new_acc(k, c->cdt)) < 0 || !kir_acc_set(k, tb, acc[r][q], zero(c)))
                return -1;
    kir_stmt *lk = kir_for(k, tb, kv, lw_i64c(k, 0), lw_i64c(k, K), KIR_VECTOR, width);
    if (!lk)
        return -1;
    kir_expr *av[8], *bv[8], *ix[IR_MAX_RANK];
    for (int r = 0; r < dot; r++) {
        operand_idx(c, g, 0, NULL, rows[r], kir_var(k, kv), ix);
        av[r] = lw_load_in(c, 0, ix);
        operand_idx(c, g, 1, NULL, kir_var(k, kv), cols[r], ix);
        bv[r] = lw_load_in(c, 1, ix);
    }
    for (int r = 0; r < dot; r++)
        for (int q = 0; q < dot; q++) {
            kir_expr *f = kir_op3(k, KIR_FMA, c->cdt, av[r], bv[q], kir_acc(k, acc[r][q]));
            if (!kir_acc_set(k, &lk->body, acc[r][q], f))
                return -1;
        }
    for (int r = 0; r < dot; r++)
        for (int q = 0; q < dot; q++) {
            kir_expr *oi[] = {rows[r], cols[q]};
            kir_expr *v = lower_epi(c, epilogue(c, g, kir_acc(k, acc[r][q]), rows[r], cols[q]), oi);
            if (!kir_store(k, tb, c->out, oi, v))
                return -1;
        }
    return 0;
}

/* ---- bf16 x bf16 on vdpbf16ps ------------------------------------------ */

/* Whether the pair kernel runs n: B packed in pairs of k (packed_k = 2, the
 * pack-b pass, which packs only for a target with vdpbf16ps), read from its
 * bf16 buffer, and A a bf16 buffer of constant shape [.., M, K] (the bf16
 * activation), B 2-D, no transposes, constant sizes. */
static bool pairs_ok(lctx *c, const mm_geo *g)
{
    const kir_kernel *k = c->k;
    if (g->pk != 2 || !c->s->bf16_pairs || c->buf[0] < 0 || c->buf[1] < 0 || g->pbuf < 0 || g->tA || g->tB ||
        k->bufs[c->buf[0]].dtype != IR_BF16 || k->bufs[c->buf[1]].dtype != IR_BF16 || !g->has_m || !g->has_n ||
        g->tb->rank != 2 || !ir_type_is_static(g->ta) || !ir_type_is_static(g->to) || g->kd.v % 2 || g->kd.v < 2)
        return false;
    return !g->gemm || c->n->nin < 3 || !c->n->in[2] || c->n->in[2]->type.dtype == IR_F32;
}

/* The pair kernel's pieces (the AMX kernel's edges use them too). */

/* acc's rows [ar, ar + nr), columns [0, wl): 0. */
static int pairs_zero(lctx *c, kir_block *b, int acc, int64_t ar, int nr, int64_t wl)
{
    kir_kernel *k = c->k;
    int L = c->s->lanes;
    for (int r = 0; r < nr; r++)
        for (int64_t v = 0; v * L < wl; v++) {
            int lv = kir_new_var(k);
            kir_stmt *l = kir_for(k, b, lv, lw_i64c(k, 0), lw_i64c(k, wl - v * L < L ? wl - v * L : L), KIR_VECTOR, L);
            if (!l || !kir_store(k, &l->body, acc, (kir_expr *[]){lw_i64c(k, ar + r), lw_iaddc(k, kir_var(k, lv), v * L)},
                                 kir_const_f(k, IR_F32, 0)))
                return -1;
        }
    return 0;
}

/* acc's rows [ar, ar + nr), columns [0, wl), += the pairs of k [kp0, kp1)
 * of A's flat rows row[r] times packed B's columns [co, co + wl) of the
 * panel that starts at column j0p and is pw wide: one dpbf16_pairs per
 * row and pair, on A's pair read in place (adjacent in its row) and the
 * panel's wl pairs (contiguous; in the tile order, packed_t, each 16 of
 * them, co a multiple of 16). */
static int pairs_dot(lctx *c, const mm_geo *g, kir_block *b, int acc, kir_expr *ar, kir_expr *const *row, int nr,
                     kir_expr *j0p, int64_t pw, kir_expr *co, int64_t wl, int64_t kp0, int64_t kp1)
{
    kir_kernel *k = c->k;
    int kv = kir_new_var(k);
    kir_stmt *lk = kir_for(k, b, kv, lw_i64c(k, kp0), lw_i64c(k, kp1), KIR_SERIAL, 0);
    if (!lk)
        return -1;
    kir_expr *kp = kir_var(k, kv), *k2 = lw_imulc(k, kp, 2);
    int64_t piece = g->pt ? 16 : wl;
    ir_type bt = *g->ta;
    bt.rank--; /* A's dims but K: the flat row's index */
    for (int r = 0; r < nr; r++) {
        kir_expr *ai[IR_MAX_RANK];
        lower_unflatten(c, &bt, row[r], ai);
        ai[bt.rank] = k2;
        for (int64_t h = 0; h < wl; h += piece) {
            kir_expr *boff = g->pt ? lw_packed_at(k, g->kd.v, 2, g->pt, k2, j0p, lw_i64c(k, pw), lw_iaddc(k, co, h))
                                   : kir_iadd(k, kir_iadd(k, lw_imulc(k, j0p, g->kd.v), lw_imulc(k, kp, 2 * pw)),
                                              lw_imulc(k, co, 2));
            kir_iarg args[3] = {
                {.buf = acc, .nidx = 2, .idx = (kir_expr *[]){lw_iaddc(k, ar, r), lw_i64c(k, h)}},
                {.buf = c->buf[0], .nidx = g->ta->rank, .idx = ai},
                {.buf = g->pbuf, .nidx = 1, .idx = (kir_expr *[]){boff}},
            };
            if (!kir_intrinsic(k, &lk->body, KIR_IN_DPBF16_PAIRS, (int)(wl - h < piece ? wl - h : piece), args))
                return -1;
        }
    }
    return 0;
}

/* The output's flat row `row`, columns j0 + [0, wl): the epilogue (Gemm's
 * alpha, beta and C; the fused group) of acc's row ar. */
static int pairs_out(lctx *c, const mm_geo *g, kir_block *b, int acc, kir_expr *ar, kir_expr *row, kir_expr *j0,
                     int64_t wl)
{
    kir_kernel *k = c->k;
    int L = c->s->lanes;
    int64_t M = g->m.v;
    for (int64_t v = 0; v * L < wl; v++) {
        int lv = kir_new_var(k);
        kir_stmt *l = kir_for(k, b, lv, lw_i64c(k, 0), lw_i64c(k, wl - v * L < L ? wl - v * L : L), KIR_VECTOR, L);
        if (!l)
            return -1;
        kir_expr *jj = lw_iaddc(k, kir_var(k, lv), v * L);
        kir_expr *y = kir_load(k, acc, (kir_expr *[]){ar, jj});
        kir_expr *col = kir_iadd(k, j0, jj), *bat[IR_MAX_RANK], *oi[IR_MAX_RANK];
        /* the output's batch dims, then M: row = bat * M + m */
        kir_expr *m = lw_iremc(k, row, M), *bflat = lw_idivc(k, row, M);
        if (g->nbatch > 0) {
            ir_type ob = *g->to;
            ob.rank = g->nbatch;
            lower_unflatten(c, &ob, bflat, bat);
        }
        out_idx(g, bat, m, col, oi);
        kir_expr *fin = lower_epi(c, epilogue(c, g, y, m, col), oi);
        if (!kir_store(k, &l->body, c->out, oi, lw_to_out(c, fin))) /* bf16 under a bf16 root */
            return -1;
    }
    return 0;
}

/* nr rows of register tile (pairs_zero, pairs_dot over all of K,
 * pairs_out) in acc's rows [0, nr): the output rows row[r], its columns
 * jo + [0, wl) from packed B's columns [co, co + wl) of the panel at j0p,
 * pw wide. */
static int pairs_tile(lctx *c, const mm_geo *g, kir_block *b, int acc, kir_expr *const *row, int nr, kir_expr *j0p,
                      int64_t pw, kir_expr *co, kir_expr *jo, int64_t wl)
{
    if (pairs_zero(c, b, acc, 0, nr, wl) < 0 || pairs_dot(c, g, b, acc, lw_i64c(c->k, 0), row, nr, j0p, pw, co, wl, 0, g->kd.v / 2) < 0)
        return -1;
    for (int r = 0; r < nr; r++)
        if (pairs_out(c, g, b, acc, lw_i64c(c->k, r), row[r], jo, wl) < 0)
            return -1;
    return 0;
}

/* The rows of a pair tile over wl columns: the tile's accumulators
 * (tile_rows x tile_vecs registers) spread over the vectors of a row, at
 * most `most`. */
static int pairs_rows(const lctx *c, int64_t wl, int most)
{
    int L = c->s->lanes, R = c->s->tile_rows * c->s->tile_vecs / (int)((wl + L - 1) / L);
    return R < 1 ? 1 : R > most ? most : R;
}

/* Parallel chunks of nb row blocks x nq column panels (+ a tail panel, a
 * column chunk of its own): row chunks of mc blocks and column chunks of
 * nc panels, split further until there are min_chunks of them. *mcb
 * blocks and *ncp panels per chunk, *nrc x (*ncf + tail) chunks. */
static void pairs_chunks(const cg_schedule *s, int64_t nb, int64_t nq, bool tail, int64_t mc, int64_t nc,
                         int64_t *nrc, int64_t *ncf, int64_t *mcb, int64_t *ncp)
{
    int64_t r = (nb + mc - 1) / mc, f = nq ? (nq + nc - 1) / nc : 0;
    while (r * (f + tail) < s->min_chunks && (r < nb || f < nq)) {
        if (f < nq && (r >= nb || nq * r >= nb * f))
            f++;
        else
            r++;
    }
    *mcb = (nb + r - 1) / r;
    *ncp = f ? (nq + f - 1) / f : 1;
    *nrc = (nb + *mcb - 1) / *mcb;
    *ncf = *ncp ? (nq + *ncp - 1) / *ncp : 0;
}

/* The parallel loop over nrc x ncc chunks of the pair and AMX kernels (B
 * [K, N] larger than A [rows, K]: consecutive chunks share B's columns),
 * in the kernel's body: its row and column chunk (*cc) and the chunk's
 * row blocks [*rb0, *rb1) of nb, mcb a chunk. NULL on out of memory. */
static kir_stmt *pairs_loop(lctx *c, int64_t nrc, int64_t ncc, bool cols_outer, int64_t nb, int64_t mcb,
                            kir_expr **cc, kir_expr **rb0, kir_expr **rb1)
{
    kir_kernel *k = c->k;
    int pv = kir_new_var(k);
    kir_stmt *lp = kir_for(k, &k->body, pv, lw_i64c(k, 0), lw_i64c(k, nrc * ncc), KIR_PARALLEL, 0);
    if (!lp)
        return NULL;
    kir_expr *rc;
    lw_chunk_at(k, kir_var(k, pv), nrc, ncc, cols_outer, &rc, cc);
    *rb0 = lw_imulc(k, rc, mcb);
    *rb1 = lw_imin(k, lw_i64c(k, nb), lw_iaddc(k, *rb0, mcb));
    return lp;
}

/* Part 0 (the chunk's full panels: column chunks below ncf) or 1 (the
 * tail panel: column chunk ncf) of a pair or AMX kernel's trip, as an if
 * in the parallel loop lp. NULL on out of memory. */
static kir_stmt *pairs_part(lctx *c, kir_stmt *lp, int part, kir_expr *cc, int64_t ncf)
{
    kir_kernel *k = c->k;
    return kir_if(k, &lp->body, kir_op2(k, part ? KIR_EQ : KIR_LT, IR_BOOL, cc, lw_i64c(k, ncf)));
}

/* The pair kernel: the output's rows flattened (A's batch dims and M
 * against the one B), parallel over chunks of row blocks x column panels
 * of B's packing width W. Per panel and block of R rows, R x W f32 sums in
 * thread scratch (registers: every access at a constant offset), the
 * pieces above. The last panel, N mod W wide, is a column chunk of its
 * own. */
static int lower_pairs(lctx *c, const mm_geo *g)
{
    kir_kernel *k = c->k;
    int64_t N = g->n.v, W = g->pw, rows = 1;
    for (int d = 0; d < g->ta->rank - 1; d++)
        rows *= g->ta->dims[d].v;
    int R = pairs_rows(c, W, 8);
    if (rows < R)
        R = (int)rows;
    int64_t nb = (rows + R - 1) / R, nfull = N / W, tail = N % W, nrc, ncf, mcb, ncp;
    pairs_chunks(c->s, nb, nfull, tail > 0, c->s->tile_mc_blocks, c->s->tile_nc_panels, &nrc, &ncf, &mcb, &ncp);
    int64_t ncc = ncf + (tail > 0);
    int acc = kir_add_scratch(k, "pacc", KIR_SPACE_THREAD, IR_F32, 2, (int64_t[]){R, W});
    if (acc < 0)
        return -1;
    kir_expr *cc, *rb0, *rb1;
    kir_stmt *lp = pairs_loop(c, nrc, ncc, N > rows, nb, mcb, &cc, &rb0, &rb1);
    if (!lp)
        return -1;
    for (int part = 0; part < 2; part++) {
        /* part 0: the chunk's full panels; part 1: the tail panel */
        int64_t wp = part ? tail : W;
        if (!wp || (!part && !ncf))
            continue;
        kir_stmt *br = pairs_part(c, lp, part, cc, ncf);
        if (!br)
            return -1;
        int qv = kir_new_var(k), rbv = kir_new_var(k);
        kir_expr *q0 = part ? lw_i64c(k, nfull) : lw_imulc(k, cc, ncp);
        kir_expr *q1 = part ? lw_i64c(k, nfull + 1) : lw_imin(k, lw_i64c(k, nfull), lw_iaddc(k, q0, ncp));
        kir_stmt *lq = kir_for(k, &br->body, qv, q0, q1, KIR_SERIAL, 0);
        kir_stmt *lr = lq ? kir_for(k, &lq->body, rbv, rb0, rb1, KIR_SERIAL, 0) : NULL;
        if (!lr)
            return -1;
        kir_expr *j0 = lw_imulc(k, kir_var(k, qv), W), *row[8];
        for (int r = 0; r < R; r++)
            row[r] = lw_imin(k, lw_iaddc(k, lw_imulc(k, kir_var(k, rbv), R), r), lw_i64c(k, rows - 1));
        if (pairs_tile(c, g, &lr->body, acc, row, R, j0, wp, lw_i64c(k, 0), j0, wp) < 0)
            return -1;
    }
    return 0;
}

/* ---- bf16 x bf16 on AMX tiles ------------------------------------------ */

enum { AMX_MB = CG_AMX_NB, AMX_NB = CG_AMX_NB };   /* a block: 2 x 2 tiles of 16 x 16 f32 sums */

/* Whether A's buffer can be read as the [rows, K] matrix the tiles read:
 * it is 2-D, or an input, weight or arena buffer to view so (a scratch of
 * more dims has no address of its own to view). */
static bool amx_a_viewable(const lctx *c)
{
    const kir_buf *b = &c->k->bufs[c->buf[0]];
    return b->rank == 2 || b->kind != KIR_BUF_SCRATCH;
}

/* That matrix (amx_a_viewable): A's buffer itself, or a view of it; -1 on
 * out of memory. */
static int amx_a_view(lctx *c, const mm_geo *g, int64_t rows)
{
    const kir_buf *b = &c->k->bufs[c->buf[0]];
    if (b->rank == 2)
        return c->buf[0];
    ir_type t = {.dtype = b->dtype, .rank = 2, .dims = {ir_dim_const(rows), g->kd}};
    return kir_add_buf(c->k, b->name, b->kind, &t, b->index, b->offset);
}

/* Whether the AMX kernel runs n: the pair kernel's operands on a target
 * with AMX-BF16, a full block of rows, K of a tile's 32 at least, B's
 * panels whole blocks of columns and A readable as a matrix. */
static bool amx_ok(lctx *c, const mm_geo *g, int64_t rows)
{
    return c->s->amx_bf16 && rows >= AMX_MB && g->kd.v >= 32 && g->pw % AMX_NB == 0 && g->n.v >= g->pw &&
           amx_a_viewable(c);
}

/* The block whose sums wait in acc for their epilogue: pending when
 * `on` is not 0; its output's rows r0 + [0, 32) and columns jo + [0, 32)
 * from acc's rows ar + [0, 32). */
typedef struct {
    int acc;
    kir_expr *on, *ar, *r0, *jo;
} amx_pend;

/* The pending block's rows [s R, min(32, s R + R)) through the epilogue,
 * R = ceil(32 / ks): step s of a k loop of ks steps, so the loop puts out
 * all 32. */
static int amx_pend_rows(lctx *c, const mm_geo *g, kir_block *b, const amx_pend *p, kir_expr *s, int64_t ks)
{
    kir_kernel *k = c->k;
    int64_t R = (AMX_MB + ks - 1) / ks;
    int rv = kir_new_var(k);
    kir_expr *lo = lw_imulc(k, s, R);
    kir_stmt *on = kir_if(k, b, kir_op2(k, KIR_NE, IR_BOOL, p->on, lw_i64c(k, 0)));
    kir_stmt *lr = on ? kir_for(k, &on->body, rv, lo, lw_imin(k, lw_iaddc(k, lo, R), lw_i64c(k, AMX_MB)), KIR_SERIAL, 0)
                      : NULL;
    if (!lr)
        return -1;
    kir_expr *rr = kir_var(k, rv);
    return pairs_out(c, g, &lr->body, p->acc, kir_iadd(k, p->ar, rr), kir_iadd(k, p->r0, rr), p->jo, AMX_NB);
}

/* One 32 x 32 block of sums in tiles: rows r0 + [0, 32) of A (the view
 * av) times the pair rows of B (the view bv, [panels x K/2, 2W]) from bq
 * on, columns co + [0, 32) of the panel; tiles 0..3 the sums (0, 1 the
 * top rows, left and right), 4, 5 A's rows and 6, 7 B's columns, per 32
 * k 4 loads and 4 tdpbf16ps; the sums stored to acc's rows ar + [0, 32).
 * The k loop also puts the pending block p out, a few rows a step: the
 * vector unit's epilogue (a Gelu's erfc is ~55 instructions a vector) then
 * runs while the tile unit multiplies, instead of after it. */
static int amx_block(lctx *c, const mm_geo *g, kir_block *b, int av, int bv, int acc, kir_expr *ar, kir_expr *r0,
                     kir_expr *bq, kir_expr *co, const amx_pend *p)
{
    kir_kernel *k = c->k;
    int64_t ks = g->kd.v / 32;
    /* B's tiles: in the tile order (packed_t) rows of 16 pairs, the
     * block's two tiles one above the other, a step W rows on; else side
     * by side in the panel's rows of W pairs, a step 16 rows on */
    bool t = g->pt != 0;
    kir_stmt *lk = lower_amx_kloop(c, b, av, r0, NULL, 32, bv, t ? kir_iadd(k, bq, co) : bq,
                                   t ? lw_i64c(k, 0) : lw_imulc(k, co, 2), t ? 0 : 32, t ? g->pw : 16, t ? 16 : 0, ks,
                                   KIR_IN_AMX_DPBF16PS);
    if (!lk || amx_pend_rows(c, g, &lk->body, p, kir_var(k, lk->var), ks) < 0)
        return -1;
    return lower_amx_store(c, b, acc, ar, lw_i64c(k, 0));
}

/* The AMX kernel: as the pair kernel, but blocks of 32 rows x 32 columns
 * of a full panel run on tiles (amx_block), each thread's chunk between
 * amx_config and amx_release. K mod 32 (its pairs), the rows past the
 * last full block and the tail panel run on dpbf16_pairs. Chunks of 4
 * row blocks (A's rows, 64 K bytes each, stay in L2) x 8 column blocks
 * (B's, read by each row block in turn). A block's epilogue runs during
 * the next block's products (amx_block), the chunk's last one after its
 * loops; two slots of sums in tacc alternate. */
static int lower_amx(lctx *c, const mm_geo *g, int64_t rows)
{
    kir_kernel *k = c->k;
    int64_t K = g->kd.v, N = g->n.v, W = g->pw;
    int64_t nb = (rows + AMX_MB - 1) / AMX_MB, nbf = rows / AMX_MB, rem = rows % AMX_MB;
    int64_t nfull = N / W, tail = N % W, per = W / AMX_NB, nq = nfull * per, nrc, ncf, mcb, ncp;
    /* B resident (more than one chunk of 4 row blocks): chunks of the
     * column blocks whose B (K x 64 bytes each) fills half of L2, their
     * row blocks outer, consecutive chunks sharing columns, so B is read
     * from memory once and each A block serves the whole chunk while it
     * is hot; else A's 4 row blocks stay in L2 and each column block
     * serves them in turn (B read once, too). A C model of the kernel,
     * one core, GFLOP/s: 1024^3 975 -> 1150 (A's rows 2 KiB apart stream
     * worse from L2 than B's tiles), 1024 x 768 x 3072 876 -> 1084; with
     * 4 row blocks the other order wins (128 x 768 x 768: 1350 against
     * 1070). */
    int64_t l2 = c->s->target->l2_bytes > 0 ? c->s->target->l2_bytes : 1 << 20, ncb = 8;
    bool bres = nb > 4;
    if (bres) {
        ncb = l2 / 2 / (K * 2 * AMX_NB);
        ncb = ncb < 1 ? 1 : ncb;
    }
    pairs_chunks(c->s, nb, nq, tail > 0, 4, ncb, &nrc, &ncf, &mcb, &ncp);
    int64_t ncc = ncf + (tail > 0);
    int av = amx_a_view(c, g, rows);
    /* B as rows of W pairs, or in the tile order (packed_t) of 16 */
    ir_type bt = {.dtype = IR_BF16, .rank = 2, .dims = {ir_dim_const(nfull * K / 2), ir_dim_const(2 * W)}};
    if (g->pt)
        bt.dims[0] = ir_dim_const(nfull * K * W / 32), bt.dims[1] = ir_dim_const(32);
    const kir_buf *pb = &k->bufs[g->pbuf];
    int bv = av < 0 ? -1 : kir_add_buf(k, pb->name, pb->kind, &bt, pb->index, pb->offset);
    /* two blocks of sums (the one in the tiles, the pending one) and the
     * pending one's state: on, r0, jo, and the slot the next block fills */
    int tacc = kir_add_scratch(k, "tacc", KIR_SPACE_THREAD, IR_F32, 2, (int64_t[]){2 * AMX_MB, AMX_NB});
    int tst = kir_add_scratch(k, "tpend", KIR_SPACE_THREAD, IR_I64, 1, (int64_t[]){4});
    int Rq = pairs_rows(c, AMX_NB, 8), Rt = tail ? pairs_rows(c, tail, 8) : 1, Rp = Rq > Rt ? Rq : Rt;
    int pacc = kir_add_scratch(k, "pacc", KIR_SPACE_THREAD, IR_F32, 2, (int64_t[]){Rp, W});
    kir_expr *cc, *rb0, *rb1;
    kir_stmt *lp = bv < 0 || tacc < 0 || tst < 0 || pacc < 0 ? NULL
                                                            : pairs_loop(c, nrc, ncc, bres || N > rows, nb, mcb, &cc, &rb0, &rb1);
    if (!lp || !kir_intrinsic(k, &lp->body, KIR_IN_AMX_CONFIG, 0, NULL))
        return -1;
    for (int part = 0; part < 2; part++) {
        /* part 0: the chunk's column blocks of full panels; part 1: the tail panel */
        if ((part && !tail) || (!part && !ncf))
            continue;
        kir_stmt *br = pairs_part(c, lp, part, cc, ncf);
        if (!br)
            return -1;
        /* part 0: the chunk's column blocks, then its row blocks; part 1
         * (one panel): its row blocks alone */
        int qv = kir_new_var(k), rbv = kir_new_var(k);
        if (!part && (lower_amx_st_set(k, &br->body, tst, 0, lw_i64c(k, 0)) < 0 ||
                      lower_amx_st_set(k, &br->body, tst, 3, lw_i64c(k, 0)) < 0))
            return -1;
        kir_expr *q0 = part ? NULL : lw_imulc(k, cc, ncp), *q1 = part ? NULL : lw_imin(k, lw_i64c(k, nq), lw_iaddc(k, q0, ncp));
        kir_stmt *lr;
        if (part) {
            lr = kir_for(k, &br->body, rbv, rb0, rb1, KIR_SERIAL, 0);
        } else {
            /* the chunk's column blocks, then its row blocks; B resident:
             * the other way round */
            kir_stmt *lo = bres ? kir_for(k, &br->body, rbv, rb0, rb1, KIR_SERIAL, 0)
                                : kir_for(k, &br->body, qv, q0, q1, KIR_SERIAL, 0);
            lr = !lo ? NULL : bres ? kir_for(k, &lo->body, qv, q0, q1, KIR_SERIAL, 0)
                                   : kir_for(k, &lo->body, rbv, rb0, rb1, KIR_SERIAL, 0);
        }
        if (!lr)
            return -1;
        kir_expr *rb = kir_var(k, rbv), *r0 = lw_imulc(k, rb, AMX_MB), *row[8];
        if (part) { /* the tail panel: every block's rows, Rt at a time (past the last, the last again) */
            kir_expr *j0 = lw_i64c(k, nfull * W);
            for (int64_t r = 0; r < AMX_MB; r += Rt) {
                for (int i = 0; i < Rt; i++)
                    row[i] = lw_imin(k, lw_iaddc(k, r0, r + i), lw_i64c(k, rows - 1));
                if (pairs_tile(c, g, &lr->body, pacc, row, Rt, j0, tail, lw_i64c(k, 0), j0, tail) < 0)
                    return -1;
            }
            continue;
        }
        kir_expr *q = kir_var(k, qv), *j0p = lw_imulc(k, lw_idivc(k, q, per), W), *co = lw_imulc(k, lw_iremc(k, q, per), AMX_NB);
        kir_expr *jo = lw_imulc(k, q, AMX_NB);
        kir_stmt *full = kir_if(k, &lr->body, kir_op2(k, KIR_LT, IR_BOOL, rb, lw_i64c(k, nbf)));
        if (!full)
            return -1;
        /* the block fills slot sl while the pending one goes out from the
         * other; then it is the pending one */
        kir_block *fb = &full->body;
        kir_expr *sl = kir_let(k, fb, lower_amx_st(k, tst, 3));
        amx_pend pend = {tacc, kir_let(k, fb, lower_amx_st(k, tst, 0)), lw_imulc(k, lower_amx_flip(k, sl), AMX_MB),
                         kir_let(k, fb, lower_amx_st(k, tst, 1)), kir_let(k, fb, lower_amx_st(k, tst, 2))};
        kir_expr *ar = lw_imulc(k, sl, AMX_MB);
        /* the panel's first row of B's view */
        kir_expr *bq = lw_imulc(k, lw_idivc(k, q, per), g->pt ? K * W / 32 : K / 2);
        if (amx_block(c, g, fb, av, bv, tacc, ar, r0, bq, co, &pend) < 0)
            return -1;
        int64_t kt = K / 32 * 16;   /* the pairs past the tiles' */
        kir_expr *all[AMX_MB];
        for (int i = 0; i < AMX_MB; i++)
            all[i] = lw_iaddc(k, r0, i);
        if (kt < K / 2 && pairs_dot(c, g, fb, tacc, ar, all, AMX_MB, j0p, W, co, AMX_NB, kt, K / 2) < 0)
            return -1;
        if (lower_amx_st_set(k, fb, tst, 0, lw_i64c(k, 1)) < 0 || lower_amx_st_set(k, fb, tst, 1, r0) < 0 ||
            lower_amx_st_set(k, fb, tst, 2, jo) < 0 || lower_amx_st_set(k, fb, tst, 3, lower_amx_flip(k, sl)) < 0)
            return -1;
        /* the rows past the last full block (rb = nbf), Rq at a time */
        for (int64_t r = 0; r < rem; r += Rq) {
            int nr = (int)(rem - r < Rq ? rem - r : Rq);
            for (int i = 0; i < nr; i++)
                row[i] = lw_i64c(k, nbf * AMX_MB + r + i);
            if (pairs_tile(c, g, &full->orelse, pacc, row, nr, j0p, W, co, jo, AMX_NB) < 0)
                return -1;
        }
        /* the chunk's last block goes out after its loops */
        amx_pend last = {tacc, lower_amx_st(k, tst, 0), lw_imulc(k, lower_amx_flip(k, lower_amx_st(k, tst, 3)), AMX_MB),
                         lower_amx_st(k, tst, 1), lower_amx_st(k, tst, 2)};
        if (amx_pend_rows(c, g, &br->body, &last, lw_i64c(k, 0), 1) < 0)
            return -1;
    }
    return kir_intrinsic(k, &lp->body, KIR_IN_AMX_RELEASE, 0, NULL) ? 0 : -1;
}

int lower_matmul(lctx *c)
{
    mm_geo g;
    geo_init(c, &g);
    if (packed_view(c, &g) < 0)
        return -1;
    ir_dtype dt = g.ta->dtype;
    if (gpu_ok(c, &g))
        return lower_gpu(c, &g);
    if (pairs_ok(c, &g)) {
        int64_t rows = 1;
        for (int d = 0; d < g.ta->rank - 1; d++)
            rows *= g.ta->dims[d].v;
        return amx_ok(c, &g, rows) ? lower_amx(c, &g, rows) : lower_pairs(c, &g);
    }
    /* constant sizes, but for M, which may be a symbol (rows of a batch) */
    bool consts = ir_dim_is_const(g.n) && ir_dim_is_const(g.kd) && (ir_dim_is_const(g.m) || g.m.sym > 0);
    for (int d = 0; d < g.nbatch; d++)
        consts = consts && ir_dim_is_const(g.to->dims[d]);
    /* The tile's row: 4 vector registers with 32 of them (AVX-512: 24
     * accumulators, 4 of B, 1 broadcast of A), 2 with 16 (AVX2); fewer
     * when N is narrower. Wide rows halve the B traffic per flop, which
     * matters because B's rows are a page apart for large N. */
    int vl = c->s->lanes * 4 / (int)ir_dtype_size(dt);
    int rows, vecs;
    int64_t tbat;
    bool tflat;
    int64_t tm = consts ? tile_m(&g, &tbat, &tflat) : 0;   /* the tile's rows (lower_tiled's M) */
    cg_schedule_gemm_tile(c->s, ir_dim_is_const(g.m) ? tm : 0, vl > 0 && consts ? (g.n.v + vl - 1) / vl : 0,
                          consts ? g.kd.v * g.n.v * (int64_t)ir_dtype_size(dt) : 0, &rows, &vecs);
    int64_t width = (int64_t)vl * vecs;
    /* narrower when N is: a power of two of vectors (the partial chunk of
     * a 3-vector row, <48 x float> masked, was shuffled lane by lane:
     * [32, 256] x [256, 37] took 0.44 ms) */
    if (consts && vl > 0 && g.n.v < width) {
        int64_t nv = 1;
        while (nv * vl < g.n.v)
            nv *= 2;
        width = nv * vl;
    }
    /* packed B: the tile's panels are B's (any multiple of the vector
     * the accumulators can hold; otherwise the plain loop reads them) */
    bool panels_ok = !g.pw || (vl > 0 && g.pw % vl == 0 && g.pw / vl <= 4 * c->s->tile_vecs);
    if (g.pw)
        width = g.pw;
    /* packed: GEMV-like, all rows in one register tile over B's wide
     * panels; else the general tile's rows (any M: the tile's panels) */
    if (g.pw && ir_dim_is_const(g.m) && tm < CG_GEMV_M)
        rows = (int)tm;
    else if (g.pw && g.pk == 1)
        rows = cg_schedule_packed_rows(c->s, ir_dim_is_const(g.m) ? tm : 0);
    /* (a narrower output buffer than the anchor's, a bf16 group root:
     * no partial sums through it, so the plain loop) */
    bool wide = dt == c->cdt && g.to->dtype == dt && c->k->bufs[c->out].dtype == dt && (dt == IR_F32 || dt == IR_F64 || ir_dtype_is_int(dt)) &&
                g.has_m && g.has_n && consts && g.n.v >= 4 && (g.m.sym > 0 || g.m.v >= 1) && g.kd.v >= 1 &&
                vl >= 2 && panels_ok;
    if (wide && g.gemm && c->n->nin > 2 && c->n->in[2] && c->n->in[2]->type.dtype != dt)
        wide = false;
    /* transB: B's columns are a row apart; dot products along k instead
     * (4 x 4 accumulators with 32 registers, 2 x 2 with 16) */
    if (wide && g.tB && !g.tA && g.kd.v >= vl)
        return lower_dot(c, &g, vl, c->s->dot_tiles);
    return wide && !g.tB ? lower_tiled(c, &g, (int)width, rows) : lower_plain(c, &g);
}
