/* detect.c - the detection heads' ops: RoiAlign and NonMaxSuppression,
 * computed in f64 like the reference (ir/ref/roialign.c, ir/ref/nms.c),
 * static shapes only.
 *
 * RoiAlign: one parallel trip per region; the region's box, bin sizes and
 * sample counts are computed once, then per channel and output bin a
 * loop over the bin's samples (a count known at run time, from the box)
 * reads four corners each and averages or maxes them. A batch index
 * outside the input's batch fails the run with the reference's reason.
 *
 * NonMaxSuppression: its length depends on the values, so it compiles
 * only into the static [rows, 3] the model declares, and a run whose
 * selection has another length fails (the interpreter gives that
 * selection: only the compiled code holds the declared length). One
 * serial trip per batch item and class: the candidates (score above
 * score_threshold) go into a binary heap in the reference's order (score
 * down, then box index up, NaN scores last), a scratch array of N box
 * indices; each step pops the first and checks it against the boxes
 * kept for the class (a second scratch list of their x and y extents,
 * stored when kept; the pick's are computed once). A class costs O(N) to
 * build its heap, O(log N) per candidate examined, and one IoU per
 * examined candidate and kept box.
 */
#include "codegen/lower/sample.h"
#include "ir/ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static bool all_static(const ir_node *n)
{
    for (int i = 0; i < n->nin; i++)
        if (n->in[i] && !ir_type_is_static(&n->in[i]->type))
            return false;
    return ir_type_is_static(&n->out[0]->type);
}

static kir_expr *lw_and(kir_kernel *k, kir_expr *a, kir_expr *b) { return kir_op2(k, KIR_AND, IR_BOOL, a, b); }
static kir_expr *lw_or(kir_kernel *k, kir_expr *a, kir_expr *b) { return kir_op2(k, KIR_OR, IR_BOOL, a, b); }
static kir_expr *lw_not(kir_kernel *k, kir_expr *a) { return kir_op1(k, KIR_NOT, IR_BOOL, a); }
static kir_expr *lw_le(kir_kernel *k, kir_expr *a, kir_expr *b) { return kir_op2(k, KIR_LE, IR_BOOL, a, b); }
static kir_expr *lw_i2f(kir_kernel *k, kir_expr *a) { return kir_op1(k, KIR_CAST, IR_F64, a); }

/* ---- RoiAlign ------------------------------------------------------------------ */

bool can_roi_align(const ir_node *n)
{
    if (n->op != IR_OP_ROI_ALIGN || n->nin != 3 || n->nout != 1 || !all_static(n))
        return false;
    const ir_type *x = &n->in[0]->type, *r = &n->in[1]->type, *bi = &n->in[2]->type;
    const char *mode = ir_attr_string(n, "mode", "avg");
    const char *ct = ir_attr_string(n, "coordinate_transformation_mode", "half_pixel");
    return x->rank == 4 && r->rank == 2 && bi->rank == 1 && r->dims[1].v == 4 && ir_dtype_is_int(bi->dtype) &&
           ir_dtype_is_float(x->dtype) && r->dtype == x->dtype && n->out[0]->type.dtype == x->dtype &&
           (!strcmp(mode, "avg") || !strcmp(mode, "max")) &&
           (!strcmp(ct, "half_pixel") || !strcmp(ct, "output_half_pixel"));
}

/* One axis of a sample (the reference's `corners`): for v inside the map,
 * the low and high index and the weights of each; *out when v is more
 * than one pixel outside. len >= 1. */
typedef struct {
    kir_expr *lo, *hi, *wlo, *whi, *out;
} roi_axis;

