/* test_codegen_reduce.c - reductions and normalizations compiled end to
 * end (lower -> kernel IR -> LLVM -> .so) and run against the reference
 * interpreter on the same inputs: every Reduce* over integer, bool and
 * narrow float dtypes, keepdims, empty axes, empty tensors; ArgMax/ArgMin
 * with ties; CumSum/CumProd; the softmax family; the normalizations with
 * all their outputs. One module holds every case, so LLVM runs once. */
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

#define MAXIO 6

/* Each case is a graph body whose first node is the one compiled; its
 * constants come first, and the node's outputs are the graph's. */
static const struct {
    const char *inputs;        /* "%a: f32[3,5]" */
    const char *body;          /* constants and the node, with its types */
} cases[] = {
    {"%a: i32[3,4,5]", "%x = const i64[1] [1]\n %y = ReduceSum(%a, %x) {keepdims = 0} : i32[3,5]"},
    {"%a: i32[3,4,5]", "%x = const i64[2] [0, -1]\n %y = ReduceMean(%a, %x) : i32[1,4,1]"},
    {"%a: u8[6,7]", "%x = const i64[1] [1]\n %y = ReduceMax(%a, %x) : u8[6,1]"},
    {"%a: i8[6,7]", "%y = ReduceMin(%a) {keepdims = 0} : i8[]"},
    {"%a: bool[4,5]", "%x = const i64[1] [0]\n %y = ReduceMax(%a, %x) {keepdims = 0} : bool[5]"},
    {"%a: bool[4,5]", "%x = const i64[1] [1]\n %y = ReduceMin(%a, %x) {keepdims = 0} : bool[4]"},
    {"%a: i64[4,3]", "%x = const i64[1] [1]\n %y = ReduceProd(%a, %x) : i64[4,1]"},
    {"%a: i16[4,9]", "%x = const i64[1] [1]\n %y = ReduceProd(%a, %x) : i16[4,1]"},
    {"%a: f32[2,3,8]", "%x = const i64[1] [-1]\n %y = ReduceL1(%a, %x) : f32[2,3,1]"},
    {"%a: i32[5,6]", "%x = const i64[1] [0]\n %y = ReduceL1(%a, %x) {keepdims = 0} : i32[6]"},
    {"%a: i32[5,6]", "%x = const i64[1] [1]\n %y = ReduceL2(%a, %x) {keepdims = 0} : i32[5]"},
    {"%a: f16[4,6]", "%x = const i64[1] [1]\n %y = ReduceSumSquare(%a, %x) : f16[4,1]"},
    {"%a: u16[4,6]", "%y = ReduceSumSquare(%a) : u16[1,1]"},
    {"%a: f32[3,10]", "%x = const i64[1] [1]\n %y = ReduceLogSum(%a, %x) : f32[3,1]"},
    {"%a: f64[3,4,2]", "%x = const i64[2] [0, 2]\n %y = ReduceLogSumExp(%a, %x) : f64[1,4,1]"},
    {"%a: i32[3,4]", "%x = const i64[1] [1]\n %y = ReduceLogSumExp(%a, %x) : i32[3,1]"},
    {"%a: f32[3,4]", "%x = const i64[0] []\n %y = ReduceSum(%a, %x) {noop_with_empty_axes = 1} : f32[3,4]"},
    {"%a: f32[2,0,3]", "%x = const i64[1] [1]\n %y = ReduceSum(%a, %x) : f32[2,1,3]"},
    {"%a: f32[2,0,3]", "%x = const i64[1] [1]\n %y = ReduceProd(%a, %x) {keepdims = 0} : f32[2,3]"},
    {"%a: bf16[8,8]", "%x = const i64[1] [0]\n %y = ReduceMean(%a, %x) : bf16[1,8]"},
    {"%a: u32[5,7]", "%x = const i64[1] [1]\n %y = ReduceMean(%a, %x) : u32[5,1]"},
    /* the last dim kept and wide: accumulated in the output, vectorized */
    {"%a: f32[4,5,40]", "%x = const i64[1] [1]\n %y = ReduceSum(%a, %x) : f32[4,1,40]"},
    {"%a: f32[6,33]", "%x = const i64[1] [0]\n %y = ReduceMean(%a, %x) {keepdims = 0} : f32[33]"},
    {"%a: i8[3,7,70]", "%x = const i64[2] [0, 1]\n %y = ReduceMax(%a, %x) : i8[1,1,70]"},
    {"%a: f64[5,3,20]", "%x = const i64[1] [1]\n %y = ReduceL2(%a, %x) {keepdims = 0} : f64[5,20]"},
    {"%a: i32[3,40]", "%x = const i64[1] [0]\n %y = ReduceProd(%a, %x) : i32[1,40]"},
    {"%a: u16[4,64]", "%x = const i64[1] [0]\n %y = ReduceMin(%a, %x) : u16[1,64]"},
    {"%a: f32[5,32]", "%x = const i64[1] [0]\n %y = ReduceLogSum(%a, %x) : f32[1,32]"},
    {"%a: i32[4,3,48]", "%x = const i64[1] [0]\n %y = ReduceL1(%a, %x) : i32[1,3,48]"},
    {"%a: f32[3,2,3,17]", "%x = const i64[2] [1, 2]\n %y = ReduceSumSquare(%a, %x) : f32[3,1,1,17]"},
    {"%a: bool[3,80]", "%x = const i64[1] [0]\n %y = ReduceMax(%a, %x) : bool[1,80]"},
    /* long unit-stride reductions: partial results */
    {"%a: f32[3,70]", "%x = const i64[1] [1]\n %y = ReduceSum(%a, %x) : f32[3,1]"},
    {"%a: f32[3,70]", "%x = const i64[1] [1]\n %y = ReduceMax(%a, %x) {keepdims = 0} : f32[3]"},
    {"%a: f32[2,3,40]", "%x = const i64[1] [2]\n %y = ReduceLogSumExp(%a, %x) : f32[2,3,1]"},
    {"%a: f32[3,50]", "%y = Softmax(%a) : f32[3,50]"},
    {"%a: f32[2,100], %s: f32[100], %b: f32[100]",
     "%y, %m, %r = LayerNormalization(%a, %s, %b) : f32[2,100], f32[2,1], f32[2,1]"},
    {"%a: f32[2,3,2,40]", "%y = MeanVarianceNormalization(%a) : f32[2,3,2,40]"},
    {"%a: f32[3,40]", "%y = LpNormalization(%a) {axis = -1, p = 1} : f32[3,40]"},
    {"%a: f32[1,2,3,40], %s: f32[2], %b: f32[2]", "%y = InstanceNormalization(%a, %s, %b) : f32[1,2,3,40]"},
    {"%a: f32[]", "%y = ReduceL2(%a) : f32[]"},
    {"%a: f32[4,6]", "%y = ArgMax(%a) {axis = 1, keepdims = 0} : i64[4]"},
    {"%a: f32[4,6]", "%y = ArgMax(%a) {axis = 1, select_last_index = 1} : i64[4,1]"},
    {"%a: i32[5,3,4]", "%y = ArgMin(%a) {axis = 0} : i64[1,3,4]"},
    {"%a: u8[5,9]", "%y = ArgMin(%a) {axis = -1, select_last_index = 1, keepdims = 0} : i64[5]"},
    {"%a: f16[3,7]", "%y = ArgMin(%a) {axis = 1, keepdims = 0} : i64[3]"},
    {"%a: f32[3,5]", "%x = const i64[] [1]\n %y = CumSum(%a, %x) : f32[3,5]"},
    {"%a: f32[3,5]", "%x = const i32[1] [0]\n %y = CumSum(%a, %x) {exclusive = 1, reverse = 1} : f32[3,5]"},
    {"%a: i32[4,3]", "%x = const i64[] [-1]\n %y = CumProd(%a, %x) {reverse = 1} : i32[4,3]"},
    {"%a: u8[10]", "%x = const i64[] [0]\n %y = CumSum(%a, %x) {exclusive = 1} : u8[10]"},
    {"%a: f32[4,3,40]", "%x = const i64[] [1]\n %y = CumSum(%a, %x) : f32[4,3,40]"},
    {"%a: f32[4,3,40]", "%x = const i64[] [0]\n %y = CumSum(%a, %x) {exclusive = 1, reverse = 1} : f32[4,3,40]"},
    {"%a: f64[5,33]", "%x = const i64[] [0]\n %y = CumProd(%a, %x) {reverse = 1} : f64[5,33]"},
    {"%a: i16[5,70]", "%x = const i64[] [-2]\n %y = CumProd(%a, %x) {exclusive = 1} : i16[5,70]"},
    {"%a: f16[2,40]", "%y = Softmax(%a) : f16[2,40]"},
    {"%a: f32[3,50]", "%y = LogSoftmax(%a) : f32[3,50]"},
    {"%a: f32[2,5,3,37]", "%y = Softmax(%a) {axis = 1} : f32[2,5,3,37]"},
    {"%a: f32[4,32]", "%y = LogSoftmax(%a) {axis = 0} : f32[4,32]"},
    {"%a: f16[3,2,20]", "%y = Softmax(%a) {axis = 0} : f16[3,2,20]"},
    {"%a: f16[2,9]", "%y = Softmax(%a) : f16[2,9]"},
    {"%a: f32[4,3,5]", "%y = Softmax(%a) {axis = 1} : f32[4,3,5]"},
    {"%a: f64[5,6]", "%y = LogSoftmax(%a) {axis = 0} : f64[5,6]"},
    {"%a: f32[3,6]", "%y = Hardmax(%a) {axis = 1} : f32[3,6]"},
    {"%a: f32[4,3,8], %s: f32[8], %b: f32[3,8]",
     "%y, %m, %r = LayerNormalization(%a, %s, %b) : f32[4,3,8], f32[4,3,1], f32[4,3,1]"},
    {"%a: f16[2,3,5], %s: f16[3,5]",
     "%y, %m, %r = LayerNormalization(%a, %s) {axis = 1} : f16[2,3,5], f32[2,1,1], f32[2,1,1]"},
    {"%a: f32[3,4,6], %s: f32[6]", "%y = RMSNormalization(%a, %s) : f32[3,4,6]"},
    {"%a: f32[2,6,3,3], %s: f32[6], %b: f32[6]",
     "%y = GroupNormalization(%a, %s, %b) {num_groups = 3, epsilon = 0.01} : f32[2,6,3,3]"},
    {"%a: f32[2,4,5], %s: f32[2], %b: f32[2]",
     "%y = GroupNormalization(%a, %s, %b) {num_groups = 2} : f32[2,4,5]"},
    {"%a: f32[2,3,4,5], %s: f32[3], %b: f32[3]", "%y = InstanceNormalization(%a, %s, %b) : f32[2,3,4,5]"},
    {"%a: f32[2,3,4], %s: f32[3], %b: f32[3], %mu: f32[3], %v: f32[3]",
     "%y = BatchNormalization(%a, %s, %b, %mu, %v) : f32[2,3,4]"},
    {"%a: f32[3,5]", "%y = LpNormalization(%a) {axis = 0, p = 1} : f32[3,5]"},
    {"%a: f32[3,5]", "%y = LpNormalization(%a) : f32[3,5]"},
    {"%a: f32[2,3,2,4]", "%y = MeanVarianceNormalization(%a) : f32[2,3,2,4]"},
    {"%a: f32[2,5,3,3]", "%y = LRN(%a) {size = 3, alpha = 0.001, beta = 0.75, bias = 2.0} : f32[2,5,3,3]"},
};
#define NCASES (int)(sizeof cases / sizeof cases[0])

