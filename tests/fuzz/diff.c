/* diff.c - the differential check: interpreter vs compiled code.
 *
 * Compiling goes the driver's way up to the object file: the -O level's
 * pipeline with the plan last (the host's target description, as `icc`
 * gives the passes), cg_compile_model, cg_optimize, cg_emit_object at the
 * same LLVM level. Linking that object into a .so (`cc -shared`) and
 * dlopen would cost a process per compile; instead the object is loaded
 * into this process by LLVM's ORC JIT (one LLJIT, one resource tracker
 * per model, removed after the run), its descriptor found by name and
 * wrapped with icc_model_from_desc, so the machine code run is the code a
 * .so would hold. Each model gets its own symbol prefix, so no two
 * loaded models clash.
 *
 * The rule (issue 13): compiled code reports what the interpreter
 * reports. Both run: same output count, dtypes, shapes and values within
 * the case's tolerance (NaN matches NaN, an infinity only itself). The
 * interpreter refuses: every level must refuse too (in its passes, its
 * compile or its run). The interpreter runs: no level may refuse, except
 * with the code generator's "cannot be compiled yet" (an op or dtype it
 * documents as not lowered), which skips the case.
 */
#include "diff.h"

#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/llvm/model.h"
#include "codegen/llvm/target.h"
#include "icc/runtime.h"
#include "ir/ref/interp.h"
#include "ir/text.h"
#include "passes/pass.h"

/* Every case runs at -O0 and at one optimizing level, -O2 or -O3 by the
 * case's own parity (so a replay runs the level the fuzzer ran): -O2
 * fuses without the blocked layouts -O3 adds, and each is checked without
 * doubling the time per case. */
static const int levels[] = {0, 2, 3};
#define NLEVELS ((int)(sizeof levels / sizeof *levels))

/* The targets (one per LLVM level), the JIT and a scratch object path,
 * made at the first case and kept for the process. */
static cg_target *targets[4];
static LLVMOrcLLJITRef jit;
static char obj_path[128];
static long serial;

static void cleanup(void)
{
    if (obj_path[0])
        unlink(obj_path);
    if (jit)
        LLVMOrcDisposeLLJIT(jit);
    for (int i = 0; i < 4; i++)
        cg_target_destroy(targets[i]);
}

static bool llvm_ok(LLVMErrorRef e, const char *what, icc_diag *d)
{
    if (!e)
        return true;
    char *m = LLVMGetErrorMessage(e);
    ir_errorf(d, "%s: %s", what, m);
    LLVMDisposeErrorMessage(m);
    return false;
}

static int setup(icc_diag *d)
{
    if (jit)
        return 0;
    for (int i = 0; i < NLEVELS; i++)
        if (cg_target_create(NULL, NULL, NULL, levels[i], &targets[levels[i]], d) < 0)
            return -1;
    if (!llvm_ok(LLVMOrcCreateLLJIT(&jit, NULL), "creating the JIT", d))
        return -1;
    LLVMOrcDefinitionGeneratorRef gen;
    if (!llvm_ok(LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(jit),
                                                                      NULL, NULL),
                 "the JIT's process symbols", d))
        return -1;
    LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(jit), gen);
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(obj_path, sizeof obj_path, "%s/icc-diff-%d.o", dir, (int)getpid());
    atexit(cleanup);
    return 0;
}

/* A compiled model loaded in the JIT. */
typedef struct loaded {
    LLVMOrcResourceTrackerRef rt;
    icc_model *m;
    icc_context *ctx;
} loaded;

static void unload(loaded *l)
{
    icc_context_destroy(l->ctx);
    icc_model_close(l->m);
    if (l->rt) {
        LLVMErrorRef e = LLVMOrcResourceTrackerRemove(l->rt);
        if (e)
            LLVMConsumeError(e);
        LLVMOrcReleaseResourceTracker(l->rt);
    }
    memset(l, 0, sizeof *l);
}

/* Where a level stopped. */
enum { AT_PASSES = 1, AT_COMPILE, AT_RUN, AT_HARNESS };
static const char *const stage_name[] = {"", "its passes", "compiling", "running", "the harness"};

/* Compiles a copy of g at level and runs it on in; out receives
 * g->noutputs tensors (the caller frees them) on 0. Otherwise the stage
 * that refused, with d set; *skip when the refusal is a documented "not
 * compiled yet". */
