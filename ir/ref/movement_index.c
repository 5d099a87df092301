/* movement_index.c - ops driven by index or mask tensors: Gather,
 * GatherElements, GatherND, ScatterND, ScatterElements (and the
 * deprecated Scatter), TensorScatter, OneHot, Compress, NonZero and
 * ReverseSequence.
 * Indices may be negative (counted from the end); an index out of range
 * is an error in the shape function when the indices are constant, and
 * always in the kernel, so hostile files cannot read or write out of
 * bounds. Index tensors of any integer dtype are read with
 * ir_tensor_geti. */
#include "ir/ref/movement.h"

#include <string.h>

/* Wraps index v into [0, n); -1 with a message when out of range. */
static int wrap_index(ir_shape_ctx *c, int64_t v, int64_t n, int64_t *out)
{
    *out = 0;
    if (v < -n || v >= n)
        return ir_node_errorf(c->diag, c->node, "index %lld is out of range for a dim of %lld",
                              (long long)v, (long long)n);
    *out = v < 0 ? v + n : v;
    return 0;
}

/* Checks every value of a known index tensor against dim n. */
static int check_indices(ir_shape_ctx *c, const ir_tensor *t, ir_dim n)
{
    int64_t w;
    if (!t || !ir_dim_is_const(n))
        return 0;
    for (int64_t i = 0; i < t->numel; i++)
        if (wrap_index(c, ir_tensor_geti(t, i), n.v, &w) < 0)
            return -1;
    return 0;
}

/* ---- Gather --------------------------------------------------------------- */

/* out = data[:axis] ++ indices.shape ++ data[axis+1:]. */
int shape_gather(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0], *ind = c->in[1];
    ir_type *o = &c->out[0];
    if (ir_mv_check_int(c, 1, "indices") < 0)
        return -1;
    if (x->rank == 0)
        return ir_node_errorf(c->diag, c->node, "cannot gather from a scalar");
    if (x->rank < 0 || ind->rank < 0) {
        ir_type_unknown(o, x->dtype, IR_RANK_UNKNOWN);
        return 0;
    }
    int axis, r = x->rank - 1 + ind->rank;
    if (ir_norm_axis(c, ir_attr_int(c->node, "axis", 0), x->rank, &axis) < 0)
        return -1;
    if (r > IR_MAX_RANK)
        return ir_node_errorf(c->diag, c->node, "output rank %d exceeds %d", r, IR_MAX_RANK);
    if (check_indices(c, c->val[1], x->dims[axis]) < 0)
        return -1;
    o->dtype = x->dtype;
    o->rank = 0;
    for (int i = 0; i < axis; i++)
        o->dims[o->rank++] = x->dims[i];
    for (int i = 0; i < ind->rank; i++)
        o->dims[o->rank++] = ind->dims[i];
    for (int i = axis + 1; i < x->rank; i++)
        o->dims[o->rank++] = x->dims[i];
    return ir_mv_check_size(c, o);
}

int ref_gather(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0], *ind = c->in[1];
    ir_shape_ctx s = mv_err_ctx(c);
    int axis;
    if (ir_norm_axis(&s, ir_attr_int(c->node, "axis", 0), x->rank, &axis) < 0)
        return -1;
    if (c->out[0]->numel == 0)
        return 0; /* dims x element size might overflow when empty */
    int64_t outer = 1, inner = (int64_t)ir_dtype_size(x->dtype), n = x->dims[axis];
    for (int k = 0; k < axis; k++)
        outer *= x->dims[k];
    for (int k = axis + 1; k < x->rank; k++)
        inner *= x->dims[k];
    char *dp = c->out[0]->data;
    for (int64_t j = 0; j < ind->numel; j++) {
        int64_t w;
        if (wrap_index(&s, ir_tensor_geti(ind, j), n, &w) < 0)
            return -1;
        const char *sp = (const char *)x->data + w * inner;
        for (int64_t o = 0; o < outer; o++)
            memcpy(dp + (o * ind->numel + j) * inner, sp + o * n * inner, (size_t)inner);
    }
    return 0;
}

/* ---- GatherElements, ScatterElements ---------------------------------------- */

