/* emit_harness.h - what the kernel-emission tests share: a fixture that
 * makes a host target, an LLVM module and a scratch folder per test
 * (emit_setup / emit_teardown), emitting hand-built kernels into the
 * module, building it into a loaded .so, looking kernels up, and small
 * builders for buffers and index lists. One copy per test file (static
 * state): each file is its own test program. */
#ifndef ICC_TEST_EMIT_HARNESS_H
#define ICC_TEST_EMIT_HARNESS_H

#include <check.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "codegen/kir.h"
#include "codegen/llvm/emit.h"
#include "codegen/llvm/target.h"

typedef void (*kern_fn)(void *const *bufs, const int64_t *syms, int64_t begin, int64_t end);

static char dir[64];
static cg_target *tgt;
static LLVMContextRef cx;
static LLVMModuleRef mod;
static void *lib;
static icc_diag diag;

static inline void emit_setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/icc_emit_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(cg_target_create(NULL, NULL, NULL, 2, &tgt, &diag), 0);
    cx = LLVMContextCreate();
    mod = LLVMModuleCreateWithNameInContext("test", cx);
    cg_target_setup_module(tgt, mod);
    lib = NULL;
}

static inline void emit_teardown(void)
{
    if (lib)
        dlclose(lib);
    if (mod)
        LLVMDisposeModule(mod);
    LLVMContextDispose(cx);
    cg_target_destroy(tgt);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Emits k into the module (and destroys k). */
static inline void emit(kir_kernel *k)
{
    LLVMValueRef fn;
    int rc = cg_llvm_emit_kernel(tgt, mod, k, &fn, &diag);
    ck_assert_msg(rc == 0, "emit %s: %s", k->name, diag.msg);
    ck_assert_ptr_nonnull(fn);
    kir_kernel_destroy(k);
}

/* Optimises the module, links it into a .so and loads it. */
static inline void build(void)
{
    char obj[128], so[128];
    snprintf(obj, sizeof obj, "%s/k.o", dir);
    snprintf(so, sizeof so, "%s/k.so", dir);
    ck_assert_msg(cg_optimize(tgt, mod, &diag) == 0, "optimize: %s", diag.msg);
    ck_assert_msg(cg_emit_object(tgt, mod, obj, &diag) == 0, "object: %s", diag.msg);
    const char *objs[] = {obj}, *libs[] = {"-lm"};
    ck_assert_msg(cg_link_shared(objs, 1, libs, 1, so, &diag) == 0, "link: %s", diag.msg);
    lib = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(lib != NULL, "dlopen: %s", dlerror());
}

static inline kern_fn get(const char *name)
{
    kern_fn f;
    *(void **)&f = dlsym(lib, name);
    ck_assert_msg(f != NULL, "no symbol %s", name);
    return f;
}

/* A static type; a negative dim -s is graph symbol s. */
static inline ir_type ty(ir_dtype dt, int rank, const int64_t *dims)
{
    ir_type t = {.dtype = dt, .rank = rank};
    for (int i = 0; i < rank; i++)
        t.dims[i] = dims[i] < 0 ? (ir_dim){0, (int32_t)-dims[i]} : ir_dim_const(dims[i]);
    return t;
}

static inline int buf(kir_kernel *k, const char *name, kir_buf_kind kind, ir_dtype dt, int rank, const int64_t *dims)
{
    ir_type t = ty(dt, rank, dims);
    int b = kir_add_buf(k, name, kind, &t, 0, 0);
    ck_assert_int_ge(b, 0);
    return b;
}

#define I(x) kir_const_i(k, IR_I64, (x))
#define V(v) kir_var(k, (v))
#define IDX(...) ((kir_expr *[]){__VA_ARGS__})

#endif