static int compile_run(const ir_graph *g, int level, const ir_tensor *in, ir_tensor *out, bool *skip, icc_diag *d)
{
    *skip = false;
    size_t len;
    char *text = ir_print_string(g, &len);
    if (!text)
        return ir_errorf(d, "printing the graph failed"), AT_HARNESS;
    ir_graph *h = ir_parse(text, len, "fuzz.icc", d);
    free(text);
    if (!h)
        return ir_diag_prefix(d, "the printed graph does not parse"), AT_HARNESS;
    int stage = AT_PASSES;
    LLVMModuleRef mod = NULL;
    loaded l = {0};
    icc_tensor *ti = NULL;
    void **po = NULL;
    int made = 0;
    const char **names = calloc((size_t)h->noutputs + 1, sizeof *names);
    char pipeline[1024], prefix[32];
    /* the plan last, as the driver's compile step appends it */
    const char *base = icc_pipeline_for_level(level);
    size_t bn = strlen(base);
    bool has_plan = bn >= 4 && !strcmp(base + bn - 4, "plan");
    snprintf(pipeline, sizeof pipeline, "%s%s", base, has_plan ? "" : ",plan");
    for (int i = 0; names && i < h->noutputs; i++)
        names[i] = h->outputs[i]->name;
    icc_pipeline p;
    icc_pass_options po_ = {.target = cg_target_desc(targets[level])};
    if (!names || icc_pipeline_parse(pipeline, &p, d) < 0)
        goto done;
    int rc = icc_pipeline_run(&p, h, &po_, d);
    icc_pipeline_free(&p);
    if (rc < 0 || icc_keep_output_names(h, names, d) < 0)
        goto done;
    stage = AT_COMPILE;
    snprintf(prefix, sizeof prefix, "f%ld", serial++);
    if (cg_compile_model(h, targets[level], prefix, &mod, d) < 0) {
        *skip = strstr(d->msg, "cannot be compiled yet") != NULL;
        goto done;
    }
    if (cg_optimize(targets[level], mod, d) < 0 || cg_emit_object(targets[level], mod, obj_path, d) < 0)
        goto done;
    stage = AT_HARNESS;
    LLVMMemoryBufferRef buf;
    char *msg = NULL;
    if (LLVMCreateMemoryBufferWithContentsOfFile(obj_path, &buf, &msg)) {
        ir_errorf(d, "reading %s: %s", obj_path, msg ? msg : "?");
        LLVMDisposeMessage(msg);
        goto done;
    }
    l.rt = LLVMOrcJITDylibCreateResourceTracker(LLVMOrcLLJITGetMainJITDylib(jit));
    if (!llvm_ok(LLVMOrcLLJITAddObjectFileWithRT(jit, l.rt, buf), "adding the object", d))
        goto done;
    char sym[64];
    snprintf(sym, sizeof sym, "%s_model", prefix);
    LLVMOrcExecutorAddress addr = 0;
    if (!llvm_ok(LLVMOrcLLJITLookup(jit, &addr, sym), "looking up the descriptor", d))
        goto done;
    if (icc_model_from_desc((const icc_model_desc *)(uintptr_t)addr, &l.m) != ICC_OK ||
        icc_context_create(l.m, NULL, &l.ctx) != ICC_OK) {
        ir_errorf(d, "%s", icc_last_error());
        goto done;
    }
    /* two threads for every other case (each case compiles twice), so
     * parallel chunks run too */
    if (icc_context_set_threads(l.ctx, 1 + (int)((serial >> 1) & 1)) != ICC_OK) {
        ir_errorf(d, "%s", icc_last_error());
        goto done;
    }
    stage = AT_RUN;
    ti = calloc((size_t)h->ninputs + 1, sizeof *ti);
    po = calloc((size_t)h->noutputs + 1, sizeof *po);
    if (!ti || !po) {
        ir_errorf(d, "out of memory");
        goto done;
    }
    for (int i = 0; i < h->ninputs; i++)
        ti[i] = (icc_tensor){in[i].data, ir_dtype_to_onnx(in[i].dtype), in[i].rank, in[i].dims};
    for (; made < h->noutputs; made++) {
        const ir_type *t = &h->outputs[made]->type;
        int64_t dims[IR_MAX_RANK];
        for (int k = 0; k < t->rank; k++)
            dims[k] = t->dims[k].v;
        if (ir_tensor_init(&out[made], t->dtype, t->rank, dims, d) < 0 ||
            !(out[made].data = calloc(1, out[made].nbytes + 1))) {
            stage = AT_HARNESS;
            goto done;
        }
        po[made] = out[made].data;
    }
    if (icc_run_tensors(l.ctx, ti, h->ninputs, po) != ICC_OK) {
        ir_errorf(d, "%s", icc_context_error(l.ctx));
        goto done;
    }
    stage = 0;
done:
    if (stage)
        ir_tensors_free(out, made);
    free(ti);
    free(po);
    free(names);
    unload(&l);
    if (mod)
        LLVMDisposeModule(mod);
    ir_graph_destroy(h);
    return stage;
}

/* The tolerance of a case's class: relative, and absolute in units of
 * the output's scale. */
static void tolerance(int cls, double *rtol, double *atol)
{
    static const double r[] = {0, 1e-5, 1e-4, 2e-3}, a[] = {0, 1e-6, 1e-5, 2e-4};
    *rtol = r[cls];
    *atol = a[cls];
}

