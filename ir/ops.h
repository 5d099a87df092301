/* ops.h - the op registry, expanded from ir/ops.def.
 *
 * Each op has a shape function (types in -> types out; used by static
 * shape inference with whatever input values are constant, and by the
 * interpreter with every input value known) and a reference kernel (the
 * interpreter's and constant folder's implementation). Its row also holds
 * the facts other stages ask about it: flags (fusion role, the dims its
 * compiled form tolerates, internal-only), the lowering family that
 * compiles it and the formula that counts its FLOPs.
 */
#ifndef ICC_OPS_H
#define ICC_OPS_H

#include "ir/ir.h"

enum ir_op {
#define OP(id, name, mi, ma, mo, mao, fl, fam, fp, ty, at, sh, rf, doc) IR_OP_##id,
#include "ir/ops.def"
#undef OP
    IR_OP_COUNT
};

/* Flags. */
enum {
    IR_F_ELEMWISE    = 1 << 0,  /* out[i] depends on in[*][i] (broadcast) */
    IR_F_COMMUTATIVE = 1 << 1,
    IR_F_REDUCTION   = 1 << 2,
    IR_F_CONTRACTION = 1 << 3,  /* MatMul, Gemm, Conv...: the heavy ops */
    IR_F_MOVEMENT    = 1 << 4,  /* data movement, no arithmetic */
    IR_F_SHAPE_ONLY  = 1 << 5,  /* output depends on input shapes only */
    IR_F_NORM        = 1 << 6,  /* normalization (softmax, layernorm...) */
    /* Fusion (passes/fuse.c, codegen/lower/lower.c, docs/fusion.md). */
    IR_F_ANCHOR      = 1 << 7,  /* may anchor a fused group: its lowering passes its
                                 * final values through the group's epilogue */
    IR_F_PROLOGUE    = 1 << 8,  /* an anchor that reads its data input (input 0)
                                 * through the group's members before it */
    IR_F_PLANE_FLAT  = 1 << 9,  /* an anchor whose kernel may index its output with
                                 * the dims after the channel dim flattened: an
                                 * epilogue input must span all of them or none */
    IR_F_BLOCKED     = 1 << 10, /* on NCHWc-blocked data: the last dim is the
                                 * channel block's lanes (not part of the plane) */
    IR_F_INTERNAL    = 1 << 11, /* made by passes only; the ONNX frontend refuses it */
    /* Symbolic dims in the compiled form (codegen/model.c). */
    IR_F_SYMBOLIC    = 1 << 12, /* its lowering reads every dim as the run's value:
                                 * compiled with symbolic dims as they are */
    IR_F_BATCH       = 1 << 13, /* dim 0 of its data is a batch of independent
                                 * items: when dim 0 is the only symbolic dim, it
                                 * is compiled for one item and called per item */
    IR_F_BATCH_AXIS  = 1 << 14, /* as IR_F_BATCH when it works along an axis other
                                 * than 0 (its `axis` attribute) */
    IR_F_CONTROL     = 1 << 15, /* control flow with subgraphs (If, Loop, Scan): the
                                 * interpreter runs it through ir_eval_control,
                                 * which sizes its outputs as the subgraphs run */
};

/* The lowering family that compiles an op (codegen/lower/internal.h):
 * the family's predicate then decides on dtypes and attributes. */
typedef enum ir_family {
    IR_FAM_NONE,               /* no lowering: interpreter only */
    IR_FAM_ELEMENTWISE,        /* elementwise.c: one formula per output element */
    IR_FAM_CONTRACTION,        /* matmul.c: MatMul, Gemm */
    IR_FAM_REDUCE,             /* reduce.c: Reduce*, ArgMax/ArgMin, CumSum/CumProd */
    IR_FAM_NORM,               /* norm.c: normalizations, softmax */
    IR_FAM_MOVEMENT,           /* movement.c, gather_scatter.c: data movement, shapes */
    IR_FAM_CONV,               /* conv.c: convolutions, pools, MatMulInteger */
    IR_FAM_MISC,               /* resample.c, einsum_topk.c, unique.c */
    IR_FAM_ATTENTION,          /* attention.c */
    IR_FAM_BLOCKED,            /* conv_blocked.c: ConvNCHWc */
    IR_FAM_RNN,                /* rnn.c: LSTM, GRU, RNN */
    IR_FAM_COUNT
} ir_family;

