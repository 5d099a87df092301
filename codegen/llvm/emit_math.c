/* emit_math.c - f32 exp, log, tanh and erf emitted inline as polynomials, and
 * integer powers as a square-and-multiply loop (emit_math.h).
 *
 * Why inline: LLVM cannot widen calls to tanhf or erff, and llvm.exp and
 * llvm.log are widened only by scalarising them into libm calls, so loops of Sigmoid,
 * Tanh, Gelu or Softmax ran one element at a time. The code below is
 * straight-line float and integer arithmetic that vectorises like an Add.
 *
 * The polynomial coefficients were fitted by us (iteratively reweighted
 * least squares on Chebyshev nodes, in double) and checked in an f32
 * simulation against high-precision values: exp <= 1.1 ulp, log <= 1.2
 * ulp, tanh <= 1.3 ulp, erf <= 1.9 ulp over their whole ranges with fused multiply-adds
 * (llvm.fmuladd: fused where the target has FMA, a bit less accurate
 * elsewhere).
 *
 *   exp(x):  n = round(x / ln2), r = x - n ln2 (in two parts, so n ln2_hi
 *            is exact), e^r = 1 + r + r^2 P(r) on |r| <= ln2/2, times 2^n
 *            applied as two exponent-field multiplies so that results in
 *            the subnormal range round once. x is clamped to [-104, 89]
 *            first (beyond, the result is 0 or inf anyway); NaN passes
 *            the clamps and propagates through the arithmetic.
 *   tanh(x): |x| < 0.625: |x| + |x|^3 P(x^2); else 1 - 2/(e^{2|x|} + 1),
 *            which has no cancellation there; the sign copied from x.
 *   log(x):  x = 2^e m with m in [sqrt(1/2), sqrt(2)) (subnormals scaled
 *            by 2^23 first), log(m) = f - f^2/2 + f^3 P(f) with f = m - 1,
 *            plus e ln2 in two parts; x < 0 or NaN gives NaN, 0 gives
 *            -inf, inf stays inf (<= 1.2 ulp).
 *   erf(x):  |x| < 1: |x| + |x| Q(x^2); else 1 - e^{R(|x| - 2.5)} with R
 *            fitting log(erfc) on [1, 4] (weighted by erfc, the part that
 *            survives the subtraction); |x| is clamped to 4, where erf
 *            rounds to 1; the sign copied from x.
 */
#include "codegen/llvm/emit_math.h"

#include <math.h>
#include <string.h>

static const double exp_p[] = {0.5000000026926892, 0.16666577005950686, 0.041666375298329714,
                               0.008363175255707098, 0.001394110956752894};
static const double tanh_p[] = {-0.33333329248899485, 0.13332794522170358, -0.053854067251064626,
                                0.021010072334288123, -0.006113180745311246};
/* erf(x)/x - 1 in powers of x^2 */
static const double erf_q[] = {0.1283791657266904, -0.3761262582409388, 0.11283585147034021,
                               -0.026853811869196123, 0.005188327560130385, -0.0008010192521639833,
                               7.853857708931221e-05};
/* (log1p(f) - f + f^2/2) / f^3 in powers of f, |f| <= sqrt(2) - 1 */
static const double log_p[] = {0.3333333170780471, -0.2500082103550152, 0.200012268654014,
                               -0.16623357298071773, 0.14201758233855138, -0.1316018306296995,
                               0.1276157564334596, -0.07634493022506321};
/* log(erfc(a)) in powers of a - 2.5 */
static const double erfc_r[] = {-7.806817802900069, -5.352693969929332, -0.9438853701151941,
                                -0.010717753308123065, 0.0024578006989857764, -0.0001559923376869785,
                                0.00018557489314328568};

#define NCOEF(a) (int)(sizeof(a) / sizeof(a[0]))

