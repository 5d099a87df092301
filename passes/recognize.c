/* recognize.c - replaces the decomposed forms of normalizations and
 * activations that exporters emit by the one registry op that computes
 * the same thing, so that the backend makes one kernel of each:
 *
 *   LayerNormalization  d = x - ReduceMean(x); d / Sqrt(ReduceMean(d*d) + eps)
 *                       [* gamma] [+ beta], the variance also as
 *                       ReduceMean(x*x) - ReduceMean(x)^2
 *   RMSNormalization    x / Sqrt(ReduceMean(x*x) + eps) [* gamma]
 *   Softmax             e = Exp(x [- ReduceMax(x)]); e / ReduceSum(e)
 *   LogSoftmax          t = x [- ReduceMax(x)]; t - Log(ReduceSum(Exp(t))),
 *                       and Log(Softmax(x))
 *   Gelu                0.5 * x * (1 + Erf(x / sqrt(2)))
 *   Gelu (tanh)         0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
 *   HardSwish           x * Clip(x + 3, 0, 6) / 6, and x * HardSigmoid(x) with
 *                       alpha 1/6 and beta 1/2 (as PaddlePaddle exports
 *                       it: Paddle2ONNX's models; the Clip form is the same function up to
 *                       rounding, and as one op its epilogue multiplies where
 *                       the decomposed one divided by 6 per element)
 *
 * Matching follows the data flow, so operand order of commutative ops,
 * the association of products, and the spellings exporters use for the
 * same arithmetic (Div by c or Mul by 1/c; Pow(x,2) or x*x; Sqrt then Div,
 * or Reciprocal/Pow(.,-0.5) then Mul; Add or a two-input Sum) do not
 * matter. gamma and beta are constants that vary only along the
 * normalized dims (broadcast into a new constant of the normalized shape
 * when smaller), or any value of exactly that shape. When the centring
 * x - mean is also used elsewhere, the rest is still an RMSNorm of it.
 * Products are matched
 * by flattening them into a constant coefficient and a list of factors,
 * compared with a relative tolerance. Reductions must keep their dims and
 * have constant axes: the trailing dims [axis, rank) for the norms, one
 * axis for the softmaxes. Every value inside a pattern must be used only
 * by the pattern and none may be a graph output, otherwise rewriting would
 * compute it twice; the final value keeps its name, so graph outputs keep
 * theirs. The pattern's nodes are erased; constants left unused are dce's.
 * Run after fold, so that constant subexpressions are single constants.
 */
#include "passes/pass.h"
#include "ir/ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PAT 40
#define MAX_ATOMS 8
/* Largest normalized shape a gamma/beta/ones constant is materialized
 * for, and largest constant checked for being a splat. */
#define MAX_PARAM_NUMEL ((int64_t)1 << 20)

typedef struct rec {
    pass_ctx *c;
    ir_graph *g;
    int nvals;                 /* values that uses/user describe */
    int *uses;                 /* per value id, at the sweep's start */
    ir_node **user;            /* a live user of each value (the only one when uses == 1) */
    ir_node *pat[MAX_PAT];     /* nodes of the pattern being matched */
    int npat;
    int64_t ln, rms, sm, lsm, gelu, hswish;
} rec;

/* ---- small matchers --------------------------------------------------------------- */

/* Producer of v when it is a live node of op `op`. */
static ir_node *def_of(const ir_value *v, int op)
{
    if (!v || v->kind != IR_VAL_NODE || !v->def || v->def->dead || v->def->nout != 1)
        return NULL;
    return v->def->op == op ? v->def : NULL;
}

/* Producer of v when it is an Add, or a Sum of two inputs (which ONNX's
 * own function bodies use for the same thing). */
static ir_node *add_of(const ir_value *v)
{
    ir_node *n = def_of(v, IR_OP_ADD);
    if (!n && (n = def_of(v, IR_OP_SUM)) && n->nin != 2)
        n = NULL;
    return n;
}

/* Adds n to the pattern (once); false when the pattern is full. */
static bool take(rec *r, ir_node *n)
{
    for (int i = 0; i < r->npat; i++)
        if (r->pat[i] == n)
            return true;
    if (r->npat == MAX_PAT)
        return false;
    r->pat[r->npat++] = n;
    return true;
}

/* Producer of v of op `op`, added to the pattern. */
static ir_node *take_def(rec *r, const ir_value *v, int op)
{
    ir_node *n = def_of(v, op);
    return n && take(r, n) ? n : NULL;
}

