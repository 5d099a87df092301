/* movement_gen.c - ops that generate or pass tensors through rather than
 * rearrange them: Shape, Size, ConstantOfShape, Range, Dropout (inference
 * only) and EyeLike. Shape and Size give only the output type here; their
 * values come from the kernels, which constant folding runs once the
 * input shape is static. */
#include "ir/ref/movement.h"

#include <math.h>
#include <string.h>

int ir_mv_check_size(ir_shape_ctx *c, const ir_type *t)
{
    int64_t p = 1;
    for (int i = 0; t->rank > 0 && i < t->rank; i++) {
        ir_dim d = t->dims[i];
        if (ir_dim_is_const(d) && d.v == 0)
            return 0;
        if (ir_dim_is_const(d) && !ir_mul_ok(p, d.v, &p))
            p = INT64_MAX;
    }
    int64_t bytes;
    if (!ir_mul_ok(p, (int64_t)ir_dtype_size(t->dtype), &bytes) || bytes > IR_MAX_TENSOR_BYTES)
        return ir_node_errorf(c->diag, c->node, "output of %s elements is too large",
                              p == INT64_MAX ? "overflowing" : "that many");
    return 0;
}

/* ---- Shape, Size ------------------------------------------------------------ */

void ir_shape_op_bounds(const ir_node *n, int rank, int *s, int *e)
{
    int64_t a = ir_attr_int(n, "start", 0), b = rank;
    const ir_attr *ea = ir_node_attr(n, "end");
    if (ea && ea->kind == IR_ATTR_INT)
        b = ea->i;
    if (a < 0)
        a += rank;
    if (b < 0)
        b += rank;
    a = a < 0 ? 0 : a > rank ? rank : a;
    b = b < 0 ? 0 : b > rank ? rank : b;
    *s = (int)a;
    *e = (int)(b > a ? b : a);
}

int shape_shape(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    ir_type *o = &c->out[0];
    ir_type_unknown(o, IR_I64, 1);
    if (x->rank >= 0) {
        int s, e;
        ir_shape_op_bounds(c->node, x->rank, &s, &e);
        o->dims[0] = ir_dim_const(e - s);
    }
    return 0;
}

int ref_shape(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    int s, e;
    ir_shape_op_bounds(c->node, x->rank, &s, &e);
    if (c->out[0]->numel != e - s || c->out[0]->dtype != IR_I64)
        return ir_node_errorf(c->diag, c->node, "output does not match the input's rank");
    for (int i = s; i < e; i++)
        ((int64_t *)c->out[0]->data)[i - s] = x->dims[i];
    return 0;
}

int shape_size(ir_shape_ctx *c)
{
    ir_type_unknown(&c->out[0], IR_I64, 0);
    return 0;
}

int ref_size(ir_ref_ctx *c)
{
    *(int64_t *)c->out[0]->data = c->in[0]->numel;
    return 0;
}

/* ---- ConstantOfShape ---------------------------------------------------------- */

/* The fill value: the `value` attribute (one element, any dtype) or f32 0. */
static int cos_value(ir_shape_ctx *c, const ir_tensor **v)
{
    const ir_attr *a = ir_node_attr(c->node, "value");
    *v = NULL;
    if (!a)
        return 0;
    if (a->kind != IR_ATTR_TENSOR || !a->tensor || a->tensor->numel != 1)
        return ir_node_errorf(c->diag, c->node, "value must be a one-element tensor");
    *v = a->tensor;
    return 0;
}

