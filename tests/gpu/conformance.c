/* conformance.c - the ONNX node tests on a GPU: runs what
 * `icc-conformance --cuda-pack DIR` wrote (each test's CUDA model library,
 * each data set's inputs and expected outputs as .npy) through the
 * runtime's CUDA path over the real driver, and compares as
 * icc-conformance does: floats |got - want| <= atol + rtol*|want| (NaN
 * matches NaN, an infinity only itself), integers and bools exactly, dtype
 * and shape exactly.
 *
 * It needs no compiler, only the runtime and libc (the GPU machine has
 * neither LLVM nor protobuf-c): the build's icc-gpu-conformance, which
 * tests/gpu/prepare.sh copies into the pack.
 *
 * With ICC_GPU_SELFTEST set (and ICC_CUDA_DRIVER the stand-in driver,
 * tests/cuda/fake_driver.c), each library runs over the emulation that
 * `ICC_GPU_SELFTEST=1 icc-conformance --cuda-pack` put beside it: how
 * scripts/test.sh keeps this program working where there is no GPU.
 *
 * Usage: icc-gpu-conformance DIR [--from N] [--state FILE] [--rtol X] [--atol X]
 * Prints "ok TEST (ms)" or "FAIL TEST: reason" per test, in name order,
 * from the N-th (0-based). A failed run leaves the CUDA context in doubt
 * (an illegal address poisons it for the process), so after one the
 * program stops with status 3; --state FILE holds the index of the test
 * under way and its name, so that a caller (tests/gpu/run.sh) goes on
 * from the next after a stop, a crash or a test that hangs (30 s,
 * SIGALRM). Status 0 when every test was visited.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "icc/runtime.h"
#include "ir/ir.h"
#include "runtime/npy.h"

#define MAX_IO 64

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of dir whose name starts with prefix, sorted (*n of them). */
static char **list(const char *dir, const char *prefix, int *n)
{
    DIR *dd = opendir(dir);
    struct dirent *e;
    char **v = NULL;
    *n = 0;
    while (dd && (e = readdir(dd)))
        if (e->d_name[0] != '.' && !strncmp(e->d_name, prefix, strlen(prefix))) {
            char **nv = realloc(v, sizeof *v * (size_t)(*n + 1));
            if (!nv)
                break;
            v = nv;
            v[(*n)++] = strdup(e->d_name);
        }
    if (dd)
        closedir(dd);
    if (v)
        qsort(v, (size_t)*n, sizeof *v, cmp_str);
    return v;
}