static void roi_axis_at(lctx *c, kir_block *b, kir_expr *v, int64_t len, roi_axis *a)
{
    kir_kernel *k = c->k;
    kir_expr *flen = lw_f64c(k, (double)len);
    a->out = lw_or(k, lw_lt(k, v, lw_f64c(k, -1)), lw_lt(k, flen, v));
    kir_expr *v0 = lw_let(c, b, lw_sel(k, lw_lt(k, v, lw_f64c(k, 0)), lw_f64c(k, 0), v));
    /* in [0, len] (an outside v is clamped first, so the cast is defined) */
    kir_expr *lo = lw_let(c, b, kir_op1(k, KIR_CAST, IR_I64, lw_sel(k, lw_lt(k, flen, v0), flen, v0)));
    kir_expr *edge = lw_le(k, lw_i64c(k, len - 1), lo);
    kir_expr *l2 = lw_let(c, b, kir_op3(k, KIR_SELECT, IR_I64, edge, lw_i64c(k, len - 1), lo));
    a->lo = l2;
    a->hi = kir_op3(k, KIR_SELECT, IR_I64, edge, lw_i64c(k, len - 1), lw_iaddc(k, lo, 1));
    kir_expr *frac = lw_let(c, b, lw_fsub(k, lw_sel(k, edge, lw_i2f(k, l2), v0), lw_i2f(k, l2)));
    a->whi = frac;
    a->wlo = lw_fsub(k, lw_f64c(k, 1), frac);
}

