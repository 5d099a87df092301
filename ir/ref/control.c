/* control.c - If, Loop and Scan: their subgraph interfaces, static shape
 * inference through the subgraphs, and the interpreter's evaluation.
 *
 * A subgraph is a closed function: its graph inputs are the op's formal
 * inputs (none for If; iteration, cond and carried values for Loop;
 * states and scan slices for Scan) followed by one input per capture, the
 * node's last ncap inputs (ir.h). Evaluation runs a subgraph with
 * ir_interp_run, so everything the interpreter does for a graph (input
 * checks, freeing after last use) holds inside too. Outputs are sized as
 * the subgraphs run: a Loop's trip count and an If's branch are known only
 * then, so these ops bypass the shape-function-then-kernel path
 * (IR_F_CONTROL in ir_eval_node_into). */
#include "ir/ref/interp.h"
#include "ir/ref/ref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ir_control_formal_inputs(const ir_node *n)
{
    int f = n->nin - n->ncap;
    switch (n->op) {
    case IR_OP_IF: return 0;
    case IR_OP_LOOP: return f < 2 ? 2 : f; /* iteration, cond, carried... */
    case IR_OP_SCAN: return f;
    default: return -1;
    }
}

/* Loop carries max(0, formal - 2) values; Scan formal - num_scan_inputs. */
static int carried(const ir_node *n)
{
    int f = n->nin - n->ncap;
    if (n->op == IR_OP_LOOP)
        return f > 2 ? f - 2 : 0;
    if (n->op == IR_OP_SCAN)
        return f - (int)ir_attr_int(n, "num_scan_inputs", 0);
    return 0;
}

int ir_control_sub_outputs(const ir_node *n)
{
    int N = carried(n);
    if (N < 0 || N > n->nout)
        return -1;
    switch (n->op) {
    case IR_OP_IF: return n->nout;
    case IR_OP_LOOP: return 1 + n->nout;
    case IR_OP_SCAN: return n->ncap <= n->nin && ir_attr_int(n, "num_scan_inputs", 0) >= 1 ? n->nout : -1;
    default: return -1;
    }
}

/* Whether v is a constant true, or body input cin passed on through
 * Identity nodes. */
static bool cond_kept(const ir_value *v, const ir_value *cin)
{
    for (int hops = 0; v && hops < 64; hops++) {
        if (v == cin)
            return true;
        if (v->kind == IR_VAL_CONST)
            return v->cval.numel == 1 && ir_tensor_geti(&v->cval, 0) != 0;
        if (v->kind != IR_VAL_NODE || v->def->op != IR_OP_IDENTITY || v->def->nin < 1)
            return false;
        v = v->def->in[0];
    }
    return false;
}

int64_t ir_loop_static_trips(const ir_node *n, const ir_tensor *trip, const ir_tensor *cond)
{
    const ir_graph *b = ir_attr_graph(n, "body");
    if (n->op != IR_OP_LOOP || !b || b->ninputs < 2 || b->noutputs < 1 || n->nin < 1 || !n->in[0])
        return -1;
    if (!trip && n->in[0]->kind == IR_VAL_CONST)
        trip = &n->in[0]->cval;
    if (!cond && n->nin > 1 && n->in[1] && n->in[1]->kind == IR_VAL_CONST)
        cond = &n->in[1]->cval;
    if (!trip || trip->numel != 1 || (n->nin > 1 && n->in[1] && (!cond || cond->numel != 1)))
        return -1;
    if (n->nin > 1 && n->in[1] && !ir_tensor_geti(cond, 0))
        return 0;   /* the condition is false before the first iteration */
    if (!cond_kept(b->outputs[0], b->inputs[1]))
        return -1;
    int64_t m = ir_tensor_geti(trip, 0);
    return m > 0 ? m : 0;
}

/* The registry's kernel column: control flow never reaches it, since
 * ir_eval_node_into hands these ops to ir_eval_control. */
int ref_control(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "is evaluated through ir_eval_control");
}

/* ---- static shape inference --------------------------------------------- */

/* Checks a subgraph's interface (the verifier's rule, needed before the
 * shape function indexes its inputs). */
