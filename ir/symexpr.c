/* symexpr.c - derived symbols: dims that are expressions of symbolic dims
 * (ir.h, ir_sym_def).
 *
 * Shape functions build them through ir_dim_add/mul/div_const, which fold
 * constants and a few identities first, so the same arithmetic on the same
 * symbols reaches the same definition and, hash-consed here, the same
 * symbol id: a Conv and a MaxPool branch that both halve H give dims that
 * ir_dim_eq accepts. Canonical order: a constant operand is b; two symbol
 * operands sit in increasing id order. The value of a derived symbol is
 * computed in id order from the free symbols (ir_graph_sym_values); a
 * negative intermediate (a window larger than its padded input) is an
 * error, as the interpreter's shape functions report it on concrete dims.
 */
#include "ir/ir.h"

#include <stdio.h>
#include <string.h>

const ir_sym_def *ir_graph_sym_def(const ir_graph *g, int32_t id)
{
    return g && id > 0 && id < g->nsymdefs ? g->symdefs[id] : NULL;
}

static bool dim_same(ir_dim a, ir_dim b)
{
    return a.sym == b.sym && (a.sym != 0 || a.v == b.v);
}

static bool def_same(const ir_sym_def *x, const ir_sym_def *y)
{
    return x->op == y->op && dim_same(x->a, y->a) && dim_same(x->b, y->b);
}

/* Appends operand d of an expression to buf; paren: an ADD-defined symbol
 * is parenthesized (it is an operand of * or /). */
static void put_operand(const ir_graph *g, char *buf, size_t n, ir_dim d, bool paren)
{
    size_t k = strlen(buf);
    if (k >= n)
        return;
    const ir_sym_def *df = ir_graph_sym_def(g, d.sym);
    if (d.sym == 0)
        snprintf(buf + k, n - k, "%lld", (long long)d.v);
    else if (paren && df && df->op == IR_SYM_ADD)
        snprintf(buf + k, n - k, "(%s)", ir_graph_sym_name(g, d.sym));
    else
        snprintf(buf + k, n - k, "%s", ir_graph_sym_name(g, d.sym));
}

/* The text of def: "H+2", "H-3", "H*W", "floor((H-3)/2)", "ceil(H/4)". */
static void def_name(const ir_graph *g, const ir_sym_def *def, char *buf, size_t n)
{
    buf[0] = 0;
    size_t k;
    switch (def->op) {
    case IR_SYM_ADD:
        put_operand(g, buf, n, def->a, false);
        k = strlen(buf);
        if (def->b.sym == 0 && def->b.v < 0)
            snprintf(buf + k, n - k, "-%llu", (unsigned long long)0 - (unsigned long long)def->b.v);
        else {
            snprintf(buf + k, n - k, "+");
            put_operand(g, buf, n, def->b, false);
        }
        break;
    case IR_SYM_MUL:
        put_operand(g, buf, n, def->a, true);
        k = strlen(buf);
        snprintf(buf + k, n - k, "*");
        put_operand(g, buf, n, def->b, true);
        break;
    case IR_SYM_FLOORDIV:
    case IR_SYM_CEILDIV:
        snprintf(buf, n, "%s(", def->op == IR_SYM_FLOORDIV ? "floor" : "ceil");
        put_operand(g, buf, n, def->a, true);
        k = strlen(buf);
        snprintf(buf + k, n - k, "/%lld)", (long long)def->b.v);
        break;
    }
}

/* An operand a definition may name: a constant or a symbol of g. */
static bool operand_ok(const ir_graph *g, ir_dim d)
{
    return d.sym == 0 || (d.sym > 0 && d.sym < g->nsyms);
}

static bool def_ok(const ir_graph *g, const ir_sym_def *def)
{
    if (def->op < IR_SYM_ADD || def->op > IR_SYM_CEILDIV || !operand_ok(g, def->a) || !operand_ok(g, def->b))
        return false;
    if (def->op == IR_SYM_FLOORDIV || def->op == IR_SYM_CEILDIV)
        return def->b.sym == 0 && def->b.v > 0;
    return true;
}

/* Records def for symbol id (new, or already defined the same way). */
static int32_t set_def(ir_graph *g, int32_t id, const ir_sym_def *def)
{
    if (!id)
        return 0;
    const ir_sym_def *old = ir_graph_sym_def(g, id);
    if (old)
        return def_same(old, def) ? id : 0;
    ir_sym_def *d = ir_arena_alloc(g->arena, sizeof *d);
    if (!d)
        return 0;
    *d = *def;
    g->symdefs[id] = d;
    return id;
}

