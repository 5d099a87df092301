/* test_codegen_unique.c - Unique compiled end to end (lower -> kernel IR
 * -> LLVM -> .so) into the output shapes the graph declares, against the
 * reference interpreter: sorted and first-occurrence order, flattened and
 * along an axis, NaNs (one group, last), -0 equal to +0, unsigned and bool
 * items, every output count, and declared lengths that disagree with the
 * data (the kernel fails the run through its status word, and writes
 * nothing past a declared length). One module holds every case. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "codegen_harness.h"
#include "codegen/llvm/emit.h"
#include "codegen/lower.h"
#include "ir/ref/interp.h"
#include "ir/text.h"

#define NOUT 4

/* Each case: the input as a constant, then the node with its declared
 * types (the outputs are %y, %i, %v, %c, as many as the node has). */
static const char *const cases[] = {
    "%x = const f32[9] [3.0, nan, 1.0, -0.0, 0.0, -nan, 3.0, -2.0, 1.0]\n"
    " %y, %i, %v, %c = Unique(%x) : f32[5], i64[5], i64[9], i64[5]",
    "%x = const f32[9] [3.0, nan, 1.0, -0.0, 0.0, -nan, 3.0, -2.0, 1.0]\n"
    " %y, %i, %v, %c = Unique(%x) {sorted = 0} : f32[5], i64[5], i64[9], i64[5]",
    "%x = const i64[2,3] [5, -1, 5, 2, -1, 7]\n %y, %i, %v, %c = Unique(%x) : i64[4], i64[4], i64[6], i64[4]",
    "%x = const u64[4] [9223372036854775813, 1, 9223372036854775813, 7]\n"
    " %y, %i, %v, %c = Unique(%x) : u64[3], i64[3], i64[4], i64[3]",
    "%x = const bool[5] [true, false, true, true, false]\n %y, %i = Unique(%x) {sorted = 0} : bool[2], i64[2]",
    "%x = const f16[4] [1.5, -1.0, 1.5, nan]\n %y, %i, %v = Unique(%x) : f16[3], i64[3], i64[4]",
    "%x = const f32[] [4.0]\n %y, %i, %v, %c = Unique(%x) : f32[1], i64[1], i64[1], i64[1]",
    "%x = const f32[4,3] [1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 2.0, 3.0, 4.0, 0.0, 5.0, 5.0]\n"
    " %y, %i, %v, %c = Unique(%x) {axis = 0} : f32[3,3], i64[3], i64[4], i64[3]",
    "%x = const i32[2,5,2] [0, 1, 1, 0, 0, 1, 1, 1, 1, 0, 1, 1, 0, 0, 1, 1, 0, 1, 0, 0]\n"
    " %y, %i, %v, %c = Unique(%x) {axis = 1, sorted = 0} : i32[2,4,2], i64[4], i64[5], i64[4]",
    "%x = const i32[2,5,2] [0, 1, 1, 0, 0, 1, 1, 1, 1, 0, 1, 1, 0, 0, 1, 1, 0, 1, 0, 0]\n"
    " %y, %i, %v, %c = Unique(%x) {axis = -2} : i32[2,4,2], i64[4], i64[5], i64[4]",
    "%x = const f64[2,4] [nan, 1.0, nan, 0.0, 2.0, 2.0, 2.0, 2.0]\n"
    " %y, %i, %v, %c = Unique(%x) {axis = 1} : f64[2,3], i64[3], i64[4], i64[3]",
    "%x = const f32[0] []\n %y, %i, %v, %c = Unique(%x) : f32[0], i64[0], i64[0], i64[0]",
    "%x = const u8[3,0] []\n %y, %i, %v, %c = Unique(%x) {axis = 0} : u8[1,0], i64[1], i64[3], i64[1]",
    /* declared lengths that are not the data's (4 distinct values) */
    "%x = const i32[6] [3, 1, 3, 9, 1, 0]\n %y, %i, %v, %c = Unique(%x) : i32[2], i64[3], i64[6], i64[1]",
    "%x = const i32[6] [3, 1, 3, 9, 1, 0]\n %y, %i, %v, %c = Unique(%x) {sorted = 0} : i32[7], i64[5], i64[6], i64[0]",
    "%x = const f32[3,2] [1.0, 0.0, 1.0, 0.0, 2.0, 3.0]\n"
    " %y, %i, %v, %c = Unique(%x) {axis = 0} : f32[4,2], i64[1], i64[3], i64[6]",
};
#define NCASES (int)(sizeof cases / sizeof cases[0])

