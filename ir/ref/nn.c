/* nn.c - shape functions and reference kernels of the matrix ops (MatMul,
 * Gemm, MatMulInteger) and of the axis-wise normalizers (Softmax,
 * LogSoftmax, Hardmax), plus the f32 matrix-multiply core they and Conv
 * share. Every kernel has an obviously right path computing in double
 * (int64 for integers) through ir_tensor_getf/geti; f32 operands (and
 * f16/bf16 ones, widened exactly to f32) take a direct path over float
 * pointers that accumulates in double: f32 products are exact in double,
 * so only the summation order differs. */
#include "ir/ref/nn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int nn_same_dtype(ir_shape_ctx *c, int j)
{
    if (j < c->nin && c->in[j] && c->in[j]->dtype != c->in[0]->dtype)
        return ir_node_errorf(c->diag, c->node, "input %d has dtype %s but input 0 has %s", j,
                              ir_dtype_name(c->in[j]->dtype), ir_dtype_name(c->in[0]->dtype));
    return 0;
}

static float *widen(const ir_tensor *t)
{
    float *f = malloc(sizeof(float) * ((size_t)t->numel + 1));
    for (int64_t i = 0; f && i < t->numel; i++)
        f[i] = (float)ir_tensor_getf(t, i);
    return f;
}

int nn_f32_begin(ir_ref_ctx *c, int nin, bool out, nn_f32_view *v)
{
    memset(v, 0, sizeof *v);
    ir_dtype dt = c->in[0]->dtype;
    if (dt != IR_F32 && dt != IR_F16 && dt != IR_BF16)
        return 0;
    for (int i = 0; i < nin && i < c->nin; i++)
        if (c->in[i] && c->in[i]->dtype != dt)
            return 0;
    v->y = c->out[0];
    for (int i = 0; i < nin && i < c->nin; i++) {
        if (!c->in[i])
            continue;
        if (dt == IR_F32) {
            v->in[i] = c->in[i]->data;
        } else if (!(v->in[i] = v->owned[i] = widen(c->in[i]))) {
            nn_f32_end(v);
            return -1;
        }
    }
    if (!out || dt == IR_F32) {
        v->out = out ? v->y->data : NULL;
    } else if (!(v->out = v->owned[4] = calloc((size_t)v->y->numel + 1, sizeof(float)))) {
        nn_f32_end(v);
        return -1;
    }
    return 1;
}

void nn_f32_end(nn_f32_view *v)
{
    if (v->owned[4])
        for (int64_t i = 0; i < v->y->numel; i++)
            ir_tensor_setf(v->y, i, v->out[i]);
    for (int i = 0; i < 5; i++)
        free(v->owned[i]);
    memset(v, 0, sizeof *v);
}

/* ---- the f32 core --------------------------------------------------- */

/* Column panels keep the B rows touched by one row block in cache; row
 * blocks of 4 reuse each loaded B row four times. The inner loop is
 * written with GCC/Clang vector types because -O2 does not vectorize
 * loops of unknown trip count; on targets without SIMD they lower to
 * scalar code. */
enum { SG_JB = 512, SG_IB = 4 };

typedef double sg_v4d __attribute__((vector_size(32)));
typedef float sg_v4f __attribute__((vector_size(16)));

/* acc[0..3] += a * b[0..3], unaligned. */
static inline void sg_axpy4(double *acc, double a, const sg_v4d *bv)
{
    sg_v4d t;
    memcpy(&t, acc, sizeof t);
    t += a * *bv;
    memcpy(acc, &t, sizeof t);
}

