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
 * otherwise begin/end are ignored.
 */
#ifndef ICC_KIR_H
#define ICC_KIR_H

#include "ir/ir.h"

typedef enum kir_op {
#define KOP(id, name, arity) KIR_##id,
#include "codegen/kir_ops.def"
#undef KOP
    KIR_OP_COUNT
} kir_op;

const char *kir_op_name(kir_op op);
int kir_op_arity(kir_op op);

typedef struct kir_expr {
    kir_op op;
    ir_dtype dtype;            /* the result's dtype; I64 for index math */
    struct kir_expr *a[3];     /* operands */
    union {
        double f;              /* CONST of a float dtype */
        int64_t i;             /* CONST of an integer or bool dtype */
    } c;
    int var;                   /* VAR: loop variable; SYM: symbol id; ACC: accumulator */
    int buf;                   /* LOAD: buffer index */
    int nidx;                  /* LOAD: one index per buffer dim */
    struct kir_expr **idx;
} kir_expr;

typedef enum kir_loop {
    KIR_SERIAL,
    KIR_PARALLEL,              /* iterations split across threads (outermost only) */
    KIR_VECTOR,                /* unit-stride, vectorize by `width` lanes */
    KIR_UNROLL,                /* unroll by `width` */
} kir_loop;

typedef enum kir_stmt_kind {
    KIR_S_FOR,                 /* for var in [lo, hi): body */
    KIR_S_STORE,               /* buf[idx...] = value */
    KIR_S_ACC_SET,             /* accumulator acc = value */
    KIR_S_IF,                  /* if cond: body else orelse */
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
    /* STORE, ACC_SET */
    kir_expr *value;
    int acc;
} kir_stmt;

typedef enum kir_buf_kind {
    KIR_BUF_INPUT,             /* a graph input (index = its position) */
    KIR_BUF_OUTPUT,            /* a graph output (index = its position) */
    KIR_BUF_WEIGHT,            /* constant bytes in the weights (offset) */
    KIR_BUF_ARENA,             /* an intermediate in the arena (offset) */
} kir_buf_kind;

typedef struct kir_buf {
    const char *name;          /* the graph value's name */
    kir_buf_kind kind;
    ir_dtype dtype;
    int rank;
    kir_expr *dims[IR_MAX_RANK];   /* i64 index expressions (CONST or SYM) */
    int index;                 /* INPUT/OUTPUT position */
    int64_t offset;            /* WEIGHT/ARENA byte offset */
    bool written;              /* the kernel stores to it */
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
    kir_block body;
} kir_kernel;

/* Creates an empty kernel (the caller destroys it); NULL on out of memory. */
kir_kernel *kir_kernel_create(const char *name, const ir_graph *g);
void kir_kernel_destroy(kir_kernel *k);

/* Buffers: returns the new buffer's index, -1 on out of memory. dims are
 * the value's type (constants, or symbols as SYM expressions). */
int kir_add_buf(kir_kernel *k, const char *name, kir_buf_kind kind, const ir_type *type,
                int index, int64_t offset);

/* Expressions (NULL on out of memory; builders accept NULL operands and
 * return NULL, so a chain of calls needs one check at the end). */
kir_expr *kir_const_f(kir_kernel *k, ir_dtype dt, double v);
kir_expr *kir_const_i(kir_kernel *k, ir_dtype dt, int64_t v);
kir_expr *kir_var(kir_kernel *k, int var);
kir_expr *kir_sym(kir_kernel *k, int sym);
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

/* Checks the kernel: every loop variable used inside the loop that binds
 * it (and bound once), accumulators set before read, loads and stores
 * with one i64 index per dim, operand dtypes consistent with each op,
 * PARALLEL only on outermost loops, inputs and weights never stored to. */
int kir_verify(const kir_kernel *k, icc_diag *d);

/* The text dump (--emit=kernels), malloc'd; NULL on out of memory. */
char *kir_print(const kir_kernel *k);

#endif
