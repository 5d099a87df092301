/* onnx.c - ModelProto -> ir_graph: the frontend's driver and public API.
 *
 * Loading runs in stages, each finishing before the next starts: check the
 * raw bytes (wire.c), unpack, flatten the graph with functions inlined
 * (function.c), report every unsupported op at once, register every value
 * name (initializers, inputs, node outputs; duplicates are errors), order
 * the nodes topologically (sorting them if the file did not, rejecting true
 * cycles and dangling inputs), then lower node by node: attributes
 * converted, old-opset forms rewritten (opset.c), Constant nodes turned
 * into graph constants, declared value_info types attached. Initializers
 * become constants when first used. Finally shapes are inferred and the
 * graph verified. All scratch memory lives in one arena freed at the end.
 */
#include "frontend/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Everything the loader knows about one value name. */
typedef struct fe_name {
    const char *name;
    ir_value *v;                          /* once created */
    const Onnx__TensorProto *init;        /* an initializer */
    const Onnx__ValueInfoProto *input;    /* a graph input (not an initializer) */
    const Onnx__TypeProto *decl;          /* declared type (value_info, outputs) */
    int producer;                         /* index in nodes, or -1 */
} fe_name;

struct fe_ctx {
    fe_ctx *parent;                       /* a subgraph's enclosing graph, or NULL */
    int depth;                            /* subgraph nesting */
    const char *path;                     /* "If_0/then_branch/" inside subgraphs, else "" */
    ir_value **cap_outer;                 /* the parent's values captured, in order: the */
    int ncap, cap_cap;                    /* graph inputs after the formal ones */
    const ir_type *force;                 /* formal input types the node fixes (nforce); */
    const bool *force_always;             /* where false, only when the file gives none */
    int nforce;
    const fe_rename *ren;                 /* the node's, when an inlined function made it */
    ir_graph *g;
    ir_arena *tmp;
    const Onnx__ModelProto *m;
    const Onnx__GraphProto *gp;
    const char *base_dir;
    icc_diag *d;
    icc_onnx_pin_fn pin;                  /* the main graph's: called once its inputs exist */
    void *pin_ctx;
    fe_nodes nodes;
    fe_map names;
    int fresh;
};

icc_diag *fe_diag(fe_ctx *c) { return c->d; }

static int oom(fe_ctx *c)
{
    return ir_errorf(c->d, "out of memory");
}

static fe_name *name_get(fe_ctx *c, const char *name)
{
    return fe_map_get(&c->names, name);
}

static fe_name *name_add(fe_ctx *c, const char *name)
{
    fe_name *e = name_get(c, name);
    if (e)
        return e;
    e = ir_arena_alloc(c->tmp, sizeof *e);
    if (!e || fe_map_put(&c->names, name, e) < 0)
        return NULL;
    e->name = name;
    e->producer = -1;
    return e;
}

const char *fe_fresh_name(fe_ctx *c, const char *base, const char *suffix)
{
    char buf[512];
    for (int k = 0;; k++) {
        if (k == 0)
            snprintf(buf, sizeof buf, "%.200s/%.100s", base, suffix);
        else
            snprintf(buf, sizeof buf, "%.200s/%.100s#%d", base, suffix, ++c->fresh);
        if (!name_get(c, buf))
            break;
    }
    char *s = ir_arena_strdup(c->tmp, buf);
    if (!s || !name_add(c, s))
        return NULL;
    return s;
}

/* ---- outer scopes -------------------------------------------------------- */

static ir_value *make_initializer(fe_ctx *c, fe_name *e);

/* A name a subgraph uses but does not define: a value of an enclosing
 * graph, captured. The subgraph gets an input standing for it (named
 * like it, registered locally so later uses find it) and remembers the
 * outer value, which becomes an input of the node owning the subgraph;
 * through a middle subgraph, the capture is made at each level. NULL,
 * without a message, when no enclosing graph defines it (yet). */
static ir_value *capture(fe_ctx *c, const char *nm)
{
    fe_ctx *p = c->parent;
    if (!p)
        return NULL;
    const char *pn = c->ren ? fe_rename_name(c->ren, nm, c->tmp) : nm;
    if (!pn) {
        oom(c);
        return NULL;
    }
    fe_name *pe = *pn ? name_get(p, pn) : NULL;
    ir_value *ov = NULL;
    if (pe && (pe->v || pe->init))
        ov = pe->v ? pe->v : make_initializer(p, pe);
    else if (*pn)
        ov = capture(p, pn);
    if (!ov)
        return NULL;
    ir_type t;
    if (!ir_type_rehome(p->g, c->g, &ov->type, &t)) {
        oom(c);
        return NULL;
    }
    fe_name *e = name_add(c, nm);
    ir_value *v = e ? ir_graph_add_input(c->g, nm, &t, c->d) : NULL;
    if (!e || !v) {
        oom(c);
        return NULL;
    }
    if (c->ncap == c->cap_cap) {
        int nc = c->cap_cap * 2 + 8;
        ir_value **na = ir_arena_alloc(c->tmp, sizeof *na * (size_t)nc);
        if (!na) {
            oom(c);
            return NULL;
        }
        if (c->ncap)
            memcpy(na, c->cap_outer, sizeof *na * (size_t)c->ncap);
        c->cap_outer = na;
        c->cap_cap = nc;
    }
    c->cap_outer[c->ncap++] = ov;
    return e->v = v;
}

/* ---- types ------------------------------------------------------------- */

/* A graph input's dim with no value and no name (or -1): a symbolic dim
 * of its own, named INPUT_dimI (the input's name with characters other
 * than [A-Za-z0-9_] as '_'), so it is given at run time or pinned with
 * --shape like any named one. */
static int unnamed_dim(fe_ctx *c, const char *input, size_t i, ir_dim *out)
{
    char buf[160];
    ir_unnamed_dim_name(input, (int)i, buf, sizeof buf);
    int32_t s = ir_graph_sym(c->g, buf, strlen(buf));
    if (!s)
        return oom(c);
    *out = (ir_dim){0, s};
    return 0;
}

/* TypeProto -> ir_type. strict: anything we cannot represent is an error
 * (graph inputs); otherwise it leaves *out unknown (declarations are only
 * hints for inference). Returns 0, or -1 with d set. */
