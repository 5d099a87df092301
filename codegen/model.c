/* model.c - a whole graph to one LLVM module.
 *
 * Where values live: graph inputs and outputs are the caller's buffers,
 * constants are slices of one weights blob (64-byte aligned, in .rodata
 * or mapped from model.weights; the code reaches it through env->weights),
 * intermediates sit in the arena at the offsets the plan pass gave them.
 * Each node becomes a kernel (codegen/lower/lower.c) compiled by the LLVM
 * emitter; `<prefix>_run` calls them in order, splitting a kernel's
 * parallel outer loop over the runtime's parallel_for. The descriptor
 * `<prefix>_model` is a constant laid out exactly as icc_model_desc.
 */
#include "codegen/model.h"
#include "codegen/llvm/emit.h"
#include "codegen/lower.h"
#include "icc/runtime.h"
#include "ir/ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef ICC_VERSION
#define ICC_VERSION "0.1.0"
#endif

typedef struct {
    const ir_graph *g;
    const cg_target *t;
    const char *prefix;
    icc_diag *d;
    LLVMModuleRef m;
    LLVMContextRef cx;
    LLVMTypeRef ptr, i8, i32, i64, kfn_ty;
    cg_binding *bind;
    unsigned char *weights;
    int64_t weights_bytes;
    bool external;             /* weights in model.weights, not .rodata */
    /* Symbolic dims: graph symbol id -> its index in the descriptor's
     * symbols (-1: not bound by an input); with any symbol, intermediates
     * get a layout computed at run time (dyn_*), not the plan's offsets. */
    int *sym_desc;
    int nsymbols;
    bool dynamic;
    int *root;                 /* node index -> its fused group's root (ir_graph_group_roots) */
    int ndyn;                  /* intermediates in the dynamic layout */
    int *dyn_val;              /* slot -> value id, in definition order */
    int **dyn_conf;            /* slot -> earlier slots it is live with, -1 ended */
    LLVMValueRef layout_fn;    /* i64 layout(const i64 *dims, i64 *offs) */
    char **messages;           /* run-time shape checks' messages */
    int nmessages;
} mctx;

/* FNV-1a, 64-bit: the checksum the runtime verifies for mapped weights. */
static uint64_t fnv1a(const unsigned char *p, int64_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int64_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* The ops whose lowering reads every dim through dim_of (constant or the
 * run's symbol value), so symbolic dims are safe; other families still
 * assume static shapes. */
static bool symbolic_ok(const ir_node *n)
{
    bool sym = false;
    for (int i = 0; i < n->nin; i++)
        for (int k = 0; n->in[i] && k < n->in[i]->type.rank; k++)
            sym |= n->in[i]->type.dims[k].sym > 0;
    for (int i = 0; i < n->nout; i++)
        for (int k = 0; k < n->out[i]->type.rank; k++)
            sym |= n->out[i]->type.dims[k].sym > 0;
    return !sym || (ir_ops[n->op].flags & IR_F_SYMBOLIC);
}

/* A node whose every operand and result is symbolic in dim 0 only, with
 * one symbol S, and whose op treats dim 0 as independent items (a batch:
 * convolutions and pools, per-item normalizations, ops along another
 * axis), is compiled for one item and called S times by `run`, each call
 * on the next item of every batched buffer. Returns S, or 0. */
static int32_t batch_symbol(const ir_node *n)
{
    int32_t s = 0;
    for (int io = 0; io < 2; io++)
        for (int i = 0; i < (io ? n->nout : n->nin); i++) {
            const ir_value *v = io ? n->out[i] : n->in[i];
            if (!v)
                continue;
            for (int k = 0; k < v->type.rank; k++) {
                int32_t sym = v->type.dims[k].sym;
                if (sym < 0 || (sym > 0 && (k > 0 || (s && sym != s))))
                    return 0;
                if (sym > 0)
                    s = sym;
            }
            if (io && (v->type.rank < 1 || v->type.dims[0].sym != s))
                return 0;
        }
    if (!s)
        return 0;
    int rank = n->in[0] ? n->in[0]->type.rank : 0;
    int64_t axis = ir_attr_int(n, "axis", n->op == IR_OP_LAYER_NORMALIZATION ? -1 : 1);
    axis = axis < 0 ? axis + rank : axis;
    unsigned fl = ir_ops[n->op].flags;
    if (fl & IR_F_BATCH) {
        /* the data's dim 0 is the batch; other operands (weights, scales,
         * the grid's batch is the data's) must follow it or be unbatched */
        if (n->op == IR_OP_BATCH_NORMALIZATION && n->nout > 1)
            return 0;
        if (n->op == IR_OP_GRID_SAMPLE && n->in[1]->type.dims[0].sym != s)
            return 0;   /* the grid's batch must follow the data's */
        return s;
    }
    if (fl & IR_F_BATCH_AXIS)
        return axis >= 1 && axis < rank ? s : 0;
    return 0;
}

/* Sets dim 0 of n's operands and results that carry symbol s to 1, saving
 * their types in saved (nin + nout entries), or restores them. The graph
 * is the caller's and stays unchanged outside these calls. */
static void pin_batch(const ir_node *n, int32_t s, ir_type *saved, bool restore)
{
    for (int i = 0; i < n->nin + n->nout; i++) {
        ir_value *v = i < n->nin ? n->in[i] : n->out[i - n->nin];
        if (!v)
            continue;
        if (restore) {
            v->type = saved[i];
        } else {
            saved[i] = v->type;
            if (v->type.rank > 0 && v->type.dims[0].sym == s)
                v->type.dims[0] = ir_dim_const(1);
        }
    }
}

static bool can_lower_batched(const ir_node *n)
{
    int32_t s = batch_symbol(n);
    if (!s || n->nin + n->nout > 128)
        return false;
    ir_type saved[128];
    pin_batch(n, s, saved, false);
    bool ok = cg_can_lower(n);
    pin_batch(n, s, saved, true);
    return ok;
}

/* Symbols bound by the inputs, numbered in order of first appearance. */
static int find_symbols(mctx *c)
{
    const ir_graph *g = c->g;
    c->sym_desc = malloc(sizeof *c->sym_desc * ((size_t)g->nsyms + 1));
    if (!c->sym_desc)
        return ir_errorf(c->d, "out of memory");
    for (int s = 0; s <= g->nsyms; s++)
        c->sym_desc[s] = -1;
    for (int i = 0; i < g->ninputs; i++)
        for (int k = 0; k < g->inputs[i]->type.rank; k++) {
            int32_t sym = g->inputs[i]->type.dims[k].sym;
            if (sym > 0 && sym < g->nsyms && c->sym_desc[sym] < 0)
                c->sym_desc[sym] = c->nsymbols++;
        }
    c->dynamic = c->nsymbols > 0;
    /* A fused group is one kernel, at its root; its other members' results
     * stay inside it (no memory, no kernel of their own). */
    c->root = malloc(sizeof *c->root * ((size_t)g->nnodes + 1));
    if (!c->root || ir_graph_group_roots(g, c->root) < 0)
        return ir_errorf(c->d, "out of memory");
    return 0;
}

/* Every node must lower, every dim be static, every intermediate planned,
 * and outputs be node results listed once. All unsupported nodes are
 * reported together, like the frontend's unsupported ops. */
static int check_graph(mctx *c)
{
    const ir_graph *g = c->g;
    for (int i = 0; i < g->nvalues; i++) {
        const ir_value *v = g->values[i];
        for (int k = 0; k < v->type.rank; k++) {
            int32_t sym = v->type.dims[k].sym;
            if (sym > 0 && (sym >= g->nsyms || c->sym_desc[sym] < 0))
                return ir_errorf(c->d, "value '%.200s' has the symbolic dim '%s', which no input "
                                 "decides: pin it with --shape", v->name, ir_graph_sym_name(g, sym));
            if (sym < 0)
                return ir_errorf(c->d, "value '%.200s' has a dim that depends on input values: bind the "
                                 "inputs that decide it with --bind=NAME=FILE.npy", v->name);
        }
        if (v->type.rank < 0)
            return ir_errorf(c->d, "value '%.200s' has an unknown rank: bind the inputs that decide it "
                             "with --bind=NAME=FILE.npy", v->name);
    }
    char list[768] = "";
    int bad = 0;
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        if (cg_can_lower(n) && (!c->dynamic || symbolic_ok(n)))
            continue;
        if (c->dynamic && c->root[k] == k && can_lower_batched(n))
            continue;
        if (bad < 8)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s ('%.60s')", bad ? ", " : "",
                     ir_ops[n->op].name, n->name);
        bad++;
    }
    if (bad)
        return ir_errorf(c->d, "%d node%s cannot be compiled yet: %s%s", bad, bad == 1 ? "" : "s", list,
                         bad > 8 ? ", ..." : "");
    for (int k = 0; k < g->nnodes; k++)
        for (int i = 0; i < g->nodes[k]->nout; i++) {
            const ir_value *v = g->nodes[k]->out[i];
            bool is_out = false;
            for (int j = 0; j < g->noutputs; j++)
                is_out |= g->outputs[j] == v;
            if (!is_out && !v->planned && !c->dynamic && c->root[k] == k)
                return ir_errorf(c->d, "value '%.200s' has no arena offset: run the plan pass last", v->name);
        }
    return 0;
}

