/* conv_direct.h - the direct 2-D convolution schedules conv.c hands
 * nodes to: depthwise (conv_dw.c) and ConvTranspose (convtranspose.c).
 *
 * conv.c owns the window geometry (auto_pad, ceil_mode, output_shape
 * resolved by the reference's nn_window_* functions) and fills a
 * cg_conv2d from it; these files only schedule. Both take f32 and two
 * spatial dims; ConvTranspose static shapes, depthwise symbolic height and
 * width too.
 */
#ifndef ICC_LOWER_CONV_DIRECT_H
#define ICC_LOWER_CONV_DIRECT_H

#include "codegen/lower/internal.h"

/* How a dim's pads are known: fixed (pb, pe), or SAME padding at a
 * stride > 1 over a symbolic dim, where they follow from the run's size. */
enum { CG_PAD_FIXED, CG_PAD_SAME_UPPER, CG_PAD_SAME_LOWER };

typedef struct cg_conv2d {
    int64_t batch, cin, cout, group, cg, mg;  /* cg/mg: input/output channels per group */
    int64_t in[2], out[2], k[2], s[2], d[2], pb[2];
    /* in and out as dims: a symbolic one (sym) is the run's value there,
     * and in/out hold -1 (the depthwise schedule takes them; the batch
     * stays constant) */
    bool sym;
    ir_dim ind[2], outd[2];
    /* a CG_PAD_*; not fixed: pb is the largest begin pad the dim can take
     * and cg_same_pad the run's, dk the window's (k-1)*d+1 */
    int same[2];
    int64_t dk[2];
} cg_conv2d;

/* SAME padding of a dim of size in (symbolic) whose output out is
 * ceil(in/s): the total max(0, (out-1)*s + dk - in) split with the odd one
 * at the end (CG_PAD_SAME_UPPER) or the start (LOWER); the begin pad, or
 * with end the end pad, as an index expression of the run's sizes. */
kir_expr *cg_same_pad(kir_kernel *k, ir_dim in, ir_dim out, int64_t s, int64_t dk, int same, bool end);

/* v less a dim's begin pad: the fixed pb, or (same not CG_PAD_FIXED)
 * cg_same_pad's, added as 0 - pad: the emitter reads a vector loop's
 * index as the variable times a stride plus uniform terms (a strided
 * load; v - pad made it a gather). */
kir_expr *cg_less_pad(kir_kernel *k, kir_expr *v, int same, ir_dim in, ir_dim out, int64_t s, int64_t dk, int64_t pb);

/* Depthwise-like Conv (one input channel per group: y channel m reads x
 * channel m / mg): a vector loop along the output row whose taps stay in
 * registers; the row's ends, where taps leave the input, run scalar. */
bool cg_conv_dw_ok(const lctx *c, const cg_conv2d *g);
int lower_conv_dw(lctx *c, const cg_conv2d *g);

/* ConvTranspose with unit dilation: per output position only the taps of
 * its phase ((o + pad) mod stride) contribute, so the tap loops step by
 * the stride with no test per tap. */
bool cg_convtranspose_ok(const ir_node *n, const cg_conv2d *g);
int lower_convtranspose_direct(lctx *c, const cg_conv2d *g);

#endif
