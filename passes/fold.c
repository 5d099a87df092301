/* fold.c - constant folding: every node whose present inputs are all
 * constants is evaluated once with the registry's reference kernels
 * (ir_eval_node) and its outputs become constants that keep the outputs'
 * names; a node whose operands became constant gets its shapes inferred
 * again. Shape and Size also fold when their input is not constant but the
 * part of its type they read is static, which is what turns
 * Reshape(x, Shape(y)) into a static reshape, and so does any node whose
 * output shape inference knows element by element as constants (a shape
 * value: Gather(Shape(x), 1) over [N, 16]). Nodes are visited in
 * topological order and each input is redirected to its folded constant on
 * the way, so a whole chain folds in one run. Results larger than
 * max-bytes fold only if they are no larger than the constant inputs they
 * consume, so folding never inflates the weights (a constant Expand to a
 * huge shape stays an Expand). A kernel error on constant inputs is an
 * error of the model and is reported, not skipped. Constants left unused
 * are dce's job.
 *
 * Subgraphs (If's branches, Loop's and Scan's bodies) fold after the graph
 * holding them, with their own constants and the small captured ones
 * shape inference made theirs: a branch's Pad whose pads are computed from
 * constants gets static pads, so its shapes follow. A branch may be one
 * that never runs for any input the model accepts, so a kernel error there
 * only stops folding that subgraph. Shapes are inferred again after a
 * subgraph changed, so the control node's results see it.
 */
#include "passes/pass.h"
#include "ir/ref/ref.h"
#include "ir/ops.h"
#include "ir/ref/interp.h"

#include <stdlib.h>
#include <string.h>

#define FOLD_MAX_IO 64

bool pass_shape_only_input(const ir_node *n, const ir_value *v, ir_tensor *t)
{
    const ir_type *ty = &v->type;
    if (ty->rank < 0 || ty->dtype == IR_UNDEF)
        return false;
    memset(t, 0, sizeof *t);
    t->dtype = ty->dtype;
    t->rank = ty->rank;
    if (n->op == IR_OP_SIZE) {
        if (!ir_type_is_static(ty) || !ir_type_numel(ty, &t->numel))
            return false;
        for (int i = 0; i < ty->rank; i++)
            t->dims[i] = ty->dims[i].v;
        return true;
    }
    int s, e;
    ir_shape_op_bounds(n, ty->rank, &s, &e);
    for (int i = 0; i < ty->rank; i++) {
        if (i >= s && i < e && !ir_dim_is_const(ty->dims[i]))
            return false;
        /* dims outside the slice are never read; 0 keeps numel honest */
        t->dims[i] = ir_dim_is_const(ty->dims[i]) ? ty->dims[i].v : 0;
    }
    return true;
}

/* Bytes of a static type, or -1 when not static or too large to hold. */
static int64_t type_bytes(const ir_type *t)
{
    int64_t n, b;
    if (!ir_type_is_static(t) || !ir_type_numel(t, &n) || !ir_mul_ok(n, (int64_t)ir_dtype_size(t->dtype), &b))
        return -1;
    return b;
}

enum { FOLD_MAX_TRIPS = 1 << 16 };

