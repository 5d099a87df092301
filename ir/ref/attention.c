/* attention.c - shape function and reference kernel of Attention (ONNX
 * opset 23/24): softmax(scale * Q K^T [softcapped] + bias) V per head,
 * with grouped-query heads (query head h reads key/value head
 * h / (Hq / Hkv)), 4-D [B, H, S, D] or 3-D [B, S, H*D] operands, a bool
 * or additive mask broadcast to [B, Hq, Sq, T] whose last dim may be
 * shorter than T (the rest counts as masked out), is_causal (key j is
 * hidden from query i when j > i + past length), a key/value cache given
 * as past_key/past_value and returned concatenated as present_key/
 * present_value, nonpad_kv_seqlen (opset 24: keys at or past the count of
 * their batch item are hidden) and the optional scores output in its four
 * modes. The kernel computes in double through ir_tensor_getf, so one
 * path covers f16, bf16, f32 and f64; softmax_precision asks for at least
 * the input's precision, which double always gives.
 *
 * qk_matmul_output mode 0 is the scaled Q K^T before the softcap, as the
 * operator's text defines it (ONNX's Python reference returns the
 * softcapped scores there, which differs only when softcap is set).
 */
#include "ir/ref/ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Heads and head sizes of a node, as graph dims. */
typedef struct {
    bool three;                 /* 3-D operands */
    ir_dim b, hq, hkv, sq, skv, d, dv, past, total;
} att_dims;

static ir_dim dim_div(ir_dim a, int64_t h)
{
    return ir_dim_is_const(a) ? ir_dim_const(a.v / h) : ir_dim_unknown();
}

/* Error unless known dims a and b agree. */
static int same_dim(ir_shape_ctx *c, ir_dim a, ir_dim b, const char *what)
{
    if (ir_dim_is_const(a) && ir_dim_is_const(b) && a.v != b.v)
        return ir_node_errorf(c->diag, c->node, "%s: %lld against %lld", what, (long long)a.v,
                              (long long)b.v);
    return 0;
}

static const ir_type *opt_in(ir_shape_ctx *c, int i)
{
    return i < c->nin ? c->in[i] : NULL;
}

