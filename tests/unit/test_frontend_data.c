/* test_frontend_data.c - the ONNX frontend's data paths: initializers from
 * every typed field and raw_data, size and dtype checks, Constant forms,
 * external data and its path checks, tensor files, and hostile bytes (deep
 * nesting, truncation, random and flipped bytes). */
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "onnx_build.h"

/* ---- tensors ------------------------------------------------------------ */

/* A graph whose outputs are its initializers: no nodes, nothing to infer. */
static ir_graph *load_inits(Onnx__ModelProto *m, icc_diag *d)
{
    for (size_t i = 0; i < m->graph->n_initializer; i++)
        add_output(m, m->graph->initializer[i]->name, m->graph->initializer[i]->data_type, NULL);
    return load(m, true, d);
}

START_TEST(initializers_from_typed_fields)
{
    Onnx__ModelProto *m = new_model(13);
    int64_t d2[] = {2};
    Onnx__TensorProto *t;

    t = tensor("f", F32, 1, d2);
    t->n_float_data = 2;
    t->float_data = T(8);
    t->float_data[0] = 1.5f;
    t->float_data[1] = -2;
    add_init(m, t);

    static const struct { const char *name; int code; int32_t v0, v1; } small[] = {
        {"i8", 3, -5, 7}, {"u8", 2, 200, 3}, {"i16", 5, -300, 4}, {"u16", 4, 60000, 5},
        {"b", 9, 0, 3}, {"h", 10, 0x3c00, 0xc000}, {"bf", 16, 0x3f80, 0x4000},
        {"i32", 6, -7, 1 << 30},
    };
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++) {
        t = tensor(small[i].name, small[i].code, 1, d2);
        t->n_int32_data = 2;
        t->int32_data = T(8);
        t->int32_data[0] = small[i].v0;
        t->int32_data[1] = small[i].v1;
        add_init(m, t);
    }
    t = tensor("i64", I64, 1, d2);
    t->n_int64_data = 2;
    t->int64_data = T(16);
    t->int64_data[0] = -(1LL << 40);
    t->int64_data[1] = 9;
    add_init(m, t);
    t = tensor("f64", ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE, 1, d2);
    t->n_double_data = 2;
    t->double_data = T(16);
    t->double_data[0] = 0.25;
    t->double_data[1] = 1e300;
    add_init(m, t);
    t = tensor("u32", ONNX__TENSOR_PROTO__DATA_TYPE__UINT32, 1, d2);
    t->n_uint64_data = 2;
    t->uint64_data = T(16);
    t->uint64_data[0] = 4000000000u;
    t->uint64_data[1] = 1;
    add_init(m, t);
    t = tensor("u64", ONNX__TENSOR_PROTO__DATA_TYPE__UINT64, 1, d2);
    t->n_uint64_data = 2;
    t->uint64_data = T(16);
    t->uint64_data[0] = UINT64_MAX;
    t->uint64_data[1] = 2;
    add_init(m, t);
    t = tensor("scalar", F32, 0, NULL);
    t->n_float_data = 1;
    t->float_data = T(4);
    t->float_data[0] = 42;
    add_init(m, t);
    t = tensor("empty", F32, 2, (int64_t[]){0, 5});
    add_init(m, t);

    icc_diag d;
    ir_graph *g = load_inits(m, &d);
    ck_assert_msg(g, "%s", d.msg);
    const ir_tensor *c;
