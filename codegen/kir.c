/* kir.c - the kernel IR: builders, verifier and text dump, including the
 * constructs a GPU schedule and the precision lowering need: scratch
 * buffers in local memory spaces, let-bound values, barriers, GPU loop
 * kinds and intrinsic statements (codegen/kir_intrinsics.def). */
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

/* Operand kinds of the intrinsic table. */
enum { ARG_NONE, ARG_MEMW, ARG_MEMR, ARG_TILE, ARG_ROWSR, ARG_ROWSW, ARG_HINT };
typedef struct {
    int kind;
    ir_dtype dt;
    int mul;
} intrin_arg;
#define NONE {ARG_NONE, IR_F32, 0}
#define MEMW(t, m) {ARG_MEMW, IR_##t, m}
#define MEMR(t, m) {ARG_MEMR, IR_##t, m}
#define TILE {ARG_TILE, IR_F32, 0}
#define ROWSR {ARG_ROWSR, IR_F32, 0}
#define ROWSW {ARG_ROWSW, IR_F32, 0}
#define HINT {ARG_HINT, IR_F32, 0}
static const struct {
    const char *name, *feature;
    icc_kernel_kind kind;
    int nargs;
    intrin_arg args[4];
} intrins[KIR_INTRIN_COUNT] = {
#define KINTR(id, nm, feat, kind, n, a0, a1, a2, a3) [KIR_IN_##id] = {nm, feat, ICC_KERNEL_##kind, n, {a0, a1, a2, a3}},
#include "codegen/kir_intrinsics.def"
#undef KINTR
};
#undef NONE
#undef MEMW
#undef MEMR
#undef TILE
#undef ROWSR
#undef ROWSW
#undef HINT

const char *kir_intrin_name(kir_intrin id) { return (unsigned)id < KIR_INTRIN_COUNT ? intrins[id].name : "?"; }
const char *kir_intrin_feature(kir_intrin id)
{
    return (unsigned)id < KIR_INTRIN_COUNT ? intrins[id].feature : "";
}
int kir_intrin_nargs(kir_intrin id) { return (unsigned)id < KIR_INTRIN_COUNT ? intrins[id].nargs : -1; }
icc_kernel_kind kir_intrin_kind(kir_intrin id)
{
    return (unsigned)id < KIR_INTRIN_COUNT ? intrins[id].kind : ICC_KERNEL_F32;
}

const char *kir_space_name(kir_space s)
{
    static const char *const names[] = {"global", "kernel", "block", "thread"};
    return (unsigned)s < 4 ? names[s] : "?";
}

const char *kir_op_name(kir_op op) { return (unsigned)op < KIR_OP_COUNT ? ops[op].name : "?"; }
int kir_op_arity(kir_op op) { return (unsigned)op < KIR_OP_COUNT ? ops[op].arity : -1; }

bool kir_op_inexact(kir_op op)
{
    switch (op) {
    case KIR_ADD: case KIR_SUB: case KIR_MUL: case KIR_DIV: case KIR_REM: case KIR_POW:
    case KIR_EXP: case KIR_LOG: case KIR_SQRT: case KIR_TANH: case KIR_ERF: case KIR_ERFC: case KIR_GELU: case KIR_FMA: case KIR_MULADD:
    case KIR_SIN: case KIR_COS: case KIR_TAN: case KIR_ASIN: case KIR_ACOS: case KIR_ATAN:
    case KIR_SINH: case KIR_COSH: case KIR_ASINH: case KIR_ACOSH: case KIR_ATANH:
        return true;
    default:
        return false;
    }
}

kir_kernel *kir_kernel_create(const char *name, const ir_graph *g)
{
    kir_kernel *k = calloc(1, sizeof *k);
    if (!k || !(k->arena = ir_arena_create()) || !(k->name = ir_arena_strdup(k->arena, name))) {
        kir_kernel_destroy(k);
        return NULL;
    }
    k->graph = g;
    k->status_buf = -1;
    k->fail_base = 1;
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
        b->dims[i] = d.sym >= 0 ? kir_dim(k, d) : NULL;
        if (!b->dims[i])
            return -1;
    }
    return k->nbufs++;
}

/* Scratch sizes stay far below int64 so offsets and strides computed
 * from them cannot overflow either. */
