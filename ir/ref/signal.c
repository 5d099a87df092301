/* signal.c - shape functions and reference kernels of the signal ops:
 * DFT (along any axis, real or complex, zero-padded or truncated to
 * dft_length, inverse, onesided both ways) and STFT (the short-time
 * Fourier transform of audio front ends: Whisper's, NeMo's, Kaldi's
 * log-mel features; the signal [batch, length, 1 or 2], or [batch,
 * length] real, as ONNX Runtime also takes it).
 *
 * Sums run in double, the twiddles from the exact angle 2 pi (k n mod N)
 * / N (ir_dft_twiddle; quarter turns exact), so the reference is as close
 * to the true transform as f32 output allows. Compiled code never runs
 * these kernels: the lower-signal pass (passes/signal.c) rewrites an STFT
 * with constant parameters into the strided Conv whose filters are the
 * windowed DFT rows, and a DFT into a MatMul by the matrix ir_dft_matrix
 * builds from dft_line itself. */
#include "ir/ref/movement.h"
#include "ir/ref/nn.h"
#include "ir/ref/ref.h"

#include <math.h>
#include <stdlib.h>

/* The frame length N of STFT node n from its window's length and its
 * frame_length input, as far as known: *n = -1 when not known; -1 when
 * they disagree or are out of range (reported). */
static int stft_length(ir_shape_ctx *c, int64_t *n)
{
    *n = -1;
    const ir_type *w = mv_type(c, 2);
    const ir_tensor *fl = mv_val(c, 3);
    if (w && w->rank != 1)
        return ir_node_errorf(c->diag, c->node, "window must be 1-D");
    if (mv_type(c, 3) && mv_type(c, 3)->rank > 0)
        return ir_node_errorf(c->diag, c->node, "frame_length must be a scalar");
    int64_t wl = w && ir_dim_is_const(w->dims[0]) ? w->dims[0].v : -1;
    if (fl) {
        *n = ir_tensor_geti(fl, 0);
        if (*n < 1)
            return ir_node_errorf(c->diag, c->node, "frame_length %lld must be at least 1", (long long)*n);
        if (wl >= 0 && wl != *n)
            return ir_node_errorf(c->diag, c->node, "the window has %lld elements, frame_length is %lld",
                                  (long long)wl, (long long)*n);
    } else if (!mv_type(c, 3)) {
        if (!w)
            return ir_node_errorf(c->diag, c->node, "needs a window or a frame_length");
        *n = wl;
        if (wl == 0)
            return ir_node_errorf(c->diag, c->node, "the window is empty");
    }
    return 0;
}

int shape_stft(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    ir_type *o = &c->out[0];
    bool onesided = ir_attr_int(c->node, "onesided", 1) != 0;
    if (!ir_dtype_is_float(x->dtype))
        return ir_node_errorf(c->diag, c->node, "the signal must be floating point");
    /* [batch, length] is a real signal too (ONNX Runtime takes it, and
     * exporters write it) */
    if (x->rank >= 0 && x->rank != 3 && x->rank != 2)
        return ir_node_errorf(c->diag, c->node, "the signal must be [batch, length, 1 or 2] or [batch, length]");
    if (x->rank == 3 && ir_dim_is_const(x->dims[2]) && x->dims[2].v != 1 && x->dims[2].v != 2)
        return ir_node_errorf(c->diag, c->node, "the signal's last dim must be 1 (real) or 2 (complex), not %lld",
                              (long long)x->dims[2].v);
    if (onesided && x->rank == 3 && ir_dim_is_const(x->dims[2]) && x->dims[2].v == 2)
        return ir_node_errorf(c->diag, c->node, "a onesided transform needs a real signal");
    if (c->in[1]->rank > 0 || !ir_dtype_is_int(c->in[1]->dtype))
        return ir_node_errorf(c->diag, c->node, "frame_step must be an integer scalar");
    if (mv_type(c, 2) && mv_type(c, 2)->dtype != x->dtype)
        return ir_node_errorf(c->diag, c->node, "the window's dtype differs from the signal's");
    int64_t n;
    if (stft_length(c, &n) < 0)
        return -1;
    ir_type_unknown(o, x->dtype, 4);
    o->dims[3] = ir_dim_const(2);
    if (x->rank >= 2)
        o->dims[0] = x->dims[0];
    if (n > 0)
        o->dims[2] = ir_dim_const(onesided ? n / 2 + 1 : n);
    const ir_tensor *st = c->val[1];
    int64_t step = st ? ir_tensor_geti(st, 0) : 0;
    if (st && step < 1)
        return ir_node_errorf(c->diag, c->node, "frame_step %lld must be at least 1", (long long)step);
    if (x->rank >= 2 && st && n > 0) {
        ir_dim len = x->dims[1];
        if (ir_dim_is_const(len)) {
            if (len.v < n)
                return ir_node_errorf(c->diag, c->node, "the signal has %lld samples, fewer than a frame's %lld",
                                      (long long)len.v, (long long)n);
            o->dims[1] = ir_dim_const((len.v - n) / step + 1);
        } else {
            /* (L - N) / step + 1 frames; L < N makes it negative, an error
             * of the run (the derived symbol's check) */
            o->dims[1] = nn_floor_extent(c->node->graph, len, -n, step);
        }
    }
    return ir_mv_check_size(c, o);
}

