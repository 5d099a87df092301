/* ref_util.c - helpers shared by shape functions and reference kernels. */
#include "ir/ref/ref.h"

#include <string.h>

int ir_norm_axis(ir_shape_ctx *c, int64_t axis, int rank, int *out)
{
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= (rank ? rank : 1))
        return ir_node_errorf(c->diag, c->node, "axis %lld is out of range for rank %d",
                              (long long)axis, rank);
    *out = (int)a;
    return 0;
}

int ir_ref_norm_axis(ir_ref_ctx *c, int64_t axis, int rank, int *out)
{
    ir_shape_ctx s = {.node = c->node, .diag = c->diag};
    return ir_norm_axis(&s, axis, rank, out);
}

void ir_strides(const int64_t *dims, int rank, int64_t *strides)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
}

bool ir_index_next(int64_t *idx, const int64_t *dims, int rank)
{
    for (int i = rank - 1; i >= 0; i--) {
        if (++idx[i] < dims[i])
            return true;
        idx[i] = 0;
    }
    return false;
}

int64_t ir_bcast_offset(const ir_tensor *t, const int64_t *oidx, int orank)
{
    int64_t off = 0, stride = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        int oi = orank - t->rank + i;
        if (t->dims[i] != 1)
            off += oidx[oi] * stride;
        stride *= t->dims[i];
    }
    return off;
}

int ir_broadcast_types(ir_shape_ctx *c, const ir_type *a, const ir_type *b, ir_type *out)
{
    if (a->rank < 0 || b->rank < 0) {
        ir_type_unknown(out, a->dtype, IR_RANK_UNKNOWN);
        return 0;
    }
    int r = a->rank > b->rank ? a->rank : b->rank;
    ir_type o;
    o.dtype = a->dtype;
    o.rank = r;
    for (int i = 0; i < r; i++) {
        int ia = a->rank - r + i, ib = b->rank - r + i;
        ir_dim da = ia >= 0 ? a->dims[ia] : ir_dim_const(1);
        ir_dim db = ib >= 0 ? b->dims[ib] : ir_dim_const(1);
        ir_dim d;
        if (ir_dim_is_const(da) && ir_dim_is_const(db)) {
            if (da.v != db.v && da.v != 1 && db.v != 1)
                return ir_node_errorf(c->diag, c->node,
                                      "cannot broadcast dim %lld against %lld",
                                      (long long)da.v, (long long)db.v);
            d = ir_dim_const(da.v == 1 ? db.v : da.v);
        } else if (ir_dim_is_const(da)) {
            d = da.v == 1 ? db : da;
        } else if (ir_dim_is_const(db)) {
            d = db.v == 1 ? da : db;
        } else if (da.sym > 0 && db.sym > 0) {
            /* two different symbols (DBNet's upsampled 2*floor(H/2) meeting
             * H): taken equal, as a symbol meeting a fixed dim above is;
             * the compiled run checks it (program.c, find_shape_checks)
             * and refuses a broadcast of 1 there, which the interpreter,
             * on concrete dims, still does. A derived one becomes an
             * alias of the earlier one (ir_graph_sym_alias), so what
             * follows from either has one dim */
            d = da;
            ir_graph *g = c->node && c->node->graph && !c->node->graph->parent ? c->node->graph : NULL;
            int32_t sa = ir_graph_sym_resolve(g, da.sym), sb = ir_graph_sym_resolve(g, db.sym);
            int32_t hi = sa > sb ? sa : sb, lo = sa > sb ? sb : sa;
            if (g && (hi == lo || ir_graph_sym_def(g, hi))) {
                if (hi != lo && ir_graph_sym_alias(g, hi, lo, c->node) < 0)
                    return ir_errorf(c->diag, "out of memory");
                d = (ir_dim){0, lo};
            }
        } else {
            d = ir_dim_eq(da, db) ? da : ir_dim_unknown();
        }
        o.dims[i] = d;
    }
    *out = o;
    return 0;
}

int ir_read_i64s(ir_shape_ctx *c, const ir_tensor *t, int64_t *out, int max)
{
    if (!ir_dtype_is_int(t->dtype))
        return ir_node_errorf(c->diag, c->node, "expected an integer tensor, got %s",
                              ir_dtype_name(t->dtype));
    if (t->numel > max)
        return ir_node_errorf(c->diag, c->node, "tensor of %lld values exceeds the limit of %d",
                              (long long)t->numel, max);
    for (int64_t i = 0; i < t->numel; i++)
        out[i] = ir_tensor_geti(t, i);
    return (int)t->numel;
}

int shape_first_input(ir_shape_ctx *c)
{
    c->out[0] = *c->in[0];
    return 0;
}

void ir_type_unknown(ir_type *t, ir_dtype dt, int rank)
{
    memset(t, 0, sizeof *t);
    t->dtype = dt;
    t->rank = rank;
    for (int i = 0; i < rank; i++)
        t->dims[i] = ir_dim_unknown();
}
