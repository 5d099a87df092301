/* test_ref_nn.c - shape functions and reference kernels of the
 * contraction and neural-network ops (ir/ref/nn*.c): hand-computed small
 * cases per op, the f32 fast paths against the double path on random
 * data, symbolic shape inference, and node-located errors. */
#include "check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ops.h"
#include "ir/ref/interp.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define F32S(...) ((const float[]){__VA_ARGS__})
#define DBLS(...) ((const double[]){__VA_ARGS__})
#define NELEM(...) (sizeof((const double[]){__VA_ARGS__}) / sizeof(double))

static ir_graph *G;
static icc_diag D;

static void setup(void)
{
    G = ir_graph_create("t");
    memset(&D, 0, sizeof D);
}

static void teardown(void)
{
    ir_graph_destroy(G);
}

/* A node of op with nin inputs (value types unknown: the interpreter
 * takes types from the tensors) and nout outputs. */
static ir_node *node(int op, int nin, int nout)
{
    ir_value *ins[8];
    for (int i = 0; i < nin; i++) {
        char name[16];
        snprintf(name, sizeof name, "in%d", i);
        ir_type t = {IR_F32, IR_RANK_UNKNOWN, {{0, 0}}};
        ins[i] = ir_graph_add_input(G, name, &t, &D);
    }
    ir_node *n = ir_graph_add_node(G, op, "n0", nin, ins, nout, NULL, &D);
    ck_assert_ptr_nonnull(n);
    return n;
}

/* A node whose inputs have the given types, for shape inference. */
static ir_node *typed_node(int op, int nin, const ir_type *tin, int nout)
{
    ir_value *ins[8];
    for (int i = 0; i < nin; i++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        ins[i] = ir_graph_add_input(G, name, &tin[i], &D);
    }
    ir_node *n = ir_graph_add_node(G, op, "n0", nin, ins, nout, NULL, &D);
    ck_assert_ptr_nonnull(n);
    return n;
}

/* Tensors own malloc'd data (freed with ir_tensors_free). */
static ir_tensor tens(ir_dtype dt, int rank, const int64_t *dims, const double *vals)
{
    ir_tensor t;
    ck_assert_int_eq(ir_tensor_init(&t, dt, rank, dims, &D), 0);
    t.data = calloc(1, t.nbytes + 1);
    for (int64_t i = 0; vals && i < t.numel; i++)
        ir_tensor_setf(&t, i, vals[i]);
    return t;
}

static uint64_t rng_state = 88172645463325252ULL;

static double rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0 * 2 - 1;
}

/* A tensor of uniform random values in [-1, 1), exactly representable
 * in f32 so the f32 and f64 copies hold the same numbers. */
static ir_tensor trand(ir_dtype dt, int rank, const int64_t *dims)
{
    ir_tensor t = tens(dt, rank, dims, NULL);
    for (int64_t i = 0; i < t.numel; i++)
        ir_tensor_setf(&t, i, (float)rnd());
    return t;
}

static ir_tensor retype(const ir_tensor *t, ir_dtype dt)
{
    ir_tensor r = tens(dt, t->rank, t->dims, NULL);
    for (int64_t i = 0; i < t->numel; i++)
        ir_tensor_setf(&r, i, ir_tensor_getf(t, i));
    return r;
}

static int eval(ir_node *n, const ir_tensor *in0, const ir_tensor *in1, const ir_tensor *in2,
                ir_tensor *out)
{
    const ir_tensor *in[3] = {in0, in1, in2};
    return ir_eval_node(n, in, out, &D);
}

static void expect_dims(const ir_tensor *t, int rank, const int64_t *dims)
{
    ck_assert_int_eq(t->rank, rank);
    for (int i = 0; i < rank; i++)
        ck_assert_int_eq(t->dims[i], dims[i]);
}

static void expect_vals(const ir_tensor *t, const double *want, size_t n, double tol)
{
    ck_assert_int_eq(t->numel, (int64_t)n);
    for (size_t i = 0; i < n; i++) {
        double v = ir_tensor_getf(t, (int64_t)i);
        if (!(fabs(v - want[i]) <= tol * (1 + fabs(want[i]))))
            ck_abort_msg("element %zu: got %.9g, want %.9g", i, v, want[i]);
    }
}

/* Every element of a within rtol of b (the double path). */
static void expect_close(const ir_tensor *a, const ir_tensor *b, double rtol)
{
    ck_assert_int_eq(a->numel, b->numel);
    for (int64_t i = 0; i < a->numel; i++) {
        double x = ir_tensor_getf(a, i), y = ir_tensor_getf(b, i);
        if (!(fabs(x - y) <= rtol * (fabs(y) + 1e-3)))
            ck_abort_msg("element %lld: fast %.9g, double %.9g", (long long)i, x, y);
    }
}

static void expect_error(ir_node *n, const ir_tensor *in0, const ir_tensor *in1,
                         const ir_tensor *in2, const char *msg)
{
    ir_tensor out[3];
    ck_assert_int_eq(eval(n, in0, in1, in2, out), -1);
    if (!strstr(D.msg, msg))
        ck_abort_msg("message '%s' lacks '%s'", D.msg, msg);
    ck_assert_ptr_nonnull(strstr(D.msg, "node 'n0'"));
}

/* ---- MatMul / Gemm ------------------------------------------------------ */

START_TEST(matmul_2d_and_1d)
{
    ir_node *n = node(IR_OP_MATMUL, 2, 1);
    ir_tensor a = tens(IR_F32, 2, DIMS(2, 2), DBLS(1, 2, 3, 4));
    ir_tensor b = tens(IR_F32, 2, DIMS(2, 2), DBLS(5, 6, 7, 8));
    ir_tensor y;
    ck_assert_int_eq(eval(n, &a, &b, NULL, &y), 0);
    expect_vals(&y, DBLS(19, 22, 43, 50), 4, 0);
    ir_tensors_free(&y, 1);
    /* vector . vector is a scalar */
    ir_tensor v = tens(IR_F64, 1, DIMS(3), DBLS(1, 2, 3));
    ir_tensor w = tens(IR_F64, 1, DIMS(3), DBLS(4, 5, 6));
    ck_assert_int_eq(eval(n, &v, &w, NULL, &y), 0);
    ck_assert_int_eq(y.rank, 0);
    expect_vals(&y, DBLS(32), 1, 0);
    ir_tensors_free(&y, 1);
    /* [4] x [2,4,1] -> [2,1] */
    ir_tensor a1 = tens(IR_F32, 1, DIMS(4), DBLS(1, 1, 1, 1));
    ir_tensor b3 = tens(IR_F32, 3, DIMS(2, 4, 1), DBLS(1, 2, 3, 4, 5, 6, 7, 8));
    ck_assert_int_eq(eval(n, &a1, &b3, NULL, &y), 0);
    expect_dims(&y, 2, DIMS(2, 1));
    expect_vals(&y, DBLS(10, 26), 2, 0);
    ir_tensors_free(&y, 1);
    /* [1,2,2,3] x [3] -> [1,2,2] */
    ir_tensor a4 = tens(IR_F16, 4, DIMS(1, 2, 2, 3), DBLS(1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1));
    ir_tensor v3 = tens(IR_F16, 1, DIMS(3), DBLS(2, 3, 4));
    ck_assert_int_eq(eval(n, &a4, &v3, NULL, &y), 0);
    expect_dims(&y, 3, DIMS(1, 2, 2));
    expect_vals(&y, DBLS(2, 3, 4, 9), 4, 0);
    ir_tensors_free(&y, 1);
    ir_tensor *all[] = {&a, &b, &v, &w, &a1, &b3, &a4, &v3};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        ir_tensors_free(all[i], 1);
}
END_TEST

START_TEST(matmul_batch_broadcast_and_ints)
{
    ir_node *n = node(IR_OP_MATMUL, 2, 1);
    /* [3,1,2,2] x [1,2,2,1]: each output batch (i, j) is A[i] x B[j]. */
    ir_tensor a = trand(IR_F64, 4, DIMS(3, 1, 2, 2));
    ir_tensor b = trand(IR_F64, 4, DIMS(1, 2, 2, 1));
    ir_tensor y;
    ck_assert_int_eq(eval(n, &a, &b, NULL, &y), 0);
    expect_dims(&y, 4, DIMS(3, 2, 2, 1));
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++)
            for (int r = 0; r < 2; r++) {
                const double *A = (const double *)a.data + i * 4, *B = (const double *)b.data + j * 2;
                double want = A[r * 2] * B[0] + A[r * 2 + 1] * B[1];
                ck_assert(fabs(((double *)y.data)[(i * 2 + j) * 2 + r] - want) < 1e-12);
            }
    ir_tensors_free(&y, 1);
    /* integers are exact and wrap */
    ir_tensor ia = tens(IR_I32, 2, DIMS(1, 2), DBLS(65536, 3));
    ir_tensor ib = tens(IR_I32, 2, DIMS(2, 1), DBLS(65536, -2));
    ck_assert_int_eq(eval(n, &ia, &ib, NULL, &y), 0);
    ck_assert_int_eq(y.dtype, IR_I32);
    ck_assert_int_eq(((int32_t *)y.data)[0], -6); /* 2^32 wraps to 0 */
    ir_tensors_free(&y, 1);
    ir_tensor la = tens(IR_I64, 2, DIMS(1, 1), NULL), lb = tens(IR_I64, 2, DIMS(1, 1), NULL);
    ((int64_t *)la.data)[0] = (1LL << 53) + 1;
    ((int64_t *)lb.data)[0] = 1;
    ck_assert_int_eq(eval(n, &la, &lb, NULL, &y), 0);
    ck_assert_int_eq(((int64_t *)y.data)[0], (1LL << 53) + 1);
    ir_tensors_free(&y, 1);
    ir_tensor *all[] = {&a, &b, &ia, &ib, &la, &lb};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        ir_tensors_free(all[i], 1);
}
END_TEST

