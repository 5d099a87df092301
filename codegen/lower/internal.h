/* internal.h - what the lowering files share.
 *
 * cg_lower_node (lower.c) builds the kernel's buffers, then hands the
 * node to the family that claims its op: elementwise formulas
 * (elementwise.c), contractions (matmul.c, on the register tile of
 * tile.c), reductions (reduce.c), normalizations and softmax (norm.c),
 * data movement (movement.c, gather_scatter.c), convolution and pooling
 * (conv.c, conv_blocked.c), Resize and GridSample (resample.c), Einsum
 * and TopK (einsum_topk.c), Unique (unique.c), RoiAlign and
 * NonMaxSuppression (detect.c), Attention (attention.c) and the
 * recurrent ops (rnn.c). Which family lowers an op is its registry row's
 * family column (IR_FAM_*, ir/ops.def). Each family has a `can`
 * predicate (the dtypes and attributes it handles) and a builder that
 * fills c->k's body.
 */
#ifndef ICC_CG_LOWER_INTERNAL_H
#define ICC_CG_LOWER_INTERNAL_H

#include "codegen/lower.h"
#include "ir/ops.h"

#include <math.h>

#define LOWER_MAX_IO 64

typedef struct {
    const ir_graph *g;
    const ir_node *n;
    kir_kernel *k;
    int buf[LOWER_MAX_IO];     /* kernel buffer of each input; -1 if omitted */
    int outs[LOWER_MAX_IO];    /* kernel buffer of each output */
    int out;                   /* outs[0] */
    int var[IR_MAX_RANK];      /* loop variable per output dim */
    int orank;
    ir_dtype cdt;              /* compute dtype of floats (f16/bf16 -> f32) */
    const cg_schedule *s;      /* how (schedule.h): tile sizes, blocking */
    kir_expr *const *at;       /* fused groups: the index being computed (NULL: var[]) */
    bool to_bf16;              /* fused groups: the value being computed is read by a
                                  Cast to bf16 (its formula may be as coarse as that) */
    /* A fused group with an anchor (docs/fusion.md): the anchor is c->n,
     * its output buffer c->out is the root's, and its final values go
     * through lower_epi, which computes the root's value from them. */
    const ir_node *epi_root;   /* the group's root, or NULL */
    const ir_node *anchor;     /* the group's anchor, when epi_root is set */
    kir_expr *epi_val;         /* the anchor's value while lower_epi runs */
    bool epi_used;             /* lower_epi was called */
    /* A group whose root is a zero Pad of its anchor's result (fuse.c's
     * pad-out): c->out is the Pad's buffer, the anchor stores its values
     * shifted into the interior (lw_store_out) and cg_lower_node zeroes the
     * border. */
    bool pad_out;
    bool pad_used;             /* lw_store_out was called */
    int64_t out_lo[IR_MAX_RANK];   /* the Pad's begin pads: the stores' shift */
    kir_block *root;           /* where red_outer starts the loop nest (NULL: the kernel's
                                  body); a branch of a run-time choice (reduce.c) */
    kir_expr *gpu_row;         /* CUDA rows (red_outer_rows): the thread's index in its block,
                                  whose strided share of the row red_reduce and red_pass
                                  run; NULL otherwise */
} lctx;

/* f16/bf16 compute in f32; other dtypes in themselves. */
static inline ir_dtype lw_compute_dtype(ir_dtype t)
{
    return t == IR_F16 || t == IR_BF16 ? IR_F32 : t;
}

/* A dim as an i64 index expression (a constant or the run's symbol). */
static inline kir_expr *lw_dim_of(kir_kernel *k, ir_dim d) { return kir_dim(k, d); }

static inline kir_expr *lw_i64c(kir_kernel *k, int64_t v) { return kir_const_i(k, IR_I64, v); }
/* Whether x is an integer constant, its value in *v. */
static inline bool lw_const_i(const kir_expr *x, int64_t *v)
{
    if (!x || x->op != KIR_CONST || ir_dtype_is_float(x->dtype))
        return false;
    *v = x->c.i;
    return true;
}

