/* bench.c - `icc bench`: how fast a compiled model runs, measured through
 * the public runtime API (include/icc/runtime.h), as an app would run it.
 *
 *   icc bench MODEL.so|MODEL.onnx [--threads=1,2] [--batch=1,2,4,...] [--runs=N]
 *             [--time=S] [--warmup=S] [--scenario=single-stream|offline|server]
 *             [--rate=QPS] [--p99-bound=MS] [--queries=N] [--json] [--plot=FILE.png]
 *   icc bench --peak [--json]
 *
 * An .onnx (or .icc) model is compiled first by this same icc, with every
 * option bench does not know passed to it (-O3, --shape=..., --precision=...).
 * Each configuration (thread count x batch) runs after a warm-up (2 s before
 * the first, because clocks ramp; 0.2 s between the others) for at least
 * --runs runs and --time seconds; the statistics are nearest-rank
 * percentiles of the per-run wall times. Inputs hold a fixed pseudo-random
 * pattern (floats in [0, 1), integers in [0, 4)).
 *
 * Scenarios, in MLPerf's terms: single-stream reports the p90 latency of
 * back-to-back runs, offline the throughput (items/s) of the same runs, and
 * server sends Poisson arrivals at --rate to one context (a query waits for
 * the one before it) and reports the latency percentiles from arrival to
 * completion; with --p99-bound it searches the highest rate whose p99 stays
 * under the bound.
 */
#define _GNU_SOURCE
#include "tools/bench.h"
#include "tools/fail.h"

#include "icc/runtime.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

extern char **environ;

enum { MAX_LIST = 32, MAX_IO = 256, MAX_PASS = 64, MAX_DIMS = 16 };

/* ---- statistics ---------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double icc_bench_percentile(const double *sorted, int64_t n, double p)
{
    if (n <= 0)
        return 0;
    int64_t rank = (int64_t)ceil(p / 100.0 * (double)n);   /* 1-based */
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return sorted[rank - 1];
}

void icc_bench_stats_of(double *ms, int64_t n, icc_bench_stats *s)
{
    memset(s, 0, sizeof *s);
    if (n <= 0)
        return;
    qsort(ms, (size_t)n, sizeof *ms, cmp_double);
    double sum = 0;
    for (int64_t i = 0; i < n; i++)
        sum += ms[i];
    s->n = n;
    s->p50 = icc_bench_percentile(ms, n, 50);
    s->p90 = icc_bench_percentile(ms, n, 90);
    s->p99 = icc_bench_percentile(ms, n, 99);
    s->mean = sum / (double)n;
    s->min = ms[0];
    s->max = ms[n - 1];
}

void icc_bench_poisson(double *t, int64_t n, double rate, uint64_t seed)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull;
    double at = 0;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double u = ((double)(x >> 11) + 0.5) / 9007199254740992.0;   /* (0, 1) */
        at += -log(u) / rate;
        t[i] = at;
    }
}

int icc_bench_parse_list(const char *s, int64_t *v, int max)
{
    int n = 0;
    while (*s) {
        char *end;
        errno = 0;
        long long x = strtoll(s, &end, 10);
        if (end == s || x <= 0 || errno || n == max || (*end && *end != ','))
            return -1;
        v[n++] = x;
        s = *end ? end + 1 : end;
        if (*end && !*s)
            return -1;   /* a trailing comma */
    }
    return n ? n : -1;
}

/* ---- options ------------------------------------------------------------- */

typedef enum { SC_SINGLE, SC_OFFLINE, SC_SERVER } scenario;

typedef struct bopts {
    const char *model, *name, *plot, *batch_dim;
    int64_t threads[MAX_LIST], batch[MAX_LIST];
    int nthreads, nbatch;
    const char *dims[MAX_DIMS];
    int ndims;
    int64_t runs, queries;
    double time_s, warmup_s, rate, p99_bound;
    scenario sc;
    bool json, peak;
    const char *pass[MAX_PASS];   /* for the compiler */
    int npass;
} bopts;


/* Progress on long runs, to stderr when it is a terminal (scripts and
 * their logs get the results alone, and errors as one line). */