int lower_roi_align(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *tx = &n->in[0]->type;
    int64_t B = tx->dims[0].v, C = tx->dims[1].v, H = tx->dims[2].v, W = tx->dims[3].v;
    int64_t R = n->in[2]->type.dims[0].v;
    int64_t oh = ir_attr_int(n, "output_height", 1), ow = ir_attr_int(n, "output_width", 1);
    int64_t sr = ir_attr_int(n, "sampling_ratio", 0);
    const ir_attr *sa = ir_node_attr(n, "spatial_scale");
    double scale = sa ? sa->f : 1.0;
    bool max = !strcmp(ir_attr_string(n, "mode", "avg"), "max");
    bool half = !strcmp(ir_attr_string(n, "coordinate_transformation_mode", "half_pixel"), "half_pixel");
    int rv = kir_new_var(k);
    kir_stmt *l = lw_loop(c, &k->body, rv, lw_i64c(k, R), KIR_PARALLEL);
    if (!l)
        return -1;
    kir_block *body = &l->body;
    kir_expr *r = kir_var(k, rv);
    kir_expr *bidx = lw_let(c, body, kir_op1(k, KIR_CAST, IR_I64, kir_load(k, c->buf[2], &r)));
    kir_stmt *chk = kir_if(k, body, lw_or(k, lw_lt(k, bidx, lw_i64c(k, 0)), lw_le(k, lw_i64c(k, B), bidx)));
    char msg[400];
    snprintf(msg, sizeof msg, "node '%.200s' (RoiAlign): a batch_indices value is outside [0, %lld)", n->name,
             (long long)B);
    if (!chk || !kir_fail(k, &chk->body, msg))
        return -1;
    kir_expr *bc = lw_let(c, body, lw_imin(k, lw_imax(k, bidx, lw_i64c(k, 0)), lw_i64c(k, B > 0 ? B - 1 : 0)));
    /* the box times spatial_scale, less half a pixel for half_pixel */
    kir_expr *box[4];
    for (int j = 0; j < 4; j++) {
        kir_expr *ri[2] = {r, lw_i64c(k, j)};
        box[j] = lw_fsub(k, lw_fmul(k, lw_to_f64(k, kir_load(k, c->buf[1], ri)), lw_f64c(k, scale)),
                         lw_f64c(k, half ? 0.5 : 0));
    }
    kir_expr *sw = lw_let(c, body, box[0]), *sh = lw_let(c, body, box[1]);
    kir_expr *rw = lw_fsub(k, box[2], sw), *rh = lw_fsub(k, box[3], sh);
    if (!half) {
        rw = lw_sel(k, lw_lt(k, lw_f64c(k, 1), rw), rw, lw_f64c(k, 1));
        rh = lw_sel(k, lw_lt(k, lw_f64c(k, 1), rh), rh, lw_f64c(k, 1));
    }
    rw = lw_let(c, body, rw);
    rh = lw_let(c, body, rh);
    kir_expr *bh = lw_let(c, body, lw_fdiv(k, rh, lw_f64c(k, (double)oh)));
    kir_expr *bw = lw_let(c, body, lw_fdiv(k, rw, lw_f64c(k, (double)ow)));
    /* samples per bin side; a region of NaN or huge size samples nothing */
    kir_expr *g[2];
    for (int j = 0; j < 2; j++) {
        kir_expr *gd = sr > 0 ? lw_f64c(k, (double)sr) : kir_op1(k, KIR_CEIL, IR_F64, j ? bw : bh);
        gd = lw_let(c, body, gd);
        kir_expr *ok = lw_and(k, lw_lt(k, lw_f64c(k, 0), gd), lw_lt(k, gd, lw_f64c(k, 4096)));
        g[j] = H == 0 || W == 0 ? lw_i64c(k, 0)
                                : lw_let(c, body, kir_op1(k, KIR_CAST, IR_I64, lw_sel(k, ok, gd, lw_f64c(k, 0))));
    }
    kir_expr *gh = g[0], *gw = g[1];
    kir_expr *ns = lw_let(c, body, kir_imul(k, gh, gw));
    kir_expr *count = lw_i2f(k, lw_imax(k, ns, lw_i64c(k, 1)));
    kir_expr *fgh = lw_let(c, body, lw_i2f(k, gh)), *fgw = lw_let(c, body, lw_i2f(k, gw));
    int cv = kir_new_var(k), phv = kir_new_var(k), pwv = kir_new_var(k), iyv = kir_new_var(k), ixv = kir_new_var(k);
    kir_stmt *lc = lw_loop(c, body, cv, lw_i64c(k, C), KIR_SERIAL);
    kir_stmt *lh = lc ? lw_loop(c, &lc->body, phv, lw_i64c(k, oh), KIR_SERIAL) : NULL;
    kir_stmt *lwv = lh ? lw_loop(c, &lh->body, pwv, lw_i64c(k, ow), KIR_SERIAL) : NULL;
    if (!lwv)
        return -1;
    kir_block *bin = &lwv->body;
    int acc = kir_new_acc(k, IR_F64);
    if (acc < 0 || !kir_acc_set(k, bin, acc, lw_f64c(k, max ? -INFINITY : 0)))
        return -1;
    kir_expr *ch = kir_var(k, cv), *ph = kir_var(k, phv), *pw = kir_var(k, pwv);
    kir_expr *y0 = lw_let(c, bin, lw_fadd(k, sh, lw_fmul(k, lw_i2f(k, ph), bh)));
    kir_expr *x0 = lw_let(c, bin, lw_fadd(k, sw, lw_fmul(k, lw_i2f(k, pw), bw)));
    kir_stmt *ly = lw_loop(c, bin, iyv, gh, KIR_SERIAL);
    if (!ly)
        return -1;
    kir_expr *half_step = lw_f64c(k, 0.5);
    kir_expr *yy = lw_let(c, &ly->body,
                          lw_fadd(k, y0, lw_fdiv(k, lw_fmul(k, lw_fadd(k, lw_i2f(k, kir_var(k, iyv)), half_step), bh), fgh)));
    roi_axis ay, ax;
    roi_axis_at(c, &ly->body, yy, H, &ay);
    kir_stmt *lx = lw_loop(c, &ly->body, ixv, gw, KIR_SERIAL);
    if (!lx)
        return -1;
    kir_block *in = &lx->body;
    kir_expr *xx = lw_let(c, in,
                          lw_fadd(k, x0, lw_fdiv(k, lw_fmul(k, lw_fadd(k, lw_i2f(k, kir_var(k, ixv)), half_step), bw), fgw)));
    roi_axis_at(c, in, xx, W, &ax);
    kir_expr *out = lw_let(c, in, lw_or(k, ay.out, ax.out));
    kir_expr *zero = lw_i64c(k, 0), *fzero = lw_f64c(k, 0);
    kir_expr *ys[2] = {ay.lo, ay.hi}, *xs[2] = {ax.lo, ax.hi}, *wy[2] = {ay.wlo, ay.whi}, *wx[2] = {ax.wlo, ax.whi};
    kir_expr *v = NULL, *sum = NULL;
    for (int q = 0; q < 4; q++) {
        /* outside: every corner reads position 0 with weight 0, as the reference */
        kir_expr *idx[4] = {bc, ch, kir_op3(k, KIR_SELECT, IR_I64, out, zero, ys[q >> 1]),
                            kir_op3(k, KIR_SELECT, IR_I64, out, zero, xs[q & 1])};
        kir_expr *w = lw_sel(k, out, fzero, lw_fmul(k, wy[q >> 1], wx[q & 1]));
        kir_expr *t = lw_let(c, in, lw_fmul(k, w, lw_to_f64(k, kir_load(k, c->buf[0], idx))));
        if (max)
            v = v ? lw_let(c, in, lw_sel(k, lw_lt(k, v, t), t, v)) : t;
        else
            sum = sum ? lw_fadd(k, sum, t) : t;
    }
    kir_expr *a = kir_acc(k, acc);
    /* max: the first sample's value replaces -inf whatever it is (NaN too) */
    kir_expr *nv = max ? lw_sel(k, lw_lt(k, v, a), a, v) : lw_fadd(k, a, sum);
    if (!kir_acc_set(k, in, acc, nv))
        return -1;
    kir_expr *res = max ? lw_sel(k, lw_lt(k, lw_i64c(k, 0), ns), kir_acc(k, acc), fzero)
                        : lw_fdiv(k, kir_acc(k, acc), count);
    kir_expr *oi[4] = {r, ch, ph, pw};
    return kir_store(k, bin, c->out, oi, misc_f64_to_out(c, 0, res, false)) ? 0 : -1;
}

