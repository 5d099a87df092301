/* lower.c - graph nodes to kernels: the common setup (each node's or
 * fused group's buffers, the family that lowers it -- the one its
 * registry row names -- the verifier run on the result) and fused
 * groups: a group is lowered at its root, the values inside it computed
 * where they are read (elementwise members' formulas, elementwise.c),
 * and an anchor's final values run through the group's epilogue
 * (lower_epi) or a normalization reads its data through the group's
 * prologue (lower_in). docs/fusion.md.
 */
#include "codegen/lower.h"
#include "ir/ops.h"
#include "passes/precision.h"

#include <math.h>
#include <string.h>

#include "codegen/lower/internal.h"
#include "codegen/lower/movement.h"

/* ---- fused groups (ir.h, docs/fusion.md) ----------------------------------
 * A group is lowered at its root, as the root's loop nest. An input that
 * another member of the group produces (an interior value) is not loaded:
 * its producer's formula is evaluated at the index where it is read, the
 * broadcast maps composed, and rounded to its dtype as a store would. */

/* v, read by `reader`, is computed inside reader's group. */
bool lw_interior(const ir_node *reader, const ir_value *v)
{
    return reader->group > 0 && v && v->kind == IR_VAL_NODE && v->def->group == reader->group;
}

/* The kernel buffer already holding graph value v, or -1. */
static int find_buf(const kir_kernel *k, const ir_value *v)
{
    for (int b = 0; b < k->nbufs; b++)
        if (k->bufs[b].kind != KIR_BUF_STATUS && !strcmp(k->bufs[b].name, v->name))
            return b;
    return -1;
}


/* The compute dtype of node n's formula: its first input's (Where: its
 * second's), f16/bf16 widened. */
static ir_dtype node_cdt(const ir_node *n)
{
    ir_dtype t = n->nin && n->in[0] ? n->in[0]->type.dtype : n->out[0]->type.dtype;
    if (n->op == IR_OP_WHERE)
        t = n->in[1]->type.dtype;
    return lw_compute_dtype(t);
}

/* Interior value v at idx (one index per dim of v), in its compute dtype. */
kir_expr *lw_fused_value(lctx *c, const ir_value *v, kir_expr *const *idx)
{
    const ir_node *p = v->def;
    ir_dtype t = v->type.dtype;
    if (c->epi_root && p == c->anchor) {
        /* the anchor's final value, rounded as its store would round it */
        kir_expr *e = c->epi_val;
        if (e && e->dtype != t)
            e = kir_op1(c->k, KIR_CAST, t, e);
        return lw_widen(c->k, e, t);
    }
    lctx save = *c;
    c->to_bf16 = save.n->op == IR_OP_CAST && save.n->out[0]->type.dtype == IR_BF16;
    c->n = p;
    c->orank = v->type.rank;
    c->at = idx;
    c->cdt = node_cdt(p);
    for (int i = 0; i < p->nin && i < LOWER_MAX_IO; i++)
        c->buf[i] = p->in[i] && !lw_interior(p, p->in[i]) ? find_buf(c->k, p->in[i]) : -1;
    kir_expr *e = lw_formula(c);
    if (e && e->dtype != t)
        e = kir_op1(c->k, KIR_CAST, t, e);
    e = lw_widen(c->k, e, t);
    *c = save;
    return e;
}

/* Adds the buffers of the outside inputs of the members that n's interior
 * inputs come from, recursively. *budget bounds the inlined evaluations
 * (one per path from the root), so a hand-written group cannot blow up
 * the kernel. -1: out of memory; -2: not loweable as one kernel. */
static int group_bufs(lctx *c, const ir_node *n, const cg_binding *bind, int *budget)
{
    for (int i = 0; i < n->nin; i++) {
        const ir_value *v = n->in[i];
        if (!v)
            continue;
        if (lw_interior(n, v)) {
            if (c->epi_root && v->def == c->anchor)
                continue; /* its inputs are the kernel's first buffers */
            if (--*budget < 0 || v->def->nout != 1 || !lw_can_elementwise(v->def))
                return -2;
            int rc = group_bufs(c, v->def, bind, budget);
            if (rc < 0)
                return rc;
        } else if (find_buf(c->k, v) < 0) {
            const cg_binding *b = &bind[v->id];
            if (kir_add_buf(c->k, v->name, b->kind, &v->type, b->index, b->offset) < 0)
                return -1;
        }
    }
    return 0;
}

