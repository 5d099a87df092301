/* test_runtime.c - the runtime (runtime/) against hand-written models.
 *
 * libtoy_model.so (tests/runtime/toy_model.c) plays a compiled model:
 * y = 2*x + 1 + w[n] over x: f32 [N, 4], w: f32 [N]. Expected values are
 * computed here independently. Covers loading and its errors, input
 * checks, arena growth, CPU-feature and ABI checks, many threads on one
 * model, create/run/destroy cycles (leak-checked in the ASan build), the
 * caller's allocator, ICC_NUM_THREADS and ICC_SPIN_US, idle workers, external weights.
 */
#define _GNU_SOURCE
#include "icc/runtime.h"
#include "runtime/cpu.h"
#include "runtime/cuda_plan.h"
#include "check_main.h"
#include "host_cpu.h"

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef TOY_MODEL_PATH
#error "TOY_MODEL_PATH is set by tests/CMakeLists.txt"
#endif

static icc_model *open_toy(void)
{
    icc_model *m = NULL;
    icc_status st = icc_model_open(TOY_MODEL_PATH, NULL, &m);
    ck_assert_msg(st == ICC_OK, "open: %s", icc_last_error());
    return m;
}

/* x[i] = i * 0.25 - 3, w[n] = n * 0.5. */
static void fill(float *x, float *w, int64_t n)
{
    for (int64_t i = 0; i < n * 4; i++)
        x[i] = (float)i * 0.25f - 3.0f;
    for (int64_t r = 0; r < n; r++)
        w[r] = (float)r * 0.5f;
}

static icc_status run_toy(icc_context *ctx, int64_t n, float *y)
{
    float *x = malloc(sizeof(float) * (size_t)(n * 4 + 1)), *w = malloc(sizeof(float) * (size_t)(n + 1));
    fill(x, w, n);
    int64_t xd[2] = {n, 4}, wd[1] = {n};
    const int64_t *dims[2] = {xd, wd};
    const void *in[2] = {x, w};
    void *out[1] = {y};
    icc_status st = icc_run(ctx, in, dims, out);
    free(x);
    free(w);
    return st;
}

static void check_y(const float *y, int64_t n)
{
    for (int64_t r = 0; r < n; r++)
        for (int k = 0; k < 4; k++) {
            float x = (float)(r * 4 + k) * 0.25f - 3.0f;
            float want = 2.0f * x + 1.0f + (float)r * 0.5f;
            ck_assert_msg(y[r * 4 + k] == want, "y[%lld][%d] = %g, want %g", (long long)r, k,
                          y[r * 4 + k], want);
        }
}

START_TEST(open_describe_run_close)
{
    icc_model *m = open_toy();
    const icc_model_desc *d = icc_model_describe(m);
    ck_assert_int_eq(d->abi_version, ICC_ABI_VERSION);
    ck_assert_str_eq(d->name, "model");
    ck_assert_int_eq(d->ninputs, 2);
    ck_assert_int_eq(d->nsymbols, 1);
    ck_assert_str_eq(icc_model_input(m, 0)->name, "x");
    ck_assert_ptr_null(icc_model_input(m, 2));
    ck_assert_int_eq(icc_model_find_input(m, "w"), 1);
    ck_assert_int_eq(icc_model_find_output(m, "y"), 0);
    ck_assert_int_eq(icc_model_find_input(m, "nope"), -1);
    int64_t xd[2] = {7, 4}, wd[1] = {7}, yd[2] = {0, 0};
    const int64_t *dims[2] = {xd, wd};
    ck_assert_int_eq(icc_output_dims(m, dims, 0, yd), ICC_OK);
    ck_assert(yd[0] == 7 && yd[1] == 4);
    icc_context *ctx;
    ck_assert_int_eq(icc_context_create(m, NULL, &ctx), ICC_OK);
    float y[12];
    ck_assert_msg(run_toy(ctx, 3, y) == ICC_OK, "%s", icc_context_error(ctx));
    check_y(y, 3);
    ck_assert_str_eq(icc_context_error(ctx), "");
    icc_context_destroy(ctx);
    icc_model_close(m);
}
END_TEST

/* Counts calls; fails the call numbered fail_at (0 = never). */
typedef struct counter {
    int allocs, frees, fail_at;
    size_t max_bytes;
} counter;

static void *count_alloc(void *user, size_t bytes, size_t align)
{
    counter *c = user;
    if (++c->allocs == c->fail_at)
        return NULL;
    if (bytes > c->max_bytes)
        c->max_bytes = bytes;
    if (align < sizeof(void *))
        align = sizeof(void *);
    return aligned_alloc(align, (bytes + align - 1) / align * align);
}

static void count_free(void *user, void *p)
{
    ((counter *)user)->frees++;
    free(p);
}

START_TEST(arena_grows_with_symbols)
{
    icc_model *m = open_toy();
    counter c = {0};
    icc_allocator a = {count_alloc, count_free, &c};
    icc_context *ctx;
    ck_assert_int_eq(icc_context_create(m, &a, &ctx), ICC_OK);
    icc_context_set_threads(ctx, 3);
    static const int64_t ns[] = {1, 1000, 5, 0, 100000, 7, 100000};
    float *y = malloc(sizeof(float) * 100000 * 4);
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        int before = c.allocs;
        ck_assert_msg(run_toy(ctx, ns[i], y) == ICC_OK, "N=%lld: %s", (long long)ns[i],
                      icc_context_error(ctx));
        check_y(y, ns[i]);
        if (i == 1 || i == 4) /* grew: a new arena of at least N*4 floats */
            ck_assert(c.allocs > before && c.max_bytes >= (size_t)ns[i] * 16);
        else if (i >= 2)      /* fits: nothing allocated */
            ck_assert_int_eq(c.allocs, before);
    }
    free(y);
    icc_context_destroy(ctx);
    ck_assert_int_gt(c.allocs, 0);
    ck_assert_int_eq(c.allocs, c.frees);
    icc_model_close(m);
}
END_TEST

