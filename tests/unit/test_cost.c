/* test_cost.c - the kernel work estimate (codegen/cost.h) that decides
 * whether a parallel loop is split over threads. */
#include "check_main.h"
#include "codegen/cost.h"

/* y[i, j] = x[i, j] + 1 over f32[8, 256]: parallel over i, vector over j. */
static kir_kernel *add_one(ir_graph *g, int width)
{
    kir_kernel *k = kir_kernel_create("add", g);
    ir_type t = {IR_F32, 2, {{8, 0}, {256, 0}}};
    int x = kir_add_buf(k, "x", KIR_BUF_INPUT, &t, 0, 0);
    int y = kir_add_buf(k, "y", KIR_BUF_OUTPUT, &t, 0, 0);
    int i = kir_new_var(k), j = kir_new_var(k);
    kir_stmt *li = kir_for(k, &k->body, i, kir_const_i(k, IR_I64, 0), kir_const_i(k, IR_I64, 8), KIR_PARALLEL, 0);
    kir_stmt *lj = kir_for(k, &li->body, j, kir_const_i(k, IR_I64, 0), kir_const_i(k, IR_I64, 256), KIR_VECTOR,
                           width);
    kir_expr *ix[2] = {kir_var(k, i), kir_var(k, j)};
    kir_store(k, &lj->body, y, ix, kir_op2(k, KIR_ADD, IR_F32, kir_load(k, x, ix), kir_const_f(k, IR_F32, 1)));
    return k;
}

START_TEST(vector_loop_counts_registers)
{
    ir_graph *g = ir_graph_create("t");
    kir_kernel *k = add_one(g, 8);
    /* 32 vector steps of load, add, store */
    ck_assert_int_eq(cg_cost_trip_ops(k, 8), 32 * 3);
    /* the same width on 4-lane vectors: two registers per step */
    ck_assert_int_eq(cg_cost_trip_ops(k, 4), 32 * 3 * 2);
    kir_kernel_destroy(k);
    k = add_one(g, 16);
    ck_assert_int_eq(cg_cost_trip_ops(k, 8), 16 * 3 * 2);
    kir_kernel_destroy(k);
    ir_graph_destroy(g);
}
END_TEST

/* A register tile's loops: [2 v0, min(16, 2 v0 + 2)) spans 2 for the
 * parallel variable at its lower bound; a symbolic span counts as 1. */
START_TEST(spans_of_tile_bounds_and_symbols)
{
    ir_graph *g = ir_graph_create("t");
    int32_t n = ir_graph_sym(g, "N", 1);
    kir_kernel *k = kir_kernel_create("tile", g);
    ir_type t = {IR_F32, 2, {{0, n}, {16, 0}}};
    int y = kir_add_buf(k, "y", KIR_BUF_OUTPUT, &t, 0, 0);
    int p = kir_new_var(k), c = kir_new_var(k), r = kir_new_var(k);
    kir_stmt *lp = kir_for(k, &k->body, p, kir_const_i(k, IR_I64, 0), kir_const_i(k, IR_I64, 8), KIR_PARALLEL, 0);
    kir_expr *lo = kir_imul(k, kir_var(k, p), kir_const_i(k, IR_I64, 2));
    kir_expr *hi = kir_op2(k, KIR_MIN, IR_I64, kir_const_i(k, IR_I64, 16), kir_iadd(k, lo, kir_const_i(k, IR_I64, 2)));
    kir_stmt *lc = kir_for(k, &lp->body, c, lo, hi, KIR_SERIAL, 0);
    kir_stmt *lr = kir_for(k, &lc->body, r, kir_const_i(k, IR_I64, 0), kir_sym(k, n), KIR_SERIAL, 0);
    kir_expr *ix[2] = {kir_var(k, r), kir_var(k, c)};
    kir_store(k, &lr->body, y, ix, kir_op2(k, KIR_MUL, IR_F32, kir_const_f(k, IR_F32, 2), kir_const_f(k, IR_F32, 3)));
    icc_diag d = {{0}};
    ck_assert_msg(kir_verify(k, &d) == 0, "%s", d.msg);
    ck_assert_int_eq(cg_cost_trip_ops(k, 8), 2 * 1 * (1 + 1));
    /* with the program's estimate of N (64): the span is 64 */
    int64_t est[3] = {0, 64, 64};
    ck_assert_int_eq(g->nsyms, 2);
    ck_assert_int_eq(cg_cost_trip_ops_est(k, 8, est, g->nsyms), 2 * 64 * (1 + 1));
    /* an estimate below 1, or past the table, counts as 1 */
    est[1] = 0;
    ck_assert_int_eq(cg_cost_trip_ops_est(k, 8, est, g->nsyms), 2 * 1 * (1 + 1));
    ck_assert_int_eq(cg_cost_trip_ops_est(k, 8, est, 1), 2 * 1 * (1 + 1));
    kir_kernel_destroy(k);
    ir_graph_destroy(g);
}
END_TEST

/* Transcendentals cost more than adds, so an Erf-heavy kernel reaches
 * the threading threshold with fewer elements. */
START_TEST(math_weighs_more)
{
    ir_graph *g = ir_graph_create("t");
    kir_kernel *k = kir_kernel_create("erf", g);
    ir_type t = {IR_F32, 1, {{64, 0}}};
    int x = kir_add_buf(k, "x", KIR_BUF_INPUT, &t, 0, 0);
    int y = kir_add_buf(k, "y", KIR_BUF_OUTPUT, &t, 0, 0);
    int i = kir_new_var(k);
    kir_stmt *li = kir_for(k, &k->body, i, kir_const_i(k, IR_I64, 0), kir_const_i(k, IR_I64, 64), KIR_VECTOR, 8);
    kir_expr *ix[1] = {kir_var(k, i)};
    kir_store(k, &li->body, y, ix, kir_op1(k, KIR_ERF, IR_F32, kir_load(k, x, ix)));
    /* no parallel loop: the whole kernel, 8 steps of load, erf, store */
    int64_t ops = cg_cost_trip_ops(k, 8);
    ck_assert_int_gt(ops, 8 * 3);
    kir_kernel_destroy(k);
    ir_graph_destroy(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cost");
    TCase *tc = tcase_create("cost");
    tcase_add_test(tc, vector_loop_counts_registers);
    tcase_add_test(tc, spans_of_tile_bounds_and_symbols);
    tcase_add_test(tc, math_weighs_more);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return icc_run_suite(suite());
}
