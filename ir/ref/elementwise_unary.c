/* elementwise_unary.c - the reference kernel of every unary elementwise
 * op (ref_unary): logic, arithmetic, rounding, transcendental functions
 * and activations, plus IsNaN/IsInf with their bool output. Floats are
 * computed in double and rounded once into the output dtype; the integer
 * forms of Not, Neg, Abs, Relu, Sign and BitwiseNot compute on int64 or
 * uint64 with wraparound; the few ops that allow integers but are
 * defined by real arithmetic (Erf, Shrink) compute in double and truncate
 * back, like numpy's astype. f32 input to f32 output takes a direct loop. */
#include "ir/ref/elementwise.h"

#include <math.h>
#include <string.h>

/* Attribute values an element function may need. */
typedef struct upar {
    double alpha, beta, gamma, lambd, bias;
    bool neg, pos;
} upar;

typedef struct unfns {
    double (*f)(double x, const upar *p);
    int64_t (*s)(int64_t x);
    uint64_t (*u)(uint64_t x);
} unfns;

/* ---- element functions ---------------------------------------------------- */

static uint64_t u_not(uint64_t x) { return !x; }

static double f_sqrt(double x, const upar *p) { (void)p; return sqrt(x); }
static double f_exp(double x, const upar *p) { (void)p; return exp(x); }
static double f_log(double x, const upar *p) { (void)p; return log(x); }
static double f_tanh(double x, const upar *p) { (void)p; return tanh(x); }
static double f_sin(double x, const upar *p) { (void)p; return sin(x); }
static double f_cos(double x, const upar *p) { (void)p; return cos(x); }
static double f_tan(double x, const upar *p) { (void)p; return tan(x); }
static double f_asin(double x, const upar *p) { (void)p; return asin(x); }
static double f_acos(double x, const upar *p) { (void)p; return acos(x); }
static double f_atan(double x, const upar *p) { (void)p; return atan(x); }
static double f_sinh(double x, const upar *p) { (void)p; return sinh(x); }
static double f_cosh(double x, const upar *p) { (void)p; return cosh(x); }
static double f_asinh(double x, const upar *p) { (void)p; return asinh(x); }
static double f_acosh(double x, const upar *p) { (void)p; return acosh(x); }
static double f_atanh(double x, const upar *p) { (void)p; return atanh(x); }
static double f_erf(double x, const upar *p) { (void)p; return erf(x); }
static double f_recip(double x, const upar *p) { (void)p; return 1.0 / x; }
static double f_floor(double x, const upar *p) { (void)p; return floor(x); }
static double f_ceil(double x, const upar *p) { (void)p; return ceil(x); }

/* Half to even without relying on the FPU rounding mode: step up from
 * floor(x) past the midpoint, or at the midpoint when floor(x) is odd.
 * NaN and infinities fall through unchanged; a zero keeps x's sign. */
static double f_round(double x, const upar *p)
{
    (void)p;
    double r = floor(x), frac = x - r;
    if (frac > 0.5 || (frac == 0.5 && fmod(r, 2.0) != 0))
        r += 1;
    return r == 0 ? copysign(0.0, x) : r;
}

static double f_sigmoid(double x, const upar *p) { (void)p; return 1.0 / (1.0 + exp(-x)); }

/* Comparisons written so NaN falls through unchanged. */
static double f_relu(double x, const upar *p) { (void)p; return x < 0 ? 0 : x; }
static int64_t s_relu(int64_t x) { return x < 0 ? 0 : x; }
static uint64_t u_ident(uint64_t x) { return x; }
static double f_leaky_relu(double x, const upar *p) { return x < 0 ? p->alpha * x : x; }
static double f_elu(double x, const upar *p) { return x < 0 ? p->alpha * expm1(x) : x; }
static double f_selu(double x, const upar *p)
{
    return p->gamma * (x <= 0 ? p->alpha * expm1(x) : x);
}
static double f_celu(double x, const upar *p)
{
    return x <= 0 ? p->alpha * expm1(x / p->alpha) : x;
}
static double f_thresholded_relu(double x, const upar *p) { return x > p->alpha ? x : 0; }

static double hard_sigmoid(double x, double alpha, double beta)
{
    double v = alpha * x + beta;
    return v < 0 ? 0 : v > 1 ? 1 : v;
}
static double f_hard_sigmoid(double x, const upar *p) { return hard_sigmoid(x, p->alpha, p->beta); }
static double f_hard_swish(double x, const upar *p)
{
    (void)p;
    return x * hard_sigmoid(x, 1.0 / 6, 0.5);
}

