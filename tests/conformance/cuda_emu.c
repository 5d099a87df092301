/* cuda_emu.c - the CUDA backend's kernels run on the CPU (cuda_emu.h). */
#include "tests/conformance/cuda_emu.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/backend.h"
#include "codegen/cuda/emit.h"
#include "codegen/program.h"
#include "icc/runtime.h"
#include "ir/target.h"

typedef void (*emu_fn)(void *const *bufs, const int64_t *syms, int64_t begin, int64_t end);

struct cuda_emu {
    icc_target_desc desc;
    cg_program *p;
    void *lib;
    emu_fn *fns;               /* per kernel */
    long long *tid, *nthreads; /* the emulated launch's thread index and count */
    unsigned char *arena;
    unsigned char *init;       /* the load-time kernels' results (cg_program.init_bytes) */
    bool in_init;              /* running the load-time steps: their arena is init */
};

void cuda_emu_free(cuda_emu *m)
{
    if (!m)
        return;
    if (m->lib)
        dlclose(m->lib);
    cg_program_destroy(m->p);
    free(m->fns);
    free(m->arena);
    free(m->init);
    free(m);
}

/* A build step that is not emulated: 1 with why. */
static int skip(char *why, size_t n, const char *fmt, const char *what)
{
    snprintf(why, n, fmt, what);
    return 1;
}

static int run_steps(cuda_emu *m, int lo, int hi, const ir_tensor *in, ir_tensor *out, icc_diag *d);

/* A program build's error that names what is not compiled yet (a skip,
 * not a failure): an op, or a dim only --shape or --bind would decide. */
static bool not_compiled_yet(const char *msg)
{
    return strstr(msg, "cannot be compiled yet") || strstr(msg, "not compiled yet") || strstr(msg, "--bind=") ||
           strstr(msg, "--shape=");
}

/* The CUDA C text built for the CPU (tests/cuda/emu.h in front) into
 * DIR/emu.so: 0, or -1 with why (the compiler's first error line). The
 * source and the log are removed; the caller removes DIR/emu.so. */
static int emu_compile(const char *text, const char *dir, char *why, size_t whylen)
{
    char src[4200], so[4200], log[4200], cmd[13000];
    snprintf(src, sizeof src, "%s/emu.cpp", dir);
    snprintf(so, sizeof so, "%s/emu.so", dir);
    snprintf(log, sizeof log, "%s/emu.log", dir);
    FILE *f = fopen(src, "w");
    size_t n = strlen(text);
    bool ok = f && fwrite(text, 1, n, f) == n;
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok) {
        unlink(src);
        return snprintf(why, whylen, "cannot write %s", src), -1;
    }
    snprintf(cmd, sizeof cmd, "c++ -std=c++17 -O0 -w -shared -fPIC -include %s/tests/cuda/emu.h -o %s %s -lm 2>%s",
             ICC_SOURCE_DIR, so, src, log);
    int rc = 0;
    if (system(cmd) != 0) {
        char line[400] = "";
        FILE *lf = fopen(log, "r");
        while (lf && fgets(line, sizeof line, lf) && !strstr(line, "error"))
            ;
        if (lf)
            fclose(lf);
        line[strcspn(line, "\n")] = 0;
        rc = -1;
        snprintf(why, whylen, "cuda-emu: the C++ compiler refused the CUDA C: %s", line);
    }
    unlink(src);
    unlink(log);
    return rc;
}

