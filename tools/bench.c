/* bench.c - `icc bench`: how fast a compiled model runs, measured through
 * the public runtime API (include/icc/runtime.h), as an app would run it.
 *
 *   icc bench MODEL.so|MODEL.onnx [--threads=1,2] [--batch=1,2,4,...] [--runs=N]
 *             [--time=S] [--warmup=S] [--scenario=single-stream|offline|server]
 *             [--rate=QPS] [--p99-bound=MS] [--queries=N] [--json] [--plot=FILE.png]
 *             [--profile]
 *   icc bench A B [C ...] [--threads=T] [--runs=N] [--time=S] [--json]
 *   icc bench DECODER.so|.onnx --generate=N [--prompt-len=P] [--prefill=MODEL] [--gen-io=SPEC]
 *   icc bench --peak [--quick] [--json]
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
 *
 * --profile compiles with `icc --profile` and prints, per kernel, its median
 * time over the timed runs (the first 4096: a run another tenant slowed
 * moves a mean, not a median) and where it stands on the roofline of the peaks
 * --peak measured (cached); --generate runs a decoder's prefill and decode
 * loop (tools/generate.c). docs/performance.md has the details.
 */
#define _GNU_SOURCE
#include "tools/bench.h"
#include "tools/fail.h"

#include "icc/runtime.h"
#include "ir/target_probe.h"
#include "runtime/cpu.h"
#include "runtime/npy.h"

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

enum { MAX_LIST = 32, MAX_IO = 256, MAX_PASS = 64, MAX_DIMS = 16, MAX_CMP = 8 };

static const char *const level_names[ICC_BENCH_LEVELS] = {"L1", "L2", "L3", "DRAM"};

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

int icc_bench_paired(const double *a, const double *b, int64_t n, icc_bench_ratio *out)
{
    *out = (icc_bench_ratio){0};
    if (n <= 0)
        return 0;
    double *q = malloc(sizeof *q * (size_t)n), faster = 0;
    if (!q)
        return -1;
    for (int64_t r = 0; r < n; r++) {
        if (!(a[r] > 0) || !(b[r] > 0)) {
            free(q);
            return -1;
        }
        q[r] = b[r] / a[r];
        faster += b[r] < a[r] ? 1 : b[r] == a[r] ? 0.5 : 0;
    }
    qsort(q, (size_t)n, sizeof *q, cmp_double);
    *out = (icc_bench_ratio){icc_bench_percentile(q, n, 50), icc_bench_percentile(q, n, 25),
                             icc_bench_percentile(q, n, 75), faster / (double)n};
    free(q);
    return 0;
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
    const char *models[MAX_CMP];    /* model is models[0]; more than one: compared in turns */
    int nmodels;
    int64_t threads[MAX_LIST], batch[MAX_LIST];
    int nthreads, nbatch;
    const char *dims[MAX_DIMS];
    int ndims;
    const char *inputs[MAX_IO];     /* --input=NAME=FILE.npy: values instead of the pattern */
    ir_tensor input_vals[MAX_IO];   /* ... each file's tensor, read once (read_inputs) */
    int ninputs;
    int64_t runs, queries;
    double time_s, warmup_s, rate, p99_bound;
    scenario sc;
    bool json, peak, profile, quick;
    int64_t generate, prompt_len;   /* --generate=N, --prompt-len=P */
    bool prompt_set, runs_set;
    const char *prefill, *gen_io;   /* --prefill=MODEL, --gen-io=SPEC */
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

static bool ends_with_so(const char *s)
{
    size_t n = strlen(s);
    return n > 3 && !strcmp(s + n - 3, ".so");
}

static int parse(int argc, char **argv, bopts *o)
{
    *o = (bopts){.runs = 20, .queries = 200, .time_s = 1.0, .warmup_s = 2.0, .prompt_len = 16};
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
        } else if (!strncmp(s, "--input=", 8)) {
            if (o->ninputs == MAX_IO || !strchr(s + 8, '='))
                return icc_fail("%s: expected --input=NAME=FILE.npy (at most %d)", s, MAX_IO);
            o->inputs[o->ninputs++] = s + 8;
        } else if (!strncmp(s, "--name=", 7)) {
            o->name = s + 7;
        } else if (!strncmp(s, "--plot=", 7)) {
            o->plot = s + 7;
        } else if (!strcmp(s, "--json")) {
            o->json = true;
        } else if (!strcmp(s, "--peak")) {
            o->peak = true;
        } else if (!strcmp(s, "--profile")) {
            o->profile = true;
        } else if (!strcmp(s, "--quick")) {
            o->quick = true;
        } else if (!strncmp(s, "--prefill=", 10)) {
            o->prefill = s + 10;
        } else if (!strncmp(s, "--gen-io=", 9)) {
            o->gen_io = s + 9;
        } else if (num_opt(s, "--generate=", &x) || num_opt(s, "--prompt-len=", &x)) {
            if (x < 1 || x > 4000 || x != floor(x))
                return icc_fail("%s: expected a whole number of tokens from 1 to 4000", s);
            *(s[2] == 'g' ? &o->generate : &o->prompt_len) = (int64_t)x;
            o->prompt_set |= s[2] == 'p';
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
            o->runs_set |= s[2] == 'r';
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
        } else if (o->nmodels < MAX_CMP) {
            o->models[o->nmodels++] = s;
            o->model = o->models[0];
        } else {
            return icc_fail("bench: more than %d models to compare ('%s')", MAX_CMP, s);
        }
    }
    if (o->nmodels > 1 && (o->peak || o->profile || o->generate || o->nbatch || o->plot || o->sc != SC_SINGLE ||
                           o->nthreads > 1))
        return icc_fail("bench: comparing %d models runs them in turns at one thread count and batch: not with "
                        "--peak, --profile, --generate, --batch, --plot, --scenario or a --threads list",
                        o->nmodels);
    if (o->peak && o->model)
        return icc_fail("bench --peak measures the machine: it takes no model");
    if (!o->peak && !o->model)
        return icc_fail("usage: icc bench MODEL.so|MODEL.onnx [options] (see icc --help), or icc bench --peak");
    if (o->sc == SC_SERVER && !o->rate && !o->p99_bound)
        return icc_fail("--scenario=server needs --rate=QPS and/or --p99-bound=MS");
    if (!o->generate && (o->prompt_set || o->prefill || o->gen_io))
        return icc_fail("--prompt-len, --prefill and --gen-io belong to --generate=N");
    if (o->generate && (o->profile || o->nbatch || o->sc != SC_SINGLE || o->plot || o->peak))
        return icc_fail("--generate times a decoding loop: not with --profile, --batch, --scenario, --plot or --peak");
    if (o->quick && !o->peak)
        return icc_fail("--quick belongs to --peak (a measurement of about a second)");
    if (o->profile && (o->peak || o->sc == SC_SERVER))
        return icc_fail("--profile times the kernels of a single-stream or offline run (not --peak or server)");
    if (o->sc != SC_SERVER && (o->rate || o->p99_bound))
        return icc_fail("--rate and --p99-bound belong to --scenario=server");
    if (o->sc == SC_SERVER && (o->nbatch > 1 || o->nthreads > 1))
        return icc_fail("--scenario=server runs one thread count and one batch");
    for (int i = 0; i < o->nmodels && o->npass; i++)
        if (ends_with_so(o->models[i]))
            return icc_fail("%s: unknown option for a compiled model (options for the compiler need an .onnx)",
                            o->pass[0]);
    return 0;
}

/* ---- compiling an .onnx first --------------------------------------------- */

/* Runs `self MODEL pass... -o dir/model.so`; the compiler prints its own
 * error. 0 on success. */
