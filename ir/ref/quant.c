/* quant.c - shape functions and reference kernels of the linear
 * quantization ops: QuantizeLinear, DequantizeLinear,
 * DynamicQuantizeLinear, QLinearMatMul and QLinearConv.
 *
 * Scales and zero points are per tensor (one value), per axis (a 1-D
 * tensor along `axis`) or blocked (x's shape with dim `axis` divided into
 * blocks of `block_size`). Quantized types are u8, i8, u16 and i16 (i32
 * too as a DequantizeLinear input); the 2-, 4- and 8-bit float and
 * integer types of newer opsets are not IR dtypes and are refused here
 * (and by the frontend when a tensor has one). The arithmetic follows the
 * ONNX reference implementation step by step, each intermediate rounded
 * to the type it has there, so results are bit-exact: division in the
 * scale's type (or `precision`), round half to even, saturation to the
 * output type's range. passes/quant.c rewrites these ops into core ops
 * with the same roundings for the compiled form. */
#include "ir/ref/quant.h"

#include "ir/ref/nn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------ */

static bool is_half(ir_dtype t) { return t == IR_F16 || t == IR_BF16; }
static bool is_scale_float(ir_dtype t) { return t == IR_F32 || is_half(t); }
static bool is_qtype(ir_dtype t)
{
    return t == IR_U8 || t == IR_I8 || t == IR_U16 || t == IR_I16;
}

static void qrange(ir_dtype t, double *lo, double *hi)
{
    switch (t) {
    case IR_U8: *lo = 0; *hi = 255; break;
    case IR_I8: *lo = -128; *hi = 127; break;
    case IR_U16: *lo = 0; *hi = 65535; break;
    case IR_I16: *lo = -32768; *hi = 32767; break;
    default: *lo = -2147483648.0; *hi = 2147483647.0; break;
    }
}

/* v rounded to float by round-to-odd, so that a second rounding to f16 or
 * bf16 equals rounding v once. */
