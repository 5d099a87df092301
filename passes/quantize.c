/* quantize.c - the int8 and int8-dynamic rewrite of the `precision` pass
 * (docs/precision.md, "INT8"). Each MatMul, Gemm and (static only) Conv
 * with constant f32 weights that the keep list leaves alone becomes an
 * integer contraction:
 *
 *   static:  xq = QuantizeLinear(x, x_scale, x_zp)      (ranges: --calibrate)
 *            y  = Add(Mul(Cast_f32(MatMulInteger(xq, Wq, x_zp)), x_scale*w_scale[n]), bias)
 *            (ConvInteger for Conv, the scale and bias along dim 1)
 *   dynamic: xq, x_scale, x_zp = DynamicQuantizeLinear(x)
 *            y  = Add(Mul(Mul(Cast_f32(MatMulInteger(xq, Wq, x_zp)), w_scale[n]), x_scale), bias)
 *
 * Weights are int8, symmetric per output channel (zero point 0, levels
 * -127..127, w_scale = max|W[:, n]| / 127); activations u8 asymmetric per
 * tensor (or i8 symmetric with zero point 0 when the calibration says
 * so). QuantizeLinear and DynamicQuantizeLinear are written out as the
 * elementwise ops and reductions that define them in the ONNX spec
 * (round half to even, saturate), which the fuse pass groups like any
 * elementwise chain. The last node of each rewrite takes the original
 * result's name, so values of the fp32 and int8 graphs compare by name.
 */
#include "passes/pass.h"
#include "passes/calibrate.h"
#include "passes/precision.h"
#include "ir/ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ONNX TensorProto codes for Cast's `to`. */
enum { ONNX_FLOAT = 1, ONNX_UINT8 = 2, ONNX_INT8 = 3 };

typedef struct qctx {
    pass_ctx *c;
    const icc_precision_opts *o;
    bool dynamic, symmetric;
    const ir_node *n;          /* the contraction being rewritten */
    const char *base;          /* new values are named base + suffix */
    struct cached *cache;      /* activations quantized so far (contractions sharing an input share it) */
    int ncache, capcache;
} qctx;

static ir_value *scalar_f32(qctx *q, const char *base, const char *suffix, float v)
{
    char buf[256];
    ir_type t = {.dtype = IR_F32, .rank = 0};
    return ir_graph_add_const(q->c->g, ir_graph_fresh_name(q->c->g, base, suffix, buf, sizeof buf), &t, &v,
                              q->c->diag);
}

/* A node of op over in[0..nin) with one result named base+suffix (or
 * exactly `exact` when non-NULL), its type inferred. */
static ir_value *op_node(qctx *q, int op, int nin, ir_value *const *in, const char *suffix, const char *exact)
{
    ir_graph *g = q->c->g;
    char buf[256];
    const char *name = exact ? exact : ir_graph_fresh_name(g, q->base, suffix, buf, sizeof buf);
    ir_node *nn = ir_graph_add_node(g, op, exact ? q->n->name : name, nin, in, 1, &name, q->c->diag);
    if (!nn)
        return NULL;
    if (op == IR_OP_CAST || op == IR_OP_REDUCE_MIN || op == IR_OP_REDUCE_MAX)
        return nn->out[0]; /* `to`, `keepdims` are set by the caller before inference */
    if (ir_infer_node(nn, q->c->diag) < 0)
        return NULL;
    return nn->out[0];
}

static ir_value *op2(qctx *q, int op, ir_value *a, ir_value *b, const char *suffix)
{
    ir_value *in[2] = {a, b};
    return a && b ? op_node(q, op, 2, in, suffix, NULL) : NULL;
}

static ir_value *op1(qctx *q, int op, ir_value *a, const char *suffix)
{
    return a ? op_node(q, op, 1, &a, suffix, NULL) : NULL;
}

static ir_value *cast(qctx *q, ir_value *a, int to, const char *suffix)
{
    ir_value *v = a ? op_node(q, IR_OP_CAST, 1, &a, suffix, NULL) : NULL;
    if (!v || ir_node_set_int(q->c->g, v->def, "to", to) < 0 || ir_infer_node(v->def, q->c->diag) < 0)
        return NULL;
    return v;
}

