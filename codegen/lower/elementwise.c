/* elementwise.c - the elementwise family: every elementwise op of the
 * interpreter as a scalar formula, for every dtype it accepts (the same
 * formulas as ir/ref/elementwise*.c); integer inputs of ops defined by
 * real arithmetic (Erf, Shrink, Pow with a float) compute in f64 like the
 * reference. Inputs are read through their broadcasting index maps, or
 * computed when a member of the node's fused group produces them.
 */
#include <math.h>
#include <string.h>

#include "codegen/kir_math.h"
#include "codegen/lower/internal.h"
#include "ir/ops.h"

/* Input i at the current output index: size-1 and missing leading dims
 * read index 0 (numpy broadcasting), narrow floats widen to f32. Inside a
 * fused group the current index is c->at when set (an interior value
 * being computed), else the loop variables. */
static kir_expr *input(lctx *c, int i)
{
    const ir_value *v = c->n->in[i];
    const ir_type *t = &v->type;
    kir_expr *idx[IR_MAX_RANK];
    for (int d = 0; d < t->rank; d++) {
        int od = c->orank - t->rank + d;
        bool one = ir_dim_is_const(t->dims[d]) && t->dims[d].v == 1;
        idx[d] = one ? kir_const_i(c->k, IR_I64, 0) : c->at ? c->at[od] : kir_var(c->k, c->var[od]);
    }
    if (lw_interior(c->n, v))
        return lw_fused_value(c, v, idx);
    kir_expr *e = kir_load(c->k, c->buf[i], idx);
    ir_dtype cd = lw_compute_dtype(t->dtype);
    return cd != t->dtype ? kir_op1(c->k, KIR_CAST, cd, e) : e;
}

static kir_expr *cf(lctx *c, double v) { return kir_const_f(c->k, c->cdt, v); }

static kir_expr *zero_of(lctx *c, ir_dtype t)
{
    return ir_dtype_is_float(t) ? kir_const_f(c->k, t, 0) : kir_const_i(c->k, t, 0);
}

/* x < 0 ? a : b */
static kir_expr *if_neg(lctx *c, kir_expr *x, kir_expr *a, kir_expr *b)
{
    kir_kernel *k = c->k;
    kir_expr *neg = kir_op2(k, KIR_LT, IR_BOOL, x, zero_of(c, x ? x->dtype : c->cdt));
    return kir_op3(k, KIR_SELECT, x ? x->dtype : c->cdt, neg, a, b);
}

/* e^x - 1 without the cancellation near 0 (where it loses all digits:
 * e^-1e-30 - 1 is 0, and e^-0 - 1 is +0 where the reference's expm1
 * keeps -0): below |x| = 0.5 the Taylor series to x^8 (x^14 in f64; the
 * rest is under half an ulp), past it e^x - 1 (at most 1.3 bits lost). */
kir_expr *lw_expm1(lctx *c, kir_expr *x)
{
    kir_kernel *k = c->k;
    ir_dtype t = c->cdt;
    int n = t == IR_F64 ? 14 : 8;
    double f = 1;
    for (int i = 2; i <= n + 1; i++)
        f *= i;
    kir_expr *p = cf(c, 1 / f);   /* 1 / (n+1)! */
    for (int i = n; i >= 1; i--) {
        f /= i + 1;
        p = kir_op3(k, KIR_FMA, t, p, x, cf(c, 1 / f));
    }
    kir_expr *small = kir_op2(k, KIR_MUL, t, x, p);
    kir_expr *big = kir_op2(k, KIR_SUB, t, kir_op1(k, KIR_EXP, t, x), cf(c, 1));
    kir_expr *near = kir_op2(k, KIR_LT, IR_BOOL, kir_op1(k, KIR_ABS, t, x), cf(c, 0.5));
    return kir_op3(k, KIR_SELECT, t, near, small, big);
}

/* v converted to t (no-op when it already is t). */
static kir_expr *cvt(lctx *c, kir_expr *v, ir_dtype t)
{
    return v && v->dtype != t ? kir_op1(c->k, KIR_CAST, t, v) : v;
}

