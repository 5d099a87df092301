/* nn_conv.c - sliding-window geometry (shared with the pools) and the
 * shape functions and reference kernels of Conv, ConvTranspose and
 * ConvInteger, for any number of spatial dims.
 *
 * Layouts follow ONNX: X is [N, C, D1..Dn]; Conv weights are
 * [M, C/group, k1..kn], ConvTranspose weights [C, M/group, k1..kn]. The
 * obviously right kernels visit every (output, input channel, kernel
 * position) through ir_tensor_getf. On f32, Conv and ConvTranspose
 * lower to the shared f32 matrix core (double accumulation): Conv over a
 * column matrix built for a band of output rows at a time (im2col),
 * ConvTranspose by scattering the product's columns (col2im). */
#include "ir/ref/nn.h"

#include <stdlib.h>
#include <string.h>

/* ---- window attributes ------------------------------------------------ */

static int read_list(const ir_node *node, icc_diag *d, const char *name, int want, int64_t def,
                     int64_t minv, int64_t *out)
{
    const int64_t *v;
    int cnt = ir_attr_ints(node, name, &v);
    if (cnt < 0) {
        for (int i = 0; i < want; i++)
            out[i] = def;
        return 0;
    }
    if (cnt != want)
        return ir_node_errorf(d, node, "%s has %d values, expected %d", name, cnt, want);
    for (int i = 0; i < cnt; i++) {
        if (v[i] < minv)
            return ir_node_errorf(d, node, "%s[%d] is %lld; it must be >= %lld", name, i,
                                  (long long)v[i], (long long)minv);
        out[i] = v[i];
    }
    return 0;
}

int nn_window_parse(const ir_node *node, icc_diag *d, int n, const ir_dim *wk, nn_window *w)
{
    memset(w, 0, sizeof *w);
    if (n < 1 || n > IR_MAX_RANK - 2)
        return ir_node_errorf(d, node, "needs 1 to %d spatial dims, got %d", IR_MAX_RANK - 2, n);
    w->n = n;
    const char *ap = ir_attr_string(node, "auto_pad", "NOTSET");
    if (!strcmp(ap, "NOTSET"))
        w->auto_pad = NN_PAD_NOTSET;
    else if (!strcmp(ap, "SAME_UPPER"))
        w->auto_pad = NN_PAD_SAME_UPPER;
    else if (!strcmp(ap, "SAME_LOWER"))
        w->auto_pad = NN_PAD_SAME_LOWER;
    else if (!strcmp(ap, "VALID"))
        w->auto_pad = NN_PAD_VALID;
    else
        return ir_node_errorf(d, node, "unknown auto_pad '%.60s'", ap);
    const int64_t *ks;
    int nk = ir_attr_ints(node, "kernel_shape", &ks);
    if (nk >= 0) {
        if (nk != n)
            return ir_node_errorf(d, node, "kernel_shape has %d dims, input has rank %d", nk, n + 2);
        for (int i = 0; i < n; i++) {
            if (ks[i] < 1)
                return ir_node_errorf(d, node, "kernel_shape[%d] is %lld; it must be >= 1", i,
                                      (long long)ks[i]);
            if (wk && ir_dim_is_const(wk[i]) && wk[i].v != ks[i])
                return ir_node_errorf(d, node, "kernel_shape[%d] is %lld but the weights have %lld",
                                      i, (long long)ks[i], (long long)wk[i].v);
            w->kernel[i] = ks[i];
        }
    } else if (wk) {
        for (int i = 0; i < n; i++) {
            if (ir_dim_is_const(wk[i]) && wk[i].v < 1)
                return ir_node_errorf(d, node, "the weights' spatial dim %d is empty", i);
            w->kernel[i] = ir_dim_is_const(wk[i]) ? wk[i].v : 0;
        }
    } else {
        return ir_node_errorf(d, node, "kernel_shape is required");
    }
    int64_t kn;
    if (!ir_numel_ok(w->kernel, n, &kn) || kn > IR_MAX_TENSOR_BYTES)
        return ir_node_errorf(d, node, "kernel_shape has too many elements");
    if (read_list(node, d, "strides", n, 1, 1, w->stride) < 0 ||
        read_list(node, d, "dilations", n, 1, 1, w->dilation) < 0 ||
        read_list(node, d, "pads", 2 * n, 0, 0, w->pads) < 0)
        return -1;
    w->ceil_mode = ir_attr_int(node, "ceil_mode", 0) != 0;
    return 0;
}

/* The dilated kernel extent (k-1)*d+1, checked. */
static int dilated(const ir_node *node, icc_diag *d, const nn_window *w, int i, int64_t *dk)
{
    if (!ir_mul_ok(w->kernel[i] - 1, w->dilation[i], dk) || !ir_add_ok(*dk, 1, dk))
        return ir_node_errorf(d, node, "kernel_shape and dilations of spatial dim %d overflow", i);
    return 0;
}