static ir_value *clip(qctx *q, ir_value *a, float lo, float hi, const char *suffix)
{
    ir_value *in[3] = {a, scalar_f32(q, q->base, "_qmin", lo), scalar_f32(q, q->base, "_qmax", hi)};
    return a && in[1] && in[2] ? op_node(q, IR_OP_CLIP, 3, in, suffix, NULL) : NULL;
}

/* QuantizeLinear(x, scale, zp) as the spec defines it:
 * saturate(round_half_even(x / scale) + zp), to u8 (or i8). */
static ir_value *quantize(qctx *q, ir_value *x, ir_value *scale, ir_value *zp_f, bool i8)
{
    ir_value *t = op2(q, IR_OP_DIV, x, scale, "_qdiv");
    t = op1(q, IR_OP_ROUND, t, "_qround");
    if (zp_f)
        t = op2(q, IR_OP_ADD, t, zp_f, "_qzp");
    t = t ? clip(q, t, i8 ? -128.0f : 0.0f, i8 ? 127.0f : 255.0f, "_qsat") : NULL;
    return cast(q, t, i8 ? ONNX_INT8 : ONNX_UINT8, "_q");
}

/* The activation's calibrated range, looking through ops that move data
 * without changing values (a range recorded before simplify merged a
 * Reshape chain still applies). */
static const icc_calib_range *range_of(const icc_calibration *cal, const ir_value *v)
{
    for (int hops = 0; v && hops < 16; hops++) {
        const icc_calib_range *r = icc_calibration_find(cal, v->name);
        if (r)
            return r;
        if (v->kind != IR_VAL_NODE || !v->def)
            return NULL;
        int op = v->def->op;
        if (op != IR_OP_RESHAPE && op != IR_OP_FLATTEN && op != IR_OP_TRANSPOSE && op != IR_OP_SQUEEZE &&
            op != IR_OP_UNSQUEEZE && op != IR_OP_IDENTITY)
            return NULL;
        v = v->def->in[0];
    }
    return NULL;
}

typedef struct act {
    ir_value *xq;              /* u8/i8 */
    ir_value *zp;              /* MatMulInteger/ConvInteger's zero point (NULL: 0) */
    ir_value *scale;           /* dynamic: the f32 scalar computed at run time */
    double static_scale;       /* static: the scale */
} act;

/* Static: x's quantization from its calibrated range [lo, hi] widened to
 * include 0, so that 0 is exact (padding, ReLU outputs). */
static int quantize_static(qctx *q, ir_value *x, act *a)
{
    const icc_calib_range *r = range_of(q->o->calib, x);
    if (!r)
        return ir_node_errorf(q->c->diag, q->n,
                              "no calibration range for its input '%s' (calibrate the same model, or keep the node "
                              "with --keep-fp32=%s)",
                              x->name, q->n->name);
    double lo = fmin(r->lo, 0.0), hi = fmax(r->hi, 0.0), scale;
    ir_graph *g = q->c->g;
    char buf[256];
    if (q->symmetric) {
        double amax = fmax(-lo, hi);
        scale = amax > 0 ? amax / 127.0 : 1.0;
        a->zp = NULL;
        a->xq = quantize(q, x, scalar_f32(q, x->name, "_scale", (float)scale), NULL, true);
    } else {
        scale = hi > lo ? (hi - lo) / 255.0 : 1.0;
        double zp = nearbyintf((float)-lo / (float)scale);
        zp = fmin(fmax(zp, 0), 255);
        uint8_t z = (uint8_t)zp;
        ir_type t = {.dtype = IR_U8, .rank = 0};
        a->zp = ir_graph_add_const(g, ir_graph_fresh_name(g, x->name, "_zero_point", buf, sizeof buf), &t, &z,
                                   q->c->diag);
        a->xq = a->zp ? quantize(q, x, scalar_f32(q, x->name, "_scale", (float)scale),
                                 scalar_f32(q, x->name, "_zp_f32", (float)zp), false)
                      : NULL;
    }
    a->static_scale = (float)scale;
    a->scale = NULL;
    return a->xq ? 0 : -1;
}

