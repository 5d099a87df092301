/* conv_blocked.c - ConvNCHWc, the layout pass's blocked 2-D convolution
 * (ir/ref/conv_blocked.c), as a direct convolution on its own register
 * tile (bc_lower below).
 *
 * With X [N, C/cb, H, W, cb], W [M/mb, C/cb, kh, kw, cb, mb] and Y
 * [N, M/mb, OH, OW, mb], one output pixel's mb channels are contiguous in
 * Y and one weight tap's mb output channels are contiguous in W. So the
 * tile's vector loop is the mb lanes of an output block (one register when
 * mb is the target's width); the tile spans V output blocks (columns) and
 * R consecutive output pixels along OW (rows: A = one input element, a
 * broadcast, row r reading the input at a constant distance r*stride*cb
 * from row 0). A 1x1, stride-1, unpadded conv is a matrix product over
 * the plane, so its rows run over the flattened plane instead. The
 * reduction runs over (input block, kh, kw, lane) in one piece, the
 * accumulators in registers throughout. Unlike the NCHW implicit GEMM
 * (conv.c), no load is masked or strided and no lane is wasted on a
 * plane that does not fill the vector.
 *
 * Padding: the layout pass gives padded convs an explicitly zero-padded
 * input (pads = 0 here), the fast case. Otherwise taps along H that leave
 * the input are cut from the kh loop (uniform per output row), and along
 * W the A load reads a clamped position and selects 0 outside (correct,
 * slower).
 *
 * The integer form (the layout pass's blocked ConvInteger: u8 X, i8 W
 * packed in quads, i32 B and Y) runs on the same trips and tile with
 * vpdpbusd (bc_lower_dots), as the bf16 pair kernel does with vdpbf16ps.
 */
#include "codegen/lower/internal.h"
#include "ir/ops.h"

typedef struct {
    int64_t N, CB, H, W, CL;          /* input: batch, channel blocks, plane, lanes */
    int64_t MB, KH, KW, ML;           /* weights: output blocks, kernel, output lanes */
    int64_t OH, OW;
    /* N, H, W, OH, OW as dims: symbolic ones are the run's values (their
     * int64_t fields then unused); sym: any of them is */
    ir_dim nd, hd, wd, ohd, owd;
    bool sym;
    int64_t s[2], d[2], p[4];         /* strides, dilations, pads [top, left, bottom, right] */
    bool flat;                        /* 1x1, stride 1, no pads: rows run over the whole plane */
    bool integer;                     /* u8 X, i8 W (quads), i32 B and Y: the quad kernel */
    bool groups_inner;                /* trips run (batch, row, pixel block, group): the groups
                                         fastest (bc_trips) */
    int64_t pk;                       /* packed_k: W's taps [CL/pk, ML, pk] (1: [CL, ML]) */
    int64_t lsteps;                   /* steps of the lane loop: CL, or CL / pk for the pair kernel */
    int wflat;                        /* pk > 1: a flat view of W's buffer */
    kir_expr *nb;                     /* the batch item */
    kir_expr *icb, *kh, *kw, *ic;     /* the reduction's current position */
} bconv;

/* The geometry of n, checked against its operands' and result's types. */
static bool bconv_geom(const ir_node *n, bconv *g)
{
    if (n->op != IR_OP_CONV_NCHWC || n->nin < 2 || n->nout != 1)
        return false;
    const ir_value *x = n->in[0], *w = n->in[1], *b = n->nin > 2 ? n->in[2] : NULL, *y = n->out[0];
    *g = (bconv){0};
    /* f32, or the integer form: u8 X, i8 W in quads, i32 B and Y (the
     * layout pass's blocked ConvInteger, on the quad kernel) */
    g->integer = x && x->type.dtype == IR_U8;
    if (g->integer ? !lw_static_as(x, 5, IR_U8) || !lw_static_as(w, 6, IR_I8) || !lw_static_as(y, 5, IR_I32) ||
                         (b && !lw_static_as(b, 2, IR_I32)) || ir_attr_int(n, "packed_k", 1) != 4
                   : !lw_blocked_as(x, IR_F32) || !lw_f32_static(w, 6) || !lw_blocked_as(y, IR_F32) ||
                         (b && !lw_f32_static(b, 2)))
        return false;
    const ir_dim *xd = x->type.dims, *wd = w->type.dims, *yd = y->type.dims;
    g->N = xd[0].v, g->CB = xd[1].v, g->H = xd[2].v, g->W = xd[3].v, g->CL = xd[4].v;
    g->MB = wd[0].v, g->KH = wd[2].v, g->KW = wd[3].v, g->ML = wd[5].v;
    g->OH = yd[2].v, g->OW = yd[3].v;
    g->nd = xd[0], g->hd = xd[2], g->wd = xd[3], g->ohd = yd[2], g->owd = yd[3];
    g->sym = !ir_type_is_static(&x->type) || !ir_type_is_static(&y->type);
    if (!lw_blocked_ints(n, "strides", 2, 1, 1, g->s) || !lw_blocked_ints(n, "dilations", 2, 1, 1, g->d) ||
        !lw_blocked_ints(n, "pads", 4, 0, 0, g->p))
        return false;
    /* pairs of input lanes (the pair kernel reads X's pairs in place: no
     * padding along W) */
    g->pk = ir_attr_int(n, "packed_k", 1);
    g->wflat = -1;
    if (g->pk != 1 && (g->pk != (g->integer ? 4 : 2) || g->CL % g->pk || g->p[1] || g->p[3]))
        return false;
    if (wd[1].v != g->CB || wd[4].v != g->CL || !ir_dim_eq(yd[0], xd[0]) || yd[1].v != g->MB ||
        yd[4].v != g->ML || (b && (b->type.dims[0].v != g->MB || b->type.dims[1].v != g->ML)))
        return false;
    for (int i = 0; i < 2; i++) {
        /* a symbolic extent is the one shape inference derived from the
         * input's (shape_conv_nchwc): a symbol in, a symbol out */
        if (xd[2 + i].sym || yd[2 + i].sym) {
            if (!xd[2 + i].sym || !yd[2 + i].sym)
                return false;
            continue;
        }
        int64_t in = i ? g->W : g->H, k = i ? g->KW : g->KH, o = i ? g->OW : g->OH;
        int64_t span = (k - 1) * g->d[i] + 1, padded = in + g->p[i] + g->p[2 + i];
        if (padded < span || (padded - span) / g->s[i] + 1 != o)
            return false;
    }
    return true;
}

bool cg_can_lower_conv_blocked(const ir_node *n)
{
    bconv g;
    return n->op == IR_OP_CONV_NCHWC && bconv_geom(n, &g);
}

/* ---- the microkernel ------------------------------------------------------ */

/* The first input row of output row oh: oh*s - pad. */
static kir_expr *row_start(kir_kernel *k, const bconv *g, kir_expr *oh)
{
    return lw_iaddc(k, lw_imulc(k, oh, g->s[0]), -g->p[0]);
}

/* X's index at output pixel (oh, ow = row), the current tap and input
 * lane `lane`, with no padding along W (or the flat plane). */
static void x_idx(lctx *c, const bconv *g, kir_expr *oh, kir_expr *row, kir_expr *lane, kir_expr **xi)
{
    kir_kernel *k = c->k;
    xi[0] = g->nb, xi[1] = g->icb, xi[4] = lane;
    if (g->flat) {
        /* pixel `row` of the plane, addressed as a position past the
         * end of row 0 (the buffer is row-major, so it is the same element) */
        xi[2] = lw_i64c(k, 0), xi[3] = row;
        return;
    }
    xi[2] = kir_iadd(k, row_start(k, g, oh), lw_imulc(k, g->kh, g->d[0]));
    xi[3] = lw_iaddc(k, kir_iadd(k, lw_imulc(k, row, g->s[1]), lw_imulc(k, g->kw, g->d[1])), -g->p[1]);
}

