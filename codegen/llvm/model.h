/* model.h - the LLVM backend's program assembly: a backend-neutral
 * program (codegen/program.h) to one LLVM module holding the model's
 * kernels, its `run` entry, its weights in .rodata and its descriptor
 * (the ABI of include/icc/runtime.h), ready for cg_optimize /
 * cg_emit_object. The driver reaches this through the backend table
 * (codegen/backend.h, cg_llvm_backend); tests call it directly.
 */
#ifndef ICC_CG_LLVM_MODEL_H
#define ICC_CG_LLVM_MODEL_H

#include <llvm-c/Core.h>

#include "codegen/llvm/target.h"
#include "codegen/program.h"

/* Assembles p for t into a new module (the caller disposes it); t is only
 * read, p's kernels get their math expanded (cg_llvm_emit_kernel). Errors
 * name the kernel's node. */
int cg_llvm_assemble(const cg_target *t, cg_program *p, LLVMModuleRef *out, icc_diag *d);

/* The host side of a model whose kernels run elsewhere (the CUDA
 * backend): a module with p's descriptor and weights and the device plan
 * (plan_bytes bytes, copied into .rodata; icc_model_desc.cuda), and no
 * run or init function. */
int cg_llvm_assemble_host(const cg_target *t, cg_program *p, const void *plan, size_t plan_bytes,
                          LLVMModuleRef *out, icc_diag *d);

/* Builds the program of g (cg_program_build under t's schedule) and
 * assembles it: g must be fully optimized and planned (the plan pass
 * last: every intermediate needs an arena offset), with its symbolic
 * dims bound by inputs. prefix names the exported descriptor
 * `<prefix>_model` and prefixes every other symbol. The caller disposes
 * *out. */
int cg_compile_model(const ir_graph *g, const cg_target *t, const char *prefix, LLVMModuleRef *out,
                     icc_diag *d);

/* cg_compile_model with the weights external: the descriptor's weights
 * pointer is NULL (the runtime maps `<model less .so>.weights`, checksum
 * verified) and the blob is returned in *weights (malloc'd, the caller
 * writes and frees it) with its size. */
int cg_compile_model_ext(const ir_graph *g, const cg_target *t, const char *prefix, void **weights,
                         int64_t *weights_bytes, LLVMModuleRef *out, icc_diag *d);

#endif
