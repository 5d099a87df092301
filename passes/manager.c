/* manager.c - the pass registry, pipeline parsing and printing, the
 * default pipelines of -O0..-O3, and the runner (verify after each pass,
 * IR printing, timing, statistics, reproducers). */
#include "passes/pass.h"
#include "ir/ops.h"
#include "ir/text.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const pass_info pass_table[PASS_COUNT] = {
#define PASS(id, nm, fn, doc, opts) [PASS_##id] = {nm, fn, doc, opts},
#include "passes/passes.def"
#undef PASS
};

/* The default pipelines, top to bottom. Each level names what it adds:
 *  -O0: types only, the graph as imported, except that the quantization
 *       ops are rewritten into core ops (lower-quant) at every level,
 *       -O0 too: the backend compiles only their decomposition; so is an
 *       STFT with constant parameters (lower-signal: a strided Conv),
 *       after folding where there is folding (a window from HannWindow).
 *  -O1: constants folded, dead code removed; an If whose condition is
 *       known (constant, or computed from constants: a --bind'ed input)
 *       replaced by its branch. fold-if evaluates a condition's small
 *       constant cone itself, so it runs before fold, which then folds
 *       what the spliced branch computes from constants; it runs again
 *       after fold, whose folded values may make shapes static that a
 *       condition reads (PyTorch's `if x.shape[-1] == 1` after a Pad
 *       whose pads fold), with a fold after it.
 *  -O2: and QDQ contractions run on the quantized data (qdq, before
 *       lower-quant and fold), simplified, BatchNorm folded into
 *       weights, decomposed norms/softmax/GELU recognised as one op
 *       each, decomposed attention (MatMul, scale, mask, Softmax,
 *       MatMul, with its head splits) as one Attention op, duplicates
 *       merged,
 *       elementwise chains fused into one kernel each with the
 *       contraction or normalization before them, intermediates planned
 *       into one arena.
 *  -O3: and convolutions on blocked NCHWc data (layout), reorders at the
 *       edges, a 1x1 conv and the depthwise conv reading its wide result
 *       as one kernel (pwdw).
 * Every level runs `precision` (--precision; nothing for fp32) after the
 * graph is simplified and before fuse groups its kernels; -O3 runs its
 * int8 modes before layout (so the convolutions they make integer are not
 * blocked first) and bf16/fp16 after it (blocked convolutions read narrow
 * weights). */
static const char *const levels[4] = {
    "shape-infer,lower-quant,lower-signal,precision",
    "shape-infer,lower-quant,fold-if,fold,fold-if,fold,lower-signal,dce,precision",
    ("shape-infer,qdq,lower-quant,fold-if,simplify,fold,fold-if,fold,lower-signal,fold-bn,flush-weights,recognize,"
     "attention,simplify,cse,dce,precision,pack-b,fuse,plan"),
    ("shape-infer,qdq,lower-quant,fold-if,simplify,fold,fold-if,fold,lower-signal,fold-bn,flush-weights,recognize,"
     "attention,precision{stage=int8},layout,simplify,cse,dce,precision{stage=half},pwdw,pack-b,fuse,plan"),
};

const char *icc_pipeline_for_level(int level)
{
    return level >= 0 && level <= 3 ? levels[level] : NULL;
}

/* The documented default of key in a pass's option text, or NULL. */
static const char *opt_doc_default(int pass, const char *key, char *buf, size_t n)
{
    const char *p = pass_table[pass].opts;
    size_t kl = strlen(key);
    while (p && *p) {
        while (*p == ' ' || *p == ';')
            p++;
        if (!strncmp(p, key, kl) && p[kl] == '=') {
            size_t vl = strcspn(p + kl + 1, ":; ");
            snprintf(buf, n, "%.*s", (int)vl, p + kl + 1);
            return buf;
        }
        p += strcspn(p, ";");
    }
    return NULL;
}