/* The group's anchor (docs/fusion.md): the one member reached from n
 * through interior inputs that is not elementwise, into *a. *count counts
 * the distinct such members; *budget bounds the walk like group_bufs'. */
static void find_anchor(const ir_node *n, int *budget, const ir_node **a, int *count)
{
    for (int i = 0; i < n->nin && *budget >= 0; i++) {
        const ir_value *v = n->in[i];
        if (!lw_interior(n, v) || --*budget < 0)
            continue;
        const ir_node *p = v->def;
        if (lw_can_elementwise(p))
            find_anchor(p, budget, a, count);
        else if (!*a)
            *a = p, *count = 1;
        else if (*a != p)
            (*count)++;
    }
}

kir_expr *lower_epi(lctx *c, kir_expr *v, kir_expr *const *idx)
{
    if (!c->epi_root || !v)
        return v;
    c->epi_used = true;
    kir_expr *saved = c->epi_val;
    c->epi_val = v;
    kir_expr *e = lw_fused_value(c, c->epi_root->out[0], idx);
    c->epi_val = saved;
    return e;
}

kir_stmt *lw_store_out(lctx *c, kir_block *b, kir_expr *const *oi, kir_expr *v)
{
    if (!c->pad_out)
        return kir_store(c->k, b, c->out, oi, v);
    kir_expr *si[IR_MAX_RANK];
    for (int d = 0; d < c->orank; d++)
        si[d] = lw_iaddc(c->k, oi[d], c->out_lo[d]);
    c->pad_used = true;
    return kir_store(c->k, b, c->out, si, v);
}

/* ---- a zero Pad as a group's root (fuse.c's pad-out) -----------------------
 * The anchor stores into the interior of the Pad's buffer (lw_store_out);
 * the border is zeroed here, by the first trip of the kernel's parallel
 * loop (each call of the kernel function runs the statements outside that
 * loop, so zeroing there would repeat it on every thread). */

/* p's begin pads into lo, checked against its shapes: the constants
 * fuse.c's pad_out_candidate checked (a rank-5 f32 Pad by zeros, every
 * pad >= 0, each output dim the input's plus its pads, symbols too). */
static bool pad_out_spec(const ir_node *p, int64_t *lo)
{
    const ir_type *x = &p->in[0]->type, *o = &p->out[0]->type;
    if (p->nin != 2 || !p->in[1] || p->in[1]->kind != IR_VAL_CONST || p->in[1]->cval.numel != 2 * x->rank ||
        o->rank != x->rank || x->rank < 0)
        return false;
    for (int d = 0; d < x->rank; d++) {
        lo[d] = ir_tensor_geti(&p->in[1]->cval, d);
        int64_t hi = ir_tensor_geti(&p->in[1]->cval, x->rank + d);
        if (lo[d] < 0 || hi < 0 || x->dims[d].sym < 0 || o->dims[d].sym < 0 ||
            !ir_dim_is_plus(p->graph, x->dims[d], o->dims[d], lo[d] + hi))
            return false;
    }
    return true;
}

/* Zeros into the border of c->out, the region outside [lo, lo + len) in
 * some dim (len the interior's dims, constants or the run's): per padded
 * dim d, the slabs before and after the interior, spanning the interior
 * in the dims before d and everything in those after it, so each border
 * element is stored once. */
/* dim d plus k: a constant when d is one */
static kir_expr *dim_plus_c(kir_kernel *k, ir_dim d, int64_t c)
{
    return ir_dim_is_const(d) ? lw_i64c(k, d.v + c) : lw_iaddc(k, kir_dim(k, d), c);
}

