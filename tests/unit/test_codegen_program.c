/* test_codegen_program.c - the backend-neutral program (codegen/program.h)
 * and the backend table (codegen/backend.h): what cg_program_build
 * decides for a symbolic-batch graph (symbols, slots, shape checks, a
 * per-item Conv, parallel trip counts, copies), --emit=kernels of a
 * batched kernel, and the LLVM backend driven only through its table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "codegen/backend.h"
#include "ir/text.h"
#include "passes/pass.h"

/* A Conv whose batch is symbolic (lowered per item), a reshape the run
 * checks, a weight, and an input passed through. */
static const char *net =
    "graph @net(%x: f32[N,3,8,8], %w: f32[4,3,3,3]) -> (%y, %z, %x) {\n"
    "  %k = const f32[1] [2.0]\n"
    "  %c = Conv(%x, %w) {kernel_shape = [3, 3], pads = [1, 1, 1, 1]} : f32[N,4,8,8]\n"
    "  %y = Relu(%c) : f32[N,4,8,8]\n"
    "  %f = Flatten(%x) {axis=1} : f32[N,192]\n"
    "  %z = Mul(%f, %k) : f32[N,192]\n"
    "}\n";

static ir_graph *prepare(const char *text)
{
    icc_diag d = {{0}};
    ir_graph *g = ir_parse(text, strlen(text), "net.icc", &d);
    ck_assert_msg(g != NULL, "%s", d.msg);
    icc_pipeline p;
    ck_assert_int_eq(icc_pipeline_parse(icc_pipeline_for_level(2), &p, &d), 0);
    ck_assert_msg(icc_pipeline_run(&p, g, NULL, &d) == 0, "%s", d.msg);
    icc_pipeline_free(&p);
    return g;
}

static void *host_target(const cg_backend *be, cg_schedule *s)
{
    icc_diag d = {{0}};
    void *t;
    ck_assert_msg(be->target_create(NULL, NULL, NULL, 2, &t, &d) == 0, "%s", d.msg);
    ck_assert_msg(cg_schedule_init(s, be->target_desc(t), &d) == 0, "%s", d.msg);
    return t;
}

/* A graph's text prepared at -O2 and built as program `name` for the
 * host's LLVM target; the caller destroys p, g and t. */
typedef struct {
    const cg_backend *be;
    cg_schedule s;
    void *t;
    ir_graph *g;
    cg_program *p;
} built;

static void build(built *b, const char *text, const char *name)
{
    icc_diag d = {{0}};
    b->be = cg_backend_find("llvm");
    ck_assert_ptr_nonnull(b->be);
    b->t = host_target(b->be, &b->s);
    b->g = prepare(text);
    ck_assert_msg(cg_program_build(b->g, &b->s, name, false, &b->p, &d) == 0, "%s", d.msg);
}

START_TEST(program_of_a_symbolic_batch)
{
    icc_diag d = {{0}};
    built b;
    build(&b, net, "net");
    const cg_backend *be = b.be;
    cg_schedule s = b.s;
    void *t = b.t;
    ir_graph *g = b.g;
    cg_program *p = b.p;
    ck_assert(p->dynamic);
    ck_assert_int_eq(p->nsymbols, 1);
    ck_assert_str_eq(p->symbol_names[0], "N");
    ck_assert_int_gt(p->nkernels, 0);
    /* the Conv runs per item: x advances by one 3x8x8 image */
    const cg_kernel *conv = NULL;
    for (int i = 0; i < p->nkernels; i++)
        if (p->kernels[i].batch_sym)
            conv = &p->kernels[i];
    ck_assert_ptr_nonnull(conv);
    ck_assert_int_gt(conv->batch_sym, 0);
    ck_assert_int_eq(conv->k->bufs[0].dims[0]->c.i, 1);
    ck_assert_int_eq(conv->item_bytes[0].scale * conv->item_bytes[0].dims[0].v * conv->item_bytes[0].dims[1].v *
                         conv->item_bytes[0].dims[2].v * conv->item_bytes[0].dims[3].v, 3 * 8 * 8 * 4);
    for (int i = 0; i < p->nkernels; i++)
        ck_assert_msg(!strncmp(p->kernels[i].k->name, "net_k", 5), "%s", p->kernels[i].k->name);
    /* every slot's size is in its element type; arena_bytes is the layout at N = 1 */
    ck_assert_int_gt(p->nslots, 0);
    ck_assert_int_gt(p->arena_bytes, 0);
    ck_assert_int_eq(p->arena_bytes % 64, 0);
    /* the Flatten's element counts are checked, with a message naming it */
    ck_assert_int_ge(p->nchecks, 1);
    ck_assert_int_eq(p->nmessages, p->nchecks);
    bool flat = false;
    for (int i = 0; i < p->nmessages; i++)
        flat |= strstr(p->messages[i], "(Flatten)") != NULL;
    ck_assert(flat);
    /* x is an output too: copied by the run, N x 192 floats */
    ck_assert_int_eq(p->ncopies, 1);
    ck_assert_int_eq(p->copies[0].output, 2);
    ck_assert_int_eq(p->copies[0].src.kind, KIR_BUF_INPUT);
    ck_assert_int_eq(p->copies[0].bytes.scale, 4);
    ck_assert_int_eq(p->outputs[2].dims[0], -1);
    ck_assert_str_eq(p->outputs[2].dim_names[0], "N");
    ck_assert_int_gt(p->weights_bytes, 0);
    ck_assert_int_eq(p->weights_bytes % 64, 0);
    cg_program_destroy(p);
    /* --emit=kernels shows the per-item Conv too */
    char *text = cg_kernels_text(g, &s, NULL, &d);
    ck_assert_msg(text != NULL, "%s", d.msg);
    ck_assert_msg(strstr(text, "f32[1,3,8,8] in"), "%s", text);
    free(text);
    ir_graph_destroy(g);
    be->target_destroy(t);
}
END_TEST