const char *pass_opt_str(const pass_ctx *c, const char *key, const char *def)
{
    for (int i = 0; i < c->nopts; i++)
        if (!strcmp(c->opts[i].key, key))
            return c->opts[i].val;
    return def;
}

int64_t pass_opt_int(const pass_ctx *c, const char *key, int64_t def)
{
    const char *v = pass_opt_str(c, key, NULL);
    return v ? strtoll(v, NULL, 0) : def;
}

int pass_commit_rewrites(pass_ctx *c)
{
    if (!c->changed)
        return 0;
    ir_graph_compact(c->g);
    return ir_graph_toposort(c->g, c->diag);
}

void pass_stat(pass_ctx *c, const char *name, int64_t delta)
{
    for (int i = 0; i < c->nstats; i++)
        if (!strcmp(c->stats[i].name, name)) {
            c->stats[i].value += delta;
            return;
        }
    if (c->nstats < PASS_MAX_STATS)
        c->stats[c->nstats++] = (pass_stat_entry){name, delta};
}

static int find_pass(const char *name, size_t n)
{
    for (int i = 0; i < PASS_COUNT; i++)
        if (strlen(pass_table[i].name) == n && !strncmp(pass_table[i].name, name, n))
            return i;
    return -1;
}

/* pipeline = step (',' step)* ; step = name ('{' opt (',' opt)* '}')? ;
 * opt = key '=' value. Whitespace around tokens is ignored. */
int icc_pipeline_parse(const char *text, icc_pipeline *p, icc_diag *d)
{
    memset(p, 0, sizeof *p);
    const char *s = text;
    int cap = 0;
    while (*s == ' ')
        s++;
    if (!*s)
        return 0;
    for (;;) {
        while (*s == ' ')
            s++;
        size_t n = strcspn(s, ",{} ");
        int pass = find_pass(s, n);
        if (pass < 0) {
            ir_errorf(d, "unknown pass '%.*s' in pipeline (see icc --list-passes)", (int)(n > 64 ? 64 : n), s);
            goto fail;
        }
        if (p->nsteps == cap) {
            cap = cap ? cap * 2 : 8;
            icc_pipeline_step *ns = realloc(p->steps, sizeof *ns * (size_t)cap);
            if (!ns) {
                ir_errorf(d, "out of memory");
                goto fail;
            }
            p->steps = ns;
        }
        icc_pipeline_step *st = &p->steps[p->nsteps++];
        memset(st, 0, sizeof *st);
        st->pass = pass;
        s += n;
        while (*s == ' ')
            s++;
        if (*s == '{') {
            s++;
            for (;;) {
                while (*s == ' ')
                    s++;
                size_t kl = strcspn(s, "=,} ");
                char dbuf[64];
                if (kl == 0 || kl >= sizeof st->opts[0].key || s[kl] != '=') {
                    ir_errorf(d, "pass '%s': expected key=value in its options", pass_table[pass].name);
                    goto fail;
                }
                char key[32];
                snprintf(key, sizeof key, "%.*s", (int)kl, s);
                if (!opt_doc_default(pass, key, dbuf, sizeof dbuf)) {
                    ir_errorf(d, "pass '%s' has no option '%s'", pass_table[pass].name, key);
                    goto fail;
                }
                for (int j = 0; j < st->nopts; j++)
                    if (!strcmp(st->opts[j].key, key)) {
                        ir_errorf(d, "pass '%s': option '%s' given twice", pass_table[pass].name, key);
                        goto fail;
                    }
                s += kl + 1;
                size_t vl = strcspn(s, ",} ");
                if (vl == 0 || vl >= sizeof st->opts[0].val || st->nopts == PASS_MAX_OPTS) {
                    ir_errorf(d, "pass '%s': bad value for option '%s'", pass_table[pass].name, key);
                    goto fail;
                }
                pass_opt *o = &st->opts[st->nopts++];
                snprintf(o->key, sizeof o->key, "%s", key);
                snprintf(o->val, sizeof o->val, "%.*s", (int)vl, s);
                s += vl;
                while (*s == ' ')
                    s++;
                if (*s == ',') {
                    s++;
                    continue;
                }
                if (*s == '}') {
                    s++;
                    break;
                }
                ir_errorf(d, "pass '%s': unterminated options (missing '}')", pass_table[pass].name);
                goto fail;
            }
        }
        while (*s == ' ')
            s++;
        if (!*s)
            return 0;
        if (*s != ',') {
            ir_errorf(d, "unexpected '%c' in pipeline", *s);
            goto fail;
        }
        s++;
    }
fail:
    icc_pipeline_free(p);
    return -1;
}

