/* fuse.c - fusion: groups of nodes that a backend turns into one kernel
 * (ir.h, "fused groups"). This first step forms elementwise chains: a
 * root elementwise node takes in, walking producers backwards, every
 * elementwise producer whose output has the root's dims (constant or the
 * same symbols; the dtype may differ, as through Cast or a comparison) and
 * whose every use is already inside the group, up to max-ops nodes.
 * Inputs from outside the group may broadcast. Because only the root's
 * output leaves the group, the group is convex and needs no storage for
 * its interior values: the kernel computes each one at the index where
 * its user reads it.
 *
 * The kernel computes an interior value once per path by which the root
 * reads it (x * sigmoid(x) reads x twice), so a producer is left outside
 * when that count would pass MAX_EVALS.
 *
 * Roots are tried from the last node backwards, so a chain goes into the
 * group of its final consumer. Producers are visited in decreasing node
 * order (a max-heap): when a producer is looked at, every node after it
 * has already been decided, so "all uses inside the group" is final.
 * Then the members of each group are moved next to their root (a valid
 * order: nothing between them used their outputs), which keeps printed
 * groups contiguous. A Cast through which a contraction reads a bf16/f16
 * weight (passes/precision.c) joins that contraction's group, one of its
 * own when it anchors none. Existing groups are dropped first: the pass
 * recomputes them, so running it twice gives the same result.
 */
#include "passes/pass.h"
#include "codegen/schedule.h"
#include "ir/ops.h"

#include <stdlib.h>
#include <string.h>

/* The most times a kernel may compute one interior value. */
#define MAX_EVALS 4

/* n may join an elementwise group: one output of known rank and
 * known dims. */
static bool candidate(const ir_node *n)
{
    if (!(ir_ops[n->op].flags & IR_F_ELEMWISE) || n->nout != 1)
        return false;
    const ir_type *t = &n->out[0]->type;
    return t->dtype != IR_UNDEF && ir_type_dims_known(t);
}

/* n may anchor a group whose root has type rt: an op whose lowering
 * takes the group's elementwise members as its epilogue (the registry's
 * IR_F_ANCHOR; codegen: lower_epi) with one output of the root's dtype (a
 * float) and static dims, or a Conv's symbolic height and width, or a
 * blocked conv's symbolic batch, height and width (their lowerings index
 * the epilogue with the run's sizes). Its inputs stay
 * outside the group. */
static bool anchor_candidate(const ir_node *n, const ir_type *rt)
{
    if (!(ir_ops[n->op].flags & IR_F_ANCHOR))
        return false;
    const ir_type *t = &n->out[0]->type;
    /* or a bf16 root over a bf16 pair contraction */
    bool narrow = icc_precision_narrow_root(n, rt->dtype);
    if (n->nout != 1 || (t->dtype != rt->dtype && !narrow) || (!ir_dtype_is_float(t->dtype) && !narrow) ||
        t->rank < 0)
        return false;
    /* blocked convs: a symbolic batch and plane too ([N, C/cb, H, W, cb]) */
    bool blocked = (ir_ops[n->op].flags & IR_F_BLOCKED) && t->rank == 5;
    for (int d = 0; d < t->rank; d++)
        if (!ir_dim_is_const(t->dims[d]) && !(t->dims[d].sym > 0 && ((n->op == IR_OP_CONV && d >= 2) ||
                                                                      (blocked && d != 1 && d != 4))))
            return false;
    return true;
}

/* Conv kernels (IR_F_PLANE_FLAT) may index their output with the plane's
 * dims (those after the channel dim, [2, hi)) flattened into the last of
 * them: an input from outside the group must then span all of those dims
 * or none. On blocked data (IR_F_BLOCKED) the plane is [2, rank - 1): the
 * last dim is the channel block's lanes. An input's size-1 dim is read at
 * index 0 (broadcast), so one that spans the plane must not have size 1
 * in the last plane dim, which carries the flattened position (an output
 * [.., 5, 1] read by an input [.., 5, 1]). */