static int zero_border(lctx *c, kir_block *b, const ir_type *ot, const int64_t *lo, const ir_dim *len)
{
    kir_kernel *k = c->k;
    int r = ot->rank;
    for (int d = 0; d < r; d++)
        for (int side = 0; side < 2; side++) {
            /* the slab [from, to) of dim d: constant before the interior,
             * the run's after it when the dims are symbols */
            if (side ? ir_dim_eq(len[d], ot->dims[d]) || (ir_dim_is_const(ot->dims[d]) &&
                                                          ot->dims[d].v <= lo[d] + len[d].v)
                     : lo[d] <= 0)
                continue;
            kir_block *at = b;
            kir_expr *idx[IR_MAX_RANK];
            for (int e = 0; e < r; e++) {
                kir_expr *a, *z;
                if (e < d)
                    a = lw_i64c(k, lo[e]), z = dim_plus_c(k, len[e], lo[e]);
                else if (e == d)
                    a = side ? dim_plus_c(k, len[e], lo[e]) : lw_i64c(k, 0),
                    z = side ? dim_plus_c(k, ot->dims[e], 0) : lw_i64c(k, lo[e]);
                else
                    a = lw_i64c(k, 0), z = dim_plus_c(k, ot->dims[e], 0);
                int64_t av, zv;
                if (lw_const_i(a, &av) && lw_const_i(z, &zv) && zv - av == 1) {
                    idx[e] = a;
                    continue;
                }
                int v = kir_new_var(k);
                bool inner = e == r - 1;
                kir_stmt *l = kir_for(k, at, v, a, z, inner ? KIR_VECTOR : KIR_SERIAL,
                                      inner ? (c->s->lanes > 1 ? c->s->lanes : 1) : 0);
                if (!l)
                    return -1;
                idx[e] = kir_var(k, v);
                at = &l->body;
            }
            if (!kir_store(k, at, c->out, idx, kir_const_f(k, ot->dtype, 0)))
                return -1;
        }
    return 0;
}

/* The border of pad root p's buffer (c->out_lo its begin pads) zeroed by
 * the first trip of the kernel's parallel loop (the last top-level
 * statement that is one), or by the kernel's body when it has none. */
static int pad_out_finish(lctx *c, const ir_node *p)
{
    kir_kernel *k = c->k;
    const ir_dim *len = p->in[0]->type.dims;
    kir_block *b = &k->body;
    for (int i = k->body.n - 1; i >= 0; i--) {
        kir_stmt *s = k->body.s[i];
        if (s->kind == KIR_S_FOR && s->loop == KIR_PARALLEL) {
            kir_stmt *first = kir_if(k, &s->body, kir_op2(k, KIR_EQ, IR_BOOL, kir_var(k, s->var), s->lo));
            if (!first)
                return -1;
            b = &first->body;
            break;
        }
    }
    return zero_border(c, b, &p->out[0]->type, c->out_lo, len);
}

/* Every operand's and result's shape must be known to build index maps. */
bool lw_shapes_known(const ir_node *n)
{
    if (n->nin > LOWER_MAX_IO || n->nout > LOWER_MAX_IO || n->nout < 1)
        return false;
    for (int i = 0; i < n->nin; i++)
        if (n->in[i] && n->in[i]->type.rank < 0)
            return false;
    for (int i = 0; i < n->nout; i++)
        if (!ir_type_dims_known(&n->out[i]->type))
            return false;
    return true;
}

bool lw_blocked_ints(const ir_node *n, const char *name, int want, int64_t def, int64_t minv, int64_t *out)
{
    const int64_t *v;
    int cnt = ir_attr_ints(n, name, &v);
    for (int i = 0; i < want; i++)
        out[i] = def;
    if (cnt < 0)
        return true;
    if (cnt != want)
        return false;
    for (int i = 0; i < want; i++) {
        if (v[i] < minv || v[i] > (INT64_C(1) << 20))
            return false;
        out[i] = v[i];
    }
    return true;
}

bool lw_f32_static(const ir_value *v, int rank)
{
    return lw_static_as(v, rank, IR_F32);
}

bool lw_static_as(const ir_value *v, int rank, ir_dtype dt)
{
    if (!v || v->type.dtype != dt || v->type.rank != rank)
        return false;
    for (int i = 0; i < rank; i++)
        if (!ir_dim_is_const(v->type.dims[i]) || v->type.dims[i].v < 1 || v->type.dims[i].v > (INT64_C(1) << 30))
            return false;
    return true;
}

bool lw_blocked_as(const ir_value *v, ir_dtype dt)
{
    if (!v || v->type.dtype != dt || v->type.rank != 5)
        return false;
    for (int i = 0; i < 5; i++) {
        ir_dim d = v->type.dims[i];
        if (d.sym > 0 && (i == 0 || i == 2 || i == 3))
            continue;
        if (!ir_dim_is_const(d) || d.v < 1 || d.v > (INT64_C(1) << 30))
            return false;
    }
    return true;
}

