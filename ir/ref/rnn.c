/* rnn.c - shape function and reference kernel of the recurrent ops LSTM,
 * GRU and RNN (the newest ONNX opset; the frontend maps older ones), and
 * the decoding of their attributes that the lowering shares (rnn.h).
 *
 * Shapes (H hidden, G gates, D directions): X [T, B, I] (layout 1:
 * [B, T, I]), W [D, G H, I], R [D, G H, H], B [D, 2 G H] (the input then
 * the recurrent biases), sequence_lens [B], initial_h / initial_c
 * [D, B, H] (layout 1: [B, D, H]), P [D, 3 H] (LSTM peepholes i, o, f).
 * Outputs Y [T, D, B, H] (layout 1: [B, T, D, H]), Y_h and Y_c as
 * initial_h. weights_t = w (internal, set by the pack-b pass) stores W
 * and R transposed, typed [D, I, G H] and [D, H, G H], each matrix in
 * column panels of w gate rows (ir_rnn_panel_at), the order the compiled
 * kernel's tiles read along the gate rows.
 *
 * One step of direction d, batch item b, with x the step's input and h,
 * c the state (clip(v) clamps to [-clip, clip] when clip is given; each
 * gate's pre-activation includes both biases):
 *   LSTM (gates i, o, f, c):
 *     i = f(clip(x W_i + h R_i + P_i c)); f = 1 - i if input_forget
 *     else f(clip(x W_f + h R_f + P_f c)); g = g(clip(x W_c + h R_c));
 *     c' = f c + i g; o = f(clip(x W_o + h R_o + P_o c')); h' = o h(c')
 *   GRU (gates z, r, h):
 *     z = f(clip(x W_z + h R_z)); r = f(clip(x W_r + h R_r));
 *     n = g(clip(x W_h + (r h) R_h + Rb_h))  or, linear_before_reset,
 *     n = g(clip(x W_h + r (h R_h + Rb_h))); h' = (1 - z) n + z h
 *   RNN: h' = f(clip(x W + h R))
 * The clip and activation order follows ONNX Runtime. With
 * sequence_lens, item b runs only its first len_b steps (a reverse
 * direction walks them from len_b - 1 down to 0), Y is 0 at the steps
 * past len_b, and Y_h/Y_c are the state after its last step (the initial
 * state when len_b is 0).
 */
#include "ir/ref/rnn.h"
#include "ir/ref/ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- attributes ---------------------------------------------------------- */

static const struct {
    const char *name;
    ir_rnn_act_kind kind;
    bool uses_alpha, uses_beta;
    double alpha, beta;
} act_table[] = {
    {"Relu", IR_RNN_RELU, false, false, 0, 0},
    {"Tanh", IR_RNN_TANH, false, false, 0, 0},
    {"Sigmoid", IR_RNN_SIGMOID, false, false, 0, 0},
    {"Affine", IR_RNN_AFFINE, true, true, 0, 0},
    {"LeakyRelu", IR_RNN_LEAKY_RELU, true, false, 0.01, 0},
    {"ThresholdedRelu", IR_RNN_THRESHOLDED_RELU, true, false, 1.0, 0},
    {"ScaledTanh", IR_RNN_SCALED_TANH, true, true, 0, 0},
    {"HardSigmoid", IR_RNN_HARD_SIGMOID, true, true, 0.2, 0.5},
    {"Elu", IR_RNN_ELU, true, false, 1.0, 0},
    {"Softsign", IR_RNN_SOFTSIGN, false, false, 0, 0},
    {"Softplus", IR_RNN_SOFTPLUS, false, false, 0, 0},
};