/* How ir_node_flops counts an op's arithmetic (ir/stats.c); a multiply-add
 * is 2. */
typedef enum ir_flop_kind {
    IR_FLOP_NONE,              /* data movement or shapes: 0 */
    IR_FLOP_OUT,               /* 1 per output element */
    IR_FLOP_IN,                /* 1 per element of input 0 */
    IR_FLOP_NORM,              /* 4 per element of input 0 (reads it a few times) */
    IR_FLOP_MATMUL,            /* 2 * output elements * K (A's last dim) */
    IR_FLOP_GEMM,              /* 2 * output elements * K (transA-aware) */
    IR_FLOP_CONV,              /* 2 * output elements * weights per output channel */
    IR_FLOP_CONV_NCHWC,        /* as the equivalent Conv, from the packed weights */
    IR_FLOP_CONV_TRANSPOSE,    /* 2 * input elements * weights per input channel */
    IR_FLOP_POOL,              /* output elements * window taps */
    IR_FLOP_ATTENTION,         /* Q K^T and P V per head, plus the softmax */
    IR_FLOP_EINSUM,            /* 2 * the product of every label's extent */
    IR_FLOP_RNN,               /* 2 * steps * directions * batch * gate rows * (I + H) */
    IR_FLOP_CONV_PWDW,         /* the 1x1 conv's (2 * its output * C) plus the depthwise one's */
    IR_FLOP_COUNT
} ir_flop_kind;

/* Context of a shape function. in[i]/val[i] are NULL for omitted
 * optional inputs; val[i] is non-NULL when the input's value is known
 * (a constant, or always in the interpreter). The function fills out[0..
 * nout-1] (dtype and shape) and returns 0, or fills diag and returns -1.
 * When a needed value is unknown it must still give the best type it
 * can: known dtype, known rank if possible, unknown dims. */
typedef struct ir_shape_ctx {
    const ir_node *node;
    int nin, nout;
    const ir_type *const *in;
    const ir_tensor *const *val;
    ir_type *out;
    icc_diag *diag;
    /* sval[i]: input i's shape value (ir/shapeval.c) when it has no known
     * value but its elements are known as dims; sval or sval[i] NULL
     * otherwise (the interpreter knows every value and passes NULL). */
    const ir_shape_value *const *sval;
} ir_shape_ctx;

/* Context of a reference kernel: every present input is concrete; the
 * outputs are allocated with the shapes the shape function gave. */
typedef struct ir_ref_ctx {
    const ir_node *node;
    int nin, nout;
    const ir_tensor *const *in;
    ir_tensor *const *out;
    icc_diag *diag;
} ir_ref_ctx;

typedef int (*ir_shape_fn)(ir_shape_ctx *c);
typedef int (*ir_ref_fn)(ir_ref_ctx *c);

typedef struct ir_op_info {
    const char *name;          /* ONNX op type, also the text IR spelling */
    int min_in, max_in;        /* max_in == -1: variadic */
    int min_out, max_out;      /* max_out == -1: variadic */
    unsigned flags;
    ir_family family;          /* the lowering family */
    ir_flop_kind flops;        /* the FLOP formula */
    const char *types;         /* dtypes of input 0: "float", "num", "int", "bool", "any" */
    const char *attrs;         /* schema, see ops.def */
    ir_shape_fn shape;
    ir_ref_fn ref;
    const char *doc;           /* one-line semantics */
} ir_op_info;

extern const ir_op_info ir_ops[IR_OP_COUNT];

/* Op by ONNX name, or -1. */
int ir_op_lookup(const char *name, size_t len);

/* One attribute of an op's schema, parsed once from the schema string. */
typedef struct ir_attr_schema {
    char name[48];
    ir_attr_kind kind;
    bool required;
    bool has_def;
    char def[96];              /* default as text; string quotes removed */
} ir_attr_schema;

/* The i-th attribute of op's schema (borrowed), or NULL past the end. */
const ir_attr_schema *ir_op_attr_schema(int op, int i);
/* Attribute `name` of op's schema (borrowed), or NULL if it has none. */
const ir_attr_schema *ir_op_find_attr(int op, const char *name);
/* True if dtype t is allowed by the op's "types" class. */
bool ir_op_accepts_dtype(int op, ir_dtype t);

/* Control flow (ir/ref/control.c): how many graph inputs before the
 * captures, and graph outputs, each subgraph of n must have. */
