/* test_random_graphs.c - randomized differential test of the passes: from
 * fixed seeds it builds small random valid f32 graphs (broadcasting
 * elementwise ops, reductions with constant axes, Softmax, MatMul, Gemm,
 * 1-D Conv, BatchNormalization, Reshape, Transpose, Identity) seeded with
 * work for every pass: fully constant paths (fold), duplicated nodes and
 * constants (cse), x*1, x+0, Identity, reshape chains and transposes that
 * undo each other (simplify), scaled or batch-normalized contractions
 * (fold-bn) and branches no output reads (dce). Each graph runs in the
 * reference interpreter on random inputs; then each pass of passes.def
 * alone, and each -O level's pipeline, runs on a copy (print -> parse),
 * and the copy must give the same outputs (same dtype and shape, values
 * within rtol 1e-5, atol 1e-6).
 * A mismatch prints the graph's text IR. */
#include "check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ops.h"
#include "ir/ref/interp.h"
#include "ir/text.h"
#include "passes/pass.h"

#define NGRAPHS 200
#define MAX_POOL 64
#define RTOL 1e-5
#define ATOL 1e-6

/* ---- random numbers (splitmix64: fixed seeds, same graphs everywhere) ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int rint_(int n) { return (int)(rnd() % (uint64_t)n); }
static bool chance(int percent) { return rint_(100) < percent; }
static float rfloat(void) { return (float)((double)(rnd() >> 11) / 9007199254740992.0 * 2.0 - 1.0); }

/* ---- the generator --------------------------------------------------------- */

typedef struct gen {
    ir_graph *g;
    icc_diag d;
    ir_value *pool[MAX_POOL];
    int npool;
    int names;
} gen;

static const char *fresh(gen *s, char *buf, size_t n, char kind)
{
    snprintf(buf, n, "%c%d", kind, s->names++);
    return buf;
}

static void type_of(ir_type *t, int rank, const int64_t *dims)
{
    memset(t, 0, sizeof *t);
    t->dtype = IR_F32;
    t->rank = rank;
    for (int i = 0; i < rank; i++)
        t->dims[i] = ir_dim_const(dims[i]);
}

static void dims_of(const ir_value *v, int *rank, int64_t *dims)
{
    *rank = v->type.rank;
    for (int i = 0; i < v->type.rank; i++)
        dims[i] = v->type.dims[i].v;
}

static int64_t numel_of(const ir_value *v)
{
    int64_t n = 1;
    for (int i = 0; i < v->type.rank; i++)
        n *= v->type.dims[i].v;
    return n;
}

static void push(gen *s, ir_value *v)
{
    if (s->npool < MAX_POOL)
        s->pool[s->npool++] = v;
}

/* A constant of the given shape: random values, or all `fill` when fill
 * is finite. */
static ir_value *add_const(gen *s, int rank, const int64_t *dims, float fill)
{
    ir_type t;
    type_of(&t, rank, dims);
    char nm[16];
    ir_value *c = ir_graph_add_const(s->g, fresh(s, nm, sizeof nm, 'c'), &t, NULL, &s->d);
    ck_assert_msg(c != NULL, "%s", s->d.msg);
    float *p = c->cval.data;
    for (int64_t i = 0; i < c->cval.numel; i++)
        p[i] = isfinite(fill) ? fill : rfloat();
    return c;
}

static ir_value *add_i64_const(gen *s, int n, const int64_t *v)
{
    ir_type t = {.dtype = IR_I64, .rank = 1, .dims = {ir_dim_const(n)}};
    char nm[16];
    ir_value *c = ir_graph_add_const(s->g, fresh(s, nm, sizeof nm, 'k'), &t, v, &s->d);
    ck_assert_msg(c != NULL, "%s", s->d.msg);
    return c;
}

/* Appends a node with one output and infers its type (shape inference
 * over the whole small graph is cheap and keeps the registry the only
 * source of shapes). */
static ir_node *add_node(gen *s, int op, int nin, ir_value *const *in)
{
    char nm[16];
    const char *on = fresh(s, nm, sizeof nm, 'v');
    ir_node *n = ir_graph_add_node(s->g, op, "", nin, in, 1, &on, &s->d);
    ck_assert_msg(n != NULL, "%s", s->d.msg);
    return n;
}