/* max(x, 0) + log(1 + e^-|x|): no overflow for large x */
static kir_expr *softplus(lctx *c, kir_expr *x)
{
    kir_kernel *k = c->k;
    ir_dtype t = c->cdt;
    kir_expr *e = kir_op1(k, KIR_EXP, t, kir_op1(k, KIR_NEG, t, kir_op1(k, KIR_ABS, t, x)));
    return kir_op2(k, KIR_ADD, t, kir_op2(k, KIR_MAX, t, x, cf(c, 0)),
                   kir_op1(k, KIR_LOG, t, kir_op2(k, KIR_ADD, t, cf(c, 1), e)));
}

/* Pow when the exponent's dtype differs from the base's, or both are
 * integers: integer pairs power in 64 bits of the base's signedness (the
 * reference's int64/uint64 class, exponent bits reinterpreted), anything
 * with a float computes in f64 and rounds (or saturates) once into the
 * base's dtype, like the reference's double math. */
static kir_expr *pow_mixed(lctx *c, kir_expr *x, kir_expr *y)
{
    ir_dtype a = c->n->in[0]->type.dtype, b = c->n->in[1]->type.dtype;
    ir_dtype t = ir_dtype_is_int(a) && ir_dtype_is_int(b) ? (ir_dtype_is_signed(a) ? IR_I64 : IR_U64)
                                                          : IR_F64;
    return kir_op2(c->k, KIR_POW, t, cvt(c, x, t), cvt(c, y, t));
}

/* Python's %: the remainder takes the divisor's sign (integers only). */
static kir_expr *py_mod(lctx *c, kir_expr *x, kir_expr *y)
{
    kir_kernel *k = c->k;
    ir_dtype t = c->cdt;
    kir_expr *r = kir_op2(k, KIR_REM, t, x, y);
    if (!ir_dtype_is_signed(t))
        return r;
    kir_expr *z = zero_of(c, t);
    kir_expr *differ = kir_op2(k, KIR_NE, IR_BOOL, kir_op2(k, KIR_LT, IR_BOOL, r, z),
                               kir_op2(k, KIR_LT, IR_BOOL, y, z));
    kir_expr *fix = kir_op2(k, KIR_AND, IR_BOOL, kir_op2(k, KIR_NE, IR_BOOL, r, z), differ);
    return kir_op3(k, KIR_SELECT, t, fix, kir_op2(k, KIR_ADD, t, r, y), r);
}

/* x < -lambd ? x + bias : x > lambd ? x - bias : 0, in t. */
static kir_expr *shrink(lctx *c, kir_expr *x, ir_dtype t)
{
    kir_kernel *k = c->k;
    double lambd = ir_attr_float(c->n, "lambd", 0.5), bias = ir_attr_float(c->n, "bias", 0);
    kir_expr *l = kir_const_f(k, t, lambd), *bs = kir_const_f(k, t, bias);
    kir_expr *hi = kir_op3(k, KIR_SELECT, t, kir_op2(k, KIR_LT, IR_BOOL, l, x), kir_op2(k, KIR_SUB, t, x, bs),
                           kir_const_f(k, t, 0));
    return kir_op3(k, KIR_SELECT, t, kir_op2(k, KIR_LT, IR_BOOL, x, kir_const_f(k, t, -lambd)),
                   kir_op2(k, KIR_ADD, t, x, bs), hi);
}

/* The ops that map to one unary KIR op on floats. */
static kir_op unary_kop(ir_op op)
{
    switch (op) {
    case IR_OP_SQRT: return KIR_SQRT;
    case IR_OP_EXP: return KIR_EXP;
    case IR_OP_LOG: return KIR_LOG;
    case IR_OP_TANH: return KIR_TANH;
    case IR_OP_FLOOR: return KIR_FLOOR;
    case IR_OP_CEIL: return KIR_CEIL;
    case IR_OP_ROUND: return KIR_ROUND;
    case IR_OP_SIN: return KIR_SIN;
    case IR_OP_COS: return KIR_COS;
    case IR_OP_TAN: return KIR_TAN;
    case IR_OP_ASIN: return KIR_ASIN;
    case IR_OP_ACOS: return KIR_ACOS;
    case IR_OP_ATAN: return KIR_ATAN;
    case IR_OP_SINH: return KIR_SINH;
    case IR_OP_COSH: return KIR_COSH;
    case IR_OP_ASINH: return KIR_ASINH;
    case IR_OP_ACOSH: return KIR_ACOSH;
    case IR_OP_ATANH: return KIR_ATANH;
    default: return KIR_OP_COUNT;
    }
}

