/* unique.c - Unique, whose result sizes depend on the input values,
 * compiled into the static shapes the model declares (like NonZero and
 * Compress in gather_scatter.c): slots past the declared length are not
 * written, and a run whose count of distinct items is not the declared
 * length fails (the interpreter's result has that count). The items are
 * the elements of the flattened input, or the slices along `axis`, ordered
 * like the reference: lexicographically over a slice's elements in
 * row-major order, NaN after every number and equal to itself, -0 equal to
 * +0. Kernels have no scratch memory, so nothing is sorted: with
 * sorted=1 each output slot selects the smallest item greater than the
 * previous slot's (scanning in index order, so the first of equal items
 * wins); with sorted=0 an item opens the next slot when no earlier item
 * equals it. A slot then scans the items for its count and writes their
 * inverse indices. Both are O(distinct * items * slice size) and serial.
 */
#include "codegen/lower/sample.h"
#include "codegen/lower/movement.h"
#include "ir/ops.h"

#include <string.h>

typedef struct {
    lctx *c;
    const ir_type *tx;
    int axis;                  /* -1: the flattened input */
    int64_t n;                 /* items */
    ir_type slice;             /* x's dims without the axis */
    int64_t cap[4];            /* declared slots of Y, indices, -, counts */
} uq;

static bool uq_axis(const ir_node *n, int *axis)
{
    const ir_attr *a = ir_node_attr(n, "axis");
    *axis = -1;
    return !a || mv_axis(a->i, n->in[0]->type.rank, axis);
}

bool cg_can_lower_unique(const ir_node *n)
{
    if (n->op != IR_OP_UNIQUE || n->nin != 1 || !n->in[0] || n->nout < 1 || n->nout > 4)
        return false;
    const ir_type *x = &n->in[0]->type, *y = &n->out[0]->type;
    int axis;
    if (!ir_type_is_static(x) || !uq_axis(n, &axis) || y->dtype != x->dtype)
        return false;
    for (int i = 0; i < n->nout; i++)
        if (!ir_type_is_static(&n->out[i]->type))
            return false;
    int64_t items = 1;
    if (axis >= 0) {
        if (y->rank != x->rank)
            return false;
        for (int d = 0; d < x->rank; d++)
            if (d != axis && y->dims[d].v != x->dims[d].v)
                return false;
        items = x->dims[axis].v;
    } else {
        if (y->rank != 1)
            return false;
        for (int d = 0; d < x->rank; d++)
            items *= x->dims[d].v;
    }
    for (int i = 1; i < n->nout; i++) {
        const ir_type *t = &n->out[i]->type;
        if (t->dtype != IR_I64 || t->rank != 1 || (i == 2 && t->dims[0].v != items))
            return false;
    }
    return true;
}

/* x's element j of item `item` (j indexes the slice; unused when flat). */
static kir_expr *uq_load(uq *u, kir_expr *item, kir_expr *const *sidx, bool raw)
{
    lctx *c = u->c;
    kir_expr *idx[IR_MAX_RANK];
    int r = u->tx->rank;
    for (int d = 0, j = 0; d < r; d++) {
        if (u->axis >= 0)
            idx[d] = d == u->axis ? item : sidx[j++];
        else     /* the backends linearize indices, so the flat position in the last dim */
            idx[d] = d == r - 1 ? item : lw_i64c(c->k, 0);
    }
    return raw ? kir_load(c->k, c->buf[0], idx) : lw_load_in(c, 0, idx);
}

/* a < b in the reference's order (NaN last). */
static kir_expr *uq_less(kir_kernel *k, kir_expr *a, kir_expr *b)
{
    kir_expr *l = lw_lt(k, a, b);
    if (!ir_dtype_is_float(a->dtype))
        return l;
    kir_expr *na = kir_op2(k, KIR_NE, IR_BOOL, a, a), *nb = kir_op2(k, KIR_NE, IR_BOOL, b, b);
    return kir_op2(k, KIR_OR, IR_BOOL, l, kir_op2(k, KIR_AND, IR_BOOL, kir_op1(k, KIR_NOT, IR_BOOL, na), nb));
}

