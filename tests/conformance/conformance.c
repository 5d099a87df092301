/* conformance.c - runs the ONNX backend node tests through icc.
 *
 * Each test directory holds model.onnx and test_data_set_N directories with
 * input_N.pb / output_N.pb (serialized TensorProto). For each test the
 * runner forks (a crash or a hang is a failure of that test, not of the
 * run), loads the model, checks that its text IR prints, parses and prints
 * back identically, runs every data set through the reference interpreter
 * and compares: floats |got - want| <= atol + rtol*|want| (NaN matches
 * NaN), integers and bools exactly, dtype and shape exactly.
 *
 * In compiled mode (--compiled) each model is compiled to a .so, loaded
 * through the runtime and run. A model that does not compile as is gets
 * its shape-deciding integer inputs (Reshape's shape, Reduce's axes...)
 * bound to the data set's values, the way `icc --bind` freezes them;
 * with --no-bind it is skipped instead (icc's reason kept), so the count
 * is what compiles from the model alone, run-time inputs read at run time.
 *
 * A test is skipped only when its model uses an op icc does not implement
 * (or, compiled, one codegen does not compile yet). Every other problem is
 * a failure. Failures listed in the known-failures file (one "test_name
 * reason" per line) are still counted as failed, but do not make the exit
 * status non-zero; a listed test that passes does, so the list only
 * shrinks. The file excuses only ordinary failures (a wrong result, a
 * refused model): a test whose child dies on a signal, times out, exits
 * with a non-zero status (how ASan and UBSan end it) or leaks is an
 * unexpected failure even when it is listed.
 *
 * Skips are checked the same way, so that an op family that stops loading
 * or compiling cannot pass as "skipped": with --expect-skips FILE (same
 * format; tests/conformance/skips/ has one per mode) the run fails on a
 * test that skips but is not listed, and on a listed test that no longer
 * skips (passes or fails now) or does not exist; --no-skips is the same
 * with an empty list. With --filter only the selected tests are checked.
 * --write-skips FILE writes the run's skips in that format
 * (scripts/update-skips.sh rewrites the committed files).
 *
 * --cuda-pack DIR compiles for CUDA as --cuda-so does but runs nothing:
 * each test's library goes to DIR/<test>/model.so (DIR/<test>/<set>/model.so
 * when binding made one per data set), and each data set's inputs (the
 * unbound ones) and expected outputs to DIR/<test>/<set>/in_N.npy and
 * out_N.npy, for tests/gpu/conformance.c to run on a GPU.
 *
 * Built with AddressSanitizer, each child runs LeakSanitizer's check on
 * what its test left before it reports (its _exit skips the atexit check).
 * Closing line: "N passed, N failed, N skipped".
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "frontend/onnx.h"
#include "runtime/npy.h"
#include "ir/ref/interp.h"
#include "ir/text.h"
#include "passes/pass.h"
#include "codegen/lower.h"
#include "codegen/llvm/model.h"
#include "tests/conformance/cuda_emu.h"
#include "icc/runtime.h"

#if defined(__SANITIZE_ADDRESS__)
#define CONF_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CONF_LSAN 1
#endif
#endif
#ifdef CONF_LSAN
#include <sanitizer/lsan_interface.h>
#endif

/* R_CRASH: the test's child ended abnormally (signal, timeout, non-zero
 * exit, a leak). It counts as failed, and the known-failures file does
 * not excuse it: a known wrong result that turns into a crash is news. */
enum { R_PASS = 0, R_FAIL = 1, R_SKIP = 2, R_CRASH = 3 };

typedef struct {
    const char *data_dir;
    const char *models_dir;      /* light_* models: NAME.onnx + NAME_output_0.pb */
    const char *filters[64];
    int nfilters;
    const char *known_path;
    const char *expect_skips_path; /* tests expected to skip, or NULL */
    bool no_skips;               /* expect no skips at all */
    const char *write_skips_path;  /* write the run's skips here, or NULL */
    bool verbose, no_roundtrip;
    double rtol, atol;
    int timeout;
    int min_pass;
    const char *passes;          /* pipeline run after loading, or NULL */
    bool compiled;               /* run through icc's compiled code, not the interpreter */
    bool no_bind;                /* compiled: never bind inputs; what does not compile skips */
    bool cuda_emu;               /* compiled for the CUDA target, its CUDA C run on the CPU */
    icc_target_desc host;        /* compiled: the host's description, which the passes see */
} options;

typedef struct {
    char **names, **reasons;
    int n;
} known_list;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int load_known(const char *path, known_list *k)
{
    memset(k, 0, sizeof *k);
    if (!path)
        return 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "icc-conformance: cannot open %s\n", path);
        return -1;
    }
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '#' || *p == '\n' || !*p)
            continue;
        size_t n = strcspn(p, " \t\n");
        char *r = p + n;
        while (*r == ' ' || *r == '\t')
            r++;
        r[strcspn(r, "\n")] = 0;
        k->names = realloc(k->names, sizeof(char *) * (size_t)(k->n + 1));
        k->reasons = realloc(k->reasons, sizeof(char *) * (size_t)(k->n + 1));
        k->names[k->n] = strndup(p, n);
        k->reasons[k->n] = strdup(r);
        k->n++;
    }
    fclose(f);
    return 0;
}

/* NAME.onnx with a NAME_output_0.pb beside it. */
static bool has_output_file(const char *dir, const char *file)
{
    size_t n = strlen(file);
    if (n < 6 || strcmp(file + n - 5, ".onnx"))
        return false;
    char path[4096];
    snprintf(path, sizeof path, "%s/%.*s_output_0.pb", dir, (int)(n - 5), file);
    return access(path, F_OK) == 0;
}

static int known_index(const known_list *k, const char *name)
{
    for (int i = 0; i < k->n; i++)
        if (!strcmp(k->names[i], name))
            return i;
    return -1;
}