int nn_window_dim(const ir_node *node, icc_diag *d, const nn_window *w, int i, int64_t in,
                  int64_t *out, int64_t *pb, int64_t *pe)
{
    int64_t dk, s = w->stride[i], padded, t;
    if (dilated(node, d, w, i, &dk) < 0)
        return -1;
    *pb = *pe = 0;
    switch (w->auto_pad) {
    case NN_PAD_SAME_UPPER:
    case NN_PAD_SAME_LOWER:
        /* out = ceil(in / s); the padding that makes it so is split
         * with the odd one at the end (UPPER) or the start (LOWER). */
        if (!ir_add_ok(in, s - 1, &t))
            return ir_node_errorf(d, node, "spatial dim %d overflows", i);
        *out = t / s;
        if (*out > 0) {
            int64_t total;
            if (!ir_mul_ok(*out - 1, s, &total) || !ir_add_ok(total, dk, &total))
                return ir_node_errorf(d, node, "spatial dim %d overflows", i);
            total = total > in ? total - in : 0;
            *pb = w->auto_pad == NN_PAD_SAME_UPPER ? total / 2 : total - total / 2;
            *pe = total - *pb;
        }
        return 0;
    case NN_PAD_VALID:
        padded = in;
        break;
    default:
        *pb = w->pads[i];
        *pe = w->pads[w->n + i];
        if (!ir_add_ok(in, *pb, &padded) || !ir_add_ok(padded, *pe, &padded))
            return ir_node_errorf(d, node, "pads of spatial dim %d overflow", i);
        break;
    }
    if (padded < dk)
        return ir_node_errorf(d, node,
                              "spatial dim %d: the window (%lld wide with dilation) is larger "
                              "than the padded input (%lld)",
                              i, (long long)dk, (long long)padded);
    int64_t num = padded - dk;
    if (w->ceil_mode && w->auto_pad == NN_PAD_NOTSET) {
        *out = num / s + (num % s != 0) + 1;
        /* The last window must start inside the input or its begin pad. */
        if (!ir_mul_ok(*out - 1, s, &t) || t >= in + *pb)
            (*out)--;
    } else {
        *out = num / s + 1;
    }
    return 0;
}

int nn_window_out_dim(const ir_node *node, icc_diag *d, const nn_window *w, int i, ir_dim in,
                      ir_dim *out)
{
    *out = ir_dim_unknown();
    if (w->kernel[i] == 0)
        return 0;
    if (ir_dim_is_const(in)) {
        int64_t o, pb, pe;
        if (nn_window_dim(node, d, w, i, in.v, &o, &pb, &pe) < 0)
            return -1;
        *out = ir_dim_const(o);
        return 0;
    }
    int64_t dk, s = w->stride[i], pb = 0, pe = 0;
    if (dilated(node, d, w, i, &dk) < 0)
        return -1;
    if (in.sym <= 0)
        return 0;
    /* the same formulas as nn_window_dim, as derived symbols of in */
    ir_graph *g = node->graph;
    if (!g)
        return 0;
    if (w->auto_pad == NN_PAD_SAME_UPPER || w->auto_pad == NN_PAD_SAME_LOWER) {
        *out = ir_dim_div_const(g, in, s, true);
        return 0;
    }
    if (w->auto_pad == NN_PAD_NOTSET) {
        pb = w->pads[i];
        pe = w->pads[w->n + i];
    }
    int64_t shift;
    if (__builtin_add_overflow(pb, pe, &shift) || __builtin_sub_overflow(shift, dk, &shift))
        return 0;
    /* num = in + pads - dk must be >= 0 at run time: the derived symbol's
     * value check (a negative value is an error) is the window check */
    if (w->ceil_mode && w->auto_pad == NN_PAD_NOTSET && s > 1) {
        /* ceil(num/s)+1 windows, less one when the last would start past
         * the input and its begin pad: ceil(num/s)*s <= in+pb+pe-dk+s-1,
         * so that never happens when pe + s <= dk */
        if (pe + s > dk)
            return 0;
        *out = ir_dim_add_const(g, ir_dim_div_const(g, ir_dim_add_const(g, in, shift), s, true), 1);
    } else {
        *out = nn_floor_extent(g, in, shift, s);
    }
    return 0;
}

ir_dim nn_floor_extent(ir_graph *g, ir_dim in, int64_t shift, int64_t s)
{
    if (!g || in.sym == IR_DIM_UNKNOWN || s < 1)
        return ir_dim_unknown();
    if (s == 1)   /* num/1 + 1: no intermediate symbol */
        return shift + 1 == 0 ? in : ir_dim_add_const(g, ir_dim_add_const(g, in, shift), 1);
    return ir_dim_add_const(g, ir_dim_div_const(g, ir_dim_add_const(g, in, shift), s, false), 1);
}

/* ---- Conv / ConvInteger typing ------------------------------------------ */

/* The rank shared by a convolution's input x and weights w, in *r.
 * Returns 1 when known and valid; 0 when unknown (out[0] is then set to
 * an unknown-rank type of dtype dt, and *r to 0); -1 on error (*r = -1). */
static int conv_rank(ir_shape_ctx *c, const ir_type *x, const ir_type *w, ir_dtype dt, int *r)
{
    *r = x->rank >= 0 ? x->rank : w->rank;
    if (*r < 0) {
        ir_type_unknown(&c->out[0], dt, IR_RANK_UNKNOWN);
        *r = 0;
        return 0;
    }
    if (*r < 3) {
        *r = -1;
        return ir_node_errorf(c->diag, c->node,
                              "input must have rank >= 3 (N, C, spatial dims), got rank %d",
                              x->rank >= 0 ? x->rank : w->rank);
    }
    if (x->rank >= 0 && w->rank >= 0 && x->rank != w->rank) {
        *r = -1;
        return ir_node_errorf(c->diag, c->node, "weights have rank %d, input has rank %d", w->rank,
                              x->rank);
    }
    return 1;
}

