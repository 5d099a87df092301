/* test_llvm_kir_ext.c - the LLVM backend on the kernel IR's scratch
 * buffers, lets, barriers, GPU loops and intrinsics: kernels built by hand,
 * compiled, run and compared with the same computation in plain C (a
 * blocked transpose through thread scratch, let-bound values in serial and
 * widened loops, kernel-scope scratch, dpbusd and dpbf16 on random data),
 * the instructions chosen per target feature (assembly for targets with
 * and without VNNI / AVX512-BF16), and the constructs the backend refuses. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check_main.h"
#include "host_cpu.h"
#include "emit_harness.h"

/* Emitting k fails with a message containing want. */
static void emit_fails(kir_kernel *k, const char *want)
{
    LLVMValueRef fn;
    ck_assert_int_eq(cg_llvm_emit_kernel(tgt, mod, k, &fn, &diag), -1);
    ck_assert_msg(strstr(diag.msg, want), "%s", diag.msg);
    ck_assert_ptr_null(LLVMGetNamedFunction(mod, k->name));
    kir_kernel_destroy(k);
}

static uint32_t rng = 12345;
static uint32_t rnd(void)
{
    rng = rng * 1664525u + 1013904223u;
    return rng >> 8;
}

/* y = x^T over 16x16 in 4x4 tiles, each read into thread scratch
 * transposed and written out: parallel over the 16 tiles, the tile origin
 * let-bound. Then s[i] = 2 * (sum_j y[i, j]) + 1 with lets. */
START_TEST(test_scratch_transpose_sum)
{
    kir_kernel *k = kir_kernel_create("tr", NULL);
    int x = buf(k, "x", KIR_BUF_INPUT, IR_F32, 2, (int64_t[]){16, 16});
    int y = buf(k, "y", KIR_BUF_OUTPUT, IR_F32, 2, (int64_t[]){16, 16});
    int t = kir_add_scratch(k, "t", KIR_SPACE_THREAD, IR_F32, 2, (int64_t[]){4, 4});
    ck_assert_int_ge(t, 0);
    int tb = kir_new_var(k), a = kir_new_var(k), b = kir_new_var(k), a2 = kir_new_var(k), b2 = kir_new_var(k);
    kir_stmt *p = kir_for(k, &k->body, tb, I(0), I(16), KIR_PARALLEL, 0);
    kir_expr *r0 = kir_let(k, &p->body, kir_imul(k, kir_op2(k, KIR_DIV, IR_I64, V(tb), I(4)), I(4)));
    kir_expr *c0 = kir_let(k, &p->body, kir_imul(k, kir_op2(k, KIR_REM, IR_I64, V(tb), I(4)), I(4)));
    kir_stmt *la = kir_for(k, &p->body, a, I(0), I(4), KIR_SERIAL, 0);
    kir_stmt *lb = kir_for(k, &la->body, b, I(0), I(4), KIR_SERIAL, 0);
    ck_assert_ptr_nonnull(kir_store(k, &lb->body, t, IDX(V(b), V(a)),
                                    kir_load(k, x, IDX(kir_iadd(k, r0, V(a)), kir_iadd(k, c0, V(b))))));
    kir_stmt *la2 = kir_for(k, &p->body, a2, I(0), I(4), KIR_SERIAL, 0);
    kir_stmt *lb2 = kir_for(k, &la2->body, b2, I(0), I(4), KIR_VECTOR, 4);
    ck_assert_ptr_nonnull(kir_store(k, &lb2->body, y, IDX(kir_iadd(k, c0, V(a2)), kir_iadd(k, r0, V(b2))),
                                    kir_load(k, t, IDX(V(a2), V(b2)))));
    emit(k);

    k = kir_kernel_create("rowsum", NULL);
    int yy = buf(k, "y", KIR_BUF_INPUT, IR_F32, 2, (int64_t[]){16, 16});
    int s = buf(k, "s", KIR_BUF_OUTPUT, IR_F32, 1, (int64_t[]){16});
    int i = kir_new_var(k), j = kir_new_var(k), acc = kir_new_acc(k, IR_F32);
    kir_stmt *li = kir_for(k, &k->body, i, I(0), I(16), KIR_PARALLEL, 0);
    kir_acc_set(k, &li->body, acc, kir_const_f(k, IR_F32, 0));
    kir_stmt *lj = kir_for(k, &li->body, j, I(0), I(16), KIR_SERIAL, 0);
    kir_acc_set(k, &lj->body, acc, kir_op2(k, KIR_ADD, IR_F32, kir_acc(k, acc), kir_load(k, yy, IDX(V(i), V(j)))));
    kir_expr *l = kir_let(k, &li->body, kir_op2(k, KIR_MUL, IR_F32, kir_acc(k, acc), kir_const_f(k, IR_F32, 2)));
    ck_assert_ptr_nonnull(kir_store(k, &li->body, s, IDX(V(i)), kir_op2(k, KIR_ADD, IR_F32, l, kir_const_f(k, IR_F32, 1))));
    emit(k);
    build();

    float xv[256], yv[256], sv[16];
    for (int q = 0; q < 256; q++)
        xv[q] = (float)(rnd() % 1000) / 8.0f;
    memset(yv, 0, sizeof yv);
    void *bt[] = {xv, yv}, *bs[] = {yv, sv};
    /* two thread chunks, as parallel_for would split the tiles */
    get("tr")(bt, NULL, 0, 7);
    get("tr")(bt, NULL, 7, 16);
    get("rowsum")(bs, NULL, 0, 16);
    for (int r = 0; r < 16; r++) {
        float sum = 0;
        for (int c = 0; c < 16; c++) {
            ck_assert_msg(yv[r * 16 + c] == xv[c * 16 + r], "y[%d,%d]", r, c);
            sum += yv[r * 16 + c];
        }
        ck_assert_float_eq(sv[r], sum * 2 + 1);
    }
}
END_TEST