static ir_graph *graphs[NCASES];
static int status_buf[NCASES];     /* the kernel's status word's buffer, or -1 */
static ir_tensor want[NCASES][NOUT];
static void *lib;

static void setup(void)
{
    icc_diag d = {{0}};
    cg_target *t;
    ck_assert_msg(cg_target_create(NULL, NULL, NULL, 2, &t, &d) == 0, "%s", d.msg);
    LLVMModuleRef m = LLVMModuleCreateWithName("unique");
    cg_target_setup_module(t, m);
    static const char *const names[NOUT] = {"%y", "%i", "%v", "%c"};
    for (int c = 0; c < NCASES; c++) {
        char text[1024], outs[64] = "";
        int nout = 0;
        for (; nout < NOUT && strstr(strchr(cases[c], '\n'), names[nout]); nout++)
            snprintf(outs + strlen(outs), sizeof outs - strlen(outs), "%s%s", nout ? ", " : "", names[nout]);
        snprintf(text, sizeof text, "graph @g() -> (%s) {\n  %s\n}\n", outs, cases[c]);
        ir_graph *g = ir_parse(text, strlen(text), "case", &d);
        ck_assert_msg(g != NULL, "case %d: %s", c, d.msg);
        graphs[c] = g;
        const ir_node *n = g->nodes[0];
        ck_assert_msg(cg_can_lower(n), "case %d (%s) is not lowered", c, cases[c]);
        cg_binding *b = calloc((size_t)g->nvalues, sizeof *b);
        b[n->in[0]->id] = (cg_binding){KIR_BUF_INPUT, 0, 0};
        for (int i = 0; i < n->nout; i++)
            b[n->out[i]->id] = (cg_binding){KIR_BUF_OUTPUT, i, 0};
        char name[32];
        snprintf(name, sizeof name, "case%d", c);
        kir_kernel *k;
        ck_assert_msg(cg_lower_node(g, n, b, harness_sched(t, &(cg_schedule){0}), name, &k, &d) == 0,
                      "case %d: %s", c, d.msg);
        LLVMValueRef fn;
        ck_assert_msg(cg_llvm_emit_kernel(t, m, k, &fn, &d) == 0, "case %d: %s", c, d.msg);
        status_buf[c] = -1;
        for (int i = 0; i < k->nbufs; i++)
            if (k->bufs[i].kind == KIR_BUF_STATUS)
                status_buf[c] = i;
        ck_assert_msg(status_buf[c] > n->nout && status_buf[c] < 2 + NOUT, "case %d: no status buffer", c);
        kir_kernel_destroy(k);
        free(b);
        const ir_tensor *in[1] = {&n->in[0]->cval};
        ck_assert_msg(ir_eval_node(n, in, want[c], &d) == 0, "case %d: %s", c, d.msg);
    }
    lib = harness_load_module(t, m);
    LLVMDisposeModule(m);
    cg_target_destroy(t);
}

static void teardown(void)
{
    for (int c = 0; c < NCASES; c++) {
        for (int i = 0; i < NOUT; i++)
            free(want[c][i].data);
        ir_graph_destroy(graphs[c]);
    }
    if (lib)
        dlclose(lib);
}

/* Output o's declared length along its slot axis, and the elements before
 * and after that axis. */