/* v is a numeric constant whose elements all equal one value. A splat of
 * any shape is as good as a scalar here: the caller checks that the
 * pattern's result has its input's type, so no constant broadcast it. */
static bool scalar(const ir_value *v, double *out)
{
    if (!v || v->kind != IR_VAL_CONST || v->cval.numel < 1 || v->cval.numel > MAX_PARAM_NUMEL)
        return false;
    if (!ir_dtype_is_float(v->cval.dtype) && !ir_dtype_is_int(v->cval.dtype))
        return false;
    double x = ir_tensor_getf(&v->cval, 0);
    for (int64_t i = 1; i < v->cval.numel; i++)
        if (ir_tensor_getf(&v->cval, i) != x)
            return false;
    *out = x;
    return true;
}

static bool near(double a, double want)
{
    return fabs(a - want) <= 1e-4 * fabs(want);
}

static bool is_scalar(const ir_value *v, double want)
{
    double x;
    return scalar(v, &x) && near(x, want);
}

static bool used_once(const rec *r, const ir_value *v)
{
    return v->id < r->nvals && r->uses[v->id] == 1;
}

/* The dims a keepdims=1 reduction with constant axes reduces, as a bit
 * mask over `rank` dims (absent or empty axes: all of them); 0 when n is
 * not such a reduction of op `op`. */
static unsigned red_mask(const ir_node *n, int op, int rank)
{
    if (!n || n->op != op || rank < 1 || rank > IR_MAX_RANK || n->in[0]->type.rank != rank ||
        ir_attr_int(n, "keepdims", 1) != 1)
        return 0;
    unsigned all = (1u << rank) - 1, m = 0;
    const ir_value *ax = n->nin > 1 ? n->in[1] : NULL;
    if (!ax || (ax->kind == IR_VAL_CONST && ax->cval.numel == 0))
        return ir_attr_int(n, "noop_with_empty_axes", 0) ? 0 : all;
    if (ax->kind != IR_VAL_CONST || !ir_dtype_is_int(ax->cval.dtype) || ax->cval.numel > rank)
        return 0;
    for (int64_t i = 0; i < ax->cval.numel; i++) {
        int64_t a = ir_tensor_geti(&ax->cval, i);
        if (a < -rank || a >= rank)
            return 0;
        a = a < 0 ? a + rank : a;
        if (m & (1u << a))
            return 0;
        m |= 1u << a;
    }
    return m;
}

/* The axis when mask is the trailing dims [axis, rank), else -1. */
static int trailing_axis(unsigned mask, int rank)
{
    unsigned all = (1u << rank) - 1;
    for (int a = 0; a < rank; a++)
        if (mask == (all & ~((1u << a) - 1)))
            return a;
    return -1;
}

/* The axis when mask is exactly one dim, else -1. */
static int single_axis(unsigned mask, int rank)
{
    for (int a = 0; a < rank; a++)
        if (mask == 1u << a)
            return a;
    return -1;
}

/* x is a float tensor of known rank >= 1 and y has exactly its type. */
static bool same_float(const ir_value *x, const ir_value *y)
{
    return ir_dtype_is_float(x->type.dtype) && x->type.rank >= 1 && ir_type_same(&x->type, &y->type);
}

/* Every value the pattern computes, except the root's result, is used
 * only by the pattern's nodes (which also rules out graph outputs: they
 * count as uses). */
static bool internal(const rec *r, const ir_node *root)
{
    for (int i = 0; i < r->npat; i++) {
        const ir_node *p = r->pat[i];
        if (p == root)
            continue;
        for (int o = 0; o < p->nout; o++) {
            const ir_value *v = p->out[o];
            if (v->id >= r->nvals)
                return false;
            int inside = 0;
            for (int j = 0; j < r->npat; j++)
                for (int k = 0; k < r->pat[j]->nin; k++)
                    inside += r->pat[j]->in[k] == v;
            if (r->uses[v->id] != inside)
                return false;
        }
    }
    return true;
}

/* ---- products ----------------------------------------------------------------------- */

/* v as coef * atoms[0] * atoms[1] * ...: descends through Mul, Div by a
 * constant and Pow by 2 or 3 whose results are used once (the root's
 * own node always), so a factor used elsewhere, like x itself, stays an
 * atom. Descended nodes join the pattern. */
