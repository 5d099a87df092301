/* kir_math.c - f32 exp, log, tanh, erf, erfc and gelu built from
 * kernel-IR arithmetic (kir_math.h), and the rewrite that puts them in
 * place of EXP, LOG, TANH, ERF, ERFC and GELU.
 *
 * The polynomial coefficients were fitted by us (iteratively reweighted
 * least squares on Chebyshev nodes, in double) and checked in an f32
 * simulation against high-precision values: exp <= 1.1 ulp, log <= 1.2
 * ulp, tanh <= 1.3 ulp, erf <= 1.9 ulp over their whole ranges with fused
 * multiply-adds (MULADD: fused where the target has FMA, a bit less
 * accurate elsewhere).
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
 *            -inf, inf stays inf.
 *   erf(x):  |x| < 1: |x| + |x| Q(x^2); else 1 - e^{R(|x| - 2.5)} with R
 *            fitting log(erfc) on [1, 4] (weighted by erfc, the part that
 *            survives the subtraction); |x| is clamped to 4, where erf
 *            rounds to 1; the sign copied from x.
 *   erfc(x): with a = |x| clamped to 10.5, e^{-a^2} H(t) / (a + 2),
 *            t = (a - 2) / (a + 2), H fitting (a + 2) erfc(a) e^{a^2}
 *            (relative error 3.6e-9; H varies 2x where erfc(a) e^{a^2}
 *            varies 19x, so its Horner sum does not cancel); a^2 split
 *            into its rounded value and the FMA's exact remainder, the
 *            remainder added inside exp's reduction; 2 - that for x < 0.
 *            Nothing cancels, so the tail stays accurate down to the
 *            subnormals (what Gelu's x < 0 side needs); <= 4 ulp, most of
 *            it from rounding a + 2, which enters twice.
 */
#include "codegen/kir_math.h"

#include <math.h>
#include <stdlib.h>

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

/* (a + 2) erfc(a) e^{a^2} in powers of t = (a - 2) / (a + 2), a in [0, 10.5] */
static const double erfc_h[] = {1.021582708923821, -0.6871606941802774, 0.27947175132154944,
                                -0.03644187142974362, -0.02150550662114203, 0.006476633662786402,
                                0.0030620019553862705, -0.0008345282558093642, -0.0005926989562234935,
                                4.964383933215441e-05, 7.093429534106003e-05};

/* For results rounded to bf16 (kir_math_gelu_bf16), fitted the same way:
 * e^r on |r| <= ln2/2 as one polynomial (relative 2e-7 in f32 Horner), and
 * Phi(-a) e^{a^2/2} in powers of t = (a - 2 sqrt 2) / (a + 2 sqrt 2), a in
 * [0, 14.85] (relative 4.2e-7; Phi the normal distribution). */
static const double exp_n[] = {1.0000000741292652, 0.9999996811999221, 0.4999886938069557,
                               0.1666759586940701, 0.041918242888842286, 0.008297239646078853};
static const double phi_g[] = {0.12769784353036975, -0.2135934970752822, 0.12082963202577392,
                               -0.03947868449742664, 0.0018575516761955367, 0.003444923185737213,
                               -0.00039383995306184623, -0.0003817624335800845};

#define NCOEF(a) (int)(sizeof(a) / sizeof(a[0]))
#define F IR_F32
#define I IR_I32

static kir_expr *fk(kir_kernel *k, double v) { return kir_const_f(k, F, v); }
static kir_expr *ik(kir_kernel *k, int64_t v) { return kir_const_i(k, I, v); }
static kir_expr *f2(kir_kernel *k, kir_op op, kir_expr *a, kir_expr *b) { return kir_op2(k, op, F, a, b); }
static kir_expr *i2(kir_kernel *k, kir_op op, kir_expr *a, kir_expr *b) { return kir_op2(k, op, I, a, b); }
static kir_expr *muladd(kir_kernel *k, kir_expr *a, kir_expr *b, kir_expr *c)
{
    return kir_op3(k, KIR_MULADD, F, a, b, c);
}
static kir_expr *lt(kir_kernel *k, kir_expr *a, kir_expr *b) { return kir_op2(k, KIR_LT, IR_BOOL, a, b); }
static kir_expr *sel(kir_kernel *k, kir_expr *c, kir_expr *a, kir_expr *b) { return kir_op3(k, KIR_SELECT, F, c, a, b); }