/* Appends to b the three-way comparison of items ia and ib and returns
 * its result (-1, 0 or 1, i64), readable after those statements. */
static kir_expr *uq_cmp(uq *u, kir_block *b, kir_expr *ia, kir_expr *ib)
{
    lctx *c = u->c;
    kir_kernel *k = c->k;
    int acc = kir_new_acc(k, IR_I64);
    if (acc < 0 || !kir_acc_set(k, b, acc, lw_i64c(k, 0)))
        return NULL;
    kir_expr *sidx[IR_MAX_RANK];
    kir_block *in = u->axis >= 0 ? mv_nest(c, b, &u->slice, false, false, sidx) : b;
    if (!in)
        return NULL;
    kir_expr *va = uq_load(u, ia, sidx, false), *vb = uq_load(u, ib, sidx, false);
    if (!va || !vb)
        return NULL;
    kir_expr *d = kir_op3(k, KIR_SELECT, IR_I64, uq_less(k, va, vb), lw_i64c(k, -1),
                          kir_op3(k, KIR_SELECT, IR_I64, uq_less(k, vb, va), lw_i64c(k, 1), lw_i64c(k, 0)));
    kir_expr *undecided = kir_op2(k, KIR_EQ, IR_BOOL, kir_acc(k, acc), lw_i64c(k, 0));
    if (!kir_acc_set(k, in, acc, kir_op3(k, KIR_SELECT, IR_I64, undecided, d, kir_acc(k, acc))))
        return NULL;
    return kir_acc(k, acc);
}

/* Stores into b: if p < cap, out[i][p] = v. */
static int uq_store_slot(uq *u, kir_block *b, int i, kir_expr *p, kir_expr *v)
{
    kir_kernel *k = u->c->k;
    kir_stmt *s = kir_if(k, b, lw_lt(k, p, lw_i64c(k, u->cap[i])));
    return s && kir_store(k, &s->body, u->c->outs[i], &p, v) ? 0 : -1;
}

/* Fills output slot p with item r (the first of its equal items): Y's
 * slice, the index, and after a scan of the items from lo, the count and
 * every equal item's inverse index. */
static int uq_slot(uq *u, kir_block *b, kir_expr *p, kir_expr *r, kir_expr *lo)
{
    lctx *c = u->c;
    kir_kernel *k = c->k;
    int nout = c->n->nout;
    kir_stmt *s = kir_if(k, b, lw_lt(k, p, lw_i64c(k, u->cap[0])));
    if (!s)
        return -1;
    kir_expr *sidx[IR_MAX_RANK], *oidx[IR_MAX_RANK];
    kir_block *cp = u->axis >= 0 ? mv_nest(c, &s->body, &u->slice, false, false, sidx) : &s->body;
    if (!cp)
        return -1;
    if (u->axis >= 0)
        for (int d = 0, j = 0; d < u->tx->rank; d++)
            oidx[d] = d == u->axis ? p : sidx[j++];
    else
        oidx[0] = p;
    if (!kir_store(k, cp, c->out, oidx, uq_load(u, r, sidx, true)))
        return -1;
    if (nout > 1 && uq_store_slot(u, b, 1, p, r) < 0)
        return -1;
    if (nout < 3)
        return 0;
    int cnt = kir_new_acc(k, IR_I64), v = kir_new_var(k);
    kir_stmt *l = cnt >= 0 && kir_acc_set(k, b, cnt, lw_i64c(k, 0))
                      ? kir_for(k, b, v, lo, lw_i64c(k, u->n), KIR_SERIAL, 0) : NULL;
    if (!l)
        return -1;
    kir_expr *iv = kir_var(k, v), *cmp = uq_cmp(u, &l->body, iv, r);
    kir_stmt *eq = cmp ? kir_if(k, &l->body, kir_op2(k, KIR_EQ, IR_BOOL, cmp, lw_i64c(k, 0))) : NULL;
    if (!eq || !kir_acc_set(k, &eq->body, cnt, kir_iadd(k, kir_acc(k, cnt), lw_i64c(k, 1))) ||
        !kir_store(k, &eq->body, c->outs[2], &iv, p))
        return -1;
    return nout > 3 ? uq_store_slot(u, b, 3, p, kir_acc(k, cnt)) : 0;
}

