/* test_codegen_int8.c - the INT8 contraction kernels (codegen/lower/qgemm.c)
 * end to end: MatMulInteger and ConvInteger graphs of assorted shapes
 * (M = 1, odd K and N, N not a multiple of the panel, batch dims), u8 and
 * i8 activations and weights, zero points absent, scalar, per row / per
 * column / per output channel, convolutions padded, strided, dilated, 1-D
 * and 3-D, are compiled to a model .so and run with 1 and 3 threads on
 * full-range random inputs; outputs must equal the reference
 * interpreter's exactly. The same for a baseline x86-64 target (no AVX2:
 * the intrinsic's scalar form), and the assembly: vpmaddwd on AVX2, no
 * AVX on the baseline, vpdpbusd with VNNI; the VNNI kernel's lowering
 * runs here through its intrinsic's scalar form; 7-bit constant B takes
 * vpmaddubsw on AVX2. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "codegen_harness.h"
#include "codegen/kir.h"
#include "codegen/llvm/emit.h"
#include "codegen/lower.h"
#include "codegen/program.h"
#include "ir/ops.h"
#include "icc/runtime.h"
#include "ir/ref/interp.h"
#include "ir/text.h"
#include "passes/pass.h"

#include "text_buf.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A value of dtype "u8" or "i8" over its whole range. */
static int64_t rval(const char *dt) { return dt[0] == 'u' ? (int64_t)(rnd() % 256) : (int64_t)(rnd() % 256) - 128; }

/* When set, the constant named "b" has b~ (b, or b - 128 for u8) in
 * [-64, 64]: every pair of k passes vpmaddubsw's bound |b~0| + |b~1| <=
 * 128, with the bound itself reached (64 + 64). */
static bool b_7bit;

/* `%name = const DT[dims] [...]` with random values; dims "" is a scalar. */
static void put_const(buf *b, const char *name, const char *dt, const char *dims, int64_t n)
{
    put(b, "  %%%s = const %s[%s] [", name, dt, dims);
    bool narrow = b_7bit && !strcmp(name, "b");
    for (int64_t i = 0; i < n; i++)
        put(b, "%s%lld", i ? ", " : "",
            (long long)(narrow ? (int64_t)(rnd() % 129) - 64 + (dt[0] == 'u' ? 128 : 0) : rval(dt)));
    put(b, "]\n");
}

/* A zero point: "-" none, "s" a scalar, "v" a vector of n. */
static const char *put_zp(buf *b, const char *name, const char *dt, char kind, int64_t n)
{
    char dims[32];
    if (kind == '-')
        return "";
    snprintf(dims, sizeof dims, "%lld", (long long)n);
    put_const(b, name, dt, kind == 's' ? "" : dims, kind == 's' ? 1 : n);
    return name;
}

/* Compiles g for cpu (NULL: the host) and runs it with 1 and 3 threads;
 * every output must equal want. */
static void run_compiled(const ir_graph *g, const char *cpu, const ir_tensor *in, const ir_tensor *want)
{
    icc_diag d = {{0}};
    char dir[] = "/tmp/icc_int8_XXXXXX", so[256], obj[300];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(so, sizeof so, "%s/m.so", dir);
    snprintf(obj, sizeof obj, "%s.o", so);
    cg_target *t;
    ck_assert_msg(cg_target_create(NULL, cpu, NULL, 2, &t, &d) == 0, "%s", d.msg);
    LLVMModuleRef m;
    ck_assert_msg(cg_compile_model(g, t, NULL, &m, &d) == 0, "%s", d.msg);
    ck_assert_msg(cg_optimize(t, m, &d) == 0 && cg_emit_object(t, m, obj, &d) == 0, "%s", d.msg);
    const char *objs[] = {obj}, *libs[] = {"-lm"};
    ck_assert_msg(cg_link_shared(objs, 1, libs, 1, so, &d) == 0, "%s", d.msg);
    unlink(obj);
    LLVMDisposeModule(m);
    cg_target_destroy(t);
    icc_model *model;
    ck_assert_msg(icc_model_open(so, NULL, &model) == ICC_OK, "%s", icc_last_error());
    const void *inputs[1] = {in[0].data};
    int64_t dims[IR_MAX_RANK];
    for (int k = 0; k < in[0].rank; k++)
        dims[k] = in[0].dims[k];
    const int64_t *dimp[1] = {dims};
    for (int threads = 1; threads <= 3; threads += 2) {
        icc_context *ctx;
        ck_assert_int_eq(icc_context_create(model, NULL, &ctx), ICC_OK);
        ck_assert_int_eq(icc_context_set_threads(ctx, threads), ICC_OK);
        void *out = calloc(1, want[0].nbytes + 1);
        ck_assert_msg(icc_run(ctx, inputs, dimp, &out) == ICC_OK, "%s", icc_context_error(ctx));
        const int32_t *got = out, *w = want[0].data;
        for (int64_t e = 0; e < want[0].numel; e++)
            ck_assert_msg(got[e] == w[e], "%s, threads %d: y[%lld] = %d, want %d", cpu ? cpu : "host", threads,
                          (long long)e, got[e], w[e]);
        free(out);
        icc_context_destroy(ctx);
    }
    icc_model_close(model);
    unlink(so);
    rmdir(dir);
}