static int lower_elementwise(lctx *c);

/* Each family's predicate (op, dtypes, attributes) and builder, by the
 * family the registry gives the op (ir/ops.def). */
static const struct {
    bool (*can)(const ir_node *n);
    int (*lower)(lctx *c);
} families[IR_FAM_COUNT] = {
    [IR_FAM_ELEMENTWISE] = {lw_can_elementwise, lower_elementwise},
    [IR_FAM_CONTRACTION] = {cg_can_lower_matmul, lower_matmul},
    [IR_FAM_REDUCE] = {cg_can_lower_reduce, lower_reduce},
    [IR_FAM_NORM] = {cg_can_lower_norm, lower_norm},
    [IR_FAM_MOVEMENT] = {cg_can_lower_movement, lower_movement},
    [IR_FAM_CONV] = {cg_can_lower_conv, lower_conv},
    [IR_FAM_MISC] = {cg_can_lower_misc, lower_misc},
    [IR_FAM_ATTENTION] = {cg_can_lower_attention, lower_attention},
    [IR_FAM_BLOCKED] = {cg_can_lower_blocked, lower_blocked},
    [IR_FAM_RNN] = {cg_can_lower_rnn, lower_rnn},
};

bool lw_family_accepts(ir_family f, const ir_node *n)
{
    if ((unsigned)f >= IR_FAM_COUNT || !families[f].can)
        return false;
    if (f != IR_FAM_ELEMENTWISE && !lw_shapes_known(n))
        return false;
    return families[f].can(n);
}

/* The family that lowers n: its op's, if that family's predicate takes
 * n; else IR_FAM_NONE. */
static ir_family family(const ir_node *n)
{
    ir_family f = ir_ops[n->op].family;
    return lw_family_accepts(f, n) ? f : IR_FAM_NONE;
}

/* Input i of contraction n is a narrow weight (i = 1), a MatMul's,
 * Gemm's or ConvNCHWc's bf16 activation (i = 0) or an Attention's bf16
 * Q, K or V (i < 3) computed in n's group: a
 * Cast to f32 of an f16/bf16 value (the bf16/fp16 precision rewrite,
 * passes/precision.c). n reads the narrow buffer itself and converts in
 * its loads (lw_load_in), so the Cast never becomes a kernel or a buffer. */
static const ir_value *half_weight(const ir_node *n, int i)
{
    const ir_family f = ir_ops[n->op].family;
    bool att = f == IR_FAM_ATTENTION && i < 3;   /* its Q, K and V */
    if (!att && ((i != 1 && (i != 0 || (f != IR_FAM_CONTRACTION && f != IR_FAM_BLOCKED))) ||
                 (f != IR_FAM_CONTRACTION && f != IR_FAM_CONV && f != IR_FAM_BLOCKED)))
        return NULL;
    if (i >= n->nin || !lw_interior(n, n->in[i]))
        return NULL;
    const ir_node *p = n->in[i]->def;
    const ir_value *h = p->op == IR_OP_CAST && p->nin == 1 && p->group == n->group ? p->in[0] : NULL;
    return h && !lw_interior(p, h) && (h->type.dtype == IR_BF16 || h->type.dtype == IR_F16) &&
           p->out[0]->type.dtype == IR_F32 ? h : NULL;
}

/* anchor may be the kernel of the group rooted at root: the only
 * non-elementwise member, an op whose lowering takes an epilogue (the
 * registry's IR_F_ANCHOR), one output of the root's type, its inputs from
 * outside the group but the data input of an anchor that takes a
 * prologue (IR_F_PROLOGUE). */
static bool anchor_ok(const ir_node *root, const ir_node *anchor, int count, int budget)
{
    unsigned fl = ir_ops[anchor->op].flags;
    /* (a root that takes no epilogue: the group is its narrow inputs' Casts) */
    if (count != 1 || budget < 0 || anchor->nout != 1 || (!(fl & IR_F_ANCHOR) && anchor != root))
        return false;
    for (int i = 0; i < anchor->nin; i++)
        if (lw_interior(anchor, anchor->in[i]) && (i > 0 || !(fl & IR_F_PROLOGUE)) && !half_weight(anchor, i))
            return false;
    const ir_type *a = &anchor->out[0]->type, *r = &root->out[0]->type;
    /* or a bf16 root over a bf16 pair contraction (lower_matmul stores
     * rounded sums only once) */
    if ((a->dtype != r->dtype && !icc_precision_narrow_root(anchor, r->dtype)) || a->rank != r->rank)
        return false;
    for (int d = 0; d < a->rank; d++)
        if (!ir_dim_eq(a->dims[d], r->dims[d]))
            return false;
    return family(anchor) != IR_FAM_NONE;
}