static float float_odd(double v)
{
    float f = (float)v;
    if ((double)f == v || isnan(v) || isinf(f))
        return f;
    if (fabs((double)f) > fabs(v))
        f = nextafterf(f, 0.0f);
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u |= 1;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* v rounded once (to nearest even) to float dtype t. */
static double quant_round_to(ir_dtype t, double v)
{
    switch (t) {
    case IR_F32: return (float)v;
    case IR_F16: return ir_f16_to_f32(ir_f32_to_f16(float_odd(v)));
    case IR_BF16: return ir_bf16_to_f32(ir_f32_to_bf16(float_odd(v)));
    default: return v;
    }
}

/* The IR dtype of a TensorProto code given as an attribute (output_dtype,
 * precision); 0 is "absent" (IR_UNDEF). -1 with a message for a code the
 * IR has no dtype for (int4, float8...) or one of the wrong class. */
static int attr_dtype(const ir_node *n, icc_diag *d, const char *name, bool want_float,
                      ir_dtype *out)
{
    int64_t code = ir_attr_int(n, name, 0);
    *out = IR_UNDEF;
    if (code == 0)
        return 0;
    ir_dtype t = ir_dtype_from_onnx((int)code);
    if (t == IR_UNDEF)
        return ir_node_errorf(d, n, "%s %s (%lld) is not supported: the IR has no such dtype",
                              name, ir_onnx_dtype_name((int)code), (long long)code);
    if (want_float ? !is_scale_float(t) : !is_qtype(t))
        return ir_node_errorf(d, n, "%s %s is not supported (expects %s)", name,
                              ir_dtype_name(t), want_float ? "f32, f16 or bf16" : "u8, i8, u16 or i16");
    *out = t;
    return 0;
}

/* ---- quantization layout ------------------------------------------------ */

/* Where a scale or zero point sits for each element of x, viewed as
 * [outer, d, inner] around the quantization axis: per tensor (block < 0),
 * per axis (block == 0: index (i / inner) % d) or blocked (scale
 * [outer, sd, inner], sd = ceil(d / block)). */
typedef struct qlayout {
    int64_t outer, d, inner, sd, block;
} qlayout;

static int64_t qlayout_index(const qlayout *q, int64_t i)
{
    if (q->block < 0)
        return 0;
    int64_t a = (i / q->inner) % q->d;
    if (q->block == 0)
        return a;
    int64_t o = i / (q->inner * q->d), r = i % q->inner;
    return (o * q->sd + a / q->block) * q->inner + r;
}

/* Checks the scale's shape against x's (both static, ranks xr and sr) for
 * `axis` and `block_size` and fills q. The zero point, when given, must
 * have the scale's shape (checked by the callers). */
static int qlayout_init(const ir_node *n, icc_diag *d, int xr, const int64_t *x, int sr,
                        const int64_t *s, qlayout *q)
{
    int64_t axis = ir_attr_int(n, "axis", 1), block = ir_attr_int(n, "block_size", 0);
    int64_t sn = 1;
    for (int i = 0; i < sr; i++)
        sn *= s[i];
    memset(q, 0, sizeof *q);
    q->block = -1;
    q->outer = q->d = q->inner = q->sd = 1;
    if (block < 0)
        return ir_node_errorf(d, n, "block_size %lld is negative", (long long)block);
    if (sr <= 1 && sn == 1 && block == 0)
        return 0;
    if (axis < -xr || axis >= xr)
        return ir_node_errorf(d, n, "axis %lld is out of range for rank %d", (long long)axis, xr);
    int ax = (int)(axis < 0 ? axis + xr : axis);
    for (int i = 0; i < ax; i++)
        q->outer *= x[i];
    for (int i = ax + 1; i < xr; i++)
        q->inner *= x[i];
    q->d = x[ax];
    if (block == 0) {
        if (sr != 1 || s[0] != x[ax])
            return ir_node_errorf(d, n,
                                  "the scale must be a scalar or a 1-D tensor of %lld values "
                                  "(dim %d of x), got %lld values in rank %d",
                                  (long long)x[ax], ax, (long long)sn, sr);
        q->block = 0;
        return 0;
    }
    if (sr != xr)
        return ir_node_errorf(d, n, "blocked quantization needs a scale of rank %d, got rank %d",
                              xr, sr);
    for (int i = 0; i < xr; i++) {
        int64_t want = i == ax ? (x[i] + block - 1) / block : x[i];
        if (s[i] != want)
            return ir_node_errorf(d, n,
                                  "blocked scale dim %d is %lld; x's dims and block_size %lld "
                                  "give %lld",
                                  i, (long long)s[i], (long long)block, (long long)want);
    }
    q->sd = s[ax];
    q->block = block;
    return 0;
}

/* qlayout_init on types, when both are static; 0 otherwise (checked at
 * run time). */
static int qlayout_check_types(ir_shape_ctx *c, const ir_type *x, const ir_type *s,
                               const ir_type *zp)
{
    int64_t sn, zn;
    /* one value each (a scalar and a [1], as ONNX Runtime's quantizer writes
     * them) is per-tensor either way */
    bool single = zp && ir_type_numel(s, &sn) && ir_type_numel(zp, &zn) && sn == 1 && zn == 1;
    if (zp && !single && s->rank >= 0 && zp->rank >= 0) {
        bool same = zp->rank == s->rank;
        for (int i = 0; same && i < s->rank; i++)
            if (ir_dim_is_const(s->dims[i]) && ir_dim_is_const(zp->dims[i]) &&
                s->dims[i].v != zp->dims[i].v)
                same = false;
        if (!same)
            return ir_node_errorf(c->diag, c->node, "the zero point's shape differs from the scale's");
    }
    if (!ir_type_is_static(x) || !ir_type_is_static(s))
        return 0;
    int64_t xd[IR_MAX_RANK], sd[IR_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
        xd[i] = x->dims[i].v;
    for (int i = 0; i < s->rank; i++)
        sd[i] = s->dims[i].v;
    qlayout q;
    return qlayout_init(c->node, c->diag, x->rank, xd, s->rank, sd, &q);
}

static int qlayout_of(ir_ref_ctx *c, const ir_tensor *x, const ir_tensor *s, const ir_tensor *zp,
                      qlayout *q)
{
    if (zp) {
        bool same = zp->rank == s->rank || (zp->numel == 1 && s->numel == 1);
        for (int i = 0; same && zp->rank == s->rank && i < s->rank; i++)
            same = zp->dims[i] == s->dims[i];
        if (!same)
            return ir_node_errorf(c->diag, c->node, "the zero point's shape differs from the scale's");
    }
    return qlayout_init(c->node, c->diag, x->rank, x->dims, s->rank, s->dims, q);
}

/* ---- QuantizeLinear ----------------------------------------------------- */

/* The output dtype: the zero point's, else output_dtype, else u8; both
 * given must agree. */
static int quantize_out_dtype(const ir_node *n, icc_diag *d, const ir_type *zp, ir_dtype *out)
{
    ir_dtype od;
    if (attr_dtype(n, d, "output_dtype", false, &od) < 0)
        return -1;
    if (zp) {
        if (!is_qtype(zp->dtype))
            return ir_node_errorf(d, n, "y_zero_point has dtype %s (expects u8, i8, u16 or i16)",
                                  ir_dtype_name(zp->dtype));
        if (od != IR_UNDEF && od != zp->dtype)
            return ir_node_errorf(d, n, "output_dtype %s differs from y_zero_point's %s",
                                  ir_dtype_name(od), ir_dtype_name(zp->dtype));
        od = zp->dtype;
    }
    *out = od == IR_UNDEF ? IR_U8 : od;
    return 0;
}

int quant_precision(const ir_node *n, icc_diag *d, ir_dtype x, ir_dtype s, ir_dtype *p)
{
    if (attr_dtype(n, d, "precision", true, p) < 0)
        return -1;
    if (*p != IR_UNDEF)
        return 0;
    if (x == IR_I32 || s == IR_I32)
        *p = IR_F64;
    else if (x == s)
        *p = x;
    else
        *p = IR_F32;
    return 0;
}

int shape_quantize_linear(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0], *s = c->in[1], *zp = c->nin > 2 ? c->in[2] : NULL;
    if (!is_scale_float(x->dtype) && x->dtype != IR_I32)
        return ir_node_errorf(c->diag, c->node, "x has dtype %s (expects f32, f16, bf16 or i32)",
                              ir_dtype_name(x->dtype));
    if (!is_scale_float(s->dtype) && s->dtype != IR_I32)
        return ir_node_errorf(c->diag, c->node,
                              "y_scale has dtype %s (expects f32, f16, bf16 or i32)",
                              ir_dtype_name(s->dtype));
    ir_dtype od = IR_U8, p = IR_F32;
    if (quantize_out_dtype(c->node, c->diag, zp, &od) < 0 ||
        quant_precision(c->node, c->diag, x->dtype, s->dtype, &p) < 0)
        return -1;
    if (ir_attr_int(c->node, "saturate", 1) != 1 && ir_attr_int(c->node, "saturate", 1) != 0)
        return ir_node_errorf(c->diag, c->node, "saturate must be 0 or 1");
    if (qlayout_check_types(c, x, s, zp) < 0)
        return -1;
    c->out[0] = *x;
    c->out[0].dtype = od;
    return 0;
}

/* y = saturate(rint(x / y_scale) + y_zero_point), the division rounded
 * to the precision type. `saturate` only matters for float8 outputs,
 * which the IR lacks: integer outputs always saturate. */
int ref_quantize_linear(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0], *s = c->in[1], *zp = c->nin > 2 ? c->in[2] : NULL;
    ir_tensor *y = c->out[0];
    qlayout q;
    ir_dtype p;
    if (qlayout_of(c, x, s, zp, &q) < 0 ||
        quant_precision(c->node, c->diag, x->dtype, s->dtype, &p) < 0)
        return -1;
    bool cast = ir_node_attr(c->node, "precision") != NULL;
    double lo, hi;
    qrange(y->dtype, &lo, &hi);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t k = qlayout_index(&q, i);
        double xv = ir_tensor_getf(x, i), sv = ir_tensor_getf(s, k);
        if (cast) {
            xv = quant_round_to(p, xv);
            sv = quant_round_to(p, sv);
        }
        double v = nearbyint(quant_round_to(p, xv / sv));
        if (zp)
            v += (double)ir_tensor_geti(zp, k);
        v = isnan(v) ? 0 : v < lo ? lo : v > hi ? hi : v;
        ir_tensor_seti(y, i, (int64_t)v);
    }
    return 0;
}

