/* verify.c - structural checks of a graph, and static shape inference. */
#include "ir/ops.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_attrs(const ir_node *n, icc_diag *d)
{
    for (int i = 0; i < n->nattr; i++) {
        const ir_attr *a = &n->attrs[i];
        const ir_attr_schema *s = ir_op_find_attr(n->op, a->name);
        if (!s)
            return ir_node_errorf(d, n, "unknown attribute '%s'", a->name);
        if (s->kind != a->kind)
            return ir_node_errorf(d, n, "attribute '%s' has the wrong kind", a->name);
        for (int j = 0; j < i; j++)
            if (!strcmp(n->attrs[j].name, a->name))
                return ir_node_errorf(d, n, "attribute '%s' given twice", a->name);
    }
    const ir_attr_schema *s;
    for (int i = 0; (s = ir_op_attr_schema(n->op, i)); i++)
        if (s->required && !ir_node_attr(n, s->name))
            return ir_node_errorf(d, n, "required attribute '%s' is missing", s->name);
    return 0;
}

/* Shape functions and kernels index inputs below min_in without checking:
 * everything that calls them checks the arity first, here. */
int ir_node_check_arity(const ir_node *n, icc_diag *d)
{
    if (n->op < 0 || n->op >= IR_OP_COUNT)
        return ir_errorf(d, "node '%.200s' has an invalid op", n->name);
    const ir_op_info *op = &ir_ops[n->op];
    if (n->ncap < 0 || n->ncap > n->nin || (n->ncap && !(op->flags & IR_F_CONTROL)))
        return ir_node_errorf(d, n, "has %d captures of %d inputs", n->ncap, n->nin);
    int nin = n->nin - n->ncap;
    if (nin < op->min_in || (op->max_in >= 0 && nin > op->max_in))
        return ir_node_errorf(d, n, "has %d inputs; expected %d to %d", nin, op->min_in, op->max_in);
    if (n->nout < op->min_out || (op->max_out >= 0 && n->nout > op->max_out))
        return ir_node_errorf(d, n, "has %d outputs; expected %d to %d", n->nout, op->min_out, op->max_out);
    for (int i = 0; i < op->min_in; i++)
        if (!n->in[i])
            return ir_node_errorf(d, n, "required input %d is missing", i);
    for (int i = nin; i < n->nin; i++)
        if (!n->in[i])
            return ir_node_errorf(d, n, "capture %d is missing", i - nin);
    return 0;
}

/* A subgraph attribute: its own verification, its interface against the
 * node (formal inputs, then one input per capture with the captured
 * value's dtype; the outputs the op expects) and the nesting bound. */
static int check_subgraph(const ir_node *n, const ir_attr *a, icc_diag *d)
{
    const ir_graph *s = a->graph;
    if (!s)
        return ir_node_errorf(d, n, "attribute '%s' has no graph", a->name);
    if (ir_graph_depth(s) > IR_MAX_SUBGRAPH_DEPTH)
        return ir_node_errorf(d, n, "subgraphs nest deeper than %d", IR_MAX_SUBGRAPH_DEPTH);
    int formal = ir_control_formal_inputs(n), nout = ir_control_sub_outputs(n);
    if (formal < 0 || nout < 0)
        return ir_node_errorf(d, n, "inputs and outputs do not fit the op's subgraph interface");
    if (s->ninputs != formal + n->ncap)
        return ir_node_errorf(d, n, "%s has %d inputs; expected %d (%d formal, %d captures)",
                              a->name, s->ninputs, formal + n->ncap, formal, n->ncap);
    if (s->noutputs != nout)
        return ir_node_errorf(d, n, "%s has %d outputs; expected %d", a->name, s->noutputs, nout);
    for (int j = 0; j < n->ncap; j++) {
        const ir_value *o = n->in[n->nin - n->ncap + j], *i = s->inputs[formal + j];
        if (o->type.dtype != IR_UNDEF && i->type.dtype != IR_UNDEF && o->type.dtype != i->type.dtype)
            return ir_node_errorf(d, n, "%s captures '%s' (%s) as '%s' of dtype %s", a->name,
                                  o->name, ir_dtype_name(o->type.dtype), i->name,
                                  ir_dtype_name(i->type.dtype));
    }
    if (ir_verify(s, d) < 0) {
        char m[sizeof d->msg];
        memcpy(m, d->msg, sizeof m);
        return ir_node_errorf(d, n, "%s: %s", a->name, m);
    }
    return 0;
}

