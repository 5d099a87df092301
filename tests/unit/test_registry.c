/* test_registry.c - the columns of the op registry (ir/ops.def) agree
 * with each other and with the code that reads them: an elementwise op
 * is lowered by the elementwise family and counts a FLOP per output
 * element, an anchor is lowered by a family whose kernels take an
 * epilogue, every op has a FLOP formula (NONE only for data movement),
 * each family's predicate takes the ops of its family and no other, the
 * FLOP formulas of the internal ops match the ops they replace, and the
 * ONNX frontend refuses every internal op. A new op whose row misses a
 * fact its family needs fails here, not in a model.
 */
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "codegen/lower.h"
#include "codegen/lower/internal.h"
#include "ir/ops.h"
#include "ir/stats.h"
#include "ir/text.h"
#include "onnx_build.h"

static bool has(int op, unsigned f) { return (ir_ops[op].flags & f) != 0; }

/* The facts one row states about itself must not contradict each other. */
START_TEST(every_row_is_consistent)
{
    for (int op = 0; op < IR_OP_COUNT; op++) {
        const ir_op_info *o = &ir_ops[op];
        const char *nm = o->name;
        ck_assert_msg((unsigned)o->family < IR_FAM_COUNT, "%s: bad family", nm);
        ck_assert_msg((unsigned)o->flops < IR_FLOP_COUNT, "%s: bad FLOP formula", nm);
        ck_assert_msg(strcmp(ir_family_name(o->family), "?") && strcmp(ir_flop_name(o->flops), "?"),
                      "%s: its family or FLOP formula has no name (ir/ops.c)", nm);
        /* elementwise ops: one family, one formula, any dims */
        ck_assert_msg(has(op, IR_F_ELEMWISE) == (o->family == IR_FAM_ELEMENTWISE),
                      "%s: IR_F_ELEMWISE and the elementwise family disagree", nm);
        if (has(op, IR_F_ELEMWISE))
            ck_assert_msg(o->flops == IR_FLOP_OUT && has(op, IR_F_SYMBOLIC), "%s: elementwise without "
                          "IR_FLOP_OUT or IR_F_SYMBOLIC", nm);
        /* fusion roles: only the families whose kernels call lower_epi */
        if (has(op, IR_F_ANCHOR))
            ck_assert_msg(o->family == IR_FAM_CONTRACTION || o->family == IR_FAM_NORM ||
                          o->family == IR_FAM_CONV || o->family == IR_FAM_BLOCKED,
                          "%s: an anchor must be a contraction, normalization or convolution", nm);
        if (has(op, IR_F_PROLOGUE))
            ck_assert_msg(has(op, IR_F_ANCHOR) && o->family == IR_FAM_NORM,
                          "%s: only a normalization anchor reads a prologue (red_load)", nm);
        if (has(op, IR_F_PLANE_FLAT))
            ck_assert_msg(has(op, IR_F_ANCHOR), "%s: IR_F_PLANE_FLAT is about an anchor's epilogue", nm);
        ck_assert_msg(has(op, IR_F_BLOCKED) == (o->family == IR_FAM_BLOCKED),
                      "%s: IR_F_BLOCKED and the blocked family disagree", nm);
        /* internal ops are made by passes, so the backend must compile them */
        if (has(op, IR_F_INTERNAL))
            ck_assert_msg(o->family != IR_FAM_NONE, "%s: an internal op needs a lowering", nm);
        /* symbolic dims: one way at most, and only for ops that lower */
        unsigned dims = o->flags & (IR_F_SYMBOLIC | IR_F_BATCH | IR_F_BATCH_AXIS);
        ck_assert_msg((dims & (dims - 1)) == 0, "%s: more than one of SYMBOLIC, BATCH, BATCH_AXIS", nm);
        if (dims)
            ck_assert_msg(o->family != IR_FAM_NONE, "%s: a dims flag on an op that does not lower", nm);
        if (has(op, IR_F_BATCH_AXIS))
            ck_assert_msg(ir_op_find_attr(op, "axis") != NULL, "%s: IR_F_BATCH_AXIS needs an axis", nm);
        /* FLOPs: no arithmetic only for data movement; heavy ops count theirs */
        if (o->flops == IR_FLOP_NONE)
            ck_assert_msg(o->family == IR_FAM_MOVEMENT || o->family == IR_FAM_NONE,
                          "%s: computes but counts no FLOPs", nm);
        if (has(op, IR_F_MOVEMENT | IR_F_SHAPE_ONLY))
            ck_assert_msg(o->flops == IR_FLOP_NONE, "%s: data movement counts FLOPs", nm);
        if (has(op, IR_F_CONTRACTION))
            ck_assert_msg(o->flops != IR_FLOP_NONE && o->flops != IR_FLOP_OUT && o->flops != IR_FLOP_IN,
                          "%s: a contraction needs a contraction FLOP formula", nm);
        if (has(op, IR_F_REDUCTION))
            ck_assert_msg(o->flops == IR_FLOP_IN, "%s: a reduction counts one per input element", nm);
        if (has(op, IR_F_NORM))
            ck_assert_msg(o->flops == IR_FLOP_NORM, "%s: a normalization counts IR_FLOP_NORM", nm);
    }
}
END_TEST

