/* test_ref_elementwise.c - shape functions and reference kernels of the
 * elementwise ops, each evaluated with ir_eval_node on a one-node graph
 * against hand-computed values: broadcasting, integer wraparound and
 * division, Pow and Mod forms, NaN rules, rounding of f16/bf16 results,
 * every class of Cast, Clip/Where/PRelu, activations and error paths. */
#include "check_main.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ops.h"
#include "ir/ref/interp.h"

static ir_graph *G;
static icc_diag D;
static void *allocs[256];
static int nallocs;
static int ninputs;

static void setup(void)
{
    G = ir_graph_create("t");
    memset(&D, 0, sizeof D);
    nallocs = ninputs = 0;
}

static void teardown(void)
{
    for (int i = 0; i < nallocs; i++)
        free(allocs[i]);
    ir_graph_destroy(G);
}

/* A tensor viewing data (borrowed) with the given dims. */
static ir_tensor ten(ir_dtype dt, const void *data, int rank, ...)
{
    ir_tensor t;
    int64_t dims[IR_MAX_RANK];
    va_list ap;
    va_start(ap, rank);
    for (int i = 0; i < rank; i++)
        dims[i] = va_arg(ap, int);
    va_end(ap);
    ck_assert_int_eq(ir_tensor_init(&t, dt, rank, dims, &D), 0);
    t.data = (void *)data;
    return t;
}

#define IN(...) ((const ir_tensor *const[]){__VA_ARGS__})

/* A node of op over graph inputs typed like in[] (NULL: omitted). */
static ir_node *mk(int op, int nin, const ir_tensor *const *in)
{
    ir_value *v[8];
    for (int i = 0; i < nin; i++) {
        v[i] = NULL;
        if (in[i]) {
            ir_type t;
            char name[16];
            snprintf(name, sizeof name, "x%d", ninputs++);
            ir_type_of_tensor(in[i], &t);
            v[i] = ir_graph_add_input(G, name, &t, &D);
            ck_assert_ptr_nonnull(v[i]);
        }
    }
    ir_node *n = ir_graph_add_node(G, op, "n0", nin, v, 1, NULL, &D);
    ck_assert_ptr_nonnull(n);
    return n;
}

/* Evaluates n; the output's data is freed at teardown. */
static ir_tensor ok(const ir_node *n, const ir_tensor *const *in)
{
    ir_tensor out;
    int rc = ir_eval_node(n, in, &out, &D);
    if (rc != 0)
        ck_abort_msg("eval failed: %s", D.msg);
    allocs[nallocs++] = out.data;
    return out;
}

static ir_tensor run(int op, int nin, const ir_tensor *const *in)
{
    return ok(mk(op, nin, in), in);
}

static void fails(const ir_node *n, const ir_tensor *const *in, const char *want)
{
    ir_tensor out;
    ck_assert_int_eq(ir_eval_node(n, in, &out, &D), -1);
    if (!strstr(D.msg, want))
        ck_abort_msg("message '%s' lacks '%s'", D.msg, want);
}

static void expect_dims(const ir_tensor *t, ir_dtype dt, int rank, ...)
{
    ck_assert_str_eq(ir_dtype_name(t->dtype), ir_dtype_name(dt));
    ck_assert_int_eq(t->rank, rank);
    va_list ap;
    va_start(ap, rank);
    for (int i = 0; i < rank; i++)
        ck_assert_int_eq(t->dims[i], va_arg(ap, int));
    va_end(ap);
}

/* Values compared as doubles: NaN matches NaN, equal values (infinities)
 * match, else |got - want| <= tol. */
static void expect_f(const ir_tensor *t, const double *want, int n, double tol)
{
    ck_assert_int_eq(t->numel, n);
    for (int i = 0; i < n; i++) {
        double g = ir_tensor_getf(t, i);
        if (isnan(want[i]) ? !isnan(g) : !(g == want[i] || fabs(g - want[i]) <= tol))
            ck_abort_msg("element %d: got %.17g, want %.17g", i, g, want[i]);
    }
}

static void expect_i(const ir_tensor *t, const int64_t *want, int n)
{
    ck_assert_int_eq(t->numel, n);
    for (int i = 0; i < n; i++)
        if (ir_tensor_geti(t, i) != want[i])
            ck_abort_msg("element %d: got %lld, want %lld", i, (long long)ir_tensor_geti(t, i),
                         (long long)want[i]);
}

static void expect_u16(const ir_tensor *t, const uint16_t *want, int n)
{
    ck_assert_int_eq(t->numel, n);
    for (int i = 0; i < n; i++)
        if (((const uint16_t *)t->data)[i] != want[i])
            ck_abort_msg("element %d: got 0x%04x, want 0x%04x", i, ((const uint16_t *)t->data)[i],
                         want[i]);
}

#define F(...) ((const double[]){__VA_ARGS__})
#define I(...) ((const int64_t[]){__VA_ARGS__})

/* ---- binary arithmetic --------------------------------------------------- */

START_TEST(add_broadcasts_both_ways)
{
    float a[] = {1, 2, 3, 4, 5, 6}, b[] = {10, 20, 30};
    ir_tensor ta = ten(IR_F32, a, 2, 2, 3), tb = ten(IR_F32, b, 1, 3);
    ir_tensor o = run(IR_OP_ADD, 2, IN(&ta, &tb));
    expect_dims(&o, IR_F32, 2, 2, 3);
    expect_f(&o, F(11, 22, 33, 14, 25, 36), 6, 0);
    /* [3,1] - [1,2] -> [3,2]: both operands repeat */
    float c[] = {1, 2, 3}, d[] = {10, 100};
    ir_tensor tc = ten(IR_F32, c, 2, 3, 1), td = ten(IR_F32, d, 2, 1, 2);
    o = run(IR_OP_SUB, 2, IN(&tc, &td));
    expect_dims(&o, IR_F32, 2, 3, 2);
    expect_f(&o, F(-9, -99, -8, -98, -7, -97), 6, 0);
    /* scalar (rank 0) times a vector, f64 */
    double s = 2.5, v[] = {1, -2, 4};
    ir_tensor ts = ten(IR_F64, &s, 0), tv = ten(IR_F64, v, 1, 3);
    o = run(IR_OP_MUL, 2, IN(&ts, &tv));
    expect_dims(&o, IR_F64, 1, 3);
    expect_f(&o, F(2.5, -5, 10), 3, 0);
    o = run(IR_OP_MUL, 2, IN(&ts, &ts));
    expect_dims(&o, IR_F64, 0);
    expect_f(&o, F(6.25), 1, 0);
    /* [2,1,2] + [2,1] -> [2,2,2]: a middle dim repeats */
    int32_t e[] = {1, 2, 3, 4}, f[] = {10, 20};
    ir_tensor te = ten(IR_I32, e, 3, 2, 1, 2), tf = ten(IR_I32, f, 2, 2, 1);
    o = run(IR_OP_ADD, 2, IN(&te, &tf));
    expect_dims(&o, IR_I32, 3, 2, 2, 2);
    expect_i(&o, I(11, 12, 21, 22, 13, 14, 23, 24), 8);
    /* an empty dim gives an empty output */
    ir_tensor tz = ten(IR_I32, e, 2, 0, 1), tf1 = ten(IR_I32, f, 1, 2);
    o = run(IR_OP_ADD, 2, IN(&tz, &tf1));
    expect_dims(&o, IR_I32, 2, 0, 2);
    fails(mk(IR_OP_ADD, 2, IN(&tz, &tf)), IN(&tz, &tf), "cannot broadcast dim 0 against 2");
}
END_TEST

