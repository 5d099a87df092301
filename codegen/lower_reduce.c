/* lower_reduce.c - reductions and normalizations: Softmax and LogSoftmax
 * (max, sum of exponentials, store; numerically stable like the
 * reference) and Reduce{Sum,Mean,Max,Min,Prod,L2} over constant axes.
 */
#include "codegen/lower_internal.h"
#include "ir/ops.h"

#include <math.h>

bool cg_can_lower_reduce(const ir_node *n)
{
    const ir_type *x = &n->in[0]->type;
    switch (n->op) {
    case IR_OP_SOFTMAX: case IR_OP_LOG_SOFTMAX:
        return ir_dtype_is_float(x->dtype) && x->rank >= 1;
    case IR_OP_REDUCE_SUM: case IR_OP_REDUCE_MEAN: case IR_OP_REDUCE_MAX: case IR_OP_REDUCE_MIN:
    case IR_OP_REDUCE_PROD: case IR_OP_REDUCE_L2: {
        /* float data, constant axes (or none: all dims), not the no-op form */
        bool axes_const = n->nin < 2 || !n->in[1] || n->in[1]->kind == IR_VAL_CONST;
        bool empty = n->nin < 2 || !n->in[1] || n->in[1]->cval.numel == 0;
        return ir_dtype_is_float(x->dtype) && x->rank >= 0 && axes_const &&
               !(empty && ir_attr_int(n, "noop_with_empty_axes", 0));
    }
    default:
        return false;
    }
}

/* Softmax along axis: m = max x; s = sum e^(x-m); y = e^(x-m)/s, or
 * (x-m) - log s for LogSoftmax. */
static int lower_softmax(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *t = &n->in[0]->type;
    int64_t axis = ir_attr_int(n, "axis", -1);
    if (axis < 0)
        axis += t->rank;
    if (axis < 0 || axis >= t->rank)
        return -1;
    kir_block *body = &k->body;
    int vars[IR_MAX_RANK];
    bool first = true;
    for (int d = 0; d < t->rank; d++) {
        if (d == axis)
            continue;
        vars[d] = kir_new_var(k);
        kir_stmt *l = loop(c, body, vars[d], dim_of(k, t->dims[d]), first ? KIR_PARALLEL : KIR_SERIAL);
        if (!l)
            return -1;
        body = &l->body;
        first = false;
    }
    int mx = kir_new_acc(k, c->cdt), sum = kir_new_acc(k, c->cdt);
    ir_dtype ct = c->cdt;
    kir_expr *len = dim_of(k, t->dims[axis]);
    kir_expr *idx[IR_MAX_RANK];
    /* three passes over the axis, each with its own variable */
    int pv[3];
    kir_stmt *pl[3];
    if (!kir_acc_set(k, body, mx, kir_const_f(k, ct, -INFINITY)))
        return -1;
    for (int p = 0; p < 3; p++) {
        if (p == 1 && !kir_acc_set(k, body, sum, kir_const_f(k, ct, 0)))
            return -1;
        pv[p] = kir_new_var(k);
        if (!(pl[p] = loop(c, body, pv[p], len, KIR_SERIAL)))
            return -1;
        for (int d = 0; d < t->rank; d++)
            idx[d] = d == axis ? kir_var(k, pv[p]) : kir_var(k, vars[d]);
        kir_expr *x = load_in(c, 0, idx);
        kir_expr *xm = kir_op2(k, KIR_SUB, ct, x, kir_acc(k, mx));
        if (p == 0) {
            if (!kir_acc_set(k, &pl[p]->body, mx, kir_op2(k, KIR_MAX, ct, kir_acc(k, mx), x)))
                return -1;
        } else if (p == 1) {
            if (!kir_acc_set(k, &pl[p]->body, sum, kir_op2(k, KIR_ADD, ct, kir_acc(k, sum), kir_op1(k, KIR_EXP, ct, xm))))
                return -1;
        } else {
            kir_expr *y = n->op == IR_OP_LOG_SOFTMAX
                              ? kir_op2(k, KIR_SUB, ct, xm, kir_op1(k, KIR_LOG, ct, kir_acc(k, sum)))
                              : kir_op2(k, KIR_DIV, ct, kir_op1(k, KIR_EXP, ct, xm), kir_acc(k, sum));
            if (!kir_store(k, &pl[p]->body, c->out, idx, to_out(c, y)))
                return -1;
        }
    }
    return 0;
}