/* Data, indices (and updates) share a rank; off the axis, indices may
 * not exceed the data. */
static int elements_check(ir_shape_ctx *c, const ir_type *x, const ir_type *ind, int *axis)
{
    if (x->rank == 0)
        return ir_node_errorf(c->diag, c->node, "data must have rank >= 1");
    if (ind->rank != x->rank)
        return ir_node_errorf(c->diag, c->node, "indices have rank %d but data has rank %d",
                              ind->rank, x->rank);
    if (ir_norm_axis(c, ir_attr_int(c->node, "axis", 0), x->rank, axis) < 0)
        return -1;
    for (int i = 0; i < x->rank; i++) {
        ir_dim a = ind->dims[i], b = x->dims[i];
        if (i != *axis && ir_dim_is_const(a) && ir_dim_is_const(b) && a.v > b.v)
            return ir_node_errorf(c->diag, c->node, "indices dim %d (%lld) exceeds the data's "
                                  "(%lld)", i, (long long)a.v, (long long)b.v);
    }
    return 0;
}

int shape_gather_elements(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0], *ind = c->in[1];
    ir_type *o = &c->out[0];
    int axis;
    if (ir_mv_check_int(c, 1, "indices") < 0)
        return -1;
    if (x->rank < 0 || ind->rank < 0) {
        ir_type_unknown(o, x->dtype, x->rank >= 0 ? x->rank : ind->rank);
        return 0;
    }
    if (elements_check(c, x, ind, &axis) < 0 || check_indices(c, c->val[1], x->dims[axis]) < 0)
        return -1;
    *o = *ind;
    o->dtype = x->dtype;
    return 0;
}

/* Calls back for each element of the index tensor with the data offset
 * it addresses: its own coordinates with the axis one replaced by the
 * (wrapped) index value. */
static int elements_walk(ir_ref_ctx *c, const ir_tensor *x, const ir_tensor *ind, int axis,
                         ir_tensor *y, const ir_tensor *upd, int red)
{
    ir_shape_ctx s = mv_err_ctx(c);
    int64_t st[IR_MAX_RANK], idx[IR_MAX_RANK] = {0};
    ir_strides(x->dims, x->rank, st);
    for (int i = 0; i < x->rank; i++)
        if (i != axis && ind->dims[i] > x->dims[i])
            return ir_node_errorf(c->diag, c->node, "indices exceed the data along dim %d", i);
    if (ind->numel == 0)
        return 0;
    int64_t j = 0;
    do {
        int64_t w, off = 0;
        if (wrap_index(&s, ir_tensor_geti(ind, j), x->dims[axis], &w) < 0)
            return -1;
        for (int k = 0; k < x->rank; k++)
            off += (k == axis ? w : idx[k]) * st[k];
        if (upd)
            ir_mv_reduce_elem(y, off, upd, j, red);
        else
            memcpy(mv_elem(y, j), mv_elem(x, off), ir_dtype_size(x->dtype));
        j++;
    } while (ir_index_next(idx, ind->dims, ind->rank));
    return 0;
}

int ref_gather_elements(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0], *ind = c->in[1];
    ir_shape_ctx s = mv_err_ctx(c);
    int axis;
    if (ir_norm_axis(&s, ir_attr_int(c->node, "axis", 0), x->rank, &axis) < 0)
        return -1;
    return elements_walk(c, x, ind, axis, c->out[0], NULL, MV_RED_NONE);
}

/* ScatterElements (and Scatter): a copy of data where data[idx with
 * idx[axis] = indices[idx]] is replaced (or reduced) by updates[idx]. */
int shape_scatter_elements(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0], *ind = c->in[1], *upd = c->in[2];
    int axis;
    if (ir_mv_check_int(c, 1, "indices") < 0 ||
        ir_mv_reduction(c, ir_attr_string(c->node, "reduction", "none")) < 0)
        return -1;
    if (upd->dtype != x->dtype)
        return ir_node_errorf(c->diag, c->node, "updates are %s but data is %s",
                              ir_dtype_name(upd->dtype), ir_dtype_name(x->dtype));
    c->out[0] = *x;
    if (ind->rank >= 0 && upd->rank >= 0) {
        if (ind->rank != upd->rank)
            return ir_node_errorf(c->diag, c->node, "indices and updates differ in rank");
        for (int i = 0; i < ind->rank; i++)
            if (ir_dim_is_const(ind->dims[i]) && ir_dim_is_const(upd->dims[i]) &&
                ind->dims[i].v != upd->dims[i].v)
                return ir_node_errorf(c->diag, c->node, "indices and updates differ in dim %d",
                                      i);
    }
    if (x->rank < 0 || ind->rank < 0)
        return 0;
    if (elements_check(c, x, ind, &axis) < 0 || check_indices(c, c->val[1], x->dims[axis]) < 0)
        return -1;
    return 0;
}