/* ---- DequantizeLinear --------------------------------------------------- */

int shape_dequantize_linear(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0], *s = c->in[1], *zp = c->nin > 2 ? c->in[2] : NULL;
    if (!is_qtype(x->dtype) && x->dtype != IR_I32)
        return ir_node_errorf(c->diag, c->node, "x has dtype %s (expects u8, i8, u16, i16 or i32)",
                              ir_dtype_name(x->dtype));
    if (!is_scale_float(s->dtype))
        return ir_node_errorf(c->diag, c->node, "x_scale has dtype %s (expects f32, f16 or bf16)",
                              ir_dtype_name(s->dtype));
    if (zp && zp->dtype != x->dtype)
        return ir_node_errorf(c->diag, c->node, "x_zero_point has dtype %s but x has %s",
                              ir_dtype_name(zp->dtype), ir_dtype_name(x->dtype));
    ir_dtype od;
    if (attr_dtype(c->node, c->diag, "output_dtype", true, &od) < 0)
        return -1;
    if (qlayout_check_types(c, x, s, zp) < 0)
        return -1;
    c->out[0] = *x;
    c->out[0].dtype = od == IR_UNDEF ? s->dtype : od;
    return 0;
}

/* y = (x - x_zero_point) * x_scale: the difference as f32, the product
 * in f32 (as the reference computes it), then rounded to the output. */