/* First difference between got and want, or false; what gets the detail. */
static bool differs(const ir_tensor *got, const ir_tensor *want, int cls, char *what, size_t n)
{
    if (got->dtype != want->dtype) {
        snprintf(what, n, "dtype %s, want %s", ir_dtype_name(got->dtype), ir_dtype_name(want->dtype));
        return true;
    }
    bool shape = got->rank == want->rank;
    for (int k = 0; shape && k < got->rank; k++)
        shape = got->dims[k] == want->dims[k];
    if (!shape) {
        snprintf(what, n, "rank %d/%lld elements, want rank %d/%lld elements", got->rank, (long long)got->numel,
                 want->rank, (long long)want->numel);
        return true;
    }
    double rtol, atol, scale = 0;
    tolerance(cls, &rtol, &atol);
    int64_t finite = 0;
    if (ir_dtype_is_float(want->dtype)) {
        for (int64_t i = 0; i < want->numel; i++) {
            double v = ir_tensor_getf(want, i);
            if (isfinite(v))
                scale += v * v, finite++;
        }
        scale = finite ? sqrt(scale / (double)finite) : 0;
    }
    if (scale < 1)
        scale = 1;
    for (int64_t i = 0; i < want->numel; i++) {
        if (ir_dtype_is_float(want->dtype)) {
            double a = ir_tensor_getf(got, i), b = ir_tensor_getf(want, i);
            bool ok = isnan(b) ? isnan(a) : isinf(b) ? a == b : fabs(a - b) <= atol * scale + rtol * fabs(b);
            if (!ok) {
                snprintf(what, n, "element %lld: %.9g, want %.9g (tolerance class %d)", (long long)i, a, b, cls);
                return true;
            }
        } else if (ir_tensor_geti(got, i) != ir_tensor_geti(want, i)) {
            snprintf(what, n, "element %lld: %lld, want %lld", (long long)i, (long long)ir_tensor_geti(got, i),
                     (long long)ir_tensor_geti(want, i));
            return true;
        }
    }
    return false;
}

/* The report: a headline, then the graph's text IR. */
static char *report_of(const ir_graph *g, const char *fmt, ...)
{
    char head[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    size_t len = 0;
    char *text = ir_print_string(g, &len);
    size_t n = strlen(head) + len + 64;
    char *r = malloc(n);
    if (r)
        snprintf(r, n, "%s\n%s", head, text ? text : "(printing the graph failed)\n");
    free(text);
    return r;
}

diff_result diff_case(const gen_case *c, diff_stats *st, char **report)
{
    diff_stats dummy = {0};
    if (!st)
        st = &dummy;
    *report = NULL;
    st->cases++;
    icc_diag d = {{0}};
    if (setup(&d) < 0) {
        *report = report_of(c->g, "harness: %s", d.msg);
        st->bugs++;
        return DIFF_BUG;
    }
    const ir_graph *g = c->g;
    ir_tensor *want = calloc((size_t)g->noutputs + 1, sizeof *want);
    ir_tensor *got = calloc((size_t)g->noutputs + 1, sizeof *got);
    diff_result res = DIFF_SAME;
    if (!want || !got) {
        free(want);
        free(got);
        *report = report_of(g, "harness: out of memory");
        st->bugs++;
        return DIFF_BUG;
    }
    icc_diag di = {{0}};
    bool interp_ok = ir_interp_run(g, c->inputs, want, &di) == 0;
    int64_t parity = g->nnodes + g->nvalues;
    for (int i = 0; i < c->ninputs; i++)
        parity += c->inputs[i].numel;
    const int run_levels[2] = {0, parity % 2 ? 3 : 2};
    for (int li = 0; li < 2 && res == DIFF_SAME; li++) {
        int level = run_levels[li];
        bool skip;
        d = (icc_diag){{0}};
        int stage = compile_run(g, level, c->inputs, got, &skip, &d);
        if (stage == AT_HARNESS) {
            *report = report_of(g, "-O%d: harness: %s", level, d.msg);
            res = DIFF_BUG;
        } else if (!interp_ok) {
            if (!stage) {
                *report = report_of(g, "-O%d runs what the interpreter refuses (%s)", level, di.msg);
                ir_tensors_free(got, g->noutputs);
                res = DIFF_BUG;
            }
        } else if (stage && skip) {
            *report = report_of(g, "-O%d: %s", level, d.msg);
            res = DIFF_SKIP;
        } else if (stage) {
            *report = report_of(g, "-O%d refuses (in %s) what the interpreter runs: %s", level, stage_name[stage],
                                d.msg);
            res = DIFF_BUG;
        } else {
            for (int i = 0; i < g->noutputs && res == DIFF_SAME; i++) {
                char what[256];
                if (differs(&got[i], &want[i], c->tol_class, what, sizeof what)) {
                    *report = report_of(g, "-O%d differs from the interpreter on output %d (%%%s): %s", level, i,
                                        g->outputs[i]->name, what);
                    res = DIFF_BUG;
                }
            }
            ir_tensors_free(got, g->noutputs);
        }
    }
    if (interp_ok)
        ir_tensors_free(want, g->noutputs);
    free(want);
    free(got);
    if (res == DIFF_SAME)
        interp_ok ? st->same++ : st->refused++;
    else if (res == DIFF_SKIP)
        st->skipped++;
    else
        st->bugs++;
    return res;
}
