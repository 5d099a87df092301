/* graph.c - graph construction: values, nodes, attributes, symbols. */
#include "ir/ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ir_graph *ir_graph_create(const char *name)
{
    ir_graph *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->arena = ir_arena_create();
    if (!g->arena) {
        free(g);
        return NULL;
    }
    g->name = ir_arena_strdup(g->arena, name ? name : "main");
    if (!g->name) {
        ir_graph_destroy(g);
        return NULL;
    }
    return g;
}

void ir_graph_destroy(ir_graph *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->nsubs; i++)
        ir_graph_destroy(g->subs[i]);
    ir_arena_destroy(g->arena);
    free(g);
}

/* Appends p to a growable pointer array living in the arena. */
static int push(ir_graph *g, void ***arr, int *n, int *cap, void *p)
{
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        void **na = ir_arena_alloc(g->arena, sizeof(void *) * (size_t)nc);
        if (!na)
            return -1;
        if (*n)
            memcpy(na, *arr, sizeof(void *) * (size_t)*n);
        *arr = na;
        *cap = nc;
    }
    (*arr)[(*n)++] = p;
    return 0;
}
#define PUSH(g, field, p) push(g, (void ***)&(g)->field##s, &(g)->n##field##s, &(g)->cap_##field##s, p)

ir_graph *ir_graph_add_subgraph(ir_graph *parent, const char *name)
{
    ir_graph *s = ir_graph_create(name);
    if (!s)
        return NULL;
    if (PUSH(parent, sub, s) < 0) {
        ir_graph_destroy(s);
        return NULL;
    }
    s->parent = parent;
    return s;
}

int ir_graph_depth(const ir_graph *g)
{
    int d = 0;
    for (; g->parent; g = g->parent)
        d++;
    return d;
}

/* Symbol id of `from` in `to`: a free one by name, a derived one by its
 * definition with its operands re-homed first; 0 on out of memory. */
static int32_t rehome_sym(const ir_graph *from, ir_graph *to, int32_t id, int depth)
{
    const ir_sym_def *d = ir_graph_sym_def(from, id);
    if (!d) {
        const char *nm = ir_graph_sym_name(from, id);
        return ir_graph_sym(to, nm, strlen(nm));
    }
    ir_sym_def nd = *d;
    if (depth > 64 || (nd.a.sym > 0 && !(nd.a.sym = rehome_sym(from, to, nd.a.sym, depth + 1))) ||
        (nd.b.sym > 0 && !(nd.b.sym = rehome_sym(from, to, nd.b.sym, depth + 1))))
        return 0;
    const char *nm = ir_graph_sym_name(from, id);
    return ir_graph_sym_define(to, nm, strlen(nm), &nd);
}

bool ir_type_rehome(const ir_graph *from, ir_graph *to, const ir_type *t, ir_type *out)
{
    *out = *t;
    for (int i = 0; t->rank > 0 && i < t->rank; i++)
        if (t->dims[i].sym > 0 && !(out->dims[i].sym = rehome_sym(from, to, t->dims[i].sym, 0)))
            return false;
    return true;
}

/* Renumbers the symbols of dims d[0..n) by map (ids of sub's table). */
static void renumber_dims(ir_dim *d, int n, const int32_t *map, int32_t nmap)
{
    for (int i = 0; i < n; i++)
        if (d[i].sym > 0 && d[i].sym < nmap)
            d[i].sym = map[d[i].sym];
}

/* Interns the symbols of subgraph sub (and of its subgraphs) in top's
 * table and renumbers their values' dims to top's ids. */
