/* quant.h - the node builders the quantization passes share
 * (passes/quant.c: lower-quant, passes/qdq.c: qdq). Each builder appends
 * one node (or constant) named after the node being rewritten, typed by
 * its shape function, and returns its result; once one has failed they
 * all return NULL with q->failed set and c->diag saying why, so a chain
 * is checked once at its end. Results are owned by the graph. */
#ifndef ICC_PASSES_QUANT_H
#define ICC_PASSES_QUANT_H

#include "passes/pass.h"

typedef struct qbuild {
    pass_ctx *c;
    ir_graph *g;
    const ir_node *n;          /* the node being rewritten (names, attributes) */
    bool failed;               /* a builder failed: c->diag says why */
} qbuild;

/* op(in[0..nin)) with the attributes of `attrs` (NULL: none) and the int
 * attribute key = val (key NULL: none). */
ir_value *qb_emit_full(qbuild *q, int op, int nin, ir_value *const *in, const ir_node *attrs,
                       const char *key, int64_t val);
ir_value *qb_op1(qbuild *q, int op, ir_value *a);
ir_value *qb_op2(qbuild *q, int op, ir_value *a, ir_value *b);
/* op(a [, b]) with the int attribute key = val. */
ir_value *qb_op_kv(qbuild *q, int op, ir_value *a, ir_value *b, const char *key, int64_t val);
/* A constant of dtype t and shape dims[0..rank) holding vals[0..n). */
ir_value *qb_konst(qbuild *q, ir_dtype t, int rank, const int64_t *dims, const double *vals,
                   int64_t n);
ir_value *qb_scalar(qbuild *q, ir_dtype t, double v);
/* v converted to t (v itself when it already has t). */
ir_value *qb_cast(qbuild *q, ir_value *v, ir_dtype t);
/* v reshaped to dims[0..rank). */
ir_value *qb_reshape(qbuild *q, ir_value *v, int rank, const int64_t *dims);
/* Points the uses of n's output i at v and gives v that output's name
 * (shared only until the caller erases n). */
void qb_replace_output(qbuild *q, ir_node *n, int i, ir_value *v);

#endif