static int compile_first(const bopts *o, const char *self, const char *model, const char *so)
{
    const char *av[MAX_PASS + 8];
    int n = 0;
    av[n++] = self;
    av[n++] = model;
    for (int i = 0; i < o->npass; i++)
        av[n++] = o->pass[i];
    if (o->profile)
        av[n++] = "--profile";
    if (o->name) {
        static char nm[512];
        snprintf(nm, sizeof nm, "--name=%s", o->name);
        av[n++] = nm;
    }
    av[n++] = "-o";
    av[n++] = so;
    av[n] = NULL;
    progress("compiling %s", model);
    pid_t pid;
    int st;
    if (posix_spawn(&pid, self, NULL, NULL, (char *const *)av, environ) != 0)
        return icc_fail("cannot run %s to compile %s: %s", self, model, strerror(errno));
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

/* The --input=NAME=FILE.npy that names input t: its index, or -1. */
static int input_of(const bopts *o, const icc_tensor_desc *t)
{
    for (int j = 0; j < o->ninputs; j++) {
        const char *eq = strchr(o->inputs[j], '=');
        if (strlen(t->name) == (size_t)(eq - o->inputs[j]) && !strncmp(t->name, o->inputs[j], strlen(t->name)))
            return j;
    }
    return -1;
}

/* Input t's values from --input=NAME=FILE.npy (into buf of n elements):
 * the file's elements, as many as the input's dims give, or one repeated
 * (a VAD's sample rate, whatever the batch); 1 if no file names t, 0 when
 * filled, -1 on an error (printed). */
static int input_file(const bopts *o, const icc_tensor_desc *t, void *buf, int64_t n)
{
    int j = input_of(o, t);
    if (j < 0)
        return 1;
    const ir_tensor v = o->input_vals[j];
    size_t w = icc_dtype_size(t->dtype);
    if (ir_dtype_to_onnx(v.dtype) != t->dtype)
        return -icc_fail("--input=%s: input '%s' wants another dtype than the file's %s", o->inputs[j], t->name,
                         ir_dtype_name(v.dtype));
    if (v.numel != n && v.numel != 1)
        return -icc_fail("--input=%s: %lld elements, input '%s' has %lld here (or give one, repeated)",
                         o->inputs[j], (long long)v.numel, t->name, (long long)n);
    for (int64_t i = 0; i < n; i++)
        memcpy((char *)buf + (size_t)i * w, (const char *)v.data + (v.numel == 1 ? 0 : (size_t)i * w), w);
    return 0;
}

/* Dim k of the --input file that names input t, when it holds t's rank
 * (more than one element): *v; false otherwise. */
static bool input_file_dim(const bopts *o, const icc_tensor_desc *t, int k, int64_t *v)
{
    int j = input_of(o, t);
    const ir_tensor *f = j >= 0 ? &o->input_vals[j] : NULL;
    if (!f || f->rank != t->rank || f->numel == 1)
        return false;
    *v = f->dims[k];
    return true;
}

/* Inputs for batch (the batch symbol at that value, others from --dim, else
 * from the --input file of that input, else 1) and outputs of the dims they
 * give. */
static int io_make(const bopts *o, icc_model *m, const char *bsym, int64_t batch, io *b)
{
    const icc_model_desc *d = icc_model_describe(m);
    memset(b, 0, sizeof *b);
    if (d->ninputs > MAX_IO || d->noutputs > MAX_IO)
        return icc_fail("%s: more than %d inputs or outputs", o->model, MAX_IO);
    for (int j = 0; j < o->ninputs; j++) {
        size_t len = (size_t)(strchr(o->inputs[j], '=') - o->inputs[j]);
        bool named = false;
        for (int i = 0; i < d->ninputs && !named; i++)
            named = strlen(d->inputs[i].name) == len && !strncmp(d->inputs[i].name, o->inputs[j], len);
        if (!named)
            return icc_fail("--input=%s: %s has no input named '%.*s'", o->inputs[j], o->model, (int)len,
                            o->inputs[j]);
    }
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
                else
                    input_file_dim(o, t, k, &v);
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
        int f = input_file(o, t, b->in[i], n);
        if (f < 0)
            return -1;
        if (f > 0)
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
    return st == ICC_OK ? 0 : -icc_fail("%s", icc_context_error(ctx));   /* -1: measure checks < 0 */
}

typedef struct row {
    int64_t threads, batch;
    icc_bench_stats s;
    icc_bench_kernel *prof;    /* --profile: nprof kernels, owned by bench_model */
    int nprof;
    icc_bench_roof roof;
    uint64_t *kmed;            /* --profile: each kernel's median ns over the timed runs */
} row;

enum { PROF_SAMPLES = 4096 };  /* runs whose per-kernel times --profile keeps for medians */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* r->kmed[k]: the median of kernel k's time over the first runs of dl
 * (ns per run, nk a run), so that a run another tenant slowed does not
 * move it as it moves the mean. */
static int kernel_medians(const uint64_t *dl, int64_t runs, int nk, row *r)
{
    uint64_t *col = malloc(sizeof *col * (size_t)(runs ? runs : 1));
    if (!col || !(r->kmed = calloc((size_t)(nk ? nk : 1), sizeof *r->kmed))) {
        free(col);
        return -icc_fail("out of memory");
    }
    for (int k = 0; k < nk && runs; k++) {
        for (int64_t i = 0; i < runs; i++)
            col[i] = dl[i * nk + k];
        qsort(col, (size_t)runs, sizeof *col, cmp_u64);
        r->kmed[k] = col[runs / 2];
    }
    free(col);
    return 0;
}

/* Warm-up, then at least runs runs and time_s seconds: the stats in r
 * (and with nk profiled kernels, their medians). */
static int measure(const bopts *o, icc_context *ctx, io *b, double warmup, int nk, row *r)
{
    double sec, end = now_s() + warmup;
    do {
        if (run_once(ctx, b, &sec) < 0)
            return -1;
    } while (now_s() < end);
    icc_context_profile_reset(ctx);   /* the profile covers the timed runs alone */
    int64_t cap = 1024, n = 0, kept = 0;
    double *ms = malloc(sizeof *ms * (size_t)cap);
    uint64_t *prev = nk > 0 ? calloc((size_t)nk, sizeof *prev) : NULL;
    uint64_t *dl = nk > 0 ? malloc(sizeof *dl * (size_t)nk * PROF_SAMPLES) : NULL;
    if (!ms || (nk > 0 && (!prev || !dl))) {
        free(ms), free(prev), free(dl);
        return -icc_fail("out of memory");
    }
    double t_end = now_s() + o->time_s;
    while (n < o->runs || (now_s() < t_end && n < 10000000)) {
        if (run_once(ctx, b, &sec) < 0) {
            free(ms), free(prev), free(dl);
            return -1;
        }
        uint64_t runs;
        const uint64_t *ns = nk > 0 ? icc_context_profile(ctx, &runs) : NULL;
        for (int k = 0; ns && kept < PROF_SAMPLES && k < nk; k++)
            dl[kept * nk + k] = ns[k] - prev[k];
        for (int k = 0; ns && k < nk; k++)
            prev[k] = ns[k];
        kept += ns && kept < PROF_SAMPLES;
        if (n == cap) {
            double *nm = realloc(ms, sizeof *ms * (size_t)(cap *= 2));
            if (!nm) {
                free(ms);
                return -icc_fail("out of memory");
            }
            ms = nm;
        }
        ms[n++] = sec * 1e3;
    }
    icc_bench_stats_of(ms, n, &r->s);
    free(ms);
    int rc = nk > 0 ? kernel_medians(dl, kept, nk, r) : 0;
    free(prev), free(dl);
    return rc;
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
            "\"items_per_s\": %.3f", (long long)r->threads, (long long)r->batch, (long long)r->s.n, r->s.p50, r->s.p90,
            r->s.p99, r->s.mean, r->s.min, r->s.max, ips, ips * (double)r->batch);
    if (r->prof) {
        fputs(", \"profile\": ", f);
        icc_bench_profile_json(f, r->prof, r->nprof, r->s.p50, &r->roof);
    }
    fputc('}', f);
}

