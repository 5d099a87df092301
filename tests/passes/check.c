/* check.c - icc-passcheck, the golden pass-test runner: each .icc file
 * holds cases separated by `# -----` lines; a case is IR text with one
 * `# RUN: <pipeline>` (or `# RUN-ERROR: <pipeline>`), one `# INTENT:`
 * line, and FileCheck-style `# CHECK:`, `# CHECK-NEXT:`, `# CHECK-NOT:`
 * (or `# CHECK-ERROR:`) lines matched against the IR printed after the
 * pipeline ran in-process with verification on. A RUN pipeline ending in
 * ` --emit=kernels` matches the kernels' text instead (cg_kernels_text for
 * a fixed target, x86-64-v3, so the dump is the same on every host; the
 * plan pass is appended as icc does). Patterns are substrings of one
 * output line, with FileCheck's `{{regex}}` (POSIX extended) and variables:
 * `[[NAME:regex]]` matches regex and binds NAME to the text matched,
 * `[[NAME]]` matches what NAME was bound to (earlier in the same case, or
 * earlier in the same pattern); in `[[[`, the first '[' is literal (an
 * index list: `b0[[[I]]]`). Prints one line per case and a closing
 * count; exits non-zero on any failure.
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/program.h"
#include "ir/text.h"
#include "passes/pass.h"

enum { D_CHECK, D_NEXT, D_NOT, D_ERROR };
static const char *const dnames[] = {"CHECK", "CHECK-NEXT", "CHECK-NOT", "CHECK-ERROR"};

typedef struct directive {
    int kind;
    int line;                  /* in the test file, from 1 */
    char *pat;
} directive;

typedef struct testcase {
    const char *file;
    int first_line;            /* line of the case's first text line */
    const char *text;          /* the case's bytes within the file */
    size_t len;
    char *pipeline;
    int run_line;
    bool expect_error;
    bool emit_kernels;         /* the RUN line ends in --emit=kernels */
    char *intent;
    directive *dirs;
    int ndirs;
} testcase;

static bool verbose;

/* The output split into lines (pointers into a writable copy). */
typedef struct lines {
    char *buf;
    char **l;
    int n;
} lines;

static void split_lines(const char *s, lines *out)
{
    size_t n = strlen(s);
    out->buf = malloc(n + 1);
    out->l = malloc(sizeof(char *) * (n + 2));
    out->n = 0;
    if (!out->buf || !out->l) {
        fprintf(stderr, "icc-passcheck: out of memory\n");
        exit(2);
    }
    memcpy(out->buf, s, n + 1);
    char *p = out->buf;
    while (*p) {
        out->l[out->n++] = p;
        char *e = strchr(p, '\n');
        if (!e)
            break;
        *e = 0;
        p = e + 1;
    }
}