/* A constant of type ty: a splat when ty is a vector. */
static LLVMValueRef splat_const(LLVMTypeRef ty, LLVMValueRef c)
{
    if (LLVMGetTypeKind(ty) != LLVMVectorTypeKind)
        return c;
    LLVMValueRef el[256];
    unsigned n = LLVMGetVectorSize(ty);
    if (n > 256) /* kernels have no vectors this wide */
        return LLVMGetPoison(ty);
    for (unsigned i = 0; i < n; i++)
        el[i] = c;
    return LLVMConstVector(el, n);
}

static LLVMTypeRef elem_type(LLVMTypeRef ty)
{
    return LLVMGetTypeKind(ty) == LLVMVectorTypeKind ? LLVMGetElementType(ty) : ty;
}

/* The float constant v of x's type. */
static LLVMValueRef fk(LLVMValueRef x, double v)
{
    LLVMTypeRef ty = LLVMTypeOf(x);
    return splat_const(ty, LLVMConstReal(elem_type(ty), v));
}

/* The i32 (vector) type of x's shape. */
static LLVMTypeRef i32_like(LLVMValueRef x)
{
    LLVMTypeRef ty = LLVMTypeOf(x);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetTypeContext(ty));
    return LLVMGetTypeKind(ty) == LLVMVectorTypeKind ? LLVMVectorType(i32, LLVMGetVectorSize(ty)) : i32;
}

static LLVMValueRef ik(LLVMTypeRef ty, long long v)
{
    return splat_const(ty, LLVMConstInt(elem_type(ty), (unsigned long long)v, 1));
}

static LLVMValueRef call_intr(LLVMBuilderRef b, const char *name, LLVMValueRef *args, unsigned n)
{
    LLVMModuleRef m = LLVMGetGlobalParent(LLVMGetBasicBlockParent(LLVMGetInsertBlock(b)));
    LLVMTypeRef ty = LLVMTypeOf(args[0]);
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(m, id, &ty, 1);
    LLVMTypeRef fty = LLVMIntrinsicGetType(LLVMGetTypeContext(ty), id, &ty, 1);
    return LLVMBuildCall2(b, fty, f, args, n, "");
}

/* a * b + c, fused where that is cheap */
static LLVMValueRef fmuladd(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef y, LLVMValueRef z)
{
    LLVMValueRef args[] = {x, y, z};
    return call_intr(b, "llvm.fmuladd", args, 3);
}

static LLVMValueRef horner(LLVMBuilderRef b, LLVMValueRef x, const double *c, int n)
{
    LLVMValueRef r = fk(x, c[n - 1]);
    for (int i = n - 2; i >= 0; i--)
        r = fmuladd(b, r, x, fk(x, c[i]));
    return r;
}

static LLVMValueRef fabs_(LLVMBuilderRef b, LLVMValueRef x) { return call_intr(b, "llvm.fabs", &x, 1); }

static LLVMValueRef copysign_(LLVMBuilderRef b, LLVMValueRef mag, LLVMValueRef sgn)
{
    LLVMValueRef args[] = {mag, sgn};
    return call_intr(b, "llvm.copysign", args, 2);
}

/* x < lo ? lo : x > hi ? hi : x, with NaN passing through */
static LLVMValueRef clamp(LLVMBuilderRef b, LLVMValueRef x, double lo, double hi)
{
    LLVMValueRef l = fk(x, lo), h = fk(x, hi);
    x = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, x, l, ""), l, x, "");
    return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, x, h, ""), h, x, "");
}