static void sgemm_panel(const nn_sgemm_args *g, const float *b, int64_t b_rs, int64_t i0,
                        int64_t rows, int64_t j0, int64_t cols, double *acc)
{
    memset(acc, 0, sizeof(double) * (size_t)(SG_IB * SG_JB));
    double *r0 = acc, *r1 = acc + SG_JB, *r2 = acc + 2 * SG_JB, *r3 = acc + 3 * SG_JB;
    for (int64_t k = 0; k < g->k; k++) {
        const float *brow = b + k * b_rs + j0;
        const float *ak = g->a + i0 * g->a_rs + k * g->a_cs;
        if (rows == SG_IB) {
            double a0 = ak[0], a1 = ak[g->a_rs], a2 = ak[2 * g->a_rs], a3 = ak[3 * g->a_rs];
            int64_t j = 0;
            for (; j + 4 <= cols; j += 4) {
                sg_v4f bf;
                memcpy(&bf, brow + j, sizeof bf);
                sg_v4d bv = __builtin_convertvector(bf, sg_v4d);
                sg_axpy4(r0 + j, a0, &bv);
                sg_axpy4(r1 + j, a1, &bv);
                sg_axpy4(r2 + j, a2, &bv);
                sg_axpy4(r3 + j, a3, &bv);
            }
            for (; j < cols; j++) {
                double bv = brow[j];
                r0[j] += a0 * bv;
                r1[j] += a1 * bv;
                r2[j] += a2 * bv;
                r3[j] += a3 * bv;
            }
        } else {
            for (int64_t r = 0; r < rows; r++) {
                double av = ak[r * g->a_rs];
                double *acc_r = acc + r * SG_JB;
                for (int64_t j = 0; j < cols; j++)
                    acc_r[j] += av * (double)brow[j];
            }
        }
    }
    int64_t y_rs = g->y_rs ? g->y_rs : g->n;
    for (int64_t r = 0; r < rows; r++) {
        int64_t i = i0 + r;
        float *yrow = g->y + i * y_rs + j0;
        for (int64_t j = 0; j < cols; j++) {
            double v = g->alpha * acc[r * SG_JB + j];
            if (g->c)
                v += g->beta * (double)g->c[i * g->c_rs + (j0 + j) * g->c_cs];
            yrow[j] = (float)v;
        }
    }
}

/* sum over q < k of a[q*as] * b[q*bs], in double. */
static double sg_dot(const float *a, int64_t as, const float *b, int64_t bs, int64_t k)
{
    double s = 0;
    int64_t q = 0;
    if (as == 1 && bs == 1) {
        sg_v4d acc = {0, 0, 0, 0};
        for (; q + 4 <= k; q += 4) {
            sg_v4f af, bf;
            memcpy(&af, a + q, sizeof af);
            memcpy(&bf, b + q, sizeof bf);
            acc += __builtin_convertvector(af, sg_v4d) * __builtin_convertvector(bf, sg_v4d);
        }
        s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    }
    for (; q < k; q++)
        s += (double)a[q * as] * (double)b[q * bs];
    return s;
}

int nn_sgemm(const nn_sgemm_args *g)
{
    const float *b = g->b;
    int64_t b_rs = g->b_rs;
    float *packed = NULL;
    /* A matrix-vector product, or few rows against a transposed B (a
     * Linear layer at batch 1): dot products beat packing B. */
    if (g->n == 1 || (g->b_cs != 1 && g->b_rs == 1 && g->m < 8)) {
        int64_t y_rs = g->y_rs ? g->y_rs : g->n;
        for (int64_t i = 0; i < g->m; i++)
            for (int64_t j = 0; j < g->n; j++) {
                double v = g->alpha * sg_dot(g->a + i * g->a_rs, g->a_cs, b + j * g->b_cs,
                                             g->b_rs, g->k);
                if (g->c)
                    v += g->beta * (double)g->c[i * g->c_rs + j * g->c_cs];
                g->y[i * y_rs + j] = (float)v;
            }
        return 0;
    }
    if (g->b_cs != 1 && g->k > 0) {
        packed = malloc(sizeof(float) * (size_t)g->k * (size_t)g->n);
        if (!packed)
            return -1;
        for (int64_t k = 0; k < g->k; k++)
            for (int64_t j = 0; j < g->n; j++)
                packed[k * g->n + j] = b[k * g->b_rs + j * g->b_cs];
        b = packed;
        b_rs = g->n;
    }
    double *acc = malloc(sizeof(double) * SG_IB * SG_JB);
    if (!acc) {
        free(packed);
        return -1;
    }
    for (int64_t j0 = 0; j0 < g->n; j0 += SG_JB) {
        int64_t cols = g->n - j0 < SG_JB ? g->n - j0 : SG_JB;
        for (int64_t i0 = 0; i0 < g->m; i0 += SG_IB) {
            int64_t rows = g->m - i0 < SG_IB ? g->m - i0 : SG_IB;
            sgemm_panel(g, b, b_rs, i0, rows, j0, cols, acc);
        }
    }
    free(acc);
    free(packed);
    return 0;
}

