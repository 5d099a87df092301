/* stats.h - static cost estimates of nodes and graphs (FLOPs, bytes). */
#ifndef ICC_STATS_H
#define ICC_STATS_H

#include "ir/ir.h"

/* Floating-point operations of one node, from its static types, by the
 * formula its registry row names (IR_FLOP_*, ir/ops.h): a multiply-add
 * counts as 2 in contractions; elementwise ops count one per output
 * element; reductions one per input element; data movement 0.
 * Symbolic dims count as 1 (so the result is per unit of each symbol).
 * Returns false when a needed dim is unknown (then *flops is 0). */
bool ir_node_flops(const ir_node *n, int64_t *flops);

/* The values symbolic dims take in these estimates, on this thread:
 * vals[id] for symbol id < n (other symbols 1); NULL, the default: every
 * symbol 1. (A profiled model's per-kernel costs are fitted in the
 * symbols from estimates at several values: codegen/profile.c.) */
void ir_stats_set_syms(const int64_t *vals, int n);
/* t's element count with symbolic dims at those values; false when the
 * rank or a dim is unknown, or the count overflows. */
bool ir_type_numel_est(const ir_type *t, int64_t *n);

/* Sum over the graph; *exact is false when some node's count is unknown. */
bool ir_graph_has_symbols(const ir_graph *g);
int64_t ir_graph_flops(const ir_graph *g, bool *exact);

#endif
