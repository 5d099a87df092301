/* test_llvm_target.c - the LLVM target plumbing: host and cross target
 * creation (checked against /proc/cpuinfo, never assumed), vector width
 * of the generated code, object emission linked into a .so that is loaded
 * and run, ELF machine of a cross-compiled object, and clean errors for
 * unknown triples, CPUs, features, invalid modules and failed links. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check_main.h"
#include "host_cpu.h"
#include "codegen/llvm/target.h"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/icc_llvm_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Whether the comma-separated list holds name as a whole entry. */
static bool list_has(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)); p += n)
        if ((p == list || p[-1] == ',' || p[-1] == '+') && (p[n] == ',' || p[n] == 0))
            return true;
    return false;
}

/* void add(float *a, const float *b, const float *c, i64 n): a[i] = b[i] + c[i].
 * The pointers are noalias, as the lowering will declare its buffers. */
static LLVMModuleRef build_add(const cg_target *t, LLVMContextRef cx, bool tune)
{
    LLVMModuleRef m = LLVMModuleCreateWithNameInContext("add", cx);
    cg_target_setup_module(t, m);
    LLVMTypeRef f32 = LLVMFloatTypeInContext(cx), i64 = LLVMInt64TypeInContext(cx);
    LLVMTypeRef ptr = LLVMPointerTypeInContext(cx, 0);
    LLVMTypeRef params[] = {ptr, ptr, ptr, i64};
    LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(cx), params, 4, 0);
    LLVMValueRef fn = LLVMAddFunction(m, "add", fty);
    unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
    for (unsigned i = 1; i <= 3; i++)
        LLVMAddAttributeAtIndex(fn, i, LLVMCreateEnumAttribute(cx, noalias, 0));
    if (tune)
        cg_target_tune_function(t, fn);

    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(cx, fn, "entry");
    LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(cx, fn, "loop");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cx, fn, "done");
    LLVMBuilderRef b = LLVMCreateBuilderInContext(cx);
    LLVMPositionBuilderAtEnd(b, entry);
    LLVMValueRef n = LLVMGetParam(fn, 3), zero = LLVMConstInt(i64, 0, 0);
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSGT, n, zero, "any"), loop, done);

    LLVMPositionBuilderAtEnd(b, loop);
    LLVMValueRef i = LLVMBuildPhi(b, i64, "i");
    LLVMValueRef pb = LLVMBuildInBoundsGEP2(b, f32, LLVMGetParam(fn, 1), &i, 1, "pb");
    LLVMValueRef pc = LLVMBuildInBoundsGEP2(b, f32, LLVMGetParam(fn, 2), &i, 1, "pc");
    LLVMValueRef pa = LLVMBuildInBoundsGEP2(b, f32, LLVMGetParam(fn, 0), &i, 1, "pa");
    LLVMValueRef s = LLVMBuildFAdd(b, LLVMBuildLoad2(b, f32, pb, "vb"),
                                   LLVMBuildLoad2(b, f32, pc, "vc"), "s");
    LLVMBuildStore(b, s, pa);
    LLVMValueRef next = LLVMBuildNSWAdd(b, i, LLVMConstInt(i64, 1, 0), "next");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, next, n, "end"), done, loop);
    LLVMValueRef in_vals[] = {zero, next};
    LLVMBasicBlockRef in_blocks[] = {entry, loop};
    LLVMAddIncoming(i, in_vals, in_blocks, 2);

    LLVMPositionBuilderAtEnd(b, done);
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
    return m;
}

/* The asm of add for t, optimised. */
static char *add_asm(const char *triple, const char *cpu, const char *features, bool tune)
{
    icc_diag d = {{0}};
    cg_target *t;
    ck_assert_msg(cg_target_create(triple, cpu, features, 2, &t, &d) == 0, "%s", d.msg);
    LLVMContextRef cx = LLVMContextCreate();
    LLVMModuleRef m = build_add(t, cx, tune);
    ck_assert_msg(cg_optimize(t, m, &d) == 0, "%s", d.msg);
    char *s = cg_emit_asm(t, m, &d);
    ck_assert_msg(s != NULL, "%s", d.msg);
    LLVMDisposeModule(m);
    LLVMContextDispose(cx);
    cg_target_destroy(t);
    return s;
}