START_TEST(matmul_f32_fast_matches_double)
{
    ir_node *n = node(IR_OP_MATMUL, 2, 1);
    /* Sizes that leave partial row blocks and column panels. */
    struct { int ra, rb; int64_t da[4], db[4]; } cases[] = {
        {3, 2, {2, 7, 65}, {65, 1030}},
        {2, 3, {5, 9}, {3, 9, 13}},
        {1, 2, {33}, {33, 6}},
        {2, 1, {6, 33}, {33}},
        {4, 4, {2, 1, 3, 4}, {1, 3, 4, 5}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        ir_tensor a = trand(IR_F32, cases[k].ra, cases[k].da);
        ir_tensor b = trand(IR_F32, cases[k].rb, cases[k].db);
        ir_tensor a64 = retype(&a, IR_F64), b64 = retype(&b, IR_F64);
        ir_tensor y, y64;
        ck_assert_int_eq(eval(n, &a, &b, NULL, &y), 0);
        ck_assert_int_eq(eval(n, &a64, &b64, NULL, &y64), 0);
        expect_close(&y, &y64, 1e-5);
        ir_tensor *all[] = {&a, &b, &a64, &b64, &y, &y64};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++)
            ir_tensors_free(all[i], 1);
    }
}
END_TEST

START_TEST(gemm_attributes)
{
    ir_node *n = node(IR_OP_GEMM, 3, 1);
    ir_node_set_int(G, n, "transA", 1);
    ir_node_set_int(G, n, "transB", 1);
    ir_node_set_float(G, n, "alpha", 0.5f);
    ir_node_set_float(G, n, "beta", 2.0f);
    /* A^T = [[1,2],[3,4]], B^T = [[1,0],[0,1]] -> A^T B^T = A^T */
    ir_tensor a = tens(IR_F32, 2, DIMS(2, 2), DBLS(1, 3, 2, 4));
    ir_tensor b = tens(IR_F32, 2, DIMS(2, 2), DBLS(1, 0, 0, 1));
    ir_tensor cv = tens(IR_F32, 2, DIMS(1, 2), DBLS(10, 20));
    ir_tensor y;
    ck_assert_int_eq(eval(n, &a, &b, &cv, &y), 0);
    expect_vals(&y, DBLS(20.5, 41, 21.5, 42), 4, 1e-7);
    ir_tensors_free(&y, 1);
    /* the same through the double path, and a [M,1] column bias */
    ir_tensor a64 = retype(&a, IR_F64), b64 = retype(&b, IR_F64);
    ir_tensor col = tens(IR_F64, 2, DIMS(2, 1), DBLS(1, 2));
    ck_assert_int_eq(eval(n, &a64, &b64, &col, &y), 0);
    expect_vals(&y, DBLS(2.5, 3, 5.5, 6), 4, 1e-12);
    ir_tensors_free(&y, 1);
    /* scalar C, no C */
    ir_tensor sc = tens(IR_F32, 0, NULL, DBLS(1));
    ck_assert_int_eq(eval(n, &a, &b, &sc, &y), 0);
    expect_vals(&y, DBLS(2.5, 3, 3.5, 4), 4, 1e-7);
    ir_tensors_free(&y, 1);
    ck_assert_int_eq(eval(n, &a, &b, NULL, &y), 0);
    expect_vals(&y, DBLS(0.5, 1, 1.5, 2), 4, 1e-7);
    ir_tensors_free(&y, 1);
    ir_tensor *all[] = {&a, &b, &cv, &a64, &b64, &col, &sc};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        ir_tensors_free(all[i], 1);
}
END_TEST

START_TEST(gemm_f32_fast_matches_double)
{
    /* Few rows against a transposed B take the dot-product path. */
    for (int t = 0; t < 8; t++) {
        ir_node *n = node(IR_OP_GEMM, 3, 1);
        ir_node_set_int(G, n, "transA", t & 1);
        ir_node_set_int(G, n, "transB", (t >> 1) & 1);
        ir_node_set_float(G, n, "alpha", 0.75f);
        ir_node_set_float(G, n, "beta", -1.5f);
        int64_t m = t & 4 ? 3 : 11, k = 37, nn = 600;
        ir_tensor a = trand(IR_F32, 2, t & 1 ? DIMS(k, m) : DIMS(m, k));
        ir_tensor b = trand(IR_F32, 2, (t >> 1) & 1 ? DIMS(nn, k) : DIMS(k, nn));
        ir_tensor cc = trand(IR_F32, 1, DIMS(nn));
        ir_tensor a64 = retype(&a, IR_F64), b64 = retype(&b, IR_F64), c64 = retype(&cc, IR_F64);
        ir_tensor y, y64;
        ck_assert_int_eq(eval(n, &a, &b, &cc, &y), 0);
        ck_assert_int_eq(eval(n, &a64, &b64, &c64, &y64), 0);
        expect_dims(&y, 2, DIMS(m, nn));
        expect_close(&y, &y64, 1e-5);
        ir_tensor *all[] = {&a, &b, &cc, &a64, &b64, &c64, &y, &y64};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++)
            ir_tensors_free(all[i], 1);
    }
}
END_TEST

START_TEST(matmul_gemm_errors)
{
    ir_node *n = node(IR_OP_MATMUL, 2, 1);
    ir_tensor a = tens(IR_F32, 2, DIMS(2, 3), NULL), b = tens(IR_F32, 2, DIMS(4, 2), NULL);
    expect_error(n, &a, &b, NULL, "inner dimensions differ: A has K=3, B has K=4");
    ir_tensor s = tens(IR_F32, 0, NULL, NULL);
    expect_error(n, &s, &b, NULL, "rank >= 1");
    ir_tensor bb = tens(IR_F32, 3, DIMS(3, 3, 2), NULL), ab = tens(IR_F32, 3, DIMS(2, 2, 3), NULL);
    expect_error(n, &ab, &bb, NULL, "cannot broadcast");
    ir_tensor b64 = tens(IR_F64, 2, DIMS(3, 2), NULL);
    expect_error(n, &a, &b64, NULL, "dtype");
    ir_node *g = node(IR_OP_GEMM, 3, 1);
    ir_tensor gb = tens(IR_F32, 2, DIMS(3, 5), NULL), gc = tens(IR_F32, 1, DIMS(4), NULL);
    expect_error(g, &a, &gb, &gc, "C dim 0 is 4; it must be 1 or 5");
    ir_tensor a3 = tens(IR_F32, 3, DIMS(1, 2, 3), NULL);
    expect_error(g, &a3, &gb, NULL, "A must have rank 2");
    ir_tensor *all[] = {&a, &b, &s, &bb, &ab, &b64, &gb, &gc, &a3};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        ir_tensors_free(all[i], 1);
}
END_TEST

START_TEST(matmul_integer)
{
    ir_node *n = node(IR_OP_MATMUL_INTEGER, 4, 1);
    ir_tensor a = tens(IR_U8, 2, DIMS(2, 2), DBLS(11, 7, 3, 10));
    ir_tensor b = tens(IR_U8, 2, DIMS(2, 1), DBLS(1, 2));
    ir_tensor za = tens(IR_U8, 0, NULL, DBLS(12));
    ir_tensor zb = tens(IR_U8, 0, NULL, DBLS(0));
    const ir_tensor *in[4] = {&a, &b, &za, &zb};
    ir_tensor y;
    ck_assert_int_eq(ir_eval_node(n, in, &y, &D), 0);
    ck_assert_int_eq(y.dtype, IR_I32);
    /* (11-12)*1 + (7-12)*2 = -11; (3-12)*1 + (10-12)*2 = -13 */
    expect_vals(&y, DBLS(-11, -13), 2, 0);
    ir_tensors_free(&y, 1);
    ir_tensor *all[] = {&a, &b, &za, &zb};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        ir_tensors_free(all[i], 1);
}
END_TEST

/* ---- Conv --------------------------------------------------------------- */

static ir_tensor iota(ir_dtype dt, int rank, const int64_t *dims)
{
    ir_tensor t = tens(dt, rank, dims, NULL);
    for (int64_t i = 0; i < t.numel; i++)
        ir_tensor_setf(&t, i, (double)i);
    return t;
}