int ref_scatter_elements(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0], *ind = c->in[1], *upd = c->in[2];
    ir_shape_ctx s = mv_err_ctx(c);
    int axis, red = ir_mv_reduction(&s, ir_attr_string(c->node, "reduction", "none"));
    if (red < 0 || ir_norm_axis(&s, ir_attr_int(c->node, "axis", 0), x->rank, &axis) < 0)
        return -1;
    if (upd->numel != ind->numel || upd->dtype != x->dtype)
        return ir_node_errorf(c->diag, c->node, "updates do not match the indices");
    if (x->nbytes)
        memcpy(c->out[0]->data, x->data, x->nbytes);
    return elements_walk(c, x, ind, axis, c->out[0], upd, red);
}

/* ---- GatherND, ScatterND -------------------------------------------------- */

/* GatherND: indices [..., k] address slices data[b0.., i0..ik-1, :] after
 * batch_dims leading dims shared by data and indices. */
int shape_gather_nd(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0], *ind = c->in[1];
    ir_type *o = &c->out[0];
    if (ir_mv_check_int(c, 1, "indices") < 0)
        return -1;
    int64_t b = ir_attr_int(c->node, "batch_dims", 0);
    if (ind->rank == 0)
        return ir_node_errorf(c->diag, c->node, "indices must have rank >= 1");
    if (x->rank < 0 || ind->rank < 0 || !ir_dim_is_const(ind->dims[ind->rank - 1])) {
        ir_type_unknown(o, x->dtype, IR_RANK_UNKNOWN);
        return 0;
    }
    int q = ind->rank, r = x->rank;
    if (q < 1 || r < 1)
        return ir_node_errorf(c->diag, c->node, "data and indices must have rank >= 1");
    if (b < 0 || b >= q || b >= r)
        return ir_node_errorf(c->diag, c->node, "batch_dims %lld is invalid for ranks %d, %d",
                              (long long)b, r, q);
    int64_t k = ind->dims[q - 1].v;
    if (k < 1 || k > r - b)
        return ir_node_errorf(c->diag, c->node, "index tuples of %lld values for rank %d "
                              "after %lld batch dims", (long long)k, r, (long long)b);
    for (int i = 0; i < b; i++)
        if (ir_dim_is_const(x->dims[i]) && ir_dim_is_const(ind->dims[i]) &&
            x->dims[i].v != ind->dims[i].v)
            return ir_node_errorf(c->diag, c->node, "batch dim %d differs", i);
    if (q - 1 + r - b - k > IR_MAX_RANK)
        return ir_node_errorf(c->diag, c->node, "output rank %lld exceeds %d",
                              (long long)(q - 1 + r - b - k), IR_MAX_RANK);
    o->dtype = x->dtype;
    o->rank = 0;
    for (int i = 0; i < q - 1; i++)
        o->dims[o->rank++] = ind->dims[i];
    for (int i = (int)(b + k); i < r; i++)
        o->dims[o->rank++] = x->dims[i];
    const ir_tensor *iv = c->val[1];
    for (int64_t i = 0; iv && i < iv->numel; i++) {
        ir_dim d = x->dims[b + i % k];
        int64_t w;
        if (ir_dim_is_const(d) && wrap_index(c, ir_tensor_geti(iv, i), d.v, &w) < 0)
            return -1;
    }
    return ir_mv_check_size(c, o);
}

/* Offset (in elements) of the slice addressed by the k-tuple at tup
 * within a data block whose dims start at dims. */