/* A let holding a varying value inside a VECTOR loop the emitter widens
 * (it has an inner loop), with a masked tail: y[j] = sum_k l*w[k] + l,
 * l = 3 x[j]. */
START_TEST(test_let_widened)
{
    kir_kernel *k = kir_kernel_create("lw", NULL);
    int x = buf(k, "x", KIR_BUF_INPUT, IR_F32, 1, (int64_t[]){20});
    int w = buf(k, "w", KIR_BUF_INPUT, IR_F32, 1, (int64_t[]){4});
    int y = buf(k, "y", KIR_BUF_OUTPUT, IR_F32, 1, (int64_t[]){20});
    int j = kir_new_var(k), kk = kir_new_var(k), acc = kir_new_acc(k, IR_F32);
    kir_stmt *lj = kir_for(k, &k->body, j, I(0), I(20), KIR_VECTOR, 8);
    kir_acc_set(k, &lj->body, acc, kir_const_f(k, IR_F32, 0));
    kir_expr *l = kir_let(k, &lj->body, kir_op2(k, KIR_MUL, IR_F32, kir_load(k, x, IDX(V(j))), kir_const_f(k, IR_F32, 3)));
    kir_stmt *lk = kir_for(k, &lj->body, kk, I(0), I(4), KIR_SERIAL, 0);
    kir_acc_set(k, &lk->body, acc, kir_op3(k, KIR_FMA, IR_F32, l, kir_load(k, w, IDX(V(kk))), kir_acc(k, acc)));
    ck_assert_ptr_nonnull(kir_store(k, &lj->body, y, IDX(V(j)), kir_op2(k, KIR_ADD, IR_F32, kir_acc(k, acc), l)));
    emit(k);
    char *ir = cg_emit_llvm_ir(mod);
    ck_assert_msg(strstr(ir, "<8 x float>"), "not widened");
    free(ir);
    build();
    float xv[20], wv[4] = {1, 2, 3, 4}, yv[20];
    for (int q = 0; q < 20; q++)
        xv[q] = (float)q - 7;
    void *b[] = {xv, wv, yv};
    get("lw")(b, NULL, 0, 0);
    for (int q = 0; q < 20; q++) {
        float lv = xv[q] * 3, a = 0;
        for (int r = 0; r < 4; r++)
            a = fmaf(lv, wv[r], a);
        ck_assert_float_eq(yv[q], a + lv);
    }
}
END_TEST

/* Kernel-scope scratch comes through bufs (the model points it into the
 * arena); block scratch and a barrier outside GPU loops need nothing.
 * y[i] = x[i] + x[7 - i] through the scratch. */
