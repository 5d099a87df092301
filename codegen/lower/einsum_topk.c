/* einsum_topk.c - the ops no other family claims: TopK and Einsum here,
 * Resize and GridSample in resample.c. TopK ranks every element of a
 * row by counting the elements that precede it in the reference's stable
 * order (O(n^2) per row, but no scratch memory) and stores the ones ranked
 * below k at their rank. Einsum parses its equation at lowering time into
 * labels, loops over the output labels and then the summed ones with an
 * accumulator (f64 for floats, wrapping i64 for integers, as the
 * reference). Unique (unique.c) fills its declared static shapes; RoiAlign
 * and NonMaxSuppression are in detect.c.
 */
#include "codegen/lower/sample.h"
#include "ir/ops.h"

#include <stdlib.h>
#include <string.h>

kir_expr *misc_f64_to_out(lctx *c, int i, kir_expr *v, bool round)
{
    kir_kernel *k = c->k;
    ir_dtype t = c->n->out[i]->type.dtype;
    if (!v || v->dtype == t)
        return v;
    if (ir_dtype_is_float(t))
        return kir_op1(k, KIR_CAST, t, v);
    if (round)
        return kir_op1(k, KIR_CAST, t, kir_op1(k, KIR_ROUND, IR_F64, v));
    if (t == IR_U64 || t == IR_I64)
        return kir_op1(k, KIR_CAST, t, v);
    return kir_op1(k, KIR_CAST, t, kir_op1(k, KIR_CAST, IR_I64, v));
}

/* ---- TopK ------------------------------------------------------------------ */

static int topk_axis(const ir_node *n)
{
    int r = n->in[0]->type.rank;
    int64_t a = ir_attr_int(n, "axis", -1);
    a = a < 0 ? a + r : a;
    return a < 0 || a >= r ? -1 : (int)a;
}

static bool can_topk(const ir_node *n)
{
    const ir_type *x = &n->in[0]->type;
    return n->nout == 2 && x->rank >= 1 && x->dtype != IR_BOOL && topk_axis(n) >= 0 &&
           n->out[0]->type.rank == x->rank && n->out[1]->type.rank == x->rank &&
           n->out[1]->type.dtype == IR_I64;
}

/* a precedes b in the reference's order: NaN above every number, so first
 * when largest and last when smallest. */
static kir_expr *topk_before(lctx *c, kir_expr *a, kir_expr *b, bool largest)
{
    kir_kernel *k = c->k;
    if (!a || !b)
        return NULL;
    if (!ir_dtype_is_float(a->dtype))
        return largest ? lw_lt(k, b, a) : lw_lt(k, a, b);
    kir_expr *na = kir_op2(k, KIR_NE, IR_BOOL, a, a), *nb = kir_op2(k, KIR_NE, IR_BOOL, b, b);
    kir_expr *nan_first = largest ? kir_op2(k, KIR_AND, IR_BOOL, na, kir_op1(k, KIR_NOT, IR_BOOL, nb))
                                  : kir_op2(k, KIR_AND, IR_BOOL, kir_op1(k, KIR_NOT, IR_BOOL, na), nb);
    return kir_op2(k, KIR_OR, IR_BOOL, nan_first, largest ? lw_lt(k, b, a) : lw_lt(k, a, b));
}