#define CV(name) (&find_value(g, name)->cval)
    c = CV("f");
    ck_assert_int_eq(c->dtype, IR_F32);
    ck_assert(((float *)c->data)[0] == 1.5f && ((float *)c->data)[1] == -2);
    ck_assert_int_eq(((int8_t *)CV("i8")->data)[0], -5);
    ck_assert_int_eq(((uint8_t *)CV("u8")->data)[0], 200);
    ck_assert_int_eq(((int16_t *)CV("i16")->data)[0], -300);
    ck_assert_int_eq(((uint16_t *)CV("u16")->data)[0], 60000);
    ck_assert_int_eq(CV("b")->dtype, IR_BOOL);
    ck_assert_int_eq(((uint8_t *)CV("b")->data)[0], 0);
    ck_assert_int_eq(((uint8_t *)CV("b")->data)[1], 1);
    ck_assert(ir_tensor_getf(CV("h"), 0) == 1.0 && ir_tensor_getf(CV("h"), 1) == -2.0);
    ck_assert(ir_tensor_getf(CV("bf"), 0) == 1.0 && ir_tensor_getf(CV("bf"), 1) == 2.0);
    ck_assert_int_eq(((int32_t *)CV("i32")->data)[1], 1 << 30);
    ck_assert_int_eq(((int64_t *)CV("i64")->data)[0], -(1LL << 40));
    ck_assert(((double *)CV("f64")->data)[1] == 1e300);
    ck_assert_uint_eq(((uint32_t *)CV("u32")->data)[0], 4000000000u);
    ck_assert(((uint64_t *)CV("u64")->data)[0] == UINT64_MAX);
    c = CV("scalar");
    ck_assert_int_eq(c->rank, 0);
    ck_assert_int_eq(c->numel, 1);
    ck_assert(((float *)c->data)[0] == 42);
    ck_assert_int_eq(CV("empty")->numel, 0);
#undef CV
    ir_graph_destroy(g);
    tfree();
}
END_TEST

START_TEST(initializers_from_raw_data)
{
    Onnx__ModelProto *m = new_model(13);
    int64_t dims[] = {2, 2};
    Onnx__TensorProto *t = tensor("w", F32, 2, dims);
    float v[] = {1, 2, 3, 4};
    set_raw(t, v, sizeof v);
    add_init(m, t);
    t = tensor("i", I64, 1, (int64_t[]){3});
    int64_t iv[] = {-1, 0, 1LL << 50};
    set_raw(t, iv, sizeof iv);
    add_init(m, t);
    t = tensor("b", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 1, (int64_t[]){3});
    uint8_t bv[] = {0, 1, 7};
    set_raw(t, bv, sizeof bv);
    add_init(m, t);
    icc_diag d;
    ir_graph *g = load_inits(m, &d);
    ck_assert_msg(g, "%s", d.msg);
    const ir_tensor *c = &find_value(g, "w")->cval;
    ck_assert_int_eq(c->rank, 2);
    ck_assert(!memcmp(c->data, v, sizeof v));
    ck_assert(!memcmp(find_value(g, "i")->cval.data, iv, sizeof iv));
    ck_assert_int_eq(((uint8_t *)find_value(g, "b")->cval.data)[2], 1);
    ir_graph_destroy(g);
    tfree();
}
END_TEST

static void expect_init_error(Onnx__TensorProto *t, const char *want)
{
    Onnx__ModelProto *m = new_model(13);
    add_init(m, t);
    add_output(m, t->name, F32, NULL);
    expect_error(m, want);
}

START_TEST(tensor_size_errors)
{
    /* product overflows even though a dim is 0, in either order */
    int64_t o1[] = {1LL << 32, 1LL << 32, 0}, o2[] = {0, 1LL << 32, 1LL << 32};
    expect_init_error(tensor("w", F32, 3, o1), "tensor 'w': the product of the dims overflows");
    expect_init_error(tensor("w", F32, 3, o2), "tensor 'w': the product of the dims overflows");
    expect_init_error(tensor("w", F32, 2, (int64_t[]){3, -1}),
                      "tensor 'w': dim 1 is negative (-1)");
    expect_init_error(tensor("w", F32, 2, (int64_t[]){1LL << 30, 1LL << 30}),
                      "tensor 'w': 1152921504606846976 elements of f32 exceed the tensor size "
                      "limit");
    expect_init_error(tensor("w", F32, 9, (int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1}),
                      "tensor 'w': 9 dims exceed the maximum rank of 8");

    Onnx__TensorProto *t = tensor("w", F32, 1, (int64_t[]){3});
    float two[] = {1, 2};
    set_raw(t, two, sizeof two);
    expect_init_error(t, "tensor 'w': raw_data has 8 bytes, expected 12");

    t = tensor("w", F32, 1, (int64_t[]){3});
    t->n_float_data = 2;
    t->float_data = T(8);
    expect_init_error(t, "tensor 'w': float_data has 2 values, expected 3 (dtype FLOAT)");

    t = tensor("w", I64, 1, (int64_t[]){2});
    t->n_float_data = 2;
    t->float_data = T(8);
    expect_init_error(t, "tensor 'w': int64_data has 0 values, expected 2 (dtype INT64)");

    t = tensor("s", ONNX__TENSOR_PROTO__DATA_TYPE__STRING, 1, (int64_t[]){1});
    expect_init_error(t, "tensor 's': dtype STRING (8) is not supported");
    t = tensor("f8", 17 /* FLOAT8E4M3FN, IR version 9 */, 1, (int64_t[]){1});
    expect_init_error(t, "tensor 'f8': dtype FLOAT8E4M3FN (17) is not supported");
    t = tensor("c", ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX64, 0, NULL);
    expect_init_error(t, "tensor 'c': dtype COMPLEX64 (14) is not supported");
    tfree();
}
END_TEST

