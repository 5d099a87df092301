/* unify.c - input dims that the graph's ops require to be one dim.
 *
 * Exporters name each input's dynamic dims separately (or not at all:
 * the frontend then names them INPUT_dimK), so a recurrent model's
 * state [2, state_dim1, 128] and its audio [input_dim0, 576] carry two
 * batch symbols although the LSTM that reads both requires them equal.
 * Code that needs one symbol per dim (an LSTM's batch, a Concat's other
 * dims, a MatMul's inner dim) then could not compile until the user
 * pinned the second input too. Ops whose ONNX definition requires two
 * dims equal, with no broadcast that would let one of them be 1, make
 * the top-level inputs' free symbols behind them one symbol here (a name
 * the model or --shape gave over a frontend's INPUT_dimK, else the lowest
 * id of the class), or the constant the class meets. A run whose
 * inputs disagree then fails at the input check ("input 'state' dim 1
 * (input_dim0) is 3, but input 'input' dim 0 made input_dim0 1"), where
 * the op itself would have failed. The rules:
 *   Concat: every dim but the axis;
 *   MatMul, MatMulInteger, Gemm: the inner dim of A and of B;
 *   LSTM, GRU, RNN: the batch of X, sequence_lens, initial_h, initial_c.
 * Elementwise broadcasts are left alone: there a dim may be 1 in one
 * operand. Nodes inside subgraphs count too (their symbols matched to
 * the top-level graph's by name): an If branch's LSTM reads the model's
 * state like a top-level one would. */
#include "ir/ops.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    ir_graph *top;
    int32_t *up;    /* union-find over top's symbol ids: up[id] == id at a root */
    int64_t *cv;    /* at a root: the class's constant, -1 none, -2 two different ones */
    bool *in_input; /* a free symbol some top-level input dim is */
    bool *named;    /* ... named by the model or --shape, not INPUT_dimK by the frontend */
} unify;

static int32_t root(const unify *u, int32_t s)
{
    while (u->up[s] != s)
        s = u->up[s];
    return s;
}

/* Dim d of a value of graph g as a class of top: a top-level input's free
 * symbol (> 0), a constant (*c >= 0, returns 0), or nothing usable (-1:
 * unknown, derived, or a symbol no input has). */
static int32_t class_of(const unify *u, const ir_graph *g, ir_dim d, int64_t *c)
{
    *c = -1;
    if (d.sym == 0) {
        *c = d.v;
        return 0;
    }
    if (d.sym < 0)
        return -1;
    int32_t id = d.sym;
    if (g != u->top) {
        const char *name = ir_graph_sym_name(g, d.sym);
        id = -1;
        for (int32_t s = 1; name && s < u->top->nsyms; s++)
            if (!strcmp(u->top->syms[s], name))
                id = s;
        if (id < 0)
            return -1;
    }
    return id < u->top->nsyms && u->in_input[id] ? id : -1;
}

static void set_const(unify *u, int32_t r, int64_t c)
{
    if (c < 0 || u->cv[r] == -2)
        return;
    u->cv[r] = u->cv[r] == -1 || u->cv[r] == c ? c : -2;
}

/* Dims a and b (of values of g) must be equal. */
static void need_eq(unify *u, const ir_graph *g, ir_dim a, ir_dim b)
{
    int64_t ca, cb;
    int32_t sa = class_of(u, g, a, &ca), sb = class_of(u, g, b, &cb);
    if (sa < 0 || sb < 0 || (sa == 0 && sb == 0))
        return;
    if (sa == 0 || sb == 0) {
        set_const(u, root(u, sa ? sa : sb), sa ? cb : ca);
        return;
    }
    int32_t ra = root(u, sa), rb = root(u, sb);
    if (ra == rb)
        return;
    /* the class keeps a name the model or the user gave, else the lower id */
    bool a_first = u->named[ra] != u->named[rb] ? u->named[ra] : ra < rb;
    int32_t lo = a_first ? ra : rb, hi = a_first ? rb : ra;
    u->up[hi] = lo;
    int64_t c = u->cv[hi];
    if (c == -2)
        u->cv[lo] = -2;
    else
        set_const(u, lo, c);
}

static const ir_type *type_at(const ir_node *n, int i, int rank)
{
    const ir_value *v = i < n->nin ? n->in[i] : NULL;
    return v && v->type.rank == rank ? &v->type : NULL;
}

