/* signal.c - the lower-signal pass. A DFT with a constant axis and length
 * over a static axis becomes a MatMul by its transform matrix
 * (ir_dft_matrix; lower_dft below). An STFT (ir/ref/signal.c) whose
 * frame step and frame length are constants becomes the strided
 * Conv it is, so audio front ends compile onto the convolution kernels:
 *
 *   signal [B, L, C]  (C = 1 real, 2 complex; [B, L] real)
 *     Transpose [0, 2, 1], Unsqueeze 2 -> [B, C, 1, L]  ([B, L]: Unsqueeze 1, 2)
 *     Conv with W [2 K, C, 1, N], strides [1, step] -> [B, 2 K, 1, F]
 *     Reshape [0, 2, K, -1] -> [B, 2, K, F]
 *     Transpose [0, 3, 2, 1] -> [B, F, K, 2]
 *
 * Row k of W is the window times cos(2 pi k n / N) (the real part; with a
 * complex signal, plus sin times its imaginary channel), row K + k minus
 * the window times sin (the imaginary part; plus cos times the imaginary
 * channel); the twiddles are ir_dft_twiddle's (the angle reduced exactly,
 * quarter turns exact) in double, the products with a constant window rounded once (a window
 * computed at run time multiplies the filters there: a Mul the fold pass
 * evaluates when it can). K is N / 2 + 1 bins when onesided, else N. An
 * STFT with a run-time frame step or frame length stays (the interpreter
 * runs it; the backend reports it). The pass runs in every pipeline,
 * after the folding where there is some. */
#include "passes/pass.h"
#include "ir/ops.h"
#include "passes/quant.h"

#include <stdlib.h>

/* op(in) with an ints attribute (key NULL: none), typed by its shape
 * function; NULL on failure (c->diag says why). */
static ir_value *emit(qbuild *q, int op, int nin, ir_value *const *in, const char *key, const int64_t *v, int cnt)
{
    if (q->failed)
        return NULL;
    char buf[256];
    const char *name = ir_graph_fresh_name(q->g, q->n->out[0]->name, "_s", buf, sizeof buf);
    ir_node *nn = ir_graph_add_node(q->g, op, q->n->name, nin, in, 1, &name, q->c->diag);
    if (!nn || (key && ir_node_set_ints(q->g, nn, key, v, cnt) < 0) || ir_infer_node(nn, q->c->diag) < 0) {
        q->failed = true;
        return NULL;
    }
    return nn->out[0];
}

static bool const_int(const ir_value *v, int64_t *out)
{
    if (!v || v->kind != IR_VAL_CONST || v->cval.numel != 1 || !ir_dtype_is_int(v->cval.dtype))
        return false;
    *out = ir_tensor_geti(&v->cval, 0);
    return true;
}