static void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void progress(const char *fmt, ...)
{
    if (!isatty(2))
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("icc bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static bool num_opt(const char *s, const char *key, double *out)
{
    size_t k = strlen(key);
    if (strncmp(s, key, k))
        return false;
    char *end;
    errno = 0;
    *out = strtod(s + k, &end);
    if (end == s + k || *end || errno || !(*out >= 0) || isinf(*out))
        *out = -1;
    return true;
}

static int parse(int argc, char **argv, bopts *o)
{
    *o = (bopts){.runs = 20, .queries = 200, .time_s = 1.0, .warmup_s = 2.0};
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i];
        double x;
        if (!strncmp(s, "--threads=", 10)) {
            if ((o->nthreads = icc_bench_parse_list(s + 10, o->threads, MAX_LIST)) < 0)
                return icc_fail("--threads=%s: expected positive integers joined by ','", s + 10);
        } else if (!strncmp(s, "--batch=", 8)) {
            if ((o->nbatch = icc_bench_parse_list(s + 8, o->batch, MAX_LIST)) < 0)
                return icc_fail("--batch=%s: expected positive integers joined by ','", s + 8);
        } else if (!strncmp(s, "--batch-dim=", 12)) {
            o->batch_dim = s + 12;
        } else if (!strncmp(s, "--dim=", 6)) {
            if (o->ndims == MAX_DIMS || !strchr(s + 6, '='))
                return icc_fail("%s: expected --dim=SYMBOL=VALUE (at most %d)", s, MAX_DIMS);
            o->dims[o->ndims++] = s + 6;
        } else if (!strncmp(s, "--name=", 7)) {
            o->name = s + 7;
        } else if (!strncmp(s, "--plot=", 7)) {
            o->plot = s + 7;
        } else if (!strcmp(s, "--json")) {
            o->json = true;
        } else if (!strcmp(s, "--peak")) {
            o->peak = true;
        } else if (!strncmp(s, "--scenario=", 11)) {
            const char *v = s + 11;
            if (!strcmp(v, "single-stream"))
                o->sc = SC_SINGLE;
            else if (!strcmp(v, "offline"))
                o->sc = SC_OFFLINE;
            else if (!strcmp(v, "server"))
                o->sc = SC_SERVER;
            else
                return icc_fail("--scenario=%s: expected single-stream, offline or server", v);
        } else if (num_opt(s, "--runs=", &x) || num_opt(s, "--queries=", &x)) {
            if (x < 1 || x > 1e7 || x != floor(x))
                return icc_fail("%s: expected a whole number from 1 to 10000000", s);
            *(s[2] == 'r' ? &o->runs : &o->queries) = (int64_t)x;
        } else if (num_opt(s, "--time=", &x) || num_opt(s, "--warmup=", &x)) {
            if (x < 0 || x > 3600)
                return icc_fail("%s: expected seconds from 0 to 3600", s);
            *(s[2] == 't' ? &o->time_s : &o->warmup_s) = x;
        } else if (num_opt(s, "--rate=", &x)) {
            if (!(x > 0))
                return icc_fail("%s: expected a positive number of queries per second", s);
            o->rate = x;
        } else if (num_opt(s, "--p99-bound=", &x)) {
            if (!(x > 0))
                return icc_fail("%s: expected a positive number of milliseconds", s);
            o->p99_bound = x;
        } else if (s[0] == '-' && s[1]) {
            if (o->npass == MAX_PASS)
                return icc_fail("too many options for the compiler (max %d)", MAX_PASS);
            o->pass[o->npass++] = s;
        } else if (!o->model) {
            o->model = s;
        } else {
            return icc_fail("bench: more than one model ('%s' and '%s')", o->model, s);
        }
    }
    if (o->peak && o->model)
        return icc_fail("bench --peak measures the machine: it takes no model");
    if (!o->peak && !o->model)
        return icc_fail("usage: icc bench MODEL.so|MODEL.onnx [options] (see icc --help), or icc bench --peak");
    if (o->sc == SC_SERVER && !o->rate && !o->p99_bound)
        return icc_fail("--scenario=server needs --rate=QPS and/or --p99-bound=MS");
    if (o->sc != SC_SERVER && (o->rate || o->p99_bound))
        return icc_fail("--rate and --p99-bound belong to --scenario=server");
    if (o->sc == SC_SERVER && (o->nbatch > 1 || o->nthreads > 1))
        return icc_fail("--scenario=server runs one thread count and one batch");
    if (o->model && strlen(o->model) > 3 && !strcmp(o->model + strlen(o->model) - 3, ".so") && o->npass)
        return icc_fail("%s: unknown option for a compiled model (options for the compiler need an .onnx)",
                     o->pass[0]);
    return 0;
}

/* ---- compiling an .onnx first --------------------------------------------- */

/* Runs `self MODEL pass... -o dir/model.so`; the compiler prints its own
 * error. 0 on success. */
