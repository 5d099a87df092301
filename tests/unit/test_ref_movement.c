/* test_ref_movement.c - shape functions and reference kernels of the data
 * movement ops (ir/ref/movement*.c): hand-computed outputs, symbolic
 * shape inference, and the errors hostile inputs must produce. */
#include "check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ops.h"
#include "ir/ref/interp.h"

static ir_graph *g;
static icc_diag d;
static int nnames;

static void setup(void)
{
    g = ir_graph_create("t");
    memset(&d, 0, sizeof d);
    nnames = 0;
}

static void teardown(void)
{
    ir_graph_destroy(g);
}

#define D(...) ((const int64_t[]){__VA_ARGS__})
#define F(...) ((const float[]){__VA_ARGS__})
#define I64(...) ((const int64_t[]){__VA_ARGS__})
#define I32(...) ((const int32_t[]){__VA_ARGS__})

/* A tensor borrowing data. */
static ir_tensor mk(ir_dtype dt, int rank, const int64_t *dims, const void *data)
{
    ir_tensor t;
    ck_assert_int_eq(ir_tensor_init(&t, dt, rank, dims, NULL), 0);
    t.data = (void *)data;
    return t;
}

static ir_tensor i64s(int n, const int64_t *v)
{
    return mk(IR_I64, 1, D(n), v);
}

static ir_tensor i64_scalar(const int64_t *v)
{
    return mk(IR_I64, 0, NULL, v);
}

/* A node whose inputs are placeholders (absent where bit i of absent is
 * set); for kernel tests, where only the tensors matter. */
static ir_node *mknode(int op, int nin, int nout, unsigned absent)
{
    ir_value *in[16];
    for (int i = 0; i < nin; i++) {
        char name[32];
        snprintf(name, sizeof name, "in%d", nnames++);
        ir_type t = {IR_F32, IR_RANK_UNKNOWN, {{0, 0}}};
        in[i] = (absent >> i) & 1 ? NULL : ir_graph_add_input(g, name, &t, &d);
    }
    ir_node *n = ir_graph_add_node(g, op, "n0", nin, in, nout, NULL, &d);
    ck_assert_ptr_nonnull(n);
    return n;
}

#define EVAL_OK(n, in, out)                                           \
    do {                                                              \
        int rc_ = ir_eval_node((n), (in), (out), &d);                 \
        ck_assert_msg(rc_ == 0, "eval failed: %s", d.msg);            \
    } while (0)

#define EVAL_ERR(n, in, substr)                                       \
    do {                                                              \
        ir_tensor o_[8];                                              \
        ck_assert_int_eq(ir_eval_node((n), (in), o_, &d), -1);        \
        ck_assert_msg(strstr(d.msg, (substr)), "message: %s", d.msg); \
        ck_assert_msg(strstr(d.msg, "node 'n0'"), "message: %s", d.msg); \
    } while (0)

static void chk_dims(const ir_tensor *t, int rank, const int64_t *dims)
{
    ck_assert_int_eq(t->rank, rank);
    for (int i = 0; i < rank; i++)
        ck_assert_msg(t->dims[i] == dims[i], "dim %d: %lld != %lld", i, (long long)t->dims[i],
                      (long long)dims[i]);
}

static void chk_f32(ir_tensor *t, int rank, const int64_t *dims, const float *v)
{
    chk_dims(t, rank, dims);
    ck_assert_int_eq(t->dtype, IR_F32);
    for (int64_t i = 0; i < t->numel; i++)
        ck_assert_msg(((float *)t->data)[i] == v[i], "element %lld: %g != %g", (long long)i,
                      ((float *)t->data)[i], v[i]);
    free(t->data);
}

static void chk_i64(ir_tensor *t, int rank, const int64_t *dims, const int64_t *v)
{
    chk_dims(t, rank, dims);
    ck_assert_int_eq(t->dtype, IR_I64);
    for (int64_t i = 0; i < t->numel; i++)
        ck_assert_msg(((int64_t *)t->data)[i] == v[i], "element %lld: %lld != %lld",
                      (long long)i, (long long)((int64_t *)t->data)[i], (long long)v[i]);
    free(t->data);
}

/* 0, 1, 2, ... as f32. */
static float *iota(int n)
{
    static float buf[256];
    for (int i = 0; i < n; i++)
        buf[i] = (float)i;
    return buf;
}

/* ---- types for shape-inference tests: "N,3,?" = symbol N, 3, unknown ---- */

static ir_type ty(ir_dtype dt, const char *spec)
{
    ir_type t = {dt, 0, {{0, 0}}};
    if (!spec) {
        t.rank = IR_RANK_UNKNOWN;
        return t;
    }
    for (const char *p = spec; *p;) {
        size_t n = strcspn(p, ",");
        ir_dim *dm = &t.dims[t.rank++];
        if (p[0] >= '0' && p[0] <= '9')
            *dm = ir_dim_const(strtoll(p, NULL, 10));
        else if (p[0] == '?')
            *dm = ir_dim_unknown();
        else
            *dm = (ir_dim){0, ir_graph_sym(g, p, n)};
        p += n + (p[n] == ',');
    }
    return t;
}

static ir_value *inp(ir_dtype dt, const char *spec)
{
    char name[32];
    snprintf(name, sizeof name, "x%d", nnames++);
    ir_type t = ty(dt, spec);
    ir_value *v = ir_graph_add_input(g, name, &t, &d);
    ck_assert_ptr_nonnull(v);
    return v;
}

static ir_value *cst(int n, const int64_t *v)
{
    char name[32];
    snprintf(name, sizeof name, "c%d", nnames++);
    ir_type t = {IR_I64, 1, {{n, 0}}};
    ir_value *c = ir_graph_add_const(g, name, &t, v, &d);
    ck_assert_ptr_nonnull(c);
    return c;
}

static ir_node *vnode(int op, int nin, ir_value **in)
{
    ir_node *n = ir_graph_add_node(g, op, "n0", nin, in, 1, NULL, &d);
    ck_assert_ptr_nonnull(n);
    return n;
}

/* Runs shape inference on the graph and checks the node's output type. */
static void chk_type(ir_node *n, ir_dtype dt, const char *spec)
{
    int rc = ir_infer_shapes(g, &d);
    ck_assert_msg(rc == 0, "inference failed: %s", d.msg);
    ir_type want = ty(dt, spec), *got = &n->out[0]->type;
    ck_assert_int_eq(got->dtype, want.dtype);
    ck_assert_msg(got->rank == want.rank, "rank %d != %d", got->rank, want.rank);
    for (int i = 0; i < want.rank; i++)
        ck_assert_msg(got->dims[i].sym == want.dims[i].sym &&
                      (want.dims[i].sym || got->dims[i].v == want.dims[i].v),
                      "dim %d: got (%lld, sym %d)", i, (long long)got->dims[i].v,
                      got->dims[i].sym);
}

static void chk_infer_err(const char *substr)
{
    ck_assert_int_eq(ir_infer_shapes(g, &d), -1);
    ck_assert_msg(strstr(d.msg, substr), "message: %s", d.msg);
}

/* ---- Reshape, Flatten, Squeeze, Unsqueeze ------------------------------ */

START_TEST(reshape_kernel)
{
    ir_node *n = mknode(IR_OP_RESHAPE, 2, 1, 0);
    ir_tensor x = mk(IR_F32, 3, D(2, 3, 4), iota(24)), s = i64s(2, I64(4, -1)), y;
    const ir_tensor *in[] = {&x, &s};
    EVAL_OK(n, in, &y);
    chk_f32(&y, 2, D(4, 6), iota(24));
    s = i64s(2, I64(0, -1)); /* 0 copies dim 0 */
    EVAL_OK(n, in, &y);
    chk_f32(&y, 2, D(2, 12), iota(24));
    s = i64s(3, I64(-1, 1, 0)); /* 0 copies dim 2 */
    EVAL_OK(n, in, &y);
    chk_f32(&y, 3, D(6, 1, 4), iota(24));
}
END_TEST

START_TEST(reshape_allowzero)
{
    ir_node *n = mknode(IR_OP_RESHAPE, 2, 1, 0);
    ir_node_set_int(g, n, "allowzero", 1);
    ir_tensor x = mk(IR_F32, 2, D(0, 3), NULL), s = i64s(2, I64(3, 0)), y;
    const ir_tensor *in[] = {&x, &s};
    EVAL_OK(n, in, &y);
    chk_dims(&y, 2, D(3, 0));
    free(y.data);
    s = i64s(2, I64(0, -1));
    EVAL_ERR(n, in, "both 0 and -1");
}
END_TEST

START_TEST(reshape_errors)
{
    ir_node *n = mknode(IR_OP_RESHAPE, 2, 1, 0);
    ir_tensor x = mk(IR_F32, 2, D(2, 3), iota(6)), s = i64s(2, I64(-1, -1));
    const ir_tensor *in[] = {&x, &s};
    EVAL_ERR(n, in, "more than one -1");
    s = i64s(2, I64(4, 2));
    EVAL_ERR(n, in, "cannot reshape 6 elements into 8");
    s = i64s(2, I64(4, -1));
    EVAL_ERR(n, in, "cannot reshape 6");
    s = i64s(3, I64(1, 6, 0));
    EVAL_ERR(n, in, "lacks");
    s = i64s(2, I64(-2, 3));
    EVAL_ERR(n, in, "invalid");
    ir_tensor f = mk(IR_F32, 1, D(2), F(2, 3));
    const ir_tensor *in2[] = {&x, &f};
    EVAL_ERR(n, in2, "integer");
}
END_TEST