static int lower_topk(lctx *c)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    const ir_type *tx = &n->in[0]->type, *tv = &n->out[0]->type;
    int r = tx->rank, axis = topk_axis(n);
    bool largest = ir_attr_int(n, "largest", 1) != 0;
    kir_block *body = &k->body;
    kir_expr *ix[IR_MAX_RANK], *mx[IR_MAX_RANK], *ox[IR_MAX_RANK];
    bool first = true;
    for (int d = 0; d < r; d++) {
        if (d == axis)
            continue;
        int v = kir_new_var(k);
        kir_stmt *l = lw_loop(c, body, v, lw_dim_of(k, tx->dims[d]), first ? KIR_PARALLEL : KIR_SERIAL);
        if (!l)
            return -1;
        first = false;
        body = &l->body;
        ix[d] = mx[d] = ox[d] = kir_var(k, v);
    }
    /* Each element i finds its rank; distinct elements get distinct ranks
     * (ties go by index), so every kept rank is stored exactly once. */
    int iv = kir_new_var(k), mv = kir_new_var(k);
    kir_stmt *li = lw_loop(c, body, iv, lw_dim_of(k, tx->dims[axis]), first ? KIR_PARALLEL : KIR_SERIAL);
    if (!li)
        return -1;
    body = &li->body;
    kir_expr *i = kir_var(k, iv);
    ix[axis] = i;
    kir_expr *xi = lw_let(c, body, lw_load_in(c, 0, ix));
    int rank = kir_new_acc(k, IR_I64);
    if (!xi || rank < 0 || !kir_acc_set(k, body, rank, lw_i64c(k, 0)))
        return -1;
    kir_stmt *lm = lw_loop(c, body, mv, lw_dim_of(k, tx->dims[axis]), KIR_SERIAL);
    if (!lm)
        return -1;
    kir_expr *m = kir_var(k, mv);
    mx[axis] = m;
    kir_expr *xm = lw_load_in(c, 0, mx);
    kir_expr *earlier_tie = kir_op2(k, KIR_AND, IR_BOOL, lw_lt(k, m, i),
                                    kir_op1(k, KIR_NOT, IR_BOOL, topk_before(c, xi, xm, largest)));
    kir_expr *ahead = kir_op2(k, KIR_OR, IR_BOOL, topk_before(c, xm, xi, largest), earlier_tie);
    kir_expr *inc = lw_sel(k, ahead, lw_i64c(k, 1), lw_i64c(k, 0));
    if (!kir_acc_set(k, &lm->body, rank, kir_iadd(k, kir_acc(k, rank), inc)))
        return -1;
    kir_stmt *s = kir_if(k, body, lw_lt(k, kir_acc(k, rank), lw_dim_of(k, tv->dims[axis])));
    if (!s)
        return -1;
    ox[axis] = kir_acc(k, rank);
    if (!kir_store(k, &s->body, c->outs[0], ox, kir_load(k, c->buf[0], ix)) ||
        !kir_store(k, &s->body, c->outs[1], ox, i))
        return -1;
    /* k given at run time must be the output's length (the finished
     * kernel fails the run otherwise: the length came from elsewhere) */
    if (n->in[1]->kind == IR_VAL_CONST || c->buf[1] < 0)
        return 0;
    kir_expr *kv = lw_scalar_in(c, 1, IR_I64);
    kir_stmt *chk = kir_if(k, lw_check_block(k), kir_op2(k, KIR_NE, IR_BOOL, kv, lw_dim_of(k, tv->dims[axis])));
    char msg[400];
    snprintf(msg, sizeof msg, "node '%.200s' (TopK): k is not the output's length along the axis", n->name);
    return chk && kir_fail(k, &chk->body, msg) ? 0 : -1;
}

/* ---- Einsum ------------------------------------------------------------------ */

/* Letters 'A'-'Z' are labels 0-25 and 'a'-'z' 26-51 (ASCII order); the
 * dims an ellipsis stands for are labels 52.., right-aligned. */
#define EIN_LETTERS 52
#define EIN_LABELS (EIN_LETTERS + IR_MAX_RANK)
#define EIN_ELL (-1)

typedef struct ein_plan {
    int nin;
    int nlab[LOWER_MAX_IO];
    signed char lab[LOWER_MAX_IO][IR_MAX_RANK];
    int nout;
    signed char olab[IR_MAX_RANK];
    int64_t size[EIN_LABELS];
    bool used[EIN_LABELS];
} ein_plan;

static int ein_letter(char ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return 26 + ch - 'a';
    return -1;
}

/* One term of the equation: labels or EIN_ELL; false if malformed. */
typedef struct ein_term {
    int n;
    signed char item[IR_MAX_RANK + 1];
    bool ell;
} ein_term;

/* Parses and resolves n's equation against its operand shapes (all
 * constant); false when anything is off (the shape function reports
 * errors, so such nodes never get here in practice). */