int shape_constant_of_shape(ir_shape_ctx *c)
{
    const ir_tensor *v, *sv = c->val[0];
    ir_type *o = &c->out[0];
    if (cos_value(c, &v) < 0 || ir_mv_check_int(c, 0, "shape") < 0)
        return -1;
    ir_dtype dt = v ? v->dtype : IR_F32;
    const ir_type *st = c->in[0];
    if (st->rank >= 0 && st->rank != 1)
        return ir_node_errorf(c->diag, c->node, "shape must be 1-D, got rank %d", st->rank);
    const ir_shape_value *sd = sv ? NULL : ir_mv_sval(c, 0, IR_MAX_RANK);
    if (sd) {
        /* a shape value (ir/shapeval.c): its symbols become the dims */
        ir_type_unknown(o, dt, sd->n);
        for (int i = 0; i < sd->n; i++) {
            if (sd->e[i].sym == 0 && sd->e[i].v < 0)
                return ir_node_errorf(c->diag, c->node, "shape[%d] = %lld is negative", i,
                                      (long long)sd->e[i].v);
            o->dims[i] = sd->e[i];
        }
        return ir_mv_check_size(c, o);
    }
    if (!sv) {
        int64_t n = mv_len_1d(st);
        if (n > IR_MAX_RANK)
            return ir_node_errorf(c->diag, c->node, "output rank %lld exceeds %d",
                                  (long long)n, IR_MAX_RANK);
        ir_type_unknown(o, dt, n < 0 ? IR_RANK_UNKNOWN : (int)n);
        return 0;
    }
    int64_t d[IR_MAX_RANK];
    int n = ir_mv_read_ints(c, sv, "shape", d, IR_MAX_RANK, false);
    if (n < 0)
        return -1;
    ir_type_unknown(o, dt, n);
    for (int i = 0; i < n; i++) {
        if (d[i] < 0)
            return ir_node_errorf(c->diag, c->node, "shape[%d] = %lld is negative", i,
                                  (long long)d[i]);
        o->dims[i] = ir_dim_const(d[i]);
    }
    return ir_mv_check_size(c, o);
}

int ref_constant_of_shape(ir_ref_ctx *c)
{
    ir_shape_ctx s = mv_err_ctx(c);
    const ir_tensor *v;
    ir_tensor *y = c->out[0];
    if (cos_value(&s, &v) < 0)
        return -1;
    if (!v) {
        memset(y->data, 0, y->nbytes);
        return 0;
    }
    if (v->dtype != y->dtype)
        return ir_node_errorf(c->diag, c->node, "output dtype does not match the value");
    size_t esz = ir_dtype_size(y->dtype);
    for (int64_t i = 0; i < y->numel; i++)
        memcpy((char *)y->data + (size_t)i * esz, v->data, esz);
    return 0;
}

/* ---- Range ---------------------------------------------------------------------- */

/* An integer scalar input as a 128-bit value, so limit - start cannot
 * overflow and u64 values above INT64_MAX stay positive. */
static __int128 get128(const ir_tensor *t)
{
    if (t->dtype == IR_U64)
        return (__int128)((const uint64_t *)t->data)[0];
    return ir_tensor_geti(t, 0);
}

/* count = max(ceil((limit - start) / delta), 0). Floats are computed in
 * f32 (f64 for f64 inputs), like a kernel in the input's dtype would. */
static int range_count(ir_shape_ctx *c, const ir_tensor *s, const ir_tensor *l,
                       const ir_tensor *d, int64_t *n)
{
    if (s->numel != 1 || l->numel != 1 || d->numel != 1)
        return ir_node_errorf(c->diag, c->node, "start, limit and delta must be scalars");
    if (ir_dtype_is_float(s->dtype)) {
        double q;
        if (s->dtype == IR_F64) {
            double a = ir_tensor_getf(s, 0), b = ir_tensor_getf(l, 0), e = ir_tensor_getf(d, 0);
            if (e == 0)
                return ir_node_errorf(c->diag, c->node, "delta is 0");
            q = ceil((b - a) / e);
        } else {
            float a = (float)ir_tensor_getf(s, 0), b = (float)ir_tensor_getf(l, 0);
            float e = (float)ir_tensor_getf(d, 0);
            if (e == 0)
                return ir_node_errorf(c->diag, c->node, "delta is 0");
            q = ceilf((b - a) / e);
        }
        if (isnan(q) || q > (double)IR_MAX_TENSOR_BYTES)
            return ir_node_errorf(c->diag, c->node, "range has too many elements (%g)", q);
        *n = q > 0 ? (int64_t)q : 0;
        return 0;
    }
    __int128 a = get128(s), b = get128(l), e = get128(d), diff = b - a;
    if (e == 0)
        return ir_node_errorf(c->diag, c->node, "delta is 0");
    __int128 q = diff / e;
    if (diff % e != 0 && ((diff > 0) == (e > 0)))
        q++;
    if (q > IR_MAX_TENSOR_BYTES)
        return ir_node_errorf(c->diag, c->node, "range has too many elements");
    *n = q > 0 ? (int64_t)q : 0;
    return 0;
}

