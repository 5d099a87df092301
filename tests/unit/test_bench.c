/* test_bench.c - icc bench's statistics, arrival process and list parsing
 * (its timings are not tested: they are what it measures). */
#include "check_main.h"
#include "tools/bench.h"

#include <math.h>
#include <string.h>

START_TEST(percentiles_by_nearest_rank)
{
    double v[10] = {10, 1, 9, 2, 8, 3, 7, 4, 6, 5};
    icc_bench_stats s;
    icc_bench_stats_of(v, 10, &s);
    ck_assert_int_eq(s.n, 10);
    /* sorted 1..10: the p-th percentile is the ceil(p/100 * n)-th smallest */
    ck_assert(s.p50 == 5 && s.p90 == 9 && s.p99 == 10);
    ck_assert(s.min == 1 && s.max == 10 && s.mean == 5.5);
    for (int i = 0; i < 10; i++)
        ck_assert(v[i] == i + 1); /* sorted in place */
    ck_assert(icc_bench_percentile(v, 10, 10) == 1);
    ck_assert(icc_bench_percentile(v, 10, 11) == 2);
    ck_assert(icc_bench_percentile(v, 10, 100) == 10);
    double one = 3.5;
    icc_bench_stats_of(&one, 1, &s);
    ck_assert(s.p50 == 3.5 && s.p99 == 3.5 && s.min == 3.5 && s.max == 3.5);
    icc_bench_stats_of(NULL, 0, &s);
    ck_assert(s.n == 0 && s.p50 == 0 && s.mean == 0);
    /* 1000 samples 0.001..1: p99 is the 990th */
    static double w[1000];
    for (int i = 0; i < 1000; i++)
        w[i] = (1000 - i) / 1000.0;
    icc_bench_stats_of(w, 1000, &s);
    ck_assert(s.p99 == 0.99 && s.p90 == 0.9 && s.p50 == 0.5);
}
END_TEST

START_TEST(poisson_arrivals)
{
    enum { N = 200000 };
    static double t[N];
    icc_bench_poisson(t, N, 250.0, 7);
    double prev = 0, sum = 0, sum2 = 0;
    for (int i = 0; i < N; i++) {
        double gap = t[i] - prev;
        ck_assert(gap > 0);
        sum += gap;
        sum2 += gap * gap;
        prev = t[i];
    }
    double mean = sum / N, var = sum2 / N - mean * mean;
    /* exponential gaps: mean 1/rate, standard deviation 1/rate */
    ck_assert_msg(fabs(mean * 250.0 - 1) < 0.01, "mean gap %g", mean);
    ck_assert_msg(fabs(sqrt(var) * 250.0 - 1) < 0.02, "sd %g", sqrt(var));
    /* fixed seed: the same arrivals every time */
    static double u[16];
    icc_bench_poisson(u, 16, 250.0, 7);
    for (int i = 0; i < 16; i++)
        ck_assert(u[i] == t[i]);
}
END_TEST

