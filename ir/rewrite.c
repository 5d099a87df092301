/* rewrite.c - graph mutation for passes: replacing uses, erasing nodes
 * and values, restoring topological order after insertions.
 *
 * Passes mark what they remove (ir_node_erase, ir_value_erase) and call
 * ir_graph_compact() once at the end, which drops the marked entries and
 * renumbers ids; new nodes are appended (ir_graph_add_node) and put in
 * place by ir_graph_toposort(). Marking then compacting keeps every pass
 * O(n) instead of shifting arrays on each removal.
 */
#include "ir/ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *ir_graph_fresh_name(const ir_graph *g, const char *base, const char *suffix, char *buf, size_t n)
{
    for (int k = 0;; k++) {
        if (k)
            snprintf(buf, n, "%.200s%s.%d", base, suffix, k);
        else
            snprintf(buf, n, "%.200s%s", base, suffix);
        bool taken = false;
        for (int i = 0; i < g->nvalues && !taken; i++)
            taken = !g->values[i]->dead && !strcmp(g->values[i]->name, buf);
        if (!taken)
            return buf;
    }
}

int ir_replace_all_uses(ir_graph *g, ir_value *from, ir_value *to)
{
    int n = 0;
    for (int k = 0; k < g->nnodes; k++) {
        ir_node *nd = g->nodes[k];
        for (int i = 0; i < nd->nin; i++)
            if (nd->in[i] == from) {
                nd->in[i] = to;
                n++;
            }
    }
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == from) {
            g->outputs[i] = to;
            n++;
        }
    return n;
}

void ir_graph_count_uses(const ir_graph *g, int *uses)
{
    memset(uses, 0, sizeof(int) * (size_t)g->nvalues);
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *nd = g->nodes[k];
        if (nd->dead)
            continue;
        for (int i = 0; i < nd->nin; i++)
            if (nd->in[i])
                uses[nd->in[i]->id]++;
    }
    for (int i = 0; i < g->noutputs; i++)
        uses[g->outputs[i]->id]++;
}

int ir_value_count_uses(const ir_graph *g, const ir_value *v)
{
    int n = 0;
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *nd = g->nodes[k];
        if (nd->dead)
            continue;
        for (int i = 0; i < nd->nin; i++)
            n += nd->in[i] == v;
    }
    for (int i = 0; i < g->noutputs; i++)
        n += g->outputs[i] == v;
    return n;
}

void ir_node_erase(ir_node *n)
{
    n->dead = true;
    for (int i = 0; i < n->nout; i++)
        n->out[i]->dead = true;
}

void ir_value_erase(ir_value *v)
{
    v->dead = true;
}

void ir_graph_compact(ir_graph *g)
{
    int k = 0;
    for (int i = 0; i < g->nnodes; i++)
        if (!g->nodes[i]->dead)
            g->nodes[k++] = g->nodes[i];
    g->nnodes = k;
    k = 0;
    for (int i = 0; i < g->nvalues; i++)
        if (!g->values[i]->dead) {
            g->values[i]->id = k;
            g->values[k++] = g->values[i];
        }
    g->nvalues = k;
    k = 0;
    for (int i = 0; i < g->ninputs; i++)
        if (!g->inputs[i]->dead)
            g->inputs[k++] = g->inputs[i];
    g->ninputs = k;
}

/* Kahn's algorithm, always taking the ready node that came first in the
 * current order, so an already sorted graph keeps its order exactly and
 * appended nodes move just before their first user. */
