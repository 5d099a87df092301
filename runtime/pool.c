/* pool.c - the thread pool behind icc_kernel_env.parallel_for.
 *
 * Each context owns one pool: nthreads - 1 persistent workers plus the
 * calling thread. A job's indices [0, n) are split into one home range
 * per participant (the caller first, then the workers in order): each
 * claims its own range's indices from the front, then takes what is left
 * of the others' from their backs (a word per range holding its unclaimed
 * [next, end), changed by compare-and-swap), so a slow or late thread
 * does not hold the others up, and the caller works too instead of
 * waiting idle. Home ranges put the same share of consecutive kernels on
 * the same core, so a kernel mostly reads what its own core wrote: with
 * indices handed out from one counter in turn, a model of many small
 * kernels moved half its activations between the cores' caches each
 * kernel (2 threads on Xeon 6 VMs, whose cross-core traffic goes through
 * a 13 GB/s L3: ShuffleNet 3.05 -> 2.80 ms, MiniLM 11.1 -> 10.5,
 * MobileNetV2 3.39 -> 3.30, SqueezeNet 2.83 -> 2.79; YOLO 4.56 -> 4.62,
 * ResNet-50, DBNet, CRNN, MobileNetV3 the same). Jobs of 2^31 indices
 * or more take chunks from one counter. Workers start at the first job with parallel
 * work (a context that never needs them never creates them); if the OS
 * refuses a thread the pool runs with fewer, down to the caller alone,
 * which is slower but still correct.
 *
 * Fork/join is what makes small kernels lose from threads, so it avoids
 * the kernel where it can:
 *  - After a job a worker polls for the next one for spin_ns (50 µs by
 *    default, ICC_SPIN_US: long enough to bridge a model's short serial
 *    kernels, docs/runtime.md) before it blocks on `wake`: back-to-back kernels then
 *    start without a futex wake. The poll is bounded because on a
 *    shared, oversubscribed machine a spinning thread takes the CPU the
 *    caller's other threads need; after a run returns every worker is
 *    asleep within spin_ns.
 *  - The caller signals `wake` only when some worker sleeps (`sleepers`).
 *  - The join waits only for the workers that entered the job, not for
 *    all of them: `entry` packs the job's generation, an open bit and the
 *    count of workers inside. A worker enters by a compare-and-swap on
 *    an open entry of the generation it saw; the caller, its own chunks
 *    done (so every chunk is taken), clears the open bit and waits for
 *    the count to drop to zero. A worker the OS wakes late finds the job
 *    closed and goes back to waiting, so a descheduled thread never
 *    delays a kernel by more than the chunk it holds.
 * Memory order: the job's fields are written before `entry` is
 * published (seq_cst) and read after a successful entry (acquire); the
 * sleep/wake hand-offs are Dekker pairs on seq_cst atomics (the waiter
 * announces itself, then re-reads the condition; the signaller changes
 * the condition, then reads the announcement) with the mutex held around
 * the wait, so no wake-up is lost.
 */
#define _GNU_SOURCE
#include "runtime/rt.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

enum { SPIN_US_DEFAULT = 50, SPIN_US_MAX = 1000000 };

int rt_spin_us(char *err, size_t errlen)
{
    const char *env = getenv("ICC_SPIN_US");
    if (!env || !*env)
        return SPIN_US_DEFAULT;
    char *end;
    long v = strtol(env, &end, 10);
    if (*end || v < 0 || v > SPIN_US_MAX) {
        snprintf(err, errlen, "ICC_SPIN_US='%.40s' is not an integer in [0, %d]", env, SPIN_US_MAX);
        return -1;
    }
    return (int)v;
}

#define OPEN ((uint64_t)1 << 31)
#define ACTIVE(e) ((e) & (OPEN - 1))
#define GEN(e) ((uint32_t)((e) >> 32))