/* X at output pixel (oh, ow = row) and the current tap: a uniform value
 * (the broadcast operand). */
static kir_expr *x_at(lctx *c, const bconv *g, kir_expr *oh, kir_expr *row)
{
    kir_kernel *k = c->k;
    kir_expr *xi[5];
    x_idx(c, g, oh, row, g->ic, xi);
    if (g->flat || (!g->p[1] && !g->p[3]))
        return lw_load_in(c, 0, xi);
    /* the clamped position is always inside the input; outside reads 0 */
    kir_expr *iw = xi[3], *cw = lw_imin(k, lw_iaddc(k, lw_dim_of(k, g->wd), -1), lw_imax(k, lw_i64c(k, 0), iw));
    xi[3] = cw;
    kir_expr *ok = kir_op2(k, KIR_EQ, IR_BOOL, cw, iw);
    return kir_op3(k, KIR_SELECT, IR_F32, ok, lw_load_in(c, 0, xi), kir_const_f(k, IR_F32, 0));
}

/* Opens the reduction loops for output row oh in *b, moving *b to the
 * innermost body: (input block, kh, kw, lane; lsteps of them: the pair
 * kernel steps over pairs), or with one lane per block
 * (an image's channels) (kh, kw, input block), so that no unrolled loop
 * steps along W: LLVM would otherwise keep the broadcasts one tap shares
 * with the next (stride < KW) live across the steps and spill them. Taps
 * along H that leave the input are cut from the kh loop (a range uniform
 * in the tile). */
static int k_open(lctx *c, bconv *g, kir_expr *oh, kir_block **b)
{
    kir_kernel *k = c->k;
    int vb = kir_new_var(k), vh = kir_new_var(k), vw = kir_new_var(k), vi = kir_new_var(k);
    kir_expr *lo = lw_i64c(k, 0), *hi = lw_i64c(k, g->KH);
    if (g->p[0] || g->p[2]) {
        kir_expr *st = row_start(k, g, oh), *dd = lw_i64c(k, g->d[0]);
        /* lo = ceil(-st / d) clamped to [0, KH]; hi = ceil((H - st) / d) likewise */
        kir_expr *nlo = kir_op2(k, KIR_DIV, IR_I64, lw_iaddc(k, kir_op2(k, KIR_SUB, IR_I64, lw_i64c(k, 0), st), g->d[0] - 1), dd);
        kir_expr *nhi = kir_op2(k, KIR_DIV, IR_I64,
                                lw_iaddc(k, kir_op2(k, KIR_SUB, IR_I64, lw_dim_of(k, g->hd), st), g->d[0] - 1), dd);
        lo = lw_imin(k, lw_i64c(k, g->KH), lw_imax(k, lw_i64c(k, 0), nlo));
        hi = lw_imin(k, lw_i64c(k, g->KH), lw_imax(k, lw_i64c(k, 0), nhi));
    }
    struct { int var; kir_expr *lo, *hi; } l[4] = {
        {vb, lw_i64c(k, 0), lw_i64c(k, g->CB)}, {vh, lo, hi}, {vw, lw_i64c(k, 0), lw_i64c(k, g->KW)},
        {vi, lw_i64c(k, 0), lw_i64c(k, g->lsteps)},
    };
    static const int lanes_inner[4] = {0, 1, 2, 3}, block_inner[4] = {1, 2, 0, 3};
    const int *order = g->CL > 1 ? lanes_inner : block_inner;
    kir_block *at = *b;
    for (int i = 0; i < 4; i++) {
        kir_stmt *s = kir_for(k, at, l[order[i]].var, l[order[i]].lo, l[order[i]].hi, KIR_SERIAL, 0);
        if (!s)
            return -1;
        at = &s->body;
    }
    g->icb = kir_var(k, vb);
    g->kh = kir_var(k, vh);
    g->kw = kir_var(k, vw);
    g->ic = kir_var(k, vi);
    *b = at;
    return 0;
}

/* The flat index of output block ob's tap (ob, icb, kh, kw) at the
 * current reduction position: W's taps are [CL, ML] matrices in that
 * order. */
static kir_expr *tap(lctx *c, const bconv *g, kir_expr *ob)
{
    kir_kernel *k = c->k;
    kir_expr *t = kir_iadd(k, lw_imulc(k, ob, g->CB), g->icb);
    t = kir_iadd(k, lw_imulc(k, t, g->KH), g->kh);
    return kir_iadd(k, lw_imulc(k, t, g->KW), g->kw);
}

/* The flat element offset in W of output block ob's tap at the current
 * reduction position, input lane pk * ic (output lane 0). */
static kir_expr *w_tap(lctx *c, const bconv *g, kir_expr *ob)
{
    kir_kernel *k = c->k;
    return lw_imulc(k, kir_iadd(k, lw_imulc(k, tap(c, g, ob), g->CL), lw_imulc(k, g->ic, g->pk)), g->ML);
}

/* W of output block ob, output lane j, at the current reduction position
 * (f32: widened when narrow). Packed (pk > 1: the pair kernel's order,
 * read here only by the f32 tile, when X stayed f32) through the flat
 * view, lane j's pk values pk apart: a strided load, correct and slow. */
static kir_expr *w_at(lctx *c, const bconv *g, kir_expr *ob, kir_expr *j)
{
    kir_kernel *k = c->k;
    if (g->pk == 1) {
        kir_expr *wi[6] = {ob, g->icb, g->kh, g->kw, g->ic, j};
        return lw_load_in(c, 1, wi);
    }
    /* the lanes of group ic: (ic, l) for l < pk, each l its own sum term
     * is not the f32 tile's form, so ic here runs over single lanes and
     * the group is ic / pk, the lane in it ic % pk */
    kir_expr *grp = lw_idivc(k, g->ic, g->pk), *in = lw_iremc(k, g->ic, g->pk);
    kir_expr *off = kir_iadd(k, lw_imulc(k, kir_iadd(k, lw_imulc(k, tap(c, g, ob), g->CL / g->pk), grp), g->pk * g->ML),
                             kir_iadd(k, lw_imulc(k, j, g->pk), in));
    kir_expr *e = kir_load(k, g->wflat, &off);
    ir_dtype bt = k->bufs[g->wflat].dtype;
    return lw_compute_dtype(bt) != bt ? kir_op1(k, KIR_CAST, lw_compute_dtype(bt), e) : e;
}

enum { BC_MAX_VECS = 4, BC_MAX_ROWS = 28, BC_MAX_TAPS = 16 };

/* bc_trips over symbolic sizes: the same trips, their count and the
 * pixel blocks' the run's (m, the pixels of a row or the plane, and the
 * rows G as index expressions). */