START_TEST(int_arithmetic_wraps)
{
    int8_t a[] = {100, -100, 127}, b[] = {100, -100, 1};
    ir_tensor ta = ten(IR_I8, a, 1, 3), tb = ten(IR_I8, b, 1, 3);
    ir_tensor o = run(IR_OP_ADD, 2, IN(&ta, &tb));
    expect_dims(&o, IR_I8, 1, 3);
    expect_i(&o, I(-56, 56, -128), 3);
    uint8_t c[] = {200, 3}, d[] = {100, 5};
    ir_tensor tc = ten(IR_U8, c, 1, 2), td = ten(IR_U8, d, 1, 2);
    o = run(IR_OP_SUB, 2, IN(&tc, &td));
    expect_i(&o, I(100, 254), 2);
    int64_t e[] = {INT64_MAX}, f[] = {2};
    ir_tensor te = ten(IR_I64, e, 1, 1), tf = ten(IR_I64, f, 1, 1);
    o = run(IR_OP_MUL, 2, IN(&te, &tf));
    expect_i(&o, I(-2), 1);
}
END_TEST

START_TEST(int_division_truncates_and_defines_zero)
{
    int32_t a[] = {7, -7, 7, -7, 5, 0}, b[] = {2, 2, -2, -2, 0, 3};
    ir_tensor ta = ten(IR_I32, a, 1, 6), tb = ten(IR_I32, b, 1, 6);
    ir_tensor o = run(IR_OP_DIV, 2, IN(&ta, &tb));
    expect_i(&o, I(3, -3, -3, 3, 0, 0), 6);
    int64_t c[] = {INT64_MIN}, d[] = {-1};
    ir_tensor tc = ten(IR_I64, c, 1, 1), td = ten(IR_I64, d, 1, 1);
    o = run(IR_OP_DIV, 2, IN(&tc, &td));
    expect_i(&o, I(INT64_MIN), 1);
    /* unsigned division is done unsigned: 2^64-2 / 2 */
    uint64_t e[] = {UINT64_MAX - 1}, f[] = {2};
    ir_tensor te = ten(IR_U64, e, 1, 1), tf = ten(IR_U64, f, 1, 1);
    o = run(IR_OP_DIV, 2, IN(&te, &tf));
    ck_assert_uint_eq(((uint64_t *)o.data)[0], UINT64_MAX / 2);
    /* floats follow IEEE */
    float g[] = {1, -1, 0}, h[] = {0, 0, 0};
    ir_tensor tg = ten(IR_F32, g, 1, 3), th = ten(IR_F32, h, 1, 3);
    o = run(IR_OP_DIV, 2, IN(&tg, &th));
    expect_f(&o, F(INFINITY, -INFINITY, NAN), 3, 0);
}
END_TEST

START_TEST(pow_forms)
{
    float a[] = {2, 9, -2}, b[] = {3, 0.5f, 2};
    ir_tensor ta = ten(IR_F32, a, 1, 3), tb = ten(IR_F32, b, 1, 3);
    ir_tensor o = run(IR_OP_POW, 2, IN(&ta, &tb));
    expect_f(&o, F(8, 3, 4), 3, 0);
    /* integer powers, including negative exponents */
    int32_t c[] = {2, -3, 2, -1, 1, 0, 3}, d[] = {10, 3, -1, -3, -5, 0, 21};
    ir_tensor tc = ten(IR_I32, c, 1, 7), td = ten(IR_I32, d, 1, 7);
    o = run(IR_OP_POW, 2, IN(&tc, &td));
    /* 3^21 = 10460353203 wraps to 10460353203 - 2*2^32 */
    expect_i(&o, I(1024, -27, 0, -1, 1, 1, 10460353203LL - 8589934592LL), 7);
    /* int base, float exponent: computed in double, truncated, base dtype */
    int32_t e[] = {3, 2};
    float f[] = {0.5f, 2.5f};
    ir_tensor te = ten(IR_I32, e, 1, 2), tf = ten(IR_F32, f, 1, 2);
    o = run(IR_OP_POW, 2, IN(&te, &tf));
    expect_dims(&o, IR_I32, 1, 2);
    expect_i(&o, I(1, 5), 2);
    /* float base, int exponent */
    int64_t g[] = {3};
    ir_tensor tg = ten(IR_I64, g, 1, 1);
    o = run(IR_OP_POW, 2, IN(&ta, &tg));
    expect_dims(&o, IR_F32, 1, 3);
    expect_f(&o, F(8, 729, -8), 3, 0);
}
END_TEST

START_TEST(mod_both_forms)
{
    int32_t a[] = {-4, 7, 5, -5, 4}, b[] = {3, -3, 0, 3, -1};
    ir_tensor ta = ten(IR_I32, a, 1, 5), tb = ten(IR_I32, b, 1, 5);
    ir_tensor o = run(IR_OP_MOD, 2, IN(&ta, &tb));
    expect_i(&o, I(2, -2, 0, 1, 0), 5);
    ir_node *n = mk(IR_OP_MOD, 2, IN(&ta, &tb));
    ir_node_set_int(G, n, "fmod", 1);
    o = ok(n, IN(&ta, &tb));
    expect_i(&o, I(-1, 1, 0, -2, 0), 5);
    float c[] = {5.5f, -5.5f, 1}, d[] = {2, 2, 0};
    ir_tensor tc = ten(IR_F32, c, 1, 3), td = ten(IR_F32, d, 1, 3);
    n = mk(IR_OP_MOD, 2, IN(&tc, &td));
    ir_node_set_int(G, n, "fmod", 1);
    o = ok(n, IN(&tc, &td));
    expect_f(&o, F(1.5, -1.5, NAN), 3, 0);
    fails(mk(IR_OP_MOD, 2, IN(&tc, &td)), IN(&tc, &td), "fmod=0 is defined on integers only");
}
END_TEST