/* ---- NonMaxSuppression ------------------------------------------------------------------ */

/* Input i (2..4) as given with one value: 1; absent or empty: 0; more
 * values (the reference's error): -1. */
static int nms_given(const ir_node *n, int i)
{
    if (i >= n->nin || !n->in[i])
        return 0;
    int64_t numel = 1;
    const ir_type *t = &n->in[i]->type;
    for (int d = 0; d < t->rank; d++)
        numel *= t->dims[d].v;
    return numel == 0 ? 0 : numel == 1 ? 1 : -1;
}

bool can_nms(const ir_node *n)
{
    if (n->op != IR_OP_NON_MAX_SUPPRESSION || n->nout != 1 || !all_static(n))
        return false;
    const ir_type *bx = &n->in[0]->type, *sc = &n->in[1]->type, *o = &n->out[0]->type;
    if (bx->rank != 3 || sc->rank != 3 || bx->dims[2].v != 4 || sc->dims[0].v != bx->dims[0].v ||
        sc->dims[2].v != bx->dims[1].v || o->rank != 2 || o->dims[1].v != 3 || o->dtype != IR_I64 ||
        ir_attr_int(n, "center_point_box", 0) < 0 || ir_attr_int(n, "center_point_box", 0) > 1)
        return false;
    for (int i = 2; i < 5; i++)
        if (nms_given(n, i) < 0)
            return false;
    return true;
}

typedef struct {
    lctx *c;
    kir_expr *b, *cl;  /* the batch item and class */
    bool center;
    int64_t N;         /* boxes */
    int heap, hn;      /* the candidates' heap (scratch) and its length (an accumulator) */
} nms_k;

/* Box i's score in the current class, f64. */
static kir_expr *nms_score(nms_k *q, kir_block *b, kir_expr *i)
{
    kir_expr *at[3] = {q->b, q->cl, i};
    return lw_let(q->c, b, lw_to_f64(q->c->k, kir_load(q->c->k, q->c->buf[1], at)));
}