/* Bindings, and the weights blob: constants in value order, 64-aligned. */
static int bind_values(mctx *c)
{
    const ir_graph *g = c->g;
    c->bind = calloc((size_t)g->nvalues + 1, sizeof *c->bind);
    if (!c->bind)
        return ir_errorf(c->d, "out of memory");
    int64_t off = 0;
    for (int i = 0; i < g->nvalues; i++) {
        const ir_value *v = g->values[i];
        if (v->kind == IR_VAL_CONST) {
            c->bind[i] = (cg_binding){KIR_BUF_WEIGHT, 0, off};
            off += ((int64_t)v->cval.nbytes + 63) & ~(int64_t)63;
        } else if (v->planned) {
            c->bind[i] = (cg_binding){KIR_BUF_ARENA, 0, v->offset};
        }
    }
    for (int i = 0; i < g->ninputs; i++)
        c->bind[g->inputs[i]->id] = (cg_binding){KIR_BUF_INPUT, i, 0};
    /* A node's result listed as several outputs is computed into the
     * first; outputs that are inputs or constants are copies (copy_outputs). */
    for (int i = g->noutputs - 1; i >= 0; i--)
        if (g->outputs[i]->kind == IR_VAL_NODE)
            c->bind[g->outputs[i]->id] = (cg_binding){KIR_BUF_OUTPUT, i, 0};
    c->weights_bytes = off;
    c->weights = calloc(1, (size_t)off + 1);
    if (!c->weights)
        return ir_errorf(c->d, "out of memory for %lld bytes of weights", (long long)off);
    for (int i = 0; i < g->nvalues; i++) {
        const ir_value *v = g->values[i];
        if (v->kind == IR_VAL_CONST && v->cval.nbytes)
            memcpy(c->weights + c->bind[i].offset, v->cval.data, v->cval.nbytes);
    }
    return 0;
}

/* The dynamic layout's program: intermediates in definition order, each
 * with the earlier ones live at the same time. At run time each goes at
 * the lowest 64-aligned offset above all of those (valid for any symbol
 * values: values never live together may share bytes). Slots become the
 * bindings' offsets. */
static int dyn_plan(mctx *c)
{
    const ir_graph *g = c->g;
    int nv = g->nvalues;
    int *def = malloc(sizeof *def * ((size_t)nv + 1)), *last = malloc(sizeof *last * ((size_t)nv + 1));
    c->dyn_val = malloc(sizeof *c->dyn_val * ((size_t)nv + 1));
    c->dyn_conf = calloc((size_t)nv + 1, sizeof *c->dyn_conf);
    if (!def || !last || !c->dyn_val || !c->dyn_conf) {
        free(def);
        free(last);
        return ir_errorf(c->d, "out of memory");
    }
    for (int i = 0; i < nv; i++)
        def[i] = last[i] = -1;
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        for (int i = 0; i < n->nin; i++)
            if (n->in[i])
                last[n->in[i]->id] = c->root[k];
        for (int i = 0; i < n->nout; i++)
            def[n->out[i]->id] = last[n->out[i]->id] = k;
    }
    int rc = 0;
    for (int k = 0; k < g->nnodes && rc == 0; k++)
        for (int i = 0; i < g->nodes[k]->nout && rc == 0; i++) {
            const ir_value *v = g->nodes[k]->out[i];
            if (c->bind[v->id].kind == KIR_BUF_OUTPUT || c->root[k] != k)
                continue;
            int slot = c->ndyn++, nconf = 0;
            c->dyn_val[slot] = v->id;
            c->bind[v->id] = (cg_binding){KIR_BUF_ARENA, 0, slot};
            int *conf = malloc(sizeof *conf * ((size_t)slot + 1));
            if (!conf) {
                rc = ir_errorf(c->d, "out of memory");
                break;
            }
            for (int u = 0; u < slot; u++) {
                int uid = c->dyn_val[u];
                if (def[uid] <= last[v->id] && def[v->id] <= last[uid])
                    conf[nconf++] = u;
            }
            conf[nconf] = -1;
            c->dyn_conf[slot] = conf;
        }
    free(def);
    free(last);
    return rc;
}