START_TEST(reshape_symbolic)
{
    ir_value *x = inp(IR_F32, "N,S,768");
    ir_value *a[] = {x, cst(4, I64(0, 0, 12, -1))};
    ir_node *n = vnode(IR_OP_RESHAPE, 2, a);
    chk_type(n, IR_F32, "N,S,12,64");
    ir_value *b[] = {n->out[0], cst(3, I64(0, 0, 768))};
    ir_node *n2 = vnode(IR_OP_RESHAPE, 2, b);
    chk_type(n2, IR_F32, "N,S,768");
    ir_value *f[] = {inp(IR_F32, "N,3,4"), cst(2, I64(0, -1))};
    ir_node *n5 = vnode(IR_OP_RESHAPE, 2, f);
    chk_type(n5, IR_F32, "N,12");
    /* the symbols left over make the -1: N*S, a derived symbol (as
     * Flatten's product of the same dims) */
    ir_value *c[] = {x, cst(2, I64(-1, 768))};
    ir_node *n3 = vnode(IR_OP_RESHAPE, 2, c);
    ck_assert_int_eq(ir_infer_shapes(g, &d), 0);
    ir_dim d0 = n3->out[0]->type.dims[0];
    const ir_sym_def *df = ir_graph_sym_def(g, d0.sym);
    ck_assert_msg(d0.sym > 0 && df && df->op == IR_SYM_MUL, "dim 0: (%lld, sym %d)", (long long)d0.v, d0.sym);
    ck_assert_int_eq(df->a.sym, x->type.dims[0].sym);
    ck_assert_int_eq(df->b.sym, x->type.dims[1].sym);
    ck_assert(n3->out[0]->type.dims[1].sym == 0 && n3->out[0]->type.dims[1].v == 768);
    /* a quotient of the constants that is not whole: unknown */
    ir_value *c2[] = {inp(IR_F32, "N,3,5"), cst(3, I64(2, 0, -1))};
    ir_node *n6 = vnode(IR_OP_RESHAPE, 2, c2);
    chk_type(n6, IR_F32, "2,3,?");
    /* unknown shape values: rank from the shape input's length */
    ir_value *e[] = {x, inp(IR_I64, "3")};
    ir_node *n4 = vnode(IR_OP_RESHAPE, 2, e);
    chk_type(n4, IR_F32, "?,?,?");
}
END_TEST

START_TEST(reshape_symbolic_mismatch)
{
    ir_value *a[] = {inp(IR_F32, "N,3,4"), cst(2, I64(0, 5))};
    vnode(IR_OP_RESHAPE, 2, a);
    chk_infer_err("cannot reshape 12 elements into 5");
}
END_TEST

START_TEST(flatten)
{
    ir_node *n = mknode(IR_OP_FLATTEN, 1, 1, 0);
    ir_tensor x = mk(IR_F32, 3, D(2, 3, 4), iota(24)), y;
    const ir_tensor *in[] = {&x};
    EVAL_OK(n, in, &y);
    chk_f32(&y, 2, D(2, 12), iota(24));
    ir_node_set_int(g, n, "axis", -1);
    EVAL_OK(n, in, &y);
    chk_f32(&y, 2, D(6, 4), iota(24));
    n->attrs[0].i = 0;
    EVAL_OK(n, in, &y);
    chk_f32(&y, 2, D(1, 24), iota(24));
    n->attrs[0].i = 4;
    EVAL_ERR(n, in, "out of range");
}
END_TEST

START_TEST(flatten_symbolic)
{
    ir_value *x = inp(IR_F32, "N,3,4");
    ir_node *n = vnode(IR_OP_FLATTEN, 1, &x);
    chk_type(n, IR_F32, "N,12");
}
END_TEST

START_TEST(squeeze_unsqueeze)
{
    ir_node *n = mknode(IR_OP_SQUEEZE, 2, 1, 0);
    ir_tensor x = mk(IR_F32, 4, D(1, 3, 1, 2), iota(6)), ax = i64s(1, I64(-2)), y;
    const ir_tensor *in[] = {&x, &ax};
    EVAL_OK(n, in, &y);
    chk_f32(&y, 3, D(1, 3, 2), iota(6));
    ax = i64s(1, I64(1));
    EVAL_ERR(n, in, "cannot squeeze dim 1 of size 3");
    ir_node *n1 = mknode(IR_OP_SQUEEZE, 2, 1, 2); /* no axes: every 1 */
    const ir_tensor *in1[] = {&x, NULL};
    EVAL_OK(n1, in1, &y);
    chk_f32(&y, 2, D(3, 2), iota(6));

    ir_node *u = mknode(IR_OP_UNSQUEEZE, 2, 1, 0);
    ir_tensor x2 = mk(IR_F32, 2, D(3, 2), iota(6)), ax2 = i64s(2, I64(0, -1));
    const ir_tensor *in2[] = {&x2, &ax2};
    EVAL_OK(u, in2, &y);
    chk_f32(&y, 4, D(1, 3, 2, 1), iota(6));
    ax2 = i64s(2, I64(1, -3)); /* -3 of rank 4 is 1 again */
    EVAL_ERR(u, in2, "repeated");
    ax2 = i64s(2, I64(1, 4));
    EVAL_ERR(u, in2, "out of range");
}
END_TEST

START_TEST(squeeze_symbolic)
{
    ir_value *a[] = {inp(IR_F32, "N,1,S"), cst(1, I64(1))};
    ir_node *n = vnode(IR_OP_SQUEEZE, 2, a);
    chk_type(n, IR_F32, "N,S");
    ir_value *b[] = {n->out[0], cst(2, I64(0, -1))};
    ir_node *u = vnode(IR_OP_UNSQUEEZE, 2, b);
    chk_type(u, IR_F32, "1,N,S,1");
    /* without axes a symbol may or may not be 1: rank unknown */
    ir_value *x = inp(IR_F32, "N,1");
    ir_node *n2 = vnode(IR_OP_SQUEEZE, 1, &x);
    chk_type(n2, IR_F32, NULL);
}
END_TEST

/* ---- Transpose ------------------------------------------------------------- */

START_TEST(transpose)
{
    ir_node *n = mknode(IR_OP_TRANSPOSE, 1, 1, 0);
    ir_tensor x = mk(IR_F32, 2, D(2, 3), iota(6)), y;
    const ir_tensor *in[] = {&x};
    EVAL_OK(n, in, &y);
    chk_f32(&y, 2, D(3, 2), F(0, 3, 1, 4, 2, 5));

    ir_node *n3 = mknode(IR_OP_TRANSPOSE, 1, 1, 0);
    ir_node_set_ints(g, n3, "perm", I64(1, 2, 0), 3);
    ir_tensor x3 = mk(IR_F32, 3, D(2, 3, 4), iota(24));
    const ir_tensor *in3[] = {&x3};
    EVAL_OK(n3, in3, &y);
    chk_dims(&y, 3, D(3, 4, 2));
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 2; k++)
                ck_assert(((float *)y.data)[(i * 4 + j) * 2 + k] == (float)(k * 12 + i * 4 + j));
    free(y.data);
}
END_TEST

START_TEST(transpose_other_dtypes)
{
    ir_node *n = mknode(IR_OP_TRANSPOSE, 1, 1, 0);
    const uint8_t b[] = {1, 0, 0, 1, 1, 0};
    ir_tensor x = mk(IR_BOOL, 2, D(2, 3), b), y;
    const ir_tensor *in[] = {&x};
    EVAL_OK(n, in, &y);
    ck_assert_int_eq(y.dtype, IR_BOOL);
    ck_assert_mem_eq(y.data, ((const uint8_t[]){1, 1, 0, 1, 0, 0}), 6);
    free(y.data);
    ir_tensor x2 = mk(IR_I64, 2, D(1, 3), I64(-1, 1LL << 40, 7));
    const ir_tensor *in2[] = {&x2};
    EVAL_OK(n, in2, &y);
    chk_i64(&y, 2, D(3, 1), I64(-1, 1LL << 40, 7));
}
END_TEST

START_TEST(transpose_bad_perm)
{
    ir_node *n = mknode(IR_OP_TRANSPOSE, 1, 1, 0);
    ir_node_set_ints(g, n, "perm", I64(0, 0, 1), 3);
    ir_tensor x = mk(IR_F32, 3, D(1, 2, 3), iota(6));
    const ir_tensor *in[] = {&x};
    EVAL_ERR(n, in, "not a permutation");
    n->attrs[0].n = 2;
    EVAL_ERR(n, in, "2 entries for rank 3");
}
END_TEST

START_TEST(transpose_symbolic)
{
    ir_value *x = inp(IR_F32, "B,S,768");
    ir_node *n = vnode(IR_OP_TRANSPOSE, 1, &x);
    ir_node_set_ints(g, n, "perm", I64(1, 0, 2), 3);
    chk_type(n, IR_F32, "S,B,768");
}
END_TEST

/* ---- Concat, Split ----------------------------------------------------------- */

START_TEST(concat)
{
    ir_node *n = mknode(IR_OP_CONCAT, 2, 1, 0);
    ir_node_set_int(g, n, "axis", -1);
    ir_tensor a = mk(IR_F32, 2, D(2, 2), F(1, 2, 3, 4)), b = mk(IR_F32, 2, D(2, 1), F(5, 6)), y;
    const ir_tensor *in[] = {&a, &b};
    EVAL_OK(n, in, &y);
    chk_f32(&y, 2, D(2, 3), F(1, 2, 5, 3, 4, 6));
    n->attrs[0].i = 0;
    EVAL_ERR(n, in, "dim 1 is 1, expected 2");
    ir_tensor e = mk(IR_F32, 2, D(0, 2), NULL);
    const ir_tensor *in2[] = {&a, &e};
    EVAL_OK(n, in2, &y);
    chk_f32(&y, 2, D(2, 2), F(1, 2, 3, 4));
}
END_TEST

START_TEST(concat_symbolic)
{
    ir_value *a[] = {inp(IR_F32, "N,2"), inp(IR_F32, "?,3")};
    ir_node *n = vnode(IR_OP_CONCAT, 2, a);
    ir_node_set_int(g, n, "axis", 1);
    chk_type(n, IR_F32, "N,5");
}
END_TEST

