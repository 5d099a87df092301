/* test_codegen_elementwise.c - nodes compiled end to end (elementwise, and
 * the contractions, softmax and reshapes lowered so far)
 * (lower -> kernel IR -> LLVM -> object -> .so) and run against the
 * reference interpreter on the same random inputs. One module holds every
 * case, so LLVM and the linker run once. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "codegen_harness.h"
#include "codegen/llvm/emit.h"
#include "codegen/lower.h"
#include "ir/ref/interp.h"
#include "ir/text.h"

/* Each case: one node over inputs of the given types. */
typedef struct {
    const char *node;          /* "Op(%a, %b) {attrs}" */
    const char *inputs;        /* "%a: f32[3,5], %b: f32[5]" */
    const char *out;           /* the output type */
} tcase;

/* Cases on random inputs. */
static const tcase rand_cases[] = {
    {"Add(%a, %b)", "%a: f32[3,5], %b: f32[5]", "f32[3,5]"},
    {"Sub(%a, %b)", "%a: f64[2,1,4], %b: f64[3,1]", "f64[2,3,4]"},
    {"Mul(%a, %b)", "%a: f16[4,8], %b: f16[4,1]", "f16[4,8]"},
    {"Div(%a, %b)", "%a: bf16[33], %b: bf16[33]", "bf16[33]"},
    {"Div(%a, %b)", "%a: i32[40], %b: i32[40]", "i32[40]"},
    {"Add(%a, %b)", "%a: i8[40], %b: i8[40]", "i8[40]"},
    {"Max(%a, %b, %c)", "%a: f32[7], %b: f32[7], %c: f32[1]", "f32[7]"},
    {"Min(%a, %b)", "%a: u8[3,3], %b: u8[3]", "u8[3,3]"},
    {"Sum(%a, %b)", "%a: i64[5], %b: i64[5]", "i64[5]"},
    {"Mean(%a, %b)", "%a: f32[6], %b: f32[6]", "f32[6]"},
    {"Pow(%a, %b)", "%a: f32[9], %b: f32[9]", "f32[9]"},
    {"Relu(%a)", "%a: f32[2,3,17]", "f32[2,3,17]"},
    {"Relu(%a)", "%a: i16[20]", "i16[20]"},
    {"Sigmoid(%a)", "%a: f32[64]", "f32[64]"},
    {"Tanh(%a)", "%a: f32[64]", "f32[64]"},
    {"Exp(%a)", "%a: f64[16]", "f64[16]"},
    {"Log(%a)", "%a: f32[16]", "f32[16]"},
    {"Sqrt(%a)", "%a: f32[16]", "f32[16]"},
    {"Erf(%a)", "%a: f32[64]", "f32[64]"},
    {"Neg(%a)", "%a: i32[8]", "i32[8]"},
    {"Abs(%a)", "%a: f16[8]", "f16[8]"},
    {"Floor(%a)", "%a: f32[16]", "f32[16]"},
    {"Ceil(%a)", "%a: f32[16]", "f32[16]"},
    {"Round(%a)", "%a: f32[16]", "f32[16]"},
    {"Reciprocal(%a)", "%a: f32[16]", "f32[16]"},
    {"LeakyRelu(%a) {alpha = 0.1}", "%a: f32[16]", "f32[16]"},
    {"Elu(%a)", "%a: f32[16]", "f32[16]"},
    {"Selu(%a)", "%a: f32[16]", "f32[16]"},
    {"HardSigmoid(%a)", "%a: f32[16]", "f32[16]"},
    {"HardSwish(%a)", "%a: f32[16]", "f32[16]"},
    {"Softplus(%a)", "%a: f32[16]", "f32[16]"},
    {"Gelu(%a)", "%a: f32[32]", "f32[32]"},
    {"Gelu(%a) {approximate = \"tanh\"}", "%a: f32[32]", "f32[32]"},
    {"Equal(%a, %b)", "%a: i32[12], %b: i32[12]", "bool[12]"},
    {"Less(%a, %b)", "%a: f32[12], %b: f32[1]", "bool[12]"},
    {"GreaterOrEqual(%a, %b)", "%a: f32[12], %b: f32[12]", "bool[12]"},
    {"And(%a, %b)", "%a: bool[12], %b: bool[12]", "bool[12]"},
    {"Xor(%a, %b)", "%a: bool[12], %b: bool[12]", "bool[12]"},
    {"Not(%a)", "%a: bool[12]", "bool[12]"},
    {"Where(%a, %b, %c)", "%a: bool[4,6], %b: f32[6], %c: f32[4,1]", "f32[4,6]"},
    {"Clip(%a, %b, %c)", "%a: f32[20], %b: f32[], %c: f32[]", "f32[20]"},
    /* the rest of the elementwise family: every op, integer and narrow dtypes */
    {"Clip(%a, %b, %c)", "%a: i32[20], %b: i32[], %c: i32[]", "i32[20]"},
    {"Clip(%a, %b)", "%a: u8[20], %b: u8[]", "u8[20]"},
    {"Sum(%a, %b, %c)", "%a: u16[4,10], %b: u16[10], %c: u16[4,1]", "u16[4,10]"},
    {"Where(%a, %b, %c)", "%a: bool[4,6], %b: i64[6], %c: i64[4,1]", "i64[4,6]"},
    {"Where(%a, %b, %c)", "%a: bool[12], %b: bool[12], %c: bool[1]", "bool[12]"},
    {"Where(%a, %b, %c)", "%a: bool[12], %b: bf16[12], %c: bf16[12]", "bf16[12]"},
    {"Cast(%a) {to = 1}", "%a: bool[48]", "f32[48]"},
    {"Mod(%a, %b)", "%a: i8[6,5], %b: i8[5]", "i8[6,5]"},
    {"Mod(%a, %b) {fmod = 1}", "%a: f32[40], %b: f32[40]", "f32[40]"},
    {"Mod(%a, %b) {fmod = 1}", "%a: f16[40], %b: f16[1]", "f16[40]"},
    {"Pow(%a, %b)", "%a: i32[40], %b: i32[40]", "i32[40]"},
    {"Pow(%a, %b)", "%a: u8[40], %b: u8[40]", "u8[40]"},
    {"Pow(%a, %b)", "%a: i32[40], %b: i64[40]", "i32[40]"},
    {"Pow(%a, %b)", "%a: f32[40], %b: i64[40]", "f32[40]"},
    {"Pow(%a, %b)", "%a: i64[40], %b: f32[40]", "i64[40]"},
    {"Pow(%a, %b)", "%a: f16[40], %b: f32[40]", "f16[40]"},
    {"BitShift(%a, %b) {direction = \"LEFT\"}", "%a: u8[40], %b: u8[40]", "u8[40]"},
    {"Or(%a, %b)", "%a: bool[12], %b: bool[12]", "bool[12]"},
    {"PRelu(%a, %b)", "%a: f32[3,16], %b: f32[16]", "f32[3,16]"},
    {"PRelu(%a, %b)", "%a: i32[3,16], %b: i32[3,1]", "i32[3,16]"},
    {"Sin(%a)", "%a: f32[32]", "f32[32]"},
    {"Cos(%a)", "%a: f64[32]", "f64[32]"},
    {"Tan(%a)", "%a: f16[32]", "f16[32]"},
    {"Asin(%a)", "%a: f32[32]", "f32[32]"},
    {"Acos(%a)", "%a: f32[32]", "f32[32]"},
    {"Atan(%a)", "%a: f32[32]", "f32[32]"},
    {"Sinh(%a)", "%a: f32[32]", "f32[32]"},
    {"Cosh(%a)", "%a: bf16[32]", "bf16[32]"},
    {"Asinh(%a)", "%a: f32[32]", "f32[32]"},
    {"Acosh(%a)", "%a: f32[32]", "f32[32]"},
    {"Atanh(%a)", "%a: f32[32]", "f32[32]"},
    /* inline exp/tanh/erf at their edges: overflow, underflow, NaN, inf */
    /* contractions, normalizations, reshapes (codegen/lower/matmul.c) */
    {"Gemm(%a, %b, %c)", "%a: f32[5,7], %b: f32[7,3], %c: f32[3]", "f32[5,3]"},
    {"Gemm(%a, %b, %c) {alpha = 0.5, beta = 2.0, transA = 1, transB = 1}",
     "%a: f32[7,5], %b: f32[3,7], %c: f32[5,1]", "f32[5,3]"},
    {"Gemm(%a, %b)", "%a: f64[4,6], %b: f64[6,2]", "f64[4,2]"},
    {"MatMul(%a, %b)", "%a: f32[9,16], %b: f32[16,11]", "f32[9,11]"},
    {"MatMul(%a, %b)", "%a: f32[2,1,3,4], %b: f32[5,4,6]", "f32[2,5,3,6]"},
    {"MatMul(%a, %b)", "%a: f16[3,8], %b: f16[8,5]", "f16[3,5]"},
    {"Softmax(%a) {axis = 1}", "%a: f32[4,10]", "f32[4,10]"},
    {"Softmax(%a) {axis = 0}", "%a: f32[6,3,2]", "f32[6,3,2]"},
    {"LogSoftmax(%a)", "%a: f32[3,7]", "f32[3,7]"},
    {"Flatten(%a) {axis = 2}", "%a: f32[2,3,4,5]", "f32[6,20]"},
    {"Identity(%a)", "%a: i64[3,3]", "i64[3,3]"},
    {"Transpose(%a) {perm = [2, 0, 1]}", "%a: f32[2,3,4]", "f32[4,2,3]"},
    {"Transpose(%a)", "%a: i32[5,3]", "i32[3,5]"},
    {"ReduceSum(%a) {keepdims = 0}", "%a: f32[3,4,5]", "f32[]"},
    {"ReduceMax(%a)", "%a: f32[6,7]", "f32[1,1]"},
    {"ReduceMean(%a)", "%a: f16[4,4]", "f16[1,1]"},
    {"ReduceL2(%a) {keepdims = 0}", "%a: f64[9]", "f64[]"},
};
/* Cases on the edge values (fill_edge). */
static const tcase edge_cases[] = {
    {"Relu(%a)", "%a: i8[40]", "i8[40]"},
    {"Neg(%a)", "%a: i64[40]", "i64[40]"},
    {"Abs(%a)", "%a: i16[40]", "i16[40]"},
    {"Max(%a, %b)", "%a: i64[40], %b: i64[40]", "i64[40]"},
    {"Cast(%a) {to = 6}", "%a: f32[48]", "i32[48]"},
    {"Cast(%a) {to = 2}", "%a: f32[48]", "u8[48]"},
    {"Cast(%a) {to = 12}", "%a: f64[48]", "u32[48]"},
    {"Cast(%a) {to = 7}", "%a: f16[48]", "i64[48]"},
    {"Cast(%a) {to = 10}", "%a: f64[48]", "f16[48]"},
    {"Cast(%a) {to = 16}", "%a: f32[48]", "bf16[48]"},
    {"Cast(%a) {to = 10}", "%a: bf16[48]", "f16[48]"},
    {"Cast(%a) {to = 11}", "%a: bf16[48]", "f64[48]"},
    {"Cast(%a) {to = 9}", "%a: f32[48]", "bool[48]"},
    {"Cast(%a) {to = 10}", "%a: i64[48]", "f16[48]"},
    {"Cast(%a) {to = 1}", "%a: u64[48]", "f32[48]"},
    {"Cast(%a) {to = 3}", "%a: i64[48]", "i8[48]"},
    {"Cast(%a) {to = 7}", "%a: u32[48]", "i64[48]"},
    {"Cast(%a) {to = 9}", "%a: i16[48]", "bool[48]"},
    {"CastLike(%a, %b)", "%a: f32[48], %b: f16[1]", "f16[48]"},
    {"Mod(%a, %b)", "%a: i32[40], %b: i32[40]", "i32[40]"},
    {"Mod(%a, %b)", "%a: u16[40], %b: u16[40]", "u16[40]"},
    {"Mod(%a, %b) {fmod = 1}", "%a: i64[40], %b: i64[40]", "i64[40]"},
    {"Pow(%a, %b)", "%a: i64[40], %b: i64[40]", "i64[40]"},
    {"BitShift(%a, %b) {direction = \"RIGHT\"}", "%a: u32[40], %b: u32[40]", "u32[40]"},
    {"BitShift(%a, %b) {direction = \"LEFT\"}", "%a: u64[40], %b: u64[40]", "u64[40]"},
    {"BitwiseAnd(%a, %b)", "%a: i16[40], %b: i16[40]", "i16[40]"},
    {"BitwiseOr(%a, %b)", "%a: u64[40], %b: u64[1]", "u64[40]"},
    {"BitwiseXor(%a, %b)", "%a: i8[40], %b: i8[40]", "i8[40]"},
    {"BitwiseNot(%a)", "%a: u32[40]", "u32[40]"},
    {"IsNaN(%a)", "%a: f32[48]", "bool[48]"},
    {"IsInf(%a)", "%a: f16[48]", "bool[48]"},
    {"IsInf(%a) {detect_negative = 0}", "%a: f64[48]", "bool[48]"},
    {"Sign(%a)", "%a: f32[48]", "f32[48]"},
    {"Sign(%a)", "%a: i8[48]", "i8[48]"},
    {"Sign(%a)", "%a: u16[48]", "u16[48]"},
    {"ThresholdedRelu(%a) {alpha = 0.5}", "%a: f32[48]", "f32[48]"},
    {"Softsign(%a)", "%a: f32[48]", "f32[48]"},
    {"Shrink(%a) {lambd = 1.5, bias = 0.25}", "%a: f32[48]", "f32[48]"},
    {"Shrink(%a) {lambd = 1.5, bias = 1.5}", "%a: i32[48]", "i32[48]"},
    {"Celu(%a) {alpha = 2.0}", "%a: f32[48]", "f32[48]"},
    {"Mish(%a)", "%a: f32[48]", "f32[48]"},
    {"Erf(%a)", "%a: i32[48]", "i32[48]"},
    {"Exp(%a)", "%a: f32[48]", "f32[48]"},
    {"Tanh(%a)", "%a: f32[48]", "f32[48]"},
    {"Erf(%a)", "%a: f32[48]", "f32[48]"},
    {"Sigmoid(%a)", "%a: f32[48]", "f32[48]"},
    {"Gelu(%a)", "%a: f32[48]", "f32[48]"},
    {"Gelu(%a) {approximate = \"tanh\"}", "%a: bf16[48]", "bf16[48]"},
    {"Elu(%a)", "%a: f32[48]", "f32[48]"},
    {"Softplus(%a)", "%a: f32[48]", "f32[48]"},
    {"Log(%a)", "%a: f32[48]", "f32[48]"},
};
#define NRAND (int)(sizeof rand_cases / sizeof rand_cases[0])
#define NCASES (NRAND + (int)(sizeof edge_cases / sizeof edge_cases[0]))