/* ---- MatMul ------------------------------------------------------------ */

/* numpy matmul typing: a 1-D A is a row [1,K] whose M dim is dropped, a
 * 1-D B a column [K,1] whose N dim is dropped; the batch dims (all but
 * the last two) broadcast. */
static int matmul_type(ir_shape_ctx *c, const ir_type *a, const ir_type *b, ir_dtype dt,
                       ir_type *out)
{
    if (a->rank == 0 || b->rank == 0)
        return ir_node_errorf(c->diag, c->node, "operands must have rank >= 1, got ranks %d and %d",
                              a->rank, b->rank);
    if (a->rank < 0 || b->rank < 0) {
        ir_type_unknown(out, dt, IR_RANK_UNKNOWN);
        return 0;
    }
    ir_dim ka = a->dims[a->rank - 1];
    ir_dim kb = b->dims[b->rank == 1 ? 0 : b->rank - 2];
    if (ir_dim_is_const(ka) && ir_dim_is_const(kb) && ka.v != kb.v)
        return ir_node_errorf(c->diag, c->node,
                              "inner dimensions differ: A has K=%lld, B has K=%lld",
                              (long long)ka.v, (long long)kb.v);
    ir_type ba, bb;
    ir_type_unknown(&ba, dt, a->rank > 2 ? a->rank - 2 : 0);
    ir_type_unknown(&bb, dt, b->rank > 2 ? b->rank - 2 : 0);
    for (int i = 0; i < ba.rank; i++)
        ba.dims[i] = a->dims[i];
    for (int i = 0; i < bb.rank; i++)
        bb.dims[i] = b->dims[i];
    if (ir_broadcast_types(c, &ba, &bb, out) < 0)
        return -1;
    out->dtype = dt;
    if (a->rank > 1)
        out->dims[out->rank++] = a->dims[a->rank - 2];
    if (b->rank > 1)
        out->dims[out->rank++] = b->dims[b->rank - 1];
    return 0;
}

int shape_matmul(ir_shape_ctx *c)
{
    if (nn_same_dtype(c, 1) < 0)
        return -1;
    return matmul_type(c, c->in[0], c->in[1], c->in[0]->dtype, &c->out[0]);
}

/* The matrix geometry of a matmul on concrete tensors, and for batch
 * index b the element offsets of its A and B matrices. */
typedef struct mm_geom {
    int64_t m, n, k, nbatch;
    int brank;                       /* output batch rank */
    int64_t bdims[IR_MAX_RANK];
    ir_tensor abat, bbat;            /* dims-only views of the batch dims */
} mm_geom;

static void mm_geom_init(mm_geom *g, const ir_tensor *a, const ir_tensor *b, const ir_tensor *y)
{
    memset(g, 0, sizeof *g);
    g->k = a->dims[a->rank - 1];
    g->m = a->rank > 1 ? a->dims[a->rank - 2] : 1;
    g->n = b->rank > 1 ? b->dims[b->rank - 1] : 1;
    g->brank = y->rank - (a->rank > 1) - (b->rank > 1);
    memcpy(g->bdims, y->dims, sizeof(int64_t) * (size_t)g->brank);
    g->nbatch = nn_prod(g->bdims, g->brank);
    g->abat.rank = a->rank > 2 ? a->rank - 2 : 0;
    memcpy(g->abat.dims, a->dims, sizeof(int64_t) * (size_t)g->abat.rank);
    g->bbat.rank = b->rank > 2 ? b->rank - 2 : 0;
    memcpy(g->bbat.dims, b->dims, sizeof(int64_t) * (size_t)g->bbat.rank);
}

