/* layout.c - blocked channel layouts (NCHWc) for 2-D convolutions.
 *
 * Not for a target without the CPU kernels' layouts unless `block` is
 * given (cg_schedule_cpu_layouts: CUDA, whose convolutions run as implicit
 * GEMMs over NCHW, codegen/lower/conv.c lower_conv_gpu).
 *
 * A blocked tensor is an ordinary rank-5 tensor [N, C/cb, H, W, cb]:
 * channel c lives in block c / cb, lane c % cb, so the cb channels of
 * one pixel are contiguous (one vector register when cb is the target's
 * f32 width). Each eligible Conv (2-D, group 1, f32, constant channels,
 * the batch, height and width constants or symbols (then its pads fixed:
 * not SAME at a stride > 1; the window pools static), output
 * channels a multiple of cb or padded to one, input channels too or
 * fewer than cb) becomes ConvNCHWc (ir/ref/conv_blocked.c) over blocked data
 * with weights packed as [M/cb, C/cb, kh, kw, cb, cb]. An input of fewer
 * than cb channels (an image) is read as 1-channel blocks, which NCHW
 * already is: a Reshape to [N, C, H, W, 1] and weights [M/cb, C, kh, kw,
 * 1, cb]. A depthwise Conv (group = C = M, C as above) becomes
 * ConvDwNCHWc (ir/ref/conv_dw_blocked.c) with weights [C/cb, kh, kw, cb]
 * and its pads kept (its kernel masks them, so no Pad copy is made). A
 * ConvInteger (u8 x, constant weights and zero points; convert_conv_int
 * below) becomes the integer form of ConvNCHWc on targets with 512-bit
 * VNNI, so a quantized CNN's requantizing elementwise chains, pools and
 * residual adds run blocked between its convs too.
 * The reorders are plain IR: to blocked is Reshape [N, C/cb, cb,
 * H, W] + Transpose [0,1,3,4,2], from blocked Transpose [0,1,4,2,3] +
 * Reshape, so the interpreter and backend run them as they are (with
 * symbolic dims the Reshapes copy them with 0s, behind an Unsqueeze and
 * before a Squeeze: to_blocked, from_blocked).
 *
 * Channels that are no multiple of cb are padded to whole blocks when
 * that adds at most half again (pad_ok; docs/codegen.md, "Padded
 * blocks"): constant weights, biases and per-channel constants are 0 in
 * the pad lanes, a value leaving the blocked region is sliced back, and
 * only ops that keep finite pad lanes finite (pad_safe) run on padded
 * blocks. A conv pads its input channels only when the input is already
 * blocked (an NCHW input's Pad and reorder cost more).
 *
 * The pass walks the graph in order keeping, for each NCHW value, its
 * blocked twin when one exists. A converted node's result is rebuilt in
 * NCHW by a from-blocked reorder (so any user still sees it) whose input
 * is remembered as the twin. These run on the twins instead when their
 * operands have them: elementwise ops (Relu, the residual Add or Sum,
 * Add/Mul by a per-channel constant, re-laid out as [C/cb, 1, 1, cb], by
 * a scalar, or by a per-channel [N, C, 1, 1] value: its twin broadcasts,
 * and without one it is Reshaped to [N, C/cb, 1, 1, cb], which with a 1x1
 * plane keeps the elements in place: a squeeze-excite scale), inference BatchNormalization with constant parameters (a
 * blocked Mul and Add), MaxPool and AveragePool (the same op over three
 * spatial dims, the lanes' window 1 wide), pools over the whole plane
 * (ReduceMean/ReduceMax over the blocked H, W) and a channel Concat of
 * parts that are whole blocks (a Concat along C/cb); a later Conv takes its
 * input's twin rather than a new to-blocked reorder. A from-blocked
 * reorder nobody uses in the end is removed (cancelled), so reorders
 * remain only where data enters or leaves a blocked region (ResNet-50:
 * one, before its final Reshape).
 *
 * Weights: a constant is packed here; a ConstantOfShape (a splat, as the
 * light test models have) becomes a ConstantOfShape of the packed shape;
 * anything else gets the Reshape + Transpose, which `fold` evaluates when
 * its input is constant. Options: block (0 = the target's f32 vector
 * width, icc_target_layout_block: 16 with AVX-512, 8 with AVX2, 4 with
 * SSE or NEON), pad (1 = a padded conv reads an
 * explicitly zero-padded copy of its input, made by a Pad on the blocked
 * data, so the compiled kernel needs no bounds checks), min-k (convert
 * only convs whose kernel has at least this many taps; 1 = all: measured,
 * the blocked kernel is at least as fast as the NCHW one on every
 * ResNet-50 shape, 1x1 included).
 */
#include "passes/build.h"
#include "passes/pass.h"
#include "codegen/schedule.h"
#include "passes/precision.h"
#include "ir/ops.h"
#include "ir/ref/nn.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct lay {
    pass_ctx *c;
    ir_graph *g;
    int64_t cb;
    bool pad;
    int64_t min_k;
    bool int_convs;            /* ConvInteger too: option int8 (0 never, 1 with 512-bit VNNI, 2 always) */
    ir_value **twin;           /* blocked twin by value id */
    int ntwin;
    ir_node **from;            /* the from-blocked Reshapes made */
    int nfrom, capfrom;
    int64_t convs, to_blk, moved, rotated;
    bool erased;               /* nodes made and erased again: compact the graph */
} lay;


static ir_value *twin_of(const lay *L, const ir_value *v)
{
    return v && v->id < L->ntwin ? L->twin[v->id] : NULL;
}

static int set_twin(lay *L, const ir_value *v, ir_value *b)
{
    if (v->id >= L->ntwin) {
        int n = L->g->nvalues + 64;
        ir_value **t = realloc(L->twin, sizeof *t * (size_t)n);
        if (!t)
            return ir_errorf(L->c->diag, "out of memory");
        memset(t + L->ntwin, 0, sizeof *t * (size_t)(n - L->ntwin));
        L->twin = t;
        L->ntwin = n;
    }
    L->twin[v->id] = b;
    return 0;
}

static bool is_static_f32(const ir_value *v, int rank)
{
    return v && v->type.dtype == IR_F32 && v->type.rank == rank && ir_type_is_static(&v->type);
}

/* t is [N, C, H, W] with constant channels; N, H and W constants or
 * symbols (the blocked forms run over the run's batch and plane). */
static bool is_image(const ir_type *t)
{
    if (t->rank != 4 || !ir_dim_is_const(t->dims[1]))
        return false;
    for (int i = 0; i < 4; i++)
        if (t->dims[i].sym < 0)
            return false;
    return true;
}

static bool is_image_f32(const ir_value *v)
{
    return v && v->type.dtype == IR_F32 && is_image(&v->type);
}

/* Channels c rounded up to whole blocks: a blocked value of c channels
 * has cpad(c) / cb blocks, the lanes past c (pad lanes) holding finite
 * values no real channel reads (the convs' weights for them are 0). */
static int64_t cpad(const lay *L, int64_t c) { return (c + L->cb - 1) / L->cb * L->cb; }

/* c channels may be blocked: whole blocks, or padded when that adds at
 * most half again (MobileNets' 24, 40, 72, 120 on 16 lanes; not 8 or 20,
 * where the kernels would do 2x or 1.6x the work) */
static bool pad_ok(const lay *L, int64_t c)
{
    return c % L->cb == 0 || (c > L->cb && cpad(L, c) * 2 <= c * 3);
}

static bool is_output(const ir_graph *g, const ir_value *v)
{
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == v)
            return true;
    return false;
}

/* The builders of passes/build.h on L's graph. */
static ir_value *i64_const(lay *L, const char *base, const char *suffix, const int64_t *v, int n)
{
    return pb_i64_const(L->g, L->c->diag, base, suffix, v, n);
}

static ir_node *add_node(lay *L, int op, const char *base, const char *suffix, int nin, ir_value *const *in,
                         const char *out_name)
{
    return pb_node(L->g, L->c->diag, op, base, suffix, nin, in, out_name);
}

static int infer(lay *L, ir_node *n)
{
    return ir_infer_node(n, L->c->diag);
}

static ir_value *reshape(lay *L, ir_value *x, const int64_t *dims, int r, const char *out_name)
{
    return pb_reshape(L->g, L->c->diag, x, dims, r, out_name);
}

static ir_value *transpose(lay *L, ir_value *x, const int64_t *perm, int r, const char *out_name)
{
    return pb_transpose(L->g, L->c->diag, x, perm, r, out_name);
}

/* x zero-padded by a Pad with pads pp (the begins of x's dims, then the
 * ends), its names x's with suffix. */
static ir_value *pad_with(lay *L, ir_value *x, const int64_t *pp, const char *suffix)
{
    char sfx[32];
    snprintf(sfx, sizeof sfx, "%ss", suffix);
    ir_value *pv = i64_const(L, x->name, sfx, pp, 2 * x->type.rank);
    ir_value *in[2] = {x, pv};
    ir_node *n = pv ? add_node(L, IR_OP_PAD, x->name, suffix, 2, in, NULL) : NULL;
    return n && infer(L, n) == 0 ? n->out[0] : NULL;
}

/* x [N, C, ...] with zeros appended to C channels. */
static ir_value *pad_channels(lay *L, ir_value *x, int64_t c)
{
    int64_t pp[2 * IR_MAX_RANK] = {0};
    pp[x->type.rank + 1] = c - x->type.dims[1].v;
    return pad_with(L, x, pp, "_cpad");
}

/* x [N, C, H, W, ...] zero-padded in H and W by p [top, left, bottom,
 * right] (the layout pass's explicit padding of a conv's input). */
static ir_value *pad_plane(lay *L, ir_value *x, const int64_t *p)
{
    int r = x->type.rank;
    int64_t pp[2 * IR_MAX_RANK] = {0};
    pp[2] = p[0], pp[3] = p[1], pp[r + 2] = p[2], pp[r + 3] = p[3];
    return pad_with(L, x, pp, "_pad");
}

/* Unsqueeze (insert a 1 at axis, with out_name) or Squeeze (drop the 1
 * at axis) of x: the rank-changing steps of the reorders of values with
 * symbolic dims, which a Reshape with a constant shape can copy (a 0) only
 * at the same position. */
static ir_value *squeeze(lay *L, int op, ir_value *x, int64_t axis, const char *out_name)
{
    ir_value *in[2] = {x, i64_const(L, x->name, "_axes", &axis, 1)};
    ir_node *n = in[1] ? add_node(L, op, x->name, op == IR_OP_SQUEEZE ? "_sq" : "_unsq", 2, in, out_name) : NULL;
    return n && infer(L, n) == 0 ? n->out[0] : NULL;
}

/* x [N, C, H, W] blocked, reusing its twin (C padded to whole blocks or
 * not) when it has one; without one C must be a multiple of cb. With
 * symbolic dims the Reshape's 0s copy them: [N, C, 1, H, W] (Unsqueeze)
 * to [0, C/cb, cb, 0, 0]. */
