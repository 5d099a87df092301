/* cuda_emu.h - the CUDA backend's kernels run on the CPU, for the
 * conformance runner's --cuda-emu mode: a graph is built into a program
 * under the CUDA target's schedule, its kernels are emitted as CUDA C
 * (codegen/cuda/emit.c), compiled as C++ with tests/cuda/emu.h in front
 * (a launch of T threads = the kernel called for thread 0..T-1), and the
 * program's steps are run here over host memory, as the CUDA runtime will
 * run them over device memory. The node tests' expected outputs are the
 * oracle: what the CUDA C computes is checked without a GPU. */
#ifndef ICC_TESTS_CUDA_EMU_H
#define ICC_TESTS_CUDA_EMU_H

#include <stdbool.h>

#include "icc/runtime.h"
#include "ir/ir.h"

typedef struct cuda_emu cuda_emu;

/* Builds g (optimized and planned for the CUDA target) into an emulated
 * model. 0; 1 (skip: why says what is not emulated: a dynamic program, a
 * kernel the emitter refuses, an op not compiled yet); -1 on failure. */
int cuda_emu_build(const ir_graph *g, cuda_emu **out, char *why, size_t whylen);

/* Runs it: in[] the graph's inputs, out[] its outputs (allocated by the
 * caller from the static output types). 0, or -1 with d set (a kernel's
 * run-time error reads as the compiled model's would). */
int cuda_emu_run(cuda_emu *m, const ir_tensor *in, ir_tensor *out, icc_diag *d);

void cuda_emu_free(cuda_emu *m);

/* The conformance runner's --cuda-so mode: g compiled by the CUDA
 * backend into a model library (NVRTC's cubin and PTX, the device plan,
 * the runtime linked in), its CUDA C built as C++ for the stand-in driver
 * (tests/cuda/fake_driver.c, which the runtime opens as its libcuda
 * through ICC_CUDA_DRIVER), and the library loaded through the runtime:
 * *m and *ctx for icc_run, the caller closes them. 0; 1 (skip, with why:
 * an op not compiled yet, what the plan cannot say yet, a build without
 * NVRTC); -1 on failure. keep (--cuda-pack, for tests/gpu/run.sh): the
 * library is written to that path and neither emulated nor loaded (*m and
 * *ctx stay NULL). */
int cuda_so_build(const ir_graph *g, const char *keep, icc_model **m, icc_context **ctx, char *why, size_t whylen);

#endif
