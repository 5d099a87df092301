/* test_llvm_emit.c - kernels built with the kir builders, emitted to LLVM,
 * optimised, linked into a .so, loaded and run; results are checked
 * against the same computation written in plain C: broadcasting add,
 * reductions, matmul, symbolic dims, PARALLEL splits over [begin, end),
 * dtypes (integer division by zero, f16/bf16 rounding, bool, saturating
 * casts), libm-backed math, vector code on this CPU, verifier errors. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "host_cpu.h"
#include "emit_harness.h"


/* A 1-d elementwise kernel y[i] = f(x[i]) over n elements of dtypes xt -> yt. */
static kir_kernel *unary_kernel(const char *name, ir_dtype xt, ir_dtype yt, int64_t n, kir_op op,
                                kir_loop loop, int width)
{
    kir_kernel *k = kir_kernel_create(name, NULL);
    int x = buf(k, "x", KIR_BUF_INPUT, xt, 1, (int64_t[]){n});
    int y = buf(k, "y", KIR_BUF_OUTPUT, yt, 1, (int64_t[]){n});
    int i = kir_new_var(k);
    kir_stmt *l = kir_for(k, &k->body, i, I(0), I(n), loop, width);
    ck_assert_ptr_nonnull(kir_store(k, &l->body, y, IDX(V(i)), kir_op1(k, op, yt, kir_load(k, x, IDX(V(i))))));
    return k;
}

/* (1) y[4,5] = a[4,1] + b[1,5]. */
START_TEST(test_broadcast_add)
{
    kir_kernel *k = kir_kernel_create("bcast_add", NULL);
    int a = buf(k, "a", KIR_BUF_INPUT, IR_F32, 2, (int64_t[]){4, 1});
    int b = buf(k, "b", KIR_BUF_INPUT, IR_F32, 2, (int64_t[]){1, 5});
    int y = buf(k, "y", KIR_BUF_OUTPUT, IR_F32, 2, (int64_t[]){4, 5});
    int i = kir_new_var(k), j = kir_new_var(k);
    kir_stmt *li = kir_for(k, &k->body, i, I(0), I(4), KIR_PARALLEL, 0);
    kir_stmt *lj = kir_for(k, &li->body, j, I(0), I(5), KIR_VECTOR, 16);
    kir_expr *sum = kir_op2(k, KIR_ADD, IR_F32, kir_load(k, a, IDX(V(i), I(0))), kir_load(k, b, IDX(I(0), V(j))));
    ck_assert_ptr_nonnull(kir_store(k, &lj->body, y, IDX(V(i), V(j)), sum));
    emit(k);
    build();
    float av[4] = {1, 2, 3, 4}, bv[5] = {10, 20, 30, 40, 50}, yv[20] = {0};
    get("bcast_add")((void *[]){av, bv, yv}, NULL, 0, 4);
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 5; c++)
            ck_assert_float_eq(yv[r * 5 + c], av[r] + bv[c]);
}
END_TEST

