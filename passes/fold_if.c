/* fold_if.c - an If whose condition is known at compile time is replaced
 * by the branch it takes: the branch's constants and nodes are copied into
 * the graph (names prefixed with the If's and made unique), its inputs
 * bound to the values the If captures, and the If's outputs keep their
 * names on the values the branch returns. Nested Ifs come along as nodes
 * and are folded in turn when their conditions become known.
 *
 * The condition is known when it is a constant, or computed from
 * constants and static shapes only (a comparison of a --bind'ed input; a
 * PyTorch export's `x.shape[-1] == 1` as Equal(Gather(Shape(x))) with x's
 * shape known): that small cone is evaluated here with the reference kernels, so the pass needs no
 * `fold` before it, and a `fold` after it folds what the spliced branch
 * computes from constants. */
#include "passes/pass.h"
#include "ir/ops.h"
#include "ir/ref/interp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A condition's cone is folded here only when it is small. */
#define MAX_CONE_DEPTH 16
#define MAX_CONE_ELEMS 4096

/* *out = v's value when v is a constant or computed from constants alone
 * (within the bounds); 1 if known (out->data malloc'd unless *borrowed),
 * 0 if not, -1 on an evaluation error. */
static int known_value(const ir_value *v, int depth, ir_tensor *out, bool *borrowed, icc_diag *d)
{
    *borrowed = false;
    if (v->kind == IR_VAL_CONST) {
        *out = v->cval;
        *borrowed = true;
        return 1;
    }
    if (v->kind != IR_VAL_NODE || depth >= MAX_CONE_DEPTH)
        return 0;
    const ir_node *n = v->def;
    int64_t numel;
    if (n->nin > 16 || n->nout > 16 || (ir_ops[n->op].flags & IR_F_CONTROL) ||
        !ir_type_numel(&v->type, &numel) || numel > MAX_CONE_ELEMS)
        return 0;
    ir_tensor vals[16], outs[16];
    const ir_tensor *in[16];
    bool own[16] = {false};
    int rc = 1;
    for (int i = 0; i < n->nin; i++) {
        in[i] = NULL;
        if (!n->in[i])
            continue;
        bool b;
        int r = known_value(n->in[i], depth + 1, &vals[i], &b, d);
        if (r == 0 && (n->op == IR_OP_SHAPE || n->op == IR_OP_SIZE) && n->nin == 1 &&
            pass_shape_only_input(n, n->in[i], &vals[i]))
            r = 1, b = true;   /* Shape, Size of a static type: its dims are all they read */
        if (r <= 0) {
            rc = r;
            for (int k = 0; k < i; k++)
                if (own[k])
                    free(vals[k].data);
            return rc;
        }
        own[i] = !b;
        in[i] = &vals[i];
    }
    if (ir_eval_node(n, in, outs, d) < 0)
        rc = -1;
    for (int i = 0; i < n->nin; i++)
        if (own[i])
            free(vals[i].data);
    if (rc < 0)
        return -1;
    *out = outs[v->def_index];
    for (int i = 0; i < n->nout; i++)
        if (i != v->def_index)
            free(outs[i].data);
    return 1;
}

/* Copies branch b of If node n into g; map[] (b->nvalues entries) takes
 * each branch value to its copy. */
static int splice(ir_graph *g, ir_node *n, const ir_graph *b, ir_value **map, int64_t *nodes,
                  icc_diag *d)
{
    char buf[512], base[256];
    snprintf(base, sizeof base, "%.200s", n->name[0] ? n->name : n->out[0]->name);
    int formal = b->ninputs - n->ncap;
    for (int j = 0; j < n->ncap; j++)
        map[b->inputs[formal + j]->id] = n->in[n->nin - n->ncap + j];
    for (int i = 0; i < b->nvalues; i++) {
        const ir_value *v = b->values[i];
        if (v->kind != IR_VAL_CONST || v->dead)
            continue;
        const char *nm = ir_graph_fresh_name(g, base, "", buf, sizeof buf);
        char full[600];
        snprintf(full, sizeof full, "%.250s/%.250s", nm, v->name);
        nm = ir_graph_fresh_name(g, full, "", buf, sizeof buf);
        if (!(map[i] = ir_graph_add_const(g, nm, &v->type, v->cval.data, d)))
            return -1;
    }
    for (int k = 0; k < b->nnodes; k++) {
        const ir_node *s = b->nodes[k];
        ir_value *in[64];
        const char *outs[64];
        char names[64][300];
        if (s->nin > 64 || s->nout > 64)
            return ir_node_errorf(d, s, "more than 64 inputs or outputs");
        for (int i = 0; i < s->nin; i++)
            in[i] = s->in[i] ? map[s->in[i]->id] : NULL;
        for (int i = 0; i < s->nout; i++) {
            char full[600];
            snprintf(full, sizeof full, "%.250s/%.250s", base, s->out[i]->name);
            snprintf(names[i], sizeof names[i], "%s", ir_graph_fresh_name(g, full, "", buf, sizeof buf));
            outs[i] = names[i];
        }
        char nname[600];
        snprintf(nname, sizeof nname, "%.250s/%.250s", base,
                 s->name[0] || !s->nout ? s->name : s->out[0]->name);
        ir_node *c = ir_graph_add_node(g, s->op, nname, s->nin, in, s->nout, outs, d);
        if (!c)
            return -1;
        c->ncap = s->ncap;
        for (int i = 0; i < s->nattr; i++)
            if (ir_node_add_attr(g, c, &s->attrs[i]) < 0)
                return ir_errorf(d, "out of memory");
        for (int i = 0; i < s->nout; i++) {
            if (!ir_type_rehome(b, g, &s->out[i]->type, &c->out[i]->type))
                return ir_errorf(d, "out of memory");
            map[s->out[i]->id] = c->out[i];
        }
        (*nodes)++;
    }
    return 0;
}