static char *dup_trimmed(const char *s, size_t n)
{
    while (n && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        n--;
    char *r = malloc(n + 1);
    if (!r) {
        fprintf(stderr, "icc-passcheck: out of memory\n");
        exit(2);
    }
    memcpy(r, s, n);
    r[n] = 0;
    return r;
}

/* `#` then spaces then only dashes (five or more): the case separator. */
static bool is_separator(const char *s, size_t n)
{
    size_t i = 0, dashes = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    if (i == n || s[i++] != '#')
        return false;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    while (i < n && s[i] == '-') {
        i++;
        dashes++;
    }
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
        i++;
    return i == n && dashes >= 5;
}

static void case_free(testcase *c)
{
    free(c->pipeline);
    free(c->intent);
    for (int i = 0; i < c->ndirs; i++)
        free(c->dirs[i].pat);
    free(c->dirs);
}

/* Reads the directives of one case. Returns 1 when the case holds no
 * directive and no IR (a file header, a trailing separator), 0 when it
 * is well formed, -1 with a message in err otherwise. */
static int parse_case(testcase *c, char *err, size_t errn)
{
    bool any_text = false;
    int line = c->first_line;
    for (size_t i = 0; i < c->len; line++) {
        size_t e = i;
        while (e < c->len && c->text[e] != '\n')
            e++;
        const char *s = c->text + i;
        size_t n = e - i;
        i = e + 1;
        size_t k = 0;
        while (k < n && (s[k] == ' ' || s[k] == '\t' || s[k] == '\r'))
            k++;
        if (k == n)
            continue;
        if (s[k] != '#') {
            any_text = true;
            continue;
        }
        k++;
        while (k < n && (s[k] == ' ' || s[k] == '\t'))
            k++;
        size_t w = k;
        while (w < n && ((s[w] >= 'A' && s[w] <= 'Z') || s[w] == '-'))
            w++;
        if (w == n || s[w] != ':' || w == k)
            continue;          /* an ordinary comment */
        const char *word = s + k;
        size_t wl = w - k;
        char *rest = dup_trimmed(s + w + 1, n - w - 1);
#define IS(lit) (wl == sizeof(lit) - 1 && !memcmp(word, lit, wl))
        if (IS("RUN") || IS("RUN-ERROR")) {
            if (c->pipeline) {
                snprintf(err, errn, "%s:%d: a second RUN line (the first is line %d)", c->file, line,
                         c->run_line);
                free(rest);
                return -1;
            }
            c->pipeline = rest;
            c->run_line = line;
            c->expect_error = IS("RUN-ERROR");
            static const char emit[] = "--emit=kernels";
            size_t rl = strlen(rest), el = sizeof emit - 1;
            if (rl >= el && !strcmp(rest + rl - el, emit)) {
                c->emit_kernels = true;
                rest[rl - el] = 0;
                while (rl > el && (rest[rl - el - 1] == ' ' || rest[rl - el - 1] == '\t'))
                    rest[--rl - el] = 0;
            }
            continue;
        }
        if (IS("INTENT")) {
            if (c->intent || !*rest) {
                snprintf(err, errn, "%s:%d: %s", c->file, line,
                         c->intent ? "a second INTENT line" : "empty INTENT");
                free(rest);
                return -1;
            }
            c->intent = rest;
            continue;
        }
        int kind = -1;
        for (int d = 0; d < 4; d++)
            if (wl == strlen(dnames[d]) && !memcmp(word, dnames[d], wl))
                kind = d;
        if (kind < 0) {
            if ((wl >= 5 && !memcmp(word, "CHECK", 5)) || (wl >= 3 && !memcmp(word, "RUN", 3))) {
                snprintf(err, errn, "%s:%d: unknown directive '%.*s'", c->file, line, (int)wl, word);
                free(rest);
                return -1;
            }
            free(rest);
            continue;
        }
        if (!*rest) {
            snprintf(err, errn, "%s:%d: empty %s pattern (it would match anything)", c->file, line,
                     dnames[kind]);
            free(rest);
            return -1;
        }
        directive *nd = realloc(c->dirs, sizeof *nd * (size_t)(c->ndirs + 1));
        if (!nd) {
            fprintf(stderr, "icc-passcheck: out of memory\n");
            exit(2);
        }
        c->dirs = nd;
        c->dirs[c->ndirs++] = (directive){kind, line, rest};
#undef IS
    }
    if (!c->pipeline && !c->intent && !c->ndirs && !any_text)
        return 1;
    int where = c->run_line ? c->run_line : c->first_line;
    if (!c->pipeline) {
        snprintf(err, errn, "%s:%d: case without a RUN line", c->file, where);
        return -1;
    }
    if (!c->intent) {
        snprintf(err, errn, "%s:%d: case without an INTENT line", c->file, where);
        return -1;
    }
    int nerr = 0, nout = 0;
    for (int d = 0; d < c->ndirs; d++) {
        if (c->dirs[d].kind == D_ERROR)
            nerr++;
        else
            nout++;
        if (c->dirs[d].kind == D_NEXT && (d == 0 || c->dirs[d - 1].kind == D_NOT)) {
            snprintf(err, errn, "%s:%d: CHECK-NEXT must follow a CHECK or CHECK-NEXT", c->file,
                     c->dirs[d].line);
            return -1;
        }
    }
    if (c->expect_error ? !nerr : !nout) {
        snprintf(err, errn, "%s:%d: case has no %s lines (a test that cannot fail)", c->file, where,
                 c->expect_error ? "CHECK-ERROR" : "CHECK");
        return -1;
    }
    if (c->expect_error ? nout : nerr) {
        snprintf(err, errn, "%s:%d: %s lines need %s", c->file, where,
                 c->expect_error ? "CHECK/CHECK-NEXT/CHECK-NOT" : "CHECK-ERROR",
                 c->expect_error ? "RUN (not RUN-ERROR)" : "RUN-ERROR");
        return -1;
    }
    return 0;
}

/* ---- patterns: substrings, {{regex}} and [[variables]] ---------------- */

enum { MAX_VARS = 64, MAX_GROUPS = 32 };

typedef struct vars {
    char *name[MAX_VARS];
    char *val[MAX_VARS];
    int n;
} vars;

static void vars_clear(vars *v)
{
    for (int i = 0; i < v->n; i++) {
        free(v->name[i]);
        free(v->val[i]);
    }
    v->n = 0;
}

static const char *var_get(const vars *v, const char *name, size_t n)
{
    for (int i = v->n - 1; i >= 0; i--)
        if (strlen(v->name[i]) == n && !memcmp(v->name[i], name, n))
            return v->val[i];
    return NULL;
}

static void var_set(vars *v, const char *name, const char *val, size_t n)
{
    for (int i = 0; i < v->n; i++)
        if (!strcmp(v->name[i], name)) {
            free(v->val[i]);
            v->val[i] = strndup(val, n);
            return;
        }
    if (v->n < MAX_VARS) {
        v->name[v->n] = strdup(name);
        v->val[v->n++] = strndup(val, n);
    }
}

/* A growing string. */
typedef struct sbuf {
    char *s;
    size_t n, cap;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        if (!(b->s = realloc(b->s, b->cap))) {
            fprintf(stderr, "icc-passcheck: out of memory\n");
            exit(2);
        }
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

static void sb_literal(sbuf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (strchr(".[]{}()\\*+?^$|", s[i]))
            sb_put(b, "\\", 1);
        sb_put(b, s + i, 1);
    }
}

/* Groups a regex opens: unescaped '(' outside brackets. */
static int count_groups(const char *re, size_t n)
{
    int g = 0;
    bool br = false;
    for (size_t i = 0; i < n; i++) {
        if (re[i] == '\\')
            i++;
        else if (br)
            br = re[i] != ']';
        else if (re[i] == '[')
            br = true;
        else if (re[i] == '(')
            g++;
    }
    return g;
}

/* A compiled pattern: a plain substring, or a regex with the variables it
 * defines (name, group). */
typedef struct pattern {
    const char *plain;
    bool is_re;
    regex_t re;
    char *def[MAX_GROUPS];
    int def_group[MAX_GROUPS];
    int ndefs;
} pattern;

static void pattern_free(pattern *p)
{
    if (p->is_re)
        regfree(&p->re);
    for (int i = 0; i < p->ndefs; i++)
        free(p->def[i]);
}

/* Compiles pat against the variables bound so far; -1 with err. */
static int pattern_compile(const char *pat, const vars *v, pattern *p, char *err, size_t errn)
{
    memset(p, 0, sizeof *p);
    if (!strstr(pat, "[[") && !strstr(pat, "{{")) {
        p->plain = pat;
        return 0;
    }
    sbuf b = {0};
    int groups = 0;
    sb_put(&b, "", 0);
    for (const char *s = pat; *s;) {
        const char *open_re = strstr(s, "{{"), *open_var = strstr(s, "[[");
        const char *o = !open_re ? open_var : !open_var ? open_re : open_re < open_var ? open_re : open_var;
        if (!o) {
            sb_literal(&b, s, strlen(s));
            break;
        }
        sb_literal(&b, s, (size_t)(o - s));
        bool is_var = o == open_var;
        if (is_var && o[2] == '[') { /* `b0[[[I]]`: a literal '[' before a variable */
            sb_literal(&b, o, 1);
            s = o + 1;
            continue;
        }
        const char *close = strstr(o + 2, is_var ? "]]" : "}}");
        if (!close) {
            snprintf(err, errn, "unterminated '%s' in pattern '%s'", is_var ? "[[" : "{{", pat);
            free(b.s);
            return -1;
        }
        const char *body = o + 2;
        size_t bn = (size_t)(close - body);
        if (!is_var) {
            sb_put(&b, "(", 1);
            sb_put(&b, body, bn);
            sb_put(&b, ")", 1);
            groups += 1 + count_groups(body, bn);
        } else {
            const char *colon = memchr(body, ':', bn);
            size_t nl = colon ? (size_t)(colon - body) : bn;
            bool ok = nl > 0;
            for (size_t i = 0; i < nl; i++)
                ok = ok && (body[i] == '_' || (body[i] >= 'A' && body[i] <= 'Z') || (body[i] >= 'a' && body[i] <= 'z') ||
                            (i && body[i] >= '0' && body[i] <= '9'));
            if (!ok) {
                snprintf(err, errn, "bad variable name in '[[%.*s]]'", (int)bn, body);
                free(b.s);
                return -1;
            }
            if (colon) {
                if (p->ndefs == MAX_GROUPS || groups + 1 >= MAX_GROUPS) {
                    snprintf(err, errn, "too many groups in pattern '%s'", pat);
                    free(b.s);
                    return -1;
                }
                p->def[p->ndefs] = strndup(body, nl);
                p->def_group[p->ndefs++] = ++groups;
                sb_put(&b, "(", 1);
                sb_put(&b, colon + 1, bn - nl - 1);
                sb_put(&b, ")", 1);
                groups += count_groups(colon + 1, bn - nl - 1);
            } else {
                int same = -1;     /* defined earlier in this pattern: a back-reference */
                for (int i = 0; i < p->ndefs; i++)
                    if (strlen(p->def[i]) == nl && !memcmp(p->def[i], body, nl))
                        same = p->def_group[i];
                const char *val = var_get(v, body, nl);
                if (same > 0 && same <= 9) {
                    char ref[4] = {'\\', (char)('0' + same), 0};
                    sb_put(&b, ref, 2);
                } else if (val && same < 0) {
                    sb_literal(&b, val, strlen(val));
                } else {
                    snprintf(err, errn, "undefined variable '%.*s' in pattern '%s'", (int)nl, body, pat);
                    free(b.s);
                    return -1;
                }
            }
        }
        s = close + 2;
    }
    int rc = regcomp(&p->re, b.s, REG_EXTENDED);
    if (rc) {
        char msg[256];
        regerror(rc, &p->re, msg, sizeof msg);
        snprintf(err, errn, "bad regex in pattern '%s': %s", pat, msg);
        free(b.s);
        for (int i = 0; i < p->ndefs; i++)
            free(p->def[i]);
        p->ndefs = 0;
        return -1;
    }
    free(b.s);
    p->is_re = true;
    return 0;
}

/* Whether line matches p; on a match the variables p defines are bound
 * in v (when v is given). */
static bool pattern_match(const pattern *p, const char *line, vars *v)
{
    if (!p->is_re)
        return strstr(line, p->plain) != NULL;
    regmatch_t m[MAX_GROUPS];
    if (regexec(&p->re, line, MAX_GROUPS, m, 0))
        return false;
    for (int i = 0; v && i < p->ndefs; i++) {
        const regmatch_t *g = &m[p->def_group[i]];
        if (g->rm_so >= 0)
            var_set(v, p->def[i], line + g->rm_so, (size_t)(g->rm_eo - g->rm_so));
    }
    return true;
}

/* CHECK-NOT patterns d[from..to) must not occur in out lines [lo, hi). */
static int check_nots(const testcase *c, int from, int to, const lines *out, int lo, int hi, vars *v,
                      char *err, size_t errn)
{
    for (int d = from; d < to; d++) {
        pattern p;
        char perr[512];
        if (pattern_compile(c->dirs[d].pat, v, &p, perr, sizeof perr) < 0) {
            snprintf(err, errn, "%s:%d: CHECK-NOT: %s", c->file, c->dirs[d].line, perr);
            return -1;
        }
        for (int i = lo; i < hi; i++)
            if (pattern_match(&p, out->l[i], NULL)) {
                snprintf(err, errn, "%s:%d: CHECK-NOT: '%s' found on line %d: %s", c->file,
                         c->dirs[d].line, c->dirs[d].pat, i + 1, out->l[i]);
                pattern_free(&p);
                return -1;
            }
        pattern_free(&p);
    }
    return 0;
}

/* FileCheck's matching over the printed IR. */
static int match_output(const testcase *c, const char *ir, char *err, size_t errn)
{
    lines out;
    split_lines(ir, &out);
    vars v;
    v.n = 0;
    int last = -1, nots = -1, rc = 0;
    for (int d = 0; d < c->ndirs && !rc; d++) {
        const directive *dr = &c->dirs[d];
        if (dr->kind == D_NOT) {
            if (nots < 0)
                nots = d;
            continue;
        }
        int found = -1;
        pattern p;
        char perr[512];
        if (pattern_compile(dr->pat, &v, &p, perr, sizeof perr) < 0) {
            snprintf(err, errn, "%s:%d: %s: %s", c->file, dr->line, dnames[dr->kind], perr);
            rc = -1;
            break;
        }
        if (dr->kind == D_CHECK) {
            for (int i = last + 1; i < out.n && found < 0; i++)
                if (pattern_match(&p, out.l[i], NULL))
                    found = i;
            if (found < 0) {
                if (last < 0)
                    snprintf(err, errn, "%s:%d: CHECK: expected '%s' not found in the output", c->file,
                             dr->line, dr->pat);
                else
                    snprintf(err, errn, "%s:%d: CHECK: expected '%s' not found after line %d", c->file,
                             dr->line, dr->pat, last + 1);
                rc = -1;
                break;
            }
        } else {
            found = last + 1;
            if (found >= out.n || !pattern_match(&p, out.l[found], NULL)) {
                snprintf(err, errn, "%s:%d: CHECK-NEXT: expected '%s' on line %d, found: %s", c->file,
                         dr->line, dr->pat, found + 1, found < out.n ? out.l[found] : "(end of output)");
                rc = -1;
            }
        }
        if (rc) {
            pattern_free(&p);
            break;
        }
        /* CHECK-NOTs before this match see the variables bound before it */
        if (nots >= 0)
            rc = check_nots(c, nots, d, &out, last + 1, found, &v, err, errn);
        pattern_match(&p, out.l[found], &v);
        pattern_free(&p);
        nots = -1;
        last = found;
    }
    if (!rc && nots >= 0)
        rc = check_nots(c, nots, c->ndirs, &out, last + 1, out.n, &v, err, errn);
    vars_clear(&v);
    free(out.buf);
    free(out.l);
    return rc;
}

/* Runs one well-formed case. *shown receives what to print on failure
 * (the IR after the pipeline, or the error message), malloc'd. */
static int run_case(const testcase *c, char *err, size_t errn, char **shown, const char **label)
{
    /* Pad with newlines so the parser's line numbers are the file's. */
    size_t pad = (size_t)c->first_line - 1;
    char *src = malloc(pad + c->len + 1);
    if (!src) {
        fprintf(stderr, "icc-passcheck: out of memory\n");
        exit(2);
    }
    memset(src, '\n', pad);
    memcpy(src + pad, c->text, c->len);
    icc_diag d = {{0}};
    ir_graph *g = ir_parse(src, pad + c->len, c->file, &d);
    free(src);
    *shown = NULL;
    *label = "IR after the pipeline";
    if (!g) {
        snprintf(err, errn, "%s", d.msg);
        return -1;
    }
    icc_pipeline p;
    char *pipeline = c->pipeline;
    char planned[1024];
    if (c->emit_kernels) { /* as icc: the memory plan last */
        size_t n = strlen(pipeline);
        bool has_plan = n >= 4 && !strcmp(pipeline + n - 4, "plan");
        snprintf(planned, sizeof planned, "%s%s%s", pipeline, n && !has_plan ? "," : "", has_plan ? "" : "plan");
        pipeline = planned;
    }
    int r = icc_pipeline_parse(pipeline, &p, &d);
    if (r == 0) {
        icc_pass_options o = {0};
        r = icc_pipeline_run(&p, g, &o, &d);
        icc_pipeline_free(&p);
    }
    char *ir = NULL;
    if (r == 0 && c->emit_kernels) {
        icc_target_desc t;
        cg_schedule s;
        r = icc_target_desc_init(&t, "x86_64-pc-linux-gnu", "x86-64-v3", NULL, &d) < 0 || cg_schedule_init(&s, &t, &d) < 0
                ? -1 : 0;
        if (r == 0) {
            ir = cg_kernels_text(g, &s, "model", &d);
            r = ir ? 0 : -1;
        }
    } else if (r == 0) {
        ir = ir_print_string(g, NULL);
    }
    ir_graph_destroy(g);
    int rc = 0;
    if (r < 0 && !c->expect_error) {
        free(ir);
        ir = NULL;
        snprintf(err, errn, "%s:%d: pipeline failed: %s", c->file, c->run_line, d.msg);
        rc = -1;
    } else if (r == 0 && c->expect_error) {
        snprintf(err, errn, "%s:%d: RUN-ERROR: the pipeline succeeded", c->file, c->run_line);
        rc = -1;
    } else if (r < 0) {
        for (int k = 0; k < c->ndirs && !rc; k++)
            if (!strstr(d.msg, c->dirs[k].pat)) {
                snprintf(err, errn, "%s:%d: CHECK-ERROR: expected '%s' in the error message", c->file,
                         c->dirs[k].line, c->dirs[k].pat);
                rc = -1;
            }
        *shown = strdup(d.msg);
        *label = "error message";
        return rc;
    } else if (!ir) {
        snprintf(err, errn, "%s:%d: out of memory printing the IR", c->file, c->run_line);
        rc = -1;
    } else {
        rc = match_output(c, ir, err, errn);
        if (!rc && !c->emit_kernels) {
            /* The output must be as exact as any other IR text. */
            ir_graph *g2 = ir_parse(ir, strlen(ir), "(output)", &d);
            char *again = g2 ? ir_print_string(g2, NULL) : NULL;
            if (!g2 || !again || strcmp(again, ir)) {
                snprintf(err, errn, "%s:%d: the output IR does not round-trip: %s", c->file, c->run_line,
                         g2 ? "printed differently" : d.msg);
                rc = -1;
            }
            free(again);
            ir_graph_destroy(g2);
        }
    }
    *shown = ir;
    return rc;
}

static void print_indented(const char *s)
{
    while (s && *s) {
        size_t n = strcspn(s, "\n");
        printf("    | %.*s\n", (int)n, s);
        s += n + (s[n] == '\n');
    }
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf)
            break;
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        cap *= 2;
        char *nb = realloc(buf, cap);
        if (!nb) {
            free(buf);
            buf = NULL;
        }
        buf = nb;
    }
    fclose(f);
    if (buf)
        buf[n] = 0;
    *len = n;
    return buf;
}

