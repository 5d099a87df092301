/* stats.c - static cost estimates: FLOPs per node and per graph. Each
 * op's row in ir/ops.def names its formula (IR_FLOP_*); this file
 * evaluates the formulas on a node's static types. */
#include "ir/stats.h"
#include "ir/ops.h"
#include "ir/ref/rnn.h"

#include <ctype.h>
#include <string.h>

static _Thread_local const int64_t *sym_vals;
static _Thread_local int nsym_vals;

void ir_stats_set_syms(const int64_t *vals, int n)
{
    sym_vals = vals;
    nsym_vals = vals ? n : 0;
}

static bool dim_value(ir_dim d, int64_t *v)
{
    if (d.sym == IR_DIM_UNKNOWN)
        return false;
    *v = d.sym <= 0 ? d.v : d.sym < nsym_vals ? sym_vals[d.sym] : 1;
    return true;
}

bool ir_type_numel_est(const ir_type *t, int64_t *n)
{
    if (t->rank < 0)
        return false;
    int64_t dims[IR_MAX_RANK];
    for (int i = 0; i < t->rank; i++)
        if (!dim_value(t->dims[i], &dims[i]))
            return false;
    return ir_numel_ok(dims, t->rank, n);
}

/* Element count with symbolic dims at the estimates' values (1 unless
 * set: an estimate per unit of each symbol); false when the rank or a
 * dim is unknown. */
static bool numel(const ir_value *v, int64_t *n)
{
    return v && ir_type_numel_est(&v->type, n);
}

/* Saturating multiply: estimates must not overflow on huge graphs. */
static int64_t smul(int64_t a, int64_t b)
{
    int64_t r;
    return ir_mul_ok(a, b, &r) ? r : INT64_MAX;
}

/* Attention: Q K^T and P V per head, 2 * keys * (D + Dv) per query row,
 * plus the softmax over the scores (4 per score, as normalizations
 * count). Q is [B, Hq, S, D] or [B, S, Hq * D]; the keys are K's
 * sequence plus the past ones (input 4, [B, Hkv, P, D]). */
static bool attention_flops(const ir_node *n, int64_t *flops)
{
    const ir_type *q = &n->in[0]->type, *k = &n->in[1]->type;
    int64_t nq, ny, d, keys, past = 0;
    if (!numel(n->in[0], &nq) || !numel(n->out[0], &ny) || (q->rank != 3 && q->rank != 4) || k->rank != q->rank ||
        !dim_value(q->dims[q->rank - 1], &d) || !dim_value(k->dims[k->rank - 2], &keys))
        return false;
    if (q->rank == 3)
        d /= ir_attr_int(n, "q_num_heads", 1) > 0 ? ir_attr_int(n, "q_num_heads", 1) : 1;
    if (n->nin > 4 && n->in[4] && (n->in[4]->type.rank != 4 || !dim_value(n->in[4]->type.dims[2], &past)))
        return false;
    keys += past;
    int64_t rows = d > 0 ? nq / d : 0;
    *flops = smul(smul(keys, 2), nq) + smul(smul(keys, 2), ny) + smul(smul(rows, keys), 4);
    return true;
}

/* Einsum: every combination of label values is one multiply-add per
 * extra operand (one add for a single operand). The extent of a label
 * is the largest it has in any operand (1 broadcasts); the dims under
 * "..." are aligned from the right. */
static bool einsum_flops(const ir_node *n, int64_t *flops)
{
    const char *p = ir_attr_string(n, "equation", "");
    int64_t ext[256] = {0}, ell[IR_MAX_RANK] = {0};
    int nell = 0;
    for (int i = 0; i < n->nin; i++) {
        const ir_type *t = n->in[i] ? &n->in[i]->type : NULL;
        size_t len = strcspn(p, ",-");
        int letters = 0;
        bool dots = false;
        for (size_t j = 0; j < len; j++) {
            letters += isalpha((unsigned char)p[j]) != 0;
            dots |= p[j] == '.';
        }
        if (!t || t->rank < letters || (!dots && t->rank != letters))
            return false;
        int er = t->rank - letters, d = 0;
        for (size_t j = 0; j < len; j++) {
            int64_t v;
            if (p[j] == '.') {
                if (p[j + 1] == '.' && p[j + 2] == '.') {
                    for (int e = 0; e < er; e++, d++) {
                        if (!dim_value(t->dims[d], &v))
                            return false;
                        if (v > ell[er - 1 - e])
                            ell[er - 1 - e] = v;
                    }
                    nell = er > nell ? er : nell;
                    j += 2;
                }
            } else if (isalpha((unsigned char)p[j])) {
                if (!dim_value(t->dims[d++], &v))
                    return false;
                if (v > ext[(unsigned char)p[j]])
                    ext[(unsigned char)p[j]] = v;
            }
        }
        p += len;
        if (*p == ',')
            p++;
    }
    int64_t f = 1;
    for (int c = 0; c < 256; c++)
        if (ext[c])
            f = smul(f, ext[c]);
    for (int e = 0; e < nell; e++)
        f = smul(f, ell[e] ? ell[e] : 1);
    *flops = n->nin > 1 ? smul(f, 2 * (int64_t)(n->nin - 1)) : f;
    return true;
}

