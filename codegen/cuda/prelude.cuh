/* prelude.cuh - the helpers every CUDA translation unit icc emits starts
 * with (codegen/cuda/emit.c copies this text in front of the kernels).
 *
 * It is C++ that NVRTC compiles with no headers, and that a host C++
 * compiler compiles too when ICC_CUDA_EMU is defined: then the includer
 * supplies ICC_TID, ICC_NTHREADS, the qualifiers and the bit casts
 * (tests/cuda/emu.h), which runs the kernels on the CPU as an oracle for
 * the emitter.
 *
 * The semantics are the kernel IR's (codegen/kir_ops.def), the same as the
 * LLVM backend's: integer arithmetic wraps, integer x/0 and x%0 are 0,
 * shifts by >= the width give 0, float->int casts truncate and saturate
 * with NaN -> 0, float min/max propagate NaN and order -0 below +0, f16
 * and bf16 live in float registers holding representable values and are
 * rounded (to nearest even) after each inexact op, bool is one byte in
 * memory. */
typedef signed char icc_i8;
typedef unsigned char icc_u8;
typedef short icc_i16;
typedef unsigned short icc_u16;
typedef int icc_i32;
typedef unsigned int icc_u32;
typedef long long icc_i64;
typedef unsigned long long icc_u64;

#ifndef ICC_CUDA_EMU
#define ICC_D static __device__ __forceinline__
#define ICC_TID ((icc_i64)blockIdx.x * blockDim.x + threadIdx.x)
#define ICC_NTHREADS ((icc_i64)gridDim.x * blockDim.x)
#define ICC_KERNEL extern "C" __global__ void
/* a GPU schedule's loops (grid, thread) and its block barrier */
#define ICC_BID ((icc_i64)blockIdx.x)
#define ICC_NBLOCKS ((icc_i64)gridDim.x)
#define ICC_LTID ((icc_i64)threadIdx.x)
#define ICC_BDIM ((icc_i64)blockDim.x)
#define ICC_SYNC() __syncthreads()
ICC_D icc_u32 icc_f2u(float x) { return __float_as_uint(x); }
ICC_D float icc_u2f(icc_u32 u) { return __uint_as_float(u); }
ICC_D icc_u64 icc_d2u(double x) { return (icc_u64)__double_as_longlong(x); }
ICC_D double icc_u2d(icc_u64 u) { return __longlong_as_double((long long)u); }
#endif

ICC_D icc_i64 icc_imax(icc_i64 a, icc_i64 b) { return a > b ? a : b; }
ICC_D icc_i64 icc_imin(icc_i64 a, icc_i64 b) { return a < b ? a : b; }

/* ---- f16 / bf16 ------------------------------------------------------------ */

/* x rounded to the nearest f16 value (ties to even), as a float. */
ICC_D float icc_rh(float x)
{
    icc_u32 u = icc_f2u(x), a = u & 0x7fffffffu;
    if (a >= 0x7f800000u)
        return x;                                   /* inf, NaN */
    if (a >= 0x477ff000u)                           /* >= 65520: past the largest f16 */
        return icc_u2f((u & 0x80000000u) | 0x7f800000u);
    if (a < 0x38800000u) {                          /* below 2^-14: multiples of 2^-24 */
        float r = rintf(icc_u2f(a) * 16777216.0f) * 5.9604644775390625e-08f;
        return icc_u2f((u & 0x80000000u) | icc_f2u(r));
    }
    u += 0xfffu + ((u >> 13) & 1u);
    return icc_u2f(u & ~0x1fffu);
}

/* x rounded to the nearest bf16 value (ties to even), as a float. */
ICC_D float icc_rbf(float x)
{
    icc_u32 u = icc_f2u(x);
    if (x != x)
        return icc_u2f((u | 0x400000u) & 0xffff0000u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return icc_u2f(u & 0xffff0000u);
}

ICC_D float icc_h2f(icc_u16 h)
{
    icc_u32 s = (icc_u32)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0)
        return icc_u2f(s | icc_f2u((float)m * 5.9604644775390625e-08f));
    if (e == 31)
        return icc_u2f(s | 0x7f800000u | (m << 13));
    return icc_u2f(s | ((e + 112u) << 23) | (m << 13));
}

ICC_D icc_u16 icc_f2h(float x)
{
    icc_u32 u = icc_f2u(icc_rh(x)), s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (icc_u16)(s | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x47800000u)
        return (icc_u16)(s | 0x7c00u);
    if (a < 0x38800000u)
        return (icc_u16)(s | (icc_u32)(icc_u2f(a) * 16777216.0f));
    return (icc_u16)(s | ((a - 0x38000000u) >> 13));
}

