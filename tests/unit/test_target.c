/* test_target.c - target descriptions (ir/target.c), the schedule picked
 * for them (codegen/schedule.c), and the layout pass's block from the
 * target it is given. */
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "codegen/llvm/target.h"
#include "codegen/schedule.h"
#include "ir/ops.h"
#include "ir/text.h"
#include "passes/pass.h"

static icc_target_desc desc(const char *triple, const char *cpu, const char *features)
{
    icc_target_desc t;
    icc_diag d = {{0}};
    ck_assert_msg(icc_target_desc_init(&t, triple, cpu, features, &d) == 0, "%s", d.msg);
    return t;
}

START_TEST(x86_cpus_imply_their_features)
{
    icc_target_desc t = desc("x86_64-pc-linux-gnu", "haswell", NULL);
    ck_assert_int_eq(t.arch, ICC_ARCH_X86_64);
    ck_assert_int_eq(t.vector_bits, 256);
    ck_assert_int_eq(t.vector_regs, 16);
    ck_assert(icc_target_has(&t, ICC_TF_AVX2) && icc_target_has(&t, ICC_TF_FMA));
    ck_assert(!icc_target_has(&t, ICC_TF_AVX512F));
    ck_assert_int_eq(icc_target_layout_block(&t), 8);
    ck_assert_int_eq(icc_target_f32_lanes(&t), 8);

    t = desc("x86_64-pc-linux-gnu", "x86-64-v4", NULL);
    ck_assert_int_eq(t.vector_bits, 512);
    ck_assert_int_eq(t.vector_regs, 32);
    ck_assert_int_eq(icc_target_layout_block(&t), 16);
    ck_assert(!icc_target_has(&t, ICC_TF_AVX512VNNI));

    t = desc("x86_64-pc-linux-gnu", "cascadelake", NULL);
    ck_assert(icc_target_has(&t, ICC_TF_AVX512VNNI) && !icc_target_has(&t, ICC_TF_AVX512BF16));
    t = desc("x86_64-pc-linux-gnu", "sapphirerapids", NULL);
    ck_assert(icc_target_has(&t, ICC_TF_AMX_TILE) && icc_target_has(&t, ICC_TF_AMX_INT8) &&
              icc_target_has(&t, ICC_TF_AMX_BF16) && icc_target_has(&t, ICC_TF_AVX512FP16));
    t = desc("x86_64-pc-linux-gnu", "x86-64-v2", NULL);
    ck_assert_int_eq(t.vector_bits, 128);
    ck_assert_int_eq(icc_target_layout_block(&t), 4);
}
END_TEST

START_TEST(feature_strings_add_and_remove)
{
    /* LLVM 19's evex512 off leaves AVX-512 instructions on 256-bit registers */
    icc_target_desc t = desc("x86_64-pc-linux-gnu", "x86-64-v4", "-evex512");
    ck_assert_int_eq(t.vector_bits, 256);
    ck_assert(icc_target_has(&t, ICC_TF_AVX512F));
    t = desc("x86_64-pc-linux-gnu", "generic", "+avx2,+fma,+avx512vnni,-fma");
    ck_assert(icc_target_has(&t, ICC_TF_AVX2) && icc_target_has(&t, ICC_TF_AVX512VNNI));
    ck_assert(!icc_target_has(&t, ICC_TF_FMA));
    ck_assert_int_eq(t.vector_bits, 256);
    /* a name icc does not track is ignored, not an error */
    t = desc("x86_64-pc-linux-gnu", "haswell", "+cx16,+sahf");
    ck_assert_int_eq(t.vector_bits, 256);
    char buf[256];
    icc_target_desc_str(&t, buf, sizeof buf);
    ck_assert_msg(strstr(buf, "cpu=haswell") && strstr(buf, "vector=256x16") && strstr(buf, "avx2"), "%s", buf);
}
END_TEST

START_TEST(aarch64_and_cuda)
{
    icc_target_desc t = desc("aarch64-unknown-linux-gnu", "generic", NULL);
    ck_assert_int_eq(t.arch, ICC_ARCH_AARCH64);
    ck_assert(icc_target_has(&t, ICC_TF_NEON));
    ck_assert_int_eq(t.vector_bits, 128);
    ck_assert_int_eq(icc_target_layout_block(&t), 4);
    t = desc("aarch64-unknown-linux-gnu", "neoverse-v1", NULL);
    ck_assert(icc_target_has(&t, ICC_TF_DOTPROD) && icc_target_has(&t, ICC_TF_I8MM));

    icc_diag d = {{0}};
    ck_assert_int_eq(icc_target_desc_init_cuda(&t, 90, &d), 0);
    ck_assert_int_eq(t.arch, ICC_ARCH_CUDA);
    ck_assert_int_eq(t.warp_size, 32);
    ck_assert_int_eq(t.tensor_core_gen, 3);
    ck_assert_int_gt(t.smem_per_block, 48 << 10);
    /* CUDA: the CPU schedule made wide, with 4-lane "vectors", GPU tiles for
     * the contractions, tensor cores from sm_80 */
    cg_schedule s;
    ck_assert_int_eq(cg_schedule_init(&s, &t, &d), 0);
    ck_assert_int_eq(s.kind, CG_SCHED_CUDA);
    ck_assert_int_eq(s.lanes, 4);
    ck_assert(s.gpu_gemm && s.gpu_mma && !s.prefetch_b);
    icc_target_desc t75;
    ck_assert_int_eq(icc_target_desc_init_cuda(&t75, 75, &d), 0);
    ck_assert_int_eq(cg_schedule_init(&s, &t75, &d), 0);
    ck_assert(s.gpu_gemm && !s.gpu_mma);
    ck_assert_int_eq(icc_target_desc_init_cuda(&t, 20, &d), -1);
    ck_assert_int_eq(icc_target_desc_init(&t, "riscv64-linux-gnu", NULL, NULL, &d), -1);
    ck_assert_ptr_nonnull(strstr(d.msg, "riscv64"));
}
END_TEST

