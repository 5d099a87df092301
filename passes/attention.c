/* attention.c - recognises attention written out in primitive ops,
 *
 *     S = MatMul(Q, Kt)                 Q [B,H,Sq,D], Kt [B,H,D,Skv]
 *     S = Mul(S, c) | Div(S, c)         optional, c a constant scalar
 *     S = Add(S, M)                     optional, M a float mask
 *     P = Softmax(S, axis=-1)
 *     Y = MatMul(P, V)                  V [B,H,Skv,Dv]
 *
 * and replaces it by one Attention node (ONNX opset 23) Y = Attention(Q,
 * K, V, M) with scale = c (1/c for Div; 1 when there is none), which the
 * backend compiles as one kernel that never stores the [.., Sq, Skv]
 * scores. K is Kt's Transpose input when Kt = Transpose(K) swapping the
 * last two dims; otherwise a Transpose putting Kt back as [.., Skv, D] is
 * added (simplify cancels it against a Transpose before). Every
 * intermediate must be used only by the next step of the pattern and not
 * be a graph output, because none of them exists afterwards; Q, K and V
 * must agree in their batch and head dims (no broadcasting), and the
 * mask's last dim must be Skv exactly (Attention pads a shorter one with
 * -inf where Add would broadcast it). Y keeps its name. Every shape must
 * be constant: the Attention kernel needs them (a symbolic sequence keeps
 * the unfused kernels).
 *
 * When Q and V are Transpose(Reshape(X), 0,2,1,3) head splits of 3-D
 * X [B, S, H*D], Kt is such a split transposed (one Transpose (0,2,3,1)
 * after simplify composes the two, or the last-dims swap of a split), and
 * Y's only use is Transpose(0,2,1,3) then a Reshape to [B, S, H*Dv], the
 * node takes the 3-D form instead: Attention(Xq, Xk, Xv, M) with
 * q_num_heads and kv_num_heads, producing the merge's Reshape output (its
 * name kept). The kernel then reads and writes the layout the linears
 * produce and consume, and the head-split copies are left to dce.
 *
 * Nothing where the target's schedule does not fuse attention
 * (cg_schedule_fuse_attention: CUDA, whose fused kernel would be a CPU
 * schedule).
 */
#include "passes/pass.h"
#include "codegen/schedule.h"
#include "ir/ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    pass_ctx *c;
    int *uses;
    int64_t found, transposes, heads3d;
} att;

static ir_node *producer(const ir_value *v)
{
    if (!v || v->kind != IR_VAL_NODE || !v->def || v->def->dead)
        return NULL;
    return v->def;
}

/* v is produced by a live node whose only use is the pattern's next step
 * (a graph output counts as a use). */
static ir_node *single_use_producer(att *a, const ir_value *v, int op)
{
    ir_node *p = producer(v);
    if (!p || p->op != op || p->nout != 1 || a->uses[v->id] != 1)
        return NULL;
    return p;
}

/* Rank 4, dtype dt and constant dims: the Attention kernel needs
 * constant shapes (a symbolic sequence keeps the MatMul/Softmax/MatMul
 * kernels, which run per size). */
static bool rank4_float(const ir_value *v, ir_dtype dt)
{
    if (!v || v->type.rank != 4 || v->type.dtype != dt)
        return false;
    for (int i = 0; i < 4; i++)
        if (!ir_dim_is_const(v->type.dims[i]))
            return false;
    return true;
}

/* A constant scalar (any rank, one element) of a float dtype. */
static bool const_scalar(const ir_value *v, double *out)
{
    if (!v || v->kind != IR_VAL_CONST || !ir_dtype_is_float(v->type.dtype) || v->cval.numel != 1)
        return false;
    *out = ir_tensor_getf(&v->cval, 0);
    return isfinite(*out);
}


static bool is_last_swap(const ir_node *t)
{
    const int64_t *perm;
    if (ir_attr_ints(t, "perm", &perm) != 4)
        return false;
    return perm[0] == 0 && perm[1] == 1 && perm[2] == 3 && perm[3] == 2;
}