int32_t ir_graph_sym_define(ir_graph *g, const char *name, size_t len, const ir_sym_def *def)
{
    if (!def_ok(g, def))
        return 0;
    int32_t before = g->nsyms;
    int32_t id = ir_graph_sym(g, name, len);
    if (!id || (id < before && !ir_graph_sym_def(g, id)))
        return 0;
    return set_def(g, id, def);
}

int32_t ir_graph_sym_derive(ir_graph *g, const ir_sym_def *def)
{
    if (!def_ok(g, def))
        return 0;
    for (int i = 1; i < g->nsymdefs; i++)
        if (g->symdefs[i] && def_same(g->symdefs[i], def))
            return i;
    char name[256];
    def_name(g, def, name, sizeof name);
    return ir_graph_sym_define(g, name, strlen(name), def);
}

int32_t ir_graph_sym_resolve(const ir_graph *g, int32_t id)
{
    for (int hops = 0; g && !g->parent && id > 0 && hops < 256; hops++) {
        const ir_sym_alias *a = g->aliases;
        while (a && a->from != id)
            a = a->next;
        if (!a)
            break;
        id = a->to;
    }
    return id;
}

int ir_graph_sym_alias(ir_graph *g, int32_t from, int32_t to, const ir_node *n)
{
    from = ir_graph_sym_resolve(g, from);
    to = ir_graph_sym_resolve(g, to);
    if (g->parent || from == to || from <= 0 || to <= 0 || from < to || !ir_graph_sym_def(g, from))
        return 0;
    ir_sym_alias *a = ir_arena_alloc(g->arena, sizeof *a);
    if (!a || !(a->node = ir_arena_strdup(g->arena, n && n->name ? n->name : "")))
        return -1;
    a->from = from, a->to = to, a->op = n ? n->op : 0;
    a->next = g->aliases;
    g->aliases = a;
    g->naliases++;
    return 0;
}

static ir_dim derived(ir_graph *g, ir_sym_op op, ir_dim a, ir_dim b)
{
    ir_sym_def def = {op, a, b};
    int32_t id = g ? ir_graph_sym_derive(g, &def) : 0;
    return id ? (ir_dim){0, ir_graph_sym_resolve(g, id)} : ir_dim_unknown();
}

static bool unknown(ir_dim d)
{
    return d.sym < 0;
}

ir_dim ir_dim_add(ir_graph *g, ir_dim a, ir_dim b)
{
    if (unknown(a) || unknown(b))
        return ir_dim_unknown();
    if (a.sym == 0 && b.sym != 0) {
        ir_dim t = a; a = b; b = t;
    }
    if (b.sym == 0)
        return ir_dim_add_const(g, a, b.v);
    if (a.sym == b.sym)                                /* x + x = x * 2 */
        return ir_dim_mul_const(g, a, 2);
    if (a.sym > b.sym) {
        ir_dim t = a; a = b; b = t;
    }
    return derived(g, IR_SYM_ADD, a, b);
}

ir_dim ir_dim_add_const(ir_graph *g, ir_dim a, int64_t k)
{
    int64_t r;
    if (unknown(a))
        return ir_dim_unknown();
    if (a.sym == 0)
        return ir_add_signed_ok(a.v, k, &r) && r >= 0 ? ir_dim_const(r) : ir_dim_unknown();
    if (k == 0)
        return a;
    const ir_sym_def *d = ir_graph_sym_def(g, a.sym);
    if (d && d->op == IR_SYM_ADD && d->b.sym == 0) {   /* (x + c) + k = x + (c + k) */
        if (!ir_add_signed_ok(d->b.v, k, &r))
            return ir_dim_unknown();
        return r == 0 ? d->a : derived(g, IR_SYM_ADD, d->a, ir_dim_const(r));
    }
    ir_dim c = {k, 0};   /* any sign: not a dim, an operand */
    return derived(g, IR_SYM_ADD, a, c);
}