START_TEST(test_kernel_scratch_barrier)
{
    kir_kernel *k = kir_kernel_create("ks", NULL);
    int x = buf(k, "x", KIR_BUF_INPUT, IR_I32, 1, (int64_t[]){8});
    int y = buf(k, "y", KIR_BUF_OUTPUT, IR_I32, 1, (int64_t[]){8});
    int s = kir_add_scratch(k, "s", KIR_SPACE_KERNEL, IR_I32, 1, (int64_t[]){8});
    int bs = kir_add_scratch(k, "bs", KIR_SPACE_BLOCK, IR_I32, 1, (int64_t[]){8});
    int i = kir_new_var(k), j = kir_new_var(k), q = kir_new_var(k);
    kir_stmt *l1 = kir_for(k, &k->body, i, I(0), I(8), KIR_SERIAL, 0);
    kir_store(k, &l1->body, s, IDX(V(i)), kir_load(k, x, IDX(kir_op2(k, KIR_SUB, IR_I64, I(7), V(i)))));
    ck_assert_ptr_nonnull(kir_barrier(k, &k->body, KIR_SCOPE_BLOCK));
    kir_stmt *l2 = kir_for(k, &k->body, j, I(0), I(8), KIR_SERIAL, 0);
    kir_store(k, &l2->body, bs, IDX(V(j)), kir_op2(k, KIR_ADD, IR_I32, kir_load(k, s, IDX(V(j))), kir_load(k, x, IDX(V(j)))));
    kir_stmt *l3 = kir_for(k, &k->body, q, I(0), I(8), KIR_SERIAL, 0);
    kir_store(k, &l3->body, y, IDX(V(q)), kir_load(k, bs, IDX(V(q))));
    emit(k);
    build();
    int32_t xv[8] = {1, 2, 3, 4, 5, 6, 7, 8}, yv[8], sv[8];
    void *b[] = {xv, yv, sv, NULL};
    get("ks")(b, NULL, 0, 0);
    for (int r = 0; r < 8; r++) {
        ck_assert_int_eq(sv[r], xv[7 - r]);
        ck_assert_int_eq(yv[r], xv[r] + xv[7 - r]);
    }
}
END_TEST

/* A GPU schedule without barriers runs serially: grid x thread over the
 * elements, block scratch per grid iteration. */
START_TEST(test_gpu_loops_serial)
{
    kir_kernel *k = kir_kernel_create("g", NULL);
    int x = buf(k, "x", KIR_BUF_INPUT, IR_F32, 1, (int64_t[]){64});
    int y = buf(k, "y", KIR_BUF_OUTPUT, IR_F32, 1, (int64_t[]){64});
    int sh = kir_add_scratch(k, "sh", KIR_SPACE_BLOCK, IR_F32, 1, (int64_t[]){16});
    int b = kir_new_var(k), t = kir_new_var(k), t2 = kir_new_var(k);
    kir_stmt *g = kir_for(k, &k->body, b, I(0), I(4), KIR_GRID, 0);
    kir_stmt *th = kir_for(k, &g->body, t, I(0), I(16), KIR_THREAD, 0);
    kir_expr *e = kir_let(k, &th->body, kir_iadd(k, kir_imul(k, V(b), I(16)), V(t)));
    kir_store(k, &th->body, sh, IDX(V(t)), kir_op2(k, KIR_MUL, IR_F32, kir_load(k, x, IDX(e)), kir_load(k, x, IDX(e))));
    kir_stmt *th2 = kir_for(k, &g->body, t2, I(0), I(16), KIR_THREAD, 0);
    kir_store(k, &th2->body, y, IDX(kir_iadd(k, kir_imul(k, V(b), I(16)), V(t2))), kir_load(k, sh, IDX(V(t2))));
    emit(k);
    build();
    float xv[64], yv[64];
    for (int q = 0; q < 64; q++)
        xv[q] = (float)q * 0.5f;
    void *bb[] = {xv, yv, NULL};
    get("g")(bb, NULL, 0, 0);
    for (int q = 0; q < 64; q++)
        ck_assert_float_eq(yv[q], xv[q] * xv[q]);
}
END_TEST

/* dpbusd over n lanes (acc c[r, :], groups of 4 in a[r, :], b[r, :]) for
 * r rows: the kernel, random data, the C reference. */
static kir_kernel *dot_kernel(const char *name, kir_intrin id, int rows, int n)
{
    bool bf = id == KIR_IN_DPBF16;
    int grp = bf ? 2 : 4;
    kir_kernel *k = kir_kernel_create(name, NULL);
    int c = buf(k, "c", KIR_BUF_OUTPUT, bf ? IR_F32 : IR_I32, 2, (int64_t[]){rows, n});
    int a = buf(k, "a", KIR_BUF_INPUT, bf ? IR_BF16 : IR_U8, 2, (int64_t[]){rows, n * grp});
    int b = buf(k, "b", KIR_BUF_INPUT, bf ? IR_BF16 : IR_I8, 2, (int64_t[]){rows, n * grp});
    int r = kir_new_var(k);
    kir_stmt *l = kir_for(k, &k->body, r, I(0), I(rows), KIR_PARALLEL, 0);
    kir_iarg args[3] = {{c, 2, IDX(V(r), I(0)), 0, NULL}, {a, 2, IDX(V(r), I(0)), 0, NULL}, {b, 2, IDX(V(r), I(0)), 0, NULL}};
    ck_assert_ptr_nonnull(kir_intrinsic(k, &l->body, id, n, args));
    return k;
}

