/* cpu.c - which CPU features this machine has, by LLVM's feature names.
 *
 * A model records the features its code was compiled for; the loader asks
 * here for each one before any of that code can run, so a missing feature
 * is an error message rather than SIGILL. On x86-64 a feature is present
 * when cpuid reports it AND, for features with their own register state
 * (AVX, AVX-512, AMX), xgetbv says the OS saves that state: otherwise the
 * first instruction touching it faults even though cpuid lists it. On
 * aarch64 the kernel's hwcaps are the source (EL0 cannot read the ID
 * registers portably). Each architecture's knowledge is one table; a name
 * missing from it counts as absent.
 */
#define _GNU_SOURCE
#include "runtime/cpu.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { L1, L7, L7_1, LX1, LD_1, NLEAVES };
enum { EAX, EBX, ECX, EDX };
/* OS register-state requirement: XCR0 bits that must all be set. */
#define OS_NONE 0u
#define OS_AVX 0x6u          /* SSE + AVX (YMM upper halves) */
#define OS_AVX512 0xe6u      /* + opmask, ZMM0-15 upper, ZMM16-31 */
#define OS_AMX 0x60000u      /* XTILECFG + XTILEDATA */

static const struct feature {
    const char *name;
    uint8_t leaf, reg, bit;
    uint32_t os;
} features[] = {
    {"x87", L1, EDX, 0, OS_NONE},        {"cx8", L1, EDX, 8, OS_NONE},
    {"cmov", L1, EDX, 15, OS_NONE},      {"mmx", L1, EDX, 23, OS_NONE},
    {"fxsr", L1, EDX, 24, OS_NONE},      {"sse", L1, EDX, 25, OS_NONE},
    {"sse2", L1, EDX, 26, OS_NONE},      {"sse3", L1, ECX, 0, OS_NONE},
    {"pclmul", L1, ECX, 1, OS_NONE},     {"ssse3", L1, ECX, 9, OS_NONE},
    {"fma", L1, ECX, 12, OS_AVX},        {"cx16", L1, ECX, 13, OS_NONE},
    {"sse4.1", L1, ECX, 19, OS_NONE},    {"sse4.2", L1, ECX, 20, OS_NONE},
    {"crc32", L1, ECX, 20, OS_NONE},     {"movbe", L1, ECX, 22, OS_NONE},
    {"popcnt", L1, ECX, 23, OS_NONE},    {"aes", L1, ECX, 25, OS_NONE},
    {"xsave", L1, ECX, 26, OS_NONE},     {"avx", L1, ECX, 28, OS_AVX},
    {"f16c", L1, ECX, 29, OS_AVX},       {"rdrnd", L1, ECX, 30, OS_NONE},
    {"fsgsbase", L7, EBX, 0, OS_NONE},   {"bmi", L7, EBX, 3, OS_NONE},
    {"avx2", L7, EBX, 5, OS_AVX},        {"bmi2", L7, EBX, 8, OS_NONE},
    {"invpcid", L7, EBX, 10, OS_NONE},   {"rtm", L7, EBX, 11, OS_NONE},
    {"avx512f", L7, EBX, 16, OS_AVX512}, {"avx512dq", L7, EBX, 17, OS_AVX512},
    {"rdseed", L7, EBX, 18, OS_NONE},    {"adx", L7, EBX, 19, OS_NONE},
    {"avx512ifma", L7, EBX, 21, OS_AVX512},
    {"clflushopt", L7, EBX, 23, OS_NONE}, {"clwb", L7, EBX, 24, OS_NONE},
    {"avx512cd", L7, EBX, 28, OS_AVX512}, {"sha", L7, EBX, 29, OS_NONE},
    {"avx512bw", L7, EBX, 30, OS_AVX512}, {"avx512vl", L7, EBX, 31, OS_AVX512},
    {"avx512vbmi", L7, ECX, 1, OS_AVX512}, {"pku", L7, ECX, 3, OS_NONE},
    {"waitpkg", L7, ECX, 5, OS_NONE},    {"avx512vbmi2", L7, ECX, 6, OS_AVX512},
    {"shstk", L7, ECX, 7, OS_NONE},      {"gfni", L7, ECX, 8, OS_NONE},
    {"vaes", L7, ECX, 9, OS_AVX},        {"vpclmulqdq", L7, ECX, 10, OS_AVX},
    {"avx512vnni", L7, ECX, 11, OS_AVX512},
    {"avx512bitalg", L7, ECX, 12, OS_AVX512},
    {"avx512vpopcntdq", L7, ECX, 14, OS_AVX512},
    {"rdpid", L7, ECX, 22, OS_NONE},     {"movdiri", L7, ECX, 27, OS_NONE},
    {"movdir64b", L7, ECX, 28, OS_NONE},
    {"avx512vp2intersect", L7, EDX, 8, OS_AVX512},
    {"serialize", L7, EDX, 14, OS_NONE}, {"tsxldtrk", L7, EDX, 16, OS_NONE},
    {"amx-bf16", L7, EDX, 22, OS_AMX},   {"avx512fp16", L7, EDX, 23, OS_AVX512},
    {"amx-tile", L7, EDX, 24, OS_AMX},   {"amx-int8", L7, EDX, 25, OS_AMX},
    {"avxvnni", L7_1, EAX, 4, OS_AVX},   {"avx512bf16", L7_1, EAX, 5, OS_AVX512},
    {"cmpccxadd", L7_1, EAX, 7, OS_NONE}, {"amx-fp16", L7_1, EAX, 21, OS_AMX},
    {"hreset", L7_1, EAX, 22, OS_NONE},  {"avxifma", L7_1, EAX, 23, OS_AVX},
    {"avxvnniint8", L7_1, EDX, 4, OS_AVX}, {"avxneconvert", L7_1, EDX, 5, OS_AVX},
    {"amx-complex", L7_1, EDX, 8, OS_AMX}, {"avxvnniint16", L7_1, EDX, 10, OS_AVX},
    {"prefetchi", L7_1, EDX, 14, OS_NONE},
    {"sahf", LX1, ECX, 0, OS_NONE},      {"lzcnt", LX1, ECX, 5, OS_NONE},
    {"sse4a", LX1, ECX, 6, OS_NONE},     {"prfchw", LX1, ECX, 8, OS_NONE},
    {"xop", LX1, ECX, 11, OS_AVX},       {"fma4", LX1, ECX, 16, OS_AVX},
    {"tbm", LX1, ECX, 21, OS_NONE},      {"64bit", LX1, EDX, 29, OS_NONE},
    {"xsaveopt", LD_1, EAX, 0, OS_NONE}, {"xsavec", LD_1, EAX, 1, OS_NONE},
    {"xsaves", LD_1, EAX, 3, OS_NONE},
};

