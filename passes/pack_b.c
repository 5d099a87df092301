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
 * f32 Gemm (C f32 or absent); M symbolic or more than CG_SKINNY_M rows
 * (skinny products stream B row after row instead, and read it once per
 * call anyway); N > w (with one panel the order is B's own). Runs after
 * precision (bf16/fp16 weights are Casts, not constants, then) and before
 * fuse and plan.
 */
#include "passes/pass.h"
#include "codegen/schedule.h"
#include "ir/ops.h"

#include <stdlib.h>
#include <string.h>

/* Whether n's B is a constant the pass packs in panels of w columns. */
static bool packable(const ir_node *n, const int *uses, int64_t w)
{
    if (n->op != IR_OP_MATMUL && n->op != IR_OP_GEMM)
        return false;
    if (n->nin < 2 || !n->in[0] || !n->in[1] || ir_attr_int(n, "packed_b", 0) != 0)
        return false;
    const ir_value *a = n->in[0], *b = n->in[1];
    if (b->kind != IR_VAL_CONST || uses[b->id] != 1 || b->type.dtype != IR_F32 || a->type.dtype != IR_F32 ||
        n->out[0]->type.dtype != IR_F32 || !ir_type_is_static(&b->type) || b->type.rank < 2 || a->type.rank < 2)
        return false;
    bool gemm = n->op == IR_OP_GEMM, tA = gemm && ir_attr_int(n, "transA", 0), tB = gemm && ir_attr_int(n, "transB", 0);
    if (gemm && (a->type.rank != 2 || b->type.rank != 2))
        return false;
    if (gemm && n->nin > 2 && n->in[2] && n->in[2]->type.dtype != IR_F32)
        return false;
    ir_dim m = a->type.dims[a->type.rank - (tA ? 1 : 2)];
    int64_t N = b->type.dims[b->type.rank - (tB ? 2 : 1)].v;
    if (ir_dim_is_const(m) && m.v <= CG_SKINNY_M)
        return false;
    return N > w;
}

/* The packed copy of n's B (see the file comment), or NULL on out of memory. */
static ir_value *pack(pass_ctx *c, const ir_node *n, int64_t w)
{
    const ir_value *b = n->in[1];
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
    ir_value *p = ir_graph_add_const(c->g, ir_graph_fresh_name(c->g, b->name, "_packed", buf, sizeof buf), &t,
                                     NULL, c->diag);
    if (!p)
        return NULL;
    const float *src = b->cval.data;
    float *dst = p->cval.data;
    for (int64_t mi = 0; mi < mats; mi++) {
        const float *s = src + mi * K * N;
        float *o = dst + mi * K * N;
        for (int64_t j0 = 0; j0 < N; j0 += w) {
            int64_t wp = N - j0 < w ? N - j0 : w;
            for (int64_t k = 0; k < K; k++)
                for (int64_t j = 0; j < wp; j++)
                    o[j0 * K + k * wp + j] = tB ? s[(j0 + j) * K + k] : s[k * N + j0 + j];
        }
    }
    return p;
}

int pass_pack_b(pass_ctx *c)
{
    ir_graph *g = c->g;
    int64_t w = cg_schedule_panel_cols(c->target);
    int *uses = calloc((size_t)g->nvalues + 1, sizeof *uses);
    if (!uses)
        return ir_errorf(c->diag, "out of memory");
    ir_graph_count_uses(g, uses);
    int64_t packed = 0, bytes = 0;
    for (int k = 0; k < g->nnodes; k++) {
        ir_node *n = g->nodes[k];
        if (n->dead || !packable(n, uses, w))
            continue;
        ir_value *b = n->in[1], *p = pack(c, n, w);
        if (!p || ir_node_set_int(g, n, "packed_b", w) < 0) {
            free(uses);
            return ir_errorf(c->diag, "out of memory");
        }
        for (int i = 0; i < n->nattr; i++)
            if (!strcmp(n->attrs[i].name, "transB"))
                n->attrs[i].i = 0;
        n->in[1] = p;
        ir_value_erase(b);
        packed++;
        bytes += (int64_t)b->cval.nbytes;
    }
    free(uses);
    if (packed) {
        ir_graph_compact(g);
        c->changed = true;
    }
    pass_stat(c, "weights packed", packed);
    pass_stat(c, "bytes packed", bytes);
    return 0;
}
