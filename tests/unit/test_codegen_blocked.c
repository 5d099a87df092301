/* test_codegen_blocked.c - the layout pass and ConvNCHWc end to end:
 * Conv graphs of assorted geometries (strides, dilations, asymmetric
 * pads, 1x1 planes, reduction blocks, residual epilogues) are run by the
 * interpreter as written, then rewritten by `layout` (with and without
 * explicit padding, 16- and 8-wide blocks), compiled to a model .so and
 * run with 1 and 3 threads; the outputs must agree. Also: ConvNCHWc with
 * different input and output lane counts compiled directly, its shape
 * errors, and the ONNX frontend refusing a model that names it. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "codegen_harness.h"
#include "icc/runtime.h"
#include "ir/ops.h"
#include "ir/ref/interp.h"
#include "ir/text.h"
#include "onnx_build.h"
#include "passes/pass.h"

/* ---- text of test graphs ---------------------------------------------------- */

#include "text_buf.h"

/* A constant of n deterministic values in [-1, 1]. */
static void put_const(buf *b, const char *name, const char *type, int64_t n, int seed)
{
    put(b, "  %%%s = const %s [", name, type);
    for (int64_t i = 0; i < n; i++)
        put(b, "%s%.4f", i ? ", " : "", sin((double)i * 0.37 + seed * 1.7));
    put(b, "]\n");
}

/* Conv (k x k, stride s, dilation d, pads p) + Relu + 1x1 Conv + a
 * residual Add + Relu, and the mean over the plane. */
static char *conv_graph(int64_t n, int64_t c, int64_t m, int64_t h, int64_t w, int64_t k, int64_t s, int64_t d,
                        const int64_t *p, bool bias)
{
    int64_t oh = (h + p[0] + p[2] - ((k - 1) * d + 1)) / s + 1, ow = (w + p[1] + p[3] - ((k - 1) * d + 1)) / s + 1;
    char yt[64], wt[64], w2t[64];
    snprintf(yt, sizeof yt, "f32[%lld,%lld,%lld,%lld]", (long long)n, (long long)m, (long long)oh, (long long)ow);
    snprintf(wt, sizeof wt, "f32[%lld,%lld,%lld,%lld]", (long long)m, (long long)c, (long long)k, (long long)k);
    snprintf(w2t, sizeof w2t, "f32[%lld,%lld,1,1]", (long long)m, (long long)m);
    buf b = {0};
    put(&b, "graph @g(%%x: f32[%lld,%lld,%lld,%lld]) -> (%%y, %%z) {\n", (long long)n, (long long)c, (long long)h,
        (long long)w);
    put_const(&b, "w", wt, m * c * k * k, 1);
    put_const(&b, "w2", w2t, m * m, 2);
    char bt[32];
    snprintf(bt, sizeof bt, "f32[%lld]", (long long)m);
    put_const(&b, "b", bt, m, 3);
    put(&b, "  %%c = Conv(%%x, %%w%s) {kernel_shape = [%lld, %lld], strides = [%lld, %lld], dilations = [%lld, %lld], "
            "pads = [%lld, %lld, %lld, %lld]} : %s\n",
        bias ? ", %b" : "", (long long)k, (long long)k, (long long)s, (long long)s, (long long)d, (long long)d,
        (long long)p[0], (long long)p[1], (long long)p[2], (long long)p[3], yt);
    put(&b, "  %%r = Relu(%%c) : %s\n", yt);
    put(&b, "  %%c2 = Conv(%%r, %%w2, %%b) {kernel_shape = [1, 1]} : %s\n", yt);
    put(&b, "  %%a = Add(%%c2, %%r) : %s\n", yt);
    put(&b, "  %%y = Relu(%%a) : %s\n", yt);
    put(&b, "  %%z = GlobalAveragePool(%%a) : f32[%lld,%lld,1,1]\n}\n", (long long)n, (long long)m);
    return b.s;
}

static ir_graph *parse(const char *text)
{
    icc_diag d = {{0}};
    ir_graph *g = ir_parse(text, strlen(text), "blocked.icc", &d);
    ck_assert_msg(g != NULL, "%s", d.msg);
    return g;
}

static void run_pipeline(ir_graph *g, const char *pipeline)
{
    icc_diag d = {{0}};
    icc_pipeline p;
    ck_assert_msg(icc_pipeline_parse(pipeline, &p, &d) == 0, "%s", d.msg);
    ck_assert_msg(icc_pipeline_run(&p, g, NULL, &d) == 0, "%s", d.msg);
    icc_pipeline_free(&p);
}