/* ---- variadic ------------------------------------------------------------ */

START_TEST(max_min_propagate_nan_and_broadcast)
{
    float a[] = {1, NAN, 3, -1}, b[] = {2}, c[] = {0, 5, 0, 0};
    ir_tensor ta = ten(IR_F32, a, 1, 4), tb = ten(IR_F32, b, 0), tc = ten(IR_F32, c, 1, 4);
    ir_tensor o = run(IR_OP_MAX, 3, IN(&ta, &tb, &tc));
    expect_f(&o, F(2, NAN, 3, 2), 4, 0);
    o = run(IR_OP_MIN, 3, IN(&ta, &tb, &tc));
    expect_f(&o, F(0, NAN, 0, -1), 4, 0);
    o = run(IR_OP_MAX, 2, IN(&tb, &ta));
    expect_f(&o, F(2, NAN, 3, 2), 4, 0);
    /* u64 compares unsigned */
    uint64_t d[] = {(UINT64_C(1) << 63) + 1, 5}, e[] = {1, UINT64_C(1) << 63};
    ir_tensor td = ten(IR_U64, d, 1, 2), te = ten(IR_U64, e, 1, 2);
    o = run(IR_OP_MIN, 2, IN(&td, &te));
    ck_assert_uint_eq(((uint64_t *)o.data)[0], 1);
    ck_assert_uint_eq(((uint64_t *)o.data)[1], 5);
    /* one input: a copy */
    int16_t f[] = {-3, 4};
    ir_tensor tf = ten(IR_I16, f, 1, 2);
    o = run(IR_OP_MAX, 1, IN(&tf));
    expect_i(&o, I(-3, 4), 2);
}
END_TEST

START_TEST(sum_and_mean)
{
    float a[] = {1, 2}, b[] = {3, 4, 5, 6}, c[] = {5};
    ir_tensor ta = ten(IR_F32, a, 1, 2), tb = ten(IR_F32, b, 2, 2, 2), tc = ten(IR_F32, c, 1, 1);
    ir_tensor o = run(IR_OP_SUM, 3, IN(&ta, &tb, &tc));
    expect_dims(&o, IR_F32, 2, 2, 2);
    expect_f(&o, F(9, 11, 11, 13), 4, 0);
    o = run(IR_OP_MEAN, 3, IN(&ta, &tb, &tc));
    expect_f(&o, F(3, 11.0 / 3, 11.0 / 3, 13.0 / 3), 4, 1e-6);
    int8_t d[] = {100, 1}, e[] = {100, 2};
    ir_tensor td = ten(IR_I8, d, 1, 2), te = ten(IR_I8, e, 1, 2);
    o = run(IR_OP_SUM, 3, IN(&td, &te, &td));
    expect_i(&o, I(44, 4), 2);
}
END_TEST

/* ---- comparison and logic ------------------------------------------------- */

START_TEST(comparisons_output_bool)
{
    float a[] = {1, 2, NAN}, b[] = {2};
    ir_tensor ta = ten(IR_F32, a, 1, 3), tb = ten(IR_F32, b, 1, 1);
    ir_tensor o = run(IR_OP_LESS, 2, IN(&ta, &tb));
    expect_dims(&o, IR_BOOL, 1, 3);
    expect_i(&o, I(1, 0, 0), 3);
    o = run(IR_OP_GREATER_OR_EQUAL, 2, IN(&ta, &tb));
    expect_i(&o, I(0, 1, 0), 3);
    o = run(IR_OP_EQUAL, 2, IN(&ta, &ta));
    expect_i(&o, I(1, 1, 0), 3);
    uint8_t c[] = {1, 0, 1, 0}, d[] = {1, 1};
    ir_tensor tc = ten(IR_BOOL, c, 2, 2, 2), td = ten(IR_BOOL, d, 1, 2);
    o = run(IR_OP_EQUAL, 2, IN(&tc, &td));
    expect_i(&o, I(1, 0, 1, 0), 4);
    uint32_t e[] = {4000000000u, 1}, f[] = {1, 4000000000u};
    ir_tensor te = ten(IR_U32, e, 1, 2), tf = ten(IR_U32, f, 1, 2);
    o = run(IR_OP_GREATER, 2, IN(&te, &tf));
    expect_i(&o, I(1, 0), 2);
    int64_t g[] = {-1, 3}, h[] = {-1, 2};
    ir_tensor tg = ten(IR_I64, g, 1, 2), th = ten(IR_I64, h, 1, 2);
    o = run(IR_OP_LESS_OR_EQUAL, 2, IN(&tg, &th));
    expect_i(&o, I(1, 0), 2);
}
END_TEST

START_TEST(logic_and_bitwise)
{
    uint8_t a[] = {1, 1, 0, 0}, b[] = {1, 0};
    ir_tensor ta = ten(IR_BOOL, a, 2, 2, 2), tb = ten(IR_BOOL, b, 1, 2);
    ir_tensor o = run(IR_OP_AND, 2, IN(&ta, &tb));
    expect_i(&o, I(1, 0, 0, 0), 4);
    o = run(IR_OP_OR, 2, IN(&ta, &tb));
    expect_i(&o, I(1, 1, 1, 0), 4);
    o = run(IR_OP_XOR, 2, IN(&ta, &tb));
    expect_i(&o, I(0, 1, 1, 0), 4);
    o = run(IR_OP_NOT, 1, IN(&ta));
    expect_i(&o, I(0, 0, 1, 1), 4);
    int16_t c[] = {-1, 12}, d[] = {0x0ff0, 10};
    ir_tensor tc = ten(IR_I16, c, 1, 2), td = ten(IR_I16, d, 1, 2);
    o = run(IR_OP_BITWISE_AND, 2, IN(&tc, &td));
    expect_i(&o, I(0x0ff0, 8), 2);
    o = run(IR_OP_BITWISE_OR, 2, IN(&tc, &td));
    expect_i(&o, I(-1, 14), 2);
    o = run(IR_OP_BITWISE_XOR, 2, IN(&tc, &td));
    expect_i(&o, I(~0x0ff0, 6), 2);
    o = run(IR_OP_BITWISE_NOT, 1, IN(&tc));
    expect_i(&o, I(0, -13), 2);
    uint8_t e[] = {0, 0x0f};
    ir_tensor te = ten(IR_U8, e, 1, 2);
    o = run(IR_OP_BITWISE_NOT, 1, IN(&te));
    expect_i(&o, I(255, 0xf0), 2);
}
END_TEST

