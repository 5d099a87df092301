/* emit.c - lowers one kernel of the kernel IR to an LLVM function: buffer
 * base pointers and row-major strides computed once in the entry block,
 * counted i64 loops (the top-level PARALLEL loop clamped to [begin, end),
 * innermost VECTOR/UNROLL loops with llvm.loop hints, VECTOR loops around
 * other loops or carried sums widened here), accumulators as entry-block
 * allocas that SROA turns into registers, and scalar expressions for every
 * dtype with the reference interpreter's semantics: integer division and
 * remainder by zero give 0, float->int casts truncate and saturate with
 * NaN -> 0 (llvm.fptosi.sat), f16/bf16 live in f32 registers holding
 * exactly representable values and are rounded after each inexact op, bool
 * is i1 in registers and one byte in memory. Memory accesses of distinct
 * buffers carry scoped noalias metadata, which lets the loop vectoriser do
 * without runtime overlap checks. Lets are SSA values; scratch buffers,
 * GPU loops and intrinsics are in emit_ext.c. */
#include "codegen/llvm/emit.h"
#include "codegen/kir_math.h"
#include "codegen/llvm/emit_internal.h"
#include "codegen/llvm/emit_math.h"
#include "icc/runtime.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/DebugInfo.h>


/* ---- types and small helpers ---------------------------------------------- */

static LLVMTypeRef int_type(em *e, ir_dtype dt)
{
    switch (ir_dtype_size(dt)) {
    case 1: return e->i8;
    case 2: return e->i16;
    case 4: return e->i32;
    default: return e->i64;
    }
}

/* The register type: f16/bf16 compute in f32, bool is i1. */
LLVMTypeRef em_reg_type(em *e, ir_dtype dt)
{
    switch (dt) {
    case IR_F32: case IR_F16: case IR_BF16: return e->f32;
    case IR_F64: return e->f64;
    case IR_BOOL: return e->i1;
    default: return int_type(e, dt);
    }
}

/* The in-memory element type: f16/bf16 as i16, bool as i8. */
LLVMTypeRef em_mem_type(em *e, ir_dtype dt)
{
    switch (dt) {
    case IR_F32: return e->f32;
    case IR_F64: return e->f64;
    default: return int_type(e, dt);
    }
}

static bool is_narrow_float(ir_dtype dt) { return dt == IR_F16 || dt == IR_BF16; }

LLVMValueRef em_ci64(em *e, int64_t v) { return LLVMConstInt(e->i64, (unsigned long long)v, 1); }

/* Calls an overloaded intrinsic by name, the overload types given. */
LLVMValueRef em_intr(em *e, const char *name, LLVMTypeRef *ovl, size_t novl, LLVMValueRef *args,
                         unsigned nargs)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(e->m, id, ovl, novl);
    LLVMTypeRef fty = LLVMIntrinsicGetType(e->cx, id, ovl, novl);
    return LLVMBuildCall2(e->b, fty, f, args, nargs, "");
}

static LLVMValueRef intr1(em *e, const char *name, LLVMValueRef x)
{
    LLVMTypeRef ty = LLVMTypeOf(x);
    return em_intr(e, name, &ty, 1, &x, 1);
}

static LLVMValueRef intr2(em *e, const char *name, LLVMValueRef x, LLVMValueRef y)
{
    LLVMTypeRef ty = LLVMTypeOf(x);
    LLVMValueRef args[] = {x, y};
    return em_intr(e, name, &ty, 1, args, 2);
}

/* A libm function of one argument (tanhf, erf...), declared pure so it
 * can be hoisted and CSE'd. */
static LLVMValueRef libm1(em *e, const char *name, LLVMValueRef x)
{
    LLVMTypeRef ty = LLVMTypeOf(x);
    LLVMTypeRef fty = LLVMFunctionType(ty, &ty, 1, 0);
    LLVMValueRef f = LLVMGetNamedFunction(e->m, name);
    if (!f) {
        f = LLVMAddFunction(e->m, name, fty);
        const char *attrs[] = {"nounwind", "willreturn", "memory"};
        for (int i = 0; i < 3; i++) {
            unsigned kind = LLVMGetEnumAttributeKindForName(attrs[i], strlen(attrs[i]));
            if (kind) /* memory(none) encodes as 0 */
                LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                                        LLVMCreateEnumAttribute(e->cx, kind, 0));
        }
    }
    e->libm_calls++;
    return LLVMBuildCall2(e->b, fty, f, &x, 1, "");
}

/* ---- f16 / bf16 ------------------------------------------------------------ */

/* Rounds the f32 x to the nearest (even) value of dt, kept in f32. bf16 is
 * done with integer ops (as ir_f32_to_bf16) so no libgcc helper is needed;
 * f16 goes through LLVM's half (F16C instructions where available). */
static LLVMValueRef round_narrow(em *e, LLVMValueRef x, ir_dtype dt)
{
    LLVMBuilderRef b = e->b;
    if (dt == IR_F16)
        return LLVMBuildFPExt(b, LLVMBuildFPTrunc(b, x, e->half, ""), e->f32, "");
    if (dt != IR_BF16)
        return x;
    LLVMValueRef u = LLVMBuildBitCast(b, x, e->i32, "");
    LLVMValueRef c16 = LLVMConstInt(e->i32, 16, 0), hi = LLVMConstInt(e->i32, 0xffff0000u, 0);
    LLVMValueRef odd = LLVMBuildAnd(b, LLVMBuildLShr(b, u, c16, ""), LLVMConstInt(e->i32, 1, 0), "");
    LLVMValueRef r = LLVMBuildAdd(b, u, LLVMBuildAdd(b, odd, LLVMConstInt(e->i32, 0x7fff, 0), ""), "");
    LLVMValueRef qnan = LLVMBuildOr(b, u, LLVMConstInt(e->i32, 0x400000, 0), "");
    LLVMValueRef isnan = LLVMBuildFCmp(b, LLVMRealUNO, x, x, "");
    r = LLVMBuildAnd(b, LLVMBuildSelect(b, isnan, qnan, r, ""), hi, "");
    return LLVMBuildBitCast(b, r, e->f32, "");
}

/* f64 -> f32 rounded to odd: rounding that once more to f16/bf16 is then
 * the correctly rounded result (the reference does the same). */
static LLVMValueRef f64_to_f32_odd(em *e, LLVMValueRef x)
{
    LLVMBuilderRef b = e->b;
    LLVMValueRef r = LLVMBuildFPTrunc(b, x, e->f32, "");
    LLVMValueRef back = LLVMBuildFPExt(b, r, e->f64, "");
    LLVMValueRef inexact = LLVMBuildFCmp(b, LLVMRealONE, back, x, "");
    LLVMValueRef away = LLVMBuildFCmp(b, LLVMRealOGT, intr1(e, "llvm.fabs", back), intr1(e, "llvm.fabs", x), "");
    LLVMValueRef u = LLVMBuildBitCast(b, r, e->i32, "");
    LLVMValueRef tz = LLVMBuildSelect(b, away, LLVMBuildSub(b, u, LLVMConstInt(e->i32, 1, 0), ""), u, "");
    tz = LLVMBuildOr(b, tz, LLVMConstInt(e->i32, 1, 0), "");
    return LLVMBuildBitCast(b, LLVMBuildSelect(b, inexact, tz, u, ""), e->f32, "");
}

/* ---- memory ------------------------------------------------------------------ */


/* ---- widened values ----------------------------------------------------
 * Inside a VECTOR loop the emitter widens itself (emit_widened), a value
 * is either uniform (a scalar, the same for every lane) or varying (a
 * <wlanes x T> vector); uniform operands of a varying op are splatted. */

static bool is_vec(LLVMValueRef v) { return LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMVectorTypeKind; }

static LLVMValueRef splat(em *e, LLVMValueRef v)
{
    if (is_vec(v))
        return v;
    LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(v), e->wlanes);
    LLVMValueRef one = LLVMBuildInsertElement(e->b, LLVMGetPoison(vt), v, LLVMConstInt(e->i32, 0, 0), "");
    return LLVMBuildShuffleVector(e->b, one, LLVMGetPoison(vt), LLVMConstNull(LLVMVectorType(e->i32, e->wlanes)), "");
}

/* v, splatted when `like` is a vector. */
static LLVMValueRef splat_like(em *e, LLVMValueRef v, LLVMValueRef like)
{
    return is_vec(like) ? splat(e, v) : v;
}

/* The address of buf[idx...]: the row-major linear index times the element
 * (a vector of addresses when an index is varying). */
LLVMValueRef em_elem_ptr(em *e, int buf, int nidx, kir_expr *const *idx)
{
    LLVMValueRef lin = NULL;
    for (int i = 0; i < nidx; i++) {
        LLVMValueRef v = em_eval(e, idx[i]);
        if (!v)
            return NULL;
        if (i < nidx - 1)
            v = LLVMBuildNSWMul(e->b, v, splat_like(e, e->stride[buf][i], v), "");
        lin = lin ? LLVMBuildNSWAdd(e->b, splat_like(e, lin, v), splat_like(e, v, lin), "") : v;
    }
    if (!lin)
        lin = em_ci64(e, 0);
    return LLVMBuildInBoundsGEP2(e->b, em_mem_type(e, e->k->bufs[buf].dtype), e->base[buf], &lin, 1, "");
}

void em_tag_access(em *e, LLVMValueRef inst, int buf)
{
    if (e->scope_md[buf])
        LLVMSetMetadata(inst, e->kind_scope, e->scope_md[buf]);
    if (e->noalias_md[buf])
        LLVMSetMetadata(inst, e->kind_noalias, e->noalias_md[buf]);
}

static bool wdep(em *e, const kir_expr *x);
static bool wunit(em *e, const kir_expr *x);

/* The address of buf[idx...] for the chunk's first lane: the vector
 * variable bound to its scalar base, without memoising (the same nodes
 * are varying elsewhere in the statement). */
static LLVMValueRef first_lane_ptr(em *e, int buf, int nidx, kir_expr *const *idx)
{
    LLVMValueRef saved = e->vars[e->wvar];
    bool nm = e->no_memo;
    e->vars[e->wvar] = e->wbase;
    e->no_memo = true;
    LLVMValueRef p = em_elem_ptr(e, buf, nidx, idx);
    e->vars[e->wvar] = saved;
    e->no_memo = nm;
    return p;
}

static LLVMValueRef all_lanes(em *e)
{
    return e->wmask ? e->wmask : LLVMConstAllOnes(LLVMVectorType(e->i1, e->wlanes));
}

/* x is the vector variable times a constant 2..4 plus a uniform offset
 * (and the span of W lanes fits a shuffle): that constant, else 0. */
static int wstride(em *e, const kir_expr *x)
{
    if (x->op == KIR_ADD) {
        if (!wdep(e, x->a[1]))
            return wstride(e, x->a[0]);
        return wdep(e, x->a[0]) ? 0 : wstride(e, x->a[1]);
    }
    if (x->op != KIR_MUL || e->wlanes > 64)
        return 0;
    for (int i = 0; i < 2; i++) {
        const kir_expr *v = x->a[i], *c = x->a[1 - i];
        if (v->op == KIR_VAR && v->var == e->wvar && c->op == KIR_CONST && ir_dtype_is_int(c->dtype) &&
            c->c.i >= 2 && c->c.i <= 4)
            return (int)c->c.i;
    }
    return 0;
}

