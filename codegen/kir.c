/* kir.c - the kernel IR: builders, verifier and text dump. */
#include "codegen/kir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    int arity;
} ops[KIR_OP_COUNT] = {
#define KOP(id, nm, ar) [KIR_##id] = {nm, ar},
#include "codegen/kir_ops.def"
#undef KOP
};

const char *kir_op_name(kir_op op) { return (unsigned)op < KIR_OP_COUNT ? ops[op].name : "?"; }
int kir_op_arity(kir_op op) { return (unsigned)op < KIR_OP_COUNT ? ops[op].arity : -1; }

kir_kernel *kir_kernel_create(const char *name, const ir_graph *g)
{
    kir_kernel *k = calloc(1, sizeof *k);
    if (!k || !(k->arena = ir_arena_create()) || !(k->name = ir_arena_strdup(k->arena, name))) {
        kir_kernel_destroy(k);
        return NULL;
    }
    k->graph = g;
    return k;
}

void kir_kernel_destroy(kir_kernel *k)
{
    if (!k)
        return;
    ir_arena_destroy(k->arena);
    free(k);
}

/* Grows an arena array of elements of size sz to hold n+1. */
static void *grow(ir_arena *a, void *arr, int n, int *cap, size_t sz)
{
    if (n < *cap)
        return arr;
    int nc = *cap ? *cap * 2 : 8;
    void *na = ir_arena_alloc(a, sz * (size_t)nc);
    if (!na)
        return NULL;
    if (n)
        memcpy(na, arr, sz * (size_t)n);
    *cap = nc;
    return na;
}

int kir_add_buf(kir_kernel *k, const char *name, kir_buf_kind kind, const ir_type *type, int index,
                int64_t offset)
{
    kir_buf *nb = grow(k->arena, k->bufs, k->nbufs, &k->cap_bufs, sizeof(kir_buf));
    if (!nb || type->rank < 0)
        return -1;
    k->bufs = nb;
    kir_buf *b = &k->bufs[k->nbufs];
    memset(b, 0, sizeof *b);
    if (!(b->name = ir_arena_strdup(k->arena, name ? name : "")))
        return -1;
    b->kind = kind;
    b->dtype = type->dtype;
    b->rank = type->rank;
    b->index = index;
    b->offset = offset;
    for (int i = 0; i < type->rank; i++) {
        ir_dim d = type->dims[i];
        b->dims[i] = d.sym > 0 ? kir_sym(k, d.sym) : d.sym == 0 ? kir_const_i(k, IR_I64, d.v) : NULL;
        if (!b->dims[i])
            return -1;
    }
    return k->nbufs++;
}

static kir_expr *new_expr(kir_kernel *k, kir_op op, ir_dtype dt)
{
    kir_expr *e = ir_arena_alloc(k->arena, sizeof *e);
    if (e) {
        e->op = op;
        e->dtype = dt;
    }
    return e;
}

kir_expr *kir_const_f(kir_kernel *k, ir_dtype dt, double v)
{
    kir_expr *e = new_expr(k, KIR_CONST, dt);
    if (e)
        e->c.f = v;
    return e;
}

kir_expr *kir_const_i(kir_kernel *k, ir_dtype dt, int64_t v)
{
    kir_expr *e = new_expr(k, KIR_CONST, dt);
    if (e)
        e->c.i = v;
    return e;
}

static kir_expr *ref(kir_kernel *k, kir_op op, ir_dtype dt, int id)
{
    kir_expr *e = new_expr(k, op, dt);
    if (e)
        e->var = id;
    return e;
}

kir_expr *kir_var(kir_kernel *k, int var) { return ref(k, KIR_VAR, IR_I64, var); }
kir_expr *kir_sym(kir_kernel *k, int sym) { return ref(k, KIR_SYM, IR_I64, sym); }

kir_expr *kir_acc(kir_kernel *k, int acc)
{
    if (acc < 0 || acc >= k->naccs)
        return NULL;
    return ref(k, KIR_ACC, k->acc_dtype[acc], acc);
}

kir_expr *kir_load(kir_kernel *k, int buf, kir_expr *const *idx)
{
    if (buf < 0 || buf >= k->nbufs)
        return NULL;
    const kir_buf *b = &k->bufs[buf];
    kir_expr *e = new_expr(k, KIR_LOAD, b->dtype);
    if (!e || !(e->idx = ir_arena_alloc(k->arena, sizeof(kir_expr *) * (size_t)(b->rank + 1))))
        return NULL;
    e->buf = buf;
    e->nidx = b->rank;
    for (int i = 0; i < b->rank; i++)
        if (!(e->idx[i] = idx[i]))
            return NULL;
    return e;
}