kir_expr *lower_in(lctx *c, int i, kir_expr *const *idx)
{
    return c->buf[i] >= 0 ? kir_load(c->k, c->buf[i], idx) : lw_fused_value(c, c->n->in[i], idx);
}

/* The loop nest over the output, the innermost vectorized, the node's
 * formula stored at each index; then the innermost loop takes in the
 * loops around it where the accesses allow (coalesce.c: a contiguous
 * tensor is one loop), and the outer loops become one parallel loop over
 * their flattened product, with work for every thread (a batch of one
 * would leave them idle). */
static int lower_elementwise(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_type *ot = &c->n->out[0]->type;
    kir_expr *idx[IR_MAX_RANK];
    kir_block *body = mv_nest(c, &k->body, ot, false, c->orank > 0, idx);
    if (!body)
        return -1;
    c->at = idx;
    kir_expr *v = lw_formula(c);
    if (!v)
        return -1;
    if (v->dtype != ot->dtype)
        v = kir_op1(k, KIR_CAST, ot->dtype, v);
    if (!kir_store(k, body, c->out, idx, v))
        return -1;
    int merged = lw_coalesce(k);
    if (merged < 0 || lw_parallelize(k, c->s->par_min) < 0)
        return -1;
    return merged ? lw_drop_unused_bufs(k) : 0;
}

bool cg_can_lower(const ir_node *n)
{
    return family(n) != IR_FAM_NONE;
}

bool cg_can_lower_symbolic(const ir_node *n)
{
    if (ir_ops[n->op].flags & IR_F_SYMBOLIC)
        return true;
    switch (family(n)) {
    case IR_FAM_CONV: return cg_conv_symbolic(n);
    case IR_FAM_MISC: return cg_resize_symbolic(n);
    case IR_FAM_MOVEMENT: return cg_movement_symbolic(n);
    case IR_FAM_BLOCKED: return cg_can_lower_blocked(n);   /* the geometry takes what it can */
    default: return false;
    }
}

bool cg_lower_prefers_items(const ir_node *n)
{
    return n->op == IR_OP_CONV || n->op == IR_OP_CONV_TRANSPOSE || n->op == IR_OP_MAX_POOL ||
           n->op == IR_OP_AVERAGE_POOL || n->op == IR_OP_LP_POOL || n->op == IR_OP_MATMUL;
}

