/* target.c - the LLVM target plumbing of the CPU backend: creating a target
 * machine for the host or a named triple/CPU/feature set (rejecting what
 * LLVM would silently ignore), deriving the CPU features generated code
 * relies on and the natural vector width, preparing modules and tuning
 * functions for that width, running LLVM's default optimisation pipeline,
 * emitting object files, assembly and IR, and linking objects into a shared
 * library with the system compiler driver.
 */
#define _GNU_SOURCE
#include "codegen/llvm/target.h"
#include "ir/target_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>

extern char **environ;

enum { ARCH_X86_64, ARCH_AARCH64 };

struct cg_target {
    LLVMTargetMachineRef tm;
    char *triple, *cpu, *features, *required;
    int arch, opt_level, vector_bits;
    bool is_host;
    bool native;               /* the host's CPU (its features possibly changed) */
    icc_target_desc desc;      /* what passes and schedules see */
};

/* ---- feature sets --------------------------------------------------------- */

/* Features that change the code LLVM generates for our kernels, in the
 * order the descriptor lists them. Anything else (cx16, sahf, xsave...) is
 * either implied by the architecture or never emitted by our lowering. */
static const char *const x86_codegen_features[] = {
    "sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "avx", "avx2", "fma", "f16c", "bmi", "bmi2",
    "lzcnt", "movbe", "avxvnni", "avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl",
    "avx512vnni", "avx512bf16", "avx512fp16", "avx512vbmi", "avx512vbmi2", "avx512ifma",
    "avx512bitalg", "avx512vpopcntdq", "gfni", "vpclmulqdq", "amx-tile", "amx-int8", "amx-bf16",
    "amx-fp16", "amx-complex", NULL};
static const char *const a64_codegen_features[] = {
    "neon", "fp-armv8", "fullfp16", "fp16fml", "dotprod", "bf16", "i8mm", "sve", "sve2",
    NULL};

/* The x86-64 micro-architecture levels (psABI): features each one implies,
 * cumulative. Named CPUs other than these have implied features the C API
 * cannot list (see target.h). */
static const struct {
    const char *cpu;
    const char *features;
} x86_levels[] = {
    {"x86-64-v2", "sse3,ssse3,sse4.1,sse4.2,popcnt"},
    {"x86-64-v3", "sse3,ssse3,sse4.1,sse4.2,popcnt,avx,avx2,bmi,bmi2,f16c,fma,lzcnt,movbe"},
    {"x86-64-v4", "sse3,ssse3,sse4.1,sse4.2,popcnt,avx,avx2,bmi,bmi2,f16c,fma,lzcnt,movbe,"
                  "avx512f,avx512bw,avx512cd,avx512dq,avx512vl"},
};

/* A small set of feature names with their state: +1 on, -1 off, 0 absent. */
typedef struct {
    char names[256][32];
    signed char state[256];
    int n;
} featset;

static void featset_set(featset *s, const char *name, size_t len, int state)
{
    if (len == 0 || len >= sizeof s->names[0])
        return;
    for (int i = 0; i < s->n; i++)
        if (strlen(s->names[i]) == len && !memcmp(s->names[i], name, len)) {
            s->state[i] = (signed char)state;
            return;
        }
    if (s->n == (int)(sizeof s->state))
        return;
    memcpy(s->names[s->n], name, len);
    s->names[s->n][len] = 0;
    s->state[s->n++] = (signed char)state;
}

/* Adds a comma-separated list; entries without a sign are enabled. Later
 * entries win, as in LLVM. */
static void featset_add_list(featset *s, const char *list)
{
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        int state = +1;
        const char *name = p;
        if (len && (*p == '+' || *p == '-')) {
            state = *p == '+' ? +1 : -1;
            name++;
            len--;
        }
        featset_set(s, name, len, state);
        p = e ? e + 1 : p + strlen(p);
    }
}

static int featset_get(const featset *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->names[i], name))
            return s->state[i];
    return 0;
}

/* ---- creation --------------------------------------------------------- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* The code generator's level for each -O level. */
static const LLVMCodeGenOptLevel codegen_levels[] = {LLVMCodeGenLevelNone, LLVMCodeGenLevelLess,
                                                     LLVMCodeGenLevelDefault, LLVMCodeGenLevelAggressive};

static void init_targets(void)
{
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
    LLVMInitializeAArch64TargetInfo();
    LLVMInitializeAArch64Target();
    LLVMInitializeAArch64TargetMC();
    LLVMInitializeAArch64AsmPrinter();
}

