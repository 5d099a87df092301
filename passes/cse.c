/* cse.c - common subexpression elimination. Identical constants (same
 * dtype, shape and bytes) merge into the first of them; then, in
 * topological order, a node with the same op, the same inputs (the same
 * values at the same positions, omitted ones included; either order for
 * binary commutative ops), the same attributes (kinds and values exactly:
 * floats by bits, tensors byte-wise; order does not matter) and the same
 * output count as an earlier node is replaced by it. Inputs are redirected
 * to the survivors as the walk goes, so duplicate chains merge in one run.
 * Open-addressing hash tables keep it O(n); a constant's bytes are hashed
 * only when another constant has the same type, and compared only when the
 * hashes match. Graph inputs are the interface and never merge; two graph
 * outputs may end up naming the same value, which the IR allows.
 */
#include "passes/pass.h"
#include "ir/ops.h"

#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t h, uint64_t x)
{
    h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    uint64_t w = 0;
    if (n > i)
        memcpy(&w, b + i, n - i);
    return mix(h, w ^ n);
}

static uint64_t hash_str(uint64_t h, const char *s)
{
    return hash_bytes(h, s, strlen(s));
}

static uint64_t hash_tensor_type(uint64_t h, const ir_tensor *t)
{
    h = mix(h, (uint64_t)t->dtype);
    h = mix(h, (uint64_t)t->rank);
    for (int i = 0; i < t->rank; i++)
        h = mix(h, (uint64_t)t->dims[i]);
    return h;
}

static bool tensor_eq(const ir_tensor *a, const ir_tensor *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank || a->nbytes != b->nbytes)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return !a->nbytes || !memcmp(a->data, b->data, a->nbytes);
}

static uint64_t hash_attr(const ir_attr *a)
{
    uint64_t h = mix(hash_str(0, a->name), (uint64_t)a->kind);
    switch (a->kind) {
    case IR_ATTR_INT:
        return mix(h, (uint64_t)a->i);
    case IR_ATTR_FLOAT:
        return hash_bytes(h, &a->f, sizeof a->f);
    case IR_ATTR_STRING:
        return hash_str(h, a->s ? a->s : "");
    case IR_ATTR_INTS:
        return hash_bytes(h, a->ints, sizeof(int64_t) * (size_t)a->n);
    case IR_ATTR_FLOATS:
        return hash_bytes(h, a->floats, sizeof(float) * (size_t)a->n);
    case IR_ATTR_STRINGS:
        for (int i = 0; i < a->n; i++)
            h = hash_str(h, a->strings[i]);
        return mix(h, (uint64_t)a->n);
    case IR_ATTR_TENSOR:
        h = hash_tensor_type(h, a->tensor);
        return hash_bytes(h, a->tensor->data, a->tensor->nbytes);
    case IR_ATTR_GRAPH:
        return hash_bytes(h, &a->graph, sizeof a->graph);
    }
    return h;
}

static bool attr_eq(const ir_attr *a, const ir_attr *b)
{
    if (a->kind != b->kind || strcmp(a->name, b->name))
        return false;
    switch (a->kind) {
    case IR_ATTR_INT:
        return a->i == b->i;
    case IR_ATTR_FLOAT:
        return !memcmp(&a->f, &b->f, sizeof a->f);
    case IR_ATTR_STRING:
        return !strcmp(a->s ? a->s : "", b->s ? b->s : "");
    case IR_ATTR_INTS:
        return a->n == b->n && (!a->n || !memcmp(a->ints, b->ints, sizeof(int64_t) * (size_t)a->n));
    case IR_ATTR_FLOATS:
        return a->n == b->n && (!a->n || !memcmp(a->floats, b->floats, sizeof(float) * (size_t)a->n));
    case IR_ATTR_STRINGS:
        if (a->n != b->n)
            return false;
        for (int i = 0; i < a->n; i++)
            if (strcmp(a->strings[i], b->strings[i]))
                return false;
        return true;
    case IR_ATTR_TENSOR:
        return tensor_eq(a->tensor, b->tensor);
    case IR_ATTR_GRAPH:
        /* The same subgraph only: nodes with equal-looking bodies are rare
         * enough not to compare graphs for. */
        return a->graph == b->graph;
    }
    return false;
}