static void expect(icc_status got, icc_status want, const char *msg, const char *a, const char *b)
{
    ck_assert_msg(got == want, "status %d, want %d (%s)", got, want, msg);
    ck_assert_msg(strstr(msg, a) && (!b || strstr(msg, b)), "message '%s' lacks '%s'/'%s'", msg, a,
                  b ? b : "");
}

START_TEST(bad_inputs_are_errors)
{
    icc_model *m = open_toy();
    icc_context *ctx;
    ck_assert_int_eq(icc_context_create(m, NULL, &ctx), ICC_OK);
    float x[40] = {0}, w[10] = {0}, y[40];
    const void *in[2] = {x, w};
    void *out[1] = {y};
    int64_t xd[2] = {3, 5}, wd[1] = {3};
    const int64_t *dims[2] = {xd, wd};
    expect(icc_run(ctx, in, dims, out), ICC_ERR_SHAPE, icc_context_error(ctx), "'x' dim 1", "4");
    xd[1] = 4, wd[0] = 2;
    expect(icc_run(ctx, in, dims, out), ICC_ERR_SHAPE, icc_context_error(ctx), "'w' dim 0", "N");
    ck_assert_str_eq(icc_last_error(), icc_context_error(ctx));
    xd[0] = -2;
    expect(icc_run(ctx, in, dims, out), ICC_ERR_SHAPE, icc_context_error(ctx), "'x' dim 0", ">= 0");
    expect(icc_run(ctx, in, NULL, out), ICC_ERR_INVALID, icc_context_error(ctx), "'x'", "dims");
    xd[0] = 3, wd[0] = 3;
    in[1] = NULL;
    expect(icc_run(ctx, in, dims, out), ICC_ERR_INVALID, icc_context_error(ctx), "'w'", "NULL");
    in[1] = w;
    /* rank and dtype need buffers that say theirs */
    icc_tensor ts[2] = {{x, ICC_F32, 1, xd}, {w, ICC_F32, 1, wd}};
    expect(icc_run_tensors(ctx, ts, 2, out), ICC_ERR_SHAPE, icc_context_error(ctx), "'x'", "rank 1");
    ts[0].rank = 2, ts[1].dtype = ICC_F64;
    expect(icc_run_tensors(ctx, ts, 2, out), ICC_ERR_DTYPE, icc_context_error(ctx), "'w'", "float64");
    expect(icc_run_tensors(ctx, ts, 1, out), ICC_ERR_INVALID, icc_context_error(ctx), "2 inputs", NULL);
    ts[1].dtype = ICC_F32;
    ck_assert_int_eq(icc_run_tensors(ctx, ts, 2, out), ICC_OK);
    ck_assert(y[0] == 1.0f && y[11] == 1.0f);
    /* a bad run leaves the context usable */
    ck_assert_int_eq(run_toy(ctx, 9, y), ICC_OK);
    check_y(y, 9);
    icc_context_destroy(ctx);
    icc_model_close(m);
}
END_TEST

START_TEST(bad_files_are_errors)
{
    icc_model *m = (icc_model *)1;
    expect(icc_model_open(TOY_MODEL_PATH, "nosuch", &m), ICC_ERR_ABI, icc_last_error(),
           "nosuch_model", "not an icc model");
    ck_assert_ptr_null(m);
    expect(icc_model_open("/nonexistent/dir/model.so", NULL, &m), ICC_ERR_IO, icc_last_error(),
           "/nonexistent/dir/model.so", NULL);
    expect(icc_model_open(TOY_MODEL_PATH, "bad-prefix", &m), ICC_ERR_INVALID, icc_last_error(),
           "bad-prefix", NULL);
    char dir[] = "/tmp/icc-rt-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/garbage.so", dir);
    FILE *f = fopen(path, "w");
    fputs("this is not an ELF file\n", f);
    fclose(f);
    expect(icc_model_open(path, NULL, &m), ICC_ERR_ABI, icc_last_error(), path, "not a loadable");
    /* a bare name is relative to the working directory, not searched */
    ck_assert_int_eq(chdir(dir), 0);
    expect(icc_model_open("garbage.so", NULL, &m), ICC_ERR_ABI, icc_last_error(), "garbage.so", NULL);
    unlink(path);
    rmdir(dir);
}
END_TEST

START_TEST(missing_cpu_feature_is_an_error)
{
    icc_model *m = NULL;
    expect(icc_model_open(TOY_MODEL_PATH, "toy2", &m), ICC_ERR_CPU, icc_last_error(),
           "avx512-imaginary", "toy2_model");
    ck_assert_ptr_null(m);
    ck_assert_int_eq(icc_cpu_has("avx512-imaginary"), 0);
    ck_assert_int_eq(icc_cpu_has(NULL), 0);
    /* the descriptor edited as a test would: a real feature made absent */
    void *dl = dlopen(TOY_MODEL_PATH, RTLD_NOW);
    const icc_model_desc *d = dlsym(dl, "model_model");
    icc_model_desc edited = *d;
    edited.cpu_features = " -avx2, +amx-imaginary";
    expect(icc_model_from_desc(&edited, &m), ICC_ERR_CPU, icc_last_error(), "amx-imaginary", NULL);
    edited.cpu_features = "-avx512-imaginary";  /* turned off: not required */
    ck_assert_int_eq(icc_model_from_desc(&edited, &m), ICC_OK);
    icc_model_close(m);
    dlclose(dl);
}
END_TEST