typedef struct prod {
    double coef;
    ir_value *atoms[MAX_ATOMS];
    int n;
} prod;

static bool flatten_into(rec *r, ir_value *v, bool root, prod *p)
{
    double k;
    if (scalar(v, &k)) {
        p->coef *= k;
        return true;
    }
    ir_node *n = v->kind == IR_VAL_NODE && v->def && !v->def->dead && v->def->nout == 1 ? v->def : NULL;
    if (n && (root || used_once(r, v))) {
        if (n->op == IR_OP_MUL)
            return take(r, n) && flatten_into(r, n->in[0], false, p) && flatten_into(r, n->in[1], false, p);
        if (n->op == IR_OP_DIV && scalar(n->in[1], &k) && k != 0) {
            p->coef /= k;
            return take(r, n) && flatten_into(r, n->in[0], false, p);
        }
        if (n->op == IR_OP_POW && scalar(n->in[1], &k) && (k == 2 || k == 3)) {
            if (p->n + (int)k > MAX_ATOMS || !take(r, n))
                return false;
            for (int i = 0; i < (int)k; i++)
                p->atoms[p->n++] = n->in[0];
            return true;
        }
    }
    if (p->n == MAX_ATOMS)
        return false;
    p->atoms[p->n++] = v;
    return true;
}

static bool flatten(rec *r, ir_value *v, bool root, prod *p)
{
    p->coef = 1;
    p->n = 0;
    return flatten_into(r, v, root, p);
}

/* p is coef * x^k. */
static bool power_of(const prod *p, const ir_value *x, int k)
{
    if (p->n != k)
        return false;
    for (int i = 0; i < k; i++)
        if (p->atoms[i] != x)
            return false;
    return true;
}

/* ---- rewriting ---------------------------------------------------------------------- */


/* Replaces the pattern (root last computed) by one node of op over
 * in[0..nin), which takes the root's name, result name and type. The
 * caller adds the attributes to the returned node. */
static ir_node *replace(rec *r, ir_node *root, int op, int nin, ir_value *const *in)
{
    ir_graph *g = r->g;
    ir_value *old = root->out[0];
    const char *name = old->name;
    ir_node *nn = ir_graph_add_node(g, op, root->name, nin, in, 1, &name, r->c->diag);
    if (!nn)
        return NULL;
    nn->out[0]->type = old->type;
    ir_replace_all_uses(g, old, nn->out[0]);
    for (int i = 0; i < r->npat; i++)
        ir_node_erase(r->pat[i]);
    ir_node_erase(root);
    r->c->changed = true;
    return nn;
}

static bool set_int(rec *r, ir_node *n, const char *key, int64_t v)
{
    if (ir_node_set_int(r->g, n, key, v) < 0) {
        ir_errorf(r->c->diag, "out of memory");
        return false;
    }
    return true;
}

/* ---- LayerNormalization, RMSNormalization -------------------------------------------- */

/* s = Sqrt(ve) or Pow(ve, 0.5): returns ve. */
static ir_value *m_std(rec *r, ir_value *s)
{
    ir_node *n = take_def(r, s, IR_OP_SQRT);
    if (n)
        return n->in[0];
    n = def_of(s, IR_OP_POW);
    return n && is_scalar(n->in[1], 0.5) && take(r, n) ? n->in[0] : NULL;
}

/* t = Reciprocal(std), 1 / std or Pow(ve, -0.5): returns ve. */
static ir_value *m_invstd(rec *r, ir_value *t)
{
    ir_node *n = def_of(t, IR_OP_RECIPROCAL);
    if (n)
        return take(r, n) ? m_std(r, n->in[0]) : NULL;
    n = def_of(t, IR_OP_DIV);
    if (n && is_scalar(n->in[0], 1.0))
        return take(r, n) ? m_std(r, n->in[1]) : NULL;
    n = def_of(t, IR_OP_POW);
    return n && is_scalar(n->in[1], -0.5) && take(r, n) ? n->in[0] : NULL;
}

/* sq = a*a or Pow(a, 2). */
static bool m_square(rec *r, ir_value *sq, const ir_value *a)
{
    ir_node *n = def_of(sq, IR_OP_MUL);
    if (n)
        return n->in[0] == a && n->in[1] == a && take(r, n);
    n = def_of(sq, IR_OP_POW);
    return n && n->in[0] == a && is_scalar(n->in[1], 2.0) && take(r, n);
}