/* Lanes of an f16/bf16 buffer as f32 (exact): bf16 is the high half of
 * an f32 (zero-extend, shift left 16); f16 goes through LLVM's half
 * (vcvtph2ps with F16C). Other dtypes are returned as they are. */
static LLVMValueRef wnarrow(em *e, LLVMValueRef v, ir_dtype dt)
{
    if (!v || !is_narrow_float(dt))
        return v;
    unsigned w = LLVMGetVectorSize(LLVMTypeOf(v));
    if (dt == IR_F16)
        return LLVMBuildFPExt(e->b, LLVMBuildBitCast(e->b, v, LLVMVectorType(e->half, w), ""),
                              LLVMVectorType(e->f32, w), "");
    LLVMTypeRef vi = LLVMVectorType(e->i32, w);
    v = LLVMBuildShl(e->b, LLVMBuildZExt(e->b, v, vi, ""), splat_like(e, LLVMConstInt(e->i32, 16, 0), v), "");
    return LLVMBuildBitCast(e->b, v, LLVMVectorType(e->f32, w), "");
}

/* A varying load (the element dtype is f32, f64, an integer, or f16/bf16
 * read as f32: wcheck):
 * contiguous when only the last index varies and by the vector variable
 * itself (plus a uniform offset), masked in the tail chunk; a gather
 * otherwise. */
static LLVMValueRef emit_wload(em *e, const kir_expr *x, LLVMValueRef mask)
{
    ir_dtype dt = e->k->bufs[x->buf].dtype;
    LLVMTypeRef et = em_mem_type(e, dt), vt = LLVMVectorType(et, e->wlanes);
    unsigned align = (unsigned)ir_dtype_size(dt);
    bool contig = wunit(e, x->idx[x->nidx - 1]);
    for (int i = 0; i < x->nidx - 1; i++)
        contig = contig && !wdep(e, x->idx[i]);
    int st = contig ? 0 : wstride(e, x->idx[x->nidx - 1]);
    for (int i = 0; st && i < x->nidx - 1; i++)
        if (wdep(e, x->idx[i]))
            st = 0;
    LLVMValueRef v;
    if (st) {
        /* every st-th element: one wide load of the lanes' span (only the
         * lanes' own elements enabled) and a shuffle, not a gather */
        LLVMValueRef p = first_lane_ptr(e, x->buf, x->nidx, x->idx), ix[256];
        if (!p)
            return NULL;
        unsigned W = e->wlanes, WS = W * (unsigned)st;
        LLVMValueRef m = mask ? mask : e->wmask, m2;
        if (m) {
            for (unsigned i = 0; i < WS; i++)
                ix[i] = LLVMConstInt(e->i32, i % (unsigned)st ? W : i / (unsigned)st, 0);
            m2 = LLVMBuildShuffleVector(e->b, m, LLVMConstNull(LLVMTypeOf(m)), LLVMConstVector(ix, WS), "");
        } else {
            for (unsigned i = 0; i < WS; i++)
                ix[i] = LLVMConstInt(e->i1, i % (unsigned)st == 0, 0);
            m2 = LLVMConstVector(ix, WS);
        }
        LLVMTypeRef wt = LLVMVectorType(et, WS), ovl[] = {wt, e->ptr};
        LLVMValueRef args[] = {p, LLVMConstInt(e->i32, align, 0), m2, LLVMConstNull(wt)};
        LLVMValueRef wide = em_intr(e, "llvm.masked.load", ovl, 2, args, 4);
        em_tag_access(e, wide, x->buf);
        for (unsigned i = 0; i < W; i++)
            ix[i] = LLVMConstInt(e->i32, i * (unsigned)st, 0);
        return wnarrow(e, LLVMBuildShuffleVector(e->b, wide, LLVMGetPoison(wt), LLVMConstVector(ix, W), ""), dt);
    }
    if (contig) {
        LLVMValueRef p = first_lane_ptr(e, x->buf, x->nidx, x->idx);
        if (!p)
            return NULL;
        if (!e->wmask && !mask) {
            v = LLVMBuildLoad2(e->b, vt, p, "");
            LLVMSetAlignment(v, align);
        } else {
            LLVMTypeRef ovl[] = {vt, e->ptr};
            LLVMValueRef args[] = {p, LLVMConstInt(e->i32, align, 0), mask ? mask : e->wmask, LLVMConstNull(vt)};
            v = em_intr(e, "llvm.masked.load", ovl, 2, args, 4);
        }
    } else {
        LLVMValueRef p = em_elem_ptr(e, x->buf, x->nidx, x->idx);
        if (!p)
            return NULL;
        p = splat(e, p);
        LLVMTypeRef ovl[] = {vt, LLVMTypeOf(p)};
        LLVMValueRef args[] = {p, LLVMConstInt(e->i32, align, 0), mask ? mask : all_lanes(e), LLVMConstNull(vt)};
        v = em_intr(e, "llvm.masked.gather", ovl, 2, args, 4);
    }
    em_tag_access(e, v, x->buf);
    return wnarrow(e, v, dt);
}

static LLVMValueRef emit_load(em *e, const kir_expr *x)
{
    if (e->wvar >= 0 && !e->no_memo && wdep(e, x))
        return emit_wload(e, x, NULL);
    LLVMValueRef p = em_elem_ptr(e, x->buf, x->nidx, x->idx);
    if (!p)
        return NULL;
    ir_dtype dt = e->k->bufs[x->buf].dtype;
    LLVMValueRef v = LLVMBuildLoad2(e->b, em_mem_type(e, dt), p, "");
    em_tag_access(e, v, x->buf);
    switch (dt) {
    case IR_F16:
        return LLVMBuildFPExt(e->b, LLVMBuildBitCast(e->b, v, e->half, ""), e->f32, "");
    case IR_BF16:
        v = LLVMBuildShl(e->b, LLVMBuildZExt(e->b, v, e->i32, ""), LLVMConstInt(e->i32, 16, 0), "");
        return LLVMBuildBitCast(e->b, v, e->f32, "");
    case IR_BOOL:
        return LLVMBuildICmp(e->b, LLVMIntNE, v, LLVMConstInt(e->i8, 0, 0), "");
    default:
        return v;
    }
}

/* A store in a widened loop: contiguous (wcheck), masked in the tail. */
static int emit_wstore(em *e, const kir_stmt *s)
{
    LLVMValueRef v = em_eval(e, s->value);
    LLVMValueRef p = v ? first_lane_ptr(e, s->buf, s->nidx, s->idx) : NULL;
    if (!p)
        return -1;
    v = splat(e, v);
    unsigned align = (unsigned)ir_dtype_size(e->k->bufs[s->buf].dtype);
    LLVMValueRef st;
    if (!e->wmask) {
        st = LLVMBuildStore(e->b, v, p);
        LLVMSetAlignment(st, align);
    } else {
        LLVMTypeRef ovl[] = {LLVMTypeOf(v), e->ptr};
        LLVMValueRef args[] = {v, p, LLVMConstInt(e->i32, align, 0), e->wmask};
        st = em_intr(e, "llvm.masked.store", ovl, 2, args, 4);
    }
    em_tag_access(e, st, s->buf);
    return 0;
}

/* prefetch_l2: llvm.prefetch (read, locality 2: prefetcht1 on x86) of the
 * element's line, in a widened loop the first lane's. */
static int emit_prefetch(em *e, const kir_stmt *s)
{
    const kir_iarg *a = &s->args[0];
    LLVMValueRef p = e->wvar >= 0 ? first_lane_ptr(e, a->buf, a->nidx, a->idx) : em_elem_ptr(e, a->buf, a->nidx, a->idx);
    if (!p)
        return -1;
    LLVMTypeRef pt = LLVMTypeOf(p);
    unsigned id = LLVMLookupIntrinsicID("llvm.prefetch", 13);
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(e->m, id, &pt, 1);
    LLVMValueRef args[] = {p, LLVMConstInt(e->i32, 0, 0), LLVMConstInt(e->i32, 2, 0), LLVMConstInt(e->i32, 1, 0)};
    LLVMBuildCall2(e->b, LLVMIntrinsicGetType(e->cx, id, &pt, 1), fn, args, 4, "");
    return 0;
}

static int emit_store(em *e, const kir_stmt *s)
{
    if (e->wvar >= 0)
        return emit_wstore(e, s);
    LLVMValueRef v = em_eval(e, s->value);
    LLVMValueRef p = v ? em_elem_ptr(e, s->buf, s->nidx, s->idx) : NULL;
    if (!p)
        return -1;
    switch (e->k->bufs[s->buf].dtype) {
    case IR_F16: /* exact: v holds an f16 value */
        v = LLVMBuildBitCast(e->b, LLVMBuildFPTrunc(e->b, v, e->half, ""), e->i16, "");
        break;
    case IR_BF16:
        v = LLVMBuildLShr(e->b, LLVMBuildBitCast(e->b, v, e->i32, ""), LLVMConstInt(e->i32, 16, 0), "");
        v = LLVMBuildTrunc(e->b, v, e->i16, "");
        break;
    case IR_BOOL:
        v = LLVMBuildZExt(e->b, v, e->i8, "");
        break;
    default:
        break;
    }
    em_tag_access(e, LLVMBuildStore(e->b, v, p), s->buf);
    return 0;
}

/* The value of graph symbol id, loaded once at entry. */
static LLVMValueRef sym_value(em *e, int id)
{
    if (id >= e->nsyms) {
        int n = id + 8;
        LLVMValueRef *s = realloc(e->syms, sizeof *s * (size_t)n);
        if (!s) {
            ir_errorf(e->d, "out of memory");
            return NULL;
        }
        memset(s + e->nsyms, 0, sizeof *s * (size_t)(n - e->nsyms));
        e->syms = s;
        e->nsyms = n;
    }
    if (!e->syms[id]) {
        LLVMValueRef p = LLVMBuildInBoundsGEP2(e->eb, e->i64, e->syms_arg, (LLVMValueRef[]){em_ci64(e, id)}, 1, "");
        e->syms[id] = LLVMBuildLoad2(e->eb, e->i64, p, "");
    }
    return e->syms[id];
}

/* ---- scalar expressions -------------------------------------------------- */

static LLVMValueRef emit_const(em *e, const kir_expr *x)
{
    switch (x->dtype) {
    case IR_F32: return LLVMConstReal(e->f32, (float)x->c.f);
    case IR_F64: return LLVMConstReal(e->f64, x->c.f);
    case IR_F16: return LLVMConstReal(e->f32, ir_f16_to_f32(ir_f32_to_f16((float)x->c.f)));
    case IR_BF16: return LLVMConstReal(e->f32, ir_bf16_to_f32(ir_f32_to_bf16((float)x->c.f)));
    case IR_BOOL: return LLVMConstInt(e->i1, x->c.i != 0, 0);
    default: return LLVMConstInt(int_type(e, x->dtype), (unsigned long long)x->c.i, 1);
    }
}

