/* test_codegen_model.c - whole graphs compiled to a model .so (kernels,
 * run entry, weights, descriptor), loaded through the runtime and run
 * against the reference interpreter, single- and multi-threaded. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "codegen_harness.h"
#include "codegen/llvm/model.h"
#include "icc/runtime.h"
#include "ir/ref/interp.h"
#include "ir/text.h"
#include "passes/pass.h"

/* An elementwise network with weights, broadcasting, a value used twice
 * and an in-place chain; big enough (64 rows) for the parallel path. */
static const char *net =
    "graph @net(%x: f32[64,48], %m: f32[48]) -> (%y, %z, %u) {\n"
    "  %w = const f32[2,1,1] [0.5, -1.5]\n"
    "  %a = Mul(%x, %m) : f32[64,48]\n"
    "  %b = Add(%a, %x) : f32[64,48]\n"
    "  %c = Tanh(%b) : f32[64,48]\n"
    "  %y = Sigmoid(%c) : f32[64,48]\n"
    "  %z = Greater(%a, %b) : bool[64,48]\n"
    "  %u = Add(%c, %w) : f32[2,64,48]\n"
    "}\n";

static ir_graph *prepare(const char *text, icc_diag *d)
{
    ir_graph *g = ir_parse(text, strlen(text), "net.icc", d);
    ck_assert_msg(g != NULL, "%s", d->msg);
    icc_pipeline p;
    ck_assert_int_eq(icc_pipeline_parse(icc_pipeline_for_level(2), &p, d), 0);
    ck_assert_msg(icc_pipeline_run(&p, g, NULL, d) == 0, "%s", d->msg);
    icc_pipeline_free(&p);
    return g;
}

/* Prepares text at -O2, compiles it to a temporary .so and opens it (the
 * files are removed at once: the loaded mapping stays). */
static icc_model *compile_and_open(const char *text, ir_graph **g)
{
    icc_diag d = {{0}};
    *g = prepare(text, &d);
    char dir[] = "/tmp/icc_model_XXXXXX", so[256];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(so, sizeof so, "%s/m.so", dir);
    ck_assert_msg(harness_build_model(*g, so, &d) == 0, "%s", d.msg);
    icc_model *m;
    ck_assert_msg(icc_model_open(so, NULL, &m) == ICC_OK, "%s", icc_last_error());
    unlink(so);
    rmdir(dir);
    return m;
}

START_TEST(compiled_model_matches_interpreter)
{
    icc_diag d = {{0}};
    ir_graph *g;
    icc_model *model = compile_and_open(net, &g);

    /* inputs and the oracle */
    float *x = malloc(sizeof(float) * 64 * 48), *mm = malloc(sizeof(float) * 48);
    for (int i = 0; i < 64 * 48; i++)
        x[i] = (float)sin(i * 0.37) * 2;
    for (int i = 0; i < 48; i++)
        mm[i] = (float)cos(i * 0.11);
    ir_tensor in[2] = {0}, want[3] = {0};
    int64_t xd[2] = {64, 48}, md[1] = {48};
    ir_tensor_init(&in[0], IR_F32, 2, xd, &d);
    ir_tensor_init(&in[1], IR_F32, 1, md, &d);
    in[0].data = x;
    in[1].data = mm;
    ck_assert_msg(ir_interp_run(g, in, want, &d) == 0, "%s", d.msg);

    const icc_model_desc *desc = icc_model_describe(model);
    ck_assert_int_eq(desc->ninputs, 2);
    ck_assert_int_eq(desc->noutputs, 3);
    ck_assert_uint_eq(desc->weights_bytes, 64);
    ck_assert_str_eq(desc->outputs[1].name, "z");
    ck_assert_int_eq(desc->outputs[1].dtype, ICC_BOOL);
    for (int threads = 1; threads <= 3; threads += 2) {
        icc_context *ctx;
        ck_assert_int_eq(icc_context_create(model, NULL, &ctx), ICC_OK);
        ck_assert_int_eq(icc_context_set_threads(ctx, threads), ICC_OK);
        float *y = calloc(64 * 48, sizeof(float));
        unsigned char *z = calloc(64 * 48, 1);
        float *u = calloc(2 * 64 * 48, sizeof(float));
        const void *inputs[2] = {x, mm};
        void *outputs[3] = {y, z, u};
        const int64_t *dims[2] = {xd, md};
        ck_assert_msg(icc_run(ctx, inputs, dims, outputs) == ICC_OK, "%s", icc_context_error(ctx));
        for (int i = 0; i < 64 * 48; i++) {
            float w = ((float *)want[0].data)[i];
            ck_assert_msg(fabsf(y[i] - w) <= 1e-6f + 1e-5f * fabsf(w), "threads %d, y[%d] = %g, want %g",
                          threads, i, y[i], w);
            ck_assert_int_eq(z[i], ((unsigned char *)want[1].data)[i]);
        }
        for (int i = 0; i < 2 * 64 * 48; i++) {
            float w = ((float *)want[2].data)[i];
            ck_assert_msg(fabsf(u[i] - w) <= 1e-6f + 1e-5f * fabsf(w), "u[%d] = %g, want %g", i, u[i], w);
        }
        free(u);
        free(y);
        free(z);
        icc_context_destroy(ctx);
    }
    icc_model_close(model);
    ir_tensors_free(want, 3);
    free(x);
    free(mm);
    ir_graph_destroy(g);
}
END_TEST

