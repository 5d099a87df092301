/* roialign.c - RoiAlign: each region of interest (x1, y1, x2, y2 in input
 * coordinates times spatial_scale, of batch item batch_indices[r]) cut
 * into output_height x output_width bins; each bin samples a grid of
 * points (sampling_ratio per side, or ceil(bin size) when 0) bilinearly
 * and averages them (mode avg) or takes the largest of the weighted
 * corner values over the samples (mode max, as ONNX's reference and ONNX
 * Runtime define it). half_pixel shifts the region by half a pixel;
 * output_half_pixel (the opset-10 behaviour) instead makes a region at
 * least one pixel on each side. A sample more than one pixel outside the
 * map contributes zero; one past the last row or column reads the edge.
 * codegen/lower/detect.c compiles the same arithmetic. */
#include "ir/ref/ref.h"

#include <math.h>
#include <string.h>

typedef struct {
    int64_t C, H, W, oh, ow, sr;
    double scale;
    bool half_pixel, max;
} roi_geo;

static int roi_attrs(const ir_node *n, roi_geo *g, icc_diag *d)
{
    const ir_attr *a;
    g->oh = (a = ir_node_attr(n, "output_height")) ? a->i : 1;
    g->ow = (a = ir_node_attr(n, "output_width")) ? a->i : 1;
    g->sr = (a = ir_node_attr(n, "sampling_ratio")) ? a->i : 0;
    g->scale = (a = ir_node_attr(n, "spatial_scale")) ? a->f : 1.0;
    const char *mode = (a = ir_node_attr(n, "mode")) ? a->s : "avg";
    const char *ct = (a = ir_node_attr(n, "coordinate_transformation_mode")) ? a->s : "half_pixel";
    if (g->oh < 1 || g->ow < 1 || g->oh > (1 << 20) || g->ow > (1 << 20))
        return ir_node_errorf(d, n, "output_height and output_width must be in [1, 2^20], got %lld and %lld",
                              (long long)g->oh, (long long)g->ow);
    if (g->sr < 0 || g->sr > 1024)
        return ir_node_errorf(d, n, "sampling_ratio must be in [0, 1024], got %lld", (long long)g->sr);
    if (strcmp(mode, "avg") && strcmp(mode, "max"))
        return ir_node_errorf(d, n, "mode must be avg or max, got '%.40s'", mode);
    if (strcmp(ct, "half_pixel") && strcmp(ct, "output_half_pixel"))
        return ir_node_errorf(d, n, "coordinate_transformation_mode must be half_pixel or output_half_pixel, got '%.40s'",
                              ct);
    g->max = !strcmp(mode, "max");
    g->half_pixel = !strcmp(ct, "half_pixel");
    return 0;
}

int shape_roi_align(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0], *r = c->in[1], *bi = c->in[2];
    roi_geo g;
    if (roi_attrs(c->node, &g, c->diag) < 0)
        return -1;
    if (!ir_dtype_is_float(x->dtype) || r->dtype != x->dtype || !ir_dtype_is_int(bi->dtype))
        return ir_node_errorf(c->diag, c->node, "X and rois must be one float type and batch_indices integer, got %s, %s, %s",
                              ir_dtype_name(x->dtype), ir_dtype_name(r->dtype), ir_dtype_name(bi->dtype));
    if ((x->rank >= 0 && x->rank != 4) || (r->rank >= 0 && r->rank != 2) || (bi->rank >= 0 && bi->rank != 1))
        return ir_node_errorf(c->diag, c->node, "X must be 4-D, rois 2-D and batch_indices 1-D, got ranks %d, %d, %d",
                              x->rank, r->rank, bi->rank);
    if (r->rank == 2 && ir_dim_is_const(r->dims[1]) && r->dims[1].v != 4)
        return ir_node_errorf(c->diag, c->node, "rois must have 4 coordinates per region, got %lld",
                              (long long)r->dims[1].v);
    if (r->rank == 2 && bi->rank == 1 && ir_dim_is_const(r->dims[0]) && ir_dim_is_const(bi->dims[0]) &&
        r->dims[0].v != bi->dims[0].v)
        return ir_node_errorf(c->diag, c->node, "rois has %lld regions but batch_indices %lld",
                              (long long)r->dims[0].v, (long long)bi->dims[0].v);
    ir_type *o = &c->out[0];
    ir_type_unknown(o, x->dtype, 4);
    if (bi->rank == 1)
        o->dims[0] = bi->dims[0];
    if (x->rank == 4)
        o->dims[1] = x->dims[1];
    o->dims[2] = ir_dim_const(g.oh);
    o->dims[3] = ir_dim_const(g.ow);
    return 0;
}

