/* bench.h - `icc bench`: the inference-speed measurements of a compiled
 * model (latency percentiles, throughput, batch and thread sweeps, MLPerf
 * style scenarios) and of the machine (`--peak`), and the statistics they
 * rest on, kept separate so that tests check them without timing. */
#ifndef ICC_TOOLS_BENCH_H
#define ICC_TOOLS_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "icc/runtime.h"

/* Latency statistics of n samples (milliseconds), p-th percentiles by
 * nearest rank (the smallest sample with at least p% at or below it). */
typedef struct icc_bench_stats {
    int64_t n;
    double p50, p90, p99, mean, min, max;
} icc_bench_stats;

/* Sorts ms[0..n) in place and fills s (all zero when n == 0). */
void icc_bench_stats_of(double *ms, int64_t n, icc_bench_stats *s);

/* The nearest-rank percentile p (0 < p <= 100) of sorted[0..n). */
double icc_bench_percentile(const double *sorted, int64_t n, double p);

/* Arrival times (seconds from 0) of n queries of a Poisson process of the
 * given rate (queries per second), from a fixed seed. */
void icc_bench_poisson(double *t, int64_t n, double rate, uint64_t seed);

/* Two models run in turns (`icc bench A B ...`): per round one run of
 * each, so a stretch in which the shared machine is slow hits both alike.
 * From the n paired times a[r] and b[r] (milliseconds): the median and
 * quartiles (nearest rank) of the per-round ratios b[r] / a[r], and the
 * share of rounds in which b ran faster than a (ties count half). All
 * zero when n == 0; -1 when a time is not positive (or out of memory). */
typedef struct icc_bench_ratio {
    double median, p25, p75, faster;
} icc_bench_ratio;
int icc_bench_paired(const double *a, const double *b, int64_t n, icc_bench_ratio *out);

/* A comma-separated list of positive integers ("1,2,4") into v (at most
 * max); returns the count, or -1 on a malformed list. */
int icc_bench_parse_list(const char *s, int64_t *v, int max);

/* The machine's peaks (`icc bench --peak`): FP32 FMA GFLOP/s and read
 * bandwidth in GB/s from each cache level and DRAM (ICC_BENCH_L1 ..
 * ICC_BENCH_DRAM), on one core and on all. */
enum { ICC_BENCH_L1, ICC_BENCH_L2, ICC_BENCH_L3, ICC_BENCH_DRAM, ICC_BENCH_LEVELS };
typedef struct icc_bench_peak {
    int cores;
    double gflops_core, gflops_all;
    double read_core[ICC_BENCH_LEVELS], read_all[ICC_BENCH_LEVELS];
    /* dot-product peaks where the CPU has them, else 0: int8 VNNI
     * (vpdpbusd, G int-ops/s, a multiply and an add per byte pair) and
     * bf16 (vdpbf16ps, GFLOP/s); AMX tiles' int8 (tdpbssd) and bf16
     * (tdpbf16ps) when the file has them (--peak does not measure them
     * yet: 0) */
    double int8_core, int8_all, bf16_core, bf16_all;
    double amx_int8_core, amx_int8_all, amx_bf16_core, amx_bf16_all;
} icc_bench_peak;

/* The peaks in the JSON `icc bench --peak --json` prints (the cache
 * --profile reads); -1 when a needed key is missing or not a positive
 * number. */
int icc_bench_peak_parse(const char *json, icc_bench_peak *p);

/* The kernel kinds a profile tells apart (icc_kernel_kind's values). */
enum { ICC_BENCH_KINDS = ICC_KERNEL_AMX_INT8 + 1 };

/* The short name of a kernel kind in the table and the JSON: "f32",
 * "bf16", "i8", "amx-bf16", "amx-i8" (a kind this build does not know:
 * "f32", as the header says to take it). */
const char *icc_bench_kind_name(int kind);

/* The roofs a run on `threads` threads has: per kernel kind the compute
 * peak (one core's times threads, at most all cores'): FP32 FMA for f32,
 * the bf16 and int8 dot products' and AMX's for theirs; a kind whose peak
 * is absent falls back (AMX to the dot product of its dtype, a dot product
 * to FP32 FMA), and peak_of says whose peak it got. And the DRAM read
 * bandwidth (one core's, or all cores' when threads > 1). */
typedef struct icc_bench_roof {
    double gflops[ICC_BENCH_KINDS];
    int peak_of[ICC_BENCH_KINDS];
    double gbs;
} icc_bench_roof;
void icc_bench_roofs(const icc_bench_peak *p, int threads, icc_bench_roof *r);

