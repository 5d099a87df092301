/* test_frontend.c - the ONNX frontend's graph import: models built in C
 * with protobuf-c (onnx_build.h), packed and loaded. Covers inputs, symbolic
 * dims, optional inputs and outputs, value_info, ordering, cycles,
 * duplicates, attribute checks, the all-at-once unsupported-op report,
 * old-opset adapters and model-local functions. Tensor decoding, external
 * data and hostile bytes are in test_frontend_data.c. */
#include <math.h>
#include <unistd.h>

#include "ir/ref/interp.h"
#include "check_main.h"
#include "onnx_build.h"

/* ---- basic import --------------------------------------------------------- */

START_TEST(relu_loads_through_public_api)
{
    Onnx__ModelProto *m = new_model(13);
    add_input(m, "x", F32, "2,3");
    add_node(m, "Relu", "r", "x", "y");
    add_output(m, "y", F32, "2,3");
    size_t len;
    uint8_t *b = pack(m, &len);
    icc_diag d;
    ir_graph *g = icc_onnx_load_buffer(b, len, NULL, "m.onnx", &d);
    ck_assert_msg(g, "%s", d.msg);
    ck_assert_int_eq(g->ninputs, 1);
    ck_assert_int_eq(g->nnodes, 1);
    ck_assert_int_eq(g->nodes[0]->op, IR_OP_RELU);
    ck_assert_str_eq(g->nodes[0]->name, "r");
    ck_assert_int_eq(g->noutputs, 1);
    const ir_type *t = &g->outputs[0]->type;
    ck_assert_int_eq(t->dtype, IR_F32);
    ck_assert_int_eq(t->rank, 2);
    ck_assert_int_eq(t->dims[1].v, 3);
    ir_graph_destroy(g);
    tfree();
}
END_TEST

START_TEST(symbolic_and_unknown_dims)
{
    Onnx__ModelProto *m = new_model(13);
    add_input(m, "x", F32, "N,3,?");
    add_input(m, "z", F32, "N");
    add_input(m, "u", F32, NULL);
    add_node(m, "Relu", "r", "x", "y");
    add_output(m, "y", F32, NULL);
    icc_diag d;
    ir_graph *g = load(m, false, &d);
    ck_assert_msg(g, "%s", d.msg);
    const ir_type *t = &g->inputs[0]->type;
    ck_assert_int_eq(t->rank, 3);
    ck_assert_int_gt(t->dims[0].sym, 0);
    ck_assert_str_eq(ir_graph_sym_name(g, t->dims[0].sym), "N");
    ck_assert(ir_dim_is_const(t->dims[1]) && t->dims[1].v == 3);
    /* a dim with neither value nor name is a symbol of its own */
    ck_assert_int_gt(t->dims[2].sym, 0);
    ck_assert_int_ne(t->dims[2].sym, t->dims[0].sym);
    ck_assert_str_eq(ir_graph_sym_name(g, t->dims[2].sym), "x_dim2");
    /* the same symbol name is the same symbol */
    ck_assert_int_eq(g->inputs[1]->type.dims[0].sym, t->dims[0].sym);
    ck_assert_int_eq(g->inputs[2]->type.rank, IR_RANK_UNKNOWN);
    ir_graph_destroy(g);
    tfree();
}
END_TEST

START_TEST(optional_inputs_and_outputs)
{
    Onnx__ModelProto *m = new_model(13);
    add_input(m, "x", F32, "2,6");
    add_input(m, "hi", F32, "");
    add_node(m, "Clip", "c1", "x,,hi", "a");      /* middle input omitted */
    add_node(m, "Clip", "c2", "a,,", "b");        /* trailing omitted: dropped */
    add_node(m, "Dropout", "dr", "b", "c,");      /* trailing unused output */
    Onnx__NodeProto *sp = add_node(m, "Split", "s", "c", "p,,q");  /* middle unused output */
    a_int(sp, "axis", 1);
    add_output(m, "p", F32, NULL);
    add_output(m, "q", F32, NULL);
    icc_diag d;
    ir_graph *g = load(m, false, &d);
    ck_assert_msg(g, "%s", d.msg);
    ir_node *c1 = find_op(g, IR_OP_CLIP, 0), *c2 = find_op(g, IR_OP_CLIP, 1);
    ck_assert_int_eq(c1->nin, 3);
    ck_assert_ptr_null(c1->in[1]);
    ck_assert_str_eq(c1->in[2]->name, "hi");
    ck_assert_int_eq(c2->nin, 1);
    ck_assert_int_eq(find_op(g, IR_OP_DROPOUT, 0)->nout, 1);
    ir_node *s = find_op(g, IR_OP_SPLIT, 0);
    ck_assert_int_eq(s->nout, 3);
    ck_assert_str_eq(s->out[0]->name, "p");
    ck_assert_str_ne(s->out[1]->name, "");
    ck_assert_str_eq(s->out[2]->name, "q");
    /* opset 13 Split without sizes splits evenly: num_outputs, as in 18 */
    ck_assert_int_eq(ir_attr_int(s, "num_outputs", -1), 3);
    ir_graph_destroy(g);
    tfree();
}
END_TEST