int ir_control_formal_inputs(const ir_node *n);
int ir_control_sub_outputs(const ir_node *n);
/* How many iterations Loop n runs when that is known before it runs: its
 * trip count is the constant trip (or n's trip count input is a constant),
 * its initial condition is absent or a constant true, and its body passes
 * its condition on unchanged (through Identity) or makes it a constant
 * true; max(0, trip count), or -1 when not known. trip may be NULL. */
int64_t ir_loop_static_trips(const ir_node *n, const ir_tensor *trip, const ir_tensor *cond);

/* One axis of a Slice over a symbolic dim d, with constant start s, end
 * e and step (ir/ref/movement_view.c). Unit steps whose result has a
 * form for every d in [need, most] (an end from 2^24 on, INT64_MAX or
 * TF's 1e9, reads "to the end"): [s:] is d - s elements from s; [-k:]
 * and [-k:-j] are k and k - j from d - k; [s:e] is e - s from s; [s:-j]
 * is d - j - s from s. Steps of -1 from a constant start s: [s::-1] (an
 * end from -2^24 down reads "to the beginning") is s + 1 elements, [s:e:-1]
 * with 0 <= e < s is s - e, both from s backwards (the caller steps by
 * -1), needing d > s. The compiled run checks need <= d <= most. */
typedef struct ir_slice_axis {
    ir_dim len;                /* the output's dim */
    int64_t first;             /* the first element: first, or d + first when from_end */
    bool from_end;
    int64_t need, most;        /* the form holds for need <= d <= most (most INT64_MAX: any) */
} ir_slice_axis;
/* False when the slice has no such form (the dim is then unknown). With
 * g NULL only the bounds are wanted (len may be unknown). */
bool ir_slice_sym_axis(ir_graph *g, ir_dim d, int64_t s, int64_t e, int64_t step, ir_slice_axis *r);

/* One entry of Slice node n's starts, ends, axes and steps, as shape
 * inference knows them (constants or symbols; the axis not normalized;
 * absent axes count 0, 1, ..., absent steps 1). */
typedef struct ir_slice_entry {
    ir_dim start, end, axis, step;
} ir_slice_entry;
/* n's entries into e (IR_MAX_RANK of them at most) and their count; false
 * when an operand's elements are not known or the counts differ from one
 * another or exceed the data's rank. */
bool ir_slice_entries(const ir_node *n, ir_slice_entry *e, int *count);

/* cos and sin of 2 pi m / n (ir/ref/signal.c), m reduced mod n first and
 * quarter turns exact: the DFT's twiddles for the STFT reference and the
 * lower-signal pass's filters alike. */
void ir_dft_twiddle(int64_t m, int64_t n, double *c, double *s);

/* A DFT over a line of `have` elements of c channels (1 real, 2 complex)
 * at length n (ir/ref/signal.c): its bins and output channels, and the
 * matrix m [have c, bins cy] (row-major, doubles) that maps the line to
 * them, the reference kernel's arithmetic on unit impulses (truncation,
 * zero padding, the inverse's 1/n and a onesided inverse's Hermitian
 * half included). */
void ir_dft_bins(int64_t have, int64_t c, int64_t n, bool inverse, bool onesided, int64_t *bins, int64_t *cy);
void ir_dft_matrix(int64_t have, int64_t c, int64_t n, bool inverse, bool onesided, double *m);

/* Ops that only give their input's bytes, in order, a new shape
 * (Reshape, Flatten, Squeeze, Unsqueeze): a planner may let the result
 * share the input's buffer, and code generation then emits nothing. */
static inline bool ir_op_is_reshape(int op)
{
    return op == IR_OP_RESHAPE || op == IR_OP_FLATTEN || op == IR_OP_SQUEEZE || op == IR_OP_UNSQUEEZE;
}

/* Names of a family ("elementwise", "norm"...) and of a FLOP formula (a
 * short description), for docs and messages; static strings. */
const char *ir_family_name(ir_family f);
const char *ir_flop_name(ir_flop_kind k);

/* Declarations of every shape function and reference kernel. */
#define OP(id, name, mi, ma, mo, mao, fl, fam, fp, ty, at, sh, rf, doc) \
    int sh(ir_shape_ctx *c); int rf(ir_ref_ctx *c);
#include "ir/ops.def"
#undef OP

#endif