/* The common typing of Conv and ConvInteger: output [N, M, spatial...]
 * of dtype dt; bias is the index of the bias input or -1. */
static int conv_type(ir_shape_ctx *c, int bias, ir_dtype dt)
{
    const ir_type *x = c->in[0], *w = c->in[1];
    const ir_type *b = bias >= 0 && bias < c->nin ? c->in[bias] : NULL;
    int r;
    if (conv_rank(c, x, w, dt, &r) <= 0)
        return r < 0 ? -1 : 0;
    int64_t group = ir_attr_int(c->node, "group", 1);
    if (group < 1)
        return ir_node_errorf(c->diag, c->node, "group is %lld; it must be >= 1", (long long)group);
    ir_dim wk[IR_MAX_RANK];
    for (int i = 0; i < r - 2; i++)
        wk[i] = w->rank >= 0 ? w->dims[2 + i] : ir_dim_unknown();
    nn_window win;
    if (nn_window_parse(c->node, c->diag, r - 2, wk, &win) < 0)
        return -1;
    ir_dim m = w->rank >= 0 ? w->dims[0] : ir_dim_unknown();
    ir_dim cw = w->rank >= 0 ? w->dims[1] : ir_dim_unknown();
    ir_dim cx = x->rank >= 0 ? x->dims[1] : ir_dim_unknown();
    if (ir_dim_is_const(cx) && cx.v % group)
        return ir_node_errorf(c->diag, c->node, "group %lld does not divide the %lld input channels",
                              (long long)group, (long long)cx.v);
    int64_t need;
    if (ir_dim_is_const(cx) && ir_dim_is_const(cw) &&
        (!ir_mul_ok(cw.v, group, &need) || cx.v != need))
        return ir_node_errorf(c->diag, c->node,
                              "channel mismatch: input has %lld channels, weights expect %lld "
                              "per group x group %lld",
                              (long long)cx.v, (long long)cw.v, (long long)group);
    if (ir_dim_is_const(m) && m.v % group)
        return ir_node_errorf(c->diag, c->node, "group %lld does not divide the %lld output channels",
                              (long long)group, (long long)m.v);
    if (b && b->rank >= 0) {
        if (b->rank != 1)
            return ir_node_errorf(c->diag, c->node, "bias must have rank 1, got rank %d", b->rank);
        if (ir_dim_is_const(b->dims[0]) && ir_dim_is_const(m) && b->dims[0].v != m.v)
            return ir_node_errorf(c->diag, c->node, "bias has %lld values for %lld output channels",
                                  (long long)b->dims[0].v, (long long)m.v);
    }
    ir_type *o = &c->out[0];
    ir_type_unknown(o, dt, r);
    o->dims[0] = x->rank >= 0 ? x->dims[0] : ir_dim_unknown();
    o->dims[1] = m;
    for (int i = 0; x->rank >= 0 && i < r - 2; i++)
        if (nn_window_out_dim(c->node, c->diag, &win, i, x->dims[2 + i], &o->dims[2 + i]) < 0)
            return -1;
    return 0;
}

int shape_conv(ir_shape_ctx *c)
{
    if (nn_same_dtype(c, 1) < 0 || nn_same_dtype(c, 2) < 0)
        return -1;
    return conv_type(c, 2, c->in[0]->dtype);
}

int shape_conv_integer(ir_shape_ctx *c)
{
    for (int i = 0; i < c->nin && i < 4; i++) {
        const ir_type *t = c->in[i];
        if (t && t->dtype != IR_U8 && t->dtype != IR_I8)
            return ir_node_errorf(c->diag, c->node, "input %d must be u8 or i8, got %s", i,
                                  ir_dtype_name(t->dtype));
    }
    if (c->nin > 2 && c->in[2] && c->in[2]->rank > 0) {
        int64_t n;
        if (ir_type_is_static(c->in[2]) && ir_type_numel(c->in[2], &n) && n != 1)
            return ir_node_errorf(c->diag, c->node, "x_zero_point must be a scalar");
    }
    return conv_type(c, -1, IR_I32);
}

/* ---- geometry on concrete tensors ------------------------------------- */

typedef struct conv_geom {
    int n;                                  /* spatial rank */
    int64_t batch, cin, cout, group;
    int64_t in[IR_MAX_RANK], out[IR_MAX_RANK], k[IR_MAX_RANK];
    int64_t s[IR_MAX_RANK], d[IR_MAX_RANK], pb[IR_MAX_RANK];
    int64_t pin, pout, pk;                  /* products of in, out, k */
} conv_geom;

static void geom_finish(conv_geom *g)
{
    g->pin = nn_prod(g->in, g->n);
    g->pout = nn_prod(g->out, g->n);
    g->pk = nn_prod(g->k, g->n);
}

/* Conv geometry from the tensors; the output shape was already computed
 * by the shape function, the pads are recomputed here. */