START_TEST(bit_shift)
{
    uint8_t a[] = {1, 255, 3, 128}, s[] = {1, 1, 8, 7};
    ir_tensor ta = ten(IR_U8, a, 1, 4), ts = ten(IR_U8, s, 1, 4);
    ir_node *n = mk(IR_OP_BIT_SHIFT, 2, IN(&ta, &ts));
    ir_node_set_string(G, n, "direction", "LEFT");
    ir_tensor o = ok(n, IN(&ta, &ts));
    expect_i(&o, I(2, 254, 0, 0), 4);
    n = mk(IR_OP_BIT_SHIFT, 2, IN(&ta, &ts));
    ir_node_set_string(G, n, "direction", "RIGHT");
    o = ok(n, IN(&ta, &ts));
    expect_i(&o, I(0, 127, 0, 1), 4);
    uint64_t b[] = {UINT64_MAX}, t[] = {64};
    ir_tensor tb = ten(IR_U64, b, 1, 1), tt = ten(IR_U64, t, 1, 1);
    n = mk(IR_OP_BIT_SHIFT, 2, IN(&tb, &tt));
    ir_node_set_string(G, n, "direction", "RIGHT");
    o = ok(n, IN(&tb, &tt));
    expect_i(&o, I(0), 1);
    int32_t c[] = {1};
    ir_tensor tc = ten(IR_I32, c, 1, 1);
    n = mk(IR_OP_BIT_SHIFT, 2, IN(&tc, &tc));
    ir_node_set_string(G, n, "direction", "LEFT");
    fails(n, IN(&tc, &tc), "expects an unsigned integer");
    n = mk(IR_OP_BIT_SHIFT, 2, IN(&ta, &ts));
    ir_node_set_string(G, n, "direction", "UP");
    fails(n, IN(&ta, &ts), "direction must be");
}
END_TEST

/* ---- half precision: results are rounded once, to nearest even ---------- */

START_TEST(half_results_round_to_even)
{
    /* 1 + 2^-11 is halfway between f16 1.0 and its successor: even wins */
    uint16_t a[] = {0x3c00, 0x3c01, 0x3c00}, b[] = {0x1000, 0x1000, 0x1400};
    ir_tensor ta = ten(IR_F16, a, 1, 3), tb = ten(IR_F16, b, 1, 3);
    ir_tensor o = run(IR_OP_ADD, 2, IN(&ta, &tb));
    expect_dims(&o, IR_F16, 1, 3);
    expect_u16(&o, (const uint16_t[]){0x3c00, 0x3c02, 0x3c01}, 3);
    /* bf16: 1 + 2^-8 ties to 1.0; 1 + 3*2^-8 ties up to 1 + 2^-6 */
    uint16_t c[] = {0x3f80, 0x3f81}, d[] = {0x3b80, 0x3b80};
    ir_tensor tc = ten(IR_BF16, c, 1, 2), td = ten(IR_BF16, d, 1, 2);
    o = run(IR_OP_ADD, 2, IN(&tc, &td));
    expect_u16(&o, (const uint16_t[]){0x3f80, 0x3f82}, 2);
    /* f16 overflow gives inf; Sqrt of f16 */
    uint16_t e[] = {0x7bff, 0x4400};
    ir_tensor te = ten(IR_F16, e, 1, 2);
    o = run(IR_OP_ADD, 2, IN(&te, &te));
    ck_assert_uint_eq(((uint16_t *)o.data)[0], 0x7c00);
    o = run(IR_OP_SQRT, 1, IN(&te));
    ck_assert_uint_eq(((uint16_t *)o.data)[1], 0x4000);
}
END_TEST

/* ---- unary ---------------------------------------------------------------- */

START_TEST(unary_math_matches_libm)
{
    float a[] = {0.25f, 0.5f, 0.75f};
    ir_tensor ta = ten(IR_F32, a, 1, 3);
    struct { int op; double (*f)(double); } cases[] = {
        {IR_OP_SQRT, sqrt}, {IR_OP_EXP, exp}, {IR_OP_LOG, log}, {IR_OP_TANH, tanh},
        {IR_OP_SIN, sin}, {IR_OP_COS, cos}, {IR_OP_TAN, tan}, {IR_OP_ASIN, asin},
        {IR_OP_ACOS, acos}, {IR_OP_ATAN, atan}, {IR_OP_SINH, sinh}, {IR_OP_COSH, cosh},
        {IR_OP_ASINH, asinh}, {IR_OP_ATANH, atanh}, {IR_OP_ERF, erf},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        ir_tensor o = run(cases[k].op, 1, IN(&ta));
        for (int i = 0; i < 3; i++)
            ck_assert_float_eq(((float *)o.data)[i], (float)cases[k].f(a[i]));
    }
    float b[] = {1, 2, 10};
    ir_tensor tb = ten(IR_F32, b, 1, 3);
    ir_tensor o = run(IR_OP_ACOSH, 1, IN(&tb));
    expect_f(&o, F(0, acosh(2.0), acosh(10.0)), 3, 1e-6);
    o = run(IR_OP_RECIPROCAL, 1, IN(&tb));
    expect_f(&o, F(1, 0.5, 0.1), 3, 1e-8);
    o = run(IR_OP_SIGMOID, 1, IN(&tb));
    expect_f(&o, F(1 / (1 + exp(-1.0)), 1 / (1 + exp(-2.0)), 1 / (1 + exp(-10.0))), 3, 1e-7);
    o = run(IR_OP_SOFTPLUS, 1, IN(&tb));
    expect_f(&o, F(log1p(exp(1.0)), log1p(exp(2.0)), log1p(exp(10.0))), 3, 1e-6);
}
END_TEST

START_TEST(rounding_ops)
{
    float a[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.3f, -2.7f, 0.9f, -0.4f};
    ir_tensor ta = ten(IR_F32, a, 1, 9);
    ir_tensor o = run(IR_OP_ROUND, 1, IN(&ta));
    expect_f(&o, F(0, 2, 2, -0.0, -2, 2, -3, 1, -0.0), 9, 0);
    ck_assert(signbit(((float *)o.data)[3]));
    o = run(IR_OP_FLOOR, 1, IN(&ta));
    expect_f(&o, F(0, 1, 2, -1, -2, 2, -3, 0, -1), 9, 0);
    o = run(IR_OP_CEIL, 1, IN(&ta));
    expect_f(&o, F(1, 2, 3, -0.0, -1, 3, -2, 1, -0.0), 9, 0);
    double b[] = {4503599627370497.0, INFINITY, NAN};
    ir_tensor tb = ten(IR_F64, b, 1, 3);
    o = run(IR_OP_ROUND, 1, IN(&tb));
    expect_f(&o, F(4503599627370497.0, INFINITY, NAN), 3, 0);
}
END_TEST

