/* context.c - contexts and runs.
 *
 * A context is everything one caller needs to run a shared, immutable
 * model: the arena the generated code uses for intermediates, scratch
 * arrays for symbol values and input pointers, the thread pool and the
 * last error. The arena is sized at create for the model's nominal shapes
 * and regrown (never shrunk) when a run's symbol values need more, so
 * steady-state runs allocate nothing. Inputs are checked against the
 * descriptor before the generated code sees them; that code trusts its
 * arguments.
 */
#include "runtime/rt.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { ARENA_ALIGN = 64 };

struct icc_context {
    const icc_model *m;
    icc_allocator alloc;
    void *arena;
    uint64_t arena_cap;
    int64_t *syms;          /* nsymbols entries */
    const void **inptrs;    /* ninputs entries, for icc_run_tensors */
    int threads;
    rt_pool pool;
    icc_kernel_env env;
    uint64_t *profile;      /* rt_nkernels entries (--profile models), else NULL */
    uint64_t profile_runs;
    bool ran;               /* syms hold the dims of a run that succeeded */
    rt_cuda *cuda;          /* a --target=cuda model's device state, else NULL */
    char err[512];
    atomic_flag busy;       /* set while a run is in progress (one caller at a time) */
};

void *rt_alloc(const icc_allocator *a, size_t bytes, size_t align)
{
    if (bytes == 0)
        bytes = 1;
    if (a && a->alloc)
        return a->alloc(a->user, bytes, align);
    /* aligned_alloc wants a size that is a multiple of the alignment. */
    if (align < sizeof(void *))
        align = sizeof(void *);
    if (bytes > SIZE_MAX - align)
        return NULL;
    return aligned_alloc(align, (bytes + align - 1) / align * align);
}

void rt_free(const icc_allocator *a, void *p)
{
    if (!p)
        return;
    if (a && a->alloc)
        a->free(a->user, p);
    else
        free(p);
}

/* icc_kernel_env.clock_ns: CLOCK_MONOTONIC, a vDSO call (no system call)
 * on Linux, some 20 ns; cheap beside any kernel worth timing. */