static int compile_first(const bopts *o, const char *self, const char *so)
{
    const char *av[MAX_PASS + 8];
    int n = 0;
    av[n++] = self;
    av[n++] = o->model;
    for (int i = 0; i < o->npass; i++)
        av[n++] = o->pass[i];
    if (o->name) {
        static char nm[512];
        snprintf(nm, sizeof nm, "--name=%s", o->name);
        av[n++] = nm;
    }
    av[n++] = "-o";
    av[n++] = so;
    av[n] = NULL;
    progress("compiling %s", o->model);
    pid_t pid;
    int st;
    if (posix_spawn(&pid, self, NULL, NULL, (char *const *)av, environ) != 0)
        return icc_fail("cannot run %s to compile %s: %s", self, o->model, strerror(errno));
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return icc_fail("waiting for the compiler: %s", strerror(errno));
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

/* ---- running --------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_until(double t)
{
    struct timespec ts = {(time_t)t, (long)((t - floor(t)) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* A fixed pattern: floats in [0, 1), integers in [0, 4), bools 0/1. */
static void fill(void *p, int32_t t, int64_t n, uint64_t seed)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double u = (double)(x >> 11) / 9007199254740992.0;
        int64_t k = (int64_t)(x >> 62);
        switch (t) {
        case ICC_F32: ((float *)p)[i] = (float)u; break;
        case ICC_F64: ((double *)p)[i] = u; break;
        case ICC_F16: ((uint16_t *)p)[i] = (uint16_t)(0x3800 + (x >> 54)); break;
        case ICC_BF16: ((uint16_t *)p)[i] = (uint16_t)(0x3f00 + (x >> 57)); break;
        case ICC_BOOL: ((uint8_t *)p)[i] = (uint8_t)(k & 1); break;
        default: {
            size_t w = icc_dtype_size(t);
            memset((char *)p + (size_t)i * w, 0, w);
            memcpy((char *)p + (size_t)i * w, &k, 1);   /* little-endian: the low byte */
        }
        }
    }
}

typedef struct io {
    int nin, nout;
    int64_t dims[MAX_IO][MAX_DIMS];
    const int64_t *dims_p[MAX_IO];
    void *in[MAX_IO], *out[MAX_IO];
} io;

static void io_free(io *b)
{
    for (int i = 0; i < b->nin; i++)
        free(b->in[i]);
    for (int i = 0; i < b->nout; i++)
        free(b->out[i]);
    memset(b, 0, sizeof *b);
}

/* The symbol --batch sweeps: --batch-dim, else the model's first symbol. */
static const char *batch_symbol(const bopts *o, const icc_model_desc *d)
{
    if (o->batch_dim)
        return o->batch_dim;
    return d->nsymbols > 0 ? d->symbols[0] : NULL;
}

/* Inputs for batch (the batch symbol at that value, others from --dim or 1)
 * and outputs of the dims they give. */
static int io_make(const bopts *o, icc_model *m, const char *bsym, int64_t batch, io *b)
{
    const icc_model_desc *d = icc_model_describe(m);
    memset(b, 0, sizeof *b);
    if (d->ninputs > MAX_IO || d->noutputs > MAX_IO)
        return icc_fail("%s: more than %d inputs or outputs", o->model, MAX_IO);
    for (int i = 0; i < d->ninputs; i++) {
        const icc_tensor_desc *t = icc_model_input(m, i);
        if (t->rank > MAX_DIMS)
            return icc_fail("%s: input '%s' has rank %d (at most %d here)", o->model, t->name, t->rank, MAX_DIMS);
        int64_t n = 1;
        for (int k = 0; k < t->rank; k++) {
            int64_t v = t->dims[k];
            if (v < 0) {
                const char *sym = t->dim_names ? t->dim_names[k] : NULL;
                v = 1;
                if (sym && bsym && !strcmp(sym, bsym))
                    v = batch;
                for (int j = 0; sym && j < o->ndims; j++) {
                    size_t len = strlen(sym);
                    if (!strncmp(o->dims[j], sym, len) && o->dims[j][len] == '=')
                        v = atoll(o->dims[j] + len + 1);
                }
            }
            b->dims[i][k] = v;
            n *= v;
        }
        b->dims_p[i] = b->dims[i];
        b->nin = i + 1;
        if (!(b->in[i] = malloc((size_t)n * icc_dtype_size(t->dtype) + 64)))
            return icc_fail("out of memory for input '%s'", t->name);
        fill(b->in[i], t->dtype, n, (uint64_t)i + 1);
    }
    for (int i = 0; i < d->noutputs; i++) {
        const icc_tensor_desc *t = icc_model_output(m, i);
        int64_t od[64], n = 1;
        if (t->rank > 64 || icc_output_dims(m, b->dims_p, i, od) != ICC_OK)
            return icc_fail("%s", icc_last_error());
        for (int k = 0; k < t->rank; k++)
            n *= od[k];
        b->nout = i + 1;
        if (!(b->out[i] = malloc((size_t)n * icc_dtype_size(t->dtype) + 64)))
            return icc_fail("out of memory for output '%s'", t->name);
    }
    return 0;
}