/* i64 index arithmetic; the *c forms take a constant and skip identities. */
static inline kir_expr *lw_imin(kir_kernel *k, kir_expr *a, kir_expr *b) { return kir_op2(k, KIR_MIN, IR_I64, a, b); }
static inline kir_expr *lw_isub(kir_kernel *k, kir_expr *a, kir_expr *b) { return kir_op2(k, KIR_SUB, IR_I64, a, b); }
static inline kir_expr *lw_imax(kir_kernel *k, kir_expr *a, kir_expr *b) { return kir_op2(k, KIR_MAX, IR_I64, a, b); }
static inline kir_expr *lw_iaddc(kir_kernel *k, kir_expr *a, int64_t b) { return b ? kir_iadd(k, a, lw_i64c(k, b)) : a; }
static inline kir_expr *lw_imulc(kir_kernel *k, kir_expr *a, int64_t b) { return b != 1 ? kir_imul(k, a, lw_i64c(k, b)) : a; }
/* Items per tile for m items (pixels of a row) in tiles of at most
 * `most`: as even a split as there is (a last tile's extras are clamped
 * to the last item and recomputed); 1 for no items. */
static inline int lw_even_tile(int64_t m, int most)
{
    if (m < 1)
        return 1;
    int64_t tiles = (m + most - 1) / most;
    return (int)((m + tiles - 1) / tiles);
}
/* Spreading a prefetch over blocks (tile.c's row blocks, conv_blocked.c's
 * pixel trips): n consecutive blocks share a panel, the first streaming
 * it, and each block after it hints lw_spread_count(n, L) of the next
 * panel's L items (all L when n <= 1). */
static inline int64_t lw_spread_count(int64_t n, int64_t L) { return n <= 1 ? L : (L + n - 2) / (n - 1); }
static inline kir_expr *lw_idivc(kir_kernel *k, kir_expr *a, int64_t b)
{
    return b != 1 ? kir_op2(k, KIR_DIV, IR_I64, a, lw_i64c(k, b)) : a;
}
static inline kir_expr *lw_iremc(kir_kernel *k, kir_expr *a, int64_t b)
{
    return b != 1 ? kir_op2(k, KIR_REM, IR_I64, a, lw_i64c(k, b)) : lw_i64c(k, 0);
}
/* Item i of block rel's share (rel the block's place among the n, from
 * 0), clamped to the last item. */
static inline kir_expr *lw_spread_item(kir_kernel *k, kir_expr *rel, int64_t n, int64_t L, int64_t i)
{
    if (L == 1)
        return lw_i64c(k, 0);
    kir_expr *first = n <= 1 ? lw_i64c(k, 0)
                             : lw_imulc(k, lw_imax(k, lw_iaddc(k, rel, -1), lw_i64c(k, 0)), lw_spread_count(n, L));
    return lw_imin(k, lw_iaddc(k, first, i), lw_i64c(k, L - 1));
}

/* Parallel chunk p of nrc row chunks x ncc column chunks as (*rc, *cc).
 * cols_outer (B the larger operand of a contraction): the row chunks vary
 * fastest, so consecutive chunks, one thread's share, take the same
 * columns and a thread streams its part of B once; else the column
 * chunks vary fastest, sharing rows of A. */
static inline void lw_chunk_at(kir_kernel *k, kir_expr *p, int64_t nrc, int64_t ncc, bool cols_outer, kir_expr **rc,
                               kir_expr **cc)
{
    *rc = cols_outer ? lw_iremc(k, p, nrc) : lw_idivc(k, p, ncc);
    *cc = cols_outer ? lw_idivc(k, p, nrc) : lw_iremc(k, p, ncc);
}

