/* emit_math.h - math functions the LLVM backend emits inline instead of
 * calling libm: f32 exp, log, tanh and erf as branch-free polynomial code
 * (the loop vectoriser can widen them; a libm call blocks it), and
 * integer powers.
 *
 * Each takes the builder positioned where the code goes; x may be a
 * scalar or a vector (constants are splatted to its type). The f32
 * functions are accurate to about 2 ulp over the whole range and follow
 * libm at the edges: NaN propagates, exp saturates to 0 and inf, log
 * gives -inf at 0 and NaN below, tanh and erf reach +-1 and keep the sign
 * of zero. Intrinsic declarations are added to the builder's module as
 * needed.
 */
#ifndef ICC_CG_LLVM_EMIT_MATH_H
#define ICC_CG_LLVM_EMIT_MATH_H

#include <stdbool.h>

#include <llvm-c/Core.h>

LLVMValueRef cg_math_exp_f32(LLVMBuilderRef b, LLVMValueRef x);
LLVMValueRef cg_math_log_f32(LLVMBuilderRef b, LLVMValueRef x);
LLVMValueRef cg_math_tanh_f32(LLVMBuilderRef b, LLVMValueRef x);
LLVMValueRef cg_math_erf_f32(LLVMBuilderRef b, LLVMValueRef x);

/* x ** y on integers of one type, wrapping like repeated multiplication
 * (a loop over y's bits: it adds basic blocks and leaves the builder in
 * the last). Signed: a negative y gives 0 unless x is 1 or -1 (the
 * reference's truncated 1/x**-y); unsigned: y is taken as unsigned. */
LLVMValueRef cg_math_ipow(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef y, bool is_signed);

#endif
