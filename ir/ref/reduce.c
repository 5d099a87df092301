/* reduce.c - shape functions and reference kernels of the reductions
 * (Reduce{Sum,Mean,Max,Min,Prod,L1,L2,SumSquare,LogSum,LogSumExp}),
 * ArgMax/ArgMin, CumSum/CumProd, TopK and Unique. Float inputs are computed
 * in double;
 * integer inputs are computed exactly in 64-bit integers (wrapping the way
 * the dtype would), so integer reductions never pass through a double
 * unless the op itself is transcendental (L2, LogSum, LogSumExp). */
#include "ir/ref/ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers -------------------------------------------------------------- */

/* A shape context for a kernel, so kernels can reuse the shape-side
 * validation helpers (node-located errors) on concrete inputs. */
static ir_shape_ctx kernel_shape_ctx(ir_ref_ctx *c)
{
    ir_shape_ctx s = {.node = c->node, .nin = c->nin, .val = c->in, .diag = c->diag};
    return s;
}

/* Reads a single integer (a scalar or a 1-element 1-D tensor), as CumSum's
 * axis and TopK's k are given. */
static int read_scalar_i64(ir_shape_ctx *c, const ir_tensor *t, const char *what, int64_t *out)
{
    if (!ir_dtype_is_int(t->dtype))
        return ir_node_errorf(c->diag, c->node, "%s must be an integer tensor, got %s", what,
                              ir_dtype_name(t->dtype));
    if (t->rank > 1 || t->numel != 1)
        return ir_node_errorf(c->diag, c->node, "%s must hold exactly one value (got %lld, rank %d)",
                              what, (long long)t->numel, t->rank);
    *out = ir_tensor_geti(t, 0);
    return 0;
}

/* Integer min and max of a dtype as bit patterns; `is_signed` selects how
 * they (and the accumulators) compare. bool is the range [0, 1]. */
static void int_range(ir_dtype t, bool *is_signed, uint64_t *lo, uint64_t *hi)
{
    int bits = (int)ir_dtype_size(t) * 8;
    *is_signed = ir_dtype_is_signed(t);
    if (t == IR_BOOL) {
        *lo = 0;
        *hi = 1;
    } else if (*is_signed) {
        *hi = ((uint64_t)1 << (bits - 1)) - 1;
        *lo = (uint64_t)(-(int64_t)*hi - 1);
    } else {
        *lo = 0;
        *hi = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    }
}

static bool int_less(uint64_t a, uint64_t b, bool is_signed)
{
    return is_signed ? (int64_t)a < (int64_t)b : a < b;
}

/* Advances the input multi-index idx and moves the output offset *o by the
 * output strides ost (0 for reduced dims): one step of a scan in input
 * order that tracks where each element lands in the output. */
static inline void step_offset(int64_t *idx, const int64_t *dims, const int64_t *ost, int rank,
                               int64_t *o)
{
    for (int d = rank - 1; d >= 0; d--) {
        if (++idx[d] < dims[d]) {
            *o += ost[d];
            return;
        }
        idx[d] = 0;
        *o -= ost[d] * (dims[d] - 1);
    }
}

/* ---- Reduce* --------------------------------------------------------------- */

typedef enum red_kind {
    RK_SUM, RK_MEAN, RK_MAX, RK_MIN, RK_PROD, RK_L1, RK_L2, RK_SUMSQ, RK_LOGSUM, RK_LOGSUMEXP,
} red_kind;

static red_kind red_kind_of(int op)
{
    switch (op) {
    case IR_OP_REDUCE_MEAN: return RK_MEAN;
    case IR_OP_REDUCE_MAX: return RK_MAX;
    case IR_OP_REDUCE_MIN: return RK_MIN;
    case IR_OP_REDUCE_PROD: return RK_PROD;
    case IR_OP_REDUCE_L1: return RK_L1;
    case IR_OP_REDUCE_L2: return RK_L2;
    case IR_OP_REDUCE_SUM_SQUARE: return RK_SUMSQ;
    case IR_OP_REDUCE_LOG_SUM: return RK_LOGSUM;
    case IR_OP_REDUCE_LOG_SUM_EXP: return RK_LOGSUMEXP;
    default: return RK_SUM;
    }
}

