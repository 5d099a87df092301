/* kir.h - the kernel IR: loops, loads, scalar expressions, stores.
 *
 * The graph IR says what is computed; a kernel says how. A kernel reads
 * and writes buffers (its parameters) inside a nest of loops whose bounds
 * are index expressions over loop variables, graph symbols and constants.
 * Both backends (LLVM for CPUs, CUDA C for NVRTC) consume kernels, so a
 * fused group is lowered once. Design notes: docs/kernel-ir.md.
 *
 * Memory: a kernel owns one arena; expressions, statements and buffers
 * live in it and die with kir_kernel_destroy(). Expressions form a DAG
 * (sharing a subexpression is fine; backends evaluate it once per use).
 *
 * Indexing is row-major over each buffer's dims; a load or store gives
 * one i64 index per dim. Broadcasting, transposition and blocked layouts
 * are expressed by the index expressions, not by the buffers.
 *
 * Compiled form (the LLVM backend): each kernel becomes
 *     void NAME(void *const *bufs, const int64_t *syms, int64_t begin, int64_t end)
 * bufs[i] points to buffer i's first element; syms[k] is the value of
 * graph symbol k (ids as in the graph, syms[0] unused); when the kernel's
 * outermost statement is a PARALLEL loop, only its iterations in
 * [begin, end) run (the runtime's parallel_for splits the range);
 * otherwise begin/end are ignored. Thread- and block-scope scratch
 * buffers have no slot in bufs (their entry is ignored; the function
 * allocates them on its stack); a kernel-scope one's slot points into the
 * arena at its offset.
 */
#ifndef ICC_KIR_H
#define ICC_KIR_H

#include "icc/runtime.h"
#include "ir/ir.h"

typedef enum kir_op {
#define KOP(id, name, arity) KIR_##id,
#include "codegen/kir_ops.def"
#undef KOP
    KIR_OP_COUNT
} kir_op;

const char *kir_op_name(kir_op op);
int kir_op_arity(kir_op op);
/* Whether a float result of op may be inexact, so that an f16/bf16 one is
 * rounded again (both backends keep those in f32 registers). */
bool kir_op_inexact(kir_op op);

typedef struct kir_expr {
    kir_op op;
    ir_dtype dtype;            /* the result's dtype; I64 for index math */
    struct kir_expr *a[3];     /* operands */
    union {
        double f;              /* CONST of a float dtype */
        int64_t i;             /* CONST of an integer or bool dtype */
    } c;
    int var;                   /* VAR: loop variable; SYM: symbol id; ACC: accumulator;
                                  LETV: let id */
    int buf;                   /* LOAD: buffer index */
    int nidx;                  /* LOAD: one index per buffer dim */
    struct kir_expr **idx;
} kir_expr;

typedef enum kir_loop {
    KIR_SERIAL,
    KIR_PARALLEL,              /* iterations split across threads (outermost only) */
    KIR_VECTOR,                /* unit-stride, vectorize by `width` lanes */
    KIR_UNROLL,                /* unroll by `width` */
    /* A GPU schedule (docs/kernel-ir.md, "GPU loops"): iterations spread
     * over the grid's thread blocks (GRID, outermost), a block's threads
     * (THREAD, inside GRID), a block's warps (BLOCK, inside GRID) and a
     * warp's lanes (WARP, inside BLOCK). The CPU backend runs them serially
     * when no barrier is inside, and refuses them otherwise. */
    KIR_GRID,
    KIR_THREAD,
    KIR_BLOCK,
    KIR_WARP,
} kir_loop;

/* Where a buffer lives. Global memory holds the graph's values; the
 * others are scratch declared by the kernel (KIR_BUF_SCRATCH), with
 * constant dims and undefined contents at the start of their scope. */
typedef enum kir_space {
    KIR_SPACE_GLOBAL,          /* inputs, outputs, weights, the arena */
    KIR_SPACE_KERNEL,          /* one copy per kernel launch, shared by all its threads */
    KIR_SPACE_BLOCK,           /* one per thread block (CUDA __shared__) */
    KIR_SPACE_THREAD,          /* one per thread (registers / the stack) */
} kir_space;