ICC_D float icc_bf2f(icc_u16 h) { return icc_u2f((icc_u32)h << 16); }

/* mma_sync (codegen/kir_intrinsics.def): a warp's 16 x 8 x 16 product with
 * f32 sums. a: 16 rows of 16 halves, pa apart; b: 8 rows (B's columns) of
 * 16, pb apart; lane l adds rows l/4 and l/4 + 8, columns 2(l%4) and
 * 2(l%4) + 1 into its c[0..3]. On a GPU mma.sync (sm_80 and later: the
 * schedule uses it there only); in the CPU emulation, scalar sums. */
#ifdef ICC_CUDA_EMU
ICC_D void icc_mma(float *c, const icc_u16 *a, icc_i64 pa, const icc_u16 *b, icc_i64 pb, bool bf16)
{
    icc_i64 l = ICC_LTID & 31, g = l >> 2, q = l & 3;
    for (int i = 0; i < 4; i++) {
        icc_i64 r = g + (i >= 2 ? 8 : 0), n = 2 * q + (i & 1);
        float s = c[i];
        for (int k = 0; k < 16; k++)
            s += bf16 ? icc_bf2f(a[r * pa + k]) * icc_bf2f(b[n * pb + k]) : icc_h2f(a[r * pa + k]) * icc_h2f(b[n * pb + k]);
        c[i] = s;
    }
}
#else
ICC_D void icc_mma(float *c, const icc_u16 *a, icc_i64 pa, const icc_u16 *b, icc_i64 pb, bool bf16)
{
#if __CUDA_ARCH__ >= 800
    unsigned l = threadIdx.x & 31, g = l >> 2, q = l & 3;
    const unsigned *a0 = (const unsigned *)(a + g * pa + 2 * q), *a1 = (const unsigned *)(a + (g + 8) * pa + 2 * q);
    const unsigned *b0 = (const unsigned *)(b + g * pb + 2 * q);
    if (bf16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a0[0]), "r"(a1[0]), "r"(a0[4]), "r"(a1[4]), "r"(b0[0]), "r"(b0[4]));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a0[0]), "r"(a1[0]), "r"(a0[4]), "r"(a1[4]), "r"(b0[0]), "r"(b0[4]));
#endif
}
#endif
ICC_D icc_u16 icc_f2bf(float x) { return (icc_u16)(icc_f2u(icc_rbf(x)) >> 16); }

/* f64 -> f32 rounding to odd: a second rounding (to f16/bf16) then gives
 * the correctly rounded result. */
ICC_D float icc_odd(double x)
{
    float r = (float)x;
    double back = (double)r;
    if (back == x || x != x)
        return r;
    icc_u32 u = icc_f2u(r);
    if ((back < 0 ? -back : back) > (x < 0 ? -x : x))
        u -= 1u;
    return icc_u2f(u | 1u);
}

/* ---- float helpers ----------------------------------------------------------- */

ICC_D bool icc_neg_sign(float x) { return (icc_f2u(x) >> 31) != 0; }
ICC_D bool icc_neg_sign(double x) { return (icc_d2u(x) >> 63) != 0; }
#define ICC_FMINMAX(T)                                                                  \
    ICC_D T icc_min(T a, T b)                                                           \
    {                                                                                   \
        if (a != a) return a;                                                           \
        if (b != b) return b;                                                           \
        if (a == b) return icc_neg_sign(a) ? a : b;                                     \
        return a < b ? a : b;                                                           \
    }                                                                                   \
    ICC_D T icc_max(T a, T b)                                                           \
    {                                                                                   \
        if (a != a) return a;                                                           \
        if (b != b) return b;                                                           \
        if (a == b) return icc_neg_sign(a) ? b : a;                                     \
        return a > b ? a : b;                                                           \
    }
ICC_FMINMAX(float)
ICC_FMINMAX(double)

/* ONNX Gelu without the tanh approximation (KIR_GELU): 0.5 x erfc(-x / sqrt 2),
 * which does not cancel for x < 0 as 0.5 x (1 + erf(x / sqrt 2)) does */
ICC_D float icc_geluf(float x) { return 0.5f * x * erfcf(x * -0.70710678118654752f); }
ICC_D double icc_gelu(double x) { return 0.5 * x * erfc(x * -0.70710678118654752); }

/* ---- integers ---------------------------------------------------------------- */