/* (2) y[i] = sum_k x[i,k] with an accumulator. (3) c = a @ b with fma. */
START_TEST(test_reduce_and_matmul)
{
    kir_kernel *k = kir_kernel_create("rowsum", NULL);
    int x = buf(k, "x", KIR_BUF_INPUT, IR_F32, 2, (int64_t[]){3, 7});
    int y = buf(k, "y", KIR_BUF_OUTPUT, IR_F32, 1, (int64_t[]){3});
    int i = kir_new_var(k), kk = kir_new_var(k), acc = kir_new_acc(k, IR_F32);
    kir_stmt *li = kir_for(k, &k->body, i, I(0), I(3), KIR_PARALLEL, 0);
    kir_acc_set(k, &li->body, acc, kir_const_f(k, IR_F32, 0));
    kir_stmt *lk = kir_for(k, &li->body, kk, I(0), I(7), KIR_SERIAL, 0);
    kir_acc_set(k, &lk->body, acc, kir_op2(k, KIR_ADD, IR_F32, kir_acc(k, acc), kir_load(k, x, IDX(V(i), V(kk)))));
    ck_assert_ptr_nonnull(kir_store(k, &li->body, y, IDX(V(i)), kir_acc(k, acc)));
    emit(k);

    k = kir_kernel_create("matmul", NULL);
    int a = buf(k, "a", KIR_BUF_INPUT, IR_F32, 2, (int64_t[]){5, 6});
    int b = buf(k, "b", KIR_BUF_WEIGHT, IR_F32, 2, (int64_t[]){6, 7});
    int c = buf(k, "c", KIR_BUF_OUTPUT, IR_F32, 2, (int64_t[]){5, 7});
    i = kir_new_var(k);
    int j = kir_new_var(k);
    kk = kir_new_var(k);
    acc = kir_new_acc(k, IR_F32);
    li = kir_for(k, &k->body, i, I(0), I(5), KIR_PARALLEL, 0);
    kir_stmt *lj = kir_for(k, &li->body, j, I(0), I(7), KIR_VECTOR, 8);
    kir_acc_set(k, &lj->body, acc, kir_const_f(k, IR_F32, 0));
    lk = kir_for(k, &lj->body, kk, I(0), I(6), KIR_UNROLL, 2);
    kir_acc_set(k, &lk->body, acc,
                kir_op3(k, KIR_FMA, IR_F32, kir_load(k, a, IDX(V(i), V(kk))), kir_load(k, b, IDX(V(kk), V(j))),
                        kir_acc(k, acc)));
    ck_assert_ptr_nonnull(kir_store(k, &lj->body, c, IDX(V(i), V(j)), kir_acc(k, acc)));
    emit(k);
    build();

    float xv[21], yv[3];
    for (int n = 0; n < 21; n++)
        xv[n] = (float)(n * 0.25 - 2);
    get("rowsum")((void *[]){xv, yv}, NULL, 0, 3);
    for (int r = 0; r < 3; r++) {
        float s = 0;
        for (int n = 0; n < 7; n++)
            s += xv[r * 7 + n];
        ck_assert_float_eq_tol(yv[r], s, 1e-5);
    }

    float am[30], bm[42], cm[35];
    for (int n = 0; n < 30; n++)
        am[n] = (float)((n * 7) % 11) - 5;
    for (int n = 0; n < 42; n++)
        bm[n] = (float)((n * 5) % 13) * 0.5f - 3;
    get("matmul")((void *[]){am, bm, cm}, NULL, 0, 5);
    for (int r = 0; r < 5; r++)
        for (int q = 0; q < 7; q++) {
            float s = 0;
            for (int n = 0; n < 6; n++)
                s = fmaf(am[r * 6 + n], bm[n * 7 + q], s);
            ck_assert_float_eq_tol(cm[r * 7 + q], s, 1e-4);
        }
}
END_TEST

/* (4) dims [N,3] with N = symbol 1, and an if/else on j. */
START_TEST(test_symbolic_dim)
{
    kir_kernel *k = kir_kernel_create("symk", NULL);
    int x = buf(k, "x", KIR_BUF_INPUT, IR_I64, 2, (int64_t[]){-1, 3});
    int y = buf(k, "y", KIR_BUF_OUTPUT, IR_I64, 2, (int64_t[]){-1, 3});
    int i = kir_new_var(k), j = kir_new_var(k);
    kir_stmt *li = kir_for(k, &k->body, i, I(0), kir_sym(k, 1), KIR_SERIAL, 0);
    kir_stmt *lj = kir_for(k, &li->body, j, I(0), I(3), KIR_SERIAL, 0);
    /* if j < 2: x * N else: x + N */
    kir_expr *xv = kir_load(k, x, IDX(V(i), V(j)));
    kir_stmt *cond = kir_if(k, &lj->body, kir_op2(k, KIR_LT, IR_BOOL, V(j), I(2)));
    kir_store(k, &cond->body, y, IDX(V(i), V(j)), kir_imul(k, xv, kir_sym(k, 1)));
    kir_store(k, &cond->orelse, y, IDX(V(i), V(j)), kir_iadd(k, xv, kir_sym(k, 1)));
    emit(k);
    build();
    for (int64_t n = 2; n <= 5; n += 3) {
        int64_t xv[15], yv[16];
        for (int q = 0; q < 15; q++)
            xv[q] = q - 4;
        for (int q = 0; q < 16; q++)
            yv[q] = -999;
        int64_t syms[2] = {0, n};
        get("symk")((void *[]){xv, yv}, syms, 0, 0);
        for (int q = 0; q < n * 3; q++)
            ck_assert_int_eq(yv[q], q % 3 < 2 ? xv[q] * n : xv[q] + n);
        ck_assert_int_eq(yv[n * 3], -999);
    }
}
END_TEST

