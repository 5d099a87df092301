/* cuda_plan.h - the device plan of a model compiled with --target=cuda
 * (icc_model_desc.cuda): what the CUDA backend writes
 * (codegen/cuda/plan.c) and the runtime runs (runtime/cuda.c).
 *
 * One blob, 8-aligned, no pointers: a header, then tables of fixed-size
 * records found by byte offsets from the blob's start, then the strings
 * (NUL-terminated, found by offset), the cubin and the PTX. It is data
 * only: the run is the program's steps (codegen/program.h, cg_step) read
 * by the runtime's loop, each kernel step a launch over one device
 * arena. The compiler and the runtime that reads it come from the same
 * build as the descriptor (icc_model_desc.abi_version guards both);
 * `version` changes with any change of these records.
 */
#ifndef ICC_CUDA_PLAN_H
#define ICC_CUDA_PLAN_H

#include <stddef.h>
#include <stdint.h>

#define ICC_CUDA_PLAN_MAGIC 0x3141445543434349ull   /* "ICCCUDA1" in memory */
#define ICC_CUDA_PLAN_VERSION 3   /* 2: refs carry the bytes a kernel may touch; 3: kernels their block size */

/* Where a kernel argument or a step's operand lives. */
typedef enum icc_cuda_where {
    ICC_CUDA_INPUT = 1,        /* index: the run's input i (its device copy) */
    ICC_CUDA_OUTPUT,           /* index: the run's output i (its device buffer) */
    ICC_CUDA_WEIGHT,           /* the weights (offset bytes in) */
    ICC_CUDA_INIT,             /* the init buffer: the load-time kernels' results */
    ICC_CUDA_ARENA,            /* the arena; the init buffer while the load-time steps run */
    ICC_CUDA_STATUS,           /* the kernel's status word (index: the kernel) */
} icc_cuda_where;

typedef struct icc_cuda_ref {
    int32_t where;             /* icc_cuda_where */
    int32_t index;
    int64_t offset;
    int64_t bytes;             /* a kernel argument: the bytes from offset its kernel may read or write
                                  (its buffer's size), checked at open; 0 in steps, whose sizes are theirs */
} icc_cuda_ref;

/* One kernel: its entry in the module, its arguments (one pointer per
 * ref, then the symbol table, begin and end: codegen/cuda/emit.c), and
 * its launch: threads GPU threads over the grid-stride loop of its
 * parallel range (1: a kernel without one, run by thread 0), in blocks of
 * `block` threads (a GPU schedule's: threads is a multiple of it), or of
 * 128 (fewer when threads is) where block is 0. */
typedef struct icc_cuda_kernel {
    int64_t name;              /* string offset */
    int32_t first_arg, nargs;  /* into the ref table */
    int64_t threads;
    int32_t block;
    int32_t pad;
} icc_cuda_kernel;

/* The step kinds are cg_step_kind's, in its order. */
enum {
    ICC_CUDA_STEP_KERNEL, ICC_CUDA_STEP_BRANCH, ICC_CUDA_STEP_JUMP, ICC_CUDA_STEP_COPY, ICC_CUDA_STEP_SET,
    ICC_CUDA_STEP_LOOP_TEST, ICC_CUDA_STEP_INC, ICC_CUDA_STEP_SLICE,
};

/* One step (cg_step, with its sizes static). */
typedef struct icc_cuda_step {
    int32_t kind;
    int32_t kernel;            /* KERNEL */
    int32_t target;            /* BRANCH, JUMP, LOOP_TEST */
    int32_t width;             /* SET: 1 or 8 */
    int32_t has_cond, has_trips, const_trips, reverse;
    icc_cuda_ref cond, dst, src, counter;
    int64_t bytes;             /* COPY */
    int64_t value;             /* SET; LOOP_TEST with const_trips */
    int64_t len, rows, row_bytes, src_stride, dst_stride, src_step, dst_step;   /* SLICE */
} icc_cuda_step;

/* An output no kernel writes: bytes from src into output `output`. */
typedef struct icc_cuda_copy {
    int32_t output, pad;
    icc_cuda_ref src;
    int64_t bytes;
} icc_cuda_copy;

typedef struct icc_cuda_plan {
    uint64_t magic;            /* ICC_CUDA_PLAN_MAGIC */
    uint32_t version;          /* ICC_CUDA_PLAN_VERSION */
    uint32_t sm;               /* the cubin's architecture, e.g. 90 */
    int64_t total_bytes;       /* the blob's size */
    int64_t arena_bytes, init_bytes;   /* kernel-scope scratch included (cg_program) */
    int32_t nkernels, nsteps, ninit_steps, ncopies, nrefs, nsyms;   /* nsyms: the symbol table's entries */
    int64_t kernels, refs, steps, copies;   /* table offsets */
    int64_t cubin, cubin_bytes, ptx, ptx_bytes;   /* the PTX is NUL-terminated (ptx_bytes counts the NUL) */
    uint64_t checksum;         /* icc_cuda_plan_checksum: a plan damaged anywhere is refused at open */
} icc_cuda_plan;

/* FNV-1a 64 of the n-byte blob, its checksum field skipped: what the
 * compiler records in the header and the runtime checks at open (the
 * structural checks then hold for the plan the compiler wrote, whose
 * argument counts, for one, must match the kernels'). */
static inline uint64_t icc_cuda_plan_checksum(const void *blob, uint64_t n)
{
    const unsigned char *b = (const unsigned char *)blob;
    uint64_t h = 0xcbf29ce484222325ull, skip = offsetof(icc_cuda_plan, checksum);
    for (uint64_t i = 0; i < n; i++) {
        if (i >= skip && i < skip + sizeof(uint64_t))
            continue;
        h = (h ^ b[i]) * 0x100000001b3ull;
    }
    return h;
}

#endif
