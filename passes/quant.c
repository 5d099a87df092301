/* quant.c - the lower-quant pass: rewrites the linear quantization ops
 * (ir/ref/quant.c) into core ops the backend compiles, with the roundings
 * of the reference kernels, so the compiled results are bit-exact:
 *
 *   QuantizeLinear    Clip(Round(Cast(x, P) / Cast(s, P)) + zp, lo, hi) -> T
 *                     (the quotient rounded in P, the precision type; the
 *                     rest in f32, or f64 when P is, all exact)
 *   DequantizeLinear  Cast((Cast(x, i32) - Cast(zp, i32)) -> f32) * Cast(s, f32) -> T
 *   DynamicQuantize-  ReduceMin/ReduceMax against 0, the scale, zero point
 *   Linear            and quantization in f32 as the spec's formulas
 *   QLinearMatMul     Clip(Round(Cast(MatMulInteger(a, b, az, bz), f64) *
 *                     Cast(as * bs / ys, f64) + yz), lo, hi) -> T
 *   QLinearConv       the same over ConvInteger (+ the i32 bias B)
 *
 * Scales and zero points become values that broadcast against x: a
 * per-axis one is reshaped to [D, 1, ...], a blocked one is expanded
 * along the axis by a Gather with constant indices (d / block_size).
 * A node whose shapes are not static enough to tell its layout is left
 * as it is (the interpreter still runs it; the backend reports it). Run it
 * right after shape-infer: the rewritten ops are then folded, fused and
 * planned like any other.
 */
#include "passes/pass.h"
#include "ir/ops.h"
#include "ir/ref/quant.h"
#include "passes/quant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- building blocks ---------------------------------------------------- */

/* Builders: passes/quant.h. A failed one leaves q->failed set; missing
 * inputs (NULL from an earlier failure) fail the next. */
ir_value *qb_emit_full(qbuild *q, int op, int nin, ir_value *const *in, const ir_node *attrs,
                       const char *key, int64_t val)
{
    if (q->failed)
        return NULL;
    for (int i = 0; i < nin; i++)
        if (!in[i] && i < ir_ops[op].min_in) {
            q->failed = true;
            return NULL;
        }
    /* fresh names: the graph's default "_tN" repeats after a compaction */
    char buf[256];
    const char *name = ir_graph_fresh_name(q->g, q->n->out[0]->name, "_q", buf, sizeof buf);
    ir_node *nn = ir_graph_add_node(q->g, op, q->n->name, nin, in, 1, &name, q->c->diag);
    bool ok = nn != NULL;
    for (int i = 0; ok && attrs && i < attrs->nattr; i++)
        ok = ir_node_add_attr(q->g, nn, &attrs->attrs[i]) == 0;
    if (ok && key)
        ok = ir_node_set_int(q->g, nn, key, val) == 0;
    if (nn && !ok)
        ir_errorf(q->c->diag, "out of memory");
    if (!ok || ir_infer_node(nn, q->c->diag) < 0) {
        q->failed = true;
        return NULL;
    }
    return nn->out[0];
}

/* op(in...) without attributes. */
static ir_value *emit(qbuild *q, int op, int nin, ir_value *const *in)
{
    return qb_emit_full(q, op, nin, in, NULL, NULL, 0);
}

ir_value *qb_op1(qbuild *q, int op, ir_value *a)
{
    ir_value *in[1] = {a};
    return a ? emit(q, op, 1, in) : NULL;
}

ir_value *qb_op2(qbuild *q, int op, ir_value *a, ir_value *b)
{
    ir_value *in[2] = {a, b};
    return a && b ? emit(q, op, 2, in) : NULL;
}

ir_value *qb_op_kv(qbuild *q, int op, ir_value *a, ir_value *b, const char *key, int64_t val)
{
    ir_value *in[2] = {a, b};
    if (!a || (op == IR_OP_GATHER && !b))
        return NULL;
    return qb_emit_full(q, op, b ? 2 : 1, in, NULL, key, val);
}

