/* test_codegen_fuse.c - fused groups compiled as one kernel each: graphs
 * run through the fuse pass (or with groups written by hand), compiled to
 * a model .so, run through the runtime with 1 and 3 threads and compared
 * with the reference interpreter; the kernel count shows the group became
 * one kernel. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "codegen_harness.h"
#include "codegen/llvm/model.h"
#include "icc/runtime.h"
#include "ir/ref/interp.h"
#include "ir/text.h"
#include "passes/pass.h"

static ir_graph *prepare(const char *text, const char *pipeline, icc_diag *d)
{
    ir_graph *g = ir_parse(text, strlen(text), "fuse.icc", d);
    ck_assert_msg(g != NULL, "%s", d->msg);
    icc_pipeline p;
    ck_assert_int_eq(icc_pipeline_parse(pipeline, &p, d), 0);
    ck_assert_msg(icc_pipeline_run(&p, g, NULL, d) == 0, "%s", d->msg);
    icc_pipeline_free(&p);
    return g;
}

static int count_kernels(const ir_graph *g)
{
    icc_diag d = {{0}};
    cg_target *t;
    ck_assert_msg(cg_target_create(NULL, NULL, NULL, 2, &t, &d) == 0, "%s", d.msg);
    cg_schedule s;
    ck_assert_msg(cg_schedule_init(&s, cg_target_desc(t), &d) == 0, "%s", d.msg);
    char *text = cg_kernels_text(g, &s, NULL, &d);
    ck_assert_msg(text != NULL, "%s", d.msg);
    int n = 0;
    for (const char *p = text; (p = strstr(p, "kernel @")); p++)
        n++;
    free(text);
    cg_target_destroy(t);
    return n;
}


static double elem(const ir_tensor *t, int64_t i) { return ir_tensor_getf(t, i); }

/* Compiles g (inputs f32/f16 with the given dims for symbols), runs it
 * and checks every output against the interpreter. sym_n: the value of
 * symbol N (0: none). */
static void check_compiled_tol(ir_graph *g, int64_t sym_n, int want_kernels, double tol, bool abs_scale)
{
    icc_diag d = {{0}};
    ck_assert_int_eq(count_kernels(g), want_kernels);
    ck_assert_int_le(g->ninputs, 4);
    ck_assert_int_le(g->noutputs, 4);
    ir_tensor in[4] = {{0}}, want[4] = {{0}};
    int64_t dims[4][IR_MAX_RANK];
    const int64_t *dimp[4];
    const void *inputs[4];
    for (int i = 0; i < g->ninputs; i++) {
        const ir_type *t = &g->inputs[i]->type;
        for (int k = 0; k < t->rank; k++)
            dims[i][k] = t->dims[k].sym > 0 ? sym_n : t->dims[k].v;
        ck_assert_int_eq(ir_tensor_init(&in[i], t->dtype, t->rank, dims[i], &d), 0);
        in[i].data = calloc(1, in[i].nbytes + 1);
        for (int64_t e = 0; e < in[i].numel; e++)
            ir_tensor_setf(&in[i], e, sin((double)e * 0.7 + i) * 3);
        inputs[i] = in[i].data;
        dimp[i] = dims[i];
    }
    ck_assert_msg(ir_interp_run(g, in, want, &d) == 0, "%s", d.msg);

    char dir[] = "/tmp/icc_fuse_XXXXXX", so[256];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(so, sizeof so, "%s/m.so", dir);
    ck_assert_msg(harness_build_model(g, so, &d) == 0, "%s", d.msg);
    icc_model *model;
    ck_assert_msg(icc_model_open(so, NULL, &model) == ICC_OK, "%s", icc_last_error());
    for (int threads = 1; threads <= 3; threads += 2) {
        icc_context *ctx;
        ck_assert_int_eq(icc_context_create(model, NULL, &ctx), ICC_OK);
        ck_assert_int_eq(icc_context_set_threads(ctx, threads), ICC_OK);
        void *outputs[4];
        ir_tensor got[4];
        for (int o = 0; o < g->noutputs; o++) {
            got[o] = want[o];
            got[o].data = outputs[o] = calloc(1, want[o].nbytes + 1);
        }
        ck_assert_msg(icc_run(ctx, inputs, dimp, outputs) == ICC_OK, "%s", icc_context_error(ctx));
        for (int o = 0; o < g->noutputs; o++) {
            /* f32 sums err in proportion to their terms, which the
             * largest result bounds: tol of it, absolute */
            double scale = 0.1;
            for (int64_t e = 0; e < want[o].numel; e++)
                scale = fmax(scale, fabs(elem(&want[o], e)));
            for (int64_t e = 0; e < want[o].numel; e++) {
                double w = elem(&want[o], e), x = elem(&got[o], e);
                ck_assert_msg(fabs(x - w) <= tol * (abs_scale ? scale : 0.1 + fabs(w)) || (isnan(x) && isnan(w)),
                              "threads %d, output %d [%lld] = %g, want %g", threads, o, (long long)e, x, w);
            }
            free(outputs[o]);
        }
        icc_context_destroy(ctx);
    }
    icc_model_close(model);
    unlink(so);
    rmdir(dir);
    ir_tensors_free(want, g->noutputs);
    for (int i = 0; i < g->ninputs; i++)
        free(in[i].data);
}