START_TEST(value_info_types_are_attached)
{
    Onnx__ModelProto *m = new_model(13);
    add_input(m, "x", F32, NULL);
    add_node(m, "Relu", "r", "x", "h");
    add_node(m, "Relu", "r2", "h", "y");
    PUSH(m->graph->value_info, m->graph->n_value_info, vinfo("h", F32, "B,7"));
    add_output(m, "y", F32, "B,7");
    icc_diag d;
    ir_graph *g = load(m, false, &d);
    ck_assert_msg(g, "%s", d.msg);
    const ir_type *t = &find_value(g, "h")->type;
    ck_assert_int_eq(t->dtype, IR_F32);
    ck_assert_int_eq(t->rank, 2);
    ck_assert_str_eq(ir_graph_sym_name(g, t->dims[0].sym), "B");
    ck_assert_int_eq(t->dims[1].v, 7);
    ir_graph_destroy(g);
    tfree();
}
END_TEST

START_TEST(initializer_listed_as_input_is_constant)
{
    Onnx__ModelProto *m = new_model(13);
    add_input(m, "x", F32, "2");
    add_input(m, "w", F32, "2");
    int64_t dims[] = {2};
    Onnx__TensorProto *w = tensor("w", F32, 1, dims);
    float wv[] = {1, 2};
    set_raw(w, wv, sizeof wv);
    add_init(m, w);
    add_node(m, "Add", "a", "x,w", "y");
    add_output(m, "y", F32, "2");
    icc_diag d;
    ir_graph *g = load(m, true, &d);
    ck_assert_msg(g, "%s", d.msg);
    ck_assert_int_eq(g->ninputs, 1);
    ck_assert_str_eq(g->inputs[0]->name, "x");
    ck_assert_int_eq(find_value(g, "w")->kind, IR_VAL_CONST);
    ir_graph_destroy(g);
    tfree();
}
END_TEST

START_TEST(unsorted_graph_is_sorted)
{
    Onnx__ModelProto *m = new_model(13);
    add_input(m, "x", F32, "3");
    add_node(m, "Neg", "second", "a", "y");
    add_node(m, "Relu", "first", "x", "a");
    add_output(m, "y", F32, NULL);
    icc_diag d;
    ir_graph *g = load(m, true, &d);
    ck_assert_msg(g, "%s", d.msg);
    ck_assert_str_eq(g->nodes[0]->name, "first");
    ck_assert_str_eq(g->nodes[1]->name, "second");
    ir_graph_destroy(g);
    tfree();
}
END_TEST

START_TEST(graph_structure_errors)
{
    Onnx__ModelProto *m = new_model(13);
    add_input(m, "x", F32, "3");
    add_node(m, "Relu", "r", "nope", "y");
    add_output(m, "y", F32, NULL);
    expect_error(m, "node 'r' (Relu): input 'nope' is never defined");

    m = new_model(13);
    add_input(m, "x", F32, "3");
    add_node(m, "Add", "a", "x,q", "p");
    add_node(m, "Relu", "b", "p", "q");
    add_output(m, "q", F32, NULL);
    expect_error(m, "is part of a cycle");

    m = new_model(13);
    add_input(m, "x", F32, "3");
    add_node(m, "Relu", "self", "y", "y");
    add_output(m, "y", F32, NULL);
    expect_error(m, "node 'self' (Relu): input 'y' is its own output");

    m = new_model(13);
    add_input(m, "x", F32, "3");
    add_node(m, "Relu", "a", "x", "y");
    add_node(m, "Neg", "b", "x", "y");
    add_output(m, "y", F32, NULL);
    expect_error(m, "node 'b' (Neg): output 'y' is already defined by another node");

    m = new_model(13);
    add_input(m, "x", F32, "3");
    add_node(m, "Relu", "a", "x", "x");
    add_output(m, "x", F32, NULL);
    expect_error(m, "output 'x' is already defined as a graph input");

    m = new_model(13);
    add_input(m, "x", F32, "3");
    add_node(m, "Relu", "a", "x", "y");
    expect_error(m, "the graph has no outputs");

    m = new_model(13);
    add_input(m, "x", F32, "3");
    add_node(m, "Relu", "a", "x", "y");
    add_output(m, "zz", F32, NULL);
    expect_error(m, "graph output 'zz' is never defined");

    m = new_model(13);
    add_input(m, "x", ONNX__TENSOR_PROTO__DATA_TYPE__STRING, "3");
    add_node(m, "Identity", "a", "x", "y");
    add_output(m, "y", F32, NULL);
    expect_error(m, "input 'x': dtype STRING (8) is not supported");
    tfree();
}
END_TEST

