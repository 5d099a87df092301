/* emit.c - one kernel of the kernel IR as a CUDA C function (emit.h).
 *
 * Expressions print as C expressions over the prelude's helpers, one per
 * operation and dtype (overloaded, so the text names the operation only):
 * a shared subexpression is printed, and evaluated, once per use, which
 * the kernel IR allows. Statements print as their C counterparts; loop
 * variables are v<N>, accumulators a<N>, lets l<N>, buffers b<N>. */
#include "codegen/cuda/emit.h"
#include "icc/runtime.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const kir_kernel *k;
    char *s;
    size_t len, cap;
    bool oom;
    icc_diag *d;
    int err;                   /* -1 once an error is set */
} out;

static void put(out *o, const char *fmt, ...)
{
    if (o->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(o->s ? o->s + o->len : NULL, o->s ? o->cap - o->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            o->oom = true;
            return;
        }
        if (o->s && o->len + (size_t)n < o->cap) {
            o->len += (size_t)n;
            return;
        }
        size_t cap = o->cap ? o->cap : 4096;
        while (cap <= o->len + (size_t)n)
            cap *= 2;
        char *p = realloc(o->s, cap);
        if (!p) {
            o->oom = true;
            return;
        }
        o->s = p;
        o->cap = cap;
    }
}

static void fail(out *o, const char *fmt, const char *what)
{
    if (o->err < 0)
        return;
    ir_errorf(o->d, fmt, o->k->name, what);
    o->err = -1;
}

/* ---- types ------------------------------------------------------------------- */

static const char *int_type(ir_dtype dt)
{
    switch (dt) {
    case IR_I8: return "icc_i8";
    case IR_U8: case IR_BOOL: return "icc_u8";
    case IR_I16: return "icc_i16";
    case IR_U16: case IR_F16: case IR_BF16: return "icc_u16";
    case IR_I32: return "icc_i32";
    case IR_U32: return "icc_u32";
    case IR_I64: return "icc_i64";
    case IR_U64: return "icc_u64";
    default: return NULL;
    }
}

/* The type a value has in registers. */
static const char *reg_type(ir_dtype dt)
{
    switch (dt) {
    case IR_F32: case IR_F16: case IR_BF16: return "float";
    case IR_F64: return "double";
    case IR_BOOL: return "bool";
    default: return int_type(dt);
    }
}

/* The type of a buffer's elements in memory. */
static const char *mem_type(ir_dtype dt)
{
    switch (dt) {
    case IR_F32: return "float";
    case IR_F64: return "double";
    default: return int_type(dt);
    }
}

static bool narrow(ir_dtype dt) { return dt == IR_F16 || dt == IR_BF16; }

/* ---- expressions --------------------------------------------------------------- */

static void ex(out *o, const kir_expr *x);

static void pconst(out *o, const kir_expr *x)
{
    ir_dtype dt = x->dtype;
    if (ir_dtype_is_float(dt)) {
        double v = x->c.f;
        if (dt != IR_F64) {
            float f = (float)v;
            if (isfinite(f)) {
                char t[40];
                snprintf(t, sizeof t, "%.9g", (double)f);
                put(o, "%s%sf", t, strpbrk(t, ".e") ? "" : ".0");
            }
            else {
                uint32_t u;
                memcpy(&u, &f, 4);
                put(o, "icc_u2f(0x%" PRIx32 "u)", u);
            }
        } else if (isfinite(v)) {
            char t[40];
            snprintf(t, sizeof t, "%.17g", v);
            put(o, "%s%s", t, strpbrk(t, ".e") ? "" : ".0");
        }
        else {
            uint64_t u;
            memcpy(&u, &v, 8);
            put(o, "icc_u2d(0x%" PRIx64 "ull)", u);
        }
        return;
    }
    if (dt == IR_BOOL) {
        put(o, x->c.i ? "true" : "false");
        return;
    }
    int64_t v = x->c.i;
    if (dt == IR_I64)   /* index math: plain literals */
        put(o, v == INT64_MIN ? "(-9223372036854775807ll - 1)" : v < 0 ? "(%lldll)" : "%lldll", (long long)v);
    else if (ir_dtype_is_signed(dt))
        put(o, "((%s)%lld)", int_type(dt), (long long)v);
    else
        put(o, "((%s)%lluull)", int_type(dt), (unsigned long long)(uint64_t)v);
}