/* DynamicQuantizeLinear(x) as the spec defines it: the range of x widened
 * to include 0, scale = (max - min) / 255, zp = saturate(round(-min / scale)),
 * xq = saturate(round(x / scale) + zp), all u8. */
static int quantize_dynamic(qctx *q, ir_value *x, act *a)
{
    ir_graph *g = q->c->g;
    ir_value *mn = op1(q, IR_OP_REDUCE_MIN, x, "_dq_min");
    ir_value *mx = op1(q, IR_OP_REDUCE_MAX, x, "_dq_max");
    if (!mn || !mx || ir_node_set_int(g, mn->def, "keepdims", 0) < 0 || ir_node_set_int(g, mx->def, "keepdims", 0) < 0 ||
        ir_infer_node(mn->def, q->c->diag) < 0 || ir_infer_node(mx->def, q->c->diag) < 0)
        return -1;
    ir_value *zero = scalar_f32(q, x->name, "_zero", 0.0f);
    mn = op2(q, IR_OP_MIN, mn, zero, "_dq_min0");
    mx = op2(q, IR_OP_MAX, mx, zero, "_dq_max0");
    ir_value *scale = op2(q, IR_OP_DIV, op2(q, IR_OP_SUB, mx, mn, "_dq_span"),
                          scalar_f32(q, x->name, "_levels", 255.0f), "_dq_scale");
    ir_value *zpf = op2(q, IR_OP_SUB, zero, op2(q, IR_OP_DIV, mn, scale, "_dq_mins"), "_dq_zpi");
    zpf = zpf ? clip(q, zpf, 0.0f, 255.0f, "_dq_zps") : NULL;
    zpf = op1(q, IR_OP_ROUND, zpf, "_dq_zpf");
    a->zp = cast(q, zpf, ONNX_UINT8, "_dq_zp");
    a->xq = a->zp ? quantize(q, x, scale, zpf, false) : NULL;
    a->scale = scale;
    return a->xq ? 0 : -1;
}

/* Wq (i8, same shape as w) and the per-channel scales: channel of element
 * i is (i / inner) % C. A channel of zeros gets scale 1. */
static ir_value *quantize_weights(qctx *q, ir_value *w, int64_t C, int64_t inner, bool transpose2d, double *scale)
{
    ir_graph *g = q->c->g;
    const ir_tensor *t = &w->cval;
    for (int64_t ch = 0; ch < C; ch++)
        scale[ch] = 0;
    for (int64_t i = 0; i < t->numel; i++) {
        int64_t ch = (i / inner) % C;
        scale[ch] = fmax(scale[ch], fabs(ir_tensor_getf(t, i)));
    }
    for (int64_t ch = 0; ch < C; ch++)
        scale[ch] = scale[ch] > 0 ? (float)(scale[ch] / 127.0) : 1.0;
    ir_type qt = w->type;
    qt.dtype = IR_I8;
    if (transpose2d) { /* Gemm transB: store [K, N] */
        qt.dims[0] = w->type.dims[1];
        qt.dims[1] = w->type.dims[0];
    }
    char buf[256];
    ir_value *wq = ir_graph_add_const(g, ir_graph_fresh_name(g, w->name, "_int8", buf, sizeof buf), &qt, NULL,
                                      q->c->diag);
    if (!wq)
        return NULL;
    int8_t *dst = wq->cval.data;
    int64_t cols = transpose2d ? t->dims[0] : 0, rows = transpose2d ? t->dims[1] : 0;
    for (int64_t i = 0; i < t->numel; i++) {
        int64_t ch = (i / inner) % C;
        /* in f32, as QuantizeLinear computes x / scale */
        float v = nearbyintf((float)ir_tensor_getf(t, i) / (float)scale[ch]);
        v = fminf(fmaxf(v, -127), 127);
        /* transposed: element (n, k) of [N, K] goes to (k, n) of [K, N] */
        int64_t at = transpose2d ? (i % rows) * cols + i / rows : i;
        dst[at] = (int8_t)v;
    }
    return wq;
}