static ir_value *to_blocked(lay *L, ir_value *x)
{
    ir_value *b = twin_of(L, x);
    if (b)
        return b;
    const ir_dim *d = x->type.dims;
    bool sym = !ir_type_is_static(&x->type);
    int64_t s[5] = {d[0].v, d[1].v / L->cb, L->cb, d[2].v, d[3].v};
    static const int64_t perm[5] = {0, 1, 3, 4, 2};
    if (sym)
        s[0] = s[3] = s[4] = 0;
    ir_value *u = sym ? squeeze(L, IR_OP_UNSQUEEZE, x, 2, NULL) : x;
    ir_value *r = u ? reshape(L, u, s, 5, NULL) : NULL;
    if (!r || !(b = transpose(L, r, perm, 5, NULL)) || set_twin(L, x, b) < 0)
        return NULL;
    L->to_blk++;
    return b;
}

/* The NCHW value of blocked b, with type t and name `name`; b becomes its
 * twin. With symbolic dims: [N, CB, cb, H, W] to [0, CP, 1, 0, 0], then a
 * Squeeze of the 1. */
static ir_value *from_blocked(lay *L, ir_value *b, const ir_type *t, const char *name)
{
    static const int64_t perm[5] = {0, 1, 4, 2, 3};
    int64_t s[5], C = t->dims[1].v, CP = b->type.dims[1].v * L->cb;
    bool sym = !ir_type_is_static(t), seq = t->rank == 3;   /* seq: [N, C, L], blocked with H = 1 */
    for (int i = 0; i < t->rank; i++)
        s[i] = t->dims[i].v;
    s[1] = CP;
    if (sym) {
        int64_t s5[5] = {0, CP, 1, 0, 0};
        memcpy(s, s5, sizeof s5);
    }
    ir_value *tr = transpose(L, b, perm, 5, NULL);
    ir_value *y = tr ? reshape(L, tr, s, sym ? 5 : t->rank, sym || CP != C ? NULL : name) : NULL;
    if (y && sym && seq)
        y = squeeze(L, IR_OP_SQUEEZE, y, 2, NULL);
    if (y && sym)
        y = squeeze(L, IR_OP_SQUEEZE, y, 2, CP == C ? name : NULL);
    if (y && CP != C) {
        /* padded: the real channels, a Slice */
        int64_t zero = 0, one = 1;
        ir_value *in[4] = {y, i64_const(L, y->name, "_starts", &zero, 1), i64_const(L, y->name, "_ends", &C, 1),
                           i64_const(L, y->name, "_axes", &one, 1)};
        ir_node *sl = in[1] && in[2] && in[3] ? add_node(L, IR_OP_SLICE, y->name, "_s", 4, in, name) : NULL;
        y = sl && infer(L, sl) == 0 ? sl->out[0] : NULL;
    }
    if (!y || set_twin(L, y, b) < 0)
        return NULL;
    if (L->nfrom == L->capfrom) {
        int cap = L->capfrom ? 2 * L->capfrom : 32;
        ir_node **f = realloc(L->from, sizeof *f * (size_t)cap);
        if (!f)
            return ir_errorf(L->c->diag, "out of memory"), NULL;
        L->from = f;
        L->capfrom = cap;
    }
    L->from[L->nfrom++] = y->def;
    return y;
}

/* y's readers read b's NCHW value instead (from_blocked under y's name). */
static int finish_value(lay *L, ir_value *y, ir_value *b)
{
    ir_value *v = from_blocked(L, b, &y->type, y->name);
    if (!v)
        return -1;
    ir_replace_all_uses(L->g, y, v);
    return 0;
}

/* Replaces n's result by the NCHW view of its blocked replacement b. */
static int finish(lay *L, ir_node *n, ir_value *b)
{
    if (finish_value(L, n->out[0], b) < 0)
        return -1;
    ir_node_erase(n);
    L->c->changed = true;
    return 0;
}

/* ---- Conv ----------------------------------------------------------------- */

/* v is a splat: ConstantOfShape of a constant shape (the light test
 * models' weights), which packs to a splat of the packed shape. */
static bool is_splat(const ir_value *v)
{
    const ir_node *def = v->kind == IR_VAL_NODE ? v->def : NULL;
    return def && def->op == IR_OP_CONSTANT_OF_SHAPE && def->in[0]->kind == IR_VAL_CONST;
}

/* The splat of v's value (is_splat) in shape dims[n]; NULL on error. */
static ir_value *resplat(lay *L, const ir_value *v, const int64_t *dims, int n)
{
    ir_value *s = i64_const(L, v->name, "_nchwc_shape", dims, n);
    ir_node *d = s ? add_node(L, IR_OP_CONSTANT_OF_SHAPE, v->name, "_nchwc", 1, &s, NULL) : NULL;
    for (int i = 0; d && i < v->def->nattr; i++)
        if (ir_node_add_attr(L->g, d, &v->def->attrs[i]) < 0)
            return ir_errorf(L->c->diag, "out of memory"), NULL;
    return d && infer(L, d) == 0 ? d->out[0] : NULL;
}

/* Packs W [M, C, kh, kw] as [MP/cb, CP/ib, kh, kw, ib, cb] (ib: the
 * input's block, cb or 1; MP and CP: M and, with ib = cb, C padded to
 * whole blocks, the pad lanes' weights 0; only a constant is padded). */
/* A weight as the blocked kernels read it: a subnormal one as a zero of its
 * sign. An FMA with a subnormal operand takes a microcode assist on Intel
 * cores (about 100x the cycles): PP-OCRv6's small detector has 255 K
 * subnormal weights, 63% of two 1x1 convs', which ran at 1-3 GFLOP/s, 73% of
 * the model's time (ONNX Runtime is as slow there; OpenVINO sets the CPU's
 * denormals-are-zero). Their products are below 2^-126 times the
 * activation, lost in any sum of normal terms. */
static float weight_value(float v)
{
    return fabsf(v) < FLT_MIN ? copysignf(0.0f, v) : v;
}

static ir_value *pack_weights(lay *L, ir_value *w, int64_t ib)
{
    const ir_dim *d = w->type.dims;
    int64_t cb = L->cb, M = d[0].v, C = d[1].v, kh = d[2].v, kw = d[3].v;
    int64_t MP = cpad(L, M), CP = ib == cb ? cpad(L, C) : C;
    int64_t packed[6] = {MP / cb, CP / ib, kh, kw, ib, cb};
    char buf[256];
    if (w->kind == IR_VAL_CONST) {
        ir_type t = {.dtype = IR_F32, .rank = 6};
        for (int i = 0; i < 6; i++)
            t.dims[i] = ir_dim_const(packed[i]);
        ir_value *p = ir_graph_add_const(L->g, ir_graph_fresh_name(L->g, w->name, "_nchwc", buf, sizeof buf), &t, NULL,
                                         L->c->diag);
        if (!p)
            return NULL;
        const float *src = w->cval.data;
        float *dst = p->cval.data;
        for (int64_t m = 0; m < M; m++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t k = 0; k < kh * kw; k++)
                    dst[((((m / cb) * (CP / ib) + c / ib) * kh * kw + k) * ib + c % ib) * cb + m % cb] =
                        weight_value(src[(m * C + c) * kh * kw + k]);
        return p;
    }
    if (is_splat(w)) /* a splat stays a splat (its pad lanes too: finite, past M they are sliced off) */
        return resplat(L, w, packed, 6);
    int64_t split[6] = {M / cb, cb, C / ib, ib, kh, kw};
    static const int64_t perm[6] = {0, 2, 4, 5, 3, 1};
    ir_value *r = reshape(L, w, split, 6, NULL);
    return r ? transpose(L, r, perm, 6, NULL) : NULL;
}

/* Bias [M] as [MP/cb, cb]: the same elements in the same order, the pad
 * lanes 0 (only a constant is padded), subnormals as zeros as in
 * weight_value: an add with one takes the same assist (PP-OCRv6's
 * detector folds biases of which 62% are subnormal into two 384 -> 768
 * convs, whose Gelu epilogues then ran at a third of the kernel's speed). */
static ir_value *pack_bias(lay *L, ir_value *b)
{
    int64_t M = b->type.dims[0].v, s[2] = {cpad(L, M) / L->cb, L->cb};
    if (b->kind == IR_VAL_CONST) {
        char buf[256];
        ir_type t = {.dtype = IR_F32, .rank = 2, .dims = {ir_dim_const(s[0]), ir_dim_const(s[1])}};
        ir_value *p = ir_graph_add_const(L->g, ir_graph_fresh_name(L->g, b->name, "_nchwc", buf, sizeof buf), &t, NULL,
                                         L->c->diag);
        if (p)
            for (int64_t i = 0; i < M; i++)
                ((float *)p->cval.data)[i] = weight_value(((const float *)b->cval.data)[i]);
        return p;
    }
    if (is_splat(b))
        return resplat(L, b, s, 2);
    return reshape(L, b, s, 2, NULL);
}

/* Spatial dim i of window w over a static extent `in` (kernel extent k):
 * its pads *pb, *pe, when the window gives `out` and the blocked op's floor
 * arithmetic over the explicitly padded input gives the same. */
static bool static_extent_ok(const ir_node *n, const nn_window *w, int i, int64_t in, int64_t k, int64_t out,
                             int64_t *pb, int64_t *pe)
{
    icc_diag d;
    int64_t o;
    if (nn_window_dim(n, &d, w, i, in, &o, pb, pe) < 0 || o != out || *pb < 0 || *pe < 0)
        return false;
    int64_t span = (k - 1) * w->dilation[i] + 1;
    return in + *pb + *pe >= span && (in + *pb + *pe - span) / w->stride[i] + 1 == o;
}

/* The 2-D window of conv n (X in[0], W in[1], Y out[0], static NCHW):
 * pads [top, left, bottom, right], strides and dilations as the blocked
 * op takes them; false when the blocked op's extents would differ. */
static bool window_ok(const ir_node *n, int64_t *pads, int64_t *s, int64_t *dl)
{
    const ir_value *x = n->in[0], *w = n->in[1], *y = n->out[0];
    /* an empty conv (no channels, an empty plane) stays NCHW */
    for (int i = 0; i < 4; i++)
        if ((!x->type.dims[i].sym && x->type.dims[i].v < 1) || w->type.dims[i].v < 1 ||
            (!y->type.dims[i].sym && y->type.dims[i].v < 1))
            return false;
    icc_diag d;
    nn_window win;
    ir_dim wk[2] = {w->type.dims[2], w->type.dims[3]};
    if (nn_window_parse(n, &d, 2, wk, &win) < 0)
        return false;
    for (int i = 0; i < 2; i++) {
        int64_t o, pb, pe, in = x->type.dims[2 + i].v, k = wk[i].v;
        if (x->type.dims[2 + i].sym) {
            /* symbolic: pads that do not depend on the size (not SAME at a
             * stride > 1), and the blocked op's extent the very dim the
             * Conv had (nn_floor_extent: the same derived symbol) */
            bool same = win.auto_pad == NN_PAD_SAME_UPPER || win.auto_pad == NN_PAD_SAME_LOWER;
            if ((same && win.stride[i] > 1) ||
                nn_window_dim(n, &d, &win, i, INT64_C(1) << 20, &o, &pb, &pe) < 0 || pb < 0 || pe < 0)
                return false;
            int64_t span = (k - 1) * win.dilation[i] + 1;
            ir_dim e = nn_floor_extent(n->graph, x->type.dims[2 + i], pb + pe - span, win.stride[i]);
            if (!ir_dim_eq(e, y->type.dims[2 + i]))
                return false;
            pads[i] = pb;
            pads[2 + i] = pe;
            s[i] = win.stride[i];
            dl[i] = win.dilation[i];
            continue;
        }
        if (!static_extent_ok(n, &win, i, in, k, y->type.dims[2 + i].v, &pb, &pe))
            return false;
        pads[i] = pb;
        pads[2 + i] = pe;
        s[i] = win.stride[i];
        dl[i] = win.dilation[i];
    }
    return true;
}

