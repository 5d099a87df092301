/* nms.c - NonMaxSuppression: per batch and class, the boxes whose score
 * passes score_threshold, taken greedily by score (ties: the lower box
 * index first; NaN scores after every number) while fewer than
 * max_output_boxes_per_class are chosen, each kept only if its IoU with
 * every box already chosen is at most iou_threshold. Boxes are corners in either order (center_point_box=0)
 * or [x_center, y_center, width, height]; a box of no area overlaps
 * nothing. The result is i64 [count, 3] rows of (batch, class, box) in
 * that order, so its length depends on the values: the shape function
 * runs the selection when it knows every input (as the interpreter
 * always does) and leaves the length unknown otherwise. Compiled code
 * (codegen/lower/detect.c) fills a declared static length. */
#include "ir/ref/ref.h"

#include <stdlib.h>

typedef struct {
    const ir_tensor *boxes, *scores;
    int64_t max_out;
    double iou, score;
    bool has_score;
    int center;
    int64_t B, C, N;
} nms_run;

/* The box's extent along one axis: from lo/hi as given (corners in any
 * order), or from a center and a size. */
static void extent(const nms_run *q, int64_t b, int64_t i, int axis, double *lo, double *hi)
{
    const ir_tensor *t = q->boxes;
    int64_t o = (b * q->N + i) * 4;
    if (q->center) {
        double c = ir_tensor_getf(t, o + axis), half = ir_tensor_getf(t, o + 2 + axis) / 2;
        *lo = c - half;
        *hi = c + half;
        return;
    }
    /* corners: [y1, x1, y2, x2], axis 0 is x like the center form */
    double u = ir_tensor_getf(t, o + 1 - axis), v = ir_tensor_getf(t, o + 3 - axis);
    *lo = u < v ? u : v;
    *hi = u < v ? v : u;
}

static bool suppresses(const nms_run *q, int64_t b, int64_t i, int64_t j)
{
    double inter = 1, area_i = 1, area_j = 1;
    for (int axis = 0; axis < 2; axis++) {
        double li, hi, lj, hj;
        extent(q, b, i, axis, &li, &hi);
        extent(q, b, j, axis, &lj, &hj);
        double lo = li > lj ? li : lj, up = hi < hj ? hi : hj;
        if (up <= lo)
            return false;
        inter *= up - lo;
        area_i *= hi - li;
        area_j *= hj - lj;
    }
    double uni = area_i + area_j - inter;
    if (inter <= 0 || area_i <= 0 || area_j <= 0 || uni <= 0)
        return false;
    return inter / uni > q->iou;
}

typedef struct {
    double s;
    int64_t i;
} cand;