/* Bytes of value v, with symbols from dims (descriptor order; NULL: 1). */
static int64_t value_bytes_at(const mctx *c, const ir_value *v, const int64_t *dims)
{
    int64_t n = (int64_t)ir_dtype_size(v->type.dtype);
    for (int k = 0; k < v->type.rank; k++) {
        ir_dim dm = v->type.dims[k];
        n *= dm.sym > 0 ? (dims ? dims[c->sym_desc[dm.sym]] : 1) : dm.v;
    }
    return n;
}

/* The dynamic layout's arena bytes with every symbol 1 (the descriptor's
 * arena_bytes), the way the generated layout function computes it. */
static int64_t dyn_bytes_at_one(const mctx *c)
{
    int64_t *end = calloc((size_t)c->ndyn + 1, sizeof *end), total = 0;
    if (!end)
        return 0;
    for (int s = 0; s < c->ndyn; s++) {
        int64_t off = 0;
        for (const int *u = c->dyn_conf[s]; *u >= 0; u++)
            off = end[*u] > off ? end[*u] : off;
        off = (off + 63) & ~(int64_t)63;
        end[s] = off + value_bytes_at(c, c->g->values[c->dyn_val[s]], NULL);
        total = end[s] > total ? end[s] : total;
    }
    free(end);
    return (total + 63) & ~(int64_t)63;
}

static void dyn_free(mctx *c)
{
    for (int i = 0; i < c->nmessages; i++)
        free(c->messages[i]);
    free(c->messages);
    for (int s = 0; c->dyn_conf && s < c->ndyn; s++)
        free(c->dyn_conf[s]);
    free(c->dyn_conf);
    free(c->dyn_val);
    free(c->sym_desc);
    free(c->root);
}

/* ---- constants in the module ------------------------------------------------ */

static LLVMValueRef global_const(mctx *c, const char *name, LLVMValueRef init, unsigned align)
{
    LLVMValueRef gv = LLVMAddGlobal(c->m, LLVMTypeOf(init), name);
    LLVMSetInitializer(gv, init);
    LLVMSetGlobalConstant(gv, 1);
    LLVMSetLinkage(gv, LLVMPrivateLinkage);
    if (align)
        LLVMSetAlignment(gv, align);
    return gv;
}

static LLVMValueRef cstr(mctx *c, const char *s)
{
    return global_const(c, "str", LLVMConstStringInContext(c->cx, s, (unsigned)strlen(s), 0), 1);
}

static LLVMValueRef ci32(mctx *c, int64_t v) { return LLVMConstInt(c->i32, (unsigned long long)v, 1); }
static LLVMValueRef ci64(mctx *c, int64_t v) { return LLVMConstInt(c->i64, (unsigned long long)v, 1); }

/* One icc_tensor_desc {name, dtype, rank, dims, dim_names}. */
static LLVMValueRef tensor_desc(mctx *c, LLVMTypeRef ty, const ir_value *v)
{
    LLVMValueRef dims[IR_MAX_RANK + 1], names[IR_MAX_RANK + 1];
    bool any = false;
    for (int i = 0; i < v->type.rank; i++) {
        int32_t sym = v->type.dims[i].sym;
        dims[i] = ci64(c, sym > 0 ? -1 : v->type.dims[i].v);
        names[i] = sym > 0 ? cstr(c, ir_graph_sym_name(c->g, sym)) : LLVMConstPointerNull(c->ptr);
        any |= sym > 0;
    }
    LLVMValueRef darr = v->type.rank ? global_const(c, "dims", LLVMConstArray(c->i64, dims, (unsigned)v->type.rank), 8)
                                     : LLVMConstPointerNull(c->ptr);
    LLVMValueRef narr = any ? global_const(c, "dim_names", LLVMConstArray(c->ptr, names, (unsigned)v->type.rank), 8)
                            : LLVMConstPointerNull(c->ptr);
    LLVMValueRef f[5] = {cstr(c, v->name), ci32(c, ir_dtype_to_onnx(v->type.dtype)), ci32(c, v->type.rank),
                         darr, narr};
    return LLVMConstNamedStruct(ty, f, 5);
}

/* ---- code ----------------------------------------------------------------------- */

/* void <prefix>_par(void *arg, int64_t i): runs chunk i of a parallel
 * kernel; arg = {kernel, bufs, syms, hi, chunk}. */
static LLVMValueRef emit_trampoline(mctx *c, LLVMTypeRef args_ty)
{
    char name[256];
    snprintf(name, sizeof name, "%s_par", c->prefix);
    LLVMTypeRef params[2] = {c->ptr, c->i64};
    LLVMValueRef fn = LLVMAddFunction(c->m, name, LLVMFunctionType(LLVMVoidTypeInContext(c->cx), params, 2, 0));
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(c->cx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c->cx, fn, "entry"));
    LLVMValueRef arg = LLVMGetParam(fn, 0), i = LLVMGetParam(fn, 1);
    LLVMValueRef f[5];
    LLVMTypeRef ft[5] = {c->ptr, c->ptr, c->ptr, c->i64, c->i64};
    for (unsigned k = 0; k < 5; k++)
        f[k] = LLVMBuildLoad2(b, ft[k], LLVMBuildStructGEP2(b, args_ty, arg, k, ""), "");
    LLVMValueRef begin = LLVMBuildMul(b, i, f[4], "begin");
    LLVMValueRef end = LLVMBuildAdd(b, begin, f[4], "end");
    LLVMValueRef lt = LLVMBuildICmp(b, LLVMIntSLT, end, f[3], "");
    end = LLVMBuildSelect(b, lt, end, f[3], "");
    LLVMValueRef cargs[4] = {f[1], f[2], begin, end};
    LLVMBuildCall2(b, c->kfn_ty, f[0], cargs, 4, "");
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
    return fn;
}

/* The trip count of a kernel's outermost parallel loop (from 0 to a
 * constant or a symbol), as a value of the run function; NULL when the
 * kernel runs serially. */
static LLVMValueRef parallel_trips(mctx *c, LLVMBuilderRef b, const kir_kernel *k, LLVMValueRef symtab)
{
    if (k->body.n != 1 || k->body.s[0]->kind != KIR_S_FOR || k->body.s[0]->loop != KIR_PARALLEL)
        return NULL;
    const kir_stmt *s = k->body.s[0];
    if (s->lo->op != KIR_CONST || s->lo->c.i != 0)
        return NULL;
    if (s->hi->op == KIR_CONST)
        return s->hi->c.i >= 2 ? ci64(c, s->hi->c.i) : NULL;
    if (s->hi->op != KIR_SYM)
        return NULL;
    LLVMValueRef idx = ci64(c, s->hi->var);
    return LLVMBuildLoad2(b, c->i64, LLVMBuildGEP2(b, c->i64, symtab, &idx, 1, ""), "trips");
}