static void node_rules(unify *u, const ir_node *n)
{
    const ir_graph *g = n->graph;
    const ir_type *a = n->nin > 0 && n->in[0] ? &n->in[0]->type : NULL;
    if (!a || a->rank < 0)
        return;
    switch (n->op) {
    case IR_OP_CONCAT: {
        int64_t axis = ir_attr_int(n, "axis", 0);
        axis = axis < 0 ? axis + a->rank : axis;
        for (int i = 1; i < n->nin - n->ncap; i++) {
            const ir_type *b = type_at(n, i, a->rank);
            for (int d = 0; b && d < a->rank; d++)
                if (d != axis)
                    need_eq(u, g, a->dims[d], b->dims[d]);
        }
        break;
    }
    case IR_OP_MATMUL:
    case IR_OP_MATMUL_INTEGER: {
        const ir_type *b = n->in[1] ? &n->in[1]->type : NULL;
        if (a->rank >= 1 && b && b->rank >= 1)
            need_eq(u, g, a->dims[a->rank - 1], b->dims[b->rank == 1 ? 0 : b->rank - 2]);
        break;
    }
    case IR_OP_GEMM: {
        const ir_type *b = type_at(n, 1, 2);
        if (a->rank == 2 && b)
            need_eq(u, g, a->dims[ir_attr_int(n, "transA", 0) ? 0 : 1],
                    b->dims[ir_attr_int(n, "transB", 0) ? 1 : 0]);
        break;
    }
    case IR_OP_LSTM:
    case IR_OP_GRU:
    case IR_OP_RNN: {
        if (a->rank != 3)
            break;
        bool bm = ir_attr_int(n, "layout", 0) != 0;   /* batch-major */
        ir_dim batch = a->dims[bm ? 0 : 1];
        const ir_type *lens = type_at(n, 4, 1);
        if (lens)
            need_eq(u, g, batch, lens->dims[0]);
        for (int i = 5; i <= (n->op == IR_OP_LSTM ? 6 : 5); i++) {
            const ir_type *h = type_at(n, i, 3);
            if (h)
                need_eq(u, g, batch, h->dims[bm ? 0 : 1]);
        }
        break;
    }
    default:
        break;
    }
}

static void graph_rules(unify *u, const ir_graph *g)
{
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        if (n->dead)
            continue;
        node_rules(u, n);
        int i = 0;
        for (const ir_graph *s; (s = ir_node_subgraph(n, &i));)
            graph_rules(u, s);
    }
}

int ir_unify_input_dims(ir_graph *g)
{
    if (g->parent || g->nsyms < 2)
        return 0;
    int32_t ns = g->nsyms;
    unify u = {g, malloc(sizeof(int32_t) * (size_t)ns), malloc(sizeof(int64_t) * (size_t)ns),
               calloc((size_t)ns, sizeof(bool)), calloc((size_t)ns, sizeof(bool))};
    int changed = -1;
    if (!u.up || !u.cv || !u.in_input || !u.named)
        goto done;
    for (int32_t s = 0; s < ns; s++)
        u.up[s] = s, u.cv[s] = -1;
    for (int i = 0; i < g->ninputs; i++)
        for (int k = 0; k < g->inputs[i]->type.rank; k++) {
            int32_t s = g->inputs[i]->type.dims[k].sym;
            if (s > 0 && s < ns && !ir_graph_sym_def(g, s))
                u.in_input[s] = true;
        }
    /* named: some input has it under another name than the frontend's
     * INPUT_dimK for that input and position */
    for (int i = 0; i < g->ninputs; i++)
        for (int k = 0; k < g->inputs[i]->type.rank; k++) {
            int32_t s = g->inputs[i]->type.dims[k].sym;
            char gen[160];
            if (s <= 0 || s >= ns || !u.in_input[s])
                continue;
            ir_unnamed_dim_name(g->inputs[i]->name, k, gen, sizeof gen);
            u.named[s] |= strcmp(g->syms[s], gen) != 0;
        }
    graph_rules(&u, g);
    changed = 0;
    for (int i = 0; i < g->ninputs; i++)
        for (int k = 0; k < g->inputs[i]->type.rank; k++) {
            ir_dim *d = &g->inputs[i]->type.dims[k];
            if (d->sym <= 0 || d->sym >= ns || !u.in_input[d->sym])
                continue;
            int32_t r = root(&u, d->sym);
            ir_dim to = u.cv[r] >= 0 ? ir_dim_const(u.cv[r]) : (ir_dim){0, r};
            if (!ir_dim_eq(*d, to)) {
                *d = to;
                changed = 1;
            }
        }
done:
    free(u.up);
    free(u.cv);
    free(u.in_input);
    free(u.named);
    return changed;
}
