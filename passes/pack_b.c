/* pack_b.c - constant B of MatMul and Gemm stored in the compiled
 * kernel's panel order, once at compile time.
 *
 * The register tile (codegen/lower/tile.c) reads B as column panels of
 * w columns (w = the tile's vectors x the f32 lanes: 16 on AVX2, 64 on
 * AVX-512), kc rows at a time. In place, a panel's rows are N apart; the
 * kernel used to copy each kc x w piece into scratch on every call. Here
 * a constant B [.., K, N] (or a Gemm's transB B [N, K]) is replaced by a
 * constant of type [.., K, N] holding each matrix as its panels one after
 * another, each [K, width] row-major (the last N mod w wide), and the
 * node gets packed_b = w (transB 0): the same element count, so the
 * weights do not grow, and the original is erased when nothing else
 * reads it (the pass packs only a constant with this one reader). The
 * reference kernels (ir/ref/nn.c) unpack a copy, so the interpreter and
 * fold still run the graph; the lowering (codegen/lower/matmul.c) reads
 * the panels in place for any M.
 *
 * Packed: f32 MatMul with A of rank >= 2 and a static B of rank >= 2,
 * f32 Gemm (C f32 or absent), any M: GEMV-like products (constant M <
 * CG_GEMV_M) in panels of cg_schedule_gemv_cols, wide enough for the 8
 * accumulators of one row, which the kernel runs over the whole
 * reduction, so each thread streams whole panels, one contiguous stretch
 * of the weights; the others in the tile's panels; N > w (with one panel
 * the order is B's own). Runs after
 * precision (bf16/fp16 weights are Casts, not constants, then) and before
 * fuse and plan.
 *
 * bf16 x bf16 (pair_cast): on a target with vdpbf16ps, a MatMul/Gemm
 * whose A is a rounded bf16 activation and whose B is Cast(bf16 constant)
 * gets that constant packed in panels of pairs of k, each [K/2, width, 2]
 * (packed_k = 2), for any M; the Cast stays (elementwise, so its result
 * is in the packed order too) and the pair kernel reads the bf16 buffer.
 *
 * The same for a bf16 ConvNCHWc (conv_pair_cast): its weight's taps in
 * pairs of input lanes (packed_k = 2), for the pair kernel of
 * codegen/lower/conv_blocked.c.
 *
 * A GEMV on a B computed at run time (splitk_parts): split along K into
 * a batched product of contiguous stretches of B's rows and a ReduceSum,
 * so its parallel chunks each stream their own rows.
 *
 * B computed at run time (run_packable): an f32 MatMul whose kernel would
 * copy B's panels once per row chunk, three times or more, reads B packed
 * once by a Transpose the pass puts before it ([.., K, N/w, w] to
 * [.., N/w, K, w], whole panels only); products reading the same B share
 * it.
 *
 * int8 (quads_packable): on a target with 512-bit VNNI, a MatMulInteger's
 * constant i8 B [K, N] (K a multiple of 4, N of the width) is stored in
 * panels of quads of k, each [K/4, width, 4] (packed_k = 4), which the
 * VNNI kernel (codegen/lower/qgemm.c) reads with one load per 16 lanes
 * instead of interleaving four rows of B at every step.
 *
 * Recurrent ops (rnn_packable): an LSTM, GRU or RNN whose W and R are
 * constants only it reads gets both transposed, [D, I, G H] and
 * [D, H, G H], each matrix in column panels of w gate rows (weights_t =
 * w): the kernel (codegen/lower/rnn.c) then runs both products as
 * register tiles along the gate rows, with no sum split across a
 * vector's lanes, each tile reading one contiguous panel.
 *
 * Nothing for a target without the CPU kernels' layouts
 * (cg_schedule_cpu_layouts: CUDA, whose GPU tiles read B in place).
 */
#include "passes/pass.h"
#include "passes/build.h"
#include "codegen/schedule.h"
#include "ir/ops.h"
#include "ir/ref/nn.h"
#include "ir/ref/rnn.h"
#include "passes/precision.h"

#include <stdlib.h>
#include <string.h>

/* The panel width in which the pass packs n's constant B, or 0: the
 * tile's panels (w), or for GEMV-like products the wider ones of
 * cg_schedule_gemv_cols. */