/* Inputs of g filled with a fixed pattern (the caller frees the data). */
static void make_inputs(const ir_graph *g, ir_tensor *in)
{
    icc_diag d = {{0}};
    for (int i = 0; i < g->ninputs; i++) {
        const ir_type *t = &g->inputs[i]->type;
        int64_t dims[IR_MAX_RANK];
        for (int k = 0; k < t->rank; k++)
            dims[k] = t->dims[k].v;
        ck_assert_int_eq(ir_tensor_init(&in[i], t->dtype, t->rank, dims, &d), 0);
        in[i].data = calloc(1, in[i].nbytes + 1);
        for (int64_t e = 0; e < in[i].numel; e++)
            ir_tensor_setf(&in[i], e, cos((double)e * 0.61 + i));
    }
}

/* Compiles g, runs it with 1 and 3 threads on `in` and compares every
 * output with want (tolerance relative to each output's largest value:
 * f32 sums err in proportion to their terms). */
static void check_against(ir_graph *g, const ir_tensor *in, const ir_tensor *want, double tol)
{
    icc_diag d = {{0}};
    char dir[] = "/tmp/icc_blocked_XXXXXX", so[256];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(so, sizeof so, "%s/m.so", dir);
    ck_assert_msg(harness_build_model(g, so, &d) == 0, "%s", d.msg);
    icc_model *model;
    ck_assert_msg(icc_model_open(so, NULL, &model) == ICC_OK, "%s", icc_last_error());
    const void *inputs[4];
    int64_t dims[4][IR_MAX_RANK];
    const int64_t *dimp[4];
    for (int i = 0; i < g->ninputs; i++) {
        inputs[i] = in[i].data;
        for (int k = 0; k < in[i].rank; k++)
            dims[i][k] = in[i].dims[k];
        dimp[i] = dims[i];
    }
    for (int threads = 1; threads <= 3; threads += 2) {
        icc_context *ctx;
        ck_assert_int_eq(icc_context_create(model, NULL, &ctx), ICC_OK);
        ck_assert_int_eq(icc_context_set_threads(ctx, threads), ICC_OK);
        void *outputs[4];
        for (int o = 0; o < g->noutputs; o++)
            outputs[o] = calloc(1, want[o].nbytes + 1);
        ck_assert_msg(icc_run(ctx, inputs, dimp, outputs) == ICC_OK, "%s", icc_context_error(ctx));
        for (int o = 0; o < g->noutputs; o++) {
            ir_tensor got = want[o];
            got.data = outputs[o];
            double scale = 0.1;
            for (int64_t e = 0; e < want[o].numel; e++)
                scale = fmax(scale, fabs(ir_tensor_getf(&want[o], e)));
            for (int64_t e = 0; e < want[o].numel; e++) {
                double w = ir_tensor_getf(&want[o], e), x = ir_tensor_getf(&got, e);
                ck_assert_msg(fabs(x - w) <= tol * scale, "threads %d, output %d [%lld] = %g, want %g", threads, o,
                              (long long)e, x, w);
            }
            free(outputs[o]);
        }
        icc_context_destroy(ctx);
    }
    icc_model_close(model);
    unlink(so);
    rmdir(dir);
}

/* The graph as written (interpreted) against its layout-rewritten,
 * compiled form under each pipeline option. */
static void check_layout(const char *text, int want_convs)
{
    static const char *const opts[] = {"block=16", "block=16,pad=0", "block=8"};
    icc_diag d = {{0}};
    ir_graph *ref = parse(text);
    run_pipeline(ref, "shape-infer");
    ir_tensor in[4] = {{0}}, want[4] = {{0}};
    make_inputs(ref, in);
    ck_assert_msg(ir_interp_run(ref, in, want, &d) == 0, "%s", d.msg);
    for (size_t o = 0; o < sizeof opts / sizeof *opts; o++) {
        char pipe[256];
        snprintf(pipe, sizeof pipe, "shape-infer,layout{%s},simplify,cse,dce,fuse,plan", opts[o]);
        ir_graph *g = parse(text);
        run_pipeline(g, pipe);
        ck_assert_int_eq(count_op(g, IR_OP_CONV_NCHWC), want_convs);
        ck_assert_int_eq(count_op(g, IR_OP_CONV), 2 - want_convs);
        check_against(g, in, want, 2e-5);
        ir_graph_destroy(g);
    }
    ir_tensors_free(want, ref->noutputs);
    for (int i = 0; i < ref->ninputs; i++)
        free(in[i].data);
    ir_graph_destroy(ref);
}

