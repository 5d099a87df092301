/* movement_view.c - ops whose output is a strided view of the input, or
 * close to one: Slice, Expand, Tile, Pad, CenterCropPad, DepthToSpace,
 * SpaceToDepth and Trilu. Each kernel describes its output as dims plus
 * source strides and lets ir_mv_copy_view do the copying (Pad walks rows
 * itself); the parameters (starts, pads, repeats...) are read and
 * validated by the same code the shape function uses, so the two cannot
 * disagree. */
#include "ir/ref/movement.h"

#include <string.h>

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* ---- Slice -------------------------------------------------------------- */

/* Per-dim slicing parameters: dims not listed in axes are not sliced. */
typedef struct slice_spec {
    bool sliced[IR_MAX_RANK];
    int64_t start[IR_MAX_RANK], end[IR_MAX_RANK], step[IR_MAX_RANK];
} slice_spec;

/* Reads starts/ends/axes/steps (axes default to 0..n-1, steps to 1). */
static int slice_read(ir_shape_ctx *c, int rank, const ir_tensor *ts, const ir_tensor *te,
                      const ir_tensor *ta, const ir_tensor *tp, slice_spec *sp)
{
    int64_t st[IR_MAX_RANK], en[IR_MAX_RANK], ax[IR_MAX_RANK], stp[IR_MAX_RANK];
    int n = ir_mv_read_ints(c, ts, "starts", st, rank, false);
    if (n < 0 || ir_mv_read_ints(c, te, "ends", en, rank, false) < 0)
        return -1;
    if (te->numel != n)
        return ir_node_errorf(c->diag, c->node, "starts has %d values but ends has %lld", n,
                              (long long)te->numel);
    for (int i = 0; i < n; i++) {
        ax[i] = i;
        stp[i] = 1;
    }
    if (ta && (ir_mv_read_ints(c, ta, "axes", ax, rank, false) < 0 || ta->numel != n))
        return ta->numel != n ? ir_node_errorf(c->diag, c->node, "axes has %lld values for %d "
                                               "starts", (long long)ta->numel, n) : -1;
    if (tp && (ir_mv_read_ints(c, tp, "steps", stp, rank, false) < 0 || tp->numel != n))
        return tp->numel != n ? ir_node_errorf(c->diag, c->node, "steps has %lld values for %d "
                                               "starts", (long long)tp->numel, n) : -1;
    memset(sp, 0, sizeof *sp);
    for (int i = 0; i < n; i++) {
        if (ax[i] < -rank || ax[i] >= rank)
            return ir_node_errorf(c->diag, c->node, "axis %lld is out of range for rank %d",
                                  (long long)ax[i], rank);
        int a = (int)(ax[i] < 0 ? ax[i] + rank : ax[i]);
        if (sp->sliced[a])
            return ir_node_errorf(c->diag, c->node, "axis %lld is repeated", (long long)ax[i]);
        if (stp[i] == 0)
            return ir_node_errorf(c->diag, c->node, "step for axis %d is 0", a);
        sp->sliced[a] = true;
        sp->start[a] = st[i];
        sp->end[a] = en[i];
        /* -INT64_MIN overflows; any step beyond the dim behaves the same. */
        sp->step[a] = stp[i] == INT64_MIN ? -INT64_MAX : stp[i];
    }
    return 0;
}

/* Resolves one sliced dim of size d: negative positions count from the
 * end, then start/end clamp to [0, d] (step > 0) or to [0, d-1] and
 * [-1, d-1] (step < 0). */
static void slice_resolve(int64_t d, int64_t start, int64_t end, int64_t step,
                          int64_t *first, int64_t *len)
{
    *first = 0;
    *len = 0;
    if (d == 0)
        return; /* [0, d-1] is empty: nothing to clamp into */
    if (start < 0)
        start += d;
    if (end < 0)
        end += d;
    if (step > 0) {
        start = clamp64(start, 0, d);
        end = clamp64(end, 0, d);
        *len = end > start ? (end - start - 1) / step + 1 : 0;
    } else {
        start = clamp64(start, 0, d - 1);
        end = clamp64(end, -1, d - 1);
        *len = start > end ? (start - end - 1) / -step + 1 : 0;
    }
    *first = start;
}

/* True when the slice keeps a dim whole whatever its size, so a symbolic
 * dim survives: [0:INT64_MAX:1] or [-1:INT64_MIN:-1] (a full reversal). */
static bool slice_is_full(int64_t start, int64_t end, int64_t step)
{
    return (step == 1 && start == 0 && end == INT64_MAX) ||
           (step == -1 && (start == -1 || start == INT64_MAX) && end == INT64_MIN);
}

enum { SLICE_OPEN_END = 1 << 24 };

bool ir_slice_sym_axis(ir_graph *g, ir_dim d, int64_t s, int64_t e, int64_t step, ir_slice_axis *r)
{
    *r = (ir_slice_axis){.len = ir_dim_unknown(), .most = INT64_MAX};
    if (d.sym > 0 && step == -1 && s >= 0 && s < SLICE_OPEN_END && (e <= -SLICE_OPEN_END || (e >= 0 && e < s))) {
        /* backwards from a constant start: [s::-1] (an end from -2^24
         * down reads "to the beginning") is s + 1 elements, [s:e:-1] s - e */
        r->first = s;
        r->need = s + 1;
        r->len = ir_dim_const(e < 0 ? s + 1 : s - e);
        return true;
    }
    if (d.sym <= 0 || step != 1 || s <= -SLICE_OPEN_END || e <= -SLICE_OPEN_END || s >= SLICE_OPEN_END)
        return false;
    bool open = e >= SLICE_OPEN_END;
    if (open && e != INT64_MAX)
        r->most = e;   /* past it the end cuts the dim */
    if (s >= 0 && (open || e < 0)) {
        int64_t j = open ? 0 : -e;
        r->first = s;
        r->need = s + j;
        r->len = ir_dim_add_const(g, d, -(s + j));
    } else if (s >= 0) {
        r->first = s;
        r->need = e > s ? e : 0;
        r->len = ir_dim_const(e > s ? e - s : 0);
    } else if (open || e < 0) {
        int64_t k = -s, j = open ? 0 : -e;
        r->first = s;
        r->from_end = true;
        r->need = k > j ? k : 0;
        r->len = ir_dim_const(k > j ? k - j : 0);
    } else {
        return false;   /* [-k:e]: its length depends on d */
    }
    return !g || r->len.sym >= 0;
}

