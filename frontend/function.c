/* function.c - flattening a graph body into fe_nodes, inlining calls to
 * model-local functions (ModelProto.functions).
 *
 * A node whose (domain, op_type) names a model function is replaced by the
 * function's body: formal inputs and outputs are bound to the caller's
 * value names, every other value of the body gets a name unique to this
 * call, attributes with ref_attr_name take the caller's value (or the
 * function's default, or are dropped), and the body's nodes use the
 * function's own opset_import. Bodies may call other functions; the
 * nesting depth and the total node count are bounded so that recursive or
 * exponentially fanning definitions fail cleanly.
 */
#include "frontend/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FE_MAX_FN_DEPTH 16
/* Far above real models; they stop exponential inlining, and a small
 * function with huge names called many times, from exhausting memory. */
#define FE_MAX_NODES (1 << 22)
#define FE_MAX_INLINE_BYTES ((size_t)256 << 20)

typedef struct scope {
    const Onnx__FunctionProto *fn;     /* NULL: the main graph */
    const fe_node *call;               /* the call being inlined */
    const char *prefix;                /* for the body's own names */
    int depth;
    const fe_rename *ren;              /* the renaming, kept for subgraphs */
} scope;

typedef struct flattener {
    const Onnx__ModelProto *m;
    ir_arena *tmp;
    fe_nodes *out;
    fe_map fns;                        /* "domain\x1fname" -> FunctionProto */
    int ncalls;
    size_t inlined;                    /* scratch bytes spent on inlined bodies */
    icc_diag *d;
} flattener;

bool fe_is_default_domain(const char *domain)
{
    return !domain || !*domain || !strcmp(domain, "ai.onnx");
}

int fe_opset_version(Onnx__OperatorSetIdProto *const *imp, size_t n, const char *domain)
{
    bool def = fe_is_default_domain(domain);
    for (size_t i = 0; i < n; i++) {
        const char *dm = imp[i]->domain;
        if (def ? fe_is_default_domain(dm) : (dm && !strcmp(dm, domain)))
            return imp[i]->has_version && imp[i]->version > 0 && imp[i]->version < INT32_MAX
                       ? (int)imp[i]->version
                       : 1;
    }
    return 0;
}

int fe_node_errorf(icc_diag *d, const fe_node *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ir_located_verrorf(d, n->name, n->op_type, fmt, ap);
    va_end(ap);
    return -1;
}

/* Scratch for the main graph is bounded by the file's size; for inlined
 * bodies it is counted against FE_MAX_INLINE_BYTES. NULL with d set. */
static void *node_alloc(flattener *f, const scope *sc, size_t n)
{
    if (sc->fn) {
        f->inlined += n < 64 ? 64 : n; /* the arena's granularity */
        if (f->inlined > FE_MAX_INLINE_BYTES) {
            ir_errorf(f->d, "inlining the model's functions needs more than %zu MiB",
                      FE_MAX_INLINE_BYTES >> 20);
            return NULL;
        }
    }
    void *p = ir_arena_alloc(f->tmp, n);
    if (!p)
        ir_errorf(f->d, "out of memory");
    return p;
}

/* Functions are keyed "domain\x1fname"; key must hold a + b + 2 bytes. */
static void make_key(char *key, const char *domain, size_t a, const char *name, size_t b)
{
    memcpy(key, domain, a);
    key[a] = '\x1f';
    memcpy(key + a + 1, name, b + 1);
}

/* *fn = the model function named (domain, name), or NULL. */
static int fn_lookup(flattener *f, const char *domain, const char *name,
                     const Onnx__FunctionProto **fn)
{
    *fn = NULL;
    if (!f->fns.n)
        return 0;
    size_t a = strlen(domain), b = strlen(name);
    char buf[256], *key = a + b + 2 <= sizeof buf ? buf : malloc(a + b + 2);
    if (!key)
        return ir_errorf(f->d, "out of memory");
    make_key(key, domain, a, name, b);
    *fn = fe_map_get(&f->fns, key);
    if (key != buf)
        free(key);
    return 0;
}

static const char *norm_domain(const char *d)
{
    return fe_is_default_domain(d) ? "" : d;
}

static const char *rename_in(const fe_rename *r, const char *name, char *(*alloc)(void *, size_t),
                             void *arg)
{
    const Onnx__FunctionProto *fn = r->fn;
    for (size_t i = 0; i < fn->n_input; i++)
        if (!strcmp(fn->input[i], name))
            return (int)i < r->call_nin ? r->call_in[i] : "";
    for (size_t i = 0; i < fn->n_output; i++)
        if (!strcmp(fn->output[i], name) && (int)i < r->call_nout && *r->call_out[i])
            return r->call_out[i];
    size_t a = strlen(r->prefix), b = strlen(name);
    char *s = alloc(arg, a + b + 1);
    if (s) {
        memcpy(s, r->prefix, a);
        memcpy(s + a, name, b + 1);
    }
    return s;
}

