/* diff_replay.c - the differential fuzzer without libFuzzer: replays saved
 * inputs, or generates seeded random ones, through the same generator and
 * check as fuzz_diff (gen_graph.c, diff.c), so a normal build and ctest
 * exercise them without clang.
 *
 *   diff_replay FILE|DIR ...          each file's bytes as one case
 *   diff_replay --random N [--seed S] [--save DIR]
 *                                     N cases from seeds S, S+1, ... (64
 *                                     bytes of splitmix64 each); --save
 *                                     writes the bytes of each failing case
 *                                     to DIR/seed-<S> (a reproducer)
 *   diff_replay --icc FILE.icc|DIR ... [--seed S] [--tol C]
 *                                     text-IR graphs (hand-reduced
 *                                     reproducers; a folder's *.icc) on
 *                                     inputs drawn from S, compared at
 *                                     tolerance class C (0-3, default 3)
 *   -v                                print each case's verdict and skips
 *   -p                                and each case's graph (text IR) and
 *                                     input values
 *
 * Prints each failure's report (the reason and the graph's text IR) and a
 * summary: cases, agreeing, refused by both, skipped (an op documented as
 * not compiled yet), failed, graphs the generator could not make, cases
 * per second. Exit 1 if any case failed.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "diff.h"
#include "ir/text.h"

static diff_stats st;
static bool icc_mode;
static uint64_t icc_seed = 1;
static int icc_tol = 3;
static long rejected;
static bool verbose, print_graphs;

/* The inputs' values, one line each (with -p). */
static void print_inputs(const gen_case *c)
{
    for (int i = 0; i < c->ninputs; i++) {
        const ir_tensor *t = &c->inputs[i];
        printf("# %%%s =", c->g->inputs[i]->name);
        for (int64_t k = 0; k < t->numel; k++) {
            if (ir_dtype_is_float(t->dtype))
                printf(" %.9g", ir_tensor_getf(t, k));
            else
                printf(" %lld", (long long)ir_tensor_geti(t, k));
        }
        printf("\n");
    }
}

static void one(const uint8_t *bytes, size_t n, const char *name, const char *save_dir)
{
    gen_case c;
    icc_diag d = {{0}};
    if (gen_graph(bytes, n, &c, &d) < 0) {
        rejected++;
        printf("%s: the generator's graph is refused: %s\n", name, d.msg);
        return;
    }
    if (print_graphs) {
        ir_print(c.g, stdout);
        print_inputs(&c);
    }
    char *report = NULL;
    diff_result r = diff_case(&c, &st, &report);
    if (r == DIFF_BUG) {
        printf("FAIL %s: %s\n", name, report ? report : "(no report)");
        if (save_dir) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", save_dir, name);
            FILE *f = fopen(path, "wb");
            if (f) {
                fwrite(bytes, 1, n, f);
                fclose(f);
                printf("     saved %s\n", path);
            }
        }
    } else if (verbose) {
        printf("%s %s%s%s", r == DIFF_SKIP ? "skip" : "ok  ", name, report ? ": " : "\n",
               report ? report : "");
    }
    free(report);
    gen_case_free(&c);
}

static void replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        st.bugs++;
        return;
    }
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    int ch;
    while ((ch = fgetc(f)) != EOF) {
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            uint8_t *nb = realloc(buf, cap);
            if (!nb)
                break;
            buf = nb;
        }
        buf[n++] = (uint8_t)ch;
    }
    fclose(f);
    const char *base = strrchr(path, '/');
    one(buf, n, base ? base + 1 : path, NULL);
    free(buf);
}

