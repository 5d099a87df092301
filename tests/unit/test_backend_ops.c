/* test_backend_ops.c - every backend against the reference interpreter on
 * random small graphs, after ggml's test-backend-ops.
 *
 * What it covers: from fixed seeds (splitmix64) it draws cases of 1-6
 * nodes with random shapes (rank 0-4, dims 1-9, in some cases up to 17
 * or a long 32-300 one; broadcasting) and dtypes per op from what the op
 * accepts (f32 f64 f16 bf16, i32 i64 i8 u8, bool), some float inputs
 * holding NaN, inf, -0 and far-out values, over every lowering family:
 * elementwise unary, binary, compare, logic, Where, Cast, Clip; ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSum/LogSumExp with
 * random axes and keepdims, ArgMax/ArgMin; Softmax, LogSoftmax,
 * LayerNormalization, RMSNormalization on a random axis; MatMul with batch
 * broadcasting, Gemm (transA/B, alpha/beta, broadcast bias); 1-D/2-D Conv
 * (kernel, stride, pads, auto_pad, dilation, group, depthwise; 8/16 output
 * channels, which -O3's layout blocks), MaxPool/AveragePool; Transpose,
 * Reshape, Concat, Slice, Gather, Pad, Expand, Tile, Resize
 * (nearest/linear) and Einsum. A draw that shape inference or the
 * interpreter refuses is drawn again. Cases are batched into one graph per
 * compile, compiled by each backend at -O0 (shape-infer,plan) and -O3,
 * run (every other batch on two threads) and each output compared with
 * the interpreter's: same dtype and shape, integers and bools exactly,
 * floats within a tolerance by the case's worst op class (exact, one
 * rounding, transcendental, accumulation) in ulps of its least precise
 * float dtype, relative to |want| + the output's rms; NaN matches NaN.
 * Comparisons, casts to integers, ArgMax and rounding only read values
 * both sides compute bit-exactly, so rounding never flips them.
 *
 * A mismatch prints the seed, backend, pipeline and the case's text IR;
 * ICC_BACKEND_OPS_SEED=N runs case N alone, ICC_BACKEND_OPS_N=N runs N
 * cases at each level (default: NCASES at -O3, 3x that at -O0, whose
 * compiles are cheap); ICC_BACKEND_OPS_DEBUG=1 prints the draws refused.
 *
 * The CUDA backend runs here without a GPU: its library goes through the
 * runtime's CUDA path over the stand-in driver (tests/cuda/fake_driver.c),
 * which runs the CUDA C built for the CPU (fewer cases: each batch is an
 * NVRTC compile and a C++ one).
 *
 * A backend joins with one entry in `backends` below: its name, which
 * nodes it compiles (cases with others are counted as not supported and
 * skipped for it, as test-backend-ops does) and a one-line adapter that
 * calls backend_compile with its name in the build's backend table
 * (codegen/backend.h), which runs the pipeline for that backend's host
 * target, builds the program, compiles and writes it, and opens it
 * through the runtime (include/icc/runtime.h). */
#include "check_main.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codegen/lower.h"
#include "codegen/backend.h"
#include "codegen/program.h"
#include "icc/runtime.h"
#include "ir/ops.h"
#include "ir/ref/interp.h"
#include "ir/text.h"
#include "passes/pass.h"

#define NCASES 250
#define BATCH 10
#define MAX_VALS 48
#define MAX_INS 16
#define BODY 65536

/* ---- backends ------------------------------------------------------------ */

/* A compiled graph, opened through the runtime. */
typedef struct test_model {
    icc_model *m;
    icc_context *ctx;
} test_model;

/* Compiles g through backend `name` of the build's table (codegen/backend.h),
 * as the driver does: a target for the host at LLVM-style opt_level (the
 * -O level), the pipeline with that target's description, the program
 * under its schedule, the backend's compile and write (a temporary .so
 * with the runtime linked in), then opened through the runtime. */
/* Between writing the library (so, in dir) and opening it: the CUDA
 * backend's stand-in device (cuda_prepare, below). NULL: nothing. */
typedef int (*prepare_fn)(const cg_backend *be, cg_artifact *a, const char *dir, icc_diag *d);

static int backend_compile(const char *name, ir_graph *g, const char *pipeline, int opt_level, prepare_fn prepare,
                           test_model **out, icc_diag *d)
{
    *out = NULL;
    const cg_backend *be = cg_backend_find(name);
    if (!be)
        return ir_errorf(d, "no backend '%s' in this build", name);
    void *t;
    if (be->target_create(NULL, NULL, NULL, opt_level, &t, d) < 0)
        return -1;
    int rc = -1;
    cg_program *p = NULL;
    cg_artifact *a = NULL;
    cg_schedule s;
    icc_pipeline pl;
    icc_pass_options po = {.target = be->target_desc(t)};
    if (icc_pipeline_parse(pipeline, &pl, d) == 0) {
        rc = icc_pipeline_run(&pl, g, &po, d);
        icc_pipeline_free(&pl);
    }
    if (rc == 0)
        rc = cg_schedule_init(&s, be->target_desc(t), d) < 0 || cg_program_build(g, &s, NULL, false, &p, d) < 0 ||
                     be->compile(t, p, &a, d) < 0
                 ? -1
                 : 0;
    char dir[] = "/tmp/icc_bops_XXXXXX", so[64];
    if (rc == 0 && !mkdtemp(dir))
        rc = ir_errorf(d, "mkdtemp failed");
    if (rc == 0) {
        snprintf(so, sizeof so, "%s/m.so", dir);
        rc = be->write(a, so, ICC_BINARY_DIR "/libiccrt.a", d);
        if (rc == 0 && prepare)
            rc = prepare(be, a, dir, d);
        test_model *tm = rc == 0 ? calloc(1, sizeof *tm) : NULL;
        if (rc == 0 && (!tm || icc_model_open(so, NULL, &tm->m) != ICC_OK ||
                        icc_context_create(tm->m, NULL, &tm->ctx) != ICC_OK)) {
            rc = ir_errorf(d, "opening the model: %s", icc_last_error());
            if (tm && tm->m)
                icc_model_close(tm->m);
            free(tm);
        } else if (rc == 0) {
            *out = tm;
        }
        unlink(so);
        char emu[96];
        snprintf(emu, sizeof emu, "%s/emu.cpp", dir);
        unlink(emu);
        snprintf(emu, sizeof emu, "%s/emu.so", dir);
        unlink(emu);
        rmdir(dir);
    }
    be->artifact_free(a);
    cg_program_destroy(p);
    be->target_destroy(t);
    return rc;
}

/* The lowering is shared: every backend compiles what it accepts. */
static bool lowerable(const ir_node *n) { return cg_can_lower(n); }

static int llvm_compile(ir_graph *g, const char *pipeline, int opt_level, test_model **out, icc_diag *d)
{
    return backend_compile("llvm", g, pipeline, opt_level, NULL, out, d);
}

/* CUDA without a GPU: the library runs through the runtime's CUDA path
 * over the stand-in driver (tests/cuda/fake_driver.c, through
 * ICC_CUDA_DRIVER), whose "module" is the library's CUDA C built for the
 * CPU with tests/cuda/emu.h (ICC_FAKE_CUDA_EMU, read at each module load,
 * so at each context creation). */
static int cuda_prepare(const cg_backend *be, cg_artifact *a, const char *dir, icc_diag *d)
{
    char src[96], emu[96], cmd[512];
    snprintf(src, sizeof src, "%s/emu.cpp", dir);
    snprintf(emu, sizeof emu, "%s/emu.so", dir);
    char *text = be->emit_text(a, "cuda", d);
    if (!text)
        return -1;
    FILE *f = fopen(src, "w");
    size_t n = strlen(text);
    bool ok = f && fwrite(text, 1, n, f) == n;
    if (f && fclose(f) != 0)
        ok = false;
    free(text);
    if (!ok)
        return ir_errorf(d, "cannot write %s", src);
    snprintf(cmd, sizeof cmd, "c++ -std=c++17 -O0 -w -shared -fPIC -include %s/tests/cuda/emu.h -o %s %s",
             ICC_SOURCE_DIR, emu, src);
    if (system(cmd) != 0)
        return ir_errorf(d, "the C++ compiler refused the CUDA C (%s)", src);
    setenv("ICC_CUDA_DRIVER", ICC_BINARY_DIR "/tests/libfakecuda.so", 1);
    setenv("ICC_FAKE_CUDA_EMU", emu, 1);
    return 0;
}

static int cuda_compile(ir_graph *g, const char *pipeline, int opt_level, test_model **out, icc_diag *d)
{
    return backend_compile("cuda", g, pipeline, opt_level, cuda_prepare, out, d);
}

/* What the CUDA library takes: static shapes (its plan has no symbols;
 * every case here is static) of the nodes every backend lowers. */
static bool cuda_lowerable(const ir_node *n) { return cg_can_lower(n); }

static void model_free(test_model *tm)
{
    if (!tm)
        return;
    icc_context_destroy(tm->ctx);
    icc_model_close(tm->m);
    free(tm);
}

