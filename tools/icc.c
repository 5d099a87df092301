/* icc.c - the driver: command line parsing and the subcommands.
 *
 *   icc info  MODEL                    inputs, outputs, op histogram, params, FLOPs
 *   icc MODEL --emit=ir [-o OUT]       the text IR of a model
 *   icc run   MODEL --input NAME=F.npy [-o DIR]   run through the interpreter
 *   icc opt   IN.icc [-o OUT.icc]      parse, verify, print
 *
 * MODEL is an ONNX file or a text IR file (.icc). Errors print one line
 * "icc: error: ..." and exit 1; output files are written to a temporary
 * name and renamed, so a failure never leaves a partial file.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontend/onnx.h"
#include "ir/dot.h"
#include "ir/ops.h"
#include "passes/pass.h"
#include "ir/ref/interp.h"
#include "ir/stats.h"
#include "ir/text.h"
#include "runtime/npy.h"

#ifndef ICC_VERSION
#define ICC_VERSION "0.0.0"
#endif
#ifndef ICC_LLVM_VERSION
#define ICC_LLVM_VERSION "?"
#endif

#define MAX_INPUTS 256

typedef struct {
    const char *cmd;          /* "compile", "info", "run", "opt" */
    const char *model;
    const char *out;
    const char *emit;
    const char *inputs[MAX_INPUTS];
    int ninputs;
    const char *passes;       /* --passes=, or NULL */
    int level;                /* -O level; -1 when not given */
    int dflt_level;           /* level used when neither -O nor --passes is given */
    icc_pass_options popts;
} args;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: icc [command] MODEL [options]\n"
        "\n"
        "icc compiles ONNX models ahead of time. MODEL is an ONNX file (.onnx) or\n"
        "icc's text IR (.icc, see docs/ir.md).\n"
        "\n"
        "commands:\n"
        "  icc MODEL --emit=ir [-o OUT.icc]   print the model's text IR (--emit=dot: Graphviz)\n"
        "  icc info MODEL [-O2]               inputs, outputs, op histogram, parameters, FLOPs,\n"
        "                                     and the node count after the -O pipeline (default -O2)\n"
        "  icc run MODEL --input NAME=FILE.npy ... [-o DIR]\n"
        "                                     run through the reference interpreter; with -o,\n"
        "                                     write DIR/<output name>.npy per output, else print\n"
        "                                     a summary of each output\n"
        "  icc opt IN.icc [-o OUT.icc]        parse, verify and print text IR\n"
        "\n"
        "options:\n"
        "  --emit=KIND          what to produce: ir (the text IR) or dot (Graphviz)\n"
        "  -o PATH              output file (or directory for run)\n"
        "  --input NAME=FILE    an input for run (.npy); repeat for each input\n"
        "\n"
        "optimization (icc MODEL --emit=ir, icc opt, icc info, icc run):\n"
        "  -O0 .. -O3           the default pipeline of that level (icc --list-passes\n"
        "                       shows them; --emit defaults to -O0, info to -O2,\n"
        "                       opt and run to no passes)\n"
        "  --passes=PIPELINE    run these passes, e.g. shape-infer,fold{max-bytes=4096},dce\n"
        "  --list-passes        every pass, its options, and the -O pipelines\n"
        "  --print-before=P,..  print the IR before the named passes (or 'all')\n"
        "  --print-after=P,..   print the IR after the named passes (or 'all')\n"
        "  --print-after-all    print the IR after every pass\n"
        "  --print-changed      print the IR only after passes that changed it\n"
        "  --time-passes        a table of wall time per pass\n"
        "  --stats              each pass's statistics (nodes removed, constants folded...)\n"
        "  --no-verify          do not verify the IR after each pass\n"
        "  --reproducer=PATH    if a pass fails, write the IR before it and the rest of\n"
        "                       the pipeline to PATH, for icc opt to re-run\n"
        "  (pass output goes to stderr)\n"
        "  --help, -h           this help\n"
        "  --version            print the version\n"
        "\n"
        "Exit status: 0 on success, 1 on any error (a one-line message on stderr).\n");
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("icc: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

static bool ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

/* Reads a whole file (size-limited) into a malloc'd buffer. */
static char *read_file(const char *path, size_t *len, icc_diag *d)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        ir_errorf(d, "%s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        ir_errorf(d, "%s: not a regular file", path);
        return NULL;
    }
    if (st.st_size > (off_t)1 << 34) {
        fclose(f);
        ir_errorf(d, "%s: file too large", path);
        return NULL;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    if (!buf || fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
        free(buf);
        fclose(f);
        ir_errorf(d, "%s: read error", path);
        return NULL;
    }
    fclose(f);
    buf[st.st_size] = 0;
    *len = (size_t)st.st_size;
    return buf;
}

/* Loads ONNX or text IR by extension. */
static ir_graph *load_model(const char *path, icc_diag *d)
{
    if (ends_with(path, ".icc")) {
        size_t len;
        char *text = read_file(path, &len, d);
        if (!text)
            return NULL;
        ir_graph *g = ir_parse(text, len, path, d);
        free(text);
        return g;
    }
    return icc_onnx_load_file(path, d);
}

/* Writes text to path through a temporary file and rename. */
static int write_atomic(const char *path, const char *text, size_t len, icc_diag *d)
{
    size_t n = strlen(path) + 32;
    char *tmp = malloc(n);
    if (!tmp)
        return ir_errorf(d, "out of memory");
    snprintf(tmp, n, "%s.tmp%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        free(tmp);
        return ir_errorf(d, "%s: %s", path, strerror(errno));
    }
    bool ok = fwrite(text, 1, len, f) == len;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) < 0) {
        unlink(tmp);
        free(tmp);
        return ir_errorf(d, "%s: write failed", path);
    }
    free(tmp);
    return 0;
}