kir_expr *kir_op1(kir_kernel *k, kir_op op, ir_dtype dt, kir_expr *a)
{
    return kir_op3(k, op, dt, a, NULL, NULL);
}

kir_expr *kir_op2(kir_kernel *k, kir_op op, ir_dtype dt, kir_expr *a, kir_expr *b)
{
    return kir_op3(k, op, dt, a, b, NULL);
}

kir_expr *kir_op3(kir_kernel *k, kir_op op, ir_dtype dt, kir_expr *a, kir_expr *b, kir_expr *c)
{
    int n = kir_op_arity(op);
    kir_expr *args[3] = {a, b, c};
    if (n < 1 || op == KIR_LOAD)
        return NULL;
    for (int i = 0; i < n; i++)
        if (!args[i])
            return NULL;
    kir_expr *e = new_expr(k, op, dt);
    if (e)
        for (int i = 0; i < n; i++)
            e->a[i] = args[i];
    return e;
}

kir_expr *kir_iadd(kir_kernel *k, kir_expr *a, kir_expr *b) { return kir_op2(k, KIR_ADD, IR_I64, a, b); }
kir_expr *kir_imul(kir_kernel *k, kir_expr *a, kir_expr *b) { return kir_op2(k, KIR_MUL, IR_I64, a, b); }

int kir_new_var(kir_kernel *k) { return k->nvars++; }

int kir_new_acc(kir_kernel *k, ir_dtype dt)
{
    ir_dtype *na = grow(k->arena, k->acc_dtype, k->naccs, &k->cap_accs, sizeof(ir_dtype));
    if (!na)
        return -1;
    k->acc_dtype = na;
    k->acc_dtype[k->naccs] = dt;
    return k->naccs++;
}

static kir_stmt *append(kir_kernel *k, kir_block *b, kir_stmt_kind kind)
{
    kir_stmt **ns = grow(k->arena, b->s, b->n, &b->cap, sizeof(kir_stmt *));
    kir_stmt *s = ir_arena_alloc(k->arena, sizeof *s);
    if (!ns || !s)
        return NULL;
    b->s = ns;
    s->kind = kind;
    b->s[b->n++] = s;
    return s;
}

kir_stmt *kir_for(kir_kernel *k, kir_block *b, int var, kir_expr *lo, kir_expr *hi, kir_loop loop,
                  int width)
{
    if (!lo || !hi)
        return NULL;
    kir_stmt *s = append(k, b, KIR_S_FOR);
    if (s) {
        s->var = var;
        s->lo = lo;
        s->hi = hi;
        s->loop = loop;
        s->width = width;
    }
    return s;
}

kir_stmt *kir_store(kir_kernel *k, kir_block *b, int buf, kir_expr *const *idx, kir_expr *value)
{
    if (buf < 0 || buf >= k->nbufs || !value)
        return NULL;
    int r = k->bufs[buf].rank;
    kir_expr **ix = ir_arena_alloc(k->arena, sizeof(kir_expr *) * (size_t)(r + 1));
    if (!ix)
        return NULL;
    for (int i = 0; i < r; i++)
        if (!(ix[i] = idx[i]))
            return NULL;
    kir_stmt *s = append(k, b, KIR_S_STORE);
    if (s) {
        s->buf = buf;
        s->nidx = r;
        s->idx = ix;
        s->value = value;
        k->bufs[buf].written = true;
    }
    return s;
}

kir_stmt *kir_acc_set(kir_kernel *k, kir_block *b, int acc, kir_expr *value)
{
    if (!value || acc < 0 || acc >= k->naccs)
        return NULL;
    kir_stmt *s = append(k, b, KIR_S_ACC_SET);
    if (s) {
        s->acc = acc;
        s->value = value;
    }
    return s;
}

kir_stmt *kir_if(kir_kernel *k, kir_block *b, kir_expr *cond)
{
    if (!cond)
        return NULL;
    kir_stmt *s = append(k, b, KIR_S_IF);
    if (s)
        s->cond = cond;
    return s;
}

/* ---- verifier -------------------------------------------------------------- */

typedef struct {
    const kir_kernel *k;
    icc_diag *d;
    char *bound;               /* loop variables in scope */
    char *used;                /* loop variables bound anywhere so far */
    char *accset;              /* accumulators set at least once before */
} vctx;

static bool is_bool(ir_dtype t) { return t == IR_BOOL; }

