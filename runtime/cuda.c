/* cuda.c - runs a model compiled with --target=cuda: its device plan
 * (runtime/cuda_plan.h) through the CUDA driver API.
 *
 * The driver is opened with dlopen (libcuda.so.1, or $ICC_CUDA_DRIVER)
 * the first time a context is created, never linked: a CUDA model loads
 * and describes itself on any machine, and a context on a machine
 * without a driver or a device is ICC_ERR_DEVICE with a one-line reason.
 * The few driver types and entry points used are declared here (their
 * documented C ABI), so building the runtime needs no CUDA headers.
 *
 * Each context owns, on its device (ordinal $ICC_CUDA_DEVICE, else 0,
 * through its primary context): the module (the cubin, or the PTX when
 * the driver has no binary for this GPU), one stream, and one allocation
 * each for the weights, the init buffer, the arena, the inputs, the
 * outputs, the kernels' status words and the symbol table. A run copies
 * the inputs in, runs the plan's steps in order on the stream (a kernel
 * step is one launch; a branch or loop test reads its condition back),
 * copies the outputs out, and reads the status words: the first kernel
 * that failed names the message, as a CPU run's does.
 */
#include "runtime/cuda_plan.h"
#include "runtime/rt.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the driver ------------------------------------------------------------- */

typedef int CUresult;          /* 0: CUDA_SUCCESS */
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream;
typedef unsigned long long CUdeviceptr;

enum {
    CU_ERROR_NO_DEVICE = 100,
    CU_ERROR_NO_BINARY_FOR_GPU = 209,
    CU_STREAM_NON_BLOCKING = 1,
};

static struct {
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxPushCurrent)(CUcontext);
    CUresult (*CtxPopCurrent)(CUcontext *);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*MemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void **, void **);
    CUresult (*StreamCreate)(CUstream *, unsigned);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*GetErrorString)(CUresult, const char **);
} cu;

static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static char driver_error[400];   /* why the driver is unusable, or "" */

static void open_driver(void)
{
    const char *path = getenv("ICC_CUDA_DRIVER");
    if (!path || !*path)
        path = "libcuda.so.1";
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(driver_error, sizeof driver_error, "no CUDA driver (%s)", e ? e : path);
        return;
    }
    static const struct {
        size_t at;
        const char *name;
    } fns[] = {
#define FN(field, sym) {offsetof(__typeof__(cu), field), sym}
        FN(Init, "cuInit"), FN(DeviceGetCount, "cuDeviceGetCount"), FN(DeviceGet, "cuDeviceGet"),
        FN(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
        FN(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"), FN(CtxPushCurrent, "cuCtxPushCurrent_v2"),
        FN(CtxPopCurrent, "cuCtxPopCurrent_v2"), FN(ModuleLoadData, "cuModuleLoadData"),
        FN(ModuleUnload, "cuModuleUnload"), FN(ModuleGetFunction, "cuModuleGetFunction"),
        FN(MemAlloc, "cuMemAlloc_v2"), FN(MemFree, "cuMemFree_v2"), FN(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
        FN(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"), FN(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
        FN(MemsetD8Async, "cuMemsetD8Async"), FN(LaunchKernel, "cuLaunchKernel"),
        FN(StreamCreate, "cuStreamCreate"), FN(StreamDestroy, "cuStreamDestroy_v2"),
        FN(StreamSynchronize, "cuStreamSynchronize"), FN(GetErrorString, "cuGetErrorString"),
#undef FN
    };
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        void *f = dlsym(h, fns[i].name);
        if (!f) {
            snprintf(driver_error, sizeof driver_error, "the CUDA driver %s lacks %s (too old?)", path, fns[i].name);
            dlclose(h);
            return;
        }
        memcpy((char *)&cu + fns[i].at, &f, sizeof f);
    }
    CUresult r = cu.Init(0);
    if (r == CU_ERROR_NO_DEVICE)
        snprintf(driver_error, sizeof driver_error, "no CUDA device (cuInit: no CUDA-capable device)");
    else if (r) {
        const char *s = NULL;
        cu.GetErrorString(r, &s);
        snprintf(driver_error, sizeof driver_error, "the CUDA driver failed to start (cuInit: %s)",
                 s ? s : "unknown error");
    }
    /* the library stays open for the process: contexts hold its functions */
}

/* ---- the plan ----------------------------------------------------------------- */

static const icc_cuda_plan *plan_of(const icc_model_desc *d)
{
    return d->desc_size >= offsetof(icc_model_desc, cuda_bytes) + sizeof d->cuda_bytes ? d->cuda : NULL;
}

bool rt_is_cuda(const icc_model_desc *d) { return plan_of(d) != NULL; }

static const char *plan_str(const icc_cuda_plan *p, int64_t at) { return (const char *)p + at; }

/* Bytes of a fixed-shape tensor, or -1. */
static int64_t tensor_bytes(const icc_tensor_desc *t)
{
    int64_t n = (int64_t)icc_dtype_size(t->dtype);
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] < 0 || (t->dims[i] && n > INT64_MAX / t->dims[i]))
            return -1;
        n *= t->dims[i];
    }
    return n;
}