START_TEST(lists)
{
    int64_t v[4];
    ck_assert_int_eq(icc_bench_parse_list("1,2,4", v, 4), 3);
    ck_assert(v[0] == 1 && v[1] == 2 && v[2] == 4);
    ck_assert_int_eq(icc_bench_parse_list("64", v, 4), 1);
    ck_assert(v[0] == 64);
    const char *bad[] = {"", "0", "-1", "1,", ",1", "1,,2", "a", "1.5", "1,2,3,4,5", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(icc_bench_parse_list(bad[i], v, 4) == -1, "'%s' accepted", bad[i]);
}
END_TEST

static const char peak_text[] =
    "{\"isa\": \"avx2\", \"cores\": 2, \"fma_gflops_per_core\": 40.00, \"fma_gflops_all_cores\": 70.00, "
    "\"read_gbs\": {\"L1\": 1, \"L2\": 2, \"L3\": 3, \"DRAM\": 4}, "
    "\"read_gbs_per_core\": {\"L1\": 100.5, \"L2\": 50.25, \"L3\": 30, \"DRAM\": 10}, "
    "\"read_gbs_all_cores\": {\"L1\": 200, \"L2\": 100, \"L3\": 60, \"DRAM\": 16}, \"vnni\": false}";

START_TEST(peak_file)
{
    icc_bench_peak p;
    ck_assert_int_eq(icc_bench_peak_parse(peak_text, &p), 0);
    ck_assert_int_eq(p.cores, 2);
    ck_assert(p.gflops_core == 40 && p.gflops_all == 70);
    /* each level from its own object, not the first "L1" in the text */
    ck_assert(p.read_core[ICC_BENCH_L1] == 100.5 && p.read_core[ICC_BENCH_L2] == 50.25);
    ck_assert(p.read_core[ICC_BENCH_DRAM] == 10 && p.read_all[ICC_BENCH_DRAM] == 16 && p.read_all[ICC_BENCH_L3] == 60);
    double g, b;
    icc_bench_roofs(&p, 1, &g, &b);
    ck_assert(g == 40 && b == 10);
    icc_bench_roofs(&p, 2, &g, &b);   /* 2 x 40 is past what all cores did */
    ck_assert(g == 70 && b == 16);
    ck_assert_int_eq(icc_bench_peak_parse("{\"cores\": 2}", &p), -1);
    ck_assert_int_eq(icc_bench_peak_parse("not json", &p), -1);
    /* a level missing from the all-cores object */
    ck_assert_int_eq(icc_bench_peak_parse("{\"cores\": 2, \"fma_gflops_per_core\": 1, \"fma_gflops_all_cores\": 2, "
                                          "\"read_gbs_per_core\": {\"L1\": 1, \"L2\": 1, \"L3\": 1, \"DRAM\": 1}, "
                                          "\"read_gbs_all_cores\": {\"L1\": 1}, \"L2\": 1}", &p), -1);
}
END_TEST

START_TEST(profile_rows)
{
    /* roofs 100 GFLOP/s and 10 GB/s: the ridge at 10 FLOP/B */
    icc_kernel_info k[4] = {
        {"mm", "MatMul", 2000000, 100000},   /* 20 FLOP/B: compute-bound */
        {"add", "Add", 1000, 12000},          /* memory-bound */
        {"copy", "Reshape", 0, 8000},         /* no FLOPs: data movement */
        {"fc+relu", "Gemm+Relu", 500000, 50000},   /* exactly at the ridge */
    };
    uint64_t ns[4] = {100000, 300000, 0, 100000};   /* over 10 runs */
    icc_bench_kernel r[4];
    icc_bench_profile_rows(k, ns, 4, 10, 100, 10, r);
    /* longest first; equal times in run order */
    ck_assert_int_eq(r[0].index, 1);
    ck_assert_int_eq(r[1].index, 0);
    ck_assert_int_eq(r[2].index, 3);
    ck_assert_int_eq(r[3].index, 2);
    ck_assert_str_eq(r[0].name, "add");
    double share = 0;
    for (int i = 0; i < 4; i++)
        share += r[i].share;
    ck_assert(fabs(share - 100) < 1e-9);
    ck_assert(fabs(r[0].share - 60) < 1e-9 && r[3].share == 0);
    /* mm: 10 us per run, 2 MFLOP: 200 GFLOP/s... of a 100 roof: 200% */
    ck_assert(fabs(r[1].us - 10) < 1e-9);
    ck_assert(fabs(r[1].gflops - 200) < 1e-6 && fabs(r[1].gbs - 10) < 1e-6);
    ck_assert(r[1].compute_bound && fabs(r[1].intensity - 20) < 1e-9 && fabs(r[1].roof_pct - 200) < 1e-6);
    /* add: 30 us, 12 KB: 0.4 GB/s; the roof at 1/12 FLOP/B is 10/12 GFLOP/s */
    ck_assert(!r[0].compute_bound && fabs(r[0].gbs - 0.4) < 1e-9);
    ck_assert(fabs(r[0].roof_pct - (1000 / 30e-6 / 1e9) / (10.0 / 12) * 100) < 1e-6);
    ck_assert(r[2].compute_bound);   /* fc+relu: 10 FLOP/B, the ridge itself */
    ck_assert(!r[3].compute_bound && r[3].gflops == 0 && r[3].us == 0);   /* copy never ran long enough */

    char buf[4096];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    icc_bench_profile_table(f, r, 4, 0.060);
    fclose(f);
    ck_assert(strstr(buf, "us/run") && strstr(buf, "GFLOP/s") && strstr(buf, "bound"));
    ck_assert(strstr(buf, "compute") && strstr(buf, "memory") && strstr(buf, "Gemm+Relu"));
    ck_assert_msg(strstr(buf, "total of 4 kernels") && strstr(buf, " 10.00 us of it outside kernels"), "%s", buf);
    int lines = 0;
    for (char *c = buf; *c; c++)
        lines += *c == '\n';
    ck_assert_int_eq(lines, 6);   /* head, 4 kernels, total */
    f = fmemopen(buf, sizeof buf, "w");
    icc_bench_profile_json(f, r, 4, 0.060, 100, 10);
    fclose(f);
    ck_assert_msg(strstr(buf, "\"kernels_us\": 50.0000, \"run_mean_us\": 60.0000"), "%s", buf);
    ck_assert(strstr(buf, "{\"index\": 1, \"name\": \"add\", \"ops\": \"Add\", \"us\": 30.0000, \"share\": 60.0000"));
    ck_assert(strstr(buf, "\"bound\": \"compute\"") && strstr(buf, "\"flops\": 2000000"));
    icc_bench_profile_rows(k, ns, 4, 0, 100, 10, r);   /* no runs: zeros, not NaNs */
    ck_assert(r[0].us == 0 && r[0].gflops == 0 && !isnan(r[0].share));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bench");
    TCase *tc = tcase_create("bench");
    tcase_add_test(tc, percentiles_by_nearest_rank);
    tcase_add_test(tc, poisson_arrivals);
    tcase_add_test(tc, lists);
    tcase_add_test(tc, peak_file);
    tcase_add_test(tc, profile_rows);
    suite_add_tcase(s, tc);
    return icc_run_suite(s);
}