static kir_stmt *bc_trips_sym(lctx *c, bconv *g, int V, int R, kir_expr **oh, kir_expr **ob, kir_expr **rows)
{
    kir_kernel *k = c->k;
    kir_expr *OH = lw_dim_of(k, g->ohd), *OW = lw_dim_of(k, g->owd);
    kir_expr *m = g->flat ? kir_imul(k, OH, OW) : OW;
    kir_expr *NRB = lw_idivc(k, lw_iaddc(k, m, R - 1), R);
    int64_t MBG = (g->MB + V - 1) / V;
    kir_expr *trips = kir_imul(k, lw_imulc(k, lw_dim_of(k, g->nd), MBG), NRB);
    if (!g->flat)
        trips = kir_imul(k, trips, OH);
    int pv = kir_new_var(k);
    kir_stmt *lp = kir_for(k, &k->body, pv, lw_i64c(k, 0), trips, KIR_PARALLEL, 0);
    if (!lp)
        return NULL;
    kir_expr *p = kir_var(k, pv);
    kir_expr *rb = kir_op2(k, KIR_REM, IR_I64, p, NRB), *q = kir_op2(k, KIR_DIV, IR_I64, p, NRB);
    *oh = g->flat ? lw_i64c(k, 0) : kir_op2(k, KIR_REM, IR_I64, q, OH);
    if (!g->flat)
        q = kir_op2(k, KIR_DIV, IR_I64, q, OH);
    kir_expr *mg = lw_iremc(k, q, MBG);
    g->nb = g->nd.sym || g->N > 1 ? lw_idivc(k, q, MBG) : lw_i64c(k, 0);
    for (int v = 0; v < V; v++)
        ob[v] = lw_imin(k, lw_iaddc(k, lw_imulc(k, mg, V), v), lw_i64c(k, g->MB - 1));
    kir_expr *last = lw_iaddc(k, m, -1);
    for (int r = 0; r < R; r++)
        rows[r] = lw_imin(k, lw_iaddc(k, lw_imulc(k, rb, R), r), last);
    return lp;
}

/* The parallel loop of both kernels: one trip per register tile of V
 * output blocks x R output pixels, trips ordered (batch, output block
 * group, output row, pixel block) with the pixels fastest (bc_lower's
 * comment); its output row *oh, the tile's output blocks ob[V] and pixels
 * rows[R] (past the last ones clamped to it, recomputed), and g->nb the
 * batch item. NULL on out of memory. */
static kir_stmt *bc_trips(lctx *c, bconv *g, int V, int R, kir_expr **oh, kir_expr **ob, kir_expr **rows)
{
    if (g->sym)
        return bc_trips_sym(c, g, V, R, oh, ob, rows);
    kir_kernel *k = c->k;
    int64_t m = g->flat ? g->OH * g->OW : g->OW, G = g->flat ? 1 : g->OH;
    int64_t NRB = (m + R - 1) / R, MBG = (g->MB + V - 1) / V;
    int pv = kir_new_var(k);
    kir_stmt *lp = kir_for(k, &k->body, pv, lw_i64c(k, 0), lw_i64c(k, g->N * MBG * G * NRB), KIR_PARALLEL, 0);
    if (!lp)
        return NULL;
    kir_expr *p = kir_var(k, pv), *rb, *q, *mg;
    if (g->groups_inner) {   /* (batch, row, pixel block, group) */
        mg = lw_iremc(k, p, MBG);
        q = lw_idivc(k, p, MBG);
        rb = lw_iremc(k, q, NRB);
        q = lw_idivc(k, q, NRB);
        *oh = G > 1 ? lw_iremc(k, q, G) : lw_i64c(k, 0);
        g->nb = g->N > 1 ? lw_idivc(k, q, G) : lw_i64c(k, 0);
    } else {                 /* (batch, group, row, pixel block) */
        rb = lw_iremc(k, p, NRB);
        q = lw_idivc(k, p, NRB);
        *oh = G > 1 ? lw_iremc(k, q, G) : lw_i64c(k, 0);
        q = lw_idivc(k, q, G);
        mg = lw_iremc(k, q, MBG);
        g->nb = g->N > 1 ? lw_idivc(k, q, MBG) : lw_i64c(k, 0);
    }
    for (int v = 0; v < V; v++)
        ob[v] = lw_imin(k, lw_iaddc(k, lw_imulc(k, mg, V), v), lw_i64c(k, g->MB - 1));
    for (int r = 0; r < R; r++)
        rows[r] = lw_imin(k, lw_iaddc(k, lw_imulc(k, rb, R), r), lw_i64c(k, m - 1));
    return lp;
}

/* Stores the sum val of output block ob, pixel row, lane j into b: the
 * bias added, then the fused epilogue, in the output's dtype. NULL on out
 * of memory. */
static kir_stmt *bc_store(lctx *c, const bconv *g, kir_block *b, kir_expr *ob, kir_expr *oh, kir_expr *row,
                          kir_expr *j, kir_expr *val)
{
    kir_kernel *k = c->k;
    kir_expr *oi[5] = {g->nb, ob, g->flat ? lw_i64c(k, 0) : oh, row, j};
    if (c->n->nin > 2 && c->n->in[2]) {
        kir_expr *bi[2] = {ob, j};
        val = kir_op2(k, KIR_ADD, g->integer ? IR_I32 : IR_F32, val, lw_load_in(c, 2, bi));
    }
    val = lw_to_out(c, lower_epi(c, val, oi));
    if (c->pad_out && g->flat) {
        /* a padded buffer's rows are longer than the plane's: pixel `row`
         * of the flat plane at its own row and column */
        kir_expr *OW = lw_dim_of(k, g->owd);
        kir_expr *si[5] = {g->nb, ob, g->sym ? kir_op2(k, KIR_DIV, IR_I64, row, OW) : lw_idivc(k, row, g->OW),
                           g->sym ? kir_op2(k, KIR_REM, IR_I64, row, OW) : lw_iremc(k, row, g->OW), j};
        return lw_store_out(c, b, si, val);
    }
    return lw_store_out(c, b, oi, val);
}

/* The next output block group's weights at the current reduction
 * position, hinted into L2 (the schedule's prefetch_b) in *b from trip p
 * of bc_trips' parallel loop (static sizes, W unpacked in a buffer of its
 * own): a group's trips (its T pixel blocks, consecutive) share its
 * weight panel, the first streaming it from L3 or DRAM, so each one after
 * it fetches pp of the next group's V vectors, pp = V / (T - 1) rounded
 * up (all V when a group is one trip). The next group's blocks are
 * clamped to the last one, so the hint needs no test per step. */
static int bc_prefetch(lctx *c, const bconv *g, kir_block *b, int V, int R, kir_expr *p, kir_expr *const *ob)
{
    kir_kernel *k = c->k;
    if (!c->s->prefetch_b || g->groups_inner || g->pk != 1 || c->buf[1] < 0 || g->MB <= V)
        return 0;
    int64_t m = g->flat ? g->OH * g->OW : g->OW, T = (g->flat ? 1 : g->OH) * ((m + R - 1) / R);
    kir_expr *rel = T > 1 ? lw_iremc(k, p, T) : lw_i64c(k, 0);
    if (g->sym) {
        /* the group's trips are the run's (bc_trips_sym's order): each
         * after its first hints one of the next group's V blocks */
        kir_expr *OH = lw_dim_of(k, g->ohd), *OW = lw_dim_of(k, g->owd);
        kir_expr *ms = g->flat ? kir_imul(k, OH, OW) : OW, *nrb = lw_idivc(k, lw_iaddc(k, ms, R - 1), R);
        rel = kir_op2(k, KIR_REM, IR_I64, p, g->flat ? nrb : kir_imul(k, OH, nrb));
        T = V + 1;   /* lw_spread_count(T, V) = 1: one item a trip */
    }
    for (int64_t i = 0; i < lw_spread_count(T, V); i++) {
        kir_expr *v = lw_spread_item(k, rel, T, V, i);
        /* ob[v] + V for the v chosen at run time: ob[0] + v + V, the blocks being consecutive */
        kir_expr *blk = lw_imin(k, kir_iadd(k, lw_iaddc(k, ob[0], V), v), lw_i64c(k, g->MB - 1));
        kir_iarg a = {.buf = c->buf[1], .nidx = 6,
                      .idx = (kir_expr *[]){blk, g->icb, g->kh, g->kw, g->ic, lw_i64c(k, 0)}};
        if (!kir_intrinsic(k, b, KIR_IN_PREFETCH_L2, 1, &a))
            return -1;
    }
    return 0;
}