/* Parses text, runs the interpreter on a random input and the compiled
 * model (host and baseline x86-64) against it. */
static void check_graph(const char *text)
{
    icc_diag d = {{0}};
    ir_graph *g = ir_parse(text, strlen(text), "int8.icc", &d);
    ck_assert_msg(g != NULL, "%s\n%s", d.msg, text);
    icc_pipeline p;
    ck_assert_msg(icc_pipeline_parse("shape-infer,simplify,cse,dce,fuse,plan", &p, &d) == 0, "%s", d.msg);
    ck_assert_msg(icc_pipeline_run(&p, g, NULL, &d) == 0, "%s", d.msg);
    icc_pipeline_free(&p);
    ck_assert_int_eq(g->ninputs, 1);
    const ir_type *t = &g->inputs[0]->type;
    int64_t dims[IR_MAX_RANK];
    for (int k = 0; k < t->rank; k++)
        dims[k] = t->dims[k].v;
    ir_tensor in = {0}, want = {0};
    ck_assert_int_eq(ir_tensor_init(&in, t->dtype, t->rank, dims, &d), 0);
    in.data = calloc(1, in.nbytes + 1);
    for (int64_t e = 0; e < in.numel; e++)
        ir_tensor_seti(&in, e, rval(t->dtype == IR_U8 ? "u8" : "i8"));
    ck_assert_msg(ir_interp_run(g, &in, &want, &d) == 0, "%s", d.msg);
    run_compiled(g, NULL, &in, &want);
#if defined(__x86_64__)
    run_compiled(g, "x86-64", &in, &want);
#endif
    ir_tensors_free(&want, 1);
    free(in.data);
    ir_graph_destroy(g);
}

/* y = MatMulInteger(a: adt[lead..., M, K], b: bdt[K, N] const, za, zb) */
static char *mm_graph(const char *lead, int64_t M, int64_t K, int64_t N, const char *adt, const char *bdt, char za,
                      char zb)
{
    buf b = {0};
    char bd[64];
    put(&b, "graph @g(%%a: %s[%s%lld,%lld]) -> (%%y) {\n", adt, lead, (long long)M, (long long)K);
    snprintf(bd, sizeof bd, "%lld,%lld", (long long)K, (long long)N);
    put_const(&b, "b", bdt, bd, K * N);
    const char *zan = put_zp(&b, "za", adt, za, M), *zbn = put_zp(&b, "zb", bdt, zb, N);
    put(&b, "  %%y = MatMulInteger(%%a, %%b");
    if (*zan || *zbn)
        put(&b, ", %s%s", *zan ? "%" : "_", zan);
    if (*zbn)
        put(&b, ", %%%s", zbn);
    put(&b, ")\n}\n");
    return b.s;
}