/* T signed or unsigned, U its unsigned twin, W its width in bits. */
#define ICC_IOPS(T, U, W, SIGNED)                                                       \
    ICC_D T icc_add(T a, T b) { return (T)(U)((U)a + (U)b); }                           \
    ICC_D T icc_sub(T a, T b) { return (T)(U)((U)a - (U)b); }                           \
    ICC_D T icc_mul(T a, T b) { return (T)(U)((U)a * (U)b); }                           \
    ICC_D T icc_neg(T a) { return (T)(U)((U)0 - (U)a); }                                \
    ICC_D T icc_abs(T a) { return (SIGNED && a < (T)0) ? icc_neg(a) : a; }             \
    ICC_D T icc_fma(T a, T b, T c) { return icc_add(icc_mul(a, b), c); }                \
    ICC_D T icc_min(T a, T b) { return a < b ? a : b; }                                 \
    ICC_D T icc_max(T a, T b) { return a > b ? a : b; }                                 \
    ICC_D T icc_div(T a, T b)                                                           \
    {                                                                                   \
        if (b == (T)0) return (T)0;                                                     \
        if (SIGNED && b == (T)-1) return icc_neg(a);                                    \
        return (T)(a / b);                                                              \
    }                                                                                   \
    ICC_D T icc_rem(T a, T b)                                                           \
    {                                                                                   \
        if (b == (T)0 || (SIGNED && b == (T)-1)) return (T)0;                           \
        return (T)(a % b);                                                              \
    }                                                                                   \
    ICC_D T icc_shl(T a, T s) { return (U)s >= (U)W ? (T)0 : (T)(U)((U)a << (U)s); }    \
    ICC_D T icc_shr(T a, T s) { return (U)s >= (U)W ? (T)0 : (T)(U)((U)a >> (U)s); }    \
    ICC_D T icc_ashr(T a, T s) { return (T)(a >> ((U)s > (U)(W - 1) ? (U)(W - 1) : (U)s)); } \
    ICC_D T icc_pow(T b, T e)                                                           \
    {                                                                                   \
        if (SIGNED && e < (T)0)                                                         \
            return b == (T)1 ? (T)1 : b == (T)-1 ? ((e & (T)1) ? (T)-1 : (T)1) : (T)0;  \
        U r = 1, x = (U)b, n = (U)e;                                                    \
        while (n) {                                                                     \
            if (n & 1u) r = (U)(r * x);                                                 \
            x = (U)(x * x);                                                             \
            n >>= 1;                                                                    \
        }                                                                               \
        return (T)r;                                                                    \
    }
ICC_IOPS(icc_i8, icc_u8, 8, true)
ICC_IOPS(icc_u8, icc_u8, 8, false)
ICC_IOPS(icc_i16, icc_u16, 16, true)
ICC_IOPS(icc_u16, icc_u16, 16, false)
ICC_IOPS(icc_i32, icc_u32, 32, true)
ICC_IOPS(icc_u32, icc_u32, 32, false)
ICC_IOPS(icc_i64, icc_u64, 64, true)
ICC_IOPS(icc_u64, icc_u64, 64, false)

/* Float -> integer: truncate, saturate, NaN -> 0 (LLVM's fptosi.sat). */
#define ICC_F2I(NAME, T, LO, HI, LOV, HIV)                                              \
    ICC_D T NAME(double x)                                                              \
    {                                                                                   \
        if (x != x) return (T)0;                                                        \
        if (x <= LO) return (T)(LOV);                                                   \
        if (x >= HI) return (T)(HIV);                                                   \
        return (T)x;                                                                    \
    }
ICC_F2I(icc_f2_i8, icc_i8, -128.0, 127.0, -128, 127)
ICC_F2I(icc_f2_u8, icc_u8, 0.0, 255.0, 0, 255)
ICC_F2I(icc_f2_i16, icc_i16, -32768.0, 32767.0, -32768, 32767)
ICC_F2I(icc_f2_u16, icc_u16, 0.0, 65535.0, 0, 65535)
ICC_F2I(icc_f2_i32, icc_i32, -2147483648.0, 2147483647.0, -2147483647 - 1, 2147483647)
ICC_F2I(icc_f2_u32, icc_u32, 0.0, 4294967295.0, 0u, 4294967295u)
ICC_F2I(icc_f2_i64, icc_i64, -9223372036854775808.0, 9223372036854775808.0,
        -9223372036854775807LL - 1, 9223372036854775807LL)
ICC_F2I(icc_f2_u64, icc_u64, 0.0, 18446744073709551616.0, 0ull, 18446744073709551615ull)