/* The size of the region a ref points into (init: the load-time steps,
 * whose arena is the init buffer); -1 when the ref names none. */
static int64_t region_bytes(const icc_model_desc *d, const icc_cuda_plan *p, icc_cuda_ref r, bool init)
{
    switch (r.where) {
    case ICC_CUDA_INPUT: return !init && r.index >= 0 && r.index < d->ninputs ? tensor_bytes(&d->inputs[r.index]) : -1;
    case ICC_CUDA_OUTPUT:
        return !init && r.index >= 0 && r.index < d->noutputs ? tensor_bytes(&d->outputs[r.index]) : -1;
    case ICC_CUDA_WEIGHT: return (int64_t)d->weights_bytes;
    case ICC_CUDA_INIT: return p->init_bytes;
    case ICC_CUDA_ARENA: return init ? p->init_bytes : p->arena_bytes;
    case ICC_CUDA_STATUS: return r.index >= 0 && r.index < p->nkernels ? 4 : -1;
    default: return -1;
    }
}

/* [offset, offset + bytes) lies in the ref's region. */
static bool ref_ok(const icc_model_desc *d, const icc_cuda_plan *p, icc_cuda_ref r, int64_t bytes, bool init)
{
    int64_t size = region_bytes(d, p, r, init);
    return size >= 0 && bytes >= 0 && r.offset >= 0 && r.offset <= size && bytes <= size - r.offset;
}

/* A table of n records of size sz at offset at lies in the blob. */
static bool table_ok(const icc_cuda_plan *p, int64_t at, int64_t n, size_t sz)
{
    return n >= 0 && at >= (int64_t)sizeof *p && at % 8 == 0 && at <= p->total_bytes &&
           n <= (p->total_bytes - at) / (int64_t)sz;
}

static bool slice_ok(const icc_model_desc *d, const icc_cuda_plan *p, const icc_cuda_step *s, bool init)
{
    if (s->len < 1 || s->rows < 0 || s->row_bytes < 0 || s->rows > ((int64_t)1 << 40) ||
        s->row_bytes > ((int64_t)1 << 40) || !ref_ok(d, p, s->counter, 8, init))
        return false;
    /* the farthest byte each side touches: (len-1)*step + (rows-1)*stride + row_bytes */
    for (int side = 0; side < 2; side++) {
        int64_t step = side ? s->src_step : s->dst_step, stride = side ? s->src_stride : s->dst_stride;
        if (step < 0 || stride < 0 || step > ((int64_t)1 << 40) || stride > ((int64_t)1 << 40) ||
            s->len > ((int64_t)1 << 20))
            return false;
        int64_t reach = s->rows ? (s->len - 1) * step + (s->rows - 1) * stride + s->row_bytes : 0;
        if (!ref_ok(d, p, side ? s->src : s->dst, reach, init))
            return false;
    }
    return true;
}