static int conv_geom_init(ir_ref_ctx *c, conv_geom *g)
{
    const ir_tensor *x = c->in[0], *w = c->in[1], *y = c->out[0];
    memset(g, 0, sizeof *g);
    g->n = x->rank - 2;
    ir_dim wk[IR_MAX_RANK];
    for (int i = 0; i < g->n; i++)
        wk[i] = ir_dim_const(w->dims[2 + i]);
    nn_window win;
    if (nn_window_parse(c->node, c->diag, g->n, wk, &win) < 0)
        return -1;
    g->batch = x->dims[0];
    g->cin = x->dims[1];
    g->cout = w->dims[0];
    g->group = ir_attr_int(c->node, "group", 1);
    for (int i = 0; i < g->n; i++) {
        int64_t o, pe;
        if (nn_window_dim(c->node, c->diag, &win, i, x->dims[2 + i], &o, &g->pb[i], &pe) < 0)
            return -1;
        g->in[i] = x->dims[2 + i];
        g->out[i] = y->dims[2 + i];
        g->k[i] = w->dims[2 + i];
        g->s[i] = win.stride[i];
        g->d[i] = win.dilation[i];
    }
    geom_finish(g);
    return 0;
}

/* The input offset within one channel plane of output position o and
 * kernel position kk, or -1 when it falls in the padding. */
static int64_t conv_in_offset(const conv_geom *g, const int64_t *o, const int64_t *kk)
{
    int64_t off = 0;
    for (int j = 0; j < g->n; j++) {
        int64_t ip = o[j] * g->s[j] - g->pb[j] + kk[j] * g->d[j];
        if (ip < 0 || ip >= g->in[j])
            return -1;
        off = off * g->in[j] + ip;
    }
    return off;
}

/* y[n,m,o] = b[m] + sum over c in m's group and kernel positions kk of
 * (x[n,c,o*s-pb+kk*d] - xz) * (w[m,c,kk] - wz[m]). Integer mode (for
 * ConvInteger) accumulates exactly in int64. */
static void conv_naive(const conv_geom *g, const ir_tensor *x, const ir_tensor *w,
                       const ir_tensor *b, const ir_tensor *xz, const ir_tensor *wz, ir_tensor *y,
                       bool isint)
{
    int64_t cg = g->cin / g->group, mg = g->cout / g->group;
    for (int64_t nb = 0; nb < g->batch; nb++)
        for (int64_t m = 0; m < g->cout; m++) {
            int64_t grp = m / mg, yo = (nb * g->cout + m) * g->pout;
            int64_t xzv = xz ? ir_tensor_geti(xz, 0) : 0;
            int64_t wzv = wz ? ir_tensor_geti(wz, wz->numel == 1 ? 0 : m) : 0;
            int64_t o[IR_MAX_RANK] = {0};
            for (int64_t oi = 0; oi < g->pout; oi++, ir_index_next(o, g->out, g->n)) {
                double acc = b ? ir_tensor_getf(b, m) : 0;
                int64_t iacc = 0;
                for (int64_t ci = 0; ci < cg; ci++) {
                    int64_t xc = (nb * g->cin + grp * cg + ci) * g->pin;
                    int64_t wc = (m * cg + ci) * g->pk;
                    int64_t kk[IR_MAX_RANK] = {0};
                    for (int64_t ki = 0; ki < g->pk; ki++, ir_index_next(kk, g->k, g->n)) {
                        int64_t off = conv_in_offset(g, o, kk);
                        if (off < 0)
                            continue;
                        if (isint)
                            iacc += (ir_tensor_geti(x, xc + off) - xzv) *
                                    (ir_tensor_geti(w, wc + ki) - wzv);
                        else
                            acc += ir_tensor_getf(x, xc + off) * ir_tensor_getf(w, wc + ki);
                    }
                }
                if (isint)
                    ir_tensor_seti(y, yo + oi, iacc);
                else
                    ir_tensor_setf(y, yo + oi, acc);
            }
        }
}

/* The column matrix is built for a band of output rows at a time, so it
 * stays near 8 MB (in floats) whatever the image size. */
enum { COL_BUDGET = 1 << 21 };

/* Fills col (rows (ci, kk), columns the output positions of output rows
 * [r0, r0 + nr)) with x[ci, o*s - pb + kk*d], or 0 in the padding. Rows
 * span the last spatial dim, whose valid range is computed once per
 * kernel position so the copy loop has no bounds checks. */
