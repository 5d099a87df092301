/* pool_blocked.h - MaxPool and AveragePool on NCHWc-blocked data
 * (pool_blocked.c), the form passes/layout.c gives a pool over blocked
 * data: the same op over three spatial dims [H, W, lanes] whose lanes'
 * window is 1 wide. conv.c fills the geometry from its window and hands
 * such a pool here.
 */
#ifndef ICC_LOWER_POOL_BLOCKED_H
#define ICC_LOWER_POOL_BLOCKED_H

#include "codegen/lower/internal.h"

typedef struct cg_pool2d {
    int64_t batch, cin, lanes;         /* cin: channel blocks */
    int64_t in[2], out[2], k[2], s[2], d[2], pb[2], pe[2];
    /* the batch and plane as dims: symbolic ones are the run's values
     * (batch, in and out then unused there) */
    ir_dim bd, ind[2], outd[2];
} cg_pool2d;

/* n (MaxPool without Indices, or AveragePool; f32) may run with the lanes
 * as the vector. */
bool cg_pool_blocked_ok(const lctx *c);
int lower_pool_blocked(lctx *c, const cg_pool2d *g);

#endif