/* ---- Constant ----------------------------------------------------------- */

START_TEST(constant_value_forms)
{
    Onnx__ModelProto *m = new_model(13);
    Onnx__TensorProto *t = tensor("", ONNX__TENSOR_PROTO__DATA_TYPE__INT32, 1, (int64_t[]){2});
    t->n_int32_data = 2;
    t->int32_data = T(8);
    t->int32_data[0] = 5;
    t->int32_data[1] = -6;
    a_tensor(add_node(m, "Constant", "k0", "", "c0"), "value", t);
    a_float(add_node(m, "Constant", "k1", "", "c1"), "value_float", 2.5f);
    a_floats(add_node(m, "Constant", "k2", "", "c2"), "value_floats", 3, (float[]){1, 2, 3});
    a_int(add_node(m, "Constant", "k3", "", "c3"), "value_int", -9);
    a_ints(add_node(m, "Constant", "k4", "", "c4"), "value_ints", 2, (int64_t[]){7, 8});
    for (int i = 0; i < 5; i++) {
        char nm[4] = {'c', (char)('0' + i), 0};
        add_output(m, nm, F32, NULL);
    }
    icc_diag d;
    ir_graph *g = load(m, true, &d);
    ck_assert_msg(g, "%s", d.msg);
    ck_assert_int_eq(g->nnodes, 0);
    const ir_tensor *c = &find_value(g, "c0")->cval;
    ck_assert_int_eq(c->dtype, IR_I32);
    ck_assert_int_eq(((int32_t *)c->data)[1], -6);
    c = &find_value(g, "c1")->cval;
    ck_assert(c->dtype == IR_F32 && c->rank == 0 && ((float *)c->data)[0] == 2.5f);
    c = &find_value(g, "c2")->cval;
    ck_assert(c->rank == 1 && c->dims[0] == 3 && ((float *)c->data)[2] == 3);
    c = &find_value(g, "c3")->cval;
    ck_assert(c->dtype == IR_I64 && c->rank == 0 && ((int64_t *)c->data)[0] == -9);
    c = &find_value(g, "c4")->cval;
    ck_assert(c->dtype == IR_I64 && c->dims[0] == 2 && ((int64_t *)c->data)[1] == 8);
    ir_graph_destroy(g);

    m = new_model(13);
    a_str(add_node(m, "Constant", "ks", "", "s"), "value_string", "hi");
    add_output(m, "s", F32, NULL);
    expect_error(m, "node 'ks' (Constant): string constants are not supported");
    m = new_model(13);
    Onnx__NodeProto *n = add_node(m, "Constant", "sp", "", "s");
    Onnx__AttributeProto *a =
        add_attr(n, "sparse_value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR);
    a->sparse_tensor = T(sizeof(Onnx__SparseTensorProto));
    onnx__sparse_tensor_proto__init(a->sparse_tensor);
    add_output(m, "s", F32, NULL);
    expect_error(m, "node 'sp' (Constant): sparse constants are not supported");
    m = new_model(13);
    t = tensor("", F32, 1, (int64_t[]){4});
    a_tensor(add_node(m, "Constant", "kb", "", "s"), "value", t);
    add_output(m, "s", F32, NULL);
    expect_error(m, "node 'kb' (Constant): attribute 'value': float_data has 0 values, expected 4");
    tfree();
}
END_TEST

/* ---- external data -------------------------------------------------------- */

static char tmpdir[64];

static void write_file(const char *rel, const void *data, size_t n)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", tmpdir, rel);
    FILE *f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

static void rm_tmpdir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

static Onnx__ModelProto *ext_model(const char *loc, const char *off, const char *len)
{
    Onnx__ModelProto *m = new_model(13);
    Onnx__TensorProto *t = tensor("w", F32, 1, (int64_t[]){4});
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    const char *kv[3][2] = {{"location", loc}, {"offset", off}, {"length", len}};
    for (int i = 0; i < 3; i++) {
        if (!kv[i][1])
            continue;
        Onnx__StringStringEntryProto *e = T(sizeof *e);
        onnx__string_string_entry_proto__init(e);
        e->key = S(kv[i][0]);
        e->value = S(kv[i][1]);
        PUSH(t->external_data, t->n_external_data, e);
    }
    add_init(m, t);
    add_output(m, "w", F32, NULL);
    return m;
}

static void expect_ext_error(const char *loc, const char *off, const char *len, const char *want)
{
    icc_diag d;
    ir_graph *g = load_dir(ext_model(loc, off, len), tmpdir, true, &d);
    if (g)
        ir_graph_destroy(g);
    ck_assert_msg(!g, "external '%s' loaded", loc);
    ck_assert_msg(strstr(d.msg, want), "message '%s' lacks '%s'", d.msg, want);
}

/* A payload of at least FE_MAP_MIN_BYTES at an offset aligned for its dtype
 * is mapped, not read: the values are the file's, a write to the constant stays in
 * this process (the mapping is private), and the graph unmaps it. The same
 * bytes at an unaligned offset are read as before. */
/* whether this process maps a file whose name ends in name */
static bool maps_file(const char *name)
{
    FILE *f = fopen("/proc/self/maps", "r");
    ck_assert_ptr_nonnull(f);
    char line[1024];
    bool found = false;
    size_t n = strlen(name);
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        size_t l = strlen(line);
        found |= l >= n && !strcmp(line + l - n, name);
    }
    fclose(f);
    return found;
}