/* A constant f32 vector of C values v[ch] * k, shaped [C] or, for Conv,
 * [1, C, 1, ...] (rank dims). */
static ir_value *channel_const(qctx *q, const char *suffix, const double *v, double k, int64_t C, int rank)
{
    ir_type t = {.dtype = IR_F32, .rank = rank};
    for (int d = 0; d < rank; d++)
        t.dims[d] = ir_dim_const(1);
    t.dims[rank == 1 ? 0 : 1] = ir_dim_const(C);
    char buf[256];
    ir_value *c = ir_graph_add_const(q->c->g, ir_graph_fresh_name(q->c->g, q->base, suffix, buf, sizeof buf),
                                     &t, NULL, q->c->diag);
    if (!c)
        return NULL;
    for (int64_t i = 0; i < C; i++)
        ((float *)c->cval.data)[i] = (float)(v[i] * k);
    return c;
}

/* The epilogue after the integer contraction acc (i32): Cast to f32, the
 * scales, then the bias (a constant, or NULL); the last op is named as
 * the original result. */
static int epilogue(qctx *q, ir_value *acc, const act *a, const double *wscale, double k, int64_t C, int rank,
                    ir_value *bias)
{
    ir_node *n = (ir_node *)q->n;
    const char *yname = n->out[0]->name;
    ir_value *y = cast(q, acc, ONNX_FLOAT, "_acc_f32");
    ir_value *in[2];
    if (q->dynamic) {
        y = op2(q, IR_OP_MUL, y, channel_const(q, "_w_scale", wscale, k, C, rank), "_wscaled");
        in[0] = y;
        in[1] = a->scale;
    } else {
        in[0] = y;
        in[1] = channel_const(q, "_scale", wscale, k * a->static_scale, C, rank);
    }
    if (!in[0] || !in[1])
        return -1;
    y = op_node(q, IR_OP_MUL, 2, in, "_scaled", bias ? NULL : yname);
    if (y && bias) {
        in[0] = y;
        in[1] = bias;
        y = op_node(q, IR_OP_ADD, 2, in, "_bias", yname);
    }
    if (!y)
        return -1;
    y->type = n->out[0]->type;
    ir_replace_all_uses(q->c->g, n->out[0], y);
    ir_node_erase(n);
    q->c->changed = true;
    return 0;
}

static bool f32_const(const ir_value *v) { return v && v->kind == IR_VAL_CONST && v->type.dtype == IR_F32; }

struct cached {
    const ir_value *x;
    act a;
};

/* x quantized once however many contractions read it (the Q, K and V
 * projections of an attention layer). */
static int quantize_act(qctx *q, ir_value *x, act *a)
{
    for (int i = 0; i < q->ncache; i++)
        if (q->cache[i].x == x) {
            *a = q->cache[i].a;
            return 0;
        }
    if (q->ncache == q->capcache) {
        int cap = q->capcache ? 2 * q->capcache : 16;
        struct cached *nc = realloc(q->cache, sizeof *nc * (size_t)cap);
        if (!nc)
            return ir_errorf(q->c->diag, "out of memory");
        q->cache = nc;
        q->capcache = cap;
    }
    const char *base = q->base;
    q->base = x->name;
    int rc = q->dynamic ? quantize_dynamic(q, x, a) : quantize_static(q, x, a);
    q->base = base;
    if (rc == 0)
        q->cache[q->ncache++] = (struct cached){x, *a};
    return rc;
}

/* MatMul(x[..., K], W[K, N]) and Gemm(A[M, K], B, C) {transA = 0}. 1 when
 * rewritten, 0 when the node does not qualify, -1 on error. */
