/* gen_graph.c - random valid graphs for the differential fuzzer.
 *
 * A case is one or two graph inputs (rank 1-4, dims 1-6, a long last dim
 * up to 33 or 8/16 channels now and then; f32 mostly, some i64/i32) and
 * 1-8 nodes, each taking its operands from the values made so far
 * (inputs, node outputs, fresh random constants): the elementwise,
 * contraction (MatMul, Gemm, Einsum), window (Conv, ConvTranspose, the
 * pools), reduction, normalization and movement families, with their
 * attributes drawn (docs/testing.md lists them). Each node
 * is shape-inferred as it is added (the registry is the only source of
 * shapes). The graph's outputs are the last node's and those of the
 * other nodes nothing reads (up to 4), sometimes one more that nodes do
 * read, or a graph input.
 *
 * Operations whose result jumps on a tiny change of input (Floor, Round,
 * Sign, comparisons, casts to integers, ArgMax, Mod) only read "exact"
 * values, ones both sides compute bit for bit (inputs, constants,
 * movement and integer results), so rounding differences of the float
 * arithmetic before them never flip their results into false alarms.
 */
#include "gen_graph.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ops.h"
#include "ir/ref/interp.h"
#include "passes/pass.h"

#define MAX_POOL 48
#define MAX_NUMEL 2048
#define MAX_INPUTS 8

typedef struct gs {
    const uint8_t *data;
    size_t size, pos;
    uint64_t rng;
    ir_graph *g;
    icc_diag *d;
    bool failed;
    ir_value *pool[MAX_POOL];
    bool exact[MAX_POOL];
    int npool;
    int names;
    int tol;
    /* graph inputs that are Gather indices, and the dim they index */
    int nidx, idx_input[MAX_INPUTS];
    int64_t idx_dim[MAX_INPUTS];
} gs;

static uint64_t splitmix(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void gen_random_bytes(uint64_t seed, uint8_t *buf, size_t n)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (uint8_t)(splitmix(&seed) >> 56);
}

static unsigned byte(gs *s)
{
    if (s->pos < s->size)
        return s->data[s->pos++];
    return (unsigned)(splitmix(&s->rng) >> 56);
}

/* A choice in [0, n). */
static int rnd(gs *s, int n)
{
    if (n <= 1)
        return 0;
    unsigned v = n <= 256 ? byte(s) : byte(s) << 8 | byte(s);
    return (int)(v % (unsigned)n);
}

static bool chance(gs *s, int percent) { return rnd(s, 100) < percent; }

/* Float data: mostly in [-2, 2], quantized to 1/64 now and then. */
static float rfloat(gs *s)
{
    float v = (float)(splitmix(&s->rng) >> 40) / (float)(1 << 24) * 4.0f - 2.0f;
    return v;
}

static void tol(gs *s, int t)
{
    if (t > s->tol)
        s->tol = t;
}

static int64_t numel(const ir_value *v)
{
    int64_t n = 1;
    for (int i = 0; i < v->type.rank; i++)
        n *= v->type.dims[i].v;
    return n;
}

static void set_type(ir_type *t, ir_dtype dt, int rank, const int64_t *dims)
{
    memset(t, 0, sizeof *t);
    t->dtype = dt;
    t->rank = rank;
    for (int i = 0; i < rank; i++)
        t->dims[i] = ir_dim_const(dims[i]);
}

static void dims_of(const ir_value *v, int64_t *dims)
{
    for (int i = 0; i < v->type.rank; i++)
        dims[i] = v->type.dims[i].v;
}

static void fill(gs *s, ir_tensor *t)
{
    for (int64_t i = 0; i < t->numel; i++) {
        if (t->dtype == IR_BOOL)
            ir_tensor_seti(t, i, rnd(s, 2));
        else if (ir_dtype_is_float(t->dtype))
            ir_tensor_setf(t, i, rfloat(s));
        else
            ir_tensor_seti(t, i, rnd(s, 11) - 5);
    }
}

static ir_value *constant(gs *s, ir_dtype dt, int rank, const int64_t *dims)
{
    ir_type t;
    set_type(&t, dt, rank, dims);
    char nm[16];
    snprintf(nm, sizeof nm, "c%d", s->names++);
    ir_value *c = ir_graph_add_const(s->g, nm, &t, NULL, s->d);
    if (!c) {
        s->failed = true;
        return NULL;
    }
    fill(s, &c->cval);
    return c;
}

static ir_value *ints(gs *s, int n, const int64_t *v)
{
    ir_type t;
    int64_t len = n;
    set_type(&t, IR_I64, 1, &len);
    char nm[16];
    snprintf(nm, sizeof nm, "k%d", s->names++);
    ir_value *c = ir_graph_add_const(s->g, nm, &t, v, s->d);
    if (!c)
        s->failed = true;
    return c;
}

static ir_value *scalar_f(gs *s, float v)
{
    ir_type t;
    set_type(&t, IR_F32, 0, NULL);
    char nm[16];
    snprintf(nm, sizeof nm, "c%d", s->names++);
    ir_value *c = ir_graph_add_const(s->g, nm, &t, &v, s->d);
    if (!c)
        s->failed = true;
    return c;
}

static ir_node *node(gs *s, int op, int nin, ir_value *const *in)
{
    /* a NULL input is an omitted optional one; a constant that failed to
     * be made has set s->failed */
    if (s->failed)
        return NULL;
    char nm[16];
    snprintf(nm, sizeof nm, "v%d", s->names++);
    const char *on = nm;
    ir_node *n = ir_graph_add_node(s->g, op, "", nin, in, 1, &on, s->d);
    if (!n)
        s->failed = true;
    return n;
}

/* Infers n's type and adds its output to the pool. */
static ir_value *finish(gs *s, ir_node *n, bool exact)
{
    if (!n || s->failed)
        return NULL;
    if (ir_infer_node(n, s->d) < 0) {
        ir_diag_prefix(s->d, "generator: %s", ir_ops[n->op].name);
        s->failed = true;
        return NULL;
    }
    ir_value *v = n->out[0];
    if (!ir_type_is_static(&v->type)) {
        ir_errorf(s->d, "generator: %s: output type is not static", ir_ops[n->op].name);
        s->failed = true;
        return NULL;
    }
    if (s->npool < MAX_POOL) {
        s->exact[s->npool] = exact;
        s->pool[s->npool++] = v;
    }
    return v;
}

static bool is_exact(const gs *s, const ir_value *v)
{
    for (int i = 0; i < s->npool; i++)
        if (s->pool[i] == v)
            return s->exact[i];
    return v->kind != IR_VAL_NODE;
}

/* A pool value whose dtype passes `want` (f32; f32, f64 or f16; an
 * integer; bool; any number; anything), rank in [lo, hi], and, when exact_only, exact.
 * Half the time one of the newest, so chains grow long. NULL if none. */
enum { W_FLOAT, W_REAL, W_INT, W_BOOL, W_NUM, W_ANY };

static bool wants(const ir_value *v, int want)
{
    ir_dtype t = v->type.dtype;
    switch (want) {
    case W_FLOAT: return t == IR_F32;
    case W_REAL: return t == IR_F32 || t == IR_F64 || t == IR_F16;
    case W_INT: return t == IR_I64 || t == IR_I32;
    case W_BOOL: return t == IR_BOOL;
    case W_NUM: return t != IR_BOOL;
    default: return true;
    }
}

static ir_value *pick(gs *s, int want, int lo, int hi, bool exact_only)
{
    int cand[MAX_POOL], n = 0;
    for (int i = 0; i < s->npool; i++) {
        const ir_value *v = s->pool[i];
        if (wants(v, want) && v->type.rank >= lo && v->type.rank <= hi && (!exact_only || s->exact[i]))
            cand[n++] = i;
    }
    if (!n)
        return NULL;
    if (n > 2 && chance(s, 50))
        return s->pool[cand[n - 1 - rnd(s, 2)]];
    return s->pool[cand[rnd(s, n)]];
}

/* A shape that broadcasts with a's: a's suffix with some dims 1, sometimes
 * with a leading dim more. */
