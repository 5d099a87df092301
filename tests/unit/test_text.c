/* test_text.c - the textual IR (docs/ir.md): hand-written texts print back
 * as written, graphs built in C survive print -> parse -> print with the
 * same text and the same structure, malformed texts fail with located
 * one-line messages, and floats of every dtype round-trip bit-exactly. */
#include "check_main.h"
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ops.h"
#include "ir/text.h"

/* ---- helpers ------------------------------------------------------------- */

/* Parses from an exact-size heap copy, so a read past len is caught by
 * the sanitizer build. */
static ir_graph *parse_n(const char *text, size_t len, icc_diag *d)
{
    char *copy = malloc(len ? len : 1);
    ck_assert_ptr_nonnull(copy);
    memcpy(copy, text, len);
    ir_graph *g = ir_parse(copy, len, "t.icc", d);
    free(copy);
    return g;
}

static ir_graph *parse_ok(const char *text)
{
    icc_diag d = {{0}};
    ir_graph *g = parse_n(text, strlen(text), &d);
    ck_assert_msg(g != NULL, "parse failed: %s\n%s", d.msg, text);
    return g;
}

static char *print(const ir_graph *g)
{
    size_t n;
    char *s = ir_print_string(g, &n);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(strlen(s), n);
    return s;
}

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static void assert_float_same(float a, float b)
{
    if (isnan(a))
        ck_assert(isnan(b) && !signbit(a) == !signbit(b));
    else
        ck_assert_msg(f2u(a) == f2u(b), "float %08x != %08x", f2u(a), f2u(b));
}

static void assert_type_same(const ir_graph *ga, const ir_type *a, const ir_graph *gb,
                             const ir_type *b)
{
    ck_assert_int_eq(a->dtype, b->dtype);
    ck_assert_int_eq(a->rank, b->rank);
    for (int i = 0; i < a->rank; i++) {
        ir_dim x = a->dims[i], y = b->dims[i];
        ck_assert_int_eq(x.sym, y.sym);
        if (x.sym == 0)
            ck_assert_int_eq(x.v, y.v);
        else if (x.sym > 0)
            ck_assert_str_eq(ir_graph_sym_name(ga, x.sym), ir_graph_sym_name(gb, y.sym));
    }
}

static void assert_tensor_same(const ir_tensor *a, const ir_tensor *b)
{
    ck_assert_int_eq(a->dtype, b->dtype);
    ck_assert_int_eq(a->rank, b->rank);
    for (int i = 0; i < a->rank; i++)
        ck_assert_int_eq(a->dims[i], b->dims[i]);
    ck_assert_uint_eq(a->nbytes, b->nbytes);
    if (a->nbytes)
        ck_assert(!memcmp(a->data, b->data, a->nbytes));
}

static void assert_graph_same(const ir_graph *a, const ir_graph *b);

static void assert_attr_same(const ir_attr *a, const ir_attr *b)
{
    ck_assert_str_eq(a->name, b->name);
    ck_assert_int_eq(a->kind, b->kind);
    switch (a->kind) {
    case IR_ATTR_INT: ck_assert_int_eq(a->i, b->i); break;
    case IR_ATTR_FLOAT: assert_float_same(a->f, b->f); break;
    case IR_ATTR_STRING: ck_assert_str_eq(a->s, b->s); break;
    case IR_ATTR_TENSOR: assert_tensor_same(a->tensor, b->tensor); break;
    case IR_ATTR_GRAPH: assert_graph_same(a->graph, b->graph); break;
    default:
        ck_assert_int_eq(a->n, b->n);
        for (int i = 0; i < a->n; i++) {
            if (a->kind == IR_ATTR_INTS)
                ck_assert_int_eq(a->ints[i], b->ints[i]);
            else if (a->kind == IR_ATTR_FLOATS)
                assert_float_same(a->floats[i], b->floats[i]);
            else
                ck_assert_str_eq(a->strings[i], b->strings[i]);
        }
    }
}

static const ir_value *find_value(const ir_graph *g, const char *name)
{
    for (int i = 0; i < g->nvalues; i++)
        if (!strcmp(g->values[i]->name, name))
            return g->values[i];
    return NULL;
}

/* Same graph up to value numbering: names, symbols (in order), inputs,
 * outputs, nodes, attributes and constant bytes. */
static void assert_graph_same(const ir_graph *a, const ir_graph *b)
{
    ck_assert_str_eq(a->name, b->name);
    ck_assert_int_eq(a->nsyms > 1 ? a->nsyms : 1, b->nsyms > 1 ? b->nsyms : 1);
    for (int i = 1; i < a->nsyms; i++)
        ck_assert_str_eq(a->syms[i], b->syms[i]);
    ck_assert_int_eq(a->ninputs, b->ninputs);
    for (int i = 0; i < a->ninputs; i++) {
        ck_assert_str_eq(a->inputs[i]->name, b->inputs[i]->name);
        assert_type_same(a, &a->inputs[i]->type, b, &b->inputs[i]->type);
    }
    ck_assert_int_eq(a->noutputs, b->noutputs);
    for (int i = 0; i < a->noutputs; i++)
        ck_assert_str_eq(a->outputs[i]->name, b->outputs[i]->name);
    ck_assert_int_eq(a->nnodes, b->nnodes);
    for (int k = 0; k < a->nnodes; k++) {
        const ir_node *x = a->nodes[k], *y = b->nodes[k];
        ck_assert_int_eq(x->op, y->op);
        ck_assert_str_eq(x->name, y->name);
        ck_assert_int_eq(x->nin, y->nin);
        ck_assert_int_eq(x->ncap, y->ncap);
        for (int i = 0; i < x->nin; i++) {
            ck_assert_int_eq(!x->in[i], !y->in[i]);
            if (x->in[i])
                ck_assert_str_eq(x->in[i]->name, y->in[i]->name);
        }
        ck_assert_int_eq(x->nout, y->nout);
        for (int i = 0; i < x->nout; i++) {
            ck_assert_str_eq(x->out[i]->name, y->out[i]->name);
            assert_type_same(a, &x->out[i]->type, b, &y->out[i]->type);
        }
        ck_assert_int_eq(x->nattr, y->nattr);
        for (int i = 0; i < x->nattr; i++)
            assert_attr_same(&x->attrs[i], &y->attrs[i]);
    }
    int nc = 0;
    for (int i = 0; i < a->nvalues; i++) {
        const ir_value *v = a->values[i];
        if (v->kind != IR_VAL_CONST)
            continue;
        nc++;
        const ir_value *w = find_value(b, v->name);
        ck_assert_ptr_nonnull(w);
        ck_assert_int_eq(w->kind, IR_VAL_CONST);
        assert_type_same(a, &v->type, b, &w->type);
        assert_tensor_same(&v->cval, &w->cval);
    }
    for (int i = 0; i < b->nvalues; i++)
        nc -= b->values[i]->kind == IR_VAL_CONST;
    ck_assert_int_eq(nc, 0);
}