static ir_graph *sub_of(ir_shape_ctx *c, const char *name)
{
    const ir_node *n = c->node;
    ir_graph *s = ir_attr_graph(n, name);
    if (!s) {
        ir_node_errorf(c->diag, n, "has no %s", name);
        return NULL;
    }
    int formal = ir_control_formal_inputs(n), nout = ir_control_sub_outputs(n);
    if (formal < 0 || nout < 0 || s->ninputs != formal + n->ncap || s->noutputs != nout) {
        ir_node_errorf(c->diag, n, "%s has %d inputs and %d outputs; expected %d and %d", name,
                       s->ninputs, s->noutputs, formal + n->ncap, nout);
        return NULL;
    }
    return s;
}

/* Sets subgraph input i's type from the node's, re-interning symbols. */
static int set_input(ir_shape_ctx *c, ir_graph *s, int i, const ir_type *t)
{
    if (!ir_type_rehome(c->node->graph, s, t, &s->inputs[i]->type))
        return ir_node_errorf(c->diag, c->node, "out of memory");
    return 0;
}

/* A captured constant that an op reads as an attribute (Unsqueeze's
 * axes, Reshape's shape, Slice's starts: a small integer tensor) becomes a
 * constant of the subgraph, so that shape inference inside and the
 * lowering see its value; the capture input itself stays, unused. */
#define CAPTURE_CONST_MAX 64
static int inline_capture(ir_shape_ctx *c, ir_graph *s, ir_value *in, const ir_value *outer)
{
    const ir_tensor *t = &outer->cval;
    if (outer->kind != IR_VAL_CONST || !(ir_dtype_is_int(t->dtype) || t->dtype == IR_BOOL) ||
        t->numel > CAPTURE_CONST_MAX || (t->numel && !t->data) || ir_value_count_uses(s, in) == 0)
        return 0;
    ir_type ty;
    memset(&ty, 0, sizeof ty);
    ir_type_of_tensor(t, &ty);
    char name[256];
    snprintf(name, sizeof name, "%.200s_captured", in->name);
    ir_value *k = ir_graph_add_const(s, name, &ty, t->data, c->diag);
    if (!k)
        return -1;
    ir_replace_all_uses(s, in, k);
    return 0;
}

/* Captures take the captured values' types, then the body is inferred. */
static int infer_sub(ir_shape_ctx *c, ir_graph *s, const char *name)
{
    const ir_node *n = c->node;
    int formal = ir_control_formal_inputs(n);
    for (int j = 0; j < n->ncap; j++) {
        if (set_input(c, s, formal + j, c->in[n->nin - n->ncap + j]) < 0)
            return -1;
        if (inline_capture(c, s, s->inputs[formal + j], n->in[n->nin - n->ncap + j]) < 0)
            return -1;
        /* A captured shape (a Reshape's target among the outer constants)
         * is known inside as it is outside; only constant elements cross,
         * since symbols are the outer graph's. */
        ir_value *in = s->inputs[formal + j];
        ir_shape_value sv;
        memset(&in->sv, 0, sizeof in->sv);
        if (ir_value_shape_value(n->in[n->nin - n->ncap + j], &sv)) {
            bool fixed = true;
            for (int e = 0; e < sv.n; e++)
                fixed &= sv.e[e].sym == 0;
            if (fixed)
                in->sv = sv;
        }
    }
    if (ir_infer_shapes(s, c->diag) < 0) {
        char m[sizeof c->diag->msg];
        memcpy(m, c->diag->msg, sizeof m);
        return ir_node_errorf(c->diag, n, "%s: %s", name, m);
    }
    return 0;
}

static int out_type(ir_shape_ctx *c, const ir_graph *s, int i, ir_type *t)
{
    if (!ir_type_rehome(s, c->node->graph, &s->outputs[i]->type, t))
        return ir_node_errorf(c->diag, c->node, "out of memory");
    return 0;
}