static int type_from_proto(fe_ctx *c, const Onnx__TypeProto *tp, const char *name, bool strict,
                           ir_type *out)
{
    memset(out, 0, sizeof *out);
    out->rank = IR_RANK_UNKNOWN;
    if (!tp) {
        if (strict)
            return ir_errorf(c->d, "input '%.200s' has no type", name);
        return 0;
    }
    if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
        if (strict)
            return ir_errorf(c->d, "input '%.200s' is not a tensor (sequence, map, optional and "
                             "sparse types are not supported)", name);
        return 0;
    }
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    int code = tt->has_elem_type ? tt->elem_type : 0;
    ir_dtype dt = ir_dtype_from_onnx(code);
    if (dt == IR_UNDEF) {
        if (strict)
            return ir_errorf(c->d, "input '%.200s': dtype %s (%d) is not supported", name,
                             ir_onnx_dtype_name(code), code);
        return 0;
    }
    ir_type t = {.dtype = dt, .rank = IR_RANK_UNKNOWN};
    if (tt->shape) {
        const Onnx__TensorShapeProto *sp = tt->shape;
        if (sp->n_dim > IR_MAX_RANK) {
            if (strict)
                return ir_errorf(c->d, "input '%.200s': rank %zu exceeds the maximum of %d", name,
                                 sp->n_dim, IR_MAX_RANK);
            out->dtype = dt;
            return 0;
        }
        t.rank = (int)sp->n_dim;
        for (size_t i = 0; i < sp->n_dim; i++) {
            const Onnx__TensorShapeProto__Dimension *dm = sp->dim[i];
            if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
                /* -1 is how some exporters (Paddle) write a dynamic dim: ONNX
                 * Runtime reads it as one, and so do we (an unnamed dim). */
                if (dm->dim_value < 0) {
                    if (strict && dm->dim_value != -1)
                        return ir_errorf(c->d, "input '%.200s': dim %zu is negative (%lld)", name,
                                         i, (long long)dm->dim_value);
                    if (strict && unnamed_dim(c, name, i, &t.dims[i]) < 0)
                        return -1;
                    if (!strict)
                        t.dims[i] = ir_dim_unknown();
                } else {
                    t.dims[i] = ir_dim_const(dm->dim_value);
                }
            } else if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                       dm->dim_param && *dm->dim_param && strcmp(dm->dim_param, "?")) {
                /* ("?" is how some exporters write an unknown dim, not a
                 * name shared by every such dim: paddle2onnx's [N,3,?,?]
                 * takes any height and width; an unnamed dim below) */
                int32_t s = ir_graph_sym(c->g, dm->dim_param, strlen(dm->dim_param));
                if (!s)
                    return oom(c);
                t.dims[i] = (ir_dim){0, s};
            } else if (strict) {
                if (unnamed_dim(c, name, i, &t.dims[i]) < 0)
                    return -1;
            } else {
                t.dims[i] = ir_dim_unknown();
            }
        }
    }
    *out = t;
    return 0;
}

/* ---- attributes -------------------------------------------------------- */

static const char *attr_kind_name(int k)
{
    switch (k) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: return "FLOAT";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: return "INT";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: return "STRING";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: return "TENSOR";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH: return "GRAPH";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR: return "SPARSE_TENSOR";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO: return "TYPE_PROTO";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: return "FLOATS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS: return "INTS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: return "STRINGS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS: return "TENSORS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS: return "GRAPHS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS: return "SPARSE_TENSORS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS: return "TYPE_PROTOS";
    }
    return "UNDEFINED";
}

/* The attribute's kind; IR version 1 files leave `type` unset, so it is
 * then read off whichever value field is present. */
static int attr_kind(const Onnx__AttributeProto *a)
{
    if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED)
        return a->type;
    if (a->has_f) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    if (a->has_i) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    if (a->has_s) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    if (a->t) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    if (a->g) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    if (a->sparse_tensor) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR;
    if (a->tp) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO;
    if (a->n_floats) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    if (a->n_ints) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    if (a->n_strings) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
    if (a->n_tensors) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS;
    if (a->n_graphs) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS;
    /* An empty list: INTS, retyped against the schema later. */
    return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
}

static char *bytes_to_str(fe_ctx *c, const fe_node *n, const char *an, ProtobufCBinaryData b)
{
    if (b.len && memchr(b.data, 0, b.len)) {
        fe_node_errorf(c->d, n, "attribute '%.100s' contains a NUL byte", an);
        return NULL;
    }
    char *s = ir_arena_strndup(c->tmp, b.len ? (const char *)b.data : "", b.len);
    if (!s)
        oom(c);
    return s;
}