/* Elementwise groups: as exact as the interpreter's float math (1e-6
 * absolute, 1e-5 relative). */
static void check_compiled(ir_graph *g, int64_t sym_n, int want_kernels)
{
    check_compiled_tol(g, sym_n, want_kernels, 1e-5, false);
}

#define FUSE "shape-infer,fuse,plan"

/* A chain through a value read twice (x * sigmoid(x)), a round trip
 * through f16, a comparison and Where: one kernel. */
START_TEST(chain_is_one_kernel)
{
    icc_diag d = {{0}};
    ir_graph *g = prepare("graph @chain(%x: f32[4,33], %b: f32[33], %z: f32[4,33]) -> (%y) {\n"
                          "  %a = Add(%x, %b) : f32[4,33]\n"
                          "  %s = Sigmoid(%a) : f32[4,33]\n"
                          "  %m = Mul(%a, %s) : f32[4,33]\n"
                          "  %c = Cast(%m) {to = 10} : f16[4,33]\n"
                          "  %e = Cast(%c) {to = 1} : f32[4,33]\n"
                          "  %g = Greater(%e, %z) : bool[4,33]\n"
                          "  %y = Where(%g, %e, %z) : f32[4,33]\n"
                          "}\n", FUSE, &d);
    int groups, members;
    ir_graph_group_stats(g, &groups, &members);
    ck_assert_int_eq(groups, 1);
    ck_assert_int_eq(members, 7);
    check_compiled(g, 0, 1);
    ir_graph_destroy(g);
}
END_TEST

/* Broadcasting inside a hand-written group: members of smaller dims are
 * computed at the index their reader maps to. */
START_TEST(broadcast_inside_a_group)
{
    icc_diag d = {{0}};
    ir_graph *g = prepare("graph @bcast(%x: f32[5,1], %w: f32[1,7], %z: f32[5,7]) -> (%y) {\n"
                          "  %a = Exp(%x) : f32[5,1]\n"
                          "  %b = Mul(%a, %w) : f32[5,7]\n"
                          "  %c = Neg(%w) : f32[1,7]\n"
                          "  %d = Add(%b, %c) : f32[5,7]\n"
                          "  %y = Sub(%d, %z) : f32[5,7]\n"
                          "}\n"
                          "groups {\n  1 = [%a, %b, %c, %d, %y]\n}\n", "plan", &d);
    check_compiled(g, 0, 1);
    ir_graph_destroy(g);
}
END_TEST

/* f16 values inside a group round to f16 as the interpreter's do. */
START_TEST(half_chain)
{
    icc_diag d = {{0}};
    ir_graph *g = prepare("graph @half(%x: f16[3,40], %b: f16[40]) -> (%y) {\n"
                          "  %a = Add(%x, %b) : f16[3,40]\n"
                          "  %t = Tanh(%a) : f16[3,40]\n"
                          "  %y = Mul(%t, %a) : f16[3,40]\n"
                          "}\n", FUSE, &d);
    check_compiled(g, 0, 1);
    ir_graph_destroy(g);
}
END_TEST