/* print -> parse -> print: same text, same graph. Returns the text. */
static char *roundtrip(const ir_graph *g)
{
    icc_diag d;
    ck_assert_msg(ir_verify(g, &d) == 0, "%s", d.msg);
    char *t1 = print(g);
    ir_graph *g2 = parse_ok(t1);
    char *t2 = print(g2);
    ck_assert_str_eq(t1, t2);
    assert_graph_same(g, g2);
    free(t2);
    ir_graph_destroy(g2);
    return t1;
}

/* ---- hand-written texts -------------------------------------------------- */

/* Canonical texts: each prints back byte for byte. */
static const char *const canonical[] = {
    "graph @g() -> () {\n}\n",

    "graph @mlp<N>(%x: f32[N,4]) -> (%y) {\n"
    "  %w0 = const f32[4,8] @0\n"
    "  %b0 = const f32[4] [0.5, -1.0, 0.1, 1e-45]\n"
    "  %h0 = MatMul(%x, %w0) : f32[N,8]\n"
    "  %h1 = Relu(%h0) : f32[N,8]\n"
    "  %a, %b = Split(%h1, _) {axis = 1, num_outputs = 2} : f32[N,4], f32[N,4]\n"
    "  %h2 = Add(%a, %b0) : f32[N,4]\n"
    "  %y = Relu(%h2) \"relu1\" : f32[N,4]\n"
    "}\n"
    "data @0 = hex\"000000000000803f0000004000004040000080400000a0400000c0400000e040"
    "0000004100001041000020410000304100004041000050410000604100007041"
    "0000804100008841000090410000984100000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000\"\n",

    /* names that need quotes, symbols, unknown dims and rank, scalars */
    "graph @\"tf model\"<batch, \"seq len\", \"12\", unused>(%\"input:0\": f32[batch,\"seq len\",\"12\"], "
    "%mask: bool[*], %s: i64[]) -> (%\"output:0\", %mask, %k, %\"output:0\") {\n"
    "  %/enc/Shape_output_0 = Shape(%\"input:0\") : i64[3]\n"
    "  %\"output:0\" = Identity(%\"input:0\") \"node \\\"q\\\"\\\\ \\x01\\x7f\\xff \xc3\xa9\\t\\n\" : f32[batch,?,12]\n"
    "  %_ = Not(%mask) : ?[*]\n"
    "  %\"\" = Identity(%s) : i64[]\n"
    "  %k = const i64[] [-9223372036854775808]\n"
    "}\n",

    /* every attribute kind the registry uses; omitted inputs */
    "graph @attrs(%x: f32[1,2,4,4], %shape: i64[2], %sizes: i64[4]) -> (%y, %z, %r) {\n"
    "  %w = const f32[2,2,1,1] [1.0, 0.0, 0.0, 1.0]\n"
    "  %y = Conv(%x, %w, _) {auto_pad = \"NOTSET\", dilations = [], group = 1, pads = [0, 0, 0, 0]} : f32[1,2,4,4]\n"
    "  %z = ConstantOfShape(%shape) {value = f16[1] [0.1]} : f16[?,?]\n"
    "  %z2 = ConstantOfShape(%shape) {value = f32[20] @0} : ?[*]\n"
    "  %r = Resize(%x, _, _, %sizes) {axes = [2, 3], cubic_coeff_a = -0.75, extrapolation_value = -inf, mode = \"linear\"} : f32[1,2,?,?]\n"
    "  %l = LeakyRelu(%x) {alpha = 3.4028235e+38} : f32[1,2,4,4]\n"
    "  %e = Einsum(%x) {equation = \"ijkl->lkji\"} : f32[4,4,2,1]\n"
    "}\n"
    "data @0 = hex\"0000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000\"\n",

    /* constants of every dtype, inline */
    "graph @dtypes() -> (%a, %b, %c, %d, %e, %f, %g, %h, %i, %j, %k, %l, %m) {\n"
    "  %a = const f32[2] [1.5, -0.0]\n"
    "  %b = const u8[2] [0, 255]\n"
    "  %c = const i8[2] [-128, 127]\n"
    "  %d = const u16[2] [0, 65535]\n"
    "  %e = const i16[2] [-32768, 32767]\n"
    "  %f = const i32[2] [-2147483648, 2147483647]\n"
    "  %g = const i64[2] [-9223372036854775808, 9223372036854775807]\n"
    "  %h = const bool[3] [true, false, true]\n"
    "  %i = const f16[4] [0.1, 65504.0, 6e-08, -inf]\n"
    "  %j = const f64[3] [0.1, 1e+300, 5e-324]\n"
    "  %k = const u32[1] [4294967295]\n"
    "  %l = const u64[1] [18446744073709551615]\n"
    "  %m = const bf16[3] [0.1, 3.39e+38, nan]\n"
    "  %empty = const f32[0,3] []\n"
    "}\n",

    /* a tensor attribute and a constant sharing the data section */
    "graph @blobs(%s: i64[1]) -> (%y) {\n"
    "  %y = ConstantOfShape(%s) {value = bool[1] @0} : bool[?]\n"
    "  %w = const u8[17] @1\n"
    "}\n"
    "data @0 = hex\"02\"\n"
    "data @1 = hex\"000102030405060708090a0b0c0d0e0f10\"\n",
    /* fused groups (ids kept, members in node order by their first
     * output), then the memory plan */
    "graph @fused(%x: f32[4], %b: f32[4]) -> (%y, %z) {\n"
    "  %a = Add(%x, %b) : f32[4]\n"
    "  %r = Relu(%a) : f32[4]\n"
    "  %y = Neg(%r) : f32[4]\n"
    "  %p, %q = Split(%x, _) {axis = 0, num_outputs = 2} : f32[2], f32[2]\n"
    "  %e = Exp(%p) : f32[2]\n"
    "  %z = Abs(%e) : f32[2]\n"
    "}\n"
    "groups {\n"
    "  2 = [%a, %r, %y]\n"
    "  7 = [%p, %e, %z]\n"
    "}\n"
    "plan {\n"
    "  %p = 0\n"
    "  %q = 64\n"
    "}\n",

    /* subgraphs: a Loop whose body holds an If; captures after '|', each
     * subgraph taking them as its last inputs; a body's symbols are its
     * own; payloads of every level share one data section */
    "graph @cf<N>(%m: i64[], %x: f32[N], %s: f32[]) -> (%acc, %ys) {\n"
    "  %t = const bool[] [true]\n"
    "  %acc, %ys = Loop(%m, %t, %x | %s) {body = graph @body<N>(%i: i64[], %c: bool[], %a: f32[N], %s: f32[]) -> (%c, %a2, %a2) {\n"
    "    %z = const i64[] [0]\n"
    "    %odd = Greater(%i, %z) : bool[]\n"
    "    %a2 = If(%odd | %a, %s) {else_branch = graph @e<N>(%a: f32[N], %s: f32[]) -> (%a) {\n"
    "    }, then_branch = graph @t<N>(%a: f32[N], %s: f32[]) -> (%r) {\n"
    "      %big = const f32[20] @0\n"
    "      %r = Add(%a, %s) : f32[N]\n"
    "    }} : f32[N]\n"
    "  }} : f32[N], f32[?,N]\n"
    "}\n"
    "data @0 = hex\"" "0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f"
    "0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f\"\n",

    /* derived symbols keep their definitions */
    "graph @g<H, \"H-2\" = add(H, -2), \"floor((H-2)/2)\" = floordiv(\"H-2\", 2), "
    "\"floor((H-2)/2)+1\" = add(\"floor((H-2)/2)\", 1), \"H*H\" = mul(H, H), c = ceildiv(H, 3)>"
    "(%x: f32[1,3,H,8]) -> (%p) {\n"
    "  %p = MaxPool(%x) {kernel_shape = [2, 2], strides = [2, 2]} : f32[1,3,\"floor((H-2)/2)+1\",4]\n"
    "}\n",
};

