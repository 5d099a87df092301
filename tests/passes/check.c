/* check.c - icc-passcheck, the golden pass-test runner: each .icc file
 * holds cases separated by `# -----` lines; a case is IR text with one
 * `# RUN: <pipeline>` (or `# RUN-ERROR: <pipeline>`), one `# INTENT:`
 * line, and FileCheck-style `# CHECK:`, `# CHECK-NEXT:`, `# CHECK-NOT:`
 * (or `# CHECK-ERROR:`) lines matched against the IR printed after the
 * pipeline ran in-process with verification on. Patterns are plain
 * substrings of one output line. Prints one line per case and a closing
 * count; exits non-zero on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* CHECK-NOT patterns d[from..to) must not occur in out lines [lo, hi). */
static int check_nots(const testcase *c, int from, int to, const lines *out, int lo, int hi,
                      char *err, size_t errn)
{
    for (int d = from; d < to; d++)
        for (int i = lo; i < hi; i++)
            if (strstr(out->l[i], c->dirs[d].pat)) {
                snprintf(err, errn, "%s:%d: CHECK-NOT: '%s' found on line %d: %s", c->file,
                         c->dirs[d].line, c->dirs[d].pat, i + 1, out->l[i]);
                return -1;
            }
    return 0;
}

/* FileCheck's matching over the printed IR. */
static int match_output(const testcase *c, const char *ir, char *err, size_t errn)
{
    lines out;
    split_lines(ir, &out);
    int last = -1, nots = -1, rc = 0;
    for (int d = 0; d < c->ndirs && !rc; d++) {
        const directive *dr = &c->dirs[d];
        if (dr->kind == D_NOT) {
            if (nots < 0)
                nots = d;
            continue;
        }
        int found = -1;
        if (dr->kind == D_CHECK) {
            for (int i = last + 1; i < out.n && found < 0; i++)
                if (strstr(out.l[i], dr->pat))
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
            if (found >= out.n || !strstr(out.l[found], dr->pat)) {
                snprintf(err, errn, "%s:%d: CHECK-NEXT: expected '%s' on line %d, found: %s", c->file,
                         dr->line, dr->pat, found + 1, found < out.n ? out.l[found] : "(end of output)");
                rc = -1;
                break;
            }
        }
        if (nots >= 0)
            rc = check_nots(c, nots, d, &out, last + 1, found, err, errn);
        nots = -1;
        last = found;
    }
    if (!rc && nots >= 0)
        rc = check_nots(c, nots, c->ndirs, &out, last + 1, out.n, err, errn);
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
    int r = icc_pipeline_parse(c->pipeline, &p, &d);
    if (r == 0) {
        icc_pass_options o = {0};
        r = icc_pipeline_run(&p, g, &o, &d);
        icc_pipeline_free(&p);
    }
    char *ir = r == 0 ? ir_print_string(g, NULL) : NULL;
    ir_graph_destroy(g);
    int rc = 0;
    if (r < 0 && !c->expect_error) {
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
        if (!rc) {
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
                   "'# CHECK:', '# CHECK-NEXT:', '# CHECK-NOT:' ('# CHECK-ERROR:') lines.\n"
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