bool ir_node_flops(const ir_node *n, int64_t *flops)
{
    int64_t out = 0, in0 = 0, k, wn, kk;
    *flops = 0;
    switch (ir_ops[n->op].flops) {
    case IR_FLOP_NONE:
        return true;
    case IR_FLOP_OUT:
        return numel(n->out[0], flops);
    case IR_FLOP_IN:
        return numel(n->in[0], flops);
    case IR_FLOP_NORM:
        /* normalizations touch each element a few times; count 4 */
        if (!numel(n->in[0], &in0))
            return false;
        *flops = smul(in0, 4);
        return true;
    case IR_FLOP_MATMUL: {
        const ir_type *a = &n->in[0]->type;
        if (!numel(n->out[0], &out) || a->rank < 1 || !dim_value(a->dims[a->rank - 1], &k))
            return false;
        *flops = smul(smul(out, k), 2);
        return true;
    }
    case IR_FLOP_GEMM: {
        const ir_type *a = &n->in[0]->type;
        int ki = ir_attr_int(n, "transA", 0) ? 0 : 1;
        if (!numel(n->out[0], &out) || a->rank != 2 || !dim_value(a->dims[ki], &k))
            return false;
        *flops = smul(smul(out, k), 2);
        return true;
    }
    case IR_FLOP_CONV:
    case IR_FLOP_CONV_NCHWC:
    case IR_FLOP_CONV_TRANSPOSE: {
        /* Conv: out elements * (Cin/group * kernel) * 2; ConvTranspose:
         * in elements * (Cout/group * kernel) * 2 = weights per input.
         * ConvNCHWc's weights [M/mb, C/cb, kh, kw, cb, mb] hold C * kh * kw
         * per output channel, as the Conv it replaced. */
        bool blocked = ir_ops[n->op].flops == IR_FLOP_CONV_NCHWC;
        const ir_type *w = &n->in[1]->type;
        if (!numel(n->out[0], &out) || !numel(n->in[0], &in0) || !numel(n->in[1], &wn) ||
            w->rank < (blocked ? 2 : 1) || w->dims[0].sym != 0 || w->dims[0].v == 0)
            return false;
        int64_t chans = w->dims[0].v; /* output channels (ConvTranspose: input channels) */
        if (blocked) {
            ir_dim lanes = w->dims[w->rank - 1];
            if (lanes.sym != 0 || lanes.v == 0)
                return false;
            chans = smul(chans, lanes.v);
        }
        int64_t per = wn / chans;
        *flops = smul(smul(ir_ops[n->op].flops == IR_FLOP_CONV_TRANSPOSE ? in0 : out, per), 2);
        return true;
    }
    case IR_FLOP_POOL: {
        const int64_t *ks;
        int nk = ir_attr_ints(n, "kernel_shape", &ks);
        kk = 1;
        for (int i = 0; i < nk; i++)
            kk = smul(kk, ks[i]);
        if (!numel(n->in[0], &in0) || !numel(n->out[0], &out))
            return false;
        *flops = smul(out, kk);
        return true;
    }
    case IR_FLOP_ATTENTION:
        return attention_flops(n, flops);
    case IR_FLOP_EINSUM:
        return einsum_flops(n, flops);
    case IR_FLOP_RNN: {
        /* Y has steps x directions x batch x H elements; each is G gate rows'
         * dot products with x (I long) and h (H long) */
        const ir_type *x = &n->in[0]->type, *w = &n->in[1]->type, *r = &n->in[2]->type;
        int64_t in_sz, h, rows;
        int64_t wt = ir_attr_int(n, "weights_t", 0);
        if (!numel(n->out[0], &out) || x->rank != 3 || w->rank != 3 || r->rank != 3 ||
            !dim_value(x->dims[2], &in_sz) || !dim_value(r->dims[ir_rnn_r_hidden_dim(wt)], &h) ||
            !dim_value(w->dims[ir_rnn_w_rows_dim(wt)], &rows) || !h)
            return false;
        *flops = smul(smul(out, rows / h), smul(2, in_sz + h));
        return true;
    }
    case IR_FLOP_CONV_PWDW: {
        /* X [N, CB, H, W, cb] -> (1x1) [N, MB, H, W, mb] -> (depthwise,
         * W2 [MB, kh, kw, mb]) Y [N, MB, OH, OW, mb] */
        const ir_type *x = &n->in[0]->type, *w1 = &n->in[1]->type, *w2 = &n->in[2]->type;
        int64_t c, mid, taps, tw;
        if (!numel(n->out[0], &out) || x->rank != 5 || w1->rank != 6 || w2->rank != 4 ||
            !dim_value(x->dims[1], &c) || !dim_value(x->dims[4], &kk) || !numel(n->in[0], &in0) || !c || !kk ||
            !dim_value(w1->dims[0], &wn) || !dim_value(w1->dims[5], &mid) || !dim_value(w2->dims[1], &taps) ||
            !dim_value(w2->dims[2], &tw))
            return false;
        /* the 1x1 conv's output: X's pixels times M = MB * mb channels */
        mid = smul(in0 / smul(c, kk), smul(wn, mid));
        int64_t pw = smul(mid, smul(c, kk)), dw = smul(out, smul(taps, tw));
        *flops = smul(2, pw > INT64_MAX - dw ? INT64_MAX : pw + dw);
        return true;
    }
    default:
        return false;
    }
}

int64_t ir_graph_flops(const ir_graph *g, bool *exact)
{
    int64_t total = 0, f;
    *exact = true;
    for (int i = 0; i < g->nnodes; i++) {
        if (!ir_node_flops(g->nodes[i], &f))
            *exact = false;
        if (__builtin_add_overflow(total, f, &total))
            total = INT64_MAX;
    }
    return total;
}

bool ir_graph_has_symbols(const ir_graph *g)
{
    for (int i = 0; i < g->nvalues; i++)
        for (int k = 0; k < g->values[i]->type.rank; k++)
            if (g->values[i]->type.dims[k].sym > 0)
                return true;
    return false;
}
