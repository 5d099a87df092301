/* emit_math.h - integer powers, which the LLVM backend emits as a loop
 * (the f32 exp/log/tanh/erf polynomials are target-neutral kernel IR:
 * codegen/kir_math.h).
 */
#ifndef ICC_CG_LLVM_EMIT_MATH_H
#define ICC_CG_LLVM_EMIT_MATH_H

#include <stdbool.h>

#include <llvm-c/Core.h>

/* x ** y on integers of one type, wrapping like repeated multiplication
 * (a loop over y's bits: it adds basic blocks and leaves the builder in
 * the last). Signed: a negative y gives 0 unless x is 1 or -1 (the
 * reference's truncated 1/x**-y); unsigned: y is taken as unsigned. */
LLVMValueRef cg_math_ipow(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef y, bool is_signed);

#endif
