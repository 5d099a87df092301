/* compile.h - the driver's compile step: an optimized graph to model.so /
 * model.o, or to a dump of kernels, LLVM IR or assembly; and the file
 * helpers the driver's commands share. */
#ifndef ICC_TOOLS_COMPILE_H
#define ICC_TOOLS_COMPILE_H

#include "ir/ir.h"
#include "ir/target.h"

typedef struct icc_compile_opts {
    const char *emit;          /* NULL (object/library), "kernels", "llvm" or "asm"; "cuda", "ptx" */
    const char *out;           /* output path; NULL for dumps means stdout */
    const char *name;          /* symbol prefix (NULL: "model") */
    const char *triple;        /* NULL: the host */
    const char *cpu;           /* NULL: the host; -march= */
    int opt_level;             /* LLVM's, 0..3 */
    bool external_weights;     /* --weights=external: write X.weights beside X.so */
    int64_t embed_limit;       /* weights past this many bytes go to X.weights anyway, with a
                                  note (0: never): .rodata past ~2 GiB overflows the linker's
                                  32-bit relocations */
    bool *external_out;        /* if non-NULL: set to whether X.weights was written */
    bool profile;              /* --profile: per-kernel timing (cg_program_profile) */
    bool verbose;              /* --verbose: a failed link prints the linker's full log to stderr */
    bool time_phases;          /* --time-passes: a table of the code generator's phases on stderr */
    const char *backend;       /* the backend (codegen/backend.h): NULL or "llvm" (the CPU), "cuda" */
} icc_compile_opts;

/* The description of the target triple/cpu name (NULL: the host, as
 * icc_compile_graph would build it) of backend (NULL: "llvm"), for the
 * passes. */
int icc_target_describe(const char *backend, const char *triple, const char *cpu, icc_target_desc *out,
                        icc_diag *d);

/* Compiles g (optimized and planned) as o says. A library output
 * "X.so" is linked from a temporary object; nothing partial is left on
 * failure. Returns 0, or -1 with a message in d. */
int icc_compile_graph(const ir_graph *g, const icc_compile_opts *o, icc_diag *d);

/* Writes len bytes to path through a temporary file and rename, so a
 * failure leaves no partial file. */
int icc_write_atomic(const char *path, const char *text, size_t len, icc_diag *d);

#endif
