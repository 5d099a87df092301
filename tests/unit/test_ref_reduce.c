/* test_ref_reduce.c - reference kernels and shape functions of the
 * reductions, ArgMax/ArgMin, CumSum/CumProd, TopK, Unique, Resize,
 * GridSample and Einsum, checked against hand-computed values, plus their
 * error paths. */
#include "check_main.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ops.h"
#include "ir/ref/interp.h"

/* ---- harness: one node, inputs given as concrete tensors ------------------ */

static ir_tensor T(ir_dtype dt, int rank, const int64_t *dims, const void *data)
{
    ir_tensor t = {0};
    icc_diag d;
    ck_assert_int_eq(ir_tensor_init(&t, dt, rank, dims, &d), 0);
    t.data = (void *)data;
    return t;
}

#define F32(rank, dims, ...) T(IR_F32, rank, dims, (const float[]){__VA_ARGS__})
#define I64(rank, dims, ...) T(IR_I64, rank, dims, (const int64_t[]){__VA_ARGS__})
#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

typedef struct case_ {
    ir_graph *g;
    ir_node *n;
    int nin;
    const ir_tensor *in[8];
    ir_tensor out[4];
    icc_diag d;
} case_;

/* Builds a node of op with inputs in[0..nin) (NULL = omitted). */
static void mk(case_ *c, int op, int nout, int nin, const ir_tensor *const *in)
{
    memset(c, 0, sizeof *c);
    c->g = ir_graph_create("t");
    ir_value *v[8] = {0};
    for (int i = 0; i < nin; i++) {
        c->in[i] = in[i];
        if (!in[i])
            continue;
        ir_type t;
        ir_type_of_tensor(in[i], &t);
        char name[8] = {'x', (char)('0' + i), 0};
        v[i] = ir_graph_add_input(c->g, name, &t, &c->d);
    }
    c->nin = nin;
    c->n = ir_graph_add_node(c->g, op, "n0", nin, v, nout, NULL, &c->d);
    ck_assert_ptr_nonnull(c->n);
}

static int run(case_ *c)
{
    return ir_eval_node(c->n, c->in, c->out, &c->d);
}

static void done(case_ *c)
{
    ir_graph_destroy(c->g);
}

static void expect_dims(const ir_tensor *t, int rank, const int64_t *dims)
{
    ck_assert_int_eq(t->rank, rank);
    for (int i = 0; i < rank; i++)
        ck_assert_int_eq(t->dims[i], dims[i]);
}

static void expect_f(const ir_tensor *t, const double *want, int n, double tol)
{
    ck_assert_int_eq(t->numel, n);
    for (int i = 0; i < n; i++) {
        double g = ir_tensor_getf(t, i);
        if (isnan(want[i]))
            ck_assert_msg(isnan(g), "element %d: got %g, want NaN", i, g);
        else if (isinf(want[i]))
            ck_assert_msg(g == want[i], "element %d: got %g, want %g", i, g, want[i]);
        else
            ck_assert_msg(fabs(g - want[i]) <= tol * fmax(1, fabs(want[i])),
                          "element %d: got %.9g, want %.9g", i, g, want[i]);
    }
}

static void expect_i(const ir_tensor *t, const int64_t *want, int n)
{
    ck_assert_int_eq(t->numel, n);
    for (int i = 0; i < n; i++)
        ck_assert_msg(ir_tensor_geti(t, i) == want[i], "element %d: got %lld, want %lld", i,
                      (long long)ir_tensor_geti(t, i), (long long)want[i]);
}

#define EXPECT_F(t, ...) do { const double w_[] = {__VA_ARGS__}; \
    expect_f(t, w_, (int)(sizeof w_ / sizeof w_[0]), 1e-5); } while (0)
#define EXPECT_I(t, ...) do { const int64_t w_[] = {__VA_ARGS__}; \
    expect_i(t, w_, (int)(sizeof w_ / sizeof w_[0])); } while (0)

/* Runs a reduction of x over axes (NULL: input omitted). */
static int reduce(case_ *c, int op, const ir_tensor *x, const ir_tensor *axes, int keepdims, int noop)
{
    const ir_tensor *in[2] = {x, axes};
    mk(c, op, 1, axes ? 2 : 1, in);
    if (keepdims >= 0)
        ir_node_set_int(c->g, c->n, "keepdims", keepdims);
    if (noop)
        ir_node_set_int(c->g, c->n, "noop_with_empty_axes", 1);
    return run(c);
}

/* ---- reductions ------------------------------------------------------------- */

START_TEST(reduce_sum_keepdims)
{
    case_ c;
    ir_tensor x = F32(2, DIMS(2, 3), 1, 2, 3, 4, 5, 6), ax = I64(1, DIMS(1), 1);
    ck_assert_int_eq(reduce(&c, IR_OP_REDUCE_SUM, &x, &ax, -1, 0), 0);
    expect_dims(&c.out[0], 2, DIMS(2, 1));
    EXPECT_F(&c.out[0], 6, 15);
    ir_tensors_free(c.out, 1);
    done(&c);
    /* axis 0, no keepdims */
    ir_tensor ax0 = I64(1, DIMS(1), 0);
    ck_assert_int_eq(reduce(&c, IR_OP_REDUCE_SUM, &x, &ax0, 0, 0), 0);
    expect_dims(&c.out[0], 1, DIMS(3));
    EXPECT_F(&c.out[0], 5, 7, 9);
    ir_tensors_free(c.out, 1);
    done(&c);
}
END_TEST

