/* lower_movement.c - data movement: reshapes (a flat copy in row-major
 * order) and Transpose.
 */
#include "codegen/lower_internal.h"
#include "ir/ops.h"

bool cg_can_lower_movement(const ir_node *n)
{
    switch (n->op) {
    case IR_OP_RESHAPE: case IR_OP_FLATTEN: case IR_OP_SQUEEZE: case IR_OP_UNSQUEEZE:
    case IR_OP_IDENTITY: case IR_OP_DROPOUT:
        return n->nout == 1;
    case IR_OP_TRANSPOSE:
        return true;
    default:
        return false;
    }
}

void lower_unflatten(lctx *c, const ir_type *t, kir_expr *flat, kir_expr **idx)
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
    lower_unflatten(c, ti, kir_var(k, v), ii);
    lower_unflatten(c, to, kir_var(k, v), oi);
    return kir_store(k, &l->body, c->out, oi, kir_load(k, c->buf[0], ii)) ? 0 : -1;
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

int lower_movement(lctx *c)
{
    return c->n->op == IR_OP_TRANSPOSE ? lower_transpose(c) : lower_copy(c);
}
