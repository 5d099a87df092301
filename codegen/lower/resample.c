/* resample.c - Resize and GridSample as kernels. Both sample an input
 * at computed coordinates with per-dim taps (index, weight) whose tensor
 * product gives each output element, computed in f64 like the reference
 * (ir/ref/resize.c, ir/ref/gridsample.c) with the same operation order, so
 * nearest-neighbour ties pick the same pixel. Resize's scales or sizes
 * (and roi) may be constants, folded into the coordinate formulas, or
 * run-time inputs read by the kernel when the output shape is declared.
 * With constant scales or sizes its dims may be symbolic
 * (cg_resize_symbolic): the formulas then take the run's extents, and a
 * size over a symbolic extent gives a scale computed at run time.
 * Antialias and exclude_outside normalize by the per-axis weight sum,
 * accumulated before the main taps. GridSample reads its coordinates from
 * the grid at run time. Every index is clamped: a tap outside the input
 * (zeros padding), a NaN/huge coordinate or a hostile run-time scale reads
 * index 0 (dropped, or clamped as the reference does), and a run-time tap
 * count never exceeds the planned one. Nearest along an axis whose
 * constant scale maps output o to input o / q for an integer q (checked at
 * compile time with the reference's formulas) reads o / q (in i32 where
 * the extent is a constant), and its last dim is then a vector loop of
 * loads and stores.
 */
#include "codegen/lower/sample.h"
#include "ir/ops.h"

#include <math.h>
#include <string.h>

static kir_expr *sel_or(kir_kernel *k, kir_expr *a, kir_expr *b)
{
    return !a ? b : kir_op2(k, KIR_OR, IR_BOOL, a, b);
}

/* floor(v) as a double, v an f64 expression. */
static kir_expr *ffloor(kir_kernel *k, kir_expr *v) { return kir_op1(k, KIR_FLOOR, IR_F64, v); }

/* ---- Resize ------------------------------------------------------------------ */

enum { RZ_NEAREST, RZ_LINEAR, RZ_CUBIC };
enum { RZ_HALF_PIXEL, RZ_HALF_PIXEL_SYMMETRIC, RZ_PYTORCH_HALF_PIXEL, RZ_ALIGN_CORNERS, RZ_ASYMMETRIC,
       RZ_TF_CROP_AND_RESIZE };
enum { RZ_PREFER_FLOOR, RZ_PREFER_CEIL, RZ_FLOOR, RZ_CEIL };
enum { RZ_STRETCH, RZ_NOT_LARGER, RZ_NOT_SMALLER };

typedef struct rz_plan {
    int mode, ctm, nearest, policy;
    bool antialias, exclude;
    double cubic_a, extrap;
    int r, naxes;
    int which;                    /* the input holding scales (2) or sizes (3) */
    bool rt;                      /* ... known only at run time */
    int64_t in[IR_MAX_RANK], out[IR_MAX_RANK];   /* -1 where symbolic */
    ir_dim ind[IR_MAX_RANK], outd[IR_MAX_RANK];  /* every dim, as the types give it */
    bool sym;                     /* some dim is symbolic (the scales or sizes are then constants) */
    int pos[IR_MAX_RANK];         /* the dim's position in axes, or -1 */
    double scale[IR_MAX_RANK], roi_lo[IR_MAX_RANK], roi_hi[IR_MAX_RANK];
    bool ident[IR_MAX_RANK];      /* the axis is copied as is */
    bool rt_ident[IR_MAX_RANK];   /* ... when its run-time scale is 1 */
    bool rt_taps[IR_MAX_RANK];    /* the tap count follows a run-time scale */
    int start[IR_MAX_RANK];       /* first tap's offset from the base position */
    int ntap[IR_MAX_RANK];        /* tap count (the most, when rt_taps) */
    double saa[IR_MAX_RANK];      /* antialias stretch of the kernel (1: none) */
    bool roi_rt;                  /* tf_crop_and_resize's roi read at run time */
} rz_plan;