/* CAST with the reference's rules (ir/ref/elementwise_cast.c). */
static LLVMValueRef emit_cast(em *e, LLVMValueRef v, ir_dtype from, ir_dtype to)
{
    LLVMBuilderRef b = e->b;
    LLVMTypeRef rt = em_reg_type(e, to);
    if (from == to)
        return v;
    if (to == IR_BOOL)
        return ir_dtype_is_float(from) ? LLVMBuildFCmp(b, LLVMRealUNE, v, LLVMConstReal(LLVMTypeOf(v), 0), "")
                                       : LLVMBuildICmp(b, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
    if (from == IR_BOOL)
        return ir_dtype_is_float(to) ? LLVMBuildUIToFP(b, v, rt, "") : LLVMBuildZExt(b, v, rt, "");
    if (ir_dtype_is_float(from) && ir_dtype_is_float(to)) {
        if (to == IR_F64)
            return LLVMBuildFPExt(b, v, e->f64, "");
        if (from == IR_F64)
            return to == IR_F32 ? LLVMBuildFPTrunc(b, v, e->f32, "") : round_narrow(e, f64_to_f32_odd(e, v), to);
        return round_narrow(e, v, to); /* f32/f16/bf16 in f32 registers */
    }
    if (ir_dtype_is_float(from) && ir_dtype_size(to) <= 2) {
        /* to 8 or 16 bits: clamped in float (maxnum turns NaN into the low
         * bound), truncated through i32, NaN then 0, which is what
         * fptoi.sat computes; x86 scalarizes fptoi.sat to i8/i16 vectors
         * (vcvttss2si + vpinsrb per lane), this form stays in vectors */
        bool sg = ir_dtype_is_signed(to);
        double lo = sg ? -(double)(1 << (8 * ir_dtype_size(to) - 1)) : 0;
        double hi = sg ? (double)(1 << (8 * ir_dtype_size(to) - 1)) - 1 : (double)((1 << (8 * ir_dtype_size(to))) - 1);
        LLVMTypeRef ft = LLVMTypeOf(v), it = e->i32, et = is_vec(v) ? LLVMGetElementType(ft) : ft;
        if (is_vec(v)) {
            it = LLVMVectorType(e->i32, LLVMGetVectorSize(ft));
            rt = LLVMVectorType(rt, LLVMGetVectorSize(ft));
        }
        LLVMValueRef lv = splat_like(e, LLVMConstReal(et, lo), v), hv = splat_like(e, LLVMConstReal(et, hi), v);
        LLVMValueRef c = intr2(e, "llvm.minnum", intr2(e, "llvm.maxnum", v, lv), hv);
        LLVMValueRef r = LLVMBuildTrunc(b, LLVMBuildFPToSI(b, c, it, ""), rt, "");
        if (sg) /* NaN: maxnum gave the low bound, not 0 */
            r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, v, v, ""), LLVMConstNull(LLVMTypeOf(r)), r, "");
        return r;
    }
    if (ir_dtype_is_float(from)) {
        LLVMTypeRef ovl[] = {rt, LLVMTypeOf(v)};
        return em_intr(e, ir_dtype_is_signed(to) ? "llvm.fptosi.sat" : "llvm.fptoui.sat", ovl, 2, &v, 1);
    }
    bool sgn = ir_dtype_is_signed(from);
    if (ir_dtype_is_float(to)) {
        if (!is_narrow_float(to)) {
            if (is_vec(v)) /* widened: an exponent computed in integer lanes */
                rt = LLVMVectorType(rt, LLVMGetVectorSize(LLVMTypeOf(v)));
            return sgn ? LLVMBuildSIToFP(b, v, rt, "") : LLVMBuildUIToFP(b, v, rt, "");
        }
        /* exact in f64 up to 53 bits, then one more rounding through odd */
        LLVMValueRef dv = sgn ? LLVMBuildSIToFP(b, v, e->f64, "") : LLVMBuildUIToFP(b, v, e->f64, "");
        return round_narrow(e, f64_to_f32_odd(e, dv), to);
    }
    LLVMTypeRef ft = LLVMTypeOf(v);
    if (is_vec(v)) { /* widened integer index math */
        ft = LLVMGetElementType(ft);
        rt = LLVMVectorType(rt, LLVMGetVectorSize(LLVMTypeOf(v)));
    }
    unsigned fb = LLVMGetIntTypeWidth(ft), tb = LLVMGetIntTypeWidth(is_vec(v) ? LLVMGetElementType(rt) : rt);
    if (fb == tb)
        return v;
    if (fb > tb)
        return LLVMBuildTrunc(b, v, rt, "");
    return sgn ? LLVMBuildSExt(b, v, rt, "") : LLVMBuildZExt(b, v, rt, "");
}

/* Integer DIV/REM: x/0 and x%0 are 0, INT_MIN/-1 wraps (the reference's
 * s_div/s_rem), so the divisor is replaced by 1 where LLVM would trap. */
static LLVMValueRef emit_idiv(em *e, kir_op op, bool sgn, LLVMValueRef a, LLVMValueRef y)
{
    LLVMBuilderRef b = e->b;
    LLVMTypeRef ty = LLVMTypeOf(a);
    LLVMValueRef zero = LLVMConstNull(ty);
    LLVMValueRef one = is_vec(a) ? splat(e, LLVMConstInt(LLVMGetElementType(ty), 1, 0)) : LLVMConstInt(ty, 1, 0);
    LLVMValueRef isz = LLVMBuildICmp(b, LLVMIntEQ, y, zero, "");
    if (!sgn) {
        LLVMValueRef q = op == KIR_DIV ? LLVMBuildUDiv(b, a, LLVMBuildSelect(b, isz, one, y, ""), "")
                                       : LLVMBuildURem(b, a, LLVMBuildSelect(b, isz, one, y, ""), "");
        return LLVMBuildSelect(b, isz, zero, q, "");
    }
    LLVMValueRef ism1 = LLVMBuildICmp(b, LLVMIntEQ, y, LLVMConstAllOnes(ty), "");
    LLVMValueRef bad = LLVMBuildOr(b, isz, ism1, "");
    LLVMValueRef sy = LLVMBuildSelect(b, bad, one, y, "");
    if (op == KIR_REM)
        return LLVMBuildSelect(b, bad, zero, LLVMBuildSRem(b, a, sy, ""), "");
    LLVMValueRef q = LLVMBuildSDiv(b, a, sy, "");
    q = LLVMBuildSelect(b, ism1, LLVMBuildSub(b, zero, a, ""), q, "");
    return LLVMBuildSelect(b, isz, zero, q, "");
}

static LLVMValueRef emit_cmp(em *e, kir_op op, ir_dtype dt, LLVMValueRef a, LLVMValueRef y)
{
    if (ir_dtype_is_float(dt)) {
        static const LLVMRealPredicate fp[] = {LLVMRealOLT, LLVMRealOLE, LLVMRealOEQ, LLVMRealUNE};
        return LLVMBuildFCmp(e->b, fp[op - KIR_LT], a, y, "");
    }
    bool sgn = ir_dtype_is_signed(dt);
    LLVMIntPredicate p = op == KIR_LT ? (sgn ? LLVMIntSLT : LLVMIntULT)
                       : op == KIR_LE ? (sgn ? LLVMIntSLE : LLVMIntULE)
                       : op == KIR_EQ ? LLVMIntEQ : LLVMIntNE;
    return LLVMBuildICmp(e->b, p, a, y, "");
}

static LLVMValueRef emit_float_op(em *e, const kir_expr *x, LLVMValueRef *v)
{
    LLVMBuilderRef b = e->b;
    bool dbl = x->dtype == IR_F64;
    switch (x->op) {
    case KIR_NEG: return LLVMBuildFNeg(b, v[0], "");
    case KIR_ABS: return intr1(e, "llvm.fabs", v[0]);
    /* f32 exp/log/tanh/erf arrive expanded (kir_expand_math, picked by
     * cg_llvm_emit_kernel); what is left is f64 */
    case KIR_EXP: return intr1(e, "llvm.exp", v[0]);
    case KIR_LOG: return intr1(e, "llvm.log", v[0]);
    case KIR_SQRT: return intr1(e, "llvm.sqrt", v[0]);
    case KIR_FLOOR: return intr1(e, "llvm.floor", v[0]);
    case KIR_CEIL: return intr1(e, "llvm.ceil", v[0]);
    case KIR_ROUND: return intr1(e, "llvm.roundeven", v[0]);
    case KIR_TANH: return libm1(e, dbl ? "tanh" : "tanhf", v[0]);
    case KIR_ERF: return libm1(e, dbl ? "erf" : "erff", v[0]);
    case KIR_ERFC: return libm1(e, dbl ? "erfc" : "erfcf", v[0]);
    case KIR_GELU: {
        /* 0.5 x erfc(-x / sqrt 2) (f64; f32 arrives expanded) */
        LLVMTypeRef t = LLVMTypeOf(v[0]);
        LLVMValueRef z = LLVMBuildFMul(b, v[0], LLVMConstReal(t, -M_SQRT1_2), "");
        LLVMValueRef h = LLVMBuildFMul(b, v[0], LLVMConstReal(t, 0.5), "");
        return LLVMBuildFMul(b, h, libm1(e, dbl ? "erfc" : "erfcf", z), "");
    }
    case KIR_SIN: return libm1(e, dbl ? "sin" : "sinf", v[0]);
    case KIR_COS: return libm1(e, dbl ? "cos" : "cosf", v[0]);
    case KIR_TAN: return libm1(e, dbl ? "tan" : "tanf", v[0]);
    case KIR_ASIN: return libm1(e, dbl ? "asin" : "asinf", v[0]);
    case KIR_ACOS: return libm1(e, dbl ? "acos" : "acosf", v[0]);
    case KIR_ATAN: return libm1(e, dbl ? "atan" : "atanf", v[0]);
    case KIR_SINH: return libm1(e, dbl ? "sinh" : "sinhf", v[0]);
    case KIR_COSH: return libm1(e, dbl ? "cosh" : "coshf", v[0]);
    case KIR_ASINH: return libm1(e, dbl ? "asinh" : "asinhf", v[0]);
    case KIR_ACOSH: return libm1(e, dbl ? "acosh" : "acoshf", v[0]);
    case KIR_ATANH: return libm1(e, dbl ? "atanh" : "atanhf", v[0]);
    case KIR_ADD: return LLVMBuildFAdd(b, v[0], v[1], "");
    case KIR_SUB: return LLVMBuildFSub(b, v[0], v[1], "");
    case KIR_MUL: return LLVMBuildFMul(b, v[0], v[1], "");
    case KIR_DIV: return LLVMBuildFDiv(b, v[0], v[1], "");
    case KIR_REM: return LLVMBuildFRem(b, v[0], v[1], "");
    case KIR_MIN: return intr2(e, "llvm.minimum", v[0], v[1]);
    case KIR_MAX: return intr2(e, "llvm.maximum", v[0], v[1]);
    case KIR_POW: return intr2(e, "llvm.pow", v[0], v[1]);
    case KIR_FMA: {
        LLVMTypeRef ty = LLVMTypeOf(v[0]);
        return em_intr(e, "llvm.fma", &ty, 1, v, 3);
    }
    case KIR_MULADD: {
        LLVMTypeRef ty = LLVMTypeOf(v[0]);
        return em_intr(e, "llvm.fmuladd", &ty, 1, v, 3);
    }
    case KIR_COPYSIGN: return intr2(e, "llvm.copysign", v[0], v[1]);
    default: return NULL;
    }
}

