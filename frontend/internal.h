/* internal.h - declarations shared by the ONNX frontend's files.
 *
 *   wire.c      raw protobuf checks (depth, truncation) before unpacking
 *   tensor.c    TensorProto -> ir_tensor, external data, tensor files
 *   onnx.c      ModelProto -> ir_graph: names, values, nodes, public API
 *   function.c  model-local function inlining (flattening into fe_nodes)
 *   opset.c     old-opset forms rewritten into the IR's newest semantics
 *   microsoft.c ONNX Runtime's com.microsoft contrib ops expanded into IR ops
 *   map.c       a string-keyed hash map for name tables
 *
 * Messages built here carry no file name; the public entry points prefix
 * the display name once.
 */
#ifndef ICC_FRONTEND_INTERNAL_H
#define ICC_FRONTEND_INTERNAL_H

#include "frontend/onnx.h"
#include "ir/ops.h"
#include "onnx/onnx.pb-c.h"

/* protobuf's own limit on a serialized message; bigger models keep their
 * weights in external data files. */
#define FE_MAX_PROTO_BYTES ((size_t)INT32_MAX)

/* ---- wire.c ------------------------------------------------------------ */

/* Walks buf as a message of type desc without unpacking it: rejects
 * truncated or overlong varints, lengths past the end, group wire types,
 * field number 0, and sub-message nesting deeper than ICC_ONNX_MAX_DEPTH.
 * Which fields are sub-messages comes from protobuf-c's own descriptors,
 * so the walk descends exactly where protobuf-c's unpacker would. */
int fe_wire_check(const uint8_t *buf, size_t len, const ProtobufCMessageDescriptor *desc,
                  icc_diag *d);

/* Reads a whole regular file of at most limit bytes. On success *buf is
 * malloc'd (caller frees) and *len its size. */
int fe_read_file(const char *path, size_t limit, uint8_t **buf, size_t *len, icc_diag *d);

/* The folder part of path ("." if none), malloc'd; NULL on out of memory. */
char *fe_dirname(const char *path);

/* ---- map.c ------------------------------------------------------------ */

/* Open addressing, string keys borrowed (they must outlive the map),
 * values are pointers. Zero-initialize before use. */
typedef struct fe_map {
    struct fe_map_slot *slots;
    size_t cap, n;
} fe_map;

void *fe_map_get(const fe_map *m, const char *key);
/* Inserts or replaces; -1 on out of memory. */
int fe_map_put(fe_map *m, const char *key, void *val);
void fe_map_free(fe_map *m);

/* ---- tensor.c ---------------------------------------------------------- */

/* A tensor whose header has been checked against its backing bytes but
 * whose payload is not read yet: callers allocate t.nbytes where they
 * want the data, then call fe_tensor_read. */
typedef struct fe_tensor_src {
    ir_tensor t;               /* dtype, rank, dims, numel, nbytes; data NULL */
    int fd;                    /* external data file, or -1 */
    int64_t offset;            /* of the payload in fd */
} fe_tensor_src;

/* Checks dtype, dims, size and the backing bytes of tp. label names the
 * tensor in messages ("tensor 'w'"). base_dir resolves external data
 * (NULL: external data is an error). On failure nothing stays open. */
int fe_tensor_prepare(const Onnx__TensorProto *tp, const char *base_dir, const char *label,
                      fe_tensor_src *s, icc_diag *d);
/* Fills dst (s->t.nbytes bytes) and closes s. */
int fe_tensor_read(const Onnx__TensorProto *tp, fe_tensor_src *s, void *dst, const char *label,
                   icc_diag *d);
/* External payloads of at least this many bytes are mapped, not read. */
#define FE_MAP_MIN_BYTES ((size_t)1 << 20)
/* The payload of s mapped in place (private, writable), the mapping owned
 * by arena a, and s closed; NULL (s still open, for fe_tensor_read) when
 * it is not external data, is small, needs converting (bool, a
 * big-endian host), is not aligned for its dtype in its file, or mmap
 * fails. */
void *fe_tensor_map(fe_tensor_src *s, ir_arena *a);
/* Closes s without reading (after a failure between prepare and read). */
void fe_tensor_close(fe_tensor_src *s);
/* prepare + read into storage from arena a; out->data lives in a. */
int fe_tensor_decode(const Onnx__TensorProto *tp, const char *base_dir, const char *label,
                     ir_arena *a, ir_tensor *out, icc_diag *d);

/* ---- function.c: flattening --------------------------------------------- */

/* An attribute as a node sees it after function binding: name is the
 * formal name, p the proto carrying the value (possibly the caller's). */
typedef struct fe_attr {
    const char *name;
    const Onnx__AttributeProto *p;
} fe_attr;

/* How an inlined function call renames its body's value names into the
 * caller's: formal inputs and outputs to the call's, others behind a
 * prefix unique to the call. Kept (in the scratch arena) for the
 * subgraphs of body nodes, whose outer names are the body's. */
typedef struct fe_rename {
    const Onnx__FunctionProto *fn;
    const char *const *call_in, *const *call_out;
    int call_nin, call_nout;
    const char *prefix;
} fe_rename;

