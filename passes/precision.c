/* precision.c - the `precision` pass and the precision API (precision.h).
 *
 * The pass applies the mode its options carry (the driver's
 * --precision, or `mode=` in a pipeline): nothing for fp32; for bf16
 * and fp16 the constant weights of contractions become half-precision
 * constants read through a Cast to f32; int8 modes go to precision_int8
 * (passes/quantize.c).
 */
#include "passes/pass.h"
#include "codegen/schedule.h"
#include "ir/ops.h"
#include "ir/ref/interp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const prec_names[] = {
    [ICC_PREC_FP32] = "fp32", [ICC_PREC_BF16] = "bf16", [ICC_PREC_FP16] = "fp16",
    [ICC_PREC_INT8] = "int8", [ICC_PREC_INT8_DYNAMIC] = "int8-dynamic",
};

int icc_precision_parse(const char *text, icc_precision *out, icc_diag *d)
{
    for (int i = 0; i < (int)(sizeof prec_names / sizeof *prec_names); i++)
        if (text && !strcmp(text, prec_names[i])) {
            *out = (icc_precision)i;
            return 0;
        }
    return ir_errorf(d, "--precision=%.64s: expected fp32, bf16, fp16, int8 or int8-dynamic", text ? text : "");
}

const char *icc_precision_name(icc_precision p)
{
    return (unsigned)p < sizeof prec_names / sizeof *prec_names ? prec_names[p] : "unknown";
}

/* True when name is one of the items of list (separated by sep). */
static bool list_has(const char *list, char sep, const char *name)
{
    size_t n = strlen(name);
    if (!list || !n)
        return false;
    for (const char *p = list; *p;) {
        const char *e = strchr(p, sep);
        size_t k = e ? (size_t)(e - p) : strlen(p);
        if (k == n && !strncmp(p, name, n))
            return true;
        p += k + (p[k] == sep);
    }
    return false;
}

/* A normalization by the statistics of its own input (LayerNorm and the
 * like, not Softmax or an inference BatchNorm): what comes out of it is
 * re-standardized, so a contraction before it is a hidden layer, not the
 * model's head. */
static bool restandardizes(const ir_node *m)
{
    switch (m->op) {
    case IR_OP_LAYER_NORMALIZATION:
    case IR_OP_RMS_NORMALIZATION:
    case IR_OP_GROUP_NORMALIZATION:
    case IR_OP_INSTANCE_NORMALIZATION:
    case IR_OP_MEAN_VARIANCE_NORMALIZATION:
    case IR_OP_LP_NORMALIZATION:
        return true;
    default:
        return false;
    }
}

/* The last layer: for some graph output, the contraction latest in node
 * order among the nodes that output depends on (walked backwards over the
 * topologically ordered nodes), unless a normalization that
 * re-standardizes lies between: an encoder layer whose output is a
 * LayerNorm ends in no head, and keeping its FFN's second MatMul in fp32
 * cost the BERT layer a third of its bf16 speed for 3 dB of SQNR
 * (60.0 -> 63.3, measured). */
static bool is_last_contraction(const ir_graph *g, const ir_node *n)
{
    if (!(ir_ops[n->op].flags & IR_F_CONTRACTION))
        return false;
    char *need = malloc((size_t)g->nvalues + 1);
    bool last = false;
    if (!need)
        return false;
    for (int o = 0; o < g->noutputs && !last; o++) {
        memset(need, 0, (size_t)g->nvalues + 1);
        need[g->outputs[o]->id] = 1;
        for (int k = g->nnodes - 1; k >= 0; k--) {
            const ir_node *m = g->nodes[k];
            bool used = false;
            for (int j = 0; j < m->nout && !m->dead; j++)
                used |= m->out[j] && need[m->out[j]->id];
            if (!used)
                continue;
            if (ir_ops[m->op].flags & IR_F_CONTRACTION) {
                last = m == n;
                break;
            }
            if (restandardizes(m))
                continue;
            for (int j = 0; j < m->nin; j++)
                if (m->in[j])
                    need[m->in[j]->id] = 1;
        }
    }
    free(need);
    return last;
}