START_TEST(split_even_uneven)
{
    ir_tensor x = mk(IR_F32, 1, D(5), F(1, 2, 3, 4, 5)), y[3];
    const ir_tensor *in[] = {&x, NULL};
    ir_node *n = mknode(IR_OP_SPLIT, 1, 2, 0);
    EVAL_OK(n, in, y);
    chk_f32(&y[0], 1, D(3), F(1, 2, 3));
    chk_f32(&y[1], 1, D(2), F(4, 5));
    ir_node *n3 = mknode(IR_OP_SPLIT, 1, 3, 0);
    ir_node_set_int(g, n3, "num_outputs", 3);
    EVAL_OK(n3, in, y); /* ceil(5/3) = 2: 2, 2, 1 */
    chk_f32(&y[0], 1, D(2), F(1, 2));
    chk_f32(&y[1], 1, D(2), F(3, 4));
    chk_f32(&y[2], 1, D(1), F(5));
    n3->attrs[0].i = 2;
    EVAL_ERR(n3, in, "num_outputs is 2");

    ir_node *ns = mknode(IR_OP_SPLIT, 2, 2, 0);
    ir_tensor s = i64s(2, I64(1, 4));
    const ir_tensor *in2[] = {&x, &s};
    EVAL_OK(ns, in2, y);
    chk_f32(&y[0], 1, D(1), F(1));
    chk_f32(&y[1], 1, D(4), F(2, 3, 4, 5));
    s = i64s(2, I64(1, 3));
    EVAL_ERR(ns, in2, "sums to 4");

    ir_tensor x2 = mk(IR_F32, 2, D(2, 4), iota(8));
    const ir_tensor *in3[] = {&x2, NULL};
    ir_node *n2 = mknode(IR_OP_SPLIT, 1, 2, 0);
    ir_node_set_int(g, n2, "axis", -1);
    EVAL_OK(n2, in3, y);
    chk_f32(&y[0], 2, D(2, 2), F(0, 1, 4, 5));
    chk_f32(&y[1], 2, D(2, 2), F(2, 3, 6, 7));
}
END_TEST

START_TEST(split_too_many_outputs)
{
    ir_tensor x = mk(IR_F32, 1, D(5), F(1, 2, 3, 4, 5));
    const ir_tensor *in[] = {&x};
    ir_node *n = mknode(IR_OP_SPLIT, 1, 4, 0); /* chunks of 2: 2+2+2 > 5 */
    EVAL_ERR(n, in, "cannot split");
}
END_TEST

/* ---- Slice -------------------------------------------------------------------- */

START_TEST(slice_basic)
{
    ir_node *n = mknode(IR_OP_SLICE, 3, 1, 0);
    ir_tensor x = mk(IR_F32, 2, D(4, 5), iota(20)), st = i64s(2, I64(1, 0)),
              en = i64s(2, I64(3, -1)), y;
    const ir_tensor *in[] = {&x, &st, &en};
    EVAL_OK(n, in, &y);
    chk_f32(&y, 2, D(2, 4), F(5, 6, 7, 8, 10, 11, 12, 13));
    /* clamping: past the end is empty, INT64_MAX means "to the end" */
    st = i64s(2, I64(10, 3));
    en = i64s(2, I64(1000, INT64_MAX));
    EVAL_OK(n, in, &y);
    chk_dims(&y, 2, D(0, 2));
    free(y.data);
    st = i64s(2, I64(-100, 3));
    EVAL_OK(n, in, &y);
    chk_f32(&y, 2, D(4, 2), F(3, 4, 8, 9, 13, 14, 18, 19));
}
END_TEST

START_TEST(slice_negative_steps)
{
    ir_node *n = mknode(IR_OP_SLICE, 5, 1, 0);
    ir_tensor x = mk(IR_F32, 2, D(4, 5), iota(20)), st = i64s(1, I64(-1)),
              en = i64s(1, I64(INT64_MIN)), ax = i64s(1, I64(-1)), sp = i64s(1, I64(-2)), y;
    const ir_tensor *in[] = {&x, &st, &en, &ax, &sp};
    EVAL_OK(n, in, &y);
    chk_f32(&y, 2, D(4, 3), F(4, 2, 0, 9, 7, 5, 14, 12, 10, 19, 17, 15));
    /* rows 3, 2 (end 1 is exclusive), step -1, with a start past the end */
    st = i64s(1, I64(100));
    en = i64s(1, I64(1));
    ax = i64s(1, I64(0));
    sp = i64s(1, I64(-1));
    EVAL_OK(n, in, &y);
    chk_f32(&y, 2, D(2, 5), F(15, 16, 17, 18, 19, 10, 11, 12, 13, 14));
    sp = i64s(1, I64(INT64_MIN));
    EVAL_OK(n, in, &y);
    chk_f32(&y, 2, D(1, 5), F(15, 16, 17, 18, 19));
    /* a negative step on an empty dim selects nothing */
    ir_tensor e = mk(IR_F32, 2, D(0, 5), NULL);
    const ir_tensor *in0[] = {&e, &st, &en, &ax, &sp};
    sp = i64s(1, I64(-1));
    EVAL_OK(n, in0, &y);
    chk_dims(&y, 2, D(0, 5));
    free(y.data);
    sp = i64s(1, I64(0));
    EVAL_ERR(n, in, "step for axis 0 is 0");
    sp = i64s(1, I64(1));
    ax = i64s(1, I64(2));
    EVAL_ERR(n, in, "out of range");
}
END_TEST

START_TEST(slice_symbolic)
{
    ir_value *x = inp(IR_F32, "N,10");
    ir_value *a[] = {x, cst(2, I64(0, 2)), cst(2, I64(INT64_MAX, 5))};
    ir_node *n = vnode(IR_OP_SLICE, 3, a);
    chk_type(n, IR_F32, "N,3");
    /* [1:] of N: N - 1 elements, a derived dim (ir_slice_sym_axis) */
    ir_value *b[] = {x, cst(1, I64(1)), cst(1, I64(INT64_MAX)), cst(1, I64(0))};
    ir_node *n2 = vnode(IR_OP_SLICE, 4, b);
    ck_assert_int_eq(ir_infer_shapes(g, &d), 0);
    ir_dim d0 = n2->out[0]->type.dims[0];
    const ir_sym_def *df = ir_graph_sym_def(g, d0.sym);
    ck_assert_msg(d0.sym > 0 && df && df->op == IR_SYM_ADD && df->a.sym == x->type.dims[0].sym && df->b.sym == 0 &&
                  df->b.v == -1, "[1:] of N is not N - 1");
    /* [-3:] and [-4:-1] of N: 3 (for N >= 4, which the compiled run
     * checks); [2:5]: 3; [-3:5]: its length depends on N */
    ir_value *e[] = {x, cst(2, I64(-3, -4)), cst(2, I64(INT64_MAX, -1)), cst(2, I64(0, 1))};
    chk_type(vnode(IR_OP_SLICE, 4, e), IR_F32, "3,3");
    ir_value *f[] = {x, cst(1, I64(2)), cst(1, I64(5)), cst(1, I64(0))};
    chk_type(vnode(IR_OP_SLICE, 4, f), IR_F32, "3,10");
    ir_value *h[] = {x, cst(1, I64(-3)), cst(1, I64(5)), cst(1, I64(0))};
    chk_type(vnode(IR_OP_SLICE, 4, h), IR_F32, "?,10");
    /* unknown starts with known axes: only axis 1 is unknown */
    ir_value *c[] = {x, inp(IR_I64, "1"), cst(1, I64(4)), cst(1, I64(1))};
    ir_node *n3 = vnode(IR_OP_SLICE, 4, c);
    chk_type(n3, IR_F32, "N,?");
}
END_TEST

/* ---- Gather family -------------------------------------------------------------- */

START_TEST(gather)
{
    ir_node *n = mknode(IR_OP_GATHER, 2, 1, 0);
    ir_tensor x = mk(IR_F32, 2, D(3, 2), F(1, 2, 3, 4, 5, 6)), ind = mk(IR_I64, 2, D(1, 2),
                                                                       I64(0, -1)), y;
    const ir_tensor *in[] = {&x, &ind};
    EVAL_OK(n, in, &y);
    chk_f32(&y, 3, D(1, 2, 2), F(1, 2, 5, 6));
    ir_node_set_int(g, n, "axis", -1);
    ir_tensor i32 = mk(IR_I32, 1, D(2), I32(1, 0));
    const ir_tensor *in2[] = {&x, &i32};
    EVAL_OK(n, in2, &y);
    chk_f32(&y, 2, D(3, 2), F(2, 1, 4, 3, 6, 5));
    ir_tensor sc = i64_scalar(I64(-3));
    const ir_tensor *in3[] = {&x, &sc};
    n->attrs[0].i = 0;
    EVAL_OK(n, in3, &y);
    chk_f32(&y, 1, D(2), F(1, 2));
    ind = mk(IR_I64, 2, D(1, 2), I64(0, 3));
    EVAL_ERR(n, in, "index 3 is out of range");
    ind = mk(IR_I64, 2, D(1, 2), I64(-4, 0));
    EVAL_ERR(n, in, "index -4 is out of range");
}
END_TEST

START_TEST(gather_symbolic)
{
    ir_value *a[] = {inp(IR_F32, "V,768"), inp(IR_I64, "B,S")};
    ir_node *n = vnode(IR_OP_GATHER, 2, a);
    chk_type(n, IR_F32, "B,S,768");
    ir_value *b[] = {inp(IR_F32, "4,768"), cst(2, I64(1, 4))};
    vnode(IR_OP_GATHER, 2, b);
    chk_infer_err("index 4 is out of range");
}
END_TEST

