/* schedule.h - how kernels are computed on a target, chosen in one place.
 *
 * A lowering family (codegen/lower/) says what a kernel computes: its
 * index space, reductions, and fused prologue and epilogue. The schedule
 * says how: the vector width of the innermost loop, the register tile of
 * contractions (rows x vectors of accumulators, the reduction block, how
 * many row blocks and column panels one parallel chunk takes), how finely
 * work is split for threads, and the blocking of convolutions. Families
 * read these numbers and never name a register count or a thread count
 * themselves; building blocks (the register tile, codegen/lower/tile.c)
 * take them as parameters.
 *
 * cg_schedule_init is the one place that picks a schedule per target:
 * CPUs get the register-tile schedule sized by their vector registers;
 * a GPU schedule (grid/block/thread loops, shared-memory staging) will be
 * chosen there too.
 */
#ifndef ICC_CG_SCHEDULE_H
#define ICC_CG_SCHEDULE_H

#include "ir/target.h"

#include <stdbool.h>

typedef enum cg_schedule_kind {
    CG_SCHED_CPU,              /* PARALLEL outer loops over threads, VECTOR inner loops, register tiles */
    CG_SCHED_CUDA,             /* the CPU's made wide (par_min, min_chunks), GPU tiles and rows
                                  (gpu_gemm, gpu_rows), no CPU cache tricks */
} cg_schedule_kind;

