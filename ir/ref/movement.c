/* movement.c - the data-movement helpers shared by movement*.c (strided
 * view copies, integer-input reading, dim products, scatter reductions),
 * and the ops that only rearrange dims: Reshape, Flatten, Squeeze,
 * Unsqueeze, Identity (which share the plain copy kernel), Transpose,
 * Concat and Split. Shape functions keep symbolic dims wherever the
 * output dim is provably the same as an input dim, and validate every
 * attribute and constant input, since they come from untrusted files. */
#include "ir/ref/movement.h"

#include <math.h>
#include <string.h>

/* ---- shared helpers ---------------------------------------------------- */

/* Copies n elements of esz bytes spaced by stride; sizes 1..8 are spelled
 * out so the compiler emits plain loads and stores. */
static void copy_strided(char *dp, const char *sp, size_t esz, int64_t n, int64_t stride)
{
    int64_t bstride = stride * (int64_t)esz;
    switch (esz) {
    case 1:
        for (int64_t j = 0; j < n; j++)
            dp[j] = sp[j * bstride];
        return;
#define COPY_N(N)                                         \
    case N:                                               \
        for (int64_t j = 0; j < n; j++)                   \
            memcpy(dp + j * N, sp + j * bstride, N);      \
        return;
    COPY_N(2)
    COPY_N(4)
    COPY_N(8)
#undef COPY_N
    default:
        for (int64_t j = 0; j < n; j++)
            memcpy(dp + j * (int64_t)esz, sp + j * bstride, esz);
    }
}

void ir_mv_copy_view(void *dst, const void *src, size_t esz, int rank,
                     const int64_t *dims, const int64_t *strides, int64_t base)
{
    int64_t d[MV_MAX_VIEW], s[MV_MAX_VIEW];
    int n = 0;
    /* An empty view may have huge other dims: return before multiplying. */
    for (int i = 0; i < rank; i++)
        if (dims[i] == 0)
            return;
    for (int i = 0; i < rank; i++) {
        if (dims[i] == 1)
            continue;
        if (n > 0 && s[n - 1] == strides[i] * dims[i]) {
            d[n - 1] *= dims[i];
            s[n - 1] = strides[i];
            continue;
        }
        d[n] = dims[i];
        s[n] = strides[i];
        n++;
    }
    const char *sp = (const char *)src + base * (int64_t)esz;
    char *dp = dst;
    if (n == 0) {
        memcpy(dp, sp, esz);
        return;
    }
    int64_t inner = d[n - 1], istride = s[n - 1];
    size_t run = (size_t)inner * esz;
    int64_t idx[MV_MAX_VIEW] = {0}, off = 0;
    for (;;) {
        if (istride == 1)
            memcpy(dp, sp + off * (int64_t)esz, run);
        else
            copy_strided(dp, sp + off * (int64_t)esz, esz, inner, istride);
        dp += run;
        int k = n - 2;
        for (; k >= 0; k--) {
            off += s[k];
            if (++idx[k] < d[k])
                break;
            off -= s[k] * d[k];
            idx[k] = 0;
        }
        if (k < 0)
            return;
    }
}

int ir_mv_read_ints(ir_shape_ctx *c, const ir_tensor *t, const char *what, int64_t *out,
                    int max, bool allow_scalar)
{
    if (!ir_dtype_is_int(t->dtype))
        return ir_node_errorf(c->diag, c->node, "%s must be an integer tensor, got %s", what,
                              ir_dtype_name(t->dtype));
    if (t->rank != 1 && !(allow_scalar && t->rank == 0))
        return ir_node_errorf(c->diag, c->node, "%s must be 1-D, got rank %d", what, t->rank);
    if (t->numel > max)
        return ir_node_errorf(c->diag, c->node, "%s has %lld values; at most %d allowed", what,
                              (long long)t->numel, max);
    for (int64_t i = 0; i < t->numel; i++)
        out[i] = ir_tensor_geti(t, i);
    return (int)t->numel;
}

int ir_mv_check_int(ir_shape_ctx *c, int i, const char *what)
{
    const ir_type *t = mv_type(c, i);
    if (t && !ir_dtype_is_int(t->dtype))
        return ir_node_errorf(c->diag, c->node, "%s must have an integer dtype, got %s", what,
                              ir_dtype_name(t->dtype));
    return 0;
}

int ir_mv_static_dims(const ir_type *t, int64_t *dims)
{
    if (!ir_type_is_static(t))
        return -1;
    for (int i = 0; i < t->rank; i++)
        dims[i] = t->dims[i].v;
    return 0;
}

