/* elementwise_cast.c - Cast and CastLike: the shape function (the target
 * dtype from the ONNX code in `to`, or from input 1) and the reference
 * conversion between every pair of our dtypes, each value rounded once:
 *   float -> float: round to nearest even (inf when out of range);
 *   float -> int:   truncate toward zero; NaN -> 0; out-of-range values
 *                   saturate (ONNX leaves them undefined);
 *   float -> bool:  x != 0 (NaN -> true, -0 -> false);
 *   int   -> int:   keep the low bits (two's complement wraparound);
 *   int   -> float: round to nearest even;
 *   int   -> bool:  x != 0;  bool -> anything: 0 or 1.
 * `saturate` only concerns float8 targets, which we do not have. */
#include "ir/ref/elementwise.h"

#include <math.h>
#include <string.h>

/* Output: input 0's shape in the target dtype. */
int shape_cast(ir_shape_ctx *c)
{
    const ir_node *n = c->node;
    if (!c->in[0])
        return ir_node_errorf(c->diag, n, "input 0 is missing");
    ir_dtype to;
    if (n->op == IR_OP_CAST_LIKE) {
        if (c->nin < 2 || !c->in[1])
            return ir_node_errorf(c->diag, n, "input 1 is missing");
        to = c->in[1]->dtype;
    } else {
        const ir_attr *a = ir_node_attr(n, "to");
        if (!a || a->kind != IR_ATTR_INT)
            return ir_node_errorf(c->diag, n, "needs the int attribute 'to'");
        int code = a->i >= 0 && a->i <= 1000 ? (int)a->i : -1;
        to = ir_dtype_from_onnx(code);
        if (to == IR_UNDEF)
            return ir_node_errorf(c->diag, n, "cannot cast to %s (ONNX dtype %lld): not supported",
                                  ir_onnx_dtype_name(code), (long long)a->i);
    }
    c->out[0] = *c->in[0];
    c->out[0].dtype = to;
    return 0;
}

/* An integer magnitude as a double rounded to odd (53 bits, the last one
 * set when bits were dropped), so rounding it once more to f16/bf16 is
 * correct. */
static double u64_to_double_odd(uint64_t m)
{
    if (m >> 53 == 0)
        return (double)m;
    int drop = 64 - __builtin_clzll(m) - 53;
    uint64_t kept = (m >> drop) | ((m & ((UINT64_C(1) << drop) - 1)) != 0);
    return ldexp((double)kept, drop);
}

/* Stores the integer v (an int64, or a uint64 when is_unsigned) into a
 * float tensor. f32 and f64 use C's conversion, which rounds once. */
static void set_float_from_int(ir_tensor *t, int64_t i, int64_t v, bool is_unsigned)
{
    uint64_t u = (uint64_t)v;
    switch (t->dtype) {
    case IR_F32: ((float *)t->data)[i] = is_unsigned ? (float)u : (float)v; return;
    case IR_F64: ((double *)t->data)[i] = is_unsigned ? (double)u : (double)v; return;
    default: {
        bool neg = !is_unsigned && v < 0;
        double d = u64_to_double_odd(neg ? 0 - u : u);
        ew_setf(t, i, neg ? -d : d);
        return;
    }
    }
}

int ref_cast(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    ir_tensor *o = c->out[0];
    if (x->dtype == o->dtype) {
        if (x->nbytes)
            memcpy(o->data, x->data, x->nbytes);
        return 0;
    }
    ew_class from = ew_class_of(x->dtype);
    bool to_float = ir_dtype_is_float(o->dtype);
    for (int64_t i = 0; i < x->numel; i++) {
        if (from == EW_FLOAT)
            ew_setf(o, i, ir_tensor_getf(x, i));
        else if (to_float)
            set_float_from_int(o, i, ir_tensor_geti(x, i), from == EW_UNSIGNED);
        else
            ir_tensor_seti(o, i, ir_tensor_geti(x, i));
    }
    return 0;
}
