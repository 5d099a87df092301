/* dce.c - dead code elimination: nodes none of whose outputs are used
 * (transitively) by a graph output, and constants nothing uses.
 * Graph inputs stay even when unused: they are the model's interface. */
#include "passes/pass.h"

#include <stdlib.h>

int pass_dce(pass_ctx *c)
{
    ir_graph *g = c->g;
    int *uses = malloc(sizeof(int) * ((size_t)g->nvalues + 1));
    if (!uses)
        return ir_errorf(c->diag, "out of memory");
    ir_graph_count_uses(g, uses);
    int64_t nodes = 0, consts = 0, bytes = 0;
    /* Walking backwards, a node is dead when none of its outputs is used;
     * erasing it releases its inputs, which may kill earlier nodes. */
    for (int k = g->nnodes - 1; k >= 0; k--) {
        ir_node *n = g->nodes[k];
        bool used = false;
        for (int i = 0; i < n->nout; i++)
            used |= uses[n->out[i]->id] > 0;
        if (used)
            continue;
        for (int i = 0; i < n->nin; i++)
            if (n->in[i])
                uses[n->in[i]->id]--;
        ir_node_erase(n);
        nodes++;
    }
    for (int i = 0; i < g->nvalues; i++) {
        ir_value *v = g->values[i];
        if (v->kind == IR_VAL_CONST && !v->dead && uses[i] == 0) {
            ir_value_erase(v);
            consts++;
            bytes += (int64_t)v->cval.nbytes;
        }
    }
    free(uses);
    if (nodes || consts) {
        ir_graph_compact(g);
        c->changed = true;
    }
    pass_stat(c, "nodes removed", nodes);
    pass_stat(c, "constants removed", consts);
    pass_stat(c, "constant bytes freed", bytes);
    return 0;
}