START_TEST(canonical_texts_print_back)
{
    for (size_t i = 0; i < sizeof canonical / sizeof *canonical; i++) {
        ir_graph *g = parse_ok(canonical[i]);
        char *t = print(g);
        ck_assert_msg(!strcmp(t, canonical[i]), "text %zu printed as\n%s", i, t);
        free(roundtrip(g));
        free(t);
        ir_graph_destroy(g);
    }
}
END_TEST

/* Accepted spellings that print differently: each pair is (written,
 * printed). */
static const char *const normalized[][2] = {
    {"# a comment\n graph   @g ( ) ->( ){ }  # trailing\n", "graph @g() -> () {\n}\n"},
    {"graph @g(%x: f32[2]) -> (%y) { %y = LeakyRelu(%x) {alpha = 1} }",
     "graph @g(%x: f32[2]) -> (%y) {\n  %y = LeakyRelu(%x) {alpha = 1.0} : ?[*]\n}\n"},
    {"graph @g() -> (%c) { %c = const f32[2] hex\"0000 803f\n 0000 0040\" }",
     "graph @g() -> (%c) {\n  %c = const f32[2] [1.0, 2.0]\n}\n"},
    {"graph @g() -> (%c) { %c = const f32[2] [1, 2e0] }",
     "graph @g() -> (%c) {\n  %c = const f32[2] [1.0, 2.0]\n}\n"},
    {"graph @g() -> (%c) { %c = const bool[2] [1, 0] }",
     "graph @g() -> (%c) {\n  %c = const bool[2] [true, false]\n}\n"},
    {"graph @g() -> (%c) { %c = const f32[1] [0.100000001] }",
     "graph @g() -> (%c) {\n  %c = const f32[1] [0.1]\n}\n"},
    {"graph @g() -> (%c) { %c = const u8[1] @7 } data @7 = hex\"2A\"",
     "graph @g() -> (%c) {\n  %c = const u8[1] [42]\n}\n"},
    {"graph @\"g\"(%\"x\": f32[\"N\"]) -> (%\"x\") {}", "graph @g<N>(%x: f32[N]) -> (%x) {\n}\n"},
    {"graph @g() -> (%c) { %c = const f32[20] @1 %d = const u8[20] @0 }\n"
     "data @0 = hex\"0000000000000000000000000000000000000000\"\n"
     "data @1 = hex\"" "0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f"
     "0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f\"",
     "graph @g() -> (%c) {\n  %c = const f32[20] @0\n  %d = const u8[20] @1\n}\n"
     "data @0 = hex\"" "0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f"
     "0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f\"\n"
     "data @1 = hex\"0000000000000000000000000000000000000000\"\n"},
    {"graph @g() -> () {\r\n}\r\n# no newline at the end", "graph @g() -> () {\n}\n"},
    {"graph @g(%x: f32[2]) -> (%y) { %y = Relu(%x) \"\" : f32[2] }",
     "graph @g(%x: f32[2]) -> (%y) {\n  %y = Relu(%x) : f32[2]\n}\n"},
    {"graph @g(%x: f32[-0]) -> () {}", "graph @g(%x: f32[0]) -> () {\n}\n"},
    {"graph @g(%x: f32[2]) -> (%y) { %a = Neg(%x) %y = Relu(%a) } groups { 5 = [%y, %a] }",
     "graph @g(%x: f32[2]) -> (%y) {\n  %a = Neg(%x) : ?[*]\n  %y = Relu(%a) : ?[*]\n}\ngroups {\n  5 = [%a, %y]\n}\n"},
    {"graph @g(%x:f32[2])->(%y){%y=Relu(%x)\"\\x41\\X\":f32[2]}",
     NULL /* an error, see malformed */},
};

START_TEST(accepted_spellings_normalize)
{
    for (size_t i = 0; i < sizeof normalized / sizeof *normalized; i++) {
        if (!normalized[i][1])
            continue;
        ir_graph *g = parse_ok(normalized[i][0]);
        char *t = print(g);
        ck_assert_msg(!strcmp(t, normalized[i][1]), "text %zu printed as\n%s", i, t);
        free(roundtrip(g));
        free(t);
        ir_graph_destroy(g);
    }
}
END_TEST

/* ---- malformed texts ----------------------------------------------------- */

#define HDR "graph @g(%x: f32[2]) -> (%y) {\n"
#define SP10 "          "
#define SP80 SP10 SP10 SP10 SP10 SP10 SP10 SP10 SP10