icc_status rt_cuda_check(const icc_model_desc *d, const char *who)
{
    const icc_cuda_plan *p = plan_of(d);
    if (!p)
        return ICC_OK;
#define BAD(what) rt_fail(ICC_ERR_ABI, "%s: the CUDA plan has %s", who, what)
    if (d->cuda_bytes < sizeof *p || (uintptr_t)p % 8 || p->magic != ICC_CUDA_PLAN_MAGIC)
        return BAD("no valid header");
    if (p->version != ICC_CUDA_PLAN_VERSION)
        return rt_fail(ICC_ERR_ABI, "%s: CUDA plan version %u, this runtime reads version %d", who, p->version,
                       ICC_CUDA_PLAN_VERSION);
    if (p->total_bytes < 0 || (uint64_t)p->total_bytes != d->cuda_bytes)
        return BAD("a size that is not its descriptor's");
    if (icc_cuda_plan_checksum(p, d->cuda_bytes) != p->checksum)
        return BAD("a checksum that does not match (the library is damaged)");
    if (d->run || d->init || d->nsymbols || rt_nkernels(d))
        return BAD("a CPU entry point, symbols or a profile beside it");
    if (p->arena_bytes < 0 || p->init_bytes < 0 || p->arena_bytes > ((int64_t)1 << 46) ||
        p->init_bytes > ((int64_t)1 << 46) || p->nsyms < 1 || p->nsyms > 4096 || p->nkernels < 0 ||
        p->ninit_steps < 0 || p->ninit_steps > p->nsteps)
        return BAD("bad sizes");
    if (!table_ok(p, p->kernels, p->nkernels, sizeof(icc_cuda_kernel)) ||
        !table_ok(p, p->refs, p->nrefs, sizeof(icc_cuda_ref)) ||
        !table_ok(p, p->steps, p->nsteps, sizeof(icc_cuda_step)) ||
        !table_ok(p, p->copies, p->ncopies, sizeof(icc_cuda_copy)) || !table_ok(p, p->cubin, p->cubin_bytes, 1) ||
        !table_ok(p, p->ptx, p->ptx_bytes, 1) || p->ptx_bytes < 1 || plan_str(p, p->ptx)[p->ptx_bytes - 1])
        return BAD("a table outside it");
    for (int i = 0; i < d->ninputs; i++)
        if (tensor_bytes(&d->inputs[i]) < 0)
            return BAD("an input of no fixed size");
    for (int i = 0; i < d->noutputs; i++)
        if (tensor_bytes(&d->outputs[i]) < 0)
            return BAD("an output of no fixed size");
    const icc_cuda_kernel *ks = (const void *)((const char *)p + p->kernels);
    const icc_cuda_ref *refs = (const void *)((const char *)p + p->refs);
    const icc_cuda_step *st = (const void *)((const char *)p + p->steps);
    const icc_cuda_copy *cp = (const void *)((const char *)p + p->copies);
    for (int k = 0; k < p->nkernels; k++) {
        const icc_cuda_kernel *kk = &ks[k];
        if (kk->name < (int64_t)sizeof *p || kk->name >= p->total_bytes ||
            !memchr(plan_str(p, kk->name), 0, (size_t)(p->total_bytes - kk->name)))
            return BAD("a kernel without a name");
        if (kk->first_arg < 0 || kk->nargs < 0 || kk->nargs > 1024 || kk->first_arg > p->nrefs - kk->nargs ||
            kk->threads < 1 || kk->threads > ((int64_t)1 << 30) || kk->block < 0 || kk->block > 1024 ||
            (kk->block && kk->threads % kk->block))
            return BAD("a kernel with bad arguments");
    }
    for (int i = 0; i < p->nsteps; i++) {
        const icc_cuda_step *s = &st[i];
        bool init = i < p->ninit_steps;
        int lo = init ? 0 : p->ninit_steps, hi = init ? p->ninit_steps : p->nsteps;
        bool ok = true;
        switch (s->kind) {
        case ICC_CUDA_STEP_KERNEL: {
            ok = s->kernel >= 0 && s->kernel < p->nkernels;
            for (int a = 0; ok && a < ks[s->kernel].nargs; a++) {
                icc_cuda_ref r = refs[ks[s->kernel].first_arg + a];
                ok = ref_ok(d, p, r, r.bytes, init);
            }
            break;
        }
        case ICC_CUDA_STEP_BRANCH: ok = ref_ok(d, p, s->cond, 1, init); /* fall through */
        case ICC_CUDA_STEP_JUMP: ok = ok && s->target >= lo && s->target <= hi; break;
        case ICC_CUDA_STEP_COPY: ok = ref_ok(d, p, s->dst, s->bytes, init) && ref_ok(d, p, s->src, s->bytes, init); break;
        case ICC_CUDA_STEP_SET: ok = (s->width == 1 || s->width == 8) && ref_ok(d, p, s->dst, s->width, init); break;
        case ICC_CUDA_STEP_LOOP_TEST:
            ok = s->target >= lo && s->target <= hi && ref_ok(d, p, s->dst, 8, init) &&
                 (!s->has_cond || ref_ok(d, p, s->cond, 1, init)) &&
                 (s->const_trips || !s->has_trips || ref_ok(d, p, s->src, 8, init));
            break;
        case ICC_CUDA_STEP_INC: ok = ref_ok(d, p, s->dst, 8, init); break;
        case ICC_CUDA_STEP_SLICE: ok = slice_ok(d, p, s, init); break;
        default: ok = false;
        }
        if (!ok)
            return rt_fail(ICC_ERR_ABI, "%s: the CUDA plan's step %d is malformed", who, i);
    }
    for (int i = 0; i < p->ncopies; i++)
        if (cp[i].output < 0 || cp[i].output >= d->noutputs ||
            !ref_ok(d, p, (icc_cuda_ref){ICC_CUDA_OUTPUT, cp[i].output, 0, 0}, cp[i].bytes, false) ||
            !ref_ok(d, p, cp[i].src, cp[i].bytes, false))
            return BAD("a bad output copy");
#undef BAD
    return ICC_OK;
}