/* Box i's extent along axis (0: x, 1: y), as the reference's `extent`. */
static void nms_extent(nms_k *q, kir_block *blk, kir_expr *i, int axis, kir_expr **lo, kir_expr **hi)
{
    lctx *c = q->c;
    kir_kernel *k = c->k;
    kir_expr *at[3] = {q->b, i, NULL};
    if (q->center) {
        at[2] = lw_i64c(k, axis);
        kir_expr *m = lw_let(c, blk, lw_to_f64(k, kir_load(k, c->buf[0], at)));
        at[2] = lw_i64c(k, 2 + axis);
        kir_expr *h = lw_let(c, blk, lw_fdiv(k, lw_to_f64(k, kir_load(k, c->buf[0], at)), lw_f64c(k, 2)));
        *lo = lw_let(c, blk, lw_fsub(k, m, h));
        *hi = lw_let(c, blk, lw_fadd(k, m, h));
        return;
    }
    at[2] = lw_i64c(k, 1 - axis);
    kir_expr *u = lw_let(c, blk, lw_to_f64(k, kir_load(k, c->buf[0], at)));
    at[2] = lw_i64c(k, 3 - axis);
    kir_expr *v = lw_let(c, blk, lw_to_f64(k, kir_load(k, c->buf[0], at)));
    kir_expr *lt = lw_let(c, blk, lw_lt(k, u, v));
    *lo = lw_let(c, blk, lw_sel(k, lt, u, v));
    *hi = lw_let(c, blk, lw_sel(k, lt, v, u));
}

/* A box's extents along x and y, and its area ((hi - lo) along x times
 * along y, the reference's product). */
typedef struct {
    kir_expr *lo[2], *hi[2], *area;
} nms_box;

static void nms_box_of(nms_k *q, kir_block *blk, kir_expr *i, nms_box *b)
{
    for (int axis = 0; axis < 2; axis++)
        nms_extent(q, blk, i, axis, &b->lo[axis], &b->hi[axis]);
    kir_kernel *k = q->c->k;
    b->area = lw_let(q->c, blk, lw_fmul(k, lw_fsub(k, b->hi[0], b->lo[0]), lw_fsub(k, b->hi[1], b->lo[1])));
}

/* Whether kept box j suppresses box i (the reference's `suppresses`:
 * IoU above the threshold, boxes of no area overlap nothing). */
static kir_expr *nms_suppresses(nms_k *q, kir_block *blk, const nms_box *i, const nms_box *j, kir_expr *iou)
{
    kir_kernel *k = q->c->k;
    kir_expr *inter = NULL, *ok = NULL;
    for (int axis = 0; axis < 2; axis++) {
        kir_expr *li = i->lo[axis], *hi = i->hi[axis], *lj = j->lo[axis], *hj = j->hi[axis];
        kir_expr *lo = lw_let(q->c, blk, lw_sel(k, lw_lt(k, lj, li), li, lj));
        kir_expr *up = lw_let(q->c, blk, lw_sel(k, lw_lt(k, hi, hj), hi, hj));
        kir_expr *sep = lw_not(k, lw_le(k, up, lo));
        ok = ok ? lw_and(k, ok, sep) : sep;
        kir_expr *d = lw_fsub(k, up, lo);
        inter = inter ? lw_fmul(k, inter, d) : d;
    }
    inter = lw_let(q->c, blk, inter);
    kir_expr *uni = lw_let(q->c, blk, lw_fsub(k, lw_fadd(k, i->area, j->area), inter));
    kir_expr *fz = lw_f64c(k, 0);
    kir_expr *pos = lw_not(k, lw_or(k, lw_or(k, lw_le(k, inter, fz), lw_le(k, i->area, fz)),
                                     lw_or(k, lw_le(k, j->area, fz), lw_le(k, uni, fz))));
    return lw_and(k, lw_and(k, ok, pos), lw_lt(k, iou, lw_fdiv(k, inter, uni)));
}