static bool matches(const options *o, const char *name)
{
    if (!o->nfilters)
        return true;
    for (int i = 0; i < o->nfilters; i++)
        if (strstr(name, o->filters[i]))
            return true;
    return false;
}

/* Compares one output; fills why on mismatch. */
static bool compare(const ir_tensor *got, const ir_tensor *want, const options *o, char *why,
                    size_t whylen)
{
    if (got->dtype != want->dtype) {
        snprintf(why, whylen, "dtype %s, expected %s", ir_dtype_name(got->dtype),
                 ir_dtype_name(want->dtype));
        return false;
    }
    bool shape_ok = got->rank == want->rank;
    for (int i = 0; shape_ok && i < got->rank; i++)
        shape_ok = got->dims[i] == want->dims[i];
    if (!shape_ok) {
        char a[128] = "", b[128] = "";
        for (int i = 0; i < got->rank; i++)
            snprintf(a + strlen(a), sizeof a - strlen(a), "%s%lld", i ? "x" : "", (long long)got->dims[i]);
        for (int i = 0; i < want->rank; i++)
            snprintf(b + strlen(b), sizeof b - strlen(b), "%s%lld", i ? "x" : "", (long long)want->dims[i]);
        snprintf(why, whylen, "shape [%s], expected [%s]", a, b);
        return false;
    }
    for (int64_t i = 0; i < got->numel; i++) {
        if (ir_dtype_is_float(got->dtype)) {
            double g = ir_tensor_getf(got, i), w = ir_tensor_getf(want, i);
            if (isnan(w) ? isnan(g) : (isinf(w) ? g == w : fabs(g - w) <= o->atol + o->rtol * fabs(w)))
                continue;
            snprintf(why, whylen, "element %lld is %.9g, expected %.9g", (long long)i, g, w);
            return false;
        }
        int64_t g = ir_tensor_geti(got, i), w = ir_tensor_geti(want, i);
        if (g != w) {
            snprintf(why, whylen, "element %lld is %lld, expected %lld", (long long)i, (long long)g,
                     (long long)w);
            return false;
        }
    }
    return true;
}

/* Loads a model and runs the chosen pipeline on it; NULL with why filled
 * (and *skip set for an unsupported op) on failure. */
static ir_graph *load_bound(const char *path, const options *o, const ir_tensor *bind, const bool *bound,
                            char *why, size_t whylen, bool *skip)
{
    icc_diag d = {{0}};
    *skip = false;
    ir_graph *g = icc_onnx_load_file(path, &d);
    if (!g) {
        snprintf(why, whylen, "%s", d.msg);
        *skip = strstr(d.msg, "unsupported op") != NULL;
        return NULL;
    }
    if (o->models_dir && o->compiled) {
        /* symbolic input dims are 1, as the light models' inputs are made */
        bool pinned = false;
        for (int i = 0; i < g->ninputs; i++)
            for (int k = 0; k < g->inputs[i]->type.rank; k++)
                if (!ir_dim_is_const(g->inputs[i]->type.dims[k])) {
                    g->inputs[i]->type.dims[k] = ir_dim_const(1);
                    pinned = true;
                }
        if (pinned && ir_infer_shapes(g, &d) < 0) {
            snprintf(why, whylen, "pinning symbolic dims to 1: %s", d.msg);
            ir_graph_destroy(g);
            return NULL;
        }
    }
    if (bound) {
        /* from the last input down, so earlier indices stay put */
        int rc = 0;
        for (int i = g->ninputs - 1; i >= 0 && rc == 0; i--)
            if (bound[i])
                rc = ir_graph_bind_input(g, i, &bind[i], &d);
        if (rc == 0)
            rc = ir_infer_shapes(g, &d);
        if (rc < 0) {
            snprintf(why, whylen, "binding inputs: %s", d.msg);
            ir_graph_destroy(g);
            return NULL;
        }
    }
    if (o->passes) {
        icc_pipeline p;
        int rc = icc_pipeline_parse(o->passes, &p, &d);
        if (rc == 0) {
            /* compiled: the passes see the host target the code is built
             * for, as the driver's do (layout's block) */
            icc_pass_options po = {.target = o->compiled ? &o->host : NULL};
            rc = icc_pipeline_run(&p, g, &po, &d);
            icc_pipeline_free(&p);
        }
        if (rc < 0) {
            snprintf(why, whylen, "passes: %s", d.msg);
            ir_graph_destroy(g);
            return NULL;
        }
    }
    return g;
}

static ir_graph *load(const char *path, const options *o, char *why, size_t whylen, bool *skip)
{
    return load_bound(path, o, NULL, NULL, why, whylen, skip);
}

static bool roundtrip(const ir_graph *g, char *why, size_t whylen)
{
    size_t n1, n2;
    char *t1 = ir_print_string(g, &n1);
    if (!t1) {
        snprintf(why, whylen, "text IR: printing failed");
        return false;
    }
    icc_diag d = {{0}};
    ir_graph *g2 = ir_parse(t1, n1, "printed", &d);
    if (!g2) {
        snprintf(why, whylen, "text IR: reparse failed: %s", d.msg);
        free(t1);
        return false;
    }
    char *t2 = ir_print_string(g2, &n2);
    bool ok = t2 && n1 == n2 && !memcmp(t1, t2, n1);
    if (!ok)
        snprintf(why, whylen, "text IR: print -> parse -> print differs");
    free(t1);
    free(t2);
    ir_graph_destroy(g2);
    return ok;
}

/* A model compiled to a .so and loaded through the runtime, or (--cuda-emu)
 * its CUDA C emulated on the CPU. */
typedef struct {
    icc_model *m;
    icc_context *ctx;
    cuda_emu *emu;
} compiled_model;

/* --cuda-emu, --cuda-so (compile_model has no options to read); with
 * --cuda-pack, g_pack is its DIR, g_pack_test DIR/<the test under way>
 * and g_pack_so where the next library goes. */
static bool g_cuda_emu, g_cuda_so;
static const char *g_pack;
static char g_pack_test[4096], g_pack_so[4200];

