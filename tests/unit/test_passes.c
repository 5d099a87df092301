/* test_passes.c - the pass manager and the rewriting helpers: pipelines
 * parse and print back, options reach passes, malformed pipelines fail
 * with messages naming the culprit, every -O level's pipeline parses, the
 * runner's print-before/after/changed, time-passes and stats output,
 * verification after each pass, reproducers of failing passes, and
 * ir_graph_toposort, ir_graph_compact and ir_replace_all_uses. */
#include "check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/ops.h"
#include "ir/ref/interp.h"
#include "ir/text.h"
#include "passes/pass.h"

static ir_graph *parse_ok(const char *text)
{
    icc_diag d = {{0}};
    ir_graph *g = ir_parse(text, strlen(text), "t.icc", &d);
    ck_assert_msg(g != NULL, "parse failed: %s\n%s", d.msg, text);
    return g;
}

/* Parses text as a pipeline and prints it back. */
static char *round_trip(const char *text)
{
    icc_pipeline p;
    icc_diag d = {{0}};
    ck_assert_msg(icc_pipeline_parse(text, &p, &d) == 0, "'%s': %s", text, d.msg);
    char *s = icc_pipeline_string(&p, 0);
    ck_assert_ptr_nonnull(s);
    icc_pipeline_free(&p);
    return s;
}

static void parse_fails(const char *text, const char *want)
{
    icc_pipeline p;
    icc_diag d = {{0}};
    ck_assert_msg(icc_pipeline_parse(text, &p, &d) < 0, "'%s' parsed", text);
    ck_assert_msg(strstr(d.msg, want), "'%s': message '%s' lacks '%s'", text, d.msg, want);
    ck_assert_ptr_null(p.steps);
    ck_assert_int_eq(p.nsteps, 0);
}

/* Runs pipeline text over g with o, capturing what the runner writes. */
static int run_capture(const char *text, ir_graph *g, icc_pass_options *o, char **out, icc_diag *d)
{
    icc_pipeline p;
    ck_assert_msg(icc_pipeline_parse(text, &p, d) == 0, "%s", d->msg);
    size_t n;
    FILE *f = open_memstream(out, &n);
    ck_assert_ptr_nonnull(f);
    o->out = f;
    int r = icc_pipeline_run(&p, g, o, d);
    fclose(f);
    icc_pipeline_free(&p);
    return r;
}

static const char *const dead_graph =
    "graph @g(%x: f32[2]) -> (%y) {\n"
    "  %d = Neg(%x) : f32[2]\n"
    "  %y = Abs(%x) : f32[2]\n"
    "}\n";

/* ---- pipelines ----------------------------------------------------------- */

START_TEST(pipeline_prints_back)
{
    const char *same[] = {"dce", "shape-infer,fold{max-bytes=4096},dce", "fold{max-bytes=10},cse,simplify",
                          "fold-bn,dce,dce"};
    for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
        char *s = round_trip(same[i]);
        ck_assert_str_eq(s, same[i]);
        free(s);
    }
    char *s = round_trip("  dce , fold {max-bytes=7 } ,cse ");
    ck_assert_str_eq(s, "dce,fold{max-bytes=7},cse");
    free(s);
    s = round_trip("");
    ck_assert_str_eq(s, "");
    free(s);
}
END_TEST

START_TEST(pipeline_steps_and_suffix)
{
    icc_pipeline p;
    icc_diag d = {{0}};
    ck_assert_int_eq(icc_pipeline_parse("shape-infer,fold{max-bytes=10},dce", &p, &d), 0);
    ck_assert_int_eq(p.nsteps, 3);
    ck_assert_int_eq(p.steps[0].pass, PASS_SHAPE_INFER);
    ck_assert_int_eq(p.steps[1].pass, PASS_FOLD);
    ck_assert_int_eq(p.steps[2].pass, PASS_DCE);
    ck_assert_int_eq(p.steps[1].nopts, 1);
    ck_assert_str_eq(p.steps[1].opts[0].key, "max-bytes");
    ck_assert_str_eq(p.steps[1].opts[0].val, "10");
    char *s = icc_pipeline_string(&p, 1);
    ck_assert_str_eq(s, "fold{max-bytes=10},dce");
    free(s);
    s = icc_pipeline_string(&p, 3);
    ck_assert_str_eq(s, "");
    free(s);
    /* The option reaches the pass through its context; absent keys give
     * the caller's default. */
    pass_ctx c = {.opts = p.steps[1].opts, .nopts = p.steps[1].nopts};
    ck_assert_int_eq(pass_opt_int(&c, "max-bytes", 1048576), 10);
    ck_assert_int_eq(pass_opt_int(&c, "other", 42), 42);
    icc_pipeline_free(&p);
    ck_assert_ptr_null(p.steps);
}
END_TEST