/* (5) a PARALLEL outermost loop run in two halves, and a sub-range. */
START_TEST(test_parallel_range)
{
    kir_kernel *k = kir_kernel_create("par", NULL);
    int x = buf(k, "x", KIR_BUF_INPUT, IR_F32, 1, (int64_t[]){37});
    int y = buf(k, "y", KIR_BUF_OUTPUT, IR_F32, 1, (int64_t[]){37});
    int i = kir_new_var(k);
    kir_stmt *l = kir_for(k, &k->body, i, I(0), I(37), KIR_PARALLEL, 0);
    kir_expr *xi = kir_load(k, x, IDX(V(i)));
    kir_store(k, &l->body, y, IDX(V(i)),
              kir_op2(k, KIR_ADD, IR_F32, kir_op2(k, KIR_MUL, IR_F32, xi, xi),
                      kir_op1(k, KIR_CAST, IR_F32, V(i))));
    emit(k);
    build();
    float xv[37], whole[37], halves[37], part[37];
    for (int q = 0; q < 37; q++) {
        xv[q] = (float)q * 0.5f - 3;
        whole[q] = halves[q] = part[q] = -1;
    }
    kern_fn f = get("par");
    f((void *[]){xv, whole}, NULL, 0, 37);
    f((void *[]){xv, halves}, NULL, 0, 18);
    f((void *[]){xv, halves}, NULL, 18, 100); /* end past hi is clamped */
    f((void *[]){xv, part}, NULL, 5, 9);
    for (int q = 0; q < 37; q++) {
        ck_assert_float_eq(whole[q], xv[q] * xv[q] + (float)q);
        ck_assert_float_eq(halves[q], whole[q]);
        ck_assert_float_eq(part[q], q >= 5 && q < 9 ? whole[q] : -1);
    }
}
END_TEST

/* (6) i32 division/remainder including by zero and INT_MIN / -1. */
START_TEST(test_int_division)
{
    kir_kernel *k = kir_kernel_create("idiv", NULL);
    int a = buf(k, "a", KIR_BUF_INPUT, IR_I32, 1, (int64_t[]){8});
    int b = buf(k, "b", KIR_BUF_INPUT, IR_I32, 1, (int64_t[]){8});
    int q = buf(k, "q", KIR_BUF_OUTPUT, IR_I32, 1, (int64_t[]){8});
    int r = buf(k, "r", KIR_BUF_OUTPUT, IR_I32, 1, (int64_t[]){8});
    int u = buf(k, "u", KIR_BUF_OUTPUT, IR_U8, 1, (int64_t[]){8});
    int i = kir_new_var(k);
    kir_stmt *l = kir_for(k, &k->body, i, I(0), I(8), KIR_VECTOR, 8);
    kir_expr *av = kir_load(k, a, IDX(V(i))), *bv = kir_load(k, b, IDX(V(i)));
    kir_store(k, &l->body, q, IDX(V(i)), kir_op2(k, KIR_DIV, IR_I32, av, bv));
    kir_store(k, &l->body, r, IDX(V(i)), kir_op2(k, KIR_REM, IR_I32, av, bv));
    /* unsigned: u8(a) / u8(b) */
    kir_store(k, &l->body, u, IDX(V(i)),
              kir_op2(k, KIR_DIV, IR_U8, kir_op1(k, KIR_CAST, IR_U8, av), kir_op1(k, KIR_CAST, IR_U8, bv)));
    emit(k);
    build();
    int32_t A[8] = {7, -7, 7, -7, 5, INT32_MIN, 100, 200}, B[8] = {2, 2, -2, -2, 0, -1, 0, 7};
    int32_t Q[8], R[8];
    uint8_t U[8];
    get("idiv")((void *[]){A, B, Q, R, U}, NULL, 0, 0);
    int32_t eq[8] = {3, -3, -3, 3, 0, INT32_MIN, 0, 28}, er[8] = {1, -1, 1, -1, 0, 0, 0, 4};
    for (int n = 0; n < 8; n++) {
        ck_assert_int_eq(Q[n], eq[n]);
        ck_assert_int_eq(R[n], er[n]);
        uint8_t ua = (uint8_t)A[n], ub = (uint8_t)B[n];
        ck_assert_int_eq(U[n], ub ? ua / ub : 0);
    }
}
END_TEST