/* A constant of dtype t and the given shape holding vals (doubles, stored
 * in t). */
ir_value *qb_konst(qbuild *q, ir_dtype t, int rank, const int64_t *dims, const double *vals,
                       int64_t n)
{
    if (q->failed)
        return NULL;
    ir_type ty = {.dtype = t, .rank = rank};
    for (int i = 0; i < rank; i++)
        ty.dims[i] = ir_dim_const(dims[i]);
    char buf[256];
    const char *name = ir_graph_fresh_name(q->g, q->n->out[0]->name, "_q", buf,
                                           sizeof buf);
    ir_value *v = ir_graph_add_const(q->g, name, &ty, NULL, q->c->diag);
    if (!v) {
        q->failed = true;
        return NULL;
    }
    for (int64_t i = 0; i < n; i++)
        ir_tensor_setf(&v->cval, i, vals[i]);
    return v;
}

ir_value *qb_scalar(qbuild *q, ir_dtype t, double v) { return qb_konst(q, t, 0, NULL, &v, 1); }

ir_value *qb_cast(qbuild *q, ir_value *v, ir_dtype t)
{
    if (!v || v->type.dtype == t)
        return v;
    return qb_op_kv(q, IR_OP_CAST, v, NULL, "to", ir_dtype_to_onnx(t));
}

ir_value *qb_reshape(qbuild *q, ir_value *v, int rank, const int64_t *dims)
{
    double d[IR_MAX_RANK] = {0};
    for (int i = 0; i < rank; i++)
        d[i] = (double)dims[i];
    int64_t r = rank;
    return qb_op2(q, IR_OP_RESHAPE, v, qb_konst(q, IR_I64, 1, &r, d, rank));
}

/* Clip(v, lo, hi) in v's dtype. */
static ir_value *clip(qbuild *q, ir_value *v, double lo, double hi)
{
    if (!v)
        return NULL;
    ir_dtype t = v->type.dtype;
    ir_value *in[3] = {v, qb_scalar(q, t, lo), qb_scalar(q, t, hi)};
    return in[1] && in[2] ? emit(q, IR_OP_CLIP, 3, in) : NULL;
}

static void qrange(ir_dtype t, double *lo, double *hi)
{
    switch (t) {
    case IR_U8: *lo = 0; *hi = 255; break;
    case IR_I8: *lo = -128; *hi = 127; break;
    case IR_U16: *lo = 0; *hi = 65535; break;
    default: *lo = -32768; *hi = 32767; break;
    }
}

/* Static dims of t into d; false when t is not static. */
static bool static_dims(const ir_type *t, int64_t *d)
{
    if (!ir_type_is_static(t))
        return false;
    for (int i = 0; i < t->rank; i++)
        d[i] = t->dims[i].v;
    return true;
}

/* ---- scales and zero points against x ----------------------------------- */

/* How p (a scale or zero point of node n over x of rank xr) broadcasts:
 * per tensor, per axis (reshaped to [D, 1...]), blocked (gathered along
 * the axis). False when the layout cannot be told statically. */
typedef struct qparam_plan {
    int kind;                  /* 0 per tensor, 1 per axis, 2 blocked */
    int axis;
    int64_t block, d;          /* block size; x's dim along the axis */
} qparam_plan;

static bool plan_param(const ir_node *n, const ir_type *x, const ir_type *p, qparam_plan *pl)
{
    memset(pl, 0, sizeof *pl);
    int64_t pd[IR_MAX_RANK], pn = 1;
    if (!static_dims(p, pd) || x->rank < 0)
        return false;
    for (int i = 0; i < p->rank; i++)
        pn *= pd[i];
    int64_t block = ir_attr_int(n, "block_size", 0), axis = ir_attr_int(n, "axis", 1);
    if (p->rank <= 1 && pn == 1 && block == 0)
        return true;
    if (axis < -x->rank || axis >= x->rank)
        return false;
    pl->axis = (int)(axis < 0 ? axis + x->rank : axis);
    if (!ir_dim_is_const(x->dims[pl->axis]))
        return false;
    pl->d = x->dims[pl->axis].v;
    pl->kind = block > 0 ? 2 : 1;
    pl->block = block;
    return true;
}

