/* conv_blocked.c - the shape function and reference kernel of ConvNCHWc,
 * the layout pass's blocked 2-D convolution (an internal op: the ONNX
 * frontend refuses the name). X is [N, C/cb, H, W, cb] (channel c at
 * block c / cb, lane c % cb), W is [M/mb, C/cb, kh, kw, cb, mb] (weight
 * of output channel m and input channel c at [m / mb, c / cb, y, x,
 * c % cb, m % mb]), the optional bias B is [M/mb, mb], and the result is
 * [N, M/mb, OH, OW, mb]. Attributes: strides and dilations (2 values,
 * default 1) and explicit pads [top, left, bottom, right] (default 0);
 * group is always 1; packed_k (internal, the pack-b pass) reorders W's
 * taps (ref_conv_nchwc below). The integer form (the layout pass's
 * blocked ConvInteger) takes u8/i8 X and W and an i32 B, and gives i32
 * sums, zero padded (the pass pads with the zero point itself, before).
 * The kernel sums in double (exact for the integer form): on f32, per batch item
 * and output block one product of the im2col matrix [OH*OW, C/cb*kh*kw*cb]
 * (built once per batch item) with that block's weights, which are already
 * a row-major [C/cb*kh*kw*cb, mb] matrix (the shared f32 matrix core);
 * otherwise, or when the im2col matrix would be huge, a direct loop.
 */
#include "ir/ref/nn.h"

#include <stdlib.h>
#include <string.h>

typedef struct nchwc_attrs {
    int64_t s[2], d[2], p[4];
} nchwc_attrs;

static int read_attr(const ir_node *n, icc_diag *d, const char *name, int want, int64_t def, int64_t minv,
                     int64_t *out)
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

static int read_attrs(const ir_node *n, icc_diag *d, nchwc_attrs *a)
{
    if (read_attr(n, d, "strides", 2, 1, 1, a->s) < 0 || read_attr(n, d, "dilations", 2, 1, 1, a->d) < 0 ||
        read_attr(n, d, "pads", 4, 0, 0, a->p) < 0)
        return -1;
    return 0;
}

/* Output extent of a spatial dim of size in, kernel k; -1 when the
 * window does not fit (the operands are at most 2^31 so nothing wraps). */
static int64_t out_extent(const nchwc_attrs *a, int i, int64_t in, int64_t k)
{
    int64_t span = (k - 1) * a->d[i] + 1, padded = in + a->p[i] + a->p[2 + i];
    return padded < span ? -1 : (padded - span) / a->s[i] + 1;
}

