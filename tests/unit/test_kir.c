/* test_kir.c - the kernel IR: building, verifying and printing kernels. */
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "codegen/kir.h"

/* y[i, j] = sum_k x[i, k] * w[k, j] over x: f32[N, 8], w: f32[8, 4]. */
static kir_kernel *matmul(ir_graph *g)
{
    kir_kernel *k = kir_kernel_create("mm", g);
    int32_t n = ir_graph_sym(g, "N", 1);
    ir_type tx = {IR_F32, 2, {{0, n}, {8, 0}}}, tw = {IR_F32, 2, {{8, 0}, {4, 0}}};
    ir_type ty = {IR_F32, 2, {{0, n}, {4, 0}}};
    int x = kir_add_buf(k, "x", KIR_BUF_INPUT, &tx, 0, 0);
    int w = kir_add_buf(k, "w", KIR_BUF_WEIGHT, &tw, 0, 128);
    int y = kir_add_buf(k, "y", KIR_BUF_OUTPUT, &ty, 0, 0);
    int i = kir_new_var(k), j = kir_new_var(k), kk = kir_new_var(k);
    int acc = kir_new_acc(k, IR_F32);
    kir_stmt *li = kir_for(k, &k->body, i, kir_const_i(k, IR_I64, 0), kir_sym(k, n), KIR_PARALLEL, 0);
    kir_stmt *lj = kir_for(k, &li->body, j, kir_const_i(k, IR_I64, 0), kir_const_i(k, IR_I64, 4),
                           KIR_VECTOR, 4);
    kir_acc_set(k, &lj->body, acc, kir_const_f(k, IR_F32, 0));
    kir_stmt *lk = kir_for(k, &lj->body, kk, kir_const_i(k, IR_I64, 0), kir_const_i(k, IR_I64, 8),
                           KIR_SERIAL, 0);
    kir_expr *xi[2] = {kir_var(k, i), kir_var(k, kk)}, *wi[2] = {kir_var(k, kk), kir_var(k, j)};
    kir_acc_set(k, &lk->body, acc,
                kir_op3(k, KIR_FMA, IR_F32, kir_load(k, x, xi), kir_load(k, w, wi), kir_acc(k, acc)));
    kir_expr *yi[2] = {kir_var(k, i), kir_var(k, j)};
    ck_assert_ptr_nonnull(kir_store(k, &lj->body, y, yi, kir_acc(k, acc)));
    return k;
}

START_TEST(build_verify_print)
{
    ir_graph *g = ir_graph_create("t");
    kir_kernel *k = matmul(g);
    icc_diag d = {{0}};
    ck_assert_msg(kir_verify(k, &d) == 0, "%s", d.msg);
    char *text = kir_print(k);
    ck_assert_str_eq(text,
                     "kernel @mm(b0 %x: f32[N,8] in, b1 %w: f32[8,4] weight+128, b2 %y: f32[N,4] out)\n"
                     "  acc a0: f32\n"
                     "  parallel for v0 in [0, N)\n"
                     "    vector for(4) v1 in [0, 4)\n"
                     "      a0 = 0:f32\n"
                     "      for v2 in [0, 8)\n"
                     "        a0 = fma.f32(b0[v0, v2], b1[v2, v1], a0)\n"
                     "      b2[v0, v1] = a0\n");
    free(text);
    kir_kernel_destroy(k);
    ir_graph_destroy(g);
}
END_TEST