static bool flat_safe(const ir_value *x, const ir_type *rt, int hi)
{
    const ir_type *t = &x->type;
    int all = 0, ones = 0, n = 0;
    bool last_one = false;
    for (int d = 2; d < hi; d++) {
        int xd = d - (rt->rank - t->rank);
        bool one = xd < 0 || (ir_dim_is_const(t->dims[xd]) && t->dims[xd].v == 1);
        all += xd >= 0 && ir_dim_eq(t->dims[xd], rt->dims[d]);
        ones += one;
        last_one = one;
        n++;
    }
    return t->rank >= 0 && (ones == n || (all == n && !last_one));
}

static bool same_dims(const ir_type *a, const ir_type *b)
{
    if (a->rank != b->rank)
        return false;
    for (int d = 0; d < a->rank; d++)
        if (!ir_dim_eq(a->dims[d], b->dims[d]))
            return false;
    return true;
}

/* Normalizations read their data input up to 3 times (max, sum, the
 * result; mean, variance, the result): a prologue is computed that often. */
enum { NORM_READS = 3 };

/* n's lowering computes its data input from a prologue when it is
 * interior (the registry's IR_F_PROLOGUE; codegen: red_load). */
static bool prologue_anchor(const ir_node *n)
{
    return ir_ops[n->op].flags & IR_F_PROLOGUE;
}

/* v is the data input of normalization a, and no other input of it. */
static bool prologue_input(const ir_node *a, const ir_value *v)
{
    if (!prologue_anchor(a) || a->in[0] != v)
        return false;
    for (int i = 1; i < a->nin; i++)
        if (a->in[i] == v)
            return false;
    return true;
}

/* n reads the result of a contraction that nothing else reads: an anchor
 * that takes an epilogue but no prologue, on unblocked data (MatMul, Gemm,
 * Conv). ConvNCHWc is left out as it always was: counting it moves nodes
 * between ResNet-50's groups after layout (a change to measure first). */
static bool feeds_on_contraction(const ir_graph *g, const ir_node *n, const int *at, const int *ustart)
{
    for (int i = 0; i < n->nin; i++) {
        const ir_value *v = n->in[i];
        int p = v ? at[v->id] : -1;
        if (p < 0)
            continue;
        unsigned fl = ir_ops[g->nodes[p]->op].flags;
        if ((fl & IR_F_ANCHOR) && !(fl & (IR_F_PROLOGUE | IR_F_BLOCKED)) && ustart[v->id + 1] - ustart[v->id] == 1)
            return true;
    }
    return false;
}

/* The inputs a contraction may read narrow: an Attention's Q, K and V;
 * a MatMul's A and B. */
enum { HALF_INS = 3 };

/* The producer index of the Cast through which contraction n reads its
 * input i narrow (icc_precision_half_weight: a bf16/f16 weight, or a bf16
 * activation), when n alone reads it; else -1. The Cast then joins n's
 * kernel, which converts as it loads, so the f32 copy is never stored. */
static int half_cast(const pass_ctx *c, const ir_node *n, int i, const int *at, const int *ustart,
                     const bool *is_out)
{
    int p = n->nin > i && n->in[i] ? at[n->in[i]->id] : -1, vid = p >= 0 ? n->in[i]->id : 0;
    if (p < 0 || !icc_precision_half_weight(n, i) || is_out[vid] || ustart[vid + 1] - ustart[vid] != 1)
        return -1;
    /* a blocked conv's weight the target would widen at every load: widened once a
     * run instead, by the Cast's own kernel (cg_schedule_widen_conv_weight) */
    const ir_type *w = &n->in[i]->type, *y = &n->out[0]->type;
    int64_t ne;
    if (n->op == IR_OP_CONV_NCHWC && i == 1 && ir_type_numel(w, &ne) && ir_type_is_static(y) &&
        y->rank == 5 &&
        cg_schedule_widen_conv_weight(c->target, n->in[i]->def->in[0]->type.dtype == IR_BF16, ne * 4,
                                      y->dims[0].v * y->dims[2].v * y->dims[3].v))
        return -1;
    return p;
}

/* p is a constant Pad by zeros (no value input) of an f32 blocked tensor
 * [N, C/cb, H, W, cb] along H and W only, by amounts >= 0: the layout
 * pass's explicit padding of a conv's input (pad_plane). Its dims may be
 * symbols (a detector's H and W), each output dim the input's plus its
 * pads. */
