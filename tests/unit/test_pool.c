/* test_pool.c - the runtime's thread pool (runtime/pool.c) under stress:
 * every index of every job runs exactly once, with workers polling or
 * sleeping between jobs, jobs back to back or apart, and nested calls. */
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "check_main.h"
#include "runtime/rt.h"

enum { MAXN = 64 };

typedef struct {
    _Atomic int hits[MAXN];
    rt_pool *pool;
    _Atomic int inner;
} job;

static void count(void *arg, int64_t i)
{
    job *j = arg;
    atomic_fetch_add(&j->hits[i], 1);
}

static void nested_fn(void *arg, int64_t i)
{
    job *j = arg;
    atomic_fetch_add(&j->hits[i], 1);
    job sub = {.pool = j->pool};   /* from inside a job: runs serially on this thread */
    rt_parallel_for(j->pool, 5, count, &sub);
    for (int k = 0; k < 5; k++)
        if (atomic_load(&sub.hits[k]) == 1)
            atomic_fetch_add(&j->inner, 1);
}

static void stress(int threads, const char *spin_us, int jobs, int gap_us)
{
    setenv("ICC_SPIN_US", spin_us, 1);
    rt_pool p;
    rt_pool_init(&p, threads, NULL);
    unsetenv("ICC_SPIN_US");
    for (int it = 0; it < jobs; it++) {
        job j = {.pool = &p};
        int64_t n = 1 + it % (MAXN - 1);
        rt_parallel_for(&p, n, count, &j);
        for (int64_t i = 0; i < MAXN; i++)
            ck_assert_msg(atomic_load(&j.hits[i]) == (i < n), "threads %d spin %s job %d (n %lld): index %lld ran %d times",
                          threads, spin_us, it, (long long)n, (long long)i, atomic_load(&j.hits[i]));
        if (gap_us && it % 16 == 0)
            usleep((useconds_t)gap_us);
    }
    rt_pool_fini(&p);
}

START_TEST(every_index_once_polling)
{
    stress(2, "5", 20000, 0);
    stress(4, "5", 5000, 0);
}
END_TEST

/* No poll: every job wakes sleeping workers; gaps let them fall asleep. */
START_TEST(every_index_once_sleeping)
{
    stress(2, "0", 5000, 0);
    stress(3, "0", 2000, 200);
    stress(3, "1000", 2000, 2000);
}
END_TEST

START_TEST(nested_calls_run_serially)
{
    rt_pool p;
    rt_pool_init(&p, 3, NULL);
    for (int it = 0; it < 500; it++) {
        job j = {.pool = &p};
        rt_parallel_for(&p, 7, nested_fn, &j);
        for (int i = 0; i < 7; i++)
            ck_assert_int_eq(atomic_load(&j.hits[i]), 1);
        ck_assert_int_eq(atomic_load(&j.inner), 7 * 5);
    }
    rt_pool_fini(&p);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("pool");
    TCase *tc = tcase_create("pool");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, every_index_once_polling);
    tcase_add_test(tc, every_index_once_sleeping);
    tcase_add_test(tc, nested_calls_run_serially);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return icc_run_suite(suite());
}