START_TEST(int_unary_wraps)
{
    int8_t a[] = {-128, -1, 0, 5};
    ir_tensor ta = ten(IR_I8, a, 1, 4);
    ir_tensor o = run(IR_OP_NEG, 1, IN(&ta));
    expect_dims(&o, IR_I8, 1, 4);
    expect_i(&o, I(-128, 1, 0, -5), 4);
    o = run(IR_OP_ABS, 1, IN(&ta));
    expect_i(&o, I(-128, 1, 0, 5), 4);
    o = run(IR_OP_RELU, 1, IN(&ta));
    expect_i(&o, I(0, 0, 0, 5), 4);
    o = run(IR_OP_SIGN, 1, IN(&ta));
    expect_i(&o, I(-1, -1, 0, 1), 4);
    uint16_t b[] = {0, 7};
    ir_tensor tb = ten(IR_U16, b, 1, 2);
    o = run(IR_OP_SIGN, 1, IN(&tb));
    expect_i(&o, I(0, 1), 2);
    o = run(IR_OP_NEG, 1, IN(&tb));
    expect_i(&o, I(0, 65529), 2);
    float c[] = {-2, 0, 3, NAN};
    ir_tensor tc = ten(IR_F32, c, 1, 4);
    o = run(IR_OP_RELU, 1, IN(&tc));
    expect_f(&o, F(0, 0, 3, NAN), 4, 0);
    o = run(IR_OP_SIGN, 1, IN(&tc));
    expect_f(&o, F(-1, 0, 1, NAN), 4, 0);
    /* Erf allows integers: computed in double, truncated */
    int32_t d[] = {0, 3};
    ir_tensor td = ten(IR_I32, d, 1, 2);
    o = run(IR_OP_ERF, 1, IN(&td));
    expect_i(&o, I(0, 0), 2);
}
END_TEST

START_TEST(activations_use_schema_defaults_and_attrs)
{
    float a[] = {-2, -1, 0, 1, 3};
    ir_tensor ta = ten(IR_F32, a, 1, 5);
    ir_tensor o = run(IR_OP_LEAKY_RELU, 1, IN(&ta));
    expect_f(&o, F(-0.02, -0.01, 0, 1, 3), 5, 1e-7);
    ir_node *n = mk(IR_OP_LEAKY_RELU, 1, IN(&ta));
    ir_node_set_float(G, n, "alpha", 0.5f);
    o = ok(n, IN(&ta));
    expect_f(&o, F(-1, -0.5, 0, 1, 3), 5, 0);
    o = run(IR_OP_ELU, 1, IN(&ta));
    expect_f(&o, F(exp(-2.0) - 1, -0.6321205588285577, 0, 1, 3), 5, 1e-7);
    o = run(IR_OP_SELU, 1, IN(&ta));
    ck_assert(fabs(((float *)o.data)[1] - -1.1113307412864784) < 1e-6);
    ck_assert(fabs(((float *)o.data)[3] - 1.05070102214813232421875) < 1e-7);
    o = run(IR_OP_HARD_SIGMOID, 1, IN(&ta));
    expect_f(&o, F(0.1, 0.3, 0.5, 0.7, 1), 5, 1e-7);
    n = mk(IR_OP_HARD_SIGMOID, 1, IN(&ta));
    ir_node_set_float(G, n, "alpha", 1.0f);
    ir_node_set_float(G, n, "beta", 0.0f);
    o = ok(n, IN(&ta));
    expect_f(&o, F(0, 0, 0, 1, 1), 5, 0);
    o = run(IR_OP_HARD_SWISH, 1, IN(&ta));
    expect_f(&o, F(-2.0 / 6, -1.0 / 3, 0, 2.0 / 3, 3), 5, 1e-7);
    o = run(IR_OP_THRESHOLDED_RELU, 1, IN(&ta));
    expect_f(&o, F(0, 0, 0, 0, 3), 5, 0);
    n = mk(IR_OP_CELU, 1, IN(&ta));
    ir_node_set_float(G, n, "alpha", 2.0f);
    o = ok(n, IN(&ta));
    expect_f(&o, F(2 * (exp(-1.0) - 1), -0.7869386805747332, 0, 1, 3), 5, 1e-7);
    o = run(IR_OP_SOFTSIGN, 1, IN(&ta));
    expect_f(&o, F(-2.0 / 3, -0.5, 0, 0.5, 0.75), 5, 1e-7);
    o = run(IR_OP_MISH, 1, IN(&ta));
    ck_assert(fabs(((float *)o.data)[3] - 0.8650983882673103) < 1e-7);
    n = mk(IR_OP_SHRINK, 1, IN(&ta));
    ir_node_set_float(G, n, "lambd", 1.5f);
    ir_node_set_float(G, n, "bias", 0.5f);
    o = ok(n, IN(&ta));
    expect_f(&o, F(-1.5, 0, 0, 0, 2.5), 5, 0);
    o = run(IR_OP_SHRINK, 1, IN(&ta));
    expect_f(&o, F(-2, -1, 0, 1, 3), 5, 0);
}
END_TEST

START_TEST(gelu_both_forms)
{
    float a[] = {1, 0, -30};
    ir_tensor ta = ten(IR_F32, a, 1, 3);
    ir_tensor o = run(IR_OP_GELU, 1, IN(&ta));
    expect_f(&o, F(0.8413447460685429, 0, -0.0), 3, 1e-7);
    ir_node *n = mk(IR_OP_GELU, 1, IN(&ta));
    ir_node_set_string(G, n, "approximate", "tanh");
    o = ok(n, IN(&ta));
    expect_f(&o, F(0.8411919906082768, 0, -0.0), 3, 1e-7);
    n = mk(IR_OP_GELU, 1, IN(&ta));
    ir_node_set_string(G, n, "approximate", "fast");
    fails(n, IN(&ta), "approximate must be");
    /* x < 0 keeps its relative accuracy (0.5 x (1 + erf) and 0.5 x (1 +
     * tanh) cancel to 0 there, even in double past about -8.3 and -7.4);
     * the wanted values are mpmath's at 30 digits */
    float b[] = {-8, -12};
    ir_tensor tb = ten(IR_F32, b, 1, 2);
    o = run(IR_OP_GELU, 1, IN(&tb));
    const float *y = o.data;
    ck_assert_double_eq_tol(y[0], -4.9767684594174273e-15, 1e-6 * 4.98e-15);
    ck_assert_double_eq_tol(y[1], -2.1317785344932148e-32, 1e-6 * 2.13e-32);
    n = mk(IR_OP_GELU, 1, IN(&tb));
    ir_node_set_string(G, n, "approximate", "tanh");
    o = ok(n, IN(&tb));
    y = o.data;
    ck_assert_double_eq_tol(y[0], -3.1077829374203843e-21, 1e-6 * 3.11e-21);
}
END_TEST