int ir_graph_toposort(ir_graph *g, icc_diag *d)
{
    int n = g->nnodes, rc = -1;
    int *pending = calloc((size_t)n + 1, sizeof(int));      /* unready inputs per node */
    int *producer = malloc(sizeof(int) * ((size_t)g->nvalues + 1));
    int *heap = malloc(sizeof(int) * ((size_t)n + 1));
    ir_node **order = malloc(sizeof(ir_node *) * ((size_t)n + 1));
    int *users_start = calloc((size_t)n + 2, sizeof(int)), *users = NULL;
    if (!pending || !producer || !heap || !order || !users_start) {
        ir_errorf(d, "out of memory");
        goto done;
    }
    for (int i = 0; i < g->nvalues; i++)
        producer[i] = -1;
    for (int k = 0; k < n; k++)
        for (int i = 0; i < g->nodes[k]->nout; i++)
            producer[g->nodes[k]->out[i]->id] = k;
    /* users as a CSR list: producer node -> consumer nodes */
    int nedges = 0;
    for (int k = 0; k < n; k++)
        for (int i = 0; i < g->nodes[k]->nin; i++) {
            const ir_value *v = g->nodes[k]->in[i];
            if (v && producer[v->id] >= 0) {
                users_start[producer[v->id] + 1]++;
                pending[k]++;
                nedges++;
            }
        }
    for (int k = 0; k < n; k++)
        users_start[k + 1] += users_start[k];
    users = malloc(sizeof(int) * ((size_t)nedges + 1));
    int *fill = calloc((size_t)n + 1, sizeof(int));
    if (!users || !fill) {
        free(fill);
        ir_errorf(d, "out of memory");
        goto done;
    }
    for (int k = 0; k < n; k++)
        for (int i = 0; i < g->nodes[k]->nin; i++) {
            const ir_value *v = g->nodes[k]->in[i];
            if (v && producer[v->id] >= 0) {
                int p = producer[v->id];
                users[users_start[p] + fill[p]++] = k;
            }
        }
    free(fill);
    /* binary min-heap of ready node indices */
    int hn = 0, done_n = 0;
#define HPUSH(x)                                                              \
    do {                                                                      \
        int j = hn++;                                                         \
        heap[j] = (x);                                                        \
        while (j && heap[(j - 1) / 2] > heap[j]) {                            \
            int t = heap[j]; heap[j] = heap[(j - 1) / 2]; heap[(j - 1) / 2] = t; \
            j = (j - 1) / 2;                                                  \
        }                                                                     \
    } while (0)
    for (int k = 0; k < n; k++)
        if (!pending[k])
            HPUSH(k);
    while (hn) {
        int top = heap[0];
        heap[0] = heap[--hn];
        for (int j = 0;;) {
            int l = 2 * j + 1, r = l + 1, m = j;
            if (l < hn && heap[l] < heap[m])
                m = l;
            if (r < hn && heap[r] < heap[m])
                m = r;
            if (m == j)
                break;
            int t = heap[j];
            heap[j] = heap[m];
            heap[m] = t;
            j = m;
        }
        order[done_n++] = g->nodes[top];
        for (int e = users_start[top]; e < users_start[top + 1]; e++)
            if (--pending[users[e]] == 0)
                HPUSH(users[e]);
    }
#undef HPUSH
    if (done_n != n) {
        for (int k = 0; k < n; k++)
            if (pending[k]) {
                ir_node_errorf(d, g->nodes[k], "is part of a cycle");
                break;
            }
        goto done;
    }
    memcpy(g->nodes, order, sizeof(ir_node *) * (size_t)n);
    rc = 0;
done:
    free(pending);
    free(producer);
    free(heap);
    free(order);
    free(users_start);
    free(users);
    return rc;
}

int ir_graph_bind_input(ir_graph *g, int index, const ir_tensor *t, icc_diag *d)
{
    if (index < 0 || index >= g->ninputs)
        return ir_errorf(d, "no graph input #%d", index);
    ir_value *v = g->inputs[index];
    const ir_type *dt = &v->type;
    if (t->dtype != dt->dtype)
        return ir_errorf(d, "input '%.200s': bound tensor is %s, the input is %s", v->name,
                         ir_dtype_name(t->dtype), ir_dtype_name(dt->dtype));
    bool fits = dt->rank < 0 || dt->rank == t->rank;
    for (int i = 0; fits && dt->rank >= 0 && i < t->rank; i++)
        fits = !ir_dim_is_const(dt->dims[i]) || dt->dims[i].v == t->dims[i];
    if (!fits)
        return ir_errorf(d, "input '%.200s': bound tensor's shape does not fit the declared one", v->name);
    void *data = ir_arena_alloc(g->arena, t->nbytes + 1);
    if (!data)
        return ir_errorf(d, "out of memory binding input '%.200s'", v->name);
    if (t->nbytes)
        memcpy(data, t->data, t->nbytes);
    v->cval = *t;
    v->cval.data = data;
    ir_type_of_tensor(t, &v->type);
    v->kind = IR_VAL_CONST;
    memmove(g->inputs + index, g->inputs + index + 1, sizeof *g->inputs * (size_t)(g->ninputs - index - 1));
    g->ninputs--;
    return 0;
}
