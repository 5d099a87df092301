/* schedule.c - the schedule per target (schedule.h). The CPU numbers were
 * measured on AVX-512 machines (docs/performance.md): a 6 x 4 tile of zmm
 * accumulators leaves 4 registers for B and 1 for A's broadcast out of
 * 32; with 16 registers (AVX2, SSE) the tile is 6 x 2. A NEON core has
 * 32 registers of 4 lanes, so it gets the wide tile too.
 */
#include "codegen/schedule.h"

#include <string.h>

int cg_schedule_init(cg_schedule *s, const icc_target_desc *t, icc_diag *d)
{
    memset(s, 0, sizeof *s);
    s->target = t;
    (void)d;
    /* CUDA: GPU tiles for the contractions and thread blocks for rows
     * (gpu_gemm, gpu_mma, gpu_rows below); the other kernels take the CPU
     * schedule (with 128-bit "vectors"), whose independent PARALLEL
     * iterations the CUDA backend spreads over the GPU's threads, made as
     * wide as the kernels allow (min_chunks, par_min below;
     * docs/backends.md) */
    bool cuda = t->arch == ICC_ARCH_CUDA;
    s->kind = cuda ? CG_SCHED_CUDA : CG_SCHED_CPU;
    s->lanes = cuda ? 4 : icc_target_f32_lanes(t);
    bool wide = t->vector_regs >= 32;
    s->tile_rows = CG_TILE_ROWS;
    s->tile_vecs = cg_schedule_tile_vecs(t);
    /* MatMul/Gemm cache blocks from the target's caches: a packed kc x
     * width B panel fills half of L1, a chunk's A block (gemm_mc_blocks
     * row blocks x kc) three quarters of L2. Zen 3 (32 KB L1, 256 KB
     * described L2): kc 256, 32 blocks of 6 rows; 1024^3 went from 35 to
     * 45 GFLOP/s on 1 thread against kc 128 x 16 blocks. With 32 vector
     * registers the tile does 24 FMAs per 4 vectors of B, little enough
     * that the panel can stream from L2 (a quarter of it): a longer kc
     * stores and reloads the 24 sums less often, up to 384 (512 leaves
     * room for only 8 blocks of packed A beside a bpanel, below). Zen 4
     * (32 KB L1, 1 MB L2: 128 from the L1 rule, 384 now), min of 1
     * thread / 2 threads: 1024^3 with B constant 20.3-20.5 -> 19.3-19.8
     * ms / 10.4-10.6 -> 9.7-9.9 (95% of the 2-core FMA peak), B an input
     * 21.1 -> 19.9-20.1 / -, 128x768x768 1.377-1.380 -> 1.350-1.353 /
     * 0.70-0.71 -> 0.68, 128x768x3072 5.68-6.21 -> 5.45-5.53 / 2.95 ->
     * 2.73-2.85, 128x3072x768 5.62-5.80 -> 5.48-5.62; 512 was the same
     * on 1 thread and slower on 2 (1024^3 10.8). */
    int64_t l1 = t->l1d_bytes > 0 ? t->l1d_bytes : 32 << 10, l2 = cg_schedule_l2_bytes(t);
    int64_t width = (int64_t)s->lanes * s->tile_vecs * 4;   /* a panel row's bytes */
    int64_t kc = (wide ? l2 / 4 : l1 / 2) / width / 64 * 64, kc_max = wide ? 384 : 512;
    s->tile_kc = kc < 128 ? 128 : kc > kc_max ? (int)kc_max : (int)kc;
    /* linear 16x768x768 (4 blocks of 4 rows), 1 thread, Xeon with 48 KB
     * L1: kc 384 0.169 ms, 128 0.155, 96 0.158, 64 0.154 (in turns) */
    int64_t kf = l1 / 2 / width / 32 * 32;
    s->tile_kc_few = kf < 64 ? 64 : kf > s->tile_kc ? s->tile_kc : (int)kf;
    int64_t mcb = l2 * 3 / 4 / ((int64_t)s->tile_kc * 4 * 6);
    s->gemm_mc_blocks = mcb < 16 ? 16 : mcb > 64 ? 64 : (int)mcb;
    /* packed A: half of L2, and under 224 KB less the bpanel that may sit
     * beside it (B computed at run time: kc x the tile's width), since
     * thread scratch stops at 256 KB (cg_schedule_gemm_apack's budget, f32):
     * Zen 3, kc 256: 32 blocks; Zen 4, kc 384: 14 */
    int kc_ap;
    int64_t apb;
    cg_schedule_gemm_apack(s, 0, s->tile_rows, s->lanes * s->tile_vecs, 4, true, &kc_ap, &apb);
    s->gemm_apack_mc_blocks = apb < 4 ? 4 : (int)apb;
    /* 1x3072x3072 on Zen 3, 1 thread: 6.5 GFLOP/s at 8 (B's 8 rows are
     * 96 KB read front to back), 3.5 at 16-32, 3.0 at 128 */
    s->skinny_kc = 8;
    /* from CG_GEMV_M rows the FMAs bind, not B's stream: 8 rows of K per
     * block stored and reloaded the partial sums of every output vector
     * each 8 steps (Zen 4, 16x768x768 with B an input: 0.297 -> 0.145 ms
     * on 2 threads at 32, 0.247 -> 0.225 on 1; 16x3072x3072 8.1 -> 7.8
     * and 5.2 -> 4.7); 128 stores them a quarter as often again, its
     * packed B piece (128 x 32) a 16 KB half of L1 (Zen 4, p50 of 3
     * runs, 1 thread / 2 threads: 8x768x768 0.087 -> 0.084 / 0.049-0.058
     * -> 0.042-0.043 ms; 12x1024x1024 0.359-0.361 -> 0.332-0.398 (min
     * 0.344-0.352 -> 0.321) / 0.191-0.307 -> 0.187-0.193; 16x768x768
     * 0.231-0.265 -> 0.215-0.223 / 0.119-0.175 -> 0.117-0.126) */
    s->skinny_fma_kc = 128;
    /* A skinny contraction does 2M FLOP per 4-byte element of B: below
     * M = 8 it streams B, split by columns only when B comes from DRAM,
     * where each core adds its own bandwidth (Zen 4, 1x3072x3072, 2
     * chunks of 1536 columns: 2.7 -> 1.15 ms on 2 threads, 1 thread the
     * same within the noise; a B in cache is cut into short row pieces
     * for little gain: 1x768x768 0.036 -> 0.042 ms on 1 thread, and on
     * Zen 3 1x3072x3072 went 3.0 -> 8.4 ms with 1536-column pieces read
     * through L3); from M = 8 (4 FLOP/B, near the ridge of the FMA
     * peak over one core's DRAM bandwidth) it is bound by the FMAs, and
     * column chunks of whole panels let threads share it (16x768x768: at
     * the FMA peak on 1 thread with or without the split). Pieces of a
     * row stay long (a 4 KB page) when B is larger than the last-level
     * cache, so from DRAM. */
    s->skinny_split_m = CG_GEMV_M;
    s->skinny_chunk_cols = 256;
    s->skinny_dram_cols = 1024;
    s->skinny_chunks = 8;
    /* at most 32 MB: a VM reports its host's L3 (256 MB here, where
     * lscpu shows 32 MB), and other cores share it anyway */
    s->llc_bytes = t->l3_bytes > 0 && t->l3_bytes < 32 << 20 ? t->l3_bytes : 32 << 20;
    s->tile_mc_blocks = 16;
    s->tile_nc_panels = 8;
    /* CUDA: every chunk (a contraction's row blocks x column panels) a
     * GPU thread, as many as the product has */
    s->min_chunks = cuda ? 1 << 20 : 8;
    s->par_min = cuda ? 1 << 20 : 64;
    /* ~5 µs of one core's work (docs/performance.md, "Threads"): the
     * pool's fork/join costs 1-3 µs when its workers are polling and
     * tens when they must be woken, so smaller pieces lose. */
    s->par_chunk_ops = 20000;
    /* 2 threads on a Xeon 6 VM: a 51 KB reorder after a parallel conv
     * took 3.4 us on 1 thread and 20 us run serially on 2 (the other
     * core's half of its input, dirty in that core's L2, came over one
     * line at a time); at 500 ops ShuffleNet 2.80 -> 2.15 ms, DBNet 0.94,
     * YOLO 0.97 in turns, where 500 for every kernel made the one-kernel
     * Add chain 5x slower (its input is the caller's) */
    s->par_shared_ops = 500;
    s->par_shared_bytes = 32 << 10;
    s->dot_tiles = wide ? 4 : 2;
    /* 28 and 14 of 32 registers, 12 and 6 of 16 (the rest: W's vectors
     * and the loads) */
    s->pwdw_acc = wide ? 28 : 12;
    s->pwdw_dw_acc = wide ? 14 : 6;
    s->dot_chunk = 16;
    s->conv_kc = 128;
    s->conv_unroll = 8;
    s->conv_vtile = 512;
    s->blocked_conv_kc = 4096;
    /* the widths the LLVM backend emits dpbusd in: zmm, or ymm with VL / AVX-VNNI */
    s->int8_quads = icc_target_has(t, ICC_TF_AVXVNNI) ||
                    (icc_target_has(t, ICC_TF_AVX512VNNI) && (t->vector_bits >= 512 || icc_target_has(t, ICC_TF_AVX512VL)));
    s->bf16_pairs = !cuda && cg_schedule_bf16_pairs(t);
    s->amx_bf16 = s->bf16_pairs && cg_schedule_amx_bf16(t);
    s->amx_int8 = !cuda && s->int8_quads && icc_target_has(t, ICC_TF_AMX_TILE) && icc_target_has(t, ICC_TF_AMX_INT8);
    s->prefetch_b = !cuda;
    s->gpu_gemm = cuda;
    s->gpu_mma = cuda && t->tensor_core_gen >= 2;
    s->gpu_rows = cuda;
    s->transpose_lane_inner = !cuda;
    s->plain_vector_cols = !cuda;
    s->f32_transpose = (icc_target_has(t, ICC_TF_AVX2) || icc_target_has(t, ICC_TF_AVX512F)) && s->lanes >= 8 &&
                       (s->lanes & (s->lanes - 1)) == 0;
    return 0;
}