static int vexpr(vctx *c, const kir_expr *e)
{
    if (!e)
        return ir_errorf(c->d, "kernel '%s': missing expression", c->k->name);
    int n = kir_op_arity(e->op);
    if (n < 0)
        return ir_errorf(c->d, "kernel '%s': invalid op %d", c->k->name, (int)e->op);
    for (int i = 0; i < n; i++)
        if (vexpr(c, e->a[i]) < 0)
            return -1;
    const char *kn = c->k->name;
    switch (e->op) {
    case KIR_VAR:
        if (e->var < 0 || e->var >= c->k->nvars || !c->bound[e->var])
            return ir_errorf(c->d, "kernel '%s': loop variable v%d used outside its loop", kn, e->var);
        return 0;
    case KIR_SYM:
        if (e->var <= 0)
            return ir_errorf(c->d, "kernel '%s': invalid symbol %d", kn, e->var);
        return 0;
    case KIR_ACC:
        if (e->var < 0 || e->var >= c->k->naccs || !c->accset[e->var])
            return ir_errorf(c->d, "kernel '%s': accumulator a%d read before it is set", kn, e->var);
        return 0;
    case KIR_CONST:
        return 0;
    case KIR_LOAD:
        if (e->buf < 0 || e->buf >= c->k->nbufs || e->nidx != c->k->bufs[e->buf].rank)
            return ir_errorf(c->d, "kernel '%s': load of buffer %d with %d indices", kn, e->buf, e->nidx);
        for (int i = 0; i < e->nidx; i++) {
            if (vexpr(c, e->idx[i]) < 0)
                return -1;
            if (e->idx[i]->dtype != IR_I64)
                return ir_errorf(c->d, "kernel '%s': index of a load is %s, not i64", kn,
                                 ir_dtype_name(e->idx[i]->dtype));
        }
        return 0;
    case KIR_CAST:
        return 0;
    case KIR_BITCAST:
        if (ir_dtype_size(e->dtype) != ir_dtype_size(e->a[0]->dtype) || is_bool(e->dtype) ||
            is_bool(e->a[0]->dtype))
            return ir_errorf(c->d, "kernel '%s': bitcast of %s to %s (sizes differ)", kn,
                             ir_dtype_name(e->a[0]->dtype), ir_dtype_name(e->dtype));
        return 0;
    case KIR_ASHR:
        if (!ir_dtype_is_signed(e->dtype) || e->a[0]->dtype != e->dtype || e->a[1]->dtype != e->dtype)
            return ir_errorf(c->d, "kernel '%s': ashr on %s (signed integers only)", kn, ir_dtype_name(e->dtype));
        return 0;
    case KIR_MULADD: case KIR_COPYSIGN:
        if (!ir_dtype_is_float(e->dtype))
            return ir_errorf(c->d, "kernel '%s': %s on %s (floats only)", kn, kir_op_name(e->op),
                             ir_dtype_name(e->dtype));
        for (int i = 0; i < n; i++)
            if (e->a[i]->dtype != e->dtype)
                return ir_errorf(c->d, "kernel '%s': %s of %s operand into %s", kn, kir_op_name(e->op),
                                 ir_dtype_name(e->a[i]->dtype), ir_dtype_name(e->dtype));
        return 0;
    case KIR_LT: case KIR_LE: case KIR_EQ: case KIR_NE:
        if (e->dtype != IR_BOOL || e->a[0]->dtype != e->a[1]->dtype)
            return ir_errorf(c->d, "kernel '%s': %s compares %s with %s into %s", kn, kir_op_name(e->op),
                             ir_dtype_name(e->a[0]->dtype), ir_dtype_name(e->a[1]->dtype),
                             ir_dtype_name(e->dtype));
        return 0;
    case KIR_NOT: case KIR_AND: case KIR_OR: case KIR_XOR: case KIR_SHL: case KIR_SHR:
        /* logical on bool, bitwise on integers; shifts on integers only */
        for (int i = 0; i < n; i++)
            if (e->a[i]->dtype != e->dtype)
                return ir_errorf(c->d, "kernel '%s': %s of %s operand into %s", kn, kir_op_name(e->op),
                                 ir_dtype_name(e->a[i]->dtype), ir_dtype_name(e->dtype));
        if (ir_dtype_is_int(e->dtype) || (is_bool(e->dtype) && e->op != KIR_SHL && e->op != KIR_SHR))
            return 0;
        return ir_errorf(c->d, "kernel '%s': %s on %s", kn, kir_op_name(e->op), ir_dtype_name(e->dtype));
    case KIR_SELECT:
        if (!is_bool(e->a[0]->dtype) || e->a[1]->dtype != e->dtype || e->a[2]->dtype != e->dtype)
            return ir_errorf(c->d, "kernel '%s': select needs a bool condition and two %s values", kn,
                             ir_dtype_name(e->dtype));
        return 0;
    default:
        for (int i = 0; i < n; i++)
            if (e->a[i]->dtype != e->dtype)
                return ir_errorf(c->d, "kernel '%s': %s of %s operand into %s", kn, kir_op_name(e->op),
                                 ir_dtype_name(e->a[i]->dtype), ir_dtype_name(e->dtype));
        return 0;
    }
}