START_TEST(abi_mismatch_is_an_error)
{
    icc_model *m = NULL;
    expect(icc_model_open(TOY_MODEL_PATH, "toy3", &m), ICC_ERR_ABI, icc_last_error(), "999", NULL);
    void *dl = dlopen(TOY_MODEL_PATH, RTLD_NOW);
    icc_model_desc edited = *(const icc_model_desc *)dlsym(dl, "model_model");
    edited.desc_size = 16;
    expect(icc_model_from_desc(&edited, &m), ICC_ERR_ABI, icc_last_error(), "16 bytes", NULL);
    edited.desc_size = sizeof edited;
    edited.arena_size = NULL;
    expect(icc_model_from_desc(&edited, &m), ICC_ERR_ABI, icc_last_error(), "arena_size", NULL);
    dlclose(dl);
}
END_TEST

/* Derived symbols (icc_model_desc.derived): the runtime computes them from
 * the input-bound ones, refuses a negative one naming it and the node of
 * its message (one marked ICC_SYM_IN_SUBGRAPH counts as 0), and refuses a
 * table whose definitions name later symbols or divide by 0. The toy's
 * descriptor gets two derived symbols after N, its output's dim 0 named by
 * the second (icc_output_dims only: the toy's kernels do not read them). */
START_TEST(derived_symbols)
{
    void *dl = dlopen(TOY_MODEL_PATH, RTLD_NOW);
    icc_model_desc edited = *(const icc_model_desc *)dlsym(dl, "model_model");
    ck_assert_int_eq(edited.nsymbols, 1);
    const char *syms[3] = {edited.symbols[0], "N+2", "floor((N+2)/3)"};
    icc_sym_def defs[2] = {{.op = ICC_SYM_ADD, .a_sym = 0, .b_sym = -1, .b = 2},
                           {.op = ICC_SYM_FLOORDIV, .a_sym = 1, .b_sym = -1, .b = 3}};
    icc_tensor_desc out = edited.outputs[0];
    const char *names[2] = {syms[2], NULL};
    int64_t odims[2] = {-1, out.dims[1]};
    out.dims = odims;
    out.dim_names = names;
    edited.outputs = &out;
    edited.symbols = syms;
    edited.nsymbols = 3;
    edited.derived = defs;
    edited.nderived = 2;
    icc_model *m = NULL;
    ck_assert_msg(icc_model_from_desc(&edited, &m) == ICC_OK, "%s", icc_last_error());
    int64_t xd[2] = {7, 4}, wd[1] = {7}, yd[2] = {0, 0};
    const int64_t *dims[2] = {xd, wd};
    ck_assert_int_eq(icc_output_dims(m, dims, 0, yd), ICC_OK);
    ck_assert(yd[0] == 3 && yd[1] == 4);   /* floor((7 + 2) / 3) */
    icc_model_close(m);
    defs[0].b = -10;                        /* N-10 < 0 for N = 7 */
    ck_assert_int_eq(icc_model_from_desc(&edited, &m), ICC_OK);
    expect(icc_output_dims(m, dims, 0, yd), ICC_ERR_SHAPE, icc_last_error(), "=7)", "negative");
    icc_model_close(m);
    /* the message names the node that first gives the dim */
    const char *msgs[2] = {"node 'c' (Conv)", "node 'p' (MaxPool)"};
    edited.messages = msgs;
    edited.nmessages = 2;
    defs[0].message = 2;
    ck_assert_int_eq(icc_model_from_desc(&edited, &m), ICC_OK);
    expect(icc_output_dims(m, dims, 0, yd), ICC_ERR_SHAPE, icc_last_error(), "node 'p' (MaxPool): the input dims",
           "'N+2' negative");
    icc_model_close(m);
    /* a symbol only a subgraph uses counts as 0 when negative: the branch
     * may not run (its kernels check it where it does) */
    defs[0].op |= ICC_SYM_IN_SUBGRAPH;
    defs[1].op |= ICC_SYM_IN_SUBGRAPH;
    ck_assert_int_eq(icc_model_from_desc(&edited, &m), ICC_OK);
    ck_assert_int_eq(icc_output_dims(m, dims, 0, yd), ICC_OK);
    ck_assert(yd[0] == 0 && yd[1] == 4);    /* floor(0 / 3): N-10 counted as 0 */
    icc_model_close(m);
    defs[0].op = ICC_SYM_MUL | 0x200;       /* an unknown flag */
    expect(icc_model_from_desc(&edited, &m), ICC_ERR_ABI, icc_last_error(), "bad definition", NULL);
    defs[0].op = ICC_SYM_ADD;
    defs[1].op = ICC_SYM_FLOORDIV;
    defs[0].message = 3;                    /* past the message table */
    expect(icc_model_from_desc(&edited, &m), ICC_ERR_ABI, icc_last_error(), "bad definition", NULL);
    defs[0].message = 0;
    defs[0].b = 2;
    defs[1].b = 0;                          /* a division by 0 */
    expect(icc_model_from_desc(&edited, &m), ICC_ERR_ABI, icc_last_error(), "bad definition", NULL);
    defs[1].b = 3;
    defs[0].a_sym = 2;                      /* a later symbol */
    expect(icc_model_from_desc(&edited, &m), ICC_ERR_ABI, icc_last_error(), "bad definition", NULL);
    defs[0].a_sym = 0;
    /* a descriptor too short for the field: its extra symbols name no input */
    edited.desc_size = (uint32_t)offsetof(icc_model_desc, derived);
    expect(icc_model_from_desc(&edited, &m), ICC_ERR_ABI, icc_last_error(), "N+2", "not a dim of any input");
    dlclose(dl);
}
END_TEST