/* Each case breaks one rule; the message says which. */
START_TEST(verifier_catches_errors)
{
    ir_graph *g = ir_graph_create("t");
    ir_type t4 = {IR_F32, 1, {{4, 0}}};
    icc_diag d = {{0}};
    struct {
        int which;
        const char *msg;
    } cases[] = {
        {0, "used outside its loop"}, {1, "read-only buffer 'x'"}, {2, "stores i32 into f32"},
        {3, "parallel loop must be outermost"}, {4, "read before it is set"},
        {5, "index of a store is not i64"}, {6, "bound twice"}, {7, "add of i32 operand into f32"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        kir_kernel *k = kir_kernel_create("bad", g);
        int x = kir_add_buf(k, "x", KIR_BUF_INPUT, &t4, 0, 0);
        int y = kir_add_buf(k, "y", KIR_BUF_OUTPUT, &t4, 0, 0);
        int i = kir_new_var(k), j = kir_new_var(k);
        kir_expr *zero = kir_const_i(k, IR_I64, 0), *four = kir_const_i(k, IR_I64, 4);
        kir_stmt *l = kir_for(k, &k->body, i, zero, four, KIR_SERIAL, 0);
        kir_expr *vi[1] = {kir_var(k, i)};
        kir_expr *v = kir_load(k, x, vi);
        switch (cases[c].which) {
        case 0: {
            kir_expr *vj[1] = {kir_var(k, j)};
            kir_store(k, &l->body, y, vj, v);
            break;
        }
        case 1: kir_store(k, &l->body, x, vi, v); break;
        case 2: kir_store(k, &l->body, y, vi, kir_const_i(k, IR_I32, 1)); break;
        case 3: {
            kir_stmt *in = kir_for(k, &l->body, j, zero, four, KIR_PARALLEL, 0);
            kir_store(k, &in->body, y, vi, v);
            break;
        }
        case 4: {
            int a = kir_new_acc(k, IR_F32);
            kir_store(k, &l->body, y, vi, kir_acc(k, a));
            break;
        }
        case 5: {
            kir_expr *bad[1] = {kir_const_i(k, IR_I32, 0)};
            kir_store(k, &l->body, y, bad, v);
            break;
        }
        case 6: {
            kir_stmt *in = kir_for(k, &l->body, i, zero, four, KIR_SERIAL, 0);
            kir_store(k, &in->body, y, vi, v);
            break;
        }
        case 7:
            kir_store(k, &l->body, y, vi, kir_op2(k, KIR_ADD, IR_F32, v, kir_const_i(k, IR_I32, 1)));
            break;
        }
        ck_assert_int_eq(kir_verify(k, &d), -1);
        ck_assert_msg(strstr(d.msg, cases[c].msg) && strstr(d.msg, "kernel 'bad'"), "case %zu: %s", c, d.msg);
        kir_kernel_destroy(k);
    }
    ir_graph_destroy(g);
}
END_TEST

START_TEST(builders_propagate_null)
{
    kir_kernel *k = kir_kernel_create("n", NULL);
    /* a load of a buffer that does not exist fails, and so does all built on it */
    kir_expr *bad = kir_load(k, 3, NULL);
    ck_assert_ptr_null(bad);
    ck_assert_ptr_null(kir_op2(k, KIR_ADD, IR_F32, bad, kir_const_f(k, IR_F32, 1)));
    ck_assert_ptr_null(kir_acc(k, 0));
    ck_assert_ptr_null(kir_op1(k, KIR_LOAD, IR_F32, kir_const_f(k, IR_F32, 1)));
    kir_kernel_destroy(k);
}
END_TEST

/* The GPU- and precision-oriented constructs: scratch in each space, a
 * let, a barrier, GPU loops and intrinsics, printed. */
START_TEST(print_new_constructs)
{
    ir_graph *g = ir_graph_create("t");
    kir_kernel *k = kir_kernel_create("gpu", g);
    ir_type tx = {IR_F32, 2, {{64, 0}, {16, 0}}};
    int x = kir_add_buf(k, "x", KIR_BUF_INPUT, &tx, 0, 0);
    int y = kir_add_buf(k, "y", KIR_BUF_OUTPUT, &tx, 0, 0);
    int64_t d16[2] = {16, 16}, d4[1] = {4};
    int tile = kir_add_scratch(k, "tile", KIR_SPACE_BLOCK, IR_F32, 2, d16);
    int tmp = kir_add_scratch(k, "tmp", KIR_SPACE_THREAD, IR_F32, 1, d4);
    int big = kir_add_scratch(k, "big", KIR_SPACE_KERNEL, IR_I32, 1, d4);
    ck_assert_int_ge(tile, 0);
    ck_assert_int_ge(tmp, 0);
    ck_assert_int_ge(big, 0);
    int b = kir_new_var(k), t = kir_new_var(k);
    kir_expr *zero = kir_const_i(k, IR_I64, 0);
    kir_stmt *gl = kir_for(k, &k->body, b, zero, kir_const_i(k, IR_I64, 4), KIR_GRID, 0);
    kir_stmt *tl = kir_for(k, &gl->body, t, zero, kir_const_i(k, IR_I64, 16), KIR_THREAD, 0);
    kir_expr *row = kir_let(k, &tl->body, kir_iadd(k, kir_imul(k, kir_var(k, b), kir_const_i(k, IR_I64, 16)),
                                                   kir_var(k, t)));
    kir_expr *xi[2] = {row, zero}, *ti[2] = {kir_var(k, t), zero}, *tt[2] = {zero, kir_var(k, t)};
    ck_assert_ptr_nonnull(kir_store(k, &tl->body, tile, ti, kir_load(k, x, xi)));
    ck_assert_ptr_nonnull(kir_barrier(k, &tl->body, KIR_SCOPE_BLOCK));
    ck_assert_ptr_nonnull(kir_store(k, &tl->body, y, xi, kir_load(k, tile, tt)));
    kir_expr *i0[1] = {zero};
    kir_store(k, &tl->body, tmp, i0, kir_const_f(k, IR_F32, 1));
    icc_diag d = {{0}};
    ck_assert_msg(kir_verify(k, &d) == 0, "%s", d.msg);
    char *text = kir_print(k);
    ck_assert_str_eq(text,
                     "kernel @gpu(b0 %x: f32[64,16] in, b1 %y: f32[64,16] out, b2 %tile: f32[16,16] scratch(block), "
                     "b3 %tmp: f32[4] scratch(thread), b4 %big: i32[4] scratch(kernel))\n"
                     "  grid for v0 in [0, 4)\n"
                     "    thread for v1 in [0, 16)\n"
                     "      let l0: i64 = add(mul(v0, 16), v1)\n"
                     "      b2[v1, 0] = b0[l0, 0]\n"
                     "      barrier(block)\n"
                     "      b1[l0, 0] = b2[0, v1]\n"
                     "      b3[0] = 1:f32\n");
    free(text);
    kir_kernel_destroy(k);

    /* intrinsics: lanes and operands; tiles as t<n> */
    k = kir_kernel_create("dot", g);
    ir_type ta = {IR_U8, 1, {{64, 0}}}, tb = {IR_I8, 1, {{64, 0}}}, tc = {IR_I32, 1, {{16, 0}}};
    ir_type tr = {IR_I8, 2, {{16, 0}, {64, 0}}};
    int a = kir_add_buf(k, "a", KIR_BUF_INPUT, &ta, 0, 0);
    int bb = kir_add_buf(k, "b", KIR_BUF_WEIGHT, &tb, 0, 0);
    int c = kir_add_buf(k, "c", KIR_BUF_OUTPUT, &tc, 0, 0);
    int r = kir_add_buf(k, "r", KIR_BUF_ARENA, &tr, 0, 64);
    zero = kir_const_i(k, IR_I64, 0);
    kir_expr *z1[1] = {zero}, *z2[2] = {zero, zero};
    kir_iarg args[3] = {{c, 1, z1, 0, NULL}, {a, 1, z1, 0, NULL}, {bb, 1, z1, 0, NULL}};
    ck_assert_ptr_nonnull(kir_intrinsic(k, &k->body, KIR_IN_DPBUSD, 16, args));
    kir_iarg ld[2] = {{-1, 0, NULL, 2, NULL}, {r, 2, z2, 0, NULL}};
    ck_assert_ptr_nonnull(kir_intrinsic(k, &k->body, KIR_IN_AMX_LOAD, 0, ld));
    ck_assert_ptr_nonnull(kir_intrinsic(k, &k->body, KIR_IN_AMX_RELEASE, 0, NULL));
    kir_iarg pf[1] = {{bb, 1, z1, 0, NULL}};   /* a hint: any dtype, the weight not written */
    ck_assert_ptr_nonnull(kir_intrinsic(k, &k->body, KIR_IN_PREFETCH_L2, 1, pf));
    ck_assert_msg(kir_verify(k, &d) == 0, "%s", d.msg);
    ck_assert(k->bufs[c].written);
    ck_assert(!k->bufs[bb].written);
    text = kir_print(k);
    ck_assert_str_eq(text,
                     "kernel @dot(b0 %a: u8[64] in, b1 %b: i8[64] weight+0, b2 %c: i32[16] out, b3 %r: i8[16,64] arena+64)\n"
                     "  dpbusd(16) b2[0], b0[0], b1[0]\n"
                     "  amx_load t2, b3[0, 0]\n"
                     "  amx_release\n"
                     "  prefetch_l2 b1[0]\n");
    free(text);
    ck_assert_str_eq(kir_intrin_feature(KIR_IN_DPBF16), "avx512bf16");
    ck_assert_int_eq(kir_intrin_nargs(KIR_IN_MMA_SYNC), 3);
    kir_kernel_destroy(k);

    /* warps of a block, lanes of a warp, a warp barrier, tile operations */
    k = kir_kernel_create("warps", g);
    ir_type tacc = {IR_I32, 2, {{16, 0}, {16, 0}}};
    int o = kir_add_buf(k, "o", KIR_BUF_OUTPUT, &tacc, 0, 0);
    int gv = kir_new_var(k), wv = kir_new_var(k), lv = kir_new_var(k);
    zero = kir_const_i(k, IR_I64, 0);
    kir_stmt *g0 = kir_for(k, &k->body, gv, zero, kir_const_i(k, IR_I64, 2), KIR_GRID, 0);
    kir_stmt *w0 = kir_for(k, &g0->body, wv, zero, kir_const_i(k, IR_I64, 4), KIR_BLOCK, 0);
    kir_stmt *l0 = kir_for(k, &w0->body, lv, zero, kir_const_i(k, IR_I64, 32), KIR_WARP, 0);
    ck_assert_ptr_nonnull(kir_barrier(k, &l0->body, KIR_SCOPE_WARP));
    kir_iarg dp[3] = {{-1, 0, NULL, 0, NULL}, {-1, 0, NULL, 1, NULL}, {-1, 0, NULL, 2, NULL}};
    ck_assert_ptr_nonnull(kir_intrinsic(k, &k->body, KIR_IN_AMX_DPBSSD, 0, dp));
    kir_expr *z2o[2] = {zero, zero};
    kir_iarg stv[2] = {{o, 2, z2o, 0, NULL}, {-1, 0, NULL, 0, NULL}};
    ck_assert_ptr_nonnull(kir_intrinsic(k, &k->body, KIR_IN_AMX_STORE, 0, stv));
    ck_assert_msg(kir_verify(k, &d) == 0, "%s", d.msg);
    text = kir_print(k);
    ck_assert_str_eq(text,
                     "kernel @warps(b0 %o: i32[16,16] out)\n"
                     "  grid for v0 in [0, 2)\n"
                     "    block for v1 in [0, 4)\n"
                     "      warp for v2 in [0, 32)\n"
                     "        barrier(warp)\n"
                     "  amx_dpbssd t0, t1, t2\n"
                     "  amx_store b0[0, 0], t0\n");
    free(text);
    kir_kernel_destroy(k);
    ir_graph_destroy(g);
}
END_TEST

START_TEST(fail_statements)
{
    ir_graph *g = ir_graph_create("g");
    kir_kernel *k = kir_kernel_create("chk", g);
    ck_assert_int_eq(k->status_buf, -1);
    ir_type ti = {IR_I64, 1, {{4, 0}}};
    int ib = kir_add_buf(k, "i", KIR_BUF_INPUT, &ti, 0, 0);
    int v = kir_new_var(k);
    kir_stmt *l = kir_for(k, &k->body, v, kir_const_i(k, IR_I64, 0), kir_const_i(k, IR_I64, 4), KIR_SERIAL, 0);
    kir_expr *ix[1] = {kir_var(k, v)};
    kir_stmt *c1 = kir_if(k, &l->body, kir_op2(k, KIR_LT, IR_BOOL, kir_load(k, ib, ix), kir_const_i(k, IR_I64, 0)));
    ck_assert_ptr_nonnull(kir_fail(k, &c1->body, "negative"));
    kir_stmt *c2 = kir_if(k, &l->body, kir_op2(k, KIR_LE, IR_BOOL, kir_const_i(k, IR_I64, 9), kir_load(k, ib, ix)));
    ck_assert_ptr_nonnull(kir_fail(k, &c2->body, "too big"));
    ck_assert_ptr_nonnull(kir_fail(k, &c2->orelse, "negative")); /* the same text: one message */
    ck_assert_int_eq(k->nfails, 2);
    ck_assert_int_eq(k->status_buf, 1);
    ck_assert_int_eq(k->bufs[1].kind, KIR_BUF_STATUS);
    icc_diag d;
    ck_assert_msg(kir_verify(k, &d) == 0, "%s", d.msg);
    char *text = kir_print(k);
    ck_assert_str_eq(text, "kernel @chk(b0 %i: i64[4] in, b1 %(status): i32[] status)\n"
                           "  for v0 in [0, 4)\n"
                           "    if lt(b0[v0], 0)\n"
                           "      fail \"negative\"\n"
                           "    if le(9, b0[v0])\n"
                           "      fail \"too big\"\n"
                           "    else\n"
                           "      fail \"negative\"\n");
    free(text);
    /* a message index the kernel does not have */
    c1->body.s[0]->msg = 7;
    ck_assert_int_eq(kir_verify(k, &d), -1);
    ck_assert_ptr_nonnull(strstr(d.msg, "fail of message 7"));
    kir_kernel_destroy(k);
    ir_graph_destroy(g);
}
END_TEST

START_TEST(scratch_sizes)
{
    kir_kernel *k = kir_kernel_create("s", NULL);
    int64_t ok[2] = {1024, 1024}, zero[1] = {0}, huge[2] = {INT64_C(1) << 40, INT64_C(1) << 40};
    int64_t big[1] = {INT64_C(1) << 30};
    ck_assert_int_ge(kir_add_scratch(k, "ok", KIR_SPACE_THREAD, IR_F32, 2, ok), 0);
    ck_assert_int_eq(kir_add_scratch(k, "z", KIR_SPACE_THREAD, IR_F32, 1, zero), -1);
    ck_assert_int_eq(kir_add_scratch(k, "h", KIR_SPACE_KERNEL, IR_F32, 2, huge), -1);   /* overflows */
    ck_assert_int_eq(kir_add_scratch(k, "b", KIR_SPACE_KERNEL, IR_F32, 1, big), -1);    /* 4 GiB */
    ck_assert_int_eq(kir_add_scratch(k, "g", KIR_SPACE_GLOBAL, IR_F32, 2, ok), -1);
    int64_t bytes = 0;
    ck_assert_int_eq(kir_buf_bytes(&k->bufs[0], &bytes), 0);
    ck_assert_int_eq(bytes, 4 << 20);
    ck_assert_int_eq(k->nbufs, 1);
    kir_kernel_destroy(k);
}
END_TEST

/* One malformed kernel per rule of the new constructs. */
START_TEST(verifier_new_rules)
{
    ir_graph *g = ir_graph_create("t");
    ir_type t64 = {IR_F32, 1, {{64, 0}}}, tu = {IR_U8, 1, {{64, 0}}}, ti = {IR_I32, 1, {{16, 0}}};
    static const char *const msgs[] = {
        "let l0 used outside its scope",                  /* 0 */
        "let l0 bound twice",                             /* 1 */
        "a grid loop must be outermost",                  /* 2 */
        "parallel and grid loops in one kernel",          /* 3 */
        "a thread loop must be inside a grid loop",       /* 4 */
        "a warp loop must be inside a block loop",        /* 5 */
        "a barrier must not be inside an if",             /* 6 */
        "a barrier inside a loop whose bounds read a thread index", /* 7 */
        "thread scratch 's' used outside a thread or warp loop",   /* 8 */
        "block scratch 'sb' used outside a grid loop",    /* 9 */
        "scratch 's': dim 0 is not a positive constant",  /* 10 */
        "intrinsic dpbusd: operand 1 is f32, not u8",     /* 11 */
        "intrinsic dpbusd writes read-only buffer 'ri'",   /* 12 */
        "intrinsic dpbusd: operand 0 spans 32 elements",  /* 13 */
        "intrinsic amx_load: operand 0 must be a tile 0..7", /* 14 */
        "intrinsic amx_load: operand 1 needs rows",       /* 15 */
        "let l0 is f32, read as i32",                     /* 16 */
        "invalid barrier scope",                          /* 17 */
        "intrinsic prefetch_l2: operand 0 must be a buffer element", /* 18 */
        "mma_sync takes one lane and two f16 or two bf16 operands", /* 19: f16 x bf16 */
        "mma_sync takes one lane and two f16 or two bf16 operands", /* 20: two lanes */
        "intrinsic mma_sync: operand 1 needs rows",       /* 21 */
        "operand 2: only transpose_f32's windows take a row stride", /* 22 */
    };
    icc_diag d = {{0}};
    for (int c = 0; c < (int)(sizeof msgs / sizeof msgs[0]); c++) {
        kir_kernel *k = kir_kernel_create("bad", g);
        int x = kir_add_buf(k, "x", KIR_BUF_INPUT, &t64, 0, 0);
        int y = kir_add_buf(k, "y", KIR_BUF_OUTPUT, &t64, 0, 0);
        int u = kir_add_buf(k, "u", KIR_BUF_INPUT, &tu, 0, 0);
        int acc = kir_add_buf(k, "acc", KIR_BUF_OUTPUT, &ti, 0, 0);
        int64_t d4[1] = {4};
        int sc = kir_add_scratch(k, "s", KIR_SPACE_THREAD, IR_F32, 1, d4);
        int sb = kir_add_scratch(k, "sb", KIR_SPACE_BLOCK, IR_F32, 1, d4);
        int i = kir_new_var(k), j = kir_new_var(k), w = kir_new_var(k);
        kir_expr *zero = kir_const_i(k, IR_I64, 0), *four = kir_const_i(k, IR_I64, 4);
        kir_expr *z[1] = {zero}, *vi[1];
        kir_block *body = &k->body;
        switch (c) {
        case 0: { /* defined in a loop, read after it */
            kir_stmt *l = kir_for(k, body, i, zero, four, KIR_SERIAL, 0);
            vi[0] = kir_var(k, i);
            kir_expr *v = kir_let(k, &l->body, kir_load(k, x, vi));
            kir_store(k, body, y, z, v);
            break;
        }
        case 1: {
            kir_expr *v = kir_let(k, body, kir_load(k, x, z));
            kir_stmt *s = kir_store(k, body, y, z, v);
            *s = *body->s[0];            /* the let statement twice */
            break;
        }
        case 2: {
            kir_stmt *l = kir_for(k, body, i, zero, four, KIR_SERIAL, 0);
            kir_for(k, &l->body, j, zero, four, KIR_GRID, 0);
            break;
        }
        case 3:
            kir_for(k, body, i, zero, four, KIR_GRID, 0);
            kir_for(k, body, j, zero, four, KIR_PARALLEL, 0);
            break;
        case 4:
            kir_for(k, body, i, zero, four, KIR_THREAD, 0);
            break;
        case 5: {
            kir_stmt *l = kir_for(k, body, i, zero, four, KIR_GRID, 0);
            kir_for(k, &l->body, j, zero, four, KIR_WARP, 0);
            break;
        }
        case 6: {
            kir_stmt *l = kir_for(k, body, i, zero, four, KIR_GRID, 0);
            kir_stmt *t = kir_for(k, &l->body, j, zero, four, KIR_THREAD, 0);
            kir_stmt *f = kir_if(k, &t->body, kir_op2(k, KIR_LT, IR_BOOL, kir_var(k, j), four));
            kir_barrier(k, &f->body, KIR_SCOPE_BLOCK);
            break;
        }
        case 7: {
            kir_stmt *l = kir_for(k, body, i, zero, four, KIR_GRID, 0);
            kir_stmt *t = kir_for(k, &l->body, j, zero, four, KIR_THREAD, 0);
            kir_stmt *in = kir_for(k, &t->body, w, zero, kir_var(k, j), KIR_SERIAL, 0);
            kir_barrier(k, &in->body, KIR_SCOPE_BLOCK);
            break;
        }
        case 8: { /* GPU kernel: thread scratch at block level */
            kir_stmt *l = kir_for(k, body, i, zero, four, KIR_GRID, 0);
            kir_store(k, &l->body, sc, z, kir_const_f(k, IR_F32, 0));
            break;
        }
        case 9: {
            kir_for(k, body, i, zero, four, KIR_GRID, 0);
            kir_store(k, body, sb, z, kir_const_f(k, IR_F32, 0));
            break;
        }
        case 10:
            k->bufs[sc].dims[0] = kir_sym(k, 1);
            break;
        case 11: {
            kir_iarg a[3] = {{acc, 1, z, 0, NULL}, {x, 1, z, 0, NULL}, {u, 1, z, 0, NULL}};
            kir_intrinsic(k, body, KIR_IN_DPBUSD, 16, a);
            break;
        }
        case 12: {
            int ri = kir_add_buf(k, "ri", KIR_BUF_INPUT, &ti, 0, 0);
            kir_iarg a[3] = {{ri, 1, z, 0, NULL}, {u, 1, z, 0, NULL}, {u, 1, z, 0, NULL}};
            kir_intrinsic(k, body, KIR_IN_DPBUSD, 4, a);
            break;
        }
        case 13: {
            kir_iarg a[3] = {{acc, 1, z, 0, NULL}, {u, 1, z, 0, NULL}, {u, 1, z, 0, NULL}};
            kir_intrinsic(k, body, KIR_IN_DPBUSD, 32, a);
            break;
        }
        case 14: {
            kir_iarg a[2] = {{-1, 0, NULL, 9, NULL}, {x, 1, z, 0, NULL}};
            kir_intrinsic(k, body, KIR_IN_AMX_LOAD, 0, a);
            break;
        }
        case 15: {
            kir_iarg a[2] = {{-1, 0, NULL, 1, NULL}, {x, 1, z, 0, NULL}};
            kir_intrinsic(k, body, KIR_IN_AMX_LOAD, 0, a);
            break;
        }
        case 16: {
            kir_expr *v = kir_let(k, body, kir_load(k, x, z));
            v->dtype = IR_I32;
            kir_store(k, body, acc, z, v);
            break;
        }
        case 17:
            kir_barrier(k, body, (kir_scope)7);
            break;
        case 18: {
            kir_iarg a[1] = {{-1, 0, NULL, 0, NULL}};
            kir_intrinsic(k, body, KIR_IN_PREFETCH_L2, 1, a);
            break;
        }
        case 19:
        case 20:
        case 21: {
            ir_type th = {IR_F16, 2, {{16, 0}, {16, 0}}}, tb = {c == 19 ? IR_BF16 : IR_F16, 2, {{8, 0}, {16, 0}}};
            ir_type t1 = {IR_F16, 1, {{256, 0}}};
            int ha = kir_add_buf(k, "ha", KIR_BUF_INPUT, c == 21 ? &t1 : &th, 0, 0);
            int hb = kir_add_buf(k, "hb", KIR_BUF_INPUT, &tb, 0, 0);
            kir_expr *z2[2] = {zero, zero};
            kir_iarg a[3] = {{y, 1, z, 0, NULL}, {ha, c == 21 ? 1 : 2, z2, 0, NULL}, {hb, 2, z2, 0, NULL}};
            kir_intrinsic(k, body, KIR_IN_MMA_SYNC, c == 20 ? 2 : 1, a);
            break;
        }
        case 22: { /* a row stride on dpbusd_rows' window */
            ir_type t2 = {IR_U8, 2, {{4, 0}, {16, 0}}};
            int rw = kir_add_buf(k, "rw", KIR_BUF_INPUT, &t2, 0, 0);
            kir_expr *z2[2] = {zero, zero};
            kir_iarg a[3] = {{acc, 1, z, 0, NULL}, {u, 1, z, 0, NULL}, {rw, 2, z2, 0, four}};
            kir_intrinsic(k, body, KIR_IN_DPBUSD_ROWS_S8, 16, a);
            break;
        }
        }
        ck_assert_int_eq(kir_verify(k, &d), -1);
        ck_assert_msg(strstr(d.msg, msgs[c]) && strstr(d.msg, "kernel 'bad'"), "case %d: %s", c, d.msg);
        kir_kernel_destroy(k);
    }
    ir_graph_destroy(g);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("kir");
    TCase *tc = tcase_create("kir");
    tcase_add_test(tc, build_verify_print);
    tcase_add_test(tc, verifier_catches_errors);
    tcase_add_test(tc, builders_propagate_null);
    tcase_add_test(tc, print_new_constructs);
    tcase_add_test(tc, fail_statements);
    tcase_add_test(tc, scratch_sizes);
    tcase_add_test(tc, verifier_new_rules);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return icc_run_suite(suite());
}