/* Compiles g to a temporary .so and loads it. R_SKIP when some node is not
 * compiled yet (why names them), R_FAIL on any other error. */
static int compile_model(const ir_graph *g, compiled_model *cm, char *why, size_t whylen)
{
    icc_diag d = {{0}};
    cg_target *t;
    memset(cm, 0, sizeof *cm);
    if (g_cuda_emu) {
        int r = cuda_emu_build(g, &cm->emu, why, whylen);
        return r == 0 ? R_PASS : r > 0 ? R_SKIP : R_FAIL;
    }
    if (g_cuda_so) {
        int r = cuda_so_build(g, g_pack ? g_pack_so : NULL, &cm->m, &cm->ctx, why, whylen);
        return r == 0 ? R_PASS : r > 0 ? R_SKIP : R_FAIL;
    }
    if (cg_target_create(NULL, NULL, NULL, 2, &t, &d) < 0) {
        snprintf(why, whylen, "%s", d.msg);
        return R_FAIL;
    }
    LLVMModuleRef m = NULL;
    int rc = R_FAIL;
    char obj[64], so[64];
    snprintf(obj, sizeof obj, "/tmp/icc-conf-%d.o", (int)getpid());
    snprintf(so, sizeof so, "/tmp/icc-conf-%d.so", (int)getpid());
    if (cg_compile_model(g, t, NULL, &m, &d) < 0) {
        snprintf(why, whylen, "compiled: %s", d.msg);
        /* Also a dim that only shapes decide ("pin them with --shape="): at
         * -O0 nothing folds, and binding the data set's inputs lets shape
         * inference compute what the unfolded shape arithmetic gives. */
        rc = strstr(d.msg, "cannot be compiled yet") || strstr(d.msg, "not compiled yet") ||
                     strstr(d.msg, "--bind=") || strstr(d.msg, "--shape=")
                 ? R_SKIP
                 : R_FAIL;
        goto done;
    }
    const char *objs[1] = {obj}, *libs[1] = {"-lm"};
    if (cg_optimize(t, m, &d) < 0 || cg_emit_object(t, m, obj, &d) < 0 ||
        cg_link_shared(objs, 1, libs, 1, so, &d) < 0) {
        snprintf(why, whylen, "compiled: %s", d.msg);
        goto done;
    }
    if (icc_model_open(so, NULL, &cm->m) != ICC_OK || icc_context_create(cm->m, NULL, &cm->ctx) != ICC_OK) {
        snprintf(why, whylen, "compiled: %s", icc_last_error());
        goto done;
    }
    rc = R_PASS;
done:
    unlink(obj);
    unlink(so);
    if (m)
        LLVMDisposeModule(m);
    cg_target_destroy(t);
    return rc;
}

static void compiled_free(compiled_model *cm)
{
    cuda_emu_free(cm->emu);
    icc_context_destroy(cm->ctx);
    icc_model_close(cm->m);
}

/* icc_run_device with the inputs in place and fresh outputs, compared
 * byte for byte with out; nonzero (d set) when they differ or it fails. */
static int device_run_differs(const ir_graph *g, const compiled_model *cm, const ir_tensor *in, const ir_tensor *out,
                              icc_diag *d)
{
    const void **pi = calloc((size_t)g->ninputs + 1, sizeof *pi);
    void **po = calloc((size_t)g->noutputs + 1, sizeof *po);
    int bad = !pi || !po;
    for (int i = 0; !bad && i < g->ninputs; i++)
        pi[i] = in[i].data;
    for (int o = 0; !bad && o < g->noutputs; o++)
        bad = !(po[o] = calloc(1, out[o].nbytes + 1));
    if (bad)
        ir_errorf(d, "out of memory");
    else if (icc_run_device(cm->ctx, pi, po) != ICC_OK)
        bad = ir_errorf(d, "icc_run_device: %s", icc_context_error(cm->ctx));
    for (int o = 0; !bad && o < g->noutputs; o++)
        if (memcmp(po[o], out[o].data, out[o].nbytes))
            bad = ir_errorf(d, "icc_run_device: output %d differs from icc_run's", o);
    for (int o = 0; po && o < g->noutputs; o++)
        free(po[o]);
    free(pi);
    free(po);
    return bad;
}

/* Runs the compiled model; outputs are allocated from the graph's static
 * output types. */
static int run_compiled(const ir_graph *g, const compiled_model *cm, const ir_tensor *in, ir_tensor *out,
                        icc_diag *d)
{
    icc_tensor *ti = calloc((size_t)g->ninputs + 1, sizeof *ti);
    void **po = calloc((size_t)g->noutputs + 1, sizeof *po);
    int rc = -1, made = 0;
    if (!ti || !po) {
        ir_errorf(d, "out of memory");
        goto done;
    }
    for (int i = 0; i < g->ninputs; i++)
        ti[i] = (icc_tensor){in[i].data, ir_dtype_to_onnx(in[i].dtype), in[i].rank, in[i].dims};
    for (; made < g->noutputs; made++) {
        const ir_type *t = &g->outputs[made]->type;
        int64_t dims[IR_MAX_RANK];
        for (int k = 0; k < t->rank; k++)
            dims[k] = t->dims[k].v;
        if (ir_tensor_init(&out[made], t->dtype, t->rank, dims, d) < 0 ||
            !(out[made].data = calloc(1, out[made].nbytes + 1)))
            goto done;
        po[made] = out[made].data;
    }
    if (cm->emu) {
        rc = cuda_emu_run(cm->emu, in, out, d);
        goto done;
    }
    if (icc_run_tensors(cm->ctx, ti, g->ninputs, po) != ICC_OK) {
        ir_errorf(d, "compiled run: %s", icc_context_error(cm->ctx));
        goto done;
    }
    /* --cuda-so over the stand-in driver, whose device memory is host
     * memory: icc_run_device on the same buffers gives the same bytes */
    if (g_cuda_so && device_run_differs(g, cm, in, out, d))
        goto done;
    rc = 0;
done:
    if (rc < 0)
        ir_tensors_free(out, made);
    free(ti);
    free(po);
    return rc;
}