/* A B [K, N] packed by the pack-b pass (ir/ops.def, MatMul's packed_b,
 * packed_k, packed_t; ir/ref/nn.h, nn_packed_index): panels of pw
 * columns one after another, each [K/pk, wp, pk] (wp = pw, the last N mod
 * pw), for pt > 0 its rows in groups of pt, each group's 16-column pieces
 * [pt, 16, pk] one after another. lw_packed_panel gives column j's panel:
 * its first column *j0 and its width *wp; lw_packed_at the offset in the
 * flat matrix of row k, column jj of the panel at j0 that is wp wide:
 * j0 K + (k / pk) pk wp + jj pk + k % pk (j0 K + k wp + jj for pk = 1,
 * an ADD with jj last: the emitter sees unit stride only through ADDs). */
static inline void lw_packed_panel(kir_kernel *k, int64_t N, int64_t pw, kir_expr *j, kir_expr **j0, kir_expr **wp)
{
    *j0 = lw_imulc(k, lw_idivc(k, j, pw), pw);
    *wp = lw_imin(k, lw_i64c(k, pw), kir_op2(k, KIR_SUB, IR_I64, lw_i64c(k, N), *j0));
}
static inline kir_expr *lw_packed_at(kir_kernel *k, int64_t K, int64_t pk, int64_t pt, kir_expr *kx, kir_expr *j0,
                                     kir_expr *wp, kir_expr *jj)
{
    if (pt > 0) {
        kir_expr *kr = lw_idivc(k, kx, pk), *base = lw_imulc(k, j0, K);
        kir_expr *grp = kir_imul(k, lw_idivc(k, kr, pt), lw_imulc(k, wp, pt * pk));
        kir_expr *in = kir_iadd(k, lw_imulc(k, lw_idivc(k, jj, 16), pt * 16 * pk), lw_imulc(k, lw_iremc(k, kr, pt), 16 * pk));
        kir_expr *lane = kir_iadd(k, lw_imulc(k, lw_iremc(k, jj, 16), pk), lw_iremc(k, kx, pk));
        return kir_iadd(k, kir_iadd(k, base, grp), kir_iadd(k, in, lane));
    }
    if (pk == 1)
        return kir_iadd(k, kir_iadd(k, lw_imulc(k, j0, K), kir_imul(k, kx, wp)), jj);
    kir_expr *kq = lw_imulc(k, lw_idivc(k, kx, pk), pk);
    return kir_iadd(k, kir_iadd(k, lw_imulc(k, j0, K), kir_imul(k, kq, wp)),
                    kir_iadd(k, lw_imulc(k, jj, pk), kir_op2(k, KIR_SUB, IR_I64, kx, kq)));
}

/* max(x, v) and min(x, v) of a float x and a constant v of dtype t, as
 * KIR_MAX and KIR_MIN compute them (NaN-propagating, -0 < +0): for v not
 * NaN, select(x <= v, v, x) is the same function unless v is -0 (a NaN x
 * fails the test and stays; x = -0 against v = +0 gives v), and
 * select(x >= v, v, x) for min unless v is +0. That is a compare and a
 * blend where the general max takes six instructions, which a Clip
 * epilogue after a short reduction (a depthwise conv, a 1x1 conv over 16
 * channels) spent as long on as on its FMAs. */
static inline kir_expr *lw_max_const(kir_kernel *k, ir_dtype t, kir_expr *x, double v)
{
    kir_expr *c = kir_const_f(k, t, v);
    if (v != v || (v == 0 && signbit(v)))
        return kir_op2(k, KIR_MAX, t, x, c);
    return kir_op3(k, KIR_SELECT, t, kir_op2(k, KIR_LE, IR_BOOL, x, c), c, x);
}
static inline kir_expr *lw_min_const(kir_kernel *k, ir_dtype t, kir_expr *x, double v)
{
    kir_expr *c = kir_const_f(k, t, v);
    if (v != v || (v == 0 && !signbit(v)))
        return kir_op2(k, KIR_MIN, t, x, c);
    return kir_op3(k, KIR_SELECT, t, kir_op2(k, KIR_LE, IR_BOOL, c, x), c, x);
}