int ir_rnn_attrs_get(const ir_node *n, ir_rnn_attrs *a, icc_diag *d)
{
    memset(a, 0, sizeof *a);
    a->op = n->op;
    switch (n->op) {
    case IR_OP_LSTM:
        a->gates = 4, a->nacts = 3;
        break;
    case IR_OP_GRU:
        a->gates = 3, a->nacts = 2;
        break;
    default:
        a->gates = 1, a->nacts = 1;
        break;
    }
    const char *dir = ir_attr_string(n, "direction", "forward");
    if (!strcmp(dir, "forward") || !strcmp(dir, "reverse")) {
        a->dirs = 1;
        a->reverse = dir[0] == 'r';
    } else if (!strcmp(dir, "bidirectional")) {
        a->dirs = 2;
    } else {
        return ir_node_errorf(d, n, "direction must be forward, reverse or bidirectional, got '%.60s'", dir);
    }
    int64_t layout = ir_attr_int(n, "layout", 0);
    if (layout != 0 && layout != 1)
        return ir_node_errorf(d, n, "layout must be 0 or 1, got %lld", (long long)layout);
    a->layout = (int)layout;
    a->hidden = ir_node_attr(n, "hidden_size") ? ir_attr_int(n, "hidden_size", 0) : -1;
    if (ir_node_attr(n, "hidden_size") && a->hidden <= 0)
        return ir_node_errorf(d, n, "hidden_size must be positive, got %lld", (long long)a->hidden);
    if (ir_node_attr(n, "clip")) {
        a->has_clip = true;
        a->clip = ir_attr_float(n, "clip", 0);
        if (!(a->clip > 0))
            return ir_node_errorf(d, n, "clip must be positive, got %g", a->clip);
    }
    a->input_forget = n->op == IR_OP_LSTM && ir_attr_int(n, "input_forget", 0) != 0;
    a->linear_before_reset = n->op == IR_OP_GRU && ir_attr_int(n, "linear_before_reset", 0) != 0;
    a->weights_t = ir_attr_int(n, "weights_t", 0);
    if (a->weights_t < 0)
        return ir_node_errorf(d, n, "weights_t must be 0 or a panel width, got %lld", (long long)a->weights_t);

    static const ir_rnn_act_kind defaults[3][3] = {
        {IR_RNN_TANH}, {IR_RNN_SIGMOID, IR_RNN_TANH}, {IR_RNN_SIGMOID, IR_RNN_TANH, IR_RNN_TANH}};
    const ir_attr *names = ir_node_attr(n, "activations");
    int count = names ? names->n : 0;
    if (names && names->kind != IR_ATTR_STRINGS)
        return ir_node_errorf(d, n, "activations must be a list of strings");
    if (count && count != a->nacts && count != a->nacts * a->dirs)
        return ir_node_errorf(d, n, "activations lists %d functions; %d per direction are needed", count,
                              a->nacts);
    const float *al = NULL, *be = NULL;
    int nal = ir_attr_floats(n, "activation_alpha", &al), nbe = ir_attr_floats(n, "activation_beta", &be);
    int ia = 0, ib = 0;
    for (int k = 0; k < a->nacts * a->dirs; k++) {
        ir_rnn_act *t = &a->act[k / a->nacts][k % a->nacts];
        if (!count) {
            t->kind = defaults[a->nacts - 1][k % a->nacts];
            continue;
        }
        if (k >= count) { /* one direction's list for both */
            *t = a->act[0][k % a->nacts];
            continue;
        }
        size_t e = 0, ne = sizeof act_table / sizeof *act_table;
        while (e < ne && strcasecmp(act_table[e].name, names->strings[k]))
            e++;
        if (e == ne)
            return ir_node_errorf(d, n, "activation '%.60s' is not one of Relu, Tanh, Sigmoid, Affine, LeakyRelu, "
                                  "ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus",
                                  names->strings[k]);
        t->kind = act_table[e].kind;
        t->alpha = act_table[e].alpha;
        t->beta = act_table[e].beta;
        if (act_table[e].uses_alpha && ia < nal)
            t->alpha = al[ia++];
        if (act_table[e].uses_beta && ib < nbe)
            t->beta = be[ib++];
    }
    return 0;
}