int shape_range(ir_shape_ctx *c)
{
    const ir_type *s = c->in[0];
    ir_type *o = &c->out[0];
    for (int i = 1; i < 3; i++)
        if (c->in[i]->dtype != s->dtype)
            return ir_node_errorf(c->diag, c->node, "input %d is %s but start is %s", i,
                                  ir_dtype_name(c->in[i]->dtype), ir_dtype_name(s->dtype));
    for (int i = 0; i < 3; i++)
        if (c->in[i]->rank > 1)
            return ir_node_errorf(c->diag, c->node, "input %d must be a scalar", i);
    ir_type_unknown(o, s->dtype, 1);
    if (c->val[0] && c->val[1] && c->val[2]) {
        int64_t n;
        if (range_count(c, c->val[0], c->val[1], c->val[2], &n) < 0)
            return -1;
        o->dims[0] = ir_dim_const(n);
        return ir_mv_check_size(c, o);
    }
    /* Range(0, S, 1) with the limit a dim (a shape value, ir/shapeval.c):
     * the position ids of a [B, S] model have S elements. A float range
     * whose limit is a Cast of such a dim (YOLOv8's anchor grid,
     * arange(w, dtype=float)) too: shape values hold integers only, so the
     * Cast's input is read here; exact while the dim is below 2^24 (f32)
     * or 2^53 (f64), past which the float limit itself rounds */
    const ir_shape_value *lim = c->sval && c->sval[1] && c->sval[1]->n == 1 ? c->sval[1] : NULL;
    ir_shape_value cast_lim;
    const ir_value *lv = c->node && c->node->nin > 1 ? c->node->in[1] : NULL;
    if (!lim && (s->dtype == IR_F32 || s->dtype == IR_F64) && lv && lv->def &&
        lv->def->op == IR_OP_CAST && lv->def->nin == 1 && lv->def->in[0] &&
        ir_dtype_is_int(lv->def->in[0]->type.dtype) && ir_value_shape_value(lv->def->in[0], &cast_lim) &&
        cast_lim.n == 1)
        lim = &cast_lim;
    if (lim && lim->e[0].sym > 0 && (ir_dtype_is_int(s->dtype) || lim == &cast_lim) && c->val[0] && c->val[2] &&
        c->val[0]->numel == 1 && c->val[2]->numel == 1 && ir_tensor_getf(c->val[0], 0) == 0 &&
        ir_tensor_getf(c->val[2], 0) == 1)
        o->dims[0] = lim->e[0];
    return 0;
}

/* out[i] = start + i * delta. */
int ref_range(ir_ref_ctx *c)
{
    const ir_tensor *s = c->in[0], *d = c->in[2];
    ir_tensor *y = c->out[0];
    ir_shape_ctx sc = mv_err_ctx(c);
    int64_t n;
    if (range_count(&sc, s, c->in[1], d, &n) < 0)
        return -1;
    if (n != y->numel)
        return ir_node_errorf(c->diag, c->node, "output length does not match the range");
    if (y->dtype == IR_F64) {
        double a = ir_tensor_getf(s, 0), e = ir_tensor_getf(d, 0);
        for (int64_t i = 0; i < n; i++)
            ((double *)y->data)[i] = a + (double)i * e;
    } else if (ir_dtype_is_float(y->dtype)) {
        float a = (float)ir_tensor_getf(s, 0), e = (float)ir_tensor_getf(d, 0);
        for (int64_t i = 0; i < n; i++)
            ir_tensor_setf(y, i, a + (float)i * e);
    } else {
        uint64_t a = (uint64_t)get128(s), e = (uint64_t)get128(d);
        for (int64_t i = 0; i < n; i++)
            ir_tensor_seti(y, i, (int64_t)(a + (uint64_t)i * e));
    }
    return 0;
}

/* ---- Dropout -------------------------------------------------------------------- */

/* Inference only: training_mode (input 2) must be false, unless the ratio
 * is 0, when training is the identity too. A training_mode that is not a
 * constant is checked when the kernel runs. */
static int dropout_check(ir_shape_ctx *c, const ir_tensor *ratio, const ir_tensor *train)
{
    if (!train)
        return 0;
    if (train->numel != 1)
        return ir_node_errorf(c->diag, c->node, "training_mode must be a scalar");
    if (!ir_tensor_geti(train, 0))
        return 0;
    if (ratio && ratio->numel == 1 && ir_tensor_getf(ratio, 0) == 0)
        return 0;
    return ir_node_errorf(c->diag, c->node, "training mode is not supported");
}

