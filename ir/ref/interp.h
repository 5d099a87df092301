/* interp.h - the reference interpreter: runs a graph node by node with
 * the registry's shape functions and reference kernels. It is the oracle
 * for constant folding, `icc verify` and every backend test. */
#ifndef ICC_INTERP_H
#define ICC_INTERP_H

#include "ir/ir.h"

/* Evaluates one node on concrete inputs (in[i] NULL for an omitted
 * optional input). On success out[0..nout-1] are filled; each data buffer
 * is malloc'd and owned by the caller (free(out[i].data)). On failure
 * nothing is left allocated. */
int ir_eval_node(const ir_node *n, const ir_tensor *const *in, ir_tensor *out,
                 icc_diag *d);

/* Same, but where storage[i] is non-NULL output i is written there (the
 * caller owns it; it holds at least the output's bytes and may be an
 * input's buffer when the op runs in place). storage may be NULL. */
int ir_eval_node_into(const ir_node *n, const ir_tensor *const *in, ir_tensor *out,
                      void *const *storage, icc_diag *d);

/* Evaluates an If, Loop or Scan (IR_F_CONTROL) by running its subgraphs
 * with ir_interp_run; same contract as ir_eval_node_into, which calls it. */
int ir_eval_control(const ir_node *n, const ir_tensor *const *in, ir_tensor *out,
                    void *const *storage, icc_diag *d);

/* Runs g. inputs[i] matches g->inputs[i] (borrowed; dtype and rank must
 * match, and constant dims must agree). outputs[0..g->noutputs-1] receive
 * malloc'd data owned by the caller. Values the memory plan placed (the
 * plan pass) live in one arena at their offsets, so a wrong plan gives
 * wrong results rather than going unnoticed. */
int ir_interp_run(const ir_graph *g, const ir_tensor *inputs, ir_tensor *outputs,
                  icc_diag *d);

/* Sees every graph input and every node output of a run, once, as soon as
 * it exists (t is only valid during the call: copy what must outlive it).
 * Returning < 0 (with d set) stops the run. */
typedef int (*ir_interp_hook)(void *ctx, const ir_value *v, const ir_tensor *t, icc_diag *d);

/* ir_interp_run calling hook(ctx, ...) for each value; outputs may be NULL
 * when the caller only watches. */
int ir_interp_run_hooked(const ir_graph *g, const ir_tensor *inputs, ir_tensor *outputs,
                         ir_interp_hook hook, void *ctx, icc_diag *d);

/* Frees the data of n tensors (not the array). */
void ir_tensors_free(ir_tensor *t, int n);

#endif
