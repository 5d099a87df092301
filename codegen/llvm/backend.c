/* backend.c - the LLVM backend's table (codegen/backend.h): targets are
 * cg_target (target.c), a program is assembled into one LLVM module
 * (model.c), optimized, and packaged as an object or, linked with the
 * runtime archive by the system compiler driver, a shared library.
 *
 * Optimization and code generation are most of a large model's compile
 * time, and LLVM runs them on one thread per module. So a shared library
 * is built from several modules at once: the large kernels are dealt out
 * to partitions by size, each partition is a copy of the module (through
 * bitcode, in an LLVM context of its own) in which only its kernels keep
 * their bodies, as hidden external functions, and the first partition,
 * the assembled module itself, keeps the run function, the small kernels
 * (which LLVM may inline into it) and the weights, and declares the
 * others. Each partition is optimized and generated on its own thread
 * and target machine; the objects are linked together. The code is the
 * same as from one module except that a moved kernel is called, never
 * inlined, which for a kernel that large costs nothing measurable.
 * ICC_COMPILE_THREADS=N caps the threads (default: the online CPUs, at
 * most 8; 1 builds one module). An object (.o) or a text dump is always
 * one module. */
#include "codegen/backend.h"
#include "codegen/llvm/model.h"

#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cg_artifact {
    const cg_target *t;        /* borrowed: the target outlives the artifact */
    LLVMModuleRef m;           /* owned */
    bool optimized;            /* cg_optimize ran on m (it runs when m is first needed whole) */
    int nkernels;
    char **kernels;            /* the kernel functions' names (candidates to move); owned */
    char *link_log;            /* owned: the last failed link's output, or NULL */
    int modules;               /* what the last write was built from (1: whole) */
};

static void llvm_artifact_free(cg_artifact *a);

static int llvm_target_create(const char *triple, const char *cpu, const char *features, int opt_level,
                              void **tgt, icc_diag *d)
{
    cg_target *t;
    *tgt = NULL;
    if (cg_target_create(triple, cpu, features, opt_level, &t, d) < 0)
        return -1;
    *tgt = t;
    return 0;
}

static void llvm_target_destroy(void *tgt) { cg_target_destroy(tgt); }

static const icc_target_desc *llvm_target_desc(const void *tgt) { return cg_target_desc(tgt); }

static int llvm_compile(void *tgt, cg_program *p, cg_artifact **out, icc_diag *d)
{
    *out = NULL;
    cg_artifact *a = calloc(1, sizeof *a);
    if (!a)
        return ir_errorf(d, "out of memory");
    a->t = tgt;
    a->kernels = calloc((size_t)p->nkernels + 1, sizeof *a->kernels);
    bool ok = a->kernels != NULL;
    for (int i = 0; ok && i < p->nkernels; i++)
        ok = (a->kernels[a->nkernels++] = strdup(p->kernels[i].k->name)) != NULL;
    if (!ok || cg_llvm_assemble(a->t, p, &a->m, d) < 0) {
        if (!ok)
            ir_errorf(d, "out of memory");
        llvm_artifact_free(a);
        return -1;
    }
    *out = a;
    return 0;
}

/* m optimized whole (for an object or a dump). */
static int whole(cg_artifact *a, icc_diag *d)
{
    if (!a->optimized && cg_optimize(a->t, a->m, d) < 0)
        return -1;
    a->optimized = true;
    return 0;
}

/* ---- partitions ------------------------------------------------------------------ */

enum {
    PART_MIN_KERNEL = 200,     /* instructions: a smaller kernel stays with run (it may be inlined) */
    PART_MIN_WORK = 4000,      /* instructions a partition should have to pay for its copy */
    PART_MAX = 8,
};

static int64_t fn_size(LLVMValueRef f)
{
    int64_t n = 0;
    for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(f); b; b = LLVMGetNextBasicBlock(b))
        for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i))
            n++;
    return n;
}

static int compile_threads(void)
{
    const char *e = getenv("ICC_COMPILE_THREADS");
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (e && *e) {
        char *end;
        long v = strtol(e, &end, 10);
        if (*end || v < 1) {
            fprintf(stderr, "icc: warning: ICC_COMPILE_THREADS='%.40s' is not a positive number; ignored\n", e);
        } else {
            n = v;
        }
    }
    return n < 1 ? 1 : n > PART_MAX ? PART_MAX : (int)n;
}

/* Replaces function f of its module by a declaration of the same name and
 * type, external and hidden (defined in another partition's object). */
