/* icc/runtime.h - the runtime every compiled model links, and its ABI.
 *
 * Usage, with a model compiled by `icc model.onnx -o model.so`:
 *
 *     icc_model *m;
 *     if (icc_model_open("model.so", NULL, &m) != ICC_OK) {
 *         fprintf(stderr, "%s\n", icc_last_error());
 *         return 1;
 *     }
 *     icc_context *ctx;
 *     icc_context_create(m, NULL, &ctx);
 *     const void *in[1] = {pixels};           // in the order of icc_model_input(m, i)
 *     void *out[1] = {probs};
 *     int64_t dims[4] = {1, 3, 224, 224};     // actual dims of each input
 *     const int64_t *in_dims[1] = {dims};
 *     if (icc_run(ctx, in, in_dims, out) != ICC_OK)
 *         fprintf(stderr, "%s\n", icc_context_error(ctx));
 *     icc_context_destroy(ctx);
 *     icc_model_close(m);
 *
 * A loaded model is immutable and may be shared by any number of threads;
 * each thread runs it through its own context (arena + scratch). Nothing
 * here calls exit() or abort(); every failure is a status plus a message.
 * Ownership: *_create and *_open return objects the caller destroys/closes;
 * getters return borrowed pointers valid while their owner lives.
 */
#ifndef ICC_RUNTIME_H
#define ICC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any incompatible change of icc_model_desc or the entry point. */
#define ICC_ABI_VERSION 2
/* The oldest model ABI this runtime still loads (1: no init function). */
#define ICC_ABI_VERSION_MIN 1

typedef enum icc_status {
    ICC_OK = 0,
    ICC_ERR_INVALID,      /* bad argument */
    ICC_ERR_SHAPE,        /* an input's shape does not match the model */
    ICC_ERR_DTYPE,        /* an input's dtype does not match the model */
    ICC_ERR_NOMEM,        /* an allocation failed */
    ICC_ERR_CPU,          /* the model needs a CPU feature this machine lacks */
    ICC_ERR_IO,           /* a file could not be opened, read or mapped */
    ICC_ERR_ABI,          /* not an icc model, or a different ABI version */
    ICC_ERR_INTERNAL,     /* a bug: please report */
    ICC_ERR_DEVICE,       /* a model for a GPU (--target=cuda) found no driver or device, or the
                             device failed */
} icc_status;

/* Element types, numbered as ONNX's TensorProto.DataType. */
typedef enum icc_dtype {
    ICC_F32 = 1, ICC_U8 = 2, ICC_I8 = 3, ICC_U16 = 4, ICC_I16 = 5, ICC_I32 = 6,
    ICC_I64 = 7, ICC_BOOL = 9, ICC_F16 = 10, ICC_F64 = 11, ICC_U32 = 12,
    ICC_U64 = 13, ICC_BF16 = 16,
} icc_dtype;

/* ---- the ABI a compiled model exports ------------------------------------ */

/* One input or output. dims[i] >= 0 is fixed; -1 is symbolic, named by
 * dim_names[i] (symbols with the same name must agree at run time). */
typedef struct icc_tensor_desc {
    const char *name;
    int32_t dtype;                 /* an icc_dtype */
    int32_t rank;
    const int64_t *dims;
    const char *const *dim_names;  /* rank entries; NULL where fixed */
} icc_tensor_desc;

/* Services the runtime lends generated code (read-only to it). */
typedef struct icc_kernel_env {
    /* Runs fn(arg, i) for every i in [0, n), spread over the context's
     * workers and the calling thread, and returns when all are done. The
     * calls for different i must be independent (any order, any thread).
     * A nested call (from inside fn) runs serially on its thread. */
    void (*parallel_for)(void *pool, int64_t n, void (*fn)(void *arg, int64_t i), void *arg);
    void *pool;
    int32_t nthreads;              /* threads parallel_for may use, caller included (>= 1) */
    int32_t profile_calls;         /* nonzero: profile_ns has room for call counts (below) */
    const void *weights;           /* desc->weights, or the mapped model.weights file */
    /* For a model compiled with --profile (desc->nkernels > 0): the run
     * adds each kernel's wall time, clock_ns() after minus before, to
     * profile_ns[k] (nkernels entries) and, when profile_calls is set,
     * counts each call in profile_ns[nkernels + k] (a kernel in a loop body
     * runs once per iteration, one in an If's branch only when it is
     * taken). Either may be NULL: then nothing is recorded. Models
     * compiled without --profile never read them. */
    uint64_t *profile_ns;
    uint64_t (*clock_ns)(void);
    /* (ABI 2) The model's init buffer (icc_model_desc.init_bytes), filled
     * by desc->init at load; the run reads it like the weights. NULL when
     * the model has none. */
    const void *init;
} icc_kernel_env;