void ir_dft_twiddle(int64_t m, int64_t n, double *c, double *s)
{
    m %= n;
    if (4 * m % n == 0) {   /* a quarter turn: exact */
        static const double cq[4] = {1, 0, -1, 0}, sq[4] = {0, 1, 0, -1};
        *c = cq[4 * m / n];
        *s = sq[4 * m / n];
        return;
    }
    double t = 6.283185307179586 * (double)m / (double)n;
    *c = cos(t);
    *s = sin(t);
}

/* ---- DFT ---------------------------------------------------------------- */

/* DFT node n's transformed axis (normalized against rank r, the last dim
 * being re/im and not one), the DFT length N and the number of bins out;
 * from the inputs' values when known (*len = -1 when not). */
static int dft_geometry(ir_shape_ctx *c, int r, int64_t *axis, int64_t *len)
{
    const ir_tensor *ax = mv_val(c, 2), *dl = mv_val(c, 1);
    const ir_type *at = mv_type(c, 2), *lt = mv_type(c, 1);
    if (at && (at->rank > 0 || !ir_dtype_is_int(at->dtype)))
        return ir_node_errorf(c->diag, c->node, "axis must be an integer scalar");
    if (lt && (lt->rank > 0 || !ir_dtype_is_int(lt->dtype)))
        return ir_node_errorf(c->diag, c->node, "dft_length must be an integer scalar");
    *axis = INT64_MIN;
    if (at && !ax)
        return 0;   /* not known yet */
    int64_t a = ax ? ir_tensor_geti(ax, 0) : -2;
    /* the last dim holds re/im: it is no axis to transform */
    if (a < -r || a >= r - 1 || (a < 0 && a + r == r - 1))
        return ir_node_errorf(c->diag, c->node, "axis %lld is out of range for rank %d (the last dim is re/im)",
                              (long long)a, r);
    *axis = a < 0 ? a + r : a;
    *len = -1;
    if (dl) {
        *len = ir_tensor_geti(dl, 0);
        if (*len < 1)
            return ir_node_errorf(c->diag, c->node, "dft_length %lld must be at least 1", (long long)*len);
    }
    return 0;
}

