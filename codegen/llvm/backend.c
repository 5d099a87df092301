/* backend.c - the LLVM backend's table (codegen/backend.h): targets are
 * cg_target (target.c), a program is assembled into one LLVM module
 * (model.c) and optimized, and packaged as an object or, linked with the
 * runtime archive by the system compiler driver, a shared library. */
#include "codegen/backend.h"
#include "codegen/llvm/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cg_artifact {
    const cg_target *t;        /* borrowed: the target outlives the artifact */
    LLVMModuleRef m;           /* owned */
    char *link_log;            /* owned: the last failed link's output, or NULL */
};

static int llvm_target_create(const char *triple, const char *cpu, const char *features, int opt_level,
                              void **tgt, icc_diag *d)
{
    cg_target *t;
    *tgt = NULL;
    if (cg_target_create(triple, cpu, features, opt_level, &t, d) < 0)
        return -1;
    *tgt = t;
    return 0;
}

static void llvm_target_destroy(void *tgt) { cg_target_destroy(tgt); }

static const icc_target_desc *llvm_target_desc(const void *tgt) { return cg_target_desc(tgt); }

static int llvm_compile(void *tgt, cg_program *p, cg_artifact **out, icc_diag *d)
{
    *out = NULL;
    cg_artifact *a = calloc(1, sizeof *a);
    if (!a)
        return ir_errorf(d, "out of memory");
    a->t = tgt;
    if (cg_llvm_assemble(a->t, p, &a->m, d) < 0 || cg_optimize(a->t, a->m, d) < 0) {
        if (a->m)
            LLVMDisposeModule(a->m);
        free(a);
        return -1;
    }
    *out = a;
    return 0;
}

/* A .so is linked from a temporary object beside it, with the whole
 * runtime inside (an app then needs nothing else) and the file name as
 * soname, so apps linking it find it by rpath. */
static int llvm_write(cg_artifact *a, const char *path, const char *runtime_lib, icc_diag *d)
{
    if (ir_ends_with(path, ".o"))
        return cg_emit_object(a->t, a->m, path, d);
    if (!runtime_lib)
        return ir_errorf(d, "%s: a shared library needs the runtime library to link", path);
    char obj[4096];
    snprintf(obj, sizeof obj, "%s.%d.o", path, (int)getpid());
    if (cg_emit_object(a->t, a->m, obj, d) < 0)
        return -1;
    const char *base = strrchr(path, '/');
    char soname[4200];
    snprintf(soname, sizeof soname, "-Wl,-soname,%s", base ? base + 1 : path);
    const char *objs[1] = {obj};
    const char *libs[7] = {"-Wl,--whole-archive", runtime_lib, "-Wl,--no-whole-archive", "-lm", "-lpthread", "-ldl",
                           soname};
    free(a->link_log);
    int rc = cg_link_shared_log(objs, 1, libs, 7, path, &a->link_log, d);
    unlink(obj);
    return rc;
}

static const char *llvm_write_log(const cg_artifact *a) { return a->link_log; }

static char *llvm_emit_text(cg_artifact *a, const char *kind, icc_diag *d)
{
    if (!strcmp(kind, "asm"))
        return cg_emit_asm(a->t, a->m, d);
    if (strcmp(kind, "llvm")) {
        ir_errorf(d, "the llvm backend has no text form '%s' (it has: llvm, asm)", kind);
        return NULL;
    }
    char *text = cg_emit_llvm_ir(a->m);
    if (!text)
        ir_errorf(d, "out of memory");
    return text;
}

static void llvm_artifact_free(cg_artifact *a)
{
    if (!a)
        return;
    LLVMDisposeModule(a->m);
    free(a->link_log);
    free(a);
}

const cg_backend cg_llvm_backend = {
    .name = "llvm",
    .target_create = llvm_target_create,
    .target_destroy = llvm_target_destroy,
    .target_desc = llvm_target_desc,
    .compile = llvm_compile,
    .write = llvm_write,
    .emit_text = llvm_emit_text,
    .write_log = llvm_write_log,
    .artifact_free = llvm_artifact_free,
};