int ref_dequantize_linear(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0], *s = c->in[1], *zp = c->nin > 2 ? c->in[2] : NULL;
    ir_tensor *y = c->out[0];
    qlayout q;
    if (qlayout_of(c, x, s, zp, &q) < 0)
        return -1;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t k = qlayout_index(&q, i);
        int64_t dv = ir_tensor_geti(x, i) - (zp ? ir_tensor_geti(zp, k) : 0);
        double v = (double)(float)dv * ir_tensor_getf(s, k);
        ir_tensor_setf(y, i, quant_round_to(y->dtype, (float)v));
    }
    return 0;
}

/* ---- DynamicQuantizeLinear ---------------------------------------------- */

int shape_dynamic_quantize_linear(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    if (x->dtype != IR_F32)
        return ir_node_errorf(c->diag, c->node, "x has dtype %s (expects f32)",
                              ir_dtype_name(x->dtype));
    c->out[0] = *x;
    c->out[0].dtype = IR_U8;
    for (int i = 1; i < c->nout; i++)
        ir_type_unknown(&c->out[i], i == 1 ? IR_F32 : IR_U8, 0);
    return 0;
}

/* u8 quantization over the range [min(0, min x), max(0, max x)], every
 * step in f32 as the spec's formulas: scale = range / 255 (range 1 when
 * it is 0), zero point = rint(clamp(-min / scale, 0, 255)),
 * y = clamp(rint(x / scale) + zero point, 0, 255). */
int ref_dynamic_quantize_linear(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    const float *xv = x->data;
    float mx = 0.0f, mn = 0.0f;
    for (int64_t i = 0; i < x->numel; i++) {
        mx = xv[i] > mx ? xv[i] : mx;
        mn = xv[i] < mn ? xv[i] : mn;
    }
    float range = mx == mn ? 1.0f : mx - mn;
    float scale = range / 255.0f;
    float izp = 0.0f - mn / scale;
    float zp = nearbyintf(izp < 0.0f ? 0.0f : izp > 255.0f ? 255.0f : izp);
    uint8_t *y = c->out[0]->data;
    for (int64_t i = 0; i < x->numel; i++) {
        float v = nearbyintf(xv[i] / scale) + zp;
        y[i] = (uint8_t)(v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v);
    }
    if (c->nout > 1 && c->out[1])
        *(float *)c->out[1]->data = scale;
    if (c->nout > 2 && c->out[2])
        *(uint8_t *)c->out[2]->data = (uint8_t)zp;
    return 0;
}

/* ---- QLinearMatMul and QLinearConv -------------------------------------- */

/* Inputs (a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp [, B]); the
 * integer op sees (a, b, a_zp, b_zp): these indices. */
static const int integer_inputs[4] = {0, 3, 2, 5};