/* ---- a context's device state ---------------------------------------------------- */

struct rt_cuda {
    const icc_model_desc *d;
    const icc_cuda_plan *p;
    const icc_cuda_kernel *ks;
    const icc_cuda_ref *refs;
    const icc_cuda_step *steps;
    const icc_cuda_copy *copies;
    CUdevice dev;
    CUcontext ctx;             /* the device's primary context, retained */
    CUmodule mod;
    CUstream stream;
    CUfunction *fns;           /* per kernel */
    CUdeviceptr weights, init, arena, status, syms;
    CUdeviceptr *in, *out;     /* per input / output */
    CUdeviceptr *ext;          /* a device run's caller buffers: inputs, then outputs */
    int64_t *in_bytes, *out_bytes;
    int32_t *status_host;      /* nkernels */
    bool in_init;              /* running the load-time steps: the arena is the init buffer */
    bool retained, pushed;
    char *err;                 /* the message buffer of the call in progress */
    size_t errlen;
};

/* A driver call that failed: ICC_ERR_DEVICE with what and the driver's words. */
static int cu_fail(rt_cuda *c, CUresult r, const char *what)
{
    const char *s = NULL;
    if (cu.GetErrorString(r, &s) || !s)
        s = "unknown error";
    snprintf(c->err, c->errlen, "CUDA: %s failed: %s (error %d)", what, s, r);
    return ICC_ERR_DEVICE;
}

#define CU(call, what)                                                                                       \
    do {                                                                                                     \
        CUresult r_ = (call);                                                                                \
        if (r_)                                                                                              \
            return cu_fail(c, r_, what);                                                                     \
    } while (0)

static int dev_alloc(rt_cuda *c, CUdeviceptr *p, int64_t bytes)
{
    /* at least 256 bytes, so an empty region still has an address */
    CU(cu.MemAlloc(p, (size_t)(bytes > 256 ? bytes : 256)), "cuMemAlloc");
    return 0;
}