/* The linear element index of buffer b at idx (row-major over its dims). */
static void pindex(out *o, const kir_buf *b, kir_expr *const *idx, int n)
{
    if (n == 0) {
        put(o, "0");
        return;
    }
    for (int i = 1; i < n; i++)
        put(o, "(");
    ex(o, idx[0]);
    for (int i = 1; i < n; i++) {
        put(o, ") * (");
        ex(o, b->dims[i]);
        put(o, ") + (");
        ex(o, idx[i]);
        put(o, ")");
    }
}

static void pload(out *o, const kir_expr *x)
{
    const kir_buf *b = &o->k->bufs[x->buf];
    const char *pre = b->dtype == IR_F16 ? "icc_h2f(" : b->dtype == IR_BF16 ? "icc_bf2f(" : "(";
    put(o, "%sb%d[", pre, x->buf);
    pindex(o, b, x->idx, x->nidx);
    put(o, b->dtype == IR_BOOL ? "] != 0)" : "])");
}

static const char *float_fn(kir_op op)
{
    switch (op) {
    case KIR_ABS: return "fabs";
    case KIR_EXP: return "exp";
    case KIR_LOG: return "log";
    case KIR_SQRT: return "sqrt";
    case KIR_TANH: return "tanh";
    case KIR_ERF: return "erf";
    case KIR_ERFC: return "erfc";
    case KIR_GELU: return "icc_gelu";   /* prelude.cuh: icc_gelu, icc_geluf */
    case KIR_FLOOR: return "floor";
    case KIR_CEIL: return "ceil";
    case KIR_ROUND: return "rint";
    case KIR_SIN: return "sin";
    case KIR_COS: return "cos";
    case KIR_TAN: return "tan";
    case KIR_ASIN: return "asin";
    case KIR_ACOS: return "acos";
    case KIR_ATAN: return "atan";
    case KIR_SINH: return "sinh";
    case KIR_COSH: return "cosh";
    case KIR_ASINH: return "asinh";
    case KIR_ACOSH: return "acosh";
    case KIR_ATANH: return "atanh";
    case KIR_REM: return "fmod";
    case KIR_POW: return "pow";
    case KIR_FMA: case KIR_MULADD: return "fma";
    case KIR_COPYSIGN: return "copysign";
    default: return NULL;
    }
}

static void args(out *o, const kir_expr *x, int n)
{
    for (int i = 0; i < n; i++) {
        put(o, i ? ", " : "");
        ex(o, x->a[i]);
    }
    put(o, ")");
}

static void pfloat_op(out *o, const kir_expr *x)
{
    int n = kir_op_arity(x->op);
    bool dbl = x->dtype == IR_F64;
    const char *round = x->dtype == IR_F16 ? "icc_rh(" : x->dtype == IR_BF16 ? "icc_rbf(" : NULL;
    if (round && kir_op_inexact(x->op))
        put(o, "%s", round);
    else
        round = NULL;
    static const char *const infix[] = {[KIR_ADD] = "+", [KIR_SUB] = "-", [KIR_MUL] = "*", [KIR_DIV] = "/"};
    const char *fn;
    switch (x->op) {
    case KIR_NEG:
        put(o, "(-");
        ex(o, x->a[0]);
        put(o, ")");
        break;
    case KIR_ADD: case KIR_SUB: case KIR_MUL: case KIR_DIV:
        put(o, "(");
        ex(o, x->a[0]);
        put(o, " %s ", infix[x->op]);
        ex(o, x->a[1]);
        put(o, ")");
        break;
    case KIR_MIN: case KIR_MAX:
        put(o, "%s(", x->op == KIR_MIN ? "icc_min" : "icc_max");
        args(o, x, 2);
        break;
    default:
        if (!(fn = float_fn(x->op))) {
            fail(o, "kernel %s: the CUDA backend has no float '%s'", kir_op_name(x->op));
            return;
        }
        put(o, "%s%s(", fn, dbl ? "" : "f");
        args(o, x, n);
    }
    if (round)
        put(o, ")");
}