static void im2col_f32(const conv_geom *g, const float *xg, int64_t cg, int64_t r0, int64_t nr,
                       float *col)
{
    int l = g->n - 1;
    int64_t wout = g->out[l], win = g->in[l], s = g->s[l], np = nr * wout;
    for (int64_t ci = 0; ci < cg; ci++) {
        const float *xp = xg + ci * g->pin;
        int64_t kk[IR_MAX_RANK] = {0};
        for (int64_t ki = 0; ki < g->pk; ki++, ir_index_next(kk, g->k, g->n)) {
            float *crow = col + (ci * g->pk + ki) * np;
            int64_t off = kk[l] * g->d[l] - g->pb[l];
            /* ow is valid when 0 <= ow*s + off < win. */
            int64_t lo = off >= 0 ? 0 : -off / s + (-off % s != 0);
            int64_t hi = win - off <= 0 ? 0 : (win - off - 1) / s + 1;
            if (hi > wout)
                hi = wout;
            if (lo > hi)
                lo = hi;
            int64_t o[IR_MAX_RANK] = {0};
            for (int64_t t = r0, j = l - 1; j >= 0; j--) {
                o[j] = t % g->out[j];
                t /= g->out[j];
            }
            for (int64_t r = 0; r < nr; r++, ir_index_next(o, g->out, l)) {
                float *dst = crow + r * wout;
                int64_t roff = 0;
                bool ok = true;
                for (int j = 0; j < l && ok; j++) {
                    int64_t ip = o[j] * g->s[j] - g->pb[j] + kk[j] * g->d[j];
                    ok = ip >= 0 && ip < g->in[j];
                    roff = roff * g->in[j] + ip;
                }
                if (!ok) {
                    memset(dst, 0, sizeof(float) * (size_t)wout);
                    continue;
                }
                const float *xr = xp + roff * win;
                memset(dst, 0, sizeof(float) * (size_t)lo);
                for (int64_t ow = lo; ow < hi; ow++)
                    dst[ow] = xr[ow * s + off];
                memset(dst + hi, 0, sizeof(float) * (size_t)(wout - hi));
            }
        }
    }
}

/* Per batch item and group: Y[Mg, P] = W[Mg, Cg*K] x col[Cg*K, P] + bias,
 * on the shared f32 matrix core. A pointwise conv (1-wide, stride 1,
 * unpadded) multiplies by the input planes directly. */
static int conv_f32(const conv_geom *g, const float *x, const float *w, const float *b, float *y)
{
    int64_t cg = g->cin / g->group, mg = g->cout / g->group, kdim = cg * g->pk;
    bool pointwise = true;
    for (int i = 0; i < g->n; i++)
        if (g->k[i] != 1 || g->s[i] != 1 || g->pb[i] != 0 || g->out[i] != g->in[i])
            pointwise = false;
    if (g->pout == 0 || mg == 0)
        return 0;
    int64_t wout = g->out[g->n - 1], rows = g->pout / wout, row_elems, col_elems;
    if (!ir_mul_ok(kdim, wout, &row_elems))
        return -1;
    int64_t band = COL_BUDGET / (row_elems + 1);
    band = band < 1 ? 1 : band > rows ? rows : band;
    float *col = NULL;
    if (!pointwise) {
        if (!ir_mul_ok(row_elems, band, &col_elems) || col_elems > IR_MAX_TENSOR_BYTES / 4)
            return -1;
        col = malloc(sizeof(float) * (size_t)(col_elems + 1));
        if (!col)
            return -1;
    }
    int rc = 0;
    for (int64_t nb = 0; nb < g->batch && rc == 0; nb++)
        for (int64_t grp = 0; grp < g->group && rc == 0; grp++) {
            const float *xg = x + (nb * g->cin + grp * cg) * g->pin;
            for (int64_t r0 = 0; r0 < rows && rc == 0; r0 += band) {
                int64_t nr = rows - r0 < band ? rows - r0 : band;
                if (pointwise)
                    nr = rows;
                else
                    im2col_f32(g, xg, cg, r0, nr, col);
                nn_sgemm_args s = {
                    .m = mg, .n = nr * wout, .k = kdim,
                    .a = w + grp * mg * kdim, .a_rs = kdim, .a_cs = 1,
                    .b = pointwise ? xg : col, .b_rs = pointwise ? g->pin : nr * wout, .b_cs = 1,
                    .c = b ? b + grp * mg : NULL, .c_rs = 1, .c_cs = 0,
                    .alpha = 1, .beta = 1,
                    .y = y + (nb * g->cout + grp * mg) * g->pout + r0 * wout, .y_rs = g->pout,
                };
                rc = nn_sgemm(&s);
                if (pointwise)
                    break;
            }
        }
    free(col);
    return rc;
}

int ref_conv(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0], *w = c->in[1], *b = c->nin > 2 ? c->in[2] : NULL;
    conv_geom g;
    if (conv_geom_init(c, &g) < 0)
        return -1;
    nn_f32_view v;
    int f32 = nn_f32_begin(c, 3, true, &v);
    int rc = 0;
    if (f32 > 0) {
        rc = conv_f32(&g, v.in[0], v.in[1], v.in[2], v.out);
        nn_f32_end(&v);
    }
    if (f32 < 0 || rc < 0)
        return ir_node_errorf(c->diag, c->node, "out of memory");
    if (f32 == 0)
        conv_naive(&g, x, w, b, NULL, NULL, c->out[0], false);
    return 0;
}

int ref_conv_integer(ir_ref_ctx *c)
{
    conv_geom g;
    if (conv_geom_init(c, &g) < 0)
        return -1;
    const ir_tensor *xz = c->nin > 2 ? c->in[2] : NULL, *wz = c->nin > 3 ? c->in[3] : NULL;
    if (wz && wz->numel != 1 && wz->numel != g.cout)
        return ir_node_errorf(c->diag, c->node,
                              "w_zero_point has %lld values; expected 1 or %lld (one per output "
                              "channel)",
                              (long long)wz->numel, (long long)g.cout);
    if (xz && xz->numel != 1)
        return ir_node_errorf(c->diag, c->node, "x_zero_point must be a scalar");
    conv_naive(&g, c->in[0], c->in[1], NULL, xz, wz, c->out[0], true);
    return 0;
}