/* 1: rewritten, 0: left as it is, -1: failed. */
static int lower_stft(qbuild *q, ir_node *n)
{
    const ir_value *x = n->in[0], *win = n->nin > 2 ? n->in[2] : NULL, *fl = n->nin > 3 ? n->in[3] : NULL;
    const ir_type *xt = &x->type;
    int64_t step = 0, len = 0;
    bool flat = xt->rank == 2;   /* [B, L]: real */
    if ((!flat && (xt->rank != 3 || !ir_dim_is_const(xt->dims[2]) || (xt->dims[2].v != 1 && xt->dims[2].v != 2))) ||
        !const_int(n->in[1], &step) || step < 1 || (fl && !const_int(fl, &len)))
        return 0;
    /* a window computed at run time multiplies the filters there */
    bool kwin = win && win->kind == IR_VAL_CONST;
    if (win && (win->type.rank != 1 || !ir_dim_is_const(win->type.dims[0])))
        return 0;
    if (!fl) {
        if (!win)
            return 0;
        len = win->type.dims[0].v;
    }
    if (len < 1 || (win && win->type.dims[0].v != len))
        return 0;
    bool onesided = ir_attr_int(n, "onesided", 1) != 0;
    int64_t ch = flat ? 1 : xt->dims[2].v, bins = onesided ? len / 2 + 1 : len;
    if (onesided && ch != 1)
        return 0;
    /* W [2 K, C, 1, N]; filters past 2^26 values (N ~ 5800) stay the
     * interpreter's */
    if ((double)bins * (double)len > (double)(1 << 25) / (double)ch)
        return 0;
    int64_t wd[4] = {2 * bins, ch, 1, len}, cnt = 2 * bins * ch * len;
    double *w = malloc(sizeof *w * (size_t)cnt);
    if (!w)
        return ir_errorf(q->c->diag, "out of memory");
    for (int64_t k = 0; k < bins; k++)
        for (int64_t j = 0; j < len; j++) {
            double co, si, a = kwin ? ir_tensor_getf(&win->cval, j) : 1.0;
            ir_dft_twiddle(k * j, len, &co, &si);
            co *= a;
            si *= a;
            /* re = xr cos + xi sin, im = xi cos - xr sin */
            w[(k * ch + 0) * len + j] = co;
            w[((bins + k) * ch + 0) * len + j] = -si;
            if (ch == 2) {
                w[(k * ch + 1) * len + j] = si;
                w[((bins + k) * ch + 1) * len + j] = co;
            }
        }
    ir_value *wv = qb_konst(q, xt->dtype, 4, wd, w, cnt);
    free(w);
    if (win && !kwin)
        wv = qb_op2(q, IR_OP_MUL, wv, qb_reshape(q, n->in[2], 4, (int64_t[]){1, 1, 1, len}));
    static const int64_t to_cl[] = {0, 2, 1}, back[] = {0, 3, 2, 1};
    int64_t strides[2] = {1, step};
    /* [B, C, 1, L]: [B, L, C] transposed, then a unit H; [B, L] two unit dims */
    ir_value *xc = flat ? n->in[0] : emit(q, IR_OP_TRANSPOSE, 1, (ir_value *[]){n->in[0]}, "perm", to_cl, 3);
    ir_value *ax = flat ? qb_konst(q, IR_I64, 1, (int64_t[]){2}, (double[]){1, 2}, 2)
                        : qb_konst(q, IR_I64, 1, (int64_t[]){1}, (double[]){2}, 1);
    ir_value *xu = emit(q, IR_OP_UNSQUEEZE, 2, (ir_value *[]){xc, ax}, NULL, NULL, 0);
    ir_value *cv = emit(q, IR_OP_CONV, 2, (ir_value *[]){xu, wv}, "strides", strides, 2);
    ir_value *sh = qb_konst(q, IR_I64, 1, (int64_t[]){4}, (double[]){0, 2, (double)bins, -1}, 4);
    ir_value *rs = emit(q, IR_OP_RESHAPE, 2, (ir_value *[]){cv, sh}, NULL, NULL, 0);
    ir_value *y = emit(q, IR_OP_TRANSPOSE, 1, (ir_value *[]){rs}, "perm", back, 4);
    if (q->failed || !y)
        return -1;
    qb_replace_output(q, n, 0, y);
    return 1;
}

/* A DFT with a constant axis and length over a static-length axis: the
 * axis moved next to re/im, the two merged into a line of L C, times the
 * ir_dft_matrix [L C, K Cy] (the reference's arithmetic on unit
 * impulses), split into [K, Cy] and moved back. 1 rewritten, 0 left, -1
 * failed. */