static int run_once(icc_context *ctx, io *b, double *seconds)
{
    double t0 = now_s();
    icc_status st = icc_run(ctx, (const void *const *)b->in, b->dims_p, b->out);
    *seconds = now_s() - t0;
    return st == ICC_OK ? 0 : icc_fail("%s", icc_context_error(ctx));
}

typedef struct row {
    int64_t threads, batch;
    icc_bench_stats s;
} row;

/* Warm-up, then at least runs runs and time_s seconds: the stats in r. */
static int measure(const bopts *o, icc_context *ctx, io *b, double warmup, row *r)
{
    double sec, end = now_s() + warmup;
    do {
        if (run_once(ctx, b, &sec) < 0)
            return -1;
    } while (now_s() < end);
    int64_t cap = 1024, n = 0;
    double *ms = malloc(sizeof *ms * (size_t)cap);
    if (!ms)
        return icc_fail("out of memory");
    double t_end = now_s() + o->time_s;
    while (n < o->runs || (now_s() < t_end && n < 10000000)) {
        if (run_once(ctx, b, &sec) < 0) {
            free(ms);
            return -1;
        }
        if (n == cap) {
            double *nm = realloc(ms, sizeof *ms * (size_t)(cap *= 2));
            if (!nm) {
                free(ms);
                return icc_fail("out of memory");
            }
            ms = nm;
        }
        ms[n++] = sec * 1e3;
    }
    icc_bench_stats_of(ms, n, &r->s);
    free(ms);
    return 0;
}

/* The server scenario at rate: n Poisson arrivals, one context, FIFO. */
static int serve(icc_context *ctx, io *b, double rate, int64_t n, icc_bench_stats *s, double *qps)
{
    double *arrive = malloc(sizeof *arrive * (size_t)n), *lat = malloc(sizeof *lat * (size_t)n);
    if (!arrive || !lat) {
        free(arrive);
        free(lat);
        return icc_fail("out of memory");
    }
    icc_bench_poisson(arrive, n, rate, 7);
    double t0 = now_s(), sec;
    int rc = 0;
    for (int64_t i = 0; i < n && rc == 0; i++) {
        if (now_s() - t0 < arrive[i])
            sleep_until(t0 + arrive[i]);
        rc = run_once(ctx, b, &sec);
        lat[i] = (now_s() - t0 - arrive[i]) * 1e3;
    }
    double span = now_s() - t0;
    if (rc == 0) {
        icc_bench_stats_of(lat, n, s);
        *qps = (double)n / span;
    }
    free(arrive);
    free(lat);
    return rc;
}

/* ---- output -------------------------------------------------------------- */