/* Loads a data set's inputs (the graph's, before any binding: n of them);
 * -1 with why filled. */
static int load_inputs(const char *setdir, int n, ir_tensor *in, char *why, size_t whylen)
{
    char path[4096];
    icc_diag d = {{0}};
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/input_%d.pb", setdir, i);
        if (icc_onnx_load_tensor_file(path, &in[i], NULL, &d) < 0) {
            snprintf(why, whylen, "%s", d.msg);
            ir_tensors_free(in, i);
            return -1;
        }
    }
    snprintf(path, sizeof path, "%s/input_%d.pb", setdir, n);
    if (access(path, F_OK) == 0) {
        snprintf(why, whylen, "data set has more inputs than the graph (%d)", n);
        ir_tensors_free(in, n);
        return -1;
    }
    return 0;
}

/* --cuda-pack: DIR/<test>/<set> for a data set's directory (made). */
static void pack_dir(const char *setdir, char *out, size_t outlen)
{
    const char *set = strrchr(setdir, '/');
    snprintf(out, outlen, "%s/%s", g_pack_test, set ? set + 1 : setdir);
    mkdir(out, 0755);
}

/* --cuda-pack: writes a data set's inputs (the graph's, in) and its
 * expected outputs as .npy files; R_PASS or R_FAIL with why filled. */
static int pack_set(const ir_graph *g, const ir_tensor *in, const char *setdir, char *why, size_t whylen)
{
    char dir[4096], path[4200], src[4096];
    icc_diag d = {{0}};
    pack_dir(setdir, dir, sizeof dir);
    for (int i = 0; i < g->ninputs; i++) {
        snprintf(path, sizeof path, "%s/in_%d.npy", dir, i);
        if (icc_npy_write(path, &in[i], &d) < 0)
            goto fail;
    }
    for (int o = 0; o < g->noutputs; o++) {
        ir_tensor want = {0};
        snprintf(src, sizeof src, "%s/output_%d.pb", setdir, o);
        snprintf(path, sizeof path, "%s/out_%d.npy", dir, o);
        int r = icc_onnx_load_tensor_file(src, &want, NULL, &d) < 0 || icc_npy_write(path, &want, &d) < 0;
        free(want.data);
        if (r)
            goto fail;
    }
    return R_PASS;
fail:
    snprintf(why, whylen, "cuda-pack: %s", d.msg);
    return R_FAIL;
}

/* Runs one data set (through cm when non-NULL, else the interpreter);
 * returns R_PASS or R_FAIL with why filled. `bound` marks the original
 * inputs (norig of them) that g has as constants: their files are read
 * but not passed. */
static int run_set(const ir_graph *g, const compiled_model *cm, const char *setdir, const options *o,
                   int norig, const bool *bound, char *why, size_t whylen)
{
    int rc = R_FAIL, nout = 0;
    ir_tensor *all = calloc((size_t)norig + 1, sizeof *all);
    ir_tensor *in = calloc((size_t)norig + 1, sizeof *in);
    ir_tensor *out = calloc((size_t)g->noutputs + 1, sizeof *out);
    ir_tensor want = {0};
    bool ran = false, loaded = false;
    char path[4096];
    icc_diag d = {{0}};
    if (!all || !in || !out) {
        snprintf(why, whylen, "out of memory");
        goto done;
    }
    if (load_inputs(setdir, norig, all, why, whylen) < 0)
        goto done;
    loaded = true;
    int nin = 0;
    for (int i = 0; i < norig; i++)
        if (!bound || !bound[i])
            in[nin++] = all[i];
    if (nin != g->ninputs) {
        snprintf(why, whylen, "data set has %d inputs, the graph %d", nin, g->ninputs);
        goto done;
    }
    if (cm && g_pack) {
        rc = pack_set(g, in, setdir, why, whylen);
        goto done;
    }
    if ((cm ? run_compiled(g, cm, in, out, &d) : ir_interp_run(g, in, out, &d)) < 0) {
        snprintf(why, whylen, "%s", d.msg);
        goto done;
    }
    ran = true;
    for (nout = 0; nout < g->noutputs; nout++) {
        snprintf(path, sizeof path, "%s/output_%d.pb", setdir, nout);
        if (icc_onnx_load_tensor_file(path, &want, NULL, &d) < 0) {
            snprintf(why, whylen, "%s", d.msg);
            goto done;
        }
        char sub[512];
        bool ok = compare(&out[nout], &want, o, sub, sizeof sub);
        free(want.data);
        want.data = NULL;
        if (!ok) {
            snprintf(why, whylen, "output %d ('%s'): %s", nout, g->outputs[nout]->name, sub);
            goto done;
        }
    }
    rc = R_PASS;
done:
    if (loaded)
        ir_tensors_free(all, norig);
    if (ran)
        ir_tensors_free(out, g->noutputs);
    free(all);
    free(in);
    free(out);
    return rc;
}

/* Compile blockers: nodes that cannot be compiled plus values whose
 * shape is not static. */
static int blockers(const ir_graph *g)
{
    int n = 0;
    for (int i = 0; i < g->nnodes; i++)
        n += !cg_can_lower(g->nodes[i]);
    for (int i = 0; i < g->nvalues; i++)
        n += !ir_type_is_static(&g->values[i]->type);
    return n;
}

/* An input that may decide shapes: small, integer. */
static bool bindable(const ir_tensor *t)
{
    return !ir_dtype_is_float(t->dtype) && t->dtype != IR_BOOL && t->numel <= 4096;
}

/* Compiled mode, for a model that does not compile as is: binds the
 * integer inputs that decide shapes (Reshape's shape, Reduce's axes,
 * Slice's starts, TopK's k...) to the data set's values, as a user would
 * with `icc --bind`, keeping each binding that removes compile blockers;
 * then compiles and runs the set. R_SKIP (why kept) when no binding helps. */
