/* lower_nn.c - lowering of the non-elementwise ops compiled so far:
 * reshapes (a flat copy), Transpose, MatMul and Gemm (a plain triple loop
 * with an f32/f64 accumulator), Softmax and LogSoftmax (max, sum of
 * exponentials, store; numerically stable like the reference), and
 * Reduce{Sum,Mean,Max,Min,Prod,L2} over constant axes.
 *
 * These are the correct first forms, not the fast ones: the contraction
 * template with packed weights and a register-blocked microkernel
 * (docs/kernel-ir.md) replaces the triple loop next.
 */
#include "codegen/lower_internal.h"
#include "ir/ops.h"

#include <math.h>

bool cg_can_lower_nn(const ir_node *n)
{
    const ir_type *x = &n->in[0]->type;
    switch (n->op) {
    case IR_OP_RESHAPE: case IR_OP_FLATTEN: case IR_OP_SQUEEZE: case IR_OP_UNSQUEEZE:
    case IR_OP_IDENTITY: case IR_OP_DROPOUT:
        return n->nout == 1;
    case IR_OP_MATMUL:
        return ir_dtype_is_float(x->dtype) && x->rank >= 2 && n->in[1]->type.rank >= 2;
    case IR_OP_GEMM:
        return ir_dtype_is_float(x->dtype);
    case IR_OP_SOFTMAX: case IR_OP_LOG_SOFTMAX:
        return ir_dtype_is_float(x->dtype) && x->rank >= 1;
    case IR_OP_TRANSPOSE:
        return true;
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

static kir_expr *dim_of(kir_kernel *k, ir_dim d)
{
    return d.sym > 0 ? kir_sym(k, d.sym) : kir_const_i(k, IR_I64, d.v);
}

static kir_expr *i64c(kir_kernel *k, int64_t v) { return kir_const_i(k, IR_I64, v); }

/* Input i at idx, widened to the compute dtype. */
static kir_expr *load_in(lctx *c, int i, kir_expr *const *idx)
{
    kir_expr *e = kir_load(c->k, c->buf[i], idx);
    ir_dtype t = c->n->in[i]->type.dtype;
    return compute_dtype(t) != t ? kir_op1(c->k, KIR_CAST, compute_dtype(t), e) : e;
}

/* v narrowed to the output's dtype. */
static kir_expr *to_out(lctx *c, kir_expr *v)
{
    ir_dtype t = c->n->out[0]->type.dtype;
    return v && v->dtype != t ? kir_op1(c->k, KIR_CAST, t, v) : v;
}

static kir_stmt *loop(lctx *c, kir_block *b, int var, kir_expr *hi, kir_loop kind)
{
    return kir_for(c->k, b, var, i64c(c->k, 0), hi, kind, 0);
}

/* Row-major multi-index of flat position `flat` over type t's dims. */
static void unflatten(lctx *c, const ir_type *t, kir_expr *flat, kir_expr **idx)
{
    kir_kernel *k = c->k;
    kir_expr *stride = i64c(k, 1);
    for (int d = t->rank - 1; d >= 0; d--) {
        kir_expr *q = kir_op2(k, KIR_DIV, IR_I64, flat, stride);
        idx[d] = kir_op2(k, KIR_REM, IR_I64, q, dim_of(k, t->dims[d]));
        stride = kir_imul(k, stride, dim_of(k, t->dims[d]));
    }
}

/* Reshapes keep the bytes in order: out[flat] = in[flat]. */
static int lower_copy(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_type *ti = &c->n->in[0]->type, *to = &c->n->out[0]->type;
    kir_expr *numel = i64c(k, 1);
    for (int d = 0; d < to->rank; d++)
        numel = kir_imul(k, numel, dim_of(k, to->dims[d]));
    int v = kir_new_var(k);
    kir_stmt *l = loop(c, &k->body, v, numel, KIR_PARALLEL);
    if (!l)
        return -1;
    kir_expr *ii[IR_MAX_RANK], *oi[IR_MAX_RANK];
    unflatten(c, ti, kir_var(k, v), ii);
    unflatten(c, to, kir_var(k, v), oi);
    return kir_store(k, &l->body, c->out, oi, kir_load(k, c->buf[0], ii)) ? 0 : -1;
}

/* Gemm: y[i,j] = alpha * sum_k op(A)[i,k] op(B)[k,j] + beta * C[i,j]
 * (C broadcast). MatMul: batched over the leading dims, with numpy
 * broadcasting of the batch dims. */
static int lower_contraction(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *ta = &n->in[0]->type, *tb = &n->in[1]->type, *to = &n->out[0]->type;
    bool gemm = n->op == IR_OP_GEMM;
    bool tA = gemm && ir_attr_int(n, "transA", 0), tB = gemm && ir_attr_int(n, "transB", 0);
    int r = to->rank;
    kir_block *body = &k->body;
    int ov[IR_MAX_RANK];
    for (int d = 0; d < r; d++) {
        ov[d] = kir_new_var(k);
        kir_stmt *l = loop(c, body, ov[d], dim_of(k, to->dims[d]), d == 0 ? KIR_PARALLEL : KIR_SERIAL);
        if (!l)
            return -1;
        body = &l->body;
    }
    int acc = kir_new_acc(k, c->cdt), kv = kir_new_var(k);
    if (acc < 0 || !kir_acc_set(k, body, acc, kir_const_f(k, c->cdt, 0)))
        return -1;
    /* K: A's last dim (its first under transA) */
    ir_dim kd = ta->dims[tA ? ta->rank - 2 : ta->rank - 1];
    kir_stmt *lk = loop(c, body, kv, dim_of(k, kd), KIR_SERIAL);
    if (!lk)
        return -1;
    kir_expr *ai[IR_MAX_RANK], *bi[IR_MAX_RANK];
    for (int side = 0; side < 2; side++) {
        const ir_type *t = side ? tb : ta;
        kir_expr **ix = side ? bi : ai;
        /* batch dims, right-aligned to the output's, size 1 broadcasting */
        for (int d = 0; d < t->rank - 2; d++) {
            int od = r - 2 - (t->rank - 2) + d;
            bool one = ir_dim_is_const(t->dims[d]) && t->dims[d].v == 1;
            ix[d] = one ? i64c(k, 0) : kir_var(k, ov[od]);
        }
        kir_expr *row = side ? kir_var(k, kv) : kir_var(k, ov[r - 2]);
        kir_expr *col = side ? kir_var(k, ov[r - 1]) : kir_var(k, kv);
        bool tr = side ? tB : tA;
        ix[t->rank - 2] = tr ? col : row;
        ix[t->rank - 1] = tr ? row : col;
    }
    kir_expr *prod = kir_op3(k, KIR_FMA, c->cdt, load_in(c, 0, ai), load_in(c, 1, bi), kir_acc(k, acc));
    if (!kir_acc_set(k, &lk->body, acc, prod))
        return -1;
    kir_expr *v = kir_acc(k, acc);
    if (gemm) {
        double alpha = ir_attr_float(n, "alpha", 1), beta = ir_attr_float(n, "beta", 1);
        if (alpha != 1)
            v = kir_op2(k, KIR_MUL, c->cdt, kir_const_f(k, c->cdt, alpha), v);
        if (n->nin > 2 && n->in[2] && beta != 0) {
            const ir_type *tc = &n->in[2]->type;
            kir_expr *ci[IR_MAX_RANK];
            for (int d = 0; d < tc->rank; d++) {
                int od = r - tc->rank + d;
                bool one = ir_dim_is_const(tc->dims[d]) && tc->dims[d].v == 1;
                ci[d] = one ? i64c(k, 0) : kir_var(k, ov[od]);
            }
            kir_expr *cv = load_in(c, 2, ci);
            if (beta != 1)
                cv = kir_op2(k, KIR_MUL, c->cdt, kir_const_f(k, c->cdt, beta), cv);
            v = kir_op2(k, KIR_ADD, c->cdt, v, cv);
        }
    }
    kir_expr *oi[IR_MAX_RANK];
    for (int d = 0; d < r; d++)
        oi[d] = kir_var(k, ov[d]);
    return kir_store(k, body, c->out, oi, to_out(c, v)) ? 0 : -1;
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

/* out[i...] = in[j...] with j[perm[d]] = i[d]. */
static int lower_transpose(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *to = &n->out[0]->type;
    int r = to->rank, perm[IR_MAX_RANK];
    const int64_t *p;
    int np = ir_attr_ints(n, "perm", &p);
    for (int d = 0; d < r; d++)
        perm[d] = np == r ? (int)p[d] : r - 1 - d;
    kir_block *body = &k->body;
    kir_expr *oi[IR_MAX_RANK], *ii[IR_MAX_RANK];
    for (int d = 0; d < r; d++) {
        int v = kir_new_var(k);
        kir_stmt *l = loop(c, body, v, dim_of(k, to->dims[d]), d == 0 ? KIR_PARALLEL : KIR_SERIAL);
        if (!l)
            return -1;
        body = &l->body;
        oi[d] = kir_var(k, v);
        ii[perm[d]] = kir_var(k, v);
    }
    return kir_store(k, body, c->out, oi, kir_load(k, c->buf[0], ii)) ? 0 : -1;
}

/* Reduce* over constant axes: loops over the output, then over the
 * reduced dims with an accumulator, then the op's finish (mean: divide by
 * the count; L2: square root). */
static int lower_reduce(lctx *c)
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

int lower_nn(lctx *c)
{
    switch (c->n->op) {
    case IR_OP_TRANSPOSE:
        return lower_transpose(c);
    case IR_OP_REDUCE_SUM: case IR_OP_REDUCE_MEAN: case IR_OP_REDUCE_MAX: case IR_OP_REDUCE_MIN:
    case IR_OP_REDUCE_PROD: case IR_OP_REDUCE_L2:
        return lower_reduce(c);
    case IR_OP_MATMUL:
    case IR_OP_GEMM:
        return lower_contraction(c);
    case IR_OP_SOFTMAX:
    case IR_OP_LOG_SOFTMAX:
        return lower_softmax(c);
    default:
        return lower_copy(c);
    }
}