/* ve = var + eps (either order), or var alone (eps 0), where var is
 * ReduceMean(square(a)), or E[x^2] - E[x]^2 when a = x - E[x] (the form
 * of ONNX's own LayerNormalization body): fills the reduced dims and eps. */
static bool m_var_eps(rec *r, ir_value *ve, const ir_value *a, unsigned *mask, double *eps)
{
    int rank = a->type.rank;
    *eps = 0;
    ir_value *var = ve;
    ir_node *add = add_of(ve);
    if (add) {
        int k = scalar(add->in[1], eps) ? 1 : scalar(add->in[0], eps) ? 0 : -1;
        if (k < 0 || !(*eps >= 0) || !isfinite(*eps) || !take(r, add))
            return false;
        var = add->in[1 - k];
    }
    ir_node *mean = def_of(var, IR_OP_REDUCE_MEAN);
    if (mean) {
        *mask = red_mask(mean, IR_OP_REDUCE_MEAN, rank);
        return *mask && take(r, mean) && m_square(r, mean->in[0], a);
    }
    ir_node *vs = def_of(var, IR_OP_SUB), *sub = def_of(a, IR_OP_SUB);
    if (!vs || !sub)
        return false;
    ir_value *x = sub->in[0], *m = sub->in[1];
    ir_node *mx = def_of(m, IR_OP_REDUCE_MEAN), *msq = def_of(vs->in[0], IR_OP_REDUCE_MEAN);
    *mask = red_mask(mx, IR_OP_REDUCE_MEAN, rank);
    return *mask && mx->in[0] == x && ir_type_same(&x->type, &a->type) &&
           red_mask(msq, IR_OP_REDUCE_MEAN, rank) == *mask && take(r, vs) && take(r, msq) &&
           m_square(r, msq->in[0], x) && m_square(r, vs->in[1], m);
}

/* n = a / std or a * invstd (either order) with std^2 = mean(a^2) + eps
 * over the trailing dims: fills a, the axis and eps. */
static bool m_norm_core(rec *r, ir_node *n, ir_value **a, int *axis, double *eps)
{
    for (int k = 0; k < (n->op == IR_OP_MUL ? 2 : 1); k++) {
        r->npat = 0;
        take(r, n);
        *a = n->in[k];
        ir_value *ve = n->op == IR_OP_DIV ? m_std(r, n->in[1]) : m_invstd(r, n->in[1 - k]);
        unsigned mask;
        if (ve && same_float(*a, n->out[0]) && m_var_eps(r, ve, *a, &mask, eps) &&
            (*axis = trailing_axis(mask, (*a)->type.rank)) >= 0)
            return true;
    }
    return false;
}

/* Whether k can be the Scale or B of a normalization of type xt from
 * axis: its dims, right-aligned, are 1 or equal to the normalized dims,
 * and dims before those are 1. *exact: once leading 1s are dropped it is
 * the normalized shape, so it can be used as it is; a value that is not a
 * constant must be exact (only constants are broadcast into new ones). */
static bool param_fits(const ir_value *k, const ir_type *xt, int axis, bool *exact)
{
    if (!k || k->type.dtype != xt->dtype || k->type.rank < 0)
        return false;
    int kr = k->type.rank;
    *exact = kr >= xt->rank - axis;
    for (int i = 0; i < kr; i++) {
        ir_dim kd = k->type.dims[i];
        bool one = ir_dim_is_const(kd) && kd.v == 1;
        int xi = xt->rank - kr + i;
        if (xi < axis) {
            if (!one)
                return false;
            continue;
        }
        bool eq = ir_dim_eq(kd, xt->dims[xi]);
        if (!eq && !one)
            return false;
        *exact &= eq;
    }
    return *exact || k->kind == IR_VAL_CONST;
}

/* Static normalized shape (dims [axis, rank)) and its element count. */
static bool norm_shape(const ir_type *xt, int axis, ir_type *out, int64_t *numel)
{
    out->dtype = xt->dtype;
    out->rank = xt->rank - axis;
    for (int i = axis; i < xt->rank; i++)
        out->dims[i - axis] = xt->dims[i];
    return ir_type_is_static(out) && ir_type_numel(out, numel) && *numel <= MAX_PARAM_NUMEL;
}

/* A parameter can be absorbed: it fits and is usable as it is, or can be
 * broadcast into a constant of the normalized shape. */