/* What both branches agree on: the dtype, the rank, and each equal dim. */
static void merge_branch(ir_type *a, const ir_type *b)
{
    if (a->dtype != b->dtype)
        a->dtype = a->dtype == IR_UNDEF ? b->dtype : b->dtype == IR_UNDEF ? a->dtype : IR_UNDEF;
    if (a->rank != b->rank) {
        a->rank = IR_RANK_UNKNOWN;
        return;
    }
    for (int i = 0; i < a->rank; i++)
        if (!ir_dim_eq(a->dims[i], b->dims[i]))
            a->dims[i] = ir_dim_unknown();
}

/* Only the branch taken runs, and the other may well not fit the inputs
 * (a 2-D branch beside a 3-D one): a branch whose inference fails gives
 * the If the other branch's types (it records why in infer_error), or
 * with both failing leaves the outputs unknown, unless the condition is
 * known, when the branch taken alone decides (and its failure is the
 * node's). */
int shape_if(ir_shape_ctx *c)
{
    ir_graph *t = sub_of(c, "then_branch"), *e = sub_of(c, "else_branch");
    if (!t || !e)
        return -1;
    const ir_tensor *cond = c->val[0];
    if (cond && cond->numel == 1) {
        bool take = ir_tensor_geti(cond, 0) != 0;
        ir_graph *s = take ? t : e;
        if (infer_sub(c, s, take ? "then_branch" : "else_branch") < 0)
            return -1;
        for (int i = 0; i < c->nout; i++)
            if (out_type(c, s, i, &c->out[i]) < 0)
                return -1;
        return 0;
    }
    icc_diag quiet_t, quiet_e;
    ir_shape_ctx qc = *c;
    qc.diag = &quiet_t;
    bool ok_t = infer_sub(&qc, t, "then_branch") == 0;
    qc.diag = &quiet_e;
    bool ok_e = infer_sub(&qc, e, "else_branch") == 0;
    /* One branch that cannot run on these shapes (a VAD's 8 kHz branch
     * given a 16 kHz chunk) leaves the If the other's types: taking it
     * fails the run, so whenever the If gives results they are those. */
    t->infer_error = e->infer_error = NULL;
    if (ok_t != ok_e) {
        ir_graph *bad = ok_t ? e : t;
        if (!(bad->infer_error = ir_arena_strdup(bad->arena, (ok_t ? &quiet_e : &quiet_t)->msg)))
            return ir_node_errorf(c->diag, c->node, "out of memory");
    }
    for (int i = 0; i < c->nout; i++) {
        ir_type a, b;
        if (out_type(c, t, i, &a) < 0 || out_type(c, e, i, &b) < 0)
            return -1;
        if (!ok_t)
            ir_type_unknown(&a, a.dtype != IR_UNDEF ? a.dtype : b.dtype, IR_RANK_UNKNOWN);
        if (!ok_e)
            ir_type_unknown(&b, b.dtype != IR_UNDEF ? b.dtype : a.dtype, IR_RANK_UNKNOWN);
        if (ok_t != ok_e)
            c->out[i] = ok_t ? a : b;
        else {
            merge_branch(&a, &b);
            c->out[i] = a;
        }
    }
    return 0;
}

/* A carried value's body input: its dtype and rank, dims left unknown
 * unless declared, since they may change from one iteration to the next. */
static int set_carried(ir_shape_ctx *c, ir_graph *s, int i, const ir_type *init, bool exact)
{
    ir_type *bt = &s->inputs[i]->type;
    if (bt->dtype != IR_UNDEF && bt->rank >= 0 && !exact)
        return 0;
    if (exact)
        return set_input(c, s, i, init);
    ir_type_unknown(bt, init->dtype, init->rank);
    return 0;
}