static const struct {
    const char *text;
    const char *msg;
} malformed[] = {
    {"", "t.icc:1:1: expected 'graph'"},
    {"graf @g() -> () {}", "t.icc:1:1: expected 'graph'"},
    {"graph g() -> () {}", "t.icc:1:7: expected the graph name (@name)"},
    {"graph @g() -> () {", "t.icc:1:19: expected '}'"},
    {"graph @g() -> () {}}", "t.icc:1:20: expected 'plan', 'data' or the end of the text"},
    {"graph @g() () {}", "t.icc:1:12: expected '->'"},
    {"graph @g<a = add(b, 1)>() -> () {}", "t.icc:1:18: a symbol's definition names a symbol not declared before it"},
    {"graph @g<b, a = floordiv(b, 0)>() -> () {}", "t.icc:1:13: floordiv and ceildiv divide by a constant > 0"},
    {"graph @g<b, a = sub(b, 1)>() -> () {}", "t.icc:1:17: expected add, mul, floordiv or ceildiv"},
    {"graph @g<b, a = add(b, 1), a = add(b, 2)>() -> () {}", "t.icc:1:28: symbol a is declared twice"},
    {HDR "  %a = Neg(%x) : f32[2]\n  %y = Relu(%a) : f32[2]\n}\ngroups { 1 = [%a, %y] 1 = [%x] }",
     "t.icc:5:23: group ids must be positive and increasing"},
    {HDR "  %a = Neg(%x) : f32[2]\n  %y = Relu(%a) : f32[2]\n}\ngroups { 0 = [%a] }",
     "t.icc:5:10: group ids must be positive and increasing"},
    {HDR "  %a = Neg(%x) : f32[2]\n  %y = Relu(%a) : f32[2]\n}\ngroups { 1 = [%a, %a] }",
     "t.icc:5:19: node is already in group 1"},
    {HDR "  %a = Neg(%x) : f32[2]\n  %y = Relu(%a) : f32[2]\n}\ngroups { 1 = [%x] }",
     "t.icc:5:15: only nodes can be grouped (this value is not a node's output)"},
    {HDR "  %a = Neg(%x) : f32[2]\n  %y = Relu(%a) : f32[2]\n}\ngroups { 1 = [] }",
     "t.icc:5:15: expected a node's output value in the group"},
    {HDR "  %a = Neg(%x) : f32[2]\n  %b = Relu(%a) : f32[2]\n  %y = Abs(%a) : f32[2]\n}\ngroups { 1 = [%a, %b] }",
     "t.icc: node '' (Neg): is inside fused group 1 but its output 'a' is used outside it (only the group's last "
     "node may have outside uses)"},
    {HDR "  %y = Relu(%x : f32[2]\n}", "t.icc:2:16: expected ',' or ')'"},
    {HDR "  %y = Foo(%x) : f32[2]\n}", "t.icc:2:8: unknown op Foo"},
    {HDR "  %y = Relu(%z) : f32[2]\n}", "t.icc:2:13: undefined value %z"},
    {HDR "  %y = Relu(%y) : f32[2]\n}", "t.icc:2:13: undefined value %y"},
    {HDR "  %y = Relu(%\"a:b\") : f32[2]\n}", "t.icc:2:13: undefined value %\"a:b\""},
    {HDR "  %x = Relu(%x) : f32[2]\n}", "t.icc:2:3: value %x is already defined"},
    {HDR "  %y, %y = Split(%x) {num_outputs = 2}\n}", "t.icc:2:7: value %y is already defined"},
    {"graph @g(%x: f32[2], %x: f32[2]) -> () {}", "t.icc:1:22: value %x is already defined"},
    {HDR "  %y = Relu(%x) {alpha = 1.0} : f32[2]\n}", "t.icc:2:18: Relu has no attribute alpha"},
    {HDR "  %y = LeakyRelu(%x) {alpha = 1.0, alpha = 2.0}\n}",
     "t.icc:2:36: attribute alpha is given twice"},
    {HDR "  %y = LeakyRelu(%x) {alpha = \"a\"}\n}", "t.icc:2:31: expected a number"},
    {HDR "  %y = Split(%x) {axis = 1.5, num_outputs = 1}\n}", "t.icc:2:26: expected an integer"},
    {HDR "  %y = Concat(%x)\n}", "t.icc:2:8: Concat needs attribute axis"},
    {HDR "  %y = Relu(%x, %x)\n}", "t.icc:2:8: Relu takes 1 input, not 2"},
    {HDR "  %y = Relu()\n}", "t.icc:2:8: Relu takes 1 input, not 0"},
    {HDR "  %y = Relu(_)\n}", "t.icc:2:13: input 0 of Relu is required"},
    {HDR "  %y, %z = Relu(%x)\n}", "t.icc:2:12: Relu has 1 output, not 2"},
    {HDR "  %y = Not(%x)\n}", "t.icc:2:8: Not does not take input dtype f32 (it takes bool)"},
    {HDR "  %y = Relu(%x) : f32[2], f32[2]\n}", "t.icc:2:27: Relu has 1 output but more types are given"},
    {HDR "  %y = Relu(%x) :\n}", "t.icc:3:1: expected a type"},
    {HDR "  %a, %b = Split(%x) {num_outputs = 2} : f32[1]\n}", "t.icc:2:40: Split has 2 outputs but 1 type is given"},
    {"graph @g(%x: f32[1,2,3,4,5,6,7,8,9]) -> () {}", "t.icc:1:34: rank exceeds the maximum of 8"},
    {"graph @g(%x: f33[2]) -> () {}", "t.icc:1:14: unknown dtype f33"},
    {"graph @g(%x: f32[-1]) -> () {}", "t.icc:1:18: dims are >= 0 (write ? for an unknown dim)"},
    {"graph @g(%x: f32[99999999999999999999]) -> () {}", "t.icc:1:18: integer out of range"},
    {"graph @g(%x: f32[2.5]) -> () {}", "t.icc:1:18: expected an integer"},
    {"graph @g(%x: f32[2x]) -> () {}", "t.icc:1:19: expected ',' or ']'"},
    {"graph @g<N, N>() -> () {}", "t.icc:1:13: symbol N is declared twice"},
    {"graph @g() -> (%y) {}", "t.icc:1:16: graph output %y is never defined"},
    {"graph @g() -> () { %c = const f32[2] [1.0] }", "t.icc:1:38: 1 elements given; the type holds 2"},
    {"graph @g() -> () { %c = const f32[1] [1.0, 2.0] }", "t.icc:1:44: too many elements: the type holds 1"},
    {"graph @g() -> () { %c = const u8[1] [256] }", "t.icc:1:38: integer out of range for its dtype"},
    {"graph @g() -> () { %c = const i8[1] [-129] }", "t.icc:1:38: integer out of range for its dtype"},
    {"graph @g() -> () { %c = const u64[1] [-1] }", "t.icc:1:39: integer out of range for its dtype"},
    {"graph @g() -> () { %c = const bool[1] [2] }", "t.icc:1:40: expected true or false"},
    {"graph @g() -> () { %c = const i32[1] [1.0] }", "t.icc:1:39: expected an integer"},
    {"graph @g() -> () { %c = const f32[N] [1.0] }", "t.icc:1:31: a constant needs a dtype and constant dims"},
    {"graph @g() -> () { %c = const ?[1] [1.0] }", "t.icc:1:31: a constant needs a dtype and constant dims"},
    {"graph @g() -> () { %c, %d = const f32[1] [1.0] }", "t.icc:1:24: a constant defines exactly one value"},
    {"graph @g() -> () { %c = const f32[2] hex\"0000803f\" }", "t.icc:1:38: hex data has 4 bytes; the type needs 8"},
    {"graph @g() -> () { %c = const f32[1] hex\"0000803\" }", "t.icc:1:38: hex data has an odd number of digits"},
    {"graph @g() -> () { %c = const f32[1] hex\"0000803g\" }", "t.icc:1:49: hex data may hold only hex digits and spaces"},
    {"graph @g() -> () { %c = const f32[1] hex\"0000803f }", "t.icc:1:38: unterminated hex string"},
    {"graph @g() -> () { %c = const f32[2] @0 }\ndata @0 = hex\"0000803f\"",
     "t.icc:2:11: data @0 has 4 bytes; %c needs 8"},
    {"graph @g() -> () { %c = const u8[1] @0 }\ndata @1 = hex\"00\"", "t.icc:2:6: data @1 is not used"},
    {"graph @g() -> () { %c = const u8[1] @0 }\ndata @0 = hex\"00\"\ndata @0 = hex\"00\"",
     "t.icc:3:6: data @0 is defined twice"},
    {"graph @g() -> () { %c = const u8[1] @0 }    ", "t.icc:1:37: data @0 is never defined"},
    {"graph @g() -> () { %c = const u8[1] @0 %d = const u8[1] @0 }\ndata @0 = hex\"00\"",
     "t.icc:1:57: data @0 is used twice"},
    {"graph @g() -> () { %c = const u8[1] @x }", "t.icc:1:37: expected a data number (@0, @1, ...)"},
    {"graph @g() -> () { %c = const f32[1000000000] @0 }\ndata @0 = hex\"00\"",
     "t.icc:1:47: the text is too short to hold the 4000000000 bytes of data @0"},
    /* each reference alone would fit in the rest of the text, both do not */
    {"graph @g() -> () { %a = const u8[30] @0 %b = const u8[30] @1 }" SP80,
     "t.icc:1:59: the text is too short to hold the 30 bytes of data @1"},
    {"graph @g() -> () { %c = const f32[4096,4096,4096,4096] @0 }",
     "t.icc:1:31: tensor of 281474976710656 elements of f32 is too large"},
    {"graph @g() -> () { %c = const f32[1] 1.0 }", "t.icc:1:38: expected the data: [elements], hex\"...\" or @N"},
    {"graph @\"a\nb\"() -> () {}", "t.icc:1:10: control character in a string (write it as \\xNN)"},
    {"graph @\"a\\qb\"() -> () {}", "t.icc:1:10: unknown escape in string (known: \\n \\t \\r \\\" \\\\ \\xNN)"},
    {"graph @\"a\\x0\"() -> () {}", "t.icc:1:10: \\x needs two hex digits"},
    {"graph @\"a\\x00\"() -> () {}", "t.icc:1:10: \\x00 is not allowed in a string"},
    {"graph @\"abc", "t.icc:1:8: unterminated string"},
    {"graph @g() -> () { % = Relu() }", "t.icc:1:20: expected a name after '%'"},
    {"graph @g(%x: f32[2]) -> () { %y = Relu(%x) ; }", "t.icc:1:44: unexpected character \";\""},
    {"graph @g(%x: f32[2]) -> () { %y = Relu(%x) \x01 }", "t.icc:1:44: unexpected character \"\\x01\""},
    {"graph @g() -> () {\n  const f32[1] [1.0]\n}", "t.icc:2:3: expected a value name or '}'"},
    {"graph @g() -> () { %a, = const f32[1] [1.0] }", "t.icc:1:24: expected a value name"},
    {"graph @g() -> () { %a = 3 }", "t.icc:1:25: expected an op name or 'const'"},
    {"graph @g(%x: f32[2]) -> () { %y = Relu(| %x) }", "t.icc:1:40: Relu has no subgraphs to capture values"},
    {"graph @g(%c: bool[]) -> () { %y = If(%c |) }", "t.icc:1:42: expected a captured value after '|'"},
    {"graph @g(%c: bool[]) -> () { %y = If(%c) {then_branch = 1} }", "t.icc:1:57: expected a graph"},
    {"graph @g(%c: bool[], %x: f32[2]) -> (%y) { %y = If(%c | %x) {else_branch = graph @e() -> () {},"
     " then_branch = graph @t(%x: f32[2]) -> (%x) {}} }",
     "t.icc: node '' (If): else_branch has 0 inputs; expected 1 (0 formal, 1 captures)"},
    {"graph @g(%c: bool[], %x: f32[2]) -> (%y) { %y = If(%c | %x) {else_branch = graph @e(%x: f32[2]) -> (%x) {},"
     " then_branch = graph @t(%x: f32[2]) -> (%x) { %z = Relu(%w) }} }",
     "t.icc:1:164: undefined value %w"},
    {"graph @g(%c: bool[], %x: f32[2]) -> (%y) { %y = If(%c | %x) {else_branch = graph @e(%x: f32[2]) -> (%x) {},"
     " then_branch = graph @t(%x: i64[2]) -> (%x) {}} }",
     "t.icc: node '' (If): then_branch captures 'x' (f32) as 'x' of dtype i64"},
    {"graph @g(%x: f32[2], ) -> () {}", "t.icc:1:22: expected an input (%name: type)"},
    {"graph @g() -> (%x %y) {}", "t.icc:1:19: expected ',' or ')'"},
    {"graph @g(%x: f32[2]) -> () { %y = Transpose(%x) {perm = [1, 0,]} }", "t.icc:1:63: expected an integer"},
    {"graph @g(%x: f32[2]) -> () { %y = Gelu(%x) {approximate = tanh} }", "t.icc:1:59: expected a string"},
    {"graph @g(%x: f32[2]) -> () { %y = Gelu(%x) {approximate \"tanh\"} }", "t.icc:1:57: expected '='"},
    {"graph @g(%x: f32[2]) -> () { %y = Gelu(%x) {approximate = \"tanh\" \"x\"} }",
     "t.icc:1:66: expected ',' or '}'"},
    {"graph @g(%x: i64[1]) -> () { %y = ConstantOfShape(%x) {value = f32[N] [1.0]} }",
     "t.icc:1:64: a constant needs a dtype and constant dims"},
    {"graph @g(%x: f32[2]) -> () { %y = LeakyRelu(%x) {alpha = 1e} }", "t.icc:1:59: expected ',' or '}'"},
    {"graph @g(%x: f32[2]) -> () { %y = LeakyRelu(%x) {alpha = 1" "00000000000000000000000000000000000000000000000000"
     "00000000000000000000000000000000000000000000000000000000000000000000000000000000.0} }",
     "t.icc:1:58: number has too many digits"},
    {"graph @g(%x: f32[2]) -> () { %y = Split(%x) {axis = 9223372036854775808} }",
     "t.icc:1:53: integer out of range for its dtype"},
};