bool icc_precision_keeps(const icc_precision_opts *o, const ir_graph *g, const ir_node *n)
{
    if (!o)
        return false;
    /* layout's ConvNCHWc is the user's Conv */
    const char *op = n->op == IR_OP_CONV_NCHWC ? ir_ops[IR_OP_CONV].name : ir_ops[n->op].name;
    if (list_has(o->keep, ',', op) || list_has(o->keep, ',', ir_ops[n->op].name) || list_has(o->keep, ',', n->name))
        return true;
    if (o->no_default_keep)
        return false;
    return (ir_ops[n->op].flags & IR_F_NORM) || is_last_contraction(g, n);
}

/* The options this run applies: the driver's, overridden by the pass's
 * own `mode=`, `keep=` (items joined by '+') and `default-keep=`.
 * keep_buf receives the converted keep list. */
static int resolve_opts(pass_ctx *c, icc_precision_opts *o, char *keep_buf, size_t n)
{
    *o = c->precision ? *c->precision : (icc_precision_opts){ICC_PREC_FP32, NULL, false, NULL};
    for (int i = 0; i < c->nopts; i++) {
        const pass_opt *p = &c->opts[i];
        if (!strcmp(p->key, "mode") && strcmp(p->val, "driver")) {
            if (icc_precision_parse(p->val, &o->mode, c->diag) < 0)
                return -1;
        } else if (!strcmp(p->key, "keep") && strcmp(p->val, "none")) {
            snprintf(keep_buf, n, "%s", p->val);
            for (char *s = keep_buf; *s; s++)
                if (*s == '+')
                    *s = ',';
            o->keep = keep_buf;
        } else if (!strcmp(p->key, "default-keep")) {
            o->no_default_keep = !strtoll(p->val, NULL, 0);
        }
    }
    return 0;
}

/* A contraction whose input 1 (MatMul's and Gemm's B, Conv's W) the
 * half-precision rewrite stores narrow when it is an f32 constant. */
static bool weight_contraction(const ir_node *n)
{
    return (n->op == IR_OP_MATMUL || n->op == IR_OP_GEMM || n->op == IR_OP_CONV || n->op == IR_OP_CONV_NCHWC) &&
           n->nin > 1 && n->nout == 1 && n->out[0]->type.dtype == IR_F32;
}

/* An Attention whose Q, K and V (inputs 0..2) the bf16 rewrite rounds:
 * one output, no cache, f32 (rounded_attention). */
static bool attention_narrowable(const ir_node *n)
{
    return n->op == IR_OP_ATTENTION && n->nout == 1 && n->out[0]->type.dtype == IR_F32 &&
           !(n->nin > 4 && n->in[4]) && !(n->nin > 5 && n->in[5]);
}

bool icc_precision_half_weight(const ir_node *n, int i)
{
    if (attention_narrowable(n)) {
        const ir_node *p = i < 3 && n->in[i] && n->in[i]->kind == IR_VAL_NODE ? n->in[i]->def : NULL;
        return p && p->op == IR_OP_CAST && p->nin == 1 && p->in[0]->type.dtype == IR_BF16 &&
               p->out[0]->type.dtype == IR_F32;
    }
    bool act = i == 0 && (n->op == IR_OP_MATMUL || n->op == IR_OP_GEMM || n->op == IR_OP_CONV_NCHWC);
    if (!weight_contraction(n) || (i != 1 && !act) || i >= n->nin || !n->in[i] || n->in[i]->kind != IR_VAL_NODE)
        return false;
    const ir_node *p = n->in[i]->def;
    const ir_value *h = p->op == IR_OP_CAST && p->nin == 1 ? p->in[0] : NULL;
    return h && (act || h->kind == IR_VAL_CONST) && (h->type.dtype == IR_BF16 || h->type.dtype == IR_F16) &&
           p->out[0]->type.dtype == IR_F32;
}

/* Whether this run rounds activations: bf16 mode where the target's
 * contractions multiply bf16 operands (cg_schedule_bf16_products; the
 * pass's `activations=bf16|f32` decides instead; docs/precision.md). */
static bool rounds_activations(pass_ctx *c, const icc_precision_opts *o)
{
    const char *a = pass_opt_str(c, "activations", "target");
    if (o->mode != ICC_PREC_BF16 || !strcmp(a, "f32"))
        return false;
    return !strcmp(a, "bf16") || cg_schedule_bf16_products(c->target);
}

/* bf16 activations: MatMul's and Gemm's A, and the input of a Conv with
 * one group or of layout's ConvNCHWc (the same Conv, blocked: the rounding
 * does not depend on the layout), rounded to bf16 as well (their
 * contractions then multiply two bf16 operands, as vdpbf16ps and AMX do);
 * an Attention's Q, K and V: rounded_attention. */
