/* fake_driver.c - a stand-in for libcuda.so.1 that runs a CUDA model's
 * kernels on the CPU, so that the runtime's CUDA path (runtime/cuda.c:
 * the driver opened with dlopen, module load, device memory, copies,
 * launches with cuLaunchKernel's parameters, the step table, the status
 * words) is tested where there is no GPU. The runtime takes it through
 * ICC_CUDA_DRIVER=<this library>.
 *
 * "Device memory" is host memory (malloc, so the sanitizers see every
 * access); a module is the model's CUDA C compiled as C++ with
 * tests/cuda/emu.h in front (`icc MODEL --target=cuda --emit=cuda`),
 * named by ICC_FAKE_CUDA_EMU; a kernel is its `<name>_launch` entry, called
 * once per thread of the launch with the thread's index set.
 *
 * The image the runtime hands to cuModuleLoadData must be a cubin (ELF)
 * or PTX text, as a real driver wants. Knobs:
 *   ICC_FAKE_CUDA_DEVICES=N      cuDeviceGetCount reports N (default 1)
 *   ICC_FAKE_CUDA_NO_CUBIN=1     the cubin is for another GPU (error 209): the PTX must be loaded
 *   ICC_FAKE_CUDA_LOG=FILE       appends one line per call kind used, for the test to check
 * It counts live allocations and contexts, and fails
 * cuDevicePrimaryCtxRelease when memory is still allocated at the last
 * release (a leak in the runtime). */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream;
typedef unsigned long long CUdeviceptr;

enum { OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, NO_DEVICE = 100, INVALID_IMAGE = 200, NO_BINARY = 209,
       NOT_FOUND = 500 };

#define API __attribute__((visibility("default")))

static int live_allocs, live_ctx;
static int ctx_token;
static void *emu_lib;
static long long *emu_tid, *emu_nthreads;

static void note(const char *what)
{
    const char *f = getenv("ICC_FAKE_CUDA_LOG");
    FILE *o = f && *f ? fopen(f, "a") : NULL;
    if (o) {
        fprintf(o, "%s\n", what);
        fclose(o);
    }
}

API CUresult cuInit(unsigned flags) { return flags ? INVALID_VALUE : OK; }

API CUresult cuDeviceGetCount(int *n)
{
    const char *e = getenv("ICC_FAKE_CUDA_DEVICES");
    *n = e && *e ? atoi(e) : 1;
    return OK;
}

API CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    int n;
    cuDeviceGetCount(&n);
    if (ordinal < 0 || ordinal >= n)
        return INVALID_VALUE;
    *d = ordinal;
    return OK;
}

API CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
    (void)d;
    live_ctx++;
    *c = &ctx_token;
    return OK;
}

API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
    (void)d;
    if (live_ctx <= 0)
        return INVALID_VALUE;
    if (--live_ctx == 0 && live_allocs) {
        fprintf(stderr, "fake CUDA driver: %d allocations still live at the last context release\n", live_allocs);
        return INVALID_VALUE;
    }
    return OK;
}

static int pushed;
API CUresult cuCtxPushCurrent_v2(CUcontext c) { return c == &ctx_token ? (pushed++, OK) : INVALID_VALUE; }
API CUresult cuCtxPopCurrent_v2(CUcontext *c)
{
    if (pushed <= 0)
        return INVALID_VALUE;
    pushed--;
    if (c)
        *c = &ctx_token;
    return OK;
}

API CUresult cuModuleLoadData(CUmodule *m, const void *image)
{
    const unsigned char *b = image;
    bool elf = !memcmp(b, "\x7f" "ELF", 4);
    bool ptx = !elf && strstr((const char *)b, ".version") && strstr((const char *)b, ".target");
    if (!elf && !ptx)
        return INVALID_IMAGE;
    if (elf && getenv("ICC_FAKE_CUDA_NO_CUBIN"))
        return NO_BINARY;
    note(elf ? "load cubin" : "load ptx");
    const char *lib = getenv("ICC_FAKE_CUDA_EMU");
    if (!lib || !(emu_lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL))) {
        fprintf(stderr, "fake CUDA driver: ICC_FAKE_CUDA_EMU: %s\n", lib ? dlerror() : "not set");
        return INVALID_IMAGE;
    }
    emu_tid = dlsym(emu_lib, "icc_emu_tid");
    emu_nthreads = dlsym(emu_lib, "icc_emu_nthreads");
    if (!emu_tid || !emu_nthreads)
        return INVALID_IMAGE;
    *m = emu_lib;
    return OK;
}

API CUresult cuModuleUnload(CUmodule m)
{
    if (m != emu_lib || !m)
        return INVALID_VALUE;
    dlclose(emu_lib);
    emu_lib = NULL;
    return OK;
}

API CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
    char sym[512];
    snprintf(sym, sizeof sym, "%s_launch", name);
    void *p = m == emu_lib && m ? dlsym(m, sym) : NULL;
    if (!p)
        return NOT_FOUND;
    *f = p;
    return OK;
}

API CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
    if (!n)
        return INVALID_VALUE;
    void *m = malloc(n);
    if (!m)
        return OUT_OF_MEMORY;
    memset(m, 0xa5, n);   /* device memory starts undefined: never read as zeros by luck */
    live_allocs++;
    *p = (CUdeviceptr)(uintptr_t)m;
    return OK;
}

API CUresult cuMemFree_v2(CUdeviceptr p)
{
    if (!p)
        return INVALID_VALUE;
    free((void *)(uintptr_t)p);
    live_allocs--;
    return OK;
}

API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, CUstream st)
{
    (void)st;
    memmove((void *)(uintptr_t)d, s, n);
    return OK;
}

API CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, CUstream st)
{
    (void)st;
    memmove(d, (const void *)(uintptr_t)s, n);
    return OK;
}

API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)
{
    (void)st;
    memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
    return OK;
}

API CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream st)
{
    (void)st;
    memset((void *)(uintptr_t)d, v, n);
    return OK;
}

API CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                            unsigned bz, unsigned shmem, CUstream st, void **params, void **extra)
{
    (void)st;
    if (!f || !params || extra || shmem || gy != 1 || gz != 1 || by != 1 || bz != 1 || !gx || !bx || bx > 1024)
        return INVALID_VALUE;
    note("launch");
    long long n = (long long)gx * bx;
    for (long long t = 0; t < n; t++) {
        *emu_tid = t;
        *emu_nthreads = n;
        ((void (*)(void **))f)(params);
    }
    return OK;
}

static int stream_token;
API CUresult cuStreamCreate(CUstream *s, unsigned flags)
{
    (void)flags;
    *s = &stream_token;
    return OK;
}
API CUresult cuStreamDestroy_v2(CUstream s) { return s == &stream_token ? OK : INVALID_VALUE; }
API CUresult cuStreamSynchronize(CUstream s) { return s == &stream_token ? OK : INVALID_VALUE; }

API CUresult cuGetErrorString(CUresult r, const char **s)
{
    switch (r) {
    case OK: *s = "no error"; return OK;
    case INVALID_VALUE: *s = "invalid argument"; return OK;
    case OUT_OF_MEMORY: *s = "out of memory"; return OK;
    case NO_DEVICE: *s = "no CUDA-capable device is detected"; return OK;
    case INVALID_IMAGE: *s = "device kernel image is invalid"; return OK;
    case NO_BINARY: *s = "no kernel image is available for execution on the device"; return OK;
    case NOT_FOUND: *s = "named symbol not found"; return OK;
    default: *s = NULL; return INVALID_VALUE;
    }
}