/* The only node of n's graph reading value v (not a graph output), or
 * NULL; NULL too where a node of the graph has subgraphs, which may read
 * v as a captured value. */
static const ir_node *sole_reader(const ir_node *n, const ir_value *v)
{
    const ir_graph *g = n->graph;
    if (!g || ir_value_count_uses(g, v) != 1)   /* (a graph output counts as a use) */
        return NULL;
    const ir_node *r = NULL;
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *m = g->nodes[k];
        if (ir_node_has_subgraph(m))
            return NULL;
        for (int i = 0; !m->dead && i < m->nin; i++)
            if (m->in[i] == v)
                r = m;
    }
    return r;
}

/* A constant scalar f32 operand's value, or NAN. */
static double const_scalar(const ir_value *v)
{
    return v && v->kind == IR_VAL_CONST && v->type.dtype == IR_F32 && v->cval.numel == 1 ? ir_tensor_getf(&v->cval, 0)
                                                                                           : NAN;
}

/* Whether Div n is a quantization's x / scale (the lower-quant pass's
 * QuantizeLinear: Div -> Round -> [Add a zero point] -> a Clip to an
 * integer range within 2^31, or the saturating Cast to an integer of 32
 * bits or fewer that simplify leaves of it), its divisor a constant in
 * [2^-40, 2^20] in magnitude (*b). Its quotient is then only rounded to
 * an integer and saturated, which rounded_quotient computes without a
 * division. */
static bool quant_quotient(const ir_node *n, double *b)
{
    *b = const_scalar(n->in[1]);
    double m = fabs(*b);
    if (!(m >= 0x1p-40 && m <= 0x1p20) || n->out[0]->type.dtype != IR_F32 || n->in[0]->type.dtype != IR_F32)
        return false;
    const ir_node *r = sole_reader(n, n->out[0]);
    if (!r || r->op != IR_OP_ROUND)
        return false;
    const ir_node *u = sole_reader(r, r->out[0]);
    if (u && u->op == IR_OP_ADD) {
        double z = const_scalar(u->in[u->in[0] == r->out[0] ? 1 : 0]);
        if (!(fabs(z) <= 0x1p31))
            return false;
        u = sole_reader(u, u->out[0]);
    }
    if (u && u->op == IR_OP_CAST) {
        ir_dtype to = u->out[0]->type.dtype;
        return ir_dtype_is_int(to) && to != IR_BOOL && ir_dtype_size(to) <= 4;
    }
    if (!u || u->op != IR_OP_CLIP || u->nin < 3)
        return false;
    double lo = const_scalar(u->in[1]), hi = const_scalar(u->in[2]);
    return fabs(lo) <= 0x1p31 && fabs(hi) <= 0x1p31;
}

/* a / b for quant_quotient's Div, without vdivps (10-16 cycles a vector
 * where this is a few FMAs): q0 = a r with r = 1/b rounded, then one
 * correction, q1 = q0 + (a - q0 b) r (the remainder exact by an FMA),
 * which is a / b correctly rounded wherever |a| and the quotient lie
 * within 2^-100..2^100 (Markstein; compared over all 2^32 f32 patterns
 * of a for 24 divisors, docs/precision.md), so for |a| in 2^-42..2^60.
 * Elsewhere q0 itself: below, |a / b| < 1/4 and both round to a zero of
 * the same sign; above, both are beyond 2^40 with the same sign (or
 * inf, NaN), which the Clip after them takes to the same bound. */