static CUdeviceptr where(const rt_cuda *c, icc_cuda_ref r)
{
    switch (r.where) {
    case ICC_CUDA_INPUT: return c->in[r.index] + (CUdeviceptr)r.offset;
    case ICC_CUDA_OUTPUT: return c->out[r.index] + (CUdeviceptr)r.offset;
    case ICC_CUDA_WEIGHT: return c->weights + (CUdeviceptr)r.offset;
    case ICC_CUDA_INIT: return c->init + (CUdeviceptr)r.offset;
    case ICC_CUDA_ARENA: return (c->in_init ? c->init : c->arena) + (CUdeviceptr)r.offset;
    case ICC_CUDA_STATUS: return c->status + 4 * (CUdeviceptr)r.index;
    default: return 0;
    }
}

static int launch(rt_cuda *c, int k)
{
    const icc_cuda_kernel *kk = &c->ks[k];
    enum { MAX_ARGS = 1024 + 3 };
    CUdeviceptr vals[MAX_ARGS];
    void *params[MAX_ARGS];
    int64_t begin = 0, end = INT64_MAX;
    for (int a = 0; a < kk->nargs; a++) {
        vals[a] = where(c, c->refs[kk->first_arg + a]);
        params[a] = &vals[a];
    }
    vals[kk->nargs] = c->syms;
    params[kk->nargs] = &vals[kk->nargs];
    params[kk->nargs + 1] = &begin;
    params[kk->nargs + 2] = &end;
    unsigned block = kk->block ? (unsigned)kk->block : kk->threads < 128 ? (unsigned)kk->threads : 128;
    unsigned grid = (unsigned)((kk->threads + block - 1) / block);
    CUresult r = cu.LaunchKernel(c->fns[k], grid, 1, 1, block, 1, 1, 0, c->stream, params, NULL);
    if (r) {
        char what[300];
        snprintf(what, sizeof what, "launching kernel %s", plan_str(c->p, kk->name));
        return cu_fail(c, r, what);
    }
    return 0;
}

/* Waits for the stream and reads the status words: the first failed
 * kernel's status (ICC_ERR_INVALID | message << 8), or 0. */
static int sync_status(rt_cuda *c)
{
    if (c->p->nkernels)
        CU(cu.MemcpyDtoHAsync(c->status_host, c->status, 4 * (size_t)c->p->nkernels, c->stream), "reading the status");
    CU(cu.StreamSynchronize(c->stream), "running the model's kernels");
    for (int k = 0; k < c->p->nkernels; k++)
        if (c->status_host[k])
            return c->status_host[k];
    return 0;
}

/* Reads n (1 or 8) bytes at r after the work before it. */
static int read_back(rt_cuda *c, icc_cuda_ref r, void *out, size_t n, int *status)
{
    CU(cu.MemcpyDtoHAsync(out, where(c, r), n, c->stream), "reading a condition");
    return *status = sync_status(c);
}

static int64_t read_i64(const unsigned char *b)
{
    int64_t v;
    memcpy(&v, b, 8);
    return v;
}