/* AttributeProto -> ir_attr with payloads in the scratch arena. */
static int convert_attr(fe_ctx *c, const fe_node *n, const fe_attr *fa, ir_attr *out)
{
    const Onnx__AttributeProto *a = fa->p;
    const char *an = fa->name;
    memset(out, 0, sizeof *out);
    out->name = an;
    int k = attr_kind(a);
    switch (k) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
        out->kind = IR_ATTR_FLOAT;
        out->f = a->f;
        return 0;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
        out->kind = IR_ATTR_INT;
        out->i = a->i;
        return 0;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
        out->kind = IR_ATTR_STRING;
        return (out->s = bytes_to_str(c, n, an, a->s)) ? 0 : -1;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: {
        size_t cnt = k == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS ? a->n_floats
                     : k == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS ? a->n_ints
                                                                        : a->n_strings;
        if (cnt > (size_t)INT32_MAX / 8)
            return fe_node_errorf(c->d, n, "attribute '%.100s' has too many values", an);
        out->n = (int)cnt;
        if (k == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS) {
            out->kind = IR_ATTR_FLOATS;
            out->floats = a->floats;
        } else if (k == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS) {
            out->kind = IR_ATTR_INTS;
            out->ints = a->ints;
        } else {
            out->kind = IR_ATTR_STRINGS;
            out->strings = ir_arena_alloc(c->tmp, sizeof(char *) * (cnt + 1));
            if (!out->strings)
                return oom(c);
            for (size_t i = 0; i < cnt; i++)
                if (!(out->strings[i] = bytes_to_str(c, n, an, a->strings[i])))
                    return -1;
        }
        return 0;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: {
        if (!a->t)
            return fe_node_errorf(c->d, n, "attribute '%.100s' has no tensor", an);
        char label[160];
        snprintf(label, sizeof label, "attribute '%.100s'", an);
        out->kind = IR_ATTR_TENSOR;
        out->tensor = ir_arena_alloc(c->tmp, sizeof(ir_tensor));
        if (!out->tensor)
            return oom(c);
        if (fe_tensor_decode(a->t, c->base_dir, label, c->tmp, out->tensor, c->d) < 0) {
            char m[sizeof c->d->msg];
            memcpy(m, c->d->msg, sizeof m);
            return fe_node_errorf(c->d, n, "%s", m);
        }
        return 0;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS:
        return fe_node_errorf(c->d, n, "attribute '%.100s' holds %s; only If, Loop and Scan "
                              "take a subgraph, one per attribute", an,
                              k == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH ? "a subgraph"
                                                                                : "subgraphs");
    default:
        return fe_node_errorf(c->d, n, "attribute '%.100s' of kind %s is not supported", an,
                              attr_kind_name(k));
    }
}

ir_attr *fe_attr_find(fe_lower *l, const char *name)
{
    for (int i = 0; i < l->nattr; i++)
        if (!strcmp(l->attrs[i].name, name))
            return &l->attrs[i];
    return NULL;
}

bool fe_attr_take(fe_lower *l, const char *name, ir_attr *out)
{
    ir_attr *a = fe_attr_find(l, name);
    if (!a)
        return false;
    if (out)
        *out = *a;
    int i = (int)(a - l->attrs);
    memmove(a, a + 1, sizeof *a * (size_t)(l->nattr - i - 1));
    l->nattr--;
    return true;
}

int fe_attr_add(fe_lower *l, const ir_attr *a)
{
    ir_attr *old = fe_attr_find(l, a->name);
    if (old) {
        *old = *a;
        return 0;
    }
    if (l->nattr == l->cap_attr) {
        int nc = l->cap_attr * 2 + 4;
        ir_attr *na = ir_arena_alloc(l->c->tmp, sizeof *na * (size_t)nc);
        if (!na)
            return oom(l->c);
        if (l->nattr)
            memcpy(na, l->attrs, sizeof *na * (size_t)l->nattr);
        l->attrs = na;
        l->cap_attr = nc;
    }
    l->attrs[l->nattr++] = *a;
    return 0;
}

int fe_set_input(fe_lower *l, int i, ir_value *v)
{
    if (i >= l->cap_in) {
        int nc = i + 4;
        ir_value **na = ir_arena_alloc(l->c->tmp, sizeof *na * (size_t)nc);
        if (!na)
            return oom(l->c);
        if (l->nin)
            memcpy(na, l->in, sizeof *na * (size_t)l->nin);
        l->in = na;
        l->cap_in = nc;
    }
    while (l->nin <= i)
        l->in[l->nin++] = NULL;
    l->in[i] = v;
    return 0;
}

/* ---- constants --------------------------------------------------------- */

/* Creates a constant named name from a prepared tensor, reading its data
 * straight into the graph's storage, or mapping it there when it is a
 * large external payload. */
static ir_value *const_from_src(fe_ctx *c, const char *name, const Onnx__TensorProto *tp,
                                fe_tensor_src *s, const char *label)
{
    ir_type t;
    ir_type_of_tensor(&s->t, &t);
    void *mapped = fe_tensor_map(s, c->g->arena);
    if (mapped)
        return ir_graph_add_const_view(c->g, name, &t, mapped, c->d);
    ir_value *v = ir_graph_add_const(c->g, name, &t, NULL, c->d);
    if (!v) {
        fe_tensor_close(s);
        return NULL;
    }
    if (fe_tensor_read(tp, s, v->cval.data, label, c->d) < 0)
        return NULL;
    return v;
}

static ir_value *make_initializer(fe_ctx *c, fe_name *e)
{
    char label[256];
    snprintf(label, sizeof label, "tensor '%.200s'", e->name);
    fe_tensor_src s;
    if (fe_tensor_prepare(e->init, c->base_dir, label, &s, c->d) < 0)
        return NULL;
    return e->v = const_from_src(c, e->name, e->init, &s, label);
}

ir_value *fe_const(fe_lower *l, const char *suffix, ir_dtype dt, int rank, const int64_t *dims,
                   const void *data)
{
    fe_ctx *c = l->c;
    const char *nm = fe_fresh_name(c, l->src->name, suffix);
    if (!nm) {
        oom(c);
        return NULL;
    }
    ir_type t = {.dtype = dt, .rank = rank};
    for (int i = 0; i < rank; i++)
        t.dims[i] = ir_dim_const(dims[i]);
    ir_value *v = ir_graph_add_const(c->g, nm, &t, data, c->d);
    if (v)
        name_get(c, nm)->v = v;
    return v;
}

ir_value *fe_scalar_like(fe_lower *l, const char *suffix, ir_value *x, double v)
{
    ir_dtype dt = x->type.dtype;
    if (dt != IR_UNDEF) {
        ir_value *s = fe_const(l, suffix, dt, 0, NULL, NULL);
        if (s)
            ir_tensor_setf(&s->cval, 0, v);
        return s;
    }
    float f = (float)v;
    ir_value *s = fe_const(l, suffix, IR_F32, 0, NULL, &f);
    if (!s)
        return NULL;
    ir_value *in[2] = {s, x};
    ir_node *n = fe_emit(l, IR_OP_CAST_LIKE, suffix, 2, in, 1, NULL, NULL, 0);
    return n ? n->out[0] : NULL;
}

/* Constant nodes become graph constants; every value_* form is accepted,
 * strings and sparse tensors are reported as unsupported. */
static int lower_constant(fe_ctx *c, const fe_node *n)
{
    if (n->nout != 1 || !*n->out[0])
        return fe_node_errorf(c->d, n, "must have exactly one named output");
    if (n->nattr != 1)
        return fe_node_errorf(c->d, n, "needs exactly one value attribute, has %d", n->nattr);
    const Onnx__AttributeProto *a = n->attrs[0].p;
    const char *an = n->attrs[0].name, *out = n->out[0];
    int k = attr_kind(a);
    fe_name *e = name_get(c, out);
    ir_value *v = NULL;
    ir_type t = {.rank = 0};
    if (!strcmp(an, "value") && k == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR && a->t) {
        fe_tensor_src s;
        if (fe_tensor_prepare(a->t, c->base_dir, "attribute 'value'", &s, c->d) < 0)
            goto fail;
        v = const_from_src(c, out, a->t, &s, "attribute 'value'");
    } else if (!strcmp(an, "value_float") && k == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT) {
        t.dtype = IR_F32;
        v = ir_graph_add_const(c->g, out, &t, &a->f, c->d);
    } else if (!strcmp(an, "value_int") && k == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) {
        t.dtype = IR_I64;
        v = ir_graph_add_const(c->g, out, &t, &a->i, c->d);
    } else if (!strcmp(an, "value_floats") && k == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS) {
        t = (ir_type){.dtype = IR_F32, .rank = 1, .dims = {ir_dim_const((int64_t)a->n_floats)}};
        v = ir_graph_add_const(c->g, out, &t, a->floats, c->d);
    } else if (!strcmp(an, "value_ints") &&
               (k == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS)) {
        t = (ir_type){.dtype = IR_I64, .rank = 1, .dims = {ir_dim_const((int64_t)a->n_ints)}};
        v = ir_graph_add_const(c->g, out, &t, a->ints, c->d);
    } else if (!strcmp(an, "value_string") || !strcmp(an, "value_strings")) {
        return fe_node_errorf(c->d, n, "string constants are not supported");
    } else if (!strcmp(an, "sparse_value")) {
        return fe_node_errorf(c->d, n, "sparse constants are not supported");
    } else {
        return fe_node_errorf(c->d, n, "unexpected attribute '%.100s' of kind %s", an,
                              attr_kind_name(k));
    }
    if (v) {
        e->v = v;
        return 0;
    }
fail:;
    char m[sizeof c->d->msg];
    memcpy(m, c->d->msg, sizeof m);
    return fe_node_errorf(c->d, n, "%s", m);
}

/* ---- emitting IR nodes ------------------------------------------------- */

/* Runs the op's shape function right away, quietly, so adapters of later
 * nodes can see ranks and dtypes. Failures leave the types unknown; the
 * full inference pass after import reports them. */
static void infer_now(ir_node *n)
{
    const ir_type *tin[64];
    const ir_tensor *val[64];
    const ir_shape_value *svp[64];
    ir_shape_value sv[64];
    ir_type tout[64];
    if (n->nin > 64 || n->nout > 64)
        return;
    for (int i = 0; i < n->nin; i++) {
        tin[i] = n->in[i] ? &n->in[i]->type : NULL;
        val[i] = n->in[i] && n->in[i]->kind == IR_VAL_CONST ? &n->in[i]->cval : NULL;
        svp[i] = !val[i] && n->in[i] && ir_value_shape_value(n->in[i], &sv[i]) ? &sv[i] : NULL;
        if (tin[i] && tin[i]->dtype == IR_UNDEF)
            return;
    }
    memset(tout, 0, sizeof(ir_type) * (size_t)n->nout);
    icc_diag quiet;
    ir_shape_ctx sc = {n, n->nin, n->nout, tin, val, tout, &quiet, svp};
    if (ir_ops[n->op].shape(&sc) < 0)
        return;
    for (int i = 0; i < n->nout; i++) {
        ir_type *t = &n->out[i]->type;
        if (t->dtype == IR_UNDEF && t->rank < 0) {
            *t = tout[i];
            continue;
        }
        /* a declared type (value_info) keeps its symbols, but a dim it
         * leaves symbolic or unknown that the inputs fix is taken (a
         * pinned --shape reaching a DynamicQuantizeLSTM's steps) */
        if (t->dtype != tout[i].dtype || t->rank != tout[i].rank)
            continue;
        for (int k = 0; k < t->rank; k++)
            if ((!ir_dim_is_const(t->dims[k]) && ir_dim_is_const(tout[i].dims[k])) ||
                (t->dims[k].sym == IR_DIM_UNKNOWN && tout[i].dims[k].sym > 0))
                t->dims[k] = tout[i].dims[k];
    }
    ir_infer_shape_value(n);
}

static const char *ir_kind_name(ir_attr_kind k)
{
    static const char *const names[] = {"int", "float", "string", "ints", "floats", "strings",
                                        "tensor"};
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

static bool is_list(ir_attr_kind k)
{
    return k == IR_ATTR_INTS || k == IR_ATTR_FLOATS || k == IR_ATTR_STRINGS;
}

static ir_node *emit_node(fe_lower *l, int op, const char *suffix, int nin, ir_value *const *in,
                          int ncap, int nout, const char *const *out_names, const ir_attr *attrs,
                          int nattr);

ir_node *fe_emit(fe_lower *l, int op, const char *suffix, int nin, ir_value *const *in, int nout,
                 const char *const *out_names, const ir_attr *attrs, int nattr)
{
    return emit_node(l, op, suffix, nin, in, 0, nout, out_names, attrs, nattr);
}

ir_node *fe_emit_control(fe_lower *l, int op, const char *suffix, int nin, ir_value *const *in,
                         int ncap, int nout, const char *const *out_names, const ir_attr *attrs,
                         int nattr)
{
    return emit_node(l, op, suffix, nin, in, ncap, nout, out_names, attrs, nattr);
}

static ir_node *emit_node(fe_lower *l, int op, const char *suffix, int nin, ir_value *const *in,
                          int ncap, int nout, const char *const *out_names, const ir_attr *attrs,
                          int nattr)
{
    fe_ctx *c = l->c;
    const fe_node *src = l->src;
    const char *name = src->name;
    if (suffix) {
        char buf[512];
        snprintf(buf, sizeof buf, "%.300s/%.100s", src->name, suffix);
        if (!(name = ir_arena_strdup(c->tmp, buf))) {
            oom(c);
            return NULL;
        }
    }
    int nformal = nin;
    while (nin > 0 && !in[nin - 1])
        nin--;
    /* Shape functions run before ir_verify and rely on the arity. */
    const ir_op_info *info = &ir_ops[op];
    if (nin < info->min_in || (info->max_in >= 0 && nin > info->max_in) || nout < info->min_out ||
        (info->max_out >= 0 && nout > info->max_out)) {
        fe_node_errorf(c->d, src, "has %d inputs and %d outputs; %s takes %d to %d inputs and %d "
                       "to %d outputs (-1: any number)", nin, nout, info->name, info->min_in,
                       info->max_in, info->min_out, info->max_out);
        return NULL;
    }
    for (int i = 0; i < info->min_in; i++)
        if (!in[i]) {
            fe_node_errorf(c->d, src, "required input %d is missing", i);
            return NULL;
        }
    const ir_attr_schema *req;
    for (int i = 0; (req = ir_op_attr_schema(op, i)); i++) {
        bool found = !req->required;
        for (int j = 0; j < nattr && !found; j++)
            found = !strcmp(attrs[j].name, req->name);
        if (!found) {
            fe_node_errorf(c->d, src, "required attribute '%s' is missing", req->name);
            return NULL;
        }
    }
    const char **outs = ir_arena_alloc(c->tmp, sizeof(char *) * (size_t)(nout + 1));
    if (!outs) {
        oom(c);
        return NULL;
    }
    for (int i = 0; i < nout; i++) {
        outs[i] = out_names ? out_names[i] : NULL;
        if (!outs[i] && !(outs[i] = fe_fresh_name(c, src->name, suffix ? suffix : "out"))) {
            oom(c);
            return NULL;
        }
    }
    ir_value *const *all = in;
    if (ncap) {
        ir_value **v = ir_arena_alloc(c->tmp, sizeof *v * (size_t)(nin + ncap));
        if (!v) {
            oom(c);
            return NULL;
        }
        memcpy(v, in, sizeof *v * (size_t)nin);
        memcpy(v + nin, in + nformal, sizeof *v * (size_t)ncap);
        all = v;
    }
    ir_node *n = ir_graph_add_node(c->g, op, name, nin + ncap, all, nout, outs, c->d);
    if (!n)
        return NULL;
    n->ncap = ncap;
    for (int i = 0; i < nattr; i++) {
        ir_attr a = attrs[i];
        const ir_attr_schema *s = ir_op_find_attr(op, a.name);
        if (!s) {
            /* The one legacy attribute ignored everywhere: an in-place
             * memory hint of opsets before 6, with no effect on results. */
            if (!strcmp(a.name, "consumed_inputs") && src->opset < 7)
                continue;
            fe_node_errorf(c->d, src, "attribute '%.100s' is not supported (opset %d)", a.name,
                           src->opset);
            return NULL;
        }
        if (s->kind != a.kind) {
            if (is_list(s->kind) && is_list(a.kind) && a.n == 0) {
                a.kind = s->kind;
            } else {
                fe_node_errorf(c->d, src, "attribute '%.100s' should be %s, not %s", a.name,
                               ir_kind_name(s->kind), ir_kind_name(a.kind));
                return NULL;
            }
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(attrs[j].name, a.name)) {
                fe_node_errorf(c->d, src, "attribute '%.100s' is given twice", a.name);
                return NULL;
            }
        if (ir_node_add_attr(c->g, n, &a) < 0) {
            oom(c);
            return NULL;
        }
    }
    for (int i = 0; i < nout; i++) {
        fe_name *e = name_get(c, outs[i]);
        if (!e) {
            ir_errorf(c->d, "internal error: output '%.200s' is not registered", outs[i]);
            return NULL;
        }
        e->v = n->out[i];
        ir_type t;
        if (e->decl && type_from_proto(c, e->decl, e->name, false, &t) == 0)
            n->out[i]->type = t;
    }
    infer_now(n);
    return n;
}

/* The registry op an ONNX op_type names, or -1: internal ops (IR_F_INTERNAL,
 * made by passes, e.g. the layout pass's ConvNCHWc) are not ONNX ops. */
static int onnx_op(const char *op_type)
{
    int op = ir_op_lookup(op_type, strlen(op_type));
    return op >= 0 && (ir_ops[op].flags & IR_F_INTERNAL) ? -1 : op;
}

/* ---- subgraphs ----------------------------------------------------------- */

#define MAX_SUBS 4

/* A subgraph imported for the node being lowered, with the values of the
 * enclosing graph it captured (its last ncap inputs, in that order). */
typedef struct fe_sub {
    ir_graph *g;
    ir_value **outer;
    int ncap;
} fe_sub;

static int import_graph(fe_ctx *c, const char *display);

/* The formal input types a control-flow node gives its subgraph, used
 * where the file declares none (ONNX lets subgraph inputs go untyped):
 * dtype and rank, with the dims the op removes gone. Loop's iteration
 * count and cond are scalars whatever the file says. */
static int formal_types(fe_ctx *c, const fe_node *n, const fe_lower *l, ir_type **types,
                        bool **always, int *count)
{
    int nf = 0, drop_state = 0, drop_scan = 1, first = 0, nstate = 0;
    if (l->op == IR_OP_LOOP) {
        nstate = l->nin > 2 ? l->nin - 2 : 0;
        nf = 2 + nstate;
        first = 2;
    } else if (l->op == IR_OP_SCAN) {
        int64_t m = 0;
        for (int i = 0; i < n->nattr; i++)
            if (!strcmp(n->attrs[i].name, "num_scan_inputs"))
                m = n->attrs[i].p->i;
        first = n->opset < 9 ? 1 : 0; /* Scan-8: sequence_lens, then a batch dim everywhere */
        drop_state = n->opset < 9;
        drop_scan += n->opset < 9;
        nf = l->nin - first;
        nstate = nf - (int)m;
        if (m < 1 || nstate < 0)
            return fe_node_errorf(c->d, n, "num_scan_inputs is %lld with %d inputs", (long long)m,
                                  l->nin);
    }
    *count = nf;
    if (!nf)
        return 0;
    *types = ir_arena_alloc(c->tmp, sizeof **types * (size_t)nf);
    *always = ir_arena_alloc(c->tmp, sizeof **always * (size_t)nf);
    if (!*types || !*always)
        return oom(c);
    int k0 = 0;
    if (l->op == IR_OP_LOOP) {
        (*types)[0] = (ir_type){.dtype = IR_I64, .rank = 0};
        (*types)[1] = (ir_type){.dtype = IR_BOOL, .rank = 0};
        (*always)[0] = (*always)[1] = true;
        k0 = 2;
    }
    for (int k = k0; k < nf; k++) {
        const ir_value *v = l->in[first + k - k0];
        int drop = l->op == IR_OP_LOOP ? 0 : k - k0 < nstate ? drop_state : drop_scan;
        int rank = v && v->type.rank >= drop ? v->type.rank - drop : IR_RANK_UNKNOWN;
        ir_type *t = &(*types)[k];
        *t = (ir_type){.dtype = v ? v->type.dtype : IR_UNDEF, .rank = rank};
        for (int i = 0; i < rank; i++)
            t->dims[i] = ir_dim_unknown();
    }
    return 0;
}

/* Imports the GRAPH attribute fa of node n as a subgraph of c's graph. */
static int import_sub(fe_ctx *c, const fe_node *n, const fe_lower *l, const fe_attr *fa,
                      fe_sub *out)
{
    const Onnx__GraphProto *gp = fa->p->g;
    if (!gp)
        return fe_node_errorf(c->d, n, "attribute '%.100s' has no graph", fa->name);
    if (c->depth + 1 > IR_MAX_SUBGRAPH_DEPTH)
        return fe_node_errorf(c->d, n, "subgraphs nest deeper than %d", IR_MAX_SUBGRAPH_DEPTH);
    char path[600];
    snprintf(path, sizeof path, "%.300s%.150s/%.100s/", c->path, n->name, fa->name);
    fe_ctx sc = {.parent = c, .depth = c->depth + 1, .tmp = c->tmp, .m = c->m, .gp = gp,
                 .base_dir = c->base_dir, .d = c->d, .ren = n->ren};
    ir_type *types = NULL;
    bool *always = NULL;
    if (formal_types(c, n, l, &types, &always, &sc.nforce) < 0)
        return -1;
    sc.force = types;
    sc.force_always = always;
    if (!(sc.path = ir_arena_strdup(c->tmp, path)) ||
        !(sc.g = ir_graph_add_subgraph(c->g, gp->name && *gp->name ? gp->name : fa->name)))
        return oom(c);
    int rc = import_graph(&sc, NULL);
    free(sc.nodes.v);
    fe_map_free(&sc.names);
    if (rc != 0) {
        /* Messages from inside say where: "If_0/then_branch/: node ...". */
        if (!c->parent)
            ir_diag_prefix(c->d, "%.*s", (int)strlen(sc.path) - 1, sc.path);
        return -1;
    }
    *out = (fe_sub){sc.g, sc.cap_outer, sc.ncap};
    return 0;
}

/* Every subgraph of the node takes the union of their captures, in one
 * order, as its last inputs (one it does not use stays unused); the node
 * takes the captured values as its last inputs. */
static int join_captures(fe_ctx *c, fe_lower *l, fe_sub *subs, int nsubs)
{
    int nu = 0, cap = 0;
    ir_value **u = NULL;
    for (int s = 0; s < nsubs; s++)
        cap += subs[s].ncap;
    if (!cap)
        return 0;
    if (!(u = ir_arena_alloc(c->tmp, sizeof *u * (size_t)cap)))
        return oom(c);
    for (int s = 0; s < nsubs; s++)
        for (int j = 0; j < subs[s].ncap; j++) {
            int k = 0;
            while (k < nu && u[k] != subs[s].outer[j])
                k++;
            if (k == nu)
                u[nu++] = subs[s].outer[j];
        }
    for (int s = 0; s < nsubs; s++) {
        ir_graph *g = subs[s].g;
        int formal = g->ninputs - subs[s].ncap;
        ir_value **in = ir_arena_alloc(g->arena, sizeof *in * (size_t)(formal + nu + 1));
        if (!in)
            return oom(c);
        if (formal > 0)   /* a subgraph of no formal inputs may have none (NULL) */
            memcpy(in, g->inputs, sizeof *in * (size_t)formal);
        for (int k = 0; k < nu; k++) {
            ir_value *v = NULL;
            for (int j = 0; j < subs[s].ncap && !v; j++)
                if (subs[s].outer[j] == u[k])
                    v = g->inputs[formal + j];
            char buf[512];
            ir_type t;
            if (!v && (!ir_type_rehome(c->g, g, &u[k]->type, &t) ||
                       !(v = ir_graph_add_input(g, ir_graph_fresh_name(g, u[k]->name, "", buf,
                                                                       sizeof buf), &t, c->d))))
                return oom(c);
            in[formal + k] = v;
        }
        g->inputs = in;
        g->ninputs = g->cap_inputs = formal + nu;
    }
    for (int k = 0; k < nu; k++)
        if (fe_set_input(l, l->nin, u[k]) < 0)
            return -1;
    l->ncap = nu;
    return 0;
}

/* Lowers one flattened node into IR. */
static int lower_node(fe_ctx *c, const fe_node *n)
{
    if (!*n->domain && !strcmp(n->op_type, "Constant"))
        return lower_constant(c, n);
    /* Contrib ops expand into several IR ops; Identity stands in for
     * their op while inputs, outputs and attributes are gathered. */
    bool ms = !*n->domain ? onnx_op(n->op_type) < 0 && fe_ms_supported(n) : fe_ms_supported(n);
    int op = ms ? IR_OP_IDENTITY : *n->domain ? -1 : onnx_op(n->op_type);
    if (op < 0 && !*n->domain)
        op = fe_adapted_op(n->op_type);
    if (op < 0) /* check_supported lets none through; kept for safety */
        return fe_node_errorf(c->d, n, "is not supported");
    fe_lower l = {.c = c, .src = n, .op = op};
    fe_sub subs[MAX_SUBS];
    int nsubs = 0;
    l.cap_in = n->nin + 4;
    l.in = ir_arena_alloc(c->tmp, sizeof(ir_value *) * (size_t)l.cap_in);
    l.cap_attr = n->nattr + 4;
    l.attrs = ir_arena_alloc(c->tmp, sizeof(ir_attr) * (size_t)l.cap_attr);
    l.out = ir_arena_alloc(c->tmp, sizeof(char *) * (size_t)(n->nout + 1));
    if (!l.in || !l.attrs || !l.out)
        return oom(c);
    for (int i = 0; i < n->nin; i++) {
        const char *nm = n->in[i] ? n->in[i] : "";
        ir_value *v = NULL;
        if (*nm) {
            fe_name *e = name_get(c, nm);
            if (!e || (!e->v && !e->init)) {
                if (!(v = capture(c, nm)))
                    return fe_node_errorf(c->d, n, "input '%.200s' is never defined", nm);
            } else if (!(v = e->v ? e->v : make_initializer(c, e)))
                return -1;
        }
        l.in[l.nin++] = v;
    }
    l.nout = n->nout;
    /* Unused trailing outputs go, but never below the op's minimum (nor
     * for control flow, whose outputs match its subgraphs'). */
    while (!(ir_ops[op].flags & IR_F_CONTROL) && l.nout > ir_ops[op].min_out &&
           !*n->out[l.nout - 1])
        l.nout--;
    for (int i = 0; i < l.nout; i++) {
        l.out[i] = n->out[i];
        if (!*l.out[i] && !(l.out[i] = fe_fresh_name(c, n->name, "unused")))
            return oom(c);
    }
    for (int i = 0; i < n->nattr; i++) {
        for (int j = 0; j < l.nattr; j++)
            if (!strcmp(l.attrs[j].name, n->attrs[i].name))
                return fe_node_errorf(c->d, n, "attribute '%.100s' is given twice",
                                      n->attrs[i].name);
        if ((ir_ops[op].flags & IR_F_CONTROL) &&
            attr_kind(n->attrs[i].p) == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH) {
            if (nsubs == MAX_SUBS)
                return fe_node_errorf(c->d, n, "has more than %d subgraphs", MAX_SUBS);
            if (import_sub(c, n, &l, &n->attrs[i], &subs[nsubs]) < 0)
                return -1;
            l.attrs[l.nattr++] = (ir_attr){.name = n->attrs[i].name, .kind = IR_ATTR_GRAPH,
                                           .graph = subs[nsubs++].g};
            continue;
        }
        if (convert_attr(c, n, &n->attrs[i], &l.attrs[l.nattr]) < 0)
            return -1;
        l.nattr++;
    }
    if (nsubs && join_captures(c, &l, subs, nsubs) < 0)
        return -1;
    if (ms)
        return fe_ms_lower(&l);
    if (fe_adapt(&l) < 0)
        return -1;
    if (l.done)
        return 0;
    if (ir_ops[l.op].flags & IR_F_CONTROL)
        return fe_emit_control(&l, l.op, NULL, l.nin - l.ncap, l.in, l.ncap, l.nout, l.out,
                               l.attrs, l.nattr) ? 0 : -1;
    return fe_emit(&l, l.op, NULL, l.nin, l.in, l.nout, l.out, l.attrs, l.nattr) ? 0 : -1;
}

/* ---- whole-graph stages ------------------------------------------------ */

typedef struct unsup {
    fe_node first;             /* a copy: a subgraph's node list is freed after the walk */
    const char *where;         /* the first node's name, with its subgraph path */
    int count;
} unsup;

typedef struct unsup_list {
    fe_map seen;
    unsup **groups;
    int n, cap;
} unsup_list;

/* Adds the unsupported ops of nodes (and of their subgraphs, recursively,
 * paths growing as "If_0/then_branch/") to ul. */
static int collect_unsupported(fe_ctx *c, const fe_nodes *nodes, const char *path, int depth,
                               unsup_list *ul)
{
    for (int i = 0; i < nodes->n; i++) {
        const fe_node *n = &nodes->v[i];
        for (int a = 0; a < n->nattr; a++) {
            const Onnx__AttributeProto *ap = n->attrs[a].p;
            if (attr_kind(ap) != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH || !ap->g)
                continue;
            if (depth >= IR_MAX_SUBGRAPH_DEPTH)
                return fe_node_errorf(c->d, n, "subgraphs nest deeper than %d",
                                      IR_MAX_SUBGRAPH_DEPTH);
            char sub_path[600];
            snprintf(sub_path, sizeof sub_path, "%.300s%.150s/%.100s/", path, n->name,
                     n->attrs[a].name);
            fe_nodes sub = {0};
            int rc = fe_flatten(c->m, ap->g, c->tmp, &sub, c->d);
            if (rc == 0)
                rc = collect_unsupported(c, &sub, sub_path, depth + 1, ul);
            free(sub.v);
            if (rc < 0)
                return -1;
        }
        if (!*n->domain && (!strcmp(n->op_type, "Constant") ||
                            onnx_op(n->op_type) >= 0 ||
                            fe_adapted_op(n->op_type) >= 0))
            continue;
        if (fe_ms_supported(n))
            continue;
        size_t la = strlen(n->domain), lb = strlen(n->op_type);
        char *key = ir_arena_alloc(c->tmp, la + lb + 2);
        if (!key)
            return oom(c);
        memcpy(key, n->domain, la);
        key[la] = '\x1f';
        memcpy(key + la + 1, n->op_type, lb + 1);
        unsup *u = fe_map_get(&ul->seen, key);
        if (u) {
            u->count++;
            continue;
        }
        char where[600];
        snprintf(where, sizeof where, "%.400s%.150s", path, n->name);
        if (!(u = ir_arena_alloc(c->tmp, sizeof *u)) || fe_map_put(&ul->seen, key, u) < 0 ||
            !(u->where = ir_arena_strdup(c->tmp, where)))
            return oom(c);
        u->first = *n;
        u->count = 1;
        if (ul->n == ul->cap) {
            int nc = ul->cap ? ul->cap * 2 : 16;
            unsup **ng = realloc(ul->groups, sizeof *ng * (size_t)nc);
            if (!ng)
                return oom(c);
            ul->groups = ng;
            ul->cap = nc;
        }
        ul->groups[ul->n++] = u;
    }
    return 0;
}

/* Lists every unsupported op type in one message, one entry per
 * (domain, op type) with its node count and first node, subgraphs
 * included (the node named with its path: If_0/then_branch/LSTM_3). */
static int check_supported(fe_ctx *c, const char *display)
{
    unsup_list ul = {0};
    int rc = -1;
    if (collect_unsupported(c, &c->nodes, "", 0, &ul) < 0) {
        ir_diag_prefix(c->d, "%s", display);
        goto done;
    }
    if (!ul.n) {
        rc = 0;
        goto done;
    }
    char msg[sizeof c->d->msg];
    size_t at = (size_t)snprintf(msg, sizeof msg, "%.300s: %d unsupported op%s: ", display,
                                 ul.n, ul.n > 1 ? "s" : "");
    for (int i = 0; i < ul.n && at < sizeof msg; i++) {
        const fe_node *n = &ul.groups[i]->first;
        char one[400];
        if (ul.groups[i]->count == 1)
            snprintf(one, sizeof one, "%s%.80s (domain '%.80s', opset %d, node '%.120s')",
                     i ? ", " : "", n->op_type, n->domain, n->opset, ul.groups[i]->where);
        else
            snprintf(one, sizeof one, "%s%.80s (domain '%.80s', opset %d, %d nodes, first '%.120s')",
                     i ? ", " : "", n->op_type, n->domain, n->opset, ul.groups[i]->count,
                     ul.groups[i]->where);
        size_t len = strlen(one);
        if (at + len + 5 >= sizeof msg) {
            snprintf(msg + at, sizeof msg - at, "%s...", i ? ", " : "");
            break;
        }
        memcpy(msg + at, one, len + 1);
        at += len;
    }
    ir_errorf(c->d, "%s", msg);
done:
    fe_map_free(&ul.seen);
    free(ul.groups);
    return rc;
}

/* Registers every defined name; a name defined twice is an error. */
static int register_names(fe_ctx *c)
{
    const Onnx__GraphProto *gp = c->gp;
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        const char *nm = tp->name ? tp->name : "";
        if (!*nm)
            return ir_errorf(c->d, "initializer %zu has no name", i);
        fe_name *e = name_add(c, nm);
        if (!e)
            return oom(c);
        if (e->init)
            return ir_errorf(c->d, "tensor '%.200s': initializer defined twice", nm);
        e->init = tp;
    }
    if (gp->n_sparse_initializer)
        return ir_errorf(c->d, "sparse initializers are not supported");
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        const char *nm = vi->name ? vi->name : "";
        if (!*nm)
            return ir_errorf(c->d, "graph input %zu has no name", i);
        fe_name *e = name_add(c, nm);
        if (!e)
            return oom(c);
        /* An initializer listed as an input (IR < 4 style, or an
         * overridable default) is taken as a constant. */
        if (e->init)
            continue;
        if (e->input)
            return ir_errorf(c->d, "graph input '%.200s' is listed twice", nm);
        e->input = vi;
    }
    for (int k = 0; k < c->nodes.n; k++) {
        const fe_node *n = &c->nodes.v[k];
        for (int i = 0; i < n->nout; i++) {
            const char *nm = n->out[i];
            if (!*nm)
                continue;
            fe_name *e = name_add(c, nm);
            if (!e)
                return oom(c);
            if (e->init || e->input || e->producer >= 0)
                return fe_node_errorf(c->d, n, "output '%.200s' is already defined%s", nm,
                                      e->init ? " by an initializer"
                                      : e->input ? " as a graph input"
                                                 : " by another node");
            e->producer = k;
        }
    }
    for (size_t i = 0; i < gp->n_value_info; i++) {
        fe_name *e = gp->value_info[i]->name ? name_get(c, gp->value_info[i]->name) : NULL;
        if (e && !e->decl)
            e->decl = gp->value_info[i]->type;
    }
    /* Output declarations win over value_info. */
    for (size_t i = 0; i < gp->n_output; i++) {
        fe_name *e = gp->output[i]->name ? name_get(c, gp->output[i]->name) : NULL;
        if (e && gp->output[i]->type)
            e->decl = gp->output[i]->type;
    }
    return 0;
}