typedef struct {
    flattener *f;
    const scope *sc;
} alloc_arg;

static char *scope_alloc(void *arg, size_t n)
{
    alloc_arg *a = arg;
    return node_alloc(a->f, a->sc, n);
}

static char *arena_alloc(void *arg, size_t n) { return ir_arena_alloc(arg, n); }

const char *fe_rename_name(const fe_rename *r, const char *name, ir_arena *tmp)
{
    return rename_in(r, name, arena_alloc, tmp);
}

/* Renames a value name of a body into the caller's namespace. */
static const char *rename_value(flattener *f, const scope *sc, const char *name)
{
    if (!name || !*name || !sc->fn)
        return name ? name : "";
    alloc_arg a = {f, sc};
    return rename_in(sc->ren, name, scope_alloc, &a);
}

/* The default of a function attribute. FunctionProto.attribute_proto
 * arrived with IR version 9; it is reached through protobuf-c's descriptor
 * so the frontend still builds against older onnx.proto files. */
static const Onnx__AttributeProto *fn_default(const Onnx__FunctionProto *fn, const char *name)
{
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(
        &onnx__function_proto__descriptor, "attribute_proto");
    if (!f || f->type != PROTOBUF_C_TYPE_MESSAGE || f->label != PROTOBUF_C_LABEL_REPEATED)
        return NULL;
    const char *base = (const char *)fn;
    size_t n;
    Onnx__AttributeProto **v;
    memcpy(&n, base + f->quantifier_offset, sizeof n);
    memcpy(&v, base + f->offset, sizeof v);
    for (size_t i = 0; i < n; i++)
        if (v[i]->name && !strcmp(v[i]->name, name))
            return v[i];
    return NULL;
}

static int push_node(flattener *f, const fe_node *n)
{
    fe_nodes *o = f->out;
    if (o->n >= FE_MAX_NODES)
        return fe_node_errorf(f->d, n, "more than %d nodes (after inlining functions)",
                              FE_MAX_NODES);
    if (o->n == o->cap) {
        int nc = o->cap ? o->cap * 2 : 256;
        fe_node *nv = realloc(o->v, sizeof *nv * (size_t)nc);
        if (!nv)
            return ir_errorf(f->d, "out of memory");
        o->v = nv;
        o->cap = nc;
    }
    o->v[o->n++] = *n;
    return 0;
}

static int flatten_list(flattener *f, Onnx__NodeProto *const *nodes, size_t n, const scope *sc);

/* Inlines fn for the call node `call` (already renamed and bound). */
static int inline_call(flattener *f, const Onnx__FunctionProto *fn, const fe_node *call, int depth)
{
    if (depth > FE_MAX_FN_DEPTH)
        return fe_node_errorf(f->d, call, "functions nested deeper than %d (recursive definition?)",
                              FE_MAX_FN_DEPTH);
    if ((size_t)call->nin > fn->n_input || (size_t)call->nout > fn->n_output)
        return fe_node_errorf(f->d, call, "function takes %zu inputs and %zu outputs, called with "
                              "%d and %d", fn->n_input, fn->n_output, call->nin, call->nout);
    char pre[300];
    snprintf(pre, sizeof pre, "%.200s#%d/", call->name, ++f->ncalls);
    scope sc = {fn, call, NULL, depth, NULL};
    char *p = node_alloc(f, &sc, strlen(pre) + 1);
    fe_rename *r = node_alloc(f, &sc, sizeof *r);
    if (!p || !r)
        return -1;
    sc.prefix = strcpy(p, pre);
    *r = (fe_rename){fn, call->in, call->out, call->nin, call->nout, sc.prefix};
    sc.ren = r;
    return flatten_list(f, fn->node, fn->n_node, &sc);
}

