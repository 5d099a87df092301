/* test_kir.c - the kernel IR: building, verifying and printing kernels. */
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "codegen/kir.h"

/* y[i, j] = sum_k x[i, k] * w[k, j] over x: f32[N, 8], w: f32[8, 4]. */
static kir_kernel *matmul(ir_graph *g)
{
    kir_kernel *k = kir_kernel_create("mm", g);
    int32_t n = ir_graph_sym(g, "N", 1);
    ir_type tx = {IR_F32, 2, {{0, n}, {8, 0}}}, tw = {IR_F32, 2, {{8, 0}, {4, 0}}};
    ir_type ty = {IR_F32, 2, {{0, n}, {4, 0}}};
    int x = kir_add_buf(k, "x", KIR_BUF_INPUT, &tx, 0, 0);
    int w = kir_add_buf(k, "w", KIR_BUF_WEIGHT, &tw, 0, 128);
    int y = kir_add_buf(k, "y", KIR_BUF_OUTPUT, &ty, 0, 0);
    int i = kir_new_var(k), j = kir_new_var(k), kk = kir_new_var(k);
    int acc = kir_new_acc(k, IR_F32);
    kir_stmt *li = kir_for(k, &k->body, i, kir_const_i(k, IR_I64, 0), kir_sym(k, n), KIR_PARALLEL, 0);
    kir_stmt *lj = kir_for(k, &li->body, j, kir_const_i(k, IR_I64, 0), kir_const_i(k, IR_I64, 4),
                           KIR_VECTOR, 4);
    kir_acc_set(k, &lj->body, acc, kir_const_f(k, IR_F32, 0));
    kir_stmt *lk = kir_for(k, &lj->body, kk, kir_const_i(k, IR_I64, 0), kir_const_i(k, IR_I64, 8),
                           KIR_SERIAL, 0);
    kir_expr *xi[2] = {kir_var(k, i), kir_var(k, kk)}, *wi[2] = {kir_var(k, kk), kir_var(k, j)};
    kir_acc_set(k, &lk->body, acc,
                kir_op3(k, KIR_FMA, IR_F32, kir_load(k, x, xi), kir_load(k, w, wi), kir_acc(k, acc)));
    kir_expr *yi[2] = {kir_var(k, i), kir_var(k, j)};
    ck_assert_ptr_nonnull(kir_store(k, &lj->body, y, yi, kir_acc(k, acc)));
    return k;
}

START_TEST(build_verify_print)
{
    ir_graph *g = ir_graph_create("t");
    kir_kernel *k = matmul(g);
    icc_diag d = {{0}};
    ck_assert_msg(kir_verify(k, &d) == 0, "%s", d.msg);
    char *text = kir_print(k);
    ck_assert_str_eq(text,
                     "kernel @mm(b0 %x: f32[N,8] in, b1 %w: f32[8,4] weight+128, b2 %y: f32[N,4] out)\n"
                     "  acc a0: f32\n"
                     "  parallel for v0 in [0, N)\n"
                     "    vector for(4) v1 in [0, 4)\n"
                     "      a0 = 0:f32\n"
                     "      for v2 in [0, 8)\n"
                     "        a0 = fma.f32(b0[v0, v2], b1[v2, v1], a0)\n"
                     "      b2[v0, v1] = a0\n");
    free(text);
    kir_kernel_destroy(k);
    ir_graph_destroy(g);
}
END_TEST

/* Each case breaks one rule; the message says which. */
START_TEST(verifier_catches_errors)
{
    ir_graph *g = ir_graph_create("t");
    ir_type t4 = {IR_F32, 1, {{4, 0}}};
    icc_diag d = {{0}};
    struct {
        int which;
        const char *msg;
    } cases[] = {
        {0, "used outside its loop"}, {1, "read-only buffer 'x'"}, {2, "stores i32 into f32"},
        {3, "parallel loop must be outermost"}, {4, "read before it is set"},
        {5, "index of a store is not i64"}, {6, "bound twice"}, {7, "add of i32 operand into f32"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        kir_kernel *k = kir_kernel_create("bad", g);
        int x = kir_add_buf(k, "x", KIR_BUF_INPUT, &t4, 0, 0);
        int y = kir_add_buf(k, "y", KIR_BUF_OUTPUT, &t4, 0, 0);
        int i = kir_new_var(k), j = kir_new_var(k);
        kir_expr *zero = kir_const_i(k, IR_I64, 0), *four = kir_const_i(k, IR_I64, 4);
        kir_stmt *l = kir_for(k, &k->body, i, zero, four, KIR_SERIAL, 0);
        kir_expr *vi[1] = {kir_var(k, i)};
        kir_expr *v = kir_load(k, x, vi);
        switch (cases[c].which) {
        case 0: {
            kir_expr *vj[1] = {kir_var(k, j)};
            kir_store(k, &l->body, y, vj, v);
            break;
        }
        case 1: kir_store(k, &l->body, x, vi, v); break;
        case 2: kir_store(k, &l->body, y, vi, kir_const_i(k, IR_I32, 1)); break;
        case 3: {
            kir_stmt *in = kir_for(k, &l->body, j, zero, four, KIR_PARALLEL, 0);
            kir_store(k, &in->body, y, vi, v);
            break;
        }
        case 4: {
            int a = kir_new_acc(k, IR_F32);
            kir_store(k, &l->body, y, vi, kir_acc(k, a));
            break;
        }
        case 5: {
            kir_expr *bad[1] = {kir_const_i(k, IR_I32, 0)};
            kir_store(k, &l->body, y, bad, v);
            break;
        }
        case 6: {
            kir_stmt *in = kir_for(k, &l->body, i, zero, four, KIR_SERIAL, 0);
            kir_store(k, &in->body, y, vi, v);
            break;
        }
        case 7:
            kir_store(k, &l->body, y, vi, kir_op2(k, KIR_ADD, IR_F32, v, kir_const_i(k, IR_I32, 1)));
            break;
        }
        ck_assert_int_eq(kir_verify(k, &d), -1);
        ck_assert_msg(strstr(d.msg, cases[c].msg) && strstr(d.msg, "kernel 'bad'"), "case %zu: %s", c, d.msg);
        kir_kernel_destroy(k);
    }
    ir_graph_destroy(g);
}
END_TEST

START_TEST(builders_propagate_null)
{
    kir_kernel *k = kir_kernel_create("n", NULL);
    /* a load of a buffer that does not exist fails, and so does all built on it */
    kir_expr *bad = kir_load(k, 3, NULL);
    ck_assert_ptr_null(bad);
    ck_assert_ptr_null(kir_op2(k, KIR_ADD, IR_F32, bad, kir_const_f(k, IR_F32, 1)));
    ck_assert_ptr_null(kir_acc(k, 0));
    ck_assert_ptr_null(kir_op1(k, KIR_LOAD, IR_F32, kir_const_f(k, IR_F32, 1)));
    kir_kernel_destroy(k);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("kir");
    TCase *tc = tcase_create("kir");
    tcase_add_test(tc, build_verify_print);
    tcase_add_test(tc, verifier_catches_errors);
    tcase_add_test(tc, builders_propagate_null);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return icc_run_suite(suite());
}
