/* opset.c - old-opset adapters: rewrites a node written against an older
 * ONNX opset into the form of the newest opset, which is what IR ops mean
 * (ir/ops.def).
 *
 * Most changes over the opsets moved attributes into inputs (Reduce* axes,
 * Squeeze/Unsqueeze axes, Split split, Slice starts/ends/axes, Clip
 * min/max, Pad pads/value, TopK k, Reshape shape); those become constants.
 * Others changed semantics: Softmax/LogSoftmax/Hardmax before 13 coerce
 * the input to 2-D at `axis` (rewritten as Flatten -> op(axis=1) ->
 * Reshape to the input's shape, unless the rank is already known to make
 * it the last axis), binary ops before 7 broadcast B from `axis` (B gets
 * trailing unit dims), PRelu before 7 applies a 1-D slope per channel,
 * Resize 10 and Upsample used asymmetric coordinates; LSTM, GRU and RNN
 * before 7 had an output_sequence attribute, which is dropped. Attributes an old
 * opset allowed and the new one doesn't are dropped when they have their
 * default meaning, otherwise the node is reported as unsupported.
 */
#include "frontend/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int fe_adapted_op(const char *op_type)
{
    if (!strcmp(op_type, "Upsample"))
        return IR_OP_RESIZE;
    return -1;
}

static int node_err(fe_lower *l, const char *fmt, const char *a, int v)
{
    char buf[300];
    snprintf(buf, sizeof buf, fmt, a, v);
    return fe_node_errorf(fe_diag(l->c), l->src, "%s", buf);
}

/* Takes attribute name of kind k; 1 if present, 0 if absent, -1 (with a
 * message) if present with another kind. */
static int take(fe_lower *l, const char *name, ir_attr_kind k, ir_attr *a)
{
    if (!fe_attr_take(l, name, a))
        return 0;
    /* Empty lists carry no kind in the file. */
    bool lists = (k == IR_ATTR_INTS || k == IR_ATTR_FLOATS) &&
                 (a->kind == IR_ATTR_INTS || a->kind == IR_ATTR_FLOATS) && a->n == 0;
    if (a->kind != k && !lists)
        return node_err(l, "attribute '%s' has the wrong kind (opset %d)", name, l->src->opset);
    return 1;
}

/* Moves INTS attribute `name` into input slot idx as an i64 constant. */
static int ints_to_input(fe_lower *l, const char *name, int idx, bool required)
{
    ir_attr a;
    int r = take(l, name, IR_ATTR_INTS, &a);
    if (r <= 0)
        return r < 0 ? -1 : required ? node_err(l, "required attribute '%s' is missing (opset %d)",
                                                name, l->src->opset)
                                     : 0;
    if (idx < l->nin && l->in[idx])
        return node_err(l, "'%s' is given both as attribute and as input (opset %d)", name,
                        l->src->opset);
    int64_t n = a.n;
    ir_value *v = fe_const(l, name, IR_I64, 1, &n, a.ints);
    return v ? fe_set_input(l, idx, v) : -1;
}

static int set_string(fe_lower *l, const char *name, const char *s)
{
    ir_attr a = {.name = name, .kind = IR_ATTR_STRING, .s = (char *)s};
    return fe_attr_add(l, &a);
}

static int set_int(fe_lower *l, const char *name, int64_t v)
{
    ir_attr a = {.name = name, .kind = IR_ATTR_INT, .i = v};
    return fe_attr_add(l, &a);
}

/* Split: `split` attribute -> input (< 13); an even split gets the
 * num_outputs attribute that opset 18 requires. */
static int adapt_split(fe_lower *l, int v)
{
    if (v < 13 && ints_to_input(l, "split", 1, false) < 0)
        return -1;
    if (v < 18 && (l->nin < 2 || !l->in[1]) && !fe_attr_find(l, "num_outputs"))
        return set_int(l, "num_outputs", l->nout);
    return 0;
}

