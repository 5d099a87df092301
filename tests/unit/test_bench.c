/* test_bench.c - icc bench's statistics, arrival process and list parsing
 * (its timings are not tested: they are what it measures). */
#include "check_main.h"
#include "tools/bench.h"

#include <math.h>

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

int main(void)
{
    Suite *s = suite_create("bench");
    TCase *tc = tcase_create("bench");
    tcase_add_test(tc, percentiles_by_nearest_rank);
    tcase_add_test(tc, poisson_arrivals);
    tcase_add_test(tc, lists);
    suite_add_tcase(s, tc);
    return icc_run_suite(s);
}
