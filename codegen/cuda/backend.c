/* backend.c - the CUDA backend's table (codegen/backend.h): a target is an
 * sm_XX architecture (icc_target_desc_init_cuda), a program becomes one
 * CUDA C translation unit (the prelude, then every kernel: emit.c), and
 * NVRTC compiles it, while icc runs, into a cubin for that architecture
 * and PTX that newer GPUs can JIT. `--emit=cuda` and `--emit=ptx` print
 * them.
 *
 * The model library (`write`): the host side is an LLVM module for the
 * machine icc runs on (codegen/llvm/model.c, cg_llvm_assemble_host)
 * holding the descriptor, the weights and the device plan (plan.c: the
 * kernels as launches, the run's steps, the cubin and the PTX), linked
 * with the runtime, which runs the plan through the CUDA driver it opens
 * at context creation (runtime/cuda.c). */
#include "codegen/backend.h"
#include "codegen/cuda/emit.h"
#include "codegen/cuda/plan.h"
#include "codegen/llvm/model.h"
#include "codegen/llvm/target.h"

#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    icc_target_desc desc;
    char arch[16];             /* "sm_90": NVRTC's -arch */
    int sm;
    cg_target *host;           /* the machine the host side runs on (generic x86-64 or AArch64) */
} cuda_target;

struct cg_artifact {
    const cuda_target *t;      /* borrowed */
    char *source;              /* the translation unit; owned */
    char *ptx;                 /* owned */
    unsigned char *cubin;      /* owned */
    size_t ptx_bytes, cubin_bytes;
    char *log;                 /* NVRTC's or the linker's log of the last failure, or NULL; owned */
    int nkernels;
    LLVMModuleRef host;        /* the descriptor, the weights and the plan; owned */
    char plan_error[512];      /* why there is no host side (write reports it), or "" */
};

/* "sm_90", "sm90", "90" or NULL (sm_90) -> 90; -1 if malformed. */
static int parse_sm(const char *cpu)
{
    if (!cpu || !*cpu)
        return 90;
    if (!strncmp(cpu, "sm_", 3))
        cpu += 3;
    else if (!strncmp(cpu, "sm", 2))
        cpu += 2;
    char *end;
    long v = strtol(cpu, &end, 10);
    return end != cpu && !*end && v > 0 && v < 1000 ? (int)v : -1;
}

static int cuda_target_create(const char *triple, const char *cpu, const char *features, int opt_level,
                              void **tgt, icc_diag *d)
{
    (void)opt_level;
    *tgt = NULL;
    if (triple && *triple && strcmp(triple, "nvptx64-nvidia-cuda"))
        return ir_errorf(d, "the CUDA backend compiles for nvptx64-nvidia-cuda, not '%s'", triple);
    if (features && *features)
        return ir_errorf(d, "the CUDA backend takes no target features (got '%s'); choose the GPU with "
                            "--cuda-arch=sm_XX", features);
    int sm = parse_sm(cpu);
    if (sm < 0)
        return ir_errorf(d, "bad CUDA architecture '%s' (expected sm_XX, e.g. sm_90)", cpu);
    /* what this NVRTC can compile for */
    int n = 0;
    if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0 || n > 256)
        return ir_errorf(d, "NVRTC does not list the architectures it supports");
    int archs[256];
    if (nvrtcGetSupportedArchs(archs) != NVRTC_SUCCESS)
        return ir_errorf(d, "NVRTC does not list the architectures it supports");
    bool ok = false;
    char list[512] = "";
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        ok |= archs[i] == sm;
        if (len < sizeof list)
            len += (size_t)snprintf(list + len, sizeof list - len, "%ssm_%d", i ? ", " : "", archs[i]);
    }
    if (!ok)
        return ir_errorf(d, "this NVRTC cannot compile for sm_%d (it supports %s)", sm, list);
    cuda_target *t = calloc(1, sizeof *t);
    if (!t)
        return ir_errorf(d, "out of memory");
    if (icc_target_desc_init_cuda(&t->desc, sm, d) < 0) {
        free(t);
        return -1;
    }
    snprintf(t->arch, sizeof t->arch, "sm_%d", sm);
    t->sm = sm;
    if (cg_target_create(NULL, "generic", "", opt_level < 2 ? opt_level : 2, &t->host, d) < 0) {
        free(t);
        return -1;
    }
    *tgt = t;
    return 0;
}