/* Clip < 11: min/max attributes -> scalar inputs of the input's dtype. */
static int adapt_clip(fe_lower *l)
{
    static const char *const names[2] = {"min", "max"};
    ir_value *x = l->in[0];
    for (int k = 0; k < 2; k++) {
        ir_attr a;
        int r = take(l, names[k], IR_ATTR_FLOAT, &a);
        if (r < 0)
            return -1;
        if (r == 0)
            continue;
        if (!x)
            return node_err(l, "has no input%s (opset %d)", "", l->src->opset);
        ir_value *s = fe_scalar_like(l, names[k], x, a.f);
        if (!s || fe_set_input(l, 1 + k, s) < 0)
            return -1;
    }
    return 0;
}

/* Pad < 11: pads (or opset 1's paddings) and value attributes -> inputs. */
static int adapt_pad(fe_lower *l)
{
    ir_attr a;
    int r = take(l, "pads", IR_ATTR_INTS, &a);
    if (r == 0 && fe_attr_find(l, "paddings")) {
        ir_attr *p = fe_attr_find(l, "paddings");
        p->name = "pads";
        r = take(l, "pads", IR_ATTR_INTS, &a);
    }
    if (r < 0)
        return -1;
    if (r == 0)
        return node_err(l, "required attribute '%s' is missing (opset %d)", "pads", l->src->opset);
    int64_t n = a.n;
    ir_value *pads = fe_const(l, "pads", IR_I64, 1, &n, a.ints);
    if (!pads || fe_set_input(l, 1, pads) < 0)
        return -1;
    if ((r = take(l, "value", IR_ATTR_FLOAT, &a)) < 0)
        return -1;
    if (r && a.f != 0.0f) {
        if (!l->in[0])
            return node_err(l, "has no input%s (opset %d)", "", l->src->opset);
        ir_value *s = fe_scalar_like(l, "value", l->in[0], a.f);
        if (!s || fe_set_input(l, 2, s) < 0)
            return -1;
    }
    return 0;
}

/* Resize / Upsample. Opset 10's Resize and every Upsample map output
 * coordinates to input coordinates asymmetrically (x_in = x_out / scale);
 * their nearest pixel is floor when upsampling and ceil when downsampling,
 * as onnxruntime implements them. */
static const char *nearest_for_scales(fe_lower *l, const ir_value *scales)
{
    if (!scales || scales->kind != IR_VAL_CONST)
        return "floor"; /* unknown scales: upsampling, what these ops were for */
    bool up = false, down = false;
    for (int64_t i = 0; i < scales->cval.numel; i++) {
        double s = ir_tensor_getf(&scales->cval, i);
        up |= s > 1.0;
        down |= s < 1.0;
    }
    if (up && down) {
        node_err(l, "mixes up- and downsampling in nearest mode%s (opset %d); not supported", "",
                 l->src->opset);
        return NULL;
    }
    return down ? "ceil" : "floor";
}

static int adapt_old_resize(fe_lower *l, ir_value *scales)
{
    ir_attr mode;
    int r = take(l, "mode", IR_ATTR_STRING, &mode);
    if (r < 0)
        return -1;
    const char *m = r ? mode.s : "nearest";
    if (!strcmp(m, "bilinear"))
        m = "linear";
    if (strcmp(m, "nearest") && strcmp(m, "linear"))
        return node_err(l, "mode '%.100s' is not supported (opset %d)", m, l->src->opset);
    ir_value *x = l->nin ? l->in[0] : NULL;
    l->nin = 0;
    if (fe_set_input(l, 0, x) < 0 || fe_set_input(l, 2, scales) < 0)
        return -1;
    if (set_string(l, "mode", m) < 0 ||
        set_string(l, "coordinate_transformation_mode", "asymmetric") < 0)
        return -1;
    if (!strcmp(m, "nearest")) {
        const char *nm = nearest_for_scales(l, scales);
        if (!nm || set_string(l, "nearest_mode", nm) < 0)
            return -1;
    }
    return 0;
}