static void type_str(const ir_graph *g, const ir_type *t, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "%s[", ir_dtype_name(t->dtype));
    if (t->rank < 0) {
        snprintf(buf + k, n - k, "*]");
        return;
    }
    for (int i = 0; i < t->rank && k < n; i++) {
        const ir_dim *d = &t->dims[i];
        const char *sep = i ? "," : "";
        if (d->sym == 0)
            k += (size_t)snprintf(buf + k, n - k, "%s%lld", sep, (long long)d->v);
        else if (d->sym > 0)
            k += (size_t)snprintf(buf + k, n - k, "%s%s", sep, ir_graph_sym_name(g, d->sym));
        else
            k += (size_t)snprintf(buf + k, n - k, "%s?", sep);
    }
    if (k < n)
        snprintf(buf + k, n - k, "]");
}

static void human(double v, const char *unit, char *buf, size_t n)
{
    const char *pre[] = {"", "K", "M", "G", "T", "P"};
    int i = 0;
    while (v >= 1000 && i < 5) {
        v /= 1000;
        i++;
    }
    snprintf(buf, n, i ? "%.2f %s%s" : "%.0f %s%s", v, pre[i], unit);
}

/* Runs the pipeline the options ask for (none when neither --passes nor
 * -O is given and dflt_level is -1). */
static int run_passes(const args *a, ir_graph *g, int dflt_level, icc_diag *d)
{
    int level = a->level >= 0 ? a->level : dflt_level;
    const char *text = a->passes ? a->passes : level >= 0 ? icc_pipeline_for_level(level) : NULL;
    if (!text)
        return 0;
    icc_pipeline p;
    if (icc_pipeline_parse(text, &p, d) < 0)
        return -1;
    /* A reproducer needs the IR printed before every pass (costly with
     * large weights), so it is opt-in; a failure says how to get one. */
    int rc = icc_pipeline_run(&p, g, &a->popts, d);
    icc_pipeline_free(&p);
    if (rc < 0 && !a->popts.reproducer) {
        size_t n = strlen(d->msg);
        snprintf(d->msg + n, sizeof d->msg - n, " (--reproducer=FILE saves the IR and pipeline)");
    }
    return rc;
}