/* The schedule. One parallel trip is one register tile: V output blocks
 * (vectors of ML lanes) x R output pixels, over the whole reduction, so
 * no partial sum goes through Y. Trips run (batch, output block group,
 * output row, pixel block) with the pixels fastest: consecutive trips,
 * and so one thread's chunk of them, share one group's weight panel
 * (V x CB x KH x KW x CL x ML), which stays in L2 while the input
 * streams. Per reduction step the tile loads V weight vectors and R
 * broadcasts for V x R FMAs; with AVX2's 16 registers V = 2, R = 6
 * (12 accumulators, 2 weights and one broadcast) needs half the
 * broadcasts per FMA of 1 x 12, and AVX2 has no FMA with a broadcast
 * memory operand. A group past the last output block (odd MB) and rows
 * past the last pixel are clamped to the last one and recomputed. */
/* One register tile of bc_lower into body: V output blocks ob x R
 * pixels rows of output row oh, p the trip (for the prefetch). */
static int bc_tile(lctx *c, bconv *g, kir_block *body, int V, int R, kir_expr *oh, kir_expr *const *ob,
                   kir_expr *const *rows, kir_expr *p)
{
    kir_kernel *k = c->k;
    int jv = kir_new_var(k);
    kir_stmt *lj = kir_for(k, body, jv, lw_i64c(k, 0), lw_i64c(k, g->ML), KIR_VECTOR, (int)g->ML);
    if (!lj)
        return -1;
    kir_expr *j = kir_var(k, jv);
    kir_block *tb = &lj->body;
    int acc[BC_MAX_VECS][BC_MAX_ROWS];
    for (int v = 0; v < V; v++)
        for (int r = 0; r < R; r++)
            if ((acc[v][r] = kir_new_acc(k, IR_F32)) < 0 || !kir_acc_set(k, tb, acc[v][r], kir_const_f(k, IR_F32, 0)))
                return -1;
    kir_block *kb = tb;
    if (k_open(c, g, oh, &kb) < 0)
        return -1;
    kir_expr *wv[BC_MAX_VECS];
    for (int v = 0; v < V; v++)
        if (!(wv[v] = kir_let(k, kb, w_at(c, g, ob[v], j))))
            return -1;
    for (int r = 0; r < R; r++) {
        kir_expr *a = kir_let(k, kb, x_at(c, g, oh, rows[r]));
        for (int v = 0; v < V; v++)
            if (!kir_acc_set(k, kb, acc[v][r], kir_op3(k, KIR_FMA, IR_F32, a, wv[v], kir_acc(k, acc[v][r]))))
                return -1;
    }
    if (bc_prefetch(c, g, kb, V, R, p, ob) < 0)
        return -1;
    for (int v = 0; v < V; v++)
        for (int r = 0; r < R; r++)
            if (!bc_store(c, g, tb, ob[v], oh, rows[r], j, kir_acc(k, acc[v][r])))
                return -1;
    return 0;
}

enum { BC_REST_ROWS = 4 };   /* a symbolic row's last tile, when shorter than R */

static int bc_lower(lctx *c, bconv *g, int V, int R)
{
    kir_kernel *k = c->k;
    kir_expr *oh, *ob[BC_MAX_VECS], *rows[BC_MAX_ROWS];
    kir_stmt *lp = bc_trips(c, g, V, R, &oh, ob, rows);
    if (!lp)
        return -1;
    kir_expr *p = kir_var(k, lp->var);
    if (!g->sym || R <= BC_REST_ROWS)
        return bc_tile(c, g, &lp->body, V, R, oh, ob, rows, p);
    /* a symbolic row (or flat plane): a whole tile's pixels unclamped,
     * start + r (clamped, each row's address was a register of its own:
     * 14 of them spilled), and the last tile, when fewer than R pixels are
     * left, in tiles of BC_REST_ROWS (a 20-wide row as 14 + 2 x 4, not
     * 2 x 14 of which 8 were recomputed) */
    kir_expr *m = g->flat ? kir_imul(k, lw_dim_of(k, g->ohd), lw_dim_of(k, g->owd)) : lw_dim_of(k, g->owd);
    kir_expr *last = lw_iaddc(k, m, -1), *start = rows[0], *rowsf[BC_MAX_ROWS];
    for (int r = 0; r < R; r++)
        rowsf[r] = lw_iaddc(k, start, r);
    kir_stmt *st = kir_if(k, &lp->body, kir_op2(k, KIR_LE, IR_BOOL, lw_iaddc(k, start, R - 1), last));
    if (!st || bc_tile(c, g, &st->body, V, R, oh, ob, rowsf, p) < 0)
        return -1;
    int tv = kir_new_var(k);
    kir_expr *left = kir_op2(k, KIR_SUB, IR_I64, last, lw_iaddc(k, start, -1));
    kir_stmt *lt = kir_for(k, &st->orelse, tv, lw_i64c(k, 0), lw_idivc(k, lw_iaddc(k, left, BC_REST_ROWS - 1),
                                                                      BC_REST_ROWS), KIR_SERIAL, 0);
    if (!lt)
        return -1;
    kir_expr *rows2[BC_REST_ROWS];
    for (int r = 0; r < BC_REST_ROWS; r++)
        rows2[r] = lw_imin(k, kir_iadd(k, start, lw_iaddc(k, lw_imulc(k, kir_var(k, tv), BC_REST_ROWS), r)), last);
    return bc_tile(c, g, &lt->body, V, BC_REST_ROWS, oh, ob, rows2, p);
}

/* One output block per tile (V = 1) along a row, unit stride and
 * dilation along W, KW > 1, no padding along W: pixel r of the tile reads
 * input column start + r + kw at tap kw, so per (input block, kh, lane)
 * step each of the R + KW - 1 columns is broadcast once and feeds every
 * (r, kw) with r + kw equal to it: R x KW FMAs on R + KW - 1 broadcasts
 * and KW weight vectors. bc_lower's 1 x R tile issues a broadcast per
 * FMA, which holds two 512-bit FMA units to about half (a 16-channel 3x3
 * conv at 80 x 80: DBNet's head). The last tile of a row starts R before
 * the row's end (its first pixels computed twice, the same values)
 * instead of clamping its rows. A symbolic row may be shorter than R: its
 * tile starts at 0, reads columns clamped into the row and stores its
 * pixels last to first, clamped into the row, so the pixels past the end
 * (the clamped columns' sums) land on the last one before its own sum
 * does (PP-OCRv6's detector with symbolic H and W: a 16-channel 3x3 conv
 * at 120 x 160 2.0x its pinned build's time on bc_lower's tile). */
static bool bc_taps_fit(const bconv *g, int V, int R)
{
    return V == 1 && !g->flat && g->pk == 1 && g->KW > 1 && g->KW <= BC_MAX_TAPS && g->s[1] == 1 &&
           g->d[1] == 1 && !g->p[1] && !g->p[3] && R > 1 && (g->sym || g->OW >= R);
}