static int tuple_offset(ir_shape_ctx *c, const ir_tensor *ind, int64_t tup, int64_t k,
                        const int64_t *dims, const int64_t *st, int64_t *off)
{
    *off = 0;
    for (int64_t j = 0; j < k; j++) {
        int64_t w;
        if (wrap_index(c, ir_tensor_geti(ind, tup + j), dims[j], &w) < 0)
            return -1;
        *off += w * st[j];
    }
    return 0;
}

int ref_gather_nd(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0], *ind = c->in[1];
    ir_shape_ctx s = mv_err_ctx(c);
    int b = (int)ir_attr_int(c->node, "batch_dims", 0), q = ind->rank;
    int64_t k = ind->dims[q - 1], st[IR_MAX_RANK];
    ir_strides(x->dims, x->rank, st);
    int64_t nb = 1, per = 1, slice = 1;
    for (int i = 0; i < b; i++)
        nb *= x->dims[i];
    for (int i = b; i < q - 1; i++)
        per *= ind->dims[i];
    for (int i = (int)(b + k); i < x->rank; i++)
        slice *= x->dims[i];
    size_t esz = ir_dtype_size(x->dtype);
    int64_t bstride = b ? st[b - 1] : x->numel;
    char *dp = c->out[0]->data;
    for (int64_t bi = 0; bi < nb; bi++)
        for (int64_t n = 0; n < per; n++) {
            int64_t off;
            if (tuple_offset(&s, ind, (bi * per + n) * k, k, x->dims + b, st + b, &off) < 0)
                return -1;
            memcpy(dp, (const char *)x->data + (size_t)(bi * bstride + off) * esz,
                   (size_t)slice * esz);
            dp += slice * (int64_t)esz;
        }
    return 0;
}

/* ScatterND: updates has shape indices.shape[:-1] ++ data.shape[k:]. */
int shape_scatter_nd(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0], *ind = c->in[1], *upd = c->in[2];
    if (ir_mv_check_int(c, 1, "indices") < 0 ||
        ir_mv_reduction(c, ir_attr_string(c->node, "reduction", "none")) < 0)
        return -1;
    if (upd->dtype != x->dtype)
        return ir_node_errorf(c->diag, c->node, "updates are %s but data is %s",
                              ir_dtype_name(upd->dtype), ir_dtype_name(x->dtype));
    c->out[0] = *x;
    if (ind->rank == 0)
        return ir_node_errorf(c->diag, c->node, "indices must have rank >= 1");
    if (x->rank < 0 || ind->rank < 0 || !ir_dim_is_const(ind->dims[ind->rank - 1]))
        return 0;
    int q = ind->rank, r = x->rank;
    int64_t k = ind->dims[q - 1].v;
    if (k > r)
        return ir_node_errorf(c->diag, c->node, "index tuples of %lld values for rank %d",
                              (long long)k, r);
    if (upd->rank >= 0) {
        if (upd->rank != q - 1 + r - k)
            return ir_node_errorf(c->diag, c->node, "updates have rank %d, expected %lld",
                                  upd->rank, (long long)(q - 1 + r - k));
        for (int i = 0; i < upd->rank; i++) {
            ir_dim a = upd->dims[i], e = i < q - 1 ? ind->dims[i] : x->dims[k + i - (q - 1)];
            if (ir_dim_is_const(a) && ir_dim_is_const(e) && a.v != e.v)
                return ir_node_errorf(c->diag, c->node, "updates dim %d is %lld, expected %lld",
                                      i, (long long)a.v, (long long)e.v);
        }
    }
    const ir_tensor *iv = c->val[1];
    for (int64_t i = 0; iv && k && i < iv->numel; i++) {
        ir_dim d = x->dims[i % k];
        int64_t w;
        if (ir_dim_is_const(d) && wrap_index(c, ir_tensor_geti(iv, i), d.v, &w) < 0)
            return -1;
    }
    return 0;
}