/* Value v's byte size in the run function (symbols from symtab). */
static LLVMValueRef value_bytes(mctx *c, LLVMBuilderRef b, const ir_value *v, LLVMValueRef symtab)
{
    LLVMValueRef n = ci64(c, (int64_t)ir_dtype_size(v->type.dtype));
    for (int k = 0; k < v->type.rank; k++) {
        ir_dim dm = v->type.dims[k];
        LLVMValueRef idx = ci64(c, dm.sym);
        n = LLVMBuildMul(b, n, dm.sym > 0 ? LLVMBuildLoad2(b, c->i64, LLVMBuildGEP2(b, c->i64, symtab, &idx, 1, ""), "")
                                          : ci64(c, dm.v), "");
    }
    return n;
}

/* The graph's symbol table (symtab[id] = symbol id's value, as kernels
 * read it) filled from the descriptor-ordered dims the run receives. */
static LLVMValueRef emit_symtab(mctx *c, LLVMBuilderRef b, LLVMValueRef dims)
{
    LLVMValueRef symtab = LLVMBuildArrayAlloca(b, c->i64, ci64(c, c->g->nsyms + 1), "symtab");
    for (int sym = 1; sym < c->g->nsyms; sym++)
        if (c->sym_desc[sym] >= 0) {
            LLVMValueRef di = ci64(c, c->sym_desc[sym]), si = ci64(c, sym);
            LLVMBuildStore(b, LLVMBuildLoad2(b, c->i64, LLVMBuildGEP2(b, c->i64, dims, &di, 1, ""), ""),
                           LLVMBuildGEP2(b, c->i64, symtab, &si, 1, ""));
        }
    return symtab;
}

/* i64 <prefix>_layout(const i64 *dims, i64 *offs): the dynamic layout
 * (dyn_plan) for the run's symbol values; stores each slot's offset and
 * returns the arena bytes. */
static LLVMValueRef emit_layout(mctx *c)
{
    char name[256];
    snprintf(name, sizeof name, "%s_layout", c->prefix);
    LLVMTypeRef params[2] = {c->ptr, c->ptr};
    LLVMValueRef fn = LLVMAddFunction(c->m, name, LLVMFunctionType(c->i64, params, 2, 0));
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(c->cx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c->cx, fn, "entry"));
    LLVMValueRef dims = LLVMGetParam(fn, 0), offs = LLVMGetParam(fn, 1);
    LLVMValueRef symtab = emit_symtab(c, b, dims);
    LLVMValueRef *end = calloc((size_t)c->ndyn + 1, sizeof *end), total = ci64(c, 0);
    for (int sl = 0; end && sl < c->ndyn; sl++) {
        LLVMValueRef off = ci64(c, 0);
        for (const int *u = c->dyn_conf[sl]; *u >= 0; u++)
            off = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, end[*u], off, ""), end[*u], off, "");
        off = LLVMBuildAnd(b, LLVMBuildAdd(b, off, ci64(c, 63), ""), ci64(c, ~(int64_t)63), "");
        LLVMValueRef si = ci64(c, sl);
        LLVMBuildStore(b, off, LLVMBuildGEP2(b, c->i64, offs, &si, 1, ""));
        end[sl] = LLVMBuildAdd(b, off, value_bytes(c, b, c->g->values[c->dyn_val[sl]], symtab), "");
        total = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, end[sl], total, ""), end[sl], total, "");
    }
    free(end);
    LLVMBuildRet(b, LLVMBuildAnd(b, LLVMBuildAdd(b, total, ci64(c, 63), ""), ci64(c, ~(int64_t)63), ""));
    LLVMDisposeBuilder(b);
    return fn;
}

/* uint64_t <prefix>_arena_size(const int64_t *dims): icc_arena_fn. */
static LLVMValueRef emit_arena_size(mctx *c)
{
    char name[256];
    snprintf(name, sizeof name, "%s_arena_size", c->prefix);
    LLVMTypeRef params[1] = {c->ptr};
    LLVMValueRef fn = LLVMAddFunction(c->m, name, LLVMFunctionType(c->i64, params, 1, 0));
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(c->cx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c->cx, fn, "entry"));
    LLVMValueRef offs = LLVMBuildArrayAlloca(b, c->i64, ci64(c, c->ndyn + 1), "offs");
    LLVMValueRef args[2] = {LLVMGetParam(fn, 0), offs};
    LLVMTypeRef lp[2] = {c->ptr, c->ptr};
    LLVMBuildRet(b, LLVMBuildCall2(b, LLVMFunctionType(c->i64, lp, 2, 0), c->layout_fn, args, 2, ""));
    LLVMDisposeBuilder(b);
    return fn;
}

/* Outputs that no kernel writes: a graph input or constant passed
 * through, or a value listed again after its first output slot. */
static void copy_outputs(mctx *c, LLVMBuilderRef b, LLVMValueRef inputs, LLVMValueRef outputs,
                         LLVMValueRef weights, LLVMValueRef symtab)
{
    const ir_graph *g = c->g;
    for (int i = 0; i < g->noutputs; i++) {
        const ir_value *v = g->outputs[i];
        const cg_binding *bd = &c->bind[v->id];
        if (bd->kind == KIR_BUF_OUTPUT && bd->index == i)
            continue;
        LLVMValueRef bytes = value_bytes(c, b, v, symtab);
        if (LLVMIsAConstantInt(bytes) && LLVMConstIntGetSExtValue(bytes) == 0)
            continue;
        LLVMValueRef src;
        if (bd->kind == KIR_BUF_WEIGHT) {
            LLVMValueRef off = ci64(c, bd->offset);
            src = LLVMBuildGEP2(b, c->i8, weights, &off, 1, "");
        } else {
            LLVMValueRef idx = ci64(c, bd->index);
            src = LLVMBuildLoad2(b, c->ptr, LLVMBuildGEP2(b, c->ptr, bd->kind == KIR_BUF_INPUT ? inputs : outputs,
                                                          &idx, 1, ""), "");
        }
        LLVMValueRef oi = ci64(c, i);
        LLVMValueRef dst = LLVMBuildLoad2(b, c->ptr, LLVMBuildGEP2(b, c->ptr, outputs, &oi, 1, ""), "");
        LLVMBuildMemCpy(b, dst, 1, src, 1, bytes);
    }
}