/* ---- the per-kernel profile (--profile) ---------------------------------------- */

/* The number after "key": inside the object "obj" (NULL: anywhere). */
static bool json_number(const char *text, const char *obj, const char *key, double *out)
{
    char pat[64];
    if (obj) {
        snprintf(pat, sizeof pat, "\"%s\":", obj);
        if (!(text = strstr(text, pat)))
            return false;
    }
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *at = strstr(text, pat), *close = obj ? strchr(text, '}') : NULL;
    if (!at || (close && at > close))
        return false;
    char *end;
    *out = strtod(at + strlen(pat), &end);
    return end != at + strlen(pat) && *out > 0 && !isinf(*out);
}

int icc_bench_peak_parse(const char *json, icc_bench_peak *p)
{
    double cores;
    memset(p, 0, sizeof *p);
    if (!json_number(json, NULL, "cores", &cores) || !json_number(json, NULL, "fma_gflops_per_core", &p->gflops_core) ||
        !json_number(json, NULL, "fma_gflops_all_cores", &p->gflops_all))
        return -1;
    p->cores = (int)cores;
    for (int i = 0; i < ICC_BENCH_LEVELS; i++)
        if (!json_number(json, "read_gbs_per_core", level_names[i], &p->read_core[i]) ||
            !json_number(json, "read_gbs_all_cores", level_names[i], &p->read_all[i]))
            return -1;
    /* optional (null or absent: 0) */
    if (!json_number(json, NULL, "int8_gops_vnni", &p->int8_core) ||
        !json_number(json, NULL, "int8_gops_vnni_all_cores", &p->int8_all))
        p->int8_core = p->int8_all = 0;
    if (!json_number(json, NULL, "bf16_gflops", &p->bf16_core) ||
        !json_number(json, NULL, "bf16_gflops_all_cores", &p->bf16_all))
        p->bf16_core = p->bf16_all = 0;
    if (!json_number(json, NULL, "int8_gops_amx", &p->amx_int8_core) ||
        !json_number(json, NULL, "int8_gops_amx_all_cores", &p->amx_int8_all))
        p->amx_int8_core = p->amx_int8_all = 0;
    if (!json_number(json, NULL, "bf16_gflops_amx", &p->amx_bf16_core) ||
        !json_number(json, NULL, "bf16_gflops_amx_all_cores", &p->amx_bf16_all))
        p->amx_bf16_core = p->amx_bf16_all = 0;
    return 0;
}

const char *icc_bench_kind_name(int kind)
{
    static const char *const names[ICC_BENCH_KINDS] = {
        [ICC_KERNEL_F32] = "f32", [ICC_KERNEL_BF16_DOT] = "bf16", [ICC_KERNEL_INT8_DOT] = "i8",
        [ICC_KERNEL_AMX_BF16] = "amx-bf16", [ICC_KERNEL_AMX_INT8] = "amx-i8",
    };
    return kind >= 0 && kind < ICC_BENCH_KINDS ? names[kind] : names[ICC_KERNEL_F32];
}

/* One core's peak times threads, at most all cores'. */
static double scaled(double core, double all, int threads)
{
    double g = core * (threads < 1 ? 1 : threads);
    return threads > 1 && g > all ? all : g;
}

void icc_bench_roofs(const icc_bench_peak *p, int threads, icc_bench_roof *r)
{
    /* per kind: its peak, and the kind it falls back to when that is absent */
    const struct { double core, all; int fallback; } k[ICC_BENCH_KINDS] = {
        [ICC_KERNEL_F32] = {p->gflops_core, p->gflops_all, ICC_KERNEL_F32},
        [ICC_KERNEL_BF16_DOT] = {p->bf16_core, p->bf16_all, ICC_KERNEL_F32},
        [ICC_KERNEL_INT8_DOT] = {p->int8_core, p->int8_all, ICC_KERNEL_F32},
        [ICC_KERNEL_AMX_BF16] = {p->amx_bf16_core, p->amx_bf16_all, ICC_KERNEL_BF16_DOT},
        [ICC_KERNEL_AMX_INT8] = {p->amx_int8_core, p->amx_int8_all, ICC_KERNEL_INT8_DOT},
    };
    for (int i = 0; i < ICC_BENCH_KINDS; i++) {
        int j = i;
        while (j != ICC_KERNEL_F32 && !(k[j].core > 0 && k[j].all > 0))
            j = k[j].fallback;
        r->gflops[i] = scaled(k[j].core, k[j].all, threads);
        r->peak_of[i] = j;
    }
    r->gbs = threads > 1 ? p->read_all[ICC_BENCH_DRAM] : p->read_core[ICC_BENCH_DRAM];
}

void icc_bench_roofs_text(char *buf, size_t len, const icc_bench_kernel *rows, int n, const icc_bench_roof *roof)
{
    static const char *const full[ICC_BENCH_KINDS] = {"FP32's", "bf16's", "int8's", "AMX bf16's", "AMX int8's"};
    size_t at = (size_t)snprintf(buf, len, "%.1f GFLOP/s", roof->gflops[ICC_KERNEL_F32]);
    bool first = true;
    for (int k = ICC_KERNEL_F32 + 1; k < ICC_BENCH_KINDS && at < len; k++) {
        bool used = false;
        for (int i = 0; i < n && !used; i++)
            used = rows[i].kind == k;
        if (!used)
            continue;
        at += (size_t)snprintf(buf + at, len - at, "%s%s %.1f", first ? " (" : ", ", icc_bench_kind_name(k),
                               roof->gflops[k]);
        if (at < len && roof->peak_of[k] != k)
            at += (size_t)snprintf(buf + at, len - at, " (%s)", full[roof->peak_of[k]]);
        first = false;
    }
    if (!first && at < len)
        snprintf(buf + at, len - at, ")");
}

static int cmp_kernel(const void *a, const void *b)
{
    const icc_bench_kernel *x = a, *y = b;
    return x->us != y->us ? (x->us < y->us ? 1 : -1) : x->index - y->index;
}

void icc_bench_profile_rows(const icc_kernel_info *k, const int *kinds, const uint64_t *ns, int n, uint64_t runs,
                            const icc_bench_roof *roof, icc_bench_kernel *rows)
{
    double total = 0, per = runs ? 1.0 / (double)runs : 0, peak_gbs = roof->gbs;
    for (int i = 0; i < n; i++)
        total += (double)ns[i];
    for (int i = 0; i < n; i++) {
        icc_bench_kernel *r = &rows[i];
        double sec = (double)ns[i] * per * 1e-9;
        int kind = kinds && kinds[i] >= 0 && kinds[i] < ICC_BENCH_KINDS ? kinds[i] : ICC_KERNEL_F32;
        double peak_gflops = roof->gflops[kind], ridge = peak_gbs > 0 ? peak_gflops / peak_gbs : 0;
        *r = (icc_bench_kernel){.index = i, .name = k[i].name, .ops = k[i].ops, .us = sec * 1e6, .calls = -1,
                                .share = total > 0 ? (double)ns[i] / total * 100 : 0, .kind = kind,
                                .flops = (double)k[i].flops, .bytes = (double)k[i].bytes,
                                .peak_gflops = peak_gflops};
        r->gflops = sec > 0 ? r->flops / sec / 1e9 : 0;
        r->gbs = sec > 0 ? r->bytes / sec / 1e9 : 0;
        r->intensity = r->bytes > 0 ? r->flops / r->bytes : 0;
        /* no bytes but FLOPs: all in registers, compute-bound; no FLOPs: data movement */
        r->compute_bound = r->flops > 0 && (r->bytes == 0 || r->intensity >= ridge);
        double roof = r->flops > 0 ? (r->bytes > 0 && r->intensity * peak_gbs < peak_gflops ? r->intensity * peak_gbs
                                                                                              : peak_gflops)
                                   : 0;
        r->roof_pct = r->flops > 0 ? (roof > 0 ? r->gflops / roof * 100 : 0)
                                   : (peak_gbs > 0 ? r->gbs / peak_gbs * 100 : 0);
    }
    qsort(rows, (size_t)n, sizeof *rows, cmp_kernel);
}