START_TEST(conv_3x3_with_padding)
{
    /* ONNX's basic_conv_with_padding: 5x5 iota, 3x3 ones, pads 1. */
    static const double want[] = {12, 21, 27, 33, 24, 33, 54, 63, 72, 51, 63, 99, 108, 117, 81,
                                  93, 144, 153, 162, 111, 72, 111, 117, 123, 84};
    ir_dtype dts[] = {IR_F32, IR_F64, IR_F16, IR_BF16};
    for (size_t k = 0; k < 4; k++) {
        ir_node *n = node(IR_OP_CONV, 2, 1);
        ir_node_set_ints(G, n, "pads", DIMS(1, 1, 1, 1), 4);
        ir_node_set_ints(G, n, "kernel_shape", DIMS(3, 3), 2);
        ir_tensor x = iota(dts[k], 4, DIMS(1, 1, 5, 5));
        ir_tensor w = tens(dts[k], 4, DIMS(1, 1, 3, 3), DBLS(1, 1, 1, 1, 1, 1, 1, 1, 1));
        ir_tensor y;
        ck_assert_int_eq(eval(n, &x, &w, NULL, &y), 0);
        expect_dims(&y, 4, DIMS(1, 1, 5, 5));
        expect_vals(&y, want, 25, 0);
        ir_tensors_free(&y, 1);
        ir_tensors_free(&x, 1);
        ir_tensors_free(&w, 1);
    }
}
END_TEST

START_TEST(conv_strides_groups_bias)
{
    ir_node *n = node(IR_OP_CONV, 2, 1);
    ir_node_set_ints(G, n, "pads", DIMS(1, 0, 1, 0), 4);
    ir_node_set_ints(G, n, "strides", DIMS(2, 2), 2);
    ir_tensor x = iota(IR_F32, 4, DIMS(1, 1, 7, 5));
    ir_tensor w = tens(IR_F32, 4, DIMS(1, 1, 3, 3), DBLS(1, 1, 1, 1, 1, 1, 1, 1, 1));
    ir_tensor y;
    ck_assert_int_eq(eval(n, &x, &w, NULL, &y), 0);
    /* ONNX's conv_with_strides_and_asymmetric_padding */
    expect_dims(&y, 4, DIMS(1, 1, 4, 2));
    expect_vals(&y, DBLS(21, 33, 99, 117, 189, 207, 171, 183), 8, 0);
    ir_tensors_free(&y, 1);
    /* 2 groups of one channel: y0 = 2*x0 + 1, y1 = 3*x1 - 1 */
    ir_node *g = node(IR_OP_CONV, 3, 1);
    ir_node_set_int(G, g, "group", 2);
    ir_tensor gx = tens(IR_F64, 4, DIMS(1, 2, 1, 2), DBLS(1, 2, 3, 4));
    ir_tensor gw = tens(IR_F64, 4, DIMS(2, 1, 1, 1), DBLS(2, 3));
    ir_tensor gb = tens(IR_F64, 1, DIMS(2), DBLS(1, -1));
    ck_assert_int_eq(eval(g, &gx, &gw, &gb, &y), 0);
    expect_vals(&y, DBLS(3, 5, 8, 11), 4, 0);
    ir_tensors_free(&y, 1);
    ir_tensor *all[] = {&x, &w, &gx, &gw, &gb};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        ir_tensors_free(all[i], 1);
}
END_TEST

START_TEST(conv_auto_pad)
{
    /* in 4, k 3, s 2: out 2, total pad 1, at the end (UPPER) or start. */
    const char *modes[] = {"SAME_UPPER", "SAME_LOWER", "VALID"};
    const double want[][2] = {{6, 7}, {3, 9}, {6, 0}};
    const int64_t outn[] = {2, 2, 1};
    for (int k = 0; k < 3; k++) {
        ir_node *n = node(IR_OP_CONV, 2, 1);
        ir_node_set_string(G, n, "auto_pad", modes[k]);
        ir_node_set_ints(G, n, "strides", DIMS(2), 1);
        ir_tensor x = tens(IR_F32, 3, DIMS(1, 1, 4), DBLS(1, 2, 3, 4));
        ir_tensor w = tens(IR_F32, 3, DIMS(1, 1, 3), DBLS(1, 1, 1));
        ir_tensor x64 = retype(&x, IR_F64), w64 = retype(&w, IR_F64);
        ir_tensor y, y64;
        ck_assert_int_eq(eval(n, &x, &w, NULL, &y), 0);
        ck_assert_int_eq(eval(n, &x64, &w64, NULL, &y64), 0);
        expect_dims(&y, 3, DIMS(1, 1, outn[k]));
        expect_vals(&y, want[k], (size_t)outn[k], 0);
        expect_vals(&y64, want[k], (size_t)outn[k], 0);
        ir_tensor *all[] = {&x, &w, &x64, &w64, &y, &y64};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++)
            ir_tensors_free(all[i], 1);
    }
}
END_TEST

/* One random conv in f32 (fast path) and f64 (double path). */
static void conv_compare(int rank, const int64_t *xd, const int64_t *wd, int64_t group,
                         const int64_t *strides, const int64_t *dil, const int64_t *pads,
                         bool bias)
{
    ir_node *n = node(IR_OP_CONV, bias ? 3 : 2, 1);
    int ns = rank - 2;
    ir_node_set_int(G, n, "group", group);
    if (strides)
        ir_node_set_ints(G, n, "strides", strides, ns);
    if (dil)
        ir_node_set_ints(G, n, "dilations", dil, ns);
    if (pads)
        ir_node_set_ints(G, n, "pads", pads, 2 * ns);
    ir_tensor x = trand(IR_F32, rank, xd), w = trand(IR_F32, rank, wd);
    ir_tensor b = trand(IR_F32, 1, wd);
    ir_tensor x64 = retype(&x, IR_F64), w64 = retype(&w, IR_F64), b64 = retype(&b, IR_F64);
    ir_tensor y, y64;
    ck_assert_int_eq(eval(n, &x, &w, bias ? &b : NULL, &y), 0);
    ck_assert_int_eq(eval(n, &x64, &w64, bias ? &b64 : NULL, &y64), 0);
    expect_close(&y, &y64, 1e-5);
    ir_tensor *all[] = {&x, &w, &b, &x64, &w64, &b64, &y, &y64};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        ir_tensors_free(all[i], 1);
}

START_TEST(conv_f32_fast_matches_double)
{
    conv_compare(4, DIMS(2, 4, 9, 11), DIMS(6, 2, 3, 3), 2, DIMS(2, 1), DIMS(1, 2),
                 DIMS(1, 2, 0, 3), true);
    conv_compare(4, DIMS(1, 3, 8, 8), DIMS(5, 3, 1, 1), 1, NULL, NULL, NULL, true);
    conv_compare(4, DIMS(1, 4, 7, 7), DIMS(4, 1, 3, 3), 4, DIMS(1, 1), NULL, DIMS(1, 1, 1, 1),
                 false);
    conv_compare(3, DIMS(2, 3, 17), DIMS(4, 3, 4), 1, DIMS(3), DIMS(2), DIMS(2, 1), true);
    conv_compare(5, DIMS(1, 2, 5, 6, 4), DIMS(3, 2, 2, 3, 2), 1, DIMS(1, 2, 1), NULL,
                 DIMS(0, 1, 1, 1, 0, 0), true);
    conv_compare(4, DIMS(1, 2, 5, 5), DIMS(2, 2, 1, 1), 1, DIMS(2, 2), NULL, DIMS(1, 1, 1, 1),
                 false);
}
END_TEST

/* f16 and bf16 widen exactly to f32, so they take the fast paths too;
 * compare with the double path on the same (rounded) values. */