int ir_mv_dim_product(ir_shape_ctx *c, const ir_dim *d, int n, ir_dim *out)
{
    int64_t p = 1;
    bool unknown = false, zero = false;
    ir_dim sym = ir_dim_const(1);   /* the symbolic dims' product */
    for (int i = 0; i < n; i++) {
        if (ir_dim_is_const(d[i])) {
            if (d[i].v == 0)
                zero = true;
            else if (!ir_mul_ok(p, d[i].v, &p))
                return ir_node_errorf(c->diag, c->node, "product of dims overflows");
        } else if (d[i].sym > 0) {
            sym = ir_dim_mul(c->node->graph, sym, d[i]);
        } else {
            unknown = true;
        }
    }
    if (zero)
        *out = ir_dim_const(0);
    else if (unknown)
        *out = ir_dim_unknown();
    else
        *out = ir_dim_mul_const(c->node->graph, sym, p);   /* a derived symbol when two or more */
    return 0;
}

int ir_mv_reduction(ir_shape_ctx *c, const char *s)
{
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    for (int i = 0; i < 5; i++)
        if (!strcmp(s, names[i]))
            return i;
    return ir_node_errorf(c->diag, c->node, "unknown reduction '%.40s'", s);
}

void ir_mv_reduce_elem(ir_tensor *out, int64_t oi, const ir_tensor *upd, int64_t ui, int red)
{
    if (red == MV_RED_NONE) {
        memcpy(mv_elem(out, oi), mv_elem(upd, ui), ir_dtype_size(out->dtype));
        return;
    }
    if (out->dtype == IR_F32 || out->dtype == IR_F16 || out->dtype == IR_BF16 ||
        out->dtype == IR_F64) {
        /* f32 in float so the sum rounds once, as a float kernel would. */
        double a = ir_tensor_getf(out, oi), b = ir_tensor_getf(upd, ui), r;
        bool fl = out->dtype != IR_F64;
        switch (red) {
        case MV_RED_ADD: r = fl ? (double)((float)a + (float)b) : a + b; break;
        case MV_RED_MUL: r = fl ? (double)((float)a * (float)b) : a * b; break;
        case MV_RED_MAX: r = isnan(a) || a > b ? a : b; break;
        default: r = isnan(a) || a < b ? a : b; break;
        }
        ir_tensor_setf(out, oi, r);
        return;
    }
    if (out->dtype == IR_U64) {
        uint64_t a = ((uint64_t *)out->data)[oi], b = ((const uint64_t *)upd->data)[ui], r;
        switch (red) {
        case MV_RED_ADD: r = a + b; break;
        case MV_RED_MUL: r = a * b; break;
        case MV_RED_MAX: r = a > b ? a : b; break;
        default: r = a < b ? a : b; break;
        }
        ((uint64_t *)out->data)[oi] = r;
        return;
    }
    /* Narrower integers and bool: wrap through uint64 (no signed overflow);
     * the store truncates to the dtype, bool becomes or/and. */
    int64_t a = ir_tensor_geti(out, oi), b = ir_tensor_geti(upd, ui), r;
    switch (red) {
    case MV_RED_ADD: r = (int64_t)((uint64_t)a + (uint64_t)b); break;
    case MV_RED_MUL: r = (int64_t)((uint64_t)a * (uint64_t)b); break;
    case MV_RED_MAX: r = a > b ? a : b; break;
    default: r = a < b ? a : b; break;
    }
    ir_tensor_seti(out, oi, r);
}

/* ---- Reshape, Flatten, Squeeze, Unsqueeze, Identity -------------------- */

/* The kernel of every op whose output has the input's bytes in the same
 * order; the shape function has already checked the element counts. */
int ref_copy(ir_ref_ctx *c)
{
    if (c->out[0]->nbytes != c->in[0]->nbytes || c->out[0]->dtype != c->in[0]->dtype)
        return ir_node_errorf(c->diag, c->node, "output size does not match the input's");
    /* a planned reshape may share its input's bytes (plan.c): nothing to copy */
    if (c->in[0]->nbytes && c->out[0]->data != c->in[0]->data)
        memcpy(c->out[0]->data, c->in[0]->data, c->in[0]->nbytes);
    return 0;
}

/* Splits dims into a constant product, a list of symbols and an unknown
 * flag, so two shapes' products can be compared modulo shared symbols. */
typedef struct dim_prod {
    int64_t p;
    int nsym;
    int32_t syms[IR_MAX_RANK];
    bool unknown, zero;
} dim_prod;

static int prod_add(ir_shape_ctx *c, dim_prod *dp, ir_dim d)
{
    if (ir_dim_is_const(d)) {
        if (d.v == 0)
            dp->zero = true;
        else if (!ir_mul_ok(dp->p, d.v, &dp->p))
            return ir_node_errorf(c->diag, c->node, "product of dims overflows");
    } else if (d.sym > 0) {
        dp->syms[dp->nsym++] = d.sym;
    } else {
        dp->unknown = true;
    }
    return 0;
}