/* LLVM reports an unknown CPU or feature only as a warning on stderr and
 * then ignores it; a compiler that silently drops -march must not. The C
 * API has no query for it, so target-machine creation runs with fd 2
 * redirected to a temporary file, which is then searched for those
 * warnings; anything else in it is passed on to the real stderr. The
 * mutex keeps two creations from interleaving their redirections. */
static pthread_mutex_t stderr_lock = PTHREAD_MUTEX_INITIALIZER;

static LLVMTargetMachineRef create_tm_checked(LLVMTargetRef tg, const cg_target *t,
                                              LLVMCodeGenOptLevel level, icc_diag *d)
{
    pthread_mutex_lock(&stderr_lock);
    fflush(stderr);
    FILE *cap = tmpfile();
    int saved = cap ? dup(2) : -1;
    if (saved >= 0 && dup2(fileno(cap), 2) < 0) {
        close(saved);
        saved = -1;
    }
    LLVMTargetMachineRef tm = LLVMCreateTargetMachine(tg, t->triple, t->cpu, t->features, level,
                                                      LLVMRelocPIC, LLVMCodeModelDefault);
    char buf[4096];
    size_t n = 0;
    if (saved >= 0) {
        dup2(saved, 2);
        close(saved);
        rewind(cap);
        n = fread(buf, 1, sizeof buf - 1, cap);
    }
    buf[n] = 0;
    if (cap)
        fclose(cap);
    pthread_mutex_unlock(&stderr_lock);

    char what[160] = "";
    for (char *line = buf, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        if (strstr(line, "is not a recognized processor")) {
            if (!what[0])
                snprintf(what, sizeof what, "unknown CPU '%s'", t->cpu);
        } else if (strstr(line, "is not a recognized feature")) {
            char *q = strchr(line, '\''), *q2 = q ? strchr(q + 1, '\'') : NULL;
            if (q2 && !what[0])
                snprintf(what, sizeof what, "unknown CPU feature '%.*s'", (int)(q2 - q - 1), q + 1);
        } else if (*line) {
            fprintf(stderr, "%s\n", line);
        }
    }
    if (!tm) {
        ir_errorf(d, "LLVM could not create a target machine for %s", t->triple);
        return NULL;
    }
    if (what[0]) {
        LLVMDisposeTargetMachine(tm);
        ir_errorf(d, "%s for target %s", what, t->triple);
        return NULL;
    }
    return tm;
}

/* Fills t->required and t->vector_bits from the explicit features and the
 * ones t->cpu implies. */
static int derive_features(cg_target *t, icc_diag *d)
{
    featset *s = calloc(1, sizeof *s);
    if (!s)
        return ir_errorf(d, "out of memory");
    if (t->arch == ARCH_X86_64) {
        for (size_t i = 0; i < sizeof x86_levels / sizeof x86_levels[0]; i++)
            if (!strcmp(t->cpu, x86_levels[i].cpu))
                featset_add_list(s, x86_levels[i].features);
    } else {
        /* Every AArch64 CPU LLVM knows has Advanced SIMD. */
        featset_add_list(s, "neon,fp-armv8");
    }
    featset_add_list(s, t->features);
    /* the backend-neutral description: a named CPU's implied features
     * come from its table (ir/target.c), which the C API cannot list */
    if (icc_target_desc_init(&t->desc, t->triple, t->cpu, t->features, d) < 0) {
        free(s);
        return -1;
    }
    for (int f = 0; f < ICC_TF_COUNT; f++)
        if (icc_target_has(&t->desc, f) && featset_get(s, icc_target_feature_name(f)) == 0)
            featset_set(s, icc_target_feature_name(f), strlen(icc_target_feature_name(f)), +1);

    const char *const *list = t->arch == ARCH_X86_64 ? x86_codegen_features : a64_codegen_features;
    size_t cap = 1, len = 0;
    for (int i = 0; list[i]; i++)
        cap += strlen(list[i]) + 1;
    t->required = malloc(cap);
    if (!t->required) {
        free(s);
        return ir_errorf(d, "out of memory");
    }
    t->required[0] = 0;
    for (int i = 0; list[i]; i++)
        if (featset_get(s, list[i]) > 0)
            len += (size_t)sprintf(t->required + len, "%s%s", len ? "," : "", list[i]);

    t->vector_bits = t->desc.vector_bits;
    free(s);
    if ((t->desc.native = t->native)) {
        /* only the target "native" looks at the host */
        long v = sysconf(_SC_NPROCESSORS_ONLN);
        t->desc.cores = v > 0 ? (int)v : 0;
        if ((v = sysconf(_SC_LEVEL1_DCACHE_SIZE)) > 0)
            t->desc.l1d_bytes = v;
        if ((v = sysconf(_SC_LEVEL2_CACHE_SIZE)) > 0)
            t->desc.l2_bytes = v;
        if ((v = sysconf(_SC_LEVEL3_CACHE_SIZE)) > 0)
            t->desc.l3_bytes = v;
        /* how fast the bf16 dot product is, where it exists: its flag
         * does not say whether it beats two FMAs (cg_schedule_bf16_pairs) */
        if (icc_target_has(&t->desc, ICC_TF_AVX512BF16))
            t->desc.bf16_dot_rate = icc_target_probe_bf16_dot_rate();
    }
    return 0;
}

