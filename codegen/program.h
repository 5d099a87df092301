/* program.h - a whole model as every backend sees it, before any backend
 * touches it: the kernels in run order with the buffers they bind, the
 * per-item batch loops, the parallel trip counts, the symbol table, the
 * arena layout (static offsets, or slots laid out at run time), the
 * run-time shape checks and their messages, the weights blob, the I/O
 * tensor descriptions and the outputs the run copies.
 *
 * Usage (a backend's compile step, codegen/backend.h, receives p):
 *
 *     cg_schedule s;
 *     if (cg_schedule_init(&s, be->target_desc(tgt), &d) < 0) ...;
 *     cg_program *p;
 *     if (cg_program_build(g, &s, "model", false, &p, &d) < 0) ...;
 *     for (int i = 0; i < p->nkernels; i++) ... p->kernels[i].k ...;
 *     cg_program_destroy(p);
 *
 * The program is data only: it says what `<prefix>_run` does (fill the
 * symbol table from the run's dims, lay out the arena, check the shapes,
 * run the steps: kernels, and for an If a branch on its condition and the
 * copies of what a branch passes on; copy outputs) and what the `<prefix>_model`
 * descriptor (include/icc/runtime.h) holds; how that becomes code is the
 * backend's (codegen/llvm/model.c for the LLVM one). See docs/backends.md.
 */
#ifndef ICC_CG_PROGRAM_H
#define ICC_CG_PROGRAM_H

#include "codegen/kir.h"
#include "codegen/lower.h"
#include "codegen/schedule.h"

/* A byte or element count the run computes from the symbols:
 * scale x dims[0] x ... x dims[n-1], evaluated left to right (a dim is a
 * constant, or symbol dims[i].sym's value at run time). */
typedef struct cg_size {
    int64_t scale;
    int n;
    ir_dim dims[IR_MAX_RANK];
} cg_size;

/* One kernel of the run, in order. Its buffers (k->bufs) are its
 * bindings: INPUT/OUTPUT index the run's inputs/outputs arrays, WEIGHT
 * offsets are bytes into the weights blob, ARENA offsets are bytes into
 * the arena, or, in a dynamic program, the index of a slot of p->slots
 * whose offset the run computes. */
typedef struct cg_kernel {
    kir_kernel *k;             /* owned by the program */
    const ir_node *node;       /* the fused group's root, borrowed from the graph (for messages) */
    /* A kernel lowered for one item of a batch its op takes as static:
     * the run calls it once per item i in [0, value of batch_sym), with
     * buffer b moved by i * item_bytes[b] bytes (scale 0: the same buffer
     * for every item; other symbols than the batch may be in it: an
     * image's H and W). batch_sym 0: called once; item_bytes is NULL. */
    int32_t batch_sym;
    cg_size *item_bytes;       /* k->nbufs entries when batch_sym; owned */
    /* The trip count of the kernel's outermost loop when it is PARALLEL
     * from 0: a constant (v >= 2) or a symbol's value (sym > 0), split
     * over the runtime's threads through begin/end; {0, 0}: the kernel
     * is called once with the whole range. */
    ir_dim trips;
    /* Estimated ops of one trip (codegen/cost.h), and the fewest trips
     * of a parallel chunk (cg_schedule.par_chunk_ops worth of them): the
     * run gives a thread no smaller piece, and runs the kernel serially
     * when that leaves fewer than two chunks. */
    int64_t trip_ops;
    int64_t min_chunk_trips;
} cg_kernel;

/* An intermediate of a dynamic program: at run time it goes at the
 * lowest 64-aligned offset above the ends of the slots in live_with (so
 * any symbol values are safe), bytes long; the slots are placed in
 * cg_program.slot_order, live_with's before each. */
typedef struct cg_slot {
    int value;                 /* the value's id in its scope's graph; -1 for space a Loop or
                                  Scan keeps through its body (inputs, counter, rows) */
    cg_size bytes;
    int *live_with;            /* the slots it goes above, -1 ended; owned */
} cg_slot;

/* A run-time shape check: the run returns ICC_ERR_SHAPE | (message << 8)
 * when a != b. DIM compares two dims, COUNT two products (element counts,
 * cg_size); LE fails when dim a > dim b (a slice to a symbolic end within
 * a fixed dim). Checks always true for static dims are left out. */