START_TEST(reduce_mean_negative_axes)
{
    case_ c;
    ir_tensor x = F32(3, DIMS(2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8), ax = I64(1, DIMS(2), -1, -3);
    ck_assert_int_eq(reduce(&c, IR_OP_REDUCE_MEAN, &x, &ax, 0, 0), 0);
    expect_dims(&c.out[0], 1, DIMS(2));
    /* (1+2+5+6)/4, (3+4+7+8)/4 */
    EXPECT_F(&c.out[0], 3.5, 5.5);
    ir_tensors_free(c.out, 1);
    done(&c);
}
END_TEST

START_TEST(reduce_all_and_noop)
{
    case_ c;
    ir_tensor x = F32(2, DIMS(2, 2), 3, -1, 7, 2), empty = T(IR_I64, 1, DIMS(0), NULL);
    /* axes omitted: every dim */
    ck_assert_int_eq(reduce(&c, IR_OP_REDUCE_MAX, &x, NULL, 1, 0), 0);
    expect_dims(&c.out[0], 2, DIMS(1, 1));
    EXPECT_F(&c.out[0], 7);
    ir_tensors_free(c.out, 1);
    done(&c);
    /* empty axes: every dim, no keepdims: a scalar */
    ck_assert_int_eq(reduce(&c, IR_OP_REDUCE_PROD, &x, &empty, 0, 0), 0);
    expect_dims(&c.out[0], 0, NULL);
    EXPECT_F(&c.out[0], -42);
    ir_tensors_free(c.out, 1);
    done(&c);
    /* empty axes with noop_with_empty_axes: identity */
    ck_assert_int_eq(reduce(&c, IR_OP_REDUCE_SUM, &x, &empty, 0, 1), 0);
    expect_dims(&c.out[0], 2, DIMS(2, 2));
    EXPECT_F(&c.out[0], 3, -1, 7, 2);
    ir_tensors_free(c.out, 1);
    done(&c);
    /* omitted axes with noop: identity too */
    ck_assert_int_eq(reduce(&c, IR_OP_REDUCE_MIN, &x, NULL, 1, 1), 0);
    EXPECT_F(&c.out[0], 3, -1, 7, 2);
    ir_tensors_free(c.out, 1);
    done(&c);
}
END_TEST

START_TEST(reduce_other_kinds)
{
    case_ c;
    ir_tensor x = F32(2, DIMS(2, 2), 3, -4, 1, 2), ax = I64(1, DIMS(1), 1);
    static const struct { int op; double a, b; } k[] = {
        {IR_OP_REDUCE_L1, 7, 3},
        {IR_OP_REDUCE_L2, 5, 2.2360679775},
        {IR_OP_REDUCE_SUM_SQUARE, 25, 5},
        {IR_OP_REDUCE_MIN, -4, 1},
        {IR_OP_REDUCE_LOG_SUM, -1e300, 1.0986122887}, /* log(-1) is NaN */
        {IR_OP_REDUCE_LOG_SUM_EXP, 3.0009114665, 2.3132616875},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        ck_assert_int_eq(reduce(&c, k[i].op, &x, &ax, 0, 0), 0);
        if (k[i].op == IR_OP_REDUCE_LOG_SUM) {
            ck_assert(isnan(ir_tensor_getf(&c.out[0], 0)));
            ck_assert(fabs(ir_tensor_getf(&c.out[0], 1) - k[i].b) < 1e-5);
        } else {
            EXPECT_F(&c.out[0], k[i].a, k[i].b);
        }
        ir_tensors_free(c.out, 1);
        done(&c);
    }
    /* LogSumExp stays finite where exp overflows */
    ir_tensor big = F32(1, DIMS(2), 1000, 1000);
    ck_assert_int_eq(reduce(&c, IR_OP_REDUCE_LOG_SUM_EXP, &big, NULL, 0, 0), 0);
    EXPECT_F(&c.out[0], 1000.6931471806);
    ir_tensors_free(c.out, 1);
    done(&c);
}
END_TEST

START_TEST(reduce_empty_set)
{
    case_ c;
    ir_tensor x = T(IR_F32, 3, DIMS(2, 0, 2), NULL), ax = I64(1, DIMS(1), 1);
    static const struct { int op; double v; } k[] = {
        {IR_OP_REDUCE_SUM, 0}, {IR_OP_REDUCE_PROD, 1}, {IR_OP_REDUCE_MAX, -INFINITY},
        {IR_OP_REDUCE_MIN, INFINITY}, {IR_OP_REDUCE_MEAN, NAN}, {IR_OP_REDUCE_L1, 0},
        {IR_OP_REDUCE_L2, 0}, {IR_OP_REDUCE_LOG_SUM, -INFINITY}, {IR_OP_REDUCE_LOG_SUM_EXP, -INFINITY},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        ck_assert_int_eq(reduce(&c, k[i].op, &x, &ax, 1, 0), 0);
        expect_dims(&c.out[0], 3, DIMS(2, 1, 2));
        EXPECT_F(&c.out[0], k[i].v, k[i].v, k[i].v, k[i].v);
        ir_tensors_free(c.out, 1);
        done(&c);
    }
    /* integer max over nothing: the dtype's minimum */
    ir_tensor xi = T(IR_I32, 2, DIMS(0, 2), NULL), ax0 = I64(1, DIMS(1), 0);
    ck_assert_int_eq(reduce(&c, IR_OP_REDUCE_MAX, &xi, &ax0, 0, 0), 0);
    EXPECT_I(&c.out[0], INT32_MIN, INT32_MIN);
    ir_tensors_free(c.out, 1);
    done(&c);
    /* a zero-size kept dim gives an empty output */
    ir_tensor ax2 = I64(1, DIMS(1), 2);
    ck_assert_int_eq(reduce(&c, IR_OP_REDUCE_SUM, &x, &ax2, 1, 0), 0);
    expect_dims(&c.out[0], 3, DIMS(2, 0, 1));
    ir_tensors_free(c.out, 1);
    done(&c);
}
END_TEST

START_TEST(reduce_integers_exact)
{
    case_ c;
    /* 2^53 + 1 is not a double: a double accumulator would lose the 1s */
    int64_t big = ((int64_t)1 << 53) + 1;
    ir_tensor x = T(IR_I64, 1, DIMS(3), (const int64_t[]){big, 1, -big});
    ck_assert_int_eq(reduce(&c, IR_OP_REDUCE_SUM, &x, NULL, 0, 0), 0);
    EXPECT_I(&c.out[0], 1);
    ir_tensors_free(c.out, 1);
    done(&c);
    ir_tensor y = T(IR_I64, 1, DIMS(2), (const int64_t[]){big, big});
    ck_assert_int_eq(reduce(&c, IR_OP_REDUCE_SUM, &y, NULL, 0, 0), 0);
    EXPECT_I(&c.out[0], 2 * big);
    ir_tensors_free(c.out, 1);
    done(&c);
    /* integer mean truncates toward zero */
    ir_tensor m = T(IR_I32, 1, DIMS(2), (const int32_t[]){-3, -4});
    ck_assert_int_eq(reduce(&c, IR_OP_REDUCE_MEAN, &m, NULL, 0, 0), 0);
    EXPECT_I(&c.out[0], -3);
    ir_tensors_free(c.out, 1);
    done(&c);
    /* u64 compares unsigned */
    ir_tensor u = T(IR_U64, 1, DIMS(3), (const uint64_t[]){1, UINT64_MAX, 5});
    ck_assert_int_eq(reduce(&c, IR_OP_REDUCE_MAX, &u, NULL, 0, 0), 0);
    ck_assert(((const uint64_t *)c.out[0].data)[0] == UINT64_MAX);
    ir_tensors_free(c.out, 1);
    done(&c);
    ck_assert_int_eq(reduce(&c, IR_OP_REDUCE_MIN, &u, NULL, 0, 0), 0);
    ck_assert(((const uint64_t *)c.out[0].data)[0] == 1);
    ir_tensors_free(c.out, 1);
    done(&c);
    /* int8 sums wrap like the dtype */
    ir_tensor s8 = T(IR_I8, 1, DIMS(2), (const int8_t[]){100, 100});
    ck_assert_int_eq(reduce(&c, IR_OP_REDUCE_SUM, &s8, NULL, 0, 0), 0);
    EXPECT_I(&c.out[0], -56);
    ir_tensors_free(c.out, 1);
    done(&c);
}
END_TEST

START_TEST(reduce_bool_max_min)
{
    case_ c;
    ir_tensor x = T(IR_BOOL, 2, DIMS(3, 2), (const uint8_t[]){1, 1, 1, 0, 0, 0});
    ir_tensor ax = I64(1, DIMS(1), 1);
    ck_assert_int_eq(reduce(&c, IR_OP_REDUCE_MAX, &x, &ax, 0, 0), 0);
    ck_assert_int_eq(c.out[0].dtype, IR_BOOL);
    EXPECT_I(&c.out[0], 1, 1, 0);
    ir_tensors_free(c.out, 1);
    done(&c);
    ck_assert_int_eq(reduce(&c, IR_OP_REDUCE_MIN, &x, &ax, 0, 0), 0);
    EXPECT_I(&c.out[0], 1, 0, 0);
    ir_tensors_free(c.out, 1);
    done(&c);
    ck_assert_int_eq(reduce(&c, IR_OP_REDUCE_SUM, &x, &ax, 0, 0), -1);
    done(&c);
}
END_TEST

START_TEST(reduce_errors)
{
    case_ c;
    ir_tensor x = F32(2, DIMS(2, 2), 1, 2, 3, 4);
    ir_tensor dup = I64(1, DIMS(2), 1, -1), oor = I64(1, DIMS(1), 2), many = I64(1, DIMS(3), 0, 1, 0);
    ck_assert_int_eq(reduce(&c, IR_OP_REDUCE_SUM, &x, &dup, 1, 0), -1);
    ck_assert_ptr_nonnull(strstr(c.d.msg, "node 'n0' (ReduceSum)"));
    ck_assert_ptr_nonnull(strstr(c.d.msg, "twice"));
    done(&c);
    ck_assert_int_eq(reduce(&c, IR_OP_REDUCE_MEAN, &x, &oor, 1, 0), -1);
    ck_assert_ptr_nonnull(strstr(c.d.msg, "out of range"));
    done(&c);
    ck_assert_int_eq(reduce(&c, IR_OP_REDUCE_MAX, &x, &many, 1, 0), -1);
    done(&c);
    ir_tensor fax = F32(1, DIMS(1), 0);
    ck_assert_int_eq(reduce(&c, IR_OP_REDUCE_MAX, &x, &fax, 1, 0), -1);
    done(&c);
}
END_TEST

/* A reduction over the last axis of a [4,512,768] tensor stays fast. */
START_TEST(reduce_mean_large)
{
    int64_t n = 4 * 512 * 768;
    float *data = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        data[i] = (float)(i % 768);
    case_ c;
    ir_tensor x = T(IR_F32, 3, DIMS(4, 512, 768), data), ax = I64(1, DIMS(1), -1);
    ck_assert_int_eq(reduce(&c, IR_OP_REDUCE_MEAN, &x, &ax, 1, 0), 0);
    expect_dims(&c.out[0], 3, DIMS(4, 512, 1));
    for (int i = 0; i < 2048; i++)
        ck_assert(fabs(ir_tensor_getf(&c.out[0], i) - 383.5) < 1e-4);
    ir_tensors_free(c.out, 1);
    done(&c);
    free(data);
}
END_TEST

/* Static shape inference: symbols survive, unknown axes give unknown dims. */
START_TEST(reduce_shape_inference)
{
    icc_diag d;
    ir_graph *g = ir_graph_create("t");
    int32_t N = ir_graph_sym(g, "N", 1);
    ir_type xt = {IR_F32, 3, {{0, N}, {4, 0}, {5, 0}}};
    ir_value *x = ir_graph_add_input(g, "x", &xt, &d);
    ir_type at = {IR_I64, 1, {{1, 0}}};
    ir_value *ax = ir_graph_add_const(g, "ax", &at, (const int64_t[]){-1}, &d);
    ir_type dyn_t = {IR_I64, 1, {{2, 0}}};
    ir_value *dyn = ir_graph_add_input(g, "dyn", &dyn_t, &d);
    ir_node *n1 = ir_graph_add_node(g, IR_OP_REDUCE_SUM, "r1", 2, (ir_value *[]){x, ax}, 1, NULL, &d);
    ir_node_set_int(g, n1, "keepdims", 0);
    ir_node *n2 = ir_graph_add_node(g, IR_OP_REDUCE_SUM, "r2", 2, (ir_value *[]){x, dyn}, 1, NULL, &d);
    ir_node_set_int(g, n2, "keepdims", 0);
    ir_node *n3 = ir_graph_add_node(g, IR_OP_REDUCE_MAX, "r3", 2, (ir_value *[]){x, dyn}, 1, NULL, &d);
    ir_node *n4 = ir_graph_add_node(g, IR_OP_ARG_MAX, "a4", 1, (ir_value *[]){x}, 1, NULL, &d);
    ir_node_set_int(g, n4, "axis", 2);
    ck_assert_msg(ir_infer_shapes(g, &d) == 0, "%s", d.msg);
    const ir_type *t1 = &n1->out[0]->type;
    ck_assert_int_eq(t1->rank, 2);
    ck_assert_int_eq(t1->dims[0].sym, N);
    ck_assert(ir_dim_is_const(t1->dims[1]) && t1->dims[1].v == 4);
    const ir_type *t2 = &n2->out[0]->type;
    ck_assert_int_eq(t2->rank, 1);
    ck_assert_int_eq(t2->dims[0].sym, IR_DIM_UNKNOWN);
    const ir_type *t3 = &n3->out[0]->type;
    ck_assert_int_eq(t3->rank, 3);
    ck_assert_int_eq(t3->dims[0].sym, IR_DIM_UNKNOWN);
    const ir_type *t4 = &n4->out[0]->type;
    ck_assert_int_eq(t4->dtype, IR_I64);
    ck_assert_int_eq(t4->rank, 3);
    ck_assert_int_eq(t4->dims[0].sym, N);
    ck_assert(t4->dims[2].sym == 0 && t4->dims[2].v == 1);
    ir_graph_destroy(g);
}
END_TEST

/* ---- ArgMax / ArgMin ---------------------------------------------------------- */

static int arg(case_ *c, int op, const ir_tensor *x, int64_t axis, int keep, int last)
{
    mk(c, op, 1, 1, &x);
    ir_node_set_int(c->g, c->n, "axis", axis);
    ir_node_set_int(c->g, c->n, "keepdims", keep);
    ir_node_set_int(c->g, c->n, "select_last_index", last);
    return run(c);
}

START_TEST(argmax_argmin)
{
    case_ c;
    ir_tensor x = F32(2, DIMS(2, 3), 1, 5, 5, 7, 2, 7);
    ck_assert_int_eq(arg(&c, IR_OP_ARG_MAX, &x, 1, 1, 0), 0);
    ck_assert_int_eq(c.out[0].dtype, IR_I64);
    expect_dims(&c.out[0], 2, DIMS(2, 1));
    EXPECT_I(&c.out[0], 1, 0);
    ir_tensors_free(c.out, 1);
    done(&c);
    ck_assert_int_eq(arg(&c, IR_OP_ARG_MAX, &x, -1, 0, 1), 0);
    expect_dims(&c.out[0], 1, DIMS(2));
    EXPECT_I(&c.out[0], 2, 2);
    ir_tensors_free(c.out, 1);
    done(&c);
    ck_assert_int_eq(arg(&c, IR_OP_ARG_MIN, &x, 0, 0, 0), 0);
    EXPECT_I(&c.out[0], 0, 1, 0);
    ir_tensors_free(c.out, 1);
    done(&c);
    ir_tensor t = T(IR_I32, 1, DIMS(4), (const int32_t[]){2, 1, 3, 1});
    ck_assert_int_eq(arg(&c, IR_OP_ARG_MIN, &t, 0, 1, 1), 0);
    EXPECT_I(&c.out[0], 3);
    ir_tensors_free(c.out, 1);
    done(&c);
    ck_assert_int_eq(arg(&c, IR_OP_ARG_MAX, &x, 2, 1, 0), -1);
    ck_assert_ptr_nonnull(strstr(c.d.msg, "out of range"));
    done(&c);
}
END_TEST

/* ---- CumSum --------------------------------------------------------------------- */

static int cumop(case_ *c, int op, const ir_tensor *x, const ir_tensor *axis, int excl, int rev)
{
    const ir_tensor *in[2] = {x, axis};
    mk(c, op, 1, 2, in);
    ir_node_set_int(c->g, c->n, "exclusive", excl);
    ir_node_set_int(c->g, c->n, "reverse", rev);
    return run(c);
}

START_TEST(cumsum_modes)
{
    case_ c;
    ir_tensor x = F32(1, DIMS(3), 1, 2, 3), a0 = T(IR_I32, 0, NULL, (const int32_t[]){0});
    static const double want[4][3] = {{1, 3, 6}, {0, 1, 3}, {6, 5, 3}, {5, 3, 0}};
    for (int m = 0; m < 4; m++) {
        ck_assert_int_eq(cumop(&c, IR_OP_CUM_SUM, &x, &a0, m & 1, m >> 1), 0);
        expect_f(&c.out[0], want[m], 3, 0);
        ir_tensors_free(c.out, 1);
        done(&c);
    }
    ir_tensor x2 = T(IR_I64, 2, DIMS(2, 3), (const int64_t[]){1, 2, 3, 4, 5, 6});
    ir_tensor am1 = I64(1, DIMS(1), -1);
    ck_assert_int_eq(cumop(&c, IR_OP_CUM_SUM, &x2, &am1, 0, 0), 0);
    EXPECT_I(&c.out[0], 1, 3, 6, 4, 9, 15);
    ir_tensors_free(c.out, 1);
    done(&c);
    ir_tensor a2 = I64(1, DIMS(1), 2);
    ck_assert_int_eq(cumop(&c, IR_OP_CUM_SUM, &x2, &a2, 0, 0), -1);
    done(&c);
}
END_TEST

START_TEST(cumprod_modes)
{
    case_ c;
    ir_tensor x = F32(1, DIMS(3), 2, 3, 4), a0 = T(IR_I64, 0, NULL, (const int64_t[]){0});
    static const double want[4][3] = {{2, 6, 24}, {1, 2, 6}, {24, 12, 4}, {12, 4, 1}};
    for (int m = 0; m < 4; m++) {
        ck_assert_int_eq(cumop(&c, IR_OP_CUM_PROD, &x, &a0, m & 1, m >> 1), 0);
        expect_f(&c.out[0], want[m], 3, 0);
        ir_tensors_free(c.out, 1);
        done(&c);
    }
    /* integers multiply exactly past 2^53 */
    int64_t big = ((int64_t)1 << 31) + 1;
    ir_tensor xi = T(IR_I64, 1, DIMS(2), (const int64_t[]){big, big});
    ck_assert_int_eq(cumop(&c, IR_OP_CUM_PROD, &xi, &a0, 0, 0), 0);
    EXPECT_I(&c.out[0], big, big * big);
    ir_tensors_free(c.out, 1);
    done(&c);
}
END_TEST

/* ---- TopK ----------------------------------------------------------------------- */

static int topk(case_ *c, const ir_tensor *x, int64_t k, int64_t axis, int largest)
{
    static int64_t kv;
    static ir_tensor kt;
    kv = k;
    kt = T(IR_I64, 1, DIMS(1), &kv);
    const ir_tensor *in[2] = {x, &kt};
    mk(c, IR_OP_TOP_K, 2, 2, in);
    ir_node_set_int(c->g, c->n, "axis", axis);
    ir_node_set_int(c->g, c->n, "largest", largest);
    return run(c);
}

START_TEST(topk_ties_and_order)
{
    case_ c;
    ir_tensor x = F32(1, DIMS(5), 3, 1, 3, 2, 1);
    ck_assert_int_eq(topk(&c, &x, 3, 0, 1), 0);
    EXPECT_F(&c.out[0], 3, 3, 2);
    EXPECT_I(&c.out[1], 0, 2, 3);
    ck_assert_int_eq(c.out[1].dtype, IR_I64);
    ir_tensors_free(c.out, 2);
    done(&c);
    ck_assert_int_eq(topk(&c, &x, 3, -1, 0), 0);
    EXPECT_F(&c.out[0], 1, 1, 2);
    EXPECT_I(&c.out[1], 1, 4, 3);
    ir_tensors_free(c.out, 2);
    done(&c);
    /* along axis 0 of a matrix */
    ir_tensor m = T(IR_I32, 2, DIMS(3, 2), (const int32_t[]){5, 0, 9, 0, 1, 7});
    ck_assert_int_eq(topk(&c, &m, 2, 0, 1), 0);
    expect_dims(&c.out[0], 2, DIMS(2, 2));
    EXPECT_I(&c.out[0], 9, 7, 5, 0);
    EXPECT_I(&c.out[1], 1, 2, 0, 0);
    ir_tensors_free(c.out, 2);
    done(&c);
    ck_assert_int_eq(topk(&c, &x, 0, 0, 1), 0);
    expect_dims(&c.out[0], 1, DIMS(0));
    ir_tensors_free(c.out, 2);
    done(&c);
    ck_assert_int_eq(topk(&c, &x, 6, 0, 1), -1);
    ck_assert_ptr_nonnull(strstr(c.d.msg, "exceeds"));
    done(&c);
    ck_assert_int_eq(topk(&c, &x, -1, 0, 1), -1);
    done(&c);
}
END_TEST

/* ---- Unique ----------------------------------------------------------------------- */

START_TEST(unique_flat_and_axis)
{
    case_ c;
    ir_tensor x = F32(1, DIMS(6), 2, 1, 1, 3, 4, 3);
    const ir_tensor *in[1] = {&x};
    /* first-occurrence order */
    mk(&c, IR_OP_UNIQUE, 4, 1, in);
    ir_node_set_int(c.g, c.n, "sorted", 0);
    ck_assert_msg(run(&c) == 0, "%s", c.d.msg);
    EXPECT_F(&c.out[0], 2, 1, 3, 4);
    EXPECT_I(&c.out[1], 0, 1, 3, 4);
    EXPECT_I(&c.out[2], 0, 1, 1, 2, 3, 2);
    EXPECT_I(&c.out[3], 1, 2, 2, 1);
    ir_tensors_free(c.out, 4);
    done(&c);
    /* ascending */
    mk(&c, IR_OP_UNIQUE, 4, 1, in);
    ck_assert_int_eq(run(&c), 0);
    EXPECT_F(&c.out[0], 1, 2, 3, 4);
    EXPECT_I(&c.out[1], 1, 0, 3, 4);
    EXPECT_I(&c.out[2], 1, 0, 0, 2, 3, 2);
    EXPECT_I(&c.out[3], 2, 1, 2, 1);
    ir_tensors_free(c.out, 4);
    done(&c);
    /* rows of a matrix */
    ir_tensor m = T(IR_I32, 2, DIMS(3, 3), (const int32_t[]){2, 3, 4, 1, 0, 0, 2, 3, 4});
    const ir_tensor *mi[1] = {&m};
    mk(&c, IR_OP_UNIQUE, 4, 1, mi);
    ir_node_set_int(c.g, c.n, "axis", 0);
    ck_assert_int_eq(run(&c), 0);
    expect_dims(&c.out[0], 2, DIMS(2, 3));
    EXPECT_I(&c.out[0], 1, 0, 0, 2, 3, 4);
    EXPECT_I(&c.out[1], 1, 0);
    EXPECT_I(&c.out[2], 1, 0, 1);
    EXPECT_I(&c.out[3], 1, 2);
    ir_tensors_free(c.out, 4);
    done(&c);
    mk(&c, IR_OP_UNIQUE, 1, 1, mi);
    ir_node_set_int(c.g, c.n, "axis", 2);
    ck_assert_int_eq(run(&c), -1);
    done(&c);
}
END_TEST

/* ---- Resize ----------------------------------------------------------------------- */

/* Resize of x by scales (or sizes when sizes != NULL). */
static int resize(case_ *c, const ir_tensor *x, const ir_tensor *roi, const ir_tensor *scales,
                  const ir_tensor *sizes, const char *mode, const char *ctm)
{
    const ir_tensor *in[4] = {x, roi, scales, sizes};
    mk(c, IR_OP_RESIZE, 1, sizes ? 4 : 3, in);
    ir_node_set_string(c->g, c->n, "mode", mode);
    if (ctm)
        ir_node_set_string(c->g, c->n, "coordinate_transformation_mode", ctm);
    return run(c);
}

START_TEST(resize_nearest)
{
    case_ c;
    ir_tensor x = F32(4, DIMS(1, 1, 2, 2), 1, 2, 3, 4);
    ir_tensor sc = F32(1, DIMS(4), 1, 1, 2, 3);
    ck_assert_int_eq(resize(&c, &x, NULL, &sc, NULL, "nearest", NULL), 0);
    expect_dims(&c.out[0], 4, DIMS(1, 1, 4, 6));
    EXPECT_F(&c.out[0], 1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
             3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4);
    ir_tensors_free(c.out, 1);
    done(&c);
    /* sizes, asymmetric: x_ori = x * 3/5 = 0, .6, 1.2, 1.8, 2.4, rounded */
    ir_tensor r = F32(1, DIMS(3), 10, 20, 30), sz = I64(1, DIMS(1), 5);
    ck_assert_int_eq(resize(&c, &r, NULL, NULL, &sz, "nearest", "asymmetric"), 0);
    EXPECT_F(&c.out[0], 10, 20, 20, 30, 30);
    ir_tensors_free(c.out, 1);
    done(&c);
    /* half_pixel 3 -> 6: x_ori = -.25, .25, .75, 1.25, 1.75, 2.25 (the first clamps to 0) */
    ir_tensor sz6 = I64(1, DIMS(1), 6);
    ck_assert_int_eq(resize(&c, &r, NULL, NULL, &sz6, "nearest", NULL), 0);
    EXPECT_F(&c.out[0], 10, 10, 20, 20, 30, 30);
    ir_tensors_free(c.out, 1);
    done(&c);
    /* integer data is copied exactly */
    int64_t big = ((int64_t)1 << 60) + 1;
    ir_tensor xi = T(IR_I64, 1, DIMS(1), (const int64_t[]){big}), s2 = F32(1, DIMS(1), 2);
    ck_assert_int_eq(resize(&c, &xi, NULL, &s2, NULL, "nearest", NULL), 0);
    EXPECT_I(&c.out[0], big, big);
    ir_tensors_free(c.out, 1);
    done(&c);
}
END_TEST

START_TEST(resize_nearest_modes)
{
    case_ c;
    /* asymmetric 4 -> 8 with scale 2: x_ori = 0, .5, 1, 1.5, ... */
    ir_tensor x = F32(1, DIMS(4), 0, 1, 2, 3), s2 = F32(1, DIMS(1), 2);
    static const struct { const char *m; double w[8]; } k[] = {
        {"round_prefer_floor", {0, 0, 1, 1, 2, 2, 3, 3}},
        {"round_prefer_ceil", {0, 1, 1, 2, 2, 3, 3, 3}},
        {"floor", {0, 0, 1, 1, 2, 2, 3, 3}},
        {"ceil", {0, 1, 1, 2, 2, 3, 3, 3}},
    };
    for (int i = 0; i < 4; i++) {
        const ir_tensor *in[3] = {&x, NULL, &s2};
        mk(&c, IR_OP_RESIZE, 1, 3, in);
        ir_node_set_string(c.g, c.n, "coordinate_transformation_mode", "asymmetric");
        ir_node_set_string(c.g, c.n, "nearest_mode", k[i].m);
        ck_assert_int_eq(run(&c), 0);
        expect_f(&c.out[0], k[i].w, 8, 0);
        ir_tensors_free(c.out, 1);
        done(&c);
    }
}
END_TEST

START_TEST(resize_linear)
{
    case_ c;
    ir_tensor x = F32(4, DIMS(1, 1, 2, 2), 1, 2, 3, 4);
    ir_tensor sc = F32(1, DIMS(4), 1, 1, 2, 2);
    /* half_pixel: x_ori = -.25, .25, .75, 1.25 (clamped at the edges) */
    ck_assert_int_eq(resize(&c, &x, NULL, &sc, NULL, "linear", NULL), 0);
    EXPECT_F(&c.out[0], 1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5,
             2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4);
    ir_tensors_free(c.out, 1);
    done(&c);
    /* align_corners: x_ori = 0, 1/3, 2/3, 1 */
    ck_assert_int_eq(resize(&c, &x, NULL, &sc, NULL, "linear", "align_corners"), 0);
    double t = 1.0 / 3;
    EXPECT_F(&c.out[0], 1, 1 + t, 1 + 2 * t, 2, 1 + 2 * t, 1 + 3 * t, 1 + 4 * t, 2 + 2 * t,
             1 + 4 * t, 1 + 5 * t, 1 + 6 * t, 2 + 4 * t, 3, 3 + t, 3 + 2 * t, 4);
    ir_tensors_free(c.out, 1);
    done(&c);
    /* axes attribute: only the last dim, sizes 3 -> asymmetric x_ori = 0, 2/3, 4/3 */
    ir_tensor sz = I64(1, DIMS(1), 3);
    {
        const ir_tensor *in[4] = {&x, NULL, NULL, &sz};
        mk(&c, IR_OP_RESIZE, 1, 4, in);
        ir_node_set_string(c.g, c.n, "mode", "linear");
        ir_node_set_string(c.g, c.n, "coordinate_transformation_mode", "asymmetric");
        ir_node_set_ints(c.g, c.n, "axes", (const int64_t[]){-1}, 1);
        ck_assert_int_eq(run(&c), 0);
        expect_dims(&c.out[0], 4, DIMS(1, 1, 2, 3));
        EXPECT_F(&c.out[0], 1, 1 + 2 * t, 2, 3, 3 + 2 * t, 4);
        ir_tensors_free(c.out, 1);
        done(&c);
    }
    /* u8 output rounds half to even */
    ir_tensor u = T(IR_U8, 1, DIMS(2), (const uint8_t[]){0, 3}), s15 = F32(1, DIMS(1), 2);
    ck_assert_int_eq(resize(&c, &u, NULL, &s15, NULL, "linear", "asymmetric"), 0);
    EXPECT_I(&c.out[0], 0, 2, 3, 3); /* 0, 1.5 -> 2, 3, 3 */
    ir_tensors_free(c.out, 1);
    done(&c);
}
END_TEST

START_TEST(resize_tf_crop_and_resize)
{
    case_ c;
    ir_tensor x = F32(1, DIMS(5), 0, 10, 20, 30, 40);
    /* roi [0.25, 1.25] over 4 px: x_ori = 1 + x*4*... with 3 outputs: 1, 3, 5 (5 > 4 extrapolates) */
    ir_tensor roi = F32(1, DIMS(2), 0.25f, 1.25f), sz = I64(1, DIMS(1), 3);
    const ir_tensor *in[4] = {&x, &roi, NULL, &sz};
    mk(&c, IR_OP_RESIZE, 1, 4, in);
    ir_node_set_string(c.g, c.n, "mode", "linear");
    ir_node_set_string(c.g, c.n, "coordinate_transformation_mode", "tf_crop_and_resize");
    ir_node_set_float(c.g, c.n, "extrapolation_value", -7);
    ck_assert_int_eq(run(&c), 0);
    EXPECT_F(&c.out[0], 10, 30, -7);
    ir_tensors_free(c.out, 1);
    done(&c);
}
END_TEST

/* Cubic convolution reproduces a linear ramp away from the edges, for any a. */
START_TEST(resize_cubic_ramp)
{
    case_ c;
    ir_tensor x = F32(1, DIMS(8), 0, 1, 2, 3, 4, 5, 6, 7), s2 = F32(1, DIMS(1), 2);
    const ir_tensor *in[3] = {&x, NULL, &s2};
    mk(&c, IR_OP_RESIZE, 1, 3, in);
    ir_node_set_string(c.g, c.n, "mode", "cubic");
    ir_node_set_string(c.g, c.n, "coordinate_transformation_mode", "asymmetric");
    ir_node_set_float(c.g, c.n, "cubic_coeff_a", -0.5f);
    ck_assert_int_eq(run(&c), 0);
    expect_dims(&c.out[0], 1, DIMS(16));
    for (int i = 2; i <= 10; i++)
        ck_assert(fabs(ir_tensor_getf(&c.out[0], i) - i / 2.0) < 1e-6);
    ir_tensors_free(c.out, 1);
    done(&c);
}
END_TEST

START_TEST(resize_errors)
{
    case_ c;
    ir_tensor x = F32(1, DIMS(2), 1, 2), s2 = F32(1, DIMS(1), 2), sz = I64(1, DIMS(1), 3);
    ck_assert_int_eq(resize(&c, &x, NULL, &s2, &sz, "nearest", NULL), -1);
    ck_assert_ptr_nonnull(strstr(c.d.msg, "both"));
    done(&c);
    ck_assert_int_eq(resize(&c, &x, NULL, NULL, NULL, "nearest", NULL), -1);
    done(&c);
    ck_assert_int_eq(resize(&c, &x, NULL, &s2, NULL, "bicubic", NULL), -1);
    ck_assert_ptr_nonnull(strstr(c.d.msg, "unknown mode"));
    done(&c);
    ir_tensor s0 = F32(1, DIMS(1), 0);
    ck_assert_int_eq(resize(&c, &x, NULL, &s0, NULL, "nearest", NULL), -1);
    done(&c);
    ir_tensor s_two = F32(1, DIMS(2), 1, 2);
    ck_assert_int_eq(resize(&c, &x, NULL, &s_two, NULL, "nearest", NULL), -1);
    done(&c);
    ir_tensor huge = F32(1, DIMS(1), 1e30f);
    ck_assert_int_eq(resize(&c, &x, NULL, &huge, NULL, "nearest", NULL), -1);
    done(&c);
    const ir_tensor *in[3] = {&x, NULL, &s2};
    mk(&c, IR_OP_RESIZE, 1, 3, in);
    ir_node_set_int(c.g, c.n, "antialias", 1);
    ck_assert_int_eq(run(&c), -1);
    done(&c);
}
END_TEST

START_TEST(resize_shape_inference)
{
    icc_diag d;
    ir_graph *g = ir_graph_create("t");
    int32_t N = ir_graph_sym(g, "N", 1);
    ir_type xt = {IR_F32, 4, {{0, N}, {3, 0}, {4, 0}, {5, 0}}};
    ir_value *x = ir_graph_add_input(g, "x", &xt, &d);
    ir_type st = {IR_F32, 1, {{4, 0}}};
    ir_value *sc = ir_graph_add_const(g, "sc", &st, (const float[]){1, 1, 2, 0.5f}, &d);
    ir_value *dyn = ir_graph_add_input(g, "dyn", &st, &d);
    ir_node *n1 = ir_graph_add_node(g, IR_OP_RESIZE, "r1", 3, (ir_value *[]){x, NULL, sc}, 1, NULL, &d);
    ir_node *n2 = ir_graph_add_node(g, IR_OP_RESIZE, "r2", 3, (ir_value *[]){x, NULL, dyn}, 1, NULL, &d);
    ck_assert_msg(ir_infer_shapes(g, &d) == 0, "%s", d.msg);
    const ir_type *t1 = &n1->out[0]->type;
    ck_assert_int_eq(t1->rank, 4);
    ck_assert_int_eq(t1->dims[0].sym, N);
    ck_assert_int_eq(t1->dims[2].v, 8);
    ck_assert_int_eq(t1->dims[3].v, 2);
    const ir_type *t2 = &n2->out[0]->type;
    ck_assert_int_eq(t2->rank, 4);
    ck_assert_int_eq(t2->dims[2].sym, IR_DIM_UNKNOWN);
    ir_graph_destroy(g);
}
END_TEST

/* ---- GridSample -------------------------------------------------------------------- */

/* Samples X = [[1, 2], [3, 4]] at one grid point (gx, gy). */
static double grid_sample1(float gx, float gy, const char *mode, const char *pad, int align)
{
    case_ c;
    ir_tensor x = F32(4, DIMS(1, 1, 2, 2), 1, 2, 3, 4);
    float gd[2] = {gx, gy};
    ir_tensor g = T(IR_F32, 4, DIMS(1, 1, 1, 2), gd);
    const ir_tensor *in[2] = {&x, &g};
    mk(&c, IR_OP_GRID_SAMPLE, 1, 2, in);
    ir_node_set_string(c.g, c.n, "mode", mode);
    ir_node_set_string(c.g, c.n, "padding_mode", pad);
    ir_node_set_int(c.g, c.n, "align_corners", align);
    ck_assert_msg(run(&c) == 0, "%s", c.d.msg);
    expect_dims(&c.out[0], 4, DIMS(1, 1, 1, 1));
    double v = ir_tensor_getf(&c.out[0], 0);
    ir_tensors_free(c.out, 1);
    done(&c);
    return v;
}

START_TEST(grid_sample_points)
{
    /* the centre is the mean of the four pixels */
    ck_assert(fabs(grid_sample1(0, 0, "linear", "zeros", 0) - 2.5) < 1e-6);
    /* align_corners=1: (-1, -1) and (1, -1) are the centres of pixels (0,0) and (0,1) */
    ck_assert(fabs(grid_sample1(-1, -1, "linear", "zeros", 1) - 1) < 1e-6);
    ck_assert(fabs(grid_sample1(1, -1, "linear", "zeros", 1) - 2) < 1e-6);
    /* align_corners=0: (-1, -1) is the outer corner, x = y = -0.5; a quarter of
     * pixel (0,0) with zeros, all of it with border and reflection */
    ck_assert(fabs(grid_sample1(-1, -1, "linear", "zeros", 0) - 0.25) < 1e-6);
    ck_assert(fabs(grid_sample1(-1, -1, "linear", "border", 0) - 1) < 1e-6);
    ck_assert(fabs(grid_sample1(-1, -1, "linear", "reflection", 0) - 1) < 1e-6);
    /* nearest: x = 0.6 -> 1, y = -0.1 -> 0 */
    ck_assert(fabs(grid_sample1(0.1f, -0.6f, "nearest", "zeros", 0) - 2) < 1e-6);
    /* far outside: zeros reads 0, border the corner pixel (1, 1) */
    ck_assert(fabs(grid_sample1(5, 5, "linear", "zeros", 0)) < 1e-6);
    ck_assert(fabs(grid_sample1(5, 5, "linear", "border", 0) - 4) < 1e-6);
}
END_TEST

START_TEST(grid_sample_errors)
{
    case_ c;
    ir_tensor x = F32(4, DIMS(1, 1, 2, 2), 1, 2, 3, 4);
    ir_tensor g3 = F32(4, DIMS(1, 1, 1, 3), 0, 0, 0);
    const ir_tensor *in[2] = {&x, &g3};
    mk(&c, IR_OP_GRID_SAMPLE, 1, 2, in);
    ck_assert_int_eq(run(&c), -1);
    ck_assert_ptr_nonnull(strstr(c.d.msg, "last dim"));
    done(&c);
    ir_tensor g2 = F32(4, DIMS(1, 1, 1, 2), 0, 0);
    const ir_tensor *in2[2] = {&x, &g2};
    mk(&c, IR_OP_GRID_SAMPLE, 1, 2, in2);
    ir_node_set_string(c.g, c.n, "padding_mode", "mirror");
    ck_assert_int_eq(run(&c), -1);
    done(&c);
}
END_TEST

/* ---- Einsum ------------------------------------------------------------------------ */

static int einsum(case_ *c, const char *eq, int nin, const ir_tensor *const *in)
{
    mk(c, IR_OP_EINSUM, 1, nin, in);
    ir_node_set_string(c->g, c->n, "equation", eq);
    return run(c);
}

START_TEST(einsum_forms)
{
    case_ c;
    ir_tensor a = F32(2, DIMS(2, 3), 1, 2, 3, 4, 5, 6);
    ir_tensor b = F32(2, DIMS(3, 2), 1, 0, 0, 1, 1, 1);
    const ir_tensor *ab[2] = {&a, &b};
    /* matmul, explicit and implicit */
    static const char *const mm[] = {"ij,jk->ik", "ij,jk", " i j , j k -> i k"};
    for (int i = 0; i < 3; i++) {
        ck_assert_msg(einsum(&c, mm[i], 2, ab) == 0, "%s", c.d.msg);
        expect_dims(&c.out[0], 2, DIMS(2, 2));
        EXPECT_F(&c.out[0], 4, 5, 10, 11);
        ir_tensors_free(c.out, 1);
        done(&c);
    }
    const ir_tensor *a1[1] = {&a};
    ck_assert_int_eq(einsum(&c, "ij->ji", 1, a1), 0);
    expect_dims(&c.out[0], 2, DIMS(3, 2));
    EXPECT_F(&c.out[0], 1, 4, 2, 5, 3, 6);
    ir_tensors_free(c.out, 1);
    done(&c);
    ck_assert_int_eq(einsum(&c, "ij->i", 1, a1), 0);
    EXPECT_F(&c.out[0], 6, 15);
    ir_tensors_free(c.out, 1);
    done(&c);
    ck_assert_int_eq(einsum(&c, "ij->", 1, a1), 0);
    expect_dims(&c.out[0], 0, NULL);
    EXPECT_F(&c.out[0], 21);
    ir_tensors_free(c.out, 1);
    done(&c);
    /* implicit transpose: "ji" outputs labels in order i, j */
    ck_assert_int_eq(einsum(&c, "ji", 1, a1), 0);
    expect_dims(&c.out[0], 2, DIMS(3, 2));
    ir_tensors_free(c.out, 1);
    done(&c);
    /* trace and diagonal */
    ir_tensor sq = F32(2, DIMS(3, 3), 1, 2, 3, 4, 5, 6, 7, 8, 9);
    const ir_tensor *s1[1] = {&sq};
    ck_assert_int_eq(einsum(&c, "ii", 1, s1), 0);
    EXPECT_F(&c.out[0], 15);
    ir_tensors_free(c.out, 1);
    done(&c);
    ck_assert_int_eq(einsum(&c, "ii->i", 1, s1), 0);
    EXPECT_F(&c.out[0], 1, 5, 9);
    ir_tensors_free(c.out, 1);
    done(&c);
    /* outer product and inner product */
    ir_tensor u = F32(1, DIMS(2), 1, 2), v = F32(1, DIMS(3), 3, 4, 5);
    const ir_tensor *uv[2] = {&u, &v};
    ck_assert_int_eq(einsum(&c, "i,j->ij", 2, uv), 0);
    EXPECT_F(&c.out[0], 3, 4, 5, 6, 8, 10);
    ir_tensors_free(c.out, 1);
    done(&c);
    const ir_tensor *uu[2] = {&u, &u};
    ck_assert_int_eq(einsum(&c, "i,i", 2, uu), 0);
    EXPECT_F(&c.out[0], 5);
    ir_tensors_free(c.out, 1);
    done(&c);
}
END_TEST

START_TEST(einsum_batch_and_ellipsis)
{
    case_ c;
    /* bij,bjk->bik with b = 2 */
    ir_tensor a = F32(3, DIMS(2, 1, 2), 1, 2, 3, 4);
    ir_tensor b = F32(3, DIMS(2, 2, 1), 5, 6, 7, 8);
    const ir_tensor *ab[2] = {&a, &b};
    ck_assert_int_eq(einsum(&c, "bij,bjk->bik", 2, ab), 0);
    expect_dims(&c.out[0], 3, DIMS(2, 1, 1));
    EXPECT_F(&c.out[0], 17, 53);
    ir_tensors_free(c.out, 1);
    done(&c);
    ck_assert_int_eq(einsum(&c, "...ij,...jk->...ik", 2, ab), 0);
    EXPECT_F(&c.out[0], 17, 53);
    ir_tensors_free(c.out, 1);
    done(&c);
    /* batch diagonal, ellipsis broadcasting against a lower-rank operand */
    ir_tensor m = F32(3, DIMS(2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8);
    const ir_tensor *m1[1] = {&m};
    ck_assert_int_eq(einsum(&c, "...ii ->...i", 1, m1), 0);
    expect_dims(&c.out[0], 2, DIMS(2, 2));
    EXPECT_F(&c.out[0], 1, 4, 5, 8);
    ir_tensors_free(c.out, 1);
    done(&c);
    ir_tensor w = F32(1, DIMS(2), 10, 1);
    const ir_tensor *mw[2] = {&m, &w};
    ck_assert_int_eq(einsum(&c, "...j,j->...", 2, mw), 0);
    expect_dims(&c.out[0], 2, DIMS(2, 2));
    EXPECT_F(&c.out[0], 12, 34, 56, 78);
    ir_tensors_free(c.out, 1);
    done(&c);
    /* upper-case labels; integers stay exact */
    int64_t big = ((int64_t)1 << 55) + 1;
    ir_tensor bi = T(IR_I64, 1, DIMS(2), (const int64_t[]){big, 1});
    ir_tensor one = T(IR_I64, 1, DIMS(2), (const int64_t[]){1, 1});
    const ir_tensor *bo[2] = {&bi, &one};
    ck_assert_int_eq(einsum(&c, "Q,Q->", 2, bo), 0);
    EXPECT_I(&c.out[0], big + 1);
    ir_tensors_free(c.out, 1);
    done(&c);
}
END_TEST

START_TEST(einsum_errors)
{
    case_ c;
    ir_tensor a = F32(2, DIMS(2, 3), 1, 2, 3, 4, 5, 6), b = F32(2, DIMS(4, 2), 0, 0, 0, 0, 0, 0, 0, 0);
    const ir_tensor *a1[1] = {&a}, *ab[2] = {&a, &b};
    static const char *const bad1[] = {
        "ij,jk",      /* two terms, one input */
        "i-j",        /* '-' without '>' */
        "ij->k",      /* output label not in the inputs */
        "ij->ii",     /* repeated output label */
        "i.j",        /* stray '.' */
        "ijk",        /* rank mismatch */
        "ij->i->j",   /* two arrows */
        "i$",         /* junk */
        "......ij",   /* two ellipses */
        "ij->i,j",    /* comma in the output */
    };
    for (size_t i = 0; i < sizeof bad1 / sizeof bad1[0]; i++) {
        ck_assert_msg(einsum(&c, bad1[i], 1, a1) == -1, "accepted '%s'", bad1[i]);
        ck_assert_ptr_nonnull(strstr(c.d.msg, "(Einsum)"));
        done(&c);
    }
    ck_assert_int_eq(einsum(&c, "ij,jk->ik", 2, ab), -1);
    ck_assert_ptr_nonnull(strstr(c.d.msg, "mismatch"));
    done(&c);
    ir_tensor m = F32(3, DIMS(2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8);
    const ir_tensor *m1[1] = {&m};
    ck_assert_int_eq(einsum(&c, "...ij->ij", 1, m1), -1);
    done(&c);
}
END_TEST

START_TEST(einsum_shape_inference)
{
    icc_diag d;
    ir_graph *g = ir_graph_create("t");
    int32_t B = ir_graph_sym(g, "B", 1);
    ir_type at = {IR_F32, 3, {{0, B}, {4, 0}, {5, 0}}};
    ir_type bt = {IR_F32, 3, {{0, B}, {5, 0}, {6, 0}}};
    ir_value *a = ir_graph_add_input(g, "a", &at, &d), *b = ir_graph_add_input(g, "b", &bt, &d);
    ir_node *n = ir_graph_add_node(g, IR_OP_EINSUM, "e", 2, (ir_value *[]){a, b}, 1, NULL, &d);
    ir_node_set_string(g, n, "equation", "bij,bjk->bki");
    ck_assert_msg(ir_infer_shapes(g, &d) == 0, "%s", d.msg);
    const ir_type *t = &n->out[0]->type;
    ck_assert_int_eq(t->rank, 3);
    ck_assert_int_eq(t->dims[0].sym, B);
    ck_assert_int_eq(t->dims[1].v, 6);
    ck_assert_int_eq(t->dims[2].v, 4);
    ir_graph_destroy(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ref_reduce");
    TCase *tc = tcase_create("reduce");
    tcase_add_test(tc, reduce_sum_keepdims);
    tcase_add_test(tc, reduce_mean_negative_axes);
    tcase_add_test(tc, reduce_all_and_noop);
    tcase_add_test(tc, reduce_other_kinds);
    tcase_add_test(tc, reduce_empty_set);
    tcase_add_test(tc, reduce_integers_exact);
    tcase_add_test(tc, reduce_bool_max_min);
    tcase_add_test(tc, reduce_errors);
    tcase_add_test(tc, reduce_mean_large);
    tcase_add_test(tc, reduce_shape_inference);
    tcase_add_test(tc, argmax_argmin);
    tcase_add_test(tc, cumsum_modes);
    tcase_add_test(tc, cumprod_modes);
    tcase_add_test(tc, topk_ties_and_order);
    tcase_add_test(tc, unique_flat_and_axis);
    suite_add_tcase(s, tc);
    TCase *tr = tcase_create("resize");
    tcase_add_test(tr, resize_nearest);
    tcase_add_test(tr, resize_nearest_modes);
    tcase_add_test(tr, resize_linear);
    tcase_add_test(tr, resize_tf_crop_and_resize);
    tcase_add_test(tr, resize_cubic_ramp);
    tcase_add_test(tr, resize_errors);
    tcase_add_test(tr, resize_shape_inference);
    tcase_add_test(tr, grid_sample_points);
    tcase_add_test(tr, grid_sample_errors);
    suite_add_tcase(s, tr);
    TCase *te = tcase_create("einsum");
    tcase_add_test(te, einsum_forms);
    tcase_add_test(te, einsum_batch_and_ellipsis);
    tcase_add_test(te, einsum_errors);
    tcase_add_test(te, einsum_shape_inference);
    suite_add_tcase(s, te);
    return s;
}

int main(void)
{
    return icc_run_suite(suite());
}
