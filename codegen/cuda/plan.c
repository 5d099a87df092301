/* plan.c - a program's device plan (runtime/cuda_plan.h): its kernels as
 * launches, its steps, its output copies, the cubin and the PTX, in one
 * blob the model library embeds and the runtime runs.
 *
 * What the plan cannot say yet is refused here, in one line: symbolic
 * dims (a dynamic arena, per-item batch loops, run-time shape checks),
 * --profile and external weights. */
#include "codegen/cuda/plan.h"
#include "codegen/cuda/emit.h"
#include "runtime/cuda_plan.h"

#include <stdlib.h>
#include <string.h>

/* The most GPU threads one launch asks for: the grid-stride loop covers
 * any trip count with fewer. */
enum { MAX_THREADS = 1 << 22, UNKNOWN_TRIPS_THREADS = 256, MAX_BLOCKS = 1 << 16 };

typedef struct {
    unsigned char *s;
    size_t len, cap;
    bool oom;
} blob;

/* Appends n bytes (NULL: zeros) at an 8-aligned offset; returns it. */
static int64_t put(blob *b, const void *data, size_t n)
{
    size_t at = (b->len + 7) / 8 * 8;
    if (b->oom || at + n + 8 < at)
        return b->oom = true, 0;
    if (at + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < at + n)
            cap *= 2;
        unsigned char *s = realloc(b->s, cap);
        if (!s)
            return b->oom = true, 0;
        b->s = s;
        b->cap = cap;
    }
    memset(b->s + b->len, 0, at - b->len);
    if (data)
        memcpy(b->s + at, data, n);
    else
        memset(b->s + at, 0, n);
    b->len = at + n;
    return (int64_t)at;
}

/* A static cg_size's value; -1 when it has a symbol. */
static int64_t static_size(const cg_size *z)
{
    int64_t n = z->scale;
    for (int i = 0; i < z->n; i++) {
        if (z->dims[i].sym)
            return -1;
        n *= z->dims[i].v;
    }
    return n;
}

static icc_cuda_ref ref_of(cg_binding b)
{
    switch (b.kind) {
    case KIR_BUF_INPUT: return (icc_cuda_ref){ICC_CUDA_INPUT, b.index, b.offset, 0};
    case KIR_BUF_OUTPUT: return (icc_cuda_ref){ICC_CUDA_OUTPUT, b.index, b.offset, 0};
    case KIR_BUF_WEIGHT:
        return (icc_cuda_ref){b.index == CG_WEIGHT_INIT ? ICC_CUDA_INIT : ICC_CUDA_WEIGHT, 0, b.offset, 0};
    case KIR_BUF_ARENA: return (icc_cuda_ref){ICC_CUDA_ARENA, 0, b.offset, 0};
    default: return (icc_cuda_ref){0, 0, 0, 0};
    }
}

/* How many GPU threads a kernel's launch asks for (codegen/cuda/emit.c:
 * every thread runs the grid-stride loop of the top-level PARALLEL loop;
 * without one, thread 0 runs the kernel; a GPU schedule: *block threads
 * per block, a block per trip of its grid loop, at most MAX_BLOCKS). */
static int64_t launch_threads(const cg_kernel *ck, int32_t *block)
{
    int64_t blocks;
    *block = (int32_t)cg_cuda_block_threads(ck->k, &blocks);
    if (*block) {
        blocks = blocks < 0 ? MAX_BLOCKS : blocks < 1 ? 1 : blocks < MAX_BLOCKS ? blocks : MAX_BLOCKS;
        return blocks * *block;
    }
    bool par = false;
    for (int i = 0; i < ck->k->body.n; i++)
        par |= ck->k->body.s[i]->kind == KIR_S_FOR && ck->k->body.s[i]->loop == KIR_PARALLEL;
    if (!par)
        return 1;
    if (ck->trips.sym == 0 && ck->trips.v >= 1)
        return ck->trips.v < MAX_THREADS ? ck->trips.v : MAX_THREADS;
    return UNKNOWN_TRIPS_THREADS;
}

static int plan_fail(blob *b, icc_diag *d, const char *what)
{
    free(b->s);
    return what ? ir_errorf(d, "--target=cuda cannot compile %s yet", what) : ir_errorf(d, "out of memory");
}