/* Input i's elements as dims (a constant, or a shape value); *n their
 * count. False when not known. */
static bool slice_elems(ir_shape_ctx *c, int i, ir_dim *e, int *n, int max)
{
    const ir_tensor *t = mv_val(c, i);
    if (t) {
        if (!ir_dtype_is_int(t->dtype) || t->rank != 1 || t->numel > max)
            return false;
        *n = (int)t->numel;
        for (int k = 0; k < *n; k++)
            e[k] = ir_dim_const(ir_tensor_geti(t, k));
        return true;
    }
    const ir_shape_value *sv = ir_mv_sval(c, i, max);
    if (!sv)
        return false;
    *n = sv->n;
    memcpy(e, sv->e, sizeof e[0] * (size_t)sv->n);
    return true;
}

bool ir_slice_entries(const ir_node *n, ir_slice_entry *e, int *count)
{
    ir_shape_value sv[5];
    bool has[5];
    for (int i = 1; i < 5; i++) {
        has[i] = i < n->nin && n->in[i];
        if (has[i] ? !ir_value_shape_value(n->in[i], &sv[i]) : i < 3)
            return false;
    }
    int cnt = sv[1].n;
    if (cnt > n->in[0]->type.rank || sv[2].n != cnt || (has[3] && sv[3].n != cnt) || (has[4] && sv[4].n != cnt))
        return false;
    for (int i = 0; i < cnt; i++)
        e[i] = (ir_slice_entry){sv[1].e[i], sv[2].e[i], has[3] ? sv[3].e[i] : ir_dim_const(i),
                                has[4] ? sv[4].e[i] : ir_dim_const(1)};
    *count = cnt;
    return true;
}

/* Slice whose ends are a shape value with symbols (ir/shapeval.c): the
 * position table pos[:S] of a [B, S] model. An axis ending at symbol S
 * from 0 with step 1 has length S when the data's dim is S too, or a
 * constant or another symbol (a resampler's output cut to its length),
 * which the compiled run checks is at least S (program.c); other axes
 * follow the constant rules. Returns 1 when it set o, 0 when it does not
 * apply. */
static int slice_by_dims(ir_shape_ctx *c, const ir_type *x, ir_type *o)
{
    ir_dim st[IR_MAX_RANK], en[IR_MAX_RANK], ax[IR_MAX_RANK], sp[IR_MAX_RANK];
    int ns, ne, na, np;
    if (!slice_elems(c, 1, st, &ns, x->rank) || !slice_elems(c, 2, en, &ne, x->rank) || ne != ns)
        return 0;
    if (!mv_type(c, 3)) {
        na = ns;
        for (int i = 0; i < ns; i++)
            ax[i] = ir_dim_const(i);
    } else if (!slice_elems(c, 3, ax, &na, x->rank) || na != ns) {
        return 0;
    }
    if (!mv_type(c, 4)) {
        np = ns;
        for (int i = 0; i < ns; i++)
            sp[i] = ir_dim_const(1);
    } else if (!slice_elems(c, 4, sp, &np, x->rank) || np != ns) {
        return 0;
    }
    bool seen[IR_MAX_RANK] = {false};
    *o = *x;
    for (int i = 0; i < ns; i++) {
        if (st[i].sym || ax[i].sym || sp[i].sym || en[i].sym < 0)
            return 0;
        int64_t a = ax[i].v < 0 ? ax[i].v + x->rank : ax[i].v;
        if (a < 0 || a >= x->rank || seen[a] || sp[i].v == 0)
            return 0;   /* the constant path reports it */
        seen[a] = true;
        ir_dim d = x->dims[a];
        if (en[i].sym > 0) {
            bool ok = st[i].v == 0 && sp[i].v == 1 && d.sym >= 0;
            o->dims[a] = ok ? en[i] : ir_dim_unknown();
        } else if (ir_dim_is_const(d)) {
            int64_t first, len;
            slice_resolve(d.v, st[i].v, en[i].v, sp[i].v == INT64_MIN ? -INT64_MAX : sp[i].v, &first, &len);
            o->dims[a] = ir_dim_const(len);
        } else {
            ir_slice_axis sa;
            if (ir_slice_sym_axis(c->node->graph, d, st[i].v, en[i].v, sp[i].v, &sa))
                o->dims[a] = sa.len;
            else if (!slice_is_full(st[i].v, en[i].v, sp[i].v))
                o->dims[a] = ir_dim_unknown();
        }
    }
    return 1;
}