START_TEST(half_types_fast_match_double)
{
    ir_dtype dts[] = {IR_F16, IR_BF16};
    for (int k = 0; k < 2; k++) {
        double tol = dts[k] == IR_F16 ? 2e-3 : 1.6e-2;
        ir_tensor x0 = trand(IR_F32, 4, DIMS(1, 4, 6, 5)), w0 = trand(IR_F32, 4, DIMS(6, 2, 3, 3));
        ir_tensor x = retype(&x0, dts[k]), w = retype(&w0, dts[k]);
        ir_tensor x64 = retype(&x, IR_F64), w64 = retype(&w, IR_F64);
        ir_tensor y, y64;
        ir_node *cv = node(IR_OP_CONV, 2, 1);
        ir_node_set_int(G, cv, "group", 2);
        ir_node_set_ints(G, cv, "pads", DIMS(1, 1, 1, 1), 4);
        ck_assert_int_eq(eval(cv, &x, &w, NULL, &y), 0);
        ck_assert_int_eq(y.dtype, dts[k]);
        ck_assert_int_eq(eval(cv, &x64, &w64, NULL, &y64), 0);
        expect_close(&y, &y64, tol);
        ir_tensors_free(&y, 1);
        ir_tensors_free(&y64, 1);
        /* ConvTranspose with weights [C=4, M/group=3] */
        ir_tensor wt0 = trand(IR_F32, 4, DIMS(4, 3, 2, 2));
        ir_tensor wt = retype(&wt0, dts[k]), wt64 = retype(&wt, IR_F64);
        ir_node *ct = node(IR_OP_CONV_TRANSPOSE, 2, 1);
        ir_node_set_ints(G, ct, "strides", DIMS(2, 2), 2);
        ck_assert_int_eq(eval(ct, &x, &wt, NULL, &y), 0);
        ck_assert_int_eq(eval(ct, &x64, &wt64, NULL, &y64), 0);
        expect_close(&y, &y64, tol);
        ir_tensors_free(&y, 1);
        ir_tensors_free(&y64, 1);
        /* MatMul [4,6,5] x [5,7] and Gemm */
        ir_tensor a0 = trand(IR_F32, 3, DIMS(4, 6, 5)), b0 = trand(IR_F32, 2, DIMS(5, 7));
        ir_tensor a = retype(&a0, dts[k]), b = retype(&b0, dts[k]);
        ir_tensor a64 = retype(&a, IR_F64), b64 = retype(&b, IR_F64);
        ir_node *mm = node(IR_OP_MATMUL, 2, 1);
        ck_assert_int_eq(eval(mm, &a, &b, NULL, &y), 0);
        ck_assert_int_eq(eval(mm, &a64, &b64, NULL, &y64), 0);
        expect_close(&y, &y64, tol);
        ir_tensors_free(&y, 1);
        ir_tensors_free(&y64, 1);
        ir_tensor ga0 = trand(IR_F32, 2, DIMS(5, 6));
        ir_tensor ga = retype(&ga0, dts[k]), ga64 = retype(&ga, IR_F64);
        ir_node *gm = node(IR_OP_GEMM, 2, 1);
        ir_node_set_int(G, gm, "transA", 1);
        ck_assert_int_eq(eval(gm, &ga, &b, NULL, &y), 0);
        ck_assert_int_eq(eval(gm, &ga64, &b64, NULL, &y64), 0);
        expect_close(&y, &y64, tol);
        ir_tensors_free(&y, 1);
        ir_tensors_free(&y64, 1);
        ir_tensor *all[] = {&x0, &w0, &x, &w, &x64, &w64, &wt0, &wt, &wt64,
                            &a0, &b0, &a, &b, &a64, &b64, &ga0, &ga, &ga64};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++)
            ir_tensors_free(all[i], 1);
    }
}
END_TEST

START_TEST(conv_errors)
{
    ir_node *n = node(IR_OP_CONV, 2, 1);
    ir_node_set_ints(G, n, "kernel_shape", DIMS(3, 3, 3), 3);
    ir_tensor x = tens(IR_F32, 4, DIMS(1, 2, 5, 5), NULL);
    ir_tensor w = tens(IR_F32, 4, DIMS(4, 2, 3, 3), NULL);
    expect_error(n, &x, &w, NULL, "kernel_shape has 3 dims, input has rank 4");
    n = node(IR_OP_CONV, 2, 1);
    ir_node_set_ints(G, n, "kernel_shape", DIMS(3, 2), 2);
    expect_error(n, &x, &w, NULL, "kernel_shape[1] is 2 but the weights have 3");
    n = node(IR_OP_CONV, 2, 1);
    ir_tensor w3 = tens(IR_F32, 4, DIMS(4, 3, 3, 3), NULL);
    expect_error(n, &x, &w3, NULL, "channel mismatch: input has 2 channels, weights expect 3");
    n = node(IR_OP_CONV, 2, 1);
    ir_node_set_int(G, n, "group", 2);
    ir_tensor w1 = tens(IR_F32, 4, DIMS(3, 1, 3, 3), NULL);
    expect_error(n, &x, &w1, NULL, "group 2 does not divide the 3 output channels");
    n = node(IR_OP_CONV, 2, 1);
    ir_node_set_int(G, n, "group", 0);
    expect_error(n, &x, &w, NULL, "group is 0");
    n = node(IR_OP_CONV, 2, 1);
    ir_node_set_ints(G, n, "strides", DIMS(1), 1);
    expect_error(n, &x, &w, NULL, "strides has 1 values, expected 2");
    n = node(IR_OP_CONV, 2, 1);
    ir_node_set_ints(G, n, "pads", DIMS(1, 1), 2);
    expect_error(n, &x, &w, NULL, "pads has 2 values, expected 4");
    n = node(IR_OP_CONV, 2, 1);
    ir_node_set_ints(G, n, "pads", DIMS(0, -1, 0, 0), 4);
    expect_error(n, &x, &w, NULL, "pads[1] is -1");
    n = node(IR_OP_CONV, 2, 1);
    ir_node_set_ints(G, n, "dilations", DIMS(1, 0), 2);
    expect_error(n, &x, &w, NULL, "dilations[1] is 0");
    n = node(IR_OP_CONV, 2, 1);
    ir_node_set_string(G, n, "auto_pad", "SAME");
    expect_error(n, &x, &w, NULL, "unknown auto_pad 'SAME'");
    n = node(IR_OP_CONV, 2, 1);
    ir_node_set_ints(G, n, "dilations", DIMS(1, 4), 2);
    expect_error(n, &x, &w, NULL, "larger than the padded input");
    n = node(IR_OP_CONV, 2, 1);
    ir_node_set_ints(G, n, "pads", DIMS(0, INT64_MAX, 0, 0), 4);
    expect_error(n, &x, &w, NULL, "overflow");
    n = node(IR_OP_CONV, 2, 1);
    ir_tensor x2 = tens(IR_F32, 2, DIMS(1, 2), NULL), w2 = tens(IR_F32, 2, DIMS(1, 2), NULL);
    expect_error(n, &x2, &w2, NULL, "rank >= 3");
    ir_tensor w5 = tens(IR_F32, 5, DIMS(4, 2, 3, 3, 1), NULL);
    expect_error(n, &x, &w5, NULL, "weights have rank 5, input has rank 4");
    ir_node *nb = node(IR_OP_CONV, 3, 1);
    ir_tensor b = tens(IR_F32, 1, DIMS(3), NULL);
    expect_error(nb, &x, &w, &b, "bias has 3 values for 4 output channels");
    ir_tensor *all[] = {&x, &w, &w3, &w1, &x2, &w2, &w5, &b};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        ir_tensors_free(all[i], 1);
}
END_TEST

START_TEST(conv_integer)
{
    ir_node *n = node(IR_OP_CONV_INTEGER, 4, 1);
    ir_node_set_ints(G, n, "pads", DIMS(1, 1), 2);
    ir_tensor x = tens(IR_U8, 3, DIMS(1, 1, 3), DBLS(2, 3, 4));
    ir_tensor w = tens(IR_U8, 3, DIMS(1, 1, 2), DBLS(1, 1));
    ir_tensor xz = tens(IR_U8, 0, NULL, DBLS(1));
    const ir_tensor *in[4] = {&x, &w, &xz, NULL};
    ir_tensor y;
    ck_assert_int_eq(ir_eval_node(n, in, &y, &D), 0);
    ck_assert_int_eq(y.dtype, IR_I32);
    /* x - 1 = [1, 2, 3]; padding stands for the zero point and adds 0. */
    expect_vals(&y, DBLS(1, 3, 5, 3), 4, 0);
    ir_tensors_free(&y, 1);
    ir_tensors_free(&x, 1);
    ir_tensors_free(&w, 1);
    ir_tensors_free(&xz, 1);
}
END_TEST

/* ---- ConvTranspose ------------------------------------------------------ */

START_TEST(conv_transpose_strided)
{
    ir_tensor x = tens(IR_F32, 3, DIMS(1, 1, 3), DBLS(1, 2, 3));
    ir_tensor w = tens(IR_F32, 3, DIMS(1, 1, 3), DBLS(1, 1, 1));
    ir_tensor y;
    ir_node *n = node(IR_OP_CONV_TRANSPOSE, 2, 1);
    ir_node_set_ints(G, n, "strides", DIMS(2), 1);
    ck_assert_int_eq(eval(n, &x, &w, NULL, &y), 0);
    expect_dims(&y, 3, DIMS(1, 1, 7));
    expect_vals(&y, DBLS(1, 1, 3, 2, 5, 3, 3), 7, 0);
    ir_tensors_free(&y, 1);
    n = node(IR_OP_CONV_TRANSPOSE, 2, 1);
    ir_node_set_ints(G, n, "strides", DIMS(2), 1);
    ir_node_set_ints(G, n, "pads", DIMS(1, 1), 2);
    ck_assert_int_eq(eval(n, &x, &w, NULL, &y), 0);
    expect_vals(&y, DBLS(1, 3, 2, 5, 3), 5, 0);
    ir_tensors_free(&y, 1);
    n = node(IR_OP_CONV_TRANSPOSE, 2, 1);
    ir_node_set_ints(G, n, "strides", DIMS(2), 1);
    ir_node_set_ints(G, n, "output_padding", DIMS(1), 1);
    ck_assert_int_eq(eval(n, &x, &w, NULL, &y), 0);
    expect_vals(&y, DBLS(1, 1, 3, 2, 5, 3, 3, 0), 8, 0);
    ir_tensors_free(&y, 1);
    /* output_shape 6 with stride 2: total pad 1, SAME_UPPER puts it at the end */
    n = node(IR_OP_CONV_TRANSPOSE, 2, 1);
    ir_node_set_ints(G, n, "strides", DIMS(2), 1);
    ir_node_set_string(G, n, "auto_pad", "SAME_UPPER");
    ck_assert_int_eq(eval(n, &x, &w, NULL, &y), 0);
    expect_vals(&y, DBLS(1, 1, 3, 2, 5, 3), 6, 0);
    ir_tensors_free(&y, 1);
    n = node(IR_OP_CONV_TRANSPOSE, 2, 1);
    ir_node_set_ints(G, n, "strides", DIMS(2), 1);
    ir_node_set_ints(G, n, "output_shape", DIMS(6), 1);
    ck_assert_int_eq(eval(n, &x, &w, NULL, &y), 0);
    expect_vals(&y, DBLS(1, 3, 2, 5, 3, 3), 6, 0);
    ir_tensors_free(&y, 1);
    ir_tensors_free(&x, 1);
    ir_tensors_free(&w, 1);
}
END_TEST