int shape_loop(ir_shape_ctx *c)
{
    const ir_node *n = c->node;
    ir_graph *b = sub_of(c, "body");
    if (!b)
        return -1;
    int N = carried(n), K = c->nout - N;
    ir_type scalar = {.rank = 0};
    scalar.dtype = IR_I64;
    b->inputs[0]->type = scalar;
    scalar.dtype = IR_BOOL;
    b->inputs[1]->type = scalar;
    for (int i = 0; i < N; i++) {
        if (!c->in[2 + i])
            return ir_node_errorf(c->diag, n, "carried value %d is missing", i);
        if (set_carried(c, b, 2 + i, c->in[2 + i], false) < 0)
            return -1;
    }
    if (infer_sub(c, b, "body") < 0)
        return -1;
    for (int i = 0; i < N; i++) {
        if (out_type(c, b, 1 + i, &c->out[i]) < 0)
            return -1;
        if (c->out[i].dtype == IR_UNDEF)
            c->out[i] = *c->in[2 + i];
        if (c->out[i].dtype != c->in[2 + i]->dtype)
            return ir_node_errorf(c->diag, n, "carried value %d starts as %s but the body makes %s",
                                  i, ir_dtype_name(c->in[2 + i]->dtype),
                                  ir_dtype_name(c->out[i].dtype));
    }
    for (int j = 0; j < K; j++) {
        ir_type e;
        if (out_type(c, b, 1 + N + j, &e) < 0)
            return -1;
        ir_type *o = &c->out[N + j];
        ir_type_unknown(o, e.dtype, e.rank >= 0 && e.rank < IR_MAX_RANK ? e.rank + 1 : IR_RANK_UNKNOWN);
        for (int k = 0; o->rank > 0 && k < e.rank; k++)
            o->dims[k + 1] = e.dims[k];
        /* as many rows as iterations, when those are known now */
        int64_t trips = ir_loop_static_trips(n, c->val ? c->val[0] : NULL, c->val && c->nin > 1 ? c->val[1] : NULL);
        if (o->rank > 0 && trips >= 0)
            o->dims[0] = ir_dim_const(trips);
    }
    return 0;
}

/* Attribute list entry j, or def when the list is absent or shorter. */
static int64_t list_at(const ir_node *n, const char *name, int j, int64_t def)
{
    const int64_t *v;
    int cnt = ir_attr_ints(n, name, &v);
    return j < cnt ? v[j] : def;
}

int shape_scan(ir_shape_ctx *c)
{
    const ir_node *n = c->node;
    ir_graph *b = sub_of(c, "body");
    if (!b)
        return -1;
    int N = carried(n), M = (int)ir_attr_int(n, "num_scan_inputs", 0), K = c->nout - N;
    ir_dim len = ir_dim_unknown();
    for (int j = 0; j < M; j++) {
        const ir_type *x = c->in[N + j];
        if (!x)
            return ir_node_errorf(c->diag, n, "scan input %d is missing", j);
        if (x->rank < 0) {
            ir_type_unknown(&b->inputs[N + j]->type, x->dtype, IR_RANK_UNKNOWN);
            continue;
        }
        int ax;
        if (x->rank < 1 || ir_norm_axis(c, list_at(n, "scan_input_axes", j, 0), x->rank, &ax) < 0)
            return x->rank < 1 ? ir_node_errorf(c->diag, n, "scan input %d is a scalar", j) : -1;
        ir_type t = *x;
        if (j == 0)
            len = x->dims[ax];
        else if (!ir_dim_eq(len, x->dims[ax]))
            len = ir_dim_unknown();
        memmove(&t.dims[ax], &t.dims[ax + 1], sizeof t.dims[0] * (size_t)(t.rank - ax - 1));
        t.rank--;
        if (set_input(c, b, N + j, &t) < 0)
            return -1;
    }
    for (int i = 0; i < N; i++)
        if (!c->in[i] || set_carried(c, b, i, c->in[i], true) < 0)
            return c->in[i] ? -1 : ir_node_errorf(c->diag, n, "state %d is missing", i);
    if (infer_sub(c, b, "body") < 0)
        return -1;
    for (int i = 0; i < N; i++) {
        if (out_type(c, b, i, &c->out[i]) < 0)
            return -1;
        if (c->out[i].dtype == IR_UNDEF)
            c->out[i] = *c->in[i];
    }
    for (int j = 0; j < K; j++) {
        ir_type e;
        if (out_type(c, b, N + j, &e) < 0)
            return -1;
        ir_type *o = &c->out[N + j];
        if (e.rank < 0 || e.rank >= IR_MAX_RANK) {
            ir_type_unknown(o, e.dtype, IR_RANK_UNKNOWN);
            continue;
        }
        int ax;
        if (ir_norm_axis(c, list_at(n, "scan_output_axes", j, 0), e.rank + 1, &ax) < 0)
            return -1;
        *o = e;
        o->rank = e.rank + 1;
        memmove(&o->dims[ax + 1], &o->dims[ax], sizeof o->dims[0] * (size_t)(e.rank - ax));
        o->dims[ax] = len;
    }
    return 0;
}