static int64_t packable(pass_ctx *c, const ir_node *n, const int *uses, int64_t w)
{
    if (n->op != IR_OP_MATMUL && n->op != IR_OP_GEMM)
        return 0;
    if (n->nin < 2 || !n->in[0] || !n->in[1] || ir_attr_int(n, "packed_b", 0) != 0)
        return 0;
    const ir_value *a = n->in[0], *b = n->in[1];
    if (b->kind != IR_VAL_CONST || uses[b->id] != 1 || b->type.dtype != IR_F32 || a->type.dtype != IR_F32 ||
        n->out[0]->type.dtype != IR_F32 || !ir_type_is_static(&b->type) || b->type.rank < 2 || a->type.rank < 2)
        return 0;
    bool gemm = n->op == IR_OP_GEMM, tA = gemm && ir_attr_int(n, "transA", 0), tB = gemm && ir_attr_int(n, "transB", 0);
    if (gemm && (a->type.rank != 2 || b->type.rank != 2))
        return 0;
    if (gemm && n->nin > 2 && n->in[2] && n->in[2]->type.dtype != IR_F32)
        return 0;
    ir_dim m = a->type.dims[a->type.rank - (tA ? 1 : 2)];
    int64_t N = b->type.dims[b->type.rank - (tB ? 2 : 1)].v;
    if (ir_dim_is_const(m) && m.v < CG_GEMV_M)
        w = cg_schedule_gemv_cols(c->target, m.v);
    return N > w ? w : 0;
}

/* The Cast through which n reads a bf16 constant B that the pass packs
 * in pairs of k (packed_k = 2) for the bf16 pair kernel (matmul.c,
 * lower_pairs), or NULL: the target has vdpbf16ps, A is a bf16
 * activation read through its Cast (the bf16 rewrite, passes/precision.c)
 * and B a rank-2 constant with this one reader, K even. Any M: the pair
 * kernel reads its panels in place. */
static ir_node *pair_cast(pass_ctx *c, const ir_node *n, const int *uses)
{
    if ((n->op != IR_OP_MATMUL && n->op != IR_OP_GEMM) || !cg_schedule_bf16_pairs(c->target) || n->nin < 2 ||
        ir_attr_int(n, "packed_b", 0) != 0 || !icc_precision_half_weight(n, 0) || !icc_precision_half_weight(n, 1))
        return NULL;
    bool gemm = n->op == IR_OP_GEMM;
    ir_node *cast = n->in[1]->def;
    const ir_value *a = n->in[0]->def->in[0], *h = cast->in[0];
    if (a->type.dtype != IR_BF16 || h->type.dtype != IR_BF16 || uses[h->id] != 1 || uses[n->in[1]->id] != 1 ||
        !ir_type_is_static(&h->type) || h->type.rank != 2 || n->in[0]->type.rank < 2)
        return NULL;
    if (gemm && (ir_attr_int(n, "transA", 0) || n->in[0]->type.rank != 2 ||
                 (n->nin > 2 && n->in[2] && n->in[2]->type.dtype != IR_F32)))
        return NULL;
    int64_t K = h->type.dims[gemm && ir_attr_int(n, "transB", 0) ? 1 : 0].v;
    return K % 2 == 0 ? cast : NULL;
}

/* For a B that pair_cast packs (its Cast `cast`): the groups of pairs
 * of k (packed_t, nn_packed_index) in which it is stored for the AMX
 * kernel (codegen/lower/matmul.c, lower_amx), or 0 for the plain pair
 * panels. On a target with AMX-BF16, A's rows at least a block of
 * CG_AMX_NB, and K and N multiples of it: panels of CG_AMX_NB columns
 * whose 16 pairs of k a tile step reads are 2 KiB in a row (two tiles of
 * 16 x 64 bytes), where the plain panel's rows are 4 W bytes apart.
 * 1024^3 on one core, a C model of the kernel: 918-944 -> 968-995
 * GFLOP/s; 128 x 768 x 3072 868-874 -> 938-946; 128 x 3072 x 768
 * 869-928 -> 1023-1035. */
static int64_t amx_tiled(pass_ctx *c, const ir_node *n, const ir_node *cast)
{
    const ir_type *a = &n->in[0]->type, *h = &cast->in[0]->type;
    bool tB = n->op == IR_OP_GEMM && ir_attr_int(n, "transB", 0);
    if (!cg_schedule_amx_bf16(c->target) || !ir_type_is_static(a))
        return 0;
    int64_t rows = 1, K = h->dims[tB ? 1 : 0].v, N = h->dims[tB ? 0 : 1].v;
    for (int d = 0; d < a->rank - 1; d++)
        rows *= a->dims[d].v;
    return rows >= CG_AMX_NB && K % CG_AMX_NB == 0 && N % CG_AMX_NB == 0 ? CG_AMX_NB / 2 : 0;
}