/* Removes the symbols the two products share (as multisets). */
static void prod_cancel(dim_prod *a, dim_prod *b)
{
    for (int i = 0; i < a->nsym; i++)
        for (int j = 0; j < b->nsym; j++)
            if (a->syms[i] == b->syms[j]) {
                a->syms[i--] = a->syms[--a->nsym];
                b->syms[j] = b->syms[--b->nsym];
                break;
            }
}

/* Input i's shape value (ir_shape_ctx.sval) when it is 1-D with at most
 * max elements, so a shape function can use dims that shape arithmetic
 * computed from symbols; NULL otherwise. */
const ir_shape_value *ir_mv_sval(const ir_shape_ctx *c, int i, int max)
{
    if (!c->sval || i >= c->nin || !c->in[i] || !c->sval[i] || c->in[i]->rank != 1)
        return NULL;
    return c->sval[i]->n <= max ? c->sval[i] : NULL;
}

/* Symbol sym is d or, through derived products, a factor of it (so sym
 * = 0 makes d 0). depth bounds the walk. */
static bool sym_factor(const ir_graph *g, ir_dim d, int32_t sym, int depth)
{
    if (d.sym == sym)
        return true;
    const ir_sym_def *df = d.sym > 0 && g && depth > 0 ? ir_graph_sym_def(g, d.sym) : NULL;
    return df && df->op == IR_SYM_MUL &&
           (sym_factor(g, df->a, sym, depth - 1) || sym_factor(g, df->b, sym, depth - 1));
}

/* Reshape: output dim i is shape[i], or input dim i when shape[i] == 0
 * and !allowzero; at most one -1, inferred from the element count. With
 * symbolic input dims the -1 is still inferred when every input symbol
 * reappears in the output (copied by a 0), e.g. [N,S,768] -> [0,0,12,-1],
 * or when the symbols left over make it, times a whole quotient of the
 * constants ([1,255,H,W] -> [1,3,85,-1]: H*W).
 * The shape may also be a shape value (ir/shapeval.c), its elements dims:
 * [N, -1] from Shape(x)[0] flattens [N,16,1,1] to [N,16]. A symbol there
 * could be 0 at run time, which copies the input's dim instead, so it is
 * taken as the output dim only where the input has the same symbol, or
 * has it as another dim or a factor of one (a 0 there leaves the input
 * no elements, so the copied dim cannot match the count: the run fails,
 * as compiled code's check of a run-time shape does: [B,D,120] ->
 * [0,1,D,120] from a Shape()[3] in a PaddleOCR recognizer, or [B,H*W,120]
 * -> [0,1,W,120] in its v4, whose H is 1 at the usual 48-pixel height),
 * or allowzero is set. */