int ref_scatter_nd(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0], *ind = c->in[1], *upd = c->in[2];
    ir_tensor *y = c->out[0];
    ir_shape_ctx s = mv_err_ctx(c);
    int red = ir_mv_reduction(&s, ir_attr_string(c->node, "reduction", "none"));
    if (red < 0)
        return -1;
    int64_t k = ind->dims[ind->rank - 1], st[IR_MAX_RANK], slice = 1;
    ir_strides(x->dims, x->rank, st);
    for (int i = (int)k; i < x->rank; i++)
        slice *= x->dims[i];
    int64_t ntup = k ? ind->numel / k : 1;
    for (int i = 0; k == 0 && i < ind->rank - 1; i++)
        ntup *= ind->dims[i];
    if (upd->numel != ntup * slice || upd->dtype != x->dtype)
        return ir_node_errorf(c->diag, c->node, "updates do not match the indices");
    if (x->nbytes)
        memcpy(y->data, x->data, x->nbytes);
    size_t esz = ir_dtype_size(x->dtype);
    for (int64_t t = 0; t < ntup; t++) {
        int64_t off;
        if (tuple_offset(&s, ind, t * k, k, x->dims, st, &off) < 0)
            return -1;
        if (red == MV_RED_NONE) {
            memcpy(mv_elem(y, off), mv_elem(upd, t * slice), (size_t)slice * esz);
            continue;
        }
        for (int64_t e = 0; e < slice; e++)
            ir_mv_reduce_elem(y, off + e, upd, t * slice + e, red);
    }
    return 0;
}

/* ---- TensorScatter ------------------------------------------------------------ */

/* The KV-cache update: cache and update agree on every dim but axis (not
 * the batch dim 0), where update has sequence_length <= max_sequence. */
static int tscatter_axis(ir_shape_ctx *c, int rank, int *axis)
{
    const char *mode = ir_attr_string(c->node, "mode", "linear");
    if (strcmp(mode, "linear") && strcmp(mode, "circular"))
        return ir_node_errorf(c->diag, c->node, "unknown mode '%.40s'", mode);
    if (rank < 2)
        return ir_node_errorf(c->diag, c->node, "cache must have rank >= 2, got %d", rank);
    if (ir_norm_axis(c, ir_attr_int(c->node, "axis", -2), rank, axis) < 0)
        return -1;
    if (*axis == 0)
        return ir_node_errorf(c->diag, c->node, "axis cannot be the batch dim 0");
    return 0;
}

int shape_tensor_scatter(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0], *u = c->in[1];
    int axis;
    if (ir_mv_check_int(c, 2, "write_indices") < 0)
        return -1;
    if (u->dtype != x->dtype)
        return ir_node_errorf(c->diag, c->node, "update is %s but the cache is %s",
                              ir_dtype_name(u->dtype), ir_dtype_name(x->dtype));
    c->out[0] = *x;
    if (x->rank < 0 || u->rank < 0)
        return 0;
    if (u->rank != x->rank)
        return ir_node_errorf(c->diag, c->node, "update has rank %d, the cache %d", u->rank,
                              x->rank);
    if (tscatter_axis(c, x->rank, &axis) < 0)
        return -1;
    for (int i = 0; i < x->rank; i++) {
        ir_dim a = u->dims[i], b = x->dims[i];
        if (ir_dim_is_const(a) && ir_dim_is_const(b) && (i == axis ? a.v > b.v : a.v != b.v))
            return ir_node_errorf(c->diag, c->node, "update dim %d (%lld) does not fit the "
                                  "cache's (%lld)", i, (long long)a.v, (long long)b.v);
    }
    return 0;
}