const char *kir_space_name(kir_space s);   /* "global", "kernel", "block", "thread" */

/* Which threads a barrier synchronises. */
typedef enum kir_scope {
    KIR_SCOPE_BLOCK,           /* a thread block's (CUDA __syncthreads) */
    KIR_SCOPE_WARP,            /* a warp's (__syncwarp) */
} kir_scope;

/* Intrinsic statements (codegen/kir_intrinsics.def). */
typedef enum kir_intrin {
#define KINTR(id, name, feature, kind, nargs, a0, a1, a2, a3) KIR_IN_##id,
#include "codegen/kir_intrinsics.def"
#undef KINTR
    KIR_INTRIN_COUNT
} kir_intrin;

const char *kir_intrin_name(kir_intrin id);
/* The target feature(s) it needs, LLVM's spelling ("a|b": either). */
const char *kir_intrin_feature(kir_intrin id);
int kir_intrin_nargs(kir_intrin id);
/* The arithmetic it does where the target has its feature (the def's
 * KIND column). */
icc_kernel_kind kir_intrin_kind(kir_intrin id);
/* amx_config's lane count (kir_intrinsics.def): the operand tiles' depth d
 * (bytes of k) and the tiles' rows r as d | r << 8, each 0 when it is the
 * default (64, 16); and back, defaults filled in. */
static inline int kir_amx_config_lanes(int depth, int rows)
{
    return (depth == 64 ? 0 : depth) | (rows == 16 ? 0 : rows << 8);
}
static inline int kir_amx_depth(int lanes) { return lanes & 0xff ? lanes & 0xff : 64; }
static inline int kir_amx_rows(int lanes) { return lanes >> 8 ? lanes >> 8 : 16; }

/* An intrinsic's operand: a buffer element (buf >= 0, one index per dim;
 * the operation reads or writes from there along the last dim, or a 2-D
 * window of rows) or an AMX tile register (buf = -1, tile 0..7). A
 * window's rows are `rows` elements apart (an i64 index expression: a
 * plane of symbolic size between a blocked layout's lanes), or NULL: the
 * buffer's second-to-last dim's stride. */
typedef struct kir_iarg {
    int buf;
    int nidx;
    struct kir_expr **idx;
    int tile;
    struct kir_expr *rows;
} kir_iarg;

typedef enum kir_stmt_kind {
    KIR_S_FOR,                 /* for var in [lo, hi): body */
    KIR_S_STORE,               /* buf[idx...] = value */
    KIR_S_ACC_SET,             /* accumulator acc = value */
    KIR_S_IF,                  /* if cond: body else orelse */
    KIR_S_LET,                 /* let l<let> = value: evaluated once, read by LETV */
    KIR_S_BARRIER,             /* barrier(scope): the scope's threads wait for each other */
    KIR_S_INTRINSIC,           /* name(lanes) args...: an entry of kir_intrinsics.def */
    KIR_S_FAIL,                /* fail "msg": the run returns an error status (message msg)
                                  once this kernel ends; the kernel itself goes on, so the
                                  code around it must stay inside its buffers (clamped) */
} kir_stmt_kind;

struct kir_stmt;
typedef struct kir_block {
    struct kir_stmt **s;
    int n, cap;
} kir_block;

typedef struct kir_stmt {
    kir_stmt_kind kind;
    /* FOR */
    int var;
    kir_expr *lo, *hi;
    kir_loop loop;
    int width;
    bool tail_mask;            /* innermost VECTOR: the remainder runs as one masked
                                  vector step (short loops), not scalar iterations */
    kir_block body;
    /* IF: cond, body, orelse */
    kir_expr *cond;
    kir_block orelse;
    /* STORE */
    int buf;
    int nidx;
    kir_expr **idx;
    /* STORE, ACC_SET, LET */
    kir_expr *value;
    int acc;
    int let;                   /* LET: its id */
    kir_scope scope;           /* BARRIER */
    /* INTRINSIC */
    kir_intrin intrin;
    int lanes;                 /* the lane count n of the def's semantics */
    int nargs;
    kir_iarg *args;
    int msg;                   /* FAIL: index into the kernel's fails */
} kir_stmt;