static void pint_op(out *o, const kir_expr *x)
{
    static const char *const fn[] = {
        [KIR_ADD] = "icc_add", [KIR_SUB] = "icc_sub", [KIR_MUL] = "icc_mul", [KIR_NEG] = "icc_neg",
        [KIR_ABS] = "icc_abs", [KIR_FMA] = "icc_fma", [KIR_MIN] = "icc_min", [KIR_MAX] = "icc_max",
        [KIR_DIV] = "icc_div", [KIR_REM] = "icc_rem", [KIR_SHL] = "icc_shl", [KIR_SHR] = "icc_shr",
        [KIR_ASHR] = "icc_ashr", [KIR_POW] = "icc_pow",
    };
    const char *t = int_type(x->dtype);
    switch (x->op) {
    case KIR_FLOOR: case KIR_CEIL: case KIR_ROUND:
        ex(o, x->a[0]);
        return;
    case KIR_NOT:
        put(o, "((%s)~", t);
        ex(o, x->a[0]);
        put(o, ")");
        return;
    case KIR_AND: case KIR_OR: case KIR_XOR:
        put(o, "((%s)(", t);
        ex(o, x->a[0]);
        put(o, x->op == KIR_AND ? " & " : x->op == KIR_OR ? " | " : " ^ ");
        ex(o, x->a[1]);
        put(o, "))");
        return;
    default:
        if ((size_t)x->op >= sizeof fn / sizeof fn[0] || !fn[x->op]) {
            fail(o, "kernel %s: the CUDA backend has no integer '%s'", kir_op_name(x->op));
            return;
        }
        put(o, "%s(", fn[x->op]);
        args(o, x, kir_op_arity(x->op));
    }
}

static void pbool_op(out *o, const kir_expr *x)
{
    switch (x->op) {
    case KIR_NOT:
        put(o, "(!");
        ex(o, x->a[0]);
        put(o, ")");
        return;
    case KIR_ABS: case KIR_FLOOR: case KIR_CEIL: case KIR_ROUND:
        ex(o, x->a[0]);
        return;
    case KIR_AND: case KIR_MIN: case KIR_MUL: case KIR_OR: case KIR_MAX: case KIR_XOR: {
        const char *op = x->op == KIR_XOR ? " != " : (x->op == KIR_OR || x->op == KIR_MAX) ? " || " : " && ";
        put(o, "(");
        ex(o, x->a[0]);
        put(o, "%s", op);
        ex(o, x->a[1]);
        put(o, ")");
        return;
    }
    default:
        fail(o, "kernel %s: the CUDA backend has no bool '%s'", kir_op_name(x->op));
    }
}

/* CAST with the IR's rules (ir/ref/elementwise_cast.c), as the LLVM
 * backend's emit_cast. */
static void pcast(out *o, const kir_expr *x)
{
    ir_dtype from = x->a[0]->dtype, to = x->dtype;
    if (from == to) {
        ex(o, x->a[0]);
        return;
    }
    if (to == IR_BOOL) {
        put(o, "(");
        ex(o, x->a[0]);
        put(o, ir_dtype_is_float(from) ? " != 0.0f)" : " != 0)");
        return;
    }
    if (from == IR_BOOL) {
        put(o, "((%s)(", reg_type(to));
        ex(o, x->a[0]);
        put(o, " ? 1 : 0))");
        return;
    }
    const char *round = to == IR_F16 ? "icc_rh" : to == IR_BF16 ? "icc_rbf" : NULL;
    if (ir_dtype_is_float(to)) {
        if (ir_dtype_is_float(from) && from != IR_F64) {
            /* f32/f16/bf16 in float registers; to f64 exact */
            put(o, "%s(", round ? round : to == IR_F64 ? "(double)" : "");
        } else if (round) {
            /* f64, or an integer (exact in f64 up to 53 bits): through odd */
            put(o, "%s(icc_odd((double)", round);
            ex(o, x->a[0]);
            put(o, "))");
            return;
        } else {
            put(o, "((%s)", reg_type(to));
        }
        ex(o, x->a[0]);
        put(o, ")");
        return;
    }
    if (ir_dtype_is_float(from)) {
        put(o, "icc_f2_%s((double)", ir_dtype_name(to));
        ex(o, x->a[0]);
        put(o, ")");
        return;
    }
    put(o, "((%s)", int_type(to));
    ex(o, x->a[0]);
    put(o, ")");
}

