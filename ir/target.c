/* target.c - target descriptions from a triple, a CPU name and a feature
 * string (target.h): the features each known CPU implies, the vector
 * width and register count that follow, and the cache sizes typical of
 * the architecture (a schedule's blocking starts from them; "native"
 * replaces them with the host's). The CPU table holds facts from the
 * vendors' documentation of each core, not measurements.
 */
#include "ir/target.h"

#include <stdio.h>
#include <string.h>

static const char *const feature_names[ICC_TF_COUNT] = {
#define TF(id, name, arch) name,
#include "ir/target_features.def"
#undef TF
};

const char *icc_target_feature_name(icc_target_feature f)
{
    return f < ICC_TF_COUNT ? feature_names[f] : "?";
}

/* Feature sets the CPU table composes. */
#define X_V2 "sse4.2"
#define X_V3 X_V2 ",avx,avx2,fma,f16c"
#define X_V4 X_V3 ",avx512f,avx512bw,avx512dq,avx512vl"
#define X_ICX X_V4 ",avx512vnni"
#define X_SPR X_ICX ",avx512bf16,avx512fp16,avxvnni,amx-tile,amx-int8,amx-bf16"
#define A_DOT "neon,fullfp16,dotprod"
#define A_V8_6 A_DOT ",bf16,i8mm"

static const struct {
    const char *cpu;
    const char *features;
} cpu_table[] = {
    {"x86-64", ""},
    {"x86-64-v2", X_V2},
    {"nehalem", X_V2}, {"westmere", X_V2},
    {"sandybridge", X_V2 ",avx"}, {"ivybridge", X_V2 ",avx,f16c"},
    {"x86-64-v3", X_V3}, {"haswell", X_V3}, {"broadwell", X_V3}, {"skylake", X_V3},
    {"alderlake", X_V3 ",avxvnni"}, {"raptorlake", X_V3 ",avxvnni"}, {"meteorlake", X_V3 ",avxvnni"},
    {"znver1", X_V3}, {"znver2", X_V3}, {"znver3", X_V3},
    {"x86-64-v4", X_V4}, {"skylake-avx512", X_V4}, {"cascadelake", X_ICX},
    {"cooperlake", X_ICX ",avx512bf16"},
    {"icelake-client", X_ICX}, {"icelake-server", X_ICX}, {"tigerlake", X_ICX}, {"rocketlake", X_ICX},
    {"sapphirerapids", X_SPR}, {"emeraldrapids", X_SPR}, {"graniterapids", X_SPR},
    {"znver4", X_ICX ",avx512bf16"}, {"znver5", X_ICX ",avx512bf16,avxvnni"},
    {"generic", ""},
    {"cortex-a53", "neon"}, {"cortex-a55", A_DOT}, {"cortex-a76", A_DOT}, {"cortex-a78", A_DOT},
    {"neoverse-n1", A_DOT}, {"neoverse-v1", A_V8_6 ",sve"}, {"neoverse-n2", A_V8_6 ",sve"},
    {"neoverse-v2", A_V8_6 ",sve"}, {"apple-m1", A_DOT}, {"apple-m2", A_V8_6}, {"apple-m3", A_V8_6},
};

/* Applies "a,+b,-c" to t->features: a bare or '+' name sets, '-' clears
 * (later entries win, as in LLVM); names outside target_features.def are
 * ignored, since they do not change what icc emits. */
static void apply_features(icc_target_desc *t, const char *list, uint64_t *cleared)
{
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        bool on = true;
        const char *name = p;
        if (len && (*p == '+' || *p == '-')) {
            on = *p == '+';
            name++;
            len--;
        }
        for (int f = 0; f < ICC_TF_COUNT; f++)
            if (strlen(feature_names[f]) == len && !memcmp(feature_names[f], name, len)) {
                if (on)
                    t->features |= 1ull << f, *cleared &= ~(1ull << f);
                else
                    t->features &= ~(1ull << f), *cleared |= 1ull << f;
            }
        p = e ? e + 1 : p + strlen(p);
    }
}

