/* icc.c - the driver: command line parsing and the subcommands.
 *
 *   icc info  MODEL                    inputs, outputs, op histogram, params, FLOPs
 *   icc MODEL --emit=ir [-o OUT]       the text IR of a model
 *   icc run   MODEL --input NAME=F.npy [-o DIR]   run through the interpreter
 *   icc run   MODEL.so --input NAME=F.npy [-o DIR] [--name=P]   run a compiled model
 *   icc opt   IN.icc [-o OUT.icc]      parse, verify, print
 *
 * MODEL is an ONNX file or a text IR file (.icc). Errors print one line
 * "icc: error: ..." and exit 1; output files are written to a temporary
 * name and renamed, so a failure never leaves a partial file.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "frontend/onnx.h"
#include "ir/dot.h"
#include "ir/ops.h"
#include "passes/pass.h"
#include "ir/ref/interp.h"
#include "ir/stats.h"
#include "ir/text.h"
#include "icc/runtime.h"
#include "runtime/cuda_plan.h"
#include "runtime/npy.h"
#include "tools/bench.h"
#include "tools/fail.h"
#include "tools/verify.h"
#include "codegen/header.h"
#include "tools/compile.h"
#include "tools/calibrate.h"

#ifndef ICC_VERSION
#define ICC_VERSION "0.0.0"
#endif
#ifndef ICC_LLVM_VERSION
#define ICC_LLVM_VERSION "?"
#endif

/* The -O level of compiling, info and verify when none is given: the
 * pipeline that runs fastest (-O3 adds the blocked layouts to -O2), also
 * LLVM's level. */
#define DEFAULT_LEVEL 3

#define MAX_INPUTS 256

