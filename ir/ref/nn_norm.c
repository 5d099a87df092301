/* nn_norm.c - shape functions and reference kernels of the normalizations:
 * BatchNormalization (inference only), InstanceNormalization,
 * LayerNormalization, GroupNormalization, RMSNormalization,
 * MeanVarianceNormalization, LpNormalization and LRN.
 *
 * Statistics are computed in double in two passes (mean, then the mean
 * of squared deviations), so the variance never goes negative and large
 * offsets do not cancel. */
#include "ir/ref/nn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Error unless input j is a vector of per-channel values (C of them). */
static int per_channel(ir_shape_ctx *c, int j, ir_dim ch, const char *what)
{
    const ir_type *t = j < c->nin ? c->in[j] : NULL;
    if (!t || t->rank < 0)
        return 0;
    if (!ir_dtype_is_float(t->dtype))
        return ir_node_errorf(c->diag, c->node, "%s must be a float tensor, got %s", what,
                              ir_dtype_name(t->dtype));
    if (t->rank != 1)
        return ir_node_errorf(c->diag, c->node, "%s must have rank 1, got rank %d", what, t->rank);
    if (ir_dim_is_const(t->dims[0]) && ir_dim_is_const(ch) && t->dims[0].v != ch.v)
        return ir_node_errorf(c->diag, c->node, "%s has %lld values for %lld channels", what,
                              (long long)t->dims[0].v, (long long)ch.v);
    return 0;
}

/* Error unless input j broadcasts unidirectionally to x. */
static int bcast_to(ir_shape_ctx *c, int j, const ir_type *x, const char *what)
{
    const ir_type *t = j < c->nin ? c->in[j] : NULL;
    if (!t || t->rank < 0 || x->rank < 0)
        return 0;
    if (t->rank > x->rank)
        return ir_node_errorf(c->diag, c->node, "%s has rank %d, more than the input's %d", what,
                              t->rank, x->rank);
    for (int i = 0; i < t->rank; i++) {
        ir_dim a = t->dims[i], b = x->dims[x->rank - t->rank + i];
        if (ir_dim_is_const(a) && a.v != 1 && ir_dim_is_const(b) && a.v != b.v)
            return ir_node_errorf(c->diag, c->node,
                                  "%s dim %d is %lld; it must be 1 or %lld to broadcast to the input",
                                  what, i, (long long)a.v, (long long)b.v);
    }
    return 0;
}

static ir_dim channels(const ir_type *x)
{
    return x->rank >= 2 ? x->dims[1] : ir_dim_unknown();
}

/* Mean and variance (population) of n values at x[base + i*stride]. */
static void moments(const ir_tensor *x, int64_t base, int64_t stride, int64_t n, double *mean,
                    double *var)
{
    double s = 0, q = 0;
    for (int64_t i = 0; i < n; i++)
        s += ir_tensor_getf(x, base + i * stride);
    *mean = n ? s / (double)n : 0;
    for (int64_t i = 0; i < n; i++) {
        double dv = ir_tensor_getf(x, base + i * stride) - *mean;
        q += dv * dv;
    }
    *var = n ? q / (double)n : 0;
}

/* ---- BatchNormalization ----------------------------------------------- */

int shape_batchnorm(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    if (ir_attr_int(c->node, "training_mode", 0) != 0)
        return ir_node_errorf(c->diag, c->node, "training mode is not supported");
    if (c->nout > 1)
        return ir_node_errorf(c->diag, c->node,
                              "running mean and variance outputs exist only in training mode");
    if (x->rank >= 0 && x->rank < 2)
        return ir_node_errorf(c->diag, c->node, "input must have rank >= 2 (N, C, ...), got rank %d",
                              x->rank);
    static const char *const names[] = {"", "scale", "B", "input_mean", "input_var"};
    for (int j = 1; j < 5; j++)
        if (per_channel(c, j, channels(x), names[j]) < 0)
            return -1;
    c->out[0] = *x;
    return 0;
}

int ref_batchnorm(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0], *sc = c->in[1], *b = c->in[2], *mu = c->in[3], *var = c->in[4];
    ir_tensor *y = c->out[0];
    double eps = ir_attr_float(c->node, "epsilon", 1e-5f);
    int64_t ch = x->dims[1], inner = nn_prod(x->dims + 2, x->rank - 2);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t k = (i / inner) % ch;
        double v = (ir_tensor_getf(x, i) - ir_tensor_getf(mu, k)) /
                   sqrt(ir_tensor_getf(var, k) + eps);
        ir_tensor_setf(y, i, ir_tensor_getf(sc, k) * v + ir_tensor_getf(b, k));
    }
    return 0;
}

/* ---- InstanceNormalization, GroupNormalization --------------------------- */