/* HardSigmoid(x) = max(0, min(1, alpha x + beta)) of x of float dtype t
 * (HardSigmoid's and HardSwish's lowering, and HardSwish's inside a fused
 * kernel): on f32 each bound a compare and a blend (lw_max_const). */
static inline kir_expr *lw_hard_sigmoid(kir_kernel *k, ir_dtype t, kir_expr *x, double alpha, double beta)
{
    kir_expr *y = kir_op3(k, KIR_FMA, t, kir_const_f(k, t, alpha), x, kir_const_f(k, t, beta));
    if (t == IR_F32)
        return lw_max_const(k, t, lw_min_const(k, t, y, 1), 0);
    return kir_op2(k, KIR_MAX, t, kir_const_f(k, t, 0), kir_op2(k, KIR_MIN, t, kir_const_f(k, t, 1), y));
}

/* Sigmoid(x) = 1 / (1 + e^-x) for x of float dtype t (Sigmoid's
 * lowering, and SiLU's inside a fused kernel). A reciprocal estimate and a
 * Newton step in place of the division (vrcp14ps and two FMAs) measured no
 * faster: the epilogue is bound by its instructions, not the divider. On
 * f32 no step makes a subnormal, each a microcode assist on x86 (a Gelu
 * of the same form over a conv's outputs spent 3 ns an element): e^-x is
 * taken at x clamped to [-87.33, 87.33] (e^-87.33 is just over 2^-126;
 * from x = 17 the result is 1 either way), and below x = -87.33, where
 * the true result is under 2^-126 (1.006 times it at most), it is 0 (the
 * reference keeps the subnormal). */
static inline kir_expr *lw_sigmoid(kir_kernel *k, ir_dtype t, kir_expr *x)
{
    kir_expr *u = t == IR_F32 ? lw_max_const(k, t, lw_min_const(k, t, x, 87.33), -87.33) : x;
    kir_expr *d = kir_op2(k, KIR_ADD, t, kir_const_f(k, t, 1), kir_op1(k, KIR_EXP, t, kir_op1(k, KIR_NEG, t, u)));
    kir_expr *r = kir_op2(k, KIR_DIV, t, kir_const_f(k, t, 1), d);
    if (t == IR_F32)
        r = kir_op3(k, KIR_SELECT, t, kir_op2(k, KIR_LT, IR_BOOL, x, kir_const_f(k, t, -87.33)), kir_const_f(k, t, 0),
                    r);
    return r;
}

/* e, a value of dtype t, widened to t's compute dtype (NULL stays NULL). */
static inline kir_expr *lw_widen(kir_kernel *k, kir_expr *e, ir_dtype t)
{
    return e && lw_compute_dtype(t) != t ? kir_op1(k, KIR_CAST, lw_compute_dtype(t), e) : e;
}

/* The dtype input i is stored in: its buffer's (a narrow weight, lower.c
 * half_weight, is an f32 input read from its f16/bf16 buffer), else the
 * input's. */
static inline ir_dtype lw_in_dtype(const lctx *c, int i)
{
    return c->buf[i] >= 0 ? c->k->bufs[c->buf[i]].dtype : c->n->in[i]->type.dtype;
}

/* Input i at idx, widened to its compute dtype. The buffer's dtype, not
 * the input's, decides: a narrow weight (lower.c, half_weight) is an f32
 * input read from its f16/bf16 buffer. */
static inline kir_expr *lw_load_in(lctx *c, int i, kir_expr *const *idx)
{
    return lw_widen(c->k, kir_load(c->k, c->buf[i], idx), lw_in_dtype(c, i));
}

/* Input i's first element (a scalar or a one-element tensor of any
 * rank) converted to dt, e.g. an operand given at run time. */
static inline kir_expr *lw_scalar_in(lctx *c, int i, ir_dtype dt)
{
    kir_expr *z[IR_MAX_RANK];
    for (int d = 0; d < IR_MAX_RANK; d++)
        z[d] = kir_const_i(c->k, IR_I64, 0);
    kir_expr *v = kir_load(c->k, c->buf[i], z);
    return v && v->dtype != dt ? kir_op1(c->k, KIR_CAST, dt, v) : v;
}