static ir_value *finish_node(gen *s, ir_node *n)
{
    ck_assert_msg(ir_infer_shapes(s->g, &s->d) == 0, "generator made an invalid node: %s", s->d.msg);
    ck_assert_int_eq(n->out[0]->type.dtype, IR_F32);
    ck_assert(ir_type_is_static(&n->out[0]->type));
    return n->out[0];
}

/* Half the time one of the newest values, so chains grow long and most
 * nodes feed an output. */
static ir_value *pick(gen *s)
{
    if (s->npool > 3 && chance(50))
        return s->pool[s->npool - 1 - rint_(3)];
    return s->pool[rint_(s->npool)];
}

/* A pool value of rank in [lo, hi], or NULL. */
static ir_value *pick_rank(gen *s, int lo, int hi)
{
    for (int tries = 0; tries < 8; tries++) {
        ir_value *v = pick(s);
        if (v->type.rank >= lo && v->type.rank <= hi)
            return v;
    }
    for (int i = s->npool - 1; i >= 0; i--)
        if (s->pool[i]->type.rank >= lo && s->pool[i]->type.rank <= hi)
            return s->pool[i];
    return NULL;
}

static bool broadcastable(const ir_value *a, const ir_value *b)
{
    int ra = a->type.rank, rb = b->type.rank;
    for (int i = 1; i <= ra && i <= rb; i++) {
        int64_t x = a->type.dims[ra - i].v, y = b->type.dims[rb - i].v;
        if (x != y && x != 1 && y != 1)
            return false;
    }
    return true;
}

/* Add, Mul or Sub of a pool value and a partner: another pool value it
 * broadcasts with, a constant that broadcasts to it, or the op's identity
 * (x*1, x+0, x-0) for simplify. */
static void gen_binary(gen *s)
{
    static const int ops[] = {IR_OP_ADD, IR_OP_MUL, IR_OP_SUB};
    int op = ops[rint_(3)];
    ir_value *a = pick(s), *b = NULL;
    int rank;
    int64_t dims[IR_MAX_RANK];
    dims_of(a, &rank, dims);
    int r = rint_(100);
    if (r < 30) {
        for (int tries = 0; tries < 6 && !b; tries++) {
            ir_value *c = pick(s);
            if (broadcastable(a, c))
                b = c;
        }
    } else if (r < 50) {
        float id = op == IR_OP_MUL ? 1.0f : 0.0f;
        int64_t one = 1;
        if (chance(50))
            b = add_const(s, 0, &one, id);
        else
            b = add_const(s, rank, dims, id);
    } else if (r < 75 && rank > 0) {
        /* a suffix of a's shape with some dims 1 */
        int k = 1 + rint_(rank);
        int64_t sd[IR_MAX_RANK];
        for (int i = 0; i < k; i++)
            sd[i] = chance(40) ? 1 : dims[rank - k + i];
        b = add_const(s, k, sd, NAN);
    }
    if (!b)
        b = add_const(s, rank, dims, NAN);
    ir_value *in[2] = {a, b};
    if (op != IR_OP_SUB && chance(30)) {
        in[0] = b;
        in[1] = a;
    }
    push(s, finish_node(s, add_node(s, op, 2, in)));
}

static void gen_unary(gen *s)
{
    static const int ops[] = {IR_OP_RELU, IR_OP_TANH, IR_OP_SIGMOID, IR_OP_IDENTITY};
    ir_value *a = pick(s);
    push(s, finish_node(s, add_node(s, ops[rint_(4)], 1, &a)));
}

static void gen_reduce(gen *s)
{
    ir_value *a = pick_rank(s, 1, 3);
    if (!a)
        return;
    int rank = a->type.rank;
    int64_t axes[IR_MAX_RANK];
    int n = 0;
    for (int i = 0; i < rank; i++)
        if (chance(50))
            axes[n++] = chance(30) ? i - rank : i;
    if (!n)
        axes[n++] = rint_(rank);
    ir_value *in[2] = {a, add_i64_const(s, n, axes)};
    ir_node *nd = add_node(s, chance(50) ? IR_OP_REDUCE_SUM : IR_OP_REDUCE_MEAN, 2, in);
    if (chance(50))
        ck_assert_int_eq(ir_node_set_int(s->g, nd, "keepdims", rint_(2)), 0);
    push(s, finish_node(s, nd));
}

