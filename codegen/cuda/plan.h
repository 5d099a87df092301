/* plan.h - a compiled program's device plan (runtime/cuda_plan.h), which
 * a CUDA model library embeds and the runtime runs. */
#ifndef ICC_CG_CUDA_PLAN_H
#define ICC_CG_CUDA_PLAN_H

#include "codegen/program.h"

/* The plan of p, whose kernels NVRTC compiled for sm_<sm> into cubin
 * and ptx (ptx_bytes counting its NUL): a malloc'd blob into *out (the
 * caller frees it), its size into *out_bytes. -1 with d set, in one line,
 * for what the plan cannot say yet (symbolic dims, --profile, external
 * weights) or out of memory. */
int cg_cuda_plan_build(const cg_program *p, int sm, const void *cubin, size_t cubin_bytes, const char *ptx,
                       size_t ptx_bytes, unsigned char **out, size_t *out_bytes, icc_diag *d);

#endif
