/* gpu_tile.h - the GPU schedule of a contraction, shared by MatMul, Gemm
 * (matmul.c) and Conv as an implicit GEMM (conv.c), for the CUDA target.
 *
 * out(bat, row, col) = sum_k A(bat, row, k) * B(bat, k, col) over the
 * kernel IR's GPU loops (docs/kernel-ir.md, "GPU loops"): one thread
 * block per bm x bn output tile of one batch item (a grid loop over
 * batch x tiles), CG_GPU_SIDE^2 threads, each holding tm x tm
 * accumulators in thread scratch (registers, since unrolled loops make
 * their indices constants): rows ty + 16 i and columns tx + 16 j of the
 * tile (tx = t % 16, ty = t / 16), so that a warp's reads of the B tile
 * and its stores are consecutive. Per CG_GPU_BK values of k the block
 * copies A's bm x CG_GPU_BK and B's CG_GPU_BK x bn pieces into shared
 * memory (block scratch, k-major; tm elements of each per thread, A's with
 * k fastest, B's with col fastest, so each is read along its contiguous
 * dim when A is [row, k] and B [k, col] in memory), waits (a barrier),
 * runs the tm x tm x CG_GPU_BK products from shared memory, and waits
 * again before the next copy. Rows and columns past the edges are clamped
 * (computed, not stored); k past K reads zero. bm = bn = 16 tm.
 */
#ifndef ICC_CG_LOWER_GPU_TILE_H
#define ICC_CG_LOWER_GPU_TILE_H

#include "codegen/lower/internal.h"

enum { CG_GPU_SIDE = 16, CG_GPU_BK = 16 };

typedef struct cg_gpu_tile cg_gpu_tile;
struct cg_gpu_tile {
    int64_t nbat, m, n, k;     /* batch items, rows, columns, reduction (all constant, >= 1) */
    ir_dtype half;             /* IR_F16 / IR_BF16: an operand is stored in it, and the schedule
                                  has mma (cg_schedule.gpu_mma): the tensor-core form below;
                                  IR_UNDEF otherwise */
    void *u;                   /* the caller's state */
    /* A at (row, k) and B at (k, col) of batch item bat, in c->cdt; row,
     * col and k are in range (clamped). */
    kir_expr *(*a)(lctx *c, const cg_gpu_tile *t, kir_expr *bat, kir_expr *row, kir_expr *k);
    kir_expr *(*b)(lctx *c, const cg_gpu_tile *t, kir_expr *bat, kir_expr *k, kir_expr *col);
    /* Appends to blk the store of the finished sum v at (row, col), which
     * are in range. 0, or -1 on out of memory. */
    int (*store)(lctx *c, const cg_gpu_tile *t, kir_block *blk, kir_expr *bat, kir_expr *row, kir_expr *col,
                 kir_expr *v);
};

/* The accumulators per thread side (tm) for such a product on schedule s:
 * 4 (64 x 64 tiles) when they make at least 128 blocks (one per SM of an
 * H100), else 2 (32 x 32). */
int cg_gpu_tile_size(int64_t nbat, int64_t m, int64_t n);

/* Appends the schedule to c->k's (empty) body. 0, or -1 on out of memory.
 * With t->half set, the tensor-core form instead (tm unused): 64 x 64
 * tiles, 8 warps each computing a 16 x 32 piece as four mma_sync products
 * per 16 values of k (kir_intrinsics.def) into 16 f32 accumulators per
 * lane; the block copies 32 values of k per step, both operands rounded
 * to t->half in shared memory (A [row][k], B transposed [col][k], rows of
 * 40 halves: 32-bit fragment loads in distinct banks). An f32 operand is
 * rounded too: the tensor cores take both in one precision. */
int cg_gpu_tile_lower(lctx *c, const cg_gpu_tile *t, int tm);

/* The half dtype of a contraction whose operand buffers are dtypes a and
 * b, on schedule s: IR_F16 / IR_BF16 when either is (and the other is it
 * or f32) and s has mma; else IR_UNDEF. */
ir_dtype cg_gpu_tile_half(const cg_schedule *s, ir_dtype a, ir_dtype b);

#endif
