/* elementwise.h - helpers shared by the elementwise kernel files
 * (ir/ref/elementwise*.c) and nothing else. */
#ifndef ICC_REF_ELEMENTWISE_H
#define ICC_REF_ELEMENTWISE_H

#include "ir/ref/ref.h"

/* How a kernel computes on a dtype: floats in double, signed integers in
 * int64, unsigned integers and bool in uint64 (results wrap on store). */
typedef enum ew_class { EW_FLOAT, EW_SIGNED, EW_UNSIGNED } ew_class;

ew_class ew_class_of(ir_dtype t);

/* v rounded to float with round-to-odd: an inexact result gets its last
 * bit set, so a second rounding to f16/bf16 (<= 22 bits) is correct as if
 * v had been rounded once. */
float ew_float_odd(double v);

/* Stores the double v into element i of t, rounding once to t's dtype:
 * floats round to nearest even; integers truncate toward zero, saturate
 * at the dtype's limits and take 0 for NaN; bool is v != 0. */
void ew_setf(ir_tensor *t, int64_t i, double v);

/* Validates a unary op's attributes (Gelu's approximate...); 0 or -1 with
 * a node-located message. */
int ew_unary_check(const ir_node *n, icc_diag *d);

/* -1 with "input dtype X is not supported (expects CLASS)" unless the
 * op accepts dtype t (undef is accepted: not known yet). */
int ew_check_accepts(ir_shape_ctx *c, ir_dtype t);

#endif