START_TEST(huge_names_are_truncated_in_messages)
{
    size_t n = 1 << 20;
    char *big = T(n + 1);
    memset(big, 'n', n);
    Onnx__ModelProto *m = new_model(13);
    add_input(m, "x", F32, "3");
    Onnx__NodeProto *nd = add_node(m, "Relu", "", "missing", "y");
    nd->name = big;
    add_output(m, "y", F32, NULL);
    icc_diag d;
    ck_assert_ptr_null(load(m, false, &d));
    ck_assert_msg(strstr(d.msg, "input 'missing' is never defined"), "%s", d.msg);
    ck_assert_uint_lt(strlen(d.msg), 400);
    tfree();
}
END_TEST

START_TEST(unknown_attribute_is_named)
{
    Onnx__ModelProto *m = new_model(13);
    add_input(m, "x", F32, "3");
    Onnx__NodeProto *n = add_node(m, "Relu", "r", "x", "y");
    a_int(n, "bogus", 1);
    add_output(m, "y", F32, NULL);
    expect_error(m, "node 'r' (Relu): attribute 'bogus' is not supported (opset 13)");

    m = new_model(13);
    add_input(m, "x", F32, "3");
    n = add_node(m, "LeakyRelu", "l", "x", "y");
    a_int(n, "alpha", 1);
    add_output(m, "y", F32, NULL);
    expect_error(m, "attribute 'alpha' should be float, not int");
    tfree();
}
END_TEST

/* ---- unsupported ops ---------------------------------------------------- */