/* The entry point of the generated code. inputs/outputs follow the
 * descriptor's order; dims holds the actual value of every symbol, in the
 * order of icc_model_desc.symbols; arena is at least arena_size(dims)
 * bytes (arena_bytes when the model has no symbols), 64-byte aligned and
 * never NULL. Returns 0, or an icc_status (with a message index, see
 * icc_model_desc.messages). */
typedef int (*icc_entry_fn)(const void *const *inputs, void *const *outputs, const int64_t *dims,
                            void *arena, const icc_kernel_env *env);

/* Arena bytes needed for the given symbol values (NULL when the model has
 * no symbols, then arena_bytes is exact). */
typedef uint64_t (*icc_arena_fn)(const int64_t *dims);

/* A profiled model's per-kernel FLOPs and bytes for the given symbol
 * values (dims as for icc_arena_fn), one entry per kernel each. */
typedef void (*icc_costs_fn)(const int64_t *dims, uint64_t *flops, uint64_t *bytes);

/* A derived symbol (a dim the model computes from other symbols, such as
 * a Conv's output height floor((H-3)/2)+1): value = a OP b, where an
 * operand is the value of an earlier symbol (a_sym/b_sym >= 0, an index
 * into icc_model_desc.symbols) or the constant a/b (a_sym/b_sym -1).
 * message, when > 0, is 1 + the index into icc_model_desc.messages of the
 * node that first gives the dim ("node 'p' (MaxPool)"), which the runtime
 * names when the input dims make it negative; 0 names none (models
 * compiled before the field, which was reserved and 0). */
typedef enum icc_sym_op {
    ICC_SYM_ADD = 1,               /* a + b */
    ICC_SYM_MUL = 2,               /* a * b */
    ICC_SYM_FLOORDIV = 3,          /* floor(a / b), b a constant > 0 */
    ICC_SYM_CEILDIV = 4,           /* ceil(a / b), b a constant > 0 */
} icc_sym_op;

/* Or-ed into icc_sym_def.op: the symbol sizes only values inside a
 * subgraph (an If's branch, a Loop's body), which may not run at all. A
 * negative value is then no error before the run: it counts as 0, and
 * the subgraph checks it, in the kernels before the node that makes it. */
#define ICC_SYM_IN_SUBGRAPH 0x100

typedef struct icc_sym_def {
    int32_t op;                    /* an icc_sym_op, maybe with ICC_SYM_IN_SUBGRAPH */
    int32_t a_sym, b_sym;
    int32_t message;
    int64_t a, b;
} icc_sym_def;

/* What a profiled kernel's arithmetic runs on, so that a profiler
 * measures it against the right peak (icc_model_kernel_kind). Decided
 * from the instructions the kernel's code uses, not from its op types:
 * a bf16 MatMul compiled for a target without vdpbf16ps widens to f32
 * FMAs and is ICC_KERNEL_F32. Its flops count a multiply-add as 2 in
 * every kind (int8: two int-ops). A value this header does not name
 * (from a newer compiler) is to be taken as ICC_KERNEL_F32. */
typedef enum icc_kernel_kind {
    ICC_KERNEL_F32 = 0,            /* FP32 FMA, and everything without a dot-product instruction */
    ICC_KERNEL_BF16_DOT = 1,       /* bf16 pairs into f32 sums (AVX512-BF16 vdpbf16ps) */
    ICC_KERNEL_INT8_DOT = 2,       /* u8 x i8 products summed into i32 (VNNI vpdpbusd; AVX2
                                      vpmaddubsw / vpmaddwd) */
    ICC_KERNEL_AMX_BF16 = 3,       /* AMX tiles: tdpbf16ps */
    ICC_KERNEL_AMX_INT8 = 4,       /* AMX tiles: tdpbssd and kin */
} icc_kernel_kind;