/* ---- ConvTranspose ------------------------------------------------------ */

/* Floor division for the (possibly negative) total padding. */
static int64_t floordiv2(int64_t v)
{
    return v >= 0 ? v / 2 : -((-v + 1) / 2);
}

/* Output size and begin pad of spatial dim i of a transposed conv:
 * out = s*(in-1) + output_padding + (k-1)*d+1 - pads, unless output_shape
 * or SAME fix the output, in which case the total padding follows from it
 * and is split as the spec says (SAME_UPPER puts the odd one at the end). */
static int convt_dim(const ir_node *node, icc_diag *d, const nn_window *w, const int64_t *opad,
                     const int64_t *oshape, int i, int64_t in, int64_t *out, int64_t *pb)
{
    int64_t dk, full;
    if (!ir_mul_ok(w->kernel[i] - 1, w->dilation[i], &dk) || !ir_add_ok(dk, 1, &dk) ||
        !ir_mul_ok(w->stride[i], in > 0 ? in - 1 : 0, &full) || !ir_add_ok(full, opad[i], &full) ||
        !ir_add_ok(full, dk, &full))
        return ir_node_errorf(d, node, "spatial dim %d overflows", i);
    bool same = w->auto_pad == NN_PAD_SAME_UPPER || w->auto_pad == NN_PAD_SAME_LOWER;
    if (oshape || same) {
        if (oshape)
            *out = oshape[i];
        else if (!ir_mul_ok(in, w->stride[i], out))
            return ir_node_errorf(d, node, "spatial dim %d overflows", i);
        int64_t total = full - *out;
        *pb = w->auto_pad == NN_PAD_SAME_UPPER ? floordiv2(total) : total - floordiv2(total);
        return 0;
    }
    int64_t p = 0;
    if (w->auto_pad != NN_PAD_VALID && !ir_add_ok(w->pads[i], w->pads[w->n + i], &p))
        return ir_node_errorf(d, node, "pads of spatial dim %d overflow", i);
    *pb = w->auto_pad == NN_PAD_VALID ? 0 : w->pads[i];
    *out = full - p;
    if (*out < 1)
        return ir_node_errorf(d, node, "spatial dim %d: the output size %lld is not positive", i,
                              (long long)*out);
    return 0;
}

/* convt_dim of a symbolic input dim (no output_shape), as a derived
 * symbol: s*in for SAME, else s*(in-1) + opad + dk - pads = s*in + shift
 * (right for in >= 1; unknown when a constant overflows). */
static ir_dim convt_sym_dim(const ir_node *node, const nn_window *w, const int64_t *opad, int i, ir_dim in)
{
    int64_t dk, shift, s = w->stride[i];
    ir_dim si = ir_dim_mul_const(node->graph, in, s);
    if (w->auto_pad == NN_PAD_SAME_UPPER || w->auto_pad == NN_PAD_SAME_LOWER)
        return si;
    int64_t p0 = w->auto_pad == NN_PAD_VALID ? 0 : w->pads[i], p1 = w->auto_pad == NN_PAD_VALID ? 0 : w->pads[w->n + i];
    if (!ir_mul_ok(w->kernel[i] - 1, w->dilation[i], &dk) || __builtin_add_overflow(dk, 1 + opad[i], &shift) ||
        __builtin_sub_overflow(shift, s, &shift) || __builtin_sub_overflow(shift, p0, &shift) ||
        __builtin_sub_overflow(shift, p1, &shift))
        return ir_dim_unknown();
    return ir_dim_add_const(node->graph, si, shift);
}

/* output_padding and output_shape, checked; *oshape is NULL when absent. */
static int convt_attrs(const ir_node *node, icc_diag *d, int n, int64_t *opad, int64_t *obuf,
                       const int64_t **oshape)
{
    const int64_t *v;
    int cnt = ir_attr_ints(node, "output_padding", &v);
    for (int i = 0; i < n; i++)
        opad[i] = 0;
    if (cnt >= 0) {
        /* Older exporters write begin and end values; only the first n count. */
        if (cnt != n && cnt != 2 * n)
            return ir_node_errorf(d, node, "output_padding has %d values, expected %d", cnt, n);
        for (int i = 0; i < n; i++) {
            if (v[i] < 0)
                return ir_node_errorf(d, node, "output_padding[%d] is negative", i);
            opad[i] = v[i];
        }
    }
    *oshape = NULL;
    cnt = ir_attr_ints(node, "output_shape", &v);
    if (cnt >= 0) {
        if (cnt != n && cnt != n + 2)
            return ir_node_errorf(d, node, "output_shape has %d values, expected %d", cnt, n);
        for (int i = 0; i < n; i++) {
            obuf[i] = v[cnt - n + i];
            if (obuf[i] < 1)
                return ir_node_errorf(d, node, "output_shape[%d] is %lld; it must be >= 1", i,
                                      (long long)obuf[i]);
        }
        *oshape = obuf;
    }
    return 0;
}