static void print_row(const row *r, bool head)
{
    if (head)
        printf("%7s %6s %7s %9s %9s %9s %9s %9s %9s %10s %10s\n", "threads", "batch", "runs", "p50 ms", "p90 ms",
               "p99 ms", "mean ms", "min ms", "max ms", "inf/s", "items/s");
    double ips = r->s.mean > 0 ? 1e3 / r->s.mean : 0;
    printf("%7lld %6lld %7lld %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %10.1f %10.1f\n", (long long)r->threads,
           (long long)r->batch, (long long)r->s.n, r->s.p50, r->s.p90, r->s.p99, r->s.mean, r->s.min, r->s.max, ips,
           ips * (double)r->batch);
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

static void json_row(FILE *f, const row *r)
{
    double ips = r->s.mean > 0 ? 1e3 / r->s.mean : 0;
    fprintf(f, "{\"threads\": %lld, \"batch\": %lld, \"runs\": %lld, \"p50_ms\": %.6f, \"p90_ms\": %.6f, "
            "\"p99_ms\": %.6f, \"mean_ms\": %.6f, \"min_ms\": %.6f, \"max_ms\": %.6f, \"inferences_per_s\": %.3f, "
            "\"items_per_s\": %.3f}", (long long)r->threads, (long long)r->batch, (long long)r->s.n, r->s.p50, r->s.p90,
            r->s.p99, r->s.mean, r->s.min, r->s.max, ips, ips * (double)r->batch);
}

/* The latency/throughput trade-off over batch, one line per thread count,
 * drawn by gnuplot. */
static int plot(const bopts *o, const row *rows, int nrows, const char *dir)
{
    char data[4200], script[4200];
    snprintf(data, sizeof data, "%s/plot.dat", dir);
    snprintf(script, sizeof script, "%s/plot.gp", dir);
    FILE *f = fopen(data, "w");
    if (!f)
        return icc_fail("%s: %s", data, strerror(errno));
    for (int t = 0; t < (o->nthreads ? o->nthreads : 1); t++) {
        for (int i = 0; i < nrows; i++)
            if (!o->nthreads || rows[i].threads == o->threads[t])
                fprintf(f, "%lld %.6f %.3f\n", (long long)rows[i].batch, rows[i].s.p50,
                        rows[i].s.mean > 0 ? 1e3 / rows[i].s.mean * (double)rows[i].batch : 0);
        fputs("\n\n", f);
    }
    fclose(f);
    if (!(f = fopen(script, "w")))
        return icc_fail("%s: %s", script, strerror(errno));
    fprintf(f, "set terminal pngcairo size 900,540\nset output '%s'\n", o->plot);
    fprintf(f, "set title \"%s: latency and throughput by batch\" noenhanced\n", o->model);
    fputs("set xlabel 'batch'\nset logscale x 2\nset ylabel 'p50 latency (ms)'\nset y2label 'throughput (items/s)'\n"
          "set ytics nomirror\nset y2tics\nset key top left\nset grid\nplot ", f);
    for (int t = 0; t < (o->nthreads ? o->nthreads : 1); t++) {
        long long th = o->nthreads ? (long long)o->threads[t] : (long long)rows[0].threads;
        fprintf(f, "%s'%s' index %d using 1:2 with linespoints title 'p50 latency, %lld thread%s', "
                "'' index %d using 1:3 axes x1y2 with linespoints dashtype 2 title 'items/s, %lld thread%s'",
                t ? ", " : "", data, t, th, th == 1 ? "" : "s", t, th, th == 1 ? "" : "s");
    }
    fputc('\n', f);
    fclose(f);
    const char *av[] = {"gnuplot", script, NULL};
    pid_t pid;
    int st;
    if (posix_spawnp(&pid, "gnuplot", NULL, NULL, (char *const *)av, environ) != 0)
        return icc_fail("--plot needs gnuplot (Debian: apt install gnuplot-nox): %s", strerror(errno));
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return icc_fail("waiting for gnuplot: %s", strerror(errno));
    struct stat sb;
    if (!WIFEXITED(st) || WEXITSTATUS(st) || stat(o->plot, &sb) < 0 || sb.st_size == 0)
        return icc_fail("%s: gnuplot failed to draw the plot", o->plot);
    progress("plot in %s", o->plot);
    return 0;
}

/* ---- the machine's peaks ------------------------------------------------------ */

#if defined(__x86_64__)
/* Independent FMA chains, more than latency x ports, so the units stay busy. */
__attribute__((target("avx2,fma"))) static double fma_avx2(int64_t iters)
{
    __m256 a[12], b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < 12; i++)
        a[i] = _mm256_set1_ps(1.0f + (float)i);
    for (int64_t k = 0; k < iters; k++) {
#pragma GCC unroll 16
        for (int i = 0; i < 12; i++)   /* unrolled: the chains live in registers */
            a[i] = _mm256_fmadd_ps(a[i], b, c);
    }
    __m256 s = a[0];
    for (int i = 1; i < 12; i++)
        s = _mm256_add_ps(s, a[i]);
    float out[8];
    _mm256_storeu_ps(out, s);
    return (double)out[0];
}

__attribute__((target("avx512f"))) static double fma_avx512(int64_t iters)
{
    __m512 a[16], b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < 16; i++)
        a[i] = _mm512_set1_ps(1.0f + (float)i);
    for (int64_t k = 0; k < iters; k++) {
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++)
            a[i] = _mm512_fmadd_ps(a[i], b, c);
    }
    __m512 s = a[0];
    for (int i = 1; i < 16; i++)
        s = _mm512_add_ps(s, a[i]);
    return (double)_mm512_reduce_add_ps(s);
}

__attribute__((target("avx2"))) static double read_avx2(const float *p, int64_t n, int64_t reps)
{
    __m256 s[8];
    for (int i = 0; i < 8; i++)
        s[i] = _mm256_setzero_ps();
    for (int64_t r = 0; r < reps; r++)
        for (int64_t i = 0; i + 64 <= n; i += 64) {
#pragma GCC unroll 8
            for (int j = 0; j < 8; j++)
                s[j] = _mm256_add_ps(s[j], _mm256_load_ps(p + i + 8 * j));
        }
    for (int i = 1; i < 8; i++)
        s[0] = _mm256_add_ps(s[0], s[i]);
    float out[8];
    _mm256_storeu_ps(out, s[0]);
    return (double)out[0];
}
#endif