static char *dup_llvm_message(char *m)
{
    char *r = strdup(m ? m : "");
    LLVMDisposeMessage(m);
    return r;
}

int cg_target_create(const char *triple, const char *cpu, const char *features, int opt_level,
                     cg_target **out, icc_diag *d)
{
    *out = NULL;
    if (opt_level < 0 || opt_level > 3)
        return ir_errorf(d, "optimization level %d out of range 0..3", opt_level);
    pthread_once(&init_once, init_targets);

    cg_target *t = calloc(1, sizeof *t);
    if (!t)
        return ir_errorf(d, "out of memory");
    t->opt_level = opt_level;

    char *host = dup_llvm_message(LLVMGetDefaultTargetTriple());
    char *host_norm = host ? dup_llvm_message(LLVMNormalizeTargetTriple(host)) : NULL;
    t->triple = triple ? dup_llvm_message(LLVMNormalizeTargetTriple(triple)) : strdup(host_norm ? host_norm : "");
    bool host_triple = t->triple && host_norm && !strcmp(t->triple, host_norm);
    free(host);
    free(host_norm);
    if (!t->triple)
        goto oom;

    bool native = !cpu || !strcmp(cpu, "native");
    if (native && !host_triple && cpu) {
        ir_errorf(d, "CPU 'native' needs the host triple, not %s", t->triple);
        goto fail;
    }
    if (native && host_triple) {
        t->cpu = dup_llvm_message(LLVMGetHostCPUName());
        t->features = features ? strdup(features) : dup_llvm_message(LLVMGetHostCPUFeatures());
        t->is_host = !features;
        t->native = true;
    } else {
        t->cpu = strdup(cpu ? cpu : "generic");
        t->features = strdup(features ? features : "");
    }
    if (!t->cpu || !t->features)
        goto oom;

    if (!strncmp(t->triple, "x86_64-", 7))
        t->arch = ARCH_X86_64;
    else if (!strncmp(t->triple, "aarch64-", 8) || !strncmp(t->triple, "arm64-", 6))
        t->arch = ARCH_AARCH64;
    else {
        ir_errorf(d, "unsupported target triple '%s' (icc generates code for x86_64 and aarch64)",
                  triple ? triple : t->triple);
        goto fail;
    }

    LLVMTargetRef tg;
    char *err = NULL;
    if (LLVMGetTargetFromTriple(t->triple, &tg, &err)) {
        ir_errorf(d, "target triple '%s': %s", t->triple, err ? err : "unknown target");
        LLVMDisposeMessage(err);
        goto fail;
    }
    t->tm = create_tm_checked(tg, t, codegen_levels[opt_level], d);
    if (!t->tm)
        goto fail;
    if (derive_features(t, d) < 0)
        goto fail;
    *out = t;
    return 0;

oom:
    ir_errorf(d, "out of memory");
fail:
    cg_target_destroy(t);
    return -1;
}

int cg_target_thread_copy(const cg_target *t, cg_target **out, icc_diag *d)
{
    *out = NULL;
    cg_target *c = calloc(1, sizeof *c);
    if (!c)
        return ir_errorf(d, "out of memory");
    *c = *t;
    c->tm = NULL;
    c->triple = strdup(t->triple);
    c->cpu = strdup(t->cpu);
    c->features = strdup(t->features);
    c->required = t->required ? strdup(t->required) : NULL;
    LLVMTargetRef tg;
    char *err = NULL;
    if (!c->triple || !c->cpu || !c->features || (t->required && !c->required)) {
        ir_errorf(d, "out of memory");
    } else if (LLVMGetTargetFromTriple(c->triple, &tg, &err)) {
        ir_errorf(d, "target triple '%s': %s", c->triple, err ? err : "unknown target");
        LLVMDisposeMessage(err);
    } else {
        c->tm = LLVMCreateTargetMachine(tg, c->triple, c->cpu, c->features, codegen_levels[t->opt_level],
                                        LLVMRelocPIC, LLVMCodeModelDefault);
        if (c->tm) {
            *out = c;
            return 0;
        }
        ir_errorf(d, "cannot create a target machine for '%s'", c->triple);
    }
    cg_target_destroy(c);
    return -1;
}