START_TEST(malformed_texts_fail_with_location)
{
    for (size_t i = 0; i < sizeof malformed / sizeof *malformed; i++) {
        icc_diag d = {{0}};
        const char *text = malformed[i].text;
        ir_graph *g = parse_n(text, strlen(text), &d);
        ck_assert_msg(g == NULL, "text %zu parsed:\n%s", i, text);
        ck_assert_msg(!strcmp(d.msg, malformed[i].msg), "text %zu:\n%s\ngave  \"%s\"\nwanted \"%s\"", i,
                      malformed[i].text, d.msg, malformed[i].msg);
        ck_assert(!strchr(d.msg, '\n'));
    }
}
END_TEST

/* Every prefix of a valid text fails cleanly (the input has no NUL). */
START_TEST(every_prefix_fails_cleanly)
{
    const char *t = canonical[3];
    size_t n = strlen(t);
    for (size_t k = 0; k < n; k++) {
        icc_diag d = {{0}};
        ir_graph *g = parse_n(t, k, &d);
        if (g) {
            /* only cuts inside the trailing data section's last newline */
            ck_assert_uint_ge(k, n - 1);
            ir_graph_destroy(g);
        } else
            ck_assert(!strncmp(d.msg, "t.icc:", 6));
    }
}
END_TEST

