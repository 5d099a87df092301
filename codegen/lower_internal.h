/* lower_internal.h - what the lowering files share. */
#ifndef ICC_CG_LOWER_INTERNAL_H
#define ICC_CG_LOWER_INTERNAL_H

#include "codegen/lower.h"

typedef struct {
    const ir_graph *g;
    const ir_node *n;
    kir_kernel *k;
    int buf[64];               /* kernel buffer of each input; -1 if omitted */
    int out;                   /* kernel buffer of output 0 */
    int var[IR_MAX_RANK];      /* loop variable per output dim */
    int orank;
    ir_dtype cdt;              /* compute dtype of floats (f16/bf16 -> f32) */
    int lanes;                 /* the target's vector width in 32-bit lanes */
} lctx;

/* f16/bf16 compute in f32; other dtypes in themselves. */
static inline ir_dtype compute_dtype(ir_dtype t)
{
    return t == IR_F16 || t == IR_BF16 ? IR_F32 : t;
}

/* Contractions, normalizations and data movement (lower_nn.c). */
bool cg_can_lower_nn(const ir_node *n);
/* Builds c->k's body for c->n; -1 on out of memory. */
int lower_nn(lctx *c);

#endif