START_TEST(gather_elements)
{
    ir_node *n = mknode(IR_OP_GATHER_ELEMENTS, 2, 1, 0);
    ir_node_set_int(g, n, "axis", 1);
    ir_tensor x = mk(IR_F32, 2, D(2, 2), F(1, 2, 3, 4)),
              ind = mk(IR_I64, 2, D(2, 2), I64(0, 0, -1, 0)), y;
    const ir_tensor *in[] = {&x, &ind};
    EVAL_OK(n, in, &y);
    chk_f32(&y, 2, D(2, 2), F(1, 1, 4, 3));
    n->attrs[0].i = 0;
    ir_tensor ind2 = mk(IR_I64, 2, D(3, 2), I64(1, 0, 0, 1, 1, 1));
    const ir_tensor *in2[] = {&x, &ind2};
    EVAL_OK(n, in2, &y);
    chk_f32(&y, 2, D(3, 2), F(3, 2, 1, 4, 3, 4));
    ind = mk(IR_I64, 2, D(2, 2), I64(0, 2, 0, 0));
    EVAL_ERR(n, in, "out of range");
}
END_TEST

START_TEST(gather_nd)
{
    ir_node *n = mknode(IR_OP_GATHER_ND, 2, 1, 0);
    ir_tensor x = mk(IR_F32, 2, D(2, 2), F(0, 1, 2, 3)),
              ind = mk(IR_I64, 2, D(2, 2), I64(0, 0, 1, 1)), y;
    const ir_tensor *in[] = {&x, &ind};
    EVAL_OK(n, in, &y);
    chk_f32(&y, 1, D(2), F(0, 3));
    ind = mk(IR_I64, 2, D(2, 1), I64(1, -2));
    EVAL_OK(n, in, &y);
    chk_f32(&y, 2, D(2, 2), F(2, 3, 0, 1));
    ir_node *nb = mknode(IR_OP_GATHER_ND, 2, 1, 0);
    ir_node_set_int(g, nb, "batch_dims", 1);
    ir_tensor x3 = mk(IR_F32, 3, D(2, 2, 2), iota(8)), ib = mk(IR_I64, 2, D(2, 1), I64(1, 0));
    const ir_tensor *in3[] = {&x3, &ib};
    EVAL_OK(nb, in3, &y);
    chk_f32(&y, 2, D(2, 2), F(2, 3, 4, 5));
    ind = mk(IR_I64, 2, D(2, 1), I64(2, 0));
    EVAL_ERR(n, in, "out of range");
}
END_TEST

/* ---- Scatter family ---------------------------------------------------------------- */

START_TEST(scatter_nd)
{
    ir_node *n = mknode(IR_OP_SCATTER_ND, 3, 1, 0);
    ir_tensor x = mk(IR_F32, 1, D(8), F(1, 2, 3, 4, 5, 6, 7, 8)),
              ind = mk(IR_I64, 2, D(4, 1), I64(4, 3, 1, 7)),
              upd = mk(IR_F32, 1, D(4), F(9, 10, 11, 12)), y;
    const ir_tensor *in[] = {&x, &ind, &upd};
    EVAL_OK(n, in, &y);
    chk_f32(&y, 1, D(8), F(1, 11, 3, 10, 9, 6, 7, 12));
    /* duplicate indices accumulate under a reduction */
    ir_tensor ind2 = mk(IR_I64, 2, D(3, 1), I64(0, 0, -6)), upd2 = mk(IR_F32, 1, D(3),
                                                                   F(10, 20, 30));
    const ir_tensor *in2[] = {&x, &ind2, &upd2};
    ir_node_set_string(g, n, "reduction", "add");
    EVAL_OK(n, in2, &y);
    chk_f32(&y, 1, D(8), F(31, 2, 33, 4, 5, 6, 7, 8));
    n->attrs[0].s = "mul";
    EVAL_OK(n, in2, &y);
    chk_f32(&y, 1, D(8), F(200, 2, 90, 4, 5, 6, 7, 8));
    n->attrs[0].s = "max";
    EVAL_OK(n, in2, &y);
    chk_f32(&y, 1, D(8), F(20, 2, 30, 4, 5, 6, 7, 8));
    n->attrs[0].s = "min";
    EVAL_OK(n, in2, &y);
    chk_f32(&y, 1, D(8), F(1, 2, 3, 4, 5, 6, 7, 8));
    n->attrs[0].s = "bogus";
    EVAL_ERR(n, in2, "unknown reduction");
    /* slices: rows of a 2-D tensor */
    ir_node *n2 = mknode(IR_OP_SCATTER_ND, 3, 1, 0);
    ir_tensor x2 = mk(IR_F32, 2, D(3, 2), iota(6)), i2 = mk(IR_I64, 2, D(1, 1), I64(2)),
              u2 = mk(IR_F32, 2, D(1, 2), F(8, 9));
    const ir_tensor *in3[] = {&x2, &i2, &u2};
    EVAL_OK(n2, in3, &y);
    chk_f32(&y, 2, D(3, 2), F(0, 1, 2, 3, 8, 9));
    i2 = mk(IR_I64, 2, D(1, 1), I64(3));
    EVAL_ERR(n2, in3, "out of range");
}
END_TEST

START_TEST(scatter_nd_int)
{
    ir_node *n = mknode(IR_OP_SCATTER_ND, 3, 1, 0);
    ir_node_set_string(g, n, "reduction", "add");
    ir_tensor x = mk(IR_I32, 1, D(3), I32(1, 2, 3)), ind = mk(IR_I64, 2, D(2, 1), I64(1, 1)),
              upd = mk(IR_I32, 1, D(2), I32(10, -20)), y;
    const ir_tensor *in[] = {&x, &ind, &upd};
    EVAL_OK(n, in, &y);
    ck_assert_mem_eq(y.data, I32(1, -8, 3), 12);
    free(y.data);
}
END_TEST

START_TEST(scatter_elements)
{
    ir_node *n = mknode(IR_OP_SCATTER_ELEMENTS, 3, 1, 0);
    float zeros[9] = {0};
    ir_tensor x = mk(IR_F32, 2, D(3, 3), zeros),
              ind = mk(IR_I64, 2, D(2, 3), I64(1, 0, 2, 0, 2, 1)),
              upd = mk(IR_F32, 2, D(2, 3), F(1, 1.5f, 1.25f, 2, 2.5f, 2.25f)), y;
    const ir_tensor *in[] = {&x, &ind, &upd};
    EVAL_OK(n, in, &y);
    chk_f32(&y, 2, D(3, 3), F(2, 1.5f, 0, 1, 0, 2.25f, 0, 2.5f, 1.25f));
    ir_node *na = mknode(IR_OP_SCATTER_ELEMENTS, 3, 1, 0);
    ir_node_set_int(g, na, "axis", 1);
    ir_node_set_string(g, na, "reduction", "add");
    ir_tensor x2 = mk(IR_F32, 2, D(1, 5), F(1, 2, 3, 4, 5)),
              i2 = mk(IR_I64, 2, D(1, 2), I64(1, -4)), u2 = mk(IR_F32, 2, D(1, 2), F(1.5f, 2));
    const ir_tensor *in2[] = {&x2, &i2, &u2};
    EVAL_OK(na, in2, &y);
    chk_f32(&y, 2, D(1, 5), F(1, 5.5f, 3, 4, 5));
    i2 = mk(IR_I64, 2, D(1, 2), I64(1, 5));
    EVAL_ERR(na, in2, "out of range");
    /* the deprecated Scatter is ScatterElements without reduction */
    ir_node *ns = mknode(IR_OP_SCATTER, 3, 1, 0);
    EVAL_OK(ns, in, &y);
    chk_f32(&y, 2, D(3, 3), F(2, 1.5f, 0, 1, 0, 2.25f, 0, 2.5f, 1.25f));
}
END_TEST

/* ---- Expand, Tile, Pad ------------------------------------------------------------ */

START_TEST(expand)
{
    ir_node *n = mknode(IR_OP_EXPAND, 2, 1, 0);
    ir_tensor x = mk(IR_F32, 2, D(3, 1), F(1, 2, 3)), s = i64s(3, I64(2, 1, 2)), y;
    const ir_tensor *in[] = {&x, &s};
    EVAL_OK(n, in, &y);
    chk_f32(&y, 3, D(2, 3, 2), F(1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3));
    /* bidirectional: the shape may be smaller than the input */
    ir_tensor x2 = mk(IR_F32, 2, D(1, 3), F(1, 2, 3));
    s = i64s(2, I64(2, 1));
    const ir_tensor *in2[] = {&x2, &s};
    EVAL_OK(n, in2, &y);
    chk_f32(&y, 2, D(2, 3), F(1, 2, 3, 1, 2, 3));
    s = i64s(1, I64(2));
    EVAL_ERR(n, in2, "cannot broadcast");
    s = i64s(3, I64(1LL << 30, 1LL << 30, 3));
    EVAL_ERR(n, in2, "too large");
}
END_TEST

START_TEST(expand_symbolic)
{
    ir_value *a[] = {inp(IR_F32, "N,1"), cst(2, I64(1, 5))};
    ir_node *n = vnode(IR_OP_EXPAND, 2, a);
    chk_type(n, IR_F32, "N,5");
    ir_value *b[] = {inp(IR_F32, "4,1"), inp(IR_I64, "3")};
    ir_node *n2 = vnode(IR_OP_EXPAND, 2, b);
    chk_type(n2, IR_F32, "?,4,?");
}
END_TEST

