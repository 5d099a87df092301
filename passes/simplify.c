/* simplify.c - local rewrites that remove work without changing a single
 * output bit, repeated until none applies: Identity and inference Dropout;
 * x*1, 1*x, x/1, and x+0, 0+x, x-0 where the zero's sign makes them exact;
 * Reshape/Squeeze/Unsqueeze/Flatten chains collapsed into one Reshape, and
 * any of them (and Expand, full Slice) that keeps x's shape removed;
 * Transpose chains composed; Casts to the same dtype and exact Cast round
 * trips removed; a Clip that covers an integer Cast's range before it
 * removed (the Cast saturates); single-input Concat removed.
 *
 * Every rule compares static types: a rewrite that would let broadcasting
 * or an unknown dim change the result's shape or dtype is not taken. A
 * value that is a graph output keeps its name: the value replacing it is
 * renamed, or, when it is a graph input, the output list points at it.
 */
#include "passes/pass.h"
#include "ir/ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_output(const ir_graph *g, const ir_value *v)
{
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == v)
            return true;
    return false;
}

/* Producer of v when it is a live node of op `op` (any op if op < 0). */
static ir_node *def_of(const ir_value *v, int op)
{
    if (!v || v->kind != IR_VAL_NODE || !v->def || v->def->dead)
        return NULL;
    return op < 0 || v->def->op == op ? v->def : NULL;
}

static bool is_reshape_like(int op)
{
    return op == IR_OP_RESHAPE || op == IR_OP_SQUEEZE || op == IR_OP_UNSQUEEZE || op == IR_OP_FLATTEN;
}


typedef struct simp {
    pass_ctx *c;
    int64_t removed, arith, reshapes, transposes, casts;
} simp;

/* Makes node n's output `from` disappear in favour of `to` (same value,
 * already checked by the caller) and erases n. A graph output keeps its
 * name by renaming `to`, which works only when `to` is a node's result
 * that no graph output names yet; a graph input may take the output's
 * place as it is. Returns false (nothing changed) otherwise. */
static bool forward(simp *s, ir_node *n, ir_value *from, ir_value *to)
{
    ir_graph *g = s->c->g;
    if (is_output(g, from)) {
        if (to->kind == IR_VAL_NODE && !is_output(g, to))
            to->name = from->name;
        else if (to->kind != IR_VAL_INPUT)
            return false;
    }
    ir_replace_all_uses(g, from, to);
    ir_node_erase(n);
    s->removed++;
    s->c->changed = true;
    return true;
}

/* Replaces n by a new node of op over in[0..nin) with n's output name
 * and type and n's attributes except `skip`; the caller adds attributes to
 * the returned node. n is erased. */
static ir_node *replace_node(simp *s, ir_node *n, int op, int nin, ir_value *const *in, const char *skip)
{
    ir_graph *g = s->c->g;
    ir_value *old = n->out[0];
    const char *name = old->name;
    ir_node *nn = ir_graph_add_node(g, op, n->name, nin, in, 1, &name, s->c->diag);
    if (!nn)
        return NULL;
    for (int i = 0; op == n->op && i < n->nattr; i++)
        if ((!skip || strcmp(n->attrs[i].name, skip)) && ir_node_add_attr(g, nn, &n->attrs[i]) < 0) {
            ir_errorf(s->c->diag, "out of memory");
            return NULL;
        }
    nn->out[0]->type = old->type;
    ir_replace_all_uses(g, old, nn->out[0]);
    ir_node_erase(n);
    s->c->changed = true;
    return nn;
}

/* Erases the producer of v when nothing uses v any more, and so on up
 * through single-output producers of the ops in `ops` (a rewrite that
 * bypassed a chain leaves it dead). */
static void drop_dead_chain(simp *s, ir_value *v, bool reshapes)
{
    for (ir_node *p; (p = def_of(v, -1)) && p->nout == 1 &&
                     (reshapes ? is_reshape_like(p->op) : p->op == IR_OP_TRANSPOSE) &&
                     ir_value_count_uses(s->c->g, v) == 0;) {
        ir_node_erase(p);
        s->removed++;
        v = p->in[0];
    }
}