/* Value names are checked unique by sorting a copy of the pointers. */
static int cmp_name(const void *a, const void *b)
{
    return strcmp((*(ir_value *const *)a)->name, (*(ir_value *const *)b)->name);
}

int ir_verify(const ir_graph *g, icc_diag *d)
{
    int rc = -1;
    bool *defined = calloc((size_t)g->nvalues + 1, 1);
    ir_value **sorted = malloc(sizeof(ir_value *) * ((size_t)g->nvalues + 1));
    if (!defined || !sorted) {
        ir_errorf(d, "out of memory");
        goto done;
    }
    for (int i = 0; i < g->nvalues; i++) {
        const ir_value *v = g->values[i];
        if (v->id != i) {
            ir_errorf(d, "value '%s' has id %d at index %d", v->name, v->id, i);
            goto done;
        }
        if (v->kind == IR_VAL_CONST)
            defined[i] = true;
        sorted[i] = g->values[i];
    }
    qsort(sorted, (size_t)g->nvalues, sizeof *sorted, cmp_name);
    for (int i = 1; i < g->nvalues; i++)
        if (!strcmp(sorted[i - 1]->name, sorted[i]->name)) {
            ir_errorf(d, "value name '%.200s' is defined twice", sorted[i]->name);
            goto done;
        }
    for (int i = 0; i < g->ninputs; i++) {
        if (g->inputs[i]->kind != IR_VAL_INPUT) {
            ir_errorf(d, "graph input '%s' is not an input value", g->inputs[i]->name);
            goto done;
        }
        defined[g->inputs[i]->id] = true;
    }
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        if (ir_node_check_arity(n, d) < 0)
            goto done;
        for (int i = 0; i < n->nin; i++) {
            const ir_value *v = n->in[i];
            if (!v)
                continue;
            if (!defined[v->id]) {
                ir_node_errorf(d, n, "input '%s' is used before it is defined (or never defined)", v->name);
                goto done;
            }
        }
        if (n->nin && n->in[0] && n->in[0]->type.dtype != IR_UNDEF &&
            !ir_op_accepts_dtype(n->op, n->in[0]->type.dtype)) {
            ir_node_errorf(d, n, "input dtype %s is not supported (expects %s)",
                           ir_dtype_name(n->in[0]->type.dtype), ir_ops[n->op].types);
            goto done;
        }
        if (check_attrs(n, d) < 0)
            goto done;
        for (int i = 0; i < n->nattr; i++)
            if (n->attrs[i].kind == IR_ATTR_GRAPH && check_subgraph(n, &n->attrs[i], d) < 0)
                goto done;
        for (int i = 0; i < n->nout; i++) {
            const ir_value *v = n->out[i];
            if (!v || v->def != n || v->def_index != i || v->kind != IR_VAL_NODE) {
                ir_node_errorf(d, n, "output %d is not linked to the node", i);
                goto done;
            }
            defined[v->id] = true;
        }
    }
    for (int i = 0; i < g->noutputs; i++)
        if (!defined[g->outputs[i]->id]) {
            ir_errorf(d, "graph output '%s' is never defined", g->outputs[i]->name);
            goto done;
        }
    if (ir_verify_groups(g, d) < 0)
        goto done;
    rc = 0;
done:
    free(defined);
    free(sorted);
    return rc;
}

/* A declared shape that disagrees with the computed one: under the
 * top-level graph's decl_lenient, counted and the computed one kept (0);
 * else an error (-1). */
