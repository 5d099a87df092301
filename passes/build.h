/* build.h - small graph-building steps the passes share: an i64 shape
 * constant, a Reshape and a Transpose appended to a graph with their
 * result's type inferred. Names are fresh from a base and a suffix
 * (ir_graph_fresh_name) unless the caller gives the result's name.
 */
#ifndef ICC_PASSES_BUILD_H
#define ICC_PASSES_BUILD_H

#include "ir/ir.h"

/* A new i64 constant [n] holding v, named fresh from base + suffix;
 * NULL (with d set) on failure. */
ir_value *pb_i64_const(ir_graph *g, icc_diag *d, const char *base, const char *suffix, const int64_t *v, int n);

/* op(in[0..nin)) with one result appended to g, the result named
 * out_name or fresh from base + suffix; the caller sets attributes and
 * then infers the type. NULL on failure. */
ir_node *pb_node(ir_graph *g, icc_diag *d, int op, const char *base, const char *suffix, int nin, ir_value *const *in,
                 const char *out_name);

/* Reshape(x, [dims[0..r)]) appended to g: its shape constant named from
 * x + "_shape", its result out_name or fresh from x + "_r"; NULL on
 * failure. */
ir_value *pb_reshape(ir_graph *g, icc_diag *d, ir_value *x, const int64_t *dims, int r, const char *out_name);

/* Transpose(x) {perm = perm[0..r)} appended to g, its result out_name or
 * fresh from x + "_t"; NULL on failure. */
ir_value *pb_transpose(ir_graph *g, icc_diag *d, ir_value *x, const int64_t *perm, int r, const char *out_name);

#endif