/* The kernel table came after the first descriptors of ABI 1: one of that
 * size still loads (its kernels are not read), and one that has a table
 * gets per-context counters. */
static const icc_kernel_info toy_kernels[2] = {{"a+b", "MatMul+Relu", 10, 20}, {"c", "Softmax", 1, 2}};

START_TEST(profile_counters_and_old_descriptors)
{
    void *dl = dlopen(TOY_MODEL_PATH, RTLD_NOW);
    icc_model_desc edited = *(const icc_model_desc *)dlsym(dl, "model_model");
    icc_model *m = NULL;
    icc_context *ctx = NULL;
    uint64_t runs = 7;
    ck_assert_int_eq(icc_model_from_desc(&edited, &m), ICC_OK);
    ck_assert_int_eq(icc_model_kernels(m, NULL), 0);
    ck_assert_int_eq(icc_context_create(m, NULL, &ctx), ICC_OK);
    ck_assert(icc_context_profile(ctx, &runs) == NULL && runs == 0);
    icc_context_profile_reset(ctx);   /* a no-op */
    icc_context_destroy(ctx);
    icc_model_close(m);

    edited.desc_size = (uint32_t)offsetof(icc_model_desc, kernels);
    edited.nkernels = 99;   /* past desc_size: never read */
    ck_assert_int_eq(icc_model_from_desc(&edited, &m), ICC_OK);
    ck_assert_int_eq(icc_model_kernels(m, NULL), 0);
    icc_model_close(m);

    edited.desc_size = sizeof edited;
    edited.kernels = NULL;
    expect(icc_model_from_desc(&edited, &m), ICC_ERR_ABI, icc_last_error(), "bad kernel table", NULL);
    edited.kernels = toy_kernels;
    edited.nkernels = 2;
    const icc_kernel_info *k = NULL;
    ck_assert_int_eq(icc_model_from_desc(&edited, &m), ICC_OK);
    ck_assert_int_eq(icc_model_kernels(m, &k), 2);
    ck_assert(k == toy_kernels);
    /* no kind table: every kernel f32; out of range: -1 */
    ck_assert_int_eq(icc_model_kernel_kind(m, 0), ICC_KERNEL_F32);
    ck_assert_int_eq(icc_model_kernel_kind(m, 1), ICC_KERNEL_F32);
    ck_assert_int_eq(icc_model_kernel_kind(m, 2), -1);
    ck_assert_int_eq(icc_model_kernel_kind(m, -1), -1);
    ck_assert_int_eq(icc_model_kernel_kind(NULL, 0), -1);
    icc_model_close(m);
    /* the kinds (appended later): read only when desc_size covers them */
    static const int32_t kinds[2] = {ICC_KERNEL_INT8_DOT, ICC_KERNEL_BF16_DOT};
    edited.kernel_kinds = kinds;
    ck_assert_int_eq(icc_model_from_desc(&edited, &m), ICC_OK);
    ck_assert_int_eq(icc_model_kernel_kind(m, 0), ICC_KERNEL_INT8_DOT);
    ck_assert_int_eq(icc_model_kernel_kind(m, 1), ICC_KERNEL_BF16_DOT);
    icc_model_close(m);
    edited.desc_size = (uint32_t)offsetof(icc_model_desc, kernel_kinds);
    ck_assert_int_eq(icc_model_from_desc(&edited, &m), ICC_OK);
    ck_assert_int_eq(icc_model_kernels(m, NULL), 2);
    ck_assert_int_eq(icc_model_kernel_kind(m, 0), ICC_KERNEL_F32);
    ck_assert_int_eq(icc_context_create(m, NULL, &ctx), ICC_OK);
    const uint64_t *ns = icc_context_profile(ctx, &runs);
    ck_assert(ns && ns[0] == 0 && ns[1] == 0 && runs == 0);
    float x[8] = {0}, w[2] = {0}, y[8];
    const void *in[2] = {x, w};
    void *out[1] = {y};
    int64_t xd[2] = {2, 4}, wd[1] = {2};
    const int64_t *dims[2] = {xd, wd};
    ck_assert_int_eq(icc_run(ctx, in, dims, out), ICC_OK);
    ck_assert_int_eq(icc_run(ctx, in, dims, out), ICC_OK);
    ck_assert(icc_context_profile(ctx, &runs) == ns && runs == 2);   /* the toy adds no time itself */
    icc_context_profile_reset(ctx);
    icc_context_profile(ctx, &runs);
    ck_assert(runs == 0);
    icc_context_destroy(ctx);
    icc_model_close(m);
    dlclose(dl);
}
END_TEST

/* The init function (ABI 2): open runs it once on a 64-aligned buffer of
 * init_bytes, hands that buffer to every context's runs as env->init, and
 * turns a failure into open's status with the model's message. */
