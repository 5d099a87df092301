/* kir_math.h - f32 exp, log, tanh, erf and erfc as kernel-IR arithmetic: a
 * building block that a schedule or backend picks (the LLVM backend does,
 * because libm calls block its loop vectoriser; a CUDA backend keeps the
 * device's own expf/logf and leaves kernels as they are).
 *
 * The expansions are branch-free: FMAs (MULADD), selects, integer shifts
 * and bit reinterpretation (BITCAST), so they vectorise like an Add. They
 * are accurate to about 2 ulp over the whole range and follow libm at the
 * edges: NaN propagates, exp saturates to 0 and inf, log gives -inf at 0
 * and NaN below, tanh and erf reach +-1 and keep the sign of zero.
 */
#ifndef ICC_CG_KIR_MATH_H
#define ICC_CG_KIR_MATH_H

#include "codegen/kir.h"

/* Each builds the expansion of its f32 operand in k (NULL on out of
 * memory; NULL operands give NULL). */
kir_expr *kir_math_exp_f32(kir_kernel *k, kir_expr *x);
kir_expr *kir_math_log_f32(kir_kernel *k, kir_expr *x);
kir_expr *kir_math_tanh_f32(kir_kernel *k, kir_expr *x);
kir_expr *kir_math_erf_f32(kir_kernel *k, kir_expr *x);
kir_expr *kir_math_erfc_f32(kir_kernel *k, kir_expr *x);

/* e^x for x <= 0 or NaN (a softmax's x - max), bit for bit what the EXP
 * expansion gives there, for 6 fewer operations: no upper clamp, and 2^n
 * in 4 operations instead of 9. Positive x gives garbage. */
kir_expr *kir_math_exp_nonpos_f32(kir_kernel *k, kir_expr *x);

/* Gelu, x Phi(x) (Phi the normal distribution), on f32 as 0.5 x
 * erfc(-x / sqrt 2) within a few ulp, but with its x < 0 tail under
 * 2^-126 (x < -13.4) flushed to -0: the subnormals there would make
 * every operation that reads them a microcode assist on x86, here and in
 * the kernels that read the result (the reference keeps them: at most
 * 2^-126 apart; ONNX Runtime's erf form gives 0 from x < -5.7). */
kir_expr *kir_math_gelu_f32(kir_kernel *k, kir_expr *x);

/* Gelu, x Phi(x) (Phi the normal distribution), within a relative 1e-5
 * (3.9e-6 measured; up to 6e-6 from rounding x^2 in the far tail) where
 * its result is rounded to bf16 next: 1/390 of a bf16 ulp, for 31
 * operations a vector against 41 for 0.5 x erfc(-x / sqrt 2) in f32. NaN
 * propagates, +-inf give +inf and NaN as there. */
kir_expr *kir_math_gelu_bf16(kir_kernel *k, kir_expr *x);

/* Replaces, in place, every EXP, LOG, TANH, ERF, ERFC and GELU of k on f32, f16 or
 * bf16 by its expansion (narrow floats widened to f32 and rounded back
 * once, as the reference computes them). Returns 0, or -1 on out of
 * memory (k is then only partly rewritten, but still valid). */
int kir_expand_math(kir_kernel *k);

#endif