static int join_syms(ir_graph *top, ir_graph *sub)
{
    int32_t *map = calloc((size_t)sub->nsyms + 1, sizeof *map);
    if (!map)
        return -1;
    for (int32_t id = 1; id < sub->nsyms; id++)
        if (!(map[id] = rehome_sym(sub, top, id, 0))) {
            free(map);
            return -1;
        }
    for (int i = 0; i < sub->nvalues; i++) {
        ir_value *v = sub->values[i];
        if (v->type.rank > 0)
            renumber_dims(v->type.dims, v->type.rank, map, sub->nsyms);
        if (v->sv.known)
            renumber_dims(v->sv.e, v->sv.n, map, sub->nsyms);
    }
    free(map);
    for (int i = 0; i < sub->nsubs; i++)
        if (join_syms(top, sub->subs[i]) < 0)
            return -1;
    return 0;
}

/* Makes sub's table (and its subgraphs') a copy of top's: the same names
 * and definitions under the same ids (a definition names earlier ids). */
static int copy_syms(const ir_graph *top, ir_graph *sub)
{
    sub->nsyms = sub->nsymdefs = 0;
    for (int32_t id = 1; id < top->nsyms; id++) {
        const char *nm = top->syms[id];
        const ir_sym_def *df = ir_graph_sym_def(top, id);
        if ((df ? ir_graph_sym_define(sub, nm, strlen(nm), df) : ir_graph_sym(sub, nm, strlen(nm))) != id)
            return -1;
    }
    for (int i = 0; i < sub->nsubs; i++)
        if (copy_syms(top, sub->subs[i]) < 0)
            return -1;
    return 0;
}

int ir_graph_share_syms(ir_graph *g)
{
    for (int i = 0; i < g->nsubs; i++)
        if (join_syms(g, g->subs[i]) < 0)
            return -1;
    for (int i = 0; i < g->nsubs; i++)
        if (copy_syms(g, g->subs[i]) < 0)
            return -1;
    return 0;
}

int32_t ir_graph_sym(ir_graph *g, const char *name, size_t len)
{
    for (int i = 1; i < g->nsyms; i++)
        if (strlen(g->syms[i]) == len && !memcmp(g->syms[i], name, len))
            return i;
    if (g->nsyms == 0 && (PUSH(g, sym, (void *)"") < 0 || PUSH(g, symdef, NULL) < 0))
        return 0;
    char *s = ir_arena_strndup(g->arena, name, len);
    if (!s || PUSH(g, sym, s) < 0)
        return 0;
    if (PUSH(g, symdef, NULL) < 0) {
        g->nsyms--;
        return 0;
    }
    return g->nsyms - 1;
}