static int lower_dft(qbuild *q, ir_node *n)
{
    const ir_type *xt = &n->in[0]->type;
    int r = xt->rank;
    int64_t a = -2, len = 0;
    bool given = n->nin > 1 && n->in[1];   /* dft_length */
    if (r < 2 || !ir_dim_is_const(xt->dims[r - 1]) || (n->nin > 2 && n->in[2] && !const_int(n->in[2], &a)) ||
        (given && !const_int(n->in[1], &len)))
        return 0;
    int axis = (int)(a < 0 ? a + r : a);
    if (axis < 0 || axis >= r - 1 || !ir_dim_is_const(xt->dims[axis]))
        return 0;
    bool inverse = ir_attr_int(n, "inverse", 0) != 0, onesided = ir_attr_int(n, "onesided", 0) != 0;
    int64_t have = xt->dims[axis].v, ch = xt->dims[r - 1].v, bins, cy;
    if (!given)
        len = inverse && onesided ? 2 * (have - 1) : have;
    if (len < 1 || have < 1 || (ch != 1 && ch != 2))
        return 0;
    ir_dft_bins(have, ch, len, inverse, onesided, &bins, &cy);
    if ((double)have * (double)ch * (double)bins * (double)cy > (double)(1 << 26))
        return 0;   /* a matrix past 2^26 values: the interpreter's */
    double *m = malloc(sizeof *m * (size_t)(have * ch * bins * cy));
    if (!m)
        return ir_errorf(q->c->diag, "out of memory");
    ir_dft_matrix(have, ch, len, inverse, onesided, m);
    ir_value *mv = qb_konst(q, xt->dtype, 2, (int64_t[]){have * ch, bins * cy}, m, have * ch * bins * cy);
    free(m);
    /* perm: the other dims, then the axis, then re/im; back: its inverse */
    int64_t perm[IR_MAX_RANK], back[IR_MAX_RANK], in_shape[IR_MAX_RANK], out_shape[IR_MAX_RANK];
    int k = 0;
    for (int d = 0; d < r - 1; d++)
        if (d != axis)
            perm[k++] = d;
    perm[k++] = axis;
    perm[k++] = r - 1;
    for (int d = 0; d < r; d++)
        back[perm[d]] = d;
    bool moved = axis != r - 2;
    for (int d = 0; d < r - 2; d++)
        in_shape[d] = out_shape[d] = 0;   /* copied */
    in_shape[r - 2] = have * ch;
    out_shape[r - 2] = bins;
    out_shape[r - 1] = cy;
    ir_value *xv = moved ? emit(q, IR_OP_TRANSPOSE, 1, (ir_value *[]){n->in[0]}, "perm", perm, r) : n->in[0];
    double sd[IR_MAX_RANK];
    for (int d = 0; d < r - 1; d++)
        sd[d] = (double)in_shape[d];
    ir_value *line = emit(q, IR_OP_RESHAPE, 2, (ir_value *[]){xv, qb_konst(q, IR_I64, 1, (int64_t[]){r - 1}, sd, r - 1)},
                          NULL, NULL, 0);
    ir_value *prod = emit(q, IR_OP_MATMUL, 2, (ir_value *[]){line, mv}, NULL, NULL, 0);
    for (int d = 0; d < r; d++)
        sd[d] = (double)out_shape[d];
    ir_value *y = emit(q, IR_OP_RESHAPE, 2, (ir_value *[]){prod, qb_konst(q, IR_I64, 1, (int64_t[]){r}, sd, r)}, NULL,
                       NULL, 0);
    if (moved)
        y = emit(q, IR_OP_TRANSPOSE, 1, (ir_value *[]){y}, "perm", back, r);
    if (q->failed || !y)
        return -1;
    qb_replace_output(q, n, 0, y);
    return 1;
}

int pass_lower_signal(pass_ctx *c)
{
    qbuild q = {.c = c, .g = c->g};
    int64_t count = 0, ndft = 0;
    int nn = c->g->nnodes;
    for (int k = 0; k < nn; k++) {
        ir_node *n = c->g->nodes[k];
        if (n->dead || (n->op != IR_OP_STFT && n->op != IR_OP_DFT))
            continue;
        q.n = n;
        q.failed = false;
        int r = n->op == IR_OP_STFT ? lower_stft(&q, n) : lower_dft(&q, n);
        if (r < 0) {
            if (!c->diag->msg[0])
                ir_node_errorf(c->diag, n, "lower-signal: cannot rewrite this node");
            return -1;
        }
        if (r > 0) {
            count += n->op == IR_OP_STFT;
            ndft += n->op == IR_OP_DFT;
            ir_node_erase(n);
            c->changed = true;
        }
    }
    if (pass_commit_rewrites(c) < 0)
        return -1;
    pass_stat(c, "STFT as strided Conv", count);
    pass_stat(c, "DFT as MatMul", ndft);
    return 0;
}
