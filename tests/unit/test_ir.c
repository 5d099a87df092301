/* test_ir.c - core IR: dtypes, checked arithmetic, arena, graph building,
 * attributes and the registry. */
#include "check_main.h"
#include <math.h>
#include <string.h>

#include "ir/ops.h"
#include "ir/ref/interp.h"

START_TEST(numel_overflow_any_order)
{
    int64_t r;
    int64_t a[] = {1LL << 32, 1LL << 32, 0};
    int64_t b[] = {0, 1LL << 32, 1LL << 32};
    ck_assert(!ir_numel_ok(a, 3, &r));
    ck_assert(!ir_numel_ok(b, 3, &r));
    int64_t c[] = {2, 3, 4};
    ck_assert(ir_numel_ok(c, 3, &r));
    ck_assert_int_eq(r, 24);
    int64_t dneg[] = {2, -3};
    ck_assert(!ir_numel_ok(dneg, 2, &r));
    int64_t z[] = {5, 0};
    ck_assert(ir_numel_ok(z, 2, &r));
    ck_assert_int_eq(r, 0);
}
END_TEST

START_TEST(half_conversions)
{
    ck_assert_uint_eq(ir_f32_to_f16(1.0f), 0x3c00);
    ck_assert_uint_eq(ir_f32_to_f16(-2.0f), 0xc000);
    ck_assert_uint_eq(ir_f32_to_f16(65504.0f), 0x7bff);
    ck_assert_uint_eq(ir_f32_to_f16(65520.0f), 0x7c00);
    ck_assert_uint_eq(ir_f32_to_f16(0x1p-24f), 0x0001);
    ck_assert(ir_f16_to_f32(0x0001) == 0x1p-24f);
    ck_assert(isnan(ir_f16_to_f32(ir_f32_to_f16(NAN))));
    /* every f16 survives f16 -> f32 -> f16 */
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
            continue;
        ck_assert_uint_eq(ir_f32_to_f16(ir_f16_to_f32((uint16_t)h)), h);
    }
    ck_assert_uint_eq(ir_f32_to_bf16(1.0f), 0x3f80);
    ck_assert(ir_bf16_to_f32(0x3f80) == 1.0f);
    /* 1 + 2^-8 is a tie between bf16 neighbours: round to even (down) */
    ck_assert_uint_eq(ir_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);
}
END_TEST

START_TEST(dtype_table)
{
    ck_assert_int_eq(ir_dtype_from_name("bf16", 4), IR_BF16);
    ck_assert_int_eq(ir_dtype_from_onnx(1), IR_F32);
    ck_assert_int_eq(ir_dtype_from_onnx(17), IR_UNDEF);
    ck_assert_str_eq(ir_onnx_dtype_name(17), "FLOAT8E4M3FN");
    ck_assert_uint_eq(ir_dtype_size(IR_I64), 8);
}
END_TEST

START_TEST(registry_schemas_parse)
{
    for (int op = 0; op < IR_OP_COUNT; op++) {
        ck_assert_int_eq(ir_op_lookup(ir_ops[op].name, strlen(ir_ops[op].name)), op);
        ck_assert_ptr_nonnull(ir_ops[op].shape);
        ck_assert_ptr_nonnull(ir_ops[op].ref);
        const ir_attr_schema *s;
        for (int i = 0; (s = ir_op_attr_schema(op, i)); i++) {
            ck_assert(s->name[0]);
            ck_assert(!(s->required && s->has_def));
        }
    }
    const ir_attr_schema *s = ir_op_find_attr(IR_OP_CONV, "auto_pad");
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(s->def, "NOTSET");
    ck_assert(ir_op_find_attr(IR_OP_CONCAT, "axis")->required);
}
END_TEST

START_TEST(graph_build_verify)
{
    icc_diag d = {{0}};
    ir_graph *g = ir_graph_create("t");
    ir_type t = {IR_F32, 2, {{0, 0}, {3, 0}}};
    t.dims[0].sym = ir_graph_sym(g, "N", 1);
    ck_assert_int_gt(t.dims[0].sym, 0);
    ck_assert_int_eq(ir_graph_sym(g, "N", 1), t.dims[0].sym);
    ir_value *x = ir_graph_add_input(g, "x", &t, &d);
    ir_type ct = {IR_F32, 1, {{3, 0}}};
    float cdata[3] = {1, 2, 3};
    ir_value *c = ir_graph_add_const(g, "c", &ct, cdata, &d);
    ir_value *ins[2] = {x, c};
    ir_node *n = ir_graph_add_node(g, IR_OP_ADD, "add0", 2, ins, 1, NULL, &d);
    ck_assert_ptr_nonnull(n);
    ck_assert_int_eq(ir_graph_add_output(g, n->out[0], &d), 0);
    ck_assert_int_eq(ir_verify(g, &d), 0);
    /* an unknown attribute is rejected, naming the node */
    ir_node_set_int(g, n, "bogus", 1);
    ck_assert_int_eq(ir_verify(g, &d), -1);
    ck_assert_ptr_nonnull(strstr(d.msg, "node 'add0' (Add): unknown attribute 'bogus'"));
    ir_graph_destroy(g);
}
END_TEST

START_TEST(attr_defaults_from_schema)
{
    icc_diag d;
    ir_graph *g = ir_graph_create("t");
    ir_type t = {IR_F32, 1, {{4, 0}}};
    ir_value *x = ir_graph_add_input(g, "x", &t, &d);
    ir_node *n = ir_graph_add_node(g, IR_OP_LEAKY_RELU, "lr", 1, &x, 1, NULL, &d);
    ck_assert(fabsf(ir_attr_float(n, "alpha", 0) - 0.01f) < 1e-9f);
    ir_node_set_float(g, n, "alpha", 0.5f);
    ck_assert(ir_attr_float(n, "alpha", 0) == 0.5f);
    ir_graph_destroy(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ir");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, numel_overflow_any_order);
    tcase_add_test(tc, half_conversions);
    tcase_add_test(tc, dtype_table);
    tcase_add_test(tc, registry_schemas_parse);
    tcase_add_test(tc, graph_build_verify);
    tcase_add_test(tc, attr_defaults_from_schema);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return icc_run_suite(suite());
}
