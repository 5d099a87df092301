/* verify.h - what `icc verify` needs beside the driver: inputs made up
 * from a type or read from a folder of input sets, the error metrics of
 * an output against its reference (max abs/rel error, cosine, SQNR, top-k
 * agreement of class scores), and the interpreter run that keeps every
 * value, for the per-node comparison of two graphs by value name.
 *
 *     icc_verify_sets s;
 *     if (icc_verify_load_sets("calib/", g, &s, &d) < 0) ...   // calib/0/x.npy, calib/1/x.npy
 *     icc_verify_metrics m;
 *     icc_verify_measure(&got, &ref, &m);                       // same shape, checked by compare
 */
#ifndef ICC_TOOLS_VERIFY_H
#define ICC_TOOLS_VERIFY_H

#include <stdio.h>

#include "icc/runtime.h"
#include "ir/ir.h"
#include "passes/precision.h"

/* Allocates t for a static type and fills it with a fixed pseudo-random
 * pattern from seed: floats uniform in [-1, 1), integers in [0, 4) (valid
 * as small indices), bools 0/1. -1 with d set on a non-static type or
 * out of memory. */
int icc_verify_random_input(ir_tensor *t, const ir_type *type, uint64_t seed, icc_diag *d);

typedef struct icc_verify_diff {
    double max_abs, max_rel;   /* over all elements (NaN == NaN counts as equal) */
    int64_t bad;               /* elements with |got - want| > atol + rtol*|want| */
    bool shape_differs;
} icc_verify_diff;

/* Compares got with want elementwise (as doubles). */
void icc_verify_compare(const ir_tensor *got, const ir_tensor *want, double rtol, double atol,
                        icc_verify_diff *out);

/* ---- metrics ------------------------------------------------------------ */

/* How close an output is to its reference, on one input set. */
typedef struct icc_verify_metrics {
    double max_abs, max_rel;   /* as icc_verify_compare (rel: |got-ref|/|ref|, inf where ref is 0) */
    double cosine;             /* sum(ref*got)/sqrt(sum ref^2 * sum got^2); 1 when both are 0 */
    double sqnr_db;            /* 10*log10(sum ref^2 / sum (ref-got)^2); inf when equal */
    int64_t rows;              /* rows of class scores (0: the output does not look like them) */
    int64_t top1;              /* rows whose highest class is the same in got and ref */
    int64_t top5;              /* rows whose ref's highest class is among got's five highest */
} icc_verify_metrics;

/* The number of classes when t looks like class scores: a float tensor of
 * shape [C], [N,C] or [N,C,1,...,1] with C >= 5; 0 otherwise. */
int64_t icc_verify_classes(const ir_tensor *t);

/* Measures got against ref, which have the same dtype class and numel
 * (icc_verify_compare says whether shapes differ; check that first). */
void icc_verify_measure(const ir_tensor *got, const ir_tensor *ref, icc_verify_metrics *m);

/* The metrics of one output over several input sets: the worst of each
 * (largest errors, smallest cosine and SQNR) and the mean; top-k counts
 * are summed over all sets' rows. Start from {0} and add each set. */
typedef struct icc_verify_summary {
    int nsets;
    int nfinite;               /* sets with a finite SQNR: the mean is over those */
    icc_verify_metrics worst, mean;
} icc_verify_summary;

void icc_verify_summary_add(icc_verify_summary *s, const icc_verify_metrics *m);

/* Prints v for JSON: inf as 1e999 (which JSON readers take as infinity),
 * NaN as null. */
void icc_verify_json_number(FILE *f, double v);
/* Prints s as a JSON string. */
void icc_verify_json_string(FILE *f, const char *s);

/* ---- input sets ----------------------------------------------------------- */

/* Input sets for g's inputs, read from a folder: DIR/NAME.npy (one set),
 * or DIR/0/NAME.npy, DIR/1/NAME.npy, ... (numbered sets, read in order up
 * to the first missing number). NAME is the input's name, or that name with
 * characters other than [A-Za-z0-9._-] written as '_'. */
typedef struct icc_verify_sets {
    int nsets, ninputs;
    ir_tensor *t;              /* t[set * ninputs + input], data malloc'd */
} icc_verify_sets;

/* One set: every .npy of dir into t[0..g->ninputs-1] (data malloc'd), one
 * file per input, checked as icc_verify_load_sets says; -1 with a message
 * naming the file, nothing left allocated. */
int icc_verify_load_set(const char *dir, const ir_graph *g, ir_tensor *t, icc_diag *d);
/* Reads every set; each must hold one file per input of g, of the input's
 * dtype and rank and with its fixed dims, and no .npy naming no input.
 * -1 with a message naming the file (nothing left allocated) otherwise. */
int icc_verify_load_sets(const char *dir, const ir_graph *g, icc_verify_sets *out, icc_diag *d);
void icc_verify_sets_free(icc_verify_sets *s);

/* ---- every value of a run, and the per-node comparison -------------------- */