/* One sample's four corner offsets and weights (all zero outside). */
static void corners(const roi_geo *g, double y, double x, int64_t *pos, double *w)
{
    memset(pos, 0, 4 * sizeof *pos);
    memset(w, 0, 4 * sizeof *w);
    if (y < -1.0 || y > g->H || x < -1.0 || x > g->W)
        return;
    y = y < 0 ? 0 : y;
    x = x < 0 ? 0 : x;
    int64_t yl = (int64_t)y, xl = (int64_t)x, yh, xh;
    if (yl >= g->H - 1) {
        yh = yl = g->H - 1;
        y = (double)yl;
    } else {
        yh = yl + 1;
    }
    if (xl >= g->W - 1) {
        xh = xl = g->W - 1;
        x = (double)xl;
    } else {
        xh = xl + 1;
    }
    double ly = y - (double)yl, lx = x - (double)xl, hy = 1 - ly, hx = 1 - lx;
    pos[0] = yl * g->W + xl;
    pos[1] = yl * g->W + xh;
    pos[2] = yh * g->W + xl;
    pos[3] = yh * g->W + xh;
    w[0] = hy * hx;
    w[1] = hy * lx;
    w[2] = ly * hx;
    w[3] = ly * lx;
}

int ref_roi_align(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0], *rois = c->in[1], *bi = c->in[2];
    ir_tensor *y = c->out[0];
    roi_geo g;
    if (roi_attrs(c->node, &g, c->diag) < 0)
        return -1;
    g.C = x->dims[1];
    g.H = x->dims[2];
    g.W = x->dims[3];
    int64_t R = bi->dims[0];
    if (rois->dims[0] != R || rois->dims[1] != 4)
        return ir_node_errorf(c->diag, c->node, "rois [%lld, %lld] does not match batch_indices [%lld]",
                              (long long)rois->dims[0], (long long)rois->dims[1], (long long)R);
    for (int64_t r = 0; r < R; r++) {
        int64_t b = ir_tensor_geti(bi, r);
        if (b < 0 || b >= x->dims[0])
            return ir_node_errorf(c->diag, c->node, "batch_indices[%lld] = %lld is outside [0, %lld)", (long long)r,
                                  (long long)b, (long long)x->dims[0]);
        double off = g.half_pixel ? 0.5 : 0;
        double sw = ir_tensor_getf(rois, r * 4) * g.scale - off, sh = ir_tensor_getf(rois, r * 4 + 1) * g.scale - off;
        double rw = ir_tensor_getf(rois, r * 4 + 2) * g.scale - off - sw;
        double rh = ir_tensor_getf(rois, r * 4 + 3) * g.scale - off - sh;
        if (!g.half_pixel) {
            rw = rw > 1 ? rw : 1;
            rh = rh > 1 ? rh : 1;
        }
        double bh = rh / (double)g.oh, bw = rw / (double)g.ow;
        double gh_d = g.sr > 0 ? (double)g.sr : ceil(rh / (double)g.oh);
        double gw_d = g.sr > 0 ? (double)g.sr : ceil(rw / (double)g.ow);
        /* a region of NaN or huge size samples nothing rather than forever */
        int64_t gh = gh_d > 0 && gh_d < 4096 ? (int64_t)gh_d : 0, gw = gw_d > 0 && gw_d < 4096 ? (int64_t)gw_d : 0;
        if (g.H == 0 || g.W == 0)
            gh = gw = 0; /* an empty map: nothing to sample */
        double count = gh * gw > 1 ? (double)(gh * gw) : 1;
        for (int64_t ch = 0; ch < g.C; ch++) {
            int64_t base = (b * g.C + ch) * g.H * g.W;
            for (int64_t ph = 0; ph < g.oh; ph++)
                for (int64_t pw = 0; pw < g.ow; pw++) {
                    double acc = 0;
                    bool any = false;
                    for (int64_t iy = 0; iy < gh; iy++) {
                        double yy = sh + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
                        for (int64_t ix = 0; ix < gw; ix++) {
                            double xx = sw + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
                            int64_t pos[4];
                            double w[4];
                            corners(&g, yy, xx, pos, w);
                            if (!g.max) {
                                for (int k = 0; k < 4; k++)
                                    acc += w[k] * ir_tensor_getf(x, base + pos[k]);
                                continue;
                            }
                            double v = w[0] * ir_tensor_getf(x, base + pos[0]);
                            for (int k = 1; k < 4; k++) {
                                double u = w[k] * ir_tensor_getf(x, base + pos[k]);
                                v = u > v ? u : v;
                            }
                            acc = any && acc > v ? acc : v;
                            any = true;
                        }
                    }
                    ir_tensor_setf(y, ((r * g.C + ch) * g.oh + ph) * g.ow + pw, g.max ? acc : acc / count);
                }
        }
    }
    return 0;
}