/* ---- run-time shape checks ------------------------------------------------ */

/* A dim's value in the run function. */
static LLVMValueRef dim_value(mctx *c, LLVMBuilderRef b, ir_dim dm, LLVMValueRef symtab)
{
    if (dm.sym <= 0)
        return ci64(c, dm.v);
    LLVMValueRef idx = ci64(c, dm.sym);
    return LLVMBuildLoad2(b, c->i64, LLVMBuildGEP2(b, c->i64, symtab, &idx, 1, ""), "");
}

static void dim_text(const ir_graph *g, ir_dim dm, char *buf, size_t n)
{
    if (dm.sym > 0)
        snprintf(buf, n, "%s", ir_graph_sym_name(g, dm.sym));
    else
        snprintf(buf, n, "%lld", (long long)dm.v);
}

/* if (a != b) return ICC_ERR_SHAPE with a message naming the node. */
static int check_eq(mctx *c, LLVMBuilderRef b, LLVMValueRef run, LLVMValueRef a, LLVMValueRef v,
                    const ir_node *n, const char *what)
{
    if (LLVMIsAConstantInt(a) && LLVMIsAConstantInt(v) && LLVMConstIntGetSExtValue(a) == LLVMConstIntGetSExtValue(v))
        return 0;
    char **m = realloc(c->messages, sizeof *m * ((size_t)c->nmessages + 1));
    if (!m)
        return ir_errorf(c->d, "out of memory");
    c->messages = m;
    size_t len = strlen(n->name) + strlen(what) + 64;
    if (!(m[c->nmessages] = malloc(len)))
        return ir_errorf(c->d, "out of memory");
    snprintf(m[c->nmessages], len, "node '%s' (%s): %s", n->name, ir_ops[n->op].name, what);
    int idx = ++c->nmessages;
    LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(c->cx, run, "bad_shape");
    LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(c->cx, run, "shape_ok");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, a, v, ""), ok, bad);
    LLVMPositionBuilderAtEnd(b, bad);
    LLVMBuildRet(b, ci32(c, ICC_ERR_SHAPE | (idx << 8)));
    LLVMPositionBuilderAtEnd(b, ok);
    return 0;
}

/* Shape inference resolves a symbol against what a node needs (broadcast
 * against a fixed dim, a reshape's element count, a contraction's inner
 * dim); the compiled kernels rely on it, so the run checks it first and
 * refuses inputs that break it, naming the node. */
static int emit_shape_checks(mctx *c, LLVMBuilderRef b, LLVMValueRef run, LLVMValueRef symtab)
{
    const ir_graph *g = c->g;
    char what[512], x[128], y[128];
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        const ir_type *to = &n->out[0]->type;
        bool sym = false;
        for (int i = 0; i < n->nin + n->nout; i++) {
            const ir_value *v = i < n->nin ? n->in[i] : n->out[i - n->nin];
            for (int d = 0; v && d < v->type.rank; d++)
                sym |= v->type.dims[d].sym > 0;
        }
        if (!sym)
            continue;
        bool ew = ir_ops[n->op].flags & IR_F_ELEMWISE;
        int first = 0, last = n->nin;
        if (n->op == IR_OP_GEMM)
            first = 2, last = n->nin > 2 ? 3 : 2;   /* C broadcasts to the output */
        if (ew || n->op == IR_OP_GEMM) {
            for (int i = first; i < last; i++) {
                const ir_value *v = n->in[i];
                if (!v)
                    continue;
                for (int d = 0; d < v->type.rank && d < to->rank; d++) {
                    ir_dim in = v->type.dims[d], out = to->dims[to->rank - v->type.rank + d];
                    if (in.sym == out.sym && (in.sym > 0 || in.v == out.v))
                        continue;
                    if (in.sym <= 0 && in.v == 1)
                        continue;   /* broadcast */
                    dim_text(g, in, x, sizeof x);
                    dim_text(g, out, y, sizeof y);
                    snprintf(what, sizeof what, "dim %d of '%.100s' (%s) must equal %s", d, v->name, x, y);
                    if (check_eq(c, b, run, dim_value(c, b, in, symtab), dim_value(c, b, out, symtab), n, what) < 0)
                        return -1;
                }
            }
        }
        if (n->op == IR_OP_MATMUL || n->op == IR_OP_GEMM) {
            const ir_type *ta = &n->in[0]->type, *tb = &n->in[1]->type;
            bool tA = n->op == IR_OP_GEMM && ir_attr_int(n, "transA", 0);
            bool tB = n->op == IR_OP_GEMM && ir_attr_int(n, "transB", 0);
            if (ta->rank >= 1 && tb->rank >= 1) {
                ir_dim ka = ta->dims[tA ? ta->rank - 2 : ta->rank - 1];
                ir_dim kb = tb->rank == 1 ? tb->dims[0] : tb->dims[tB ? tb->rank - 1 : tb->rank - 2];
                dim_text(g, ka, x, sizeof x);
                dim_text(g, kb, y, sizeof y);
                snprintf(what, sizeof what, "the inner dims differ (%s vs %s)", x, y);
                if ((ka.sym > 0 || kb.sym > 0) &&
                    check_eq(c, b, run, dim_value(c, b, ka, symtab), dim_value(c, b, kb, symtab), n, what) < 0)
                    return -1;
            }
        }
        switch (n->op) {
        case IR_OP_RESHAPE: case IR_OP_FLATTEN: case IR_OP_SQUEEZE: case IR_OP_UNSQUEEZE: {
            const ir_type *ti = &n->in[0]->type;
            LLVMValueRef ni = ci64(c, 1), no = ci64(c, 1);
            for (int d = 0; d < ti->rank; d++)
                ni = LLVMBuildMul(b, ni, dim_value(c, b, ti->dims[d], symtab), "");
            for (int d = 0; d < to->rank; d++)
                no = LLVMBuildMul(b, no, dim_value(c, b, to->dims[d], symtab), "");
            snprintf(what, sizeof what, "'%.100s' cannot be reshaped to '%.100s': the element counts differ",
                     n->in[0]->name, n->out[0]->name);
            if (check_eq(c, b, run, ni, no, n, what) < 0)
                return -1;
            break;
        }
        default:
            break;
        }
    }
    return 0;
}

