/* shapeval.c - shape values: the elements of small integer tensors that
 * shape arithmetic computes from dims, known as dims (ir.h,
 * ir_shape_value).
 *
 * Exporters write a flatten as Reshape(x, Concat(Unsqueeze(Gather(
 * Shape(x), 0)), [-1])) and a head split as Reshape by [B, S, 12, 64]
 * gathered from Shape(x). With symbolic dims no constant folding can
 * reduce that shape input to a constant, so Reshape's output would have
 * unknown dims and the model could not be compiled. Here shape inference
 * follows those tensors element by element: Shape gives the input's dims,
 * Gather/Slice/Concat/Unsqueeze/Squeeze/Cast move them, integer
 * arithmetic folds what is constant (and the identities x+0, x*1, x/1,
 * x*0), Equal/Where/Max/Min decide what the signs of dims decide (a dim
 * is never negative), and a constant less a symbol is kept as "k - N"
 * (ir_shape_value.minus: Whisper's pads to a fixed length, which Pad's
 * shape function reads back as the constant k). The consumers' shape
 * functions read the result (ir_shape_ctx.sval). The tensors themselves
 * are still computed at run time by their (tiny) kernels; only the types
 * change.
 */
#include "ir/ops.h"
#include "ir/ref/ref.h"

#include <string.h>

/* Element i of a shape value as a constant. */
static bool elem_const(ir_dim d, int64_t *v)
{
    if (d.sym != 0)
        return false;
    *v = d.v;
    return true;
}

bool ir_value_shape_value(const ir_value *v, ir_shape_value *out)
{
    memset(out, 0, sizeof *out);
    if (!v)
        return false;
    if (v->kind == IR_VAL_CONST) {
        const ir_tensor *t = &v->cval;
        if (!(ir_dtype_is_int(t->dtype) || t->dtype == IR_BOOL) || t->rank > 1 || t->numel > IR_MAX_RANK ||
            (t->numel && !t->data))
            return false;
        out->known = true;
        out->n = (int)t->numel;
        for (int i = 0; i < out->n; i++)
            out->e[i] = ir_dim_const(ir_tensor_geti(t, i));
        return true;
    }
    if (v->kind == IR_VAL_CONST || !v->sv.known)   /* a subgraph's capture may have one (ir/ref/control.c) */
        return false;
    *out = v->sv;
    return true;
}

/* The element count a shape value of type t must have, or -1 when t is
 * no small integer tensor of static size. */
static int sv_count(const ir_type *t)
{
    if (!(ir_dtype_is_int(t->dtype) || t->dtype == IR_BOOL))
        return -1;
    if (t->rank == 0)
        return 1;
    if (t->rank == 1 && ir_dim_is_const(t->dims[0]) && t->dims[0].v <= IR_MAX_RANK)
        return (int)t->dims[0].v;
    return -1;
}

/* a OP b on two elements; unknown when the result is not decided. With
 * g, the sum, product or quotient (by a constant > 0) of elements that
 * are all >= 0 (symbols, and constants >= 0) is a dim of g, derived when
 * a symbol takes part (YOLOv8's anchor count h * w from Shape(x)[2] *
 * Shape(x)[3]); a difference, which may go negative, is not. */