void rt_pool_init(rt_pool *p, int nthreads, const icc_allocator *alloc)
{
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    p->nthreads = nthreads < 1 ? 1 : nthreads > MAX_THREADS ? MAX_THREADS : nthreads;
    if (alloc)
        p->alloc = *alloc;
    char err[96];
    int us = rt_spin_us(err, sizeof err); /* a context checked it first */
    p->spin_ns = (int64_t)(us < 0 ? SPIN_US_DEFAULT : us) * 1000;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Polls until cond(p, v) is false or spin_ns passed; the clock is read
 * once per 64 polls (a pause is tens of cycles, a clock read ~20 ns). */
#define SPIN_WHILE(p, cond)                                                                                  \
    do {                                                                                                     \
        int64_t until_ = -1;                                                                                 \
        for (int spins_ = 0; (cond); spins_++) {                                                             \
            if ((spins_ & 63) == 63) {                                                                       \
                int64_t t_ = now_ns();                                                                       \
                if (until_ < 0)                                                                              \
                    until_ = t_ + (p)->spin_ns;                                                              \
                else if (t_ >= until_)                                                                       \
                    break;                                                                                   \
            }                                                                                                \
            cpu_relax();                                                                                     \
        }                                                                                                    \
    } while (0)

/* A participant's home range: [next, end) not yet claimed, next in the
 * low 32 bits; one cache line each. */
struct rt_pool_slot {
    _Atomic uint64_t range;
    char pad[64 - sizeof(uint64_t)];
};
struct rt_pool_id {
    rt_pool *p;
    int id;
};

/* Participant self's part of the job: its home range from the front,
 * then the others' from the back (or chunks from one counter). */
static void run_chunks(rt_pool *p, int self)
{
    if (p->nslots > 0) {
        int T = p->nslots;
        for (int o = 0; o < T; o++) {
            struct rt_pool_slot *s = &p->slots[(self + o) % T];
            uint64_t w = atomic_load_explicit(&s->range, memory_order_relaxed);
            for (;;) {
                uint32_t lo = (uint32_t)w, hi = (uint32_t)(w >> 32);
                if (lo >= hi)
                    break;
                /* the owner from the front, a thief from the back */
                uint64_t nw = o == 0 ? (uint64_t)hi << 32 | (lo + 1) : (uint64_t)(hi - 1) << 32 | lo;
                if (atomic_compare_exchange_weak_explicit(&s->range, &w, nw, memory_order_relaxed,
                                                          memory_order_relaxed)) {
                    p->fn(p->arg, o == 0 ? lo : hi - 1);
                    w = atomic_load_explicit(&s->range, memory_order_relaxed);
                }
            }
        }
        return;
    }
    for (;;) {
        int64_t i = atomic_fetch_add_explicit(&p->next, p->chunk, memory_order_relaxed);
        if (i >= p->n)
            return;
        int64_t end = p->n - i < p->chunk ? p->n : i + p->chunk;
        for (; i < end; i++)
            p->fn(p->arg, i);
    }
}

/* The entry of the first job after generation seen (or at stop). */
static uint64_t next_job(rt_pool *p, uint32_t seen)
{
    uint64_t e = atomic_load_explicit(&p->entry, memory_order_acquire);
    if (p->spin_ns > 0)
        SPIN_WHILE(p, GEN(e = atomic_load_explicit(&p->entry, memory_order_acquire)) == seen &&
                          !atomic_load_explicit(&p->stop, memory_order_relaxed));
    if (GEN(e) != seen || atomic_load(&p->stop))
        return e;
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->sleepers, 1);
    while (!atomic_load(&p->stop) && GEN(e = atomic_load(&p->entry)) == seen)
        pthread_cond_wait(&p->wake, &p->mu);
    atomic_fetch_sub(&p->sleepers, 1);
    pthread_mutex_unlock(&p->mu);
    return e;
}