int cg_lower_node(const ir_graph *g, const ir_node *n, const cg_binding *bind, const cg_schedule *s,
                  const char *name, kir_kernel **out, icc_diag *d)
{
    *out = NULL;
    if (!cg_can_lower(n))
        return ir_node_errorf(d, n, "cannot be compiled yet (op or dtype not lowered)");
    /* A zero Pad rooting a group (fuse.c's pad-out): the group below it,
     * stored into the Pad's buffer. */
    const ir_node *pad = NULL;
    if (n->op == IR_OP_PAD && n->group > 0 && n->nin >= 1 && lw_interior(n, n->in[0])) {
        pad = n;
        n = n->in[0]->def;
    }
    /* A group whose members are elementwise but one, its anchor, is the
     * anchor's kernel with the others as its epilogue. */
    const ir_node *root = n, *anchor = NULL;
    if (n->group > 0) {
        int budget = 256, count = 1;
        if (lw_can_elementwise(n))
            count = 0, find_anchor(n, &budget, &anchor, &count);
        else
            anchor = n;
        if (anchor && !anchor_ok(n, anchor, count, budget))
            return ir_node_errorf(d, n, "fused group %d cannot be compiled as one kernel (its members other "
                                  "than one contraction or normalization of the root's type must be "
                                  "elementwise, and only a normalization's data input may come from "
                                  "the group)", n->group);
        if (anchor)
            n = anchor;
    }
    lctx c = {.g = g, .n = n, .epi_root = anchor && anchor != root ? root : NULL, .anchor = anchor, .pad_out = pad};
    if (pad && (!anchor || n->nout != 1 || !pad_out_spec(pad, c.out_lo)))
        return ir_node_errorf(d, pad, "fused group %d cannot be compiled as one kernel: its root Pad "
                              "needs a zero constant Pad of a conv's, pool's or Concat's result", pad->group);
    if (!(c.k = kir_kernel_create(name, g)))
        return ir_errorf(d, "out of memory");
    kir_kernel *k = c.k;
    const ir_value *ov = n->out[0];
    for (int i = 0; i < n->nin; i++) {
        const ir_value *v = n->in[i];
        c.buf[i] = -1;
        if (!v || lw_interior(n, v))
            continue;
        const cg_binding *b = &bind[v->id];
        if ((c.buf[i] = kir_add_buf(k, v->name, b->kind, &v->type, b->index, b->offset)) < 0)
            goto oom;
    }
    for (int i = 0; i < n->nout; i++) {
        /* an anchor's result is the root's output (the Pad's, below one) */
        const ir_value *v = pad ? pad->out[i] : anchor ? root->out[i] : n->out[i];
        const cg_binding *b = &bind[v->id];
        if ((c.outs[i] = kir_add_buf(k, v->name, b->kind, &v->type, b->index, b->offset)) < 0)
            goto oom;
    }
    c.out = c.outs[0];
    c.orank = ov->type.rank;
    ir_dtype in_dt = n->nin && n->in[0] ? n->in[0]->type.dtype : ov->type.dtype;
    /* Where's data type is that of its second input. */
    if (n->op == IR_OP_WHERE)
        in_dt = n->in[1]->type.dtype;
    c.cdt = lw_compute_dtype(in_dt);
    c.s = s;
    if (root->group > 0) {
        /* the outside inputs of the epilogue (after the anchor) and of the
         * prologue (before it) */
        int budget = 256, rc = group_bufs(&c, root, bind, &budget);
        if (rc == 0 && anchor && anchor != root)
            rc = group_bufs(&c, anchor, bind, &budget);
        if (rc == -2) {
            kir_kernel_destroy(k);
            return ir_node_errorf(d, root, "fused group %d cannot be compiled as one kernel (a member is not "
                                  "elementwise, or it inlines more than 256 evaluations)", root->group);
        }
        if (rc < 0)
            goto oom;
        for (int i = 0; i < n->nin && i < LOWER_MAX_IO; i++) {
            const ir_value *h = half_weight(n, i);
            if (h && (c.buf[i] = find_buf(k, h)) < 0)
                goto oom;
        }
    }
    ir_family f = family(n);
    if (f == IR_FAM_NONE || families[f].lower(&c) < 0)
        goto oom;
    if (c.epi_root && !c.epi_used) {
        kir_kernel_destroy(k);
        return ir_node_errorf(d, root, "fused group %d cannot be compiled as one kernel: the lowering of "
                              "'%s' (%s) takes no epilogue", root->group, anchor->name, ir_ops[anchor->op].name);
    }
    if (pad && !c.pad_used) {
        kir_kernel_destroy(k);
        return ir_node_errorf(d, pad, "fused group %d cannot be compiled as one kernel: the lowering of "
                              "'%s' (%s) cannot store into a padded buffer", pad->group, anchor->name,
                              ir_ops[anchor->op].name);
    }
    if (pad && pad_out_finish(&c, pad) < 0)
        goto oom;
    /* a parallel loop over a product of symbols: chunks the runtime can split */
    if (s->kind == CG_SCHED_CPU && lw_chunk_parallel(k, s->par_min) < 0)
        goto oom;
    if (kir_verify(k, d) < 0) {
        char m[sizeof d->msg];
        memcpy(m, d->msg, sizeof m);
        kir_kernel_destroy(k);
        return ir_node_errorf(d, n, "lowering produced an invalid kernel: %s", m);
    }
    *out = k;
    return 0;
oom:
    kir_kernel_destroy(k);
    return ir_node_errorf(d, n, "out of memory while lowering");
}

int lower_amx_zero(lctx *c, kir_block *b)
{
    for (int t = 0; t < 4; t++)
        if (!kir_intrinsic(c->k, b, KIR_IN_AMX_ZERO, 0, (kir_iarg[]){{.buf = -1, .tile = t}}))
            return -1;
    return 0;
}

