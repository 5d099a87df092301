/* test_quantize.c - the static int8 rewrite (passes/quantize.c) with a
 * calibration made here: the activation's scale and zero point follow
 * from its range, and the rewritten graph, run by the interpreter, equals
 * the fp32 op (run by the interpreter too) on fake-quantized operands:
 * x' = (round(x/s) + zp - zp) * s clamped to the integer range, W' =
 * round(W/ws[c]) * ws[c] per output channel. That holds for MatMul, Gemm
 * and a padded Conv (padding must read as 0, i.e. as the zero point), for
 * u8 asymmetric and i8 symmetric activations. */
#include "check_main.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ops.h"
#include "ir/ref/interp.h"
#include "ir/text.h"
#include "passes/calibrate.h"
#include "passes/pass.h"
#include "passes/precision.h"

static ir_graph *parse_ok(const char *text)
{
    icc_diag d = {{0}};
    ir_graph *g = ir_parse(text, strlen(text), "t.icc", &d);
    ck_assert_msg(g != NULL, "parse failed: %s", d.msg);
    return g;
}

static void run_pipeline(ir_graph *g, const char *text, const icc_precision_opts *po)
{
    icc_pipeline p;
    icc_diag d = {{0}};
    ck_assert_msg(icc_pipeline_parse(text, &p, &d) == 0, "%s", d.msg);
    icc_pass_options o = {0};
    o.precision = po;
    ck_assert_msg(icc_pipeline_run(&p, g, &o, &d) == 0, "%s", d.msg);
    icc_pipeline_free(&p);
}

static int count_op(const ir_graph *g, int op)
{
    int n = 0;
    for (int i = 0; i < g->nnodes; i++)
        n += !g->nodes[i]->dead && g->nodes[i]->op == op;
    return n;
}

static const ir_value *value_named(const ir_graph *g, const char *name)
{
    for (int i = 0; i < g->nvalues; i++)
        if (!g->values[i]->dead && !strcmp(g->values[i]->name, name))
            return g->values[i];
    return NULL;
}

static float *run1(const ir_graph *g, float *x, int rank, const int64_t *dims, int64_t *numel)
{
    ir_tensor in, out;
    ck_assert_int_eq(ir_tensor_init(&in, IR_F32, rank, dims, NULL), 0);
    in.data = x;
    icc_diag d = {{0}};
    ck_assert_msg(ir_interp_run(g, &in, &out, &d) == 0, "%s", d.msg);
    *numel = out.numel;
    return out.data;
}

/* Fake-quantizes the f32 constant named w of g in place, per output
 * channel (channel of element i: (i / inner) % C), as the rewrite does. */
static void fake_quant_weights(ir_graph *g, const char *w, int64_t C, int64_t inner)
{
    ir_value *v = (ir_value *)value_named(g, w);
    ck_assert_ptr_nonnull(v);
    float *f = v->cval.data;
    double amax[64] = {0};
    for (int64_t i = 0; i < v->cval.numel; i++)
        amax[(i / inner) % C] = fmax(amax[(i / inner) % C], fabs(f[i]));
    for (int64_t i = 0; i < v->cval.numel; i++) {
        float s = amax[(i / inner) % C] > 0 ? (float)(amax[(i / inner) % C] / 127.0) : 1.0f;
        f[i] = fminf(fmaxf(nearbyintf(f[i] / s), -127), 127) * s;
    }
}

static void fake_quant_act(float *x, int64_t n, float scale, float zp, float qmin, float qmax)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = (fminf(fmaxf(nearbyintf(x[i] / scale) + zp, qmin), qmax) - zp) * scale;
}

/* One case: graph text whose input is x, calibrated range [lo, hi] for
 * x, the weights' name and channel layout, and the integer op expected. */
static void check_case(const char *text, int rank, const int64_t *dims, float lo, float hi, bool sym,
                       const char *w, int64_t C, int64_t inner, int int_op)
{
    ir_graph *g = parse_ok(text), *ref = parse_ok(text);
    icc_calib_range r = {"x", lo, hi};
    icc_calibration cal = {ICC_CALIB_MINMAX, sym, 1, 1, &r};
    icc_precision_opts po = {ICC_PREC_INT8, NULL, true, &cal};
    run_pipeline(g, "shape-infer,precision,dce", &po);
    ck_assert_int_eq(count_op(g, int_op), 1);
    ck_assert_int_eq(count_op(g, IR_OP_MATMUL) + count_op(g, IR_OP_GEMM) + count_op(g, IR_OP_CONV), 0);
    /* the activation's quantization parameters */
    double l = fmin(lo, 0), h = fmax(hi, 0);
    float scale = sym ? (float)(fmax(-l, h) / 127.0) : (float)((h - l) / 255.0);
    float zp = sym ? 0.0f : (float)nearbyint(-l / scale);
    const ir_value *sv = value_named(g, "x_scale"), *zv = value_named(g, "x_zero_point");
    ck_assert_ptr_nonnull(sv);
    ck_assert_float_eq(((float *)sv->cval.data)[0], scale);
    if (sym) {
        ck_assert_ptr_null(zv);
        ck_assert_ptr_nonnull(value_named(g, "x_q"));
        ck_assert_int_eq(value_named(g, "x_q")->type.dtype, IR_I8);
    } else {
        ck_assert_ptr_nonnull(zv);
        ck_assert_int_eq(zv->type.dtype, IR_U8);
        ck_assert_int_eq(((uint8_t *)zv->cval.data)[0], (int)zp);
    }
    ck_assert_ptr_nonnull(value_named(g, "y")); /* the result keeps its name */

    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    float *x = malloc(sizeof(float) * (size_t)n), *xf = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) /* covers the range and beyond it (saturation) */
        x[i] = xf[i] = lo - 0.5f + (hi - lo + 1.0f) * (float)((i * 37) % n) / (float)n;
    fake_quant_act(xf, n, scale, zp, sym ? -128 : 0, sym ? 127 : 255);
    fake_quant_weights(ref, w, C, inner);
    int64_t ny, nr;
    float *y = run1(g, x, rank, dims, &ny), *yr = run1(ref, xf, rank, dims, &nr);
    ck_assert_int_eq(ny, nr);
    for (int64_t i = 0; i < ny; i++)
        ck_assert_msg(fabsf(y[i] - yr[i]) <= 1e-4f * (1 + fabsf(yr[i])), "y[%lld] = %g, fake-quantized fp32 %g",
                      (long long)i, y[i], yr[i]);
    free(x);
    free(xf);
    free(y);
    free(yr);
    ir_graph_destroy(g);
    ir_graph_destroy(ref);
}