typedef struct peak_job {
    int kind;          /* 0: AVX2 FMA, 1: AVX-512 FMA */
    int64_t iters;
    double sink;
} peak_job;

static void *peak_thread(void *arg)
{
    peak_job *j = arg;
#if defined(__x86_64__)
    j->sink = j->kind ? fma_avx512(j->iters) : fma_avx2(j->iters);
#endif
    return NULL;
}

/* GFLOP/s of kind on nthreads threads (each iters iterations). */
static double fma_gflops(int kind, int nthreads, int64_t iters)
{
    pthread_t t[256];
    peak_job j[256];
    if (nthreads > 256)
        nthreads = 256;
    double t0 = now_s();
    int started = 0;
    for (int i = 0; i < nthreads; i++) {
        j[i] = (peak_job){kind, iters, 0};
        if (i == 0 || pthread_create(&t[i], NULL, peak_thread, &j[i]) == 0)
            started = i + 1;
        else
            break;
    }
    peak_thread(&j[0]);
    for (int i = 1; i < started; i++)
        pthread_join(t[i], NULL);
    double sec = now_s() - t0;
    double per = kind ? 16.0 * 16 * 2 : 12.0 * 8 * 2;   /* accumulators x lanes x (mul + add) */
    return (double)started * (double)iters * per / sec / 1e9;
}

static int cmd_peak(const bopts *o)
{
#if !defined(__x86_64__)
    (void)o;
    return icc_fail("bench --peak: only x86-64 is measured so far");
#else
    __builtin_cpu_init();
    bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    bool avx512 = __builtin_cpu_supports("avx512f");
    bool vnni = __builtin_cpu_supports("avx512vnni") || __builtin_cpu_supports("avxvnni");
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1)
        cores = 1;
    if (!avx2)
        return icc_fail("bench --peak: this CPU has no AVX2+FMA (the baseline icc measures)");
    progress("measuring the FMA peak and memory bandwidth (a few seconds)");
    fma_gflops(avx512, 1, 20000000);   /* warm up the clocks */
    double g1 = 0, gn = 0;
    for (int rep = 0; rep < 3; rep++) {   /* best of three: the machine is shared */
        double a = fma_gflops(avx512, 1, 40000000), b = fma_gflops(avx512, (int)cores, 40000000);
        g1 = a > g1 ? a : g1;
        gn = b > gn ? b : gn;
    }
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE), l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    struct { const char *name; int64_t bytes; } lv[] = {
        {"L1", 16 << 10}, {"L2", l2 > 0 ? l2 / 2 : 256 << 10}, {"L3", l3 > 0 ? l3 / 2 : 4 << 20}, {"DRAM", 512 << 20}};
    double bw[4];
    float *buf = aligned_alloc(64, (size_t)(512 << 20));
    if (!buf)
        return icc_fail("out of memory for the bandwidth buffer");
    memset(buf, 0, (size_t)(512 << 20));
    double sink = 0;
    for (int i = 0; i < 4; i++) {
        int64_t n = lv[i].bytes / 4 / 64 * 64, reps = (int64_t)(4e9 / (double)lv[i].bytes) + 1;
        sink += read_avx2(buf, n, reps < 1 ? 1 : reps / 8 + 1);   /* warm */
        double best = 0;
        for (int rep = 0; rep < 3; rep++) {
            double t0 = now_s();
            sink += read_avx2(buf, n, reps);
            double gbs = (double)n * 4 * (double)reps / (now_s() - t0) / 1e9;
            best = gbs > best ? gbs : best;
        }
        bw[i] = best;
    }
    free(buf);
    const char *isa = avx512 ? "avx512" : "avx2";
    if (o->json) {
        printf("{\"isa\": \"%s\", \"cores\": %ld, \"fma_gflops_per_core\": %.2f, \"fma_gflops_all_cores\": %.2f, "
               "\"read_gbs\": {\"L1\": %.2f, \"L2\": %.2f, \"L3\": %.2f, \"DRAM\": %.2f}, \"vnni\": %s, \"amx\": %s}\n",
               isa, cores, g1, gn, bw[0], bw[1], bw[2], bw[3], vnni ? "true" : "false",
               __builtin_cpu_supports("amx-tile") ? "true" : "false");
    } else {
        printf("FP32 FMA peak (%s): %.1f GFLOP/s per core, %.1f GFLOP/s on %ld cores\n", isa, g1, gn, cores);
        for (int i = 0; i < 4; i++)
            printf("read bandwidth, %-4s (%lld KiB): %.1f GB/s\n", lv[i].name, (long long)(lv[i].bytes >> 10), bw[i]);
        printf("VNNI: %s; AMX: %s\n", vnni ? "present (int8 peak not measured yet)" : "not present",
               __builtin_cpu_supports("amx-tile") ? "present (not measured yet)" : "not present");
    }
    return sink == 12345.678 ? 2 : 0;   /* keeps the reads */
