/* onnx_build.h - a small builder of ONNX ModelProto messages for the
 * frontend tests: protobuf-c structs allocated in a list freed by tfree(),
 * packed and loaded through the frontend. Header-only (static inline), so
 * each test executable includes it. */
#ifndef ICC_TEST_ONNX_BUILD_H
#define ICC_TEST_ONNX_BUILD_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/internal.h"

#define ONNX_DATA "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/onnx/backend/test/data"

#define CAP 64
static void *allocs[1 << 16];
static int nallocs;

static inline void *T(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_lt(nallocs, (int)(sizeof allocs / sizeof allocs[0]));
    allocs[nallocs++] = p;
    return p;
}

static inline void tfree(void)
{
    while (nallocs)
        free(allocs[--nallocs]);
}

static inline char *S(const char *s)
{
    char *p = T(strlen(s) + 1);
    strcpy(p, s);
    return p;
}

#define PUSH(arr, n, v)                                  \
    do {                                                 \
        if (!(arr))                                      \
            (arr) = T(sizeof(*(arr)) * CAP);             \
        ck_assert_uint_lt((n), CAP);                     \
        (arr)[(n)++] = (v);                              \
    } while (0)

/* "a,,b" -> {"a", "", "b"}; "" -> none. */
static inline void split_list(const char *s, char ***out, size_t *n)
{
    *n = 0;
    if (!*s)
        return;
    for (const char *p = s;;) {
        size_t k = strcspn(p, ",");
        char *e = T(k + 1);
        memcpy(e, p, k);
        PUSH(*out, *n, e);
        if (!p[k])
            break;
        p += k + 1;
    }
}

static inline Onnx__OperatorSetIdProto *opset(const char *domain, int v)
{
    Onnx__OperatorSetIdProto *o = T(sizeof *o);
    onnx__operator_set_id_proto__init(o);
    o->domain = S(domain);
    o->has_version = 1;
    o->version = v;
    return o;
}

static inline Onnx__ModelProto *new_model(int version)
{
    Onnx__ModelProto *m = T(sizeof *m);
    onnx__model_proto__init(m);
    m->has_ir_version = 1;
    m->ir_version = 8;
    PUSH(m->opset_import, m->n_opset_import, opset("", version));
    m->graph = T(sizeof *m->graph);
    onnx__graph_proto__init(m->graph);
    m->graph->name = S("g");
    return m;
}

/* shape: NULL = no shape; "N,3,?" = dim_param N, dim_value 3, unknown. */
static inline Onnx__ValueInfoProto *vinfo(const char *name, int elem, const char *shape)
{
    Onnx__ValueInfoProto *v = T(sizeof *v);
    onnx__value_info_proto__init(v);
    v->name = S(name);
    v->type = T(sizeof *v->type);
    onnx__type_proto__init(v->type);
    v->type->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    v->type->tensor_type = T(sizeof(Onnx__TypeProto__Tensor));
    onnx__type_proto__tensor__init(v->type->tensor_type);
    v->type->tensor_type->has_elem_type = 1;
    v->type->tensor_type->elem_type = elem;
    if (shape) {
        Onnx__TensorShapeProto *sp = T(sizeof *sp);
        onnx__tensor_shape_proto__init(sp);
        char **parts = NULL;
        size_t n;
        split_list(shape, &parts, &n);
        for (size_t i = 0; i < n; i++) {
            Onnx__TensorShapeProto__Dimension *d = T(sizeof *d);
            onnx__tensor_shape_proto__dimension__init(d);
            if (parts[i][0] >= '0' && parts[i][0] <= '9') {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                d->dim_value = atoll(parts[i]);
            } else if (strcmp(parts[i], "?")) {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                d->dim_param = parts[i];
            }
            PUSH(sp->dim, sp->n_dim, d);
        }
        v->type->tensor_type->shape = sp;
    }
    return v;
}

#define F32 ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define I64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64

static inline void add_input(Onnx__ModelProto *m, const char *name, int elem, const char *shape)
{
    PUSH(m->graph->input, m->graph->n_input, vinfo(name, elem, shape));
}

static inline void add_output(Onnx__ModelProto *m, const char *name, int elem, const char *shape)
{
    PUSH(m->graph->output, m->graph->n_output, vinfo(name, elem, shape));
}

