/* stats.c - static cost estimates: FLOPs per node and per graph. */
#include "ir/stats.h"
#include "ir/ops.h"

/* Element count with symbolic dims taken as 1 (an estimate per unit of
 * each symbol); false when the rank or a dim is unknown. */
static bool numel(const ir_value *v, int64_t *n)
{
    if (!v || v->type.rank < 0)
        return false;
    int64_t dims[IR_MAX_RANK];
    for (int i = 0; i < v->type.rank; i++) {
        ir_dim d = v->type.dims[i];
        if (d.sym == IR_DIM_UNKNOWN)
            return false;
        dims[i] = d.sym > 0 ? 1 : d.v;
    }
    return ir_numel_ok(dims, v->type.rank, n);
}

static bool dim_value(ir_dim d, int64_t *v)
{
    if (d.sym == IR_DIM_UNKNOWN)
        return false;
    *v = d.sym > 0 ? 1 : d.v;
    return true;
}

/* Saturating multiply: estimates must not overflow on huge graphs. */
static int64_t smul(int64_t a, int64_t b)
{
    int64_t r;
    return ir_mul_ok(a, b, &r) ? r : INT64_MAX;
}

bool ir_node_flops(const ir_node *n, int64_t *flops)
{
    unsigned fl = ir_ops[n->op].flags;
    int64_t out = 0, in0 = 0;
    *flops = 0;
    switch (n->op) {
    case IR_OP_MATMUL: {
        /* out elements * K * 2, K = last dim of A */
        const ir_type *a = &n->in[0]->type;
        int64_t k;
        if (!numel(n->out[0], &out) || a->rank < 1 || !dim_value(a->dims[a->rank - 1], &k))
            return false;
        *flops = smul(smul(out, k), 2);
        return true;
    }
    case IR_OP_GEMM: {
        const ir_type *a = &n->in[0]->type;
        int ki = ir_attr_int(n, "transA", 0) ? 0 : 1;
        int64_t k;
        if (!numel(n->out[0], &out) || a->rank != 2 || !dim_value(a->dims[ki], &k))
            return false;
        *flops = smul(smul(out, k), 2);
        return true;
    }
    case IR_OP_CONV:
    case IR_OP_CONV_TRANSPOSE: {
        /* Conv: out elements * (Cin/group * kernel) * 2; ConvTranspose:
         * in elements * (Cout/group * kernel) * 2 = weights per input. */
        int64_t wn;
        if (!numel(n->out[0], &out) || !numel(n->in[0], &in0) || !numel(n->in[1], &wn))
            return false;
        const ir_type *w = &n->in[1]->type;
        if (w->rank < 1 || w->dims[0].sym != 0 || w->dims[0].v == 0)
            return false;
        int64_t per_out = wn / w->dims[0].v; /* Cin/group * kernel (Conv) */
        if (n->op == IR_OP_CONV) {
            *flops = smul(smul(out, per_out), 2);
        } else {
            *flops = smul(smul(in0, per_out), 2);
        }
        return true;
    }
    default:
        break;
    }
    if (fl & IR_F_ELEMWISE)
        return numel(n->out[0], flops);
    if (fl & (IR_F_REDUCTION | IR_F_NORM) || n->op == IR_OP_MAX_POOL || n->op == IR_OP_AVERAGE_POOL) {
        if (!numel(n->in[0], &in0))
            return false;
        /* Normalizations touch each element a few times; count 4. */
        *flops = fl & IR_F_NORM ? smul(in0, 4) : in0;
        if (n->op == IR_OP_MAX_POOL || n->op == IR_OP_AVERAGE_POOL) {
            const int64_t *k;
            int nk = ir_attr_ints(n, "kernel_shape", &k);
            int64_t kk = 1;
            for (int i = 0; i < nk; i++)
                kk = smul(kk, k[i]);
            if (!numel(n->out[0], &out))
                return false;
            *flops = smul(out, kk);
        }
        return true;
    }
    return true; /* data movement and shape ops: no arithmetic */
}

int64_t ir_graph_flops(const ir_graph *g, bool *exact)
{
    int64_t total = 0, f;
    *exact = true;
    for (int i = 0; i < g->nnodes; i++) {
        if (!ir_node_flops(g->nodes[i], &f))
            *exact = false;
        if (__builtin_add_overflow(total, f, &total))
            total = INT64_MAX;
    }
    return total;
}

bool ir_graph_has_symbols(const ir_graph *g)
{
    for (int i = 0; i < g->nvalues; i++)
        for (int k = 0; k < g->values[i]->type.rank; k++)
            if (g->values[i]->type.dims[k].sym > 0)
                return true;
    return false;
}