int shape_conv_transpose(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0], *w = c->in[1], *b = c->nin > 2 ? c->in[2] : NULL;
    if (nn_same_dtype(c, 1) < 0 || nn_same_dtype(c, 2) < 0)
        return -1;
    int r;
    if (conv_rank(c, x, w, x->dtype, &r) <= 0)
        return r < 0 ? -1 : 0;
    int n = r - 2;
    int64_t group = ir_attr_int(c->node, "group", 1);
    if (group < 1)
        return ir_node_errorf(c->diag, c->node, "group is %lld; it must be >= 1", (long long)group);
    ir_dim wk[IR_MAX_RANK];
    for (int i = 0; i < n; i++)
        wk[i] = w->rank >= 0 ? w->dims[2 + i] : ir_dim_unknown();
    nn_window win;
    int64_t opad[IR_MAX_RANK], obuf[IR_MAX_RANK];
    const int64_t *oshape;
    if (nn_window_parse(c->node, c->diag, n, wk, &win) < 0 ||
        convt_attrs(c->node, c->diag, n, opad, obuf, &oshape) < 0)
        return -1;
    ir_dim cx = x->rank >= 0 ? x->dims[1] : ir_dim_unknown();
    ir_dim cw = w->rank >= 0 ? w->dims[0] : ir_dim_unknown();
    ir_dim mg = w->rank >= 0 ? w->dims[1] : ir_dim_unknown();
    if (ir_dim_is_const(cx) && ir_dim_is_const(cw) && cx.v != cw.v)
        return ir_node_errorf(c->diag, c->node,
                              "channel mismatch: input has %lld channels, weights have %lld",
                              (long long)cx.v, (long long)cw.v);
    if (ir_dim_is_const(cw) && cw.v % group)
        return ir_node_errorf(c->diag, c->node, "group %lld does not divide the %lld input channels",
                              (long long)group, (long long)cw.v);
    ir_dim m = group == 1 ? mg : ir_dim_unknown();
    int64_t mv;
    if (group > 1 && ir_dim_is_const(mg)) {
        if (!ir_mul_ok(mg.v, group, &mv))
            return ir_node_errorf(c->diag, c->node, "group %lld overflows the output channels",
                                  (long long)group);
        m = ir_dim_const(mv);
    }
    if (b && b->rank >= 0) {
        if (b->rank != 1)
            return ir_node_errorf(c->diag, c->node, "bias must have rank 1, got rank %d", b->rank);
        if (ir_dim_is_const(b->dims[0]) && ir_dim_is_const(m) && b->dims[0].v != m.v)
            return ir_node_errorf(c->diag, c->node, "bias has %lld values for %lld output channels",
                                  (long long)b->dims[0].v, (long long)m.v);
    }
    ir_type *o = &c->out[0];
    ir_type_unknown(o, x->dtype, r);
    o->dims[0] = x->rank >= 0 ? x->dims[0] : ir_dim_unknown();
    o->dims[1] = m;
    for (int i = 0; i < n; i++) {
        if (oshape) {
            o->dims[2 + i] = ir_dim_const(oshape[i]);
            continue;
        }
        if (x->rank >= 0 && x->dims[2 + i].sym > 0 && win.kernel[i] > 0) {
            o->dims[2 + i] = convt_sym_dim(c->node, &win, opad, i, x->dims[2 + i]);
            continue;
        }
        if (x->rank < 0 || !ir_dim_is_const(x->dims[2 + i]) || win.kernel[i] == 0)
            continue;
        int64_t out, pb;
        if (convt_dim(c->node, c->diag, &win, opad, oshape, i, x->dims[2 + i].v, &out, &pb) < 0)
            return -1;
        o->dims[2 + i] = ir_dim_const(out);
    }
    return 0;
}

/* Scatter form: every input element spreads x * w[c, m, kk] to output
 * position i*s - pb + kk*d; positions outside the output are dropped.
 * acc (the output, in double) receives the sums. */
static void convt_naive(const conv_geom *g, const ir_tensor *x, const ir_tensor *w, double *acc)
{
    int64_t cg = g->cin / g->group, mg = g->cout / g->group;
    for (int64_t nb = 0; nb < g->batch; nb++)
        for (int64_t ch = 0; ch < g->cin; ch++) {
            int64_t grp = ch / cg;
            int64_t ii[IR_MAX_RANK] = {0};
            for (int64_t xi = 0; xi < g->pin; xi++, ir_index_next(ii, g->in, g->n)) {
                double xv = ir_tensor_getf(x, (nb * g->cin + ch) * g->pin + xi);
                for (int64_t mo = 0; mo < mg; mo++) {
                    double *yp = acc + (nb * g->cout + grp * mg + mo) * g->pout;
                    int64_t wc = (ch * mg + mo) * g->pk;
                    int64_t kk[IR_MAX_RANK] = {0};
                    for (int64_t ki = 0; ki < g->pk; ki++, ir_index_next(kk, g->k, g->n)) {
                        int64_t off = 0;
                        bool ok = true;
                        for (int j = 0; j < g->n && ok; j++) {
                            int64_t op = ii[j] * g->s[j] - g->pb[j] + kk[j] * g->d[j];
                            ok = op >= 0 && op < g->out[j];
                            off = off * g->out[j] + op;
                        }
                        if (ok)
                            yp[off] += xv * ir_tensor_getf(w, wc + ki);
                    }
                }
            }
        }
}