/* The blocked geometry of Conv n: pads [top, left, bottom, right],
 * strides, dilations, and the input's block *ib: cb, or 1 for an input
 * of fewer than cb channels (an image: NCHW is the blocked layout with
 * 1-channel blocks, a Reshape away); false when n is not eligible. */
static bool conv_ok(const lay *L, const ir_node *n, int64_t *pads, int64_t *s, int64_t *dl, int64_t *ib)
{
    if (n->op != IR_OP_CONV || n->nin < 2 || n->nout != 1 || ir_attr_int(n, "group", 1) != 1)
        return false;
    ir_value *x = n->in[0], *w = n->in[1], *b = n->nin > 2 ? n->in[2] : NULL, *y = n->out[0];
    if (!is_image_f32(x) || !is_static_f32(w, 4) || !is_image_f32(y) || (b && !is_static_f32(b, 1)) ||
        !ir_dim_eq(x->type.dims[0], y->type.dims[0]))
        return false;
    int64_t C = x->type.dims[1].v, M = w->type.dims[0].v;
    /* the input's block: cb for a blocked twin (padded or not) or whole
     * blocks, 1 for an image (fewer than cb channels); an NCHW input of
     * other widths is not padded (its Pad and reorder, and the Slice back
     * after an isolated conv, cost more than the NCHW conv: ShuffleNet's
     * 136-channel depthwise convs between channel shuffles) */
    *ib = C % L->cb == 0 || twin_of(L, x) ? L->cb : C < L->cb ? 1 : 0;
    /* ... except for a strided conv, whose NCHW kernel reads every other
     * input pixel of a row (DBNet's 24 -> 48 3x3 stride-2 conv at 80x80
     * ran at 32% of the FMA peak): its input is padded to whole blocks
     * and reordered once, a twin its other readers share (DBNet 0.90 at 1
     * thread, with Resize on blocks) */
    bool strided_pad = !*ib && pad_ok(L, C) && window_ok(n, pads, s, dl) && (s[0] > 1 || s[1] > 1);
    if (strided_pad)
        *ib = L->cb;
    /* with symbolic dims, no new reorder into blocks but that one
     * (measured, in turns: every new reorder allowed, a symbolic PaddleOCR
     * detector at 480x640 1.05x the time, DBNet-style 0.74x; the strided
     * convs' alone 0.96x and 0.84x; a YOLO, a MobileNetV3 and a
     * recognizer unchanged), and a heavy conv's: at least HEAVY_MK
     * multiply-adds per input element (M kh kw), which the reorder's one
     * copy of the input cannot outweigh (Magika's 512-channel 1 x 5 conv
     * with a symbolic batch ran NCHW at 61% of the FMA peak; no conv of
     * the models above is that heavy) */
    enum { HEAVY_MK = 512 };
    bool heavy = M * w->type.dims[2].v * w->type.dims[3].v >= HEAVY_MK;
    if (*ib == L->cb && !twin_of(L, x) && !ir_type_is_static(&x->type) && !strided_pad && !heavy)
        return false;
    if (!*ib || !pad_ok(L, M) || w->type.dims[1].v != C || y->type.dims[1].v != M ||
        w->type.dims[2].v * w->type.dims[3].v < L->min_k)
        return false;
    /* a padded result that is a graph output would leave the blocked
     * layout at once, through a reorder and a Slice (YOLO's 255-channel
     * heads: slower than the NCHW conv writing the output) */
    if (M % L->cb && is_output(L->g, y))
        return false;
    /* padding both sides at most half again in all (DBNet's 24 -> 24
     * channels, 1.78x the work padded, ran slower blocked than NCHW) */
    int64_t CP = *ib == L->cb ? cpad(L, C) : C;
    if (cpad(L, M) * CP * 2 > M * C * 3)
        return false;
    /* padded input channels need constant weights, zero on the pad lanes
     * (theirs may hold any finite value); padded output channels a
     * constant or a splat weight and bias (the pad lanes' sums are finite
     * and sliced off where the value leaves the blocks) */
    if (*ib == L->cb && C % L->cb && (w->kind != IR_VAL_CONST || (b && b->kind != IR_VAL_CONST)))
        return false;
    if (M % L->cb && ((w->kind != IR_VAL_CONST && !is_splat(w)) || (b && b->kind != IR_VAL_CONST && !is_splat(b))))
        return false;
    return window_ok(n, pads, s, dl);
}

static int convert_conv(lay *L, ir_node *n, const int64_t *pads, const int64_t *s, const int64_t *dl, int64_t ib)
{
    ir_value *x = n->in[0];
    int64_t p[4] = {pads[0], pads[1], pads[2], pads[3]};
    bool pad = L->pad && (p[0] || p[1] || p[2] || p[3]);
    if (ib == 1) {
        /* an image is padded NCHW, before the Reshape: along W, its
         * innermost dim, the Pad's copy is a vector loop, where on
         * [N, C, H, W, 1] it ran one element at a time (MobileNetV3's
         * 224x224 stem: 3% of the model) */
        if (pad) {
            if (!(x = pad_plane(L, x, p)))
                return -1;
            memset(p, 0, sizeof p);
            pad = false;
        }
        const ir_dim *d = x->type.dims;
        int64_t s5[5] = {d[0].v, d[1].v, d[2].v, d[3].v, 1};
        if (!ir_type_is_static(&x->type))   /* the 0s copy the symbolic dims */
            s5[0] = s5[2] = s5[3] = 0;
        x = reshape(L, x, s5, 5, NULL);
    } else if (!twin_of(L, x) && x->type.dims[1].v % L->cb) {
        /* an NCHW input of a strided conv (conv_ok): padded, then blocked */
        ir_value *xp = pad_channels(L, x, cpad(L, x->type.dims[1].v)), *b = xp ? to_blocked(L, xp) : NULL;
        if (!b || set_twin(L, x, b) < 0)
            return -1;
        x = b;
    } else {
        x = to_blocked(L, x);
    }
    ir_value *w = x ? pack_weights(L, n->in[1], ib) : NULL;
    if (!w)
        return -1;
    ir_value *b = n->nin > 2 && n->in[2] ? pack_bias(L, n->in[2]) : NULL;
    if (n->nin > 2 && n->in[2] && !b)
        return -1;
    if (pad) {
        if (!(x = pad_plane(L, x, p)))
            return -1;
        memset(p, 0, sizeof p);
    }
    ir_value *in[3] = {x, w, b};
    ir_node *c = add_node(L, IR_OP_CONV_NCHWC, n->out[0]->name, "_nchwc", b ? 3 : 2, in, NULL);
    if (!c)
        return -1;
    c->name = n->name;
    if (ir_node_set_ints(L->g, c, "strides", s, 2) < 0 || ir_node_set_ints(L->g, c, "pads", p, 4) < 0 ||
        ir_node_set_ints(L->g, c, "dilations", dl, 2) < 0)
        return ir_errorf(L->c->diag, "out of memory");
    if (infer(L, c) < 0)
        return -1;
    L->convs++;
    return finish(L, n, c->out[0]);
}

/* A conv along a column: [N, C, H, 1] by a [kh, 1] window (a 1-D conv
 * exported as 2-D, TF's conv1d), whose schedules all tile the output
 * along W, one pixel here (a byte classifier's 256 -> 512, 5 x 1 conv ran
 * at 23% of the FMA peak blocked). The same conv along a row reads the
 * same bytes: [N, C, 1, H] (a Reshape, free) by a [1, kh] window (the
 * weights' bytes as they are), and its [N, M, 1, H'] result is the
 * [N, M, H', 1] one. */
static bool column_conv(const ir_node *n, int64_t *pads, int64_t *s, int64_t *dl)
{
    if (n->op != IR_OP_CONV || n->nin < 2 || n->nout != 1)
        return false;
    const ir_value *x = n->in[0], *w = n->in[1], *y = n->out[0];
    if (!is_image_f32(x) || !is_static_f32(w, 4) || w->kind != IR_VAL_CONST || !is_image_f32(y) ||
        !ir_dim_eq(x->type.dims[0], y->type.dims[0]))
        return false;
    const ir_dim *xd = x->type.dims, *yd = y->type.dims;
    if (!ir_dim_is_const(xd[2]) || xd[2].v < 2 || !ir_dim_is_const(xd[3]) || xd[3].v != 1 ||
        !ir_dim_is_const(yd[2]) || !ir_dim_is_const(yd[3]) || yd[3].v != 1 || w->type.dims[3].v != 1)
        return false;
    return window_ok(n, pads, s, dl) && pads[1] == 0 && pads[3] == 0;
}

/* A 1-D conv, [N, C, L] by a [k] window (static L, constant weights): the
 * NCHW kernel ran a chain of 256-channel, 3-wide ones over 500 steps at
 * 55% of the FMA peak, where the same conv along a row ([N, C, 1, L] by
 * [1, k]) can take the blocked kernels. Its window: pads, stride and
 * dilation (false when it does not parse or is empty). */
static bool conv1d_ok(const ir_node *n, int64_t *pads, int64_t *s, int64_t *dl)
{
    if (n->op != IR_OP_CONV || n->nin < 2 || n->nout != 1)
        return false;
    const ir_value *x = n->in[0], *w = n->in[1], *y = n->out[0];
    if (x->type.dtype != IR_F32 || x->type.rank != 3 || !is_static_f32(w, 3) || w->kind != IR_VAL_CONST ||
        y->type.rank != 3 || !ir_dim_is_const(x->type.dims[1]) || !ir_dim_is_const(x->type.dims[2]) ||
        !ir_dim_is_const(y->type.dims[1]) || !ir_dim_is_const(y->type.dims[2]) ||
        !ir_dim_eq(x->type.dims[0], y->type.dims[0]) || (n->nin > 2 && n->in[2] && !is_static_f32(n->in[2], 1)))
        return false;
    icc_diag d;
    nn_window win;
    ir_dim wk[1] = {w->type.dims[2]};
    int64_t pb, pe, in = x->type.dims[2].v, k = wk[0].v;
    if (in < 1 || k < 1 || y->type.dims[2].v < 1 || nn_window_parse(n, &d, 1, wk, &win) < 0 ||
        !static_extent_ok(n, &win, 0, in, k, y->type.dims[2].v, &pb, &pe))
        return false;
    pads[0] = pb, pads[1] = pe, *s = win.stride[0], *dl = win.dilation[0];
    return true;
}

/* The conv along a row [N, C, 1, W] by [1, kw] standing for n: x4 its
 * input, w4 its weights (n's bytes), pads [left, right], stride s and
 * dilation dl along W; NULL on failure. */