static bool param_ok(const ir_value *k, const ir_type *xt, int axis)
{
    bool exact;
    ir_type t;
    int64_t n;
    return param_fits(k, xt, axis, &exact) && (exact || norm_shape(xt, axis, &t, &n));
}

/* The Scale/B input for k (NULL: ones): k itself when exact,
 * else a new constant of the normalized shape (or [1] for ones of a
 * symbolic shape). NULL with a message on out of memory. */
static ir_value *param(rec *r, const ir_value *k, const ir_type *xt, int axis, const char *base)
{
    bool exact = false;
    if (k && param_fits(k, xt, axis, &exact) && exact)
        return (ir_value *)k;
    ir_type t;
    int64_t n;
    if (!norm_shape(xt, axis, &t, &n)) {
        t.rank = 1;
        t.dims[0] = ir_dim_const(1);
        n = 1;
    }
    char buf[256];
    ir_value *v = ir_graph_add_const(r->g, ir_graph_fresh_name(r->g, base, "", buf, sizeof buf), &t, NULL, r->c->diag);
    if (!v)
        return NULL;
    int kr = k ? k->cval.rank : 0;
    for (int64_t i = 0; i < n; i++) {
        /* element i of the normalized shape -> k's element, broadcasting */
        int64_t ki = 0, rem = i, stride = 1;
        for (int d = t.rank - 1, kd = kr - 1; d >= 0; d--, kd--) {
            int64_t idx = rem % t.dims[d].v;
            rem /= t.dims[d].v;
            if (kd >= 0) {
                if (k->cval.dims[kd] != 1)
                    ki += idx * stride;
                stride *= k->cval.dims[kd];
            }
        }
        ir_tensor_setf(&v->cval, i, k ? ir_tensor_getf(&k->cval, ki) : 1.0);
    }
    return v;
}

/* y (used once) -> its user `op` whose other operand param_ok accepts;
 * the user joins the pattern. */
static ir_node *affine_user(rec *r, ir_value *y, int op, const ir_type *xt, int axis, ir_value **k)
{
    if (!used_once(r, y))
        return NULL;
    ir_node *u = r->user[y->id];
    if (!u || u->dead || !ir_type_same(&u->out[0]->type, xt) ||
        !(u->op == op || (op == IR_OP_ADD && u->op == IR_OP_SUM && u->nin == 2)))
        return NULL;
    *k = u->in[0] == y ? u->in[1] : u->in[0];
    if (*k == y || !param_ok(*k, xt, axis))
        return NULL;
    return take(r, u) ? u : NULL;
}

/* The normalization whose core (the division by the standard deviation)
 * is n: LayerNorm when the core's input is x - ReduceMean(x) over the
 * same dims, else RMSNorm of the core's input; a following Mul by gamma
 * and (LayerNorm only) Add of beta are absorbed. */
static int try_norm(rec *r, ir_node *n)
{
    ir_value *a, *x;
    int axis;
    double eps;
    if (!m_norm_core(r, n, &a, &axis, &eps))
        return 0;
    int core = r->npat;
    bool ln = false;
    ir_node *sub = def_of(a, IR_OP_SUB);
    if (sub) {
        x = sub->in[0];
        ir_node *mean = def_of(sub->in[1], IR_OP_REDUCE_MEAN);
        ln = mean && mean->in[0] == x && ir_type_same(&x->type, &a->type) &&
             trailing_axis(red_mask(mean, IR_OP_REDUCE_MEAN, x->type.rank), x->type.rank) == axis &&
             take(r, sub) && take(r, mean) && internal(r, n);
        if (!ln)
            r->npat = core;
    }
    if (!ln)
        x = a;
    if (!internal(r, n))
        return 0;
    const ir_type *xt = &x->type;
    ir_node *root = n;
    ir_value *gamma = NULL, *beta = NULL, *k;
    ir_node *u = affine_user(r, root->out[0], IR_OP_MUL, xt, axis, &k);
    if (u) {
        gamma = k;
        root = u;
    }
    if (ln && (u = affine_user(r, root->out[0], IR_OP_ADD, xt, axis, &k))) {
        beta = k;
        root = u;
    }
    ir_value *in[3] = {x, param(r, gamma, xt, axis, ln ? "ln_scale" : "rms_scale"), NULL};
    if (!in[1])
        return -1;
    if (beta && !(in[2] = param(r, beta, xt, axis, "ln_bias")))
        return -1;
    ir_node *nn = replace(r, root, ln ? IR_OP_LAYER_NORMALIZATION : IR_OP_RMS_NORMALIZATION, beta ? 3 : 2, in);
    if (!nn || !set_int(r, nn, "axis", axis - xt->rank) ||
        ir_node_set_float(r->g, nn, "epsilon", (float)eps) < 0)
        return ir_errorf(r->c->diag, "out of memory");
    *(ln ? &r->ln : &r->rms) += 1;
    return 1;
}