static bool rounds_activation(pass_ctx *c, const icc_precision_opts *o, const ir_node *n)
{
    const ir_value *x = n->in[0];
    bool conv = n->op == IR_OP_CONV_NCHWC || (n->op == IR_OP_CONV && ir_attr_int(n, "group", 1) == 1);
    return (n->op == IR_OP_MATMUL || n->op == IR_OP_GEMM || conv) && x && x->kind != IR_VAL_CONST &&
           x->type.dtype == IR_F32 && rounds_activations(c, o);
}

/* The node making x when it is a constant-mode Pad by zeros (no value
 * input) of a computed f32 value: the layout pass's explicit padding. */
static ir_node *zero_pad(const ir_value *x)
{
    ir_node *p = x->kind == IR_VAL_NODE ? x->def : NULL;
    if (!p || p->op != IR_OP_PAD || p->nout != 1 || (p->nin > 2 && p->in[2]) || !p->in[0] ||
        p->in[0]->kind == IR_VAL_CONST || p->in[0]->type.dtype != IR_F32 ||
        strcmp(ir_attr_string(p, "mode", "constant"), "constant"))
        return NULL;
    return p;
}

/* Cast(x, to = dt), its result named after `name` with suffix; NULL on
 * error. */
static ir_value *cast_to(pass_ctx *c, ir_value *x, ir_dtype dt, const char *name, const char *suffix)
{
    char buf[256];
    const char *hn = ir_graph_fresh_name(c->g, name, suffix, buf, sizeof buf);
    ir_node *k = ir_graph_add_node(c->g, IR_OP_CAST, "", 1, &x, 1, &hn, c->diag);
    if (!k || ir_node_set_int(c->g, k, "to", ir_dtype_to_onnx(dt)) < 0 || ir_infer_node(k, c->diag) < 0)
        return NULL;
    return k->out[0];
}

/* The activation x rounded to bf16, half[x->id]: its Cast(to=bf16),
 * made on first use, one per value; NULL on error. */
static ir_value *rounded(pass_ctx *c, ir_value **half, ir_value *x)
{
    if (!half[x->id] && (half[x->id] = cast_to(c, x, IR_BF16, x->name, ".bf16")))
        pass_stat(c, "activations rounded to bf16", 1);
    return half[x->id];
}

/* Pad p again, of the value h (p's input rounded), its result named after
 * p's with suffix; NULL on error. */
static ir_value *pad_again(pass_ctx *c, const ir_node *p, ir_value *h, const char *suffix)
{
    char buf[256];
    ir_value *in[4] = {h, p->in[1], NULL, p->nin > 3 ? p->in[3] : NULL};
    const char *nm = ir_graph_fresh_name(c->g, p->out[0]->name, suffix, buf, sizeof buf);
    ir_node *q = ir_graph_add_node(c->g, IR_OP_PAD, p->name, p->nin, in, 1, &nm, c->diag);
    if (!q)
        return NULL;
    for (int i = 0; i < p->nattr; i++)
        if (ir_node_add_attr(c->g, q, &p->attrs[i]) < 0)
            return ir_errorf(c->diag, "out of memory"), NULL;
    return ir_infer_node(q, c->diag) < 0 ? NULL : q->out[0];
}

/* (precision.h) */
ir_value *icc_precision_materialize(pass_ctx *c, ir_value *v, int *budget, bool *err)
{
    if (v->kind == IR_VAL_CONST)
        return v;
    ir_node *p = v->kind == IR_VAL_NODE ? v->def : NULL;
    if (!p || p->dead || p->nout != 1 || p->nin > 8 || --*budget < 0 || ir_node_has_subgraph(p) ||
        !ir_type_is_static(&v->type))
        return NULL;
    const ir_tensor *in[8] = {0};
    ir_value *made[8] = {0}; /* intermediate constants made here, erased once read */
    int rc = 0;
    for (int i = 0; i < p->nin && rc == 0; i++) {
        if (!p->in[i])
            continue;
        ir_value *k = icc_precision_materialize(c, p->in[i], budget, err);
        if (!k)
            rc = -1;
        else
            in[i] = &k->cval, made[i] = k != p->in[i] ? k : NULL;
    }
    ir_tensor t;
    if (rc == 0 && ir_eval_node(p, in, &t, c->diag) < 0)
        rc = -1, *err = true;
    for (int i = 0; i < p->nin; i++)
        if (made[i])
            ir_value_erase(made[i]);
    if (rc < 0)
        return NULL;
    char buf[256];
    ir_type ty;
    ir_type_of_tensor(&t, &ty);
    ir_value *k = ir_graph_add_const(c->g, ir_graph_fresh_name(c->g, v->name, "_value", buf, sizeof buf), &ty,
                                     t.data, c->diag);
    free(t.data);
    if (!k)
        *err = true;
    return k;
}