static int vblock(vctx *c, const kir_block *b, int depth)
{
    for (int i = 0; i < b->n; i++) {
        const kir_stmt *s = b->s[i];
        const char *kn = c->k->name;
        switch (s->kind) {
        case KIR_S_FOR:
            if (s->var < 0 || s->var >= c->k->nvars || c->used[s->var])
                return ir_errorf(c->d, "kernel '%s': loop variable v%d bound twice", kn, s->var);
            if (s->loop == KIR_PARALLEL && depth > 0)
                return ir_errorf(c->d, "kernel '%s': a parallel loop must be outermost", kn);
            if (vexpr(c, s->lo) < 0 || vexpr(c, s->hi) < 0)
                return -1;
            if (s->lo->dtype != IR_I64 || s->hi->dtype != IR_I64)
                return ir_errorf(c->d, "kernel '%s': loop bounds must be i64", kn);
            c->used[s->var] = c->bound[s->var] = 1;
            if (vblock(c, &s->body, depth + 1) < 0)
                return -1;
            c->bound[s->var] = 0;
            break;
        case KIR_S_STORE: {
            if (s->buf < 0 || s->buf >= c->k->nbufs || s->nidx != c->k->bufs[s->buf].rank)
                return ir_errorf(c->d, "kernel '%s': store to buffer %d with %d indices", kn, s->buf, s->nidx);
            const kir_buf *bf = &c->k->bufs[s->buf];
            if (bf->kind == KIR_BUF_INPUT || bf->kind == KIR_BUF_WEIGHT)
                return ir_errorf(c->d, "kernel '%s': store to read-only buffer '%.100s'", kn, bf->name);
            for (int j = 0; j < s->nidx; j++)
                if (vexpr(c, s->idx[j]) < 0)
                    return -1;
                else if (s->idx[j]->dtype != IR_I64)
                    return ir_errorf(c->d, "kernel '%s': index of a store is not i64", kn);
            if (vexpr(c, s->value) < 0)
                return -1;
            if (s->value->dtype != bf->dtype)
                return ir_errorf(c->d, "kernel '%s': stores %s into %s buffer '%.100s'", kn,
                                 ir_dtype_name(s->value->dtype), ir_dtype_name(bf->dtype), bf->name);
            break;
        }
        case KIR_S_ACC_SET:
            if (s->acc < 0 || s->acc >= c->k->naccs)
                return ir_errorf(c->d, "kernel '%s': invalid accumulator a%d", kn, s->acc);
            if (vexpr(c, s->value) < 0)
                return -1;
            if (s->value->dtype != c->k->acc_dtype[s->acc])
                return ir_errorf(c->d, "kernel '%s': sets %s accumulator a%d to %s", kn,
                                 ir_dtype_name(c->k->acc_dtype[s->acc]), s->acc,
                                 ir_dtype_name(s->value->dtype));
            c->accset[s->acc] = 1;
            break;
        case KIR_S_IF:
            if (vexpr(c, s->cond) < 0)
                return -1;
            if (!is_bool(s->cond->dtype))
                return ir_errorf(c->d, "kernel '%s': if needs a bool condition", kn);
            if (vblock(c, &s->body, depth + 1) < 0 || vblock(c, &s->orelse, depth + 1) < 0)
                return -1;
            break;
        }
    }
    return 0;
}

int kir_verify(const kir_kernel *k, icc_diag *d)
{
    vctx c = {k, d, calloc((size_t)k->nvars + 1, 1), calloc((size_t)k->nvars + 1, 1),
              calloc((size_t)k->naccs + 1, 1)};
    int rc = -1;
    if (!c.bound || !c.used || !c.accset)
        ir_errorf(d, "out of memory");
    else
        rc = vblock(&c, &k->body, 0);
    free(c.bound);
    free(c.used);
    free(c.accset);
    return rc;
}

/* ---- text dump --------------------------------------------------------------- */

typedef struct {
    char *s;
    size_t n, cap;
    bool oom;
    const kir_kernel *k;
} out;