/* p as a value broadcasting against x (rank xr) under plan pl. */
static ir_value *broadcast_param(qbuild *q, ir_value *p, int xr, const qparam_plan *pl)
{
    if (!p)
        return NULL;
    if (pl->kind == 0) {
        /* [1] broadcasts against any x of rank >= 1 as it is */
        if (p->type.rank == 0 || xr >= 1)
            return p;
        return qb_reshape(q, p, 0, NULL);
    }
    if (pl->kind == 1) {
        if (pl->axis == xr - 1)
            return p;
        int64_t dims[IR_MAX_RANK];
        dims[0] = pl->d;
        for (int i = 1; i < xr - pl->axis; i++)
            dims[i] = 1;
        return qb_reshape(q, p, xr - pl->axis, dims);
    }
    double *idx = malloc(sizeof *idx * (size_t)(pl->d + 1));
    if (!idx) {
        q->failed = true;
        ir_errorf(q->c->diag, "out of memory");
        return NULL;
    }
    for (int64_t i = 0; i < pl->d; i++)
        idx[i] = (double)(i / pl->block);
    int64_t dn = pl->d;
    ir_value *ix = qb_konst(q, IR_I64, 1, &dn, idx, dn);
    free(idx);
    return qb_op_kv(q, IR_OP_GATHER, p, ix, "axis", pl->axis);
}

/* ---- the rewrites -------------------------------------------------------- */

void qb_replace_output(qbuild *q, ir_node *n, int i, ir_value *v)
{
    ir_value *old = n->out[i];
    v->name = old->name;
    ir_replace_all_uses(q->g, old, v);
}

static int lower_quantize(qbuild *q, ir_node *n)
{
    ir_value *x = n->in[0], *s = n->in[1], *zp = n->nin > 2 ? n->in[2] : NULL;
    qparam_plan pl;
    if (!plan_param(n, &x->type, &s->type, &pl))
        return 0;
    ir_dtype p;
    if (quant_precision(n, q->c->diag, x->type.dtype, s->type.dtype, &p) < 0)
        return -1;
    ir_dtype w = p == IR_F64 ? IR_F64 : IR_F32; /* the exact rest */
    int xr = x->type.rank;
    ir_value *v = qb_op2(q, IR_OP_DIV, qb_cast(q, x, p), qb_cast(q, broadcast_param(q, s, xr, &pl), p));
    v = qb_op1(q, IR_OP_ROUND, qb_cast(q, v, w));
    if (zp)
        v = qb_op2(q, IR_OP_ADD, v, qb_cast(q, broadcast_param(q, zp, xr, &pl), w));
    ir_dtype out = n->out[0]->type.dtype;
    double lo, hi;
    qrange(out, &lo, &hi);
    v = qb_cast(q, clip(q, v, lo, hi), out);
    if (!v)
        return -1;
    qb_replace_output(q, n, 0, v);
    return 1;
}

static int lower_dequantize(qbuild *q, ir_node *n)
{
    ir_value *x = n->in[0], *s = n->in[1], *zp = n->nin > 2 ? n->in[2] : NULL;
    qparam_plan pl;
    if (!plan_param(n, &x->type, &s->type, &pl))
        return 0;
    int xr = x->type.rank;
    ir_value *d = x;
    if (zp)
        d = qb_op2(q, IR_OP_SUB, qb_cast(q, x, IR_I32), qb_cast(q, broadcast_param(q, zp, xr, &pl), IR_I32));
    ir_value *v = qb_op2(q, IR_OP_MUL, qb_cast(q, d, IR_F32), qb_cast(q, broadcast_param(q, s, xr, &pl), IR_F32));
    v = qb_cast(q, v, n->out[0]->type.dtype);
    if (!v)
        return -1;
    qb_replace_output(q, n, 0, v);
    return 1;
}