#define SCRATCH_MAX_BYTES ((int64_t)1 << 31)

int kir_buf_bytes(const kir_buf *b, int64_t *bytes)
{
    int64_t n = ir_dtype_size(b->dtype);
    for (int i = 0; i < b->rank; i++) {
        const kir_expr *d = b->dims[i];
        if (!d || d->op != KIR_CONST || d->c.i < 0 || (d->c.i && n > INT64_MAX / d->c.i))
            return -1;
        n *= d->c.i;
    }
    *bytes = n;
    return 0;
}

int kir_add_scratch(kir_kernel *k, const char *name, kir_space space, ir_dtype dt, int rank,
                    const int64_t *dims)
{
    if (space == KIR_SPACE_GLOBAL || (unsigned)space > KIR_SPACE_THREAD || rank < 0 || rank > IR_MAX_RANK)
        return -1;
    ir_type t = {dt, rank, {{0}}};
    int64_t bytes = ir_dtype_size(dt);
    for (int i = 0; i < rank; i++) {
        if (dims[i] <= 0 || bytes > SCRATCH_MAX_BYTES / dims[i])
            return -1;
        bytes *= dims[i];
        t.dims[i].v = dims[i];
    }
    int b = kir_add_buf(k, name, KIR_BUF_SCRATCH, &t, 0, space == KIR_SPACE_KERNEL ? -1 : 0);
    if (b >= 0)
        k->bufs[b].space = space;
    return b;
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

kir_expr *kir_dim(kir_kernel *k, ir_dim d) { return d.sym > 0 ? kir_sym(k, d.sym) : kir_const_i(k, IR_I64, d.v); }

kir_expr *kir_acc(kir_kernel *k, int acc)
{
    if (acc < 0 || acc >= k->naccs)
        return NULL;
    return ref(k, KIR_ACC, k->acc_dtype[acc], acc);
}

kir_expr *kir_letv(kir_kernel *k, int id)
{
    if (id < 0 || id >= k->nlets)
        return NULL;
    return ref(k, KIR_LETV, k->let_value[id]->dtype, id);
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

kir_expr *kir_let(kir_kernel *k, kir_block *b, kir_expr *value)
{
    if (!value)
        return NULL;
    kir_expr **nl = grow(k->arena, k->let_value, k->nlets, &k->cap_lets, sizeof(kir_expr *));
    if (!nl)
        return NULL;
    k->let_value = nl;
    kir_stmt *s = append(k, b, KIR_S_LET);
    if (!s)
        return NULL;
    s->let = k->nlets;
    s->value = value;
    k->let_value[k->nlets++] = value;
    return kir_letv(k, s->let);
}

kir_stmt *kir_barrier(kir_kernel *k, kir_block *b, kir_scope scope)
{
    kir_stmt *s = append(k, b, KIR_S_BARRIER);
    if (s)
        s->scope = scope;
    return s;
}

kir_stmt *kir_fail(kir_kernel *k, kir_block *b, const char *msg)
{
    int m = 0;
    while (m < k->nfails && strcmp(k->fails[m], msg))
        m++;
    if (m == k->nfails) {
        const char **nf = grow(k->arena, k->fails, k->nfails, &k->cap_fails, sizeof *nf);
        char *copy = ir_arena_strdup(k->arena, msg);
        if (!nf || !copy)
            return NULL;
        k->fails = nf;
        k->fails[k->nfails++] = copy;
    }
    if (k->status_buf < 0) {
        ir_type t = {IR_I32, 0, {{0}}};
        if ((k->status_buf = kir_add_buf(k, "(status)", KIR_BUF_STATUS, &t, 0, 0)) < 0)
            return NULL;
        k->bufs[k->status_buf].written = true;
    }
    kir_stmt *s = append(k, b, KIR_S_FAIL);
    if (s)
        s->msg = m;
    return s;
}

kir_stmt *kir_intrinsic(kir_kernel *k, kir_block *b, kir_intrin id, int lanes, const kir_iarg *args)
{
    int n = kir_intrin_nargs(id);
    if (n < 0)
        return NULL;
    kir_iarg *na = ir_arena_alloc(k->arena, sizeof *na * (size_t)(n + 1));
    if (!na)
        return NULL;
    for (int i = 0; i < n; i++) {
        na[i] = args[i];
        if (args[i].buf < 0) {
            na[i].nidx = 0;
            na[i].idx = NULL;
            continue;
        }
        if (args[i].buf >= k->nbufs)
            return NULL;
        int r = k->bufs[args[i].buf].rank;
        na[i].nidx = r;
        if (!(na[i].idx = ir_arena_alloc(k->arena, sizeof(kir_expr *) * (size_t)(r + 1))))
            return NULL;
        for (int j = 0; j < r; j++)
            if (!(na[i].idx[j] = args[i].idx[j]))
                return NULL;
    }
    kir_stmt *s = append(k, b, KIR_S_INTRINSIC);
    if (s) {
        s->intrin = id;
        s->lanes = lanes;
        s->nargs = n;
        s->args = na;
        for (int i = 0; i < n; i++)
            if (na[i].buf >= 0 && (intrins[id].args[i].kind == ARG_MEMW || intrins[id].args[i].kind == ARG_ROWSW))
                k->bufs[na[i].buf].written = true;
    }
    return s;
}

/* ---- verifier -------------------------------------------------------------- */

typedef struct {
    const kir_kernel *k;
    icc_diag *d;
    char *bound;               /* loop variables in scope */
    char *used;                /* loop variables bound anywhere so far */
    char *accset;              /* accumulators set at least once before */
    char *letin;               /* lets in scope */
    char *letdone;             /* lets bound anywhere so far */
    char *tvar;                /* loop variables of THREAD, BLOCK and WARP loops */
    bool gpu;                  /* the kernel has a GRID loop */
    bool parallel;             /* ... a PARALLEL loop */
    int nongrid;               /* enclosing statements other than GRID loops */
    int grid, thr, blk, warp;  /* enclosing loops of each GPU kind */
    int ifs;                   /* enclosing ifs */
    int divergent;             /* enclosing loops whose bounds read a thread index */
} vctx;

static bool is_gpu_loop(kir_loop l) { return l >= KIR_GRID && l <= KIR_WARP; }

/* Whether x reads a THREAD/BLOCK/WARP loop variable (through lets too). */
static bool reads_tvar(const vctx *c, const kir_expr *x)
{
    if (!x)
        return false;
    switch (x->op) {
    case KIR_VAR: return x->var >= 0 && x->var < c->k->nvars && c->tvar[x->var];
    case KIR_LETV: return x->var >= 0 && x->var < c->k->nlets && reads_tvar(c, c->k->let_value[x->var]);
    case KIR_LOAD:
        for (int i = 0; i < x->nidx; i++)
            if (reads_tvar(c, x->idx[i]))
                return true;
        return false;
    default:
        for (int i = 0; i < kir_op_arity(x->op); i++)
            if (reads_tvar(c, x->a[i]))
                return true;
        return false;
    }
}

static bool block_has_grid(const kir_block *b)
{
    for (int i = 0; i < b->n; i++)
        if (b->s[i]->kind == KIR_S_FOR && (b->s[i]->loop == KIR_GRID || block_has_grid(&b->s[i]->body)))
            return true;
    return false;
}

/* In a GPU kernel a thread's scratch exists only inside a thread-level
 * loop and a block's only inside a grid loop. */
static int vscratch(vctx *c, int buf)
{
    const kir_buf *b = &c->k->bufs[buf];
    if (!c->gpu || b->kind != KIR_BUF_SCRATCH)
        return 0;
    if (b->space == KIR_SPACE_THREAD && !c->thr && !c->warp)
        return ir_errorf(c->d, "kernel '%s': thread scratch '%.100s' used outside a thread or warp loop",
                         c->k->name, b->name);
    if (b->space == KIR_SPACE_BLOCK && !c->grid)
        return ir_errorf(c->d, "kernel '%s': block scratch '%.100s' used outside a grid loop", c->k->name,
                         b->name);
    return 0;
}

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
    case KIR_LETV:
        if (e->var < 0 || e->var >= c->k->nlets || !c->letin[e->var])
            return ir_errorf(c->d, "kernel '%s': let l%d used outside its scope", kn, e->var);
        if (e->dtype != c->k->let_value[e->var]->dtype)
            return ir_errorf(c->d, "kernel '%s': let l%d is %s, read as %s", kn, e->var,
                             ir_dtype_name(c->k->let_value[e->var]->dtype), ir_dtype_name(e->dtype));
        return 0;
    case KIR_LOAD:
        if (e->buf < 0 || e->buf >= c->k->nbufs || e->nidx != c->k->bufs[e->buf].rank)
            return ir_errorf(c->d, "kernel '%s': load of buffer %d with %d indices", kn, e->buf, e->nidx);
        if (vscratch(c, e->buf) < 0)
            return -1;
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

/* An index list: one i64 index per dim of buf. */
static int vindices(vctx *c, int buf, int nidx, kir_expr *const *idx, const char *what)
{
    const char *kn = c->k->name;
    if (buf < 0 || buf >= c->k->nbufs || nidx != c->k->bufs[buf].rank)
        return ir_errorf(c->d, "kernel '%s': %s: buffer %d with %d indices", kn, what, buf, nidx);
    for (int j = 0; j < nidx; j++)
        if (vexpr(c, idx[j]) < 0)
            return -1;
        else if (idx[j]->dtype != IR_I64)
            return ir_errorf(c->d, "kernel '%s': %s: an index is not i64", kn, what);
    return vscratch(c, buf);
}

static int vintrin(vctx *c, const kir_stmt *s)
{
    const char *kn = c->k->name;
    if ((unsigned)s->intrin >= KIR_INTRIN_COUNT)
        return ir_errorf(c->d, "kernel '%s': invalid intrinsic %d", kn, (int)s->intrin);
    const char *nm = intrins[s->intrin].name;
    if (s->nargs != intrins[s->intrin].nargs)
        return ir_errorf(c->d, "kernel '%s': intrinsic %s takes %d operands, not %d", kn, nm,
                         intrins[s->intrin].nargs, s->nargs);
    if (s->intrin == KIR_IN_AMX_CONFIG) {
        int depth = s->lanes & 0xff, rows = s->lanes >> 8;
        if (s->lanes < 0 || depth > 64 || depth % 4 || rows > 16)
            return ir_errorf(c->d, "kernel '%s': amx_config(%d, %d): the operand tiles' depth must be 0 (64) or 4..64 "
                             "bytes, a multiple of 4, and the rows 0 (16) to 16", kn, depth, rows);
    }
    if (s->intrin == KIR_IN_MMA_SYNC) {
        ir_dtype ta = s->args[1].buf >= 0 && s->args[1].buf < c->k->nbufs ? c->k->bufs[s->args[1].buf].dtype : IR_UNDEF;
        ir_dtype tb = s->args[2].buf >= 0 && s->args[2].buf < c->k->nbufs ? c->k->bufs[s->args[2].buf].dtype : IR_UNDEF;
        if (s->lanes != 1 || ta != tb || (ta != IR_F16 && ta != IR_BF16))
            return ir_errorf(c->d, "kernel '%s': mma_sync takes one lane and two f16 or two bf16 operands", kn);
    }
    for (int i = 0; i < s->nargs; i++) {
        const intrin_arg *want = &intrins[s->intrin].args[i];
        const kir_iarg *a = &s->args[i];
        if (want->kind == ARG_TILE) {
            if (a->buf != -1 || a->tile < 0 || a->tile > 7)
                return ir_errorf(c->d, "kernel '%s': intrinsic %s: operand %d must be a tile 0..7", kn, nm, i);
            continue;
        }
        if (a->buf < 0)
            return ir_errorf(c->d, "kernel '%s': intrinsic %s: operand %d must be a buffer element", kn, nm, i);
        if (vindices(c, a->buf, a->nidx, a->idx, nm) < 0)
            return -1;
        if (a->rows && s->intrin != KIR_IN_TRANSPOSE_F32)
            return ir_errorf(c->d, "kernel '%s': intrinsic %s: operand %d: only transpose_f32's windows take a row "
                             "stride", kn, nm, i);
        if (a->rows && (vexpr(c, a->rows) < 0 || a->rows->dtype != IR_I64))
            return a->rows->dtype != IR_I64 ? ir_errorf(c->d, "kernel '%s': intrinsic %s: operand %d's row stride is "
                                                        "not i64", kn, nm, i)
                                            : -1;
        const kir_buf *bf = &c->k->bufs[a->buf];
        bool writes = want->kind == ARG_MEMW || want->kind == ARG_ROWSW;
        if (writes && (bf->kind == KIR_BUF_INPUT || bf->kind == KIR_BUF_WEIGHT))
            return ir_errorf(c->d, "kernel '%s': intrinsic %s writes read-only buffer '%.100s'", kn, nm, bf->name);
        if (want->kind == ARG_HINT)
            continue;
        if (want->kind == ARG_ROWSR || want->kind == ARG_ROWSW) {
            if (bf->rank < 2)
                return ir_errorf(c->d, "kernel '%s': intrinsic %s: operand %d needs rows (rank >= 2)", kn, nm, i);
            continue;
        }
        if (bf->dtype != want->dt)
            return ir_errorf(c->d, "kernel '%s': intrinsic %s: operand %d is %s, not %s", kn, nm, i,
                             ir_dtype_name(bf->dtype), ir_dtype_name(want->dt));
        if (s->lanes < 1 || s->lanes > 4096)
            return ir_errorf(c->d, "kernel '%s': intrinsic %s: lane count %d not in 1..4096", kn, nm, s->lanes);
        const kir_expr *last = bf->rank ? bf->dims[bf->rank - 1] : NULL;
        int64_t span = want->mul < 0 ? -(int64_t)want->mul : (int64_t)s->lanes * want->mul;
        if (!last || (last->op == KIR_CONST && last->c.i < span))
            return ir_errorf(c->d, "kernel '%s': intrinsic %s: operand %d spans %lld elements, more than the last "
                             "dim of '%.100s'", kn, nm, i, (long long)span, bf->name);
    }
    return 0;
}

static int vblock(vctx *c, const kir_block *b, int depth)
{
    for (int i = 0; i < b->n; i++) {
        const kir_stmt *s = b->s[i];
        const char *kn = c->k->name;
        switch (s->kind) {
        case KIR_S_FOR: {
            if (s->var < 0 || s->var >= c->k->nvars || c->used[s->var])
                return ir_errorf(c->d, "kernel '%s': loop variable v%d bound twice", kn, s->var);
            if ((unsigned)s->loop > KIR_WARP)
                return ir_errorf(c->d, "kernel '%s': invalid loop kind %d", kn, (int)s->loop);
            if (s->loop == KIR_PARALLEL && depth > 0)
                return ir_errorf(c->d, "kernel '%s': a parallel loop must be outermost", kn);
            if (s->loop == KIR_GRID && c->nongrid)
                return ir_errorf(c->d, "kernel '%s': a grid loop must be outermost (inside grid loops only)", kn);
            if ((s->loop == KIR_THREAD || s->loop == KIR_BLOCK) && (!c->grid || c->thr || c->blk || c->warp))
                return ir_errorf(c->d, "kernel '%s': a %s loop must be inside a grid loop and no thread-level loop",
                                 kn, s->loop == KIR_THREAD ? "thread" : "block");
            if (s->loop == KIR_WARP && (!c->blk || c->thr || c->warp))
                return ir_errorf(c->d, "kernel '%s': a warp loop must be inside a block loop", kn);
            if (vexpr(c, s->lo) < 0 || vexpr(c, s->hi) < 0)
                return -1;
            if (s->lo->dtype != IR_I64 || s->hi->dtype != IR_I64)
                return ir_errorf(c->d, "kernel '%s': loop bounds must be i64", kn);
            bool div = !is_gpu_loop(s->loop) && (reads_tvar(c, s->lo) || reads_tvar(c, s->hi));
            int *kind_depth = s->loop == KIR_GRID ? &c->grid : s->loop == KIR_THREAD ? &c->thr
                            : s->loop == KIR_BLOCK ? &c->blk : s->loop == KIR_WARP ? &c->warp : NULL;
            c->parallel |= s->loop == KIR_PARALLEL;
            c->used[s->var] = c->bound[s->var] = 1;
            c->tvar[s->var] = s->loop == KIR_THREAD || s->loop == KIR_BLOCK || s->loop == KIR_WARP;
            c->nongrid += s->loop != KIR_GRID;
            c->divergent += div;
            if (kind_depth)
                ++*kind_depth;
            if (vblock(c, &s->body, depth + 1) < 0)
                return -1;
            if (kind_depth)
                --*kind_depth;
            c->divergent -= div;
            c->nongrid -= s->loop != KIR_GRID;
            c->bound[s->var] = 0;
            break;
        }
        case KIR_S_STORE: {
            if (s->buf < 0 || s->buf >= c->k->nbufs || s->nidx != c->k->bufs[s->buf].rank)
                return ir_errorf(c->d, "kernel '%s': store to buffer %d with %d indices", kn, s->buf, s->nidx);
            const kir_buf *bf = &c->k->bufs[s->buf];
            if (bf->kind == KIR_BUF_INPUT || bf->kind == KIR_BUF_WEIGHT)
                return ir_errorf(c->d, "kernel '%s': store to read-only buffer '%.100s'", kn, bf->name);
            if (vscratch(c, s->buf) < 0)
                return -1;
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
            c->ifs++;
            c->nongrid++;
            if (vblock(c, &s->body, depth + 1) < 0 || vblock(c, &s->orelse, depth + 1) < 0)
                return -1;
            c->ifs--;
            c->nongrid--;
            break;
        case KIR_S_LET:
            if (s->let < 0 || s->let >= c->k->nlets || c->letdone[s->let])
                return ir_errorf(c->d, "kernel '%s': let l%d bound twice", kn, s->let);
            if (vexpr(c, s->value) < 0)
                return -1;
            if (s->value != c->k->let_value[s->let])
                return ir_errorf(c->d, "kernel '%s': let l%d binds another value than recorded", kn, s->let);
            c->letin[s->let] = c->letdone[s->let] = 1;
            break;
        case KIR_S_BARRIER:
            if (s->scope != KIR_SCOPE_BLOCK && s->scope != KIR_SCOPE_WARP)
                return ir_errorf(c->d, "kernel '%s': invalid barrier scope %d", kn, (int)s->scope);
            /* every thread of the scope must reach the same barrier */
            if (c->ifs)
                return ir_errorf(c->d, "kernel '%s': a barrier must not be inside an if", kn);
            if (c->divergent)
                return ir_errorf(c->d, "kernel '%s': a barrier inside a loop whose bounds read a thread index", kn);
            break;
        case KIR_S_INTRINSIC:
            if (vintrin(c, s) < 0)
                return -1;
            break;
        case KIR_S_FAIL:
            if (s->msg < 0 || s->msg >= c->k->nfails || c->k->status_buf < 0)
                return ir_errorf(c->d, "kernel '%s': fail of message %d (the kernel has %d)", kn, s->msg,
                                 c->k->nfails);
            break;
        default:
            return ir_errorf(c->d, "kernel '%s': invalid statement kind %d", kn, (int)s->kind);
        }
    }
    /* a let's scope ends with its block */
    for (int i = 0; i < b->n; i++)
        if (b->s[i]->kind == KIR_S_LET)
            c->letin[b->s[i]->let] = 0;
    return 0;
}

/* Buffers: scratch has a local space and positive constant dims. */
static int vbufs(vctx *c)
{
    for (int i = 0; i < c->k->nbufs; i++) {
        const kir_buf *b = &c->k->bufs[i];
        int64_t bytes;
        if ((b->kind == KIR_BUF_SCRATCH) != (b->space != KIR_SPACE_GLOBAL) || (unsigned)b->space > KIR_SPACE_THREAD)
            return ir_errorf(c->d, "kernel '%s': buffer '%.100s' is %s memory of kind %d", c->k->name, b->name,
                             kir_space_name(b->space), (int)b->kind);
        if (b->kind != KIR_BUF_SCRATCH)
            continue;
        for (int j = 0; j < b->rank; j++)
            if (!b->dims[j] || b->dims[j]->op != KIR_CONST || b->dims[j]->c.i <= 0)
                return ir_errorf(c->d, "kernel '%s': scratch '%.100s': dim %d is not a positive constant",
                                 c->k->name, b->name, j);
        if (kir_buf_bytes(b, &bytes) < 0 || bytes > SCRATCH_MAX_BYTES)
            return ir_errorf(c->d, "kernel '%s': scratch '%.100s' is larger than 2 GiB", c->k->name, b->name);
    }
    return 0;
}

int kir_verify(const kir_kernel *k, icc_diag *d)
{
    size_t nv = (size_t)k->nvars + 1, nl = (size_t)k->nlets + 1;
    vctx c = {k, d, calloc(nv, 1), calloc(nv, 1), calloc((size_t)k->naccs + 1, 1), calloc(nl, 1), calloc(nl, 1),
              calloc(nv, 1), block_has_grid(&k->body), false, 0, 0, 0, 0, 0, 0, 0};
    int rc = -1;
    if (!c.bound || !c.used || !c.accset || !c.letin || !c.letdone || !c.tvar)
        ir_errorf(d, "out of memory");
    else if (vbufs(&c) == 0 && (rc = vblock(&c, &k->body, 0)) == 0 && c.gpu && c.parallel)
        rc = ir_errorf(d, "kernel '%s': parallel and grid loops in one kernel", k->name);
    free(c.bound);
    free(c.used);
    free(c.accset);
    free(c.letin);
    free(c.letdone);
    free(c.tvar);
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
    case KIR_LETV:
        put(o, "l%d", e->var);
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

/* Whether the intrinsic's operands are spans of `lanes` elements. */
static bool has_lanes(kir_intrin id)
{
    for (int i = 0; (unsigned)id < KIR_INTRIN_COUNT && i < intrins[id].nargs; i++)
        if (intrins[id].args[i].kind == ARG_MEMW || intrins[id].args[i].kind == ARG_MEMR)
            return true;
    return false;
}

/* b<buf>[idx, ...] */
static void pref(out *o, int buf, int nidx, kir_expr *const *idx)
{
    put(o, "b%d[", buf);
    for (int j = 0; j < nidx; j++) {
        put(o, j ? ", " : "");
        pexpr(o, idx[j]);
    }
    put(o, "]");
}

static void pblock(out *o, const kir_block *b, int ind)
{
    static const char *const kinds[] = {"for", "parallel for", "vector for", "unroll for",
                                        "grid for", "thread for", "block for", "warp for"};
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
            pref(o, s->buf, s->nidx, s->idx);
            put(o, " = ");
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
        case KIR_S_LET:
            put(o, "let l%d: %s = ", s->let, ir_dtype_name(s->value->dtype));
            pexpr(o, s->value);
            put(o, "\n");
            break;
        case KIR_S_BARRIER:
            put(o, "barrier(%s)\n", s->scope == KIR_SCOPE_WARP ? "warp" : "block");
            break;
        case KIR_S_FAIL:
            put(o, "fail \"%s\"\n", o->k->fails[s->msg]);
            break;
        case KIR_S_INTRINSIC:
            put(o, "%s", kir_intrin_name(s->intrin));
            if (s->intrin == KIR_IN_AMX_CONFIG) { /* its shape where not the default: (d) or (d, r) */
                if (s->lanes >> 8)
                    put(o, "(%d, %d)", s->lanes & 0xff, s->lanes >> 8);
                else if (s->lanes)
                    put(o, "(%d)", s->lanes);
            } else if (has_lanes(s->intrin)) {
                put(o, "(%d)", s->lanes);
            }
            for (int j = 0; j < s->nargs; j++) {
                put(o, j ? ", " : " ");
                if (s->args[j].buf < 0)
                    put(o, "t%d", s->args[j].tile);
                else
                    pref(o, s->args[j].buf, s->args[j].nidx, s->args[j].idx);
                if (s->args[j].rows) {
                    put(o, " rows ");
                    pexpr(o, s->args[j].rows);
                }
            }
            put(o, "\n");
            break;
        }
    }
}

char *kir_print(const kir_kernel *k)
{
    static const char *const kinds[] = {"in", "out", "weight", "arena", "scratch", "status"};
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
        if (b->kind == KIR_BUF_SCRATCH)
            put(&o, "(%s)", kir_space_name(b->space));
        if (b->kind == KIR_BUF_WEIGHT || b->kind == KIR_BUF_ARENA ||
            (b->kind == KIR_BUF_SCRATCH && b->space == KIR_SPACE_KERNEL && b->offset >= 0))
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
