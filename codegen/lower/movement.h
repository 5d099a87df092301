/* movement.h - helpers shared by the data-movement lowering files
 * (movement.c: views, padding and generators; gather_scatter.c:
 * ops driven by index tensors: gathers, scatters, OneHot...).
 */
#ifndef ICC_CG_LOWER_MOVEMENT_H
#define ICC_CG_LOWER_MOVEMENT_H

#include "codegen/lower/internal.h"

/* Appends loops over type t's dims to b and returns the innermost body
 * (the elementwise family in lower.c builds its nest with it too);
 * idx receives one index expression per dim. When par (a kernel of one
 * loop nest) the outermost loop is PARALLEL, over the leading constant
 * dims flattened until it has enough iterations; the innermost is VECTOR
 * when vec (unit-stride accesses), the rest SERIAL. NULL on out of
 * memory. */
kir_block *mv_nest(lctx *c, kir_block *b, const ir_type *t, bool par, bool vec, kir_expr **idx);

/* The vector width for elements of dt. */
int mv_width(lctx *c, ir_dtype dt);

/* An index value read from a tensor (any int or float dtype) as an i64
 * position in [0, n): negatives count from the end, the rest is clamped
 * so a hostile index never addresses memory outside the dim. */
kir_expr *mv_index(lctx *c, kir_expr *v, int64_t n);
/* mv_index for data that must be in range, as the reference requires: a
 * value outside [-n, n) makes the run fail (kir_fail) with the
 * interpreter's reason; the kernel still reads the clamped position. The
 * check goes into b, before what b does with the result. */
kir_expr *mv_index_checked(lctx *c, kir_block *b, kir_expr *v, int64_t n);
/* The same for a dim that may be a symbol (the run's value). */
kir_expr *mv_index_dim(lctx *c, kir_expr *v, ir_dim n);
kir_expr *mv_index_checked_dim(lctx *c, kir_block *b, kir_expr *v, ir_dim n);

/* A constant zero / one of dtype dt. */
kir_expr *mv_const(lctx *c, ir_dtype dt, double v);

/* Normalizes axis into [0, rank); false if out of range. */
bool mv_axis(int64_t axis, int rank, int *out);

bool cg_can_lower_movement2(const ir_node *n);
int lower_movement2(lctx *c);

#endif