/* One kernel of a model compiled with --profile: a fused group of nodes,
 * with its static cost per run (symbolic dims counted as 1). Its compute
 * kind is in icc_model_desc.kernel_kinds (the struct's size is the
 * table's stride: it does not grow). */
typedef struct icc_kernel_info {
    const char *name;              /* the group's node names, joined by '+' */
    const char *ops;               /* their op types, joined by '+' */
    uint64_t flops;                /* ir_node_flops summed: a multiply-add is 2 */
    uint64_t bytes;                /* the group's inputs from memory (each once) and its outputs */
} icc_kernel_info;

/* The one symbol a model exports: `<prefix>_model` (default prefix
 * "model", so `model_model`; the prefix cannot be "icc", whose `icc_model`
 * and `icc_run` are this header's names). */
typedef struct icc_model_desc {
    uint32_t abi_version;          /* ICC_ABI_VERSION */
    uint32_t desc_size;            /* sizeof(icc_model_desc) when compiled */
    const char *compiler_version;
    const char *name;              /* the --name prefix */
    const char *cpu_features;      /* comma-separated LLVM feature names, e.g. "avx2,fma" */
    int32_t ninputs, noutputs;
    const icc_tensor_desc *inputs;
    const icc_tensor_desc *outputs;
    int32_t nsymbols;
    const char *const *symbols;    /* symbol names, the order of `dims` */
    uint64_t arena_bytes;          /* for all symbols = 1, or exact when none */
    icc_arena_fn arena_size;       /* NULL when the model has no symbols */
    uint64_t weights_checksum;     /* FNV-1a 64 of the weights */
    uint64_t weights_bytes;
    /* In .rodata, 64-byte aligned; NULL if external: then icc_model_open
     * maps `<path less .so>.weights` (weights_bytes long, checksum
     * verified) and the code reads it through env->weights. */
    const void *weights;
    icc_entry_fn run;
    /* Why a run failed: run returns an icc_status, or status | (i + 1) << 8
     * with messages[i] saying what was wrong (e.g. a dim the model fixes,
     * or two dims it needs equal, differing at run time). */
    const char *const *messages;
    int32_t nmessages;
    int32_t reserved2;
    /* Added after the first release of ABI 1, so read only when desc_size
     * covers them (the runtime does): what a model compiled with --profile
     * times, one entry per kernel in run order; nkernels 0 otherwise. */
    const icc_kernel_info *kernels;
    int32_t nkernels;
    int32_t reserved3;
    /* (ABI 2) Kernels computed from constants only, run once when the
     * model is loaded: icc_model_open allocates init_bytes (64-byte
     * aligned) and calls init(NULL, NULL, NULL, buffer, env) with
     * env->init = buffer and one thread; init returns 0 or a status like
     * run's. The buffer is then read-only, shared by every context, and
     * freed by icc_model_close. init_bytes 0: init is NULL. */
    uint64_t init_bytes;
    icc_entry_fn init;
    /* (ABI 2, appended later: read only when desc_size covers them) The
     * last nderived entries of `symbols` are no input's dims but derived
     * symbols, derived[i] defining symbols[nsymbols - nderived + i]. The
     * runtime computes them in order from the input-bound ones before a
     * run (a negative value or an overflow is ICC_ERR_SHAPE), so `dims`
     * holds every symbol's value for run and arena_size. */
    const icc_sym_def *derived;
    int32_t nderived;
    int32_t reserved4;
    /* (ABI 2, appended later: read only when desc_size covers it) With
     * kernels: nkernels entries, kernel_kinds[k] the icc_kernel_kind of
     * kernels[k]; NULL, or a descriptor that predates the field: every
     * kernel ICC_KERNEL_F32. */
    const int32_t *kernel_kinds;
    /* (ABI 2, appended later: read only when desc_size covers them) A
     * model compiled with --target=cuda: its device plan, cuda_bytes long
     * (the kernels as a cubin and PTX, the run's steps as launches over
     * one device arena; runtime/cuda_plan.h). run and init are then NULL:
     * each context opens the CUDA driver (libcuda.so.1, with dlopen),
     * loads the module and holds the device memory, and icc_run copies
     * the inputs in and the outputs out. NULL for a CPU model. */
    const void *cuda;
    uint64_t cuda_bytes;
    /* (ABI 2, appended later: read only when desc_size covers it) A model
     * compiled with --profile whose dims are symbolic: each kernel's FLOPs
     * and bytes at the given symbol values (the kernel table's count every
     * symbol as 1; icc_context_kernel_costs); NULL otherwise. A kernel
     * whose cost the compiler could not express in the symbols gets the
     * table's values. */
    icc_costs_fn kernel_costs;
} icc_model_desc;