START_TEST(matmul_integer_shapes)
{
    static const struct {
        const char *lead;
        int64_t m, k, n;
        const char *adt, *bdt;
        char za, zb;
    } cases[] = {
        {"", 1, 768, 64, "u8", "i8", 's', 's'},   /* M = 1: one row, 8 vectors */
        {"", 1, 33, 8, "i8", "i8", '-', '-'},     /* odd K, one vector */
        {"", 7, 1, 9, "u8", "u8", 's', 'v'},      /* K = 1, N past the panel */
        {"2,3,", 5, 17, 31, "u8", "i8", 'v', 'v'}, /* batch dims, per-row za */
        {"", 13, 64, 100, "i8", "i8", '-', 'v'},
        {"", 6, 5, 8, "i8", "u8", 'v', '-'},
        {"", 33, 129, 77, "u8", "i8", 's', 's'},
        {"", 64, 300, 257, "u8", "i8", 's', 'v'},
        {"", 3, 1000, 1000, "u8", "u8", 's', 's'},
        {"", 16, 8192, 16, "u8", "i8", 's', 'v'}, /* the longest K: a' and B's panels fill the thread scratch */
        {"", 2, 8193, 8, "u8", "i8", 's', 's'},   /* past it: the scalar loop */
    };
    rng_state = 1;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *t = mm_graph(cases[i].lead, cases[i].m, cases[i].k, cases[i].n, cases[i].adt, cases[i].bdt, cases[i].za,
                           cases[i].zb);
        check_graph(t);
        free(t);
    }
}
END_TEST

/* y = ConvInteger(x: xdt[N, C, sp...], w: wdt[M, C, k...] const, zx, zw) */
static char *conv_graph(int n, const char *xsp, int64_t C, int64_t M, const char *ksp, int64_t taps, const char *xdt,
                        const char *wdt, char zx, char zw, const char *attrs)
{
    buf b = {0};
    char wd[64];
    put(&b, "graph @g(%%x: %s[%d,%lld,%s]) -> (%%y) {\n", xdt, n, (long long)C, xsp);
    snprintf(wd, sizeof wd, "%lld,%lld,%s", (long long)M, (long long)C, ksp);
    put_const(&b, "w", wdt, wd, M * C * taps);
    const char *zxn = put_zp(&b, "zx", xdt, zx, 1), *zwn = put_zp(&b, "zw", wdt, zw, M);
    put(&b, "  %%y = ConvInteger(%%x, %%w");
    if (*zxn || *zwn)
        put(&b, ", %s%s", *zxn ? "%" : "_", zxn);
    if (*zwn)
        put(&b, ", %%%s", zwn);
    put(&b, ") {%s}\n}\n", attrs);
    return b.s;
}

START_TEST(conv_integer_shapes)
{
    static const struct {
        int n;
        const char *xsp;
        int64_t c, m;
        const char *ksp;
        int64_t taps;
        const char *xdt, *wdt;
        char zx, zw;
        const char *attrs;
    } cases[] = {
        {1, "10,10", 8, 16, "3,3", 9, "u8", "i8", 's', 's', "pads = [1, 1, 1, 1]"},
        {2, "9,11", 5, 7, "3,3", 9, "u8", "u8", 's', 'v', "pads = [0, 1, 2, 1], strides = [2, 2]"},
        {1, "15,15", 3, 20, "7,7", 49, "u8", "i8", 's', '-', "pads = [3, 3, 3, 3], strides = [2, 2]"},
        {1, "7,7", 16, 9, "1,1", 1, "i8", "i8", '-', '-', ""},
        {1, "12,13", 4, 6, "3,3", 9, "i8", "u8", 's', 's', "pads = [2, 2, 2, 2], dilations = [2, 2]"},
        {1, "30", 6, 13, "5", 5, "u8", "i8", 's', 'v', "pads = [2, 2], strides = [3]"},
        {3, "5,5,5", 2, 3, "3,3,3", 27, "u8", "i8", 's', 's', "pads = [1, 1, 1, 1, 1, 1]"},
        {1, "14,14", 64, 64, "3,3", 9, "u8", "i8", 's', 'v', "pads = [1, 1, 1, 1]"},
        {1, "6,6", 32, 8, "2,2", 4, "i8", "i8", 's', '-', "auto_pad = \"SAME_UPPER\""},
        /* K = 8190 and 3 channels (wide panels): x~ of a panel must stay within the thread scratch */
        {1, "5,5", 910, 3, "3,3", 9, "u8", "i8", 's', 's', "pads = [1, 1, 1, 1]"},
    };
    rng_state = 2;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *t = conv_graph(cases[i].n, cases[i].xsp, cases[i].c, cases[i].m, cases[i].ksp, cases[i].taps,
                             cases[i].xdt, cases[i].wdt, cases[i].zx, cases[i].zw, cases[i].attrs);
        check_graph(t);
        free(t);
    }
}
END_TEST