static const struct backend {
    const char *name;
    bool (*supports)(const ir_node *n);
    /* runs pipeline on g, compiles it (opt_level 0..3: the -O level) and
     * opens it through the runtime; -1 with d set */
    int (*compile_and_load)(ir_graph *g, const char *pipeline, int opt_level, test_model **out, icc_diag *d);
    int ncases;                /* cases at each level (0: NCASES at -O3, 3x at -O0) */
} backends[] = {
    {"llvm", lowerable, llvm_compile, 0},
    /* fewer: each batch is an NVRTC compile and a C++ one */
    {"cuda", cuda_lowerable, cuda_compile, 100},
};
enum { NBACKENDS = sizeof backends / sizeof *backends };

/* ---- random numbers (splitmix64) ------------------------------------------ */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int rint_(int n) { return n <= 1 ? 0 : (int)(rnd() % (uint64_t)n); }
static int rrange(int lo, int hi) { return lo + rint_(hi - lo + 1); }
static bool chance(int percent) { return rint_(100) < percent; }
static double runit(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

/* ---- a case: text IR built a node at a time ------------------------------ */

/* How far a value may be from the interpreter's, by the worst op that
 * made it: bit-exact, one rounding, transcendental, accumulation. */
enum { T_EXACT, T_ARITH, T_TRANS, T_ACCUM };

/* Input data kinds. */
enum { K_ANY, K_POS, K_UNIT, K_SMALL, K_INDEX };

typedef struct val {
    char name[24];
    ir_dtype dt;
    int rank, kind;            /* kind: an input's data (K_*) */
    int64_t dims[IR_MAX_RANK], bound; /* bound: a K_INDEX input's dim */
    bool exact;                /* both sides compute it bit-exactly */
} val;

typedef struct gcase {
    unsigned seed;
    char sig[2048];
    int slen;
    char body[BODY];
    int blen;
    val pool[MAX_VALS];
    int npool;
    int ins[MAX_INS], nins;    /* the inputs' pool indices */
    int names, nnodes, tol;
    ir_dtype fdt, idt;         /* the case's float and integer dtypes */
    bool specials;             /* its float inputs hold some NaN, inf, -0 */
    int outs[8], nouts;
} gcase;

static void emit(gcase *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(c->body + c->blen, sizeof c->body - (size_t)c->blen, fmt, ap);
    va_end(ap);
    if (n > 0)
        c->blen = c->blen + n < (int)sizeof c->body ? c->blen + n : (int)sizeof c->body - 1;
}

static void dims_text(char *buf, size_t n, int rank, const int64_t *dims)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < rank && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, "%s%lld", i ? "," : "", (long long)dims[i]);
}

static int64_t numel(int rank, const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    return n;
}

/* The whole case as a graph whose outputs are outs (or the newest value). */
static char *case_text(const gcase *c, const int *outs, int nouts)
{
    size_t cap = (size_t)c->blen + (size_t)c->slen + 512;
    char *t = malloc(cap);
    ck_assert_ptr_nonnull(t);
    int at = snprintf(t, cap, "graph @case%u(%s) -> (", c->seed, c->sig);
    for (int i = 0; i < nouts; i++)
        at += snprintf(t + at, cap - (size_t)at, "%s%%%s", i ? ", " : "", c->pool[outs[i]].name);
    snprintf(t + at, cap - (size_t)at, ") {\n%s}\n", c->body);
    return t;
}

/* Parses and shape-infers text; NULL if either refuses. */
static ir_graph *parse_infer(const char *text, icc_diag *d)
{
    ir_graph *g = ir_parse(text, strlen(text), "case.icc", d);
    if (g && ir_infer_shapes(g, d) < 0) {
        ir_graph_destroy(g);
        g = NULL;
    }
    return g;
}

/* A new input of the given type and data kind. */
static int add_input(gcase *c, ir_dtype dt, int rank, const int64_t *dims, int kind, int64_t bound)
{
    if (c->nins >= MAX_INS || c->npool >= MAX_VALS)
        return -1;
    val *v = &c->pool[c->npool];
    *v = (val){.dt = dt, .rank = rank, .kind = kind, .bound = bound, .exact = true};
    snprintf(v->name, sizeof v->name, "c%u_x%d", c->seed, c->names++);
    memcpy(v->dims, dims, sizeof(int64_t) * (size_t)rank);
    char ds[128];
    dims_text(ds, sizeof ds, rank, dims);
    c->slen += snprintf(c->sig + c->slen, sizeof c->sig - (size_t)c->slen, "%s%%%s: %s[%s]", c->nins ? ", " : "",
                        v->name, ir_dtype_name(dt), ds);
    c->ins[c->nins++] = c->npool;
    return c->npool++;
}

/* A constant (not in the pool): its name into nm. vals holds n numbers. */
static void add_const(gcase *c, char *nm, size_t nn, ir_dtype dt, int rank, const int64_t *dims, const double *vals)
{
    snprintf(nm, nn, "c%u_k%d", c->seed, c->names++);
    char ds[128];
    dims_text(ds, sizeof ds, rank, dims);
    emit(c, "  %%%s = const %s[%s] [", nm, ir_dtype_name(dt), ds);
    int64_t n = numel(rank, dims);
    for (int64_t i = 0; i < n; i++) {
        if (ir_dtype_is_float(dt))
            emit(c, "%s%.6g", i ? ", " : "", vals[i]);
        else
            emit(c, "%s%lld", i ? ", " : "", (long long)vals[i]);
    }
    emit(c, "]\n");
}

static void add_i64s(gcase *c, char *nm, size_t nn, int n, const int64_t *v)
{
    double d[IR_MAX_RANK * 2 + 2];
    for (int i = 0; i < n; i++)
        d[i] = (double)v[i];
    int64_t dims = n;
    add_const(c, nm, nn, IR_I64, 1, &dims, d);
}

/* Random values for a constant of n elements. */
static void rand_vals(double *v, int64_t n, ir_dtype dt, int kind)
{
    for (int64_t i = 0; i < n; i++) {
        double u = runit();
        if (dt == IR_BOOL)
            v[i] = u < 0.5;
        else if (kind == K_POS)
            v[i] = ir_dtype_is_float(dt) ? 0.25 + 2.0 * u : 1 + (int)(u * 4);
        else if (ir_dtype_is_float(dt))
            v[i] = kind == K_SMALL ? u - 0.5 : 4.0 * u - 2.0;
        else
            v[i] = ir_dtype_is_signed(dt) ? (int)(u * 11) - 5 : (int)(u * 11);
    }
}

/* Appends `%new = op(args) {attrs}`, checks it and adds it to the pool;
 * false (the caller rolls back) when shape inference refuses it or its
 * result is empty or big. */
static bool add_node(gcase *c, const char *op, const char *args, const char *attrs, int tol, bool exact)
{
    if (c->npool >= MAX_VALS)
        return false;
    val *v = &c->pool[c->npool];
    snprintf(v->name, sizeof v->name, "c%u_v%d", c->seed, c->names++);
    emit(c, "  %%%s = %s(%s)%s%s%s\n", v->name, op, args, attrs && *attrs ? " {" : "", attrs ? attrs : "",
         attrs && *attrs ? "}" : "");
    int last = c->npool;
    c->npool++;
    char *text = case_text(c, &last, 1);
    icc_diag d = {{0}};
    ir_graph *g = parse_infer(text, &d);
    free(text);
    if (!g && getenv("ICC_BACKEND_OPS_DEBUG")) /* what the generator draws in vain */
        printf("refused %s: %s\n", op, d.msg);
    if (!g)
        return false;
    const ir_type *t = &g->outputs[0]->type;
    int64_t n;
    bool ok = ir_type_is_static(t) && ir_type_numel(t, &n) && n > 0 && n <= 6000;
    if (ok) {
        v->dt = t->dtype;
        v->rank = t->rank;
        for (int i = 0; i < t->rank; i++)
            v->dims[i] = t->dims[i].v;
        v->exact = exact;
        c->nnodes++;
        if (tol > c->tol)
            c->tol = tol;
    }
    ir_graph_destroy(g);
    return ok;
}

/* Appends an attribute ("name = value") to the list in buf. */
static void attr_add(char *buf, size_t n, const char *fmt, ...)
{
    size_t at = strlen(buf);
    if (at && at + 2 < n)
        memcpy(buf + at, ", ", 3), at += 2;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + at, n - at, fmt, ap);
    va_end(ap);
}

/* ---- picking operands ----------------------------------------------------- */

enum { M_FLOAT = 1, M_INT = 2, M_BOOL = 4, M_NUM = M_FLOAT | M_INT, M_ANY = 7 };

static bool in_mask(ir_dtype t, int mask)
{
    return (ir_dtype_is_float(t) && (mask & M_FLOAT)) || (t == IR_BOOL && (mask & M_BOOL)) ||
           (ir_dtype_is_int(t) && t != IR_BOOL && (mask & M_INT));
}

/* dims 1-9 (1-6 at rank 3-4), or in a "big" case up to 17 (past the
 * vector widths) and now and then 32-300 at rank <= 2 (long reductions,
 * contractions past a reduction block), keeping tensors small */
static int big_case;

static int64_t rdim(int rank)
{
    if (big_case && rank <= 2 && chance(12))
        return rrange(32, 300);
    return big_case && rank <= 3 ? rrange(1, rank <= 2 ? 17 : 12) : rrange(1, rank <= 2 ? 9 : 6);
}

