/* nn.h - helpers shared by the contraction and neural-network op files
 * (nn.c, nn_conv.c, nn_pool.c, nn_norm.c): sliding-window geometry for
 * Conv and the pools, the f32 matrix-multiply core, and small checks. */
#ifndef ICC_REF_NN_H
#define ICC_REF_NN_H

#include "ir/ref/ref.h"

typedef enum nn_auto_pad {
    NN_PAD_NOTSET, NN_PAD_SAME_UPPER, NN_PAD_SAME_LOWER, NN_PAD_VALID,
} nn_auto_pad;

/* The window attributes of Conv/ConvTranspose/the pools, validated. A
 * kernel dim of 0 means unknown (weights with symbolic dims and no
 * kernel_shape attribute); only shape inference meets that case. */
typedef struct nn_window {
    int n;                              /* spatial rank */
    nn_auto_pad auto_pad;
    bool ceil_mode;
    int64_t kernel[IR_MAX_RANK];
    int64_t stride[IR_MAX_RANK];
    int64_t dilation[IR_MAX_RANK];
    int64_t pads[2 * IR_MAX_RANK];      /* the n begins, then the n ends */
} nn_window;

/* Reads and checks kernel_shape, strides, dilations, pads, auto_pad and
 * ceil_mode (when the op has it) of node for n spatial dims. wk: the
 * weights' spatial dims (NULL for pools, whose kernel_shape is required);
 * a kernel_shape attribute must agree with the constant ones. */
int nn_window_parse(const ir_node *node, icc_diag *d, int n, const ir_dim *wk, nn_window *w);

/* Output size and effective begin/end pads of spatial dim i for an input
 * of size in (Conv and pool arithmetic: floor or ceil_mode, auto_pad). */
int nn_window_dim(const ir_node *node, icc_diag *d, const nn_window *w, int i, int64_t in,
                  int64_t *out, int64_t *pb, int64_t *pe);

/* The same on a symbolic dim: constants give constants, a symbol passes
 * through a window that keeps sizes (1-wide, stride 1, no pads, or SAME
 * with stride 1), anything else is unknown. */
int nn_window_out_dim(const ir_node *node, icc_diag *d, const nn_window *w, int i, ir_dim in,
                      ir_dim *out);

/* floor((in + shift) / s) + 1, the output extent of a window over a
 * symbolic dim in (shift: the pads less the dilated window; s > 0), as
 * derived symbols of g built the way nn_window_out_dim builds them, so
 * the blocked convs' shape functions and the layout pass name the dim
 * the Conv they replace had. Unknown when g is NULL. */
ir_dim nn_floor_extent(ir_graph *g, ir_dim in, int64_t shift, int64_t s);

/* Error unless input j has input 0's dtype. */
int nn_same_dtype(ir_shape_ctx *c, int j);

/* Y = alpha * op(A) x op(B) + beta * C for f32 data, accumulating in
 * double. Element (i,k) of A is a[i*a_rs + k*a_cs], (k,j) of B is
 * b[k*b_rs + j*b_cs], (i,j) of C is c[i*c_rs + j*c_cs] (strides of 0
 * broadcast; c may be NULL). Row i of y starts at y + i*y_rs (y_rs 0:
 * N). Returns -1 only when out of memory. */
typedef struct nn_sgemm_args {
    int64_t m, n, k;
    const float *a;
    int64_t a_rs, a_cs;
    const float *b;
    int64_t b_rs, b_cs;
    const float *c;
    int64_t c_rs, c_cs;
    double alpha, beta;
    float *y;
    int64_t y_rs;
} nn_sgemm_args;
int nn_sgemm(const nn_sgemm_args *g);

/* The offset in a packed [K, N] matrix (MatMul's packed_b, packed_k,
 * packed_t; ir/ops.def) of element (k, j), j in the panel that starts at
 * column j0 and is wp wide: the panel [K/p, wp, p] row-major, or for
 * t > 0 in groups of t of its rows, each group as its 16-column pieces
 * [t, 16, p] one after another (wp a multiple of 16, K/p of t). The
 * pack-b pass writes this order and the reference reads it back; the
 * kernels compute it (codegen/lower/internal.h, lw_packed_at). */
static inline int64_t nn_packed_index(int64_t K, int64_t j0, int64_t wp, int64_t p, int64_t t, int64_t k, int64_t j)
{
    int64_t kr = k / p, base = j0 * K + k % p;
    if (t <= 0)
        return base + kr * p * wp + j * p;
    return base + kr / t * t * wp * p + j / 16 * t * 16 * p + kr % t * 16 * p + j % 16 * p;
}

/* Runs run on c with input 1 (B, W) unpacked from panels of w columns
 * (nn_packed_index with p and t; K, N: its last two dims; MatMul's
 * packed_b, packed_k and packed_t, ConvNCHWc's packed_k with one panel of
 * its ML lanes and t = 0) into a row-major copy. */
int nn_run_unpacked(ir_ref_ctx *c, int64_t w, int64_t p, int64_t t, int (*run)(ir_ref_ctx *));

/* f32 views of a kernel's first nin inputs and (if out) of output 0, for
 * the f32 fast paths: f32 data is used in place; f16 and bf16, which
 * widen to f32 exactly, are copied in, and the result is narrowed back by
 * nn_f32_end (rounding twice, via f32, which can differ from the double
 * path by one ulp in rare ties). Absent inputs give NULL. Caller owns the
 * view until nn_f32_end. */
typedef struct nn_f32_view {
    const float *in[4];
    float *out;
    float *owned[5];
    ir_tensor *y;
} nn_f32_view;
/* 1 when every present input has input 0's dtype, one of f32 f16 bf16
 * (the view is set up); 0 when not (nothing to undo); -1 out of memory. */
int nn_f32_begin(ir_ref_ctx *c, int nin, bool out, nn_f32_view *v);
/* Narrows the result into the output if it was a copy; frees the copies. */
void nn_f32_end(nn_f32_view *v);

/* Product of n dims (callers have checked them against the tensor). */
static inline int64_t nn_prod(const int64_t *dims, int n)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        p *= dims[i];
    return p;
}

#endif