static int run_set_bound(const char *model, const ir_graph *g, const char *setdir, const options *o,
                         char *why, size_t whylen)
{
    int n = g->ninputs, rc = R_FAIL, nbound = 0;
    ir_tensor *vals = calloc((size_t)n + 1, sizeof *vals);
    bool *bound = calloc((size_t)n + 1, sizeof *bound), skip;
    char sub[2048];
    if (!vals || !bound || load_inputs(setdir, n, vals, sub, sizeof sub) < 0) {
        free(vals);
        free(bound);
        return R_SKIP;
    }
    int best = blockers(g);
    for (int i = 0; i < n; i++) {
        if (!bindable(&vals[i]))
            continue;
        bound[i] = true;
        ir_graph *gt = load_bound(model, o, vals, bound, sub, sizeof sub, &skip);
        int b = gt ? blockers(gt) : best;
        bound[i] = b < best;
        nbound += bound[i];
        best = b < best ? b : best;
        ir_graph_destroy(gt);
    }
    if (!nbound) {
        /* some inputs decide shapes only together (Slice's starts and ends) */
        for (int i = 0; i < n; i++)
            bound[i] = bindable(&vals[i]);
        ir_graph *gt = load_bound(model, o, vals, bound, sub, sizeof sub, &skip);
        for (int i = 0; i < n; i++)
            nbound += bound[i];
        if (!gt || blockers(gt) >= best) {
            memset(bound, 0, sizeof *bound * (size_t)n);
            nbound = 0;
        }
        ir_graph_destroy(gt);
    }
    ir_graph *gb = nbound ? load_bound(model, o, vals, bound, sub, sizeof sub, &skip) : NULL;
    compiled_model cm;
    if (!gb) {
        rc = R_SKIP;
    } else if ((rc = compile_model(gb, &cm, sub, sizeof sub)) == R_PASS) {
        rc = run_set(gb, &cm, setdir, o, n, bound, sub, sizeof sub);
        compiled_free(&cm);
    }
    if (gb && rc != R_PASS)
        snprintf(why, whylen, "with %d input%s bound: %s", nbound, nbound == 1 ? "" : "s", sub);
    ir_graph_destroy(gb);
    ir_tensors_free(vals, n);
    free(vals);
    free(bound);
    return rc;
}

static int run_test(const char *dir, const options *o, char *why, size_t whylen)
{
    char path[4096];
    bool skip;
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    ir_graph *g = load(path, o, why, whylen, &skip);
    if (!g)
        return skip ? R_SKIP : R_FAIL;
    int rc = R_PASS;
    if (!o->no_roundtrip && !roundtrip(g, why, whylen))
        rc = R_FAIL;
    DIR *dd = opendir(dir);
    struct dirent *e;
    char **sets = NULL;
    int nsets = 0;
    while (dd && (e = readdir(dd)))
        if (!strncmp(e->d_name, "test_data_set_", 14)) {
            sets = realloc(sets, sizeof(char *) * (size_t)(nsets + 1));
            sets[nsets++] = strdup(e->d_name);
        }
    if (dd)
        closedir(dd);
    qsort(sets, (size_t)nsets, sizeof(char *), cmp_str);
    if (rc == R_PASS && nsets == 0) {
        snprintf(why, whylen, "no test_data_set_* directory");
        rc = R_FAIL;
    }
    compiled_model cm = {0};
    bool have_cm = false, bind = false;
    if (g_pack) {
        const char *test = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
        snprintf(g_pack_test, sizeof g_pack_test, "%s/%s", g_pack, test);
        mkdir(g_pack_test, 0755);
        snprintf(g_pack_so, sizeof g_pack_so, "%s/model.so", g_pack_test);
    }
    if (rc == R_PASS && o->compiled) {
        rc = compile_model(g, &cm, why, whylen);
        have_cm = rc == R_PASS;
        bind = rc == R_SKIP && !o->no_bind;
    }
    char model[4096];
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    for (int i = 0; i < nsets && (rc == R_PASS || (bind && i == 0)); i++) {
        snprintf(path, sizeof path, "%s/%s", dir, sets[i]);
        if (g_pack && bind) {
            pack_dir(path, g_pack_so, sizeof g_pack_so);
            snprintf(g_pack_so + strlen(g_pack_so), sizeof g_pack_so - strlen(g_pack_so), "/model.so");
        }
        rc = bind ? run_set_bound(model, g, path, o, why, whylen)
                  : run_set(g, have_cm ? &cm : NULL, path, o, g->ninputs, NULL, why, whylen);
    }
    if (have_cm)
        compiled_free(&cm);
    for (int i = 0; i < nsets; i++)
        free(sets[i]);
    free(sets);
    ir_graph_destroy(g);
    return rc;
}

/* A light model: NAME.onnx with NAME_output_0.pb; inputs as ONNX's test
 * runner makes them (float32 arange(n)/n, symbolic dims taken as 1). */