static int emit_model(mctx *c)
{
    const ir_graph *g = c->g;
    LLVMTypeRef env_ty = LLVMStructTypeInContext(c->cx, (LLVMTypeRef[]){c->ptr, c->ptr, c->i32, c->i32, c->ptr}, 5, 0);
    LLVMTypeRef args_ty = LLVMStructTypeInContext(c->cx, (LLVMTypeRef[]){c->ptr, c->ptr, c->ptr, c->i64, c->i64}, 5, 0);
    LLVMTypeRef run_params[5] = {c->ptr, c->ptr, c->ptr, c->ptr, c->ptr};
    char name[256];
    snprintf(name, sizeof name, "%s_run", c->prefix);
    LLVMValueRef run = LLVMAddFunction(c->m, name, LLVMFunctionType(c->i32, run_params, 5, 0));
    LLVMSetLinkage(run, LLVMInternalLinkage);
    LLVMValueRef par = emit_trampoline(c, args_ty);
    LLVMValueRef arena_fn = LLVMConstPointerNull(c->ptr), symbols = LLVMConstPointerNull(c->ptr);
    if (c->dynamic) {
        c->layout_fn = emit_layout(c);
        arena_fn = emit_arena_size(c);
        LLVMValueRef *names = calloc((size_t)c->nsymbols + 1, sizeof *names);
        if (!names)
            return ir_errorf(c->d, "out of memory");
        for (int sym = 1; sym < g->nsyms; sym++)
            if (c->sym_desc[sym] >= 0)
                names[c->sym_desc[sym]] = cstr(c, ir_graph_sym_name(g, sym));
        symbols = global_const(c, "symbols", LLVMConstArray(c->ptr, names, (unsigned)c->nsymbols), 8);
        free(names);
    }
    LLVMTypeRef pf_params[4] = {c->ptr, c->i64, c->ptr, c->ptr};
    LLVMTypeRef pf_ty = LLVMFunctionType(LLVMVoidTypeInContext(c->cx), pf_params, 4, 0);

    LLVMBuilderRef b = LLVMCreateBuilderInContext(c->cx);
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(c->cx, run, "entry");
    LLVMPositionBuilderAtEnd(b, entry);
    LLVMValueRef inputs = LLVMGetParam(run, 0), outputs = LLVMGetParam(run, 1), dims = LLVMGetParam(run, 2);
    LLVMValueRef arena = LLVMGetParam(run, 3), env = LLVMGetParam(run, 4);
    LLVMValueRef pfn = LLVMBuildLoad2(b, c->ptr, LLVMBuildStructGEP2(b, env_ty, env, 0, ""), "parallel_for");
    LLVMValueRef pool = LLVMBuildLoad2(b, c->ptr, LLVMBuildStructGEP2(b, env_ty, env, 1, ""), "pool");
    LLVMValueRef nthreads = LLVMBuildLoad2(b, c->i32, LLVMBuildStructGEP2(b, env_ty, env, 2, ""), "nthreads");
    LLVMValueRef weights = LLVMBuildLoad2(b, c->ptr, LLVMBuildStructGEP2(b, env_ty, env, 4, ""), "weights");
    /* Parallel when the pool has more than one thread and a parallel_for. */
    LLVMValueRef threaded = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSGT, nthreads, ci32(c, 1), ""),
                                         LLVMBuildIsNotNull(b, pfn, ""), "threaded");
    LLVMValueRef nthreads64 = LLVMBuildSExt(b, nthreads, c->i64, "");
    /* Kernels read symbol k at syms[k] (graph ids); the run gets them in
     * the descriptor's order. With symbols, the arena layout is computed
     * for this run's values. */
    LLVMValueRef symtab = emit_symtab(c, b, dims);
    LLVMValueRef offs = NULL;
    if (c->dynamic) {
        offs = LLVMBuildArrayAlloca(b, c->i64, ci64(c, c->ndyn + 1), "offs");
        LLVMValueRef largs[2] = {dims, offs};
        LLVMTypeRef lp[2] = {c->ptr, c->ptr};
        LLVMBuildCall2(b, LLVMFunctionType(c->i64, lp, 2, 0), c->layout_fn, largs, 2, "");
    }
    if (c->dynamic && emit_shape_checks(c, b, run, symtab) < 0) {
        LLVMDisposeBuilder(b);
        return -1;
    }

    int rc = 0;
    for (int kx = 0; kx < g->nnodes && rc == 0; kx++) {
        const ir_node *n = g->nodes[kx];
        if (c->root[kx] != kx)
            continue;
        char kname[256];
        snprintf(kname, sizeof kname, "%s_k%d", c->prefix, kx);
        kir_kernel *k;
        /* per item, for a batch dim the op's lowering takes as static */
        int32_t bsym = c->dynamic && !symbolic_ok(n) ? batch_symbol(n) : 0;
        ir_type saved[128];
        if (bsym)
            pin_batch(n, bsym, saved, false);
        int lrc = cg_lower_node(g, n, c->bind, cg_target_vector_bits(c->t) / 32, kname, &k, c->d);
        int64_t item_bytes[128] = {0};
        for (int i = 0, kb = 0; bsym && lrc == 0 && i < n->nin + n->nout; i++) {
            const ir_value *v = i < n->nin ? n->in[i] : n->out[i - n->nin];
            if (!v)
                continue;
            if (saved[i].rank > 0 && saved[i].dims[0].sym == bsym && kb < 128)
                item_bytes[kb] = value_bytes_at(c, v, NULL);   /* dims pinned: one item */
            kb++;
        }
        if (bsym)
            pin_batch(n, bsym, saved, true);
        if (lrc < 0) {
            rc = -1;
            break;
        }
        LLVMValueRef kfn;
        if (cg_llvm_emit_kernel(c->t, c->m, k, &kfn, c->d) < 0) {
            ir_diag_prefix(c->d, "node '%.200s' (%s)", n->name, ir_ops[n->op].name);
            kir_kernel_destroy(k);
            rc = -1;
            break;
        }
        LLVMSetLinkage(kfn, LLVMInternalLinkage);
        /* The buffer table, filled from the run's arguments. */
        LLVMValueRef bufs = LLVMBuildArrayAlloca(b, c->ptr, ci32(c, k->nbufs), "bufs");
        for (int i = 0; i < k->nbufs; i++) {
            const kir_buf *kb = &k->bufs[i];
            LLVMValueRef p;
            switch (kb->kind) {
            case KIR_BUF_INPUT:
            case KIR_BUF_OUTPUT: {
                LLVMValueRef base = kb->kind == KIR_BUF_INPUT ? inputs : outputs;
                LLVMValueRef idx = ci64(c, kb->index);
                p = LLVMBuildLoad2(b, c->ptr, LLVMBuildGEP2(b, c->ptr, base, &idx, 1, ""), "");
                break;
            }
            default: {
                LLVMValueRef idx = ci64(c, kb->offset);
                if (kb->kind == KIR_BUF_ARENA && c->dynamic)   /* offset = the value's slot */
                    idx = LLVMBuildLoad2(b, c->i64, LLVMBuildGEP2(b, c->i64, offs, &idx, 1, ""), "");
                p = LLVMBuildGEP2(b, c->i8, kb->kind == KIR_BUF_WEIGHT ? weights : arena, &idx, 1, "");
            }
            }
            LLVMValueRef slot_idx = ci64(c, i);
            LLVMBuildStore(b, p, LLVMBuildGEP2(b, c->ptr, bufs, &slot_idx, 1, ""));
        }
        LLVMBasicBlockRef bloop = NULL, bdone = NULL;
        LLVMValueRef item = NULL, item_slot = NULL;
        if (bsym) {
            /* for item in [0, S): the buffer table at that item */
            LLVMValueRef si = ci64(c, bsym);
            LLVMValueRef count = LLVMBuildLoad2(b, c->i64, LLVMBuildGEP2(b, c->i64, symtab, &si, 1, ""), "items");
            LLVMValueRef base = bufs;
            bufs = LLVMBuildArrayAlloca(b, c->ptr, ci32(c, k->nbufs), "item_bufs");
            item_slot = LLVMBuildAlloca(b, c->i64, "item");
            LLVMBuildStore(b, ci64(c, 0), item_slot);
            bloop = LLVMAppendBasicBlockInContext(c->cx, run, "item");
            LLVMBasicBlockRef bbody = LLVMAppendBasicBlockInContext(c->cx, run, "item_body");
            bdone = LLVMAppendBasicBlockInContext(c->cx, run, "items_done");
            LLVMBuildBr(b, bloop);
            LLVMPositionBuilderAtEnd(b, bloop);
            item = LLVMBuildLoad2(b, c->i64, item_slot, "");
            LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, item, count, ""), bbody, bdone);
            LLVMPositionBuilderAtEnd(b, bbody);
            for (int i = 0; i < k->nbufs; i++) {
                LLVMValueRef slot_idx = ci64(c, i);
                LLVMValueRef p = LLVMBuildLoad2(b, c->ptr, LLVMBuildGEP2(b, c->ptr, base, &slot_idx, 1, ""), "");
                if (i < 128 && item_bytes[i]) {
                    LLVMValueRef off = LLVMBuildMul(b, item, ci64(c, item_bytes[i]), "");
                    p = LLVMBuildGEP2(b, c->i8, p, &off, 1, "");
                }
                LLVMBuildStore(b, p, LLVMBuildGEP2(b, c->ptr, bufs, &slot_idx, 1, ""));
            }
        }
        LLVMValueRef trips = parallel_trips(c, b, k, symtab);
        kir_kernel_destroy(k);
        LLVMValueRef direct_args[4] = {bufs, symtab, ci64(c, 0), ci64(c, INT64_MAX)};
        if (!trips) {
            LLVMBuildCall2(b, c->kfn_ty, kfn, direct_args, 4, "");
            if (bsym) {
                LLVMBuildStore(b, LLVMBuildAdd(b, item, ci64(c, 1), ""), item_slot);
                LLVMBuildBr(b, bloop);
                LLVMPositionBuilderAtEnd(b, bdone);
            }
            continue;
        }
        /* chunks = min(trips, 4 * threads); chunk = ceil(trips / chunks);
         * serial when single-threaded or under 2 trips */
        LLVMBasicBlockRef bpar = LLVMAppendBasicBlockInContext(c->cx, run, "par");
        LLVMBasicBlockRef bser = LLVMAppendBasicBlockInContext(c->cx, run, "ser");
        LLVMBasicBlockRef bnext = LLVMAppendBasicBlockInContext(c->cx, run, "next");
        LLVMBuildCondBr(b, LLVMBuildAnd(b, threaded, LLVMBuildICmp(b, LLVMIntSGT, trips, ci64(c, 1), ""), ""),
                        bpar, bser);
        LLVMPositionBuilderAtEnd(b, bser);
        LLVMBuildCall2(b, c->kfn_ty, kfn, direct_args, 4, "");
        LLVMBuildBr(b, bnext);
        LLVMPositionBuilderAtEnd(b, bpar);
        LLVMValueRef want = LLVMBuildMul(b, nthreads64, ci64(c, 4), "");
        LLVMValueRef chunks = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, want, trips, ""), want, trips, "chunks");
        LLVMValueRef tm1 = LLVMBuildSub(b, trips, ci64(c, 1), "");
        LLVMValueRef chunk = LLVMBuildSDiv(b, LLVMBuildAdd(b, tm1, chunks, ""), chunks, "chunk");
        LLVMValueRef nchunks = LLVMBuildSDiv(b, LLVMBuildAdd(b, tm1, chunk, ""), chunk, "");
        /* in the entry block: this point may be inside a per-item loop */
        LLVMBuilderRef eb = LLVMCreateBuilderInContext(c->cx);
        LLVMPositionBuilder(eb, entry, LLVMGetFirstInstruction(entry));
        LLVMValueRef args = LLVMBuildAlloca(eb, args_ty, "args");
        LLVMDisposeBuilder(eb);
        LLVMValueRef fields[5] = {kfn, bufs, symtab, trips, chunk};
        for (unsigned f = 0; f < 5; f++)
            LLVMBuildStore(b, fields[f], LLVMBuildStructGEP2(b, args_ty, args, f, ""));
        LLVMValueRef pargs[4] = {pool, nchunks, par, args};
        LLVMBuildCall2(b, pf_ty, pfn, pargs, 4, "");
        LLVMBuildBr(b, bnext);
        LLVMPositionBuilderAtEnd(b, bnext);
        if (bsym) {
            LLVMBuildStore(b, LLVMBuildAdd(b, item, ci64(c, 1), ""), item_slot);
            LLVMBuildBr(b, bloop);
            LLVMPositionBuilderAtEnd(b, bdone);
        }
    }
    if (rc == 0) {
        copy_outputs(c, b, inputs, outputs, weights, symtab);
        LLVMBuildRet(b, ci32(c, 0));
    }
    LLVMDisposeBuilder(b);
    if (rc < 0)
        return -1;

    /* The weights and the descriptor. */
    LLVMValueRef wglob = LLVMConstPointerNull(c->ptr);
    if (c->weights_bytes && !c->external) {
        char wname[256];
        snprintf(wname, sizeof wname, "%s_weights", c->prefix);
        wglob = global_const(c, wname,
                             LLVMConstStringInContext(c->cx, (const char *)c->weights, (unsigned)c->weights_bytes, 1), 64);
    }
    LLVMTypeRef td_ty = LLVMStructCreateNamed(c->cx, "icc_tensor_desc");
    LLVMStructSetBody(td_ty, (LLVMTypeRef[]){c->ptr, c->i32, c->i32, c->ptr, c->ptr}, 5, 0);
    LLVMValueRef descs[2];
    for (int io = 0; io < 2; io++) {
        int cnt = io ? g->noutputs : g->ninputs;
        LLVMValueRef *el = calloc((size_t)cnt + 1, sizeof *el);
        if (!el)
            return ir_errorf(c->d, "out of memory");
        for (int i = 0; i < cnt; i++)
            el[i] = tensor_desc(c, td_ty, io ? g->outputs[i] : g->inputs[i]);
        descs[io] = cnt ? global_const(c, io ? "outputs" : "inputs", LLVMConstArray(td_ty, el, (unsigned)cnt), 8)
                        : LLVMConstPointerNull(c->ptr);
        free(el);
    }
    LLVMTypeRef desc_ty = LLVMStructCreateNamed(c->cx, "icc_model_desc");
    LLVMTypeRef dfields[20] = {c->i32, c->i32, c->ptr, c->ptr, c->ptr, c->i32, c->i32, c->ptr, c->ptr, c->i32,
                               c->ptr, c->i64, c->ptr, c->i64, c->i64, c->ptr, c->ptr, c->ptr, c->i32, c->i32};
    LLVMStructSetBody(desc_ty, dfields, 20, 0);
    LLVMValueRef msgs = LLVMConstPointerNull(c->ptr);
    if (c->nmessages) {
        LLVMValueRef *el = calloc((size_t)c->nmessages, sizeof *el);
        if (!el)
            return ir_errorf(c->d, "out of memory");
        for (int i = 0; i < c->nmessages; i++)
            el[i] = cstr(c, c->messages[i]);
        msgs = global_const(c, "messages", LLVMConstArray(c->ptr, el, (unsigned)c->nmessages), 8);
        free(el);
    }
    int64_t arena_bytes = c->dynamic ? dyn_bytes_at_one(c) : ir_graph_arena_bytes(g);
    LLVMValueRef dv[20] = {
        ci32(c, ICC_ABI_VERSION), ci32(c, (int64_t)sizeof(icc_model_desc)), cstr(c, ICC_VERSION),
        cstr(c, c->prefix), cstr(c, cg_target_required_features(c->t)), ci32(c, g->ninputs),
        ci32(c, g->noutputs), descs[0], descs[1], ci32(c, c->nsymbols), symbols,
        ci64(c, arena_bytes), arena_fn, ci64(c, (int64_t)fnv1a(c->weights, c->weights_bytes)),
        ci64(c, c->weights_bytes), wglob, run, msgs, ci32(c, c->nmessages), ci32(c, 0),
    };
    snprintf(name, sizeof name, "%s_model", c->prefix);
    LLVMValueRef desc = LLVMAddGlobal(c->m, desc_ty, name);
    LLVMSetInitializer(desc, LLVMConstNamedStruct(desc_ty, dv, 20));
    LLVMSetGlobalConstant(desc, 1);
    LLVMSetAlignment(desc, 8);
    return 0;
}