typedef enum kir_buf_kind {
    KIR_BUF_INPUT,             /* a graph input (index = its position) */
    KIR_BUF_OUTPUT,            /* a graph output (index = its position) */
    KIR_BUF_WEIGHT,            /* constant bytes in the weights (offset) */
    KIR_BUF_ARENA,             /* an intermediate in the arena (offset) */
    KIR_BUF_SCRATCH,           /* the kernel's own (kir_add_scratch; space) */
    KIR_BUF_STATUS,            /* the run's status word (one i32, made by kir_fail): the
                                  model reads it after the kernel */
} kir_buf_kind;

typedef struct kir_buf {
    const char *name;          /* the graph value's name */
    kir_buf_kind kind;
    ir_dtype dtype;
    int rank;
    kir_expr *dims[IR_MAX_RANK];   /* i64 index expressions (CONST or SYM) */
    int index;                 /* INPUT/OUTPUT position */
    int64_t offset;            /* WEIGHT/ARENA byte offset; kernel-scope SCRATCH: its
                                  arena offset, -1 until the model assigns one */
    bool written;              /* the kernel stores to it */
    kir_space space;           /* GLOBAL unless SCRATCH */
} kir_buf;

typedef struct kir_kernel {
    ir_arena *arena;
    const char *name;
    const ir_graph *graph;     /* for symbol names in dumps (borrowed; may be NULL) */
    int nbufs, cap_bufs;
    kir_buf *bufs;
    int nvars;                 /* loop variables are 0..nvars-1 */
    int naccs, cap_accs;
    ir_dtype *acc_dtype;       /* accumulators are 0..naccs-1 */
    int nlets, cap_lets;
    kir_expr **let_value;      /* lets are 0..nlets-1: each one's bound expression */
    /* Run-time errors (kir_fail): their messages, the status buffer they
     * set (-1: none), and the number the program gives the first message
     * (a FAIL of message m returns ICC_ERR_INVALID | (fail_base + m) << 8;
     * 1 until the program numbers them). */
    int nfails, cap_fails;
    const char **fails;
    int status_buf;
    int fail_base;
    kir_block body;
} kir_kernel;

/* Creates an empty kernel (the caller destroys it); NULL on out of memory. */
kir_kernel *kir_kernel_create(const char *name, const ir_graph *g);
void kir_kernel_destroy(kir_kernel *k);

/* Buffers: returns the new buffer's index, -1 on out of memory. dims are
 * the value's type (constants, or symbols as SYM expressions). */
int kir_add_buf(kir_kernel *k, const char *name, kir_buf_kind kind, const ir_type *type,
                int index, int64_t offset);

/* A scratch buffer of space KERNEL, BLOCK or THREAD: dtype dt, rank dims
 * (each > 0; dims is copied). Returns its index, -1 on out of memory, a
 * bad space or dim, or a size past 2^31 bytes (overflow-checked). */
int kir_add_scratch(kir_kernel *k, const char *name, kir_space space, ir_dtype dt, int rank,
                    const int64_t *dims);
/* Bytes of buffer b when all its dims are constants: 0 and *bytes, or -1
 * (a symbolic dim, or the product overflows int64). */
int kir_buf_bytes(const kir_buf *b, int64_t *bytes);

/* Expressions (NULL on out of memory; builders accept NULL operands and
 * return NULL, so a chain of calls needs one check at the end). */
kir_expr *kir_const_f(kir_kernel *k, ir_dtype dt, double v);
kir_expr *kir_const_i(kir_kernel *k, ir_dtype dt, int64_t v);
kir_expr *kir_var(kir_kernel *k, int var);
kir_expr *kir_sym(kir_kernel *k, int sym);
/* A static dim as an i64 index expression: its constant, or the run's
 * symbol (d.sym > 0). */