int cuda_emu_build(const ir_graph *g, cuda_emu **out, char *why, size_t whylen)
{
    icc_diag d = {{0}};
    *out = NULL;
    cuda_emu *m = calloc(1, sizeof *m);
    if (!m)
        return snprintf(why, whylen, "out of memory"), -1;
    int rc = -1;
    char dir[] = "/tmp/icc-cuda-emu-XXXXXX", so[64] = "";
    char *text = NULL;
    size_t len = 0;
    cg_schedule s;
    if (icc_target_desc_init_cuda(&m->desc, 90, &d) < 0 || cg_schedule_init(&s, &m->desc, &d) < 0) {
        snprintf(why, whylen, "cuda: %s", d.msg);
        goto done;
    }
    if (cg_program_build(g, &s, "model", false, &m->p, &d) < 0) {
        snprintf(why, whylen, "compiled: %s", d.msg);
        rc = not_compiled_yet(d.msg) ? 1 : -1;
        goto done;
    }
    cg_program *p = m->p;
    if (p->dynamic || p->nchecks)
        return cuda_emu_free(m), skip(why, whylen, "cuda-emu: %s", "a program with symbolic dims");
    for (int i = 0; i < p->nkernels; i++)
        if (p->kernels[i].batch_sym)
            return cuda_emu_free(m), skip(why, whylen, "cuda-emu: %s", "a per-item batch loop");
    if (!cg_program_weights(p, &d)) {
        snprintf(why, whylen, "%s", d.msg);
        goto done;
    }
    len = strlen(cg_cuda_prelude);
    if (!(text = malloc(len + 1)))
        goto done;
    memcpy(text, cg_cuda_prelude, len + 1);
    for (int i = 0; i < p->nkernels; i++)
        if (cg_cuda_emit_kernel(p->kernels[i].k, &text, &len, &d) < 0) {
            text = NULL;
            rc = strstr(d.msg, "the CUDA backend") ? 1 : -1;
            snprintf(why, whylen, "cuda: %s", d.msg);
            goto done;
        }
    if (!mkdtemp(dir)) {
        snprintf(why, whylen, "mkdtemp failed");
        goto done;
    }
    snprintf(so, sizeof so, "%s/emu.so", dir);
    if (emu_compile(text, dir, why, whylen) < 0)
        goto done;
    if (!(m->lib = dlopen(so, RTLD_NOW | RTLD_LOCAL))) {
        snprintf(why, whylen, "cuda-emu: %s", dlerror());
        goto done;
    }
    m->tid = dlsym(m->lib, "icc_emu_tid");
    m->nthreads = dlsym(m->lib, "icc_emu_nthreads");
    if (!(m->fns = calloc((size_t)p->nkernels + 1, sizeof *m->fns)) || !m->tid || !m->nthreads)
        goto done;
    for (int i = 0; i < p->nkernels; i++) {
        char name[300];
        snprintf(name, sizeof name, "%s_emu", p->kernels[i].k->name);
        if (!(m->fns[i] = (emu_fn)(uintptr_t)dlsym(m->lib, name))) {
            snprintf(why, whylen, "cuda-emu: no %s", name);
            goto done;
        }
    }
    if (!(m->arena = calloc(1, (size_t)p->arena_bytes + 64)) || !(m->init = calloc(1, (size_t)p->init_bytes + 64)))
        goto done;
    /* the load-time kernels, once, as the model's open runs them */
    m->in_init = true;
    if (run_steps(m, 0, p->ninit_steps, NULL, NULL, &d) < 0) {
        snprintf(why, whylen, "cuda-emu: load-time kernels: %s", d.msg);
        goto done;
    }
    m->in_init = false;
    rc = 0;
    *out = m;
done:
    if (so[0])
        unlink(so);
    rmdir(dir);
    free(text);
    if (rc != 0)
        cuda_emu_free(m);
    return rc;
}

static int64_t size_of(const cg_size *z)
{
    int64_t n = z->scale;
    for (int i = 0; i < z->n; i++)
        n *= z->dims[i].v;
    return n;
}

static unsigned char *at(cuda_emu *m, cg_binding b, const ir_tensor *in, ir_tensor *out)
{
    switch (b.kind) {
    /* (the load-time steps have no inputs or outputs) */
    case KIR_BUF_INPUT: return in ? (unsigned char *)in[b.index].data + b.offset : NULL;
    case KIR_BUF_OUTPUT: return out ? (unsigned char *)out[b.index].data + b.offset : NULL;
    case KIR_BUF_WEIGHT: return (b.index == CG_WEIGHT_INIT ? m->init : m->p->weights) + b.offset;
    case KIR_BUF_ARENA: return (m->in_init ? m->init : m->arena) + b.offset;
    default: return NULL;
    }
}

/* One kernel as a launch: its parallel range over a few emulated threads
 * (more iterations than threads, so the grid-stride loop steps), or one
 * thread's work with a second thread that must do nothing. */