#endif
}

/* ---- the command ------------------------------------------------------------- */

static int bench_model(const bopts *o, const char *so, const char *tmp)
{
    icc_model *m;
    if (icc_model_open(so, o->name, &m) != ICC_OK)
        return icc_fail("%s", icc_last_error());
    const icc_model_desc *d = icc_model_describe(m);
    const char *bsym = batch_symbol(o, d);
    int rc = 1;
    row rows[MAX_LIST * MAX_LIST];
    int nrows = 0;
    if (o->nbatch && !bsym) {
        icc_fail("%s: --batch needs a symbolic dim, and the model has none (its shapes were pinned)", o->model);
        goto out;
    }
    if (o->batch_dim) {
        int k = 0;
        while (k < d->nsymbols && strcmp(d->symbols[k], o->batch_dim))
            k++;
        if (k == d->nsymbols) {
            icc_fail("%s: --batch-dim=%s: the model has no such symbolic dim", o->model, o->batch_dim);
            goto out;
        }
    }
    int nt = o->nthreads ? o->nthreads : 1, nb = o->nbatch ? o->nbatch : 1;
    double warm = o->warmup_s;
    if (!o->json)
        printf("model: %s%s%s\n", o->model, bsym && o->nbatch ? ", batch dim " : "", bsym && o->nbatch ? bsym : "");
    for (int ti = 0; ti < nt; ti++) {
        icc_context *ctx;
        if (icc_context_create(m, NULL, &ctx) != ICC_OK) {
            icc_fail("%s", icc_last_error());
            goto out;
        }
        if (o->nthreads && icc_context_set_threads(ctx, (int)o->threads[ti]) != ICC_OK) {
            icc_fail("%s", icc_context_error(ctx));
            icc_context_destroy(ctx);
            goto out;
        }
        for (int bi = 0; bi < nb; bi++) {
            io b;
            row *r = &rows[nrows];
            r->threads = icc_context_threads(ctx);
            r->batch = o->nbatch ? o->batch[bi] : 1;
            if (io_make(o, m, o->nbatch ? bsym : NULL, r->batch, &b) != 0) {
                io_free(&b);
                icc_context_destroy(ctx);
                goto out;
            }
            progress("threads %lld, batch %lld: %s%.1f s warm-up, then at least %lld runs and %.1f s",
                    (long long)r->threads, (long long)r->batch, o->sc == SC_SERVER ? "server, " : "", warm,
                    (long long)o->runs, o->time_s);
            int mr = measure(o, ctx, &b, warm, r);
            warm = o->warmup_s < 0.2 ? o->warmup_s : 0.2;
            if (mr < 0) {
                io_free(&b);
                icc_context_destroy(ctx);
                goto out;
            }
            if (!o->json && o->sc != SC_SERVER)
                print_row(r, nrows == 0);
            nrows++;
            if (o->sc == SC_SERVER) {
                icc_bench_stats ss = {0};
                double qps = 0, best = 0;
                int ok = 0;
                if (o->rate) {
                    ok = serve(ctx, &b, o->rate, o->queries, &ss, &qps);
                    if (ok == 0 && !o->json)
                        printf("server at %.1f queries/s (%lld queries, threads %lld, batch %lld): p50 %.3f ms, "
                               "p90 %.3f ms, p99 %.3f ms, max %.3f ms, achieved %.1f queries/s\n", o->rate,
                               (long long)o->queries, (long long)r->threads, (long long)r->batch, ss.p50, ss.p90,
                               ss.p99, ss.max, qps);
                }
                icc_bench_stats bs = {0};
                if (ok == 0 && o->p99_bound) {
                    /* the rate lies below what back-to-back runs sustain:
                     * bisect (0, 1/mean) on p99 <= bound */
                    double lo = 0, hi = r->s.mean > 0 ? 1e3 / r->s.mean : 1;
                    for (int it = 0; it < 8 && ok == 0; it++) {
                        double mid = (lo + hi) / 2, q;
                        icc_bench_stats t;
                        progress("server search, %.1f queries/s", mid);
                        if ((ok = serve(ctx, &b, mid, o->queries, &t, &q)) == 0 && t.p99 <= o->p99_bound) {
                            lo = mid;
                            bs = t;
                        } else {
                            hi = mid;
                        }
                    }
                    best = lo;
                    if (ok == 0 && !o->json) {
                        if (best > 0)
                            printf("server: highest rate with p99 <= %.3f ms: %.1f queries/s (p99 %.3f ms)\n",
                                   o->p99_bound, best, bs.p99);
                        else
                            printf("server: no rate keeps p99 <= %.3f ms (one run alone takes p99 %.3f ms)\n",
                                   o->p99_bound, r->s.p99);
                    }
                }
                if (ok == 0 && o->json) {
                    printf("{\"model\": ");
                    json_str(stdout, o->model);
                    printf(", \"scenario\": \"server\", \"threads\": %lld, \"batch\": %lld, \"queries\": %lld",
                           (long long)r->threads, (long long)r->batch, (long long)o->queries);
                    if (o->rate)
                        printf(", \"rate\": %.3f, \"achieved_qps\": %.3f, \"p50_ms\": %.6f, \"p90_ms\": %.6f, "
                               "\"p99_ms\": %.6f, \"max_ms\": %.6f", o->rate, qps, ss.p50, ss.p90, ss.p99, ss.max);
                    if (o->p99_bound)
                        printf(", \"p99_bound_ms\": %.6f, \"max_rate_under_bound\": %.3f", o->p99_bound, best);
                    printf("}\n");
                }
                if (ok) {
                    io_free(&b);
                    icc_context_destroy(ctx);
                    goto out;
                }
            }
            io_free(&b);
        }
        icc_context_destroy(ctx);
    }
    if (o->sc != SC_SERVER) {
        /* the scenario's headline: single-stream p90, offline the best throughput */
        int best = 0;
        for (int i = 1; i < nrows; i++)
            if (o->sc == SC_OFFLINE
                    ? rows[i].s.mean * (double)rows[best].batch < rows[best].s.mean * (double)rows[i].batch
                    : rows[i].s.p90 < rows[best].s.p90)
                best = i;
        const row *h = &rows[best];
        double ips = h->s.mean > 0 ? 1e3 / h->s.mean * (double)h->batch : 0;
        if (o->json) {
            printf("{\"model\": ");
            json_str(stdout, o->model);
            printf(", \"scenario\": \"%s\", \"results\": [", o->sc == SC_OFFLINE ? "offline" : "single-stream");
            for (int i = 0; i < nrows; i++) {
                printf(i ? ", " : "");
                json_row(stdout, &rows[i]);
            }
            printf("]}\n");
        } else if (o->sc == SC_OFFLINE) {
            printf("offline: %.1f items/s (threads %lld, batch %lld)\n", ips, (long long)h->threads,
                   (long long)h->batch);
        } else {
            printf("single-stream: p90 %.3f ms (threads %lld, batch %lld)\n", h->s.p90, (long long)h->threads,
                   (long long)h->batch);
        }
        if (o->plot && plot(o, rows, nrows, tmp) != 0)
            goto out;
    }
    rc = 0;
out:
    icc_model_close(m);
    return rc;
}

static void rm_tree(const char *dir)
{
    const char *names[] = {"model.so", "model.h", "model.weights", "plot.dat", "plot.gp"};
    char p[4200];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

int icc_bench_main(int argc, char **argv, const char *self)
{
    bopts o;
    if (parse(argc, argv, &o) != 0)
        return 1;
    if (o.peak)
        return cmd_peak(&o);
    if (o.plot && !o.nbatch)
        return icc_fail("--plot draws the --batch sweep: give --batch=1,2,4,...");
    char tmp[] = "/tmp/icc-bench-XXXXXX";
    if (!mkdtemp(tmp))
        return icc_fail("cannot make a temporary folder: %s", strerror(errno));
    char so[4200];
    size_t len = strlen(o.model);
    int rc;
    if (len > 3 && !strcmp(o.model + len - 3, ".so")) {
        snprintf(so, sizeof so, "%s", o.model);
        rc = bench_model(&o, so, tmp);
    } else {
        snprintf(so, sizeof so, "%s/model.so", tmp);
        rc = compile_first(&o, self, so);
        if (rc == 0)
            rc = bench_model(&o, so, tmp);
    }
    rm_tree(tmp);
    return rc;
}