static const void *seen_init;
static int fake_init(const void *const *in, void *const *out, const int64_t *dims, void *arena,
                     const icc_kernel_env *env)
{
    (void)in, (void)out, (void)dims;
    if (env->init != arena || ((uintptr_t)arena & 63) || env->nthreads < 1)
        return ICC_ERR_INTERNAL;
    memset(arena, 7, 256);
    seen_init = arena;
    return 0;
}
static int failing_init(const void *const *in, void *const *out, const int64_t *dims, void *arena,
                        const icc_kernel_env *env)
{
    (void)in, (void)out, (void)dims, (void)arena, (void)env;
    return ICC_ERR_INVALID | (1 << 8);
}
static int checking_run(const void *const *in, void *const *out, const int64_t *dims, void *arena,
                        const icc_kernel_env *env)
{
    (void)in, (void)out, (void)dims, (void)arena;
    const unsigned char *b = env->init;
    return b == seen_init && b[0] == 7 && b[255] == 7 ? 0 : ICC_ERR_INTERNAL;
}

START_TEST(init_runs_once_at_open)
{
    void *dl = dlopen(TOY_MODEL_PATH, RTLD_NOW);
    icc_model_desc edited = *(const icc_model_desc *)dlsym(dl, "model_model");
    ck_assert_int_eq(edited.abi_version, 2);
    ck_assert(edited.init_bytes == 0 && edited.init == NULL);   /* the toy computes nothing at load */
    icc_model *m = NULL;
    icc_context *ctx = NULL;
    edited.init_bytes = 256;
    edited.init = fake_init;
    edited.run = checking_run;
    ck_assert_int_eq(icc_model_from_desc(&edited, &m), ICC_OK);
    ck_assert_ptr_nonnull(seen_init);
    ck_assert_int_eq(icc_context_create(m, NULL, &ctx), ICC_OK);
    float x[8] = {0}, w[2] = {0}, y[8];
    const void *in[2] = {x, w};
    void *out[1] = {y};
    int64_t xd[2] = {2, 4}, wd[1] = {2};
    const int64_t *dims[2] = {xd, wd};
    ck_assert_int_eq(icc_run(ctx, in, dims, out), ICC_OK);
    icc_context_destroy(ctx);
    icc_model_close(m);

    static const char *const msgs[1] = {"node 'g' (Gather): index out of range"};
    edited.init = failing_init;
    edited.messages = msgs;
    edited.nmessages = 1;
    expect(icc_model_from_desc(&edited, &m), ICC_ERR_INVALID, icc_last_error(), "at load", "out of range");
    ck_assert_ptr_null(m);
    edited.init = NULL;
    expect(icc_model_from_desc(&edited, &m), ICC_ERR_ABI, icc_last_error(), "init", NULL);
    edited.abi_version = 1;   /* a version-1 descriptor has no init fields: never read */
    ck_assert_int_eq(icc_model_from_desc(&edited, &m), ICC_OK);
    icc_model_close(m);
    edited.abi_version = 3;
    expect(icc_model_from_desc(&edited, &m), ICC_ERR_ABI, icc_last_error(), "version 3", "1 to 2");
    dlclose(dl);
}
END_TEST

#if defined(__x86_64__)
/* /proc/cpuinfo spells the flags differently; it is the kernel's view,
 * which already masks what the OS does not enable. */
START_TEST(cpu_features_match_proc_cpuinfo)
{
    static const char *pairs[][2] = {
        {"sse4.1", "sse4_1"}, {"sse4.2", "sse4_2"}, {"popcnt", "popcnt"}, {"avx", "avx"},
        {"avx2", "avx2"}, {"fma", "fma"}, {"f16c", "f16c"}, {"bmi", "bmi1"}, {"bmi2", "bmi2"},
        {"avx512f", "avx512f"}, {"avx512bw", "avx512bw"}, {"avx512dq", "avx512dq"},
        {"avx512vl", "avx512vl"}, {"avx512cd", "avx512cd"}, {"avx512vnni", "avx512_vnni"},
        {"avx512bf16", "avx512_bf16"}, {"avx512fp16", "avx512_fp16"}, {"amx-tile", "amx_tile"},
        {"amx-int8", "amx_int8"}, {"amx-bf16", "amx_bf16"}, {"avxvnni", "avx_vnni"},
    };
    FILE *f = fopen("/proc/cpuinfo", "r");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        int want = cpu_has(pairs[i][1]);
        ck_assert_msg(icc_cpu_has(pairs[i][0]) == want, "%s: runtime %d, cpuinfo %d", pairs[i][0],
                      icc_cpu_has(pairs[i][0]), want);
        ck_assert(icc_cpu_has(pairs[i][0]) == icc_cpu_has(pairs[i][0] - 0));
        ck_assert(icc_cpu_known(pairs[i][0]));
    }
    ck_assert_int_eq(icc_cpu_has("+sse2"), 1);
}
END_TEST
#endif

enum { BIG_N = 3000 };

struct racer {
    icc_model *m;
    const float *ref;
    int bad;
};

static void *race(void *arg)
{
    struct racer *r = arg;
    icc_context *ctx;
    if (icc_context_create(r->m, NULL, &ctx) != ICC_OK || icc_context_set_threads(ctx, 2) != ICC_OK) {
        r->bad = -1;
        return NULL;
    }
    float *y = malloc(sizeof(float) * BIG_N * 4);
    for (int i = 0; i < 100; i++) {
        memset(y, 0xff, sizeof(float) * BIG_N * 4);
        if (run_toy(ctx, BIG_N, y) != ICC_OK || memcmp(y, r->ref, sizeof(float) * BIG_N * 4))
            r->bad++;
    }
    free(y);
    icc_context_destroy(ctx);
    return NULL;
}