static int adapt_upsample(fe_lower *l, int v)
{
    if (v < 7)
        return node_err(l, "Upsample%s before opset 7 is not supported (opset %d)", "", v);
    ir_value *scales = l->nin > 1 ? l->in[1] : NULL;
    if (v < 9) {
        ir_attr a;
        int r = take(l, "scales", IR_ATTR_FLOATS, &a);
        if (r < 0)
            return -1;
        if (r == 0)
            return node_err(l, "required attribute '%s' is missing (opset %d)", "scales", v);
        int64_t n = a.n;
        if (!(scales = fe_const(l, "scales", IR_F32, 1, &n, a.floats)))
            return -1;
    }
    if (!scales)
        return node_err(l, "has no '%s' input (opset %d)", "scales", v);
    return adapt_old_resize(l, scales);
}

static int adapt_resize(fe_lower *l, int v)
{
    if (v < 11)
        return adapt_old_resize(l, l->nin > 1 ? l->in[1] : NULL);
    /* Exporters pass empty tensors where newer opsets omit the input. */
    for (int i = 1; i < l->nin; i++)
        if (l->in[i] && l->in[i]->kind == IR_VAL_CONST && l->in[i]->cval.numel == 0)
            l->in[i] = NULL;
    return 0;
}

/* BatchNormalization: legacy attributes dropped when they mean inference. */
static int adapt_batchnorm(fe_lower *l, int v)
{
    ir_attr a;
    int r;
    if (v < 9) {
        if ((r = take(l, "spatial", IR_ATTR_INT, &a)) < 0)
            return -1;
        if (r && a.i != 1)
            return node_err(l, "attribute '%s' = 0 (per-element statistics) is not supported "
                            "(opset %d)", "spatial", v);
    }
    if (v < 7 && take(l, "is_test", IR_ATTR_INT, &a) < 0)
        return -1;
    if (l->nout > 1)
        return node_err(l, "training-mode outputs%s (running mean and variance) are not supported "
                        "(opset %d)", "", v);
    return 0;
}

/* Softmax, LogSoftmax, Hardmax < 13: the input is coerced to 2-D [prod(d[:axis]),
 * prod(d[axis:])] and normalized along the second dim. */
static int adapt_softmax(fe_lower *l)
{
    ir_attr a;
    int r = take(l, "axis", IR_ATTR_INT, &a);
    if (r < 0)
        return -1;
    int64_t axis = r ? a.i : 1;
    ir_value *x = l->nin ? l->in[0] : NULL;
    if (!x)
        return 0;
    int rank = x->type.rank;
    if (rank >= 1) {
        int64_t ax = axis < 0 ? axis + rank : axis;
        if (ax == rank - 1)
            return set_int(l, "axis", ax);
    }
    ir_attr fa = {.name = "axis", .kind = IR_ATTR_INT, .i = axis};
    ir_attr one = {.name = "axis", .kind = IR_ATTR_INT, .i = 1};
    ir_node *flat = fe_emit(l, IR_OP_FLATTEN, "flatten", 1, &x, 1, NULL, &fa, 1);
    if (!flat)
        return -1;
    ir_node *sm = fe_emit(l, l->op, "2d", 1, flat->out, 1, NULL, &one, 1);
    if (!sm)
        return -1;
    ir_node *shp = fe_emit(l, IR_OP_SHAPE, "shape", 1, &x, 1, NULL, NULL, 0);
    if (!shp)
        return -1;
    ir_value *rin[2] = {sm->out[0], shp->out[0]};
    if (!fe_emit(l, IR_OP_RESHAPE, NULL, 2, rin, l->nout, l->out, NULL, 0))
        return -1;
    l->done = true;
    return 0;
}

static ir_value *unit_dims_after(fe_lower *l, ir_value *v, int n);

/* Binary ops < 7: with broadcast=1 and axis, B's dims line up with A's
 * starting at axis; numpy broadcasting needs B padded with unit dims. */
