/* quant.h - the rules of the quantization ops (ir/ref/quant.c) that the
 * lowering pass (passes/quant.c) must reproduce exactly. */
#ifndef ICC_REF_QUANT_H
#define ICC_REF_QUANT_H

#include "ir/ops.h"

/* The dtype QuantizeLinear divides x by y_scale in (x and y_scale of
 * dtypes x and s): its `precision` attribute if given, else the type
 * numpy promotes them to, as the ONNX reference computes (f32 for f32
 * with anything narrower, the half type when both are it, f64 when either
 * is i32). 0, or -1 with a node-located message for a bad `precision`. */
int quant_precision(const ir_node *n, icc_diag *d, ir_dtype x, ir_dtype s, ir_dtype *p);

#endif