static void rand_shape(int lo, int hi, int *rank, int64_t *dims)
{
    *rank = rrange(lo, hi);
    for (int i = 0; i < *rank; i++)
        dims[i] = chance(15) ? 1 : rdim(*rank);
}

static ir_dtype mask_dtype(const gcase *c, int mask)
{
    int opts[4], n = 0;
    if (mask & M_FLOAT)
        opts[n++] = M_FLOAT, opts[n++] = M_FLOAT;
    if (mask & M_INT)
        opts[n++] = M_INT;
    if (mask & M_BOOL)
        opts[n++] = M_BOOL;
    int m = opts[rint_(n)];
    return m == M_FLOAT ? c->fdt : m == M_INT ? c->idt : IR_BOOL;
}

/* A pool value of a dtype in mask and rank in [lo, hi] (exact when
 * asked), often one of the newest; else a new input. -1 when full. */
static int pick(gcase *c, int mask, int lo, int hi, bool exact)
{
    int cand[MAX_VALS], n = 0;
    for (int i = 0; i < c->npool; i++) {
        const val *v = &c->pool[i];
        if (in_mask(v->dt, mask) && v->rank >= lo && v->rank <= hi && (!exact || v->exact))
            cand[n++] = i;
    }
    if (n && chance(85))
        return chance(60) ? cand[n - 1] : cand[rint_(n)];
    int rank;
    int64_t dims[IR_MAX_RANK];
    rand_shape(lo, hi, &rank, dims);
    return add_input(c, mask_dtype(c, mask), rank, dims, K_ANY, 0);
}

/* A partner for v: a pool value or new input of dtype dt whose shape
 * broadcasts with v's (a suffix with some dims 1, or longer). */
static int partner(gcase *c, int vi, ir_dtype dt, int kind)
{
    const val *v = &c->pool[vi];
    for (int i = c->npool - 1; i >= 0 && kind == K_ANY && chance(60); i--) {
        const val *p = &c->pool[i];
        if (i == vi || p->dt != dt)
            continue;
        bool ok = true;
        for (int k = 1; k <= p->rank && k <= v->rank; k++) {
            int64_t a = p->dims[p->rank - k], b = v->dims[v->rank - k];
            ok &= a == b || a == 1 || b == 1;
        }
        if (ok)
            return i;
    }
    int rank = v->rank;
    int64_t dims[IR_MAX_RANK];
    memcpy(dims, v->dims, sizeof dims);
    int r = rint_(10);
    if (r < 3 && rank > 0) {
        int k = rint_(rank + 1);
        memmove(dims, dims + (rank - k), sizeof(int64_t) * (size_t)k);
        rank = k;
    } else if (r < 4 && rank < 4) {
        memmove(dims + 1, dims, sizeof(int64_t) * (size_t)rank);
        dims[0] = rrange(1, 3);
        rank++;
    }
    for (int i = 0; i < rank; i++)
        if (chance(20))
            dims[i] = 1;
    return add_input(c, dt, rank, dims, kind, 0);
}

/* v, or a value derived from it in the domain `kind` (K_POS: |v| + 0.5,
 * K_UNIT: tanh(v) * 0.9), or a new input of that kind and shape. */
static int in_domain(gcase *c, int vi, int kind)
{
    if (chance(40))
        return add_input(c, c->pool[vi].dt, c->pool[vi].rank, c->pool[vi].dims, kind, 0);
    char a[64], k[24];
    double off = kind == K_POS ? 0.5 : 0.9;
    int64_t one = 1;
    add_const(c, k, sizeof k, c->pool[vi].dt, 0, &one, &off);
    snprintf(a, sizeof a, "%%%s", c->pool[vi].name);
    if (!add_node(c, kind == K_POS ? "Abs" : "Tanh", a, NULL, kind == K_POS ? T_EXACT : T_TRANS, false))
        return -1;
    snprintf(a, sizeof a, "%%%s, %%%s", c->pool[c->npool - 1].name, k);
    return add_node(c, kind == K_POS ? "Add" : "Mul", a, NULL, T_ARITH, false) ? c->npool - 1 : -1;
}

/* ---- the op generators (each false when its draw is refused) ------------ */

typedef struct {
    const char *op;
    int kind;                  /* the input's domain */
    int tol;
    bool exact_in;             /* reads only exact values */
    const char *attrs;
} unary_op;

static const unary_op unary_f[] = {
    {"Sqrt", K_POS, T_ARITH, 0, NULL}, {"Exp", K_ANY, T_TRANS, 0, NULL}, {"Log", K_POS, T_TRANS, 0, NULL},
    {"Tanh", K_ANY, T_TRANS, 0, NULL}, {"Sigmoid", K_ANY, T_TRANS, 0, NULL}, {"Relu", K_ANY, T_EXACT, 0, NULL},
    {"LeakyRelu", K_ANY, T_ARITH, 0, "alpha = 0.2"}, {"Elu", K_ANY, T_TRANS, 0, "alpha = 0.7"},
    {"Selu", K_ANY, T_TRANS, 0, NULL}, {"HardSigmoid", K_ANY, T_ARITH, 0, NULL},
    {"HardSwish", K_ANY, T_ARITH, 0, NULL}, {"Softplus", K_ANY, T_TRANS, 0, NULL},
    {"Erf", K_ANY, T_TRANS, 0, NULL}, {"Gelu", K_ANY, T_TRANS, 0, NULL},
    {"Gelu", K_ANY, T_TRANS, 0, "approximate = \"tanh\""}, {"Neg", K_ANY, T_EXACT, 0, NULL},
    {"Abs", K_ANY, T_EXACT, 0, NULL}, {"Reciprocal", K_POS, T_ARITH, 0, NULL},
    {"Floor", K_ANY, T_EXACT, 1, NULL}, {"Ceil", K_ANY, T_EXACT, 1, NULL}, {"Round", K_ANY, T_EXACT, 1, NULL},
    {"Sin", K_ANY, T_TRANS, 0, NULL}, {"Cos", K_ANY, T_TRANS, 0, NULL}, {"Tan", K_UNIT, T_TRANS, 0, NULL},
    {"Asin", K_UNIT, T_TRANS, 0, NULL}, {"Acos", K_UNIT, T_TRANS, 0, NULL}, {"Atan", K_ANY, T_TRANS, 0, NULL},
    {"Sinh", K_ANY, T_TRANS, 0, NULL}, {"Cosh", K_ANY, T_TRANS, 0, NULL}, {"Asinh", K_ANY, T_TRANS, 0, NULL},
    {"Atanh", K_UNIT, T_TRANS, 0, NULL}, {"Sign", K_ANY, T_EXACT, 1, NULL}, {"IsNaN", K_ANY, T_EXACT, 0, NULL},
    {"IsInf", K_ANY, T_EXACT, 0, NULL}, {"Softsign", K_ANY, T_ARITH, 0, NULL},
    {"ThresholdedRelu", K_ANY, T_EXACT, 1, "alpha = 0.5"}, {"Celu", K_ANY, T_TRANS, 0, "alpha = 1.5"},
    {"Mish", K_ANY, T_TRANS, 0, NULL}, {"Shrink", K_ANY, T_ARITH, 1, "bias = 0.25, lambd = 0.5"},
};
static const unary_op unary_i[] = {
    {"Neg", K_ANY, T_EXACT, 0, NULL}, {"Abs", K_ANY, T_EXACT, 0, NULL}, {"Relu", K_ANY, T_EXACT, 0, NULL},
    {"Sign", K_ANY, T_EXACT, 0, NULL}, {"BitwiseNot", K_ANY, T_EXACT, 0, NULL},
};

static bool gen_unary(gcase *c)
{
    static const unary_op not_op = {"Not", K_ANY, T_EXACT, 0, NULL};
    int r = rint_(100);
    const unary_op *u = r < 15   ? &not_op
                      : r < 85 ? &unary_f[rint_(sizeof unary_f / sizeof *unary_f)]
                               : &unary_i[rint_(sizeof unary_i / sizeof *unary_i)];
    int a = pick(c, r < 15 ? M_BOOL : r < 85 ? M_FLOAT : M_INT, 0, 4, u->exact_in);
    if (a >= 0 && u->kind != K_ANY)
        a = in_domain(c, a, u->kind);
    if (a < 0)
        return false;
    char args[64];
    snprintf(args, sizeof args, "%%%s", c->pool[a].name);
    return add_node(c, u->op, args, u->attrs, u->tol, u->tol == T_EXACT && c->pool[a].exact);
}