/* Binary ops whose two inputs may be swapped without changing a bit of
 * the result. Variadic ones keep their order: a float sum's rounding
 * depends on it. */
static bool swappable(const ir_node *n)
{
    return (ir_ops[n->op].flags & IR_F_COMMUTATIVE) && n->nin == 2 && !n->ncap;
}

static uint64_t in_key(const ir_value *v)
{
    return v ? (uint64_t)v->id + 1 : 0;
}

static uint64_t hash_node(const ir_node *n)
{
    uint64_t h = mix(mix(mix(0, (uint64_t)n->op), (uint64_t)n->nin), (uint64_t)n->nout);
    if (swappable(n)) {
        uint64_t a = in_key(n->in[0]), b = in_key(n->in[1]);
        h = mix(mix(h, a < b ? a : b), a < b ? b : a);
    } else {
        for (int i = 0; i < n->nin; i++)
            h = mix(h, in_key(n->in[i]));
    }
    /* a sum, so the attributes' order does not matter */
    uint64_t ah = 0;
    for (int i = 0; i < n->nattr; i++)
        ah += hash_attr(&n->attrs[i]);
    return mix(h, ah);
}

static bool node_eq(const ir_node *a, const ir_node *b)
{
    if (a->op != b->op || a->nin != b->nin || a->nout != b->nout || a->nattr != b->nattr)
        return false;
    bool same = true;
    for (int i = 0; i < a->nin && same; i++)
        same = a->in[i] == b->in[i];
    if (!same && !(swappable(a) && a->in[0] == b->in[1] && a->in[1] == b->in[0]))
        return false;
    /* attribute names are unique per node (ir_verify) */
    for (int i = 0; i < a->nattr; i++) {
        const ir_attr *bb = ir_node_attr(b, a->attrs[i].name);
        if (!bb || !attr_eq(&a->attrs[i], bb))
            return false;
    }
    return true;
}

/* An open-addressing table of (hash, item); the caller compares items. */
typedef struct table {
    uint64_t *hash;
    void **item;
    size_t mask;
} table;

static int table_init(table *t, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n + 1)
        cap *= 2;
    t->mask = cap - 1;
    t->hash = calloc(cap, sizeof *t->hash);
    t->item = calloc(cap, sizeof *t->item);
    return t->hash && t->item ? 0 : -1;
}

static void table_free(table *t)
{
    free(t->hash);
    free(t->item);
}

typedef bool (*item_eq_fn)(const void *a, const void *b);

/* The equal item already present, or NULL after inserting x. The table
 * never fills: it holds at most n items in 2n+1 slots. */
static void *table_find_or_add(table *t, uint64_t h, void *x, item_eq_fn eq)
{
    for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
        if (!t->item[i]) {
            t->hash[i] = h;
            t->item[i] = x;
            return NULL;
        }
        if (t->hash[i] == h && eq(t->item[i], x))
            return t->item[i];
    }
}

static bool node_item_eq(const void *a, const void *b)
{
    return node_eq(a, b);
}

static bool const_item_eq(const void *a, const void *b)
{
    return tensor_eq(&((const ir_value *)a)->cval, &((const ir_value *)b)->cval);
}

/* The slot of v's type (dtype and dims) in the table of types, added if
 * new: the table's items are the first constant of each type. */
