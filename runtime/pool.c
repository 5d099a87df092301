/* pool.c - the thread pool behind icc_kernel_env.parallel_for.
 *
 * Each context owns one pool: nthreads - 1 persistent workers plus the
 * calling thread. A job hands out [0, n) in chunks from an atomic counter,
 * so a slow thread does not hold the others up, and the caller works too
 * instead of waiting idle. Between jobs workers block on a condition
 * variable: after a run returns no thread spins. Workers start at the
 * first job with parallel work (a context that never needs them never
 * creates them); if the OS refuses a thread the pool runs with fewer,
 * down to the caller alone, which is slower but still correct.
 */
#define _GNU_SOURCE
#include "runtime/rt.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_THREADS = 1024 };

int rt_default_threads(char *err, size_t errlen)
{
    const char *env = getenv("ICC_NUM_THREADS");
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end || v < 1 || v > MAX_THREADS) {
            snprintf(err, errlen, "ICC_NUM_THREADS='%.40s' is not an integer in [1, %d]", env,
                     MAX_THREADS);
            return -1;
        }
        return (int)v;
    }
    /* The affinity mask, not the machine: containers and taskset limit it. */
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set) < MAX_THREADS ? CPU_COUNT(&set) : MAX_THREADS;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

void rt_pool_init(rt_pool *p, int nthreads, const icc_allocator *alloc)
{
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    p->nthreads = nthreads < 1 ? 1 : nthreads > MAX_THREADS ? MAX_THREADS : nthreads;
    if (alloc)
        p->alloc = *alloc;
}

static void run_chunks(rt_pool *p)
{
    for (;;) {
        int64_t i = atomic_fetch_add_explicit(&p->next, p->chunk, memory_order_relaxed);
        if (i >= p->n)
            return;
        int64_t end = p->n - i < p->chunk ? p->n : i + p->chunk;
        for (; i < end; i++)
            p->fn(p->arg, i);
    }
}

static void *worker(void *arg)
{
    rt_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    uint64_t seen = p->gen0;
    for (;;) {
        while (!p->stop && p->gen == seen)
            pthread_cond_wait(&p->wake, &p->mu);
        if (p->stop)
            break;
        seen = p->gen;
        pthread_mutex_unlock(&p->mu);
        run_chunks(p);
        pthread_mutex_lock(&p->mu);
        if (--p->pending == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void start_workers(rt_pool *p)
{
    p->tried = 1;
    int want = p->nthreads - 1;
    p->threads = rt_alloc(&p->alloc, sizeof *p->threads * (size_t)want, _Alignof(pthread_t));
    if (!p->threads)
        return;
    p->gen0 = p->gen;
    for (int i = 0; i < want; i++) {
        if (pthread_create(&p->threads[i], NULL, worker, p) != 0)
            break;
        p->nworkers++;
    }
}

void rt_parallel_for(void *pool, int64_t n, void (*fn)(void *, int64_t), void *arg)
{
    rt_pool *p = pool;
    if (n <= 0)
        return;
    if (p->nthreads > 1 && !p->tried && !p->busy && n > 1)
        start_workers(p);
    /* Serial: one index, no workers, or a nested call from inside a job
     * (the workers are taken; waiting for them would deadlock). */
    if (n == 1 || p->nworkers == 0 || p->busy || n > INT64_MAX / 4) {
        for (int64_t i = 0; i < n; i++)
            fn(arg, i);
        return;
    }
    int64_t parts = (int64_t)(p->nworkers + 1) * 4; /* some slack for uneven chunks */
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->chunk = n / parts > 0 ? n / parts : 1;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    p->pending = p->nworkers;
    p->busy = 1;
    p->gen++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    run_chunks(p);
    pthread_mutex_lock(&p->mu);
    while (p->pending > 0)
        pthread_cond_wait(&p->done, &p->mu);
    p->busy = 0;
    pthread_mutex_unlock(&p->mu);
}

void rt_pool_fini(rt_pool *p)
{
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nworkers; i++)
        pthread_join(p->threads[i], NULL);
    rt_free(&p->alloc, p->threads);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    p->threads = NULL;
    p->nworkers = 0;
}