static int rewrite_matmul(qctx *q, ir_node *n)
{
    ir_graph *g = q->c->g;
    ir_value *x = n->in[0], *w = n->in[1], *bias = NULL;
    bool gemm = n->op == IR_OP_GEMM, tb = gemm && ir_attr_int(n, "transB", 0);
    double alpha = gemm ? ir_attr_float(n, "alpha", 1.0f) : 1.0;
    if (!f32_const(w) || w->cval.rank != 2 || x->type.dtype != IR_F32 || x->type.rank < 2 ||
        (gemm && ir_attr_int(n, "transA", 0)))
        return 0;
    int64_t N = w->cval.dims[tb ? 0 : 1];
    if (gemm && n->nin > 2 && n->in[2]) {
        ir_value *cv = n->in[2];
        double beta = ir_attr_float(n, "beta", 1.0f);
        if (!f32_const(cv) || cv->cval.rank > 2)
            return 0;
        if (beta == 1.0) {
            bias = cv;
        } else {
            char buf[256];
            bias = ir_graph_add_const(g, ir_graph_fresh_name(g, cv->name, "_beta", buf, sizeof buf), &cv->type, NULL,
                                      q->c->diag);
            if (!bias)
                return -1;
            for (int64_t i = 0; i < cv->cval.numel; i++)
                ((float *)bias->cval.data)[i] = (float)(beta * ((const float *)cv->cval.data)[i]);
        }
    }
    double *ws = calloc((size_t)N, sizeof *ws);
    if (!ws)
        return ir_errorf(q->c->diag, "out of memory");
    act a;
    ir_value *wq = quantize_weights(q, w, N, tb ? w->cval.dims[1] : 1, tb, ws);
    int rc = -1;
    if (wq && quantize_act(q, x, &a) == 0) {
        ir_value *in[3] = {a.xq, wq, a.zp};
        ir_value *acc = op_node(q, IR_OP_MATMUL_INTEGER, a.zp ? 3 : 2, in, "_i32", NULL);
        rc = acc ? epilogue(q, acc, &a, ws, alpha, N, 1, bias) : -1;
    }
    free(ws);
    return rc < 0 ? -1 : 1;
}

/* Conv(x, W[M, C/group, k...], b[M]) -> ConvInteger with the same
 * attributes; the scales and bias broadcast along dim 1. */
static int rewrite_conv(qctx *q, ir_node *n)
{
    ir_graph *g = q->c->g;
    ir_value *x = n->in[0], *w = n->in[1], *b = n->nin > 2 ? n->in[2] : NULL;
    if (!f32_const(w) || w->cval.rank < 3 || x->type.dtype != IR_F32 || x->type.rank != w->cval.rank ||
        (b && !f32_const(b)))
        return 0;
    int64_t M = w->cval.dims[0], inner = w->cval.numel / (M ? M : 1);
    int rank = n->out[0]->type.rank;
    if (rank != w->cval.rank || M <= 0)
        return 0;
    double *ws = calloc((size_t)M, sizeof *ws);
    if (!ws)
        return ir_errorf(q->c->diag, "out of memory");
    act a;
    ir_value *wq = quantize_weights(q, w, M, inner, false, ws), *bias = NULL;
    int rc = -1;
    if (wq && b) {
        double *bv = calloc((size_t)M, sizeof *bv);
        for (int64_t i = 0; bv && i < M; i++)
            bv[i] = ((const float *)b->cval.data)[i];
        bias = bv ? channel_const(q, "_bias_c", bv, 1.0, M, rank) : NULL;
        free(bv);
        if (!bias)
            wq = NULL;
    }
    if (wq && quantize_act(q, x, &a) == 0) {
        ir_value *in[3] = {a.xq, wq, a.zp};
        char buf[256];
        const char *name = ir_graph_fresh_name(g, n->out[0]->name, "_i32", buf, sizeof buf);
        ir_node *ci = ir_graph_add_node(g, IR_OP_CONV_INTEGER, name, a.zp ? 3 : 2, in, 1, &name, q->c->diag);
        bool ok = ci != NULL;
        for (int i = 0; ok && i < n->nattr; i++)
            ok = ir_node_add_attr(g, ci, &n->attrs[i]) == 0;
        if (ok && ir_infer_node(ci, q->c->diag) == 0)
            rc = epilogue(q, ci->out[0], &a, ws, 1.0, M, rank, bias);
    }
    free(ws);
    return rc < 0 ? -1 : 1;
}