static LLVMValueRef emit_int_op(em *e, const kir_expr *x, LLVMValueRef *v)
{
    LLVMBuilderRef b = e->b;
    bool sgn = ir_dtype_is_signed(x->dtype);
    switch (x->op) {
    case KIR_NEG: return LLVMBuildNeg(b, v[0], "");
    case KIR_ABS: {
        if (!sgn)
            return v[0];
        LLVMTypeRef ty = LLVMTypeOf(v[0]);
        LLVMValueRef args[] = {v[0], LLVMConstInt(e->i1, 0, 0)}; /* INT_MIN stays INT_MIN */
        return em_intr(e, "llvm.abs", &ty, 1, args, 2);
    }
    case KIR_FLOOR: case KIR_CEIL: case KIR_ROUND: return v[0];
    case KIR_ADD: return LLVMBuildAdd(b, v[0], v[1], "");
    case KIR_SUB: return LLVMBuildSub(b, v[0], v[1], "");
    case KIR_MUL: return LLVMBuildMul(b, v[0], v[1], "");
    case KIR_DIV: case KIR_REM: return emit_idiv(e, x->op, sgn, v[0], v[1]);
    case KIR_MIN: return intr2(e, sgn ? "llvm.smin" : "llvm.umin", v[0], v[1]);
    case KIR_MAX: return intr2(e, sgn ? "llvm.smax" : "llvm.umax", v[0], v[1]);
    case KIR_FMA: return LLVMBuildAdd(b, LLVMBuildMul(b, v[0], v[1], ""), v[2], "");
    case KIR_NOT: return LLVMBuildNot(b, v[0], "");
    case KIR_AND: return LLVMBuildAnd(b, v[0], v[1], "");
    case KIR_OR: return LLVMBuildOr(b, v[0], v[1], "");
    case KIR_XOR: return LLVMBuildXor(b, v[0], v[1], "");
    case KIR_SHL: case KIR_SHR: {
        /* LLVM's shifts by >= the width are poison; ours give 0 */
        LLVMTypeRef ty = LLVMTypeOf(v[0]);
        LLVMTypeRef et = is_vec(v[0]) ? LLVMGetElementType(ty) : ty;   /* widened: lanes of integers */
        LLVMValueRef zero = LLVMConstNull(ty), width = LLVMConstInt(et, LLVMGetIntTypeWidth(et), 0);
        LLVMValueRef big = LLVMBuildICmp(b, LLVMIntUGE, v[1], is_vec(v[0]) ? splat(e, width) : width, "");
        LLVMValueRef amt = LLVMBuildSelect(b, big, zero, v[1], "");
        LLVMValueRef r = x->op == KIR_SHL ? LLVMBuildShl(b, v[0], amt, "") : LLVMBuildLShr(b, v[0], amt, "");
        return LLVMBuildSelect(b, big, zero, r, "");
    }
    case KIR_ASHR: {
        /* by >= the width: all sign bits, as a shift by width - 1 gives */
        LLVMTypeRef ty = LLVMTypeOf(v[0]);
        LLVMTypeRef et = is_vec(v[0]) ? LLVMGetElementType(ty) : ty;
        LLVMValueRef w1 = LLVMConstInt(et, LLVMGetIntTypeWidth(et) - 1, 0);
        if (is_vec(v[0]))
            w1 = splat(e, w1);
        LLVMValueRef big = LLVMBuildICmp(b, LLVMIntUGT, v[1], w1, "");
        return LLVMBuildAShr(b, v[0], LLVMBuildSelect(b, big, w1, v[1], ""), "");
    }
    case KIR_POW:
        e->loops++; /* a loop of its own: the enclosing one is no longer innermost */
        return cg_math_ipow(b, v[0], v[1], sgn);
    default: return NULL;
    }
}

static LLVMValueRef emit_bool_op(em *e, const kir_expr *x, LLVMValueRef *v)
{
    LLVMBuilderRef b = e->b;
    switch (x->op) {
    case KIR_NOT: return LLVMBuildNot(b, v[0], "");
    case KIR_AND: case KIR_MIN: case KIR_MUL: return LLVMBuildAnd(b, v[0], v[1], "");
    case KIR_OR: case KIR_MAX: return LLVMBuildOr(b, v[0], v[1], "");
    case KIR_XOR: return LLVMBuildXor(b, v[0], v[1], "");
    case KIR_ABS: case KIR_FLOOR: case KIR_CEIL: case KIR_ROUND: return v[0];
    default: return NULL;
    }
}

static LLVMValueRef emit_op(em *e, const kir_expr *x)
{
    LLVMValueRef v[3] = {0};
    int n = kir_op_arity(x->op);
    for (int i = 0; i < n; i++)
        if (!(v[i] = em_eval(e, x->a[i])))
            return NULL;
    /* in a widened loop: one varying operand makes the op varying */
    if (e->wvar >= 0 && n > 1 && (is_vec(v[0]) || is_vec(v[1]) || (n > 2 && is_vec(v[2]))))
        for (int i = 0; i < n; i++)
            v[i] = splat(e, v[i]);
    switch (x->op) {
    case KIR_CAST: return emit_cast(e, v[0], x->a[0]->dtype, x->dtype);
    case KIR_BITCAST: {
        /* between same-sized types with one register form (f32/i32, f64/i64) */
        if (is_narrow_float(x->dtype) || is_narrow_float(x->a[0]->dtype) || x->dtype == IR_BOOL)
            break;
        LLVMTypeRef rt = em_reg_type(e, x->dtype);
        if (is_vec(v[0]))
            rt = LLVMVectorType(rt, LLVMGetVectorSize(LLVMTypeOf(v[0])));
        return LLVMBuildBitCast(e->b, v[0], rt, "");
    }
    case KIR_SELECT: return LLVMBuildSelect(e->b, v[0], v[1], v[2], "");
    case KIR_LT: case KIR_LE: case KIR_EQ: case KIR_NE:
        return emit_cmp(e, x->op, x->a[0]->dtype, v[0], v[1]);
    default:
        break;
    }
    LLVMValueRef r;
    if (ir_dtype_is_float(x->dtype)) {
        r = emit_float_op(e, x, v);
        if (r && is_narrow_float(x->dtype) && kir_op_inexact(x->op))
            r = round_narrow(e, r, x->dtype);
    } else if (x->dtype == IR_BOOL) {
        r = emit_bool_op(e, x, v);
    } else {
        r = emit_int_op(e, x, v);
    }
    if (!r)
        ir_errorf(e->d, "kernel '%.100s': %s on %s is not supported by the LLVM backend", e->k->name,
                  kir_op_name(x->op), ir_dtype_name(x->dtype));
    return r;
}

/* Expressions form a DAG: within one statement a shared node is emitted
 * once (everything it reads is unchanged until the statement's effect).
 * x's slot in t (its value NULL when new); NULL on out of memory. */
static LLVMValueRef *memo_find(memo_table *t, const kir_expr *x)
{
    if (t->n * 2 >= t->cap) {
        int cap = t->cap ? t->cap * 2 : 64;
        memo_slot *old = t->slot, *nm = calloc((size_t)cap, sizeof *nm);
        if (!nm)
            return NULL;
        t->slot = nm;
        int oc = t->cap;
        t->cap = cap;
        t->n = 0;
        for (int i = 0; i < oc; i++)
            if (old[i].key)
                *memo_find(t, old[i].key) = old[i].val;
        free(old);
    }
    size_t h = ((uintptr_t)x >> 4) * 0x9e3779b97f4a7c15u;
    for (size_t i = h & (size_t)(t->cap - 1);; i = (i + 1) & (size_t)(t->cap - 1))
        if (!t->slot[i].key || t->slot[i].key == x) {
            if (!t->slot[i].key) {
                t->slot[i].key = x;
                t->n++;
            }
            return &t->slot[i].val;
        }
}

static void memo_clear(memo_table *t)
{
    if (t->n)
        memset(t->slot, 0, sizeof *t->slot * (size_t)t->cap);
    t->n = 0;
}

/* select(cond, varying load, 0) in a widened loop: a load masked by cond,
 * so lanes outside the operand (a convolution's padding) touch no memory. */
static LLVMValueRef emit_wselect_load(em *e, const kir_expr *x)
{
    LLVMValueRef c = em_eval(e, x->a[0]);
    if (!c)
        return NULL;
    c = splat(e, c);
    if (e->wmask)
        c = LLVMBuildAnd(e->b, c, e->wmask, "");
    return emit_wload(e, x->a[1], c);
}

static LLVMValueRef eval_node(em *e, const kir_expr *x)
{
    if (x->op == KIR_SELECT && e->wvar >= 0 && !e->no_memo && x->a[1]->op == KIR_LOAD && wdep(e, x->a[1]) &&
        x->a[2]->op == KIR_CONST && ir_dtype_is_float(x->dtype) && x->a[2]->c.f == 0 &&
        !__builtin_signbit(x->a[2]->c.f))
        return emit_wselect_load(e, x);
    if (x->op == KIR_ACC && e->vaccs[x->var])
        return LLVMBuildLoad2(e->b, LLVMVectorType(em_reg_type(e, e->k->acc_dtype[x->var]), e->wlanes),
                              e->vaccs[x->var], "");
    if (x->op == KIR_ACC)
        return LLVMBuildLoad2(e->b, em_reg_type(e, e->k->acc_dtype[x->var]), e->accs[x->var], "");
    if (x->op == KIR_LOAD)
        return emit_load(e, x);
    return emit_op(e, x);
}

LLVMValueRef em_eval(em *e, const kir_expr *x)
{
    switch (x->op) {
    case KIR_CONST: return emit_const(e, x);
    case KIR_VAR: return e->vars[x->var];
    case KIR_SYM: return sym_value(e, x->var);
    case KIR_LETV: return e->lets[x->var];
    default: break;
    }
    if (e->no_memo)
        return eval_node(e, x);
    LLVMValueRef *slot = memo_find(&e->memo, x);
    if (!slot) {
        ir_errorf(e->d, "out of memory");
        return NULL;
    }
    if (*slot)
        return *slot;
    LLVMValueRef r = eval_node(e, x);
    /* memo_find may have rehashed while operands were emitted */
    if (r)
        *memo_find(&e->memo, x) = r;
    return r;
}

/* ---- statements ---------------------------------------------------------- */

static LLVMMetadataRef md_str(em *e, const char *s) { return LLVMMDStringInContext2(e->cx, s, strlen(s)); }

/* A self-referential node {self, ops...}: loop IDs and alias scopes must
 * be distinct, which the C API only offers through this cycle. */
static LLVMMetadataRef md_self(em *e, LLVMMetadataRef *ops, size_t n)
{
    LLVMMetadataRef all[8];
    LLVMMetadataRef tmp = LLVMTemporaryMDNode(e->cx, NULL, 0);
    all[0] = tmp;
    for (size_t i = 0; i < n && i < 7; i++)
        all[i + 1] = ops[i];
    LLVMMetadataRef node = LLVMMDNodeInContext2(e->cx, all, n + 1);
    LLVMMetadataReplaceAllUsesWith(tmp, node);
    return node;
}

static LLVMMetadataRef loop_hint(em *e, const char *name, LLVMValueRef v)
{
    LLVMMetadataRef ops[] = {md_str(e, name), v ? LLVMValueAsMetadata(v) : NULL};
    return LLVMMDNodeInContext2(e->cx, ops, v ? 2 : 1);
}

static int emit_block(em *e, const kir_block *bl, int depth);