START_TEST(host_target)
{
    icc_diag d = {{0}};
    cg_target *t;
    ck_assert_msg(cg_target_create(NULL, NULL, NULL, 2, &t, &d) == 0, "%s", d.msg);
    ck_assert(cg_target_is_host(t));
    ck_assert_str_ne(cg_target_cpu(t), "");
#if defined(__x86_64__)
    ck_assert_ptr_nonnull(strstr(cg_target_triple(t), "x86_64"));
    const char *f = cg_target_features(t), *req = cg_target_required_features(t);
    /* cpuinfo spells a few flags differently from LLVM. */
    static const char *const pairs[][2] = {{"avx", "avx"},           {"avx2", "avx2"},
                                           {"fma", "fma"},           {"f16c", "f16c"},
                                           {"sse4_2", "sse4.2"},     {"avx512f", "avx512f"},
                                           {"avx512bw", "avx512bw"}, {"avx512_vnni", "avx512vnni"},
                                           {"avx512_bf16", "avx512bf16"},
                                           {"avx512_fp16", "avx512fp16"},
                                           {"amx_tile", "amx-tile"}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        bool has = cpu_has(pairs[i][0]);
        if (has)
            ck_assert_msg(list_has(f, pairs[i][1]), "cpuinfo has %s, features lack it",
                          pairs[i][1]);
        ck_assert_msg(list_has(req, pairs[i][1]) == has, "required %s: %s", pairs[i][1], req);
    }
    int want = cpu_has("avx512f") ? 512 : cpu_has("avx") ? 256 : 128;
    ck_assert_int_eq(cg_target_vector_bits(t), want);
    ck_assert_ptr_null(strchr(req, '+'));
    fprintf(stderr, "host: %s cpu=%s vector_bits=%d required=%s\n", cg_target_triple(t),
            cg_target_cpu(t), cg_target_vector_bits(t), req);
#endif
    cg_target_destroy(t);

    /* "native" is the host too; a host CPU with explicit features is not. */
    ck_assert_int_eq(cg_target_create(NULL, "native", NULL, 3, &t, &d), 0);
    ck_assert(cg_target_is_host(t));
    cg_target_destroy(t);
    ck_assert_int_eq(cg_target_create(NULL, NULL, "+sse4.2", 3, &t, &d), 0);
    ck_assert(!cg_target_is_host(t));
    cg_target_destroy(t);
}
END_TEST

START_TEST(vector_width_in_asm)
{
#if defined(__x86_64__)
    icc_diag d = {{0}};
    cg_target *t;
    ck_assert_int_eq(cg_target_create(NULL, NULL, NULL, 2, &t, &d), 0);
    int bits = cg_target_vector_bits(t);
    cg_target_destroy(t);
    char *tuned = add_asm(NULL, NULL, NULL, true);
    char *plain = add_asm(NULL, NULL, NULL, false);
    const char *reg = bits == 512 ? "zmm" : bits == 256 ? "ymm" : "xmm";
    ck_assert_msg(strstr(tuned, reg) != NULL, "no %s in the tuned add", reg);
    ck_assert_ptr_nonnull(strstr(tuned, "vaddps") ? tuned : strstr(tuned, "addps"));
    fprintf(stderr, "host add: tuned uses %s; untuned uses %s\n", reg,
            strstr(plain, "zmm") ? "zmm" : strstr(plain, "ymm") ? "ymm" : "xmm");
    free(tuned);
    free(plain);
#endif
}
END_TEST

START_TEST(x86_64_v2_has_no_wide_vectors)
{
    icc_diag d = {{0}};
    cg_target *t;
    ck_assert_msg(cg_target_create("x86_64-pc-linux-gnu", "x86-64-v2", NULL, 2, &t, &d) == 0,
                  "%s", d.msg);
    ck_assert(!cg_target_is_host(t));
    ck_assert_int_eq(cg_target_vector_bits(t), 128);
    ck_assert_str_eq(cg_target_required_features(t), "sse3,ssse3,sse4.1,sse4.2,popcnt");
    cg_target_destroy(t);

    /* Tuning is a no-op below 512 bits, so ask for it: it must not widen. */
    char *s = add_asm("x86_64-pc-linux-gnu", "x86-64-v2", NULL, true);
    ck_assert_ptr_null(strstr(s, "ymm"));
    ck_assert_ptr_null(strstr(s, "zmm"));
    ck_assert_ptr_nonnull(strstr(s, "addps"));
    ck_assert_ptr_nonnull(strstr(s, "xmm"));
    free(s);

    /* v4 implies AVX-512, and tuned code uses all of it, even cross. */
    ck_assert_int_eq(cg_target_create("x86_64-pc-linux-gnu", "x86-64-v4", NULL, 2, &t, &d), 0);
    ck_assert_int_eq(cg_target_vector_bits(t), 512);
    ck_assert(list_has(cg_target_required_features(t), "avx512f"));
    ck_assert(list_has(cg_target_required_features(t), "avx2"));
    cg_target_destroy(t);
    s = add_asm("x86_64-pc-linux-gnu", "x86-64-v4", NULL, true);
    ck_assert_ptr_nonnull(strstr(s, "zmm"));
    free(s);
    /* Explicit features count: -evex512 leaves 256-bit vectors. */
    ck_assert_int_eq(cg_target_create("x86_64-pc-linux-gnu", "x86-64-v4", "-evex512", 2, &t, &d), 0);
    ck_assert_int_eq(cg_target_vector_bits(t), 256);
    cg_target_destroy(t);
}
END_TEST

