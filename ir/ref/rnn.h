/* rnn.h - the attributes of the recurrent ops (LSTM, GRU, RNN), decoded
 * once for the reference kernel (ir/ref/rnn.c) and the lowering
 * (codegen/lower/rnn.c), so both read direction, activations, clip and
 * layout the same way.
 */
#ifndef ICC_REF_RNN_H
#define ICC_REF_RNN_H

#include "ir/ops.h"

typedef enum ir_rnn_act_kind {
    IR_RNN_RELU,
    IR_RNN_TANH,
    IR_RNN_SIGMOID,
    IR_RNN_AFFINE,             /* alpha x + beta */
    IR_RNN_LEAKY_RELU,         /* x >= 0 ? x : alpha x */
    IR_RNN_THRESHOLDED_RELU,   /* x > alpha ? x : 0 */
    IR_RNN_SCALED_TANH,        /* alpha tanh(beta x) */
    IR_RNN_HARD_SIGMOID,       /* clamp(alpha x + beta, 0, 1) */
    IR_RNN_ELU,                /* x >= 0 ? x : alpha (e^x - 1) */
    IR_RNN_SOFTSIGN,           /* x / (1 + |x|) */
    IR_RNN_SOFTPLUS,           /* log(1 + e^x) */
} ir_rnn_act_kind;

typedef struct ir_rnn_act {
    ir_rnn_act_kind kind;
    double alpha, beta;
} ir_rnn_act;

/* A recurrent node's attributes with the defaults applied. */
typedef struct ir_rnn_attrs {
    int op;                    /* IR_OP_LSTM, IR_OP_GRU or IR_OP_RNN */
    int gates;                 /* gate blocks in W and R: 4, 3 or 1 */
    int nacts;                 /* activations per direction: 3 (f, g, h), 2 (f, g) or 1 (f) */
    int dirs;                  /* 1 or 2 (bidirectional) */
    bool reverse;              /* dirs == 1 and direction = "reverse" */
    int layout;                /* 0: X [T, B, I]; 1: X [B, T, I] */
    int64_t hidden;            /* hidden_size, or -1 when the attribute is absent */
    bool has_clip;
    double clip;               /* gate inputs clamped to [-clip, clip] when has_clip */
    bool input_forget;         /* LSTM: f = 1 - i */
    bool linear_before_reset;  /* GRU: r (.) (h R_h^T + Rb_h) instead of (r (.) h) R_h^T */
    int64_t weights_t;         /* > 0: W typed [D, I, G*H] and R [D, H, G*H], in column panels
                                  of this many gate rows (internal: the pack-b pass) */
    ir_rnn_act act[2][3];      /* per direction */
} ir_rnn_attrs;

/* Decodes n's attributes into *a; -1 with a node-located message on a
 * bad direction, layout, activation name or list length. Activations
 * take alpha/beta from activation_alpha/activation_beta in list order,
 * each value consumed by the next activation that has that parameter
 * (as ONNX Runtime reads them); unlisted ones keep the defaults of the
 * ONNX op of the same name (LeakyRelu 0.01, HardSigmoid 0.2/0.5, Elu and
 * ThresholdedRelu 1.0), Affine and ScaledTanh 0 as ONNX Runtime has. One
 * direction's list given to a bidirectional node serves both. */
int ir_rnn_attrs_get(const ir_node *n, ir_rnn_attrs *a, icc_diag *d);

/* The dim of R holding H, and of W holding the G*H gate rows: [D, G H,
 * H] and [D, G H, I] in ONNX's layout, [D, H, G H] and [D, I, G H] under
 * weights_t. */
static inline int ir_rnn_r_hidden_dim(int64_t weights_t) { return weights_t ? 1 : 2; }
static inline int ir_rnn_w_rows_dim(int64_t weights_t) { return weights_t ? 2 : 1; }

/* The offset of element (d, k, row) of a W or R whose matrices are K x GH
 * (K = I or H) stored as weights_t = w describes: in panels of w rows,
 * each [K, width] (the last GH mod w wide). */
static inline int64_t ir_rnn_panel_at(int64_t w, int64_t K, int64_t GH, int64_t d, int64_t k, int64_t row)
{
    int64_t p0 = row / w * w, wp = GH - p0 < w ? GH - p0 : w;
    return d * K * GH + p0 * K + k * wp + (row - p0);
}

/* The activation at x, in double. */
double ir_rnn_act_apply(const ir_rnn_act *a, double x);

/* Input slots of the recurrent ops. */
enum {
    IR_RNN_IN_X, IR_RNN_IN_W, IR_RNN_IN_R, IR_RNN_IN_B, IR_RNN_IN_SEQ,
    IR_RNN_IN_H0, IR_RNN_IN_C0, IR_RNN_IN_P,
};

#endif