/* log(1 + e^x) without overflow for large x. */
static double softplus(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }
static double f_softplus(double x, const upar *p) { (void)p; return softplus(x); }
static double f_mish(double x, const upar *p) { (void)p; return x * tanh(softplus(x)); }
static double f_softsign(double x, const upar *p) { (void)p; return x / (1 + fabs(x)); }

/* Gelu in forms that keep x < 0 accurate (0.5 x (1 + erf) and
 * 0.5 x (1 + tanh) cancel to 0 there): 0.5 (1 + erf(x / sqrt 2)) =
 * 0.5 erfc(-x / sqrt 2), and 0.5 (1 + tanh z) = 1 / (1 + e^{-2z}), taken
 * as e / (1 + e) with e = e^{2z} for z < 0 so e never overflows. */
static double f_gelu(double x, const upar *p)
{
    (void)p;
    return 0.5 * x * erfc(-x / sqrt(2.0));
}
static double f_gelu_tanh(double x, const upar *p)
{
    (void)p;
    double z = sqrt(2 / M_PI) * (x + 0.044715 * x * x * x), e = exp(-2 * fabs(z));
    return x * (z < 0 ? e : 1) / (1 + e);
}

static double f_shrink(double x, const upar *p)
{
    return x < -p->lambd ? x + p->bias : x > p->lambd ? x - p->bias : 0;
}

/* Negation and |x| wrap at the minimum (|INT64_MIN| stays INT64_MIN). */
static double f_neg(double x, const upar *p) { (void)p; return -x; }
static int64_t s_neg(int64_t x) { return (int64_t)(0 - (uint64_t)x); }
static uint64_t u_neg(uint64_t x) { return 0 - x; }
static double f_abs(double x, const upar *p) { (void)p; return fabs(x); }
static int64_t s_abs(int64_t x) { return x < 0 ? s_neg(x) : x; }

static double f_sign(double x, const upar *p) { (void)p; return x > 0 ? 1 : x < 0 ? -1 : x; }
static int64_t s_sign(int64_t x) { return (x > 0) - (x < 0); }
static uint64_t u_sign(uint64_t x) { return x != 0; }

static double f_isnan(double x, const upar *p) { (void)p; return isnan(x); }
static double f_isinf(double x, const upar *p)
{
    return isinf(x) && (x > 0 ? p->pos : p->neg);
}

static int64_t s_bnot(int64_t x) { return ~x; }
static uint64_t u_bnot(uint64_t x) { return ~x; }

/* ---- op table ------------------------------------------------------------ */