int shape_dropout(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0], *tr = mv_type(c, 2);
    if (tr && tr->dtype != IR_BOOL)
        return ir_node_errorf(c->diag, c->node, "training_mode must be bool");
    if (dropout_check(c, mv_val(c, 1), mv_val(c, 2)) < 0)
        return -1;
    c->out[0] = *x;
    if (c->nout > 1) {
        c->out[1] = *x;
        c->out[1].dtype = IR_BOOL;
    }
    return 0;
}

int ref_dropout(ir_ref_ctx *c)
{
    ir_shape_ctx s = mv_err_ctx(c);
    if (dropout_check(&s, mv_in(c, 1), mv_in(c, 2)) < 0 || ref_copy(c) < 0)
        return -1;
    if (c->nout > 1 && c->out[1])
        memset(c->out[1]->data, 1, c->out[1]->nbytes);
    return 0;
}

/* ---- EyeLike ---------------------------------------------------------------------- */

int shape_eyelike(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    ir_type *o = &c->out[0];
    if (x->rank >= 0 && x->rank != 2)
        return ir_node_errorf(c->diag, c->node, "input must be 2-D, got rank %d", x->rank);
    *o = *x;
    const ir_attr *a = ir_node_attr(c->node, "dtype");
    if (a && a->i != 0) {
        o->dtype = ir_dtype_from_onnx((int)a->i);
        if (o->dtype == IR_UNDEF)
            return ir_node_errorf(c->diag, c->node, "dtype %s is not supported",
                                  ir_onnx_dtype_name((int)a->i));
    }
    return 0;
}

/* Ones on the diagonal j = i + k, zeros elsewhere. */
int ref_eyelike(ir_ref_ctx *c)
{
    ir_tensor *y = c->out[0];
    if (y->rank != 2)
        return ir_node_errorf(c->diag, c->node, "input must be 2-D");
    int64_t H = y->dims[0], W = y->dims[1], k = ir_attr_int(c->node, "k", 0);
    memset(y->data, 0, y->nbytes);
    for (int64_t i = 0; i < H; i++)
        if (k >= -i && k < W - i)
            ir_tensor_seti(y, i * W + i + k, 1);
    return 0;
}

/* ---- window functions: HannWindow, HammingWindow, BlackmanWindow ---------- */

/* The window's length from its scalar size input, and the output dtype. */
int shape_window(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    ir_type *o = &c->out[0];
    if (x->rank > 1 || (x->rank == 1 && ir_dim_is_const(x->dims[0]) && x->dims[0].v != 1))
        return ir_node_errorf(c->diag, c->node, "size must be a scalar");
    ir_dtype dt = ir_dtype_from_onnx((int)ir_attr_int(c->node, "output_datatype", 1));
    if (dt == IR_UNDEF || dt == IR_BOOL)
        return ir_node_errorf(c->diag, c->node, "output_datatype %s is not supported",
                              ir_onnx_dtype_name((int)ir_attr_int(c->node, "output_datatype", 1)));
    ir_type_unknown(o, dt, 1);
    if (c->val[0]) {
        int64_t n = ir_tensor_geti(c->val[0], 0);
        if (n < 0 || n > IR_MAX_TENSOR_BYTES)
            return ir_node_errorf(c->diag, c->node, "window size %lld out of range", (long long)n);
        o->dims[0] = ir_dim_const(n);
        return ir_mv_check_size(c, o);
    }
    return 0;
}

void ir_window_coeffs(ir_op op, double a[3])
{
    a[0] = op == IR_OP_HANN_WINDOW ? 0.5 : op == IR_OP_HAMMING_WINDOW ? 25.0 / 46 : 0.42;
    a[1] = op == IR_OP_HAMMING_WINDOW ? 21.0 / 46 : 0.5;
    a[2] = op == IR_OP_BLACKMAN_WINDOW ? 0.08 : 0;
}

/* w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), in double (the ONNX
 * reference's formula), N = size (periodic) or size - 1 (symmetric). */
int ref_window(ir_ref_ctx *c)
{
    ir_tensor *y = c->out[0];
    int64_t n = y->numel;
    if (ir_tensor_geti(c->in[0], 0) != n)
        return ir_node_errorf(c->diag, c->node, "output length does not match the size");
    double a[3], N = (double)(ir_attr_int(c->node, "periodic", 1) ? n : n - 1);
    ir_window_coeffs(c->node->op, a);
    for (int64_t i = 0; i < n; i++) {
        double t = 6.283185307179586 * (double)i / N;   /* 2 pi n / N */
        ir_tensor_setf(y, i, a[0] - a[1] * cos(t) + a[2] * cos(2 * t));
    }
    return 0;
}
