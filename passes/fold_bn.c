/* fold_bn.c - folds a per-channel affine map y = s*z + t that follows a
 * Conv, Gemm or MatMul with constant weights into those weights:
 * inference BatchNormalization (s = scale/sqrt(var+eps), t = B - mean*s)
 * after any of the three, and Mul by a constant per-channel scale or Add
 * of a constant per-channel shift after a Conv. The weights become
 * W' = W*s along the output channel and the bias b' = b*s + t; a MatMul
 * gets its bias as a following Add. The producer's result must have no
 * other user, since it no longer exists afterwards.
 *
 * A BatchNormalization left over (after an Add, or a Conv whose result
 * has other users) over symbolic spatial dims becomes Mul and Add by
 * per-channel constants [C, 1, ...]: the elementwise family compiles any
 * dims, where the normalization's own kernel takes only a symbolic batch.
 *
 * Arithmetic is done in double and stored in the weights' dtype. New
 * constants are added rather than the old ones changed, because other
 * nodes may share them; dce drops the old ones.
 */
#include "passes/pass.h"
#include "ir/ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fb {
    pass_ctx *c;
    int64_t bns, scales, affine;
} fb;

static bool is_const(const ir_value *v)
{
    return v && v->kind == IR_VAL_CONST;
}


/* A new constant of type t named after `base`, zero-filled for the
 * caller to write through cval. */
static ir_value *new_const(fb *f, const char *base, const char *suffix, const ir_type *t)
{
    char buf[256];
    return ir_graph_add_const(f->c->g, ir_graph_fresh_name(f->c->g, base, suffix, buf, sizeof buf), t, NULL, f->c->diag);
}

/* Replaces consumer `cons` (whose result the fold computes) and producer
 * `prod` by a new node of prod's op and attributes (except `skip`) over
 * in[0..nin). The new node's result is named `out_name` (NULL: cons's
 * result's name) and typed like cons's result. */
static ir_node *emit(fb *f, ir_node *prod, ir_node *cons, int nin, ir_value *const *in, const char *skip,
                     const char *out_name)
{
    ir_graph *g = f->c->g;
    ir_value *y = cons->out[0];
    const char *name = out_name ? out_name : y->name;
    ir_node *nn = ir_graph_add_node(g, prod->op, prod->name, nin, in, 1, &name, f->c->diag);
    if (!nn)
        return NULL;
    for (int i = 0; i < prod->nattr; i++)
        if ((!skip || strcmp(prod->attrs[i].name, skip)) && ir_node_add_attr(g, nn, &prod->attrs[i]) < 0) {
            ir_errorf(f->c->diag, "out of memory");
            return NULL;
        }
    nn->out[0]->type = y->type;
    return nn;
}

static void finish(fb *f, ir_node *prod, ir_node *cons, ir_value *result)
{
    ir_replace_all_uses(f->c->g, cons->out[0], result);
    ir_node_erase(cons);
    ir_node_erase(prod);
    f->c->changed = true;
}

/* W scaled along `axis` (element i's channel is (i / inner) % C). */
static ir_value *scale_weights(fb *f, ir_value *w, const double *s, int64_t C, int64_t inner, bool all_one)
{
    if (all_one)
        return w;
    ir_value *nw = new_const(f, w->name, "_folded", &w->type);
    if (!nw)
        return NULL;
    for (int64_t i = 0; i < w->cval.numel; i++)
        ir_tensor_setf(&nw->cval, i, ir_tensor_getf(&w->cval, i) * s[(i / inner) % C]);
    return nw;
}

/* Conv: channel = output dim 1 = W dim 0. */
static bool fold_conv(fb *f, ir_node *conv, ir_node *cons, const double *s, const double *t, int64_t C,
                      bool all_one)
{
    ir_value *w = conv->in[1], *b = conv->nin > 2 ? conv->in[2] : NULL;
    if (w->cval.rank < 1 || w->cval.dims[0] != C || (b && (!is_const(b) || b->cval.numel != C)))
        return false;
    int64_t inner = w->cval.numel / C;
    ir_value *nw = scale_weights(f, w, s, C, inner ? inner : 1, all_one);
    ir_type bt = {.dtype = b ? b->type.dtype : w->type.dtype, .rank = 1, .dims = {ir_dim_const(C)}};
    ir_value *nb = nw ? new_const(f, b ? b->name : w->name, b ? "_folded" : "_bias", &bt) : NULL;
    if (!nb)
        return false;
    for (int64_t i = 0; i < C; i++)
        ir_tensor_setf(&nb->cval, i, (b ? ir_tensor_getf(&b->cval, i) : 0.0) * s[i] + t[i]);
    ir_value *in[3] = {conv->in[0], nw, nb};
    ir_node *nn = emit(f, conv, cons, 3, in, NULL, NULL);
    if (!nn)
        return false;
    finish(f, conv, cons, nn->out[0]);
    return true;
}