/* The Cast through which ConvNCHWc n reads a bf16 constant W that the
 * pass packs in pairs of input lanes (packed_k = 2: each tap's [cb, mb]
 * matrix as [cb/2, mb, 2]) for the pair kernel (conv_blocked.c), or
 * NULL: the target has vdpbf16ps, X is a bf16 activation read through its
 * Cast (the bf16 rewrite rounds it), W a constant read through a Cast of
 * its own, cb even, and no padding along W (the kernel reads X's pairs in
 * place; the layout pass pads explicitly). A constant that several such
 * convolutions read (tied weights; cse merges equal ones) is packed once
 * when every reader qualifies (pass_pack_b counts them). */
static ir_node *conv_pair_cast(pass_ctx *c, const ir_node *n, const int *uses)
{
    if (n->op != IR_OP_CONV_NCHWC || !cg_schedule_bf16_pairs(c->target) || n->nin < 2 ||
        ir_attr_int(n, "packed_k", 1) != 1 || !icc_precision_half_weight(n, 0) || !icc_precision_half_weight(n, 1))
        return NULL;
    ir_node *cast = n->in[1]->def;
    const ir_value *x = n->in[0]->def->in[0], *h = cast->in[0];
    const int64_t *pads;
    int np = ir_attr_ints(n, "pads", &pads);
    if (x->type.dtype != IR_BF16 || h->type.dtype != IR_BF16 || h->kind != IR_VAL_CONST || uses[n->in[1]->id] != 1 ||
        !ir_type_is_static(&h->type) || h->type.rank != 6 || h->type.dims[4].v % 2 || (np == 4 && (pads[1] || pads[3])))
        return NULL;
    return cast;
}

/* Whether the pass packs MatMulInteger n's constant i8 B in quads of k
 * (packed_k = 4) for qgemm.c's VNNI kernel (codegen/lower/qgemm.c): a
 * rank-2 B with this one reader, K a multiple of 4 and N of the panel
 * width w, on a target with 512-bit VNNI. */
static bool quads_packable(pass_ctx *c, const ir_node *n, const int *uses, int64_t w)
{
    if (n->op != IR_OP_MATMUL_INTEGER || n->nin < 2 || !n->in[0] || !n->in[1] || ir_attr_int(n, "packed_b", 0) != 0 ||
        !cg_schedule_int8_packed_quads(c->target))
        return false;
    const ir_value *a = n->in[0], *b = n->in[1];
    if (b->kind != IR_VAL_CONST || uses[b->id] != 1 || b->type.dtype != IR_I8 || b->type.rank != 2 ||
        !ir_type_is_static(&b->type) || a->type.rank < 2 || (a->type.dtype != IR_U8 && a->type.dtype != IR_I8))
        return false;
    int64_t K = b->type.dims[0].v, N = b->type.dims[1].v;
    return K % 4 == 0 && N % w == 0 && N >= w;
}

/* An i8 copy of columns [j0, j0 + nc) of constant B (u8: each value less
 * 128, so b - zb is unchanged with zb less 128 too), or of its per-column
 * zero points (1-D zb), under base's name with suffix. */
static ir_value *i8_columns(pass_ctx *c, const ir_value *b, int64_t j0, int64_t nc, const char *suffix)
{
    bool mat = b->type.rank == 2, u8 = b->type.dtype == IR_U8;
    int64_t rows = mat ? b->type.dims[0].v : 1, N = b->type.dims[b->type.rank - 1].v;
    ir_type t = {.dtype = IR_I8, .rank = b->type.rank};
    if (mat)
        t.dims[0] = ir_dim_const(rows);
    if (t.rank > 0)
        t.dims[t.rank - 1] = ir_dim_const(nc);
    char buf[256];
    ir_value *o = ir_graph_add_const(c->g, ir_graph_fresh_name(c->g, b->name, suffix, buf, sizeof buf), &t, NULL,
                                     c->diag);
    if (!o)
        return NULL;
    const uint8_t *src = b->cval.data;
    int8_t *dst = o->cval.data;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < nc; j++) {
            int v = u8 ? (int)src[r * N + j0 + j] - 128 : (int8_t)src[r * N + j0 + j];
            dst[r * nc + j] = (int8_t)v;
        }
    return o;
}

/* The replaced B and zero point, erased where nothing else reads them (the
 * pass runs after dce: they would stay in the weights). Returns 1. */