static kir_expr *horner(kir_kernel *k, kir_expr *x, const double *c, int n)
{
    kir_expr *r = fk(k, c[n - 1]);
    for (int i = n - 2; i >= 0; i--)
        r = muladd(k, r, x, fk(k, c[i]));
    return r;
}

/* x < lo ? lo : x > hi ? hi : x, with NaN passing through */
static kir_expr *clamp(kir_kernel *k, kir_expr *x, double lo, double hi)
{
    kir_expr *l = fk(k, lo), *h = fk(k, hi);
    x = sel(k, lt(k, x, l), l, x);
    return sel(k, lt(k, h, x), h, x);
}

/* e^r for x = n ln2 + r, |r| <= ln2/2, into *t: x log2(e) + 1.5 * 2^23,
 * whose bits are those of 1.5 * 2^23 plus n (adding it rounds to an
 * integer held in the low mantissa bits). lo (or NULL) is a small
 * correction to x that the reduction adds after x - n ln2_hi, which is
 * exact, so it is not lost to x's rounding. Coarse (for results rounded
 * to bf16): ln2 in one part and one polynomial, relative 5e-7. */
static kir_expr *exp_poly(kir_kernel *k, kir_expr *x, kir_expr *lo, bool coarse, kir_expr **t)
{
    kir_expr *magic = fk(k, 12582912.0);
    *t = muladd(k, x, fk(k, 1.4426950408889634), magic);
    kir_expr *n = f2(k, KIR_SUB, *t, magic);
    if (coarse)
        return horner(k, muladd(k, n, fk(k, -0.6931471805599453), x), exp_n, NCOEF(exp_n));
    kir_expr *r = muladd(k, n, fk(k, -0.693359375), x);
    if (lo)
        r = f2(k, KIR_ADD, r, lo);
    r = muladd(k, n, fk(k, 2.12194440e-4), r);
    kir_expr *p = muladd(k, f2(k, KIR_MUL, r, r), horner(k, r, exp_p, NCOEF(exp_p)), r);
    return f2(k, KIR_ADD, p, fk(k, 1));
}

/* e^(x + lo) (exp_poly's lo), x clamped to [-104, 89] first. */
static kir_expr *exp2part(kir_kernel *k, kir_expr *x, kir_expr *lo)
{
    kir_expr *t, *p = exp_poly(k, clamp(k, x, -104, 89), lo, false, &t);
    /* 2^n as 2^n1 * 2^n2, each a normal number for n in [-150, 129] */
    kir_expr *ni = i2(k, KIR_SUB, kir_op1(k, KIR_BITCAST, I, t), ik(k, 0x4b400000)); /* the bits of magic */
    kir_expr *n1 = i2(k, KIR_ASHR, ni, ik(k, 1));
    kir_expr *n2 = i2(k, KIR_SUB, ni, n1);
    kir_expr *s1 = i2(k, KIR_SHL, i2(k, KIR_ADD, n1, ik(k, 127)), ik(k, 23));
    kir_expr *s2 = i2(k, KIR_SHL, i2(k, KIR_ADD, n2, ik(k, 127)), ik(k, 23));
    p = f2(k, KIR_MUL, p, kir_op1(k, KIR_BITCAST, F, s1));
    return f2(k, KIR_MUL, p, kir_op1(k, KIR_BITCAST, F, s2));
}

kir_expr *kir_math_exp_f32(kir_kernel *k, kir_expr *x) { return exp2part(k, x, NULL); }

