/* pass.h - passes and pipelines.
 *
 * A pass is a function over a graph; passes.def lists them. A pipeline is
 * a comma-separated list of pass names with optional {key=value,...}
 * options, e.g. "shape-infer,fold{max-bytes=4096},dce"; it prints back to
 * the same text. The runner verifies after each pass, prints IR before or
 * after chosen passes, times them, collects statistics, and on a failing
 * pass writes a reproducer (the IR before the pass plus the pipeline from
 * that pass on) that `icc opt FILE --passes=...` re-runs.
 */
#ifndef ICC_PASS_H
#define ICC_PASS_H

#include <stdio.h>
#include "ir/ir.h"
#include "ir/target.h"
#include "passes/precision.h"

enum {
#define PASS(id, name, fn, doc, opts) PASS_##id,
#include "passes/passes.def"
#undef PASS
    PASS_COUNT
};

#define PASS_MAX_OPTS 8
#define PASS_MAX_STATS 8

typedef struct pass_opt {
    char key[32];
    char val[64];
} pass_opt;

typedef struct pass_stat_entry {
    const char *name;          /* a static string, e.g. "nodes removed" */
    int64_t value;
} pass_stat_entry;

/* What a pass sees. It reports errors through diag (returning -1) and
 * sets `changed` when it modified the graph. */
typedef struct pass_ctx {
    ir_graph *g;
    icc_diag *diag;
    /* What the graph is compiled for (borrowed; never NULL: the runner
     * supplies pass_default_target() when the caller gives none). */
    const icc_target_desc *target;
    /* The precision the driver asks for (borrowed; NULL: fp32). */
    const icc_precision_opts *precision;
    const pass_opt *opts;
    int nopts;
    bool changed;
    pass_stat_entry stats[PASS_MAX_STATS];
    int nstats;
} pass_ctx;

typedef int (*pass_fn)(pass_ctx *c);

typedef struct pass_info {
    const char *name;
    pass_fn run;
    const char *doc;
    const char *opts;
} pass_info;

extern const pass_info pass_table[PASS_COUNT];

#define PASS(id, name, fn, doc, opts) int fn(pass_ctx *c);
#include "passes/passes.def"
#undef PASS

/* An option's value (the pass's documented default when absent). */
int64_t pass_opt_int(const pass_ctx *c, const char *key, int64_t def);
/* The same as a string, borrowed from c. */
const char *pass_opt_str(const pass_ctx *c, const char *key, const char *def);
/* Adds delta to the named counter (name must be a static string). */
void pass_stat(pass_ctx *c, const char *name, int64_t delta);
/* The end of a rewrite that erased nodes (ir_node_erase) or appended them
 * out of place: when the pass changed the graph, drops the erased entries
 * and restores topological order. 0, or -1 on a cycle (c->diag says). */
int pass_commit_rewrites(pass_ctx *c);
/* A stand-in tensor for v, the input of Shape or Size n, whose type is
 * static where the op looks (the whole type for Size, the sliced dims for
 * Shape). It has no data: those kernels read only dims and numel. False
 * when the type is not static enough (passes/fold.c; fold-if uses it). */
bool pass_shape_only_input(const ir_node *n, const ir_value *v, ir_tensor *t);

/* ---- pipelines ----------------------------------------------------------- */

typedef struct icc_pipeline_step {
    int pass;
    pass_opt opts[PASS_MAX_OPTS];
    int nopts;
} icc_pipeline_step;

typedef struct icc_pipeline {
    icc_pipeline_step *steps;
    int nsteps;
} icc_pipeline;

/* Parses text into p (the caller frees with icc_pipeline_free). Unknown
 * passes or options are errors naming them. */
int icc_pipeline_parse(const char *text, icc_pipeline *p, icc_diag *d);
void icc_pipeline_free(icc_pipeline *p);
/* Prints steps [from, nsteps) back as pipeline text (malloc'd). */
char *icc_pipeline_string(const icc_pipeline *p, int from);
/* The default pipeline of -O0..-O3 (static text). */
const char *icc_pipeline_for_level(int level);

typedef struct icc_pass_options {
    const char *print_before;  /* comma-separated pass names, or NULL */
    const char *print_after;   /* comma-separated pass names, or NULL */
    bool print_after_all;
    bool print_changed;        /* with print-after*: only when the pass changed the IR */
    bool time_passes;          /* a table of wall time per pass on `out` */
    bool stats;                /* each pass's counters on `out` */
    bool no_verify;            /* skip ir_verify after each pass */
    const char *skip;          /* comma-separated pass names (as print_before) whose steps are left out, or NULL */
    FILE *out;                 /* where prints and tables go (NULL: stderr) */
    const char *reproducer;    /* path for the reproducer on failure (NULL: none) */
    const icc_target_desc *target;  /* the target passes see (borrowed; NULL: pass_default_target()) */
    const icc_precision_opts *precision;  /* --precision and its keep list (borrowed; NULL: fp32) */
} icc_pass_options;

/* The target passes see when the caller names none: a baseline x86-64
 * with 256-bit vectors (x86-64-v3), chosen once so that pass results
 * never depend on the machine running icc. */
const icc_target_desc *pass_default_target(void);

/* Monotonic wall clock in milliseconds, for the timing tables. */
double icc_wall_ms(void);

/* A timing table on out: "# TITLE (wall)", then one row per entry (ms,
 * share of the total, name), then the total. --time-passes prints the
 * passes' and the code generator's phases with it. */
void icc_print_timings(FILE *out, const char *title, const char *what, const double *ms,
                       const char *const *names, int n);

/* Runs p over g. On failure d says which pass failed and why (and where the
 * reproducer was written). */
int icc_pipeline_run(const icc_pipeline *p, ir_graph *g, const icc_pass_options *o, icc_diag *d);

/* Gives the graph's outputs back the names they had before a pipeline
 * (names[i] for output i): passes may replace an output's value (an
 * Identity removed, a node merged by cse, a constant folded), which a
 * compiled model's interface must not show. The new value is renamed when
 * it is a node's result no other output uses; otherwise an Identity named
 * as the output is appended. A name some live value already has is left. */
int icc_keep_output_names(ir_graph *g, const char *const *names, icc_diag *d);

#endif