static const char *const MATMUL = "graph @g(%x: f32[3,4]) -> (%y) {\n"
                                  "  %w = const f32[4,3] [0.5, -1.0, 0.1, 2.0, 0.3, -0.2, -0.7, 0.9, 0.05, 1.5, -2.5, 0.0]\n"
                                  "  %y = MatMul(%x, %w) : f32[3,3]\n"
                                  "}\n";

START_TEST(matmul_u8)
{
    int64_t dims[2] = {3, 4};
    check_case(MATMUL, 2, dims, -1.0f, 3.0f, false, "w", 3, 1, IR_OP_MATMUL_INTEGER);
    /* a range that excludes 0 is widened to it (zero point 0) */
    check_case(MATMUL, 2, dims, 0.5f, 3.0f, false, "w", 3, 1, IR_OP_MATMUL_INTEGER);
}
END_TEST

START_TEST(matmul_i8_symmetric)
{
    int64_t dims[2] = {3, 4};
    check_case(MATMUL, 2, dims, -1.0f, 3.0f, true, "w", 3, 1, IR_OP_MATMUL_INTEGER);
}
END_TEST

START_TEST(gemm_bias)
{
    int64_t dims[2] = {2, 3};
    check_case("graph @g(%x: f32[2,3]) -> (%y) {\n"
               "  %w = const f32[2,3] [1.0, 2.0, -4.0, 0.5, 0.25, 0.0]\n"
               "  %c = const f32[2] [1.0, -1.0]\n"
               "  %y = Gemm(%x, %w, %c) {alpha = 2.0, beta = 0.5, transB = 1} : f32[2,2]\n"
               "}\n",
               2, dims, -2.0f, 2.0f, false, "w", 2, 3, IR_OP_MATMUL_INTEGER);
}
END_TEST

START_TEST(conv_padded)
{
    int64_t dims[4] = {1, 2, 4, 4};
    check_case("graph @g(%x: f32[1,2,4,4]) -> (%y) {\n"
               "  %w = const f32[3,2,3,3] [0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 0.7, 0.8, -0.9, 1.0, 1.1, -1.2, 1.3, 1.4, 1.5,"
               " -1.6, 1.7, 1.8, 0.01, 0.02, -0.03, 0.04, 0.05, 0.06, -0.07, 0.08, 0.09, 0.1, 0.2, 0.3, -0.4, 0.5, 0.6,"
               " 0.7, -0.8, 0.9, 2.0, -1.0, 0.0, 0.5, 0.25, -0.125, 1.0, 1.0, 1.0, 3.0, -3.0, 0.3, 0.2, 0.1, 0.0, -0.1,"
               " -0.2, -0.3]\n"
               "  %b = const f32[3] [0.5, -0.25, 1.0]\n"
               "  %y = Conv(%x, %w, %b) {kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [1, 1]} : f32[1,3,4,4]\n"
               "}\n",
               4, dims, 0.25f, 2.0f, false, "w", 3, 18, IR_OP_CONV_INTEGER);
}
END_TEST

START_TEST(missing_range_is_named)
{
    ir_graph *g = parse_ok(MATMUL);
    icc_calib_range r = {"other", -1, 1};
    icc_calibration cal = {ICC_CALIB_MINMAX, false, 1, 1, &r};
    icc_precision_opts po = {ICC_PREC_INT8, NULL, true, &cal};
    icc_pipeline p;
    icc_diag d = {{0}};
    ck_assert_int_eq(icc_pipeline_parse("shape-infer,precision", &p, &d), 0);
    icc_pass_options o = {0};
    o.precision = &po;
    ck_assert_int_eq(icc_pipeline_run(&p, g, &o, &d), -1);
    ck_assert_msg(strstr(d.msg, "no calibration range for its input 'x'"), "%s", d.msg);
    icc_pipeline_free(&p);
    ir_graph_destroy(g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("quantize");
    TCase *tc = tcase_create("quantize");
    tcase_add_test(tc, matmul_u8);
    tcase_add_test(tc, matmul_i8_symmetric);
    tcase_add_test(tc, gemm_bias);
    tcase_add_test(tc, conv_padded);
    tcase_add_test(tc, missing_range_is_named);
    suite_add_tcase(s, tc);
    return icc_run_suite(s);
}