static bool gen_binary(gcase *c)
{
    static const struct {
        const char *op;
        int mask, tol;
        const char *attrs;
    } ops[] = {
        {"Add", M_NUM, T_EXACT, NULL}, {"Sub", M_NUM, T_EXACT, NULL}, {"Mul", M_NUM, T_EXACT, NULL},
        {"Div", M_NUM, T_EXACT, NULL}, {"Max", M_NUM, T_EXACT, NULL}, {"Min", M_NUM, T_EXACT, NULL},
        {"Sum", M_NUM, T_ARITH, NULL}, {"Mean", M_FLOAT, T_ARITH, NULL}, {"Pow", M_FLOAT, T_TRANS, NULL},
        {"Mod", M_FLOAT, T_ARITH, "fmod = 1"}, {"Mod", M_INT, T_EXACT, NULL}, {"PRelu", M_NUM, T_EXACT, NULL},
        {"BitwiseAnd", M_INT, T_EXACT, NULL}, {"BitwiseOr", M_INT, T_EXACT, NULL},
        {"BitwiseXor", M_INT, T_EXACT, NULL}, {"BitShift", M_INT, T_EXACT, NULL},
    };
    int o = rint_(sizeof ops / sizeof *ops);
    bool shift = !strcmp(ops[o].op, "BitShift");
    int a = pick(c, ops[o].mask, 0, 4, false);
    if (a < 0)
        return false;
    if (shift && ir_dtype_is_signed(c->pool[a].dt))
        a = add_input(c, IR_U8, c->pool[a].rank, c->pool[a].dims, K_ANY, 0);
    if (a >= 0 && !strcmp(ops[o].op, "Pow"))
        a = in_domain(c, a, K_POS);
    if (a < 0)
        return false;
    int b;
    if (!strcmp(ops[o].op, "PRelu")) {
        /* the slope broadcasts to x: a suffix of its shape with some 1s */
        const val *x = &c->pool[a];
        int k = rint_(x->rank + 1);
        int64_t dims[IR_MAX_RANK];
        for (int i = 0; i < k; i++)
            dims[i] = chance(40) ? 1 : x->dims[x->rank - k + i];
        b = add_input(c, x->dt, k, dims, K_SMALL, 0);
    } else {
        b = partner(c, a, c->pool[a].dt, !strcmp(ops[o].op, "Pow") ? K_SMALL : K_ANY);
    }
    if (b < 0)
        return false;
    bool swap = !shift && strcmp(ops[o].op, "Pow") && strcmp(ops[o].op, "PRelu") && chance(40);
    char args[128], attrs[48] = "";
    if (!strcmp(ops[o].op, "Sum") && chance(50)) {
        int d = partner(c, a, c->pool[a].dt, K_ANY);
        if (d < 0)
            return false;
        snprintf(args, sizeof args, "%%%s, %%%s, %%%s", c->pool[a].name, c->pool[b].name, c->pool[d].name);
    } else {
        snprintf(args, sizeof args, "%%%s, %%%s", c->pool[swap ? b : a].name, c->pool[swap ? a : b].name);
    }
    if (shift)
        snprintf(attrs, sizeof attrs, "direction = \"%s\"", chance(50) ? "LEFT" : "RIGHT");
    else if (ops[o].attrs)
        snprintf(attrs, sizeof attrs, "%s", ops[o].attrs);
    bool exact = ops[o].tol == T_EXACT && c->pool[a].exact && c->pool[b].exact;
    return add_node(c, ops[o].op, args, attrs, ops[o].tol, exact);
}

/* Compare (exact operands), logic, Where. */
static bool gen_compare(gcase *c)
{
    static const char *const cmp[] = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"};
    static const char *const logic[] = {"And", "Or", "Xor"};
    char args[160];
    int r = rint_(10);
    if (r < 5) {
        int a = pick(c, chance(20) ? M_ANY : M_NUM, 0, 4, true);
        if (a < 0)
            return false;
        int b = partner(c, a, c->pool[a].dt, K_ANY);
        if (b < 0 || !c->pool[b].exact)
            return false;
        const char *op = c->pool[a].dt == IR_BOOL ? "Equal" : cmp[rint_(5)];
        snprintf(args, sizeof args, "%%%s, %%%s", c->pool[a].name, c->pool[b].name);
        return add_node(c, op, args, NULL, T_EXACT, true);
    }
    int a = pick(c, M_BOOL, 0, 4, false);
    if (a < 0)
        return false;
    if (r < 7) {
        int b = partner(c, a, IR_BOOL, K_ANY);
        if (b < 0)
            return false;
        snprintf(args, sizeof args, "%%%s, %%%s", c->pool[a].name, c->pool[b].name);
        return add_node(c, logic[rint_(3)], args, NULL, T_EXACT, c->pool[a].exact && c->pool[b].exact);
    }
    /* Where: X and Y broadcast with the condition */
    int x = partner(c, a, mask_dtype(c, M_ANY), K_ANY);
    int y = x < 0 ? -1 : partner(c, chance(50) ? a : x, c->pool[x].dt, K_ANY);
    if (y < 0)
        return false;
    snprintf(args, sizeof args, "%%%s, %%%s, %%%s", c->pool[a].name, c->pool[x].name, c->pool[y].name);
    return add_node(c, "Where", args, NULL, T_EXACT, c->pool[x].exact && c->pool[y].exact && c->pool[a].exact);
}

static bool gen_cast_clip(gcase *c)
{
    static const ir_dtype to[] = {IR_F32, IR_F64, IR_F16, IR_BF16, IR_I32, IR_I64, IR_I8, IR_U8, IR_BOOL};
    char args[160], attrs[48];
    if (chance(65)) {
        ir_dtype t = to[rint_(9)];
        /* float -> int/bool and any -> a narrower float read exact values */
        int a = pick(c, M_ANY, 0, 4, !ir_dtype_is_float(t) || t == IR_F16 || t == IR_BF16);
        if (a < 0)
            return false;
        snprintf(args, sizeof args, "%%%s", c->pool[a].name);
        snprintf(attrs, sizeof attrs, "to = %d", ir_dtype_to_onnx(t));
        return add_node(c, "Cast", args, attrs, T_EXACT, c->pool[a].exact);
    }
    int a = pick(c, M_NUM, 0, 4, false);
    if (a < 0)
        return false;
    ir_dtype dt = c->pool[a].dt;
    char lo[24] = "_", hi[24] = "_";
    int64_t one = 1;
    double l = ir_dtype_is_float(dt) ? -0.5 - runit() : -(double)rrange(0, 3);
    double h = ir_dtype_is_float(dt) ? runit() : (double)rrange(0, 4);
    if (!ir_dtype_is_signed(dt) && !ir_dtype_is_float(dt))
        l = rrange(0, 3), h = l + rrange(0, 5);
    int which = rint_(3); /* both, lo only, hi only */
    if (which != 2) {
        lo[0] = '%';
        add_const(c, lo + 1, sizeof lo - 1, dt, 0, &one, &l);
    }
    if (which != 1) {
        hi[0] = '%';
        add_const(c, hi + 1, sizeof hi - 1, dt, 0, &one, &h);
    }
    if (which == 2)
        snprintf(args, sizeof args, "%%%s, _, %s", c->pool[a].name, hi);
    else if (which == 1)
        snprintf(args, sizeof args, "%%%s, %s", c->pool[a].name, lo);
    else
        snprintf(args, sizeof args, "%%%s, %s, %s", c->pool[a].name, lo, hi);
    return add_node(c, "Clip", args, NULL, T_EXACT, c->pool[a].exact);
}

/* Random distinct axes of a rank-r value (some negative) into ax. */
static int rand_axes(int r, int64_t *ax)
{
    int n = 0;
    for (int i = 0; i < r; i++)
        if (chance(45))
            ax[n++] = chance(30) ? i - r : i;
    if (!n && r)
        ax[n++] = rint_(r);
    return n;
}

static bool gen_reduce(gcase *c)
{
    static const struct {
        const char *op;
        int mask, tol, kind;
    } ops[] = {
        {"ReduceSum", M_NUM, T_ACCUM, K_ANY}, {"ReduceMean", M_NUM, T_ACCUM, K_ANY},
        {"ReduceMax", M_NUM, T_EXACT, K_ANY}, {"ReduceMin", M_NUM, T_EXACT, K_ANY},
        {"ReduceProd", M_NUM, T_ACCUM, K_ANY}, {"ReduceL1", M_NUM, T_ACCUM, K_ANY},
        {"ReduceL2", M_FLOAT, T_ACCUM, K_ANY}, {"ReduceSumSquare", M_NUM, T_ACCUM, K_ANY},
        {"ReduceLogSum", M_FLOAT, T_ACCUM, K_POS}, {"ReduceLogSumExp", M_FLOAT, T_ACCUM, K_ANY},
        {"ArgMax", M_NUM, T_EXACT, K_ANY}, {"ArgMin", M_NUM, T_EXACT, K_ANY},
    };
    int o = rint_(sizeof ops / sizeof *ops);
    bool arg = !strncmp(ops[o].op, "Arg", 3);
    int a = pick(c, ops[o].mask, arg ? 1 : 0, 4, arg);
    if (a >= 0 && ops[o].kind != K_ANY)
        a = in_domain(c, a, ops[o].kind);
    if (a < 0)
        return false;
    int r = c->pool[a].rank;
    char args[96], attrs[96] = "", ax[24];
    snprintf(args, sizeof args, "%%%s", c->pool[a].name);
    if (arg) {
        attr_add(attrs, sizeof attrs, "axis = %d", rrange(-r, r - 1));
        if (chance(50))
            attr_add(attrs, sizeof attrs, "select_last_index = 1");
    } else if (chance(85)) {
        /* axes (input 1), sometimes empty: all, or none with noop_with_empty_axes */
        int64_t axes[IR_MAX_RANK];
        int n = chance(6) ? 0 : rand_axes(r, axes);
        if (!n)
            attr_add(attrs, sizeof attrs, "noop_with_empty_axes = %d", rint_(2));
        add_i64s(c, ax, sizeof ax, n, axes);
        snprintf(args + strlen(args), sizeof args - strlen(args), ", %%%s", ax);
    }
    if (chance(50))
        attr_add(attrs, sizeof attrs, "keepdims = 0");
    bool exact = ops[o].tol == T_EXACT && c->pool[a].exact;
    return add_node(c, ops[o].op, args, attrs, ops[o].tol, exact);
}