static void gen_softmax(gen *s)
{
    ir_value *a = pick_rank(s, 1, 3);
    if (!a)
        return;
    ir_node *nd = add_node(s, IR_OP_SOFTMAX, 1, &a);
    if (chance(60))
        ck_assert_int_eq(ir_node_set_int(s->g, nd, "axis", rint_(2 * a->type.rank) - a->type.rank), 0);
    push(s, finish_node(s, nd));
}

/* An inference BatchNormalization over dim 1 of y (rank >= 2), which
 * fold-bn folds into the producer's weights when dim 1 is its output
 * channel (Gemm, 2-D MatMul, Conv) and must leave alone otherwise. */
static ir_value *maybe_bn(gen *s, ir_value *y, int percent)
{
    if (y->type.rank < 2 || !chance(percent))
        return y;
    int64_t ch = y->type.dims[1].v;
    ir_value *in[5] = {y, add_const(s, 1, &ch, NAN), add_const(s, 1, &ch, NAN), add_const(s, 1, &ch, NAN),
                       add_const(s, 1, &ch, NAN)};
    float *var = in[4]->cval.data;
    for (int64_t i = 0; i < ch; i++)
        var[i] = fabsf(var[i]) + 0.25f;
    ir_node *nd = add_node(s, IR_OP_BATCH_NORMALIZATION, 5, in);
    if (chance(50))
        ck_assert_int_eq(ir_node_set_float(s->g, nd, "epsilon", 1e-3f), 0);
    return finish_node(s, nd);
}

/* A 1-D Conv of a rank-3 value [N,C,L] by a constant [M,C,k], then often a
 * per-channel constant scale and shift ([M,1]) or a BatchNormalization:
 * what fold-bn folds into Conv weights. */
static void gen_conv(gen *s)
{
    ir_value *a = pick_rank(s, 3, 3);
    if (!a)
        return;
    int64_t n = a->type.dims[0].v, c = a->type.dims[1].v, l = a->type.dims[2].v, m = 1 + rint_(3);
    /* often as a 2-D Conv of [N,C,1,L] (what layout converts), reshaped back */
    bool two = chance(50);
    if (two) {
        int64_t d4[4] = {n, c, 1, l};
        ir_value *ri[2] = {a, add_i64_const(s, 4, d4)};
        a = finish_node(s, add_node(s, IR_OP_RESHAPE, 2, ri));
    }
    int64_t wd[4] = {m, c, 1 + rint_((int)l), 0};
    if (two)
        wd[3] = wd[2], wd[2] = 1;
    ir_value *in[3] = {a, add_const(s, two ? 4 : 3, wd, NAN), NULL};
    int nin = 2;
    if (chance(50))
        in[nin++] = add_const(s, 1, &m, NAN);
    ir_value *y = finish_node(s, add_node(s, IR_OP_CONV, nin, in));
    if (chance(50)) {
        int64_t cd[3] = {m, 1, 1};
        if (chance(70)) {
            ir_value *mi[2] = {y, add_const(s, two ? 3 : 2, cd, NAN)};
            y = finish_node(s, add_node(s, IR_OP_MUL, 2, mi));
        }
        if (chance(70)) {
            ir_value *ai[2] = {y, add_const(s, two ? 3 : 2, cd, NAN)};
            y = finish_node(s, add_node(s, IR_OP_ADD, 2, ai));
        }
    } else {
        y = maybe_bn(s, y, 60);
    }
    if (two) {
        int64_t d3[3] = {n, m, y->type.dims[3].v};
        ir_value *ri[2] = {y, add_i64_const(s, 3, d3)};
        y = finish_node(s, add_node(s, IR_OP_RESHAPE, 2, ri));
    }
    push(s, y);
}

/* MatMul of a rank 1-3 value by a [K,N] constant (or by a pool value with
 * a matching first dim), often followed by a constant scale and shift,
 * the pattern fold-bn folds into the weights. */
static void gen_matmul(gen *s)
{
    ir_value *a = pick_rank(s, 1, 3);
    if (!a)
        return;
    int64_t k = a->type.dims[a->type.rank - 1].v;
    ir_value *b = NULL;
    for (int tries = 0; tries < 6 && !b; tries++) {
        ir_value *c = pick(s);
        if (c != a && c->type.rank == 2 && c->type.dims[0].v == k)
            b = c;
    }
    if (!b || chance(50)) {
        int64_t dims[2] = {k, 1 + rint_(4)};
        b = add_const(s, 2, dims, NAN);
    }
    ir_value *in[2] = {a, b};
    ir_value *y = finish_node(s, add_node(s, IR_OP_MATMUL, 2, in));
    if (chance(40) && y->type.rank > 0) {
        int64_t n = y->type.dims[y->type.rank - 1].v;
        ir_value *m[2] = {y, add_const(s, 1, &n, NAN)};
        y = finish_node(s, add_node(s, IR_OP_MUL, 2, m));
        ir_value *a2[2] = {y, add_const(s, 1, &n, NAN)};
        y = finish_node(s, add_node(s, IR_OP_ADD, 2, a2));
    } else {
        y = maybe_bn(s, y, 40);
    }
    push(s, y);
}