/* True when v is a constant whose every element equals want; for float
 * zeros the sign must match too (neg_zero), since x + (+0) turns -0 into
 * +0 and x - (-0) does the same. */
static bool splat_of(const ir_value *v, double want, int zero_sign)
{
    if (!v || v->kind != IR_VAL_CONST || v->cval.numel == 0)
        return false;
    bool fl = ir_dtype_is_float(v->cval.dtype);
    if (!fl && !ir_dtype_is_int(v->cval.dtype))
        return false;
    for (int64_t i = 0; i < v->cval.numel; i++) {
        if (fl) {
            double x = ir_tensor_getf(&v->cval, i);
            if (x != want || (zero_sign && (signbit(x) != 0) != (zero_sign < 0)))
                return false;
        } else if (ir_tensor_geti(&v->cval, i) != (int64_t)want) {
            return false;
        }
    }
    return true;
}

/* x op c -> x when c is op's identity element and the result's type is
 * x's (broadcasting against c neither grows nor changes it). */
static bool simplify_arith(simp *s, ir_node *n)
{
    ir_value *a = n->in[0], *b = n->in[1], *y = n->out[0];
    if (!a || !b)
        return false;
    bool fl = ir_dtype_is_float(y->type.dtype);
    ir_value *x = NULL;
    switch (n->op) {
    case IR_OP_MUL:
        x = splat_of(b, 1, 0) ? a : splat_of(a, 1, 0) ? b : NULL;
        break;
    case IR_OP_DIV:
        x = splat_of(b, 1, 0) ? a : NULL;
        break;
    case IR_OP_ADD: /* only -0 is the float identity of + */
        x = splat_of(b, 0, fl ? -1 : 0) ? a : splat_of(a, 0, fl ? -1 : 0) ? b : NULL;
        break;
    case IR_OP_SUB: /* x - (+0) == x + (-0) */
        x = splat_of(b, 0, fl ? 1 : 0) ? a : NULL;
        break;
    }
    if (!x || !ir_type_same(&x->type, &y->type))
        return false;
    if (!forward(s, n, y, x))
        return false;
    s->arith++;
    return true;
}

/* Dropout is the identity in inference: training_mode absent or a
 * constant false, or the ratio a constant 0; its mask must be unused. */
static bool simplify_dropout(simp *s, ir_node *n)
{
    const ir_value *ratio = n->nin > 1 ? n->in[1] : NULL;
    const ir_value *train = n->nin > 2 ? n->in[2] : NULL;
    bool inference = !train || (train->kind == IR_VAL_CONST && train->cval.numel == 1 &&
                                ir_tensor_geti(&train->cval, 0) == 0);
    bool no_drop = ratio && ratio->kind == IR_VAL_CONST && ratio->cval.numel == 1 &&
                   ir_tensor_getf(&ratio->cval, 0) == 0;
    if (!inference && !no_drop)
        return false;
    if (n->nout > 1 && ir_value_count_uses(s->c->g, n->out[1]) > 0)
        return false;
    return forward(s, n, n->out[0], n->in[0]);
}

/* The dtype a Cast or CastLike produces, IR_UNDEF if unknown. */
static ir_dtype cast_to(const ir_node *n)
{
    if (n->op == IR_OP_CAST_LIKE)
        return n->nin > 1 && n->in[1] ? n->in[1]->type.dtype : IR_UNDEF;
    int64_t to = ir_attr_int(n, "to", -1);
    return to >= 0 && to <= 1000 ? ir_dtype_from_onnx((int)to) : IR_UNDEF;
}

static int float_mantissa(ir_dtype t)
{
    switch (t) {
    case IR_F16: return 11;
    case IR_BF16: return 8;
    case IR_F32: return 24;
    case IR_F64: return 53;
    default: return 0;
    }
}

static int float_exponent(ir_dtype t)
{
    switch (t) {
    case IR_F16: return 5;
    case IR_BF16: case IR_F32: return 8;
    case IR_F64: return 11;
    default: return 0;
    }
}