static int flatten_node(flattener *f, const Onnx__NodeProto *np, const scope *sc)
{
    fe_node n = {0};
    n.op_type = np->op_type ? np->op_type : "";
    n.domain = norm_domain(np->domain);
    n.nin = (int)np->n_input;
    n.nout = (int)np->n_output;
    if (np->n_input > INT32_MAX / 2 || np->n_output > INT32_MAX / 2 ||
        np->n_attribute > INT32_MAX / 2)
        return ir_errorf(f->d, "node '%.200s' has too many inputs, outputs or attributes",
                         np->name ? np->name : "");

    /* A readable name for messages when the model gives none. */
    const char *nm = np->name && *np->name ? np->name : NULL;
    for (size_t i = 0; !nm && i < np->n_output; i++)
        if (*np->output[i])
            nm = np->output[i];
    if (!nm)
        nm = n.op_type;
    if (sc->fn) {
        size_t la = strlen(sc->call->name), lb = strlen(nm);
        char *s = node_alloc(f, sc, la + lb + 2);
        if (!s)
            return -1;
        memcpy(s, sc->call->name, la);
        s[la] = '/';
        memcpy(s + la + 1, nm, lb + 1);
        nm = s;
    }
    n.name = nm;
    n.ren = sc->fn ? sc->ren : NULL;
    if (!*n.op_type)
        return fe_node_errorf(f->d, &n, "has no op_type");

    if (!sc->fn) {
        n.in = (const char **)np->input;
        n.out = (const char **)np->output;
    } else {
        if (!(n.in = node_alloc(f, sc, sizeof(char *) * (np->n_input + 1))) ||
            !(n.out = node_alloc(f, sc, sizeof(char *) * (np->n_output + 1))))
            return -1;
        for (int i = 0; i < n.nin; i++)
            if (!(n.in[i] = rename_value(f, sc, np->input[i])))
                return -1;
        for (int i = 0; i < n.nout; i++)
            if (!(n.out[i] = rename_value(f, sc, np->output[i])))
                return -1;
    }

    if (np->n_attribute) {
        if (!(n.attrs = node_alloc(f, sc, sizeof(fe_attr) * np->n_attribute)))
            return -1;
    }
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *ap = np->attribute[i];
        const char *an = ap->name ? ap->name : "";
        if (!*an)
            return fe_node_errorf(f->d, &n, "has an attribute without a name");
        if (ap->ref_attr_name && *ap->ref_attr_name) {
            if (!sc->fn)
                return fe_node_errorf(f->d, &n, "attribute '%.100s' refers to '%.100s', but "
                                      "ref_attr_name is only allowed inside functions", an,
                                      ap->ref_attr_name);
            const Onnx__AttributeProto *v = NULL;
            for (int k = 0; k < sc->call->nattr && !v; k++)
                if (!strcmp(sc->call->attrs[k].name, ap->ref_attr_name))
                    v = sc->call->attrs[k].p;
            if (!v)
                v = fn_default(sc->fn, ap->ref_attr_name);
            if (!v)
                continue;
            ap = v;
        }
        n.attrs[n.nattr++] = (fe_attr){an, ap};
    }

    const Onnx__FunctionProto *fn;
    if (fn_lookup(f, n.domain, n.op_type, &fn) < 0)
        return -1;
    if (fn)
        return inline_call(f, fn, &n, sc->depth + 1);

    const Onnx__ModelProto *m = f->m;
    int v = 0;
    if (sc->fn)
        v = fe_opset_version(sc->fn->opset_import, sc->fn->n_opset_import, n.domain);
    if (!v)
        v = fe_opset_version(m->opset_import, m->n_opset_import, n.domain);
    /* Models from before opset_import existed (IR version 2) mean opset 1. */
    if (!v && !*n.domain)
        v = 1;
    n.opset = v;
    return push_node(f, &n);
}

static int flatten_list(flattener *f, Onnx__NodeProto *const *nodes, size_t n, const scope *sc)
{
    for (size_t i = 0; i < n; i++)
        if (flatten_node(f, nodes[i], sc) < 0)
            return -1;
    return 0;
}

int fe_flatten(const Onnx__ModelProto *m, const Onnx__GraphProto *gp, ir_arena *tmp,
               fe_nodes *out, icc_diag *d)
{
    flattener f = {.m = m, .tmp = tmp, .out = out, .d = d};
    int rc = -1;
    for (size_t i = 0; i < m->n_functions; i++) {
        const Onnx__FunctionProto *fn = m->functions[i];
        const char *dm = norm_domain(fn->domain), *nm = fn->name ? fn->name : "";
        size_t a = strlen(dm), b = strlen(nm);
        char *key = ir_arena_alloc(tmp, a + b + 2);
        if (key)
            make_key(key, dm, a, nm, b);
        if (!key) {
            ir_errorf(d, "out of memory");
            goto done;
        }
        if (fe_map_get(&f.fns, key)) {
            ir_errorf(d, "function '%.200s' (domain '%.100s') is defined twice", nm, dm);
            goto done;
        }
        if (fe_map_put(&f.fns, key, (void *)fn) < 0) {
            ir_errorf(d, "out of memory");
            goto done;
        }
    }
    scope sc = {NULL, NULL, "", 0, NULL};
    rc = flatten_list(&f, gp->node, gp->n_node, &sc);
done:
    fe_map_free(&f.fns);
    return rc;
}