/* Runs steps [lo, hi). 0, a kernel's status, or ICC_ERR_DEVICE. */
static int run_steps(rt_cuda *c, int lo, int hi)
{
    int status = 0;
    for (int pc = lo; pc < hi;) {
        const icc_cuda_step *s = &c->steps[pc];
        int next = pc + 1, rc = 0;
        unsigned char b[8] = {0}, t[8] = {0};
        switch (s->kind) {
        case ICC_CUDA_STEP_KERNEL: rc = launch(c, s->kernel); break;
        case ICC_CUDA_STEP_BRANCH:
            if ((rc = read_back(c, s->cond, b, 1, &status)) == 0 && !b[0])
                next = s->target;
            break;
        case ICC_CUDA_STEP_JUMP: next = s->target; break;
        case ICC_CUDA_STEP_COPY:
            if (s->bytes)
                CU(cu.MemcpyDtoDAsync(where(c, s->dst), where(c, s->src), (size_t)s->bytes, c->stream), "a copy");
            break;
        case ICC_CUDA_STEP_SET:
            /* from the plan, which outlives the asynchronous copy */
            CU(cu.MemcpyHtoDAsync(where(c, s->dst), &s->value, (size_t)s->width, c->stream), "a set");
            break;
        case ICC_CUDA_STEP_LOOP_TEST: {
            if ((rc = read_back(c, s->dst, b, 8, &status)))
                break;
            int64_t trips = s->const_trips ? s->value : INT64_MAX;
            if (!s->const_trips && s->has_trips && (rc = read_back(c, s->src, t, 8, &status)))
                break;
            if (!s->const_trips && s->has_trips)
                trips = read_i64(t);
            unsigned char cond = 1;
            if (s->has_cond && (rc = read_back(c, s->cond, &cond, 1, &status)))
                break;
            if (read_i64(b) >= trips || !cond)
                next = s->target;
            break;
        }
        case ICC_CUDA_STEP_INC: {
            if ((rc = read_back(c, s->dst, b, 8, &status)))
                break;
            int64_t v = read_i64(b) + 1;
            memcpy(b, &v, 8);
            CU(cu.MemcpyHtoDAsync(where(c, s->dst), b, 8, c->stream), "a loop counter");
            CU(cu.StreamSynchronize(c->stream), "a loop counter");   /* b is on this stack */
            break;
        }
        case ICC_CUDA_STEP_SLICE: {
            if ((rc = read_back(c, s->counter, b, 8, &status)))
                break;
            int64_t it = read_i64(b);
            if (it < 0 || it >= s->len) {
                snprintf(c->err, c->errlen, "a scan's counter %lld is outside [0, %lld)", (long long)it,
                         (long long)s->len);
                return ICC_ERR_INTERNAL;
            }
            if (s->reverse)
                it = s->len - 1 - it;
            for (int64_t r = 0; r < s->rows && s->row_bytes; r++)
                CU(cu.MemcpyDtoDAsync(where(c, s->dst) + (CUdeviceptr)(it * s->dst_step + r * s->dst_stride),
                                      where(c, s->src) + (CUdeviceptr)(it * s->src_step + r * s->src_stride),
                                      (size_t)s->row_bytes, c->stream),
                   "a scan slice");
            break;
        }
        }
        if (rc)
            return rc;
        pc = next;
    }
    return 0;
}

static int push(rt_cuda *c)
{
    CU(cu.CtxPushCurrent(c->ctx), "making the device's context current");
    c->pushed = true;
    return 0;
}

static void pop(rt_cuda *c)
{
    CUcontext was;
    if (c->pushed)
        cu.CtxPopCurrent(&was);
    c->pushed = false;
}

void rt_cuda_destroy(rt_cuda *c)
{
    if (!c)
        return;
    if (c->retained) {
        char err[8];
        c->err = err;
        c->errlen = sizeof err;
        if (push(c) == 0) {
            if (c->stream)
                cu.StreamSynchronize(c->stream);
            CUdeviceptr mem[] = {c->weights, c->init, c->arena, c->status, c->syms};
            for (size_t i = 0; i < sizeof mem / sizeof mem[0]; i++)
                if (mem[i])
                    cu.MemFree(mem[i]);
            for (int i = 0; c->in && i < c->d->ninputs; i++)
                if (c->in[i])
                    cu.MemFree(c->in[i]);
            for (int i = 0; c->out && i < c->d->noutputs; i++)
                if (c->out[i])
                    cu.MemFree(c->out[i]);
            if (c->stream)
                cu.StreamDestroy(c->stream);
            if (c->mod)
                cu.ModuleUnload(c->mod);
            pop(c);
        }
        cu.DevicePrimaryCtxRelease(c->dev);
    }
    free(c->fns);
    free(c->in);
    free(c->out);
    free(c->ext);
    free(c->in_bytes);
    free(c->out_bytes);
    free(c->status_host);
    free(c);
}