static int drop_unused(ir_graph *g, ir_value *b, ir_value *zb)
{
    if (ir_value_count_uses(g, b) == 0)
        ir_value_erase(b);
    if (zb && zb->kind == IR_VAL_CONST && ir_value_count_uses(g, zb) == 0)
        ir_value_erase(zb);
    return 1;
}

/* A MatMulInteger whose constant B the quad kernel cannot take as it is:
 * u8 (vpdpbusd multiplies u8 by i8; b - zb = (b - 128) - (zb - 128), so
 * B and its zero point become i8, exactly), or N not a multiple of the
 * panel width w (quads_packable wants whole panels). Such a product
 * becomes two, the whole panels (packed in quads) and the rest (at least
 * 16 columns, read in place), and a Concat of their results. ddddocr's
 * older captcha model ends in a [32, 1024] x u8 [1024, 8210] product, 5.5
 * of its 21 ms: 1.7 ms as i8 in whole panels. Returns 1 when rewritten. */
static int quads_split(pass_ctx *c, ir_node *n, int64_t w)
{
    if (n->op != IR_OP_MATMUL_INTEGER || n->nin < 2 || !n->in[0] || !n->in[1] || ir_attr_int(n, "packed_b", 0) ||
        !cg_schedule_int8_packed_quads(c->target))
        return 0;
    ir_value *a = n->in[0], *b = n->in[1], *zb = n->nin > 3 ? n->in[3] : NULL;
    if (b->kind != IR_VAL_CONST || (b->type.dtype != IR_U8 && b->type.dtype != IR_I8) || b->type.rank != 2 ||
        !ir_type_is_static(&b->type) || a->type.rank < 2 || (a->type.dtype != IR_U8 && a->type.dtype != IR_I8))
        return 0;
    int64_t K = b->type.dims[0].v, N = b->type.dims[1].v, N1 = N / w * w;
    if (N - N1 && N - N1 < 16)
        N1 -= w;   /* the rest at least a vector of 16 lanes (qgemm_ok) */
    bool u8 = b->type.dtype == IR_U8;
    if (K % 4 || N1 < w || (!u8 && N1 == N))
        return 0;
    /* zb absent, a constant scalar, or per column */
    if (zb && (zb->kind != IR_VAL_CONST || zb->type.dtype != b->type.dtype ||
               !(zb->type.rank == 0 || (zb->type.rank == 1 && zb->type.dims[0].v == N))))
        return 0;
    if (!zb && u8) { /* zero point 0 of a u8 B is -128 of its i8 copy */
        static const uint8_t z = 0;
        ir_type t = {.dtype = IR_U8, .rank = 0};
        char buf[256];
        if (!(zb = ir_graph_add_const(c->g, ir_graph_fresh_name(c->g, b->name, "_zp", buf, sizeof buf), &t, &z,
                                      c->diag)))
            return -1;
    }
    ir_value *in[4] = {a, NULL, n->nin > 2 ? n->in[2] : NULL, NULL};
    ir_value *part[2];
    int np = N1 < N ? 2 : 1;
    for (int i = 0; i < np; i++) {
        int64_t j0 = i ? N1 : 0, nc = i ? N - N1 : N1;
        in[1] = i8_columns(c, b, j0, nc, i ? "_rest" : "_panels");
        in[3] = !zb ? NULL : zb->type.rank == 0 ? i8_columns(c, zb, 0, 1, "_i8") : i8_columns(c, zb, j0, nc, "_i8");
        if (!in[1] || (zb && !in[3]))
            return -1;
        if (np == 1) {   /* only u8 -> i8, in place (with all 4 inputs) */
            if (n->nin < 4) {
                ir_value **all = ir_arena_alloc(c->g->arena, 4 * sizeof *all);
                if (!all)
                    return ir_errorf(c->diag, "out of memory");
                all[0] = a, all[2] = in[2];
                n->in = all;
                n->nin = 4;
            }
            n->in[1] = in[1];
            n->in[3] = in[3];
            return ir_infer_node(n, c->diag) < 0 ? -1 : drop_unused(c->g, b, zb);
        }
        ir_node *m = pb_node(c->g, c->diag, IR_OP_MATMUL_INTEGER, n->out[0]->name, i ? "_rest" : "_panels",
                             zb ? 4 : n->nin > 2 ? 3 : 2, in, NULL);
        if (!m || ir_infer_node(m, c->diag) < 0)
            return -1;
        part[i] = m->out[0];
    }
    /* n becomes the Concat of the two products along the columns */
    n->op = IR_OP_CONCAT;
    n->nin = 2;
    n->in[0] = part[0];
    n->in[1] = part[1];
    return ir_node_set_int(c->g, n, "axis", -1) < 0 || ir_infer_node(n, c->diag) < 0 ? -1 : drop_unused(c->g, b, zb);
}