static int amx_load(lctx *c, kir_block *b, int tile, int buf, kir_expr *const *w)
{
    kir_iarg a[2] = {{.buf = -1, .tile = tile}, {.buf = buf, .nidx = 2, .idx = (kir_expr **)w}};
    return kir_intrinsic(c->k, b, KIR_IN_AMX_LOAD, 0, a) ? 0 : -1;
}

static int amx_dp(lctx *c, kir_block *b, int t, kir_intrin op)
{
    kir_iarg a[3] = {{.buf = -1, .tile = t}, {.buf = -1, .tile = 4 + t / 2}, {.buf = -1, .tile = 6 + t % 2}};
    return kir_intrinsic(c->k, b, op, 0, a) ? 0 : -1;
}

int lower_amx_prime(lctx *c, kir_block *b, const int *buf, kir_expr *const (*w)[2])
{
    return amx_load(c, b, 4, buf[0], w[0]) < 0 || amx_load(c, b, 6, buf[2], w[2]) < 0 ? -1 : 0;
}

int lower_amx_step_next(lctx *c, kir_block *b, const int *buf, kir_expr *const (*w)[2], kir_expr *const (*nx)[2],
                        kir_intrin op)
{
    if (amx_load(c, b, 7, buf[3], w[3]) < 0 || amx_dp(c, b, 0, op) < 0 || amx_load(c, b, 5, buf[1], w[1]) < 0 ||
        amx_dp(c, b, 1, op) < 0 || amx_dp(c, b, 2, op) < 0 || amx_load(c, b, 4, buf[0], nx[0]) < 0 ||
        amx_dp(c, b, 3, op) < 0 || amx_load(c, b, 6, buf[2], nx[2]) < 0)
        return -1;
    return 0;
}

/* a + c, folded where a is a constant */
static kir_expr *addc(kir_kernel *k, kir_expr *a, int64_t c)
{
    return a->op == KIR_CONST ? lw_i64c(k, a->c.i + c) : lw_iaddc(k, a, c);
}

kir_stmt *lower_amx_kloop(lctx *c, kir_block *b, int av, kir_expr *ar, kir_expr *ac, int64_t ad, int bv, kir_expr *br,
                          kir_expr *bc, int64_t bw, int64_t bs, int64_t bdr, int64_t ks, kir_intrin op)
{
    kir_kernel *k = c->k;
    int kv = kir_new_var(k);
    /* the windows of step 0 (primed), of step kv and of step kv + 1 (the
     * last step: its own again) */
    kir_expr *st[3] = {lw_i64c(k, 0), kir_var(k, kv), lw_imin(k, lw_iaddc(k, kir_var(k, kv), 1), lw_i64c(k, ks - 1))};
    kir_expr *win[3][4][2];
    for (int i = 0; i < 3; i++) {
        kir_expr *a = lw_imulc(k, st[i], ad), *r = lw_imulc(k, st[i], bs);
        a = ac ? kir_iadd(k, ac, a) : a;
        r = br ? kir_iadd(k, br, r) : r;
        kir_expr *w[4][2] = {{ar, a}, {addc(k, ar, 16), a}, {r, bc}, {addc(k, r, bdr), addc(k, bc, bw)}};
        memcpy(win[i], w, sizeof w);
    }
    int bufs[4] = {av, av, bv, bv};
    kir_stmt *lk = lower_amx_zero(c, b) < 0 || lower_amx_prime(c, b, bufs, win[0]) < 0
                       ? NULL : kir_for(k, b, kv, lw_i64c(k, 0), lw_i64c(k, ks), KIR_SERIAL, 0);
    return lk && lower_amx_step_next(c, &lk->body, bufs, win[1], win[2], op) == 0 ? lk : NULL;
}

int lower_amx_store(lctx *c, kir_block *b, int buf, kir_expr *r, kir_expr *col)
{
    kir_kernel *k = c->k;
    for (int t = 0; t < 4; t++) {
        kir_expr *ix[2] = {lw_iaddc(k, r, t / 2 * 16), lw_iaddc(k, col, t % 2 * 16)};
        if (!kir_intrinsic(k, b, KIR_IN_AMX_STORE, 0, (kir_iarg[]){{.buf = buf, .nidx = 2, .idx = ix}, {.buf = -1, .tile = t}}))
            return -1;
    }
    return 0;
}