/* What a reduction does to a rank-`rank` input. */
typedef struct red_plan {
    bool known;                /* red[] is known (axes given or implied) */
    bool noop;                 /* identity: empty axes with noop_with_empty_axes */
    int naxes;                 /* axes count when known from the axes type, else -1 */
    bool red[IR_MAX_RANK];     /* dims reduced */
} red_plan;

/* axes: input 1, absent or empty -> all dims (or identity when
 * noop_with_empty_axes). Duplicates are rejected: ONNX leaves them
 * undefined and they would silently change the output rank. */
static int plan_reduce(ir_shape_ctx *c, int rank, red_plan *p)
{
    memset(p, 0, sizeof *p);
    p->naxes = -1;
    bool noop_attr = ir_attr_int(c->node, "noop_with_empty_axes", 0) != 0;
    const ir_tensor *av = c->nin > 1 ? c->val[1] : NULL;
    bool have_axes = c->nin > 1 && (c->in ? c->in[1] != NULL : av != NULL);
    if (have_axes && av) {
        if (!ir_dtype_is_int(av->dtype))
            return ir_node_errorf(c->diag, c->node, "axes must be an integer tensor, got %s",
                                  ir_dtype_name(av->dtype));
        if (av->rank > 1)
            return ir_node_errorf(c->diag, c->node, "axes must be 1-D, got rank %d", av->rank);
        if (av->numel > 0) {
            p->naxes = (int)(av->numel > IR_MAX_RANK ? IR_MAX_RANK + 1 : av->numel);
            if (rank < 0)
                return 0;
            if (av->numel > rank)
                return ir_node_errorf(c->diag, c->node, "%lld axes given for an input of rank %d",
                                      (long long)av->numel, rank);
            for (int64_t i = 0; i < av->numel; i++) {
                int a;
                if (ir_norm_axis(c, ir_tensor_geti(av, i), rank, &a) < 0)
                    return -1;
                if (rank == 0)
                    return ir_node_errorf(c->diag, c->node, "axis %lld given for a scalar input",
                                          (long long)ir_tensor_geti(av, i));
                if (p->red[a])
                    return ir_node_errorf(c->diag, c->node, "axis %d is listed twice", a);
                p->red[a] = true;
            }
            p->known = true;
            p->naxes = (int)av->numel;
            return 0;
        }
    } else if (have_axes) {
        /* Unknown values; their count may still be known from the type. */
        const ir_type *at = c->in[1];
        if (at->rank == 1 && ir_dim_is_const(at->dims[0]))
            p->naxes = (int)(at->dims[0].v > IR_MAX_RANK ? IR_MAX_RANK + 1 : at->dims[0].v);
        else if (at->rank == 0)
            p->naxes = 1;
        if (at->rank > 1)
            return ir_node_errorf(c->diag, c->node, "axes must be 1-D, got rank %d", at->rank);
        if (p->naxes != 0)
            return 0;
    }
    /* Absent or empty axes. */
    p->known = true;
    p->naxes = 0;
    if (noop_attr) {
        p->noop = true;
        return 0;
    }
    for (int i = 0; i < rank && i < IR_MAX_RANK; i++)
        p->red[i] = true;
    return 0;
}