static bool gen_norm(gcase *c)
{
    static const char *const ops[] = {"Softmax", "LogSoftmax", "LayerNormalization", "RMSNormalization"};
    int o = rint_(4);
    int a = pick(c, M_FLOAT, 1, 4, false);
    if (a < 0)
        return false;
    const val *x = &c->pool[a];
    int r = x->rank, axis = rrange(-r, r - 1);
    char args[128], attrs[64], sc[24], bi[24];
    snprintf(attrs, sizeof attrs, "axis = %d", axis);
    if (o < 2) {
        snprintf(args, sizeof args, "%%%s", x->name);
    } else {
        int p = axis < 0 ? axis + r : axis;
        double v[6000];
        rand_vals(v, numel(r - p, x->dims + p), x->dt, K_ANY);
        add_const(c, sc, sizeof sc, x->dt, r - p, x->dims + p, v);
        snprintf(args, sizeof args, "%%%s, %%%s", x->name, sc);
        if (o == 2 && chance(60)) {
            rand_vals(v, numel(r - p, x->dims + p), x->dt, K_ANY);
            add_const(c, bi, sizeof bi, x->dt, r - p, x->dims + p, v);
            snprintf(args + strlen(args), sizeof args - strlen(args), ", %%%s", bi);
        }
        if (chance(30))
            attr_add(attrs, sizeof attrs, "epsilon = 0.01");
    }
    return add_node(c, ops[o], args, attrs, T_ACCUM, false);
}

/* MatMul with batch broadcasting, or Gemm. */
static bool gen_matmul(gcase *c)
{
    char args[128], attrs[96] = "", nm[24];
    if (chance(60)) {
        int a = pick(c, chance(80) ? M_FLOAT : M_INT, 1, 4, false);
        if (a < 0)
            return false;
        const val *x = &c->pool[a];
        int64_t k = x->dims[x->rank - 1], bd[IR_MAX_RANK];
        int br = x->rank == 1 ? rrange(1, 3) : rrange(1, x->rank + 1);
        if (br > 4)
            br = 4;
        for (int i = 0; i < br; i++) {
            int xi = x->rank - br + i; /* the batch dim of x it meets, if any */
            bd[i] = xi >= 0 && xi < x->rank - 2 && chance(60) ? (chance(30) ? 1 : x->dims[xi]) : rrange(1, 3);
        }
        if (br == 1)
            bd[0] = k;
        else
            bd[br - 2] = k, bd[br - 1] = rdim(2);
        int b = add_input(c, x->dt, br, bd, K_ANY, 0);
        if (b < 0)
            return false;
        bool sw = chance(10) && x->rank == 1 && br == 1;
        snprintf(args, sizeof args, "%%%s, %%%s", c->pool[sw ? b : a].name, c->pool[sw ? a : b].name);
        return add_node(c, "MatMul", args, NULL, ir_dtype_is_float(x->dt) ? T_ACCUM : T_EXACT,
                        !ir_dtype_is_float(x->dt));
    }
    int a = pick(c, M_FLOAT, 2, 2, false);
    if (a < 0)
        return false;
    const val *x = &c->pool[a];
    bool ta = chance(40), tb = chance(50);
    int64_t m = x->dims[ta], k = x->dims[!ta], n = rdim(2), bd[2] = {tb ? n : k, tb ? k : n};
    int b = add_input(c, x->dt, 2, bd, K_ANY, 0);
    if (b < 0)
        return false;
    snprintf(args, sizeof args, "%%%s, %%%s", x->name, c->pool[b].name);
    int cr = rint_(6);
    if (cr) {
        int64_t cs[5][2] = {{1}, {n}, {m, n}, {m, 1}, {1, n}};
        int rank = cr == 1 ? 0 : cr == 2 ? 1 : 2;
        const int64_t *dims = cr == 1 ? cs[0] : cr == 2 ? cs[1] : cs[cr - 1];
        double v[6000];
        rand_vals(v, numel(rank, dims), x->dt, K_ANY);
        add_const(c, nm, sizeof nm, x->dt, rank, dims, v);
        snprintf(args + strlen(args), sizeof args - strlen(args), ", %%%s", nm);
    }
    static const char *const sc[] = {"1.0", "0.5", "2.0", "-1.0"};
    snprintf(attrs, sizeof attrs, "alpha = %s, beta = %s, transA = %d, transB = %d", sc[rint_(4)], sc[rint_(4)],
             ta, tb);
    return add_node(c, "Gemm", args, attrs, T_ACCUM, false);
}

