/* compile.c - the driver's compile step: target, kernels, LLVM module,
 * optimization, object, link. */
#include "tools/compile.h"
#include "codegen/llvm/target.h"
#include "codegen/model.h"

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

int icc_compile_graph(const ir_graph *g, const icc_compile_opts *o, icc_diag *d)
{
    cg_target *t;
    if (cg_target_create(o->triple, o->cpu, NULL, o->opt_level, &t, d) < 0)
        return -1;
    int rc = -1;
    LLVMModuleRef m = NULL;
    char *text = NULL;
    if (o->emit && !strcmp(o->emit, "kernels")) {
        text = cg_kernels_text(g, t, o->name, d);
        rc = text ? put_text(o->out, text, d) : -1;
        goto done;
    }
    if (cg_compile_model(g, t, o->name, &m, d) < 0 || cg_optimize(t, m, d) < 0)
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
    if (icc_ends_with(o->out, ".o")) {
        rc = cg_emit_object(t, m, o->out, d);
        goto done;
    }
    char obj[4096];
    snprintf(obj, sizeof obj, "%s.%d.o", o->out, (int)getpid());
    if (cg_emit_object(t, m, obj, d) == 0) {
        const char *objs[1] = {obj}, *libs[1] = {"-lm"};
        rc = cg_link_shared(objs, 1, libs, 1, o->out, d);
        unlink(obj);
    }
done:
    free(text);
    if (m)
        LLVMDisposeModule(m);
    cg_target_destroy(t);
    return rc;
}