static ir_dim elem_binary(ir_graph *g, int op, ir_dim a, ir_dim b)
{
    int64_t x = 0, y = 0, r;
    bool ca = elem_const(a, &x), cb = elem_const(b, &y);
    if (a.sym == IR_DIM_UNKNOWN || b.sym == IR_DIM_UNKNOWN)
        return ir_dim_unknown();
    if (ca && cb) {
        switch (op) {
        case IR_OP_ADD: if (!ir_add_signed_ok(x, y, &r)) return ir_dim_unknown(); return ir_dim_const(r);
        case IR_OP_SUB: if (__builtin_sub_overflow(x, y, &r)) return ir_dim_unknown(); return ir_dim_const(r);
        case IR_OP_MUL: if (!ir_mul_ok(x, y, &r)) return ir_dim_unknown(); return ir_dim_const(r);
        case IR_OP_DIV: /* truncates toward zero; x/0 is 0, as the kernels do */
            return ir_dim_const(y == 0 || (x == INT64_MIN && y == -1) ? 0 : x / y);
        case IR_OP_MAX: return ir_dim_const(x > y ? x : y);
        case IR_OP_MIN: return ir_dim_const(x < y ? x : y);
        case IR_OP_EQUAL: return ir_dim_const(x == y);
        default: return ir_dim_unknown();
        }
    }
    /* one side (at least) is a symbol, whose run-time value is >= 0 */
    bool nonneg = (!ca || x >= 0) && (!cb || y >= 0);
    switch (op) {
    case IR_OP_ADD:
        if (cb && y == 0)
            return a;
        if (ca && x == 0)
            return b;
        return g && nonneg ? ir_dim_add(g, a, b) : ir_dim_unknown();
    case IR_OP_SUB: {
        if (cb && y == 0)
            return a;
        /* (s + k) - y with k >= y: s + (k - y), never negative (a
         * resampler's (N + 2 - 1) / 2 output length) */
        const ir_sym_def *def = g && cb && y > 0 && a.sym > 0 ? ir_graph_sym_def(g, a.sym) : NULL;
        if (def && def->op == IR_SYM_ADD && def->b.sym == 0 && def->b.v >= y)
            return ir_dim_add_const(g, def->a, def->b.v - y);
        return ir_dim_unknown();
    }
    case IR_OP_MUL:
        if ((cb && y == 0) || (ca && x == 0))
            return ir_dim_const(0);
        if (cb && y == 1)
            return a;
        if (ca && x == 1)
            return b;
        return g && nonneg ? ir_dim_mul(g, a, b) : ir_dim_unknown();
    case IR_OP_DIV:
        if (cb && y == 1)
            return a;
        return g && cb && y > 0 && !ca ? ir_dim_div_const(g, a, y, false) : ir_dim_unknown();
    case IR_OP_MAX:
        if ((cb && y <= 0) || (ca && x <= 0))
            return cb ? a : b;
        return ir_dim_eq(a, b) ? a : ir_dim_unknown();
    case IR_OP_MIN:
        if ((cb && y < 0) || (ca && x < 0))
            return ir_dim_const(cb ? y : x);
        return ir_dim_eq(a, b) ? a : ir_dim_unknown();
    case IR_OP_EQUAL:
        if ((cb && y < 0) || (ca && x < 0))
            return ir_dim_const(0);
        return ir_dim_eq(a, b) ? ir_dim_const(1) : ir_dim_unknown();
    default:
        return ir_dim_unknown();
    }
}

/* Element i of a broadcast operand of n elements (1 broadcasts). */
static ir_dim bcast(const ir_shape_value *s, int i)
{
    return s->n == 1 ? s->e[0] : s->e[i];
}

static ir_dim bcast_minus(const ir_shape_value *s, int i)
{
    return s->n == 1 ? s->minus[0] : s->minus[i];
}

/* a OP b where an operand is a "k - s" element (ma or mb has sym > 0; its
 * a or b is then unknown), or a constant less a symbol: the result as an
 * element, or unknown with the result's k - s form in *m. What Whisper's
 * front end computes: pads [0, 480000 - N] as (480000 - Shape(x)[1]) *
 * [0, 1], and what adding N back gives, the constant 480000. */
static ir_dim minus_binary(ir_graph *g, int op, ir_dim a, ir_dim ma, ir_dim b, ir_dim mb, ir_dim *m)
{
    int64_t x = 0, y = 0, r;
    bool ca = elem_const(a, &x), cb = elem_const(b, &y);
    *m = ir_dim_const(0);
    if (ma.sym <= 0 && mb.sym <= 0) {
        if (op == IR_OP_SUB && ca && b.sym > 0)
            *m = (ir_dim){x, b.sym};
        return ir_dim_unknown();
    }
    switch (op) {
    case IR_OP_MUL:
        if ((cb && y == 0) || (ca && x == 0))
            return ir_dim_const(0);
        if ((cb && y == 1) || (ca && x == 1))
            *m = cb ? ma : mb;
        return ir_dim_unknown();
    case IR_OP_ADD:
        if (ma.sym <= 0) {   /* the k - s form first */
            ir_dim t = a; a = b; b = t;
            t = ma; ma = mb; mb = t;
            cb = ca, y = x;
        }
        if (mb.sym > 0)
            return ir_dim_unknown();
        if (b.sym == ma.sym)
            return ir_dim_const(ma.v);
        if (cb && ir_add_signed_ok(ma.v, y, &r))
            *m = (ir_dim){r, ma.sym};
        return ir_dim_unknown();
    case IR_OP_SUB:
        if (ma.sym > 0 && mb.sym > 0)
            return ma.sym == mb.sym && !__builtin_sub_overflow(ma.v, mb.v, &r) ? ir_dim_const(r) : ir_dim_unknown();
        if (ma.sym > 0 && cb && !__builtin_sub_overflow(ma.v, y, &r))
            *m = (ir_dim){r, ma.sym};
        else if (mb.sym > 0 && ca && !__builtin_sub_overflow(x, mb.v, &r) && r >= 0 && g)   /* c - (k - s) */
            return ir_dim_add_const(g, (ir_dim){0, mb.sym}, r);
        return ir_dim_unknown();
    default:
        return ir_dim_unknown();
    }
}