static uint64_t clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static icc_status ctx_fail(icc_context *ctx, icc_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static icc_status ctx_fail(icc_context *ctx, icc_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
    va_end(ap);
    rt_set_last_error(ctx->err);
    return st;
}

static const char *model_name(const icc_model *m)
{
    return m->desc->name ? m->desc->name : "model";
}

/* Makes the arena at least `need` bytes; the old contents do not matter. */
static icc_status arena_reserve(icc_context *ctx, uint64_t need)
{
    if (need < ARENA_ALIGN)
        need = ARENA_ALIGN;
    if (need <= ctx->arena_cap)
        return ICC_OK;
    if (need > SIZE_MAX - ARENA_ALIGN)
        return ctx_fail(ctx, ICC_ERR_NOMEM, "%s: arena of %llu bytes is too large", model_name(ctx->m),
                        (unsigned long long)need);
    need = (need + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    void *p = rt_alloc(&ctx->alloc, (size_t)need, ARENA_ALIGN);
    if (!p)
        return ctx_fail(ctx, ICC_ERR_NOMEM, "%s: cannot allocate an arena of %llu bytes",
                        model_name(ctx->m), (unsigned long long)need);
    rt_free(&ctx->alloc, ctx->arena);
    ctx->arena = p;
    ctx->arena_cap = need;
    return ICC_OK;
}

static void set_threads(icc_context *ctx, int threads)
{
    rt_pool_fini(&ctx->pool);
    rt_pool_init(&ctx->pool, threads, &ctx->alloc);
    ctx->threads = ctx->pool.nthreads;
    ctx->env.pool = &ctx->pool;
    ctx->env.nthreads = ctx->pool.nthreads;
}

icc_status icc_context_create(const icc_model *m, const icc_allocator *alloc, icc_context **out)
{
    if (!out)
        return rt_fail(ICC_ERR_INVALID, "icc_context_create: out is NULL");
    *out = NULL;
    if (!m)
        return rt_fail(ICC_ERR_INVALID, "icc_context_create: model is NULL");
    if (alloc && (!alloc->alloc || !alloc->free))
        return rt_fail(ICC_ERR_INVALID, "icc_context_create: allocator lacks alloc or free");
    char err[128];
    int threads = rt_default_threads(err, sizeof err);
    if (threads < 0 || rt_spin_us(err, sizeof err) < 0)
        return rt_fail(ICC_ERR_INVALID, "icc_context_create: %s", err);
    const icc_model_desc *d = m->desc;
    icc_context *ctx = rt_alloc(alloc, sizeof *ctx, _Alignof(icc_context));
    if (!ctx)
        return rt_fail(ICC_ERR_NOMEM, "%s: out of memory for a context", model_name(m));
    memset(ctx, 0, sizeof *ctx);
    atomic_flag_clear(&ctx->busy);
    ctx->m = m;
    if (alloc)
        ctx->alloc = *alloc;
    rt_pool_init(&ctx->pool, threads, &ctx->alloc);
    ctx->threads = ctx->pool.nthreads;
    ctx->env = (icc_kernel_env){.parallel_for = rt_parallel_for, .pool = &ctx->pool,
                                .nthreads = ctx->pool.nthreads, .weights = m->weights,
                                .clock_ns = clock_ns, .init = m->init};
    icc_status st = ICC_OK;
    ctx->syms = rt_alloc(&ctx->alloc, sizeof *ctx->syms * (size_t)d->nsymbols, _Alignof(int64_t));
    ctx->inptrs = rt_alloc(&ctx->alloc, sizeof *ctx->inptrs * (size_t)d->ninputs, _Alignof(void *));
    int nk = rt_nkernels(d);
    /* the kernels' times, then their call counts */
    if (nk && (ctx->profile = rt_alloc(&ctx->alloc, sizeof *ctx->profile * 2 * (size_t)nk, _Alignof(uint64_t))))
        memset(ctx->profile, 0, sizeof *ctx->profile * 2 * (size_t)nk);
    ctx->env.profile_ns = ctx->profile;
    ctx->env.profile_calls = 1;
    if (!ctx->syms || !ctx->inptrs || (nk && !ctx->profile))
        st = ctx_fail(ctx, ICC_ERR_NOMEM, "%s: out of memory for a context", model_name(m));
    else if (rt_is_cuda(d)) {   /* the arena is on the device */
        char cerr[400];
        if ((st = rt_cuda_create(m, &ctx->cuda, cerr, sizeof cerr)) != ICC_OK)
            st = ctx_fail(ctx, st, "%s: %s", model_name(m), cerr);
    } else
        st = arena_reserve(ctx, d->arena_bytes);
    if (st != ICC_OK) {
        icc_context_destroy(ctx);
        return st; /* the message is already in icc_last_error */
    }
    *out = ctx;
    return ICC_OK;
}

icc_status icc_context_set_threads(icc_context *ctx, int threads)
{
    if (!ctx)
        return rt_fail(ICC_ERR_INVALID, "icc_context_set_threads: context is NULL");
    if (threads < 0)
        return ctx_fail(ctx, ICC_ERR_INVALID, "icc_context_set_threads: %d threads", threads);
    if (threads == 0) {
        char err[128];
        if ((threads = rt_default_threads(err, sizeof err)) < 0)
            return ctx_fail(ctx, ICC_ERR_INVALID, "icc_context_set_threads: %s", err);
    }
    set_threads(ctx, threads);
    return ICC_OK;
}

int icc_context_threads(const icc_context *ctx) { return ctx ? ctx->threads : 0; }

void icc_context_destroy(icc_context *ctx)
{
    if (!ctx)
        return;
    rt_pool_fini(&ctx->pool);
    rt_cuda_destroy(ctx->cuda);
    icc_allocator a = ctx->alloc;
    rt_free(&a, ctx->arena);
    rt_free(&a, ctx->syms);
    rt_free(&a, ctx->inptrs);
    rt_free(&a, ctx->profile);
    rt_free(&a, ctx);
}

const char *icc_context_error(const icc_context *ctx)
{
    return ctx ? ctx->err : "no context (NULL)";
}

/* An output with a zero dim needs no buffer. */
static int output_empty(const icc_model_desc *d, int o, const int64_t *syms)
{
    const icc_tensor_desc *t = &d->outputs[o];
    for (int k = 0; k < t->rank; k++) {
        int64_t v = t->dims[k];
        for (int s = 0; v < 0 && s < d->nsymbols; s++)
            if (!strcmp(d->symbols[s], t->dim_names[k]))
                v = syms[s];
        if (v == 0)
            return 1;
    }
    return 0;
}

static icc_status run_result(icc_context *ctx, int rc);

/* The part of a run after the inputs' dims are bound into ctx->syms. */
static icc_status run_bound(icc_context *ctx, const void *const *inputs, void *const *outputs, bool device)
{
    const icc_model_desc *d = ctx->m->desc;
    for (int i = 0; i < d->ninputs; i++)
        if (!inputs[i])
            return ctx_fail(ctx, ICC_ERR_INVALID, "%s: input '%s' is NULL", model_name(ctx->m),
                            d->inputs[i].name);
    if (d->noutputs && !outputs)
        return ctx_fail(ctx, ICC_ERR_INVALID, "%s: outputs is NULL", model_name(ctx->m));
    for (int o = 0; o < d->noutputs; o++)
        if (!outputs[o] && !output_empty(d, o, ctx->syms))
            return ctx_fail(ctx, ICC_ERR_INVALID, "%s: output '%s' has no buffer",
                            model_name(ctx->m), d->outputs[o].name);
    if (ctx->cuda) {
        char cerr[400];
        int rc = rt_cuda_run(ctx->cuda, inputs, outputs, device, cerr, sizeof cerr);
        if ((rc & 0xff) == ICC_ERR_DEVICE || ((rc & 0xff) == ICC_ERR_INTERNAL && !(rc >> 8)))
            return ctx_fail(ctx, (icc_status)rc, "%s: %s", model_name(ctx->m), cerr);
        return run_result(ctx, rc);
    }
    uint64_t need = d->nsymbols ? d->arena_size(ctx->syms) : d->arena_bytes;
    /* the generated layout returns UINT64_MAX when the intermediates'
     * sizes overflow 64 bits for these dims (codegen/llvm/model.c) */
    if (need == UINT64_MAX)
        return ctx_fail(ctx, ICC_ERR_SHAPE, "%s: the intermediates for these dims overflow 64-bit sizes",
                        model_name(ctx->m));
    icc_status st = arena_reserve(ctx, need);
    if (st != ICC_OK)
        return st;
    return run_result(ctx, d->run(inputs, outputs, ctx->syms, ctx->arena, &ctx->env));
}

/* What a run's code returned (an icc_status, with a message index above
 * the low byte), as the context's status and message. */
static icc_status run_result(icc_context *ctx, int rc)
{
    const icc_model_desc *d = ctx->m->desc;
    if (rc == ICC_OK) {
        ctx->profile_runs += ctx->profile != NULL;
        ctx->ran = true;
        return ICC_OK;
    }
    int why = rc >> 8;
    rc &= 0xff;
    if (why > 0 && why <= d->nmessages && d->messages && rc > 0 && rc <= ICC_ERR_DEVICE)
        return ctx_fail(ctx, (icc_status)rc, "%s: %s", model_name(ctx->m), d->messages[why - 1]);
    if (rc < 0 || rc > ICC_ERR_DEVICE)
        return ctx_fail(ctx, ICC_ERR_INTERNAL, "%s: the compiled code returned %d", model_name(ctx->m),
                        rc);
    return ctx_fail(ctx, (icc_status)rc, "%s: the compiled code failed with status %d",
                    model_name(ctx->m), rc);
}

static icc_status run_checked(icc_context *ctx, const void *const *inputs, const int64_t *const *in_dims,
                   void *const *outputs)
{
    if (!ctx)
        return rt_fail(ICC_ERR_INVALID, "icc_run: context is NULL");
    ctx->err[0] = 0;
    const icc_model_desc *d = ctx->m->desc;
    if (d->ninputs && !inputs)
        return ctx_fail(ctx, ICC_ERR_INVALID, "%s: inputs is NULL", model_name(ctx->m));
    char err[400];
    ctx->ran = false;
    icc_status st = rt_bind(ctx->m, in_dims, NULL, ctx->syms, err, sizeof err);
    if (st != ICC_OK)
        return ctx_fail(ctx, st, "%s: %s", model_name(ctx->m), err);
    return run_bound(ctx, inputs, outputs, false);
}

static icc_status run_tensors_checked(icc_context *ctx, const icc_tensor *inputs, int ninputs,
                           void *const *outputs)
{
    if (!ctx)
        return rt_fail(ICC_ERR_INVALID, "icc_run_tensors: context is NULL");
    ctx->err[0] = 0;
    const icc_model_desc *d = ctx->m->desc;
    if (ninputs != d->ninputs || (ninputs && !inputs))
        return ctx_fail(ctx, ICC_ERR_INVALID, "%s: takes %d inputs, got %d", model_name(ctx->m),
                        d->ninputs, inputs ? ninputs : 0);
    char err[400];
    ctx->ran = false;
    icc_status st = rt_bind(ctx->m, NULL, inputs, ctx->syms, err, sizeof err);
    if (st != ICC_OK)
        return ctx_fail(ctx, st, "%s: %s", model_name(ctx->m), err);
    for (int i = 0; i < ninputs; i++)
        ctx->inptrs[i] = inputs[i].data;
    return run_bound(ctx, ctx->inptrs, outputs, false);
}

/* A second caller while a run is in progress is refused, not raced: the
 * context's arena, symbols and error text belong to the run (the message
 * goes to the caller's thread only). */
#define RT_ENTER(ctx, what)                                                                      \
    if (atomic_flag_test_and_set_explicit(&(ctx)->busy, memory_order_acquire))                 \
        return rt_fail(ICC_ERR_INVALID, what ": the context is in use by another run (one "      \
                       "context serves one caller at a time: create one per thread)")

icc_status icc_run(icc_context *ctx, const void *const *inputs, const int64_t *const *in_dims,
                   void *const *outputs)
{
    if (!ctx)
        return rt_fail(ICC_ERR_INVALID, "icc_run: context is NULL");
    RT_ENTER(ctx, "icc_run");
    icc_status st = run_checked(ctx, inputs, in_dims, outputs);
    atomic_flag_clear_explicit(&ctx->busy, memory_order_release);
    return st;
}

icc_status icc_run_device(icc_context *ctx, const void *const *inputs, void *const *outputs)
{
    if (!ctx)
        return rt_fail(ICC_ERR_INVALID, "icc_run_device: context is NULL");
    if (!ctx->cuda)
        return ctx_fail(ctx, ICC_ERR_INVALID, "%s: icc_run_device is for models compiled with --target=cuda",
                        model_name(ctx->m));
    RT_ENTER(ctx, "icc_run_device");
    ctx->err[0] = 0;
    icc_status st = ctx->m->desc->ninputs && !inputs
                        ? ctx_fail(ctx, ICC_ERR_INVALID, "%s: inputs is NULL", model_name(ctx->m))
                        : run_bound(ctx, inputs, outputs, true);
    atomic_flag_clear_explicit(&ctx->busy, memory_order_release);
    return st;
}

icc_status icc_run_tensors(icc_context *ctx, const icc_tensor *inputs, int ninputs,
                           void *const *outputs)
{
    if (!ctx)
        return rt_fail(ICC_ERR_INVALID, "icc_run_tensors: context is NULL");
    RT_ENTER(ctx, "icc_run_tensors");
    icc_status st = run_tensors_checked(ctx, inputs, ninputs, outputs);
    atomic_flag_clear_explicit(&ctx->busy, memory_order_release);
    return st;
}

const uint64_t *icc_context_profile(const icc_context *ctx, uint64_t *runs)
{
    if (runs)
        *runs = ctx && ctx->profile ? ctx->profile_runs : 0;
    return ctx ? ctx->profile : NULL;
}

int icc_context_kernel_costs(const icc_context *ctx, uint64_t *flops, uint64_t *bytes)
{
    if (!ctx || !flops || !bytes)
        return -1;
    const icc_model_desc *d = ctx->m->desc;
    bool has = d->desc_size >= offsetof(icc_model_desc, kernel_costs) + sizeof d->kernel_costs;
    if (!has || !d->kernel_costs || !ctx->syms || !ctx->ran || rt_nkernels(d) == 0)
        return 0;
    d->kernel_costs(ctx->syms, flops, bytes);
    return 1;
}

void icc_context_profile_reset(icc_context *ctx)
{
    if (!ctx || !ctx->profile)
        return;
    memset(ctx->profile, 0, sizeof *ctx->profile * 2 * (size_t)rt_nkernels(ctx->m->desc));
    ctx->profile_runs = 0;
}