START_TEST(what_cannot_compile_is_named)
{
    icc_diag d = {{0}};
    /* Unique's result size depends on the data: it compiles into a
     * declared static shape, but not over an input of symbolic length */
    ir_graph *g = prepare("graph @g<N>(%x: i64[N], %w: i64[N]) -> (%y) {\n"
                          "  %a = Unique(%x) \"s1\" : i64[2]\n"
                          "  %b = Unique(%w) \"c1\" : i64[2]\n"
                          "  %y = Add(%a, %b) : i64[2]\n"
                          "}\n", &d);
    cg_target *t;
    ck_assert_int_eq(cg_target_create(NULL, NULL, NULL, 2, &t, &d), 0);
    LLVMModuleRef m;
    ck_assert_int_eq(cg_compile_model(g, t, NULL, &m, &d), -1);
    ck_assert_msg(strstr(d.msg, "2 nodes cannot be compiled yet: Unique ('s1', dims not static), Unique ('c1', dims "
                                "not static); pinning the inputs' dims with --shape=NAME:DIMS"),
                  "%s", d.msg);
    ir_graph_destroy(g);

    /* a dim that depends on an input's values */
    g = prepare("graph @g(%x: f32[4], %s: i64[2]) -> (%y) {\n  %y = Reshape(%x, %s) : f32[?,?]\n}\n", &d);
    ck_assert_int_eq(cg_compile_model(g, t, NULL, &m, &d), -1);
    ck_assert_msg(strstr(d.msg, "value 'y' has a dim that depends on input values: bind the inputs that decide "
                                "it with --bind"), "%s", d.msg);
    ir_graph_destroy(g);
    cg_target_destroy(t);
}
END_TEST

/* A network with contractions, a reduction and a softmax over 96 rows,
 * so kernels split their rows across threads. */
static const char *dense =
    "graph @dense(%x: f32[96,64]) -> (%p, %s) {\n"
    "  %c = const f32[1] [0.03125]\n"
    "  %shape = const i64[2] [64, 32]\n"
    "  %w = Expand(%c, %shape) : f32[64,32]\n"
    "  %h = MatMul(%x, %w) : f32[96,32]\n"
    "  %r = Relu(%h) : f32[96,32]\n"
    "  %p = Softmax(%r) {axis=1} : f32[96,32]\n"
    "  %s = ReduceSum(%h) {keepdims=0} : f32[]\n"
    "}\n";

typedef struct {
    icc_model *m;
    const float *x;
    const float *p1;           /* the single-threaded outputs */
    float s1;
    int threads, runs, mismatches;
} worker_arg;

#include <pthread.h>

static void *worker(void *arg)
{
    worker_arg *w = arg;
    icc_context *ctx;
    if (icc_context_create(w->m, NULL, &ctx) != ICC_OK || icc_context_set_threads(ctx, w->threads) != ICC_OK) {
        w->mismatches = -1;
        return NULL;
    }
    float *p = malloc(sizeof(float) * 96 * 32), s;
    const void *in[1] = {w->x};
    void *out[2] = {p, &s};
    for (int r = 0; r < w->runs; r++) {
        if (icc_run(ctx, in, NULL, out) != ICC_OK) {
            w->mismatches = -1;
            break;
        }
        w->mismatches += memcmp(p, w->p1, sizeof(float) * 96 * 32) != 0 || memcmp(&s, &w->s1, sizeof s) != 0;
    }
    free(p);
    icc_context_destroy(ctx);
    return NULL;
}

/* 16 threads x 100 runs on one loaded model, each thread with its own
 * context (two of them with 2 pool threads), are bitwise identical to a
 * single-threaded run; then 1,000 create/run/destroy cycles (LeakSanitizer
 * watches them in the sanitizer build). */