typedef struct cg_schedule {
    cg_schedule_kind kind;
    const icc_target_desc *target;   /* borrowed */
    int lanes;                 /* f32 lanes of one vector register */
    /* the register tile (tile.c; MatMul, Gemm, Conv, ConvNCHWc) */
    int tile_rows;             /* rows of accumulators */
    int tile_vecs;             /* vectors per row: accumulators = rows x vecs */
    int tile_kc;               /* MatMul/Gemm reduction block: a packed kc x width B panel
                                  fills half of L1, or with 32 vector registers a quarter of
                                  L2 (from the target's caches; 128 to 512, 384 when wide) */
    int tile_kc_few;           /* ... with at most CG_FEW_ROW_BLOCKS row blocks (a packed B of
                                  M <= 16 or so): half of L1, so the row blocks after the first
                                  read the panel block from L1, not L2 (each 4-row block's k
                                  step reads 256 B of B for 16 FMAs) */
    int skinny_kc;             /* reduction block of skinny contractions (M <= 16), which read
                                  B's rows whole: kc rows of B are one contiguous stretch */
    int skinny_fma_kc;         /* ... of those with CG_GEMV_M rows or more (bound by the FMAs) */
    int skinny_split_m;        /* skinny contractions with at least this many rows split their
                                  columns between parallel chunks (fewer rows: one chunk, unless
                                  B is larger than the last-level cache) */
    int skinny_chunk_cols;     /* ... into pieces of at least this many columns of every B row */
    int skinny_dram_cols;      /* ... or this many when B is larger than the last-level cache */
    int skinny_chunks;         /* ... and at most this many chunks per batch item */
    int64_t llc_bytes;         /* the target's last-level cache (shared) */
    int tile_mc_blocks;        /* row blocks of a parallel chunk: its A block stays in L2 */
    int gemm_mc_blocks;        /* the same for MatMul/Gemm, whose B panel is packed (from the
                                  target's L2 and tile_kc) */
    int gemm_apack_mc_blocks;  /* the same when A is packed (tile.h pack_a): the packed block
                                  (blocks x tile_kc x tile_rows) is thread scratch, half of L2
                                  and under the 256 KB that thread scratch may take */
    int tile_nc_panels;        /* column panels of a parallel chunk */
    int min_chunks;            /* at least this many parallel chunks, so threads balance */
    /* The positions a kernel's parallel loop should reach: leading loops
     * of an output nest are merged into it until it has this many (the
     * rest stay serial inside). 64 on a CPU, where a few threads share
     * the positions; 2^20 for CUDA, where every position is a GPU thread
     * (the kernels' parallel loop is a grid-stride loop). */
    int64_t par_min;
    /* The least work (codegen/cost.h ops) worth a parallel chunk: a
     * kernel runs on more threads only when each gets this much, so a
     * small kernel does not pay the pool's fork/join for nothing. */
    int64_t par_chunk_ops;
    /* ... or this much for a kernel that reads an intermediate of at
     * least par_shared_bytes: the kernel before it wrote that value on
     * all the threads, so run on one thread it reads the other cores'
     * shares from their caches, which costs more than the fork/join
     * (program.c, add_kernel) */
    int64_t par_shared_ops, par_shared_bytes;
    /* transposed-B contractions: dot-product tiles along k */
    int dot_tiles;             /* dot x dot accumulators */
    /* the fused 1x1 + depthwise conv (conv_pwdw.c): accumulators of its
     * 1x1 tile (pixels x channel blocks) and of its depthwise tile */
    int pwdw_acc, pwdw_dw_acc;
    int dot_chunk;             /* tiles of rows (and of columns) in a parallel chunk */
    /* convolutions (conv.c, conv_blocked.c) */
    int conv_kc;               /* implicit-GEMM reduction block */
    int conv_unroll;           /* output channels per step of the vector-loop schedule */
    int conv_vtile;            /* vector-loop schedule: plane positions per tile */
    /* INT8 contractions (codegen/lower/qgemm.c) */
    bool int8_quads;           /* MatMulInteger steps 4 k by vpdpbusd (VNNI), else 2 by vpmaddwd */
    bool amx_int8;             /* ... and with AMX-INT8, the quad kernels' blocks on tiles (tdpbusd) */
    /* bf16 contractions (codegen/lower/matmul.c, lower_pairs) */
    bool bf16_pairs;           /* MatMul/Gemm of two bf16 operands steps 2 k by vdpbf16ps */
    bool amx_bf16;             /* ... and with AMX-BF16, its blocks of 32 x 32 on four tiles (lower_amx) */
    /* register transposes (kir_intrinsics.def transpose_f32): f32 blocks of
     * lanes x lanes, in the attention kernel's keys and Transposes that
     * swap their last two merged dims (movement.c) */
    bool f32_transpose;
    /* MatMul's plain loop (the shapes the tile does not take: symbolic N
     * or K) runs its output columns as a VECTOR loop where B's rows are
     * contiguous (codegen/lower/matmul.c, lower_plain); a GPU schedule
     * keeps one element per thread */
    bool plain_vector_cols;
    /* contractions on the register tile fetch the next B panel into L2
     * (kir_intrinsics.def prefetch_l2) while the current one's row blocks
     * run from cache: a weight streamed from L3 or DRAM is then read
     * while the FMAs run instead of only by each panel's first row block */
    bool prefetch_b;
    /* CUDA: float MatMul, Gemm and Conv as shared-memory tiles, one thread
     * block per output tile (codegen/lower/gpu_tile.c) */
    bool gpu_gemm;
    bool gpu_mma;              /* ... with tensor cores (mma.sync, sm_80 on) for f16/bf16 operands */
    bool gpu_rows;             /* CUDA: Softmax and the layer norms a thread block per row
                                  (reduce.c, red_outer_rows) */
    bool transpose_lane_inner; /* a Transpose moving the input's short last dim outward keeps
                                  it the innermost loop, so strided reads share cache lines
                                  (movement.c; not for CUDA: a thread per output element) */
    int blocked_conv_kc;       /* ConvNCHWc reduction block (long: partial sums through Y cost more
                                  than a weight panel of kc x block in L2, measured) */
} cg_schedule;

enum { CG_SKINNY_M = 16 };
/* Row blocks of the tile few enough for tile_kc_few. */
enum { CG_FEW_ROW_BLOCKS = 4 };
/* The rows of the register tile (cg_schedule_init's tile_rows). */
enum { CG_TILE_ROWS = 6 };

/* The vectors of one row of the register tile on target t: 4 with 32
 * vector registers (AVX-512, NEON: 24 accumulators, 4 of B, 1 broadcast),
 * 2 with 16 (AVX2, SSE: 12, 2, 1). cg_schedule_init's tile_vecs, and with
 * the f32 lanes the column panel width (f32) that the pack-b pass packs
 * constant B in (passes/pack_b.c reads it here, header only). */
static inline int cg_schedule_tile_vecs(const icc_target_desc *t) { return t->vector_regs >= 32 ? 4 : 2; }
static inline int cg_schedule_panel_cols(const icc_target_desc *t)
{
    return icc_target_f32_lanes(t) * cg_schedule_tile_vecs(t);
}
/* GEMV-like products: constant M below CG_GEMV_M rows, few enough for
 * one register tile to hold all of them. A constant B is packed for them
 * (passes/pack_b.c) in panels of cg_schedule_gemv_vecs(t, M) vectors, so
 * that each panel is one contiguous stretch of the weights: the kernel
 * runs the whole reduction per panel in registers (every element of B
 * read once, in order) and threads take chunks of whole panels. The
 * panel is as wide as 8 accumulators per row (two FMA ports x a latency
 * of 4: a single row is latency-bound with fewer) within the tile's
 * budget of tile_rows x tile_vecs registers (header only, as above). */