static int by_score(const void *pa, const void *pb)
{
    const cand *a = pa, *b = pb;
    bool na = a->s != a->s, nb = b->s != b->s;
    if (na != nb)
        return na ? 1 : -1;
    if (!na && a->s != b->s)
        return a->s > b->s ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* The selection: its length, and its rows into out (NULL: count only).
 * -1 with d set on out of memory. */
static int64_t select_boxes(const nms_run *q, int64_t *out, const ir_node *n, icc_diag *d)
{
    if (q->max_out <= 0 || q->N == 0)
        return 0;
    cand *c = malloc(sizeof *c * (size_t)q->N);
    int64_t *kept = malloc(sizeof *kept * (size_t)q->N);
    if (!c || !kept) {
        free(c);
        free(kept);
        return ir_node_errorf(d, n, "out of memory");
    }
    int64_t total = 0;
    for (int64_t b = 0; b < q->B; b++)
        for (int64_t k = 0; k < q->C; k++) {
            int64_t nc = 0, nk = 0;
            for (int64_t i = 0; i < q->N; i++) {
                double s = ir_tensor_getf(q->scores, (b * q->C + k) * q->N + i);
                if (!q->has_score || s > q->score)
                    c[nc++] = (cand){s, i};
            }
            qsort(c, (size_t)nc, sizeof *c, by_score);
            for (int64_t m = 0; m < nc && nk < q->max_out; m++) {
                bool keep = true;
                for (int64_t p = 0; p < nk && keep; p++)
                    keep = !suppresses(q, b, c[m].i, kept[p]);
                if (!keep)
                    continue;
                kept[nk++] = c[m].i;
                if (out) {
                    out[total * 3] = b;
                    out[total * 3 + 1] = k;
                    out[total * 3 + 2] = c[m].i;
                }
                total++;
            }
        }
    free(c);
    free(kept);
    return total;
}

static bool given(const ir_type *const *in, int nin, int i)
{
    return i < nin && in[i];
}

/* Checks the inputs' types; fills q's sizes when the ranks say them. */
static int nms_check(ir_shape_ctx *c, nms_run *q)
{
    const ir_type *bx = c->in[0], *sc = c->in[1];
    if (!ir_dtype_is_float(bx->dtype) || sc->dtype != bx->dtype)
        return ir_node_errorf(c->diag, c->node, "boxes and scores must be one float type, got %s and %s",
                              ir_dtype_name(bx->dtype), ir_dtype_name(sc->dtype));
    if ((bx->rank >= 0 && bx->rank != 3) || (sc->rank >= 0 && sc->rank != 3))
        return ir_node_errorf(c->diag, c->node, "boxes [batch, boxes, 4] and scores [batch, classes, boxes] "
                              "must be 3-D, got ranks %d and %d", bx->rank, sc->rank);
    if (bx->rank == 3 && ir_dim_is_const(bx->dims[2]) && bx->dims[2].v != 4)
        return ir_node_errorf(c->diag, c->node, "boxes must have 4 coordinates per box, got %lld",
                              (long long)bx->dims[2].v);
    if (bx->rank == 3 && sc->rank == 3) {
        for (int k = 0; k < 2; k++) {
            ir_dim a = bx->dims[k], b = sc->dims[k ? 2 : 0];
            if (ir_dim_is_const(a) && ir_dim_is_const(b) && a.v != b.v)
                return ir_node_errorf(c->diag, c->node, "boxes and scores disagree on the %s (%lld vs %lld)",
                                      k ? "box count" : "batch", (long long)a.v, (long long)b.v);
        }
    }
    static const char *const what[3] = {"max_output_boxes_per_class", "iou_threshold", "score_threshold"};
    for (int i = 2; i < 5; i++) {
        if (!given(c->in, c->nin, i))
            continue;
        const ir_type *t = c->in[i];
        bool ok = i == 2 ? ir_dtype_is_int(t->dtype) : ir_dtype_is_float(t->dtype);
        if (!ok || (t->rank >= 0 && t->rank > 1))
            return ir_node_errorf(c->diag, c->node, "%s must be a %s scalar (or one value)", what[i - 2],
                                  i == 2 ? "integer" : "float");
    }
    const ir_attr *a = ir_node_attr(c->node, "center_point_box");
    q->center = a ? (int)a->i : 0;
    if (q->center != 0 && q->center != 1)
        return ir_node_errorf(c->diag, c->node, "center_point_box must be 0 or 1, got %lld", (long long)a->i);
    return 0;
}

/* q from the values (every one known); -1 with d set when one is bad. */
static int nms_values(const ir_node *n, const ir_tensor *const *v, int nin, nms_run *q, icc_diag *d)
{
    q->boxes = v[0];
    q->scores = v[1];
    q->B = v[0]->dims[0];
    q->N = v[0]->dims[1];
    q->C = v[1]->dims[1];
    if (v[1]->dims[0] != q->B || v[1]->dims[2] != q->N || v[0]->dims[2] != 4)
        return ir_node_errorf(d, n, "boxes [%lld, %lld, %lld] and scores [%lld, %lld, %lld] do not match",
                              (long long)v[0]->dims[0], (long long)v[0]->dims[1], (long long)v[0]->dims[2],
                              (long long)v[1]->dims[0], (long long)v[1]->dims[1], (long long)v[1]->dims[2]);
    const ir_tensor *mo = nin > 2 ? v[2] : NULL, *iou = nin > 3 ? v[3] : NULL, *st = nin > 4 ? v[4] : NULL;
    for (int i = 2; i < nin && i < 5; i++)
        if (v[i] && v[i]->numel > 1)
            return ir_node_errorf(d, n, "input %d must hold one value, got %lld", i, (long long)v[i]->numel);
    q->max_out = mo && mo->numel ? ir_tensor_geti(mo, 0) : 0;
    q->iou = iou && iou->numel ? ir_tensor_getf(iou, 0) : 0;
    q->has_score = st && st->numel;
    q->score = q->has_score ? ir_tensor_getf(st, 0) : 0;
    return 0;
}

int shape_nms(ir_shape_ctx *c)
{
    nms_run q = {0};
    if (nms_check(c, &q) < 0)
        return -1;
    ir_type *o = &c->out[0];
    ir_type_unknown(o, IR_I64, 2);
    o->dims[1] = ir_dim_const(3);
    bool all = c->val[0] && c->val[1];
    for (int i = 2; i < c->nin; i++)
        all &= !c->in[i] || c->val[i];
    if (!all)
        return 0;
    if (nms_values(c->node, c->val, c->nin, &q, c->diag) < 0)
        return -1;
    int64_t count = select_boxes(&q, NULL, c->node, c->diag);
    if (count < 0)
        return -1;
    o->dims[0] = ir_dim_const(count);
    return 0;
}

int ref_nms(ir_ref_ctx *c)
{
    nms_run q = {0};
    const ir_attr *a = ir_node_attr(c->node, "center_point_box");
    q.center = a ? (int)a->i : 0;
    if (nms_values(c->node, c->in, c->nin, &q, c->diag) < 0)
        return -1;
    int64_t count = select_boxes(&q, NULL, c->node, c->diag);
    if (count < 0)
        return -1;
    if (count != c->out[0]->dims[0])
        return ir_node_errorf(c->diag, c->node, "selected %lld boxes where the output holds %lld",
                              (long long)count, (long long)c->out[0]->dims[0]);
    return select_boxes(&q, c->out[0]->data, c->node, c->diag) < 0 ? -1 : 0;
}