static int bc_lower_taps(lctx *c, bconv *g, int R)
{
    kir_kernel *k = c->k;
    kir_expr *oh, *ob[1], *rows[BC_MAX_ROWS];
    kir_stmt *lp = bc_trips(c, g, 1, R, &oh, ob, rows);
    int jv = kir_new_var(k);
    if (!lp)
        return -1;
    /* rows[0] = the block's first pixel */
    kir_expr *start = lw_imin(k, rows[0], lw_i64c(k, g->OW - R));
    kir_expr *lastcol = NULL, *lastpx = NULL;
    if (g->sym) {
        kir_expr *OW = lw_dim_of(k, g->owd);
        start = lw_imax(k, lw_imin(k, rows[0], lw_iaddc(k, OW, -R)), lw_i64c(k, 0));
        lastcol = lw_iaddc(k, lw_dim_of(k, g->wd), -1);
        lastpx = lw_iaddc(k, OW, -1);
    }
    kir_stmt *lj = kir_for(k, &lp->body, jv, lw_i64c(k, 0), lw_i64c(k, g->ML), KIR_VECTOR, (int)g->ML);
    if (!lj)
        return -1;
    kir_expr *j = kir_var(k, jv);
    kir_block *tb = &lj->body;
    int acc[BC_MAX_ROWS];
    for (int r = 0; r < R; r++)
        if ((acc[r] = kir_new_acc(k, IR_F32)) < 0 || !kir_acc_set(k, tb, acc[r], kir_const_f(k, IR_F32, 0)))
            return -1;
    /* the reduction loops without kw (a trip-1 loop stands for it) */
    bconv gk = *g;
    gk.KW = 1;
    kir_block *kb = tb;
    if (k_open(c, &gk, oh, &kb) < 0)
        return -1;
    g->icb = gk.icb, g->kh = gk.kh, g->ic = gk.ic;
    kir_expr *wv[BC_MAX_TAPS];
    int64_t KW = g->KW;
    for (int64_t t = 0; t < KW; t++) {
        kir_expr *wi[6] = {ob[0], g->icb, g->kh, lw_i64c(k, t), g->ic, j};
        if (!(wv[t] = kir_let(k, kb, lw_load_in(c, 1, wi))))
            return -1;
    }
    for (int64_t col = 0; col < R + KW - 1; col++) {
        kir_expr *at = lw_iaddc(k, start, col);
        kir_expr *xi[5] = {g->nb, g->icb, kir_iadd(k, row_start(k, g, oh), lw_imulc(k, g->kh, g->d[0])),
                           lastcol ? lw_imin(k, at, lastcol) : at, g->ic};
        kir_expr *a = kir_let(k, kb, lw_load_in(c, 0, xi));
        if (!a)
            return -1;
        for (int64_t t = 0; t < KW; t++) {
            int64_t r = col - t;
            if (r >= 0 && r < R &&
                !kir_acc_set(k, kb, acc[r], kir_op3(k, KIR_FMA, IR_F32, a, wv[t], kir_acc(k, acc[r]))))
                return -1;
        }
    }
    for (int64_t t = 0; t < KW; t++) {
        g->kw = lw_i64c(k, t);
        if (bc_prefetch(c, g, kb, 1, R, kir_var(k, lp->var), ob) < 0)
            return -1;
    }
    for (int i = 0; i < R; i++) {
        int r = lastpx ? R - 1 - i : i;   /* symbolic: last to first */
        kir_expr *px = lw_iaddc(k, start, r);
        if (!bc_store(c, g, tb, ob[0], oh, lastpx ? lw_imin(k, px, lastpx) : px, j, kir_acc(k, acc[r])))
            return -1;
    }
    return 0;
}

/* The dot-product kernels, bf16 pairs (packed_k = 2, the pack-b pass; X
 * read in bf16) and u8 x i8 quads (packed_k = 4, the integer form):
 * bc_lower's trips, tile and clamping, with the sums in thread scratch at
 * constant offsets (registers; f32, or i32 for quads) and per group of pk
 * input lanes one dot-product intrinsic per tile row and output block:
 * X's pk lanes broadcast against the tap's ML groups of W (one 64-byte
 * load), vdpbf16ps (twice the multiply-adds of an FMA) or vpdpbusd (four
 * times). No padding along W (X's group is read in place); along H the kh
 * loop is cut. */
static int bc_lower_dots(lctx *c, bconv *g, int V, int R)
{
    kir_kernel *k = c->k;
    int L = c->s->lanes >= 1 ? c->s->lanes : 1;
    ir_dtype st = g->integer ? IR_I32 : IR_F32;
    int acc = kir_add_scratch(k, "cacc", KIR_SPACE_THREAD, st, 2, (int64_t[]){R, V * g->ML});
    kir_expr *oh, *ob[BC_MAX_VECS], *rows[BC_MAX_ROWS];
    kir_stmt *lp = acc < 0 ? NULL : bc_trips(c, g, V, R, &oh, ob, rows);
    if (!lp)
        return -1;
    kir_block *tb = &lp->body;
    /* the sums start at 0 */
    for (int r = 0; r < R; r++) {
        int lv = kir_new_var(k);
        kir_stmt *l = kir_for(k, tb, lv, lw_i64c(k, 0), lw_i64c(k, V * g->ML), KIR_VECTOR, L);
        kir_expr *zero = g->integer ? kir_const_i(k, IR_I32, 0) : kir_const_f(k, IR_F32, 0);
        if (!l || !kir_store(k, &l->body, acc, (kir_expr *[]){lw_i64c(k, r), kir_var(k, lv)}, zero))
            return -1;
    }
    kir_block *kb = tb;
    g->lsteps = g->CL / g->pk;
    if (k_open(c, g, oh, &kb) < 0)
        return -1;
    kir_expr *woff[BC_MAX_VECS];
    for (int v = 0; v < V; v++)
        if (!(woff[v] = kir_let(k, kb, w_tap(c, g, ob[v]))))
            return -1;
    for (int r = 0; r < R; r++) {
        kir_expr *xi[5];
        x_idx(c, g, oh, rows[r], lw_imulc(k, g->ic, g->pk), xi);
        for (int v = 0; v < V; v++) {
            kir_iarg args[3] = {
                {.buf = acc, .nidx = 2, .idx = (kir_expr *[]){lw_i64c(k, r), lw_i64c(k, (int64_t)v * g->ML)}},
                {.buf = c->buf[0], .nidx = 5, .idx = xi},
                {.buf = g->wflat, .nidx = 1, .idx = &woff[v]},
            };
            if (!kir_intrinsic(k, kb, g->integer ? KIR_IN_DPBUSD_QUADS : KIR_IN_DPBF16_PAIRS, (int)g->ML, args))
                return -1;
        }
    }
    for (int v = 0; v < V; v++)
        for (int r = 0; r < R; r++) {
            int jv = kir_new_var(k);
            kir_stmt *lj = kir_for(k, tb, jv, lw_i64c(k, 0), lw_i64c(k, g->ML), KIR_VECTOR, L);
            if (!lj)
                return -1;
            kir_expr *j = kir_var(k, jv);
            kir_expr *val = kir_load(k, acc, (kir_expr *[]){lw_i64c(k, r), lw_iaddc(k, j, (int64_t)v * g->ML)});
            if (!bc_store(c, g, &lj->body, ob[v], oh, rows[r], j, val))
                return -1;
        }
    return 0;
}

/* ---- bf16 and u8 x i8 on AMX tiles ----------------------------------------- */

/* The dot-product kernels' convolutions on AMX tiles, bf16 pairs on
 * AMX-BF16 and u8 x i8 quads on AMX-INT8 (tdpbusd): a tile row is one
 * output pixel's input lanes for g taps along W (g * CL values: adjacent
 * in X when the taps are, dilation 1; their bytes amx_config's depth, at
 * most 64), a tile R <= 16 pixels a constant distance apart in X, and the
 * g taps' W (per pair or quad of input lanes, 16 of the row's ML output
 * lanes: 64 bytes) the other operand as it lies. Pixels run either over
 * the extended plane (stride 1: pixel e = oh * W + ow, input pixel e + kh*d*W + kw*d for
 * every tap, the columns ow >= OW computed and not stored) or, for other
 * strides, along each output row (input pixels s apart; R = OW when a row
 * is shorter than 16). A trip is 2 output blocks of 16 lanes (or one of
 * 32: its two halves, the W tiles 64 bytes apart in a 128-byte row) x 2
 * tiles of pixels (a row's or the plane's last tile moved back to end at
 * its last pixel, so no tile reads past X: those pixels are recomputed)
 * on four sum tiles over the whole reduction; the sums go through thread
 * scratch to the epilogue. Each thread runs chunks of consecutive trips,
 * and a trip's epilogue runs inside the next trip's reduction, a few sum
 * rows a step (two slots of sums alternate; the chunk's last trip goes
 * out after its loop), so its loads and stores overlap the products. */