/* A value live to the end (a) beside a chain of Softmaxes (one kernel
 * each): every link is live with a and with the link before it only, so
 * the chain reuses two slots' bytes above a; stacking each slot above
 * every earlier one it is live with took one slot per link. */
static const char *chain =
    "graph @chain(%x: f32[N,64]) -> (%y) {\n"
    "  %a = Relu(%x) : f32[N,64]\n"
    "  %t1 = Softmax(%a) : f32[N,64]\n"
    "  %t2 = Softmax(%t1) : f32[N,64]\n"
    "  %t3 = Softmax(%t2) : f32[N,64]\n"
    "  %t4 = Softmax(%t3) : f32[N,64]\n"
    "  %t5 = Softmax(%t4) : f32[N,64]\n"
    "  %t6 = Softmax(%t5) : f32[N,64]\n"
    "  %y = Add(%t6, %a) : f32[N,64]\n"
    "}\n";

START_TEST(symbolic_slots_reuse_freed_bytes)
{
    built b;
    build(&b, chain, "chain");
    cg_program *p = b.p;
    ck_assert(p->dynamic);
    /* a, t1..t6 in the arena, 256 bytes each at N = 1 (stacked: 7 x 256) */
    ck_assert_int_eq(p->nslots, 7);
    ck_assert_int_eq(p->arena_bytes, 3 * 256);
    /* each slot goes above the slots it is live with that come before it
     * in the run's order */
    bool *seen = calloc((size_t)p->nslots, sizeof *seen);
    for (int i = 0; i < p->nslots; i++) {
        int sl = p->slot_order[i];
        for (const int *u = p->slots[sl].live_with; *u >= 0; u++)
            ck_assert_msg(seen[*u], "slot %d placed before slot %d it goes above", sl, *u);
        seen[sl] = true;
    }
    free(seen);
    cg_program_destroy(p);
    ir_graph_destroy(b.g);
    b.be->target_destroy(b.t);
}
END_TEST

START_TEST(llvm_through_the_table)
{
    icc_diag d = {{0}};
    ck_assert_ptr_null(cg_backend_find("no-such-backend"));
    ck_assert_ptr_eq(cg_backends[0], cg_backend_find("llvm"));
    const cg_backend *be = cg_backends[0];
    ck_assert_ptr_nonnull(be->target_create);
    ck_assert_ptr_nonnull(be->target_destroy);
    ck_assert_ptr_nonnull(be->target_desc);
    ck_assert_ptr_nonnull(be->compile);
    ck_assert_ptr_nonnull(be->write);
    ck_assert_ptr_nonnull(be->artifact_free);
    void *t;
    ck_assert_int_eq(be->target_create("riscv64-linux-gnu", NULL, NULL, 2, &t, &d), -1);
    cg_schedule s;
    t = host_target(be, &s);
    ir_graph *g = prepare(net);
    cg_program *p;
    ck_assert_msg(cg_program_build(g, &s, "tbl", false, &p, &d) == 0, "%s", d.msg);
    cg_artifact *a;
    ck_assert_msg(be->compile(t, p, &a, &d) == 0, "%s", d.msg);
    cg_program_destroy(p);   /* the artifact keeps what it needs */
    char *ir = be->emit_text(a, "llvm", &d);
    ck_assert_msg(ir && strstr(ir, "@tbl_model = ") && strstr(ir, "@tbl_run("), "%s", d.msg);
    free(ir);
    ck_assert_ptr_null(be->emit_text(a, "ptx", &d));
    ck_assert_msg(strstr(d.msg, "llvm, asm"), "%s", d.msg);
    char dir[] = "/tmp/icc_prog_XXXXXX", obj[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(obj, sizeof obj, "%s/m.o", dir);
    ck_assert_msg(be->write(a, obj, NULL, &d) == 0, "%s", d.msg);
    struct stat st;
    ck_assert_int_eq(stat(obj, &st), 0);
    ck_assert_int_gt(st.st_size, 0);
    unlink(obj);
    rmdir(dir);
    be->artifact_free(a);
    ir_graph_destroy(g);
    be->target_destroy(t);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("codegen_program");
    TCase *tc = tcase_create("program");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, program_of_a_symbolic_batch);
    tcase_add_test(tc, llvm_through_the_table);
    tcase_add_test(tc, symbolic_slots_reuse_freed_bytes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return icc_run_suite(suite());
}
