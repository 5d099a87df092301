/* nn_pool.c - shape functions and reference kernels of the pools:
 * MaxPool (with its optional Indices output), AveragePool, LpPool and the
 * global pools, for any number of spatial dims.
 *
 * A window covers input positions o*s - pb + kk*d; positions in the
 * padding never contribute a value. AveragePool's count_include_pad
 * counts padding positions in the divisor, but not the positions past
 * the end pad that ceil_mode's last window may reach (as ONNX and
 * PyTorch do). */
#include "ir/ref/nn.h"

#include <math.h>
#include <string.h>

/* ---- shapes --------------------------------------------------------------- */

int shape_pool(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    const int64_t *ks;
    int nk = ir_attr_ints(c->node, "kernel_shape", &ks);
    int r = x->rank >= 0 ? x->rank : (nk > 0 ? nk + 2 : IR_RANK_UNKNOWN);
    bool maxpool = c->node->op == IR_OP_MAX_POOL;
    if (maxpool) {
        int64_t so = ir_attr_int(c->node, "storage_order", 0);
        if (so != 0 && so != 1)
            return ir_node_errorf(c->diag, c->node, "storage_order is %lld; it must be 0 or 1",
                                  (long long)so);
    }
    if (c->node->op == IR_OP_LP_POOL && ir_attr_int(c->node, "p", 2) < 1)
        return ir_node_errorf(c->diag, c->node, "p must be >= 1");
    if (r < 0) {
        for (int i = 0; i < c->nout; i++)
            ir_type_unknown(&c->out[i], i ? IR_I64 : x->dtype, IR_RANK_UNKNOWN);
        return 0;
    }
    if (r < 3)
        return ir_node_errorf(c->diag, c->node,
                              "input must have rank >= 3 (N, C, spatial dims), got rank %d", r);
    nn_window win;
    if (nn_window_parse(c->node, c->diag, r - 2, NULL, &win) < 0)
        return -1;
    ir_type *o = &c->out[0];
    ir_type_unknown(o, x->dtype, r);
    if (x->rank >= 0) {
        o->dims[0] = x->dims[0];
        o->dims[1] = x->dims[1];
        for (int i = 0; i < r - 2; i++)
            if (nn_window_out_dim(c->node, c->diag, &win, i, x->dims[2 + i], &o->dims[2 + i]) < 0)
                return -1;
    }
    if (c->nout > 1) {
        c->out[1] = *o;
        c->out[1].dtype = IR_I64;
    }
    return 0;
}

int shape_global_pool(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    if (c->node->op == IR_OP_GLOBAL_LP_POOL && ir_attr_int(c->node, "p", 2) < 1)
        return ir_node_errorf(c->diag, c->node, "p must be >= 1");
    if (x->rank >= 0 && x->rank < 2)
        return ir_node_errorf(c->diag, c->node,
                              "input must have rank >= 2 (N, C, spatial dims), got rank %d",
                              x->rank);
    c->out[0] = *x;
    for (int i = 2; i < x->rank; i++)
        c->out[0].dims[i] = ir_dim_const(1);
    return 0;
}

/* ---- kernels ---------------------------------------------------------------- */

typedef struct pool_geom {
    int n;
    int64_t planes;                     /* N * C */
    int64_t in[IR_MAX_RANK], out[IR_MAX_RANK], k[IR_MAX_RANK];
    int64_t s[IR_MAX_RANK], d[IR_MAX_RANK], pb[IR_MAX_RANK], pe[IR_MAX_RANK];
    int64_t pin, pout;
} pool_geom;