/* e^(x + lo) for x in [-131, 0] (or NaN), as exp2part but without its
 * clamps and with a cheaper 2^n: n + 191 is in [1, 254] there, so 2^(n +
 * 64) is a normal number whose product with the polynomial is exact, and
 * the one rounding is the multiply by 2^-64 (into the subnormals where the
 * result is that small). Not coarse: bit for bit what exp2part gives.
 * exp_nonpos_2p64 leaves that multiply out: e^x 2^64, a normal number for
 * x >= -131, so a caller can go on computing with it without subnormal
 * operands (each one a microcode assist on x86: Gelu over values past
 * |x| = 13 ran 8x slower) and round into the subnormals once, last. */
static kir_expr *exp_nonpos_2p64(kir_kernel *k, kir_expr *x, kir_expr *lo, bool coarse)
{
    kir_expr *t, *p = exp_poly(k, x, lo, coarse, &t);
    kir_expr *e = i2(k, KIR_ADD, kir_op1(k, KIR_BITCAST, I, t), ik(k, 127 + 64 - 0x4b400000));
    kir_expr *s = kir_op1(k, KIR_BITCAST, F, i2(k, KIR_SHL, e, ik(k, 23)));
    return f2(k, KIR_MUL, p, s);
}

static kir_expr *exp_nonpos(kir_kernel *k, kir_expr *x, kir_expr *lo, bool coarse)
{
    return f2(k, KIR_MUL, exp_nonpos_2p64(k, x, lo, coarse), fk(k, 0x1p-64));
}

kir_expr *kir_math_exp_nonpos_f32(kir_kernel *k, kir_expr *x)
{
    /* below -131 the result is 0 either way (exp2part's clamp is -104) */
    return exp_nonpos(k, sel(k, lt(k, x, fk(k, -131)), fk(k, -131), x), NULL, false);
}

kir_expr *kir_math_log_f32(kir_kernel *k, kir_expr *x)
{
    kir_expr *sub = lt(k, x, fk(k, 1.17549435e-38));
    kir_expr *xs = sel(k, sub, f2(k, KIR_MUL, x, fk(k, 8388608.0)), x);
    /* e = the exponent that puts the mantissa in [sqrt(1/2), sqrt(2)) */
    kir_expr *bits = kir_op1(k, KIR_BITCAST, I, xs);
    kir_expr *e = i2(k, KIR_ASHR, i2(k, KIR_SUB, bits, ik(k, 0x3f3504f3)), ik(k, 23));
    kir_expr *m = kir_op1(k, KIR_BITCAST, F, i2(k, KIR_SUB, bits, i2(k, KIR_SHL, e, ik(k, 23))));
    e = i2(k, KIR_SUB, e, kir_op3(k, KIR_SELECT, I, sub, ik(k, 23), ik(k, 0)));
    kir_expr *ef = kir_op1(k, KIR_CAST, F, e);
    kir_expr *f = f2(k, KIR_SUB, m, fk(k, 1));
    kir_expr *ff = f2(k, KIR_MUL, f, f);
    kir_expr *r = muladd(k, ff, fk(k, -0.5), f);
    r = muladd(k, f2(k, KIR_MUL, ff, f), horner(k, f, log_p, NCOEF(log_p)), r);
    r = muladd(k, ef, fk(k, -2.12194440e-4), r);
    r = muladd(k, ef, fk(k, 0.693359375), r);
    /* unordered: NaN and negative x give NaN */
    kir_expr *nonneg = kir_op2(k, KIR_LE, IR_BOOL, fk(k, 0), x);
    r = sel(k, kir_op1(k, KIR_NOT, IR_BOOL, nonneg), fk(k, NAN), r);
    r = sel(k, kir_op2(k, KIR_EQ, IR_BOOL, x, fk(k, 0)), fk(k, -INFINITY), r);
    return sel(k, kir_op2(k, KIR_EQ, IR_BOOL, x, fk(k, INFINITY)), x, r);
}