int shape_reduce(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    red_kind k = red_kind_of(c->node->op);
    if (x->dtype == IR_BOOL && k != RK_MAX && k != RK_MIN)
        return ir_node_errorf(c->diag, c->node, "bool input is only supported by ReduceMax/ReduceMin");
    bool keep = ir_attr_int(c->node, "keepdims", 1) != 0;
    red_plan p;
    if (plan_reduce(c, x->rank, &p) < 0)
        return -1;
    ir_type *o = &c->out[0];
    if (p.noop) {
        *o = *x;
        return 0;
    }
    if (x->rank < 0) {
        ir_type_unknown(o, x->dtype, IR_RANK_UNKNOWN);
        return 0;
    }
    if (!p.known) {
        /* Reduced dims are unknown; a dim of 1 stays 1 either way. */
        if (keep) {
            ir_type_unknown(o, x->dtype, x->rank);
            for (int i = 0; i < x->rank; i++)
                if (ir_dim_is_const(x->dims[i]) && x->dims[i].v == 1)
                    o->dims[i] = x->dims[i];
        } else if (p.naxes > x->rank) {
            return ir_node_errorf(c->diag, c->node, "%d axes given for an input of rank %d",
                                  p.naxes, x->rank);
        } else {
            ir_type_unknown(o, x->dtype, p.naxes >= 0 ? x->rank - p.naxes : IR_RANK_UNKNOWN);
        }
        return 0;
    }
    o->dtype = x->dtype;
    o->rank = 0;
    for (int i = 0; i < x->rank; i++) {
        if (!p.red[i])
            o->dims[o->rank++] = x->dims[i];
        else if (keep)
            o->dims[o->rank++] = ir_dim_const(1);
    }
    return 0;
}

/* Float path (also integer L2/LogSum/LogSumExp): one pass in input order
 * accumulating into a double per output; LogSumExp takes a first pass for
 * the per-output max so exp never overflows. */
static void reduce_double(red_kind k, const ir_tensor *x, ir_tensor *y, const int64_t *ost,
                          int64_t count, double *acc, double *shift)
{
    int64_t idx[IR_MAX_RANK] = {0}, o = 0;
    double init = k == RK_PROD ? 1 : k == RK_MAX ? -INFINITY : k == RK_MIN ? INFINITY : 0;
    for (int64_t i = 0; i < y->numel; i++) {
        acc[i] = init;
        shift[i] = -INFINITY;
    }
    if (k == RK_LOGSUMEXP) {
        for (int64_t i = 0; i < x->numel; i++) {
            double v = ir_tensor_getf(x, i);
            if (v > shift[o] || isnan(v))
                shift[o] = v;
            step_offset(idx, x->dims, ost, x->rank, &o);
        }
        for (int64_t i = 0; i < y->numel; i++)
            if (!isfinite(shift[i]))
                shift[i] = isnan(shift[i]) ? shift[i] : 0;
        memset(idx, 0, sizeof idx);
        o = 0;
    }
    for (int64_t i = 0; i < x->numel; i++) {
        double v = ir_tensor_getf(x, i), *a = &acc[o];
        switch (k) {
        case RK_SUM: case RK_MEAN: case RK_LOGSUM: *a += v; break;
        case RK_PROD: *a *= v; break;
        /* IEEE 754-2019 maximum and minimum: NaN wins, -0 < +0 (what the
         * compiled kernels compute, llvm.maximum/minimum or vrange) */
        case RK_MAX: if (v > *a || isnan(v) || (v == *a && signbit(*a) && !signbit(v))) *a = v; break;
        case RK_MIN: if (v < *a || isnan(v) || (v == *a && !signbit(*a) && signbit(v))) *a = v; break;
        case RK_L1: *a += fabs(v); break;
        case RK_L2: case RK_SUMSQ: *a += v * v; break;
        case RK_LOGSUMEXP: *a += exp(v - shift[o]); break;
        }
        step_offset(idx, x->dims, ost, x->rank, &o);
    }
    for (int64_t i = 0; i < y->numel; i++) {
        double a = acc[i];
        switch (k) {
        case RK_MEAN: a = a / (double)count; break;
        case RK_L2: a = sqrt(a); break;
        case RK_LOGSUM: a = log(a); break;
        case RK_LOGSUMEXP: a = log(a) + shift[i]; break;
        default: break;
        }
        ir_tensor_setf(y, i, a);
    }
}