/* (6) f16 and bf16: y = x * x + 0.1 rounded after each op; cast f32 -> f16. */
START_TEST(test_half_types)
{
    for (int t = 0; t < 2; t++) {
        ir_dtype dt = t ? IR_BF16 : IR_F16;
        kir_kernel *k = kir_kernel_create(t ? "bf16k" : "f16k", NULL);
        int x = buf(k, "x", KIR_BUF_INPUT, dt, 1, (int64_t[]){64});
        int s = buf(k, "s", KIR_BUF_INPUT, IR_F32, 1, (int64_t[]){64});
        int y = buf(k, "y", KIR_BUF_OUTPUT, dt, 1, (int64_t[]){64});
        int c = buf(k, "c", KIR_BUF_OUTPUT, dt, 1, (int64_t[]){64});
        int i = kir_new_var(k);
        kir_stmt *l = kir_for(k, &k->body, i, I(0), I(64), KIR_VECTOR, 16);
        kir_expr *xv = kir_load(k, x, IDX(V(i)));
        kir_store(k, &l->body, y, IDX(V(i)),
                  kir_op2(k, KIR_ADD, dt, kir_op2(k, KIR_MUL, dt, xv, xv), kir_const_f(k, dt, 0.1)));
        kir_store(k, &l->body, c, IDX(V(i)), kir_op1(k, KIR_CAST, dt, kir_load(k, s, IDX(V(i)))));
        emit(k);
    }
    build();
    for (int t = 0; t < 2; t++) {
        float (*to32)(uint16_t) = t ? ir_bf16_to_f32 : ir_f16_to_f32;
        uint16_t (*from32)(float) = t ? ir_f32_to_bf16 : ir_f32_to_f16;
        uint16_t X[64], Y[64], C[64];
        float S[64];
        for (int n = 0; n < 64; n++) {
            X[n] = from32((float)(n - 30) * 0.37f);
            S[n] = (float)(n - 32) * 1.2345678f + (n == 7 ? 1e30f : 0);
        }
        S[9] = NAN;
        get(t ? "bf16k" : "f16k")((void *[]){X, S, Y, C}, NULL, 0, 0);
        float tenth = to32(from32(0.1f));
        for (int n = 0; n < 64; n++) {
            float xf = to32(X[n]);
            uint16_t want = from32(to32(from32(xf * xf)) + tenth);
            ck_assert_msg(Y[n] == want, "%s y[%d] = %04x, want %04x", t ? "bf16" : "f16", n, Y[n], want);
            if (n == 9)
                ck_assert(isnan(to32(C[n])));
            else
                ck_assert_msg(C[n] == from32(S[n]), "cast[%d] %04x vs %04x", n, C[n], from32(S[n]));
        }
    }
}
END_TEST

/* (6) bool comparisons and SELECT; CAST f32 -> i8 saturating, NaN -> 0. */
START_TEST(test_bool_and_cast)
{
    kir_kernel *k = kir_kernel_create("boolk", NULL);
    int x = buf(k, "x", KIR_BUF_INPUT, IR_F32, 1, (int64_t[]){9});
    int y = buf(k, "y", KIR_BUF_INPUT, IR_F32, 1, (int64_t[]){9});
    int m = buf(k, "m", KIR_BUF_OUTPUT, IR_BOOL, 1, (int64_t[]){9});
    int z = buf(k, "z", KIR_BUF_OUTPUT, IR_F32, 1, (int64_t[]){9});
    int c = buf(k, "c", KIR_BUF_OUTPUT, IR_I8, 1, (int64_t[]){9});
    int i = kir_new_var(k);
    kir_stmt *l = kir_for(k, &k->body, i, I(0), I(9), KIR_SERIAL, 0);
    kir_expr *xv = kir_load(k, x, IDX(V(i))), *yv = kir_load(k, y, IDX(V(i)));
    kir_expr *lt = kir_op2(k, KIR_LT, IR_BOOL, xv, yv);
    kir_expr *ne = kir_op2(k, KIR_NE, IR_BOOL, xv, yv);
    kir_store(k, &l->body, m, IDX(V(i)), kir_op2(k, KIR_AND, IR_BOOL, kir_op1(k, KIR_NOT, IR_BOOL, lt), ne));
    kir_store(k, &l->body, z, IDX(V(i)), kir_op3(k, KIR_SELECT, IR_F32, lt, xv, yv));
    kir_store(k, &l->body, c, IDX(V(i)), kir_op1(k, KIR_CAST, IR_I8, xv));
    emit(k);
    build();
    float X[9] = {1.7f, -1.7f, 300, -300, NAN, 127.9f, -128.9f, 2, -0.5f};
    float Y[9] = {2, -2, 0, 0, 1, 127.9f, 0, 2, 5};
    uint8_t M[9];
    float Z[9];
    int8_t C[9];
    get("boolk")((void *[]){X, Y, M, Z, C}, NULL, 0, 0);
    int8_t ec[9] = {1, -1, 127, -128, 0, 127, -128, 2, 0};
    for (int n = 0; n < 9; n++) {
        bool lt = X[n] < Y[n];
        ck_assert_int_eq(M[n], !lt && X[n] != Y[n]);
        if (isnan(X[n]))
            ck_assert(isnan(Z[n]) == 0 && Z[n] == Y[n]);
        else
            ck_assert_float_eq(Z[n], lt ? X[n] : Y[n]);
        ck_assert_int_eq(C[n], ec[n]);
    }
}
END_TEST