static void cuda_target_destroy(void *tgt)
{
    cuda_target *t = tgt;
    if (t)
        cg_target_destroy(t->host);
    free(t);
}

static const icc_target_desc *cuda_target_desc(const void *tgt) { return &((const cuda_target *)tgt)->desc; }

static void cuda_artifact_free(cg_artifact *a)
{
    if (!a)
        return;
    free(a->source);
    free(a->ptx);
    free(a->cubin);
    free(a->log);
    if (a->host)
        LLVMDisposeModule(a->host);
    free(a);
}

/* The first line of an NVRTC log that says "error", for the one-line
 * message (the whole log is a->log, behind --verbose). */
static void first_error(const char *log, char *buf, size_t n)
{
    const char *p = log ? strstr(log, "error") : NULL;
    if (!p) {
        snprintf(buf, n, "see --verbose for NVRTC's log");
        return;
    }
    const char *line = p;
    while (line > log && line[-1] != '\n')
        line--;
    size_t len = strcspn(line, "\n");
    snprintf(buf, n, "%.*s", (int)(len < 300 ? len : 300), line);
}

/* Which kernel a log line "model.cu(LINE): error ..." falls in: the last
 * `ICC_KERNEL NAME(` line at or before LINE. */
static void kernel_at(const char *src, const char *msg, char *buf, size_t n)
{
    snprintf(buf, n, "?");
    const char *paren = strchr(msg, '(');
    long line = paren ? strtol(paren + 1, NULL, 10) : 0;
    long at = 1;
    for (const char *p = src; *p && at <= line; p++) {
        if (p == src || p[-1] == '\n') {
            if (!strncmp(p, "ICC_KERNEL ", 11)) {
                size_t len = strcspn(p + 11, "(");
                snprintf(buf, n, "%.*s", (int)(len < 200 ? len : 200), p + 11);
            }
        }
        if (*p == '\n')
            at++;
    }
}

static int nvrtc_compile(cg_artifact *a, icc_diag *d)
{
    nvrtcProgram prog;
    nvrtcResult r = nvrtcCreateProgram(&prog, a->source, "model.cu", 0, NULL, NULL);
    if (r != NVRTC_SUCCESS)
        return ir_errorf(d, "NVRTC: %s", nvrtcGetErrorString(r));
    char arch[32];
    snprintf(arch, sizeof arch, "-arch=%s", a->t->arch);
    const char *opts[] = {arch, "-std=c++17", "-default-device"};
    r = nvrtcCompileProgram(prog, 3, opts);
    int rc = 0;
    if (r != NVRTC_SUCCESS) {
        size_t n = 0;
        if (nvrtcGetProgramLogSize(prog, &n) == NVRTC_SUCCESS && n && (a->log = malloc(n)))
            nvrtcGetProgramLog(prog, a->log);
        char line[400], kernel[256];
        first_error(a->log, line, sizeof line);
        kernel_at(a->source, line, kernel, sizeof kernel);
        rc = ir_errorf(d, "NVRTC failed on kernel %s: %s", kernel, line);
    } else if (nvrtcGetPTXSize(prog, &a->ptx_bytes) != NVRTC_SUCCESS || !(a->ptx = malloc(a->ptx_bytes + 1)) ||
               nvrtcGetPTX(prog, a->ptx) != NVRTC_SUCCESS ||
               nvrtcGetCUBINSize(prog, &a->cubin_bytes) != NVRTC_SUCCESS || !a->cubin_bytes ||
               !(a->cubin = malloc(a->cubin_bytes)) || nvrtcGetCUBIN(prog, (char *)a->cubin) != NVRTC_SUCCESS) {
        rc = ir_errorf(d, "NVRTC: cannot read the PTX and cubin it compiled (out of memory?)");
    } else {
        a->ptx[a->ptx_bytes] = 0;
    }
    nvrtcDestroyProgram(&prog);
    return rc;
}

static int build_host(cg_artifact *a, cg_program *p, icc_diag *d);