static int run_model_test(const char *onnx_path, const options *o, char *why, size_t whylen)
{
    icc_diag d = {{0}};
    bool skip;
    ir_graph *g = load(onnx_path, o, why, whylen, &skip);
    if (!g)
        return skip ? R_SKIP : R_FAIL;
    int rc = R_FAIL, nin = 0;
    ir_tensor *in = calloc((size_t)g->ninputs + 1, sizeof *in);
    ir_tensor *out = calloc((size_t)g->noutputs + 1, sizeof *out), want = {0};
    bool ran = false;
    if (!o->no_roundtrip && !roundtrip(g, why, whylen))
        goto done;
    for (; nin < g->ninputs; nin++) {
        const ir_type *t = &g->inputs[nin]->type;
        int64_t dims[IR_MAX_RANK];
        for (int k = 0; k < t->rank; k++)
            dims[k] = ir_dim_is_const(t->dims[k]) ? t->dims[k].v : 1;
        if (t->dtype != IR_F32 || t->rank < 0 || ir_tensor_init(&in[nin], IR_F32, t->rank, dims, &d) < 0 ||
            !(in[nin].data = malloc(in[nin].nbytes + 1))) {
            snprintf(why, whylen, "cannot make input '%s'", g->inputs[nin]->name);
            goto done;
        }
        for (int64_t i = 0; i < in[nin].numel; i++)
            ((float *)in[nin].data)[i] = (float)((double)i / (double)in[nin].numel);
    }
    if (o->compiled) {
        compiled_model cm;
        if ((rc = compile_model(g, &cm, why, whylen)) != R_PASS)
            goto done;
        rc = R_FAIL;
        int r = run_compiled(g, &cm, in, out, &d);
        compiled_free(&cm);
        if (r < 0) {
            snprintf(why, whylen, "%s", d.msg);
            goto done;
        }
    } else if (ir_interp_run(g, in, out, &d) < 0) {
        snprintf(why, whylen, "%s", d.msg);
        goto done;
    }
    ran = true;
    char path[4096], sub[512];
    snprintf(path, sizeof path, "%.*s_output_0.pb", (int)(strlen(onnx_path) - 5), onnx_path);
    if (icc_onnx_load_tensor_file(path, &want, NULL, &d) < 0) {
        snprintf(why, whylen, "%s", d.msg);
        goto done;
    }
    if (!compare(&out[0], &want, o, sub, sizeof sub))
        snprintf(why, whylen, "output 0 ('%s'): %s", g->outputs[0]->name, sub);
    else
        rc = R_PASS;
    free(want.data);
done:
    ir_tensors_free(in, nin);
    if (ran)
        ir_tensors_free(out, g->noutputs);
    free(in);
    free(out);
    ir_graph_destroy(g);
    return rc;
}

/* Forks so that a crash or hang is one test's failure. The child sends
 * its result code and reason through a pipe. */
static int run_isolated(const char *dir, const options *o, char *why, size_t whylen)
{
    int fds[2];
    if (pipe(fds) < 0) {
        snprintf(why, whylen, "pipe failed");
        return R_FAIL;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        alarm((unsigned)o->timeout);
        char buf[2048] = "";
        int rc = o->models_dir ? run_model_test(dir, o, buf, sizeof buf)
                               : run_test(dir, o, buf, sizeof buf);
#ifdef CONF_LSAN
        /* the test has freed what it made: anything unreachable now is its
         * leak (the report, with stacks, goes to stderr) */
        if (__lsan_do_recoverable_leak_check()) {
            rc = R_CRASH;
            snprintf(buf, sizeof buf, "leaked memory (LeakSanitizer's report is on stderr)");
        }
#endif
        char msg[2100];
        int n = snprintf(msg, sizeof msg, "%d %s", rc, buf);
        if (write(fds[1], msg, (size_t)n) < 0)
            _exit(99);
        _exit(0);
    }
    close(fds[1]);
    char buf[2100];
    size_t got = 0;
    ssize_t r;
    while (got < sizeof buf - 1 && (r = read(fds[0], buf + got, sizeof buf - 1 - got)) > 0)
        got += (size_t)r;
    buf[got] = 0;
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) {
        snprintf(why, whylen, WTERMSIG(status) == SIGALRM ? "timed out after %d s" : "crashed (signal %d)",
                 WTERMSIG(status) == SIGALRM ? o->timeout : WTERMSIG(status));
        return R_CRASH;
    }
    /* the child reports and then exits 0; any other status is an early
     * exit: a sanitizer's report (on stderr), exit() or a failed write */
    if (got < 1 || WEXITSTATUS(status) != 0) {
        snprintf(why, whylen, "child exited with status %d (a sanitizer report on stderr?)",
                 WEXITSTATUS(status));
        return R_CRASH;
    }
    int rc = buf[0] - '0';
    if (rc < R_PASS || rc > R_CRASH || (got > 1 && buf[1] != ' ')) {
        snprintf(why, whylen, "child sent a malformed result");
        return R_CRASH;
    }
    snprintf(why, whylen, "%s", got > 2 ? buf + 2 : "");
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: icc-conformance --data DIR [options]\n"
            "Runs the ONNX backend node tests in DIR (onnx/backend/test/data/node) through\n"
            "the reference interpreter and compares with the expected outputs.\n"
            "  --data DIR          directory of test_* folders\n"
            "  --models DIR        instead: every NAME.onnx in DIR that has NAME_output_0.pb\n"
            "                      (the onnx package's light models), fed the inputs ONNX's\n"
            "                      runner feeds them: arange(n)/n in f32, symbolic dims = 1\n"
            "  --filter S[,S...]   only tests whose name contains one of the substrings\n"
            "  --known FILE        known failures (\"test_name reason\" per line); they do\n"
            "                      not fail the run unless they crash, time out or leak\n"
            "  --expect-skips FILE the tests expected to skip (same format): fail on a\n"
            "                      skip not listed, and on a listed test that does not skip\n"
            "  --no-skips          fail on any skip (--expect-skips with an empty list)\n"
            "  --write-skips FILE  write this run's skips to FILE in that format (a whole\n"
            "                      run only: not with --filter)\n"
            "  --rtol X --atol X   float tolerance (default 1e-3, 1e-7)\n"
            "  --timeout S         seconds per test (default 120)\n"
            "  --min-pass N        fail unless at least N tests pass\n"
            "  --no-roundtrip      skip the text IR print/parse/print check\n"
            "  --passes=PIPELINE   run this pass pipeline on each model before checking it\n"
            "  -O0 .. -O3          run that level's default pipeline\n"
            "  --compiled          compile each model (-O2 unless -O is given) to a\n"
            "                      .so and run it through the runtime; models with ops not\n"
            "                      compiled yet are skipped, naming them\n"
            "  --cuda-emu          compiled for --target=cuda instead: each kernel's CUDA C\n"
            "                      (codegen/cuda/emit.c) is built as C++ and run on the CPU,\n"
            "                      a launch's threads one after another (tests/cuda/emu.h)\n"
            "  --cuda-so           compiled for --target=cuda into a model library, run\n"
            "                      through the runtime's CUDA path over the stand-in driver\n"
            "                      (tests/cuda/fake_driver.c), which runs the CUDA C on the CPU\n"
            "  --cuda-pack DIR     compiled for --target=cuda as --cuda-so, run nowhere: each\n"
            "                      library, data set inputs and expected outputs go to DIR\n"
            "                      for tests/gpu/conformance.c on a GPU machine\n"
            "  --no-bind           compiled: never bind shape-deciding inputs to the data\n"
            "                      set's values; a model that does not compile as is skips\n"
            "  --verbose           print passing tests too\n");
}

