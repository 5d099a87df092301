/* test_bench.c - icc bench's statistics, arrival process and list parsing
 * (its timings are not tested: they are what it measures). */
#include "check_main.h"
#include "tools/bench.h"

#include <math.h>
#include <string.h>

START_TEST(percentiles_by_nearest_rank)
{
    double v[10] = {10, 1, 9, 2, 8, 3, 7, 4, 6, 5};
    icc_bench_stats s;
    icc_bench_stats_of(v, 10, &s);
    ck_assert_int_eq(s.n, 10);
    /* sorted 1..10: the p-th percentile is the ceil(p/100 * n)-th smallest */
    ck_assert(s.p50 == 5 && s.p90 == 9 && s.p99 == 10);
    ck_assert(s.min == 1 && s.max == 10 && s.mean == 5.5);
    for (int i = 0; i < 10; i++)
        ck_assert(v[i] == i + 1); /* sorted in place */
    ck_assert(icc_bench_percentile(v, 10, 10) == 1);
    ck_assert(icc_bench_percentile(v, 10, 11) == 2);
    ck_assert(icc_bench_percentile(v, 10, 100) == 10);
    double one = 3.5;
    icc_bench_stats_of(&one, 1, &s);
    ck_assert(s.p50 == 3.5 && s.p99 == 3.5 && s.min == 3.5 && s.max == 3.5);
    icc_bench_stats_of(NULL, 0, &s);
    ck_assert(s.n == 0 && s.p50 == 0 && s.mean == 0);
    /* 1000 samples 0.001..1: p99 is the 990th */
    static double w[1000];
    for (int i = 0; i < 1000; i++)
        w[i] = (1000 - i) / 1000.0;
    icc_bench_stats_of(w, 1000, &s);
    ck_assert(s.p99 == 0.99 && s.p90 == 0.9 && s.p50 == 0.5);
}
END_TEST

START_TEST(poisson_arrivals)
{
    enum { N = 200000 };
    static double t[N];
    icc_bench_poisson(t, N, 250.0, 7);
    double prev = 0, sum = 0, sum2 = 0;
    for (int i = 0; i < N; i++) {
        double gap = t[i] - prev;
        ck_assert(gap > 0);
        sum += gap;
        sum2 += gap * gap;
        prev = t[i];
    }
    double mean = sum / N, var = sum2 / N - mean * mean;
    /* exponential gaps: mean 1/rate, standard deviation 1/rate */
    ck_assert_msg(fabs(mean * 250.0 - 1) < 0.01, "mean gap %g", mean);
    ck_assert_msg(fabs(sqrt(var) * 250.0 - 1) < 0.02, "sd %g", sqrt(var));
    /* fixed seed: the same arrivals every time */
    static double u[16];
    icc_bench_poisson(u, 16, 250.0, 7);
    for (int i = 0; i < 16; i++)
        ck_assert(u[i] == t[i]);
}
END_TEST

