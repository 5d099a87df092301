/* emu.h - runs icc's CUDA C on the CPU, as an oracle for the CUDA
 * emitter (codegen/cuda/emit.c) where no GPU is: included in front of an
 * emitted translation unit compiled as C++ (tests/conformance/cuda_emu.c).
 * A launch of T threads is the kernel called T times, thread id 0..T-1,
 * one after another: the emitted kernels have no barriers, so any order
 * of their threads is a valid schedule. */
#define ICC_CUDA_EMU 1
#include <math.h>
#include <string.h>

#define ICC_D static inline
#define ICC_KERNEL static void
#define __restrict__ __restrict
extern "C" {
long long icc_emu_tid = 0, icc_emu_nthreads = 1;   /* set by the launcher before each call */
}
#define ICC_TID icc_emu_tid
#define ICC_NTHREADS icc_emu_nthreads
static inline unsigned icc_f2u(float x) { unsigned u; memcpy(&u, &x, 4); return u; }
static inline float icc_u2f(unsigned u) { float x; memcpy(&x, &u, 4); return x; }
static inline unsigned long long icc_d2u(double x) { unsigned long long u; memcpy(&u, &x, 8); return u; }
static inline double icc_u2d(unsigned long long u) { double x; memcpy(&x, &u, 8); return x; }
