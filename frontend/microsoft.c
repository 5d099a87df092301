/* microsoft.c - the com.microsoft contrib ops that ONNX Runtime's own tools
 * (onnxruntime.transformers.optimizer, the graph optimizers' saved models)
 * write into models, expanded into registry ops at import.
 *
 * None of these ops gets a row of its own in ir/ops.def: each is a fixed
 * composition of core ops, and expanding it lets the passes that already
 * exist do the work. A SkipLayerNormalization becomes Add + Add +
 * LayerNormalization, whose Adds the fuse pass makes the norm's prologue;
 * an Attention becomes the MatMul / Mul / Add / Softmax / MatMul chain that
 * exporters write, whose scale and mask become the first MatMul's
 * epilogue, exactly the kernels a decomposed BERT compiles to; FusedConv
 * becomes Conv + Add + activation, which fuse puts back into one kernel.
 * Semantics follow ONNX Runtime's CPU kernels (its ContribOperators.md for
 * the forms, its CPU results for the details checked in
 * tests/models/ms_ops_vs_ort.py): masks are additive mask_filter_value
 * (default -10000, not -inf) on the scaled scores, a key hidden by the mask
 * and by causality gets it once, the mask_index of EmbedLayerNormalization
 * counts the ones of each mask row.
 *
 * Attribute values and input forms outside what is expanded here (rotary
 * Attention, shared past/present buffers, the 3*B+2 and 4-D mask forms,
 * packed batching) are reported with the node's name, never approximated. An
 * attribute this file does not know is an error too: ONNX Runtime adds
 * attributes over time, and ignoring one could change the result.
 */
#include "frontend/internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define MS_DOMAIN "com.microsoft"

typedef int (*ms_fn)(fe_lower *l);

typedef struct ms_op {
    const char *name;
    bool onnx_domain;          /* in the default domain (ONNX Runtime's registrations there, and
                                * ONNX ops newer than the registry), not com.microsoft */
    const char *attrs;         /* space-separated names it accepts */
    ms_fn fn;
} ms_op;

static const ms_op *ms_find(const char *domain, const char *op_type);

bool fe_ms_supported(const fe_node *n)
{
    return ms_find(n->domain, n->op_type) != NULL;
}

/* ---- small emitters ------------------------------------------------------
 * Each returns the new node's first output, or NULL with the diagnostic
 * set; a NULL operand (an earlier failure) makes them return NULL at once,
 * so expansions can chain calls and check once. */