/* The reduction of x over every dim to a scalar. */
static ir_value *reduce_all(qbuild *q, int op, ir_value *x)
{
    return qb_op_kv(q, op, x, NULL, "keepdims", 0);
}

static int lower_dynamic(qbuild *q, ir_node *n)
{
    ir_value *x = n->in[0];
    ir_value *mx = qb_op2(q, IR_OP_MAX, reduce_all(q, IR_OP_REDUCE_MAX, x), qb_scalar(q, IR_F32, 0));
    ir_value *mn = qb_op2(q, IR_OP_MIN, reduce_all(q, IR_OP_REDUCE_MIN, x), qb_scalar(q, IR_F32, 0));
    ir_value *in[3] = {qb_op2(q, IR_OP_EQUAL, mx, mn), qb_scalar(q, IR_F32, 1), qb_op2(q, IR_OP_SUB, mx, mn)};
    ir_value *range = in[0] && in[1] && in[2] ? emit(q, IR_OP_WHERE, 3, in) : NULL;
    ir_value *scale = qb_op2(q, IR_OP_DIV, range, qb_scalar(q, IR_F32, 255));
    ir_value *izp = qb_op2(q, IR_OP_SUB, qb_scalar(q, IR_F32, 0), qb_op2(q, IR_OP_DIV, mn, scale));
    ir_value *zp = qb_op1(q, IR_OP_ROUND, clip(q, izp, 0, 255));
    ir_value *y = qb_op1(q, IR_OP_ROUND, qb_op2(q, IR_OP_DIV, x, scale));
    y = qb_cast(q, clip(q, qb_op2(q, IR_OP_ADD, y, zp), 0, 255), IR_U8);
    ir_value *zq = qb_cast(q, zp, IR_U8);
    if (!y || !zq)
        return -1;
    qb_replace_output(q, n, 0, y);
    if (n->nout > 1 && n->out[1])
        qb_replace_output(q, n, 1, scale);
    if (n->nout > 2 && n->out[2])
        qb_replace_output(q, n, 2, zq);
    return 1;
}

/* Clip(Round(Cast(acc, f64) * mult + Cast(yz, f64)), lo, hi) -> out: the
 * requantization of QLinearMatMul and QLinearConv. mult is the scale
 * product in the scales' dtype, shaped to broadcast against acc. */
static ir_value *requantize(qbuild *q, ir_value *acc, ir_value *mult, ir_value *yz, ir_dtype out)
{
    ir_value *v = qb_op2(q, IR_OP_MUL, qb_cast(q, acc, IR_F64), qb_cast(q, mult, IR_F64));
    v = qb_op1(q, IR_OP_ROUND, qb_op2(q, IR_OP_ADD, v, qb_cast(q, yz, IR_F64)));
    double lo, hi;
    qrange(out, &lo, &hi);
    return qb_cast(q, clip(q, v, lo, hi), out);
}

/* A scalar-or-[1] parameter: static and one element. */
static bool is_scalarish(const ir_value *v)
{
    int64_t n;
    return ir_type_is_static(&v->type) && ir_type_numel(&v->type, &n) && n == 1 &&
           v->type.rank <= 1;
}

static int lower_qlinear_matmul(qbuild *q, ir_node *n)
{
    ir_value *a = n->in[0], *as = n->in[1], *az = n->in[2], *b = n->in[3], *bs = n->in[4];
    ir_value *bz = n->in[5], *ys = n->in[6], *yz = n->in[7];
    int ar = a->type.rank;
    if (ar < 0 || !ir_type_is_static(&as->type) || !ir_type_is_static(&bs->type) ||
        !is_scalarish(ys) || !is_scalarish(yz))
        return 0;
    /* a per-row scale is [M]: [M, 1] to broadcast over the columns */
    if (!is_scalarish(as) && as->type.rank == 1 && ar >= 2) {
        int64_t d[2] = {as->type.dims[0].v, 1};
        as = qb_reshape(q, as, 2, d);
    }
    ir_value *in[4] = {a, b, az, bz};
    ir_value *acc = emit(q, IR_OP_MATMUL_INTEGER, 4, in);
    ir_value *mult = qb_op2(q, IR_OP_DIV, qb_op2(q, IR_OP_MUL, as, bs), ys);
    ir_value *v = requantize(q, acc, mult, yz, n->out[0]->type.dtype);
    if (!v)
        return -1;
    qb_replace_output(q, n, 0, v);
    return 1;
}

