/* plan.c - memory planning: every intermediate value with a static size
 * gets an offset in one arena, so that values whose lifetimes overlap
 * never overlap in memory, and the arena is as small as a simple greedy
 * can make it.
 *
 * A value lives from the node that defines it to its last user (both
 * inclusive: a node reads its inputs while it writes its outputs). Graph
 * inputs and outputs live in the caller's buffers and constants in the
 * weights, so they are not planned; nor are values whose size depends on
 * a symbol (the runtime sizes those per call), nor the results of the top
 * level's load-time kernels (ir_graph_load_time: computed only from
 * constants, once when the model is loaded, into a buffer the model owns),
 * nor the top level's reshapes of its inputs (ir_graph_input_views: views
 * of the caller's buffer).
 *
 * In place: an elementwise node may write its output over an input of the
 * same size and dtype that dies at that node (it reads element i before it
 * writes element i). Such chains share one buffer, whose lifetime is the
 * union of theirs. A Reshape (Flatten, Squeeze, Unsqueeze) whose data
 * input dies at it takes that input's buffer as it is: the same bytes in
 * the same order, so code generation emits no kernel for it.
 *
 * Fused groups (ir.h) run as one kernel at their root's place: a value
 * used inside a group lives until the root, the values the group keeps
 * inside (the outputs of its other members) get no memory at all, and
 * the root may take over a dying outside input of the group in place when
 * every member is elementwise over the root's dims (then each element is
 * read, at its own index, before it is written).
 *
 * Placement is greedy by size (largest first), each buffer at the lowest
 * 64-byte-aligned offset that no already placed, lifetime-overlapping
 * buffer occupies: O(n^2) in the number of buffers, which is fine for
 * graphs of thousands of intermediates.
 *
 * Subgraphs get the top level's symbol ids first (ir_graph_share_syms):
 * code generation reads every scope's symbolic dims from one table.
 */
#include "passes/pass.h"
#include "ir/ops.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t size;              /* bytes, rounded up to 64 */
    int first, last;           /* node indices, inclusive */
    int64_t offset;
} buffer;

/* Placement order: largest first, then by definition. */
typedef struct {
    int64_t size;
    int first, index;
} rank_key;