static ir_node *row_conv(lay *L, ir_node *n, ir_value *x4, ir_value *w4, const int64_t *pads, int64_t s, int64_t dl)
{
    ir_value *in[3] = {x4, w4, n->nin > 2 ? n->in[2] : NULL};
    ir_node *c = add_node(L, IR_OP_CONV, n->out[0]->name, "_row", in[2] ? 3 : 2, in, NULL);
    if (!c)
        return NULL;
    c->name = n->name;
    int64_t k[2] = {1, w4->type.dims[3].v}, st[2] = {1, s}, d[2] = {1, dl}, p[4] = {0, pads[0], 0, pads[1]};
    if (ir_node_set_ints(L->g, c, "kernel_shape", k, 2) < 0 || ir_node_set_ints(L->g, c, "strides", st, 2) < 0 ||
        ir_node_set_ints(L->g, c, "dilations", d, 2) < 0 || ir_node_set_ints(L->g, c, "pads", p, 4) < 0 ||
        ir_node_set_int(L->g, c, "group", ir_attr_int(n, "group", 1)) < 0)
        return ir_errorf(L->c->diag, "out of memory"), NULL;
    return infer(L, c) < 0 ? NULL : c;
}

/* w's bytes as [M, C/g, 1, k], k its dim 2 (a column conv's [M, C/g, k,
 * 1], a 1-D conv's [M, C/g, k]). */
static ir_value *row_weights(lay *L, ir_value *w)
{
    char buf[256];
    ir_type wt = {.dtype = IR_F32, .rank = 4,
                  .dims = {w->type.dims[0], w->type.dims[1], ir_dim_const(1), w->type.dims[2]}};
    return ir_graph_add_const(L->g, ir_graph_fresh_name(L->g, w->name, "_row", buf, sizeof buf), &wt, w->cval.data,
                              L->c->diag);
}

static bool dw_ok(const lay *L, const ir_node *n, int64_t *pads, int64_t *s, int64_t *dl);

/* Rewrites conv1d_ok n as the conv along a row, between an Unsqueeze and a
 * Squeeze of the H it adds, when that conv goes blocked (conv_ok, dw_ok;
 * an NCHW conv along a row ran 4% slower than the 1-D one): the new Conv,
 * n itself when it stays, or NULL on failure. A blocked [N, C/cb, 1, L,
 * cb] twin of n's input is the Unsqueeze's (the same bytes), so a chain of
 * 1-D convs, and the elementwise ops between them, stays blocked; *y3 is
 * n's result, now the Squeeze's. */
static ir_node *lift_conv1d(lay *L, ir_node *n, const int64_t *pads, int64_t s, int64_t dl, ir_value **y3)
{
    ir_value *y = n->out[0], *wr = row_weights(L, n->in[1]), *b = twin_of(L, n->in[0]);
    ir_value *x4 = wr ? squeeze(L, IR_OP_UNSQUEEZE, n->in[0], 2, NULL) : NULL;
    if (!x4 || (b && set_twin(L, x4, b) < 0))
        return NULL;
    ir_node *c = row_conv(L, n, x4, wr, pads, s, dl);
    if (!c)
        return NULL;
    int64_t p4[4], s4[2], d4[2], ib;
    if (!conv_ok(L, c, p4, s4, d4, &ib) && !dw_ok(L, c, p4, s4, d4)) {
        ir_node_erase(c);
        ir_node_erase(x4->def);
        L->erased = true;
        return n;
    }
    if (!(*y3 = squeeze(L, IR_OP_SQUEEZE, c->out[0], 2, y->name)))
        return NULL;
    ir_replace_all_uses(L->g, y, *y3);
    ir_node_erase(n);
    L->rotated++;
    L->c->changed = true;
    return c;
}

/* Rewrites column_conv n (its window pads, s, dl) as the conv along a row;
 * the new Conv, or NULL on failure. *yc is the [N, M, H', 1] Reshape of its
 * result. */
static ir_node *rotate_column(lay *L, ir_node *n, const int64_t *pads, const int64_t *s, const int64_t *dl,
                              ir_value **yc)
{
    ir_value *x = n->in[0], *y = n->out[0];
    int64_t C = x->type.dims[1].v, H = x->type.dims[2].v, M = y->type.dims[1].v, Ho = y->type.dims[2].v;
    ir_value *wr = row_weights(L, n->in[1]);
    ir_value *xr = wr ? reshape(L, x, (int64_t[]){0, C, 1, H}, 4, NULL) : NULL;
    ir_node *c = xr ? row_conv(L, n, xr, wr, (int64_t[]){pads[0], pads[2]}, s[0], dl[0]) : NULL;
    ir_value *yr = c ? reshape(L, c->out[0], (int64_t[]){0, M, Ho, 1}, 4, y->name) : NULL;
    if (!yr)
        return NULL;
    ir_replace_all_uses(L->g, y, yr);
    ir_node_erase(n);
    L->rotated++;
    L->c->changed = true;
    *yc = yr;
    return c;
}

/* After the rotated conv went blocked: its [N, M/cb, 1, W', cb] result is
 * also the blocked twin of the column result yc, [N, M/cb, H', 1, cb] (the
 * same bytes: a Reshape of it), or of the 1-D result [N, M, L'] (itself:
 * a rank-3 value's blocked form has H = 1), so the ops after it stay
 * blocked. */
static int column_twin(lay *L, ir_value *yc)
{
    ir_value *b = yc->def && yc->def->nin > 0 ? twin_of(L, yc->def->in[0]) : NULL;
    if (!b || b->type.rank != 5)
        return 0;
    const ir_dim *d = b->type.dims;
    ir_value *bt = yc->type.rank == 3 ? b : reshape(L, b, (int64_t[]){0, d[1].v, d[3].v, 1, d[4].v}, 5, NULL);
    return bt && set_twin(L, yc, bt) == 0 ? 0 : -1;
}

/* ---- ConvInteger ---------------------------------------------------------- */

/* The integer form of ConvNCHWc: u8 X, i8 W with each tap's [cb, cb]
 * matrix stored in quads of input lanes ([cb/4, cb, 4], packed_k = 4, what
 * vpdpbusd reads), i32 B and Y. W holds w' = w - wz, computed here, so
 * ConvInteger's (x - xz)(w - wz) is x*w' - xz*w': the second term summed
 * over a whole window is a constant per output channel, B = -xz *
 * sum(w'[m]), and the input is padded with xz itself (an explicit Pad,
 * always), whose terms then cancel as ConvInteger's padding requires.
 * When some w - wz leaves i8 (u8 weights with zero point 0, say), W holds
 * w' = w - 128 (u8) or w (i8) instead, always an i8, and the shift s[m] =
 * w - wz - w' times the window's sum of x is added (add_window_sums).
 * Eligible: 2-D, group 1, static u8 X with channels a multiple of cb, or
 * fewer than 4 (an image's 3: padded with xz to one block of 4 lanes, ib =
 * 4, before it is reordered), constant u8 or i8 W (or computed from
 * constants: materialize_int_weights) with M a multiple of cb and a
 * constant w zero point (absent, scalar or per channel), a constant
 * scalar (or absent) x zero point, on a target whose 512-bit VNNI the
 * blocked kernel uses (cg_schedule_int8_packed_quads; option int8=2: any
 * target, int8=0: none); a window of at most 2^16 lanes (2^14 shifted). */

/* The w zero point of output channel m (constant: scalar or per channel;
 * absent: 0). */
static double w_zero(const ir_value *wzv, int64_t m)
{
    return wzv ? ir_tensor_getf(&wzv->cval, wzv->cval.numel == 1 ? 0 : m) : 0;
}

/* What W stores for weight w of output channel m, w' = w - c, and the
 * shift s[m] = c - wz[m] left over (w - wz = w' + s): c = wz[m] when
 * every w - wz fits i8 (s = 0); otherwise c = 128 for u8 weights, 0 for
 * i8, so that w' is always an i8. */
static double w_center(const ir_value *w, const ir_value *wzv, bool shift, int64_t m)
{
    return shift ? (w->type.dtype == IR_U8 ? 128 : 0) : w_zero(wzv, m);
}

static bool conv_int_ok(const lay *L, const ir_node *n, int64_t *pads, int64_t *s, int64_t *dl, int64_t *xz,
                        int64_t *ib, bool *shift)
{
    if (n->op != IR_OP_CONV_INTEGER || n->nin < 2 || n->nout != 1 || ir_attr_int(n, "group", 1) != 1 ||
        L->cb % 4 || !L->int_convs)
        return false;
    ir_value *x = n->in[0], *w = n->in[1], *y = n->out[0];
    ir_value *xzv = n->nin > 2 ? n->in[2] : NULL, *wzv = n->nin > 3 ? n->in[3] : NULL;
    if (x->type.dtype != IR_U8 || x->type.rank != 4 || !ir_type_is_static(&x->type) || w->kind != IR_VAL_CONST ||
        (w->type.dtype != IR_I8 && w->type.dtype != IR_U8) || w->type.rank != 4 || y->type.dtype != IR_I32 ||
        y->type.rank != 4 || !ir_type_is_static(&y->type))
        return false;
    *xz = 0;
    if (xzv) {
        if (xzv->kind != IR_VAL_CONST || xzv->cval.numel != 1 || xzv->type.dtype != IR_U8)
            return false;
        *xz = (int64_t)ir_tensor_getf(&xzv->cval, 0);
    }
    int64_t C = x->type.dims[1].v, M = w->type.dims[0].v;
    *ib = C % L->cb == 0 ? L->cb : C < 4 && !twin_of(L, x) ? 4 : 0;
    if (!*ib || M % L->cb || w->type.dims[1].v != C || y->type.dims[1].v != M ||
        w->type.dims[2].v * w->type.dims[3].v < L->min_k ||
        (wzv && (wzv->kind != IR_VAL_CONST || (wzv->cval.numel != 1 && wzv->cval.numel != M))))
        return false;
    if (M < 1 || C < 1 || w->cval.numel < M)
        return false;
    /* w - wz in i8 everywhere, or shifted (w_center) */
    int64_t per = w->cval.numel / M;
    *shift = false;
    for (int64_t i = 0; i < w->cval.numel && !*shift; i++) {
        double v = ir_tensor_getf(&w->cval, i) - w_zero(wzv, i / per);
        *shift = v < -128 || v > 127;
    }
    /* the window's sums stay inside i32 (ConvInteger's own result would
     * wrap; the blocked terms must not): |x w'| <= 255 * 128 per lane, and
     * shifted |s| <= 383 times the window's sum of u8 x on top */
    int64_t ktot = (C + *ib - 1) / *ib * *ib * w->type.dims[2].v * w->type.dims[3].v;
    if (ktot > (*shift ? INT64_C(1) << 14 : INT64_C(1) << 16))
        return false;
    return window_ok(n, pads, s, dl);
}

/* W' = w - c [M, C, kh, kw] (w_center) as i8 [M/cb, C/ib, kh, kw, ib, cb]
 * with each tap's [ib, cb] matrix in quads of input lanes, and B =
 * -xz * (sum(w'[m]) + s[m] * the window's lanes) as [M/cb, cb] (i32);
 * both constants. */
