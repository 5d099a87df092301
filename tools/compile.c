/* compile.c - the driver's compile step: target, kernels, LLVM module,
 * optimization, object, link. */
#include "tools/compile.h"
#include "codegen/llvm/model.h"
#include "codegen/llvm/target.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool icc_ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

int icc_write_atomic(const char *path, const char *text, size_t len, icc_diag *d)
{
    size_t n = strlen(path) + 32;
    char *tmp = malloc(n);
    if (!tmp)
        return ir_errorf(d, "out of memory");
    snprintf(tmp, n, "%s.tmp%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        free(tmp);
        return ir_errorf(d, "%s: %s", path, strerror(errno));
    }
    bool ok = fwrite(text, 1, len, f) == len;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) < 0) {
        unlink(tmp);
        free(tmp);
        return ir_errorf(d, "%s: write failed", path);
    }
    free(tmp);
    return 0;
}

/* A dump goes to the output file, or to stdout without one. */
static int put_text(const char *path, const char *text, icc_diag *d)
{
    if (!path)
        return fputs(text, stdout) < 0 ? ir_errorf(d, "write error on stdout") : 0;
    return icc_write_atomic(path, text, strlen(text), d);
}

#ifndef ICC_RUNTIME_RELDIR
#define ICC_RUNTIME_RELDIR "../lib"
#endif

/* The runtime library linked into every model.so, so that an app needs
 * nothing else: $ICC_RUNTIME_LIB, else libiccrt.a beside this icc (the
 * build tree) or in the install's libdir (ICC_RUNTIME_RELDIR from bindir). */
static int runtime_lib(char *buf, size_t n, icc_diag *d)
{
    const char *env = getenv("ICC_RUNTIME_LIB");
    if (env && *env) {
        snprintf(buf, n, "%s", env);
        return access(buf, R_OK) == 0 ? 0 : ir_errorf(d, "ICC_RUNTIME_LIB=%s: %s", env, strerror(errno));
    }
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = 0;
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = 0;
        const char *tries[2] = {"libiccrt.a", ICC_RUNTIME_RELDIR "/libiccrt.a"};
        for (int i = 0; i < 2; i++) {
            snprintf(buf, n, "%s/%s", exe, tries[i]);
            if (access(buf, R_OK) == 0)
                return 0;
        }
    }
    return ir_errorf(d, "cannot find the runtime libiccrt.a beside icc or in %s (set ICC_RUNTIME_LIB)",
                     ICC_RUNTIME_RELDIR);
}

int icc_target_describe(const char *triple, const char *cpu, icc_target_desc *out, icc_diag *d)
{
    cg_target *t;
    if (cg_target_create(triple, cpu, NULL, 0, &t, d) < 0)
        return -1;
    *out = *cg_target_desc(t);
    cg_target_destroy(t);
    return 0;
}

int icc_compile_graph(const ir_graph *g, const icc_compile_opts *o, icc_diag *d)
{
    cg_target *t;
    if (cg_target_create(o->triple, o->cpu, NULL, o->opt_level, &t, d) < 0)
        return -1;
    int rc = -1;
    LLVMModuleRef m = NULL;
    char *text = NULL, wpath[4096] = "";
    void *wblob = NULL;
    int64_t wbytes = 0;
    if (o->emit && !strcmp(o->emit, "kernels")) {
        cg_schedule s;
        text = cg_schedule_init(&s, cg_target_desc(t), d) == 0 ? cg_kernels_text(g, &s, o->name, d) : NULL;
        rc = text ? put_text(o->out, text, d) : -1;
        goto done;
    }
    if (cg_compile_model_ext(g, t, o->name, o->external_weights ? &wblob : NULL, &wbytes, &m, d) < 0 ||
        cg_optimize(t, m, d) < 0)
        goto done;
    if (o->emit && (!strcmp(o->emit, "llvm") || !strcmp(o->emit, "asm"))) {
        text = !strcmp(o->emit, "llvm") ? cg_emit_llvm_ir(m) : cg_emit_asm(t, m, d);
        if (!text && !strcmp(o->emit, "llvm"))
            ir_errorf(d, "out of memory");
        rc = text ? put_text(o->out, text, d) : -1;
        goto done;
    }
    if (o->emit) {
        ir_errorf(d, "unknown --emit kind '%s' (supported: ir, dot, kernels, llvm, asm)", o->emit);
        goto done;
    }
    if (!o->out) {
        ir_errorf(d, "no output: give -o model.so (or model.o), or --emit=...");
        goto done;
    }
    if (o->external_weights) {
        /* model.so -> model.weights, where the runtime looks for it */
        size_t stem = strlen(o->out) - (icc_ends_with(o->out, ".so") ? 3 : icc_ends_with(o->out, ".o") ? 2 : 0);
        snprintf(wpath, sizeof wpath, "%.*s.weights", (int)stem, o->out);
        if (icc_write_atomic(wpath, wblob, (size_t)wbytes, d) < 0) {
            wpath[0] = 0;
            goto done;
        }
    }
    if (icc_ends_with(o->out, ".o")) {
        rc = cg_emit_object(t, m, o->out, d);
        goto done;
    }
    char obj[4096], rt[4096];
    if (runtime_lib(rt, sizeof rt, d) < 0)
        goto done;
    snprintf(obj, sizeof obj, "%s.%d.o", o->out, (int)getpid());
    if (cg_emit_object(t, m, obj, d) == 0) {
        /* the file name as soname, so apps linking it find it by rpath */
        const char *base = strrchr(o->out, '/');
        char soname[4200];
        snprintf(soname, sizeof soname, "-Wl,-soname,%s", base ? base + 1 : o->out);
        const char *objs[1] = {obj};
        const char *libs[7] = {"-Wl,--whole-archive", rt, "-Wl,--no-whole-archive", "-lm", "-lpthread", "-ldl",
                               soname};
        rc = cg_link_shared(objs, 1, libs, 7, o->out, d);
        unlink(obj);
    }
done:
    if (rc < 0 && wpath[0])
        unlink(wpath);
    free(wblob);
    free(text);
    if (m)
        LLVMDisposeModule(m);
    cg_target_destroy(t);
    return rc;
}