static void gen_gemm(gen *s)
{
    ir_value *a = pick_rank(s, 2, 2);
    if (!a)
        return;
    bool ta = chance(25), tb = chance(50);
    int64_t m = a->type.dims[ta ? 1 : 0].v, k = a->type.dims[ta ? 0 : 1].v, n = 1 + rint_(4);
    int64_t bd[2] = {tb ? n : k, tb ? k : n};
    ir_value *in[3] = {a, add_const(s, 2, bd, NAN), NULL};
    int nin = 2;
    int c = rint_(4);
    if (c == 1) {
        in[nin++] = add_const(s, 1, &n, NAN);
    } else if (c == 2) {
        int64_t cd[2] = {m, n};
        in[nin++] = add_const(s, 2, cd, NAN);
    } else if (c == 3) {
        int64_t one = 1;
        in[nin++] = add_const(s, 1, &one, NAN);
    }
    ir_node *nd = add_node(s, IR_OP_GEMM, nin, in);
    static const float scales[] = {1.0f, 0.5f, 2.0f, -1.0f};
    if (chance(40))
        ck_assert_int_eq(ir_node_set_float(s->g, nd, "alpha", scales[rint_(4)]), 0);
    if (chance(40))
        ck_assert_int_eq(ir_node_set_float(s->g, nd, "beta", scales[rint_(4)]), 0);
    if (ta)
        ck_assert_int_eq(ir_node_set_int(s->g, nd, "transA", 1), 0);
    if (tb)
        ck_assert_int_eq(ir_node_set_int(s->g, nd, "transB", 1), 0);
    push(s, maybe_bn(s, finish_node(s, nd), 40));
}

/* Reshape to a random factorization of the element count, sometimes with
 * one dim left to -1. */
static void gen_reshape(gen *s)
{
    ir_value *a = pick(s);
    int64_t left = numel_of(a), dims[4];
    int rank = 1 + rint_(3), k = 0;
    for (; k < rank - 1; k++) {
        int64_t f = 1;
        for (int64_t c = 2; c <= left; c++)
            if (left % c == 0 && chance(50)) {
                f = c;
                break;
            }
        dims[k] = f;
        left /= f;
    }
    dims[k++] = left;
    if (chance(30))
        dims[rint_(k)] = -1;
    ir_value *in[2] = {a, add_i64_const(s, k, dims)};
    ir_value *y = finish_node(s, add_node(s, IR_OP_RESHAPE, 2, in));
    push(s, y);
    if (chance(30)) {
        /* a reshape chain for simplify to merge */
        int64_t flat = numel_of(y);
        ir_value *in2[2] = {y, add_i64_const(s, 1, &flat)};
        push(s, finish_node(s, add_node(s, IR_OP_RESHAPE, 2, in2)));
    }
}