START_TEST(tile)
{
    ir_node *n = mknode(IR_OP_TILE, 2, 1, 0);
    ir_tensor x = mk(IR_F32, 2, D(2, 2), F(1, 2, 3, 4)), r = i64s(2, I64(2, 1)), y;
    const ir_tensor *in[] = {&x, &r};
    EVAL_OK(n, in, &y);
    chk_f32(&y, 2, D(4, 2), F(1, 2, 3, 4, 1, 2, 3, 4));
    r = i64s(2, I64(1, 3));
    EVAL_OK(n, in, &y);
    chk_f32(&y, 2, D(2, 6), F(1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4));
    r = i64s(2, I64(0, 3));
    EVAL_OK(n, in, &y);
    chk_dims(&y, 2, D(0, 6));
    free(y.data);
    r = i64s(1, I64(2));
    EVAL_ERR(n, in, "1 values for rank 2");
    r = i64s(2, I64(-1, 2));
    EVAL_ERR(n, in, "negative");
    r = i64s(2, I64(INT64_MAX, 3));
    EVAL_ERR(n, in, "overflows");
}
END_TEST

START_TEST(pad_modes)
{
    ir_node *n = mknode(IR_OP_PAD, 2, 1, 0);
    ir_tensor x = mk(IR_F32, 1, D(4), F(1, 2, 3, 4)), p = i64s(2, I64(2, 3)), y;
    const ir_tensor *in[] = {&x, &p};
    EVAL_OK(n, in, &y);
    chk_f32(&y, 1, D(9), F(0, 0, 1, 2, 3, 4, 0, 0, 0));
    ir_node_set_string(g, n, "mode", "reflect");
    EVAL_OK(n, in, &y);
    chk_f32(&y, 1, D(9), F(3, 2, 1, 2, 3, 4, 3, 2, 1));
    n->attrs[0].s = "edge";
    EVAL_OK(n, in, &y);
    chk_f32(&y, 1, D(9), F(1, 1, 1, 2, 3, 4, 4, 4, 4));
    n->attrs[0].s = "wrap";
    EVAL_OK(n, in, &y);
    chk_f32(&y, 1, D(9), F(3, 4, 1, 2, 3, 4, 1, 2, 3));
    /* reflect beyond the data reflects again (period 2(n-1)) */
    n->attrs[0].s = "reflect";
    p = i64s(2, I64(5, 0));
    EVAL_OK(n, in, &y);
    chk_f32(&y, 1, D(9), F(2, 3, 4, 3, 2, 1, 2, 3, 4));
    n->attrs[0].s = "spiral";
    EVAL_ERR(n, in, "unknown pad mode");
}
END_TEST

START_TEST(pad_2d_value_axes_crop)
{
    ir_node *n = mknode(IR_OP_PAD, 4, 1, 0);
    ir_tensor x = mk(IR_F32, 2, D(2, 2), F(1, 2, 3, 4)), p = i64s(2, I64(1, 0)),
              v = mk(IR_F32, 0, NULL, F(9)), ax = i64s(1, I64(-1)), y;
    const ir_tensor *in[] = {&x, &p, &v, &ax};
    EVAL_OK(n, in, &y);
    chk_f32(&y, 2, D(2, 3), F(9, 1, 2, 9, 3, 4));
    /* negative pads crop: drop row 0, add a column at the end */
    ir_node *n2 = mknode(IR_OP_PAD, 3, 1, 0);
    ir_tensor p2 = i64s(4, I64(-1, 0, 0, 1));
    const ir_tensor *in2[] = {&x, &p2, &v};
    EVAL_OK(n2, in2, &y);
    chk_f32(&y, 2, D(1, 3), F(3, 4, 9));
    ir_node_set_string(g, n2, "mode", "edge");
    p2 = i64s(4, I64(1, -1, 0, 1));
    EVAL_OK(n2, in2, &y);
    chk_f32(&y, 2, D(3, 2), F(2, 2, 2, 2, 4, 4));
    p2 = i64s(4, I64(-3, 0, 0, 0));
    EVAL_ERR(n2, in2, "crop 3 from dim 0");
    p2 = i64s(3, I64(1, 0, 0));
    EVAL_ERR(n2, in2, "3 values for 2 axes");
    ir_tensor vi = mk(IR_I64, 0, NULL, I64(9));
    const ir_tensor *in3[] = {&x, &p2, &vi};
    EVAL_ERR(n2, in3, "constant_value is i64");
}
END_TEST

START_TEST(pad_other_dtypes)
{
    ir_node *n = mknode(IR_OP_PAD, 2, 1, 0);
    ir_node_set_string(g, n, "mode", "edge");
    const uint8_t b[] = {7, 9};
    ir_tensor x = mk(IR_U8, 2, D(1, 2), b), p = i64s(4, I64(1, 1, 0, 2)), y;
    const ir_tensor *in[] = {&x, &p};
    EVAL_OK(n, in, &y);
    chk_dims(&y, 2, D(2, 5));
    ck_assert_mem_eq(y.data, ((const uint8_t[]){7, 7, 9, 9, 9, 7, 7, 9, 9, 9}), 10);
    free(y.data);
    n->attrs[0].s = "constant";
    const uint16_t h[] = {0x3c00, 0xc000}; /* f16 1, -2 */
    ir_tensor xh = mk(IR_F16, 2, D(1, 2), h), v = mk(IR_F16, 0, NULL, (const uint16_t[]){0x4200});
    const ir_tensor *in2[] = {&xh, &p};
    EVAL_OK(n, in2, &y);
    ck_assert_mem_eq(y.data, ((const uint16_t[]){0, 0, 0, 0, 0, 0, 0x3c00, 0xc000, 0, 0}), 20);
    free(y.data);
    ir_node *n3 = mknode(IR_OP_PAD, 3, 1, 0);
    const ir_tensor *in3[] = {&xh, &p, &v};
    EVAL_OK(n3, in3, &y); /* constant_value f16 3.0 */
    ck_assert_mem_eq(y.data, ((const uint16_t[]){0x4200, 0x4200, 0x4200, 0x4200, 0x4200,
                                                 0x4200, 0x3c00, 0xc000, 0x4200, 0x4200}), 20);
    free(y.data);
}
END_TEST

START_TEST(center_crop_pad)
{
    ir_node *n = mknode(IR_OP_CENTER_CROP_PAD, 2, 1, 0);
    ir_tensor x = mk(IR_F32, 2, D(3, 4), iota(12)), s = i64s(2, I64(2, 6)), y;
    const ir_tensor *in[] = {&x, &s};
    EVAL_OK(n, in, &y); /* crop 1 row at the end, pad 1 column on each side */
    chk_f32(&y, 2, D(2, 6), F(0, 0, 1, 2, 3, 0, 0, 4, 5, 6, 7, 0));
    ir_node *na = mknode(IR_OP_CENTER_CROP_PAD, 2, 1, 0);
    ir_node_set_ints(g, na, "axes", I64(-1), 1);
    ir_tensor s1 = i64s(1, I64(1));
    const ir_tensor *in1[] = {&x, &s1};
    EVAL_OK(na, in1, &y); /* crop 3 columns: 1 before, 2 after */
    chk_f32(&y, 2, D(3, 1), F(1, 5, 9));
    EVAL_ERR(na, in, "2 values for 1 axes");
}
END_TEST

START_TEST(tensor_scatter)
{
    ir_node *n = mknode(IR_OP_TENSOR_SCATTER, 3, 1, 0);
    float zeros[8] = {0};
    ir_tensor x = mk(IR_F32, 3, D(2, 4, 1), zeros), u = mk(IR_F32, 3, D(2, 2, 1), F(9, 8, 7, 6)),
              w = i64s(2, I64(1, 2)), y;
    const ir_tensor *in[] = {&x, &u, &w};
    EVAL_OK(n, in, &y);
    chk_f32(&y, 3, D(2, 4, 1), F(0, 9, 8, 0, 0, 0, 7, 6));
    w = i64s(2, I64(1, 3));
    EVAL_ERR(n, in, "exceeds");
    ir_node_set_string(g, n, "mode", "circular");
    w = i64s(2, I64(3, -4));
    EVAL_OK(n, in, &y);
    chk_f32(&y, 3, D(2, 4, 1), F(8, 0, 0, 9, 7, 6, 0, 0));
    ir_node *n2 = mknode(IR_OP_TENSOR_SCATTER, 2, 1, 0); /* no write_indices: 0 */
    const ir_tensor *in2[] = {&x, &u};
    EVAL_OK(n2, in2, &y);
    chk_f32(&y, 3, D(2, 4, 1), F(9, 8, 0, 0, 7, 6, 0, 0));
    ir_node_set_int(g, n2, "axis", 0);
    EVAL_ERR(n2, in2, "batch dim");
}
END_TEST

/* ---- DepthToSpace, SpaceToDepth, Trilu ------------------------------------------------ */

START_TEST(depth_space)
{
    enum { N = 1, C = 8, H = 2, W = 3, B = 2, C2 = C / (B * B) };
    ir_tensor x = mk(IR_F32, 4, D(N, C, H, W), iota(48)), y, z;
    const ir_tensor *in[] = {&x};
    for (int crd = 0; crd < 2; crd++) {
        ir_node *n = mknode(IR_OP_DEPTH_TO_SPACE, 1, 1, 0);
        ir_node_set_int(g, n, "blocksize", B);
        ir_node_set_string(g, n, "mode", crd ? "CRD" : "DCR");
        EVAL_OK(n, in, &y);
        chk_dims(&y, 4, D(N, C2, H * B, W * B));
        for (int c = 0; c < C2; c++)
            for (int h = 0; h < H; h++)
                for (int i = 0; i < B; i++)
                    for (int w = 0; w < W; w++)
                        for (int j = 0; j < B; j++) {
                            int ic = crd ? c * B * B + i * B + j : (i * B + j) * C2 + c;
                            float got = ((float *)y.data)[(c * H * B + h * B + i) * W * B +
                                                          w * B + j];
                            ck_assert(got == (float)((ic * H + h) * W + w));
                        }
        if (!crd) {
            /* SpaceToDepth undoes DCR DepthToSpace */
            ir_node *s = mknode(IR_OP_SPACE_TO_DEPTH, 1, 1, 0);
            ir_node_set_int(g, s, "blocksize", B);
            const ir_tensor *in2[] = {&y};
            EVAL_OK(s, in2, &z);
            chk_f32(&z, 4, D(N, C, H, W), iota(48));
        }
        free(y.data);
    }
    ir_node *bad = mknode(IR_OP_DEPTH_TO_SPACE, 1, 1, 0);
    ir_node_set_int(g, bad, "blocksize", 3);
    EVAL_ERR(bad, in, "not a multiple of 9");
    ir_node *bad2 = mknode(IR_OP_SPACE_TO_DEPTH, 1, 1, 0);
    ir_node_set_int(g, bad2, "blocksize", 2);
    EVAL_ERR(bad2, in, "dim 3 (3) is not a multiple of 2");
}
END_TEST

