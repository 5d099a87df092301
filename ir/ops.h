/* ops.h - the op registry, expanded from ir/ops.def.
 *
 * Each op has a shape function (types in -> types out; used by static
 * shape inference with whatever input values are constant, and by the
 * interpreter with every input value known) and a reference kernel (the
 * interpreter's and constant folder's implementation).
 */
#ifndef ICC_OPS_H
#define ICC_OPS_H

#include "ir/ir.h"

enum ir_op {
#define OP(id, name, mi, ma, mo, mao, fl, ty, at, sh, rf, doc) IR_OP_##id,
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
};

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

/* Declarations of every shape function and reference kernel. */
#define OP(id, name, mi, ma, mo, mao, fl, ty, at, sh, rf, doc) \
    int sh(ir_shape_ctx *c); int rf(ir_ref_ctx *c);
#include "ir/ops.def"
#undef OP

#endif