START_TEST(pipeline_errors)
{
    parse_fails("nosuch", "unknown pass 'nosuch'");
    parse_fails("dce,nosuch,fold", "unknown pass 'nosuch'");
    parse_fails("dce,", "unknown pass ''");
    parse_fails("fold{bogus=1}", "pass 'fold' has no option 'bogus'");
    parse_fails("dce{max-bytes=1}", "pass 'dce' has no option 'max-bytes'");
    parse_fails("fold{max-bytes=10", "unterminated options (missing '}')");
    parse_fails("fold{max-bytes=10 dce", "unterminated options");
    parse_fails("fold{max-bytes}", "expected key=value");
    parse_fails("precision{stage=int8,stage=half}", "pass 'precision': option 'stage' given twice");
    parse_fails("fold{max-bytes=}", "bad value for option 'max-bytes'");
    parse_fails("dce}", "unexpected '}'");
}
END_TEST

START_TEST(pipeline_levels)
{
    for (int level = 0; level <= 3; level++) {
        const char *t = icc_pipeline_for_level(level);
        ck_assert_ptr_nonnull(t);
        char *s = round_trip(t);
        ck_assert_str_eq(s, t);
        free(s);
    }
    ck_assert_str_eq(icc_pipeline_for_level(0), "shape-infer,lower-quant,lower-signal,precision");
    ck_assert_ptr_null(icc_pipeline_for_level(-1));
    ck_assert_ptr_null(icc_pipeline_for_level(4));
}
END_TEST

/* Every pass in the table has a name the parser finds and a summary. */
START_TEST(pass_table_complete)
{
    for (int i = 0; i < PASS_COUNT; i++) {
        ck_assert_ptr_nonnull(pass_table[i].run);
        ck_assert(strlen(pass_table[i].doc) > 0);
        icc_pipeline p;
        icc_diag d = {{0}};
        ck_assert_int_eq(icc_pipeline_parse(pass_table[i].name, &p, &d), 0);
        ck_assert_int_eq(p.steps[0].pass, i);
        icc_pipeline_free(&p);
    }
}
END_TEST

/* ---- the runner ---------------------------------------------------------- */

START_TEST(run_print_after_all)
{
    ir_graph *g = parse_ok(dead_graph);
    icc_pass_options o = {.print_after_all = true};
    char *out = NULL;
    icc_diag d = {{0}};
    ck_assert_int_eq(run_capture("dce", g, &o, &out, &d), 0);
    ck_assert_str_eq(out, "# IR after dce\n"
                          "graph @g(%x: f32[2]) -> (%y) {\n"
                          "  %y = Abs(%x) : f32[2]\n"
                          "}\n");
    free(out);
    ir_graph_destroy(g);
}
END_TEST

START_TEST(run_print_before_and_changed)
{
    ir_graph *g = parse_ok(dead_graph);
    icc_pass_options o = {.print_before = "dce", .print_after = "dce", .print_changed = true};
    char *out = NULL;
    icc_diag d = {{0}};
    /* The first dce changes the graph, the second finds nothing. */
    ck_assert_int_eq(run_capture("dce,dce", g, &o, &out, &d), 0);
    ck_assert_str_eq(out, "# IR before dce\n"
                          "graph @g(%x: f32[2]) -> (%y) {\n"
                          "  %d = Neg(%x) : f32[2]\n"
                          "  %y = Abs(%x) : f32[2]\n"
                          "}\n"
                          "# IR after dce\n"
                          "graph @g(%x: f32[2]) -> (%y) {\n"
                          "  %y = Abs(%x) : f32[2]\n"
                          "}\n"
                          "# IR before dce\n"
                          "graph @g(%x: f32[2]) -> (%y) {\n"
                          "  %y = Abs(%x) : f32[2]\n"
                          "}\n"
                          "# IR after dce: unchanged\n");
    free(out);
    ir_graph_destroy(g);
}
END_TEST

START_TEST(run_print_after_named_only)
{
    ir_graph *g = parse_ok(dead_graph);
    icc_pass_options o = {.print_after = "dce"};
    char *out = NULL;
    icc_diag d = {{0}};
    ck_assert_int_eq(run_capture("shape-infer,dce", g, &o, &out, &d), 0);
    ck_assert_ptr_null(strstr(out, "after shape-infer"));
    ck_assert_ptr_nonnull(strstr(out, "# IR after dce\n"));
    free(out);
    ir_graph_destroy(g);
}
END_TEST