/* True when every value of dtype a (NaN, infinities and -0 included) is
 * represented exactly in dtype b and comes back unchanged by a cast back
 * to a, so Cast(Cast(x, b), a) == x. */
static bool cast_exact(ir_dtype a, ir_dtype b)
{
    if (a == IR_BOOL)
        return b != IR_UNDEF;  /* 0/1 survive anywhere; nonzero -> true */
    if (ir_dtype_is_float(a))
        return ir_dtype_is_float(b) && float_mantissa(b) >= float_mantissa(a) &&
               float_exponent(b) >= float_exponent(a);
    if (!ir_dtype_is_int(a))
        return false;
    int bits = (int)ir_dtype_size(a) * 8 - ir_dtype_is_signed(a); /* magnitude bits */
    if (ir_dtype_is_float(b))
        return bits <= float_mantissa(b);
    if (!ir_dtype_is_int(b))
        return false;
    int bbits = (int)ir_dtype_size(b) * 8 - ir_dtype_is_signed(b);
    return bits <= bbits && (ir_dtype_is_signed(b) || !ir_dtype_is_signed(a));
}

/* The range of integer dtype t (false for others and bool). */
static bool int_range(ir_dtype t, double *lo, double *hi)
{
    if (!ir_dtype_is_int(t) || t == IR_BOOL || ir_dtype_size(t) > 4)
        return false;
    int bits = (int)ir_dtype_size(t) * 8;
    *lo = ir_dtype_is_signed(t) ? -ldexp(1, bits - 1) : 0;
    *hi = ir_dtype_is_signed(t) ? ldexp(1, bits - 1) - 1 : ldexp(1, bits) - 1;
    return true;
}

/* A constant scalar bound of Clip p (input i), or `absent` when there is
 * none; false when it is not a constant. */
static bool clip_bound(const ir_node *p, int i, double absent, double *out)
{
    const ir_value *b = i < p->nin ? p->in[i] : NULL;
    if (!b) {
        *out = absent;
        return true;
    }
    if (b->kind != IR_VAL_CONST || b->cval.numel != 1 || !ir_dtype_is_float(b->cval.dtype))
        return false;
    *out = ir_tensor_getf(&b->cval, 0);
    return !isnan(*out);
}

/* Cast(Clip(x, lo, hi), to = an integer type T) -> Cast(x) when [lo, hi]
 * covers T's range: the float-to-integer Cast truncates and saturates
 * (NaN -> 0, as the interpreter and the backend both do), so the Clip
 * changes no result: a value below lo <= min(T) casts to min(T) either
 * way, above hi >= max(T) to max(T), NaN to 0 (Clip keeps NaN). A
 * QuantizeLinear to u8/i8 lowers to exactly this Clip before its Cast. */
static bool simplify_clip_cast(simp *s, ir_node *n, ir_dtype to)
{
    ir_node *p = def_of(n->in[0], IR_OP_CLIP);
    double tlo, thi, lo, hi;
    if (!p || p->nout != 1 || !ir_dtype_is_float(p->in[0]->type.dtype) || !int_range(to, &tlo, &thi) ||
        !clip_bound(p, 1, -INFINITY, &lo) || !clip_bound(p, 2, INFINITY, &hi) || lo > tlo || hi < thi ||
        !ir_type_same(&p->in[0]->type, &p->out[0]->type))
        return false;
    n->in[0] = p->in[0];
    if (ir_value_count_uses(s->c->g, p->out[0]) == 0 && !is_output(s->c->g, p->out[0])) {
        ir_node_erase(p);
        s->removed++;
    }
    s->c->changed = true;
    s->casts++;
    return true;
}

static bool simplify_cast(simp *s, ir_node *n)
{
    ir_value *x = n->in[0], *y = n->out[0];
    ir_dtype to = cast_to(n);
    if (to == IR_UNDEF)
        return false;
    if (n->op == IR_OP_CAST && simplify_clip_cast(s, n, to))
        return true;
    if (to == x->type.dtype) {
        if (forward(s, n, y, x)) {
            s->casts++;
            return true;
        }
        return false;
    }
    ir_node *p = def_of(x, -1);
    if (!p || (p->op != IR_OP_CAST && p->op != IR_OP_CAST_LIKE))
        return false;
    ir_value *src = p->in[0];
    if (to != src->type.dtype || cast_to(p) != x->type.dtype || !cast_exact(to, x->type.dtype))
        return false;
    if (!forward(s, n, y, src))
        return false;
    s->casts++;
    return true;
}

