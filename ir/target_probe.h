/* target_probe.h - measured facts of the host CPU that its feature flags
 * do not tell: how fast an instruction runs, not whether it exists.
 *
 * Usage:
 *
 *     double r = icc_target_probe_bf16_dot_rate();   // 0.5: vdpbf16ps does half the FMA's work a second
 *
 * The loops are also `icc bench --peak`'s (tools/bench.c), which runs
 * them for a second; the probe runs them for about a millisecond, when a
 * native target is described (codegen/llvm/target.c).
 */
#ifndef ICC_IR_TARGET_PROBE_H
#define ICC_IR_TARGET_PROBE_H

#include <stdint.h>

/* 16 independent chains of iters AVX-512 FMAs (16 f32 lanes: 32 FLOP an
 * instruction) / vdpbf16ps (16 lanes x 2 bf16 pairs: 64 FLOP). The
 * result only keeps the work; the caller must check the CPU has the
 * instructions (AVX512F; AVX512-BF16). 0 on other architectures. */
double icc_probe_fma_avx512(int64_t iters);
double icc_probe_bf16_avx512(int64_t iters);

/* The host's vdpbf16ps multiply-adds a second over its AVX-512 FMAs'
 * (f32 multiply-adds of both, counted as vdpbf16ps's two products a
 * lane and the FMA's one), measured once per process in short alternated
 * runs (the best of each). 0 when the host lacks AVX512F or AVX512-BF16.
 * About 0.5 on Intel cores (one vdpbf16ps every two cycles against two
 * FMAs a cycle), about 2 on AMD Zen 4 (whose FMA issues 512 bits as two
 * halves). */
double icc_target_probe_bf16_dot_rate(void);

#endif