START_TEST(run_time_passes_and_stats)
{
    ir_graph *g = parse_ok("graph @g(%x: f32[2]) -> (%y) {\n"
                           "  %c = const f32[2] [1.0, 2.0]\n"
                           "  %d = Neg(%x) : f32[2]\n"
                           "  %y = Abs(%x) : f32[2]\n"
                           "}\n");
    icc_pass_options o = {.time_passes = true, .stats = true};
    char *out = NULL;
    icc_diag d = {{0}};
    ck_assert_int_eq(run_capture("shape-infer,dce", g, &o, &out, &d), 0);
    ck_assert_msg(strstr(out, "# dce: 1 nodes removed, 1 constants removed, 8 constant bytes freed\n"), "%s",
                  out);
    ck_assert_msg(strstr(out, "# pass timings (wall)\n"), "%s", out);
    ck_assert_msg(strstr(out, "%  shape-infer\n"), "%s", out);
    ck_assert_msg(strstr(out, "%  dce\n"), "%s", out);
    ck_assert_msg(strstr(out, "100.0%  total\n"), "%s", out);
    free(out);
    ir_graph_destroy(g);
}
END_TEST

/* A graph whose nodes are out of order is invalid; dce leaves the order
 * as it is, so the verification that follows it must catch it and name
 * the pass, as it would a pass that broke the IR. */
static ir_graph *unordered_graph(void)
{
    icc_diag d = {{0}};
    ir_graph *g = parse_ok("graph @g(%x: f32[2]) -> (%z) {\n"
                           "  %y = Relu(%x) : f32[2]\n"
                           "  %z = Tanh(%y) : f32[2]\n"
                           "}\n");
    ir_node *relu = g->nodes[0];
    g->nodes[0] = g->nodes[1];
    g->nodes[1] = relu;
    ck_assert_int_lt(ir_verify(g, &d), 0);
    return g;
}

START_TEST(run_verifies_after_each_pass)
{
    ir_graph *g = unordered_graph();
    icc_pass_options o = {0};
    char *out = NULL;
    icc_diag d = {{0}};
    ck_assert_int_lt(run_capture("dce", g, &o, &out, &d), 0);
    ck_assert_msg(strstr(d.msg, "IR invalid after pass 'dce'"), "%s", d.msg);
    free(out);
    ir_graph_destroy(g);

    g = unordered_graph();
    o = (icc_pass_options){.no_verify = true};
    ck_assert_int_eq(run_capture("dce", g, &o, &out, &d), 0);
    free(out);
    ir_graph_destroy(g);
}
END_TEST

/* Gather of a constant with an out-of-range constant index: folding it
 * is an error of the model (and a stub pass fails too); either way the
 * reproducer holds the IR before the pass and how to re-run it. */
START_TEST(run_writes_reproducer)
{
    const char *text = "graph @repro(%x: f32[2]) -> (%y, %x) {\n"
                       "  %t = const f32[3] [1.0, 2.0, 3.0]\n"
                       "  %i = const i64[1] [7]\n"
                       "  %y = Gather(%t, %i) {axis = 0} : f32[1]\n"
                       "}\n";
    ir_graph *g = parse_ok(text);
    char path[] = "/tmp/icc_test_passes_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    icc_pass_options o = {.reproducer = path};
    char *out = NULL;
    icc_diag d = {{0}};
    ck_assert_int_lt(run_capture("dce,fold,dce", g, &o, &out, &d), 0);
    free(out);
    ck_assert_msg(strstr(d.msg, "pass 'fold'"), "%s", d.msg);
    ck_assert_msg(strstr(d.msg, "(reproducer: "), "%s", d.msg);
    ck_assert_msg(strstr(d.msg, path), "%s", d.msg);
    ir_graph_destroy(g);

    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    unlink(path);
    ck_assert_msg(!strncmp(buf, "# icc reproducer: pass 'fold' failed: ", 38), "%s", buf);
    char rerun[512];
    snprintf(rerun, sizeof rerun, "# re-run: icc opt %s --passes=fold,dce\n", path);
    ck_assert_msg(strstr(buf, rerun), "%s", buf);
    /* The IR is the one before fold (after the first dce, which had
     * nothing to do), and the file parses as it stands. */
    ck_assert_msg(strstr(buf, text), "%s", buf);
    ir_graph *back = ir_parse(buf, n, path, &d);
    ck_assert_msg(back != NULL, "%s", d.msg);
    ir_graph_destroy(back);
}
END_TEST

/* ---- rewriting helpers --------------------------------------------------- */