static void pbitcast(out *o, const kir_expr *x)
{
    ir_dtype from = x->a[0]->dtype, to = x->dtype;
    size_t sz = ir_dtype_size(to);
    if (narrow(from) || narrow(to) || from == IR_BOOL || to == IR_BOOL || sz != ir_dtype_size(from) ||
        (sz != 4 && sz != 8)) {
        fail(o, "kernel %s: the CUDA backend has no bitcast %s", "of that pair");
        return;
    }
    bool wide = sz == 8;
    if (ir_dtype_is_float(to) && !ir_dtype_is_float(from))
        put(o, "%s((%s)((", wide ? "icc_u2d" : "icc_u2f", wide ? "icc_u64" : "icc_u32");
    else if (ir_dtype_is_float(from) && !ir_dtype_is_float(to))
        put(o, "((%s)%s((", int_type(to), wide ? "icc_d2u" : "icc_f2u");
    else
        put(o, "((%s)((", reg_type(to));
    ex(o, x->a[0]);
    put(o, ")))");
}

static void ex(out *o, const kir_expr *x)
{
    if (o->err < 0 || o->oom)
        return;
    switch (x->op) {
    case KIR_CONST: pconst(o, x); return;
    case KIR_VAR: put(o, "v%d", x->var); return;
    case KIR_SYM: put(o, "syms[%d]", x->var); return;
    case KIR_ACC: put(o, "a%d", x->var); return;
    case KIR_LETV: put(o, "l%d", x->var); return;
    case KIR_LOAD: pload(o, x); return;
    case KIR_CAST: pcast(o, x); return;
    case KIR_BITCAST: pbitcast(o, x); return;
    case KIR_SELECT:
        put(o, "(");
        ex(o, x->a[0]);
        put(o, " ? ");
        ex(o, x->a[1]);
        put(o, " : ");
        ex(o, x->a[2]);
        put(o, ")");
        return;
    case KIR_LT: case KIR_LE: case KIR_EQ: case KIR_NE: {
        static const char *const cmp[] = {" < ", " <= ", " == ", " != "};
        put(o, "(");
        ex(o, x->a[0]);
        put(o, "%s", cmp[x->op - KIR_LT]);
        ex(o, x->a[1]);
        put(o, ")");
        return;
    }
    default:
        break;
    }
    if (ir_dtype_is_float(x->dtype))
        pfloat_op(o, x);
    else if (x->dtype == IR_BOOL)
        pbool_op(o, x);
    else
        pint_op(o, x);
}

/* ---- statements ---------------------------------------------------------------- */

static void indent(out *o, int depth) { put(o, "%*s", 4 * depth, ""); }

static void block(out *o, const kir_block *b, int depth);

/* &b<buf>[idx]: an intrinsic's memory operand. */
static void paddr(out *o, const kir_iarg *a)
{
    put(o, "&b%d[", a->buf);
    pindex(o, &o->k->bufs[a->buf], a->idx, a->nidx);
    put(o, "]");
}

/* The intrinsics as scalar loops over their lanes (kir_intrinsics.def's
 * semantics); those without a scalar form here are refused. */
