/* load_time.c - which kernels of a graph compute only from constants, so
 * that a compiled model can run them once when it is loaded instead of on
 * every run (docs/runtime.md, "Load-time kernels"). The memory plan leaves
 * their results out of the arena (passes/plan.c) and the program builder
 * runs them in the model's init function (codegen/program.c); both ask
 * this one rule.
 */
#include "ir/ops.h"

#include <stdlib.h>

/* A kernel (a fused group's root k, or a node in no group) runs at load
 * when every value its group reads from outside is a constant or the
 * result of another load-time kernel, it reads at least one (a generator
 * with no inputs is not assumed deterministic), it is not control flow,
 * every result has a static size (a load-time value never depends on a
 * symbol) and none is a graph output (those live in the caller's
 * buffers). Only g's own nodes are judged: a subgraph's kernels stay in
 * the run. */
int ir_graph_load_time(const ir_graph *g, const int *root, bool *at_load)
{
    bool *ok = calloc((size_t)g->nvalues + 1, 1), *bad = calloc((size_t)g->nnodes + 1, 1);
    bool *is_out = calloc((size_t)g->nvalues + 1, 1);
    if (!ok || !bad || !is_out) {
        free(ok);
        free(bad);
        free(is_out);
        return -1;
    }
    for (int i = 0; i < g->nvalues; i++)
        ok[i] = g->values[i]->kind == IR_VAL_CONST;
    for (int i = 0; i < g->noutputs; i++)
        is_out[g->outputs[i]->id] = true;
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        bool all = !(ir_ops[n->op].flags & IR_F_CONTROL) && n->ncap == 0;
        int present = 0;
        for (int i = 0; i < n->nin; i++)
            if (n->in[i]) {
                present++;
                all &= ok[n->in[i]->id];
            }
        for (int i = 0; i < n->nout; i++) {
            int64_t numel;
            all &= ir_type_numel(&n->out[i]->type, &numel) && !is_out[n->out[i]->id];
        }
        int r = root[k];
        if (r != k) {
            /* a member: its results stay inside the kernel at r */
            bad[r] |= !all || present == 0;
            at_load[k] = false;
        } else {
            at_load[k] = all && present > 0 && !bad[k];
        }
        for (int i = 0; i < n->nout; i++)
            ok[n->out[i]->id] = r != k ? all : at_load[k];
    }
    free(ok);
    free(bad);
    free(is_out);
    return 0;
}

/* A reshape (ir_op_is_reshape) in no group whose data input is one of g's
 * inputs, or the result of such a view, with static types of the same
 * bytes, or known symbolic ones of the same dtype (a compiled model checks
 * a symbolic reshape's element counts before its kernels run), and a
 * result that is not a graph output: the result is the input's bytes in
 * the caller's buffer, so it needs no memory and no kernel (a Reshape of
 * an input used to copy it into the arena). */
int ir_graph_input_views(const ir_graph *g, const int *root, bool *view)
{
    bool *in = calloc((size_t)g->nvalues + 1, 1), *is_out = calloc((size_t)g->nvalues + 1, 1);
    if (!in || !is_out) {
        free(in);
        free(is_out);
        return -1;
    }
    for (int i = 0; i < g->ninputs; i++)
        in[g->inputs[i]->id] = true;
    for (int i = 0; i < g->noutputs; i++)
        is_out[g->outputs[i]->id] = true;
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        view[k] = false;
        if (!ir_op_is_reshape(n->op) || root[k] != k || n->nin < 1 || !n->in[0] || n->nout != 1 ||
            !in[n->in[0]->id] || is_out[n->out[0]->id])
            continue;
        const ir_type *a = &n->in[0]->type, *b = &n->out[0]->type;
        int64_t na, nb;
        bool known = a->rank >= 0 && b->rank >= 0, sym = !ir_type_is_static(a) || !ir_type_is_static(b);
        for (int d = 0; known && d < a->rank; d++)
            known = a->dims[d].sym >= 0;
        for (int d = 0; known && d < b->rank; d++)
            known = b->dims[d].sym >= 0;
        if (a->dtype == b->dtype &&
            (sym ? known : ir_type_numel(a, &na) && ir_type_numel(b, &nb) && na == nb))
            view[k] = in[n->out[0]->id] = true;
    }
    free(in);
    free(is_out);
    return 0;
}