kir_expr *kir_math_tanh_f32(kir_kernel *k, kir_expr *x)
{
    kir_expr *a = kir_op1(k, KIR_ABS, F, x), *a2 = f2(k, KIR_MUL, a, a);
    kir_expr *small = muladd(k, f2(k, KIR_MUL, a, a2), horner(k, a2, tanh_p, NCOEF(tanh_p)), a);
    kir_expr *e2 = kir_math_exp_f32(k, f2(k, KIR_ADD, a, a));
    kir_expr *q = f2(k, KIR_DIV, fk(k, 2), f2(k, KIR_ADD, e2, fk(k, 1)));
    kir_expr *big = f2(k, KIR_SUB, fk(k, 1), q);
    return f2(k, KIR_COPYSIGN, sel(k, lt(k, a, fk(k, 0.625)), small, big), x);
}

kir_expr *kir_math_erf_f32(kir_kernel *k, kir_expr *x)
{
    kir_expr *a = kir_op1(k, KIR_ABS, F, x), *a2 = f2(k, KIR_MUL, a, a);
    kir_expr *small = muladd(k, a, horner(k, a2, erf_q, NCOEF(erf_q)), a);
    kir_expr *u = f2(k, KIR_SUB, clamp(k, a, 0, 4), fk(k, 2.5));
    kir_expr *erfc = kir_math_exp_f32(k, horner(k, u, erfc_r, NCOEF(erfc_r)));
    kir_expr *big = f2(k, KIR_SUB, fk(k, 1), erfc);
    return f2(k, KIR_COPYSIGN, sel(k, lt(k, a, fk(k, 1)), small, big), x);
}

/* erfc(b) 2^64 for b = |x| clamped to [0, 10.5] (or NaN): e^(-b^2) H(t) /
 * (b + 2), with b^2 = p + e given (exactly, or as nearly as the caller
 * can: e^(-b^2) takes b^2's relative error times b^2, 1e-5 from rounding
 * b alone at b = 9). Normal all the
 * way (erfc(10.5) 2^64 ~ 2e-30), no subnormal operand (each one a
 * microcode assist on x86: Gelu over values past |x| = 13 ran 8x slower
 * for them); past b = 10.06 erfc is under 2^-150 and rounds to 0, so it
 * is 0 here already, and the callers' scale-back rounds into the
 * subnormals only where the result is one. */
static kir_expr *erfc_2p64(kir_kernel *k, kir_expr *b, kir_expr *p, kir_expr *e)
{
    kir_expr *r = f2(k, KIR_DIV, fk(k, 1), f2(k, KIR_ADD, b, fk(k, 2)));
    kir_expr *t = f2(k, KIR_MUL, f2(k, KIR_SUB, b, fk(k, 2)), r);
    kir_expr *ex = exp_nonpos_2p64(k, kir_op1(k, KIR_NEG, F, p), kir_op1(k, KIR_NEG, F, e), false);
    kir_expr *tail = f2(k, KIR_MUL, f2(k, KIR_MUL, ex, horner(k, t, erfc_h, NCOEF(erfc_h))), r);
    return sel(k, lt(k, fk(k, 10.06), b), fk(k, 0), tail);
}

kir_expr *kir_math_erfc_f32(kir_kernel *k, kir_expr *x)
{
    /* a = |x| clamped to 10.5 (past it the result is 0 anyway; the clamp
     * keeps inf out of e) */
    kir_expr *b = clamp(k, kir_op1(k, KIR_ABS, F, x), 0, 10.5);
    /* b^2 = p + e exactly (e by a fused multiply-add, 0 without one) */
    kir_expr *p = f2(k, KIR_MUL, b, b);
    kir_expr *tail = erfc_2p64(k, b, p, muladd(k, b, b, kir_op1(k, KIR_NEG, F, p)));
    /* erfc(-a) = 2 - erfc(a), each rounded once from the scaled tail */
    return sel(k, lt(k, x, fk(k, 0)), muladd(k, tail, fk(k, -0x1p-64), fk(k, 2)), f2(k, KIR_MUL, tail, fk(k, 0x1p-64)));
}