static const tcase *case_at(int c) { return c < NRAND ? &rand_cases[c] : &edge_cases[c - NRAND]; }

static ir_graph *graphs[NCASES];
static ir_tensor ins[NCASES][3];
static ir_tensor want[NCASES];
static void *lib;

/* Edge values: zeros, ones, halves, the limits of each dtype, overflow
 * and underflow of exp, NaN and infinities. Each tensor starts at a
 * random position of the list, so operands pair up differently. */
static const double edge_f[] = {0.0, -0.0, 1, -1, 0.5, -0.5, 2.5, -2.5, 3.5, 1e-3, -1e-3, 0.3, -0.7,
                                4, -4.5, 9, -12, 20, -20, 88.5, -88.5, 95, -104, 200, -150, 255.5,
                                127.9, -128.9, 70000, -65520, 3e9, -3e9, 1.5e19, 2e19, -9.3e18,
                                1e30, -1e30, 1e-40, -1e-30, INFINITY, -INFINITY, NAN, 0.625, -0.62,
                                0.999, 1.001, 3.9, -3.95};
static const int64_t edge_i[] = {0, 1, -1, 2, -2, 3, -3, 7, -7, 8, 15, 31, 32, 33, 63, 64, 65, 100,
                                 -100, 127, -128, 128, 255, 256, 32767, -32768, 65535, 65536,
                                 INT32_MAX, INT32_MIN, (int64_t)UINT32_MAX, INT64_MAX, INT64_MIN,
                                 0x5555555555555555, -6, 5, 12, -13, 40, 9};
