/* conv_blocked.c - ConvNCHWc, the layout pass's blocked 2-D convolution
 * (ir/ref/conv_blocked.c), as a direct convolution on the register tile
 * (tile.h).
 *
 * With X [N, C/cb, H, W, cb], W [M/mb, C/cb, kh, kw, cb, mb] and Y
 * [N, M/mb, OH, OW, mb], one output pixel's mb channels are contiguous in
 * Y and one weight tap's mb output channels are contiguous in W. So the
 * tile's vector loop is the mb lanes of an output block (one register when
 * mb is the target's width), its rows are consecutive output pixels along
 * OW (A = one input element, a broadcast; row r reads the input at a
 * constant distance r*stride*cb from row 0, so every A load shares one
 * base address), and its column groups are (output block, output row)
 * pairs, the output row fastest so that consecutive groups reuse the
 * block's weights. A 1x1, stride-1, unpadded conv is a matrix product over
 * the plane, so its rows run over the flattened plane instead (7x7 planes
 * get 13-row tiles rather than 7). Per reduction step the tile does one
 * vector load of W and `rows` FMAs whose broadcast operand LLVM folds
 * into the FMA. The reduction runs over (input block, kh, kw, lane); a
 * long one is cut into blocks of input channel blocks whose partial sums
 * go through Y. Unlike the NCHW implicit GEMM (conv.c), no load is
 * masked or strided and no lane is wasted on a plane that does not fill
 * the vector.
 *
 * Padding: the layout pass gives padded convs an explicitly zero-padded
 * input (pads = 0 here), the fast case. Otherwise taps along H that leave
 * the input are cut from the kh loop (uniform per output row), and along
 * W the A load reads a clamped position and selects 0 outside (correct,
 * slower).
 */
#include "codegen/lower/tile.h"
#include "ir/ops.h"

typedef struct {
    int64_t N, CB, H, W, CL;          /* input: batch, channel blocks, plane, lanes */
    int64_t MB, KH, KW, ML;           /* weights: output blocks, kernel, output lanes */
    int64_t OH, OW;
    int64_t s[2], d[2], p[4];         /* strides, dilations, pads [top, left, bottom, right] */
    int64_t icbk;                     /* input channel blocks per reduction block */
    bool flat;                        /* 1x1, stride 1, no pads: rows run over the whole plane */
    kir_expr *nb;                     /* the batch item */
    kir_expr *icb, *kh, *kw, *ic;     /* the reduction's current position */
} bconv;


static bool read_ints(const ir_node *n, const char *name, int want, int64_t def, int64_t minv, int64_t *out)
{
    const int64_t *v;
    int cnt = ir_attr_ints(n, name, &v);
    for (int i = 0; i < want; i++)
        out[i] = def;
    if (cnt < 0)
        return true;
    if (cnt != want)
        return false;
    for (int i = 0; i < want; i++) {
        if (v[i] < minv || v[i] > (INT64_C(1) << 20))
            return false;
        out[i] = v[i];
    }
    return true;
}

static bool is_f32_static(const ir_value *v, int rank)
{
    if (!v || v->type.dtype != IR_F32 || v->type.rank != rank)
        return false;
    for (int i = 0; i < rank; i++)
        if (!ir_dim_is_const(v->type.dims[i]) || v->type.dims[i].v < 1 || v->type.dims[i].v > (INT64_C(1) << 30))
            return false;
    return true;
}