static int lower_qlinear_conv(qbuild *q, ir_node *n)
{
    ir_value *x = n->in[0], *xs = n->in[1], *xz = n->in[2], *w = n->in[3], *ws = n->in[4];
    ir_value *wz = n->in[5], *ys = n->in[6], *yz = n->in[7], *b = n->nin > 8 ? n->in[8] : NULL;
    int yr = n->out[0]->type.rank;
    if (yr < 3 || !is_scalarish(xs) || !ir_type_is_static(&ws->type) || !is_scalarish(ys) ||
        !is_scalarish(yz) || (b && !ir_type_is_static(&b->type)))
        return 0;
    ir_value *in[4] = {x, w, xz, wz};
    ir_value *acc = qb_emit_full(q, IR_OP_CONV_INTEGER, 4, in, n, NULL, 0);
    /* per-channel values are [M]: [M, 1, ...] against [N, M, spatial...] */
    int64_t d[IR_MAX_RANK];
    for (int i = 0; i < yr - 1; i++)
        d[i] = 1;
    if (b) {
        d[0] = b->type.dims[0].v;
        acc = qb_op2(q, IR_OP_ADD, acc, qb_reshape(q, b, yr - 1, d));
    }
    if (!is_scalarish(ws)) {
        d[0] = ws->type.dims[0].v;
        ws = qb_reshape(q, ws, yr - 1, d);
    }
    ir_value *mult = qb_op2(q, IR_OP_DIV, qb_op2(q, IR_OP_MUL, xs, ws), ys);
    ir_value *v = requantize(q, acc, mult, yz, n->out[0]->type.dtype);
    if (!v)
        return -1;
    qb_replace_output(q, n, 0, v);
    return 1;
}

int pass_lower_quant(pass_ctx *c)
{
    qbuild q = {.c = c, .g = c->g};
    int64_t counts[5] = {0};
    int nn = c->g->nnodes;
    for (int k = 0; k < nn; k++) {
        ir_node *n = c->g->nodes[k];
        if (n->dead)
            continue;
        int r, which;
        q.n = n;
        q.failed = false;
        switch (n->op) {
        case IR_OP_QUANTIZE_LINEAR: which = 0; r = lower_quantize(&q, n); break;
        case IR_OP_DEQUANTIZE_LINEAR: which = 1; r = lower_dequantize(&q, n); break;
        case IR_OP_DYNAMIC_QUANTIZE_LINEAR: which = 2; r = lower_dynamic(&q, n); break;
        case IR_OP_QLINEAR_MATMUL: which = 3; r = lower_qlinear_matmul(&q, n); break;
        case IR_OP_QLINEAR_CONV: which = 4; r = lower_qlinear_conv(&q, n); break;
        default: continue;
        }
        if (r < 0) {
            if (!c->diag->msg[0])
                ir_node_errorf(c->diag, n, "lower-quant: cannot rewrite this node");
            return -1;
        }
        if (r > 0) {
            ir_node_erase(n);
            counts[which]++;
            c->changed = true;
        }
    }
    if (pass_commit_rewrites(c) < 0)
        return -1;
    pass_stat(c, "QuantizeLinear lowered", counts[0]);
    pass_stat(c, "DequantizeLinear lowered", counts[1]);
    pass_stat(c, "DynamicQuantizeLinear lowered", counts[2]);
    pass_stat(c, "QLinearMatMul lowered", counts[3]);
    pass_stat(c, "QLinearConv lowered", counts[4]);
    return 0;
}