int main(int argc, char **argv)
{
    options o = {.rtol = 1e-3, .atol = 1e-7, .timeout = 120};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--verbose")) {
            o.verbose = true;
        } else if (!strcmp(a, "--no-roundtrip")) {
            o.no_roundtrip = true;
        } else if (v && !strcmp(a, "--data")) {
            o.data_dir = v;
            i++;
        } else if (a[0] == '-' && a[1] == 'O' && a[2] >= '0' && a[2] <= '3' && !a[3]) {
            o.passes = icc_pipeline_for_level(a[2] - '0');
        } else if (!strcmp(a, "--compiled")) {
            o.compiled = true;
        } else if (!strcmp(a, "--cuda-emu")) {
            o.compiled = o.cuda_emu = g_cuda_emu = true;
        } else if (!strcmp(a, "--cuda-so")) {
            o.compiled = o.cuda_emu = g_cuda_so = true;
        } else if (v && !strcmp(a, "--cuda-pack")) {
            o.compiled = o.cuda_emu = g_cuda_so = true;
            g_pack = v;
            i++;
        } else if (!strcmp(a, "--no-bind")) {
            o.no_bind = true;
        } else if (!strncmp(a, "--passes=", 9)) {
            o.passes = a + 9;
        } else if (v && !strcmp(a, "--models")) {
            o.models_dir = v;
            i++;
        } else if (v && !strcmp(a, "--known")) {
            o.known_path = v;
            i++;
        } else if (v && !strcmp(a, "--expect-skips")) {
            o.expect_skips_path = v;
            i++;
        } else if (!strcmp(a, "--no-skips")) {
            o.no_skips = true;
        } else if (v && !strcmp(a, "--write-skips")) {
            o.write_skips_path = v;
            i++;
        } else if (v && !strcmp(a, "--rtol")) {
            o.rtol = atof(v);
            i++;
        } else if (v && !strcmp(a, "--atol")) {
            o.atol = atof(v);
            i++;
        } else if (v && !strcmp(a, "--min-pass")) {
            o.min_pass = atoi(v);
            i++;
        } else if (v && !strcmp(a, "--timeout")) {
            o.timeout = atoi(v);
            i++;
        } else if (v && !strcmp(a, "--filter")) {
            char *s = strdup(v);
            for (char *t = strtok(s, ","); t && o.nfilters < 64; t = strtok(NULL, ","))
                o.filters[o.nfilters++] = t;
            i++;
        } else {
            fprintf(stderr, "icc-conformance: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (o.no_bind && !o.compiled) {
        fprintf(stderr, "icc-conformance: --no-bind applies to --compiled runs only\n");
        return 2;
    }
    if (g_pack && (o.models_dir || (mkdir(g_pack, 0755) < 0 && errno != EEXIST))) {
        fprintf(stderr, "icc-conformance: --cuda-pack: %s\n",
                o.models_dir ? "takes --data, not --models" : strerror(errno));
        return 2;
    }
    if (o.compiled && !o.passes)
        o.passes = icc_pipeline_for_level(2);
    if (o.compiled) {
        cg_target *t;
        icc_diag d = {{0}};
        if (cg_target_create(NULL, NULL, NULL, 0, &t, &d) < 0) {
            fprintf(stderr, "icc-conformance: %s\n", d.msg);
            return 2;
        }
        o.host = *cg_target_desc(t);
        cg_target_destroy(t);
        if (o.cuda_emu && icc_target_desc_init_cuda(&o.host, 90, &d) < 0) {
            fprintf(stderr, "icc-conformance: %s\n", d.msg);
            return 2;
        }
    }
    /* compiled code needs the memory plan, last (as the driver's compile
     * step appends it: -O0 has none) */
    static char with_plan[1024];
    size_t np = o.passes ? strlen(o.passes) : 0;
    if (o.compiled && !(np >= 4 && !strcmp(o.passes + np - 4, "plan"))) {
        snprintf(with_plan, sizeof with_plan, "%s%splan", o.passes ? o.passes : "", np ? "," : "");
        o.passes = with_plan;
    }
    if (!o.data_dir == !o.models_dir) {
        usage(stderr);
        return 2;
    }
    if (o.write_skips_path && o.nfilters) {
        fprintf(stderr, "icc-conformance: --write-skips writes a whole run's skips: not with --filter\n");
        return 2;
    }
    if (o.no_skips && o.expect_skips_path) {
        fprintf(stderr, "icc-conformance: --no-skips and --expect-skips: one or the other\n");
        return 2;
    }
    const char *root = o.models_dir ? o.models_dir : o.data_dir;
    known_list known, skips;
    bool check_skips = o.expect_skips_path || o.no_skips;
    const char *skips_name = o.expect_skips_path ? o.expect_skips_path : "--no-skips";
    if (load_known(o.known_path, &known) < 0 || load_known(o.expect_skips_path, &skips) < 0)
        return 2;
    FILE *wskips = NULL;
    if (o.write_skips_path && !(wskips = fopen(o.write_skips_path, "w"))) {
        fprintf(stderr, "icc-conformance: cannot write %s\n", o.write_skips_path);
        return 2;
    }
    if (wskips)
        fprintf(wskips,
                "# Node tests that skip through icc-conformance, %s, pipeline:\n"
                "#   %s\n"
                "# each with the reason it gave: an op the frontend does not know, or (compiled)\n"
                "# one codegen does not compile yet. Given as --expect-skips, the run fails on a\n"
                "# skip not listed here and on a listed test that no longer skips. Remove a test\n"
                "# when it starts to run; add one only when it is new, never to hide a regression.\n"
                "# Written by --write-skips; scripts/update-skips.sh rewrites all of them.\n",
                o.compiled ? (o.no_bind ? "compiled without binding inputs" : "compiled") : "interpreted",
                o.passes ? o.passes : "(none)");
    DIR *dd = opendir(root);
    if (!dd) {
        fprintf(stderr, "icc-conformance: cannot open %s\n", root);
        return 2;
    }
    char **tests = NULL;
    int ntests = 0;
    struct dirent *e;
    while ((e = readdir(dd))) {
        bool want = o.models_dir ? has_output_file(root, e->d_name) : !strncmp(e->d_name, "test_", 5);
        if (want && matches(&o, e->d_name)) {
            tests = realloc(tests, sizeof(char *) * (size_t)(ntests + 1));
            tests[ntests++] = strdup(e->d_name);
        }
    }
    closedir(dd);
    qsort(tests, (size_t)ntests, sizeof(char *), cmp_str);

    int passed = 0, failed = 0, skipped = 0, unexpected = 0, fixed = 0, known_failed = 0;
    int new_skips = 0, unskipped = 0, stale = 0;
    bool *seen = calloc((size_t)skips.n + 1, sizeof *seen);
    char **news = calloc((size_t)ntests + 1, sizeof *news), **unsk = calloc((size_t)ntests + 1, sizeof *unsk);
    for (int i = 0; i < ntests; i++) {
        char dir[4096], why[2048] = "";
        snprintf(dir, sizeof dir, "%s/%s", root, tests[i]);
        int rc = run_isolated(dir, &o, why, sizeof why);
        int k = known_index(&known, tests[i]), s = known_index(&skips, tests[i]);
        if (s >= 0) {
            seen[s] = true;
            if (rc != R_SKIP)
                unsk[unskipped++] = tests[i];
        } else if (rc == R_SKIP && check_skips) {
            news[new_skips++] = tests[i];
        }
        if (rc == R_SKIP && wskips) {
            /* the reason without this machine's path to the model */
            const char *r = why;
            size_t nd = strlen(dir);
            if (!strncmp(r, dir, nd) && strstr(r, ": "))
                r = strstr(r, ": ") + 2;
            fprintf(wskips, "%s  %.160s\n", tests[i], r);
        }
        if (rc == R_PASS) {
            passed++;
            if (k >= 0) {
                fixed++;
                printf("PASS %s (listed as a known failure: remove it from the list)\n", tests[i]);
            } else if (o.verbose) {
                printf("PASS %s\n", tests[i]);
            }
        } else if (rc == R_SKIP) {
            skipped++;
            printf("SKIP %s: %s%s\n", tests[i], why, check_skips && s < 0 ? " [not an expected skip]" : "");
        } else if (rc == R_CRASH) {
            failed++;
            unexpected++;
            printf("FAIL %s: %s%s\n", tests[i], why,
                   k >= 0 ? " [listed as a known failure, but only an ordinary failure is excused]" : "");
        } else {
            failed++;
            if (k >= 0) {
                known_failed++;
                printf("FAIL %s: %s [known: %s]\n", tests[i], why, known.reasons[k]);
            } else {
                unexpected++;
                printf("FAIL %s: %s\n", tests[i], why);
            }
        }
        if (s >= 0 && rc != R_SKIP)
            printf("     %s: listed as an expected skip, but it %s now\n", tests[i],
                   rc == R_PASS ? "passes" : "runs (and fails)");
        fflush(stdout);
    }
    if (wskips && fclose(wskips) != 0) {
        fprintf(stderr, "icc-conformance: writing %s failed\n", o.write_skips_path);
        unexpected++;
    }
    for (int i = 0; i < skips.n; i++)
        if (!seen[i] && matches(&o, skips.names[i])) {
            if (!stale++)
                printf("expected skips (%s): listed, but no such test in %s:\n", skips_name, root);
            printf("  %s\n", skips.names[i]);
        }
    if (new_skips) {
        printf("expected skips (%s): %d test%s skipped that %s not listed (newly skipped):\n", skips_name,
               new_skips, new_skips == 1 ? "" : "s", new_skips == 1 ? "is" : "are");
        for (int i = 0; i < new_skips; i++)
            printf("  %s\n", news[i]);
    }
    if (unskipped) {
        printf("expected skips (%s): %d listed test%s no longer skip%s (remove %s from the list):\n",
               skips_name, unskipped, unskipped == 1 ? "" : "s", unskipped == 1 ? "s" : "",
               unskipped == 1 ? "it" : "them");
        for (int i = 0; i < unskipped; i++)
            printf("  %s\n", unsk[i]);
    }
    printf("%s (%s): %d known failures, %d unexpected failures, %d fixed\n",
           o.models_dir ? "models" : "conformance", o.compiled ? "compiled" : "interpreter", known_failed,
           unexpected, fixed);
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    for (int i = 0; i < ntests; i++)
        free(tests[i]);
    free(tests);
    for (int i = 0; i < known.n; i++) {
        free(known.names[i]);
        free(known.reasons[i]);
    }
    free(known.names);
    free(known.reasons);
    for (int i = 0; i < skips.n; i++) {
        free(skips.names[i]);
        free(skips.reasons[i]);
    }
    free(skips.names);
    free(skips.reasons);
    free(seen);
    free(news);
    free(unsk);
    if (passed < o.min_pass)
        printf("conformance: only %d passed, at least %d required\n", passed, o.min_pass);
    bool bad = unexpected || fixed || ntests == 0 || passed < o.min_pass;
    return (bad || new_skips || unskipped || stale) ? 1 : 0;
}