/* Whether (sa, ia) comes before (sb, ib): score down, NaN last, then
 * index up (ir/ref/nms.c, by_score). */
static kir_expr *nms_before(kir_kernel *k, kir_expr *sa, kir_expr *ia, kir_expr *sb, kir_expr *ib)
{
    kir_expr *na = kir_op2(k, KIR_NE, IR_BOOL, sa, sa), *nb = kir_op2(k, KIR_NE, IR_BOOL, sb, sb);
    kir_expr *tie = lw_or(k, kir_op2(k, KIR_EQ, IR_BOOL, sa, sb), lw_and(k, na, nb));
    return lw_or(k, lw_or(k, lw_lt(k, sb, sa), lw_and(k, lw_not(k, na), nb)), lw_and(k, tie, lw_lt(k, ia, ib)));
}

/* Sifts the heap's item at `start` down: while a child comes before it
 * (the child that comes first), they swap. levels bounds the depth. */
static int nms_sift(nms_k *q, kir_block *b, kir_expr *start, int64_t levels)
{
    lctx *c = q->c;
    kir_kernel *k = c->k;
    int pos = kir_new_acc(k, IR_I64), go = kir_new_acc(k, IR_BOOL), dv = kir_new_var(k);
    if (pos < 0 || go < 0 || !kir_acc_set(k, b, pos, start) || !kir_acc_set(k, b, go, kir_const_i(k, IR_BOOL, 1)))
        return -1;
    kir_stmt *l = lw_loop(c, b, dv, lw_i64c(k, levels), KIR_SERIAL);
    kir_stmt *on = l ? kir_if(k, &l->body, kir_acc(k, go)) : NULL;
    if (!on)
        return -1;
    kir_block *s = &on->body;
    kir_expr *p = lw_let(c, s, kir_acc(k, pos)), *hn = kir_acc(k, q->hn);
    kir_expr *lc = lw_let(c, s, lw_iaddc(k, lw_imulc(k, p, 2), 1));
    kir_expr *rc = lw_let(c, s, lw_iaddc(k, lc, 1));
    kir_expr *last = lw_i64c(k, q->N - 1), *zero = lw_i64c(k, 0);
    kir_expr *li = lw_imin(k, lc, last), *ri = lw_imin(k, rc, last);
    /* a child past the heap's end reads box 0 (its slot was never written) */
    kir_expr *hl = lw_let(c, s, kir_op3(k, KIR_SELECT, IR_I64, lw_lt(k, lc, hn), kir_load(k, q->heap, &li), zero));
    kir_expr *hr = lw_let(c, s, kir_op3(k, KIR_SELECT, IR_I64, lw_lt(k, rc, hn), kir_load(k, q->heap, &ri), zero));
    kir_expr *hp = lw_let(c, s, kir_load(k, q->heap, &p));
    kir_expr *right = lw_and(k, lw_lt(k, rc, hn), nms_before(k, nms_score(q, s, hr), hr, nms_score(q, s, hl), hl));
    kir_expr *cb = lw_let(c, s, kir_op3(k, KIR_SELECT, IR_I64, right, rc, lc));
    kir_expr *hc = lw_let(c, s, kir_op3(k, KIR_SELECT, IR_I64, right, hr, hl));
    kir_expr *up = lw_and(k, lw_lt(k, lc, hn), nms_before(k, nms_score(q, s, hc), hc, nms_score(q, s, hp), hp));
    if (!kir_acc_set(k, s, go, up))
        return -1;
    kir_stmt *sw = kir_if(k, s, kir_acc(k, go));
    if (!sw || !kir_store(k, &sw->body, q->heap, &p, hc) || !kir_store(k, &sw->body, q->heap, &cb, hp))
        return -1;
    return kir_acc_set(k, &sw->body, pos, cb) ? 0 : -1;
}