static int pool_geom_init(ir_ref_ctx *c, pool_geom *g)
{
    const ir_tensor *x = c->in[0], *y = c->out[0];
    memset(g, 0, sizeof *g);
    g->n = x->rank - 2;
    nn_window win;
    if (nn_window_parse(c->node, c->diag, g->n, NULL, &win) < 0)
        return -1;
    g->planes = x->dims[0] * x->dims[1];
    for (int i = 0; i < g->n; i++) {
        int64_t o;
        if (nn_window_dim(c->node, c->diag, &win, i, x->dims[2 + i], &o, &g->pb[i], &g->pe[i]) < 0)
            return -1;
        g->in[i] = x->dims[2 + i];
        g->out[i] = y->dims[2 + i];
        g->k[i] = win.kernel[i];
        g->s[i] = win.stride[i];
        g->d[i] = win.dilation[i];
    }
    g->pin = nn_prod(g->in, g->n);
    g->pout = nn_prod(g->out, g->n);
    return 0;
}

/* Kernel taps kk in [0, k) with a <= start + kk*d < b, as [*lo, *hi). */
static void tap_range(int64_t start, int64_t d, int64_t k, int64_t a, int64_t b, int64_t *lo,
                      int64_t *hi)
{
    int64_t l = a - start <= 0 ? 0 : (a - start) / d + ((a - start) % d != 0);
    int64_t h = b - start <= 0 ? 0 : (b - start - 1) / d + 1;
    *lo = l < k ? l : k;
    *hi = h < k ? h : k;
    if (*hi < *lo)
        *hi = *lo;
}

/* The window of output o: per dim the taps [lo, hi) that fall inside the
 * input, and the first input position start = o*s - pb. Returns how many
 * taps fall inside the padded input [-pb, in + pe) (for
 * count_include_pad). Only inside taps are visited, so a huge kernel
 * over mostly padding costs nothing. */
static int64_t pool_window(const pool_geom *g, const int64_t *o, int64_t *start, int64_t *lo,
                           int64_t *hi)
{
    int64_t padded = 1;
    for (int j = 0; j < g->n; j++) {
        int64_t plo, phi;
        start[j] = o[j] * g->s[j] - g->pb[j];
        tap_range(start[j], g->d[j], g->k[j], 0, g->in[j], &lo[j], &hi[j]);
        tap_range(start[j], g->d[j], g->k[j], -g->pb[j], g->in[j] + g->pe[j], &plo, &phi);
        padded *= phi - plo;
    }
    return padded;
}

/* Advances kk over the box [lo, hi); false when done. */
static bool box_next(int64_t *kk, const int64_t *lo, const int64_t *hi, int n)
{
    for (int j = n - 1; j >= 0; j--) {
        if (++kk[j] < hi[j])
            return true;
        kk[j] = lo[j];
    }
    return false;
}

/* Offset in the plane of tap kk: row-major, or column-major (the
 * storage_order=1 form of MaxPool's Indices). */
static int64_t tap_offset(const pool_geom *g, const int64_t *start, const int64_t *kk,
                          bool colmajor)
{
    int64_t off = 0, scale = 1;
    for (int j = 0; j < g->n; j++) {
        int64_t ip = start[j] + kk[j] * g->d[j];
        if (colmajor) {
            off += ip * scale;
            scale *= g->in[j];
        } else {
            off = off * g->in[j] + ip;
        }
    }
    return off;
}

static bool box_empty(const int64_t *lo, const int64_t *hi, int n)
{
    for (int j = 0; j < n; j++)
        if (lo[j] >= hi[j])
            return true;
    return false;
}

/* The first maximum wins; a window entirely in the padding gives -inf (0
 * for integers) and index -1. */