static int unary_setup(const ir_node *n, unfns *fn, upar *p, icc_diag *d)
{
    unfns r = {0};
    memset(p, 0, sizeof *p);
    p->alpha = ir_attr_float(n, "alpha", 0);
    p->beta = ir_attr_float(n, "beta", 0);
    p->gamma = ir_attr_float(n, "gamma", 0);
    switch (n->op) {
    case IR_OP_NOT: r.u = u_not; break;
    case IR_OP_SQRT: r.f = f_sqrt; break;
    case IR_OP_EXP: r.f = f_exp; break;
    case IR_OP_LOG: r.f = f_log; break;
    case IR_OP_TANH: r.f = f_tanh; break;
    case IR_OP_SIGMOID: r.f = f_sigmoid; break;
    case IR_OP_RELU: r = (unfns){f_relu, s_relu, u_ident}; break;
    case IR_OP_LEAKY_RELU: r.f = f_leaky_relu; break;
    case IR_OP_ELU: r.f = f_elu; break;
    case IR_OP_SELU: r.f = f_selu; break;
    case IR_OP_HARD_SIGMOID: r.f = f_hard_sigmoid; break;
    case IR_OP_HARD_SWISH: r.f = f_hard_swish; break;
    case IR_OP_SOFTPLUS: r.f = f_softplus; break;
    case IR_OP_ERF: r.f = f_erf; break;
    case IR_OP_GELU: {
        const char *a = ir_attr_string(n, "approximate", "none");
        if (!strcmp(a, "none"))
            r.f = f_gelu;
        else if (!strcmp(a, "tanh"))
            r.f = f_gelu_tanh;
        else
            return ir_node_errorf(d, n, "approximate must be \"none\" or \"tanh\", not \"%.64s\"", a);
        break;
    }
    case IR_OP_NEG: r = (unfns){f_neg, s_neg, u_neg}; break;
    case IR_OP_ABS: r = (unfns){f_abs, s_abs, u_ident}; break;
    case IR_OP_RECIPROCAL: r.f = f_recip; break;
    case IR_OP_FLOOR: r.f = f_floor; break;
    case IR_OP_CEIL: r.f = f_ceil; break;
    case IR_OP_ROUND: r.f = f_round; break;
    case IR_OP_SIN: r.f = f_sin; break;
    case IR_OP_COS: r.f = f_cos; break;
    case IR_OP_TAN: r.f = f_tan; break;
    case IR_OP_ASIN: r.f = f_asin; break;
    case IR_OP_ACOS: r.f = f_acos; break;
    case IR_OP_ATAN: r.f = f_atan; break;
    case IR_OP_SINH: r.f = f_sinh; break;
    case IR_OP_COSH: r.f = f_cosh; break;
    case IR_OP_ASINH: r.f = f_asinh; break;
    case IR_OP_ACOSH: r.f = f_acosh; break;
    case IR_OP_ATANH: r.f = f_atanh; break;
    case IR_OP_SIGN: r = (unfns){f_sign, s_sign, u_sign}; break;
    case IR_OP_IS_NAN: r.f = f_isnan; break;
    case IR_OP_IS_INF:
        r.f = f_isinf;
        p->neg = ir_attr_int(n, "detect_negative", 1) != 0;
        p->pos = ir_attr_int(n, "detect_positive", 1) != 0;
        break;
    case IR_OP_SOFTSIGN: r.f = f_softsign; break;
    case IR_OP_THRESHOLDED_RELU: r.f = f_thresholded_relu; break;
    case IR_OP_CELU:
        if (p->alpha == 0)
            return ir_node_errorf(d, n, "alpha must not be 0");
        r.f = f_celu;
        break;
    case IR_OP_SHRINK:
        r.f = f_shrink;
        p->lambd = ir_attr_float(n, "lambd", 0.5f);
        p->bias = ir_attr_float(n, "bias", 0);
        break;
    case IR_OP_MISH: r.f = f_mish; break;
    case IR_OP_BITWISE_NOT: r = (unfns){NULL, s_bnot, u_bnot}; break;
    default:
        return ir_node_errorf(d, n, "is not a unary elementwise op");
    }
    *fn = r;
    return 0;
}

int ew_unary_check(const ir_node *n, icc_diag *d)
{
    unfns fn;
    upar p;
    return unary_setup(n, &fn, &p, d);
}

/* ---- kernel --------------------------------------------------------------- */

int ref_unary(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    ir_tensor *o = c->out[0];
    unfns fn;
    upar p;
    if (unary_setup(c->node, &fn, &p, c->diag) < 0)
        return -1;
    ew_class cls = ew_class_of(x->dtype);
    /* Integer input to an op with only a real form: compute in double. */
    if ((cls == EW_SIGNED && !fn.s) || (cls == EW_UNSIGNED && !fn.u))
        cls = EW_FLOAT;
    if (cls == EW_FLOAT && !fn.f)
        return ir_node_errorf(c->diag, c->node, "input dtype %s is not supported",
                              ir_dtype_name(x->dtype));
    int64_t n = x->numel;
    switch (cls) {
    case EW_FLOAT:
        if (x->dtype == IR_F32 && o->dtype == IR_F32) {
            const float *xd = x->data;
            float *od = o->data;
            for (int64_t i = 0; i < n; i++)
                od[i] = (float)fn.f(xd[i], &p);
        } else {
            for (int64_t i = 0; i < n; i++)
                ew_setf(o, i, fn.f(ir_tensor_getf(x, i), &p));
        }
        break;
    case EW_SIGNED:
        for (int64_t i = 0; i < n; i++)
            ir_tensor_seti(o, i, fn.s(ir_tensor_geti(x, i)));
        break;
    case EW_UNSIGNED:
        for (int64_t i = 0; i < n; i++)
            ir_tensor_seti(o, i, (int64_t)fn.u((uint64_t)ir_tensor_geti(x, i)));
        break;
    }
    return 0;
}
