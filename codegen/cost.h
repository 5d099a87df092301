/* cost.h - a kernel's work, estimated from its kernel IR, for deciding
 * whether its parallel loop pays for the thread pool's fork/join.
 *
 * The unit is one "op": a load, a store or an arithmetic operation on
 * one vector register (a VECTOR loop of width w counts its body once per
 * w lanes, times the registers w spans). Index arithmetic is not
 * counted (the backend hoists and strength-reduces most of it). Loop
 * spans are evaluated with outer loop variables at their loops' lower
 * bounds and every symbol at 1 (or the caller's estimate), so a span that
 * depends on a symbol is under-estimated: the model then errs towards
 * running serially, which never costs more than the work itself.
 */
#ifndef ICC_CG_COST_H
#define ICC_CG_COST_H

#include "codegen/kir.h"

/* Ops of one iteration of k's outermost PARALLEL loop (or of the whole
 * kernel when it has none); lanes: f32 lanes of the target's vectors.
 * Saturates at INT32_MAX. */
int64_t cg_cost_trip_ops(const kir_kernel *k, int lanes);
/* The same with symbol id s at sym_est[s] (nsyms entries; values below 1,
 * ids past the table: 1): the program's typical values, so a kernel over
 * a symbolic image's height and width is not taken for a tiny one. */
int64_t cg_cost_trip_ops_est(const kir_kernel *k, int lanes, const int64_t *sym_est, int nsyms);

#endif