/* ---- evaluation ------------------------------------------------------------ */

/* Moves a result into the caller's storage when the plan gave it some. */
static void place(ir_tensor *t, void *storage)
{
    if (!storage)
        return;
    if (t->nbytes)
        memcpy(storage, t->data, t->nbytes);
    free(t->data);
    t->data = storage;
}

/* Runs s on inputs (borrowed), located errors naming the subgraph. */
static int run_sub(const ir_node *n, const char *name, const ir_graph *s, const ir_tensor *inputs,
                   ir_tensor *outputs, icc_diag *d)
{
    if (ir_interp_run(s, inputs, outputs, d) < 0) {
        char m[sizeof d->msg];
        memcpy(m, d->msg, sizeof m);
        return ir_node_errorf(d, n, "%s: %s", name, m);
    }
    return 0;
}

static int copy_tensor(const ir_tensor *src, ir_tensor *dst)
{
    *dst = *src;
    dst->data = malloc(src->nbytes ? src->nbytes : 1);
    if (!dst->data)
        return -1;
    if (src->nbytes)
        memcpy(dst->data, src->data, src->nbytes);
    return 0;
}

static int eval_if(const ir_node *n, const ir_tensor *const *in, ir_tensor *out,
                   void *const *storage, icc_diag *d)
{
    if (in[0]->numel != 1)
        return ir_node_errorf(d, n, "cond has %lld elements; expected 1", (long long)in[0]->numel);
    const char *name = ir_tensor_geti(in[0], 0) ? "then_branch" : "else_branch";
    const ir_graph *s = ir_attr_graph(n, name);
    ir_tensor *args = calloc((size_t)n->ncap + 1, sizeof *args);
    if (!args)
        return ir_node_errorf(d, n, "out of memory");
    for (int j = 0; j < n->ncap; j++)
        args[j] = *in[n->nin - n->ncap + j];
    int rc = run_sub(n, name, s, args, out, d);
    free(args);
    if (rc < 0)
        return -1;
    for (int i = 0; i < n->nout; i++)
        place(&out[i], storage ? storage[i] : NULL);
    return 0;
}

/* Per-iteration values of one scan output, stacked at the end. */
typedef struct stack {
    ir_tensor *v;
    int64_t n, cap;
} stack;

static int stack_push(stack *s, ir_tensor t)
{
    if (s->n == s->cap) {
        int64_t nc = s->cap ? s->cap * 2 : 16;
        ir_tensor *nv = realloc(s->v, sizeof *nv * (size_t)nc);
        if (!nv)
            return -1;
        s->v = nv;
        s->cap = nc;
    }
    s->v[s->n++] = t;
    return 0;
}