int shape_instancenorm(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    if (x->rank >= 0 && x->rank < 3)
        return ir_node_errorf(c->diag, c->node,
                              "input must have rank >= 3 (N, C, spatial dims), got rank %d",
                              x->rank);
    if (per_channel(c, 1, channels(x), "scale") < 0 || per_channel(c, 2, channels(x), "B") < 0)
        return -1;
    c->out[0] = *x;
    return 0;
}

int ref_instancenorm(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0], *sc = c->in[1], *b = c->in[2];
    ir_tensor *y = c->out[0];
    double eps = ir_attr_float(c->node, "epsilon", 1e-5f);
    int64_t ch = x->dims[1], len = nn_prod(x->dims + 2, x->rank - 2);
    for (int64_t p = 0; p < x->dims[0] * ch; p++) {
        double mean, var;
        moments(x, p * len, 1, len, &mean, &var);
        double inv = 1 / sqrt(var + eps), s = ir_tensor_getf(sc, p % ch), bb = ir_tensor_getf(b, p % ch);
        for (int64_t i = 0; i < len; i++)
            ir_tensor_setf(y, p * len + i, s * (ir_tensor_getf(x, p * len + i) - mean) * inv + bb);
    }
    return 0;
}

/* Scale and bias are per channel (opset 21) or, as opset 18 had them,
 * per group; the two agree when groups == channels. */
int shape_groupnorm(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    int64_t g = ir_attr_int(c->node, "num_groups", 0);
    if (g < 1)
        return ir_node_errorf(c->diag, c->node, "num_groups is %lld; it must be >= 1", (long long)g);
    if (x->rank >= 0 && x->rank < 2)
        return ir_node_errorf(c->diag, c->node, "input must have rank >= 2 (N, C, ...), got rank %d",
                              x->rank);
    ir_dim ch = channels(x);
    if (ir_dim_is_const(ch) && ch.v % g)
        return ir_node_errorf(c->diag, c->node, "num_groups %lld does not divide the %lld channels",
                              (long long)g, (long long)ch.v);
    for (int j = 1; j < 3; j++) {
        const ir_type *t = c->in[j];
        bool per_group = t->rank == 1 && ir_dim_is_const(t->dims[0]) && t->dims[0].v == g;
        if (!per_group && per_channel(c, j, ch, j == 1 ? "scale" : "bias") < 0)
            return -1;
    }
    c->out[0] = *x;
    return 0;
}

int ref_groupnorm(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0], *sc = c->in[1], *b = c->in[2];
    ir_tensor *y = c->out[0];
    double eps = ir_attr_float(c->node, "epsilon", 1e-5f);
    int64_t g = ir_attr_int(c->node, "num_groups", 1);
    int64_t ch = x->dims[1], len = nn_prod(x->dims + 2, x->rank - 2), cg = ch / g;
    for (int64_t p = 0; p < x->dims[0] * g; p++) {
        double mean, var;
        int64_t base = p * cg * len;
        moments(x, base, 1, cg * len, &mean, &var);
        double inv = 1 / sqrt(var + eps);
        for (int64_t i = 0; i < cg * len; i++) {
            int64_t k = (p % g) * cg + i / len;
            int64_t ks = sc->numel == ch ? k : k / cg, kb = b->numel == ch ? k : k / cg;
            double v = (ir_tensor_getf(x, base + i) - mean) * inv;
            ir_tensor_setf(y, base + i, ir_tensor_getf(sc, ks) * v + ir_tensor_getf(b, kb));
        }
    }
    return 0;
}

/* ---- LayerNormalization, RMSNormalization -------------------------------- */

static int stash_dtype(ir_shape_ctx *c, ir_dtype *dt)
{
    int64_t st = ir_attr_int(c->node, "stash_type", 1);
    *dt = st >= 0 && st < 1000 ? ir_dtype_from_onnx((int)st) : IR_UNDEF;
    if (!ir_dtype_is_float(*dt))
        return ir_node_errorf(c->diag, c->node, "stash_type %lld is not a float type", (long long)st);
    return 0;
}

/* Y is X's type; Mean and InvStdDev keep the dims before axis and have 1
 * for the normalized ones, in the stash type. */
int shape_layernorm(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    ir_dtype st;
    if (stash_dtype(c, &st) < 0)
        return -1;
    if (nn_same_dtype(c, 1) < 0 || nn_same_dtype(c, 2) < 0)
        return -1;
    int axis = 0;
    if (x->rank == 0)
        return ir_node_errorf(c->diag, c->node, "input must have rank >= 1");
    if (x->rank > 0 && ir_norm_axis(c, ir_attr_int(c->node, "axis", -1), x->rank, &axis) < 0)
        return -1;
    if (bcast_to(c, 1, x, "Scale") < 0 || bcast_to(c, 2, x, "B") < 0)
        return -1;
    c->out[0] = *x;
    for (int k = 1; k < c->nout; k++) {
        c->out[k] = *x;
        c->out[k].dtype = st;
        for (int i = axis; i < x->rank; i++)
            c->out[k].dims[i] = ir_dim_const(1);
    }
    return 0;
}