/* ---- VECTOR loops widened by the emitter ----------------------------------
 * LLVM vectorises innermost loops only. A VECTOR loop whose body holds
 * other loops (a register tile: accumulators across a reduction loop) is
 * widened here instead: its variable becomes base + <0..W-1>, expressions
 * that depend on it (or on an accumulator set inside it) become vectors,
 * everything else stays scalar and is splatted on use. When some construct
 * has no vector form (wcheck), the loop is emitted serially. */

/* walk(e, x), its answer kept in t (NULL: not kept) as an i1 constant,
 * so that a DAG's shared nodes are walked once. */
static bool memo_bool(em *e, memo_table *t, const kir_expr *x, bool (*walk)(em *, const kir_expr *))
{
    LLVMValueRef *m = t ? memo_find(t, x) : NULL;
    if (m && *m)
        return LLVMConstIntGetZExtValue(*m) != 0;
    bool r = walk(e, x);
    if (m && (m = memo_find(t, x)))   /* (the walk may have grown the table) */
        *m = LLVMConstInt(e->i1, r, 0);
    return r;
}

static bool wdep_walk(em *e, const kir_expr *x)
{
    switch (x->op) {
    case KIR_LETV: return wdep(e, e->k->let_value[x->var]);
    case KIR_LOAD:
        for (int i = 0; i < x->nidx; i++)
            if (wdep(e, x->idx[i]))
                return true;
        return false;
    default:
        for (int i = 0; i < kir_op_arity(x->op); i++)
            if (wdep(e, x->a[i]))
                return true;
        return false;
    }
}

/* Whether x varies with the widened loop's variable (or reads an
 * accumulator set inside it). Answers are kept per node for the loop
 * (e->wmemo): expressions are DAGs, and walking a deep math expansion's
 * shared nodes as a tree, once per node that wcheck asks about, took a
 * fuzzed Mish epilogue 21 s. */
static bool wdep(em *e, const kir_expr *x)
{
    switch (x->op) {
    case KIR_VAR: return x->var == e->wvar;
    case KIR_ACC: return e->vaccs[x->var] != NULL;
    case KIR_CONST: case KIR_SYM: return false;
    default: break;
    }
    return memo_bool(e, e->wvar >= 0 ? &e->wmemo : NULL, x, wdep_walk);
}

/* x is the vector variable plus a uniform offset (unit stride). */
static bool wunit(em *e, const kir_expr *x)
{
    if (x->op == KIR_VAR)
        return x->var == e->wvar;
    if (x->op != KIR_ADD)
        return false;
    return (wunit(e, x->a[0]) && !wdep(e, x->a[1])) || (!wdep(e, x->a[0]) && wunit(e, x->a[1]));
}

/* Dtypes whose vectors need no conversion: loads, stores and ops. */
static bool wdtype(ir_dtype dt) { return dt == IR_F32 || dt == IR_F64 || (dt != IR_BOOL && ir_dtype_is_int(dt)); }

static bool wcheck_expr(em *e, const kir_expr *x);

static bool wcheck_walk(em *e, const kir_expr *x)
{
    switch (x->op) {
    case KIR_VAR: return true;
    case KIR_ACC: return e->wdef[x->var] != 0; /* set in this iteration before */
    case KIR_LETV: return wdtype(x->dtype);    /* its statement was checked */
    case KIR_LOAD: /* f16/bf16 lanes are read as f32 (wnarrow), then only widened by a cast */
        if (!wdtype(e->k->bufs[x->buf].dtype) && !is_narrow_float(e->k->bufs[x->buf].dtype))
            return false;
        for (int i = 0; i < x->nidx; i++)
            if (!wcheck_expr(e, x->idx[i]))
                return false;
        return true;
    case KIR_ADD: case KIR_SUB: case KIR_MUL: case KIR_FMA: case KIR_MIN: case KIR_MAX: case KIR_NEG:
        if (!wdtype(x->dtype))
            return false;
        break;
    case KIR_LT: case KIR_LE: case KIR_EQ: case KIR_NE:
        if (!wdtype(x->a[0]->dtype))
            return false;
        break;
    case KIR_SELECT:
        if (x->dtype != IR_BOOL && !wdtype(x->dtype))
            return false;
        break;
    case KIR_AND: case KIR_OR: case KIR_NOT: break;
    case KIR_DIV: /* f32/f64, or integer index math (a position's row and column) */
        if (!wdtype(x->dtype))
            return false;
        break;
    case KIR_REM:
        if (!ir_dtype_is_int(x->dtype) || x->dtype == IR_BOOL)
            return false;
        break;
    case KIR_ABS: case KIR_SQRT: case KIR_FLOOR: case KIR_CEIL: case KIR_ROUND:
        /* vector intrinsics; an epilogue fused into a contraction (docs/fusion.md) */
        if (x->dtype != IR_F32 && x->dtype != IR_F64)
            return false;
        break;
    case KIR_MULADD: case KIR_COPYSIGN: /* the math expansions (kir_math.c) */
        if (x->dtype != IR_F32 && x->dtype != IR_F64)
            return false;
        break;
    case KIR_BITCAST:
        if (!wdtype(x->dtype) || !wdtype(x->a[0]->dtype))
            return false;
        break;
    case KIR_SHL: case KIR_SHR: case KIR_ASHR:
        if (!wdtype(x->dtype) || ir_dtype_is_float(x->dtype))
            return false;
        break;
    case KIR_CAST: /* integers to integers, or to f32/f64 (an exponent); f16/bf16 to f32 */
        if (is_narrow_float(x->a[0]->dtype) && x->dtype == IR_F32)
            break;
        if (!ir_dtype_is_int(x->a[0]->dtype) || x->a[0]->dtype == IR_BOOL ||
            !(x->dtype == IR_F32 || x->dtype == IR_F64 || (ir_dtype_is_int(x->dtype) && x->dtype != IR_BOOL)))
            return false;
        break;
    default: return false;
    }
    for (int i = 0; i < kir_op_arity(x->op); i++)
        if (!wcheck_expr(e, x->a[i]))
            return false;
    return true;
}

/* Whether x has a vector form in the widened loop (wcheck). Answers are
 * kept per node within one statement (e->wcmemo, cleared by wcheck_block
 * at each: an accumulator's "set before" changes between statements), so
 * a DAG is walked once, not as a tree. */
static bool wcheck_expr(em *e, const kir_expr *x)
{
    if (!wdep(e, x))
        return true;
    return memo_bool(e, &e->wcmemo, x, wcheck_walk);
}

/* Gives every accumulator set in bl a vector alloca; false on one of a
 * dtype without a vector form. */
static bool wmark_accs(em *e, const kir_block *bl)
{
    for (int i = 0; i < bl->n; i++) {
        const kir_stmt *s = bl->s[i];
        if (s->kind == KIR_S_ACC_SET && !e->vaccs[s->acc]) {
            ir_dtype dt = e->k->acc_dtype[s->acc];
            if (!wdtype(dt))
                return false;
            e->vaccs[s->acc] = LLVMBuildAlloca(e->eb, LLVMVectorType(em_reg_type(e, dt), e->wlanes), "vacc");
        }
        if ((s->kind == KIR_S_FOR || s->kind == KIR_S_IF) && !wmark_accs(e, &s->body))
            return false;
        if (s->kind == KIR_S_IF && !wmark_accs(e, &s->orelse))
            return false;
    }
    return true;
}

static bool wcheck_block(em *e, const kir_block *bl);

/* acc + x, x + acc or fma(a, b, acc): a sum the lanes may split (a vector
 * loop allows reassociating it); *rest gets the other operands. */
static int red_form(const kir_expr *v, int acc, const kir_expr **rest)
{
    bool is_acc[3];
    for (int i = 0; i < 3; i++)
        is_acc[i] = v->a[i] && v->a[i]->op == KIR_ACC && v->a[i]->var == acc;
    if (v->op == KIR_ADD && (is_acc[0] || is_acc[1])) {
        rest[0] = v->a[is_acc[0] ? 1 : 0];
        return 1;
    }
    if (v->op == KIR_FMA && is_acc[2]) {
        rest[0] = v->a[0];
        rest[1] = v->a[1];
        return 2;
    }
    /* a float max or min (NaN-propagating: exact in any order) */
    if ((v->op == KIR_MAX || v->op == KIR_MIN) && ir_dtype_is_float(v->dtype) && (is_acc[0] || is_acc[1])) {
        rest[0] = v->a[is_acc[0] ? 1 : 0];
        return 1;
    }
    return 0;
}

/* wred's code for a carried reduction: 1 a sum, 2 a max, 3 a min. */
static char red_kind(const kir_expr *v) { return v->op == KIR_MAX ? 2 : v->op == KIR_MIN ? 3 : 1; }

/* Whether a carried max or min of accumulator a runs on vrangeps /
 * vrangepd (AVX512DQ, 512-bit vectors of whole registers): llvm.maximum
 * and llvm.minimum expand to about six instructions a vector on x86, a
 * dependency chain of four of them, so the reduction ran at a vector per
 * 3-4 cycles (ReduceMin/ReduceMax, the int8-dynamic quantizer's range).
 * vrange's max/min with the sign from the comparison orders -0 below +0
 * as they do, one instruction, but returns the other operand for a quiet
 * NaN; the NaNs are counted beside it (vnans), off the chain, and the
 * result is NaN where any lane saw one: the same value, NaN for NaN. */
static bool em_range_red(const em *e, int a)
{
    ir_dtype dt = e->k->acc_dtype[a];
    unsigned per = dt == IR_F32 ? 16 : dt == IR_F64 ? 8 : 0;
    unsigned np = per ? e->wlanes / per : 0;
    return e->wred && e->wred[a] >= 2 && per && e->wlanes % per == 0 && e->wlanes <= 64 && (np & (np - 1)) == 0 &&
           cg_target_vector_bits(e->t) >= 512 && em_has_feature(e, "avx512dq");
}

/* vrange(a, b) lane by lane, a max (or min) with -0 < +0 and a quiet NaN
 * operand ignored, over a vector of whole 512-bit registers. */
static LLVMValueRef range_vec(em *e, LLVMValueRef a, LLVMValueRef b, bool max)
{
    LLVMBuilderRef bd = e->b;
    LLVMTypeRef vt = LLVMTypeOf(a), st = LLVMGetElementType(vt);
    bool f32 = LLVMGetTypeKind(st) == LLVMFloatTypeKind;
    unsigned per = f32 ? 16 : 8, n = LLVMGetVectorSize(vt), np = n / per;
    LLVMTypeRef pt = LLVMVectorType(st, per);
    const char *name = f32 ? "llvm.x86.avx512.mask.range.ps.512" : "llvm.x86.avx512.mask.range.pd.512";
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(e->m, id, NULL, 0);
    LLVMTypeRef fty = LLVMIntrinsicGetType(e->cx, id, NULL, 0);
    LLVMValueRef parts[64], idx[64];
    for (unsigned p = 0; p < np; p++) {
        for (unsigned l = 0; l < per; l++)
            idx[l] = LLVMConstInt(e->i32, p * per + l, 0);
        LLVMValueRef sel = LLVMConstVector(idx, per);
        LLVMValueRef x = np == 1 ? a : LLVMBuildShuffleVector(bd, a, LLVMGetPoison(vt), sel, "");
        LLVMValueRef y = np == 1 ? b : LLVMBuildShuffleVector(bd, b, LLVMGetPoison(vt), sel, "");
        /* imm 5: max, 4: min, the sign from the comparison; all lanes; the
         * current rounding (4) */
        LLVMValueRef args[] = {x, y, LLVMConstInt(e->i32, max ? 5 : 4, 0), LLVMGetPoison(pt),
                               LLVMConstInt(f32 ? LLVMInt16TypeInContext(e->cx) : LLVMInt8TypeInContext(e->cx), f32 ? 0xffff : 0xff, 0),
                               LLVMConstInt(e->i32, 4, 0)};
        parts[p] = LLVMBuildCall2(bd, fty, f, args, 6, "");
    }
    /* concatenated pairwise back to n lanes (np a power of two) */
    for (unsigned w = per; np > 1; w *= 2, np /= 2)
        for (unsigned p = 0; p < np / 2; p++) {
            for (unsigned l = 0; l < 2 * w; l++)
                idx[l] = LLVMConstInt(e->i32, l, 0);
            parts[p] = LLVMBuildShuffleVector(bd, parts[2 * p], parts[2 * p + 1], LLVMConstVector(idx, 2 * w), "");
        }
    return parts[0];
}