START_TEST(conv_transpose_groups_dilations)
{
    /* group 2: channel 0 -> output 0 with w=[1,2], channel 1 -> output 1
     * with w=[3,4]; dilation 2 spreads the taps; bias per output. */
    ir_node *n = node(IR_OP_CONV_TRANSPOSE, 3, 1);
    ir_node_set_int(G, n, "group", 2);
    ir_node_set_ints(G, n, "dilations", DIMS(2), 1);
    ir_tensor x = tens(IR_F64, 3, DIMS(1, 2, 2), DBLS(1, 2, 10, 20));
    ir_tensor w = tens(IR_F64, 3, DIMS(2, 1, 2), DBLS(1, 2, 3, 4));
    ir_tensor b = tens(IR_F64, 1, DIMS(2), DBLS(0.5, -0.5));
    ir_tensor y;
    ck_assert_int_eq(eval(n, &x, &w, &b, &y), 0);
    /* out len = (2-1) + (2-1)*2 + 1 = 4; y0 = [1, 2, 2, 4] + .5,
     * y1 = [30, 60, 40, 80] - .5 */
    expect_dims(&y, 3, DIMS(1, 2, 4));
    expect_vals(&y, DBLS(1.5, 2.5, 2.5, 4.5, 29.5, 59.5, 39.5, 79.5), 8, 0);
    ir_tensors_free(&y, 1);
    ir_tensor wbad = tens(IR_F64, 3, DIMS(3, 1, 2), NULL);
    expect_error(n, &x, &wbad, &b, "channel mismatch: input has 2 channels, weights have 3");
    ir_tensor *all[] = {&x, &w, &b, &wbad};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        ir_tensors_free(all[i], 1);
}
END_TEST

/* One random ConvTranspose in f32 (matrix-core path) and f64 (scatter). */
static void convt_compare(int rank, const int64_t *xd, const int64_t *wd, int64_t group,
                          const int64_t *strides, const int64_t *dil, const int64_t *pads,
                          const int64_t *opad)
{
    ir_node *n = node(IR_OP_CONV_TRANSPOSE, 3, 1);
    int ns = rank - 2;
    ir_node_set_int(G, n, "group", group);
    if (strides)
        ir_node_set_ints(G, n, "strides", strides, ns);
    if (dil)
        ir_node_set_ints(G, n, "dilations", dil, ns);
    if (pads)
        ir_node_set_ints(G, n, "pads", pads, 2 * ns);
    if (opad)
        ir_node_set_ints(G, n, "output_padding", opad, ns);
    ir_tensor x = trand(IR_F32, rank, xd), w = trand(IR_F32, rank, wd);
    ir_tensor b = trand(IR_F32, 1, DIMS(wd[1] * group));
    ir_tensor x64 = retype(&x, IR_F64), w64 = retype(&w, IR_F64), b64 = retype(&b, IR_F64);
    ir_tensor y, y64;
    ck_assert_int_eq(eval(n, &x, &w, &b, &y), 0);
    ck_assert_int_eq(eval(n, &x64, &w64, &b64, &y64), 0);
    expect_close(&y, &y64, 1e-5);
    ir_tensor *all[] = {&x, &w, &b, &x64, &w64, &b64, &y, &y64};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        ir_tensors_free(all[i], 1);
}

START_TEST(conv_transpose_f32_fast_matches_double)
{
    convt_compare(4, DIMS(2, 4, 5, 6), DIMS(4, 3, 3, 2), 2, DIMS(2, 3), DIMS(1, 2),
                  DIMS(1, 0, 2, 1), DIMS(1, 2));
    convt_compare(3, DIMS(1, 3, 9), DIMS(3, 2, 4), 1, DIMS(3), NULL, NULL, NULL);
    convt_compare(5, DIMS(1, 2, 3, 4, 2), DIMS(2, 2, 2, 3, 2), 1, DIMS(2, 1, 2), NULL,
                  DIMS(0, 1, 0, 1, 0, 1), NULL);
}
END_TEST

/* ---- normalizations ----------------------------------------------------- */

START_TEST(batchnorm_inference)
{
    ir_node *n = node(IR_OP_BATCH_NORMALIZATION, 5, 1);
    ir_node_set_float(G, n, "epsilon", 0.0f);
    ir_tensor x = tens(IR_F32, 3, DIMS(1, 2, 2), DBLS(1, 3, 10, 20));
    ir_tensor s = tens(IR_F32, 1, DIMS(2), DBLS(2, 1));
    ir_tensor b = tens(IR_F32, 1, DIMS(2), DBLS(1, 0));
    ir_tensor m = tens(IR_F32, 1, DIMS(2), DBLS(2, 10));
    ir_tensor v = tens(IR_F32, 1, DIMS(2), DBLS(4, 25));
    const ir_tensor *in[5] = {&x, &s, &b, &m, &v};
    ir_tensor y;
    ck_assert_int_eq(ir_eval_node(n, in, &y, &D), 0);
    expect_vals(&y, DBLS(0, 2, 0, 2), 4, 1e-7);
    ir_tensors_free(&y, 1);
    ir_node *t = node(IR_OP_BATCH_NORMALIZATION, 5, 1);
    ir_node_set_int(G, t, "training_mode", 1);
    ck_assert_int_eq(ir_eval_node(t, in, &y, &D), -1);
    ck_assert_ptr_nonnull(strstr(D.msg, "training mode is not supported"));
    ir_tensor s3 = tens(IR_F32, 1, DIMS(3), NULL);
    in[1] = &s3;
    ck_assert_int_eq(ir_eval_node(n, in, &y, &D), -1);
    ck_assert_ptr_nonnull(strstr(D.msg, "scale has 3 values for 2 channels"));
    ir_tensor *all[] = {&x, &s, &b, &m, &v, &s3};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        ir_tensors_free(all[i], 1);
}
END_TEST

START_TEST(instance_and_group_norm)
{
    ir_node *n = node(IR_OP_INSTANCE_NORMALIZATION, 3, 1);
    ir_node_set_float(G, n, "epsilon", 0.0f);
    ir_tensor x = tens(IR_F32, 3, DIMS(1, 2, 2), DBLS(1, 3, 5, 9));
    ir_tensor s = tens(IR_F32, 1, DIMS(2), DBLS(1, 2));
    ir_tensor b = tens(IR_F32, 1, DIMS(2), DBLS(0, 1));
    ir_tensor y;
    ck_assert_int_eq(eval(n, &x, &s, &b, &y), 0);
    expect_vals(&y, DBLS(-1, 1, -1, 3), 4, 1e-7);
    ir_tensors_free(&y, 1);
    /* one group over both channels: mean 4.5, var 8.75 */
    ir_node *g = node(IR_OP_GROUP_NORMALIZATION, 3, 1);
    ir_node_set_int(G, g, "num_groups", 1);
    ir_node_set_float(G, g, "epsilon", 0.0f);
    ck_assert_int_eq(eval(g, &x, &s, &b, &y), 0);
    double sd = sqrt(8.75);
    expect_vals(&y, DBLS(-3.5 / sd, -1.5 / sd, 2 * 0.5 / sd + 1, 2 * 4.5 / sd + 1), 4, 1e-6);
    ir_tensors_free(&y, 1);
    ir_node *g3 = node(IR_OP_GROUP_NORMALIZATION, 3, 1);
    ir_node_set_int(G, g3, "num_groups", 3);
    expect_error(g3, &x, &s, &b, "num_groups 3 does not divide the 2 channels");
    ir_tensor *all[] = {&x, &s, &b};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        ir_tensors_free(all[i], 1);
}
END_TEST