/* Integer path: exact 64-bit arithmetic, wrapping as unsigned (no UB). */
static void reduce_int(red_kind k, const ir_tensor *x, ir_tensor *y, const int64_t *ost,
                       int64_t count, uint64_t *acc)
{
    bool sg;
    uint64_t lo, hi;
    int_range(x->dtype, &sg, &lo, &hi);
    uint64_t init = k == RK_PROD ? 1 : k == RK_MAX ? lo : k == RK_MIN ? hi : 0;
    for (int64_t i = 0; i < y->numel; i++)
        acc[i] = init;
    int64_t idx[IR_MAX_RANK] = {0}, o = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        uint64_t v = (uint64_t)ir_tensor_geti(x, i), *a = &acc[o];
        switch (k) {
        case RK_PROD: *a *= v; break;
        case RK_MAX: if (int_less(*a, v, sg)) *a = v; break;
        case RK_MIN: if (int_less(v, *a, sg)) *a = v; break;
        case RK_L1: *a += (sg && (int64_t)v < 0) ? 0 - v : v; break;
        case RK_SUMSQ: *a += v * v; break;
        default: *a += v; break;
        }
        step_offset(idx, x->dims, ost, x->rank, &o);
    }
    for (int64_t i = 0; i < y->numel; i++) {
        uint64_t a = acc[i];
        if (k == RK_MEAN) {
            if (count == 0)
                a = 0;
            else if (sg)
                a = (uint64_t)((int64_t)a / count);
            else
                a /= (uint64_t)count;
        }
        ir_tensor_seti(y, i, (int64_t)a);
    }
}

int ref_reduce(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    ir_tensor *y = c->out[0];
    ir_shape_ctx sc = kernel_shape_ctx(c);
    red_plan p;
    if (plan_reduce(&sc, x->rank, &p) < 0)
        return -1;
    if (p.noop) {
        if (x->nbytes)
            memcpy(y->data, x->data, x->nbytes);
        return 0;
    }
    /* Output strides in the keepdims layout; reduced dims do not move. */
    int64_t ost[IR_MAX_RANK], s = 1, count = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
        ost[d] = p.red[d] ? 0 : s;
        if (!p.red[d])
            s *= x->dims[d];
        else
            count *= x->dims[d];
    }
    if (y->numel == 0)
        return 0;
    red_kind k = red_kind_of(c->node->op);
    bool use_double = ir_dtype_is_float(x->dtype) || k == RK_L2 || k == RK_LOGSUM ||
                      k == RK_LOGSUMEXP;
    void *acc = malloc((size_t)y->numel * sizeof(double) * (use_double ? 2 : 1));
    if (!acc)
        return ir_node_errorf(c->diag, c->node, "out of memory");
    if (use_double)
        reduce_double(k, x, y, ost, count, acc, (double *)acc + y->numel);
    else
        reduce_int(k, x, y, ost, count, acc);
    free(acc);
    return 0;
}

/* ---- ArgMax / ArgMin ------------------------------------------------------- */

int shape_arg(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    bool keep = ir_attr_int(c->node, "keepdims", 1) != 0;
    ir_type *o = &c->out[0];
    if (x->rank < 0) {
        ir_type_unknown(o, IR_I64, IR_RANK_UNKNOWN);
        return 0;
    }
    if (x->rank == 0)
        return ir_node_errorf(c->diag, c->node, "input must have rank >= 1");
    int axis;
    if (ir_norm_axis(c, ir_attr_int(c->node, "axis", 0), x->rank, &axis) < 0)
        return -1;
    o->dtype = IR_I64;
    o->rank = 0;
    for (int i = 0; i < x->rank; i++) {
        if (i != axis)
            o->dims[o->rank++] = x->dims[i];
        else if (keep)
            o->dims[o->rank++] = ir_dim_const(1);
    }
    return 0;
}

/* Splits dims around axis: outer * n * inner. */
static void split_axis(const ir_tensor *x, int axis, int64_t *outer, int64_t *n, int64_t *inner)
{
    *outer = *inner = 1;
    for (int i = 0; i < axis; i++)
        *outer *= x->dims[i];
    for (int i = axis + 1; i < x->rank; i++)
        *inner *= x->dims[i];
    *n = x->dims[axis];
}

/* Whether element b beats the current best a: strictly better, or equal
 * when the last occurrence is wanted. NaN beats numbers (as in numpy). */
static bool arg_better_f(double b, double a, bool want_max, bool last)
{
    if (isnan(a))
        return last && isnan(b);
    if (isnan(b))
        return true;
    if (b == a)
        return last;
    return want_max ? b > a : b < a;
}