START_TEST(lists)
{
    int64_t v[4];
    ck_assert_int_eq(icc_bench_parse_list("1,2,4", v, 4), 3);
    ck_assert(v[0] == 1 && v[1] == 2 && v[2] == 4);
    ck_assert_int_eq(icc_bench_parse_list("64", v, 4), 1);
    ck_assert(v[0] == 64);
    const char *bad[] = {"", "0", "-1", "1,", ",1", "1,,2", "a", "1.5", "1,2,3,4,5", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(icc_bench_parse_list(bad[i], v, 4) == -1, "'%s' accepted", bad[i]);
}
END_TEST

START_TEST(paired_ratios)
{
    /* rounds where the machine ran at full speed and at half: b is 0.8x
     * a in four rounds, 1.25x in one; the ratios' median is 0.8 whatever
     * the speed of the round */
    double a[5] = {10, 20, 10, 20, 10}, b[5] = {8, 16, 12.5, 16, 8};
    icc_bench_ratio q;
    ck_assert_int_eq(icc_bench_paired(a, b, 5, &q), 0);
    ck_assert(fabs(q.median - 0.8) < 1e-12 && fabs(q.p25 - 0.8) < 1e-12 && fabs(q.p75 - 0.8) < 1e-12);
    ck_assert(fabs(q.faster - 0.8) < 1e-12);
    /* against itself: every ratio 1, ties count half */
    ck_assert_int_eq(icc_bench_paired(a, a, 5, &q), 0);
    ck_assert(q.median == 1 && q.p25 == 1 && q.p75 == 1 && q.faster == 0.5);
    /* quartiles by nearest rank over the sorted ratios 0.5 .. 2 */
    double c[4] = {1, 1, 1, 1}, d[4] = {2, 0.5, 1.5, 1};
    ck_assert_int_eq(icc_bench_paired(c, d, 4, &q), 0);
    ck_assert(q.p25 == 0.5 && q.median == 1 && q.p75 == 1.5 && q.faster == 0.375);
    ck_assert(icc_bench_paired(a, b, 5, &q) == 0 && a[2] == 10 && b[2] == 12.5);   /* inputs untouched */
    ck_assert_int_eq(icc_bench_paired(a, b, 0, &q), 0);
    ck_assert(q.median == 0 && q.faster == 0);
    double z[2] = {1, 0};
    ck_assert_int_eq(icc_bench_paired(c, z, 2, &q), -1);
}
END_TEST

static const char peak_text[] =
    "{\"isa\": \"avx2\", \"cores\": 2, \"fma_gflops_per_core\": 40.00, \"fma_gflops_all_cores\": 70.00, "
    "\"read_gbs\": {\"L1\": 1, \"L2\": 2, \"L3\": 3, \"DRAM\": 4}, "
    "\"read_gbs_per_core\": {\"L1\": 100.5, \"L2\": 50.25, \"L3\": 30, \"DRAM\": 10}, "
    "\"read_gbs_all_cores\": {\"L1\": 200, \"L2\": 100, \"L3\": 60, \"DRAM\": 16}, \"vnni\": false}";

START_TEST(peak_file)
{
    icc_bench_peak p;
    ck_assert_int_eq(icc_bench_peak_parse(peak_text, &p), 0);
    ck_assert_int_eq(p.cores, 2);
    ck_assert(p.gflops_core == 40 && p.gflops_all == 70);
    /* each level from its own object, not the first "L1" in the text */
    ck_assert(p.read_core[ICC_BENCH_L1] == 100.5 && p.read_core[ICC_BENCH_L2] == 50.25);
    ck_assert(p.read_core[ICC_BENCH_DRAM] == 10 && p.read_all[ICC_BENCH_DRAM] == 16 && p.read_all[ICC_BENCH_L3] == 60);
    icc_bench_roof r;
    icc_bench_roofs(&p, 1, &r);
    ck_assert(r.gflops[ICC_KERNEL_F32] == 40 && r.gbs == 10);
    icc_bench_roofs(&p, 2, &r);   /* 2 x 40 is past what all cores did */
    ck_assert(r.gflops[ICC_KERNEL_F32] == 70 && r.gbs == 16);
    ck_assert(p.int8_core == 0 && p.int8_all == 0 && p.bf16_core == 0 && p.bf16_all == 0);   /* absent */
    ck_assert(p.amx_int8_core == 0 && p.amx_bf16_all == 0);
    /* without their peaks the other kinds stand on FP32's roof */
    for (int k = 0; k < ICC_BENCH_KINDS; k++)
        ck_assert(r.gflops[k] == 70 && r.peak_of[k] == ICC_KERNEL_F32);
    /* the dot-product peaks: optional, each from its own key (not the
     * _all_cores one that starts alike), null as absent */
    char with[1024];
    snprintf(with, sizeof with, "%.*s, \"int8_gops_vnni\": 450.5, \"int8_gops_vnni_all_cores\": 900, "
             "\"bf16_gflops\": null, \"bf16_gflops_all_cores\": null}", (int)strlen(peak_text) - 1, peak_text);
    ck_assert_int_eq(icc_bench_peak_parse(with, &p), 0);
    ck_assert(p.int8_core == 450.5 && p.int8_all == 900 && p.bf16_core == 0 && p.bf16_all == 0);
    ck_assert(p.gflops_core == 40 && p.read_all[ICC_BENCH_DRAM] == 16);
    /* each kind on its own peak, per core or all cores as FP32's; AMX int8
     * on the int8 dot product's when AMX is not measured, bf16 on FP32's */
    icc_bench_roofs(&p, 1, &r);
    ck_assert(r.gflops[ICC_KERNEL_INT8_DOT] == 450.5 && r.peak_of[ICC_KERNEL_INT8_DOT] == ICC_KERNEL_INT8_DOT);
    ck_assert(r.gflops[ICC_KERNEL_AMX_INT8] == 450.5 && r.peak_of[ICC_KERNEL_AMX_INT8] == ICC_KERNEL_INT8_DOT);
    ck_assert(r.gflops[ICC_KERNEL_BF16_DOT] == 40 && r.peak_of[ICC_KERNEL_BF16_DOT] == ICC_KERNEL_F32);
    ck_assert(r.gflops[ICC_KERNEL_AMX_BF16] == 40 && r.peak_of[ICC_KERNEL_AMX_BF16] == ICC_KERNEL_F32);
    icc_bench_roofs(&p, 4, &r);   /* 4 x 450.5 is past all cores' 900 */
    ck_assert(r.gflops[ICC_KERNEL_INT8_DOT] == 900 && r.gflops[ICC_KERNEL_F32] == 70);
    /* measured AMX and bf16 peaks are their kinds' own */
    snprintf(with, sizeof with, "%.*s, \"bf16_gflops\": 200, \"bf16_gflops_all_cores\": 390, "
             "\"int8_gops_amx\": 2000, \"int8_gops_amx_all_cores\": 3900, \"bf16_gflops_amx\": 1000, "
             "\"bf16_gflops_amx_all_cores\": 1900}", (int)strlen(peak_text) - 1, peak_text);
    ck_assert_int_eq(icc_bench_peak_parse(with, &p), 0);
    icc_bench_roofs(&p, 2, &r);
    ck_assert(r.gflops[ICC_KERNEL_BF16_DOT] == 390 && r.peak_of[ICC_KERNEL_BF16_DOT] == ICC_KERNEL_BF16_DOT);
    ck_assert(r.gflops[ICC_KERNEL_AMX_INT8] == 3900 && r.peak_of[ICC_KERNEL_AMX_INT8] == ICC_KERNEL_AMX_INT8);
    ck_assert(r.gflops[ICC_KERNEL_AMX_BF16] == 1900 && r.peak_of[ICC_KERNEL_AMX_BF16] == ICC_KERNEL_AMX_BF16);
    ck_assert(r.gflops[ICC_KERNEL_INT8_DOT] == 70 && r.peak_of[ICC_KERNEL_INT8_DOT] == ICC_KERNEL_F32);
    ck_assert_str_eq(icc_bench_kind_name(ICC_KERNEL_INT8_DOT), "i8");
    ck_assert_str_eq(icc_bench_kind_name(ICC_KERNEL_AMX_BF16), "amx-bf16");
    ck_assert_str_eq(icc_bench_kind_name(99), "f32");   /* a newer compiler's kind */
    ck_assert_int_eq(icc_bench_peak_parse("{\"cores\": 2}", &p), -1);
    ck_assert_int_eq(icc_bench_peak_parse("not json", &p), -1);
    /* a level missing from the all-cores object */
    ck_assert_int_eq(icc_bench_peak_parse("{\"cores\": 2, \"fma_gflops_per_core\": 1, \"fma_gflops_all_cores\": 2, "
                                          "\"read_gbs_per_core\": {\"L1\": 1, \"L2\": 1, \"L3\": 1, \"DRAM\": 1}, "
                                          "\"read_gbs_all_cores\": {\"L1\": 1}, \"L2\": 1}", &p), -1);
}
END_TEST

START_TEST(profile_rows)
{
    /* roofs 100 GFLOP/s and 10 GB/s: the ridge at 10 FLOP/B */
    icc_kernel_info k[4] = {
        {"mm", "MatMul", 2000000, 100000},   /* 20 FLOP/B: compute-bound */
        {"add", "Add", 1000, 12000},          /* memory-bound */
        {"copy", "Reshape", 0, 8000},         /* no FLOPs: data movement */
        {"fc+relu", "Gemm+Relu", 500000, 50000},   /* exactly at the ridge */
    };
    uint64_t ns[4] = {100000, 300000, 0, 100000};   /* over 10 runs */
    icc_bench_kernel r[4];
    icc_bench_roof roof = {.gbs = 10};
    for (int i = 0; i < ICC_BENCH_KINDS; i++)
        roof.gflops[i] = 100, roof.peak_of[i] = ICC_KERNEL_F32;
    icc_bench_profile_rows(k, NULL, ns, 4, 10, &roof, r);
    /* longest first; equal times in run order */
    ck_assert_int_eq(r[0].index, 1);
    ck_assert_int_eq(r[1].index, 0);
    ck_assert_int_eq(r[2].index, 3);
    ck_assert_int_eq(r[3].index, 2);
    ck_assert_str_eq(r[0].name, "add");
    double share = 0;
    for (int i = 0; i < 4; i++)
        share += r[i].share;
    ck_assert(fabs(share - 100) < 1e-9);
    ck_assert(fabs(r[0].share - 60) < 1e-9 && r[3].share == 0);
    /* mm: 10 us per run, 2 MFLOP: 200 GFLOP/s... of a 100 roof: 200% */
    ck_assert(fabs(r[1].us - 10) < 1e-9);
    ck_assert(fabs(r[1].gflops - 200) < 1e-6 && fabs(r[1].gbs - 10) < 1e-6);
    ck_assert(r[1].compute_bound && fabs(r[1].intensity - 20) < 1e-9 && fabs(r[1].roof_pct - 200) < 1e-6);
    /* add: 30 us, 12 KB: 0.4 GB/s; the roof at 1/12 FLOP/B is 10/12 GFLOP/s */
    ck_assert(!r[0].compute_bound && fabs(r[0].gbs - 0.4) < 1e-9);
    ck_assert(fabs(r[0].roof_pct - (1000 / 30e-6 / 1e9) / (10.0 / 12) * 100) < 1e-6);
    ck_assert(r[2].compute_bound);   /* fc+relu: 10 FLOP/B, the ridge itself */
    ck_assert(!r[3].compute_bound && r[3].gflops == 0 && r[3].us == 0);   /* copy never ran long enough */

    char buf[4096];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    icc_bench_profile_table(f, r, 4, 0.060);
    fclose(f);
    ck_assert(strstr(buf, "us/run") && strstr(buf, "GFLOP/s") && strstr(buf, "bound") && strstr(buf, " kind "));
    ck_assert_msg(strstr(buf, "% f32      MatMul"), "%s", buf);
    ck_assert(strstr(buf, "compute") && strstr(buf, "memory") && strstr(buf, "Gemm+Relu"));
    ck_assert_msg(strstr(buf, "total of 4 kernels") && strstr(buf, " 10.00 us of it outside kernels"), "%s", buf);
    int lines = 0;
    for (char *c = buf; *c; c++)
        lines += *c == '\n';
    ck_assert_int_eq(lines, 6);   /* head, 4 kernels, total */
    f = fmemopen(buf, sizeof buf, "w");
    icc_bench_profile_json(f, r, 4, 0.060, &roof);
    fclose(f);
    ck_assert_msg(strstr(buf, "\"kernels_us\": 50.0000, \"run_mean_us\": 60.0000"), "%s", buf);
    ck_assert(strstr(buf, "{\"index\": 1, \"name\": \"add\", \"ops\": \"Add\", \"kind\": \"f32\", "
                      "\"peak_gflops\": 100.000, \"us\": 30.0000, \"share\": 60.0000"));
    ck_assert(strstr(buf, "\"bound\": \"compute\"") && strstr(buf, "\"flops\": 2000000"));
    ck_assert_msg(strstr(buf, "\"ops\": \"MatMul\", \"kind\": \"f32\", \"peak_gflops\": 100.000"), "%s", buf);
    icc_bench_profile_rows(k, NULL, ns, 4, 0, &roof, r);   /* no runs: zeros, not NaNs */
    ck_assert(r[0].us == 0 && r[0].gflops == 0 && !isnan(r[0].share));

    /* kinds: mm an int8 dot product on a roof of 400 (its ridge at 40
     * FLOP/B, so its 20 FLOP/B are memory-bound: the roof 20 x 10 = 200,
     * 100%); fc+relu bf16 without a bf16 peak, on FP32's */
    int kinds[4] = {ICC_KERNEL_INT8_DOT, ICC_KERNEL_F32, ICC_KERNEL_F32, ICC_KERNEL_BF16_DOT};
    roof.gflops[ICC_KERNEL_INT8_DOT] = 400, roof.peak_of[ICC_KERNEL_INT8_DOT] = ICC_KERNEL_INT8_DOT;
    icc_bench_profile_rows(k, kinds, ns, 4, 10, &roof, r);
    ck_assert(r[1].index == 0 && r[1].kind == ICC_KERNEL_INT8_DOT && r[1].peak_gflops == 400);
    ck_assert(!r[1].compute_bound && fabs(r[1].roof_pct - 100) < 1e-6);
    ck_assert(r[2].kind == ICC_KERNEL_BF16_DOT && r[2].peak_gflops == 100 && r[2].compute_bound);
    ck_assert(r[0].kind == ICC_KERNEL_F32 && r[0].peak_gflops == 100);
    f = fmemopen(buf, sizeof buf, "w");
    icc_bench_profile_table(f, r, 4, 0.060);
    fclose(f);
    ck_assert_msg(strstr(buf, "100% i8       MatMul") && strstr(buf, "% bf16     Gemm+Relu"), "%s", buf);
    f = fmemopen(buf, sizeof buf, "w");
    icc_bench_profile_json(f, r, 4, 0.060, &roof);
    fclose(f);
    ck_assert_msg(strstr(buf, "\"peak_gflops\": 100.000, \"peak_gbs\": 10.000, \"peaks_gflops\": {\"f32\": 100.000, "
                              "\"bf16\": 100.000, \"i8\": 400.000"), "%s", buf);
    ck_assert_msg(strstr(buf, "\"peak_of\": {\"f32\": \"f32\", \"bf16\": \"f32\", \"i8\": \"i8\""), "%s", buf);
    ck_assert(strstr(buf, "\"ops\": \"MatMul\", \"kind\": \"i8\", \"peak_gflops\": 400.000"));
    char text[256];
    icc_bench_roofs_text(text, sizeof text, r, 4, &roof);
    ck_assert_str_eq(text, "100.0 GFLOP/s (bf16 100.0 (FP32's), i8 400.0)");
    icc_bench_profile_rows(k, NULL, ns, 4, 10, &roof, r);
    icc_bench_roofs_text(text, sizeof text, r, 4, &roof);
    ck_assert_str_eq(text, "100.0 GFLOP/s");   /* f32 only: as before the kinds */
}
END_TEST

/* A decoder's descriptor: tokens [1, seq], positions, 2 layers of cache
 * [1, 2, 16, 4], logits [1, seq, 50]. */
static const int64_t tok_dims[2] = {1, -1}, kv_dims[4] = {1, 2, 16, 4}, logit_dims[3] = {1, -1, 50};
static const int64_t mask_dims[2] = {1, 16}, bad_kv[4] = {1, 2, 8, 4};
static const char *const seq_names[3] = {NULL, "seq", NULL};

static icc_model_desc decoder(icc_tensor_desc *in, icc_tensor_desc *out)
{
    in[0] = (icc_tensor_desc){"input_ids", ICC_I64, 2, tok_dims, seq_names};
    in[1] = (icc_tensor_desc){"position_ids", ICC_I64, 2, tok_dims, seq_names};
    out[0] = (icc_tensor_desc){"logits", ICC_F32, 3, logit_dims, seq_names};
    const char *pn[4] = {"past_key_0", "past_value_0", "past_key_1", "past_value_1"};
    const char *qn[4] = {"present_key_0", "present_value_0", "present_key_1", "present_value_1"};
    for (int i = 0; i < 4; i++) {
        in[2 + i] = (icc_tensor_desc){pn[i], ICC_F32, 4, kv_dims, NULL};
        out[1 + i] = (icc_tensor_desc){qn[i], ICC_F32, 4, kv_dims, NULL};
    }
    return (icc_model_desc){.ninputs = 6, .noutputs = 5, .inputs = in, .outputs = out};
}

START_TEST(generate_roles)
{
    icc_tensor_desc in[8], out[8];
    icc_model_desc d = decoder(in, out);
    icc_gen_io g;
    char err[400];
    ck_assert_msg(icc_bench_gen_io(&d, NULL, &g, err, sizeof err) == 0, "%s", err);
    ck_assert(g.tokens == 0 && g.position == 1 && g.mask == -1 && g.logits == 0);
    ck_assert_int_eq(g.npast, 4);
    for (int i = 0; i < 4; i++)
        ck_assert(g.past[i] == 2 + i && g.present[i] == 1 + i);
    ck_assert(g.max_len == 16 && g.seq == -1 && g.vocab == 50);

    /* logits not first and not so named: the first non-present output */
    out[0].name = "scores";
    ck_assert(icc_bench_gen_io(&d, NULL, &g, err, sizeof err) == 0 && g.logits == 0);
    /* other names through --gen-io */
    in[0].name = "ids_in";
    in[1].name = "where";
    for (int i = 0; i < 4; i++)
        in[2 + i].name = i % 2 ? "cache_v" : "cache_k";
    ck_assert(icc_bench_gen_io(&d, NULL, &g, err, sizeof err) == -1);
    ck_assert_msg(strstr(err, "input 'ids_in' has no role"), "%s", err);
    ck_assert_msg(icc_bench_gen_io(&d, "tokens=ids_in,position=where,past=cache_,logits=scores", &g, err, sizeof err) == 0,
                  "%s", err);
    ck_assert(g.tokens == 0 && g.position == 1 && g.npast == 4 && g.past[3] == 5);
    ck_assert(icc_bench_gen_io(&d, "tokens=nope", &g, err, sizeof err) == -1);
    ck_assert_msg(strstr(err, "tokens=nope: the model has no such input"), "%s", err);
    ck_assert(icc_bench_gen_io(&d, "colour=red", &g, err, sizeof err) == -1);
    ck_assert_msg(strstr(err, "expected ROLE=NAME"), "%s", err);

    /* an attention mask instead of positions: one flag per cache slot */
    d = decoder(in, out);
    in[1] = (icc_tensor_desc){"attention_mask", ICC_I64, 2, mask_dims, NULL};
    ck_assert_msg(icc_bench_gen_io(&d, NULL, &g, err, sizeof err) == 0, "%s", err);
    ck_assert(g.mask == 1 && g.position == -1);
    in[1].dims = tok_dims;
    ck_assert(icc_bench_gen_io(&d, NULL, &g, err, sizeof err) == -1 && strstr(err, "must be [1, 16]"));

    /* what a static-KV decoder must have */
    d = decoder(in, out);
    d.noutputs = 4;   /* a past without its present */
    ck_assert(icc_bench_gen_io(&d, NULL, &g, err, sizeof err) == -1 && strstr(err, "4 past inputs and 3 present"));
    d = decoder(in, out);
    out[2].dims = bad_kv;
    ck_assert(icc_bench_gen_io(&d, NULL, &g, err, sizeof err) == -1 && strstr(err, "differ in shape"));
    d = decoder(in, out);
    in[3].dims = bad_kv, out[2].dims = bad_kv;
    ck_assert(icc_bench_gen_io(&d, NULL, &g, err, sizeof err) == -1 && strstr(err, "disagree on the cache length"));
    d = decoder(in, out);
    in[0].dtype = ICC_F32;
    ck_assert(icc_bench_gen_io(&d, NULL, &g, err, sizeof err) == -1 && strstr(err, "must be i64 or i32"));
    d = decoder(in, out);
    d.inputs = in + 1, d.ninputs = 5;   /* no tokens: position_ids, caches */
    ck_assert(icc_bench_gen_io(&d, NULL, &g, err, sizeof err) == -1 && strstr(err, "no token input"));
    d = decoder(in, out);
    in[1].name = "past_position";   /* taken for a cache: 5 pasts, 4 presents */
    ck_assert(icc_bench_gen_io(&d, NULL, &g, err, sizeof err) == -1 && strstr(err, "5 past inputs and 4"));

    /* the prompt other engines can feed too */
    ck_assert(icc_bench_gen_prompt_token(0, 2048) == 13 && icc_bench_gen_prompt_token(1, 2048) == 7932 % 2048);
    ck_assert(icc_bench_gen_prompt_token(5, 50) == (5 * 7919 + 13) % 50);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bench");
    TCase *tc = tcase_create("bench");
    tcase_add_test(tc, percentiles_by_nearest_rank);
    tcase_add_test(tc, poisson_arrivals);
    tcase_add_test(tc, lists);
    tcase_add_test(tc, paired_ratios);
    tcase_add_test(tc, peak_file);
    tcase_add_test(tc, profile_rows);
    tcase_add_test(tc, generate_roles);
    suite_add_tcase(s, tc);
    return icc_run_suite(s);
}