START_TEST(space_to_depth_values)
{
    ir_node *n = mknode(IR_OP_SPACE_TO_DEPTH, 1, 1, 0);
    ir_node_set_int(g, n, "blocksize", 2);
    ir_tensor x = mk(IR_F32, 4, D(1, 1, 2, 4), iota(8)), y;
    const ir_tensor *in[] = {&x};
    EVAL_OK(n, in, &y);
    /* channel (i*2+j) holds x[2h+i][2w+j] */
    chk_f32(&y, 4, D(1, 4, 1, 2), F(0, 2, 1, 3, 4, 6, 5, 7));
}
END_TEST

START_TEST(trilu)
{
    ir_node *n = mknode(IR_OP_TRILU, 2, 1, 0);
    ir_tensor x = mk(IR_F32, 2, D(3, 4), F(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)), y;
    const ir_tensor *in[] = {&x, NULL};
    EVAL_OK(n, in, &y);
    chk_f32(&y, 2, D(3, 4), F(1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12));
    ir_tensor k = i64_scalar(I64(-1));
    const ir_tensor *in2[] = {&x, &k};
    ir_node_set_int(g, n, "upper", 0);
    EVAL_OK(n, in2, &y);
    chk_f32(&y, 2, D(3, 4), F(0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0));
    k = i64_scalar(I64(INT64_MAX));
    EVAL_OK(n, in2, &y);
    chk_f32(&y, 2, D(3, 4), F(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12));
    n->attrs[0].i = 1;
    EVAL_OK(n, in2, &y);
    chk_f32(&y, 2, D(3, 4), F(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0));
    ir_tensor v = mk(IR_F32, 1, D(3), F(1, 2, 3));
    const ir_tensor *in3[] = {&v, NULL};
    EVAL_ERR(n, in3, "rank >= 2");
}
END_TEST

/* ---- Shape, Size, ConstantOfShape, Range, Identity, Dropout, EyeLike ----------------- */

START_TEST(shape_and_size)
{
    ir_node *n = mknode(IR_OP_SHAPE, 1, 1, 0);
    ir_tensor x = mk(IR_F32, 3, D(2, 3, 4), iota(24)), y;
    const ir_tensor *in[] = {&x};
    EVAL_OK(n, in, &y);
    chk_i64(&y, 1, D(3), I64(2, 3, 4));
    ir_node_set_int(g, n, "start", -2);
    EVAL_OK(n, in, &y);
    chk_i64(&y, 1, D(2), I64(3, 4));
    ir_node_set_int(g, n, "end", -2);
    EVAL_OK(n, in, &y);
    chk_dims(&y, 1, D(0));
    free(y.data);
    n->attrs[0].i = -10; /* start clamps to 0 */
    n->attrs[1].i = 100;
    EVAL_OK(n, in, &y);
    chk_i64(&y, 1, D(3), I64(2, 3, 4));
    ir_node *s = mknode(IR_OP_SIZE, 1, 1, 0);
    EVAL_OK(s, in, &y);
    chk_i64(&y, 0, NULL, I64(24));
}
END_TEST

START_TEST(shape_symbolic)
{
    ir_value *x = inp(IR_F32, "N,3");
    ir_node *n = vnode(IR_OP_SHAPE, 1, &x);
    chk_type(n, IR_I64, "2");
    ir_node *s = vnode(IR_OP_SIZE, 1, &x);
    chk_type(s, IR_I64, "");
}
END_TEST

/* An i64 scalar constant. */
static ir_value *cst0(int64_t v)
{
    char name[32];
    snprintf(name, sizeof name, "c%d", nnames++);
    ir_type t = {IR_I64, 0, {{0, 0}}};
    ir_value *c = ir_graph_add_const(g, name, &t, &v, &d);
    ck_assert_ptr_nonnull(c);
    return c;
}

static ir_node *vnode_int(int op, int nin, ir_value **in, const char *attr, int64_t v)
{
    ir_node *n = vnode(op, nin, in);
    ck_assert_int_eq(ir_node_set_int(g, n, attr, v), 0);
    return n;
}

/* Shape values (ir/shapeval.c): the exporter's flatten keeps the batch
 * symbol through Shape -> Gather -> Unsqueeze -> Concat -> Reshape, and a
 * Slice of Shape does the same. */
START_TEST(shape_values_flatten)
{
    ir_value *x = inp(IR_F32, "N,16,1,1");
    ir_node *sh = vnode(IR_OP_SHAPE, 1, &x);
    ir_value *ga[] = {sh->out[0], cst0(0)};
    ir_node *gn = vnode_int(IR_OP_GATHER, 2, ga, "axis", 0);
    ir_value *ua[] = {gn->out[0], cst(1, I64(0))};
    ir_node *un = vnode(IR_OP_UNSQUEEZE, 2, ua);
    ir_value *ca[] = {un->out[0], cst(1, I64(-1))};
    ir_node *cn = vnode_int(IR_OP_CONCAT, 2, ca, "axis", 0);
    ir_value *ra[] = {x, cn->out[0]};
    ir_node *rn = vnode(IR_OP_RESHAPE, 2, ra);
    chk_type(rn, IR_F32, "N,16");
    ck_assert(cn->out[0]->sv.known && cn->out[0]->sv.n == 2);
    ck_assert_int_eq(cn->out[0]->sv.e[0].sym, x->type.dims[0].sym);
    ck_assert(cn->out[0]->sv.e[1].sym == 0 && cn->out[0]->sv.e[1].v == -1);
    /* Shape(x)[0:1] via Slice, then the dims after it, constant */
    ir_value *sa[] = {sh->out[0], cst(1, I64(0)), cst(1, I64(1))};
    ir_node *sl = vnode(IR_OP_SLICE, 3, sa);
    ir_value *sb[] = {sh->out[0], cst(1, I64(1)), cst(1, I64(INT64_MAX))};
    ir_node *rest = vnode(IR_OP_SLICE, 3, sb);
    ir_value *c2[] = {sl->out[0], rest->out[0]};
    ir_node *cn2 = vnode_int(IR_OP_CONCAT, 2, c2, "axis", 0);
    ir_value *r2[] = {x, cn2->out[0]};
    ir_node *rn2 = vnode(IR_OP_RESHAPE, 2, r2);
    chk_type(rn2, IR_F32, "N,16,1,1");
    ck_assert(rest->out[0]->sv.known && rest->out[0]->sv.n == 3 && rest->out[0]->sv.e[0].v == 16);
}
END_TEST

/* Arithmetic folds constants and identities; sums, products and
 * quotients by a positive constant of elements >= 0 become derived
 * symbols, differences unknown. A symbol the input lacks could be 0 at
 * run time (copying the input's dim), so Reshape does not take it. */
START_TEST(shape_values_arith)
{
    ir_value *x = inp(IR_F32, "B,S,32");
    ir_node *sh = vnode(IR_OP_SHAPE, 1, &x);
    ir_value *ma[] = {sh->out[0], cst(3, I64(1, 1, 2))};
    ir_node *mul = vnode(IR_OP_MUL, 2, ma);
    ir_value *da[] = {mul->out[0], cst(1, I64(4))};
    ir_node *dv = vnode(IR_OP_DIV, 2, da);
    ir_value *ra[] = {x, dv->out[0]};
    ir_node *rn = vnode(IR_OP_RESHAPE, 2, ra);
    /* [B, S, 64] / 4 = [floor(B/4), floor(S/4), 16]: Reshape knows only the constant */
    chk_type(rn, IR_F32, "?,?,16");
    ck_assert(dv->out[0]->sv.known && dv->out[0]->sv.e[0].sym > 0);
    const ir_sym_def *q = ir_graph_sym_def(g, dv->out[0]->sv.e[0].sym);
    ck_assert(q && q->op == IR_SYM_FLOORDIV && q->a.sym == x->type.dims[0].sym && q->b.sym == 0 && q->b.v == 4);
    /* B - 1 may be negative: unknown */
    ir_value *sa[] = {sh->out[0], cst(1, I64(1))};
    ir_node *sub = vnode(IR_OP_SUB, 2, sa);
    chk_type(rn, IR_F32, "?,?,16");
    ck_assert(sub->out[0]->sv.known && sub->out[0]->sv.e[0].sym == IR_DIM_UNKNOWN);
    /* Where(Equal(shape, -1), 1, shape): a dim never equals -1 */
    ir_value *ea[] = {sh->out[0], cst(1, I64(-1))};
    ir_node *eq = vnode(IR_OP_EQUAL, 2, ea);
    ir_value *wa[] = {eq->out[0], cst(3, I64(1, 1, 1)), sh->out[0]};
    ir_node *wh = vnode(IR_OP_WHERE, 3, wa);
    ir_value *xa[] = {x, wh->out[0]};
    ir_node *rx = vnode(IR_OP_RESHAPE, 2, xa);
    chk_type(rx, IR_F32, "B,S,32");
    /* [S, B, 32] from a [B, S, 32] input: S or B could be 0 (a copy of the
     * input's dim then), but then the input has no elements and the copy
     * cannot match the count: the run fails either way, so the symbols
     * are taken; one the input lacks is not */
    ir_value *ga[] = {sh->out[0], cst(3, I64(1, 0, 2))};
    ir_node *gn = vnode_int(IR_OP_GATHER, 2, ga, "axis", 0);
    ir_value *pa[] = {x, gn->out[0]};
    ir_node *perm = vnode(IR_OP_RESHAPE, 2, pa);
    chk_type(perm, IR_F32, "S,B,32");
    ir_node_set_int(g, perm, "allowzero", 1);
    chk_type(perm, IR_F32, "S,B,32");
    /* [T, 0, 32] with T another input's dim: a T of 0 would copy B */
    ir_value *y = inp(IR_F32, "T");
    ir_node *ys = vnode(IR_OP_SHAPE, 1, &y);
    ir_value *ca[] = {ys->out[0], cst(1, I64(0)), cst(1, I64(32))};
    ir_node *cat = vnode_int(IR_OP_CONCAT, 3, ca, "axis", 0);
    ir_value *ta[] = {x, cat->out[0]};
    ir_node *other = vnode(IR_OP_RESHAPE, 2, ta);
    chk_type(other, IR_F32, "?,S,32");
}
END_TEST