/* Erases the nodes computing v (and what they read) that nothing reads
 * any more. */
static void erase_unread(ir_graph *g, ir_value *v)
{
    if (v->kind != IR_VAL_NODE || !v->def || v->def->dead || v->def->nout != 1 || ir_value_count_uses(g, v) > 0)
        return;
    ir_node *p = v->def;
    ir_node_erase(p);
    for (int i = 0; i < p->nin; i++)
        if (p->in[i])
            erase_unread(g, p->in[i]);
}

/* Every finite value of f32 constant w stays finite in f16 (65504 is
 * the largest; from 65520 on, rounding gives inf). */
static bool fits_f16(const ir_value *w)
{
    const float *v = w->cval.data;
    for (int64_t i = 0; i < w->cval.numel; i++)
        if (isfinite(v[i]) && fabsf(v[i]) >= 65520.0f)
            return false;
    return true;
}

/* Weights computed from constants (icc_precision_materialize) become constants for the
 * contractions the rewrite lowers: one evaluation per computed value;
 * the nodes that computed them go when nothing else reads them. */
static int materialize_weights(pass_ctx *c, const icc_precision_opts *o)
{
    ir_graph *g = c->g;
    int nv = g->nvalues, nn = g->nnodes;
    ir_value **done = calloc((size_t)nv + 1, sizeof *done);
    if (!done)
        return ir_errorf(c->diag, "out of memory");
    for (int k = 0; k < nn; k++) {
        ir_node *n = g->nodes[k];
        ir_value *w = n->nin > 1 ? n->in[1] : NULL;
        if (n->dead || !weight_contraction(n) || !w || w->kind == IR_VAL_CONST || w->type.dtype != IR_F32 ||
            w->id >= nv || icc_precision_keeps(o, g, n))
            continue;
        if (!done[w->id]) {
            int budget = 8;
            bool err = false;
            if (!(done[w->id] = icc_precision_materialize(c, w, &budget, &err))) {
                if (err) {
                    free(done);
                    return -1;
                }
                continue;
            }
            pass_stat(c, "computed weights evaluated", 1);
        }
        for (int i = 1; i < n->nin; i++)
            if (n->in[i] == w)
                n->in[i] = done[w->id];
        erase_unread(g, w);
        c->changed = true;
    }
    free(done);
    return 0;
}

/* A new constant of type t named after base with suffix, zero-filled
 * (ir_graph_add_const zeroes a payload it is not given). */
static ir_value *zero_const(pass_ctx *c, const char *base, const char *suffix, const ir_type *t)
{
    char buf[256];
    return ir_graph_add_const(c->g, ir_graph_fresh_name(c->g, base, suffix, buf, sizeof buf), t, NULL, c->diag);
}

/* bf16 on a target with vdpbf16ps: a blocked conv over an image's few
 * channels, one lane per block (the layout pass's [N, C, H, W, 1], C <=
 * 8), has no pair kernel (an odd lane count), so it is re-blocked as one
 * block of C rounded up to even lanes (ResNet-50's 7x7 stem: 3 -> 4 lanes,
 * one of them zero): X is Transposed to [N, 1, H, W, C] and zero-padded in
 * its lanes by the same Pad that pads it spatially, W re-laid out as [M/mb,
 * 1, kh, kw, C', mb] with zero weights for the added lanes. lower_half
 * then rounds and pairs it as any other conv. */