/* (6) casts rounded once: f64 -> f16 and i32 -> bf16 where rounding
 * through f32 first would hit a tie; int -> int wraps; f32 -> u8 saturates. */
START_TEST(test_cast_rounding)
{
    kir_kernel *k = kir_kernel_create("casts", NULL);
    int d = buf(k, "d", KIR_BUF_INPUT, IR_F64, 1, (int64_t[]){4});
    int n = buf(k, "n", KIR_BUF_INPUT, IR_I32, 1, (int64_t[]){4});
    int h = buf(k, "h", KIR_BUF_OUTPUT, IR_F16, 1, (int64_t[]){4});
    int bf = buf(k, "bf", KIR_BUF_OUTPUT, IR_BF16, 1, (int64_t[]){4});
    int w = buf(k, "w", KIR_BUF_OUTPUT, IR_I8, 1, (int64_t[]){4});
    int u = buf(k, "u", KIR_BUF_OUTPUT, IR_U8, 1, (int64_t[]){4});
    int i = kir_new_var(k);
    kir_stmt *l = kir_for(k, &k->body, i, I(0), I(4), KIR_SERIAL, 0);
    kir_expr *dv = kir_load(k, d, IDX(V(i))), *nv = kir_load(k, n, IDX(V(i)));
    kir_store(k, &l->body, h, IDX(V(i)), kir_op1(k, KIR_CAST, IR_F16, dv));
    kir_store(k, &l->body, bf, IDX(V(i)), kir_op1(k, KIR_CAST, IR_BF16, nv));
    kir_store(k, &l->body, w, IDX(V(i)), kir_op1(k, KIR_CAST, IR_I8, nv));
    kir_store(k, &l->body, u, IDX(V(i)), kir_op1(k, KIR_CAST, IR_U8, kir_op1(k, KIR_CAST, IR_F32, dv)));
    emit(k);
    build();
    double D[4] = {1 + ldexp(1, -11) + ldexp(1, -40), -2.5, 1e6, -0.0};
    int32_t N[4] = {(1 << 24) + (1 << 16) + 1, -129, 255, 384};
    uint16_t H[4], BF[4];
    int8_t W[4];
    uint8_t U[4];
    get("casts")((void *[]){D, N, H, BF, W, U}, NULL, 0, 0);
    ck_assert_uint_eq(H[0], 0x3c01);   /* 1 + 2^-10: above the tie, not 1.0 */
    ck_assert_uint_eq(H[1], ir_f32_to_f16(-2.5f));
    ck_assert_uint_eq(H[2], 0x7c00);   /* inf */
    ck_assert_uint_eq(H[3], 0x8000);
    ck_assert_float_eq(ir_bf16_to_f32(BF[0]), (float)((1 << 24) + (1 << 17)));
    ck_assert_uint_eq(BF[1], ir_f32_to_bf16(-129.0f));
    int8_t ew[4] = {1, 127, -1, -128};
    uint8_t eu[4] = {1, 0, 255, 0};
    for (int q = 0; q < 4; q++) {
        ck_assert_int_eq(W[q], ew[q]);
        ck_assert_int_eq(U[q], eu[q]);
    }
}
END_TEST

/* (7) exp, tanh, erf within 1e-6 relative of libm. */
START_TEST(test_math)
{
    const kir_op ops[] = {KIR_EXP, KIR_TANH, KIR_ERF};
    const char *names[] = {"k_exp", "k_tanh", "k_erf"};
    for (int o = 0; o < 3; o++)
        emit(unary_kernel(names[o], IR_F32, IR_F32, 101, ops[o], KIR_VECTOR, 16));
    build();
    float X[101], Y[101];
    for (int n = 0; n < 101; n++)
        X[n] = (float)(n - 50) * 0.17f;
    float (*ref[])(float) = {expf, tanhf, erff};
    for (int o = 0; o < 3; o++) {
        get(names[o])((void *[]){X, Y}, NULL, 0, 0);
        for (int n = 0; n < 101; n++) {
            float w = ref[o](X[n]);
            ck_assert_msg(fabsf(Y[n] - w) <= 1e-6f * fabsf(w), "%s(%g) = %.9g, want %.9g", names[o],
                          (double)X[n], (double)Y[n], (double)w);
        }
    }
}
END_TEST

