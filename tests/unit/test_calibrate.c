/* test_calibrate.c - the int8 calibrator (passes/calibrate.c): minmax
 * ranges equal the extremes computed here from the inputs, percentile and
 * entropy thresholds clip outliers where the data say they should, the
 * histogram keeps working when a later set widens the range, and inputs
 * that do not fit are refused with the input's name. */
#include "check_main.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/text.h"
#include "passes/calibrate.h"

static ir_graph *parse_ok(const char *text)
{
    icc_diag d = {{0}};
    ir_graph *g = ir_parse(text, strlen(text), "t.icc", &d);
    ck_assert_msg(g != NULL, "parse failed: %s", d.msg);
    return g;
}

/* x[1,n] -> Relu -> r; y = r * 2 */
static const char *const RELU = "graph @g(%x: f32[1,N]) -> (%y) {\n"
                                "  %two = const f32[1] [2.0]\n"
                                "  %r = Relu(%x) : f32[1,N]\n"
                                "  %y = Mul(%r, %two) : f32[1,N]\n"
                                "}\n";

static ir_graph *relu_graph(int n)
{
    char text[512], num[32];
    snprintf(num, sizeof num, "%d", n);
    const char *p = RELU;
    size_t k = 0;
    for (; *p; p++)
        if (*p == 'N') {
            k += (size_t)snprintf(text + k, sizeof text - k, "%s", num);
        } else {
            text[k++] = *p;
        }
    text[k] = 0;
    return parse_ok(text);
}

static ir_tensor row(float *data, int n)
{
    ir_tensor t;
    int64_t dims[2] = {1, n};
    ck_assert_int_eq(ir_tensor_init(&t, IR_F32, 2, dims, NULL), 0);
    t.data = data;
    return t;
}

static uint64_t rng = 88172645463325252ull;
static double uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}
static double gauss(void)
{
    double u = uniform(), v = uniform();
    return sqrt(-2 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}

static icc_calibration *calibrate(ir_graph *g, icc_calib_opts *o, float **sets, int nsets, int n)
{
    icc_diag d = {{0}};
    icc_calibrator *c = icc_calibrator_create(g, o, &d);
    ck_assert_msg(c != NULL, "%s", d.msg);
    for (int s = 0; s < nsets; s++) {
        ir_tensor t = row(sets[s], n);
        ck_assert_msg(icc_calibrator_add(c, &t, &d) == 0, "%s", d.msg);
    }
    icc_calibration *cal = icc_calibrator_finish(c, &d);
    ck_assert_msg(cal != NULL, "%s", d.msg);
    return cal;
}

START_TEST(minmax_is_the_extremes)
{
    enum { N = 1000, S = 3 };
    float *sets[S];
    double lo = INFINITY, hi = -INFINITY;
    for (int s = 0; s < S; s++) {
        sets[s] = malloc(sizeof(float) * N);
        for (int i = 0; i < N; i++) {
            sets[s][i] = (float)(gauss() * (s + 1));
            lo = fmin(lo, sets[s][i]);
            hi = fmax(hi, sets[s][i]);
        }
    }
    ir_graph *g = relu_graph(N);
    icc_calib_opts o = {.method = ICC_CALIB_MINMAX};
    icc_calibration *cal = calibrate(g, &o, sets, S, N);
    ck_assert_int_eq(cal->sets, S);
    const icc_calib_range *x = icc_calibration_find(cal, "x"), *r = icc_calibration_find(cal, "r"),
                          *y = icc_calibration_find(cal, "y");
    ck_assert_ptr_nonnull(x);
    ck_assert_ptr_nonnull(r);
    ck_assert_ptr_nonnull(y);
    ck_assert_ptr_null(icc_calibration_find(cal, "two")); /* constants are not activations */
    ck_assert_float_eq(x->lo, (float)lo);
    ck_assert_float_eq(x->hi, (float)hi);
    ck_assert_float_eq(r->lo, 0.0f);
    ck_assert_float_eq(r->hi, (float)hi);
    ck_assert_float_eq(y->hi, (float)(2 * hi));
    icc_calibration_destroy(cal);
    ir_graph_destroy(g);
    for (int s = 0; s < S; s++)
        free(sets[s]);
}
END_TEST

/* 100,000 values uniform in [0, 1) and one at 1000: the 99.99th
 * percentile of |x| is about 1 (within a bin of 1000/2048 at most twice
 * merged), minmax keeps the outlier. */
START_TEST(percentile_drops_an_outlier)
{
    enum { N = 100000 };
    float *x = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++)
        x[i] = (float)uniform();
    x[N / 2] = 1000.0f;
    ir_graph *g = relu_graph(N);
    icc_calib_opts o = {.method = ICC_CALIB_PERCENTILE, .percentile = 99.99, .bins = 1 << 16};
    icc_calibration *cal = calibrate(g, &o, &x, 1, N);
    const icc_calib_range *r = icc_calibration_find(cal, "x");
    ck_assert_msg(r->hi > 0.98f && r->hi < 1.05f, "hi %g", r->hi);
    ck_assert_msg(r->lo >= 0.0f && r->lo < 1e-3f, "lo %g", r->lo); /* the data's own minimum */
    icc_calibration_destroy(cal);
    o.method = ICC_CALIB_MINMAX;
    cal = calibrate(g, &o, &x, 1, N);
    ck_assert_float_eq(icc_calibration_find(cal, "x")->hi, 1000.0f);
    icc_calibration_destroy(cal);
    ir_graph_destroy(g);
    free(x);
}
END_TEST