double ir_rnn_act_apply(const ir_rnn_act *a, double x)
{
    switch (a->kind) {
    case IR_RNN_RELU:
        return x > 0 ? x : 0;
    case IR_RNN_TANH:
        return tanh(x);
    case IR_RNN_SIGMOID:
        return 1 / (1 + exp(-x));
    case IR_RNN_AFFINE:
        return a->alpha * x + a->beta;
    case IR_RNN_LEAKY_RELU:
        return x >= 0 ? x : a->alpha * x;
    case IR_RNN_THRESHOLDED_RELU:
        return x > a->alpha ? x : 0;
    case IR_RNN_SCALED_TANH:
        return a->alpha * tanh(a->beta * x);
    case IR_RNN_HARD_SIGMOID: {
        double v = a->alpha * x + a->beta;
        return v < 0 ? 0 : v > 1 ? 1 : v;
    }
    case IR_RNN_ELU:
        return x >= 0 ? x : a->alpha * expm1(x);
    case IR_RNN_SOFTSIGN:
        return x / (1 + fabs(x));
    case IR_RNN_SOFTPLUS:
        return log1p(exp(x));
    }
    return x;
}

/* ---- shapes -------------------------------------------------------------- */

static const ir_type *opt_type(const ir_shape_ctx *c, int i)
{
    return i < c->nin ? c->in[i] : NULL;
}

/* Known dims a and b must agree. */
static int agree(ir_shape_ctx *c, ir_dim a, ir_dim b, const char *what)
{
    if (ir_dim_is_const(a) && ir_dim_is_const(b) && a.v != b.v)
        return ir_node_errorf(c->diag, c->node, "%s: %lld against %lld", what, (long long)a.v, (long long)b.v);
    return 0;
}

static ir_dim dim_mul(ir_dim a, int64_t m)
{
    return ir_dim_is_const(a) ? ir_dim_const(a.v * m) : ir_dim_unknown();
}

/* Optional input i must have rank `rank` (when known) and, dim by dim,
 * the wanted dims. */
static int check_in(ir_shape_ctx *c, int i, const char *name, int rank, const ir_dim *want, ir_dtype dt)
{
    const ir_type *t = opt_type(c, i);
    if (!t)
        return 0;
    if (dt != IR_UNDEF && t->dtype != dt)
        return ir_node_errorf(c->diag, c->node, "%s has dtype %s; X has %s", name, ir_dtype_name(t->dtype),
                              ir_dtype_name(dt));
    if (t->rank < 0)
        return 0;
    if (t->rank != rank)
        return ir_node_errorf(c->diag, c->node, "%s must have rank %d, got %d", name, rank, t->rank);
    char what[96];
    for (int k = 0; k < rank; k++) {
        snprintf(what, sizeof what, "%s's dim %d", name, k);
        if (agree(c, t->dims[k], want[k], what) < 0)
            return -1;
    }
    return 0;
}