int shape_conv_nchwc(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0], *w = c->in[1], *b = c->nin > 2 ? c->in[2] : NULL;
    nchwc_attrs a;
    if (read_attrs(c->node, c->diag, &a) < 0)
        return -1;
    ir_dtype dt = x->dtype;
    if (dt == IR_U8 || dt == IR_I8) {
        /* the integer form: i32 sums */
        if ((w->dtype != IR_U8 && w->dtype != IR_I8) || (b && b->dtype != IR_I32))
            return ir_node_errorf(c->diag, c->node, "a u8/i8 X needs a u8/i8 W and an i32 B");
        dt = IR_I32;
    } else if (!ir_dtype_is_float(dt) || w->dtype != dt || (b && b->dtype != dt)) {
        return ir_node_errorf(c->diag, c->node, "operands must share input 0's dtype (a float, or u8/i8 X and W)");
    }
    if ((x->rank >= 0 && x->rank != 5) || (w->rank >= 0 && w->rank != 6) || (b && b->rank >= 0 && b->rank != 2))
        return ir_node_errorf(c->diag, c->node, "needs X of rank 5, W of rank 6 and B of rank 2");
    ir_type *o = &c->out[0];
    ir_type_unknown(o, dt, 5);
    if (x->rank < 0 || w->rank < 0)
        return 0;
    for (int i = 0; i < 6; i++)
        if (ir_dim_is_const(w->dims[i]) && w->dims[i].v < 1)
            return ir_node_errorf(c->diag, c->node, "W's dim %d is empty", i);
    /* blocks and lanes of the input channels must agree where known */
    for (int i = 0; i < 2; i++) {
        ir_dim xd = x->dims[i ? 4 : 1], wd = w->dims[i ? 4 : 1];
        if (ir_dim_is_const(xd) && ir_dim_is_const(wd) && xd.v != wd.v)
            return ir_node_errorf(c->diag, c->node, "X's input channel %s (%lld) differ from W's (%lld)",
                                  i ? "lanes" : "blocks", (long long)xd.v, (long long)wd.v);
    }
    if (b && b->rank == 2)
        for (int i = 0; i < 2; i++) {
            ir_dim bd = b->dims[i], wd = w->dims[i ? 5 : 0];
            if (ir_dim_is_const(bd) && ir_dim_is_const(wd) && bd.v != wd.v)
                return ir_node_errorf(c->diag, c->node, "B's dim %d (%lld) differs from W's (%lld)", i,
                                      (long long)bd.v, (long long)wd.v);
        }
    o->dims[0] = x->dims[0];
    o->dims[1] = w->dims[0];
    o->dims[4] = w->dims[5];
    for (int i = 0; i < 2; i++) {
        ir_dim in = x->dims[2 + i], k = w->dims[2 + i];
        if (!ir_dim_is_const(k))
            continue;
        if ((ir_dim_is_const(in) && in.v > (INT64_C(1) << 31)) || k.v > (INT64_C(1) << 31))
            return ir_node_errorf(c->diag, c->node, "spatial dims too large");
        if (!ir_dim_is_const(in)) {
            /* a symbolic extent: the derived dim the replaced Conv had (a
             * negative value is the run's window check) */
            int64_t shift = a.p[i] + a.p[2 + i] - ((k.v - 1) * a.d[i] + 1);
            o->dims[2 + i] = nn_floor_extent(c->node->graph, in, shift, a.s[i]);
            continue;
        }
        int64_t e = out_extent(&a, i, in.v, k.v);
        if (e < 1)
            return ir_node_errorf(c->diag, c->node, "the %lld-wide kernel does not fit spatial dim %d (%lld, padded)",
                                  (long long)k.v, i, (long long)in.v);
        o->dims[2 + i] = ir_dim_const(e);
    }
    return 0;
}

/* The f32 form (see the file comment); 0 done, -1 error. */
static int gemm_path(ir_ref_ctx *c, const nchwc_attrs *a, int64_t K, int64_t P)
{
    const ir_tensor *x = c->in[0], *w = c->in[1], *b = c->nin > 2 ? c->in[2] : NULL;
    ir_tensor *y = c->out[0];
    const int64_t N = x->dims[0], CB = x->dims[1], H = x->dims[2], W = x->dims[3], CL = x->dims[4];
    const int64_t MB = w->dims[0], KH = w->dims[2], KW = w->dims[3], ML = w->dims[5];
    const int64_t OW = y->dims[3];
    float *col = malloc(sizeof *col * (size_t)(P * K + 1));
    if (!col)
        return ir_errorf(c->diag, "out of memory");
    const float *xf = x->data;
    for (int64_t n = 0; n < N; n++) {
        for (int64_t p = 0; p < P; p++) {
            int64_t oh = p / OW, ow = p % OW;
            float *row = col + p * K;
            for (int64_t cb = 0; cb < CB; cb++)
                for (int64_t ky = 0; ky < KH; ky++)
                    for (int64_t kx = 0; kx < KW; kx++) {
                        int64_t ih = oh * a->s[0] - a->p[0] + ky * a->d[0];
                        int64_t iw = ow * a->s[1] - a->p[1] + kx * a->d[1];
                        float *dst = row + ((cb * KH + ky) * KW + kx) * CL;
                        if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                            memset(dst, 0, sizeof *dst * (size_t)CL);
                        else
                            memcpy(dst, xf + (((n * CB + cb) * H + ih) * W + iw) * CL, sizeof *dst * (size_t)CL);
                    }
        }
        for (int64_t mb = 0; mb < MB; mb++) {
            nn_sgemm_args g = {
                .m = P, .n = ML, .k = K, .a = col, .a_rs = K, .a_cs = 1,
                .b = (const float *)w->data + mb * K * ML, .b_rs = ML, .b_cs = 1,
                .c = b ? (const float *)b->data + mb * ML : NULL, .c_rs = 0, .c_cs = 1,
                .alpha = 1, .beta = 1, .y = (float *)y->data + (n * MB + mb) * P * ML, .y_rs = ML,
            };
            if (nn_sgemm(&g) < 0) {
                free(col);
                return ir_errorf(c->diag, "out of memory");
            }
        }
    }
    free(col);
    return 0;
}

