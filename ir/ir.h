/* ir.h - the icc intermediate representation.
 *
 * A graph owns one arena; every value, node, attribute, name and constant
 * payload it holds lives there and is freed at once by ir_graph_destroy().
 * Values carry a dtype and a shape whose dims are constants, named symbols
 * (interned per graph) or unknown. Nodes are kept in topological order in
 * a growable array. Ops come from the registry in ir/ops.def (see ops.h).
 *
 * Errors: functions that can fail on user input return 0 on success and
 * -1 on failure, with a one-line message in an icc_diag.
 */
#ifndef ICC_IR_H
#define ICC_IR_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>

#define IR_MAX_RANK 8

/* ---- diagnostics ------------------------------------------------------ */

/* A one-line error message. Library code fills it; tools print it. */
typedef struct icc_diag {
    char msg[1024];
} icc_diag;

/* Formats into d (if non-NULL) and returns -1, so `return ir_errorf(...)`. */
int ir_errorf(icc_diag *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int ir_verrorf(icc_diag *d, const char *fmt, va_list ap);
/* "node 'NODE' (OP): <fmt>", names truncated to keep the line short. */
int ir_located_verrorf(icc_diag *d, const char *node, const char *op, const char *fmt, va_list ap);
/* Prepends "prefix: " to an existing message (e.g. the file name). */
void ir_diag_prefix(icc_diag *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- checked size arithmetic (the one helper everyone uses) ----------- */

/* Each returns false (and leaves *r unspecified) on overflow or on a
 * negative operand. */
bool ir_mul_ok(int64_t a, int64_t b, int64_t *r);
bool ir_add_ok(int64_t a, int64_t b, int64_t *r);
/* a + b of any signs (shape values, derived symbols' offsets); false on
 * overflow. */
bool ir_add_signed_ok(int64_t a, int64_t b, int64_t *r);
/* Product of n dims, each >= 0; false on overflow or negative dim. */
bool ir_numel_ok(const int64_t *dims, int n, int64_t *r);
/* s ends with suffix (file kinds by name: ".so", ".o", ".icc"). */
/* Opens path for reading only if it is a regular file: a FIFO, a device or
 * a directory gets "PATH: not a regular file" (or "is a directory") in d and
 * NULL, without blocking on a FIFO that has no writer. */
FILE *ir_fopen_regular(const char *path, icc_diag *d);
bool ir_ends_with(const char *s, const char *suffix);

/* Largest tensor (bytes) the IR will allocate or accept; guards against
 * hostile sizes before any allocation. */
#define IR_MAX_TENSOR_BYTES ((int64_t)1 << 40)

/* ---- dtypes ----------------------------------------------------------- */

typedef enum ir_dtype {
    IR_UNDEF = 0,
#define DT(id, name, onnx, size, cls) IR_##id,
#include "ir/dtypes.def"
#undef DT
    IR_DTYPE_COUNT
} ir_dtype;

const char *ir_dtype_name(ir_dtype t);     /* "f32"; "undef" for IR_UNDEF */
size_t ir_dtype_size(ir_dtype t);          /* bytes per element; 0 for undef */
ir_dtype ir_dtype_from_name(const char *s, size_t len); /* IR_UNDEF if none */
ir_dtype ir_dtype_from_onnx(int code);     /* IR_UNDEF if unsupported */
int ir_dtype_to_onnx(ir_dtype t);
/* ONNX name of any TensorProto.DataType code, known to us or not
 * ("FLOAT8E4M3FN"), for error messages; "code N" if unknown. */
const char *ir_onnx_dtype_name(int code);
bool ir_dtype_is_float(ir_dtype t);
bool ir_dtype_is_int(ir_dtype t);      /* signed or unsigned integer */
bool ir_dtype_is_signed(ir_dtype t);   /* signed integer */

float ir_f16_to_f32(uint16_t h);
uint16_t ir_f32_to_f16(float f);       /* round to nearest even */
float ir_bf16_to_f32(uint16_t h);
uint16_t ir_f32_to_bf16(float f);      /* round to nearest even */

/* ---- shapes ----------------------------------------------------------- */

#define IR_DIM_UNKNOWN (-1)

/* A dim: sym == 0 -> the constant v (>= 0); sym > 0 -> the graph symbol
 * with that id (v unused); sym == IR_DIM_UNKNOWN -> unknown. */
typedef struct ir_dim {
    int64_t v;
    int32_t sym;
} ir_dim;

static inline ir_dim ir_dim_const(int64_t v) { ir_dim d = {v, 0}; return d; }
static inline ir_dim ir_dim_unknown(void) { ir_dim d = {0, IR_DIM_UNKNOWN}; return d; }
static inline bool ir_dim_is_const(ir_dim d) { return d.sym == 0; }
static inline bool ir_dim_eq(ir_dim a, ir_dim b)
{
    return a.sym == b.sym && (a.sym != 0 || a.v == b.v) && a.sym != IR_DIM_UNKNOWN;
}

#define IR_RANK_UNKNOWN (-1)

/* A shape value (ir/shapeval.c): what shape inference knows about the
 * elements of a small integer (or bool) tensor, rank 0 or 1 with at most
 * IR_MAX_RANK elements, that shape arithmetic computes from dims, such as
 * Concat(Unsqueeze(Gather(Shape(x), 0)), [-1]). Element i is the constant
 * e[i].v (any sign, unlike a dim), the run's value of symbol e[i].sym, or
 * unknown. Reshape, Expand, ConstantOfShape and Tile read it when their
 * shape input is no constant, so their outputs keep symbolic dims. */
typedef struct ir_shape_value {
    bool known;                /* false: nothing is known (all else unused) */
    int n;                     /* element count */
    ir_dim e[IR_MAX_RANK];
    /* minus[i].sym > 0: element i is the constant minus[i].v less the dim
     * of symbol minus[i].sym, which may be negative (Whisper pads its
     * samples by 480000 - N), and e[i] is unknown, so readers that take
     * elements as dims see nothing; sym 0: no such form */
    ir_dim minus[IR_MAX_RANK];
} ir_shape_value;

typedef struct ir_type {
    ir_dtype dtype;
    int rank;                  /* IR_RANK_UNKNOWN or 0..IR_MAX_RANK */
    ir_dim dims[IR_MAX_RANK];
} ir_type;

/* True when rank and every dim are constants. */
bool ir_type_is_static(const ir_type *t);
/* True when the rank is known and every dim is a constant or a symbol
 * (the run's value), none unknown. */
bool ir_type_dims_known(const ir_type *t);
/* Number of elements of a static type (checked; false on overflow). */
bool ir_type_numel(const ir_type *t, int64_t *n);
bool ir_type_eq(const ir_type *a, const ir_type *b);
/* Same dtype, known rank, and every dim provably equal (constants, or
 * the same symbol); unlike ir_type_eq, two unknown dims are not equal. */
bool ir_type_same(const ir_type *a, const ir_type *b);

/* ---- concrete tensors (interpreter, constants) ------------------------ */

typedef struct ir_tensor {
    ir_dtype dtype;
    int rank;
    int64_t dims[IR_MAX_RANK];
    int64_t numel;
    size_t nbytes;
    void *data;                /* nbytes bytes; may be NULL when nbytes==0 */
} ir_tensor;

/* Sets dtype/rank/dims/numel/nbytes (checked against IR_MAX_TENSOR_BYTES);
 * does not touch data. */
int ir_tensor_init(ir_tensor *t, ir_dtype dt, int rank, const int64_t *dims,
                   icc_diag *d);
/* Element i as double / int64 (any dtype); bool -> 0/1. */
double ir_tensor_getf(const ir_tensor *t, int64_t i);
int64_t ir_tensor_geti(const ir_tensor *t, int64_t i);
/* Stores v into element i, converting to the tensor's dtype (float->int
 * truncates toward zero; int types wrap). */
void ir_tensor_setf(ir_tensor *t, int64_t i, double v);
void ir_tensor_seti(ir_tensor *t, int64_t i, int64_t v);
void ir_type_of_tensor(const ir_tensor *t, ir_type *out);

/* ---- arena ------------------------------------------------------------ */

typedef struct ir_arena ir_arena;
ir_arena *ir_arena_create(void);
void ir_arena_destroy(ir_arena *a);
/* Zeroed, 64-byte aligned; NULL on out of memory or size > limit. */
void *ir_arena_alloc(ir_arena *a, size_t n);
char *ir_arena_strdup(ir_arena *a, const char *s);
char *ir_arena_strndup(ir_arena *a, const char *s, size_t n);
size_t ir_arena_bytes(const ir_arena *a);
/* Hands a mmap'd region (addr, len as given to mmap) to the arena, which
 * munmaps it when destroyed; -1 (nothing taken) on out of memory. */
int ir_arena_adopt_mapping(ir_arena *a, void *addr, size_t len);

/* ---- attributes ------------------------------------------------------- */

typedef enum ir_attr_kind {
    IR_ATTR_INT, IR_ATTR_FLOAT, IR_ATTR_STRING,
    IR_ATTR_INTS, IR_ATTR_FLOATS, IR_ATTR_STRINGS,
    IR_ATTR_TENSOR,
    IR_ATTR_GRAPH,             /* a subgraph (If's branches, Loop's and Scan's body) */
} ir_attr_kind;

struct ir_graph;

typedef struct ir_attr {
    const char *name;
    ir_attr_kind kind;
    int64_t i;
    float f;
    const char *s;
    int n;                     /* element count for list kinds */
    int64_t *ints;
    float *floats;
    char **strings;
    ir_tensor *tensor;
    struct ir_graph *graph;    /* IR_ATTR_GRAPH: owned by the node's graph (see
                                * ir_graph_add_subgraph), borrowed here */
} ir_attr;

/* ---- values, nodes, graphs ------------------------------------------- */

typedef enum ir_op ir_op;      /* from ops.h */

typedef enum ir_val_kind {
    IR_VAL_INPUT,              /* a graph input */
    IR_VAL_CONST,              /* a constant (initializer); data in cval */
    IR_VAL_NODE,               /* produced by a node */
} ir_val_kind;

struct ir_node;

typedef struct ir_value {
    int id;
    const char *name;
    ir_val_kind kind;
    ir_type type;
    struct ir_node *def;       /* IR_VAL_NODE: producer */
    int def_index;             /* IR_VAL_NODE: which output of def */
    ir_tensor cval;            /* IR_VAL_CONST: payload (data in arena) */
    ir_shape_value sv;         /* IR_VAL_NODE: its elements as dims, set by
                                * ir_infer_node (ir_value_shape_value reads it) */
    bool dead;                 /* erased; dropped by ir_graph_compact */
    bool planned;              /* memory plan: lives in the arena at offset */
    int64_t offset;
} ir_value;

typedef struct ir_node {
    int id;
    int op;                    /* an ir_op */
    const char *name;          /* never NULL; may be "" */
    int nin, nout;
    ir_value **in;             /* in[i] == NULL: omitted optional input */
    ir_value **out;
    int nattr;
    ir_attr *attrs;
    int ncap;                  /* the last ncap inputs are outer-scope values its
                                * subgraphs capture: each subgraph takes them as its
                                * last ncap graph inputs, in the same order, so every
                                * use across scopes is an ordinary input here */
    int group;                 /* fused group (> 0) or none (0); see ir_graph_group_roots */
    bool dead;                 /* erased; dropped by ir_graph_compact */
    struct ir_graph *graph;    /* the graph holding the node (for its symbol table) */
} ir_node;

/* A derived symbol taken equal to another (ir_graph_sym_alias). */
typedef struct ir_sym_alias {
    int32_t from, to;          /* derived symbol `from` stands for `to` (an earlier id) */
    const char *node;          /* the node whose operands met them (in the arena) */
    int op;                    /* that node's op */
    struct ir_sym_alias *next;
} ir_sym_alias;

typedef struct ir_graph {
    ir_arena *arena;
    const char *name;
    int nvalues, cap_values;
    ir_value **values;         /* every value, by id */
    int nnodes, cap_nodes;
    ir_node **nodes;           /* topological order */
    int ninputs, cap_inputs;
    ir_value **inputs;
    int noutputs, cap_outputs;
    ir_value **outputs;
    int nsyms, cap_syms;
    const char **syms;         /* syms[0] unused; ids start at 1 */
    int nsymdefs, cap_symdefs; /* == nsyms once a symbol exists */
    struct ir_sym_def **symdefs; /* symdefs[id]: a derived symbol's definition,
                                * NULL for a free one (an input's named dim) */
    int next_node_id;
    struct ir_graph *parent;   /* the graph owning this subgraph, or NULL */
    const char *infer_error;   /* an If's branch whose shapes do not infer while the other's
                                * do (shape_if): the reason, in the arena; the branch cannot
                                * run on these input shapes, so taking it fails the run.
                                * NULL otherwise */
    int nsubs, cap_subs;
    struct ir_graph **subs;    /* subgraphs this graph owns (destroyed with it) */
    /* Top-level graphs: while decl_lenient is set (the ONNX frontend's
     * first inference), a value's declared shape (value_info, a graph
     * output) that disagrees with the computed one in rank or a constant
     * dim is replaced by it, as ONNX Runtime does, and counted here with
     * the first one described (in the arena); otherwise it is an error. */
    bool decl_lenient;
    int ndecl_conflicts;
    const char *decl_note;
    /* Top-level graphs: derived symbols an elementwise broadcast took
     * equal to another (ir_graph_sym_alias), newest first */
    ir_sym_alias *aliases;
    int naliases;
} ir_graph;

/* Subgraphs nest at most this deep (frontend, parser and verifier check). */
#define IR_MAX_SUBGRAPH_DEPTH 16

/* Creates an empty graph; the caller owns it (ir_graph_destroy). */
ir_graph *ir_graph_create(const char *name);
void ir_graph_destroy(ir_graph *g);

/* Creates an empty subgraph owned by parent: it lives until parent is
 * destroyed, even after the node using it is erased, so attributes only
 * borrow it. It has its own arena, values and symbols; values of parent
 * reach it only as captures (ir_node.ncap). NULL on out of memory. */
ir_graph *ir_graph_add_subgraph(ir_graph *parent, const char *name);
/* Nesting depth: 0 for a top-level graph. */
int ir_graph_depth(const ir_graph *g);
/* t with its symbols re-interned by name from `from`'s table into `to`'s
 * (types crossing between a graph and its subgraphs). false on out of
 * memory. */
bool ir_type_rehome(const ir_graph *from, ir_graph *to, const ir_type *t, ir_type *out);
/* Gives every subgraph of top-level graph g, at any depth, g's symbol
 * ids: the symbols subgraphs use join g's table (by name, derived ones
 * with their definitions, as ir_type_rehome does), their values' dims
 * and shape values are renumbered, and each subgraph's table becomes a
 * copy of g's. No type changes meaning; a program then indexes one table
 * for every scope (codegen/program.c). -1 on out of memory. */
int ir_graph_share_syms(ir_graph *g);

/* Interns a symbol name, returning its id (> 0); 0 on out of memory. */
int32_t ir_graph_sym(ir_graph *g, const char *name, size_t len);
const char *ir_graph_sym_name(const ir_graph *g, int32_t id);
/* The name the frontend gives dim k of graph input `input` when the model
 * names it not (INPUT_dimK, the input's name with characters other than
 * [A-Za-z0-9_] as '_', at most 100 of them), into buf of n bytes. */
void ir_unnamed_dim_name(const char *input, int k, char *buf, size_t n);

/* ---- derived symbols (ir/symexpr.c) ------------------------------------
 * A dim that shape inference computes from symbolic dims (a Conv's output
 * height floor((H-1)/2)+1, a Concat's H+W) is a derived symbol: an entry
 * of the graph's symbol table whose value is `a OP b` of two operands,
 * each a constant or an (earlier) symbol. A dim stays {v, sym}; equal
 * definitions give the same symbol (hash-consed on the definition, after
 * folding constants), so two branches computing the same H match. The
 * name is the expression's text, e.g. "floor((H-1)/2)+1". */
typedef enum ir_sym_op {
    IR_SYM_ADD = 1,            /* a + b; b may be a negative constant */
    IR_SYM_MUL,                /* a * b */
    IR_SYM_FLOORDIV,           /* floor(a / b), b a constant > 0 */
    IR_SYM_CEILDIV,            /* ceil(a / b), b a constant > 0 */
} ir_sym_op;

typedef struct ir_sym_def {
    ir_sym_op op;
    ir_dim a, b;               /* b.sym == 0: the constant b.v (any sign for ADD) */
} ir_sym_def;

/* The definition of symbol id, or NULL for a free symbol. */
const ir_sym_def *ir_graph_sym_def(const ir_graph *g, int32_t id);
/* The derived symbol of def, interned (its name made from def); 0 on out
 * of memory, or when its name is taken by a free symbol. */
int32_t ir_graph_sym_derive(ir_graph *g, const ir_sym_def *def);
/* The symbol that id stands for: id itself, or, in a top-level graph, the
 * one an alias chain from it ends at. Derived dims (ir_dim_add and the
 * others) come resolved. */
int32_t ir_graph_sym_resolve(const ir_graph *g, int32_t id);
/* Takes derived symbol `from` as equal to `to`, an earlier id, from now
 * on: where an elementwise op meets two symbols that are not provably
 * equal (an FPN's upsampled 2*floor((H-1)/8+1) added to floor((H-1)/4)+1,
 * equal for the sizes the model takes), its output takes `to`, and so
 * does every dim later derived as `from`, so the branches share one H;
 * the compiled run checks from == to once, naming n (codegen/program.c).
 * Top-level graphs only (a subgraph's nodes may not run). 0, or -1 on
 * out of memory. */
int ir_graph_sym_alias(ir_graph *g, int32_t from, int32_t to, const struct ir_node *n);
/* Interns a derived symbol under an explicit name (the text IR parser);
 * 0 on out of memory or when the name is taken by another definition. */
int32_t ir_graph_sym_define(ir_graph *g, const char *name, size_t len, const ir_sym_def *def);
/* Dim arithmetic for shape functions: constants fold (an overflow or a
 * negative result gives unknown), x+0, x*1, x*0, x/1 and (x*k)/k simplify,
 * constants of nested sums and products combine, anything else becomes a
 * derived symbol of g (g NULL: unknown). An unknown operand gives unknown. */
ir_dim ir_dim_add(ir_graph *g, ir_dim a, ir_dim b);
ir_dim ir_dim_add_const(ir_graph *g, ir_dim a, int64_t k);     /* k any sign */
ir_dim ir_dim_mul(ir_graph *g, ir_dim a, ir_dim b);
ir_dim ir_dim_mul_const(ir_graph *g, ir_dim a, int64_t k);
ir_dim ir_dim_div_const(ir_graph *g, ir_dim a, int64_t k, bool ceil);   /* k > 0 */
/* b is a + k for a constant k (any sign), without deriving a symbol:
 * constants, or the same symbol plus constants (a derived sum's constants
 * combine into one, ir_dim_add_const). */
bool ir_dim_is_plus(const ir_graph *g, ir_dim a, ir_dim b, int64_t k);
/* The values of every symbol of g: vals[id] for id in [1, nsyms) is read
 * for free symbols (the caller sets them, -1 for not bound) and written
 * for derived ones, in id order (a definition only names earlier ids).
 * A derived symbol of an unbound one is -1 too. Returns 0, or -1 naming
 * the symbol in *bad when a derived value overflows or is negative. */
int ir_graph_sym_values(const ir_graph *g, int64_t *vals, int32_t *bad);

/* Builders. All return NULL on out of memory (with a message in d).
 * Names are copied into the arena. */
ir_value *ir_graph_add_input(ir_graph *g, const char *name, const ir_type *t,
                             icc_diag *d);
/* The payload is copied unless data is NULL (then zeroed storage of the
 * right size is allocated, for the caller to fill through cval.data). */
ir_value *ir_graph_add_const(ir_graph *g, const char *name, const ir_type *t,
                             const void *data, icc_diag *d);
/* A constant whose payload stays where data points (not copied): memory
 * that lives as long as the graph, e.g. a mapping the graph's arena took
 * with ir_arena_adopt_mapping. data must be writable (a private mapping
 * is: a write stays in this process) and aligned for the dtype, which is
 * all a constant's readers assume (arena storage is 64-aligned). */
ir_value *ir_graph_add_const_view(ir_graph *g, const char *name, const ir_type *t,
                                  void *data, icc_diag *d);
/* Appends a node; its nout output values are created with the given names
 * (NULL: a fresh name) and types (NULL: unknown type of dtype undef). */
ir_node *ir_graph_add_node(ir_graph *g, int op, const char *name,
                           int nin, ir_value *const *in,
                           int nout, const char *const *out_names,
                           icc_diag *d);
int ir_graph_add_output(ir_graph *g, ir_value *v, icc_diag *d);

/* Attribute setters on a node under construction (copy into arena). */
int ir_node_set_int(ir_graph *g, ir_node *n, const char *name, int64_t v);
int ir_node_set_float(ir_graph *g, ir_node *n, const char *name, float v);
int ir_node_set_string(ir_graph *g, ir_node *n, const char *name, const char *s);
int ir_node_set_ints(ir_graph *g, ir_node *n, const char *name, const int64_t *v, int cnt);
int ir_node_set_floats(ir_graph *g, ir_node *n, const char *name, const float *v, int cnt);
int ir_node_set_strings(ir_graph *g, ir_node *n, const char *name, const char *const *v, int cnt);
int ir_node_set_tensor(ir_graph *g, ir_node *n, const char *name, const ir_tensor *t);
/* sub must be owned by g or by one of g's subgraphs (it is borrowed). */
int ir_node_set_graph(ir_graph *g, ir_node *n, const char *name, ir_graph *sub);
/* Adds an already-built attribute (copied, with its payload). */
int ir_node_add_attr(ir_graph *g, ir_node *n, const ir_attr *a);

/* Attribute getters (borrowed pointers). */
const ir_attr *ir_node_attr(const ir_node *n, const char *name);
int64_t ir_attr_int(const ir_node *n, const char *name, int64_t def);
float ir_attr_float(const ir_node *n, const char *name, float def);
const char *ir_attr_string(const ir_node *n, const char *name, const char *def);
/* List getters: returns the count, or -1 if the attribute is absent. */
int ir_attr_ints(const ir_node *n, const char *name, const int64_t **v);
int ir_attr_floats(const ir_node *n, const char *name, const float **v);
/* The subgraph attribute `name`, or NULL. */
struct ir_graph *ir_attr_graph(const ir_node *n, const char *name);
/* Whether any attribute of n is a subgraph. */
bool ir_node_has_subgraph(const ir_node *n);
/* n's subgraphs (If's branches, Loop's and Scan's body) in attribute
 * order: the first at or after attribute *i, *i then past it; NULL when
 * there are no more.
 *     int i = 0;
 *     for (ir_graph *s; (s = ir_node_subgraph(n, &i));) ... */
struct ir_graph *ir_node_subgraph(const ir_node *n, int *i);

/* Fills d with "node 'NAME' (Op): <fmt>" and returns -1. */
int ir_node_errorf(icc_diag *d, const ir_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Checks structure: ids, defs, uses before defs, arity and attribute
 * schemas against the registry, output types present. */
int ir_verify(const ir_graph *g, icc_diag *d);

/* Checks n's input/output counts and required inputs against the
 * registry (what shape functions and kernels rely on). */
int ir_node_check_arity(const ir_node *n, icc_diag *d);

/* Runs every node's shape function with constant inputs known, filling
 * output types. Declared output types that are more precise are kept. */
int ir_infer_shapes(ir_graph *g, icc_diag *d);
/* The same for one node, from its inputs' current types and constants. */
int ir_infer_node(ir_node *n, icc_diag *d);
/* Makes the free symbols of top-level graph g's input dims that its ops
 * require equal (a Concat's other dims, a MatMul's inner dim, a
 * recurrent op's batch; ir/unify.c) one symbol, or the constant they
 * meet. 1 when an input's type changed (infer again), 0 when none did,
 * -1 on out of memory. ir_infer_shapes calls it. */
int ir_unify_input_dims(ir_graph *g);

/* ---- shape values (ir/shapeval.c) ---------------------------------------- */

/* v's elements as dims: from its constant payload (a small integer tensor)
 * or what inference recorded in v->sv. False when nothing is known. */
bool ir_value_shape_value(const ir_value *v, ir_shape_value *out);
/* Sets n's output shape value from its inputs' (Shape, Size, Gather,
 * Unsqueeze, Squeeze, Concat, Slice, Cast, integer arithmetic, Equal,
 * Where...); clears it when nothing is known. Called by ir_infer_node. */
void ir_infer_shape_value(ir_node *n);

/* ---- rewriting (ir/rewrite.c) ------------------------------------------- */

/* Points every use of `from` (node inputs, graph outputs) at `to`;
 * returns the number of uses changed. */
int ir_replace_all_uses(ir_graph *g, ir_value *from, ir_value *to);
/* uses[v->id] = number of uses of v by live nodes and graph outputs;
 * uses has g->nvalues entries. */
void ir_graph_count_uses(const ir_graph *g, int *uses);
/* Uses of one value by live nodes and graph outputs (a full scan). */
int ir_value_count_uses(const ir_graph *g, const ir_value *v);
/* Mark a node (and its outputs) or a value erased; ir_graph_compact
 * drops marked entries and renumbers value ids. */
void ir_node_erase(ir_node *n);
void ir_value_erase(ir_value *v);
void ir_graph_compact(ir_graph *g);
/* A name no live value of g has: base + suffix, else base + suffix + .1,
 * .2, ... (base cut at 200 bytes), written to buf. */
const char *ir_graph_fresh_name(const ir_graph *g, const char *base, const char *suffix, char *buf, size_t n);
/* Restores topological order after nodes were appended out of place,
 * keeping the existing order wherever it is already valid; -1 on a cycle. */
int ir_graph_toposort(ir_graph *g, icc_diag *d);

/* Turns graph input `index` into a constant holding a copy of t (the
 * value keeps its name and uses): for inputs that decide shapes, such as
 * Reshape's shape or Reduce's axes, that a compiled model needs known.
 * -1 when t's dtype or shape does not fit the input's declared type. */
int ir_graph_bind_input(ir_graph *g, int index, const ir_tensor *t, icc_diag *d);

/* ---- fused groups (ir/group.c) ------------------------------------------ */

/* Nodes with the same n->group > 0 form a fused group: the nodes a backend
 * turns into one kernel. The group runs where its last node in node order
 * (its root) is. Every other member's outputs are used only by nodes of
 * the same group and are not graph outputs (ir_verify checks this, which
 * also makes the group convex), so they are computed inside the kernel
 * and never stored. */

/* root[k] = index of the root of node k's group, or k when node k is in
 * no group; root has g->nnodes entries. -1 on out of memory. */
int ir_graph_group_roots(const ir_graph *g, int *root);
/* Number of distinct groups, and of nodes in them (either may be NULL). */
void ir_graph_group_stats(const ir_graph *g, int *groups, int *members);
/* Checks the rule above; called by ir_verify. */
int ir_verify_groups(const ir_graph *g, icc_diag *d);

/* The static cost of one kernel: a fused group, or a node in none. */
typedef struct ir_kernel_cost {
    int root;                  /* node index of the kernel's root */
    int nodes;                 /* nodes in it */
    int64_t flops;             /* ir_node_flops summed (symbolic dims as 1) */
    int64_t bytes;             /* read and written in memory: outside inputs once, outputs */
    bool exact;                /* false when some node's FLOPs are unknown */
} ir_kernel_cost;
/* One entry per kernel in node order of roots, in *out (malloc'd; the
 * caller frees). -1 on out of memory. */
int ir_graph_kernel_costs(const ir_graph *g, ir_kernel_cost **out, int *count);
/* The cost of one kernel, the group rooted at node r whose members are the
 * n node indices `members` in node order (root from ir_graph_group_roots
 * says which), into *out: stamp (g->nvalues entries) marks the values
 * counted, with gen, which must differ from every earlier call's and from
 * the stamp's initial values (a caller evaluating one group often keeps
 * one stamp and counts gen up from 1). */
void ir_group_cost(const ir_graph *g, const int *members, int n, int r, int *stamp, int gen, ir_kernel_cost *out);

/* at_load[k] (g->nnodes entries, root from ir_graph_group_roots): node k
 * is a kernel whose results depend only on constants, which a compiled
 * model computes once at load (ir/load_time.c has the rule); false for
 * group members. -1 on out of memory. */
int ir_graph_load_time(const ir_graph *g, const int *root, bool *at_load);

/* view[k] (g->nnodes entries, root from ir_graph_group_roots): node k is
 * a reshape whose result is a view of one of g's inputs (ir/load_time.c
 * has the rule): the plan gives it no memory and code generation binds it
 * to the input's buffer and emits no kernel. -1 on out of memory. */
int ir_graph_input_views(const ir_graph *g, const int *root, bool *view);

/* Bytes of the arena the memory plan needs (0 when nothing is planned):
 * the end of the highest planned value, rounded up to 64. */
int64_t ir_graph_arena_bytes(const ir_graph *g);

/* Parameter count (elements of constants) and their bytes. */
void ir_graph_param_stats(const ir_graph *g, int64_t *count, int64_t *bytes);

#endif