static int decl_conflict(const ir_node *n, icc_diag *d, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int decl_conflict(const ir_node *n, icc_diag *d, const char *fmt, ...)
{
    ir_graph *top = n->graph;
    while (top && top->parent)
        top = top->parent;
    va_list ap;
    va_start(ap, fmt);
    if (!top || !top->decl_lenient) {
        ir_located_verrorf(d, n->name, ir_ops[n->op].name, fmt, ap);
        va_end(ap);
        return -1;
    }
    if (top->ndecl_conflicts++ == 0) {
        char msg[512];
        int k = snprintf(msg, sizeof msg, "node '%.100s' (%s): ", n->name, ir_ops[n->op].name);
        vsnprintf(msg + k, sizeof msg - (size_t)k, fmt, ap);
        top->decl_note = ir_arena_strdup(top->arena, msg);
    }
    va_end(ap);
    return 0;
}

/* Keeps the more precise of an inferred and a declared type; constant
 * dims that disagree are an error (decl_conflict: the inferred type,
 * while the frontend reads the model). */
static int merge_type(const ir_node *n, int idx, ir_type *inf, const ir_type *decl, icc_diag *d)
{
    if (decl->dtype != IR_UNDEF && inf->dtype != IR_UNDEF && decl->dtype != inf->dtype)
        return ir_node_errorf(d, n, "output %d is declared %s but computes %s", idx,
                              ir_dtype_name(decl->dtype), ir_dtype_name(inf->dtype));
    if (inf->dtype == IR_UNDEF)
        inf->dtype = decl->dtype;
    if (decl->rank < 0)
        return 0;
    if (inf->rank < 0) {
        ir_dtype dt = inf->dtype;
        *inf = *decl;
        inf->dtype = dt;
        return 0;
    }
    if (inf->rank != decl->rank)
        return decl_conflict(n, d, "output %d is declared with rank %d but has rank %d", idx, decl->rank,
                             inf->rank);
    for (int i = 0; i < inf->rank; i++) {
        ir_dim a = inf->dims[i], b = decl->dims[i];
        if (a.sym == 0 && b.sym == 0 && a.v != b.v)
            return decl_conflict(n, d, "output %d dim %d is declared %lld but is %lld", idx, i, (long long)b.v,
                                 (long long)a.v);
    }
    for (int i = 0; i < inf->rank; i++) {
        ir_dim a = inf->dims[i], b = decl->dims[i];
        if (a.sym == IR_DIM_UNKNOWN || (a.sym > 0 && b.sym == 0))
            inf->dims[i] = b;
    }
    return 0;
}

int ir_infer_node(ir_node *n, icc_diag *d)
{
    const ir_type *tin[64];
    const ir_tensor *val[64];
    const ir_shape_value *svp[64];
    ir_shape_value sv[64];
    ir_type tout[64];
    if (n->nin > 64 || n->nout > 64)
        return ir_node_errorf(d, n, "more than 64 inputs or outputs");
    if (ir_node_check_arity(n, d) < 0)
        return -1;
    for (int i = 0; i < n->nin; i++) {
        tin[i] = n->in[i] ? &n->in[i]->type : NULL;
        val[i] = n->in[i] && n->in[i]->kind == IR_VAL_CONST ? &n->in[i]->cval : NULL;
        svp[i] = !val[i] && ir_value_shape_value(n->in[i], &sv[i]) ? &sv[i] : NULL;
        if (tin[i] && tin[i]->dtype == IR_UNDEF)
            return ir_node_errorf(d, n, "input '%s' has no known dtype", n->in[i]->name);
    }
    memset(tout, 0, sizeof(ir_type) * (size_t)n->nout);
    ir_shape_ctx sc = {n, n->nin, n->nout, tin, val, tout, d, svp};
    if (ir_ops[n->op].shape(&sc) < 0)
        return -1;
    for (int i = 0; i < n->nout; i++) {
        if (merge_type(n, i, &tout[i], &n->out[i]->type, d) < 0)
            return -1;
        n->out[i]->type = tout[i];
        /* No tensor may outgrow what the interpreter and codegen size in
         * int64 bytes (e.g. a Resize with scales of 1e10); symbolic dims
         * count as 1 here and are checked at run time. */
        int64_t bytes = ir_dtype_size(tout[i].dtype) ? (int64_t)ir_dtype_size(tout[i].dtype) : 1;
        for (int k = 0; k < tout[i].rank; k++)
            if (tout[i].dims[k].sym == 0 &&
                (!ir_mul_ok(bytes, tout[i].dims[k].v, &bytes) || bytes > IR_MAX_TENSOR_BYTES))
                return ir_node_errorf(d, n, "output '%s' would be larger than the limit of %lld bytes",
                                      n->out[i]->name, (long long)IR_MAX_TENSOR_BYTES);
    }
    ir_infer_shape_value(n);
    return 0;
}

/* Whether input i of elementwise node n has dim d of its output's shape
 * (same rank): every other input that broadcasts with it has that dim 1
 * or lacks it (CastLike's second input gives only a dtype). */
static bool ew_dim_is_out(const ir_node *n, int i, int d)
{
    const ir_type *to = &n->out[0]->type;
    for (int j = 0; j < n->nin && n->op != IR_OP_CAST_LIKE; j++) {
        if (j == i)
            continue;
        if (!n->in[j] || n->in[j]->type.rank < 0)
            return false;
        const ir_type *tj = &n->in[j]->type;
        int dj = tj->rank - (to->rank - d);
        if (dj >= 0 && !(tj->dims[dj].sym == 0 && tj->dims[dj].v == 1))
            return false;
    }
    return true;
}

/* Backward through the elementwise ops (Cast, Relu, a Mul by a scalar,
 * ...): a node result whose dim is unknown takes the constant its
 * consumer's output has where the other inputs do not decide it
 * (ew_dim_is_out), e.g. the shape a model declares for a graph output (a
 * Loop's scan output cast to f16). The run still decides the length; code
 * that stores into a declared length checks it (NonMaxSuppression, a
 * Loop's scan outputs, Range). True when a dim changed. */
static bool infer_backward(ir_graph *g)
{
    bool changed = false;
    for (int k = g->nnodes - 1; k >= 0; k--) {
        const ir_node *n = g->nodes[k];
        if (!(ir_ops[n->op].flags & IR_F_ELEMWISE) || n->nout != 1)
            continue;
        const ir_type *to = &n->out[0]->type;
        for (int i = 0; i < (n->op == IR_OP_CAST_LIKE ? 1 : n->nin); i++) {
            if (!n->in[i] || n->in[i]->kind != IR_VAL_NODE || n->in[i]->type.rank != to->rank)
                continue;
            ir_type *ti = &n->in[i]->type;
            for (int d = 0; d < ti->rank; d++)
                if (ti->dims[d].sym == IR_DIM_UNKNOWN && to->dims[d].sym == 0 && ew_dim_is_out(n, i, d)) {
                    ti->dims[d] = to->dims[d];
                    changed = true;
                }
        }
    }
    return changed;
}

int ir_infer_shapes(ir_graph *g, icc_diag *d)
{
    /* a round per unification of input dims (ir/unify.c): what it joins
     * can make further dims known, which may join more */
    for (int round = 0; round < 6; round++) {
        int aliases = g->naliases;
        for (int pass = 0; pass < 4; pass++) {
            for (int k = 0; k < g->nnodes; k++)
                if (ir_infer_node(g->nodes[k], d) < 0)
                    return -1;
            if (!infer_backward(g))
                break;
        }
        int u = round < 3 ? ir_unify_input_dims(g) : 0;
        if (u < 0)
            return ir_errorf(d, "out of memory");
        /* new aliases (ir_graph_sym_alias) retype what was derived as
         * the aliased symbols: another round */
        if (u == 0 && (g->naliases == aliases || round == 5))
            break;
    }
    return 0;
}