/* ---- graphs built in C --------------------------------------------------- */

static ir_value *input(ir_graph *g, const char *name, ir_type t)
{
    icc_diag d;
    ir_value *v = ir_graph_add_input(g, name, &t, &d);
    ck_assert_ptr_nonnull(v);
    return v;
}

static ir_value *constant(ir_graph *g, const char *name, ir_dtype dt, int64_t n, const void *data)
{
    icc_diag d;
    ir_type t = {dt, 1, {{n, 0}}};
    ir_value *v = ir_graph_add_const(g, name, &t, data, &d);
    ck_assert_msg(v != NULL, "%s", d.msg);
    return v;
}

static ir_node *node(ir_graph *g, int op, const char *name, int nin, ir_value **in, int nout,
                     const char *const *outs)
{
    icc_diag d;
    ir_node *n = ir_graph_add_node(g, op, name, nin, in, nout, outs, &d);
    ck_assert_ptr_nonnull(n);
    return n;
}

/* Fills n elements of dtype dt with values that exercise the printer:
 * fractions, negatives, extremes. */
static void fill(ir_dtype dt, void *p, int64_t n, unsigned seed)
{
    ir_tensor t = {dt, 1, {n}, n, (size_t)n * ir_dtype_size(dt), p};
    for (int64_t i = 0; i < n; i++) {
        double v = ((double)(i * 37 + seed) - 20) / 7.0;
        if (ir_dtype_is_float(dt))
            ir_tensor_setf(&t, i, i % 5 == 4 ? v * 1e30 : v);
        else
            ir_tensor_seti(&t, i, (int64_t)(i * 0x9e3779b97f4a7c15ull + seed));
    }
}

START_TEST(every_dtype_inline_and_hex)
{
    ir_graph *g = ir_graph_create("dtypes");
    for (int dt = 1; dt < IR_DTYPE_COUNT; dt++) {
        for (int k = 0; k < 3; k++) {
            int64_t n = k == 0 ? 3 : k == 1 ? 16 : 40;
            unsigned char buf[40 * 8];
            char name[32];
            fill((ir_dtype)dt, buf, n, (unsigned)dt);
            snprintf(name, sizeof name, "%s_%d", ir_dtype_name((ir_dtype)dt), k);
            constant(g, name, (ir_dtype)dt, n, buf);
        }
    }
    char *t = roundtrip(g);
    /* small payloads inline, big ones in the data section */
    ck_assert_ptr_nonnull(strstr(t, "%i8_0 = const i8[3] ["));
    ck_assert_ptr_nonnull(strstr(t, "%bf16_0 = const bf16[3] ["));
    ck_assert_ptr_nonnull(strstr(t, "%f64_2 = const f64[40] @"));
    ck_assert_ptr_nonnull(strstr(t, "%bool_1 = const bool[16] [true, "));
    free(t);
    ir_graph_destroy(g);
}
END_TEST

START_TEST(everything_round_trips)
{
    ir_graph *g = ir_graph_create("every thing \"quoted\"");
    int32_t N = ir_graph_sym(g, "N", 1), S = ir_graph_sym(g, "seq len", 7);
    int32_t D = ir_graph_sym(g, "12", 2);
    ir_graph_sym(g, "unused", 6);
    ir_value *x = input(g, "input:0", (ir_type){IR_F32, 3, {{0, N}, {0, S}, {0, D}}});
    ir_value *m = input(g, "/m/mask", (ir_type){IR_BOOL, IR_RANK_UNKNOWN, {{0, 0}}});
    ir_value *s = input(g, "shape", (ir_type){IR_I64, 1, {{2, 0}}});
    ir_value *sc = input(g, "scalar", (ir_type){IR_F32, 0, {{0, 0}}});
    input(g, "u", (ir_type){IR_UNDEF, IR_RANK_UNKNOWN, {{0, 0}}});

    char all[256];
    for (int i = 1; i < 256; i++)
        all[i - 1] = (char)i;
    all[255] = 0;
    ir_node *r = node(g, IR_OP_RELU, all, 1, &x, 1, (const char *[]){""});
    r->out[0]->type = x->type;

    const char *outs[] = {"a", "b"};
    ir_node *sp = node(g, IR_OP_SPLIT, "split \xe2\x82\xac", 2, (ir_value *[]){r->out[0], NULL}, 2, outs);
    ir_node_set_int(g, sp, "axis", -1);
    ir_node_set_int(g, sp, "num_outputs", 2);
    sp->out[0]->type = (ir_type){IR_F32, 3, {{0, N}, {0, IR_DIM_UNKNOWN}, {6, 0}}};
    /* sp->out[1] keeps the unknown type */

    ir_node *lr = node(g, IR_OP_LEAKY_RELU, "", 1, &sp->out[0], 1, (const char *[]){"lr.out-1"});
    ir_node_set_float(g, lr, "alpha", 0.1f);
    lr->out[0]->type.dtype = IR_F32;

    ir_node *cv = node(g, IR_OP_CONV, NULL, 3, (ir_value *[]){x, x, NULL}, 1, NULL);
    ir_node_set_string(g, cv, "auto_pad", "SAME_UPPER");
    ir_node_set_ints(g, cv, "dilations", NULL, 0);
    ir_node_set_ints(g, cv, "pads", (const int64_t[]){INT64_MIN, INT64_MAX, 0, -1}, 4);
    ir_node_set_int(g, cv, "group", 1);

    ir_node *gl = node(g, IR_OP_GELU, "g", 1, &x, 1, (const char *[]){"gelu"});
    ir_node_set_string(g, gl, "approximate", "");

    ir_tensor small = {IR_F16, 1, {2}, 2, 4, (uint16_t[]){0x3c00, 0x8001}};
    ir_node *cs = node(g, IR_OP_CONSTANT_OF_SHAPE, "cs", 1, &s, 1, (const char *[]){"filled"});
    ir_node_set_tensor(g, cs, "value", &small);
    int32_t big[100];
    for (int i = 0; i < 100; i++)
        big[i] = i * i - 50;
    ir_tensor bigt = {IR_I32, 2, {10, 10}, 100, 400, big};
    ir_node *cs2 = node(g, IR_OP_CONSTANT_OF_SHAPE, "cs2", 1, &s, 1, NULL);
    ir_node_set_tensor(g, cs2, "value", &bigt);

    ir_node *nt = node(g, IR_OP_NOT, "", 1, &m, 1, (const char *[]){"_"});
    (void)nt;
    ir_node *id = node(g, IR_OP_IDENTITY, "", 1, &sc, 1, (const char *[]){"0"});
    id->out[0]->type = sc->type;

    ir_value *c = constant(g, "c:0", IR_F32, 2, (float[]){1.0f, -0.0f});
    ir_node *ad = node(g, IR_OP_ADD, "", 2, (ir_value *[]){lr->out[0], c}, 1, (const char *[]){"sum"});
    ir_value *tail = constant(g, "tail const", IR_U8, 0, NULL);

    icc_diag d;
    ir_graph_add_output(g, ad->out[0], &d);
    ir_graph_add_output(g, x, &d);     /* an input */
    ir_graph_add_output(g, c, &d);     /* a constant */
    ir_graph_add_output(g, tail, &d);
    ir_graph_add_output(g, ad->out[0], &d); /* twice */
    ir_graph_add_output(g, sp->out[1], &d);

    char *t = roundtrip(g);
    ck_assert_ptr_nonnull(strstr(t, "graph @\"every thing \\\"quoted\\\"\"<N, \"seq len\", \"12\", unused>("
                                    "%\"input:0\": f32[N,\"seq len\",\"12\"], %/m/mask: bool[*], "
                                    "%shape: i64[2], %scalar: f32[], %u: ?[*]) -> "
                                    "(%sum, %\"input:0\", %\"c:0\", %\"tail const\", %sum, %b) {\n"));
    ck_assert_ptr_nonnull(strstr(t, "  %\"\" = Relu(%\"input:0\") \"\\x01\\x02"));
    ck_assert_ptr_nonnull(strstr(t, "\\x1f !\\\"#$%&'()*+,-./0123456789"));
    ck_assert_ptr_nonnull(strstr(t, "[\\\\]^_`abc"));
    ck_assert_ptr_nonnull(strstr(t, "|}~\\x7f\\x80\\x81"));
    ck_assert_ptr_nonnull(strstr(t, "  %a, %b = Split(%\"\", _) {axis = -1, num_outputs = 2} "
                                    "\"split \xe2\x82\xac\" : f32[N,?,6], ?[*]\n"));
    ck_assert_ptr_nonnull(strstr(t, "  %lr.out-1 = LeakyRelu(%a) {alpha = 0.1} : f32[*]\n"));
    ck_assert_ptr_nonnull(strstr(t, "{auto_pad = \"SAME_UPPER\", dilations = [], "
                                    "pads = [-9223372036854775808, 9223372036854775807, 0, -1], group = 1}"));
    ck_assert_ptr_nonnull(strstr(t, "{value = f16[2] [1.0, -6e-08]} \"cs\""));
    ck_assert_ptr_nonnull(strstr(t, "{value = i32[10,10] @0} \"cs2\""));
    ck_assert_ptr_nonnull(strstr(t, "  %_ = Not(%/m/mask) : ?[*]\n"));
    ck_assert_ptr_nonnull(strstr(t, "  %0 = Identity(%scalar) : f32[]\n"));
    ck_assert_ptr_nonnull(strstr(t, "  %\"c:0\" = const f32[2] [1.0, -0.0]\n  %sum = Add(%lr.out-1, %\"c:0\")"));
    ck_assert_ptr_nonnull(strstr(t, "  %\"tail const\" = const u8[0] []\n}\ndata @0 = hex\"ceffffff"));
    free(t);
    ir_graph_destroy(g);
}
END_TEST