static int launch(cuda_emu *m, int ki, const ir_tensor *in, ir_tensor *out, const int64_t *syms, icc_diag *d)
{
    const cg_kernel *ck = &m->p->kernels[ki];
    const kir_kernel *k = ck->k;
    void *bufs[256];
    void *scratch[256] = {0};
    int32_t status = 0;
    if (k->nbufs > 256)
        return ir_errorf(d, "cuda-emu: kernel %s has %d buffers", k->name, k->nbufs);
    int rc = 0;
    for (int i = 0; i < k->nbufs && rc == 0; i++) {
        const kir_buf *b = &k->bufs[i];
        int64_t bytes;
        switch (b->kind) {
        case KIR_BUF_STATUS: bufs[i] = &status; break;
        case KIR_BUF_SCRATCH:
            bufs[i] = NULL;
            if (b->space == KIR_SPACE_KERNEL) {
                if (kir_buf_bytes(b, &bytes) < 0 || !(scratch[i] = calloc(1, (size_t)bytes + 64)))
                    rc = ir_errorf(d, "cuda-emu: kernel %s: scratch b%d", k->name, i);
                bufs[i] = scratch[i];
            }
            break;
        default: bufs[i] = at(m, (cg_binding){b->kind, b->index, b->offset}, in, out);
        }
    }
    int64_t nt = ck->trips.sym == 0 && ck->trips.v >= 2 ? (ck->trips.v < 3 ? ck->trips.v : 3) : 2;
    for (int64_t t = 0; rc == 0 && t < nt; t++) {
        *m->tid = t;
        *m->nthreads = nt;
        m->fns[ki]((void *const *)bufs, syms, 0, INT64_MAX);
    }
    for (int i = 0; i < k->nbufs; i++)
        free(scratch[i]);
    if (rc == 0 && status) {
        int msg = (status >> 8) - 1;
        return ir_errorf(d, "compiled run: %s",
                         msg >= 0 && msg < m->p->nmessages ? m->p->messages[msg] : "a kernel failed");
    }
    return rc;
}

/* Runs steps [lo, hi): kernels, branches, loop tests, copies, slices. */
static int run_steps(cuda_emu *m, int lo, int hi, const ir_tensor *in, ir_tensor *out, icc_diag *d)
{
    const cg_program *p = m->p;
    int64_t *syms = calloc((size_t)p->nsyms + 2, sizeof *syms);
    if (!syms)
        return ir_errorf(d, "out of memory");
    int rc = 0;
    for (int pc = lo; rc == 0 && pc < hi;) {
        const cg_step *st = &p->steps[pc];
        unsigned char *dst = at(m, st->dst, in, out), *src = at(m, st->src, in, out);
        int next = pc + 1;
        switch (st->kind) {
        case CG_STEP_KERNEL: rc = launch(m, st->kernel, in, out, syms, d); break;
        case CG_STEP_BRANCH:
            if (!*at(m, st->cond, in, out))
                next = st->target;
            break;
        case CG_STEP_JUMP: next = st->target; break;
        case CG_STEP_COPY: memmove(dst, src, (size_t)size_of(&st->bytes)); break;
        case CG_STEP_SET:
            if (st->width == 1)
                *dst = (unsigned char)st->value;
            else
                memcpy(dst, &st->value, 8);
            break;
        case CG_STEP_LOOP_TEST: {
            int64_t i, trips = INT64_MAX;
            memcpy(&i, dst, 8);
            if (st->const_trips)
                trips = st->value;
            else if (st->has_trips)
                memcpy(&trips, src, 8);
            if (i >= trips || (st->has_cond && !*at(m, st->cond, in, out)))
                next = st->target;
            break;
        }
        case CG_STEP_INC: {
            int64_t i;
            memcpy(&i, dst, 8);
            i++;
            memcpy(dst, &i, 8);
            break;
        }
        case CG_STEP_SLICE: {
            const cg_slice *sl = &st->slice;
            int64_t t;
            memcpy(&t, at(m, sl->counter, in, out), 8);
            if (sl->reverse)
                t = sl->len - 1 - t;
            int64_t stride[2], step[2];
            cg_slice_strides(sl, stride, step);
            for (int64_t r = 0; r < sl->rows; r++)
                memmove(dst + t * step[1] + r * stride[1], src + t * step[0] + r * stride[0], (size_t)sl->row_bytes);
            break;
        }
        }
        pc = next;
    }
    free(syms);
    return rc;
}