START_TEST(layernorm_outputs)
{
    ir_node *n = node(IR_OP_LAYER_NORMALIZATION, 3, 3);
    ir_node_set_float(G, n, "epsilon", 0.0f);
    ir_tensor x = tens(IR_F32, 2, DIMS(2, 3), DBLS(1, 2, 3, 2, 4, 6));
    ir_tensor s = tens(IR_F32, 1, DIMS(3), DBLS(1, 1, 2));
    ir_tensor b = tens(IR_F32, 1, DIMS(3), DBLS(0, 0, 1));
    ir_tensor y[3];
    ck_assert_int_eq(eval(n, &x, &s, &b, y), 0);
    double i0 = 1 / sqrt(2.0 / 3), i1 = 1 / sqrt(8.0 / 3);
    expect_vals(&y[0], DBLS(-i0, 0, 2 * i0 + 1, -2 * i1, 0, 4 * i1 + 1), 6, 1e-6);
    expect_dims(&y[1], 2, DIMS(2, 1));
    ck_assert_int_eq(y[1].dtype, IR_F32);
    expect_vals(&y[1], DBLS(2, 4), 2, 1e-7);
    expect_vals(&y[2], DBLS(i0, i1), 2, 1e-6);
    ir_tensors_free(y, 3);
    /* axis 0 normalizes everything; no bias */
    ir_node *a0 = node(IR_OP_LAYER_NORMALIZATION, 2, 1);
    ir_node_set_int(G, a0, "axis", 0);
    ir_node_set_float(G, a0, "epsilon", 0.0f);
    ir_tensor s6 = tens(IR_F32, 2, DIMS(2, 3), DBLS(1, 1, 1, 1, 1, 1));
    ck_assert_int_eq(eval(a0, &x, &s6, NULL, y), 0);
    double sd = sqrt((4 + 1 + 0 + 1 + 1 + 9) / 6.0); /* mean 3 */
    expect_vals(&y[0], DBLS(-2 / sd, -1 / sd, 0, -1 / sd, 1 / sd, 3 / sd), 6, 1e-6);
    ir_tensors_free(y, 1);
    /* RMSNorm: x / sqrt(mean(x^2) + eps) * scale */
    ir_node *r = node(IR_OP_RMS_NORMALIZATION, 2, 1);
    ir_node_set_float(G, r, "epsilon", 0.0f);
    ck_assert_int_eq(eval(r, &x, &s, NULL, y), 0);
    double r0 = sqrt(14.0 / 3), r1 = sqrt(56.0 / 3);
    expect_vals(&y[0], DBLS(1 / r0, 2 / r0, 6 / r0, 2 / r1, 4 / r1, 12 / r1), 6, 1e-6);
    ir_tensors_free(y, 1);
    ir_tensor bad = tens(IR_F32, 1, DIMS(2), NULL);
    expect_error(n, &x, &bad, NULL, "Scale dim 0 is 2; it must be 1 or 3");
    ir_tensor *all[] = {&x, &s, &b, &s6, &bad};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        ir_tensors_free(all[i], 1);
}
END_TEST

START_TEST(other_norms)
{
    ir_tensor x = tens(IR_F32, 4, DIMS(1, 3, 1, 1), DBLS(1, 2, 2));
    ir_tensor y;
    /* LRN size 3: squares [1, 4, 4]; sums [5, 9, 8] */
    ir_node *l = node(IR_OP_LRN, 1, 1);
    ir_node_set_int(G, l, "size", 3);
    ir_node_set_float(G, l, "alpha", 3.0f);
    ir_node_set_float(G, l, "beta", 1.0f);
    ir_node_set_float(G, l, "bias", 1.0f);
    ck_assert_int_eq(eval(l, &x, NULL, NULL, &y), 0);
    expect_vals(&y, DBLS(1.0 / 6, 2.0 / 10, 2.0 / 9), 3, 1e-6);
    ir_tensors_free(&y, 1);
    /* LpNormalization over channels */
    ir_node *p2 = node(IR_OP_LP_NORMALIZATION, 1, 1);
    ir_node_set_int(G, p2, "axis", 1);
    ck_assert_int_eq(eval(p2, &x, NULL, NULL, &y), 0);
    expect_vals(&y, DBLS(1.0 / 3, 2.0 / 3, 2.0 / 3), 3, 1e-6);
    ir_tensors_free(&y, 1);
    ir_node *p1 = node(IR_OP_LP_NORMALIZATION, 1, 1);
    ir_node_set_int(G, p1, "axis", 1);
    ir_node_set_int(G, p1, "p", 1);
    ck_assert_int_eq(eval(p1, &x, NULL, NULL, &y), 0);
    expect_vals(&y, DBLS(0.2, 0.4, 0.4), 3, 1e-6);
    ir_tensors_free(&y, 1);
    /* MVN over axis 1: mean 5/3 */
    ir_node *m = node(IR_OP_MEAN_VARIANCE_NORMALIZATION, 1, 1);
    ir_node_set_ints(G, m, "axes", DIMS(1), 1);
    ck_assert_int_eq(eval(m, &x, NULL, NULL, &y), 0);
    double sd = sqrt(2.0 / 9);
    expect_vals(&y, DBLS(-2.0 / 3 / sd, 1.0 / 3 / sd, 1.0 / 3 / sd), 3, 1e-6);
    ir_tensors_free(&y, 1);
    ir_tensors_free(&x, 1);
}
END_TEST

/* ---- pools -------------------------------------------------------------- */

START_TEST(maxpool_indices)
{
    ir_node *n = node(IR_OP_MAX_POOL, 1, 2);
    ir_node_set_ints(G, n, "kernel_shape", DIMS(2, 2), 2);
    ir_tensor x = tens(IR_F32, 4, DIMS(1, 1, 3, 3), DBLS(1, 9, 2, 4, 3, 8, 7, 5, 6));
    ir_tensor y[2];
    ck_assert_int_eq(eval(n, &x, NULL, NULL, y), 0);
    expect_dims(&y[0], 4, DIMS(1, 1, 2, 2));
    expect_vals(&y[0], DBLS(9, 9, 7, 8), 4, 0);
    ck_assert_int_eq(y[1].dtype, IR_I64);
    expect_vals(&y[1], DBLS(1, 1, 6, 5), 4, 0);
    ir_tensors_free(y, 2);
    /* column-major indices: (h, w) -> h + w*H */
    ir_node *c = node(IR_OP_MAX_POOL, 1, 2);
    ir_node_set_ints(G, c, "kernel_shape", DIMS(2, 2), 2);
    ir_node_set_int(G, c, "storage_order", 1);
    ck_assert_int_eq(eval(c, &x, NULL, NULL, y), 0);
    expect_vals(&y[1], DBLS(3, 3, 2, 7), 4, 0);
    ir_tensors_free(y, 2);
    /* ceil_mode, stride 2, padding never wins over real values */
    ir_node *p = node(IR_OP_MAX_POOL, 1, 1);
    ir_node_set_ints(G, p, "kernel_shape", DIMS(2, 2), 2);
    ir_node_set_ints(G, p, "strides", DIMS(2, 2), 2);
    ir_node_set_int(G, p, "ceil_mode", 1);
    ir_tensor neg = tens(IR_F32, 4, DIMS(1, 1, 3, 3), DBLS(-1, -9, -2, -4, -3, -8, -7, -5, -6));
    ck_assert_int_eq(eval(p, &neg, NULL, NULL, y), 0);
    expect_dims(&y[0], 4, DIMS(1, 1, 2, 2));
    expect_vals(&y[0], DBLS(-1, -2, -5, -6), 4, 0);
    ir_tensors_free(y, 1);
    /* integers */
    ir_tensor u = tens(IR_U8, 4, DIMS(1, 1, 1, 3), DBLS(200, 255, 3));
    ir_node *q = node(IR_OP_MAX_POOL, 1, 1);
    ir_node_set_ints(G, q, "kernel_shape", DIMS(1, 2), 2);
    ck_assert_int_eq(eval(q, &u, NULL, NULL, y), 0);
    ck_assert_int_eq(y[0].dtype, IR_U8);
    expect_vals(&y[0], DBLS(255, 255), 2, 0);
    ir_tensors_free(y, 1);
    ir_tensors_free(&x, 1);
    ir_tensors_free(&neg, 1);
    ir_tensors_free(&u, 1);
}
END_TEST

START_TEST(avgpool_pads_and_ceil)
{
    ir_tensor x = tens(IR_F32, 4, DIMS(1, 1, 2, 2), DBLS(1, 2, 3, 4));
    ir_tensor y;
    for (int incl = 0; incl < 2; incl++) {
        ir_node *n = node(IR_OP_AVERAGE_POOL, 1, 1);
        ir_node_set_ints(G, n, "kernel_shape", DIMS(2, 2), 2);
        ir_node_set_ints(G, n, "pads", DIMS(1, 1, 1, 1), 4);
        ir_node_set_int(G, n, "count_include_pad", incl);
        ck_assert_int_eq(eval(n, &x, NULL, NULL, &y), 0);
        expect_dims(&y, 4, DIMS(1, 1, 3, 3));
        if (incl)
            expect_vals(&y, DBLS(0.25, 0.75, 0.5, 1, 2.5, 1.5, 0.75, 1.75, 1), 9, 1e-7);
        else
            expect_vals(&y, DBLS(1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4), 9, 1e-7);
        ir_tensors_free(&y, 1);
    }
    /* ONNX's averagepool_2d_ceil_last_window_starts_on_pad: the ceil
     * window would start in the end pad, so the output shrinks to 1. */
    ir_node *c = node(IR_OP_AVERAGE_POOL, 1, 1);
    ir_node_set_ints(G, c, "kernel_shape", DIMS(3, 3), 2);
    ir_node_set_ints(G, c, "strides", DIMS(3, 3), 2);
    ir_node_set_ints(G, c, "pads", DIMS(1, 1, 1, 1), 4);
    ir_node_set_int(G, c, "ceil_mode", 1);
    ir_node_set_int(G, c, "count_include_pad", 1);
    ck_assert_int_eq(eval(c, &x, NULL, NULL, &y), 0);
    expect_dims(&y, 4, DIMS(1, 1, 1, 1));
    expect_vals(&y, DBLS(10.0 / 9), 1, 1e-7);
    ir_tensors_free(&y, 1);
    /* ceil window past the end pad: count_include_pad counts only up to it */
    ir_tensor x5 = tens(IR_F64, 3, DIMS(1, 1, 5), DBLS(1, 2, 3, 4, 5));
    ir_node *e = node(IR_OP_AVERAGE_POOL, 1, 1);
    ir_node_set_ints(G, e, "kernel_shape", DIMS(2), 1);
    ir_node_set_ints(G, e, "strides", DIMS(2), 1);
    ir_node_set_int(G, e, "ceil_mode", 1);
    ir_node_set_int(G, e, "count_include_pad", 1);
    ck_assert_int_eq(eval(e, &x5, NULL, NULL, &y), 0);
    expect_vals(&y, DBLS(1.5, 3.5, 5), 3, 1e-12);
    ir_tensors_free(&y, 1);
    /* LpPool p=2 */
    ir_node *lp = node(IR_OP_LP_POOL, 1, 1);
    ir_node_set_ints(G, lp, "kernel_shape", DIMS(2), 1);
    ir_node_set_ints(G, lp, "strides", DIMS(3), 1);
    ck_assert_int_eq(eval(lp, &x5, NULL, NULL, &y), 0);
    expect_vals(&y, DBLS(sqrt(5), sqrt(41)), 2, 1e-12);
    ir_tensors_free(&y, 1);
    ir_tensors_free(&x, 1);
    ir_tensors_free(&x5, 1);
}
END_TEST