static void *worker(void *arg)
{
    rt_pool *p = ((struct rt_pool_id *)arg)->p;
    int self = ((struct rt_pool_id *)arg)->id;
    uint32_t seen = GEN(atomic_load(&p->entry));
    for (;;) {
        uint64_t e = next_job(p, seen);
        if (atomic_load(&p->stop))
            break;
        seen = GEN(e);
        /* enter while the job is open; a closed one is over */
        while ((e & OPEN) && GEN(e) == seen &&
               !atomic_compare_exchange_weak_explicit(&p->entry, &e, e + 1, memory_order_acquire,
                                                      memory_order_acquire))
            ;
        if (!(e & OPEN) || GEN(e) != seen)
            continue;
        run_chunks(p, self);
        uint64_t left = atomic_fetch_sub(&p->entry, 1) - 1;
        if (ACTIVE(left) == 0 && !(left & OPEN) && atomic_load(&p->waiting)) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

static void start_workers(rt_pool *p)
{
    p->tried = 1;
    int want = p->nthreads - 1;
    p->threads = rt_alloc(&p->alloc, sizeof *p->threads * (size_t)want, _Alignof(pthread_t));
    p->ids = rt_alloc(&p->alloc, sizeof *p->ids * (size_t)want, _Alignof(struct rt_pool_id));
    p->slots = rt_alloc(&p->alloc, sizeof *p->slots * (size_t)(want + 1), 64);
    if (!p->threads || !p->ids || !p->slots) {
        rt_free(&p->alloc, p->threads);
        rt_free(&p->alloc, p->ids);
        rt_free(&p->alloc, p->slots);
        p->threads = NULL, p->ids = NULL, p->slots = NULL;
        return;
    }
    for (int i = 0; i < want; i++) {
        p->ids[i] = (struct rt_pool_id){p, i + 1};
        if (pthread_create(&p->threads[i], NULL, worker, &p->ids[i]) != 0)
            break;
        p->nworkers++;
    }
}

void rt_parallel_for(void *pool, int64_t n, void (*fn)(void *, int64_t), void *arg)
{
    rt_pool *p = pool;
    if (n <= 0)
        return;
    int busy = atomic_load_explicit(&p->busy, memory_order_relaxed);
    if (p->nthreads > 1 && !p->tried && !busy && n > 1)
        start_workers(p);
    /* Serial: one index, no workers, or a nested call from inside a job
     * (the workers are taken; waiting for them would deadlock). */
    if (n == 1 || p->nworkers == 0 || busy || n > INT64_MAX / 4) {
        for (int64_t i = 0; i < n; i++)
            fn(arg, i);
        return;
    }
    int64_t parts = (int64_t)(p->nworkers + 1) * 4; /* some slack for uneven chunks */
    atomic_store_explicit(&p->busy, 1, memory_order_relaxed);
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->chunk = n / parts > 0 ? n / parts : 1;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    int T = p->nworkers + 1;
    p->nslots = n < ((int64_t)1 << 31) ? T : 0;
    for (int t = 0; t < p->nslots; t++)
        atomic_store_explicit(&p->slots[t].range, (uint64_t)(n * (t + 1) / T) << 32 | (uint64_t)(n * t / T),
                              memory_order_relaxed);
    /* publish: no worker is inside (the last join saw none), so the count is 0 */
    uint32_t gen = GEN(atomic_load_explicit(&p->entry, memory_order_relaxed)) + 1;
    atomic_store(&p->entry, (uint64_t)gen << 32 | OPEN);
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }
    run_chunks(p, 0);
    /* close, then wait for the workers inside to finish their chunks */
    uint64_t e = atomic_fetch_and(&p->entry, ~OPEN) & ~OPEN;
    if (ACTIVE(e) > 0) {
        SPIN_WHILE(p, ACTIVE(e = atomic_load_explicit(&p->entry, memory_order_acquire)) > 0);
        if (ACTIVE(e) > 0) {
            pthread_mutex_lock(&p->mu);
            atomic_store(&p->waiting, 1);
            while (ACTIVE(atomic_load(&p->entry)) > 0)
                pthread_cond_wait(&p->done, &p->mu);
            atomic_store(&p->waiting, 0);
            pthread_mutex_unlock(&p->mu);
        }
        atomic_thread_fence(memory_order_acquire);
    }
    atomic_store_explicit(&p->busy, 0, memory_order_relaxed);
}

void rt_pool_fini(rt_pool *p)
{
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nworkers; i++)
        pthread_join(p->threads[i], NULL);
    rt_free(&p->alloc, p->threads);
    rt_free(&p->alloc, p->ids);
    rt_free(&p->alloc, p->slots);
    p->ids = NULL, p->slots = NULL;
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    p->threads = NULL;
    p->nworkers = 0;
}
