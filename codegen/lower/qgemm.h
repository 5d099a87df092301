/* qgemm.h - the INT8 contraction kernels (qgemm.c): MatMulInteger and
 * ConvInteger on vpmaddwd pairs, called by the conv family (conv.c),
 * which owns both ops.
 */
#ifndef ICC_CG_LOWER_QGEMM_H
#define ICC_CG_LOWER_QGEMM_H

#include "codegen/lower/internal.h"

/* Whether lower_qgemm handles c->n (a MatMulInteger the family accepts). */
bool qgemm_ok(const lctx *c);
/* Whether lower_qgemm reads c->n's B as packed_b says: not packed, or
 * packed in quads of k (packed_k = 4, the pack-b pass) as whole panels of
 * a width the lanes divide, an i8 B [K, N] with a buffer of its own (else
 * MatMulInteger takes the scalar loop, which reads any packing). */
bool qgemm_packed_ok(const lctx *c);

/* Fills c->k's body; 0, or -1 on out of memory. */
int lower_qgemm(lctx *c);

/* A ConvInteger's window (conv.c's geometry, group 1): spatial rank n,
 * per spatial dim input/output sizes, kernel, stride, dilation and the
 * padding before. */
typedef struct {
    int n;
    int64_t batch, cin, cout;
    int64_t in[IR_MAX_RANK], out[IR_MAX_RANK], k[IR_MAX_RANK], s[IR_MAX_RANK], d[IR_MAX_RANK], pb[IR_MAX_RANK];
} qconv_geom;

/* Whether lower_qconv handles ConvInteger c->n of window g. */
bool qconv_ok(const lctx *c, const qconv_geom *g);

/* Fills c->k's body; 0, or -1 on out of memory. */
int lower_qconv(lctx *c, const qconv_geom *g);

#endif
