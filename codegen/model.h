/* model.h - a whole graph to one LLVM module: the model's kernels, its
 * `run` entry, its weights in .rodata and its descriptor (the ABI of
 * include/icc/runtime.h), ready for cg_optimize / cg_emit_object.
 */
#ifndef ICC_CG_MODEL_H
#define ICC_CG_MODEL_H

#include <llvm-c/Core.h>

#include "codegen/llvm/target.h"

/* Compiles g into a new module (the caller disposes it). g must be fully
 * optimized and planned (the plan pass last: every intermediate needs an
 * arena offset), with static shapes. prefix names the exported
 * descriptor `<prefix>_model` and prefixes every other symbol. Errors
 * name what is missing: all nodes that cannot be compiled yet, in one
 * message; a symbolic dim to pin with --shape; an unplanned value. */
int cg_compile_model(const ir_graph *g, const cg_target *t, const char *prefix, LLVMModuleRef *out,
                     icc_diag *d);

/* cg_compile_model with the weights external: the descriptor's weights
 * pointer is NULL (the runtime maps `<model less .so>.weights`, checksum
 * verified) and the blob is returned in *weights (malloc'd, the caller
 * writes and frees it) with its size. */
int cg_compile_model_ext(const ir_graph *g, const cg_target *t, const char *prefix, void **weights,
                         int64_t *weights_bytes, LLVMModuleRef *out, icc_diag *d);

/* The kernels of g as text (--emit=kernels), malloc'd; NULL with d set. */
char *cg_kernels_text(const ir_graph *g, const cg_target *t, const char *prefix, icc_diag *d);

#endif