/* Folds n if it can; *folded says whether it did. -1 on a real error. */
static int fold_node(pass_ctx *c, ir_node *n, int64_t max_bytes, ir_value **repl, bool *folded)
{
    ir_graph *g = c->g;
    const ir_tensor *in[FOLD_MAX_IO];
    ir_tensor stand_in;
    *folded = false;
    if (n->nin > FOLD_MAX_IO || n->nout > FOLD_MAX_IO)
        return 0;
    /* bytes of the distinct constants n consumes: the budget a large
     * result may not exceed */
    int64_t in_bytes = 0;
    bool all_const = true;
    for (int i = 0; i < n->nin; i++) {
        const ir_value *v = n->in[i];
        in[i] = NULL;
        if (!v)
            continue;
        if (v->kind != IR_VAL_CONST) {
            all_const = false;
            break;
        }
        in[i] = &v->cval;
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = n->in[j] == v;
        if (!seen && !ir_add_ok(in_bytes, (int64_t)v->cval.nbytes, &in_bytes))
            in_bytes = INT64_MAX;
    }
    if (!all_const) {
        if ((n->op != IR_OP_SHAPE && n->op != IR_OP_SIZE) || n->nin != 1 || !n->in[0] ||
            !pass_shape_only_input(n, n->in[0], &stand_in))
            return 0;
        in[0] = &stand_in;
        in_bytes = 0;
    }
    /* A Loop runs until its trip count or its body's condition stops it:
     * with no constant bound on the trips, evaluating it could keep the
     * compiler busy for ever, so only a bounded Loop is folded. */
    if (n->op == IR_OP_LOOP &&
        (n->nin < 1 || !in[0] || in[0]->numel != 1 || ir_tensor_geti(in[0], 0) > FOLD_MAX_TRIPS))
        return 0;

    /* The output types first, so a result over the cap is never computed. */
    ir_type tin[FOLD_MAX_IO], tout[FOLD_MAX_IO];
    const ir_type *tin_ptr[FOLD_MAX_IO];
    for (int i = 0; i < n->nin; i++) {
        tin_ptr[i] = NULL;
        if (in[i]) {
            memset(&tin[i], 0, sizeof tin[i]);
            ir_type_of_tensor(in[i], &tin[i]);
            tin_ptr[i] = &tin[i];
        }
    }
    memset(tout, 0, sizeof(ir_type) * (size_t)n->nout);
    if (ir_node_check_arity(n, c->diag) < 0)
        return -1;
    ir_shape_ctx sc = {n, n->nin, n->nout, tin_ptr, in, tout, c->diag, NULL};
    if (ir_ops[n->op].shape(&sc) < 0)
        return -1;
    int64_t out_bytes = 0;
    for (int i = 0; i < n->nout; i++) {
        int64_t b = type_bytes(&tout[i]);
        /* not static: let the evaluator say why */
        if (b < 0 || !ir_add_ok(out_bytes, b, &out_bytes)) {
            out_bytes = -1;
            break;
        }
    }
    if (out_bytes > max_bytes && out_bytes > in_bytes)
        return 0;

    ir_tensor out[FOLD_MAX_IO];
    if (ir_eval_node(n, in, out, c->diag) < 0)
        return -1;
    int64_t created = 0;
    for (int i = 0; i < n->nout; i++)
        created += (int64_t)out[i].nbytes;
    if (created > max_bytes && created > in_bytes) {
        ir_tensors_free(out, n->nout);
        return 0;
    }
    for (int i = 0; i < n->nout; i++) {
        ir_type t = {0};
        ir_type_of_tensor(&out[i], &t);
        /* The constant takes the output's name: the old value is erased
         * below and dropped by the compaction before anyone looks again. */
        ir_value *cv = ir_graph_add_const(g, n->out[i]->name, &t, out[i].data, c->diag);
        if (!cv) {
            ir_tensors_free(out, n->nout);
            return -1;
        }
        repl[n->out[i]->id] = cv;
    }
    ir_tensors_free(out, n->nout);
    ir_node_erase(n);
    pass_stat(c, "bytes created", created);
    *folded = true;
    return 0;
}

/* A node whose output's every element is known as a constant by shape
 * inference (a shape value, ir/shapeval.c) folds to that constant even
 * though its operands are not constant: Gather(Shape(x), 1) of an
 * [N, 16] x is 16 for every N. */