/* Batch offsets of A and B (in elements) for the batch multi-index idx. */
static void mm_batch_offsets(const mm_geom *g, const int64_t *idx, int64_t *ao, int64_t *bo)
{
    *ao = ir_bcast_offset(&g->abat, idx, g->brank) * g->m * g->k;
    *bo = ir_bcast_offset(&g->bbat, idx, g->brank) * g->k * g->n;
}

static int matmul_rowmajor(ir_ref_ctx *c)
{
    const ir_tensor *a = c->in[0], *b = c->in[1];
    ir_tensor *y = c->out[0];
    mm_geom g;
    mm_geom_init(&g, a, b, y);
    if (g.nbatch == 0 || g.m == 0 || g.n == 0)
        return 0;
    nn_f32_view v;
    int f32 = nn_f32_begin(c, 2, true, &v);
    if (f32 < 0)
        return ir_node_errorf(c->diag, c->node, "out of memory");
    bool isint = ir_dtype_is_int(a->dtype);
    int64_t idx[IR_MAX_RANK] = {0};
    for (int64_t bi = 0; bi < g.nbatch; bi++, ir_index_next(idx, g.bdims, g.brank)) {
        int64_t ao, bo, yo = bi * g.m * g.n;
        mm_batch_offsets(&g, idx, &ao, &bo);
        if (f32) {
            nn_sgemm_args s = {
                .m = g.m, .n = g.n, .k = g.k,
                .a = v.in[0] + ao, .a_rs = g.k, .a_cs = 1,
                .b = v.in[1] + bo, .b_rs = g.n, .b_cs = 1,
                .alpha = 1.0, .y = v.out + yo,
            };
            if (nn_sgemm(&s) < 0) {
                nn_f32_end(&v);
                return ir_node_errorf(c->diag, c->node, "out of memory");
            }
            continue;
        }
        for (int64_t i = 0; i < g.m; i++)
            for (int64_t j = 0; j < g.n; j++) {
                int64_t ai = ao + i * g.k, bj = bo + j;
                if (isint) {
                    /* Unsigned arithmetic: integer matmul wraps. */
                    uint64_t s = 0;
                    for (int64_t k = 0; k < g.k; k++)
                        s += (uint64_t)ir_tensor_geti(a, ai + k) *
                             (uint64_t)ir_tensor_geti(b, bj + k * g.n);
                    ir_tensor_seti(y, yo + i * g.n + j, (int64_t)s);
                } else {
                    double s = 0;
                    for (int64_t k = 0; k < g.k; k++)
                        s += ir_tensor_getf(a, ai + k) * ir_tensor_getf(b, bj + k * g.n);
                    ir_tensor_setf(y, yo + i * g.n + j, s);
                }
            }
    }
    if (f32)
        nn_f32_end(&v);
    return 0;
}

/* ---- MatMulInteger ------------------------------------------------------ */

/* a_zero_point is a scalar or one value per row of A (shape [M], or A's
 * batch dims with [M, 1]); b_zero_point a scalar or one per column of B. */
static int zero_point_ok(ir_shape_ctx *c, int j, ir_dim per, const char *what)
{
    const ir_type *z = j < c->nin ? c->in[j] : NULL;
    if (!z)
        return 0;
    if (z->dtype != c->in[j - 2]->dtype)
        return ir_node_errorf(c->diag, c->node, "%s has dtype %s, its operand %s", what,
                              ir_dtype_name(z->dtype), ir_dtype_name(c->in[j - 2]->dtype));
    if (z->rank < 0)
        return 0;
    int64_t n = 1;
    bool known = true;
    for (int i = 0; i < z->rank; i++) {
        if (!ir_dim_is_const(z->dims[i]))
            known = false;
        else
            n *= z->dims[i].v;
    }
    if (known && n != 1 && (!ir_dim_is_const(per) || n != per.v))
        return ir_node_errorf(c->diag, c->node, "%s must be a scalar or have one value per %s",
                              what, j == 2 ? "row of A" : "column of B");
    return 0;
}