/* f32: per batch item and group, col[(m, kk), i] = sum over c of
 * w[c, m, kk] * x[c, i] on the matrix core, for a chunk of input
 * positions i at a time, then col is scattered as above. */
static int convt_f32(const conv_geom *g, const float *x, const float *w, double *acc)
{
    int64_t cg = g->cin / g->group, mg = g->cout / g->group, rows = mg * g->pk;
    if (rows == 0 || g->pin == 0)
        return 0;
    int64_t chunk = COL_BUDGET / rows;
    chunk = chunk < 1 ? 1 : chunk > g->pin ? g->pin : chunk;
    float *col = malloc(sizeof(float) * (size_t)rows * (size_t)chunk);
    if (!col)
        return -1;
    for (int64_t nb = 0; nb < g->batch; nb++)
        for (int64_t grp = 0; grp < g->group; grp++)
            for (int64_t p0 = 0; p0 < g->pin; p0 += chunk) {
                int64_t np = g->pin - p0 < chunk ? g->pin - p0 : chunk;
                nn_sgemm_args s = {
                    .m = rows, .n = np, .k = cg,
                    .a = w + grp * cg * rows, .a_rs = 1, .a_cs = rows,
                    .b = x + (nb * g->cin + grp * cg) * g->pin + p0, .b_rs = g->pin, .b_cs = 1,
                    .alpha = 1, .y = col, .y_rs = np,
                };
                if (nn_sgemm(&s) < 0) {
                    free(col);
                    return -1;
                }
                double *yg = acc + (nb * g->cout + grp * mg) * g->pout;
                int64_t ii[IR_MAX_RANK] = {0};
                for (int64_t t = p0, j = g->n - 1; j >= 0; j--) {
                    ii[j] = t % g->in[j];
                    t /= g->in[j];
                }
                for (int64_t q = 0; q < np; q++, ir_index_next(ii, g->in, g->n)) {
                    int64_t kk[IR_MAX_RANK] = {0};
                    for (int64_t ki = 0; ki < g->pk; ki++, ir_index_next(kk, g->k, g->n)) {
                        int64_t off = 0;
                        bool ok = true;
                        for (int j = 0; j < g->n && ok; j++) {
                            int64_t op = ii[j] * g->s[j] - g->pb[j] + kk[j] * g->d[j];
                            ok = op >= 0 && op < g->out[j];
                            off = off * g->out[j] + op;
                        }
                        if (!ok)
                            continue;
                        for (int64_t mo = 0; mo < mg; mo++)
                            yg[mo * g->pout + off] += col[(mo * g->pk + ki) * np + q];
                    }
                }
            }
    free(col);
    return 0;
}

int ref_conv_transpose(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0], *w = c->in[1], *b = c->nin > 2 ? c->in[2] : NULL;
    ir_tensor *y = c->out[0];
    conv_geom g;
    memset(&g, 0, sizeof g);
    g.n = x->rank - 2;
    ir_dim wk[IR_MAX_RANK];
    for (int i = 0; i < g.n; i++)
        wk[i] = ir_dim_const(w->dims[2 + i]);
    nn_window win;
    int64_t opad[IR_MAX_RANK], obuf[IR_MAX_RANK];
    const int64_t *oshape;
    if (nn_window_parse(c->node, c->diag, g.n, wk, &win) < 0 ||
        convt_attrs(c->node, c->diag, g.n, opad, obuf, &oshape) < 0)
        return -1;
    g.batch = x->dims[0];
    g.cin = x->dims[1];
    g.cout = y->dims[1];
    g.group = ir_attr_int(c->node, "group", 1);
    for (int i = 0; i < g.n; i++) {
        int64_t out;
        if (convt_dim(c->node, c->diag, &win, opad, oshape, i, x->dims[2 + i], &out, &g.pb[i]) < 0)
            return -1;
        g.in[i] = x->dims[2 + i];
        g.out[i] = y->dims[2 + i];
        g.k[i] = w->dims[2 + i];
        g.s[i] = win.stride[i];
        g.d[i] = win.dilation[i];
    }
    geom_finish(&g);
    double *acc = calloc((size_t)y->numel + 1, sizeof(double));
    if (!acc)
        return ir_node_errorf(c->diag, c->node, "out of memory");
    nn_f32_view v;
    int f32 = nn_f32_begin(c, 2, false, &v);
    int rc = 0;
    if (f32 > 0) {
        rc = convt_f32(&g, v.in[0], v.in[1], acc);
        nn_f32_end(&v);
    }
    if (f32 < 0 || rc < 0) {
        free(acc);
        return ir_node_errorf(c->diag, c->node, "out of memory");
    }
    if (f32 == 0)
        convt_naive(&g, x, w, acc);
    for (int64_t i = 0; i < y->numel; i++) {
        int64_t m = (i / g.pout) % g.cout;
        ir_tensor_setf(y, i, acc[i] + (b ? ir_tensor_getf(b, m) : 0));
    }
    free(acc);
    return 0;
}