START_TEST(many_threads_one_model)
{
    icc_model *m = open_toy();
    icc_context *ctx;
    ck_assert_int_eq(icc_context_create(m, NULL, &ctx), ICC_OK);
    ck_assert_int_eq(icc_context_set_threads(ctx, 1), ICC_OK);
    float *ref = malloc(sizeof(float) * BIG_N * 4);
    ck_assert_int_eq(run_toy(ctx, BIG_N, ref), ICC_OK);
    check_y(ref, BIG_N);
    icc_context_destroy(ctx);
    pthread_t t[16];
    struct racer r[16];
    for (int i = 0; i < 16; i++) {
        r[i] = (struct racer){m, ref, 0};
        ck_assert_int_eq(pthread_create(&t[i], NULL, race, &r[i]), 0);
    }
    for (int i = 0; i < 16; i++) {
        pthread_join(t[i], NULL);
        ck_assert_msg(r[i].bad == 0, "thread %d: %d bad runs", i, r[i].bad);
    }
    free(ref);
    icc_model_close(m);
}
END_TEST

START_TEST(create_run_destroy_cycles)
{
    icc_model *m = open_toy();
    float y[64 * 4 * 3];
    for (int i = 0; i < 1000; i++) {
        icc_context *ctx;
        ck_assert_int_eq(icc_context_create(m, NULL, &ctx), ICC_OK);
        ck_assert_int_eq(icc_context_set_threads(ctx, 2), ICC_OK);
        ck_assert_int_eq(run_toy(ctx, 64 * 3, y), ICC_OK);
        icc_context_destroy(ctx);
    }
    check_y(y, 64 * 3);
    icc_model_close(m);
}
END_TEST

START_TEST(allocator_is_used_and_failures_are_reported)
{
    icc_model *m = open_toy();
    float y[400 * 4];
    counter c = {0};
    icc_allocator a = {count_alloc, count_free, &c};
    icc_context *ctx;
    ck_assert_int_eq(icc_context_create(m, &a, &ctx), ICC_OK);
    ck_assert_int_eq(icc_context_set_threads(ctx, 4), ICC_OK);
    ck_assert_int_eq(run_toy(ctx, 400, y), ICC_OK);
    check_y(y, 400);
    icc_context_destroy(ctx);
    int total = c.allocs;
    ck_assert_int_ge(total, 5); /* context, symbols, inputs, arena, grown arena, workers */
    ck_assert_int_eq(c.frees, total);
    /* every allocation failing in turn: an error or a (slower) success, never a crash or leak */
    for (int k = 1; k <= total; k++) {
        c = (counter){.fail_at = k};
        icc_status st = icc_context_create(m, &a, &ctx);
        if (st == ICC_OK) {
            icc_context_set_threads(ctx, 4);
            st = run_toy(ctx, 400, y);
            if (st == ICC_OK)
                check_y(y, 400);
            else
                expect(st, ICC_ERR_NOMEM, icc_context_error(ctx), "arena", NULL);
            icc_context_destroy(ctx);
        } else {
            expect(st, ICC_ERR_NOMEM, icc_last_error(), "model", NULL);
        }
        ck_assert_int_eq(c.frees, c.allocs - 1);
    }
    icc_model_close(m);
}
END_TEST

/* An allocator that, called from inside a run (the arena growing), starts
 * a second run on the same context: that one must be refused, and the
 * first must finish correctly. */
typedef struct reenter {
    icc_context *ctx;
    int calls;
    icc_status inner;
    char msg[512];
} reenter;

static void *reenter_alloc(void *user, size_t bytes, size_t align)
{
    reenter *r = user;
    if (r->ctx && !r->calls++) {
        float y[2 * 4];
        r->inner = run_toy(r->ctx, 2, y);
        snprintf(r->msg, sizeof r->msg, "%s", icc_last_error());
    }
    if (align < sizeof(void *))
        align = sizeof(void *);
    return aligned_alloc(align, (bytes + align - 1) / align * align);
}

static void reenter_free(void *user, void *p)
{
    (void)user;
    free(p);
}

START_TEST(concurrent_use_of_a_context_is_refused)
{
    icc_model *m = open_toy();
    reenter r = {0};
    icc_allocator a = {reenter_alloc, reenter_free, &r};
    icc_context *ctx;
    ck_assert_int_eq(icc_context_create(m, &a, &ctx), ICC_OK);
    r.ctx = ctx; /* from now on, the first allocation (the arena, inside icc_run) re-enters */
    float *y = malloc(sizeof(float) * 5000 * 4);
    ck_assert_msg(run_toy(ctx, 5000, y) == ICC_OK, "%s", icc_context_error(ctx));
    check_y(y, 5000);
    ck_assert_int_ge(r.calls, 1);
    expect(r.inner, ICC_ERR_INVALID, r.msg, "in use by another run", "one per thread");
    /* the context is usable again afterwards */
    ck_assert_int_eq(run_toy(ctx, 7, y), ICC_OK);
    check_y(y, 7);
    free(y);
    icc_context_destroy(ctx);
    icc_model_close(m);
}
END_TEST