/* Per k step a tile of R rows x V vectors issues R broadcasts of A, V
 * loads of B and R*V FMAs: on two FMA and two load ports that takes
 * max(R*V, R + V) / 2 cycles, and at least the FMA latency (4) unless
 * R*V >= 8 FMAs are in flight. The tile runs ceil(M/R) times per panel
 * of V vectors, so the best has the fewest cycles per output vector. V
 * is a power of two (the emitter widens those), at most 4 x tile_vecs
 * (8 accumulators of ymm: M = 1 is latency-bound with 2). Ties go to
 * more rows, which read B fewer times, when B fits in the last-level
 * cache (Zen 4, B an input: 8x768x768 as one block of 8 rows x 2 vectors
 * 0.131 -> 0.087 ms on 1 thread, 0.071 -> 0.048 on 2, against 4 blocks
 * of 2 x 8; 16 rows the same); from DRAM, to wide panels, whose rows of
 * B are longer runs (8x3072x3072: 5.4 ms as 2 x 8, 10.3 as 8 x 2). */
void cg_schedule_gemm_tile(const cg_schedule *s, int64_t m, int64_t n_vecs, int64_t b_bytes, int *rows, int *vecs)
{
    bool cached = b_bytes > 0 && b_bytes <= s->llc_bytes;
    *rows = s->tile_rows;
    *vecs = s->tile_vecs;
    if (m < 1 || m > CG_SKINNY_M)
        return;
    int budget = s->tile_rows * s->tile_vecs;
    double best = 0;
    for (int r = 1; r <= 8 && r <= budget; r++) {
        int v = 1;
        while (v * 2 <= budget / r && v * 2 <= 4 * s->tile_vecs && (n_vecs <= 0 || v < n_vecs))
            v *= 2;
        double fma = r * v, ld = r + v, cyc = (fma > ld ? fma : ld) / 2;
        if (cyc < 4)
            cyc = 4;
        double cost = (double)((m + r - 1) / r) * cyc / v;
        if (r == 1 || cost < best - 1e-9 || (cached && cost < best + 1e-9)) {
            best = cost;
            *rows = r;
            *vecs = v;
        }
    }
}