int ref_maxpool(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    ir_tensor *y = c->out[0], *ind = c->nout > 1 ? c->out[1] : NULL;
    pool_geom g;
    if (pool_geom_init(c, &g) < 0)
        return -1;
    bool colmajor = ir_attr_int(c->node, "storage_order", 0) == 1;
    bool isint = ir_dtype_is_int(x->dtype);
    for (int64_t p = 0; p < g.planes; p++) {
        int64_t o[IR_MAX_RANK] = {0};
        for (int64_t oi = 0; oi < g.pout; oi++, ir_index_next(o, g.out, g.n)) {
            int64_t start[IR_MAX_RANK], lo[IR_MAX_RANK], hi[IR_MAX_RANK], kk[IR_MAX_RANK];
            pool_window(&g, o, start, lo, hi);
            double best = -INFINITY;
            int64_t ibest = 0, bidx = -1;
            memcpy(kk, lo, sizeof(int64_t) * (size_t)g.n);
            bool more = !box_empty(lo, hi, g.n);
            for (bool first = true; more; first = false, more = box_next(kk, lo, hi, g.n)) {
                int64_t xi = p * g.pin + tap_offset(&g, start, kk, false);
                bool better;
                if (isint) {
                    int64_t v = ir_tensor_geti(x, xi);
                    better = first || v > ibest;
                    ibest = better ? v : ibest;
                } else {
                    double v = ir_tensor_getf(x, xi);
                    better = first || v > best;
                    best = better ? v : best;
                }
                if (better)
                    bidx = p * g.pin + tap_offset(&g, start, kk, colmajor);
            }
            int64_t yi = p * g.pout + oi;
            if (isint)
                ir_tensor_seti(y, yi, ibest);
            else
                ir_tensor_setf(y, yi, best);
            if (ind)
                ir_tensor_seti(ind, yi, bidx);
        }
    }
    return 0;
}

/* AveragePool and LpPool: the mean, or the p-norm, of each window. */
int ref_avgpool(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    ir_tensor *y = c->out[0];
    pool_geom g;
    if (pool_geom_init(c, &g) < 0)
        return -1;
    bool lp = c->node->op == IR_OP_LP_POOL;
    double pw = lp ? (double)ir_attr_int(c->node, "p", 2) : 1;
    bool incl = ir_attr_int(c->node, "count_include_pad", 0) != 0;
    for (int64_t p = 0; p < g.planes; p++) {
        int64_t o[IR_MAX_RANK] = {0};
        for (int64_t oi = 0; oi < g.pout; oi++, ir_index_next(o, g.out, g.n)) {
            int64_t start[IR_MAX_RANK], lo[IR_MAX_RANK], hi[IR_MAX_RANK], kk[IR_MAX_RANK];
            int64_t padded = pool_window(&g, o, start, lo, hi), cnt = 0;
            double sum = 0;
            memcpy(kk, lo, sizeof(int64_t) * (size_t)g.n);
            bool more = !box_empty(lo, hi, g.n);
            for (; more; more = box_next(kk, lo, hi, g.n)) {
                double v = ir_tensor_getf(x, p * g.pin + tap_offset(&g, start, kk, false));
                sum += lp ? pow(fabs(v), pw) : v;
                cnt++;
            }
            if (incl)
                cnt = padded;
            ir_tensor_setf(y, p * g.pout + oi, lp ? pow(sum, 1.0 / pw) : sum / (double)cnt);
        }
    }
    return 0;
}

int ref_global_pool(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    ir_tensor *y = c->out[0];
    int op = c->node->op;
    int64_t planes = x->rank >= 2 ? x->dims[0] * x->dims[1] : 1;
    int64_t len = nn_prod(x->dims + 2, x->rank > 2 ? x->rank - 2 : 0);
    double pw = op == IR_OP_GLOBAL_LP_POOL ? (double)ir_attr_int(c->node, "p", 2) : 1;
    for (int64_t p = 0; p < planes; p++) {
        double acc = op == IR_OP_GLOBAL_MAX_POOL ? -INFINITY : 0;
        for (int64_t i = 0; i < len; i++) {
            double v = ir_tensor_getf(x, p * len + i);
            if (op == IR_OP_GLOBAL_MAX_POOL)
                acc = (v > acc || isnan(v) || i == 0) ? v : acc;
            else if (op == IR_OP_GLOBAL_LP_POOL)
                acc += pow(fabs(v), pw);
            else
                acc += v;
        }
        if (op == IR_OP_GLOBAL_AVERAGE_POOL)
            acc /= (double)len;
        else if (op == IR_OP_GLOBAL_LP_POOL)
            acc = pow(acc, 1.0 / pw);
        ir_tensor_setf(y, p, acc);
    }
    return 0;
}