START_TEST(isnan_isinf)
{
    float a[] = {1, NAN, INFINITY, -INFINITY};
    ir_tensor ta = ten(IR_F32, a, 1, 4);
    ir_tensor o = run(IR_OP_IS_NAN, 1, IN(&ta));
    expect_dims(&o, IR_BOOL, 1, 4);
    expect_i(&o, I(0, 1, 0, 0), 4);
    o = run(IR_OP_IS_INF, 1, IN(&ta));
    expect_i(&o, I(0, 0, 1, 1), 4);
    ir_node *n = mk(IR_OP_IS_INF, 1, IN(&ta));
    ir_node_set_int(G, n, "detect_negative", 0);
    o = ok(n, IN(&ta));
    expect_i(&o, I(0, 0, 1, 0), 4);
    uint16_t h[] = {0x7c00, 0x7e00, 0x3c00};
    ir_tensor th = ten(IR_F16, h, 1, 3);
    o = run(IR_OP_IS_NAN, 1, IN(&th));
    expect_i(&o, I(0, 1, 0), 3);
}
END_TEST

/* ---- Cast ----------------------------------------------------------------- */

static ir_tensor cast_to(const ir_tensor *x, int onnx_code)
{
    ir_node *n = mk(IR_OP_CAST, 1, IN(x));
    ir_node_set_int(G, n, "to", onnx_code);
    return ok(n, IN(x));
}

START_TEST(cast_float_to_int_truncates_and_saturates)
{
    float a[] = {1.9f, -1.9f, NAN, 3e9f, -3e9f, -0.5f};
    ir_tensor ta = ten(IR_F32, a, 1, 6);
    ir_tensor o = cast_to(&ta, 6);
    expect_dims(&o, IR_I32, 1, 6);
    expect_i(&o, I(1, -1, 0, INT32_MAX, INT32_MIN, 0), 6);
    float b[] = {-5, 300, 255.9f, 1e30f};
    ir_tensor tb = ten(IR_F32, b, 1, 4);
    o = cast_to(&tb, 2);
    expect_i(&o, I(0, 255, 255, 255), 4);
    o = cast_to(&tb, 13);
    ck_assert_uint_eq(((uint64_t *)o.data)[3], UINT64_MAX);
    ck_assert_uint_eq(((uint64_t *)o.data)[1], 300);
    o = cast_to(&tb, 7);
    expect_i(&o, I(-5, 300, 255, INT64_MAX), 4);
}
END_TEST

START_TEST(cast_int_bool_wrap)
{
    int32_t a[] = {200, -129, 0, 256};
    ir_tensor ta = ten(IR_I32, a, 1, 4);
    ir_tensor o = cast_to(&ta, 3);
    expect_dims(&o, IR_I8, 1, 4);
    expect_i(&o, I(-56, 127, 0, 0), 4);
    o = cast_to(&ta, 9);
    expect_dims(&o, IR_BOOL, 1, 4);
    expect_i(&o, I(1, 1, 0, 1), 4);
    o = cast_to(&ta, 12);
    expect_i(&o, I(200, 4294967167LL, 0, 256), 4);
    float b[] = {0, -0.0f, 0.1f, NAN};
    ir_tensor tb = ten(IR_F32, b, 1, 4);
    o = cast_to(&tb, 9);
    expect_i(&o, I(0, 0, 1, 1), 4);
    uint8_t c[] = {1, 0};
    ir_tensor tc = ten(IR_BOOL, c, 1, 2);
    o = cast_to(&tc, 1);
    expect_f(&o, F(1, 0), 2, 0);
    o = cast_to(&tc, 10);
    expect_u16(&o, (const uint16_t[]){0x3c00, 0}, 2);
    uint64_t d[] = {UINT64_MAX};
    ir_tensor td = ten(IR_U64, d, 1, 1);
    o = cast_to(&td, 1);
    ck_assert_float_eq(((float *)o.data)[0], 18446744073709551616.0f);
    o = cast_to(&td, 7);
    expect_i(&o, I(-1), 1);
}
END_TEST

START_TEST(cast_rounds_once_to_half)
{
    float a[] = {65520, 65504, 1.0f / 3, -0.0f};
    ir_tensor ta = ten(IR_F32, a, 1, 4);
    ir_tensor o = cast_to(&ta, 10);
    expect_dims(&o, IR_F16, 1, 4);
    expect_u16(&o, (const uint16_t[]){0x7c00, 0x7bff, 0x3555, 0x8000}, 4);
    o = cast_to(&ta, 16);
    expect_u16(&o, (const uint16_t[]){0x4780, 0x4780, 0x3eab, 0x8000}, 4);
    /* Just above a tie: going through f32 (RNE) would land exactly on the
     * tie and round down to even; one correct rounding goes up. */
    double b[] = {1 + 0x1p-11 + 0x1p-40, 1 + 0x1p-8 + 0x1p-40};
    ir_tensor tb = ten(IR_F64, b, 1, 2);
    o = cast_to(&tb, 10);
    ck_assert_uint_eq(((uint16_t *)o.data)[0], 0x3c01);
    o = cast_to(&tb, 16);
    ck_assert_uint_eq(((uint16_t *)o.data)[1], 0x3f81);
    /* The same for an int64 above 2^53: 2^62 + 2^54 + 1 rounds up in bf16. */
    int64_t c[] = {(INT64_C(1) << 62) + (INT64_C(1) << 54) + 1, -((INT64_C(1) << 62) + (INT64_C(1) << 54))};
    ir_tensor tc = ten(IR_I64, c, 1, 2);
    o = cast_to(&tc, 16);
    expect_u16(&o, (const uint16_t[]){0x5e81, 0xde80}, 2);
    /* f16 -> f32 -> f64 round trips exactly */
    uint16_t h[] = {0x3555, 0x0001};
    ir_tensor th = ten(IR_F16, h, 1, 2);
    o = cast_to(&th, 11);
    expect_f(&o, F(0.333251953125, 0x1p-24), 2, 0);
    double d = 1.0 / 3;
    ir_tensor tdd = ten(IR_F64, &d, 0);
    o = cast_to(&tdd, 1);
    ck_assert(((float *)o.data)[0] == (float)(1.0 / 3));
}
END_TEST