/* v converted to output i's dtype: its buffer's (a group's root may be
 * narrower than its anchor: a bf16 Cast over a pair-packed MatMul). */
static inline kir_expr *lw_to_out_i(lctx *c, int i, kir_expr *v)
{
    ir_dtype t = c->outs[i] >= 0 ? c->k->bufs[c->outs[i]].dtype : c->n->out[i]->type.dtype;
    return v && v->dtype != t ? kir_op1(c->k, KIR_CAST, t, v) : v;
}

static inline kir_expr *lw_to_out(lctx *c, kir_expr *v) { return lw_to_out_i(c, 0, v); }

/* The value to store at output index idx (one index per dim of the
 * output) when the node's final value there is v, in c->cdt: v itself,
 * or, when the node anchors a fused group, the root's value computed from
 * v by the group's elementwise members (in the root's compute dtype; the
 * root's output has the anchor's dtype, so to_out casts it). Call it for
 * FINAL values only: partial results stored to the output and read back
 * must bypass it. */
kir_expr *lower_epi(lctx *c, kir_expr *v, kir_expr *const *idx);
/* Stores v at the output index oi (one per dim of the anchor's result)
 * into b: c->out at oi, or, with c->pad_out, at oi shifted into the
 * padded buffer's interior. NULL on out of memory. */
kir_stmt *lw_store_out(lctx *c, kir_block *b, kir_expr *const *oi, kir_expr *v);

/* Input i of c->n at idx, in its dtype: loaded, or, when a member of
 * the fused group produces it (a normalization's prologue), computed. */
kir_expr *lower_in(lctx *c, int i, kir_expr *const *idx);

/* Where a run-time check of a finished kernel goes (appended last): in
 * its one outermost loop when the kernel is that loop, since a statement
 * beside it would make the kernel serial (program.c, parallel_trips);
 * else its body. A check there runs once per outer trip, none when the
 * loop has none (an empty output). */
static inline kir_block *lw_check_block(kir_kernel *k)
{
    return k->body.n == 1 && k->body.s[0]->kind == KIR_S_FOR ? &k->body.s[0]->body : &k->body;
}

/* Appends `for var in [0, hi)` of the given kind to b. */
static inline kir_stmt *lw_loop(lctx *c, kir_block *b, int var, kir_expr *hi, kir_loop kind)
{
    return kir_for(c->k, b, var, lw_i64c(c->k, 0), hi, kind, 0);
}

/* Row-major indices idx[0..n) of flat position f over n constant
 * extents, f inside their product (so the first needs no remainder): the
 * GPU schedules' grid and row positions. */
static inline void lw_unflatten_c(kir_kernel *k, kir_expr *f, int n, const int64_t *ext, kir_expr **idx)
{
    for (int d = n - 1; d >= 0; d--) {
        idx[d] = d ? lw_iremc(k, f, ext[d]) : f;
        f = lw_idivc(k, f, ext[d]);
    }
}

/* Row-major multi-index of flat position `flat` over type t's dims. */
void lower_unflatten(lctx *c, const ir_type *t, kir_expr *flat, kir_expr **idx);