int shape_reshape(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0], *st = c->in[1];
    ir_type *o = &c->out[0];
    if (ir_mv_check_int(c, 1, "shape") < 0)
        return -1;
    if (st->rank >= 0 && st->rank != 1)
        return ir_node_errorf(c->diag, c->node, "shape must be 1-D, got rank %d", st->rank);
    const ir_tensor *sv = c->val[1];
    const ir_shape_value *sd = sv ? NULL : ir_mv_sval(c, 1, IR_MAX_RANK);
    ir_dim s[IR_MAX_RANK];
    int n;
    if (sv) {
        int64_t v[IR_MAX_RANK];
        if ((n = ir_mv_read_ints(c, sv, "shape", v, IR_MAX_RANK, false)) < 0)
            return -1;
        for (int i = 0; i < n; i++)
            s[i] = ir_dim_const(v[i]);
    } else if (sd) {
        n = sd->n;
        memcpy(s, sd->e, sizeof s[0] * (size_t)n);
    } else {
        int r = IR_RANK_UNKNOWN;
        if (st->rank == 1 && ir_dim_is_const(st->dims[0])) {
            if (st->dims[0].v > IR_MAX_RANK)
                return ir_node_errorf(c->diag, c->node, "output rank %lld exceeds %d",
                                      (long long)st->dims[0].v, IR_MAX_RANK);
            r = (int)st->dims[0].v;
        }
        ir_type_unknown(o, x->dtype, r);
        return 0;
    }
    bool allowzero = ir_attr_int(c->node, "allowzero", 0) != 0, has_zero = false;
    int neg = -1;
    for (int i = 0; i < n; i++) {
        if (s[i].sym != 0)
            continue;
        if (s[i].v == -1) {
            if (neg >= 0)
                return ir_node_errorf(c->diag, c->node, "shape has more than one -1");
            neg = i;
        } else if (s[i].v < -1) {
            return ir_node_errorf(c->diag, c->node, "shape[%d] = %lld is invalid", i,
                                  (long long)s[i].v);
        } else if (s[i].v == 0) {
            has_zero = true;
        }
    }
    if (allowzero && has_zero && neg >= 0)
        return ir_node_errorf(c->diag, c->node, "shape has both 0 and -1 with allowzero");
    ir_type_unknown(o, x->dtype, n);
    dim_prod in = {.p = 1}, out = {.p = 1};
    for (int i = 0; i < n; i++) {
        if (i == neg)
            continue;
        if (s[i].sym == 0 && s[i].v == 0 && !allowzero) {
            if (x->rank >= 0 && i >= x->rank)
                return ir_node_errorf(c->diag, c->node,
                                      "shape[%d] = 0 copies a dim the rank-%d input lacks", i,
                                      x->rank);
            o->dims[i] = x->rank >= 0 ? x->dims[i] : ir_dim_unknown();
        } else if (s[i].sym > 0 && !allowzero) {
            bool in_x = false;
            for (int k = 0; k < x->rank; k++)
                in_x |= sym_factor(c->node ? c->node->graph : NULL, x->dims[k], s[i].sym, 8);
            o->dims[i] = in_x ? s[i] : ir_dim_unknown();
        } else {
            o->dims[i] = s[i];
        }
        if (prod_add(c, &out, o->dims[i]) < 0)
            return -1;
    }
    if (x->rank < 0)
        return 0;
    for (int i = 0; i < x->rank; i++)
        if (prod_add(c, &in, x->dims[i]) < 0)
            return -1;
    prod_cancel(&in, &out);
    if (neg >= 0 && !in.unknown && !out.unknown && !out.nsym && in.nsym && !in.zero && !out.zero &&
        in.p % out.p == 0) {
        /* the -1 takes the input's symbols left over, in the input's dim
         * order (as Flatten multiplies them: [1,C,H,W] -> [1,C,-1] gives
         * Flatten's H*W), times the constants' quotient */
        ir_dim left[IR_MAX_RANK];
        int m = 0;
        for (int i = 0; i < x->rank; i++)
            for (int j = 0; j < in.nsym; j++)
                if (x->dims[i].sym == in.syms[j]) {
                    left[m++] = x->dims[i];
                    in.syms[j] = in.syms[--in.nsym];
                    break;
                }
        left[m++] = ir_dim_const(in.p / out.p);
        return ir_mv_dim_product(c, left, m, &o->dims[neg]);
    }
    if (in.unknown || out.unknown || in.nsym || out.nsym)
        return 0; /* the counts cannot be compared statically */
    int64_t nin = in.zero ? 0 : in.p, nout = out.zero ? 0 : out.p;
    if (neg >= 0) {
        if (nout == 0)
            return ir_node_errorf(c->diag, c->node, "cannot infer -1 when other dims are 0");
        if (nin % nout)
            return ir_node_errorf(c->diag, c->node, "cannot reshape %lld elements with -1 "
                                  "and %lld other elements", (long long)nin, (long long)nout);
        o->dims[neg] = ir_dim_const(nin / nout);
    } else if (nin != nout) {
        return ir_node_errorf(c->diag, c->node, "cannot reshape %lld elements into %lld",
                              (long long)nin, (long long)nout);
    }
    return 0;
}

/* Flatten: [prod(dims[:axis]), prod(dims[axis:])], axis in [-r, r]. */
int shape_flatten(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    ir_type *o = &c->out[0];
    ir_type_unknown(o, x->dtype, 2);
    if (x->rank < 0)
        return 0;
    int64_t axis = ir_attr_int(c->node, "axis", 1);
    if (axis < -x->rank || axis > x->rank)
        return ir_node_errorf(c->diag, c->node, "axis %lld is out of range for rank %d",
                              (long long)axis, x->rank);
    int a = (int)(axis < 0 ? axis + x->rank : axis);
    if (ir_mv_dim_product(c, x->dims, a, &o->dims[0]) < 0 ||
        ir_mv_dim_product(c, x->dims + a, x->rank - a, &o->dims[1]) < 0)
        return -1;
    return 0;
}

/* Reads Transpose's perm (default: reversed dims) and checks that it is a
 * permutation of [0, rank). */
static int transpose_perm(ir_shape_ctx *c, int rank, int *perm)
{
    const int64_t *p;
    int n = ir_attr_ints(c->node, "perm", &p);
    if (n < 0) {
        for (int i = 0; i < rank; i++)
            perm[i] = rank - 1 - i;
        return 0;
    }
    if (n != rank)
        return ir_node_errorf(c->diag, c->node, "perm has %d entries for rank %d", n, rank);
    bool seen[IR_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) {
        if (p[i] < 0 || p[i] >= rank || seen[p[i]])
            return ir_node_errorf(c->diag, c->node, "perm is not a permutation of 0..%d",
                                  rank - 1);
        seen[p[i]] = true;
        perm[i] = (int)p[i];
    }
    return 0;
}