START_TEST(cast_like_and_errors)
{
    float a[] = {2.7f, -2.7f};
    int64_t like = 0;
    ir_tensor ta = ten(IR_F32, a, 2, 1, 2), tl = ten(IR_I64, &like, 0);
    ir_tensor o = run(IR_OP_CAST_LIKE, 2, IN(&ta, &tl));
    expect_dims(&o, IR_I64, 2, 1, 2);
    expect_i(&o, I(2, -2), 2);
    ir_node *n = mk(IR_OP_CAST, 1, IN(&ta));
    ir_node_set_int(G, n, "to", 17);
    fails(n, IN(&ta), "FLOAT8E4M3FN");
    n = mk(IR_OP_CAST, 1, IN(&ta));
    ir_node_set_int(G, n, "to", 8);
    fails(n, IN(&ta), "cannot cast to STRING");
    n = mk(IR_OP_CAST, 1, IN(&ta));
    fails(n, IN(&ta), "'to'");
}
END_TEST

/* ---- Clip, Where, PRelu ----------------------------------------------------- */

START_TEST(clip_optional_bounds)
{
    float x[] = {-3, -1, 0, 2, 9, NAN}, lo = -1.5f, hi = 2.5f;
    ir_tensor tx = ten(IR_F32, x, 1, 6), tlo = ten(IR_F32, &lo, 0), thi = ten(IR_F32, &hi, 0);
    ir_tensor o = run(IR_OP_CLIP, 3, IN(&tx, &tlo, &thi));
    expect_f(&o, F(-1.5, -1, 0, 2, 2.5, NAN), 6, 0);
    o = run(IR_OP_CLIP, 3, IN(&tx, NULL, &thi));
    expect_f(&o, F(-3, -1, 0, 2, 2.5, NAN), 6, 0);
    o = run(IR_OP_CLIP, 2, IN(&tx, &tlo));
    expect_f(&o, F(-1.5, -1, 0, 2, 9, NAN), 6, 0);
    o = run(IR_OP_CLIP, 1, IN(&tx));
    expect_f(&o, F(-3, -1, 0, 2, 9, NAN), 6, 0);
    /* min > max: max everywhere */
    o = run(IR_OP_CLIP, 3, IN(&tx, &thi, &tlo));
    expect_f(&o, F(-1.5, -1.5, -1.5, -1.5, -1.5, NAN), 6, 0);
    int8_t y[] = {-128, 0, 127}, ylo = -5;
    ir_tensor ty = ten(IR_I8, y, 1, 3), tylo = ten(IR_I8, &ylo, 1, 1);
    o = run(IR_OP_CLIP, 2, IN(&ty, &tylo));
    expect_i(&o, I(-5, 0, 127), 3);
    uint64_t z[] = {UINT64_MAX, 1}, zhi = UINT64_MAX - 1;
    ir_tensor tz = ten(IR_U64, z, 1, 2), tzhi = ten(IR_U64, &zhi, 0);
    o = run(IR_OP_CLIP, 3, IN(&tz, NULL, &tzhi));
    ck_assert_uint_eq(((uint64_t *)o.data)[0], UINT64_MAX - 1);
    ck_assert_uint_eq(((uint64_t *)o.data)[1], 1);
    float two[] = {0, 1};
    ir_tensor ttwo = ten(IR_F32, two, 1, 2);
    fails(mk(IR_OP_CLIP, 2, IN(&tx, &ttwo)), IN(&tx, &ttwo), "min must be a scalar");
    int32_t ilo = 0;
    ir_tensor tilo = ten(IR_I32, &ilo, 0);
    fails(mk(IR_OP_CLIP, 2, IN(&tx, &tilo)), IN(&tx, &tilo), "input 1 has dtype i32 but input 0 has f32");
}
END_TEST

START_TEST(where_broadcasts_three_ways)
{
    uint8_t c[] = {1, 0};
    int64_t x[] = {1, 2, 3}, y = -7;
    ir_tensor tc = ten(IR_BOOL, c, 2, 2, 1), tx = ten(IR_I64, x, 2, 1, 3), ty = ten(IR_I64, &y, 0);
    ir_tensor o = run(IR_OP_WHERE, 3, IN(&tc, &tx, &ty));
    expect_dims(&o, IR_I64, 2, 2, 3);
    expect_i(&o, I(1, 2, 3, -7, -7, -7), 6);
    uint16_t hx[] = {0x3c00}, hy[] = {0x4000, 0x4200};
    ir_tensor thx = ten(IR_F16, hx, 1, 1), thy = ten(IR_F16, hy, 1, 2);
    uint8_t c2[] = {0, 1};
    ir_tensor tc2 = ten(IR_BOOL, c2, 1, 2);
    o = run(IR_OP_WHERE, 3, IN(&tc2, &thx, &thy));
    expect_u16(&o, (const uint16_t[]){0x4000, 0x3c00}, 2);
    float fc[] = {1};
    ir_tensor tfc = ten(IR_F32, fc, 1, 1);
    fails(mk(IR_OP_WHERE, 3, IN(&tfc, &tx, &ty)), IN(&tfc, &tx, &ty), "must be bool");
    fails(mk(IR_OP_WHERE, 3, IN(&tc, &tx, &thx)), IN(&tc, &tx, &thx), "input 2 has dtype f16");
}
END_TEST