static bool has_red_set(const kir_block *bl)
{
    const kir_expr *rest[2];
    for (int i = 0; i < bl->n; i++)
        if (bl->s[i]->kind == KIR_S_ACC_SET && red_form(bl->s[i]->value, bl->s[i]->acc, rest))
            return true;
    return false;
}

/* Checks a nested block; what it sets counts as set only inside it (it
 * may run zero times). */
static bool wcheck_nested(em *e, const kir_block *bl)
{
    size_t n = (size_t)e->k->naccs;
    unsigned char *saved = malloc(n + 1);
    if (!saved)
        return false;
    memcpy(saved, e->wdef, n);
    bool ok = wcheck_block(e, bl);
    memcpy(e->wdef, saved, n);
    free(saved);
    return ok;
}

static bool wcheck_block(em *e, const kir_block *bl)
{
    for (int i = 0; i < bl->n; i++) {
        const kir_stmt *s = bl->s[i];
        memo_clear(&e->wcmemo);
        switch (s->kind) {
        case KIR_S_FOR:
            if (wdep(e, s->lo) || wdep(e, s->hi) || !wcheck_nested(e, &s->body))
                return false;
            break;
        case KIR_S_IF:
            if (wdep(e, s->cond) || !wcheck_nested(e, &s->body) || !wcheck_nested(e, &s->orelse))
                return false;
            break;
        case KIR_S_STORE:
            /* contiguous stores only: a scatter's lanes may collide */
            if (!wdtype(e->k->bufs[s->buf].dtype) || !wunit(e, s->idx[s->nidx - 1]))
                return false;
            for (int d = 0; d < s->nidx - 1; d++)
                if (wdep(e, s->idx[d]))
                    return false;
            if (!wdtype(s->value->dtype) || !wcheck_expr(e, s->value))
                return false;
            break;
        case KIR_S_ACC_SET: {
            const kir_expr *rest[2];
            int nr = e->wdef[s->acc] ? 0 : red_form(s->value, s->acc, rest);
            if (nr && wdtype(s->value->dtype)) {
                for (int r = 0; r < nr; r++)
                    if (!wcheck_expr(e, rest[r]))
                        return false;
                if (e->wred[s->acc] && e->wred[s->acc] != red_kind(s->value))
                    return false; /* one kind of reduction per accumulator */
                e->wred[s->acc] = red_kind(s->value);
                break;
            }
            if (e->wred[s->acc] || !wcheck_expr(e, s->value))
                return false;
            e->wdef[s->acc] = 1;
            break;
        }
        case KIR_S_LET:
            if (wdep(e, s->value) && (!wdtype(s->value->dtype) || !wcheck_expr(e, s->value)))
                return false;
            break;
        case KIR_S_BARRIER:
        case KIR_S_FAIL: /* a store of a constant: the same in every lane */
            break;
        case KIR_S_INTRINSIC: /* operates on memory spans of its own; a hint at the first lane's */
            if (s->intrin != KIR_IN_PREFETCH_L2)
                return false;
            break;
        }
    }
    return true;
}

/* Whether x reads a graph symbol (a bound known only at run time). */
static bool has_sym(const kir_expr *x)
{
    if (x->op == KIR_SYM)
        return true;
    if (x->op == KIR_LOAD || x->op == KIR_VAR || x->op == KIR_ACC || x->op == KIR_LETV || x->op == KIR_CONST)
        return false;
    for (int i = 0; i < kir_op_arity(x->op); i++)
        if (has_sym(x->a[i]))
            return true;
    return false;
}

static bool has_loop(const kir_block *bl)
{
    for (int i = 0; i < bl->n; i++) {
        const kir_stmt *s = bl->s[i];
        if (s->kind == KIR_S_FOR || (s->kind == KIR_S_IF && (has_loop(&s->body) || has_loop(&s->orelse))))
            return true;
    }
    return false;
}

/* One chunk of W lanes from base; mask NULL for a full chunk. */
static int emit_chunk(em *e, const kir_stmt *s, int depth, LLVMValueRef base, LLVMValueRef hi, bool tail)
{
    LLVMTypeRef vt = LLVMVectorType(e->i64, e->wlanes);
    LLVMValueRef *lanes = malloc(sizeof *lanes * e->wlanes);
    if (!lanes)
        return ir_errorf(e->d, "out of memory");
    for (unsigned i = 0; i < e->wlanes; i++)
        lanes[i] = em_ci64(e, i);
    LLVMValueRef iota = LLVMConstVector(lanes, e->wlanes);
    free(lanes);
    (void)vt;
    e->wbase = base;
    e->vars[s->var] = LLVMBuildNSWAdd(e->b, splat(e, base), iota, "lane");
    e->wmask = tail ? LLVMBuildICmp(e->b, LLVMIntSLT, e->vars[s->var], splat(e, hi), "") : NULL;
    return emit_block(e, &s->body, depth + 1);
}

/* The sum of v's lanes: halves added pairwise (log2 W steps). */
static LLVMValueRef hsum(em *e, LLVMValueRef v)
{
    bool fp = LLVMGetTypeKind(LLVMGetElementType(LLVMTypeOf(v))) != LLVMIntegerTypeKind;
    unsigned n = LLVMGetVectorSize(LLVMTypeOf(v));
    LLVMValueRef idx[512];
    while (n > 1 && n % 2 == 0 && n <= 1024) {
        unsigned h = n / 2;
        for (unsigned i = 0; i < h; i++)
            idx[i] = LLVMConstInt(e->i32, i, 0);
        LLVMValueRef lo = LLVMBuildShuffleVector(e->b, v, v, LLVMConstVector(idx, h), "");
        for (unsigned i = 0; i < h; i++)
            idx[i] = LLVMConstInt(e->i32, h + i, 0);
        LLVMValueRef hi = LLVMBuildShuffleVector(e->b, v, v, LLVMConstVector(idx, h), "");
        v = fp ? LLVMBuildFAdd(e->b, lo, hi, "") : LLVMBuildAdd(e->b, lo, hi, "");
        n = h;
    }
    LLVMValueRef r = LLVMBuildExtractElement(e->b, v, LLVMConstInt(e->i32, 0, 0), "");
    for (unsigned i = 1; i < n; i++) {
        LLVMValueRef x = LLVMBuildExtractElement(e->b, v, LLVMConstInt(e->i32, i, 0), "");
        r = fp ? LLVMBuildFAdd(e->b, r, x, "") : LLVMBuildAdd(e->b, r, x, "");
    }
    return r;
}

/* 1 when emitted widened, 0 when it has no vector form, -1 on error. */
static int emit_widened(em *e, const kir_stmt *s, int depth, LLVMValueRef lo, LLVMValueRef hi)
{
    const kir_kernel *k = e->k;
    e->wvar = s->var;
    e->wlanes = (unsigned)s->width;
    memo_clear(&e->wmemo);
    /* an accumulator carried across iterations (a reduction over this
     * loop) has no per-lane form: wcheck wants each set before its reads */
    e->wdef = calloc((size_t)k->naccs + 1, 1);
    e->wred = calloc((size_t)k->naccs + 1, 1);
    bool ok = e->wdef && e->wred && wmark_accs(e, &s->body) && wcheck_block(e, &s->body);
    free(e->wdef);
    e->wdef = NULL;
    int rc = 1;
    if (ok) {
        LLVMBuilderRef b = e->b;
        /* a carried sum starts as <acc, 0, ..., 0>, a max or min as acc in
         * every lane */
        for (int a = 0; a < k->naccs; a++)
            if (e->wred[a]) {
                LLVMTypeRef st = em_reg_type(e, k->acc_dtype[a]);
                LLVMValueRef in = LLVMBuildLoad2(b, st, e->accs[a], "");
                LLVMValueRef v0 = LLVMBuildInsertElement(b, LLVMConstNull(LLVMVectorType(st, e->wlanes)), in,
                                                         LLVMConstInt(e->i32, 0, 0), "");
                if (e->wred[a] > 1)
                    v0 = LLVMBuildShuffleVector(b, v0, LLVMGetPoison(LLVMTypeOf(v0)),
                                                LLVMConstNull(LLVMVectorType(e->i32, e->wlanes)), "");
                LLVMBuildStore(b, v0, e->vaccs[a]);
                if (em_range_red(e, a)) { /* whether the start is NaN */
                    LLVMTypeRef mt = LLVMVectorType(LLVMInt1TypeInContext(e->cx), e->wlanes);
                    e->vnans[a] = LLVMBuildAlloca(e->eb, mt, "vnan");
                    LLVMBuildStore(b, LLVMBuildFCmp(b, LLVMRealUNO, v0, v0, ""), e->vnans[a]);
                }
            }
        LLVMValueRef saved = e->vars[s->var], w = em_ci64(e, s->width);
        LLVMValueRef n = intr2(e, "llvm.smax", LLVMBuildNSWSub(b, hi, lo, ""), em_ci64(e, 0));
        LLVMValueRef full = LLVMBuildNSWAdd(b, lo, LLVMBuildNSWMul(b, LLVMBuildSDiv(b, n, w, ""), w, ""), "");
        LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
        LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(e->cx, e->fn, "vloop");
        LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(e->cx, e->fn, "vbody");
        LLVMBuildBr(b, head);
        LLVMPositionBuilderAtEnd(b, head);
        LLVMValueRef iv = LLVMBuildPhi(b, e->i64, "j");
        LLVMValueRef test = LLVMBuildICmp(b, LLVMIntSLT, iv, full, "");
        LLVMPositionBuilderAtEnd(b, body);
        e->loops++;
        if (emit_chunk(e, s, depth, iv, hi, false) < 0) {
            rc = -1;
        } else {
            LLVMBasicBlockRef latch = LLVMAppendBasicBlockInContext(e->cx, e->fn, "vlatch");
            LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(e->cx, e->fn, "vtail");
            LLVMBuildBr(b, latch);
            LLVMPositionBuilderAtEnd(b, head);
            LLVMBuildCondBr(b, test, body, exit);
            LLVMPositionBuilderAtEnd(b, latch);
            LLVMValueRef next = LLVMBuildNSWAdd(b, iv, w, "");
            LLVMBuildBr(b, head);
            LLVMValueRef in_v[] = {lo, next};
            LLVMBasicBlockRef in_b[] = {pre, latch};
            LLVMAddIncoming(iv, in_v, in_b, 2);
            /* the partial last chunk, masked */
            LLVMPositionBuilderAtEnd(b, exit);
            LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(e->cx, e->fn, "vrest");
            LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(e->cx, e->fn, "vdone");
            LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, full, hi, ""), then, join);
            LLVMPositionBuilderAtEnd(b, then);
            memo_clear(&e->memo);
            if (emit_chunk(e, s, depth, full, hi, true) < 0) {
                rc = -1;
            } else {
                LLVMBuildBr(b, join);
                LLVMPositionBuilderAtEnd(b, join);
                for (int a = 0; a < k->naccs; a++)
                    if (e->wred[a]) {
                        LLVMValueRef vv = LLVMBuildLoad2(b, LLVMVectorType(em_reg_type(e, k->acc_dtype[a]), e->wlanes),
                                                         e->vaccs[a], "");
                        LLVMValueRef r = e->wred[a] == 1 ? hsum(e, vv)
                                       : em_intr(e, e->wred[a] == 2 ? "llvm.vector.reduce.fmaximum"
                                                                    : "llvm.vector.reduce.fminimum",
                                                 (LLVMTypeRef[]){LLVMTypeOf(vv)}, 1, &vv, 1);
                        if (e->vnans[a]) { /* NaN where any lane saw one */
                            LLVMTypeRef mt = LLVMVectorType(LLVMInt1TypeInContext(e->cx), e->wlanes);
                            LLVMValueRef nv = LLVMBuildLoad2(b, mt, e->vnans[a], "");
                            LLVMValueRef any = em_intr(e, "llvm.vector.reduce.or", &mt, 1, &nv, 1);
                            r = LLVMBuildSelect(b, any, LLVMConstReal(LLVMTypeOf(r), NAN), r, "");
                        }
                        LLVMBuildStore(b, r, e->accs[a]);
                    }
            }
        }
        e->vars[s->var] = saved;
    }
    e->wvar = -1;
    memo_clear(&e->wmemo);
    e->wmask = NULL;
    e->wbase = NULL;
    free(e->wred);
    e->wred = NULL;
    memset(e->vaccs, 0, sizeof *e->vaccs * (size_t)k->naccs);
    memset(e->vnans, 0, sizeof *e->vnans * (size_t)k->naccs);
    return ok ? rc : 0;
}