/* Whether f32 MatMul n's B, computed at run time, is better packed by a
 * kernel of its own before the product: the tile (codegen/lower/tile.c)
 * packs each kc x w piece of B in every row chunk that reads it, so B is
 * copied once per row chunk (cg_schedule_tile_chunks), each copy reading
 * rows N apart. From three row chunks one Transpose to the panel order,
 * a kernel before the product, is cheaper (Zen 4: 1024^3, 8 row chunks,
 * 1 thread 25-26 -> 22-24 ms; 128x768x768, 4, 2 threads 0.84-0.98 ->
 * 0.82-0.88); with two it was a wash (128x768x3072, whose 9 MB B the
 * Transpose reads from memory and writes back). B's type must be
 * static with N a multiple of w (whole panels, which a Transpose can
 * write); A's rows constant and more than CG_SKINNY_M (fewer stream B). */
static bool run_packable(const cg_schedule *s, const ir_node *n, int64_t w)
{
    if (n->op != IR_OP_MATMUL || n->nin != 2 || !n->in[0] || !n->in[1] || ir_attr_int(n, "packed_b", 0) != 0)
        return false;
    const ir_value *a = n->in[0], *b = n->in[1], *y = n->out[0];
    if (b->kind == IR_VAL_CONST || a->type.dtype != IR_F32 || b->type.dtype != IR_F32 || y->type.dtype != IR_F32 ||
        a->type.rank < 2 || b->type.rank < 2 || !ir_type_is_static(&b->type) || !ir_type_is_static(&y->type))
        return false;
    /* a weight stored narrow (--precision: Cast of a bf16/fp16 constant)
     * is no activation: with vdpbf16ps pair_cast packs it at compile time */
    if (b->def && b->def->op == IR_OP_CAST && b->def->in[0] && b->def->in[0]->kind == IR_VAL_CONST)
        return false;
    ir_dim m = a->type.dims[a->type.rank - 2];
    int64_t N = b->type.dims[b->type.rank - 1].v, nbat = 1;
    if (!ir_dim_is_const(m) || m.v <= CG_SKINNY_M || N % w || N <= w)
        return false;
    for (int d = 0; d < y->type.rank - 2; d++)
        nbat *= y->type.dims[d].v;
    int64_t nrc, ncc, nb = (m.v + s->tile_rows - 1) / s->tile_rows, mcb;
    int kc;
    cg_schedule_gemm_apack(s, nb, s->tile_rows, (int)w, 4, true, &kc, &mcb);
    cg_schedule_tile_chunks(s, nbat, nb, N / w, mcb, true, true, s->tile_rows, (int)w, &nrc, &ncc);
    return nrc >= 3;
}

/* A GEMV whose B is computed at run time, f32 [1, K] x [K, N] with B of
 * 1 MB or more: its kernel streams B's rows in one parallel chunk (the
 * skinny schedule; cutting the columns between chunks cuts every row's
 * piece short, 1.4-1.6x slower on one thread), so it runs on one thread.
 * Split into P stretches of K/P contiguous rows (P the most, up to 8,
 * dividing K with K/P >= 128): a batched product [P, 1, K/P] x [P, K/P, N]
 * of views of A and B, whose batch items are parallel chunks, then the
 * node itself becomes the ReduceSum of its P partial rows. 0: no split. */
static int64_t splitk_parts(const ir_node *n)
{
    if (n->op != IR_OP_MATMUL || n->nin != 2 || !n->in[0] || !n->in[1] || n->nout != 1 || n->nattr)
        return 0;
    const ir_value *a = n->in[0], *b = n->in[1];
    const ir_type *ta = &a->type, *tb = &b->type, *ty = &n->out[0]->type;
    if (b->kind == IR_VAL_CONST || ta->dtype != IR_F32 || tb->dtype != IR_F32 || ty->dtype != IR_F32 ||
        ta->rank != 2 || tb->rank != 2 || ty->rank != 2 || !ir_type_is_static(ta) || !ir_type_is_static(tb) ||
        ta->dims[0].v != 1)
        return 0;
    /* a narrow weight (Cast of a bf16/fp16 constant) is no activation */
    if (b->def && b->def->op == IR_OP_CAST && b->def->in[0] && b->def->in[0]->kind == IR_VAL_CONST)
        return 0;
    int64_t K = tb->dims[0].v, N = tb->dims[1].v;
    if (ta->dims[1].v != K || K * N < (INT64_C(1) << 18))
        return 0;
    for (int64_t p = 8; p >= 2; p--)
        if (K % p == 0 && K / p >= 128)
            return p;
    return 0;
}