typedef struct {
    bool ext;               /* the extended plane (stride 1), else rows */
    int64_t ps;             /* input pixels between a tile's rows: 1, or the stride along W */
    int64_t np;             /* pixels of a group: the extended plane's (OH-1)*W + OW, or OW */
    int64_t groups;         /* pixel groups run separately: 1 (ext) or the OH output rows */
    int64_t rows;           /* pixels of a tile: 16, or np when fewer */
    int64_t taps;           /* taps along W per product (g) */
    /* the trips (bc_lower_amx): tiles per group, tiles, pairs of tiles,
     * and trips along M (2 blocks of 16, or 1 of 32) */
    int64_t tpr, nt, ntp, mbg;
} bc_amx;

static bool bc_amx_plan(lctx *c, const bconv *g, bool pairs, bc_amx *a)
{
    int64_t eb = g->integer ? 1 : 2;   /* bytes of an input lane */
    if (!(g->integer ? c->s->amx_int8 : c->s->amx_bf16) || !pairs || g->sym || (g->ML != 16 && g->ML != 32) ||
        g->CL % g->pk || g->CL * eb > 64 || g->p[0] || g->p[1] || g->p[2] || g->p[3] || c->k->bufs[c->buf[0]].kind == KIR_BUF_SCRATCH)
        return false;
    a->ext = g->s[0] == 1 && g->s[1] == 1;
    a->ps = a->ext ? 1 : g->s[1];
    a->np = a->ext ? (g->OH - 1) * g->W + g->OW : g->OW;
    a->groups = a->ext ? 1 : g->OH;
    a->rows = a->np < 16 ? a->np : 16;
    /* the most taps along W whose lanes fill one tile row, a divisor of KW */
    a->taps = 1;
    for (int64_t t = g->KW; t > 1 && g->d[1] == 1; t--)
        if (g->KW % t == 0 && t * g->CL * eb <= 64) {
            a->taps = t;
            break;
        }
    /* a tile of fewer than 4 pixels (or of less than 8 bytes of k) wastes most of the unit; 7
     * (ResNet-50's last rows) still beats vdpbf16ps several times over */
    a->tpr = (a->np + 15) / 16;
    a->nt = a->groups * a->tpr;
    a->ntp = (a->nt + 1) / 2;
    a->mbg = g->ML == 16 ? (g->MB + 1) / 2 : g->MB;
    return a->rows >= 4 && a->taps * g->CL * eb >= 8 && g->N * g->CB * g->H * g->W >= a->ps;
}

/* A trip of bc_lower_amx (batch, output block pair, pair of tiles; tiles
 * fastest): its batch item, its output blocks (a 32-lane block twice) and
 * per pixel tile its group and first pixel, as lets in b from trip p. */
typedef struct {
    kir_expr *nb, *ob[2], *grp[2], *t0[2];
} bc_trip;

static int bc_trip_at(lctx *c, const bconv *g, const bc_amx *a, kir_block *b, kir_expr *p, bc_trip *t)
{
    kir_kernel *k = c->k;
    kir_expr *tp = lw_iremc(k, p, a->ntp), *q = lw_idivc(k, p, a->ntp), *mg = lw_iremc(k, q, a->mbg);
    t->nb = g->N > 1 ? kir_let(k, b, lw_idivc(k, q, a->mbg)) : lw_i64c(k, 0);
    bool ok = t->nb != NULL;
    for (int i = 0; i < 2; i++) {
        t->ob[i] = g->ML == 16 ? kir_let(k, b, lw_imin(k, lw_iaddc(k, lw_imulc(k, mg, 2), i), lw_i64c(k, g->MB - 1)))
                               : kir_let(k, b, mg);
        kir_expr *ti = lw_imin(k, lw_iaddc(k, lw_imulc(k, tp, 2), i), lw_i64c(k, a->nt - 1));
        t->grp[i] = kir_let(k, b, a->tpr > 1 ? lw_idivc(k, ti, a->tpr) : ti);
        t->t0[i] = kir_let(k, b, a->tpr > 1 ? lw_imin(k, lw_imulc(k, lw_iremc(k, ti, a->tpr), 16), lw_i64c(k, a->np - a->rows))
                                            : lw_i64c(k, 0));
        ok = ok && t->ob[i] && t->grp[i] && t->t0[i];
    }
    return ok ? 0 : -1;
}

/* The windows of trip t's four operand tiles (X's two pixel tiles, W's
 * two column tiles) at the reduction position g->icb, kh, kw. */
static void bc_amx_windows(lctx *c, const bconv *g, const bc_amx *a, const bc_trip *t, kir_expr *(*win)[2])
{
    kir_kernel *k = c->k;
    /* tile i's first input pixel in X's flat pixels, a multiple of ps past the plane's start */
    kir_expr *plane = lw_imulc(k, kir_iadd(k, lw_imulc(k, g->nb, g->CB), g->icb), g->H * g->W);
    for (int i = 0; i < 2; i++) {
        kir_expr *in_row = a->ext ? lw_imulc(k, g->kh, g->d[0])
                                  : kir_iadd(k, lw_imulc(k, t->grp[i], g->s[0]), lw_imulc(k, g->kh, g->d[0]));
        kir_expr *px = kir_iadd(k, plane, kir_iadd(k, lw_imulc(k, in_row, g->W), lw_imulc(k, g->kw, g->d[1])));
        px = kir_iadd(k, px, lw_imulc(k, t->t0[i], a->ps));
        win[i][0] = lw_idivc(k, px, a->ps);
        win[i][1] = lw_imulc(k, lw_iremc(k, px, a->ps), g->CL);
        win[2 + i][0] = lw_imulc(k, tap(c, g, t->ob[i]), g->CL / g->pk);
        win[2 + i][1] = lw_i64c(k, g->ML == 16 ? 0 : 16 * g->pk * i);
    }
}

/* Sum rows [lo, hi) of trip t (pixel tile i's row r is row 16 i + r, r <
 * a->rows) from acc's rows ar + that, through the epilogue into Y. */
static int bc_amx_out(lctx *c, const bconv *g, const bc_amx *a, kir_block *b, int acc, kir_expr *ar, const bc_trip *t,
                      kir_expr *lo, kir_expr *hi)
{
    kir_kernel *k = c->k;
    bconv gt = *g;
    gt.nb = t->nb;
    int L = c->s->lanes >= 1 ? c->s->lanes : 1;
    for (int i = 0; i < 2; i++) {
        int rv = kir_new_var(k);
        kir_expr *r0 = lw_imax(k, lw_iaddc(k, lo, -16 * i), lw_i64c(k, 0));
        kir_expr *r1 = lw_imin(k, lw_iaddc(k, hi, -16 * i), lw_i64c(k, a->rows));
        kir_stmt *lr = kir_for(k, b, rv, r0, r1, KIR_SERIAL, 0);
        if (!lr)
            return -1;
        kir_expr *pix = kir_iadd(k, t->t0[i], kir_var(k, rv)), *poh = t->grp[i], *row = pix;
        kir_block *sb = &lr->body;
        if (a->ext && !g->flat) {   /* (oh, ow) of the extended plane; ow >= OW is not an output */
            poh = lw_idivc(k, pix, g->W);
            row = lw_iremc(k, pix, g->W);
            kir_stmt *in = g->W > g->OW ? kir_if(k, sb, kir_op2(k, KIR_LT, IR_BOOL, row, lw_i64c(k, g->OW))) : NULL;
            if (g->W > g->OW && !in)
                return -1;
            sb = in ? &in->body : sb;
        }
        for (int v = 0; v < 2; v++) {
            int jv = kir_new_var(k);
            kir_stmt *lj = kir_for(k, sb, jv, lw_i64c(k, 0), lw_i64c(k, 16), KIR_VECTOR, L);
            if (!lj)
                return -1;
            kir_expr *j = kir_var(k, jv), *jc = lw_iaddc(k, j, 16 * v);
            kir_expr *val = kir_load(k, acc, (kir_expr *[]){kir_iadd(k, lw_iaddc(k, ar, 16 * i), kir_var(k, rv)), jc});
            if (!bc_store(c, &gt, &lj->body, t->ob[v], poh, row, g->ML == 16 ? j : jc, val))
                return -1;
        }
    }
    return 0;
}