int ref_tensor_scatter(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0], *u = c->in[1], *wi = mv_in(c, 2);
    ir_tensor *y = c->out[0];
    ir_shape_ctx s = mv_err_ctx(c);
    int axis;
    if (tscatter_axis(&s, x->rank, &axis) < 0)
        return -1;
    bool circular = !strcmp(ir_attr_string(c->node, "mode", "linear"), "circular");
    if (x->numel == 0)
        return 0; /* dims x element size might overflow when empty */
    int64_t prefix = 1, inner = (int64_t)ir_dtype_size(x->dtype);
    for (int i = 0; i < axis; i++)
        prefix *= x->dims[i];
    for (int i = axis + 1; i < x->rank; i++)
        inner *= x->dims[i];
    int64_t maxs = x->dims[axis], seq = u->dims[axis], batch = x->dims[0];
    if (u->rank != x->rank || seq > maxs || u->numel * (int64_t)ir_dtype_size(u->dtype) !=
                                                 prefix * seq * inner)
        return ir_node_errorf(c->diag, c->node, "update does not fit the cache");
    if (wi && (wi->rank != 1 || wi->numel != batch))
        return ir_node_errorf(c->diag, c->node, "write_indices must be 1-D of length %lld",
                              (long long)batch);
    memcpy(y->data, x->data, x->nbytes);
    if (maxs == 0 || seq == 0)
        return 0;
    for (int64_t p = 0; p < prefix; p++) {
        int64_t b = p / (prefix / batch), w = wi ? ir_tensor_geti(wi, b) : 0;
        if (!circular && (w < 0 || w > maxs - seq))
            return ir_node_errorf(c->diag, c->node, "write index %lld + %lld steps exceeds %lld",
                                  (long long)w, (long long)seq, (long long)maxs);
        for (int64_t t = 0; t < seq; t++) {
            int64_t pos = circular ? ((w % maxs + maxs) % maxs + t) % maxs : w + t;
            memcpy((char *)y->data + (p * maxs + pos) * inner,
                   (const char *)u->data + (p * seq + t) * inner, (size_t)inner);
        }
    }
    return 0;
}

/* ---- OneHot ------------------------------------------------------------------ */

static int onehot_depth(ir_shape_ctx *c, const ir_tensor *t, int64_t *depth)
{
    if (t->numel != 1)
        return ir_node_errorf(c->diag, c->node, "depth must hold one value, has %lld",
                              (long long)t->numel);
    double v = ir_tensor_getf(t, 0);
    if (!(v >= 1 && v <= (double)((int64_t)1 << 40)))
        return ir_node_errorf(c->diag, c->node, "depth %g is invalid", v);
    *depth = (int64_t)v;
    return 0;
}

/* Output dims: indices' dims with depth inserted at axis (in [-r-1, r]);
 * dtype: the values' (input 2, [off, on]). */
int shape_onehot(ir_shape_ctx *c)
{
    const ir_type *ind = c->in[0], *vals = c->in[2];
    ir_type *o = &c->out[0];
    if (vals->rank >= 0 && (vals->rank != 1 || (ir_dim_is_const(vals->dims[0]) &&
                                                vals->dims[0].v != 2)))
        return ir_node_errorf(c->diag, c->node, "values must be a 1-D [off, on] pair");
    if (ind->rank < 0) {
        ir_type_unknown(o, vals->dtype, IR_RANK_UNKNOWN);
        return 0;
    }
    int r = ind->rank + 1, axis;
    if (r > IR_MAX_RANK)
        return ir_node_errorf(c->diag, c->node, "output rank %d exceeds %d", r, IR_MAX_RANK);
    if (ir_norm_axis(c, ir_attr_int(c->node, "axis", -1), r, &axis) < 0)
        return -1;
    ir_type_unknown(o, vals->dtype, r);
    for (int i = 0, k = 0; i < r; i++)
        if (i != axis)
            o->dims[i] = ind->dims[k++];
    int64_t depth;
    if (c->val[1]) {
        if (onehot_depth(c, c->val[1], &depth) < 0)
            return -1;
        o->dims[axis] = ir_dim_const(depth);
    }
    return ir_mv_check_size(c, o);
}

/* out[..., d, ...] = on if the index (negative: + depth) equals d, else
 * off; out-of-range indices give an all-off line. */
int ref_onehot(ir_ref_ctx *c)
{
    const ir_tensor *ind = c->in[0], *vals = c->in[2];
    ir_tensor *y = c->out[0];
    ir_shape_ctx s = mv_err_ctx(c);
    int64_t depth;
    int axis;
    if (onehot_depth(&s, c->in[1], &depth) < 0 ||
        ir_norm_axis(&s, ir_attr_int(c->node, "axis", -1), y->rank, &axis) < 0)
        return -1;
    if (vals->numel != 2)
        return ir_node_errorf(c->diag, c->node, "values must hold 2 values");
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++)
        outer *= y->dims[i];
    for (int i = axis + 1; i < y->rank; i++)
        inner *= y->dims[i];
    size_t esz = ir_dtype_size(y->dtype);
    const char *off = vals->data, *on = off + esz;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t d = 0; d < depth; d++)
            for (int64_t i = 0; i < inner; i++) {
                int64_t iv = ir_tensor_geti(ind, o * inner + i);
                if (iv < 0)
                    iv += depth;
                memcpy(mv_elem(y, (o * depth + d) * inner + i), iv == d ? on : off, esz);
            }
    return 0;
}