static int att_geometry(ir_shape_ctx *c, att_dims *g)
{
    const ir_type *q = c->in[0], *k = c->in[1], *v = c->in[2];
    const ir_node *n = c->node;
    memset(g, 0, sizeof *g);
    if (q->rank != k->rank || q->rank != v->rank || (q->rank != 3 && q->rank != 4))
        return ir_node_errorf(c->diag, n, "Q, K and V must all have rank 3 or all rank 4, got %d, %d and %d",
                              q->rank, k->rank, v->rank);
    for (int i = 1; i < 3; i++)
        if (c->in[i]->dtype != q->dtype)
            return ir_node_errorf(c->diag, n, "input %d has dtype %s but Q has %s", i,
                                  ir_dtype_name(c->in[i]->dtype), ir_dtype_name(q->dtype));
    int64_t qh = ir_attr_int(n, "q_num_heads", 0), kvh = ir_attr_int(n, "kv_num_heads", 0);
    g->three = q->rank == 3;
    g->b = q->dims[0];
    if (g->three) {
        if (qh <= 0 || kvh <= 0)
            return ir_node_errorf(c->diag, n, "3-D inputs need positive q_num_heads and kv_num_heads");
        const ir_dim *hid[3] = {&q->dims[2], &k->dims[2], &v->dims[2]};
        const int64_t heads[3] = {qh, kvh, kvh};
        for (int i = 0; i < 3; i++)
            if (ir_dim_is_const(*hid[i]) && hid[i]->v % heads[i])
                return ir_node_errorf(c->diag, n, "input %d's hidden size %lld is not a multiple of its %lld heads",
                                      i, (long long)hid[i]->v, (long long)heads[i]);
        g->hq = ir_dim_const(qh);
        g->hkv = ir_dim_const(kvh);
        g->sq = q->dims[1];
        g->skv = k->dims[1];
        g->d = dim_div(q->dims[2], qh);
        g->dv = dim_div(v->dims[2], kvh);
        if (same_dim(c, g->d, dim_div(k->dims[2], kvh), "Q and K head sizes differ") < 0 ||
            same_dim(c, g->skv, v->dims[1], "K and V sequence lengths differ") < 0)
            return -1;
    } else {
        g->hq = q->dims[1];
        g->hkv = k->dims[1];
        g->sq = q->dims[2];
        g->skv = k->dims[2];
        g->d = q->dims[3];
        g->dv = v->dims[3];
        if (same_dim(c, g->d, k->dims[3], "Q and K head sizes differ") < 0 ||
            same_dim(c, g->skv, v->dims[2], "K and V sequence lengths differ") < 0 ||
            same_dim(c, g->hkv, v->dims[1], "K and V head counts differ") < 0 ||
            (qh > 0 && same_dim(c, g->hq, ir_dim_const(qh), "q_num_heads disagrees with Q") < 0) ||
            (kvh > 0 && same_dim(c, g->hkv, ir_dim_const(kvh), "kv_num_heads disagrees with K") < 0))
            return -1;
    }
    if (same_dim(c, g->b, k->dims[0], "Q and K batch sizes differ") < 0 ||
        same_dim(c, g->b, v->dims[0], "Q and V batch sizes differ") < 0)
        return -1;
    if (ir_dim_is_const(g->hq) && ir_dim_is_const(g->hkv) &&
        (g->hkv.v <= 0 || g->hq.v % g->hkv.v))
        return ir_node_errorf(c->diag, n, "query heads (%lld) must be a multiple of key/value heads (%lld)",
                              (long long)g->hq.v, (long long)g->hkv.v);
    const ir_type *pk = opt_in(c, 4), *pv = opt_in(c, 5), *np = opt_in(c, 6);
    g->past = ir_dim_const(0);
    g->total = g->skv;
    if (!pk != !pv)
        return ir_node_errorf(c->diag, n, "past_key and past_value must be given together");
    if (pk && (pk->rank < 0 || pv->rank < 0)) {
        g->past = g->total = ir_dim_unknown();
    } else if (pk) {
        if (pk->rank != 4 || pv->rank != 4)
            return ir_node_errorf(c->diag, n, "past_key and past_value must have rank 4, got %d and %d",
                                  pk->rank, pv->rank);
        if (pk->dtype != q->dtype || pv->dtype != q->dtype)
            return ir_node_errorf(c->diag, n, "past_key and past_value must have Q's dtype %s",
                                  ir_dtype_name(q->dtype));
        if (same_dim(c, pk->dims[0], g->b, "past_key's batch differs") < 0 ||
            same_dim(c, pk->dims[1], g->hkv, "past_key's head count differs") < 0 ||
            same_dim(c, pk->dims[3], g->d, "past_key's head size differs") < 0 ||
            same_dim(c, pv->dims[0], g->b, "past_value's batch differs") < 0 ||
            same_dim(c, pv->dims[1], g->hkv, "past_value's head count differs") < 0 ||
            same_dim(c, pv->dims[2], pk->dims[2], "past_value's length differs from past_key's") < 0 ||
            same_dim(c, pv->dims[3], g->dv, "past_value's head size differs") < 0)
            return -1;
        g->past = pk->dims[2];
        g->total = ir_dim_is_const(g->past) && ir_dim_is_const(g->skv)
                       ? ir_dim_const(g->past.v + g->skv.v)
                       : ir_dim_unknown();
    }
    if (np && np->rank >= 0) {
        if (pk)
            return ir_node_errorf(c->diag, n, "nonpad_kv_seqlen cannot be used with past_key/past_value");
        if (np->dtype != IR_I64 || np->rank != 1)
            return ir_node_errorf(c->diag, n, "nonpad_kv_seqlen must be i64[batch]");
        if (same_dim(c, np->dims[0], g->b, "nonpad_kv_seqlen's length differs from the batch") < 0)
            return -1;
    }
    const ir_type *m = opt_in(c, 3);
    if (m && m->dtype != IR_BOOL && m->dtype != q->dtype)
        return ir_node_errorf(c->diag, n, "attn_mask must be bool or Q's dtype %s, got %s",
                              ir_dtype_name(q->dtype), ir_dtype_name(m->dtype));
    if (m && m->rank >= 0) {
        if (m->dtype != IR_BOOL && m->dtype != q->dtype)
            return ir_node_errorf(c->diag, n, "attn_mask must be bool or Q's dtype %s, got %s",
                                  ir_dtype_name(q->dtype), ir_dtype_name(m->dtype));
        if (m->rank < 1 || m->rank > 4)
            return ir_node_errorf(c->diag, n, "attn_mask must have rank 1 to 4, got %d", m->rank);
        ir_dim want[4] = {g->b, g->hq, g->sq, g->total};
        for (int i = 0; i < m->rank - 1; i++) {
            ir_dim md = m->dims[i], wd = want[4 - m->rank + i];
            if (ir_dim_is_const(md) && md.v != 1 && ir_dim_is_const(wd) && md.v != wd.v)
                return ir_node_errorf(c->diag, n, "attn_mask dim %d (%lld) does not broadcast to %lld", i,
                                      (long long)md.v, (long long)wd.v);
        }
        ir_dim ml = m->dims[m->rank - 1];
        if (ir_dim_is_const(ml) && ir_dim_is_const(g->total) && ml.v > g->total.v)
            return ir_node_errorf(c->diag, n, "attn_mask's last dim %lld exceeds the %lld keys",
                                  (long long)ml.v, (long long)g->total.v);
    }
    int64_t mode = ir_attr_int(n, "qk_matmul_output_mode", 0);
    if (mode < 0 || mode > 3)
        return ir_node_errorf(c->diag, n, "qk_matmul_output_mode must be 0 to 3, got %lld", (long long)mode);
    int64_t sp = ir_attr_int(n, "softmax_precision", 1);
    if (sp != 1 && sp != 10 && sp != 11 && sp != 16)
        return ir_node_errorf(c->diag, n, "softmax_precision %lld is not a float type", (long long)sp);
    return 0;
}