kir_expr *kir_math_gelu_f32(kir_kernel *k, kir_expr *x)
{
    /* x Phi(x) = 0.5 x erfc(-x / sqrt 2): for x >= 0, x (1 - erfc(a) / 2)
     * with a = x / sqrt 2; below, (x erfc(a) 2^64) 2^-65, or -0 where that
     * is under 2^-126 (x < -13.4), selected before the scale-back, which
     * vector code runs on every lane (-inf: tail 0, NaN as the reference) */
    /* a^2 = x^2 / 2 from x (a = |x| / sqrt 2 rounded would put 1e-5 into
     * the tail at a = 9), clamped where a is 10.5 */
    kir_expr *c = clamp(k, kir_op1(k, KIR_ABS, F, x), 0, 14.849242);
    kir_expr *cc = f2(k, KIR_MUL, c, c);
    kir_expr *tail = erfc_2p64(k, f2(k, KIR_MUL, c, fk(k, M_SQRT1_2)), f2(k, KIR_MUL, cc, fk(k, 0.5)),
                               f2(k, KIR_MUL, muladd(k, c, c, kir_op1(k, KIR_NEG, F, cc)), fk(k, 0.5)));
    kir_expr *pos = f2(k, KIR_MUL, x, muladd(k, tail, fk(k, -0x1p-65), fk(k, 1)));
    kir_expr *v = f2(k, KIR_MUL, x, tail);
    kir_expr *neg = f2(k, KIR_MUL, sel(k, lt(k, fk(k, -0x1p-61), v), f2(k, KIR_MUL, x, fk(k, 0)), v), fk(k, 0x1p-65));
    return sel(k, lt(k, x, fk(k, 0)), neg, pos);
}

kir_expr *kir_math_gelu_bf16(kir_kernel *k, kir_expr *x)
{
    /* Phi(-a) = e^{-a^2/2} G(t), t = 1 - 4 sqrt 2 / (a + 2 sqrt 2), a = |x|
     * clamped to 14.85 (erfc's 10.5 at a / sqrt 2); a^2 rounded once
     * (relative 6e-6 in the result at the clamp, 1e-6 at a = 6) */
    const double c = 2 * M_SQRT2;
    kir_expr *a = kir_op1(k, KIR_ABS, F, x);
    a = sel(k, lt(k, fk(k, 14.85), a), fk(k, 14.85), a);
    /* the tail times 2^64 (exp_nonpos_2p64), 0 past a = 14.4, where x
     * Phi(-a) is under 2^-150 and rounds to 0: no subnormal operand on
     * the way, one rounding into the subnormals at the end where the
     * result is one */
    kir_expr *ex = exp_nonpos_2p64(k, f2(k, KIR_MUL, f2(k, KIR_MUL, a, a), fk(k, -0.5)), NULL, true);
    kir_expr *r = f2(k, KIR_DIV, fk(k, 1), f2(k, KIR_ADD, a, fk(k, c)));
    kir_expr *tail = f2(k, KIR_MUL, ex, horner(k, muladd(k, r, fk(k, -2 * c), fk(k, 1)), phi_g, NCOEF(phi_g)));
    tail = sel(k, lt(k, fk(k, 14.4), a), fk(k, 0), tail);
    /* Phi(x) = 1 - Phi(-x); the x < 0 form from min(x, 0), so that the
     * lanes of large positive x, which vector code runs it on too, give 0
     * rather than a subnormal */
    kir_expr *xn = sel(k, lt(k, x, fk(k, 0)), x, fk(k, 0));
    kir_expr *neg = f2(k, KIR_MUL, f2(k, KIR_MUL, xn, tail), fk(k, 0x1p-64));
    return sel(k, lt(k, x, fk(k, 0)), neg, f2(k, KIR_MUL, x, muladd(k, tail, fk(k, -0x1p-64), fk(k, 1))));
}

/* ---- the rewrite ------------------------------------------------------------ */

/* Expressions are a DAG: each node is visited once (an open-addressing
 * set of pointers). */