static int adapt_legacy_broadcast(fe_lower *l)
{
    ir_attr b, ax;
    int rb = take(l, "broadcast", IR_ATTR_INT, &b), ra = take(l, "axis", IR_ATTR_INT, &ax);
    if (rb < 0 || ra < 0)
        return -1;
    /* broadcast=0 demands equal shapes and no axis means suffix alignment:
     * numpy broadcasting agrees with both. */
    if (!rb || !b.i || !ra || l->nin < 2 || !l->in[0] || !l->in[1])
        return 0;
    ir_value *A = l->in[0], *B = l->in[1];
    if (A->type.rank < 0 || B->type.rank < 0)
        return node_err(l, "broadcast with '%s' needs the ranks of both inputs, which are not "
                        "known (opset %d)", "axis", l->src->opset);
    int64_t rA = A->type.rank, rB = B->type.rank;
    int64_t axis = ax.i < 0 ? ax.i + rA : ax.i;
    if (axis < 0 || axis > rA - rB)
        return node_err(l, "broadcast '%s' is out of range (opset %d)", "axis", l->src->opset);
    int64_t extra = rA - axis - rB;
    if (extra == 0)
        return 0;
    ir_value *u = unit_dims_after(l, B, (int)extra);
    if (!u)
        return -1;
    l->in[1] = u;
    return 0;
}

/* Appends n unit dims to v (Unsqueeze at the end). */
static ir_value *unit_dims_after(fe_lower *l, ir_value *v, int n)
{
    int64_t axes[IR_MAX_RANK], cnt = n;
    for (int i = 0; i < n; i++)
        axes[i] = v->type.rank + i;
    ir_value *av = fe_const(l, "axes", IR_I64, 1, &cnt, axes);
    if (!av)
        return NULL;
    ir_value *uin[2] = {v, av};
    ir_node *u = fe_emit(l, IR_OP_UNSQUEEZE, "bcast", 2, uin, 1, NULL, NULL, 0);
    return u ? u->out[0] : NULL;
}

/* PRelu < 7: a 1-D slope is per channel (dim 1), not numpy-aligned. */
static int adapt_prelu(fe_lower *l)
{
    if (l->nin < 2 || !l->in[0] || !l->in[1])
        return 0;
    ir_value *x = l->in[0], *s = l->in[1];
    if (s->type.rank != 1 || (ir_dim_is_const(s->type.dims[0]) && s->type.dims[0].v == 1))
        return 0;
    if (x->type.rank < 0)
        return node_err(l, "a per-channel slope needs the input's rank, which is not known%s "
                        "(opset %d)", "", l->src->opset);
    if (x->type.rank <= 2)
        return 0;
    ir_value *u = unit_dims_after(l, s, x->type.rank - 2);
    if (!u)
        return -1;
    l->in[1] = u;
    return 0;
}

/* Cast < 6 names the target type as a string ("FLOAT"). */
static int adapt_cast(fe_lower *l)
{
    ir_attr *a = fe_attr_find(l, "to");
    if (!a || a->kind != IR_ATTR_STRING)
        return 0;
    for (int code = 1; code < 64; code++) {
        const char *nm = ir_onnx_dtype_name(code);
        if (!strcasecmp(nm, a->s)) {
            a->kind = IR_ATTR_INT;
            a->i = code;
            return 0;
        }
        if (!strcmp(nm, "unknown"))
            break;
    }
    return node_err(l, "unknown target type '%.100s' (opset %d)", a->s, l->src->opset);
}

/* Scan-8 runs its body once per item of a batch (dim 0 of every state
 * and scan input; the scan axis is 1), with input 0, sequence_lens,
 * bounding each item's length. It becomes one Scan (the newest form) per
 * item, on the items Gather'd out, with the results Unsqueeze'd and
 * Concat'ed back into the batch: which needs the batch size known, and
 * sequence_lens absent (every item at full length). */