/* Node order: the file's if it is topological (ONNX requires it), else a
 * Kahn sort; nodes left over sit on a cycle. Dangling inputs are found
 * here too. *order receives a malloc'd permutation. */
static int topo_order(fe_ctx *c, int **order_out)
{
    int n = c->nodes.n, rc = -1;
    int *order = malloc(sizeof(int) * ((size_t)n + 1));
    int *indeg = calloc((size_t)n + 1, sizeof(int));
    int *start = calloc((size_t)n + 2, sizeof(int));
    int *adj = NULL;
    if (!order || !indeg || !start)
        goto oom;
    bool sorted = true;
    size_t nedges = 0;
    for (int k = 0; k < n; k++) {
        const fe_node *nd = &c->nodes.v[k];
        for (int i = 0; i < nd->nin; i++) {
            const char *nm = nd->in[i] ? nd->in[i] : "";
            if (!*nm)
                continue;
            fe_name *e = name_get(c, nm);
            /* In a subgraph, a name defined nowhere in it is an enclosing
             * graph's, resolved when the node is lowered. */
            if (c->parent && (!e || (!e->init && !e->input && e->producer < 0)))
                continue;
            if (!e || (!e->init && !e->input && e->producer < 0)) {
                fe_node_errorf(c->d, nd, "input '%.200s' is never defined", nm);
                goto done;
            }
            if (e->producer == k) {
                fe_node_errorf(c->d, nd, "input '%.200s' is its own output (a cycle)", nm);
                goto done;
            }
            if (e->producer >= 0) {
                sorted &= e->producer < k;
                indeg[k]++;
                start[e->producer + 1]++;
                nedges++;
            }
        }
    }
    if (sorted) {
        for (int k = 0; k < n; k++)
            order[k] = k;
        rc = 0;
        goto done;
    }
    /* CSR adjacency producer -> consumers. */
    for (int k = 0; k < n; k++)
        start[k + 1] += start[k];
    adj = malloc(sizeof(int) * (nedges + 1));
    int *fill = calloc((size_t)n + 1, sizeof(int));
    if (!adj || !fill) {
        free(fill);
        goto oom;
    }
    for (int k = 0; k < n; k++) {
        const fe_node *nd = &c->nodes.v[k];
        for (int i = 0; i < nd->nin; i++) {
            fe_name *e = nd->in[i] && *nd->in[i] ? name_get(c, nd->in[i]) : NULL;
            if (e && e->producer >= 0)
                adj[start[e->producer] + fill[e->producer]++] = k;
        }
    }
    free(fill);
    int head = 0, tail = 0;
    for (int k = 0; k < n; k++)
        if (!indeg[k])
            order[tail++] = k;
    while (head < tail) {
        int k = order[head++];
        for (int j = start[k]; j < start[k + 1]; j++)
            if (--indeg[adj[j]] == 0)
                order[tail++] = adj[j];
    }
    if (tail < n) {
        for (int k = 0; k < n; k++)
            if (indeg[k]) {
                fe_node_errorf(c->d, &c->nodes.v[k], "is part of a cycle");
                goto done;
            }
    }
    rc = 0;
    goto done;
oom:
    oom(c);
done:
    free(indeg);
    free(start);
    free(adj);
    if (rc < 0) {
        free(order);
        order = NULL;
    }
    *order_out = order;
    return rc;
}