static void pintrinsic(out *o, const kir_stmt *s, int depth)
{
    if (s->intrin == KIR_IN_MMA_SYNC) {
        /* the prelude's icc_mma: mma.sync on the GPU, scalar sums emulated */
        const kir_buf *ba = &o->k->bufs[s->args[1].buf], *bb = &o->k->bufs[s->args[2].buf];
        const kir_expr *pa = ba->dims[ba->rank - 1], *pb = bb->dims[bb->rank - 1];
        if (pa->op != KIR_CONST || pb->op != KIR_CONST) {
            fail(o, "kernel %s: %s needs rows of a constant pitch", "mma_sync");
            return;
        }
        indent(o, depth);
        put(o, "icc_mma(");
        paddr(o, &s->args[0]);
        put(o, ", ");
        paddr(o, &s->args[1]);
        put(o, ", %lldll, ", (long long)pa->c.i);
        paddr(o, &s->args[2]);
        put(o, ", %lldll, %s);\n", (long long)pb->c.i, ba->dtype == IR_BF16 ? "true" : "false");
        return;
    }
    if (s->intrin != KIR_IN_PMADDWD_S8 && s->intrin != KIR_IN_PMADDWD_U8) {
        fail(o, "kernel %s: the CUDA backend does not emit the intrinsic '%s'", kir_intrin_name(s->intrin));
        return;
    }
    /* c[i] += a[0] ext(b0[i]) + a[1] ext(b1[i]), i32 wrapping */
    const char *bt = s->intrin == KIR_IN_PMADDWD_S8 ? "icc_i8" : "icc_u8";
    indent(o, depth);
    put(o, "{\n");
    indent(o, depth + 1);
    put(o, "icc_i32 *c = ");
    paddr(o, &s->args[0]);
    put(o, ";\n");
    indent(o, depth + 1);
    put(o, "const icc_i16 *a = ");
    paddr(o, &s->args[1]);
    put(o, ";\n");
    for (int j = 0; j < 2; j++) {
        indent(o, depth + 1);
        put(o, "const %s *p%d = ", bt, j);
        paddr(o, &s->args[2 + j]);
        put(o, ";\n");
    }
    indent(o, depth + 1);
    put(o, "for (int i = 0; i < %d; i++)\n", s->lanes);
    indent(o, depth + 2);
    put(o, "c[i] = icc_add(c[i], icc_add(icc_mul((icc_i32)a[0], (icc_i32)p0[i]), icc_mul((icc_i32)a[1], "
           "(icc_i32)p1[i])));\n");
    indent(o, depth);
    put(o, "}\n");
}

static void pstore(out *o, const kir_stmt *s, int depth)
{
    const kir_buf *b = &o->k->bufs[s->buf];
    indent(o, depth);
    put(o, "b%d[", s->buf);
    pindex(o, b, s->idx, s->nidx);
    put(o, "] = ");
    switch (b->dtype) {
    case IR_F16: put(o, "icc_f2h("); break;
    case IR_BF16: put(o, "icc_f2bf("); break;
    case IR_BOOL: put(o, "(icc_u8)("); break;
    default: put(o, "(");
    }
    ex(o, s->value);
    put(o, ");\n");
}

static void stmt(out *o, const kir_stmt *s, int depth, bool top_parallel)
{
    if (o->err < 0 || o->oom)
        return;
    switch (s->kind) {
    case KIR_S_FOR:
        if (s->loop == KIR_BLOCK || s->loop == KIR_WARP) {
            fail(o, "kernel %s: the CUDA backend does not emit %s loops yet", s->loop == KIR_BLOCK ? "block" : "warp");
            return;
        }
        if (s->loop == KIR_UNROLL) {
            indent(o, depth);
            put(o, "#pragma unroll\n");
        }
        indent(o, depth);
        if (s->loop == KIR_GRID || s->loop == KIR_THREAD) {
            /* grid: the blocks stride over it; thread: the block's threads
             * (a schedule with a barrier inside gives it one trip per
             * thread: the launch's block size, codegen/cuda/plan.c) */
            const char *first = s->loop == KIR_GRID ? "ICC_BID" : "ICC_LTID";
            put(o, "for (icc_i64 v%d = ", s->var);
            ex(o, s->lo);
            put(o, " + %s; v%d < ", first, s->var);
            ex(o, s->hi);
            put(o, "; v%d += %s) {\n", s->var, s->loop == KIR_GRID ? "ICC_NBLOCKS" : "ICC_BDIM");
        } else if (top_parallel) {
            put(o, "for (icc_i64 v%d = icc_imax(", s->var);
            ex(o, s->lo);
            put(o, ", begin) + ICC_TID; v%d < icc_imin(", s->var);
            ex(o, s->hi);
            put(o, ", end); v%d += ICC_NTHREADS) {\n", s->var);
        } else {
            put(o, "for (icc_i64 v%d = ", s->var);
            ex(o, s->lo);
            put(o, "; v%d < ", s->var);
            ex(o, s->hi);
            put(o, "; v%d++) {\n", s->var);
        }
        block(o, &s->body, depth + 1);
        indent(o, depth);
        put(o, "}\n");
        return;
    case KIR_S_STORE:
        pstore(o, s, depth);
        return;
    case KIR_S_ACC_SET:
        indent(o, depth);
        put(o, "a%d = ", s->acc);
        ex(o, s->value);
        put(o, ";\n");
        return;
    case KIR_S_IF:
        indent(o, depth);
        put(o, "if (");
        ex(o, s->cond);
        put(o, ") {\n");
        block(o, &s->body, depth + 1);
        indent(o, depth);
        if (s->orelse.n) {
            put(o, "} else {\n");
            block(o, &s->orelse, depth + 1);
            indent(o, depth);
        }
        put(o, "}\n");
        return;
    case KIR_S_LET:
        indent(o, depth);
        put(o, "const %s l%d = ", reg_type(s->value->dtype), s->let);
        ex(o, s->value);
        put(o, ";\n");
        return;
    case KIR_S_FAIL:
        indent(o, depth);
        put(o, "b%d[0] = %d;\n", o->k->status_buf, (int)(ICC_ERR_INVALID | ((o->k->fail_base + s->msg) << 8)));
        return;
    case KIR_S_BARRIER:
        if (s->scope != KIR_SCOPE_BLOCK) {
            fail(o, "kernel %s: the CUDA backend does not emit %s yet", "warp barriers");
            return;
        }
        indent(o, depth);
        put(o, "ICC_SYNC();\n");
        return;
    case KIR_S_INTRINSIC:
        if (s->intrin == KIR_IN_PREFETCH_L2)
            return; /* a hint: dropped */
        pintrinsic(o, s, depth);
        return;
    }
}

