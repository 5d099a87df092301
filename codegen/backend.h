/* backend.h - the backend interface: what a code generator implements to
 * turn a backend-neutral program (codegen/program.h) into a loadable
 * model for one kind of machine.
 *
 * Usage (tools/compile.c):
 *
 *     const cg_backend *be = cg_backend_find("llvm");
 *     void *tgt;
 *     if (be->target_create(NULL, NULL, NULL, 3, &tgt, &d) < 0) ...;   // the host, -O3
 *     cg_schedule s;
 *     cg_schedule_init(&s, be->target_desc(tgt), &d);
 *     cg_program *p;
 *     cg_program_build(g, &s, "model", false, &p, &d);
 *     cg_artifact *a;
 *     if (be->compile(tgt, p, &a, &d) == 0)
 *         be->write(a, "model.so", "/path/libiccrt.a", &d);
 *     be->artifact_free(a);
 *     cg_program_destroy(p);
 *     be->target_destroy(tgt);
 *
 * A backend is this one table (QBE's struct Target): adding a backend
 * adds a folder under codegen/ with its table and one entry in
 * cg_backends (backend.c), not branches across the code. Everything the
 * backends share (kernel order, bindings, arena layout, symbol table,
 * shape checks, weights) is decided by cg_program_build, once. See
 * docs/backends.md.
 *
 * Errors: functions returning int give 0 on success and -1 with a one-line
 * message in d on failure.
 */
#ifndef ICC_CG_BACKEND_H
#define ICC_CG_BACKEND_H

#include "codegen/program.h"
#include "ir/target.h"

/* A compiled program, in the backend's own form (an LLVM module, CUDA
 * source and a cubin...). Opaque outside the backend that made it. */
typedef struct cg_artifact cg_artifact;

typedef struct cg_backend {
    const char *name;          /* "llvm": what cg_backend_find takes */
    /* Creates a target: NULL triple/cpu/features select the host; cpu
     * "native" also means the host; features is "+a,-b"; opt_level 0..3.
     * The caller owns *tgt (target_destroy). An unsupported triple, CPU
     * or feature is an error. */
    int (*target_create)(const char *triple, const char *cpu, const char *features, int opt_level,
                         void **tgt, icc_diag *d);
    void (*target_destroy)(void *tgt);
    /* The target's description (passes and cg_schedule_init read it);
     * borrowed, valid while tgt lives. */
    const icc_target_desc *(*target_desc)(const void *tgt);
    /* Compiles p for tgt: emits every kernel, assembles the run function
     * and the model descriptor, and optimizes (now, or in write, as the
     * backend finds faster: the LLVM backend optimizes a library's kernels
     * in parallel partitions there). The backend may rewrite p's
     * kernels in place with the target-neutral building blocks it picks
     * (kir_expand_math); p may be destroyed afterwards. tgt is borrowed
     * and must outlive the artifact. The caller owns *out (artifact_free). */
    int (*compile)(void *tgt, cg_program *p, cg_artifact **out, icc_diag *d);
    /* Packages a into the file path (written whole or not at all): a path
     * ending in ".o" gets a relocatable object; any other path a shared
     * library with runtime_lib (the runtime archive, libiccrt.a) linked
     * in. runtime_lib is borrowed and may be NULL for an object. */
    int (*write)(cg_artifact *a, const char *path, const char *runtime_lib, icc_diag *d);
    /* (optional) The artifact as text of the given kind (the LLVM
     * backend: "llvm" for its optimized IR, "asm"; --emit=KIND); malloc'd,
     * the caller frees; NULL with d set, naming the kinds there are, for
     * a kind the backend has not. A NULL slot: no text forms at all. */
    char *(*emit_text)(cg_artifact *a, const char *kind, icc_diag *d);
    /* (optional) The full log of a's last failed write (the system
     * linker's output), or NULL; borrowed, valid while a lives. The
     * write's error is one line; this is what --verbose adds. */
    const char *(*write_log)(const cg_artifact *a);
    /* (optional) How many units a's last write was built from in
     * parallel (the LLVM backend: modules); for --time-passes. */
    int (*write_units)(const cg_artifact *a);
    void (*artifact_free)(cg_artifact *a);   /* NULL is a no-op */
} cg_backend;

/* The backends this build has, NULL-terminated, the default first. */
extern const cg_backend *const cg_backends[];

/* The backend named name, or NULL when the build has none by that name
 * (the table is static: nothing to free). */
const cg_backend *cg_backend_find(const char *name);

#endif