int cg_compile_model(const ir_graph *g, const cg_target *t, const char *prefix, LLVMModuleRef *out,
                     icc_diag *d)
{
    return cg_compile_model_ext(g, t, prefix, NULL, NULL, out, d);
}

int cg_compile_model_ext(const ir_graph *g, const cg_target *t, const char *prefix, void **weights,
                         int64_t *weights_bytes, LLVMModuleRef *out, icc_diag *d)
{
    *out = NULL;
    mctx c = {.g = g, .t = t, .prefix = prefix && *prefix ? prefix : "model", .d = d, .external = weights != NULL};
    if (find_symbols(&c) < 0 || check_graph(&c) < 0 || bind_values(&c) < 0 || (c.dynamic && dyn_plan(&c) < 0)) {
        free(c.bind);
        free(c.weights);
        dyn_free(&c);
        return -1;
    }
    c.m = LLVMModuleCreateWithName(c.prefix);
    c.cx = LLVMGetModuleContext(c.m);
    cg_target_setup_module(t, c.m);
    c.ptr = LLVMPointerTypeInContext(c.cx, 0);
    c.i8 = LLVMInt8TypeInContext(c.cx);
    c.i32 = LLVMInt32TypeInContext(c.cx);
    c.i64 = LLVMInt64TypeInContext(c.cx);
    LLVMTypeRef kparams[4] = {c.ptr, c.ptr, c.i64, c.i64};
    c.kfn_ty = LLVMFunctionType(LLVMVoidTypeInContext(c.cx), kparams, 4, 0);
    int rc = emit_model(&c);
    free(c.bind);
    dyn_free(&c);
    if (rc < 0) {
        free(c.weights);
        LLVMDisposeModule(c.m);
        return -1;
    }
    if (weights) {
        *weights = c.weights;
        *weights_bytes = c.weights_bytes;
    } else {
        free(c.weights);
    }
    *out = c.m;
    return 0;
}