void icc_bench_profile_table(FILE *f, const icc_bench_kernel *rows, int n, double run_ms)
{
    fprintf(f, "%10s %6s %10s %10s %8s %8s %7s %-7s %5s %-8s %-22s %s\n", "us/run", "share", "MFLOP", "KB", "GFLOP/s",
            "GB/s", "FLOP/B", "bound", "roof", "kind", "ops", "kernel");
    double us = 0, fl = 0, by = 0;
    for (int i = 0; i < n; i++) {
        const icc_bench_kernel *r = &rows[i];
        /* a kernel that does not run once per run (in a loop body, in an
         * If's branch) says how often it ran */
        char calls[48] = "";
        if (r->calls >= 0 && r->calls != 1)
            snprintf(calls, sizeof calls, " (%.3g calls/run)", r->calls);
        fprintf(f, "%10.2f %5.1f%% %10.3f %10.1f %8.2f %8.2f %7.2f %-7s %4.0f%% %-8s %-22.60s %.80s%s\n", r->us,
                r->share, r->flops / 1e6, r->bytes / 1e3, r->gflops, r->gbs, r->intensity,
                r->compute_bound ? "compute" : "memory", r->roof_pct, icc_bench_kind_name(r->kind), r->ops, r->name,
                calls);
        us += r->us, fl += r->flops, by += r->bytes;
    }
    double sec = us * 1e-6;
    fprintf(f, "%10.2f %5.1f%% %10.3f %10.1f %8.2f %8.2f %7.2f %-7s %5s %-8s total of %d kernel%s; a run takes "
            "%.2f us (p50), %.2f us of it outside kernels (each kernel's median)\n", us, n ? 100.0 : 0.0, fl / 1e6, by / 1e3, sec > 0 ? fl / sec / 1e9 : 0,
            sec > 0 ? by / sec / 1e9 : 0, by > 0 ? fl / by : 0, "", "", "", n, n == 1 ? "" : "s", run_ms * 1e3,
            run_ms * 1e3 - us);
}

void icc_bench_profile_json(FILE *f, const icc_bench_kernel *rows, int n, double run_ms, const icc_bench_roof *roof)
{
    double us = 0;
    for (int i = 0; i < n; i++)
        us += rows[i].us;
    /* peak_gflops: FP32's, as before the kinds; peaks_gflops: each kind's
     * roof, and peak_of whose peak that is (a fallback when its own is
     * absent) */
    fprintf(f, "{\"peak_gflops\": %.3f, \"peak_gbs\": %.3f, \"peaks_gflops\": {", roof->gflops[ICC_KERNEL_F32],
            roof->gbs);
    for (int k = 0; k < ICC_BENCH_KINDS; k++)
        fprintf(f, "%s\"%s\": %.3f", k ? ", " : "", icc_bench_kind_name(k), roof->gflops[k]);
    fputs("}, \"peak_of\": {", f);
    for (int k = 0; k < ICC_BENCH_KINDS; k++)
        fprintf(f, "%s\"%s\": \"%s\"", k ? ", " : "", icc_bench_kind_name(k), icc_bench_kind_name(roof->peak_of[k]));
    fprintf(f, "}, \"kernels_us\": %.4f, \"run_mean_us\": %.4f, \"kernels\": [", us, run_ms * 1e3);
    for (int i = 0; i < n; i++) {
        const icc_bench_kernel *r = &rows[i];
        fprintf(f, "%s{\"index\": %d, \"name\": ", i ? ", " : "", r->index);
        json_str(f, r->name);
        fputs(", \"ops\": ", f);
        json_str(f, r->ops);
        fprintf(f, ", \"kind\": \"%s\", \"peak_gflops\": %.3f", icc_bench_kind_name(r->kind), r->peak_gflops);
        fprintf(f, ", \"us\": %.4f, \"share\": %.4f, \"flops\": %.0f, \"bytes\": %.0f, \"gflops\": %.4f, "
                "\"gbs\": %.4f, \"intensity\": %.4f, \"bound\": \"%s\", \"roof_pct\": %.2f", r->us, r->share,
                r->flops, r->bytes, r->gflops, r->gbs, r->intensity, r->compute_bound ? "compute" : "memory",
                r->roof_pct);
        if (r->calls >= 0)
            fprintf(f, ", \"calls\": %.4f", r->calls);
        fputc('}', f);
    }
    fputs("]}", f);
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

/* vpdpbusd chains (16 lanes x 4 byte pairs per instruction), as
 * independent as the FMA ones (AVX-512's FMA and vdpbf16ps chains are
 * ir/target_probe.c's, which the compiler also runs briefly). */
__attribute__((target("avx512f,avx512vnni"))) static double vnni_avx512(int64_t iters)
{
    /* each lane adds 1*1 + 1*(-1) + 1*1 + 1*(-1) = 0: the sums stay put
     * (no i32 overflow however long it runs), the hardware does the work */
    __m512i a[16], b = _mm512_set1_epi32(0x01010101), c = _mm512_set1_epi32((int)0xff01ff01u);
    for (int i = 0; i < 16; i++)
        a[i] = _mm512_set1_epi32(i);
    for (int64_t k = 0; k < iters; k++) {
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++)
            a[i] = _mm512_dpbusd_epi32(a[i], b, c);
    }
    __m512i s = a[0];
    for (int i = 1; i < 16; i++)
        s = _mm512_add_epi32(s, a[i]);
    return (double)_mm512_reduce_add_epi32(s);
}

/* AMX: four independent accumulator tiles (the product's latency is
 * several times its issue interval), each step one tdpbf16ps (16 x 16 f32
 * sums of 16 pairs: 16384 FLOP) or tdpbssd (16 x 16 i32 sums of 16
 * quads: 32768 ops) into each from the same operand tiles, which stay in
 * the registers. Needs the OS's permission for tile data (amx_permit). */
static const unsigned char amx_cfg[64] __attribute__((aligned(64))) = {
    [0] = 1,                                                      /* palette 1 */
    [16] = 64, [18] = 64, [20] = 64, [22] = 64, [24] = 64, [26] = 64, /* colsb of tiles 0..5 */
    [48] = 16, [49] = 16, [50] = 16, [51] = 16, [52] = 16, [53] = 16, /* their rows */
};

__attribute__((target("amx-tile,amx-bf16,amx-int8"))) static double amx_dots(int64_t iters, bool bf16)
{
    static const unsigned char operand[16 * 64] __attribute__((aligned(64))) = {0};
    _tile_loadconfig(amx_cfg);
    _tile_zero(0); /* the tile numbers are immediates */
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, operand, 64);
    _tile_loadd(5, operand, 64);
    if (bf16)
        for (int64_t k = 0; k < iters; k++) {
            _tile_dpbf16ps(0, 4, 5);
            _tile_dpbf16ps(1, 4, 5);
            _tile_dpbf16ps(2, 4, 5);
            _tile_dpbf16ps(3, 4, 5);
        }
    else
        for (int64_t k = 0; k < iters; k++) {
            _tile_dpbssd(0, 4, 5);
            _tile_dpbssd(1, 4, 5);
            _tile_dpbssd(2, 4, 5);
            _tile_dpbssd(3, 4, 5);
        }
    float out[16 * 16];
    _tile_stored(0, out, 64);
    _tile_release();
    return (double)out[0];
}

/* Whether this process may use AMX tiles: the CPU has them and the OS
 * grants their state (icc_cpu_enable, as a library that uses them does). */