static int adapt_scan8(fe_lower *l)
{
    int formal = l->nin - l->ncap;
    if (formal >= 1 && l->in[0])
        return node_err(l, "%s is not supported (opset %d)", "sequence_lens", l->src->opset);
    int64_t B = -1;
    for (int k = 1; k < formal && B < 0; k++)
        if (l->in[k] && l->in[k]->type.rank >= 1 && ir_dim_is_const(l->in[k]->type.dims[0]))
            B = l->in[k]->type.dims[0].v;
    if (B < 1 || B > 4096)
        return node_err(l, "needs a static batch dim between 1 and 4096 (%s %d)", "opset", l->src->opset);
    ir_attr body, m, dirs, attrs[3];
    int na = 0;
    if (!fe_attr_take(l, "body", &body) || !fe_attr_take(l, "num_scan_inputs", &m))
        return node_err(l, "needs attributes body and num_scan_inputs (%s %d)", "opset", l->src->opset);
    attrs[na++] = body;
    attrs[na++] = m;
    if (fe_attr_take(l, "directions", &dirs)) {
        dirs.name = "scan_input_directions";
        attrs[na++] = dirs;
    }
    if (l->nattr)
        return node_err(l, "attribute '%.100s' is not supported (opset %d)", l->attrs[0].name,
                        l->src->opset);
    int nin = formal - 1, nout = l->nout;
    ir_value **in = calloc((size_t)(nin + l->ncap) + 1, sizeof *in);
    ir_value **outs = calloc((size_t)(nout * B) + 1, sizeof *outs);
    int rc = -1;
    if (!in || !outs) {
        ir_errorf(fe_diag(l->c), "out of memory");
        goto done;
    }
    memcpy(in + nin, l->in + formal, sizeof *in * (size_t)l->ncap);
    for (int64_t b = 0; b < B; b++) {
        char sfx[64];
        snprintf(sfx, sizeof sfx, "item%lld", (long long)b);
        ir_value *idx = fe_const(l, sfx, IR_I64, 0, NULL, &b);
        if (!idx)
            goto done;
        ir_attr axis0 = {.name = "axis", .kind = IR_ATTR_INT, .i = 0};
        for (int k = 0; k < nin; k++) {
            ir_value *g[2] = {l->in[1 + k], idx};
            ir_node *n = g[0] ? fe_emit(l, IR_OP_GATHER, sfx, 2, g, 1, NULL, &axis0, 1) : NULL;
            if (!n)
                goto done;
            in[k] = n->out[0];
        }
        ir_node *n = fe_emit_control(l, IR_OP_SCAN, sfx, nin, in, l->ncap, nout, NULL, attrs, na);
        if (!n)
            goto done;
        for (int i = 0; i < nout; i++)
            outs[i * B + b] = n->out[i];
    }
    int64_t one = 1, zero = 0;
    ir_value *axes = fe_const(l, "axes", IR_I64, 1, &one, &zero);
    if (!axes)
        goto done;
    for (int i = 0; i < nout; i++) {
        ir_attr cat = {.name = "axis", .kind = IR_ATTR_INT, .i = 0};
        for (int64_t b = 0; b < B; b++) {
            ir_value *u[2] = {outs[i * B + b], axes};
            const char *name = B == 1 ? l->out[i] : NULL;
            ir_node *n = fe_emit(l, IR_OP_UNSQUEEZE, "batch", 2, u, 1, &name, NULL, 0);
            if (!n)
                goto done;
            outs[i * B + b] = n->out[0];
        }
        if (B > 1 && !fe_emit(l, IR_OP_CONCAT, "batch", (int)B, outs + i * B, 1, &l->out[i], &cat, 1))
            goto done;
    }
    l->done = true;
    rc = 0;
done:
    free(in);
    free(outs);
    return rc;
}