int shape_slice(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    ir_type *o = &c->out[0];
    static const char *const names[] = {"", "starts", "ends", "axes", "steps"};
    for (int i = 1; i < 5; i++) {
        if (ir_mv_check_int(c, i, names[i]) < 0)
            return -1;
        const ir_type *t = mv_type(c, i);
        if (t && t->rank >= 0 && t->rank != 1)
            return ir_node_errorf(c->diag, c->node, "%s must be 1-D, got rank %d", names[i],
                                  t->rank);
    }
    if (x->rank < 0) {
        ir_type_unknown(o, x->dtype, IR_RANK_UNKNOWN);
        return 0;
    }
    *o = *x;
    const ir_tensor *ts = mv_val(c, 1), *te = mv_val(c, 2), *ta = mv_val(c, 3),
                    *tp = mv_val(c, 4);
    if (!ts || !te || (mv_type(c, 3) && !ta) || (mv_type(c, 4) && !tp)) {
        if (slice_by_dims(c, x, o))
            return 0;
        /* Only the dims no axis can name keep their size. */
        int64_t n = mv_len_1d(mv_type(c, 1));
        for (int i = 0; i < x->rank; i++) {
            bool maybe = true;
            if (mv_type(c, 3) && ta) {
                int64_t ax[IR_MAX_RANK];
                int k = ir_mv_read_ints(c, ta, "axes", ax, x->rank, false);
                if (k < 0)
                    return -1;
                maybe = false;
                for (int j = 0; j < k; j++)
                    maybe |= ax[j] == i || ax[j] + x->rank == i;
            } else if (!mv_type(c, 3) && n >= 0) {
                maybe = i < n;
            }
            if (maybe)
                o->dims[i] = ir_dim_unknown();
        }
        return 0;
    }
    slice_spec sp;
    if (slice_read(c, x->rank, ts, te, ta, tp, &sp) < 0)
        return -1;
    for (int i = 0; i < x->rank; i++) {
        if (!sp.sliced[i])
            continue;
        ir_dim d = x->dims[i];
        if (!ir_dim_is_const(d)) {
            ir_slice_axis ax;
            if (ir_slice_sym_axis(c->node->graph, d, sp.start[i], sp.end[i], sp.step[i], &ax))
                o->dims[i] = ax.len;
            else if (!slice_is_full(sp.start[i], sp.end[i], sp.step[i]))
                o->dims[i] = ir_dim_unknown();
            continue;
        }
        int64_t first, len;
        slice_resolve(d.v, sp.start[i], sp.end[i], sp.step[i], &first, &len);
        o->dims[i] = ir_dim_const(len);
    }
    return 0;
}

int ref_slice(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    ir_tensor *y = c->out[0];
    ir_shape_ctx s = mv_err_ctx(c);
    slice_spec sp;
    if (slice_read(&s, x->rank, c->in[1], c->in[2], mv_in(c, 3), mv_in(c, 4), &sp) < 0)
        return -1;
    int64_t st[IR_MAX_RANK], vs[IR_MAX_RANK], base = 0;
    ir_strides(x->dims, x->rank, st);
    for (int i = 0; i < x->rank; i++) {
        int64_t first = 0, len = x->dims[i], step = 1;
        if (sp.sliced[i]) {
            slice_resolve(x->dims[i], sp.start[i], sp.end[i], sp.step[i], &first, &len);
            step = sp.step[i];
        }
        if (len != y->dims[i])
            return ir_node_errorf(c->diag, c->node, "output dim %d does not match the slice", i);
        if (len == 0)
            return 0;
        base += first * st[i];
        /* A step larger than the dim is only taken once: keep it small. */
        vs[i] = (len == 1 ? 0 : step) * st[i];
    }
    ir_mv_copy_view(y->data, x->data, ir_dtype_size(x->dtype), x->rank, y->dims, vs, base);
    return 0;
}

/* ---- Expand, Tile -------------------------------------------------------- */

/* Expand: bidirectional broadcast of the input against shape (input 1);
 * a constant input dim > 1 survives even when shape is unknown, since the
 * shape may only hold 1 or that dim there. */
int shape_expand(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    ir_type *o = &c->out[0];
    if (ir_mv_check_int(c, 1, "shape") < 0)
        return -1;
    if (c->in[1]->rank >= 0 && c->in[1]->rank != 1)
        return ir_node_errorf(c->diag, c->node, "shape must be 1-D, got rank %d",
                              c->in[1]->rank);
    const ir_tensor *sv = c->val[1];
    const ir_shape_value *sd = sv ? NULL : ir_mv_sval(c, 1, IR_MAX_RANK);
    if (sd && x->rank >= 0) {
        /* a shape value (ir/shapeval.c): a dim broadcasts where one side is
         * 1 or both are the same dim; anything else (S against 4, which
         * holds only for S of 1 or 4) stays unknown */
        int r = x->rank > sd->n ? x->rank : sd->n;
        ir_type_unknown(o, x->dtype, r);
        for (int i = 0; i < r; i++) {
            int xi = i - (r - x->rank), si = i - (r - sd->n);
            ir_dim a = xi >= 0 ? x->dims[xi] : ir_dim_const(1), b = si >= 0 ? sd->e[si] : ir_dim_const(1);
            if (b.sym == 0 && b.v < 0)
                return ir_node_errorf(c->diag, c->node, "shape[%d] = %lld is negative", si, (long long)b.v);
            if (b.sym == 0 && b.v == 1)
                o->dims[i] = a;
            else if (a.sym == 0 && a.v == 1)
                o->dims[i] = b;
            else if (ir_dim_eq(a, b))
                o->dims[i] = a;
            else if (a.sym == 0 && b.sym == 0)
                return ir_node_errorf(c->diag, c->node, "dim %lld of the input does not broadcast to %lld",
                                      (long long)a.v, (long long)b.v);
        }
        return ir_mv_check_size(c, o);
    }
    if (!sv) {
        int64_t n = mv_len_1d(c->in[1]);
        if (n > IR_MAX_RANK)
            return ir_node_errorf(c->diag, c->node, "output rank %lld exceeds %d",
                                  (long long)n, IR_MAX_RANK);
        if (n < 0 || x->rank < 0) {
            ir_type_unknown(o, x->dtype, IR_RANK_UNKNOWN);
            return 0;
        }
        int r = x->rank > n ? x->rank : (int)n;
        ir_type_unknown(o, x->dtype, r);
        for (int i = 0; i < r; i++) {
            int xi = i - (r - x->rank);
            if (xi >= 0 && ir_dim_is_const(x->dims[xi]) && x->dims[xi].v != 1)
                o->dims[i] = x->dims[xi];
        }
        return 0;
    }
    ir_type st;
    int64_t v[IR_MAX_RANK];
    int n = ir_mv_read_ints(c, sv, "shape", v, IR_MAX_RANK, false);
    if (n < 0)
        return -1;
    ir_type_unknown(&st, x->dtype, n);
    for (int i = 0; i < n; i++) {
        if (v[i] < 0)
            return ir_node_errorf(c->diag, c->node, "shape[%d] = %lld is negative", i,
                                  (long long)v[i]);
        st.dims[i] = ir_dim_const(v[i]);
    }
    if (x->rank < 0) {
        ir_type_unknown(o, x->dtype, IR_RANK_UNKNOWN);
        return 0;
    }
    if (ir_broadcast_types(c, x, &st, o) < 0)
        return -1;
    return ir_mv_check_size(c, o);
}