void cg_target_destroy(cg_target *t)
{
    if (!t)
        return;
    if (t->tm)
        LLVMDisposeTargetMachine(t->tm);
    free(t->triple);
    free(t->cpu);
    free(t->features);
    free(t->required);
    free(t);
}

const char *cg_target_triple(const cg_target *t) { return t->triple; }
const char *cg_target_cpu(const cg_target *t) { return t->cpu; }
const char *cg_target_features(const cg_target *t) { return t->features; }
const char *cg_target_required_features(const cg_target *t) { return t->required; }
int cg_target_vector_bits(const cg_target *t) { return t->vector_bits; }
const icc_target_desc *cg_target_desc(const cg_target *t) { return &t->desc; }
int cg_target_opt_level(const cg_target *t) { return t->opt_level; }
bool cg_target_is_host(const cg_target *t) { return t->is_host; }
LLVMTargetMachineRef cg_target_machine(const cg_target *t) { return t->tm; }

/* ---- modules and functions ---------------------------------------------- */

void cg_target_setup_module(const cg_target *t, LLVMModuleRef m)
{
    LLVMSetTarget(m, t->triple);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(t->tm);
    char *layout = LLVMCopyStringRepOfTargetData(td);
    LLVMSetDataLayout(m, layout);
    LLVMDisposeMessage(layout);
    LLVMDisposeTargetData(td);
}

void cg_target_tune_function(const cg_target *t, LLVMValueRef fn)
{
    if (t->vector_bits < 512)
        return;
    /* prefer-vector-width lifts the subtarget's 256-bit preference for
     * the vectorisers and instruction selection (it alone turns the add
     * loop's ymm into zmm); min-legal-vector-width declares, as clang
     * does, that the function holds 512-bit operations, which the lowering
     * may also build explicitly. */
    char bits[16];
    snprintf(bits, sizeof bits, "%d", t->vector_bits);
    LLVMAddTargetDependentFunctionAttr(fn, "prefer-vector-width", bits);
    LLVMAddTargetDependentFunctionAttr(fn, "min-legal-vector-width", bits);
}

/* ---- optimisation ------------------------------------------------------- */

/* Copies the first line of msg into d. */
static int first_line_error(icc_diag *d, const char *what, const char *msg)
{
    const char *nl = msg ? strchr(msg, '\n') : NULL;
    int len = msg ? (nl ? (int)(nl - msg) : (int)strlen(msg)) : 0;
    return ir_errorf(d, "%s: %.*s", what, len, msg ? msg : "");
}

/* LLVM's own diagnostics of a compile. Its remarks and warnings are about
 * its transformations ("loop not vectorized": the kernel IR asks every
 * vector loop to be vectorized, and LLVM says so when one cannot be),
 * not about the model, so they are dropped instead of reaching the
 * user's stderr raw; an error is still printed, on one line. */
static void llvm_diagnostic(LLVMDiagnosticInfoRef di, void *arg)
{
    (void)arg;
    if (LLVMGetDiagInfoSeverity(di) != LLVMDSError)
        return;
    char *msg = LLVMGetDiagInfoDescription(di);
    const char *nl = msg ? strchr(msg, '\n') : NULL;
    fprintf(stderr, "icc: LLVM: %.*s\n", msg ? (int)(nl ? nl - msg : (long)strlen(msg)) : 0, msg ? msg : "");
    LLVMDisposeMessage(msg);
}

void cg_quiet_diagnostics(LLVMModuleRef m)
{
    LLVMContextSetDiagnosticHandler(LLVMGetModuleContext(m), llvm_diagnostic, NULL);
}