static bool perm_is(const ir_node *t, const int64_t *want)
{
    const int64_t *perm;
    if (!t || t->op != IR_OP_TRANSPOSE || ir_attr_ints(t, "perm", &perm) != 4)
        return false;
    for (int i = 0; i < 4; i++)
        if (perm[i] != want[i])
            return false;
    return true;
}

static const int64_t HEAD_SPLIT[4] = {0, 2, 1, 3}, HEAD_SPLIT_T[4] = {0, 2, 3, 1};

/* X when r = Reshape(X) splits X [B, S, H*D]'s last dim into r's
 * [B, S, H, D]: the 3-D layout Attention reads with num_heads = H. */
static ir_value *split_input(const ir_node *r)
{
    if (!r || r->op != IR_OP_RESHAPE)
        return NULL;
    const ir_value *x = r->in[0];
    const ir_type *xt = &x->type, *rt = &r->out[0]->type;
    if (xt->rank != 3 || rt->rank != 4 || xt->dtype != rt->dtype || !ir_dim_eq(xt->dims[0], rt->dims[0]) ||
        !ir_dim_eq(xt->dims[1], rt->dims[1]) || !ir_dim_is_const(xt->dims[2]) || !ir_dim_is_const(rt->dims[2]) ||
        !ir_dim_is_const(rt->dims[3]) || xt->dims[2].v != rt->dims[2].v * rt->dims[3].v)
        return NULL;
    return r->in[0];
}

/* The head-split source of v [B, H, S, D] = Transpose(Reshape(X)). */
static ir_value *heads_of(const ir_value *v)
{
    ir_node *t = producer(v);
    return perm_is(t, HEAD_SPLIT) ? split_input(producer(t->in[0])) : NULL;
}

/* The head-split source of Kt [B, H, D, S]: one Transpose of the Reshape
 * (simplify composes the two), or the last-dims swap of a head split. */
static ir_value *heads_of_kt(const ir_value *kt)
{
    ir_node *t = producer(kt);
    if (perm_is(t, HEAD_SPLIT_T))
        return split_input(producer(t->in[0]));
    return t && t->op == IR_OP_TRANSPOSE && is_last_swap(t) ? heads_of(t->in[0]) : NULL;
}

/* The Reshape merging the heads back, when y's only use is Transpose
 * (0,2,1,3) whose only use is a Reshape to [B, S, H*Dv]; NULL otherwise. */
static ir_node *heads_merge(att *a, const ir_value *y)
{
    ir_graph *g = a->c->g;
    if (a->uses[y->id] != 1)
        return NULL;
    ir_node *t = NULL, *r = NULL;
    for (int i = 0; i < g->nnodes && !r; i++) {
        ir_node *n = g->nodes[i];
        if (n->dead || n->nin < 1)
            continue;
        if (!t && n->in[0] == y && perm_is(n, HEAD_SPLIT) && a->uses[n->out[0]->id] == 1)
            t = n;
        else if (t && n->op == IR_OP_RESHAPE && n->in[0] == t->out[0])
            r = n;
    }
    if (!r)
        return NULL;
    const ir_type *yt = &y->type, *rt = &r->out[0]->type;
    if (rt->rank != 3 || !ir_dim_eq(rt->dims[0], yt->dims[0]) || !ir_dim_eq(rt->dims[1], yt->dims[2]) ||
        !ir_dim_is_const(yt->dims[1]) || !ir_dim_is_const(yt->dims[3]) || !ir_dim_is_const(rt->dims[2]) ||
        rt->dims[2].v != yt->dims[1].v * yt->dims[3].v)
        return NULL;
    return r;
}

static int rewrite4(att *a, ir_node *pv, ir_value *q, ir_value *kt, ir_value *v, ir_value *mask, double scale);

/* Tries the pattern ending in the MatMul `pv` (P x V). Returns 1 when it
 * rewrote, 0 when the pattern does not match, -1 on error. */