static int bc_lower_amx(lctx *c, bconv *g, const bc_amx *a)
{
    kir_kernel *k = c->k;
    const kir_buf *xb = &k->bufs[c->buf[0]], *wb = &k->bufs[g->wflat];
    int64_t HW = g->H * g->W, R = a->rows, depth = a->taps * g->CL * (int64_t)ir_dtype_size(xb->dtype);
    /* X as rows of ps pixels (a tile's rows are those rows; a partial last
     * one is left out of the view, as no tile starts there) */
    ir_type xt = {.dtype = xb->dtype, .rank = 2, .dims = {ir_dim_const(g->N * g->CB * HW / a->ps), ir_dim_const(a->ps * g->CL)}};
    ir_type wt = {.dtype = wb->dtype, .rank = 2,
                  .dims = {ir_dim_const(g->MB * g->CB * g->KH * g->KW * g->CL / g->pk), ir_dim_const(g->pk * g->ML)}};
    int xv = kir_add_buf(k, xb->name, xb->kind, &xt, xb->index, xb->offset);
    int wv = xv < 0 ? -1 : kir_add_buf(k, wb->name, wb->kind, &wt, wb->index, wb->offset);
    /* two slots of 32 x 32 sums (the trip in the tiles, the pending one)
     * and the pending trip's state: its index + 1 (0: none), the slot the
     * next trip fills */
    int acc = wv < 0 ? -1 : kir_add_scratch(k, "tacc", KIR_SPACE_THREAD, g->integer ? IR_I32 : IR_F32, 2,
                                            (int64_t[]){64, 32});
    int tst = acc < 0 ? -1 : kir_add_scratch(k, "tpend", KIR_SPACE_THREAD, IR_I64, 1, (int64_t[]){2});
    if (tst < 0)
        return -1;
    /* chunks of consecutive trips, each thread's trips in order */
    int64_t trips = g->N * a->mbg * a->ntp, nch = 2 * (int64_t)(c->s->min_chunks > 0 ? c->s->min_chunks : 1);
    if (nch > trips)
        nch = trips;
    int64_t per = (trips + nch - 1) / nch;
    nch = (trips + per - 1) / per;
    int cv = kir_new_var(k), pv = kir_new_var(k);
    kir_stmt *lc = kir_for(k, &k->body, cv, lw_i64c(k, 0), lw_i64c(k, nch), KIR_PARALLEL, 0);
    if (!lc || !kir_intrinsic(k, &lc->body, KIR_IN_AMX_CONFIG, kir_amx_config_lanes((int)depth, (int)R), NULL))
        return -1;
    kir_expr *p0 = lw_imulc(k, kir_var(k, cv), per);
    if (lower_amx_st_set(k, &lc->body, tst, 0, lw_i64c(k, 0)) < 0 ||
        lower_amx_st_set(k, &lc->body, tst, 1, lw_i64c(k, 0)) < 0)
        return -1;
    kir_stmt *lp = kir_for(k, &lc->body, pv, p0, lw_imin(k, lw_iaddc(k, p0, per), lw_i64c(k, trips)), KIR_SERIAL, 0);
    if (!lp)
        return -1;
    kir_block *tb = &lp->body;
    bc_trip cur, pend;
    kir_expr *on = kir_let(k, tb, lower_amx_st(k, tst, 0)), *sl = kir_let(k, tb, lower_amx_st(k, tst, 1));
    if (!on || !sl || bc_trip_at(c, g, a, tb, kir_var(k, pv), &cur) < 0 ||
        bc_trip_at(c, g, a, tb, lw_imax(k, lw_iaddc(k, on, -1), lw_i64c(k, 0)), &pend) < 0 || lower_amx_zero(c, tb) < 0)
        return -1;
    g->nb = cur.nb;
    /* the reduction: input blocks, taps along H, groups of `taps` taps
     * along W; step st = (icb KH + kh) KWt + kw / taps of S. The loads are
     * pipelined (lower_amx_step_next): step 0's first tiles before the
     * loops, each step's next ones from step min(st + 1, S - 1). */
    int64_t KWt = g->KW / a->taps, S = g->CB * g->KH * KWt;
    int vb = kir_new_var(k), vh = kir_new_var(k), vw = kir_new_var(k);
    kir_expr *win[3][4][2];
    g->icb = g->kh = g->kw = lw_i64c(k, 0);
    bc_amx_windows(c, g, a, &cur, win[0]);
    int bufs[4] = {xv, xv, wv, wv};
    if (lower_amx_prime(c, tb, bufs, win[0]) < 0)
        return -1;
    kir_stmt *l1 = kir_for(k, tb, vb, lw_i64c(k, 0), lw_i64c(k, g->CB), KIR_SERIAL, 0);
    kir_stmt *l2 = l1 ? kir_for(k, &l1->body, vh, lw_i64c(k, 0), lw_i64c(k, g->KH), KIR_SERIAL, 0) : NULL;
    kir_stmt *l3 = l2 ? kir_for(k, &l2->body, vw, lw_i64c(k, 0), lw_i64c(k, KWt), KIR_SERIAL, 0) : NULL;
    if (!l3)
        return -1;
    kir_block *kb = &l3->body;
    kir_expr *st = kir_iadd(k, lw_imulc(k, kir_iadd(k, lw_imulc(k, kir_var(k, vb), g->KH), kir_var(k, vh)), KWt), kir_var(k, vw));
    kir_expr *sn = kir_let(k, kb, lw_imin(k, lw_iaddc(k, st, 1), lw_i64c(k, S - 1)));
    if (!sn)
        return -1;
    g->icb = lw_idivc(k, sn, g->KH * KWt);
    g->kh = lw_iremc(k, lw_idivc(k, sn, KWt), g->KH);
    g->kw = lw_imulc(k, lw_iremc(k, sn, KWt), a->taps);
    bc_amx_windows(c, g, a, &cur, win[2]);
    g->icb = kir_var(k, vb);
    g->kh = kir_var(k, vh);
    g->kw = lw_imulc(k, kir_var(k, vw), a->taps);
    bc_amx_windows(c, g, a, &cur, win[1]);
    /* sum tile t: pixel tile t / 2, output block (or 32-lane block's half) t % 2 */
    if (lower_amx_step_next(c, kb, bufs, win[1], win[2], g->integer ? KIR_IN_AMX_DPBUSD : KIR_IN_AMX_DPBF16PS) < 0)
        return -1;
    /* the pending trip's epilogue, ceil(32 / steps) sum rows a step: the
     * vector unit's loads of the residual, stores of Y and activation run
     * while the tile unit multiplies */
    int64_t Q = (32 + S - 1) / S;
    kir_expr *lo = lw_imulc(k, st, Q);
    kir_stmt *pe = kir_if(k, kb, kir_op2(k, KIR_NE, IR_BOOL, on, lw_i64c(k, 0)));
    kir_expr *flip = lower_amx_flip(k, sl);
    if (!pe || bc_amx_out(c, g, a, &pe->body, acc, lw_imulc(k, flip, 32), &pend, lo, lw_iaddc(k, lo, Q)) < 0)
        return -1;
    if (lower_amx_store(c, tb, acc, lw_imulc(k, sl, 32), lw_i64c(k, 0)) < 0 ||
        lower_amx_st_set(k, tb, tst, 0, lw_iaddc(k, kir_var(k, pv), 1)) < 0 ||
        lower_amx_st_set(k, tb, tst, 1, flip) < 0)
        return -1;
    /* the chunk's last trip goes out after its loop */
    kir_block *cb = &lc->body;
    kir_expr *lon = kir_let(k, cb, lower_amx_st(k, tst, 0)), *nsl = kir_let(k, cb, lower_amx_st(k, tst, 1));
    bc_trip last;
    if (!lon || !nsl || bc_trip_at(c, g, a, cb, lw_imax(k, lw_iaddc(k, lon, -1), lw_i64c(k, 0)), &last) < 0)
        return -1;
    kir_stmt *le = kir_if(k, cb, kir_op2(k, KIR_NE, IR_BOOL, lon, lw_i64c(k, 0)));
    if (!le || bc_amx_out(c, g, a, &le->body, acc, lw_imulc(k, lower_amx_flip(k, nsl), 32), &last, lw_i64c(k, 0),
                          lw_i64c(k, 32)) < 0)
        return -1;
    return kir_intrinsic(k, cb, KIR_IN_AMX_RELEASE, 0, NULL) ? 0 : -1;
}

