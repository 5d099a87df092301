/* gather_scatter.c - data movement driven by index tensors: Gather,
 * GatherElements, GatherND, ScatterElements (and the deprecated
 * Scatter), ScatterND, TensorScatter, OneHot, ReverseSequence, and the
 * value-dependent Compress and NonZero (into their static output shape,
 * with a running count as the output position; a run whose count is not
 * the declared one fails); also Slice and Pad
 * whose starts/pads arrive at run time (per-element index expressions).
 * Indices are data: each is loaded, converted to i64, wrapped when
 * negative and clamped into its dim, so a hostile index never reads or
 * writes outside a buffer; where the reference rejects an index (Gather,
 * GatherElements, GatherND, the scatters, ReverseSequence's lengths) the
 * kernel also fails the run with the reference's reason (kir_fail,
 * mv_index_checked), so compiled code refuses what the interpreter does. Scatters copy the data to the
 * output first, then a second loop nest applies the updates in the
 * reference's order, so the kernel runs serially.
 */
#include "codegen/lower/movement.h"
#include "ir/ops.h"

#include <string.h>

enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN };

static int reduction(const ir_node *n)
{
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    const char *s = n->op == IR_OP_SCATTER ? "none" : ir_attr_string(n, "reduction", "none");
    for (int i = 0; i < 5; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

static bool static_io(const ir_node *n)
{
    for (int i = 0; i < n->nin; i++)
        if (n->in[i] && !ir_type_is_static(&n->in[i]->type))
            return false;
    for (int i = 0; i < n->nout; i++)
        if (!ir_type_is_static(&n->out[i]->type))
            return false;
    return true;
}

static bool index_dtype(ir_dtype t) { return ir_dtype_is_int(t); }

/* The scatter reduction of the current value a and the update b in the
 * buffer's dtype (bool: add is or, mul is and). */
static kir_expr *reduce(kir_kernel *k, int red, kir_expr *a, kir_expr *b)
{
    ir_dtype t = b->dtype;
    switch (red) {
    case RED_ADD: return kir_op2(k, t == IR_BOOL ? KIR_MAX : KIR_ADD, t, a, b);
    case RED_MUL: return kir_op2(k, t == IR_BOOL ? KIR_MIN : KIR_MUL, t, a, b);
    case RED_MAX: return kir_op2(k, KIR_MAX, t, a, b);
    case RED_MIN: return kir_op2(k, KIR_MIN, t, a, b);
    default: return b;
    }
}

/* out = data, element by element (the first statement of a scatter). */
static int copy_data(lctx *c)
{
    kir_expr *idx[IR_MAX_RANK];
    kir_block *b = mv_nest(c, &c->k->body, &c->n->out[0]->type, false, true, idx);
    return b && kir_store(c->k, b, c->out, idx, kir_load(c->k, c->buf[0], idx)) ? 0 : -1;
}

/* ---- Gather, GatherElements, GatherND ---------------------------------------------------- */

/* out[pre, j..., post] = data[pre, wrap(indices[j...]), post]. */
static int lower_gather(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *tx = &n->in[0]->type, *tind = &n->in[1]->type, *to = &n->out[0]->type;
    int axis, q = tind->rank;
    if (!mv_axis(ir_attr_int(n, "axis", 0), tx->rank, &axis))
        return -1;
    kir_expr *oi[IR_MAX_RANK], *xi[IR_MAX_RANK];
    kir_block *b = mv_nest(c, &k->body, to, true, axis < tx->rank - 1, oi);
    if (!b)
        return -1;
    kir_expr *w = mv_index_checked_dim(c, b, kir_load(k, c->buf[1], oi + axis), tx->dims[axis]);
    for (int d = 0; d < tx->rank; d++)
        xi[d] = d < axis ? oi[d] : d == axis ? w : oi[d - 1 + q];
    return kir_store(k, b, c->out, oi, kir_load(k, c->buf[0], xi)) ? 0 : -1;
}

/* out[i...] = data[i... with i[axis] = wrap(indices[i...])]. */
static int lower_gather_elements(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *tx = &n->in[0]->type, *to = &n->out[0]->type;
    int axis;
    if (!mv_axis(ir_attr_int(n, "axis", 0), tx->rank, &axis))
        return -1;
    kir_expr *oi[IR_MAX_RANK], *xi[IR_MAX_RANK];
    kir_block *b = mv_nest(c, &k->body, to, true, false, oi);
    if (!b)
        return -1;
    for (int d = 0; d < tx->rank; d++)
        xi[d] = d == axis ? mv_index_checked_dim(c, b, kir_load(k, c->buf[1], oi), tx->dims[axis]) : oi[d];
    return kir_store(k, b, c->out, oi, kir_load(k, c->buf[0], xi)) ? 0 : -1;
}

/* out[bt..., t..., s...] = data[bt..., tuple(bt..., t...), s...] with
 * the tuple's k values read from the last dim of indices. */
static int lower_gather_nd(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *tx = &n->in[0]->type, *tind = &n->in[1]->type, *to = &n->out[0]->type;
    int bd = (int)ir_attr_int(n, "batch_dims", 0), q = tind->rank;
    int64_t kk = tind->dims[q - 1].v;
    kir_expr *oi[IR_MAX_RANK], *xi[IR_MAX_RANK], *ii[IR_MAX_RANK];
    kir_block *b = mv_nest(c, &k->body, to, true, bd + kk < tx->rank, oi);
    if (!b)
        return -1;
    for (int d = 0; d < q - 1; d++)
        ii[d] = oi[d];
    for (int d = 0; d < bd; d++)
        xi[d] = oi[d];
    for (int j = 0; j < kk; j++) {
        ii[q - 1] = lw_i64c(k, j);
        xi[bd + j] = mv_index_checked(c, b, kir_load(k, c->buf[1], ii), tx->dims[bd + j].v);
    }
    for (int d = bd + (int)kk; d < tx->rank; d++)
        xi[d] = oi[q - 1 + d - bd - (int)kk];
    return kir_store(k, b, c->out, oi, kir_load(k, c->buf[0], xi)) ? 0 : -1;
}

/* ---- ScatterElements, Scatter, ScatterND, TensorScatter --------------------------------- */

/* out[i... with i[axis] = wrap(indices[i...])] op= updates[i...]. */
static int lower_scatter_elements(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *tx = &n->in[0]->type, *tind = &n->in[1]->type;
    int axis, red = reduction(n);
    if (!mv_axis(ir_attr_int(n, "axis", 0), tx->rank, &axis) || copy_data(c) < 0)
        return -1;
    kir_expr *ii[IR_MAX_RANK], *yi[IR_MAX_RANK];
    kir_block *b = mv_nest(c, &k->body, tind, false, false, ii);
    if (!b)
        return -1;
    for (int d = 0; d < tx->rank; d++)
        yi[d] = d == axis ? mv_index_checked_dim(c, b, kir_load(k, c->buf[1], ii), tx->dims[axis]) : ii[d];
    kir_expr *v = reduce(k, red, kir_load(k, c->out, yi), kir_load(k, c->buf[2], ii));
    return kir_store(k, b, c->out, yi, v) ? 0 : -1;
}

/* out[tuple(t...), s...] op= updates[t..., s...]. */
static int lower_scatter_nd(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *tx = &n->in[0]->type, *tu = &n->in[2]->type;
    const ir_type *tind = &n->in[1]->type;
    int q = tind->rank, red = reduction(n);
    int64_t kk = tind->dims[q - 1].v;
    if (copy_data(c) < 0)
        return -1;
    kir_expr *ui[IR_MAX_RANK], *yi[IR_MAX_RANK], *ii[IR_MAX_RANK];
    kir_block *b = mv_nest(c, &k->body, tu, false, red == RED_NONE && kk < tx->rank, ui);
    if (!b)
        return -1;
    for (int d = 0; d < q - 1; d++)
        ii[d] = ui[d];
    for (int j = 0; j < kk; j++) {
        ii[q - 1] = lw_i64c(k, j);
        yi[j] = mv_index_checked(c, b, kir_load(k, c->buf[1], ii), tx->dims[j].v);
    }
    for (int d = (int)kk; d < tx->rank; d++)
        yi[d] = ui[q - 1 + d - (int)kk];
    kir_expr *v = reduce(k, red, kir_load(k, c->out, yi), kir_load(k, c->buf[2], ui));
    return kir_store(k, b, c->out, yi, v) ? 0 : -1;
}

/* The KV-cache write: update's steps go to positions w + t along axis
 * (w = write_indices[batch], 0 if absent), modulo the axis size when
 * circular; linear writes clamp w so all steps stay inside the cache. */
static int lower_tensor_scatter(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *tx = &n->in[0]->type, *tu = &n->in[1]->type;
    int axis;
    if (!mv_axis(ir_attr_int(n, "axis", -2), tx->rank, &axis) || axis == 0 || copy_data(c) < 0)
        return -1;
    bool circular = !strcmp(ir_attr_string(n, "mode", "linear"), "circular");
    int64_t maxs = tx->dims[axis].v, seq = tu->dims[axis].v;
    kir_expr *ui[IR_MAX_RANK], *yi[IR_MAX_RANK];
    kir_block *b = mv_nest(c, &k->body, tu, false, axis < tx->rank - 1, ui);
    if (!b)
        return -1;
    kir_expr *w = lw_i64c(k, 0);
    if (n->nin > 2 && n->in[2]) {
        w = kir_load(k, c->buf[2], ui);
        if (w && w->dtype != IR_I64)
            w = kir_op1(k, KIR_CAST, IR_I64, w);
    }
    kir_expr *pos;
    if (circular) {
        kir_expr *m = lw_i64c(k, maxs > 0 ? maxs : 1);
        kir_expr *wm = kir_op2(k, KIR_REM, IR_I64, kir_iadd(k, kir_op2(k, KIR_REM, IR_I64, w, m), m), m);
        pos = kir_op2(k, KIR_REM, IR_I64, kir_iadd(k, wm, ui[axis]), m);
    } else {
        w = kir_op2(k, KIR_MIN, IR_I64, kir_op2(k, KIR_MAX, IR_I64, w, lw_i64c(k, 0)), lw_i64c(k, maxs - seq));
        pos = kir_iadd(k, w, ui[axis]);
    }
    for (int d = 0; d < tx->rank; d++)
        yi[d] = d == axis ? pos : ui[d];
    return kir_store(k, b, c->out, yi, kir_load(k, c->buf[1], ui)) ? 0 : -1;
}

/* ---- OneHot, ReverseSequence ----------------------------------------------------------- */

/* out[..., d, ...] = values[1] if indices[...] (+ depth if negative) == d,
 * else values[0]. */
static int lower_onehot(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *to = &n->out[0]->type;
    int axis;
    if (!mv_axis(ir_attr_int(n, "axis", -1), to->rank, &axis))
        return -1;
    int64_t depth = to->dims[axis].v;
    kir_expr *oi[IR_MAX_RANK], *ii[IR_MAX_RANK];
    kir_block *b = mv_nest(c, &k->body, to, true, axis == to->rank - 1, oi);
    if (!b)
        return -1;
    for (int d = 0, j = 0; d < to->rank; d++)
        if (d != axis)
            ii[j++] = oi[d];
    kir_expr *iv = kir_load(k, c->buf[0], ii);
    if (iv && iv->dtype != IR_I64)
        iv = kir_op1(k, KIR_CAST, IR_I64, iv);
    kir_expr *neg = kir_op2(k, KIR_LT, IR_BOOL, iv, lw_i64c(k, 0));
    iv = kir_op3(k, KIR_SELECT, IR_I64, neg, kir_iadd(k, iv, lw_i64c(k, depth)), iv);
    kir_expr *z[1] = {lw_i64c(k, 0)}, *one[1] = {lw_i64c(k, 1)};
    kir_expr *on = kir_op2(k, KIR_EQ, IR_BOOL, iv, oi[axis]);
    kir_expr *v = kir_op3(k, KIR_SELECT, to->dtype, on, kir_load(k, c->buf[2], one), kir_load(k, c->buf[2], z));
    if (!kir_store(k, b, c->out, oi, v))
        return -1;
    /* depth given at run time must be the output's (the finished kernel
     * fails the run otherwise), read as the reference does: a number in
     * [1, 2^40], truncated */
    if (n->in[1]->kind == IR_VAL_CONST || c->buf[1] < 0)
        return 0;
    kir_expr *dv = lw_scalar_in(c, 1, IR_F64);
    kir_expr *ok = kir_op2(k, KIR_AND, IR_BOOL, kir_op2(k, KIR_LE, IR_BOOL, kir_const_f(k, IR_F64, 1), dv),
                           kir_op2(k, KIR_LE, IR_BOOL, dv, kir_const_f(k, IR_F64, 0x1p40)));
    ok = kir_op2(k, KIR_AND, IR_BOOL, ok, kir_op2(k, KIR_EQ, IR_BOOL, kir_op1(k, KIR_FLOOR, IR_F64, dv),
                                                  kir_const_f(k, IR_F64, (double)depth)));
    kir_stmt *chk = kir_if(k, lw_check_block(k), kir_op1(k, KIR_NOT, IR_BOOL, ok));
    char msg[400];
    snprintf(msg, sizeof msg, "node '%.200s' (OneHot): depth is not the output's %lld", n->name, (long long)depth);
    return chk && kir_fail(k, &chk->body, msg) ? 0 : -1;
}

/* out[t, b, ...] = x[t < len ? len-1-t : t, b, ...] with len =
 * sequence_lens[b] (outside [0, T]: the run fails; the kernel reads it
 * clamped) (time and batch axes in either order). */
static int lower_reverse_sequence(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *to = &n->out[0]->type;
    int ta = (int)ir_attr_int(n, "time_axis", 0), ba = (int)ir_attr_int(n, "batch_axis", 1);
    int64_t T = to->dims[ta].v;
    kir_expr *oi[IR_MAX_RANK], *xi[IR_MAX_RANK];
    kir_block *b = mv_nest(c, &k->body, to, true, to->rank > 2, oi);
    if (!b)
        return -1;
    kir_expr *len = kir_load(k, c->buf[1], &oi[ba]);
    if (len && len->dtype != IR_I64)
        len = kir_op1(k, KIR_CAST, IR_I64, len);
    /* A length outside [0, T] is the reference's error; the kernel goes on clamped. */
    if (!(len = kir_let(k, b, len)))
        return -1;
    kir_stmt *chk = kir_if(k, b, kir_op2(k, KIR_OR, IR_BOOL, kir_op2(k, KIR_LT, IR_BOOL, len, lw_i64c(k, 0)),
                                         kir_op2(k, KIR_LT, IR_BOOL, lw_i64c(k, T), len)));
    char msg[400];
    snprintf(msg, sizeof msg, "node '%.200s' (%s): a sequence_lens value is out of range [0, %lld]", n->name,
             ir_ops[n->op].name, (long long)T);
    if (!chk || !kir_fail(k, &chk->body, msg))
        return -1;
    len = kir_op2(k, KIR_MIN, IR_I64, kir_op2(k, KIR_MAX, IR_I64, len, lw_i64c(k, 0)), lw_i64c(k, T));
    kir_expr *t = oi[ta];
    kir_expr *rev = kir_op2(k, KIR_SUB, IR_I64, kir_op2(k, KIR_SUB, IR_I64, len, lw_i64c(k, 1)), t);
    kir_expr *in = kir_op2(k, KIR_LT, IR_BOOL, t, len);
    for (int d = 0; d < to->rank; d++)
        xi[d] = d == ta ? kir_op3(k, KIR_SELECT, IR_I64, in, rev, t) : oi[d];
    return kir_store(k, b, c->out, oi, kir_load(k, c->buf[0], xi)) ? 0 : -1;
}

/* ---- Compress, NonZero ------------------------------------------------------------------ */

/* In b: the run fails unless the count the values give is the declared
 * one (the interpreter's result would have another length). */
static int count_check(lctx *c, kir_block *b, kir_expr *count, int64_t declared, const char *what)
{
    kir_kernel *k = c->k;
    kir_stmt *s = kir_if(k, b, kir_op2(k, KIR_NE, IR_BOOL, count, lw_i64c(k, declared)));
    char msg[400];
    snprintf(msg, sizeof msg, "node '%.200s' (%s): the count of %s is not the %lld the output holds", c->n->name,
             ir_ops[c->n->op].name, what, (long long)declared);
    return s && kir_fail(k, &s->body, msg) ? 0 : -1;
}

/* out = 0 everywhere first: a run that fails its count check leaves
 * defined values. */
static int zero_out(lctx *c)
{
    kir_expr *idx[IR_MAX_RANK];
    const ir_type *to = &c->n->out[0]->type;
    kir_block *b = mv_nest(c, &c->k->body, to, false, true, idx);
    return b && kir_store(c->k, b, c->out, idx, mv_const(c, to->dtype, 0)) ? 0 : -1;
}

/* Compress: for each outer position, walk the axis with a running count
 * of selected slices (an accumulator) and copy each selected slice to
 * that position; the count never passes the output's size. Without an
 * axis the input is walked as a flat sequence. */
static int lower_compress(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *tx = &n->in[0]->type, *to = &n->out[0]->type;
    const ir_attr *aa = ir_node_attr(n, "axis");
    int64_t clen = n->in[1]->type.dims[0].v;
    if (zero_out(c) < 0)
        return -1;
    int axis = 0;
    if (aa && !mv_axis(aa->i, tx->rank, &axis))
        return -1;
    ir_type outer = *tx, inner = *tx;
    if (aa) {
        outer.rank = axis;
        inner.rank = tx->rank - axis - 1;
        memmove(inner.dims, tx->dims + axis + 1, sizeof(ir_dim) * (size_t)inner.rank);
    } else {
        outer.rank = 0;
    }
    int64_t cnt = to->dims[aa ? axis : 0].v;
    kir_expr *xi[IR_MAX_RANK], *oi[IR_MAX_RANK];
    kir_block *b = mv_nest(c, &k->body, &outer, false, false, xi);
    if (!b)
        return -1;
    for (int d = 0; d < outer.rank; d++)
        oi[d] = xi[d];
    int acc = kir_new_acc(k, IR_I64);
    if (acc < 0 || !kir_acc_set(k, b, acc, lw_i64c(k, 0)))
        return -1;
    kir_expr *pos, *cv;
    kir_block *walk;
    if (aa) {
        int v = kir_new_var(k);
        int64_t len = tx->dims[axis].v < clen ? tx->dims[axis].v : clen;
        kir_stmt *l = kir_for(k, b, v, lw_i64c(k, 0), lw_i64c(k, len), KIR_SERIAL, 0);
        if (!l)
            return -1;
        walk = &l->body;
        pos = kir_var(k, v);
        xi[axis] = pos;
        cv = kir_load(k, c->buf[1], &pos);
    } else {
        /* the flat position over every dim of x */
        if (!(walk = mv_nest(c, b, tx, false, false, xi)))
            return -1;
        pos = lw_i64c(k, 0);
        for (int d = 0; d < tx->rank; d++)
            pos = kir_iadd(k, kir_imul(k, pos, lw_i64c(k, tx->dims[d].v)), xi[d]);
        kir_expr *in = kir_op2(k, KIR_LT, IR_BOOL, pos, lw_i64c(k, clen));
        kir_expr *cp = kir_op2(k, KIR_MIN, IR_I64, pos, lw_i64c(k, clen > 0 ? clen - 1 : 0));
        cv = kir_op2(k, KIR_AND, IR_BOOL, in, kir_op1(k, KIR_CAST, IR_BOOL, kir_load(k, c->buf[1], &cp)));
    }
    if (cv && cv->dtype != IR_BOOL)
        cv = kir_op1(k, KIR_CAST, IR_BOOL, cv);
    kir_stmt *s = clen > 0 ? kir_if(k, walk, cv) : NULL;
    kir_stmt *room = s ? kir_if(k, &s->body, kir_op2(k, KIR_LT, IR_BOOL, kir_acc(k, acc), lw_i64c(k, cnt))) : NULL;
    if (!room)
        return clen > 0 ? -1 : count_check(c, b, lw_i64c(k, 0), cnt, "selected slices");
    oi[aa ? axis : 0] = kir_acc(k, acc);
    kir_block *cb = &room->body;
    if (aa) {
        if (!(cb = mv_nest(c, cb, &inner, false, true, xi + axis + 1)))
            return -1;
        for (int d = axis + 1; d < tx->rank; d++)
            oi[d] = xi[d];
    }
    if (!kir_store(k, cb, c->out, oi, kir_load(k, c->buf[0], xi)) ||
        !kir_acc_set(k, &s->body, acc, kir_iadd(k, kir_acc(k, acc), lw_i64c(k, 1))))
        return -1;
    return count_check(c, b, kir_acc(k, acc), cnt, "selected slices");
}

/* NonZero: the coordinates of each non-zero element, in row-major order,
 * at the running count's column. */
static int lower_nonzero(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_type *tx = &c->n->in[0]->type, *to = &c->n->out[0]->type;
    int64_t cnt = to->dims[1].v;
    if (zero_out(c) < 0)
        return -1;
    int acc = kir_new_acc(k, IR_I64);
    if (acc < 0 || !kir_acc_set(k, &k->body, acc, lw_i64c(k, 0)))
        return -1;
    kir_expr *xi[IR_MAX_RANK];
    kir_block *b = mv_nest(c, &k->body, tx, false, false, xi);
    if (!b)
        return -1;
    kir_expr *nz = kir_op1(k, KIR_CAST, IR_BOOL, kir_load(k, c->buf[0], xi));
    kir_stmt *s = kir_if(k, b, nz);
    kir_stmt *room = s ? kir_if(k, &s->body, kir_op2(k, KIR_LT, IR_BOOL, kir_acc(k, acc), lw_i64c(k, cnt))) : NULL;
    if (!room)
        return -1;
    for (int d = 0; d < (tx->rank ? tx->rank : 1); d++) {
        kir_expr *oi[2] = {lw_i64c(k, d), kir_acc(k, acc)};
        if (!kir_store(k, &room->body, c->out, oi, tx->rank ? xi[d] : lw_i64c(k, 0)))
            return -1;
    }
    if (!kir_acc_set(k, &s->body, acc, kir_iadd(k, kir_acc(k, acc), lw_i64c(k, 1))))
        return -1;
    return count_check(c, &k->body, kir_acc(k, acc), cnt, "non-zero elements");
}

/* ---- Slice and Pad with operands known only at run time ------------------------------------ */

static kir_expr *clampi(kir_kernel *k, kir_expr *v, kir_expr *lo, kir_expr *hi)
{
    return kir_op2(k, KIR_MIN, IR_I64, kir_op2(k, KIR_MAX, IR_I64, v, lo), hi);
}

/* Element i of the 1-D integer input j as i64. */
static kir_expr *operand(lctx *c, int j, int64_t i)
{
    kir_expr *idx[1] = {lw_i64c(c->k, i)};
    kir_expr *v = kir_load(c->k, c->buf[j], idx);
    return v && v->dtype != IR_I64 ? kir_op1(c->k, KIR_CAST, IR_I64, v) : v;
}

/* Whether the axis named by entry i of the axes input j (entry i itself
 * when there is no axes input) is dim d: a constant when it can be. */
static kir_expr *names_dim(lctx *c, int j, int64_t i, int d, int r, bool *never)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    *never = false;
    if (!(j < n->nin && n->in[j]) || n->in[j]->kind == IR_VAL_CONST) {
        int64_t a = j < n->nin && n->in[j] ? ir_tensor_geti(&n->in[j]->cval, i) : i;
        a = a < 0 ? a + r : a;
        *never = a != d;
        return *never ? NULL : kir_const_i(k, IR_BOOL, 1);
    }
    kir_expr *a = operand(c, j, i);
    kir_expr *neg = kir_op2(k, KIR_LT, IR_BOOL, a, lw_i64c(k, 0));
    a = kir_op3(k, KIR_SELECT, IR_I64, neg, kir_iadd(k, a, lw_i64c(k, r)), a);
    return kir_op2(k, KIR_EQ, IR_BOOL, a, lw_i64c(k, d));
}

static bool is_1d_int(const ir_node *n, int i)
{
    return i < n->nin && n->in[i] && ir_dtype_is_int(n->in[i]->type.dtype) && n->in[i]->type.rank == 1;
}

/* bad, or'd with whether dim d's length from the run's starts, ends and
 * steps (the reference's: wrapped, clamped, ceil((end - start) / step),
 * the later of entries naming the same dim) is not the static output's,
 * or a step naming it is 0. NULL on out of memory. */
static kir_expr *slice_len_bad(lctx *c, int d, int r, int64_t m, bool has_steps, kir_expr *bad)
{
    kir_kernel *k = c->k;
    int64_t D = c->n->in[0]->type.dims[d].v;
    kir_expr *len = lw_i64c(k, D), *z = lw_i64c(k, 0), *one = lw_i64c(k, 1);
    for (int64_t i = 0; i < m; i++) {
        bool never;
        kir_expr *sel = names_dim(c, 3, i, d, r, &never);
        if (never)
            continue;
        kir_expr *st = has_steps ? operand(c, 4, i) : one;
        kir_expr *up = kir_op2(k, KIR_LT, IR_BOOL, z, st);
        kir_expr *s = operand(c, 1, i), *e = operand(c, 2, i);
        s = kir_op3(k, KIR_SELECT, IR_I64, kir_op2(k, KIR_LT, IR_BOOL, s, z), kir_iadd(k, s, lw_i64c(k, D)), s);
        e = kir_op3(k, KIR_SELECT, IR_I64, kir_op2(k, KIR_LT, IR_BOOL, e, z), kir_iadd(k, e, lw_i64c(k, D)), e);
        s = clampi(k, s, z, kir_op3(k, KIR_SELECT, IR_I64, up, lw_i64c(k, D), lw_i64c(k, D - 1)));
        e = clampi(k, e, kir_op3(k, KIR_SELECT, IR_I64, up, z, lw_i64c(k, -1)),
                   kir_op3(k, KIR_SELECT, IR_I64, up, lw_i64c(k, D), lw_i64c(k, D - 1)));
        /* the distance along the step's direction, and the step's size */
        kir_expr *dist = kir_op3(k, KIR_SELECT, IR_I64, up, kir_op2(k, KIR_SUB, IR_I64, e, s),
                                 kir_op2(k, KIR_SUB, IR_I64, s, e));
        kir_expr *zero_step = kir_op2(k, KIR_EQ, IR_BOOL, st, z);
        kir_expr *size = kir_op3(k, KIR_SELECT, IR_I64, up, st, kir_op2(k, KIR_SUB, IR_I64, z, st));
        size = kir_op3(k, KIR_SELECT, IR_I64, zero_step, one, size);
        kir_expr *n = kir_op2(k, KIR_DIV, IR_I64, kir_iadd(k, dist, kir_op2(k, KIR_SUB, IR_I64, size, one)), size);
        n = kir_op2(k, KIR_MAX, IR_I64, n, z);
        len = kir_op3(k, KIR_SELECT, IR_I64, sel, n, len);
        bad = kir_op2(k, KIR_OR, IR_BOOL, bad, kir_op2(k, KIR_AND, IR_BOOL, sel, zero_step));
    }
    return kir_op2(k, KIR_OR, IR_BOOL, bad,
                   kir_op2(k, KIR_NE, IR_BOOL, len, lw_i64c(k, c->n->out[0]->type.dims[d].v)));
}

/* Slice: per dim, the first position and step chosen among the entries
 * that name it (later entries win, as duplicates are invalid anyway),
 * the start wrapped and clamped as the reference does; each source
 * position is clamped into the dim, so values that disagree with the
 * static output shape still read inside the input, and then fail the
 * run (slice_len_bad). */
static int lower_slice_dyn(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *tx = &n->in[0]->type, *to = &n->out[0]->type;
    int r = tx->rank;
    int64_t m = n->in[1]->type.dims[0].v;
    bool has_steps = n->nin > 4 && n->in[4];
    kir_expr *oi[IR_MAX_RANK], *xi[IR_MAX_RANK], *bad = kir_const_i(k, IR_BOOL, 0);
    kir_block *b = mv_nest(c, &k->body, to, true, false, oi);
    if (!b)
        return -1;
    for (int d = 0; d < r; d++) {
        int64_t D = tx->dims[d].v;
        kir_expr *first = lw_i64c(k, 0), *step = lw_i64c(k, 1);
        for (int64_t i = 0; i < m; i++) {
            bool never;
            kir_expr *sel = names_dim(c, 3, i, d, r, &never);
            if (never)
                continue;
            kir_expr *st = has_steps ? operand(c, 4, i) : lw_i64c(k, 1);
            kir_expr *s = operand(c, 1, i);
            kir_expr *neg = kir_op2(k, KIR_LT, IR_BOOL, s, lw_i64c(k, 0));
            s = kir_op3(k, KIR_SELECT, IR_I64, neg, kir_iadd(k, s, lw_i64c(k, D)), s);
            kir_expr *up = kir_op2(k, KIR_LT, IR_BOOL, lw_i64c(k, 0), st);
            s = clampi(k, s, lw_i64c(k, 0),
                       kir_op3(k, KIR_SELECT, IR_I64, up, lw_i64c(k, D), lw_i64c(k, D > 0 ? D - 1 : 0)));
            first = kir_op3(k, KIR_SELECT, IR_I64, sel, s, first);
            step = kir_op3(k, KIR_SELECT, IR_I64, sel, st, step);
        }
        kir_expr *pos = kir_iadd(k, first, kir_imul(k, step, oi[d]));
        xi[d] = clampi(k, pos, lw_i64c(k, 0), lw_i64c(k, D > 0 ? D - 1 : 0));
        if (!(bad = slice_len_bad(c, d, r, m, has_steps, bad)))
            return -1;
    }
    if (!kir_store(k, b, c->out, oi, kir_load(k, c->buf[0], xi)))
        return -1;
    kir_stmt *chk = kir_if(k, lw_check_block(k), bad);
    char msg[400];
    snprintf(msg, sizeof msg, "node '%.200s' (Slice): a step is 0, or the slice's length is not the output's",
             n->name);
    return chk && kir_fail(k, &chk->body, msg) ? 0 : -1;
}

/* Pad with run-time pads (or axes): per dim the begin pad b is chosen
 * among the entries naming the dim, the end pad follows from the output
 * (e = out - in - b; the run's dims where symbolic), and each output
 * position maps through the mode as in lower_pad, every step an
 * expression; the source position is clamped into the dim whatever the
 * values, and pads that do not give the output fail the run. Constant
 * mode runs as lower_pad does: rows of the last dim in three vector runs
 * (fill, copy, fill) between the run's bounds, a row outside the kept
 * part of the other dims filled whole (Whisper's samples padded to
 * 480000: 4.2 ms element by element, a copy now). */
static int lower_pad_dyn(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *tx = &n->in[0]->type, *to = &n->out[0]->type;
    int r = tx->rank;
    static const char *const modes[] = {"constant", "reflect", "edge", "wrap"};
    const char *ms = ir_attr_string(n, "mode", "constant");
    int mode = 0;
    for (int i = 0; i < 4; i++)
        if (!strcmp(ms, modes[i]))
            mode = i;
    int64_t np = n->in[1]->type.dims[0].v, na = np / 2;
    kir_expr *fill = mv_const(c, to->dtype, 0);
    if (n->nin > 2 && n->in[2] && n->in[2]->type.rank >= 0) {
        int64_t cn = 1;
        kir_expr *z[IR_MAX_RANK];
        for (int d = 0; d < n->in[2]->type.rank; d++) {
            cn *= n->in[2]->type.dims[d].v;
            z[d] = lw_i64c(k, 0);
        }
        if (cn > 0)
            fill = kir_load(k, c->buf[2], z);
    }
    /* per dim: the begin pad, the crops before (from a negative begin
     * pad), where the kept part starts in the output and its length */
    kir_expr *bad = kir_const_i(k, IR_BOOL, 0), *z = lw_i64c(k, 0);
    kir_expr *D[IR_MAX_RANK], *lo[IR_MAX_RANK], *crop[IR_MAX_RANK], *len[IR_MAX_RANK];
    for (int d = 0; d < r; d++) {
        D[d] = kir_dim(k, tx->dims[d]);   /* the run's, when symbolic */
        kir_expr *bp = lw_i64c(k, 0), *eg = lw_i64c(k, 0);
        for (int64_t i = 0; i < na; i++) {
            bool never;
            kir_expr *sel = names_dim(c, 3, i, d, r, &never);
            if (!never) {
                bp = kir_op3(k, KIR_SELECT, IR_I64, sel, operand(c, 1, i), bp);
                eg = kir_op3(k, KIR_SELECT, IR_I64, sel, operand(c, 1, na + i), eg);
            }
        }
        kir_expr *ep = lw_isub(k, lw_isub(k, kir_dim(k, to->dims[d]), D[d]), bp);
        /* the end pad the run gives must be the one the output implies */
        bad = kir_op2(k, KIR_OR, IR_BOOL, bad, kir_op2(k, KIR_NE, IR_BOOL, eg, ep));
        crop[d] = lw_imax(k, lw_isub(k, z, bp), z);
        lo[d] = lw_imax(k, bp, z);
        len[d] = lw_isub(k, lw_isub(k, D[d], crop[d]), lw_imax(k, lw_isub(k, z, ep), z));
        len[d] = lw_imax(k, len[d], mode ? lw_i64c(k, 1) : z);
    }
    kir_expr *oi[IR_MAX_RANK], *xi[IR_MAX_RANK];
    if (mode == 0 && r > 0) {
        ir_type outer = *to;
        outer.rank = r - 1;
        kir_block *b = mv_nest(c, &k->body, &outer, true, false, oi);
        if (!b)
            return -1;
        kir_expr *inside = kir_const_i(k, IR_BOOL, 1);
        for (int d = 0; d < r - 1; d++) {
            kir_expr *i = lw_isub(k, oi[d], lo[d]);
            inside = kir_op2(k, KIR_AND, IR_BOOL, inside,
                             kir_op2(k, KIR_AND, IR_BOOL, kir_op2(k, KIR_LE, IR_BOOL, z, i),
                                     kir_op2(k, KIR_LT, IR_BOOL, i, len[d])));
            xi[d] = kir_iadd(k, i, crop[d]);
        }
        kir_stmt *s = kir_if(k, b, inside);
        if (!s)
            return -1;
        int w = mv_width(c, to->dtype), q = r - 1;
        kir_expr *L = kir_dim(k, to->dims[q]), *b1 = lw_imin(k, lo[q], L);
        kir_expr *b2 = lw_imin(k, kir_iadd(k, lo[q], len[q]), L);
        kir_expr *from[4] = {z, b1, b2, z}, *upto[4] = {b1, b2, L, L};
        for (int part = 0; part < 4; part++) {
            int v = kir_new_var(k);
            kir_stmt *l = kir_for(k, part < 3 ? &s->body : &s->orelse, v, from[part], upto[part], KIR_VECTOR, w);
            if (!l)
                return -1;
            oi[q] = kir_var(k, v);
            xi[q] = kir_iadd(k, lw_isub(k, oi[q], lo[q]), crop[q]);
            if (!kir_store(k, &l->body, c->out, oi, part == 1 ? kir_load(k, c->buf[0], xi) : fill))
                return -1;
        }
    } else {
        kir_block *blk = mv_nest(c, &k->body, to, true, false, oi);
        if (!blk)
            return -1;
        kir_expr *inside = kir_const_i(k, IR_BOOL, 1);
        for (int d = 0; d < r; d++) {
            kir_expr *i = lw_isub(k, oi[d], lo[d]), *mi;
            switch (mode) {
            case 0:
                inside = kir_op2(k, KIR_AND, IR_BOOL, inside,
                                 kir_op2(k, KIR_AND, IR_BOOL, kir_op2(k, KIR_LE, IR_BOOL, z, i),
                                         kir_op2(k, KIR_LT, IR_BOOL, i, len[d])));
                mi = i;
                break;
            case 2:
                mi = clampi(k, i, z, lw_iaddc(k, len[d], -1));
                break;
            case 3:
                mi = kir_op2(k, KIR_REM, IR_I64, kir_iadd(k, kir_op2(k, KIR_REM, IR_I64, i, len[d]), len[d]), len[d]);
                break;
            default: {
                kir_expr *p = lw_imax(k, kir_imul(k, lw_i64c(k, 2), lw_iaddc(k, len[d], -1)), lw_i64c(k, 1));
                kir_expr *mm = kir_op2(k, KIR_REM, IR_I64, kir_iadd(k, kir_op2(k, KIR_REM, IR_I64, i, p), p), p);
                kir_expr *lt = kir_op2(k, KIR_LT, IR_BOOL, mm, len[d]);
                mi = kir_op3(k, KIR_SELECT, IR_I64, lt, mm, lw_isub(k, p, mm));
                break;
            }
            }
            xi[d] = clampi(k, kir_iadd(k, mi, crop[d]), z, lw_imax(k, lw_iaddc(k, D[d], -1), z));
        }
        kir_expr *v = kir_load(k, c->buf[0], xi);
        if (mode == 0)
            v = kir_op3(k, KIR_SELECT, to->dtype, inside, v, fill);
        if (!kir_store(k, blk, c->out, oi, v))
            return -1;
    }
    kir_stmt *chk = kir_if(k, lw_check_block(k), bad);
    char msg[400];
    snprintf(msg, sizeof msg, "node '%.200s' (Pad): the pads do not give the output's shape", n->name);
    return chk && kir_fail(k, &chk->body, msg) ? 0 : -1;
}

/* ---- dispatch ------------------------------------------------------------------------- */

/* Every dim known: constants or symbols the run reads (mv_nest). */
static bool known_io(const ir_node *n)
{
    for (int i = 0; i < n->nin + n->nout; i++) {
        const ir_value *v = i < n->nin ? n->in[i] : n->out[i - n->nin];
        if (v && !ir_type_dims_known(&v->type))
            return false;
    }
    return true;
}

/* dim d of the indices fits the data's: the same dim, or constants, the
 * indices' no longer */
static bool dim_within(ir_dim i, ir_dim x)
{
    return ir_dim_eq(i, x) || (ir_dim_is_const(i) && ir_dim_is_const(x) && i.v <= x.v);
}

/* GatherElements/ScatterElements/Scatter n with known dims: its operands'
 * ranks and dtypes, and every dim but the axis of the indices within the
 * data's (the updates' the indices'). */
static bool elements_fit(const ir_node *n)
{
    int axis;
    const ir_type *x = &n->in[0]->type, *ti = &n->in[1]->type;
    const ir_type *tu = n->op != IR_OP_GATHER_ELEMENTS ? &n->in[2]->type : NULL;
    if (!index_dtype(ti->dtype) || ti->rank != x->rank || !mv_axis(ir_attr_int(n, "axis", 0), x->rank, &axis))
        return false;
    if (tu && (reduction(n) < 0 || tu->rank != ti->rank || tu->dtype != x->dtype))
        return false;
    for (int d = 0; d < x->rank; d++)
        if ((d != axis && !dim_within(ti->dims[d], x->dims[d])) || (tu && !ir_dim_eq(tu->dims[d], ti->dims[d])))
            return false;
    return true;
}

/* Pad n with pads read at run time: a known mode, 2 pads per axis, the
 * axes constant or read too, constant_value of the data's dtype. */
static bool pad_dyn_fits(const ir_node *n)
{
    const ir_type *x = &n->in[0]->type, *o = &n->out[0]->type;
    int64_t np = is_1d_int(n, 1) ? n->in[1]->type.dims[0].v : -1;
    bool axes = n->nin > 3 && n->in[3];
    static const char *const modes[] = {"constant", "reflect", "edge", "wrap"};
    bool known = false;
    for (int i = 0; i < 4; i++)
        known |= !strcmp(ir_attr_string(n, "mode", "constant"), modes[i]);
    if (!known || np < 0 || np % 2 || o->rank != x->rank || (axes && !is_1d_int(n, 3)) ||
        np / 2 != (axes ? n->in[3]->type.dims[0].v : x->rank) || np / 2 > x->rank)
        return false;
    if (axes && n->in[3]->kind == IR_VAL_CONST)
        for (int64_t i = 0; i < np / 2; i++) {
            int a;
            if (!mv_axis(ir_tensor_geti(&n->in[3]->cval, i), x->rank, &a))
                return false;
        }
    return !(n->nin > 2 && n->in[2]) ||
           (n->in[2]->type.dtype == x->dtype && ir_type_is_static(&n->in[2]->type));
}

bool cg_can_lower_movement2(const ir_node *n)
{
    /* Gather reads every dim through the run's symbols, the gathered
     * axis's length too (it wraps and checks the indices): an embedding
     * table [vocab, d] indexed by token ids [B, S], a step of a sequence
     * [S, B, d] in a Loop's body. */
    if (n->op == IR_OP_GATHER && known_io(n)) {
        int axis;
        const ir_type *x = &n->in[0]->type;
        return index_dtype(n->in[1]->type.dtype) && mv_axis(ir_attr_int(n, "axis", 0), x->rank, &axis) &&
               n->out[0]->type.rank == x->rank - 1 + n->in[1]->type.rank;
    }
    /* GatherElements and the scatters along an axis too (the axis's
     * extent read at run time for the index check), where the indices'
     * other dims are the data's, or constants within them: Kaldi's front
     * end gathers its [B, 200] reflected samples out of [B, N + 320] */
    if (n->op == IR_OP_GATHER_ELEMENTS || n->op == IR_OP_SCATTER_ELEMENTS || n->op == IR_OP_SCATTER)
        return known_io(n) && elements_fit(n);
    /* Pad with run-time pads reads the dims too (Whisper's samples padded
     * or cropped to a fixed length: pads [0, 480000 - N]) */
    if (n->op == IR_OP_PAD)
        return known_io(n) && pad_dyn_fits(n);
    if (!static_io(n))
        return false;
    const ir_type *x = &n->in[0]->type, *o = &n->out[0]->type;
    switch (n->op) {
    case IR_OP_GATHER: {
        int axis;
        return index_dtype(n->in[1]->type.dtype) && mv_axis(ir_attr_int(n, "axis", 0), x->rank, &axis) &&
               o->rank == x->rank - 1 + n->in[1]->type.rank;
    }
    case IR_OP_GATHER_ND: {
        const ir_type *ti = &n->in[1]->type;
        int64_t bd = ir_attr_int(n, "batch_dims", 0);
        if (!index_dtype(ti->dtype) || ti->rank < 1 || bd < 0 || bd >= ti->rank || bd >= x->rank)
            return false;
        int64_t kk = ti->dims[ti->rank - 1].v;
        if (kk < 1 || kk > x->rank - bd || o->rank != ti->rank - 1 + x->rank - bd - kk)
            return false;
        for (int d = 0; d < bd; d++)
            if (ti->dims[d].v != x->dims[d].v)
                return false;
        return true;
    }
    case IR_OP_SCATTER_ND: {
        const ir_type *ti = &n->in[1]->type, *tu = &n->in[2]->type;
        if (!index_dtype(ti->dtype) || reduction(n) < 0 || ti->rank < 1 || tu->dtype != x->dtype)
            return false;
        int q = ti->rank;
        int64_t kk = ti->dims[q - 1].v;
        if (kk > x->rank || tu->rank != q - 1 + x->rank - kk)
            return false;
        for (int d = 0; d < tu->rank; d++)
            if (tu->dims[d].v != (d < q - 1 ? ti->dims[d].v : x->dims[kk + d - (q - 1)].v))
                return false;
        return true;
    }
    case IR_OP_TENSOR_SCATTER: {
        const ir_type *tu = &n->in[1]->type;
        int axis;
        if (tu->dtype != x->dtype || tu->rank != x->rank || x->rank < 2 ||
            !mv_axis(ir_attr_int(n, "axis", -2), x->rank, &axis) || axis == 0)
            return false;
        for (int d = 0; d < x->rank; d++)
            if (d == axis ? tu->dims[d].v > x->dims[d].v : tu->dims[d].v != x->dims[d].v)
                return false;
        if (n->nin > 2 && n->in[2]) {
            const ir_type *tw = &n->in[2]->type;
            if (!index_dtype(tw->dtype) || tw->rank != 1 || tw->dims[0].v != x->dims[0].v)
                return false;
        }
        return true;
    }
    case IR_OP_ONE_HOT: {
        int axis;
        const ir_type *tv = &n->in[2]->type;
        return tv->rank == 1 && tv->dims[0].v == 2 && tv->dtype == o->dtype && o->rank == x->rank + 1 &&
               mv_axis(ir_attr_int(n, "axis", -1), o->rank, &axis) &&
               (ir_dtype_is_int(x->dtype) || ir_dtype_is_float(x->dtype));
    }
    case IR_OP_REVERSE_SEQUENCE: {
        int64_t ta = ir_attr_int(n, "time_axis", 0), ba = ir_attr_int(n, "batch_axis", 1);
        const ir_type *tl = &n->in[1]->type;
        return ((ta == 0 && ba == 1) || (ta == 1 && ba == 0)) && x->rank >= 2 && index_dtype(tl->dtype) &&
               tl->rank == 1 && tl->dims[0].v == x->dims[ba].v;
    }
    case IR_OP_COMPRESS: {
        const ir_type *tc = &n->in[1]->type;
        const ir_attr *aa = ir_node_attr(n, "axis");
        int axis;
        if (tc->rank != 1 || (aa && (!mv_axis(aa->i, x->rank, &axis) || o->rank != x->rank)) ||
            (!aa && o->rank != 1))
            return false;
        return tc->dtype == IR_BOOL || ir_dtype_is_int(tc->dtype);
    }
    case IR_OP_SLICE: {
        /* the constant form is movement.c's */
        int64_t m = is_1d_int(n, 1) ? n->in[1]->type.dims[0].v : -1;
        if (m < 0 || m > x->rank || o->rank != x->rank || !is_1d_int(n, 2) || n->in[2]->type.dims[0].v != m)
            return false;
        for (int j = 3; j < 5; j++)
            if (j < n->nin && n->in[j] && (!is_1d_int(n, j) || n->in[j]->type.dims[0].v != m))
                return false;
        return true;
    }
    case IR_OP_NON_ZERO:
        return o->rank == 2 && o->dtype == IR_I64 && o->dims[0].v == (x->rank ? x->rank : 1);
    default:
        return false;
    }
}

int lower_movement2(lctx *c)
{
    switch (c->n->op) {
    case IR_OP_GATHER: return lower_gather(c);
    case IR_OP_GATHER_ELEMENTS: return lower_gather_elements(c);
    case IR_OP_GATHER_ND: return lower_gather_nd(c);
    case IR_OP_SCATTER_ELEMENTS: case IR_OP_SCATTER: return lower_scatter_elements(c);
    case IR_OP_SCATTER_ND: return lower_scatter_nd(c);
    case IR_OP_TENSOR_SCATTER: return lower_tensor_scatter(c);
    case IR_OP_ONE_HOT: return lower_onehot(c);
    case IR_OP_REVERSE_SEQUENCE: return lower_reverse_sequence(c);
    case IR_OP_COMPRESS: return lower_compress(c);
    case IR_OP_NON_ZERO: return lower_nonzero(c);
    case IR_OP_SLICE: return lower_slice_dyn(c);
    case IR_OP_PAD: return lower_pad_dyn(c);
    default: return -1;
    }
}
