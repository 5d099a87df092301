/* qgemm.h - the INT8 contraction kernel (qgemm.c): MatMulInteger on
 * vpmaddwd pairs, called by the conv family (conv.c), which owns the op.
 */
#ifndef ICC_CG_LOWER_QGEMM_H
#define ICC_CG_LOWER_QGEMM_H

#include "codegen/lower/internal.h"

/* Whether lower_qgemm handles c->n (a MatMulInteger the family accepts). */
bool qgemm_ok(const lctx *c);

/* Fills c->k's body; 0, or -1 on out of memory. */
int lower_qgemm(lctx *c);

#endif