static int reblock_images(pass_ctx *c, const icc_precision_opts *o)
{
    ir_graph *g = c->g;
    int nn = g->nnodes;
    for (int k = 0; k < nn; k++) {
        ir_node *n = g->nodes[k];
        if (n->dead || n->op != IR_OP_CONV_NCHWC || n->nin < 2 || !c->target || !cg_schedule_bf16_pairs(c->target) ||
            !rounds_activation(c, o, n) || icc_precision_keeps(o, g, n))
            continue;
        ir_value *x = n->in[0], *w = n->in[1];
        const int64_t *op;
        if (x->type.rank != 5 || !ir_type_is_static(&x->type) || x->type.dims[4].v != 1 || x->type.dims[1].v > 8 ||
            w->kind != IR_VAL_CONST || w->type.dtype != IR_F32 || w->type.rank != 6 ||
            ir_attr_int(n, "packed_k", 1) != 1 || (ir_attr_ints(n, "pads", &op) == 4 && (op[0] || op[1] || op[2] || op[3])))
            continue;
        ir_node *pad = zero_pad(x);
        ir_value *pv = pad ? pad->in[1] : NULL;
        if (pad && (!pv || pv->kind != IR_VAL_CONST || pv->cval.numel != 10 || pv->type.dtype != IR_I64))
            continue;
        ir_value *src = pad ? pad->in[0] : x;
        const ir_dim *wd = w->type.dims;
        int64_t C = x->type.dims[1].v, CL = (C + 1) / 2 * 2, MB = wd[0].v, KH = wd[2].v, KW = wd[3].v, ML = wd[5].v;
        /* X: [N, C, H, W, 1] -> [N, 1, H, W, C], padded (lanes to CL) */
        char buf[256];
        const char *tn = ir_graph_fresh_name(g, src->name, ".lanes", buf, sizeof buf);
        ir_node *t = ir_graph_add_node(g, IR_OP_TRANSPOSE, "", 1, &src, 1, &tn, c->diag);
        if (!t || ir_node_set_ints(g, t, "perm", (const int64_t[]){0, 4, 2, 3, 1}, 5) < 0 ||
            ir_infer_node(t, c->diag) < 0)
            return t ? ir_errorf(c->diag, "out of memory") : -1;
        ir_type pt = {.dtype = IR_I64, .rank = 1, .dims = {ir_dim_const(10)}};
        ir_value *pads = zero_const(c, src->name, ".lanes_pads", &pt);
        if (!pads)
            return -1;
        int64_t *pp = pads->cval.data;
        if (pv)
            memcpy(pp, pv->cval.data, sizeof(int64_t) * 10);
        pp[9] += CL - C;
        ir_value *pin[2] = {t->out[0], pads};
        const char *pn = ir_graph_fresh_name(g, src->name, ".lanes_pad", buf, sizeof buf);
        ir_node *p2 = ir_graph_add_node(g, IR_OP_PAD, n->name, 2, pin, 1, &pn, c->diag);
        if (!p2 || ir_infer_node(p2, c->diag) < 0)
            return -1;
        /* W: [MB, C, kh, kw, 1, ML] -> [MB, 1, kh, kw, CL, ML] */
        ir_type wt = w->type;
        wt.dims[1] = ir_dim_const(1);
        wt.dims[4] = ir_dim_const(CL);
        ir_value *w2 = zero_const(c, w->name, ".lanes", &wt);
        if (!w2)
            return -1;
        const float *ws = w->cval.data;
        float *wq = w2->cval.data;
        for (int64_t mb = 0; mb < MB; mb++)
            for (int64_t ci = 0; ci < C; ci++)
                for (int64_t tap = 0; tap < KH * KW; tap++)
                    memcpy(wq + ((mb * KH * KW + tap) * CL + ci) * ML, ws + ((mb * C + ci) * KH * KW + tap) * ML,
                           sizeof(float) * (size_t)ML);
        n->in[0] = p2->out[0];
        n->in[1] = w2;
        if (ir_infer_node(n, c->diag) < 0)
            return -1;
        if (pad && ir_value_count_uses(g, pad->out[0]) == 0) {
            ir_node_erase(pad);
            if (ir_value_count_uses(g, pv) == 0)
                ir_value_erase(pv);
        }
        if (ir_value_count_uses(g, w) == 0)
            ir_value_erase(w);
        c->changed = true;
        pass_stat(c, "image convs re-blocked to even lanes", 1);
    }
    return 0;
}

/* Whether the elementwise readers of rounded activations read the
 * rounded values too (the pass's `shared=`, default 1 for bf16). */