/* Attribute kinds no op schema uses yet still print (for debugging); the
 * parser rejects them as unknown attributes of the op. */
START_TEST(list_kinds_print)
{
    ir_graph *g = ir_graph_create("g");
    ir_value *x = input(g, "x", (ir_type){IR_F32, 1, {{2, 0}}});
    ir_node *n = node(g, IR_OP_RELU, "", 1, &x, 1, (const char *[]){"y"});
    ir_node_set_floats(g, n, "fs", (const float[]){0.5f, -2.0f, INFINITY}, 3);
    ir_node_set_floats(g, n, "nofs", NULL, 0);
    ir_node_set_strings(g, n, "ss", (const char *const[]){"a", "b\"c", ""}, 3);
    ir_node_set_strings(g, n, "weird name", NULL, 0);
    char *t = print(g);
    ck_assert_str_eq(t, "graph @g(%x: f32[2]) -> () {\n"
                        "  %y = Relu(%x) {fs = [0.5, -2.0, inf], nofs = [], ss = [\"a\", \"b\\\"c\", \"\"], "
                        "\"weird name\" = []} : ?[*]\n}\n");
    icc_diag d;
    ck_assert_ptr_null(ir_parse(t, strlen(t), "t.icc", &d));
    ck_assert_str_eq(d.msg, "t.icc:2:18: Relu has no attribute fs");
    free(t);
    ir_graph_destroy(g);
}
END_TEST

/* A pass may create a constant after the node that uses it; the printer
 * still writes it before its first use. */
START_TEST(late_constant_printed_before_use)
{
    ir_graph *g = ir_graph_create("g");
    ir_value *x = input(g, "x", (ir_type){IR_F32, 1, {{2, 0}}});
    ir_node *a = node(g, IR_OP_ADD, "", 2, (ir_value *[]){x, x}, 1, (const char *[]){"a"});
    ir_node *b = node(g, IR_OP_RELU, "", 1, &a->out[0], 1, (const char *[]){"b"});
    ir_value *early = constant(g, "early", IR_F32, 1, (float[]){2.0f});
    ir_value *late = constant(g, "late", IR_F32, 1, (float[]){3.0f});
    a->in[1] = late;
    (void)b;
    (void)early;
    char *t = roundtrip(g);
    ck_assert_str_eq(t, "graph @g(%x: f32[2]) -> () {\n"
                        "  %late = const f32[1] [3.0]\n"
                        "  %a = Add(%x, %late) : ?[*]\n"
                        "  %b = Relu(%a) : ?[*]\n"
                        "  %early = const f32[1] [2.0]\n"
                        "}\n");
    free(t);
    ir_graph_destroy(g);
}
END_TEST

START_TEST(print_to_file_matches_string)
{
    ir_graph *g = parse_ok(canonical[1]);
    char *s = print(g);
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(ir_print(g, f), 0);
    long n = ftell(f);
    ck_assert_int_eq(n, (long)strlen(s));
    rewind(f);
    char *b = malloc((size_t)n + 1);
    ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = 0;
    ck_assert_str_eq(b, s);
    fclose(f);
    free(b);
    free(s);
    ir_graph_destroy(g);
}
END_TEST

/* ---- floats -------------------------------------------------------------- */

static const uint32_t float_edges[] = {
    0x00000000, 0x80000000,             /* +-0 */
    0x00000001, 0x80000001,             /* smallest denormals (1e-45) */
    0x007fffff, 0x00400000, 0x00800000, /* largest denormal, FLT_MIN */
    0x7f7fffff, 0xff7fffff,             /* +-FLT_MAX */
    0x7f800000, 0xff800000,             /* +-inf */
    0x3f800000, 0x3dcccccd, 0x3eaaaaab, /* 1, 0.1, 1/3 */
    0x4b800001, 0x33d6bf95, 0x4f000000, /* 2^24+2, 1e-7, 2^31 */
};