static int cmd_list_passes(void)
{
    printf("passes:\n");
    for (int i = 0; i < PASS_COUNT; i++) {
        printf("  %-14s %s\n", pass_table[i].name, pass_table[i].doc);
        if (*pass_table[i].opts)
            printf("  %-14s   options: %s\n", "", pass_table[i].opts);
    }
    printf("pipelines:\n");
    for (int l = 0; l <= 3; l++)
        printf("  -O%d  %s\n", l, icc_pipeline_for_level(l));
    return 0;
}

static int cmd_info(const args *a)
{
    icc_diag d = {{0}};
    ir_graph *g = load_model(a->model, &d);
    if (!g)
        return fail("%s", d.msg);
    char buf[512];
    printf("model: %s\n", a->model);
    printf("graph: %s\n", g->name);
    printf("inputs:\n");
    for (int i = 0; i < g->ninputs; i++) {
        type_str(g, &g->inputs[i]->type, buf, sizeof buf);
        printf("  %s: %s\n", g->inputs[i]->name, buf);
    }
    printf("outputs:\n");
    for (int i = 0; i < g->noutputs; i++) {
        type_str(g, &g->outputs[i]->type, buf, sizeof buf);
        printf("  %s: %s\n", g->outputs[i]->name, buf);
    }
    int counts[IR_OP_COUNT] = {0};
    for (int i = 0; i < g->nnodes; i++)
        counts[g->nodes[i]->op]++;
    printf("nodes: %d\n", g->nnodes);
    printf("ops:\n");
    /* Most frequent first; ties by name. */
    for (;;) {
        int best = -1;
        for (int op = 0; op < IR_OP_COUNT; op++)
            if (counts[op] && (best < 0 || counts[op] > counts[best] ||
                               (counts[op] == counts[best] && strcmp(ir_ops[op].name, ir_ops[best].name) < 0)))
                best = op;
        if (best < 0)
            break;
        printf("  %-24s %d\n", ir_ops[best].name, counts[best]);
        counts[best] = 0;
    }
    int64_t pc, pb;
    ir_graph_param_stats(g, &pc, &pb);
    human((double)pc, "", buf, sizeof buf);
    printf("parameters: %lld (%s)\n", (long long)pc, buf);
    human((double)pb, "B", buf, sizeof buf);
    printf("parameter bytes: %lld (%s)\n", (long long)pb, buf);
    bool exact;
    int64_t fl = ir_graph_flops(g, &exact);
    human((double)fl, "FLOP", buf, sizeof buf);
    printf("FLOPs: %s%lld (%s)%s%s\n", exact ? "" : ">= ", (long long)fl, buf,
           ir_graph_has_symbols(g) ? " with symbolic dims taken as 1" : "",
           exact ? "" : " (some dims are unknown: not counted)");
    /* What the optimizer makes of it: the default pipeline (or the one
     * asked for), node and parameter counts after it. */
    int before = g->nnodes;
    int level = a->level >= 0 ? a->level : 2;
    if (run_passes(a, g, level, &d) < 0) {
        ir_graph_destroy(g);
        return fail("%s: %s", a->model, d.msg);
    }
    ir_graph_param_stats(g, &pc, &pb);
    human((double)pb, "B", buf, sizeof buf);
    char label[64];
    if (a->passes)
        snprintf(label, sizeof label, "--passes=%.50s", a->passes);
    else
        snprintf(label, sizeof label, "-O%d", level);
    printf("after %s: %d nodes (%+d), %lld parameters (%s)\n", label, g->nnodes, g->nnodes - before,
           (long long)pc, buf);
    /* The memory plan, when the pipeline made one: the arena against the
     * sum of the intermediates it holds. */
    int64_t planned_sum = 0, nplanned = 0, arena = ir_graph_arena_bytes(g);
    for (int i = 0; i < g->nvalues; i++) {
        int64_t n;
        const ir_value *v = g->values[i];
        if (v->planned && ir_type_numel(&v->type, &n)) {
            planned_sum += n * (int64_t)ir_dtype_size(v->type.dtype);
            nplanned++;
        }
    }
    if (nplanned) {
        char b2[64];
        human((double)arena, "B", buf, sizeof buf);
        human((double)planned_sum, "B", b2, sizeof b2);
        printf("memory plan: arena %s for %lld intermediates totalling %s (%.1fx smaller)\n", buf,
               (long long)nplanned, b2, arena ? (double)planned_sum / (double)arena : 0.0);
    }
    ir_graph_destroy(g);
    return 0;
}