static int add_inputs(fe_ctx *c)
{
    const Onnx__GraphProto *gp = c->gp;
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        fe_name *e = name_get(c, vi->name);
        if (e->init || e->input != vi)
            continue;
        ir_type t;
        if (type_from_proto(c, vi->type, vi->name, !c->parent, &t) < 0)
            return -1;
        int k = c->g->ninputs;
        if (k < c->nforce && (c->force_always[k] || t.dtype == IR_UNDEF) &&
            !ir_type_rehome(c->parent->g, c->g, &c->force[k], &t))
            return oom(c);
        if (!(e->v = ir_graph_add_input(c->g, vi->name, &t, c->d)))
            return -1;
    }
    return 0;
}

static int add_outputs(fe_ctx *c)
{
    const Onnx__GraphProto *gp = c->gp;
    if (!gp->n_output)
        return ir_errorf(c->d, "the graph has no outputs");
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *nm = gp->output[i]->name ? gp->output[i]->name : "";
        fe_name *e = *nm ? name_get(c, nm) : NULL;
        ir_value *v;
        if (!e || (!e->v && !e->init)) {
            if (!*nm || !(v = capture(c, nm)))
                return ir_errorf(c->d, "%sgraph output '%.200s' is never defined", c->path, nm);
        } else {
            v = e->v ? e->v : make_initializer(c, e);
        }
        if (!v || ir_graph_add_output(c->g, v, c->d) < 0)
            return -1;
    }
    return 0;
}