/* The root's output takes over, in place, an outside input an inner
 * member reads; groups on both sides of a Transpose; 64 rows run in
 * parallel. */
START_TEST(in_place_over_an_inner_members_input)
{
    icc_diag d = {{0}};
    ir_graph *g = prepare("graph @ip(%x: f32[64,16]) -> (%y) {\n"
                          "  %p = Transpose(%x) {perm = [1, 0]} : f32[16,64]\n"
                          "  %a = Exp(%p) : f32[16,64]\n"
                          "  %b = Neg(%a) : f32[16,64]\n"
                          "  %q = Transpose(%b) {perm = [1, 0]} : f32[64,16]\n"
                          "  %r = Relu(%q) : f32[64,16]\n"
                          "  %y = Sqrt(%r) : f32[64,16]\n"
                          "}\n", FUSE, &d);
    ck_assert(g->nodes[2]->out[0]->planned && g->nodes[0]->out[0]->planned);
    ck_assert_int_eq(g->nodes[2]->out[0]->offset, g->nodes[0]->out[0]->offset);
    check_compiled(g, 0, 4);
    ir_graph_destroy(g);
}
END_TEST

/* Symbolic dims: the group's loop bounds come from the run's symbol. */
START_TEST(symbolic_dims)
{
    icc_diag d = {{0}};
    ir_graph *g = prepare("graph @sym<N>(%x: f32[N,16], %b: f32[16]) -> (%y) {\n"
                          "  %a = Add(%x, %b) : f32[N,16]\n"
                          "  %r = Relu(%a) : f32[N,16]\n"
                          "  %t = Transpose(%r) {perm = [1, 0]} : f32[16,N]\n"
                          "  %e = Exp(%t) : f32[16,N]\n"
                          "  %y = Neg(%e) : f32[16,N]\n"
                          "}\n", FUSE, &d);
    check_compiled(g, 7, 3);
    ir_graph_destroy(g);
}
END_TEST

/* A hand-written group whose root is not elementwise but reads a member:
 * a clear error, not a wrong kernel. */
START_TEST(unloweable_group_is_an_error)
{
    icc_diag d = {{0}};
    ir_graph *g = prepare("graph @bad(%x: f32[4,4]) -> (%y) {\n"
                          "  %a = Relu(%x) : f32[4,4]\n"
                          "  %y = MatMul(%a, %x) : f32[4,4]\n"
                          "}\n"
                          "groups {\n  3 = [%a, %y]\n}\n", "plan", &d);
    cg_target *t;
    ck_assert_int_eq(cg_target_create(NULL, NULL, NULL, 2, &t, &d), 0);
    LLVMModuleRef m;
    ck_assert_int_eq(cg_compile_model(g, t, NULL, &m, &d), -1);
    ck_assert_msg(strstr(d.msg, "fused group 3 cannot be compiled as one kernel"), "%s", d.msg);
    cg_target_destroy(t);
    ir_graph_destroy(g);
}
END_TEST


/* ---- anchored groups: a contraction or normalization with its epilogue -- */

/* The kernel count and the group's size of a graph run through fuse:
 * the anchor and every member after it are one kernel. Contractions sum
 * in f32 against the interpreter's double: 2e-5 of the largest result. */
static void check_anchored(const char *text, int want_members, int want_kernels)
{
    icc_diag d = {{0}};
    ir_graph *g = prepare(text, FUSE, &d);
    int groups, members;
    ir_graph_group_stats(g, &groups, &members);
    ck_assert_int_eq(groups, 1);
    ck_assert_int_eq(members, want_members);
    check_compiled_tol(g, 0, want_kernels, 2e-5, true);
    ir_graph_destroy(g);
}

/* MatMul (register tile) + bias + the erf GELU + a residual: one kernel;
 * the GELU reads the biased value twice. */