int shape_matmul_integer(ir_shape_ctx *c)
{
    const ir_type *a = c->in[0], *b = c->in[1];
    if (a->dtype != IR_U8 && a->dtype != IR_I8)
        return ir_node_errorf(c->diag, c->node, "A must be u8 or i8, got %s", ir_dtype_name(a->dtype));
    if (b->dtype != IR_U8 && b->dtype != IR_I8)
        return ir_node_errorf(c->diag, c->node, "B must be u8 or i8, got %s", ir_dtype_name(b->dtype));
    if (matmul_type(c, a, b, IR_I32, &c->out[0]) < 0)
        return -1;
    ir_dim m = a->rank > 1 ? a->dims[a->rank - 2] : ir_dim_const(1);
    ir_dim n = b->rank > 1 ? b->dims[b->rank - 1] : ir_dim_const(1);
    if (a->rank < 0)
        m = ir_dim_unknown();
    if (b->rank < 0)
        n = ir_dim_unknown();
    if (zero_point_ok(c, 2, m, "a_zero_point") < 0 || zero_point_ok(c, 3, n, "b_zero_point") < 0)
        return -1;
    return 0;
}

static int matmul_integer_rowmajor(ir_ref_ctx *c)
{
    const ir_tensor *a = c->in[0], *b = c->in[1];
    const ir_tensor *za = c->nin > 2 ? c->in[2] : NULL, *zb = c->nin > 3 ? c->in[3] : NULL;
    ir_tensor *y = c->out[0];
    mm_geom g;
    mm_geom_init(&g, a, b, y);
    int64_t idx[IR_MAX_RANK] = {0};
    for (int64_t bi = 0; bi < g.nbatch; bi++, ir_index_next(idx, g.bdims, g.brank)) {
        int64_t ao, bo, yo = bi * g.m * g.n;
        mm_batch_offsets(&g, idx, &ao, &bo);
        for (int64_t i = 0; i < g.m; i++)
            for (int64_t j = 0; j < g.n; j++) {
                int64_t zav = za ? ir_tensor_geti(za, za->numel == 1 ? 0 : i) : 0;
                int64_t zbv = zb ? ir_tensor_geti(zb, zb->numel == 1 ? 0 : j) : 0;
                uint64_t s = 0;
                for (int64_t k = 0; k < g.k; k++)
                    s += (uint64_t)((ir_tensor_geti(a, ao + i * g.k + k) - zav) *
                                    (ir_tensor_geti(b, bo + k * g.n + j) - zbv));
                ir_tensor_seti(y, yo + i * g.n + j, (int64_t)s);
            }
    }
    return 0;
}

/* ---- Gemm --------------------------------------------------------------- */