/* ---- Softmax, LogSoftmax ------------------------------------------------------------- */

/* t = x - ReduceMax(x) over `mask`: x (the pattern grows by both), else NULL. */
static ir_value *m_shifted(rec *r, ir_value *t, unsigned mask)
{
    ir_node *sub = def_of(t, IR_OP_SUB);
    if (!sub)
        return NULL;
    ir_value *x = sub->in[0];
    ir_node *mx = def_of(sub->in[1], IR_OP_REDUCE_MAX);
    if (!mx || mx->in[0] != x || !ir_type_same(&x->type, &t->type) ||
        red_mask(mx, IR_OP_REDUCE_MAX, x->type.rank) != mask)
        return NULL;
    return take(r, sub) && take(r, mx) ? x : NULL;
}

/* s = ReduceSum(e), e = Exp(t), over one axis: fills e, t and the
 * reduced mask. */
static bool m_sum_exp(rec *r, ir_value *s, ir_value **ev, ir_value **t, unsigned *mask)
{
    ir_node *sum = def_of(s, IR_OP_REDUCE_SUM);
    ir_node *e = sum ? def_of(sum->in[0], IR_OP_EXP) : NULL;
    if (!e)
        return false;
    *ev = sum->in[0];
    *t = e->in[0];
    *mask = red_mask(sum, IR_OP_REDUCE_SUM, (*t)->type.rank);
    return single_axis(*mask, (*t)->type.rank) >= 0 && take(r, sum) && take(r, e);
}

/* Rewrites the matched softmax of t (rooted at root) as op over x, where
 * x is t's input when t = x - max(x) lies wholly inside the pattern, else t. */
static int finish_softmax(rec *r, ir_node *root, int op, ir_value *t, unsigned mask)
{
    if (!same_float(t, root->out[0]))
        return 0;
    int mark = r->npat;
    ir_value *x = m_shifted(r, t, mask);
    if (!x || !internal(r, root)) {
        r->npat = mark;
        x = t;
        if (!internal(r, root))
            return 0;
    }
    int axis = single_axis(mask, x->type.rank);
    ir_node *nn = replace(r, root, op, 1, &x);
    if (!nn || !set_int(r, nn, "axis", axis - x->type.rank))
        return -1;
    *(op == IR_OP_SOFTMAX ? &r->sm : &r->lsm) += 1;
    return 1;
}

/* e / ReduceSum(e) or e * Reciprocal(ReduceSum(e)), e = Exp(t). */
static int try_softmax(rec *r, ir_node *n)
{
    for (int k = 0; k < (n->op == IR_OP_MUL ? 2 : 1); k++) {
        r->npat = 0;
        take(r, n);
        ir_value *e = n->in[k], *s = n->in[1 - k], *t, *ev;
        unsigned mask;
        if (n->op == IR_OP_MUL) {
            ir_node *rc = take_def(r, s, IR_OP_RECIPROCAL);
            if (!rc)
                continue;
            s = rc->in[0];
        }
        if (m_sum_exp(r, s, &ev, &t, &mask) && ev == e)
            return finish_softmax(r, n, IR_OP_SOFTMAX, t, mask);
    }
    return 0;
}

/* t - Log(ReduceSum(Exp(t))). */
static int try_logsoftmax(rec *r, ir_node *n)
{
    r->npat = 0;
    take(r, n);
    ir_value *t, *ev;
    unsigned mask;
    ir_node *lg = take_def(r, n->in[1], IR_OP_LOG);
    if (!lg || !m_sum_exp(r, lg->in[0], &ev, &t, &mask) || t != n->in[0])
        return 0;
    return finish_softmax(r, n, IR_OP_LOG_SOFTMAX, t, mask);
}

