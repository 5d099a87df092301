/* target.h - the target description: what the machine a model is compiled
 * for offers, as plain facts that passes, schedules and backends read.
 *
 * Usage:
 *
 *     icc_target_desc t;
 *     if (icc_target_desc_init(&t, "x86_64-pc-linux-gnu", "haswell", "", &d) < 0)
 *         ...;
 *     int cb = icc_target_layout_block(&t);          // 8: AVX2's f32 lanes
 *     if (icc_target_has(&t, ICC_TF_AVX512VNNI)) ...
 *
 * The description is built from a triple, a CPU name and an LLVM-style
 * feature string ("+avx2,-fma"); the CPU name implies the features of
 * the CPUs this file knows (x86-64 levels, Intel and AMD cores, Arm
 * cores), and the feature string adds or removes features on top. Only
 * the target "native" looks at the host, and not here: the backend that
 * probes the host (the LLVM backend asks LLVM for the host CPU features) passes what it
 * found as the feature string. A CUDA target (later: --target=cuda) fills
 * the sm version, warp size and shared memory instead of vector facts.
 *
 * The struct is a value: copy it freely; nothing in it is owned.
 */
#ifndef ICC_IR_TARGET_H
#define ICC_IR_TARGET_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/ir.h"

typedef enum icc_arch {
    ICC_ARCH_X86_64,
    ICC_ARCH_AARCH64,
    ICC_ARCH_CUDA,
} icc_arch;

typedef enum icc_target_feature {
#define TF(id, name, arch) ICC_TF_##id,
#include "ir/target_features.def"
#undef TF
    ICC_TF_COUNT
} icc_target_feature;

typedef struct icc_target_desc {
    icc_arch arch;
    char triple[64];           /* normalised, "x86_64-pc-linux-gnu" */
    char cpu[64];              /* as given ("haswell", "generic"), or the host's name */
    uint64_t features;         /* bit ICC_TF_x set when the target has it */
    bool native;               /* described from the machine running icc */
    /* CPU facts */
    int vector_bits;           /* natural vector width: 512 (AVX-512), 256 (AVX), 128 (SSE, NEON) */
    int vector_regs;           /* architectural vector registers: 32 (AVX-512, NEON), 16 (AVX2, SSE) */
    int64_t l1d_bytes, l2_bytes, l3_bytes;   /* per core (l3: shared); 0 when unknown */
    int cores;                 /* 0: unknown; the runtime decides the thread count */
    /* vdpbf16ps's f32 multiply-adds a second over the AVX-512 FMA's,
     * measured on the host for a native target with AVX512-BF16
     * (ir/target_probe.h); 0: not measured (a named CPU) */
    double bf16_dot_rate;
    /* CUDA facts (ICC_ARCH_CUDA) */
    int sm;                    /* compute capability x 10: 90 for sm_90 */
    int warp_size;
    int64_t smem_per_block;    /* bytes of shared memory a block may use */
    int tensor_core_gen;       /* 0 none, 1 Volta mma, 2 Ampere mma.sync, 3 Hopper wgmma */
} icc_target_desc;

/* Fills *t for a CPU target. triple must be an x86_64, aarch64 or arm64 one;
 * cpu may be NULL ("generic"); features is "+a,-b" (NULL: none). An
 * unknown CPU name is not an error here (LLVM decides that): it implies
 * only the architecture's baseline. Returns 0, or -1 with a message for
 * an unsupported architecture. */
int icc_target_desc_init(icc_target_desc *t, const char *triple, const char *cpu, const char *features,
                         icc_diag *d);

/* Fills *t for a CUDA target of compute capability sm (e.g. 90). */
int icc_target_desc_init_cuda(icc_target_desc *t, int sm, icc_diag *d);

static inline bool icc_target_has(const icc_target_desc *t, icc_target_feature f)
{
    return (t->features >> f) & 1;
}

/* The f32 lanes of one vector register (16 with AVX-512, 8 with AVX, 4
 * with SSE or NEON; 32 on CUDA: a warp). */
int icc_target_f32_lanes(const icc_target_desc *t);

/* The channel block of the layout pass's NCHWc tensors: one vector of
 * f32 lanes (4 for NEON, 8 for AVX2, 16 for AVX-512). */
int icc_target_layout_block(const icc_target_desc *t);

/* The feature's name ("avx512vnni"). */
const char *icc_target_feature_name(icc_target_feature f);

/* A one-line summary, "x86_64-pc-linux-gnu cpu=haswell vector=256x16
 * features=avx,avx2,fma,f16c", into buf (truncated to n). */
void icc_target_desc_str(const icc_target_desc *t, char *buf, size_t n);

#endif