int shape_transpose(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    ir_type *o = &c->out[0];
    if (x->rank < 0) {
        const int64_t *p;
        int n = ir_attr_ints(c->node, "perm", &p);
        if (n > IR_MAX_RANK)
            return ir_node_errorf(c->diag, c->node, "perm has %d entries", n);
        ir_type_unknown(o, x->dtype, n < 0 ? IR_RANK_UNKNOWN : n);
        return 0;
    }
    int perm[IR_MAX_RANK];
    if (transpose_perm(c, x->rank, perm) < 0)
        return -1;
    o->dtype = x->dtype;
    o->rank = x->rank;
    for (int i = 0; i < x->rank; i++)
        o->dims[i] = x->dims[perm[i]];
    return 0;
}

int ref_transpose(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    ir_shape_ctx s = mv_err_ctx(c);
    int perm[IR_MAX_RANK];
    if (transpose_perm(&s, x->rank, perm) < 0)
        return -1;
    int64_t st[IR_MAX_RANK], vs[IR_MAX_RANK];
    ir_strides(x->dims, x->rank, st);
    for (int i = 0; i < x->rank; i++)
        vs[i] = st[perm[i]];
    ir_mv_copy_view(c->out[0]->data, x->data, ir_dtype_size(x->dtype), x->rank,
                    c->out[0]->dims, vs, 0);
    return 0;
}

/* Reads axes (input 1) normalized into [0, rank) with no duplicates;
 * returns the count. */
static int read_axes(ir_shape_ctx *c, const ir_tensor *t, int rank, int *axes)
{
    int64_t v[IR_MAX_RANK];
    int n = ir_mv_read_ints(c, t, "axes", v, IR_MAX_RANK, true);
    if (n < 0)
        return -1;
    bool seen[IR_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) {
        int a;
        if (v[i] < -rank || v[i] >= rank)
            return ir_node_errorf(c->diag, c->node, "axis %lld is out of range for rank %d",
                                  (long long)v[i], rank);
        a = (int)(v[i] < 0 ? v[i] + rank : v[i]);
        if (seen[a])
            return ir_node_errorf(c->diag, c->node, "axis %lld is repeated", (long long)v[i]);
        seen[a] = true;
        axes[i] = a;
    }
    return n;
}

/* Squeeze: removes the listed axes, which must be 1 (a symbolic dim is
 * taken to be 1), or every dim that is 1 when axes is absent. */
int shape_squeeze(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    ir_type *o = &c->out[0];
    if (ir_mv_check_int(c, 1, "axes") < 0)
        return -1;
    bool has_axes = mv_type(c, 1) != NULL;
    const ir_tensor *av = mv_val(c, 1);
    if (av && av->numel == 0)
        has_axes = false; /* an empty list means "every 1", like no list */
    if (x->rank < 0 || (has_axes && !av)) {
        int64_t n = has_axes ? mv_len_1d(mv_type(c, 1)) : -1;
        int r = x->rank >= 0 && n >= 0 && n <= x->rank ? x->rank - (int)n : IR_RANK_UNKNOWN;
        ir_type_unknown(o, x->dtype, r);
        return 0;
    }
    bool drop[IR_MAX_RANK] = {false};
    if (has_axes) {
        int axes[IR_MAX_RANK];
        int n = read_axes(c, av, x->rank, axes);
        if (n < 0)
            return -1;
        for (int i = 0; i < n; i++) {
            ir_dim d = x->dims[axes[i]];
            if (ir_dim_is_const(d) && d.v != 1)
                return ir_node_errorf(c->diag, c->node, "cannot squeeze dim %d of size %lld",
                                      axes[i], (long long)d.v);
            drop[axes[i]] = true;
        }
    } else {
        for (int i = 0; i < x->rank; i++) {
            if (!ir_dim_is_const(x->dims[i])) {
                /* Whether it is 1 decides the rank. */
                ir_type_unknown(o, x->dtype, IR_RANK_UNKNOWN);
                return 0;
            }
            drop[i] = x->dims[i].v == 1;
        }
    }
    o->dtype = x->dtype;
    o->rank = 0;
    for (int i = 0; i < x->rank; i++)
        if (!drop[i])
            o->dims[o->rank++] = x->dims[i];
    return 0;
}