int cuda_emu_run(cuda_emu *m, const ir_tensor *in, ir_tensor *out, icc_diag *d)
{
    const cg_program *p = m->p;
    memset(m->arena, 0, (size_t)p->arena_bytes);
    int rc = run_steps(m, p->ninit_steps, p->nsteps, in, out, d);
    for (int i = 0; rc == 0 && i < p->ncopies; i++)
        memmove(out[p->copies[i].output].data, at(m, p->copies[i].src, in, out),
                (size_t)size_of(&p->copies[i].bytes));
    return rc;
}

int cuda_so_build(const ir_graph *g, const char *keep, icc_model **m, icc_context **ctx, char *why, size_t whylen)
{
    *m = NULL;
    *ctx = NULL;
    const cg_backend *be = cg_backend_find("cuda");
    if (!be)
        return snprintf(why, whylen, "cuda-so: built without the CUDA backend (no NVRTC)"), 1;
    icc_diag d = {{0}};
    void *tgt = NULL;
    cg_program *p = NULL;
    cg_artifact *a = NULL;
    char *text = NULL;
    int rc = -1;
    char dir[] = "/tmp/icc-cuda-so-XXXXXX", so[64] = "", emu[64] = "";
    cg_schedule s;
    if (be->target_create(NULL, "sm_90", NULL, 2, &tgt, &d) < 0 || cg_schedule_init(&s, be->target_desc(tgt), &d) < 0) {
        snprintf(why, whylen, "cuda-so: %s", d.msg);
        goto done;
    }
    if (cg_program_build(g, &s, "model", false, &p, &d) < 0) {
        snprintf(why, whylen, "compiled: %s", d.msg);
        rc = not_compiled_yet(d.msg) ? 1 : -1;
        goto done;
    }
    if (be->compile(tgt, p, &a, &d) < 0) {
        snprintf(why, whylen, "cuda-so: %s", d.msg);
        rc = strstr(d.msg, "the CUDA backend does not") ? 1 : -1;
        goto done;
    }
    if (!mkdtemp(dir)) {
        snprintf(why, whylen, "mkdtemp failed");
        goto done;
    }
    snprintf(so, sizeof so, "%s/m.so", dir);
    snprintf(emu, sizeof emu, "%s/emu.so", dir);
    if (be->write(a, keep ? keep : so, ICC_RUNTIME_LIB, &d) < 0) {
        snprintf(why, whylen, "cuda-so: %s", d.msg);
        rc = strstr(d.msg, "cannot compile") && strstr(d.msg, "yet") ? 1 : -1;
        goto done;
    }
    /* the emulation (emu.so) in the temporary directory; with keep, only
     * under ICC_GPU_SELFTEST and beside the library, so that
     * tests/gpu/run.sh can run the pack here (tests/gpu/conformance.c
     * points the stand-in driver at it) */
    const char *st = getenv("ICC_GPU_SELFTEST");
    char kdir[4096];
    const char *slash = keep ? strrchr(keep, '/') : NULL;
    snprintf(kdir, sizeof kdir, "%.*s", slash ? (int)(slash - keep) : 1, slash ? keep : ".");
    if (!keep || (st && *st)) {
        if (!(text = be->emit_text(a, "cuda", &d))) {
            snprintf(why, whylen, "cuda-so: %s", d.msg);
            goto done;
        }
        if (emu_compile(text, keep ? kdir : dir, why, whylen) < 0)
            goto done;
    }
    if (keep) {
        rc = 0;
        goto done;
    }
    /* the runtime opens the stand-in driver once per process; the driver
     * reads the emulated module's path at each module load */
    setenv("ICC_CUDA_DRIVER", ICC_FAKE_CUDA_DRIVER, 1);
    setenv("ICC_FAKE_CUDA_EMU", emu, 1);
    if (icc_model_open(so, NULL, m) != ICC_OK || icc_context_create(*m, NULL, ctx) != ICC_OK) {
        snprintf(why, whylen, "compiled: %s", icc_last_error());
        icc_model_close(*m);
        *m = NULL;
        goto done;
    }
    rc = 0;
done:
    /* (what is loaded stays mapped) */
    if (so[0]) {
        unlink(so);
        unlink(emu);
        rmdir(dir);
    }
    free(text);
    if (be) {
        be->artifact_free(a);
        if (tgt)
            be->target_destroy(tgt);
    }
    cg_program_destroy(p);
    return rc;
}