static void stack_free(stack *s)
{
    for (int64_t i = 0; i < s->n; i++)
        free(s->v[i].data);
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

/* Stacks the elements along axis ax of the result (rank + 1), element t
 * at position t (or n-1-t when reversed). An empty stack takes the
 * element type the body declares, when static. */
static int stack_join(const ir_node *n, int j, stack *s, const ir_value *decl, int64_t ax,
                      bool reverse, ir_tensor *out, icc_diag *d)
{
    int64_t edims[IR_MAX_RANK];
    int erank;
    ir_dtype dt;
    if (s->n) {
        erank = s->v[0].rank;
        dt = s->v[0].dtype;
        memcpy(edims, s->v[0].dims, sizeof edims);
    } else if (ir_type_is_static(&decl->type)) {
        erank = decl->type.rank;
        dt = decl->type.dtype;
        for (int k = 0; k < erank; k++)
            edims[k] = decl->type.dims[k].v;
    } else {
        erank = 0;
        dt = decl->type.dtype != IR_UNDEF ? decl->type.dtype : IR_F32;
    }
    if (erank >= IR_MAX_RANK)
        return ir_node_errorf(d, n, "scan output %d would exceed rank %d", j, IR_MAX_RANK);
    if (ax < 0)
        ax += erank + 1;
    if (ax < 0 || ax > erank)
        return ir_node_errorf(d, n, "scan output %d: axis out of range", j);
    for (int64_t t = 1; t < s->n; t++) {
        bool same = s->v[t].rank == erank && s->v[t].dtype == dt;
        for (int k = 0; same && k < erank; k++)
            same = s->v[t].dims[k] == edims[k];
        if (!same)
            return ir_node_errorf(d, n, "scan output %d changes shape at iteration %lld", j,
                                  (long long)t);
    }
    int64_t dims[IR_MAX_RANK], outer = 1, inner = (int64_t)ir_dtype_size(dt);
    for (int k = 0, o = 0; k <= erank; k++)
        dims[k] = k == ax ? s->n : edims[o++];
    for (int k = 0; k < ax; k++)
        outer *= edims[k];
    for (int k = (int)ax; k < erank; k++)
        inner *= edims[k];
    if (ir_tensor_init(out, dt, erank + 1, dims, d) < 0)
        return -1;
    out->data = malloc(out->nbytes ? out->nbytes : 1);
    if (!out->data)
        return ir_node_errorf(d, n, "out of memory");
    for (int64_t t = 0; t < s->n; t++) {
        int64_t p = reverse ? s->n - 1 - t : t;
        for (int64_t o = 0; o < outer; o++)
            memcpy((char *)out->data + (o * s->n + p) * inner,
                   (const char *)s->v[t].data + o * inner, (size_t)inner);
    }
    return 0;
}

/* The outputs of a Loop or Scan once its iterations are done: the N final
 * states (moved out of state), then the K scan outputs stacked (the body's
 * outputs from index first on), along Scan's scan_output_axes/directions or
 * axis 0 forward for Loop. -1 with d set, nothing left allocated in out. */
static int join_outputs(const ir_node *n, const ir_graph *b, int N, int K, int first, ir_tensor *state,
                        stack *scans, ir_tensor *out, void *const *storage, icc_diag *d)
{
    bool scan = n->op == IR_OP_SCAN;
    memset(out, 0, sizeof *out * (size_t)n->nout);
    for (int j = 0; j < K; j++)
        if (stack_join(n, j, &scans[j], b->outputs[first + j], scan ? list_at(n, "scan_output_axes", j, 0) : 0,
                       scan && list_at(n, "scan_output_directions", j, 0) != 0, &out[N + j], d) < 0) {
            ir_tensors_free(out + N, j);
            return -1;
        }
    for (int i = 0; i < N; i++) {
        out[i] = state[i];
        state[i].data = NULL;
    }
    for (int i = 0; i < n->nout; i++)
        place(&out[i], storage ? storage[i] : NULL);
    return 0;
}

static int eval_loop(const ir_node *n, const ir_tensor *const *in, ir_tensor *out,
                     void *const *storage, icc_diag *d)
{
    const ir_graph *b = ir_attr_graph(n, "body");
    int f = n->nin - n->ncap, N = carried(n), K = n->nout - N, rc = -1;
    int64_t M = INT64_MAX, it = 0, iter_v = 0;
    bool cond = true, cond_v = true;
    if (f > 0 && in[0]) {
        if (in[0]->numel != 1)
            return ir_node_errorf(d, n, "M has %lld elements; expected 1", (long long)in[0]->numel);
        M = ir_tensor_geti(in[0], 0);
    }
    if (f > 1 && in[1]) {
        if (in[1]->numel != 1)
            return ir_node_errorf(d, n, "cond has %lld elements; expected 1", (long long)in[1]->numel);
        cond = ir_tensor_geti(in[1], 0) != 0;
    }
    ir_tensor *args = calloc((size_t)(2 + N + n->ncap), sizeof *args);
    ir_tensor *state = calloc((size_t)N + 1, sizeof *state);
    ir_tensor *res = calloc((size_t)(1 + N + K), sizeof *res);
    stack *scans = calloc((size_t)K + 1, sizeof *scans);
    if (!args || !state || !res || !scans) {
        ir_node_errorf(d, n, "out of memory");
        goto done;
    }
    for (int i = 0; i < N; i++)
        if (copy_tensor(in[2 + i], &state[i]) < 0) {
            ir_node_errorf(d, n, "out of memory");
            goto done;
        }
    args[0] = (ir_tensor){.dtype = IR_I64, .rank = 0, .numel = 1, .nbytes = 8, .data = &iter_v};
    args[1] = (ir_tensor){.dtype = IR_BOOL, .rank = 0, .numel = 1, .nbytes = 1, .data = &cond_v};
    for (int j = 0; j < n->ncap; j++)
        args[2 + N + j] = *in[n->nin - n->ncap + j];
    for (; it < M && cond; it++) {
        iter_v = it;
        cond_v = cond;
        for (int i = 0; i < N; i++)
            args[2 + i] = state[i];
        if (run_sub(n, "body", b, args, res, d) < 0)
            goto done;
        if (res[0].numel != 1) {
            ir_tensors_free(res, 1 + N + K);
            ir_node_errorf(d, n, "body's cond has %lld elements; expected 1", (long long)res[0].numel);
            goto done;
        }
        cond = ir_tensor_geti(&res[0], 0) != 0;
        free(res[0].data);
        for (int i = 0; i < N; i++) {
            free(state[i].data);
            state[i] = res[1 + i];
        }
        for (int j = 0; j < K; j++)
            if (stack_push(&scans[j], res[1 + N + j]) < 0) {
                for (int k = j; k < K; k++)
                    free(res[1 + N + k].data);
                ir_node_errorf(d, n, "out of memory");
                goto done;
            }
    }
    if (join_outputs(n, b, N, K, 1 + N, state, scans, out, storage, d) < 0)
        goto done;
    rc = 0;
done:
    if (state)
        ir_tensors_free(state, N);
    for (int j = 0; scans && j < K; j++)
        stack_free(&scans[j]);
    free(args);
    free(state);
    free(res);
    free(scans);
    return rc;
}

static int eval_scan(const ir_node *n, const ir_tensor *const *in, ir_tensor *out,
                     void *const *storage, icc_diag *d)
{
    const ir_graph *b = ir_attr_graph(n, "body");
    int N = carried(n), M = (int)ir_attr_int(n, "num_scan_inputs", 0), K = n->nout - N, rc = -1;
    int64_t len = -1;
    int axes[64];
    if (M > 64)
        return ir_node_errorf(d, n, "more than 64 scan inputs");
    for (int j = 0; j < M; j++) {
        const ir_tensor *x = in[N + j];
        int64_t a = list_at(n, "scan_input_axes", j, 0);
        if (!x || x->rank < 1 || a < -x->rank || a >= x->rank)
            return ir_node_errorf(d, n, "scan input %d: axis %lld out of range", j, (long long)a);
        axes[j] = (int)(a < 0 ? a + x->rank : a);
        if (len >= 0 && x->dims[axes[j]] != len)
            return ir_node_errorf(d, n, "scan inputs have different lengths (%lld and %lld)",
                                  (long long)len, (long long)x->dims[axes[j]]);
        len = x->dims[axes[j]];
    }
    ir_tensor *args = calloc((size_t)(N + M + n->ncap) + 1, sizeof *args);
    ir_tensor *state = calloc((size_t)N + 1, sizeof *state);
    ir_tensor *res = calloc((size_t)(N + K) + 1, sizeof *res);
    ir_tensor *slice = calloc((size_t)M + 1, sizeof *slice);
    stack *scans = calloc((size_t)K + 1, sizeof *scans);
    if (!args || !state || !res || !slice || !scans) {
        ir_node_errorf(d, n, "out of memory");
        goto done;
    }
    for (int i = 0; i < N; i++)
        if (copy_tensor(in[i], &state[i]) < 0) {
            ir_node_errorf(d, n, "out of memory");
            goto done;
        }
    for (int j = 0; j < M; j++) {
        const ir_tensor *x = in[N + j];
        int64_t dims[IR_MAX_RANK];
        for (int k = 0, o = 0; k < x->rank; k++)
            if (k != axes[j])
                dims[o++] = x->dims[k];
        if (ir_tensor_init(&slice[j], x->dtype, x->rank - 1, dims, d) < 0)
            goto done;
        if (!(slice[j].data = malloc(slice[j].nbytes ? slice[j].nbytes : 1))) {
            ir_node_errorf(d, n, "out of memory");
            goto done;
        }
        args[N + j] = slice[j];
    }
    for (int j = 0; j < n->ncap; j++)
        args[N + M + j] = *in[n->nin - n->ncap + j];
    for (int64_t t = 0; t < len; t++) {
        for (int j = 0; j < M; j++) {
            const ir_tensor *x = in[N + j];
            int64_t p = list_at(n, "scan_input_directions", j, 0) ? len - 1 - t : t;
            int64_t outer = 1, inner = (int64_t)ir_dtype_size(x->dtype);
            for (int k = 0; k < axes[j]; k++)
                outer *= x->dims[k];
            for (int k = axes[j] + 1; k < x->rank; k++)
                inner *= x->dims[k];
            for (int64_t o = 0; o < outer; o++)
                memcpy((char *)slice[j].data + o * inner,
                       (const char *)x->data + (o * len + p) * inner, (size_t)inner);
        }
        for (int i = 0; i < N; i++)
            args[i] = state[i];
        if (run_sub(n, "body", b, args, res, d) < 0)
            goto done;
        for (int i = 0; i < N; i++) {
            free(state[i].data);
            state[i] = res[i];
        }
        for (int j = 0; j < K; j++)
            if (stack_push(&scans[j], res[N + j]) < 0) {
                for (int k = j; k < K; k++)
                    free(res[N + k].data);
                ir_node_errorf(d, n, "out of memory");
                goto done;
            }
    }
    if (join_outputs(n, b, N, K, N, state, scans, out, storage, d) < 0)
        goto done;
    rc = 0;
done:
    if (state)
        ir_tensors_free(state, N);
    if (slice)
        ir_tensors_free(slice, M);
    for (int j = 0; scans && j < K; j++)
        stack_free(&scans[j]);
    free(args);
    free(state);
    free(res);
    free(slice);
    free(scans);
    return rc;
}

int ir_eval_control(const ir_node *n, const ir_tensor *const *in, ir_tensor *out,
                    void *const *storage, icc_diag *d)
{
    int nout = ir_control_sub_outputs(n);
    if (nout < 0)
        return ir_node_errorf(d, n, "inputs and outputs do not fit the op's subgraph interface");
    for (int i = 0; i < n->nattr; i++) {
        const ir_graph *s = n->attrs[i].graph;
        if (n->attrs[i].kind == IR_ATTR_GRAPH &&
            (!s || s->ninputs != ir_control_formal_inputs(n) + n->ncap || s->noutputs != nout))
            return ir_node_errorf(d, n, "%s does not fit the node's inputs and outputs",
                                  n->attrs[i].name);
    }
    for (int j = 0; j < n->ncap; j++)
        if (!in[n->nin - n->ncap + j])
            return ir_node_errorf(d, n, "capture %d has no value", j);
    /* Loop's M and cond may be omitted; every carried, state and scan input is required. */
    for (int i = n->op == IR_OP_LOOP ? 2 : n->op == IR_OP_SCAN ? 0 : 1; i < n->nin - n->ncap; i++)
        if (!in[i])
            return ir_node_errorf(d, n, "input %d is missing", i);
    switch (n->op) {
    case IR_OP_IF: return eval_if(n, in, out, storage, d);
    case IR_OP_LOOP: return eval_loop(n, in, out, storage, d);
    case IR_OP_SCAN: return eval_scan(n, in, out, storage, d);
    default: return ir_node_errorf(d, n, "is not control flow");
    }
}