int shape_rmsnorm(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    ir_dtype st;
    int axis;
    if (stash_dtype(c, &st) < 0 || nn_same_dtype(c, 1) < 0)
        return -1;
    if (x->rank == 0)
        return ir_node_errorf(c->diag, c->node, "input must have rank >= 1");
    if (x->rank > 0 && ir_norm_axis(c, ir_attr_int(c->node, "axis", -1), x->rank, &axis) < 0)
        return -1;
    if (bcast_to(c, 1, x, "scale") < 0)
        return -1;
    c->out[0] = *x;
    return 0;
}

/* LayerNorm and RMSNorm: each row (dims from axis on) is scaled by
 * 1/sqrt(var + eps), centred first for LayerNorm; Scale and B broadcast
 * against the full input. */
int ref_layernorm(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0], *sc = c->in[1];
    const ir_tensor *b = c->node->op == IR_OP_LAYER_NORMALIZATION && c->nin > 2 ? c->in[2] : NULL;
    bool rms = c->node->op == IR_OP_RMS_NORMALIZATION;
    double eps = ir_attr_float(c->node, "epsilon", 1e-5f);
    int axis;
    if (ir_ref_norm_axis(c, ir_attr_int(c->node, "axis", -1), x->rank, &axis) < 0)
        return -1;
    int64_t rows = nn_prod(x->dims, axis), cols = nn_prod(x->dims + axis, x->rank - axis);
    int64_t idx[IR_MAX_RANK] = {0};
    for (int64_t r = 0; r < rows; r++) {
        int64_t base = r * cols;
        double mean, var;
        if (rms) {
            double q = 0;
            for (int64_t i = 0; i < cols; i++) {
                double v = ir_tensor_getf(x, base + i);
                q += v * v;
            }
            mean = 0;
            var = cols ? q / (double)cols : 0;
        } else {
            moments(x, base, 1, cols, &mean, &var);
        }
        double inv = 1 / sqrt(var + eps);
        for (int64_t i = 0; i < cols; i++, ir_index_next(idx, x->dims, x->rank)) {
            double v = (ir_tensor_getf(x, base + i) - mean) * inv;
            v *= ir_tensor_getf(sc, ir_bcast_offset(sc, idx, x->rank));
            if (b)
                v += ir_tensor_getf(b, ir_bcast_offset(b, idx, x->rank));
            ir_tensor_setf(c->out[0], base + i, v);
        }
        if (c->nout > 1 && c->out[1])
            ir_tensor_setf(c->out[1], r, mean);
        if (c->nout > 2 && c->out[2])
            ir_tensor_setf(c->out[2], r, inv);
    }
    return 0;
}

/* ---- MeanVarianceNormalization ----------------------------------------- */

/* Which dims the axes attribute (default [0, 2, 3]) names, checked. */
static int mvn_axes(const ir_node *node, icc_diag *d, int rank, bool *sel)
{
    static const int64_t def[] = {0, 2, 3};
    const int64_t *ax;
    int n = ir_attr_ints(node, "axes", &ax);
    if (n < 0) {
        ax = def;
        n = 3;
    }
    memset(sel, 0, sizeof(bool) * IR_MAX_RANK);
    for (int i = 0; i < n; i++) {
        int64_t a = ax[i] < 0 ? ax[i] + rank : ax[i];
        if (a < 0 || a >= rank)
            return ir_node_errorf(d, node, "axes[%d] = %lld is out of range for rank %d", i,
                                  (long long)ax[i], rank);
        sel[a] = true;
    }
    return 0;
}

int shape_mvn(ir_shape_ctx *c)
{
    bool sel[IR_MAX_RANK];
    if (c->in[0]->rank >= 0 && mvn_axes(c->node, c->diag, c->in[0]->rank, sel) < 0)
        return -1;
    c->out[0] = *c->in[0];
    return 0;
}

/* Y = (X - mean) / (sqrt(var) + 1e-9), statistics over the axes; as the
 * ONNX function body does, epsilon is added to the deviation. */