/* Pads of k - N (Whisper pads or crops its N samples to 480000): the
 * padded dim is the constant k; adding N back to k - N gives k; the form
 * is lost where it could wrap (a Cast to int32) or is not the axis's dim. */
START_TEST(pad_to_length_by_shape_value)
{
    ir_value *x = inp(IR_F32, "B,N");
    ir_node *sh = vnode(IR_OP_SHAPE, 1, &x);
    ck_assert_int_eq(ir_node_set_int(g, sh, "start", 1), 0);
    ir_value *sa[] = {cst0(480000), sh->out[0]};
    ir_node *sub = vnode(IR_OP_SUB, 2, sa);   /* [480000 - N] */
    ir_value *ma[] = {sub->out[0], cst(4, I64(0, 0, 0, 1))};
    ir_node *mul = vnode(IR_OP_MUL, 2, ma);   /* [0, 0, 0, 480000 - N] */
    ir_value *pa[] = {x, mul->out[0]};
    ir_node *pad = vnode(IR_OP_PAD, 2, pa);
    ir_value *aa[] = {sub->out[0], sh->out[0]};
    ir_node *add = vnode(IR_OP_ADD, 2, aa);   /* (480000 - N) + N */
    ir_value *mb[] = {sub->out[0], cst(4, I64(0, 0, 1, 0))};
    ir_node *mul2 = vnode(IR_OP_MUL, 2, mb);   /* the pads on B's axis */
    ir_value *pb[] = {x, mul2->out[0]};
    ir_node *pad2 = vnode(IR_OP_PAD, 2, pb);
    ir_node *cast = vnode_int(IR_OP_CAST, 1, &mul->out[0], "to", 6);   /* int32 */
    ir_value *pc[] = {x, cast->out[0]};
    ir_node *pad3 = vnode(IR_OP_PAD, 2, pc);
    chk_type(pad, IR_F32, "B,480000");
    chk_type(pad2, IR_F32, "?,N");
    chk_type(pad3, IR_F32, "B,?");
    ck_assert(sub->out[0]->sv.known && sub->out[0]->sv.e[0].sym == IR_DIM_UNKNOWN);
    ck_assert_int_eq(sub->out[0]->sv.minus[0].v, 480000);
    ck_assert_int_eq(sub->out[0]->sv.minus[0].sym, x->type.dims[1].sym);
    ck_assert(add->out[0]->sv.known && add->out[0]->sv.e[0].sym == 0 && add->out[0]->sv.e[0].v == 480000);
    ck_assert_int_eq(ir_node_set_string(g, pad, "mode", "reflect"), 0);
    chk_type(pad, IR_F32, "B,480000");
    /* (480000 - N) - 480001 = -1 - N: a length of -1 */
    ir_value *na[] = {sub->out[0], cst0(480001)};
    ir_node *neg = vnode(IR_OP_SUB, 2, na);
    ir_value *mc[] = {neg->out[0], cst(4, I64(0, 0, 0, 1))};
    ir_node *mul3 = vnode(IR_OP_MUL, 2, mc);
    ir_value *pn[] = {x, mul3->out[0]};
    vnode(IR_OP_PAD, 2, pn);
    chk_infer_err("pads make dim 1 negative (-1)");
}
END_TEST

/* Expand and ConstantOfShape by a shape value: symbols pass to the dims
 * where the other side is 1 or the same symbol; fixed dims that cannot
 * broadcast are an error as with a constant shape. */
START_TEST(expand_by_shape_value)
{
    ir_value *z = inp(IR_F32, "N,S,4");
    ir_node *sh = vnode(IR_OP_SHAPE, 1, &z);
    ir_value *ea[] = {inp(IR_F32, "N,1,4"), sh->out[0]};
    ir_node *ex = vnode(IR_OP_EXPAND, 2, ea);
    ir_node *cs = vnode(IR_OP_CONSTANT_OF_SHAPE, 1, &sh->out[0]);
    chk_type(ex, IR_F32, "N,S,4");
    chk_type(cs, IR_F32, "N,S,4");
    ir_value *ba[] = {inp(IR_F32, "3"), sh->out[0]};
    vnode(IR_OP_EXPAND, 2, ba);
    chk_infer_err("dim 3 of the input does not broadcast to 4");
}
END_TEST

START_TEST(constant_of_shape)
{
    ir_node *n = mknode(IR_OP_CONSTANT_OF_SHAPE, 1, 1, 0);
    ir_tensor s = i64s(2, I64(2, 3)), y;
    const ir_tensor *in[] = {&s};
    EVAL_OK(n, in, &y);
    chk_f32(&y, 2, D(2, 3), F(0, 0, 0, 0, 0, 0));
    ir_tensor v = mk(IR_I32, 1, D(1), I32(7));
    ir_node_set_tensor(g, n, "value", &v);
    EVAL_OK(n, in, &y);
    ck_assert_int_eq(y.dtype, IR_I32);
    ck_assert_mem_eq(y.data, I32(7, 7, 7, 7, 7, 7), 24);
    free(y.data);
    ir_tensor e = i64s(0, NULL);
    const ir_tensor *in2[] = {&e};
    EVAL_OK(n, in2, &y); /* empty shape: a scalar */
    ck_assert_int_eq(y.rank, 0);
    ck_assert_int_eq(*(int32_t *)y.data, 7);
    free(y.data);
    s = i64s(2, I64(-1, 3));
    EVAL_ERR(n, in, "negative");
    s = i64s(2, I64(1LL << 40, 1LL << 40));
    EVAL_ERR(n, in, "too large");
}
END_TEST

/* The window ops against their closed forms; the symmetric form ends
 * where it starts; an int32 output; a negative size is an error. */
START_TEST(windows)
{
    static const int ops[3] = {IR_OP_HANN_WINDOW, IR_OP_HAMMING_WINDOW, IR_OP_BLACKMAN_WINDOW};
    static const double a[3][3] = {{0.5, 0.5, 0}, {25.0 / 46, 21.0 / 46, 0}, {0.42, 0.5, 0.08}};
    ir_tensor size = mk(IR_I32, 0, NULL, I32(8)), y;
    const ir_tensor *in[] = {&size};
    for (int o = 0; o < 3; o++)
        for (int periodic = 1; periodic >= 0; periodic--) {
            ir_node *n = mknode(ops[o], 1, 1, 0);
            ir_node_set_int(g, n, "periodic", periodic);
            EVAL_OK(n, in, &y);
            ck_assert_int_eq(y.dtype, IR_F32);
            ck_assert_int_eq(y.numel, 8);
            double N = periodic ? 8 : 7;
            for (int i = 0; i < 8; i++) {
                double t = 2 * 3.14159265358979323846 * i / N;
                double want = a[o][0] - a[o][1] * cos(t) + a[o][2] * cos(2 * t);
                ck_assert_double_eq_tol(((float *)y.data)[i], want, 1e-6);
            }
            if (!periodic)
                ck_assert_float_eq(((float *)y.data)[0], ((float *)y.data)[7]);
            free(y.data);
        }
    ir_node *n = mknode(IR_OP_HANN_WINDOW, 1, 1, 0);
    ir_node_set_int(g, n, "output_datatype", 6);   /* int32: 0.5 - 0.5 cos truncates to 0 or 1 */
    EVAL_OK(n, in, &y);
    ck_assert_int_eq(y.dtype, IR_I32);
    ck_assert_int_eq(((int32_t *)y.data)[4], 1);
    ck_assert_int_eq(((int32_t *)y.data)[1], 0);
    free(y.data);
    size = mk(IR_I32, 0, NULL, I32(-2));
    EVAL_ERR(n, in, "window size -2 out of range");
}
END_TEST

START_TEST(range)
{
    ir_node *n = mknode(IR_OP_RANGE, 3, 1, 0);
    ir_tensor a = mk(IR_I32, 0, NULL, I32(10)), b = mk(IR_I32, 0, NULL, I32(4)),
              c = mk(IR_I32, 0, NULL, I32(-3)), y;
    const ir_tensor *in[] = {&a, &b, &c};
    EVAL_OK(n, in, &y);
    ck_assert_int_eq(y.numel, 2);
    ck_assert_mem_eq(y.data, I32(10, 7), 8);
    free(y.data);
    c = mk(IR_I32, 0, NULL, I32(3)); /* wrong direction: empty */
    EVAL_OK(n, in, &y);
    ck_assert_int_eq(y.numel, 0);
    free(y.data);
    ir_tensor fa = mk(IR_F32, 0, NULL, F(1)), fb = mk(IR_F32, 0, NULL, F(5)),
              fc = mk(IR_F32, 0, NULL, F(1.5f));
    const ir_tensor *in2[] = {&fa, &fb, &fc};
    EVAL_OK(n, in2, &y);
    chk_f32(&y, 1, D(3), F(1, 2.5f, 4));
    ir_tensor ia = i64_scalar(I64(INT64_MIN)), ib = i64_scalar(I64(INT64_MAX)),
              ic = i64_scalar(I64(INT64_MAX / 2));
    const ir_tensor *in3[] = {&ia, &ib, &ic};
    EVAL_OK(n, in3, &y); /* the span overflows int64; the count (5) does not */
    ck_assert_int_eq(y.numel, 5);
    free(y.data);
    ic = i64_scalar(I64(0));
    EVAL_ERR(n, in3, "delta is 0");
    ic = i64_scalar(I64(1));
    EVAL_ERR(n, in3, "too many elements");
    const ir_tensor *in4[] = {&fa, &b, &fc};
    EVAL_ERR(n, in4, "input 1 is i32 but start is f32");
}
END_TEST