static bool shares_rounded(pass_ctx *c, const icc_precision_opts *o)
{
    return pass_opt_int(c, "shared", o->mode == ICC_PREC_BF16) != 0;
}

/* An activation rounded for its contractions (half[v]) whose other
 * readers are all elementwise and not kept fp32, and which is no graph
 * output: those readers read the rounded value too, each through a Cast
 * of its own (which fuses into its group), so the f32 activation is no
 * longer stored at all: its producer's kernel writes the bf16 values
 * alone, instead of the f32 ones and a Cast kernel after it. ResNet's
 * residual stream is such a value (a block's output, read by the next
 * block's 1x1 convs and its residual Sum): 14 Cast kernels, 8% of
 * ResNet-50's bf16 time, went. The Sum then adds the rounded residual,
 * as OpenVINO's bf16 mode does. Returns -1 on error. */
static int share_rounded(pass_ctx *c, const icc_precision_opts *o, ir_value **half, int nv, int nn)
{
    ir_graph *g = c->g;
    if (!shares_rounded(c, o))
        return 0;
    /* per value: its readers but its bf16 Cast, or -1 when it cannot share
     * (no such Cast, a graph output, or a reader that may not) */
    int *readers = malloc(((size_t)nv + 1) * sizeof *readers);
    if (!readers)
        return ir_errorf(c->diag, "out of memory");
    for (int v = 0; v < nv; v++) {
        const ir_value *h = half[v];
        readers[v] = h && h->kind == IR_VAL_NODE && h->def->op == IR_OP_CAST && h->def->in[0] == g->values[v] ? 0 : -1;
    }
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i]->id < nv)
            readers[g->outputs[i]->id] = -1;
    for (int pass = 0; pass < 2; pass++)   /* count the readers, then rewire them */
        for (int k = 0; k < nn; k++) {
            ir_node *n = g->nodes[k];
            for (int i = 0; !n->dead && i < n->nin; i++) {
                ir_value *x = n->in[i];
                if (!x || x->id >= nv || readers[x->id] < 0 || n == half[x->id]->def)
                    continue;
                if (pass == 0) {
                    bool may = (ir_ops[n->op].flags & IR_F_ELEMWISE) && !icc_precision_keeps(o, g, n);
                    readers[x->id] = may ? readers[x->id] + 1 : -1;
                    continue;
                }
                ir_value *up = cast_to(c, half[x->id], IR_F32, x->name, ".f32");
                if (!up) {
                    free(readers);
                    return -1;
                }
                n->in[i] = up;
                pass_stat(c, "readers sharing a rounded activation", 1);
            }
        }
    free(readers);
    return 0;
}

/* (bf16 mode rounding activations; the int8 modes on AMX-BF16:
 * int8_attention_bf16) An Attention not kept fp32 (attention_narrowable:
 * one output, no cache) reads its computed Q, K and V rounded to bf16,
 * each through a Cast back to f32 that joins its kernel (the fuse pass),
 * as MatMul's A does: the kernel reads the bf16 values, which the linears
 * before it write themselves, and multiplies them on AMX tiles where the
 * target has them (codegen/lower/attention.c; the softmax stays f32).
 * half[v] is the rounded v, shared with the contractions' roundings. -1
 * on error. */
static int rounded_attention(pass_ctx *c, const icc_precision_opts *o, ir_value **half, int nv, int nn)
{
    ir_graph *g = c->g;
    for (int k = 0; k < nn; k++) {
        ir_node *n = g->nodes[k];
        if (n->dead || !attention_narrowable(n))
            continue;
        if (icc_precision_keeps(o, g, n)) {
            pass_stat(c, "attentions kept fp32", 1);
            continue;
        }
        bool ok = true;
        for (int i = 0; i < 3; i++)
            ok &= n->in[i] && n->in[i]->kind != IR_VAL_CONST && n->in[i]->type.dtype == IR_F32 && n->in[i]->id < nv;
        if (!ok)
            continue;
        for (int i = 0; i < 3; i++) {
            ir_value *x = n->in[i], *h = rounded(c, half, x);
            /* a Cast per input, even for one value read twice: each
             * joins the kernel only when it alone reads it */
            ir_value *up = h ? cast_to(c, h, IR_F32, x->name, ".f32") : NULL;
            if (!up)
                return -1;
            n->in[i] = up;
        }
        pass_stat(c, "attentions reading bf16", 1);
        c->changed = true;
    }
    return 0;
}

