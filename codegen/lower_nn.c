/* lower_nn.c - contractions: MatMul and Gemm as a plain triple loop with
 * an f32/f64 accumulator.
 *
 * The correct first form, not the fast one: the contraction template with
 * packed weights and a register-blocked microkernel (docs/kernel-ir.md)
 * replaces the triple loop next.
 */
#include "codegen/lower_internal.h"
#include "ir/ops.h"

bool cg_can_lower_nn(const ir_node *n)
{
    const ir_type *x = &n->in[0]->type;
    switch (n->op) {
    case IR_OP_MATMUL:
        return ir_dtype_is_float(x->dtype) && x->rank >= 2 && n->in[1]->type.rank >= 2;
    case IR_OP_GEMM:
        return ir_dtype_is_float(x->dtype);
    default:
        return false;
    }
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

int lower_nn(lctx *c)
{
    return lower_contraction(c);
}