typedef void (*add_fn)(float *, const float *, const float *, int64_t);

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

START_TEST(object_links_and_runs)
{
    icc_diag d = {{0}};
    cg_target *t;
    ck_assert_int_eq(cg_target_create(NULL, NULL, NULL, 2, &t, &d), 0);
    LLVMContextRef cx = LLVMContextCreate();
    LLVMModuleRef m = build_add(t, cx, true);
    ck_assert_msg(cg_optimize(t, m, &d) == 0, "%s", d.msg);
    char *ir = cg_emit_llvm_ir(m);
    ck_assert_ptr_nonnull(strstr(ir, "define void @add("));
    ck_assert_ptr_nonnull(strstr(ir, "fadd <"));    /* vectorised */
    free(ir);
    char obj[128], so[128];
    snprintf(obj, sizeof obj, "%s/add.o", dir);
    snprintf(so, sizeof so, "%s/add.so", dir);
    ck_assert_msg(cg_emit_object(t, m, obj, &d) == 0, "%s", d.msg);
    ck_assert_int_eq(access(obj, R_OK), 0);
    const char *objs[] = {obj}, *libs[] = {"-lm"};
    ck_assert_msg(cg_link_shared(objs, 1, libs, 1, so, &d) == 0, "%s", d.msg);
    LLVMDisposeModule(m);
    LLVMContextDispose(cx);
    cg_target_destroy(t);

    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "%s", dlerror());
    add_fn add = (add_fn)dlsym(h, "add");
    ck_assert_ptr_nonnull(add);

    enum { N = 1 << 20 };
    float *a = aligned_alloc(64, N * sizeof(float)), *b = aligned_alloc(64, N * sizeof(float));
    float *c = aligned_alloc(64, N * sizeof(float));
    for (int i = 0; i < N; i++) {
        b[i] = (float)i * 0.5f;
        c[i] = (float)(N - i) * 0.25f;
        a[i] = -1.0f;
    }
    /* An odd count exercises the remainder loop; the rest stays untouched. */
    add(a, b, c, 1003);
    for (int i = 0; i < 1003; i++)
        ck_assert_float_eq(a[i], b[i] + c[i]);
    ck_assert_float_eq(a[1003], -1.0f);
    add(a, b, c, 0);
    add(a, b, c, N);
    for (int i = 0; i < N; i++)
        ck_assert_float_eq(a[i], b[i] + c[i]);

    /* Measured, not asserted: 1M floats (12 MB of traffic per call). */
    int reps = 50;
    double t0 = now();
    for (int r = 0; r < reps; r++)
        add(a, b, c, N);
    double per = (now() - t0) / reps;
    fprintf(stderr, "add O2 1M floats: %.1f us/call, %.2f GB/s, %.2f Gelem/s\n", per * 1e6,
            3.0 * N * sizeof(float) / per / 1e9, N / per / 1e9);
    free(a);
    free(b);
    free(c);
    dlclose(h);
}
END_TEST

START_TEST(cross_aarch64_object)
{
    icc_diag d = {{0}};
    cg_target *t;
    ck_assert_msg(cg_target_create("aarch64-linux-gnu", "generic", NULL, 2, &t, &d) == 0, "%s",
                  d.msg);
    ck_assert(!cg_target_is_host(t));
    ck_assert_str_eq(cg_target_triple(t), "aarch64-unknown-linux-gnu");
    ck_assert_int_eq(cg_target_vector_bits(t), 128);
    ck_assert(list_has(cg_target_required_features(t), "neon"));
    LLVMContextRef cx = LLVMContextCreate();
    LLVMModuleRef m = build_add(t, cx, true);
    ck_assert_msg(cg_optimize(t, m, &d) == 0, "%s", d.msg);
    char obj[128];
    snprintf(obj, sizeof obj, "%s/add_a64.o", dir);
    ck_assert_msg(cg_emit_object(t, m, obj, &d) == 0, "%s", d.msg);
    LLVMDisposeModule(m);
    LLVMContextDispose(cx);
    cg_target_destroy(t);

    unsigned char h[20];
    FILE *f = fopen(obj, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fread(h, 1, sizeof h, f), sizeof h);
    fclose(f);
    ck_assert(!memcmp(h, "\x7f" "ELF", 4));
    ck_assert_int_eq(h[4], 2);                      /* ELFCLASS64 */
    ck_assert_int_eq(h[5], 1);                      /* little endian */
    ck_assert_int_eq(h[16] | h[17] << 8, 1);        /* ET_REL */
    ck_assert_int_eq(h[18] | h[19] << 8, 183);      /* EM_AARCH64 */

    char *s = add_asm("aarch64-linux-gnu", "generic", NULL, true);
    ck_assert_ptr_nonnull(strstr(s, "fadd\tv"));    /* NEON vector add */
    free(s);
}
END_TEST