#define NEDGE_F (int)(sizeof edge_f / sizeof edge_f[0])
#define NEDGE_I (int)(sizeof edge_i / sizeof edge_i[0])

static void fill_edge(ir_tensor *t, unsigned *seed)
{
    t->data = calloc(1, t->nbytes + 1);
    int start = rand_r(seed);
    for (int64_t i = 0; i < t->numel; i++) {
        if (t->dtype == IR_BOOL)
            ir_tensor_seti(t, i, (i + start) % 3 == 0);
        else if (ir_dtype_is_float(t->dtype))
            ir_tensor_setf(t, i, edge_f[(i + start) % NEDGE_F]);
        else
            ir_tensor_seti(t, i, edge_i[(i + start) % NEDGE_I]);
    }
}

/* Random inputs away from the ops' edge cases (positive for Log/Sqrt). */
static void fill(ir_tensor *t, unsigned *seed, bool positive)
{
    t->data = calloc(1, t->nbytes + 1);
    for (int64_t i = 0; i < t->numel; i++) {
        double r = (double)rand_r(seed) / RAND_MAX;
        if (t->dtype == IR_BOOL)
            ir_tensor_seti(t, i, r < 0.5);
        else if (ir_dtype_is_float(t->dtype))
            ir_tensor_setf(t, i, positive ? 0.1 + 3 * r : 6 * r - 3);
        else
            ir_tensor_seti(t, i, (int64_t)(r * 21) - (ir_dtype_is_signed(t->dtype) ? 10 : 0));
    }
}