/* Unsqueeze: inserts 1s at the listed axes of the output (rank r + n). */
int shape_unsqueeze(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    ir_type *o = &c->out[0];
    if (ir_mv_check_int(c, 1, "axes") < 0)
        return -1;
    const ir_tensor *av = c->val[1];
    if (x->rank < 0 || !av) {
        int64_t n = mv_len_1d(c->in[1]);
        int r = x->rank >= 0 && n >= 0 ? x->rank + (int)n : IR_RANK_UNKNOWN;
        if (r > IR_MAX_RANK)
            return ir_node_errorf(c->diag, c->node, "output rank %d exceeds %d", r, IR_MAX_RANK);
        ir_type_unknown(o, x->dtype, r);
        return 0;
    }
    if (av->numel + x->rank > IR_MAX_RANK)
        return ir_node_errorf(c->diag, c->node, "output rank %lld exceeds %d",
                              (long long)(av->numel + x->rank), IR_MAX_RANK);
    int r = x->rank + (int)av->numel, axes[IR_MAX_RANK];
    int n = read_axes(c, av, r, axes);
    if (n < 0)
        return -1;
    bool ins[IR_MAX_RANK] = {false};
    for (int i = 0; i < n; i++)
        ins[axes[i]] = true;
    o->dtype = x->dtype;
    o->rank = r;
    for (int i = 0, k = 0; i < r; i++)
        o->dims[i] = ins[i] ? ir_dim_const(1) : x->dims[k++];
    return 0;
}

/* ---- Concat, Split ------------------------------------------------------ */

/* Concat: inputs agree on dtype, rank and every dim but axis; the axis
 * dim is the sum. */
int shape_concat(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    ir_type *o = &c->out[0];
    int rank = IR_RANK_UNKNOWN;
    for (int i = 0; i < c->nin; i++) {
        const ir_type *t = c->in[i];
        if (!t)
            return ir_node_errorf(c->diag, c->node, "input %d is missing", i);
        if (t->dtype != x->dtype)
            return ir_node_errorf(c->diag, c->node, "input %d is %s, input 0 is %s", i,
                                  ir_dtype_name(t->dtype), ir_dtype_name(x->dtype));
        if (t->rank < 0)
            continue;
        if (rank >= 0 && t->rank != rank)
            return ir_node_errorf(c->diag, c->node, "input %d has rank %d, expected %d", i,
                                  t->rank, rank);
        rank = t->rank;
    }
    ir_type_unknown(o, x->dtype, rank);
    if (rank < 0)
        return 0;
    if (rank == 0)
        return ir_node_errorf(c->diag, c->node, "cannot concatenate scalars");
    int axis;
    if (ir_norm_axis(c, ir_attr_int(c->node, "axis", 0), rank, &axis) < 0)
        return -1;
    /* the axis's length: a sum of dims, symbolic ones as a derived symbol */
    ir_dim sum = ir_dim_const(0);
    for (int i = 0; i < c->nin; i++) {
        const ir_type *t = c->in[i];
        if (t->rank < 0) {
            sum = ir_dim_unknown();
            continue;
        }
        for (int k = 0; k < rank; k++) {
            ir_dim d = t->dims[k], *od = &o->dims[k];
            if (k == axis) {
                sum = ir_dim_add(c->node->graph, sum, d);
                continue;
            }
            if (ir_dim_is_const(d) && ir_dim_is_const(*od) && d.v != od->v)
                return ir_node_errorf(c->diag, c->node,
                                      "input %d dim %d is %lld, expected %lld", i, k,
                                      (long long)d.v, (long long)od->v);
            if (od->sym == IR_DIM_UNKNOWN || (od->sym > 0 && ir_dim_is_const(d)))
                *od = d;
        }
    }
    o->dims[axis] = sum;
    return 0;
}

int ref_concat(ir_ref_ctx *c)
{
    ir_tensor *y = c->out[0];
    ir_shape_ctx s = mv_err_ctx(c);
    int axis;
    if (ir_norm_axis(&s, ir_attr_int(c->node, "axis", 0), y->rank, &axis) < 0)
        return -1;
    /* Empty: nothing to copy, and dims x element size might overflow. */
    if (y->numel == 0)
        return 0;
    int64_t outer = 1, inner = (int64_t)ir_dtype_size(y->dtype);
    for (int k = 0; k < axis; k++)
        outer *= y->dims[k];
    for (int k = axis + 1; k < y->rank; k++)
        inner *= y->dims[k];
    int64_t orow = y->dims[axis] * inner, at = 0;
    for (int i = 0; i < c->nin; i++) {
        const ir_tensor *x = c->in[i];
        int64_t row = x->dims[axis] * inner;
        if (at + row > orow)
            return ir_node_errorf(c->diag, c->node, "inputs exceed the output along the axis");
        if (row)
            for (int64_t o = 0; o < outer; o++)
                memcpy((char *)y->data + o * orow + at, (const char *)x->data + o * row,
                       (size_t)row);
        at += row;
    }
    return 0;
}

