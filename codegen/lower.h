/* lower.h - graph nodes to kernels.
 *
 * Each node, or fused group (ir.h; lowered at its root), becomes one kernel whose
 * loop nest covers its output's index space: the outermost loop parallel,
 * the innermost vectorized, the node's reference semantics (ir/ref/) as a
 * scalar expression. Broadcast inputs are read through index maps (size-1
 * or missing dims read index 0). f16/bf16 compute in f32 and round once at
 * the store, as the reference does through double.
 */
#ifndef ICC_CG_LOWER_H
#define ICC_CG_LOWER_H

#include "codegen/kir.h"
#include "codegen/schedule.h"

/* Where a graph value lives at run time, by value id (the model compiler
 * fills this from the graph's inputs, outputs, weights layout and memory
 * plan). */
typedef struct cg_binding {
    kir_buf_kind kind;
    int index;                 /* INPUT/OUTPUT position */
    int64_t offset;            /* WEIGHT/ARENA byte offset */
} cg_binding;

/* True if cg_lower_node supports n's op and dtypes. */
bool cg_can_lower(const ir_node *n);

/* True if n has symbolic dims that its lowering reads as the run's
 * values where they are: an IR_F_SYMBOLIC op, or one whose family checks
 * the node (a Conv or pool with a symbolic height or width, a Resize or
 * Concat over them). Other symbolic nodes compile only per batch item. */
bool cg_can_lower_symbolic(const ir_node *n);

/* True if n's fast schedules take the batch as a constant, so that with
 * a symbolic batch it runs faster per item than with the batch read at
 * run time, even where cg_can_lower_symbolic takes it: the convolutions,
 * pools and MatMul (the depthwise, tiled and ConvTranspose phase
 * schedules, the GEMM tile; the program builder, codegen/program.c). */
bool cg_lower_prefers_items(const ir_node *n);

/* Lowers node n of g to a new kernel named `name` (the caller destroys
 * it). bind[v->id] says where each of n's inputs and outputs lives; s is
 * the target's schedule (cg_schedule_init), borrowed. Returns 0, or -1
 * with a node-located message. */
int cg_lower_node(const ir_graph *g, const ir_node *n, const cg_binding *bind, const cg_schedule *s,
                  const char *name, kir_kernel **out, icc_diag *d);

#endif