int64_t cg_schedule_skinny_chunks(const cg_schedule *s, int64_t m, int64_t n, int64_t b_bytes)
{
    bool dram = b_bytes > s->llc_bytes;
    int64_t sc = 1, cols = dram ? s->skinny_dram_cols : s->skinny_chunk_cols;
    if ((m < s->skinny_split_m && !dram) || cols < 1)
        return 1;
    while (sc * 2 <= s->skinny_chunks && n / (sc * 2) >= cols)
        sc *= 2;
    return sc;
}

/* Whether n items in chunks of ceil(n / c) make exactly c chunks, a split
 * the tile keeps as it is (10 in chunks of 3: 4, so c = 4 does; 10 in
 * chunks of 2: 5, so c = 6 does not). */
static bool splits_evenly(int64_t n, int64_t c) { return (n + (n + c - 1) / c - 1) / ((n + c - 1) / c) == c; }

void cg_schedule_tile_chunks(const cg_schedule *s, int64_t nbat, int64_t nb, int64_t nq, int64_t mc_blocks,
                             bool pack_a, bool b_copied, int rows, int width, int64_t *nrc, int64_t *ncc)
{
    int64_t r0 = (nb + mc_blocks - 1) / mc_blocks;
    /* with A packed, a chunk's panels share its copy of A (each panel is
     * read from L1 by the chunk's row blocks and then left, so more of
     * them cost nothing): as few column chunks as the threads need */
    int64_t c0 = pack_a ? 1 : (nq + s->tile_nc_panels - 1) / s->tile_nc_panels;
    /* Of the splits that the tile keeps as they are (nb blocks in r
     * chunks of ceil(nb / r): r itself), the best reaches min_chunks,
     * in a count that 4 threads share evenly (or many), reading the
     * least: r times B's panels and c times A's rows; else the most
     * chunks there are. */
    int64_t br = r0, bc = c0, btot = 0;
    double bcost = 0;
    int bclass = -1;
    for (int64_t r = r0; r <= nb && r <= r0 + 64; r++) {
        if (!splits_evenly(nb, r))
            continue;
        for (int64_t c = c0; c <= nq && c <= c0 + 64; c++) {
            if (!splits_evenly(nq, c))
                continue;
            int64_t tot = nbat * r * c;
            int cls = tot < s->min_chunks ? 0 : tot % 4 == 0 || tot >= 4 * s->min_chunks ? 2 : 1;
            double cost = (double)r * (double)nq * width + (double)c * (double)nb * rows;
            bool better = cls != bclass ? cls > bclass
                        : cls == 0      ? tot > btot
                        : cost != bcost ? cost < bcost : tot < btot;
            if (better) {
                br = r, bc = c, btot = tot, bcost = cost, bclass = cls;
            }
        }
    }
    /* B copied by every row chunk (no weight packed ahead): one row chunk
     * copies it once, worth fewer chunks (at least half of min_chunks, a
     * multiple of 4 first, each of two panels or more so that A's packed
     * rows serve several). 128 x 768 x 768 with B an input, 2 x 4 -> 1 x 4
     * chunks: 0.935 at 1 thread, 0.99 at 2 in turns, and run after run
     * (bench/ab.py, best p50) 1.169 -> 1.079 ms at 1 thread and 0.621 ->
     * 0.537 at 2, where each thread's half of B stays in its own L2; 96 x
     * 768 x 768 0.89 / 0.95 in turns. */
    if (b_copied && br > 1 && nbat == 1 && r0 == 1) {
        int64_t c1 = 0;
        for (int64_t c = s->min_chunks / 2; c < s->min_chunks && c * 2 <= nq; c++)
            if (splits_evenly(nq, c) && (c1 == 0 || (c % 4 == 0 && c1 % 4 != 0)))
                c1 = c;
        if (c1) {
            br = 1;
            bc = c1;
        }
    }
    *nrc = br;
    *ncc = bc;
}

