/* qdq.c - the qdq pass: runs the contractions of QDQ models (the format
 * onnxruntime.quantization.quantize_static writes) as integer kernels.
 * In that format every quantized tensor reaches a float op through a
 * DequantizeLinear, and its result is quantized again by a
 * QuantizeLinear:
 *
 *   Conv(DQ(xq, sx, zx), DQ(wq, sw, zw), b)   MatMul(DQ(aq, sa, za), DQ(bq, sb, zb))
 *   Gemm(DQ(aq, sa, za), DQ(bq, sb, zb), c)
 *
 * Since DQ(q) = (q - z) * s and the scales are per tensor for the data
 * and per tensor or per output channel for the weights, the contraction
 * equals the integer contraction of the quantized operands times the
 * scale product:
 *
 *   Conv   -> Cast(ConvInteger(xq, wq, zx, zw), f32) * (sx * sw[m]) + b
 *   MatMul -> Cast(MatMulInteger(aq, bq, za, zb), f32) * (sa * sb[n])
 *   Gemm   -> Cast(MatMulInteger(aq, op(bq), za, zb), f32) * (alpha * sa * sb[n]) + beta * c
 *
 * with i32 accumulation, exact where the float form rounds. The bias (a
 * DequantizeLinear of i32 values in these models) is added in f32; the
 * elementwise tail (scale, bias, and the QuantizeLinear after it once
 * lower-quant has rewritten it) is fused into one kernel after the
 * contraction. The DequantizeLinear nodes left without users are dce's.
 * QLinearMatMul and QLinearConv need no pattern: lower-quant makes them
 * MatMulInteger/ConvInteger directly. Blocked scales and data quantized
 * per axis do not match and stay float. Must run before lower-quant
 * (which removes the DequantizeLinear nodes it matches) and before fold
 * (which would fold DQ(weights) into float constants).
 */
#include "passes/pass.h"
#include "ir/ops.h"
#include "passes/quant.h"

#include <string.h>

/* A DequantizeLinear feeding a contraction, and the layout of its scale:
 * one value (per tensor) or one per index of dim `axis` of q. */
typedef struct dq {
    ir_value *q, *s, *z;
    bool per_tensor;
    int axis;                  /* per axis: the normalized axis */
    int64_t len;               /* per axis: the scale's length */
} dq;

static bool numel_of(const ir_value *v, int64_t *n)
{
    return ir_type_is_static(&v->type) && ir_type_numel(&v->type, n);
}

/* v = DequantizeLinear(q, s [, z]) with q u8/i8, an f32 scale and result,
 * and a per-tensor or per-axis (not blocked) layout. */
static bool match_dq(const ir_value *v, dq *d)
{
    if (!v || v->kind != IR_VAL_NODE || v->def->dead || v->def->op != IR_OP_DEQUANTIZE_LINEAR)
        return false;
    const ir_node *n = v->def;
    memset(d, 0, sizeof *d);
    d->q = n->in[0];
    d->s = n->in[1];
    d->z = n->nin > 2 ? n->in[2] : NULL;
    ir_dtype t = d->q->type.dtype;
    if ((t != IR_U8 && t != IR_I8) || d->s->type.dtype != IR_F32 || v->type.dtype != IR_F32 ||
        ir_attr_int(n, "block_size", 0) != 0)
        return false;
    int64_t sn, zn;
    if (!numel_of(d->s, &sn) || (d->z && (!numel_of(d->z, &zn) || zn != sn)) || d->s->type.rank > 1)
        return false;
    d->per_tensor = sn == 1;
    if (d->per_tensor)
        return true;
    int r = d->q->type.rank;
    int64_t axis = ir_attr_int(n, "axis", 1);
    if (r < 1 || axis < -r || axis >= r)
        return false;
    d->axis = (int)(axis < 0 ? axis + r : axis);
    d->len = sn;
    return true;
}

/* The per-channel scale of w reshaped to [M, 1, ...] against a result of
 * rank yr whose dim 1 is the channel (Conv); the scalar as it is. */
static ir_value *channel_shaped(qbuild *q, ir_value *v, int64_t m, int yr)
{
    int64_t n;
    if (!v || (numel_of(v, &n) && n == 1 && v->type.rank <= 1))
        return v;
    int64_t d[IR_MAX_RANK];
    d[0] = m;
    for (int i = 1; i < yr - 1; i++)
        d[i] = 1;
    return qb_reshape(q, v, yr - 1, d);
}