int cg_optimize(const cg_target *t, LLVMModuleRef m, icc_diag *d)
{
    cg_quiet_diagnostics(m);
    char *msg = NULL;
    if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) {
        first_line_error(d, "invalid LLVM module", msg);
        LLVMDisposeMessage(msg);
        return -1;
    }
    LLVMDisposeMessage(msg);

    char pipeline[32];
    snprintf(pipeline, sizeof pipeline, "default<O%d>", t->opt_level);
    LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
    /* The C API's defaults leave SLP vectorisation off; clang turns both
     * vectorisers on from -O2, and our kernels depend on them. */
    LLVMPassBuilderOptionsSetLoopVectorization(opts, t->opt_level >= 2);
    LLVMPassBuilderOptionsSetSLPVectorization(opts, t->opt_level >= 2);
    LLVMPassBuilderOptionsSetLoopUnrolling(opts, t->opt_level >= 2);
    LLVMPassBuilderOptionsSetLoopInterleaving(opts, t->opt_level >= 2);
    LLVMErrorRef e = LLVMRunPasses(m, pipeline, t->tm, opts);
    LLVMDisposePassBuilderOptions(opts);
    if (e) {
        char *em = LLVMGetErrorMessage(e);
        first_line_error(d, "LLVM optimisation failed", em);
        LLVMDisposeErrorMessage(em);
        return -1;
    }
    return 0;
}

/* ---- emission ----------------------------------------------------------- */

static LLVMMemoryBufferRef emit(const cg_target *t, LLVMModuleRef m, LLVMCodeGenFileType kind,
                                icc_diag *d)
{
    char *err = NULL;
    LLVMMemoryBufferRef buf = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(t->tm, m, kind, &err, &buf)) {
        first_line_error(d, "LLVM code generation failed", err);
        LLVMDisposeMessage(err);
        return NULL;
    }
    return buf;
}

/* A name next to path for a file that becomes path by rename(). */
static int temp_name(const char *path, char *out, size_t cap, icc_diag *d)
{
    static atomic_uint counter;
    int n = snprintf(out, cap, "%s.tmp%ld.%u", path, (long)getpid(), atomic_fetch_add(&counter, 1));
    if (n < 0 || (size_t)n >= cap)
        return ir_errorf(d, "%s: path too long", path);
    return 0;
}

static int write_file_atomic(const char *path, const void *data, size_t size, icc_diag *d)
{
    char tmp[4096];
    if (temp_name(path, tmp, sizeof tmp, d) < 0)
        return -1;
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return ir_errorf(d, "%s: %s", tmp, strerror(errno));
    bool ok = fwrite(data, 1, size, f) == size;
    int saved = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        saved = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = false;
        saved = errno;
    }
    if (!ok) {
        unlink(tmp);
        return ir_errorf(d, "%s: %s", path, strerror(saved));
    }
    return 0;
}

LLVMMemoryBufferRef cg_emit_object_buffer(const cg_target *t, LLVMModuleRef m, icc_diag *d)
{
    return emit(t, m, LLVMObjectFile, d);
}

int cg_write_buffer(LLVMMemoryBufferRef buf, const char *path, icc_diag *d)
{
    return write_file_atomic(path, LLVMGetBufferStart(buf), LLVMGetBufferSize(buf), d);
}

int cg_emit_object(const cg_target *t, LLVMModuleRef m, const char *path, icc_diag *d)
{
    LLVMMemoryBufferRef buf = emit(t, m, LLVMObjectFile, d);
    if (!buf)
        return -1;
    int rc = write_file_atomic(path, LLVMGetBufferStart(buf), LLVMGetBufferSize(buf), d);
    LLVMDisposeMemoryBuffer(buf);
    return rc;
}

char *cg_emit_asm(const cg_target *t, LLVMModuleRef m, icc_diag *d)
{
    LLVMMemoryBufferRef buf = emit(t, m, LLVMAssemblyFile, d);
    if (!buf)
        return NULL;
    size_t n = LLVMGetBufferSize(buf);
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, LLVMGetBufferStart(buf), n);
        s[n] = 0;
    } else {
        ir_errorf(d, "out of memory");
    }
    LLVMDisposeMemoryBuffer(buf);
    return s;
}

char *cg_emit_llvm_ir(LLVMModuleRef m)
{
    return dup_llvm_message(LLVMPrintModuleToString(m));
}

/* ---- linking ------------------------------------------------------------ */

/* The driver's output as one short line: the first line of the linker's
 * own that says "error", "undefined" or "cannot find" (the lines before
 * it are context such as "in function f"), else its first line, and how
 * many more lines the full log has. */