void icc_pipeline_free(icc_pipeline *p)
{
    free(p->steps);
    p->steps = NULL;
    p->nsteps = 0;
}

char *icc_pipeline_string(const icc_pipeline *p, int from)
{
    size_t cap = 64, n = 0;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    s[0] = 0;
    for (int i = from; i < p->nsteps; i++) {
        const icc_pipeline_step *st = &p->steps[i];
        char buf[1024];
        int k = snprintf(buf, sizeof buf, "%s%s", i > from ? "," : "", pass_table[st->pass].name);
        for (int j = 0; j < st->nopts; j++)
            k += snprintf(buf + k, sizeof buf - (size_t)k, "%s%s=%s", j ? "," : "{", st->opts[j].key,
                          st->opts[j].val);
        if (st->nopts)
            k += snprintf(buf + k, sizeof buf - (size_t)k, "}");
        if (n + (size_t)k + 1 > cap) {
            cap = (n + (size_t)k + 1) * 2;
            char *ns = realloc(s, cap);
            if (!ns) {
                free(s);
                return NULL;
            }
            s = ns;
        }
        memcpy(s + n, buf, (size_t)k + 1);
        n += (size_t)k;
    }
    return s;
}

static bool in_list(const char *list, const char *name)
{
    if (!list)
        return false;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        size_t k = strcspn(p, ",");
        if ((k == n && !strncmp(p, name, n)) || (k == 3 && !strncmp(p, "all", 3)))
            return true;
        p += k + (p[k] == ',');
    }
    return false;
}

double icc_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void icc_print_timings(FILE *out, const char *title, const char *what, const double *ms,
                       const char *const *names, int n)
{
    double total = 0;
    for (int i = 0; i < n; i++)
        total += ms[i];
    fprintf(out, "# %s (wall)\n#   %10s  %6s  %s\n", title, "ms", "%", what);
    for (int i = 0; i < n; i++)
        fprintf(out, "#   %10.3f  %5.1f%%  %s\n", ms[i], total > 0 ? 100 * ms[i] / total : 0, names[i]);
    fprintf(out, "#   %10.3f  100.0%%  total\n", total);
}

static void write_reproducer(const char *path, const char *before, const icc_pipeline *p, int step,
                             const char *msg)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    char *rest = icc_pipeline_string(p, step);
    fprintf(f, "# icc reproducer: pass '%s' failed: %s\n# re-run: icc opt %s --passes=%s\n",
            pass_table[p->steps[step].pass].name, msg, path, rest ? rest : "");
    fputs(before ? before : "# (the IR could not be printed)\n", f);
    fclose(f);
    free(rest);
}

int icc_keep_output_names(ir_graph *g, const char *const *names, icc_diag *d)
{
    for (int i = 0; i < g->noutputs; i++) {
        ir_value *v = g->outputs[i];
        if (!strcmp(v->name, names[i]))
            continue;
        bool taken = false, shared = false;
        for (int k = 0; k < g->nvalues; k++)
            taken |= !g->values[k]->dead && !strcmp(g->values[k]->name, names[i]);
        for (int j = 0; j < g->noutputs; j++)
            shared |= j != i && g->outputs[j] == v;
        if (taken)
            continue;
        if (v->kind == IR_VAL_NODE && !shared) {
            v->name = names[i];
            continue;
        }
        ir_node *n = ir_graph_add_node(g, IR_OP_IDENTITY, "", 1, &v, 1, &names[i], d);
        if (!n)
            return -1;
        n->out[0]->type = v->type;
        g->outputs[i] = n->out[0];
    }
    return 0;
}