START_TEST(global_pools)
{
    ir_tensor x = tens(IR_F32, 4, DIMS(1, 2, 2, 2), DBLS(1, 2, 3, 4, -5, -6, -7, -8));
    ir_tensor y;
    int ops[] = {IR_OP_GLOBAL_AVERAGE_POOL, IR_OP_GLOBAL_MAX_POOL, IR_OP_GLOBAL_LP_POOL};
    const double want[][2] = {{2.5, -6.5}, {4, -5}, {sqrt(30), sqrt(174)}};
    for (int k = 0; k < 3; k++) {
        ir_node *n = node(ops[k], 1, 1);
        ck_assert_int_eq(eval(n, &x, NULL, NULL, &y), 0);
        expect_dims(&y, 4, DIMS(1, 2, 1, 1));
        expect_vals(&y, want[k], 2, 1e-6);
        ir_tensors_free(&y, 1);
    }
    ir_tensors_free(&x, 1);
}
END_TEST

START_TEST(pool_errors)
{
    ir_tensor x = tens(IR_F32, 4, DIMS(1, 1, 4, 4), NULL);
    ir_node *n = node(IR_OP_MAX_POOL, 1, 1);
    expect_error(n, &x, NULL, NULL, "kernel_shape is required");
    n = node(IR_OP_MAX_POOL, 1, 1);
    ir_node_set_ints(G, n, "kernel_shape", DIMS(2), 1);
    expect_error(n, &x, NULL, NULL, "kernel_shape has 1 dims, input has rank 4");
    n = node(IR_OP_AVERAGE_POOL, 1, 1);
    ir_node_set_ints(G, n, "kernel_shape", DIMS(5, 5), 2);
    expect_error(n, &x, NULL, NULL, "larger than the padded input");
    n = node(IR_OP_MAX_POOL, 1, 1);
    ir_node_set_ints(G, n, "kernel_shape", DIMS(2, 2), 2);
    ir_node_set_int(G, n, "storage_order", 2);
    expect_error(n, &x, NULL, NULL, "storage_order is 2");
    ir_tensors_free(&x, 1);
}
END_TEST

/* ---- softmax family ------------------------------------------------------ */

START_TEST(softmax_stable)
{
    ir_tensor x = tens(IR_F32, 2, DIMS(2, 3), DBLS(1000, 1001, 1002, 0, 0, 0));
    ir_tensor y;
    ir_node *s = node(IR_OP_SOFTMAX, 1, 1);
    ck_assert_int_eq(eval(s, &x, NULL, NULL, &y), 0);
    double z = 1 + exp(1) + exp(2);
    expect_vals(&y, DBLS(1 / z, exp(1) / z, exp(2) / z, 1.0 / 3, 1.0 / 3, 1.0 / 3), 6, 1e-6);
    ir_tensors_free(&y, 1);
    ir_node *l = node(IR_OP_LOG_SOFTMAX, 1, 1);
    ck_assert_int_eq(eval(l, &x, NULL, NULL, &y), 0);
    double lz = log(z);
    expect_vals(&y, DBLS(-lz, 1 - lz, 2 - lz, -log(3), -log(3), -log(3)), 6, 1e-6);
    ir_tensors_free(&y, 1);
    /* axis 0 */
    ir_node *a = node(IR_OP_SOFTMAX, 1, 1);
    ir_node_set_int(G, a, "axis", 0);
    ir_tensor x2 = tens(IR_F64, 2, DIMS(2, 2), DBLS(0, 1, 0, 1));
    ck_assert_int_eq(eval(a, &x2, NULL, NULL, &y), 0);
    expect_vals(&y, DBLS(0.5, 0.5, 0.5, 0.5), 4, 1e-12);
    ir_tensors_free(&y, 1);
    ir_node *h = node(IR_OP_HARDMAX, 1, 1);
    ir_tensor x3 = tens(IR_F32, 2, DIMS(2, 3), DBLS(3, 7, 7, -1, -2, -3));
    ck_assert_int_eq(eval(h, &x3, NULL, NULL, &y), 0);
    expect_vals(&y, DBLS(0, 1, 0, 1, 0, 0), 6, 0);
    ir_tensors_free(&y, 1);
    ir_node *bad = node(IR_OP_SOFTMAX, 1, 1);
    ir_node_set_int(G, bad, "axis", 2);
    expect_error(bad, &x, NULL, NULL, "axis 2 is out of range for rank 2");
    ir_tensors_free(&x, 1);
    ir_tensors_free(&x2, 1);
    ir_tensors_free(&x3, 1);
}
END_TEST

/* ---- symbolic shape inference ------------------------------------------- */

static ir_type ty(ir_dtype dt, int rank, const ir_dim *dims)
{
    ir_type t = {dt, rank, {{0, 0}}};
    for (int i = 0; i < rank; i++)
        t.dims[i] = dims[i];
    return t;
}

#define C(v) ir_dim_const(v)
#define DIMV(...) ((const ir_dim[]){__VA_ARGS__})