/* The AMX kernels' 2 x 2 block of tiles (bf16 MatMul, MatMulInteger,
 * ConvNCHWc): sum tiles 0..3, operand tiles 4, 5 (A's two row tiles) and
 * 6, 7 (B's two column tiles); a step adds tile 4 + t/2 times tile
 * 6 + t%2 into sum t by op, its operands from windows w[0..3] (buf, 2
 * indices each). lower_amx_zero zeroes the sums; lower_amx_store stores
 * sum t to buf[r + 16 (t/2), col + 16 (t%2)].
 * The steps of a loop are software-pipelined. Tiles are not renamed, so
 * a load waits for every earlier product that reads its tile: four
 * loads then four products left each step's loads waiting on the last
 * step's products. lower_amx_prime loads tiles 4 and 6 (w[0], w[2]) of
 * the first step before the loop; lower_amx_step_next then runs a step
 * as load 7, product 0, load 5, products 1 and 2, load 4 of the next
 * step (nx[0]), product 3, load 6 of the next step (nx[2]): each load
 * right after the last product reading its tile, overlapping those still
 * running (the last step loads its own windows again). MatMul 1024^3
 * bf16: 853 -> 952 GFLOP/s. All append to b and return 0, or -1 on out
 * of memory. */
int lower_amx_zero(lctx *c, kir_block *b);
int lower_amx_store(lctx *c, kir_block *b, int buf, kir_expr *r, kir_expr *col);
int lower_amx_prime(lctx *c, kir_block *b, const int *buf, kir_expr *const (*w)[2]);
int lower_amx_step_next(lctx *c, kir_block *b, const int *buf, kir_expr *const (*w)[2], kir_expr *const (*nx)[2],
                        kir_intrin op);
/* A pipelined k loop of ks steps over matrix windows, appended to b
 * after the sums are zeroed and the first step's tiles primed: step s
 * multiplies A's row tiles (buffer av, rows ar and ar + 16, column ac +
 * ad s) by B's column tiles (buffer bv, rows br + bs s and br + bs s +
 * bdr, columns bc and bc + bw: side by side in a row of pairs, bs = 16,
 * bdr = 0; one above the other in the tile order of packed_t, bw = 0) by
 * op; ac and br NULL for 0. The loop is returned (its variable the step),
 * so a caller may put more in its body; the sums stay in the tiles. NULL
 * on out of memory. The bf16 MatMul, MatMulInteger and Attention kernels'
 * blocks. */
kir_stmt *lower_amx_kloop(lctx *c, kir_block *b, int av, kir_expr *ar, kir_expr *ac, int64_t ad, int bv, kir_expr *br,
                          kir_expr *bc, int64_t bw, int64_t bs, int64_t bdr, int64_t ks, kir_intrin op);
/* The AMX kernels' pending-epilogue state (lower_amx, bc_lower_amx): an
 * i64 thread scratch st. lower_amx_st reads element i, lower_amx_st_set
 * appends st[i] = v to b (-1 on out of memory), lower_amx_flip is the
 * other of two slots of sums, 1 - slot. */
static inline kir_expr *lower_amx_st(kir_kernel *k, int st, int64_t i)
{
    return kir_load(k, st, (kir_expr *[]){lw_i64c(k, i)});
}
static inline int lower_amx_st_set(kir_kernel *k, kir_block *b, int st, int64_t i, kir_expr *v)
{
    return kir_store(k, b, st, (kir_expr *[]){lw_i64c(k, i)}, v) ? 0 : -1;
}
static inline kir_expr *lower_amx_flip(kir_kernel *k, kir_expr *slot)
{
    return kir_op2(k, KIR_SUB, IR_I64, lw_i64c(k, 1), slot);
}

/* The elementwise family (elementwise.c): lw_can_elementwise says whether
 * lw_formula handles n's op and dtypes; lw_formula gives c->n's value at
 * the current index (c->at, else the loop variables) in c->cdt. */
bool lw_can_elementwise(const ir_node *n);
kir_expr *lw_formula(lctx *c);
/* e^x - 1 in c->cdt without the cancellation near 0 (Elu, Celu, Selu and
 * the recurrent ops' Elu); x is read more than once (bind it first). */
kir_expr *lw_expm1(lctx *c, kir_expr *x);

/* Fused groups (lower.c): v, read by `reader`, is computed inside reader's
 * group; lw_fused_value computes such a value at idx (one index per dim of
 * v) in its compute dtype. lw_shapes_known: every operand's and result's
 * shape is known, as index maps need. */
