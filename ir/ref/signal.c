/* signal.c - shape functions and reference kernels of the signal ops:
 * STFT (the short-time Fourier transform of audio front ends: Whisper's,
 * NeMo's, Kaldi's log-mel features; the signal [batch, length, 1 or 2],
 * or [batch, length] real, as ONNX Runtime also takes it).
 *
 * Sums run in double, the twiddles from the exact angle 2 pi (k n mod N)
 * / N (ir_dft_twiddle; quarter turns exact), so the reference is as close
 * to the true transform as f32 output allows. Compiled code never runs these kernels: the lower-signal pass
 * (passes/signal.c) rewrites an STFT with constant parameters into the
 * strided Conv whose filters are the windowed DFT rows. */
#include "ir/ref/movement.h"
#include "ir/ref/nn.h"
#include "ir/ref/ref.h"

#include <math.h>

static const ir_tensor *opt_val(ir_shape_ctx *c, int i)
{
    return i < c->nin ? c->val[i] : NULL;
}

static const ir_type *opt_type(ir_shape_ctx *c, int i)
{
    return i < c->nin ? c->in[i] : NULL;
}

/* The frame length N of STFT node n from its window's length and its
 * frame_length input, as far as known: *n = -1 when not known; -1 when
 * they disagree or are out of range (reported). */
static int stft_length(ir_shape_ctx *c, int64_t *n)
{
    *n = -1;
    const ir_type *w = opt_type(c, 2);
    const ir_tensor *fl = opt_val(c, 3);
    if (w && w->rank != 1)
        return ir_node_errorf(c->diag, c->node, "window must be 1-D");
    if (opt_type(c, 3) && opt_type(c, 3)->rank > 0)
        return ir_node_errorf(c->diag, c->node, "frame_length must be a scalar");
    int64_t wl = w && ir_dim_is_const(w->dims[0]) ? w->dims[0].v : -1;
    if (fl) {
        *n = ir_tensor_geti(fl, 0);
        if (*n < 1)
            return ir_node_errorf(c->diag, c->node, "frame_length %lld must be at least 1", (long long)*n);
        if (wl >= 0 && wl != *n)
            return ir_node_errorf(c->diag, c->node, "the window has %lld elements, frame_length is %lld",
                                  (long long)wl, (long long)*n);
    } else if (!opt_type(c, 3)) {
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
    if (opt_type(c, 2) && opt_type(c, 2)->dtype != x->dtype)
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

int ref_stft(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0], *w = c->nin > 2 ? c->in[2] : NULL;
    ir_tensor *y = c->out[0];
    int64_t batch = y->dims[0], frames = y->dims[1], bins = y->dims[2], len = x->dims[1];
    int64_t cx = x->rank == 3 ? x->dims[2] : 1;
    int64_t step = ir_tensor_geti(c->in[1], 0);
    int64_t n = c->nin > 3 && c->in[3] ? ir_tensor_geti(c->in[3], 0) : w->dims[0];
    for (int64_t b = 0; b < batch; b++)
        for (int64_t f = 0; f < frames; f++)
            for (int64_t k = 0; k < bins; k++) {
                double re = 0, im = 0;
                for (int64_t j = 0; j < n; j++) {
                    int64_t at = (b * len + f * step + j) * cx;
                    double wj = w ? ir_tensor_getf(w, j) : 1.0;
                    double xr = ir_tensor_getf(x, at) * wj, xi = cx == 2 ? ir_tensor_getf(x, at + 1) * wj : 0;
                    /* e^(-2 pi i k j / N) */
                    double co, si;
                    ir_dft_twiddle(k * j, n, &co, &si);
                    re += xr * co + xi * si;
                    im += xi * co - xr * si;
                }
                int64_t o = ((b * frames + f) * bins + k) * 2;
                ir_tensor_setf(y, o, re);
                ir_tensor_setf(y, o + 1, im);
            }
    return 0;
}