static ir_graph *graphs[NCASES];
static ir_tensor ins[NCASES][MAXIO];
static ir_tensor want[NCASES][MAXIO];
static void *lib;

/* Inputs on a grid of quarters, so maxima tie; positive for the logs and
 * the variances; integers small enough for the products not to wrap much. */
static void fill(ir_tensor *t, unsigned *seed, bool positive)
{
    t->data = calloc(1, t->nbytes + 1);
    for (int64_t i = 0; i < t->numel; i++) {
        double r = (double)rand_r(seed) / RAND_MAX;
        if (t->dtype == IR_BOOL)
            ir_tensor_seti(t, i, r < 0.5);
        else if (ir_dtype_is_float(t->dtype))
            ir_tensor_setf(t, i, positive ? 0.25 + floor(r * 12) / 4 : floor(r * 24) / 4 - 3);
        else
            ir_tensor_seti(t, i, (int64_t)(r * 9) - (ir_dtype_is_signed(t->dtype) ? 4 : 0));
    }
}

static const ir_value *node_input(const ir_graph *g, int i)
{
    return g->nodes[0]->in[i];
}

static void setup(void)
{
    icc_diag d = {{0}};
    cg_target *t;
    ck_assert_msg(cg_target_create(NULL, NULL, NULL, 2, &t, &d) == 0, "%s", d.msg);
    LLVMModuleRef m = LLVMModuleCreateWithName("red");
    cg_target_setup_module(t, m);
    unsigned seed = 7;
    for (int c = 0; c < NCASES; c++) {
        char text[1024], outs[64] = "";
        /* the node's outputs are the names before its '=' */
        const char *line = strrchr(cases[c].body, '\n');
        line = line ? line + 1 : cases[c].body;
        while (*line == ' ')
            line++;
        snprintf(outs, sizeof outs, "%.*s", (int)(strchr(line, '=') - line - 1), line);
        snprintf(text, sizeof text, "graph @g(%s) -> (%s) {\n  %s\n}\n", cases[c].inputs, outs,
                 cases[c].body);
        ir_graph *g = ir_parse(text, strlen(text), "case", &d);
        ck_assert_msg(g != NULL, "case %d: %s", c, d.msg);
        graphs[c] = g;
        const ir_node *n = g->nodes[0];
        ck_assert_msg(cg_can_lower(n), "case %d (%s) is not lowered", c, cases[c].body);
        cg_binding *b = calloc((size_t)g->nvalues, sizeof *b);
        int nb = 0;
        for (int i = 0; i < n->nin; i++)
            if (n->in[i])
                b[n->in[i]->id] = (cg_binding){KIR_BUF_INPUT, nb++, 0};
        for (int i = 0; i < n->nout; i++)
            b[n->out[i]->id] = (cg_binding){KIR_BUF_OUTPUT, i, 0};
        char name[32];
        snprintf(name, sizeof name, "case%d", c);
        kir_kernel *k;
        ck_assert_msg(cg_lower_node(g, n, b, harness_sched(t, &(cg_schedule){0}), name, &k, &d) == 0,
                      "case %d: %s", c, d.msg);
        LLVMValueRef fn;
        ck_assert_msg(cg_llvm_emit_kernel(t, m, k, &fn, &d) == 0, "case %d: %s", c, d.msg);
        kir_kernel_destroy(k);
        free(b);
        bool positive = strstr(cases[c].body, "LogSum(") != NULL;
        const ir_tensor *inp[MAXIO] = {NULL};
        for (int i = 0; i < n->nin; i++) {
            const ir_value *v = node_input(g, i);
            if (v->kind == IR_VAL_CONST) {
                inp[i] = &v->cval;
                continue;
            }
            const ir_type *ty = &v->type;
            int64_t dims[IR_MAX_RANK];
            for (int j = 0; j < ty->rank; j++)
                dims[j] = ty->dims[j].v;
            ck_assert_int_eq(ir_tensor_init(&ins[c][i], ty->dtype, ty->rank, dims, &d), 0);
            /* BatchNorm's variance (input 4) must be positive */
            fill(&ins[c][i], &seed, positive || i == 4);
            inp[i] = &ins[c][i];
        }
        ck_assert_msg(ir_eval_node(n, inp, want[c], &d) == 0, "case %d: %s", c, d.msg);
    }
    lib = harness_load_module(t, m);
    LLVMDisposeModule(m);
    cg_target_destroy(t);
}