int ref_arg(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    ir_tensor *y = c->out[0];
    int axis;
    if (ir_ref_norm_axis(c, ir_attr_int(c->node, "axis", 0), x->rank, &axis) < 0)
        return -1;
    bool want_max = c->node->op == IR_OP_ARG_MAX;
    bool last = ir_attr_int(c->node, "select_last_index", 0) != 0;
    int64_t outer, n, inner;
    split_axis(x, axis, &outer, &n, &inner);
    if (n == 0 && outer * inner > 0)
        return ir_node_errorf(c->diag, c->node, "cannot take the arg%s of an empty axis",
                              want_max ? "max" : "min");
    bool flt = ir_dtype_is_float(x->dtype), sg;
    uint64_t lo, hi;
    int_range(x->dtype, &sg, &lo, &hi);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            int64_t base = o * n * inner + in, best = 0;
            if (flt) {
                double bv = ir_tensor_getf(x, base);
                for (int64_t j = 1; j < n; j++) {
                    double v = ir_tensor_getf(x, base + j * inner);
                    if (arg_better_f(v, bv, want_max, last)) {
                        bv = v;
                        best = j;
                    }
                }
            } else {
                uint64_t bv = (uint64_t)ir_tensor_geti(x, base);
                for (int64_t j = 1; j < n; j++) {
                    uint64_t v = (uint64_t)ir_tensor_geti(x, base + j * inner);
                    bool better = want_max ? int_less(bv, v, sg) : int_less(v, bv, sg);
                    if (better || (last && v == bv)) {
                        bv = v;
                        best = j;
                    }
                }
            }
            ir_tensor_seti(y, o * inner + in, best);
        }
    return 0;
}

/* ---- CumSum / CumProd ------------------------------------------------------ */

int shape_cumsum(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    if (x->dtype == IR_BOOL)
        return ir_node_errorf(c->diag, c->node, "bool input is not supported");
    const ir_type *at = c->in[1];
    if (at->rank > 1 || (at->dtype != IR_UNDEF && !ir_dtype_is_int(at->dtype)))
        return ir_node_errorf(c->diag, c->node, "axis must be an integer scalar");
    if (c->val[1] && x->rank >= 0) {
        int64_t a;
        int axis;
        if (read_scalar_i64(c, c->val[1], "axis", &a) < 0)
            return -1;
        if (x->rank == 0)
            return ir_node_errorf(c->diag, c->node, "input must have rank >= 1");
        if (ir_norm_axis(c, a, x->rank, &axis) < 0)
            return -1;
    }
    c->out[0] = *x;
    return 0;
}

int ref_cumsum(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    ir_tensor *y = c->out[0];
    ir_shape_ctx sc = kernel_shape_ctx(c);
    int64_t a;
    int axis;
    if (read_scalar_i64(&sc, c->in[1], "axis", &a) < 0)
        return -1;
    if (x->rank == 0)
        return ir_node_errorf(c->diag, c->node, "input must have rank >= 1");
    if (ir_norm_axis(&sc, a, x->rank, &axis) < 0)
        return -1;
    bool excl = ir_attr_int(c->node, "exclusive", 0) != 0;
    bool rev = ir_attr_int(c->node, "reverse", 0) != 0;
    bool flt = ir_dtype_is_float(x->dtype), prod = c->node->op == IR_OP_CUM_PROD;
    int64_t outer, n, inner;
    split_axis(x, axis, &outer, &n, &inner);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            double fs = prod;
            uint64_t is = prod;
            for (int64_t t = 0; t < n; t++) {
                int64_t j = rev ? n - 1 - t : t;
                int64_t e = (o * n + j) * inner + in;
                if (excl) {
                    if (flt)
                        ir_tensor_setf(y, e, fs);
                    else
                        ir_tensor_seti(y, e, (int64_t)is);
                }
                if (flt && prod)
                    fs *= ir_tensor_getf(x, e);
                else if (flt)
                    fs += ir_tensor_getf(x, e);
                else if (prod)
                    is *= (uint64_t)ir_tensor_geti(x, e);
                else
                    is += (uint64_t)ir_tensor_geti(x, e);
                if (!excl) {
                    if (flt)
                        ir_tensor_setf(y, e, fs);
                    else
                        ir_tensor_seti(y, e, (int64_t)is);
                }
            }
        }
    return 0;
}