static void block(out *o, const kir_block *b, int depth)
{
    for (int i = 0; i < b->n; i++)
        stmt(o, b->s[i], depth, false);
}

static bool is_parallel(const kir_stmt *s) { return s->kind == KIR_S_FOR && s->loop == KIR_PARALLEL; }
static bool is_grid(const kir_stmt *s) { return s->kind == KIR_S_FOR && s->loop == KIR_GRID; }

int64_t cg_cuda_block_threads(const kir_kernel *k, int64_t *trips)
{
    int64_t most = 0;
    if (trips)
        *trips = 0;
    for (int i = 0; i < k->body.n; i++) {
        const kir_stmt *g = k->body.s[i];
        if (trips && is_grid(g))
            *trips = g->lo->op == KIR_CONST && g->hi->op == KIR_CONST ? g->hi->c.i - g->lo->c.i : -1;
        for (int j = 0; is_grid(g) && j < g->body.n; j++) {
            const kir_stmt *t = g->body.s[j];
            if (t->kind == KIR_S_FOR && t->loop == KIR_THREAD && t->lo->op == KIR_CONST && t->hi->op == KIR_CONST &&
                t->hi->c.i - t->lo->c.i > most)
                most = t->hi->c.i - t->lo->c.i;
        }
    }
    return most;
}