static int match(att *a, ir_node *pv)
{
    ir_graph *g = a->c->g;
    icc_diag *d = a->c->diag;
    ir_value *y = pv->out[0], *v = pv->in[1];
    ir_dtype dt = y->type.dtype;
    /* f32 and f64: the kernel's accumulating dtypes */
    if ((dt != IR_F32 && dt != IR_F64) || !rank4_float(y, dt) || !rank4_float(v, dt))
        return 0;
    ir_node *sm = single_use_producer(a, pv->in[0], IR_OP_SOFTMAX);
    int64_t axis = sm ? ir_attr_int(sm, "axis", -1) : 0;
    if (!sm || (axis != -1 && axis != 3))
        return 0;
    ir_value *s = sm->in[0], *mask = NULL;
    ir_node *add = NULL, *scl = NULL;
    /* optional mask: either operand of the Add may be the scores */
    ir_node *p = single_use_producer(a, s, IR_OP_ADD);
    if (p) {
        for (int side = 0; side < 2 && !add; side++) {
            ir_node *q = producer(p->in[side]);
            if (q && (q->op == IR_OP_MUL || q->op == IR_OP_DIV || q->op == IR_OP_MATMUL)) {
                add = p;
                mask = p->in[1 - side];
                s = p->in[side];
            }
        }
        if (!add)
            return 0;
        const ir_type *mt = &mask->type;
        for (int i = 0; i < mt->rank; i++)
            if (!ir_dim_is_const(mt->dims[i]))
                return 0;
        if (!ir_type_same(&add->out[0]->type, &s->type) || mt->dtype != dt || mt->rank < 1 || mt->rank > 4 ||
            !ir_dim_eq(mt->dims[mt->rank - 1], s->type.dims[3]))
            return 0;
    }
    double scale = 1.0;
    bool have_scale = false;
    if ((p = single_use_producer(a, s, IR_OP_MUL)) || (p = single_use_producer(a, s, IR_OP_DIV))) {
        double cv;
        int side = p->op == IR_OP_MUL && const_scalar(p->in[0], &cv) ? 1 : 0;
        if (!const_scalar(p->in[1 - side], &cv) || !ir_type_same(&p->out[0]->type, &p->in[side]->type))
            return 0;
        if (p->op == IR_OP_DIV && (side != 0 || cv == 0))
            return 0;
        scale = p->op == IR_OP_DIV ? 1.0 / cv : cv;
        have_scale = true;
        scl = p;
        s = p->in[side];
    }
    ir_node *qk = single_use_producer(a, s, IR_OP_MATMUL);
    if (!qk)
        return 0;
    ir_value *q = qk->in[0], *kt = qk->in[1];
    if (!rank4_float(q, dt) || !rank4_float(kt, dt) || !rank4_float(s, dt))
        return 0;
    const ir_dim *qd = q->type.dims, *kd = kt->type.dims, *vd = v->type.dims;
    /* no batch or head broadcasting; D and Skv agree */
    for (int i = 0; i < 2; i++)
        if (!ir_dim_eq(qd[i], kd[i]) || !ir_dim_eq(qd[i], vd[i]))
            return 0;
    if (!ir_dim_eq(qd[3], kd[2]) || !ir_dim_eq(kd[3], vd[2]))
        return 0;
    if (have_scale && !(fabs(scale) < 3.4e38 && (float)scale != 0))
        return 0;

    /* the 3-D form: Q, K, V read in the layout the head splits came from,
     * Y written in the one the merge goes to, and the copies go */
    ir_value *q3 = heads_of(q), *k3 = heads_of_kt(kt), *v3 = heads_of(v);
    ir_node *merge = q3 && k3 && v3 ? heads_merge(a, y) : NULL;
    if (merge) {
        ir_node *tm = merge->in[0]->def;
        ir_value *in3[4] = {q3, k3, v3, mask};
        const char *mname = merge->out[0]->name;
        ir_node *at = ir_graph_add_node(g, IR_OP_ATTENTION, pv->name, mask ? 4 : 3, in3, 1, &mname, d);
        if (!at || ir_node_set_float(g, at, "scale", (float)scale) < 0 ||
            ir_node_set_int(g, at, "q_num_heads", qd[1].v) < 0 || ir_node_set_int(g, at, "kv_num_heads", kd[1].v) < 0)
            return -1;
        at->out[0]->type = merge->out[0]->type;
        ir_replace_all_uses(g, merge->out[0], at->out[0]);
        ir_node_erase(merge);
        ir_node_erase(tm);
        a->heads3d++;
    } else {
        if (rewrite4(a, pv, q, kt, v, mask, scale) < 0)
            return -1;
    }
    ir_node_erase(pv);
    ir_node_erase(sm);
    if (add)
        ir_node_erase(add);
    if (scl)
        ir_node_erase(scl);
    ir_node_erase(qk);
    a->found++;
    a->c->changed = true;
    return 1;
}