/* (8) a VECTOR loop over 1024 f32 becomes vector code of the CPU's width,
 * with no runtime overlap check between the buffers (scoped noalias). */
START_TEST(test_vector_code)
{
    kir_kernel *k = kir_kernel_create("vadd", NULL);
    int a = buf(k, "a", KIR_BUF_INPUT, IR_F32, 1, (int64_t[]){1024});
    int b = buf(k, "b", KIR_BUF_INPUT, IR_F32, 1, (int64_t[]){1024});
    int y = buf(k, "y", KIR_BUF_OUTPUT, IR_F32, 1, (int64_t[]){1024});
    int i = kir_new_var(k);
    kir_stmt *l = kir_for(k, &k->body, i, I(0), I(1024), KIR_VECTOR, 16);
    kir_store(k, &l->body, y, IDX(V(i)),
              kir_op2(k, KIR_ADD, IR_F32, kir_load(k, a, IDX(V(i))), kir_load(k, b, IDX(V(i)))));
    emit(k);
    ck_assert_int_eq(cg_optimize(tgt, mod, &diag), 0);
    char *ir = cg_emit_llvm_ir(mod);
    ck_assert_ptr_nonnull(ir);
    ck_assert_msg(strstr(ir, "fadd <") != NULL, "not vectorised:\n%s", ir);
    ck_assert_msg(strstr(ir, "vector.memcheck") == NULL, "runtime alias checks:\n%s", ir);
    free(ir);
    char *as = cg_emit_asm(tgt, mod, &diag);
    ck_assert_ptr_nonnull(as);
    const char *want = cpu_has("avx512f") ? "zmm" : cpu_has("avx") ? "ymm" : "xmm";
    ck_assert_msg(strstr(as, want) != NULL, "no %s registers in:\n%.2000s", want, as);
    free(as);
}
END_TEST

/* (9) verifier failures come back as errors; nothing is left in m. */
START_TEST(test_verify_errors)
{
    kir_kernel *k = kir_kernel_create("bad", NULL);
    int x = buf(k, "x", KIR_BUF_INPUT, IR_F32, 1, (int64_t[]){4});
    int i = kir_new_var(k);
    kir_stmt *l = kir_for(k, &k->body, i, I(0), I(4), KIR_SERIAL, 0);
    kir_store(k, &l->body, x, IDX(V(i)), kir_const_f(k, IR_F32, 1));
    LLVMValueRef fn = (LLVMValueRef)1;
    ck_assert_int_eq(cg_llvm_emit_kernel(tgt, mod, k, &fn, &diag), -1);
    ck_assert_ptr_null(fn);
    ck_assert_msg(strstr(diag.msg, "read-only") != NULL, "%s", diag.msg);
    ck_assert_ptr_null(LLVMGetNamedFunction(mod, "bad"));
    kir_kernel_destroy(k);

    /* a duplicate kernel name */
    emit(unary_kernel("dup", IR_F32, IR_F32, 4, KIR_NEG, KIR_SERIAL, 0));
    k = unary_kernel("dup", IR_F32, IR_F32, 4, KIR_NEG, KIR_SERIAL, 0);
    ck_assert_int_eq(cg_llvm_emit_kernel(tgt, mod, k, &fn, &diag), -1);
    ck_assert_msg(strstr(diag.msg, "already") != NULL, "%s", diag.msg);
    kir_kernel_destroy(k);
    ck_assert_int_eq(cg_optimize(tgt, mod, &diag), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("llvm_emit");
    TCase *tc = tcase_create("emit");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, emit_setup, emit_teardown);
    tcase_add_test(tc, test_broadcast_add);
    tcase_add_test(tc, test_reduce_and_matmul);
    tcase_add_test(tc, test_symbolic_dim);
    tcase_add_test(tc, test_parallel_range);
    tcase_add_test(tc, test_int_division);
    tcase_add_test(tc, test_half_types);
    tcase_add_test(tc, test_bool_and_cast);
    tcase_add_test(tc, test_cast_rounding);
    tcase_add_test(tc, test_math);
    tcase_add_test(tc, test_vector_code);
    tcase_add_test(tc, test_verify_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return icc_run_suite(suite()); }