static int fold_shape_value(pass_ctx *c, ir_node *n, ir_value **repl, bool *folded)
{
    *folded = false;
    const ir_value *v = n->nout == 1 ? n->out[0] : NULL;
    if (!v || !v->sv.known || !ir_type_is_static(&v->type) || ir_ops[n->op].flags & IR_F_INTERNAL)
        return 0;
    for (int i = 0; i < v->sv.n; i++)
        if (!ir_dim_is_const(v->sv.e[i]))
            return 0;
    ir_value *cv = ir_graph_add_const(c->g, v->name, &v->type, NULL, c->diag);
    if (!cv)
        return -1;
    for (int i = 0; i < v->sv.n; i++)
        ir_tensor_seti(&cv->cval, i, v->sv.e[i].v);
    repl[v->id] = cv;
    ir_node_erase(n);
    *folded = true;
    return 0;
}

/* Folds c->g; the count of folded nodes in *count. */
static int fold_graph(pass_ctx *c, int64_t *count)
{
    ir_graph *g = c->g;
    int64_t max_bytes = pass_opt_int(c, "max-bytes", 1048576);
    /* Only values that exist now can be replaced; new constants are
     * appended after them and are never replaced themselves. */
    int nv = g->nvalues, nn = g->nnodes;
    ir_value **repl = calloc((size_t)nv + 1, sizeof *repl);
    if (!repl)
        return ir_errorf(c->diag, "out of memory");
    int64_t folded_nodes = 0;
    int rc = 0;
    for (int k = 0; k < nn; k++) {
        ir_node *n = g->nodes[k];
        if (n->dead)
            continue;
        bool replaced = false;
        for (int i = 0; i < n->nin; i++)
            if (n->in[i] && n->in[i]->id < nv && repl[n->in[i]->id]) {
                n->in[i] = repl[n->in[i]->id];
                replaced = true;
            }
        /* after an error only the uses of what folded are redirected:
         * a subgraph's folding stops there, and the nodes it erased must
         * not stay in use */
        if (rc < 0)
            continue;
        /* an operand that became constant may decide the output's shape
         * (Pad's pads, Reduce's axes), and so may the shapes that follow
         * from it; later Shape ops then fold */
        if ((replaced || folded_nodes) && ir_infer_node(n, c->diag) < 0) {
            rc = -1;
            continue;
        }
        bool folded;
        if (fold_node(c, n, max_bytes, repl, &folded) < 0 ||
            (!folded && fold_shape_value(c, n, repl, &folded) < 0)) {
            rc = -1;
            continue;
        }
        folded_nodes += folded;
    }
    for (int i = 0; i < g->noutputs; i++) {
        ir_value *v = g->outputs[i];
        if (v->id < nv && repl[v->id])
            g->outputs[i] = repl[v->id];
    }
    free(repl);
    if (folded_nodes) {
        ir_graph_compact(g);
        c->changed = true;
    }
    *count += folded_nodes;
    return rc;
}

/* Folds the subgraphs of g's nodes, quietly (an error only stops folding
 * that subgraph: see the top), each before its own subgraphs. */
static void fold_subs(pass_ctx *c, const ir_graph *g, int depth, int64_t *count)
{
    ir_graph *sub;
    for (int k = 0; k < g->nnodes && depth < IR_MAX_SUBGRAPH_DEPTH; k++)
        for (int a = 0; (sub = ir_node_subgraph(g->nodes[k], &a));) {
            ir_graph *top = c->g;
            icc_diag *diag = c->diag, quiet;
            c->g = sub;
            c->diag = &quiet;
            (void)fold_graph(c, count);
            c->g = top;
            c->diag = diag;
            fold_subs(c, sub, depth + 1, count);
        }
}

int pass_fold(pass_ctx *c)
{
    /* listed even when nothing folds, in this order */
    pass_stat(c, "constants folded", 0);
    pass_stat(c, "bytes created", 0);
    int64_t count = 0, top = 0;
    if (fold_graph(c, &top) < 0)
        return -1;
    count = top;
    fold_subs(c, c->g, 0, &count);
    pass_stat(c, "constants folded", count);
    /* the control nodes' results, and what follows them, see what their
     * subgraphs now give */
    if (count > top && ir_infer_shapes(c->g, c->diag) < 0)
        return -1;
    return 0;
}