START_TEST(padded_3x3)
{
    static const int64_t p[4] = {1, 1, 1, 1};
    char *t = conv_graph(1, 32, 16, 9, 9, 3, 1, 1, p, true);
    check_layout(t, 2);
    free(t);
}
END_TEST

START_TEST(strided_asymmetric_pads_batch_2)
{
    static const int64_t p[4] = {1, 0, 2, 1};
    char *t = conv_graph(2, 16, 32, 17, 13, 3, 2, 1, p, false);
    check_layout(t, 2);
    free(t);
}
END_TEST

START_TEST(dilated_and_wide)
{
    static const int64_t p[4] = {2, 1, 0, 3};
    char *t = conv_graph(1, 16, 16, 9, 31, 5, 1, 2, p, true);
    check_layout(t, 2);
    free(t);
}
END_TEST

/* 1x1 over a 7x7 plane (the rows run over the flattened plane) and a
 * reduction longer than one block (partial sums through the output). */
START_TEST(flat_plane_and_reduction_blocks)
{
    static const int64_t p0[4] = {0, 0, 0, 0}, p1[4] = {1, 1, 1, 1};
    char *t = conv_graph(1, 4128, 16, 7, 7, 1, 1, 1, p0, true);
    check_layout(t, 2);
    free(t);
    t = conv_graph(1, 512, 16, 5, 5, 3, 1, 1, p1, false);
    check_layout(t, 2);
    free(t);
}
END_TEST

/* An image input (fewer channels than a block) is the blocked layout
 * with 1-channel blocks: both convs run blocked. 20 input channels (not a
 * multiple of 8 or 16, nor fewer than 16): the first Conv stays NCHW and
 * its result is reordered for the second. */
START_TEST(image_input_and_ineligible_conv)
{
    static const int64_t p[4] = {3, 3, 3, 3}, p1[4] = {1, 1, 1, 1};
    char *t = conv_graph(1, 3, 16, 20, 20, 7, 2, 1, p, true);
    check_layout(t, 2);
    free(t);
    t = conv_graph(1, 20, 16, 9, 9, 3, 1, 1, p1, true);
    check_layout(t, 1);
    free(t);
}
END_TEST

/* ConvNCHWc written directly, 8 input lanes and 16 output lanes, pads in
 * the op (the kernel's own bounds checks): compiled vs interpreted. */
START_TEST(direct_mixed_lanes)
{
    buf b = {0};
    put(&b, "graph @g(%%x: f32[1,3,6,7,8]) -> (%%y) {\n");
    put_const(&b, "w", "f32[2,3,3,2,8,16]", 2 * 3 * 3 * 2 * 8 * 16, 4);
    put_const(&b, "b", "f32[2,16]", 32, 5);
    put(&b, "  %%y = ConvNCHWc(%%x, %%w, %%b) {strides = [1, 2], pads = [1, 0, 2, 1], dilations = [2, 1]} : "
            "f32[1,2,5,4,16]\n}\n");
    icc_diag d = {{0}};
    ir_graph *g = parse(b.s);
    run_pipeline(g, "shape-infer,plan");
    ir_tensor in[1] = {{0}}, want[1] = {{0}};
    make_inputs(g, in);
    ck_assert_msg(ir_interp_run(g, in, want, &d) == 0, "%s", d.msg);
    /* spot check: y[0,1,2,3,5] by the definition */
    const ir_tensor *wt = &find_value(g, "w")->cval;
    double acc = ir_tensor_getf(&find_value(g, "b")->cval, 1 * 16 + 5);
    for (int cb = 0; cb < 3; cb++)
        for (int ky = 0; ky < 3; ky++)
            for (int kx = 0; kx < 2; kx++)
                for (int ci = 0; ci < 8; ci++) {
                    int ih = 2 - 1 + ky * 2, iw = 3 * 2 - 0 + kx;
                    if (ih < 0 || ih >= 6 || iw < 0 || iw >= 7)
                        continue;
                    double xv = ir_tensor_getf(&in[0], (((cb * 6) + ih) * 7 + iw) * 8 + ci);
                    double wv = ir_tensor_getf(wt, ((((1 * 3 + cb) * 3 + ky) * 2 + kx) * 8 + ci) * 16 + 5);
                    acc += xv * wv;
                }
    ck_assert_double_eq_tol(ir_tensor_getf(&want[0], ((1 * 5 + 2) * 4 + 3) * 16 + 5), acc, 1e-4);
    check_against(g, in, want, 2e-5);
    /* the same in f64: the reference's direct loop (f32 takes the matrix core) */
    for (char *q = b.s; (q = strstr(q, "f32[")); q++)
        memcpy(q, "f64", 3);
    ir_graph *g64 = parse(b.s);
    run_pipeline(g64, "shape-infer");
    ir_tensor in64[1] = {{0}}, want64[1] = {{0}};
    make_inputs(g64, in64);
    ck_assert_msg(ir_interp_run(g64, in64, want64, &d) == 0, "%s", d.msg);
    for (int64_t e = 0; e < want[0].numel; e++)
        ck_assert_double_eq_tol(ir_tensor_getf(&want64[0], e), ir_tensor_getf(&want[0], e), 1e-4);
    ir_tensors_free(want64, 1);
    free(in64[0].data);
    ir_graph_destroy(g64);
    ir_tensors_free(want, 1);
    free(in[0].data);
    ir_graph_destroy(g);
    free(b.s);
}
END_TEST

