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
    if (t->arch == ICC_ARCH_CUDA)
        return ir_errorf(d, "no schedule for %s yet (the CUDA backend is not built)", t->cpu);
    s->kind = CG_SCHED_CPU;
    s->lanes = icc_target_f32_lanes(t);
    bool wide = t->vector_regs >= 32;
    s->tile_rows = 6;
    s->tile_vecs = wide ? 4 : 2;
    s->tile_kc = 128;
    s->tile_mc_blocks = 16;
    s->tile_nc_panels = 8;
    s->min_chunks = 8;
    /* ~5 µs of one core's work (docs/performance.md, "Threads"): the
     * pool's fork/join costs 1-3 µs when its workers are polling and
     * tens when they must be woken, so smaller pieces lose. */
    s->par_chunk_ops = 20000;
    s->dot_tiles = wide ? 4 : 2;
    s->dot_chunk = 16;
    s->conv_kc = 128;
    s->conv_unroll = 8;
    s->conv_vtile = 512;
    s->blocked_conv_kc = 4096;
    /* the widths the LLVM backend emits dpbusd in: zmm, or ymm with VL / AVX-VNNI */
    s->int8_quads = icc_target_has(t, ICC_TF_AVXVNNI) ||
                    (icc_target_has(t, ICC_TF_AVX512VNNI) && (t->vector_bits >= 512 || icc_target_has(t, ICC_TF_AVX512VL)));
    return 0;
}