/* One kernel of a profile, per run. */
typedef struct icc_bench_kernel {
    int index;                 /* in run order */
    const char *name, *ops;    /* borrowed from the model */
    double us;                 /* wall time */
    double share;              /* % of all kernels' time */
    int kind;                  /* icc_kernel_kind (unknown ones taken as f32) */
    double flops, bytes;       /* flops: a multiply-add is 2 (int8: int-ops) */
    double gflops, gbs;        /* achieved */
    double intensity;          /* FLOPs per byte (0 with no bytes) */
    double peak_gflops;        /* the compute roof of its kind */
    bool compute_bound;        /* intensity at or past the ridge, peak_gflops / the bandwidth */
    double roof_pct;           /* achieved / the roof at that intensity (bandwidth for no FLOPs) */
    double calls;              /* calls per run (a loop body's kernels: its iterations); -1: not counted */
} icc_bench_kernel;

/* rows[0..n) from the model's kernels, their kinds (NULL: all f32) and
 * the counters of `runs` runs (icc_context_profile), sorted by time,
 * longest first (ties in run order), each against the roofs of its kind. */
void icc_bench_profile_rows(const icc_kernel_info *k, const int *kinds, const uint64_t *ns, int n, uint64_t runs,
                            const icc_bench_roof *roof, icc_bench_kernel *rows);

/* The profile as a table, and as a JSON object (no newline); run_ms is
 * the runs' median wall time (icc bench passes each kernel's median run
 * as the rows' time), to show the time spent outside kernels. */
void icc_bench_profile_table(FILE *f, const icc_bench_kernel *rows, int n, double run_ms);
void icc_bench_profile_json(FILE *f, const icc_bench_kernel *rows, int n, double run_ms, const icc_bench_roof *roof);

/* What the profile of rows[0..n) stands against, for its header: "R
 * GFLOP/s" (FP32's roof), then for each other kind that some row has,
 * " (bf16 R', i8 R'' ...)", a fallen-back one as "i8 R (FP32's)". */
void icc_bench_roofs_text(char *buf, size_t len, const icc_bench_kernel *rows, int n, const icc_bench_roof *roof);

/* ---- --generate: autoregressive decoders with a static KV cache
 * (tools/generate.c; the contract is in docs/performance.md) ---- */

enum { ICC_GEN_MAX_KV = 128 };

/* The roles of a decoder's inputs and outputs (indices into the
 * descriptor's tables; -1 where the model has none). */
typedef struct icc_gen_io {
    int tokens, position, mask;      /* inputs */
    int logits;                      /* output */
    int npast;
    int past[ICC_GEN_MAX_KV];        /* inputs, in input order... */
    int present[ICC_GEN_MAX_KV];     /* ...each paired with the output of the same rank in output order */
    int64_t max_len;                 /* the cache's length: the past tensors' dim -2 */
    int64_t seq;                     /* the tokens' seq dim (the last): fixed, or -1 symbolic */
    int64_t vocab;                   /* the logits' last dim */
} icc_gen_io;

/* Finds the roles in d by the naming contract, or as spec says
 * ("tokens=NAME,position=NAME,mask=NAME,logits=NAME,past=PREFIX,
 * present=PREFIX", any subset; NULL: none). 0, or -1 with a one-line
 * message in err. */
int icc_bench_gen_io(const icc_model_desc *d, const char *spec, icc_gen_io *g, char *err, size_t errlen);

/* The prompt's i-th token, for a vocabulary of vocab: a fixed pattern
 * (i * 7919 + 13) mod vocab that other engines can feed too. */
int64_t icc_bench_gen_prompt_token(int64_t i, int64_t vocab);

/* Options of a --generate run. */
typedef struct icc_gen_opts {
    const char *model;               /* for messages */
    const char *spec;                /* --gen-io, or NULL */
    int64_t new_tokens, prompt_len;  /* --generate=N, --prompt-len=P */
    int64_t threads;                 /* 0: the default */
    int64_t runs;                    /* at least this many generations... */
    double time_s, warmup_s;         /* ...and time_s seconds, after warmup_s of whole generations */
    bool json;
} icc_gen_opts;

/* Runs the generation benchmark on the decode model m (and the prefill
 * model pre, or NULL: prefill through m), printing the report. Returns
 * the exit status. */
int icc_bench_generate(icc_model *m, icc_model *pre, const icc_gen_opts *o);

/* `icc bench ARGS...` (argv[0] is the first argument after "bench");
 * self is the icc binary, which compiles an .onnx/.icc model first. Returns
 * the process exit status. */
int icc_bench_main(int argc, char **argv, const char *self);

#endif
