/* emit.h - kernel IR to LLVM IR (the CPU backend's code generator).
 *
 * Usage:
 *
 *     LLVMModuleRef m = LLVMModuleCreateWithNameInContext("model", cx);
 *     cg_target_setup_module(t, m);
 *     LLVMValueRef fn;
 *     if (cg_llvm_emit_kernel(t, m, k, &fn, &d) < 0)
 *         ...;
 *     ... more kernels, then cg_optimize / cg_emit_object (target.h) ...
 *
 * Each kernel becomes one external function named after it (kir.h, the
 * compiled form):
 *     void NAME(void *const *bufs, const int64_t *syms, int64_t begin, int64_t end)
 * Loops are plain counted loops; a PARALLEL loop at the kernel's top level
 * runs only its iterations in [begin, end). VECTOR and UNROLL loops carry
 * llvm.loop hints; accesses to distinct buffers are declared not to alias
 * (scoped noalias metadata), so vectorised loops need no runtime overlap
 * checks. See docs/codegen.md.
 */
#ifndef ICC_CG_LLVM_EMIT_H
#define ICC_CG_LLVM_EMIT_H

#include <llvm-c/Core.h>

#include "codegen/kir.h"
#include "codegen/llvm/target.h"

/* Adds to m (already set up for t) a function for kernel k, tuned for t
 * (cg_target_tune_function). Verifies k first (kir_verify), then rewrites
 * its f32/f16/bf16 exp, log, tanh and erf in place into the polynomial
 * expansions of kir_math.h, the building block this backend picks (libm
 * calls would block vectorisation). Returns 0 and the function (owned by
 * m) in *fn, or -1 with a message in d; on failure m is left without the
 * function. A function of that name already in m is an error. */
int cg_llvm_emit_kernel(const cg_target *t, LLVMModuleRef m, kir_kernel *k, LLVMValueRef *fn, icc_diag *d);

#endif
