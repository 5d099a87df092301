/* reduce.h - what the reduction lowerings (reduce.c) and the
 * normalization lowerings (norm.c) share: loop nests split into
 * kept dims (outside, parallel) and reduced dims (inside, one nest per
 * pass over the data), and conversions with the reference's rules.
 */
#ifndef ICC_CG_LOWER_REDUCE_H
#define ICC_CG_LOWER_REDUCE_H

#include "codegen/lower/internal.h"

/* Loops over the n extents dims, appended to b; idx[i] receives index i.
 * At the kernel's top level the outermost loop is parallel, and several
 * constant extents are flattened into that one loop so threads get work
 * even when the leading extent is 1. Returns the innermost body (b when
 * n is 0), NULL on out of memory. */
kir_block *red_nest(lctx *c, kir_block *b, int n, const ir_dim *dims, kir_expr **idx);

/* red_nest over the dims of t that red[] does not mark; sets idx[d] of
 * those dims. */
kir_block *red_outer(lctx *c, const ir_type *t, const bool *red, kir_expr **idx);

/* red_outer, or where the schedule has GPU rows (gpu_rows: CUDA), the
 * kernel is empty, t static and the rows (the dims red[] marks) hold at
 * least 64 elements, a thread block of RED_GPU_THREADS per kept position
 * (a grid loop over them, a thread loop inside) with c->gpu_row set to
 * the thread's index; then red_pass and red_reduce give each thread the
 * row positions t, t + RED_GPU_THREADS, ... (the same in every pass, so
 * what a thread stores it reads back itself) and red_reduce combines the
 * threads' partials through shared memory (a tree of barriers), every
 * thread getting the total. For the callers whose passes are only
 * red_pass and red_reduce at the body's top level (Softmax, the layer
 * norms). NULL on out of memory. */
enum { RED_GPU_THREADS = 128 };
kir_block *red_outer_rows(lctx *c, const ir_type *t, const bool *red, kir_expr **idx);

/* One pass over the dims of t that red[] marks, appended to b with fresh
 * variables; sets idx[d] of those dims. The innermost loop is of kind
 * `last` (KIR_VECTOR gets the width of dtype vdt). */
kir_block *red_pass(lctx *c, kir_block *b, const ir_type *t, const bool *red, kir_expr **idx,
                    kir_loop last, ir_dtype vdt);

/* The term of a reduction at index ix (ud: the caller's context). */
typedef kir_expr *(*red_term_fn)(lctx *c, kir_expr **ix, void *ud);

/* acc = op(acc, term(ix)) over the dims of t that red[] marks, appended
 * to b (acc already set); op is ADD, MAX or MIN. A float reduction whose
 * innermost dim is t's last (unit stride) with a constant extent runs it
 * as a VECTOR loop (up to 4 x red_width lanes), which licenses the
 * emitter to keep a vector of partial results and combine them at the
 * end. */
int red_reduce(lctx *c, kir_block *b, const ir_type *t, const bool *red, kir_expr **ix, int acc,
               kir_op op, red_term_fn term, void *ud);

/* The number of elements of t's dims marked by red[], as an i64 expression. */
kir_expr *red_count(lctx *c, const ir_type *t, const bool *red);

/* v converted to dt; floats to integers go through i64 (saturating, NaN
 * to 0) and then wrap, as ir_tensor_setf stores them. */
kir_expr *red_cvt(lctx *c, kir_expr *v, ir_dtype dt);

/* Input i at idx (its own rank), converted to dt. */
kir_expr *red_load(lctx *c, int i, kir_expr *const *idx, ir_dtype dt);

/* Input i broadcast (numpy, right-aligned) against a rank-r index. */
kir_expr *red_load_bcast(lctx *c, int i, kir_expr *const *idx, int r, ir_dtype dt);

/* A float constant (dt float) or an integer one. */
kir_expr *red_const(lctx *c, ir_dtype dt, double v);

/* The vector width, in elements of dt, of a KIR_VECTOR loop. */
int red_width(lctx *c, ir_dtype dt);

#endif