static int pack_int_weights(lay *L, ir_value *w, const ir_value *wzv, int64_t xz, int64_t ib, bool shift,
                            ir_value **pw, ir_value **pb)
{
    const ir_dim *d = w->type.dims;
    int64_t cb = L->cb, M = d[0].v, C = d[1].v, taps = d[2].v * d[3].v, CB = (C + ib - 1) / ib;
    char buf[256];
    ir_type t = {.dtype = IR_I8, .rank = 6};
    int64_t packed[6] = {M / cb, CB, d[2].v, d[3].v, ib, cb};
    for (int i = 0; i < 6; i++)
        t.dims[i] = ir_dim_const(packed[i]);
    ir_type bt = {.dtype = IR_I32, .rank = 2, .dims = {ir_dim_const(M / cb), ir_dim_const(cb)}};
    *pw = ir_graph_add_const(L->g, ir_graph_fresh_name(L->g, w->name, "_nchwc", buf, sizeof buf), &t, NULL, L->c->diag);
    *pb = *pw ? ir_graph_add_const(L->g, ir_graph_fresh_name(L->g, w->name, "_nchwc_zp", buf, sizeof buf), &bt, NULL,
                                   L->c->diag)
              : NULL;
    if (!*pb)
        return -1;
    int8_t *dst = (*pw)->cval.data;
    int32_t *bias = (*pb)->cval.data;
    /* the lanes past C (an image's 4th) stay 0: ir_graph_add_const zeroes */
    for (int64_t m = 0; m < M; m++) {
        int64_t sum = 0;
        double cm = w_center(w, wzv, shift, m);
        for (int64_t c = 0; c < C; c++)
            for (int64_t k = 0; k < taps; k++) {
                int8_t v = (int8_t)(ir_tensor_getf(&w->cval, (m * C + c) * taps + k) - cm);
                int64_t l = c % ib, tap = ((m / cb) * CB + c / ib) * taps + k;
                dst[(tap * (ib / 4) + l / 4) * cb * 4 + (m % cb) * 4 + l % 4] = v;
                sum += v;
            }
        /* shifted: - s[m] xz once per lane of the window (the padded
         * lanes too: they hold xz, and the window sums count them) */
        int64_t sm = (int64_t)(cm - w_zero(wzv, m));
        int64_t b = -xz * sum - sm * xz * CB * ib * taps;
        if (b < INT32_MIN || b > INT32_MAX)
            return ir_errorf(L->c->diag, "layout: the zero-point term of '%s' overflows i32", w->name);
        bias[m] = (int32_t)b;
    }
    return 0;
}

/* The input of a blocked integer conv: x's twin (or x reordered), padded
 * with the zero point; for an image (C < 4 channels, not a multiple of the
 * block) x NCHW padded to ib = 4 channels and the spatial pads at once,
 * then read as one block of 4 lanes. */
static ir_value *int_conv_input(lay *L, ir_value *x, const int64_t *pads, int64_t xz, int64_t ib)
{
    bool pad = pads[0] || pads[1] || pads[2] || pads[3];
    int64_t C = x->type.dims[1].v;
    bool image = C % L->cb != 0;
    if (!image)
        x = to_blocked(L, x);
    if (!x || (!pad && !image))
        return x;
    /* padded with the zero point, so those terms cancel */
    int64_t pp[10] = {0, 0, pads[0], pads[1], 0, 0, 0, pads[2], pads[3], 0};
    if (image) {
        int64_t p4[8] = {0, 0, pads[0], pads[1], 0, ib - C, pads[2], pads[3]};
        memcpy(pp, p4, sizeof p4);
    }
    ir_value *pv = i64_const(L, x->name, "_pads", pp, image ? 8 : 10);
    uint8_t z = (uint8_t)xz;
    char buf[256];
    ir_type zt = {.dtype = IR_U8, .rank = 0};
    ir_value *zv = pv ? ir_graph_add_const(L->g, ir_graph_fresh_name(L->g, x->name, "_pad_value", buf, sizeof buf),
                                           &zt, &z, L->c->diag)
                      : NULL;
    ir_value *in[3] = {x, pv, zv};
    ir_node *pn = zv ? add_node(L, IR_OP_PAD, x->name, "_pad", 3, in, NULL) : NULL;
    if (!pn || infer(L, pn) < 0)
        return NULL;
    x = pn->out[0];
    if (!image)
        return x;
    const ir_dim *d = x->type.dims;
    int64_t s5[5] = {d[0].v, 1, ib, d[2].v, d[3].v};
    static const int64_t perm[5] = {0, 1, 3, 4, 2};
    ir_value *r = reshape(L, x, s5, 5, NULL);
    return r ? transpose(L, r, perm, 5, NULL) : NULL;
}

/* An integer ConvNCHWc of x (blocked, padded), weights w and bias b (or
 * NULL) with n's strides and dilations. */
static ir_value *int_conv(lay *L, ir_node *n, ir_value *x, ir_value *w, ir_value *b, const int64_t *s,
                          const int64_t *dl, const char *suffix)
{
    static const int64_t zero[4] = {0};
    ir_value *in[3] = {x, w, b};
    ir_node *c = add_node(L, IR_OP_CONV_NCHWC, n->out[0]->name, suffix, b ? 3 : 2, in, NULL);
    if (!c)
        return NULL;
    c->name = n->name;
    if (ir_node_set_ints(L->g, c, "strides", s, 2) < 0 || ir_node_set_ints(L->g, c, "pads", zero, 4) < 0 ||
        ir_node_set_ints(L->g, c, "dilations", dl, 2) < 0 || ir_node_set_int(L->g, c, "packed_k", 4) < 0)
        return ir_errorf(L->c->diag, "out of memory"), NULL;
    return infer(L, c) == 0 ? c->out[0] : NULL;
}

/* Shifted weights (w_center): s[m] times the window's sum of x, added to
 * the conv's result y. The sum is one more integer ConvNCHWc of x, one
 * output block of all-one weights (each of its cb lanes the same sum),
 * which broadcasts against s laid out [M/cb, 1, 1, cb]: 1/(M/cb) more
 * dot products; the Mul and Add join the conv's kernel as its epilogue. */
static ir_value *add_window_sums(lay *L, ir_node *n, ir_value *x, ir_value *y, const int64_t *s, const int64_t *dl)
{
    ir_value *w = n->in[1], *wzv = n->nin > 3 ? n->in[3] : NULL;
    const ir_dim *wd = w->type.dims, *xd = x->type.dims;
    int64_t cb = L->cb, M = wd[0].v;
    char buf[256];
    ir_type ot = {.dtype = IR_I8, .rank = 6};
    int64_t od[6] = {1, xd[1].v, wd[2].v, wd[3].v, xd[4].v, cb};
    for (int i = 0; i < 6; i++)
        ot.dims[i] = ir_dim_const(od[i]);
    ir_type st = {.dtype = IR_I32, .rank = 4, .dims = {ir_dim_const(M / cb), ir_dim_const(1), ir_dim_const(1),
                                                      ir_dim_const(cb)}};
    ir_value *ones = ir_graph_add_const(L->g, ir_graph_fresh_name(L->g, w->name, "_ones", buf, sizeof buf), &ot, NULL,
                                        L->c->diag);
    ir_value *sv = ones ? ir_graph_add_const(L->g, ir_graph_fresh_name(L->g, w->name, "_shift", buf, sizeof buf), &st,
                                             NULL, L->c->diag)
                        : NULL;
    if (!sv)
        return NULL;
    memset(ones->cval.data, 1, (size_t)ones->cval.nbytes);
    int32_t *sp = sv->cval.data;
    for (int64_t m = 0; m < M; m++)
        sp[m] = (int32_t)(w_center(w, wzv, true, m) - w_zero(wzv, m));
    ir_value *sum = int_conv(L, n, x, ones, NULL, s, dl, "_window_sum");
    ir_value *mi[2] = {sum, sv};
    ir_node *mul = sum ? add_node(L, IR_OP_MUL, n->out[0]->name, "_shifted", 2, mi, NULL) : NULL;
    if (!mul || infer(L, mul) < 0)
        return NULL;
    ir_value *ai[2] = {y, mul->out[0]};
    ir_node *add = add_node(L, IR_OP_ADD, n->out[0]->name, "_nchwc", 2, ai, NULL);
    return add && infer(L, add) == 0 ? add->out[0] : NULL;
}

/* A ConvInteger's weights computed from constants that fold left alone
 * (over its size limit: ORT's QDQ form of a model whose weights are a
 * ConstantOfShape quantizes them at run time) are evaluated here
 * (icc_precision_materialize), so conv_int_ok can pack them; the chain
 * that computed them is left to dce. */
static int materialize_int_weights(lay *L, ir_node *n)
{
    ir_value *w = n->nin > 1 ? n->in[1] : NULL;
    if (n->op != IR_OP_CONV_INTEGER || !w || w->kind != IR_VAL_NODE || !ir_type_is_static(&w->type) ||
        !L->int_convs)
        return 0;
    int budget = 8;
    bool err = false;
    ir_value *k = icc_precision_materialize(L->c, w, &budget, &err);
    if (!k)
        return err ? -1 : 0;
    n->in[1] = k;
    L->c->changed = true;
    return 0;
}

static int convert_conv_int(lay *L, ir_node *n, const int64_t *pads, const int64_t *s, const int64_t *dl, int64_t xz,
                            int64_t ib, bool shift)
{
    ir_value *x = int_conv_input(L, n->in[0], pads, xz, ib), *w, *b;
    if (!x || pack_int_weights(L, n->in[1], n->nin > 3 ? n->in[3] : NULL, xz, ib, shift, &w, &b) < 0)
        return -1;
    ir_value *y = int_conv(L, n, x, w, b, s, dl, shift ? "_dot" : "_nchwc");
    if (y && shift)
        y = add_window_sums(L, n, x, y, s, dl);
    if (!y)
        return -1;
    L->convs++;
    return finish(L, n, y);
}

/* ---- depthwise Conv ---------------------------------------------------------- */

/* Packs depthwise W [C, 1, kh, kw] as [CP/cb, kh, kw, cb] (C padded to
 * whole blocks with zeros: only a constant is padded). */
static ir_value *pack_dw_weights(lay *L, ir_value *w)
{
    const ir_dim *d = w->type.dims;
    int64_t cb = L->cb, C = d[0].v, kk = d[2].v * d[3].v;
    int64_t packed[4] = {cpad(L, C) / cb, d[2].v, d[3].v, cb};
    char buf[256];
    if (w->kind == IR_VAL_CONST) {
        ir_type t = {.dtype = IR_F32, .rank = 4};
        for (int i = 0; i < 4; i++)
            t.dims[i] = ir_dim_const(packed[i]);
        ir_value *p = ir_graph_add_const(L->g, ir_graph_fresh_name(L->g, w->name, "_nchwc", buf, sizeof buf), &t, NULL,
                                         L->c->diag);
        if (!p)
            return NULL;
        const float *src = w->cval.data;
        float *dst = p->cval.data;
        for (int64_t c = 0; c < C; c++)
            for (int64_t k = 0; k < kk; k++)
                dst[((c / cb) * kk + k) * cb + c % cb] = weight_value(src[c * kk + k]);
        return p;
    }
    ir_node *def = w->kind == IR_VAL_NODE ? w->def : NULL;
    if (def && def->op == IR_OP_CONSTANT_OF_SHAPE && def->in[0]->kind == IR_VAL_CONST) {
        ir_value *s = i64_const(L, w->name, "_nchwc_shape", packed, 4);
        ir_node *n = s ? add_node(L, IR_OP_CONSTANT_OF_SHAPE, w->name, "_nchwc", 1, &s, NULL) : NULL;
        for (int i = 0; n && i < def->nattr; i++)
            if (ir_node_add_attr(L->g, n, &def->attrs[i]) < 0)
                return ir_errorf(L->c->diag, "out of memory"), NULL;
        return n && infer(L, n) == 0 ? n->out[0] : NULL;
    }
    int64_t split[4] = {C / cb, cb, d[2].v, d[3].v};
    static const int64_t perm[4] = {0, 2, 3, 1};
    ir_value *r = reshape(L, w, split, 4, NULL);
    return r ? transpose(L, r, perm, 4, NULL) : NULL;
}