/* Gemm: y = alpha*op(A)*op(B) + beta*C; the channel is op(B)'s column.
 * The new bias is beta*C*s + t over [N] (or [M,N] when C varies by row),
 * and beta becomes 1. */
static bool fold_gemm(fb *f, ir_node *gm, ir_node *cons, const double *s, const double *t, int64_t N)
{
    ir_value *w = gm->in[1], *c = gm->nin > 2 ? gm->in[2] : NULL;
    bool tb = ir_attr_int(gm, "transB", 0) != 0;
    if (w->cval.rank != 2 || w->cval.dims[tb ? 0 : 1] != N || (c && !is_const(c)) || (c && c->cval.rank > 2))
        return false;
    double beta = ir_attr_float(gm, "beta", 1.0f);
    int64_t rows = 1, cols = 1;
    if (c && c->cval.rank == 2)
        rows = c->cval.dims[0];
    if (c && c->cval.rank >= 1)
        cols = c->cval.dims[c->cval.rank - 1];
    if (cols != 1 && cols != N)
        return false;
    ir_value *nw = new_const(f, w->name, "_folded", &w->type);
    if (!nw)
        return false;
    for (int64_t i = 0; i < w->cval.numel; i++)
        ir_tensor_setf(&nw->cval, i, ir_tensor_getf(&w->cval, i) * s[tb ? i / w->cval.dims[1] : i % N]);
    ir_type ct = {.dtype = c ? c->type.dtype : w->type.dtype, .rank = rows > 1 ? 2 : 1};
    ct.dims[0] = ir_dim_const(rows > 1 ? rows : N);
    ct.dims[1] = ir_dim_const(N);
    ir_value *nc = new_const(f, c ? c->name : w->name, c ? "_folded" : "_bias", &ct);
    if (!nc)
        return false;
    for (int64_t m = 0; m < rows; m++)
        for (int64_t n = 0; n < N; n++) {
            double cv = c ? beta * ir_tensor_getf(&c->cval, m * cols + (cols > 1 ? n : 0)) : 0.0;
            ir_tensor_setf(&nc->cval, m * N + n, cv * s[n] + t[n]);
        }
    ir_value *in[3] = {gm->in[0], nw, nc};
    ir_node *nn = emit(f, gm, cons, 3, in, "beta", NULL);
    if (!nn)
        return false;
    finish(f, gm, cons, nn->out[0]);
    return true;
}

/* MatMul [M,K] x [K,N]: columns scaled, the shift added by a new Add. */
static bool fold_matmul(fb *f, ir_node *mm, ir_node *cons, const double *s, const double *t, int64_t N)
{
    ir_graph *g = f->c->g;
    ir_value *w = mm->in[1];
    if (w->cval.rank != 2 || w->cval.dims[1] != N || mm->in[0]->type.rank != 2)
        return false;
    ir_value *nw = scale_weights(f, w, s, N, 1, false);
    ir_type bt = {.dtype = w->type.dtype, .rank = 1, .dims = {ir_dim_const(N)}};
    ir_value *nb = nw ? new_const(f, w->name, "_bias", &bt) : NULL;
    if (!nb)
        return false;
    for (int64_t i = 0; i < N; i++)
        ir_tensor_setf(&nb->cval, i, t[i]);
    char buf[256];
    ir_value *in[2] = {mm->in[0], nw};
    ir_node *nm = emit(f, mm, cons, 2, in, NULL, ir_graph_fresh_name(g, mm->out[0]->name, "_scaled", buf, sizeof buf));
    if (!nm)
        return false;
    const char *yname = cons->out[0]->name;
    ir_value *ain[2] = {nm->out[0], nb};
    ir_node *na = ir_graph_add_node(g, IR_OP_ADD, cons->name, 2, ain, 1, &yname, f->c->diag);
    if (!na)
        return false;
    na->out[0]->type = cons->out[0]->type;
    finish(f, mm, cons, na->out[0]);
    return true;
}

/* Folds y = s*z + t (per channel, C channels) computed by cons from z,
 * the result of prod, into prod when prod's weights allow it. */