static int import_graph(fe_ctx *c, const char *display)
{
    int *order = NULL;
    if (fe_flatten(c->m, c->gp, c->tmp, &c->nodes, c->d) < 0)
        return -1;
    /* The main graph's check covers every subgraph. */
    if (!c->parent && check_supported(c, display) < 0)
        return 1; /* already prefixed */
    if (register_names(c) < 0 || topo_order(c, &order) < 0 || add_inputs(c) < 0)
        goto fail;
    if (!c->parent && c->pin && c->pin(c->pin_ctx, c->g, c->d) < 0)
        goto fail;
    for (int k = 0; k < c->nodes.n; k++)
        if (lower_node(c, &c->nodes.v[order[k]]) < 0)
            goto fail;
    free(order);
    return add_outputs(c);
fail:
    free(order);
    return -1;
}

static ir_graph *import_buffer(const void *buf, size_t len, const char *base_dir, const char *display,
                               bool infer, icc_onnx_pin_fn pin, void *pin_ctx, icc_diag *d);

ir_graph *fe_import_buffer(const void *buf, size_t len, const char *base_dir, const char *display,
                           bool infer, icc_diag *d)
{
    return import_buffer(buf, len, base_dir, display, infer, NULL, NULL, d);
}

static ir_graph *import_buffer(const void *buf, size_t len, const char *base_dir, const char *display,
                               bool infer, icc_onnx_pin_fn pin, void *pin_ctx, icc_diag *d)
{
    icc_diag local;
    if (!d)
        d = &local;
    if (!display)
        display = "model";
    Onnx__ModelProto *m = NULL;
    fe_ctx c = {.base_dir = base_dir, .d = d, .path = "", .pin = pin, .pin_ctx = pin_ctx};
    int rc = -1;

    if (!buf && len) {
        ir_errorf(d, "no buffer");
        goto done;
    }
    if (len > FE_MAX_PROTO_BYTES) {
        ir_errorf(d, "model of %zu bytes exceeds protobuf's 2 GiB limit (use external data)", len);
        goto done;
    }
    if (fe_wire_check(buf, len, &onnx__model_proto__descriptor, d) < 0)
        goto done;
    m = onnx__model_proto__unpack(NULL, len, buf);
    if (!m) {
        ir_errorf(d, "malformed protobuf: not a ModelProto");
        goto done;
    }
    if (!m->graph) {
        ir_errorf(d, "the model has no graph");
        goto done;
    }
    /* Only IR version 2 models predate opset_import (they mean opset 1). */
    if (!m->n_opset_import && m->has_ir_version && m->ir_version >= 3) {
        ir_errorf(d, "the model has no opset_import (required since IR version 3)");
        goto done;
    }
    /* Newer opsets may change an op's meaning; running them with the
     * semantics we know would be silently wrong. */
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        bool dflt = !o->domain || !*o->domain || !strcmp(o->domain, "ai.onnx");
        if (dflt && o->version > ICC_ONNX_MAX_OPSET) {
            ir_errorf(d, "opset %lld of the default domain is newer than the newest icc knows (%d)",
                      (long long)o->version, ICC_ONNX_MAX_OPSET);
            goto done;
        }
    }
    c.m = m;
    c.gp = m->graph;
    c.g = ir_graph_create(m->graph->name && *m->graph->name ? m->graph->name : "main");
    c.tmp = ir_arena_create();
    if (!c.g || !c.tmp) {
        ir_errorf(d, "out of memory");
        goto done;
    }
    rc = import_graph(&c, display);
    /* the model's declared shapes that disagree with the computed ones:
     * the computed ones, counted (ir_graph.decl_lenient), as ONNX Runtime
     * runs such a model with a warning */
    c.g->decl_lenient = true;
    if (rc == 0 && infer && ir_infer_shapes(c.g, d) < 0)
        rc = -1;
    c.g->decl_lenient = false;
    if (rc == 0 && infer && ir_verify(c.g, d) < 0)
        rc = -1;