int ref_expand(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    ir_tensor *y = c->out[0];
    int64_t st[IR_MAX_RANK], vs[IR_MAX_RANK];
    ir_strides(x->dims, x->rank, st);
    if (y->rank < x->rank)
        return ir_node_errorf(c->diag, c->node, "output rank is below the input's");
    for (int i = 0; i < y->rank; i++) {
        int xi = i - (y->rank - x->rank);
        if (xi < 0 || x->dims[xi] == 1)
            vs[i] = 0;
        else if (x->dims[xi] == y->dims[i])
            vs[i] = st[xi];
        else
            return ir_node_errorf(c->diag, c->node, "dim %d does not broadcast", i);
    }
    ir_mv_copy_view(y->data, x->data, ir_dtype_size(x->dtype), y->rank, y->dims, vs, 0);
    return 0;
}

static int tile_repeats(ir_shape_ctx *c, const ir_tensor *t, int rank, int64_t *rep)
{
    int n = ir_mv_read_ints(c, t, "repeats", rep, IR_MAX_RANK, false);
    if (n < 0)
        return -1;
    if (n != rank)
        return ir_node_errorf(c->diag, c->node, "repeats has %d values for rank %d", n, rank);
    for (int i = 0; i < n; i++)
        if (rep[i] < 0)
            return ir_node_errorf(c->diag, c->node, "repeats[%d] = %lld is negative", i,
                                  (long long)rep[i]);
    return 0;
}

int shape_tile(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    ir_type *o = &c->out[0];
    if (ir_mv_check_int(c, 1, "repeats") < 0)
        return -1;
    ir_type_unknown(o, x->dtype, x->rank);
    const ir_tensor *rv = c->val[1];
    /* repeats a shape value (ir/shapeval.c: Tile(z, Shape(x)), the
     * symbolic batch's copies): each dim times its element, a product
     * of dims as a derived symbol */
    const ir_shape_value *sd = rv || x->rank < 0 ? NULL : ir_mv_sval(c, 1, IR_MAX_RANK);
    if (sd && sd->n == x->rank) {
        for (int i = 0; i < x->rank; i++) {
            ir_dim d = x->dims[i], e = sd->e[i];
            if (ir_dim_is_const(e) && e.v < 0)
                return ir_node_errorf(c->diag, c->node, "repeats[%d] = %lld is negative", i, (long long)e.v);
            o->dims[i] = ir_dim_is_const(d) && d.v == 1 ? e : ir_dim_is_const(e) && e.v == 1 ? d
                       : ir_dim_mul(c->node->graph, d, e);
        }
        return ir_mv_check_size(c, o);
    }
    if (x->rank < 0 || !rv)
        return 0;
    int64_t rep[IR_MAX_RANK];
    if (tile_repeats(c, rv, x->rank, rep) < 0)
        return -1;
    for (int i = 0; i < x->rank; i++) {
        ir_dim d = x->dims[i];
        int64_t v;
        if (rep[i] == 1 || (ir_dim_is_const(d) && d.v == 0))
            o->dims[i] = d;
        else if (rep[i] == 0)
            o->dims[i] = ir_dim_const(0);
        else if (ir_dim_is_const(d)) {
            if (!ir_mul_ok(d.v, rep[i], &v))
                return ir_node_errorf(c->diag, c->node, "dim %d times %lld overflows", i,
                                      (long long)rep[i]);
            o->dims[i] = ir_dim_const(v);
        } else /* a symbol times the repeats: a derived symbol */
            o->dims[i] = ir_dim_mul_const(c->node->graph, d, rep[i]);
    }
    return ir_mv_check_size(c, o);
}

/* Tile is the view [r0, d0, r1, d1, ...] of the input with stride 0 on
 * each repeat dim. */
int ref_tile(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    ir_shape_ctx s = mv_err_ctx(c);
    int64_t rep[IR_MAX_RANK], st[IR_MAX_RANK], vd[MV_MAX_VIEW], vs[MV_MAX_VIEW];
    if (tile_repeats(&s, c->in[1], x->rank, rep) < 0)
        return -1;
    ir_strides(x->dims, x->rank, st);
    for (int i = 0; i < x->rank; i++) {
        vd[2 * i] = rep[i];
        vs[2 * i] = 0;
        vd[2 * i + 1] = x->dims[i];
        vs[2 * i + 1] = st[i];
    }
    ir_mv_copy_view(c->out[0]->data, x->data, ir_dtype_size(x->dtype), 2 * x->rank, vd, vs, 0);
    return 0;
}

/* ---- Pad ---------------------------------------------------------------- */

enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP };

/* Pads beyond this are rejected before any arithmetic on them. */
#define PAD_LIMIT ((int64_t)1 << 40)