int icc_target_desc_init(icc_target_desc *t, const char *triple, const char *cpu, const char *features,
                         icc_diag *d)
{
    memset(t, 0, sizeof *t);
    if (!triple)
        return ir_errorf(d, "no target triple");
    if (!strncmp(triple, "x86_64-", 7))
        t->arch = ICC_ARCH_X86_64;
    else if (!strncmp(triple, "aarch64-", 8) || !strncmp(triple, "arm64-", 6))
        t->arch = ICC_ARCH_AARCH64;
    else
        return ir_errorf(d, "unsupported target triple '%s' (icc generates code for x86_64 and aarch64)", triple);
    snprintf(t->triple, sizeof t->triple, "%s", triple);
    snprintf(t->cpu, sizeof t->cpu, "%s", cpu ? cpu : "generic");
    uint64_t cleared = 0;
    if (t->arch == ICC_ARCH_AARCH64)
        apply_features(t, "neon", &cleared);   /* every AArch64 core has Advanced SIMD */
    for (size_t i = 0; i < sizeof cpu_table / sizeof cpu_table[0]; i++)
        if (!strcmp(t->cpu, cpu_table[i].cpu))
            apply_features(t, cpu_table[i].features, &cleared);
    apply_features(t, features, &cleared);
    /* implications the vector facts depend on */
    if (icc_target_has(t, ICC_TF_AVX2))
        t->features |= 1ull << ICC_TF_AVX;
    if (icc_target_has(t, ICC_TF_AVX512F))
        t->features |= 1ull << ICC_TF_AVX2 | 1ull << ICC_TF_AVX;

    if (t->arch == ICC_ARCH_X86_64) {
        /* LLVM 19 splits AVX-512 into the instructions and the 512-bit
         * registers (evex512): without the latter only 256 bits are used. */
        bool zmm = icc_target_has(t, ICC_TF_AVX512F) && !(cleared >> ICC_TF_EVEX512 & 1);
        t->vector_bits = zmm ? 512 : icc_target_has(t, ICC_TF_AVX) ? 256 : 128;
        t->vector_regs = icc_target_has(t, ICC_TF_AVX512F) ? 32 : 16;
        t->l1d_bytes = 32 << 10;
        t->l2_bytes = zmm ? 1 << 20 : 256 << 10;
        t->l3_bytes = 8 << 20;
    } else {
        t->vector_bits = 128;
        t->vector_regs = 32;
        t->l1d_bytes = 64 << 10;
        t->l2_bytes = 1 << 20;
        t->l3_bytes = 8 << 20;
    }
    return 0;
}

int icc_target_desc_init_cuda(icc_target_desc *t, int sm, icc_diag *d)
{
    memset(t, 0, sizeof *t);
    if (sm < 50 || sm > 200)
        return ir_errorf(d, "unsupported CUDA architecture sm_%d (icc supports sm_50 and newer)", sm);
    t->arch = ICC_ARCH_CUDA;
    snprintf(t->triple, sizeof t->triple, "nvptx64-nvidia-cuda");
    snprintf(t->cpu, sizeof t->cpu, "sm_%d", sm);
    t->sm = sm;
    t->warp_size = 32;
    /* the opt-in maximum per block (bytes), by generation */
    t->smem_per_block = sm >= 90 ? 227 << 10 : sm >= 80 ? 163 << 10 : sm >= 70 ? 96 << 10 : 48 << 10;
    t->tensor_core_gen = sm >= 90 ? 3 : sm >= 80 ? 2 : sm >= 70 ? 1 : 0;
    t->vector_bits = 128;      /* one thread's widest load */
    return 0;
}

int icc_target_f32_lanes(const icc_target_desc *t)
{
    return t->arch == ICC_ARCH_CUDA ? t->warp_size : t->vector_bits / 32;
}

int icc_target_layout_block(const icc_target_desc *t)
{
    int l = t->arch == ICC_ARCH_CUDA ? 16 : t->vector_bits / 32;
    return l < 4 ? 4 : l;
}

void icc_target_desc_str(const icc_target_desc *t, char *buf, size_t n)
{
    int len = snprintf(buf, n, "%s cpu=%s", t->triple, t->cpu);
    if (t->arch == ICC_ARCH_CUDA) {
        snprintf(buf + len, n > (size_t)len ? n - (size_t)len : 0, " warp=%d smem=%lld tensor-cores=%d",
                 t->warp_size, (long long)t->smem_per_block, t->tensor_core_gen);
        return;
    }
    len += snprintf(buf + len, n > (size_t)len ? n - (size_t)len : 0, " vector=%dx%d features=", t->vector_bits,
                    t->vector_regs);
    bool first = true;
    for (int f = 0; f < ICC_TF_COUNT && (size_t)len < n; f++)
        if (icc_target_has(t, f) && f != ICC_TF_EVEX512) {
            len += snprintf(buf + len, n - (size_t)len, "%s%s", first ? "" : ",", feature_names[f]);
            first = false;
        }
    if (t->bf16_dot_rate > 0 && (size_t)len < n)
        snprintf(buf + len, n - (size_t)len, " bf16-dot=%.2fx-fma", t->bf16_dot_rate);
}