int fe_adapt(fe_lower *l)
{
    int v = l->src->opset;
    ir_attr a;
    switch (l->op) {
    case IR_OP_REDUCE_SUM:
        return v < 13 ? ints_to_input(l, "axes", 1, false) : 0;
    case IR_OP_REDUCE_MEAN:
    case IR_OP_REDUCE_MAX:
    case IR_OP_REDUCE_MIN:
    case IR_OP_REDUCE_PROD:
    case IR_OP_REDUCE_L1:
    case IR_OP_REDUCE_L2:
    case IR_OP_REDUCE_SUM_SQUARE:
    case IR_OP_REDUCE_LOG_SUM:
    case IR_OP_REDUCE_LOG_SUM_EXP:
        return v < 18 ? ints_to_input(l, "axes", 1, false) : 0;
    case IR_OP_SQUEEZE:
        return v < 13 ? ints_to_input(l, "axes", 1, false) : 0;
    case IR_OP_UNSQUEEZE:
        return v < 13 ? ints_to_input(l, "axes", 1, true) : 0;
    case IR_OP_SPLIT:
        return adapt_split(l, v);
    case IR_OP_SLICE:
        if (v >= 10)
            return 0;
        if (ints_to_input(l, "starts", 1, true) < 0 || ints_to_input(l, "ends", 2, true) < 0)
            return -1;
        return ints_to_input(l, "axes", 3, false);
    case IR_OP_CLIP:
        return v < 11 ? adapt_clip(l) : 0;
    case IR_OP_PAD:
        return v < 11 ? adapt_pad(l) : 0;
    case IR_OP_DROPOUT:
        /* Inference ignores the ratio; is_test=0 only mattered for training. */
        if (v < 12 && take(l, "ratio", IR_ATTR_FLOAT, &a) < 0)
            return -1;
        if (v < 7 && take(l, "is_test", IR_ATTR_INT, &a) < 0)
            return -1;
        return 0;
    case IR_OP_DFT: {
        /* DFT < 20: axis an attribute (default 1), an input from 20 */
        if (v >= 20)
            return 0;
        int r = take(l, "axis", IR_ATTR_INT, &a);
        if (r < 0)
            return -1;
        int64_t axis = r ? a.i : 1;
        ir_value *ax = fe_const(l, "axis", IR_I64, 0, NULL, &axis);
        return ax ? fe_set_input(l, 2, ax) : -1;
    }
    case IR_OP_TOP_K: {
        if (v >= 10)
            return 0;
        int r = take(l, "k", IR_ATTR_INT, &a);
        if (r <= 0)
            return r < 0 ? -1
                         : node_err(l, "required attribute '%s' is missing (opset %d)", "k", v);
        int64_t one = 1;
        ir_value *k = fe_const(l, "k", IR_I64, 1, &one, &a.i);
        return k ? fe_set_input(l, 1, k) : -1;
    }
    case IR_OP_RESIZE:
        if (!strcmp(l->src->op_type, "Upsample"))
            return adapt_upsample(l, v);
        return adapt_resize(l, v);
    case IR_OP_BATCH_NORMALIZATION:
        return adapt_batchnorm(l, v);
    case IR_OP_SOFTMAX:
    case IR_OP_LOG_SOFTMAX:
    case IR_OP_HARDMAX:
        return v < 13 ? adapt_softmax(l) : 0;
    case IR_OP_CAST:
        return v < 6 ? adapt_cast(l) : 0;
    case IR_OP_RESHAPE:
        return v < 5 ? ints_to_input(l, "shape", 1, true) : 0;
    case IR_OP_CONCAT:
        return v < 4 && !fe_attr_find(l, "axis") ? set_int(l, "axis", 1) : 0;
    case IR_OP_GEMM:
        /* broadcast=0 required C's exact shape, a case of today's rule. */
        return v < 7 && take(l, "broadcast", IR_ATTR_INT, &a) < 0 ? -1 : 0;
    case IR_OP_ADD:
    case IR_OP_SUB:
    case IR_OP_MUL:
    case IR_OP_DIV:
    case IR_OP_POW:
    case IR_OP_AND:
    case IR_OP_OR:
    case IR_OP_XOR:
    case IR_OP_EQUAL:
    case IR_OP_LESS:
    case IR_OP_GREATER:
        return v < 7 ? adapt_legacy_broadcast(l) : 0;
    case IR_OP_PRELU:
        return v < 7 ? adapt_prelu(l) : 0;
    case IR_OP_SCAN:
        return v < 9 ? adapt_scan8(l) : 0;
    case IR_OP_LSTM:
    case IR_OP_GRU:
    case IR_OP_RNN:
        /* Before 7, output_sequence said whether Y was wanted; today an
         * absent output says it, and computing Y anyway changes nothing.
         * 7, 14 and 22 differ only by layout (default 0) and dtypes. */
        return v < 7 && take(l, "output_sequence", IR_ATTR_INT, &a) < 0 ? -1 : 0;
    default:
        return 0;
    }
}