/* ---- Compress, NonZero ----------------------------------------------------------- */

/* Number of selected slices: true conditions among the first n (a true
 * condition past n is an error; false ones are ignored). */
static int compress_count(ir_shape_ctx *c, const ir_tensor *cond, int64_t n, int64_t *cnt)
{
    *cnt = 0;
    if (cond->rank != 1)
        return ir_node_errorf(c->diag, c->node, "condition must be 1-D");
    for (int64_t i = 0; i < cond->numel; i++)
        if (ir_tensor_geti(cond, i)) {
            if (i >= n)
                return ir_node_errorf(c->diag, c->node, "condition selects index %lld of %lld",
                                      (long long)i, (long long)n);
            ++*cnt;
        }
    return 0;
}

int shape_compress(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    ir_type *o = &c->out[0];
    const ir_attr *aa = ir_node_attr(c->node, "axis");
    const ir_tensor *cv = c->val[1];
    if (c->in[1]->rank >= 0 && c->in[1]->rank != 1)
        return ir_node_errorf(c->diag, c->node, "condition must be 1-D");
    if (x->rank < 0) {
        ir_type_unknown(o, x->dtype, aa ? IR_RANK_UNKNOWN : 1);
        return 0;
    }
    int64_t cnt, n;
    if (!aa) {
        ir_type_unknown(o, x->dtype, 1);
        if (cv && ir_type_numel(x, &n)) {
            if (compress_count(c, cv, n, &cnt) < 0)
                return -1;
            o->dims[0] = ir_dim_const(cnt);
        }
        return 0;
    }
    int axis;
    if (ir_norm_axis(c, aa->i, x->rank, &axis) < 0)
        return -1;
    if (x->rank == 0)
        return ir_node_errorf(c->diag, c->node, "cannot compress a scalar along an axis");
    *o = *x;
    o->dims[axis] = ir_dim_unknown();
    if (cv && ir_dim_is_const(x->dims[axis])) {
        if (compress_count(c, cv, x->dims[axis].v, &cnt) < 0)
            return -1;
        o->dims[axis] = ir_dim_const(cnt);
    }
    return 0;
}

int ref_compress(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0], *cond = c->in[1];
    const ir_attr *aa = ir_node_attr(c->node, "axis");
    ir_shape_ctx s = mv_err_ctx(c);
    if (c->out[0]->numel == 0)
        return 0; /* dims x element size might overflow when empty */
    int64_t outer = 1, n = x->numel, inner = (int64_t)ir_dtype_size(x->dtype);
    if (aa) {
        int axis;
        if (ir_norm_axis(&s, aa->i, x->rank, &axis) < 0)
            return -1;
        n = x->dims[axis];
        for (int k = 0; k < axis; k++)
            outer *= x->dims[k];
        for (int k = axis + 1; k < x->rank; k++)
            inner *= x->dims[k];
    }
    int64_t cnt;
    if (compress_count(&s, cond, n, &cnt) < 0)
        return -1;
    if ((int64_t)c->out[0]->nbytes != outer * cnt * inner)
        return ir_node_errorf(c->diag, c->node, "output size does not match the condition");
    char *dp = c->out[0]->data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < n && i < cond->numel; i++)
            if (ir_tensor_geti(cond, i)) {
                memcpy(dp, (const char *)x->data + (o * n + i) * inner, (size_t)inner);
                dp += inner;
            }
    return 0;
}

static bool is_nonzero(const ir_tensor *t, int64_t i)
{
    if (ir_dtype_is_float(t->dtype))
        return ir_tensor_getf(t, i) != 0;
    return ir_tensor_geti(t, i) != 0;
}

/* NonZero: i64 [rank, count] of the coordinates of non-zero elements in
 * row-major order; a scalar counts as rank 1 (as numpy does). */
