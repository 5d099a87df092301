/* compile.c - the driver's compile step: a target, the backend-neutral
 * program, the backend's compile and its package (object or library), or
 * a dump of one stage. The code generator is reached only through its
 * backend table (codegen/backend.h). */
#include "tools/compile.h"
#include "codegen/backend.h"
#include "passes/pass.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* The backend the driver compiles with (NULL: llvm, which the build
 * always has; cuda only where NVRTC was found). */
static const cg_backend *backend(const char *name, icc_diag *d)
{
    const cg_backend *be = cg_backend_find(name ? name : "llvm");
    if (!be && name && !strcmp(name, "cuda"))
        ir_errorf(d, "this icc was built without the CUDA backend (NVRTC was not found at build time)");
    else if (!be)
        ir_errorf(d, "this icc was built without the %s backend", name ? name : "llvm");
    return be;
}

int icc_target_describe(const char *bname, const char *triple, const char *cpu, icc_target_desc *out,
                        icc_diag *d)
{
    const cg_backend *be = backend(bname, d);
    void *t;
    if (!be || be->target_create(triple, cpu, NULL, 0, &t, d) < 0)
        return -1;
    *out = *be->target_desc(t);
    be->target_destroy(t);
    return 0;
}

/* --time-passes after the passes' table: lowering to kernels, the
 * backend's assembly of them, and optimization + code generation + link
 * (one phase: the LLVM backend optimizes lazily, in partitions). */
static void print_phases(const double *ms, int n, int units)
{
    char last[64];
    snprintf(last, sizeof last, "optimize, generate, link (%d module%s)", units, units == 1 ? "" : "s");
    const char *const names[] = {"lower (kernels)", "assemble (backend)", units > 0 ? last : "optimize, generate, link"};
    icc_print_timings(stderr, "code generation timings", "phase", ms, names, n);
}

int icc_compile_graph(const ir_graph *g, const icc_compile_opts *o, icc_diag *d)
{
    const cg_backend *be = backend(o->backend, d);
    void *t;
    if (!be || be->target_create(o->triple, o->cpu, NULL, o->opt_level, &t, d) < 0)
        return -1;
    int rc = -1;
    cg_schedule s;
    cg_program *p = NULL;
    cg_artifact *a = NULL;
    char *text = NULL, wpath[4096] = "";
    if (cg_schedule_init(&s, be->target_desc(t), d) < 0)
        goto done;
    if (o->emit && !strcmp(o->emit, "kernels")) {
        text = cg_kernels_text(g, &s, o->name, d);
        rc = text ? put_text(o->out, text, d) : -1;
        goto done;
    }
    bool external = o->external_weights;
    if (o->external_out)
        *o->external_out = false;
    double ms[3] = {0}, t0 = icc_wall_ms();
    int nph = 0;
    if (cg_program_build(g, &s, o->name, external, &p, d) < 0 ||
        (o->profile && cg_program_profile(g, p, s.target, d) < 0))
        goto done;
    ms[nph++] = icc_wall_ms() - t0;
    /* (a CUDA library embeds its weights: its plan has no external ones yet) */
    if (!external && !o->emit && o->out && o->embed_limit > 0 && p->weights_bytes > o->embed_limit &&
        strcmp(be->name, "cuda")) {
        external = p->external_weights = true;
        fprintf(stderr, "icc: note: the weights (%.3g MB) go to a .weights file beside %s: more than the %.3g MB "
                "a library embeds (--embed-limit; --weights=embedded keeps them in)\n",
                (double)p->weights_bytes / 1e6, o->out, (double)o->embed_limit / 1e6);
    }
    t0 = icc_wall_ms();
    if (be->compile(t, p, &a, d) < 0) {
        /* a compiler's own log (NVRTC's) behind --verbose */
        const char *log = o->verbose && a && be->write_log ? be->write_log(a) : NULL;
        if (log && *log)
            fprintf(stderr, "icc: the %s backend's log:\n%s%s", be->name, log,
                    log[strlen(log) - 1] == '\n' ? "" : "\n");
        goto done;
    }
    ms[nph++] = icc_wall_ms() - t0;
    t0 = icc_wall_ms();
    if (o->emit) {
        if (!be->emit_text)
            ir_errorf(d, "unknown --emit kind '%s' (supported: ir, dot, kernels)", o->emit);
        else if ((text = be->emit_text(a, o->emit, d)))
            rc = put_text(o->out, text, d);
        goto done;
    }
    if (!o->out) {
        ir_errorf(d, "no output: give -o model.so (or model.o), or --emit=...");
        goto done;
    }
    if (external) {
        /* model.so -> model.weights, where the runtime looks for it */
        size_t stem = strlen(o->out) - (ir_ends_with(o->out, ".so") ? 3 : ir_ends_with(o->out, ".o") ? 2 : 0);
        snprintf(wpath, sizeof wpath, "%.*s.weights", (int)stem, o->out);
        if (cg_program_write_weights(p, wpath, d) < 0) {
            wpath[0] = 0;
            goto done;
        }
    }
    char rt[4096];
    if (ir_ends_with(o->out, ".o"))
        rc = be->write(a, o->out, NULL, d);
    else if (runtime_lib(rt, sizeof rt, d) == 0)
        rc = be->write(a, o->out, rt, d);
    if (rc == 0 && o->external_out)
        *o->external_out = external;
    ms[nph++] = icc_wall_ms() - t0;
    if (rc == 0 && o->time_phases)
        print_phases(ms, nph, be->write_units ? be->write_units(a) : 0);
    const char *log = rc < 0 && o->verbose && be->write_log ? be->write_log(a) : NULL;
    if (log)
        fprintf(stderr, "icc: the linker's output:\n%s%s", log, log[strlen(log) - 1] == '\n' ? "" : "\n");
done:
    if (rc < 0 && wpath[0])
        unlink(wpath);
    free(text);
    if (a)
        be->artifact_free(a);
    cg_program_destroy(p);
    be->target_destroy(t);
    return rc;
}