int shape_gemm(ir_shape_ctx *c)
{
    const ir_type *a = c->in[0], *b = c->in[1], *cc = c->nin > 2 ? c->in[2] : NULL;
    if (nn_same_dtype(c, 1) < 0 || nn_same_dtype(c, 2) < 0)
        return -1;
    if (a->rank >= 0 && a->rank != 2)
        return ir_node_errorf(c->diag, c->node, "A must have rank 2, got rank %d", a->rank);
    if (b->rank >= 0 && b->rank != 2)
        return ir_node_errorf(c->diag, c->node, "B must have rank 2, got rank %d", b->rank);
    bool ta = ir_attr_int(c->node, "transA", 0) != 0, tb = ir_attr_int(c->node, "transB", 0) != 0;
    ir_dim m = ir_dim_unknown(), ka = ir_dim_unknown(), kb = ir_dim_unknown(), n = ir_dim_unknown();
    if (a->rank == 2) {
        m = a->dims[ta ? 1 : 0];
        ka = a->dims[ta ? 0 : 1];
    }
    if (b->rank == 2) {
        kb = b->dims[tb ? 1 : 0];
        n = b->dims[tb ? 0 : 1];
    }
    if (ir_dim_is_const(ka) && ir_dim_is_const(kb) && ka.v != kb.v)
        return ir_node_errorf(c->diag, c->node,
                              "inner dimensions differ: op(A) has K=%lld, op(B) has K=%lld",
                              (long long)ka.v, (long long)kb.v);
    if (cc && cc->rank > 2)
        return ir_node_errorf(c->diag, c->node, "C must have rank <= 2, got rank %d", cc->rank);
    /* C broadcasts unidirectionally to [M, N]. */
    for (int i = 0; cc && i < cc->rank; i++) {
        ir_dim cd = cc->dims[i], td = (cc->rank - i == 1) ? n : m;
        if (ir_dim_is_const(cd) && cd.v != 1 && ir_dim_is_const(td) && cd.v != td.v)
            return ir_node_errorf(c->diag, c->node,
                                  "C dim %d is %lld; it must be 1 or %lld to broadcast to [M, N]",
                                  i, (long long)cd.v, (long long)td.v);
    }
    ir_type_unknown(&c->out[0], a->dtype, 2);
    c->out[0].dims[0] = m;
    c->out[0].dims[1] = n;
    return 0;
}

static int gemm_rowmajor(ir_ref_ctx *c)
{
    const ir_tensor *a = c->in[0], *b = c->in[1], *cc = c->nin > 2 ? c->in[2] : NULL;
    ir_tensor *y = c->out[0];
    bool ta = ir_attr_int(c->node, "transA", 0) != 0, tb = ir_attr_int(c->node, "transB", 0) != 0;
    double alpha = ir_attr_float(c->node, "alpha", 1.0f);
    double beta = ir_attr_float(c->node, "beta", 1.0f);
    int64_t m = y->dims[0], n = y->dims[1], k = a->dims[ta ? 0 : 1];
    /* Strides of op(A), op(B) and the broadcast C. */
    int64_t a_rs = ta ? 1 : a->dims[1], a_cs = ta ? a->dims[1] : 1;
    int64_t b_rs = tb ? 1 : b->dims[1], b_cs = tb ? b->dims[1] : 1;
    int64_t c_rs = 0, c_cs = 0;
    if (beta == 0)
        cc = NULL;
    if (cc && cc->rank >= 1)
        c_cs = cc->dims[cc->rank - 1] == 1 ? 0 : 1;
    if (cc && cc->rank == 2)
        c_rs = cc->dims[0] == 1 ? 0 : cc->dims[1];
    if (m == 0 || n == 0)
        return 0;
    nn_f32_view v;
    int f32 = nn_f32_begin(c, 3, true, &v);
    if (f32 < 0)
        return ir_node_errorf(c->diag, c->node, "out of memory");
    if (f32) {
        nn_sgemm_args s = {
            .m = m, .n = n, .k = k,
            .a = v.in[0], .a_rs = a_rs, .a_cs = a_cs,
            .b = v.in[1], .b_rs = b_rs, .b_cs = b_cs,
            .c = cc ? v.in[2] : NULL, .c_rs = c_rs, .c_cs = c_cs,
            .alpha = alpha, .beta = beta, .y = v.out,
        };
        int rc = nn_sgemm(&s);
        nn_f32_end(&v);
        if (rc < 0)
            return ir_node_errorf(c->diag, c->node, "out of memory");
        return 0;
    }
    bool isint = ir_dtype_is_int(a->dtype);
    /* Integers stay exact when the scalars are trivial. */
    bool exact = isint && alpha == 1 && (!cc || beta == 1);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            int64_t yi = i * n + j, ci = i * c_rs + j * c_cs;
            if (isint) {
                uint64_t s = 0;
                for (int64_t q = 0; q < k; q++)
                    s += (uint64_t)ir_tensor_geti(a, i * a_rs + q * a_cs) *
                         (uint64_t)ir_tensor_geti(b, q * b_rs + j * b_cs);
                if (exact) {
                    if (cc)
                        s += (uint64_t)ir_tensor_geti(cc, ci);
                    ir_tensor_seti(y, yi, (int64_t)s);
                } else {
                    double v = alpha * (double)(int64_t)s;
                    if (cc)
                        v += beta * ir_tensor_getf(cc, ci);
                    ir_tensor_setf(y, yi, v);
                }
                continue;
            }
            double s = 0;
            for (int64_t q = 0; q < k; q++)
                s += ir_tensor_getf(a, i * a_rs + q * a_cs) * ir_tensor_getf(b, q * b_rs + j * b_cs);
            double v = alpha * s;
            if (cc)
                v += beta * ir_tensor_getf(cc, ci);
            ir_tensor_setf(y, yi, v);
        }
    return 0;
}