/* The perm of a Transpose over rank r (default: reversed); false when it
 * cannot be known or is malformed. */
static bool transpose_perm(const ir_node *n, int r, int64_t *perm)
{
    const int64_t *p;
    int np = ir_attr_ints(n, "perm", &p);
    if (r < 0 || r > IR_MAX_RANK)
        return false;
    if (np < 0) {
        for (int i = 0; i < r; i++)
            perm[i] = r - 1 - i;
        return true;
    }
    if (np != r)
        return false;
    bool seen[IR_MAX_RANK] = {0};
    for (int i = 0; i < r; i++) {
        if (p[i] < 0 || p[i] >= r || seen[p[i]])
            return false;
        seen[p[i]] = true;
        perm[i] = p[i];
    }
    return true;
}

static bool simplify_transpose(simp *s, ir_node *n)
{
    ir_value *x = n->in[0], *y = n->out[0];
    int r = x->type.rank;
    int64_t p2[IR_MAX_RANK];
    if (!transpose_perm(n, r, p2))
        return false;
    bool ident = true;
    for (int i = 0; i < r; i++)
        ident &= p2[i] == i;
    if (ident) {
        if (!forward(s, n, y, x))
            return false;
        s->transposes++;
        return true;
    }
    ir_node *p = def_of(x, IR_OP_TRANSPOSE);
    int64_t p1[IR_MAX_RANK], q[IR_MAX_RANK];
    if (!p || !transpose_perm(p, p->in[0]->type.rank, p1) || p->in[0]->type.rank != r)
        return false;
    /* y[i] = x[p2[i]] = src[p1[p2[i]]] */
    ident = true;
    for (int i = 0; i < r; i++) {
        q[i] = p1[p2[i]];
        ident &= q[i] == i;
    }
    if (ident) {
        if (!forward(s, n, y, p->in[0]))
            return false;
        drop_dead_chain(s, x, false);
        s->transposes++;
        return true;
    }
    ir_node *nn = replace_node(s, n, IR_OP_TRANSPOSE, 1, &p->in[0], "perm");
    if (!nn || ir_node_set_ints(s->c->g, nn, "perm", q, r) < 0)
        return false;
    drop_dead_chain(s, x, false);
    s->transposes++;
    return true;
}

/* Reshape, Squeeze, Unsqueeze, Flatten: removed when the shape does not
 * change; a chain of them collapsed into one Reshape of the chain's
 * source, with a constant shape (the final static type, or the last
 * Reshape's own constant shape when it cannot refer to the intermediate
 * dims through a 0). */
static bool simplify_reshape(simp *s, ir_node *n)
{
    ir_graph *g = s->c->g;
    ir_value *x = n->in[0], *y = n->out[0];
    if (ir_type_same(&x->type, &y->type)) {
        if (!forward(s, n, y, x))
            return false;
        s->reshapes++;
        return true;
    }
    ir_value *src = x;
    int len = 0;
    for (ir_node *p; (p = def_of(src, -1)) && is_reshape_like(p->op); len++)
        src = p->in[0];
    if (!len)
        return false;
    ir_value *shape = NULL;
    if (n->op == IR_OP_RESHAPE && n->in[1]->kind == IR_VAL_CONST) {
        bool zero = false;
        for (int64_t i = 0; i < n->in[1]->cval.numel; i++)
            zero |= ir_tensor_geti(&n->in[1]->cval, i) == 0;
        if (!zero || ir_attr_int(n, "allowzero", 0))
            shape = n->in[1];
    }
    bool zero_dim = false;
    if (!shape) {
        if (!ir_type_is_static(&y->type))
            return false;
        int64_t dims[IR_MAX_RANK];
        for (int i = 0; i < y->type.rank; i++) {
            dims[i] = y->type.dims[i].v;
            zero_dim |= dims[i] == 0;
        }
        ir_type st = {.dtype = IR_I64, .rank = 1, .dims = {ir_dim_const(y->type.rank)}};
        char base[256], buf[256];
        snprintf(base, sizeof base, "%.200s_shape", y->name);
        shape = ir_graph_add_const(g, ir_graph_fresh_name(g, base, "", buf, sizeof buf), &st, dims, s->c->diag);
        if (!shape)
            return false;
    }
    ir_value *in[2] = {src, shape};
    /* Our own shape spells every dim out, so a 0 in it is a 0 (allowzero);
     * the old node's allowzero belonged to its own shape. */
    ir_node *nn = replace_node(s, n, IR_OP_RESHAPE, 2, in, shape == n->in[1] ? NULL : "allowzero");
    if (!nn)
        return false;
    if (zero_dim && ir_node_set_int(g, nn, "allowzero", 1) < 0)
        return false;
    drop_dead_chain(s, x, true);
    s->reshapes++;
    return true;
}