/* bf16/fp16: the f32 constant weight W of each contraction not kept in
 * fp32 becomes a constant W.bf16 (rounded to nearest even) read through
 * Cast(to=f32). One narrow constant per weight, one Cast per contraction
 * that reads it (so each Cast is read by one kernel, which converts in
 * its loads: fuse.c puts the Cast in the contraction's group). When
 * nothing reads W any more it is erased and the first Cast's result takes
 * its name, so the values of both graphs compare by name. For fp16, a
 * weight with values beyond f16's range stays fp32. */
static int lower_half(pass_ctx *c, const icc_precision_opts *o)
{
    ir_graph *g = c->g;
    ir_dtype hd = o->mode == ICC_PREC_BF16 ? IR_BF16 : IR_F16;
    const char *suffix = o->mode == ICC_PREC_BF16 ? ".bf16" : ".fp16";
    if (materialize_weights(c, o) < 0 || (hd == IR_BF16 && reblock_images(c, o) < 0))
        return -1;
    int nv = g->nvalues, nn = g->nnodes, rc = -1;
    ir_value **half = calloc((size_t)nv + 1, sizeof *half);
    ir_value **f32_in = calloc((size_t)nv + 1, sizeof *f32_in);
    ir_node **first = calloc((size_t)nv + 1, sizeof *first);
    if (!half || !f32_in || !first) {
        ir_errorf(c->diag, "out of memory");
        goto done;
    }
    int64_t before = 0, after = 0;
    bool dead_pads = false;
    for (int k = 0; k < nn; k++) {
        ir_node *n = g->nodes[k];
        ir_value *w = n->nin > 1 ? n->in[1] : NULL;
        if (n->dead || !weight_contraction(n) || !w || w->kind != IR_VAL_CONST || w->type.dtype != IR_F32 ||
            w->id >= nv)
            continue;
        if (icc_precision_keeps(o, g, n)) {
            pass_stat(c, "contractions kept fp32", 1);
            continue;
        }
        if (hd == IR_F16 && !fits_f16(w)) {
            pass_stat(c, "kept fp32: beyond f16 range", 1);
            continue;
        }
        char buf[256];
        if (!half[w->id]) {
            ir_type t = w->type;
            t.dtype = hd;
            ir_value *h = ir_graph_add_const(g, ir_graph_fresh_name(g, w->name, suffix, buf, sizeof buf), &t, NULL,
                                             c->diag);
            if (!h)
                goto done;
            const float *src = w->cval.data;
            uint16_t *dst = h->cval.data;
            for (int64_t i = 0; i < w->cval.numel; i++)
                dst[i] = hd == IR_BF16 ? ir_f32_to_bf16(src[i]) : ir_f32_to_f16(src[i]);
            half[w->id] = h;
            before += (int64_t)w->cval.nbytes;
            after += (int64_t)h->cval.nbytes;
            pass_stat(c, "weights converted", 1);
        }
        const char *nm = ir_graph_fresh_name(g, w->name, ".f32", buf, sizeof buf);
        ir_value *hin = half[w->id];
        ir_node *cast = ir_graph_add_node(g, IR_OP_CAST, "", 1, &hin, 1, &nm, c->diag);
        if (!cast || ir_node_set_int(g, cast, "to", ir_dtype_to_onnx(IR_F32)) < 0 || ir_infer_node(cast, c->diag) < 0)
            goto done;
        for (int i = 1; i < n->nin; i++)
            if (n->in[i] == w)
                n->in[i] = cast->out[0];
        if (!first[w->id])
            first[w->id] = cast;
        c->changed = true;
        ir_value *x = n->in[0];
        if (rounds_activation(c, o, n) && x->id < nv) {
            /* one rounding per activation, one Cast back per contraction
             * (which its kernel reads narrow, as the weight); a zero Pad
             * (the layout pass's, before a blocked conv) pads the
             * rounded values instead, copying half the bytes */
            ir_node *pad = zero_pad(x);
            ir_value *src = pad ? pad->in[0] : x;
            ir_value *h = rounded(c, half, src);
            if (!h)
                goto done;
            dead_pads |= pad != NULL;
            if (n->op == IR_OP_CONV_NCHWC && x->type.rank == 5 && x->type.dims[4].v % 2) {
                /* an odd count of lanes per block (an image's channels:
                 * one): no pair kernel, and the f32 one would widen every
                 * broadcast of a bf16 input (ResNet-50's 7x7 stem: 107 ->
                 * 57 GFLOP/s), so the rounded values go back to f32 before
                 * the Pad, which copies those */
                if (!f32_in[x->id]) {
                    ir_value *r = cast_to(c, h, IR_F32, src->name, ".rounded");
                    if (!r || !(f32_in[x->id] = pad ? pad_again(c, pad, r, ".rounded") : r))
                        goto done;
                }
                n->in[0] = f32_in[x->id];
                continue;
            }
            if (pad) {
                if (!half[x->id] && !(half[x->id] = pad_again(c, pad, h, ".bf16")))
                    goto done;
                h = half[x->id];
            }
            ir_value *up = cast_to(c, h, IR_F32, x->name, ".f32");
            if (!up)
                goto done;
            n->in[0] = up;
        }
    }
    if ((rounds_activations(c, o) && rounded_attention(c, o, half, nv, nn) < 0) ||
        share_rounded(c, o, half, nv, nn) < 0)
        goto done;
    /* f32 Pads whose readers all read the rounded one now */
    for (int k = 0; dead_pads && k < nn; k++) {
        ir_node *p = g->nodes[k];
        if (!p->dead && p->op == IR_OP_PAD && p->out[0]->id < nv && (half[p->out[0]->id] || f32_in[p->out[0]->id]) &&
            ir_value_count_uses(g, p->out[0]) == 0)
            ir_node_erase(p);
    }
    for (int v = 0; v < nv; v++) {
        ir_value *w = g->values[v];
        if (!first[v] || ir_value_count_uses(g, w) > 0)
            continue;
        ir_value_erase(w);
        first[v]->out[0]->name = w->name;
    }
    pass_stat(c, "weight bytes before", before);
    pass_stat(c, "weight bytes after", after);
    rc = pass_commit_rewrites(c);
done:
    free(half);
    free(f32_in);
    free(first);
    return rc;
}