static void slots(const ir_node *n, int o, const ir_tensor *t, int64_t *outer, int64_t *len, int64_t *inner)
{
    const ir_attr *a = ir_node_attr(n, "axis");
    int axis = o == 0 && a ? (int)(a->i < 0 ? a->i + t->rank : a->i) : 0;
    *outer = *inner = 1;
    for (int d = 0; d < t->rank; d++) {
        if (d < axis)
            *outer *= t->dims[d];
        else if (d > axis)
            *inner *= t->dims[d];
    }
    *len = t->rank ? t->dims[axis] : 1;
}

START_TEST(compiled_matches_interpreter)
{
    int c = _i;
    const ir_node *n = graphs[c]->nodes[0];
    char name[32];
    snprintf(name, sizeof name, "case%d", c);
    harness_kernel_fn fn = (harness_kernel_fn)dlsym(lib, name);
    ck_assert_ptr_nonnull(fn);
    ir_tensor got[NOUT];
    int32_t status = 0;
    void *bufs[2 + NOUT] = {n->in[0]->cval.data};
    bufs[status_buf[c]] = &status;
    icc_diag d = {{0}};
    for (int o = 0; o < n->nout; o++) {
        const ir_type *ty = &n->out[o]->type;
        int64_t dims[IR_MAX_RANK];
        for (int j = 0; j < ty->rank; j++)
            dims[j] = ty->dims[j].v;
        ck_assert_int_eq(ir_tensor_init(&got[o], ty->dtype, ty->rank, dims, &d), 0);
        /* garbage, so unwritten slots show */
        got[o].data = malloc(got[o].nbytes + 1);
        memset(got[o].data, 0x5a, got[o].nbytes + 1);
        bufs[1 + o] = got[o].data;
    }
    int64_t syms[2] = {0, 0};
    fn(bufs, syms, 0, INT64_MAX);
    /* a declared length (Y's slots, the indices', the counts') that is not
     * the interpreter's count fails the run */
    bool fits = true;
    for (int o = 0; o < n->nout; o++) {
        int64_t outer, len, inner, wouter, wlen, winner;
        slots(n, o, &got[o], &outer, &len, &inner);
        slots(n, o, &want[c][o], &wouter, &wlen, &winner);
        fits &= len == wlen;
    }
    ck_assert_msg((status != 0) == !fits, "%s: status %d, the declared lengths %s the data's", cases[c], status,
                  fits ? "are" : "are not");
    for (int o = 0; o < n->nout; o++) {
        /* slot p of the declared output: the reference's slot p, or zero
         * past the reference's count */
        const ir_tensor *w = &want[c][o];
        ir_tensor exp = got[o];
        exp.data = calloc(1, exp.nbytes + 1);
        int64_t outer, len, inner, wouter, wlen, winner;
        slots(n, o, &got[o], &outer, &len, &inner);
        slots(n, o, w, &wouter, &wlen, &winner);
        ck_assert(outer == wouter && inner == winner);
        for (int64_t a = 0; a < outer; a++)
            for (int64_t p = 0; p < len && p < wlen; p++)
                for (int64_t b = 0; b < inner; b++) {
                    int64_t at = (a * len + p) * inner + b, from = (a * wlen + p) * inner + b;
                    if (ir_dtype_is_float(w->dtype))
                        ir_tensor_setf(&exp, at, ir_tensor_getf(w, from));
                    else
                        ir_tensor_seti(&exp, at, ir_tensor_geti(w, from));
                }
        char what[600];
        snprintf(what, sizeof what, "%s, output %d", cases[c], o);
        harness_expect_close(&got[o], &exp, 0, 0, what);
        ck_assert_msg(((unsigned char *)got[o].data)[got[o].nbytes] == 0x5a, "%s: written past the end", what);
        /* -0 stays the first occurrence's sign */
        for (int64_t i = 0; o == 0 && ir_dtype_is_float(w->dtype) && i < exp.numel; i++)
            ck_assert_msg(signbit(ir_tensor_getf(&got[o], i)) == signbit(ir_tensor_getf(&exp, i)),
                          "%s, element %lld: the sign of zero", what, (long long)i);
        free(exp.data);
        free(got[o].data);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("codegen_unique");
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