int shape_rnn(ir_shape_ctx *c)
{
    const ir_node *n = c->node;
    ir_rnn_attrs a;
    if (ir_rnn_attrs_get(n, &a, c->diag) < 0)
        return -1;
    const ir_type *x = c->in[0], *w = c->in[1], *r = c->in[2];
    ir_dtype dt = x->dtype;
    if (!ir_dtype_is_float(dt))
        return ir_node_errorf(c->diag, n, "X must be a float tensor, got %s", ir_dtype_name(dt));
    if (w->dtype != dt || r->dtype != dt)
        return ir_node_errorf(c->diag, n, "W and R must have X's dtype %s", ir_dtype_name(dt));
    if (c->nin > IR_RNN_IN_C0 && n->op != IR_OP_LSTM)
        return ir_node_errorf(c->diag, n, "has %d inputs; only LSTM takes initial_c and P", c->nin);
    if (c->nout > 2 && n->op != IR_OP_LSTM)
        return ir_node_errorf(c->diag, n, "has %d outputs; only LSTM has Y_c", c->nout);
    if (x->rank >= 0 && x->rank != 3)
        return ir_node_errorf(c->diag, n, "X must have rank 3, got %d", x->rank);
    if ((w->rank >= 0 && w->rank != 3) || (r->rank >= 0 && r->rank != 3))
        return ir_node_errorf(c->diag, n, "W and R must have rank 3, got %d and %d", w->rank, r->rank);
    ir_dim T = ir_dim_unknown(), B = ir_dim_unknown(), I = ir_dim_unknown();
    if (x->rank == 3) {
        T = x->dims[a.layout ? 1 : 0];
        B = x->dims[a.layout ? 0 : 1];
        I = x->dims[2];
    }
    ir_dim H = a.hidden > 0 ? ir_dim_const(a.hidden) : r->rank == 3 ? r->dims[ir_rnn_r_hidden_dim(a.weights_t)] : ir_dim_unknown();
    ir_dim D = ir_dim_const(a.dirs), GH = dim_mul(H, a.gates);
    ir_dim wd[3] = {D, GH, I}, rd[3] = {D, GH, H}, bd[2] = {D, dim_mul(H, 2 * a.gates)};
    if (a.weights_t)
        wd[1] = I, wd[2] = GH, rd[1] = H, rd[2] = GH;
    ir_dim sd[1] = {B}, pd[2] = {D, dim_mul(H, 3)};
    ir_dim hd[3] = {D, B, H};
    if (a.layout)
        hd[0] = B, hd[1] = D;
    if (check_in(c, IR_RNN_IN_W, "W", 3, wd, IR_UNDEF) < 0 || check_in(c, IR_RNN_IN_R, "R", 3, rd, IR_UNDEF) < 0 ||
        check_in(c, IR_RNN_IN_B, "B", 2, bd, dt) < 0 || check_in(c, IR_RNN_IN_H0, "initial_h", 3, hd, dt) < 0 ||
        check_in(c, IR_RNN_IN_C0, "initial_c", 3, hd, dt) < 0 || check_in(c, IR_RNN_IN_P, "P", 2, pd, dt) < 0 ||
        check_in(c, IR_RNN_IN_SEQ, "sequence_lens", 1, sd, IR_UNDEF) < 0)
        return -1;
    const ir_type *sl = opt_type(c, IR_RNN_IN_SEQ);
    if (sl && !ir_dtype_is_int(sl->dtype))
        return ir_node_errorf(c->diag, n, "sequence_lens must be an integer tensor, got %s",
                              ir_dtype_name(sl->dtype));
    ir_type *y = &c->out[0];
    ir_type_unknown(y, dt, 4);
    if (a.layout) {
        y->dims[0] = B, y->dims[1] = T, y->dims[2] = D, y->dims[3] = H;
    } else {
        y->dims[0] = T, y->dims[1] = D, y->dims[2] = B, y->dims[3] = H;
    }
    for (int o = 1; o < c->nout; o++) {
        ir_type_unknown(&c->out[o], dt, 3);
        memcpy(c->out[o].dims, hd, sizeof hd);
    }
    return 0;
}

/* ---- the kernel ---------------------------------------------------------- */

typedef struct {
    ir_rnn_attrs a;
    int64_t T, B, I, H;
    const ir_tensor *x, *w, *r, *b, *seq, *h0, *c0, *p;
} rnn_run;

static double clipv(const rnn_run *q, double v)
{
    if (!q->a.has_clip)
        return v;
    return v < -q->a.clip ? -q->a.clip : v > q->a.clip ? q->a.clip : v;
}

/* Element of a [D, B, H] state tensor (layout 1: [B, D, H]). */
static int64_t state_at(const rnn_run *q, int64_t d, int64_t b, int64_t j)
{
    return q->a.layout ? (b * q->a.dirs + d) * q->H + j : (d * q->B + b) * q->H + j;
}

/* x_t W_g^T + bias for gate block g, row j (both biases unless only_w). */
static double in_proj(const rnn_run *q, int64_t d, int64_t t, int64_t b, int g, int64_t j, bool only_w)
{
    int64_t row = g * q->H + j, G = q->a.gates;
    int64_t xo = q->a.layout ? (b * q->T + t) * q->I : (t * q->B + b) * q->I;
    double s = 0;
    for (int64_t k = 0; k < q->I; k++)
        s += ir_tensor_getf(q->x, xo + k) *
             ir_tensor_getf(q->w, q->a.weights_t ? ir_rnn_panel_at(q->a.weights_t, q->I, G * q->H, d, k, row)
                                                 : (d * G * q->H + row) * q->I + k);
    if (q->b) {
        s += ir_tensor_getf(q->b, d * 2 * G * q->H + row);
        if (!only_w)
            s += ir_tensor_getf(q->b, d * 2 * G * q->H + G * q->H + row);
    }
    return s;
}