void cg_schedule_gemm_apack(const cg_schedule *s, int64_t nb, int rows, int width, int esize, bool bpanel, int *kc,
                            int64_t *mcb)
{
    /* the packed A at most half of L2, A and the panel under 224 KB
     * (thread scratch stops at 256 KB; cg_schedule_init takes
     * gemm_apack_mc_blocks from here, f32 with a bpanel); esize bytes an
     * element (f64 and i64 twice f32's: their apanel and bpanel at f32's
     * counts took 300 KB and more) */
    int64_t l2 = cg_schedule_l2_bytes(s->target);
    int64_t scr = 224 << 10, pb = bpanel ? (int64_t)width * esize : 0, ab = (int64_t)rows * esize;
    int64_t a = scr - pb * s->tile_kc;
    a = l2 / 2 < a ? l2 / 2 : a;
    *kc = s->tile_kc;
    *mcb = a / (s->tile_kc * ab);
    *mcb = *mcb < 1 ? 1 : *mcb;
    if (nb <= *mcb || nb < 1 || rows < 1)
        return;
    /* the longest block (a multiple of 32) at which all nb blocks and
     * the panel fit */
    int64_t k1 = scr / (nb * ab + pb), k2 = l2 / 2 / (nb * ab);
    k1 = (k1 < k2 ? k1 : k2) / 32 * 32;
    if (k1 >= 256 && k1 < s->tile_kc) {
        *kc = (int)k1;
        *mcb = nb;
    }
}

int cg_schedule_fewest_rows(const cg_schedule *s, int64_t m)
{
    int best = s->tile_rows;
    if (m < 1)
        return best;
    for (int r = s->tile_rows - 1; r >= s->tile_rows - 2 && r >= 1; r--)
        if ((m + r - 1) / r * r < (m + best - 1) / best * best)
            best = r;
    return best;
}

int cg_schedule_packed_rows(const cg_schedule *s, int64_t m)
{
    return m > CG_SKINNY_M ? s->tile_rows : cg_schedule_fewest_rows(s, m);
}
