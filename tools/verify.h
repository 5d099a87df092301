/* verify.h - what `icc verify` needs beside the driver: inputs made up
 * from a type, and the comparison of a compiled output with the
 * interpreter's. */
#ifndef ICC_TOOLS_VERIFY_H
#define ICC_TOOLS_VERIFY_H

#include "ir/ir.h"

/* Allocates t for a static type and fills it with a fixed pseudo-random
 * pattern from seed: floats uniform in [-1, 1), integers in [0, 4) (valid
 * as small indices), bools 0/1. -1 with d set on a non-static type or
 * out of memory. */
int icc_verify_random_input(ir_tensor *t, const ir_type *type, uint64_t seed, icc_diag *d);

typedef struct icc_verify_diff {
    double max_abs, max_rel;   /* over all elements (NaN == NaN counts as equal) */
    int64_t bad;               /* elements with |got - want| > atol + rtol*|want| */
    bool shape_differs;
} icc_verify_diff;

/* Compares got with want elementwise (as doubles). */
void icc_verify_compare(const ir_tensor *got, const ir_tensor *want, double rtol, double atol,
                        icc_verify_diff *out);

#endif