START_TEST(threads_are_deterministic_and_cycles_clean)
{
    icc_diag d = {{0}};
    ir_graph *g;
    icc_model *m = compile_and_open(dense, &g);
    float *x = malloc(sizeof(float) * 96 * 64), *p1 = malloc(sizeof(float) * 96 * 32), s1;
    for (int i = 0; i < 96 * 64; i++)
        x[i] = (float)sin(i * 0.7);
    icc_context *ctx;
    ck_assert_int_eq(icc_context_create(m, NULL, &ctx), ICC_OK);
    ck_assert_int_eq(icc_context_set_threads(ctx, 1), ICC_OK);
    const void *in[1] = {x};
    void *out[2] = {p1, &s1};
    ck_assert_msg(icc_run(ctx, in, NULL, out) == ICC_OK, "%s", icc_context_error(ctx));
    icc_context_destroy(ctx);
    /* the oracle for the single-threaded run */
    ir_tensor ti = {0}, want[2] = {{0}};
    int64_t xd[2] = {96, 64};
    ir_tensor_init(&ti, IR_F32, 2, xd, &d);
    ti.data = x;
    ck_assert_msg(ir_interp_run(g, &ti, want, &d) == 0, "%s", d.msg);
    for (int i = 0; i < 96 * 32; i++)
        ck_assert_msg(fabsf(p1[i] - ((float *)want[0].data)[i]) <= 1e-6f, "p[%d]", i);
    ck_assert_msg(fabsf(s1 - *(float *)want[1].data) <= 1e-3f * fabsf(s1) + 1e-4f, "s = %g", s1);
    ir_tensors_free(want, 2);

    pthread_t th[16];
    worker_arg wa[16];
    for (int i = 0; i < 16; i++) {
        wa[i] = (worker_arg){m, x, p1, s1, i < 2 ? 2 : 1, 100, 0};
        ck_assert_int_eq(pthread_create(&th[i], NULL, worker, &wa[i]), 0);
    }
    for (int i = 0; i < 16; i++) {
        pthread_join(th[i], NULL);
        ck_assert_msg(wa[i].mismatches == 0, "thread %d: %d runs differ from the single-threaded one", i,
                      wa[i].mismatches);
    }
    for (int i = 0; i < 1000; i++) {
        worker_arg one = {m, x, p1, s1, 1 + i % 2, 1, 0};
        worker(&one);
        ck_assert_int_eq(one.mismatches, 0);
    }
    icc_model_close(m);
    free(x);
    free(p1);
    ir_graph_destroy(g);
}
END_TEST

/* Symbolic dims stay symbolic: one .so runs batches of 1, 7 and 50 rows
 * (the arena laid out per call), 1 and 3 threads, against the
 * interpreter; a batch whose dims disagree is an error naming the input. */
static const char *dyn =
    "graph @dyn<B>(%x: f32[B,24], %v: f32[24]) -> (%p, %s, %t) {\n"
    "  %c = const f32[1] [0.125]\n"
    "  %shape = const i64[2] [24, 16]\n"
    "  %w = Expand(%c, %shape) : f32[24,16]\n"
    "  %a = Add(%x, %v) : f32[B,24]\n"
    "  %h = MatMul(%a, %w) : f32[B,16]\n"
    "  %e = Tanh(%h) : f32[B,16]\n"
    "  %p = Softmax(%e) {axis=1} : f32[B,16]\n"
    "  %s = ReduceSum(%a) {keepdims=0} : f32[]\n"
    "  %t = Transpose(%e) {perm=[1,0]} : f32[16,B]\n"
    "}\n";