static int cmd_emit(const args *a)
{
    icc_diag d = {{0}};
    if (!a->emit)
        return fail("%s: compiling to an object or shared library is not available yet; "
                    "use --emit=ir (see icc --help)", a->model);
    bool dot = !strcmp(a->emit, "dot");
    if (strcmp(a->emit, "ir") && !dot)
        return fail("unknown --emit kind '%s' (supported: ir, dot)", a->emit);
    ir_graph *g = load_model(a->model, &d);
    if (!g)
        return fail("%s", d.msg);
    if (run_passes(a, g, a->dflt_level, &d) < 0) {
        ir_graph_destroy(g);
        return fail("%s: %s", a->model, d.msg);
    }
    size_t len = 0;
    char *text = NULL;
    if (dot) {
        FILE *mf = open_memstream(&text, &len);
        if (!mf || ir_print_dot(g, mf) < 0) {
            if (mf)
                fclose(mf);
            free(text);
            text = NULL;
        } else if (fclose(mf) != 0) {
            free(text);
            text = NULL;
        }
    } else {
        text = ir_print_string(g, &len);
    }
    ir_graph_destroy(g);
    if (!text)
        return fail("%s: printing the IR failed", a->model);
    int rc = 0;
    if (a->out) {
        if (write_atomic(a->out, text, len, &d) < 0)
            rc = fail("%s", d.msg);
    } else if (fwrite(text, 1, len, stdout) != len) {
        rc = fail("write error on stdout");
    }
    free(text);
    return rc;
}

static int cmd_opt(const args *a)
{
    args b = *a;
    b.emit = "ir";
    b.dflt_level = -1;
    return cmd_emit(&b);
}

/* Output names become file names: keep [A-Za-z0-9._-], map others to '_'. */
static void safe_name(const char *s, char *out, size_t n)
{
    size_t k = 0;
    for (; *s && k + 1 < n; s++) {
        char c = *s;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        out[k++] = ok ? c : '_';
    }
    out[k] = 0;
    if (!strcmp(out, ".") || !strcmp(out, "..") || k == 0)
        snprintf(out, n, "output");
}

static void summarize(const char *name, const ir_tensor *t)
{
    char shape[256] = "";
    for (int i = 0; i < t->rank; i++)
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%lld", i ? "," : "",
                 (long long)t->dims[i]);
    printf("%s: %s[%s]", name, ir_dtype_name(t->dtype), shape);
    if (t->numel) {
        double mn = INFINITY, mx = -INFINITY, sum = 0;
        for (int64_t i = 0; i < t->numel; i++) {
            double v = ir_tensor_getf(t, i);
            mn = v < mn ? v : mn;
            mx = v > mx ? v : mx;
            sum += v;
        }
        printf(" min=%.6g max=%.6g mean=%.6g", mn, mx, sum / (double)t->numel);
    }
    printf("\n  [");
    for (int64_t i = 0; i < t->numel && i < 10; i++)
        printf("%s%.6g", i ? ", " : "", ir_tensor_getf(t, i));
    printf("%s]\n", t->numel > 10 ? ", ..." : "");
    /* Classifier outputs [rows, classes]: the predicted class per row. */
    if (t->rank == 2 && ir_dtype_is_float(t->dtype) && t->dims[1] > 1 && t->dims[0] <= 64) {
        printf("  argmax per row:");
        for (int64_t r = 0; r < t->dims[0]; r++) {
            int64_t best = 0;
            for (int64_t c = 1; c < t->dims[1]; c++)
                if (ir_tensor_getf(t, r * t->dims[1] + c) > ir_tensor_getf(t, r * t->dims[1] + best))
                    best = c;
            printf(" %lld", (long long)best);
        }
        printf("\n");
    }
}

