/* target_probe.c - measured facts of the host CPU (target_probe.h). */
#include "ir/target_probe.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx512f"))) double icc_probe_fma_avx512(int64_t iters)
{
    __m512 a[16], b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < 16; i++)
        a[i] = _mm512_set1_ps(1.0f + (float)i);
    for (int64_t k = 0; k < iters; k++) {
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++)   /* unrolled: the chains live in registers */
            a[i] = _mm512_fmadd_ps(a[i], b, c);
    }
    __m512 s = a[0];
    for (int i = 1; i < 16; i++)
        s = _mm512_add_ps(s, a[i]);
    return (double)_mm512_reduce_add_ps(s);
}

__attribute__((target("avx512f,avx512bf16"))) double icc_probe_bf16_avx512(int64_t iters)
{
    __m512 a[16];
    __m512bh b = (__m512bh)_mm512_set1_epi32(0x3f7f3f7f), c = (__m512bh)_mm512_set1_epi32(0x33d633d6);
    for (int i = 0; i < 16; i++)
        a[i] = _mm512_set1_ps(1.0f + (float)i);
    for (int64_t k = 0; k < iters; k++) {
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++)
            a[i] = _mm512_dpbf16_ps(a[i], b, c);
    }
    __m512 s = a[0];
    for (int i = 1; i < 16; i++)
        s = _mm512_add_ps(s, a[i]);
    return (double)_mm512_reduce_add_ps(s);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double bf16_rate;

static void probe_bf16(void)
{
    /* ICC_BF16_DOT_RATE: the rate as given, nothing measured (a compile
     * whose schedule must not depend on a timing: reproducible builds,
     * and tests that compare two processes' choices) */
    const char *env = getenv("ICC_BF16_DOT_RATE");
    if (env && *env) {
        char *end;
        double r = strtod(env, &end);
        if (*end == 0 && r > 0 && r < 1e3) {
            bf16_rate = r;
            return;
        }
    }
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bf16"))
        return;
    /* 2048 steps: ~30 us of FMAs, 30-60 us of dots on today's cores;
     * alternated so a slow stretch of a shared machine hits both, the
     * best of each (the first round also ramps the vector units up). 24
     * rounds, about 2 ms: with 8, two compiles on a loaded 2-vCPU VM (CI
     * beside them) once measured 0.5 and above 0.75 */
    enum { STEPS = 2048, ROUNDS = 24 };
    double fma = 1e30, dot = 1e30;
    volatile double sink = 0;
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now_s();
        sink += icc_probe_fma_avx512(STEPS);
        double t1 = now_s();
        sink += icc_probe_bf16_avx512(STEPS);
        double t2 = now_s();
        fma = t1 - t0 < fma ? t1 - t0 : fma;
        dot = t2 - t1 < dot ? t2 - t1 : dot;
    }
    (void)sink;
    /* per step both issue 16 instructions: the dot's 2 products a lane
     * against the FMA's 1 */
    if (fma > 0 && dot > 0)
        bf16_rate = 2.0 * fma / dot;
}

double icc_target_probe_bf16_dot_rate(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, probe_bf16);
    return bf16_rate;
}

#else

double icc_probe_fma_avx512(int64_t iters)
{
    (void)iters;
    return 0;
}

double icc_probe_bf16_avx512(int64_t iters)
{
    (void)iters;
    return 0;
}

double icc_target_probe_bf16_dot_rate(void)
{
    return 0;
}

#endif