static void check_dpbusd(kern_fn f, int rows, int n)
{
    int32_t *c = malloc(sizeof *c * (size_t)(rows * n)), *want = malloc(sizeof *want * (size_t)(rows * n));
    uint8_t *a = malloc((size_t)(rows * n * 4));
    int8_t *b = malloc((size_t)(rows * n * 4));
    for (int i = 0; i < rows * n; i++)
        c[i] = want[i] = (int32_t)(rnd() % 200000) - 100000;
    c[0] = want[0] = INT32_MAX; /* wraps */
    for (int i = 0; i < rows * n * 4; i++) {
        a[i] = (uint8_t)rnd();
        b[i] = (int8_t)rnd();
    }
    a[0] = a[1] = a[2] = a[3] = 255;
    b[0] = b[1] = b[2] = b[3] = 127;
    for (int i = 0; i < rows * n; i++) {
        uint32_t s = (uint32_t)want[i];
        for (int j = 0; j < 4; j++)
            s += (uint32_t)(a[4 * i + j] * b[4 * i + j]);
        want[i] = (int32_t)s;
    }
    void *bufs[] = {c, a, b};
    f(bufs, NULL, 0, rows);
    for (int i = 0; i < rows * n; i++)
        ck_assert_msg(c[i] == want[i], "lane %d: %d, want %d", i, c[i], want[i]);
    free(c);
    free(want);
    free(a);
    free(b);
}

static uint16_t bf16_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16); /* exact: values below have 8 significant bits */
}

static float f32_of_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void check_dpbf16(kern_fn f, int rows, int n)
{
    float *c = malloc(sizeof *c * (size_t)(rows * n)), *want = malloc(sizeof *want * (size_t)(rows * n));
    uint16_t *a = malloc(2 * (size_t)(rows * n * 2)), *b = malloc(2 * (size_t)(rows * n * 2));
    for (int i = 0; i < rows * n; i++)
        c[i] = want[i] = (float)((int)(rnd() % 20001) - 10000) / 64.0f;
    for (int i = 0; i < rows * n * 2; i++) {
        a[i] = bf16_of((float)((int)(rnd() % 255) - 127) / 16.0f);
        b[i] = bf16_of((float)((int)(rnd() % 255) - 127) * 1.5f);
    }
    for (int i = 0; i < rows * n; i++) {
        float p1 = f32_of_bf16(a[2 * i + 1]) * f32_of_bf16(b[2 * i + 1]);
        float p0 = f32_of_bf16(a[2 * i]) * f32_of_bf16(b[2 * i]);
        want[i] = (want[i] + p1) + p0;
    }
    void *bufs[] = {c, a, b};
    f(bufs, NULL, 0, rows);
    for (int i = 0; i < rows * n; i++)
        ck_assert_msg(c[i] == want[i], "lane %d: %.9g, want %.9g", i, c[i], want[i]);
    free(c);
    free(want);
    free(a);
    free(b);
}

/* On this machine's target: VNNI / BF16 instructions where it has them
 * (never otherwise), scalar lanes for the rest; lane counts cover 512-bit
 * chunks, 256-bit ones and a scalar remainder. */
START_TEST(test_dot_intrinsics_run)
{
    emit(dot_kernel("busd37", KIR_IN_DPBUSD, 3, 37));
    emit(dot_kernel("busd5", KIR_IN_DPBUSD, 2, 5));
    emit(dot_kernel("bf21", KIR_IN_DPBF16, 3, 21));
    emit(dot_kernel("bf40", KIR_IN_DPBF16, 1, 40));
    char *as = cg_emit_asm(tgt, mod, &diag);
    ck_assert_ptr_nonnull(as);
    if (!cpu_has("avx512_vnni") && !cpu_has("avx_vnni"))
        ck_assert_msg(!strstr(as, "vpdpbusd"), "vpdpbusd on a target without VNNI");
    if (!cpu_has("avx512_bf16"))
        ck_assert_msg(!strstr(as, "vdpbf16ps"), "vdpbf16ps on a target without AVX512-BF16");
    free(as);
    build();
    check_dpbusd(get("busd37"), 3, 37);
    check_dpbusd(get("busd5"), 2, 5);
    check_dpbf16(get("bf21"), 3, 21);
    check_dpbf16(get("bf40"), 1, 40);
}
END_TEST

/* The assembly for explicit targets: zmm VNNI and BF16 on AVX-512 with
 * both, ymm VEX-encoded VNNI with AVX-VNNI only, none on plain AVX2. */
