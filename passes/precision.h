/* precision.h - the numeric precision a model is compiled at.
 *
 * `--precision=P` picks how contractions store and read their weights:
 * fp32 (as imported), bf16/fp16 (weights stored as half-precision
 * constants, accumulation in f32; passes/precision.c), int8 and
 * int8-dynamic (integer kernels; passes/quantize.c). The `precision` pass
 * (passes.def) applies the mode the pass options carry; nodes the keep
 * list names, and by default softmax, the norms and the last contraction
 * before a graph output, stay fp32. docs/precision.md describes it.
 */
#ifndef ICC_PRECISION_H
#define ICC_PRECISION_H

#include <stdbool.h>
#include "ir/ir.h"
#include "ir/ops.h"

typedef enum icc_precision { ICC_PREC_FP32, ICC_PREC_BF16, ICC_PREC_FP16, ICC_PREC_INT8, ICC_PREC_INT8_DYNAMIC } icc_precision;

typedef struct icc_calibration icc_calibration;   /* activation ranges, defined by the int8 helper (passes/calibrate.h) */

/* What the driver asks for (borrowed by the passes; the caller owns the
 * strings and the calibration). */
typedef struct icc_precision_opts {
    icc_precision mode;
    const char *keep;        /* --keep-fp32: comma-separated op types and node names kept in fp32 (NULL: none) */
    bool no_default_keep;    /* --no-default-keep: drop the default keep list (softmax, norms, the last layer) */
    const icc_calibration *calib;  /* int8 (static): ranges from --calibrate (NULL otherwise) */
} icc_precision_opts;

/* Parses "fp32|bf16|fp16|int8|int8-dynamic" into *out; 0, or -1 with d
 * naming the text and the accepted names. */
int icc_precision_parse(const char *text, icc_precision *out, icc_diag *d);
/* The name icc_precision_parse accepts for p (a static string). */
const char *icc_precision_name(icc_precision p);
/* True when node n of g stays fp32: its op type or name is in o->keep,
 * or (unless o->no_default_keep) it is a normalization or softmax
 * (IR_F_NORM), or a contraction some graph output is reached from
 * without passing another contraction (the last layer). o may be NULL
 * (nothing kept). */
bool icc_precision_keeps(const icc_precision_opts *o, const ir_graph *g, const ir_node *n);

/* Input i of n is read narrow (what the bf16/fp16 rewrite makes): a
 * weight (n a MatMul, Gemm, Conv or ConvNCHWc, i = 1, the input the
 * result of Cast(to=f32) of a bf16 or f16 constant), an activation (n a
 * MatMul or Gemm, i = 0, the input a Cast(to=f32) of any bf16 or f16
 * value) or an Attention's Q, K or V (i < 3, a Cast(to=f32) of a bf16
 * value; one output, no cache). The fuse pass puts such a Cast in n's kernel, which converts as
 * it loads. */
bool icc_precision_half_weight(const ir_node *n, int i);
/* Whether a fused group whose root has dtype root may be anchored by
 * `anchor` of another output dtype: any root over an integer ConvNCHWc or
 * a MatMulInteger (i32 sums, requantized in the epilogue), or a bf16 root
 * over an f32 contraction
 * that the pack-b pass gave bf16 pairs (packed_k = 2), whose pair kernel
 * keeps the sums in registers and rounds them once at the store, so the
 * group may write the next contraction's bf16 activation itself. Shared
 * by the fuse pass and the lowering (codegen/lower/lower.c), which must
 * agree on it (header only: the codegen library does not link the
 * passes). */
static inline bool icc_precision_narrow_root(const ir_node *anchor, ir_dtype root)
{
    if (anchor->nout != 1)
        return false;
    /* or any root over the integer ConvNCHWc (the layout pass's blocked
     * ConvInteger) or MatMulInteger: their kernels keep the i32 sums in
     * registers and the epilogue requantizes them (to u8, typically) at
     * the store */
    if ((anchor->op == IR_OP_CONV_NCHWC || anchor->op == IR_OP_MATMUL_INTEGER) &&
        anchor->out[0]->type.dtype == IR_I32)
        return true;
    return root == IR_BF16 && anchor->out[0]->type.dtype == IR_F32 && ir_attr_int(anchor, "packed_k", 1) == 2;
}

typedef struct pass_ctx pass_ctx;
/* The constant value of v when a short chain of nodes computes it from
 * constants only (at most *budget nodes, single-output each): what fold
 * leaves for its size (the onnx package's light models make their weights
 * with ConstantOfShape, and layout reorders them), evaluated so a weight
 * can be stored narrow or quantized. v itself when constant; NULL when it
 * is not computed from constants, or on error (*err set, with c's diag). */
ir_value *icc_precision_materialize(pass_ctx *c, ir_value *v, int *budget, bool *err);
/* The int8 and int8-dynamic rewrite (passes/quantize.c). */
int precision_int8(pass_ctx *c, const icc_precision_opts *o);

#endif