static int cmd_run(const args *a)
{
    icc_diag d = {{0}};
    if (ends_with(a->model, ".so"))
        return fail("%s: running compiled models is not available yet", a->model);
    ir_graph *g = load_model(a->model, &d);
    if (!g)
        return fail("%s", d.msg);
    if (run_passes(a, g, -1, &d) < 0) {
        ir_graph_destroy(g);
        return fail("%s: %s", a->model, d.msg);
    }
    int rc = 1;
    ir_tensor *in = calloc((size_t)g->ninputs + 1, sizeof *in);
    ir_tensor *out = calloc((size_t)g->noutputs + 1, sizeof *out);
    bool *given = calloc((size_t)g->ninputs + 1, 1);
    bool ran = false;
    if (!in || !out || !given) {
        fail("out of memory");
        goto done;
    }
    for (int i = 0; i < a->ninputs; i++) {
        const char *eq = strchr(a->inputs[i], '=');
        if (!eq) {
            fail("--input '%s': expected NAME=FILE.npy", a->inputs[i]);
            goto done;
        }
        int k = -1;
        for (int j = 0; j < g->ninputs; j++)
            if (strlen(g->inputs[j]->name) == (size_t)(eq - a->inputs[i]) &&
                !strncmp(g->inputs[j]->name, a->inputs[i], (size_t)(eq - a->inputs[i])))
                k = j;
        if (k < 0) {
            fail("%s: the model has no input named '%.*s'", a->model, (int)(eq - a->inputs[i]),
                 a->inputs[i]);
            goto done;
        }
        if (given[k]) {
            fail("input '%s' is given twice", g->inputs[k]->name);
            goto done;
        }
        if (icc_npy_read(eq + 1, &in[k], &d) < 0) {
            fail("%s", d.msg);
            goto done;
        }
        given[k] = true;
    }
    for (int j = 0; j < g->ninputs; j++)
        if (!given[j]) {
            char t[256];
            type_str(g, &g->inputs[j]->type, t, sizeof t);
            fail("%s: input '%s' (%s) is not given; pass --input %s=FILE.npy", a->model,
                 g->inputs[j]->name, t, g->inputs[j]->name);
            goto done;
        }
    if (ir_interp_run(g, in, out, &d) < 0) {
        fail("%s: %s", a->model, d.msg);
        goto done;
    }
    ran = true;
    if (a->out) {
        struct stat st;
        if (stat(a->out, &st) < 0 && mkdir(a->out, 0777) < 0) {
            fail("%s: %s", a->out, strerror(errno));
            goto done;
        }
        for (int i = 0; i < g->noutputs; i++) {
            char name[256], path[4096];
            safe_name(g->outputs[i]->name, name, sizeof name);
            snprintf(path, sizeof path, "%s/%s.npy", a->out, name);
            if (icc_npy_write(path, &out[i], &d) < 0) {
                fail("%s", d.msg);
                goto done;
            }
        }
    } else {
        for (int i = 0; i < g->noutputs; i++)
            summarize(g->outputs[i]->name, &out[i]);
    }
    rc = 0;
done:
    if (in)
        ir_tensors_free(in, g->ninputs);
    if (ran)
        ir_tensors_free(out, g->noutputs);
    free(in);
    free(out);
    free(given);
    ir_graph_destroy(g);
    return rc;
}

/* Markdown table of the registry: docs/ops.md. */
static int cmd_ops_doc(void)
{
    printf("# Operators\n\n"
           "Generated from `ir/ops.def` by `icc --ops-doc`; do not edit by hand.\n"
           "Semantics follow the newest ONNX opset; the frontend rewrites older opsets.\n\n"
           "| op | inputs | outputs | input dtypes | attributes (default) | semantics |\n"
           "| --- | --- | --- | --- | --- | --- |\n");
    for (int op = 0; op < IR_OP_COUNT; op++) {
        const ir_op_info *o = &ir_ops[op];
        char in[32], out[32], attrs[1024] = "";
        snprintf(in, sizeof in, o->max_in < 0 ? "%d+" : o->min_in == o->max_in ? "%d" : "%d-%d",
                 o->min_in, o->max_in);
        snprintf(out, sizeof out, o->max_out < 0 ? "%d+" : o->min_out == o->max_out ? "%d" : "%d-%d",
                 o->min_out, o->max_out);
        const ir_attr_schema *s;
        static const char *const kinds[] = {"int", "float", "string", "ints", "floats", "strings", "tensor"};
        for (int i = 0; (s = ir_op_attr_schema(op, i)); i++)
            snprintf(attrs + strlen(attrs), sizeof attrs - strlen(attrs), "%s`%s`: %s%s%s%s%s",
                     i ? "<br>" : "", s->name, kinds[s->kind], s->required ? " (required)" : "",
                     s->has_def ? " (" : "", s->has_def ? s->def : "", s->has_def ? ")" : "");
        printf("| %s | %s | %s | %s | %s | %s |\n", o->name, in, out, o->types, attrs, o->doc);
    }
    printf("\n%d ops.\n", IR_OP_COUNT);
    return 0;
}