LLVMValueRef cg_math_exp_f32(LLVMBuilderRef b, LLVMValueRef x)
{
    LLVMTypeRef it = i32_like(x);
    x = clamp(b, x, -104, 89);
    /* adding 1.5 * 2^23 rounds to an integer held in the low mantissa bits */
    LLVMValueRef magic = fk(x, 12582912.0);
    LLVMValueRef t = fmuladd(b, x, fk(x, 1.4426950408889634), magic);
    LLVMValueRef n = LLVMBuildFSub(b, t, magic, "");
    LLVMValueRef r = fmuladd(b, n, fk(x, -0.693359375), x);
    r = fmuladd(b, n, fk(x, 2.12194440e-4), r);
    LLVMValueRef p = horner(b, r, exp_p, NCOEF(exp_p));
    p = fmuladd(b, LLVMBuildFMul(b, r, r, ""), p, r);
    p = LLVMBuildFAdd(b, p, fk(x, 1), "");
    /* 2^n as 2^n1 * 2^n2, each a normal number for n in [-150, 129] */
    LLVMValueRef ni = LLVMBuildSub(b, LLVMBuildBitCast(b, t, it, ""), LLVMBuildBitCast(b, magic, it, ""), "");
    LLVMValueRef n1 = LLVMBuildAShr(b, ni, ik(it, 1), "");
    LLVMValueRef n2 = LLVMBuildSub(b, ni, n1, "");
    LLVMValueRef s1 = LLVMBuildShl(b, LLVMBuildAdd(b, n1, ik(it, 127), ""), ik(it, 23), "");
    LLVMValueRef s2 = LLVMBuildShl(b, LLVMBuildAdd(b, n2, ik(it, 127), ""), ik(it, 23), "");
    p = LLVMBuildFMul(b, p, LLVMBuildBitCast(b, s1, LLVMTypeOf(x), ""), "");
    return LLVMBuildFMul(b, p, LLVMBuildBitCast(b, s2, LLVMTypeOf(x), ""), "");
}

LLVMValueRef cg_math_log_f32(LLVMBuilderRef b, LLVMValueRef x)
{
    LLVMTypeRef it = i32_like(x), ft = LLVMTypeOf(x);
    LLVMValueRef sub = LLVMBuildFCmp(b, LLVMRealOLT, x, fk(x, 1.17549435e-38), "");
    LLVMValueRef xs = LLVMBuildSelect(b, sub, LLVMBuildFMul(b, x, fk(x, 8388608.0), ""), x, "");
    /* e = the exponent that puts the mantissa in [sqrt(1/2), sqrt(2)) */
    LLVMValueRef bits = LLVMBuildBitCast(b, xs, it, "");
    LLVMValueRef e = LLVMBuildAShr(b, LLVMBuildSub(b, bits, ik(it, 0x3f3504f3), ""), ik(it, 23), "");
    LLVMValueRef m = LLVMBuildBitCast(b, LLVMBuildSub(b, bits, LLVMBuildShl(b, e, ik(it, 23), ""), ""), ft, "");
    e = LLVMBuildSub(b, e, LLVMBuildSelect(b, sub, ik(it, 23), ik(it, 0), ""), "");
    LLVMValueRef ef = LLVMBuildSIToFP(b, e, ft, "");
    LLVMValueRef f = LLVMBuildFSub(b, m, fk(x, 1), "");
    LLVMValueRef f2 = LLVMBuildFMul(b, f, f, "");
    LLVMValueRef r = fmuladd(b, f2, fk(x, -0.5), f);
    r = fmuladd(b, LLVMBuildFMul(b, f2, f, ""), horner(b, f, log_p, NCOEF(log_p)), r);
    r = fmuladd(b, ef, fk(x, -2.12194440e-4), r);
    r = fmuladd(b, ef, fk(x, 0.693359375), r);
    /* unordered: NaN and negative x give NaN */
    r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealULT, x, fk(x, 0), ""), fk(x, NAN), r, "");
    r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, x, fk(x, 0), ""), fk(x, -INFINITY), r, "");
    return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, x, fk(x, INFINITY), ""), x, r, "");
}

LLVMValueRef cg_math_tanh_f32(LLVMBuilderRef b, LLVMValueRef x)
{
    LLVMValueRef a = fabs_(b, x), a2 = LLVMBuildFMul(b, a, a, "");
    LLVMValueRef small = fmuladd(b, LLVMBuildFMul(b, a, a2, ""), horner(b, a2, tanh_p, NCOEF(tanh_p)), a);
    LLVMValueRef e2 = cg_math_exp_f32(b, LLVMBuildFAdd(b, a, a, ""));
    LLVMValueRef q = LLVMBuildFDiv(b, fk(x, 2), LLVMBuildFAdd(b, e2, fk(x, 1), ""), "");
    LLVMValueRef big = LLVMBuildFSub(b, fk(x, 1), q, "");
    LLVMValueRef lt = LLVMBuildFCmp(b, LLVMRealOLT, a, fk(x, 0.625), "");
    return copysign_(b, LLVMBuildSelect(b, lt, small, big, ""), x);
}