/* ---- TopK ------------------------------------------------------------------ */

int shape_topk(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    if (x->dtype == IR_BOOL)
        return ir_node_errorf(c->diag, c->node, "bool input is not supported");
    if (c->nout != 2)
        return ir_node_errorf(c->diag, c->node, "expects 2 outputs, got %d", c->nout);
    const ir_type *kt = c->in[1];
    if (kt->rank > 1 || (kt->dtype != IR_UNDEF && !ir_dtype_is_int(kt->dtype)))
        return ir_node_errorf(c->diag, c->node, "k must be a 1-element integer tensor");
    if (x->rank < 0) {
        ir_type_unknown(&c->out[0], x->dtype, IR_RANK_UNKNOWN);
        ir_type_unknown(&c->out[1], IR_I64, IR_RANK_UNKNOWN);
        return 0;
    }
    if (x->rank == 0)
        return ir_node_errorf(c->diag, c->node, "input must have rank >= 1");
    int axis;
    if (ir_norm_axis(c, ir_attr_int(c->node, "axis", -1), x->rank, &axis) < 0)
        return -1;
    ir_dim kd = ir_dim_unknown();
    if (c->val[1]) {
        int64_t k;
        if (read_scalar_i64(c, c->val[1], "k", &k) < 0)
            return -1;
        if (k < 0)
            return ir_node_errorf(c->diag, c->node, "k is negative (%lld)", (long long)k);
        ir_dim ad = x->dims[axis];
        if (ir_dim_is_const(ad) && k > ad.v)
            return ir_node_errorf(c->diag, c->node, "k = %lld exceeds the axis size %lld",
                                  (long long)k, (long long)ad.v);
        kd = ir_dim_const(k);
    }
    c->out[0] = *x;
    c->out[0].dims[axis] = kd;
    c->out[1] = c->out[0];
    c->out[1].dtype = IR_I64;
    return 0;
}

/* Ordering of TopK: values compared in the direction wanted, NaN greater
 * than any number; equal values keep index order (the sort is stable). */
typedef struct topk_cmp {
    const ir_tensor *x;
    int64_t base, inner;
    bool largest, flt, sg;
} topk_cmp;

static bool topk_before(const void *ctx, int64_t a, int64_t b)
{
    const topk_cmp *t = ctx;
    if (t->flt) {
        double va = ir_tensor_getf(t->x, t->base + a * t->inner);
        double vb = ir_tensor_getf(t->x, t->base + b * t->inner);
        if (isnan(va) || isnan(vb))
            return t->largest ? isnan(va) && !isnan(vb) : !isnan(va) && isnan(vb);
        return t->largest ? va > vb : va < vb;
    }
    uint64_t va = (uint64_t)ir_tensor_geti(t->x, t->base + a * t->inner);
    uint64_t vb = (uint64_t)ir_tensor_geti(t->x, t->base + b * t->inner);
    return t->largest ? int_less(vb, va, t->sg) : int_less(va, vb, t->sg);
}

/* Stable bottom-up merge sort of idx[0..n) with scratch tmp[0..n);
 * before(ctx, a, b) says a must precede b. */
typedef bool (*before_fn)(const void *ctx, int64_t a, int64_t b);

static void merge_sort(const void *t, before_fn before, int64_t *idx, int64_t *tmp, int64_t n)
{
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = before(t, idx[j], idx[i]) ? idx[j++] : idx[i++];
            while (i < mid)
                tmp[k++] = idx[i++];
            while (j < hi)
                tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, sizeof *idx * (size_t)n);
    }
}