static icc_target_desc default_target;

static void init_default_target(void)
{
    icc_diag d;
    icc_target_desc_init(&default_target, "x86_64-pc-linux-gnu", "x86-64-v3", NULL, &d);
}

const icc_target_desc *pass_default_target(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, init_default_target);
    return &default_target;
}

int icc_pipeline_run(const icc_pipeline *p, ir_graph *g, const icc_pass_options *o, icc_diag *d)
{
    static const icc_pass_options none = {0};
    if (!o)
        o = &none;
    FILE *out = o->out ? o->out : stderr;
    double *ms = calloc((size_t)p->nsteps + 1, sizeof(double));
    int rc = -1;
    if (!ms)
        return ir_errorf(d, "out of memory");
    for (int i = 0; i < p->nsteps; i++) {
        const icc_pipeline_step *st = &p->steps[i];
        const char *name = pass_table[st->pass].name;
        if (o->skip && in_list(o->skip, name))
            continue;
        bool after = o->print_after_all || in_list(o->print_after, name) ||
                     (o->print_changed && !o->print_after);
        /* The text before the pass serves print-before, print-changed and
         * the reproducer; print it only when one of them needs it. */
        char *before = NULL;
        if (in_list(o->print_before, name) || (after && o->print_changed) || o->reproducer)
            before = ir_print_string(g, NULL);
        if (in_list(o->print_before, name))
            fprintf(out, "# IR before %s\n%s", name, before ? before : "");
        pass_ctx c = {.g = g, .diag = d, .target = o->target ? o->target : pass_default_target(),
                     .precision = o->precision, .opts = st->opts,
                     .nopts = st->nopts};
        double t0 = icc_wall_ms();
        int r = pass_table[st->pass].run(&c);
        ms[i] = icc_wall_ms() - t0;
        if (r == 0 && !o->no_verify && ir_verify(g, d) < 0) {
            ir_diag_prefix(d, "IR invalid after pass '%s'", name);
            r = -1;
        } else if (r < 0) {
            ir_diag_prefix(d, "pass '%s'", name);
        }
        if (r < 0) {
            if (o->reproducer) {
                write_reproducer(o->reproducer, before, p, i, d->msg);
                size_t n = strlen(d->msg);
                snprintf(d->msg + n, sizeof d->msg - n, " (reproducer: %s)", o->reproducer);
            }
            free(before);
            goto done;
        }
        if (after) {
            char *now = ir_print_string(g, NULL);
            if (!o->print_changed || !before || !now || strcmp(before, now))
                fprintf(out, "# IR after %s\n%s", name, now ? now : "");
            else
                fprintf(out, "# IR after %s: unchanged\n", name);
            free(now);
        }
        free(before);
        if (o->stats && c.nstats) {
            fprintf(out, "# %s:", name);
            for (int k = 0; k < c.nstats; k++)
                fprintf(out, "%s %lld %s", k ? "," : "", (long long)c.stats[k].value, c.stats[k].name);
            fprintf(out, "\n");
        }
    }
    if (o->time_passes) {
        const char **names = calloc((size_t)p->nsteps + 1, sizeof *names);
        if (!names) {
            ir_errorf(d, "out of memory");
            goto done;
        }
        for (int i = 0; i < p->nsteps; i++)
            names[i] = pass_table[p->steps[i].pass].name;
        icc_print_timings(out, "pass timings", "pass", ms, names, p->nsteps);
        free(names);
    }
    rc = 0;
done:
    free(ms);
    return rc;
}

int pass_shape_infer(pass_ctx *c)
{
    return ir_infer_shapes(c->g, c->diag);
}