int lower_conv_blocked(lctx *c)
{
    bconv g;
    if (!bconv_geom(c->n, &g))
        return -1;
    g.lsteps = g.CL;
    if (g.pk > 1 && c->buf[1] >= 0) {
        /* a flat view of packed W (its taps' order is not its dims') */
        const kir_buf *b = &c->k->bufs[c->buf[1]];
        ir_type t = {.dtype = b->dtype, .rank = 1};
        t.dims[0] = ir_dim_const(g.MB * g.CB * g.KH * g.KW * g.CL * g.ML);
        if ((g.wflat = kir_add_buf(c->k, b->name, b->kind, &t, b->index, b->offset)) < 0)
            return -1;
    }
    g.flat = g.KH == 1 && g.KW == 1 && g.s[0] == 1 && g.s[1] == 1 && !g.p[0] && !g.p[1] && !g.p[2] && !g.p[3] &&
             (g.sym || g.OH * g.OW < (INT64_C(1) << 31));
    /* accumulators: the registers less the weights' and a broadcast's
     * (28 of 32 with AVX-512, 12 of 16 with AVX2). The tile spans two
     * output blocks, 2 x 6 with 16 registers and 2 x 14 with 32 (at most
     * 14 rows, since LLVM keeps each row's address in a register: 28
     * spilled them, measured on ResNet-50's 1x1 shapes), so each broadcast
     * of X feeds two FMAs. One block of 28 rows (1 x 28, each FMA with its
     * broadcast as a memory operand) issues a load per FMA, which a core
     * with two 512-bit FMA units cannot feed: Sapphire Rapids, 1 thread,
     * runs interleaved (docs/performance.md): a 128 -> 64 channel 3x3
     * conv at 40 x 40 1.90 -> 1.75 ms (min), ResNet-50 69.7 -> 57.8,
     * the YOLO-style detector 10.2 -> 9.2. With an odd number of output
     * blocks the last pair recomputes the last block: 3 blocks keep 1 x 28
     * (48 channels at 56 x 56: 1.12x slower as pairs), from 5 the pairs
     * still win (median ratio of interleaved runs: 80 channels 3x3 at 28 x
     * 28 0.86, 112 channels 1x1 at 14 x 14 0.95, 480 -> 80 1x1 0.95). */
    int lanes = c->s->lanes >= 4 ? c->s->lanes : 4;
    int regs_per_vec = (int)((g.ML + lanes - 1) / lanes);
    bool wide = c->s->target && c->s->target->vector_regs >= 32;
    /* the pair kernel when both operands are bf16 buffers (X read through
     * its Cast in the group, as the pack-b pass packs only then); there
     * two output blocks per tile, so each broadcast of X's pair feeds two
     * vdpbf16ps (1 x 24 spent as many broadcasts as dot products and ran
     * at 155 GFLOP/s, 2 x 12 at 210-220 on Zen 4, 4 x 6 the same: the
     * ResNet-style CNN of bench/precision.py) */
    bool pairs = g.pk == 2 && g.wflat >= 0 && c->buf[0] >= 0 && c->k->bufs[c->buf[0]].dtype == IR_BF16 &&
                 c->k->bufs[g.wflat].dtype == IR_BF16;
    /* the integer form has only the quad kernel, on X's and W's buffers
     * (an anchor's inputs come from outside its group) */
    if (g.integer && (g.wflat < 0 || c->buf[0] < 0))
        return -1;
    pairs = pairs || g.integer;
    int V = g.MB > 1 && (pairs || (regs_per_vec == 1 && (!wide || g.MB % 2 == 0 || g.MB >= 5))) ? 2 : 1;
    int most = (wide ? 28 : 12) / (V * regs_per_vec);
    if (wide && g.flat && most > 14)
        most = 14;
    if (most < 1)
        most = 1;
    /* symbolic: rows for a long plane, or at most 10 along a row (detector
     * rows past the stem are 10 to 80 wide, often multiples of 10 at
     * strides 8 to 32 of a 320 or 640 input; the rest of a row in tiles of
     * 4: bc_lower. Measured against 14, 12 and 8: a YOLO-style detector
     * at 320x320 0.89 of 14's time, a PaddleOCR detector at 480x640 0.98) */
    int64_t m = g.flat ? g.OH * g.OW : g.OW;
    if (g.sym)
        m = g.flat ? INT64_C(1) << 20 : most < 10 ? most : 10;
    /* Pixels fastest keep a group's weight panel in L2 while the input
     * streams, once per group. When all the weights fit in a quarter of
     * L2 and the input not in half, the groups go fastest instead:
     * consecutive trips share their pixels' input and take the weights
     * from L2, so the input is read once (ResNet-50's 1x1 convs from 256
     * channels at 56 x 56 read their 3.2 MB input 2 to 16 times from L3) */
    int64_t l2 = c->s->target ? c->s->target->l2_bytes : 0;
    if (!g.sym && l2 > 0 && (g.MB + V - 1) / V > 1 && c->buf[0] >= 0 && c->buf[1] >= 0) {
        int64_t xb = (int64_t)ir_dtype_size(c->k->bufs[c->buf[0]].dtype), wb = (int64_t)ir_dtype_size(c->k->bufs[c->buf[1]].dtype);
        int64_t wbytes = g.MB * g.CB * g.KH * g.KW * g.CL * g.ML * wb, xbytes = g.CB * g.H * g.W * g.CL * xb;
        g.groups_inner = wbytes <= l2 / 4 && xbytes > l2 / 2;
    }
    bc_amx amx;
    if (bc_amx_plan(c, &g, pairs, &amx))
        return bc_lower_amx(c, &g, &amx);
    if (pairs)
        return bc_lower_dots(c, &g, V, lw_even_tile(m, most));
    /* one output block along a row: the taps share broadcasts (bc_lower_taps), R accumulators
     * beside KW weights and two or three broadcasts */
    int taps_most = ((wide ? 32 : 16) - 3 - (int)g.KW * regs_per_vec) / regs_per_vec;
    if (taps_most > most)
        taps_most = most;
    if (taps_most > 1 && bc_taps_fit(&g, V, lw_even_tile(m, taps_most)))
        return bc_lower_taps(c, &g, lw_even_tile(m, taps_most));
    return bc_lower(c, &g, V, lw_even_tile(m, most));
}