/* A depthwise Conv (group = C = M, a channel multiplier of 1, C a multiple
 * of cb or padded to one) on blocked data: the geometry as conv_ok gives
 * it, or false. Its input need not come from a blocked op: one to-blocked
 * reorder is worth it as long as the next op keeps the data blocked (in
 * MobileNets it is a 1x1 Conv). */
static bool dw_ok(const lay *L, const ir_node *n, int64_t *pads, int64_t *s, int64_t *dl)
{
    if (n->op != IR_OP_CONV || n->nin < 2 || n->nout != 1)
        return false;
    ir_value *x = n->in[0], *w = n->in[1], *b = n->nin > 2 ? n->in[2] : NULL, *y = n->out[0];
    if (!is_image_f32(x) || !is_static_f32(w, 4) || !is_image_f32(y) || (b && !is_static_f32(b, 1)) ||
        !ir_dim_eq(x->type.dims[0], y->type.dims[0]))
        return false;
    int64_t C = x->type.dims[1].v;
    if (ir_attr_int(n, "group", 1) != C || !pad_ok(L, C) || w->type.dims[0].v != C || w->type.dims[1].v != 1 ||
        y->type.dims[1].v != C)
        return false;
    /* padded: constant weights, an input already blocked and a result
     * that is no graph output (as in conv_ok) */
    if (C % L->cb && (w->kind != IR_VAL_CONST || (b && b->kind != IR_VAL_CONST) || !twin_of(L, x) || is_output(L->g, y)))
        return false;
    return window_ok(n, pads, s, dl);
}

/* The kernel (conv_dw_blocked.c) masks its own padding, so no Pad. */
static int convert_dw(lay *L, ir_node *n, const int64_t *pads, const int64_t *s, const int64_t *dl)
{
    ir_value *x = to_blocked(L, n->in[0]);
    ir_value *w = x ? pack_dw_weights(L, n->in[1]) : NULL;
    if (!w)
        return -1;
    ir_value *b = n->nin > 2 && n->in[2] ? pack_bias(L, n->in[2]) : NULL;
    if (n->nin > 2 && n->in[2] && !b)
        return -1;
    ir_value *in[3] = {x, w, b};
    ir_node *c = add_node(L, IR_OP_CONV_DW_NCHWC, n->out[0]->name, "_nchwc", b ? 3 : 2, in, NULL);
    if (!c)
        return -1;
    c->name = n->name;
    if (ir_node_set_ints(L->g, c, "strides", s, 2) < 0 || ir_node_set_ints(L->g, c, "pads", pads, 4) < 0 ||
        ir_node_set_ints(L->g, c, "dilations", dl, 2) < 0)
        return ir_errorf(L->c->diag, "out of memory");
    if (infer(L, c) < 0)
        return -1;
    L->convs++;
    return finish(L, n, c->out[0]);
}

/* ---- layout-agnostic ops ----------------------------------------------------- */

/* The same dims: equal constants or the same symbol. */
static bool same_dims(const ir_type *a, const ir_type *b)
{
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (!ir_dim_eq(a->dims[i], b->dims[i]))
            return false;
    return true;
}

/* a [N, C, h, w] value broadcasts against t [N, C, H, W] with its channels
 * in place (h, w each 1 or t's: a squeeze-excite's [N, C, 1, 1] scale),
 * so its blocked twin broadcasts against t's blocked form the same way. */
static bool broadcasts_blocked(const ir_type *v, const ir_type *t)
{
    if (v->rank != 4 || t->rank != 4)
        return false;
    for (int i = 0; i < 4; i++)
        if (!ir_dim_eq(v->dims[i], t->dims[i]) && (i < 2 || !ir_dim_is_const(v->dims[i]) || v->dims[i].v != 1))
            return false;
    return true;
}

/* Operand v of an elementwise op whose result has NCHW type t, on blocked
 * data: its twin (same shape as t), itself when it has one element, or a
 * per-channel constant re-laid out; NULL when none of these. */
static ir_value *blocked_operand(lay *L, ir_value *v, const ir_type *t, bool *fail)
{
    ir_value *b = twin_of(L, v);
    if (b)
        return same_dims(&v->type, t) || broadcasts_blocked(&v->type, t) ? b : (*fail = true, NULL);
    const ir_type *vt = &v->type;
    int r = vt->rank;
    int64_t C = t->dims[1].v, CP = cpad(L, C), numel;
    if (v->kind != IR_VAL_CONST && r == 4 && ir_dim_is_const(vt->dims[1]) && vt->dims[1].v == C &&
        ir_dim_is_const(vt->dims[2]) && vt->dims[2].v == 1 && ir_dim_is_const(vt->dims[3]) && vt->dims[3].v == 1 &&
        ((ir_dim_is_const(vt->dims[0]) && vt->dims[0].v == 1) || ir_dim_eq(vt->dims[0], t->dims[0]))) {
        /* a computed per-channel [N, C, 1, 1] (a squeeze-excite scale whose
         * squeeze width is no multiple of cb, so it stayed NCHW): with the
         * plane 1x1, [N, C/cb, 1, 1, cb] is the same elements in order, a
         * Reshape rather than a reorder (after a Pad when C is padded); a
         * symbolic batch is copied (the 0; PP-OCRv6's symbolic detector
         * left the blocks at every squeeze-excite, and with symbolic dims
         * they do not come back: 1.75x its pinned time) */
        int64_t s5[5] = {ir_dim_is_const(vt->dims[0]) ? vt->dims[0].v : 0, CP / L->cb, 1, 1, L->cb};
        ir_value *pv = CP != C ? pad_channels(L, v, CP) : v;
        ir_value *rv = pv ? reshape(L, pv, s5, 5, NULL) : NULL;
        return rv ? rv : (*fail = true, NULL);
    }
    if (!ir_type_is_static(vt) || vt->rank > 4 || !ir_type_numel(vt, &numel))
        return *fail = true, NULL;
    if (numel == 1)
        return v;
    if (v->kind != IR_VAL_CONST || r < 3 || vt->dims[r - 1].v != 1 || vt->dims[r - 2].v != 1 ||
        vt->dims[r - 3].v != t->dims[1].v || (r == 4 && vt->dims[0].v != 1))
        return *fail = true, NULL;
    /* [.., C, 1, 1] -> [.., CP/cb, 1, 1, cb]: element c keeps its place
     * (the leading dims are 1), the pad lanes 0 */
    ir_type nt = *vt;
    nt.rank = r + 1;
    nt.dims[r - 3] = ir_dim_const(CP / L->cb);
    nt.dims[r] = ir_dim_const(L->cb);
    char buf[256];
    ir_value *p = ir_graph_add_const(L->g, ir_graph_fresh_name(L->g, v->name, "_nchwc", buf, sizeof buf), &nt, NULL,
                                     L->c->diag);
    if (p)
        memcpy(p->cval.data, v->cval.data, ir_dtype_size(vt->dtype) * (size_t)C);
    return p;
}

/* Ops that may run on padded blocks: each maps finite pad lanes (and the
 * pad lanes of padded constants, 0) to finite ones, so a later conv's 0
 * weights cancel them (a Div by 0, a Log or an Exp could give inf or NaN,
 * and 0 * inf is NaN). */
static bool pad_safe(int op)
{
    switch (op) {
    case IR_OP_RELU: case IR_OP_LEAKY_RELU: case IR_OP_PRELU: case IR_OP_CLIP: case IR_OP_HARD_SWISH:
    case IR_OP_HARD_SIGMOID: case IR_OP_SIGMOID: case IR_OP_TANH: case IR_OP_ADD: case IR_OP_SUB: case IR_OP_MUL:
    case IR_OP_MAX: case IR_OP_MIN: case IR_OP_SUM: case IR_OP_NEG: case IR_OP_ABS: case IR_OP_IDENTITY:
        return true;
    default:
        return false;
    }
}

/* n's op on blocked operands in[] (n's attributes copied) in its place:
 * the moved op, whose result's NCHW view replaces n's. */
static int move_as(lay *L, ir_node *n, int op, int nin, ir_value *const *in)
{
    ir_node *m = add_node(L, op, n->out[0]->name, "_nchwc", nin, in, NULL);
    if (!m)
        return -1;
    m->name = n->name;
    for (int i = 0; i < n->nattr; i++)
        if (ir_node_add_attr(L->g, m, &n->attrs[i]) < 0)
            return ir_errorf(L->c->diag, "out of memory");
    if (infer(L, m) < 0)
        return -1;
    L->moved++;
    return finish(L, n, m->out[0]);
}

static int move_elementwise(lay *L, ir_node *n)
{
    if (!(ir_ops[n->op].flags & IR_F_ELEMWISE) || n->nout != 1 || n->nin < 1 || n->nin > 8)
        return 0;
    const ir_type *t = &n->out[0]->type;
    /* a [N, C, L] result of a lifted 1-D conv's twin, or of ops on it: its
     * operands each that twin's shape (same_dims) or one element */
    bool seq = t->rank == 3 && ir_dim_is_const(t->dims[1]);
    if ((!is_image(t) && !seq) || (t->dims[1].v % L->cb && !pad_safe(n->op)))
        return 0;
    for (int i = 0; seq && i < n->nin; i++) {
        int64_t ne;
        if (n->in[i] && !twin_of(L, n->in[i]) &&
            !(ir_type_is_static(&n->in[i]->type) && ir_type_numel(&n->in[i]->type, &ne) && ne == 1))
            return 0;
    }
    bool any = false, fail = false;
    for (int i = 0; i < n->nin; i++)
        any = any || twin_of(L, n->in[i]);
    if (!any)
        return 0;
    ir_value *in[8];
    for (int i = 0; i < n->nin && !fail; i++)
        in[i] = n->in[i] ? blocked_operand(L, n->in[i], t, &fail) : NULL;
    if (fail)
        return 0;
    return move_as(L, n, n->op, n->nin, in);
}

/* Inference BatchNormalization with constant parameters as x*s + t on
 * blocked data (s = scale/sqrt(var+eps), t = B - mean*s, re-laid out as
 * [C/cb, 1, 1, cb]): the BatchNormalizations fold-bn could not fold. */