static bool ein_parse(const ir_node *n, ein_plan *p)
{
    const char *eq = ir_attr_string(n, "equation", NULL);
    if (!eq || n->nin < 1 || n->nin > LOWER_MAX_IO)
        return false;
    memset(p, 0, sizeof *p);
    ein_term terms[LOWER_MAX_IO], out = {0};
    memset(terms, 0, sizeof terms);
    int nt = 1;
    bool has_out = false;
    ein_term *t = &terms[0];
    for (const char *s = eq; *s; s++) {
        if (*s == ' ')
            continue;
        if (*s == ',') {
            if (has_out || nt >= n->nin)
                return false;
            t = &terms[nt++];
        } else if (*s == '-') {
            if (s[1] != '>' || has_out)
                return false;
            has_out = true;
            t = &out;
            s++;
        } else if (*s == '.') {
            if (s[1] != '.' || s[2] != '.' || t->ell || t->n > IR_MAX_RANK)
                return false;
            t->ell = true;
            t->item[t->n++] = EIN_ELL;
            s += 2;
        } else if (ein_letter(*s) >= 0) {
            if (t->n > IR_MAX_RANK)
                return false;
            t->item[t->n++] = (signed char)ein_letter(*s);
        } else {
            return false;
        }
    }
    if (nt != n->nin)
        return false;
    p->nin = nt;
    int ell = 0, count[EIN_LETTERS] = {0};
    for (int i = 0; i < nt; i++) {
        if (!n->in[i])
            return false;
        const ir_type *ti = &n->in[i]->type;
        int e = ti->rank - (terms[i].n - (terms[i].ell ? 1 : 0));
        if (ti->dtype != n->in[0]->type.dtype || (terms[i].ell ? e < 0 : e != 0))
            return false;
        ell = e > ell ? e : ell;
    }
    for (int l = 0; l < EIN_LABELS; l++)
        p->size[l] = 1;
    for (int i = 0; i < nt; i++) {
        const ir_type *ti = &n->in[i]->type;
        int e = ti->rank - (terms[i].n - (terms[i].ell ? 1 : 0)), d = 0;
        for (int j = 0; j < terms[i].n; j++) {
            if (terms[i].item[j] == EIN_ELL) {
                for (int q = 0; q < e; q++)
                    p->lab[i][d++] = (signed char)(EIN_LETTERS + ell - e + q);
            } else {
                count[(int)terms[i].item[j]]++;
                p->lab[i][d++] = terms[i].item[j];
            }
        }
        p->nlab[i] = d;
        for (d = 0; d < ti->rank; d++) {
            int l = p->lab[i][d];
            if (!ir_dim_is_const(ti->dims[d]))
                return false;
            int64_t v = ti->dims[d].v;
            if (!p->used[l] || p->size[l] == v || (l >= EIN_LETTERS && p->size[l] == 1))
                p->size[l] = v;
            else if (!(l >= EIN_LETTERS && v == 1))
                return false;
            p->used[l] = true;
        }
    }
    if (has_out) {
        bool seen[EIN_LETTERS] = {false}, ell_seen = false;
        for (int j = 0; j < out.n; j++) {
            int l = out.item[j];
            if (l == EIN_ELL) {
                ell_seen = true;
                for (int q = 0; q < ell; q++) {
                    if (p->nout >= IR_MAX_RANK)
                        return false;
                    p->olab[p->nout++] = (signed char)(EIN_LETTERS + q);
                }
                continue;
            }
            if (!count[l] || seen[l] || p->nout >= IR_MAX_RANK)
                return false;
            seen[l] = true;
            p->olab[p->nout++] = (signed char)l;
        }
        if (!ell_seen && ell > 0)
            return false;
    } else {
        for (int q = 0; q < ell; q++)
            p->olab[p->nout++] = (signed char)(EIN_LETTERS + q);
        for (int l = 0; l < EIN_LETTERS; l++)
            if (count[l] == 1) {
                if (p->nout >= IR_MAX_RANK)
                    return false;
                p->olab[p->nout++] = (signed char)l;
            }
    }
    const ir_type *to = &n->out[0]->type;
    if (to->rank != p->nout)
        return false;
    for (int j = 0; j < p->nout; j++)
        if (!ir_dim_is_const(to->dims[j]) || to->dims[j].v != p->size[(int)p->olab[j]])
            return false;
    return true;
}

static bool can_einsum(const ir_node *n)
{
    ir_dtype t = n->in[0]->type.dtype;
    ein_plan *p = malloc(sizeof *p);
    bool ok = p && t != IR_BOOL && (ir_dtype_is_float(t) || ir_dtype_is_int(t)) && ein_parse(n, p);
    free(p);
    return ok;
}