static bool fold_affine(fb *f, ir_node *prod, ir_node *cons, const double *s, const double *t, int64_t C)
{
    ir_graph *g = f->c->g;
    ir_value *z = prod->out[0];
    if (prod->nout != 1 || ir_value_count_uses(g, z) != 1 || !is_const(prod->in[1]) ||
        !ir_dtype_is_float(prod->in[1]->type.dtype) || !ir_dtype_is_float(z->type.dtype))
        return false;
    bool all_one = true;
    for (int64_t i = 0; i < C; i++)
        all_one &= s[i] == 1.0;
    switch (prod->op) {
    case IR_OP_CONV:
        return fold_conv(f, prod, cons, s, t, C, all_one);
    case IR_OP_GEMM:
        return fold_gemm(f, prod, cons, s, t, C);
    case IR_OP_MATMUL:
        return fold_matmul(f, prod, cons, s, t, C);
    }
    return false;
}

/* 2*C doubles (s, then t) for the caller to free; NULL with a message
 * on out of memory, or silently when C is absurd (then nothing folds). */
static double *scratch(fb *f, int64_t C)
{
    if (C <= 0 || C > IR_MAX_TENSOR_BYTES / 16)
        return NULL;
    double *s = malloc(sizeof(double) * 2 * (size_t)C);
    if (!s)
        ir_errorf(f->c->diag, "out of memory");
    return s;
}

static ir_node *producer(const ir_value *v)
{
    if (!v || v->kind != IR_VAL_NODE || !v->def || v->def->dead)
        return NULL;
    return v->def;
}

/* BatchNormalization in inference mode after Conv (channel dim 1), or
 * after Gemm/MatMul on a rank-2 [N,C] result. */
static bool fold_batchnorm(fb *f, ir_node *bn)
{
    ir_graph *g = f->c->g;
    ir_node *p = producer(bn->in[0]);
    if (!p || (p->op != IR_OP_CONV && p->op != IR_OP_GEMM && p->op != IR_OP_MATMUL))
        return false;
    if (ir_attr_int(bn, "training_mode", 0) != 0)
        return false;
    for (int i = 1; i < bn->nout; i++)
        if (ir_value_count_uses(g, bn->out[i]))
            return false;
    const ir_type *zt = &bn->in[0]->type;
    if (zt->rank < 2 || (p->op != IR_OP_CONV && zt->rank != 2) || !ir_dim_is_const(zt->dims[1]))
        return false;
    int64_t C = zt->dims[1].v;
    for (int i = 1; i < 5; i++)
        if (!is_const(bn->in[i]) || bn->in[i]->cval.numel != C)
            return false;
    double *s = scratch(f, C), *t = s + C;
    if (!s)
        return false;
    double eps = ir_attr_float(bn, "epsilon", 1e-5f);
    bool ok = true;
    for (int64_t i = 0; i < C && ok; i++) {
        double var = ir_tensor_getf(&bn->in[4]->cval, i) + eps;
        ok = var > 0 && isfinite(var);
        s[i] = ir_tensor_getf(&bn->in[1]->cval, i) / sqrt(var);
        t[i] = ir_tensor_getf(&bn->in[2]->cval, i) - ir_tensor_getf(&bn->in[3]->cval, i) * s[i];
    }
    ok = ok && fold_affine(f, p, bn, s, t, C);
    free(s);
    f->bns += ok;
    return ok;
}

/* An inference BatchNormalization [N, C, ...] with symbolic dims past the
 * batch, as x * s + t with s, t constants [C, 1, ...] of x's dtype. */