/* Slice with unit steps whose result has x's whole shape took everything:
 * with step 1 an axis keeps its full length only from 0 to its end. */
static bool simplify_slice(simp *s, ir_node *n)
{
    ir_value *x = n->in[0], *y = n->out[0];
    const ir_value *steps = n->nin > 4 ? n->in[4] : NULL;
    if (steps) {
        if (steps->kind != IR_VAL_CONST)
            return false;
        for (int64_t i = 0; i < steps->cval.numel; i++)
            if (ir_tensor_geti(&steps->cval, i) != 1)
                return false;
    }
    return ir_type_same(&x->type, &y->type) && forward(s, n, y, x);
}

/* One rewrite at n if any applies. */
static bool simplify_node(simp *s, ir_node *n)
{
    if (n->nout < 1 || n->nin < 1 || !n->in[0])
        return false;
    ir_value *x = n->in[0], *y = n->out[0];
    switch (n->op) {
    case IR_OP_IDENTITY:
        return forward(s, n, y, x);
    case IR_OP_DROPOUT:
        return simplify_dropout(s, n);
    case IR_OP_ADD: case IR_OP_SUB: case IR_OP_MUL: case IR_OP_DIV:
        return simplify_arith(s, n);
    case IR_OP_RESHAPE: case IR_OP_SQUEEZE: case IR_OP_UNSQUEEZE: case IR_OP_FLATTEN:
        return simplify_reshape(s, n);
    case IR_OP_TRANSPOSE:
        return simplify_transpose(s, n);
    case IR_OP_CAST: case IR_OP_CAST_LIKE:
        return simplify_cast(s, n);
    case IR_OP_EXPAND:
        return ir_type_same(&x->type, &y->type) && forward(s, n, y, x);
    case IR_OP_CONCAT:
        return n->nin == 1 && x->type.dtype == y->type.dtype && forward(s, n, y, x);
    case IR_OP_SLICE:
        return simplify_slice(s, n);
    }
    return false;
}

int pass_simplify(pass_ctx *c)
{
    ir_graph *g = c->g;
    simp s = {.c = c};
    /* Each sweep may expose new chances (a removed Identity joins two
     * Transposes); every rewrite removes a node or shortens a chain, so
     * this terminates, and the bound is only a guard. */
    for (int sweep = 0; sweep < 1000; sweep++) {
        bool any = false;
        for (int k = 0; k < g->nnodes; k++) {
            ir_node *n = g->nodes[k];
            if (n->dead)
                continue;
            c->diag->msg[0] = 0;
            if (simplify_node(&s, n))
                any = true;
            else if (c->diag->msg[0])
                return -1;
        }
        if (!any)
            break;
    }
    if (pass_commit_rewrites(c) < 0)
        return -1;
    pass_stat(c, "nodes removed", s.removed);
    pass_stat(c, "arithmetic identities", s.arith);
    pass_stat(c, "reshapes", s.reshapes);
    pass_stat(c, "transposes", s.transposes);
    pass_stat(c, "casts", s.casts);
    return 0;
}