/* Slice of a 1-D shape value: starts/ends/axes/steps constant, axis 0. */
static bool slice_sv(const ir_node *n, const ir_shape_value *x, ir_shape_value *o)
{
    ir_shape_value st, en, ax, sp;
    if (!ir_value_shape_value(n->in[1], &st) || !ir_value_shape_value(n->in[2], &en) || st.n != 1 ||
        en.n != 1)
        return false;
    int64_t s, e, a = 0, step = 1;
    if (!elem_const(st.e[0], &s) || !elem_const(en.e[0], &e))
        return false;
    if (n->nin > 3 && n->in[3] && (!ir_value_shape_value(n->in[3], &ax) || ax.n != 1 || !elem_const(ax.e[0], &a)))
        return false;
    if (n->nin > 4 && n->in[4] && (!ir_value_shape_value(n->in[4], &sp) || sp.n != 1 || !elem_const(sp.e[0], &step)))
        return false;
    if ((a != 0 && a != -1) || step == 0)
        return false;
    int64_t len = x->n;
    /* ONNX clamping: negatives count from the end; starts clamp to [0, len]
     * ([0, len-1] backwards), ends to [0, len] ([-1, len-1] backwards) */
    if (s < 0)
        s = s < -len ? 0 : s + len;
    if (e < 0)
        e = e < -len ? -1 : e + len;
    if (step > 0) {
        s = s > len ? len : s;
        e = e < 0 ? 0 : e > len ? len : e;
    } else {
        s = s > len - 1 ? len - 1 : s;
        e = e > len - 1 ? len - 1 : e;
    }
    o->known = true;
    o->n = 0;
    for (int64_t i = s; step > 0 ? i < e : i > e; i += step, o->n++)
        o->e[o->n] = x->e[i], o->minus[o->n] = x->minus[i];
    return true;
}

