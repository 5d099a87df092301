/* gridsample.c - shape function and reference kernel of GridSample
 * (opset 20+ semantics, any number of spatial dims): X is (N, C, d1..dr),
 * grid is (N, D1..Dr, r) holding normalized coordinates in [-1, 1], last
 * spatial dim first; Y is (N, C, D1..Dr). Each output position samples X
 * with nearest (round half to even), N-linear or N-cubic (Keys, a = -0.75)
 * weights; positions outside the input are handled by padding_mode (zeros,
 * border, reflection), applied per dim as in the ONNX reference. Computed in
 * double; each spatial dim contributes a small list of (index, weight)
 * taps and the sample is their tensor product. */
#include "ir/ref/ref.h"

#include <math.h>
#include <string.h>

enum { GS_NEAREST, GS_LINEAR, GS_CUBIC };
enum { GP_ZEROS, GP_BORDER, GP_REFLECTION };

static int gs_mode(const ir_node *n, int *mode, int *pad)
{
    const char *m = ir_attr_string(n, "mode", "linear");
    const char *p = ir_attr_string(n, "padding_mode", "zeros");
    /* opset 16 spelled linear and cubic "bilinear" and "bicubic" */
    if (!strcmp(m, "nearest"))
        *mode = GS_NEAREST;
    else if (!strcmp(m, "linear") || !strcmp(m, "bilinear"))
        *mode = GS_LINEAR;
    else if (!strcmp(m, "cubic") || !strcmp(m, "bicubic"))
        *mode = GS_CUBIC;
    else
        return -1;
    if (!strcmp(p, "zeros"))
        *pad = GP_ZEROS;
    else if (!strcmp(p, "border"))
        *pad = GP_BORDER;
    else if (!strcmp(p, "reflection"))
        *pad = GP_REFLECTION;
    else
        return -2;
    return 0;
}

int shape_grid_sample(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0], *g = c->in[1];
    int mode, pad, rc = gs_mode(c->node, &mode, &pad);
    if (rc == -1)
        return ir_node_errorf(c->diag, c->node, "unknown mode '%.100s'",
                              ir_attr_string(c->node, "mode", ""));
    if (rc == -2)
        return ir_node_errorf(c->diag, c->node, "unknown padding_mode '%.100s'",
                              ir_attr_string(c->node, "padding_mode", ""));
    if (x->dtype == IR_BOOL)
        return ir_node_errorf(c->diag, c->node, "bool input is not supported");
    if (g->dtype != IR_UNDEF && !ir_dtype_is_float(g->dtype))
        return ir_node_errorf(c->diag, c->node, "grid must be a float tensor, got %s",
                              ir_dtype_name(g->dtype));
    if (x->rank >= 0 && x->rank < 3)
        return ir_node_errorf(c->diag, c->node, "input must have rank >= 3, got %d", x->rank);
    if (x->rank >= 0 && g->rank >= 0 && g->rank != x->rank)
        return ir_node_errorf(c->diag, c->node, "grid has rank %d but the input has rank %d",
                              g->rank, x->rank);
    int r = x->rank >= 0 ? x->rank : g->rank;
    if (r < 0) {
        ir_type_unknown(&c->out[0], x->dtype, IR_RANK_UNKNOWN);
        return 0;
    }
    if (r < 3)
        return ir_node_errorf(c->diag, c->node, "grid must have rank >= 3, got %d", r);
    ir_type_unknown(&c->out[0], x->dtype, r);
    ir_type *o = &c->out[0];
    if (g->rank >= 0) {
        ir_dim last = g->dims[r - 1];
        if (ir_dim_is_const(last) && last.v != r - 2)
            return ir_node_errorf(c->diag, c->node, "grid's last dim is %lld; expected %d",
                                  (long long)last.v, r - 2);
        for (int i = 1; i < r - 1; i++)
            o->dims[i + 1] = g->dims[i];
        o->dims[0] = g->dims[0];
    }
    if (x->rank >= 0) {
        ir_dim xn = x->dims[0], gn = o->dims[0];
        if (ir_dim_is_const(xn) && ir_dim_is_const(gn) && xn.v != gn.v)
            return ir_node_errorf(c->diag, c->node, "batch of the input (%lld) and grid (%lld) differ",
                                  (long long)xn.v, (long long)gn.v);
        if (!ir_dim_is_const(gn))
            o->dims[0] = xn;
        o->dims[1] = x->dims[1];
    }
    return 0;
}

/* Folds x into [lo, hi] by repeated reflection at the borders. */
static double reflect(double x, double lo, double hi)
{
    double range = hi - lo;
    if (!isfinite(x) || range <= 0)
        return lo;
    if (x >= lo && x <= hi)
        return x;
    double dx = x < lo ? lo - x : x - hi;
    double n = floor(dx / range), r = dx - n * range;
    bool odd = fmod(n, 2) != 0;
    if (x < lo)
        return odd ? hi - r : lo + r;
    return odd ? lo + r : hi - r;
}

