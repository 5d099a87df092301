/* verify.c - the pieces of `icc verify` that are not driver plumbing:
 * made-up inputs (a fixed xorshift pattern, so two runs agree) and the
 * error statistics of a compiled output against the interpreter's. */
#include "tools/verify.h"

#include <math.h>
#include <stdlib.h>

int icc_verify_random_input(ir_tensor *t, const ir_type *type, uint64_t seed, icc_diag *d)
{
    if (!ir_type_is_static(type))
        return ir_errorf(d, "the input's shape is not static: pin it with --shape");
    int64_t dims[IR_MAX_RANK];
    for (int i = 0; i < type->rank; i++)
        dims[i] = type->dims[i].v;
    if (ir_tensor_init(t, type->dtype, type->rank, dims, d) < 0)
        return -1;
    if (!(t->data = malloc(t->nbytes + 1)))
        return ir_errorf(d, "out of memory for %zu bytes", t->nbytes);
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull;
    bool fl = ir_dtype_is_float(type->dtype);
    for (int64_t i = 0; i < t->numel; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        if (fl)
            ir_tensor_setf(t, i, (double)(x >> 11) / 4503599627370496.0 - 1.0);
        else
            ir_tensor_seti(t, i, type->dtype == IR_BOOL ? (int64_t)(x >> 63) : (int64_t)(x >> 62));
    }
    return 0;
}

void icc_verify_compare(const ir_tensor *got, const ir_tensor *want, double rtol, double atol,
                        icc_verify_diff *out)
{
    *out = (icc_verify_diff){0};
    if (got->dtype != want->dtype || got->rank != want->rank || got->numel != want->numel) {
        out->shape_differs = true;
        return;
    }
    for (int i = 0; i < got->rank; i++)
        if (got->dims[i] != want->dims[i])
            out->shape_differs = true;
    if (out->shape_differs)
        return;
    for (int64_t i = 0; i < got->numel; i++) {
        double g = ir_tensor_getf(got, i), w = ir_tensor_getf(want, i);
        if (isnan(g) && isnan(w))
            continue;
        double e = fabs(g - w);
        if (isnan(e) || isinf(e)) {
            if (g == w)
                continue;
            e = INFINITY;
        }
        double r = w != 0 ? e / fabs(w) : (e ? INFINITY : 0);
        if (e > out->max_abs)
            out->max_abs = e;
        if (r > out->max_rel)
            out->max_rel = r;
        if (!(e <= atol + rtol * fabs(w)))
            out->bad++;
    }
}