static void ints_attr(char *buf, size_t n, const char *name, int k, const int64_t *v)
{
    char list[160] = "";
    for (int i = 0; i < k; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%lld", i ? ", " : "", (long long)v[i]);
    attr_add(buf, n, "%s = [%s]", name, list);
}
/* Conv, MaxPool, AveragePool over [N, C, spatial...] with 1 or 2 spatial dims. */
static bool gen_window(gcase *c)
{
    int kind = rint_(10); /* <6 Conv, <8 MaxPool, else AveragePool */
    int a = pick(c, M_FLOAT, 3, 4, kind >= 6 && kind < 8);
    if (a < 0)
        return false;
    const val *x = &c->pool[a];
    int sp = x->rank - 2;
    int64_t ch = x->dims[1], ks[2], st[2], dl[2], pd[4];
    for (int i = 0; i < sp; i++) {
        ks[i] = rrange(1, 3);
        st[i] = chance(60) ? 1 : rrange(2, 3);
        dl[i] = chance(70) || kind >= 8 ? 1 : 2;
        pd[i] = chance(50) ? 0 : rint_((int)ks[i]);
        pd[i + sp] = chance(50) ? pd[i] : rint_((int)ks[i]);
    }
    char attrs[256] = "", args[128], w[24], b[24];
    ints_attr(attrs, sizeof attrs, "kernel_shape", sp, ks);
    if (chance(70))
        ints_attr(attrs, sizeof attrs, "strides", sp, st);
    if (chance(60) && kind < 8)
        ints_attr(attrs, sizeof attrs, "dilations", sp, dl);
    int ap = rint_(10);
    if (ap < 7)
        ints_attr(attrs, sizeof attrs, "pads", 2 * sp, pd);
    else if (ap < 9)
        attr_add(attrs, sizeof attrs, "auto_pad = \"%s\"",
                 ap == 7 ? "SAME_UPPER" : chance(50) ? "SAME_LOWER" : "VALID");
    if (kind >= 6) {
        if (chance(30))
            attr_add(attrs, sizeof attrs, "ceil_mode = 1");
        if (kind >= 8 && chance(50))
            attr_add(attrs, sizeof attrs, "count_include_pad = 1");
        snprintf(args, sizeof args, "%%%s", x->name);
        return add_node(c, kind < 8 ? "MaxPool" : "AveragePool", args, attrs, kind < 8 ? T_EXACT : T_ACCUM,
                        kind < 8 && x->exact);
    }
    /* group: 1, depthwise, or another divisor of C */
    int64_t g = 1;
    int gr = rint_(10);
    if (gr < 3)
        g = ch;
    else if (gr < 5)
        for (int64_t d = ch; d >= 1; d--)
            if (ch % d == 0 && chance(50)) {
                g = d;
                break;
            }
    /* 8 or 16 output channels often: what layout blocks (ConvNCHWc) */
    int64_t m = g > 1 ? g * rrange(1, 3) : chance(40) ? 8 * rrange(1, 2) : big_case ? rrange(4, 16) : rrange(1, 3);
    int64_t wd[4] = {m, ch / g, ks[0], sp > 1 ? ks[1] : 0};
    double v[6000];
    rand_vals(v, numel(2 + sp, wd), x->dt, K_SMALL);
    add_const(c, w, sizeof w, x->dt, 2 + sp, wd, v);
    snprintf(args, sizeof args, "%%%s, %%%s", x->name, w);
    if (chance(50)) {
        rand_vals(v, m, x->dt, K_ANY);
        add_const(c, b, sizeof b, x->dt, 1, &m, v);
        snprintf(args + strlen(args), sizeof args - strlen(args), ", %%%s", b);
    }
    if (g > 1)
        attr_add(attrs, sizeof attrs, "group = %lld", (long long)g);
    return add_node(c, "Conv", args, attrs, T_ACCUM, false);
}

/* Transpose, Reshape, Concat, Slice, Gather, Pad, Expand, Tile. */
static bool gen_movement(gcase *c)
{
    int a = pick(c, M_ANY, 0, 4, false);
    if (a < 0)
        return false;
    const val x = c->pool[a];
    int r = x.rank;
    char args[256], attrs[128] = "", k1[24], k2[24], k3[24], k4[24];
    int64_t v[IR_MAX_RANK * 2], v2[IR_MAX_RANK], v3[IR_MAX_RANK], v4[IR_MAX_RANK];
    switch (rint_(8)) {
    case 0: /* Transpose */
        for (int i = 0; i < r; i++)
            v[i] = i;
        for (int i = r - 1; i > 0; i--) {
            int j = rint_(i + 1);
            int64_t t = v[i];
            v[i] = v[j], v[j] = t;
        }
        if (chance(80))
            ints_attr(attrs, sizeof attrs, "perm", r, v);
        snprintf(args, sizeof args, "%%%s", x.name);
        return add_node(c, "Transpose", args, attrs, T_EXACT, x.exact);
    case 1: { /* Reshape to a random factorization, with -1 or 0 sometimes */
        int64_t left = numel(r, x.dims);
        int nr = rrange(0, 4), k = 0;
        if (!nr && left != 1)
            nr = 1;
        for (; k < nr - 1; k++) {
            int64_t f = 1;
            for (int64_t d = 2; d <= left; d++)
                if (left % d == 0 && chance(50)) {
                    f = d;
                    break;
                }
            v[k] = f;
            left /= f;
        }
        if (nr)
            v[k++] = left;
        if (k && chance(25))
            v[rint_(k)] = -1;
        else if (k && chance(20) && r > 0 && v[0] == x.dims[0])
            v[0] = 0;
        add_i64s(c, k1, sizeof k1, k, v);
        snprintf(args, sizeof args, "%%%s, %%%s", x.name, k1);
        return add_node(c, "Reshape", args, NULL, T_EXACT, x.exact);
    }
    case 2: { /* Concat of 2-3 along a random axis */
        if (!r)
            return false;
        int axis = rint_(r), n = rrange(2, 3);
        size_t at = (size_t)snprintf(args, sizeof args, "%%%s", x.name);
        for (int i = 1; i < n; i++) {
            int64_t d[IR_MAX_RANK];
            memcpy(d, x.dims, sizeof d);
            d[axis] = rrange(1, 4);
            int p = add_input(c, x.dt, r, d, K_ANY, 0);
            if (p < 0)
                return false;
            at += (size_t)snprintf(args + at, sizeof args - at, ", %%%s", c->pool[p].name);
        }
        snprintf(attrs, sizeof attrs, "axis = %d", chance(30) ? axis - r : axis);
        return add_node(c, "Concat", args, attrs, T_EXACT, x.exact);
    }
    case 3: { /* Slice on random axes (or the first n, implied), steps +-1..2 */
        if (!r)
            return false;
        int64_t axes[IR_MAX_RANK];
        int form = rint_(3), n = form ? rand_axes(r, axes) : rrange(1, r);
        for (int i = 0; i < n; i++) {
            if (!form)
                axes[i] = i;
            int64_t d = x.dims[axes[i] < 0 ? axes[i] + r : axes[i]];
            v3[i] = form < 2 || chance(50) ? 1 : chance(50) ? -rrange(1, 2) : 2;
            /* mostly non-empty: a start inside, an end beyond it in the step's direction */
            int64_t st = rrange(0, (int)d - 1), en = v3[i] > 0 ? rrange((int)st + 1, (int)d + 2) : rrange(-1, (int)st - 1);
            v[i] = chance(30) ? st - d : st;
            v2[i] = chance(15) ? (v3[i] > 0 ? INT64_MAX : INT64_MIN) : en < 0 ? -d - 1 : chance(30) && en < d ? en - d : en;
        }
        add_i64s(c, k1, sizeof k1, n, v);
        add_i64s(c, k2, sizeof k2, n, v2);
        add_i64s(c, k3, sizeof k3, n, axes);
        add_i64s(c, k4, sizeof k4, n, v3);
        snprintf(args, sizeof args, "%%%s, %%%s, %%%s%s%s%s%s", x.name, k1, k2, form ? ", %" : "", form ? k3 : "",
                 form == 2 ? ", %" : "", form == 2 ? k4 : "");
        return add_node(c, "Slice", args, NULL, T_EXACT, x.exact);
    }
    case 4: { /* Gather with constant (or input) indices of rank 0-2 */
        if (!r)
            return false;
        int axis = rint_(r), ir = rrange(0, 2);
        int64_t id[2] = {rrange(1, 4), rrange(1, 3)}, d = x.dims[axis];
        ir_dtype it = chance(50) ? IR_I64 : IR_I32;
        char ix[24];
        if (chance(70)) {
            double vals[12];
            for (int i = 0; i < 12; i++)
                vals[i] = rrange((int)-d, (int)d - 1);
            add_const(c, ix, sizeof ix, it, ir, id, vals);
        } else {
            int p = add_input(c, it, ir, id, K_INDEX, d);
            if (p < 0)
                return false;
            snprintf(ix, sizeof ix, "%s", c->pool[p].name);
        }
        snprintf(args, sizeof args, "%%%s, %%%s", x.name, ix);
        snprintf(attrs, sizeof attrs, "axis = %d", chance(30) ? axis - r : axis);
        return add_node(c, "Gather", args, attrs, T_EXACT, x.exact);
    }
    case 5: { /* Pad */
        static const char *const modes[] = {"constant", "reflect", "edge", "wrap"};
        const char *mode = modes[rint_(4)];
        for (int i = 0; i < 2 * r; i++) {
            int64_t d = x.dims[i % (r ? r : 1)];
            v[i] = chance(40) ? 0 : rrange(0, !strcmp(mode, "reflect") ? (int)(d - 1) : 2);
        }
        add_i64s(c, k1, sizeof k1, 2 * r, v);
        snprintf(args, sizeof args, "%%%s, %%%s", x.name, k1);
        if (!strcmp(mode, "constant") && chance(50) && x.dt != IR_BOOL) {
            double cv = 1.5;
            int64_t one = 1;
            add_const(c, k2, sizeof k2, x.dt, 0, &one, &cv);
            snprintf(args + strlen(args), sizeof args - strlen(args), ", %%%s", k2);
        }
        snprintf(attrs, sizeof attrs, "mode = \"%s\"", mode);
        return add_node(c, "Pad", args, attrs, T_EXACT, x.exact);
    }
    case 6: { /* Expand */
        int nr = r < 4 && chance(40) ? r + 1 : r, off = nr - r;
        for (int i = 0; i < nr; i++) {
            int64_t d = i < off ? rrange(1, 3) : x.dims[i - off];
            v[i] = d == 1 && chance(60) ? rrange(1, 4) : chance(20) ? 1 : d;
        }
        add_i64s(c, k1, sizeof k1, nr, v);
        snprintf(args, sizeof args, "%%%s, %%%s", x.name, k1);
        return add_node(c, "Expand", args, NULL, T_EXACT, x.exact);
    }
    default: /* Tile */
        for (int i = 0; i < r; i++)
            v4[i] = rrange(1, 3);
        add_i64s(c, k1, sizeof k1, r, v4);
        snprintf(args, sizeof args, "%%%s, %%%s", x.name, k1);
        return add_node(c, "Tile", args, NULL, T_EXACT, x.exact);
    }
}

/* Resize (nearest/linear, by scales or sizes) and Einsum. */
static bool gen_resample(gcase *c)
{
    char args[160], attrs[192], k1[24];
    if (chance(55)) {
        int a = pick(c, M_FLOAT, 3, 4, false);
        if (a < 0)
            return false;
        const val *x = &c->pool[a];
        static const char *const ctm[] = {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"};
        static const char *const nm[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
        static const double scales[] = {0.5, 1.0, 1.5, 2.0, 3.0};
        bool linear = chance(50);
        double s[IR_MAX_RANK];
        int64_t sz[IR_MAX_RANK];
        for (int i = 0; i < x->rank; i++) {
            s[i] = i < 2 ? 1.0 : scales[rint_(5)];
            sz[i] = i < 2 ? x->dims[i] : rrange(1, 8);
        }
        int64_t rk = x->rank;
        if (chance(50)) {
            add_const(c, k1, sizeof k1, IR_F32, 1, &rk, s);
            snprintf(args, sizeof args, "%%%s, _, %%%s", x->name, k1);
        } else {
            add_i64s(c, k1, sizeof k1, x->rank, sz);
            snprintf(args, sizeof args, "%%%s, _, _, %%%s", x->name, k1);
        }
        snprintf(attrs, sizeof attrs, "mode = \"%s\", coordinate_transformation_mode = \"%s\"%s%s%s",
                 linear ? "linear" : "nearest", ctm[rint_(4)], linear ? "" : ", nearest_mode = \"",
                 linear ? "" : nm[rint_(4)], linear ? "" : "\"");
        return add_node(c, "Resize", args, attrs, linear ? T_ACCUM : T_EXACT, !linear && x->exact);
    }
    static const char *const eqs[] = {"ij,jk->ik", "bij,bjk->bik", "ij->ji",     "ii->i",     "ij->",
                                      "i,i->",     "ij,kj->ik",   "bhid,bhjd->bhij", "i,j->ij", "ijk->kj"};
    const char *eq = eqs[rint_(sizeof eqs / sizeof *eqs)];
    int64_t lab[26];
    for (int i = 0; i < 26; i++)
        lab[i] = rrange(1, 5);
    bool fl = chance(85);
    size_t at = 0;
    args[0] = 0;
    for (const char *p = eq; *p != '-';) {
        int64_t d[IR_MAX_RANK];
        int rank = 0;
        for (; *p >= 'a' && *p <= 'z'; p++)
            d[rank++] = lab[*p - 'a'];
        int in = add_input(c, fl ? c->fdt : c->idt, rank, d, K_ANY, 0);
        if (in < 0)
            return false;
        at += (size_t)snprintf(args + at, sizeof args - at, "%s%%%s", at ? ", " : "", c->pool[in].name);
        if (*p == ',')
            p++;
    }
    snprintf(attrs, sizeof attrs, "equation = \"%s\"", eq);
    return add_node(c, "Einsum", args, attrs, fl ? T_ACCUM : T_EXACT, !fl);
}

/* ---- cases ------------------------------------------------------------------ */

/* The case's input data (seeded by the case). */
static ir_tensor *case_inputs(const gcase *c)
{
    uint64_t save = rng_state;
    rng_state = 0xda7a0000ull + c->seed * 0x2545f491ull;
    ir_tensor *in = calloc((size_t)c->nins + 1, sizeof *in);
    ck_assert_ptr_nonnull(in);
    for (int i = 0; i < c->nins; i++) {
        const val *x = &c->pool[c->ins[i]];
        icc_diag d = {{0}};
        ck_assert_int_eq(ir_tensor_init(&in[i], x->dt, x->rank, x->dims, &d), 0);
        ck_assert_ptr_nonnull(in[i].data = calloc(1, in[i].nbytes + 1));
        for (int64_t e = 0; e < in[i].numel; e++) {
            static const double sp[] = {NAN, INFINITY, -INFINITY, -0.0};
            double v;
            rand_vals(&v, 1, x->dt, x->kind);
            if (x->kind == K_INDEX)
                v = rrange((int)-x->bound, (int)x->bound - 1);
            else if (x->kind == K_UNIT)
                v = 0.9 * (2 * runit() - 1);
            /* now and then NaN, infinities, -0 and values far out (casts
             * saturate, exponentials overflow) in general-purpose floats */
            else if (c->specials && x->kind == K_ANY && ir_dtype_is_float(x->dt) && chance(20))
                v = chance(50) ? sp[rint_(4)] : v * 150;
            ir_tensor_setf(&in[i], e, v);
        }
    }
    rng_state = save;
    return in;
}

/* Builds case `seed` into c (valid, runs in the interpreter). */
static void gen_case(unsigned seed, gcase *c)
{
    static const ir_dtype fdts[] = {IR_F32, IR_F32, IR_F32, IR_F32, IR_F64, IR_F64, IR_F16, IR_BF16};
    static const ir_dtype idts[] = {IR_I32, IR_I64, IR_I8, IR_U8};
    for (unsigned attempt = 0;; attempt++) {
        ck_assert_msg(attempt < 200, "case %u: no valid draw", seed);
        rng_state = 0x5eed0000ull + seed * 0x100000001b3ull + attempt * 0x9e37ull;
        memset(c, 0, sizeof *c);
        c->seed = seed;
        c->fdt = fdts[rint_(8)];
        c->idt = idts[rint_(4)];
        big_case = chance(25);
        c->specials = chance(10);
        int rank;
        int64_t dims[IR_MAX_RANK];
        rand_shape(0, 4, &rank, dims);
        add_input(c, chance(75) ? c->fdt : c->idt, rank, dims, K_ANY, 0);
        int want = rrange(1, 6);
        for (int tries = 0; c->nnodes < want && tries < 40; tries++) {
            gcase *save = malloc(sizeof *c);
            ck_assert_ptr_nonnull(save);
            memcpy(save, c, sizeof *c);
            int r = rint_(100);
            bool ok = r < 18   ? gen_unary(c)
                      : r < 33 ? gen_binary(c)
                      : r < 42 ? gen_compare(c)
                      : r < 50 ? gen_cast_clip(c)
                      : r < 60 ? gen_reduce(c)
                      : r < 66 ? gen_norm(c)
                      : r < 74 ? gen_matmul(c)
                      : r < 84 ? gen_window(c)
                      : r < 95 ? gen_movement(c)
                               : gen_resample(c);
            if (!ok)
                memcpy(c, save, sizeof *c);
            free(save);
        }
        if (!c->nnodes)
            continue;
        /* every node value no node reads (the newest is one), so each
         * node is compared, and now and then one that is read */
        char *all = case_text(c, (int[]){c->npool - 1}, 1);
        icc_diag d0 = {{0}};
        ir_graph *g0 = parse_infer(all, &d0);
        ck_assert_msg(g0 != NULL, "case %u: %s\n%s", seed, d0.msg, all);
        free(all);
        for (int i = c->npool - 1; i >= 0 && c->nouts < 8; i--) {
            bool read = !strstr(c->pool[i].name, "_v");
            for (int k = 0; k < g0->nnodes && !read; k++)
                for (int j = 0; j < g0->nodes[k]->nin; j++)
                    read |= g0->nodes[k]->in[j] && !strcmp(g0->nodes[k]->in[j]->name, c->pool[i].name);
            if (!read || (strstr(c->pool[i].name, "_v") && chance(15)))
                c->outs[c->nouts++] = i;
        }
        ir_graph_destroy(g0);
        /* the interpreter must run it */
        char *text = case_text(c, c->outs, c->nouts);
        icc_diag d = {{0}};
        ir_graph *g = parse_infer(text, &d);
        ck_assert_msg(g != NULL, "case %u: %s\n%s", seed, d.msg, text);
        free(text);
        ir_tensor *in = case_inputs(c), out[8];
        int rc = ir_interp_run(g, in, out, &d);
        if (rc < 0 && getenv("ICC_BACKEND_OPS_DEBUG"))
            printf("refused by the interpreter: %s\n", d.msg);
        if (rc == 0)
            ir_tensors_free(out, g->noutputs);
        ir_tensors_free(in, c->nins);
        free(in);
        ir_graph_destroy(g);
        if (rc == 0)
            return;
    }
}


/* ---- comparing ---------------------------------------------------------------- */

/* The case's tolerance: ulps of its least precise float dtype, by its
 * worst op class (f16/bf16 get a few of their ulps). */
static double case_tol(const gcase *c)
{
    static const double ulps[] = {0, 16, 256, 1024}, ulps_lowp[] = {0, 2, 4, 8};
    double eps = 0;
    bool lowp = false;
    for (int i = 0; i < c->npool; i++) {
        ir_dtype t = c->pool[i].dt;
        double e = t == IR_F64 ? 0x1p-52 : t == IR_F32 ? 0x1p-23 : t == IR_F16 ? 0x1p-10 : t == IR_BF16 ? 0x1p-7 : 0;
        lowp |= t == IR_F16 || t == IR_BF16;
        if (e > eps)
            eps = e;
    }
    /* f64 libm calls and ours differ more than f64's ulps suggest */
    double t = (lowp ? ulps_lowp : ulps)[c->tol] * eps;
    return c->tol == T_EXACT ? 0 : t > 1e-13 ? t : 1e-13;
}

/* Empty when got (dtype onnx code gdt, dims gdims) matches want, else why. */
static void compare(const ir_tensor *want, int32_t gdt, int grank, const int64_t *gdims, void *gdata, double tol,
                    char *why, size_t n)
{
    why[0] = 0;
    if (gdt != ir_dtype_to_onnx(want->dtype) || grank != want->rank) {
        snprintf(why, n, "dtype/rank %s/%d, want %s/%d", ir_dtype_name(ir_dtype_from_onnx(gdt)), grank,
                 ir_dtype_name(want->dtype), want->rank);
        return;
    }
    for (int k = 0; k < grank; k++)
        if (gdims[k] != want->dims[k]) {
            snprintf(why, n, "dim %d is %lld, want %lld", k, (long long)gdims[k], (long long)want->dims[k]);
            return;
        }
    ir_tensor got = *want;
    got.data = gdata;
    double scale = 0;
    if (ir_dtype_is_float(want->dtype)) {
        for (int64_t i = 0; i < want->numel; i++) {
            double w = ir_tensor_getf(want, i);
            if (isfinite(w))
                scale += w * w;
        }
        scale = want->numel ? sqrt(scale / (double)want->numel) : 0;
    }
    for (int64_t i = 0; i < want->numel; i++) {
        if (!ir_dtype_is_float(want->dtype)) {
            int64_t a = ir_tensor_geti(&got, i), b = ir_tensor_geti(want, i);
            if (a != b) {
                snprintf(why, n, "element %lld is %lld, want %lld", (long long)i, (long long)a, (long long)b);
                return;
            }
            continue;
        }
        double a = ir_tensor_getf(&got, i), b = ir_tensor_getf(want, i);
        bool ok = isnan(b) ? isnan(a) : isinf(b) ? a == b : fabs(a - b) <= tol * (fabs(b) + scale);
        if (!ok) {
            snprintf(why, n, "element %lld is %.9g, want %.9g (tolerance %.3g relative, rms %.3g)", (long long)i, a,
                     b, tol, scale);
            return;
        }
    }
}

/* ---- running ------------------------------------------------------------------ */

typedef struct stats {
    int cases, unsupported, failed, compiles, fused, blocked;
    double compile_s;
    int op_cases[IR_OP_COUNT];
    unsigned op_dtypes[IR_OP_COUNT];
    int unsupported_op[IR_OP_COUNT];
} stats;

/* -O0 as the conformance runner compiles it (types, then the plan);
 * -O3's pipeline ends with the plan. */
static const char *pipeline_of(int level) { return level == 0 ? "shape-infer,plan" : icc_pipeline_for_level(3); }

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The cases as one graph (outputs in case order). */
static char *batch_text(gcase *const *cs, int n)
{
    size_t cap = 256;
    for (int i = 0; i < n; i++)
        cap += (size_t)cs[i]->slen + (size_t)cs[i]->blen + 64 * 4;
    char *t = malloc(cap);
    ck_assert_ptr_nonnull(t);
    size_t at = (size_t)snprintf(t, cap, "graph @batch(");
    for (int i = 0; i < n; i++)
        at += (size_t)snprintf(t + at, cap - at, "%s%s", i ? ", " : "", cs[i]->sig);
    at += (size_t)snprintf(t + at, cap - at, ") -> (");
    for (int i = 0, k = 0; i < n; i++)
        for (int j = 0; j < cs[i]->nouts; j++)
            at += (size_t)snprintf(t + at, cap - at, "%s%%%s", k++ ? ", " : "", cs[i]->pool[cs[i]->outs[j]].name);
    at += (size_t)snprintf(t + at, cap - at, ") {\n");
    for (int i = 0; i < n; i++)
        at += (size_t)snprintf(t + at, cap - at, "%s", cs[i]->body);
    snprintf(t + at, cap - at, "}\n");
    return t;
}

static void report(const gcase *c, const struct backend *b, const char *pl, const char *why, stats *st)
{
    char *text = case_text(c, c->outs, c->nouts);
    printf("FAIL case %u [%s, %s]: %s\n(rerun alone: ICC_BACKEND_OPS_SEED=%u)\n%s\n", c->seed, b->name, pl, why,
           c->seed, text);
    fflush(stdout);
    free(text);
    st->failed++;
}

/* Compiles and runs cases cs[0..n-1] as one graph through backend b and
 * pipeline pl; compares each output with the interpreter's. When the
 * batch does not compile, each case is tried alone to name the culprits. */
static void run_batch(gcase *const *cs, int n, const struct backend *b, int level, stats *st)
{
    const char *pl = pipeline_of(level);
    char *text = batch_text(cs, n);
    icc_diag d = {{0}};
    ir_graph *ref = parse_infer(text, &d), *g = parse_infer(text, &d);
    ck_assert_msg(ref && g, "%s", d.msg);
    int nin = ref->ninputs, nout = ref->noutputs;
    ir_tensor *in = calloc((size_t)nin + 1, sizeof *in), *want = calloc((size_t)nout + 1, sizeof *want);
    ck_assert(in && want);
    for (int i = 0, at = 0; i < n; i++) {
        ir_tensor *ci = case_inputs(cs[i]);
        memcpy(in + at, ci, sizeof *in * (size_t)cs[i]->nins);
        at += cs[i]->nins;
        free(ci);
    }
    ck_assert_msg(ir_interp_run(ref, in, want, &d) == 0, "%s", d.msg);
    test_model *tm = NULL;
    st->compiles++;
    double t0 = now_s();
    int crc = b->compile_and_load(g, pl, level, &tm, &d);
    st->compile_s += now_s() - t0;
    char why[1200] = "";
    if (crc < 0) {
        snprintf(why, sizeof why, "does not compile: %s", d.msg);
        goto done;
    }
    /* what the pipeline made of it (g ran through it) */
    for (int i = 0; i < g->nnodes; i++) {
        st->fused += g->nodes[i]->group > 0;
        st->blocked += g->nodes[i]->op == IR_OP_CONV_NCHWC;
    }
    const icc_model_desc *desc = icc_model_describe(tm->m);
    icc_tensor *ti = calloc((size_t)nin + 1, sizeof *ti);
    void **po = calloc((size_t)nout + 1, sizeof *po);
    ck_assert(ti && po && desc->noutputs == nout);
    for (int i = 0; i < nin; i++)
        ti[i] = (icc_tensor){in[i].data, ir_dtype_to_onnx(in[i].dtype), in[i].rank, in[i].dims};
    for (int i = 0; i < nout; i++) {
        const icc_tensor_desc *o = &desc->outputs[i];
        int64_t k = 1;
        for (int j = 0; j < o->rank; j++)
            k *= o->dims[j] > 0 ? o->dims[j] : 1;
        po[i] = calloc(1, (size_t)k * icc_dtype_size(o->dtype) + 8);
    }
    /* every other batch on two threads */
    ck_assert_int_eq(icc_context_set_threads(tm->ctx, 1 + (int)(cs[0]->seed / BATCH % 2)), ICC_OK);
    if (icc_run_tensors(tm->ctx, ti, nin, po) != ICC_OK)
        snprintf(why, sizeof why, "run failed: %s", icc_context_error(tm->ctx));
    for (int i = 0, k = 0; i < n && !why[0]; i++) {
        char bad[1024] = "";
        for (int j = 0; j < cs[i]->nouts; j++, k++) {
            const icc_tensor_desc *o = &desc->outputs[k];
            if (!bad[0])
                compare(&want[k], o->dtype, o->rank, o->dims, po[k], case_tol(cs[i]), bad, sizeof bad);
            if (bad[0] && bad[0] != '-') {
                char w2[1100];
                snprintf(w2, sizeof w2, "output %d (%%%s): %s", j, ref->outputs[k]->name, bad);
                report(cs[i], b, pl, w2, st);
                bad[0] = '-'; /* one report per case */
            }
        }
    }
    for (int i = 0; i < nout; i++)
        free(po[i]);
    free(po);
    free(ti);
done:
    /* a batch that does not compile or run: each case alone names the culprits */
    if (why[0] && n == 1)
        report(cs[0], b, pl, why, st);
    for (int i = 0; why[0] && n > 1 && i < n; i++)
        run_batch(cs + i, 1, b, level, st);
    model_free(tm);
    ir_tensors_free(want, nout);
    ir_tensors_free(in, nin);
    free(want);
    free(in);
    ir_graph_destroy(g);
    ir_graph_destroy(ref);
    free(text);
}

static int env_int(const char *name, int dflt)
{
    const char *s = getenv(name);
    return s && *s ? atoi(s) : dflt;
}

/* Backend _i / 2 at pipeline _i % 2 over every case. */
START_TEST(backend_matches_interpreter)
{
    const struct backend *b = &backends[_i / 2];
    const char *pl = pipeline_of(3 * (_i % 2));
    if (!cg_backend_find(b->name)) {   /* cuda: a build without NVRTC */
        printf("[%s, %s] not in this build\n", b->name, pl);
        return;
    }
    int one = env_int("ICC_BACKEND_OPS_SEED", -1);
    int n = one >= 0 ? 1 : env_int("ICC_BACKEND_OPS_N", b->ncases ? b->ncases : _i % 2 ? NCASES : 3 * NCASES);
    stats *st = calloc(1, sizeof *st);
    gcase **batch = calloc(BATCH, sizeof *batch);
    ck_assert(st && batch);
    int nb = 0;
    double t0 = now_s();
    for (int s = 0; s < n; s++) {
        gcase *c = malloc(sizeof *c);
        ck_assert_ptr_nonnull(c);
        gen_case(one >= 0 ? (unsigned)one : (unsigned)s, c);
        char *text = case_text(c, c->outs, c->nouts);
        icc_diag d = {{0}};
        ir_graph *g = parse_infer(text, &d);
        free(text);
        bool ok = true;
        for (int k = 0; k < g->nnodes; k++)
            if (!b->supports(g->nodes[k])) {
                ok = false;
                st->unsupported_op[g->nodes[k]->op]++;
            }
        if (ok)
            for (int k = 0; k < g->nnodes; k++) {
                st->op_cases[g->nodes[k]->op]++;
                st->op_dtypes[g->nodes[k]->op] |= 1u << g->nodes[k]->in[0]->type.dtype;
            }
        ir_graph_destroy(g);
        if (ok)
            st->cases++, batch[nb++] = c;
        else
            st->unsupported++, free(c);
        if (nb && (nb == BATCH || s == n - 1)) {
            run_batch(batch, nb, b, 3 * (_i % 2), st);
            while (nb)
                free(batch[--nb]);
        }
    }
    printf("[%s, %s] %d cases (%d not supported), %d compiles (%.1f s), %d fused nodes, %d blocked convs, "
           "%d failed, %.1f s\n", b->name, pl, st->cases, st->unsupported, st->compiles, st->compile_s, st->fused,
           st->blocked, st->failed, now_s() - t0);
    if (_i == 0) {
        /* coverage: each op, how many cases, which input dtypes */
        for (int op = 0; op < IR_OP_COUNT; op++) {
            if (!st->op_cases[op] && !st->unsupported_op[op])
                continue;
            char dts[128] = "";
            for (int t = 1; t < IR_DTYPE_COUNT; t++)
                if (st->op_dtypes[op] & (1u << t))
                    snprintf(dts + strlen(dts), sizeof dts - strlen(dts), " %s", ir_dtype_name((ir_dtype)t));
            printf("  %-20s %4d tested (%s ), %d unsupported\n", ir_ops[op].name, st->op_cases[op], dts,
                   st->unsupported_op[op]);
        }
    }
    fflush(stdout);
    int failed = st->failed, cases = st->cases;
    free(st);
    free(batch);
    ck_assert_msg(!failed, "[%s, %s] %d cases failed (printed above)", b->name, pl, failed);
    ck_assert_int_gt(cases, 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("backend_ops");
    TCase *tc = tcase_create("random");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, backend_matches_interpreter, 0, 2 * NBACKENDS);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return icc_run_suite(suite());
}
