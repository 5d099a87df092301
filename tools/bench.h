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

/* A comma-separated list of positive integers ("1,2,4") into v (at most
 * max); returns the count, or -1 on a malformed list. */
int icc_bench_parse_list(const char *s, int64_t *v, int max);

/* `icc bench ARGS...` (argv[0] is the first argument after "bench");
 * self is the icc binary, which compiles an .onnx/.icc model first. Returns
 * the process exit status. */
int icc_bench_main(int argc, char **argv, const char *self);

#endif