/* n becomes ReduceSum(MatMul(A as [P, 1, K/P], B as [P, K/P, N]), axes
 * [0], keepdims 0): its output value stays, so its readers do. */
static int split_k(pass_ctx *c, ir_node *n, int64_t P)
{
    ir_graph *g = c->g;
    ir_value *a = n->in[0], *b = n->in[1];
    int64_t K = b->type.dims[0].v, N = b->type.dims[1].v;
    ir_value *a3 = pb_reshape(g, c->diag, a, (int64_t[]){P, 1, K / P}, 3, NULL);
    ir_value *b3 = a3 ? pb_reshape(g, c->diag, b, (int64_t[]){P, K / P, N}, 3, NULL) : NULL;
    ir_node *mm = b3 ? pb_node(g, c->diag, IR_OP_MATMUL, n->out[0]->name, "_splitk", 2, (ir_value *[]){a3, b3},
                               NULL)
                     : NULL;
    if (!mm || ir_infer_node(mm, c->diag) < 0)
        return -1;
    ir_value *axes = pb_i64_const(g, c->diag, n->out[0]->name, "_splitk_axes", (int64_t[]){0}, 1);
    if (!axes)
        return -1;
    n->op = IR_OP_REDUCE_SUM;
    n->in[0] = mm->out[0];
    n->in[1] = axes;
    return ir_node_set_int(g, n, "keepdims", 0) < 0 || ir_infer_node(n, c->diag) < 0 ? -1 : 0;
}

/* B of n in panels of w columns by a Transpose: [.., K, N] as
 * [.., K, N/w, w], to [.., N/w, K, w], read back as [.., K, N] (the
 * Reshapes are views of the buffers); returns the last, or NULL. */
static ir_value *pack_at_run(pass_ctx *c, ir_value *b, int64_t w)
{
    ir_graph *g = c->g;
    int r = b->type.rank;
    int64_t dims[IR_MAX_RANK + 1], perm[IR_MAX_RANK + 1], back[IR_MAX_RANK];
    for (int d = 0; d < r; d++)
        back[d] = dims[d] = b->type.dims[d].v;
    dims[r - 1] = back[r - 1] / w;
    dims[r] = w;
    for (int d = 0; d <= r; d++)
        perm[d] = d;
    perm[r - 2] = r - 1;
    perm[r - 1] = r - 2;
    char n1[256], n2[256], n3[256];
    ir_graph_fresh_name(g, b->name, "_panels", n1, sizeof n1);
    ir_value *p = pb_reshape(g, c->diag, b, dims, r + 1, n1);
    ir_value *t = p ? pb_transpose(g, c->diag, p, perm, r + 1, ir_graph_fresh_name(g, b->name, "_panels_t", n2, sizeof n2))
                    : NULL;
    return t ? pb_reshape(g, c->diag, t, back, r, ir_graph_fresh_name(g, b->name, "_packed", n3, sizeof n3)) : NULL;
}

/* Whether n is a recurrent op whose W and R the pass may transpose. */
static bool rnn_packable(const ir_node *n, const int *uses)
{
    if ((n->op != IR_OP_LSTM && n->op != IR_OP_GRU && n->op != IR_OP_RNN) || n->nin <= IR_RNN_IN_R ||
        ir_attr_int(n, "weights_t", 0) != 0)
        return false;
    for (int i = IR_RNN_IN_W; i <= IR_RNN_IN_R; i++) {
        const ir_value *v = n->in[i];
        if (!v || v->kind != IR_VAL_CONST || uses[v->id] != 1 || v->type.rank != 3 || !ir_type_is_static(&v->type))
            return false;
    }
    return n->in[IR_RNN_IN_W] != n->in[IR_RNN_IN_R];
}

/* A constant [D, c, r] holding each [r, c] matrix of v [D, r, c]
 * transposed, as column panels of w (ir_rnn_panel_at), or NULL on out of
 * memory. */
