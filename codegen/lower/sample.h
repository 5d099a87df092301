/* sample.h - what einsum_topk.c, resample.c, unique.c and detect.c
 * share: the resampling ops', Unique's and the detection ops' entry
 * points and small expression helpers.
 */
#ifndef ICC_CG_LOWER_MISC_H
#define ICC_CG_LOWER_MISC_H

#include "codegen/lower/internal.h"

bool can_resize(const ir_node *n);
int lower_resize(lctx *c);
bool can_grid_sample(const ir_node *n);
int lower_grid_sample(lctx *c);
bool cg_can_lower_unique(const ir_node *n);
int lower_unique(lctx *c);
bool can_roi_align(const ir_node *n);
int lower_roi_align(lctx *c);
bool can_nms(const ir_node *n);
int lower_nms(lctx *c);

static inline kir_expr *lw_f64c(kir_kernel *k, double v) { return kir_const_f(k, IR_F64, v); }

/* Binds v with a let statement in b and returns a read of it: the
 * backends evaluate a shared subexpression once per use, so values used
 * many times (coordinates, tap weights) are computed once this way. */
static inline kir_expr *lw_let(lctx *c, kir_block *b, kir_expr *v) { return kir_let(c->k, b, v); }

/* f64 arithmetic shorthands (NULL operands give NULL). */
static inline kir_expr *lw_fadd(kir_kernel *k, kir_expr *a, kir_expr *b) { return kir_op2(k, KIR_ADD, IR_F64, a, b); }
static inline kir_expr *lw_fsub(kir_kernel *k, kir_expr *a, kir_expr *b) { return kir_op2(k, KIR_SUB, IR_F64, a, b); }
static inline kir_expr *lw_fmul(kir_kernel *k, kir_expr *a, kir_expr *b) { return kir_op2(k, KIR_MUL, IR_F64, a, b); }
static inline kir_expr *lw_fdiv(kir_kernel *k, kir_expr *a, kir_expr *b) { return kir_op2(k, KIR_DIV, IR_F64, a, b); }
static inline kir_expr *lw_lt(kir_kernel *k, kir_expr *a, kir_expr *b) { return kir_op2(k, KIR_LT, IR_BOOL, a, b); }
static inline kir_expr *lw_sel(kir_kernel *k, kir_expr *c, kir_expr *a, kir_expr *b)
{
    return kir_op3(k, KIR_SELECT, a ? a->dtype : IR_F64, c, a, b);
}
static inline kir_expr *lw_to_f64(kir_kernel *k, kir_expr *a)
{
    return a && a->dtype != IR_F64 ? kir_op1(k, KIR_CAST, IR_F64, a) : a;
}

/* A value computed in f64 stored as output i's dtype: integers round half
 * to even and saturate (Resize's rule) when `round`, else truncate like the
 * interpreter's double-to-integer stores. */
kir_expr *misc_f64_to_out(lctx *c, int i, kir_expr *v, bool round);

#endif