static int err(fe_lower *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int err(fe_lower *l, const char *fmt, ...)
{
    char buf[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return fe_node_errorf(fe_diag(l->c), l->src, "%s", buf);
}

static ir_value *emit(fe_lower *l, int op, const char *sfx, int nin, ir_value *const *in,
                      const ir_attr *attrs, int nattr, const char *out)
{
    for (int i = 0; i < ir_ops[op].min_in && i < nin; i++)
        if (!in[i])
            return NULL;
    const char *names[1] = {out};
    ir_node *n = fe_emit(l, op, sfx, nin, in, 1, names, attrs, nattr);
    return n ? n->out[0] : NULL;
}

static ir_value *un(fe_lower *l, int op, const char *sfx, ir_value *a)
{
    return emit(l, op, sfx, 1, &a, NULL, 0, NULL);
}

static ir_value *bin(fe_lower *l, int op, const char *sfx, ir_value *a, ir_value *b)
{
    ir_value *in[2] = {a, b};
    return a && b ? emit(l, op, sfx, 2, in, NULL, 0, NULL) : NULL;
}

static ir_attr attr_i(const char *name, int64_t v)
{
    return (ir_attr){.name = name, .kind = IR_ATTR_INT, .i = v};
}

static ir_attr attr_f(const char *name, float v)
{
    return (ir_attr){.name = name, .kind = IR_ATTR_FLOAT, .f = v};
}

static ir_value *ints(fe_lower *l, const char *sfx, int n, const int64_t *v)
{
    int64_t d = n;
    return fe_const(l, sfx, IR_I64, 1, &d, v);
}

static ir_value *scalar_i64(fe_lower *l, const char *sfx, int64_t v)
{
    return fe_const(l, sfx, IR_I64, 0, NULL, &v);
}

static ir_value *scalar_like(fe_lower *l, const char *sfx, ir_value *x, double v)
{
    return x ? fe_scalar_like(l, sfx, x, v) : NULL;
}

static ir_value *with_ints(fe_lower *l, int op, const char *sfx, ir_value *x, int n,
                           const int64_t *v, const ir_attr *attrs, int nattr)
{
    if (!x)
        return NULL;
    ir_value *in[2] = {x, ints(l, sfx, n, v)};
    return in[1] ? emit(l, op, sfx, 2, in, attrs, nattr, NULL) : NULL;
}

static ir_value *reshape(fe_lower *l, const char *sfx, ir_value *x, int n, const int64_t *dims)
{
    return with_ints(l, IR_OP_RESHAPE, sfx, x, n, dims, NULL, 0);
}

static ir_value *unsqueeze(fe_lower *l, const char *sfx, ir_value *x, int n, const int64_t *axes)
{
    return with_ints(l, IR_OP_UNSQUEEZE, sfx, x, n, axes, NULL, 0);
}

static ir_value *transpose(fe_lower *l, const char *sfx, ir_value *x, int n, const int64_t *perm)
{
    ir_attr a = {.name = "perm", .kind = IR_ATTR_INTS, .n = n, .ints = (int64_t *)perm};
    return x ? emit(l, IR_OP_TRANSPOSE, sfx, 1, &x, &a, 1, NULL) : NULL;
}

/* x[..., start:end, ...] along axis. */
static ir_value *slice(fe_lower *l, const char *sfx, ir_value *x, int64_t axis, int64_t start,
                       int64_t end)
{
    if (!x)
        return NULL;
    ir_value *in[4] = {x, ints(l, sfx, 1, &start), ints(l, sfx, 1, &end), ints(l, sfx, 1, &axis)};
    if (!in[1] || !in[2] || !in[3])
        return NULL;
    return emit(l, IR_OP_SLICE, sfx, 4, in, NULL, 0, NULL);
}

static ir_value *cast(fe_lower *l, const char *sfx, ir_value *x, ir_dtype to)
{
    ir_attr a = attr_i("to", ir_dtype_to_onnx(to));
    return x ? emit(l, IR_OP_CAST, sfx, 1, &x, &a, 1, NULL) : NULL;
}

static ir_value *concat(fe_lower *l, const char *sfx, int n, ir_value *const *in, int64_t axis,
                        const char *out)
{
    for (int i = 0; i < n; i++)
        if (!in[i])
            return NULL;
    ir_attr a = attr_i("axis", axis);
    return emit(l, IR_OP_CONCAT, sfx, n, in, &a, 1, out);
}

/* Binds the computed value v to the node's output i (an Identity, which
 * simplify removes, so that the ONNX name survives). */
static int bind(fe_lower *l, int i, ir_value *v)
{
    if (!v)
        return -1;
    return emit(l, IR_OP_IDENTITY, NULL, 1, &v, NULL, 0, l->out[i]) ? 0 : -1;
}

/* ---- node access ---------------------------------------------------------- */

static ir_value *in_at(fe_lower *l, int i)
{
    return i < l->nin ? l->in[i] : NULL;
}

/* Whether ONNX output i is wanted (named) by the model. */
static bool wants(fe_lower *l, int i)
{
    return i < l->nout && i < l->src->nout && *l->src->out[i];
}

static int64_t get_i(fe_lower *l, const char *name, int64_t def)
{
    ir_attr *a = fe_attr_find(l, name);
    return a && a->kind == IR_ATTR_INT ? a->i : def;
}

static float get_f(fe_lower *l, const char *name, float def)
{
    ir_attr *a = fe_attr_find(l, name);
    return a && a->kind == IR_ATTR_FLOAT ? a->f : def;
}

static int rank_of(ir_value *v)
{
    return v ? v->type.rank : -1;
}

static bool dim_known(ir_value *v, int i)
{
    return v && v->type.rank > i && ir_dim_is_const(v->type.dims[i]);
}

static int64_t dim_of(ir_value *v, int i)
{
    return v->type.dims[i].v;
}

/* Error unless input i is present with a known rank in [lo, hi]. */
static int need(fe_lower *l, int i, const char *what, int lo, int hi)
{
    ir_value *v = in_at(l, i);
    if (!v)
        return err(l, "input %d (%s) is required", i, what);
    if (v->type.rank < lo || v->type.rank > hi) {
        if (v->type.rank < 0)
            return err(l, "input %d (%s) needs a known rank", i, what);
        if (lo == hi)
            return err(l, "input %d (%s) has rank %d, expected %d", i, what, v->type.rank, lo);
        return err(l, "input %d (%s) has rank %d, expected %d to %d", i, what, v->type.rank, lo, hi);
    }
    return 0;
}

/* [0, 1, ..., n) along v's dim axis as i64: a constant when the dim is
 * known, else Range(0, Shape(v)[axis], 1). */
static ir_value *dim_range(fe_lower *l, const char *sfx, ir_value *v, int axis)
{
    if (!v)
        return NULL;
    if (dim_known(v, axis)) {
        int64_t n = dim_of(v, axis);
        ir_value *c = fe_const(l, sfx, IR_I64, 1, &n, NULL);
        for (int64_t i = 0; c && i < n; i++)
            ((int64_t *)c->cval.data)[i] = i;
        return c;
    }
    ir_attr se[2] = {attr_i("start", axis), attr_i("end", axis + 1)};
    ir_value *n = emit(l, IR_OP_SHAPE, sfx, 1, &v, se, 2, NULL);
    int64_t zero = 0;
    n = with_ints(l, IR_OP_SQUEEZE, sfx, n, 1, &zero, NULL, 0);
    ir_value *in[3] = {scalar_i64(l, sfx, 0), n, scalar_i64(l, sfx, 1)};
    return in[0] && in[1] && in[2] ? emit(l, IR_OP_RANGE, sfx, 3, in, NULL, 0, NULL) : NULL;
}

/* ---- activations ---------------------------------------------------------- */

static ir_value *gelu(fe_lower *l, ir_value *x, bool tanh_form, const char *out)
{
    ir_attr a = {.name = "approximate", .kind = IR_ATTR_STRING, .s = tanh_form ? "tanh" : "none"};
    return x ? emit(l, IR_OP_GELU, tanh_form ? "gelu_tanh" : "gelu", 1, &x, &a, 1, out) : NULL;
}

/* Gelu(X): the exact (erf) form. */
static int ms_gelu(fe_lower *l)
{
    if (need(l, 0, "X", 0, IR_MAX_RANK) < 0)
        return -1;
    return gelu(l, l->in[0], false, l->out[0]) ? 0 : -1;
}

/* BiasGelu(A, B) = Gelu(A + B). */
static int ms_bias_gelu(fe_lower *l)
{
    if (need(l, 0, "A", 0, IR_MAX_RANK) < 0 || need(l, 1, "B", 0, IR_MAX_RANK) < 0)
        return -1;
    return gelu(l, bin(l, IR_OP_ADD, "bias", l->in[0], l->in[1]), false, l->out[0]) ? 0 : -1;
}

/* FastGelu(X, bias?) = the tanh form of Gelu of X (+ bias); ONNX Runtime's
 * 0.035677 is sqrt(2/pi) * 0.044715 rounded. */
static int ms_fast_gelu(fe_lower *l)
{
    if (need(l, 0, "X", 0, IR_MAX_RANK) < 0)
        return -1;
    ir_value *x = l->in[0];
    if (in_at(l, 1))
        x = bin(l, IR_OP_ADD, "bias", x, l->in[1]);
    return gelu(l, x, true, l->out[0]) ? 0 : -1;
}

/* X * Sigmoid(alpha * X), alpha from the attribute or def. */
static int x_sigmoid(fe_lower *l, float def)
{
    if (need(l, 0, "X", 0, IR_MAX_RANK) < 0)
        return -1;
    ir_value *x = l->in[0];
    ir_value *s = un(l, IR_OP_SIGMOID, "sigmoid",
                     bin(l, IR_OP_MUL, "alpha", x, scalar_like(l, "alpha", x, get_f(l, "alpha", def))));
    ir_value *in[2] = {x, s};
    return s && emit(l, IR_OP_MUL, NULL, 2, in, NULL, 0, l->out[0]) ? 0 : -1;
}

/* QuickGelu(X): alpha 1.702 by default. */
static int ms_quick_gelu(fe_lower *l) { return x_sigmoid(l, 1.702f); }

/* Swish (ONNX opset 24, newer than the registry): alpha 1 by default. */
static int onnx_swish(fe_lower *l) { return x_sigmoid(l, 1.0f); }

/* The activation attribute of FusedConv / FusedGemm applied to x, its
 * parameters from p[0..np). */
static ir_value *activation(fe_lower *l, ir_value *x, const char *act, const float *p, int np,
                            const char *out)
{
    if (!x)
        return NULL;
    ir_attr a[2];
    int na = 0;
    int op;
    if (!strcmp(act, "Relu")) {
        op = IR_OP_RELU;
    } else if (!strcmp(act, "Tanh")) {
        op = IR_OP_TANH;
    } else if (!strcmp(act, "Sigmoid")) {
        op = IR_OP_SIGMOID;
    } else if (!strcmp(act, "LeakyRelu")) {
        op = IR_OP_LEAKY_RELU;
        a[na++] = attr_f("alpha", np > 0 ? p[0] : 0.01f);
    } else if (!strcmp(act, "HardSigmoid")) {
        op = IR_OP_HARD_SIGMOID;
        a[na++] = attr_f("alpha", np > 0 ? p[0] : 0.2f);
        a[na++] = attr_f("beta", np > 1 ? p[1] : 0.5f);
    } else if (!strcmp(act, "Clip")) {
        if (np != 2) {
            err(l, "activation Clip needs activation_params [min, max], got %d values", np);
            return NULL;
        }
        ir_value *in[3] = {x, scalar_like(l, "min", x, p[0]), scalar_like(l, "max", x, p[1])};
        return in[1] && in[2] ? emit(l, IR_OP_CLIP, "clip", 3, in, NULL, 0, out) : NULL;
    } else {
        err(l, "activation '%.60s' is not supported (Relu, Tanh, Sigmoid, LeakyRelu, HardSigmoid, "
            "Clip are)", act);
        return NULL;
    }
    return emit(l, op, "act", 1, &x, a, na, out);
}

/* Moves the attributes named in `names` (space-separated) from l into a. */
static int take_attrs(fe_lower *l, const char *names, ir_attr *a, int cap)
{
    int n = 0;
    char buf[64];
    for (const char *p = names; *p;) {
        size_t k = strcspn(p, " ");
        snprintf(buf, sizeof buf, "%.*s", (int)k, p);
        ir_attr *f = fe_attr_find(l, buf);
        if (f && n < cap)
            a[n++] = *f;
        p += k;
        while (*p == ' ')
            p++;
    }
    return n;
}

/* FusedConv(X, W, B?, Z?) = activation(Conv(X, W, B) + Z). */
static int ms_fused_conv(fe_lower *l)
{
    if (need(l, 0, "X", 3, IR_MAX_RANK) < 0 || need(l, 1, "W", 3, IR_MAX_RANK) < 0)
        return -1;
    ir_attr ca[8];
    int nca = take_attrs(l, "auto_pad dilations group kernel_shape pads strides", ca, 8);
    ir_value *cin[3] = {l->in[0], l->in[1], in_at(l, 2)};
    ir_attr *act = fe_attr_find(l, "activation");
    ir_value *z = in_at(l, 3);
    const char *last = !act && !z ? l->out[0] : NULL;
    ir_value *y = emit(l, IR_OP_CONV, "conv", cin[2] ? 3 : 2, cin, ca, nca, last);
    if (z)
        y = bin(l, IR_OP_ADD, "sum", y, z);
    if (!act)
        return last ? (y ? 0 : -1) : bind(l, 0, y);
    ir_attr *pa = fe_attr_find(l, "activation_params");
    const float *p = pa && pa->kind == IR_ATTR_FLOATS ? pa->floats : NULL;
    return activation(l, y, act->s ? act->s : "", p, p ? pa->n : 0, l->out[0]) ? 0 : -1;
}

/* FusedGemm(A, B, C?) = activation(Gemm(A, B, C)), parameters in
 * activation_alpha / activation_beta. */
static int ms_fused_gemm(fe_lower *l)
{
    if (need(l, 0, "A", 2, 2) < 0 || need(l, 1, "B", 2, 2) < 0)
        return -1;
    ir_attr ga[4];
    int nga = take_attrs(l, "alpha beta transA transB", ga, 4);
    ir_value *gin[3] = {l->in[0], l->in[1], in_at(l, 2)};
    ir_attr *act = fe_attr_find(l, "activation");
    ir_value *y = emit(l, IR_OP_GEMM, "gemm", gin[2] ? 3 : 2, gin, ga, nga, act ? NULL : l->out[0]);
    if (!act)
        return y ? 0 : -1;
    const char *name = act->s ? act->s : "";
    if (fe_attr_find(l, "activation_gamma"))
        return err(l, "attribute 'activation_gamma' is not supported");
    if (!strcmp(name, "Clip"))
        return err(l, "activation Clip is not supported for FusedGemm");
    bool hs = !strcmp(name, "HardSigmoid");
    float p[2] = {get_f(l, "activation_alpha", hs ? 0.2f : 0.01f), get_f(l, "activation_beta", 0.5f)};
    return activation(l, y, name, p, 2, l->out[0]) ? 0 : -1;
}

/* FusedMatMul(A, B) = alpha * op(A) op(B): transA/transB swap the last two
 * dims; transBatchA/B move the first dim behind the batch dims, before
 * the row dim, or (with trans) behind the column dim:
 * [d0, d1 .. dk, r, c] is read as [d1 .. dk, d0, c] / [d1 .. dk, c, d0]. */
static ir_value *fused_operand(fe_lower *l, ir_value *x, const char *sfx, bool trans, bool batch)
{
    int r = rank_of(x);
    if (!trans && !batch)
        return x;
    if (r < 2 || (batch && r < 3)) {
        err(l, "%s of a rank-%d operand is not supported", batch ? "transBatch" : "trans", r);
        return NULL;
    }
    int64_t perm[IR_MAX_RANK];
    for (int i = 0; i < r; i++)
        perm[i] = i;
    if (batch) {
        for (int i = 0; i < r - 2; i++)
            perm[i] = i + 1;
        perm[r - 2] = trans ? r - 1 : 0;
        perm[r - 1] = trans ? 0 : r - 1;
    } else {
        perm[r - 2] = r - 1;
        perm[r - 1] = r - 2;
    }
    return transpose(l, sfx, x, r, perm);
}

static int ms_fused_matmul(fe_lower *l)
{
    if (need(l, 0, "A", 1, IR_MAX_RANK) < 0 || need(l, 1, "B", 1, IR_MAX_RANK) < 0)
        return -1;
    ir_value *a = fused_operand(l, l->in[0], "a", get_i(l, "transA", 0), get_i(l, "transBatchA", 0));
    ir_value *b = fused_operand(l, l->in[1], "b", get_i(l, "transB", 0), get_i(l, "transBatchB", 0));
    float alpha = get_f(l, "alpha", 1.0f);
    ir_value *in[2] = {a, b};
    if (!a || !b)
        return -1;
    ir_value *y = emit(l, IR_OP_MATMUL, alpha == 1.0f ? NULL : "matmul", 2, in, NULL, 0,
                       alpha == 1.0f ? l->out[0] : NULL);
    if (alpha == 1.0f)
        return y ? 0 : -1;
    in[0] = y;
    in[1] = scalar_like(l, "alpha", y, alpha);
    return y && in[1] && emit(l, IR_OP_MUL, NULL, 2, in, NULL, 0, l->out[0]) ? 0 : -1;
}

/* BiasAdd(X, bias, skip) = X + bias + skip (Stable Diffusion's UNet, NHWC). */
static int ms_bias_add(fe_lower *l)
{
    if (need(l, 0, "X", 3, 3) < 0 || need(l, 1, "bias", 1, 1) < 0 || need(l, 2, "skip", 3, 3) < 0)
        return -1;
    ir_value *in[2] = {bin(l, IR_OP_ADD, "bias", l->in[0], l->in[1]), l->in[2]};
    return in[0] && emit(l, IR_OP_ADD, NULL, 2, in, NULL, 0, l->out[0]) ? 0 : -1;
}

/* NhwcConv(X, W, B?): Conv on channels-last data, X [N, H, W, C] and W
 * [M, kH, kW, C/group] (the transformers optimizer's layout), Y
 * [N, OH, OW, M]; the Transposes of constant weights fold. */
static int ms_nhwc_conv(fe_lower *l)
{
    if (need(l, 0, "X", 3, IR_MAX_RANK) < 0 || need(l, 1, "W", 3, IR_MAX_RANK) < 0)
        return -1;
    int r = rank_of(l->in[0]);
    if (rank_of(l->in[1]) != r)
        return err(l, "X and W must have the same rank");
    int64_t to_first[IR_MAX_RANK], to_last[IR_MAX_RANK];
    to_first[0] = to_last[0] = 0;
    to_first[1] = r - 1;
    for (int i = 2; i < r; i++)
        to_first[i] = i - 1;
    for (int i = 1; i < r - 1; i++)
        to_last[i] = i + 1;
    to_last[r - 1] = 1;
    ir_attr ca[8];
    int nca = take_attrs(l, "auto_pad dilations group kernel_shape pads strides", ca, 8);
    ir_value *cin[3] = {transpose(l, "x_nchw", l->in[0], r, to_first),
                        transpose(l, "w_nchw", l->in[1], r, to_first), in_at(l, 2)};
    if (!cin[0] || !cin[1])
        return -1;
    ir_value *y = emit(l, IR_OP_CONV, "conv", cin[2] ? 3 : 2, cin, ca, nca, NULL);
    ir_attr perm = {.name = "perm", .kind = IR_ATTR_INTS, .n = r, .ints = to_last};
    return y && emit(l, IR_OP_TRANSPOSE, NULL, 1, &y, &perm, 1, l->out[0]) ? 0 : -1;
}

/* ---- normalizations ------------------------------------------------------- */

/* 1 / sqrt(mean(x^2 over the last rank-axis dims) + eps), dims kept. */
static ir_value *inv_rms(fe_lower *l, ir_value *x, int64_t axis, float eps)
{
    int r = rank_of(x);
    if (axis < 0)
        axis += r;
    int64_t axes[IR_MAX_RANK];
    int n = 0;
    for (int64_t i = axis; i < r; i++)
        axes[n++] = i;
    ir_attr kd = attr_i("keepdims", 1);
    ir_value *ms = with_ints(l, IR_OP_REDUCE_MEAN, "ms", bin(l, IR_OP_MUL, "sq", x, x), n, axes, &kd, 1);
    ir_value *v = bin(l, IR_OP_ADD, "ms_eps", ms, scalar_like(l, "eps", x, eps));
    return un(l, IR_OP_RECIPROCAL, "inv_std", un(l, IR_OP_SQRT, "rms", v));
}

/* input + skip (+ bias): the sum both skip norms normalize. */
static ir_value *skip_sum(fe_lower *l, int bias_at)
{
    ir_value *s = bin(l, IR_OP_ADD, "skip", l->in[0], l->in[1]);
    if (in_at(l, bias_at))
        s = bin(l, IR_OP_ADD, "bias", s, l->in[bias_at]);
    return s;
}

/* SkipLayerNormalization(input, skip, gamma, beta?, bias?) -> output,
 * mean?, inv_std_var?, input_skip_bias_sum?: LayerNormalization over the
 * last dim of input + skip + bias. */
static int ms_skip_ln(fe_lower *l)
{
    if (need(l, 0, "input", 2, 3) < 0 || need(l, 1, "skip", 1, 3) < 0 || need(l, 2, "gamma", 1, 1) < 0)
        return -1;
    ir_value *s = skip_sum(l, 4);
    if (!s)
        return -1;
    ir_value *in[3] = {s, l->in[2], in_at(l, 3)};
    ir_attr a[2] = {attr_i("axis", -1), attr_f("epsilon", get_f(l, "epsilon", 1e-12f))};
    int nout = wants(l, 2) ? 3 : wants(l, 1) ? 2 : 1;
    const char *outs[3] = {l->out[0], wants(l, 1) ? l->out[1] : NULL, wants(l, 2) ? l->out[2] : NULL};
    if (!fe_emit(l, IR_OP_LAYER_NORMALIZATION, NULL, in[2] ? 3 : 2, in, nout, outs, a, 2))
        return -1;
    return wants(l, 3) ? bind(l, 3, s) : 0;
}

/* SkipSimplifiedLayerNormalization(input, skip, gamma, bias?) -> output,
 * mean (never produced), inv_std_var?, input_skip_bias_sum?. */
static int ms_skip_sln(fe_lower *l)
{
    if (need(l, 0, "input", 2, 3) < 0 || need(l, 1, "skip", 1, 3) < 0 || need(l, 2, "gamma", 1, 1) < 0)
        return -1;
    if (wants(l, 1))
        return err(l, "output 1 (mean) is not computed by the simplified norm");
    ir_value *s = skip_sum(l, 3);
    float eps = get_f(l, "epsilon", 1e-12f);
    ir_value *in[2] = {s, l->in[2]};
    ir_attr a[2] = {attr_i("axis", -1), attr_f("epsilon", eps)};
    if (!s || !emit(l, IR_OP_RMS_NORMALIZATION, NULL, 2, in, a, 2, l->out[0]))
        return -1;
    if (wants(l, 2) && bind(l, 2, inv_rms(l, s, -1, eps)) < 0)
        return -1;
    return wants(l, 3) ? bind(l, 3, s) : 0;
}

/* SimplifiedLayerNormalization(X, scale) -> Y, inv_std_var? (ONNX
 * Runtime registers it in the default domain): RMSNormalization. */
static int ms_sln(fe_lower *l)
{
    if (need(l, 0, "X", 1, IR_MAX_RANK) < 0 || need(l, 1, "scale", 0, IR_MAX_RANK) < 0)
        return -1;
    int64_t axis = get_i(l, "axis", -1);
    float eps = get_f(l, "epsilon", 1e-5f);
    ir_value *in[2] = {l->in[0], l->in[1]};
    ir_attr a[2] = {attr_i("axis", axis), attr_f("epsilon", eps)};
    if (!emit(l, IR_OP_RMS_NORMALIZATION, NULL, 2, in, a, 2, l->out[0]))
        return -1;
    return wants(l, 1) ? bind(l, 1, inv_rms(l, l->in[0], axis, eps)) : 0;
}

/* EmbedLayerNormalization(input_ids, segment_ids?, word_embedding,
 * position_embedding, segment_embedding?, gamma, beta, mask?,
 * position_ids?) -> output, mask_index?, embedding_sum?:
 * LayerNorm(word[ids] + position[pos] (+ segment[seg])), pos = position_ids
 * or 0..S-1; mask_index[b] = the number of ones in mask row b (0 without
 * a mask). */
static int ms_embed_ln(fe_lower *l)
{
    if (need(l, 0, "input_ids", 2, 2) < 0 || need(l, 2, "word_embedding", 2, 2) < 0 ||
        need(l, 3, "position_embedding", 2, 2) < 0 || need(l, 5, "gamma", 1, 1) < 0 ||
        need(l, 6, "beta", 1, 1) < 0)
        return -1;
    ir_value *ids = l->in[0], *seg = in_at(l, 1), *segw = in_at(l, 4), *mask = in_at(l, 7);
    ir_value *pos = in_at(l, 8);
    if (!seg != !segw)
        return err(l, "segment_ids and segment_embedding must be given together");
    ir_attr ax0 = attr_i("axis", 0);
    ir_value *gin[2] = {l->in[2], ids};
    ir_value *sum = emit(l, IR_OP_GATHER, "word", 2, gin, &ax0, 1, NULL);
    gin[0] = l->in[3];
    gin[1] = pos ? pos : dim_range(l, "positions", ids, 1);
    sum = bin(l, IR_OP_ADD, "add_pos", sum, gin[1] ? emit(l, IR_OP_GATHER, "position", 2, gin, &ax0, 1, NULL) : NULL);
    if (seg) {
        gin[0] = segw;
        gin[1] = seg;
        sum = bin(l, IR_OP_ADD, "add_seg", sum, emit(l, IR_OP_GATHER, "segment", 2, gin, &ax0, 1, NULL));
    }
    ir_value *in[3] = {sum, l->in[5], l->in[6]};
    ir_attr a[2] = {attr_i("axis", -1), attr_f("epsilon", get_f(l, "epsilon", 1e-12f))};
    if (!sum || !emit(l, IR_OP_LAYER_NORMALIZATION, NULL, 3, in, a, 2, l->out[0]))
        return -1;
    if (wants(l, 1)) {
        ir_value *mi;
        if (mask) {
            ir_value *one = fe_const(l, "one", mask->type.dtype, 0, NULL, NULL);
            if (!one)
                return -1;
            ir_tensor_setf(&one->cval, 0, 1);
            int64_t ax1 = 1;
            ir_attr kd = attr_i("keepdims", 0);
            mi = with_ints(l, IR_OP_REDUCE_SUM, "mask_index",
                           cast(l, "ones", bin(l, IR_OP_EQUAL, "is_one", mask, one), IR_I32), 1, &ax1,
                           &kd, 1);
        } else {
            if (!dim_known(ids, 0))
                return err(l, "mask_index without a mask needs a known batch size");
            int64_t b = dim_of(ids, 0);
            mi = fe_const(l, "mask_index", IR_I32, 1, &b, NULL);
        }
        if (bind(l, 1, mi) < 0)
            return -1;
    }
    return wants(l, 2) ? bind(l, 2, sum) : 0;
}

/* ---- attention -------------------------------------------------------------- */

/* What the scores of one attention see, in ONNX Runtime's terms. */
typedef struct att {
    int64_t heads, dq, dv;     /* head count, Q/K and V head sizes */
    float scale, mask_filter;
    bool causal;
    ir_value *q, *k, *v;       /* [B,S,N*dq], [B,L,N*dq] or [B,N,L,dq], likewise v */
    ir_value *past_k, *past_v; /* [B,N,P,d] */
    ir_value *mask;            /* int32 mask_index / key_padding_mask */
    ir_value *bias;            /* attention_bias [B|1, N|1, S, T] */
    int out_k, out_v;          /* outputs for present K / V (-1: none) */
    bool present_packed;       /* Attention's one [2,B,N,T,d] present */
} att;

/* [B,S,N*d] -> [B,N,S,d]; a 4-D operand is taken as already split. */
static ir_value *split_heads(fe_lower *l, const char *sfx, ir_value *x, int64_t heads, int64_t d)
{
    if (rank_of(x) == 4)
        return x;
    static const int64_t perm[4] = {0, 2, 1, 3};
    int64_t shape[4] = {0, 0, heads, d};
    return transpose(l, sfx, reshape(l, sfx, x, 4, shape), 4, perm);
}

/* keep [B|1, 1, S|1, T] (bool): which keys each query may see. */
static ir_value *mask_keep(fe_lower *l, att *a, ir_value *qh, ir_value *kh, int64_t past)
{
    ir_value *m = a->mask, *keep = NULL;
    if (m) {
        if (m->type.dtype != IR_I32)
            {
            err(l, "the mask must be int32, not %s", ir_dtype_name(m->type.dtype));
            return NULL;
        }
        int r = rank_of(m);
        ir_value *x = l->in[0];
        if (r == 1) {
            bool per_batch = ir_dim_eq(m->type.dims[0], x->type.dims[0]);
            bool two = !per_batch && dim_known(m, 0) && dim_known(x, 0) &&
                       dim_of(m, 0) == 2 * dim_of(x, 0);
            if (!per_batch && !two) {
                err(l, "a 1-D mask must hold batch or 2 * batch lengths (the 3 * batch + 2 form "
                    "is not supported)");
                return NULL;
            }
            ir_value *ar = dim_range(l, "key_pos", kh, 2);
            int64_t ax1 = 1, b = dim_known(x, 0) ? dim_of(x, 0) : 0;
            ir_value *len = cast(l, "mask_i64", m, IR_I64);
            ir_value *end = unsqueeze(l, "end", two ? slice(l, "end", len, 0, 0, b) : len, 1, &ax1);
            keep = bin(l, IR_OP_LESS, "before_end", ar, end);
            if (two) {
                ir_value *st = unsqueeze(l, "start", slice(l, "start", len, 0, b, 2 * b), 1, &ax1);
                keep = bin(l, IR_OP_AND, "in_span", keep, bin(l, IR_OP_GREATER_OR_EQUAL, "after_start", ar, st));
            }
            static const int64_t ax12[2] = {1, 2};
            keep = unsqueeze(l, "keep", keep, 2, ax12);
        } else if (r == 2 || r == 3) {
            ir_value *zero = fe_const(l, "zero", IR_I32, 0, NULL, NULL);
            keep = bin(l, IR_OP_GREATER, "keep", m, zero);
            if (r == 2) {
                static const int64_t ax12[2] = {1, 2};
                keep = unsqueeze(l, "keep", keep, 2, ax12);
            } else {
                int64_t ax1 = 1;
                keep = unsqueeze(l, "keep", keep, 1, &ax1);
            }
        } else {
            /* 4-D is Megatron's [B, 1, M, M], which ONNX Runtime's CPU
             * kernel refuses too: nothing to check an expansion against */
            err(l, "a mask of rank %d is not supported (1-D lengths, 2-D and 3-D masks are)", r);
            return NULL;
        }
        if (!keep)
            return NULL;
    }
    if (a->causal) {
        /* key j is visible to query i when j <= i + past */
        int64_t ax1 = 1;
        ir_value *rows = dim_range(l, "query_pos", qh, 2);
        if (past)
            rows = bin(l, IR_OP_ADD, "query_pos", rows, scalar_i64(l, "past", past));
        rows = unsqueeze(l, "query_pos", rows, 1, &ax1);
        ir_value *c = bin(l, IR_OP_LESS_OR_EQUAL, "causal", dim_range(l, "key_pos", kh, 2), rows);
        keep = keep ? bin(l, IR_OP_AND, "keep", keep, c) : c;
    }
    return keep;
}

/* The attention proper, from projected Q, K, V to output 0 (and present). */
static int attend(fe_lower *l, att *a)
{
    ir_value *qh = split_heads(l, "q_heads", a->q, a->heads, a->dq);
    ir_value *kh = split_heads(l, "k_heads", a->k, a->heads, a->dq);
    ir_value *vh = split_heads(l, "v_heads", a->v, a->heads, a->dv);
    int64_t past = 0;
    if (a->past_k) {
        if (!dim_known(a->past_k, 2) && (a->mask || a->causal))
            return err(l, "a mask or causal attention with a past needs its length known");
        past = dim_known(a->past_k, 2) ? dim_of(a->past_k, 2) : 0;
        ir_value *ck[2] = {a->past_k, kh}, *cv[2] = {a->past_v, vh};
        kh = concat(l, "k_total", 2, ck, 2, NULL);
        vh = concat(l, "v_total", 2, cv, 2, NULL);
    }
    if (!qh || !kh || !vh)
        return -1;
    if (a->present_packed && a->out_k >= 0) {
        int64_t ax0 = 0;
        ir_value *p[2] = {unsqueeze(l, "present_k", kh, 1, &ax0), unsqueeze(l, "present_v", vh, 1, &ax0)};
        if (!concat(l, "present", 2, p, 0, l->out[a->out_k]))
            return -1;
    } else {
        if (a->out_k >= 0 && bind(l, a->out_k, kh) < 0)
            return -1;
        if (a->out_v >= 0 && bind(l, a->out_v, vh) < 0)
            return -1;
    }
    static const int64_t swap[4] = {0, 1, 3, 2};
    ir_value *s = bin(l, IR_OP_MATMUL, "scores", qh, transpose(l, "k_t", kh, 4, swap));
    s = bin(l, IR_OP_MUL, "scaled", s, scalar_like(l, "scale", s, a->scale));
    ir_value *keep = (a->mask || a->causal) ? mask_keep(l, a, qh, kh, past) : NULL;
    if ((a->mask || a->causal) && !keep)
        return -1;
    if (keep) {
        ir_value *w[3] = {keep, scalar_like(l, "zero", s, 0.0), scalar_like(l, "mask_filter", s, a->mask_filter)};
        s = bin(l, IR_OP_ADD, "masked", s, w[1] && w[2] ? emit(l, IR_OP_WHERE, "mask_bias", 3, w, NULL, 0, NULL) : NULL);
    }
    if (a->bias)
        s = bin(l, IR_OP_ADD, "biased", s, a->bias);
    ir_attr ax = attr_i("axis", -1);
    ir_value *p = s ? emit(l, IR_OP_SOFTMAX, "probs", 1, &s, &ax, 1, NULL) : NULL;
    static const int64_t back[4] = {0, 2, 1, 3};
    int64_t shape[3] = {0, 0, a->heads * a->dv};
    ir_value *o = transpose(l, "context", bin(l, IR_OP_MATMUL, "context", p, vh), 4, back);
    return bind(l, 0, reshape(l, "merge", o, 3, shape));
}

/* Attention(input, weights, bias?, mask_index?, past?, attention_bias?,
 * past_sequence_length?) -> output, present?: BERT's and GPT-2's
 * self-attention with the Q/K/V projection merged into one weight. */
static int ms_attention(fe_lower *l)
{
    if (need(l, 0, "input", 3, 3) < 0 || need(l, 1, "weights", 2, 2) < 0)
        return -1;
    if (get_i(l, "do_rotary", 0))
        return err(l, "do_rotary=1 is not supported");
    if (get_i(l, "past_present_share_buffer", 0) || in_at(l, 6))
        return err(l, "a shared past/present buffer (past_present_share_buffer, "
                   "past_sequence_length) is not supported");
    int64_t heads = get_i(l, "num_heads", 0);
    if (heads <= 0)
        return err(l, "num_heads must be positive");
    ir_value *w = l->in[1], *b = in_at(l, 2);
    if (!dim_known(w, 1))
        return err(l, "the weights' second dim must be known");
    int64_t sizes[3], total = dim_of(w, 1);
    ir_attr *hs = fe_attr_find(l, "qkv_hidden_sizes");
    if (hs && hs->kind == IR_ATTR_INTS && hs->n) {
        if (hs->n != 3)
            return err(l, "qkv_hidden_sizes needs 3 values, has %d", hs->n);
        memcpy(sizes, hs->ints, sizeof sizes);
    } else {
        if (total % 3)
            return err(l, "the weights' second dim %lld is not a multiple of 3", (long long)total);
        sizes[0] = sizes[1] = sizes[2] = total / 3;
    }
    for (int i = 0; i < 3; i++)
        if (sizes[i] <= 0 || sizes[i] % heads)
            return err(l, "hidden size %lld is not a positive multiple of %lld heads",
                       (long long)sizes[i], (long long)heads);
    if (sizes[0] != sizes[1] || sizes[0] + sizes[1] + sizes[2] != total)
        return err(l, "qkv_hidden_sizes [%lld, %lld, %lld] do not fit weights of width %lld "
                   "(Q and K must agree)", (long long)sizes[0], (long long)sizes[1],
                   (long long)sizes[2], (long long)total);
    att a = {.heads = heads, .dq = sizes[0] / heads, .dv = sizes[2] / heads,
             .mask_filter = get_f(l, "mask_filter_value", -10000.0f),
             .causal = get_i(l, "unidirectional", 0) != 0, .mask = in_at(l, 3),
             .bias = in_at(l, 5), .out_k = wants(l, 1) ? 1 : -1, .out_v = -1,
             .present_packed = true};
    a.scale = get_f(l, "scale", 0.0f);
    if (a.scale == 0.0f)
        a.scale = (float)(1.0 / sqrt((double)a.dq));
    ir_value *past = in_at(l, 4);
    if (past) {
        if (rank_of(past) != 5)
            return err(l, "past must have rank 5 [2, B, N, P, H]");
        if (sizes[2] != sizes[0])
            return err(l, "past needs equal Q, K and V hidden sizes");
        ir_attr ax0 = attr_i("axis", 0);
        ir_value *gi[2] = {past, scalar_i64(l, "past_k", 0)};
        a.past_k = gi[1] ? emit(l, IR_OP_GATHER, "past_k", 2, gi, &ax0, 1, NULL) : NULL;
        gi[1] = scalar_i64(l, "past_v", 1);
        a.past_v = gi[1] ? emit(l, IR_OP_GATHER, "past_v", 2, gi, &ax0, 1, NULL) : NULL;
        if (!a.past_k || !a.past_v)
            return -1;
    } else if (a.out_k >= 0) {
        return err(l, "output present needs the past input");
    }
    /* Three projections, not one and a split: the Split of the constant
     * weights folds, and each MatMul takes its bias as its epilogue. */
    ir_value *split = ints(l, "qkv_sizes", 3, sizes);
    ir_value *win[2] = {w, split};
    ir_attr ax1 = attr_i("axis", 1), ax0 = attr_i("axis", 0);
    ir_node *ws = split ? fe_emit(l, IR_OP_SPLIT, "w_split", 2, win, 3, NULL, &ax1, 1) : NULL;
    ir_node *bs = NULL;
    if (b) {
        win[0] = b;
        bs = fe_emit(l, IR_OP_SPLIT, "b_split", 2, win, 3, NULL, &ax0, 1);
        if (!bs)
            return -1;
    }
    if (!ws)
        return -1;
    ir_value *proj[3];
    static const char *const names[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++) {
        proj[i] = bin(l, IR_OP_MATMUL, names[i], l->in[0], ws->out[i]);
        if (bs)
            proj[i] = bin(l, IR_OP_ADD, names[i], proj[i], bs->out[i]);
        if (!proj[i])
            return -1;
    }
    a.q = proj[0];
    a.k = proj[1];
    a.v = proj[2];
    return attend(l, &a);
}

/* MultiHeadAttention(query, key?, value?, bias?, key_padding_mask?,
 * attention_bias?, past_key?, past_value?, past_sequence_length?,
 * cache_indirection?) -> output, present_key?, present_value?, qk?. Q, K,
 * V separate [B,S,hidden], packed QKV [B,S,N,3,H] (no key or value),
 * packed KV [B,L,N,2,H] (no value), or K and V already split [B,N,L,H]. */
static int ms_mha(fe_lower *l)
{
    if (need(l, 0, "query", 3, 5) < 0)
        return -1;
    if (in_at(l, 8) || in_at(l, 9))
        return err(l, "past_sequence_length and cache_indirection (shared buffers, beam search) "
                   "are not supported");
    if (wants(l, 3))
        return err(l, "output qk is not supported");
    int64_t heads = get_i(l, "num_heads", 0);
    if (heads <= 0)
        return err(l, "num_heads must be positive");
    ir_value *q = l->in[0], *k = in_at(l, 1), *v = in_at(l, 2), *bias = in_at(l, 3);
    int rq = rank_of(q), rk = rank_of(k), rv = rank_of(v);
    static const int64_t flat[3] = {0, 0, -1};
    if (rq == 5) {
        /* packed [B, S, N, 3, H] */
        if (k || v || !dim_known(q, 3) || dim_of(q, 3) != 3 || !dim_known(q, 4))
            return err(l, "a 5-D query must be packed QKV [B, S, N, 3, H] without key and value");
        int64_t ax3 = 3;
        ir_value *part[3];
        for (int i = 0; i < 3; i++)
            part[i] = reshape(l, "unpack", with_ints(l, IR_OP_SQUEEZE, "unpack",
                                                     slice(l, "unpack", q, 3, i, i + 1), 1, &ax3, NULL, 0),
                              3, flat);
        q = part[0];
        k = part[1];
        v = part[2];
    } else if (rq != 3) {
        return err(l, "query must be [B, S, hidden] or packed [B, S, N, 3, H]");
    } else if (rk == 5) {
        if (v || !dim_known(k, 3) || dim_of(k, 3) != 2)
            return err(l, "a 5-D key must be packed KV [B, L, N, 2, H] without value");
        int64_t ax3 = 3;
        ir_value *kk = k;
        k = reshape(l, "unpack_k", with_ints(l, IR_OP_SQUEEZE, "unpack_k", slice(l, "unpack_k", kk, 3, 0, 1), 1, &ax3, NULL, 0), 3, flat);
        v = reshape(l, "unpack_v", with_ints(l, IR_OP_SQUEEZE, "unpack_v", slice(l, "unpack_v", kk, 3, 1, 2), 1, &ax3, NULL, 0), 3, flat);
    } else if (!k || !v || !((rk == 3 && rv == 3) || (rk == 4 && rv == 4))) {
        return err(l, "key and value must both be [B, L, hidden] or both [B, N, L, H]");
    }
    if (!q || !k || !v)
        return -1;
    if (!dim_known(q, 2) || !dim_known(v, rank_of(v) - 1))
        return err(l, "the hidden sizes of query and value must be known");
    int64_t hq = dim_of(q, 2), hv = rank_of(v) == 4 ? dim_of(v, 3) * heads : dim_of(v, 2);
    if (hq % heads || hv % heads)
        return err(l, "hidden sizes %lld and %lld are not multiples of %lld heads", (long long)hq,
                   (long long)hv, (long long)heads);
    if (bias) {
        if (rank_of(k) == 4)
            return err(l, "a bias with key and value already split into heads is not supported");
        if (rank_of(bias) != 1 || !dim_known(bias, 0) || dim_of(bias, 0) != 2 * hq + hv)
            return err(l, "bias must be 1-D of %lld values", (long long)(2 * hq + hv));
        q = bin(l, IR_OP_ADD, "q_bias", q, slice(l, "q_bias", bias, 0, 0, hq));
        k = bin(l, IR_OP_ADD, "k_bias", k, slice(l, "k_bias", bias, 0, hq, 2 * hq));
        v = bin(l, IR_OP_ADD, "v_bias", v, slice(l, "v_bias", bias, 0, 2 * hq, 2 * hq + hv));
    }
    att a = {.heads = heads, .dq = hq / heads, .dv = hv / heads, .q = q, .k = k, .v = v,
             .mask_filter = get_f(l, "mask_filter_value", -10000.0f),
             .causal = get_i(l, "unidirectional", 0) != 0, .mask = in_at(l, 4),
             .bias = in_at(l, 5), .past_k = in_at(l, 6), .past_v = in_at(l, 7),
             .out_k = wants(l, 1) ? 1 : -1, .out_v = wants(l, 2) ? 2 : -1};
    a.scale = get_f(l, "scale", 0.0f);
    if (a.scale == 0.0f)
        a.scale = (float)(1.0 / sqrt((double)a.dq));
    if (!a.past_k != !a.past_v)
        return err(l, "past_key and past_value must be given together");
    if (a.past_k && (rank_of(a.past_k) != 4 || rank_of(a.past_v) != 4))
        return err(l, "past_key and past_value must be [B, N, P, H]");
    return attend(l, &a);
}

/* RotaryEmbedding(input, position_ids, cos_cache, sin_cache): rotates the
 * first rotary_embedding_dim entries of each head by the angles of its
 * position, pairs (x[i], x[i + d/2]) or, interleaved, (x[2i], x[2i+1]):
 * out_a = a cos - b sin, out_b = b cos + a sin. position_ids is [B, S], or
 * [1] holding the first position of every row. */
static int rotary(fe_lower *l, ir_value *x, ir_value *pos, ir_value *cosc, ir_value *sinc);

static int ms_rotary(fe_lower *l)
{
    if (need(l, 0, "input", 3, 4) < 0 || need(l, 1, "position_ids", 1, 2) < 0 ||
        need(l, 2, "cos_cache", 2, 2) < 0 || need(l, 3, "sin_cache", 2, 2) < 0)
        return -1;
    if (get_i(l, "is_packed_batching", 0))
        return err(l, "is_packed_batching=1 is not supported");
    if (get_f(l, "scale", 1.0f) != 1.0f)
        return err(l, "scale other than 1 is not supported");
    return rotary(l, l->in[0], l->in[1], l->in[2], l->in[3]);
}

/* ONNX's RotaryEmbedding (opset 23, not a registry op): the same rotation,
 * inputs (X, cos_cache, sin_cache, position_ids?); without position_ids
 * the caches are already per token, [B, S, d/2]. */
static int onnx_rotary(fe_lower *l)
{
    ir_value *pos = in_at(l, 3);
    if (need(l, 0, "X", 3, 4) < 0 || need(l, 1, "cos_cache", pos ? 2 : 3, pos ? 2 : 3) < 0 ||
        need(l, 2, "sin_cache", pos ? 2 : 3, pos ? 2 : 3) < 0 || (pos && need(l, 3, "position_ids", 2, 2) < 0))
        return -1;
    return rotary(l, l->in[0], pos, l->in[1], l->in[2]);
}

/* pos NULL: cosc and sinc are [B, S, d/2] already. */
static int rotary(fe_lower *l, ir_value *x, ir_value *pos, ir_value *cosc, ir_value *sinc)
{
    int cr = rank_of(cosc);
    bool three = rank_of(x) == 3, inter = get_i(l, "interleaved", 0) != 0;
    if (!dim_known(cosc, cr - 1) || !dim_known(x, rank_of(x) - 1))
        return err(l, "the caches' last dim and the input's last dim must be known");
    int64_t half = dim_of(cosc, cr - 1), rd = get_i(l, "rotary_embedding_dim", 0);
    if (half <= 0)
        return err(l, "the caches' last dim must be positive");
    int64_t heads = get_i(l, "num_heads", 0), hd;
    if (rd && rd != 2 * half)
        return err(l, "rotary_embedding_dim %lld does not match the caches' %lld", (long long)rd,
                   (long long)(2 * half));
    rd = 2 * half;
    if (three) {
        int64_t hidden = dim_of(x, 2);
        if (!heads)
            heads = hidden / rd;
        if (heads <= 0 || hidden % heads)
            return err(l, "hidden size %lld is not a multiple of num_heads %lld", (long long)hidden,
                       (long long)heads);
        hd = hidden / heads;
        int64_t shape[4] = {0, 0, heads, hd};
        x = reshape(l, "heads", x, 4, shape);          /* [B, S, N, H] */
    } else {
        hd = dim_of(x, 3);                              /* [B, N, S, H] */
    }
    if (rd > hd)
        return err(l, "rotary dim %lld exceeds the head size %lld", (long long)rd, (long long)hd);
    /* positions [B, S] (or [S]) */
    if (pos && rank_of(pos) == 1) {
        ir_value *ar = dim_range(l, "positions", x, three ? 1 : 2);
        pos = bin(l, IR_OP_ADD, "positions", ar, cast(l, "offset", pos, IR_I64));
    }
    ir_value *c = cosc, *s = sinc;
    if (pos) {
        ir_attr ax0 = attr_i("axis", 0);
        ir_value *gi[2] = {cosc, pos};
        c = emit(l, IR_OP_GATHER, "cos", 2, gi, &ax0, 1, NULL);
        gi[0] = sinc;
        s = emit(l, IR_OP_GATHER, "sin", 2, gi, &ax0, 1, NULL);
    }
    /* c, s: [B, S, d/2] or [S, d/2], broadcast against [B, S, N, H] as
     * [.., S, 1, d/2] or against [B, N, S, H] as [B, 1, S, d/2] / [S, d/2],
     * with a trailing 1 for the interleaved pairs */
    int pr = pos ? rank_of(pos) : 2;
    int64_t axes[2];
    int na = 0;
    if (three)
        axes[na++] = pr;
    else if (pr == 2)
        axes[na++] = 1;
    if (inter) {
        axes[na] = pr + na + 1;
        na++;
    }
    if (na) {
        c = unsqueeze(l, "cos", c, na, axes);
        s = unsqueeze(l, "sin", s, na, axes);
    }
    ir_value *rot = rd == hd ? x : slice(l, "rot", x, 3, 0, rd);
    ir_value *a, *b;
    if (inter) {
        int64_t shape[5] = {0, 0, 0, half, 2};
        rot = reshape(l, "pairs", rot, 5, shape);
        a = slice(l, "re", rot, 4, 0, 1);
        b = slice(l, "im", rot, 4, 1, 2);
    } else {
        a = slice(l, "re", rot, 3, 0, half);
        b = slice(l, "im", rot, 3, half, rd);
    }
    ir_value *ra = bin(l, IR_OP_SUB, "re_rot", bin(l, IR_OP_MUL, "re_cos", a, c), bin(l, IR_OP_MUL, "im_sin", b, s));
    ir_value *rb = bin(l, IR_OP_ADD, "im_rot", bin(l, IR_OP_MUL, "im_cos", b, c), bin(l, IR_OP_MUL, "re_sin", a, s));
    ir_value *parts[2] = {ra, rb};
    ir_value *y = concat(l, "rotated", 2, parts, inter ? 4 : 3, NULL);
    if (inter) {
        int64_t shape[4] = {0, 0, 0, rd};
        y = reshape(l, "rotated", y, 4, shape);
    }
    if (rd < hd) {
        ir_value *keep[2] = {y, slice(l, "pass", x, 3, rd, hd)};
        y = concat(l, "with_pass", 2, keep, 3, NULL);
    }
    if (three) {
        int64_t shape[3] = {0, 0, heads * hd};
        y = reshape(l, "merge", y, 3, shape);
    }
    return bind(l, 0, y);
}

/* ---- DynamicQuantizeLSTM ------------------------------------------------------
 * An LSTM whose weights are int8 (W [D, I, 4H], R [D, H, 4H]: transposed
 * from ONNX's LSTM, gates i o f c) with scales and zero points per
 * direction or per gate row, and whose activations are quantized on the
 * fly, as ONNX Runtime's CPU kernel does (checked against it in
 * tests/models/ms_ops_vs_ort.py): X, all S x B rows at once, with
 * DynamicQuantizeLinear's u8 range; the hidden state at every step, all B
 * rows together; integer products scaled by x_scale * w_scale. The time
 * steps are unrolled (the state's quantization couples the batch rows at
 * each step, which no core recurrent op does), so the sequence length
 * must be static and at most DQ_LSTM_MAX_STEPS. */
enum { DQ_LSTM_MAX_STEPS = 512 };

typedef struct dq_dir {
    ir_value *xw;              /* [S, B, 4H]: quantized X times W, scaled, plus both biases */
    ir_value *r, *r_zp, *r_scale;
    ir_value *p[3];            /* the peepholes of gates i, o, f ([H] each), or NULL */
    ir_value *h, *c;           /* the state ([B, H]; NULL h: zero, known at compile time) */
} dq_dir;

static ir_value *take(fe_lower *l, const char *sfx, ir_value *x, int64_t i)
{
    ir_value *in[2] = {x, scalar_i64(l, sfx, i)};
    ir_attr ax0 = attr_i("axis", 0);
    return x && in[1] ? emit(l, IR_OP_GATHER, sfx, 2, in, &ax0, 1, NULL) : NULL;
}

/* (q - zq) (w - zw) in i32, as f32 times q_scale * w_scale. */
static ir_value *q_matmul(fe_lower *l, const char *sfx, ir_node *q, ir_value *w, ir_value *w_zp,
                          ir_value *w_scale)
{
    if (!q)
        return NULL;
    ir_value *in[4] = {q->out[0], w, q->out[2], w_zp};
    ir_value *acc = w && w_zp ? emit(l, IR_OP_MATMUL_INTEGER, sfx, 4, in, NULL, 0, NULL) : NULL;
    return bin(l, IR_OP_MUL, sfx, cast(l, sfx, acc, IR_F32), bin(l, IR_OP_MUL, sfx, q->out[1], w_scale));
}

/* Gate k's input: its slice of g, plus peephole p times the cell c (when
 * both are there), clipped. */
static ir_value *gate_in(fe_lower *l, const char *sfx, ir_value *g, int k, int64_t H, float clip, ir_value *p,
                         ir_value *c)
{
    g = slice(l, sfx, g, 1, k * H, (k + 1) * H);
    if (p && c)
        g = bin(l, IR_OP_ADD, sfx, g, bin(l, IR_OP_MUL, sfx, p, c));
    if (clip > 0 && g) {
        ir_value *in[3] = {g, scalar_like(l, sfx, g, -clip), scalar_like(l, sfx, g, clip)};
        g = in[1] && in[2] ? emit(l, IR_OP_CLIP, sfx, 3, in, NULL, 0, NULL) : NULL;
    }
    return g;
}

/* One step of direction d at time t: the new h and c. */
static int dq_step(fe_lower *l, dq_dir *s, int d, int64_t t, int64_t H, float clip)
{
    char sfx[48];
    snprintf(sfx, sizeof sfx, "d%d_t%lld", d, (long long)t);
    ir_value *g = take(l, sfx, s->xw, t);
    if (s->h) {
        ir_node *q = fe_emit(l, IR_OP_DYNAMIC_QUANTIZE_LINEAR, sfx, 1, &s->h, 3, NULL, NULL, 0);
        g = bin(l, IR_OP_ADD, sfx, g, q_matmul(l, sfx, q, s->r, s->r_zp, s->r_scale));
    }
    ir_value *i = un(l, IR_OP_SIGMOID, sfx, gate_in(l, sfx, g, 0, H, clip, s->p[0], s->c));
    ir_value *f = un(l, IR_OP_SIGMOID, sfx, gate_in(l, sfx, g, 2, H, clip, s->p[2], s->c));
    ir_value *cc = un(l, IR_OP_TANH, sfx, gate_in(l, sfx, g, 3, H, clip, NULL, NULL));
    ir_value *c = bin(l, IR_OP_MUL, sfx, i, cc);
    if (s->c)
        c = bin(l, IR_OP_ADD, sfx, bin(l, IR_OP_MUL, sfx, f, s->c), c);
    ir_value *o = un(l, IR_OP_SIGMOID, sfx, gate_in(l, sfx, g, 1, H, clip, s->p[1], c));
    s->c = c;
    s->h = bin(l, IR_OP_MUL, sfx, o, un(l, IR_OP_TANH, sfx, c));
    return s->h ? 0 : -1;
}

static int ms_dq_lstm(fe_lower *l)
{
    enum { X, W, R, B, SEQ, H0, C0, P, WS, WZ, RS, RZ };
    if (need(l, X, "X", 3, 3) < 0 || need(l, W, "W", 3, 3) < 0 || need(l, R, "R", 3, 3) < 0 ||
        need(l, WS, "W_scale", 1, 2) < 0 || need(l, WZ, "W_zero_point", 1, 2) < 0 ||
        need(l, RS, "R_scale", 1, 2) < 0 || need(l, RZ, "R_zero_point", 1, 2) < 0)
        return -1;
    if (in_at(l, SEQ))
        return err(l, "input 4 (sequence_lens) is not supported");
    int64_t H = get_i(l, "hidden_size", 0);
    if (H <= 0)
        return err(l, "needs a positive hidden_size");
    if (get_i(l, "input_forget", 0))
        return err(l, "input_forget=1 is not supported");
    if (fe_attr_find(l, "activation_alpha") || fe_attr_find(l, "activation_beta"))
        return err(l, "activation_alpha/activation_beta are not supported");
    ir_attr *dir = fe_attr_find(l, "direction");
    const char *ds = dir && dir->kind == IR_ATTR_STRING ? dir->s : "forward";
    bool bidi = !strcmp(ds, "bidirectional"), rev = !strcmp(ds, "reverse");
    if (!bidi && !rev && strcmp(ds, "forward"))
        return err(l, "unknown direction '%.40s'", ds);
    int D = bidi ? 2 : 1;
    ir_attr *acts = fe_attr_find(l, "activations");
    if (acts) {
        static const char *const dflt[3] = {"Sigmoid", "Tanh", "Tanh"};
        if (acts->kind != IR_ATTR_STRINGS || acts->n != 3 * D)
            return err(l, "activations needs %d names", 3 * D);
        for (int k = 0; k < acts->n; k++)
            if (strcasecmp(acts->strings[k], dflt[k % 3]))
                return err(l, "activation '%.40s' is not supported (only Sigmoid, Tanh, Tanh)", acts->strings[k]);
    }
    float clip = get_f(l, "clip", 0);
    ir_value *x = l->in[X];
    if (!dim_known(x, 0) || !dim_known(x, 2))
        return err(l, "needs a static sequence length and input size (dims 0 and 2 of X): pin the inputs' dims "
                      "with --shape=NAME:DIMS");
    int64_t S = dim_of(x, 0), I = dim_of(x, 2);
    if (S < 1)
        return err(l, "needs at least one time step (dim 0 of X is %lld)", (long long)S);
    if (S > DQ_LSTM_MAX_STEPS)
        return err(l, "sequence length %lld is past the %d steps this expansion unrolls", (long long)S,
                   DQ_LSTM_MAX_STEPS);
    ir_value *w = l->in[W], *r = l->in[R];
    if (!dim_known(w, 0) || dim_of(w, 0) != D || !dim_known(w, 1) || dim_of(w, 1) != I ||
        !dim_known(w, 2) || dim_of(w, 2) != 4 * H)
        return err(l, "W must be [%d, %lld, %lld]", D, (long long)I, (long long)(4 * H));
    if (!dim_known(r, 0) || dim_of(r, 0) != D || !dim_known(r, 1) || dim_of(r, 1) != H ||
        !dim_known(r, 2) || dim_of(r, 2) != 4 * H)
        return err(l, "R must be [%d, %lld, %lld]", D, (long long)H, (long long)(4 * H));
    /* X, every row at once. */
    int64_t rows[2] = {-1, I}, back[3] = {S, -1, 4 * H};
    ir_value *x2 = reshape(l, "x_rows", x, 2, rows);
    ir_node *xq = x2 ? fe_emit(l, IR_OP_DYNAMIC_QUANTIZE_LINEAR, "x_quant", 1, &x2, 3, NULL, NULL, 0) : NULL;
    dq_dir st[2] = {{0}};
    ir_value *ys[2][DQ_LSTM_MAX_STEPS];
    for (int d = 0; d < D; d++) {
        char sfx[16];
        snprintf(sfx, sizeof sfx, "d%d", d);
        dq_dir *s = &st[d];
        ir_value *xw = q_matmul(l, sfx, xq, take(l, sfx, w, d), take(l, sfx, l->in[WZ], d),
                                take(l, sfx, l->in[WS], d));
        if (in_at(l, B)) {
            ir_value *b = take(l, sfx, l->in[B], d);
            xw = bin(l, IR_OP_ADD, sfx, xw,
                     bin(l, IR_OP_ADD, sfx, slice(l, sfx, b, 0, 0, 4 * H), slice(l, sfx, b, 0, 4 * H, 8 * H)));
        }
        s->xw = reshape(l, sfx, xw, 3, back);
        s->r = take(l, sfx, r, d);
        s->r_zp = take(l, sfx, l->in[RZ], d);
        s->r_scale = take(l, sfx, l->in[RS], d);
        ir_value *pd = in_at(l, P) ? take(l, sfx, l->in[P], d) : NULL;
        for (int k = 0; k < 3 && pd; k++)
            if (!(s->p[k] = slice(l, sfx, pd, 0, k * H, (k + 1) * H)))
                return -1;
        s->h = in_at(l, H0) ? take(l, sfx, l->in[H0], d) : NULL;
        s->c = in_at(l, C0) ? take(l, sfx, l->in[C0], d) : NULL;
        if (!s->xw || !s->r || !s->r_zp || !s->r_scale || (in_at(l, P) && !s->p[0]) ||
            (in_at(l, H0) && !s->h) || (in_at(l, C0) && !s->c))
            return -1;
        bool back_in_time = d == 1 || rev;
        for (int64_t k = 0; k < S; k++) {
            int64_t t = back_in_time ? S - 1 - k : k;
            if (dq_step(l, s, d, t, H, clip) < 0)
                return -1;
            int64_t axes[2] = {0, 1};
            if (!(ys[d][t] = unsqueeze(l, "y", s->h, 2, axes)))
                return -1;
        }
    }
    ir_value *per_dir[2];
    for (int d = 0; d < D; d++)
        per_dir[d] = concat(l, "y", (int)S, ys[d], 0, NULL);
    if (wants(l, 0) && bind(l, 0, D == 1 ? per_dir[0] : concat(l, "y", 2, per_dir, 1, NULL)) < 0)
        return -1;
    for (int k = 1; k <= 2; k++) {
        if (!wants(l, k))
            continue;
        ir_value *last[2];
        int64_t zero = 0;
        for (int d = 0; d < D; d++)
            last[d] = unsqueeze(l, k == 1 ? "y_h" : "y_c", k == 1 ? st[d].h : st[d].c, 1, &zero);
        if (bind(l, k, D == 1 ? last[0] : concat(l, k == 1 ? "y_h" : "y_c", 2, last, 0, NULL)) < 0)
            return -1;
    }
    return 0;
}

/* ---- dispatch --------------------------------------------------------------- */

static const ms_op ms_ops[] = {
    {"Attention", false, "num_heads unidirectional qkv_hidden_sizes scale mask_filter_value do_rotary "
                         "past_present_share_buffer rotary_embedding_dim", ms_attention},
    {"BiasAdd", false, "", ms_bias_add},
    {"BiasGelu", false, "", ms_bias_gelu},
    {"DynamicQuantizeLSTM", false, "activation_alpha activation_beta activations clip direction "
                                   "hidden_size input_forget", ms_dq_lstm},
    {"EmbedLayerNormalization", false, "epsilon mask_index_type", ms_embed_ln},
    {"FastGelu", false, "", ms_fast_gelu},
    {"FusedConv", false, "activation activation_params auto_pad dilations group kernel_shape pads "
                         "strides", ms_fused_conv},
    {"FusedGemm", false, "activation activation_alpha activation_beta activation_gamma alpha beta "
                         "transA transB", ms_fused_gemm},
    {"FusedMatMul", false, "alpha transA transB transBatchA transBatchB", ms_fused_matmul},
    {"Gelu", false, "", ms_gelu},
    {"MultiHeadAttention", false, "num_heads unidirectional scale mask_filter_value", ms_mha},
    {"NhwcConv", false, "auto_pad dilations group kernel_shape pads strides", ms_nhwc_conv},
    {"QuickGelu", false, "alpha", ms_quick_gelu},
    {"RotaryEmbedding", false, "interleaved num_heads rotary_embedding_dim is_packed_batching scale",
     ms_rotary},
    {"RotaryEmbedding", true, "interleaved num_heads rotary_embedding_dim", onnx_rotary},
    {"SimplifiedLayerNormalization", true, "axis epsilon stash_type", ms_sln},
    {"SkipLayerNormalization", false, "epsilon", ms_skip_ln},
    {"Swish", true, "alpha", onnx_swish},
    {"SkipSimplifiedLayerNormalization", false, "epsilon", ms_skip_sln},
    {"TransposeMatMul", false, "alpha transA transB", ms_fused_matmul},
};

static const ms_op *ms_find(const char *domain, const char *op_type)
{
    bool ms = domain && !strcmp(domain, MS_DOMAIN);
    bool dflt = fe_is_default_domain(domain);
    if (!ms && !dflt)
        return NULL;
    for (size_t i = 0; i < sizeof ms_ops / sizeof ms_ops[0]; i++)
        if (!strcmp(ms_ops[i].name, op_type) && (ms ? !ms_ops[i].onnx_domain : ms_ops[i].onnx_domain))
            return &ms_ops[i];
    return NULL;
}

static bool listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        size_t k = strcspn(p, " ");
        if (k == n && !strncmp(p, name, n))
            return true;
        p += k;
        while (*p == ' ')
            p++;
    }
    return false;
}

int fe_ms_lower(fe_lower *l)
{
    const ms_op *op = ms_find(l->src->domain, l->src->op_type);
    if (!op)
        return err(l, "is not supported");
    for (int i = 0; i < l->nattr; i++)
        if (!listed(op->attrs, l->attrs[i].name))
            return err(l, "attribute '%.100s' is not supported", l->attrs[i].name);
    l->done = true;
    return op->fn(l);
}