static int rz_pick(const char *s, const char *const *names)
{
    for (int i = 0; names[i]; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

/* An optional input: 0 absent (or empty), 1 a non-empty constant, -1 a
 * value only known at run time. */
static int rz_input(const ir_node *n, int i)
{
    if (i >= n->nin || !n->in[i])
        return 0;
    const ir_value *v = n->in[i];
    if (v->kind == IR_VAL_CONST)
        return v->cval.numel > 0 ? 1 : 0;
    if (v->type.rank == 1 && ir_dim_is_const(v->type.dims[0]) && v->type.dims[0].v == 0)
        return 0;
    return -1;
}

/* A run-time input i: 1-D with n values of a float (or integer) dtype. */
static bool rz_rt_input(const ir_node *n, int i, int64_t len, bool flt)
{
    const ir_type *t = &n->in[i]->type;
    return t->rank == 1 && ir_dim_is_const(t->dims[0]) && t->dims[0].v == len &&
           (flt ? ir_dtype_is_float(t->dtype) : ir_dtype_is_int(t->dtype));
}

/* Scales from constant scales or sizes, as the reference derives them. */
static bool rz_const_scales(const ir_node *n, rz_plan *p, const int *axes)
{
    int na = p->naxes;
    const ir_tensor *v = &n->in[p->which]->cval;
    if (v->numel != na)
        return false;
    if (p->which == 2) {
        for (int i = 0; i < na; i++) {
            double s = ir_tensor_getf(v, i);
            if (!(s > 0) || !isfinite(s))
                return false;
            p->scale[axes[i]] = s;
        }
    } else if (p->policy == RZ_STRETCH) {
        /* a symbolic extent's scale is the run's (rz_scale) */
        for (int i = 0; i < na; i++)
            if (p->in[axes[i]] > 0)
                p->scale[axes[i]] = (double)ir_tensor_geti(v, i) / (double)p->in[axes[i]];
    } else {
        /* one scale for every resized axis, keeping the aspect ratio */
        double s = p->policy == RZ_NOT_LARGER ? INFINITY : 0;
        for (int i = 0; i < na; i++) {
            double si = (double)ir_tensor_geti(v, i) / (double)p->in[axes[i]];
            s = p->policy == RZ_NOT_LARGER ? fmin(s, si) : fmax(s, si);
        }
        for (int i = 0; i < na; i++)
            p->scale[axes[i]] = s;
    }
    return true;
}

/* The scale of axis d is known at run time only: read from a run-time
 * input, or constant sizes over a symbolic extent (size / in). */
static bool rz_scale_rt(const rz_plan *p, int d)
{
    return p->pos[d] >= 0 && (p->rt || (p->which == 3 && p->ind[d].sym));
}

/* Tap layout of axis d: fixed, or (antialias with a run-time scale) at
 * most the count of the smallest scale that gives the known output size. */
static bool rz_taps(rz_plan *p, int d)
{
    p->ntap[d] = 1;
    p->saa[d] = 1;
    if (p->ident[d] || p->mode == RZ_NEAREST)
        return true;
    double radius = p->mode == RZ_LINEAR ? 1 : 2, s = p->scale[d];
    if (rz_scale_rt(p, d)) {
        if (!p->antialias) {
            p->start[d] = (int)(1 - radius);
            p->ntap[d] = (int)(2 * radius);
            return true;
        }
        /* over a symbolic extent the scale, and so the count, has no bound */
        if (!p->rt)
            return false;
        /* out = floor(in*s) (or rounded, keeping the aspect ratio) */
        p->rt_taps[d] = true;
        s = p->out[d] > 0 ? ((double)p->out[d] - 0.5) / (double)p->in[d] : 1;
    }
    if (p->antialias && s < 1)
        p->saa[d] = s;
    double st = floor(-radius / p->saa[d]) + 1;
    if (st < -(1 << 20))
        return false;
    p->start[d] = (int)st;
    p->ntap[d] = 2 - 2 * p->start[d];
    return true;
}

/* The whole resampling, fixed from attributes, constant inputs and the
 * (constant) shapes, with scales or sizes possibly read at run time;
 * false for anything the kernel does not handle. */
static bool rz_plan_make(const ir_node *n, rz_plan *p)
{
    static const char *const modes[] = {"nearest", "linear", "cubic", NULL};
    static const char *const ctms[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                       "align_corners", "asymmetric", "tf_crop_and_resize", NULL};
    static const char *const nmodes[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil", NULL};
    static const char *const policies[] = {"stretch", "not_larger", "not_smaller", NULL};
    memset(p, 0, sizeof *p);
    const ir_type *x = &n->in[0]->type, *y = &n->out[0]->type;
    int r = x->rank;
    if (r < 1 || y->rank != r || x->dtype == IR_BOOL || y->dtype != x->dtype)
        return false;
    p->r = r;
    p->mode = rz_pick(ir_attr_string(n, "mode", "nearest"), modes);
    p->ctm = rz_pick(ir_attr_string(n, "coordinate_transformation_mode", "half_pixel"), ctms);
    p->nearest = rz_pick(ir_attr_string(n, "nearest_mode", "round_prefer_floor"), nmodes);
    p->policy = rz_pick(ir_attr_string(n, "keep_aspect_ratio_policy", "stretch"), policies);
    if (p->mode < 0 || p->ctm < 0 || p->nearest < 0 || p->policy < 0)
        return false;
    p->antialias = ir_attr_int(n, "antialias", 0) != 0;
    p->exclude = ir_attr_int(n, "exclude_outside", 0) != 0;
    p->cubic_a = ir_attr_float(n, "cubic_coeff_a", -0.75f);
    p->extrap = ir_attr_float(n, "extrapolation_value", 0.0f);
    if (p->antialias && p->mode == RZ_NEAREST)
        return false;
    /* the products of the constant dims: an empty input that a non-empty
     * output would read is refused (symbolic extents: rz_guard) */
    int64_t numel = 1, in_numel = 1;
    for (int d = 0; d < r; d++) {
        if (x->dims[d].sym < 0 || y->dims[d].sym < 0)
            return false;
        p->ind[d] = x->dims[d];
        p->outd[d] = y->dims[d];
        p->in[d] = x->dims[d].sym ? -1 : x->dims[d].v;
        p->out[d] = y->dims[d].sym ? -1 : y->dims[d].v;
        p->sym |= x->dims[d].sym || y->dims[d].sym;
        numel *= p->out[d] < 0 ? 1 : p->out[d];
        in_numel *= p->in[d] < 0 ? 1 : p->in[d];
        p->scale[d] = 1;
        p->roi_lo[d] = 0;
        p->roi_hi[d] = 1;
        p->pos[d] = -1;
    }
    if (numel > 0 && in_numel == 0)
        return false;
    int axes[IR_MAX_RANK], na;
    const int64_t *ax;
    if ((na = ir_attr_ints(n, "axes", &ax)) < 0) {
        na = r;
        for (int i = 0; i < r; i++)
            axes[i] = i;
    } else {
        if (na > r)
            return false;
        for (int i = 0; i < na; i++) {
            int64_t a = ax[i] < 0 ? ax[i] + r : ax[i];
            if (a < 0 || a >= r || p->pos[a] >= 0)
                return false;
            axes[i] = (int)a;
            p->pos[a] = i;
        }
    }
    p->naxes = na;
    for (int i = 0; i < na; i++)
        p->pos[axes[i]] = i;
    int sc = rz_input(n, 2), sz = rz_input(n, 3), roi = rz_input(n, 1);
    /* an input not known yet counts as given when the other is absent */
    if ((sc != 0) == (sz != 0))
        return false;
    p->which = sc ? 2 : 3;
    p->rt = (sc ? sc : sz) < 0;
    /* run-time scales or sizes are planned from constant extents */
    if (p->rt && (p->sym || !rz_rt_input(n, p->which, na, p->which == 2)))
        return false;
    /* keeping the aspect ratio takes constant extents (shape inference
     * leaves the output of a symbolic one unknown) */
    if (p->policy != RZ_STRETCH && p->which == 3)
        for (int i = 0; i < na; i++)
            if (p->in[axes[i]] < 1)
                return false;
    if (p->ctm == RZ_TF_CROP_AND_RESIZE && roi < 0) {
        if (!rz_rt_input(n, 1, 2 * (int64_t)na, true))
            return false;
        p->roi_rt = true;
    } else if (p->ctm == RZ_TF_CROP_AND_RESIZE && roi) {
        const ir_tensor *t = &n->in[1]->cval;
        if (t->numel != 2 * na)
            return false;
        for (int i = 0; i < na; i++) {
            p->roi_lo[axes[i]] = ir_tensor_getf(t, i);
            p->roi_hi[axes[i]] = ir_tensor_getf(t, na + i);
        }
    }
    if (!p->rt && !rz_const_scales(n, p, axes))
        return false;
    for (int d = 0; d < r; d++) {
        double s = p->scale[d];
        /* the reference's test for an axis it leaves alone; an axis
         * cropped by a run-time roi is never one (its formula gives the
         * identity exactly when the roi is [0, 1]) */
        bool roi_full = p->ctm != RZ_TF_CROP_AND_RESIZE ||
                        ((p->pos[d] < 0 || !p->roi_rt) && fabs(p->roi_lo[d]) <= 1e-9 &&
                         fabs(p->roi_hi[d] - 1) <= 1e-9);
        if (p->rt && p->pos[d] >= 0)
            p->rt_ident[d] = p->out[d] == p->in[d] && roi_full;
        else
            p->ident[d] = ir_dim_eq(p->outd[d], p->ind[d]) && fabs(s - 1) <= 1e-9 * fmax(1, fabs(s)) && roi_full;
        if (!rz_taps(p, d))
            return false;
    }
    return true;
}

bool can_resize(const ir_node *n)
{
    rz_plan p;
    return rz_plan_make(n, &p);
}

/* Whether n, with symbolic dims, is lowered with them as they are: some
 * dim besides a copied batch is symbolic (such a batch alone goes the
 * per-item way: program.c). */
bool cg_resize_symbolic(const ir_node *n)
{
    rz_plan p;
    if (n->op != IR_OP_RESIZE || !rz_plan_make(n, &p))
        return false;
    for (int d = 0; d < p.r; d++)
        if ((p.ind[d].sym || p.outd[d].sym) && (d > 0 || !p.ident[0]))
            return true;
    return false;
}

/* Extent dim plus delta as f64: a constant, or from the run's value. */
static kir_expr *rz_extf(kir_kernel *k, ir_dim dim, double delta)
{
    if (!dim.sym)
        return lw_f64c(k, (double)dim.v + delta);
    kir_expr *v = lw_to_f64(k, kir_sym(k, dim.sym));
    return delta != 0 ? lw_fadd(k, v, lw_f64c(k, delta)) : v;
}

/* The last index of axis d's input (i64). */
static kir_expr *rz_last(kir_kernel *k, const rz_plan *p, int d)
{
    return p->ind[d].sym ? lw_iaddc(k, kir_sym(k, p->ind[d].sym), -1) : lw_i64c(k, p->in[d] - 1);
}

/* Element i of a run-time 1-D input as f64. */
static kir_expr *rz_read(lctx *c, int input, int64_t i)
{
    kir_expr *ix = lw_i64c(c->k, i);
    return lw_to_f64(c->k, kir_load(c->k, c->buf[input], &ix));
}

/* The scale of axis d: a constant, or derived from the run-time scales or
 * sizes, or the constant size and the run's extent, as the reference does
 * (bound in b). */
static kir_expr *rz_scale(lctx *c, const rz_plan *p, kir_block *b, int d)
{
    kir_kernel *k = c->k;
    if (!rz_scale_rt(p, d))
        return lw_f64c(k, p->scale[d]);
    if (!p->rt)
        return lw_let(c, b, lw_fdiv(k, rz_extf(k, p->outd[d], 0), rz_extf(k, p->ind[d], 0)));
    if (p->which == 2)
        return lw_let(c, b, rz_read(c, 2, p->pos[d]));
    if (p->policy == RZ_STRETCH)
        return lw_let(c, b, p->in[d] > 0 ? lw_fdiv(k, rz_read(c, 3, p->pos[d]), lw_f64c(k, (double)p->in[d]))
                                      : lw_f64c(k, 1));
    kir_expr *s = NULL;
    for (int dd = 0; dd < p->r; dd++) {
        if (p->pos[dd] < 0)
            continue;
        kir_expr *si = lw_fdiv(k, rz_read(c, 3, p->pos[dd]), lw_f64c(k, (double)p->in[dd]));
        s = !s ? si : kir_op2(k, p->policy == RZ_NOT_LARGER ? KIR_MIN : KIR_MAX, IR_F64, s, si);
    }
    return lw_let(c, b, s);
}

/* x_original of output position o along axis d at scale s (the
 * reference's formulas and operation order; with a constant scale the
 * backend folds the constant parts exactly as the reference computes
 * them). */
static kir_expr *rz_source(lctx *c, const rz_plan *p, int d, kir_expr *o, kir_expr *s)
{
    kir_kernel *k = c->k;
    kir_expr *fx = lw_to_f64(k, o), *one = lw_f64c(k, 1), *in = rz_extf(k, p->ind[d], 0);
    kir_expr *width = lw_fmul(k, s, in);
    kir_expr *w1 = kir_op2(k, KIR_EQ, IR_BOOL, width, one);
    kir_expr *hp = lw_fsub(k, lw_fdiv(k, lw_fadd(k, fx, lw_f64c(k, 0.5)), s), lw_f64c(k, 0.5));
    switch (p->ctm) {
    case RZ_HALF_PIXEL_SYMMETRIC: {
        kir_expr *adj = lw_fdiv(k, rz_extf(k, p->outd[d], 0), width);
        kir_expr *center = p->ind[d].sym ? lw_fdiv(k, in, lw_f64c(k, 2)) : lw_f64c(k, (double)p->in[d] / 2);
        kir_expr *shift = lw_fmul(k, center, lw_fsub(k, one, adj));
        return lw_fsub(k, lw_fadd(k, shift, lw_fdiv(k, lw_fadd(k, fx, lw_f64c(k, 0.5)), s)), lw_f64c(k, 0.5));
    }
    case RZ_PYTORCH_HALF_PIXEL:
        if (p->outd[d].sym)
            return lw_sel(k, lw_lt(k, lw_i64c(k, 1), kir_sym(k, p->outd[d].sym)), hp, lw_f64c(k, 0));
        return p->out[d] > 1 ? hp : lw_f64c(k, 0);
    case RZ_ALIGN_CORNERS:
        return lw_sel(k, w1, lw_f64c(k, 0),
                      lw_fdiv(k, lw_fmul(k, fx, rz_extf(k, p->ind[d], -1)), lw_fsub(k, width, one)));
    case RZ_ASYMMETRIC:
        return lw_fdiv(k, fx, s);
    case RZ_TF_CROP_AND_RESIZE: {
        kir_expr *lo = lw_f64c(k, p->roi_lo[d]), *hi = lw_f64c(k, p->roi_hi[d]), *span = rz_extf(k, p->ind[d], -1);
        if (p->roi_rt && p->pos[d] >= 0) {
            lo = rz_read(c, 1, p->pos[d]);
            hi = rz_read(c, 1, p->naxes + p->pos[d]);
        }
        kir_expr *xo = lw_sel(k, w1, lw_fdiv(k, lw_fmul(k, lw_fsub(k, hi, lo), span), lw_f64c(k, 2)),
                           lw_fdiv(k, lw_fmul(k, lw_fmul(k, fx, lw_fsub(k, hi, lo)), span), lw_fsub(k, width, one)));
        return lw_fadd(k, xo, lw_fmul(k, lo, span));
    }
    default:
        return hp;
    }
}

/* The reference's clamp of a position to an index in [0, last]. */
static kir_expr *rz_clamp(kir_kernel *k, kir_expr *v, kir_expr *last)
{
    kir_expr *i = kir_op1(k, KIR_CAST, IR_I64, v);
    i = kir_op2(k, KIR_MIN, IR_I64, i, last);
    return lw_sel(k, lw_lt(k, lw_f64c(k, 0), v), i, lw_i64c(k, 0));
}

static kir_expr *rz_nearest(lctx *c, const rz_plan *p, kir_expr *xo, int d)
{
    kir_kernel *k = c->k;
    kir_expr *f = ffloor(k, xo), *up;
    kir_expr *fr = lw_fsub(k, xo, f);
    switch (p->nearest) {
    case RZ_FLOOR: up = kir_const_i(k, IR_BOOL, 0); break;
    case RZ_CEIL: up = kir_op2(k, KIR_NE, IR_BOOL, fr, lw_f64c(k, 0)); break;
    case RZ_PREFER_FLOOR: up = lw_lt(k, lw_f64c(k, 0.5), fr); break;
    default: up = kir_op2(k, KIR_LE, IR_BOOL, lw_f64c(k, 0.5), fr); break;
    }
    return rz_clamp(k, lw_sel(k, up, lw_fadd(k, f, lw_f64c(k, 1)), f), rz_last(k, p, d));
}

/* Interpolation weight at distance t (already stretched). */
static kir_expr *rz_weight(lctx *c, const rz_plan *p, kir_block *b, kir_expr *t)
{
    kir_kernel *k = c->k;
    t = lw_let(c, b, kir_op1(k, KIR_ABS, IR_F64, t));
    kir_expr *one = lw_f64c(k, 1);
    if (p->mode == RZ_LINEAR)
        return lw_sel(k, lw_lt(k, t, one), lw_fsub(k, one, t), lw_f64c(k, 0));
    double a = p->cubic_a;
    /* ((a+2)t - (a+3)) t t + 1 and ((a t - 5a) t + 8a) t - 4a */
    kir_expr *near = lw_fadd(k, lw_fmul(k, lw_fmul(k, lw_fsub(k, lw_fmul(k, lw_f64c(k, a + 2), t), lw_f64c(k, a + 3)), t), t), one);
    kir_expr *far = lw_fsub(k, lw_fmul(k, lw_fadd(k, lw_fmul(k, lw_fsub(k, lw_fmul(k, lw_f64c(k, a), t), lw_f64c(k, 5 * a)), t),
                                          lw_f64c(k, 8 * a)), t), lw_f64c(k, 4 * a));
    return lw_sel(k, kir_op2(k, KIR_LE, IR_BOOL, t, one), near,
               lw_sel(k, lw_lt(k, t, lw_f64c(k, 2)), far, lw_f64c(k, 0)));
}

/* Per resampled axis: x_original, the taps' base position, first offset
 * (f64), count (i64) and the kernel's stretch. */
typedef struct rz_axis {
    kir_expr *xo, *base, *start, *ntap, *saa;
} rz_axis;

/* Weight of tap j of an axis; *pos_out gets the tap's position. */
static kir_expr *rz_tap(lctx *c, const rz_plan *p, kir_block *b, int d, const rz_axis *a, kir_expr *j,
                        kir_expr **pos_out)
{
    kir_kernel *k = c->k;
    kir_expr *pos = lw_let(c, b, lw_fadd(k, lw_fadd(k, a->base, a->start), lw_to_f64(k, j)));
    kir_expr *w = rz_weight(c, p, b, lw_fmul(k, lw_fsub(k, pos, a->xo), a->saa));
    if (p->exclude)
        w = lw_sel(k, sel_or(k, lw_lt(k, pos, lw_f64c(k, 0)), lw_lt(k, rz_extf(k, p->ind[d], -1), pos)),
                lw_f64c(k, 0), w);
    *pos_out = pos;
    return w;
}

/* Fills a for axis d at output position o, binding values in b. */
static int rz_axis_setup(lctx *c, const rz_plan *p, kir_block *b, int d, kir_expr *o, rz_axis *a)
{
    kir_kernel *k = c->k;
    kir_expr *s = rz_scale(c, p, b, d);
    kir_expr *src = rz_source(c, p, d, o, s);
    kir_expr *ident = NULL;
    if (p->rt_ident[d]) {
        /* a run-time scale of ~1 copies the axis, as the reference does */
        kir_expr *dev = kir_op1(k, KIR_ABS, IR_F64, lw_fsub(k, s, lw_f64c(k, 1)));
        kir_expr *tol = lw_fmul(k, lw_f64c(k, 1e-9), kir_op2(k, KIR_MAX, IR_F64, lw_f64c(k, 1), kir_op1(k, KIR_ABS, IR_F64, s)));
        ident = kir_op2(k, KIR_LE, IR_BOOL, dev, tol);
        src = lw_sel(k, ident, lw_to_f64(k, o), src);
    }
    a->xo = lw_let(c, b, src);
    if (p->mode == RZ_NEAREST)
        return a->xo ? 0 : -1;
    /* taps start left of x_original; at an integer x_original a whole
     * step left, as the reference's window leans */
    kir_expr *fr = lw_fsub(k, a->xo, ffloor(k, a->xo));
    fr = lw_sel(k, kir_op2(k, KIR_EQ, IR_BOOL, fr, lw_f64c(k, 0)), lw_f64c(k, 1), fr);
    a->base = lw_let(c, b, lw_fsub(k, a->xo, fr));
    if (!p->rt_taps[d]) {
        a->saa = lw_f64c(k, p->saa[d]);
        a->start = lw_f64c(k, p->start[d]);
        a->ntap = lw_i64c(k, p->ntap[d]);
        return a->base ? 0 : -1;
    }
    kir_expr *plain = kir_op1(k, KIR_NOT, IR_BOOL, lw_lt(k, s, lw_f64c(k, 1)));
    a->saa = lw_let(c, b, lw_sel(k, ident ? kir_op2(k, KIR_OR, IR_BOOL, ident, plain) : plain, lw_f64c(k, 1), s));
    double radius = p->mode == RZ_LINEAR ? 1 : 2;
    /* a hostile scale gives at most the planned count, never a wild loop */
    kir_expr *st = kir_op1(k, KIR_CAST, IR_I64, ffloor(k, lw_fdiv(k, lw_f64c(k, -radius), a->saa)));
    st = lw_let(c, b, kir_iadd(k, kir_op2(k, KIR_MAX, IR_I64, st, lw_i64c(k, -(1 << 20))), lw_i64c(k, 1)));
    a->start = lw_to_f64(k, st);
    a->ntap = lw_let(c, b, kir_op2(k, KIR_MIN, IR_I64, kir_iadd(k, lw_i64c(k, 2), kir_imul(k, lw_i64c(k, -2), st)),
                                lw_i64c(k, p->ntap[d])));
    return a->ntap ? 0 : -1;
}

/* The reference's x_original and nearest index (ir/ref/resize.c's
 * source_coord and nearest_index, same operations in the same order),
 * evaluated here for a constant scale and extents n_in, n_out. */
static double rz_coord_c(const rz_plan *p, int d, int64_t o, int64_t n_in, int64_t n_out)
{
    double s = p->scale[d], fx = (double)o, in = (double)n_in, width = s * in;
    switch (p->ctm) {
    case RZ_HALF_PIXEL_SYMMETRIC:
        return in / 2 * (1 - (double)n_out / width) + (fx + 0.5) / s - 0.5;
    case RZ_PYTORCH_HALF_PIXEL:
        return n_out > 1 ? (fx + 0.5) / s - 0.5 : 0;
    case RZ_ALIGN_CORNERS:
        return width == 1 ? 0 : fx * (in - 1) / (width - 1);
    case RZ_ASYMMETRIC:
        return fx / s;
    default:
        return (fx + 0.5) / s - 0.5;
    }
}

static int64_t rz_nearest_c(const rz_plan *p, double xo, int64_t in)
{
    double f = floor(xo), frac = xo - f, v;
    if (frac == 0)
        v = xo;
    else if (p->nearest == RZ_FLOOR)
        v = f;
    else if (p->nearest == RZ_CEIL)
        v = f + 1;
    else if (p->nearest == RZ_PREFER_FLOOR)
        v = frac <= 0.5 ? f : f + 1;
    else
        v = frac < 0.5 ? f : f + 1;
    if (!(v > 0))
        return 0;
    return v >= (double)(in - 1) ? in - 1 : (int64_t)v;
}

/* Every output position o of an axis of n_in -> n_out reads input o / q. */
static bool rz_repeat_at(const rz_plan *p, int d, int64_t n_in, int64_t n_out, int64_t q)
{
    for (int64_t o = 0; o < n_out; o++)
        if (rz_nearest_c(p, rz_coord_c(p, d, o, n_in, n_out), n_in) != o / q)
            return false;
    return true;
}

/* An integer nearest upsampling of axis d: the factor q when, with a
 * constant scale, every output position o reads input o / q (x2 with
 * half_pixel or asymmetric, the common case), else 0. Checked against the
 * reference's own formulas over the whole axis, so the integer division
 * the kernel does instead picks exactly the reference's pixels. A
 * symbolic axis (an integer scale q, out = in * q) is checked at the
 * extents 1 to 8 instead: with any mode but align_corners (not taken),
 * x_original is o / q plus a fraction that depends on r = o mod q alone,
 * so the pixel read is o / q plus a correction that depends on r alone,
 * clamped at both ends, and the first, a middle and the last block of q
 * positions of those extents show every case. q is kept small so that
 * rounding errors stay far below the fraction's distance from a tie (at
 * least 1/2q). */
static int64_t rz_repeat(const rz_plan *p, int d)
{
    if (p->mode != RZ_NEAREST || p->ident[d] || (p->rt && p->pos[d] >= 0) || p->ctm == RZ_TF_CROP_AND_RESIZE)
        return 0;
    if (!p->ind[d].sym && !p->outd[d].sym) {
        if (p->in[d] < 1 || p->out[d] % p->in[d] || p->out[d] > INT32_MAX)
            return 0;
        int64_t q = p->out[d] / p->in[d];
        return rz_repeat_at(p, d, p->in[d], p->out[d], q) ? q : 0;
    }
    double s = p->scale[d];
    if (p->which != 2 || p->ctm == RZ_ALIGN_CORNERS || !p->ind[d].sym || !p->outd[d].sym || !(s >= 2 && s <= 64) ||
        s != floor(s))
        return 0;
    int64_t q = (int64_t)s;
    for (int64_t in = 1; in <= 8; in++)
        if (!rz_repeat_at(p, d, in, in * q, q))
            return 0;
    return q;
}

/* Constant sizes over a symbolic extent: a run with that extent 0 has no
 * input to read for the output's elements, the reference's error. Checked
 * in body, the first loop's (the kernel stays one parallel loop), where
 * the dims from `first` on still have their loops to run: the run fails
 * when they have elements, and the rest goes in the returned block, which
 * runs only when every such extent has some. NULL on out of memory. */
static kir_block *rz_guard(lctx *c, const rz_plan *p, kir_block *body, int first)
{
    kir_kernel *k = c->k;
    kir_expr *empty = NULL, *bad;
    for (int d = 0; d < p->r; d++)
        if (p->pos[d] >= 0 && p->which == 3 && p->ind[d].sym)
            empty = sel_or(k, empty, kir_op2(k, KIR_EQ, IR_BOOL, kir_sym(k, p->ind[d].sym), lw_i64c(k, 0)));
    if (!empty)
        return body;
    bad = empty;
    for (int d = first; d < p->r; d++) {
        if (p->out[d] == 0)
            return body;   /* nothing is read */
        if (p->outd[d].sym)
            bad = kir_op2(k, KIR_AND, IR_BOOL, bad, lw_lt(k, lw_i64c(k, 0), kir_sym(k, p->outd[d].sym)));
    }
    kir_stmt *chk = kir_if(k, body, bad);
    char msg[300];
    snprintf(msg, sizeof msg, "node '%.200s' (%s): cannot resize an empty input to a non-empty output", c->n->name,
             ir_ops[c->n->op].name);
    if (!chk || !kir_fail(k, &chk->body, msg))
        return NULL;
    kir_stmt *go = kir_if(k, body, kir_op1(k, KIR_NOT, IR_BOOL, empty));
    return go ? &go->body : NULL;
}

static int lower_resize_plan(lctx *c, const rz_plan *p)
{
    kir_kernel *k = c->k;
    int r = p->r;
    bool interp = p->mode != RZ_NEAREST, norm = p->antialias || p->exclude;
    kir_block *body = &k->body;
    kir_expr *ov[IR_MAX_RANK], *idx[IR_MAX_RANK];
    rz_axis ax[IR_MAX_RANK];
    kir_expr *ext = NULL, *div = NULL;
    /* Leading copied dims (batch, channels) share one parallel loop, so
     * a batch of 1 still splits across threads. */
    int lead = 0, merged = 0;
    while (lead < r && p->ident[lead])
        lead++;
    if (lead >= 2) {
        /* their extents' product: the constants' times the run's */
        int64_t ct = 1;
        kir_expr *total = NULL;
        for (int d = 0; d < lead; d++) {
            if (!p->outd[d].sym)
                ct *= p->out[d];
            else
                total = total ? kir_imul(k, total, kir_sym(k, p->outd[d].sym)) : kir_sym(k, p->outd[d].sym);
        }
        /* fewer than par_min of them (a blocked Resize of one channel
         * block, [1, 1, H, W, cb]): the first resized dim joins the
         * parallel loop, if constant and not the last */
        merged = !total && ct < c->s->par_min && lead < r - 1 && !p->outd[lead].sym;
        if (merged)
            ct *= p->out[lead];
        total = total ? lw_imulc(k, total, ct) : lw_i64c(k, ct);
        int v = kir_new_var(k);
        kir_stmt *l = lw_loop(c, body, v, total, KIR_PARALLEL);
        if (!l)
            return -1;
        body = &l->body;
        kir_expr *stride = lw_i64c(k, 1);
        for (int d = lead + merged - 1; d >= 0; d--) {
            kir_expr *q = kir_op2(k, KIR_DIV, IR_I64, kir_var(k, v), stride);
            ov[d] = idx[d] = kir_op2(k, KIR_REM, IR_I64, q, lw_dim_of(k, p->outd[d]));
            stride = kir_imul(k, stride, lw_dim_of(k, p->outd[d]));
        }
        if (!(body = rz_guard(c, p, body, lead + merged)))
            return -1;
    } else {
        lead = 0;
    }
    for (int d = lead; d < r; d++) {
        int64_t q = rz_repeat(p, d);
        if (!(merged && d == lead)) {
            int v = kir_new_var(k);
            /* nearest's last dim, copied or repeated, is a vector loop of
             * loads (a gather of o / q) and stores: no f64 per element */
            bool vec = !interp && d == r - 1 && d > 0 && (p->ident[d] || q > 0);
            kir_stmt *l = kir_for(k, body, v, lw_i64c(k, 0), lw_dim_of(k, p->outd[d]),
                                  d == 0 ? KIR_PARALLEL : vec ? KIR_VECTOR : KIR_SERIAL, vec ? c->s->lanes : 0);
            if (!l)
                return -1;
            body = &l->body;
            if (d == 0 && !(body = rz_guard(c, p, body, 1)))
                return -1;
            ov[d] = idx[d] = kir_var(k, v);
        }
        if (p->ident[d])
            continue;
        if (q > 0 && p->outd[d].sym) {
            /* the run's extent may pass i32's; clamped, so a read stays
             * in the input whatever the dims */
            idx[d] = lw_imin(k, lw_idivc(k, ov[d], q), rz_last(k, p, d));
            continue;
        }
        if (q > 0) {
            /* i32 division by a constant, which LLVM vectorises */
            kir_expr *o32 = kir_op1(k, KIR_CAST, IR_I32, ov[d]);
            idx[d] = kir_op1(k, KIR_CAST, IR_I64, kir_op2(k, KIR_DIV, IR_I32, o32, kir_const_i(k, IR_I32, q)));
            continue;
        }
        rz_axis *a = &ax[d];
        if (rz_axis_setup(c, p, body, d, ov[d], a) < 0)
            return -1;
        if (p->ctm == RZ_TF_CROP_AND_RESIZE)
            ext = sel_or(k, ext, sel_or(k, lw_lt(k, a->xo, lw_f64c(k, 0)), lw_lt(k, rz_extf(k, p->ind[d], -1), a->xo)));
        if (!interp) {
            idx[d] = lw_let(c, body, rz_nearest(c, p, a->xo, d));
            continue;
        }
        if (!norm)
            continue;
        int sum = kir_new_acc(k, IR_F64), jv = kir_new_var(k);
        if (sum < 0 || !kir_acc_set(k, body, sum, lw_f64c(k, 0)))
            return -1;
        kir_stmt *lj = kir_for(k, body, jv, lw_i64c(k, 0), a->ntap, KIR_SERIAL, 0);
        if (!lj)
            return -1;
        kir_expr *pos;
        kir_expr *w = rz_tap(c, p, &lj->body, d, a, kir_var(k, jv), &pos);
        if (!kir_acc_set(k, &lj->body, sum, lw_fadd(k, kir_acc(k, sum), w)))
            return -1;
        kir_expr *s = kir_acc(k, sum);
        s = lw_let(c, body, lw_sel(k, kir_op2(k, KIR_EQ, IR_BOOL, s, lw_f64c(k, 0)), lw_f64c(k, 1), s));
        div = div ? lw_fmul(k, div, s) : s;
    }
    kir_expr *value;
    if (!interp) {
        value = kir_load(k, c->buf[0], idx);
    } else {
        int acc = kir_new_acc(k, IR_F64);
        if (acc < 0 || !kir_acc_set(k, body, acc, lw_f64c(k, 0)))
            return -1;
        kir_block *inner = body;
        kir_expr *wp = NULL;
        for (int d = 0; d < r; d++) {
            if (p->ident[d])
                continue;
            int jv = kir_new_var(k);
            kir_stmt *lj = kir_for(k, inner, jv, lw_i64c(k, 0), ax[d].ntap, KIR_SERIAL, 0);
            if (!lj)
                return -1;
            inner = &lj->body;
            kir_expr *pos;
            kir_expr *w = rz_tap(c, p, inner, d, &ax[d], kir_var(k, jv), &pos);
            wp = lw_let(c, inner, wp ? lw_fmul(k, wp, w) : w);
            idx[d] = lw_let(c, inner, rz_clamp(k, pos, rz_last(k, p, d)));
        }
        kir_expr *x = lw_to_f64(k, kir_load(k, c->buf[0], idx));
        kir_expr *term = wp ? lw_fmul(k, wp, x) : x;
        if (!kir_acc_set(k, inner, acc, lw_fadd(k, kir_acc(k, acc), term)))
            return -1;
        value = kir_acc(k, acc);
        if (div)
            value = lw_fdiv(k, value, div);
        value = misc_f64_to_out(c, 0, value, true);
    }
    if (ext)
        value = lw_sel(k, ext, misc_f64_to_out(c, 0, lw_f64c(k, p->extrap), true), value);
    return kir_store(k, body, c->out, ov, value) ? 0 : -1;
}

int lower_resize(lctx *c)
{
    rz_plan p;
    return rz_plan_make(c->n, &p) ? lower_resize_plan(c, &p) : -1;
}

/* ---- GridSample ------------------------------------------------------------------ */

enum { GS_NEAREST, GS_LINEAR, GS_CUBIC };
enum { GS_ZEROS, GS_BORDER, GS_REFLECTION };

static bool gs_modes(const ir_node *n, int *mode, int *pad)
{
    const char *m = ir_attr_string(n, "mode", "linear"), *pd = ir_attr_string(n, "padding_mode", "zeros");
    *mode = !strcmp(m, "nearest") ? GS_NEAREST
          : !strcmp(m, "linear") || !strcmp(m, "bilinear") ? GS_LINEAR
          : !strcmp(m, "cubic") || !strcmp(m, "bicubic") ? GS_CUBIC : -1;
    *pad = !strcmp(pd, "zeros") ? GS_ZEROS : !strcmp(pd, "border") ? GS_BORDER
         : !strcmp(pd, "reflection") ? GS_REFLECTION : -1;
    return *mode >= 0 && *pad >= 0;
}

bool can_grid_sample(const ir_node *n)
{
    const ir_type *x = &n->in[0]->type, *g = &n->in[1]->type, *y = &n->out[0]->type;
    int mode, pad;
    if (!gs_modes(n, &mode, &pad) || x->rank < 3 || g->rank != x->rank || y->rank != x->rank ||
        x->dtype == IR_BOOL || !ir_dtype_is_float(g->dtype) || y->dtype != x->dtype)
        return false;
    int64_t in_sp = 1, numel = 1;
    for (int d = 0; d < x->rank; d++) {
        if (!ir_dim_is_const(x->dims[d]) || !ir_dim_is_const(g->dims[d]) || !ir_dim_is_const(y->dims[d]))
            return false;
        numel *= y->dims[d].v;
        if (d >= 2)
            in_sp *= x->dims[d].v;
    }
    return g->dims[x->rank - 1].v == x->rank - 2 && (in_sp > 0 || numel == 0);
}

/* x folded into [lo, hi] by reflections (x known to be outside it), with
 * helper values bound in b. */
static kir_expr *gs_reflect(lctx *c, kir_block *b, kir_expr *x, double lo, double hi)
{
    kir_kernel *k = c->k;
    double range = hi - lo;
    if (range <= 0)
        return lw_f64c(k, lo);
    kir_expr *below = lw_lt(k, x, lw_f64c(k, lo));
    kir_expr *dx = lw_let(c, b, lw_sel(k, below, lw_fsub(k, lw_f64c(k, lo), x), lw_fsub(k, x, lw_f64c(k, hi))));
    kir_expr *nr = lw_let(c, b, ffloor(k, lw_fdiv(k, dx, lw_f64c(k, range))));
    kir_expr *rr = lw_let(c, b, lw_fsub(k, dx, lw_fmul(k, nr, lw_f64c(k, range))));
    kir_expr *odd = kir_op2(k, KIR_NE, IR_BOOL, kir_op2(k, KIR_REM, IR_F64, nr, lw_f64c(k, 2)), lw_f64c(k, 0));
    kir_expr *lo_r = lw_fadd(k, lw_f64c(k, lo), rr), *hi_r = lw_fsub(k, lw_f64c(k, hi), rr);
    kir_expr *v = lw_sel(k, below, lw_sel(k, odd, hi_r, lo_r), lw_sel(k, odd, lo_r, hi_r));
    kir_expr *finite = kir_op2(k, KIR_EQ, IR_BOOL, lw_fsub(k, x, x), lw_f64c(k, 0));
    return lw_sel(k, finite, v, lw_f64c(k, lo));
}

static kir_expr *gs_outside(kir_kernel *k, kir_expr *x, double lo, double hi)
{
    return sel_or(k, lw_lt(k, x, lw_f64c(k, lo)), lw_lt(k, lw_f64c(k, hi), x));
}

/* Clamp to [0, len-1] (NaN passes through, as in the reference). */
static kir_expr *gs_border(kir_kernel *k, kir_expr *x, int64_t len)
{
    kir_expr *top = lw_f64c(k, (double)(len - 1));
    return lw_sel(k, lw_lt(k, x, lw_f64c(k, 0)), lw_f64c(k, 0), lw_sel(k, lw_lt(k, top, x), top, x));
}

/* Cubic weight of tap j (0..3) at fraction t (Keys, a = -0.75). */
static kir_expr *gs_cubic(lctx *c, kir_expr *t, kir_expr *j)
{
    kir_kernel *k = c->k;
    const double a = -0.75;
    kir_expr *one = lw_f64c(k, 1);
    kir_expr *s = lw_fadd(k, t, one), *u = lw_fsub(k, one, t), *v = lw_fsub(k, lw_f64c(k, 2), t);
#define GS_FAR(q) lw_fsub(k, lw_fmul(k, lw_fadd(k, lw_fmul(k, lw_fsub(k, lw_fmul(k, lw_f64c(k, a), q), lw_f64c(k, 5 * a)), q), lw_f64c(k, 8 * a)), q), lw_f64c(k, 4 * a))
#define GS_NEAR(q) lw_fadd(k, lw_fmul(k, lw_fmul(k, lw_fsub(k, lw_fmul(k, lw_f64c(k, a + 2), q), lw_f64c(k, a + 3)), q), q), one)
    kir_expr *w0 = GS_FAR(s), *w1 = GS_NEAR(t), *w2 = GS_NEAR(u), *w3 = GS_FAR(v);
#undef GS_FAR
#undef GS_NEAR
    kir_expr *r = lw_sel(k, kir_op2(k, KIR_EQ, IR_BOOL, j, lw_i64c(k, 2)), w2, w3);
    r = lw_sel(k, kir_op2(k, KIR_EQ, IR_BOOL, j, lw_i64c(k, 1)), w1, r);
    return lw_sel(k, kir_op2(k, KIR_EQ, IR_BOOL, j, lw_i64c(k, 0)), w0, r);
}

static int lower_grid_sample_modes(lctx *c, int mode, int pad)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *tx = &n->in[0]->type, *ty = &n->out[0]->type;
    int rank = tx->rank, r = rank - 2;
    bool align = ir_attr_int(n, "align_corners", 0) != 0;
    kir_block *body = &k->body;
    /* batch and the first output dim share the parallel loop */
    int nv = kir_new_var(k);
    int64_t d1 = ty->dims[2].v;
    kir_stmt *l = lw_loop(c, body, nv, lw_i64c(k, ty->dims[0].v * d1), KIR_PARALLEL);
    if (!l)
        return -1;
    body = &l->body;
    kir_expr *yi[IR_MAX_RANK], *gi[IR_MAX_RANK], *xi[IR_MAX_RANK];
    yi[0] = gi[0] = xi[0] = kir_op2(k, KIR_DIV, IR_I64, kir_var(k, nv), lw_i64c(k, d1));
    yi[2] = gi[1] = kir_op2(k, KIR_REM, IR_I64, kir_var(k, nv), lw_i64c(k, d1));
    for (int i = 1; i < r; i++) {
        int v = kir_new_var(k);
        if (!(l = lw_loop(c, body, v, lw_i64c(k, ty->dims[2 + i].v), KIR_SERIAL)))
            return -1;
        body = &l->body;
        yi[2 + i] = gi[1 + i] = kir_var(k, v);
    }
    /* per spatial dim: the padded coordinate and whether it is usable;
     * the grid's last axis lists the last spatial dim first */
    kir_expr *X[IR_MAX_RANK], *ok[IR_MAX_RANK];
    double lo[IR_MAX_RANK], hi[IR_MAX_RANK];
    for (int i = 0; i < r; i++) {
        int64_t len = tx->dims[2 + i].v;
        lo[i] = align ? 0 : -0.5;
        hi[i] = align ? (double)(len - 1) : (double)len - 0.5;
        gi[rank - 1] = lw_i64c(k, r - 1 - i);
        kir_expr *g = lw_to_f64(k, kir_load(k, c->buf[1], gi));
        kir_expr *one = lw_f64c(k, 1);
        kir_expr *x = align ? lw_fmul(k, lw_fdiv(k, lw_fadd(k, g, one), lw_f64c(k, 2)), lw_f64c(k, (double)(len - 1)))
                            : lw_fdiv(k, lw_fsub(k, lw_fmul(k, lw_fadd(k, g, one), lw_f64c(k, (double)len)), one), lw_f64c(k, 2));
        if (mode == GS_NEAREST)
            x = kir_op1(k, KIR_ROUND, IR_F64, x);
        x = lw_let(c, body, x);
        if (pad == GS_BORDER)
            x = lw_let(c, body, lw_sel(k, gs_outside(k, x, lo[i], hi[i]), gs_border(k, x, len), x));
        else if (pad == GS_REFLECTION)
            x = lw_let(c, body, lw_sel(k, gs_outside(k, x, lo[i], hi[i]), gs_reflect(c, body, x, lo[i], hi[i]), x));
        X[i] = x;
        ok[i] = kir_op2(k, KIR_LE, IR_BOOL, kir_op1(k, KIR_ABS, IR_F64, x), lw_f64c(k, 0x1p52));
    }
    int cv = kir_new_var(k);
    if (!(l = lw_loop(c, body, cv, lw_i64c(k, ty->dims[1].v), KIR_SERIAL)))
        return -1;
    body = &l->body;
    yi[1] = xi[1] = kir_var(k, cv);
    int acc = kir_new_acc(k, IR_F64);
    if (acc < 0 || !kir_acc_set(k, body, acc, lw_f64c(k, 0)))
        return -1;
    kir_block *inner = body;
    kir_expr *wp = NULL, *vp = NULL;
    int ntap = mode == GS_NEAREST ? 1 : mode == GS_LINEAR ? 2 : 4;
    for (int i = 0; i < r; i++) {
        int64_t len = tx->dims[2 + i].v;
        int jv = kir_new_var(k);
        if (!(l = lw_loop(c, inner, jv, lw_i64c(k, ntap), KIR_SERIAL)))
            return -1;
        inner = &l->body;
        kir_expr *j = kir_var(k, jv), *pos, *w;
        /* trunc through i64 is exact: |X| <= 2^52 wherever the tap is used */
        kir_expr *x0 = ffloor(k, X[i]);
        if (mode == GS_NEAREST) {
            pos = lw_to_f64(k, kir_op1(k, KIR_CAST, IR_I64, X[i]));
            w = lw_f64c(k, 1);
        } else if (mode == GS_LINEAR) {
            pos = lw_fadd(k, x0, lw_to_f64(k, j));
            kir_expr *f = lw_fsub(k, X[i], x0);
            w = lw_sel(k, kir_op2(k, KIR_EQ, IR_BOOL, j, lw_i64c(k, 0)), lw_fsub(k, lw_f64c(k, 1), f), f);
        } else {
            pos = lw_fadd(k, lw_fsub(k, x0, lw_f64c(k, 1)), lw_to_f64(k, j));
            w = gs_cubic(c, lw_let(c, inner, lw_fsub(k, X[i], x0)), j);
        }
        pos = lw_let(c, inner, pos);
        if (pad == GS_BORDER) {
            pos = gs_border(k, pos, len);
        } else if (pad == GS_REFLECTION) {
            kir_expr *rf = gs_reflect(c, inner, pos, lo[i], hi[i]);
            pos = lw_sel(k, gs_outside(k, pos, lo[i], hi[i]), rf, pos);
            pos = lw_to_f64(k, kir_op1(k, KIR_CAST, IR_I64, pos));
        }
        pos = lw_let(c, inner, pos);
        kir_expr *valid = kir_op2(k, KIR_AND, IR_BOOL, ok[i],
                                  kir_op2(k, KIR_AND, IR_BOOL, kir_op2(k, KIR_LE, IR_BOOL, lw_f64c(k, 0), pos),
                                          lw_lt(k, pos, lw_f64c(k, (double)len))));
        valid = lw_let(c, inner, lw_sel(k, valid, lw_i64c(k, 1), lw_i64c(k, 0)));
        kir_expr *vb = kir_op2(k, KIR_NE, IR_BOOL, valid, lw_i64c(k, 0));
        xi[2 + i] = lw_let(c, inner, lw_sel(k, vb, kir_op1(k, KIR_CAST, IR_I64, pos), lw_i64c(k, 0)));
        vp = lw_let(c, inner, vp ? kir_imul(k, vp, valid) : valid);
        wp = lw_let(c, inner, wp ? lw_fmul(k, wp, w) : w);
    }
    kir_expr *x = lw_to_f64(k, kir_load(k, c->buf[0], xi));
    kir_expr *term = lw_sel(k, kir_op2(k, KIR_NE, IR_BOOL, vp, lw_i64c(k, 0)), lw_fmul(k, wp, x), lw_f64c(k, 0));
    if (!kir_acc_set(k, inner, acc, lw_fadd(k, kir_acc(k, acc), term)))
        return -1;
    return kir_store(k, body, c->out, yi, misc_f64_to_out(c, 0, kir_acc(k, acc), false)) ? 0 : -1;
}

int lower_grid_sample(lctx *c)
{
    int mode, pad;
    return gs_modes(c->n, &mode, &pad) ? lower_grid_sample_modes(c, mode, pad) : -1;
}