START_TEST(schedule_follows_registers)
{
    icc_diag d = {{0}};
    cg_schedule s;
    icc_target_desc t = desc("x86_64-pc-linux-gnu", "x86-64-v4", NULL);
    ck_assert_int_eq(cg_schedule_init(&s, &t, &d), 0);
    ck_assert_int_eq(s.lanes, 16);
    ck_assert_int_eq(s.tile_vecs, 4);
    ck_assert_ptr_eq(s.target, &t);
    t = desc("x86_64-pc-linux-gnu", "haswell", NULL);
    ck_assert_int_eq(cg_schedule_init(&s, &t, &d), 0);
    ck_assert_int_eq(s.lanes, 8);
    ck_assert_int_eq(s.tile_vecs, 2);
    /* every register tile fits the register file: accumulators, B's
     * vectors and one broadcast of A */
    ck_assert_int_le(s.tile_rows * s.tile_vecs + s.tile_vecs + 1, t.vector_regs);
}
END_TEST

START_TEST(schedule_contraction_tiles)
{
    icc_diag d = {{0}};
    cg_schedule s;
    icc_target_desc t = desc("x86_64-pc-linux-gnu", "x86-64-v4", NULL);
    ck_assert_int_eq(cg_schedule_init(&s, &t, &d), 0);
    int r, v;
    /* skinny M: ties of the throughput model go to more rows (B read
     * fewer times) when B fits in the last-level cache: 8 rows are one
     * block of 8 x 2 vectors; from DRAM to wide panels (2 x 8) */
    cg_schedule_gemm_tile(&s, 8, 48, 768 * 768 * 4, &r, &v);
    ck_assert_int_eq(r, 8);
    ck_assert_int_eq(v, 2);
    cg_schedule_gemm_tile(&s, 8, 192, s.llc_bytes + 1, &r, &v);
    ck_assert_int_eq(r, 2);
    ck_assert_int_eq(v, 8);
    cg_schedule_gemm_tile(&s, 1, 48, 0, &r, &v);
    ck_assert_int_eq(r, 1);
    ck_assert_int_eq(v, 16);
    cg_schedule_gemm_tile(&s, 100, 48, 0, &r, &v);
    ck_assert_int_eq(r, s.tile_rows);
    ck_assert_int_eq(v, s.tile_vecs);
    /* over packed panels, 8 to 16 rows take the tile that computes the
     * fewest rows past M (6 rows: 16 -> 4 x 4, 8 -> 4, 12 -> 6, 10 -> 5) */
    ck_assert_int_eq(s.tile_rows, 6);
    ck_assert_int_eq(cg_schedule_packed_rows(&s, 16), 4);
    ck_assert_int_eq(cg_schedule_packed_rows(&s, 8), 4);
    ck_assert_int_eq(cg_schedule_packed_rows(&s, 12), 6);
    ck_assert_int_eq(cg_schedule_packed_rows(&s, 10), 5);
    ck_assert_int_eq(cg_schedule_packed_rows(&s, 17), 6);
    ck_assert_int_eq(cg_schedule_packed_rows(&s, 0), 6);
    /* parallel chunks: at least min_chunks, a count 4 threads share,
     * and of those the split that reads the least (r x B's panels + c x
     * A's rows) */
    int64_t nrc, ncc;
    cg_schedule_tile_chunks(&s, 1, 171, 16, 64, true, false, 6, 64, &nrc, &ncc);
    ck_assert_int_eq(nrc * ncc, s.min_chunks);   /* 1024 x 1024 x 1024 */
    ck_assert_int_eq(nrc, 4);   /* 4 x 1024 + 2 x 1026 columns' worth, under 8 x 1024 + 1026 */
    ck_assert_int_eq(ncc, 2);
    cg_schedule_tile_chunks(&s, 1, 22, 48, 64, true, false, 6, 64, &nrc, &ncc);
    ck_assert_int_eq(nrc, 1);   /* 128 x 768 x 3072: B's 3072 columns read once */
    ck_assert_int_eq(ncc, 8);
    cg_schedule_tile_chunks(&s, 1, 22, 12, 22, true, false, 6, 64, &nrc, &ncc);
    ck_assert_int_eq(nrc, 2);   /* 128 x 768 x 768, B a weight packed ahead: 8 chunks */
    ck_assert_int_eq(ncc, 4);
    cg_schedule_tile_chunks(&s, 1, 22, 12, 22, true, true, 6, 64, &nrc, &ncc);
    ck_assert_int_eq(nrc, 1);   /* B copied by each row chunk: copied once, in 4 chunks of 3 panels */
    ck_assert_int_eq(ncc, 4);
    cg_schedule_tile_chunks(&s, 1, 4, 12, 64, true, false, 4, 64, &nrc, &ncc);
    ck_assert_int_eq(nrc, 1);   /* 16 x 768 x 768: 12 (8 would leave 6 of 2 panels) */
    ck_assert_int_eq(ncc, 12);
    cg_schedule_tile_chunks(&s, 12, 22, 2, 64, true, false, 6, 64, &nrc, &ncc);
    ck_assert_int_eq(nrc, 1);   /* the batch alone gives the threads work */
    ck_assert_int_eq(ncc, 1);
    cg_schedule_tile_chunks(&s, 1, 1, 1, 64, false, false, 6, 64, &nrc, &ncc);
    ck_assert_int_eq(nrc * ncc, 1);   /* nothing to split */
}
END_TEST