static int partner_shape(gs *s, const ir_value *a, int64_t *dims)
{
    int ra = a->type.rank;
    int r = chance(s, 30) ? rnd(s, ra + 1) : ra;
    int lead = r == ra && ra < 4 && chance(s, 15);
    for (int i = 0; i < r; i++) {
        int64_t d = a->type.dims[ra - r + i].v;
        dims[lead + i] = chance(s, 25) ? 1 : d;
    }
    if (lead)
        dims[0] = 1 + rnd(s, 3);
    return r + lead;
}

static bool broadcasts(const ir_value *a, const ir_value *b)
{
    int ra = a->type.rank, rb = b->type.rank;
    int64_t n = 1;
    for (int i = 1; i <= ra || i <= rb; i++) {
        int64_t x = i <= ra ? a->type.dims[ra - i].v : 1, y = i <= rb ? b->type.dims[rb - i].v : 1;
        if (x != y && x != 1 && y != 1)
            return false;
        n *= x > y ? x : y;
    }
    return n <= MAX_NUMEL;
}

/* A second operand for a: another pool value that broadcasts with it, or
 * a constant of a partner shape. */
static ir_value *partner(gs *s, ir_value *a, bool exact_only)
{
    if (chance(s, 35))
        for (int tries = 0; tries < 4; tries++) {
            ir_value *b = pick(s, W_ANY, 0, 4, exact_only);
            if (b && b->type.dtype == a->type.dtype && broadcasts(a, b))
                return b;
        }
    int64_t dims[IR_MAX_RANK];
    int r = partner_shape(s, a, dims);
    return constant(s, a->type.dtype, r, dims);
}

/* ---- the op families --------------------------------------------------- */

static void gen_unary(gs *s)
{
    static const int smooth[] = {
        IR_OP_RELU, IR_OP_TANH, IR_OP_SIGMOID, IR_OP_EXP, IR_OP_LOG, IR_OP_SQRT, IR_OP_ABS, IR_OP_NEG,
        IR_OP_ERF, IR_OP_SIN, IR_OP_COS, IR_OP_RECIPROCAL, IR_OP_LEAKY_RELU, IR_OP_ELU, IR_OP_SELU,
        IR_OP_HARD_SIGMOID, IR_OP_HARD_SWISH, IR_OP_SOFTPLUS, IR_OP_GELU, IR_OP_ATAN, IR_OP_MISH, IR_OP_CELU,
        IR_OP_TAN, IR_OP_ASIN, IR_OP_ACOS, IR_OP_SINH, IR_OP_COSH, IR_OP_ASINH, IR_OP_ACOSH, IR_OP_ATANH,
        IR_OP_SOFTSIGN,
    };
    static const int jumpy[] = {IR_OP_FLOOR, IR_OP_CEIL, IR_OP_ROUND, IR_OP_SIGN, IR_OP_THRESHOLDED_RELU,
                                IR_OP_SHRINK, IR_OP_IS_NAN, IR_OP_IS_INF};
    static const int on_ints[] = {IR_OP_RELU, IR_OP_ABS, IR_OP_NEG, IR_OP_SIGN};
    int kind = rnd(s, 10);
    ir_value *a;
    int op;
    bool exact;
    if (kind < 6 && (a = pick(s, W_REAL, 0, 4, false))) {
        op = smooth[rnd(s, (int)(sizeof smooth / sizeof *smooth))];
        /* these amplify their operand's rounding without bound (sin and
         * cos of 1e4 from a Conv of the 1e4 special, tan near pi/2, the
         * inverses near +-1), so a computed operand's last-bit difference
         * between the interpreter's doubles and compiled f32 becomes a
         * large one in the result: they take exact operands only */
        bool touchy = op == IR_OP_SIN || op == IR_OP_COS || op == IR_OP_TAN || op == IR_OP_ASIN ||
                      op == IR_OP_ACOS || op == IR_OP_ATANH || op == IR_OP_ACOSH;
        if (touchy && !is_exact(s, a) && !(a = pick(s, W_REAL, 0, 4, true)))
            return;
        exact = is_exact(s, a) && (op == IR_OP_RELU || op == IR_OP_ABS || op == IR_OP_NEG);
        tol(s, exact ? 0 : a->type.dtype == IR_F16 ? 3 : op == IR_OP_RECIPROCAL || op == IR_OP_SQRT || op == IR_OP_HARD_SIGMOID ||
                                   op == IR_OP_HARD_SWISH || op == IR_OP_LEAKY_RELU
                               ? 1
                               : 2);
    } else if (kind < 8 && (a = pick(s, W_FLOAT, 0, 4, true))) {
        op = jumpy[rnd(s, (int)(sizeof jumpy / sizeof *jumpy))];
        exact = true;
    } else if ((a = pick(s, W_INT, 0, 4, false))) {
        op = on_ints[rnd(s, 4)];
        exact = true;
    } else if ((a = pick(s, W_BOOL, 0, 4, false))) {
        op = IR_OP_NOT;
        exact = true;
    } else {
        return;
    }
    ir_node *n = node(s, op, 1, &a);
    if (!n)
        return;
    if (op == IR_OP_LEAKY_RELU || op == IR_OP_ELU || op == IR_OP_CELU)
        ir_node_set_float(s->g, n, "alpha", 0.25f + (float)rnd(s, 8) / 4.0f);
    if (op == IR_OP_GELU && chance(s, 50))
        ir_node_set_string(s->g, n, "approximate", "tanh");
    if (op == IR_OP_THRESHOLDED_RELU)
        ir_node_set_float(s->g, n, "alpha", (float)(rnd(s, 9) - 4) / 4.0f);
    if (op == IR_OP_SHRINK) {
        ir_node_set_float(s->g, n, "lambd", (float)rnd(s, 5) / 4.0f);
        ir_node_set_float(s->g, n, "bias", (float)rnd(s, 5) / 4.0f);
    }
    finish(s, n, exact);
}

static void gen_binary(gs *s)
{
    static const int fops[] = {IR_OP_ADD, IR_OP_SUB, IR_OP_MUL, IR_OP_DIV, IR_OP_MAX, IR_OP_MIN, IR_OP_POW,
                               IR_OP_PRELU};
    static const int iops[] = {IR_OP_ADD, IR_OP_SUB, IR_OP_MUL, IR_OP_DIV, IR_OP_MAX, IR_OP_MIN, IR_OP_MOD};
    bool on_int = chance(s, 25);
    ir_value *a = pick(s, on_int ? W_INT : W_REAL, 0, 4, false);
    if (!a && !(a = pick(s, W_NUM, 0, 4, false)))
        return;
    on_int = !ir_dtype_is_float(a->type.dtype);
    int op = on_int ? iops[rnd(s, 7)] : fops[rnd(s, 8)];
    ir_value *b;
    if (op == IR_OP_PRELU) {
        /* the slope broadcasts to x one way: a suffix of x's shape */
        int64_t dims[IR_MAX_RANK];
        int ra = a->type.rank, r = rnd(s, ra + 1);
        for (int i = 0; i < r; i++)
            dims[i] = chance(s, 40) ? 1 : a->type.dims[ra - r + i].v;
        b = constant(s, a->type.dtype, r, dims);
    } else if (op == IR_OP_POW) {
        b = chance(s, 50) ? scalar_f(s, (float)rnd(s, 4)) : partner(s, a, false);
    } else {
        b = partner(s, a, false);
    }
    if (!b)
        return;
    if (on_int && (op == IR_OP_DIV || op == IR_OP_MOD) && chance(s, 50) && b->kind == IR_VAL_CONST)
        for (int64_t i = 0; i < b->cval.numel; i++)
            if (ir_tensor_geti(&b->cval, i) == 0)
                ir_tensor_seti(&b->cval, i, 3);
    ir_value *in[2] = {a, b};
    if (op != IR_OP_PRELU && op != IR_OP_POW && chance(s, 30)) {
        in[0] = b;
        in[1] = a;
    }
    ir_node *n = node(s, op, 2, in);
    if (n && op == IR_OP_MOD && chance(s, 30))
        ir_node_set_int(s->g, n, "fmod", 1);
    bool exact = on_int || ((op == IR_OP_MAX || op == IR_OP_MIN) && is_exact(s, a) && is_exact(s, b));
    if (!on_int)
        tol(s, exact ? 0 : a->type.dtype == IR_F16 ? 3 : op == IR_OP_POW ? 2 : 1);
    finish(s, n, exact);
}