LLVMValueRef cg_math_erf_f32(LLVMBuilderRef b, LLVMValueRef x)
{
    LLVMValueRef a = fabs_(b, x), a2 = LLVMBuildFMul(b, a, a, "");
    LLVMValueRef small = fmuladd(b, a, horner(b, a2, erf_q, NCOEF(erf_q)), a);
    LLVMValueRef u = LLVMBuildFSub(b, clamp(b, a, 0, 4), fk(x, 2.5), "");
    LLVMValueRef erfc = cg_math_exp_f32(b, horner(b, u, erfc_r, NCOEF(erfc_r)));
    LLVMValueRef big = LLVMBuildFSub(b, fk(x, 1), erfc, "");
    LLVMValueRef lt = LLVMBuildFCmp(b, LLVMRealOLT, a, fk(x, 1), "");
    return copysign_(b, LLVMBuildSelect(b, lt, small, big, ""), x);
}

LLVMValueRef cg_math_ipow(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef y, bool is_signed)
{
    LLVMTypeRef ty = LLVMTypeOf(x);
    LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(b));
    LLVMContextRef cx = LLVMGetTypeContext(ty);
    LLVMValueRef zero = LLVMConstNull(ty), one = LLVMConstInt(ty, 1, 0);
    LLVMValueRef neg = is_signed ? LLVMBuildICmp(b, LLVMIntSLT, y, zero, "") : NULL;
    LLVMValueRef e0 = neg ? LLVMBuildSelect(b, neg, zero, y, "") : y;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
    LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(cx, fn, "pow");
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(cx, fn, "pow.step");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cx, fn, "pow.done");
    LLVMBuildBr(b, head);
    LLVMPositionBuilderAtEnd(b, head);
    LLVMValueRef r = LLVMBuildPhi(b, ty, ""), base = LLVMBuildPhi(b, ty, ""), e = LLVMBuildPhi(b, ty, "");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntNE, e, zero, ""), body, done);
    LLVMPositionBuilderAtEnd(b, body);
    LLVMValueRef odd = LLVMBuildTrunc(b, e, LLVMInt1TypeInContext(cx), "");
    LLVMValueRef r2 = LLVMBuildSelect(b, odd, LLVMBuildMul(b, r, base, ""), r, "");
    LLVMValueRef base2 = LLVMBuildMul(b, base, base, "");
    LLVMValueRef e2 = LLVMBuildLShr(b, e, one, "");
    LLVMBuildBr(b, head);
    LLVMAddIncoming(r, (LLVMValueRef[]){one, r2}, (LLVMBasicBlockRef[]){pre, body}, 2);
    LLVMAddIncoming(base, (LLVMValueRef[]){x, base2}, (LLVMBasicBlockRef[]){pre, body}, 2);
    LLVMAddIncoming(e, (LLVMValueRef[]){e0, e2}, (LLVMBasicBlockRef[]){pre, body}, 2);
    LLVMPositionBuilderAtEnd(b, done);
    if (!neg)
        return r;
    /* 1/x**|y| truncated: 1 for x = 1, +-1 for x = -1 by y's parity, else 0 */
    LLVMValueRef m1 = LLVMConstAllOnes(ty);
    LLVMValueRef yodd = LLVMBuildTrunc(b, y, LLVMInt1TypeInContext(cx), "");
    LLVMValueRef inv = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, x, one, ""), one,
                                       LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, x, m1, ""),
                                                       LLVMBuildSelect(b, yodd, m1, one, ""), zero, ""), "");
    return LLVMBuildSelect(b, neg, inv, r, "");
}