static int emit_for(em *e, const kir_stmt *s, int depth)
{
    LLVMValueRef lo = em_eval(e, s->lo), hi = lo ? em_eval(e, s->hi) : NULL;
    if (!hi)
        return -1;
    if (s->loop >= KIR_GRID && em_check_gpu_loop(e, s) < 0)
        return -1;
    /* A parallel body with one amx_config and, after it, one amx_release
     * among its statements (a trip of AMX tiles): the pair runs once per
     * call, around this call's share of the trips, instead of per trip
     * (ldtilecfg and tilerelease each cost a stall; the configuration is
     * the same for every trip). The statements before the config use no
     * tiles (they would fault), nor do those after the release, so the
     * rest runs in its order between the two. */
    const kir_block *body_stmts = &s->body;
    kir_block inner = {0};
    const kir_stmt *amx_cfg = NULL, *amx_rel = NULL;
    if (s->loop == KIR_PARALLEL && depth == 0) {
        lo = intr2(e, "llvm.smax", lo, e->begin);
        hi = intr2(e, "llvm.smin", hi, e->end);
        const kir_block *bb = &s->body;
        int ci = -1, ri = -1, nc = 0, nr = 0;
        for (int i = 0; i < bb->n; i++)
            if (bb->s[i]->kind == KIR_S_INTRINSIC && bb->s[i]->intrin == KIR_IN_AMX_CONFIG)
                ci = i, nc++;
            else if (bb->s[i]->kind == KIR_S_INTRINSIC && bb->s[i]->intrin == KIR_IN_AMX_RELEASE)
                ri = i, nr++;
        if (nc == 1 && nr == 1 && ci < ri) {
            inner.s = malloc((size_t)bb->n * sizeof *inner.s);
            if (!inner.s)
                return ir_errorf(e->d, "out of memory");
            for (int i = 0; i < bb->n; i++)
                if (i != ci && i != ri)
                    inner.s[inner.n++] = bb->s[i];
            inner.cap = inner.n;
            amx_cfg = bb->s[ci];
            amx_rel = bb->s[ri];
            body_stmts = &inner;
            if (em_intrinsic(e, amx_cfg) < 0) {
                free(inner.s);
                return -1;
            }
        }
    }
    if (s->loop == KIR_VECTOR && s->width > 1 && e->wvar < 0 && (has_loop(&s->body) || has_red_set(&s->body))) {
        int rc = emit_widened(e, s, depth, lo, hi);
        if (rc)
            return rc < 0 ? -1 : 0;
    }
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(e->b);
    LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(e->cx, e->fn, "loop");
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(e->cx, e->fn, "body");
    LLVMBuildBr(e->b, head);
    LLVMPositionBuilderAtEnd(e->b, head);
    LLVMValueRef iv = LLVMBuildPhi(e->b, e->i64, "i");
    LLVMValueRef test = LLVMBuildICmp(e->b, LLVMIntSLT, iv, hi, "");
    LLVMPositionBuilderAtEnd(e->b, body);
    LLVMValueRef saved = e->vars[s->var];
    e->vars[s->var] = iv;
    int calls = e->libm_calls, loops = ++e->loops;
    int rc = emit_block(e, body_stmts, depth + 1);
    free(inner.s);
    e->vars[s->var] = saved;
    if (rc < 0)
        return -1;
    /* appended now so blocks print in source order */
    LLVMBasicBlockRef latch = LLVMAppendBasicBlockInContext(e->cx, e->fn, "latch");
    LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(e->cx, e->fn, "done");
    LLVMBuildBr(e->b, latch);
    LLVMPositionBuilderAtEnd(e->b, head);
    LLVMBuildCondBr(e->b, test, body, exit);
    LLVMPositionBuilderAtEnd(e->b, latch);
    LLVMValueRef next = LLVMBuildNSWAdd(e->b, iv, em_ci64(e, 1), "");
    LLVMValueRef back = LLVMBuildBr(e->b, head);
    LLVMValueRef in_v[] = {lo, next};
    LLVMBasicBlockRef in_b[] = {pre, latch};
    LLVMAddIncoming(iv, in_v, in_b, 2);

    int w = s->width > 0 ? s->width : 1;
    /* A constant trip count: the power of two up to the hinted width
     * that leaves the least work, counting a vector step and each scalar
     * remainder iteration as one (LLVM, held to the hinted width, leaves
     * a loop shorter than it scalar, and runs the remainder scalar): 8
     * columns on a 16-lane target get 8 lanes, a row of 48 u8 (64 lanes
     * hinted) 3 steps of 16 instead of 32 lanes and 16 scalar
     * iterations, which held a QDQ CNN's requantizing kernels to 3
     * GFLOP/s. Ties keep the wider. */
    if (s->loop == KIR_VECTOR && w > 2 && LLVMIsAConstantInt(lo) && LLVMIsAConstantInt(hi)) {
        long long n = LLVMConstIntGetSExtValue(hi) - LLVMConstIntGetSExtValue(lo), best = -1;
        for (int c = w; c >= 2 && n > 0; c /= 2) {
            long long cost = n / c + n % c;
            if (best < 0 || cost < best)
                best = cost, w = c;
        }
    }
    LLVMMetadataRef hints[5];
    size_t nh = 0;
    /* LLVM vectorises innermost loops only, and cannot widen libm calls
     * (sinf, f64 tanh...; f32 exp/tanh/erf are inline code); where it
     * cannot, a forced hint only yields a warning on stderr, so such loops
     * get none. */
    if (s->loop == KIR_VECTOR && e->libm_calls == calls && e->loops == loops && e->wvar < 0) {
        hints[nh++] = loop_hint(e, "llvm.loop.vectorize.enable", LLVMConstInt(e->i1, 1, 0));
        hints[nh++] = loop_hint(e, "llvm.loop.vectorize.width", LLVMConstInt(e->i32, (unsigned)w, 0));
        if (s->tail_mask)
            hints[nh++] = loop_hint(e, "llvm.loop.vectorize.predicate.enable", LLVMConstInt(e->i1, 1, 0));
        /* a trip count of symbols (a symbolic image's row) may be short:
         * LLVM would interleave 4 vectors and run rows below 4 x the width
         * (a 56-wide row on 16 lanes) all scalar */
        if (has_sym(s->lo) || has_sym(s->hi))
            hints[nh++] = loop_hint(e, "llvm.loop.interleave.count", LLVMConstInt(e->i32, 1, 0));
        /* a constant trip count of a vector or more: not unrolled before
         * the vectorizer runs, which then widened the loop around it
         * instead, with gathers and scatters along its stride (a
         * squeeze-excite Mul over [14 rows, 16 lanes] inlined into the run
         * function: 47 -> 2 us, MobileNetV3 1.73 -> 1.42 ms on 1 thread) */
        if (LLVMIsAConstantInt(lo) && LLVMIsAConstantInt(hi) &&
            LLVMConstIntGetSExtValue(hi) - LLVMConstIntGetSExtValue(lo) >= w)
            hints[nh++] = loop_hint(e, "llvm.loop.unroll.disable", NULL);
    } else if (s->loop == KIR_UNROLL) {
        hints[nh++] = loop_hint(e, "llvm.loop.unroll.count", LLVMConstInt(e->i32, (unsigned)w, 0));
    }
    if (nh)
        LLVMSetMetadata(back, e->kind_loop, LLVMMetadataAsValue(e->cx, md_self(e, hints, nh)));
    LLVMPositionBuilderAtEnd(e->b, exit);
    return amx_rel ? em_intrinsic(e, amx_rel) : 0;
}

static int emit_if(em *e, const kir_stmt *s, int depth)
{
    LLVMValueRef c = em_eval(e, s->cond);
    if (!c)
        return -1;
    LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(e->cx, e->fn, "then");
    LLVMBasicBlockRef els = LLVMAppendBasicBlockInContext(e->cx, e->fn, "else");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(e->cx, e->fn, "endif");
    LLVMBuildCondBr(e->b, c, then, els);
    LLVMPositionBuilderAtEnd(e->b, then);
    if (emit_block(e, &s->body, depth + 1) < 0)
        return -1;
    LLVMBuildBr(e->b, join);
    LLVMPositionBuilderAtEnd(e->b, els);
    if (emit_block(e, &s->orelse, depth + 1) < 0)
        return -1;
    LLVMBuildBr(e->b, join);
    LLVMPositionBuilderAtEnd(e->b, join);
    return 0;
}