static void expect_create_error(const char *triple, const char *cpu, const char *features,
                                int opt, const char *needle)
{
    icc_diag d = {{0}};
    cg_target *t = (cg_target *)1;
    ck_assert_int_eq(cg_target_create(triple, cpu, features, opt, &t, &d), -1);
    ck_assert_ptr_null(t);
    ck_assert_ptr_null(strchr(d.msg, '\n'));
    ck_assert_msg(strstr(d.msg, needle) != NULL, "'%s' lacks '%s'", d.msg, needle);
}

START_TEST(bad_targets_error_cleanly)
{
    expect_create_error("foo-bar-baz", NULL, NULL, 2, "foo-bar-baz");
    expect_create_error("riscv64-linux-gnu", NULL, NULL, 2, "unsupported");
    expect_create_error("x86_64-pc-linux-gnu", "notacpu", NULL, 2, "unknown CPU 'notacpu'");
    expect_create_error("x86_64-pc-linux-gnu", "x86-64-v3", "+avx2,+nosuch", 2, "'+nosuch'");
    expect_create_error("aarch64-linux-gnu", "native", NULL, 2, "native");
    expect_create_error(NULL, NULL, NULL, 4, "level 4");
}
END_TEST

START_TEST(invalid_module_is_rejected)
{
    icc_diag d = {{0}};
    cg_target *t;
    ck_assert_int_eq(cg_target_create(NULL, NULL, NULL, 2, &t, &d), 0);
    LLVMContextRef cx = LLVMContextCreate();
    LLVMModuleRef m = LLVMModuleCreateWithNameInContext("bad", cx);
    cg_target_setup_module(t, m);
    LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(cx), NULL, 0, 0);
    LLVMValueRef fn = LLVMAddFunction(m, "f", fty);
    LLVMAppendBasicBlockInContext(cx, fn, "entry");   /* no terminator */
    ck_assert_int_eq(cg_optimize(t, m, &d), -1);
    ck_assert_ptr_nonnull(strstr(d.msg, "invalid LLVM module"));
    ck_assert_ptr_null(strchr(d.msg, '\n'));
    LLVMDisposeModule(m);
    LLVMContextDispose(cx);
    cg_target_destroy(t);
}
END_TEST

static int count_entries(const char *path)
{
    DIR *dp = opendir(path);
    ck_assert_ptr_nonnull(dp);
    int n = 0;
    for (struct dirent *e; (e = readdir(dp));)
        n += e->d_name[0] != '.';
    closedir(dp);
    return n;
}

START_TEST(link_failure_leaves_nothing)
{
    icc_diag d = {{0}};
    char so[128], missing[128];
    snprintf(so, sizeof so, "%s/out.so", dir);
    snprintf(missing, sizeof missing, "%s/missing.o", dir);
    const char *objs[] = {missing};
    ck_assert_int_eq(cg_link_shared(objs, 1, NULL, 0, so, &d), -1);
    ck_assert_ptr_nonnull(strstr(d.msg, "missing.o"));
    ck_assert_ptr_null(strchr(d.msg, '\n'));
    ck_assert_int_ne(access(so, F_OK), 0);
    ck_assert_int_eq(count_entries(dir), 0);
    ck_assert_int_eq(cg_link_shared(objs, 0, NULL, 0, so, &d), -1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("llvm_target");
    TCase *tc = tcase_create("target");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, host_target);
    tcase_add_test(tc, vector_width_in_asm);
    tcase_add_test(tc, x86_64_v2_has_no_wide_vectors);
    tcase_add_test(tc, object_links_and_runs);
    tcase_add_test(tc, cross_aarch64_object);
    tcase_add_test(tc, bad_targets_error_cleanly);
    tcase_add_test(tc, invalid_module_is_rejected);
    tcase_add_test(tc, link_failure_leaves_nothing);
    suite_add_tcase(s, tc);
    return icc_run_suite(s);
}