int shape_nonzero(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    ir_type *o = &c->out[0];
    ir_type_unknown(o, IR_I64, 2);
    if (x->rank >= 0)
        o->dims[0] = ir_dim_const(x->rank ? x->rank : 1);
    const ir_tensor *v = c->val[0];
    if (v) {
        int64_t n = 0;
        for (int64_t i = 0; i < v->numel; i++)
            n += is_nonzero(v, i);
        o->dims[1] = ir_dim_const(n);
    }
    return 0;
}

int ref_nonzero(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    ir_tensor *y = c->out[0];
    int r = x->rank ? x->rank : 1;
    int64_t n = y->dims[1], j = 0, idx[IR_MAX_RANK] = {0};
    if (x->numel == 0)
        return 0;
    int64_t *out = y->data;
    do {
        if (is_nonzero(x, j)) {
            for (int k = 0; k < r; k++)
                out[k * n] = x->rank ? idx[k] : 0;
            out++;
        }
        j++;
    } while (x->rank && ir_index_next(idx, x->dims, x->rank));
    return 0;
}

/* ---- ReverseSequence ----------------------------------------------------------- */

/* Reverses the first sequence_lens[b] entries along the time axis for
 * each batch entry b; time and batch axes are 0 and 1 in either order. */
static int revseq_axes(ir_shape_ctx *c, int *ta, int *ba)
{
    int64_t t = ir_attr_int(c->node, "time_axis", 0), b = ir_attr_int(c->node, "batch_axis", 1);
    if (!((t == 0 && b == 1) || (t == 1 && b == 0)))
        return ir_node_errorf(c->diag, c->node, "time_axis and batch_axis must be 0 and 1");
    *ta = (int)t;
    *ba = (int)b;
    return 0;
}

static int revseq_lens(ir_shape_ctx *c, const ir_tensor *lens, int64_t T, int64_t B)
{
    if (lens->rank != 1 || lens->numel != B)
        return ir_node_errorf(c->diag, c->node, "sequence_lens must be 1-D of length %lld",
                              (long long)B);
    for (int64_t i = 0; i < B; i++) {
        int64_t v = ir_tensor_geti(lens, i);
        if (v < 0 || v > T)
            return ir_node_errorf(c->diag, c->node, "sequence_lens[%lld] = %lld is out of "
                                  "range [0, %lld]", (long long)i, (long long)v, (long long)T);
    }
    return 0;
}

int shape_reverse_sequence(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    int ta, ba;
    if (revseq_axes(c, &ta, &ba) < 0 || ir_mv_check_int(c, 1, "sequence_lens") < 0)
        return -1;
    if (x->rank >= 0 && x->rank < 2)
        return ir_node_errorf(c->diag, c->node, "input must have rank >= 2");
    c->out[0] = *x;
    if (x->rank >= 0 && c->val[1] && ir_dim_is_const(x->dims[ta]) &&
        ir_dim_is_const(x->dims[ba]))
        return revseq_lens(c, c->val[1], x->dims[ta].v, x->dims[ba].v);
    return 0;
}

int ref_reverse_sequence(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0], *lens = c->in[1];
    ir_shape_ctx s = mv_err_ctx(c);
    int ta, ba;
    if (revseq_axes(&s, &ta, &ba) < 0)
        return -1;
    if (x->numel == 0)
        return 0; /* dims x element size might overflow when empty */
    int64_t T = x->dims[ta], B = x->dims[ba], inner = (int64_t)ir_dtype_size(x->dtype);
    if (revseq_lens(&s, lens, T, B) < 0)
        return -1;
    for (int i = 2; i < x->rank; i++)
        inner *= x->dims[i];
    for (int64_t t = 0; t < T; t++)
        for (int64_t b = 0; b < B; b++) {
            int64_t len = ir_tensor_geti(lens, b), st = t < len ? len - 1 - t : t;
            int64_t dst = ta == 0 ? t * B + b : b * T + t;
            int64_t src = ta == 0 ? st * B + b : b * T + st;
            memcpy((char *)c->out[0]->data + dst * inner, (const char *)x->data + src * inner,
                   (size_t)inner);
        }
    return 0;
}