static kir_expr *rounded_quotient(lctx *c, kir_expr *a, double b)
{
    kir_kernel *k = c->k;
    ir_dtype t = c->cdt;
    float bf = (float)b, rf = 1.0f / bf;
    kir_expr *r = cf(c, rf), *bv = cf(c, bf);
    kir_expr *q0 = kir_op2(k, KIR_MUL, t, a, r);
    kir_expr *rem = kir_op3(k, KIR_FMA, t, kir_op1(k, KIR_NEG, t, q0), bv, a);
    kir_expr *q1 = kir_op3(k, KIR_FMA, t, rem, r, q0);
    kir_expr *m = kir_op1(k, KIR_ABS, t, a);
    kir_expr *in = kir_op2(k, KIR_AND, IR_BOOL, kir_op2(k, KIR_LE, IR_BOOL, cf(c, 0x1p-42), m),
                           kir_op2(k, KIR_LE, IR_BOOL, m, cf(c, 0x1p60)));
    return kir_op3(k, KIR_SELECT, t, in, q1, q0);
}

/* The scalar expression of the node at the current index, in cdt (or
 * bool for comparisons, or whatever the final cast to the output's dtype
 * starts from); NULL when unsupported or out of memory. */
kir_expr *lw_formula(lctx *c)
{
    const ir_node *n = c->n;
    kir_kernel *k = c->k;
    ir_dtype t = c->cdt;
    kir_expr *x = n->nin > 0 && n->in[0] ? input(c, 0) : NULL;
    kir_expr *y = n->nin > 1 && n->in[1] ? input(c, 1) : NULL;
    double alpha = ir_attr_float(n, "alpha", 0), beta = ir_attr_float(n, "beta", 0);
    kir_op uop = unary_kop(n->op);
    if (uop != KIR_OP_COUNT)
        return kir_op1(k, uop, t, x);
    switch (n->op) {
    case IR_OP_ADD: return kir_op2(k, KIR_ADD, t, x, y);
    case IR_OP_SUB: return kir_op2(k, KIR_SUB, t, x, y);
    case IR_OP_MUL: return kir_op2(k, KIR_MUL, t, x, y);
    case IR_OP_DIV: {
        double b;
        if (t == IR_F32 && x && quant_quotient(n, &b))
            return rounded_quotient(c, x, b);
        return kir_op2(k, KIR_DIV, t, x, y);
    }
    case IR_OP_POW:
        if (y && y->dtype == t && ir_dtype_is_float(t)) {
            /* a constant exponent of 2 or 1 (x^2 in a decomposed norm): x * x
             * or x, which round as the reference's f64 pow does (the exact
             * square rounded once) and stay in vectors, where pow is a libm
             * call per element (not 0.5: sqrt(-0) and sqrt(-inf) are not
             * pow's +0 and +inf) */
            const ir_value *e = n->in[1];
            double ev = e->kind == IR_VAL_CONST && e->cval.numel == 1 ? ir_tensor_getf(&e->cval, 0) : NAN;
            if (ev == 2)
                return kir_op2(k, KIR_MUL, t, x, x);
            if (ev == 1)
                return x;
            return kir_op2(k, KIR_POW, t, x, y);
        }
        return pow_mixed(c, x, y);
    case IR_OP_MOD:
        if (ir_attr_int(n, "fmod", 0))
            return kir_op2(k, KIR_REM, t, x, y);
        return py_mod(c, x, y);
    case IR_OP_BIT_SHIFT:
        return kir_op2(k, strcmp(ir_attr_string(n, "direction", ""), "LEFT") ? KIR_SHR : KIR_SHL, t, x, y);
    case IR_OP_BITWISE_AND: return kir_op2(k, KIR_AND, t, x, y);
    case IR_OP_BITWISE_OR: return kir_op2(k, KIR_OR, t, x, y);
    case IR_OP_BITWISE_XOR: return kir_op2(k, KIR_XOR, t, x, y);
    case IR_OP_BITWISE_NOT: return kir_op1(k, KIR_NOT, t, x);
    case IR_OP_EQUAL: return kir_op2(k, KIR_EQ, IR_BOOL, x, y);
    case IR_OP_LESS: return kir_op2(k, KIR_LT, IR_BOOL, x, y);
    case IR_OP_LESS_OR_EQUAL: return kir_op2(k, KIR_LE, IR_BOOL, x, y);
    case IR_OP_GREATER: return kir_op2(k, KIR_LT, IR_BOOL, y, x);
    case IR_OP_GREATER_OR_EQUAL: return kir_op2(k, KIR_LE, IR_BOOL, y, x);
    case IR_OP_AND: return kir_op2(k, KIR_AND, IR_BOOL, x, y);
    case IR_OP_OR: return kir_op2(k, KIR_OR, IR_BOOL, x, y);
    case IR_OP_XOR: return kir_op2(k, KIR_XOR, IR_BOOL, x, y);
    case IR_OP_NOT: return kir_op1(k, KIR_NOT, IR_BOOL, x);
    case IR_OP_MAX:
    case IR_OP_MIN:
    case IR_OP_SUM:
    case IR_OP_MEAN: {
        kir_op op = n->op == IR_OP_MAX ? KIR_MAX : n->op == IR_OP_MIN ? KIR_MIN : KIR_ADD;
        bool mm = op != KIR_ADD && t == IR_F32;
        kir_expr *acc = x;
        for (int i = 1; i < n->nin; i++) {
            /* a constant operand (Max(x, 0), Min(x, 6): a ReLU6 written out)
             * as a compare and a blend; a constant first operand of two too */
            int ci = mm && n->nin == 2 && const_scalar(n->in[0]) == const_scalar(n->in[0]) ? 0 : i;
            double v = mm ? const_scalar(n->in[ci]) : NAN;
            kir_expr *o = ci == i ? acc : input(c, i);
            if (v == v)
                acc = op == KIR_MAX ? lw_max_const(k, t, o, v) : lw_min_const(k, t, o, v);
            else
                acc = kir_op2(k, op, t, acc, input(c, i));
        }
        return n->op == IR_OP_MEAN ? kir_op2(k, KIR_DIV, t, acc, cf(c, n->nin)) : acc;
    }
    case IR_OP_CAST:
    case IR_OP_CAST_LIKE:
        return x; /* the store's cast does it, with the IR's rules */
    case IR_OP_NEG: return kir_op1(k, KIR_NEG, t, x);
    case IR_OP_ABS: return kir_op1(k, KIR_ABS, t, x);
    case IR_OP_RELU: return if_neg(c, x, zero_of(c, t), x);
    case IR_OP_SIGN: {
        /* NaN and zeros fall through unchanged; unsigned is never < 0 */
        kir_expr *one = ir_dtype_is_float(t) ? cf(c, 1) : kir_const_i(k, t, 1);
        kir_expr *m1 = ir_dtype_is_float(t) ? cf(c, -1) : kir_const_i(k, t, -1);
        return kir_op3(k, KIR_SELECT, t, kir_op2(k, KIR_LT, IR_BOOL, zero_of(c, t), x), one, if_neg(c, x, m1, x));
    }
    case IR_OP_ERF:
        /* integers: real erf in f64, truncated back like the reference */
        if (!ir_dtype_is_float(t))
            return kir_op1(k, KIR_ERF, IR_F64, cvt(c, x, IR_F64));
        return kir_op1(k, KIR_ERF, t, x);
    case IR_OP_SHRINK: return shrink(c, ir_dtype_is_float(t) ? x : cvt(c, x, IR_F64),
                                     ir_dtype_is_float(t) ? t : IR_F64);
    case IR_OP_IS_NAN: return kir_op2(k, KIR_NE, IR_BOOL, x, x);
    case IR_OP_IS_INF: {
        kir_expr *r = kir_const_i(k, IR_BOOL, 0);
        if (ir_attr_int(n, "detect_positive", 1))
            r = kir_op2(k, KIR_OR, IR_BOOL, r, kir_op2(k, KIR_EQ, IR_BOOL, x, cf(c, INFINITY)));
        if (ir_attr_int(n, "detect_negative", 1))
            r = kir_op2(k, KIR_OR, IR_BOOL, r, kir_op2(k, KIR_EQ, IR_BOOL, x, cf(c, -INFINITY)));
        return r;
    }
    case IR_OP_RECIPROCAL: return kir_op2(k, KIR_DIV, t, cf(c, 1), x);
    case IR_OP_SIGMOID: return lw_sigmoid(k, t, x);
    case IR_OP_LEAKY_RELU: return if_neg(c, x, kir_op2(k, KIR_MUL, t, cf(c, alpha), x), x);
    case IR_OP_PRELU: return if_neg(c, x, kir_op2(k, KIR_MUL, t, x, y), x);
    case IR_OP_THRESHOLDED_RELU:
        return kir_op3(k, KIR_SELECT, t, kir_op2(k, KIR_LT, IR_BOOL, cf(c, alpha), x), x, cf(c, 0));
    case IR_OP_ELU:
        return if_neg(c, x, kir_op2(k, KIR_MUL, t, cf(c, alpha), lw_expm1(c, x)), x);
    case IR_OP_CELU: {
        /* x <= 0 ? alpha*(e^(x/alpha) - 1) : x */
        kir_expr *le = kir_op2(k, KIR_LE, IR_BOOL, x, cf(c, 0));
        kir_expr *em = kir_op2(k, KIR_MUL, t, cf(c, alpha), lw_expm1(c, kir_op2(k, KIR_DIV, t, x, cf(c, alpha))));
        return kir_op3(k, KIR_SELECT, t, le, em, x);
    }
    case IR_OP_SELU: {
        /* gamma * (x <= 0 ? alpha*(e^x - 1) : x) */
        double gamma = ir_attr_float(n, "gamma", 0);
        kir_expr *le = kir_op2(k, KIR_LE, IR_BOOL, x, cf(c, 0));
        kir_expr *em = kir_op2(k, KIR_MUL, t, cf(c, alpha), lw_expm1(c, x));
        return kir_op2(k, KIR_MUL, t, cf(c, gamma), kir_op3(k, KIR_SELECT, t, le, em, x));
    }
    case IR_OP_HARD_SIGMOID: return lw_hard_sigmoid(k, c->cdt, x, alpha, beta);
    case IR_OP_HARD_SWISH: return kir_op2(k, KIR_MUL, t, x, lw_hard_sigmoid(k, c->cdt, x, 1.0 / 6, 0.5));
    case IR_OP_SOFTPLUS: return softplus(c, x);
    case IR_OP_SOFTSIGN:
        return kir_op2(k, KIR_DIV, t, x, kir_op2(k, KIR_ADD, t, cf(c, 1), kir_op1(k, KIR_ABS, t, x)));
    case IR_OP_MISH: return kir_op2(k, KIR_MUL, t, x, kir_op1(k, KIR_TANH, t, softplus(c, x)));
    case IR_OP_GELU: {
        /* Written so that x < 0 does not cancel: 0.5 x (1 + tanh z) with
         * tanh z near -1, or 0.5 x (1 + erf) with erf near -1, round to 0
         * in f32 where the true value is a small number (and x / Gelu(x)
         * then is inf where the reference is finite). */
        if (!strcmp(ir_attr_string(n, "approximate", "none"), "tanh")) {
            /* 0.5 (1 + tanh z) = 1 / (1 + e^{-2z}); with e = e^{-2|z|} <= 1
             * (never inf), that is 1 / (1 + e) for z >= 0, e / (1 + e)
             * below. z = sqrt(2/pi) (x + 0.044715 x^3) */
            kir_expr *x3 = kir_op2(k, KIR_MUL, t, kir_op2(k, KIR_MUL, t, x, x), x);
            kir_expr *z = kir_op2(k, KIR_MUL, t, cf(c, sqrt(2 / M_PI)), kir_op3(k, KIR_FMA, t, cf(c, 0.044715), x3, x));
            kir_expr *a = kir_op2(k, KIR_MUL, t, cf(c, -2), kir_op1(k, KIR_ABS, t, z));
            /* f32: e^a at a >= -87, a normal number (past that the
             * result is x for z > 0 either way), and x 0 (-0) for z <
             * -43.5, where it is under |x| 2^-125: a subnormal e made every
             * operation after it a microcode assist (3 ns an element over
             * a byte classifier's conv outputs); x * 0 keeps -inf's NaN */
            kir_expr *e = kir_op1(k, KIR_EXP, t, t == IR_F32 ? lw_max_const(k, t, a, -87) : a);
            kir_expr *neg = kir_op2(k, KIR_LT, IR_BOOL, z, cf(c, 0));
            kir_expr *num = kir_op3(k, KIR_SELECT, t, neg, e, cf(c, 1));
            kir_expr *r = kir_op2(k, KIR_MUL, t, x, kir_op2(k, KIR_DIV, t, num, kir_op2(k, KIR_ADD, t, cf(c, 1), e)));
            if (t == IR_F32)
                r = kir_op3(k, KIR_SELECT, t, kir_op2(k, KIR_LT, IR_BOOL, z, cf(c, -43.5)),
                            kir_op2(k, KIR_MUL, t, x, cf(c, 0)), r);
            return r;
        }
        if (c->to_bf16 && t == IR_F32)
            return kir_math_gelu_bf16(k, x);
        /* 0.5 (1 + erf(x / sqrt 2)) = 0.5 erfc(-x / sqrt 2), one op
         * (kir_math_gelu_f32 on the CPU) */
        return kir_op1(k, KIR_GELU, t, x);
    }
    case IR_OP_CLIP: {
        /* constant bounds (ReLU6's 0 and 6) as a compare and a blend each */
        kir_expr *r = x;
        double lo = n->nin > 1 ? const_scalar(n->in[1]) : NAN, hi = n->nin > 2 ? const_scalar(n->in[2]) : NAN;
        if (y)
            r = t == IR_F32 && lo == lo ? lw_max_const(k, t, r, lo) : kir_op2(k, KIR_MAX, t, r, y);
        if (n->nin > 2 && n->in[2])
            r = t == IR_F32 && hi == hi ? lw_min_const(k, t, r, hi) : kir_op2(k, KIR_MIN, t, r, input(c, 2));
        return r;
    }
    case IR_OP_WHERE: {
        kir_expr *z = input(c, 2);
        return kir_op3(k, KIR_SELECT, y ? y->dtype : t, x, y, z);
    }
    default:
        return NULL;
    }
}