/* ---- Softmax, LogSoftmax, Hardmax -------------------------------------- */

/* Splits t around axis into outer x len x inner (row-major). */
static void axis_split(const ir_tensor *t, int axis, int64_t *outer, int64_t *len, int64_t *inner)
{
    *outer = nn_prod(t->dims, axis);
    *len = t->dims[axis];
    *inner = nn_prod(t->dims + axis + 1, t->rank - axis - 1);
}

/* The max is subtracted before exponentiating so large inputs do not
 * overflow; LogSoftmax is (x - max) - log(sum), never log(softmax). */
int ref_softmax(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    ir_tensor *y = c->out[0];
    int axis;
    if (ir_ref_norm_axis(c, ir_attr_int(c->node, "axis", -1), x->rank, &axis) < 0)
        return -1;
    if (x->rank == 0) {
        double v = ir_tensor_getf(x, 0);
        ir_tensor_setf(y, 0, c->node->op == IR_OP_LOG_SOFTMAX ? v - v : (v - v) + 1);
        return 0;
    }
    bool lg = c->node->op == IR_OP_LOG_SOFTMAX;
    int64_t outer, len, inner;
    axis_split(x, axis, &outer, &len, &inner);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * len * inner + i;
            double mx = -INFINITY, sum = 0;
            for (int64_t k = 0; k < len; k++) {
                double v = ir_tensor_getf(x, base + k * inner);
                if (v > mx || isnan(v))
                    mx = v;
            }
            for (int64_t k = 0; k < len; k++)
                sum += exp(ir_tensor_getf(x, base + k * inner) - mx);
            double lsum = log(sum);
            for (int64_t k = 0; k < len; k++) {
                double v = ir_tensor_getf(x, base + k * inner) - mx;
                ir_tensor_setf(y, base + k * inner, lg ? v - lsum : exp(v) / sum);
            }
        }
    return 0;
}

/* 1 at the first maximum along axis, 0 elsewhere. */
int ref_hardmax(ir_ref_ctx *c)
{
    const ir_tensor *x = c->in[0];
    ir_tensor *y = c->out[0];
    int axis;
    if (ir_ref_norm_axis(c, ir_attr_int(c->node, "axis", -1), x->rank, &axis) < 0)
        return -1;
    if (x->rank == 0) {
        ir_tensor_setf(y, 0, 1);
        return 0;
    }
    int64_t outer, len, inner;
    axis_split(x, axis, &outer, &len, &inner);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * len * inner + i, best = 0;
            double mx = -INFINITY;
            for (int64_t k = 0; k < len; k++) {
                double v = ir_tensor_getf(x, base + k * inner);
                if (k == 0 || v > mx) {
                    mx = v;
                    best = k;
                }
            }
            for (int64_t k = 0; k < len; k++)
                ir_tensor_setf(y, base + k * inner, k == best ? 1 : 0);
        }
    return 0;
}