static void teardown(void)
{
    for (int c = 0; c < NCASES; c++) {
        for (int i = 0; i < MAXIO; i++) {
            free(ins[c][i].data);
            free(want[c][i].data);
        }
        ir_graph_destroy(graphs[c]);
    }
    if (lib)
        dlclose(lib);
}


START_TEST(compiled_matches_interpreter)
{
    int c = _i;
    const ir_node *n = graphs[c]->nodes[0];
    char name[32];
    snprintf(name, sizeof name, "case%d", c);
    harness_kernel_fn fn = (harness_kernel_fn)dlsym(lib, name);
    ck_assert_ptr_nonnull(fn);
    ir_tensor got[MAXIO];
    void *bufs[2 * MAXIO] = {NULL};
    int nb = 0;
    for (int i = 0; i < n->nin; i++)
        if (n->in[i])
            bufs[nb++] = n->in[i]->kind == IR_VAL_CONST ? n->in[i]->cval.data : ins[c][i].data;
    for (int o = 0; o < n->nout; o++) {
        got[o] = want[c][o];
        got[o].data = calloc(1, got[o].nbytes + 1);
        bufs[nb++] = got[o].data;
    }
    int64_t syms[2] = {0, 0};
    fn(bufs, syms, 0, INT64_MAX);
    for (int o = 0; o < n->nout; o++) {
        const ir_tensor *gt = &got[o];
        double rtol = gt->dtype == IR_BF16 ? 1e-2 : gt->dtype == IR_F16 ? 2e-3 : 1e-5;
        char what[600];
        snprintf(what, sizeof what, "%s, output %d", cases[c].body, o);
        harness_expect_close(gt, &want[c][o], rtol, 1e-5, what);
        free(got[o].data);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("codegen_reduce");
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