/* ConcatNCHWc (internal, the layout pass): a channel Concat of blocked
 * values [N, C_i/cb, H, W, cb] whose parts need not be whole blocks:
 * channels[i] of part i are real (its lanes past them pad), and land at
 * the channels before it, so a part may start mid-block; the result is
 * [N, ceil(sum/cb), H, W, cb] with its pad lanes past the sum 0. */
int shape_concat_nchwc(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    ir_type *o = &c->out[0];
    const int64_t *ch;
    if (ir_attr_ints(c->node, "channels", &ch) != c->nin)
        return ir_node_errorf(c->diag, c->node, "channels has %d values for %d inputs",
                              ir_attr_ints(c->node, "channels", &ch), c->nin);
    ir_type_unknown(o, x->dtype, 5);
    int64_t cb = 0, sum = 0;
    for (int i = 0; i < c->nin; i++) {
        const ir_type *t = c->in[i];
        if (!t || t->rank != 5 || t->dtype != x->dtype || !ir_dim_is_const(t->dims[1]) ||
            !ir_dim_is_const(t->dims[4]) || t->dims[4].v < 1 || (cb && t->dims[4].v != cb))
            return ir_node_errorf(c->diag, c->node, "input %d is not a blocked value like input 0", i);
        cb = t->dims[4].v;
        if (ch[i] < 0 || ch[i] > t->dims[1].v * cb || ch[i] > INT32_MAX)
            return ir_node_errorf(c->diag, c->node, "channels[%d] = %lld does not fit input %d's %lld blocks", i,
                                  (long long)ch[i], i, (long long)t->dims[1].v);
        sum += ch[i];
        for (int k = 0; k < 4; k++) {
            ir_dim d = t->dims[k], *od = &o->dims[k];
            if (k == 1)
                continue;
            if (ir_dim_is_const(d) && ir_dim_is_const(*od) && d.v != od->v)
                return ir_node_errorf(c->diag, c->node, "input %d dim %d is %lld, expected %lld", i, k,
                                      (long long)d.v, (long long)od->v);
            if (od->sym == IR_DIM_UNKNOWN || (od->sym > 0 && ir_dim_is_const(d)))
                *od = d;
        }
    }
    o->dims[1] = ir_dim_const((sum + cb - 1) / cb);
    o->dims[4] = ir_dim_const(cb);
    return 0;
}

int ref_concat_nchwc(ir_ref_ctx *c)
{
    ir_tensor *y = c->out[0];
    const int64_t *ch;
    ir_attr_ints(c->node, "channels", &ch);
    size_t es = ir_dtype_size(y->dtype);
    int64_t cb = y->dims[4], plane = y->dims[2] * y->dims[3], yb = y->dims[1];
    memset(y->data, 0, (size_t)y->numel * es);
    int64_t at = 0;
    for (int i = 0; i < c->nin; i++) {
        const ir_tensor *x = c->in[i];
        int64_t xb = x->dims[1];
        for (int64_t n = 0; n < y->dims[0]; n++)
            for (int64_t q = 0; q < ch[i]; q++) {
                int64_t o = at + q;
                char *dst = (char *)y->data + (size_t)(((n * yb + o / cb) * plane) * cb + o % cb) * es;
                const char *src = (const char *)x->data + (size_t)(((n * xb + q / cb) * plane) * cb + q % cb) * es;
                for (int64_t p = 0; p < plane; p++)
                    memcpy(dst + (size_t)(p * cb) * es, src + (size_t)(p * cb) * es, es);
            }
        at += ch[i];
    }
    return 0;
}

/* Split sizes along the axis: the split input, or num_outputs (or the
 * output count) chunks of ceil(dim / n) with a smaller last chunk (opset
 * 18). sizes[i] < 0 means unknown (symbolic chunks: split_sym_sizes). */