done:
    if (rc < 0)
        ir_diag_prefix(d, "%s", display);
    free(c.nodes.v);
    fe_map_free(&c.names);
    ir_arena_destroy(c.tmp);
    if (m)
        onnx__model_proto__free_unpacked(m, NULL);
    if (rc != 0) {
        ir_graph_destroy(c.g);
        return NULL;
    }
    return c.g;
}

ir_graph *icc_onnx_load_buffer(const void *buf, size_t len, const char *base_dir,
                               const char *display, icc_diag *d)
{
    return fe_import_buffer(buf, len, base_dir, display, true, d);
}

ir_graph *icc_onnx_load_file(const char *path, icc_diag *d)
{
    return icc_onnx_load_file_pinned(path, NULL, NULL, d);
}

ir_graph *icc_onnx_load_file_pinned(const char *path, icc_onnx_pin_fn pin, void *ctx, icc_diag *d)
{
    uint8_t *buf;
    size_t len;
    if (fe_read_file(path, FE_MAX_PROTO_BYTES, &buf, &len, d) < 0) {
        ir_diag_prefix(d, "%s", path);
        return NULL;
    }
    char *dir = fe_dirname(path);
    ir_graph *g = NULL;
    if (!dir)
        ir_errorf(d, "%s: out of memory", path);
    else
        g = import_buffer(buf, len, dir, path, true, pin, ctx, d);
    free(dir);
    free(buf);
    return g;
}