static Onnx__ModelProto *big_ext_model(const char *off, int64_t n)
{
    Onnx__ModelProto *m = ext_model("big.bin", off, NULL);
    m->graph->initializer[0]->dims[0] = n;
    return m;
}

START_TEST(external_data_mapped)
{
    strcpy(tmpdir, "/tmp/icc_fe_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    const int64_t n = (1 << 20) / 4 + 16;  /* a little over 1 MiB of f32 */
    float *payload = malloc(sizeof(float) * (size_t)(n + 16));
    ck_assert_ptr_nonnull(payload);
    for (int64_t i = 0; i < n + 16; i++)
        payload[i] = (float)i;
    write_file("big.bin", payload, sizeof(float) * (size_t)(n + 16));
    const char *offs[2] = {"12", "6"}; /* mapped; read (not aligned for f32) */
    for (int k = 0; k < 2; k++) {
        icc_diag d;
        ir_graph *g = load_dir(big_ext_model(offs[k], n), tmpdir, true, &d);
        ck_assert_msg(g, "%s", d.msg);
        float *v = find_value(g, "w")->cval.data;
        ck_assert(!memcmp(v, (const char *)payload + atoi(offs[k]), sizeof(float) * (size_t)n));
        ck_assert_int_eq(maps_file("big.bin"), k == 0);
        v[0] = -1;  /* private: the file keeps its bytes */
        ir_graph_destroy(g);
        ck_assert(!maps_file("big.bin"));
    }
    char p[256];
    snprintf(p, sizeof p, "%s/big.bin", tmpdir);
    FILE *f = fopen(p, "rb");
    ck_assert_ptr_nonnull(f);
    float head[17];
    ck_assert_uint_eq(fread(head, sizeof(float), 17, f), 17);
    fclose(f);
    ck_assert(head[1] == 1 && head[16] == 16);
    free(payload);
    rm_tmpdir();
}
END_TEST

START_TEST(external_data)
{
    strcpy(tmpdir, "/tmp/icc_fe_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    float payload[5] = {99, 1, 2, 3, 4};
    write_file("w.bin", payload, sizeof payload);
    char p[256], q[256];
    snprintf(p, sizeof p, "%s/sub", tmpdir);
    ck_assert_int_eq(mkdir(p, 0700), 0);
    write_file("sub/w2.bin", payload + 1, 16);

    icc_diag d;
    ir_graph *g = load_dir(ext_model("w.bin", "4", "16"), tmpdir, true, &d);
    ck_assert_msg(g, "%s", d.msg);
    const float *v = find_value(g, "w")->cval.data;
    ck_assert(v[0] == 1 && v[3] == 4);
    ir_graph_destroy(g);
    g = load_dir(ext_model("./sub/w2.bin", NULL, NULL), tmpdir, true, &d);
    ck_assert_msg(g, "%s", d.msg);
    ck_assert(((float *)find_value(g, "w")->cval.data)[2] == 3);
    ir_graph_destroy(g);

    /* a model file next to its data loads through the public API */
    size_t len;
    uint8_t *b = pack(ext_model("w.bin", "4", NULL), &len);
    write_file("m.onnx", b, len);
    snprintf(p, sizeof p, "%s/m.onnx", tmpdir);
    g = icc_onnx_load_file(p, &d);
    ck_assert_msg(g, "%s", d.msg);
    ir_graph_destroy(g);

    expect_ext_error("../w.bin", NULL, NULL, "leaves the model's folder");
    expect_ext_error("sub/../w.bin", NULL, NULL, "leaves the model's folder");
    snprintf(p, sizeof p, "%s/w.bin", tmpdir);
    expect_ext_error(p, NULL, NULL, "is an absolute path");
    snprintf(q, sizeof q, "%s/link.bin", tmpdir);
    ck_assert_int_eq(symlink(p, q), 0);
    expect_ext_error("link.bin", NULL, NULL, "is a symlink");
    snprintf(p, sizeof p, "%s/sub", tmpdir);
    snprintf(q, sizeof q, "%s/lsub", tmpdir);
    ck_assert_int_eq(symlink(p, q), 0);
    expect_ext_error("lsub/w2.bin", NULL, NULL, "'lsub' is a symlink");
    expect_ext_error("w.bin", "8", "16",
                     "offset 8 + length 16 is past the end of the file (20 bytes)");
    expect_ext_error("w.bin", "18446744073709551615", NULL, "is not a valid byte count");
    expect_ext_error("w.bin", "4x", NULL, "is not a valid byte count");
    expect_ext_error("w.bin", "0", "12", "length 12 does not match the declared size of 16");
    expect_ext_error("sub", NULL, NULL, "is not a regular file");
    expect_ext_error("absent.bin", NULL, NULL, "No such file");
    expect_ext_error("", NULL, NULL, "location is empty");

    /* from memory without a folder: refused */
    g = load(ext_model("w.bin", NULL, NULL), true, &d);
    ck_assert_ptr_null(g);
    ck_assert_msg(strstr(d.msg, "tensor 'w': external data 'w.bin' is not allowed"), "%s", d.msg);
    rm_tmpdir();
    tfree();
}
END_TEST

/* ---- hostile bytes ------------------------------------------------------ */

/* Nested length-delimited fields, outermost first: fields[0], then
 * fields[1 + (i % nrep)] repeated, levels in all. */
static uint8_t *nest(int first, const int *rep, int nrep, int levels, size_t *len)
{
    size_t cap = (size_t)levels * 12 + 16;
    uint8_t *buf = T(cap), *p = buf + cap;
    size_t inner = 0;
    for (int i = levels - 1; i >= 0; i--) {
        int field = i == 0 ? first : rep[(i - 1) % nrep];
        uint8_t tmp[12];
        int n = 0;
        tmp[n++] = (uint8_t)(field << 3 | 2);
        for (uint64_t v = inner;; v >>= 7) {
            tmp[n] = (uint8_t)(v & 0x7f);
            if (v >= 0x80)
                tmp[n] |= 0x80;
            n++;
            if (v < 0x80)
                break;
        }
        p -= n;
        memcpy(p, tmp, (size_t)n);
        inner += (size_t)n;
    }
    *len = inner;
    return p;
}

START_TEST(deep_nesting_rejected)
{
    static const int graph_chain[] = {1, 5, 6};  /* Graph.node, Node.attribute, Attribute.g */
    static const int type_chain[] = {4, 1};      /* TypeProto.sequence_type, Sequence.elem_type */
    size_t len;
    icc_diag d;
    /* 63 fields below ModelProto is depth 64: accepted by the walker */
    uint8_t *b = nest(7, graph_chain, 3, ICC_ONNX_MAX_DEPTH - 1, &len);
    ck_assert_int_eq(fe_wire_check(b, len, &onnx__model_proto__descriptor, &d), 0);
    b = nest(7, graph_chain, 3, ICC_ONNX_MAX_DEPTH, &len);
    ck_assert_int_eq(fe_wire_check(b, len, &onnx__model_proto__descriptor, &d), -1);
    ck_assert_msg(strstr(d.msg, "nested deeper than 64"), "%s", d.msg);

    b = nest(7, graph_chain, 3, 100000, &len);
    ck_assert_ptr_null(fe_import_buffer(b, len, NULL, "deep.onnx", true, &d));
    ck_assert_msg(!strncmp(d.msg, "deep.onnx: messages nested deeper than 64", 41), "%s", d.msg);

    /* TypeProto recursion through graph.input[0].type */
    uint8_t *inner = nest(2, type_chain, 2, 100000, &len);
    /* wrap: Model.graph(7) { Graph.input(11) { <inner> } } */
    uint8_t *w = T(len + 16);
    size_t n = 0;
    uint8_t hdr[16];
    size_t l1 = len, l0;
    int k = 0;
    hdr[k++] = 11 << 3 | 2;
    for (uint64_t v = l1;; v >>= 7) {
        hdr[k++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
        if (v < 0x80)
            break;
    }
    l0 = l1 + (size_t)k;
    w[n++] = 7 << 3 | 2;
    for (uint64_t v = l0;; v >>= 7) {
        w[n++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
        if (v < 0x80)
            break;
    }
    memcpy(w + n, hdr, (size_t)k);
    memcpy(w + n + (size_t)k, inner, len);
    ck_assert_ptr_null(fe_import_buffer(w, n + (size_t)k + len, NULL, "t.onnx", true, &d));
    ck_assert_msg(strstr(d.msg, "nested deeper than 64"), "%s", d.msg);
    tfree();
}
END_TEST

START_TEST(truncated_and_garbage_bytes)
{
    Onnx__ModelProto *m = new_model(13);
    add_input(m, "x", F32, "2,3");
    int64_t dims[] = {3};
    Onnx__TensorProto *t = tensor("b", F32, 1, dims);
    set_raw(t, (float[]){1, 2, 3}, 12);
    add_init(m, t);
    add_node(m, "Add", "a", "x,b", "y");
    add_output(m, "y", F32, "2,3");
    size_t len;
    uint8_t *b = pack(m, &len);
    icc_diag d;
    ir_graph *g = fe_import_buffer(b, len - 1, NULL, "cut.onnx", true, &d);
    ck_assert_ptr_null(g);
    ck_assert_msg(strstr(d.msg, "cut.onnx: malformed protobuf"), "%s", d.msg);
    /* every prefix: an error or (at a field boundary) a smaller valid model */
    for (size_t cut = 0; cut < len; cut++) {
        g = fe_import_buffer(b, cut, NULL, "cut.onnx", true, &d);
        ir_graph_destroy(g);
    }
    /* overlong varint, length past the end, group wire type */
    static const uint8_t bad1[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
                                   0xff, 0xff, 0xff, 0xff, 0x7f};
    static const uint8_t bad2[] = {0x3a, 0x05, 0x0a};
    static const uint8_t bad3[] = {0x0b};
    ck_assert_ptr_null(fe_import_buffer(bad1, sizeof bad1, NULL, "x", true, &d));
    ck_assert_msg(strstr(d.msg, "bad or truncated varint"), "%s", d.msg);
    ck_assert_ptr_null(fe_import_buffer(bad2, sizeof bad2, NULL, "x", true, &d));
    ck_assert_msg(strstr(d.msg, "claims 5 bytes, only 1 remain"), "%s", d.msg);
    ck_assert_ptr_null(fe_import_buffer(bad3, sizeof bad3, NULL, "x", true, &d));
    ck_assert_msg(strstr(d.msg, "group"), "%s", d.msg);
    /* random bytes: never a crash */
    uint32_t s = 12345;
    uint8_t junk[96];
    for (int r = 0; r < 2000; r++) {
        for (size_t i = 0; i < sizeof junk; i++) {
            s = s * 1103515245u + 12345u;
            junk[i] = (uint8_t)(s >> 16);
        }
        ir_graph_destroy(fe_import_buffer(junk, sizeof junk, NULL, "j", true, &d));
    }
    /* flipping each byte of a valid model: never a crash */
    for (size_t i = 0; i < len; i++) {
        uint8_t *c = T(len);
        memcpy(c, b, len);
        c[i] ^= 0xa5;
        ir_graph_destroy(fe_import_buffer(c, len, NULL, "flip", true, &d));
    }
    tfree();
}
END_TEST

/* ---- tensor files and real models ----------------------------------------- */

START_TEST(tensor_file)
{
    strcpy(tmpdir, "/tmp/icc_fe_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    Onnx__TensorProto *t = tensor("input_0", I64, 2, (int64_t[]){2, 2});
    set_raw(t, (int64_t[]){1, -2, 3, -4}, 32);
    size_t len = onnx__tensor_proto__get_packed_size(t);
    uint8_t *b = T(len);
    onnx__tensor_proto__pack(t, b);
    write_file("t.pb", b, len);
    write_file("cut.pb", b, len - 3);
    char p[256];
    snprintf(p, sizeof p, "%s/t.pb", tmpdir);
    ir_tensor out;
    char *name;
    icc_diag d;
    ck_assert_msg(icc_onnx_load_tensor_file(p, &out, &name, &d) == 0, "%s", d.msg);
    ck_assert_str_eq(name, "input_0");
    ck_assert(out.dtype == IR_I64 && out.rank == 2 && out.numel == 4);
    ck_assert_int_eq(((int64_t *)out.data)[3], -4);
    free(out.data);
    free(name);
    snprintf(p, sizeof p, "%s/cut.pb", tmpdir);
    ck_assert_int_eq(icc_onnx_load_tensor_file(p, &out, &name, &d), -1);
    ck_assert_msg(strstr(d.msg, "cut.pb: malformed protobuf"), "%s", d.msg);
    ck_assert_ptr_null(name);
    snprintf(p, sizeof p, "%s/none.pb", tmpdir);
    ck_assert_int_eq(icc_onnx_load_tensor_file(p, &out, NULL, &d), -1);
    ck_assert_int_eq(icc_onnx_load_tensor_file(tmpdir, &out, NULL, &d), -1);
    ck_assert_msg(strstr(d.msg, "not a regular file"), "%s", d.msg);
    rm_tmpdir();
    tfree();
}
END_TEST

START_TEST(onnx_test_data_tensor)
{
    const char *p = ONNX_DATA "/node/test_relu/test_data_set_0/input_0.pb";
    if (access(p, R_OK)) {
        printf("note: %s absent (onnx pip package); skipped\n", p);
        return;
    }
    ir_tensor out;
    icc_diag d;
    ck_assert_msg(icc_onnx_load_tensor_file(p, &out, NULL, &d) == 0, "%s", d.msg);
    ck_assert(out.dtype == IR_F32 && out.rank == 3 && out.dims[0] == 3 && out.dims[2] == 5);
    free(out.data);
}
END_TEST

static Suite *frontend_data_suite(void)
{
    Suite *s = suite_create("frontend_data");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, initializers_from_typed_fields);
    tcase_add_test(tc, initializers_from_raw_data);
    tcase_add_test(tc, tensor_size_errors);
    tcase_add_test(tc, constant_value_forms);
    tcase_add_test(tc, external_data);
    tcase_add_test(tc, external_data_mapped);
    tcase_add_test(tc, deep_nesting_rejected);
    tcase_add_test(tc, truncated_and_garbage_bytes);
    tcase_add_test(tc, tensor_file);
    tcase_add_test(tc, onnx_test_data_tensor);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return icc_run_suite(frontend_data_suite());
}