static struct {
    uint32_t regs[NLEAVES][4];
    uint64_t xcr0;
} host;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

static void cpuid(unsigned leaf, unsigned sub, uint32_t r[4])
{
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_count(leaf, sub, &a, &b, &c, &d)) {
        r[EAX] = a, r[EBX] = b, r[ECX] = c, r[EDX] = d;
    }
}

static void probe(void)
{
    cpuid(1, 0, host.regs[L1]);
    cpuid(7, 0, host.regs[L7]);
    if (host.regs[L7][EAX] >= 1) /* the highest subleaf of leaf 7 */
        cpuid(7, 1, host.regs[L7_1]);
    cpuid(0x80000001u, 0, host.regs[LX1]);
    cpuid(0xd, 1, host.regs[LD_1]);
    /* xgetbv faults unless the OS enabled XSAVE (OSXSAVE, leaf 1 ECX 27). */
    if (host.regs[L1][ECX] & (1u << 27)) {
        uint32_t lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        host.xcr0 = (uint64_t)hi << 32 | lo;
    }
}

static const struct feature *find(const char *name);

int icc_cpu_has(const char *feature)
{
    const struct feature *f = find(feature);
    if (!f)
        return 0;
    pthread_once(&probe_once, probe);
    if (!(host.regs[f->leaf][f->reg] >> f->bit & 1))
        return 0;
    return (host.xcr0 & f->os) == f->os;
}

/* Linux hands out AMX tile-data state only on request (5.16+); without it
 * the first tile instruction faults. The permission is per process and a
 * repeated request is harmless. */
int icc_cpu_enable(const char *feature)
{
    const struct feature *f = find(feature);
    if (!f || f->os != OS_AMX)
        return 0;
#if defined(__linux__) && defined(SYS_arch_prctl)
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0)
        return -1;
#endif
    return 0;
}

#elif defined(__aarch64__)
#include <sys/auxv.h>

/* Bits of AT_HWCAP (1) and AT_HWCAP2 (2), from Linux's asm/hwcap.h. */
static const struct feature {
    const char *name;
    int which;
    unsigned long mask; /* all bits required */
} features[] = {
    {"fp-armv8", 1, 1ul << 0},
    {"neon", 1, 1ul << 1},
    {"aes", 1, 1ul << 3 | 1ul << 4},
    {"sha2", 1, 1ul << 6},
    {"crc", 1, 1ul << 7},
    {"lse", 1, 1ul << 8},
    {"fullfp16", 1, 1ul << 9 | 1ul << 10},
    {"fp16", 1, 1ul << 9 | 1ul << 10},
    {"rdm", 1, 1ul << 12},
    {"jsconv", 1, 1ul << 13},
    {"complxnum", 1, 1ul << 14},
    {"rcpc", 1, 1ul << 15},
    {"sha3", 1, 1ul << 17},
    {"dotprod", 1, 1ul << 20},
    {"sve", 1, 1ul << 22},
    {"fp16fml", 1, 1ul << 23},
    {"sve2", 2, 1ul << 1},
    {"i8mm", 2, 1ul << 13},
    {"bf16", 2, 1ul << 14},
};

static const struct feature *find(const char *name);

int icc_cpu_has(const char *feature)
{
    const struct feature *f = find(feature);
    if (!f)
        return 0;
    unsigned long caps = getauxval(f->which == 1 ? AT_HWCAP : AT_HWCAP2);
    return (caps & f->mask) == f->mask;
}

int icc_cpu_enable(const char *feature) { return 0; }
#endif

#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
/* The architecture's table entry for an LLVM feature name ("+avx2" or
 * "avx2"), or NULL. */
static const struct feature *find(const char *name)
{
    if (!name)
        return NULL;
    if (*name == '+')
        name++;
    for (size_t i = 0; i < sizeof features / sizeof features[0]; i++)
        if (!strcmp(features[i].name, name))
            return &features[i];
    return NULL;
}

int icc_cpu_known(const char *feature) { return find(feature) != NULL; }
#else
/* An architecture this runtime cannot probe: it knows no feature, so only
 * models that require none load. */
int icc_cpu_has(const char *feature) { return 0; }
int icc_cpu_known(const char *feature) { return 0; }
int icc_cpu_enable(const char *feature) { return 0; }
#endif