START_TEST(prelu_unidirectional)
{
    float x[] = {-1, 2, -3, -4, 5, -6}, s[] = {0.5f, 2, 3};
    ir_tensor tx = ten(IR_F32, x, 2, 2, 3), ts = ten(IR_F32, s, 1, 3);
    ir_tensor o = run(IR_OP_PRELU, 2, IN(&tx, &ts));
    expect_dims(&o, IR_F32, 2, 2, 3);
    expect_f(&o, F(-0.5, 2, -9, -2, 5, -18), 6, 0);
    float s2[] = {10, 100};
    ir_tensor ts2 = ten(IR_F32, s2, 2, 2, 1);
    o = run(IR_OP_PRELU, 2, IN(&tx, &ts2));
    expect_f(&o, F(-10, 2, -30, -400, 5, -600), 6, 0);
    int32_t ix[] = {-3, 4}, is = 2;
    ir_tensor tix = ten(IR_I32, ix, 1, 2), tis = ten(IR_I32, &is, 1, 1);
    o = run(IR_OP_PRELU, 2, IN(&tix, &tis));
    expect_i(&o, I(-6, 4), 2);
    /* slope may not make the output bigger */
    float s3[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    ir_tensor ts3 = ten(IR_F32, s3, 3, 2, 2, 3);
    fails(mk(IR_OP_PRELU, 2, IN(&tx, &ts3)), IN(&tx, &ts3), "does not broadcast");
    ir_tensor ts4 = ten(IR_F32, s2, 1, 2);
    fails(mk(IR_OP_PRELU, 2, IN(&tx, &ts4)), IN(&tx, &ts4), "slope dim 0 (2) does not broadcast to 3");
}
END_TEST

/* ---- errors and shape inference ---------------------------------------------- */

START_TEST(dtype_and_broadcast_errors)
{
    float a[] = {1, 2, 3, 4, 5, 6};
    int32_t b[] = {1, 2, 3};
    ir_tensor ta = ten(IR_F32, a, 2, 2, 3), tb = ten(IR_I32, b, 1, 3);
    fails(mk(IR_OP_ADD, 2, IN(&ta, &tb)), IN(&ta, &tb),
          "node 'n0' (Add): input 1 has dtype i32 but input 0 has f32");
    fails(mk(IR_OP_LESS, 2, IN(&ta, &tb)), IN(&ta, &tb), "input 1 has dtype i32");
    fails(mk(IR_OP_MAX, 3, IN(&ta, &ta, &tb)), IN(&ta, &ta, &tb), "input 2 has dtype i32");
    ir_tensor t4 = ten(IR_F32, a, 1, 4);
    fails(mk(IR_OP_MUL, 2, IN(&ta, &t4)), IN(&ta, &t4), "cannot broadcast dim 3 against 4");
    fails(mk(IR_OP_SQRT, 1, IN(&tb)), IN(&tb), "input dtype i32 is not supported (expects float)");
    fails(mk(IR_OP_AND, 2, IN(&tb, &tb)), IN(&tb, &tb), "not supported");
    fails(mk(IR_OP_BITWISE_AND, 2, IN(&ta, &ta)), IN(&ta, &ta), "not supported");
    uint8_t e[] = {1};
    ir_tensor te = ten(IR_BOOL, e, 1, 1);
    fails(mk(IR_OP_POW, 2, IN(&ta, &te)), IN(&ta, &te), "exponent dtype bool");
}
END_TEST

START_TEST(shape_functions_keep_symbols)
{
    ir_type a = {IR_F32, 2, {{0, 0}, {3, 0}}}, b = {IR_F32, 1, {{3, 0}}}, out[1];
    a.dims[0].sym = ir_graph_sym(G, "N", 1);
    const ir_type *in[] = {&a, &b};
    const ir_tensor *val[] = {NULL, NULL};
    ir_shape_ctx c = {mk(IR_OP_ADD, 0, NULL), 2, 1, in, val, out, &D, NULL};
    ck_assert_int_eq(ir_ops[IR_OP_ADD].shape(&c), 0);
    ck_assert_int_eq(out[0].rank, 2);
    ck_assert_int_eq(out[0].dims[0].sym, a.dims[0].sym);
    ck_assert_int_eq(out[0].dims[1].v, 3);
    c.node = mk(IR_OP_GREATER, 0, NULL);
    ck_assert_int_eq(ir_ops[IR_OP_GREATER].shape(&c), 0);
    ck_assert_int_eq(out[0].dtype, IR_BOOL);
    /* unknown rank stays unknown; the dtype is still known */
    ir_type u = {IR_F32, IR_RANK_UNKNOWN, {{0, 0}}};
    in[1] = &u;
    c.node = mk(IR_OP_ADD, 0, NULL);
    ck_assert_int_eq(ir_ops[IR_OP_ADD].shape(&c), 0);
    ck_assert_int_eq(out[0].rank, IR_RANK_UNKNOWN);
    ck_assert_int_eq(out[0].dtype, IR_F32);
    /* Cast keeps the symbolic shape */
    ir_node *n = mk(IR_OP_CAST, 0, NULL);
    ir_node_set_int(G, n, "to", 10);
    c.node = n;
    c.nin = 1;
    ck_assert_int_eq(ir_ops[IR_OP_CAST].shape(&c), 0);
    ck_assert_int_eq(out[0].dtype, IR_F16);
    ck_assert_int_eq(out[0].dims[0].sym, a.dims[0].sym);
}
END_TEST

/* A big same-shape f32 add and a broadcast add, checked element-wise. */
START_TEST(big_tensors)
{
    int n = 1 << 20;
    float *a = malloc(sizeof(float) * (size_t)n), *b = malloc(sizeof(float) * 1024);
    ck_assert(a && b);
    allocs[nallocs++] = a;
    allocs[nallocs++] = b;
    for (int i = 0; i < n; i++)
        a[i] = (float)(i % 1000);
    for (int i = 0; i < 1024; i++)
        b[i] = (float)i;
    ir_tensor ta = ten(IR_F32, a, 2, 1024, 1024), tb = ten(IR_F32, b, 1, 1024);
    ir_tensor o = run(IR_OP_ADD, 2, IN(&ta, &tb));
    for (int i = 0; i < n; i++)
        ck_assert_float_eq(((float *)o.data)[i], (float)(i % 1000 + i % 1024));
    o = run(IR_OP_MUL, 2, IN(&ta, &ta));
    for (int i = 0; i < n; i += 997)
        ck_assert_float_eq(((float *)o.data)[i], (float)(i % 1000) * (float)(i % 1000));
    o = run(IR_OP_RELU, 1, IN(&ta));
    ck_assert_float_eq(((float *)o.data)[n - 1], a[n - 1]);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ref_elementwise");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, add_broadcasts_both_ways);
    tcase_add_test(tc, int_arithmetic_wraps);
    tcase_add_test(tc, int_division_truncates_and_defines_zero);
    tcase_add_test(tc, pow_forms);
    tcase_add_test(tc, mod_both_forms);
    tcase_add_test(tc, max_min_propagate_nan_and_broadcast);
    tcase_add_test(tc, sum_and_mean);
    tcase_add_test(tc, comparisons_output_bool);
    tcase_add_test(tc, logic_and_bitwise);
    tcase_add_test(tc, bit_shift);
    tcase_add_test(tc, half_results_round_to_even);
    tcase_add_test(tc, unary_math_matches_libm);
    tcase_add_test(tc, rounding_ops);
    tcase_add_test(tc, int_unary_wraps);
    tcase_add_test(tc, activations_use_schema_defaults_and_attrs);
    tcase_add_test(tc, gelu_both_forms);
    tcase_add_test(tc, isnan_isinf);
    tcase_add_test(tc, cast_float_to_int_truncates_and_saturates);
    tcase_add_test(tc, cast_int_bool_wrap);
    tcase_add_test(tc, cast_rounds_once_to_half);
    tcase_add_test(tc, cast_like_and_errors);
    tcase_add_test(tc, clip_optional_bounds);
    tcase_add_test(tc, where_broadcasts_three_ways);
    tcase_add_test(tc, prelu_unidirectional);
    tcase_add_test(tc, dtype_and_broadcast_errors);
    tcase_add_test(tc, shape_functions_keep_symbols);
    tcase_add_test(tc, big_tensors);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return icc_run_suite(suite());
}