static void summarize_log(const char *s, char *out, size_t cap)
{
    const char *any = NULL, *first = NULL, *pick = NULL;
    size_t any_len = 0, first_len = 0, pick_len = 0;
    int lines = 0;
    for (const char *p = s; *p;) {
        size_t len = strcspn(p, "\r\n");
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (len) {
            lines++;
            if (!any)
                any = p, any_len = len;
            char line[1024];
            snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line - 1 ? len : sizeof line - 1), p);
            /* the compiler driver's own closing line only says that
             * the linker failed */
            bool summary = !strncmp(line, "collect2:", 9) || strstr(line, "linker command failed");
            if (!summary && !first)
                first = p, first_len = len;
            if (!summary && !pick && (strstr(line, "error") || strstr(line, "undefined") || strstr(line, "cannot find")))
                pick = p, pick_len = len;
        }
        p += strcspn(p, "\r\n");
        p += strspn(p, "\r\n");
    }
    if (!pick)
        pick = first, pick_len = first_len;
    if (!pick)
        pick = any, pick_len = any_len;
    if (!pick) {
        snprintf(out, cap, "no message");
        return;
    }
    if (pick_len > 300)
        pick_len = 300;
    if (lines > 1)
        snprintf(out, cap, "%.*s (%d more line%s: --verbose shows the linker's full log)", (int)pick_len, pick,
                 lines - 1, lines == 2 ? "" : "s");
    else
        snprintf(out, cap, "%.*s", (int)pick_len, pick);
}

int cg_link_shared(const char *const *objs, int nobjs, const char *const *libs, int nlibs,
                   const char *out_path, icc_diag *d)
{
    return cg_link_shared_log(objs, nobjs, libs, nlibs, out_path, NULL, d);
}

int cg_link_shared_log(const char *const *objs, int nobjs, const char *const *libs, int nlibs,
                       const char *out_path, char **log, icc_diag *d)
{
    if (log)
        *log = NULL;
    if (nobjs <= 0)
        return ir_errorf(d, "link %s: no object files", out_path);
    if (nlibs < 0)
        nlibs = 0;
    char tmp[4096];
    if (temp_name(out_path, tmp, sizeof tmp, d) < 0)
        return -1;
    const char **argv = calloc((size_t)nobjs + (size_t)nlibs + 6, sizeof *argv);
    if (!argv)
        return ir_errorf(d, "out of memory");
    int argc = 0;
    argv[argc++] = "cc";
    argv[argc++] = "-shared";
    argv[argc++] = "-o";
    argv[argc++] = tmp;
    for (int i = 0; i < nobjs; i++)
        argv[argc++] = objs[i];
    for (int i = 0; i < nlibs; i++)
        argv[argc++] = libs[i];
    argv[argc] = NULL;

    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        free(argv);
        return ir_errorf(d, "link %s: pipe: %s", out_path, strerror(errno));
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    pid_t pid;
    int rc = posix_spawnp(&pid, "cc", &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    free(argv);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        return ir_errorf(d, "link %s: cannot run cc: %s", out_path, strerror(rc));
    }

    /* All of the driver's output, drained so it never blocks on a full
     * pipe; past 1 MiB only the count grows (a log that long is a flood
     * of undefined symbols, and its start says what is wrong). */
    size_t n = 0, cap = 4096;
    char *msg = malloc(cap);
    for (;;) {
        char chunk[4096];
        ssize_t got = read(fds[0], chunk, sizeof chunk);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        if (msg && n + (size_t)got + 1 > cap && cap < ((size_t)1 << 20)) {
            char *nm = realloc(msg, cap * 4);
            if (nm)
                msg = nm, cap *= 4;
        }
        size_t take = msg && n + 1 < cap ? ((size_t)got < cap - 1 - n ? (size_t)got : cap - 1 - n) : 0;
        if (take)
            memcpy(msg + n, chunk, take);
        n += take;
    }
    if (msg)
        msg[n] = 0;
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            unlink(tmp);
            free(msg);
            return ir_errorf(d, "link %s: waitpid: %s", out_path, strerror(errno));
        }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        unlink(tmp);
        char line[768];
        summarize_log(msg ? msg : "", line, sizeof line);
        if (log && msg && n)
            *log = msg;
        else
            free(msg);
        if (WIFEXITED(status))
            return ir_errorf(d, "link %s failed (cc exit %d): %s", out_path, WEXITSTATUS(status), line);
        return ir_errorf(d, "link %s failed: cc killed by signal %d", out_path,
                         WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    }
    free(msg);
    if (rename(tmp, out_path) != 0) {
        int e = errno;
        unlink(tmp);
        return ir_errorf(d, "link %s: %s", out_path, strerror(e));
    }
    return 0;
}