START_TEST(toposort_moves_appended_node)
{
    icc_diag d = {{0}};
    ir_graph *g = parse_ok("graph @g(%x: f32[2]) -> (%z) {\n"
                           "  %y = Relu(%x) : f32[2]\n"
                           "  %z = Tanh(%y) : f32[2]\n"
                           "}\n");
    ir_node *relu = g->nodes[0], *tanh_ = g->nodes[1];
    ir_value *y = relu->out[0];
    ir_node *sig = ir_graph_add_node(g, IR_OP_SIGMOID, "", 1, &y, 1, NULL, &d);
    ck_assert_ptr_nonnull(sig);
    sig->out[0]->type = y->type;
    tanh_->in[0] = sig->out[0];
    ck_assert_int_lt(ir_verify(g, &d), 0);
    ck_assert_int_eq(ir_graph_toposort(g, &d), 0);
    ck_assert_ptr_eq(g->nodes[0], relu);
    ck_assert_ptr_eq(g->nodes[1], sig);
    ck_assert_ptr_eq(g->nodes[2], tanh_);
    ck_assert_msg(ir_verify(g, &d) == 0, "%s", d.msg);

    /* An already sorted graph keeps its order exactly. */
    ck_assert_int_eq(ir_graph_toposort(g, &d), 0);
    ck_assert_ptr_eq(g->nodes[0], relu);
    ck_assert_ptr_eq(g->nodes[1], sig);
    ck_assert_ptr_eq(g->nodes[2], tanh_);
    ir_graph_destroy(g);
}
END_TEST

START_TEST(toposort_keeps_independent_order)
{
    icc_diag d = {{0}};
    ir_graph *g = parse_ok("graph @g(%x: f32[2]) -> (%a, %b, %c) {\n"
                           "  %a = Relu(%x) : f32[2]\n"
                           "  %b = Tanh(%x) : f32[2]\n"
                           "  %c = Neg(%x) : f32[2]\n"
                           "}\n");
    ir_node *a = g->nodes[0], *b = g->nodes[1], *c = g->nodes[2];
    ck_assert_int_eq(ir_graph_toposort(g, &d), 0);
    ck_assert_ptr_eq(g->nodes[0], a);
    ck_assert_ptr_eq(g->nodes[1], b);
    ck_assert_ptr_eq(g->nodes[2], c);
    ir_graph_destroy(g);
}
END_TEST

START_TEST(toposort_cycle_is_error)
{
    icc_diag d = {{0}};
    ir_graph *g = parse_ok("graph @g(%x: f32[2]) -> (%z) {\n"
                           "  %y = Relu(%x) \"r\" : f32[2]\n"
                           "  %z = Tanh(%y) \"t\" : f32[2]\n"
                           "}\n");
    g->nodes[0]->in[0] = g->nodes[1]->out[0];
    ck_assert_int_lt(ir_graph_toposort(g, &d), 0);
    ck_assert_msg(strstr(d.msg, "cycle"), "%s", d.msg);
    ck_assert_msg(strstr(d.msg, "node '"), "%s", d.msg);
    ir_graph_destroy(g);
}
END_TEST

START_TEST(compact_drops_marked)
{
    icc_diag d = {{0}};
    ir_graph *g = parse_ok("graph @g(%x: f32[2]) -> (%z) {\n"
                           "  %c = const f32[2] [1.0, 2.0]\n"
                           "  %y = Add(%x, %c) : f32[2]\n"
                           "  %k = const f32[2] [3.0, 4.0]\n"
                           "  %z = Relu(%x) : f32[2]\n"
                           "}\n");
    ck_assert_int_eq(g->nvalues, 5);
    ck_assert_int_eq(g->nnodes, 2);
    ir_node *relu = g->nodes[1];
    ir_node_erase(g->nodes[0]);
    ir_value_erase(g->values[1]);   /* %c */
    ir_graph_compact(g);
    ck_assert_int_eq(g->nnodes, 1);
    ck_assert_ptr_eq(g->nodes[0], relu);
    ck_assert_int_eq(g->nvalues, 3);
    for (int i = 0; i < g->nvalues; i++)
        ck_assert_int_eq(g->values[i]->id, i);
    ck_assert_str_eq(g->values[0]->name, "x");
    ck_assert_str_eq(g->values[1]->name, "k");
    ck_assert_str_eq(g->values[2]->name, "z");
    ck_assert_int_eq(g->ninputs, 1);
    ck_assert_msg(ir_verify(g, &d) == 0, "%s", d.msg);
    char *s = ir_print_string(g, NULL);
    ck_assert_str_eq(s, "graph @g(%x: f32[2]) -> (%z) {\n"
                        "  %k = const f32[2] [3.0, 4.0]\n"
                        "  %z = Relu(%x) : f32[2]\n"
                        "}\n");
    free(s);
    ir_graph_destroy(g);
}
END_TEST

