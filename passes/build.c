/* build.c - the graph-building steps of build.h. */
#include "passes/build.h"
#include "ir/ops.h"

ir_value *pb_i64_const(ir_graph *g, icc_diag *d, const char *base, const char *suffix, const int64_t *v, int n)
{
    char buf[256];
    ir_type t = {.dtype = IR_I64, .rank = 1, .dims = {ir_dim_const(n)}};
    return ir_graph_add_const(g, ir_graph_fresh_name(g, base, suffix, buf, sizeof buf), &t, v, d);
}

ir_node *pb_node(ir_graph *g, icc_diag *d, int op, const char *base, const char *suffix, int nin, ir_value *const *in,
                 const char *out_name)
{
    char buf[256];
    const char *nm = out_name ? out_name : ir_graph_fresh_name(g, base, suffix, buf, sizeof buf);
    return ir_graph_add_node(g, op, "", nin, in, 1, &nm, d);
}

ir_value *pb_reshape(ir_graph *g, icc_diag *d, ir_value *x, const int64_t *dims, int r, const char *out_name)
{
    ir_value *s = pb_i64_const(g, d, x->name, "_shape", dims, r);
    if (!s)
        return NULL;
    ir_value *in[2] = {x, s};
    ir_node *n = pb_node(g, d, IR_OP_RESHAPE, x->name, "_r", 2, in, out_name);
    return n && ir_infer_node(n, d) == 0 ? n->out[0] : NULL;
}

ir_value *pb_transpose(ir_graph *g, icc_diag *d, ir_value *x, const int64_t *perm, int r, const char *out_name)
{
    ir_node *n = pb_node(g, d, IR_OP_TRANSPOSE, x->name, "_t", 1, &x, out_name);
    if (!n || ir_node_set_ints(g, n, "perm", perm, r) < 0)
        return n ? (ir_errorf(d, "out of memory"), NULL) : NULL;
    return ir_infer_node(n, d) == 0 ? n->out[0] : NULL;
}