START_TEST(symbolic_batch)
{
    icc_diag d = {{0}};
    ir_graph *g;
    icc_model *m = compile_and_open(dyn, &g);
    const icc_model_desc *desc = icc_model_describe(m);
    ck_assert_int_eq(desc->nsymbols, 1);
    ck_assert_str_eq(desc->symbols[0], "B");
    ck_assert_int_eq(desc->inputs[0].dims[0], -1);
    ck_assert_str_eq(desc->outputs[2].dim_names[1], "B");
    icc_context *ctx;
    ck_assert_int_eq(icc_context_create(m, NULL, &ctx), ICC_OK);
    float v[24];
    for (int i = 0; i < 24; i++)
        v[i] = (float)cos(i);
    const int64_t batches[3] = {1, 7, 50};
    for (int bi = 0; bi < 3; bi++)
        for (int threads = 1; threads <= 3; threads += 2) {
            int64_t nb = batches[bi];
            float *x = malloc(sizeof(float) * (size_t)nb * 24), *p = malloc(sizeof(float) * (size_t)nb * 16);
            float *t = malloc(sizeof(float) * (size_t)nb * 16), s;
            for (int i = 0; i < nb * 24; i++)
                x[i] = (float)sin(i * 0.3 + bi);
            ck_assert_int_eq(icc_context_set_threads(ctx, threads), ICC_OK);
            int64_t xd[2] = {nb, 24}, vd[1] = {24};
            const int64_t *dims[2] = {xd, vd};
            const void *in[2] = {x, v};
            void *out[3] = {p, &s, t};
            ck_assert_msg(icc_run(ctx, in, dims, out) == ICC_OK, "%s", icc_context_error(ctx));
            ir_tensor ti[2] = {{0}}, want[3] = {{0}};
            ir_tensor_init(&ti[0], IR_F32, 2, xd, &d);
            ir_tensor_init(&ti[1], IR_F32, 1, vd, &d);
            ti[0].data = x;
            ti[1].data = v;
            ck_assert_msg(ir_interp_run(g, ti, want, &d) == 0, "%s", d.msg);
            for (int i = 0; i < nb * 16; i++) {
                ck_assert_msg(fabsf(p[i] - ((float *)want[0].data)[i]) <= 1e-6f, "B=%lld p[%d]", (long long)nb, i);
                ck_assert_msg(fabsf(t[i] - ((float *)want[2].data)[i]) <= 1e-6f, "B=%lld t[%d]", (long long)nb, i);
            }
            float ws = *(float *)want[1].data;
            ck_assert_msg(fabsf(s - ws) <= 1e-4f * fabsf(ws) + 1e-4f, "B=%lld s %g vs %g", (long long)nb, s, ws);
            ir_tensors_free(want, 3);
            free(x);
            free(p);
            free(t);
        }
    /* x says B = 2, the transposed output is not checked: v must be 24 */
    float x2[48] = {0}, p2[32], s2, t2[32];
    int64_t xd[2] = {2, 24}, vd[1] = {23};
    const int64_t *dims[2] = {xd, vd};
    const void *in[2] = {x2, v};
    void *out[3] = {p2, &s2, t2};
    ck_assert_int_eq(icc_run(ctx, in, dims, out), ICC_ERR_SHAPE);
    ck_assert_msg(strstr(icc_context_error(ctx), "'v'"), "%s", icc_context_error(ctx));
    icc_context_destroy(ctx);
    icc_model_close(m);
    ir_graph_destroy(g);
}
END_TEST

/* The arena is a function of the symbols, laid out per run; an outer
 * product [S, S] of a [1, S] input overflows 64-bit sizes at S = 2^32
 * while the input itself (16 GiB) does not: the run must refuse it before
 * any kernel reads the (absent) data, and still run a small S. */
START_TEST(arena_overflow_is_refused)
{
    ir_graph *g;
    icc_model *m = compile_and_open("graph @outer<S>(%x: f32[1,S]) -> (%y) {\n"
                                    "  %t = Transpose(%x) {perm=[1,0]} : f32[S,1]\n"
                                    "  %o = MatMul(%t, %x) : f32[S,S]\n"
                                    "  %y = ReduceSum(%o) {keepdims=0} : f32[]\n"
                                    "}\n", &g);
    icc_context *ctx;
    ck_assert_int_eq(icc_context_create(m, NULL, &ctx), ICC_OK);
    float x[3] = {1, 2, 3}, y = 0;
    int64_t xd[2] = {1, 3};
    const int64_t *dims[1] = {xd};
    const void *in[1] = {x};
    void *out[1] = {&y};
    ck_assert_msg(icc_run(ctx, in, dims, out) == ICC_OK, "%s", icc_context_error(ctx));
    ck_assert(fabsf(y - 36.0f) < 1e-5f);
    xd[1] = (int64_t)1 << 32;
    ck_assert_int_eq(icc_run(ctx, in, dims, out), ICC_ERR_SHAPE);
    ck_assert_msg(strstr(icc_context_error(ctx), "overflow 64-bit sizes"), "%s", icc_context_error(ctx));
    icc_context_destroy(ctx);
    icc_model_close(m);
    ir_graph_destroy(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("codegen_model");
    TCase *tc = tcase_create("model");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, compiled_model_matches_interpreter);
    tcase_add_test(tc, what_cannot_compile_is_named);
    tcase_add_test(tc, threads_are_deterministic_and_cycles_clean);
    tcase_add_test(tc, symbolic_batch);
    tcase_add_test(tc, arena_overflow_is_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return icc_run_suite(suite());
}