/* text parsed, its shapes inferred and its arena planned. */
static ir_graph *planned(const char *text)
{
    icc_diag d = {{0}};
    ir_graph *g = ir_parse(text, strlen(text), "int8.icc", &d);
    ck_assert_msg(g != NULL, "%s", d.msg);
    icc_pipeline p;
    ck_assert_msg(icc_pipeline_parse("shape-infer,plan", &p, &d) == 0, "%s", d.msg);
    ck_assert_msg(icc_pipeline_run(&p, g, NULL, &d) == 0, "%s", d.msg);
    icc_pipeline_free(&p);
    return g;
}

/* The model's assembly for cpu. */
static char *model_asm(const char *text, const char *cpu, const char *features)
{
    icc_diag d = {{0}};
    ir_graph *g = planned(text);
    cg_target *t;
    ck_assert_msg(cg_target_create("x86_64-pc-linux-gnu", cpu, features, 2, &t, &d) == 0, "%s", d.msg);
    LLVMModuleRef m;
    ck_assert_msg(cg_compile_model(g, t, NULL, &m, &d) == 0, "%s", d.msg);
    ck_assert_msg(cg_optimize(t, m, &d) == 0, "%s", d.msg);
    char *as = cg_emit_asm(t, m, &d);
    ck_assert_msg(as != NULL, "%s", d.msg);
    LLVMDisposeModule(m);
    cg_target_destroy(t);
    ir_graph_destroy(g);
    return as;
}

START_TEST(pmaddwd_in_the_assembly)
{
    rng_state = 3;
    char *t = mm_graph("", 16, 64, 64, "u8", "i8", 's', 's');
    char *as = model_asm(t, "haswell", NULL);
    ck_assert_msg(strstr(as, "vpmaddwd") && strstr(as, "ymm"), "no ymm vpmaddwd on AVX2");
    ck_assert_msg(!strstr(as, "vpdpbusd"), "vpdpbusd without VNNI");
    free(as);
    as = model_asm(t, "x86-64", NULL);
    /* (LLVM may still pick SSE2's pmaddwd for the scalar form's sums) */
    ck_assert_msg(!strstr(as, "vpmaddwd") && !strstr(as, "ymm"), "AVX code on a target without AVX");
    free(as);
    free(t);
}
END_TEST

/* The kind --profile records of the one kernel text compiles to for cpu
 * (codegen/profile.c): what its code runs on for that target. */
static int profiled_kind(const char *text, const char *cpu)
{
    icc_diag d = {{0}};
    ir_graph *g = planned(text);
    cg_target *t;
    ck_assert_msg(cg_target_create("x86_64-pc-linux-gnu", cpu, NULL, 2, &t, &d) == 0, "%s", d.msg);
    cg_schedule s;
    cg_program *prog;
    ck_assert_msg(cg_program_build(g, harness_sched(t, &s), "k", false, &prog, &d) == 0, "%s", d.msg);
    ck_assert_msg(cg_program_profile(g, prog, s.target, &d) == 0, "%s", d.msg);
    ck_assert_int_eq(prog->nkernels, 1);
    int kind = prog->profile[0].kind;
    cg_program_destroy(prog);
    cg_target_destroy(t);
    ir_graph_destroy(g);
    return kind;
}

/* The kernel's kind follows the instructions it runs on: vpdpbusd with
 * VNNI and vpmaddwd on AVX2 are int8 dot products; the scalar form on a
 * target with neither is f32's roof, as is an f32 MatMul everywhere. */
START_TEST(profile_kind_follows_the_target)
{
    rng_state = 5;
    char *t = mm_graph("", 16, 64, 64, "u8", "i8", 's', 's');
    ck_assert_int_eq(profiled_kind(t, "sapphirerapids"), ICC_KERNEL_INT8_DOT);
    ck_assert_int_eq(profiled_kind(t, "haswell"), ICC_KERNEL_INT8_DOT);
    ck_assert_int_eq(profiled_kind(t, "x86-64"), ICC_KERNEL_F32);
    free(t);
    static const char f32[] = "graph @g(%a: f32[16,64], %b: f32[64,64]) -> (%y) {\n"
                              "  %y = MatMul(%a, %b) : f32[16,64]\n}\n";
    ck_assert_int_eq(profiled_kind(f32, "sapphirerapids"), ICC_KERNEL_F32);
}
END_TEST