/* Values a rewrite stopped reading, dropped at the end of the pass when
 * nothing reads them any more. */
typedef struct droplist {
    ir_value **v;
    int n, cap;
} droplist;

static int drop_later(pass_ctx *c, droplist *l, ir_value *v)
{
    if (!v || v->kind == IR_VAL_INPUT)
        return 0;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        ir_value **nv = realloc(l->v, sizeof *nv * (size_t)cap);
        if (!nv)
            return ir_errorf(c->diag, "out of memory");
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = v;
    return 0;
}

/* Erases the listed values nobody reads (no dce follows this pass in the
 * pipelines, and the .so must not carry both the fp32 and the int8
 * weights), then the producers of node results among them, whose inputs
 * may become unread in turn. */
static int drop_unread(pass_ctx *c, droplist *l)
{
    for (int i = 0; i < l->n; i++) {
        ir_value *v = l->v[i];
        if (v->dead || ir_value_count_uses(c->g, v))
            continue;
        if (v->kind == IR_VAL_CONST) {
            ir_value_erase(v);
        } else if (v->kind == IR_VAL_NODE && v->def && !v->def->dead && v->def->nout == 1) {
            ir_node *p = v->def;
            ir_node_erase(p);
            for (int k = 0; k < p->nin; k++)
                if (p->in[k] && drop_later(c, l, p->in[k]) < 0)
                    return -1;
        }
        c->changed = true;
    }
    return 0;
}

/* Weights computed from constants that fold left alone (a result over
 * its size limit, such as a large ConstantOfShape): n reads them as a
 * constant evaluated here instead (icc_precision_materialize), so the
 * rewrite can quantize them. */
static int materialize_weights(pass_ctx *c, ir_node *n, droplist *l)
{
    ir_value *w = n->in[1];
    if (!w || w->kind != IR_VAL_NODE || !ir_type_is_static(&w->type) || w->type.dtype != IR_F32)
        return 0;
    int budget = 8;
    bool err = false;
    ir_value *k = icc_precision_materialize(c, w, &budget, &err);
    if (!k)
        return err ? -1 : 0;
    n->in[1] = k;
    c->changed = true;
    return drop_later(c, l, w);
}

int precision_int8(pass_ctx *c, const icc_precision_opts *o)
{
    qctx q = {c, o, o->mode == ICC_PREC_INT8_DYNAMIC, o->calib && o->calib->symmetric, NULL, NULL, NULL, 0, 0};
    if (!q.dynamic && !o->calib)
        return ir_errorf(c->diag, "--precision=int8 needs activation ranges: give --calibrate=DIR (input sets "
                                  "DIR/0/NAME.npy, ...), or use --precision=int8-dynamic");
    ir_graph *g = c->g;
    droplist drop = {0};
    int count = g->nnodes, rc = 0;
    for (int k = 0; k < count && rc == 0; k++) {
        ir_node *n = g->nodes[k];
        if (n->dead || (n->op != IR_OP_MATMUL && n->op != IR_OP_GEMM && n->op != IR_OP_CONV))
            continue;
        if (q.dynamic && n->op == IR_OP_CONV)
            continue;
        if (icc_precision_keeps(o, g, n)) {
            pass_stat(c, "kept fp32", 1);
            continue;
        }
        q.n = n;
        q.base = n->out[0]->name;
        if ((rc = materialize_weights(c, n, &drop)) < 0)
            break;
        int r = n->op == IR_OP_CONV ? rewrite_conv(&q, n) : rewrite_matmul(&q, n);
        if (r < 0) {
            rc = -1;
            break;
        }
        for (int i = 1; r > 0 && i < n->nin && rc == 0; i++)
            rc = drop_later(c, &drop, n->in[i]);
        pass_stat(c, r ? "contractions quantized" : "not quantizable", 1);
    }
    if (rc == 0)
        rc = drop_unread(c, &drop);
    free(q.cache);
    free(drop.v);
    return rc < 0 ? -1 : pass_commit_rewrites(c);
}