/* The output's shape value from the inputs', or false. */
static bool infer_sv(const ir_node *n, ir_shape_value *o)
{
    ir_shape_value a, b, c;
    memset(o, 0, sizeof *o);
    const ir_type *ti = n->nin > 0 && n->in[0] ? &n->in[0]->type : NULL;
    switch (n->op) {
    case IR_OP_SHAPE: {
        if (!ti || ti->rank < 0)
            return false;
        int s, e;
        ir_shape_op_bounds(n, ti->rank, &s, &e);
        o->known = true;
        o->n = e - s;
        for (int i = s; i < e; i++)
            o->e[i - s] = ti->dims[i];
        return true;
    }
    case IR_OP_SIZE: {
        if (!ti || ti->rank < 0)
            return false;
        ir_dim p = ir_dim_const(1);
        for (int i = 0; i < ti->rank; i++) {
            ir_dim d = ti->dims[i];
            if (d.sym == 0 && d.v == 0)
                return *o = (ir_shape_value){.known = true, .n = 1, .e = {ir_dim_const(0)}}, true;
            if (d.sym == IR_DIM_UNKNOWN || (d.sym > 0 && !(p.sym == 0 && p.v == 1)))
                p = ir_dim_unknown();
            else if (d.sym > 0)
                p = d;
            else if (p.sym == 0 && !ir_mul_ok(p.v, d.v, &p.v))
                p = ir_dim_unknown();
            else if (p.sym > 0 && d.v != 1)
                p = ir_dim_unknown();
        }
        *o = (ir_shape_value){.known = true, .n = 1, .e = {p}};
        return true;
    }
    case IR_OP_IDENTITY: case IR_OP_UNSQUEEZE: case IR_OP_SQUEEZE: case IR_OP_RESHAPE:
    case IR_OP_FLATTEN: case IR_OP_CAST:
        if (!ir_value_shape_value(n->in[0], o))
            return false;
        /* a cast to a narrower integer could wrap: keep constants that fit */
        if (n->op == IR_OP_CAST) {
            ir_dtype t = n->out[0]->type.dtype;
            if (!ir_dtype_is_int(t) && t != IR_BOOL)
                return false;
            for (int i = 0; i < o->n; i++) {
                int64_t v;
                if (t != IR_I64)   /* a narrower type could wrap a k - s */
                    o->minus[i] = ir_dim_const(0);
                if (t == IR_BOOL)
                    o->e[i] = elem_const(o->e[i], &v) ? ir_dim_const(v != 0) : ir_dim_unknown();
                else if (t != IR_I64 && t != IR_I32 && t != IR_U64)
                    o->e[i] = ir_dim_unknown();
                else if (elem_const(o->e[i], &v) && t == IR_I32 && (v < INT32_MIN || v > INT32_MAX))
                    o->e[i] = ir_dim_unknown();
            }
        }
        return true;
    case IR_OP_GATHER: {
        int64_t axis = ir_attr_int(n, "axis", 0);
        if ((axis != 0 && axis != -1) || !ti || ti->rank != 1 || !ir_value_shape_value(n->in[0], &a) ||
            n->in[1]->kind != IR_VAL_CONST || !ir_value_shape_value(n->in[1], &b))
            return false;
        o->known = true;
        o->n = b.n;
        for (int i = 0; i < b.n; i++) {
            int64_t k = b.e[i].v;
            k = k < 0 ? k + a.n : k;
            if (k < 0 || k >= a.n)
                return false;
            o->e[i] = a.e[k];
            o->minus[i] = a.minus[k];
        }
        return true;
    }
    case IR_OP_CONCAT: {
        int64_t axis = ir_attr_int(n, "axis", 0);
        if (axis != 0 && axis != -1)
            return false;
        o->known = true;
        for (int i = 0; i < n->nin; i++) {
            if (!ir_value_shape_value(n->in[i], &a) || o->n + a.n > IR_MAX_RANK)
                return false;
            memcpy(o->e + o->n, a.e, sizeof a.e[0] * (size_t)a.n);
            memcpy(o->minus + o->n, a.minus, sizeof a.minus[0] * (size_t)a.n);
            o->n += a.n;
        }
        return true;
    }
    case IR_OP_SLICE:
        return ir_value_shape_value(n->in[0], &a) && ti->rank == 1 && slice_sv(n, &a, o);
    case IR_OP_ADD: case IR_OP_SUB: case IR_OP_MUL: case IR_OP_DIV: case IR_OP_EQUAL:
    case IR_OP_MAX: case IR_OP_MIN: {
        if (n->nin != 2 || !ir_value_shape_value(n->in[0], &a) || !ir_value_shape_value(n->in[1], &b) ||
            (a.n != b.n && a.n != 1 && b.n != 1))
            return false;
        if (n->op != IR_OP_EQUAL && !ir_dtype_is_int(n->out[0]->type.dtype))
            return false;
        o->known = true;
        o->n = a.n > b.n ? a.n : b.n;
        for (int i = 0; i < o->n; i++) {
            ir_dim x = bcast(&a, i), y = bcast(&b, i), mx = bcast_minus(&a, i), my = bcast_minus(&b, i);
            o->e[i] = mx.sym > 0 || my.sym > 0 ? ir_dim_unknown() : elem_binary(n->graph, n->op, x, y);
            if (o->e[i].sym == IR_DIM_UNKNOWN)
                o->e[i] = minus_binary(n->graph, n->op, x, mx, y, my, &o->minus[i]);
        }
        return true;
    }
    case IR_OP_WHERE: {
        if (!ir_value_shape_value(n->in[0], &c) || !ir_value_shape_value(n->in[1], &a) ||
            !ir_value_shape_value(n->in[2], &b))
            return false;
        int m = c.n > a.n ? c.n : a.n;
        m = b.n > m ? b.n : m;
        if ((c.n != m && c.n != 1) || (a.n != m && a.n != 1) || (b.n != m && b.n != 1))
            return false;
        o->known = true;
        o->n = m;
        for (int i = 0; i < m; i++) {
            int64_t k;
            bool known = elem_const(bcast(&c, i), &k);
            o->e[i] = !known ? ir_dim_unknown() : k ? bcast(&a, i) : bcast(&b, i);
            o->minus[i] = !known ? ir_dim_const(0) : k ? bcast_minus(&a, i) : bcast_minus(&b, i);
        }
        return true;
    }
    case IR_OP_CONSTANT_OF_SHAPE: {
        const ir_attr *va = ir_node_attr(n, "value");
        int64_t v = 0;
        if (va && (va->kind != IR_ATTR_TENSOR || !va->tensor || !ir_dtype_is_int(va->tensor->dtype) ||
                   va->tensor->numel != 1))
            return false;
        if (va)
            v = ir_tensor_geti(va->tensor, 0);
        int cnt = sv_count(&n->out[0]->type);
        if (cnt < 0 || n->out[0]->type.rank != 1)
            return false;
        o->known = true;
        o->n = cnt;
        for (int i = 0; i < cnt; i++)
            o->e[i] = ir_dim_const(v);
        return true;
    }
    default:
        return false;
    }
}

void ir_infer_shape_value(ir_node *n)
{
    for (int i = 0; i < n->nout; i++)
        memset(&n->out[i]->sv, 0, sizeof n->out[i]->sv);
    if (n->nout < 1)
        return;
    ir_shape_value o;
    int cnt = sv_count(&n->out[0]->type);
    if (cnt < 0 || !infer_sv(n, &o) || o.n != cnt)
        return;
    n->out[0]->sv = o;
}