START_TEST(matmul_bias_gelu_residual)
{
    check_anchored("graph @mm(%x: f32[10,64], %w: f32[64,40], %b: f32[40], %r: f32[10,40]) -> (%y) {\n"
                   "  %m = MatMul(%x, %w) : f32[10,40]\n"
                   "  %h = Add(%m, %b) : f32[10,40]\n"
                   "  %g = Gelu(%h) : f32[10,40]\n"
                   "  %y = Add(%g, %r) : f32[10,40]\n"
                   "}\n", 4, 1);
}
END_TEST

/* K past the tile's reduction block: partial sums go through the output,
 * the epilogue applies once, at the last block. */
START_TEST(matmul_blocked_k_epilogue)
{
    check_anchored("graph @mmk(%x: f32[3,7,300], %w: f32[300,33]) -> (%y) {\n"
                   "  %m = MatMul(%x, %w) : f32[3,7,33]\n"
                   "  %t = Tanh(%m) : f32[3,7,33]\n"
                   "  %y = Mul(%t, %m) : f32[3,7,33]\n"
                   "}\n", 3, 1);
}
END_TEST

/* Gemm with transB (the dot-product schedule) and Gemm's own C, then a
 * Relu; a small MatMul (the plain schedule) then a Sigmoid. */
START_TEST(gemm_and_plain_matmul_epilogues)
{
    check_anchored("graph @gemm(%x: f32[9,48], %w: f32[20,48], %c: f32[20]) -> (%y) {\n"
                   "  %m = Gemm(%x, %w, %c) {transB = 1, alpha = 0.5} : f32[9,20]\n"
                   "  %y = Relu(%m) : f32[9,20]\n"
                   "}\n", 2, 1);
    check_anchored("graph @vec(%x: f32[5], %w: f32[5,3]) -> (%y) {\n"
                   "  %m = MatMul(%x, %w) : f32[3]\n"
                   "  %y = Sigmoid(%m) : f32[3]\n"
                   "}\n", 2, 1);
}
END_TEST

/* Conv (implicit GEMM, flattened plane) + bias + a residual + Relu, and a
 * strided one (rows) with a per-channel scale. */
START_TEST(conv_residual_relu)
{
    check_anchored("graph @conv(%x: f32[2,16,9,9], %w: f32[24,16,3,3], %b: f32[24], %r: f32[2,24,9,9]) -> (%y) {\n"
                   "  %c = Conv(%x, %w, %b) {kernel_shape = [3, 3], pads = [1, 1, 1, 1]} : f32[2,24,9,9]\n"
                   "  %a = Add(%c, %r) : f32[2,24,9,9]\n"
                   "  %y = Relu(%a) : f32[2,24,9,9]\n"
                   "}\n", 3, 1);
    check_anchored("graph @convs(%x: f32[1,8,11,11], %w: f32[16,8,3,3], %s: f32[16,1,1]) -> (%y) {\n"
                   "  %c = Conv(%x, %w) {kernel_shape = [3, 3], strides = [2, 2]} : f32[1,16,5,5]\n"
                   "  %y = Mul(%c, %s) : f32[1,16,5,5]\n"
                   "}\n", 2, 1);
}
END_TEST

/* A depthwise Conv (the vector-over-positions schedule, its sums final
 * only after every channel block) and a dilated f32 Conv with groups of 2
 * channels (the plain schedule). */
START_TEST(depthwise_and_plain_conv_epilogues)
{
    check_anchored("graph @dw(%x: f32[1,16,12,12], %w: f32[16,1,3,3]) -> (%y) {\n"
                   "  %c = Conv(%x, %w) {kernel_shape = [3, 3], group = 16, pads = [1, 1, 1, 1]} : f32[1,16,12,12]\n"
                   "  %y = Clip(%c) : f32[1,16,12,12]\n"
                   "}\n", 2, 1);
    check_anchored("graph @dil(%x: f32[1,4,9,9], %w: f32[4,2,3,3]) -> (%y) {\n"
                   "  %c = Conv(%x, %w) {kernel_shape = [3, 3], group = 2, dilations = [2, 2]} : f32[1,4,5,5]\n"
                   "  %y = Exp(%c) : f32[1,4,5,5]\n"
                   "}\n", 2, 1);
}
END_TEST