ir_dim ir_dim_mul_const(ir_graph *g, ir_dim a, int64_t k)
{
    int64_t r;
    if (unknown(a) || k < 0)
        return ir_dim_unknown();
    if (a.sym == 0)
        return ir_mul_ok(a.v, k, &r) ? ir_dim_const(r) : ir_dim_unknown();
    if (k == 0)
        return ir_dim_const(0);
    if (k == 1)
        return a;
    const ir_sym_def *d = ir_graph_sym_def(g, a.sym);
    if (d && d->op == IR_SYM_MUL && d->b.sym == 0)     /* (x * c) * k = x * (c * k) */
        return ir_mul_ok(d->b.v, k, &r) ? derived(g, IR_SYM_MUL, d->a, ir_dim_const(r)) : ir_dim_unknown();
    return derived(g, IR_SYM_MUL, a, ir_dim_const(k));
}

ir_dim ir_dim_mul(ir_graph *g, ir_dim a, ir_dim b)
{
    if (unknown(a) || unknown(b))
        return ir_dim_unknown();
    if (a.sym == 0 && b.sym != 0) {
        ir_dim t = a; a = b; b = t;
    }
    if (b.sym == 0)
        return ir_dim_mul_const(g, a, b.v);
    if (a.sym > b.sym) {
        ir_dim t = a; a = b; b = t;
    }
    return derived(g, IR_SYM_MUL, a, b);
}

ir_dim ir_dim_div_const(ir_graph *g, ir_dim a, int64_t k, bool ceil)
{
    if (unknown(a) || k <= 0)
        return ir_dim_unknown();
    if (a.sym == 0)
        return ir_dim_const(a.v / k + (ceil && a.v % k != 0));
    if (k == 1)
        return a;
    const ir_sym_def *d = ir_graph_sym_def(g, a.sym);
    if (d && d->op == IR_SYM_MUL && d->b.sym == 0 && d->b.v % k == 0)   /* (x * c*k) / k = x * c */
        return ir_dim_mul_const(g, d->a, d->b.v / k);
    ir_sym_op op = ceil ? IR_SYM_CEILDIV : IR_SYM_FLOORDIV;
    int64_t kk;
    /* floor(floor(x/c)/k) = floor(x/(c*k)) for x >= 0, and so for ceil */
    if (d && d->op == op && ir_mul_ok(d->b.v, k, &kk))
        return derived(g, op, d->a, ir_dim_const(kk));
    return derived(g, op, a, ir_dim_const(k));
}

static bool operand_value(const int64_t *vals, ir_dim d, int64_t *v)
{
    *v = d.sym == 0 ? d.v : vals[d.sym];
    return d.sym == 0 || vals[d.sym] >= 0;
}

int ir_graph_sym_values(const ir_graph *g, int64_t *vals, int32_t *bad)
{
    *bad = 0;
    for (int32_t id = 1; id < g->nsyms; id++) {
        const ir_sym_def *d = ir_graph_sym_def(g, id);
        if (!d)
            continue;
        int64_t a, b, r = -1;
        if (!operand_value(vals, d->a, &a) || !operand_value(vals, d->b, &b)) {
            vals[id] = -1;     /* not bound: not needed by this run */
            continue;
        }
        bool ok = true;
        {
            switch (d->op) {
            case IR_SYM_ADD: ok = ir_add_signed_ok(a, b, &r); break;
            case IR_SYM_MUL: ok = ir_mul_ok(a, b, &r); break;
            case IR_SYM_FLOORDIV: r = a / b; break;
            case IR_SYM_CEILDIV: r = a / b + (a % b != 0); break;
            }
        }
        vals[id] = ok && r >= 0 ? r : -1;
        if (vals[id] < 0 && !*bad)
            *bad = id;
    }
    return *bad ? -1 : 0;
}

bool ir_dim_is_plus(const ir_graph *g, ir_dim a, ir_dim b, int64_t k)
{
    if (ir_dim_is_const(a) && ir_dim_is_const(b))
        return b.v - a.v == k;
    int64_t oa = 0, ob = 0;
    const ir_sym_def *d;
    if (a.sym > 0 && (d = ir_graph_sym_def(g, a.sym)) && d->op == IR_SYM_ADD && d->b.sym == 0)
        oa = d->b.v, a = d->a;
    if (b.sym > 0 && (d = ir_graph_sym_def(g, b.sym)) && d->op == IR_SYM_ADD && d->b.sym == 0)
        ob = d->b.v, b = d->a;
    return a.sym > 0 && a.sym == b.sym && ob - oa == k;
}