typedef struct {
    kir_kernel *k;
    const kir_expr **seen;
    size_t cap, n;
    bool oom;
} rw;

static bool first_visit(rw *w, const kir_expr *e)
{
    if (w->n * 2 >= w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 256;
        const kir_expr **old = w->seen, **nw = calloc(cap, sizeof *nw);
        if (!nw) {
            w->oom = true;
            return false;
        }
        size_t oc = w->cap;
        w->seen = nw, w->cap = cap, w->n = 0;
        for (size_t i = 0; i < oc; i++)
            if (old[i])
                first_visit(w, old[i]);
        free(old);
    }
    size_t h = ((uintptr_t)e >> 4) * 0x9e3779b97f4a7c15u;
    for (size_t i = h & (w->cap - 1);; i = (i + 1) & (w->cap - 1)) {
        if (w->seen[i] == e)
            return false;
        if (!w->seen[i]) {
            w->seen[i] = e;
            w->n++;
            return true;
        }
    }
}

static void rw_expr(rw *w, kir_expr *e)
{
    if (!e || w->oom || !first_visit(w, e))
        return;
    for (int i = 0; i < kir_op_arity(e->op); i++)
        rw_expr(w, e->a[i]);
    if (e->op == KIR_LOAD)
        for (int i = 0; i < e->nidx; i++)
            rw_expr(w, e->idx[i]);
    bool math = e->op == KIR_EXP || e->op == KIR_LOG || e->op == KIR_TANH || e->op == KIR_ERF || e->op == KIR_ERFC ||
                e->op == KIR_GELU;
    if (!math || (e->dtype != IR_F32 && e->dtype != IR_F16 && e->dtype != IR_BF16))
        return;
    kir_kernel *k = w->k;
    kir_expr *x = e->dtype == IR_F32 ? e->a[0] : kir_op1(k, KIR_CAST, F, e->a[0]);
    kir_expr *r = e->op == KIR_EXP ? kir_math_exp_f32(k, x) : e->op == KIR_LOG ? kir_math_log_f32(k, x)
                : e->op == KIR_TANH ? kir_math_tanh_f32(k, x) : e->op == KIR_ERF ? kir_math_erf_f32(k, x)
                : e->op == KIR_ERFC ? kir_math_erfc_f32(k, x) : kir_math_gelu_f32(k, x);
    if (r && e->dtype != IR_F32)
        r = kir_op1(k, KIR_CAST, e->dtype, r);   /* rounded once, like the reference */
    if (!r) {
        w->oom = true;
        return;
    }
    *e = *r;   /* every reader of e now reads the expansion */
}

static void rw_block(rw *w, kir_block *b)
{
    for (int i = 0; i < b->n && !w->oom; i++) {
        kir_stmt *s = b->s[i];
        switch (s->kind) {
        case KIR_S_FOR:
            rw_expr(w, s->lo);
            rw_expr(w, s->hi);
            rw_block(w, &s->body);
            break;
        case KIR_S_STORE:
            for (int j = 0; j < s->nidx; j++)
                rw_expr(w, s->idx[j]);
            rw_expr(w, s->value);
            break;
        case KIR_S_ACC_SET:
        case KIR_S_LET:
            rw_expr(w, s->value);
            break;
        case KIR_S_INTRINSIC:
            for (int j = 0; j < s->nargs; j++) {
                for (int x = 0; x < s->args[j].nidx; x++)
                    rw_expr(w, s->args[j].idx[x]);
                if (s->args[j].rows)
                    rw_expr(w, s->args[j].rows);
            }
            break;
        case KIR_S_BARRIER:
        case KIR_S_FAIL:
            break;
        case KIR_S_IF:
            rw_expr(w, s->cond);
            rw_block(w, &s->body);
            rw_block(w, &s->orelse);
            break;
        }
    }
}

int kir_expand_math(kir_kernel *k)
{
    rw w = {.k = k};
    rw_block(&w, &k->body);
    free(w.seen);
    return w.oom ? -1 : 0;
}