/* One node of each family (its op is the graph's only node). */
static const struct {
    ir_family fam;
    const char *text;
} samples[] = {
    {IR_FAM_ELEMENTWISE, "graph @g(%a: f32[2,3], %b: f32[3]) -> (%y) {\n  %y = Add(%a, %b)\n}\n"},
    {IR_FAM_ELEMENTWISE, "graph @g(%a: f32[2,3]) -> (%y) {\n  %y = Exp(%a)\n}\n"},
    {IR_FAM_CONTRACTION, "graph @g(%a: f32[2,3], %b: f32[3,4]) -> (%y) {\n  %y = MatMul(%a, %b)\n}\n"},
    {IR_FAM_CONTRACTION, "graph @g(%a: f32[2,3], %b: f32[4,3]) -> (%y) {\n  %y = Gemm(%a, %b) {transB = 1}\n}\n"},
    {IR_FAM_REDUCE, "graph @g(%a: f32[2,3]) -> (%y) {\n  %y = ArgMax(%a) {axis = 1}\n}\n"},
    {IR_FAM_NORM, "graph @g(%a: f32[2,3]) -> (%y) {\n  %y = Softmax(%a)\n}\n"},
    {IR_FAM_NORM, "graph @g(%a: f32[2,3], %s: f32[3]) -> (%y) {\n  %y = LayerNormalization(%a, %s)\n}\n"},
    {IR_FAM_MOVEMENT, "graph @g(%a: f32[2,3]) -> (%y) {\n  %y = Transpose(%a)\n}\n"},
    {IR_FAM_MOVEMENT, "graph @g(%a: f32[2,3]) -> (%y) {\n  %y = Shape(%a)\n}\n"},
    {IR_FAM_CONV, "graph @g(%x: f32[1,8,4,4], %w: f32[8,8,3,3]) -> (%y) {\n"
                  "  %y = Conv(%x, %w) {pads = [1, 1, 1, 1]}\n}\n"},
    {IR_FAM_CONV, "graph @g(%x: f32[1,2,4,4]) -> (%y) {\n  %y = MaxPool(%x) {kernel_shape = [2, 2]}\n}\n"},
    {IR_FAM_MISC, "graph @g(%a: f32[2,3], %b: f32[3,4]) -> (%y) {\n"
                  "  %y = Einsum(%a, %b) {equation = \"ij,jk->ik\"}\n}\n"},
    {IR_FAM_ATTENTION, "graph @g(%q: f32[1,2,4,8], %k: f32[1,2,6,8], %v: f32[1,2,6,8]) -> (%y) {\n"
                       "  %y = Attention(%q, %k, %v)\n}\n"},
    {IR_FAM_BLOCKED, "graph @g(%x: f32[1,1,4,4,8], %w: f32[1,1,3,3,8,8]) -> (%y) {\n"
                     "  %y = ConvNCHWc(%x, %w) {pads = [1, 1, 1, 1]}\n}\n"},
    {IR_FAM_RNN, "graph @g(%x: f32[3,2,4], %w: f32[1,8,4], %r: f32[1,8,2]) -> (%y) {\n"
                 "  %y = LSTM(%x, %w, %r) {hidden_size = 2}\n}\n"},
};

static ir_graph *sample_graph(const char *text)
{
    icc_diag d = {{0}};
    ir_graph *g = ir_parse(text, strlen(text), "sample.icc", &d);
    ck_assert_msg(g != NULL, "%s", d.msg);
    ck_assert_msg(ir_infer_shapes(g, &d) == 0, "%s", d.msg);
    ck_assert_int_eq(g->nnodes, 1);
    return g;
}

/* Each sample lowers, its op's family is the sample's, and no other
 * family's predicate claims it: a row naming the wrong family would
 * leave its op uncompiled. Every family has a sample. */
START_TEST(families_claim_their_own_ops)
{
    bool seen[IR_FAM_COUNT] = {0};
    for (size_t i = 0; i < sizeof samples / sizeof *samples; i++) {
        ir_graph *g = sample_graph(samples[i].text);
        const ir_node *n = g->nodes[0];
        const char *nm = ir_ops[n->op].name;
        ck_assert_msg(ir_ops[n->op].family == samples[i].fam, "%s: family %s, the sample says %s", nm,
                      ir_family_name(ir_ops[n->op].family), ir_family_name(samples[i].fam));
        ck_assert_msg(cg_can_lower(n), "%s: not lowered", nm);
        for (int f = 0; f < IR_FAM_COUNT; f++) {
            bool yes = lw_family_accepts((ir_family)f, n);
            ck_assert_msg(yes == (f == (int)samples[i].fam), "%s: the %s family %s it", nm,
                          ir_family_name((ir_family)f), yes ? "claims" : "does not claim");
        }
        seen[samples[i].fam] = true;
        ir_graph_destroy(g);
    }
    for (int f = IR_FAM_NONE + 1; f < IR_FAM_COUNT; f++)
        ck_assert_msg(seen[f], "family %s has no sample", ir_family_name((ir_family)f));
}
END_TEST