/* True if lw_formula() handles n's op and dtypes (shape inference already
 * rejected the dtypes the interpreter does not define for the op). */
bool lw_can_elementwise(const ir_node *n)
{
    if (n->nin < 1 || !n->in[0] || n->nout != 1)
        return false;
    ir_dtype t = n->in[0]->type.dtype;
    if (unary_kop(n->op) != KIR_OP_COUNT && !ir_dtype_is_float(t))
        return false;
    switch (n->op) {
    case IR_OP_ADD: case IR_OP_SUB: case IR_OP_MUL: case IR_OP_DIV: case IR_OP_MAX: case IR_OP_MIN:
    case IR_OP_SUM: case IR_OP_EQUAL: case IR_OP_LESS: case IR_OP_LESS_OR_EQUAL: case IR_OP_GREATER:
    case IR_OP_GREATER_OR_EQUAL: case IR_OP_AND: case IR_OP_OR: case IR_OP_XOR: case IR_OP_NOT:
    case IR_OP_NEG: case IR_OP_ABS: case IR_OP_RELU: case IR_OP_CLIP: case IR_OP_WHERE:
    case IR_OP_CAST: case IR_OP_SIGN: case IR_OP_PRELU: case IR_OP_ERF: case IR_OP_SHRINK:
    case IR_OP_POW:
        break;
    case IR_OP_CAST_LIKE:
        if (n->nin < 2 || !n->in[1])
            return false;
        break;
    case IR_OP_MOD:
        if (ir_dtype_is_float(t) && !ir_attr_int(n, "fmod", 0))
            return false;
        break;
    case IR_OP_BIT_SHIFT: case IR_OP_BITWISE_AND: case IR_OP_BITWISE_OR: case IR_OP_BITWISE_XOR:
    case IR_OP_BITWISE_NOT:
        if (!ir_dtype_is_int(t))
            return false;
        break;
    case IR_OP_MEAN: case IR_OP_RECIPROCAL: case IR_OP_SIGMOID: case IR_OP_LEAKY_RELU: case IR_OP_ELU:
    case IR_OP_SELU: case IR_OP_HARD_SIGMOID: case IR_OP_HARD_SWISH: case IR_OP_SOFTPLUS:
    case IR_OP_GELU: case IR_OP_IS_NAN: case IR_OP_IS_INF: case IR_OP_SOFTSIGN:
    case IR_OP_THRESHOLDED_RELU: case IR_OP_CELU: case IR_OP_MISH:
        if (!ir_dtype_is_float(t))
            return false;
        break;
    default:
        if (unary_kop(n->op) == KIR_OP_COUNT)
            return false;
        break;
    }
    return lw_shapes_known(n);
}