/* A comparison of exact values, then often a Where choosing between two
 * values by it, or And/Or of two comparisons. */
static void gen_compare(gs *s)
{
    static const int ops[] = {IR_OP_LESS, IR_OP_GREATER, IR_OP_EQUAL, IR_OP_LESS_OR_EQUAL, IR_OP_GREATER_OR_EQUAL};
    ir_value *a = pick(s, W_NUM, 0, 4, true);
    if (!a)
        return;
    ir_value *b = partner(s, a, true);
    ir_value *in[2] = {a, b};
    ir_value *c = finish(s, node(s, ops[rnd(s, 5)], 2, in), true);
    if (!c)
        return;
    if (chance(s, 20)) {
        ir_value *c2 = pick(s, W_BOOL, 0, 4, false);
        if (c2 && c2 != c && broadcasts(c, c2)) {
            ir_value *li[2] = {c, c2};
            static const int logic[] = {IR_OP_AND, IR_OP_OR, IR_OP_XOR};
            c = finish(s, node(s, logic[rnd(s, 3)], 2, li), true);
        }
    }
    if (c && chance(s, 75)) {
        ir_value *x = pick(s, W_NUM, 0, 4, false);
        if (!x || !broadcasts(c, x))
            x = a;
        ir_value *y = partner(s, x, false);
        ir_value *wi[3] = {c, x, y};
        if (broadcasts(c, y))
            finish(s, node(s, IR_OP_WHERE, 3, wi), is_exact(s, x) && is_exact(s, y));
    }
}

static void gen_cast(gs *s)
{
    static const ir_dtype from_float[] = {IR_I64, IR_I32, IR_I8, IR_U8, IR_BOOL, IR_F16, IR_F64};
    ir_value *a = pick(s, W_ANY, 0, 4, true);
    if (!a)
        return;
    ir_dtype to;
    if (a->type.dtype == IR_F32)
        to = from_float[rnd(s, 7)];
    else
        to = chance(s, 70) ? IR_F32 : a->type.dtype == IR_I64 ? IR_I32 : IR_I64;
    ir_node *n = node(s, IR_OP_CAST, 1, &a);
    if (!n)
        return;
    ir_node_set_int(s->g, n, "to", ir_dtype_to_onnx(to));
    ir_value *v = finish(s, n, true);
    /* back to f32 (bool, small ints: values the rest cannot take; f16 and
     * f64 half the time, else elementwise ops and reductions take them) */
    if (v && to != IR_F32 && to != IR_I64 && to != IR_I32 &&
        (!(to == IR_F16 || to == IR_F64) || chance(s, 50))) {
        ir_node *m = node(s, IR_OP_CAST, 1, &v);
        if (m) {
            ir_node_set_int(s->g, m, "to", ir_dtype_to_onnx(IR_F32));
            finish(s, m, true);
        }
    }
}

static void gen_clip(gs *s)
{
    ir_value *a = pick(s, W_FLOAT, 0, 4, false);
    if (!a)
        return;
    float lo = -(float)rnd(s, 8) / 4.0f, hi = (float)rnd(s, 8) / 4.0f;
    if (chance(s, 15))
        hi = lo - 0.5f; /* min > max: every element becomes max */
    ir_value *in[3] = {a, chance(s, 80) ? scalar_f(s, lo) : NULL, chance(s, 80) ? scalar_f(s, hi) : NULL};
    int nin = in[2] ? 3 : in[1] ? 2 : 1;
    finish(s, node(s, IR_OP_CLIP, nin, in), is_exact(s, a));
}

static void gen_matmul(gs *s)
{
    ir_value *a = pick(s, W_FLOAT, 1, 4, false);
    if (!a)
        return;
    int ra = a->type.rank;
    int64_t k = a->type.dims[ra - 1].v, bd[IR_MAX_RANK];
    int rb = chance(s, 70) || ra < 3 ? 2 : ra;
    if (chance(s, 10))
        rb = 1;
    for (int i = 0; i < rb - 2; i++)
        bd[i] = chance(s, 30) ? 1 : a->type.dims[ra - rb + i].v;
    if (rb >= 2) {
        bd[rb - 2] = k;
        bd[rb - 1] = chance(s, 25) ? 9 + rnd(s, 24) : 1 + rnd(s, 8);
    } else {
        bd[0] = k;
    }
    ir_value *b = constant(s, IR_F32, rb, bd);
    ir_value *in[2] = {a, b};
    tol(s, 3);
    finish(s, node(s, IR_OP_MATMUL, 2, in), false);
}

static void gen_gemm(gs *s)
{
    ir_value *a = pick(s, W_FLOAT, 2, 2, false);
    if (!a)
        return;
    bool ta = chance(s, 30), tb = chance(s, 40);
    int64_t m = a->type.dims[ta ? 1 : 0].v, k = a->type.dims[ta ? 0 : 1].v,
            n = chance(s, 25) ? 9 + rnd(s, 24) : 1 + rnd(s, 8);
    int64_t bd[2] = {tb ? n : k, tb ? k : n};
    ir_value *in[3] = {a, constant(s, IR_F32, 2, bd), NULL};
    int nin = 2;
    if (chance(s, 70)) {
        int64_t cd[2];
        int r = rnd(s, 3);
        if (r == 0)
            in[2] = constant(s, IR_F32, 0, NULL);
        else if (r == 1)
            cd[0] = n, in[2] = constant(s, IR_F32, 1, cd);
        else
            cd[0] = chance(s, 50) ? m : 1, cd[1] = n, in[2] = constant(s, IR_F32, 2, cd);
        nin = 3;
    }
    ir_node *nd = node(s, IR_OP_GEMM, nin, in);
    if (!nd)
        return;
    if (ta)
        ir_node_set_int(s->g, nd, "transA", 1);
    if (tb)
        ir_node_set_int(s->g, nd, "transB", 1);
    if (chance(s, 30))
        ir_node_set_float(s->g, nd, "alpha", (float)(1 + rnd(s, 4)) / 2.0f);
    if (chance(s, 30))
        ir_node_set_float(s->g, nd, "beta", (float)rnd(s, 4) / 2.0f);
    tol(s, 3);
    finish(s, nd, false);
}

/* Conv or a pool on a rank-3/4 f32 value: kernel, strides, dilations and
 * pads drawn so every output dim is at least 1. */