/* The geometry of n, checked against its operands' and result's types. */
static bool bconv_geom(const ir_node *n, bconv *g)
{
    if (n->op != IR_OP_CONV_NCHWC || n->nin < 2 || n->nout != 1)
        return false;
    const ir_value *x = n->in[0], *w = n->in[1], *b = n->nin > 2 ? n->in[2] : NULL, *y = n->out[0];
    if (!is_f32_static(x, 5) || !is_f32_static(w, 6) || !is_f32_static(y, 5) || (b && !is_f32_static(b, 2)))
        return false;
    *g = (bconv){0};
    const ir_dim *xd = x->type.dims, *wd = w->type.dims, *yd = y->type.dims;
    g->N = xd[0].v, g->CB = xd[1].v, g->H = xd[2].v, g->W = xd[3].v, g->CL = xd[4].v;
    g->MB = wd[0].v, g->KH = wd[2].v, g->KW = wd[3].v, g->ML = wd[5].v;
    g->OH = yd[2].v, g->OW = yd[3].v;
    if (!read_ints(n, "strides", 2, 1, 1, g->s) || !read_ints(n, "dilations", 2, 1, 1, g->d) ||
        !read_ints(n, "pads", 4, 0, 0, g->p))
        return false;
    if (wd[1].v != g->CB || wd[4].v != g->CL || yd[0].v != g->N || yd[1].v != g->MB || yd[4].v != g->ML ||
        (b && (b->type.dims[0].v != g->MB || b->type.dims[1].v != g->ML)))
        return false;
    for (int i = 0; i < 2; i++) {
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

/* ---- the tile's callbacks ------------------------------------------------- */

/* The tile's state: `a` is not given the column group, so k_open keeps
 * it (the group's output row decides the input row). */
typedef struct {
    bconv g;
    kir_expr *gr;
} bctile;

static int bc_setup(lctx *c, cg_tile *t, kir_expr *bat)
{
    (void)c;
    ((bctile *)t->u)->g.nb = bat;
    return 0;
}

/* The first input row of output row oh: oh*s - pad. */
static kir_expr *row_start(kir_kernel *k, const bconv *g, kir_expr *gr)
{
    return lw_iaddc(k, lw_imulc(k, lw_iremc(k, gr, g->OH), g->s[0]), -g->p[0]);
}

static int bc_k_open(lctx *c, cg_tile *t, kir_expr *kb, kir_expr *gr, kir_block **b)
{
    kir_kernel *k = c->k;
    bctile *u = t->u;
    bconv *g = &u->g;
    u->gr = gr;
    int vb = kir_new_var(k), vh = kir_new_var(k), vw = kir_new_var(k), vi = kir_new_var(k);
    kir_expr *c0 = lw_imulc(k, kb, g->icbk);
    kir_stmt *l = kir_for(k, *b, vb, c0, lw_imin(k, lw_i64c(k, g->CB), lw_iaddc(k, c0, g->icbk)), KIR_SERIAL, 0);
    if (!l)
        return -1;
    /* taps along H inside the input: a range uniform in the tile */
    kir_expr *lo = lw_i64c(k, 0), *hi = lw_i64c(k, g->KH);
    if (g->p[0] || g->p[2]) {
        kir_expr *st = row_start(k, g, gr), *dd = lw_i64c(k, g->d[0]);
        /* lo = ceil(-st / d) clamped to [0, KH]; hi = ceil((H - st) / d) likewise */
        kir_expr *nlo = kir_op2(k, KIR_DIV, IR_I64, lw_iaddc(k, kir_op2(k, KIR_SUB, IR_I64, lw_i64c(k, 0), st), g->d[0] - 1), dd);
        kir_expr *nhi = kir_op2(k, KIR_DIV, IR_I64,
                                lw_iaddc(k, kir_op2(k, KIR_SUB, IR_I64, lw_i64c(k, g->H), st), g->d[0] - 1), dd);
        lo = lw_imin(k, lw_i64c(k, g->KH), lw_imax(k, lw_i64c(k, 0), nlo));
        hi = lw_imin(k, lw_i64c(k, g->KH), lw_imax(k, lw_i64c(k, 0), nhi));
    }
    kir_stmt *lh = kir_for(k, &l->body, vh, lo, hi, KIR_SERIAL, 0);
    kir_stmt *lw = lh ? kir_for(k, &lh->body, vw, lw_i64c(k, 0), lw_i64c(k, g->KW), KIR_SERIAL, 0) : NULL;
    kir_stmt *li = lw ? kir_for(k, &lw->body, vi, lw_i64c(k, 0), lw_i64c(k, g->CL), KIR_SERIAL, 0) : NULL;
    if (!li)
        return -1;
    g->icb = kir_var(k, vb);
    g->kh = kir_var(k, vh);
    g->kw = kir_var(k, vw);
    g->ic = kir_var(k, vi);
    *b = &li->body;
    return 0;
}

/* X at output pixel (oh of group gr, ow = row) and the current tap. */
static kir_expr *bc_a(lctx *c, cg_tile *t, kir_expr *row)
{
    kir_kernel *k = c->k;
    bctile *u = t->u;
    const bconv *g = &u->g;
    if (g->flat) {
        /* pixel `row` of the plane, addressed as a position past the
         * end of row 0 (the buffer is row-major, so it is the same element) */
        kir_expr *xi[5] = {g->nb, g->icb, lw_i64c(k, 0), row, g->ic};
        return lw_load_in(c, 0, xi);
    }
    kir_expr *ih = kir_iadd(k, row_start(k, g, u->gr), lw_imulc(k, g->kh, g->d[0]));
    kir_expr *iw = lw_iaddc(k, kir_iadd(k, lw_imulc(k, row, g->s[1]), lw_imulc(k, g->kw, g->d[1])), -g->p[1]);
    if (!g->p[1] && !g->p[3]) {
        kir_expr *xi[5] = {g->nb, g->icb, ih, iw, g->ic};
        return lw_load_in(c, 0, xi);
    }
    /* the clamped position is always inside the input; outside reads 0 */
    kir_expr *cw = lw_imin(k, lw_i64c(k, g->W - 1), lw_imax(k, lw_i64c(k, 0), iw));
    kir_expr *xi[5] = {g->nb, g->icb, ih, cw, g->ic};
    kir_expr *ok = kir_op2(k, KIR_EQ, IR_BOOL, cw, iw);
    return kir_op3(k, KIR_SELECT, IR_F32, ok, lw_load_in(c, 0, xi), kir_const_f(k, IR_F32, 0));
}

static kir_expr *bc_b(lctx *c, cg_tile *t, kir_expr *gr, kir_expr *j)
{
    const bconv *g = &((bctile *)t->u)->g;
    kir_expr *wi[6] = {g->flat ? gr : lw_idivc(c->k, gr, g->OH), g->icb, g->kh, g->kw, g->ic, j};
    return lw_load_in(c, 1, wi);
}

static void bc_out(lctx *c, cg_tile *t, kir_expr *row, kir_expr *gr, kir_expr *j, kir_expr **ix)
{
    kir_kernel *k = c->k;
    const bconv *g = &((bctile *)t->u)->g;
    ix[0] = g->nb;
    ix[1] = g->flat ? gr : lw_idivc(k, gr, g->OH);
    ix[2] = g->flat ? lw_i64c(k, 0) : lw_iremc(k, gr, g->OH);
    ix[3] = row;
    ix[4] = j;
}

static kir_expr *bc_epi(lctx *c, cg_tile *t, kir_expr *v, kir_expr *row, kir_expr *gr, kir_expr *j)
{
    (void)row;
    const ir_node *n = c->n;
    if (n->nin < 3 || !n->in[2])
        return v;
    const bconv *g = &((bctile *)t->u)->g;
    kir_expr *bi[2] = {g->flat ? gr : lw_idivc(c->k, gr, g->OH), j};
    return kir_op2(c->k, KIR_ADD, IR_F32, v, lw_load_in(c, 2, bi));
}

/* Rows of the register tile for m rows of output pixels: as even a split
 * into tiles of at most `most` rows as there is (the last tile's extra
 * rows are clamped to the last pixel and recomputed). */
static int tile_rows(int64_t m, int most)
{
    int64_t tiles = (m + most - 1) / most;
    return (int)((m + tiles - 1) / tiles);
}


int lower_conv_blocked(lctx *c)
{
    bctile u;
    if (!bconv_geom(c->n, &u.g))
        return -1;
    bconv *g = &u.g;
    u.gr = NULL;
    g->flat = g->KH == 1 && g->KW == 1 && g->s[0] == 1 && g->s[1] == 1 && !g->p[0] && !g->p[1] && !g->p[2] &&
              !g->p[3] && g->OH * g->OW < (INT64_C(1) << 31);
    /* rows: as many accumulators as the registers hold beside B's (28 of
     * 32 with AVX-512, 12 of 16 with AVX2); over the flat plane at most 14,
     * since LLVM then keeps 28 rows' addresses in spilled registers
     * (measured on ResNet-50's 1x1 shapes) */
    int lanes = c->s->lanes >= 4 ? c->s->lanes : 4;
    int64_t regs_per_row = (g->ML + lanes - 1) / lanes;
    int most = (int)((lanes >= 16 ? 28 : 12) / regs_per_row);
    if (g->flat && most > 14)
        most = 14;
    if (most < 1)
        most = 1;
    int64_t per_icb = g->KH * g->KW * g->CL;
    g->icbk = c->s->blocked_conv_kc / per_icb;
    if (g->icbk < 1)
        g->icbk = 1;
    if (g->icbk > g->CB)
        g->icbk = g->CB;
    int64_t nkb = (g->CB + g->icbk - 1) / g->icbk;
    g->icbk = (g->CB + nkb - 1) / nkb;
    nkb = (g->CB + g->icbk - 1) / g->icbk;
    int64_t m = g->flat ? g->OH * g->OW : g->OW;
    cg_tile t = {
        .nbat = g->N, .m = m, .ng = g->flat ? g->MB : g->MB * g->OH, .n = g->ML, .nkb = nkb,
        .rows = tile_rows(m, most), .width = (int)g->ML, .u = &u,
        .setup = bc_setup, .k_open = bc_k_open, .a = bc_a, .b = bc_b, .out = bc_out, .epi = bc_epi,
    };
    return cg_tile_lower(c, &t);
}