kir_expr *kir_dim(kir_kernel *k, ir_dim d);
kir_expr *kir_acc(kir_kernel *k, int acc);
kir_expr *kir_load(kir_kernel *k, int buf, kir_expr *const *idx);
/* Unary/binary/ternary ops; dtype is the result's (comparisons: IR_BOOL). */
kir_expr *kir_op1(kir_kernel *k, kir_op op, ir_dtype dt, kir_expr *a);
kir_expr *kir_op2(kir_kernel *k, kir_op op, ir_dtype dt, kir_expr *a, kir_expr *b);
kir_expr *kir_op3(kir_kernel *k, kir_op op, ir_dtype dt, kir_expr *a, kir_expr *b, kir_expr *c);
/* Index arithmetic on i64. */
kir_expr *kir_iadd(kir_kernel *k, kir_expr *a, kir_expr *b);
kir_expr *kir_imul(kir_kernel *k, kir_expr *a, kir_expr *b);

/* Statements are appended to a block (the kernel's body, or a loop's). */
int kir_new_var(kir_kernel *k);
int kir_new_acc(kir_kernel *k, ir_dtype dt);
/* Appends `for var in [lo, hi)` to b and returns it (its body to fill). */
kir_stmt *kir_for(kir_kernel *k, kir_block *b, int var, kir_expr *lo, kir_expr *hi, kir_loop loop,
                  int width);
kir_stmt *kir_store(kir_kernel *k, kir_block *b, int buf, kir_expr *const *idx, kir_expr *value);
kir_stmt *kir_acc_set(kir_kernel *k, kir_block *b, int acc, kir_expr *value);
kir_stmt *kir_if(kir_kernel *k, kir_block *b, kir_expr *cond);
/* Appends `let lN = value` to b and returns a read of lN (a LETV of
 * value's dtype), usable after it in b and in blocks nested there; NULL on
 * out of memory or a NULL value. kir_letv reads let `id` again. */
kir_expr *kir_let(kir_kernel *k, kir_block *b, kir_expr *value);
kir_expr *kir_letv(kir_kernel *k, int id);
/* Appends barrier(scope). */
kir_stmt *kir_barrier(kir_kernel *k, kir_block *b, kir_scope scope);
/* fail "msg" in b: the run will end with ICC_ERR_INVALID and msg (copied;
 * one entry per distinct text) after this kernel. NULL on OOM. */
kir_stmt *kir_fail(kir_kernel *k, kir_block *b, const char *msg);
/* Appends intrinsic id over `lanes` lanes with kir_intrin_nargs(id)
 * operands; args and their index arrays are copied. */
kir_stmt *kir_intrinsic(kir_kernel *k, kir_block *b, kir_intrin id, int lanes, const kir_iarg *args);

/* Checks the kernel: every loop variable used inside the loop that binds
 * it (and bound once), accumulators set before read, lets read only after
 * their statement in its block (or blocks nested there) and bound once,
 * loads and stores with one i64 index per dim, operand dtypes consistent
 * with each op, PARALLEL only on outermost loops, inputs and weights never
 * stored to; scratch dims positive constants; GPU loop nesting (GRID
 * outermost and never with PARALLEL, THREAD and BLOCK inside GRID, WARP
 * inside BLOCK, block/thread scratch used only inside GRID/THREAD-level
 * loops of a GPU kernel); barriers not under an if or a loop whose bounds
 * read a thread index; intrinsic operands of the table's kinds and
 * dtypes, written ones not read-only, lane counts that fit. The rules are
 * listed in docs/kernel-ir.md. */
int kir_verify(const kir_kernel *k, icc_diag *d);

/* The text dump (--emit=kernels), malloc'd; NULL on out of memory. */
char *kir_print(const kir_kernel *k);

#endif