static void setup(void)
{
    icc_diag d = {{0}};
    cg_target *t;
    ck_assert_msg(cg_target_create(NULL, NULL, NULL, 2, &t, &d) == 0, "%s", d.msg);
    LLVMModuleRef m = LLVMModuleCreateWithName("ew");
    cg_target_setup_module(t, m);
    unsigned seed = 42;
    for (int c = 0; c < NCASES; c++) {
        char text[512];
        snprintf(text, sizeof text, "graph @g(%s) -> (%%y) {\n  %%y = %s : %s\n}\n", case_at(c)->inputs,
                 case_at(c)->node, case_at(c)->out);
        ir_graph *g = ir_parse(text, strlen(text), "case", &d);
        ck_assert_msg(g != NULL, "case %d: %s", c, d.msg);
        graphs[c] = g;
        const ir_node *n = g->nodes[0];
        cg_binding *b = calloc((size_t)g->nvalues, sizeof *b);
        for (int i = 0; i < g->ninputs; i++)
            b[g->inputs[i]->id] = (cg_binding){KIR_BUF_INPUT, i, 0};
        b[n->out[0]->id] = (cg_binding){KIR_BUF_OUTPUT, 0, 0};
        char name[32];
        snprintf(name, sizeof name, "case%d", c);
        kir_kernel *k;
        ck_assert_msg(cg_lower_node(g, n, b, harness_sched(t, &(cg_schedule){0}), name, &k, &d) == 0,
                      "case %d: %s", c, d.msg);
        LLVMValueRef fn;
        ck_assert_msg(cg_llvm_emit_kernel(t, m, k, &fn, &d) == 0, "case %d: %s", c, d.msg);
        kir_kernel_destroy(k);
        free(b);
        /* the oracle */
        bool positive = strstr(case_at(c)->node, "Log") || strstr(case_at(c)->node, "Sqrt") ||
                        strstr(case_at(c)->node, "Pow") || strstr(case_at(c)->node, "Acosh");
        const ir_tensor *inp[3] = {NULL, NULL, NULL};
        for (int i = 0; i < g->ninputs; i++) {
            const ir_type *ty = &g->inputs[i]->type;
            int64_t dims[IR_MAX_RANK];
            for (int j = 0; j < ty->rank; j++)
                dims[j] = ty->dims[j].v;
            ck_assert_int_eq(ir_tensor_init(&ins[c][i], ty->dtype, ty->rank, dims, &d), 0);
            if (c >= NRAND)
                fill_edge(&ins[c][i], &seed);
            else
                fill(&ins[c][i], &seed, positive);
            inp[i] = &ins[c][i];
        }
        /* Clip's bounds: lo < hi */
        if (strstr(case_at(c)->node, "Clip")) {
            ir_tensor_setf(&ins[c][1], 0, ir_dtype_is_signed(ins[c][1].dtype) ? -1 : 3);
            if (g->ninputs > 2)
                ir_tensor_setf(&ins[c][2], 0, ir_dtype_is_float(ins[c][2].dtype) ? 1.5 : 4);
        }
        ck_assert_msg(ir_eval_node(n, inp, &want[c], &d) == 0, "case %d: %s", c, d.msg);
    }
    lib = harness_load_module(t, m);
    LLVMDisposeModule(m);
    cg_target_destroy(t);
}

