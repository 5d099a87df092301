/* elementwise.c - shape functions of the elementwise ops and the
 * broadcasting kernels: binary arithmetic, comparison, logic and bitwise
 * ops and PRelu (ref_binary), variadic Max/Min/Sum/Mean, Where and Clip.
 * A kernel computes in double, int64 or uint64 according to the input
 * dtype's class (elementwise.h) and stores each result with one rounding.
 * Broadcast inputs are addressed with ir_bcast_offset once per run along
 * the output's last dim; all-f32 runs take a direct loop, so big tensors
 * go at memory speed.
 * Unary ops live in elementwise_unary.c, Cast in elementwise_cast.c. */
#include "ir/ref/elementwise.h"

#include <math.h>
#include <string.h>

/* ---- shared helpers ------------------------------------------------------ */

ew_class ew_class_of(ir_dtype t)
{
    if (ir_dtype_is_float(t))
        return EW_FLOAT;
    if (ir_dtype_is_signed(t))
        return EW_SIGNED;
    return EW_UNSIGNED;
}

float ew_float_odd(double v)
{
    float f = (float)v;
    if (isnan(v) || (double)f == v)
        return f;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    /* Float magnitudes are ordered like their bit patterns, so one step
     * down in the bits is one step toward zero (inf becomes FLT_MAX). */
    if (fabs((double)f) > fabs(v))
        u--;
    u |= 1;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ONNX leaves out-of-range float -> integer conversions undefined; we
 * saturate, so constant folding never depends on the host's behaviour. */
static void set_int_saturated(ir_tensor *t, int64_t i, double v)
{
    int bits = (int)ir_dtype_size(t->dtype) * 8;
    if (isnan(v)) {
        ir_tensor_seti(t, i, 0);
    } else if (ir_dtype_is_signed(t->dtype)) {
        int64_t max = (int64_t)((UINT64_C(1) << (bits - 1)) - 1);
        double lim = ldexp(1.0, bits - 1);
        ir_tensor_seti(t, i, v >= lim ? max : v <= -lim ? -max - 1 : (int64_t)v);
    } else {
        uint64_t max = bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
        double lim = ldexp(1.0, bits);
        ir_tensor_seti(t, i, (int64_t)(v >= lim ? max : v <= 0 ? 0 : (uint64_t)v));
    }
}

void ew_setf(ir_tensor *t, int64_t i, double v)
{
    switch (t->dtype) {
    case IR_F32: ((float *)t->data)[i] = (float)v; return;
    case IR_F64: ((double *)t->data)[i] = v; return;
    case IR_F16: ((uint16_t *)t->data)[i] = ir_f32_to_f16(ew_float_odd(v)); return;
    case IR_BF16: ((uint16_t *)t->data)[i] = ir_f32_to_bf16(ew_float_odd(v)); return;
    case IR_BOOL: ((uint8_t *)t->data)[i] = v != 0; return;
    default: set_int_saturated(t, i, v); return;
    }
}

int ew_check_accepts(ir_shape_ctx *c, ir_dtype t)
{
    if (t == IR_UNDEF || ir_op_accepts_dtype(c->node->op, t))
        return 0;
    return ir_node_errorf(c->diag, c->node, "input dtype %s is not supported (expects %s)",
                          ir_dtype_name(t), ir_ops[c->node->op].types);
}

/* ---- shape functions ----------------------------------------------------- */

static int need_input(ir_shape_ctx *c, int i)
{
    if (i < c->nin && c->in[i])
        return 0;
    return ir_node_errorf(c->diag, c->node, "input %d is missing", i);
}

/* Inputs i and j must have the same dtype (unknown matches anything). */
static int same_dtype(ir_shape_ctx *c, int i, int j)
{
    ir_dtype a = c->in[i]->dtype, b = c->in[j]->dtype;
    if (a == IR_UNDEF || b == IR_UNDEF || a == b)
        return 0;
    return ir_node_errorf(c->diag, c->node, "input %d has dtype %s but input %d has %s",
                          j, ir_dtype_name(b), i, ir_dtype_name(a));
}

/* Broadcasts inputs [first, first+n) into out; dtype: the first known. */
static int broadcast_inputs(ir_shape_ctx *c, int first, int n, ir_type *out)
{
    ir_type acc = *c->in[first];
    for (int k = first + 1; k < first + n; k++) {
        if (ir_broadcast_types(c, &acc, c->in[k], &acc) < 0)
            return -1;
        if (acc.dtype == IR_UNDEF)
            acc.dtype = c->in[k]->dtype;
    }
    *out = acc;
    return 0;
}

/* Mod's fmod=0 is Python's % and is defined on integers only; BitShift is
 * defined on unsigned integers and needs a direction. */
static int check_binary_attrs(ir_shape_ctx *c, ir_dtype t)
{
    const ir_node *n = c->node;
    if (n->op == IR_OP_MOD && ir_dtype_is_float(t) && ir_attr_int(n, "fmod", 0) == 0)
        return ir_node_errorf(c->diag, n, "fmod=0 is defined on integers only; "
                              "%s inputs need fmod=1", ir_dtype_name(t));
    if (n->op == IR_OP_BIT_SHIFT) {
        const char *dir = ir_attr_string(n, "direction", "");
        if (strcmp(dir, "LEFT") && strcmp(dir, "RIGHT"))
            return ir_node_errorf(c->diag, n, "direction must be \"LEFT\" or \"RIGHT\", not \"%.64s\"",
                                  dir);
        if (ir_dtype_is_signed(t))
            return ir_node_errorf(c->diag, n, "input dtype %s is not supported (expects an "
                                  "unsigned integer)", ir_dtype_name(t));
    }
    return 0;
}

/* Every input has input 0's dtype; the output has it too and the
 * multidirectional broadcast of all input shapes. */
int shape_broadcast(ir_shape_ctx *c)
{
    for (int i = 0; i < c->nin; i++)
        if (need_input(c, i) < 0 || same_dtype(c, 0, i) < 0)
            return -1;
    if (ew_check_accepts(c, c->in[0]->dtype) < 0 || broadcast_inputs(c, 0, c->nin, c->out) < 0)
        return -1;
    return check_binary_attrs(c, c->out[0].dtype);
}

/* Pow: the exponent may have any numeric dtype; the output takes the
 * base's. */
int shape_broadcast_lhs(ir_shape_ctx *c)
{
    if (need_input(c, 0) < 0 || need_input(c, 1) < 0 || ew_check_accepts(c, c->in[0]->dtype) < 0)
        return -1;
    ir_dtype e = c->in[1]->dtype;
    if (e != IR_UNDEF && !ir_dtype_is_float(e) && !ir_dtype_is_int(e))
        return ir_node_errorf(c->diag, c->node, "exponent dtype %s is not numeric", ir_dtype_name(e));
    if (ir_broadcast_types(c, c->in[0], c->in[1], c->out) < 0)
        return -1;
    c->out[0].dtype = c->in[0]->dtype;
    return 0;
}

/* Comparisons: same-dtype inputs, broadcast, bool output. */
int shape_compare(ir_shape_ctx *c)
{
    if (shape_broadcast(c) < 0)
        return -1;
    c->out[0].dtype = IR_BOOL;
    return 0;
}

/* Where(cond, X, Y): cond is bool, X and Y share the output's dtype; all
 * three broadcast together. */
int shape_where(ir_shape_ctx *c)
{
    for (int i = 0; i < 3; i++)
        if (need_input(c, i) < 0)
            return -1;
    if (c->in[0]->dtype != IR_UNDEF && c->in[0]->dtype != IR_BOOL)
        return ir_node_errorf(c->diag, c->node, "condition dtype %s must be bool",
                              ir_dtype_name(c->in[0]->dtype));
    if (same_dtype(c, 1, 2) < 0 || broadcast_inputs(c, 0, 3, c->out) < 0)
        return -1;
    c->out[0].dtype = c->in[1]->dtype != IR_UNDEF ? c->in[1]->dtype : c->in[2]->dtype;
    return 0;
}

/* Unary ops: the output is the input's type. */
int shape_unary(ir_shape_ctx *c)
{
    if (need_input(c, 0) < 0 || ew_check_accepts(c, c->in[0]->dtype) < 0 ||
        ew_unary_check(c->node, c->diag) < 0)
        return -1;
    c->out[0] = *c->in[0];
    return 0;
}

/* IsNaN, IsInf: the input's shape, bool. */
int shape_unary_bool(ir_shape_ctx *c)
{
    if (shape_unary(c) < 0)
        return -1;
    c->out[0].dtype = IR_BOOL;
    return 0;
}

/* PRelu: slope must broadcast unidirectionally to X (right-aligned, each
 * of its dims 1 or X's); the output is X's type. */
int shape_prelu(ir_shape_ctx *c)
{
    if (need_input(c, 0) < 0 || need_input(c, 1) < 0 || same_dtype(c, 0, 1) < 0 ||
        ew_check_accepts(c, c->in[0]->dtype) < 0)
        return -1;
    const ir_type *x = c->in[0], *s = c->in[1];
    if (x->rank >= 0 && s->rank >= 0) {
        if (s->rank > x->rank)
            return ir_node_errorf(c->diag, c->node, "slope of rank %d does not broadcast to "
                                  "input of rank %d", s->rank, x->rank);
        for (int i = 0; i < s->rank; i++) {
            ir_dim ds = s->dims[i], dx = x->dims[x->rank - s->rank + i];
            if (ir_dim_is_const(ds) && ir_dim_is_const(dx) && ds.v != 1 && ds.v != dx.v)
                return ir_node_errorf(c->diag, c->node, "slope dim %d (%lld) does not "
                                      "broadcast to %lld", i, (long long)ds.v, (long long)dx.v);
        }
    }
    c->out[0] = *x;
    return 0;
}

/* Clip: min and max, when present, are one-element tensors of X's dtype. */
int shape_clip(ir_shape_ctx *c)
{
    if (need_input(c, 0) < 0 || ew_check_accepts(c, c->in[0]->dtype) < 0)
        return -1;
    for (int i = 1; i < c->nin; i++) {
        int64_t n;
        if (!c->in[i])
            continue;
        if (same_dtype(c, 0, i) < 0)
            return -1;
        if (ir_type_numel(c->in[i], &n) && n != 1)
            return ir_node_errorf(c->diag, c->node, "%s must be a scalar, got %lld elements",
                                  i == 1 ? "min" : "max", (long long)n);
    }
    c->out[0] = *c->in[0];
    return 0;
}

/* ---- element functions ---------------------------------------------------- */

/* One function per computation class; NULL where the op does not apply.
 * Signed arithmetic goes through uint64 so overflow wraps instead of being
 * undefined. Comparisons return 0/1, stored into the bool output. */
typedef struct binfns {
    double (*f)(double, double);
    int64_t (*s)(int64_t, int64_t);
    uint64_t (*u)(uint64_t, uint64_t);
} binfns;

static double f_add(double a, double b) { return a + b; }
static int64_t s_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static uint64_t u_add(uint64_t a, uint64_t b) { return a + b; }
static double f_sub(double a, double b) { return a - b; }
static int64_t s_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static uint64_t u_sub(uint64_t a, uint64_t b) { return a - b; }
static double f_mul(double a, double b) { return a * b; }
static int64_t s_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
static uint64_t u_mul(uint64_t a, uint64_t b) { return a * b; }

/* Integer division truncates toward zero. x/0 is 0 (ONNX leaves it
 * undefined; C makes it a trap), and INT64_MIN/-1 wraps to INT64_MIN. */
static double f_div(double a, double b) { return a / b; }
static int64_t s_div(int64_t a, int64_t b)
{
    if (b == 0)
        return 0;
    if (b == -1)
        return (int64_t)(0 - (uint64_t)a);
    return a / b;
}
static uint64_t u_div(uint64_t a, uint64_t b) { return b ? a / b : 0; }

/* Remainders: x mod 0 is 0 for integers (numpy's result); C fmod gives
 * NaN for floats, as ONNX specifies. */
static int64_t s_rem(int64_t a, int64_t b) { return b == 0 || b == -1 ? 0 : a % b; }
static uint64_t u_rem(uint64_t a, uint64_t b) { return b ? a % b : 0; }
/* Python's %: the result takes the divisor's sign. */
static int64_t s_pymod(int64_t a, int64_t b)
{
    int64_t r = s_rem(a, b);
    return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}

/* Integer powers by squaring, wrapping like repeated multiplication. A
 * negative exponent gives 1/x^n truncated toward zero: 0 unless |x| is 1
 * (and 0 for x = 0, where numpy raises). */
static uint64_t u_pow(uint64_t x, uint64_t e)
{
    uint64_t r = 1;
    for (; e; e >>= 1, x *= x)
        if (e & 1)
            r *= x;
    return r;
}
static int64_t s_pow(int64_t x, int64_t e)
{
    if (e < 0)
        return x == 1 ? 1 : x == -1 ? ((e & 1) ? -1 : 1) : 0;
    return (int64_t)u_pow((uint64_t)x, (uint64_t)e);
}

/* Max/Min propagate NaN (numpy's maximum/minimum, the ONNX reference), and
 * order -0 below +0 as IEEE 754-2019's maximum and minimum do, like the
 * compiled kernels (llvm.maximum/minimum), so neither depends on the
 * order of its operands. */
static double f_max(double a, double b)
{
    return isnan(a) ? a : isnan(b) ? b : a > b ? a : a < b ? b : signbit(a) ? b : a;
}
static int64_t s_max(int64_t a, int64_t b) { return a > b ? a : b; }
static uint64_t u_max(uint64_t a, uint64_t b) { return a > b ? a : b; }
static double f_min(double a, double b)
{
    return isnan(a) ? a : isnan(b) ? b : a < b ? a : a > b ? b : signbit(a) ? a : b;
}
static int64_t s_min(int64_t a, int64_t b) { return a < b ? a : b; }
static uint64_t u_min(uint64_t a, uint64_t b) { return a < b ? a : b; }

static double f_eq(double a, double b) { return a == b; }
static int64_t s_eq(int64_t a, int64_t b) { return a == b; }
static uint64_t u_eq(uint64_t a, uint64_t b) { return a == b; }
static double f_lt(double a, double b) { return a < b; }
static int64_t s_lt(int64_t a, int64_t b) { return a < b; }
static uint64_t u_lt(uint64_t a, uint64_t b) { return a < b; }
static double f_gt(double a, double b) { return a > b; }
static int64_t s_gt(int64_t a, int64_t b) { return a > b; }
static uint64_t u_gt(uint64_t a, uint64_t b) { return a > b; }
static double f_le(double a, double b) { return a <= b; }
static int64_t s_le(int64_t a, int64_t b) { return a <= b; }
static uint64_t u_le(uint64_t a, uint64_t b) { return a <= b; }
static double f_ge(double a, double b) { return a >= b; }
static int64_t s_ge(int64_t a, int64_t b) { return a >= b; }
static uint64_t u_ge(uint64_t a, uint64_t b) { return a >= b; }

static uint64_t u_and(uint64_t a, uint64_t b) { return a && b; }
static uint64_t u_or(uint64_t a, uint64_t b) { return a || b; }
static uint64_t u_xor(uint64_t a, uint64_t b) { return !a != !b; }
static int64_t s_band(int64_t a, int64_t b) { return a & b; }
static uint64_t u_band(uint64_t a, uint64_t b) { return a & b; }
static int64_t s_bor(int64_t a, int64_t b) { return a | b; }
static uint64_t u_bor(uint64_t a, uint64_t b) { return a | b; }
static int64_t s_bxor(int64_t a, int64_t b) { return a ^ b; }
static uint64_t u_bxor(uint64_t a, uint64_t b) { return a ^ b; }

/* Shifts by the bit width or more give 0; bits shifted past a narrow
 * dtype's width are dropped when the result is stored. */
static uint64_t u_shl(uint64_t a, uint64_t b) { return b >= 64 ? 0 : a << b; }
static uint64_t u_shr(uint64_t a, uint64_t b) { return b >= 64 ? 0 : a >> b; }

static double f_prelu(double x, double s) { return x < 0 ? x * s : x; }
static int64_t s_prelu(int64_t x, int64_t s) { return x < 0 ? s_mul(x, s) : x; }
static uint64_t u_prelu(uint64_t x, uint64_t s) { (void)s; return x; }

static int binfns_of(const ir_node *n, binfns *fn, icc_diag *d)
{
    binfns r = {0};
    switch (n->op) {
    case IR_OP_ADD: case IR_OP_SUM: case IR_OP_MEAN: r = (binfns){f_add, s_add, u_add}; break;
    case IR_OP_SUB: r = (binfns){f_sub, s_sub, u_sub}; break;
    case IR_OP_MUL: r = (binfns){f_mul, s_mul, u_mul}; break;
    case IR_OP_DIV: r = (binfns){f_div, s_div, u_div}; break;
    case IR_OP_POW: r = (binfns){pow, s_pow, u_pow}; break;
    case IR_OP_MAX: r = (binfns){f_max, s_max, u_max}; break;
    case IR_OP_MIN: r = (binfns){f_min, s_min, u_min}; break;
    case IR_OP_EQUAL: r = (binfns){f_eq, s_eq, u_eq}; break;
    case IR_OP_LESS: r = (binfns){f_lt, s_lt, u_lt}; break;
    case IR_OP_GREATER: r = (binfns){f_gt, s_gt, u_gt}; break;
    case IR_OP_LESS_OR_EQUAL: r = (binfns){f_le, s_le, u_le}; break;
    case IR_OP_GREATER_OR_EQUAL: r = (binfns){f_ge, s_ge, u_ge}; break;
    case IR_OP_AND: r.u = u_and; break;
    case IR_OP_OR: r.u = u_or; break;
    case IR_OP_XOR: r.u = u_xor; break;
    case IR_OP_BITWISE_AND: r = (binfns){NULL, s_band, u_band}; break;
    case IR_OP_BITWISE_OR: r = (binfns){NULL, s_bor, u_bor}; break;
    case IR_OP_BITWISE_XOR: r = (binfns){NULL, s_bxor, u_bxor}; break;
    case IR_OP_PRELU: r = (binfns){f_prelu, s_prelu, u_prelu}; break;
    case IR_OP_MOD:
        if (ir_attr_int(n, "fmod", 0))
            r = (binfns){fmod, s_rem, u_rem};
        else
            r = (binfns){NULL, s_pymod, u_rem};
        break;
    case IR_OP_BIT_SHIFT: {
        const char *dir = ir_attr_string(n, "direction", "");
        if (!strcmp(dir, "LEFT"))
            r.u = u_shl;
        else if (!strcmp(dir, "RIGHT"))
            r.u = u_shr;
        else
            return ir_node_errorf(d, n, "direction must be \"LEFT\" or \"RIGHT\", not \"%.64s\"",
                                  dir);
        break;
    }
    default:
        return ir_node_errorf(d, n, "is not an elementwise binary op");
    }
    *fn = r;
    return 0;
}

static int check_class(const ir_node *n, const binfns *fn, ew_class cls, ir_dtype t, icc_diag *d)
{
    if ((cls == EW_FLOAT && fn->f) || (cls == EW_SIGNED && fn->s) || (cls == EW_UNSIGNED && fn->u))
        return 0;
    return ir_node_errorf(d, n, "input dtype %s is not supported", ir_dtype_name(t));
}

/* ---- broadcast addressing -------------------------------------------------- */

/* The output is walked in runs along its last dim; when no input needs
 * real broadcasting the whole tensor is one run. At a run's start each
 * input's offset comes from ir_bcast_offset (or directly: an input as
 * large as the output has the output's layout, since broadcasting never
 * shrinks a dim; a one-element input sits at 0), and along the run it
 * steps by 1, or by 0 when its last dim is repeated. */
typedef struct runs {
    const ir_tensor *o;
    int64_t len, count;
    int64_t idx[IR_MAX_RANK];  /* output index of the current run's start */
} runs;

static void runs_init(runs *r, const ir_tensor *o, const ir_tensor *const *in, int nin)
{
    bool whole = true;
    for (int k = 0; k < nin; k++)
        if (in[k]->numel != o->numel && in[k]->numel != 1)
            whole = false;
    r->o = o;
    r->len = whole || o->rank == 0 ? o->numel : o->dims[o->rank - 1];
    r->count = r->len ? o->numel / r->len : 0;
    memset(r->idx, 0, sizeof r->idx);
}

static int64_t run_start(const runs *r, const ir_tensor *t, int64_t run)
{
    if (t->numel == r->o->numel)
        return run * r->len;
    if (t->numel == 1)
        return 0;
    return ir_bcast_offset(t, r->idx, r->o->rank);
}

static int64_t run_step(const runs *r, const ir_tensor *t)
{
    if (t->numel == r->o->numel)
        return 1;
    if (t->numel == 1)
        return 0;
    return t->dims[t->rank - 1] != 1;
}

static void runs_next(runs *r)
{
    ir_index_next(r->idx, r->o->dims, r->o->rank - 1);
}

/* ---- kernels ------------------------------------------------------------ */

/* One run of a binary op: n outputs from io, operands from ia/ib stepping
 * by sa/sb. All-f32 runs skip the dtype dispatch; computing in double and
 * rounding once equals f32 arithmetic for + - * /. */
static void binary_run(ew_class cls, const binfns *fn, const ir_tensor *a, int64_t ia, int64_t sa,
                       const ir_tensor *b, int64_t ib, int64_t sb, ir_tensor *o, int64_t io,
                       int64_t n)
{
    if (cls == EW_FLOAT && a->dtype == IR_F32 && b->dtype == IR_F32 && o->dtype == IR_F32) {
        const float *x = (const float *)a->data + ia, *y = (const float *)b->data + ib;
        float *z = (float *)o->data + io;
        if (fn->f == f_add && sa && sb) {
            for (int64_t j = 0; j < n; j++)
                z[j] = x[j] + y[j];
        } else if (fn->f == f_mul && sa && sb) {
            for (int64_t j = 0; j < n; j++)
                z[j] = x[j] * y[j];
        } else {
            for (int64_t j = 0; j < n; j++)
                z[j] = (float)fn->f(x[j * sa], y[j * sb]);
        }
        return;
    }
    for (int64_t j = 0; j < n; j++, ia += sa, ib += sb) {
        switch (cls) {
        case EW_FLOAT:
            ew_setf(o, io + j, fn->f(ir_tensor_getf(a, ia), ir_tensor_getf(b, ib)));
            break;
        case EW_SIGNED:
            ir_tensor_seti(o, io + j, fn->s(ir_tensor_geti(a, ia), ir_tensor_geti(b, ib)));
            break;
        case EW_UNSIGNED:
            ir_tensor_seti(o, io + j, (int64_t)fn->u((uint64_t)ir_tensor_geti(a, ia),
                                                     (uint64_t)ir_tensor_geti(b, ib)));
            break;
        }
    }
}

/* Binary ops with multidirectional broadcasting (PRelu: unidirectional,
 * which the same addressing covers). Pow with an integer base and a float
 * exponent computes in double and truncates back, like numpy's
 * power(...).astype(base dtype). */
int ref_binary(ir_ref_ctx *c)
{
    const ir_tensor *a = c->in[0], *b = c->in[1];
    ir_tensor *o = c->out[0];
    binfns fn;
    if (binfns_of(c->node, &fn, c->diag) < 0)
        return -1;
    ew_class cls = ew_class_of(a->dtype);
    if (ir_dtype_is_float(b->dtype))
        cls = EW_FLOAT;
    if (check_class(c->node, &fn, cls, a->dtype, c->diag) < 0)
        return -1;
    runs r;
    runs_init(&r, o, (const ir_tensor *const[]){a, b}, 2);
    int64_t sa = run_step(&r, a), sb = run_step(&r, b);
    for (int64_t k = 0; k < r.count; k++, runs_next(&r))
        binary_run(cls, &fn, a, run_start(&r, a, k), sa, b, run_start(&r, b, k), sb, o,
                   k * r.len, r.len);
    return 0;
}

/* Max, Min, Sum, Mean over any number of broadcast inputs, folded left
 * to right per element in the computation class; Mean divides the double
 * sum once. Two inputs (the common case) go through binary_run. */
int ref_variadic(ir_ref_ctx *c)
{
    ir_tensor *o = c->out[0];
    const ir_tensor *const *in = c->in;
    binfns fn;
    int64_t off[64], step[64];
    int nin = c->nin;
    if (nin > 64)
        return ir_node_errorf(c->diag, c->node, "more than 64 inputs");
    for (int k = 0; k < nin; k++)
        if (!in[k])
            return ir_node_errorf(c->diag, c->node, "input %d is missing", k);
    if (binfns_of(c->node, &fn, c->diag) < 0)
        return -1;
    ew_class cls = ew_class_of(in[0]->dtype);
    if (check_class(c->node, &fn, cls, in[0]->dtype, c->diag) < 0)
        return -1;
    bool mean = c->node->op == IR_OP_MEAN;
    runs r;
    runs_init(&r, o, in, nin);
    for (int k = 0; k < nin; k++)
        step[k] = run_step(&r, in[k]);
    for (int64_t q = 0; q < r.count; q++, runs_next(&r)) {
        for (int k = 0; k < nin; k++)
            off[k] = run_start(&r, in[k], q);
        int64_t io = q * r.len;
        if (!mean && nin == 2) {
            binary_run(cls, &fn, in[0], off[0], step[0], in[1], off[1], step[1], o, io, r.len);
            continue;
        }
        for (int64_t j = 0; j < r.len; j++) {
            if (cls == EW_FLOAT) {
                double v = ir_tensor_getf(in[0], off[0] + j * step[0]);
                for (int k = 1; k < nin; k++)
                    v = fn.f(v, ir_tensor_getf(in[k], off[k] + j * step[k]));
                ew_setf(o, io + j, mean ? v / nin : v);
            } else if (cls == EW_SIGNED) {
                int64_t v = ir_tensor_geti(in[0], off[0] + j * step[0]);
                for (int k = 1; k < nin; k++)
                    v = fn.s(v, ir_tensor_geti(in[k], off[k] + j * step[k]));
                ir_tensor_seti(o, io + j, v);
            } else {
                uint64_t v = (uint64_t)ir_tensor_geti(in[0], off[0] + j * step[0]);
                for (int k = 1; k < nin; k++)
                    v = fn.u(v, (uint64_t)ir_tensor_geti(in[k], off[k] + j * step[k]));
                ir_tensor_seti(o, io + j, (int64_t)v);
            }
        }
    }
    return 0;
}

/* Where copies whole elements, so it is exact for every dtype. */
int ref_where(ir_ref_ctx *c)
{
    const ir_tensor *cond = c->in[0], *x = c->in[1], *y = c->in[2];
    ir_tensor *o = c->out[0];
    size_t es = ir_dtype_size(o->dtype);
    const uint8_t *cd = cond->data, *xd = x->data, *yd = y->data;
    uint8_t *od = o->data;
    runs r;
    runs_init(&r, o, c->in, 3);
    int64_t sc = run_step(&r, cond), sx = run_step(&r, x), sy = run_step(&r, y);
    for (int64_t k = 0; k < r.count; k++, runs_next(&r)) {
        int64_t ic = run_start(&r, cond, k), ix = run_start(&r, x, k), iy = run_start(&r, y, k);
        for (int64_t j = 0; j < r.len; j++) {
            const uint8_t *src = cd[ic + j * sc] ? xd + (size_t)(ix + j * sx) * es
                                                 : yd + (size_t)(iy + j * sy) * es;
            memcpy(od + (size_t)(k * r.len + j) * es, src, es);
        }
    }
    return 0;
}

/* Clip = Min(max, Max(x, min)): a missing bound is no bound, NaN stays
 * NaN, and min > max gives max everywhere. */
int ref_clip(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    const ir_tensor *lo = c->nin > 1 ? c->in[1] : NULL, *hi = c->nin > 2 ? c->in[2] : NULL;
    ir_tensor *o = c->out[0];
    if ((lo && lo->numel != 1) || (hi && hi->numel != 1))
        return ir_node_errorf(c->diag, c->node, "min and max must be scalars");
    switch (ew_class_of(x->dtype)) {
    case EW_FLOAT: {
        double l = lo ? ir_tensor_getf(lo, 0) : -INFINITY, h = hi ? ir_tensor_getf(hi, 0) : INFINITY;
        if (x->dtype == IR_F32) {
            const float *xd = x->data;
            float *od = o->data;
            for (int64_t i = 0; i < x->numel; i++)
                od[i] = (float)f_min(f_max(xd[i], l), h);
        } else {
            for (int64_t i = 0; i < x->numel; i++)
                ew_setf(o, i, f_min(f_max(ir_tensor_getf(x, i), l), h));
        }
        break;
    }
    case EW_SIGNED: {
        int64_t l = lo ? ir_tensor_geti(lo, 0) : INT64_MIN, h = hi ? ir_tensor_geti(hi, 0) : INT64_MAX;
        for (int64_t i = 0; i < x->numel; i++)
            ir_tensor_seti(o, i, s_min(s_max(ir_tensor_geti(x, i), l), h));
        break;
    }
    case EW_UNSIGNED: {
        uint64_t l = lo ? (uint64_t)ir_tensor_geti(lo, 0) : 0;
        uint64_t h = hi ? (uint64_t)ir_tensor_geti(hi, 0) : UINT64_MAX;
        for (int64_t i = 0; i < x->numel; i++)
            ir_tensor_seti(o, i, (int64_t)u_min(u_max((uint64_t)ir_tensor_geti(x, i), l), h));
        break;
    }
    }
    return 0;
}
