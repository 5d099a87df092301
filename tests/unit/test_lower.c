/* test_lower.c - lowering graph nodes to kernels: what lowers, and the
 * kernels' shape (loops, broadcasting index maps, compute dtypes). The
 * numbers are checked end to end, compiled, in test_llvm_emit. */
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "codegen/lower.h"
#include "codegen/schedule.h"
#include "ir/ops.h"
#include "ir/text.h"

static ir_graph *parse(const char *text)
{
    icc_diag d = {{0}};
    ir_graph *g = ir_parse(text, strlen(text), "t.icc", &d);
    ck_assert_msg(g != NULL, "%s", d.msg);
    return g;
}

/* Inputs bind to INPUT buffers, everything else to the arena at 0. */
static cg_binding *bind_all(const ir_graph *g)
{
    cg_binding *b = calloc((size_t)g->nvalues, sizeof *b);
    for (int i = 0; i < g->nvalues; i++)
        b[i].kind = KIR_BUF_ARENA;
    for (int i = 0; i < g->ninputs; i++)
        b[g->inputs[i]->id] = (cg_binding){KIR_BUF_INPUT, i, 0};
    return b;
}

/* The schedule of an AVX-512 target (16 lanes), whatever the host. */
static const cg_schedule *avx512(void)
{
    static icc_target_desc t;
    static cg_schedule s;
    icc_diag d = {{0}};
    ck_assert_int_eq(icc_target_desc_init(&t, "x86_64-pc-linux-gnu", "x86-64-v4", NULL, &d), 0);
    ck_assert_int_eq(cg_schedule_init(&s, &t, &d), 0);
    return &s;
}

START_TEST(broadcast_add_kernel)
{
    ir_graph *g = parse("graph @g<N>(%x: f16[N,1,5], %y: f16[4,1]) -> (%z) {\n"
                        "  %z = Add(%x, %y) : f16[N,4,5]\n"
                        "}\n");
    cg_binding *b = bind_all(g);
    kir_kernel *k;
    icc_diag d = {{0}};
    ck_assert_msg(cg_lower_node(g, g->nodes[0], b, avx512(), "add", &k, &d) == 0, "%s", d.msg);
    char *text = kir_print(k);
    ck_assert_str_eq(text,
                     "kernel @add(b0 %x: f16[N,1,5] in, b1 %y: f16[4,1] in, b2 %z: f16[N,4,5] arena+0)\n"
                     "  parallel for v4 in [0, 64)\n"
                     "    for v3 in [div(mul(v4, mul(4, N)), 64), div(mul(add(v4, 1), mul(4, N)), 64))\n"
                     "      vector for(32) v2 in [0, 5)\n"
                     "        b2[div(v3, 4), rem(v3, 4), v2] = cast.f16(add.f32(cast.f32(b0[div(v3, 4), 0, v2]), "
                     "cast.f32(b1[rem(v3, 4), 0])))\n");
    free(text);
    kir_kernel_destroy(k);
    free(b);
    ir_graph_destroy(g);
}
END_TEST

START_TEST(every_supported_op_lowers_and_verifies)
{
    static const char *const ops[] = {"Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Erf", "Neg",
                                      "Abs", "Floor", "Ceil", "Round", "Reciprocal", "LeakyRelu",
                                      "Elu", "Selu", "HardSigmoid", "HardSwish", "Softplus", "Gelu"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "graph @g(%%x: f32[3,4]) -> (%%y) {\n  %%y = %s(%%x) : f32[3,4]\n}\n", ops[i]);
        ir_graph *g = parse(text);
        cg_binding *b = bind_all(g);
        kir_kernel *k;
        icc_diag d = {{0}};
        ck_assert(cg_can_lower(g->nodes[0]));
        ck_assert_msg(cg_lower_node(g, g->nodes[0], b, avx512(), "k", &k, &d) == 0, "%s: %s", ops[i], d.msg);
        kir_kernel_destroy(k);
        free(b);
        ir_graph_destroy(g);
    }
}
END_TEST

START_TEST(unsupported_is_a_located_error)
{
    /* a data-dependent result size has a kernel only when declared static */
    ir_graph *g = parse("graph @g(%x: f32[4], %i: i32[4]) -> (%y, %z) {\n"
                        "  %y = Unique(%x) \"sin1\" : f32[?]\n"
                        "  %z = Unique(%i) : i32[2]\n"
                        "}\n");
    cg_binding *b = bind_all(g);
    kir_kernel *k;
    icc_diag d = {{0}};
    ck_assert(!cg_can_lower(g->nodes[0]));
    ck_assert(cg_can_lower(g->nodes[1]));
    ck_assert_int_eq(cg_lower_node(g, g->nodes[0], b, avx512(), "k", &k, &d), -1);
    ck_assert_ptr_nonnull(strstr(d.msg, "node 'sin1' (Unique): cannot be compiled yet"));
    ck_assert_ptr_null(k);
    ck_assert_msg(cg_lower_node(g, g->nodes[1], b, avx512(), "k", &k, &d) == 0, "%s", d.msg);
    kir_kernel_destroy(k);
    free(b);
    ir_graph_destroy(g);
}
END_TEST

START_TEST(compare_where_clip)
{
    ir_graph *g = parse("graph @g(%a: i32[6], %b: i32[6], %lo: i32[], %hi: i32[]) -> (%w) {\n"
                        "  %c = Greater(%a, %b) : bool[6]\n"
                        "  %s = Where(%c, %a, %b) : i32[6]\n"
                        "  %w = Clip(%s, %lo, %hi) : i32[6]\n"
                        "}\n");
    cg_binding *b = bind_all(g);
    const char *want[] = {
        "b2[v0] = lt(b1[v0], b0[v0])\n",
        "b3[v0] = select.i32(b0[v0], b1[v0], b2[v0])\n",
        "b3[v0] = min.i32(max.i32(b0[v0], b1[]), b2[])\n",
    };
    for (int i = 0; i < 3; i++) {
        kir_kernel *k;
        icc_diag d = {{0}};
        ck_assert_msg(cg_lower_node(g, g->nodes[i], b, avx512(), "k", &k, &d) == 0, "%s", d.msg);
        char *text = kir_print(k);
        ck_assert_msg(strstr(text, want[i]), "%s", text);
        free(text);
        kir_kernel_destroy(k);
    }
    free(b);
    ir_graph_destroy(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("lower");
    TCase *tc = tcase_create("lower");
    tcase_add_test(tc, broadcast_add_kernel);
    tcase_add_test(tc, every_supported_op_lowers_and_verifies);
    tcase_add_test(tc, unsupported_is_a_located_error);
    tcase_add_test(tc, compare_where_clip);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return icc_run_suite(suite());
}