/* With VNNI the MatMulInteger kernel steps 4 k by vpdpbusd: zmm on
 * Sapphire Rapids, VEX-encoded ymm with AVX-VNNI alone; u8 and i8 A and B. */
START_TEST(dpbusd_in_the_assembly)
{
    static const char *const dts[][2] = {{"u8", "i8"}, {"i8", "u8"}};
    rng_state = 4;
    for (int i = 0; i < 2; i++) {
        char *t = mm_graph("", 16, 67, 64, dts[i][0], dts[i][1], 's', 'v');
        char *as = model_asm(t, "sapphirerapids", NULL);
        ck_assert_msg(strstr(as, "vpdpbusd") && strstr(as, "zmm"), "no zmm vpdpbusd on sapphirerapids");
        ck_assert_msg(!strstr(as, "vpmaddwd"), "vpmaddwd with VNNI");
        free(as);
        as = model_asm(t, "x86-64-v3", "+avxvnni");
        ck_assert_msg(strstr(as, "{vex}\tvpdpbusd"), "no VEX vpdpbusd with AVX-VNNI");
        free(as);
        free(t);
    }
}
END_TEST

/* The VNNI kernel's lowering (quads of k, the +128 offsets, column sums,
 * the tail quad) run here: the schedule forced to quads on this host,
 * whose backend emits vpdpbusd (VNNI) or dpbusd_rows' scalar form, against
 * the interpreter.
 * Every N is at least 16, the widest target's lanes (qgemm_ok). */
START_TEST(quads_through_the_scalar_form)
{
    static const struct {
        int64_t m, k, n;
        const char *adt, *bdt;
        char za, zb;
    } cases[] = {
        {5, 37, 19, "u8", "i8", 's', 'v'}, {1, 4, 16, "i8", "u8", '-', '-'}, {9, 66, 33, "i8", "i8", 'v', 's'},
        {7, 129, 70, "u8", "u8", 's', '-'}, {3, 8, 16, "u8", "i8", '-', '-'},
        {20, 70, 40, "u8", "i8", 's', 'v'}, /* M >= 16: B's panels packed */
    };
    rng_state = 5;
    icc_diag d = {{0}};
    cg_target *t;
    ck_assert_msg(cg_target_create(NULL, NULL, NULL, 2, &t, &d) == 0, "%s", d.msg);
    cg_schedule s;
    harness_sched(t, &s);
    s.int8_quads = true;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char *text = mm_graph("", cases[c].m, cases[c].k, cases[c].n, cases[c].adt, cases[c].bdt, cases[c].za,
                              cases[c].zb);
        ir_graph *g = ir_parse(text, strlen(text), "int8.icc", &d);
        ck_assert_msg(g != NULL, "%s", d.msg);
        icc_pipeline p;
        ck_assert_msg(icc_pipeline_parse("shape-infer", &p, &d) == 0, "%s", d.msg);
        ck_assert_msg(icc_pipeline_run(&p, g, NULL, &d) == 0, "%s", d.msg);
        icc_pipeline_free(&p);
        const ir_node *n = g->nodes[g->nnodes - 1];
        ck_assert_int_eq(n->op, IR_OP_MATMUL_INTEGER);
        cg_binding *b = calloc((size_t)g->nvalues, sizeof *b);
        int nb = 0;
        for (int i = 0; i < n->nin; i++)
            if (n->in[i])
                b[n->in[i]->id] = (cg_binding){KIR_BUF_INPUT, nb++, 0};
        b[n->out[0]->id] = (cg_binding){KIR_BUF_OUTPUT, 0, 0};
        kir_kernel *k;
        ck_assert_msg(cg_lower_node(g, n, b, &s, "quads", &k, &d) == 0, "%s", d.msg);
        free(b);
        bool found = false;
        for (int i = 0; i < k->nbufs; i++)
            found = found || !strcmp(k->bufs[i].name, "qa8");
        ck_assert_msg(found, "case %zu: not the quad kernel", c);
        LLVMModuleRef m = LLVMModuleCreateWithNameInContext("q", LLVMGetGlobalContext());
        cg_target_setup_module(t, m);
        LLVMValueRef fn;
        ck_assert_msg(cg_llvm_emit_kernel(t, m, k, &fn, &d) == 0, "%s", d.msg);
        kir_kernel_destroy(k);
        void *lib = harness_load_module(t, m);
        LLVMDisposeModule(m);
        harness_kernel_fn f = (harness_kernel_fn)dlsym(lib, "quads");
        ck_assert_ptr_nonnull(f);
        /* A random, the rest constants */
        ir_tensor a = {0}, want = {0};
        const ir_type *ta = &n->in[0]->type;
        int64_t dims[2] = {ta->dims[0].v, ta->dims[1].v};
        ck_assert_int_eq(ir_tensor_init(&a, ta->dtype, 2, dims, &d), 0);
        a.data = calloc(1, a.nbytes + 1);
        for (int64_t e = 0; e < a.numel; e++)
            ir_tensor_seti(&a, e, rval(cases[c].adt));
        const ir_tensor *inp[4] = {&a};
        void *bufs[16] = {a.data};
        nb = 1;
        for (int i = 1; i < n->nin; i++)
            if (n->in[i]) {
                ck_assert_int_eq(n->in[i]->kind, IR_VAL_CONST);
                inp[i] = &n->in[i]->cval;
                bufs[nb++] = n->in[i]->cval.data;
            }
        ck_assert_msg(ir_eval_node(n, inp, &want, &d) == 0, "%s", d.msg);
        int32_t *got = calloc(1, want.nbytes + 1);
        bufs[nb] = got;
        int64_t syms[2] = {0, 0};
        f(bufs, syms, 0, INT64_MAX);
        const int32_t *w = want.data;
        for (int64_t e = 0; e < want.numel; e++)
            ck_assert_msg(got[e] == w[e], "case %zu: y[%lld] = %d, want %d", c, (long long)e, got[e], w[e]);
        free(got);
        free(want.data);
        free(a.data);
        dlclose(lib);
        ir_graph_destroy(g);
        free(text);
    }
    cg_target_destroy(t);
}
END_TEST