static void gen_transpose(gen *s)
{
    ir_value *a = pick_rank(s, 2, 3);
    if (!a)
        return;
    int r = a->type.rank;
    int64_t perm[3] = {0, 1, 2};
    for (int i = r - 1; i > 0; i--) {
        int j = rint_(i + 1);
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    ir_node *nd = add_node(s, IR_OP_TRANSPOSE, 1, &a);
    if (chance(70))
        ck_assert_int_eq(ir_node_set_ints(s->g, nd, "perm", perm, r), 0);
    ir_value *y = finish_node(s, nd);
    push(s, y);
    if (chance(30)) {
        /* transposing back: a no-op pair for simplify */
        int64_t inv[3], eff[3];
        const int64_t *p;
        int np = ir_attr_ints(nd, "perm", &p);
        for (int i = 0; i < r; i++)
            eff[i] = np < 0 ? r - 1 - i : p[i];
        for (int i = 0; i < r; i++)
            inv[eff[i]] = i;
        ir_node *back = add_node(s, IR_OP_TRANSPOSE, 1, &y);
        ck_assert_int_eq(ir_node_set_ints(s->g, back, "perm", inv, r), 0);
        push(s, finish_node(s, back));
    }
}

/* A copy of an existing node (same op, inputs, attributes), or of an
 * existing constant: work for cse. */
static void gen_duplicate(gen *s)
{
    ir_graph *g = s->g;
    if (chance(30)) {
        for (int i = 0; i < g->nvalues; i++) {
            ir_value *v = g->values[rint_(g->nvalues)];
            if (v->kind == IR_VAL_CONST && v->cval.dtype == IR_F32) {
                char nm[16];
                ir_value *c = ir_graph_add_const(g, fresh(s, nm, sizeof nm, 'c'), &v->type, v->cval.data, &s->d);
                ck_assert_msg(c != NULL, "%s", s->d.msg);
                push(s, c);
                return;
            }
        }
    }
    if (!g->nnodes)
        return;
    ir_node *o = g->nodes[rint_(g->nnodes)];
    ir_node *n = add_node(s, o->op, o->nin, o->in);
    for (int i = 0; i < o->nattr; i++)
        ck_assert_int_eq(ir_node_add_attr(g, n, &o->attrs[i]), 0);
    push(s, finish_node(s, n));
}

/* Constants combined with constants: a path fold evaluates entirely. */
static void gen_const_path(gen *s)
{
    ir_value *a = pick(s);
    int rank;
    int64_t dims[IR_MAX_RANK];
    dims_of(a, &rank, dims);
    ir_value *in[2] = {add_const(s, rank, dims, NAN), add_const(s, rank, dims, NAN)};
    ir_value *c = finish_node(s, add_node(s, chance(50) ? IR_OP_MUL : IR_OP_ADD, 2, in));
    if (chance(50))
        c = finish_node(s, add_node(s, IR_OP_TANH, 1, &c));
    push(s, c);
    if (chance(60)) {
        ir_value *in2[2] = {a, c};
        push(s, finish_node(s, add_node(s, IR_OP_ADD, 2, in2)));
    }
}

/* Builds graph number `seed`; the caller destroys it. */
static ir_graph *gen_graph(unsigned seed)
{
    rng_state = 0x1234567ull * (seed + 1);
    gen s = {.g = ir_graph_create("rand")};
    ck_assert_ptr_nonnull(s.g);
    int rank = 1 + rint_(3);
    int64_t base[3];
    for (int i = 0; i < rank; i++)
        base[i] = 1 + rint_(4);
    int ninputs = 1 + rint_(2);
    for (int i = 0; i < ninputs; i++) {
        int64_t dims[3];
        for (int k = 0; k < rank; k++)
            dims[k] = i && chance(30) ? 1 : base[k];
        ir_type t;
        type_of(&t, rank, dims);
        char nm[16];
        ir_value *x = ir_graph_add_input(s.g, fresh(&s, nm, sizeof nm, 'x'), &t, &s.d);
        ck_assert_ptr_nonnull(x);
        push(&s, x);
    }
    int nsteps = 4 + rint_(12);
    for (int i = 0; i < nsteps; i++) {
        int r = rint_(100);
        if (r < 28)
            gen_binary(&s);
        else if (r < 42)
            gen_unary(&s);
        else if (r < 50)
            gen_reduce(&s);
        else if (r < 55)
            gen_softmax(&s);
        else if (r < 63)
            gen_matmul(&s);
        else if (r < 69)
            gen_gemm(&s);
        else if (r < 77)
            gen_reshape(&s);
        else if (r < 83)
            gen_transpose(&s);
        else if (r < 89)
            gen_duplicate(&s);
        else if (r < 94)
            gen_conv(&s);
        else
            gen_const_path(&s);
    }
    /* The newest value is always an output, so the graph ends somewhere;
     * others are added at random, and what no output reads is dead. */
    ck_assert_int_eq(ir_graph_add_output(s.g, s.pool[s.npool - 1], &s.d), 0);
    int extra = 1 + rint_(3);
    for (int i = 0; i < extra; i++) {
        ir_value *v = pick(&s);
        bool dup = false;
        for (int k = 0; k < s.g->noutputs; k++)
            dup |= s.g->outputs[k] == v;
        if (!dup)
            ck_assert_int_eq(ir_graph_add_output(s.g, v, &s.d), 0);
    }
    ck_assert_msg(ir_verify(s.g, &s.d) == 0, "generator made an invalid graph: %s", s.d.msg);
    return s.g;
}

/* Random inputs for g, seeded; free with free_inputs. */
static ir_tensor *gen_inputs(const ir_graph *g, unsigned seed)
{
    rng_state = 0xabcdefull * (seed + 7);
    ir_tensor *in = calloc((size_t)g->ninputs + 1, sizeof *in);
    ck_assert_ptr_nonnull(in);
    for (int i = 0; i < g->ninputs; i++) {
        const ir_type *t = &g->inputs[i]->type;
        int64_t dims[IR_MAX_RANK];
        for (int k = 0; k < t->rank; k++)
            dims[k] = t->dims[k].v;
        icc_diag d = {{0}};
        ck_assert_int_eq(ir_tensor_init(&in[i], t->dtype, t->rank, dims, &d), 0);
        in[i].data = malloc(in[i].nbytes + 1);
        ck_assert_ptr_nonnull(in[i].data);
        for (int64_t e = 0; e < in[i].numel; e++)
            ((float *)in[i].data)[e] = rfloat();
    }
    return in;
}

static void free_inputs(ir_tensor *in, int n)
{
    ir_tensors_free(in, n);
    free(in);
}

static ir_graph *copy_graph(const ir_graph *g, char **text)
{
    *text = ir_print_string(g, NULL);
    ck_assert_ptr_nonnull(*text);
    icc_diag d = {{0}};
    ir_graph *c = ir_parse(*text, strlen(*text), "random.icc", &d);
    ck_assert_msg(c != NULL, "copy does not parse: %s\n%s", d.msg, *text);
    return c;
}

/* Empty string when a and b agree, else what differs. */
static void compare(const ir_tensor *a, const ir_tensor *b, char *why, size_t n)
{
    why[0] = 0;
    if (a->dtype != b->dtype || a->rank != b->rank) {
        snprintf(why, n, "dtype/rank %s/%d, expected %s/%d", ir_dtype_name(b->dtype), b->rank,
                 ir_dtype_name(a->dtype), a->rank);
        return;
    }
    for (int k = 0; k < a->rank; k++)
        if (a->dims[k] != b->dims[k]) {
            snprintf(why, n, "dim %d is %lld, expected %lld", k, (long long)b->dims[k], (long long)a->dims[k]);
            return;
        }
    for (int64_t i = 0; i < a->numel; i++) {
        double x = ir_tensor_getf(a, i), y = ir_tensor_getf(b, i);
        if (isnan(x) && isnan(y))
            continue;
        if (!(fabs(x - y) <= ATOL + RTOL * fabs(x))) {
            snprintf(why, n, "element %lld is %.9g, expected %.9g", (long long)i, y, x);
            return;
        }
    }
}

/* Passes with options the generator's graphs need to be touched: layout
 * by every 2-D Conv (one-channel blocks), fuse without anchors. */
static const char *const with_options[] = {
    "shape-infer,layout{block=1},simplify,cse,dce",
    "shape-infer,fold-bn,layout{block=1},simplify,cse,dce,fuse,plan",
    "shape-infer,fuse{anchors=0},plan",
};
enum { NOPTS = sizeof with_options / sizeof *with_options };

/* The pipelines under test: every pass alone, -O0..-O3, then the above. */
static const char *pipeline_of(int i)
{
    return i < PASS_COUNT ? pass_table[i].name
         : i < PASS_COUNT + 4 ? icc_pipeline_for_level(i - PASS_COUNT) : with_options[i - PASS_COUNT - 4];
}

/* ---- tests --------------------------------------------------------------- */

/* The generator's graphs are valid, run, and survive print -> parse. */
START_TEST(generated_graphs_run)
{
    int nodes = 0;
    for (unsigned seed = 0; seed < NGRAPHS; seed++) {
        ir_graph *g = gen_graph(seed);
        nodes += g->nnodes;
        ir_tensor *in = gen_inputs(g, seed);
        ir_tensor out[16];
        ck_assert_int_le(g->noutputs, 16);
        icc_diag d = {{0}};
        char *text = ir_print_string(g, NULL);
        ck_assert_msg(ir_interp_run(g, in, out, &d) == 0, "graph %u: %s\n%s", seed, d.msg, text);
        ir_tensors_free(out, g->noutputs);
        char *text2;
        ir_graph *c = copy_graph(g, &text2);
        char *text3 = ir_print_string(c, NULL);
        ck_assert_str_eq(text2, text3);
        free(text);
        free(text2);
        free(text3);
        ir_graph_destroy(c);
        free_inputs(in, g->ninputs);
        ir_graph_destroy(g);
    }
    ck_assert_int_gt(nodes, NGRAPHS * 5);
}
END_TEST

/* Runs pipeline `_i` on a copy of every graph and compares outputs. */
START_TEST(pipeline_preserves_outputs)
{
    const char *pl = pipeline_of(_i);
    icc_pipeline p;
    icc_diag d = {{0}};
    ck_assert_msg(icc_pipeline_parse(pl, &p, &d) == 0, "%s", d.msg);
    int failed = 0, changed = 0, shown = 0, blocked = 0;
    char first[1024] = "";
    for (unsigned seed = 0; seed < NGRAPHS; seed++) {
        ir_graph *g = gen_graph(seed);
        ir_tensor *in = gen_inputs(g, seed);
        ir_tensor want[16], got[16];
        ck_assert_msg(ir_interp_run(g, in, want, &d) == 0, "%s", d.msg);
        char *text;
        ir_graph *c = copy_graph(g, &text);
        char why[1024] = "";
        if (icc_pipeline_run(&p, c, NULL, &d) < 0) {
            snprintf(why, sizeof why, "the pipeline failed: %s", d.msg);
        } else if (c->noutputs != g->noutputs) {
            snprintf(why, sizeof why, "%d outputs, expected %d", c->noutputs, g->noutputs);
        } else if (ir_interp_run(c, in, got, &d) < 0) {
            snprintf(why, sizeof why, "the result does not run: %s", d.msg);
        } else {
            for (int k = 0; k < g->noutputs && !why[0]; k++) {
                compare(&want[k], &got[k], why, sizeof why);
                if (why[0]) {
                    char pre[64];
                    snprintf(pre, sizeof pre, "output %d: ", k);
                    size_t pl2 = strlen(pre), wl = strlen(why);
                    if (pl2 + wl < sizeof why) {
                        memmove(why + pl2, why, wl + 1);
                        memcpy(why, pre, pl2);
                    }
                }
            }
            ir_tensors_free(got, c->noutputs);
        }
        char *after = ir_print_string(c, NULL);
        if (after && strcmp(after, text))
            changed++;
        for (int k = 0; k < c->nnodes; k++)
            if (c->nodes[k]->op == IR_OP_CONV_NCHWC) {
                blocked++;
                break;
            }
        if (why[0]) {
            if (!failed)
                snprintf(first, sizeof first, "graph %u: %s", seed, why);
            failed++;
            /* the first few in full; the rest would drown the log */
            if (shown++ < 2)
                printf("[%s] graph %u: %s\n%s# after the pipeline:\n%s\n", pl, seed, why, text,
                       after ? after : "");
            fflush(stdout);
        }
        free(after);
        free(text);
        ir_tensors_free(want, g->noutputs);
        ir_graph_destroy(c);
        free_inputs(in, g->ninputs);
        ir_graph_destroy(g);
    }
    icc_pipeline_free(&p);
    printf("[%s] %d of %d graphs changed, %d failed\n", pl, changed, NGRAPHS, failed);
    fflush(stdout);
    ck_assert_msg(!failed, "[%s] %d of %d graphs failed; first: %s", pl, failed, NGRAPHS, first);
    /* The generator gives these passes work; a pass that never changes
     * anything here is not being tested. */
    if (_i == PASS_DCE || _i == PASS_FOLD || _i == PASS_CSE || _i == PASS_SIMPLIFY || _i == PASS_FOLD_BN)
        ck_assert_msg(changed >= NGRAPHS / 10, "[%s] changed only %d of %d graphs", pl, changed, NGRAPHS);
    /* and layout{block=1} has 2-D Convs to convert */
    if (strstr(pl, "layout{block=1}"))
        ck_assert_msg(blocked >= NGRAPHS / 20, "[%s] converted Convs in only %d of %d graphs", pl, blocked, NGRAPHS);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("random_graphs");
    TCase *tc = tcase_create("random");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, generated_graphs_run);
    tcase_add_loop_test(tc, pipeline_preserves_outputs, 0, PASS_COUNT + 4 + NOPTS);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return icc_run_suite(suite());
}