static int rewrite_conv(qbuild *q, ir_node *n)
{
    dq x, w;
    if (!match_dq(n->in[0], &x) || !match_dq(n->in[1], &w) || !x.per_tensor)
        return 0;
    int yr = n->out[0]->type.rank;
    if (yr < 3 || w.q->type.rank != yr || !ir_dim_is_const(w.q->type.dims[0]))
        return 0;
    int64_t m = w.q->type.dims[0].v;
    if (!w.per_tensor && (w.axis != 0 || w.len != m))
        return 0;
    ir_value *in[4] = {x.q, w.q, x.z, w.z};
    ir_value *acc = qb_emit_full(q, IR_OP_CONV_INTEGER, 4, in, n, NULL, 0);
    ir_value *mult = qb_op2(q, IR_OP_MUL, x.s, channel_shaped(q, w.s, m, yr));
    ir_value *y = qb_op2(q, IR_OP_MUL, qb_cast(q, acc, IR_F32), mult);
    ir_value *b = n->nin > 2 ? n->in[2] : NULL;
    if (b)
        y = qb_op2(q, IR_OP_ADD, y, channel_shaped(q, b, m, yr));
    if (!y)
        return -1;
    qb_replace_output(q, n, 0, y);
    return 1;
}

/* MatMul and Gemm: B's scale is per tensor, or per column when B is
 * [K, N] (Gemm with transB: [N, K], transposed here); a per-tensor B of
 * MatMul may be batched (the attention products of activations). */
static int rewrite_matmul(qbuild *q, ir_node *n)
{
    bool gemm = n->op == IR_OP_GEMM;
    dq a, b;
    if (!match_dq(n->in[0], &a) || !match_dq(n->in[1], &b) || !a.per_tensor)
        return 0;
    bool tb = gemm && ir_attr_int(n, "transB", 0) != 0;
    int br = b.q->type.rank;
    if ((gemm && (ir_attr_int(n, "transA", 0) != 0 || br != 2)) || br < 1 || a.q->type.rank < 1)
        return 0;
    /* per column: B is [K, N], the scale [N] */
    if (!b.per_tensor) {
        const ir_dim nd = b.q->type.dims[tb ? 0 : 1];
        if (br != 2 || b.axis != (tb ? 0 : 1) || !ir_dim_is_const(nd) || b.len != nd.v)
            return 0;
    }
    ir_value *bq = tb ? qb_op1(q, IR_OP_TRANSPOSE, b.q) : b.q;
    ir_value *in[4] = {a.q, bq, a.z, b.z};
    ir_value *acc = qb_emit_full(q, IR_OP_MATMUL_INTEGER, 4, in, NULL, NULL, 0);
    ir_value *mult = qb_op2(q, IR_OP_MUL, a.s, b.s);
    double alpha = gemm ? ir_attr_float(n, "alpha", 1.0f) : 1.0;
    if (alpha != 1.0)
        mult = qb_op2(q, IR_OP_MUL, mult, qb_scalar(q, IR_F32, alpha));
    ir_value *y = qb_op2(q, IR_OP_MUL, qb_cast(q, acc, IR_F32), mult);
    ir_value *c = gemm && n->nin > 2 ? n->in[2] : NULL;
    if (c) {
        double beta = ir_attr_float(n, "beta", 1.0f);
        if (beta != 1.0)
            c = qb_op2(q, IR_OP_MUL, c, qb_scalar(q, IR_F32, beta));
        y = qb_op2(q, IR_OP_ADD, y, c);
    }
    if (!y)
        return -1;
    qb_replace_output(q, n, 0, y);
    return 1;
}

int pass_qdq(pass_ctx *c)
{
    qbuild q = {.c = c, .g = c->g};
    int64_t convs = 0, matmuls = 0;
    int nn = c->g->nnodes;
    for (int k = 0; k < nn; k++) {
        ir_node *n = c->g->nodes[k];
        if (n->dead || n->out[0]->type.dtype != IR_F32)
            continue;
        int r;
        q.n = n;
        q.failed = false;
        if (n->op == IR_OP_CONV)
            r = rewrite_conv(&q, n);
        else if (n->op == IR_OP_MATMUL || n->op == IR_OP_GEMM)
            r = rewrite_matmul(&q, n);
        else
            continue;
        if (r < 0) {
            if (!c->diag->msg[0])
                ir_node_errorf(c->diag, n, "qdq: cannot rewrite this node");
            return -1;
        }
        if (r > 0) {
            ir_node_erase(n);
            *(n->op == IR_OP_CONV ? &convs : &matmuls) += 1;
            c->changed = true;
        }
    }
    if (pass_commit_rewrites(c) < 0)
        return -1;
    pass_stat(c, "Conv made ConvInteger", convs);
    pass_stat(c, "MatMul/Gemm made MatMulInteger", matmuls);
    return 0;
}
