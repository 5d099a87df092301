/* conv_dw_blocked.c - the shape function and reference kernel of
 * ConvDwNCHWc, the layout pass's blocked depthwise 2-D convolution (an
 * internal op: the ONNX frontend refuses the name). Channel c of X
 * [N, C/cb, H, W, cb] is at block c / cb, lane c % cb, and output channel
 * c reads only input channel c (a channel multiplier of 1), so W is
 * [C/cb, kh, kw, cb] (the weight of channel c at tap (y, x) is
 * W[c / cb, y, x, c % cb]), the optional bias B is [C/cb, cb] and the
 * result [N, C/cb, OH, OW, cb]. Attributes: strides and dilations (2
 * values, default 1) and explicit pads [top, left, bottom, right]
 * (default 0). The kernel sums in double, one output element at a time.
 *
 * ConvPwDwNCHWc (the pwdw pass) is a 1x1 ConvNCHWc, an activation and a
 * ConvDwNCHWc in one node: X [N, C/cb, H, W, cb], W1 [M/mb, C/cb, 1, 1,
 * cb, mb], W2 [M/mb, kh, kw, mb], then optional B1 and B2 [M/mb, mb], lo
 * and hi (scalars); the depthwise conv's attributes, and `activation`
 * between the two: clip (by lo and hi), silu or hardswish. Its reference
 * computes the 1x1 conv's result in double and its activation rounded
 * where the ops it replaces round (Sigmoid, then Mul), then the
 * depthwise conv over it exactly as ConvDwNCHWc's does.
 */
#include "ir/ref/nn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct dwb_attrs {
    int64_t s[2], d[2], p[4];
} dwb_attrs;

static int dwb_attr(const ir_node *n, icc_diag *d, const char *name, int want, int64_t def, int64_t minv, int64_t *out)
{
    const int64_t *v;
    int cnt = ir_attr_ints(n, name, &v);
    for (int i = 0; i < want; i++)
        out[i] = def;
    if (cnt < 0)
        return 0;
    if (cnt != want)
        return ir_node_errorf(d, n, "%s has %d values, expected %d", name, cnt, want);
    for (int i = 0; i < cnt; i++) {
        if (v[i] < minv || v[i] > (INT64_C(1) << 31))
            return ir_node_errorf(d, n, "%s[%d] is %lld, out of range", name, i, (long long)v[i]);
        out[i] = v[i];
    }
    return 0;
}

static int dwb_attrs_read(const ir_node *n, icc_diag *d, dwb_attrs *a)
{
    return dwb_attr(n, d, "strides", 2, 1, 1, a->s) < 0 || dwb_attr(n, d, "dilations", 2, 1, 1, a->d) < 0 ||
                   dwb_attr(n, d, "pads", 4, 0, 0, a->p) < 0
               ? -1
               : 0;
}

int shape_conv_dw_nchwc(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0], *w = c->in[1], *b = c->nin > 2 ? c->in[2] : NULL;
    dwb_attrs a;
    if (dwb_attrs_read(c->node, c->diag, &a) < 0)
        return -1;
    ir_dtype dt = x->dtype;
    if (w->dtype != dt || (b && b->dtype != dt))
        return ir_node_errorf(c->diag, c->node, "operands must share input 0's dtype");
    if ((x->rank >= 0 && x->rank != 5) || (w->rank >= 0 && w->rank != 4) || (b && b->rank >= 0 && b->rank != 2))
        return ir_node_errorf(c->diag, c->node, "needs X of rank 5, W of rank 4 and B of rank 2");
    ir_type *o = &c->out[0];
    ir_type_unknown(o, dt, 5);
    if (x->rank < 0 || w->rank < 0)
        return 0;
    for (int i = 0; i < 4; i++)
        if (ir_dim_is_const(w->dims[i]) && w->dims[i].v < 1)
            return ir_node_errorf(c->diag, c->node, "W's dim %d is empty", i);
    /* W's blocks and lanes are X's (and B's, when given) */
    static const int xi[2] = {1, 4}, wi[2] = {0, 3};
    for (int i = 0; i < 2; i++) {
        ir_dim xd = x->dims[xi[i]], wd = w->dims[wi[i]];
        if (ir_dim_is_const(xd) && ir_dim_is_const(wd) && xd.v != wd.v)
            return ir_node_errorf(c->diag, c->node, "X's channel %s (%lld) differ from W's (%lld)",
                                  i ? "lanes" : "blocks", (long long)xd.v, (long long)wd.v);
        ir_dim bd = b && b->rank == 2 ? b->dims[i] : ir_dim_const(0);
        if (b && b->rank == 2 && ir_dim_is_const(bd) && ir_dim_is_const(wd) && bd.v != wd.v)
            return ir_node_errorf(c->diag, c->node, "B's dim %d (%lld) differs from W's (%lld)", i, (long long)bd.v,
                                  (long long)wd.v);
    }
    o->dims[0] = x->dims[0];
    o->dims[1] = x->dims[1];
    o->dims[4] = x->dims[4];
    for (int i = 0; i < 2; i++) {
        ir_dim in = x->dims[2 + i], k = w->dims[1 + i];
        if (!ir_dim_is_const(k))
            continue;
        if ((ir_dim_is_const(in) && in.v > (INT64_C(1) << 31)) || k.v > (INT64_C(1) << 31))
            return ir_node_errorf(c->diag, c->node, "spatial dims too large");
        if (!ir_dim_is_const(in)) {   /* as ConvNCHWc's (conv_blocked.c) */
            int64_t shift = a.p[i] + a.p[2 + i] - ((k.v - 1) * a.d[i] + 1);
            o->dims[2 + i] = nn_floor_extent(c->node->graph, in, shift, a.s[i]);
            continue;
        }
        int64_t span = (k.v - 1) * a.d[i] + 1, padded = in.v + a.p[i] + a.p[2 + i];
        if (padded < span)
            return ir_node_errorf(c->diag, c->node, "the %lld-wide kernel does not fit spatial dim %d (%lld, padded)",
                                  (long long)k.v, i, (long long)in.v);
        o->dims[2 + i] = ir_dim_const((padded - span) / a.s[i] + 1);
    }
    return 0;
}