int shape_dft(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    ir_type *o = &c->out[0];
    bool inverse = ir_attr_int(c->node, "inverse", 0) != 0, onesided = ir_attr_int(c->node, "onesided", 0) != 0;
    if (!ir_dtype_is_float(x->dtype))
        return ir_node_errorf(c->diag, c->node, "the input must be floating point");
    if (x->rank < 0) {
        ir_type_unknown(o, x->dtype, IR_RANK_UNKNOWN);
        return 0;
    }
    if (x->rank < 2)
        return ir_node_errorf(c->diag, c->node, "the input needs a signal dim and a last dim of 1 or 2");
    ir_dim last = x->dims[x->rank - 1];
    if (ir_dim_is_const(last) && last.v != 1 && last.v != 2)
        return ir_node_errorf(c->diag, c->node, "the last dim must be 1 (real) or 2 (complex), not %lld",
                              (long long)last.v);
    if (inverse && onesided && ir_dim_is_const(last) && last.v != 2)
        return ir_node_errorf(c->diag, c->node, "an inverse onesided transform takes complex bins");
    if (!inverse && onesided && ir_dim_is_const(last) && last.v != 1)
        return ir_node_errorf(c->diag, c->node, "a onesided transform needs a real signal");
    int64_t axis = INT64_MIN, len = -1;
    if (dft_geometry(c, x->rank, &axis, &len) < 0)
        return -1;
    *o = *x;
    o->dims[x->rank - 1] = ir_dim_const(inverse && onesided ? 1 : 2);
    if (axis == INT64_MIN) {
        for (int i = 0; i < x->rank - 1; i++)
            o->dims[i] = ir_dim_unknown();
        return 0;
    }
    ir_dim n = x->dims[axis];
    if (len < 0 && inverse && onesided)
        /* the full length the bins stand for: 2 (K - 1) */
        n = ir_dim_is_const(n) ? ir_dim_const(2 * (n.v - 1)) : ir_dim_unknown();
    else if (len >= 0)
        n = ir_dim_const(len);
    o->dims[axis] = !onesided || inverse ? n : ir_dim_is_const(n) ? ir_dim_const(n.v / 2 + 1) : ir_dim_unknown();
    return ir_mv_check_size(c, o);
}

/* The bins and re/im channels of a DFT over a line of `have` elements of
 * c channels (1 real, 2 complex) at length n. */
void ir_dft_bins(int64_t have, int64_t c, int64_t n, bool inverse, bool onesided, int64_t *bins, int64_t *cy)
{
    (void)have, (void)c;
    *bins = onesided && !inverse ? n / 2 + 1 : n;
    *cy = inverse && onesided ? 1 : 2;
}

/* One line: x holds `have` elements of c channels, y gets ir_dft_bins's
 * bins x cy. Past the line's end the signal is 0 (a longer dft_length
 * pads, a shorter one truncates); an inverse onesided line is the first
 * half of a Hermitian spectrum, X[N - k] = conj X[k]. */
static void dft_line(const double *x, int64_t have, int64_t c, int64_t n, bool inverse, bool onesided, double *y)
{
    int64_t bins, cy;
    ir_dft_bins(have, c, n, inverse, onesided, &bins, &cy);
    bool hermitian = inverse && onesided;
    int64_t use = hermitian ? (have < n / 2 + 1 ? have : n / 2 + 1) : have < n ? have : n;
    double sgn = inverse ? 1 : -1, scale = inverse ? 1.0 / (double)n : 1.0;
    for (int64_t k = 0; k < bins; k++) {
        double re = 0, im = 0;
        for (int64_t j = 0; j < n; j++) {
            int64_t at = j;
            double conj = 1;
            if (hermitian && j >= use) {
                at = (n - j) % n;
                conj = -1;
            }
            if (at >= use)
                continue;
            double xr = x[at * c], xi = c == 2 ? conj * x[at * c + 1] : 0, co, si;
            ir_dft_twiddle(k * j, n, &co, &si);
            /* times e^(sgn 2 pi i k j / N) */
            re += xr * co - sgn * xi * si;
            im += xi * co + sgn * xr * si;
        }
        y[k * cy] = re * scale;
        if (cy == 2)
            y[k * cy + 1] = im * scale;
    }
}

void ir_dft_matrix(int64_t have, int64_t c, int64_t n, bool inverse, bool onesided, double *m)
{
    int64_t bins, cy;
    ir_dft_bins(have, c, n, inverse, onesided, &bins, &cy);
    double *e = calloc((size_t)(have * c), sizeof *e);
    if (!e)
        return;
    for (int64_t i = 0; i < have * c; i++) {
        e[i] = 1;
        dft_line(e, have, c, n, inverse, onesided, m + i * bins * cy);
        e[i] = 0;
    }
    free(e);
}

/* The lines a transform walks: line (a, b), a < na, b < nb, reads `have`
 * points of cx channels at x[a*xa + b*xb + j*xj + ch] (times window[j]
 * when there is one) and writes dft_line's bins of cy channels at
 * y[a*ya + b*yb + k*yk + ch]. */
typedef struct {
    int64_t na, nb, xa, xb, xj, ya, yb, yk;
} dft_walk;