/* A later set 10x wider than the first: the histogram's bins merge, and
 * percentile 100 still ends at the new maximum (to a bin). */
START_TEST(histogram_grows)
{
    enum { N = 4096 };
    float *sets[2] = {malloc(sizeof(float) * N), malloc(sizeof(float) * N)};
    for (int i = 0; i < N; i++) {
        sets[0][i] = (float)(2 * uniform() - 1);
        sets[1][i] = (float)(20 * uniform() - 10);
    }
    sets[1][7] = -10.0f;
    ir_graph *g = relu_graph(N);
    icc_calib_opts o = {.method = ICC_CALIB_PERCENTILE, .percentile = 100};
    icc_calibration *cal = calibrate(g, &o, sets, 2, N);
    const icc_calib_range *x = icc_calibration_find(cal, "x");
    ck_assert_float_eq(x->lo, -10.0f);
    ck_assert_msg(x->hi > 9.9f && x->hi <= 10.0f, "hi %g", x->hi);
    icc_calibration_destroy(cal);
    ir_graph_destroy(g);
    free(sets[0]);
    free(sets[1]);
}
END_TEST

/* Mass spread over the first 500 of 2048 bins and one count at bin 2000:
 * the KL-optimal cut keeps the 500 bins and drops the lone outlier. A
 * histogram that is flat to its end keeps everything. */
START_TEST(entropy_threshold)
{
    double h[2048] = {0};
    for (int i = 0; i < 500; i++)
        h[i] = 1000 + (i % 7);
    h[2000] = 1;
    int t = icc_calib_entropy_bins(h, 2048);
    ck_assert_msg(t >= 495 && t <= 530, "threshold %d bins", t);
    for (int i = 0; i < 2048; i++)
        h[i] = 100;
    t = icc_calib_entropy_bins(h, 2048);
    ck_assert_msg(t >= 2000, "threshold %d bins", t);
}
END_TEST

/* Gaussian activations with rare huge outliers: entropy clips far below
 * the outliers but keeps the bulk (beyond 2 sigma). */
START_TEST(entropy_on_gaussian)
{
    enum { N = 200000 };
    float *x = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++)
        x[i] = (float)gauss();
    x[10] = 60.0f;
    x[20] = -55.0f;
    ir_graph *g = relu_graph(N);
    icc_calib_opts o = {.method = ICC_CALIB_ENTROPY};
    icc_calibration *cal = calibrate(g, &o, &x, 1, N);
    const icc_calib_range *r = icc_calibration_find(cal, "x");
    ck_assert_msg(r->hi > 2.0f && r->hi < 20.0f && r->lo < -2.0f && r->lo > -20.0f, "range [%g, %g]", r->lo,
                  r->hi);
    icc_calibration_destroy(cal);
    ir_graph_destroy(g);
    free(x);
}
END_TEST

START_TEST(bad_inputs_are_named)
{
    ir_graph *g = relu_graph(4);
    icc_diag d = {{0}};
    icc_calib_opts o = {.method = ICC_CALIB_MINMAX};
    icc_calibrator *c = icc_calibrator_create(g, &o, &d);
    float buf[5] = {0};
    ir_tensor t = row(buf, 5);
    ck_assert_int_eq(icc_calibrator_add(c, &t, &d), -1);
    ck_assert_msg(strstr(d.msg, "input 'x'") && strstr(d.msg, "dim 1"), "%s", d.msg);
    ck_assert_ptr_null(icc_calibrator_finish(c, &d));
    ck_assert_msg(strstr(d.msg, "no input sets"), "%s", d.msg);
    ck_assert_int_eq(icc_calib_method_parse("kl", &o, &d), -1);
    ck_assert_msg(strstr(d.msg, "kl") && strstr(d.msg, "entropy"), "%s", d.msg);
    ck_assert_int_eq(icc_calib_method_parse("percentile=99.9", &o, &d), 0);
    ck_assert_int_eq(o.method, ICC_CALIB_PERCENTILE);
    ck_assert(fabs(o.percentile - 99.9) < 1e-12);
    ck_assert_int_eq(icc_calib_method_parse("percentile=101", &o, &d), -1);
    ir_graph_destroy(g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("calibrate");
    TCase *tc = tcase_create("calibrate");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, minmax_is_the_extremes);
    tcase_add_test(tc, percentile_drops_an_outlier);
    tcase_add_test(tc, histogram_grows);
    tcase_add_test(tc, entropy_threshold);
    tcase_add_test(tc, entropy_on_gaussian);
    tcase_add_test(tc, bad_inputs_are_named);
    suite_add_tcase(s, tc);
    return icc_run_suite(s);
}