/* ---- the runtime API ----------------------------------------------------- */

typedef struct icc_model icc_model;
typedef struct icc_context icc_context;

/* Caller-supplied allocator (optional): alloc(user, bytes, align) and
 * free(user, ptr). NULL uses aligned_alloc/free. */
typedef struct icc_allocator {
    void *(*alloc)(void *user, size_t bytes, size_t align);
    void (*free)(void *user, void *ptr);
    void *user;
} icc_allocator;

/* Loads a model .so by path (dlopen; a path without '/' is taken
 * relative to the working directory, not searched for), finds its
 * descriptor (symbol `<prefix>_model`; prefix NULL means "model"), checks
 * the ABI version, the descriptor's consistency, and that this CPU has
 * every feature the model needs. Errors: ICC_ERR_IO (file missing or
 * unreadable), ICC_ERR_ABI (not a loadable .so, no such symbol, other ABI
 * version, inconsistent descriptor), ICC_ERR_CPU (a feature missing or
 * unknown to this runtime), with icc_last_error() naming the thing. The
 * caller closes *out with icc_model_close. */
icc_status icc_model_open(const char *path, const char *prefix, icc_model **out);
/* Wraps a descriptor linked into the program (model.h's symbol), with the
 * same checks. The descriptor must outlive the model. External weights
 * are mapped from `<the .so holding desc, less .so>.weights`. */
icc_status icc_model_from_desc(const icc_model_desc *desc, icc_model **out);
/* NULL is a no-op. No context of m may outlive it. */
void icc_model_close(icc_model *m);
/* Borrowed, valid while m is open. */
const icc_model_desc *icc_model_describe(const icc_model *m);
/* Input/output i (borrowed), or NULL when i is out of range. */
const icc_tensor_desc *icc_model_input(const icc_model *m, int i);
const icc_tensor_desc *icc_model_output(const icc_model *m, int i);
/* The index of the input/output of that name, or -1. */
int icc_model_find_input(const icc_model *m, const char *name);
int icc_model_find_output(const icc_model *m, const char *name);

/* A context: the arena, scratch and thread pool one thread runs with;
 * one context serves one caller at a time (a run that starts while
 * another is in progress on the same context returns ICC_ERR_INVALID and
 * leaves that run alone). alloc may be NULL; it is
 * copied, and used for every allocation the context makes. Threads:
 * ICC_NUM_THREADS (a positive integer, else ICC_ERR_INVALID), else the
 * CPUs this process may run on; 1 means no worker threads. Workers start
 * at the first run that has parallel work and sleep between runs, after
 * polling for the next job for ICC_SPIN_US microseconds (an integer in
 * [0, 1000000], else ICC_ERR_INVALID; default 5). The
 * caller destroys *out with icc_context_destroy. */
icc_status icc_context_create(const icc_model *m, const icc_allocator *alloc, icc_context **out);
/* threads >= 1 sets the count (caller included); 0 restores the default
 * above. Joins the current workers; not during a run. */
icc_status icc_context_set_threads(icc_context *ctx, int threads);
/* The thread count runs use, caller included. */
int icc_context_threads(const icc_context *ctx);
/* Joins the workers and frees everything; NULL is a no-op. */
void icc_context_destroy(icc_context *ctx);