static int lower_einsum_plan(lctx *c, const ein_plan *p)
{
    kir_kernel *k = c->k;
    const ir_node *n = c->n;
    kir_expr *lv[EIN_LABELS] = {0};
    kir_block *body = &k->body;
    for (int j = 0; j < p->nout; j++) {
        int v = kir_new_var(k), l = p->olab[j];
        kir_stmt *s = lw_loop(c, body, v, lw_i64c(k, p->size[l]), j == 0 ? KIR_PARALLEL : KIR_SERIAL);
        if (!s)
            return -1;
        body = &s->body;
        lv[l] = kir_var(k, v);
    }
    ir_dtype at = ir_dtype_is_float(n->in[0]->type.dtype) ? IR_F64 : IR_I64;
    int acc = kir_new_acc(k, at);
    if (acc < 0 || !kir_acc_set(k, body, acc, at == IR_F64 ? lw_f64c(k, 0) : lw_i64c(k, 0)))
        return -1;
    kir_block *inner = body;
    for (int l = 0; l < EIN_LABELS; l++) {
        if (!p->used[l] || lv[l])
            continue;
        int v = kir_new_var(k);
        kir_stmt *s = lw_loop(c, inner, v, lw_i64c(k, p->size[l]), KIR_SERIAL);
        if (!s)
            return -1;
        inner = &s->body;
        lv[l] = kir_var(k, v);
    }
    kir_expr *prod = NULL;
    for (int i = 0; i < p->nin; i++) {
        const ir_type *ti = &n->in[i]->type;
        kir_expr *idx[IR_MAX_RANK];
        for (int d = 0; d < ti->rank; d++) {
            int l = p->lab[i][d];
            /* a broadcast ellipsis dim of 1 stays at 0 */
            idx[d] = ti->dims[d].v == 1 && p->size[l] != 1 ? lw_i64c(k, 0) : lv[l];
        }
        kir_expr *x = kir_load(k, c->buf[i], idx);
        if (x && x->dtype != at)
            x = kir_op1(k, KIR_CAST, at, x);
        prod = prod ? kir_op2(k, KIR_MUL, at, prod, x) : x;
    }
    if (!kir_acc_set(k, inner, acc, kir_op2(k, KIR_ADD, at, kir_acc(k, acc), prod)))
        return -1;
    kir_expr *oi[IR_MAX_RANK];
    for (int j = 0; j < p->nout; j++)
        oi[j] = lv[(int)p->olab[j]];
    kir_expr *v = kir_acc(k, acc);
    ir_dtype ot = n->out[0]->type.dtype;
    if (v && v->dtype != ot)
        v = kir_op1(k, KIR_CAST, ot, v);
    return kir_store(k, body, c->out, oi, v) ? 0 : -1;
}

static int lower_einsum(lctx *c)
{
    ein_plan *p = malloc(sizeof *p);
    int rc = p && ein_parse(c->n, p) ? lower_einsum_plan(c, p) : -1;
    free(p);
    return rc;
}

/* ---- dispatch ------------------------------------------------------------------ */

bool cg_can_lower_misc(const ir_node *n)
{
    switch (n->op) {
    case IR_OP_TOP_K: return can_topk(n);
    case IR_OP_EINSUM: return can_einsum(n);
    case IR_OP_RESIZE: return can_resize(n);
    case IR_OP_GRID_SAMPLE: return can_grid_sample(n);
    case IR_OP_UNIQUE: return cg_can_lower_unique(n);
    case IR_OP_ROI_ALIGN: return can_roi_align(n);
    case IR_OP_NON_MAX_SUPPRESSION: return can_nms(n);
    default: return false;
    }
}

int lower_misc(lctx *c)
{
    switch (c->n->op) {
    case IR_OP_TOP_K: return lower_topk(c);
    case IR_OP_EINSUM: return lower_einsum(c);
    case IR_OP_RESIZE: return lower_resize(c);
    case IR_OP_GRID_SAMPLE: return lower_grid_sample(c);
    case IR_OP_UNIQUE: return lower_unique(c);
    case IR_OP_ROI_ALIGN: return lower_roi_align(c);
    case IR_OP_NON_MAX_SUPPRESSION: return lower_nms(c);
    default: return -1;
    }
}