/* Log(Softmax(x)) with the Softmax used only here. */
static int try_log_of_softmax(rec *r, ir_node *n)
{
    r->npat = 0;
    take(r, n);
    ir_node *sm = take_def(r, n->in[0], IR_OP_SOFTMAX);
    if (!sm || !same_float(sm->in[0], n->out[0]) || !internal(r, n))
        return 0;
    ir_value *x = sm->in[0];
    int64_t axis = ir_attr_int(sm, "axis", -1);
    ir_node *nn = replace(r, n, IR_OP_LOG_SOFTMAX, 1, &x);
    if (!nn || !set_int(r, nn, "axis", axis))
        return -1;
    r->lsm++;
    return 1;
}

/* ---- Gelu ------------------------------------------------------------------------------ */

/* z = x / sqrt(2) in any spelling. */
static bool m_erf_arg(rec *r, ir_value *z, const ir_value *x)
{
    prod p;
    return flatten(r, z, true, &p) && power_of(&p, x, 1) && near(p.coef, M_SQRT1_2);
}

/* z = sqrt(2/pi) * (x + 0.044715 x^3), as c*(x + k*x^3), c*x*(1 + k*x^2)
 * or c*x + c*k*x^3, in any order and spelling. */
static bool m_tanh_arg(rec *r, ir_value *z, const ir_value *x)
{
    const double s = 0.7978845608028654, k3 = 0.044715;
    prod p, a, b;
    if (!flatten(r, z, true, &p))
        return false;
    double c = p.coef;
    ir_value *sum = NULL;
    bool times_x = false;
    if (p.n == 1) {
        sum = p.atoms[0];
    } else if (p.n == 2 && (p.atoms[0] == x || p.atoms[1] == x)) {
        sum = p.atoms[0] == x ? p.atoms[1] : p.atoms[0];
        times_x = true;
    }
    ir_node *add = sum ? add_of(sum) : NULL;
    if (add && !take(r, add))
        return false;
    if (!add)
        return false;
    for (int k = 0; k < 2; k++) {
        int mark = r->npat;
        if (flatten(r, add->in[k], false, &a) && flatten(r, add->in[1 - k], false, &b)) {
            bool ok = times_x ? power_of(&a, x, 0) && power_of(&b, x, 2)
                              : power_of(&a, x, 1) && power_of(&b, x, 3);
            if (ok && near(c * a.coef, s) && near(c * b.coef, s * k3))
                return true;
        }
        r->npat = mark;
    }
    return false;
}

/* 0.5 * x * (1 + Erf(..)) or with Tanh(..), the product in any order. */
static int try_gelu(rec *r, ir_node *n)
{
    prod p;
    r->npat = 0;
    if (!flatten(r, n->out[0], true, &p) || p.n != 2 || !near(p.coef, 0.5))
        return 0;
    int mark = r->npat;
    for (int k = 0; k < 2; k++) {
        r->npat = mark;
        ir_value *x = p.atoms[k];
        ir_node *add = add_of(p.atoms[1 - k]);
        if (!add || !same_float(x, n->out[0]) || !take(r, add))
            continue;
        int one = is_scalar(add->in[0], 1.0) ? 0 : is_scalar(add->in[1], 1.0) ? 1 : -1;
        if (one < 0)
            continue;
        ir_value *f = add->in[1 - one];
        ir_node *e = take_def(r, f, IR_OP_ERF);
        bool tanh = false;
        if (e ? !m_erf_arg(r, e->in[0], x)
              : !(tanh = (e = take_def(r, f, IR_OP_TANH)) != NULL) || !m_tanh_arg(r, e->in[0], x))
            continue;
        if (!internal(r, n))
            continue;
        ir_node *nn = replace(r, n, IR_OP_GELU, 1, &x);
        if (!nn || (tanh && ir_node_set_string(r->g, nn, "approximate", "tanh") < 0))
            return ir_errorf(r->c->diag, "out of memory");
        r->gelu++;
        return 1;
    }
    return 0;
}

/* ---- HardSwish ------------------------------------------------------------------------- */

/* Clip n's constant bounds (inputs, or opset 6's attributes) into lo, hi. */
static bool clip_bounds(const ir_node *n, double *lo, double *hi)
{
    *lo = ir_attr_float(n, "min", -INFINITY);
    *hi = ir_attr_float(n, "max", INFINITY);
    if (n->nin > 1 && n->in[1] && !scalar(n->in[1], lo))
        return false;
    return !(n->nin > 2 && n->in[2] && !scalar(n->in[2], hi));
}

/* x * Clip(x + 3, 0, 6) / 6 (the product in any order, Div by 6 or Mul by
 * 1/6), or x * HardSigmoid(x) with alpha 1/6 and beta 1/2: HardSwish(x). */