int ref_topk(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    ir_tensor *vals = c->out[0], *inds = c->out[1];
    int axis;
    if (ir_ref_norm_axis(c, ir_attr_int(c->node, "axis", -1), x->rank, &axis) < 0)
        return -1;
    int64_t outer, n, inner;
    split_axis(x, axis, &outer, &n, &inner);
    int64_t k = vals->dims[axis];
    topk_cmp t = {.x = x, .inner = inner, .largest = ir_attr_int(c->node, "largest", 1) != 0,
                  .flt = ir_dtype_is_float(x->dtype)};
    uint64_t lo, hi;
    int_range(x->dtype, &t.sg, &lo, &hi);
    if (k == 0 || outer * inner == 0)
        return 0;
    int64_t *idx = malloc(sizeof *idx * (size_t)n * 2);
    if (!idx)
        return ir_node_errorf(c->diag, c->node, "out of memory");
    size_t es = ir_dtype_size(x->dtype);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            t.base = o * n * inner + in;
            for (int64_t j = 0; j < n; j++)
                idx[j] = j;
            merge_sort(&t, topk_before, idx, idx + n, n);
            for (int64_t j = 0; j < k; j++) {
                int64_t dst = (o * k + j) * inner + in;
                memcpy((char *)vals->data + (size_t)dst * es,
                       (const char *)x->data + (size_t)(t.base + idx[j] * inner) * es, es);
                ir_tensor_seti(inds, dst, idx[j]);
            }
        }
    free(idx);
    return 0;
}

/* ---- Unique ------------------------------------------------------------------ */

/* Items of Unique: the slices along axis (outer x inner elements each), or
 * single elements when there is no axis. Compared lexicographically in
 * row-major order; NaN sorts last and equals NaN. */
typedef struct uniq_cmp {
    const ir_tensor *x;
    int64_t outer, n, inner;
    bool flt, sg;
} uniq_cmp;

static int uniq_compare(const uniq_cmp *u, int64_t a, int64_t b)
{
    for (int64_t o = 0; o < u->outer; o++)
        for (int64_t i = 0; i < u->inner; i++) {
            int64_t ea = (o * u->n + a) * u->inner + i, eb = (o * u->n + b) * u->inner + i;
            if (u->flt) {
                double va = ir_tensor_getf(u->x, ea), vb = ir_tensor_getf(u->x, eb);
                if (isnan(va) || isnan(vb)) {
                    if (isnan(va) != isnan(vb))
                        return isnan(va) ? 1 : -1;
                } else if (va != vb) {
                    return va < vb ? -1 : 1;
                }
            } else {
                uint64_t va = (uint64_t)ir_tensor_geti(u->x, ea), vb = (uint64_t)ir_tensor_geti(u->x, eb);
                if (va != vb)
                    return int_less(va, vb, u->sg) ? -1 : 1;
            }
        }
    return 0;
}

static bool uniq_before(const void *ctx, int64_t a, int64_t b)
{
    return uniq_compare(ctx, a, b) < 0;
}

static bool first_before(const void *ctx, int64_t a, int64_t b)
{
    const int64_t *first = ctx;
    return first[a] < first[b];
}

/* Reads the axis attribute: *axis = -1 when absent (flatten). */
static int unique_axis(ir_shape_ctx *c, int rank, int *axis)
{
    *axis = -1;
    if (!ir_node_attr(c->node, "axis"))
        return 0;
    if (rank == 0)
        return ir_node_errorf(c->diag, c->node, "axis given for a scalar input");
    return rank < 0 ? 0 : ir_norm_axis(c, ir_attr_int(c->node, "axis", 0), rank, axis);
}

/* Sorts the items of x stably (sorted[0..n)) and numbers their groups of
 * equal items (group[k] for sorted position k); returns the group count,
 * or -1 on out of memory. The caller frees *sorted (group is part of it). */
static int64_t unique_groups(const ir_tensor *x, int axis, int64_t **sorted, int64_t **group,
                             int64_t *nitems)
{
    uniq_cmp u = {.x = x, .outer = 1, .n = x->numel, .inner = 1, .flt = ir_dtype_is_float(x->dtype)};
    uint64_t lo, hi;
    int_range(x->dtype, &u.sg, &lo, &hi);
    if (axis >= 0)
        split_axis(x, axis, &u.outer, &u.n, &u.inner);
    int64_t n = u.n;
    int64_t *buf = malloc(sizeof *buf * (size_t)(3 * n + 1));
    if (!buf)
        return -1;
    int64_t *idx = buf, *tmp = buf + n, *grp = buf + 2 * n;
    for (int64_t i = 0; i < n; i++)
        idx[i] = i;
    merge_sort(&u, uniq_before, idx, tmp, n);
    int64_t U = 0;
    for (int64_t k = 0; k < n; k++) {
        if (k > 0 && uniq_compare(&u, idx[k - 1], idx[k]) != 0)
            U++;
        grp[k] = U;
    }
    *sorted = idx;
    *group = grp;
    *nitems = n;
    return n ? U + 1 : 0;
}