static void list_free(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static bool compare(const ir_tensor *got, const ir_tensor *want, double rtol, double atol, char *why,
                    size_t whylen)
{
    for (int64_t i = 0; i < got->numel; i++) {
        if (ir_dtype_is_float(got->dtype)) {
            double g = ir_tensor_getf(got, i), w = ir_tensor_getf(want, i);
            if (isnan(w) ? isnan(g) : (isinf(w) ? g == w : fabs(g - w) <= atol + rtol * fabs(w)))
                continue;
            snprintf(why, whylen, "element %lld is %.9g, expected %.9g", (long long)i, g, w);
            return false;
        }
        int64_t g = ir_tensor_geti(got, i), w = ir_tensor_geti(want, i);
        if (g != w) {
            snprintf(why, whylen, "element %lld is %lld, expected %lld", (long long)i, (long long)g, (long long)w);
            return false;
        }
    }
    return true;
}

/* One data set through the library at so: 0, or -1 with why filled
 * (*run_failed when the run itself failed, not the comparison). */
static int run_set(const char *so, const char *setdir, double rtol, double atol, bool *run_failed, char *why,
                   size_t whylen)
{
    icc_model *m = NULL;
    icc_context *ctx = NULL;
    ir_tensor in[MAX_IO] = {{0}}, want[MAX_IO] = {{0}};
    void *got[MAX_IO] = {0};
    icc_tensor ti[MAX_IO];
    int nin = 0, nout = 0, rc = -1;
    char path[4096];
    icc_diag d = {{0}};
    *run_failed = false;
    const char *st = getenv("ICC_GPU_SELFTEST");
    if (st && *st) {
        /* over the stand-in driver (tests/cuda/fake_driver.c): the
         * library's CUDA C built for the CPU, packed beside it */
        const char *slash = strrchr(so, '/');
        snprintf(path, sizeof path, "%.*semu.so", slash ? (int)(slash - so + 1) : 0, so);
        setenv("ICC_FAKE_CUDA_EMU", path, 1);
    }
    if (icc_model_open(so, NULL, &m) != ICC_OK || icc_context_create(m, NULL, &ctx) != ICC_OK) {
        snprintf(why, whylen, "%s", icc_last_error());
        *run_failed = true;
        goto done;
    }
    const icc_model_desc *desc = icc_model_describe(m);
    for (; nin < desc->ninputs && nin < MAX_IO; nin++) {
        snprintf(path, sizeof path, "%s/in_%d.npy", setdir, nin);
        if (icc_npy_read(path, &in[nin], &d) < 0) {
            snprintf(why, whylen, "%s", d.msg);
            goto done;
        }
        ti[nin] = (icc_tensor){in[nin].data, ir_dtype_to_onnx(in[nin].dtype), in[nin].rank, in[nin].dims};
    }
    for (; nout < desc->noutputs && nout < MAX_IO; nout++) {
        snprintf(path, sizeof path, "%s/out_%d.npy", setdir, nout);
        if (icc_npy_read(path, &want[nout], &d) < 0) {
            snprintf(why, whylen, "%s", d.msg);
            goto done;
        }
        const icc_tensor_desc *od = icc_model_output(m, nout);
        bool same = od->dtype == ir_dtype_to_onnx(want[nout].dtype) && od->rank == want[nout].rank;
        for (int k = 0; same && k < od->rank; k++)
            same = od->dims[k] == want[nout].dims[k];
        if (!same) {
            snprintf(why, whylen, "output %d ('%s'): dtype or shape differs from the expected", nout, od->name);
            nout++;
            goto done;
        }
        got[nout] = calloc(1, want[nout].nbytes + 1);
    }
    if (icc_run_tensors(ctx, ti, nin, got) != ICC_OK) {
        snprintf(why, whylen, "%s", icc_context_error(ctx));
        *run_failed = true;
        goto done;
    }
    for (int o = 0; o < nout; o++) {
        ir_tensor g = want[o];
        g.data = got[o];
        char sub[512];
        if (!compare(&g, &want[o], rtol, atol, sub, sizeof sub)) {
            snprintf(why, whylen, "output %d ('%s'): %s", o, icc_model_output(m, o)->name, sub);
            goto done;
        }
    }
    rc = 0;
done:
    for (int i = 0; i < nin; i++)
        free(in[i].data);
    for (int o = 0; o < nout; o++) {
        free(want[o].data);
        free(got[o]);
    }
    icc_context_destroy(ctx);
    icc_model_close(m);
    return rc;
}

/* Holds the device's primary context for the whole run: each test's
 * context retains and releases it, and without another holder the driver
 * would tear it down and build it again per test (170 ms each on an H100).
 * Best effort: the runtime reports whatever fails here by itself. */
static void hold_primary_context(void)
{
    const char *path = getenv("ICC_CUDA_DRIVER");
    void *lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return;
    int (*init)(unsigned) = (int (*)(unsigned))dlsym(lib, "cuInit");
    int (*get)(int *, int) = (int (*)(int *, int))dlsym(lib, "cuDeviceGet");
    int (*retain)(void **, int) = (int (*)(void **, int))dlsym(lib, "cuDevicePrimaryCtxRetain");
    int dev;
    void *ctx;
    const char *ord = getenv("ICC_CUDA_DEVICE");
    if (init && get && retain && init(0) == 0 && get(&dev, ord ? atoi(ord) : 0) == 0)
        (void)retain(&ctx, dev); /* released when the process ends */
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    const char *root = NULL, *state = NULL;
    double rtol = 1e-3, atol = 1e-7;
    int from = 0;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v && !strcmp(argv[i], "--from"))
            from = atoi(argv[++i]);
        else if (v && !strcmp(argv[i], "--state"))
            state = argv[++i];
        else if (v && !strcmp(argv[i], "--rtol"))
            rtol = atof(argv[++i]);
        else if (v && !strcmp(argv[i], "--atol"))
            atol = atof(argv[++i]);
        else if (argv[i][0] != '-' && !root)
            root = argv[i];
        else {
            fprintf(stderr, "usage: icc-gpu-conformance DIR [--from N] [--state FILE] [--rtol X] [--atol X]\n");
            return 2;
        }
    }
    if (!root) {
        fprintf(stderr, "usage: icc-gpu-conformance DIR [--from N] [--state FILE] [--rtol X] [--atol X]\n");
        return 2;
    }
    hold_primary_context();
    int ntests;
    char **tests = list(root, "test_", &ntests);
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int t = from; t < ntests; t++) {
        if (state) {
            FILE *f = fopen(state, "w");
            if (f) {
                fprintf(f, "%d %s\n", t, tests[t]);
                fclose(f);
            }
        }
        alarm(30); /* a test that hangs ends the process (SIGALRM): the caller goes on */
        char dir[2048], so[4096], setdir[3072], why[1024] = "";
        snprintf(dir, sizeof dir, "%s/%s", root, tests[t]);
        int nsets;
        char **sets = list(dir, "test_data_set_", &nsets);
        bool ok = nsets > 0, run_failed = false;
        if (!ok)
            snprintf(why, sizeof why, "no data set was packed");
        double t0 = now_ms();
        for (int s = 0; ok && s < nsets; s++) {
            snprintf(setdir, sizeof setdir, "%s/%s", dir, sets[s]);
            snprintf(so, sizeof so, "%s/model.so", setdir);
            if (!exists(so))
                snprintf(so, sizeof so, "%s/model.so", dir);
            ok = run_set(so, setdir, rtol, atol, &run_failed, why, sizeof why) == 0;
        }
        list_free(sets, nsets);
        if (ok)
            printf("ok %s (%.1f ms)\n", tests[t], now_ms() - t0);
        else
            printf("FAIL %s: %s\n", tests[t], why);
        if (run_failed) {
            list_free(tests, ntests);
            return 3;
        }
    }
    list_free(tests, ntests);
    return 0;
}