char *cg_kernels_text(const ir_graph *g, const cg_target *t, const char *prefix, icc_diag *d)
{
    mctx c = {.g = g, .t = t, .prefix = prefix && *prefix ? prefix : "model", .d = d};
    if (find_symbols(&c) < 0 || check_graph(&c) < 0 || bind_values(&c) < 0 || (c.dynamic && dyn_plan(&c) < 0)) {
        free(c.bind);
        free(c.weights);
        dyn_free(&c);
        return NULL;
    }
    size_t len = 0, cap = 0;
    char *all = NULL;
    for (int kx = 0; kx < g->nnodes; kx++) {
        if (c.root[kx] != kx)
            continue;
        char kname[256];
        snprintf(kname, sizeof kname, "%s_k%d", c.prefix, kx);
        kir_kernel *k;
        if (cg_lower_node(g, g->nodes[kx], c.bind, cg_target_vector_bits(t) / 32, kname, &k, d) < 0)
            goto fail;
        char *text = kir_print(k);
        kir_kernel_destroy(k);
        if (!text)
            goto oom;
        size_t n = strlen(text);
        if (len + n + 2 > cap) {
            cap = (len + n + 2) * 2;
            char *na = realloc(all, cap);
            if (!na) {
                free(text);
                goto oom;
            }
            all = na;
        }
        memcpy(all + len, text, n + 1);
        len += n;
        free(text);
    }
    free(c.bind);
    free(c.weights);
    dyn_free(&c);
    return all ? all : calloc(1, 1);
oom:
    ir_errorf(d, "out of memory");
fail:
    free(all);
    free(c.bind);
    free(c.weights);
    dyn_free(&c);
    return NULL;
}