enum { CG_GEMV_M = 8 };
static inline int cg_schedule_gemv_vecs(const icc_target_desc *t, int64_t m)
{
    int budget = CG_TILE_ROWS * cg_schedule_tile_vecs(t), v = 1;
    while (v * 2 <= 8 && v * 2 * m <= budget)
        v *= 2;
    return v;
}
static inline int cg_schedule_gemv_cols(const icc_target_desc *t, int64_t m)
{
    return icc_target_f32_lanes(t) * cg_schedule_gemv_vecs(t, m);
}
/* t's L2 per core, or 256 KiB where the description does not know it
 * (the cache blocking of cg_schedule_init and cg_schedule_gemm_apack, the
 * conv weights fuse widens once a run; header only, as above). */
static inline int64_t cg_schedule_l2_bytes(const icc_target_desc *t)
{
    return t->l2_bytes > 0 ? t->l2_bytes : 256 << 10;
}
/* Whether the pack-b pass stores a MatMulInteger's constant i8 B in
 * quads of k (packed_k = 4) for t: VNNI on 512-bit vectors with 32
 * registers, where qgemm.c's quad panels are the 64 columns that
 * cg_schedule_panel_cols gives (header only, as above). */
static inline bool cg_schedule_int8_packed_quads(const icc_target_desc *t)
{
    return t->arch == ICC_ARCH_X86_64 && icc_target_has(t, ICC_TF_AVX512VNNI) && t->vector_bits >= 512 &&
           t->vector_regs >= 32 && icc_target_f32_lanes(t) == 16;
}
/* Whether t has the AMX-BF16 tiles (header only, as above). */
static inline bool cg_target_amx_bf16(const icc_target_desc *t)
{
    return icc_target_has(t, ICC_TF_AMX_TILE) && icc_target_has(t, ICC_TF_AMX_BF16);
}
/* Whether t multiplies bf16 pairs into f32 (AVX512-BF16 vdpbf16ps):
 * cg_schedule_init's bf16_pairs, and whether the pack-b pass packs a
 * bf16 contraction's weight in pairs of k (header only, as above).
 * Not where the host measured the instruction at under
 * CG_BF16_DOT_MIN_RATE of the FMA's multiply-adds a second (Intel cores
 * issue one every two cycles, half of two FMAs; AMD Zen 4 twice as many
 * as its FMA): there the f32 kernels widening the bf16 operands at their
 * loads run faster (docs/precision.md), unless AMX-BF16 tiles take the
 * blocks, the pair kernel only their edges. */
#define CG_BF16_DOT_MIN_RATE 0.75
static inline bool cg_schedule_bf16_pairs(const icc_target_desc *t)
{
    return t->arch == ICC_ARCH_X86_64 && icc_target_has(t, ICC_TF_AVX512BF16) &&
           (t->vector_bits >= 512 || icc_target_has(t, ICC_TF_AVX512VL)) &&
           (t->bf16_dot_rate == 0 || t->bf16_dot_rate >= CG_BF16_DOT_MIN_RATE || cg_target_amx_bf16(t));
}
/* Whether t also runs those contractions' blocks on AMX-BF16 tiles:
 * cg_schedule_init's amx_bf16, and whether the layout pass blocks a bf16
 * model's convolutions by 32 for them (header only, as above). */
static inline bool cg_schedule_amx_bf16(const icc_target_desc *t)
{
    return cg_schedule_bf16_pairs(t) && cg_target_amx_bf16(t);
}
/* Whether t's contractions multiply bf16 operands as bf16, so that bf16
 * mode rounds their activations too (passes/precision.c): the pair
 * kernel or AMX (cg_schedule_bf16_pairs), and CUDA, one graph for every
 * GPU, whose tensor cores read bf16 from sm_80 on. Elsewhere both
 * operands are widened to f32 FMAs, where a rounded activation costs a
 * Cast, a widening at every conv broadcast and accuracy (header only, as
 * above). */
static inline bool cg_schedule_bf16_products(const icc_target_desc *t)
{
    return t->arch == ICC_ARCH_CUDA || cg_schedule_bf16_pairs(t);
}
/* Whether the passes lay data out for t's CPU kernels: the layout pass's
 * NCHWc blocks (unless its `block` option asks) and the pack-b pass's B
 * panels. Not for CUDA, whose GPU tiles (codegen/lower/gpu_tile.c) read
 * NCHW convolutions and B in place (header only, as above). */