static int dw_run(ir_ref_ctx *c, const ir_tensor *x, const ir_tensor *w, const ir_tensor *b, ir_tensor *y);

int ref_conv_dw_nchwc(ir_ref_ctx *c)
{
    return dw_run(c, c->in[0], c->in[1], c->nin > 2 ? c->in[2] : NULL, c->out[0]);
}

/* The depthwise conv of x into y (the node's attributes). */
static int dw_run(ir_ref_ctx *c, const ir_tensor *x, const ir_tensor *w, const ir_tensor *b, ir_tensor *y)
{
    dwb_attrs a;
    if (dwb_attrs_read(c->node, c->diag, &a) < 0)
        return -1;
    const int64_t N = x->dims[0], CB = x->dims[1], H = x->dims[2], W = x->dims[3], CL = x->dims[4];
    const int64_t KH = w->dims[1], KW = w->dims[2], OH = y->dims[2], OW = y->dims[3];
    for (int64_t n = 0; n < N; n++)
        for (int64_t cb = 0; cb < CB; cb++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++)
                    for (int64_t l = 0; l < CL; l++) {
                        double acc = b ? ir_tensor_getf(b, cb * CL + l) : 0.0;
                        for (int64_t ky = 0; ky < KH; ky++) {
                            int64_t ih = oh * a.s[0] - a.p[0] + ky * a.d[0];
                            if (ih < 0 || ih >= H)
                                continue;
                            for (int64_t kx = 0; kx < KW; kx++) {
                                int64_t iw = ow * a.s[1] - a.p[1] + kx * a.d[1];
                                if (iw < 0 || iw >= W)
                                    continue;
                                acc += ir_tensor_getf(x, (((n * CB + cb) * H + ih) * W + iw) * CL + l) *
                                       ir_tensor_getf(w, ((cb * KH + ky) * KW + kx) * CL + l);
                            }
                        }
                        ir_tensor_setf(y, (((n * CB + cb) * OH + oh) * OW + ow) * CL + l, acc);
                    }
    return 0;
}

/* ---- ConvPwDwNCHWc ---------------------------------------------------------- */