/* A Conv whose output plane [5, 1] its kernel flattens into the size-1
 * last dim: an Add reading an input [1, 1, 5, 1] (which that dim would
 * read as broadcast) keeps the Conv out of its group, and the values are
 * right (test_backend_ops found the fused kernel reading row 0 only). */
START_TEST(conv_plane_with_unit_last_dim)
{
    icc_diag d = {{0}};
    ir_graph *g = prepare("graph @c(%x: f32[3,1,5,1], %w: f32[2,1,1,1], %z: f32[3,1,5,1]) -> (%y) {\n"
                          "  %c = Conv(%x, %w) {kernel_shape = [1, 1]} : f32[3,2,5,1]\n"
                          "  %y = Add(%z, %c) : f32[3,2,5,1]\n"
                          "}\n", FUSE, &d);
    check_compiled_tol(g, 0, 2, 2e-5, true);
    ir_graph_destroy(g);
}
END_TEST

/* Softmax along the last axis and along another, then a mask; a
 * LayerNorm then a scale and shift of its own. */
START_TEST(normalization_epilogues)
{
    check_anchored("graph @sm(%x: f32[6,37], %m: f32[6,37]) -> (%y) {\n"
                   "  %p = Softmax(%x) {axis = -1} : f32[6,37]\n"
                   "  %y = Mul(%p, %m) : f32[6,37]\n"
                   "}\n", 2, 1);
    check_anchored("graph @smc(%x: f32[4,5,19]) -> (%y) {\n"
                   "  %p = LogSoftmax(%x) {axis = 1} : f32[4,5,19]\n"
                   "  %y = Neg(%p) : f32[4,5,19]\n"
                   "}\n", 2, 1);
    check_anchored("graph @ln(%x: f32[3,4,64], %s: f32[64], %b: f32[64], %t: f32[64]) -> (%y) {\n"
                   "  %n = LayerNormalization(%x, %s, %b) : f32[3,4,64]\n"
                   "  %m = Mul(%n, %t) : f32[3,4,64]\n"
                   "  %y = Relu(%m) : f32[3,4,64]\n"
                   "}\n", 3, 1);
}
END_TEST

/* Normalizations with a prologue: the residual Add computed in each of
 * LayerNorm's passes, then an epilogue; a scaled, masked Softmax that
 * roots its own group. */
START_TEST(normalization_prologues)
{
    check_anchored("graph @lnp(%x: f32[2,5,48], %r: f32[2,5,48], %s: f32[48], %b: f32[48]) -> (%y) {\n"
                   "  %a = Add(%x, %r) : f32[2,5,48]\n"
                   "  %n = LayerNormalization(%a, %s, %b) : f32[2,5,48]\n"
                   "  %y = Tanh(%n) : f32[2,5,48]\n"
                   "}\n", 3, 1);
    check_anchored("graph @smp(%x: f32[2,3,7,7], %m: f32[1,1,1,7]) -> (%y) {\n"
                   "  %d = Div(%x, %m) : f32[2,3,7,7]\n"
                   "  %a = Add(%d, %m) : f32[2,3,7,7]\n"
                   "  %y = Softmax(%a) {axis = -1} : f32[2,3,7,7]\n"
                   "}\n", 3, 1);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("codegen_fuse");
    TCase *tc = tcase_create("fuse");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, chain_is_one_kernel);
    tcase_add_test(tc, broadcast_inside_a_group);
    tcase_add_test(tc, half_chain);
    tcase_add_test(tc, in_place_over_an_inner_members_input);
    tcase_add_test(tc, symbolic_dims);
    tcase_add_test(tc, unloweable_group_is_an_error);
    tcase_add_test(tc, matmul_bias_gelu_residual);
    tcase_add_test(tc, matmul_blocked_k_epilogue);
    tcase_add_test(tc, gemm_and_plain_matmul_epilogues);
    tcase_add_test(tc, conv_residual_relu);
    tcase_add_test(tc, depthwise_and_plain_conv_epilogues);
    tcase_add_test(tc, conv_plane_with_unit_last_dim);
    tcase_add_test(tc, normalization_epilogues);
    tcase_add_test(tc, normalization_prologues);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return icc_run_suite(suite());
}