/* Taps of one spatial dim: indices (-1 = a zero from zeros padding) and
 * weights. */
typedef struct gs_taps {
    int n;
    int64_t idx[4];
    double w[4];
} gs_taps;

/* Index of integer position i after padding; -1 when it reads zero. */
static int64_t pad_index(double i, int64_t len, int pad, double lo, double hi)
{
    if (pad == GP_BORDER)
        i = i < 0 ? 0 : i > (double)(len - 1) ? (double)(len - 1) : i;
    else if (pad == GP_REFLECTION)
        i = trunc(reflect(i, lo, hi));
    if (!(i >= 0 && i < (double)len))
        return -1;
    return (int64_t)i;
}

static void cubic_weights(double t, double *w)
{
    const double a = -0.75;
    double s = t + 1, u = 1 - t, v = 2 - t;
    w[0] = ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
    w[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
    w[2] = ((a + 2) * u - (a + 3)) * u * u + 1;
    w[3] = ((a * v - 5 * a) * v + 8 * a) * v - 4 * a;
}

static void dim_taps(double g, int64_t len, bool align, int mode, int pad, gs_taps *t)
{
    double lo = align ? 0 : -0.5, hi = align ? (double)(len - 1) : (double)len - 0.5;
    double x = align ? (g + 1) / 2 * (double)(len - 1) : ((g + 1) * (double)len - 1) / 2;
    if (mode == GS_NEAREST)
        x = nearbyint(x);
    if (x < lo || x > hi) {
        if (pad == GP_BORDER)
            x = x < 0 ? 0 : x > (double)(len - 1) ? (double)(len - 1) : x;
        else if (pad == GP_REFLECTION)
            x = reflect(x, lo, hi);
    }
    if (!isfinite(x) || fabs(x) > 0x1p52) {
        /* NaN or far outside: nothing to sample (only reachable with zeros). */
        t->n = 1;
        t->idx[0] = -1;
        t->w[0] = 0;
        return;
    }
    if (mode == GS_NEAREST) {
        t->n = 1;
        t->idx[0] = pad_index(trunc(x), len, pad, lo, hi);
        t->w[0] = 1;
        return;
    }
    double x0 = floor(x), f = x - x0;
    if (mode == GS_LINEAR) {
        t->n = 2;
        t->w[0] = 1 - f;
        t->w[1] = f;
        for (int j = 0; j < 2; j++)
            t->idx[j] = pad_index(x0 + j, len, pad, lo, hi);
        return;
    }
    t->n = 4;
    cubic_weights(f, t->w);
    for (int j = 0; j < 4; j++)
        t->idx[j] = pad_index(x0 - 1 + j, len, pad, lo, hi);
}

int ref_grid_sample(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0], *grid = c->in[1];
    ir_tensor *y = c->out[0];
    int mode, pad;
    if (gs_mode(c->node, &mode, &pad) < 0)
        return ir_node_errorf(c->diag, c->node, "unknown mode or padding_mode");
    bool align = ir_attr_int(c->node, "align_corners", 0) != 0;
    int r = x->rank - 2;
    int64_t N = x->dims[0], C = x->dims[1], in_sp = 1, out_sp = 1;
    for (int i = 0; i < r; i++) {
        in_sp *= x->dims[2 + i];
        out_sp *= y->dims[2 + i];
    }
    if (y->numel == 0)
        return 0;
    if (in_sp == 0)
        return ir_node_errorf(c->diag, c->node, "cannot sample an empty input");
    int64_t xs[IR_MAX_RANK];
    ir_strides(x->dims + 2, r, xs);
    for (int64_t n = 0; n < N; n++)
        for (int64_t o = 0; o < out_sp; o++) {
            gs_taps taps[IR_MAX_RANK];
            /* grid's last axis lists coordinates for the last spatial dim first */
            const int64_t gbase = (n * out_sp + o) * r;
            for (int i = 0; i < r; i++)
                dim_taps(ir_tensor_getf(grid, gbase + (r - 1 - i)), x->dims[2 + i], align, mode, pad,
                         &taps[i]);
            for (int64_t ch = 0; ch < C; ch++) {
                const int64_t xbase = (n * C + ch) * in_sp;
                int k[IR_MAX_RANK] = {0};
                double acc = 0;
                for (;;) {
                    double w = 1;
                    int64_t off = 0;
                    bool zero = false;
                    for (int i = 0; i < r; i++) {
                        w *= taps[i].w[k[i]];
                        zero |= taps[i].idx[k[i]] < 0;
                        off += taps[i].idx[k[i]] * xs[i];
                    }
                    if (!zero)
                        acc += w * ir_tensor_getf(x, xbase + off);
                    int i = r - 1;
                    while (i >= 0 && ++k[i] == taps[i].n)
                        k[i--] = 0;
                    if (i < 0)
                        break;
                }
                ir_tensor_setf(y, (n * C + ch) * out_sp + o, acc);
            }
        }
    return 0;
}