typedef struct {
    const char *cmd;          /* "compile", "info", "run", "opt", "verify" */
    const char *model;
    const char *out;
    const char *emit;
    const char *inputs[MAX_INPUTS];
    int ninputs;
    const char *name;         /* --name=: the model's symbol prefix, or NULL */
    const char *passes;       /* --passes=, or NULL */
    int level;                /* -O level; -1 when not given */
    int dflt_level;           /* level used when neither -O nor --passes is given */
    const char *march;        /* -march=CPU, or NULL for the host */
    const char *triple;       /* --target-triple=, or NULL for the host */
    bool cuda;                /* --target=cuda: the CUDA backend (docs/backends.md) */
    const char *cuda_arch;    /* --cuda-arch=sm_XX, or NULL (sm_90) */
    const char *shapes[MAX_INPUTS];   /* --shape=NAME:1x3x224x224 */
    bool external_weights;            /* --weights=external */
    bool verbose;                     /* --verbose: a failed link shows the linker's full log */
    int64_t embed_limit;              /* --weights=auto (default): past this, external; 0: never */
    bool profile;                     /* --profile: the run times each kernel */
    int nbinds;
    const char *binds[MAX_INPUTS];    /* --bind=NAME=FILE.npy */
    int nshapes;
    double rtol, atol;                /* verify's tolerance */
    icc_pass_options popts;
    icc_precision_opts prec;          /* --precision, --keep-fp32, --no-default-keep */
    const char *inputs_dir;           /* verify --inputs=DIR */
    const char *reference;            /* verify --reference=FP32_MODEL */
    bool per_node, bisect, json;      /* verify --per-node, --bisect[=DB], --json */
    double bisect_db;                 /* --bisect=DB; NaN: the precision's default */
    const char *calibrate;            /* --calibrate=DIR (int8): input sets DIR/0/NAME.npy, ... */
    icc_calib_opts calib;             /* --calibrate-method=, --int8-activations= */
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
        "  icc MODEL -o model.so [--shape=x:1x64]\n"
        "                                     compile to a shared library plus model.h (-o X.o:\n"
        "                                     an object file)\n"
        "  icc MODEL --emit=ir [-o OUT.icc]   print the model's text IR (--emit=dot: Graphviz,\n"
        "                                     kernels, llvm, asm: the compiler's stages)\n"
        "  icc info MODEL [-O3]               inputs, outputs, op histogram, parameters, FLOPs,\n"
        "                                     and the node count after the -O pipeline (default -O3)\n"
        "  icc info MODEL.so                  a compiled library: its target (CPU features, or the\n"
        "                                     CUDA architecture and kernels), I/O, weights, arena\n"
        "  icc run MODEL --input NAME=FILE.npy ... [-o DIR]\n"
        "                                     run through the reference interpreter; with -o,\n"
        "                                     write DIR/<output name>.npy per output, else print\n"
        "                                     a summary of each output; MODEL.so runs a\n"
        "                                     compiled model through the runtime instead\n"
        "  icc opt IN.icc [-o OUT.icc]        parse, verify and print text IR\n"
        "  icc bench MODEL.so|MODEL.onnx [--threads=1,2] [--batch=1,2,4,...] [--runs=N] [--time=S]\n"
        "            [--warmup=S] [--scenario=single-stream|offline|server] [--rate=QPS]\n"
        "            [--p99-bound=MS] [--queries=N] [--dim=SYM=V] [--input=NAME=F.npy] [--json]\n"
        "            [--plot=FILE.png]\n"
        "                                     latency p50/p90/p99/mean/min/max and throughput after\n"
        "                                     a 2 s warm-up, over thread counts and batch sizes; an\n"
        "                                     .onnx is compiled first (other options go to the\n"
        "                                     compiler, e.g. -O3); --plot draws the batch trade-off;\n"
        "                                     --profile: per-kernel time, FLOPs, bytes, roofline bound\n"
        "                                     against the peak of its kind (f32, bf16, i8 dot products);\n"
        "                                     --input: an input's values (all, or one repeated; a\n"
        "                                     file of its rank gives its symbolic dims)\n"
        "  icc bench A B [C...] [--threads=T] [--runs=N] [--json]\n"
        "                                     up to 8 models in turns, one run of each per round:\n"
        "                                     each one's latency and its median ratio to A's time\n"
        "                                     in the same round (steady on a noisy, shared machine)\n"
        "  icc bench DECODER --generate=N [--prompt-len=P] [--prefill=MODEL] [--gen-io=ROLE=NAME,..]\n"
        "                                     a static-KV decoder's TTFT, TPOT p50/p90 and tokens/s\n"
        "  icc bench --peak [--quick] [--json] this machine's FP32 FMA, int8 VNNI and bf16 dot peaks and\n"
        "                                     L1/L2/L3/DRAM read bandwidths, on one core and all\n"
        "  icc verify MODEL [--input NAME=FILE.npy ...] [--rtol=1e-4] [--atol=1e-5]\n"
        "                                     compile MODEL, run it and the interpreter on the\n"
        "                                     same inputs (given, or made up) and print the max\n"
        "                                     abs/rel error, cosine and SQNR per output; exit 1\n"
        "                                     beyond tolerance\n"
        "  icc verify MODEL --precision=P [--per-node] [--bisect[=DB]]\n"
        "                                     compile MODEL at fp32 and at P, run both and print\n"
        "                                     how far P is from fp32 (also top-1/top-5 of class\n"
        "                                     scores); exit 1 below the SQNR threshold\n"
        "  icc verify MODEL --target=cuda     compile MODEL for the CPU and for CUDA, run both\n"
        "                                     (the CUDA library through the CUDA driver) and\n"
        "                                     print how far CUDA is from the CPU\n"
        "    --inputs=DIR       input sets: DIR/NAME.npy, or DIR/0/NAME.npy, DIR/1/... (worst, mean)\n"
        "    --reference=F.onnx compare MODEL (already reduced, e.g. QDQ) with F, its fp32 model\n"
        "    --per-node         the SQNR of every node's output against fp32, by value name\n"
        "    --bisect[=DB]      the first node below DB (default 30 bf16, 40 fp16, 20 int8), kept\n"
        "                       in fp32 until none is; prints the --keep-fp32= line that fixes it\n"
        "    --json             the report as one JSON object\n"
        "\n"
        "options:\n"
        "  --emit=KIND          what to produce: ir (the text IR), dot (Graphviz), kernels\n"
        "                       (the kernel IR), llvm (optimized LLVM IR), asm\n"
        "  -o PATH              output file (or directory for run)\n"
        "  --input NAME=FILE    an input for run (.npy); repeat for each input\n"
        "  --name=PREFIX        the model's symbol prefix (PREFIX_model; default model)\n"
        "  --shape=NAME:DxDx..  pin input NAME's dims; a dim given as a name stays symbolic under\n"
        "                       it (input:Bx576); ',' joins dims instead of 'x' (ids:batch,max_len);\n"
        "                       a symbol the model declares in other inputs too is pinned there\n"
        "  --weights=external   write the weights to model.weights beside model.so (mapped at\n"
        "                       load, checksum verified) instead of the .so's .rodata;\n"
        "                       =embedded: always in the .so; =auto (default): external past\n"
        "                       --embed-limit=BYTES (1 GiB), with a note\n"
        "  --verbose            a failed link also prints the linker's full log (the error\n"
        "                       itself is one line)\n"
        "  --bind=NAME=F.npy    make input NAME a constant with F's values (for inputs that\n"
        "                       decide shapes, e.g. a Reshape's shape or Reduce's axes, or\n"
        "                       an If's condition, so that the If folds to its branch)\n"
        "  --profile            the model times each kernel (icc_context_profile,\n"
        "                       docs/runtime.md; icc bench --profile prints them)\n"
        "  -march=CPU           the CPU to compile for (default: this machine, by its features)\n"
        "  --target-triple=T    e.g. aarch64-linux-gnu (with -o X.o: an object for another machine)\n"
        "  --target=cpu|cuda    the backend: cpu (LLVM, default) or cuda (CUDA C through NVRTC,\n"
        "                       the cubin and PTX in the library, which runs on the GPU through\n"
        "                       the CUDA driver; static shapes only; --emit=cuda prints the\n"
        "                       kernels, --emit=ptx NVRTC's PTX)\n"
        "  --cuda-arch=sm_XX    the GPU architecture for --target=cuda (default sm_90)\n"
        "\n"
        "precision (compile, --emit, info, verify; docs/precision.md):\n"
        "  --precision=P        fp32 (default), bf16 or fp16 (contraction weights stored in half\n"
        "                       precision, f32 accumulation), int8, int8-dynamic\n"
        "  --keep-fp32=LIST     op types and node names kept in fp32, comma-separated\n"
        "                       (e.g. Softmax,LayerNormalization,fc1)\n"
        "  --no-default-keep    also lower softmax, the norms and the last contraction (kept\n"
        "                       in fp32 by default)\n"
        "  --calibrate=DIR      int8: activation ranges from running the interpreter on the\n"
        "                       input sets DIR/0/NAME.npy, DIR/1/NAME.npy, ... (NAME: input)\n"
        "  --calibrate-method=M minmax (default), percentile[=99.99] or entropy (KL)\n"
        "  --int8-activations=K u8 (asymmetric, default) or i8 (symmetric, zero point 0)\n"
        "\n"
        "optimization (icc MODEL --emit=ir, icc opt, icc info, icc run):\n"
        "  -O0 .. -O3           the default pipeline of that level (icc --list-passes\n"
        "                       shows them; compiling and info default to -O3, --emit to -O0,\n"
        "                       opt and run to no passes)\n"
        "  --passes=PIPELINE    run these passes, e.g. shape-infer,fold{max-bytes=4096},dce\n"
        "  --list-passes        every pass, its options, and the -O pipelines\n"
        "  --print-before=P,..  print the IR before the named passes (or 'all')\n"
        "  --print-after=P,..   print the IR after the named passes (or 'all')\n"
        "  --print-after-all    print the IR after every pass\n"
        "  --print-changed      print the IR only after passes that changed it\n"
        "  --time-passes        a table of wall time per pass, then of code generation's phases\n"
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


/* Reads a whole file (size-limited) into a malloc'd buffer. */
static char *read_file(const char *path, size_t *len, icc_diag *d)
{
    FILE *f = ir_fopen_regular(path, d);
    if (!f)
        return NULL;
    struct stat st;
    if (fstat(fileno(f), &st) < 0) {
        fclose(f);
        ir_errorf(d, "%s: %s", path, strerror(errno));
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

static int pin_dims_hook(void *ctx, ir_graph *g, icc_diag *d);

/* Loads ONNX or text IR by extension; a's --shape (a may be NULL) pins an
 * ONNX model's input dims before its nodes are imported (pin_shapes
 * applies them again, with --bind, to either kind). */
static ir_graph *load_model(const args *a, const char *path, icc_diag *d)
{
    if (ir_ends_with(path, ".icc")) {
        size_t len;
        char *text = read_file(path, &len, d);
        if (!text)
            return NULL;
        ir_graph *g = ir_parse(text, len, path, d);
        free(text);
        return g;
    }
    ir_graph *g = a && a->nshapes ? icc_onnx_load_file_pinned(path, pin_dims_hook, (void *)a, d)
                                  : icc_onnx_load_file(path, d);
    if (g && g->ndecl_conflicts)
        fprintf(stderr, "icc: note: %s: %d value%s declared with a shape that disagree%s with the computed one, "
                "which is used (as ONNX Runtime does): %s\n", path, g->ndecl_conflicts,
                g->ndecl_conflicts == 1 ? "" : "s", g->ndecl_conflicts == 1 ? "s" : "", g->decl_note);
    return g;
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
 * -O is given and dflt_level is -1); *used (when not NULL) receives the
 * target description the passes saw. */
static int run_passes(const args *a, ir_graph *g, int dflt_level, icc_target_desc *used, icc_diag *d)
{
    int level = a->level >= 0 ? a->level : dflt_level;
    const char *text = a->passes ? a->passes : level >= 0 ? icc_pipeline_for_level(level) : NULL;
    if (!text && a->prec.mode != ICC_PREC_FP32)
        return ir_errorf(d, "--precision=%s needs a pipeline with the 'precision' pass (give -O0..-O3)",
                         icc_precision_name(a->prec.mode));
    if (!text)
        return 0;
    /* passes see the target the model is compiled for (layout's block) */
    icc_target_desc td;
    if (icc_target_describe(a->cuda ? "cuda" : NULL, a->cuda ? NULL : a->triple, a->cuda ? a->cuda_arch : a->march,
                            &td, d) < 0)
        return -1;
    if (used)
        *used = td;
    icc_pipeline p;
    if (icc_pipeline_parse(text, &p, d) < 0)
        return -1;
    bool lowered = a->prec.mode == ICC_PREC_FP32;
    for (int i = 0; i < p.nsteps; i++)
        lowered |= p.steps[i].pass == PASS_PRECISION;
    if (!lowered) {
        icc_pipeline_free(&p);
        return ir_errorf(d, "--precision=%s: the pipeline has no 'precision' pass", icc_precision_name(a->prec.mode));
    }
    icc_pass_options po = a->popts;
    po.target = &td;
    /* int8's ranges come from the graph as given, before any pass */
    icc_precision_opts prec = a->prec;
    icc_calibration *cal = NULL;
    if (a->calibrate && a->prec.mode != ICC_PREC_INT8) {
        icc_pipeline_free(&p);
        return ir_errorf(d, "--calibrate is for --precision=int8 (got --precision=%s)", icc_precision_name(a->prec.mode));
    }
    if (a->calibrate) {
        if (!(cal = icc_calibrate_dir(g, a->calibrate, &a->calib, d))) {
            icc_pipeline_free(&p);
            return -1;
        }
        prec.calib = cal;
        po.precision = &prec;
    }
    /* A reproducer needs the IR printed before every pass (costly with
     * large weights), so it is opt-in; a failure says how to get one. */
    int rc = icc_pipeline_run(&p, g, &po, d);
    icc_pipeline_free(&p);
    icc_calibration_destroy(cal);
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

static int pin_shapes(const args *a, ir_graph *g, icc_diag *d);

/* Per dtype: the node results, the constants and their bytes of g (after
 * a --precision pipeline), and the weight bytes the same pipeline leaves
 * at fp32, so the saving is measured, not estimated. */
static int info_precision(const args *a, const ir_graph *g, int level, icc_diag *d)
{
    int64_t vals[IR_DTYPE_COUNT] = {0}, consts[IR_DTYPE_COUNT] = {0}, bytes[IR_DTYPE_COUNT] = {0};
    for (int i = 0; i < g->nvalues; i++) {
        const ir_value *v = g->values[i];
        if (v->dead || v->type.dtype <= IR_UNDEF || v->type.dtype >= IR_DTYPE_COUNT)
            continue;
        if (v->kind == IR_VAL_CONST) {
            consts[v->type.dtype]++;
            bytes[v->type.dtype] += (int64_t)v->cval.nbytes;
        } else if (v->kind == IR_VAL_NODE) {
            vals[v->type.dtype]++;
        }
    }
    args f = *a;
    f.prec.mode = ICC_PREC_FP32;
    f.popts.precision = &f.prec;
    f.popts.print_after_all = false;
    f.popts.print_after = f.popts.print_before = NULL;
    f.popts.print_changed = f.popts.time_passes = f.popts.stats = false;
    ir_graph *g32 = load_model(a, a->model, d);
    if (!g32 || pin_shapes(a, g32, d) < 0 || run_passes(&f, g32, level, NULL, d) < 0) {
        ir_graph_destroy(g32);
        return -1;
    }
    int64_t pc32, pb32, pc, pb;
    ir_graph_param_stats(g32, &pc32, &pb32);
    ir_graph_param_stats(g, &pc, &pb);
    ir_graph_destroy(g32);
    printf("precision: %s\n", icc_precision_name(a->prec.mode));
    printf("  %-6s %8s %8s %14s\n", "dtype", "values", "weights", "weight bytes");
    for (int t = 1; t < IR_DTYPE_COUNT; t++) {
        if (!vals[t] && !consts[t])
            continue;
        char hb[64];
        human((double)bytes[t], "B", hb, sizeof hb);
        printf("  %-6s %8lld %8lld %14s\n", ir_dtype_name((ir_dtype)t), (long long)vals[t], (long long)consts[t], hb);
    }
    char b0[64], b1[64];
    human((double)pb32, "B", b0, sizeof b0);
    human((double)pb, "B", b1, sizeof b1);
    printf("  weight bytes: %s at fp32, %s at %s (%.2fx)\n", b0, b1, icc_precision_name(a->prec.mode),
           pb32 ? (double)pb / (double)pb32 : 1.0);
    return 0;
}

/* One I/O tensor of a compiled library: "name: f32[N,3,224,224]". */
static void print_tensor_desc(const icc_tensor_desc *t)
{
    printf("  %s: %s[", t->name, ir_dtype_name(ir_dtype_from_onnx(t->dtype)));
    for (int k = 0; k < t->rank; k++) {
        if (t->dims[k] >= 0)
            printf("%s%lld", k ? "," : "", (long long)t->dims[k]);
        else
            printf("%s%s", k ? "," : "", t->dim_names && t->dim_names[k] ? t->dim_names[k] : "?");
    }
    printf("]\n");
}

/* `icc info MODEL.so`: what a compiled library says of itself, read
 * through the runtime (icc_model_open: no driver is needed for a CUDA
 * library, nor are its weights read when they are embedded). */
static int cmd_info_compiled(const args *a)
{
    icc_model *m;
    if (icc_model_open(a->model, a->name, &m) != ICC_OK)
        return icc_fail("%s", icc_last_error());
    const icc_model_desc *d = icc_model_describe(m);
    char buf[64];
    printf("library: %s\n", a->model);
    printf("model: %s (compiled by icc %s, ABI %u)\n", d->name, d->compiler_version, d->abi_version);
    const icc_cuda_plan *p = d->desc_size >= offsetof(icc_model_desc, cuda_bytes) + sizeof d->cuda_bytes
                                 ? d->cuda : NULL;
    if (p) {
        char cb[32], pb[32];
        human((double)p->cubin_bytes, "B", cb, sizeof cb);
        human((double)p->ptx_bytes, "B", pb, sizeof pb);
        printf("target: CUDA sm_%u: %d kernels, %d steps (%d at load), cubin %s, PTX %s; runs through the CUDA "
               "driver (libcuda.so.1)\n",
               p->sm, p->nkernels, p->nsteps - p->ninit_steps, p->ninit_steps, cb, pb);
    } else {
        printf("target: CPU, needs [%s]\n", d->cpu_features);
    }
    printf("inputs:\n");
    for (int i = 0; i < d->ninputs; i++)
        print_tensor_desc(&d->inputs[i]);
    printf("outputs:\n");
    for (int i = 0; i < d->noutputs; i++)
        print_tensor_desc(&d->outputs[i]);
    if (d->nsymbols) {
        printf("symbols:");
        for (int s = 0; s < d->nsymbols; s++)
            printf(" %s", d->symbols[s]);
        printf("\n");
    }
    human((double)d->weights_bytes, "B", buf, sizeof buf);
    printf("weights: %s, %s\n", buf, d->weights ? "embedded" : "in the .weights file beside the library");
    human((double)(p ? (uint64_t)p->arena_bytes : d->arena_bytes), "B", buf, sizeof buf);
    printf("arena: %s%s%s\n", buf, d->nsymbols ? " with every symbol 1" : "", p ? ", on the device" : "");
    int nk = icc_model_kernels(m, NULL);
    if (nk)
        printf("profiled kernels: %d (icc bench --profile times them)\n", nk);
    icc_model_close(m);
    return 0;
}

static int cmd_info(const args *a)
{
    icc_diag d = {{0}};
    if (ir_ends_with(a->model, ".so"))
        return cmd_info_compiled(a);
    ir_graph *g = load_model(a, a->model, &d);
    if (!g)
        return icc_fail("%s", d.msg);
    if (pin_shapes(a, g, &d) < 0) { /* --shape/--bind: as compiling would see it */
        ir_graph_destroy(g);
        return icc_fail("%s: %s", a->model, d.msg);
    }
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
    int level = a->level >= 0 ? a->level : DEFAULT_LEVEL;
    /* the inputs' types before the passes: shape inference may join input
     * dims the ops require equal once folding makes them visible */
    ir_type *in0 = malloc(sizeof *in0 * (size_t)(g->ninputs ? g->ninputs : 1));
    if (!in0) {
        ir_graph_destroy(g);
        return icc_fail("%s: out of memory", a->model);
    }
    for (int i = 0; i < g->ninputs; i++)
        in0[i] = g->inputs[i]->type;
    icc_target_desc td;   /* what the passes (and the compile) take the target to be */
    if (run_passes(a, g, level, &td, &d) < 0) {
        free(in0);
        ir_graph_destroy(g);
        return icc_fail("%s: %s", a->model, d.msg);
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
    for (int i = 0, shown = 0; i < g->ninputs; i++) {
        if (ir_type_eq(&in0[i], &g->inputs[i]->type))
            continue;
        if (!shown++)
            printf("inputs as compiled (dims the ops require equal to another input's are one; docs/ir.md):\n");
        type_str(g, &g->inputs[i]->type, buf, sizeof buf);
        printf("  %s: %s\n", g->inputs[i]->name, buf);
    }
    free(in0);
    if (a->prec.mode != ICC_PREC_FP32 && info_precision(a, g, level, &d) < 0) {
        ir_graph_destroy(g);
        return icc_fail("%s: %s", a->model, d.msg);
    }
    char tbuf[512];
    icc_target_desc_str(&td, tbuf, sizeof tbuf);
    printf("target: %s\n", tbuf);
    /* Kernels: one per node, but one per fused group (ir.h). */
    int ngroups, nfused;
    ir_graph_group_stats(g, &ngroups, &nfused);
    printf("kernels: %d (%d fused groups of %d nodes)\n", g->nnodes - nfused + ngroups, ngroups, nfused);
    /* The heaviest kernels by FLOPs, with the bytes they move. */
    ir_kernel_cost *kc;
    int nk;
    if (ir_graph_kernel_costs(g, &kc, &nk) == 0) {
        int64_t traffic = 0;
        for (int i = 0; i < nk; i++)
            traffic += kc[i].bytes;
        human((double)traffic, "B", buf, sizeof buf);
        printf("  memory traffic: %s (each kernel reads its inputs once, writes its outputs)\n", buf);
        for (int shown = 0; shown < 5 && shown < nk; shown++) {
            int best = shown;
            for (int i = shown + 1; i < nk; i++)
                if (kc[i].flops > kc[best].flops)
                    best = i;
            ir_kernel_cost t = kc[shown];
            kc[shown] = kc[best];
            kc[best] = t;
            const ir_node *n = g->nodes[kc[shown].root];
            char fb[64], bb[64], what[96];
            human((double)kc[shown].flops, "FLOP", fb, sizeof fb);
            human((double)kc[shown].bytes, "B", bb, sizeof bb);
            snprintf(what, sizeof what, "%s%s%.40s%s", ir_ops[n->op].name, *n->name ? " '" : "", n->name,
                     *n->name ? "'" : "");
            if (kc[shown].nodes > 1)
                snprintf(what + strlen(what), sizeof what - strlen(what), " +%d fused", kc[shown].nodes - 1);
            printf("%s %-44s %12s %12s %8.1f FLOP/B\n", shown ? "              " : "  heaviest:   ", what, fb, bb,
                   kc[shown].bytes ? (double)kc[shown].flops / (double)kc[shown].bytes : 0.0);
        }
        free(kc);
    }
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
    /* With fusion, the intermediates kept inside kernels never reach memory. */
    int *groot = nfused ? malloc(sizeof(int) * ((size_t)g->nnodes + 1)) : NULL;
    if (groot && ir_graph_group_roots(g, groot) == 0) {
        int64_t all = 0, inside = 0, nall = 0, nin = 0, n;
        for (int k = 0; k < g->nnodes; k++)
            for (int i = 0; i < g->nodes[k]->nout; i++) {
                const ir_value *v = g->nodes[k]->out[i];
                if (!ir_type_numel(&v->type, &n))
                    continue;
                bool is_out = false;
                for (int j = 0; j < g->noutputs; j++)
                    is_out |= g->outputs[j] == v;
                if (is_out)
                    continue;
                n *= (int64_t)ir_dtype_size(v->type.dtype);
                all += n;
                nall++;
                if (groot[k] != k) {
                    inside += n;
                    nin++;
                }
            }
        char b2[64];
        human((double)all, "B", buf, sizeof buf);
        human((double)inside, "B", b2, sizeof b2);
        printf("intermediates: %lld totalling %s, of which %lld (%s) stay inside fused kernels\n",
               (long long)nall, buf, (long long)nin, b2);
    }
    free(groot);
    ir_graph_destroy(g);
    return 0;
}

/* --shape=NAME:DxDx...: fixes input NAME's dims (symbols included); a
 * dim given as a name keeps it symbolic under that name (the same name in
 * two inputs is one dim: input:Bx576 state:2xBx128). The dims are joined
 * by 'x', or by ',' (then names may hold an 'x': ids:batch,max_len).
 * --bind=NAME=F.npy: makes input NAME a constant; then re-infers every
 * shape from there. */
/* Every input dim that is symbol sym becomes dim; bysym marks them
 * (bit k of input i), for the message when a later --shape disagrees. */
static void pin_symbol(ir_graph *g, int32_t sym, ir_dim dim, uint32_t *bysym)
{
    for (int i = 0; i < g->ninputs; i++)
        for (int k = 0; k < g->inputs[i]->type.rank; k++)
            if (g->inputs[i]->type.dims[k].sym == sym) {
                g->inputs[i]->type.dims[k] = dim;
                if (i < MAX_INPUTS)
                    bysym[i] |= 1u << k;
            }
}

/* --shape's part of pin_shapes: the inputs' dims. */
static int pin_dims(const args *a, ir_graph *g, icc_diag *d)
{
    uint32_t bysym[MAX_INPUTS] = {0};   /* --shape takes at most MAX_INPUTS inputs */
    for (int i = 0; i < a->nshapes; i++) {
        const char *s = a->shapes[i], *colon = strrchr(s, ':');
        if (!colon)
            return ir_errorf(d, "--shape=%s: expected NAME:DxDx...", s);
        ir_value *v = NULL;
        int vi = -1;
        for (int k = 0; k < g->ninputs; k++)
            if (strlen(g->inputs[k]->name) == (size_t)(colon - s) && !strncmp(g->inputs[k]->name, s, (size_t)(colon - s)))
                v = g->inputs[k], vi = k;
        if (!v)
            return ir_errorf(d, "--shape: the model has no input named '%.*s'", (int)(colon - s), s);
        ir_dim dims[IR_MAX_RANK];
        int r = 0;
        char sep = strchr(colon + 1, ',') ? ',' : 'x';
        for (const char *p = colon + 1; *p;) {
            char *end;
            long long x = strtoll(p, &end, 10);
            if (end == p && (isalpha((unsigned char)*p) || *p == '_')) {   /* a name: a symbolic dim */
                size_t len = strcspn(p, sep == ',' ? "," : "x");
                bool ok = true;
                for (size_t j = 0; j < len; j++)
                    ok &= isalnum((unsigned char)p[j]) || p[j] == '_';
                int32_t id = ok && r < IR_MAX_RANK ? ir_graph_sym(g, p, len) : 0;
                if (!id)
                    return ir_errorf(d, "--shape=%s: dims must be non-negative numbers or names joined by '%c'", s,
                                     sep);
                dims[r++] = (ir_dim){0, id};
                end = (char *)p + len;
            } else {
                if (end == p || x < 0 || r == IR_MAX_RANK || (*end && *end != sep))
                    return ir_errorf(d, "--shape=%s: dims must be non-negative numbers or names joined by '%c'", s,
                                     sep);
                dims[r++] = ir_dim_const(x);
            }
            p = *end ? end + 1 : end;
        }
        if (v->type.rank >= 0 && r != v->type.rank)
            return ir_errorf(d, "--shape=%s: input '%s' has rank %d", s, v->name, v->type.rank);
        for (int k = 0; k < r; k++) {
            if (v->type.rank >= 0 && ir_dim_is_const(v->type.dims[k]) && !ir_dim_eq(v->type.dims[k], dims[k]))
                return ir_errorf(d, "--shape=%s: dim %d of '%s' is fixed at %lld%s", s, k, v->name,
                                 (long long)v->type.dims[k].v,
                                 vi < MAX_INPUTS && (bysym[vi] >> k & 1)
                                     ? " (an earlier --shape pinned the symbol it shares with another input)" : "");
            /* a declared symbol is one dim wherever it appears: pinning
             * it in one input pins it in the others (input:1x512 fixes
             * state's [2, batch, 128] too) */
            if (v->type.rank >= 0 && v->type.dims[k].sym > 0 && !ir_dim_eq(v->type.dims[k], dims[k]))
                pin_symbol(g, v->type.dims[k].sym, dims[k], bysym);
            v->type.dims[k] = dims[k];
        }
        v->type.rank = r;
    }
    return 0;
}

/* icc_onnx_load_file_pinned's hook: --shape applied as the ONNX frontend
 * creates the inputs, before it imports any node */
static int pin_dims_hook(void *ctx, ir_graph *g, icc_diag *d)
{
    return pin_dims(ctx, g, d);
}

static int pin_shapes(const args *a, ir_graph *g, icc_diag *d)
{
    if (pin_dims(a, g, d) < 0)
        return -1;
    for (int i = 0; i < a->nbinds; i++) {
        const char *s = a->binds[i], *eq = strchr(s, '=');
        if (!eq)
            return ir_errorf(d, "--bind=%s: expected NAME=FILE.npy", s);
        int k = 0;
        while (k < g->ninputs && !(strlen(g->inputs[k]->name) == (size_t)(eq - s) &&
                                   !strncmp(g->inputs[k]->name, s, (size_t)(eq - s))))
            k++;
        if (k == g->ninputs)
            return ir_errorf(d, "--bind: the model has no input named '%.*s'", (int)(eq - s), s);
        ir_tensor t = {0};
        if (icc_npy_read(eq + 1, &t, d) < 0)
            return -1;
        int rc = ir_graph_bind_input(g, k, &t, d);
        free(t.data);
        if (rc < 0)
            return ir_diag_prefix(d, "--bind=%s", s), -1;
    }
    return a->nshapes || a->nbinds ? ir_infer_shapes(g, d) : 0;
}

/* The pipeline before code generation: --passes, else -O (default -O3),
 * always ending with the memory plan the code needs. */
static int compile_passes(const args *a, ir_graph *g, icc_diag *d)
{
    args b = *a;
    char pipeline[1024];
    const char *base = a->passes ? a->passes : icc_pipeline_for_level(a->level >= 0 ? a->level : DEFAULT_LEVEL);
    size_t n = strlen(base);
    bool has_plan = n >= 4 && !strcmp(base + n - 4, "plan");
    snprintf(pipeline, sizeof pipeline, "%s%s%s", base, n && !has_plan ? "," : "", has_plan ? "" : "plan");
    b.passes = pipeline;
    const char **names = calloc((size_t)g->noutputs + 1, sizeof *names);
    if (!names)
        return ir_errorf(d, "out of memory");
    for (int i = 0; i < g->noutputs; i++)
        names[i] = g->outputs[i]->name;
    int rc = run_passes(&b, g, -1, NULL, d);
    if (rc == 0)
        rc = icc_keep_output_names(g, names, d);
    free(names);
    return rc;
}

/* The compile step: optimize at -O3 by default, always ending with the
 * memory plan the code needs; then kernels, LLVM, object or library, and
 * model.h beside a library. */
static int cmd_compile(const args *a)
{
    icc_diag d = {{0}};
    if (!a->out && !a->emit)
        return icc_fail("%s: no output: give -o model.so (or model.o), or --emit=ir|dot|kernels|llvm|asm",
                    a->model);
    if (a->cuda && a->emit && strcmp(a->emit, "kernels") && strcmp(a->emit, "cuda") && strcmp(a->emit, "ptx"))
        return icc_fail("unknown --emit kind '%s' for --target=cuda (supported: ir, dot, kernels, cuda, ptx)",
                        a->emit);
    if (!a->cuda && a->emit && strcmp(a->emit, "kernels") && strcmp(a->emit, "llvm") && strcmp(a->emit, "asm"))
        return icc_fail("unknown --emit kind '%s' (supported: ir, dot, kernels, llvm, asm%s)", a->emit,
                        !strcmp(a->emit, "cuda") || !strcmp(a->emit, "ptx") ? "; cuda and ptx with --target=cuda"
                                                                            : "");
    if (a->name && !cg_header_prefix_ok(a->name))
        return icc_fail("--name=%s: the prefix must be a C identifier other than 'icc'", a->name);
    ir_graph *g = load_model(a, a->model, &d);
    if (!g)
        return icc_fail("%s", d.msg);
    int rc = 1;
    if (pin_shapes(a, g, &d) < 0 || compile_passes(a, g, &d) < 0) {
        icc_fail("%s: %s", a->model, d.msg);
        goto done;
    }
    bool external = false;
    icc_compile_opts o = {a->emit, a->out, a->name, a->cuda ? NULL : a->triple, a->cuda ? a->cuda_arch : a->march,
                          a->level >= 0 ? a->level : DEFAULT_LEVEL, a->external_weights, a->embed_limit, &external,
                          a->profile, a->verbose, a->popts.time_passes, a->cuda ? "cuda" : NULL};
    if (icc_compile_graph(g, &o, &d) < 0) {
        icc_fail("%s: %s", a->model, d.msg);
        goto done;
    }
    if (!a->emit && a->out && ir_ends_with(a->out, ".so")) {
        char hdr[4096];
        snprintf(hdr, sizeof hdr, "%.*s.h", (int)(strlen(a->out) - 3), a->out);
        if (cg_write_header(g, a->name, hdr, &d) < 0) {
            unlink(a->out);
            if (external) {
                snprintf(hdr, sizeof hdr, "%.*s.weights", (int)(strlen(a->out) - 3), a->out);
                unlink(hdr);
            }
            icc_fail("%s", d.msg);
            goto done;
        }
    }
    rc = 0;
done:
    ir_graph_destroy(g);
    return rc;
}

static int cmd_emit(const args *a)
{
    icc_diag d = {{0}};
    /* ir and dot print the graph; everything else goes through the compiler. */
    if (!a->emit || (strcmp(a->emit, "ir") && strcmp(a->emit, "dot")))
        return cmd_compile(a);
    bool dot = !strcmp(a->emit, "dot");
    ir_graph *g = load_model(a, a->model, &d);
    if (!g)
        return icc_fail("%s", d.msg);
    if (pin_shapes(a, g, &d) < 0 || run_passes(a, g, a->dflt_level, NULL, &d) < 0) {
        ir_graph_destroy(g);
        return icc_fail("%s: %s", a->model, d.msg);
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
        return icc_fail("%s: printing the IR failed", a->model);
    int rc = 0;
    if (a->out) {
        if (icc_write_atomic(a->out, text, len, &d) < 0)
            rc = icc_fail("%s", d.msg);
    } else if (fwrite(text, 1, len, stdout) != len) {
        rc = icc_fail("write error on stdout");
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

/* What run does with the outputs: DIR/<name>.npy each with -o (the
 * directory made if missing), else a summary of each on stdout. */
static int emit_outputs(const args *a, const char *const *names, const ir_tensor *out, int n)
{
    icc_diag d = {{0}};
    if (!a->out) {
        for (int i = 0; i < n; i++)
            summarize(names[i], &out[i]);
        return 0;
    }
    struct stat st;
    if (stat(a->out, &st) < 0 && mkdir(a->out, 0777) < 0)
        return icc_fail("%s: %s", a->out, strerror(errno));
    /* Two names may map to one file name ("a/b" and "a_b"): a later one
     * gets a numbered name, with a note, rather than overwrite the other. */
    char (*files)[256] = calloc((size_t)n + 1, sizeof *files);
    if (!files)
        return icc_fail("out of memory");
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        char base[240], path[4096];
        safe_name(names[i], base, sizeof base);
        snprintf(files[i], sizeof files[i], "%s", base);
        for (int k = 2, j = 0; j < i;) {
            if (strcmp(files[j], files[i])) {
                j++;
                continue;
            }
            snprintf(files[i], sizeof files[i], "%s_%d", base, k++);
            j = 0;
        }
        if (strcmp(files[i], base))
            fprintf(stderr, "icc: note: output '%s' written as %s.npy (%s.npy is another output's)\n", names[i],
                    files[i], base);
        snprintf(path, sizeof path, "%s/%s.npy", a->out, files[i]);
        if (icc_npy_write(path, &out[i], &d) < 0)
            rc = icc_fail("%s", d.msg);
    }
    free(files);
    return rc;
}

/* "f32[N,4]" for a descriptor's input. */
static void desc_type_str(const icc_tensor_desc *t, char *buf, size_t n)
{
    ir_dtype dt = ir_dtype_from_onnx(t->dtype);
    size_t k = (size_t)snprintf(buf, n, "%s[", dt ? ir_dtype_name(dt) : "?");
    for (int i = 0; i < t->rank && k < n; i++) {
        const char *sep = i ? "," : "";
        if (t->dims[i] >= 0)
            k += (size_t)snprintf(buf + k, n - k, "%s%lld", sep, (long long)t->dims[i]);
        else
            k += (size_t)snprintf(buf + k, n - k, "%s%s", sep,
                                  t->dim_names && t->dim_names[i] ? t->dim_names[i] : "?");
    }
    if (k < n)
        snprintf(buf + k, n - k, "]");
}

/* Reads every --input NAME=FILE.npy into in[k], k the index of NAME among
 * the model's input names; files[k] keeps the file's path. Prints the error
 * and returns -1 on a malformed option, an unknown or repeated name, or an
 * unreadable file. */
static int read_inputs(const args *a, const char *const *names, int nin, ir_tensor *in,
                       const char **files)
{
    icc_diag d = {{0}};
    for (int i = 0; i < a->ninputs; i++) {
        const char *arg = a->inputs[i], *eq = strchr(arg, '=');
        if (!eq)
            return icc_fail("--input '%s': expected NAME=FILE.npy", arg), -1;
        int k = -1;
        for (int j = 0; j < nin; j++)
            if (strlen(names[j]) == (size_t)(eq - arg) && !strncmp(names[j], arg, (size_t)(eq - arg)))
                k = j;
        if (k < 0)
            return icc_fail("%s: the model has no input named '%.*s'", a->model, (int)(eq - arg), arg), -1;
        if (files[k])
            return icc_fail("input '%s' is given twice", names[k]), -1;
        if (icc_npy_read(eq + 1, &in[k], &d) < 0)
            return icc_fail("%s", d.msg), -1;
        files[k] = eq + 1;
    }
    return 0;
}

/* icc run MODEL.so: the compiled model through the runtime API (the
 * same checks and messages an application gets), inputs by name from
 * .npy files, outputs sized by icc_output_dims. */
static int cmd_run_compiled(const args *a)
{
    if (a->passes || a->level >= 0)
        return icc_fail("%s: -O and --passes do not apply to a compiled model", a->model);
    icc_model *m = NULL;
    if (icc_model_open(a->model, a->name, &m) != ICC_OK)
        return icc_fail("%s", icc_last_error());
    const icc_model_desc *desc = icc_model_describe(m);
    int nin = desc->ninputs, nout = desc->noutputs, rc = 1;
    icc_diag d = {{0}};
    icc_context *ctx = NULL;
    ir_tensor *in = calloc((size_t)nin + 1, sizeof *in);
    ir_tensor *out = calloc((size_t)nout + 1, sizeof *out);
    icc_tensor *args_in = calloc((size_t)nin + 1, sizeof *args_in);
    const int64_t **in_dims = calloc((size_t)nin + 1, sizeof *in_dims);
    void **bufs = calloc((size_t)nout + 1, sizeof *bufs);
    const char **names = calloc((size_t)nout + 1, sizeof *names);
    bool *given = calloc((size_t)nin + 1, 1);
    if (!in || !out || !args_in || !in_dims || !bufs || !names || !given) {
        icc_fail("out of memory");
        goto done;
    }
    const char **in_names = calloc((size_t)nin + 1, sizeof *in_names);
    const char **files = calloc((size_t)nin + 1, sizeof *files);
    if (!in_names || !files) {
        free(in_names);
        free(files);
        icc_fail("out of memory");
        goto done;
    }
    for (int k = 0; k < nin; k++)
        in_names[k] = icc_model_input(m, k)->name;
    int got = read_inputs(a, in_names, nin, in, files);
    for (int k = 0; got == 0 && k < nin; k++) {
        const icc_tensor_desc *t = icc_model_input(m, k);
        given[k] = files[k] != NULL;
        if (!given[k])
            continue;
        char want[512];
        desc_type_str(t, want, sizeof want);
        if (ir_dtype_to_onnx(in[k].dtype) != t->dtype)
            got = icc_fail("%s: input '%s' wants dtype %s, but %s holds %s", a->model, t->name, want, files[k],
                       ir_dtype_name(in[k].dtype));
        else if (in[k].rank != t->rank)
            got = icc_fail("%s: input '%s' wants rank %d (%s), but %s has rank %d", a->model, t->name,
                       t->rank, want, files[k], in[k].rank);
    }
    free(in_names);
    free(files);
    if (got)
        goto done;
    for (int k = 0; k < nin; k++) {
        const icc_tensor_desc *t = icc_model_input(m, k);
        if (!given[k]) {
            char want[512];
            desc_type_str(t, want, sizeof want);
            icc_fail("%s: input '%s' (%s) is not given; pass --input %s=FILE.npy", a->model, t->name,
                 want, t->name);
            goto done;
        }
        args_in[k] = (icc_tensor){in[k].data, t->dtype, in[k].rank, in[k].dims};
        in_dims[k] = in[k].dims;
    }
    for (int o = 0; o < nout; o++) {
        const icc_tensor_desc *t = icc_model_output(m, o);
        names[o] = t->name;
        ir_dtype dt = ir_dtype_from_onnx(t->dtype);
        int64_t dims[64];
        if (t->rank > IR_MAX_RANK || !dt) {
            icc_fail("%s: output '%s' (dtype %d, rank %d) cannot be held in a .npy by icc", a->model,
                 t->name, t->dtype, t->rank);
            goto done;
        }
        if (icc_output_dims(m, in_dims, o, dims) != ICC_OK) {
            icc_fail("%s: %s", a->model, icc_last_error());
            goto done;
        }
        if (ir_tensor_init(&out[o], dt, t->rank, dims, &d) < 0) {
            icc_fail("%s: output '%s': %s", a->model, t->name, d.msg);
            goto done;
        }
        out[o].data = bufs[o] = malloc(out[o].nbytes ? out[o].nbytes : 1);
        if (!out[o].data) {
            icc_fail("%s: out of memory for output '%s'", a->model, t->name);
            goto done;
        }
    }
    if (icc_context_create(m, NULL, &ctx) != ICC_OK) {
        icc_fail("%s", icc_last_error());
        goto done;
    }
    if (icc_run_tensors(ctx, args_in, nin, bufs) != ICC_OK) {
        icc_fail("%s: %s", a->model, icc_context_error(ctx));
        goto done;
    }
    rc = emit_outputs(a, names, out, nout);
done:
    icc_context_destroy(ctx);
    if (in)
        ir_tensors_free(in, nin);
    if (out)
        ir_tensors_free(out, nout);
    free(in);
    free(out);
    free(args_in);
    free(in_dims);
    free(bufs);
    free(names);
    free(given);
    icc_model_close(m);
    return rc;
}

static int cmd_run(const args *a)
{
    icc_diag d = {{0}};
    if (ir_ends_with(a->model, ".so"))
        return cmd_run_compiled(a);
    ir_graph *g = load_model(a, a->model, &d);
    if (!g)
        return icc_fail("%s", d.msg);
    if (run_passes(a, g, -1, NULL, &d) < 0) {
        ir_graph_destroy(g);
        return icc_fail("%s: %s", a->model, d.msg);
    }
    int rc = 1;
    ir_tensor *in = calloc((size_t)g->ninputs + 1, sizeof *in);
    ir_tensor *out = calloc((size_t)g->noutputs + 1, sizeof *out);
    bool *given = calloc((size_t)g->ninputs + 1, 1);
    bool ran = false;
    if (!in || !out || !given) {
        icc_fail("out of memory");
        goto done;
    }
    {
        const char **in_names = calloc((size_t)g->ninputs + 1, sizeof *in_names);
        const char **files = calloc((size_t)g->ninputs + 1, sizeof *files);
        int got = in_names && files ? 0 : icc_fail("out of memory");
        for (int j = 0; got == 0 && j < g->ninputs; j++)
            in_names[j] = g->inputs[j]->name;
        if (got == 0)
            got = read_inputs(a, in_names, g->ninputs, in, files);
        for (int j = 0; files && j < g->ninputs; j++)
            given[j] = files[j] != NULL;
        free(in_names);
        free(files);
        if (got)
            goto done;
    }
    for (int j = 0; j < g->ninputs; j++)
        if (!given[j]) {
            char t[256];
            type_str(g, &g->inputs[j]->type, t, sizeof t);
            icc_fail("%s: input '%s' (%s) is not given; pass --input %s=FILE.npy", a->model,
                 g->inputs[j]->name, t, g->inputs[j]->name);
            goto done;
        }
    if (ir_interp_run(g, in, out, &d) < 0) {
        icc_fail("%s: %s", a->model, d.msg);
        goto done;
    }
    ran = true;
    const char **names = calloc((size_t)g->noutputs + 1, sizeof *names);
    if (!names) {
        icc_fail("out of memory");
        goto done;
    }
    for (int i = 0; i < g->noutputs; i++)
        names[i] = g->outputs[i]->name;
    rc = emit_outputs(a, names, out, g->noutputs);
    free(names);
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

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One side of verify's comparison: a model after the compile pipeline at
 * some precision and, when compiled, its library opened. */
typedef struct verify_side {
    ir_graph *g;
    char so[96];
    icc_model *m;
    icc_context *ctx;
    double seconds;            /* pipeline and compile */
} verify_side;

static void side_free(verify_side *s)
{
    icc_context_destroy(s->ctx);
    icc_model_close(s->m);
    if (s->so[0])
        unlink(s->so);
    ir_graph_destroy(s->g);
    *s = (verify_side){0};
}

/* Loads model, pins its shapes and runs the compile pipeline at prec;
 * with dir, compiles it to dir/tag.so and opens it. */
static int side_build(const args *a, const char *model, const icc_precision_opts *prec, const char *dir,
                      const char *tag, verify_side *s, icc_diag *d)
{
    *s = (verify_side){0};
    double t0 = now_s();
    args b = *a;
    b.prec = *prec;
    b.popts.precision = &b.prec;
    if (prec->mode != ICC_PREC_INT8)
        b.calibrate = NULL;   /* --calibrate's ranges are for the int8 side only */
    /* The traced graph (--per-node, --bisect) compares values by name
     * with the other side's: pack-b would rename a weight and store it in
     * another order, so that graph is built without it, and the library
     * (which must be the one users get) from a second graph with it. */
    bool traced = a->per_node || a->bisect;
    b.popts.skip = traced ? "pack-b" : NULL;
    if (!(s->g = load_model(&b, model, d)))
        return -1;
    if (pin_shapes(&b, s->g, d) < 0 || compile_passes(&b, s->g, d) < 0)
        return ir_diag_prefix(d, "%s", model), -1;
    if (dir) {
        ir_graph *lib = s->g;
        b.popts.skip = NULL;
        if (traced) {
            if (!(lib = load_model(&b, model, d)))
                return -1;
            if (pin_shapes(&b, lib, d) < 0 || compile_passes(&b, lib, d) < 0) {
                ir_graph_destroy(lib);
                return ir_diag_prefix(d, "%s", model), -1;
            }
        }
        snprintf(s->so, sizeof s->so, "%s/%s.so", dir, tag);
        icc_compile_opts o = {NULL, s->so, a->name, NULL, a->cuda ? a->cuda_arch : a->march,
                              a->level >= 0 ? a->level : DEFAULT_LEVEL, false, a->embed_limit, NULL, false, a->verbose,
                              false, a->cuda ? "cuda" : NULL};
        int crc = icc_compile_graph(lib, &o, d);
        if (lib != s->g)
            ir_graph_destroy(lib);
        if (crc < 0) {
            s->so[0] = 0;
            return ir_diag_prefix(d, "%s", model), -1;
        }
        if (icc_model_open(s->so, a->name, &s->m) != ICC_OK || icc_context_create(s->m, NULL, &s->ctx) != ICC_OK)
            return ir_errorf(d, "%s", icc_last_error());
    }
    s->seconds = now_s() - t0;
    return 0;
}

/* Every set through the interpreter on r (the reference) and t (under
 * test) keeping every value, compared node by node into p. */
static int per_node(const verify_side *r, const verify_side *t, const char *model, const char *const *names,
                    const icc_verify_sets *sets, icc_verify_per_node *p, icc_diag *d)
{
    *p = (icc_verify_per_node){0};
    int n = sets->ninputs;
    ir_tensor *ri = calloc((size_t)r->g->ninputs + 1, sizeof *ri), *ti = calloc((size_t)t->g->ninputs + 1, sizeof *ti);
    int rc = ri && ti ? 0 : ir_errorf(d, "out of memory");
    for (int s = 0; rc == 0 && s < sets->nsets; s++) {
        const ir_tensor *set = sets->t + (size_t)s * (size_t)n;
        icc_verify_trace rt = {0}, tt = {0};
        bool bad = icc_verify_inputs_by_name(r->g, model, names, set, n, ri, d) < 0 ||
                   icc_verify_inputs_by_name(t->g, model, names, set, n, ti, d) < 0 ||
                   icc_verify_trace_run(r->g, ri, &rt, d) < 0 || icc_verify_trace_run(t->g, ti, &tt, d) < 0 ||
                   icc_verify_compare_nodes(r->g, &rt, t->g, &tt, p, d) < 0;
        rc = bad ? -1 : 0;
        icc_verify_trace_free(&rt);
        icc_verify_trace_free(&tt);
    }
    free(ri);
    free(ti);
    if (rc < 0)
        icc_verify_per_node_free(p);
    return rc;
}

/* Runs r (the reference) and t on every set and measures each of t's
 * outputs against r's output of the same name. r without a library runs
 * through the interpreter. o[k] (t's outputs) is filled. */
static int measure_outputs(const args *a, verify_side *r, verify_side *t, const char *const *names,
                           const icc_verify_sets *sets, double thr, icc_verify_output *o, double *t_ref,
                           double *t_test, icc_diag *d)
{
    int n = sets->ninputs, nref = r->g->noutputs, nout = icc_model_describe(t->m)->noutputs, rc = 0;
    ir_tensor *want = calloc((size_t)nref + 1, sizeof *want), *got = calloc((size_t)nout + 1, sizeof *got);
    ir_tensor *ri = calloc((size_t)r->g->ninputs + 1, sizeof *ri);
    if (!want || !got || !ri)
        rc = ir_errorf(d, "out of memory");
    for (int k = 0; k < nout; k++)
        o[k] = (icc_verify_output){.name = icc_model_output(t->m, k)->name, .bad = r->m ? -1 : 0};
    for (int s = 0; rc == 0 && s < sets->nsets; s++) {
        const ir_tensor *set = sets->t + (size_t)s * (size_t)n;
        double t0 = now_s();
        if (r->m)
            rc = icc_verify_run_library(r->m, r->ctx, a->reference ? a->reference : a->model, names, set, n, want, d);
        else if ((rc = icc_verify_inputs_by_name(r->g, a->model, names, set, n, ri, d)) == 0 &&
                 (rc = ir_interp_run(r->g, ri, want, d)) < 0)
            ir_diag_prefix(d, "%s: the interpreter", a->model);
        if (rc < 0)
            break;
        double t1 = now_s();
        if ((rc = icc_verify_run_library(t->m, t->ctx, a->model, names, set, n, got, d)) < 0) {
            ir_tensors_free(want, nref);
            break;
        }
        if (s == 0)
            *t_ref = t1 - t0, *t_test = now_s() - t1;
        for (int k = 0; k < nout; k++) {
            int j = 0;
            while (j < nref && strcmp(r->g->outputs[j]->name, o[k].name))
                j++;
            if (j == nref) {
                rc = ir_errorf(d, "%s: the reference has no output named '%s'", a->reference ? a->reference : a->model,
                               o[k].name);
                break;
            }
            icc_verify_diff df;
            icc_verify_compare(&got[k], &want[j], a->rtol, a->atol, &df);
            o[k].numel = want[j].numel;
            if (df.shape_differs) {
                o[k].shape_differs = true;
                continue;
            }
            if (o[k].bad >= 0)
                o[k].bad += df.bad;
            icc_verify_metrics m;
            icc_verify_measure(&got[k], &want[j], &m);
            icc_verify_summary_add(&o[k].s, &m);
            o[k].below = r->m && o[k].s.worst.sqnr_db < thr;
        }
        ir_tensors_free(want, nref);
        ir_tensors_free(got, nout);
    }
    free(want);
    free(got);
    free(ri);
    return rc;
}

/* The inputs verify runs on: the sets of --inputs=DIR, else one set of
 * the --input files with the other inputs made up. */
static int verify_inputs(const args *a, const ir_graph *g, icc_verify_sets *sets, icc_diag *d)
{
    if (a->inputs_dir)
        return icc_verify_load_sets(a->inputs_dir, g, sets, d) < 0 ? (icc_fail("%s", d->msg), -1) : 0;
    int nin = g->ninputs;
    *sets = (icc_verify_sets){1, nin, calloc((size_t)nin + 1, sizeof(ir_tensor))};
    const char **names = calloc((size_t)nin + 1, sizeof *names), **files = calloc((size_t)nin + 1, sizeof *files);
    int rc = sets->t && names && files ? 0 : icc_fail("out of memory");
    for (int k = 0; k < nin; k++)
        if (names)
            names[k] = g->inputs[k]->name;
    if (rc == 0)
        rc = read_inputs(a, names, nin, sets->t, files);
    for (int k = 0; rc == 0 && k < nin; k++)
        if (!files[k] && icc_verify_random_input(&sets->t[k], &g->inputs[k]->type, (uint64_t)k + 1, d) < 0)
            rc = icc_fail("%s: input '%s': %s", a->model, names[k], d->msg);
    free(names);
    free(files);
    if (rc)
        icc_verify_sets_free(sets);
    return rc ? -1 : 0;
}

/* The outputs' report: text, or with --json one object per output. */
static void report_outputs(const args *a, const icc_verify_output *o, int n, double thr, bool pair, FILE *json)
{
    for (int k = 0; k < n; k++) {
        if (json) {
            fputs(k ? ", " : "", json);
            icc_verify_json_output(json, &o[k]);
            continue;
        }
        char status[96] = "ok";
        if (o[k].shape_differs)
            snprintf(status, sizeof status, "MISMATCH");
        else if (pair && o[k].below)
            snprintf(status, sizeof status, "BELOW %g dB", thr);
        else if (o[k].bad > 0)
            snprintf(status, sizeof status, "MISMATCH (%lld beyond atol %g + rtol %g)", (long long)o[k].bad, a->atol,
                     a->rtol);
        icc_verify_print_output(stdout, &o[k], status);
    }
}

/* --bisect: the first node (topological order) whose output's SQNR is
 * below thr is added to the keep list, the per-node comparison re-run on
 * the graph that makes, until no node is below (at most 16 rounds); then
 * the outputs are re-verified compiled with that list. p0 is the first
 * round's comparison. *keep_out receives the list (malloc'd; NULL when
 * nothing was added). */
static int bisect(const args *a, verify_side *r, const verify_side *t0, const icc_verify_per_node *p0,
                  const char *const *names, const icc_verify_sets *sets, double thr, const char *dir,
                  char **keep_out, FILE *json, icc_diag *d)
{
    char *keep = a->prec.keep ? strdup(a->prec.keep) : NULL;
    icc_verify_per_node p = *p0, cur = {0};
    const ir_graph *g = t0->g;     /* the graph p's rows are from (they borrow its names) */
    verify_side t = {0};
    int rc = 0, added = 0;
    const char *why = NULL;
    *keep_out = NULL;
    if (json) {
        fputs(", \"bisect\": {\"threshold_db\": ", json);
        icc_verify_json_number(json, thr);
        fputs(", \"steps\": [", json);
    }
    for (int round = 0; round < 16; round++) {
        int first = icc_verify_first_below(&p, thr), i = icc_verify_pick(&p, g, thr);
        if (first < 0) {
            if (!json)
                printf("bisect: every compared node's output is at or above %g dB%s\n", thr, added ? " now" : "");
            break;
        }
        const icc_verify_node_row *f = &p.rows[first], *row = i >= 0 ? &p.rows[i] : NULL;
        if (!json)
            printf("bisect: first node below %g dB: '%s' (%s), output '%s' at %.2f dB\n", thr, f->node_name,
                   ir_ops[f->op].name, f->value, f->m.sqnr_db);
        if (row && row != f && !json)
            printf("bisect:   it is not lowered: its error comes from its inputs; of the lowered nodes it depends "
                   "on, '%s' (%s) has the lowest SQNR, %.2f dB\n", row->node_name, ir_ops[row->op].name,
                   row->m.sqnr_db);
        if (json) {
            fprintf(json, "%s{\"node\": ", round ? ", " : "");
            icc_verify_json_string(json, f->node_name);
            fprintf(json, ", \"op\": \"%s\", \"value\": ", ir_ops[f->op].name);
            icc_verify_json_string(json, f->value);
            fputs(", \"sqnr_db\": ", json);
            icc_verify_json_number(json, f->m.sqnr_db);
            if (row) {
                fputs(", \"keep\": ", json);
                icc_verify_json_string(json, row->node_name);
            }
            fputc('}', json);
        }
        if (!row) {
            why = "it is not lowered and no lowered node it depends on is left: its error is not one node's";
            break;
        }
        if (!*row->node_name) {
            why = "the node has no name for --keep-fp32";
            break;
        }
        if (a->prec.mode == ICC_PREC_FP32) {
            why = "MODEL is compared as given (no --precision): nothing to keep in fp32";
            break;
        }
        if (icc_verify_list_has(keep, row->node_name)) {
            why = "it is kept in fp32 already";
            break;
        }
        char *k2 = icc_verify_list_append(keep, row->node_name);
        if (!k2) {
            rc = ir_errorf(d, "out of memory");
            break;
        }
        free(keep);
        keep = k2;
        added++;
        icc_precision_opts po = a->prec;
        po.keep = keep;
        verify_side t2 = {0};
        icc_verify_per_node p2 = {0};
        if (side_build(a, a->model, &po, NULL, NULL, &t2, d) < 0 ||
            per_node(r, &t2, a->model, names, sets, &p2, d) < 0) {
            side_free(&t2);
            rc = -1;
            break;
        }
        /* the rows borrow the graph's names: drop the previous pair only now */
        icc_verify_per_node_free(&cur);
        side_free(&t);
        cur = p2, t = t2, p = cur, g = t.g;
    }
    if (json)
        fputs("]", json);
    if (why && !json)
        printf("bisect: stopped: %s\n", why);
    if (rc == 0 && added) {
        /* The fix, compiled: every output before and after. */
        icc_precision_opts po = a->prec;
        po.keep = keep;
        verify_side t = {0};
        int nout = r->g->noutputs;
        icc_verify_output *o = calloc((size_t)nout + 1, sizeof *o);
        double tr, tt;
        if (!o)
            rc = ir_errorf(d, "out of memory");
        else if (side_build(a, a->model, &po, dir, "fixed", &t, d) < 0 ||
                 measure_outputs(a, r, &t, names, sets, thr, o, &tr, &tt, d) < 0)
            rc = -1;
        if (rc == 0 && json) {
            fputs(", \"keep_fp32\": ", json);
            icc_verify_json_string(json, keep);
            fputs(", \"outputs_after\": [", json);
            report_outputs(a, o, icc_model_describe(t.m)->noutputs, thr, true, json);
            fputs("]", json);
        } else if (rc == 0) {
            printf("re-verified with --keep-fp32=%s:\n", keep);
            report_outputs(a, o, icc_model_describe(t.m)->noutputs, thr, true, NULL);
            printf("fix: --keep-fp32=%s\n", keep);
        }
        free(o);
        side_free(&t);
        *keep_out = keep;
        keep = NULL;
    }
    if (json && why) {
        fputs(", \"stopped\": ", json);
        icc_verify_json_string(json, why);
    }
    if (json)
        fputs("}", json);
    icc_verify_per_node_free(&cur);
    side_free(&t);
    free(keep);
    return rc;
}

/* icc verify MODEL. Without --precision (or --reference): compiles MODEL
 * (as `icc MODEL -o model.so` would) to a temporary .so and runs it and
 * the reference interpreter (on the graph before any pass) on the same
 * inputs, and prints each output's errors; exit 1 beyond --rtol/--atol.
 * With --precision=P: compiles MODEL at fp32 (or --reference, the fp32
 * model a reduced MODEL came from) and at P, runs both, and prints how far
 * P's outputs are from fp32's; exit 1 when one's SQNR is below the
 * threshold. --per-node and --bisect compare every intermediate through
 * the interpreter (docs/precision.md). */
static int cmd_verify(const args *a)
{
    icc_diag d = {{0}};
    /* --target=cuda: the CUDA library against the CPU's, fp32 */
    bool pair = a->prec.mode != ICC_PREC_FP32 || a->reference || a->cuda;
    if (a->ninputs && a->inputs_dir)
        return icc_fail("give --input NAME=FILE.npy or --inputs=DIR, not both");
    if (a->cuda && (a->per_node || a->bisect || a->reference))
        return icc_fail("--target=cuda compares the CUDA library with the CPU one: no --per-node, --bisect or "
                        "--reference");
    args cpu = *a;
    cpu.cuda = false;
    cpu.cuda_arch = NULL;
    if ((a->per_node || a->bisect) && !pair)
        return icc_fail("--per-node and --bisect compare two precisions: give --precision=P "
                        "(or --reference=FP32_MODEL)");
    double thr = !isnan(a->bisect_db) ? a->bisect_db : icc_verify_default_threshold(a->prec.mode);
    int rc = 1, nout = 0;
    char dir[] = "/tmp/icc-verify-XXXXXX";
    bool made_dir = false;
    verify_side r = {0}, t = {0};
    icc_verify_sets sets = {0};
    icc_verify_output *o = NULL;
    icc_verify_per_node pn = {0};
    const char **names = NULL;
    char *fix = NULL;
    const icc_precision_opts fp32 = {ICC_PREC_FP32, NULL, false, NULL};
    FILE *json = a->json ? stdout : NULL;
    if (!mkdtemp(dir)) {
        icc_fail("cannot make a temporary folder: %s", strerror(errno));
        goto done;
    }
    made_dir = true;
    if (side_build(a, a->model, pair ? &a->prec : &fp32, dir, "test", &t, &d) < 0) {
        icc_fail("%s", d.msg);
        goto done;
    }
    if (pair ? side_build(&cpu, a->reference ? a->reference : a->model, &fp32, dir, "ref", &r, &d) < 0
             : !(r.g = load_model(a, a->model, &d)) || pin_shapes(a, r.g, &d) < 0) {
        icc_fail("%s%s%s", r.g && !pair ? a->model : "", r.g && !pair ? ": " : "", d.msg);
        goto done;
    }
    const ir_graph *gin = pair ? t.g : r.g;   /* whose inputs the sets hold */
    if (verify_inputs(a, gin, &sets, &d) < 0)
        goto done;
    names = calloc((size_t)gin->ninputs + 1, sizeof *names);
    nout = icc_model_describe(t.m)->noutputs;
    o = calloc((size_t)nout + 1, sizeof *o);
    if (!names || !o) {
        icc_fail("out of memory");
        goto done;
    }
    for (int k = 0; k < gin->ninputs; k++)
        names[k] = gin->inputs[k]->name;
    double t_ref = 0, t_test = 0;
    if (measure_outputs(a, &r, &t, names, &sets, thr, o, &t_ref, &t_test, &d) < 0) {
        icc_fail("%s", d.msg);
        goto done;
    }
    if (json) {
        fputs("{\"model\": ", json);
        icc_verify_json_string(json, a->model);
        fprintf(json, ", \"precision\": \"%s\", \"reference\": ", icc_precision_name(a->prec.mode));
        icc_verify_json_string(json, a->reference ? a->reference : a->cuda ? "cpu fp32" : pair ? "fp32" : "interpreter");
        fprintf(json, ", \"target\": \"%s\"", a->cuda ? "cuda" : "cpu");
        fprintf(json, ", \"sets\": %d, \"threshold_db\": ", sets.nsets);
        icc_verify_json_number(json, pair ? thr : NAN);
        fputs(", \"outputs\": [", json);
    } else if (pair) {
        const char *pn = icc_precision_name(a->prec.mode);
        if (a->cuda)
            printf("%s: compiled for the CPU (fp32) in %.2f s and for CUDA (%s, %s) in %.2f s; %d input set%s; first "
                   "run %.3f ms CPU, %.3f ms CUDA\n",
                   a->model, r.seconds, a->cuda_arch ? a->cuda_arch : "sm_90", pn, t.seconds, sets.nsets,
                   sets.nsets == 1 ? "" : "s", t_ref * 1e3, t_test * 1e3);
        else if (a->reference)
            printf("%s (%s) compiled in %.2f s, the reference %s (fp32) in %.2f s; %d input set%s; first run "
                   "%.3f ms, reference %.3f ms\n",
                   a->model, pn, t.seconds, a->reference, r.seconds, sets.nsets, sets.nsets == 1 ? "" : "s",
                   t_test * 1e3, t_ref * 1e3);
        else
            printf("%s: compiled at fp32 in %.2f s and at %s in %.2f s; %d input set%s; first run %.3f ms fp32, "
                   "%.3f ms %s\n",
                   a->model, r.seconds, pn, t.seconds, sets.nsets, sets.nsets == 1 ? "" : "s", t_ref * 1e3,
                   t_test * 1e3, pn);
    } else {
        printf("%s: compiled in %.2f s; first run %.3f ms compiled, %.3f ms interpreted%s\n", a->model, t.seconds,
               t_test * 1e3, t_ref * 1e3, sets.nsets > 1 ? " (first input set)" : "");
    }
    report_outputs(a, o, nout, thr, pair, json);
    if (json)
        fputs("]", json);
    if (a->per_node || a->bisect) {
        if (per_node(&r, &t, a->model, names, &sets, &pn, &d) < 0) {
            if (json)
                fputs("}\n", json);
            icc_fail("%s", d.msg);
            goto done;
        }
        if (a->per_node && json) {
            fputs(", \"per_node\": ", json);
            icc_verify_json_per_node(json, &pn);
        } else if (a->per_node) {
            icc_verify_print_per_node(stdout, &pn, thr, a->reference ? a->reference : "fp32");
        }
        if (a->bisect && bisect(a, &r, &t, &pn, names, &sets, thr, dir, &fix, json, &d) < 0) {
            if (json)
                fputs("}\n", json);
            icc_fail("%s", d.msg);
            goto done;
        }
    }
    if (json)
        fputs("}\n", json);
    rc = 0;
    for (int k = 0; k < nout && !rc; k++)
        if (o[k].shape_differs || o[k].bad > 0 || o[k].below) {
            rc = 1;
            if (!pair)
                icc_fail("%s: the compiled model differs from the interpreter", a->model);
            else if (o[k].shape_differs)
                icc_fail("%s: output '%s' has another shape at %s", a->model, o[k].name,
                         icc_precision_name(a->prec.mode));
            else
                icc_fail("%s: output '%s'%s%s: SQNR %.2f dB against %s, below %g dB%s%s", a->model, o[k].name,
                     a->prec.mode ? " at " : "", a->prec.mode ? icc_precision_name(a->prec.mode) : "",
                     o[k].s.worst.sqnr_db, a->reference ? a->reference : "fp32", thr, fix ? "; fixed by --keep-fp32=" : "", fix ? fix : "");
        }
done:
    fflush(stdout);
    side_free(&t);
    side_free(&r);
    if (made_dir)
        rmdir(dir);
    icc_verify_sets_free(&sets);
    icc_verify_per_node_free(&pn);
    free(o);
    free(names);
    free(fix);
    return rc;
}

/* Markdown table of the registry: docs/ops.md. */
static int cmd_ops_doc(void)
{
    printf("# Operators\n\n"
           "Generated from `ir/ops.def` by `icc --ops-doc`; do not edit by hand.\n"
           "Semantics follow the newest ONNX opset; the frontend rewrites older opsets.\n\n"
           "Lowering: the codegen family that compiles the op (codegen/lower/). Fusion: elementwise ops\n"
           "join fused groups; an anchor's kernel computes the group's elementwise members after it (its\n"
           "epilogue), and one that takes a prologue those before its data input. Symbolic dims: compiled\n"
           "with them as they are, or per batch item when dim 0 is the only symbolic dim (\"axis > 0\": when\n"
           "it works along another axis); otherwise the dims must be pinned. FLOPs: what `icc info` counts.\n\n"
           "| op | inputs | outputs | input dtypes | attributes (default) | lowering | fusion | symbolic dims "
           "| FLOPs | semantics |\n"
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (int op = 0; op < IR_OP_COUNT; op++) {
        const ir_op_info *o = &ir_ops[op];
        char in[32], out[32], attrs[1024] = "";
        snprintf(in, sizeof in, o->max_in < 0 ? "%d+" : o->min_in == o->max_in ? "%d" : "%d-%d",
                 o->min_in, o->max_in);
        snprintf(out, sizeof out, o->max_out < 0 ? "%d+" : o->min_out == o->max_out ? "%d" : "%d-%d",
                 o->min_out, o->max_out);
        const ir_attr_schema *s;
        static const char *const kinds[] = {
            [IR_ATTR_INT] = "int", [IR_ATTR_FLOAT] = "float", [IR_ATTR_STRING] = "string",
            [IR_ATTR_INTS] = "ints", [IR_ATTR_FLOATS] = "floats", [IR_ATTR_STRINGS] = "strings",
            [IR_ATTR_TENSOR] = "tensor", [IR_ATTR_GRAPH] = "graph"};
        _Static_assert(sizeof kinds / sizeof *kinds == IR_ATTR_GRAPH + 1, "a name per attribute kind");
        for (int i = 0; (s = ir_op_attr_schema(op, i)); i++)
            snprintf(attrs + strlen(attrs), sizeof attrs - strlen(attrs), "%s`%s`: %s%s%s%s%s",
                     i ? "<br>" : "", s->name, kinds[s->kind], s->required ? " (required)" : "",
                     s->has_def ? " (" : "", s->has_def ? s->def : "", s->has_def ? ")" : "");
        unsigned fl = o->flags;
        const char *fusion = fl & IR_F_ELEMWISE ? "elementwise"
                           : fl & IR_F_PROLOGUE ? "anchor, prologue"
                           : fl & IR_F_ANCHOR ? "anchor" : "";
        const char *dims = fl & IR_F_SYMBOLIC ? "as they are"
                         : fl & IR_F_BATCH ? "per batch item"
                         : fl & IR_F_BATCH_AXIS ? "per batch item (axis > 0)" : "";
        printf("| %s%s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", o->name,
               fl & IR_F_INTERNAL ? " (internal)" : "", in, out, o->types, attrs, ir_family_name(o->family),
               fusion, dims, ir_flop_name(o->flops), o->doc);
    }
    printf("\n%d ops.\n", IR_OP_COUNT);
    return 0;
}

/* This icc's path (bench compiles with it): /proc/self/exe, else argv[0]. */
static const char *self_path(const char *argv0)
{
    static char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0)
        return argv0;
    exe[len] = 0;
    return exe;
}

int main(int argc, char **argv)
{
    args a = {.cmd = "compile", .level = -1, .dflt_level = 0, .rtol = 1e-4, .atol = 1e-5, .bisect_db = NAN,
              .embed_limit = (int64_t)1 << 30};
    bool weights_embedded = false;
    if (argc > 1 && !strcmp(argv[1], "bench"))   /* options of its own (tools/bench.c) */
        return icc_bench_main(argc - 2, argv + 2, self_path(argv[0]));
    int i = 1;
    if (argc > 1 && (!strcmp(argv[1], "info") || !strcmp(argv[1], "run") || !strcmp(argv[1], "opt") ||
                     !strcmp(argv[1], "verify"))) {
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
        } else if (!strncmp(s, "--precision=", 12)) {
            icc_diag d = {{0}};
            if (icc_precision_parse(s + 12, &a.prec.mode, &d) < 0)
                return icc_fail("%s", d.msg);
        } else if (!strncmp(s, "--keep-fp32=", 12)) {
            a.prec.keep = s + 12;
        } else if (!strcmp(s, "--no-default-keep")) {
            a.prec.no_default_keep = true;
        } else if (!strncmp(s, "--calibrate=", 12)) {
            a.calibrate = s + 12;
        } else if (!strncmp(s, "--calibrate-method=", 19)) {
            icc_diag d = {{0}};
            if (icc_calib_method_parse(s + 19, &a.calib, &d) < 0)
                return icc_fail("%s", d.msg);
        } else if (!strncmp(s, "--int8-activations=", 19)) {
            if (strcmp(s + 19, "u8") && strcmp(s + 19, "i8"))
                return icc_fail("--int8-activations=%s: expected u8 (asymmetric) or i8 (symmetric)", s + 19);
            a.calib.symmetric = !strcmp(s + 19, "i8");
        } else if (!strncmp(s, "-march=", 7)) {
            a.march = s + 7;
        } else if (!strncmp(s, "--target=", 9)) {
            if (strcmp(s + 9, "cpu") && strcmp(s + 9, "cuda"))
                return icc_fail("--target=%s: expected cpu or cuda", s + 9);
            a.cuda = !strcmp(s + 9, "cuda");
        } else if (!strncmp(s, "--cuda-arch=", 12)) {
            a.cuda_arch = s + 12;
        } else if (!strncmp(s, "--target-triple=", 16)) {
            a.triple = s + 16;
        } else if (!strncmp(s, "--shape=", 8)) {
            if (a.nshapes == MAX_INPUTS)
                return icc_fail("too many --shape options (max %d)", MAX_INPUTS);
            a.shapes[a.nshapes++] = s + 8;
        } else if (!strncmp(s, "--weights=", 10)) {
            if (strcmp(s + 10, "external") && strcmp(s + 10, "embedded") && strcmp(s + 10, "auto"))
                return icc_fail("--weights=%s: expected auto (the default), embedded or external", s + 10);
            a.external_weights = !strcmp(s + 10, "external");
            weights_embedded = !strcmp(s + 10, "embedded");
        } else if (!strcmp(s, "--profile")) {
            a.profile = true;
        } else if (!strcmp(s, "--verbose")) {
            a.verbose = true;
        } else if (!strncmp(s, "--embed-limit=", 14)) {
            char *end;
            errno = 0;
            long long v = strtoll(s + 14, &end, 10);
            if (end == s + 14 || *end || v <= 0 || errno)
                return icc_fail("--embed-limit=%s: expected a positive number of bytes", s + 14);
            a.embed_limit = v;
        } else if (!strncmp(s, "--bind=", 7)) {
            if (a.nbinds == MAX_INPUTS)
                return icc_fail("too many --bind options (max %d)", MAX_INPUTS);
            a.binds[a.nbinds++] = s + 7;
        } else if (!strncmp(s, "--rtol=", 7) || !strncmp(s, "--atol=", 7)) {
            char *end;
            double v = strtod(s + 7, &end);
            if (end == s + 7 || *end || !(v >= 0))
                return icc_fail("%.6s needs a non-negative number, not '%s'", s, s + 7);
            *(s[2] == 'r' ? &a.rtol : &a.atol) = v;
        } else if (!strncmp(s, "--inputs=", 9)) {
            a.inputs_dir = s + 9;
        } else if (!strncmp(s, "--reference=", 12)) {
            a.reference = s + 12;
        } else if (!strcmp(s, "--per-node")) {
            a.per_node = true;
        } else if (!strcmp(s, "--json")) {
            a.json = true;
        } else if (!strcmp(s, "--bisect") || !strncmp(s, "--bisect=", 9)) {
            char *end;
            a.bisect = true;
            if (s[8] == '=' && ((a.bisect_db = strtod(s + 9, &end)), end == s + 9 || *end || !isfinite(a.bisect_db)))
                return icc_fail("--bisect=DB needs a number of dB (an SQNR), not '%s'", s + 9);
        } else if (!strncmp(s, "--name=", 7)) {
            a.name = s + 7;
        } else if (!strncmp(s, "--emit=", 7)) {
            a.emit = s + 7;
        } else if (!strcmp(s, "-o")) {
            if (++i >= argc)
                return icc_fail("-o needs a path");
            a.out = argv[i];
        } else if (!strcmp(s, "--input") || !strncmp(s, "--input=", 8)) {
            const char *v = s[7] == '=' ? s + 8 : (++i < argc ? argv[i] : NULL);
            if (!v)
                return icc_fail("--input needs NAME=FILE.npy");
            if (a.ninputs == MAX_INPUTS)
                return icc_fail("too many --input options (max %d)", MAX_INPUTS);
            a.inputs[a.ninputs++] = v;
        } else if (s[0] == '-' && s[1]) {
            return icc_fail("unknown option '%s' (see icc --help)", s);
        } else if (!a.model) {
            a.model = s;
        } else {
            return icc_fail("unexpected argument '%s' (one model at a time)", s);
        }
    }
    a.popts.precision = &a.prec;
    if (!a.model) {
        usage(stderr);
        return 1;
    }
    if (weights_embedded || a.external_weights)
        a.embed_limit = 0;
    if (strcmp(a.cmd, "verify") && (a.inputs_dir || a.reference || a.per_node || a.bisect || a.json))
        return icc_fail("%s is only for 'icc verify'", a.inputs_dir ? "--inputs" : a.reference ? "--reference"
                                                  : a.per_node ? "--per-node" : a.bisect ? "--bisect" : "--json");
    if (a.cuda_arch && !a.cuda)
        return icc_fail("--cuda-arch is for --target=cuda");
    if (a.cuda && (a.march || a.triple))
        return icc_fail("%s is for the CPU target, not --target=cuda (--cuda-arch=sm_XX picks the GPU)",
                        a.march ? "-march" : "--target-triple");
    if (a.cuda && strcmp(a.cmd, "compile") && strcmp(a.cmd, "verify"))
        return icc_fail("--target=cuda is for compiling (icc MODEL --target=cuda -o M.so); 'icc %s M.so' "
                        "then runs the CUDA library it wrote", a.cmd);
    if (!strcmp(a.cmd, "info"))
        return cmd_info(&a);
    if (!strcmp(a.cmd, "run"))
        return cmd_run(&a);
    if (!strcmp(a.cmd, "verify"))
        return cmd_verify(&a);
    if (strcmp(a.cmd, "opt") == 0) {
        if (!ir_ends_with(a.model, ".icc"))
            return icc_fail("%s: opt reads text IR (.icc)", a.model);
        return cmd_opt(&a);
    }
    if (a.ninputs)
        return icc_fail("--input is only for 'icc run'");
    return cmd_emit(&a);
}
