/* movement.h - helpers private to the data-movement shape functions and
 * kernels (ir/ref/movement*.c). */
#ifndef ICC_MOVEMENT_H
#define ICC_MOVEMENT_H

#include "ir/ref/ref.h"

/* A strided view may have twice the IR's rank (Tile interleaves a repeat
 * dim before each data dim). */
#define MV_MAX_VIEW (2 * IR_MAX_RANK)

/* Input i's type, or NULL when absent (omitted or past nin). */
static inline const ir_type *mv_type(const ir_shape_ctx *c, int i)
{
    return i < c->nin ? c->in[i] : NULL;
}

/* Input i's value when known, else NULL. */
static inline const ir_tensor *mv_val(const ir_shape_ctx *c, int i)
{
    return i < c->nin && c->in[i] ? c->val[i] : NULL;
}

/* Input i of a kernel, or NULL when absent. */
static inline const ir_tensor *mv_in(const ir_ref_ctx *c, int i)
{
    return i < c->nin ? c->in[i] : NULL;
}

/* A shape context for kernels that reuse a shape function's validation:
 * it only carries the node and the diagnostic. */
static inline ir_shape_ctx mv_err_ctx(const ir_ref_ctx *c)
{
    ir_shape_ctx s = {.node = c->node, .diag = c->diag};
    return s;
}

/* The length of a 1-D input (1 for a scalar) from its type, or -1 if
 * unknown. */
static inline int64_t mv_len_1d(const ir_type *t)
{
    if (t && t->rank == 1 && ir_dim_is_const(t->dims[0]))
        return t->dims[0].v;
    if (t && t->rank == 0)
        return 1;
    return -1;
}

static inline char *mv_elem(const ir_tensor *t, int64_t i)
{
    return (char *)t->data + (size_t)i * ir_dtype_size(t->dtype);
}

/* Copies the view of src with the given dims and element strides (any
 * sign, 0 repeats), starting at element `base`, into contiguous dst.
 * Adjacent dims that are contiguous in src are merged, and unit-stride
 * innermost runs are copied with memcpy. */
void ir_mv_copy_view(void *dst, const void *src, size_t esz, int rank,
                     const int64_t *dims, const int64_t *strides, int64_t base);

/* Reads an integer tensor that must be 1-D (or a scalar when
 * allow_scalar) with at most max values into out; returns the count or
 * -1 with a message naming the input `what`. */
int ir_mv_read_ints(ir_shape_ctx *c, const ir_tensor *t, const char *what,
                    int64_t *out, int max, bool allow_scalar);

/* Input i's shape value when it has one and is 1-D with at most max
 * elements (ir/shapeval.c), else NULL. */
const ir_shape_value *ir_mv_sval(const ir_shape_ctx *c, int i, int max);

/* Checks that input i (if present) has an integer dtype. */
int ir_mv_check_int(ir_shape_ctx *c, int i, const char *what);

/* Concrete dims of a static type; -1 if the type is not static. */
int ir_mv_static_dims(const ir_type *t, int64_t *dims);

/* Product of n dims: a constant when all are constant (overflow is an
 * error), the one symbol when the others are all 1, a derived symbol for
 * a product with symbols (ir.h, ir_sym_def), unknown if any is unknown. */
int ir_mv_dim_product(ir_shape_ctx *c, const ir_dim *d, int n, ir_dim *out);

/* Checks that the constant dims of t (an output type) do not add up to
 * more than IR_MAX_TENSOR_BYTES, so hostile shapes fail where they arise. */
int ir_mv_check_size(ir_shape_ctx *c, const ir_type *t);

/* Element-wise update with a reduction, for the scatter ops. */
enum { MV_RED_NONE, MV_RED_ADD, MV_RED_MUL, MV_RED_MAX, MV_RED_MIN };
int ir_mv_reduction(ir_shape_ctx *c, const char *s);
void ir_mv_reduce_elem(ir_tensor *out, int64_t oi, const ir_tensor *upd, int64_t ui, int red);

/* The cosine-sum coefficients a0, a1, a2 of a window op (HannWindow,
 * HammingWindow, BlackmanWindow): w = a0 - a1 cos(t) + a2 cos(2t). */
void ir_window_coeffs(ir_op op, double a[3]);

#endif