static size_t type_slot(table *types, uint64_t h, ir_value *v)
{
    for (size_t s = h & types->mask;; s = (s + 1) & types->mask) {
        const ir_value *w = types->item[s];
        if (!w) {
            types->hash[s] = h;
            types->item[s] = v;
            return s;
        }
        if (types->hash[s] == h && w->cval.dtype == v->cval.dtype && w->cval.rank == v->cval.rank &&
            !memcmp(w->cval.dims, v->cval.dims, sizeof(int64_t) * (size_t)v->cval.rank))
            return s;
    }
}

/* Merges constants with the same type and bytes into the first of them.
 * A first walk counts constants per type, so the second hashes the bytes
 * only of constants that have a twin of the same type. */
static int merge_constants(pass_ctx *c, ir_value **repl, int64_t *merged)
{
    ir_graph *g = c->g;
    int nconst = 0;
    for (int i = 0; i < g->nvalues; i++)
        nconst += g->values[i]->kind == IR_VAL_CONST && !g->values[i]->dead;
    if (nconst < 2)
        return 0;
    table types = {0}, full = {0};
    uint64_t *th = malloc(sizeof(uint64_t) * (size_t)g->nvalues);
    int *count = NULL;
    int rc = -1;
    if (!th || table_init(&types, (size_t)nconst) < 0 || table_init(&full, (size_t)nconst) < 0 ||
        !(count = calloc(types.mask + 1, sizeof *count))) {
        ir_errorf(c->diag, "out of memory");
        goto done;
    }
    for (int i = 0; i < g->nvalues; i++) {
        ir_value *v = g->values[i];
        if (v->kind != IR_VAL_CONST || v->dead)
            continue;
        th[i] = hash_tensor_type(0, &v->cval);
        count[type_slot(&types, th[i], v)]++;
    }
    for (int i = 0; i < g->nvalues; i++) {
        ir_value *v = g->values[i];
        if (v->kind != IR_VAL_CONST || v->dead)
            continue;
        if (count[type_slot(&types, th[i], v)] < 2)
            continue;
        uint64_t h = hash_bytes(th[i], v->cval.data, v->cval.nbytes);
        ir_value *first = table_find_or_add(&full, h, v, const_item_eq);
        if (first) {
            repl[v->id] = first;
            ir_value_erase(v);
            ++*merged;
        }
    }
    rc = 0;
done:
    free(th);
    free(count);
    table_free(&types);
    table_free(&full);
    return rc;
}

int pass_cse(pass_ctx *c)
{
    ir_graph *g = c->g;
    ir_value **repl = calloc((size_t)g->nvalues + 1, sizeof *repl);
    table nodes = {0};
    int64_t nmerged = 0, cmerged = 0;
    int rc = -1;
    if (!repl || table_init(&nodes, (size_t)g->nnodes) < 0) {
        ir_errorf(c->diag, "out of memory");
        goto done;
    }
    if (merge_constants(c, repl, &cmerged) < 0)
        goto done;
    /* Survivors are first occurrences and never get an entry themselves,
     * so one lookup suffices. */
    for (int k = 0; k < g->nnodes; k++) {
        ir_node *n = g->nodes[k];
        if (n->dead)
            continue;
        for (int i = 0; i < n->nin; i++)
            if (n->in[i] && repl[n->in[i]->id])
                n->in[i] = repl[n->in[i]->id];
        ir_node *first = table_find_or_add(&nodes, hash_node(n), n, node_item_eq);
        if (!first)
            continue;
        for (int i = 0; i < n->nout; i++)
            repl[n->out[i]->id] = first->out[i];
        ir_node_erase(n);
        nmerged++;
    }
    for (int i = 0; i < g->noutputs; i++)
        if (repl[g->outputs[i]->id])
            g->outputs[i] = repl[g->outputs[i]->id];
    if (nmerged || cmerged) {
        ir_graph_compact(g);
        c->changed = true;
    }
    rc = 0;
done:
    free(repl);
    table_free(&nodes);
    pass_stat(c, "nodes merged", nmerged);
    pass_stat(c, "constants merged", cmerged);
    return rc;
}