static int qlinear_scales_ok(ir_shape_ctx *c)
{
    const ir_type *as = c->in[1], *bs = c->in[4], *ys = c->in[6];
    if (!is_scale_float(as->dtype) || bs->dtype != as->dtype || ys->dtype != as->dtype)
        return ir_node_errorf(c->diag, c->node,
                              "the scales must all be f32, f16 or bf16 of one dtype, got %s, %s, %s",
                              ir_dtype_name(as->dtype), ir_dtype_name(bs->dtype),
                              ir_dtype_name(ys->dtype));
    const ir_type *yz = c->in[7];
    if (yz->dtype != IR_U8 && yz->dtype != IR_I8)
        return ir_node_errorf(c->diag, c->node, "y_zero_point has dtype %s (expects u8 or i8)",
                              ir_dtype_name(yz->dtype));
    int64_t n;
    if (ir_type_is_static(ys) && ir_type_numel(ys, &n) && n != 1)
        return ir_node_errorf(c->diag, c->node, "y_scale must be a scalar");
    if (ir_type_is_static(yz) && ir_type_numel(yz, &n) && n != 1)
        return ir_node_errorf(c->diag, c->node, "y_zero_point must be a scalar");
    return 0;
}

/* The shape of a QLinear op's integer core (MatMulInteger/ConvInteger over
 * its inputs a, b and their zero points), written into c->out. */
static int integer_shape(ir_shape_ctx *c, int (*shape)(ir_shape_ctx *))
{
    const ir_type *in[4];
    const ir_tensor *val[4];
    for (int i = 0; i < 4; i++) {
        in[i] = c->in[integer_inputs[i]];
        val[i] = c->val ? c->val[integer_inputs[i]] : NULL;
    }
    ir_shape_ctx sub = {.node = c->node, .nin = 4, .nout = 1, .in = in, .val = val,
                        .out = c->out, .diag = c->diag};
    return shape(&sub);
}

int shape_qlinear_matmul(ir_shape_ctx *c)
{
    if (qlinear_scales_ok(c) < 0)
        return -1;
    if (integer_shape(c, shape_matmul_integer) < 0)
        return -1;
    c->out[0].dtype = c->in[7]->dtype;
    return 0;
}

int shape_qlinear_conv(ir_shape_ctx *c)
{
    if (qlinear_scales_ok(c) < 0)
        return -1;
    if (c->in[1]->dtype != IR_F32)
        return ir_node_errorf(c->diag, c->node, "the scales must be f32, got %s",
                              ir_dtype_name(c->in[1]->dtype));
    const ir_type *b = c->nin > 8 ? c->in[8] : NULL;
    if (b && b->dtype != IR_I32)
        return ir_node_errorf(c->diag, c->node, "B has dtype %s (expects i32)",
                              ir_dtype_name(b->dtype));
    if (b && b->rank >= 0 && b->rank != 1)
        return ir_node_errorf(c->diag, c->node, "B must have rank 1, got rank %d", b->rank);
    if (integer_shape(c, shape_conv_integer) < 0)
        return -1;
    const ir_type *o = &c->out[0];
    if (b && o->rank >= 2 && ir_dim_is_const(o->dims[1]) && b->rank == 1 &&
        ir_dim_is_const(b->dims[0]) && b->dims[0].v != o->dims[1].v)
        return ir_node_errorf(c->diag, c->node, "B has %lld values for %lld output channels",
                              (long long)b->dims[0].v, (long long)o->dims[1].v);
    c->out[0].dtype = c->in[7]->dtype;
    return 0;
}

/* Runs the integer op (MatMulInteger or ConvInteger) into a fresh i32
 * tensor shaped like the output; the caller frees acc->data. */
static int integer_acc(ir_ref_ctx *c, ir_ref_fn fn, ir_tensor *acc)
{
    const ir_tensor *y = c->out[0];
    if (ir_tensor_init(acc, IR_I32, y->rank, y->dims, c->diag) < 0)
        return -1;
    acc->data = calloc(acc->nbytes + 1, 1);
    if (!acc->data)
        return ir_node_errorf(c->diag, c->node, "out of memory");
    const ir_tensor *in[4];
    for (int i = 0; i < 4; i++)
        in[i] = c->in[integer_inputs[i]];
    ir_tensor *out[1] = {acc};
    ir_ref_ctx sub = {.node = c->node, .nin = 4, .nout = 1, .in = in, .out = out,
                      .diag = c->diag};
    if (fn(&sub) < 0) {
        free(acc->data);
        acc->data = NULL;
        return -1;
    }
    return 0;
}

/* The requantization multiplier a_scale * b_scale / y_scale, each step
 * rounded to the scales' dtype. */