typedef enum cg_check_kind { CG_CHECK_DIM, CG_CHECK_COUNT, CG_CHECK_LE } cg_check_kind;
typedef struct cg_check {
    cg_check_kind kind;
    ir_dim a, b;               /* DIM, LE */
    cg_size ca, cb;            /* COUNT */
    int message;               /* 1-based index into p->messages */
} cg_check;

/* One icc_tensor_desc (include/icc/runtime.h). Strings are borrowed
 * from the graph. */
typedef struct cg_tensor {
    const char *name;
    int onnx_dtype;
    int rank;
    int64_t dims[IR_MAX_RANK];           /* -1 for a symbolic dim */
    const char *dim_names[IR_MAX_RANK];  /* the symbol's name, or NULL for a fixed dim */
    bool named;                /* some dim is symbolic (the descriptor gets dim_names) */
} cg_tensor;

/* An output no kernel writes (a graph input or constant passed through,
 * or a value listed again after its first output slot): the run copies
 * bytes from src into outputs[output]. */
typedef struct cg_copy {
    int output;
    cg_binding src;            /* INPUT, OUTPUT (an earlier slot) or WEIGHT */
    cg_size bytes;
} cg_copy;

/* One step of the run. The run is its steps in order, with jumps: an If
 * is a BRANCH over its then branch's steps (taken when the condition is
 * false) to its else branch's, whose end the then branch JUMPs past. A
 * branch computes its outputs where the If's outputs live; an output it
 * only passes on (a captured value, a constant, a value listed twice) is
 * a COPY at the end of its steps. A Loop SETs its counter to 0 and COPYs
 * the initial values (and condition) into its body's inputs, then at its
 * head LOOP_TESTs (leave when counter >= trip count or the condition is
 * false), runs the body's steps, COPYs the body's carried outputs back
 * into its inputs, INCs the counter and JUMPs to the head; after it, the
 * carried inputs are COPYd into the Loop's outputs. A Loop's scan
 * outputs and a Scan (its length a constant trip count) add SLICE steps:
 * each scan input's slice into its body input before the body, each
 * scan output's row into the stacked output after it. target may be
 * nsteps: the end, where the output copies run. */
typedef enum cg_step_kind {
    CG_STEP_KERNEL, CG_STEP_BRANCH, CG_STEP_JUMP, CG_STEP_COPY, CG_STEP_SET, CG_STEP_LOOP_TEST, CG_STEP_INC,
    CG_STEP_SLICE,
} cg_step_kind;
/* SLICE: one iteration's slice of a scanned tensor, or one iteration's
 * result into its place in a stacked one. With t the counter's value (t'
 * = len - 1 - t when reverse), it copies rows blocks of row_bytes bytes:
 * block r from src + t' * src_step + r * src_stride to dst + t' *
 * dst_step + r * dst_stride. A slice along axis a of a tensor of dims d
 * has rows = d[0] x ... x d[a-1] and row_bytes = the bytes of one index
 * of axis a; the scanned or stacked side (the whole tensor: dst when
 * stack, src when scanning) strides d[a] x row_bytes and steps row_bytes
 * per iteration, the other side is contiguous (cg_slice_strides). The
 * int64 fields hold those counts for static dims (what a backend without
 * symbols reads: symbolic when sym is set); zlen, zrows and zrow_bytes
 * hold them as the run computes them (symbols allowed). */
typedef struct cg_slice {
    cg_binding counter;        /* int64 */
    int64_t len;
    bool reverse;
    int64_t rows, row_bytes;
    bool sym, stack;
    cg_size zlen, zrows, zrow_bytes;
} cg_slice;