static int pad_mode(ir_shape_ctx *c)
{
    static const char *const names[] = {"constant", "reflect", "edge", "wrap"};
    const char *m = ir_attr_string(c->node, "mode", "constant");
    for (int i = 0; i < 4; i++)
        if (!strcmp(m, names[i]))
            return i;
    return ir_node_errorf(c->diag, c->node, "unknown pad mode '%.40s'", m);
}

/* Reads pads (begin values for each axis, then end values) and the
 * optional axes into per-dim begin/end pads; negative pads crop. */
static int pad_read(ir_shape_ctx *c, int rank, const ir_tensor *tp, const ir_tensor *ta,
                    int64_t *lo, int64_t *hi)
{
    int64_t pads[2 * IR_MAX_RANK], ax[IR_MAX_RANK];
    int na = rank;
    for (int i = 0; i < rank; i++) {
        ax[i] = i;
        lo[i] = hi[i] = 0;
    }
    if (ta && (na = ir_mv_read_ints(c, ta, "axes", ax, rank, false)) < 0)
        return -1;
    int np = ir_mv_read_ints(c, tp, "pads", pads, 2 * IR_MAX_RANK, false);
    if (np < 0)
        return -1;
    if (np != 2 * na)
        return ir_node_errorf(c->diag, c->node, "pads has %d values for %d axes", np, na);
    bool seen[IR_MAX_RANK] = {false};
    for (int i = 0; i < na; i++) {
        if (ax[i] < -rank || ax[i] >= rank)
            return ir_node_errorf(c->diag, c->node, "axis %lld is out of range for rank %d",
                                  (long long)ax[i], rank);
        int a = (int)(ax[i] < 0 ? ax[i] + rank : ax[i]);
        if (seen[a])
            return ir_node_errorf(c->diag, c->node, "axis %lld is repeated", (long long)ax[i]);
        seen[a] = true;
        if (pads[i] < -PAD_LIMIT || pads[i] > PAD_LIMIT || pads[na + i] < -PAD_LIMIT ||
            pads[na + i] > PAD_LIMIT)
            return ir_node_errorf(c->diag, c->node, "pads for axis %d are too large", a);
        lo[a] = pads[i];
        hi[a] = pads[na + i];
    }
    return 0;
}

/* Output size of a dim of size d padded by lo/hi; checks that crops fit
 * and that non-constant modes have data to repeat. */
static int pad_dim(ir_shape_ctx *c, int mode, int i, int64_t d, int64_t lo, int64_t hi,
                   int64_t *out)
{
    int64_t crop = (lo < 0 ? -lo : 0) + (hi < 0 ? -hi : 0);
    if (crop > d)
        return ir_node_errorf(c->diag, c->node, "negative pads crop %lld from dim %d of %lld",
                              (long long)crop, i, (long long)d);
    if (mode != PAD_CONSTANT && d - crop == 0 && (lo > 0 || hi > 0))
        return ir_node_errorf(c->diag, c->node, "cannot pad an empty dim %d in this mode", i);
    *out = d + lo + hi;
    return 0;
}

/* Dim d of axis i padded by constant pads lo/hi into *out: a symbolic dim
 * padded is d + lo + hi in any mode (the layout pass's zero-padded conv
 * inputs; an audio model's reflect padding of its samples), cropped too
 * (a negative pad: Kaldi's pre-emphasis shifts by [1, -1] in edge mode);
 * that d holds the crops, and the other modes' need of a non-empty kept
 * part, are checked where it runs. A constant dim: pad_dim's checks. */
static int pad_const_dim(ir_shape_ctx *c, int mode, int i, ir_dim d, int64_t lo, int64_t hi, ir_dim *out)
{
    int64_t n;
    if (lo == 0 && hi == 0)
        *out = d;
    else if (!ir_dim_is_const(d))
        *out = ir_dim_add_const(c->node->graph, d, lo + hi);
    else if (pad_dim(c, mode, i, d.v, lo, hi, &n) < 0)
        return -1;
    else
        *out = ir_dim_const(n);
    return 0;
}

/* Pads known only as a shape value sp (no constant): an axis whose pads
 * are constants is padded as with constant pads; one whose pads are a
 * constant p and k - d, d the axis's own symbolic dim, becomes the
 * constant p + k (Whisper's front end pads or crops its N samples to
 * 480000 with pads [0, 480000 - N]); any other axis padded is unknown.
 * The kernel reads the pads and checks them against the output (the
 * dynamic Pad of codegen/lower/gather_scatter.c). Returns 1 when done, 0
 * when sp does not fit (the caller's unknown dims), -1 on an error. */
static int pad_from_sval(ir_shape_ctx *c, int mode, const ir_type *x, const ir_shape_value *sp,
                         const ir_tensor *ta, ir_type *o)
{
    int64_t ax[IR_MAX_RANK];
    int na = x->rank;
    for (int i = 0; i < na; i++)
        ax[i] = i;
    if (ta && (na = ir_mv_read_ints(c, ta, "axes", ax, x->rank, false)) < 0)
        return -1;
    if (sp->n != 2 * na)
        return 0;
    *o = *x;
    for (int i = 0; i < na; i++) {
        if (ax[i] < -x->rank || ax[i] >= x->rank)
            return 0;
        int a = (int)(ax[i] < 0 ? ax[i] + x->rank : ax[i]);
        ir_dim d = x->dims[a], e[2] = {sp->e[i], sp->e[na + i]}, m[2] = {sp->minus[i], sp->minus[na + i]};
        bool c0 = ir_dim_is_const(e[0]), c1 = ir_dim_is_const(e[1]);
        if (c0 && c1) {
            if (e[0].v < -PAD_LIMIT || e[0].v > PAD_LIMIT || e[1].v < -PAD_LIMIT || e[1].v > PAD_LIMIT)
                return ir_node_errorf(c->diag, c->node, "pads for axis %d are too large", a);
            if (pad_const_dim(c, mode, a, d, e[0].v, e[1].v, &o->dims[a]) < 0)
                return -1;
            continue;
        }
        int j = c0 ? 1 : 0;   /* the k - d side */
        if ((c0 || c1) && m[j].sym > 0 && m[j].sym == d.sym && e[1 - j].v >= -PAD_LIMIT && e[1 - j].v <= PAD_LIMIT &&
            m[j].v >= -PAD_LIMIT && m[j].v <= PAD_LIMIT) {
            int64_t n = e[1 - j].v + m[j].v;
            if (n < 0)
                return ir_node_errorf(c->diag, c->node, "pads make dim %d negative (%lld)", a, (long long)n);
            o->dims[a] = ir_dim_const(n);
            continue;
        }
        o->dims[a] = ir_dim_unknown();
    }
    return 1;
}