/* Ops inside subgraphs are listed too, named with their path. */
START_TEST(unsupported_ops_listed_at_once)
{
    Onnx__ModelProto *m = new_model(13);
    add_input(m, "x", F32, "3");
    add_node(m, "Foo", "n1", "x", "a");
    Onnx__NodeProto *iff = add_node(m, "If", "cond", "a", "b");
    Onnx__AttributeProto *ga =
        add_attr(iff, "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    ga->g = T(sizeof(Onnx__GraphProto));
    onnx__graph_proto__init(ga->g);
    Onnx__GraphProto *main = m->graph;
    m->graph = ga->g;
    Onnx__NodeProto *inner = add_node(m, "If", "inner", "a", "i");
    Onnx__AttributeProto *gb =
        add_attr(inner, "else_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    gb->g = T(sizeof(Onnx__GraphProto));
    onnx__graph_proto__init(gb->g);
    m->graph = gb->g;
    add_node(m, "Baz", "z1", "a", "z");
    m->graph = main;
    Onnx__NodeProto *b1 = add_node(m, "Bar", "b1", "b", "c");
    b1->domain = S("com.microsoft");
    Onnx__NodeProto *b2 = add_node(m, "Bar", "b2", "c", "d");
    b2->domain = S("com.microsoft");
    add_node(m, "Relu", "fine", "d", "y");
    add_output(m, "y", F32, NULL);
    icc_diag d;
    ck_assert_ptr_null(load(m, false, &d));
    ck_assert_str_eq(d.msg, "m.onnx: 3 unsupported ops: Foo (domain '', opset 13, node 'n1'), "
                            "Baz (domain '', opset 13, node 'cond/then_branch/inner/else_branch/z1'), "
                            "Bar (domain 'com.microsoft', opset 0, 2 nodes, first 'b1')");
    tfree();
}
END_TEST

/* A subgraph's errors say where it is; nesting is bounded before any
 * subgraph is imported. */
START_TEST(subgraph_errors_are_located)
{
    Onnx__ModelProto *m = new_model(13);
    add_input(m, "c", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, "");
    Onnx__NodeProto *iff = add_node(m, "If", "cond", "c", "y");
    const char *names[2] = {"then_branch", "else_branch"};
    Onnx__GraphProto *main = m->graph;
    for (int b = 0; b < 2; b++) {
        Onnx__AttributeProto *ga = add_attr(iff, names[b], ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
        ga->g = T(sizeof(Onnx__GraphProto));
        onnx__graph_proto__init(ga->g);
        m->graph = ga->g;
        add_node(m, "Relu", "z1", b ? "c" : "nope", "z");
        add_output(m, "z", F32, NULL);
        m->graph = main;
    }
    add_output(m, "y", F32, NULL);
    expect_error(m, "m.onnx: cond/then_branch: node 'z1' (Relu): input 'nope' is never defined");

    m = new_model(13);
    add_input(m, "c", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, "");
    main = m->graph;
    for (int k = 0; k < 20; k++) {
        Onnx__NodeProto *n = add_node(m, "If", "deep", "c", "y");
        Onnx__AttributeProto *ga = add_attr(n, "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
        ga->g = T(sizeof(Onnx__GraphProto));
        onnx__graph_proto__init(ga->g);
        m->graph = ga->g;
    }
    m->graph = main;
    add_output(m, "y", F32, NULL);
    expect_error(m, "subgraphs nest deeper than 16");
    tfree();
}
END_TEST

/* ---- opset adapters ------------------------------------------------------- */

static const int64_t *const_i64(const ir_value *v, int64_t n)
{
    ck_assert_ptr_nonnull(v);
    ck_assert_int_eq(v->kind, IR_VAL_CONST);
    ck_assert_int_eq(v->cval.dtype, IR_I64);
    ck_assert_int_eq(v->cval.numel, n);
    return v->cval.data;
}

START_TEST(reduce_axes_attribute_becomes_input)
{
    Onnx__ModelProto *m = new_model(11);
    add_input(m, "x", F32, "2,3,4");
    a_ints(add_node(m, "ReduceSum", "rs", "x", "y"), "axes", 2, (int64_t[]){0, 2});
    Onnx__NodeProto *n = add_node(m, "ReduceMean", "rm", "y", "z");
    a_ints(n, "axes", 1, (int64_t[]){-1});
    a_int(n, "keepdims", 0);
    add_output(m, "z", F32, NULL);
    icc_diag d;
    ir_graph *g = load(m, true, &d);
    ck_assert_msg(g, "%s", d.msg);
    ir_node *rs = find_op(g, IR_OP_REDUCE_SUM, 0), *rm = find_op(g, IR_OP_REDUCE_MEAN, 0);
    ck_assert_int_eq(rs->nin, 2);
    const int64_t *ax = const_i64(rs->in[1], 2);
    ck_assert(ax[0] == 0 && ax[1] == 2);
    ck_assert_ptr_null(ir_node_attr(rs, "axes"));
    ck_assert_int_eq(const_i64(rm->in[1], 1)[0], -1);
    ck_assert_int_eq(ir_attr_int(rm, "keepdims", 1), 0);
    /* [2,3,4] -> keepdims [1,3,1] -> mean over last, dropped: [1,3] */
    const ir_type *t = &g->outputs[0]->type;
    ck_assert_int_eq(t->rank, 2);
    ck_assert(t->dims[0].v == 1 && t->dims[1].v == 3);
    ir_graph_destroy(g);

    /* ReduceSum 13 already takes axes as an input: no rewrite */
    m = new_model(13);
    add_input(m, "x", F32, "2,3");
    a_ints(add_node(m, "ReduceSum", "rs", "x", "y"), "axes", 1, (int64_t[]){0});
    add_output(m, "y", F32, NULL);
    expect_error(m, "node 'rs' (ReduceSum): attribute 'axes' is not supported (opset 13)");
    tfree();
}
END_TEST

START_TEST(attributes_to_inputs_old_opsets)
{
    Onnx__ModelProto *m = new_model(9);
    add_input(m, "x", F32, "1,4,6");
    a_ints(add_node(m, "Squeeze", "sq", "x", "a"), "axes", 1, (int64_t[]){0});
    a_ints(add_node(m, "Unsqueeze", "us", "a", "b"), "axes", 1, (int64_t[]){0});
    Onnx__NodeProto *sl = add_node(m, "Slice", "sl", "b", "c");
    a_ints(sl, "starts", 1, (int64_t[]){1});
    a_ints(sl, "ends", 1, (int64_t[]){3});
    a_ints(sl, "axes", 1, (int64_t[]){1});
    Onnx__NodeProto *cl = add_node(m, "Clip", "cl", "c", "e");
    a_float(cl, "min", -1);
    a_float(cl, "max", 2);
    Onnx__NodeProto *pd = add_node(m, "Pad", "pd", "e", "f");
    a_ints(pd, "pads", 6, (int64_t[]){0, 1, 0, 0, 0, 1});
    a_float(pd, "value", 0.5f);
    a_int(add_node(m, "TopK", "tk", "f", "g,gi"), "k", 2);
    Onnx__NodeProto *sp = add_node(m, "Split", "sp", "g", "h1,h2");
    a_int(sp, "axis", 2);
    a_ints(sp, "split", 2, (int64_t[]){1, 1});
    a_float(add_node(m, "Dropout", "dr", "h1", "k"), "ratio", 0.3f);
    add_output(m, "k", F32, NULL);
    add_output(m, "h2", F32, NULL);
    icc_diag d;
    ir_graph *g = load(m, true, &d);
    ck_assert_msg(g, "%s", d.msg);
    ck_assert_int_eq(const_i64(find_op(g, IR_OP_SQUEEZE, 0)->in[1], 1)[0], 0);
    ck_assert_int_eq(const_i64(find_op(g, IR_OP_UNSQUEEZE, 0)->in[1], 1)[0], 0);
    ir_node *n = find_op(g, IR_OP_SLICE, 0);
    ck_assert_int_eq(n->nin, 4);
    ck_assert_int_eq(const_i64(n->in[1], 1)[0], 1);
    ck_assert_int_eq(const_i64(n->in[2], 1)[0], 3);
    ck_assert_int_eq(const_i64(n->in[3], 1)[0], 1);
    n = find_op(g, IR_OP_CLIP, 0);
    ck_assert_int_eq(n->nin, 3);
    ck_assert(n->in[1]->cval.rank == 0 && n->in[1]->cval.dtype == IR_F32);
    ck_assert(((float *)n->in[1]->cval.data)[0] == -1 && ((float *)n->in[2]->cval.data)[0] == 2);
    n = find_op(g, IR_OP_PAD, 0);
    ck_assert_int_eq(const_i64(n->in[1], 6)[5], 1);
    ck_assert(((float *)n->in[2]->cval.data)[0] == 0.5f);
    ck_assert_int_eq(const_i64(find_op(g, IR_OP_TOP_K, 0)->in[1], 1)[0], 2);
    n = find_op(g, IR_OP_SPLIT, 0);
    ck_assert_int_eq(const_i64(n->in[1], 2)[1], 1);
    ck_assert_ptr_null(ir_node_attr(n, "num_outputs"));
    ck_assert_int_eq(find_op(g, IR_OP_DROPOUT, 0)->nattr, 0);
    /* [1,4,6] squeeze -> [4,6] unsqueeze -> [1,4,6] slice -> [1,2,6] pad -> [1,3,7],
     * topk 2 on the last axis -> [1,3,2], split -> [1,3,1] */
    const ir_type *t = &g->outputs[0]->type;
    ck_assert_int_eq(t->rank, 3);
    ck_assert(t->dims[0].v == 1 && t->dims[1].v == 3 && t->dims[2].v == 1);
    ir_graph_destroy(g);
    tfree();
}
END_TEST

START_TEST(legacy_attributes_dropped_or_rejected)
{
    Onnx__ModelProto *m = new_model(5);
    add_input(m, "x", F32, "1,2,3,3");
    add_input(m, "s", F32, "2");
    int64_t two[] = {2};
    const char *names[] = {"sc", "bb", "mn", "vr"};
    for (int i = 0; i < 4; i++) {
        Onnx__TensorProto *t = tensor(names[i], F32, 1, two);
        float v[] = {1, 1};
        set_raw(t, v, sizeof v);
        add_init(m, t);
    }
    Onnx__NodeProto *bn = add_node(m, "BatchNormalization", "bn", "x,sc,bb,mn,vr", "y,,,,");
    a_int(bn, "is_test", 1);
    a_int(bn, "spatial", 1);
    a_ints(bn, "consumed_inputs", 0, NULL);
    a_ints(add_node(m, "Relu", "r", "y", "z"), "consumed_inputs", 1, (int64_t[]){0});
    a_str(add_node(m, "Cast", "c", "z", "w"), "to", "DOUBLE");
    add_output(m, "w", ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE, NULL);
    icc_diag d;
    ir_graph *g = load(m, true, &d);
    ck_assert_msg(g, "%s", d.msg);
    ck_assert_int_eq(find_op(g, IR_OP_BATCH_NORMALIZATION, 0)->nattr, 0);
    ck_assert_int_eq(find_op(g, IR_OP_BATCH_NORMALIZATION, 0)->nout, 1);
    ck_assert_int_eq(find_op(g, IR_OP_RELU, 0)->nattr, 0);
    ck_assert_int_eq(ir_attr_int(find_op(g, IR_OP_CAST, 0), "to", 0), 11);
    ck_assert_int_eq(g->outputs[0]->type.dtype, IR_F64);
    ir_graph_destroy(g);

    m = new_model(7);
    add_input(m, "x", F32, "1,2,3");
    a_int(add_node(m, "BatchNormalization", "bn", "x,x,x,x,x", "y"), "spatial", 0);
    add_output(m, "y", F32, NULL);
    expect_error(m, "node 'bn' (BatchNormalization): attribute 'spatial' = 0");

    m = new_model(6);
    add_input(m, "a", F32, "2,3");
    add_input(m, "c", F32, "3");
    a_int(add_node(m, "Gemm", "gm", "a,a,c", "y"), "broadcast", 1);
    add_output(m, "y", F32, NULL);
    ir_graph *g2 = load(m, false, &d);
    ck_assert_msg(g2, "%s", d.msg);
    ck_assert_int_eq(g2->nodes[0]->nattr, 0);
    ir_graph_destroy(g2);
    tfree();
}
END_TEST

START_TEST(softmax_before_13_is_coerced_to_2d)
{
    /* rank unknown at import: Flatten -> Softmax(axis=1) -> Reshape(Shape) */
    Onnx__ModelProto *m = new_model(11);
    add_input(m, "x", F32, NULL);
    add_node(m, "Softmax", "sm", "x", "y");
    add_output(m, "y", F32, NULL);
    icc_diag d;
    ir_graph *g = load(m, true, &d);
    ck_assert_msg(g, "%s", d.msg);
    ck_assert_int_eq(g->nnodes, 4);
    ck_assert_int_eq(ir_attr_int(find_op(g, IR_OP_FLATTEN, 0), "axis", 0), 1);
    ck_assert_int_eq(ir_attr_int(find_op(g, IR_OP_SOFTMAX, 0), "axis", 0), 1);
    ck_assert_str_eq(g->outputs[0]->name, "y");
    ck_assert_int_eq(g->outputs[0]->def->op, IR_OP_RESHAPE);
    /* opset 11 normalizes over everything after axis 1: x is [1,2,2] with
     * exp(x) = 1,2,3,4, so the result is (1,2,3,4)/10 */
    float xv[4] = {0, logf(2), logf(3), logf(4)};
    ir_tensor in = {.dtype = IR_F32, .rank = 3, .dims = {1, 2, 2}, .numel = 4, .nbytes = 16,
                    .data = xv};
    ir_tensor out[1];
    ck_assert_msg(ir_interp_run(g, &in, out, &d) == 0, "%s", d.msg);
    ck_assert_int_eq(out[0].rank, 3);
    for (int i = 0; i < 4; i++)
        ck_assert_float_eq_tol(((float *)out[0].data)[i], 0.1f * (float)(i + 1), 1e-6f);
    ir_tensors_free(out, 1);
    ir_graph_destroy(g);

    /* rank known and axis the last: a single node */
    m = new_model(12);
    add_input(m, "x", F32, "3,5");
    add_node(m, "LogSoftmax", "ls", "x", "y");
    add_output(m, "y", F32, NULL);
    g = load(m, true, &d);
    ck_assert_msg(g, "%s", d.msg);
    ck_assert_int_eq(g->nnodes, 1);
    ck_assert_int_eq(ir_attr_int(g->nodes[0], "axis", -5), 1);
    ir_graph_destroy(g);
    tfree();
}
END_TEST

START_TEST(legacy_broadcast_with_axis)
{
    Onnx__ModelProto *m = new_model(6);
    add_input(m, "a", F32, "2,3,2");
    add_input(m, "b", F32, "3");
    Onnx__NodeProto *n = add_node(m, "Add", "add", "a,b", "y");
    a_int(n, "broadcast", 1);
    a_int(n, "axis", 1);
    add_output(m, "y", F32, NULL);
    icc_diag d;
    ir_graph *g = load(m, true, &d);
    ck_assert_msg(g, "%s", d.msg);
    ir_node *u = find_op(g, IR_OP_UNSQUEEZE, 0);
    ck_assert_ptr_nonnull(u);
    ck_assert_int_eq(const_i64(u->in[1], 1)[0], 1);
    float av[12] = {0}, bv[3] = {1, 2, 3};
    ir_tensor in[2] = {
        {.dtype = IR_F32, .rank = 3, .dims = {2, 3, 2}, .numel = 12, .nbytes = 48, .data = av},
        {.dtype = IR_F32, .rank = 1, .dims = {3}, .numel = 3, .nbytes = 12, .data = bv},
    };
    ir_tensor out[1];
    ck_assert_msg(ir_interp_run(g, in, out, &d) == 0, "%s", d.msg);
    for (int i = 0; i < 12; i++)
        ck_assert(((float *)out[0].data)[i] == bv[(i / 2) % 3]);
    ir_tensors_free(out, 1);
    ir_graph_destroy(g);

    /* PRelu < 7: a 1-D slope is per channel, dim 1 */
    m = new_model(6);
    add_input(m, "x", F32, "2,3,4");
    add_input(m, "s", F32, "3");
    add_node(m, "PRelu", "pr", "x,s", "y");
    add_output(m, "y", F32, NULL);
    g = load(m, true, &d);
    ck_assert_msg(g, "%s", d.msg);
    u = find_op(g, IR_OP_UNSQUEEZE, 0);
    ck_assert_ptr_nonnull(u);
    ck_assert_int_eq(const_i64(u->in[1], 1)[0], 1);
    ck_assert_ptr_eq(find_op(g, IR_OP_PRELU, 0)->in[1], u->out[0]);
    ir_graph_destroy(g);
    tfree();
}
END_TEST

START_TEST(upsample_and_old_resize_become_resize)
{
    Onnx__ModelProto *m = new_model(8);
    add_input(m, "x", F32, "1,1,2,2");
    a_floats(add_node(m, "Upsample", "up", "x", "y"), "scales", 4, (float[]){1, 1, 2, 2});
    add_output(m, "y", F32, NULL);
    icc_diag d;
    ir_graph *g = load(m, false, &d);
    ck_assert_msg(g, "%s", d.msg);
    ir_node *r = find_op(g, IR_OP_RESIZE, 0);
    ck_assert_int_eq(r->nin, 3);
    ck_assert_ptr_null(r->in[1]);
    ck_assert_int_eq(r->in[2]->cval.numel, 4);
    ck_assert_str_eq(ir_attr_string(r, "mode", ""), "nearest");
    ck_assert_str_eq(ir_attr_string(r, "coordinate_transformation_mode", ""), "asymmetric");
    ck_assert_str_eq(ir_attr_string(r, "nearest_mode", ""), "floor");
    ir_graph_destroy(g);

    m = new_model(10);
    add_input(m, "x", F32, "1,1,4,4");
    Onnx__TensorProto *s = tensor("s", F32, 1, (int64_t[]){4});
    set_raw(s, (float[]){1, 1, 0.5f, 0.5f}, 16);
    add_init(m, s);
    a_str(add_node(m, "Resize", "rz", "x,s", "y"), "mode", "nearest");
    add_output(m, "y", F32, NULL);
    g = load(m, false, &d);
    ck_assert_msg(g, "%s", d.msg);
    r = find_op(g, IR_OP_RESIZE, 0);
    ck_assert_ptr_null(r->in[1]);
    ck_assert_str_eq(r->in[2]->name, "s");
    ck_assert_str_eq(ir_attr_string(r, "nearest_mode", ""), "ceil");
    ir_graph_destroy(g);
    tfree();
}
END_TEST

/* ---- functions -------------------------------------------------------- */

static Onnx__FunctionProto *add_function(Onnx__ModelProto *m, const char *name, const char *domain,
                                         const char *ins, const char *outs)
{
    Onnx__FunctionProto *f = T(sizeof *f);
    onnx__function_proto__init(f);
    f->name = S(name);
    f->domain = S(domain);
    split_list(ins, &f->input, &f->n_input);
    split_list(outs, &f->output, &f->n_output);
    PUSH(f->opset_import, f->n_opset_import, opset("", 18));
    PUSH(m->functions, m->n_functions, f);
    return f;
}

static Onnx__NodeProto *fn_node(Onnx__FunctionProto *f, const char *op, const char *ins,
                                const char *outs)
{
    Onnx__NodeProto *n = new_node(op, "", ins, outs);
    PUSH(f->node, f->n_node, n);
    return n;
}

START_TEST(model_functions_are_inlined)
{
    Onnx__ModelProto *m = new_model(13);
    PUSH(m->opset_import, m->n_opset_import, opset("my", 1));
    Onnx__FunctionProto *f = add_function(m, "Scaled", "my", "X", "Y");
    Onnx__AttributeProto *def = T(sizeof *def);
    onnx__attribute_proto__init(def);
    def->name = S("alpha");
    def->has_type = 1;
    def->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    def->has_f = 1;
    def->f = 0.5f;
    /* defaults need IR version 9's schema; without them LeakyRelu's own */
    float dflt = fn_add_default(f, def) ? 0.5f : 0.01f;
    Onnx__NodeProto *lr = fn_node(f, "LeakyRelu", "X", "T");
    add_attr(lr, "alpha", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)->ref_attr_name = S("alpha");
    fn_node(f, "Identity", "T", "Y");
    /* Outer calls Scaled: nested inlining */
    Onnx__FunctionProto *outer = add_function(m, "Outer", "my", "A", "B");
    fn_node(outer, "Scaled", "A", "B")->domain = S("my");

    add_input(m, "x", F32, "4");
    Onnx__NodeProto *c1 = add_node(m, "Scaled", "call1", "x", "y1");
    c1->domain = S("my");
    a_float(c1, "alpha", 0.2f);
    add_node(m, "Scaled", "call2", "y1", "y2")->domain = S("my");
    add_node(m, "Outer", "call3", "y2", "y3")->domain = S("my");
    add_output(m, "y3", F32, NULL);
    icc_diag d;
    ir_graph *g = load(m, true, &d);
    ck_assert_msg(g, "%s", d.msg);
    ck_assert_int_eq(g->nnodes, 6);
    ck_assert_int_eq(count_op(g, IR_OP_LEAKY_RELU), 3);
    ck_assert(ir_attr_float(find_op(g, IR_OP_LEAKY_RELU, 0), "alpha", 0) == 0.2f);
    ck_assert(ir_attr_float(find_op(g, IR_OP_LEAKY_RELU, 1), "alpha", 0) == dflt);
    ck_assert(ir_attr_float(find_op(g, IR_OP_LEAKY_RELU, 2), "alpha", 0) == dflt);
    /* formal outputs are the caller's names; internal ones are unique */
    ck_assert_str_eq(find_op(g, IR_OP_IDENTITY, 0)->out[0]->name, "y1");
    ck_assert_str_eq(find_op(g, IR_OP_IDENTITY, 2)->out[0]->name, "y3");
    ck_assert_str_ne(find_op(g, IR_OP_LEAKY_RELU, 0)->out[0]->name,
                     find_op(g, IR_OP_LEAKY_RELU, 1)->out[0]->name);
    ck_assert_ptr_eq(find_op(g, IR_OP_LEAKY_RELU, 1)->in[0], find_value(g, "y1"));
    ck_assert_int_eq(g->outputs[0]->type.dims[0].v, 4);
    ir_graph_destroy(g);
    tfree();
}
END_TEST

START_TEST(function_errors)
{
    Onnx__ModelProto *m = new_model(13);
    Onnx__FunctionProto *f = add_function(m, "Rec", "my", "X", "Y");
    fn_node(f, "Rec", "X", "Y")->domain = S("my");
    add_input(m, "x", F32, "4");
    add_node(m, "Rec", "r", "x", "y")->domain = S("my");
    add_output(m, "y", F32, NULL);
    expect_error(m, "functions nested deeper than 16");

    m = new_model(13);
    add_input(m, "x", F32, "4");
    Onnx__NodeProto *n = add_node(m, "LeakyRelu", "lr", "x", "y");
    add_attr(n, "alpha", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)->ref_attr_name = S("a");
    add_output(m, "y", F32, NULL);
    expect_error(m, "ref_attr_name is only allowed inside functions");

    /* exponential fan-out: F8 calls F7 eight times ... 8^8 Relu nodes */
    m = new_model(13);
    char fname[8], prev[8];
    for (int k = 0; k <= 8; k++) {
        snprintf(fname, sizeof fname, "F%d", k);
        f = add_function(m, fname, "my", "X", "Y");
        if (k == 0) {
            fn_node(f, "Relu", "X", "Y");
            continue;
        }
        snprintf(prev, sizeof prev, "F%d", k - 1);
        for (int c = 0; c < 8; c++) {
            char io[2][4] = {"X", "Y"};
            if (c > 0)
                snprintf(io[0], sizeof io[0], "t%d", c);
            if (c < 7)
                snprintf(io[1], sizeof io[1], "t%d", c + 1);
            fn_node(f, prev, io[0], io[1])->domain = S("my");
        }
    }
    add_input(m, "x", F32, "4");
    add_node(m, "F8", "big", "x", "y")->domain = S("my");
    add_output(m, "y", F32, NULL);
    icc_diag d;
    ck_assert_ptr_null(load(m, false, &d));
    ck_assert_msg(strstr(d.msg, "inlining the model's functions needs more than 256 MiB") ||
                  strstr(d.msg, "more than 4194304 nodes"), "%s", d.msg);

    /* unsupported ops inside a function body are listed too */
    m = new_model(13);
    f = add_function(m, "F", "my", "X", "Y");
    fn_node(f, "Nope", "X", "Y");
    add_input(m, "x", F32, "4");
    add_node(m, "F", "call", "x", "y")->domain = S("my");
    add_output(m, "y", F32, NULL);
    expect_error(m, "1 unsupported op: Nope (domain '', opset 18, node 'call/Y')");
    tfree();
}
END_TEST

START_TEST(light_resnet50_structure)
{
    const char *p = ONNX_DATA "/light/light_resnet50.onnx";
    if (access(p, R_OK)) {
        printf("note: %s absent (onnx pip package); skipped\n", p);
        return;
    }
    uint8_t *buf;
    size_t len;
    icc_diag d;
    ck_assert_int_eq(fe_read_file(p, FE_MAX_PROTO_BYTES, &buf, &len, &d), 0);
    ir_graph *g = fe_import_buffer(buf, len, NULL, p, false, &d);
    free(buf);
    ck_assert_msg(g, "%s", d.msg);
    ck_assert_int_eq(g->ninputs, 1);
    ck_assert_str_eq(g->inputs[0]->name, "gpu_0/data_0");
    ck_assert_int_eq(g->inputs[0]->type.rank, 4);
    ck_assert_int_eq(g->inputs[0]->type.dims[1].v, 3);
    ck_assert_int_eq(count_op(g, IR_OP_CONV), 53);
    ck_assert_int_eq(count_op(g, IR_OP_CONSTANT_OF_SHAPE), 239);
    /* 415 ONNX nodes; the opset-9 Softmax is 1 node, or 4 if the rank of
     * its input was not known at import */
    ck_assert_int_ge(g->nnodes, 415);
    ck_assert_int_le(g->nnodes, 418);
    ck_assert_int_eq(g->noutputs, 1);
    ir_graph_destroy(g);
}
END_TEST

static Suite *frontend_suite(void)
{
    Suite *s = suite_create("frontend");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, relu_loads_through_public_api);
    tcase_add_test(tc, symbolic_and_unknown_dims);
    tcase_add_test(tc, optional_inputs_and_outputs);
    tcase_add_test(tc, value_info_types_are_attached);
    tcase_add_test(tc, initializer_listed_as_input_is_constant);
    tcase_add_test(tc, unsorted_graph_is_sorted);
    tcase_add_test(tc, graph_structure_errors);
    tcase_add_test(tc, huge_names_are_truncated_in_messages);
    tcase_add_test(tc, unknown_attribute_is_named);
    tcase_add_test(tc, unsupported_ops_listed_at_once);
    tcase_add_test(tc, subgraph_errors_are_located);
    tcase_add_test(tc, reduce_axes_attribute_becomes_input);
    tcase_add_test(tc, attributes_to_inputs_old_opsets);
    tcase_add_test(tc, legacy_attributes_dropped_or_rejected);
    tcase_add_test(tc, softmax_before_13_is_coerced_to_2d);
    tcase_add_test(tc, legacy_broadcast_with_axis);
    tcase_add_test(tc, upsample_and_old_resize_become_resize);
    tcase_add_test(tc, model_functions_are_inlined);
    tcase_add_test(tc, function_errors);
    tcase_add_test(tc, light_resnet50_structure);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return icc_run_suite(frontend_suite());
}