/* v R_g^T for gate block g, row j (v: H values). */
static double rec_proj(const rnn_run *q, int64_t d, const double *v, int g, int64_t j)
{
    int64_t row = g * q->H + j, G = q->a.gates;
    double s = 0;
    for (int64_t k = 0; k < q->H; k++)
        s += v[k] * ir_tensor_getf(q->r, q->a.weights_t ? ir_rnn_panel_at(q->a.weights_t, q->H, G * q->H, d, k, row)
                                                      : (d * G * q->H + row) * q->H + k);
    return s;
}

static double rec_bias(const rnn_run *q, int64_t d, int g, int64_t j)
{
    int64_t G = q->a.gates;
    return q->b ? ir_tensor_getf(q->b, d * 2 * G * q->H + G * q->H + g * q->H + j) : 0;
}

static double peep(const rnn_run *q, int64_t d, int k, int64_t j)
{
    return q->p ? ir_tensor_getf(q->p, d * 3 * q->H + k * q->H + j) : 0;
}

/* One step of direction d, item b, at time t: h and c (H each) become the
 * new state; tmp holds 3 H scratch values. */
static void step(const rnn_run *q, int64_t d, int64_t b, int64_t t, double *h, double *c, double *tmp)
{
    const ir_rnn_act *act = q->a.act[d];
    int64_t H = q->H;
    double *nh = tmp, *aux = tmp + H;
    switch (q->a.op) {
    case IR_OP_LSTM:
        for (int64_t j = 0; j < H; j++) {
            double pi = in_proj(q, d, t, b, 0, j, false) + rec_proj(q, d, h, 0, j);
            double po = in_proj(q, d, t, b, 1, j, false) + rec_proj(q, d, h, 1, j);
            double pf = in_proj(q, d, t, b, 2, j, false) + rec_proj(q, d, h, 2, j);
            double pc = in_proj(q, d, t, b, 3, j, false) + rec_proj(q, d, h, 3, j);
            double ig = ir_rnn_act_apply(&act[0], clipv(q, pi + peep(q, d, 0, j) * c[j]));
            double fg = q->a.input_forget ? 1 - ig : ir_rnn_act_apply(&act[0], clipv(q, pf + peep(q, d, 2, j) * c[j]));
            double cg = ir_rnn_act_apply(&act[1], clipv(q, pc));
            double cn = fg * c[j] + ig * cg;
            double og = ir_rnn_act_apply(&act[0], clipv(q, po + peep(q, d, 1, j) * cn));
            nh[j] = og * ir_rnn_act_apply(&act[2], cn);
            aux[j] = cn;
        }
        memcpy(c, aux, sizeof(double) * (size_t)H);
        break;
    case IR_OP_GRU: {
        /* z into nh, r (.) h into aux (or r itself for linear_before_reset) */
        for (int64_t j = 0; j < H; j++) {
            double z = in_proj(q, d, t, b, 0, j, false) + rec_proj(q, d, h, 0, j);
            double r = in_proj(q, d, t, b, 1, j, false) + rec_proj(q, d, h, 1, j);
            nh[j] = ir_rnn_act_apply(&act[0], clipv(q, z));
            r = ir_rnn_act_apply(&act[0], clipv(q, r));
            aux[j] = q->a.linear_before_reset ? r : r * h[j];
        }
        double *nn = tmp + 2 * H;
        for (int64_t j = 0; j < H; j++) {
            double v = in_proj(q, d, t, b, 2, j, true);
            if (q->a.linear_before_reset)
                v += aux[j] * (rec_proj(q, d, h, 2, j) + rec_bias(q, d, 2, j));
            else
                v += rec_proj(q, d, aux, 2, j) + rec_bias(q, d, 2, j);
            nn[j] = ir_rnn_act_apply(&act[1], clipv(q, v));
        }
        for (int64_t j = 0; j < H; j++)
            nh[j] = (1 - nh[j]) * nn[j] + nh[j] * h[j];
        break;
    }
    default:
        for (int64_t j = 0; j < H; j++)
            nh[j] = ir_rnn_act_apply(&act[0], clipv(q, in_proj(q, d, t, b, 0, j, false) + rec_proj(q, d, h, 0, j)));
        break;
    }
    memcpy(h, nh, sizeof(double) * (size_t)H);
}