int shape_pad(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    ir_type *o = &c->out[0];
    int mode = pad_mode(c);
    if (mode < 0 || ir_mv_check_int(c, 1, "pads") < 0 || ir_mv_check_int(c, 3, "axes") < 0)
        return -1;
    const ir_type *cv = mv_type(c, 2);
    if (cv && cv->dtype != x->dtype)
        return ir_node_errorf(c->diag, c->node, "constant_value is %s but the data is %s",
                              ir_dtype_name(cv->dtype), ir_dtype_name(x->dtype));
    if (x->rank < 0) {
        ir_type_unknown(o, x->dtype, IR_RANK_UNKNOWN);
        return 0;
    }
    *o = *x;
    const ir_tensor *tp = c->val[1], *ta = mv_val(c, 3);
    bool has_axes = mv_type(c, 3) != NULL;
    const ir_shape_value *sp = !tp && (!has_axes || ta) ? ir_mv_sval(c, 1, IR_MAX_RANK) : NULL;
    int done = sp ? pad_from_sval(c, mode, x, sp, ta, o) : 0;
    if (done)
        return done < 0 ? -1 : ir_mv_check_size(c, o);
    if (!tp || (has_axes && !ta)) {
        for (int i = 0; i < x->rank; i++)
            o->dims[i] = ir_dim_unknown();
        if (ta) {
            int64_t ax[IR_MAX_RANK];
            int n = ir_mv_read_ints(c, ta, "axes", ax, x->rank, false);
            if (n < 0)
                return -1;
            *o = *x;
            for (int j = 0; j < n; j++)
                if (ax[j] >= -x->rank && ax[j] < x->rank)
                    o->dims[ax[j] < 0 ? ax[j] + x->rank : ax[j]] = ir_dim_unknown();
        }
        return 0;
    }
    int64_t lo[IR_MAX_RANK], hi[IR_MAX_RANK];
    if (pad_read(c, x->rank, tp, ta, lo, hi) < 0)
        return -1;
    for (int i = 0; i < x->rank; i++)
        if (pad_const_dim(c, mode, i, x->dims[i], lo[i], hi[i], &o->dims[i]) < 0)
            return -1;
    return ir_mv_check_size(c, o);
}

/* Maps position i of the (cropped) input extended by padding into
 * [0, n): -1 for the constant; edge clamps; wrap is periodic; reflect
 * mirrors about the end elements without repeating them (numpy). */
static int64_t pad_map(int mode, int64_t i, int64_t n)
{
    if (i >= 0 && i < n)
        return i;
    switch (mode) {
    case PAD_EDGE:
        return i < 0 ? 0 : n - 1;
    case PAD_WRAP:
        return (i % n + n) % n;
    case PAD_REFLECT: {
        if (n == 1)
            return 0;
        int64_t p = 2 * (n - 1), m = (i % p + p) % p;
        return m < n ? m : p - m;
    }
    default:
        return -1;
    }
}

/* Writes input 0 padded (or cropped) by lo/hi into output 0; fill is the
 * constant's bytes. Shared by Pad and CenterCropPad. */
static int pad_apply(ir_ref_ctx *c, int mode, int64_t *lo, const int64_t *hi, const char *fill)
{
    const ir_tensor *x = c->in[0];
    ir_tensor *y = c->out[0];
    ir_shape_ctx s = mv_err_ctx(c);
    int r = x->rank;
    int64_t crop[IR_MAX_RANK], n[IR_MAX_RANK];
    for (int i = 0; i < r; i++) {
        int64_t od;
        if (pad_dim(&s, mode, i, x->dims[i], lo[i], hi[i], &od) < 0)
            return -1;
        if (od != y->dims[i])
            return ir_node_errorf(c->diag, c->node, "output dim %d does not match the pads", i);
        crop[i] = lo[i] < 0 ? -lo[i] : 0;
        n[i] = x->dims[i] - crop[i] - (hi[i] < 0 ? -hi[i] : 0);
        lo[i] = lo[i] > 0 ? lo[i] : 0;
    }
    size_t esz = ir_dtype_size(x->dtype);
    if (y->numel == 0)
        return 0;
    if (r == 0) {
        memcpy(y->data, x->data, esz);
        return 0;
    }
    int64_t st[IR_MAX_RANK], idx[IR_MAX_RANK] = {0};
    ir_strides(x->dims, r, st);
    int64_t L = y->dims[r - 1], nl = n[r - 1];
    char *dp = y->data;
    /* One output row (last dim) at a time. */
    do {
        int64_t off = 0;
        bool outside = false;
        for (int k = 0; k < r - 1 && !outside; k++) {
            int64_t m = pad_map(mode, idx[k] - lo[k], n[k]);
            outside = m < 0;
            off += (m + crop[k]) * st[k];
        }
        const char *row = outside ? NULL
                                  : (const char *)x->data + (off + crop[r - 1]) * (int64_t)esz;
        for (int64_t j = 0; j < L;) {
            int64_t i = j - lo[r - 1];
            if (!outside && i >= 0 && i < nl) {
                int64_t cnt = nl - i < L - j ? nl - i : L - j;
                memcpy(dp + j * (int64_t)esz, row + i * (int64_t)esz, (size_t)cnt * esz);
                j += cnt;
                continue;
            }
            int64_t m = outside ? -1 : pad_map(mode, i, nl);
            memcpy(dp + j * (int64_t)esz, m < 0 ? fill : row + m * (int64_t)esz, esz);
            j++;
        }
        dp += L * (int64_t)esz;
    } while (ir_index_next(idx, y->dims, r - 1));
    return 0;
}