START_TEST(symbolic_shapes)
{
    ir_dim N = {0, ir_graph_sym(G, "N", 1)}, H = {0, ir_graph_sym(G, "H", 1)};
    ir_dim W = {0, ir_graph_sym(G, "W", 1)}, S = {0, ir_graph_sym(G, "S", 1)};
    /* Conv 7x7 stride 2 pad 3: the batch symbol passes, 224 -> 112 */
    ir_type ct[2] = {ty(IR_F32, 4, DIMV(N, C(3), C(224), H)),
                     ty(IR_F32, 4, DIMV(C(64), C(3), C(7), C(7)))};
    ir_node *c = typed_node(IR_OP_CONV, 2, ct, 1);
    ir_node_set_ints(G, c, "strides", DIMS(2, 2), 2);
    ir_node_set_ints(G, c, "pads", DIMS(3, 3, 3, 3), 4);
    /* A 3x3 SAME conv with stride 1 keeps symbolic spatial dims. */
    ir_type st[2] = {ty(IR_F32, 4, DIMV(N, C(8), H, W)), ty(IR_F32, 4, DIMV(C(4), C(8), C(3), C(3)))};
    ir_node *same = typed_node(IR_OP_CONV, 2, st, 1);
    ir_node_set_string(G, same, "auto_pad", "SAME_UPPER");
    /* MatMul [N, S, 768] x [768, 3072] */
    ir_type mt[2] = {ty(IR_F32, 3, DIMV(N, S, C(768))), ty(IR_F32, 2, DIMV(C(768), C(3072)))};
    ir_node *mm = typed_node(IR_OP_MATMUL, 2, mt, 1);
    /* MaxPool on unknown rank input with a 2-D kernel gives rank 4 */
    ir_type pt[1] = {{IR_F32, IR_RANK_UNKNOWN, {{0, 0}}}};
    ir_node *mp = typed_node(IR_OP_MAX_POOL, 1, pt, 2);
    ir_node_set_ints(G, mp, "kernel_shape", DIMS(2, 2), 2);
    /* LayerNorm [N, S, 768] axis -1: Mean is [N, S, 1] */
    ir_type lt[2] = {ty(IR_F16, 3, DIMV(N, S, C(768))), ty(IR_F16, 1, DIMV(C(768)))};
    ir_node *ln = typed_node(IR_OP_LAYER_NORMALIZATION, 2, lt, 2);
    /* Gemm with an unknown M */
    ir_type gt[2] = {ty(IR_F32, 2, DIMV(N, C(5))), ty(IR_F32, 2, DIMV(C(7), C(5)))};
    ir_node *gm = typed_node(IR_OP_GEMM, 2, gt, 1);
    ir_node_set_int(G, gm, "transB", 1);
    /* ConvTranspose stride 2 on a symbolic dim */
    ir_type tt[2] = {ty(IR_F32, 4, DIMV(N, C(4), H, C(3))), ty(IR_F32, 4, DIMV(C(4), C(2), C(3), C(3)))};
    ir_node *ctr = typed_node(IR_OP_CONV_TRANSPOSE, 2, tt, 1);
    ir_node_set_ints(G, ctr, "strides", DIMS(2, 2), 2);
    ir_node_set_int(G, ctr, "group", 2);

    ck_assert_msg(ir_infer_shapes(G, &D) == 0, "%s", D.msg);
    const ir_type *o = &c->out[0]->type;
    ck_assert_int_eq(o->rank, 4);
    ck_assert(ir_dim_eq(o->dims[0], N));
    ck_assert(ir_dim_is_const(o->dims[1]) && o->dims[1].v == 64);
    ck_assert(ir_dim_is_const(o->dims[2]) && o->dims[2].v == 112);
    /* the symbolic W gives the derived floor((H-1)/2)+1: 224 -> 112, 5 -> 3 */
    ck_assert(o->dims[3].sym > 0 && ir_graph_sym_def(G, o->dims[3].sym));
    ck_assert_str_eq(ir_graph_sym_name(G, o->dims[3].sym), "floor((H-1)/2)+1");
    int64_t vals[64] = {0};
    int32_t bad;
    ck_assert_int_lt(G->nsyms, 64);
    for (int i = 1; i < G->nsyms; i++)
        vals[i] = ir_graph_sym_def(G, i) ? 0 : 1;
    vals[H.sym] = 224;
    ck_assert_int_eq(ir_graph_sym_values(G, vals, &bad), 0);
    ck_assert_int_eq(vals[o->dims[3].sym], 112);
    vals[H.sym] = 5;
    ck_assert_int_eq(ir_graph_sym_values(G, vals, &bad), 0);
    ck_assert_int_eq(vals[o->dims[3].sym], 3);
    o = &same->out[0]->type;
    ck_assert(ir_dim_eq(o->dims[2], H) && ir_dim_eq(o->dims[3], W));
    ck_assert(o->dims[1].v == 4);
    o = &mm->out[0]->type;
    ck_assert_int_eq(o->rank, 3);
    ck_assert(ir_dim_eq(o->dims[0], N) && ir_dim_eq(o->dims[1], S) && o->dims[2].v == 3072);
    ck_assert_int_eq(mp->out[0]->type.rank, 4);
    ck_assert_int_eq(mp->out[1]->type.dtype, IR_I64);
    o = &ln->out[1]->type;
    ck_assert_int_eq(o->dtype, IR_F32);
    ck_assert(ir_dim_eq(o->dims[1], S) && ir_dim_is_const(o->dims[2]) && o->dims[2].v == 1);
    ck_assert_int_eq(ln->out[0]->type.dtype, IR_F16);
    o = &gm->out[0]->type;
    ck_assert(ir_dim_eq(o->dims[0], N) && o->dims[1].v == 7);
    o = &ctr->out[0]->type;
    ck_assert(o->dims[1].v == 4);
    /* stride 2, kernel 3, no pads: 2*(H-1)+3 = H*2+1 */
    ck_assert(o->dims[2].sym > 0);
    ck_assert_str_eq(ir_graph_sym_name(G, o->dims[2].sym), "H*2+1");
    ck_assert(ir_dim_is_const(o->dims[3]) && o->dims[3].v == 7);
}
END_TEST

/* Derived symbols (ir/symexpr.c): folding, hash-consing, values. */
START_TEST(derived_symbols)
{
    ir_dim H = {0, ir_graph_sym(G, "H", 1)}, W = {0, ir_graph_sym(G, "W", 1)};
    /* the same arithmetic twice gives the same symbol */
    ir_dim a = ir_dim_add_const(G, ir_dim_div_const(G, ir_dim_add_const(G, H, -1), 2, false), 1);
    ir_dim b = ir_dim_add_const(G, ir_dim_div_const(G, ir_dim_add_const(G, H, -1), 2, false), 1);
    ck_assert(a.sym > 0 && ir_dim_eq(a, b));
    ck_assert(!ir_dim_eq(a, ir_dim_add_const(G, ir_dim_div_const(G, ir_dim_add_const(G, H, -1), 2, true), 1)));
    /* identities and nested constants fold */
    ck_assert(ir_dim_eq(ir_dim_add_const(G, ir_dim_add_const(G, H, -2), 2), H));
    ck_assert(ir_dim_eq(ir_dim_mul_const(G, H, 1), H));
    ck_assert(ir_dim_is_const(ir_dim_mul_const(G, H, 0)));
    ck_assert(ir_dim_eq(ir_dim_div_const(G, ir_dim_mul_const(G, H, 4), 2, false), ir_dim_mul_const(G, H, 2)));
    ck_assert(ir_dim_eq(ir_dim_div_const(G, ir_dim_div_const(G, H, 2, false), 2, false),
                        ir_dim_div_const(G, H, 4, false)));
    ck_assert(ir_dim_eq(ir_dim_add(G, H, W), ir_dim_add(G, W, H)));
    ck_assert(ir_dim_eq(ir_dim_add(G, ir_dim_const(3), ir_dim_const(4)), ir_dim_const(7)));
    ck_assert_int_eq(ir_dim_add_const(G, ir_dim_const(3), -4).sym, IR_DIM_UNKNOWN);
    ck_assert_int_eq(ir_dim_add(G, H, ir_dim_unknown()).sym, IR_DIM_UNKNOWN);
    /* a free symbol's name is never taken over by a definition */
    ir_dim hp = ir_dim_add_const(G, H, 1);
    ck_assert_str_eq(ir_graph_sym_name(G, hp.sym), "H+1");
    ir_dim f = {0, ir_graph_sym(G, "W+1", 3)};
    ck_assert(f.sym > 0 && !ir_graph_sym_def(G, f.sym));
    ck_assert_int_eq(ir_dim_add_const(G, W, 1).sym, IR_DIM_UNKNOWN);
    /* values in id order; a negative intermediate is an error */
    int64_t vals[64];
    int32_t bad;
    ck_assert_int_lt(G->nsyms, 64);
    for (int i = 0; i < G->nsyms; i++)
        vals[i] = 1;
    vals[H.sym] = 9, vals[W.sym] = 4;
    ck_assert_int_eq(ir_graph_sym_values(G, vals, &bad), 0);
    ck_assert_int_eq(vals[a.sym], 5);
    ck_assert_int_eq(vals[ir_dim_add(G, H, W).sym], 13);
    vals[H.sym] = 0;
    ck_assert_int_eq(ir_graph_sym_values(G, vals, &bad), -1);
    ck_assert_str_eq(ir_graph_sym_name(G, bad), "H-1");
}
END_TEST

START_TEST(symbolic_shape_errors)
{
    ir_dim N = {0, ir_graph_sym(G, "N", 1)};
    ir_type ct[2] = {ty(IR_F32, 4, DIMV(N, C(3), C(8), C(8))),
                     ty(IR_F32, 4, DIMV(C(4), C(2), C(3), C(3)))};
    typed_node(IR_OP_CONV, 2, ct, 1);
    ck_assert_int_eq(ir_infer_shapes(G, &D), -1);
    ck_assert_ptr_nonnull(strstr(D.msg, "node 'n0' (Conv): channel mismatch"));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ref_nn");
    TCase *tc = tcase_create("nn");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, matmul_2d_and_1d);
    tcase_add_test(tc, matmul_batch_broadcast_and_ints);
    tcase_add_test(tc, matmul_f32_fast_matches_double);
    tcase_add_test(tc, gemm_attributes);
    tcase_add_test(tc, gemm_f32_fast_matches_double);
    tcase_add_test(tc, matmul_gemm_errors);
    tcase_add_test(tc, matmul_integer);
    tcase_add_test(tc, conv_3x3_with_padding);
    tcase_add_test(tc, conv_strides_groups_bias);
    tcase_add_test(tc, conv_auto_pad);
    tcase_add_test(tc, conv_f32_fast_matches_double);
    tcase_add_test(tc, half_types_fast_match_double);
    tcase_add_test(tc, conv_errors);
    tcase_add_test(tc, conv_integer);
    tcase_add_test(tc, conv_transpose_strided);
    tcase_add_test(tc, conv_transpose_groups_dilations);
    tcase_add_test(tc, conv_transpose_f32_fast_matches_double);
    tcase_add_test(tc, batchnorm_inference);
    tcase_add_test(tc, instance_and_group_norm);
    tcase_add_test(tc, layernorm_outputs);
    tcase_add_test(tc, other_norms);
    tcase_add_test(tc, maxpool_indices);
    tcase_add_test(tc, avgpool_pads_and_ceil);
    tcase_add_test(tc, global_pools);
    tcase_add_test(tc, pool_errors);
    tcase_add_test(tc, softmax_stable);
    tcase_add_test(tc, symbolic_shapes);
    tcase_add_test(tc, symbolic_shape_errors);
    tcase_add_test(tc, derived_symbols);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return icc_run_suite(suite());
}