START_TEST(llvm_target_describes_itself)
{
    icc_diag d = {{0}};
    cg_target *t;
    ck_assert_msg(cg_target_create("x86_64-pc-linux-gnu", "haswell", NULL, 2, &t, &d) == 0, "%s", d.msg);
    const icc_target_desc *td = cg_target_desc(t);
    ck_assert_int_eq(td->vector_bits, 256);
    ck_assert(!td->native);
    ck_assert_int_eq(td->cores, 0);
    ck_assert_int_eq(cg_target_vector_bits(t), 256);
    /* the named CPU's features are required at load, not only explicit ones */
    ck_assert_ptr_nonnull(strstr(cg_target_required_features(t), "avx2"));
    cg_target_destroy(t);
    ck_assert_int_eq(cg_target_create(NULL, NULL, NULL, 2, &t, &d), 0);
    td = cg_target_desc(t);
    ck_assert(td->native);
    ck_assert_int_gt(td->cores, 0);
    ck_assert_int_eq(td->vector_bits, cg_target_vector_bits(t));
    cg_target_destroy(t);
}
END_TEST

/* The block layout picks from the target the pipeline is given. */
static int first_block(const icc_target_desc *t)
{
    icc_diag d = {{0}};
    const char *text = "graph @g(%x: f32[1,32,8,8], %w: f32[32,32,3,3]) -> (%y) {\n"
                       "  %y = Conv(%x, %w) {pads = [1, 1, 1, 1]} : f32[1,32,8,8]\n"
                       "}\n";
    ir_graph *g = ir_parse(text, strlen(text), "t.icc", &d);
    ck_assert_msg(g, "%s", d.msg);
    icc_pipeline p;
    ck_assert_int_eq(icc_pipeline_parse("layout,dce", &p, &d), 0);
    icc_pass_options o = {.target = t};
    ck_assert_msg(icc_pipeline_run(&p, g, &o, &d) == 0, "%s", d.msg);
    icc_pipeline_free(&p);
    int cb = 0;
    for (int i = 0; i < g->nnodes; i++)
        if (!g->nodes[i]->dead && !strcmp(ir_ops[g->nodes[i]->op].name, "ConvNCHWc"))
            cb = (int)g->nodes[i]->out[0]->type.dims[4].v;
    ir_graph_destroy(g);
    return cb;
}

START_TEST(layout_block_from_target)
{
    icc_target_desc t = desc("x86_64-pc-linux-gnu", "haswell", NULL);
    ck_assert_int_eq(first_block(&t), 8);
    t = desc("x86_64-pc-linux-gnu", "x86-64-v4", NULL);
    ck_assert_int_eq(first_block(&t), 16);
    t = desc("aarch64-unknown-linux-gnu", "generic", NULL);
    ck_assert_int_eq(first_block(&t), 4);
    ck_assert_int_eq(first_block(NULL), icc_target_layout_block(pass_default_target()));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("target");
    TCase *tc = tcase_create("target");
    tcase_add_test(tc, x86_cpus_imply_their_features);
    tcase_add_test(tc, feature_strings_add_and_remove);
    tcase_add_test(tc, aarch64_and_cuda);
    tcase_add_test(tc, schedule_follows_registers);
    tcase_add_test(tc, schedule_contraction_tiles);
    tcase_add_test(tc, llvm_target_describes_itself);
    tcase_add_test(tc, layout_block_from_target);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return icc_run_suite(suite());
}