static bool pad_out_candidate(const ir_node *p)
{
    if (p->op != IR_OP_PAD || p->nout != 1 || p->nin < 2 || p->nin > 2 || !p->in[0] || !p->in[1] ||
        p->in[1]->kind != IR_VAL_CONST || strcmp(ir_attr_string(p, "mode", "constant"), "constant"))
        return false;
    const ir_type *x = &p->in[0]->type, *o = &p->out[0]->type;
    const ir_tensor *t = &p->in[1]->cval;
    if (x->dtype != IR_F32 || x->rank != 5 || o->rank != 5 || !ir_type_dims_known(x) || !ir_type_dims_known(o) ||
        t->numel != 10)
        return false;
    for (int i = 0; i < 10; i++) {
        int64_t v = ir_tensor_geti(t, i);
        if (v < 0 || v > (INT64_C(1) << 20) || (v && i % 5 != 2 && i % 5 != 3))
            return false;
    }
    for (int d = 0; d < 5; d++)
        if (!ir_dim_is_plus(p->graph, x->dims[d], o->dims[d], ir_tensor_geti(t, d) + ir_tensor_geti(t, 5 + d)))
            return false;
    return true;
}

/* a may store its result into a padded buffer's interior (codegen/lower:
 * lw_store_out, which every lowering of these ops stores through): an f32
 * blocked conv or depthwise conv on f32 operands read as they are (no
 * narrow Cast in its kernel, no packed pairs); or, alone, an f32 Concat
 * or ConcatNCHWc (its pieces copied straight into the padded buffer) or a
 * blocked MaxPool (its one output) or AveragePool. Dims may be symbols. */
static bool pad_out_anchor(const ir_node *a)
{
    if (a->nout != 1 || !ir_type_dims_known(&a->out[0]->type) || a->out[0]->type.dtype != IR_F32)
        return false;
    if (!a->group && (a->op == IR_OP_CONCAT || a->op == IR_OP_CONCAT_NCHWC || a->op == IR_OP_MAX_POOL ||
                      a->op == IR_OP_AVERAGE_POOL)) {
        for (int i = 0; i < a->nin; i++)
            if (!a->in[i] || a->in[i]->type.dtype != IR_F32 || !ir_type_dims_known(&a->in[i]->type))
                return false;
        return a->nin > 0 && (a->op != IR_OP_MAX_POOL && a->op != IR_OP_AVERAGE_POOL ? true : a->in[0]->type.rank == 5);
    }
    if ((a->op != IR_OP_CONV_NCHWC && a->op != IR_OP_CONV_DW_NCHWC) || a->nin < 2 ||
        ir_attr_int(a, "packed_k", 1) != 1)
        return false;
    for (int i = 0; i < 2; i++) {
        const ir_value *v = a->in[i];
        if (!v || v->type.dtype != IR_F32 || (v->kind == IR_VAL_NODE && v->def->op == IR_OP_CAST))
            return false;
    }
    return true;
}

/* The anchor of group gid, whose members come before node `before`, or
 * NULL. */
static const ir_node *group_anchor(const ir_graph *g, int gid, int before)
{
    for (int k = 0; k < before; k++)
        if (g->nodes[k]->group == gid && (ir_ops[g->nodes[k]->op].flags & IR_F_ANCHOR))
            return g->nodes[k];
    return NULL;
}

typedef struct {
    int *v, n;
} heap;

static void hpush(heap *h, int x)
{
    int j = h->n++;
    h->v[j] = x;
    while (j && h->v[(j - 1) / 2] < h->v[j]) {
        int t = h->v[j];
        h->v[j] = h->v[(j - 1) / 2];
        h->v[(j - 1) / 2] = t;
        j = (j - 1) / 2;
    }
}

static int hpop(heap *h)
{
    int top = h->v[0];
    h->v[0] = h->v[--h->n];
    for (int j = 0;;) {
        int l = 2 * j + 1, r = l + 1, m = j;
        if (l < h->n && h->v[l] > h->v[m])
            m = l;
        if (r < h->n && h->v[r] > h->v[m])
            m = r;
        if (m == j)
            break;
        int t = h->v[j];
        h->v[j] = h->v[m];
        h->v[m] = t;
        j = m;
    }
    return top;
}