static int64_t flops_of(const char *text)
{
    ir_graph *g = sample_graph(text);
    int64_t f;
    ck_assert(ir_node_flops(g->nodes[0], &f));
    ir_graph_destroy(g);
    return f;
}

/* The layout pass's ConvNCHWc counts as the Conv it replaces; Attention
 * as its two matmuls and the softmax between them. */
START_TEST(internal_and_fused_ops_count_their_flops)
{
    /* 2 * 128 outputs * 72 weights per output channel */
    int64_t conv = flops_of("graph @g(%x: f32[1,8,4,4], %w: f32[8,8,3,3]) -> (%y) {\n"
                            "  %y = Conv(%x, %w) {pads = [1, 1, 1, 1]}\n}\n");
    ck_assert_int_eq(conv, 18432);
    ck_assert_int_eq(flops_of("graph @g(%x: f32[1,1,4,4,8], %w: f32[1,1,3,3,8,8]) -> (%y) {\n"
                              "  %y = ConvNCHWc(%x, %w) {pads = [1, 1, 1, 1]}\n}\n"), conv);
    /* an image input read as 1-channel blocks: C = 3 */
    ck_assert_int_eq(flops_of("graph @g(%x: f32[1,3,4,4], %w: f32[8,3,3,3]) -> (%y) {\n"
                              "  %y = Conv(%x, %w) {pads = [1, 1, 1, 1]}\n}\n"),
                     flops_of("graph @g(%x: f32[1,3,4,4,1], %w: f32[1,3,3,3,1,8]) -> (%y) {\n"
                              "  %y = ConvNCHWc(%x, %w) {pads = [1, 1, 1, 1]}\n}\n"));
    /* Q K^T: [1,2,4,6] * 8 * 2; P V: [1,2,4,8] * 6 * 2; softmax 4 * 48 */
    int64_t qk = flops_of("graph @g(%q: f32[1,2,4,8], %k: f32[1,2,8,6]) -> (%y) {\n  %y = MatMul(%q, %k)\n}\n");
    int64_t sm = flops_of("graph @g(%s: f32[1,2,4,6]) -> (%y) {\n  %y = Softmax(%s)\n}\n");
    int64_t pv = flops_of("graph @g(%p: f32[1,2,4,6], %v: f32[1,2,6,8]) -> (%y) {\n  %y = MatMul(%p, %v)\n}\n");
    ck_assert_int_eq(flops_of(samples[12].text), qk + sm + pv);
    ck_assert_int_eq(qk + sm + pv, 768 + 192 + 768);
    /* the same with 3-D operands and 2 heads */
    ck_assert_int_eq(flops_of("graph @g(%q: f32[1,4,16], %k: f32[1,6,16], %v: f32[1,6,16]) -> (%y) {\n"
                              "  %y = Attention(%q, %k, %v) {q_num_heads = 2, kv_num_heads = 2}\n}\n"),
                     qk + sm + pv);
    /* Einsum as the MatMul it spells */
    ck_assert_int_eq(flops_of(samples[11].text),
                     flops_of("graph @g(%a: f32[2,3], %b: f32[3,4]) -> (%y) {\n  %y = MatMul(%a, %b)\n}\n"));
}
END_TEST

/* Ops only passes make are not ONNX ops, whatever the model says. */
START_TEST(frontend_refuses_internal_ops)
{
    int internal = 0;
    for (int op = 0; op < IR_OP_COUNT; op++) {
        if (!has(op, IR_F_INTERNAL))
            continue;
        internal++;
        Onnx__ModelProto *m = new_model(13);
        char ins[256] = "", name[16], want[96];
        for (int i = 0; i < ir_ops[op].min_in; i++) {
            snprintf(name, sizeof name, "x%d", i);
            add_input(m, name, F32, "1");
            snprintf(ins + strlen(ins), sizeof ins - strlen(ins), "%s%s", i ? "," : "", name);
        }
        add_node(m, ir_ops[op].name, "n", ins, "y");
        add_output(m, "y", F32, "1");
        size_t len;
        uint8_t *bytes = pack(m, &len);
        icc_diag d = {{0}};
        ir_graph *g = icc_onnx_load_buffer(bytes, len, NULL, "m.onnx", &d);
        ck_assert_ptr_null(g);
        snprintf(want, sizeof want, "unsupported op: %s", ir_ops[op].name);
        ck_assert_msg(strstr(d.msg, want), "%s", d.msg);
        tfree();
    }
    ck_assert_int_ge(internal, 1);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("registry");
    TCase *tc = tcase_create("registry");
    tcase_add_test(tc, every_row_is_consistent);
    tcase_add_test(tc, families_claim_their_own_ops);
    tcase_add_test(tc, internal_and_fused_ops_count_their_flops);
    tcase_add_test(tc, frontend_refuses_internal_ops);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return icc_run_suite(suite());
}