static inline bool cg_schedule_cpu_layouts(const icc_target_desc *t)
{
    return t->arch != ICC_ARCH_CUDA;
}
/* Whether the attention pass fuses attention into one Attention kernel
 * for t: its kernel is a CPU schedule (a thread per head and block of
 * rows: 264 GPU threads for a BERT layer), so CUDA keeps the ops, whose
 * products run on its GPU tiles (header only, as above). */
static inline bool cg_schedule_fuse_attention(const icc_target_desc *t)
{
    return t->arch != ICC_ARCH_CUDA;
}
/* Whether the fuse pass leaves the Cast widening a blocked convolution's
 * bf16/f16 weight (f32_bytes once widened) a kernel of its own, which
 * writes the f32 weight once a run for the convolution to read as at
 * fp32, instead of joining the convolution, whose kernel would widen each
 * weight vector at every load (two more instructions beside the FMAs
 * that vector feeds: ConvNCHWc at 83% of the FMA peak against 99% at
 * fp32). Where the target has no kernel reading the weight narrow (f16;
 * bf16 without the pair kernel), the f32 copy stays in L2 (a quarter of
 * it) and the convolution has 64 output positions or more (its weight
 * is read that often, so the copy costs little beside it). A small CNN
 * at --precision=bf16 on a Xeon 6 VM, 1 thread: 3.36 -> 2.96 ms (fp32
 * 2.86). Header only, as above. */
static inline bool cg_schedule_widen_conv_weight(const icc_target_desc *t, bool bf16, int64_t f32_bytes,
                                                 int64_t positions)
{
    return t->arch != ICC_ARCH_CUDA && !(bf16 && cg_schedule_bf16_pairs(t)) &&
           f32_bytes <= cg_schedule_l2_bytes(t) / 4 && positions >= 64;
}
/* The AMX kernels' block of a bf16 product: 32 rows x 32 columns, four
 * tiles of 16 x 16 f32 sums, k 32 a step (codegen/lower/matmul.c). */
enum { CG_AMX_NB = 32 };

/* The register tile of an M-row contraction: *rows x *vecs accumulators.
 * Skinny shapes (1 <= M <= CG_SKINNY_M, memory-bound on B) get the tile
 * of the throughput model in schedule.c, so that no row is computed
 * twice and a step has enough independent FMAs to hide their latency;
 * other M (and m = 0: unknown) get tile_rows x tile_vecs. n_vecs: the
 * vectors N spans (0: unknown), which a skinny tile need not exceed;
 * b_bytes: one matrix of B (0: unknown), which decides ties (schedule.c). */
void cg_schedule_gemm_tile(const cg_schedule *s, int64_t m, int64_t n_vecs, int64_t b_bytes, int *rows, int *vecs);

/* The rows of the register tile over a packed B (pack-b's panels, which
 * fix its vectors) for m rows from CG_GEMV_M to CG_SKINNY_M: of
 * tile_rows and the two below it, the one that computes the fewest rows
 * past m (ties to the larger); tile_rows for other m. 16 rows as 4
 * blocks of 4 instead of 3 of 6 (Zen 4, 16x768x768 over a constant B:
 * 0.190 -> 0.166 ms on 1 thread, 0.104 -> 0.090 on 2), 8 as 2 of 4
 * instead of 2 of 6 (0.128 -> 0.084). */
int cg_schedule_packed_rows(const cg_schedule *s, int64_t m);

/* Of tile_rows and the two below it, the rows of a register tile that
 * compute the fewest rows past m (ties to the larger); tile_rows for m
 * < 1. cg_schedule_packed_rows takes it for skinny m; the recurrent
 * kernels' projection tiles for their steps. */
int cg_schedule_fewest_rows(const cg_schedule *s, int64_t m);

/* The column chunks of a skinny (streamed) contraction of m rows, n
 * columns and a B of b_bytes (one batch item): 1 below skinny_split_m
 * rows (memory-bound on B, whose rows a split cuts into pieces) unless B
 * is larger than the last-level cache (from DRAM, where two cores read
 * twice as fast), else the
 * largest power of two up to skinny_chunks that leaves each chunk
 * skinny_chunk_cols columns (skinny_dram_cols for a B larger than the
 * last-level cache). */