static int move_batchnorm(lay *L, ir_node *n)
{
    ir_value *x = n->in[0], *b = twin_of(L, x);
    if (!b || n->nin != 5 || n->nout != 1 || ir_attr_int(n, "training_mode", 0) != 0)
        return 0;
    int64_t C = x->type.dims[1].v;
    for (int i = 1; i < 5; i++)
        if (!n->in[i] || n->in[i]->kind != IR_VAL_CONST || !is_static_f32(n->in[i], 1) ||
            n->in[i]->type.dims[0].v != C)
            return 0;
    ir_type t = {.dtype = IR_F32, .rank = 4,
                 .dims = {ir_dim_const(cpad(L, C) / L->cb), ir_dim_const(1), ir_dim_const(1), ir_dim_const(L->cb)}};
    char buf[256];
    ir_value *sv = ir_graph_add_const(L->g, ir_graph_fresh_name(L->g, n->out[0]->name, "_scale", buf, sizeof buf), &t, NULL,
                                      L->c->diag);
    ir_value *tv = sv ? ir_graph_add_const(L->g, ir_graph_fresh_name(L->g, n->out[0]->name, "_shift", buf, sizeof buf), &t,
                                           NULL, L->c->diag)
                      : NULL;
    if (!tv)
        return -1;
    double eps = ir_attr_float(n, "epsilon", 1e-5f);
    const float *sc = n->in[1]->cval.data, *bb = n->in[2]->cval.data, *mu = n->in[3]->cval.data,
                *var = n->in[4]->cval.data;
    float *so = sv->cval.data, *to = tv->cval.data;
    for (int64_t i = 0; i < C; i++) {
        double s = sc[i] / sqrt((double)var[i] + eps);
        so[i] = (float)s;
        to[i] = (float)(bb[i] - mu[i] * s);
    }
    ir_value *in[2] = {b, sv};
    ir_node *m = add_node(L, IR_OP_MUL, n->out[0]->name, "_nchwc_scaled", 2, in, NULL);
    if (!m || infer(L, m) < 0)
        return -1;
    in[0] = m->out[0];
    in[1] = tv;
    ir_node *a = add_node(L, IR_OP_ADD, n->out[0]->name, "_nchwc", 2, in, NULL);
    if (!a || infer(L, a) < 0)
        return -1;
    m->name = a->name = n->name;
    L->moved++;
    return finish(L, n, a->out[0]);
}

/* A pool whose window is the whole plane (output 1x1, no padding) as a
 * reduction over the blocked H, W. */
/* MaxPool or AveragePool on blocked data: the same op over three spatial
 * dims (H, W, lanes), the lanes' window 1 wide, with explicit pads: an
 * auto_pad becomes the pads it stands for where they are known, VALID
 * none, SAME_* the total max(0, (ceil(in / s) - 1) s + (k - 1) d + 1 - in)
 * (the odd one at the end for UPPER, at the start for LOWER), which with
 * stride 1 is (k - 1) d for any plane, symbolic too; the output then is
 * ceil(in / s) as SAME's, so ceil_mode is dropped (the dims are checked
 * below). */
static int move_window_pool(lay *L, ir_node *n, ir_value *b)
{
    const int64_t *v;
    int64_t k[3], st[3] = {1, 1, 1}, dl[3] = {1, 1, 1}, p[6] = {0};
    const char *ap = ir_attr_string(n, "auto_pad", "NOTSET");
    bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
    if ((n->op != IR_OP_MAX_POOL && n->op != IR_OP_AVERAGE_POOL) ||
        (strcmp(ap, "NOTSET") && strcmp(ap, "VALID") && !same) || ir_attr_ints(n, "kernel_shape", &v) != 2)
        return 0;
    /* counting pads with ceil_mode over a symbolic plane: only the NCHW
     * lowering takes the last window's divisor from the run's size */
    if (n->op == IR_OP_AVERAGE_POOL && !same && ir_attr_int(n, "count_include_pad", 0) &&
        ir_attr_int(n, "ceil_mode", 0) && !ir_type_is_static(&n->in[0]->type))
        return 0;
    k[0] = v[0], k[1] = v[1], k[2] = 1;
    int cnt = ir_attr_ints(n, "strides", &v);
    if (cnt >= 0 && cnt != 2)
        return 0;
    for (int i = 0; i < cnt; i++)
        st[i] = v[i];
    cnt = ir_attr_ints(n, "dilations", &v);
    if (cnt >= 0 && cnt != 2)
        return 0;
    for (int i = 0; i < cnt; i++)
        dl[i] = v[i];
    cnt = ir_attr_ints(n, "pads", &v);
    if (cnt >= 0 && cnt != 4)
        return 0;
    if (!strcmp(ap, "NOTSET"))
        for (int i = 0; i < cnt; i++)
            p[i < 2 ? i : i + 1] = v[i];
    for (int i = 0; same && i < 2; i++) {
        ir_dim in = n->in[0]->type.dims[2 + i];
        int64_t total = (k[i] - 1) * dl[i];
        if (st[i] != 1) {
            if (!ir_dim_is_const(in))
                return 0;
            total += ((in.v + st[i] - 1) / st[i] - 1) * st[i] + 1 - in.v;
        }
        total = total > 0 ? total : 0;
        p[i] = !strcmp(ap, "SAME_UPPER") ? total / 2 : total - total / 2;
        p[i + 3] = total - p[i];
    }
    ir_node *m = add_node(L, n->op, n->out[0]->name, "_nchwc", 1, &b, NULL);
    if (!m)
        return -1;
    m->name = n->name;
    for (int i = 0; i < n->nattr; i++) {
        const char *an = n->attrs[i].name;
        if (strcmp(an, "kernel_shape") && strcmp(an, "strides") && strcmp(an, "dilations") && strcmp(an, "pads") &&
            strcmp(an, "storage_order") && strcmp(an, "auto_pad") && (!same || strcmp(an, "ceil_mode")) &&
            ir_node_add_attr(L->g, m, &n->attrs[i]) < 0)
            return ir_errorf(L->c->diag, "out of memory");
    }
    if (ir_node_set_ints(L->g, m, "kernel_shape", k, 3) < 0 || ir_node_set_ints(L->g, m, "strides", st, 3) < 0 ||
        ir_node_set_ints(L->g, m, "pads", p, 6) < 0 ||
        (ir_node_attr(n, "dilations") && ir_node_set_ints(L->g, m, "dilations", dl, 3) < 0))
        return ir_errorf(L->c->diag, "out of memory");
    if (infer(L, m) < 0)
        return -1;
    const ir_type *yt = &n->out[0]->type, *mt = &m->out[0]->type;
    if (mt->rank != 5 || !ir_dim_eq(mt->dims[2], yt->dims[2]) || !ir_dim_eq(mt->dims[3], yt->dims[3])) {
        ir_node_erase(m); /* not expected: the windows are the same arithmetic */
        return 0;
    }
    L->moved++;
    return finish(L, n, m->out[0]);
}

static int move_pool(lay *L, ir_node *n)
{
    ir_value *x = n->nin >= 1 ? n->in[0] : NULL, *b = twin_of(L, x);
    if (!b || n->nout != 1)
        return 0;
    const ir_type *xt = &x->type, *yt = &n->out[0]->type;
    if (yt->rank != 4 || !is_image(xt) || !is_image(yt))
        return 0;
    bool global = n->op == IR_OP_GLOBAL_AVERAGE_POOL || n->op == IR_OP_GLOBAL_MAX_POOL;
    /* over a symbolic plane: the global pools (a squeeze-excite's), which
     * are ReduceMean/ReduceMax of any plane, and window pools with explicit
     * pads (pool_blocked.c runs over the run's plane: YOLOv8's SPPF) */
    if (!global && (!ir_type_is_static(yt) || !ir_type_is_static(xt)))
        return move_window_pool(L, n, b);
    if (!global && (yt->dims[2].v != 1 || yt->dims[3].v != 1))
        return move_window_pool(L, n, b);
    int op;
    switch (n->op) {
    case IR_OP_GLOBAL_AVERAGE_POOL: op = IR_OP_REDUCE_MEAN; break;
    case IR_OP_GLOBAL_MAX_POOL: op = IR_OP_REDUCE_MAX; break;
    case IR_OP_AVERAGE_POOL:
    case IR_OP_MAX_POOL: {
        const int64_t *k, *p;
        int nk = ir_attr_ints(n, "kernel_shape", &k), np = ir_attr_ints(n, "pads", &p);
        bool whole = nk == 2 && k[0] == xt->dims[2].v && k[1] == xt->dims[3].v &&
                     !strcmp(ir_attr_string(n, "auto_pad", "NOTSET"), "NOTSET") && ir_attr_ints(n, "dilations", &p) < 0;
        np = ir_attr_ints(n, "pads", &p);
        for (int i = 0; i < np; i++)
            whole = whole && !p[i];
        if (!whole)
            return move_window_pool(L, n, b);
        op = n->op == IR_OP_AVERAGE_POOL ? IR_OP_REDUCE_MEAN : IR_OP_REDUCE_MAX;
        break;
    }
    default:
        return 0;
    }
    static const int64_t axes[2] = {2, 3};
    ir_value *av = i64_const(L, x->name, "_axes", axes, 2);
    ir_value *in[2] = {b, av};
    ir_node *m = av ? add_node(L, op, n->out[0]->name, "_nchwc", 2, in, NULL) : NULL;
    if (!m || ir_node_set_int(L->g, m, "keepdims", 1) < 0)
        return m ? ir_errorf(L->c->diag, "out of memory") : -1;
    m->name = n->name;
    if (infer(L, m) < 0)
        return -1;
    L->moved++;
    return finish(L, n, m->out[0]);
}

/* Resize of a blocked value over H and W only (constant scales [1, 1,
 * sh, sw] or sizes [N, C, h, w]), nearest or linear, as the same Resize
 * of [N, C/cb, H, W, cb] with the lanes' scale 1: a scale of 1 maps each
 * index to itself in every coordinate mode but tf_crop_and_resize (which
 * reads roi), and nearest copies or linear blends of finite pad lanes are
 * finite. The FPN of a detector (DBNet's upsampled sums) then stays in
 * blocks between its convs instead of a reorder out and back per level;
 * the kernel's last dim, the lanes, is a vector loop. */
static int move_resize(lay *L, ir_node *n)
{
    ir_value *x = n->nin >= 1 ? n->in[0] : NULL, *b = twin_of(L, x);
    if (!b || n->nout != 1 || n->nin < 3 || n->nin > 4 || !is_image(&x->type) || !is_image(&n->out[0]->type))
        return 0;
    const char *mode = ir_attr_string(n, "mode", "nearest");
    const int64_t *ax;
    if ((strcmp(mode, "nearest") && strcmp(mode, "linear")) || ir_attr_int(n, "antialias", 0) ||
        !strcmp(ir_attr_string(n, "coordinate_transformation_mode", "half_pixel"), "tf_crop_and_resize") ||
        ir_attr_ints(n, "axes", &ax) >= 0)
        return 0;
    ir_value *sc = n->in[2], *sz = n->nin > 3 ? n->in[3] : NULL, *v = sz ? sz : sc;
    if ((sz && sc && sc->type.rank == 1 && sc->type.dims[0].v != 0) || !v || v->kind != IR_VAL_CONST ||
        v->type.rank != 1 || v->type.dims[0].v != 4 || v->type.dtype != (sz ? IR_I64 : IR_F32))
        return 0;
    /* sizes name the batch and channels as constants: static values only
     * (scales, as upsampling detectors give them, over symbolic ones too) */
    if (sz && (!ir_type_is_static(&x->type) || !ir_type_is_static(&n->out[0]->type)))
        return 0;
    if (sz && strcmp(ir_attr_string(n, "keep_aspect_ratio_policy", "stretch"), "stretch"))
        return 0;
    const ir_dim *xd = x->type.dims, *bd = b->type.dims;
    double f[4];
    int64_t q[4];
    for (int i = 0; i < 4; i++) {
        f[i] = sz ? 0 : ir_tensor_getf(&v->cval, i);
        q[i] = sz ? ir_tensor_geti(&v->cval, i) : 0;
    }
    if (sz ? q[0] != xd[0].v || q[1] != xd[1].v : f[0] != 1 || f[1] != 1)
        return 0;
    ir_type t = {.dtype = sz ? IR_I64 : IR_F32, .rank = 1, .dims = {ir_dim_const(5)}};
    char buf[256];
    ir_value *nv = ir_graph_add_const(L->g, ir_graph_fresh_name(L->g, v->name, "_nchwc", buf, sizeof buf), &t, NULL,
                                      L->c->diag);
    if (!nv)
        return -1;
    if (sz) {
        int64_t d[5] = {bd[0].v, bd[1].v, q[2], q[3], bd[4].v};
        memcpy(nv->cval.data, d, sizeof d);
    } else {
        float d[5] = {1, 1, (float)f[2], (float)f[3], 1};
        memcpy(nv->cval.data, d, sizeof d);
    }
    ir_value *in[4] = {b, n->in[1], sz ? NULL : nv, sz ? nv : NULL};
    return move_as(L, n, IR_OP_RESIZE, sz ? 4 : 3, in);
}