static bool bn_to_affine(fb *f, ir_node *bn)
{
    ir_graph *g = f->c->g;
    const ir_type *xt = &bn->in[0]->type;
    bool sym = false;
    for (int d = 1; d < xt->rank; d++)
        sym |= xt->dims[d].sym != 0;
    if (!sym || xt->rank < 3 || !ir_dim_is_const(xt->dims[1]) || !ir_dtype_is_float(xt->dtype) ||
        ir_attr_int(bn, "training_mode", 0) != 0 || !ir_type_same(xt, &bn->out[0]->type))
        return false;
    for (int i = 1; i < bn->nout; i++)
        if (ir_value_count_uses(g, bn->out[i]))
            return false;
    int64_t C = xt->dims[1].v;
    for (int i = 1; i < 5; i++)
        if (!is_const(bn->in[i]) || bn->in[i]->cval.numel != C)
            return false;
    ir_type ct = {.dtype = xt->dtype, .rank = xt->rank - 1};
    ct.dims[0] = ir_dim_const(C);
    for (int d = 1; d < ct.rank; d++)
        ct.dims[d] = ir_dim_const(1);
    ir_value *sv = new_const(f, bn->name, "_scale", &ct), *tv = sv ? new_const(f, bn->name, "_shift", &ct) : NULL;
    if (!tv)
        return false;
    double eps = ir_attr_float(bn, "epsilon", 1e-5f);
    for (int64_t i = 0; i < C; i++) {
        double var = ir_tensor_getf(&bn->in[4]->cval, i) + eps, sc = ir_tensor_getf(&bn->in[1]->cval, i) / sqrt(var);
        if (!(var > 0) || !isfinite(var))
            return false;
        ir_tensor_setf(&sv->cval, i, sc);
        ir_tensor_setf(&tv->cval, i, ir_tensor_getf(&bn->in[2]->cval, i) - ir_tensor_getf(&bn->in[3]->cval, i) * sc);
    }
    char buf[256];
    const char *mname = ir_graph_fresh_name(g, bn->out[0]->name, "_scaled", buf, sizeof buf);
    ir_value *mi[2] = {bn->in[0], sv};
    ir_node *mul = ir_graph_add_node(g, IR_OP_MUL, bn->name, 2, mi, 1, &mname, f->c->diag);
    if (!mul)
        return false;
    mul->out[0]->type = *xt;
    ir_value *ai[2] = {mul->out[0], tv};
    const char *aname = bn->out[0]->name;
    bn->out[0]->name = "";   /* the Add's result takes the name */
    ir_node *add = ir_graph_add_node(g, IR_OP_ADD, bn->name, 2, ai, 1, &aname, f->c->diag);
    if (!add)
        return false;
    add->out[0]->type = *xt;
    ir_replace_all_uses(g, bn->out[0], add->out[0]);
    ir_node_erase(bn);
    f->c->changed = true;
    f->affine++;
    return true;
}

/* Mul by (or Add of) a constant that varies at most along a Conv's
 * channel dim and does not broadcast the result beyond the Conv's. */
static bool fold_scale_shift(fb *f, ir_node *n)
{
    ir_node *p = producer(n->in[0]);
    ir_value *k = n->in[1];
    if (!p || p->op != IR_OP_CONV) {
        p = producer(n->in[1]);
        k = n->in[0];
    }
    if (!p || p->op != IR_OP_CONV || !is_const(k) || !ir_dtype_is_float(k->type.dtype))
        return false;
    const ir_type *zt = &p->out[0]->type;
    if (!ir_type_same(zt, &n->out[0]->type) || zt->rank < 2 || !ir_dim_is_const(zt->dims[1]) ||
        k->cval.rank > zt->rank)
        return false;
    int64_t C = zt->dims[1].v;
    int ch = 1 - (zt->rank - k->cval.rank);   /* k's dim that lines up with the channel dim */
    for (int i = 0; i < k->cval.rank; i++)
        if (k->cval.dims[i] != 1 && !(i == ch && k->cval.dims[i] == C))
            return false;
    bool per_channel = ch >= 0 && k->cval.dims[ch] == C && C != 1;
    bool mul = n->op == IR_OP_MUL;
    double *s = scratch(f, C), *t = s + C;
    if (!s)
        return false;
    for (int64_t i = 0; i < C; i++) {
        double v = ir_tensor_getf(&k->cval, per_channel ? i : 0);
        s[i] = mul ? v : 1.0;
        t[i] = mul ? 0.0 : v;
    }
    bool ok = fold_affine(f, p, n, s, t, C);
    free(s);
    f->scales += ok;
    return ok;
}

int pass_fold_bn(pass_ctx *c)
{
    ir_graph *g = c->g;
    fb f = {.c = c};
    /* A Conv+BN fold can expose a following Mul or Add, so sweep until
     * nothing folds; every fold removes a node, which bounds the sweeps. */
    for (bool any = true; any;) {
        any = false;
        for (int k = 0; k < g->nnodes; k++) {
            ir_node *n = g->nodes[k];
            if (n->dead || n->nin < 1 || !n->in[0])
                continue;
            c->diag->msg[0] = 0;
            bool done = false;
            if (n->op == IR_OP_BATCH_NORMALIZATION)
                done = fold_batchnorm(&f, n) || bn_to_affine(&f, n);
            else if (n->op == IR_OP_MUL || n->op == IR_OP_ADD)
                done = fold_scale_shift(&f, n);
            if (!done && c->diag->msg[0])
                return -1;
            any |= done;
        }
    }
    if (pass_commit_rewrites(c) < 0)
        return -1;
    pass_stat(c, "batchnorms folded", f.bns);
    pass_stat(c, "scales folded", f.scales);
    if (f.affine)
        pass_stat(c, "batchnorms as scale and shift", f.affine);
    return 0;
}