int ref_rnn(ir_ref_ctx *c)
{
    const ir_node *n = c->node;
    rnn_run q = {0};
    if (ir_rnn_attrs_get(n, &q.a, c->diag) < 0)
        return -1;
    const ir_tensor *const *in = c->in;
    q.x = in[0], q.w = in[1], q.r = in[2];
    q.b = c->nin > IR_RNN_IN_B ? in[IR_RNN_IN_B] : NULL;
    q.seq = c->nin > IR_RNN_IN_SEQ ? in[IR_RNN_IN_SEQ] : NULL;
    q.h0 = c->nin > IR_RNN_IN_H0 ? in[IR_RNN_IN_H0] : NULL;
    q.c0 = c->nin > IR_RNN_IN_C0 ? in[IR_RNN_IN_C0] : NULL;
    q.p = c->nin > IR_RNN_IN_P ? in[IR_RNN_IN_P] : NULL;
    q.T = q.x->dims[q.a.layout ? 1 : 0];
    q.B = q.x->dims[q.a.layout ? 0 : 1];
    q.I = q.x->dims[2];
    q.H = q.r->dims[ir_rnn_r_hidden_dim(q.a.weights_t)];
    int D = q.a.dirs;
    ir_tensor *y = c->out[0], *yh = c->nout > 1 ? c->out[1] : NULL, *yc = c->nout > 2 ? c->out[2] : NULL;
    double *buf = malloc(sizeof(double) * (size_t)(5 * q.H + 1));
    if (!buf)
        return ir_node_errorf(c->diag, n, "out of memory");
    double *h = buf, *cs = buf + q.H, *tmp = buf + 2 * q.H;
    memset(y->data, 0, y->nbytes); /* steps past a sequence's length */
    for (int64_t b = 0; b < q.B; b++) {
        int64_t len = q.T;
        if (q.seq) {
            len = ir_tensor_geti(q.seq, b);
            if (len < 0 || len > q.T) {
                free(buf);
                return ir_node_errorf(c->diag, n, "sequence_lens[%lld] = %lld is outside [0, %lld]", (long long)b,
                                      (long long)len, (long long)q.T);
            }
        }
        for (int d = 0; d < D; d++) {
            for (int64_t j = 0; j < q.H; j++) {
                h[j] = q.h0 ? ir_tensor_getf(q.h0, state_at(&q, d, b, j)) : 0;
                cs[j] = q.c0 ? ir_tensor_getf(q.c0, state_at(&q, d, b, j)) : 0;
            }
            bool rev = d == 1 || q.a.reverse;
            for (int64_t s = 0; s < len; s++) {
                int64_t t = rev ? len - 1 - s : s;
                step(&q, d, b, t, h, cs, tmp);
                for (int64_t j = 0; j < q.H; j++) {
                    int64_t o = q.a.layout ? ((b * q.T + t) * D + d) * q.H + j : ((t * D + d) * q.B + b) * q.H + j;
                    ir_tensor_setf(y, o, h[j]);
                }
            }
            for (int64_t j = 0; j < q.H; j++) {
                if (yh)
                    ir_tensor_setf(yh, state_at(&q, d, b, j), h[j]);
                if (yc)
                    ir_tensor_setf(yc, state_at(&q, d, b, j), cs[j]);
            }
        }
    }
    free(buf);
    return 0;
}