/* A static slice's strides and steps in bytes ({src, dst} each). */
static inline void cg_slice_strides(const cg_slice *sl, int64_t stride[2], int64_t step[2])
{
    int64_t whole = sl->len * sl->row_bytes;
    stride[0] = sl->stack ? sl->row_bytes : whole;
    stride[1] = sl->stack ? whole : sl->row_bytes;
    step[0] = sl->stack ? 0 : sl->row_bytes;
    step[1] = sl->stack ? sl->row_bytes : 0;
}
typedef struct cg_step {
    cg_step_kind kind;
    int kernel;                /* KERNEL: index into kernels */
    cg_binding cond;           /* BRANCH, LOOP_TEST: a bool (one byte); jump to target when it is 0 */
    bool has_cond, has_trips;  /* LOOP_TEST: which of cond and src (the trip count) there are */
    int target;                /* BRANCH, JUMP, LOOP_TEST: a step index */
    /* COPY: bytes from src to dst (INPUT, OUTPUT, WEIGHT or ARENA); SET:
     * value into dst, width bytes (1 or 8); LOOP_TEST: dst the counter,
     * src the trip count (int64 each); INC: the counter dst += 1 */
    cg_binding dst, src;
    cg_size bytes;
    int64_t value;             /* SET; LOOP_TEST with const_trips: the trip count */
    int width;
    bool const_trips;          /* LOOP_TEST: the trip count is value, not src */
    int32_t trips_sym;         /* LOOP_TEST with const_trips: > 0, the symbol whose value is the
                                  trip count (value is then its value at 1) */
    cg_slice slice;            /* SLICE (dst, src are the tensors' bases) */
} cg_step;

/* What the descriptor says of one kernel of a profiled program
 * (icc_kernel_info). */
/* A kernel's FLOPs or bytes as a polynomial in the symbols its values'
 * dims name (codegen/profile.c fits it to the estimates, ir/stats.h):
 * the sum of coef x the product of sym[i]^pow[i]. nterms -1: none (the
 * static value, symbols as 1, is all there is). */
enum { CG_COST_VARS = 12 };
typedef struct cg_cost_term {
    double coef;
    int nf;
    int32_t sym[CG_COST_VARS];
    int pow[CG_COST_VARS];
} cg_cost_term;
typedef struct cg_cost_poly {
    int nterms;
    cg_cost_term *terms;       /* owned */
} cg_cost_poly;

typedef struct cg_kernel_info {
    char *name, *ops;          /* owned */
    int64_t flops, bytes;      /* with every symbol 1 */
    cg_cost_poly cost[2];      /* flops, bytes in the symbols (a dynamic program) */
    icc_kernel_kind kind;      /* what its arithmetic runs on (icc_model_desc.kernel_kinds) */
} cg_kernel_info;
/* One constant's bytes in the weights blob; the gaps are zero. */
typedef struct {
    int64_t offset, bytes;
    const void *data;
} cg_weight_piece;

