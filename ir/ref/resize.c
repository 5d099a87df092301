/* resize.c - shape function and reference kernel of Resize (opset 19
 * semantics): nearest (four rounding modes), N-linear and N-cubic
 * interpolation, every coordinate_transformation_mode, scales or sizes,
 * the axes attribute, keep_aspect_ratio_policy, exclude_outside and
 * antialias for linear/cubic. Interpolation is separable, so the kernel
 * resamples one axis at a time in double, each axis with a precomputed
 * table of taps (input index, weight) per output position; nearest is a
 * pure gather that copies elements bit-exactly. */
#include "ir/ref/ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { RS_NEAREST, RS_LINEAR, RS_CUBIC };
enum { CT_HALF_PIXEL, CT_HALF_PIXEL_SYMMETRIC, CT_PYTORCH_HALF_PIXEL, CT_ALIGN_CORNERS,
       CT_ASYMMETRIC, CT_TF_CROP_AND_RESIZE };
enum { NR_ROUND_PREFER_FLOOR, NR_ROUND_PREFER_CEIL, NR_FLOOR, NR_CEIL };
enum { KA_STRETCH, KA_NOT_LARGER, KA_NOT_SMALLER };

/* Index of s in the NULL-terminated list, or -1. */
static int pick(const char *s, const char *const *names)
{
    for (int i = 0; names[i]; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

typedef struct rs_plan {
    int mode, ctm, nearest, policy;
    bool antialias, exclude;
    double cubic_a, extrapolation;
    int naxes;
    int axes[IR_MAX_RANK];          /* dims that scales/sizes/roi refer to, in their order */
    bool known;                     /* every output dim and scale below is known */
    ir_dim out[IR_MAX_RANK];
    double scale[IR_MAX_RANK];      /* per dim; 1 for dims not resized */
    double roi_lo[IR_MAX_RANK], roi_hi[IR_MAX_RANK];
} rs_plan;

/* Presence of an optional input: absent, present with known nonzero
 * length, or present with a length not known yet. An empty tensor counts
 * as absent, since exporters pass "" or an empty constant for "unused". */
enum { IN_ABSENT, IN_PRESENT, IN_MAYBE };

static int input_state(const ir_shape_ctx *c, int i)
{
    if (i >= c->nin || !c->in[i])
        return IN_ABSENT;
    if (c->val[i])
        return c->val[i]->numel > 0 ? IN_PRESENT : IN_ABSENT;
    const ir_type *t = c->in[i];
    if (t->rank == 1 && ir_dim_is_const(t->dims[0]))
        return t->dims[0].v > 0 ? IN_PRESENT : IN_ABSENT;
    return IN_MAYBE;
}

static int parse_attrs(ir_shape_ctx *c, int rank, rs_plan *p)
{
    static const char *const modes[] = {"nearest", "linear", "cubic", NULL};
    static const char *const ctms[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                       "align_corners", "asymmetric", "tf_crop_and_resize", NULL};
    static const char *const nmodes[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                         "ceil", NULL};
    static const char *const policies[] = {"stretch", "not_larger", "not_smaller", NULL};
    const ir_node *n = c->node;
    const char *s;
    if ((p->mode = pick(s = ir_attr_string(n, "mode", "nearest"), modes)) < 0)
        return ir_node_errorf(c->diag, n, "unknown mode '%.100s'", s);
    if ((p->ctm = pick(s = ir_attr_string(n, "coordinate_transformation_mode", "half_pixel"), ctms)) < 0)
        return ir_node_errorf(c->diag, n, "unknown coordinate_transformation_mode '%.100s'", s);
    if ((p->nearest = pick(s = ir_attr_string(n, "nearest_mode", "round_prefer_floor"), nmodes)) < 0)
        return ir_node_errorf(c->diag, n, "unknown nearest_mode '%.100s'", s);
    if ((p->policy = pick(s = ir_attr_string(n, "keep_aspect_ratio_policy", "stretch"), policies)) < 0)
        return ir_node_errorf(c->diag, n, "unknown keep_aspect_ratio_policy '%.100s'", s);
    p->antialias = ir_attr_int(n, "antialias", 0) != 0;
    if (p->antialias && p->mode == RS_NEAREST)
        return ir_node_errorf(c->diag, n, "antialias is not supported with mode 'nearest'");
    p->exclude = ir_attr_int(n, "exclude_outside", 0) != 0;
    p->cubic_a = ir_attr_float(n, "cubic_coeff_a", -0.75f);
    p->extrapolation = ir_attr_float(n, "extrapolation_value", 0.0f);
    const int64_t *ax;
    int na = ir_attr_ints(n, "axes", &ax);
    if (na < 0) {
        p->naxes = rank;
        for (int i = 0; i < rank; i++)
            p->axes[i] = i;
        return 0;
    }
    if (na > rank)
        return ir_node_errorf(c->diag, n, "%d axes given for an input of rank %d", na, rank);
    bool seen[IR_MAX_RANK] = {0};
    for (int i = 0; i < na; i++) {
        if (ir_norm_axis(c, ax[i], rank, &p->axes[i]) < 0)
            return -1;
        if (rank == 0 || seen[p->axes[i]])
            return ir_node_errorf(c->diag, n, "axis %lld is repeated or invalid", (long long)ax[i]);
        seen[p->axes[i]] = true;
    }
    p->naxes = na;
    return 0;
}

/* Largest output dim accepted before the element-count checks; keeps the
 * double -> int64 conversions defined. */
#define RS_MAX_DIM ((double)((int64_t)1 << 53))

/* Fills p from the attributes and whatever input values are known. */
static int plan_resize(ir_shape_ctx *c, const ir_type *x, rs_plan *p)
{
    memset(p, 0, sizeof *p);
    int r = x->rank;
    if (parse_attrs(c, r, p) < 0)
        return -1;
    const ir_node *n = c->node;
    for (int d = 0; d < r; d++) {
        p->out[d] = x->dims[d];
        p->scale[d] = 1;
        p->roi_lo[d] = 0;
        p->roi_hi[d] = 1;
    }
    int sc = input_state(c, 2), sz = input_state(c, 3);
    if (sc == IN_PRESENT && sz == IN_PRESENT)
        return ir_node_errorf(c->diag, n, "scales and sizes must not both be given");
    if (sc == IN_ABSENT && sz == IN_ABSENT)
        return ir_node_errorf(c->diag, n, "one of scales and sizes must be given");
    int which = sc == IN_PRESENT || (sc == IN_MAYBE && sz == IN_ABSENT) ? 2
              : sz == IN_PRESENT || (sz == IN_MAYBE && sc == IN_ABSENT) ? 3 : -1;
    if (which == 2 && c->in[2]->dtype != IR_UNDEF && !ir_dtype_is_float(c->in[2]->dtype))
        return ir_node_errorf(c->diag, n, "scales must be a float tensor");
    if (which == 3 && c->in[3]->dtype != IR_UNDEF && !ir_dtype_is_int(c->in[3]->dtype))
        return ir_node_errorf(c->diag, n, "sizes must be an integer tensor");
    if (which > 0 && c->in[which]->rank == 1 && ir_dim_is_const(c->in[which]->dims[0]) &&
        c->in[which]->dims[0].v != p->naxes)
        return ir_node_errorf(c->diag, n, "%s has %lld values; expected %d",
                              which == 2 ? "scales" : "sizes",
                              (long long)c->in[which]->dims[0].v, p->naxes);

    /* roi: only read by tf_crop_and_resize; [0, 1] per axis when absent. */
    if (p->ctm == CT_TF_CROP_AND_RESIZE && input_state(c, 1) == IN_PRESENT && c->val[1]) {
        const ir_tensor *roi = c->val[1];
        if (roi->numel != 2 * p->naxes)
            return ir_node_errorf(c->diag, n, "roi has %lld values; expected %d",
                                  (long long)roi->numel, 2 * p->naxes);
        for (int i = 0; i < p->naxes; i++) {
            p->roi_lo[p->axes[i]] = ir_tensor_getf(roi, i);
            p->roi_hi[p->axes[i]] = ir_tensor_getf(roi, p->naxes + i);
        }
    }

    if (which < 0 || !c->val[which]) {
        for (int i = 0; i < p->naxes; i++)
            p->out[p->axes[i]] = ir_dim_unknown();
        return 0;
    }
    const ir_tensor *v = c->val[which];
    if (v->rank != 1 || v->numel != p->naxes)
        return ir_node_errorf(c->diag, n, "%s must be 1-D with %d values",
                              which == 2 ? "scales" : "sizes", p->naxes);
    p->known = true;
    if (which == 2) {
        for (int i = 0; i < p->naxes; i++) {
            int d = p->axes[i];
            double s = ir_tensor_getf(v, i);
            if (!(s > 0) || !isfinite(s))
                return ir_node_errorf(c->diag, n, "scale %g for axis %d is not a positive number", s, d);
            p->scale[d] = s;
            if (!ir_dim_is_const(x->dims[d])) {
                /* floor(dim * s) as a derived symbol: an f32 scale is
                 * m / 2^e exactly (m < 2^24 odd, or e = 0), so
                 * floor(dim * m / 2^e), which is what the interpreter's
                 * double product gives (exact below 2^53) */
                ir_graph *g = n->graph;
                int ex;
                double f = frexp(s, &ex);
                int64_t m = (int64_t)ldexp(f, 24), e = 24 - ex;
                while (e > 0 && m % 2 == 0)
                    m /= 2, e--;
                if ((double)(float)s != s || e > 40 || !g)
                    p->out[d] = ir_dim_unknown();
                else if (e <= 0)
                    p->out[d] = s < RS_MAX_DIM ? ir_dim_mul_const(g, x->dims[d], (int64_t)s) : ir_dim_unknown();
                else
                    p->out[d] = ir_dim_div_const(g, ir_dim_mul_const(g, x->dims[d], m), INT64_C(1) << e, false);
                if (x->dims[d].sym > 0)   /* an unknown dim stays as it was */
                    p->known = p->known && p->out[d].sym != IR_DIM_UNKNOWN;
                continue;
            }
            double o = floor((double)x->dims[d].v * s);
            if (o >= RS_MAX_DIM)
                return ir_node_errorf(c->diag, n, "output dim %d is too large", d);
            p->out[d] = ir_dim_const((int64_t)o);
        }
        return 0;
    }
    int64_t sizes[IR_MAX_RANK];
    for (int i = 0; i < p->naxes; i++) {
        sizes[i] = ir_tensor_geti(v, i);
        if (sizes[i] < 0 || (double)sizes[i] >= RS_MAX_DIM)
            return ir_node_errorf(c->diag, n, "size %lld for axis %d is invalid",
                                  (long long)sizes[i], p->axes[i]);
    }
    bool in_known = true;
    for (int i = 0; i < p->naxes; i++) {
        const ir_dim *dd = &x->dims[p->axes[i]];
        if (!ir_dim_is_const(*dd))
            in_known = false;
        else if (dd->v == 0 && sizes[i] != 0)
            return ir_node_errorf(c->diag, n, "cannot resize the empty axis %d to size %lld",
                                  p->axes[i], (long long)sizes[i]);
    }
    if (p->policy == KA_STRETCH) {
        for (int i = 0; i < p->naxes; i++) {
            int d = p->axes[i];
            p->out[d] = ir_dim_const(sizes[i]);
            if (ir_dim_is_const(x->dims[d]) && x->dims[d].v > 0)
                p->scale[d] = (double)sizes[i] / (double)x->dims[d].v;
        }
        p->known = in_known;
        return 0;
    }
    if (!in_known) {
        for (int i = 0; i < p->naxes; i++)
            p->out[p->axes[i]] = ir_dim_unknown();
        p->known = false;
        return 0;
    }
    /* keep_aspect_ratio_policy: one scale for every resized axis. */
    double s = p->policy == KA_NOT_LARGER ? INFINITY : 0;
    for (int i = 0; i < p->naxes; i++) {
        int64_t in = x->dims[p->axes[i]].v;
        if (in == 0)
            return ir_node_errorf(c->diag, n, "keep_aspect_ratio_policy needs non-empty axes");
        double si = (double)sizes[i] / (double)in;
        s = p->policy == KA_NOT_LARGER ? fmin(s, si) : fmax(s, si);
    }
    for (int i = 0; i < p->naxes; i++) {
        int d = p->axes[i];
        double o = floor(s * (double)x->dims[d].v + 0.5);
        if (o >= RS_MAX_DIM)
            return ir_node_errorf(c->diag, n, "output dim %d is too large", d);
        p->out[d] = ir_dim_const((int64_t)o);
        p->scale[d] = s;
    }
    return 0;
}

int shape_resize(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    if (x->dtype == IR_BOOL)
        return ir_node_errorf(c->diag, c->node, "bool input is not supported");
    if (x->rank < 0) {
        ir_type_unknown(&c->out[0], x->dtype, IR_RANK_UNKNOWN);
        return 0;
    }
    rs_plan p;
    if (plan_resize(c, x, &p) < 0)
        return -1;
    c->out[0].dtype = x->dtype;
    c->out[0].rank = x->rank;
    for (int d = 0; d < x->rank; d++)
        c->out[0].dims[d] = p.out[d];
    return 0;
}

/* ---- kernel ----------------------------------------------------------------- */

/* One axis of the resampling: for each output position o, n taps of
 * (clamped input index, weight), or the extrapolation flag. */
typedef struct rs_axis {
    int64_t in, out;
    int n;
    int64_t *idx;
    double *w;
    bool *ext;
} rs_axis;

/* x_original of output position x along an axis (the ONNX formulas; the
 * "output_width" of align_corners and tf_crop_and_resize is the
 * fractional scale * length_original, as in the ONNX reference and its
 * test data). pytorch_half_pixel maps a single output pixel to 0 as the
 * spec and onnxruntime say (the ONNX reference uses -0.5). */
static double source_coord(const rs_plan *p, int d, int64_t x, int64_t in, int64_t out)
{
    double s = p->scale[d], fx = (double)x, width = s * (double)in;
    switch (p->ctm) {
    case CT_HALF_PIXEL_SYMMETRIC: {
        double adj = (double)out / width, center = (double)in / 2;
        return center * (1 - adj) + (fx + 0.5) / s - 0.5;
    }
    case CT_PYTORCH_HALF_PIXEL:
        return out > 1 ? (fx + 0.5) / s - 0.5 : 0;
    case CT_ALIGN_CORNERS:
        return width == 1 ? 0 : fx * (double)(in - 1) / (width - 1);
    case CT_ASYMMETRIC:
        return fx / s;
    case CT_TF_CROP_AND_RESIZE: {
        double lo = p->roi_lo[d], hi = p->roi_hi[d], span = (double)(in - 1);
        double xo = width == 1 ? (hi - lo) * span / 2 : fx * (hi - lo) * span / (width - 1);
        return xo + lo * span;
    }
    default:
        return (fx + 0.5) / s - 0.5;
    }
}

static int64_t clamp_index(double v, int64_t in)
{
    if (!(v > 0))
        return 0;
    if (v >= (double)(in - 1))
        return in - 1;
    return (int64_t)v;
}

static int64_t nearest_index(int mode, double xo, int64_t in)
{
    double f = floor(xo), frac = xo - f, v;
    if (frac == 0)
        v = xo;
    else if (mode == NR_FLOOR)
        v = f;
    else if (mode == NR_CEIL)
        v = f + 1;
    else if (mode == NR_ROUND_PREFER_FLOOR)
        v = frac <= 0.5 ? f : f + 1;
    else
        v = frac < 0.5 ? f : f + 1;
    return clamp_index(v, in);
}

/* Interpolation kernels; t is the distance in (antialias-stretched) input
 * pixels. */
static double kernel_weight(const rs_plan *p, double t)
{
    t = fabs(t);
    if (p->mode == RS_LINEAR)
        return t < 1 ? 1 - t : 0;
    double a = p->cubic_a;
    if (t <= 1)
        return ((a + 2) * t - (a + 3)) * t * t + 1;
    if (t < 2)
        return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
    return 0;
}

/* Axis d is left alone when it keeps its size at scale ~1 over the full
 * roi (the ONNX reference skips such axes the same way). */
static bool axis_is_identity(const rs_plan *p, int d, int64_t in, int64_t out)
{
    double s = p->scale[d];
    if (out != in || fabs(s - 1) > 1e-9 * fmax(1, fabs(s)))
        return false;
    return p->ctm != CT_TF_CROP_AND_RESIZE ||
           (fabs(p->roi_lo[d]) <= 1e-9 && fabs(p->roi_hi[d] - 1) <= 1e-9);
}

/* Builds the taps of axis d; -1 on out of memory. */
static int build_axis(const rs_plan *p, int d, int64_t in, int64_t out, rs_axis *a)
{
    a->in = in;
    a->out = out;
    int n = 1, start = 0;
    double s_aa = 1;
    bool ident = axis_is_identity(p, d, in, out);
    if (!ident && p->mode != RS_NEAREST) {
        double radius = p->mode == RS_LINEAR ? 1 : 2;
        if (p->antialias && p->scale[d] < 1)
            s_aa = p->scale[d];
        /* The support of the stretched kernel, symmetric around x_ori. */
        double st = floor(-radius / s_aa) + 1;
        if (st < -(1 << 20))
            return -1;
        start = (int)st;
        n = 2 - 2 * start;
    }
    a->n = n;
    int64_t taps;
    if (!ir_mul_ok(out, n, &taps) || taps > IR_MAX_TENSOR_BYTES / 8)
        return -1;
    a->idx = malloc(sizeof *a->idx * (size_t)(taps + 1));
    a->w = malloc(sizeof *a->w * (size_t)(taps + 1));
    a->ext = calloc((size_t)out + 1, 1);
    if (!a->idx || !a->w || !a->ext)
        return -1;
    for (int64_t o = 0; o < out; o++) {
        int64_t *ix = &a->idx[o * n];
        double *w = &a->w[o * n];
        if (ident) {
            ix[0] = o;
            w[0] = 1;
            continue;
        }
        double xo = source_coord(p, d, o, in, out);
        if (p->ctm == CT_TF_CROP_AND_RESIZE && (xo < 0 || xo > (double)(in - 1))) {
            a->ext[o] = true;
            for (int j = 0; j < n; j++) {
                ix[j] = 0;
                w[j] = 0;
            }
            continue;
        }
        if (p->mode == RS_NEAREST) {
            /* exclude_outside reweights interpolation kernels only; nearest
             * always copies its (clamped) pixel, as onnxruntime does. */
            ix[0] = nearest_index(p->nearest, xo, in);
            w[0] = 1;
            continue;
        }
        /* Taps sit at base+start .. base+start+n-1 where base = x_ori - r
         * and r in (0, 1]: at an integer x_ori the window leans left, as
         * in the ONNX reference (that tap then has weight 0). */
        double f = floor(xo), r = xo - f;
        if (r == 0)
            r = 1;
        double base = xo - r, sum = 0;
        for (int j = 0; j < n; j++) {
            double pos = base + start + j;
            w[j] = kernel_weight(p, (pos - xo) * s_aa);
            if (p->exclude && (pos < 0 || pos > (double)(in - 1)))
                w[j] = 0;
            sum += w[j];
            ix[j] = clamp_index(pos, in);
        }
        if ((p->antialias || p->exclude) && sum != 0)
            for (int j = 0; j < n; j++)
                w[j] /= sum;
    }
    return 0;
}

static void free_axes(rs_axis *ax, int r)
{
    for (int d = 0; d < r; d++) {
        free(ax[d].idx);
        free(ax[d].w);
        free(ax[d].ext);
    }
}

/* Stores v into an element of y; integer outputs round half to even and
 * saturate, as the ONNX reference does. */
static void store(ir_tensor *y, int64_t i, double v)
{
    if (ir_dtype_is_float(y->dtype)) {
        ir_tensor_setf(y, i, v);
        return;
    }
    bool sg = ir_dtype_is_signed(y->dtype);
    int bits = (int)ir_dtype_size(y->dtype) * 8;
    double lo = sg ? -ldexp(1, bits - 1) : 0, hi = sg ? ldexp(1, bits - 1) - 1 : ldexp(1, bits) - 1;
    v = nearbyint(v);
    if (isnan(v))
        v = 0;
    v = v < lo ? lo : v > hi ? hi : v;
    ir_tensor_setf(y, i, v);
}

/* Nearest: each output element copies one input element (or takes the
 * extrapolation value). */
static void run_nearest(const rs_plan *p, const rs_axis *ax, const ir_tensor *x, ir_tensor *y)
{
    int r = x->rank;
    int64_t xs[IR_MAX_RANK], idx[IR_MAX_RANK] = {0};
    ir_strides(x->dims, r, xs);
    size_t es = ir_dtype_size(x->dtype);
    for (int64_t i = 0; i < y->numel; i++) {
        int64_t off = 0;
        bool ext = false;
        for (int d = 0; d < r; d++) {
            ext |= ax[d].ext[idx[d]];
            off += ax[d].idx[idx[d]] * xs[d];
        }
        if (ext)
            store(y, i, p->extrapolation);
        else
            memcpy((char *)y->data + (size_t)i * es, (const char *)x->data + (size_t)off * es, es);
        ir_index_next(idx, y->dims, r);
    }
}

/* Checked element count of a buffer of doubles with dims. */
static bool buf_size(const int64_t *dims, int r, int64_t *n)
{
    int64_t bytes;
    return ir_numel_ok(dims, r, n) && ir_mul_ok(*n, (int64_t)sizeof(double), &bytes) &&
           bytes <= IR_MAX_TENSOR_BYTES;
}

/* Linear/cubic: resample one axis at a time in double buffers. */
static int run_interp(const rs_plan *p, const rs_axis *ax, const ir_tensor *x, ir_tensor *y,
                      icc_diag *diag, const ir_node *node)
{
    int r = x->rank;
    int64_t dims[IR_MAX_RANK], n;
    memcpy(dims, x->dims, sizeof(int64_t) * (size_t)r);
    double *cur = malloc(sizeof(double) * (size_t)(x->numel + 1));
    if (!cur)
        return ir_node_errorf(diag, node, "out of memory");
    for (int64_t i = 0; i < x->numel; i++)
        cur[i] = ir_tensor_getf(x, i);
    for (int d = 0; d < r; d++) {
        const rs_axis *a = &ax[d];
        if (a->n == 1 && a->in == a->out && !a->ext[0] && a->out > 0) {
            bool ident = true;
            for (int64_t o = 0; o < a->out && ident; o++)
                ident = a->idx[o] == o && !a->ext[o];
            if (ident)
                continue;
        }
        int64_t outer = 1, inner = 1;
        for (int k = 0; k < d; k++)
            outer *= dims[k];
        for (int k = d + 1; k < r; k++)
            inner *= dims[k];
        dims[d] = a->out;
        if (!buf_size(dims, r, &n)) {
            free(cur);
            return ir_node_errorf(diag, node, "intermediate buffer is too large");
        }
        double *nx = malloc(sizeof(double) * (size_t)(n + 1));
        if (!nx) {
            free(cur);
            return ir_node_errorf(diag, node, "out of memory");
        }
        for (int64_t ou = 0; ou < outer; ou++)
            for (int64_t o = 0; o < a->out; o++) {
                double *dst = &nx[(ou * a->out + o) * inner];
                const int64_t *ix = &a->idx[o * a->n];
                const double *w = &a->w[o * a->n];
                for (int64_t in = 0; in < inner; in++) {
                    double acc = 0;
                    if (a->ext[o]) {
                        dst[in] = p->extrapolation;
                        continue;
                    }
                    for (int j = 0; j < a->n; j++)
                        acc += w[j] * cur[(ou * a->in + ix[j]) * inner + in];
                    dst[in] = acc;
                }
            }
        free(cur);
        cur = nx;
    }
    for (int64_t i = 0; i < y->numel; i++)
        store(y, i, cur[i]);
    free(cur);
    return 0;
}

int ref_resize(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    ir_tensor *y = c->out[0];
    ir_type tin[4];
    const ir_type *tp[4] = {NULL, NULL, NULL, NULL};
    int nin = c->nin < 4 ? c->nin : 4;
    for (int i = 0; i < nin; i++)
        if (c->in[i]) {
            ir_type_of_tensor(c->in[i], &tin[i]);
            tp[i] = &tin[i];
        }
    ir_type out_t;
    ir_shape_ctx sc = {.node = c->node, .nin = nin, .nout = 1, .in = tp, .val = c->in,
                       .out = &out_t, .diag = c->diag};
    rs_plan p;
    if (plan_resize(&sc, &tin[0], &p) < 0)
        return -1;
    if (y->numel == 0)
        return 0;
    if (x->numel == 0)
        return ir_node_errorf(c->diag, c->node, "cannot resize an empty input to a non-empty output");
    int r = x->rank, rc = 0;
    rs_axis ax[IR_MAX_RANK];
    memset(ax, 0, sizeof ax);
    for (int d = 0; d < r && rc == 0; d++)
        if (build_axis(&p, d, x->dims[d], y->dims[d], &ax[d]) < 0)
            rc = ir_node_errorf(c->diag, c->node,
                                "resampling kernel of axis %d is too wide (or out of memory)", d);
    if (rc == 0) {
        if (p.mode == RS_NEAREST)
            run_nearest(&p, ax, x, y);
        else
            rc = run_interp(&p, ax, x, y, c->diag, c->node);
    }
    free_axes(ax, r);
    return rc;
}