static void make_declaration(LLVMValueRef f)
{
    LLVMModuleRef m = LLVMGetGlobalParent(f);
    size_t len;
    const char *nm = LLVMGetValueName2(f, &len);
    char *name = strndup(nm, len);
    LLVMValueRef decl = LLVMAddFunction(m, "", LLVMGlobalGetValueType(f));
    LLVMReplaceAllUsesWith(f, decl);
    LLVMDeleteFunction(f);
    if (name)
        LLVMSetValueName2(decl, name, len);
    free(name);
    LLVMSetLinkage(decl, LLVMExternalLinkage);
    LLVMSetVisibility(decl, LLVMHiddenVisibility);
}

/* One partition past the first: the module's bitcode, the names of the
 * kernels it defines; its result is an object in memory. */
typedef struct {
    const cg_target *t;
    const char *bc;
    size_t bc_size;
    const char **names;
    int nnames;
    LLVMMemoryBufferRef obj;
    icc_diag d;
    int rc;
} part;

static bool in_names(const part *w, const char *name, size_t len)
{
    for (int i = 0; i < w->nnames; i++)
        if (strlen(w->names[i]) == len && !memcmp(w->names[i], name, len))
            return true;
    return false;
}

/* A growable list of functions. */
typedef struct {
    LLVMValueRef *f;
    int n, cap;
    bool oom;
} fn_list;

static bool fn_list_has(const fn_list *l, LLVMValueRef f)
{
    for (int i = 0; i < l->n; i++)
        if (l->f[i] == f)
            return true;
    return false;
}

static void fn_list_add(fn_list *l, LLVMValueRef f)
{
    if (l->oom || fn_list_has(l, f))
        return;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        LLVMValueRef *g = realloc(l->f, sizeof *g * (size_t)cap);
        if (!g) {
            l->oom = true;
            return;
        }
        l->f = g;
        l->cap = cap;
    }
    l->f[l->n++] = f;
}

/* Reduces m to w's kernels: they become hidden external definitions;
 * every other function becomes a declaration (functions the kernels call
 * keep their bodies) and every external variable a declaration, so the
 * optimizer drops what they alone used. Out of memory keeps every body,
 * which is correct, only slower. */
static void keep_only(LLVMModuleRef m, const part *w)
{
    for (LLVMValueRef g = LLVMGetFirstGlobal(m); g; g = LLVMGetNextGlobal(g))
        if (LLVMGetLinkage(g) == LLVMExternalLinkage && LLVMGetInitializer(g))
            LLVMSetInitializer(g, NULL);
    fn_list keep = {0};
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
        size_t len;
        const char *nm = LLVMGetValueName2(f, &len);
        if (!LLVMIsDeclaration(f) && in_names(w, nm, len)) {
            LLVMSetLinkage(f, LLVMExternalLinkage);
            LLVMSetVisibility(f, LLVMHiddenVisibility);
            fn_list_add(&keep, f);
        }
    }
    /* and what they use, transitively (the list grows as it is walked):
     * the functions they call, and those whose address they take (a
     * parallel loop's body goes to the thread pool as a pointer) */
    for (int i = 0; i < keep.n; i++)
        for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(keep.f[i]); b; b = LLVMGetNextBasicBlock(b))
            for (LLVMValueRef in = LLVMGetFirstInstruction(b); in; in = LLVMGetNextInstruction(in))
                for (int k = 0, n = LLVMGetNumOperands(in); k < n; k++) {
                    LLVMValueRef use = LLVMGetOperand(in, k);
                    if (use && LLVMIsAFunction(use) && !LLVMIsDeclaration(use))
                        fn_list_add(&keep, use);
                }
    LLVMValueRef next;
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f && !keep.oom; f = next) {
        next = LLVMGetNextFunction(f);
        if (!LLVMIsDeclaration(f) && !fn_list_has(&keep, f))
            make_declaration(f);
    }
    free(keep.f);
}