/* After the slots: the run fails unless the count of distinct items is
 * every declared slot count (Y's along the axis, indices', counts'). */
static int uq_count_check(uq *u, kir_expr *count)
{
    kir_kernel *k = u->c->k;
    const ir_node *n = u->c->n;
    kir_expr *bad = NULL;
    for (int i = 0; i < n->nout; i++)
        if (i != 2) {
            kir_expr *ne = kir_op2(k, KIR_NE, IR_BOOL, count, lw_i64c(k, u->cap[i]));
            bad = bad ? kir_op2(k, KIR_OR, IR_BOOL, bad, ne) : ne;
        }
    kir_stmt *s = kir_if(k, &k->body, bad);
    char msg[400];
    snprintf(msg, sizeof msg, "node '%.200s' (Unique): the count of distinct items is not the %lld the outputs hold",
             n->name, (long long)u->cap[0]);
    return s && kir_fail(k, &s->body, msg) ? 0 : -1;
}

/* sorted=1: slot p takes the smallest item above slot p-1's; the scan
 * stops once no item is left above. */
static int uq_sorted(uq *u)
{
    kir_kernel *k = u->c->k;
    int prev = kir_new_acc(k, IR_I64), more = kir_new_acc(k, IR_BOOL), best = kir_new_acc(k, IR_I64);
    int slots = kir_new_acc(k, IR_I64), pv = kir_new_var(k), jv = kir_new_var(k);
    if (prev < 0 || more < 0 || best < 0 || slots < 0 || !kir_acc_set(k, &k->body, prev, lw_i64c(k, 0)) ||
        !kir_acc_set(k, &k->body, slots, lw_i64c(k, 0)) ||
        !kir_acc_set(k, &k->body, more, kir_const_i(k, IR_BOOL, 1)))
        return -1;
    kir_stmt *pl = kir_for(k, &k->body, pv, lw_i64c(k, 0), lw_i64c(k, u->n), KIR_SERIAL, 0);
    kir_stmt *live = pl ? kir_if(k, &pl->body, kir_acc(k, more)) : NULL;
    if (!live || !kir_acc_set(k, &live->body, best, lw_i64c(k, -1)))
        return -1;
    kir_stmt *jl = kir_for(k, &live->body, jv, lw_i64c(k, 0), lw_i64c(k, u->n), KIR_SERIAL, 0);
    if (!jl)
        return -1;
    kir_expr *j = kir_var(k, jv), *p = kir_var(k, pv);
    kir_expr *none = lw_lt(k, kir_acc(k, best), lw_i64c(k, 0));
    /* best is clamped for the comparison; its result is unused while none */
    kir_expr *above = uq_cmp(u, &jl->body, kir_acc(k, prev), j);
    kir_expr *below = uq_cmp(u, &jl->body, j, kir_op2(k, KIR_MAX, IR_I64, kir_acc(k, best), lw_i64c(k, 0)));
    if (!above || !below)
        return -1;
    kir_expr *cand = kir_op2(k, KIR_OR, IR_BOOL, kir_op2(k, KIR_EQ, IR_BOOL, p, lw_i64c(k, 0)),
                             lw_lt(k, above, lw_i64c(k, 0)));
    kir_expr *take = kir_op2(k, KIR_AND, IR_BOOL, cand,
                             kir_op2(k, KIR_OR, IR_BOOL, none, lw_lt(k, below, lw_i64c(k, 0))));
    if (!kir_acc_set(k, &jl->body, best, kir_op3(k, KIR_SELECT, IR_I64, take, j, kir_acc(k, best))))
        return -1;
    kir_expr *found = kir_op2(k, KIR_LE, IR_BOOL, lw_i64c(k, 0), kir_acc(k, best));
    if (!kir_acc_set(k, &live->body, more, found))
        return -1;
    kir_stmt *s = kir_if(k, &live->body, kir_acc(k, more));
    if (!s || uq_slot(u, &s->body, p, kir_acc(k, best), lw_i64c(k, 0)) < 0)
        return -1;
    if (!kir_acc_set(k, &s->body, prev, kir_acc(k, best)) ||
        !kir_acc_set(k, &s->body, slots, kir_iadd(k, kir_acc(k, slots), lw_i64c(k, 1))))
        return -1;
    return uq_count_check(u, kir_acc(k, slots));
}