int cg_cuda_emit_kernel(const kir_kernel *k, char **src, size_t *len, icc_diag *d)
{
    out o = {.k = k, .s = *src, .len = *len, .cap = *src ? *len + 1 : 0, .d = d};
    /* With a PARALLEL loop at the top, the CPU calls the kernel once per
     * chunk of its range, and each call also runs the other top-level
     * statements, which the lowering therefore makes safe to repeat and
     * to race with themselves; every GPU thread runs them the same way.
     * Without one the kernel is called once: thread 0 runs it. */
    int npar = 0, ngrid = 0;
    for (int i = 0; i < k->body.n; i++) {
        npar += is_parallel(k->body.s[i]);
        ngrid += is_grid(k->body.s[i]);
    }
    /* a GPU schedule: the block's threads are its thread loops' trips */
    int64_t bdim = ngrid ? cg_cuda_block_threads(k, NULL) : 0;
    if (ngrid && (bdim < 1 || bdim > 1024))
        return ir_errorf(d, "kernel %s: its thread loops need a constant trip count from 1 to 1024", k->name);
    put(&o, "\nICC_KERNEL %s(", k->name);
    bool first = true;
    for (int i = 0; i < k->nbufs; i++) {
        const kir_buf *b = &k->bufs[i];
        if (b->kind == KIR_BUF_SCRATCH && b->space != KIR_SPACE_KERNEL)
            continue;
        bool ro = !b->written && b->kind != KIR_BUF_SCRATCH && b->kind != KIR_BUF_STATUS;
        put(&o, "%s%s%s *%sb%d", first ? "" : ", ", ro ? "const " : "",
            b->kind == KIR_BUF_STATUS ? "icc_i32" : mem_type(b->dtype), ro ? "__restrict__ " : "", i);
        first = false;
    }
    put(&o, "%sconst icc_i64 *syms, icc_i64 begin, icc_i64 end)\n{\n", first ? "" : ", ");
    put(&o, "    (void)syms; (void)begin; (void)end;\n");
    for (int i = 0; i < k->nbufs; i++) {
        const kir_buf *b = &k->bufs[i];
        if (b->kind != KIR_BUF_SCRATCH || b->space == KIR_SPACE_KERNEL)
            continue;
        int64_t bytes;
        if (kir_buf_bytes(b, &bytes) < 0)
            return ir_errorf(d, "kernel %s: scratch b%d has a symbolic size", k->name, i);
        put(&o, "    %s%s b%d[%lld];\n", b->space == KIR_SPACE_BLOCK ? "alignas(16) __shared__ " : "", mem_type(b->dtype), i,
            (long long)(bytes / (int64_t)ir_dtype_size(b->dtype)));
    }
    for (int i = 0; i < k->naccs; i++)
        put(&o, "    %s a%d = 0;\n", reg_type(k->acc_dtype[i]), i);
    int depth = 1;
    if (!npar && !ngrid) {
        put(&o, "    if (ICC_TID != 0)\n        return;\n");
    }
    for (int i = 0; i < k->body.n; i++)
        stmt(&o, k->body.s[i], depth, is_parallel(k->body.s[i]));
    put(&o, "}\n");
    /* for the CPU emulation (ICC_CUDA_EMU, tests/cuda/emu.h): the kernel
     * behind the CPU backend's calling convention, bufs[i] for buffer i */
    put(&o, "#ifdef ICC_CUDA_EMU\nextern \"C\" void %s_emu(void *const *bufs, const icc_i64 *syms, icc_i64 begin, "
            "icc_i64 end)\n{\n", k->name);
    /* a GPU schedule: the first of the launcher's calls runs the whole
     * grid, a thread per pthread so that barriers wait (emu.h) */
    if (ngrid)
        put(&o, "    if (ICC_TID != 0)\n        return;\n    icc_emu_grid(%lld, [&]() { ", (long long)bdim);
    else
        put(&o, "    ");
    put(&o, "%s(", k->name);
    first = true;
    for (int i = 0; i < k->nbufs; i++) {
        const kir_buf *b = &k->bufs[i];
        if (b->kind == KIR_BUF_SCRATCH && b->space != KIR_SPACE_KERNEL)
            continue;
        put(&o, "%s(%s *)bufs[%d]", first ? "" : ", ", b->kind == KIR_BUF_STATUS ? "icc_i32" : mem_type(b->dtype), i);
        first = false;
    }
    put(&o, "%ssyms, begin, end);%s\n}\n", first ? "" : ", ", ngrid ? " });" : "");
    /* ... and behind cuLaunchKernel's: params[i] points at argument i
     * (tests/cuda/fake_driver.c launches it) */
    put(&o, "extern \"C\" void %s_launch(void **params)\n{\n", k->name);
    if (ngrid)
        put(&o, "    if (ICC_TID != 0)\n        return;\n    icc_emu_grid(%lld, [&]() { ", (long long)bdim);
    else
        put(&o, "    ");
    put(&o, "%s(", k->name);
    int np = 0;
    for (int i = 0; i < k->nbufs; i++) {
        const kir_buf *b = &k->bufs[i];
        if (b->kind == KIR_BUF_SCRATCH && b->space != KIR_SPACE_KERNEL)
            continue;
        const char *t = b->kind == KIR_BUF_STATUS ? "icc_i32" : mem_type(b->dtype);
        put(&o, "%s*(%s **)params[%d]", np ? ", " : "", t, np);
        np++;
    }
    put(&o, "%s*(const icc_i64 **)params[%d], *(icc_i64 *)params[%d], *(icc_i64 *)params[%d]);%s\n}\n#endif\n",
        np ? ", " : "", np, np + 1, np + 2, ngrid ? " });" : "");
    if (o.oom) {
        free(o.s);
        *src = NULL;
        *len = 0;
        return ir_errorf(d, "out of memory emitting CUDA C");
    }
    *src = o.s;
    *len = o.len;
    return o.err;
}