int shape_unique(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    int axis;
    if (unique_axis(c, x->rank, &axis) < 0)
        return -1;
    bool has_axis = ir_node_attr(c->node, "axis") != NULL;
    ir_dim u = ir_dim_unknown(), items = ir_dim_unknown();
    if (x->rank >= 0 && has_axis)
        items = x->dims[axis];
    else if (x->rank >= 0 && !has_axis) {
        int64_t ne;
        if (ir_type_numel(x, &ne))
            items = ir_dim_const(ne);
    }
    if (c->val[0] && (x->rank >= 0 || !has_axis)) {
        int64_t *sorted, *group, n;
        int64_t U = unique_groups(c->val[0], axis, &sorted, &group, &n);
        if (U < 0)
            return ir_node_errorf(c->diag, c->node, "out of memory");
        free(sorted);
        u = ir_dim_const(U);
    }
    ir_type *y = &c->out[0];
    if (!has_axis) {
        ir_type_unknown(y, x->dtype, 1);
        y->dims[0] = u;
    } else if (x->rank < 0) {
        ir_type_unknown(y, x->dtype, IR_RANK_UNKNOWN);
    } else {
        *y = *x;
        y->dims[axis] = u;
    }
    for (int i = 1; i < c->nout; i++) {
        ir_type_unknown(&c->out[i], IR_I64, 1);
        c->out[i].dims[0] = i == 2 ? items : u;
    }
    return 0;
}

int ref_unique(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    ir_shape_ctx sc = kernel_shape_ctx(c);
    int axis;
    if (unique_axis(&sc, x->rank, &axis) < 0)
        return -1;
    int64_t *sorted, *group, n;
    int64_t U = unique_groups(x, axis, &sorted, &group, &n);
    if (U < 0)
        return ir_node_errorf(c->diag, c->node, "out of memory");
    /* Per group: first occurrence and count; then the output order. */
    int64_t *g = malloc(sizeof *g * (size_t)(4 * U + 1));
    if (!g) {
        free(sorted);
        return ir_node_errorf(c->diag, c->node, "out of memory");
    }
    int64_t *first = g, *count = g + U, *ord = g + 2 * U, *pos = g + 3 * U;
    for (int64_t k = 0; k < U; k++)
        count[k] = 0;
    for (int64_t k = 0; k < n; k++) {
        if (!count[group[k]]++)
            first[group[k]] = sorted[k];  /* stable sort: the first is the lowest index */
        ord[group[k]] = group[k];
    }
    if (!ir_attr_int(c->node, "sorted", 1))
        merge_sort(first, first_before, ord, pos, U);
    for (int64_t p = 0; p < U; p++)
        pos[ord[p]] = p;
    int64_t outer = 1, len = n, inner = 1;
    if (axis >= 0)
        split_axis(x, axis, &outer, &len, &inner);
    size_t es = ir_dtype_size(x->dtype);
    ir_tensor *y = c->out[0];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t p = 0; p < U; p++)
            memcpy((char *)y->data + (size_t)((o * U + p) * inner) * es,
                   (const char *)x->data + (size_t)((o * len + first[ord[p]]) * inner) * es,
                   (size_t)inner * es);
    for (int64_t p = 0; p < U && c->nout > 1; p++)
        ir_tensor_seti(c->out[1], p, first[ord[p]]);
    for (int64_t k = 0; k < n && c->nout > 2; k++)
        ir_tensor_seti(c->out[2], sorted[k], pos[group[k]]);
    for (int64_t p = 0; p < U && c->nout > 3; p++)
        ir_tensor_seti(c->out[3], p, count[ord[p]]);
    free(g);
    free(sorted);
    return 0;
}