static void gen_window(gs *s, int op)
{
    ir_value *a = pick(s, W_FLOAT, 3, 4, false);
    if (!a)
        return;
    int r = a->type.rank, sp = r - 2;
    int64_t c = a->type.dims[1].v, ks[2], st[2], dil[2], pads[4];
    bool conv = op == IR_OP_CONV;
    int autopad = chance(s, 15) ? 1 + rnd(s, 3) : 0; /* SAME_UPPER, SAME_LOWER, VALID */
    bool set_pads = !autopad && chance(s, 70);
    for (int i = 0; i < sp; i++) {
        int64_t len = a->type.dims[2 + i].v;
        st[i] = chance(s, 30) ? 2 : 1;
        dil[i] = op != IR_OP_AVERAGE_POOL && op != IR_OP_LP_POOL && chance(s, 20) ? 2 : 1;
        ks[i] = 1 + rnd(s, 3);
        pads[i] = set_pads ? rnd(s, 2) : 0;
        pads[i + sp] = set_pads ? rnd(s, 2) : 0;
        if (!conv) {
            /* pools: a pad smaller than the kernel */
            if (pads[i] >= ks[i])
                pads[i] = ks[i] - 1;
            if (pads[i + sp] >= ks[i])
                pads[i + sp] = ks[i] - 1;
        }
        while (ks[i] > 1 && (ks[i] - 1) * dil[i] + 1 > len + pads[i] + pads[i + sp])
            ks[i]--;
        if ((ks[i] - 1) * dil[i] + 1 > len + pads[i] + pads[i + sp])
            dil[i] = 1;
    }
    for (int i = 0; autopad == 3 && i < sp; i++) {
        /* VALID: no pads, so the window fits the input itself */
        int64_t len = a->type.dims[2 + i].v;
        while (ks[i] > 1 && (ks[i] - 1) * dil[i] + 1 > len)
            ks[i]--;
        if ((ks[i] - 1) * dil[i] + 1 > len)
            dil[i] = 1;
    }
    static const char *const ap[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
    ir_value *in[3] = {a, NULL, NULL};
    int nin = 1, group = 1;
    if (conv) {
        if (c > 1 && chance(s, 25))
            group = chance(s, 50) ? (int)c : (c % 2 == 0 ? 2 : 1);
        int64_t mout = group * (1 + rnd(s, 3));
        if (chance(s, 20) && 16 % group == 0)
            mout = 8 % group == 0 && chance(s, 50) ? 8 : 16;
        int64_t wd[4] = {mout, c / group, ks[0], sp > 1 ? ks[1] : 0};
        in[1] = constant(s, IR_F32, r, wd);
        nin = 2;
        if (chance(s, 50)) {
            in[2] = constant(s, IR_F32, 1, &mout);
            nin = 3;
        }
    }
    ir_node *n = node(s, op, nin, in);
    if (!n)
        return;
    if (conv && group > 1)
        ir_node_set_int(s->g, n, "group", group);
    if (!conv || chance(s, 50))
        ir_node_set_ints(s->g, n, "kernel_shape", ks, sp);
    if (autopad)
        ir_node_set_string(s->g, n, "auto_pad", ap[autopad]);
    else if (set_pads)
        ir_node_set_ints(s->g, n, "pads", pads, 2 * sp);
    if (chance(s, 60))
        ir_node_set_ints(s->g, n, "strides", st, sp);
    if (op != IR_OP_AVERAGE_POOL && op != IR_OP_LP_POOL && chance(s, 60))
        ir_node_set_ints(s->g, n, "dilations", dil, sp);
    if (op == IR_OP_LP_POOL)
        ir_node_set_int(s->g, n, "p", 1 + rnd(s, 2));
    if (!conv && chance(s, 20))
        ir_node_set_int(s->g, n, "ceil_mode", 1);
    if (op == IR_OP_AVERAGE_POOL && chance(s, 40))
        ir_node_set_int(s->g, n, "count_include_pad", 1);
    tol(s, op == IR_OP_MAX_POOL ? 0 : 3);
    finish(s, n, op == IR_OP_MAX_POOL && is_exact(s, a));
}

static void gen_global_pool(gs *s)
{
    ir_value *a = pick(s, W_FLOAT, 3, 4, false);
    if (!a)
        return;
    bool mx = chance(s, 50);
    tol(s, mx ? 0 : 3);
    finish(s, node(s, mx ? IR_OP_GLOBAL_MAX_POOL : IR_OP_GLOBAL_AVERAGE_POOL, 1, &a), mx && is_exact(s, a));
}

static void gen_reduce(gs *s)
{
    static const int ops[] = {IR_OP_REDUCE_SUM, IR_OP_REDUCE_MEAN, IR_OP_REDUCE_MAX, IR_OP_REDUCE_MIN,
                              IR_OP_REDUCE_PROD, IR_OP_REDUCE_L1, IR_OP_REDUCE_SUM_SQUARE,
                              IR_OP_REDUCE_LOG_SUM_EXP, IR_OP_REDUCE_LOG_SUM, IR_OP_REDUCE_L2};
    ir_value *a = pick(s, W_NUM, 1, 4, false);
    if (!a)
        return;
    int op = ops[rnd(s, ir_dtype_is_float(a->type.dtype) ? 10 : 6)];
    int r = a->type.rank;
    int64_t axes[IR_MAX_RANK];
    int n = 0;
    for (int i = 0; i < r; i++)
        if (chance(s, 45))
            axes[n++] = chance(s, 30) ? i - r : i;
    ir_value *in[2] = {a, NULL};
    if (n || chance(s, 50))
        in[1] = ints(s, n, axes);
    ir_node *nd = node(s, op, in[1] ? 2 : 1, in);
    if (!nd)
        return;
    if (chance(s, 40))
        ir_node_set_int(s->g, nd, "keepdims", 0);
    if (in[1] && !n && chance(s, 30))
        ir_node_set_int(s->g, nd, "noop_with_empty_axes", 1);
    bool exact = !ir_dtype_is_float(a->type.dtype) ||
                 ((op == IR_OP_REDUCE_MAX || op == IR_OP_REDUCE_MIN) && is_exact(s, a));
    if (ir_dtype_is_float(a->type.dtype))
        tol(s, exact ? 0 : 3);
    finish(s, nd, exact);
}

static void gen_arg(gs *s)
{
    ir_value *a = pick(s, W_NUM, 1, 4, true);
    if (!a)
        return;
    ir_node *n = node(s, chance(s, 50) ? IR_OP_ARG_MAX : IR_OP_ARG_MIN, 1, &a);
    if (!n)
        return;
    int r = a->type.rank;
    ir_node_set_int(s->g, n, "axis", rnd(s, 2 * r) - r);
    if (chance(s, 40))
        ir_node_set_int(s->g, n, "keepdims", 0);
    if (chance(s, 30))
        ir_node_set_int(s->g, n, "select_last_index", 1);
    finish(s, n, true);
}

static void gen_cumsum(gs *s)
{
    ir_value *a = pick(s, W_NUM, 1, 4, false);
    if (!a)
        return;
    int r = a->type.rank;
    int64_t ax = rnd(s, 2 * r) - r;
    ir_type t;
    set_type(&t, IR_I64, 0, NULL);
    char nm[16];
    snprintf(nm, sizeof nm, "k%d", s->names++);
    ir_value *axis = ir_graph_add_const(s->g, nm, &t, &ax, s->d);
    ir_value *in[2] = {a, axis};
    ir_node *n = node(s, IR_OP_CUM_SUM, 2, in);
    if (!n)
        return;
    if (chance(s, 30))
        ir_node_set_int(s->g, n, "exclusive", 1);
    if (chance(s, 30))
        ir_node_set_int(s->g, n, "reverse", 1);
    bool exact = !ir_dtype_is_float(a->type.dtype);
    if (!exact)
        tol(s, 3);
    finish(s, n, exact);
}

static void gen_norm(gs *s)
{
    ir_value *a = pick(s, W_FLOAT, 1, 4, false);
    if (!a)
        return;
    int r = a->type.rank, kind = rnd(s, 4);
    tol(s, 3);
    if (kind <= 1) {
        ir_node *n = node(s, kind ? IR_OP_LOG_SOFTMAX : IR_OP_SOFTMAX, 1, &a);
        if (n && chance(s, 70))
            ir_node_set_int(s->g, n, "axis", rnd(s, 2 * r) - r);
        finish(s, n, false);
    } else if (kind == 2) {
        int axis = rnd(s, 2 * r) - r, first = axis < 0 ? axis + r : axis;
        int64_t nd[IR_MAX_RANK];
        dims_of(a, nd);
        ir_value *in[3] = {a, constant(s, IR_F32, r - first, nd + first), NULL};
        if (chance(s, 60))
            in[2] = constant(s, IR_F32, r - first, nd + first);
        ir_node *n = node(s, IR_OP_LAYER_NORMALIZATION, in[2] ? 3 : 2, in);
        if (n && (axis != -1 || chance(s, 30)))
            ir_node_set_int(s->g, n, "axis", axis);
        if (n && chance(s, 30))
            ir_node_set_float(s->g, n, "epsilon", 1e-3f);
        finish(s, n, false);
    } else if (r >= 2) {
        int64_t ch = a->type.dims[1].v;
        bool bn = r == 2 || chance(s, 50);
        ir_value *in[5] = {a, constant(s, IR_F32, 1, &ch), constant(s, IR_F32, 1, &ch)};
        if (bn) {
            in[3] = constant(s, IR_F32, 1, &ch);
            in[4] = constant(s, IR_F32, 1, &ch);
            if (in[4])
                for (int64_t i = 0; i < ch; i++)
                    ir_tensor_setf(&in[4]->cval, i, fabs(ir_tensor_getf(&in[4]->cval, i)) + 0.25);
        }
        finish(s, node(s, bn ? IR_OP_BATCH_NORMALIZATION : IR_OP_INSTANCE_NORMALIZATION, bn ? 5 : 3, in), false);
    }
}

static void gen_transpose(gs *s)
{
    ir_value *a = pick(s, W_ANY, 2, 4, false);
    if (!a)
        return;
    int r = a->type.rank;
    int64_t perm[IR_MAX_RANK];
    for (int i = 0; i < r; i++)
        perm[i] = i;
    for (int i = r - 1; i > 0; i--) {
        int j = rnd(s, i + 1);
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    ir_node *n = node(s, IR_OP_TRANSPOSE, 1, &a);
    if (n && chance(s, 85))
        ir_node_set_ints(s->g, n, "perm", perm, r);
    finish(s, n, is_exact(s, a));
}

/* Reshape to a random factorization of the element count (one dim -1 or
 * a 0 that copies now and then), Flatten or Unsqueeze. */
static void gen_reshape(gs *s)
{
    ir_value *a = pick(s, W_ANY, 0, 4, false);
    if (!a)
        return;
    int kind = rnd(s, 4);
    int r = a->type.rank;
    if (kind == 0 && r >= 1) {
        ir_node *n = node(s, IR_OP_FLATTEN, 1, &a);
        if (n)
            ir_node_set_int(s->g, n, "axis", rnd(s, 2 * r + 1) - r);
        finish(s, n, is_exact(s, a));
        return;
    }
    if (kind == 1 && r < 4) {
        int64_t ax = rnd(s, 2 * (r + 1)) - (r + 1);
        ir_value *in[2] = {a, ints(s, 1, &ax)};
        finish(s, node(s, IR_OP_UNSQUEEZE, 2, in), is_exact(s, a));
        return;
    }
    int64_t left = numel(a), dims[4];
    int nr = 1 + rnd(s, 4), k = 0;
    for (; k < nr - 1; k++) {
        int64_t f = 1;
        for (int64_t p = 2; p <= left; p++)
            if (left % p == 0 && chance(s, 50)) {
                f = p;
                break;
            }
        dims[k] = f;
        left /= f;
    }
    dims[k] = left;
    for (int i = nr - 1; i > 0; i--) {
        int j = rnd(s, i + 1);
        int64_t t = dims[i];
        dims[i] = dims[j];
        dims[j] = t;
    }
    if (chance(s, 30))
        dims[rnd(s, nr)] = -1;
    else
        for (int i = 0; i < nr && i < r; i++)
            if (dims[i] == a->type.dims[i].v && chance(s, 30))
                dims[i] = 0;
    ir_value *in[2] = {a, ints(s, nr, dims)};
    finish(s, node(s, IR_OP_RESHAPE, 2, in), is_exact(s, a));
}

static void gen_concat(gs *s)
{
    ir_value *a = pick(s, W_ANY, 1, 4, false);
    if (!a)
        return;
    int r = a->type.rank, axis = rnd(s, r);
    ir_value *b = NULL;
    for (int tries = 0; tries < 4 && !b; tries++) {
        ir_value *c = pick(s, W_ANY, r, r, false);
        bool ok = c && c->type.dtype == a->type.dtype;
        for (int i = 0; ok && i < r; i++)
            ok = i == axis || c->type.dims[i].v == a->type.dims[i].v;
        if (ok)
            b = c;
    }
    if (!b) {
        int64_t dims[IR_MAX_RANK];
        dims_of(a, dims);
        dims[axis] = 1 + rnd(s, 3);
        b = constant(s, a->type.dtype, r, dims);
    }
    if (!b || numel(a) + numel(b) > MAX_NUMEL)
        return;
    ir_value *in[3] = {a, b, a};
    int nin = chance(s, 25) ? 3 : 2;
    if (chance(s, 30)) {
        in[0] = b;
        in[1] = a;
    }
    ir_node *n = node(s, IR_OP_CONCAT, nin, in);
    if (n)
        ir_node_set_int(s->g, n, "axis", chance(s, 30) ? axis - r : axis);
    finish(s, n, is_exact(s, a) && is_exact(s, b));
}

/* Slice: per chosen axis a non-empty range, written with negative,
 * clamped or far-out bounds, and steps up to 2 either way. */
static void gen_slice(gs *s)
{
    ir_value *a = pick(s, W_ANY, 1, 4, false);
    if (!a)
        return;
    int r = a->type.rank;
    int64_t st[IR_MAX_RANK], en[IR_MAX_RANK], ax[IR_MAX_RANK], sp[IR_MAX_RANK];
    int n = 0;
    for (int i = 0; i < r; i++) {
        if (!chance(s, 60) && !(i == r - 1 && n == 0))
            continue;
        int64_t d = a->type.dims[i].v;
        int64_t step = chance(s, 25) ? -(1 + rnd(s, 2)) : 1 + (chance(s, 25) ? 1 : 0);
        int64_t lo = rnd(s, (int)d), hi = lo + 1 + rnd(s, (int)(d - lo)); /* [lo, hi) non-empty */
        int64_t b, e;
        if (step > 0) {
            b = lo;
            e = hi == d && chance(s, 40) ? (chance(s, 50) ? INT64_MAX : d + 3) : hi;
        } else {
            b = hi - 1;
            e = lo == 0 ? (chance(s, 50) ? INT64_MIN : -d - 2) : lo - 1;
        }
        if (b < d && chance(s, 30))
            b -= d;
        if (e >= 0 && e <= d && e != lo - 1 && chance(s, 20))
            e -= d;
        else if (step < 0 && e >= 0 && chance(s, 20))
            e -= d;
        st[n] = b;
        en[n] = e;
        ax[n] = chance(s, 30) ? i - r : i;
        sp[n] = step;
        n++;
    }
    bool with_axes = chance(s, 80), with_steps = with_axes && chance(s, 80);
    if (!with_axes)
        for (int i = 0; i < n; i++)
            if ((ax[i] < 0 ? ax[i] + r : ax[i]) != i || sp[i] != 1)
                with_axes = true, with_steps = true;
    if (!with_steps)
        for (int i = 0; i < n; i++)
            if (sp[i] != 1)
                with_steps = true;
    ir_value *in[5] = {a, ints(s, n, st), ints(s, n, en), with_axes ? ints(s, n, ax) : NULL,
                       with_steps ? ints(s, n, sp) : NULL};
    finish(s, node(s, IR_OP_SLICE, with_steps ? 5 : with_axes ? 4 : 3, in), is_exact(s, a));
}

static void gen_gather(gs *s)
{
    ir_value *a = pick(s, W_ANY, 1, 3, false);
    if (!a)
        return;
    int r = a->type.rank, axis = rnd(s, r);
    int64_t d = a->type.dims[axis].v;
    int ir = rnd(s, 3);
    int64_t idims[2] = {1 + rnd(s, 3), 1 + rnd(s, 3)};
    ir_value *idx;
    if (chance(s, 25)) {
        /* indices given at run time: make_inputs draws them in [-d-1, d],
         * so some are out of range, which both sides must refuse */
        ir_type t;
        set_type(&t, IR_I64, ir, idims);
        char nm[16];
        snprintf(nm, sizeof nm, "x%d", s->g->ninputs);
        idx = ir_graph_add_input(s->g, nm, &t, s->d);
        if (!idx) {
            s->failed = true;
            return;
        }
        if (s->nidx < MAX_INPUTS) {
            s->idx_input[s->nidx] = s->g->ninputs - 1;
            s->idx_dim[s->nidx++] = d;
        }
    } else {
        idx = constant(s, IR_I64, ir, idims);
        if (!idx)
            return;
        for (int64_t i = 0; i < idx->cval.numel; i++)
            ir_tensor_seti(&idx->cval, i, rnd(s, (int)(2 * d)) - d);
    }
    ir_value *in[2] = {a, idx};
    ir_node *n = node(s, IR_OP_GATHER, 2, in);
    if (n && (axis || chance(s, 30)))
        ir_node_set_int(s->g, n, "axis", chance(s, 30) ? axis - r : axis);
    finish(s, n, is_exact(s, a));
}

static void gen_expand_tile_pad(gs *s)
{
    ir_value *a = pick(s, W_ANY, 1, 4, false);
    if (!a)
        return;
    int r = a->type.rank, kind = rnd(s, 3);
    int64_t v[2 * IR_MAX_RANK], total = numel(a);
    if (kind == 0) {
        /* Expand: 1-dims grow, sometimes a leading dim more */
        int lead = r < 4 && chance(s, 30);
        total = 1;   /* the result's: an empty dim (0) stays empty */
        if (lead)
            v[0] = 1 + rnd(s, 3), total *= v[0];
        for (int i = 0; i < r; i++) {
            int64_t d = a->type.dims[i].v;
            v[lead + i] = d == 1 && chance(s, 60) ? 2 + rnd(s, 3) : chance(s, 20) ? 1 : d;
            total *= v[lead + i] == 1 ? d : v[lead + i];
        }
        if (total > MAX_NUMEL)
            return;
        int drop = !lead && r > 1 && chance(s, 20) ? 1 + rnd(s, r - 1) : 0; /* a shorter shape broadcasts too */
        ir_value *in[2] = {a, ints(s, r + lead - drop, v + drop)};
        finish(s, node(s, IR_OP_EXPAND, 2, in), is_exact(s, a));
    } else if (kind == 1) {
        for (int i = 0; i < r; i++) {
            v[i] = chance(s, 30) ? 2 : 1;
            total *= v[i];
        }
        if (total > MAX_NUMEL)
            return;
        ir_value *in[2] = {a, ints(s, r, v)};
        finish(s, node(s, IR_OP_TILE, 2, in), is_exact(s, a));
    } else {
        static const char *const modes[] = {"constant", "reflect", "edge", "wrap"};
        int mode = rnd(s, 4);
        for (int i = 0; i < 2 * r; i++) {
            int64_t d = a->type.dims[i % r].v;
            int64_t most = mode == 1 ? d - 1 : 2;
            v[i] = most > 0 ? rnd(s, (int)most + 1) : 0;
            if (mode == 0 && chance(s, 15) && d > 1)
                v[i] = -1;
        }
        ir_value *in[3] = {a, ints(s, 2 * r, v), NULL};
        int nin = 2;
        if (mode == 0 && chance(s, 50)) {
            in[2] = constant(s, a->type.dtype, 0, NULL);
            nin = 3;
        }
        ir_node *n = node(s, IR_OP_PAD, nin, in);
        if (n && mode)
            ir_node_set_string(s->g, n, "mode", modes[mode]);
        finish(s, n, is_exact(s, a));
    }
}

/* Multi-output and rarer ops: Split, TopK, Mean/Sum of three, the other
 * normalizations (Group, RMS, Lp, LRN, MeanVariance), Hardmax,
 * DepthToSpace/SpaceToDepth, Trilu, GatherElements, Einsum, Resize and
 * ConvTranspose. */
static ir_node *node_n(gs *s, int op, int nin, ir_value *const *in, int nout)
{
    if (s->failed)
        return NULL;
    char nm[4][16];
    const char *on[4];
    for (int i = 0; i < nout; i++) {
        snprintf(nm[i], sizeof nm[i], "v%d", s->names++);
        on[i] = nm[i];
    }
    ir_node *n = ir_graph_add_node(s->g, op, "", nin, in, nout, on, s->d);
    if (!n)
        s->failed = true;
    return n;
}

static void finish_n(gs *s, ir_node *n, bool exact)
{
    if (!finish(s, n, exact))
        return;
    for (int i = 1; i < n->nout && s->npool < MAX_POOL; i++) {
        s->exact[s->npool] = exact;
        s->pool[s->npool++] = n->out[i];
    }
}

static void gen_split_topk(gs *s)
{
    ir_value *a = pick(s, W_NUM, 1, 4, false);
    if (!a)
        return;
    int r = a->type.rank, axis = rnd(s, r);
    int64_t d = a->type.dims[axis].v;
    if (chance(s, 50) && d >= 2) {
        int64_t sz[2] = {1 + rnd(s, (int)d - 1), 0};
        sz[1] = d - sz[0];
        ir_value *in[2] = {a, chance(s, 50) ? ints(s, 2, sz) : NULL};
        ir_node *n = node_n(s, IR_OP_SPLIT, in[1] ? 2 : 1, in, 2);
        if (n) {
            ir_node_set_int(s->g, n, "axis", chance(s, 30) ? axis - r : axis);
            if (!in[1])
                ir_node_set_int(s->g, n, "num_outputs", 2);
        }
        finish_n(s, n, is_exact(s, a));
    } else {
        if (!is_exact(s, a))
            return; /* ties and order: only on values both sides compute alike */
        int64_t k = 1 + rnd(s, (int)d);
        ir_value *in[2] = {a, ints(s, 1, &k)};
        ir_node *n = node_n(s, IR_OP_TOP_K, 2, in, 2);
        if (n) {
            ir_node_set_int(s->g, n, "axis", chance(s, 30) ? axis - r : axis);
            if (chance(s, 40))
                ir_node_set_int(s->g, n, "largest", 0);
        }
        finish_n(s, n, true);
    }
}

static void gen_more_norm(gs *s)
{
    ir_value *a = pick(s, W_FLOAT, 1, 4, false);
    if (!a)
        return;
    int r = a->type.rank, kind = rnd(s, 6);
    int64_t dims[IR_MAX_RANK];
    dims_of(a, dims);
    tol(s, 3);
    if (kind == 0 && r >= 3) {
        int64_t c = dims[1], g = c % 2 == 0 && chance(s, 50) ? 2 : chance(s, 50) ? c : 1;
        ir_value *in[3] = {a, constant(s, IR_F32, 1, &c), constant(s, IR_F32, 1, &c)};
        ir_node *n = node(s, IR_OP_GROUP_NORMALIZATION, 3, in);
        if (n)
            ir_node_set_int(s->g, n, "num_groups", g);
        finish(s, n, false);
    } else if (kind == 1) {
        int axis = rnd(s, 2 * r) - r, first = axis < 0 ? axis + r : axis;
        ir_value *in[2] = {a, constant(s, IR_F32, r - first, dims + first)};
        ir_node *n = node(s, IR_OP_RMS_NORMALIZATION, 2, in);
        if (n)
            ir_node_set_int(s->g, n, "axis", axis);
        finish(s, n, false);
    } else if (kind == 2) {
        ir_node *n = node(s, IR_OP_LP_NORMALIZATION, 1, &a);
        if (n) {
            ir_node_set_int(s->g, n, "axis", rnd(s, 2 * r) - r);
            ir_node_set_int(s->g, n, "p", 1 + rnd(s, 2));
        }
        finish(s, n, false);
    } else if (kind == 3 && r >= 3) {
        ir_node *n = node(s, IR_OP_LRN, 1, &a);
        if (n)
            ir_node_set_int(s->g, n, "size", 1 + 2 * rnd(s, 3));
        finish(s, n, false);
    } else if (kind == 4 && r == 4) {
        finish(s, node(s, IR_OP_MEAN_VARIANCE_NORMALIZATION, 1, &a), false);
    } else if (is_exact(s, a)) {
        ir_node *n = node(s, IR_OP_HARDMAX, 1, &a);
        if (n)
            ir_node_set_int(s->g, n, "axis", rnd(s, 2 * r) - r);
        finish(s, n, true);
    }
}

static void gen_more_movement(gs *s)
{
    ir_value *a = pick(s, W_ANY, 2, 4, false);
    if (!a)
        return;
    int r = a->type.rank, kind = rnd(s, 4);
    int64_t dims[IR_MAX_RANK];
    dims_of(a, dims);
    if (kind == 0 && r == 4) {
        int64_t b = 2;
        bool d2s = dims[1] % 4 == 0 && chance(s, 50);
        if (!d2s && (dims[2] % b || dims[3] % b))
            return;
        ir_node *n = node(s, d2s ? IR_OP_DEPTH_TO_SPACE : IR_OP_SPACE_TO_DEPTH, 1, &a);
        if (n) {
            ir_node_set_int(s->g, n, "blocksize", b);
            if (d2s && chance(s, 50))
                ir_node_set_string(s->g, n, "mode", "CRD");
        }
        finish(s, n, is_exact(s, a));
    } else if (kind == 1) {
        int64_t k = rnd(s, 5) - 2;
        ir_value *in[2] = {a, NULL};
        if (chance(s, 60)) {
            ir_type t;
            set_type(&t, IR_I64, 0, NULL);
            char nm[16];
            snprintf(nm, sizeof nm, "k%d", s->names++);
            in[1] = ir_graph_add_const(s->g, nm, &t, &k, s->d);
        }
        ir_node *n = node(s, IR_OP_TRILU, in[1] ? 2 : 1, in);
        if (n && chance(s, 50))
            ir_node_set_int(s->g, n, "upper", 0);
        finish(s, n, is_exact(s, a));
    } else if (kind == 2) {
        int axis = rnd(s, r);
        int64_t id[IR_MAX_RANK];
        for (int i = 0; i < r; i++)
            id[i] = i == axis ? 1 + rnd(s, 4) : 1 + rnd(s, (int)dims[i]);
        ir_value *idx = constant(s, IR_I64, r, id);
        if (!idx)
            return;
        for (int64_t i = 0; i < idx->cval.numel; i++)
            ir_tensor_seti(&idx->cval, i, rnd(s, (int)(2 * dims[axis])) - dims[axis]);
        ir_value *in[2] = {a, idx};
        ir_node *n = node(s, IR_OP_GATHER_ELEMENTS, 2, in);
        if (n)
            ir_node_set_int(s->g, n, "axis", axis);
        finish(s, n, is_exact(s, a));
    } else if (a->type.dtype == IR_F32) {
        /* Einsum: a transpose, a reduction, a matmul or a batched one */
        static const char *const eq2[] = {"ij->ji", "ij->i", "ij->", "ij,jk->ik", "ij,kj->ik"};
        static const char *const eq3[] = {"bij,bjk->bik", "bij->bj", "bij,bkj->bik", "bij->jib"};
        const char *eq = r == 2 ? eq2[rnd(s, 5)] : r == 3 ? eq3[rnd(s, 4)] : NULL;
        if (!eq)
            return;
        ir_value *in[2] = {a, NULL};
        int nin = 1;
        if (strchr(eq, ',')) {
            int64_t bd[3];
            if (r == 2) {
                bd[0] = !strcmp(eq, "ij,jk->ik") ? dims[1] : 1 + rnd(s, 6);
                bd[1] = !strcmp(eq, "ij,jk->ik") ? 1 + rnd(s, 6) : dims[1];
            } else {
                bd[0] = dims[0];
                bd[1] = !strcmp(eq, "bij,bjk->bik") ? dims[2] : 1 + rnd(s, 6);
                bd[2] = !strcmp(eq, "bij,bjk->bik") ? 1 + rnd(s, 6) : dims[2];
            }
            in[1] = constant(s, IR_F32, r, bd);
            nin = 2;
        }
        ir_node *n = node(s, IR_OP_EINSUM, nin, in);
        if (n)
            ir_node_set_string(s->g, n, "equation", eq);
        tol(s, 3);
        finish(s, n, false);
    }
}

/* Resize by sizes (nearest with each rounding, linear, cubic; the
 * coordinate modes) and ConvTranspose (strides, pads, output_padding,
 * group). */
static void gen_resize_convt(gs *s)
{
    ir_value *a = pick(s, W_FLOAT, 3, 4, false);
    if (!a)
        return;
    int r = a->type.rank;
    int64_t dims[IR_MAX_RANK] = {0};
    dims_of(a, dims);
    if (chance(s, 50)) {
        static const char *const modes[] = {"nearest", "linear", "cubic"};
        static const char *const ctm[] = {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
                                          "half_pixel_symmetric"};
        static const char *const nm[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
        int64_t sz[IR_MAX_RANK];
        for (int i = 0; i < r; i++)
            sz[i] = i < 2 ? dims[i] : 1 + rnd(s, (int)(2 * dims[i] + 1));
        ir_value *in[4] = {a, NULL, NULL, ints(s, r, sz)};
        ir_node *n = node(s, IR_OP_RESIZE, 4, in);
        int mode = rnd(s, 3);
        if (n) {
            ir_node_set_string(s->g, n, "mode", modes[mode]);
            ir_node_set_string(s->g, n, "coordinate_transformation_mode", ctm[rnd(s, 5)]);
            if (mode == 0)
                ir_node_set_string(s->g, n, "nearest_mode", nm[rnd(s, 4)]);
        }
        /* nearest picks by a rounded coordinate: a tie there flips */
        tol(s, 3);
        finish(s, n, false);
        return;
    }
    int sp = r - 2;
    int64_t c = dims[1], group = c % 2 == 0 && chance(s, 30) ? 2 : 1, m = group * (1 + rnd(s, 3));
    int64_t ks[2] = {1, 1}, st[2] = {1, 1}, pads[4] = {0}, op_[2] = {0};
    for (int i = 0; i < sp; i++) {
        ks[i] = 1 + rnd(s, 3);
        st[i] = 1 + rnd(s, 2);
        pads[i] = rnd(s, (int)ks[i]);
        pads[i + sp] = rnd(s, (int)ks[i]);
        op_[i] = st[i] > 1 ? rnd(s, (int)st[i]) : 0;
        /* the output (in-1)*stride + output_padding + k - pads is >= 1
         * (output_padding may not be set: leave it out) */
        int64_t room = (dims[2 + i] - 1) * st[i] + ks[i] - 1;
        if (pads[i] > room)
            pads[i] = room;
        if (pads[i + sp] > room - pads[i])
            pads[i + sp] = room - pads[i];
    }
    int64_t wd[4] = {c, m / group, ks[0], sp > 1 ? ks[1] : 0};
    ir_value *in[3] = {a, constant(s, IR_F32, r, wd), chance(s, 50) ? constant(s, IR_F32, 1, &m) : NULL};
    ir_node *n = node(s, IR_OP_CONV_TRANSPOSE, in[2] ? 3 : 2, in);
    if (n) {
        if (group > 1)
            ir_node_set_int(s->g, n, "group", group);
        ir_node_set_ints(s->g, n, "strides", st, sp);
        if (chance(s, 60))
            ir_node_set_ints(s->g, n, "pads", pads, 2 * sp);
        if (chance(s, 40))
            ir_node_set_ints(s->g, n, "output_padding", op_, sp);
    }
    tol(s, 3);
    finish(s, n, false);
}

static void gen_variadic(gs *s)
{
    ir_value *a = pick(s, W_FLOAT, 0, 4, false);
    if (!a)
        return;
    ir_value *in[3] = {a, partner(s, a, false), partner(s, a, false)};
    if (!in[1] || !in[2] || !broadcasts(in[1], in[2]))
        return;
    int op = chance(s, 50) ? IR_OP_MEAN : IR_OP_SUM;
    tol(s, 1);
    finish(s, node(s, op, 3, in), false);
}

typedef void (*gen_fn)(gs *s);

static const gen_fn families[] = {
    gen_unary,  gen_unary,     gen_binary,     gen_binary,      gen_binary,   gen_compare, gen_cast,
    gen_clip,   gen_matmul,    gen_gemm,       gen_reduce,      gen_reduce,   gen_arg,     gen_cumsum,
    gen_norm,   gen_norm,      gen_transpose,  gen_reshape,     gen_concat,   gen_slice,   gen_gather,
    gen_expand_tile_pad, gen_global_pool, gen_split_topk, gen_more_norm, gen_more_movement,
    gen_resize_convt, gen_variadic,
};

static void gen_conv(gs *s) { gen_window(s, IR_OP_CONV); }
static void gen_pool(gs *s)
{
    int r = rnd(s, 10);
    gen_window(s, r < 5 ? IR_OP_MAX_POOL : r < 9 ? IR_OP_AVERAGE_POOL : IR_OP_LP_POOL);
}

static ir_value *add_input(gs *s, ir_dtype dt, int rank, const int64_t *dims)
{
    ir_type t;
    set_type(&t, dt, rank, dims);
    char nm[16];
    snprintf(nm, sizeof nm, "x%d", s->g->ninputs);
    ir_value *v = ir_graph_add_input(s->g, nm, &t, s->d);
    if (!v) {
        s->failed = true;
        return NULL;
    }
    s->exact[s->npool] = true;
    s->pool[s->npool++] = v;
    return v;
}

/* The inputs' data for out->g; now and then specials (0, -0, +-inf, NaN,
 * big: 1e4, whose square a float still holds). */
static int make_inputs(gs *s, gen_case *out, icc_diag *d)
{
    out->ninputs = out->g->ninputs;
    out->inputs = calloc((size_t)out->ninputs + 1, sizeof *out->inputs);
    if (!out->inputs) {
        gen_case_free(out);
        return ir_errorf(d, "out of memory");
    }
    bool specials = rnd(s, 100) < 20;
    for (int i = 0; i < out->ninputs; i++) {
        const ir_type *t = &out->g->inputs[i]->type;
        int64_t id[IR_MAX_RANK];
        for (int k = 0; k < t->rank; k++)
            id[k] = t->dims[k].v;
        if (!ir_type_is_static(t)) {
            gen_case_free(out);
            return ir_errorf(d, "input %d: the generator needs static shapes", i);
        }
        if (ir_tensor_init(&out->inputs[i], t->dtype, t->rank, id, d) < 0 ||
            !(out->inputs[i].data = calloc(1, out->inputs[i].nbytes + 1))) {
            gen_case_free(out);
            return ir_errorf(d, "out of memory");
        }
        fill(s, &out->inputs[i]);
        for (int k = 0; k < s->nidx; k++)
            if (s->idx_input[k] == i)
                for (int64_t e = 0; e < out->inputs[i].numel; e++) {
                    int64_t dim = s->idx_dim[k];
                    /* in range mostly; one case in eight may not be */
                    int64_t v = rnd(s, 8) ? rnd(s, (int)(2 * dim)) - dim : rnd(s, (int)(2 * dim + 2)) - dim - 1;
                    ir_tensor_seti(&out->inputs[i], e, v);
                }
        if (specials && ir_dtype_is_float(t->dtype)) {
            static const double sp[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e4, -1e-30, 1.0};
            for (int64_t k = 0; k < out->inputs[i].numel; k++)
                if (rnd(s, 100) < 15)
                    ir_tensor_setf(&out->inputs[i], k, sp[rnd(s, 8)]);
        }
    }
    return 0;
}

int gen_inputs(ir_graph *g, uint64_t seed, int tol_class, gen_case *out, icc_diag *d)
{
    memset(out, 0, sizeof *out);
    gs s = {.rng = seed, .d = d};
    out->g = g;
    out->tol_class = tol_class;
    return make_inputs(&s, out, d);
}

int gen_graph(const uint8_t *data, size_t size, gen_case *out, icc_diag *d)
{
    memset(out, 0, sizeof *out);
    gs s = {.data = data, .size = size, .d = d};
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 0x100000001b3ull;
    s.rng = h;
    s.g = ir_graph_create("fuzz");
    if (!s.g)
        return ir_errorf(d, "out of memory");
    /* inputs: one or two; the second often the first's shape */
    int nin = 1 + (rnd(&s, 100) < 40);
    int conv_like = rnd(&s, 100) < 30;
    int64_t dims[IR_MAX_RANK];
    int rank = conv_like ? 3 + rnd(&s, 2) : 1 + rnd(&s, 4);
    for (int i = 0; i < rank; i++)
        dims[i] = 1 + rnd(&s, i == 0 && conv_like ? 2 : 6);
    /* now and then a long last dim (vector bodies and their tails) or
     * 8/16 channels (what -O3's layout blocks) */
    if (rnd(&s, 100) < 25)
        dims[rank - 1] = 7 + rnd(&s, 27);
    if (conv_like && rnd(&s, 100) < 30)
        dims[1] = rnd(&s, 2) ? 8 : 16;
    for (int64_t n = 1, i = 0; i < rank; i++, n = 1) {
        for (int k = 0; k < rank; k++)
            n *= dims[k];
        if (n > 1024 && dims[i] > 2)
            dims[i] = 2;
    }
    for (int i = 0; i < nin && !s.failed; i++) {
        ir_dtype dt = rnd(&s, 100) < 80 ? IR_F32 : rnd(&s, 2) ? IR_I64 : IR_I32;
        if (i == 1 && rnd(&s, 2)) {
            int64_t pd[IR_MAX_RANK];
            int pr = rank;
            for (int k = 0; k < rank; k++)
                pd[k] = rnd(&s, 4) ? dims[k] : 1;
            add_input(&s, dt, pr, pd);
        } else {
            add_input(&s, dt, rank, dims);
        }
    }
    int nnodes = 1 + rnd(&s, 8);
    for (int i = 0; i < nnodes && !s.failed; i++) {
        int before = s.g->nnodes, f = rnd(&s, 100);
        if (f < 8)
            gen_conv(&s);
        else if (f < 13)
            gen_pool(&s);
        else
            families[rnd(&s, (int)(sizeof families / sizeof *families))](&s);
        if (s.g->nnodes == before && !s.failed)
            gen_unary(&s);
    }
    /* a graph with no node yet gets one that always applies */
    if (!s.failed && s.g->nnodes == 0) {
        ir_value *a = s.pool[0];
        finish(&s, node(&s, IR_OP_IDENTITY, 1, &a), true);
    }
    /* outputs: every node value nothing reads (so no node's result goes
     * unchecked), up to 4, the last node's first */
    if (!s.failed) {
        int nv = s.g->nvalues, nout = 0;
        int *uses = calloc((size_t)nv + 1, sizeof *uses);
        if (!uses) {
            ir_graph_destroy(s.g);
            return ir_errorf(d, "out of memory");
        }
        ir_graph_count_uses(s.g, uses);
        for (int i = s.g->nnodes - 1; i >= 0 && nout < 4 && !s.failed; i--) {
            ir_value *v = s.g->nodes[i]->out[0];
            if (i == s.g->nnodes - 1 || !uses[v->id]) {
                s.failed = ir_graph_add_output(s.g, v, d) < 0;
                nout++;
            }
        }
        free(uses);
        /* sometimes also a value other nodes read, or a graph input
         * itself (the plan must keep the one, the output copies give the
         * other) */
        int r = rnd(&s, 100);
        ir_value *extra = r < 20 ? s.pool[rnd(&s, s.npool)] : r < 25 ? s.g->inputs[0] : NULL;
        bool dup = false;
        for (int i = 0; extra && i < s.g->noutputs; i++)
            dup |= s.g->outputs[i] == extra;
        if (extra && !dup && !s.failed)
            s.failed = ir_graph_add_output(s.g, extra, d) < 0;
    }
    /* nodes whose results reach no output go: the interpreter would run
     * them (and refuse a bad index there) where -O2 and -O3 remove them
     * first (seed 52128: a dead Gather of an out-of-range index) */
    if (!s.failed) {
        icc_pipeline p;
        icc_pass_options po = {0};
        s.failed = icc_pipeline_parse("dce", &p, d) < 0;
        if (!s.failed) {
            s.failed = icc_pipeline_run(&p, s.g, &po, d) < 0;
            icc_pipeline_free(&p);
        }
    }
    if (!s.failed && ir_infer_shapes(s.g, d) < 0) {
        ir_diag_prefix(d, "generator: the whole graph");
        s.failed = true;
    }
    if (s.failed) {
        ir_graph_destroy(s.g);
        return -1;
    }
    out->g = s.g;
    if (make_inputs(&s, out, d) < 0)
        return -1;
    out->tol_class = s.tol;
    return 0;
}

void gen_case_free(gen_case *c)
{
    if (c->inputs)
        ir_tensors_free(c->inputs, c->ninputs);
    free(c->inputs);
    ir_graph_destroy(c->g);
    memset(c, 0, sizeof *c);
}