int cg_cuda_plan_build(const cg_program *p, int sm, const void *cubin, size_t cubin_bytes, const char *ptx,
                       size_t ptx_bytes, unsigned char **out, size_t *out_bytes, icc_diag *d)
{
    *out = NULL;
    *out_bytes = 0;
    blob b = {0};
    if (p->dynamic || p->nchecks || p->nderived)
        return plan_fail(&b, d, "a model with symbolic dims (pin them with --shape)");
    if (p->profile)
        return plan_fail(&b, d, "a profiled model (--profile)");
    if (p->external_weights)
        return plan_fail(&b, d, "a model with external weights (--weights=external)");
    for (int i = 0; i < p->nkernels; i++)
        if (p->kernels[i].batch_sym)
            return plan_fail(&b, d, "a per-item batch loop (pin the batch with --shape)");

    icc_cuda_plan h = {.magic = ICC_CUDA_PLAN_MAGIC, .version = ICC_CUDA_PLAN_VERSION, .sm = (uint32_t)sm,
                       .arena_bytes = p->arena_bytes, .init_bytes = p->init_bytes, .nkernels = p->nkernels,
                       .nsteps = p->nsteps, .ninit_steps = p->ninit_steps, .ncopies = p->ncopies,
                       .nsyms = p->nsyms + 1};
    put(&b, &h, sizeof h);

    /* the kernels and their arguments */
    int nrefs = 0;
    for (int i = 0; i < p->nkernels; i++)
        nrefs += p->kernels[i].k->nbufs;
    icc_cuda_kernel *ks = calloc((size_t)p->nkernels + 1, sizeof *ks);
    icc_cuda_ref *refs = calloc((size_t)nrefs + 1, sizeof *refs);
    if (!ks || !refs) {
        free(ks);
        free(refs);
        return plan_fail(&b, d, NULL);
    }
    int nr = 0;
    for (int i = 0; i < p->nkernels; i++) {
        const kir_kernel *k = p->kernels[i].k;
        ks[i].name = put(&b, k->name, strlen(k->name) + 1);
        ks[i].first_arg = nr;
        ks[i].threads = launch_threads(&p->kernels[i], &ks[i].block);
        for (int j = 0; j < k->nbufs; j++) {
            const kir_buf *kb = &k->bufs[j];
            if (kb->kind == KIR_BUF_SCRATCH && kb->space != KIR_SPACE_KERNEL)
                continue;   /* the thread's own: a local array */
            int64_t bytes = 4;
            if (kb->kind != KIR_BUF_STATUS && kir_buf_bytes(kb, &bytes) < 0) {
                free(ks);
                free(refs);
                return plan_fail(&b, d, "a kernel buffer of a symbolic size (pin the dims with --shape)");
            }
            if (kb->kind == KIR_BUF_STATUS)
                refs[nr] = (icc_cuda_ref){ICC_CUDA_STATUS, i, 0, 0};
            else if (kb->kind == KIR_BUF_SCRATCH)   /* kernel scope: in the arena (or the init buffer) */
                refs[nr] = (icc_cuda_ref){ICC_CUDA_ARENA, 0, kb->offset, 0};
            else
                refs[nr] = ref_of((cg_binding){kb->kind, kb->index, kb->offset});
            refs[nr++].bytes = bytes;
        }
        ks[i].nargs = nr - ks[i].first_arg;
    }
    h.nrefs = nr;
    h.kernels = put(&b, ks, sizeof *ks * (size_t)p->nkernels);
    h.refs = put(&b, refs, sizeof *refs * (size_t)nr);
    free(ks);
    free(refs);

    /* the steps and the output copies, their sizes static */
    icc_cuda_step *st = calloc((size_t)p->nsteps + 1, sizeof *st);
    icc_cuda_copy *cp = calloc((size_t)p->ncopies + 1, sizeof *cp);
    if (!st || !cp) {
        free(st);
        free(cp);
        return plan_fail(&b, d, NULL);
    }
    bool symbolic = false;
    for (int i = 0; i < p->nsteps; i++) {
        const cg_step *s = &p->steps[i];
        const cg_slice *sl = &s->slice;
        int64_t stride[2], step[2];
        cg_slice_strides(sl, stride, step);
        st[i] = (icc_cuda_step){.kind = (int32_t)s->kind, .kernel = s->kernel, .target = s->target,
                                .width = s->width, .has_cond = s->has_cond, .has_trips = s->has_trips,
                                .const_trips = s->const_trips, .reverse = sl->reverse, .cond = ref_of(s->cond),
                                .dst = ref_of(s->dst), .src = ref_of(s->src), .counter = ref_of(sl->counter),
                                .value = s->value, .len = sl->len, .rows = sl->rows, .row_bytes = sl->row_bytes,
                                .src_stride = stride[0], .dst_stride = stride[1],
                                .src_step = step[0], .dst_step = step[1]};
        if (s->kind == CG_STEP_COPY && (st[i].bytes = static_size(&s->bytes)) < 0)
            symbolic = true;
        symbolic |= (s->kind == CG_STEP_SLICE && sl->sym) || (s->kind == CG_STEP_LOOP_TEST && s->trips_sym > 0);
    }
    for (int i = 0; i < p->ncopies; i++) {
        cp[i] = (icc_cuda_copy){.output = p->copies[i].output, .src = ref_of(p->copies[i].src),
                                .bytes = static_size(&p->copies[i].bytes)};
        symbolic |= cp[i].bytes < 0;
    }
    h.steps = put(&b, st, sizeof *st * (size_t)p->nsteps);
    h.copies = put(&b, cp, sizeof *cp * (size_t)p->ncopies);
    free(st);
    free(cp);
    if (symbolic)
        return plan_fail(&b, d, "a copy of a symbolic size (pin the dims with --shape)");

    h.cubin = put(&b, cubin, cubin_bytes);
    h.cubin_bytes = (int64_t)cubin_bytes;
    h.ptx = put(&b, ptx, ptx_bytes);
    h.ptx_bytes = (int64_t)ptx_bytes;
    put(&b, NULL, 0);
    if (b.oom)
        return plan_fail(&b, d, NULL);
    h.total_bytes = (int64_t)b.len;
    memcpy(b.s, &h, sizeof h);
    h.checksum = icc_cuda_plan_checksum(b.s, b.len);
    memcpy(b.s, &h, sizeof h);
    *out = b.s;
    *out_bytes = b.len;
    return 0;
}