static char *asm_for(const char *cpu, const char *features)
{
    cg_target *t;
    ck_assert_msg(cg_target_create("x86_64-pc-linux-gnu", cpu, features, 2, &t, &diag) == 0, "%s", diag.msg);
    LLVMModuleRef m = LLVMModuleCreateWithNameInContext("asm", cx);
    cg_target_setup_module(t, m);
    LLVMValueRef fn;
    kir_kernel *ks[2];
    kir_kernel *k1 = dot_kernel("busd", KIR_IN_DPBUSD, 2, 48), *k2 = dot_kernel("bf", KIR_IN_DPBF16, 2, 24);
    ks[0] = k1;
    ks[1] = k2;
    for (int i = 0; i < 2; i++)
        ck_assert_msg(cg_llvm_emit_kernel(t, m, ks[i], &fn, &diag) == 0, "%s", diag.msg);
    kir_kernel_destroy(k1);
    kir_kernel_destroy(k2);
    ck_assert_msg(cg_optimize(t, m, &diag) == 0, "%s", diag.msg);
    char *as = cg_emit_asm(t, m, &diag);
    ck_assert_msg(as != NULL, "%s", diag.msg);
    LLVMDisposeModule(m);
    cg_target_destroy(t);
    return as;
}

START_TEST(test_dot_intrinsics_asm)
{
    char *as = asm_for("x86-64-v4", "+avx512vnni,+avx512bf16");
    ck_assert_msg(strstr(as, "vpdpbusd") && strstr(as, "zmm"), "no zmm vpdpbusd");
    ck_assert_msg(strstr(as, "vdpbf16ps"), "no vdpbf16ps");
    free(as);
    as = asm_for("x86-64-v3", "+avxvnni");
    ck_assert_msg(strstr(as, "{vex}\tvpdpbusd") && strstr(as, "ymm"), "no VEX vpdpbusd: %.3000s", as);
    ck_assert_msg(!strstr(as, "vdpbf16ps"), "vdpbf16ps without avx512bf16");
    free(as);
    as = asm_for("x86-64-v3", NULL);
    ck_assert_msg(!strstr(as, "vpdpbusd") && !strstr(as, "vdpbf16ps"), "VNNI/BF16 on plain AVX2");
    free(as);
}
END_TEST

/* One product on tiles, c (r x 16) = a (r rows of d bytes) times b (d/4
 * rows of 64 bytes: pairs of bf16 or quads of i8 of k per column):
 * amx_config(d, r), amx_zero, two loads, the product into tile 1 (c's rows
 * 16 apart in a [16, 32] buffer, so the window's pitch is the buffer's),
 * the store, amx_release. */
static kir_kernel *amx_kernel(const char *name, kir_intrin op, int d, int r)
{
    bool bf16 = op == KIR_IN_AMX_DPBF16PS;
    kir_kernel *k = kir_kernel_create(name, NULL);
    int c = buf(k, "c", KIR_BUF_OUTPUT, bf16 ? IR_F32 : IR_I32, 2, (int64_t[]){16, 32});
    int a = buf(k, "a", KIR_BUF_INPUT, bf16 ? IR_BF16 : op == KIR_IN_AMX_DPBUSD ? IR_U8 : IR_I8, 2,
                (int64_t[]){16, bf16 ? d / 2 : d});
    int b = buf(k, "b", KIR_BUF_INPUT, bf16 ? IR_BF16 : IR_I8, 2, (int64_t[]){d / 4, bf16 ? 32 : 64});
    kir_intrinsic(k, &k->body, KIR_IN_AMX_CONFIG, kir_amx_config_lanes(d, r), NULL);
    kir_intrinsic(k, &k->body, KIR_IN_AMX_ZERO, 0, (kir_iarg[]){{-1, 0, NULL, 1, NULL}});
    kir_intrinsic(k, &k->body, KIR_IN_AMX_LOAD, 0, (kir_iarg[]){{-1, 0, NULL, 4, NULL}, {a, 2, IDX(I(0), I(0)), 0, NULL}});
    kir_intrinsic(k, &k->body, KIR_IN_AMX_LOAD, 0, (kir_iarg[]){{-1, 0, NULL, 6, NULL}, {b, 2, IDX(I(0), I(0)), 0, NULL}});
    kir_intrinsic(k, &k->body, op, 0, (kir_iarg[]){{-1, 0, NULL, 1, NULL}, {-1, 0, NULL, 4, NULL}, {-1, 0, NULL, 6, NULL}});
    kir_intrinsic(k, &k->body, KIR_IN_AMX_STORE, 0, (kir_iarg[]){{c, 2, IDX(I(0), I(16)), 0, NULL}, {-1, 0, NULL, 1, NULL}});
    ck_assert_ptr_nonnull(kir_intrinsic(k, &k->body, KIR_IN_AMX_RELEASE, 0, NULL));
    return k;
}

/* amx_kernel's bf16 product over 16 x 64 bytes as a parallel loop of two
 * trips, each its own config ... release around a product stored to c's
 * columns 16 p: the emitter runs the pair once per call, around the
 * call's trips. */