static void set4(ir_type *t, ir_dtype dt, ir_dim a, ir_dim b, ir_dim c, ir_dim d)
{
    ir_type_unknown(t, dt, 4);
    t->dims[0] = a;
    t->dims[1] = b;
    t->dims[2] = c;
    t->dims[3] = d;
}

int shape_attention(ir_shape_ctx *c)
{
    ir_dtype dt = c->in[0]->dtype;
    bool unknown = false;
    for (int i = 0; i < 3; i++)
        unknown |= c->in[i]->rank < 0;
    if (unknown) {
        for (int i = 0; i < c->nout; i++)
            ir_type_unknown(&c->out[i], dt, i ? 4 : IR_RANK_UNKNOWN);
        return 0;
    }
    att_dims g;
    if (att_geometry(c, &g) < 0)
        return -1;
    if (g.three) {
        ir_type_unknown(&c->out[0], dt, 3);
        c->out[0].dims[0] = g.b;
        c->out[0].dims[1] = g.sq;
        c->out[0].dims[2] = ir_dim_is_const(g.dv) ? ir_dim_const(g.dv.v * g.hq.v) : ir_dim_unknown();
    } else {
        set4(&c->out[0], dt, g.b, g.hq, g.sq, g.dv);
    }
    if (c->nout > 1)
        set4(&c->out[1], dt, g.b, g.hkv, g.total, g.d);
    if (c->nout > 2)
        set4(&c->out[2], dt, g.b, g.hkv, g.total, g.dv);
    if (c->nout > 3)
        set4(&c->out[3], dt, g.b, g.hq, g.sq, g.total);
    return 0;
}

/* ---- the kernel ---------------------------------------------------------- */

typedef struct {
    const ir_tensor *q, *k, *v, *mask, *pk, *pv, *np;
    bool three;
    int64_t b, hq, hkv, sq, skv, d, dv, past, total;
} att_run;

static int64_t q_at(const att_run *r, int64_t b, int64_t h, int64_t i, int64_t d)
{
    return r->three ? (b * r->sq + i) * r->hq * r->d + h * r->d + d : ((b * r->hq + h) * r->sq + i) * r->d + d;
}

/* Key (value when val) j of kv head h, d-th element: the past cache
 * first, then the new tokens. */
static double kv_get(const att_run *r, bool val, int64_t b, int64_t h, int64_t j, int64_t d)
{
    int64_t w = val ? r->dv : r->d;
    if (j < r->past)
        return ir_tensor_getf(val ? r->pv : r->pk, ((b * r->hkv + h) * r->past + j) * w + d);
    j -= r->past;
    int64_t o = r->three ? (b * r->skv + j) * r->hkv * w + h * w + d : ((b * r->hkv + h) * r->skv + j) * w + d;
    return ir_tensor_getf(val ? r->v : r->k, o);
}