static void replay_icc(const char *path, uint64_t seed, int tol)
{
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    size_t len = 0;
    if (f) {
        FILE *m = open_memstream(&text, &len);
        int ch;
        while (m && (ch = fgetc(f)) != EOF)
            fputc(ch, m);
        if (m)
            fclose(m);
        fclose(f);
    }
    icc_diag d = {{0}};
    ir_graph *g = text ? ir_parse(text, len, path, &d) : NULL;
    free(text);
    gen_case c;
    if (!g || gen_inputs(g, seed, tol, &c, &d) < 0) {
        printf("FAIL %s: %s\n", path, g ? d.msg : text ? d.msg : "cannot read it");
        st.bugs++;
        return;
    }
    if (print_graphs) {
        ir_print(c.g, stdout);
        print_inputs(&c);
    }
    char *report = NULL;
    diff_result r = diff_case(&c, &st, &report);
    printf("%s %s%s%s", r == DIFF_BUG ? "FAIL" : r == DIFF_SKIP ? "skip" : "ok  ", path, report ? ": " : "\n",
           report ? report : "");
    free(report);
    gen_case_free(&c);
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void replay_path(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        DIR *dir = opendir(path);
        if (!dir) {
            perror(path);
            st.bugs++;
            return;
        }
        char **names = NULL;
        int n = 0;
        struct dirent *e;
        while ((e = readdir(dir))) {
            if (e->d_name[0] == '.')
                continue;
            char **nn = realloc(names, (size_t)(n + 1) * sizeof *names);
            if (!nn)
                break;
            names = nn;
            names[n++] = strdup(e->d_name);
        }
        closedir(dir);
        qsort(names, (size_t)n, sizeof *names, by_name);
        for (int i = 0; i < n; i++) {
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", path, names[i]);
            if (!icc_mode)
                replay_file(p);
            else if (ir_ends_with(p, ".icc"))
                replay_icc(p, icc_seed, icc_tol);
            free(names[i]);
        }
        free(names);
        return;
    }
    if (icc_mode)
        replay_icc(path, icc_seed, icc_tol);
    else
        replay_file(path);
}

int main(int argc, char **argv)
{
    long random_n = -1;
    unsigned long long seed = 1;
    const char *save = NULL;
    struct timespec t0, t1;
    setvbuf(stdout, NULL, _IOLBF, 0); /* a failure shows as it happens */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int files = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--random") && i + 1 < argc)
            random_n = atol(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--save") && i + 1 < argc)
            save = argv[++i];
        else if (!strcmp(argv[i], "--icc"))
            icc_mode = true;
        else if (!strcmp(argv[i], "--tol") && i + 1 < argc)
            icc_tol = atoi(argv[++i]) & 3;
        else if (!strcmp(argv[i], "-v"))
            verbose = true;
        else if (!strcmp(argv[i], "-p"))
            print_graphs = verbose = true;
        else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: diff_replay [-v] [-p] FILE|DIR ... | --random N [--seed S] [--save DIR] | --icc FILE|DIR ... [--seed S] [--tol C]\n");
            return 2;
        } else
            files++;
    }
    icc_seed = seed;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--random") || !strcmp(argv[i], "--seed") || !strcmp(argv[i], "--save") ||
            !strcmp(argv[i], "--tol"))
            i++;
        else if (argv[i][0] != '-')
            replay_path(argv[i]);
    }
    for (long k = 0; k < random_n; k++) {
        uint8_t bytes[64];
        char name[64];
        gen_random_bytes(seed + (unsigned long long)k, bytes, sizeof bytes);
        snprintf(name, sizeof name, "seed-%llu", seed + (unsigned long long)k);
        one(bytes, sizeof bytes, name, save);
    }
    if (random_n < 0 && !files) {
        fprintf(stderr, "diff_replay: nothing to run (give files or --random N)\n");
        return 2;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("diff_replay: %ld cases: %ld agree, %ld refused by both, %ld skipped (not compiled yet), %ld failed; "
           "%ld graphs the generator could not make; %.1f cases/s\n",
           st.cases, st.same, st.refused, st.skipped, st.bugs, rejected,
           secs > 0 ? (double)st.cases / secs : 0.0);
    return st.bugs ? 1 : 0;
}
