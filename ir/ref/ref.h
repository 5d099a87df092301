/* ref.h - helpers shared by shape functions and reference kernels. */
#ifndef ICC_REF_H
#define ICC_REF_H

#include "ir/ops.h"

/* Normalizes axis into [0, rank) (negative counts from the end); -1 and
 * a node-located message if out of range. */
int ir_norm_axis(ir_shape_ctx *c, int64_t axis, int rank, int *out);
int ir_ref_norm_axis(ir_ref_ctx *c, int64_t axis, int rank, int *out);

/* Row-major strides of dims. */
void ir_strides(const int64_t *dims, int rank, int64_t *strides);

/* Advances a multi-index over dims (last dim fastest); false when done. */
bool ir_index_next(int64_t *idx, const int64_t *dims, int rank);

/* Offset into t of the output multi-index oidx (rank orank) under
 * numpy broadcasting (t's dims right-aligned, size-1 dims repeat). */
int64_t ir_bcast_offset(const ir_tensor *t, const int64_t *oidx, int orank);

/* Multidirectional broadcast of types a and b into out (dtype from a).
 * Symbols broadcast against 1 and against themselves; a symbol against a
 * constant > 1 takes the constant; two different symbols give unknown. */
int ir_broadcast_types(ir_shape_ctx *c, const ir_type *a, const ir_type *b, ir_type *out);

/* Reads up to max integer values of t into out; returns the count, or -1
 * (with a message) if t has more than max elements or is not integral. */
int ir_read_i64s(ir_shape_ctx *c, const ir_tensor *t, int64_t *out, int max);

/* Shape op n's [start, end) over a rank-`rank` input: negatives count
 * from the end, both clamp to [0, rank], an empty range when start >= end. */
void ir_shape_op_bounds(const ir_node *n, int rank, int *s, int *e);

/* Output 0 = input 0's type. */
int shape_first_input(ir_shape_ctx *c);

/* Fills t with an unknown shape of the given rank (or unknown rank). */
void ir_type_unknown(ir_type *t, ir_dtype dt, int rank);

#endif