/* The 4-D form Y = Attention(Q, K, V, M), K = Kt's Transpose input or a
 * new Transpose of Kt. */
static int rewrite4(att *a, ir_node *pv, ir_value *q, ir_value *kt, ir_value *v, ir_value *mask, double scale)
{
    ir_graph *g = a->c->g;
    icc_diag *d = a->c->diag;
    ir_value *y = pv->out[0];
    ir_dtype dt = y->type.dtype;
    /* K as [B, H, Skv, D] */
    ir_node *tr = producer(kt);
    ir_value *k;
    if (tr && tr->op == IR_OP_TRANSPOSE && is_last_swap(tr) && rank4_float(tr->in[0], dt)) {
        k = tr->in[0];
        if (a->uses[kt->id] == 1)
            ir_node_erase(tr);
    } else {
        char buf[256];
        const char *nm = ir_graph_fresh_name(g, kt->name, ".k", buf, sizeof buf);
        ir_node *t = ir_graph_add_node(g, IR_OP_TRANSPOSE, nm, 1, &kt, 1, &nm, d);
        static const int64_t perm[4] = {0, 1, 3, 2};
        if (!t || ir_node_set_ints(g, t, "perm", perm, 4) < 0)
            return -1;
        ir_type kty = kt->type;
        kty.dims[2] = kt->type.dims[3];
        kty.dims[3] = kt->type.dims[2];
        t->out[0]->type = kty;
        k = t->out[0];
        a->transposes++;
    }
    ir_value *in[4] = {q, k, v, mask};
    const char *yname = y->name;
    ir_node *at = ir_graph_add_node(g, IR_OP_ATTENTION, pv->name, mask ? 4 : 3, in, 1, &yname, d);
    if (!at || ir_node_set_float(g, at, "scale", (float)scale) < 0)
        return -1;
    at->out[0]->type = y->type;
    ir_replace_all_uses(g, y, at->out[0]);
    return 0;
}

int pass_attention(pass_ctx *c)
{
    if (!cg_schedule_fuse_attention(c->target))
        return 0;
    ir_graph *g = c->g;
    att a = {.c = c};
    if (!(a.uses = malloc(sizeof(int) * ((size_t)g->nvalues + 1))))
        return ir_errorf(c->diag, "out of memory");
    ir_graph_count_uses(g, a.uses);
    /* Matches never overlap (each erases its own single-use chain), and
     * the new nodes are only appended, so one sweep over the nodes that
     * existed before it finds them all. The use counts stay valid for
     * the values a later match reads: a match only adds uses to values
     * it keeps (Q, V, the mask, K). */
    int n0 = g->nnodes, rc = 0;
    for (int i = 0; i < n0 && rc >= 0; i++) {
        ir_node *n = g->nodes[i];
        if (!n->dead && n->op == IR_OP_MATMUL && n->nin == 2 && n->nout == 1)
            rc = match(&a, n);
    }
    free(a.uses);
    if (rc < 0)
        return -1;
    if (pass_commit_rewrites(c) < 0)
        return -1;
    pass_stat(c, "attention patterns fused", a.found);
    pass_stat(c, "transposes added", a.transposes);
    pass_stat(c, "head splits and merges absorbed", a.heads3d);
    return 0;
}
