/* cost.c - the kernel work estimate of cost.h. */
#include "codegen/cost.h"

#include <stdint.h>
#include <stdlib.h>

enum { COST_CAP = INT32_MAX, EXPR_CAP = 4096, MAX_VARS_ON_STACK = 256 };

typedef struct {
    const kir_kernel *k;
    int lanes;
    int64_t *var_lo;           /* a loop variable's value for spans inside it */
    bool *var_known;
    const int64_t *sym_est;    /* symbol values (nsyms), or NULL: all 1 */
    int nsyms;
} cctx;

static int64_t sat_add(int64_t a, int64_t b)
{
    return a + b > COST_CAP ? COST_CAP : a + b;
}

static int64_t sat_mul(int64_t a, int64_t b)
{
    if (a <= 0 || b <= 0)
        return 0;
    return a > COST_CAP / b ? COST_CAP : a * b;
}

/* An i64 index expression's value with outer variables at their lower
 * bounds and symbols at their estimates (1 by default); false when it
 * reads something else. */
static bool eval(const cctx *c, const kir_expr *e, int64_t *v, int depth)
{
    int64_t a = 0, b = 0, t = 0;
    if (!e || depth > 64)
        return false;
    switch (e->op) {
    case KIR_CONST:
        *v = e->c.i;
        return true;
    case KIR_SYM:
        *v = c->sym_est && e->var > 0 && e->var < c->nsyms && c->sym_est[e->var] > 1 ? c->sym_est[e->var] : 1;
        return true;
    case KIR_VAR:
        if (e->var < 0 || e->var >= c->k->nvars || !c->var_known[e->var])
            return false;
        *v = c->var_lo[e->var];
        return true;
    case KIR_LETV:
        return e->var >= 0 && e->var < c->k->nlets && eval(c, c->k->let_value[e->var], v, depth + 1);
    case KIR_ADD: case KIR_SUB: case KIR_MUL: case KIR_DIV: case KIR_REM: case KIR_MIN: case KIR_MAX:
        if (!eval(c, e->a[0], &a, depth + 1) || !eval(c, e->a[1], &b, depth + 1))
            return false;
        if (a > INT32_MAX || a < -INT32_MAX || b > INT32_MAX || b < -INT32_MAX)
            return false;
        switch (e->op) {
        case KIR_ADD: t = a + b; break;
        case KIR_SUB: t = a - b; break;
        case KIR_MUL: t = a * b; break;
        case KIR_DIV: t = b ? a / b : 0; break;
        case KIR_REM: t = b ? a % b : 0; break;
        case KIR_MIN: t = a < b ? a : b; break;
        default: t = a > b ? a : b; break;
        }
        *v = t;
        return true;
    case KIR_SELECT: {
        int64_t cnd;
        const kir_expr *p = e->a[0];
        if (!p || p->op < KIR_LT || p->op > KIR_NE || !eval(c, p->a[0], &a, depth + 1) ||
            !eval(c, p->a[1], &b, depth + 1))
            return false;
        cnd = p->op == KIR_LT ? a < b : p->op == KIR_LE ? a <= b : p->op == KIR_EQ ? a == b : a != b;
        return eval(c, e->a[cnd ? 1 : 2], v, depth + 1);
    }
    default:
        return false;
    }
}

/* Value ops of an expression: loads and non-index arithmetic. */
static int64_t expr_ops(const kir_expr *e, int *budget)
{
    if (!e || --*budget < 0)
        return 0;
    int64_t n = 0;
    if (e->op == KIR_LOAD)
        return 1;
    if (e->op != KIR_CONST && e->op != KIR_VAR && e->op != KIR_SYM && e->op != KIR_ACC && e->op != KIR_LETV &&
        e->dtype != IR_I64)
        n = e->op >= KIR_EXP && e->op <= KIR_GELU ? 20 : e->op >= KIR_SIN && e->op <= KIR_ATANH ? 20
          : e->op == KIR_DIV || e->op == KIR_POW || e->op == KIR_SQRT ? 4 : 1;
    for (int i = 0; i < 3; i++)
        n += expr_ops(e->a[i], budget);
    return n;
}

static int64_t ops_of(const kir_expr *e)
{
    int budget = EXPR_CAP;
    return expr_ops(e, &budget);
}