/* Constant B within vpmaddubsw's bound and 16+ rows: the pmaddubsw
 * kernel (u8 x s8 pairs into i16, then vpmaddwd by ones), exact against
 * the interpreter for u8/i8 A and B, zero points, K with tail quads of
 * 1-3 k, B's panels packed or not; on haswell its assembly has
 * vpmaddubsw, and a full-range B (a pair past the bound) keeps vpmaddwd
 * alone. */
START_TEST(pmaddubsw_on_7bit_weights)
{
    static const struct {
        int64_t m, k, n;
        const char *adt, *bdt;
        char za, zb;
    } cases[] = {
        {16, 64, 64, "u8", "i8", 's', 's'}, {20, 37, 19, "u8", "i8", 's', 'v'}, {17, 66, 33, "i8", "i8", 'v', 's'},
        {33, 131, 70, "u8", "u8", 's', '-'}, {64, 300, 257, "i8", "u8", '-', 'v'}, {24, 4, 8, "u8", "i8", '-', '-'},
        {16, 8192, 16, "u8", "i8", 's', 'v'}, /* B's panels too long to pack: the rows read in place */
    };
    rng_state = 6;
    b_7bit = true;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *t = mm_graph("", cases[i].m, cases[i].k, cases[i].n, cases[i].adt, cases[i].bdt, cases[i].za,
                           cases[i].zb);
        check_graph(t);
        free(t);
    }
    char *t = mm_graph("", 32, 64, 64, "u8", "i8", 's', 's');
    char *as = model_asm(t, "haswell", NULL);
    ck_assert_msg(strstr(as, "vpmaddubsw") && strstr(as, "ymm"), "no ymm vpmaddubsw on AVX2 with 7-bit B");
    free(as);
    free(t);
    b_7bit = false;
    t = mm_graph("", 32, 64, 64, "u8", "i8", 's', 's');
    as = model_asm(t, "haswell", NULL);
    ck_assert_msg(!strstr(as, "vpmaddubsw") && strstr(as, "vpmaddwd"), "vpmaddubsw on a full-range B");
    free(as);
    free(t);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("codegen_int8");
    TCase *tc = tcase_create("int8");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, matmul_integer_shapes);
    tcase_add_test(tc, conv_integer_shapes);
    tcase_add_test(tc, pmaddwd_in_the_assembly);
    tcase_add_test(tc, dpbusd_in_the_assembly);
    tcase_add_test(tc, profile_kind_follows_the_target);
    tcase_add_test(tc, quads_through_the_scalar_form);
    tcase_add_test(tc, pmaddubsw_on_7bit_weights);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return icc_run_suite(suite());
}