static int count_tasks(int *running)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    struct dirent *e;
    *running = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        n++;
        if (atoi(e->d_name) == gettid())
            continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (f && fgets(buf, sizeof buf, f)) {
            char *p = strrchr(buf, ')');
            if (p && p[2] == 'R')
                (*running)++;
        }
        if (f)
            fclose(f);
    }
    closedir(d);
    return n;
}

START_TEST(num_threads_env_and_idle_workers)
{
    icc_model *m = open_toy();
    icc_context *ctx;
    setenv("ICC_NUM_THREADS", "abc", 1);
    expect(icc_context_create(m, NULL, &ctx), ICC_ERR_INVALID, icc_last_error(), "ICC_NUM_THREADS", NULL);
    setenv("ICC_NUM_THREADS", "3", 1);
    /* a malformed poll time is an error too, not silently the default */
    const char *bad_spin[] = {"5us", "-1", "1000001", " "};
    for (int i = 0; i < 4; i++) {
        setenv("ICC_SPIN_US", bad_spin[i], 1);
        expect(icc_context_create(m, NULL, &ctx), ICC_ERR_INVALID, icc_last_error(), "ICC_SPIN_US", NULL);
    }
    setenv("ICC_SPIN_US", "0", 1);
    ck_assert_int_eq(icc_context_create(m, NULL, &ctx), ICC_OK);
    icc_context_destroy(ctx);
    unsetenv("ICC_SPIN_US");
    int running;
    int before = count_tasks(&running);
    ck_assert_int_eq(icc_context_create(m, NULL, &ctx), ICC_OK);
    ck_assert_int_eq(icc_context_threads(ctx), 3);
    ck_assert_int_eq(count_tasks(&running), before); /* workers start lazily */
    float *y = malloc(sizeof(float) * 5000 * 4);
    ck_assert_int_eq(run_toy(ctx, 5000, y), ICC_OK);
    check_y(y, 5000);
    ck_assert_int_eq(count_tasks(&running), before + 2);
    ck_assert_int_eq(run_toy(ctx, 5000, y), ICC_OK); /* persistent: no new threads */
    /* Idle workers sleep: none stays runnable. On a loaded machine a worker
     * may take a while to get the CPU it needs to go to sleep, so poll for
     * up to 5 s (a spinning worker never gets there). */
    for (int tries = 0; tries < 100; tries++) {
        usleep(50 * 1000);
        ck_assert_int_eq(count_tasks(&running), before + 2);
        if (running == 0)
            break;
    }
    ck_assert_msg(running == 0, "%d workers still running 5 s after the run returned", running);
    icc_context_destroy(ctx);
    ck_assert_int_eq(count_tasks(&running), before);
    unsetenv("ICC_NUM_THREADS");
    ck_assert_int_eq(icc_context_create(m, NULL, &ctx), ICC_OK);
    ck_assert_int_ge(icc_context_threads(ctx), 1);
    ck_assert_int_eq(icc_context_set_threads(ctx, -1), ICC_ERR_INVALID);
    icc_context_destroy(ctx);
    free(y);
    icc_model_close(m);
}
END_TEST

static void copy_file(const char *from, const char *to)
{
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    ck_assert(a && b);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, a)) > 0)
        ck_assert_uint_eq(fwrite(buf, 1, n, b), n);
    fclose(a);
    fclose(b);
}

static void write_weights(const char *path, float first)
{
    float w[8];
    for (int i = 0; i < 8; i++)
        w[i] = (float)i + 0.5f;
    w[0] = first;
    FILE *f = fopen(path, "wb");
    fwrite(w, sizeof w, 1, f);
    fclose(f);
}

START_TEST(external_weights_are_mapped_and_checked)
{
    char dir[] = "/tmp/icc-rtw-XXXXXX", so[64], wt[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(so, sizeof so, "%s/w.so", dir);
    snprintf(wt, sizeof wt, "%s/w.weights", dir);
    copy_file(TOY_MODEL_PATH, so);
    icc_model *m;
    expect(icc_model_open(so, "toyw", &m), ICC_ERR_IO, icc_last_error(), "w.weights", NULL);
    write_weights(wt, 9.0f);
    expect(icc_model_open(so, "toyw", &m), ICC_ERR_IO, icc_last_error(), "checksum", NULL);
    write_weights(wt, 0.5f);
    ck_assert_msg(icc_model_open(so, "toyw", &m) == ICC_OK, "%s", icc_last_error());
    icc_context *ctx;
    ck_assert_int_eq(icc_context_create(m, NULL, &ctx), ICC_OK);
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8];
    const void *in[1] = {x};
    void *out[1] = {y};
    ck_assert_int_eq(icc_run(ctx, in, NULL, out), ICC_OK);
    for (int i = 0; i < 8; i++)
        ck_assert(y[i] == x[i] + (float)i + 0.5f);
    icc_context_destroy(ctx);
    icc_model_close(m);
    unlink(so);
    unlink(wt);
    rmdir(dir);
}
END_TEST

/* A CUDA model's device plan (icc_model_desc.cuda, runtime/cuda_plan.h)
 * is checked at open like the rest of the descriptor, and a context where
 * the driver cannot be opened is ICC_ERR_DEVICE, never a crash. A static
 * descriptor (one f32[2] output) with a hand-made plan: one step copying
 * 8 bytes of weights into the output. */