static int emit_block(em *e, const kir_block *bl, int depth)
{
    for (int i = 0; i < bl->n; i++) {
        const kir_stmt *s = bl->s[i];
        memo_clear(&e->memo);
        int rc = 0;
        switch (s->kind) {
        case KIR_S_FOR: rc = emit_for(e, s, depth); break;
        case KIR_S_IF: rc = emit_if(e, s, depth); break;
        case KIR_S_STORE: rc = emit_store(e, s); break;
        case KIR_S_LET: /* an SSA value, dominating its scope */
            if (!(e->lets[s->let] = em_eval(e, s->value)))
                return -1;
            break;
        case KIR_S_BARRIER: /* a CPU block is one thread: nothing to wait for */
            break;
        case KIR_S_INTRINSIC: rc = s->intrin == KIR_IN_PREFETCH_L2 ? emit_prefetch(e, s) : em_intrinsic(e, s); break;
        case KIR_S_FAIL: {
            /* atomic: chunks on other threads may fail at the same time */
            int32_t code = ICC_ERR_INVALID | ((e->k->fail_base + s->msg) << 8);
            LLVMValueRef st = LLVMBuildStore(e->b, LLVMConstInt(e->i32, (unsigned)code, 0),
                                             e->base[e->k->status_buf]);
            LLVMSetOrdering(st, LLVMAtomicOrderingMonotonic);
            LLVMSetAlignment(st, 4);
            break;
        }
        case KIR_S_ACC_SET: {
            const kir_expr *rest[2];
            if (e->vnans && e->vnans[s->acc] && red_form(s->value, s->acc, rest) == 1) {
                /* a max or min on vrange (em_range_red), the NaNs beside it */
                LLVMValueRef x = splat(e, em_eval(e, rest[0]));
                if (!x)
                    return -1;
                LLVMTypeRef vt = LLVMTypeOf(x), mt = LLVMVectorType(LLVMInt1TypeInContext(e->cx), e->wlanes);
                LLVMValueRef old = LLVMBuildLoad2(e->b, vt, e->vaccs[s->acc], "");
                LLVMValueRef nan = LLVMBuildFCmp(e->b, LLVMRealUNO, x, x, "");
                LLVMValueRef r = range_vec(e, old, x, s->value->op == KIR_MAX);
                if (e->wmask) { /* masked lanes keep theirs */
                    r = LLVMBuildSelect(e->b, e->wmask, r, old, "");
                    nan = LLVMBuildAnd(e->b, nan, e->wmask, "");
                }
                LLVMBuildStore(e->b, r, e->vaccs[s->acc]);
                LLVMBuildStore(e->b, LLVMBuildOr(e->b, LLVMBuildLoad2(e->b, mt, e->vnans[s->acc], ""), nan, ""),
                               e->vnans[s->acc]);
                break;
            }
            LLVMValueRef v = em_eval(e, s->value);
            if (!v)
                return -1;
            if (e->vaccs[s->acc]) {
                v = splat(e, v);
                if (e->wmask && e->wred && e->wred[s->acc]) { /* masked lanes keep their sum */
                    LLVMValueRef old = LLVMBuildLoad2(e->b, LLVMTypeOf(v), e->vaccs[s->acc], "");
                    v = LLVMBuildSelect(e->b, e->wmask, v, old, "");
                }
                LLVMBuildStore(e->b, v, e->vaccs[s->acc]);
            }
            else
                LLVMBuildStore(e->b, v, e->accs[s->acc]);
            break;
        }
        }
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* ---- the function ---------------------------------------------------------- */

/* Base pointers, strides and alias scopes, computed in the entry block. */
static int emit_prologue(em *e)
{
    const kir_kernel *k = e->k;
    LLVMMetadataRef domain = NULL, *scopes = NULL;
    if (k->nbufs > 1) {
        LLVMMetadataRef name = md_str(e, k->name);
        domain = md_self(e, &name, 1);
        if (!(scopes = calloc((size_t)k->nbufs, sizeof *scopes)))
            return ir_errorf(e->d, "out of memory");
    }
    for (int i = 0; i < k->nbufs; i++) {
        const kir_buf *bf = &k->bufs[i];
        bool err = false;
        if (!(e->base[i] = em_scratch_base(e, i, &err)) && !err) {
            LLVMValueRef p = LLVMBuildInBoundsGEP2(e->eb, e->ptr, e->bufs_arg, (LLVMValueRef[]){em_ci64(e, i)}, 1, "");
            e->base[i] = LLVMBuildLoad2(e->eb, e->ptr, p, bf->name);
        }
        if (err) {
            free(scopes);
            return -1;
        }
        LLVMValueRef st = em_ci64(e, 1);
        for (int dd = bf->rank - 1; dd >= 0; dd--) {
            e->stride[i][dd] = st;
            const kir_expr *dim = bf->dims[dd];
            LLVMValueRef dv = !dim ? NULL : dim->op == KIR_CONST ? em_ci64(e, dim->c.i)
                                          : dim->op == KIR_SYM   ? sym_value(e, dim->var) : NULL;
            if (!dv) {
                free(scopes);
                return ir_errorf(e->d, "kernel '%.100s': dim %d of buffer '%.100s' is not a constant or symbol",
                                 k->name, dd, bf->name);
            }
            st = LLVMBuildNSWMul(e->eb, st, dv, "");
        }
        if (scopes) {
            LLVMMetadataRef ops[] = {domain, md_str(e, bf->name)};
            scopes[i] = md_self(e, ops, 2);
        }
    }
    for (int i = 0; scopes && i < k->nbufs; i++) {
        e->scope_md[i] = LLVMMetadataAsValue(e->cx, LLVMMDNodeInContext2(e->cx, &scopes[i], 1));
        /* past 64 other buffers the list is cut: fewer no-alias facts, still true */
        LLVMMetadataRef others[64];
        size_t n = 0;
        for (int j = 0; j < k->nbufs && n < 64; j++)
            if (j != i)
                others[n++] = scopes[j];
        e->noalias_md[i] = LLVMMetadataAsValue(e->cx, LLVMMDNodeInContext2(e->cx, others, n));
    }
    free(scopes);
    for (int i = 0; i < k->naccs; i++)
        e->accs[i] = LLVMBuildAlloca(e->eb, em_reg_type(e, k->acc_dtype[i]), "acc");
    return 0;
}

static int emit_function(em *e)
{
    const kir_kernel *k = e->k;
    LLVMTypeRef params[] = {e->ptr, e->ptr, e->i64, e->i64};
    LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(e->cx), params, 4, 0);
    e->fn = LLVMAddFunction(e->m, k->name, fty);
    LLVMAddAttributeAtIndex(e->fn, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(e->cx, LLVMGetEnumAttributeKindForName("nounwind", 8), 0));
    /* bufs and syms are only read, and only through these pointers */
    const char *pattrs[] = {"noalias", "readonly", "nocapture"};
    for (unsigned p = 1; p <= 2; p++)
        for (int i = 0; i < 3; i++) {
            unsigned kind = LLVMGetEnumAttributeKindForName(pattrs[i], strlen(pattrs[i]));
            if (kind)
                LLVMAddAttributeAtIndex(e->fn, p, LLVMCreateEnumAttribute(e->cx, kind, 0));
        }
    cg_target_tune_function(e->t, e->fn);
    e->bufs_arg = LLVMGetParam(e->fn, 0);
    e->syms_arg = LLVMGetParam(e->fn, 1);
    e->begin = LLVMGetParam(e->fn, 2);
    e->end = LLVMGetParam(e->fn, 3);
    LLVMSetValueName2(e->bufs_arg, "bufs", 4);
    LLVMSetValueName2(e->syms_arg, "syms", 4);
    LLVMSetValueName2(e->begin, "begin", 5);
    LLVMSetValueName2(e->end, "end", 3);

    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(e->cx, e->fn, "entry");
    LLVMBasicBlockRef start = LLVMAppendBasicBlockInContext(e->cx, e->fn, "start");
    LLVMPositionBuilderAtEnd(e->eb, entry);
    LLVMPositionBuilderAtEnd(e->b, start);
    if (emit_prologue(e) < 0 || emit_block(e, &k->body, 0) < 0)
        return -1;
    LLVMBuildRetVoid(e->b);
    LLVMBuildBr(e->eb, start);
    return 0;
}

int cg_llvm_emit_kernel(const cg_target *t, LLVMModuleRef m, kir_kernel *k, LLVMValueRef *fn, icc_diag *d)
{
    *fn = NULL;
    if (kir_verify(k, d) < 0)
        return -1;
    /* libm calls block the loop vectoriser: f32 exp/log/tanh/erf become
     * the target-neutral polynomial expansions (kir_math.c) */
    if (kir_expand_math(k) < 0)
        return ir_errorf(d, "out of memory");
    if (!k->name || !*k->name)
        return ir_errorf(d, "kernel without a name");
    if (LLVMGetNamedFunction(m, k->name))
        return ir_errorf(d, "kernel '%.100s': the module already has a function of that name", k->name);
    em e = {.t = t, .k = k, .d = d, .m = m, .cx = LLVMGetModuleContext(m)};
    e.i1 = LLVMInt1TypeInContext(e.cx);
    e.i8 = LLVMInt8TypeInContext(e.cx);
    e.i16 = LLVMInt16TypeInContext(e.cx);
    e.i32 = LLVMInt32TypeInContext(e.cx);
    e.i64 = LLVMInt64TypeInContext(e.cx);
    e.f32 = LLVMFloatTypeInContext(e.cx);
    e.f64 = LLVMDoubleTypeInContext(e.cx);
    e.half = LLVMHalfTypeInContext(e.cx);
    e.ptr = LLVMPointerTypeInContext(e.cx, 0);
    e.kind_scope = LLVMGetMDKindIDInContext(e.cx, "alias.scope", 11);
    e.kind_noalias = LLVMGetMDKindIDInContext(e.cx, "noalias", 7);
    e.kind_loop = LLVMGetMDKindIDInContext(e.cx, "llvm.loop", 9);
    size_t nb = (size_t)k->nbufs + 1;
    e.base = calloc(nb, sizeof *e.base);
    e.stride = calloc(nb, sizeof *e.stride);
    e.scope_md = calloc(nb, sizeof *e.scope_md);
    e.noalias_md = calloc(nb, sizeof *e.noalias_md);
    e.vars = calloc((size_t)k->nvars + 1, sizeof *e.vars);
    e.accs = calloc((size_t)k->naccs + 1, sizeof *e.accs);
    e.vaccs = calloc((size_t)k->naccs + 1, sizeof *e.vaccs);
    e.vnans = calloc((size_t)k->naccs + 1, sizeof *e.vnans);
    e.lets = calloc((size_t)k->nlets + 1, sizeof *e.lets);
    e.wvar = -1;
    e.b = LLVMCreateBuilderInContext(e.cx);
    e.eb = LLVMCreateBuilderInContext(e.cx);
    int rc;
    if (!e.base || !e.stride || !e.scope_md || !e.noalias_md || !e.vars || !e.accs || !e.vaccs || !e.vnans || !e.lets)
        rc = ir_errorf(d, "out of memory");
    else
        rc = emit_function(&e);
    if (rc < 0 && e.fn)
        LLVMDeleteFunction(e.fn);
    else if (rc == 0)
        *fn = e.fn;
    LLVMDisposeBuilder(e.b);
    LLVMDisposeBuilder(e.eb);
    free(e.base);
    free(e.stride);
    free(e.scope_md);
    free(e.noalias_md);
    free(e.vars);
    free(e.accs);
    free(e.vaccs);
    free(e.vnans);
    free(e.lets);
    free(e.syms);
    free(e.memo.slot);
    free(e.wmemo.slot);
    free(e.wcmemo.slot);
    return rc;
}