int ref_pad(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0], *cv = mv_in(c, 2);
    ir_shape_ctx s = mv_err_ctx(c);
    int mode = pad_mode(&s);
    int64_t lo[IR_MAX_RANK], hi[IR_MAX_RANK];
    if (mode < 0 || pad_read(&s, x->rank, c->in[1], mv_in(c, 3), lo, hi) < 0)
        return -1;
    char fill[16] = {0};
    if (cv && cv->numel > 0 && cv->dtype == x->dtype)
        memcpy(fill, cv->data, ir_dtype_size(x->dtype));
    return pad_apply(c, mode, lo, hi, fill);
}

/* ---- CenterCropPad -------------------------------------------------------- */

/* Reads the target sizes (input 1) for the axes attribute (default: all
 * dims) into target[], -1 for dims left alone. */
static int ccp_targets(ir_shape_ctx *c, int rank, const ir_tensor *t, int64_t *target)
{
    int64_t v[IR_MAX_RANK];
    const int64_t *ax;
    int na = ir_attr_ints(c->node, "axes", &ax);
    int n = ir_mv_read_ints(c, t, "shape", v, IR_MAX_RANK, false);
    if (n < 0)
        return -1;
    if (n != (na < 0 ? rank : na))
        return ir_node_errorf(c->diag, c->node, "shape has %d values for %d axes", n,
                              na < 0 ? rank : na);
    for (int i = 0; i < rank; i++)
        target[i] = -1;
    for (int i = 0; i < n; i++) {
        int64_t a = na < 0 ? i : ax[i];
        if (a < -rank || a >= rank)
            return ir_node_errorf(c->diag, c->node, "axis %lld is out of range for rank %d",
                                  (long long)a, rank);
        if (a < 0)
            a += rank;
        if (target[a] >= 0)
            return ir_node_errorf(c->diag, c->node, "axis %lld is repeated", (long long)a);
        if (v[i] < 0)
            return ir_node_errorf(c->diag, c->node, "shape[%d] = %lld is negative", i,
                                  (long long)v[i]);
        target[a] = v[i];
    }
    return 0;
}

/* CenterCropPad: each listed dim becomes its target size, cropping or
 * zero-padding evenly with the odd element at the end. */
int shape_center_crop_pad(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    ir_type *o = &c->out[0];
    if (ir_mv_check_int(c, 1, "shape") < 0)
        return -1;
    *o = *x;
    if (x->rank < 0)
        return 0;
    int64_t target[IR_MAX_RANK];
    if (!c->val[1]) {
        const int64_t *ax;
        int na = ir_attr_ints(c->node, "axes", &ax);
        for (int i = 0; i < x->rank; i++) {
            bool listed = na < 0;
            for (int j = 0; j < na; j++)
                listed |= ax[j] == i || ax[j] + x->rank == i;
            if (listed)
                o->dims[i] = ir_dim_unknown();
        }
        return 0;
    }
    if (ccp_targets(c, x->rank, c->val[1], target) < 0)
        return -1;
    for (int i = 0; i < x->rank; i++)
        if (target[i] >= 0)
            o->dims[i] = ir_dim_const(target[i]);
    return ir_mv_check_size(c, o);
}

int ref_center_crop_pad(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    ir_shape_ctx s = mv_err_ctx(c);
    int64_t target[IR_MAX_RANK], lo[IR_MAX_RANK], hi[IR_MAX_RANK];
    if (ccp_targets(&s, x->rank, c->in[1], target) < 0)
        return -1;
    for (int i = 0; i < x->rank; i++) {
        int64_t diff = target[i] < 0 ? 0 : target[i] - x->dims[i];
        /* diff / 2 truncates toward zero: the smaller half goes first. */
        lo[i] = diff / 2;
        hi[i] = diff - lo[i];
    }
    char fill[16] = {0};
    return pad_apply(c, PAD_CONSTANT, lo, hi, fill);
}

/* ---- DepthToSpace, SpaceToDepth ----------------------------------------- */

static int block_size(ir_shape_ctx *c, const ir_type *x, int64_t *b)
{
    *b = ir_attr_int(c->node, "blocksize", 0);
    if (*b < 1 || *b > (1 << 20))
        return ir_node_errorf(c->diag, c->node, "blocksize %lld is invalid", (long long)*b);
    if (x->rank >= 0 && x->rank != 4)
        return ir_node_errorf(c->diag, c->node, "input must be 4-D, got rank %d", x->rank);
    return 0;
}

static bool is_crd(const ir_node *n)
{
    return !strcmp(ir_attr_string(n, "mode", "DCR"), "CRD");
}

/* [N, C, H, W] -> [N, C/b^2, H*b, W*b]. */
int shape_depth_to_space(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    ir_type *o = &c->out[0];
    int64_t b, v;
    if (block_size(c, x, &b) < 0)
        return -1;
    const char *mode = ir_attr_string(c->node, "mode", "DCR");
    if (strcmp(mode, "DCR") && strcmp(mode, "CRD"))
        return ir_node_errorf(c->diag, c->node, "unknown mode '%.40s'", mode);
    ir_type_unknown(o, x->dtype, 4);
    if (x->rank < 0)
        return 0;
    o->dims[0] = x->dims[0];
    ir_dim ch = x->dims[1];
    if (ir_dim_is_const(ch)) {
        if (ch.v % (b * b))
            return ir_node_errorf(c->diag, c->node, "channels %lld are not a multiple of %lld",
                                  (long long)ch.v, (long long)(b * b));
        o->dims[1] = ir_dim_const(ch.v / (b * b));
    }
    for (int i = 2; i < 4; i++)
        if (ir_dim_is_const(x->dims[i])) {
            if (!ir_mul_ok(x->dims[i].v, b, &v))
                return ir_node_errorf(c->diag, c->node, "dim %d overflows", i);
            o->dims[i] = ir_dim_const(v);
        }
    return 0;
}