/* int8 modes quantize the contractions with weights; on a target with
 * AMX-BF16 an Attention (no weights) reads its Q, K and V rounded to bf16
 * as in bf16 mode (rounded_attention), so it runs on tiles instead of in
 * f32: BERT's at 1 thread, 550 -> ~300 us. `attention=f32` (or keeping
 * Attention fp32) leaves it. */
static int int8_attention_bf16(pass_ctx *c, const icc_precision_opts *o)
{
    if (!c->target || !cg_schedule_amx_bf16(c->target) || !strcmp(pass_opt_str(c, "attention", "bf16"), "f32"))
        return 0;
    int nv = c->g->nvalues, nn = c->g->nnodes;
    ir_value **half = calloc((size_t)nv + 1, sizeof *half);
    if (!half)
        return ir_errorf(c->diag, "out of memory");
    int rc = rounded_attention(c, o, half, nv, nn);
    free(half);
    return rc < 0 ? -1 : pass_commit_rewrites(c);
}

int pass_precision(pass_ctx *c)
{
    icc_precision_opts o;
    char keep[PASS_MAX_OPTS * 64];
    if (resolve_opts(c, &o, keep, sizeof keep) < 0)
        return -1;
    const char *stage = pass_opt_str(c, "stage", "all");
    bool int8 = o.mode == ICC_PREC_INT8 || o.mode == ICC_PREC_INT8_DYNAMIC;
    if (strcmp(stage, "all") && strcmp(stage, "int8") && strcmp(stage, "half"))
        return ir_errorf(c->diag, "precision{stage=%s}: expected all, int8 or half", stage);
    const char *act = pass_opt_str(c, "activations", "target");
    if (strcmp(act, "target") && strcmp(act, "bf16") && strcmp(act, "f32"))
        return ir_errorf(c->diag, "precision{activations=%s}: expected target, bf16 or f32", act);
    if ((!strcmp(stage, "int8") && !int8) || (!strcmp(stage, "half") && int8))
        return 0;
    switch (o.mode) {
    case ICC_PREC_FP32:
        return 0;
    case ICC_PREC_BF16:
    case ICC_PREC_FP16:
        return lower_half(c, &o);
    case ICC_PREC_INT8:
    case ICC_PREC_INT8_DYNAMIC:
        return precision_int8(c, &o) < 0 ? -1 : int8_attention_bf16(c, &o);
    }
    return 0;
}