static kir_kernel *amx_parallel_kernel(const char *name)
{
    kir_kernel *k = kir_kernel_create(name, NULL);
    int c = buf(k, "c", KIR_BUF_OUTPUT, IR_F32, 2, (int64_t[]){16, 32});
    int a = buf(k, "a", KIR_BUF_INPUT, IR_BF16, 2, (int64_t[]){16, 32});
    int b = buf(k, "b", KIR_BUF_INPUT, IR_BF16, 2, (int64_t[]){16, 32});
    int p = kir_new_var(k);
    kir_stmt *lp = kir_for(k, &k->body, p, I(0), I(2), KIR_PARALLEL, 0);
    /* a statement before the config (as the conv kernel's trip lets): the
     * pair is still hoisted around the loop */
    kir_expr *col = kir_let(k, &lp->body, kir_imul(k, V(p), I(16)));
    kir_intrinsic(k, &lp->body, KIR_IN_AMX_CONFIG, 0, NULL);
    kir_intrinsic(k, &lp->body, KIR_IN_AMX_ZERO, 0, (kir_iarg[]){{-1, 0, NULL, 1, NULL}});
    kir_intrinsic(k, &lp->body, KIR_IN_AMX_LOAD, 0, (kir_iarg[]){{-1, 0, NULL, 4, NULL}, {a, 2, IDX(I(0), I(0)), 0, NULL}});
    kir_intrinsic(k, &lp->body, KIR_IN_AMX_LOAD, 0, (kir_iarg[]){{-1, 0, NULL, 6, NULL}, {b, 2, IDX(I(0), I(0)), 0, NULL}});
    kir_intrinsic(k, &lp->body, KIR_IN_AMX_DPBF16PS, 0, (kir_iarg[]){{-1, 0, NULL, 1, NULL}, {-1, 0, NULL, 4, NULL}, {-1, 0, NULL, 6, NULL}});
    kir_intrinsic(k, &lp->body, KIR_IN_AMX_STORE, 0,
                  (kir_iarg[]){{c, 2, IDX(I(0), col), 0, NULL}, {-1, 0, NULL, 1, NULL}});
    ck_assert_ptr_nonnull(kir_intrinsic(k, &lp->body, KIR_IN_AMX_RELEASE, 0, NULL));
    return k;
}

/* Runs amx_kernel's bf16, i8 x i8 and u8 x i8 products of depth d over r rows and
 * checks them against plain C: bf16 products are exact in f32 and the sums
 * of up to 32 of them small integers here, so exact in any order. */
static void check_amx(int d, int r)
{
    char nb[16], ni[16], nu[16];
    snprintf(nb, sizeof nb, "amxb%dx%d", d, r);
    snprintf(ni, sizeof ni, "amxi%dx%d", d, r);
    snprintf(nu, sizeof nu, "amxu%dx%d", d, r);
    uint16_t ab[16 * 32], bb[16 * 32];
    int8_t ai[16 * 64], bi[16 * 64];
    float cf[16 * 32];
    int32_t ci[16 * 32], cu[16 * 32];
    for (int i = 0; i < 16 * 32; i++) {
        ab[i] = (uint16_t)(0x3f80 + (rnd() % 8) * 0x80);   /* 1, 2, 4, ... 128 */
        bb[i] = (uint16_t)((rnd() & 1) << 15 | (0x3f80 + (rnd() % 4) * 0x80));
    }
    for (int i = 0; i < 16 * 64; i++) {
        ai[i] = (int8_t)(rnd() % 256 - 128);
        bi[i] = (int8_t)(rnd() % 256 - 128);
    }
    memset(cf, 0, sizeof cf);
    memset(ci, 0, sizeof ci);
    memset(cu, 0, sizeof cu);
    void *fb[] = {cf, ab, bb}, *ib[] = {ci, ai, bi}, *ub[] = {cu, ai, bi};   /* a's bytes as u8 for amx_dpbusd */
    get(nb)(fb, NULL, 0, 1);
    get(ni)(ib, NULL, 0, 1);
    get(nu)(ub, NULL, 0, 1);
    for (int m = 0; m < 16; m++)
        for (int n = 0; n < 16; n++) {
            if (m >= r) {   /* below the tile's rows: untouched */
                ck_assert(cf[m * 32 + 16 + n] == 0 && ci[m * 32 + 16 + n] == 0 && cu[m * 32 + 16 + n] == 0);
                continue;
            }
            double wf = 0;
            int32_t wi = 0, wu = 0;
            for (int p = 0; p < d / 4; p++)
                for (int j = 0; j < 2; j++) {
                    uint32_t x = (uint32_t)ab[m * d / 2 + 2 * p + j] << 16, y = (uint32_t)bb[p * 32 + 2 * n + j] << 16;
                    float fx, fy;
                    memcpy(&fx, &x, 4);
                    memcpy(&fy, &y, 4);
                    wf += (double)fx * fy;
                }
            for (int p = 0; p < d / 4; p++)
                for (int j = 0; j < 4; j++) {
                    wi += ai[m * d + 4 * p + j] * bi[p * 64 + 4 * n + j];
                    wu += (uint8_t)ai[m * d + 4 * p + j] * bi[p * 64 + 4 * n + j];
                }
            ck_assert_msg(cf[m * 32 + 16 + n] == (float)wf, "bf16 d %d [%d,%d]: %g, want %g", d, m, n,
                          cf[m * 32 + 16 + n], wf);
            ck_assert_msg(ci[m * 32 + 16 + n] == wi, "int8 d %d [%d,%d]: %d, want %d", d, m, n, ci[m * 32 + 16 + n], wi);
            ck_assert_msg(cu[m * 32 + 16 + n] == wu, "u8 x i8 d %d [%d,%d]: %d, want %d", d, m, n, cu[m * 32 + 16 + n], wu);
            ck_assert(cf[m * 32 + n] == 0 && ci[m * 32 + n] == 0);   /* left of the window: untouched */
        }
}