static void put(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out *o, const char *fmt, ...)
{
    if (o->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(o->s + o->n, o->cap - o->n, fmt, ap);
        va_end(ap);
        if (w < 0) {
            o->oom = true;
            return;
        }
        if ((size_t)w < o->cap - o->n) {
            o->n += (size_t)w;
            return;
        }
        size_t nc = (o->cap + (size_t)w + 1) * 2;
        char *ns = realloc(o->s, nc);
        if (!ns) {
            o->oom = true;
            return;
        }
        o->s = ns;
        o->cap = nc;
    }
}

static void pexpr(out *o, const kir_expr *e)
{
    switch (e->op) {
    case KIR_CONST:
        if (ir_dtype_is_float(e->dtype))
            put(o, "%.9g", e->c.f);
        else
            put(o, "%lld", (long long)e->c.i);
        if (e->dtype != IR_I64)
            put(o, ":%s", ir_dtype_name(e->dtype));
        return;
    case KIR_VAR:
        put(o, "v%d", e->var);
        return;
    case KIR_SYM:
        put(o, "%s", o->k->graph ? ir_graph_sym_name(o->k->graph, e->var) : "sym");
        if (!o->k->graph)
            put(o, "%d", e->var);
        return;
    case KIR_ACC:
        put(o, "a%d", e->var);
        return;
    case KIR_LOAD:
        put(o, "b%d[", e->buf);
        for (int i = 0; i < e->nidx; i++) {
            put(o, i ? ", " : "");
            pexpr(o, e->idx[i]);
        }
        put(o, "]");
        return;
    default:
        put(o, "%s", kir_op_name(e->op));
        if (e->op == KIR_CAST || e->op == KIR_BITCAST || (e->dtype != IR_I64 && e->dtype != IR_BOOL))
            put(o, ".%s", ir_dtype_name(e->dtype));
        put(o, "(");
        for (int i = 0; i < kir_op_arity(e->op); i++) {
            put(o, i ? ", " : "");
            pexpr(o, e->a[i]);
        }
        put(o, ")");
    }
}

static void pblock(out *o, const kir_block *b, int ind)
{
    static const char *const kinds[] = {"for", "parallel for", "vector for", "unroll for"};
    for (int i = 0; i < b->n; i++) {
        const kir_stmt *s = b->s[i];
        put(o, "%*s", 2 * ind, "");
        switch (s->kind) {
        case KIR_S_FOR:
            put(o, "%s", kinds[s->loop]);
            if (s->loop == KIR_VECTOR || s->loop == KIR_UNROLL)
                put(o, "(%d)", s->width);
            put(o, " v%d in [", s->var);
            pexpr(o, s->lo);
            put(o, ", ");
            pexpr(o, s->hi);
            put(o, ")\n");
            pblock(o, &s->body, ind + 1);
            break;
        case KIR_S_STORE:
            put(o, "b%d[", s->buf);
            for (int j = 0; j < s->nidx; j++) {
                put(o, j ? ", " : "");
                pexpr(o, s->idx[j]);
            }
            put(o, "] = ");
            pexpr(o, s->value);
            put(o, "\n");
            break;
        case KIR_S_ACC_SET:
            put(o, "a%d = ", s->acc);
            pexpr(o, s->value);
            put(o, "\n");
            break;
        case KIR_S_IF:
            put(o, "if ");
            pexpr(o, s->cond);
            put(o, "\n");
            pblock(o, &s->body, ind + 1);
            if (s->orelse.n) {
                put(o, "%*selse\n", 2 * ind, "");
                pblock(o, &s->orelse, ind + 1);
            }
            break;
        }
    }
}

char *kir_print(const kir_kernel *k)
{
    static const char *const kinds[] = {"in", "out", "weight", "arena"};
    out o = {.k = k, .cap = 256};
    if (!(o.s = malloc(o.cap)))
        return NULL;
    put(&o, "kernel @%s(", k->name);
    for (int i = 0; i < k->nbufs; i++) {
        const kir_buf *b = &k->bufs[i];
        put(&o, "%sb%d %%%s: %s[", i ? ", " : "", i, b->name, ir_dtype_name(b->dtype));
        for (int j = 0; j < b->rank; j++) {
            put(&o, j ? "," : "");
            pexpr(&o, b->dims[j]);
        }
        put(&o, "] %s", kinds[b->kind]);
        if (b->kind == KIR_BUF_WEIGHT || b->kind == KIR_BUF_ARENA)
            put(&o, "+%lld", (long long)b->offset);
    }
    put(&o, ")\n");
    for (int i = 0; i < k->naccs; i++)
        put(&o, "  acc a%d: %s\n", i, ir_dtype_name(k->acc_dtype[i]));
    pblock(&o, &k->body, 1);
    if (o.oom) {
        free(o.s);
        return NULL;
    }
    return o.s;
}