static int cmp_size(const void *a, const void *b)
{
    const rank_key *x = a, *y = b;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return x->first - y->first;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int64_t value_bytes(const ir_value *v)
{
    int64_t n, b;
    if (!ir_type_numel(&v->type, &n) || !ir_mul_ok(n, (int64_t)ir_dtype_size(v->type.dtype), &b))
        return -1;
    return b;
}

/* The value whose buffer node k's output 0 may take over, or NULL:
 * an input of k, or with a group rooted at k an outside input of any
 * member, that dies at k, has the output's type, and is read once. */
static const ir_value *inplace_input(const ir_graph *g, const int *root, int first, const int *last,
                                     const int *buf_of, int k)
{
    const ir_node *n = g->nodes[k];
    if (ir_op_is_reshape(n->op) && n->nout == 1 && first == k && n->nin >= 1 && n->in[0]) {
        /* a reshape keeps the bytes in order: its result is its dying
         * input's buffer, and code generation emits no copy for it */
        const ir_value *v = n->in[0], *o = n->out[0];
        return buf_of[v->id] >= 0 && last[v->id] == k && v->type.dtype == o->type.dtype &&
                       value_bytes(v) >= 0 && value_bytes(v) == value_bytes(o)
                   ? v
                   : NULL;
    }
    if (!(ir_ops[n->op].flags & IR_F_ELEMWISE) || n->nout != 1)
        return NULL;
    const ir_value *o = n->out[0];
    /* the group's members: the nodes from its first member to k whose root is k */
    for (int j = first; j < k; j++) {
        const ir_node *m = g->nodes[j];
        if (root[j] != k)
            continue;
        if (!(ir_ops[m->op].flags & IR_F_ELEMWISE) || m->nout != 1 ||
            m->out[0]->type.rank != o->type.rank)
            return NULL;
        for (int d = 0; d < o->type.rank; d++)
            if (!ir_dim_eq(m->out[0]->type.dims[d], o->type.dims[d]))
                return NULL;
    }
    for (int j = first; j <= k; j++) {
        const ir_node *m = g->nodes[j];
        if (root[j] != k)
            continue;
        for (int i = 0; i < m->nin; i++) {
            const ir_value *v = m->in[i];
            if (!v || buf_of[v->id] < 0 || last[v->id] != k || !ir_type_same(&v->type, &o->type))
                continue;
            /* the input must be read only once by the kernel */
            int uses = 0;
            for (int jj = first; jj <= k; jj++)
                for (int ii = 0; root[jj] == k && ii < g->nodes[jj]->nin; ii++)
                    uses += g->nodes[jj]->in[ii] == v;
            if (uses == 1)
                return v;
        }
    }
    return NULL;
}

/* Plans g's intermediates at base and up; *end is where they stop, the
 * subgraphs' included. st[0..4] count planned values, in-place reuses,
 * arena bytes (of the top level), bytes without planning, fused bytes. */
static int plan_graph(pass_ctx *c, ir_graph *g, int64_t base, int depth, int64_t *end, int64_t *st)
{
    int nv = g->nvalues, rc = -1;
    int *last = malloc(sizeof(int) * ((size_t)nv + 1));
    int *buf_of = malloc(sizeof(int) * ((size_t)nv + 1));
    bool *is_out = calloc((size_t)nv + 1, 1);
    buffer *bufs = malloc(sizeof(buffer) * ((size_t)nv + 1));
    rank_key *order = malloc(sizeof(rank_key) * ((size_t)nv + 1));
    int *root = malloc(sizeof(int) * (2 * (size_t)g->nnodes + 1));
    bool *at_load = calloc((size_t)g->nnodes + 1, 1), *view = calloc((size_t)g->nnodes + 1, 1);
    int64_t *taken = NULL;
    if (!last || !buf_of || !is_out || !bufs || !order || !root || !at_load || !view || ir_graph_group_roots(g, root) < 0 ||
        (depth == 0 && (ir_graph_load_time(g, root, at_load) < 0 || ir_graph_input_views(g, root, view) < 0))) {
        ir_errorf(c->diag, "out of memory");
        goto done;
    }
    for (int i = 0; i < nv; i++) {
        last[i] = -1;
        buf_of[i] = -1;
        g->values[i]->planned = false;
        g->values[i]->offset = 0;
    }
    for (int i = 0; i < g->noutputs; i++)
        is_out[g->outputs[i]->id] = true;
    int *first = root + g->nnodes; /* first[k]: the first member of the group rooted at k */
    for (int k = g->nnodes - 1; k >= 0; k--)
        first[k] = k;
    for (int k = g->nnodes - 1; k >= 0; k--)
        first[root[k]] = k;
    for (int k = 0; k < g->nnodes; k++)
        for (int i = 0; i < g->nodes[k]->nin; i++)
            if (g->nodes[k]->in[i])
                last[g->nodes[k]->in[i]->id] = root[k];

    int nb = 0;
    int64_t naive = 0, inplace = 0, fused = 0;
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        for (int i = 0; i < n->nout; i++) {
            const ir_value *v = n->out[i];
            int64_t bytes = value_bytes(v);
            if (is_out[v->id] || bytes < 0 || at_load[k] || view[k])
                continue;
            if (root[k] != k) { /* computed inside its group's kernel */
                fused += bytes;
                continue;
            }
            naive += bytes;
            int lastuse = last[v->id] < k ? k : last[v->id];
            const ir_value *src = i == 0 ? inplace_input(g, root, first[k], last, buf_of, k) : NULL;
            if (src) {
                int b = buf_of[src->id];
                buf_of[v->id] = b;
                bufs[b].last = lastuse;
                inplace++;
                continue;
            }
            bufs[nb] = (buffer){(bytes + 63) & ~(int64_t)63, k, lastuse, 0};
            buf_of[v->id] = nb++;
        }
    }

    /* Greedy by size: each buffer goes to the lowest offset free of the
     * already placed buffers whose lifetimes overlap its own. */
    for (int i = 0; i < nb; i++)
        order[i] = (rank_key){bufs[i].size, bufs[i].first, i};
    qsort(order, (size_t)nb, sizeof *order, cmp_size);
    taken = malloc(sizeof(int64_t) * 2 * ((size_t)nb + 1));
    if (!taken) {
        ir_errorf(c->diag, "out of memory");
        goto done;
    }
    int64_t arena = 0;
    for (int i = 0; i < nb; i++) {
        buffer *b = &bufs[order[i].index];
        int nt = 0;
        for (int j = 0; j < i; j++) {
            const buffer *o = &bufs[order[j].index];
            if (o->first <= b->last && b->first <= o->last) {
                taken[2 * nt] = o->offset;
                taken[2 * nt + 1] = o->offset + o->size;
                nt++;
            }
        }
        qsort(taken, (size_t)nt, 2 * sizeof(int64_t), cmp_i64);
        int64_t off = 0;
        for (int j = 0; j < nt; j++) {
            if (taken[2 * j] >= off + b->size)
                break;
            if (taken[2 * j + 1] > off)
                off = taken[2 * j + 1];
        }
        b->offset = off;
        if (off + b->size > arena)
            arena = off + b->size;
    }
    int64_t planned = 0;
    for (int i = 0; i < nv; i++)
        if (buf_of[i] >= 0) {
            g->values[i]->planned = true;
            g->values[i]->offset = base + bufs[buf_of[i]].offset;
            planned++;
        }
    st[0] += planned;
    st[1] += inplace;
    st[3] += naive;
    st[4] += fused;
    /* A control node's subgraphs run while the node runs, so their
     * intermediates must not meet anything of this graph live then; they go
     * above all of this graph's. Only one branch of an If runs, and a body
     * runs after the one before it ended, so every subgraph of this graph
     * starts at the same base: they share the space. */
    int64_t own = base + ((arena + 63) & ~(int64_t)63), top = own;
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        ir_graph *sub;
        for (int a = 0; (sub = ir_node_subgraph(n, &a));) {
            int64_t e = own;
            if (depth >= IR_MAX_SUBGRAPH_DEPTH) {
                ir_node_errorf(c->diag, n, "subgraphs nest deeper than %d", IR_MAX_SUBGRAPH_DEPTH);
                goto done;
            }
            if (plan_graph(c, sub, own, depth + 1, &e, st) < 0)
                goto done;
            top = e > top ? e : top;
        }
    }
    *end = top;
    rc = 0;
done:
    free(last);
    free(buf_of);
    free(is_out);
    free(bufs);
    free(order);
    free(root);
    free(at_load);
    free(view);
    free(taken);
    return rc;
}

int pass_plan(pass_ctx *c)
{
    int64_t st[5] = {0}, end = 0;
    if (c->g->nsubs && ir_graph_share_syms(c->g) < 0)
        return ir_errorf(c->diag, "out of memory");
    if (plan_graph(c, c->g, 0, 0, &end, st) < 0)
        return -1;
    c->changed = st[0] > 0;
    pass_stat(c, "values planned", st[0]);
    pass_stat(c, "in-place reuses", st[1]);
    pass_stat(c, "arena bytes", end);
    pass_stat(c, "bytes without planning", st[3]);
    if (st[4])
        pass_stat(c, "bytes kept in fused kernels", st[4]);
    return 0;
}