/* AMX on this machine where it has it (tiles of the default depth and of
 * 32 bytes), refused where it has not; and the instructions in the
 * assembly for sapphirerapids. */
START_TEST(test_amx)
{
    if (!cpu_has("amx_tile") || !cpu_has("amx_bf16") || !cpu_has("amx_int8")) {
        emit_fails(amx_kernel("amxb", KIR_IN_AMX_DPBF16PS, 64, 16), "intrinsic amx_config needs the target feature amx-tile");
    } else {
        static const int shapes[3][2] = {{64, 16}, {32, 16}, {8, 7}};
        for (int i = 0; i < 3; i++) {
            static const kir_intrin ops[3] = {KIR_IN_AMX_DPBF16PS, KIR_IN_AMX_DPBSSD, KIR_IN_AMX_DPBUSD};
            for (int o = 0; o < 3; o++) {
                char nm[16];
                snprintf(nm, sizeof nm, "amx%c%dx%d", "biu"[o], shapes[i][0], shapes[i][1]);
                emit(amx_kernel(nm, ops[o], shapes[i][0], shapes[i][1]));
            }
        }
        emit(amx_parallel_kernel("amxpar"));
        build();
        /* Linux hands out the tile state only on request (the runtime's
         * icc_cpu_enable does this when a library needs AMX) */
        ck_assert_int_eq(syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */), 0);
        for (int i = 0; i < 3; i++)
            check_amx(shapes[i][0], shapes[i][1]);
        /* both trips in one call: the same product in both halves of c
         * (the hoisted configuration holds for the second trip too) */
        uint16_t a2[16 * 32], b2[16 * 32];
        float c2[16 * 32];
        for (int i = 0; i < 16 * 32; i++) {
            a2[i] = (uint16_t)(0x3f80 + (rnd() % 8) * 0x80);
            b2[i] = (uint16_t)(0x3f80 + (rnd() % 4) * 0x80);
        }
        void *pb[] = {c2, a2, b2};
        get("amxpar")(pb, NULL, 0, 2);
        for (int m = 0; m < 16; m++)
            for (int n = 0; n < 16; n++)
                ck_assert_msg(c2[m * 32 + n] == c2[m * 32 + 16 + n] && c2[m * 32 + n] > 0, "[%d,%d]: %g, %g", m, n,
                              c2[m * 32 + n], c2[m * 32 + 16 + n]);
    }
    kir_kernel *bad = amx_kernel("bad", KIR_IN_AMX_DPBF16PS, 64, 16);
    bad->body.s[0]->lanes = 30;
    emit_fails(bad, "amx_config(30, 0): the operand tiles' depth must be");
    bad = amx_kernel("bad", KIR_IN_AMX_DPBF16PS, 64, 16);
    bad->body.s[0]->lanes = 17 << 8;
    emit_fails(bad, "amx_config(0, 17): the operand tiles' depth must be");
    cg_target *t;
    ck_assert_msg(cg_target_create("x86_64-pc-linux-gnu", "sapphirerapids", NULL, 2, &t, &diag) == 0, "%s", diag.msg);
    LLVMModuleRef m = LLVMModuleCreateWithNameInContext("asm", cx);
    cg_target_setup_module(t, m);
    LLVMValueRef fn;
    for (int i = 0; i < 3; i++) {
        static const kir_intrin ops[3] = {KIR_IN_AMX_DPBF16PS, KIR_IN_AMX_DPBSSD, KIR_IN_AMX_DPBUSD};
        kir_kernel *k = amx_kernel(i == 2 ? "u" : i ? "i" : "b", ops[i], 64, 16);
        ck_assert_msg(cg_llvm_emit_kernel(t, m, k, &fn, &diag) == 0, "%s", diag.msg);
        kir_kernel_destroy(k);
    }
    /* the parallel kernel: ldtilecfg before its loop's first block, tilerelease after its exit */
    LLVMModuleRef mp = LLVMModuleCreateWithNameInContext("par", cx);
    cg_target_setup_module(t, mp);
    kir_kernel *kp = amx_parallel_kernel("par");
    ck_assert_msg(cg_llvm_emit_kernel(t, mp, kp, &fn, &diag) == 0, "%s", diag.msg);
    kir_kernel_destroy(kp);
    char *ir = LLVMPrintValueToString(fn);
    const char *cfg = strstr(ir, "@llvm.x86.ldtilecfg"), *loop = strstr(ir, "\nloop"), *dp = strstr(ir, "@llvm.x86.tdpbf16ps");
    const char *done = strstr(ir, "\ndone"), *rel = strstr(ir, "@llvm.x86.tilerelease");
    ck_assert_msg(cfg && loop && dp && done && rel && cfg < loop && loop < dp && dp < done && done < rel &&
                  !strstr(cfg + 1, "@llvm.x86.ldtilecfg") && !strstr(rel + 1, "@llvm.x86.tilerelease"), "%s", ir);
    LLVMDisposeMessage(ir);
    LLVMDisposeModule(mp);
    char *as = cg_emit_asm(t, m, &diag);
    ck_assert_msg(as != NULL, "%s", diag.msg);
    static const char *const want[] = {"ldtilecfg", "tilezero\t%tmm1", "tileloadd", "tdpbf16ps\t%tmm6, %tmm4, %tmm1",
                                       "tdpbssd\t%tmm6, %tmm4, %tmm1", "tdpbusd\t%tmm6, %tmm4, %tmm1", "tilestored",
                                       "tilerelease"};
    for (int i = 0; i < 8; i++)
        ck_assert_msg(strstr(as, want[i]), "no %s in %.2000s", want[i], as);
    free(as);
    LLVMDisposeModule(m);
    cg_target_destroy(t);
}
END_TEST