/* Runs the model. in_dims[i] gives input i's actual dims (rank entries);
 * they are checked against the descriptor (fixed dims equal, symbols
 * consistent and >= 0): ICC_ERR_SHAPE with a message naming the input and
 * dim. in_dims (or one entry) may be NULL for inputs with no symbolic dim.
 * The arena grows when these symbol values need more. Outputs must be
 * large enough for the resulting shapes (icc_output_dims tells them after
 * shapes are known); a buffer may be NULL only for an empty output. */
icc_status icc_run(icc_context *ctx, const void *const *inputs, const int64_t *const *in_dims,
                   void *const *outputs);
/* icc_run for a model compiled with --target=cuda, with the inputs and
 * outputs already in memory of the context's device (CUdeviceptr values
 * as pointers, from the same CUDA context: the device's primary one): no
 * copies through the host. Returns when the outputs are written. A CUDA
 * model's shapes are static, so there are no dims to pass. ICC_ERR_INVALID
 * for a CPU model. */
icc_status icc_run_device(icc_context *ctx, const void *const *inputs, void *const *outputs);
/* An input buffer that says what it holds, for icc_run_tensors. */
typedef struct icc_tensor {
    const void *data;
    int32_t dtype;                 /* an icc_dtype */
    int32_t rank;
    const int64_t *dims;           /* rank entries */
} icc_tensor;

/* icc_run for buffers that carry dtype and rank (e.g. from .npy files):
 * also checks ninputs, each input's dtype (ICC_ERR_DTYPE) and rank
 * (ICC_ERR_SHAPE), naming the input. */
icc_status icc_run_tensors(icc_context *ctx, const icc_tensor *inputs, int ninputs,
                           void *const *outputs);
/* Dims of output `index` (rank entries into dims) for inputs of the given
 * dims: fixed dims as declared, symbols bound from the inputs (checked as
 * icc_run does; errors in icc_last_error()). */
icc_status icc_output_dims(const icc_model *m, const int64_t *const *in_dims, int index, int64_t *dims);
/* ---- profiling (models compiled with `icc ... --profile`) ---------------- */

/* The model's kernels (borrowed, valid while m is open) into *kernels
 * (may be NULL); returns their count, 0 for a model compiled without
 * --profile (or NULL m). */
int icc_model_kernels(const icc_model *m, const icc_kernel_info **kernels);
/* The icc_kernel_kind of kernel k (what its arithmetic runs on, to pick
 * the peak it is measured against): ICC_KERNEL_F32 for a model compiled
 * before kinds were recorded; -1 when k is not in [0, icc_model_kernels)
 * (or m is NULL). */
int icc_model_kernel_kind(const icc_model *m, int k);
/* Per-kernel wall nanoseconds (icc_model_kernels entries, borrowed, valid
 * until the next run or reset on ctx), summed over the successful runs
 * since create or the last reset, whose count goes to *runs (may be
 * NULL). A kernel split over threads counts its wall time once. The
 * nkernels times are followed by nkernels call counts (summed the same
 * way; 0 from a model compiled before they were counted). NULL for a
 * model without profiling. */
const uint64_t *icc_context_profile(const icc_context *ctx, uint64_t *runs);
/* Zeroes ctx's counters and run count (no-op without profiling). */
void icc_context_profile_reset(icc_context *ctx);
/* Each kernel's FLOPs and bytes (icc_model_kernels entries each, into
 * flops and bytes) at the dims of ctx's last successful run: 1 when the
 * model computes them for symbolic dims (icc_model_desc.kernel_costs), 0
 * when the kernel table's values are all there is (a model without
 * symbols, whose values are exact, or one compiled before; also before a
 * first run), -1 on bad arguments. */
int icc_context_kernel_costs(const icc_context *ctx, uint64_t *flops, uint64_t *bytes);

/* The message of the last failure in ctx (never NULL). */
const char *icc_context_error(const icc_context *ctx);
/* The message of the last failure on this thread (open, create,
 * output_dims, and a copy of icc_run's); "" when none. */
const char *icc_last_error(void);

/* Size of one element of dtype; 0 if unknown. */
size_t icc_dtype_size(int32_t dtype);

#ifdef __cplusplus
}
#endif

#endif