static inline Onnx__NodeProto *new_node(const char *op, const char *name, const char *ins,
                                        const char *outs)
{
    Onnx__NodeProto *n = T(sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = S(op);
    n->name = S(name);
    split_list(ins, &n->input, &n->n_input);
    split_list(outs, &n->output, &n->n_output);
    return n;
}

static inline Onnx__NodeProto *add_node(Onnx__ModelProto *m, const char *op, const char *name,
                                 const char *ins, const char *outs)
{
    Onnx__NodeProto *n = new_node(op, name, ins, outs);
    PUSH(m->graph->node, m->graph->n_node, n);
    return n;
}

static inline Onnx__AttributeProto *add_attr(Onnx__NodeProto *n, const char *name, int type)
{
    Onnx__AttributeProto *a = T(sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = S(name);
    a->has_type = 1;
    a->type = type;
    PUSH(n->attribute, n->n_attribute, a);
    return a;
}

static inline void a_int(Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = add_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

static inline void a_float(Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = add_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

static inline void a_str(Onnx__NodeProto *n, const char *name, const char *s)
{
    Onnx__AttributeProto *a = add_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.data = (uint8_t *)S(s);
    a->s.len = strlen(s);
}

static inline void a_ints(Onnx__NodeProto *n, const char *name, size_t cnt, const int64_t *v)
{
    Onnx__AttributeProto *a = add_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = cnt;
    a->ints = T(sizeof(int64_t) * cnt);
    if (cnt)
        memcpy(a->ints, v, sizeof(int64_t) * cnt);
}

static inline void a_floats(Onnx__NodeProto *n, const char *name, size_t cnt, const float *v)
{
    Onnx__AttributeProto *a = add_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->n_floats = cnt;
    a->floats = T(sizeof(float) * cnt);
    memcpy(a->floats, v, sizeof(float) * cnt);
}

static inline Onnx__TensorProto *tensor(const char *name, int dtype, int rank, const int64_t *dims)
{
    Onnx__TensorProto *t = T(sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = S(name);
    t->has_data_type = 1;
    t->data_type = dtype;
    t->n_dims = (size_t)rank;
    t->dims = T(sizeof(int64_t) * (size_t)(rank + 1));
    if (rank)
        memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
    return t;
}

static inline void set_raw(Onnx__TensorProto *t, const void *data, size_t n)
{
    t->has_raw_data = 1;
    t->raw_data.len = n;
    t->raw_data.data = T(n);
    memcpy(t->raw_data.data, data, n);
}

static inline void a_tensor(Onnx__NodeProto *n, const char *name, Onnx__TensorProto *t)
{
    Onnx__AttributeProto *a = add_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = t;
}

static inline void add_init(Onnx__ModelProto *m, Onnx__TensorProto *t)
{
    PUSH(m->graph->initializer, m->graph->n_initializer, t);
}

static inline uint8_t *pack(Onnx__ModelProto *m, size_t *len)
{
    *len = onnx__model_proto__get_packed_size(m);
    uint8_t *b = T(*len);
    ck_assert_uint_eq(onnx__model_proto__pack(m, b), *len);
    return b;
}

static inline ir_graph *load_dir(Onnx__ModelProto *m, const char *dir, bool infer, icc_diag *d)
{
    size_t len;
    uint8_t *b = pack(m, &len);
    memset(d->msg, 0, sizeof d->msg);
    return fe_import_buffer(b, len, dir, "m.onnx", infer, d);
}

static inline ir_graph *load(Onnx__ModelProto *m, bool infer, icc_diag *d)
{
    return load_dir(m, NULL, infer, d);
}

/* Loads and expects failure with msg containing want. */
static inline void expect_error(Onnx__ModelProto *m, const char *want)
{
    icc_diag d;
    ir_graph *g = load(m, false, &d);
    if (g)
        ir_graph_destroy(g);
    ck_assert_msg(!g, "loaded, expected an error with '%s'", want);
    ck_assert_msg(strstr(d.msg, want), "message '%s' lacks '%s'", d.msg, want);
    ck_assert_msg(!strncmp(d.msg, "m.onnx: ", 8), "message '%s' lacks the display prefix", d.msg);
}

/* Appends a default to FunctionProto.attribute_proto through the
 * descriptor (the field needs IR version 9); false if the schema lacks it. */
static inline bool fn_add_default(Onnx__FunctionProto *f, Onnx__AttributeProto *a)
{
    const ProtobufCFieldDescriptor *fd = protobuf_c_message_descriptor_get_field_by_name(
        &onnx__function_proto__descriptor, "attribute_proto");
    if (!fd)
        return false;
    size_t *n = (size_t *)((char *)f + fd->quantifier_offset);
    Onnx__AttributeProto ***v = (Onnx__AttributeProto ***)((char *)f + fd->offset);
    PUSH(*v, *n, a);
    return true;
}

static inline ir_node *find_op(const ir_graph *g, int op, int nth)
{
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i]->op == op && nth-- == 0)
            return g->nodes[i];
    return NULL;
}

static inline int count_op(const ir_graph *g, int op)
{
    int n = 0;
    for (int i = 0; i < g->nnodes; i++)
        n += g->nodes[i]->op == op;
    return n;
}

static inline ir_value *find_value(const ir_graph *g, const char *name)
{
    for (int i = 0; i < g->nvalues; i++)
        if (!strcmp(g->values[i]->name, name))
            return g->values[i];
    return NULL;
}

#endif