static void *part_main(void *arg)
{
    part *w = arg;
    w->rc = -1;
    LLVMContextRef cx = LLVMContextCreate();
    LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRange(w->bc, w->bc_size, "partition", 0);
    LLVMModuleRef m = NULL;
    cg_target *t = NULL;
    if (!cx || !mb || LLVMParseBitcodeInContext2(cx, mb, &m)) {
        ir_errorf(&w->d, "cannot read back the module's bitcode for a partition");
        m = NULL;
    } else if (cg_target_thread_copy(w->t, &t, &w->d) == 0) {
        keep_only(m, w);
        /* What only the moved-away code used (the descriptor's tables of
         * every kernel, say) has to go before code generation: -O0 runs
         * no pass that would drop it, and its references would stay as
         * undefined symbols, some naming functions local to another
         * partition. */
        LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
        LLVMErrorRef e = LLVMRunPasses(m, "globaldce", cg_target_machine(t), po);
        LLVMDisposePassBuilderOptions(po);
        if (e) {
            char *em = LLVMGetErrorMessage(e);
            ir_errorf(&w->d, "dropping a partition's unused code failed: %.200s", em);
            LLVMDisposeErrorMessage(em);
        } else if (cg_optimize(t, m, &w->d) == 0 && (w->obj = cg_emit_object_buffer(t, m, &w->d)))
            w->rc = 0;
    }
    cg_target_destroy(t);
    if (m)
        LLVMDisposeModule(m);
    if (mb)
        LLVMDisposeMemoryBuffer(mb);
    if (cx)
        LLVMContextDispose(cx);
    return NULL;
}

/* Deals the large kernels of a->m out to partitions. Returns the number
 * of partitions (1: build it whole) and in *assign, for each of
 * a->kernels, its partition (0: the first). */
static int plan_partitions(cg_artifact *a, int **assign)
{
    *assign = NULL;
    int threads = compile_threads();
    if (threads < 2 || a->nkernels < 2)
        return 1;
    int64_t *size = calloc((size_t)a->nkernels, sizeof *size);
    int *as = calloc((size_t)a->nkernels, sizeof *as);
    if (!size || !as) {
        free(size);
        free(as);
        return 1;
    }
    int64_t total = 0, movable = 0;
    for (LLVMValueRef f = LLVMGetFirstFunction(a->m); f; f = LLVMGetNextFunction(f))
        total += fn_size(f);
    for (int i = 0; i < a->nkernels; i++) {
        LLVMValueRef f = LLVMGetNamedFunction(a->m, a->kernels[i]);
        size[i] = f && !LLVMIsDeclaration(f) ? fn_size(f) : 0;
        if (size[i] >= PART_MIN_KERNEL)
            movable += size[i];
    }
    int np = threads;
    if (np > total / PART_MIN_WORK)
        np = (int)(total / PART_MIN_WORK);
    if (np < 2 || movable < PART_MIN_WORK) {
        free(size);
        free(as);
        return 1;
    }
    /* largest first onto the lightest partition; partition 0 starts with
     * what cannot move */
    int64_t load[PART_MAX] = {total - movable};
    bool *done = calloc((size_t)a->nkernels, sizeof *done);
    for (int left = a->nkernels; done && left > 0; left--) {
        int best = -1;
        for (int i = 0; i < a->nkernels; i++)
            if (!done[i] && size[i] >= PART_MIN_KERNEL && (best < 0 || size[i] > size[best]))
                best = i;
        if (best < 0)
            break;
        done[best] = true;
        int lp = 0;
        for (int q = 1; q < np; q++)
            if (load[q] < load[lp])
                lp = q;
        as[best] = lp;
        load[lp] += size[best];
    }
    free(done);
    free(size);
    int used = 0;
    for (int i = 0; i < a->nkernels; i++)
        used |= as[i] > 0;
    if (!used) {
        free(as);
        return 1;
    }
    *assign = as;
    return np;
}

/* Optimizes and generates a->m as np partitions (assign from
 * plan_partitions); objs[q] receives partition q's object. */
static int build_partitions(cg_artifact *a, int np, const int *assign, LLVMMemoryBufferRef *objs, icc_diag *d)
{
    LLVMMemoryBufferRef bc = LLVMWriteBitcodeToMemoryBuffer(a->m);
    if (!bc)
        return ir_errorf(d, "out of memory");
    part w[PART_MAX];
    const char **names = calloc((size_t)a->nkernels + 1, sizeof *names);
    pthread_t th[PART_MAX];
    bool started[PART_MAX] = {false};
    int rc = names ? 0 : ir_errorf(d, "out of memory");
    int off = 0;
    for (int q = 1; rc == 0 && q < np; q++) {
        w[q] = (part){.t = a->t, .bc = LLVMGetBufferStart(bc), .bc_size = LLVMGetBufferSize(bc), .names = names + off};
        for (int i = 0; i < a->nkernels; i++)
            if (assign[i] == q)
                names[off + w[q].nnames++] = a->kernels[i];
        off += w[q].nnames;
        started[q] = pthread_create(&th[q], NULL, part_main, &w[q]) == 0;
        if (!started[q])
            part_main(&w[q]); /* no thread: run it here */
    }
    if (rc == 0) {
        /* partition 0: the module itself, less the moved kernels */
        for (int i = 0; i < a->nkernels; i++) {
            LLVMValueRef f = assign[i] > 0 ? LLVMGetNamedFunction(a->m, a->kernels[i]) : NULL;
            if (f)
                make_declaration(f);
        }
        a->optimized = true; /* no longer whole either way */
        if (cg_optimize(a->t, a->m, d) < 0 || !(objs[0] = cg_emit_object_buffer(a->t, a->m, d)))
            rc = -1;
    }
    for (int q = 1; q < np; q++) {
        if (started[q])
            pthread_join(th[q], NULL);
        if (names && w[q].rc == 0)
            objs[q] = w[q].obj;
        else if (names && rc == 0) {
            memcpy(d->msg, w[q].d.msg, sizeof d->msg);
            rc = -1;
        }
    }
    free(names);
    LLVMDisposeMemoryBuffer(bc);
    return rc;
}