int lower_nms(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    int64_t B = n->in[0]->type.dims[0].v, N = n->in[0]->type.dims[1].v, C = n->in[1]->type.dims[1].v;
    int64_t cap = n->out[0]->type.dims[0].v;
    nms_k q = {.c = c, .center = ir_attr_int(n, "center_point_box", 0) == 1, .N = N};
    kir_expr *z = lw_i64c(k, 0);
    kir_expr *max_out = nms_given(n, 2) ? lw_let(c, &k->body, lw_scalar_in(c, 2, IR_I64)) : z;
    kir_expr *iou = nms_given(n, 3) ? lw_let(c, &k->body, lw_scalar_in(c, 3, IR_F64)) : lw_f64c(k, 0);
    kir_expr *thr = nms_given(n, 4) ? lw_let(c, &k->body, lw_scalar_in(c, 4, IR_F64)) : NULL;
    int total = kir_new_acc(k, IR_I64), nk = kir_new_acc(k, IR_I64), keep = kir_new_acc(k, IR_BOOL);
    q.hn = kir_new_acc(k, IR_I64);
    int kept = N > 0 ? kir_add_scratch(k, "nms_kept", KIR_SPACE_KERNEL, IR_F64, 2, (int64_t[]){N, 4}) : -1;
    q.heap = N > 0 ? kir_add_scratch(k, "nms_heap", KIR_SPACE_KERNEL, IR_I64, 1, (int64_t[]){N}) : -1;
    if (total < 0 || nk < 0 || keep < 0 || q.hn < 0 || (N > 0 && (kept < 0 || q.heap < 0)) ||
        !kir_acc_set(k, &k->body, total, z))
        return -1;
    int64_t levels = 0;
    while (levels < 63 && (int64_t)1 << levels <= N)
        levels++;
    int bv = kir_new_var(k), cv = kir_new_var(k), jv = kir_new_var(k), tv = kir_new_var(k), mv = kir_new_var(k);
    int pv = kir_new_var(k);
    kir_stmt *lb = N > 0 ? lw_loop(c, &k->body, bv, lw_i64c(k, B), KIR_SERIAL) : NULL;
    kir_stmt *lc = lb ? lw_loop(c, &lb->body, cv, lw_i64c(k, C), KIR_SERIAL) : NULL;
    if (N > 0 && !lc)
        return -1;
    if (lc) {
        kir_block *cls = &lc->body;
        q.b = kir_var(k, bv);
        q.cl = kir_var(k, cv);
        /* the candidates into the heap, then heapified */
        if (!kir_acc_set(k, cls, q.hn, z) || !kir_acc_set(k, cls, nk, z))
            return -1;
        kir_stmt *lj = lw_loop(c, cls, jv, lw_i64c(k, N), KIR_SERIAL);
        if (!lj)
            return -1;
        kir_expr *j = kir_var(k, jv);
        kir_stmt *cand = thr ? kir_if(k, &lj->body, lw_lt(k, thr, nms_score(&q, &lj->body, j))) : NULL;
        kir_block *cb = thr ? (cand ? &cand->body : NULL) : &lj->body;
        kir_expr *hn = kir_acc(k, q.hn);
        if (!cb || !kir_store(k, cb, q.heap, &hn, j) || !kir_acc_set(k, cb, q.hn, lw_iaddc(k, kir_acc(k, q.hn), 1)))
            return -1;
        kir_stmt *lt = lw_loop(c, cls, tv, lw_i64c(k, N / 2), KIR_SERIAL);
        if (!lt)
            return -1;
        kir_expr *at = lw_let(c, &lt->body, kir_op2(k, KIR_SUB, IR_I64, lw_iaddc(k, lw_idivc(k, kir_acc(k, q.hn), 2), -1),
                                                   kir_var(k, tv)));
        kir_stmt *inside = kir_if(k, &lt->body, lw_le(k, z, at));
        if (!inside || nms_sift(&q, &inside->body, at, levels) < 0)
            return -1;
        /* greedy: the heap's first, kept unless a kept box suppresses it */
        kir_stmt *lm = lw_loop(c, cls, mv, lw_i64c(k, N), KIR_SERIAL);
        kir_stmt *live = lm ? kir_if(k, &lm->body, lw_and(k, lw_lt(k, z, kir_acc(k, q.hn)),
                                                          lw_lt(k, kir_acc(k, nk), max_out)))
                            : NULL;
        if (!live)
            return -1;
        kir_block *g = &live->body;
        kir_expr *pick = lw_let(c, g, kir_load(k, q.heap, &z));
        kir_expr *end = lw_let(c, g, lw_iaddc(k, kir_acc(k, q.hn), -1));
        if (!kir_store(k, g, q.heap, &z, kir_load(k, q.heap, &end)) || !kir_acc_set(k, g, q.hn, end) ||
            nms_sift(&q, g, z, levels) < 0 || !kir_acc_set(k, g, keep, kir_const_i(k, IR_BOOL, 1)))
            return -1;
        nms_box pb, kb;
        nms_box_of(&q, g, pick, &pb);
        kir_stmt *lp = kir_for(k, g, pv, z, kir_acc(k, nk), KIR_SERIAL, 0);
        if (!lp)
            return -1;
        kir_expr *pp = kir_var(k, pv);
        /* a kept box's extents, stored when it was kept */
        for (int f = 0; f < 4; f++) {
            kir_expr *ki[2] = {pp, lw_i64c(k, f)};
            kir_expr *v = lw_let(c, &lp->body, kir_load(k, kept, ki));
            *(f & 1 ? &kb.hi[f >> 1] : &kb.lo[f >> 1]) = v;
        }
        kb.area = lw_let(c, &lp->body, lw_fmul(k, lw_fsub(k, kb.hi[0], kb.lo[0]), lw_fsub(k, kb.hi[1], kb.lo[1])));
        kir_expr *sup = nms_suppresses(&q, &lp->body, &pb, &kb, iou);
        if (!kir_acc_set(k, &lp->body, keep, lw_and(k, kir_acc(k, keep), lw_not(k, sup))))
            return -1;
        kir_stmt *take = kir_if(k, g, kir_acc(k, keep));
        if (!take)
            return -1;
        kir_block *t = &take->body;
        kir_expr *nkv = kir_acc(k, nk), *row = kir_acc(k, total);
        for (int f = 0; f < 4; f++) {
            kir_expr *ki[2] = {nkv, lw_i64c(k, f)};
            if (!kir_store(k, t, kept, ki, f & 1 ? pb.hi[f >> 1] : pb.lo[f >> 1]))
                return -1;
        }
        kir_stmt *fits = kir_if(k, t, lw_lt(k, row, lw_i64c(k, cap)));
        if (!fits)
            return -1;
        kir_expr *vals[3] = {q.b, q.cl, pick};
        for (int f = 0; f < 3; f++) {
            kir_expr *oi[2] = {row, lw_i64c(k, f)};
            if (!kir_store(k, &fits->body, c->out, oi, vals[f]))
                return -1;
        }
        if (!kir_acc_set(k, t, nk, lw_iaddc(k, kir_acc(k, nk), 1)) ||
            !kir_acc_set(k, t, total, lw_iaddc(k, kir_acc(k, total), 1)))
            return -1;
    }
    kir_stmt *bad = kir_if(k, &k->body, kir_op2(k, KIR_NE, IR_BOOL, kir_acc(k, total), lw_i64c(k, cap)));
    char msg[400];
    snprintf(msg, sizeof msg, "node '%.200s' (NonMaxSuppression): the selection's length is not the %lld rows "
             "the output holds", n->name, (long long)cap);
    return bad && kir_fail(k, &bad->body, msg) ? 0 : -1;
}