/* What the backend refuses, with the reason in the message. */
START_TEST(test_refused)
{
    /* a barrier inside GPU loops: serial iterations would not wait */
    kir_kernel *k = kir_kernel_create("gb", NULL);
    int y = buf(k, "y", KIR_BUF_OUTPUT, IR_F32, 1, (int64_t[]){16});
    int b = kir_new_var(k), t = kir_new_var(k);
    kir_stmt *g = kir_for(k, &k->body, b, I(0), I(1), KIR_GRID, 0);
    kir_stmt *th = kir_for(k, &g->body, t, I(0), I(16), KIR_THREAD, 0);
    kir_store(k, &th->body, y, IDX(V(t)), kir_const_f(k, IR_F32, 0));
    kir_barrier(k, &th->body, KIR_SCOPE_BLOCK);
    emit_fails(k, "a grid loop with a barrier inside needs a GPU backend");

    k = kir_kernel_create("mma", NULL);
    int d = buf(k, "d", KIR_BUF_OUTPUT, IR_F32, 1, (int64_t[]){4});
    int a = buf(k, "a", KIR_BUF_INPUT, IR_F16, 2, (int64_t[]){16, 16});
    kir_iarg ma[3] = {{d, 1, IDX(I(0)), 0, NULL}, {a, 2, IDX(I(0), I(0)), 0, NULL}, {a, 2, IDX(I(0), I(0)), 0, NULL}};
    kir_intrinsic(k, &k->body, KIR_IN_MMA_SYNC, 1, ma);
    emit_fails(k, "intrinsic mma_sync is a CUDA warp operation");

    k = kir_kernel_create("big", NULL);
    int s = kir_add_scratch(k, "huge", KIR_SPACE_THREAD, IR_F32, 1, (int64_t[]){1 << 20});
    kir_store(k, &k->body, s, IDX(I(0)), kir_const_f(k, IR_F32, 0));
    emit_fails(k, "thread and block scratch exceed");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("llvm_kir_ext");
    TCase *tc = tcase_create("kir_ext");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, emit_setup, emit_teardown);
    tcase_add_test(tc, test_scratch_transpose_sum);
    tcase_add_test(tc, test_let_widened);
    tcase_add_test(tc, test_kernel_scratch_barrier);
    tcase_add_test(tc, test_gpu_loops_serial);
    tcase_add_test(tc, test_dot_intrinsics_run);
    tcase_add_test(tc, test_dot_intrinsics_asm);
    tcase_add_test(tc, test_amx);
    tcase_add_test(tc, test_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return icc_run_suite(suite());
}
