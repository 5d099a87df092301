/* target.h - the LLVM target under the CPU backend: which machine code is
 * generated for, how a module is optimised, emitted and linked.
 *
 * Usage (the kernel lowering builds `m` with the LLVM C API):
 *
 *     cg_target *t;
 *     if (cg_target_create(NULL, NULL, NULL, 2, &t, &d) < 0)   // the host, -O2
 *         return -1;
 *     LLVMModuleRef m = LLVMModuleCreateWithName("model");
 *     cg_target_setup_module(t, m);
 *     ... build functions; cg_target_tune_function(t, fn) on each kernel ...
 *     if (cg_optimize(t, m, &d) < 0 || cg_emit_object(t, m, "model.o", &d) < 0)
 *         ...;
 *     const char *objs[] = {"model.o"}, *libs[] = {"libiccrt.a", "-lm"};
 *     cg_link_shared(objs, 1, libs, 2, "model.so", &d);
 *     LLVMDisposeModule(m);
 *     cg_target_destroy(t);
 *
 * Only the x86-64 and AArch64 back ends are initialised. A target is
 * immutable after creation; one target may serve several modules, but
 * LLVM modules and contexts are not thread-safe, so concurrent use needs
 * one module (and LLVM context) per thread.
 *
 * Errors: functions returning int give 0 on success and -1 with a one-line
 * message in `d` on failure.
 */
#ifndef ICC_CG_LLVM_TARGET_H
#define ICC_CG_LLVM_TARGET_H

#include <stdbool.h>

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "ir/ir.h"
#include "ir/target.h"

typedef struct cg_target cg_target;

/* Creates a target. NULL triple/cpu/features select the host (default
 * triple, host CPU name, host CPU features); cpu "native" also means the
 * host CPU and its features. A non-host triple with a NULL cpu gets
 * "generic". features is LLVM's "+avx2,-fma" form. opt_level is 0..3 and
 * drives both the IR pipeline and the code generator. An unsupported
 * triple, an unknown CPU or an unknown feature is an error. The caller
 * owns *out and frees it with cg_target_destroy. */
int cg_target_create(const char *triple, const char *cpu, const char *features, int opt_level,
                     cg_target **out, icc_diag *d);
void cg_target_destroy(cg_target *t);
/* A target like t with a target machine of its own, for another thread
 * (a target machine caches per-function subtargets, so two threads must
 * not optimise or generate code through the same one). The caller owns
 * *out (cg_target_destroy). */
int cg_target_thread_copy(const cg_target *t, cg_target **out, icc_diag *d);

/* Borrowed strings valid while t lives. */
const char *cg_target_triple(const cg_target *t);   /* normalised, "x86_64-pc-linux-gnu" */
const char *cg_target_cpu(const cg_target *t);
const char *cg_target_features(const cg_target *t); /* as given to LLVM, may be "" */
/* The features generated code may rely on, without '+', comma-separated
 * ("avx,avx2,fma,..."; "" when none beyond the architecture's baseline):
 * what the model descriptor records so the runtime checks them at load.
 * Only features that change code generation are listed. They come from
 * the explicit feature string plus those implied by cpu when it is an
 * x86-64 level (x86-64-v2/v3/v4); for other named CPUs without a feature
 * string the implied features are unknown to the C API, so the list is a
 * lower bound (pass features explicitly, or the host, to be exact). */
const char *cg_target_required_features(const cg_target *t);
/* The natural vector width in bits: 512 with avx512f, 256 with avx, else
 * 128 (SSE, NEON). */
int cg_target_vector_bits(const cg_target *t);
int cg_target_opt_level(const cg_target *t);
/* The backend-neutral description of t (ir/target.h) that passes and
 * schedules receive; borrowed, valid while t lives. For the host
 * ("native") it also records the core count and cache sizes. */
const icc_target_desc *cg_target_desc(const cg_target *t);
/* True when code is generated for the machine running the compiler. */
bool cg_target_is_host(const cg_target *t);
/* The target machine, borrowed (for the lowering's own queries). */
LLVMTargetMachineRef cg_target_machine(const cg_target *t);

/* Sets m's triple and data layout; call on a fresh module before adding
 * code. */
void cg_target_setup_module(const cg_target *t, LLVMModuleRef m);
/* Lets fn use the target's full vector width: LLVM prefers 256-bit vectors
 * on most AVX-512 cores, which halves the throughput of our wide, regular
 * kernels; this adds "prefer-vector-width" and "min-legal-vector-width"
 * so the vectoriser and instruction selection use zmm registers. A no-op
 * below 512 bits. */
void cg_target_tune_function(const cg_target *t, LLVMValueRef fn);

/* Verifies m, then runs LLVM's default<On> pipeline for t's machine (loop
 * and SLP vectorisation on from -O2). A verifier failure is reported with
 * its first line. */
int cg_optimize(const cg_target *t, LLVMModuleRef m, icc_diag *d);
/* Drops LLVM's remarks and warnings for m's context (they concern its
 * transformations, not the model); errors still reach stderr, one line
 * each. cg_optimize does this itself. */
void cg_quiet_diagnostics(LLVMModuleRef m);

/* Generates machine code for m into an object file at path (written to a
 * temporary name and renamed, so a failure leaves no partial file). Code
 * generation may rewrite m a little (it stays valid), so emit an object
 * and assembly from the same module only for inspection. */
int cg_emit_object(const cg_target *t, LLVMModuleRef m, const char *path, icc_diag *d);
/* The same object in memory; the caller disposes of it. NULL (with d) on
 * failure. */
LLVMMemoryBufferRef cg_emit_object_buffer(const cg_target *t, LLVMModuleRef m, icc_diag *d);
/* Writes buf's bytes to path as cg_emit_object writes an object. */
int cg_write_buffer(LLVMMemoryBufferRef buf, const char *path, icc_diag *d);
/* Textual assembly of m; malloc'd, the caller frees; NULL (with d) on
 * failure. */
char *cg_emit_asm(const cg_target *t, LLVMModuleRef m, icc_diag *d);
/* Textual LLVM IR of m; malloc'd, the caller frees; NULL on out of memory. */
char *cg_emit_llvm_ir(LLVMModuleRef m);

/* Links objects (and libs: paths or -l/-L/-Wl options, passed through) into
 * a shared library with the system compiler driver, `cc -shared`. The
 * driver writes a temporary file next to out_path, renamed on success, so
 * a failed link leaves no partial output (and keeps an older out_path).
 * The driver's messages are captured; the error is one line: the first
 * that says "error" or "undefined" (else the first), and how many more
 * the log has. */
int cg_link_shared(const char *const *objs, int nobjs, const char *const *libs, int nlibs,
                   const char *out_path, icc_diag *d);
/* The same; on a failed link *log (if log is non-NULL) receives the
 * driver's whole output (malloc'd, the caller frees; NULL when there was
 * none), for a --verbose report. */
int cg_link_shared_log(const char *const *objs, int nobjs, const char *const *libs, int nlibs,
                       const char *out_path, char **log, icc_diag *d);

#endif