START_TEST(float_attrs_round_trip_bit_exact)
{
    for (size_t i = 0; i < sizeof float_edges / sizeof *float_edges; i++) {
        ir_graph *g = ir_graph_create("g");
        ir_value *x = input(g, "x", (ir_type){IR_F32, 1, {{2, 0}}});
        ir_node *n = node(g, IR_OP_LEAKY_RELU, "", 1, &x, 1, (const char *[]){"y"});
        ir_node_set_float(g, n, "alpha", u2f(float_edges[i]));
        char *t = roundtrip(g);
        ir_graph *g2 = parse_ok(t);
        ck_assert_uint_eq(f2u(g2->nodes[0]->attrs[0].f), float_edges[i]);
        /* the spelling is a float, never an integer */
        const char *v = strstr(t, "alpha = ") + 8;
        ck_assert(strcspn(v, ".ein") < strcspn(v, "}"));
        free(t);
        ir_graph_destroy(g2);
        ir_graph_destroy(g);
    }
    /* NaN: its sign survives, its payload becomes the quiet NaN's */
    const uint32_t nans[] = {0x7fc00000, 0xffc00000, 0x7f800001, 0xffabcdef};
    for (size_t i = 0; i < 4; i++) {
        ir_graph *g = ir_graph_create("g");
        ir_value *x = input(g, "x", (ir_type){IR_F32, 1, {{2, 0}}});
        ir_node *n = node(g, IR_OP_LEAKY_RELU, "", 1, &x, 1, (const char *[]){"y"});
        ir_node_set_float(g, n, "alpha", u2f(nans[i]));
        char *t = roundtrip(g);
        ck_assert_ptr_nonnull(strstr(t, nans[i] >> 31 ? "alpha = -nan}" : "alpha = nan}"));
        free(t);
        ir_graph_destroy(g);
    }
}
END_TEST

START_TEST(float_constants_round_trip_bit_exact)
{
    size_t n = sizeof float_edges / sizeof *float_edges;
    ir_graph *g = ir_graph_create("g");
    /* one at a time (inline), all together (hex), and NaNs of any payload */
    for (size_t i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "c%zu", i);
        constant(g, name, IR_F32, 1, &float_edges[i]);
    }
    constant(g, "all", IR_F32, (int64_t)n, float_edges);
    constant(g, "qnan", IR_F32, 2, (uint32_t[]){0x7fc00000, 0xffc00000});
    constant(g, "snan", IR_F32, 1, (uint32_t[]){0x7f800001});
    const double d64[] = {0.0, -0.0, 5e-324, DBL_MIN, DBL_MAX, -DBL_MAX, INFINITY, 0.1, 1.0 / 3};
    constant(g, "d", IR_F64, 9, d64);
    constant(g, "dnan", IR_F64, 1, (uint64_t[]){0x7ff0000000000001ull});
    char *t = roundtrip(g);
    ck_assert_ptr_nonnull(strstr(t, "%c2 = const f32[1] [1e-45]\n"));
    ck_assert_ptr_nonnull(strstr(t, "%c3 = const f32[1] [-1e-45]\n"));
    ck_assert_ptr_nonnull(strstr(t, "%c7 = const f32[1] [3.4028235e+38]\n"));
    ck_assert_ptr_nonnull(strstr(t, "%c1 = const f32[1] [-0.0]\n"));
    ck_assert_ptr_nonnull(strstr(t, "%c10 = const f32[1] [-inf]\n"));
    ck_assert_ptr_nonnull(strstr(t, "%qnan = const f32[2] [nan, -nan]\n"));
    ck_assert_ptr_nonnull(strstr(t, "%snan = const f32[1] @1\n")); /* payload kept in hex */
    ck_assert_ptr_nonnull(strstr(t, "%d = const f64[9] [0.0, -0.0, 5e-324, 2.2250738585072014e-308, "
                                    "1.7976931348623157e+308, -1.7976931348623157e+308, inf, 0.1, "
                                    "0.3333333333333333]\n"));
    ck_assert_ptr_nonnull(strstr(t, "%dnan = const f64[1] @2\n"));
    free(t);
    ir_graph_destroy(g);
}
END_TEST

/* Every f16 and bf16 bit pattern survives print -> parse in the inline
 * form, except NaNs other than the canonical one, which go to hex. */
START_TEST(all_half_values_round_trip)
{
    for (int bf = 0; bf < 2; bf++) {
        ir_graph *g = ir_graph_create("g");
        ir_dtype dt = bf ? IR_BF16 : IR_F16;
        for (uint32_t h = 0; h < 0x10000; h += 16) {
            uint16_t v[16];
            for (int i = 0; i < 16; i++)
                v[i] = (uint16_t)(h + (uint32_t)i);
            char name[16];
            snprintf(name, sizeof name, "h%u", h);
            constant(g, name, dt, 16, v);
        }
        char *t = roundtrip(g);
        /* 0x3c00 is 1.0 in f16, 0x3f00 0.5 in bf16; bf16 0x3dcd is the nearest to 0.1 */
        ck_assert_ptr_nonnull(strstr(t, bf ? "%h16128 = const bf16[16] [0.5, 0.504, " : "%h15360 = const f16[16] [1.0, "));
        ck_assert_ptr_nonnull(strstr(t, bf ? ", 0.1, " : ", 65504.0]"));
        free(t);
        ir_graph_destroy(g);
    }
}
END_TEST

/* Random f32 bit patterns, 16 to a constant (inline unless a NaN). */
START_TEST(random_f32_round_trip)
{
    ir_graph *g = ir_graph_create("g");
    uint64_t s = 88172645463325252ull;
    for (int k = 0; k < 2000; k++) {
        uint32_t v[16];
        for (int i = 0; i < 16; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            v[i] = (uint32_t)s;
            if ((v[i] & 0x7f800000) == 0x7f800000)
                v[i] &= 0xbfffffff; /* keep them finite so they print inline */
        }
        char name[16];
        snprintf(name, sizeof name, "r%d", k);
        constant(g, name, IR_F32, 16, v);
    }
    char *t = roundtrip(g);
    ck_assert_ptr_null(strstr(t, "data @"));
    free(t);
    ir_graph_destroy(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("text");
    TCase *tc = tcase_create("text");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, canonical_texts_print_back);
    tcase_add_test(tc, accepted_spellings_normalize);
    tcase_add_test(tc, malformed_texts_fail_with_location);
    tcase_add_test(tc, every_prefix_fails_cleanly);
    tcase_add_test(tc, every_dtype_inline_and_hex);
    tcase_add_test(tc, everything_round_trips);
    tcase_add_test(tc, list_kinds_print);
    tcase_add_test(tc, late_constant_printed_before_use);
    tcase_add_test(tc, print_to_file_matches_string);
    tcase_add_test(tc, float_attrs_round_trip_bit_exact);
    tcase_add_test(tc, float_constants_round_trip_bit_exact);
    tcase_add_test(tc, all_half_values_round_trip);
    tcase_add_test(tc, random_f32_round_trip);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return icc_run_suite(suite());
}