/* sorted=0: item i opens the next slot when no earlier item equals it. */
static int uq_first_order(uq *u)
{
    kir_kernel *k = u->c->k;
    int p = kir_new_acc(k, IR_I64), dup = kir_new_acc(k, IR_BOOL);
    int iv = kir_new_var(k), jv = kir_new_var(k);
    if (p < 0 || dup < 0 || !kir_acc_set(k, &k->body, p, lw_i64c(k, 0)))
        return -1;
    kir_stmt *il = kir_for(k, &k->body, iv, lw_i64c(k, 0), lw_i64c(k, u->n), KIR_SERIAL, 0);
    if (!il || !kir_acc_set(k, &il->body, dup, kir_const_i(k, IR_BOOL, 0)))
        return -1;
    kir_expr *i = kir_var(k, iv);
    kir_stmt *jl = kir_for(k, &il->body, jv, lw_i64c(k, 0), i, KIR_SERIAL, 0);
    kir_expr *cmp = jl ? uq_cmp(u, &jl->body, kir_var(k, jv), i) : NULL;
    if (!cmp || !kir_acc_set(k, &jl->body, dup, kir_op2(k, KIR_OR, IR_BOOL, kir_acc(k, dup),
                                                           kir_op2(k, KIR_EQ, IR_BOOL, cmp, lw_i64c(k, 0)))))
        return -1;
    kir_stmt *s = kir_if(k, &il->body, kir_op1(k, KIR_NOT, IR_BOOL, kir_acc(k, dup)));
    if (!s || uq_slot(u, &s->body, kir_acc(k, p), i, i) < 0)
        return -1;
    if (!kir_acc_set(k, &s->body, p, kir_iadd(k, kir_acc(k, p), lw_i64c(k, 1))))
        return -1;
    return uq_count_check(u, kir_acc(k, p));
}

int lower_unique(lctx *c)
{
    const ir_node *n = c->n;
    kir_kernel *k = c->k;
    uq u = {.c = c, .tx = &n->in[0]->type, .n = 1};
    if (!uq_axis(n, &u.axis))
        return -1;
    const ir_type *tx = u.tx;
    u.slice = *tx;
    if (u.axis >= 0) {
        u.n = tx->dims[u.axis].v;
        u.slice.rank = tx->rank - 1;
        memmove(u.slice.dims + u.axis, tx->dims + u.axis + 1, sizeof(ir_dim) * (size_t)(tx->rank - 1 - u.axis));
    } else {
        for (int d = 0; d < tx->rank; d++)
            u.n *= tx->dims[d].v;
    }
    /* Declared slots the data leaves unfilled read zero. */
    for (int i = 0; i < n->nout; i++) {
        const ir_type *t = &n->out[i]->type;
        u.cap[i] = t->dims[i == 0 && u.axis >= 0 ? u.axis : 0].v;
        if (i == 2)
            continue;
        kir_expr *idx[IR_MAX_RANK];
        kir_block *b = mv_nest(c, &k->body, t, false, false, idx);
        if (!b || !kir_store(k, b, c->outs[i], idx, mv_const(c, t->dtype, 0)))
            return -1;
    }
    return ir_attr_int(n, "sorted", 1) ? uq_sorted(&u) : uq_first_order(&u);
}