static double qlinear_mult(ir_dtype t, double as, double bs, double ys)
{
    return quant_round_to(t, quant_round_to(t, as * bs) / ys);
}

/* y = saturate(rint(acc * multiplier + y_zp)), the product in double (as
 * numpy computes an i32 array times a float one). */
static void requantize(ir_tensor *y, int64_t i, int64_t acc, double mult, double yz)
{
    double lo, hi;
    qrange(y->dtype, &lo, &hi);
    double v = nearbyint((double)acc * mult + yz);
    ir_tensor_seti(y, i, (int64_t)(v < lo ? lo : v > hi ? hi : v));
}

/* QLinearMatMul: a_scale/a_zp are a scalar or one per row of a, b_scale
 * and b_zp a scalar or one per column of b. */
int ref_qlinear_matmul(ir_ref_ctx *c)
{
    const ir_tensor *as = c->in[1], *bs = c->in[4], *ys = c->in[6], *yz = c->in[7];
    ir_tensor *y = c->out[0];
    int64_t n = y->rank >= 1 ? y->dims[y->rank - 1] : 1;
    int64_t m = y->rank >= 2 ? y->dims[y->rank - 2] : 1;
    if ((as->numel != 1 && as->numel != m) || (bs->numel != 1 && bs->numel != n))
        return ir_node_errorf(c->diag, c->node,
                              "a_scale must have 1 or %lld values and b_scale 1 or %lld",
                              (long long)m, (long long)n);
    if (ys->numel != 1 || yz->numel != 1)
        return ir_node_errorf(c->diag, c->node, "y_scale and y_zero_point must be scalars");
    ir_tensor acc;
    if (integer_acc(c, ref_matmul_integer, &acc) < 0)
        return -1;
    const int32_t *av = acc.data;
    double ysv = ir_tensor_getf(ys, 0), yzv = (double)ir_tensor_geti(yz, 0);
    for (int64_t i = 0; i < y->numel; i++) {
        int64_t row = (i / n) % m, col = i % n;
        double mult = qlinear_mult(as->dtype, ir_tensor_getf(as, as->numel == 1 ? 0 : row),
                                   ir_tensor_getf(bs, bs->numel == 1 ? 0 : col), ysv);
        requantize(y, i, av[i], mult, yzv);
    }
    free(acc.data);
    return 0;
}

/* QLinearConv: w_scale is a scalar or one per output channel; the
 * optional i32 bias B is added to the accumulator. */
int ref_qlinear_conv(ir_ref_ctx *c)
{
    const ir_tensor *xs = c->in[1], *ws = c->in[4], *ys = c->in[6], *yz = c->in[7];
    const ir_tensor *b = c->nin > 8 ? c->in[8] : NULL;
    ir_tensor *y = c->out[0];
    int64_t m = y->dims[1], plane = 1;
    for (int i = 2; i < y->rank; i++)
        plane *= y->dims[i];
    if (xs->numel != 1 || ys->numel != 1 || yz->numel != 1)
        return ir_node_errorf(c->diag, c->node,
                              "x_scale, y_scale and y_zero_point must be scalars");
    if (ws->numel != 1 && ws->numel != m)
        return ir_node_errorf(c->diag, c->node, "w_scale has %lld values; expected 1 or %lld",
                              (long long)ws->numel, (long long)m);
    if (b && b->numel != m)
        return ir_node_errorf(c->diag, c->node, "B has %lld values for %lld output channels",
                              (long long)b->numel, (long long)m);
    ir_tensor acc;
    if (integer_acc(c, ref_conv_integer, &acc) < 0)
        return -1;
    const int32_t *av = acc.data;
    double xsv = ir_tensor_getf(xs, 0), ysv = ir_tensor_getf(ys, 0);
    double yzv = (double)ir_tensor_geti(yz, 0);
    for (int64_t i = 0; i < y->numel; i++) {
        int64_t ch = (i / plane) % m;
        double mult = qlinear_mult(IR_F32, xsv, ir_tensor_getf(ws, ws->numel == 1 ? 0 : ch), ysv);
        /* The bias joins the i32 accumulator (wrapping as i32 would). */
        int32_t a = (int32_t)((uint32_t)av[i] + (uint32_t)(b ? ir_tensor_geti(b, ch) : 0));
        requantize(y, i, a, mult, yzv);
    }
    free(acc.data);
    return 0;
}