static int try_hardswish(rec *r, ir_node *n)
{
    prod p;
    r->npat = 0;
    if (!flatten(r, n->out[0], true, &p) || p.n != 2)
        return 0;
    int mark = r->npat;
    for (int k = 0; k < 2; k++) {
        r->npat = mark;
        ir_value *x = p.atoms[k], *h = p.atoms[1 - k];
        if (!same_float(x, n->out[0]))
            continue;
        ir_node *hs = take_def(r, h, IR_OP_HARD_SIGMOID), *cl = hs ? NULL : take_def(r, h, IR_OP_CLIP);
        double lo, hi;
        if (hs) {
            if (hs->in[0] != x || !near(p.coef, 1) || !near(ir_attr_float(hs, "alpha", 0.2), 1.0 / 6) ||
                !near(ir_attr_float(hs, "beta", 0.5), 0.5))
                continue;
        } else {
            ir_node *add = cl ? add_of(cl->in[0]) : NULL;
            if (!add || !near(p.coef, 1.0 / 6) || !clip_bounds(cl, &lo, &hi) || lo != 0 || !near(hi, 6) ||
                !take(r, add))
                continue;
            int three = is_scalar(add->in[0], 3) ? 0 : is_scalar(add->in[1], 3) ? 1 : -1;
            if (three < 0 || add->in[1 - three] != x)
                continue;
        }
        if (!internal(r, n))
            continue;
        if (!replace(r, n, IR_OP_HARD_SWISH, 1, &x))
            return ir_errorf(r->c->diag, "out of memory");
        r->hswish++;
        return 1;
    }
    return 0;
}

/* ---- the pass ---------------------------------------------------------------------------- */

static int try_node(rec *r, ir_node *n)
{
    int done = 0;
    switch (n->op) {
    case IR_OP_MUL:
        done = try_gelu(r, n);
        /* fall through */
    case IR_OP_DIV:
        if (!done)
            done = try_norm(r, n);
        if (!done)
            done = try_softmax(r, n);
        if (!done && n->op == IR_OP_DIV)
            done = try_gelu(r, n);
        if (!done)
            done = try_hardswish(r, n);
        return done;
    case IR_OP_SUB:
        return try_logsoftmax(r, n);
    case IR_OP_LOG:
        return try_log_of_softmax(r, n);
    }
    return 0;
}

int pass_recognize(pass_ctx *c)
{
    ir_graph *g = c->g;
    rec r = {.c = c, .g = g};
    int rc = 0;
    /* Use counts are taken once per sweep. A rewrite only lowers the uses
     * of the values it keeps, so stale counts within a sweep are
     * conservative; sweep again until nothing changes. */
    for (bool any = true; any && rc == 0;) {
        any = false;
        free(r.uses);
        free(r.user);
        r.nvals = g->nvalues;
        r.uses = malloc(sizeof(int) * ((size_t)r.nvals + 1));
        r.user = calloc((size_t)r.nvals + 1, sizeof(ir_node *));
        if (!r.uses || !r.user) {
            rc = ir_errorf(c->diag, "out of memory");
            break;
        }
        ir_graph_count_uses(g, r.uses);
        for (int k = 0; k < g->nnodes; k++)
            for (int i = 0; !g->nodes[k]->dead && i < g->nodes[k]->nin; i++)
                if (g->nodes[k]->in[i])
                    r.user[g->nodes[k]->in[i]->id] = g->nodes[k];
        int nn = g->nnodes;
        for (int k = 0; k < nn && rc == 0; k++) {
            ir_node *n = g->nodes[k];
            if (n->dead || n->nout != 1 || n->nin < 1 || !n->in[0])
                continue;
            int d = try_node(&r, n);
            if (d < 0)
                rc = -1;
            any |= d > 0;
        }
    }
    free(r.uses);
    free(r.user);
    if (rc < 0)
        return -1;
    if (pass_commit_rewrites(c) < 0)
        return -1;
    pass_stat(c, "layernorms recognised", r.ln);
    pass_stat(c, "rmsnorms recognised", r.rms);
    pass_stat(c, "softmaxes recognised", r.sm);
    pass_stat(c, "logsoftmaxes recognised", r.lsm);
    pass_stat(c, "gelus recognised", r.gelu);
    pass_stat(c, "hardswishes recognised", r.hswish);
    return 0;
}