static void run_file(const char *path, int *passed, int *failed)
{
    size_t len;
    char *text = read_file(path, &len);
    if (!text) {
        printf("FAIL %s: cannot read\n", path);
        (*failed)++;
        return;
    }
    size_t start = 0;
    int line = 1, start_line = 1, before = *passed + *failed;
    for (size_t i = 0;; line++) {
        size_t e = i;
        while (e < len && text[e] != '\n')
            e++;
        bool sep = i < len && is_separator(text + i, e - i);
        if (sep || e >= len) {
            size_t end = sep ? i : len;
            testcase c = {.file = path, .first_line = start_line, .text = text + start, .len = end - start};
            char err[2048] = "";
            int r = parse_case(&c, err, sizeof err);
            if (r < 0) {
                printf("FAIL %s\n", err);
                (*failed)++;
            } else if (r == 0) {
                char *shown = NULL;
                const char *label = "";
                if (run_case(&c, err, sizeof err, &shown, &label) == 0) {
                    printf("ok %s:%d %s\n", path, c.run_line, c.intent);
                    if (verbose)
                        print_indented(shown);
                    (*passed)++;
                } else {
                    printf("FAIL %s:%d %s\n  %s\n", path, c.run_line, c.intent, err);
                    if (shown) {
                        printf("  %s:\n", label);
                        print_indented(shown);
                    }
                    (*failed)++;
                }
                free(shown);
            }
            case_free(&c);
            start = e + 1;
            start_line = line + 1;
        }
        if (e >= len)
            break;
        i = e + 1;
    }
    free(text);
    if (*passed + *failed == before) {
        printf("FAIL %s: no test cases\n", path);
        (*failed)++;
    }
}

int main(int argc, char **argv)
{
    int passed = 0, failed = 0, nfiles = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v")) {
            verbose = true;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: icc-passcheck [-v] FILE.icc...\n"
                   "Runs golden pass tests: cases separated by '# -----', each with\n"
                   "'# RUN: <pipeline>' (or '# RUN-ERROR:'), '# INTENT: ...', IR text and\n"
                   "'# CHECK:', '# CHECK-NEXT:', '# CHECK-NOT:' ('# CHECK-ERROR:') lines;\n"
                   "patterns may hold {{regex}}, [[NAME:regex]] (binds NAME) and [[NAME]].\n"
                   "A RUN pipeline ending in ' --emit=kernels' checks the kernels' text.\n"
                   "-v prints the IR after the pipeline of every case.\n");
            return 0;
        } else {
            nfiles++;
        }
    }
    if (!nfiles) {
        fprintf(stderr, "usage: icc-passcheck [-v] FILE.icc...\n");
        return 2;
    }
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-v"))
            run_file(argv[i], &passed, &failed);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