int shape_conv_pwdw_nchwc(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0], *w1 = c->in[1], *w2 = c->in[2];
    const ir_type *b1 = c->nin > 3 ? c->in[3] : NULL, *b2 = c->nin > 4 ? c->in[4] : NULL;
    ir_dtype dt = x->dtype;
    if ((x->rank >= 0 && x->rank != 5) || (w1->rank >= 0 && w1->rank != 6) || (b1 && b1->rank >= 0 && b1->rank != 2))
        return ir_node_errorf(c->diag, c->node, "needs X of rank 5, W1 of rank 6 and B1 of rank 2");
    if (w1->dtype != dt || (b1 && b1->dtype != dt))
        return ir_node_errorf(c->diag, c->node, "operands must share input 0's dtype");
    for (int i = 5; i < c->nin && i < 7; i++) {
        const ir_type *t = c->in[i];
        int64_t ne;
        if (t && (t->dtype != dt || (ir_type_numel(t, &ne) && ne != 1)))
            return ir_node_errorf(c->diag, c->node, "lo and hi must be scalars of input 0's dtype");
    }
    const char *act = ir_attr_string(c->node, "activation", "clip");
    if (strcmp(act, "clip") && strcmp(act, "silu") && strcmp(act, "hardswish"))
        return ir_node_errorf(c->diag, c->node, "activation '%.40s' is not clip, silu or hardswish", act);
    if (strcmp(act, "clip") && ((c->nin > 5 && c->in[5]) || (c->nin > 6 && c->in[6])))
        return ir_node_errorf(c->diag, c->node, "lo and hi go with activation clip only");
    ir_type_unknown(&c->out[0], dt, 5);
    if (x->rank < 0 || w1->rank < 0)
        return 0;
    /* W1 [MB, CB, 1, 1, cb, mb]: X's blocks and lanes, a 1x1 kernel */
    static const int xi[2] = {1, 4}, wi[2] = {1, 4};
    for (int i = 0; i < 2; i++)
        if (ir_dim_is_const(x->dims[xi[i]]) && ir_dim_is_const(w1->dims[wi[i]]) &&
            x->dims[xi[i]].v != w1->dims[wi[i]].v)
            return ir_node_errorf(c->diag, c->node, "X's channel %s (%lld) differ from W1's (%lld)",
                                  i ? "lanes" : "blocks", (long long)x->dims[xi[i]].v, (long long)w1->dims[wi[i]].v);
    for (int i = 0; i < 6; i++)
        if (ir_dim_is_const(w1->dims[i]) && (w1->dims[i].v < 1 || ((i == 2 || i == 3) && w1->dims[i].v != 1)))
            return ir_node_errorf(c->diag, c->node, "W1's dim %d is %lld: needs [M/mb, C/cb, 1, 1, cb, mb]", i,
                                  (long long)w1->dims[i].v);
    if (b1 && b1->rank == 2)
        for (int i = 0; i < 2; i++)
            if (ir_dim_is_const(b1->dims[i]) && ir_dim_is_const(w1->dims[i ? 5 : 0]) &&
                b1->dims[i].v != w1->dims[i ? 5 : 0].v)
                return ir_node_errorf(c->diag, c->node, "B1's dim %d (%lld) differs from W1's", i,
                                      (long long)b1->dims[i].v);
    /* the depthwise conv's shape over mid [N, MB, H, W, mb] */
    ir_type mid = *x;
    mid.dims[1] = w1->dims[0], mid.dims[4] = w1->dims[5];
    const ir_type *in[3] = {&mid, w2, b2};
    ir_shape_ctx dc = *c;
    dc.nin = b2 ? 3 : 2, dc.in = in, dc.val = NULL, dc.sval = NULL;
    return shape_conv_dw_nchwc(&dc);
}

int ref_conv_pwdw_nchwc(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0], *w1 = c->in[1], *b1 = c->nin > 3 ? c->in[3] : NULL;
    const ir_tensor *lo = c->nin > 5 ? c->in[5] : NULL, *hi = c->nin > 6 ? c->in[6] : NULL;
    const int64_t N = x->dims[0], CB = x->dims[1], P = x->dims[2] * x->dims[3], CL = x->dims[4];
    const int64_t MB = w1->dims[0], ML = w1->dims[5];
    ir_tensor mid;
    int64_t md[5] = {N, MB, x->dims[2], x->dims[3], ML};
    if (ir_tensor_init(&mid, x->dtype, 5, md, c->diag) < 0)
        return -1;
    if (!(mid.data = malloc(mid.nbytes ? mid.nbytes : 1)))
        return ir_errorf(c->diag, "out of memory");
    char act = ir_attr_string(c->node, "activation", "clip")[0];
    double vlo = lo ? ir_tensor_getf(lo, 0) : 0, vhi = hi ? ir_tensor_getf(hi, 0) : 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t mb = 0; mb < MB; mb++)
            for (int64_t p = 0; p < P; p++)
                for (int64_t l = 0; l < ML; l++) {
                    double acc = b1 ? ir_tensor_getf(b1, mb * ML + l) : 0.0;
                    for (int64_t cb = 0; cb < CB; cb++)
                        for (int64_t ci = 0; ci < CL; ci++)
                            acc += ir_tensor_getf(x, ((n * CB + cb) * P + p) * CL + ci) *
                                   ir_tensor_getf(w1, ((mb * CB + cb) * CL + ci) * ML + l);
                    if (act == 's') {
                        /* Sigmoid, then Mul, each rounded to f32 */
                        acc = (float)acc;
                        acc = (float)(acc * (float)(1.0 / (1.0 + exp(-acc))));
                    } else if (act == 'h') {
                        double v = (float)acc * (1.0 / 6) + 0.5;
                        acc = (float)acc * (v < 0 ? 0 : v > 1 ? 1 : v);
                    } else {
                        /* Clip's order: the lower bound, then the upper one */
                        if (lo && acc < vlo)
                            acc = vlo;
                        if (hi && acc > vhi)
                            acc = vhi;
                    }
                    /* the intermediate has the node's dtype */
                    ir_tensor_setf(&mid, ((n * MB + mb) * P + p) * ML + l, acc);
                }
    int rc = dw_run(c, &mid, c->in[2], c->nin > 4 ? c->in[4] : NULL, c->out[0]);
    free(mid.data);
    return rc;
}