START_TEST(identity_dropout)
{
    ir_node *n = mknode(IR_OP_IDENTITY, 1, 1, 0);
    ir_tensor x = mk(IR_F32, 2, D(2, 2), F(1, 2, 3, 4)), y[2];
    const ir_tensor *in[] = {&x};
    EVAL_OK(n, in, y);
    chk_f32(&y[0], 2, D(2, 2), F(1, 2, 3, 4));
    ir_node *dr = mknode(IR_OP_DROPOUT, 3, 2, 0);
    ir_tensor r = mk(IR_F32, 0, NULL, F(0.5f));
    const uint8_t f = 0, t = 1;
    ir_tensor tm = mk(IR_BOOL, 0, NULL, &f);
    const ir_tensor *in2[] = {&x, &r, &tm};
    EVAL_OK(dr, in2, y);
    chk_f32(&y[0], 2, D(2, 2), F(1, 2, 3, 4));
    ck_assert_int_eq(y[1].dtype, IR_BOOL);
    ck_assert_mem_eq(y[1].data, ((const uint8_t[]){1, 1, 1, 1}), 4);
    free(y[1].data);
    tm = mk(IR_BOOL, 0, NULL, &t);
    EVAL_ERR(dr, in2, "training mode");
    r = mk(IR_F32, 0, NULL, F(0)); /* training with ratio 0 is the identity */
    EVAL_OK(dr, in2, y);
    chk_f32(&y[0], 2, D(2, 2), F(1, 2, 3, 4));
    free(y[1].data);
}
END_TEST

START_TEST(eyelike)
{
    ir_node *n = mknode(IR_OP_EYE_LIKE, 1, 1, 0);
    ir_node_set_int(g, n, "k", 1);
    ir_node_set_int(g, n, "dtype", 7);
    ir_tensor x = mk(IR_F32, 2, D(3, 4), iota(12)), y;
    const ir_tensor *in[] = {&x};
    EVAL_OK(n, in, &y);
    chk_i64(&y, 2, D(3, 4), I64(0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1));
}
END_TEST

/* ---- OneHot, Compress, NonZero, ReverseSequence --------------------------------------- */

START_TEST(onehot)
{
    ir_node *n = mknode(IR_OP_ONE_HOT, 3, 1, 0);
    ir_tensor ind = mk(IR_I64, 1, D(3), I64(0, -1, 5)), depth = i64_scalar(I64(3)),
              v = mk(IR_F32, 1, D(2), F(0, 1)), y;
    const ir_tensor *in[] = {&ind, &depth, &v};
    EVAL_OK(n, in, &y);
    chk_f32(&y, 2, D(3, 3), F(1, 0, 0, 0, 0, 1, 0, 0, 0));
    ir_node_set_int(g, n, "axis", 0);
    EVAL_OK(n, in, &y);
    chk_f32(&y, 2, D(3, 3), F(1, 0, 0, 0, 0, 0, 0, 1, 0));
    depth = i64_scalar(I64(0));
    EVAL_ERR(n, in, "depth 0 is invalid");
}
END_TEST

START_TEST(compress_nonzero)
{
    ir_node *n = mknode(IR_OP_COMPRESS, 2, 1, 0);
    ir_node_set_int(g, n, "axis", 0);
    const uint8_t cond[] = {0, 1, 1}, cond2[] = {0, 1, 0, 0, 1}, cond3[] = {0, 0, 0, 1};
    ir_tensor x = mk(IR_F32, 2, D(3, 2), F(1, 2, 3, 4, 5, 6)), c = mk(IR_BOOL, 1, D(3), cond), y;
    const ir_tensor *in[] = {&x, &c};
    EVAL_OK(n, in, &y);
    chk_f32(&y, 2, D(2, 2), F(3, 4, 5, 6));
    c = mk(IR_BOOL, 1, D(4), cond3);
    EVAL_ERR(n, in, "selects index 3 of 3");
    ir_node *nf = mknode(IR_OP_COMPRESS, 2, 1, 0);
    c = mk(IR_BOOL, 1, D(5), cond2);
    EVAL_OK(nf, in, &y);
    chk_f32(&y, 1, D(2), F(2, 5));

    ir_node *nz = mknode(IR_OP_NON_ZERO, 1, 1, 0);
    ir_tensor z = mk(IR_F32, 2, D(2, 2), F(1, 0, 1, -1));
    const ir_tensor *in2[] = {&z};
    EVAL_OK(nz, in2, &y);
    chk_i64(&y, 2, D(2, 3), I64(0, 1, 1, 0, 0, 1));
}
END_TEST

START_TEST(reverse_sequence)
{
    ir_node *n = mknode(IR_OP_REVERSE_SEQUENCE, 2, 1, 0);
    ir_tensor x = mk(IR_F32, 2, D(4, 4), iota(16)), l = i64s(4, I64(4, 3, 2, 1)), y;
    const ir_tensor *in[] = {&x, &l};
    EVAL_OK(n, in, &y);
    chk_f32(&y, 2, D(4, 4), F(12, 9, 6, 3, 8, 5, 2, 7, 4, 1, 10, 11, 0, 13, 14, 15));
    ir_node_set_int(g, n, "time_axis", 1);
    ir_node_set_int(g, n, "batch_axis", 0);
    l = i64s(4, I64(1, 2, 3, 4));
    EVAL_OK(n, in, &y);
    chk_f32(&y, 2, D(4, 4), F(0, 1, 2, 3, 5, 4, 6, 7, 10, 9, 8, 11, 15, 14, 13, 12));
    l = i64s(4, I64(1, 2, 3, 5));
    EVAL_ERR(n, in, "out of range");
}
END_TEST

/* ---- hostile shapes in static inference ------------------------------------------------- */

START_TEST(hostile_static)
{
    ir_value *s = cst(3, I64(1LL << 30, 1LL << 30, 1LL << 30));
    vnode(IR_OP_CONSTANT_OF_SHAPE, 1, &s);
    chk_infer_err("too large");
}
END_TEST

START_TEST(hostile_tile_symbolic)
{
    ir_value *a[] = {inp(IR_F32, "N,3"), cst(2, I64(1, INT64_MAX / 2))};
    vnode(IR_OP_TILE, 2, a);
    chk_infer_err("overflows");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ref_movement");
    TCase *tc = tcase_create("movement");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, reshape_kernel);
    tcase_add_test(tc, reshape_allowzero);
    tcase_add_test(tc, reshape_errors);
    tcase_add_test(tc, reshape_symbolic);
    tcase_add_test(tc, reshape_symbolic_mismatch);
    tcase_add_test(tc, flatten);
    tcase_add_test(tc, flatten_symbolic);
    tcase_add_test(tc, squeeze_unsqueeze);
    tcase_add_test(tc, squeeze_symbolic);
    tcase_add_test(tc, transpose);
    tcase_add_test(tc, transpose_other_dtypes);
    tcase_add_test(tc, transpose_bad_perm);
    tcase_add_test(tc, transpose_symbolic);
    tcase_add_test(tc, concat);
    tcase_add_test(tc, concat_symbolic);
    tcase_add_test(tc, split_even_uneven);
    tcase_add_test(tc, split_too_many_outputs);
    tcase_add_test(tc, slice_basic);
    tcase_add_test(tc, slice_negative_steps);
    tcase_add_test(tc, slice_symbolic);
    tcase_add_test(tc, gather);
    tcase_add_test(tc, gather_symbolic);
    tcase_add_test(tc, gather_elements);
    tcase_add_test(tc, gather_nd);
    tcase_add_test(tc, scatter_nd);
    tcase_add_test(tc, scatter_nd_int);
    tcase_add_test(tc, scatter_elements);
    tcase_add_test(tc, expand);
    tcase_add_test(tc, expand_symbolic);
    tcase_add_test(tc, tile);
    tcase_add_test(tc, pad_modes);
    tcase_add_test(tc, pad_2d_value_axes_crop);
    tcase_add_test(tc, pad_other_dtypes);
    tcase_add_test(tc, center_crop_pad);
    tcase_add_test(tc, tensor_scatter);
    tcase_add_test(tc, depth_space);
    tcase_add_test(tc, space_to_depth_values);
    tcase_add_test(tc, trilu);
    tcase_add_test(tc, shape_and_size);
    tcase_add_test(tc, shape_symbolic);
    tcase_add_test(tc, shape_values_flatten);
    tcase_add_test(tc, shape_values_arith);
    tcase_add_test(tc, expand_by_shape_value);
    tcase_add_test(tc, pad_to_length_by_shape_value);
    tcase_add_test(tc, constant_of_shape);
    tcase_add_test(tc, range);
    tcase_add_test(tc, windows);
    tcase_add_test(tc, identity_dropout);
    tcase_add_test(tc, eyelike);
    tcase_add_test(tc, onehot);
    tcase_add_test(tc, compress_nonzero);
    tcase_add_test(tc, reverse_sequence);
    tcase_add_test(tc, hostile_static);
    tcase_add_test(tc, hostile_tile_symbolic);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return icc_run_suite(suite());
}