static int conv_nchwc_plain(ir_ref_ctx *c);

/* packed_k = p > 1 (the pack-b pass, for the bf16 pair kernel): each
 * tap's [cb, mb] matrix of W is stored [cb/p, mb, p], p input lanes side
 * by side per output lane; the reference runs on a plain copy. */
int ref_conv_nchwc(ir_ref_ctx *c)
{
    int64_t p = ir_attr_int(c->node, "packed_k", 1);
    if (p == 1)
        return conv_nchwc_plain(c);
    if (c->in[1]->rank != 6)
        return ir_node_errorf(c->diag, c->node, "packed_k needs W of rank 6");
    return nn_run_unpacked(c, c->in[1]->dims[5], p, 0, conv_nchwc_plain);
}

static int conv_nchwc_plain(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0], *w = c->in[1], *b = c->nin > 2 ? c->in[2] : NULL;
    ir_tensor *y = c->out[0];
    nchwc_attrs a;
    if (read_attrs(c->node, c->diag, &a) < 0)
        return -1;
    const int64_t N = x->dims[0], CB = x->dims[1], H = x->dims[2], W = x->dims[3], CL = x->dims[4];
    const int64_t MB = w->dims[0], KH = w->dims[2], KW = w->dims[3], ML = w->dims[5];
    const int64_t OH = y->dims[2], OW = y->dims[3];
    int64_t K = CB * KH * KW * CL, P = OH * OW, PK;
    if (x->dtype == IR_F32 && ir_mul_ok(P, K, &PK) && PK <= (INT64_C(1) << 26))
        return gemm_path(c, &a, K, P);
    double *acc = malloc(sizeof *acc * (size_t)ML);
    if (!acc)
        return ir_errorf(c->diag, "out of memory");
    bool f32 = x->dtype == IR_F32;
    const float *xf = x->data, *wf = w->data;
    for (int64_t n = 0; n < N; n++)
        for (int64_t mb = 0; mb < MB; mb++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    for (int64_t l = 0; l < ML; l++)
                        acc[l] = b ? ir_tensor_getf(b, mb * ML + l) : 0.0;
                    for (int64_t cb = 0; cb < CB; cb++)
                        for (int64_t ky = 0; ky < KH; ky++) {
                            int64_t ih = oh * a.s[0] - a.p[0] + ky * a.d[0];
                            if (ih < 0 || ih >= H)
                                continue;
                            for (int64_t kx = 0; kx < KW; kx++) {
                                int64_t iw = ow * a.s[1] - a.p[1] + kx * a.d[1];
                                if (iw < 0 || iw >= W)
                                    continue;
                                int64_t xo = (((n * CB + cb) * H + ih) * W + iw) * CL;
                                int64_t wo = (((mb * CB + cb) * KH + ky) * KW + kx) * CL * ML;
                                for (int64_t ci = 0; ci < CL; ci++) {
                                    if (f32) {
                                        double xv = xf[xo + ci];
                                        const float *wr = wf + wo + ci * ML;
                                        for (int64_t l = 0; l < ML; l++)
                                            acc[l] += xv * (double)wr[l];
                                    } else {
                                        double xv = ir_tensor_getf(x, xo + ci);
                                        for (int64_t l = 0; l < ML; l++)
                                            acc[l] += xv * ir_tensor_getf(w, wo + ci * ML + l);
                                    }
                                }
                            }
                        }
                    int64_t yo = (((n * MB + mb) * OH + oh) * OW + ow) * ML;
                    for (int64_t l = 0; l < ML; l++)
                        ir_tensor_setf(y, yo + l, acc[l]);
                }
    free(acc);
    return 0;
}