static ir_value *transpose_panels(pass_ctx *c, const ir_value *v, int64_t w)
{
    ir_type t = v->type;
    int64_t D = t.dims[0].v, r = t.dims[1].v, cols = t.dims[2].v;
    t.dims[1] = v->type.dims[2];
    t.dims[2] = v->type.dims[1];
    char buf[256];
    ir_value *o = ir_graph_add_const(c->g, ir_graph_fresh_name(c->g, v->name, "_t", buf, sizeof buf), &t, NULL, c->diag);
    if (!o)
        return NULL;
    size_t es = ir_dtype_size(t.dtype);
    const unsigned char *src = v->cval.data;
    unsigned char *dst = o->cval.data;
    for (int64_t d = 0; d < D; d++)
        for (int64_t i = 0; i < r; i++)
            for (int64_t k = 0; k < cols; k++)
                memcpy(dst + ir_rnn_panel_at(w, cols, r, d, k, i) * es, src + ((d * r + i) * cols + k) * es, es);
    return o;
}

/* The packed copy of B = b for node n, in panels of w columns, each
 * [K/p, width, p]: groups of p rows side by side (p = 1: the panel
 * row-major; see the file comment), for tg > 0 in the tile order of
 * nn_packed_index, or NULL on out of memory. */
static ir_value *pack(pass_ctx *c, const ir_node *n, const ir_value *b, int64_t w, int64_t p, int64_t tg)
{
    bool tB = n->op == IR_OP_GEMM && ir_attr_int(n, "transB", 0);
    ir_type t = b->type;
    int r = t.rank;
    if (tB) {
        t.dims[r - 2] = b->type.dims[r - 1];
        t.dims[r - 1] = b->type.dims[r - 2];
    }
    int64_t K = t.dims[r - 2].v, N = t.dims[r - 1].v, mats = 1;
    for (int d = 0; d < r - 2; d++)
        mats *= t.dims[d].v;
    char buf[256];
    ir_value *pv = ir_graph_add_const(c->g, ir_graph_fresh_name(c->g, b->name, "_packed", buf, sizeof buf), &t,
                                      NULL, c->diag);
    if (!pv)
        return NULL;
    size_t es = ir_dtype_size(t.dtype);
    const unsigned char *src = b->cval.data;
    unsigned char *dst = pv->cval.data;
    for (int64_t mi = 0; mi < mats; mi++) {
        const unsigned char *s = src + mi * K * N * es;
        unsigned char *o = dst + mi * K * N * es;
        for (int64_t j0 = 0; j0 < N; j0 += w) {
            int64_t wp = N - j0 < w ? N - j0 : w;
            for (int64_t k = 0; k < K; k++)
                for (int64_t j = 0; j < wp; j++)
                    memcpy(o + nn_packed_index(K, j0, wp, p, tg, k, j) * es,
                           s + (tB ? (j0 + j) * K + k : k * N + j0 + j) * es, es);
        }
    }
    return pv;
}

