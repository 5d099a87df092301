/* emu.h - runs icc's CUDA C on the CPU, as an oracle for the CUDA
 * emitter (codegen/cuda/emit.c) where no GPU is: included in front of an
 * emitted translation unit compiled as C++ (tests/conformance/cuda_emu.c).
 * A launch of T threads is the kernel called T times, thread id 0..T-1,
 * one after another: any order of their threads is a valid schedule of
 * kernels without barriers. A GPU-scheduled kernel (grid and thread
 * loops, shared memory, barriers) is run whole by the launcher's first
 * call (icc_emu_grid): two blocks (so the grid loop strides), one after
 * the other, each thread a pthread and a barrier a pthread barrier;
 * __shared__ arrays are the kernel's static locals. */
#define ICC_CUDA_EMU 1
#include <functional>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define ICC_D static inline
#define ICC_KERNEL static void
#define __restrict__ __restrict
extern "C" {
long long icc_emu_tid = 0, icc_emu_nthreads = 1;   /* set by the launcher before each call */
}
#define ICC_TID icc_emu_tid
#define ICC_NTHREADS icc_emu_nthreads
static thread_local long long icc_emu_bid, icc_emu_ltid;
static long long icc_emu_nblocks = 1, icc_emu_bdim = 1;
static pthread_barrier_t icc_emu_bar;
#define ICC_BID icc_emu_bid
#define ICC_NBLOCKS icc_emu_nblocks
#define ICC_LTID icc_emu_ltid
#define ICC_BDIM icc_emu_bdim
#define ICC_SYNC() pthread_barrier_wait(&icc_emu_bar)
#define __shared__ static
struct icc_emu_thread_arg {
    const std::function<void()> *f;
    long long bid, ltid;
};
static void *icc_emu_thread(void *p)
{
    const icc_emu_thread_arg *a = (const icc_emu_thread_arg *)p;
    icc_emu_bid = a->bid;
    icc_emu_ltid = a->ltid;
    (*a->f)();
    return NULL;
}
static void icc_emu_grid(long long bdim, const std::function<void()> &f)
{
    icc_emu_nblocks = 2;
    icc_emu_bdim = bdim;
    pthread_t th[1024];
    icc_emu_thread_arg args[1024];
    for (long long b = 0; b < icc_emu_nblocks; b++) {
        pthread_barrier_init(&icc_emu_bar, NULL, (unsigned)bdim);
        long long made = 0;
        for (; made < bdim; made++) {
            args[made] = {&f, b, made};
            if (pthread_create(&th[made], NULL, icc_emu_thread, &args[made]))
                abort(); /* a barrier would wait for it forever */
        }
        for (long long t = 0; t < made; t++)
            pthread_join(th[t], NULL);
        pthread_barrier_destroy(&icc_emu_bar);
    }
}
static inline unsigned icc_f2u(float x) { unsigned u; memcpy(&u, &x, 4); return u; }
static inline float icc_u2f(unsigned u) { float x; memcpy(&x, &u, 4); return x; }
static inline unsigned long long icc_d2u(double x) { unsigned long long u; memcpy(&u, &x, 8); return u; }
static inline double icc_u2d(unsigned long long u) { double x; memcpy(&x, &u, 8); return x; }