/* Pushes the producers of n's first nin inputs not seen in this attempt. */
static void push_producers(heap *h, const ir_node *n, int nin, const int *at, int *seen, int stamp)
{
    for (int i = 0; i < nin && i < n->nin; i++) {
        int p = n->in[i] ? at[n->in[i]->id] : -1;
        if (p >= 0 && seen[p] != stamp) {
            seen[p] = stamp;
            hpush(h, p);
        }
    }
}

static int fuse_graph(pass_ctx *c, ir_graph *g)
{
    int nn = g->nnodes, nv = g->nvalues, rc = -1;
    int64_t max_ops = pass_opt_int(c, "max-ops", 16);
    int *old = malloc(sizeof(int) * ((size_t)nn + 1));
    int *at = malloc(sizeof(int) * ((size_t)nv + 1));          /* value -> producer index */
    int *ustart = calloc((size_t)nv + 2, sizeof(int));          /* value -> users (CSR) */
    int *users = NULL, *seen = malloc(sizeof(int) * ((size_t)nn + 1));
    bool *is_out = calloc((size_t)nv + 1, 1);
    bool *narrow = calloc((size_t)nn + 1, 1); /* a Cast that joins its contraction's kernel (half_cast) */
    int *half = malloc(sizeof(int) * (HALF_INS * (size_t)nn + 1));   /* HALF_INS k + i -> half_cast(node k, i) */
    heap h = {malloc(sizeof(int) * ((size_t)nn + 1)), 0};
    ir_node **order = malloc(sizeof(ir_node *) * ((size_t)nn + 1));
    int *root = malloc(sizeof(int) * (2 * (size_t)nn + 1));
    int *evals = malloc(sizeof(int) * ((size_t)nn + 1)); /* member -> times computed */
    int *members = malloc(sizeof(int) * ((size_t)nn + 1));
    bool anchors = pass_opt_int(c, "anchors", 1) != 0;
    if (!members || !evals || !old || !at || !ustart || !seen || !is_out || !narrow || !half || !h.v || !order || !root)
        goto oom;
    for (int i = 0; i < nv; i++)
        at[i] = -1;
    int nedges = 0;
    for (int k = 0; k < nn; k++) {
        ir_node *n = g->nodes[k];
        old[k] = n->group;
        n->group = 0;
        seen[k] = 0;
        for (int i = 0; i < n->nout; i++)
            at[n->out[i]->id] = k;
        for (int i = 0; i < n->nin; i++)
            if (n->in[i]) {
                ustart[n->in[i]->id + 1]++;
                nedges++;
            }
    }
    for (int i = 0; i < g->noutputs; i++)
        is_out[g->outputs[i]->id] = true;
    for (int i = 0; i < nv; i++)
        ustart[i + 1] += ustart[i];
    users = malloc(sizeof(int) * ((size_t)nedges + 1));
    int *fill = calloc((size_t)nv + 1, sizeof(int));
    if (!users || !fill) {
        free(fill);
        goto oom;
    }
    for (int k = 0; k < nn; k++)
        for (int i = 0; i < g->nodes[k]->nin; i++) {
            const ir_value *v = g->nodes[k]->in[i];
            if (v)
                users[ustart[v->id] + fill[v->id]++] = k;
        }
    free(fill);
    for (int k = 0; k < nn; k++)
        for (int i = 0; i < HALF_INS; i++) {
            int p = half[HALF_INS * k + i] = half_cast(c, g->nodes[k], i, at, ustart, is_out);
            if (p >= 0)
                narrow[p] = true;
        }

    int ngroups = 0, stamp = 0;
    int64_t fused = 0;
    for (int r = nn - 1; r >= 0; r--) {
        ir_node *rn = g->nodes[r];
        /* a contraction that reads a narrow weight and anchors no group
         * has one of its own, for the weight's Cast to join (below) */
        if (!rn->group && (half[HALF_INS * r] >= 0 || half[HALF_INS * r + 1] >= 0 || half[HALF_INS * r + 2] >= 0)) {
            rn->group = ++ngroups;
            fused++;
            continue;
        }
        /* such a Cast roots no group: it joins its contraction's (below) */
        if (narrow[r])
            continue;
        /* a normalization may root a group of its prologue */
        bool root_anchor = anchors && !rn->group && prologue_anchor(rn) && anchor_candidate(rn, &rn->out[0]->type);
        if (rn->group || !(candidate(rn) || root_anchor))
            continue;
        int gid = ngroups + 1, size = 1, anchor = root_anchor ? r : -1;
        const ir_type *rt = &rn->out[0]->type;
        rn->group = gid;
        evals[r] = root_anchor ? NORM_READS : 1;
        members[0] = r;
        h.n = 0;
        /* Each producer is pushed once per attempt (seen == stamp), so
         * the heap never holds more than nn entries. */
        stamp++;
        push_producers(&h, rn, root_anchor ? 1 : rn->nin, at, seen, stamp);
        while (h.n && size < max_ops) {
            int p = hpop(&h);
            ir_node *pn = g->nodes[p];
            bool an = anchors && anchor < 0 && anchor_candidate(pn, rt);
            if (pn->group || !(an || candidate(pn)) || is_out[pn->out[0]->id] ||
                !same_dims(&pn->out[0]->type, rt))
                continue;
            /* a prologue leaves a contraction's only reader to be that
             * contraction's epilogue */
            if (anchor >= 0 && !an && feeds_on_contraction(g, pn, at, ustart))
                continue;
            int vid = pn->out[0]->id, ev = 0;
            bool inside = ustart[vid + 1] > ustart[vid];
            for (int u = ustart[vid]; u < ustart[vid + 1] && inside; u++) {
                /* the anchor's inputs come from outside the group, but a
                 * normalization's data input */
                const ir_node *un = g->nodes[users[u]];
                inside = un->group == gid && (users[u] != anchor || prologue_input(un, pn->out[0]));
                ev += inside ? evals[users[u]] : 0;
            }
            /* an anchor is computed once, whatever reads it */
            if (!inside || (!an && ev > MAX_EVALS))
                continue;
            pn->group = gid;
            evals[p] = an ? NORM_READS : ev;
            members[size++] = p;
            if (an)
                anchor = p;
            if (!an || prologue_anchor(pn))
                push_producers(&h, pn, an ? 1 : pn->nin, at, seen, stamp);
        }
        /* a Conv anchor leaves again when an outside input of the others
         * breaks its kernel's indexing (it is never the root) */
        unsigned afl = anchor < 0 ? 0 : ir_ops[g->nodes[anchor]->op].flags;
        int plane_hi = !(afl & IR_F_PLANE_FLAT) ? 0 : afl & IR_F_BLOCKED ? rt->rank - 1 : rt->rank;
        for (int m = 0; plane_hi > 0 && anchor >= 0 && m < size; m++) {
            const ir_node *mn = g->nodes[members[m]];
            for (int i = 0; anchor >= 0 && mn != g->nodes[anchor] && i < mn->nin; i++) {
                const ir_value *x = mn->in[i];
                if (x && !(x->kind == IR_VAL_NODE && x->def->group == gid) && !flat_safe(x, rt, plane_hi)) {
                    g->nodes[anchor]->group = 0;
                    anchor = -1;
                    size--;
                }
            }
        }
        if (size < 2) {
            rn->group = 0;
            continue;
        }
        ngroups++;
        fused += size;
    }
    /* A zero Pad of a blocked conv's result, which nothing else reads (the
     * layout pass's explicit padding of the next conv's input), joins the
     * conv's group as its root: the conv stores into the padded buffer's
     * interior and zeroes its border, so the Pad's copy goes
     * (codegen/lower/lower.c, docs/fusion.md). So does a Pad of a depthwise
     * conv's, a blocked pool's or a Concat's result. CPU targets only (the
     * border is zeroed by a trip of the parallel loop). */
    bool pad_out = anchors && pass_opt_int(c, "pad-out", 1) && cg_schedule_cpu_layouts(c->target);
    for (int k = 0; pad_out && k < nn; k++) {
        ir_node *pn = g->nodes[k];
        const ir_value *x = pn->in && pn->nin ? pn->in[0] : NULL;
        if (pn->group || !pad_out_candidate(pn) || x->kind != IR_VAL_NODE || is_out[x->id] ||
            ustart[x->id + 1] - ustart[x->id] != 1 || at[x->id] < 0)
            continue;
        ir_node *xn = g->nodes[at[x->id]];
        const ir_node *a = xn->group ? group_anchor(g, xn->group, at[x->id] + 1) : xn;
        if (!a || !pad_out_anchor(a))
            continue;
        if (!xn->group) {
            xn->group = ++ngroups;
            fused++;
        }
        pn->group = xn->group;
        fused++;
    }
    /* A narrow weight's Cast joins its contraction's kernel (the group
     * the loop above gave it, or one of its own). */
    for (int k = 0; k < nn; k++)
        for (int i = 0; i < HALF_INS; i++) {
            int p = half[HALF_INS * k + i];
            if (p >= 0 && g->nodes[k]->group) {
                g->nodes[p]->group = g->nodes[k]->group;
                fused++;
            }
        }
    /* Number groups in node order of their roots, each group's last
     * member (1, 2, ... from the top), so the printed text reads
     * naturally. */
    int *lastpos = calloc((size_t)ngroups + 1, sizeof(int)), *newid = calloc((size_t)ngroups + 1, sizeof(int));
    if (!lastpos || !newid) {
        free(lastpos);
        free(newid);
        goto oom;
    }
    for (int k = 0; k < nn; k++)
        lastpos[g->nodes[k]->group] = k;
    for (int k = 0, next = 0; k < nn; k++) {
        int gid = g->nodes[k]->group;
        if (gid && lastpos[gid] == k)
            newid[gid] = ++next;
    }
    for (int k = 0; k < nn; k++)
        g->nodes[k]->group = newid[g->nodes[k]->group];
    free(lastpos);
    free(newid);
    bool moved = false, regrouped = false;
    for (int k = 0; k < nn; k++)
        regrouped |= g->nodes[k]->group != old[k];
    /* Members next to their root, in their order: each root's members
     * are chained (head[root], then link[member]) in one pass. */
    if (ir_graph_group_roots(g, root) < 0)
        goto oom;
    int *head = seen, *tail = old, *link = root + nn; /* seen and old are free by now */
    for (int k = 0; k < nn; k++)
        head[k] = tail[k] = link[k] = -1;
    for (int k = 0; k < nn; k++) {
        int r = root[k];
        if (r == k)
            continue;
        if (head[r] < 0)
            head[r] = k;
        else
            link[tail[r]] = k;
        tail[r] = k;
    }
    int no = 0;
    for (int k = 0; k < nn; k++) {
        if (root[k] != k)
            continue;
        for (int j = head[k]; j >= 0; j = link[j])
            order[no++] = g->nodes[j];
        order[no++] = g->nodes[k];
    }
    for (int k = 0; k < nn; k++)
        moved |= order[k] != g->nodes[k];
    if (nn)
        memcpy(g->nodes, order, sizeof(ir_node *) * (size_t)nn);
    c->changed |= moved || regrouped;
    pass_stat(c, "kernels formed", ngroups);
    pass_stat(c, "nodes fused", fused);
    rc = 0;
    goto done;
oom:
    ir_errorf(c->diag, "out of memory");
done:
    free(old);
    free(at);
    free(ustart);
    free(users);
    free(seen);
    free(is_out);
    free(narrow);
    free(half);
    free(h.v);
    free(order);
    free(root);
    free(evals);
    free(members);
    return rc;
}

/* g, then the subgraphs of its nodes (If's branches, Loop's and Scan's
 * bodies: their nodes become kernels of the same program). */
static int fuse_tree(pass_ctx *c, ir_graph *g, int depth)
{
    if (fuse_graph(c, g) < 0)
        return -1;
    ir_graph *sub;
    for (int k = 0; k < g->nnodes; k++)
        for (int a = 0; (sub = ir_node_subgraph(g->nodes[k], &a));) {
            if (depth >= IR_MAX_SUBGRAPH_DEPTH)
                return ir_node_errorf(c->diag, g->nodes[k], "subgraphs nest deeper than %d", IR_MAX_SUBGRAPH_DEPTH);
            if (fuse_tree(c, sub, depth + 1) < 0)
                return -1;
        }
    return 0;
}

int pass_fuse(pass_ctx *c)
{
    c->changed = false;
    return fuse_tree(c, c->g, 0);
}