START_TEST(shape_errors)
{
    static const char *const bad[] = {
        /* input lanes differ from W's */
        "graph @g(%x: f32[1,2,4,4,8], %w: f32[1,2,1,1,16,16]) -> (%y) {\n  %y = ConvNCHWc(%x, %w)\n}\n",
        /* the kernel does not fit */
        "graph @g(%x: f32[1,1,2,2,8], %w: f32[1,1,3,3,8,8]) -> (%y) {\n  %y = ConvNCHWc(%x, %w)\n}\n",
        /* bias of the wrong shape */
        "graph @g(%x: f32[1,1,4,4,8], %w: f32[2,1,1,1,8,8], %b: f32[1,8]) -> (%y) {\n  %y = ConvNCHWc(%x, %w, %b)\n}\n",
        /* three pads */
        "graph @g(%x: f32[1,1,4,4,8], %w: f32[1,1,1,1,8,8]) -> (%y) {\n  %y = ConvNCHWc(%x, %w) {pads = [1, 1, 1]}\n}\n",
        /* rank 4 data */
        "graph @g(%x: f32[1,8,4,4], %w: f32[1,1,1,1,8,8]) -> (%y) {\n  %y = ConvNCHWc(%x, %w)\n}\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        icc_diag d = {{0}};
        ir_graph *g = ir_parse(bad[i], strlen(bad[i]), "bad.icc", &d);
        if (g) {
            ck_assert_msg(ir_infer_shapes(g, &d) < 0, "case %zu was accepted", i);
            ir_graph_destroy(g);
        }
    }
}
END_TEST

START_TEST(frontend_refuses_the_internal_op)
{
    Onnx__ModelProto *m = new_model(13);
    add_input(m, "x", F32, "1,1,3,3,16");
    add_input(m, "w", F32, "1,1,1,1,16,16");
    add_node(m, "ConvNCHWc", "c", "x,w", "y");
    add_output(m, "y", F32, "1,1,3,3,16");
    size_t len;
    uint8_t *bytes = pack(m, &len);
    icc_diag d = {{0}};
    ir_graph *g = icc_onnx_load_buffer(bytes, len, NULL, "m.onnx", &d);
    ck_assert_ptr_null(g);
    ck_assert_msg(strstr(d.msg, "unsupported op: ConvNCHWc"), "%s", d.msg);
    tfree();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("codegen_blocked");
    TCase *tc = tcase_create("blocked");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, padded_3x3);
    tcase_add_test(tc, strided_asymmetric_pads_batch_2);
    tcase_add_test(tc, dilated_and_wide);
    tcase_add_test(tc, flat_plane_and_reduction_blocks);
    tcase_add_test(tc, image_input_and_ineligible_conv);
    tcase_add_test(tc, direct_mixed_lanes);
    tcase_add_test(tc, shape_errors);
    tcase_add_test(tc, frontend_refuses_the_internal_op);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return icc_run_suite(suite());
}