/* Concat along the channels of values that all have blocked twins, each
 * a whole number of blocks wide, as Concat along the blocked C/cb axis:
 * channel c of part k lands in block (offset_k + c) / cb, lane c % cb,
 * exactly where the NCHW Concat puts it (SqueezeNet's fire modules,
 * Inception's branches, DenseNet's dense blocks), so the parts need no
 * reorder to NCHW and back. Parts that are not whole blocks (PP-OCR's
 * detectors concatenate four of 24 channels: each went to NCHW and the
 * result back, 12-15% of the model) make a ConcatNCHWc, which moves their
 * lanes to where the channels land, in one pass. */
static int move_concat(lay *L, ir_node *n)
{
    const ir_type *t = &n->out[0]->type;
    if (n->nout != 1 || n->nin < 1 || n->nin > 64 || !is_image(t))
        return 0;
    int64_t axis = ir_attr_int(n, "axis", 0);
    if (axis != 1 && axis != -3)
        return 0;
    ir_value *in[64];
    int64_t ch[64];
    bool whole = true;
    for (int i = 0; i < n->nin; i++) {
        /* whole blocks, but for the last part's pad lanes, which stay last */
        ir_value *v = n->in[i];
        if (!v || !(in[i] = twin_of(L, v)) || !is_image_f32(v))
            return 0;
        ch[i] = v->type.dims[1].v;
        whole = whole && (i + 1 == n->nin || ch[i] % L->cb == 0);
    }
    if (!whole && !pad_ok(L, t->dims[1].v))
        return 0;
    ir_node *m = add_node(L, whole ? IR_OP_CONCAT : IR_OP_CONCAT_NCHWC, n->out[0]->name, "_nchwc", n->nin, in, NULL);
    if (!m)
        return -1;
    m->name = n->name;
    if (whole ? ir_node_set_int(L->g, m, "axis", 1) < 0 : ir_node_set_ints(L->g, m, "channels", ch, n->nin) < 0)
        return ir_errorf(L->c->diag, "out of memory");
    if (infer(L, m) < 0)
        return -1;
    L->moved++;
    return finish(L, n, m->out[0]);
}

/* Split along the channels of a value with a blocked twin into parts that
 * are each a whole number of blocks wide, as Split of the twin along the
 * blocked C/cb axis by the parts' block counts: part k's channel c is
 * lane c % cb of block (offset_k + c) / cb of the input, so each part's
 * blocks are the input's, in order (YOLOv8's C2f blocks split their cv1
 * in two halves; without this the halves left the blocked layout, and
 * with symbolic dims, where conv_ok allows no new reorder into blocks,
 * every conv after the first Split ran NCHW: NudeNet's 320n 2x slower
 * than pinned). */
static int move_split(lay *L, ir_node *n)
{
    const ir_value *x = n->in[0];
    ir_value *bx = x ? twin_of(L, x) : NULL;
    if (!bx || n->nout < 1 || n->nout > 64 || !is_image_f32(x) || x->type.dims[1].v % L->cb ||
        bx->type.dims[1].v * L->cb != x->type.dims[1].v)
        return 0;
    int64_t axis = ir_attr_int(n, "axis", 0);
    if (axis != 1 && axis != -3)
        return 0;
    int64_t parts[64];
    for (int i = 0; i < n->nout; i++) {
        const ir_type *t = &n->out[i]->type;
        if (!is_image(t) || !ir_dim_is_const(t->dims[1]) || t->dims[1].v % L->cb ||
            t->dims[1].v == 0)
            return 0;
        parts[i] = t->dims[1].v / L->cb;
    }
    ir_value *in[2] = {bx, i64_const(L, n->out[0]->name, "_blocks", parts, n->nout)};
    if (!in[1])
        return -1;
    const char *names[64];
    char buf[64][256];
    for (int i = 0; i < n->nout; i++)
        names[i] = ir_graph_fresh_name(L->g, n->out[i]->name, "_nchwc", buf[i], sizeof buf[i]);
    ir_node *m = ir_graph_add_node(L->g, IR_OP_SPLIT, n->name, 2, in, n->nout, names, L->c->diag);
    if (!m)
        return -1;
    if (ir_node_set_int(L->g, m, "axis", 1) < 0)
        return ir_errorf(L->c->diag, "out of memory");
    if (infer(L, m) < 0)
        return -1;
    for (int i = 0; i < n->nout; i++)
        if (finish_value(L, n->out[i], m->out[i]) < 0)
            return -1;
    ir_node_erase(n);
    L->c->changed = true;
    L->moved++;
    return 0;
}

/* ---- the pass ------------------------------------------------------------------ */

/* Removes from-blocked reorders nobody uses; returns how many. */
static int64_t cancel_unused(lay *L)
{
    int64_t n = 0;
    for (int i = 0; i < L->nfrom; i++) {
        ir_node *r = L->from[i];
        if (r->dead || ir_value_count_uses(L->g, r->out[0]) > 0)
            continue;
        /* [Slice <-] Reshape <- Transpose, each with its constants */
        for (ir_node *m = r; m && !m->dead && ir_value_count_uses(L->g, m->out[0]) == 0;) {
            ir_node *prev = m->op == IR_OP_TRANSPOSE ? NULL : m->in[0]->def;
            ir_value *consts[3] = {0};
            for (int j = 1; j < m->nin && j < 4; j++)
                consts[j - 1] = m->in[j] && m->in[j]->kind == IR_VAL_CONST ? m->in[j] : NULL;
            ir_node_erase(m);
            for (int j = 0; j < 3; j++)
                if (consts[j] && ir_value_count_uses(L->g, consts[j]) == 0)
                    ir_value_erase(consts[j]);
            m = prev;
        }
        n++;
    }
    return n;
}

/* Whether every Conv of g is a dense one whose channels (input and
 * output) are whole blocks of 32, or an image's few input channels. */
static bool convs_in_32s(const ir_graph *g)
{
    for (int i = 0; i < g->nnodes; i++) {
        const ir_node *n = g->nodes[i];
        if (n->dead || n->op != IR_OP_CONV)
            continue;
        if (n->nin < 2 || n->nout != 1 || ir_attr_int(n, "group", 1) != 1 || n->in[0]->type.rank != 4 ||
            n->out[0]->type.rank != 4)
            return false;
        ir_dim ci = n->in[0]->type.dims[1], co = n->out[0]->type.dims[1];
        if (!ir_dim_is_const(ci) || !ir_dim_is_const(co) || co.v % 32 || (ci.v % 32 && ci.v > 4))
            return false;
    }
    return true;
}

/* The block when the options name none: the target's f32 vector width,
 * or 32 where --precision=bf16 puts the convolutions on AMX-BF16 tiles
 * and all of them have channels in 32s. A tile product is 64 bytes deep:
 * a pixel of 32 bf16 lanes fills a tile row, where one of 16 fills half
 * and the product does half the work in the same time (ResNet-50's 3x3
 * and 1x1 convs). A model with 16- or 48-channel convs keeps 16, which
 * blocks them without padding. */
static int64_t layout_block(const pass_ctx *c)
{
    int64_t cb = icc_target_layout_block(c->target);
    if (cb == 16 && c->precision && c->precision->mode == ICC_PREC_BF16 && c->target &&
        cg_schedule_amx_bf16(c->target) && convs_in_32s(c->g))
        cb = 32;
    return cb;
}

int pass_layout(pass_ctx *c)
{
    lay L = {.c = c, .g = c->g};
    L.cb = pass_opt_int(c, "block", 0);
    if (L.cb <= 0 && !cg_schedule_cpu_layouts(c->target))
        return 0;
    if (L.cb <= 0)
        L.cb = layout_block(c);
    if (L.cb > 1024)
        return ir_errorf(c->diag, "layout: block %lld is too large", (long long)L.cb);
    L.pad = pass_opt_int(c, "pad", 1) != 0;
    L.min_k = pass_opt_int(c, "min-k", 1);
    int64_t int8 = pass_opt_int(c, "int8", 1);
    L.int_convs = int8 == 2 || (int8 == 1 && c->target && cg_schedule_int8_packed_quads(c->target));
    int rc = 0, n0 = c->g->nnodes;
    for (int i = 0; i < n0 && rc == 0; i++) {
        ir_node *n = c->g->nodes[i];
        if (n->dead || n->group)
            continue;
        int64_t pads[4], s[2], dl[2], ib, xz;
        bool shift;
        /* yt: the column or 1-D result of a conv rewritten along a row */
        ir_value *yt = NULL;
        int64_t p1[2], s1, d1;
        if (materialize_int_weights(&L, n) < 0 ||
            (column_conv(n, pads, s, dl) && !(n = rotate_column(&L, n, pads, s, dl, &yt))) ||
            (conv1d_ok(n, p1, &s1, &d1) && !(n = lift_conv1d(&L, n, p1, s1, d1, &yt)))) {
            rc = -1;
            break;
        }
        if (conv_ok(&L, n, pads, s, dl, &ib)) {
            rc = convert_conv(&L, n, pads, s, dl, ib);
            if (rc == 0 && yt)
                rc = column_twin(&L, yt);
        }
        else if (conv_int_ok(&L, n, pads, s, dl, &xz, &ib, &shift))
            rc = convert_conv_int(&L, n, pads, s, dl, xz, ib, shift);
        else if (dw_ok(&L, n, pads, s, dl)) {
            rc = convert_dw(&L, n, pads, s, dl);
            if (rc == 0 && yt)
                rc = column_twin(&L, yt);
        }
        else if (ir_ops[n->op].flags & IR_F_ELEMWISE)
            rc = move_elementwise(&L, n);
        else if (n->op == IR_OP_BATCH_NORMALIZATION)
            rc = move_batchnorm(&L, n);
        else if (n->op == IR_OP_CONCAT)
            rc = move_concat(&L, n);
        else if (n->op == IR_OP_SPLIT)
            rc = move_split(&L, n);
        else if (n->op == IR_OP_RESIZE)
            rc = move_resize(&L, n);
        else
            rc = move_pool(&L, n);
    }
    if (rc == 0) {
        int64_t cancelled = cancel_unused(&L);
        int64_t kept = L.nfrom - cancelled;
        if (L.convs || L.moved || L.rotated || L.erased) {
            ir_graph_compact(c->g);
            rc = ir_graph_toposort(c->g, c->diag);
        }
        pass_stat(c, "convs along a column rotated", L.rotated);
        pass_stat(c, "convs converted", L.convs);
        pass_stat(c, "ops moved to blocked", L.moved);
        pass_stat(c, "reorders inserted", L.to_blk + kept);
        pass_stat(c, "reorders cancelled", cancelled);
    }
    free(L.twin);
    free(L.from);
    return rc;
}
