/* emit.h - the kernel IR as CUDA C (docs/backends.md, "The CUDA backend").
 *
 * Every kernel becomes one `extern "C" __global__` function in a single
 * translation unit that starts with the prelude (codegen/cuda/prelude.cuh):
 *
 *     NAME(T0 *b0, const T1 *b1, ..., const icc_i64 *syms, icc_i64 begin, icc_i64 end)
 *
 * one pointer per buffer that is not thread or block scratch, in buffer
 * order (kernel-scope scratch and the status word included), then the
 * symbol table (syms[s] is graph symbol s, as for the CPU) and the
 * parallel range. The kernel's outermost PARALLEL loop becomes a
 * grid-stride loop over [max(lo, begin), min(hi, end)): each GPU thread
 * runs whole iterations of it, which the CPU schedules already make
 * independent, and the kernel's other top-level statements, as each CPU
 * chunk does. A kernel without one runs on thread 0 of the launch.
 * A GPU schedule's grid loop strides over the launch's blocks, its thread
 * loops over the block's threads (the launch's block is their trip count,
 * cg_cuda_block_threads), block scratch is __shared__ and barrier(block)
 * __syncthreads. Thread scratch is a local array (registers when unrolled
 * loops make its indices constants: UNROLL loops get #pragma unroll);
 * f16/bf16 are stored as their bits (icc_u16), bool as one byte.
 *
 * Not emitted yet, refused in one line naming the kernel: block and warp
 * loops, warp barriers, and the intrinsics other than pmaddwd (scalar
 * loops). */
#ifndef ICC_CG_CUDA_EMIT_H
#define ICC_CG_CUDA_EMIT_H

#include "codegen/kir.h"

/* The prelude's text (generated from prelude.cuh by the build). */
extern const char cg_cuda_prelude[];

/* Appends kernel k's CUDA C to the malloc'd string *src of length *len
 * (both updated; *src may start NULL). 0, or -1 with d set. */
int cg_cuda_emit_kernel(const kir_kernel *k, char **src, size_t *len, icc_diag *d);

/* A GPU-scheduled kernel's (a top-level grid loop's) threads per block:
 * the largest constant trip count of a thread loop directly inside a grid
 * loop; 0 for other kernels. trips (may be NULL): the grid loop's trip
 * count, -1 when it is not constant, 0 without one. */
int64_t cg_cuda_block_threads(const kir_kernel *k, int64_t *trips);

#endif