static bool amx_permit(const char *unit)
{
    return icc_cpu_has("amx-tile") && icc_cpu_has(unit) && icc_cpu_enable("amx-tile") == 0;
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
    int kind;          /* 0: AVX2 FMA, 1: AVX-512 FMA, 2: reads of p[0..n) reps times, 3: VNNI, 4: BF16 dots,
                          5: AMX-BF16, 6: AMX-INT8 */
    int64_t iters;
    const float *p;
    int64_t n, reps;
    volatile double sink;   /* keeps the work */
} peak_job;

static void *peak_thread(void *arg)
{
    peak_job *j = arg;
#if defined(__x86_64__)
    j->sink = j->kind >= 5   ? amx_dots(j->iters, j->kind == 5)
              : j->kind == 4 ? icc_probe_bf16_avx512(j->iters)
              : j->kind == 3 ? vnni_avx512(j->iters)
              : j->kind == 2 ? read_avx2(j->p, j->n, j->reps)
              : j->kind      ? icc_probe_fma_avx512(j->iters)
                             : fma_avx2(j->iters);
#endif
    return NULL;
}

/* Runs j[0..nthreads) at once (j[0] on this thread); returns the wall
 * seconds and the count that ran in *started. */
static double run_jobs(peak_job *j, int nthreads, int *started)
{
    pthread_t t[256];
    double t0 = now_s();
    *started = 1;
    for (int i = 1; i < nthreads; i++) {
        if (pthread_create(&t[i], NULL, peak_thread, &j[i]) != 0)
            break;
        *started = i + 1;
    }
    peak_thread(&j[0]);
    for (int i = 1; i < *started; i++)
        pthread_join(t[i], NULL);
    return now_s() - t0;
}

/* GFLOP/s of kind on nthreads threads (each iters iterations). */
static double fma_gflops(int kind, int nthreads, int64_t iters)
{
    peak_job j[256];
    nthreads = nthreads > 256 ? 256 : nthreads;
    for (int i = 0; i < nthreads; i++)
        j[i] = (peak_job){.kind = kind, .iters = iters};
    int started;
    double sec = run_jobs(j, nthreads, &started);
    /* accumulators x lanes x (mul + add) x the pairs each lane sums */
    double per = kind == 6 ? 4 * 32768.0 : kind == 5 ? 4 * 16384.0 : kind == 3 ? 16.0 * 16 * 2 * 4
               : kind == 4 ? 16.0 * 16 * 2 * 2 : kind ? 16.0 * 16 * 2 : 12.0 * 8 * 2;
    return (double)started * (double)iters * per / sec / 1e9;
}

/* Read GB/s of nthreads threads, each over its own `bytes` of buf
 * (nthreads x bytes long), about `total` bytes each; best of `tries`. */
static double read_gbs(const float *buf, int nthreads, int64_t bytes, double total, int tries)
{
    peak_job j[256];
    nthreads = nthreads > 256 ? 256 : nthreads;
    int64_t n = bytes / 4 / 64 * 64, reps = (int64_t)(total / (double)bytes) + 1;
    double best = 0;
    for (int rep = -1; rep < tries; rep++) {   /* -1: a short warm-up, the lines come in */
        for (int i = 0; i < nthreads; i++)
            j[i] = (peak_job){.kind = 2, .p = buf + (size_t)i * (size_t)n, .n = n, .reps = rep < 0 ? reps / 8 + 1 : reps};
        int started;
        double sec = run_jobs(j, nthreads, &started);
        double gbs = (double)started * (double)n * 4 * (double)j[0].reps / sec / 1e9;
        if (rep >= 0 && gbs > best)
            best = gbs;
    }
    return best;
}

/* A cache's size from /sys (level 1 data, 2, 3 unified), else dflt. */
static int64_t cache_bytes(int level, int64_t dflt)
{
    for (int i = 0; i < 8; i++) {
        char path[128], type[32] = "", size[32] = "";
        int lv = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        if (fscanf(f, "%d", &lv) != 1)
            lv = 0;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if ((f = fopen(path, "r"))) {
            if (fscanf(f, "%31s", type) != 1)
                type[0] = 0;
            fclose(f);
        }
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (lv != level || !strcmp(type, "Instruction") || !(f = fopen(path, "r")))
            continue;
        char unit = 0;
        long long v = 0;
        if (fscanf(f, "%31s", size) == 1 && sscanf(size, "%lld%c", &v, &unit) >= 1 && v > 0) {
            fclose(f);
            return unit == 'K' ? v << 10 : unit == 'M' ? v << 20 : v;
        }
        fclose(f);
    }
    return dflt;
}

/* Measures the peaks; quick: about a second instead of several. The
 * working sets per thread (in ws) are half of each private cache (L1,
 * L2), half of the shared L3 split over the threads, and 256 MiB of
 * DRAM, so each level is read from where it is named. */
static int measure_peak(bool quick, icc_bench_peak *pk, int64_t ws[ICC_BENCH_LEVELS])
{
#if !defined(__x86_64__)
    (void)quick, (void)pk, (void)ws;
    return icc_fail("bench --peak: only x86-64 is measured so far");
#else
    __builtin_cpu_init();
    bool avx512 = __builtin_cpu_supports("avx512f");
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        return icc_fail("bench --peak: this CPU has no AVX2+FMA (the baseline icc measures)");
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    cores = cores < 1 ? 1 : cores > 256 ? 256 : cores;
    memset(pk, 0, sizeof *pk);
    pk->cores = (int)cores;
    int64_t iters = quick ? 10000000 : 40000000;
    fma_gflops(avx512, 1, iters / 2);   /* warm up the clocks */
    /* the FMA units, then the dot-product ones on 512-bit vectors where
     * present; best of a few: the machine is shared */
    bool vnni = avx512 && __builtin_cpu_supports("avx512vnni"), bf16 = avx512 && __builtin_cpu_supports("avx512bf16");
    struct { int kind; bool on; double *core, *all; } units[5] = {
        {avx512, true, &pk->gflops_core, &pk->gflops_all},
        {3, vnni, &pk->int8_core, &pk->int8_all},
        {4, bf16, &pk->bf16_core, &pk->bf16_all},
        {5, amx_permit("amx-bf16"), &pk->amx_bf16_core, &pk->amx_bf16_all},
        {6, amx_permit("amx-int8"), &pk->amx_int8_core, &pk->amx_int8_all},
    };
    for (int u = 0; u < 5; u++)
        for (int rep = 0; units[u].on && rep < (quick ? 2 : 3); rep++) {
            /* a tile product does 512-1024x an FMA's work */
            int64_t n = units[u].kind >= 5 ? iters / 256 : iters;
            double a = fma_gflops(units[u].kind, 1, n), b = fma_gflops(units[u].kind, (int)cores, n);
            *units[u].core = a > *units[u].core ? a : *units[u].core;
            *units[u].all = b > *units[u].all ? b : *units[u].all;
        }
    int64_t l3 = cache_bytes(3, 8 << 20);
    ws[ICC_BENCH_L1] = cache_bytes(1, 32 << 10) / 2;
    ws[ICC_BENCH_L2] = cache_bytes(2, 512 << 10) / 2;
    ws[ICC_BENCH_L3] = l3 / 2;
    ws[ICC_BENCH_DRAM] = (int64_t)256 << 20;
    size_t len = (size_t)ws[ICC_BENCH_DRAM] * (size_t)cores;
    float *buf = aligned_alloc(64, len);
    if (!buf)
        return icc_fail("out of memory for the bandwidth buffer (%zu MiB)", len >> 20);
    memset(buf, 0, len);
    double total = quick ? 5e8 : 4e9;
    for (int i = 0; i < ICC_BENCH_LEVELS; i++) {
        double t = i == ICC_BENCH_DRAM ? total / 4 : total;
        pk->read_core[i] = read_gbs(buf, 1, ws[i], t, quick ? 2 : 3);
        /* all cores on the shared L3: each its share, but never one that fits in L2 */
        int64_t w = i != ICC_BENCH_L3 ? ws[i] : l3 / 2 / cores > 2 * ws[ICC_BENCH_L2] ? l3 / 2 / cores
                                                                                      : 2 * ws[ICC_BENCH_L2];
        pk->read_all[i] = read_gbs(buf, (int)cores, w, t, quick ? 2 : 3);
    }
    free(buf);
    return 0;
#endif
}