static int cuda_compile(void *tgt, cg_program *p, cg_artifact **out, icc_diag *d)
{
    *out = NULL;
    cg_artifact *a = calloc(1, sizeof *a);
    if (!a)
        return ir_errorf(d, "out of memory");
    a->t = tgt;
    size_t len = strlen(cg_cuda_prelude);
    if (!(a->source = malloc(len + 1))) {
        cuda_artifact_free(a);
        return ir_errorf(d, "out of memory");
    }
    memcpy(a->source, cg_cuda_prelude, len + 1);
    for (int i = 0; i < p->nkernels; i++)
        if (cg_cuda_emit_kernel(p->kernels[i].k, &a->source, &len, d) < 0) {
            cuda_artifact_free(a);
            return -1;
        }
    a->nkernels = p->nkernels;
    if (nvrtc_compile(a, d) < 0) {
        *out = a;              /* the log stays readable through write_log */
        return -1;
    }
    icc_diag pd = {{0}};
    if (build_host(a, p, &pd) < 0)
        snprintf(a->plan_error, sizeof a->plan_error, "%s", pd.msg);
    *out = a;
    return 0;
}

/* The host side of the library (a->host): the plan of p for a's kernels,
 * in a module for the machine icc runs on. Only write needs it, so a
 * program the plan cannot say yet (symbolic dims...) still compiles for
 * --emit=cuda|ptx, and write refuses it (a->plan_error). */
static int build_host(cg_artifact *a, cg_program *p, icc_diag *d)
{
    const cuda_target *t = a->t;
    unsigned char *plan;
    size_t plan_bytes;
    if (cg_cuda_plan_build(p, t->sm, a->cubin, a->cubin_bytes, a->ptx, a->ptx_bytes, &plan, &plan_bytes, d) < 0)
        return -1;
    int rc = cg_llvm_assemble_host(t->host, p, plan, plan_bytes, &a->host, d);
    free(plan);
    return rc;
}

static int cuda_write(cg_artifact *a, const char *path, const char *runtime_lib, icc_diag *d)
{
    if (!a->host)
        return ir_errorf(d, "%s: %s", path, a->plan_error[0] ? a->plan_error : "no host side was built");
    const cuda_target *t = a->t;
    if (ir_ends_with(path, ".o"))
        return cg_emit_object(t->host, a->host, path, d);
    if (!runtime_lib)
        return ir_errorf(d, "%s: a shared library needs the runtime library to link", path);
    char obj[4200], soname[4200];
    snprintf(obj, sizeof obj, "%s.%d.host.o", path, (int)getpid());
    if (cg_emit_object(t->host, a->host, obj, d) < 0)
        return -1;
    const char *base = strrchr(path, '/');
    snprintf(soname, sizeof soname, "-Wl,-soname,%s", base ? base + 1 : path);
    const char *libs[7] = {"-Wl,--whole-archive", runtime_lib, "-Wl,--no-whole-archive", "-lm", "-lpthread",
                           "-ldl", soname};
    const char *objs[1] = {obj};
    free(a->log);
    a->log = NULL;
    int rc = cg_link_shared_log(objs, 1, libs, 7, path, &a->log, d);
    unlink(obj);
    return rc;
}

static char *cuda_emit_text(cg_artifact *a, const char *kind, icc_diag *d)
{
    const char *text = !strcmp(kind, "cuda") ? a->source : !strcmp(kind, "ptx") ? a->ptx : NULL;
    if (!text) {
        ir_errorf(d, "unknown --emit kind '%s' for --target=cuda (supported: ir, dot, kernels, cuda, ptx)", kind);
        return NULL;
    }
    char *s = strdup(text);
    if (!s)
        ir_errorf(d, "out of memory");
    return s;
}

static const char *cuda_write_log(const cg_artifact *a) { return a ? a->log : NULL; }

const cg_backend cg_cuda_backend = {
    .name = "cuda",
    .target_create = cuda_target_create,
    .target_destroy = cuda_target_destroy,
    .target_desc = cuda_target_desc,
    .compile = cuda_compile,
    .write = cuda_write,
    .emit_text = cuda_emit_text,
    .write_log = cuda_write_log,
    .artifact_free = cuda_artifact_free,
};
