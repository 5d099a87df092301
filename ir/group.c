/* group.c - fused groups: finding each group's root (its last node, where
 * the group's one kernel runs) and checking the rule that makes a group
 * one kernel: only the root's outputs leave the group. A member other
 * than the root whose output were used outside the group, or were a
 * graph output, would need storage the kernel does not give it; and
 * because every path out of a group starts at its root, which comes after
 * every other member, no path can leave the group and come back (the
 * group is convex), so running the whole group at the root's place keeps
 * every dependence. Group ids are any positive ints; they are found by
 * sorting (id, index) pairs, so sparse or large ids cost nothing. Also
 * here: the static cost (FLOPs, bytes moved) of each kernel. */
#include "ir/ops.h"
#include "ir/stats.h"

#include <stdlib.h>

typedef struct {
    int group, index;
} gkey;

static int cmp_gkey(const void *a, const void *b)
{
    const gkey *x = a, *y = b;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    return x->index - y->index;
}

int ir_graph_group_roots(const ir_graph *g, int *root)
{
    int n = 0;
    for (int k = 0; k < g->nnodes; k++) {
        root[k] = k;
        n += g->nodes[k]->group > 0;
    }
    if (!n)
        return 0;
    gkey *keys = malloc(sizeof *keys * (size_t)n);
    if (!keys)
        return -1;
    n = 0;
    for (int k = 0; k < g->nnodes; k++)
        if (g->nodes[k]->group > 0)
            keys[n++] = (gkey){g->nodes[k]->group, k};
    qsort(keys, (size_t)n, sizeof *keys, cmp_gkey);
    for (int i = n - 1; i >= 0; i--) {
        int last = i + 1 < n && keys[i + 1].group == keys[i].group ? root[keys[i + 1].index] : keys[i].index;
        root[keys[i].index] = last;
    }
    free(keys);
    return 0;
}

void ir_graph_group_stats(const ir_graph *g, int *groups, int *members)
{
    int ng = 0, nm = 0;
    int *root = malloc(sizeof *root * ((size_t)g->nnodes + 1));
    if (root && ir_graph_group_roots(g, root) == 0)
        for (int k = 0; k < g->nnodes; k++) {
            if (g->nodes[k]->group <= 0)
                continue;
            nm++;
            ng += root[k] == k;
        }
    free(root);
    if (groups)
        *groups = ng;
    if (members)
        *members = nm;
}

int ir_verify_groups(const ir_graph *g, icc_diag *d)
{
    bool any = false;
    for (int k = 0; k < g->nnodes && !any; k++)
        any = g->nodes[k]->group != 0;
    if (!any)
        return 0;
    int rc = -1;
    int *root = malloc(sizeof *root * ((size_t)g->nnodes + 1));
    int *at = malloc(sizeof *at * ((size_t)g->nvalues + 1)); /* value id -> producer index */
    if (!root || !at || ir_graph_group_roots(g, root) < 0) {
        ir_errorf(d, "out of memory");
        goto done;
    }
    for (int i = 0; i < g->nvalues; i++)
        at[i] = -1;
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        if (n->group < 0) {
            ir_node_errorf(d, n, "has the invalid group %d", n->group);
            goto done;
        }
        for (int i = 0; i < n->nout; i++)
            at[n->out[i]->id] = k;
    }
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        for (int i = 0; i < n->nin; i++) {
            const ir_value *v = n->in[i];
            int p = v ? at[v->id] : -1;
            if (p < 0 || root[p] == p || g->nodes[p]->group == n->group)
                continue;
            ir_node_errorf(d, g->nodes[p], "is inside fused group %d but its output '%.200s' is used "
                           "outside it (only the group's last node may have outside uses)",
                           g->nodes[p]->group, v->name);
            goto done;
        }
    }
    for (int i = 0; i < g->noutputs; i++) {
        const ir_value *v = g->outputs[i];
        int p = at[v->id];
        if (p >= 0 && root[p] != p) {
            ir_node_errorf(d, g->nodes[p], "is inside fused group %d but its output '%.200s' is a "
                           "graph output (only the group's last node may have outside uses)",
                           g->nodes[p]->group, v->name);
            goto done;
        }
    }
    rc = 0;
done:
    free(root);
    free(at);
    return rc;
}

/* Bytes of a value (symbolic dims at the estimates' values, ir/stats.h);
 * 0 when unknown. */
static int64_t static_bytes(const ir_value *v)
{
    int64_t n, b;
    if (!ir_type_numel_est(&v->type, &n) || !ir_mul_ok(n, (int64_t)ir_dtype_size(v->type.dtype), &b))
        return 0;
    return b;
}

/* Adds node n of kernel c (its root when `root`): its FLOPs, the bytes of
 * its inputs from memory that c has not counted (stamp[v->id] == gen:
 * counted), and a root's outputs. */
static void add_node_cost(ir_kernel_cost *c, const ir_node *n, bool root, int *stamp, int gen)
{
    int64_t f;
    c->nodes++;
    if (ir_node_flops(n, &f))
        c->flops += f;
    else
        c->exact = false;
    for (int i = 0; i < n->nin; i++) {
        const ir_value *v = n->in[i];
        if (!v || stamp[v->id] == gen)
            continue;
        bool inside = v->kind == IR_VAL_NODE && v->def->group > 0 && v->def->group == n->group;
        stamp[v->id] = gen;
        if (!inside)
            c->bytes += static_bytes(v);
    }
    if (root)
        for (int i = 0; i < n->nout; i++)
            c->bytes += static_bytes(n->out[i]);
}

int ir_graph_kernel_costs(const ir_graph *g, ir_kernel_cost **out, int *count)
{
    *out = NULL;
    *count = 0;
    int nn = g->nnodes;
    int *root = malloc(sizeof *root * (2 * (size_t)nn + 1));
    ir_kernel_cost *kc = malloc(sizeof *kc * ((size_t)nn + 1));
    int *slot = root ? root + nn : NULL;
    int *stamp = calloc((size_t)g->nvalues + 1, sizeof *stamp);
    if (!root || !kc || !stamp || ir_graph_group_roots(g, root) < 0) {
        free(root);
        free(kc);
        free(stamp);
        return -1;
    }
    int nk = 0;
    for (int k = 0; k < nn; k++)
        if (root[k] == k) {
            slot[k] = nk;
            kc[nk++] = (ir_kernel_cost){k, 0, 0, 0, true};
        }
    /* stamp[v->id] == the root's index + 1: v already counted for that kernel */
    for (int k = 0; k < nn; k++)
        add_node_cost(&kc[slot[root[k]]], g->nodes[k], root[k] == k, stamp, root[k] + 1);
    free(root);
    free(stamp);
    *out = kc;
    *count = nk;
    return 0;
}

void ir_group_cost(const ir_graph *g, const int *members, int n, int r, int *stamp, int gen, ir_kernel_cost *out)
{
    *out = (ir_kernel_cost){r, 0, 0, 0, true};
    for (int i = 0; i < n; i++)
        add_node_cost(out, g->nodes[members[i]], members[i] == r, stamp, gen);
}