static int split_sizes(ir_shape_ctx *c, const ir_type *x, int axis, const ir_tensor *sv,
                       bool has_split, int64_t *sizes)
{
    int nout = c->nout;
    ir_dim d = x->dims[axis];
    if (has_split) {
        if (ir_mv_check_int(c, 1, "split") < 0)
            return -1;
        if (ir_node_attr(c->node, "num_outputs"))
            return ir_node_errorf(c->diag, c->node, "both split and num_outputs are given");
        for (int i = 0; i < nout; i++)
            sizes[i] = -1;
        if (!sv)
            return 0;
        if (sv->numel != nout)
            return ir_node_errorf(c->diag, c->node, "split has %lld values for %d outputs",
                                  (long long)sv->numel, nout);
        if (ir_mv_read_ints(c, sv, "split", sizes, nout, false) < 0)
            return -1;
        int64_t sum = 0;
        for (int i = 0; i < nout; i++)
            if (sizes[i] < 0 || !ir_add_ok(sum, sizes[i], &sum))
                return ir_node_errorf(c->diag, c->node, "split[%d] = %lld is invalid", i,
                                      (long long)sizes[i]);
        if (ir_dim_is_const(d) && sum != d.v)
            return ir_node_errorf(c->diag, c->node, "split sums to %lld but the dim is %lld",
                                  (long long)sum, (long long)d.v);
        return 0;
    }
    const ir_attr *na = ir_node_attr(c->node, "num_outputs");
    if (na && na->i != nout)
        return ir_node_errorf(c->diag, c->node, "num_outputs is %lld but the node has %d "
                              "outputs", (long long)na->i, nout);
    if (!ir_dim_is_const(d)) {
        for (int i = 0; i < nout; i++)
            sizes[i] = -1;
        return 0;
    }
    int64_t chunk = d.v / nout + (d.v % nout != 0);
    for (int i = 0; i < nout - 1; i++)
        sizes[i] = chunk;
    sizes[nout - 1] = d.v - chunk * (nout - 1);
    if (sizes[nout - 1] < 0)
        return ir_node_errorf(c->diag, c->node, "cannot split a dim of %lld into %d chunks",
                              (long long)d.v, nout);
    return 0;
}

/* A symbolic dim d in n = c->nout chunks of ceil(d/n), the last smaller:
 * sym[0] is the chunk, sym[1] the last one. Two chunks are ceil(d/2) and
 * floor(d/2) for any d; the last of more is d - (n-1)*ceil(d/n), which a
 * derived symbol cannot say (no subtraction of symbols), so it is taken
 * as ceil(d/n) too, right when n divides d: compiled code checks that at
 * run time (codegen/program.c), the interpreter takes the run's dims. */
static void split_sym_sizes(ir_shape_ctx *c, ir_dim d, ir_dim *sym)
{
    ir_graph *g = c->node->graph;
    sym[0] = ir_dim_div_const(g, d, c->nout, true);
    sym[1] = c->nout == 2 ? ir_dim_div_const(g, d, 2, false) : sym[0];
}

int shape_split(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    for (int i = 0; i < c->nout; i++)
        ir_type_unknown(&c->out[i], x->dtype, x->rank);
    if (x->rank < 0)
        return 0;
    int axis;
    if (x->rank == 0)
        return ir_node_errorf(c->diag, c->node, "cannot split a scalar");
    if (ir_norm_axis(c, ir_attr_int(c->node, "axis", 0), x->rank, &axis) < 0)
        return -1;
    int64_t sizes[64];
    if (c->nout > 64)
        return ir_node_errorf(c->diag, c->node, "more than 64 outputs");
    bool has_split = mv_type(c, 1) != NULL;
    if (split_sizes(c, x, axis, mv_val(c, 1), has_split, sizes) < 0)
        return -1;
    ir_dim sym[2];
    bool chunks = !has_split && x->dims[axis].sym > 0;
    if (chunks)
        split_sym_sizes(c, x->dims[axis], sym);
    for (int i = 0; i < c->nout; i++) {
        ir_type *o = &c->out[i];
        for (int k = 0; k < x->rank; k++)
            o->dims[k] = x->dims[k];
        o->dims[axis] = sizes[i] >= 0 ? ir_dim_const(sizes[i]) : chunks ? sym[i == c->nout - 1] : ir_dim_unknown();
    }
    return 0;
}

int ref_split(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    ir_shape_ctx s = mv_err_ctx(c);
    int axis;
    if (ir_norm_axis(&s, ir_attr_int(c->node, "axis", 0), x->rank, &axis) < 0)
        return -1;
    /* Empty: nothing to copy, and dims x element size might overflow. */
    if (x->numel == 0)
        return 0;
    int64_t outer = 1, inner = (int64_t)ir_dtype_size(x->dtype);
    for (int k = 0; k < axis; k++)
        outer *= x->dims[k];
    for (int k = axis + 1; k < x->rank; k++)
        inner *= x->dims[k];
    int64_t irow = x->dims[axis] * inner, at = 0;
    for (int i = 0; i < c->nout; i++) {
        ir_tensor *y = c->out[i];
        int64_t row = y->dims[axis] * inner;
        if (at + row > irow)
            return ir_node_errorf(c->diag, c->node, "outputs exceed the input along the axis");
        if (row)
            for (int64_t o = 0; o < outer; o++)
                memcpy((char *)y->data + o * row, (const char *)x->data + o * irow + at,
                       (size_t)row);
        at += row;
    }
    return 0;
}