/* The output is the input seen as 6-D and transposed: DCR reads it as
 * [N, b, b, C', H, W] in order (0,3,4,1,5,2); CRD as [N, C', b, b, H, W]
 * in order (0,1,4,2,5,3). */
int ref_depth_to_space(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    int64_t b = ir_attr_int(c->node, "blocksize", 1);
    int64_t N = x->dims[0], C = x->dims[1] / (b * b), H = x->dims[2], W = x->dims[3];
    int64_t d6[6], s6[6], vd[6], vs[6];
    static const int dcr[6] = {0, 3, 4, 1, 5, 2}, crd[6] = {0, 1, 4, 2, 5, 3};
    const int *perm = is_crd(c->node) ? crd : dcr;
    if (is_crd(c->node)) {
        int64_t d[6] = {N, C, b, b, H, W};
        memcpy(d6, d, sizeof d);
    } else {
        int64_t d[6] = {N, b, b, C, H, W};
        memcpy(d6, d, sizeof d);
    }
    ir_strides(d6, 6, s6);
    for (int i = 0; i < 6; i++) {
        vd[i] = d6[perm[i]];
        vs[i] = s6[perm[i]];
    }
    ir_mv_copy_view(c->out[0]->data, x->data, ir_dtype_size(x->dtype), 6, vd, vs, 0);
    return 0;
}

/* [N, C, H, W] -> [N, C*b^2, H/b, W/b]. */
int shape_space_to_depth(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    ir_type *o = &c->out[0];
    int64_t b, v;
    if (block_size(c, x, &b) < 0)
        return -1;
    ir_type_unknown(o, x->dtype, 4);
    if (x->rank < 0)
        return 0;
    o->dims[0] = x->dims[0];
    if (ir_dim_is_const(x->dims[1])) {
        if (!ir_mul_ok(x->dims[1].v, b * b, &v))
            return ir_node_errorf(c->diag, c->node, "channels overflow");
        o->dims[1] = ir_dim_const(v);
    }
    for (int i = 2; i < 4; i++)
        if (ir_dim_is_const(x->dims[i])) {
            if (x->dims[i].v % b)
                return ir_node_errorf(c->diag, c->node, "dim %d (%lld) is not a multiple of %lld",
                                      i, (long long)x->dims[i].v, (long long)b);
            o->dims[i] = ir_dim_const(x->dims[i].v / b);
        }
    return 0;
}

/* The input seen as [N, C, H', b, W', b] in order (0,3,5,1,2,4). */
int ref_space_to_depth(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    int64_t b = ir_attr_int(c->node, "blocksize", 1);
    int64_t d6[6] = {x->dims[0], x->dims[1], x->dims[2] / b, b, x->dims[3] / b, b};
    int64_t s6[6], vd[6], vs[6];
    static const int perm[6] = {0, 3, 5, 1, 2, 4};
    ir_strides(d6, 6, s6);
    for (int i = 0; i < 6; i++) {
        vd[i] = d6[perm[i]];
        vs[i] = s6[perm[i]];
    }
    ir_mv_copy_view(c->out[0]->data, x->data, ir_dtype_size(x->dtype), 6, vd, vs, 0);
    return 0;
}

/* ---- Trilu ---------------------------------------------------------------- */

int shape_trilu(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    if (x->rank >= 0 && x->rank < 2)
        return ir_node_errorf(c->diag, c->node, "input must have rank >= 2, got %d", x->rank);
    if (ir_mv_check_int(c, 1, "k") < 0)
        return -1;
    const ir_tensor *kv = mv_val(c, 1);
    if (kv && kv->numel != 1)
        return ir_node_errorf(c->diag, c->node, "k must hold one value, has %lld",
                              (long long)kv->numel);
    c->out[0] = *x;
    return 0;
}

/* Keeps element (i, j) of each matrix when j - i >= k (upper) or
 * j - i <= k (lower); the rest is zero (all-zero bytes in every dtype). */
int ref_trilu(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0], *kt = mv_in(c, 1);
    ir_tensor *y = c->out[0];
    if (x->rank < 2)
        return ir_node_errorf(c->diag, c->node, "input must have rank >= 2");
    bool upper = ir_attr_int(c->node, "upper", 1) != 0;
    int64_t H = x->dims[x->rank - 2], W = x->dims[x->rank - 1];
    int64_t k = kt && kt->numel ? ir_tensor_geti(kt, 0) : 0;
    k = clamp64(k, -H - 1, W + 1);
    size_t esz = ir_dtype_size(x->dtype);
    int64_t nmat = H > 0 && W > 0 ? x->numel / (H * W) : 0;
    for (int64_t m = 0; m < nmat; m++)
        for (int64_t i = 0; i < H; i++) {
            const char *sr = (const char *)x->data + (size_t)((m * H + i) * W) * esz;
            char *dr = (char *)y->data + (size_t)((m * H + i) * W) * esz;
            /* Columns [a, b) are kept. */
            int64_t a = upper ? clamp64(i + k, 0, W) : 0;
            int64_t e = upper ? W : clamp64(i + k + 1, 0, W);
            memset(dr, 0, (size_t)W * esz);
            if (e > a)
                memcpy(dr + a * (int64_t)esz, sr + a * (int64_t)esz, (size_t)(e - a) * esz);
        }
    return 0;
}