/* Softmax-family output type; the axis is checked here so inference
 * reports a bad axis, not only the interpreter. */
int shape_softmax(ir_shape_ctx *c)
{
    const ir_type *x = c->in[0];
    int axis;
    if (x->rank >= 0 && ir_norm_axis(c, ir_attr_int(c->node, "axis", -1), x->rank, &axis) < 0)
        return -1;
    c->out[0] = *x;
    return 0;
}

/* ---- packed B (the pack-b pass) ----------------------------------------- */

/* packed_b = w > 0: each [K, N] matrix of B holds its columns in panels
 * of w, one after another, in the order of nn_packed_index (packed_k = p,
 * packed_t = t; the last panel N mod w wide): what the compiled kernels
 * read. The reference runs on a row-major copy. */
int nn_run_unpacked(ir_ref_ctx *c, int64_t w, int64_t p, int64_t t, int (*run)(ir_ref_ctx *))
{
    const ir_tensor *b = c->in[1];
    if (w < 0 || b->rank < 2 || ir_dtype_size(b->dtype) == 0 || c->nin > 4)
        return ir_node_errorf(c->diag, c->node, "packed_b %lld needs a positive width and a B of rank >= 2",
                              (long long)w);
    int64_t K = b->dims[b->rank - 2], N = b->dims[b->rank - 1], mats = K * N > 0 ? b->numel / (K * N) : 0;
    if (p < 1 || p > 64 || K % p)
        return ir_node_errorf(c->diag, c->node, "packed_k %lld needs 1..64 dividing K = %lld", (long long)p,
                              (long long)K);
    if (t < 0 || (t > 0 && ((K / p) % t || w % 16 || N % 16)))
        return ir_node_errorf(c->diag, c->node,
                              "packed_t %lld needs K / packed_k (%lld) a multiple of it and panels of whole 16 columns "
                              "(packed_b %lld, N = %lld)", (long long)t, (long long)(K / p), (long long)w, (long long)N);
    size_t es = ir_dtype_size(b->dtype);
    ir_tensor u = *b;
    if (!(u.data = malloc(b->nbytes + 1)))
        return ir_node_errorf(c->diag, c->node, "out of memory");
    const unsigned char *src = b->data;
    unsigned char *dst = u.data;
    for (int64_t m = 0; m < mats; m++)
        for (int64_t j0 = 0; j0 < N; j0 += w) {
            int64_t wp = N - j0 < w ? N - j0 : w;
            int64_t run_len = p > 1 || t > 0 ? 1 : wp; /* p = 1, t = 0: the row's wp at once */
            for (int64_t k = 0; k < K; k++)
                for (int64_t j = 0; j < wp; j += run_len)
                    memcpy(dst + ((m * K + k) * N + j0 + j) * es,
                           src + (m * K * N + nn_packed_index(K, j0, wp, p, t, k, j)) * es, (size_t)(run_len * es));
        }
    const ir_tensor *in[4] = {0};
    for (int i = 0; i < c->nin && i < 4; i++)
        in[i] = c->in[i];
    in[1] = &u;
    ir_ref_ctx cu = *c;
    cu.in = in;
    int rc = run(&cu);
    free(u.data);
    return rc;
}

static int with_unpacked_b(ir_ref_ctx *c, int (*run)(ir_ref_ctx *))
{
    int64_t w = ir_attr_int(c->node, "packed_b", 0), p = ir_attr_int(c->node, "packed_k", 1);
    return w == 0 ? run(c) : nn_run_unpacked(c, w, p, ir_attr_int(c->node, "packed_t", 0), run);
}

int ref_matmul(ir_ref_ctx *c) { return with_unpacked_b(c, matmul_rowmajor); }

int ref_gemm(ir_ref_ctx *c) { return with_unpacked_b(c, gemm_rowmajor); }

int ref_matmul_integer(ir_ref_ctx *c) { return with_unpacked_b(c, matmul_integer_rowmajor); }