void ir_unnamed_dim_name(const char *input, int k, char *buf, size_t n)
{
    size_t at = 0;
    for (const char *p = input; *p && at < 100 && at + 1 < n; p++)
        buf[at++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ? *p : '_';
    snprintf(buf + at, n - at, "_dim%d", k);
}

const char *ir_graph_sym_name(const ir_graph *g, int32_t id)
{
    return id > 0 && id < g->nsyms ? g->syms[id] : "?";
}

static ir_value *new_value(ir_graph *g, const char *name, ir_val_kind kind, icc_diag *d)
{
    ir_value *v = ir_arena_alloc(g->arena, sizeof *v);
    char buf[32];
    if (!name) {
        snprintf(buf, sizeof buf, "_t%d", g->nvalues);
        name = buf;
    }
    if (!v || !(v->name = ir_arena_strdup(g->arena, name)) || PUSH(g, value, v) < 0) {
        ir_errorf(d, "out of memory");
        return NULL;
    }
    v->id = g->nvalues - 1;
    v->kind = kind;
    return v;
}

ir_value *ir_graph_add_input(ir_graph *g, const char *name, const ir_type *t, icc_diag *d)
{
    ir_value *v = new_value(g, name, IR_VAL_INPUT, d);
    if (!v)
        return NULL;
    v->type = *t;
    if (PUSH(g, input, v) < 0) {
        ir_errorf(d, "out of memory");
        return NULL;
    }
    return v;
}

static ir_value *add_const(ir_graph *g, const char *name, const ir_type *t, const void *data,
                           void *view, icc_diag *d)
{
    if (!ir_type_is_static(t)) {
        ir_errorf(d, "constant '%s' has a non-static shape", name ? name : "");
        return NULL;
    }
    int64_t dims[IR_MAX_RANK];
    for (int i = 0; i < t->rank; i++)
        dims[i] = t->dims[i].v;
    ir_tensor tt = {0};
    if (ir_tensor_init(&tt, t->dtype, t->rank, dims, d) < 0) {
        ir_diag_prefix(d, "constant '%s'", name ? name : "");
        return NULL;
    }
    ir_value *v = new_value(g, name, IR_VAL_CONST, d);
    if (!v)
        return NULL;
    v->type = *t;
    tt.data = view ? view : ir_arena_alloc(g->arena, tt.nbytes);
    if (!tt.data) {
        ir_errorf(d, "out of memory for constant '%s' (%zu bytes)", v->name, tt.nbytes);
        return NULL;
    }
    if (data && tt.nbytes)
        memcpy(tt.data, data, tt.nbytes);
    v->cval = tt;
    return v;
}

ir_value *ir_graph_add_const(ir_graph *g, const char *name, const ir_type *t,
                             const void *data, icc_diag *d)
{
    return add_const(g, name, t, data, NULL, d);
}

ir_value *ir_graph_add_const_view(ir_graph *g, const char *name, const ir_type *t,
                                  void *data, icc_diag *d)
{
    return add_const(g, name, t, NULL, data, d);
}

ir_node *ir_graph_add_node(ir_graph *g, int op, const char *name,
                           int nin, ir_value *const *in,
                           int nout, const char *const *out_names, icc_diag *d)
{
    ir_node *n = ir_arena_alloc(g->arena, sizeof *n);
    if (!n)
        goto oom;
    n->op = op;
    n->graph = g;
    n->id = g->next_node_id++;
    n->name = ir_arena_strdup(g->arena, name ? name : "");
    n->nin = nin;
    n->nout = nout;
    n->in = ir_arena_alloc(g->arena, sizeof(ir_value *) * (size_t)(nin + 1));
    n->out = ir_arena_alloc(g->arena, sizeof(ir_value *) * (size_t)(nout + 1));
    if (!n->name || !n->in || !n->out)
        goto oom;
    for (int i = 0; i < nin; i++)
        n->in[i] = in[i];
    for (int i = 0; i < nout; i++) {
        ir_value *v = new_value(g, out_names ? out_names[i] : NULL, IR_VAL_NODE, d);
        if (!v)
            return NULL;
        v->def = n;
        v->def_index = i;
        v->type.rank = IR_RANK_UNKNOWN;
        n->out[i] = v;
    }
    if (PUSH(g, node, n) < 0)
        goto oom;
    return n;
oom:
    ir_errorf(d, "out of memory");
    return NULL;
}

int ir_graph_add_output(ir_graph *g, ir_value *v, icc_diag *d)
{
    if (PUSH(g, output, v) < 0)
        return ir_errorf(d, "out of memory");
    return 0;
}

/* ---- attributes ---------------------------------------------------------- */

static ir_attr *new_attr(ir_graph *g, ir_node *n, const char *name, ir_attr_kind k)
{
    ir_attr *na = ir_arena_alloc(g->arena, sizeof(ir_attr) * (size_t)(n->nattr + 1));
    if (!na)
        return NULL;
    if (n->nattr)
        memcpy(na, n->attrs, sizeof(ir_attr) * (size_t)n->nattr);
    n->attrs = na;
    ir_attr *a = &na[n->nattr];
    if (!(a->name = ir_arena_strdup(g->arena, name)))
        return NULL;
    a->kind = k;
    n->nattr++;
    return a;
}

int ir_node_set_int(ir_graph *g, ir_node *n, const char *name, int64_t v)
{
    ir_attr *a = new_attr(g, n, name, IR_ATTR_INT);
    if (!a)
        return -1;
    a->i = v;
    return 0;
}

int ir_node_set_float(ir_graph *g, ir_node *n, const char *name, float v)
{
    ir_attr *a = new_attr(g, n, name, IR_ATTR_FLOAT);
    if (!a)
        return -1;
    a->f = v;
    return 0;
}

int ir_node_set_string(ir_graph *g, ir_node *n, const char *name, const char *s)
{
    ir_attr *a = new_attr(g, n, name, IR_ATTR_STRING);
    if (!a || !(a->s = ir_arena_strdup(g->arena, s)))
        return -1;
    return 0;
}

int ir_node_set_ints(ir_graph *g, ir_node *n, const char *name, const int64_t *v, int cnt)
{
    ir_attr *a = new_attr(g, n, name, IR_ATTR_INTS);
    if (!a || !(a->ints = ir_arena_alloc(g->arena, sizeof(int64_t) * (size_t)cnt)))
        return -1;
    if (cnt)
        memcpy(a->ints, v, sizeof(int64_t) * (size_t)cnt);
    a->n = cnt;
    return 0;
}

int ir_node_set_floats(ir_graph *g, ir_node *n, const char *name, const float *v, int cnt)
{
    ir_attr *a = new_attr(g, n, name, IR_ATTR_FLOATS);
    if (!a || !(a->floats = ir_arena_alloc(g->arena, sizeof(float) * (size_t)cnt)))
        return -1;
    if (cnt)
        memcpy(a->floats, v, sizeof(float) * (size_t)cnt);
    a->n = cnt;
    return 0;
}

int ir_node_set_strings(ir_graph *g, ir_node *n, const char *name, const char *const *v, int cnt)
{
    ir_attr *a = new_attr(g, n, name, IR_ATTR_STRINGS);
    if (!a || !(a->strings = ir_arena_alloc(g->arena, sizeof(char *) * (size_t)cnt)))
        return -1;
    for (int i = 0; i < cnt; i++)
        if (!(a->strings[i] = ir_arena_strdup(g->arena, v[i])))
            return -1;
    a->n = cnt;
    return 0;
}

int ir_node_set_tensor(ir_graph *g, ir_node *n, const char *name, const ir_tensor *t)
{
    ir_attr *a = new_attr(g, n, name, IR_ATTR_TENSOR);
    if (!a || !(a->tensor = ir_arena_alloc(g->arena, sizeof(ir_tensor))))
        return -1;
    *a->tensor = *t;
    a->tensor->data = ir_arena_alloc(g->arena, t->nbytes);
    if (!a->tensor->data)
        return -1;
    if (t->nbytes)
        memcpy(a->tensor->data, t->data, t->nbytes);
    return 0;
}

int ir_node_set_graph(ir_graph *g, ir_node *n, const char *name, ir_graph *sub)
{
    ir_attr *a = new_attr(g, n, name, IR_ATTR_GRAPH);
    if (!a)
        return -1;
    a->graph = sub;
    return 0;
}

int ir_node_add_attr(ir_graph *g, ir_node *n, const ir_attr *a)
{
    switch (a->kind) {
    case IR_ATTR_INT: return ir_node_set_int(g, n, a->name, a->i);
    case IR_ATTR_FLOAT: return ir_node_set_float(g, n, a->name, a->f);
    case IR_ATTR_STRING: return ir_node_set_string(g, n, a->name, a->s);
    case IR_ATTR_INTS: return ir_node_set_ints(g, n, a->name, a->ints, a->n);
    case IR_ATTR_FLOATS: return ir_node_set_floats(g, n, a->name, a->floats, a->n);
    case IR_ATTR_STRINGS: return ir_node_set_strings(g, n, a->name, (const char *const *)a->strings, a->n);
    case IR_ATTR_TENSOR: return ir_node_set_tensor(g, n, a->name, a->tensor);
    case IR_ATTR_GRAPH: return ir_node_set_graph(g, n, a->name, a->graph);
    }
    return -1;
}

const ir_attr *ir_node_attr(const ir_node *n, const char *name)
{
    for (int i = 0; i < n->nattr; i++)
        if (!strcmp(n->attrs[i].name, name))
            return &n->attrs[i];
    return NULL;
}

/* Getters fall back to the op's schema default, then to the caller's. */
static const char *schema_default(const ir_node *n, const char *name)
{
    const ir_attr_schema *s = ir_op_find_attr(n->op, name);
    return s && s->has_def ? s->def : NULL;
}

int64_t ir_attr_int(const ir_node *n, const char *name, int64_t def)
{
    const ir_attr *a = ir_node_attr(n, name);
    if (a && a->kind == IR_ATTR_INT)
        return a->i;
    const char *s = schema_default(n, name);
    return s ? strtoll(s, NULL, 10) : def;
}

float ir_attr_float(const ir_node *n, const char *name, float def)
{
    const ir_attr *a = ir_node_attr(n, name);
    if (a && a->kind == IR_ATTR_FLOAT)
        return a->f;
    const char *s = schema_default(n, name);
    return s ? strtof(s, NULL) : def;
}

const char *ir_attr_string(const ir_node *n, const char *name, const char *def)
{
    const ir_attr *a = ir_node_attr(n, name);
    if (a && a->kind == IR_ATTR_STRING)
        return a->s;
    const char *s = schema_default(n, name);
    return s ? s : def;
}

int ir_attr_ints(const ir_node *n, const char *name, const int64_t **v)
{
    const ir_attr *a = ir_node_attr(n, name);
    if (!a || a->kind != IR_ATTR_INTS)
        return -1;
    *v = a->ints;
    return a->n;
}

int ir_attr_floats(const ir_node *n, const char *name, const float **v)
{
    const ir_attr *a = ir_node_attr(n, name);
    if (!a || a->kind != IR_ATTR_FLOATS)
        return -1;
    *v = a->floats;
    return a->n;
}

ir_graph *ir_attr_graph(const ir_node *n, const char *name)
{
    const ir_attr *a = ir_node_attr(n, name);
    return a && a->kind == IR_ATTR_GRAPH ? a->graph : NULL;
}

ir_graph *ir_node_subgraph(const ir_node *n, int *i)
{
    for (; *i < n->nattr; (*i)++)
        if (n->attrs[*i].kind == IR_ATTR_GRAPH && n->attrs[*i].graph)
            return n->attrs[(*i)++].graph;
    return NULL;
}

bool ir_node_has_subgraph(const ir_node *n)
{
    for (int i = 0; i < n->nattr; i++)
        if (n->attrs[i].kind == IR_ATTR_GRAPH)
            return true;
    return false;
}

int ir_node_errorf(icc_diag *d, const ir_node *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ir_located_verrorf(d, n->name, ir_ops[n->op].name, fmt, ap);
    va_end(ap);
    return -1;
}

void ir_graph_param_stats(const ir_graph *g, int64_t *count, int64_t *bytes)
{
    *count = *bytes = 0;
    for (int i = 0; i < g->nvalues; i++) {
        const ir_value *v = g->values[i];
        if (v->kind == IR_VAL_CONST) {
            *count += v->cval.numel;
            *bytes += (int64_t)v->cval.nbytes;
        }
    }
}

int64_t ir_graph_arena_bytes(const ir_graph *g)
{
    int64_t end = 0;
    for (int i = 0; i < g->nvalues; i++) {
        const ir_value *v = g->values[i];
        int64_t n;
        if (!v->planned || !ir_type_numel(&v->type, &n))
            continue;
        int64_t e = v->offset + n * (int64_t)ir_dtype_size(v->type.dtype);
        end = e > end ? e : end;
    }
    return (end + 63) & ~(int64_t)63;
}