START_TEST(replace_all_uses_counts)
{
    icc_diag d = {{0}};
    ir_graph *g = parse_ok("graph @g(%x: f32[2], %w: f32[2]) -> (%y, %x, %z) {\n"
                           "  %y = Add(%x, %x) : f32[2]\n"
                           "  %z = Mul(%y, %x) : f32[2]\n"
                           "}\n");
    ir_value *x = g->inputs[0], *w = g->inputs[1];
    /* two inputs of Add, one of Mul, one graph output */
    ck_assert_int_eq(ir_replace_all_uses(g, x, w), 4);
    ck_assert_ptr_eq(g->nodes[0]->in[0], w);
    ck_assert_ptr_eq(g->nodes[0]->in[1], w);
    ck_assert_ptr_eq(g->nodes[1]->in[0], g->nodes[0]->out[0]);
    ck_assert_ptr_eq(g->nodes[1]->in[1], w);
    ck_assert_ptr_eq(g->outputs[1], w);
    ck_assert_int_eq(ir_replace_all_uses(g, x, w), 0);
    int uses[8];
    ir_graph_count_uses(g, uses);
    ck_assert_int_eq(uses[x->id], 0);
    ck_assert_int_eq(uses[w->id], 4);
    ck_assert_msg(ir_verify(g, &d) == 0, "%s", d.msg);
    ir_graph_destroy(g);
}
END_TEST

/* The interpreter places planned values at their offsets, so a plan that
 * overlaps two live values changes the result: the tests that run the
 * plan pass would notice a wrong plan. */
static void run_text(const char *text, float *y)
{
    icc_diag d = {{0}};
    ir_graph *g = ir_parse(text, strlen(text), "t", &d);
    ck_assert_msg(g != NULL, "%s", d.msg);
    float xv[4] = {0.5f, -1.0f, 2.0f, 0.25f};
    int64_t dims[1] = {4};
    ir_tensor x = {0}, out = {0};
    ck_assert_int_eq(ir_tensor_init(&x, IR_F32, 1, dims, &d), 0);
    x.data = xv;
    ck_assert_msg(ir_interp_run(g, &x, &out, &d) == 0, "%s", d.msg);
    memcpy(y, out.data, sizeof(float) * 4);
    free(out.data);
    ir_graph_destroy(g);
}

START_TEST(interpreter_honours_the_plan)
{
    const char *body = "graph @g(%x: f32[4]) -> (%y) {\n"
                       "  %a = Neg(%x) : f32[4]\n"
                       "  %b = Exp(%x) : f32[4]\n"
                       "  %y = Add(%a, %b) : f32[4]\n"
                       "}\n";
    char good[512], bad[512];
    snprintf(good, sizeof good, "%splan {\n  %%a = 0\n  %%b = 64\n}\n", body);
    snprintf(bad, sizeof bad, "%splan {\n  %%a = 0\n  %%b = 0\n}\n", body);
    float y0[4], y1[4], y2[4];
    run_text(body, y0);
    run_text(good, y1);
    run_text(bad, y2);
    ck_assert_int_eq(memcmp(y0, y1, sizeof y0), 0);
    ck_assert_int_ne(memcmp(y0, y2, sizeof y0), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("passes");
    TCase *tc = tcase_create("pipeline");
    tcase_add_test(tc, pipeline_prints_back);
    tcase_add_test(tc, pipeline_steps_and_suffix);
    tcase_add_test(tc, pipeline_errors);
    tcase_add_test(tc, pipeline_levels);
    tcase_add_test(tc, pass_table_complete);
    suite_add_tcase(s, tc);
    tc = tcase_create("runner");
    tcase_add_test(tc, run_print_after_all);
    tcase_add_test(tc, run_print_before_and_changed);
    tcase_add_test(tc, run_print_after_named_only);
    tcase_add_test(tc, run_time_passes_and_stats);
    tcase_add_test(tc, run_verifies_after_each_pass);
    tcase_add_test(tc, run_writes_reproducer);
    suite_add_tcase(s, tc);
    tc = tcase_create("rewrite");
    tcase_add_test(tc, toposort_moves_appended_node);
    tcase_add_test(tc, toposort_keeps_independent_order);
    tcase_add_test(tc, toposort_cycle_is_error);
    tcase_add_test(tc, compact_drops_marked);
    tcase_add_test(tc, replace_all_uses_counts);
    tcase_add_test(tc, interpreter_honours_the_plan);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return icc_run_suite(suite());
}