/* A .so is linked from a temporary object beside it, with the whole
 * runtime inside (an app then needs nothing else) and the file name as
 * soname, so apps linking it find it by rpath. */
static int llvm_write(cg_artifact *a, const char *path, const char *runtime_lib, icc_diag *d)
{
    if (ir_ends_with(path, ".o"))
        return whole(a, d) < 0 ? -1 : cg_emit_object(a->t, a->m, path, d);
    if (!runtime_lib)
        return ir_errorf(d, "%s: a shared library needs the runtime library to link", path);
    int *assign = NULL;
    int np = a->optimized ? 1 : plan_partitions(a, &assign);
    LLVMMemoryBufferRef bufs[PART_MAX] = {NULL};
    int rc = np > 1 ? build_partitions(a, np, assign, bufs, d) : whole(a, d);
    a->modules = np;
    free(assign);
    char obj[PART_MAX][4200];
    const char *objs[PART_MAX];
    int nobj = 0;
    for (int q = 0; rc == 0 && q < np; q++) {
        snprintf(obj[q], sizeof obj[q], "%s.%d.%d.o", path, (int)getpid(), q);
        if ((np > 1 ? cg_write_buffer(bufs[q], obj[q], d) : cg_emit_object(a->t, a->m, obj[q], d)) < 0)
            rc = -1;
        else
            objs[nobj++] = obj[q];
    }
    for (int q = 0; q < np; q++)
        if (bufs[q])
            LLVMDisposeMemoryBuffer(bufs[q]);
    if (rc == 0) {
        const char *base = strrchr(path, '/');
        char soname[4200];
        snprintf(soname, sizeof soname, "-Wl,-soname,%s", base ? base + 1 : path);
        const char *libs[7] = {"-Wl,--whole-archive", runtime_lib, "-Wl,--no-whole-archive", "-lm", "-lpthread",
                               "-ldl", soname};
        free(a->link_log);
        a->link_log = NULL;
        rc = cg_link_shared_log(objs, nobj, libs, 7, path, &a->link_log, d);
    }
    for (int q = 0; q < nobj; q++)
        unlink(objs[q]);
    return rc;
}

static const char *llvm_write_log(const cg_artifact *a) { return a->link_log; }

static int llvm_write_units(const cg_artifact *a) { return a->modules; }

static char *llvm_emit_text(cg_artifact *a, const char *kind, icc_diag *d)
{
    if ((!strcmp(kind, "asm") || !strcmp(kind, "llvm")) && whole(a, d) < 0)
        return NULL;
    if (!strcmp(kind, "asm"))
        return cg_emit_asm(a->t, a->m, d);
    if (strcmp(kind, "llvm")) {
        ir_errorf(d, "the llvm backend has no text form '%s' (it has: llvm, asm)", kind);
        return NULL;
    }
    char *text = cg_emit_llvm_ir(a->m);
    if (!text)
        ir_errorf(d, "out of memory");
    return text;
}

static void llvm_artifact_free(cg_artifact *a)
{
    if (!a)
        return;
    if (a->m)
        LLVMDisposeModule(a->m);
    for (int i = 0; i < a->nkernels; i++)
        free(a->kernels[i]);
    free(a->kernels);
    free(a->link_log);
    free(a);
}

const cg_backend cg_llvm_backend = {
    .name = "llvm",
    .target_create = llvm_target_create,
    .target_destroy = llvm_target_destroy,
    .target_desc = llvm_target_desc,
    .compile = llvm_compile,
    .write = llvm_write,
    .emit_text = llvm_emit_text,
    .write_log = llvm_write_log,
    .write_units = llvm_write_units,
    .artifact_free = llvm_artifact_free,
};