/* Where --peak leaves its result for --profile: $ICC_PEAK_CACHE, else
 * $XDG_CACHE_HOME/icc/peak.json, else ~/.cache/icc/peak.json. Returns
 * false when there is no such place. dir gets the folder to create. */
static bool peak_cache_path(char *path, size_t n, char *dir, size_t dn)
{
    const char *e = getenv("ICC_PEAK_CACHE"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    if (e && *e) {
        snprintf(path, n, "%s", e);
        dir[0] = 0;
    } else if ((x && *x) || (h && *h)) {
        snprintf(dir, dn, x && *x ? "%s/icc" : "%s/.cache/icc", x && *x ? x : h);
        snprintf(path, n, "%s/peak.json", dir);
    } else {
        return false;
    }
    return true;
}

static void peak_json(FILE *f, const icc_bench_peak *pk, const int64_t ws[ICC_BENCH_LEVELS])
{
    bool avx512 = false, vnni = false, amx = false;
#if defined(__x86_64__)
    __builtin_cpu_init();
    avx512 = __builtin_cpu_supports("avx512f");
    vnni = __builtin_cpu_supports("avx512vnni") || __builtin_cpu_supports("avxvnni");
    amx = __builtin_cpu_supports("amx-tile");
#endif
    fprintf(f, "{\"isa\": \"%s\", \"cores\": %d, \"fma_gflops_per_core\": %.2f, \"fma_gflops_all_cores\": %.2f",
            avx512 ? "avx512" : "avx2", pk->cores, pk->gflops_core, pk->gflops_all);
    const char *keys[3] = {"read_gbs", "read_gbs_per_core", "read_gbs_all_cores"};
    for (int k = 0; k < 3; k++) {   /* read_gbs: one core's, as before the all-core numbers came */
        fprintf(f, ", \"%s\": {", keys[k]);
        for (int i = 0; i < ICC_BENCH_LEVELS; i++)
            fprintf(f, "%s\"%s\": %.2f", i ? ", " : "", level_names[i], k == 2 ? pk->read_all[i] : pk->read_core[i]);
        fputc('}', f);
    }
    fputs(", \"working_set_bytes\": {", f);
    for (int i = 0; i < ICC_BENCH_LEVELS; i++)
        fprintf(f, "%s\"%s\": %lld", i ? ", " : "", level_names[i], (long long)ws[i]);
    /* dot-product peaks: VNNI (vpdpbusd), AVX512-BF16 (vdpbf16ps) and AMX
     * tiles are not on every x86; null where absent (or, AMX, where the OS
     * refuses its state) */
    fprintf(f, "}, \"vnni\": %s, \"amx\": %s", vnni ? "true" : "false", amx ? "true" : "false");
    const char *dk[8] = {"int8_gops_vnni", "int8_gops_vnni_all_cores", "bf16_gflops", "bf16_gflops_all_cores",
                         "int8_gops_amx", "int8_gops_amx_all_cores", "bf16_gflops_amx", "bf16_gflops_amx_all_cores"};
    double dv[8] = {pk->int8_core, pk->int8_all, pk->bf16_core, pk->bf16_all,
                    pk->amx_int8_core, pk->amx_int8_all, pk->amx_bf16_core, pk->amx_bf16_all};
    for (int i = 0; i < 8; i++)
        if (dv[i] > 0)
            fprintf(f, ", \"%s\": %.2f", dk[i], dv[i]);
        else
            fprintf(f, ", \"%s\": null", dk[i]);
    fputc('}', f);
}

/* Writes the peaks where --profile looks (best effort: a cache). */
static void peak_save(const icc_bench_peak *pk, const int64_t ws[ICC_BENCH_LEVELS])
{
    char path[4200], dir[4200];
    if (!peak_cache_path(path, sizeof path, dir, sizeof dir))
        return;
    if (dir[0]) {
        char parent[4200];
        snprintf(parent, sizeof parent, "%s", dir);
        char *sl = strrchr(parent, '/');
        if (sl && sl != parent) {
            *sl = 0;
            mkdir(parent, 0755);
        }
        mkdir(dir, 0755);
    }
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    peak_json(f, pk, ws);
    fputc('\n', f);
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        unlink(tmp);
}

/* The peaks for --profile: the cache of the last --peak, else a quick
 * measurement (saved for the next time). */
static int peak_for_profile(icc_bench_peak *pk, bool *measured)
{
    char path[4200], dir[4200];
    *measured = false;
    if (peak_cache_path(path, sizeof path, dir, sizeof dir)) {
        FILE *f = fopen(path, "r");
        if (f) {
            char text[4096];
            size_t n = fread(text, 1, sizeof text - 1, f);
            fclose(f);
            text[n] = 0;
            if (icc_bench_peak_parse(text, pk) == 0)
                return 0;
            progress("%s: not a peak file; measuring again", path);
        }
    }
    progress("measuring this machine's peaks once (about a second; icc bench --peak measures them better)");
    int64_t ws[ICC_BENCH_LEVELS];
    if (measure_peak(true, pk, ws) != 0)
        return -1;
    *measured = true;
    peak_save(pk, ws);
    return 0;
}

static int cmd_peak(const bopts *o)
{
    icc_bench_peak pk;
    int64_t ws[ICC_BENCH_LEVELS];
    progress("measuring the FMA peak and memory bandwidth (%s)", o->quick ? "about a second" : "several seconds");
    if (measure_peak(o->quick, &pk, ws) != 0)
        return 1;
    peak_save(&pk, ws);
    if (o->json) {
        peak_json(stdout, &pk, ws);
        putchar('\n');
        return 0;
    }
    bool avx512 = false, vnni = false, amx = false;
#if defined(__x86_64__)
    avx512 = __builtin_cpu_supports("avx512f");
    vnni = __builtin_cpu_supports("avx512vnni") || __builtin_cpu_supports("avxvnni");
    amx = __builtin_cpu_supports("amx-tile");
#endif
    printf("FP32 FMA peak (%s): %.1f GFLOP/s per core, %.1f GFLOP/s on %d cores\n", avx512 ? "avx512" : "avx2",
           pk.gflops_core, pk.gflops_all, pk.cores);
    printf("%-5s %14s %12s %14s\n", "read", "working set", "1 core GB/s", "all cores GB/s");
    for (int i = 0; i < ICC_BENCH_LEVELS; i++)
        printf("%-5s %10lld KiB %12.1f %14.1f\n", level_names[i], (long long)(ws[i] >> 10), pk.read_core[i],
               pk.read_all[i]);
    if (pk.int8_core > 0)
        printf("int8 VNNI peak (vpdpbusd, 512-bit): %.1f G int-ops/s per core, %.1f on %d cores\n", pk.int8_core,
               pk.int8_all, pk.cores);
    else
        printf("int8 VNNI: %s\n", vnni ? "present on 256-bit vectors only (not measured)" : "not present");
    if (pk.bf16_core > 0)
        printf("bf16 peak (vdpbf16ps, 512-bit): %.1f GFLOP/s per core, %.1f on %d cores\n", pk.bf16_core, pk.bf16_all,
               pk.cores);
    else
        printf("AVX512-BF16: not present\n");
    if (pk.amx_bf16_core > 0 || pk.amx_int8_core > 0)
        printf("AMX peaks (tdpbf16ps, tdpbssd): %.1f GFLOP/s and %.1f G int-ops/s per core, %.1f and %.1f on %d "
               "cores\n", pk.amx_bf16_core, pk.amx_int8_core, pk.amx_bf16_all, pk.amx_int8_all, pk.cores);
    else
        printf("AMX: %s\n", amx ? "present, but the OS refused its tile state" : "not present");
    return 0;
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
    int nrows = 0, *kinds = NULL;   /* each kernel's icc_kernel_kind */
    memset(rows, 0, sizeof rows);
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
    const icc_kernel_info *kinfo = NULL;
    int nk = icc_model_kernels(m, &kinfo);
    icc_bench_peak pk;
    bool measured = false;
    if (o->profile && !nk) {
        icc_fail("%s: compiled without --profile (icc MODEL.onnx --profile -o MODEL.so)", o->model);
        goto out;
    }
    kinds = calloc((size_t)nk + 1, sizeof *kinds);
    if (!kinds) {
        icc_fail("out of memory");
        goto out;
    }
    bool has_kind[ICC_BENCH_KINDS] = {false};
    for (int i = 0; i < nk; i++) {
        int k = icc_model_kernel_kind(m, i);
        kinds[i] = k >= 0 && k < ICC_BENCH_KINDS ? k : ICC_KERNEL_F32;
        has_kind[kinds[i]] = true;
    }
    if (o->profile && peak_for_profile(&pk, &measured) != 0)
        goto out;
    int nt = o->nthreads ? o->nthreads : 1, nb = o->nbatch ? o->nbatch : 1;
    double warm = o->warmup_s;
    bool costs_at_dims = d->desc_size >= offsetof(icc_model_desc, kernel_costs) + sizeof d->kernel_costs &&
                         d->kernel_costs;
    if (o->profile && !o->json) {
        /* the dot-product and AMX peaks of the kinds the kernels have */
        char dots[256] = "";
        icc_bench_roof one;
        icc_bench_roofs(&pk, 1, &one);
        for (int k = ICC_KERNEL_F32 + 1, at = 0; k < ICC_BENCH_KINDS; k++) {
            const char *kn = icc_bench_kind_name(k);
            if (has_kind[k] && at < (int)sizeof dots)
                at += one.peak_of[k] == k
                          ? snprintf(dots + at, sizeof dots - (size_t)at, ", %s dot %.1f G ops/s", kn, one.gflops[k])
                          : snprintf(dots + at, sizeof dots - (size_t)at, ", %s on %s's peak (none measured)", kn,
                                     icc_bench_kind_name(one.peak_of[k]));
        }
        printf("roofs%s: FP32 FMA %.1f GFLOP/s per core%s, DRAM read %.1f GB/s on one core, %.1f on all%s\n",
               measured ? " (measured just now, quickly)" : "", pk.gflops_core, dots, pk.read_core[ICC_BENCH_DRAM],
               pk.read_all[ICC_BENCH_DRAM],
               d->nsymbols && !costs_at_dims ? "; FLOPs and bytes count symbolic dims as 1" : "");
    }
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
            int mr = measure(o, ctx, &b, warm, o->profile ? nk : 0, r);
            warm = o->warmup_s < 0.2 ? o->warmup_s : 0.2;
            if (mr < 0) {
                io_free(&b);
                icc_context_destroy(ctx);
                goto out;
            }
            if (o->profile) {
                uint64_t runs;
                const uint64_t *ns = icc_context_profile(ctx, &runs);
                r->prof = malloc(sizeof *r->prof * ((size_t)nk + 1));
                if (!r->prof || !ns) {
                    icc_fail("out of memory");
                    io_free(&b);
                    icc_context_destroy(ctx);
                    goto out;
                }
                r->nprof = nk;
                icc_bench_roofs(&pk, (int)r->threads, &r->roof);
                /* the FLOPs and bytes at this run's dims, where the model
                 * computes them (symbolic dims; the table counts them as 1) */
                icc_kernel_info *at = malloc(sizeof *at * ((size_t)nk + 1));
                uint64_t *cost = malloc(sizeof *cost * 2 * ((size_t)nk + 1));
                if (!at || !cost) {
                    free(at);
                    free(cost);
                    icc_fail("out of memory");
                    io_free(&b);
                    icc_context_destroy(ctx);
                    goto out;
                }
                memcpy(at, kinfo, sizeof *at * (size_t)nk);
                if (icc_context_kernel_costs(ctx, cost, cost + nk) == 1)
                    for (int i = 0; i < nk; i++)
                        at[i].flops = cost[i], at[i].bytes = cost[nk + i];
                /* each kernel's median run (measure's kmed), as one run's time */
                icc_bench_profile_rows(at, kinds, r->kmed, nk, 1, &r->roof, r->prof);
                free(at);
                free(cost);
                /* the call counts after the times (0 from an older model: not shown) */
                uint64_t total_calls = 0;
                for (int i = 0; i < nk; i++)
                    total_calls += ns[nk + i];
                /* the static FLOPs and bytes are one call's: a run's are calls times those */
                for (int i = 0; total_calls && runs && i < nk; i++) {
                    icc_bench_kernel *pk = &r->prof[i];
                    pk->calls = (double)ns[nk + pk->index] / (double)runs;
                    pk->flops *= pk->calls, pk->bytes *= pk->calls, pk->gflops *= pk->calls;
                    pk->gbs *= pk->calls, pk->roof_pct *= pk->calls;
                }
            }
            if (!o->json && o->sc != SC_SERVER) {
                print_row(r, nrows == 0 || o->profile);
                if (r->prof) {
                    char roofs[512];
                    icc_bench_roofs_text(roofs, sizeof roofs, r->prof, r->nprof, &r->roof);
                    double f32 = r->roof.gflops[ICC_KERNEL_F32];
                    printf("\nprofile (threads %lld, batch %lld, %lld runs; roofs %s and %.1f GB/s, the ridge at "
                           "%.2f FLOP/B):\n", (long long)r->threads, (long long)r->batch, (long long)r->s.n, roofs,
                           r->roof.gbs, r->roof.gbs > 0 ? f32 / r->roof.gbs : 0);
                    icc_bench_profile_table(stdout, r->prof, r->nprof, r->s.p50);
                    putchar('\n');
                }
            }
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
    for (int i = 0; i < nrows; i++) {
        free(rows[i].prof);
        free(rows[i].kmed);
    }
    free(kinds);
    icc_model_close(m);
    return rc;
}

/* `icc bench A B ...`: the models in turns, one run of each per round (the
 * order rotating, so that none always runs first), after a shared warm-up;
 * at least --runs rounds and --time seconds. Each model's statistics, and
 * its paired ratio to the first (icc_bench_paired): on a shared machine a
 * stretch at half speed moves both runs of a round, so the median ratio
 * holds where separate runs' p50s swing by tens of percent. */
static int bench_compare(const bopts *o, char (*so)[4200])
{
    int n = o->nmodels, rc = 1;
    icc_model *m[MAX_CMP] = {0};
    icc_context *ctx[MAX_CMP] = {0};
    io *b = calloc((size_t)n, sizeof *b);
    double *t[MAX_CMP] = {0};
    int64_t cap = 1024, rounds = 0;
    if (!b)
        return icc_fail("out of memory");
    for (int i = 0; i < n; i++) {
        bopts one = *o;
        one.model = o->models[i];
        if (icc_model_open(so[i], o->name, &m[i]) != ICC_OK) {
            icc_fail("%s", icc_last_error());
            goto out;
        }
        if (icc_context_create(m[i], NULL, &ctx[i]) != ICC_OK ||
            (o->nthreads && icc_context_set_threads(ctx[i], (int)o->threads[0]) != ICC_OK)) {
            icc_fail("%s: %s", o->models[i], ctx[i] ? icc_context_error(ctx[i]) : icc_last_error());
            goto out;
        }
        if (io_make(&one, m[i], NULL, 1, &b[i]) != 0 || !(t[i] = malloc(sizeof *t[i] * (size_t)cap))) {
            if (!t[i])
                icc_fail("out of memory");
            goto out;
        }
    }
    double sec, end = now_s() + o->warmup_s;
    progress("warming up %d models for %.1f s", n, o->warmup_s);
    do
        for (int i = 0; i < n; i++)
            if (run_once(ctx[i], &b[i], &sec) < 0)
                goto out;
    while (now_s() < end);
    double t_end = now_s() + o->time_s;
    while (rounds < o->runs || (now_s() < t_end && rounds < 10000000)) {
        if (rounds == cap) {
            cap *= 2;
            for (int i = 0; i < n; i++) {
                double *g = realloc(t[i], sizeof *g * (size_t)cap);
                if (!g) {
                    icc_fail("out of memory");
                    goto out;
                }
                t[i] = g;
            }
        }
        for (int j = 0; j < n; j++) {
            int i = (int)((rounds + j) % n);
            if (run_once(ctx[i], &b[i], &sec) < 0)
                goto out;
            t[i][rounds] = sec > 1e-9 ? sec * 1e3 : 1e-6;   /* a ratio needs a positive time */
        }
        rounds++;
    }
    int threads = icc_context_threads(ctx[0]);
    if (o->json)
        printf("{\"compare\": {\"threads\": %d, \"rounds\": %lld, \"models\": [", threads, (long long)rounds);
    else
        printf("%lld rounds in turns, threads %d; ratio: a round's time over %s's in the same round\n"
               "%-32s %10s %10s %10s %10s   %s\n", (long long)rounds, threads, o->models[0], "model", "p50 ms",
               "p90 ms", "min ms", "mean ms", "ratio to the first: median [middle half], rounds faster");
    for (int i = 0; i < n; i++) {
        icc_bench_ratio q;
        if (icc_bench_paired(t[0], t[i], rounds, &q) != 0) {
            icc_fail("out of memory");
            goto out;
        }
        /* the statistics sort a copy; the paired ratios need run order */
        double *c = malloc(sizeof *c * (size_t)rounds);
        if (!c) {
            icc_fail("out of memory");
            goto out;
        }
        memcpy(c, t[i], sizeof *c * (size_t)rounds);
        icc_bench_stats st;
        icc_bench_stats_of(c, rounds, &st);
        free(c);
        if (o->json) {
            printf(i ? ", {\"model\": " : "{\"model\": ");
            json_str(stdout, o->models[i]);
            printf(", \"p50_ms\": %.6f, \"p90_ms\": %.6f, \"p99_ms\": %.6f, \"mean_ms\": %.6f, \"min_ms\": %.6f, "
                   "\"max_ms\": %.6f, \"ratio_median\": %.6f, \"ratio_p25\": %.6f, \"ratio_p75\": %.6f, "
                   "\"faster_share\": %.6f}", st.p50, st.p90, st.p99, st.mean, st.min, st.max, q.median, q.p25, q.p75,
                   q.faster);
        } else {
            printf("%-32s %10.3f %10.3f %10.3f %10.3f   ", o->models[i], st.p50, st.p90, st.min, st.mean);
            if (i)
                printf("%.3f [%.3f-%.3f], %.0f%%\n", q.median, q.p25, q.p75, q.faster * 100);
            else
                printf("1 (the reference)\n");
        }
    }
    if (o->json)
        printf("]}}\n");
    rc = 0;
out:
    for (int i = 0; i < n; i++) {
        io_free(&b[i]);
        free(t[i]);
        icc_context_destroy(ctx[i]);
        icc_model_close(m[i]);
    }
    free(b);
    return rc;
}

/* --generate: the decode model so (and the prefill model pre, or NULL),
 * once per thread count. */
static int bench_generate(const bopts *o, const char *so, const char *pre)
{
    icc_model *m = NULL, *p = NULL;
    if (icc_model_open(so, o->name, &m) != ICC_OK || (pre && icc_model_open(pre, o->name, &p) != ICC_OK)) {
        icc_model_close(m);
        return icc_fail("%s", icc_last_error());
    }
    int rc = 0;
    for (int t = 0; t < (o->nthreads ? o->nthreads : 1) && rc == 0; t++) {
        icc_gen_opts g = {.model = o->model, .spec = o->gen_io, .new_tokens = o->generate,
                          .prompt_len = o->prompt_len, .threads = o->nthreads ? o->threads[t] : 0,
                          .runs = o->runs_set ? o->runs : 3, .time_s = o->time_s, .warmup_s = t ? (o->warmup_s < 0.2 ? o->warmup_s : 0.2)
                                                                                : o->warmup_s,
                          .json = o->json};
        progress("generate: threads %lld, a prompt of %lld, %lld new tokens",
                 (long long)(o->nthreads ? o->threads[t] : 0), (long long)o->prompt_len, (long long)o->generate);
        rc = icc_bench_generate(m, p, &g);
    }
    icc_model_close(p);
    icc_model_close(m);
    return rc;
}

static void rm_tree(const char *dir)
{
    const char *names[] = {"model.so", "model.h", "model.weights", "plot.dat", "plot.gp", "prefill.so", "prefill.h",
                           "prefill.weights"};
    char p[4200];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

/* Reads each --input file once, before anything is compiled or timed
 * (input_file copies from it per configuration). 0, or 1 with the
 * error printed. */
static int read_inputs(bopts *o)
{
    for (int j = 0; j < o->ninputs; j++) {
        icc_diag d = {{0}};
        if (icc_npy_read(strchr(o->inputs[j], '=') + 1, &o->input_vals[j], &d) < 0)
            return icc_fail("%s", d.msg);
    }
    return 0;
}

static int bench_main(const bopts *o, const char *self)
{
    if (o->peak)
        return cmd_peak(o);
    if (o->plot && !o->nbatch)
        return icc_fail("--plot draws the --batch sweep: give --batch=1,2,4,...");
    char tmp[] = "/tmp/icc-bench-XXXXXX";
    if (!mkdtemp(tmp))
        return icc_fail("cannot make a temporary folder: %s", strerror(errno));
    char so[4200];
    int rc;
    if (o->nmodels > 1) {
        char(*sos)[4200] = calloc(MAX_CMP, sizeof *sos);
        rc = sos ? 0 : icc_fail("out of memory");
        for (int i = 0; rc == 0 && i < o->nmodels; i++) {
            if (ends_with_so(o->models[i])) {
                snprintf(sos[i], sizeof sos[i], "%s", o->models[i]);
            } else {
                snprintf(sos[i], sizeof sos[i], "%s/model%d.so", tmp, i);
                rc = compile_first(o, self, o->models[i], sos[i]);
            }
        }
        if (rc == 0)
            rc = bench_compare(o, sos);
        free(sos);
        rm_tree(tmp);
        return rc;
    }
    if (ends_with_so(o->model)) {
        snprintf(so, sizeof so, "%s", o->model);
        rc = o->generate ? 0 : bench_model(o, so, tmp);
    } else {
        snprintf(so, sizeof so, "%s/model.so", tmp);
        rc = compile_first(o, self, o->model, so);
        if (rc == 0 && !o->generate)
            rc = bench_model(o, so, tmp);
    }
    if (rc == 0 && o->generate) {
        char pre[4200] = "";
        if (o->prefill && ends_with_so(o->prefill)) {
            snprintf(pre, sizeof pre, "%s", o->prefill);
        } else if (o->prefill) {
            snprintf(pre, sizeof pre, "%s/prefill.so", tmp);
            rc = compile_first(o, self, o->prefill, pre);
        }
        if (rc == 0)
            rc = bench_generate(o, so, pre[0] ? pre : NULL);
    }
    rm_tree(tmp);
    return rc;
}

int icc_bench_main(int argc, char **argv, const char *self)
{
    bopts o;
    if (parse(argc, argv, &o) != 0)
        return 1;
    memset(o.input_vals, 0, sizeof o.input_vals);
    int rc = read_inputs(&o);
    if (rc == 0)
        rc = bench_main(&o, self);
    for (int j = 0; j < o.ninputs; j++)
        free(o.input_vals[j].data);
    return rc;
}