START_TEST(cuda_plan_is_checked_and_no_driver_is_an_error)
{
    static const int64_t odims[1] = {2};
    static const icc_tensor_desc out_desc = {"y", ICC_F32, 1, odims, NULL};
    static const float w[2] = {1.5f, -2.0f};
    struct {
        icc_cuda_plan h;
        icc_cuda_step step;
        char ptx[8];
    } __attribute__((aligned(8))) blob;
    memset(&blob, 0, sizeof blob);
    blob.h = (icc_cuda_plan){.magic = ICC_CUDA_PLAN_MAGIC, .version = ICC_CUDA_PLAN_VERSION, .sm = 90,
                             .total_bytes = sizeof blob, .nsteps = 1, .nsyms = 1,
                             .kernels = offsetof(__typeof__(blob), step), .refs = offsetof(__typeof__(blob), step),
                             .steps = offsetof(__typeof__(blob), step), .copies = offsetof(__typeof__(blob), ptx),
                             .cubin = offsetof(__typeof__(blob), ptx), .cubin_bytes = 0,
                             .ptx = offsetof(__typeof__(blob), ptx), .ptx_bytes = 1};
    blob.step = (icc_cuda_step){.kind = ICC_CUDA_STEP_COPY, .dst = {ICC_CUDA_OUTPUT, 0, 0, 0},
                                .src = {ICC_CUDA_WEIGHT, 0, 0, 0}, .bytes = 8};
    blob.h.checksum = icc_cuda_plan_checksum(&blob, sizeof blob);
    icc_model_desc d = {.abi_version = ICC_ABI_VERSION, .desc_size = sizeof d, .compiler_version = "test",
                        .name = "cudatoy", .cpu_features = "", .noutputs = 1, .outputs = &out_desc,
                        .weights_bytes = sizeof w, .weights = w, .cuda = &blob, .cuda_bytes = sizeof blob};
    icc_model *m = NULL;
    ck_assert_msg(icc_model_from_desc(&d, &m) == ICC_OK, "%s", icc_last_error());
    ck_assert_int_eq(icc_model_describe(m)->noutputs, 1);
    /* no driver: the context fails cleanly, naming the library */
    setenv("ICC_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
    icc_context *ctx = NULL;
    expect(icc_context_create(m, NULL, &ctx), ICC_ERR_DEVICE, icc_last_error(), "no CUDA driver",
           "/nonexistent/libcuda.so.1");
    ck_assert_ptr_null(ctx);
    icc_model_close(m);

    /* icc_run_device is for CUDA models only */
    m = open_toy();
    ck_assert_int_eq(icc_context_create(m, NULL, &ctx), ICC_OK);
    float y[4];
    const void *in[2] = {y, y};
    void *out[1] = {y};
    expect(icc_run_device(ctx, in, out), ICC_ERR_INVALID, icc_context_error(ctx), "--target=cuda", NULL);
    icc_context_destroy(ctx);
    icc_model_close(m);

    /* what the check refuses */
    /* (from case 4 on the checksum is made again: the structural checks
     * are what is tested; case 7 is damage the checksum alone catches) */
    static const char *const cases[] = {"no valid header", "version 99", "not its descriptor's", "CPU entry point",
                                        "a table outside it", "step 0 is malformed", "step 0 is malformed",
                                        "checksum that does not match"};
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        __typeof__(blob) b = blob;
        icc_model_desc e = d;
        e.cuda = &b;
        switch (i) {
        case 0: b.h.magic ^= 1; break;
        case 1: b.h.version = 99; break;
        case 2: e.cuda_bytes -= 8; break;
        case 3: e.run = (icc_entry_fn)(uintptr_t)1; break;
        case 4: b.h.steps = (int64_t)sizeof b; break;
        case 5: b.step.bytes = 12; break;   /* past the 8-byte output */
        case 6: b.step.src.where = ICC_CUDA_INPUT; break;   /* there is no input */
        case 7: b.step.bytes = 4; break;                    /* valid, but not what was written */
        }
        if (i >= 4 && i < 7)
            b.h.checksum = icc_cuda_plan_checksum(&b, sizeof b);
        m = NULL;
        expect(icc_model_from_desc(&e, &m), ICC_ERR_ABI, icc_last_error(), cases[i], NULL);
        ck_assert_ptr_null(m);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runtime");
    TCase *tc = tcase_create("runtime");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, open_describe_run_close);
    tcase_add_test(tc, arena_grows_with_symbols);
    tcase_add_test(tc, bad_inputs_are_errors);
    tcase_add_test(tc, bad_files_are_errors);
    tcase_add_test(tc, missing_cpu_feature_is_an_error);
    tcase_add_test(tc, abi_mismatch_is_an_error);
    tcase_add_test(tc, derived_symbols);
    tcase_add_test(tc, profile_counters_and_old_descriptors);
    tcase_add_test(tc, init_runs_once_at_open);
#if defined(__x86_64__)
    tcase_add_test(tc, cpu_features_match_proc_cpuinfo);
#endif
    tcase_add_test(tc, many_threads_one_model);
    tcase_add_test(tc, create_run_destroy_cycles);
    tcase_add_test(tc, allocator_is_used_and_failures_are_reported);
    tcase_add_test(tc, concurrent_use_of_a_context_is_refused);
    tcase_add_test(tc, num_threads_env_and_idle_workers);
    tcase_add_test(tc, external_weights_are_mapped_and_checked);
    tcase_add_test(tc, cuda_plan_is_checked_and_no_driver_is_an_error);
    suite_add_tcase(s, tc);
    return icc_run_suite(s);
}