/* Reduce* over constant axes: loops over the output, then over the
 * reduced dims with an accumulator, then the op's finish (mean: divide by
 * the count; L2: square root). */
static int lower_reduce_axes(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *ti = &n->in[0]->type, *to = &n->out[0]->type;
    int r = ti->rank;
    bool red[IR_MAX_RANK] = {0}, any = false;
    if (n->nin > 1 && n->in[1])
        for (int64_t i = 0; i < n->in[1]->cval.numel; i++) {
            int64_t a = ir_tensor_geti(&n->in[1]->cval, i);
            a = a < 0 ? a + r : a;
            if (a < 0 || a >= r)
                return -1;
            red[a] = any = true;
        }
    if (!any)
        for (int d = 0; d < r; d++)
            red[d] = true;
    bool keep = ir_attr_int(n, "keepdims", 1);
    ir_dtype ct = c->cdt;
    kir_block *body = &k->body;
    kir_expr *ii[IR_MAX_RANK], *oi[IR_MAX_RANK];
    int no = 0;
    bool first = true;
    for (int d = 0; d < r; d++) {
        if (red[d]) {
            if (keep)
                oi[no++] = i64c(k, 0);
            continue;
        }
        int v = kir_new_var(k);
        kir_stmt *l = loop(c, body, v, dim_of(k, ti->dims[d]), first ? KIR_PARALLEL : KIR_SERIAL);
        if (!l)
            return -1;
        first = false;
        body = &l->body;
        ii[d] = oi[no++] = kir_var(k, v);
    }
    if (no != to->rank)
        return -1;
    int acc = kir_new_acc(k, ct);
    double init = 0;
    kir_op op = KIR_ADD;
    switch (n->op) {
    case IR_OP_REDUCE_MAX: init = -INFINITY; op = KIR_MAX; break;
    case IR_OP_REDUCE_MIN: init = INFINITY; op = KIR_MIN; break;
    case IR_OP_REDUCE_PROD: init = 1; op = KIR_MUL; break;
    default: break;
    }
    if (!kir_acc_set(k, body, acc, kir_const_f(k, ct, init)))
        return -1;
    kir_block *inner = body;
    kir_expr *count = kir_const_f(k, ct, 1);
    for (int d = 0; d < r; d++) {
        if (!red[d])
            continue;
        int v = kir_new_var(k);
        kir_stmt *l = loop(c, inner, v, dim_of(k, ti->dims[d]), KIR_SERIAL);
        if (!l)
            return -1;
        inner = &l->body;
        ii[d] = kir_var(k, v);
        count = kir_op2(k, KIR_MUL, ct, count, kir_op1(k, KIR_CAST, ct, dim_of(k, ti->dims[d])));
    }
    kir_expr *x = load_in(c, 0, ii);
    if (n->op == IR_OP_REDUCE_L2)
        x = kir_op2(k, KIR_MUL, ct, x, x);
    if (!kir_acc_set(k, inner, acc, kir_op2(k, op, ct, kir_acc(k, acc), x)))
        return -1;
    kir_expr *v = kir_acc(k, acc);
    if (n->op == IR_OP_REDUCE_MEAN)
        v = kir_op2(k, KIR_DIV, ct, v, count);
    else if (n->op == IR_OP_REDUCE_L2)
        v = kir_op1(k, KIR_SQRT, ct, v);
    return kir_store(k, body, c->out, oi, to_out(c, v)) ? 0 : -1;
}

int lower_reduce(lctx *c)
{
    switch (c->n->op) {
    case IR_OP_SOFTMAX:
    case IR_OP_LOG_SOFTMAX:
        return lower_softmax(c);
    default:
        return lower_reduce_axes(c);
    }
}