int ref_mvn(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    ir_tensor *y = c->out[0];
    bool sel[IR_MAX_RANK];
    if (mvn_axes(c->node, c->diag, x->rank, sel) < 0)
        return -1;
    /* Group elements by their kept-dims index: a dense id per group. */
    int64_t kdims[IR_MAX_RANK];
    int kr = 0;
    for (int i = 0; i < x->rank; i++)
        if (!sel[i])
            kdims[kr++] = x->dims[i];
    int64_t ngroups = nn_prod(kdims, kr), gsize = ngroups ? x->numel / ngroups : 0;
    double *sum = calloc((size_t)ngroups + 1, sizeof(double));
    double *sq = calloc((size_t)ngroups + 1, sizeof(double));
    int64_t *gid = malloc(sizeof(int64_t) * ((size_t)x->numel + 1));
    if (!sum || !sq || !gid) {
        free(sum);
        free(sq);
        free(gid);
        return ir_node_errorf(c->diag, c->node, "out of memory");
    }
    int64_t idx[IR_MAX_RANK] = {0};
    for (int64_t i = 0; i < x->numel; i++, ir_index_next(idx, x->dims, x->rank)) {
        int64_t gi = 0;
        for (int d = 0; d < x->rank; d++)
            if (!sel[d])
                gi = gi * x->dims[d] + idx[d];
        gid[i] = gi;
        sum[gi] += ir_tensor_getf(x, i);
    }
    for (int64_t i = 0; i < x->numel; i++) {
        double dv = ir_tensor_getf(x, i) - sum[gid[i]] / (double)gsize;
        sq[gid[i]] += dv * dv;
    }
    for (int64_t i = 0; i < x->numel; i++) {
        double mean = sum[gid[i]] / (double)gsize, sd = sqrt(sq[gid[i]] / (double)gsize);
        ir_tensor_setf(y, i, (ir_tensor_getf(x, i) - mean) / (sd + 1e-9));
    }
    free(sum);
    free(sq);
    free(gid);
    return 0;
}

/* ---- LpNormalization, LRN ---------------------------------------------- */

int shape_lpnorm(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    int64_t p = ir_attr_int(c->node, "p", 2);
    int axis;
    if (p != 1 && p != 2)
        return ir_node_errorf(c->diag, c->node, "p is %lld; only 1 and 2 are allowed", (long long)p);
    if (x->rank >= 0 && ir_norm_axis(c, ir_attr_int(c->node, "axis", -1), x->rank, &axis) < 0)
        return -1;
    c->out[0] = *x;
    return 0;
}

/* x / ||x||_p along axis; a zero norm gives 0, not NaN. */
int ref_lpnorm(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    ir_tensor *y = c->out[0];
    bool l1 = ir_attr_int(c->node, "p", 2) == 1;
    int axis;
    if (ir_ref_norm_axis(c, ir_attr_int(c->node, "axis", -1), x->rank, &axis) < 0)
        return -1;
    if (x->rank == 0) {
        double v = ir_tensor_getf(x, 0);
        ir_tensor_setf(y, 0, v == 0 ? 0 : v / fabs(v));
        return 0;
    }
    int64_t outer = nn_prod(x->dims, axis), len = x->dims[axis];
    int64_t inner = nn_prod(x->dims + axis + 1, x->rank - axis - 1);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * len * inner + i;
            double nrm = 0;
            for (int64_t k = 0; k < len; k++) {
                double v = ir_tensor_getf(x, base + k * inner);
                nrm += l1 ? fabs(v) : v * v;
            }
            if (!l1)
                nrm = sqrt(nrm);
            for (int64_t k = 0; k < len; k++) {
                double v = ir_tensor_getf(x, base + k * inner);
                ir_tensor_setf(y, base + k * inner, nrm == 0 ? 0 : v / nrm);
            }
        }
    return 0;
}

int shape_lrn(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    if (ir_attr_int(c->node, "size", 0) < 1)
        return ir_node_errorf(c->diag, c->node, "size must be >= 1");
    if (x->rank >= 0 && x->rank < 3)
        return ir_node_errorf(c->diag, c->node,
                              "input must have rank >= 3 (N, C, spatial dims), got rank %d",
                              x->rank);
    c->out[0] = *x;
    return 0;
}

/* y = x / (bias + alpha/size * sum of x^2 over the channels
 * [c - floor((size-1)/2), c + ceil((size-1)/2)])^beta. */
int ref_lrn(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    ir_tensor *y = c->out[0];
    double alpha = ir_attr_float(c->node, "alpha", 1e-4f);
    double beta = ir_attr_float(c->node, "beta", 0.75f);
    double bias = ir_attr_float(c->node, "bias", 1.0f);
    int64_t size = ir_attr_int(c->node, "size", 1);
    int64_t ch = x->dims[1], len = nn_prod(x->dims + 2, x->rank - 2);
    int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t k = (i / len) % ch, base = i - k * len;
        double sq = 0;
        int64_t jlo = k - lo < 0 ? 0 : k - lo, jhi = hi >= ch - k ? ch - 1 : k + hi;
        for (int64_t j = jlo; j <= jhi; j++) {
            double v = ir_tensor_getf(x, base + j * len);
            sq += v * v;
        }
        ir_tensor_setf(y, i, ir_tensor_getf(x, i) / pow(bias + alpha / (double)size * sq, beta));
    }
    return 0;
}