static int dft_lines(ir_ref_ctx *c, const ir_tensor *x, const ir_tensor *window, ir_tensor *y, const dft_walk *w,
                     int64_t have, int64_t cx, int64_t n, bool inverse, bool onesided)
{
    int64_t bins, cy;
    ir_dft_bins(have, cx, n, inverse, onesided, &bins, &cy);
    double *line = malloc(sizeof *line * (size_t)(have * cx + bins * cy + 1));
    if (!line)
        return ir_errorf(c->diag, "out of memory");
    double *out = line + have * cx;
    for (int64_t a = 0; a < w->na; a++)
        for (int64_t b = 0; b < w->nb; b++) {
            int64_t xo = a * w->xa + b * w->xb, yo = a * w->ya + b * w->yb;
            for (int64_t j = 0; j < have; j++)
                for (int64_t ch = 0; ch < cx; ch++)
                    line[j * cx + ch] =
                        ir_tensor_getf(x, xo + j * w->xj + ch) * (window ? ir_tensor_getf(window, j) : 1.0);
            dft_line(line, have, cx, n, inverse, onesided, out);
            for (int64_t k = 0; k < bins; k++)
                for (int64_t ch = 0; ch < cy; ch++)
                    ir_tensor_setf(y, yo + k * w->yk + ch, out[k * cy + ch]);
        }
    free(line);
    return 0;
}

int ref_dft(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    ir_tensor *y = c->out[0];
    bool inverse = ir_attr_int(c->node, "inverse", 0) != 0, onesided = ir_attr_int(c->node, "onesided", 0) != 0;
    int r = x->rank;
    int64_t a = c->nin > 2 && c->in[2] ? ir_tensor_geti(c->in[2], 0) : -2;
    int axis = (int)(a < 0 ? a + r : a);
    int64_t have = x->dims[axis], cx = x->dims[r - 1];
    int64_t n = c->nin > 1 && c->in[1] ? ir_tensor_geti(c->in[1], 0)
                : inverse && onesided ? 2 * (have - 1) : have;
    if (n < 1)
        return ir_node_errorf(c->diag, c->node, "the transform length %lld must be at least 1", (long long)n);
    int64_t bins, cy;
    ir_dft_bins(have, cx, n, inverse, onesided, &bins, &cy);
    /* outer: dims before the axis; inner: between it and re/im */
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= x->dims[d];
    for (int d = axis + 1; d < r - 1; d++)
        inner *= x->dims[d];
    /* the sum is O(lines bins n): refuse what would run for hours */
    double work = (double)outer * (double)inner * (double)bins * (double)n;
    if (work > 1e12)
        return ir_node_errorf(c->diag, c->node, "a transform of %lld points over %lld lines is too large",
                              (long long)n, (long long)(outer * inner));
    dft_walk w = {.na = outer, .nb = inner, .xa = have * inner * cx, .xb = cx, .xj = inner * cx,
                  .ya = bins * inner * cy, .yb = cy, .yk = inner * cy};
    return dft_lines(c, x, NULL, y, &w, have, cx, n, inverse, onesided);
}

/* Each frame times the window is a line of dft_line's. */
int ref_stft(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0], *w = mv_in(c, 2), *fl = mv_in(c, 3);
    ir_tensor *y = c->out[0];
    int64_t batch = y->dims[0], frames = y->dims[1], bins = y->dims[2], len = x->dims[1];
    int64_t cx = x->rank == 3 ? x->dims[2] : 1;
    int64_t step = ir_tensor_geti(c->in[1], 0);
    int64_t n = fl ? ir_tensor_geti(fl, 0) : w->dims[0];
    bool onesided = ir_attr_int(c->node, "onesided", 1) != 0;
    if ((double)batch * (double)frames * (double)bins * (double)n > 1e12)
        return ir_node_errorf(c->diag, c->node, "a transform of %lld frames of %lld points is too large",
                              (long long)(batch * frames), (long long)n);
    dft_walk wk = {.na = batch, .nb = frames, .xa = len * cx, .xb = step * cx, .xj = cx,
                   .ya = frames * bins * 2, .yb = bins * 2, .yk = 2};
    return dft_lines(c, x, w, y, &wk, n, cx, n, false, onesided);
}