typedef struct cg_program {
    const char *prefix;        /* symbol prefix; borrowed from the caller of cg_program_build */
    int nkernels;
    cg_kernel *kernels;
    int nsteps;
    cg_step *steps;            /* owned; every kernel is the KERNEL step of one */
    /* Symbols: graph symbol ids are 1..nsyms-1; kernels read symbol id s
     * at syms[s] (a table of nsyms + 1 entries); the run receives the
     * bound ones in descriptor order, sym_desc[s] (-1: not bound). */
    int nsyms;
    int *sym_desc;             /* nsyms + 1 entries; owned */
    int nsymbols;              /* symbols in the descriptor */
    const char **symbol_names; /* nsymbols, descriptor order; borrowed from the graph, array owned */
    /* The last nderived of them are derived symbols (ir_sym_def: a Conv's
     * output height) that some value's dims use, directly or through
     * another; derived[i] defines descriptor symbol nsymbols - nderived +
     * i, its operands' symbols graph ids (sym_desc maps them). The runtime
     * computes them before a run (icc_model_desc.derived). */
    int nderived;
    ir_sym_def *derived;       /* owned */
    int *derived_message;      /* nderived: the 1-based message naming the first node whose
                                  results use the symbol ("node 'p' (MaxPool)"), 0 none; owned */
    bool *derived_in_sub;      /* nderived: only subgraphs' values use it (ICC_SYM_IN_SUBGRAPH:
                                  the subgraph's kernels check it); owned */
    /* The arena: static offsets (dynamic false) or nslots slots laid out
     * per run; arena_bytes is the static size, or with every symbol 1
     * (what the descriptor records; the runtime asks the layout for
     * more). */
    bool dynamic;
    int64_t arena_bytes;
    int nslots;
    cg_slot *slots;            /* owned */
    int *slot_order;           /* the order the run places them in (each slot's live_with
                                  before it); owned */
    int nchecks;
    cg_check *checks;          /* owned */
    int nmessages;
    char **messages;           /* owned */
    /* The weights: constants in value order, 64-aligned, described by
     * pieces that point into the graph's constants (a large external one
     * is a mapping of the model's file); assembled only on request. */
    int nwpieces;
    cg_weight_piece *wpieces;  /* owned array; data borrowed from the graph */
    unsigned char *weights;    /* NULL until cg_program_weights; weights_bytes (+1) bytes; owned */
    int64_t weights_bytes;
    uint64_t weights_checksum; /* FNV-1a 64, what the runtime verifies for mapped weights */
    bool external_weights;     /* the descriptor's weights pointer is NULL: the runtime maps X.weights */
    int ninputs, noutputs;
    cg_tensor *inputs, *outputs;   /* owned */
    int ncopies;
    cg_copy *copies;           /* owned */
    /* --profile: nkernels entries (the descriptor lists those from
     * ninit_kernels on), and the run times every kernel of the run
     * (icc_kernel_env.profile_ns); NULL: no timing code. */
    cg_kernel_info *profile;   /* owned */
    /* Load-time kernels (ir_graph_load_time: computed from constants
     * only): kernels[0, ninit_kernels) and their KERNEL steps [0,
     * ninit_steps) make the model's init function, which runs them once,
     * when the model is loaded, with the model's init buffer (init_bytes,
     * their results then their kernel-scope scratch) as their arena; the
     * run's steps are [ninit_steps, nsteps). The run reads those results
     * as WEIGHT bindings of index CG_WEIGHT_INIT: byte offsets into the
     * init buffer (icc_kernel_env.init). */
    int ninit_kernels, ninit_steps;
    int64_t init_bytes;
} cg_program;

/* cg_binding.index of a WEIGHT in the init buffer rather than the weights. */
#define CG_WEIGHT_INIT 1

/* Builds the program of g under schedule s (both borrowed; g must
 * outlive the program, whose kernels and names point into it). g must be
 * fully optimized and planned (the plan pass last: every intermediate
 * needs an arena offset); its symbolic dims must be bound by inputs.
 * prefix (NULL or "": "model") names the kernels `<prefix>_k<node>`.
 * The caller owns *out (cg_program_destroy). Errors name what is missing:
 * all nodes that cannot be compiled yet, in one message; a symbolic dim
 * to pin with --shape; an unplanned value. g is only read (lowering a
 * batched node pins its types for the call and restores them). */
int cg_program_build(const ir_graph *g, const cg_schedule *s, const char *prefix, bool external_weights,
                     cg_program **out, icc_diag *d);
void cg_program_destroy(cg_program *p);

/* Makes p a profiled program (cg_program.profile) from the graph it was
 * built from: each kernel's node names and op types joined by '+', its
 * FLOPs and bytes (ir_graph_kernel_costs), and its kind on target t (the
 * schedule's; NULL: every kernel ICC_KERNEL_F32). codegen/profile.c. */
int cg_program_profile(const ir_graph *g, cg_program *p, const icc_target_desc *t, icc_diag *d);

/* The weights blob assembled in memory (for a backend that embeds it);
 * owned by p, NULL with d set (d may be NULL) on out of memory. */
const unsigned char *cg_program_weights(cg_program *p, icc_diag *d);
/* Writes the blob to path piece by piece, never assembling it (through
 * a temporary name and a rename: a failure leaves no file); -1 with d. */
int cg_program_write_weights(const cg_program *p, const char *path, icc_diag *d);
/* Hands the weights blob to the caller (malloc'd; the caller frees it)
 * and its size; p keeps no blob afterwards. NULL on out of memory. */
unsigned char *cg_program_take_weights(cg_program *p, int64_t *bytes);

/* The kernels of g as text (--emit=kernels, kir_print), malloc'd; NULL
 * with d set. */
char *cg_kernels_text(const ir_graph *g, const cg_schedule *s, const char *prefix, icc_diag *d);

#endif