int64_t cg_schedule_skinny_chunks(const cg_schedule *s, int64_t m, int64_t n, int64_t b_bytes);

/* The parallel chunks of a register tile (codegen/lower/tile.c) over nb
 * row blocks (of `rows` rows) and nq column panels (of `width` columns)
 * of nbat matrices: *nrc row chunks (at least enough for chunks of at
 * most mc_blocks blocks) by *ncc column chunks (from one when A is
 * packed, pack_a). Each row chunk reads all of B's panels, so a B the
 * kernel packs itself (b_copied) is copied *nrc times (the pack-b pass
 * packs a large one once instead), and each column chunk all of A's
 * rows. Of the splits that reach min_chunks in a count 4 threads share
 * evenly, the one reading least, nrc x B's columns + ncc x A's rows (16
 * x 768 x 768 with B packed: 2 x 4 chunks read B twice from L3, 1 x 12
 * once); with b_copied, one row chunk where half of min_chunks or more
 * column chunks of two panels or more remain. */
void cg_schedule_tile_chunks(const cg_schedule *s, int64_t nbat, int64_t nb, int64_t nq, int64_t mc_blocks,
                             bool pack_a, bool b_copied, int rows, int width, int64_t *nrc, int64_t *ncc);

/* The reduction block *kc and the row blocks per parallel chunk *mcb of
 * a GEMM of nb row blocks (of `rows` rows, esize bytes an element) whose
 * A block the tile packs (tile.h pack_a), beside a kc x width B panel it
 * copies per panel when `bpanel` (B computed at run time): tile_kc and
 * the blocks that fit gemm_apack_mc_blocks' budget (f32 with a bpanel:
 * that count), unless all nb blocks
 * fit in one row chunk at a shorter block of at least 256 steps: then
 * that block and nb, so each of B's panels is read once, not once per
 * row chunk (128 x 3072 x 3072 with B an input, 22 blocks of 6 rows:
 * 2 row chunks at 384 read its 36 MB twice; 1 at 288). */
void cg_schedule_gemm_apack(const cg_schedule *s, int64_t nb, int rows, int width, int esize, bool bpanel, int *kc,
                            int64_t *mcb);

/* Picks the schedule for target t (borrowed by *s: it must outlive s).
 * Returns 0, or -1 with a message for a target with no schedule yet. */
int cg_schedule_init(cg_schedule *s, const icc_target_desc *t, icc_diag *d);

/* The fused 1x1 + depthwise conv (ConvPwDwNCHWc: passes/pwdw.c,
 * codegen/lower/conv_pwdw.c) keeps a strip of the 1x1 conv's rows, V
 * channel blocks wide and zero-padded, in thread scratch of at most this
 * many bytes (a kernel's thread scratch may take 256 KB): with the strip
 * of the input it reads, well inside L2. */
#define CG_PWDW_SCRATCH_BYTES ((int64_t)224 << 10)

/* That kernel's plan for MB channel blocks of ML lanes over OH output
 * rows of a depthwise window KH high at stride s, Wp padded columns:
 * *V blocks per trip (their 1x1 tile shares each broadcast of the input
 * between V vectors: with one, the broadcasts alone kept the FMAs at half
 * rate) and *RS output rows per strip, a strip reading (RS - 1) s + KH
 * rows, the last KH - s of them again in the next strip. The most blocks
 * (4, 3, 2 dividing MB, else 1) whose strips recompute at most a quarter
 * of their rows, the strips as even as the most that fit allow. False
 * when not even one block's window rows fit. */
static inline bool cg_pwdw_plan(int64_t MB, int64_t ML, int64_t OH, int64_t Wp, int64_t KH, int64_t s, int *V,
                                int64_t *RS)
{
    static const int vs[4] = {4, 3, 2, 1};
    if (OH < 1 || s < 1 || KH < 1 || Wp < 1 || ML < 1 || MB < 1)
        return false;
    for (int i = 0; i < 4; i++) {
        int v = vs[i];
        if (MB % v)
            continue;
        int64_t rows = CG_PWDW_SCRATCH_BYTES / (v * Wp * ML * 4);
        if (rows < KH)
            continue;
        int64_t most = (rows - KH) / s + 1;
        most = most < OH ? most : OH;
        int64_t strips = (OH + most - 1) / most, rs = (OH + strips - 1) / strips;
        if (v > 1 && rs < OH && 4 * (KH - s) > rs * s)
            continue;
        *V = v, *RS = rs;
        return true;
    }
    return false;
}

#endif