static void teardown(void)
{
    for (int c = 0; c < NCASES; c++) {
        for (int i = 0; i < 3; i++)
            free(ins[c][i].data);
        free(want[c].data);
        ir_graph_destroy(graphs[c]);
    }
    if (lib)
        dlclose(lib);
}


START_TEST(compiled_matches_interpreter)
{
    int c = _i;
    ir_graph *g = graphs[c];
    char name[32];
    snprintf(name, sizeof name, "case%d", c);
    harness_kernel_fn fn = (harness_kernel_fn)dlsym(lib, name);
    ck_assert_ptr_nonnull(fn);
    ir_tensor got = want[c];
    got.data = calloc(1, got.nbytes + 1);
    void *bufs[4] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < g->ninputs; i++)
        bufs[i] = ins[c][i].data;
    bufs[g->ninputs] = got.data;
    int64_t syms[2] = {0, 0};
    fn(bufs, syms, 0, INT64_MAX);
    /* f32/f64 within a few ulps of the reference's double math; narrow
     * floats within one of their own ulps; integers and bools exactly. */
    double rtol = got.dtype == IR_BF16 ? 1e-2 : got.dtype == IR_F16 ? 2e-3 : 2e-6;
    harness_expect_close(&got, &want[c], rtol, 1e-6, case_at(c)->node);
    free(got.data);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("codegen_elementwise");
    TCase *tc = tcase_create("compiled");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, compiled_matches_interpreter, 0, NCASES);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return icc_run_suite(suite());
}