/* Everything of create after the driver is open; c->err has the reason. */
static int setup(rt_cuda *c, const icc_model *m)
{
    const icc_model_desc *d = c->d;
    const icc_cuda_plan *p = c->p;
    int count = 0, ordinal = 0;
    const char *env = getenv("ICC_CUDA_DEVICE");
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end || v < 0 || v > 1024) {
            snprintf(c->err, c->errlen, "ICC_CUDA_DEVICE='%s' is not a device ordinal", env);
            return ICC_ERR_INVALID;
        }
        ordinal = (int)v;
    }
    CU(cu.DeviceGetCount(&count), "cuDeviceGetCount");
    if (count == 0) {
        snprintf(c->err, c->errlen, "no CUDA device");
        return ICC_ERR_DEVICE;
    }
    if (ordinal >= count) {
        snprintf(c->err, c->errlen, "no CUDA device %d (ICC_CUDA_DEVICE; this machine has %d)", ordinal, count);
        return ICC_ERR_DEVICE;
    }
    CU(cu.DeviceGet(&c->dev, ordinal), "cuDeviceGet");
    CU(cu.DevicePrimaryCtxRetain(&c->ctx, c->dev), "retaining the device's primary context");
    c->retained = true;
    int rc = push(c);
    if (rc)
        return rc;
    CUresult r = cu.ModuleLoadData(&c->mod, (const char *)p + p->cubin);
    if (r == CU_ERROR_NO_BINARY_FOR_GPU) {   /* another architecture: JIT the PTX */
        c->mod = NULL;
        r = cu.ModuleLoadData(&c->mod, (const char *)p + p->ptx);
    }
    if (r) {
        c->mod = NULL;
        char what[96];
        snprintf(what, sizeof what, "loading the module (compiled for sm_%u)", p->sm);
        return cu_fail(c, r, what);
    }
    for (int k = 0; k < p->nkernels; k++) {
        const char *name = plan_str(p, c->ks[k].name);
        r = cu.ModuleGetFunction(&c->fns[k], c->mod, name);
        if (r) {
            char what[300];
            snprintf(what, sizeof what, "finding kernel %.200s", name);
            return cu_fail(c, r, what);
        }
    }
    CU(cu.StreamCreate(&c->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    if ((rc = dev_alloc(c, &c->weights, (int64_t)d->weights_bytes)) || (rc = dev_alloc(c, &c->init, p->init_bytes)) ||
        (rc = dev_alloc(c, &c->arena, p->arena_bytes)) || (rc = dev_alloc(c, &c->status, 4 * (int64_t)p->nkernels)) ||
        (rc = dev_alloc(c, &c->syms, 8 * (int64_t)p->nsyms)))
        return rc;
    for (int i = 0; i < d->ninputs; i++)
        if ((rc = dev_alloc(c, &c->in[i], c->in_bytes[i] = tensor_bytes(&d->inputs[i]))))
            return rc;
    for (int i = 0; i < d->noutputs; i++)
        if ((rc = dev_alloc(c, &c->out[i], c->out_bytes[i] = tensor_bytes(&d->outputs[i]))))
            return rc;
    CU(cu.MemsetD8Async(c->syms, 0, 8 * (size_t)p->nsyms, c->stream), "clearing the symbol table");
    CU(cu.MemsetD8Async(c->status, 0, 4 * (size_t)(p->nkernels ? p->nkernels : 1), c->stream), "clearing the status");
    if (d->weights_bytes)
        CU(cu.MemcpyHtoDAsync(c->weights, m->weights, (size_t)d->weights_bytes, c->stream), "copying the weights");
    /* the load-time kernels, into this device's init buffer */
    c->in_init = true;
    rc = run_steps(c, 0, p->ninit_steps);
    c->in_init = false;
    if (rc == 0)
        rc = sync_status(c);
    return rc;
}

icc_status rt_cuda_create(const icc_model *m, rt_cuda **out, char *err, size_t errlen)
{
    *out = NULL;
    pthread_once(&driver_once, open_driver);
    if (driver_error[0]) {
        snprintf(err, errlen, "%s", driver_error);
        return ICC_ERR_DEVICE;
    }
    const icc_model_desc *d = m->desc;
    rt_cuda *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return ICC_ERR_NOMEM;
    }
    c->d = d;
    c->p = plan_of(d);
    c->ks = (const void *)((const char *)c->p + c->p->kernels);
    c->refs = (const void *)((const char *)c->p + c->p->refs);
    c->steps = (const void *)((const char *)c->p + c->p->steps);
    c->copies = (const void *)((const char *)c->p + c->p->copies);
    c->err = err;
    c->errlen = errlen;
    size_t nk = (size_t)c->p->nkernels + 1, ni = (size_t)d->ninputs + 1, no = (size_t)d->noutputs + 1;
    c->fns = calloc(nk, sizeof *c->fns);
    c->status_host = calloc(nk, sizeof *c->status_host);
    c->in = calloc(ni, sizeof *c->in);
    c->in_bytes = calloc(ni, sizeof *c->in_bytes);
    c->out = calloc(no, sizeof *c->out);
    c->out_bytes = calloc(no, sizeof *c->out_bytes);
    c->ext = calloc(ni + no, sizeof *c->ext);
    int rc = !c->fns || !c->status_host || !c->in || !c->in_bytes || !c->out || !c->out_bytes || !c->ext
                 ? (snprintf(err, errlen, "out of memory"), ICC_ERR_NOMEM)
                 : setup(c, m);
    pop(c);
    if (rc) {
        if ((rc & 0xff) == ICC_ERR_INVALID && rc >> 8 && (rc >> 8) <= d->nmessages)
            snprintf(err, errlen, "the code run at load failed: %s", d->messages[(rc >> 8) - 1]);
        rt_cuda_destroy(c);
        return (icc_status)(rc & 0xff);
    }
    *out = c;
    return ICC_OK;
}