/* name as the caller of r's function sees it (NULL on out of memory). */
const char *fe_rename_name(const fe_rename *r, const char *name, ir_arena *tmp);

/* One ONNX node after function inlining, names already renamed. */
typedef struct fe_node {
    const char *op_type;
    const char *domain;        /* "" for the default domain */
    const char *name;          /* never NULL; a fallback when ONNX gave none */
    int opset;                 /* version of `domain` in effect */
    int nin, nout;
    const char **in, **out;    /* "" = omitted */
    int nattr;
    fe_attr *attrs;
    const fe_rename *ren;      /* from an inlined function: for its subgraphs' names */
} fe_node;

typedef struct fe_nodes {
    fe_node *v;
    int n, cap;
} fe_nodes;

/* Appends the nodes of a graph body to out, inlining calls to the model's
 * functions. Strings live in the scratch arena or in the model. */
int fe_flatten(const Onnx__ModelProto *m, const Onnx__GraphProto *gp, ir_arena *tmp,
               fe_nodes *out, icc_diag *d);

/* Version of domain imported by n opset_import entries (default domain:
 * "" or "ai.onnx"); 0 if not imported. */
int fe_opset_version(Onnx__OperatorSetIdProto *const *imp, size_t n, const char *domain);
bool fe_is_default_domain(const char *domain);

/* ---- onnx.c: lowering helpers used by the opset adapters ---------------- */

typedef struct fe_ctx fe_ctx;

/* A node being lowered into IR: inputs resolved, attributes converted.
 * Adapters edit it in place (move attributes to inputs, drop legacy
 * attributes) or emit replacement nodes themselves and set done. */
typedef struct fe_lower {
    fe_ctx *c;
    const fe_node *src;
    int op;                    /* ir_op */
    int nin, cap_in;
    ir_value **in;             /* NULL = omitted */
    int nout;
    const char **out;          /* output names, all non-empty */
    int nattr, cap_attr;
    ir_attr *attrs;
    int ncap;                  /* control flow: the last ncap of in[] are captures */
    bool done;
} fe_lower;

/* The loader behind the public entry points; infer=false skips shape
 * inference and verification (for tests of the import alone). */
ir_graph *fe_import_buffer(const void *buf, size_t len, const char *base_dir, const char *display,
                           bool infer, icc_diag *d);

/* Fills d with "node 'NAME' (OpType): <fmt>" for an ONNX node. */
int fe_node_errorf(icc_diag *d, const fe_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
icc_diag *fe_diag(fe_ctx *c);

/* A fresh value name derived from base, unique in the whole model. */
const char *fe_fresh_name(fe_ctx *c, const char *base, const char *suffix);
/* A new constant named after the node (base + suffix). */
ir_value *fe_const(fe_lower *l, const char *suffix, ir_dtype dt, int rank, const int64_t *dims,
                   const void *data);
/* A scalar with x's dtype holding v (a CastLike of an f32 constant when
 * x's dtype is not known yet). */
ir_value *fe_scalar_like(fe_lower *l, const char *suffix, ir_value *x, double v);
/* Emits an IR node into the graph (which owns it) named after the source
 * node, plus "/suffix" if suffix is non-NULL. out_names (or any entry)
 * NULL gets fresh names. Trailing omitted inputs are dropped; arity,
 * required inputs and attributes are checked against the registry (shape
 * functions rely on them); declared types are attached and the node's
 * shape function is run at once so later adapters see ranks. Returns NULL
 * with d set on failure. */
ir_node *fe_emit(fe_lower *l, int op, const char *suffix, int nin, ir_value *const *in, int nout,
                 const char *const *out_names, const ir_attr *attrs, int nattr);

/* fe_emit for control flow: in[0..nin) are the formal inputs (trailing
 * omitted ones dropped, arity checked), in[nin..nin+ncap) the captured
 * outer values, which every subgraph attribute takes as its last inputs. */
ir_node *fe_emit_control(fe_lower *l, int op, const char *suffix, int nin, ir_value *const *in,
                         int ncap, int nout, const char *const *out_names, const ir_attr *attrs,
                         int nattr);

/* Attribute access on the node being lowered. */
ir_attr *fe_attr_find(fe_lower *l, const char *name);
/* Removes the attribute (if present) and returns a copy in *out. */
bool fe_attr_take(fe_lower *l, const char *name, ir_attr *out);
int fe_attr_add(fe_lower *l, const ir_attr *a);
int fe_set_input(fe_lower *l, int i, ir_value *v);

/* ---- opset.c ---------------------------------------------------------- */

/* Rewrites l from the form of its opset into the IR's (newest) form. */
int fe_adapt(fe_lower *l);
/* ONNX op types without an IR op of the same name that the adapters
 * lower anyway (Upsample -> Resize). */
int fe_adapted_op(const char *op_type);

/* ---- microsoft.c ------------------------------------------------------ */

/* Whether n is a contrib op of ONNX Runtime that microsoft.c expands
 * (domain com.microsoft, and the few it registers in the default domain
 * that ONNX itself lacks). */
bool fe_ms_supported(const fe_node *n);
/* Emits the expansion of such a node (l->op is a placeholder) and sets
 * l->done. */
int fe_ms_lower(fe_lower *l);

#endif
