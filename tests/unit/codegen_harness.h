/* codegen_harness.h - what the code generator's tests share: a module of
 * kernels turned into a loaded .so, a whole graph compiled into a model
 * .so, and compiled outputs checked against the reference interpreter's.
 * Header-only, for tests/unit/test_codegen_*.c. */
#ifndef ICC_TESTS_CODEGEN_HARNESS_H
#define ICC_TESTS_CODEGEN_HARNESS_H

#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "codegen/llvm/target.h"
#include "codegen/schedule.h"
#include "codegen/llvm/model.h"
#include "ir/ir.h"

/* A kernel as the LLVM backend compiles it (codegen/kir.h). */
typedef void (*harness_kernel_fn)(void *const *bufs, const int64_t *syms, int64_t begin, int64_t end);

/* Optimizes m, emits and links it into a temporary .so, loads it and
 * removes the files; the caller dlcloses the handle and still owns m. */
/* t's schedule, in storage the caller provides. */
static inline const cg_schedule *harness_sched(const cg_target *t, cg_schedule *s)
{
    icc_diag d = {{0}};
    ck_assert_msg(cg_schedule_init(s, cg_target_desc(t), &d) == 0, "%s", d.msg);
    return s;
}

static inline void *harness_load_module(const cg_target *t, LLVMModuleRef m)
{
    icc_diag d = {{0}};
    char dir[] = "/tmp/icc_cg_XXXXXX", obj[64], so[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(obj, sizeof obj, "%s/k.o", dir);
    snprintf(so, sizeof so, "%s/k.so", dir);
    ck_assert_msg(cg_optimize(t, m, &d) == 0, "%s", d.msg);
    ck_assert_msg(cg_emit_object(t, m, obj, &d) == 0, "%s", d.msg);
    const char *objs[] = {obj}, *libs[] = {"-lm"};
    ck_assert_msg(cg_link_shared(objs, 1, libs, 1, so, &d) == 0, "%s", d.msg);
    void *lib = dlopen(so, RTLD_NOW);
    ck_assert_msg(lib != NULL, "%s", dlerror());
    unlink(obj);
    unlink(so);
    rmdir(dir);
    return lib;
}

/* Compiles the whole graph g (optimized and planned) into the model .so
 * at path so; 0, or -1 with d set. */
static inline int harness_build_model(const ir_graph *g, const char *so, icc_diag *d)
{
    cg_target *t;
    ck_assert_msg(cg_target_create(NULL, NULL, NULL, 2, &t, d) == 0, "%s", d->msg);
    LLVMModuleRef m;
    int rc = cg_compile_model(g, t, NULL, &m, d);
    if (rc == 0) {
        char obj[512];
        snprintf(obj, sizeof obj, "%s.o", so);
        rc = cg_optimize(t, m, d) < 0 || cg_emit_object(t, m, obj, d) < 0 ? -1 : 0;
        if (rc == 0) {
            const char *objs[] = {obj}, *libs[] = {"-lm"};
            rc = cg_link_shared(objs, 1, libs, 1, so, d);
        }
        unlink(obj);
        LLVMDisposeModule(m);
    }
    cg_target_destroy(t);
    return rc;
}

/* got matches want: floats within atol + rtol*|want| (NaN matches NaN, an
 * infinity only itself), everything else exactly; what names the case. */
static inline void harness_expect_close(const ir_tensor *got, const ir_tensor *want, double rtol, double atol,
                                        const char *what)
{
    ck_assert_int_eq(got->numel, want->numel);
    for (int64_t i = 0; i < got->numel; i++) {
        if (ir_dtype_is_float(got->dtype)) {
            double a = ir_tensor_getf(got, i), b = ir_tensor_getf(want, i);
            bool ok = isnan(b) ? isnan(a) : isinf(b) ? a == b : fabs(a - b) <= atol + rtol * fabs(b);
            ck_assert_msg(ok, "%s, element %lld: %.9g, want %.9g", what, (long long)i, a, b);
        } else {
            ck_assert_msg(ir_tensor_geti(got, i) == ir_tensor_geti(want, i), "%s, element %lld: %lld, want %lld",
                          what, (long long)i, (long long)ir_tensor_geti(got, i), (long long)ir_tensor_geti(want, i));
        }
    }
}

#endif