int rt_cuda_run(rt_cuda *c, const void *const *inputs, void *const *outputs, bool device, char *err,
                size_t errlen)
{
    c->err = err;
    c->errlen = errlen;
    int rc = push(c);
    if (rc)
        return rc;
    const icc_model_desc *d = c->d;
    const icc_cuda_plan *p = c->p;
    /* the caller's device buffers stand in for the context's for this run */
    CUdeviceptr *own_in = c->in, *own_out = c->out;
    if (device) {
        for (int i = 0; i < d->ninputs; i++)
            c->ext[i] = (CUdeviceptr)(uintptr_t)inputs[i];
        for (int o = 0; o < d->noutputs; o++)
            c->ext[d->ninputs + o] = (CUdeviceptr)(uintptr_t)outputs[o];
        c->in = c->ext;
        c->out = c->ext + d->ninputs;
    }
    if (p->nkernels && (rc = cu.MemsetD8Async(c->status, 0, 4 * (size_t)p->nkernels, c->stream)))
        rc = cu_fail(c, rc, "clearing the status");
    for (int i = 0; rc == 0 && !device && i < d->ninputs; i++)
        if (c->in_bytes[i] && (rc = cu.MemcpyHtoDAsync(c->in[i], inputs[i], (size_t)c->in_bytes[i], c->stream)))
            rc = cu_fail(c, rc, "copying an input to the device");
    if (rc == 0)
        rc = run_steps(c, p->ninit_steps, p->nsteps);
    for (int i = 0; rc == 0 && i < p->ncopies; i++) {
        const icc_cuda_copy *cp = &c->copies[i];
        if (cp->bytes && (rc = cu.MemcpyDtoDAsync(c->out[cp->output], where(c, cp->src), (size_t)cp->bytes, c->stream)))
            rc = cu_fail(c, rc, "copying an output");
    }
    for (int o = 0; rc == 0 && !device && o < d->noutputs; o++)
        if (c->out_bytes[o] &&
            (rc = cu.MemcpyDtoHAsync(outputs[o], c->out[o], (size_t)c->out_bytes[o], c->stream)))
            rc = cu_fail(c, rc, "copying an output from the device");
    if (rc == 0)
        rc = sync_status(c);
    else if (c->stream)
        cu.StreamSynchronize(c->stream);   /* nothing may still write into the caller's buffers */
    c->in = own_in;
    c->out = own_out;
    pop(c);
    return rc;
}