int main(int argc, char **argv)
{
    args a = {.cmd = "compile", .level = -1, .dflt_level = 0};
    int i = 1;
    if (argc > 1 && (!strcmp(argv[1], "info") || !strcmp(argv[1], "run") || !strcmp(argv[1], "opt"))) {
        a.cmd = argv[1];
        i = 2;
    }
    for (; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(s, "--version")) {
            printf("icc %s (LLVM %s)\n", ICC_VERSION, ICC_LLVM_VERSION);
            return 0;
        } else if (!strcmp(s, "--ops-doc")) {
            return cmd_ops_doc();
        } else if (!strcmp(s, "--list-passes")) {
            return cmd_list_passes();
        } else if (s[0] == '-' && s[1] == 'O' && s[2] >= '0' && s[2] <= '3' && !s[3]) {
            a.level = s[2] - '0';
        } else if (!strncmp(s, "--passes=", 9)) {
            a.passes = s + 9;
        } else if (!strncmp(s, "--print-before=", 15)) {
            a.popts.print_before = s + 15;
        } else if (!strncmp(s, "--print-after=", 14)) {
            a.popts.print_after = s + 14;
        } else if (!strcmp(s, "--print-after-all")) {
            a.popts.print_after_all = true;
        } else if (!strcmp(s, "--print-changed")) {
            a.popts.print_changed = true;
        } else if (!strcmp(s, "--time-passes")) {
            a.popts.time_passes = true;
        } else if (!strcmp(s, "--stats")) {
            a.popts.stats = true;
        } else if (!strcmp(s, "--no-verify")) {
            a.popts.no_verify = true;
        } else if (!strncmp(s, "--reproducer=", 13)) {
            a.popts.reproducer = s + 13;
        } else if (!strncmp(s, "--emit=", 7)) {
            a.emit = s + 7;
        } else if (!strcmp(s, "-o")) {
            if (++i >= argc)
                return fail("-o needs a path");
            a.out = argv[i];
        } else if (!strcmp(s, "--input") || !strncmp(s, "--input=", 8)) {
            const char *v = s[7] == '=' ? s + 8 : (++i < argc ? argv[i] : NULL);
            if (!v)
                return fail("--input needs NAME=FILE.npy");
            if (a.ninputs == MAX_INPUTS)
                return fail("too many --input options (max %d)", MAX_INPUTS);
            a.inputs[a.ninputs++] = v;
        } else if (s[0] == '-' && s[1]) {
            return fail("unknown option '%s' (see icc --help)", s);
        } else if (!a.model) {
            a.model = s;
        } else {
            return fail("unexpected argument '%s' (one model at a time)", s);
        }
    }
    if (!a.model) {
        usage(stderr);
        return 1;
    }
    if (!strcmp(a.cmd, "info"))
        return cmd_info(&a);
    if (!strcmp(a.cmd, "run"))
        return cmd_run(&a);
    if (strcmp(a.cmd, "opt") == 0) {
        if (!ends_with(a.model, ".icc"))
            return fail("%s: opt reads text IR (.icc)", a.model);
        return cmd_opt(&a);
    }
    if (a.ninputs)
        return fail("--input is only for 'icc run'");
    return cmd_emit(&a);
}