bool lw_interior(const ir_node *reader, const ir_value *v);
kir_expr *lw_fused_value(lctx *c, const ir_value *v, kir_expr *const *idx);
bool lw_shapes_known(const ir_node *n);
/* For the blocked layouts' lowerings (lower.c): lw_blocked_ints reads the
 * ints attribute `name` into out[want] (def where absent); false if it
 * has another count or a value outside [minv, 2^20]. lw_f32_static: v is
 * f32 of this rank with every dim a constant in [1, 2^30]. */
bool lw_blocked_ints(const ir_node *n, const char *name, int want, int64_t def, int64_t minv, int64_t *out);
bool lw_f32_static(const ir_value *v, int rank);
/* v is static of rank `rank` and dtype dt, within lw_f32_static's bounds. */
bool lw_static_as(const ir_value *v, int rank, ir_dtype dt);
/* v is blocked data [N, C/cb, H, W, cb] of dtype dt: the batch and the
 * plane constants within lw_f32_static's bounds or symbols, the blocks
 * and lanes constants. */
bool lw_blocked_as(const ir_value *v, ir_dtype dt);

/* Family f's predicate on n, as cg_can_lower asks it for an op of that
 * family (false for IR_FAM_NONE). Asking it about an op of another
 * family is for the registry's tests: it must say no. */
bool lw_family_accepts(ir_family f, const ir_node *n);

/* The families. Each can_* sees a node whose operand and output shapes
 * are known (cg_can_lower checks that first); each lower_* returns 0, or
 * -1 on out of memory or a malformed node. */
bool cg_can_lower_matmul(const ir_node *n);
int lower_matmul(lctx *c);
bool cg_can_lower_reduce(const ir_node *n);
int lower_reduce(lctx *c);
bool cg_can_lower_norm(const ir_node *n);
int lower_norm(lctx *c);
bool cg_can_lower_movement(const ir_node *n);
bool cg_movement_symbolic(const ir_node *n);
int lower_movement(lctx *c);
bool cg_can_lower_conv(const ir_node *n);
bool cg_conv_symbolic(const ir_node *n);
int lower_conv(lctx *c);
bool cg_can_lower_misc(const ir_node *n);
bool cg_resize_symbolic(const ir_node *n);
int lower_misc(lctx *c);
bool cg_can_lower_attention(const ir_node *n);
int lower_attention(lctx *c);
bool cg_can_lower_conv_blocked(const ir_node *n);
int lower_conv_blocked(lctx *c);
bool cg_can_lower_pwdw(const ir_node *n);
int lower_pwdw(lctx *c);
/* The blocked family (conv_dw_blocked.c): ConvDwNCHWc there, ConvNCHWc in conv_blocked.c. */
bool cg_can_lower_blocked(const ir_node *n);
int lower_blocked(lctx *c);
bool cg_can_lower_rnn(const ir_node *n);
int lower_rnn(lctx *c);

/* coalesce.c: the elementwise nest's loops merged into its innermost
 * VECTOR loop where every access allows (lw_coalesce), then the outer
 * loops made one PARALLEL loop of at least `least` iterations where the
 * sizes allow, or a lone vector loop split in parallel chunks
 * (lw_parallelize). 0, or -1 on out of memory. */
int lw_coalesce(kir_kernel *k);   /* or the number of loops merged */
int lw_parallelize(kir_kernel *k, int64_t least);
/* A kernel that is one PARALLEL loop whose trip count is an expression of
 * symbols (a product: the runtime splits only a constant or one symbol)
 * becomes `chunks` PARALLEL trips, trip p the serial loop over [p*T/chunks,
 * (p+1)*T/chunks): a symbolic image's rows shared by the threads at a
 * batch of 1. 0 (also when not that form), or -1 on out of memory. */
int lw_chunk_parallel(kir_kernel *k, int64_t chunks);
/* Removes the buffers no statement or let of k reads or writes (the
 * originals of coalesce's views), renumbering the rest in order. */
int lw_drop_unused_bufs(kir_kernel *k);

#endif