int pass_pack_b(pass_ctx *c)
{
    if (!cg_schedule_cpu_layouts(c->target))
        return 0;
    ir_graph *g = c->g;
    int64_t w = cg_schedule_panel_cols(c->target);
    for (int k = 0, nn0 = g->nnodes; k < nn0; k++) {
        int rc = g->nodes[k]->dead ? 0 : quads_split(c, g->nodes[k], w);
        if (rc < 0)
            return -1;
        if (rc) {
            pass_stat(c, "int8 products split or made i8 for the quads", 1);
            c->changed = true;
        }
    }
    int *uses = calloc((size_t)g->nvalues + 1, sizeof *uses);
    if (!uses)
        return ir_errorf(c->diag, "out of memory");
    ir_graph_count_uses(g, uses);
    int64_t packed = 0, bytes = 0;
    /* bf16 conv weights: how many of each constant's readers qualify,
     * then each constant packed once if all do */
    int *ok = calloc((size_t)g->nvalues + 1, sizeof *ok);
    ir_value **done = calloc((size_t)g->nvalues + 1, sizeof *done);
    if (!ok || !done)
        goto oom;
    for (int k = 0; k < g->nnodes; k++) {
        ir_node *cc = g->nodes[k]->dead ? NULL : conv_pair_cast(c, g->nodes[k], uses);
        if (cc)
            ok[cc->in[0]->id]++;
    }
    cg_schedule sch;
    if (cg_schedule_init(&sch, c->target, c->diag) < 0)
        goto fail;
    int nv = g->nvalues, nn = g->nnodes;
    for (int k = 0; k < nn; k++) {
        ir_node *n = g->nodes[k];
        int64_t parts = n->dead ? 0 : splitk_parts(n);
        if (parts) {
            if (split_k(c, n, parts) < 0)
                goto fail;
            pass_stat(c, "GEMVs on a run-time B split along K", 1);
            c->changed = true;
            continue;
        }
        if (!n->dead && run_packable(&sch, n, w)) {
            /* one Transpose for all the products that read B */
            ir_value *b = n->in[1], *p = done[b->id] ? done[b->id] : pack_at_run(c, b, w);
            if (!p || ir_node_set_int(g, n, "packed_b", w) < 0)
                goto fail;
            if (!done[b->id])
                pass_stat(c, "activations packed at run time", 1);
            done[b->id] = p;
            n->in[1] = p;
            c->changed = true;
            continue;
        }
        if (!n->dead && rnn_packable(n, uses)) {
            /* panels of the tile's width, or one of all the gate rows */
            int64_t GH = n->in[IR_RNN_IN_W]->type.dims[1].v, rw = GH < w ? GH : w;
            for (int i = IR_RNN_IN_W; i <= IR_RNN_IN_R; i++) {
                ir_value *b = n->in[i], *p = transpose_panels(c, b, rw);
                if (!p)
                    goto oom;
                n->in[i] = p;
                packed++;
                bytes += (int64_t)b->cval.nbytes;
                ir_value_erase(b);
            }
            if (ir_node_set_int(g, n, "weights_t", rw) < 0)
                goto oom;
            pass_stat(c, "recurrent weights transposed", 1);
            continue;
        }
        ir_node *cc = n->dead ? NULL : conv_pair_cast(c, n, uses);
        if (cc && cc->in[0]->id < nv && (done[cc->in[0]->id] || ok[cc->in[0]->id] == uses[cc->in[0]->id])) {
            /* one panel of the tap's mb lanes: [cb/2, mb, 2] */
            ir_value *b = cc->in[0], *p = done[b->id] ? done[b->id] : pack(c, n, b, b->type.dims[5].v, 2, 0);
            if (!p || ir_node_set_int(g, n, "packed_k", 2) < 0)
                goto oom;
            cc->in[0] = p;
            pass_stat(c, "bf16 conv weights packed in pairs", 1);
            if (!done[b->id]) {
                done[b->id] = p;
                packed++;
                bytes += (int64_t)b->cval.nbytes;
            }
            if (--ok[b->id] == 0) /* its last reader */
                ir_value_erase(b);
            continue;
        }
        ir_node *cast = n->dead ? NULL : pair_cast(c, n, uses);
        bool quads = !n->dead && !cast && quads_packable(c, n, uses, w);
        int64_t pw = cast || quads ? w : n->dead ? 0 : packable(c, n, uses, w);
        if (!pw)
            continue;
        /* a pair-packed B stays behind its Cast (elementwise: the Cast's
         * result is in the packed order too) */
        int64_t pk = cast ? 2 : quads ? 4 : 1, pt = cast ? amx_tiled(c, n, cast) : 0;
        if (pt)
            pw = CG_AMX_NB;
        ir_value *b = cast ? cast->in[0] : n->in[1], *p = pack(c, n, b, pw, pk, pt);
        if (!p || ir_node_set_int(g, n, "packed_b", pw) < 0 || (pk > 1 && ir_node_set_int(g, n, "packed_k", pk) < 0) ||
            (pt && ir_node_set_int(g, n, "packed_t", pt) < 0))
            goto oom;
        for (int i = 0; i < n->nattr; i++)
            if (!strcmp(n->attrs[i].name, "transB"))
                n->attrs[i].i = 0;
        if (cast) {
            cast->in[0] = p;
            cast->out[0]->type.dims[0] = p->type.dims[0];
            cast->out[0]->type.dims[1] = p->type.dims[1];
            pass_stat(c, "bf16 weights packed in pairs", 1);
        } else {
            if (quads)
                pass_stat(c, "int8 weights packed in quads", 1);
            n->in[1] = p;
        }
        ir_value_erase(b);
        packed++;
        bytes += (int64_t)b->cval.nbytes;
    }
    free(uses);
    free(ok);
    free(done);
    if (packed)
        c->changed = true;
    pass_stat(c, "weights packed", packed);
    pass_stat(c, "bytes packed", bytes);
    return pass_commit_rewrites(c);
oom:
    ir_errorf(c->diag, "out of memory");
fail:
    free(uses);
    free(ok);
    free(done);
    return -1;
}