int ref_attention(ir_ref_ctx *c)
{
    const ir_node *n = c->node;
    att_run r = {.q = c->in[0], .k = c->in[1], .v = c->in[2]};
    r.mask = c->nin > 3 ? c->in[3] : NULL;
    r.pk = c->nin > 4 ? c->in[4] : NULL;
    r.pv = c->nin > 5 ? c->in[5] : NULL;
    r.np = c->nin > 6 ? c->in[6] : NULL;
    r.three = r.q->rank == 3;
    ir_tensor *y = c->out[0];
    r.b = r.q->dims[0];
    if (r.three) {
        r.hq = ir_attr_int(n, "q_num_heads", 1);
        r.hkv = ir_attr_int(n, "kv_num_heads", 1);
        r.sq = r.q->dims[1];
        r.skv = r.k->dims[1];
        r.d = r.q->dims[2] / r.hq;
        r.dv = r.v->dims[2] / r.hkv;
    } else {
        r.hq = r.q->dims[1];
        r.hkv = r.k->dims[1];
        r.sq = r.q->dims[2];
        r.skv = r.k->dims[2];
        r.d = r.q->dims[3];
        r.dv = r.v->dims[3];
    }
    r.past = r.pk ? r.pk->dims[2] : 0;
    r.total = r.past + r.skv;
    double scale = ir_attr_float(n, "scale", (float)(1.0 / sqrt((double)(r.d ? r.d : 1))));
    double cap = ir_attr_float(n, "softcap", 0);
    bool causal = ir_attr_int(n, "is_causal", 0) != 0;
    int64_t mode = ir_attr_int(n, "qk_matmul_output_mode", 0);
    ir_tensor *qk = c->nout > 3 ? c->out[3] : NULL;
    /* present_key/present_value: the concatenated caches */
    for (int o = 1; o < 3 && o < c->nout; o++) {
        int64_t w = o == 1 ? r.d : r.dv, at = 0;
        for (int64_t b = 0; b < r.b; b++)
            for (int64_t h = 0; h < r.hkv; h++)
                for (int64_t j = 0; j < r.total; j++)
                    for (int64_t d = 0; d < w; d++)
                        ir_tensor_setf(c->out[o], at++, kv_get(&r, o == 2, b, h, j, d));
    }
    if (r.total == 0) {
        /* softmax over no keys: NaN, as 0/0 */
        for (int64_t i = 0; i < y->numel; i++)
            ir_tensor_setf(y, i, NAN);
        return 0;
    }
    double *s = malloc(sizeof(double) * (size_t)r.total);
    if (!s)
        return ir_node_errorf(c->diag, n, "out of memory");
    int64_t reps = r.hq / r.hkv, mlen = r.mask ? r.mask->dims[r.mask->rank - 1] : 0;
    for (int64_t b = 0; b < r.b; b++) {
        int64_t keys = r.np ? ir_tensor_geti(r.np, b) : r.total;
        for (int64_t h = 0; h < r.hq; h++)
            for (int64_t i = 0; i < r.sq; i++) {
                int64_t kh = h / reps;
                for (int64_t j = 0; j < r.total; j++) {
                    double acc = 0;
                    for (int64_t d = 0; d < r.d; d++)
                        acc += ir_tensor_getf(r.q, q_at(&r, b, h, i, d)) * kv_get(&r, false, b, kh, j, d);
                    double raw = acc * scale, v = raw;
                    if (cap > 0)
                        v = cap * tanh(v / cap);
                    double capped = v;
                    if (r.mask) {
                        if (j >= mlen) {
                            v = -INFINITY;
                        } else {
                            int64_t idx[4] = {b, h, i, j};
                            double m = ir_tensor_getf(r.mask, ir_bcast_offset(r.mask, idx, 4));
                            v = r.mask->dtype == IR_BOOL ? (m != 0 ? v : -INFINITY) : v + m;
                        }
                    }
                    if ((causal && j > i + r.past) || j >= keys)
                        v = -INFINITY;
                    s[j] = v;
                    if (qk && mode < 3)
                        ir_tensor_setf(qk, ((b * r.hq + h) * r.sq + i) * r.total + j,
                                       mode == 0 ? raw : mode == 1 ? capped : v);
                }
                double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < r.total; j++)
                    if (s[j] > mx || isnan(s[j]))
                        mx = s[j];
                for (int64_t j = 0; j < r.total; j++)
                    sum += (s[j] = exp(s[j] - mx));
                for (int64_t j = 0; j < r.total; j++) {
                    s[j] /= sum;
                    if (qk && mode == 3)
                        ir_tensor_setf(qk, ((b * r.hq + h) * r.sq + i) * r.total + j, s[j]);
                }
                for (int64_t e = 0; e < r.dv; e++) {
                    double acc = 0;
                    for (int64_t j = 0; j < r.total; j++)
                        acc += s[j] * kv_get(&r, true, b, kh, j, e);
                    int64_t o = r.three ? (b * r.sq + i) * r.hq * r.dv + h * r.dv + e
                                        : ((b * r.hq + h) * r.sq + i) * r.dv + e;
                    ir_tensor_setf(y, o, acc);
                }
            }
    }
    free(s);
    return 0;
}
