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
#include "codegen/llvm/emit.h"
#include "codegen/lower.h"
#include "ir/ref/interp.h"
#include "ir/text.h"

/* Each case: one node over inputs of the given types. */
static const struct {
    const char *node;          /* "Op(%a, %b) {attrs}" */
    const char *inputs;        /* "%a: f32[3,5], %b: f32[5]" */
    const char *out;           /* the output type */
} cases[] = {
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
    /* contractions, normalizations, reshapes (codegen/lower_nn.c) */
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
#define NCASES (int)(sizeof cases / sizeof cases[0])

static ir_graph *graphs[NCASES];
static ir_tensor ins[NCASES][3];
static ir_tensor want[NCASES];
static void *lib;

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
        snprintf(text, sizeof text, "graph @g(%s) -> (%%y) {\n  %%y = %s : %s\n}\n", cases[c].inputs,
                 cases[c].node, cases[c].out);
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
        ck_assert_msg(cg_lower_node(g, n, b, cg_target_vector_bits(t) / 32, name, &k, &d) == 0,
                      "case %d: %s", c, d.msg);
        LLVMValueRef fn;
        ck_assert_msg(cg_llvm_emit_kernel(t, m, k, &fn, &d) == 0, "case %d: %s", c, d.msg);
        kir_kernel_destroy(k);
        free(b);
        /* the oracle */
        bool positive = strstr(cases[c].node, "Log") || strstr(cases[c].node, "Sqrt") ||
                        strstr(cases[c].node, "Pow");
        const ir_tensor *inp[3] = {NULL, NULL, NULL};
        for (int i = 0; i < g->ninputs; i++) {
            const ir_type *ty = &g->inputs[i]->type;
            int64_t dims[IR_MAX_RANK];
            for (int j = 0; j < ty->rank; j++)
                dims[j] = ty->dims[j].v;
            ck_assert_int_eq(ir_tensor_init(&ins[c][i], ty->dtype, ty->rank, dims, &d), 0);
            fill(&ins[c][i], &seed, positive);
            inp[i] = &ins[c][i];
        }
        /* Clip's bounds: lo < hi */
        if (strstr(cases[c].node, "Clip")) {
            ir_tensor_setf(&ins[c][1], 0, -1);
            ir_tensor_setf(&ins[c][2], 0, 1.5);
        }
        ck_assert_msg(ir_eval_node(n, inp, &want[c], &d) == 0, "case %d: %s", c, d.msg);
    }
    char dir[] = "/tmp/icc_cg_XXXXXX", obj[64], so[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(obj, sizeof obj, "%s/ew.o", dir);
    snprintf(so, sizeof so, "%s/ew.so", dir);
    ck_assert_msg(cg_optimize(t, m, &d) == 0, "%s", d.msg);
    ck_assert_msg(cg_emit_object(t, m, obj, &d) == 0, "%s", d.msg);
    const char *objs[] = {obj}, *libs[] = {"-lm"};
    ck_assert_msg(cg_link_shared(objs, 1, libs, 1, so, &d) == 0, "%s", d.msg);
    lib = dlopen(so, RTLD_NOW);
    ck_assert_msg(lib != NULL, "%s", dlerror());
    unlink(obj);
    unlink(so);
    rmdir(dir);
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

typedef void (*kernel_fn)(void *const *bufs, const int64_t *syms, int64_t begin, int64_t end);

START_TEST(compiled_matches_interpreter)
{
    int c = _i;
    ir_graph *g = graphs[c];
    char name[32];
    snprintf(name, sizeof name, "case%d", c);
    kernel_fn fn = (kernel_fn)dlsym(lib, name);
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
    for (int64_t i = 0; i < got.numel; i++) {
        if (ir_dtype_is_float(got.dtype)) {
            double a = ir_tensor_getf(&got, i), b = ir_tensor_getf(&want[c], i);
            ck_assert_msg(fabs(a - b) <= 1e-6 + rtol * fabs(b), "%s, element %lld: %.9g, want %.9g",
                          cases[c].node, (long long)i, a, b);
        } else {
            ck_assert_msg(ir_tensor_geti(&got, i) == ir_tensor_geti(&want[c], i),
                          "%s, element %lld: %lld, want %lld", cases[c].node, (long long)i,
                          (long long)ir_tensor_geti(&got, i), (long long)ir_tensor_geti(&want[c], i));
        }
    }
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