/* The If's outputs keep their names (they may be the model's outputs):
 * on the branch's result when the splice made it, else on an Identity of
 * what the branch returns (a captured value, a constant, one result
 * returned twice). */
static int rewire(ir_graph *g, ir_node *n, const ir_graph *b, ir_value **map, int first_new,
                  icc_diag *d)
{
    for (int i = 0; i < n->nout; i++) {
        ir_value *from = n->out[i], *to = map[b->outputs[i]->id];
        const char *name = from->name;
        bool fresh = to->kind == IR_VAL_NODE && to->id >= first_new;
        for (int j = 0; j < i && fresh; j++)
            fresh = map[b->outputs[j]->id] != to;
        if (!fresh) {
            ir_node *id = ir_graph_add_node(g, IR_OP_IDENTITY, n->name, 1, &to, 1, NULL, d);
            if (!id)
                return -1;
            id->out[0]->type = to->type;
            to = id->out[0];
        }
        ir_replace_all_uses(g, from, to);
        from->name = ""; /* erased with the If */
        to->name = name;
    }
    return 0;
}

/* Folds the Ifs of g known now, round after round (spliced branches may
 * hold more). */
static int fold_ifs(pass_ctx *c, ir_graph *g, int64_t *folded, int64_t *nodes)
{
    bool again = true;
    while (again) {
        again = false;
        int nn = g->nnodes;
        for (int k = 0; k < nn; k++) {
            ir_node *n = g->nodes[k];
            if (n->dead || n->op != IR_OP_IF)
                continue;
            ir_tensor cond;
            bool borrowed;
            int r = known_value(n->in[0], 0, &cond, &borrowed, c->diag);
            if (r < 0)
                return -1;
            if (r == 0)
                continue;
            bool take = cond.numel == 1 && ir_tensor_geti(&cond, 0) != 0;
            int64_t numel = cond.numel;
            if (!borrowed)
                free(cond.data);
            if (numel != 1)
                return ir_node_errorf(c->diag, n, "cond has %lld elements; expected 1",
                                      (long long)numel);
            const ir_graph *b = ir_attr_graph(n, take ? "then_branch" : "else_branch");
            if (!b)
                return ir_node_errorf(c->diag, n, "has no %s", take ? "then_branch" : "else_branch");
            ir_value **map = calloc((size_t)b->nvalues + 1, sizeof *map);
            if (!map)
                return ir_errorf(c->diag, "out of memory");
            int first_new = g->nvalues;
            int rc = splice(g, n, b, map, nodes, c->diag);
            if (rc == 0)
                rc = rewire(g, n, b, map, first_new, c->diag);
            free(map);
            if (rc < 0)
                return -1;
            ir_node_erase(n);
            (*folded)++;
            again = true;
        }
        if (again) {
            ir_graph_compact(g);
            if (ir_graph_toposort(g, c->diag) < 0)
                return -1;
            c->changed = true;
        }
    }
    return 0;
}

/* The Ifs inside g's subgraphs (a branch's own `if x.shape[-1] == 1`
 * once fold made its shapes static), quietly: a branch that never runs
 * may hold a condition that does not evaluate. */
static void fold_ifs_below(pass_ctx *c, ir_graph *g, int depth, int64_t *folded, int64_t *nodes)
{
    ir_graph *sub;
    for (int k = 0; k < g->nnodes && depth < IR_MAX_SUBGRAPH_DEPTH; k++)
        for (int a = 0; (sub = ir_node_subgraph(g->nodes[k], &a));) {
            icc_diag *diag = c->diag, quiet;
            c->diag = &quiet;
            (void)fold_ifs(c, sub, folded, nodes);
            c->diag = diag;
            fold_ifs_below(c, sub, depth + 1, folded, nodes);
        }
}

int pass_fold_if(pass_ctx *c)
{
    int64_t folded = 0, nodes = 0;
    if (fold_ifs(c, c->g, &folded, &nodes) < 0)
        return -1;
    fold_ifs_below(c, c->g, 0, &folded, &nodes);
    if (folded && ir_infer_shapes(c->g, c->diag) < 0)
        return -1;
    pass_stat(c, "ifs folded", folded);
    pass_stat(c, "nodes spliced", nodes);
    return 0;
}