static int64_t block_ops(cctx *c, const kir_block *b, int64_t regs);

/* regs: the vector registers one value spans inside the innermost
 * enclosing VECTOR loop (1 outside one). */
static int64_t stmt_ops(cctx *c, const kir_stmt *s, int64_t regs)
{
    switch (s->kind) {
    case KIR_S_FOR: {
        int64_t lo = 0, hi = 0, span = 1;
        bool klo = eval(c, s->lo, &lo, 0), khi = eval(c, s->hi, &hi, 0);
        if (klo && khi)
            span = hi > lo ? hi - lo : 0;
        if (s->var >= 0 && s->var < c->k->nvars) {
            c->var_lo[s->var] = klo ? lo : 0;
            c->var_known[s->var] = klo;
        }
        int64_t inner = regs;
        if (s->loop == KIR_VECTOR && s->width > 1) {
            int w = s->width;
            span = (span + w - 1) / w;
            inner = c->lanes > 0 ? (w + c->lanes - 1) / c->lanes : 1;
        }
        int64_t body = block_ops(c, &s->body, inner);
        if (s->var >= 0 && s->var < c->k->nvars)
            c->var_known[s->var] = false;
        return sat_mul(span, body > 0 ? body : 1);
    }
    case KIR_S_STORE:
        return sat_mul(regs, 1 + ops_of(s->value));
    case KIR_S_ACC_SET:
    case KIR_S_LET:
        return sat_mul(regs, ops_of(s->value));
    case KIR_S_IF: {
        int64_t a = block_ops(c, &s->body, regs), b = block_ops(c, &s->orelse, regs);
        return sat_add(1, a > b ? a : b);
    }
    case KIR_S_INTRINSIC:
        return 4;
    default:
        return 0;
    }
}

static int64_t block_ops(cctx *c, const kir_block *b, int64_t regs)
{
    int64_t n = 0;
    for (int i = 0; i < b->n; i++)
        n = sat_add(n, stmt_ops(c, b->s[i], regs));
    return n;
}

int64_t cg_cost_trip_ops(const kir_kernel *k, int lanes)
{
    return cg_cost_trip_ops_est(k, lanes, NULL, 0);
}

int64_t cg_cost_trip_ops_est(const kir_kernel *k, int lanes, const int64_t *sym_est, int nsyms)
{
    int64_t lo_stack[MAX_VARS_ON_STACK];
    bool known_stack[MAX_VARS_ON_STACK] = {0};
    int nv = k->nvars > 0 ? k->nvars : 1;
    cctx c = {.k = k, .lanes = lanes, .var_lo = lo_stack, .var_known = known_stack, .sym_est = sym_est,
              .nsyms = nsyms};
    if (nv > MAX_VARS_ON_STACK) {
        c.var_lo = calloc((size_t)nv, sizeof *c.var_lo);
        c.var_known = calloc((size_t)nv, sizeof *c.var_known);
        if (!c.var_lo || !c.var_known) {
            free(c.var_lo);
            free(c.var_known);
            return COST_CAP;   /* unknown: big enough to keep the threads */
        }
    }
    int64_t n;
    const kir_block *b = &k->body;
    if (b->n == 1 && b->s[0]->kind == KIR_S_FOR && b->s[0]->loop == KIR_PARALLEL) {
        const kir_stmt *s = b->s[0];
        int64_t lo = 0, hi = 0;
        bool known = s->var >= 0 && s->var < k->nvars;
        if (known) {
            c.var_lo[s->var] = eval(&c, s->lo, &lo, 0) ? lo : 0;
            c.var_known[s->var] = true;
        }
        n = block_ops(&c, &s->body, 1);
        /* ... or at the last trip, when more (lw_chunk_parallel's chunks:
         * the first of T/P rows is empty when the estimated T < P, the
         * last holds ceil(T/P)) */
        if (known && eval(&c, s->hi, &hi, 0) && hi - 1 > lo) {
            c.var_lo[s->var] = hi - 1;
            int64_t m = block_ops(&c, &s->body, 1);
            n = m > n ? m : n;
        }
    } else {
        n = block_ops(&c, b, 1);
    }
    if (c.var_lo != lo_stack) {
        free(c.var_lo);
        free(c.var_known);
    }
    return n > 0 ? n : 1;
}
