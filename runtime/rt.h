/* rt.h - what the runtime's files share (internal, not installed). */
#ifndef ICC_RT_H
#define ICC_RT_H

#include "icc/runtime.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>

/* Internal to the runtime: hidden from a model.so's exports. */
#pragma GCC visibility push(hidden)

/* Immutable after open: any number of threads may read it. */
struct icc_model {
    const icc_model_desc *desc;
    void *dl;               /* dlopen handle; NULL for icc_model_from_desc */
    const void *weights;    /* desc->weights, or the mapping below */
    void *wmap;
    size_t wmap_len;
    void *init;             /* desc->init's results (init_bytes), filled at open; NULL when none */
};

/* A thread pool: nthreads - 1 persistent workers plus the caller. Workers
 * start lazily, spin a bounded while on `entry` after a job, then sleep on
 * `wake` (pool.c explains the protocol). */
typedef struct rt_pool {
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    pthread_t *threads;
    int nthreads;           /* wanted, caller included */
    int nworkers;           /* running */
    int tried;              /* workers were started (or failed to) */
    int64_t spin_ns;        /* how long an idle thread polls before it blocks */
    _Atomic int stop;
    _Atomic int busy;       /* a job is running: nested calls go serial */
    /* The job's generation (high 32 bits), whether it still takes
     * workers (RT_POOL_OPEN) and how many are inside it (low bits). */
    _Atomic uint64_t entry;
    _Atomic int sleepers;   /* workers blocked (or about to block) on wake */
    _Atomic int waiting;    /* the caller blocked (or about to) on done */
    void (*fn)(void *, int64_t);
    void *arg;
    int64_t n, chunk;
    _Atomic int64_t next;
    /* Home ranges: participant t (0 the caller, 1.. the workers) claims
     * [t n / T, (t + 1) n / T) of the job's indices first, then the
     * others' from their backs (slots, one cache line each: pool.c);
     * ids: each worker's participant number. */
    struct rt_pool_slot *slots;
    struct rt_pool_id *ids;
    int nslots;             /* participants of the running job (0: chunks from next) */
    icc_allocator alloc;
} rt_pool;

/* Never fails: the mutex and conditions use default attributes. */
void rt_pool_init(rt_pool *p, int nthreads, const icc_allocator *alloc);
/* Stops and joins the workers; p may be re-initialised afterwards. */
void rt_pool_fini(rt_pool *p);
/* icc_kernel_env.parallel_for. */
void rt_parallel_for(void *pool, int64_t n, void (*fn)(void *, int64_t), void *arg);
/* ICC_NUM_THREADS, else the CPUs this process may use; -1 with a message
 * in err when the variable is set but not a positive integer. */
int rt_default_threads(char *err, size_t errlen);
/* ICC_SPIN_US (an integer in [0, 1000000]), else the default of 50: how
 * long an idle worker polls for the next job; -1 with a message in err
 * when the variable is set but malformed. */
int rt_spin_us(char *err, size_t errlen);

/* The descriptor's kernel count (icc_model_desc.nkernels), 0 when its
 * desc_size predates the field. */
int rt_nkernels(const icc_model_desc *d);

/* Allocation through a caller's allocator, or aligned_alloc. */
void *rt_alloc(const icc_allocator *a, size_t bytes, size_t align);
void rt_free(const icc_allocator *a, void *p);

/* Sets this thread's icc_last_error and returns st. */
icc_status rt_fail(icc_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rt_set_last_error(const char *msg);

/* Binds every symbol of m from the inputs' dims (from in_dims, or from ts
 * with dtype and rank checked too) into syms (nsymbols
 * entries), checking fixed dims and consistency. ICC_OK or ICC_ERR_SHAPE
 * / ICC_ERR_INVALID with a message in err. */
icc_status rt_bind(const icc_model *m, const int64_t *const *in_dims, const icc_tensor *ts,
                   int64_t *syms, char *err, size_t errlen);

/* ---- models compiled with --target=cuda (cuda.c) ---- */

/* Whether d carries a device plan (icc_model_desc.cuda). */
bool rt_is_cuda(const icc_model_desc *d);
/* Checks d's device plan at open, so that a run never reads outside it:
 * ICC_OK (also for a CPU model) or ICC_ERR_ABI with icc_last_error set. */
icc_status rt_cuda_check(const icc_model_desc *d, const char *who);
/* One context's device state: the driver (opened on first use), the
 * module, a stream and the device memory, with the load-time kernels
 * run. ICC_ERR_DEVICE (no driver, no device, a driver call failed),
 * ICC_ERR_NOMEM or a load-time kernel's status, with the reason in err. */
typedef struct rt_cuda rt_cuda;
icc_status rt_cuda_create(const icc_model *m, rt_cuda **out, char *err, size_t errlen);
/* One run: inputs to the device, the steps, outputs back (device: the
 * pointers are the caller's device buffers, used in place, no copies).
 * 0, a kernel's status (as the CPU entry returns it), or ICC_ERR_DEVICE
 * with err. */
int rt_cuda_run(rt_cuda *c, const void *const *inputs, void *const *outputs, bool device, char *err,
                size_t errlen);
void rt_cuda_destroy(rt_cuda *c);

#pragma GCC visibility pop

#endif