/* The value of every value id of a graph after one interpreter run:
 * v[id] valid where have[id]. Inputs and constants are borrowed, node
 * results owned. */
typedef struct icc_verify_trace {
    int nvalues;
    ir_tensor *v;
    bool *have, *own;
} icc_verify_trace;

/* Runs g node by node with the reference kernels (ir_interp_run_hooked), keeping
 * every result. inputs[i] matches g->inputs[i] and must outlive the trace. */
int icc_verify_trace_run(const ir_graph *g, const ir_tensor *inputs, icc_verify_trace *t, icc_diag *d);
void icc_verify_trace_free(icc_verify_trace *t);

/* One node output of the graph under test, against the reference graph's
 * value of the same name. */
typedef struct icc_verify_node_row {
    int node;                  /* index in the tested graph's nodes (topological) */
    const char *node_name;     /* the name of the reference's node for the value (what
                                * --keep-fp32 names), the tested node's for a weight; borrowed */
    const char *value;         /* the output's name (borrowed from the tested graph) */
    int op;                    /* the reference node's op likewise */
    bool weight;               /* the reference's value is a constant (a weight the pass narrowed) */
    bool lowered;              /* the node reads a value the reference lacks or holds otherwise
                                * (a narrowed weight, a Cast or quantized input): the pass changed it */
    icc_verify_metrics m;      /* worst over the sets merged so far */
} icc_verify_node_row;

typedef struct icc_verify_per_node {
    icc_verify_node_row *rows;
    int nrows;
    int unmatched;             /* float outputs with no same-named, same-shaped reference value */
} icc_verify_per_node;

/* Compares every float output of every node of g (topological order) with
 * the value of the same name in ref, where it has the same shape. On the
 * first call (p zeroed) it fills p; later calls, for further input sets on
 * the same two graphs, keep the worst of each row. */
int icc_verify_compare_nodes(const ir_graph *ref, const icc_verify_trace *rt, const ir_graph *g,
                             const icc_verify_trace *gt, icc_verify_per_node *p, icc_diag *d);
void icc_verify_per_node_free(icc_verify_per_node *p);

/* The first row (topological order) whose SQNR is below db, or -1;
 * weights are not counted (keeping a node in fp32 keeps its weights). */
int icc_verify_first_below(const icc_verify_per_node *p, double db);

/* The row --bisect keeps in fp32 next, or -1: the first row below db when
 * its node is lowered; else (its error comes in with its inputs) the
 * lowered node it depends on with the lowest SQNR. g is the tested graph
 * the rows were made from. */
int icc_verify_pick(const icc_verify_per_node *p, const ir_graph *g, double db);

/* ---- the pieces of the driver's verify ------------------------------------- */

/* The tensors of set (the inputs named names[0..n-1]) in the order of g's
 * inputs, shallow copies into out; -1 when g has an input set lacks. */
int icc_verify_inputs_by_name(const ir_graph *g, const char *model, const char *const *names, const ir_tensor *set,
                              int n, ir_tensor *out, icc_diag *d);
/* Runs the opened library on set (inputs matched by name); out[o]
 * receives output o (malloc'd, the caller frees; nothing left on failure). */
int icc_verify_run_library(icc_model *m, icc_context *ctx, const char *model, const char *const *names,
                           const ir_tensor *set, int n, ir_tensor *out, icc_diag *d);
/* The SQNR (dB) below which an output or a node's output counts as broken
 * at p, unless --bisect=DB says otherwise. */
double icc_verify_default_threshold(icc_precision p);
/* list plus ",item" (or item alone), malloc'd (NULL on out of memory). */
char *icc_verify_list_append(const char *list, const char *item);
/* Whether item is one of the comma-separated list's items. */
bool icc_verify_list_has(const char *list, const char *item);

/* ---- reports ---------------------------------------------------------------- */

/* What verify found for one output over every input set. */
typedef struct icc_verify_output {
    const char *name;          /* borrowed */
    int64_t numel;
    icc_verify_summary s;
    int64_t bad;               /* elements beyond the tolerance, over all sets (-1: not checked) */
    bool shape_differs;
    bool below;                /* worst SQNR below the threshold (precision checks) */
} icc_verify_output;

/* Two lines per output: "  NAME: N elements[ x K sets], max abs error A,
 * max rel error R: STATUS" (worst over sets), then cosine, SQNR (worst and
 * mean over sets) and top-1/top-5 agreement where the output looks like
 * class scores. status is printed as given. */
void icc_verify_print_output(FILE *f, const icc_verify_output *o, const char *status);
/* The same as a JSON object. */
void icc_verify_json_output(FILE *f, const icc_verify_output *o);

/* The per-node table: one row per compared node output, topological
 * order, rows below db marked. what names the reference ("fp32"). */
void icc_verify_print_per_node(FILE *f, const icc_verify_per_node *p, double db, const char *what);
/* The rows as a JSON array. */
void icc_verify_json_per_node(FILE *f, const icc_verify_per_node *p);

#endif
