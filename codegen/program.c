/* program.c - a graph to the backend-neutral program (program.h).
 *
 * Where values live: graph inputs and outputs are the caller's buffers,
 * constants are slices of one weights blob (64-byte aligned, in the
 * library or mapped from model.weights), intermediates sit in the arena
 * at the offsets the plan pass gave them, or, with symbolic dims, in
 * slots laid out per run. Each fused group becomes one kernel at its
 * root (codegen/lower/lower.c), in node order; a node whose op takes its
 * batch dim as static is lowered for one item and looped over by the
 * run. Everything here is decided once for every backend; a backend only
 * turns the result into code (codegen/backend.h).
 */
#include "codegen/program.h"
#include "codegen/cost.h"
#include "icc/runtime.h"
#include "ir/ops.h"
#include "ir/ref/nn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A graph whose nodes become steps: the top level, or a subgraph of a
 * control node (an If's branch), with its own value ids. */
typedef struct {
    const ir_graph *g;
    const ir_node *node;       /* the control node whose subgraph g is; NULL at the top */
    int parent;                /* the scope node belongs to; -1 at the top */
    cg_binding *bind;          /* value id -> where it lives (the kernels' buffers); owned */
    int *root;                 /* node index -> its fused group's root (ir_graph_group_roots); owned */
    cg_binding counter;        /* a Scan body's: its iteration counter (int64, reserved space) */
} pscope;

typedef struct {
    const ir_graph *g;
    const cg_schedule *s;
    icc_diag *d;
    cg_program *p;
    cg_binding *bind;          /* the top level's (scopes[0].bind) */
    int *root;                 /* the top level's (scopes[0].root) */
    pscope *scopes;            /* [0]: the top level, then every subgraph, parents first */
    bool *at_load;             /* top-level node index -> a load-time kernel (ir_graph_load_time) */
    bool *view;                /* top-level node index -> a view of an input (ir_graph_input_views) */
    int64_t *sym_est;          /* symbol id -> its typical value for the cost model (sym_estimates) */
    int nscopes;
    int capsteps;
    kir_kernel *chk;           /* add_check's sink inside a subgraph (check kernels), else NULL */
    kir_block *chk_at;         /* where chk's next check goes: the orelse of the one before
                                  (the first failing check is the one reported) */
} pbuild;

/* FNV-1a, 64-bit: the checksum the runtime verifies for mapped weights.
 * Continues from h, so the blob can be hashed piece by piece without
 * ever being assembled (start with FNV_BASIS). */
#define FNV_BASIS 0xcbf29ce484222325ull
static uint64_t fnv1a(uint64_t h, const unsigned char *p, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* n zero bytes (the blob's alignment padding) */
static uint64_t fnv1a_zeros(uint64_t h, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        h *= 0x100000001b3ull;
    return h;
}

/* ---- which nodes run per batch item ------------------------------------------ */

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
    return !sym || cg_can_lower_symbolic(n);
}

static bool sym_uses(const ir_graph *g, int32_t d, int32_t s);

/* A node whose results have one symbol S as dim 0, whose operands have S
 * at dim 0 or not at all, and none of whose other dims is S or made from
 * it (they may be other symbols: an image's H and W), and whose op treats
 * dim 0 as independent items (a batch: convolutions and pools, per-item
 * normalizations, ops along another axis), can be compiled for one item
 * and called S times by `run`, each call on the next item of every
 * batched buffer. Returns S, or 0. */
static int32_t batch_symbol(const ir_node *n)
{
    int32_t s = n->nout > 0 && n->out[0]->type.rank > 0 ? n->out[0]->type.dims[0].sym : 0;
    if (s <= 0)
        return 0;
    for (int io = 0; io < 2; io++)
        for (int i = 0; i < (io ? n->nout : n->nin); i++) {
            const ir_value *v = io ? n->out[i] : n->in[i];
            if (!v)
                continue;
            if (v->type.rank < 0)
                return 0;
            for (int k = 0; k < v->type.rank; k++) {
                int32_t sym = v->type.dims[k].sym;
                if (sym < 0 || (k == 0 && sym > 0 && sym != s) || (k > 0 && sym_uses(n->graph, sym, s)))
                    return 0;
            }
            if (io && (v->type.rank < 1 || v->type.dims[0].sym != s))
                return 0;
        }
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
    /* an unfused MatMul of 3+ dims: dim 0 is a batch of matrices (B's
     * too, or B is one matrix for all) */
    if (n->op == IR_OP_MATMUL && n->group == 0 && n->out[0]->type.rank >= 3 && rank >= 3)
        return s;
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
    bool ok = cg_can_lower(n) && symbolic_ok(n);   /* (other symbols left: H, W) */
    pin_batch(n, s, saved, true);
    return ok;
}

/* The batch symbol node n is lowered per item of (0: as it is, its
 * batch dim read from the symbol table like any other). Per item when
 * its lowering cannot take the symbolic batch, and for the convolutions,
 * pools and batched MatMuls even when it can: their fast schedules
 * (depthwise, tiled, ConvTranspose's phases, the GEMM tile) take the
 * batch as a constant; with a symbolic batch the generic scalar loops ran
 * a detector's upsampling 36 times slower, and a recognizer's [B, T, 120]
 * x [120, 6625] classifier at 2 GFLOP/s. */
static int32_t item_symbol(const cg_program *p, const ir_node *n)
{
    if (!p->dynamic)
        return 0;
    if (symbolic_ok(n) && !(cg_lower_prefers_items(n) && can_lower_batched(n)))
        return 0;
    return batch_symbol(n);
}

/* ---- sizes ------------------------------------------------------------------------ */

/* Value v's byte size as the run computes it. */
static cg_size value_size(const ir_value *v)
{
    cg_size z = {.scale = (int64_t)ir_dtype_size(v->type.dtype), .n = v->type.rank};
    for (int k = 0; k < v->type.rank; k++)
        z.dims[k] = v->type.dims[k];
    return z;
}

/* z with every symbol 1; *fixed says whether z has no symbol at all.
 * Unsigned, so that it wraps the way a backend's 64-bit arithmetic does. */
static int64_t size_at_one(const cg_size *z, bool *fixed)
{
    uint64_t n = (uint64_t)z->scale;
    bool f = true;
    for (int k = 0; k < z->n; k++) {
        f &= z->dims[k].sym <= 0;
        n *= z->dims[k].sym > 0 ? 1 : (uint64_t)z->dims[k].v;
    }
    if (fixed)
        *fixed = f;
    return (int64_t)n;
}

/* ---- symbols, checks, bindings ------------------------------------------------ */

/* The scopes: the top level (its bind and root are c->bind and c->root),
 * then each If's and Loop's subgraphs, parents before children, so that a
 * subgraph's captures are bound when it is. */
static int add_scope(pbuild *c, const ir_graph *g, const ir_node *node, int parent)
{
    pscope *ns = realloc(c->scopes, sizeof *ns * ((size_t)c->nscopes + 1));
    if (!ns)
        return ir_errorf(c->d, "out of memory");
    c->scopes = ns;
    pscope *sc = &ns[c->nscopes++];
    *sc = (pscope){.g = g, .node = node, .parent = parent};
    sc->root = malloc(sizeof *sc->root * ((size_t)g->nnodes + 1));
    if (!sc->root || ir_graph_group_roots(g, sc->root) < 0)
        return ir_errorf(c->d, "out of memory");
    return 0;
}

static int collect_scopes(pbuild *c)
{
    if (add_scope(c, c->g, NULL, -1) < 0)
        return -1;
    free(c->scopes[0].root);
    c->scopes[0].root = c->root;   /* freed as c->root */
    for (int si = 0; si < c->nscopes; si++) {
        const ir_graph *g = c->scopes[si].g;
        for (int k = 0; k < g->nnodes; k++) {
            const ir_node *n = g->nodes[k];
            bool control = n->op == IR_OP_IF || n->op == IR_OP_LOOP || n->op == IR_OP_SCAN;
            ir_graph *sub;
            for (int a = 0; control && (sub = ir_node_subgraph(n, &a));)
                if (!sub->infer_error) {
                    if (c->nscopes >= 4096)
                        return ir_node_errorf(c->d, n, "more than 4096 subgraphs");
                    if (add_scope(c, sub, n, si) < 0)
                        return -1;
                }
        }
    }
    /* kernels of every scope read symbols from one table (the plan pass
     * gave subgraphs the top level's ids, ir_graph_share_syms) */
    for (int si = 1; si < c->nscopes; si++) {
        const ir_graph *sg = c->scopes[si].g;
        bool same = sg->nsyms == c->g->nsyms || (sg->nsyms <= 1 && c->g->nsyms <= 1);
        for (int32_t i = 1; same && i < sg->nsyms; i++)
            same = !strcmp(sg->syms[i], c->g->syms[i]);
        if (!same)
            return ir_node_errorf(c->d, c->scopes[si].node, "subgraph '%.100s' has symbols of its own: run the plan "
                                  "pass before compiling", sg->name);
    }
    return 0;
}

/* The scope of subgraph g (a pointer among the scopes), or -1. */
static int scope_of(const pbuild *c, const ir_graph *g)
{
    for (int i = 0; i < c->nscopes; i++)
        if (c->scopes[i].g == g)
            return i;
    return -1;
}

/* The scope of n's subgraph attribute attr, a child of scope si; -1 with
 * d set when there is none. */
static int child_scope(pbuild *c, int si, const ir_node *n, const char *attr)
{
    int i = scope_of(c, ir_attr_graph(n, attr));
    if (i < 0 || c->scopes[i].parent != si)
        return ir_node_errorf(c->d, n, "has no %s", attr);
    return i;
}

/* Marks symbol sym used, with the symbols its definition reads. */
static void mark_sym(const ir_graph *g, char *used, int32_t sym)
{
    if (sym <= 0 || sym >= g->nsyms || used[sym])
        return;
    used[sym] = 1;
    const ir_sym_def *df = ir_graph_sym_def(g, sym);
    if (df) {
        mark_sym(g, used, df->a.sym);
        mark_sym(g, used, df->b.sym);
    }
}

/* Marks the symbols the values of g use, and those of its control
 * nodes' subgraphs, which share top's ids (ir_graph_share_syms). */
static void mark_values(const ir_graph *top, const ir_graph *g, char *used)
{
    for (int i = 0; i < g->nvalues; i++)
        for (int k = 0; k < g->values[i]->type.rank; k++)
            mark_sym(top, used, g->values[i]->type.dims[k].sym);
    const ir_graph *sub;
    for (int k = 0; k < g->nnodes; k++)
        for (int a = 0; (sub = ir_node_subgraph(g->nodes[k], &a));)
            mark_values(top, sub, used);
}

/* Appends "node 'NAME' (OP): what" (what NULL: without ": what") to the
 * program's messages; returns its 1-based index, or -1. */
static int add_message(pbuild *c, const ir_node *n, const char *what)
{
    cg_program *p = c->p;
    char **m = realloc(p->messages, sizeof *m * ((size_t)p->nmessages + 1));
    if (!m)
        return ir_errorf(c->d, "out of memory");
    p->messages = m;
    size_t len = strlen(n->name) + (what ? strlen(what) : 0) + 64;
    if (!(m[p->nmessages] = malloc(len)))
        return ir_errorf(c->d, "out of memory");
    snprintf(m[p->nmessages], len, "node '%s' (%s)%s%s", n->name, ir_ops[n->op].name, what ? ": " : "",
             what ? what : "");
    return ++p->nmessages;
}

/* Whether dim symbol d is s or defined through it. */
static bool sym_uses(const ir_graph *g, int32_t d, int32_t s)
{
    if (d <= 0)
        return false;
    if (d == s)
        return true;
    const ir_sym_def *df = ir_graph_sym_def(g, d);
    return df && d > s && (sym_uses(g, df->a.sym, s) || sym_uses(g, df->b.sym, s));
}

/* The first node of g (or of a subgraph inside, before the node holding
 * it) whose results' dims use symbol s, or NULL. */
static const ir_node *first_user(const ir_graph *top, const ir_graph *g, int32_t s)
{
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        const ir_graph *sub;
        for (int a = 0; (sub = ir_node_subgraph(n, &a));) {
            const ir_node *f = first_user(top, sub, s);
            if (f)
                return f;
        }
        for (int o = 0; o < n->nout; o++)
            for (int d = 0; n->out[o] && d < n->out[o]->type.rank; d++)
                if (sym_uses(top, n->out[o]->type.dims[d].sym, s))
                    return n;
    }
    return NULL;
}

/* Names, for each derived symbol of the descriptor, the first node whose
 * results' dims use it (the runtime's message when the input dims make it
 * negative: icc_sym_def.message). */
static int name_derived(pbuild *c)
{
    const ir_graph *g = c->g;
    cg_program *p = c->p;
    if (!p->nderived)
        return 0;
    if (!(p->derived_message = calloc((size_t)p->nderived, sizeof *p->derived_message)))
        return ir_errorf(c->d, "out of memory");
    for (int32_t s = 1; s < g->nsyms; s++) {
        int i = p->sym_desc[s] - (p->nsymbols - p->nderived);
        if (p->sym_desc[s] < 0 || i < 0)
            continue;
        const ir_node *first = first_user(g, g, s);
        if (first && (p->derived_message[i] = add_message(c, first, NULL)) < 0)
            return -1;
    }
    return 0;
}

/* The derived symbols some value of the graph or of its subgraphs uses
 * (directly or through another's definition) whose free symbols the
 * inputs bind join the descriptor after the bound ones, in id order (a definition names only
 * earlier ids), so the runtime computes them from the input dims. One
 * over a symbol no input binds stays out: check_values refuses it. */
static int find_derived(pbuild *c)
{
    const ir_graph *g = c->g;
    cg_program *p = c->p;
    char *used = calloc((size_t)g->nsyms + 1, 1), *top = calloc((size_t)g->nsyms + 1, 1);
    p->derived_in_sub = calloc((size_t)g->nsyms + 1, sizeof *p->derived_in_sub);
    if (!used || !top || !p->derived_in_sub) {
        free(used);
        free(top);
        return ir_errorf(c->d, "out of memory");
    }
    mark_values(g, g, used);
    for (int i = 0; i < g->nvalues; i++)
        for (int k = 0; k < g->values[i]->type.rank; k++)
            mark_sym(g, top, g->values[i]->type.dims[k].sym);
    /* an alias's symbols, for its check (alias_checks), though no value
     * has the aliased one any more */
    for (const ir_sym_alias *a = g->aliases; a; a = a->next) {
        mark_sym(g, used, a->from);
        mark_sym(g, used, a->to);
        mark_sym(g, top, a->from);
        mark_sym(g, top, a->to);
    }
    for (int32_t s = 1; s < g->nsyms; s++) {
        const ir_sym_def *df = ir_graph_sym_def(g, s);
        if (!used[s] || !df || (df->a.sym > 0 && p->sym_desc[df->a.sym] < 0) ||
            (df->b.sym > 0 && p->sym_desc[df->b.sym] < 0))
            continue;
        ir_sym_def *nd = realloc(p->derived, sizeof *nd * ((size_t)p->nderived + 1));
        if (!nd) {
            free(used);
            free(top);
            return ir_errorf(c->d, "out of memory");
        }
        p->derived = nd;
        p->derived_in_sub[p->nderived] = !top[s];
        p->derived[p->nderived++] = *df;
        p->symbol_names[p->nsymbols] = ir_graph_sym_name(g, s);
        p->sym_desc[s] = p->nsymbols++;
    }
    free(used);
    free(top);
    return 0;
}

/* The cost model's symbol values (cost.h): a symbol that is only ever an
 * input's dim 0 (a batch, usually small) at 1, any other (a height, a
 * width, a sequence) at 64, derived ones computed from those (an image's
 * last stage then has 64/32 = 2 rows). Taking every symbol as 1 ran a
 * symbolic MobileNet's kernels serially on 2 threads. NULL (all 1) when a
 * derived value would be negative, or out of memory. */
static int64_t *sym_estimates(const ir_graph *g)
{
    int64_t *est = malloc(sizeof *est * ((size_t)g->nsyms + 1));
    if (!est)
        return NULL;
    for (int s = 0; s <= g->nsyms; s++)
        est[s] = ir_graph_sym_def(g, s) ? -1 : 1;
    for (int i = 0; i < g->ninputs; i++)
        for (int k = 1; k < g->inputs[i]->type.rank; k++) {
            int32_t s = g->inputs[i]->type.dims[k].sym;
            if (s > 0 && s < g->nsyms && !ir_graph_sym_def(g, s))
                est[s] = 64;
        }
    int32_t bad;
    if (ir_graph_sym_values(g, est, &bad) < 0) {
        free(est);
        return NULL;
    }
    return est;
}

/* Symbols bound by the inputs, numbered in order of first appearance. */
static int find_symbols(pbuild *c)
{
    const ir_graph *g = c->g;
    cg_program *p = c->p;
    p->nsyms = g->nsyms;
    p->sym_desc = malloc(sizeof *p->sym_desc * ((size_t)g->nsyms + 1));
    p->symbol_names = calloc((size_t)g->nsyms + 1, sizeof *p->symbol_names);
    if (!p->sym_desc || !p->symbol_names)
        return ir_errorf(c->d, "out of memory");
    for (int s = 0; s <= g->nsyms; s++)
        p->sym_desc[s] = -1;
    for (int i = 0; i < g->ninputs; i++)
        for (int k = 0; k < g->inputs[i]->type.rank; k++) {
            int32_t sym = g->inputs[i]->type.dims[k].sym;
            if (sym > 0 && sym < g->nsyms && p->sym_desc[sym] < 0) {
                p->symbol_names[p->nsymbols] = ir_graph_sym_name(g, sym);
                p->sym_desc[sym] = p->nsymbols++;
            }
        }
    if (find_derived(c) < 0 || name_derived(c) < 0)
        return -1;
    if (g->nsyms > 1)
        c->sym_est = sym_estimates(g);
    p->dynamic = p->nsymbols > 0;
    /* A fused group is one kernel, at its root; its other members' results
     * stay inside it (no memory, no kernel of their own). */
    c->root = malloc(sizeof *c->root * ((size_t)g->nnodes + 1));
    if (!c->root || ir_graph_group_roots(g, c->root) < 0)
        return ir_errorf(c->d, "out of memory");
    return collect_scopes(c);
}

/* The top level's load-time kernels (ir_graph_load_time), the rule the
 * plan pass followed in leaving their results out of the arena. */
static int find_load_time(pbuild *c)
{
    c->at_load = calloc((size_t)c->g->nnodes + 1, sizeof *c->at_load);
    c->view = calloc((size_t)c->g->nnodes + 1, sizeof *c->view);
    if (!c->at_load || !c->view || ir_graph_load_time(c->g, c->root, c->at_load) < 0 ||
        ir_graph_input_views(c->g, c->root, c->view) < 0)
        return ir_errorf(c->d, "out of memory");
    return 0;
}

/* ---- what decides an unknown dim ---------------------------------------------- */

static bool has_unknown_dim(const ir_value *v)
{
    if (v->type.rank < 0)
        return true;
    for (int k = 0; k < v->type.rank; k++)
        if (v->type.dims[k].sym < 0)
            return true;
    return false;
}

/* The node where dims first become unknown on the way to v: v's producer
 * if its inputs' dims are all known, else the same search from the first
 * input that has an unknown one. NULL for an input or a constant. */
static const ir_node *unknown_origin(const ir_value *v)
{
    while (v && v->kind == IR_VAL_NODE) {
        const ir_node *n = v->def;
        const ir_value *up = NULL;
        for (int i = 0; i < n->nin && !up; i++)
            if (n->in[i] && has_unknown_dim(n->in[i]))
                up = n->in[i];
        if (!up)
            return n;
        v = up;
    }
    return NULL;
}

/* For each value of g, a bit per graph input (the first 64) whose values
 * (not only its shape: Shape and Size cut the chain) flow into it; NULL
 * on out of memory. */
static uint64_t *value_deps(const ir_graph *g)
{
    uint64_t *dep = calloc((size_t)g->nvalues + 1, sizeof *dep);
    if (!dep)
        return NULL;
    for (int i = 0; i < g->ninputs && i < 64; i++)
        dep[g->inputs[i]->id] = 1ull << i;
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *nd = g->nodes[k];
        uint64_t m = 0;
        if (!(ir_ops[nd->op].flags & IR_F_SHAPE_ONLY))
            for (int i = 0; i < nd->nin; i++)
                m |= nd->in[i] ? dep[nd->in[i]->id] : 0;
        for (int i = 0; i < nd->nout; i++)
            dep[nd->out[i]->id] = m;
    }
    return dep;
}

/* The names of the inputs of bits m, joined into buf. */
static void dep_names(const ir_graph *g, uint64_t m, char *buf, size_t n)
{
    buf[0] = 0;
    for (int i = 0; i < g->ninputs && i < 64; i++)
        if (m >> i & 1)
            snprintf(buf + strlen(buf), n - strlen(buf), "%s'%.60s'", buf[0] ? ", " : "", g->inputs[i]->name);
}

/* Which graph inputs' values flow into the shape operands of origin, as
 * names joined into buf; the empty string when none do. */
static void value_inputs(const ir_graph *g, const ir_node *origin, char *buf, size_t n)
{
    uint64_t *dep = value_deps(g);
    buf[0] = 0;
    if (!dep)
        return;
    /* the data input (0) of a node with others carries no shape: Reshape's
     * shape, Expand's, Slice's ends decide; of one-input ops, the values of
     * NonZero's, Unique's and ConstantOfShape's (its shape) do, the others'
     * dims (a pool's ceil_mode window that may start in the padding, a
     * Squeeze without axes) */
    uint64_t m = 0;
    bool data = origin->nin > 1 ? origin->op == IR_OP_RANGE
                                : origin->op == IR_OP_NON_ZERO || origin->op == IR_OP_UNIQUE ||
                                      origin->op == IR_OP_CONSTANT_OF_SHAPE;
    for (int i = data ? 0 : 1; i < origin->nin; i++)
        m |= origin->in[i] ? dep[origin->in[i]->id] : 0;
    dep_names(g, m, buf, n);
    free(dep);
}

/* Marks (mark_sym) the symbols whose run values decide v through shape
 * arithmetic: `x.shape[2] == 1` reads the dim of x's axis 2, a derived one
 * made of the input dims it comes from. Walks back from v to the values
 * whose elements shape inference knows, visiting at most *budget values
 * (the walk does not remember where it has been). */
static void dim_syms(const ir_graph *g, const ir_value *v, int *budget, char *used)
{
    ir_shape_value sv;
    if (!v || --*budget < 0)
        return;
    if (ir_value_shape_value(v, &sv) && sv.known) {
        bool all = true;
        for (int i = 0; i < sv.n; i++)
            all &= sv.e[i].sym >= 0;
        if (all) {
            for (int i = 0; i < sv.n; i++)
                mark_sym(g, used, sv.e[i].sym);
            return;
        }
    }
    if (v->kind != IR_VAL_NODE || !v->def)
        return;
    for (int i = 0; i < v->def->nin; i++)
        dim_syms(g, v->def->in[i], budget, used);
}

static void dim_text(const ir_graph *g, ir_dim dm, char *buf, size_t n);

/* The input dims among the symbols marked used, as "S (dim K of 'IN')",
 * and --shape for the first input holding one, those dims written <n>. */
static void pin_hint(const ir_graph *g, const char *used, char *buf, size_t len)
{
    char dims[300] = "", shape[300] = "";
    int shape_in = -1;
    for (int32_t s = 1; s < g->nsyms; s++) {
        int at = -1, ak = -1;
        for (int i = 0; used[s] && at < 0 && i < g->ninputs; i++)
            for (int k = 0; at < 0 && k < g->inputs[i]->type.rank; k++)
                if (g->inputs[i]->type.dims[k].sym == s)
                    at = i, ak = k;
        if (at < 0)
            continue;
        snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%s%s (dim %d of '%.60s')", dims[0] ? ", " : "",
                 ir_graph_sym_name(g, s), ak, g->inputs[at]->name);
        if (shape_in < 0)
            shape_in = at;
    }
    if (shape_in < 0) {
        buf[0] = 0;
        return;
    }
    const ir_type *t = &g->inputs[shape_in]->type;
    for (int k = 0; k < t->rank; k++) {
        char d[128];
        if (t->dims[k].sym > 0 && t->dims[k].sym < g->nsyms && used[t->dims[k].sym])
            snprintf(d, sizeof d, "<n>");
        else
            dim_text(g, t->dims[k], d, sizeof d);
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%s", k ? "x" : "", d);
    }
    snprintf(buf, len, ": %s; e.g. --shape=%.60s:%s", dims, g->inputs[shape_in]->name, shape);
}

/* What would decide top-level If n's condition at compile time, for the
 * refusal of an If whose branches differ: binding the inputs whose
 * values it reads, or, when it reads only dims (PyTorch's `if
 * x.shape[-1] == 1`), pinning those. Empty for a nested If. */
static void if_hint(const pbuild *c, const ir_node *n, char *buf, size_t len)
{
    buf[0] = 0;
    const ir_value *cond = n->in[0];
    if (n->graph != c->g || cond->kind != IR_VAL_NODE)
        return;
    uint64_t *dep = value_deps(c->g);
    char names[400];
    if (!dep)
        return;
    dep_names(c->g, dep[cond->id], names, sizeof names);
    free(dep);
    if (names[0])
        snprintf(buf, len, " (its condition reads the values of %s: --bind=NAME=FILE.npy folds it)", names);
    else {
        char pin[700] = "", *used = calloc((size_t)c->g->nsyms + 1, 1);
        int budget = 4096;
        if (used) {
            dim_syms(c->g, cond, &budget, used);
            pin_hint(c->g, used, pin, sizeof pin);
            free(used);
        }
        if (pin[0])
            snprintf(buf, len, " (its condition reads only dims, pinning them folds it%s)", pin);
        else
            snprintf(buf, len, " (its condition reads only dims: pin them with --shape=NAME:DIMS to fold it)");
    }
}

/* A type as text for messages: "f32[2,3]", '?' for a dim not fixed. */
static void dim_text(const ir_graph *g, ir_dim dm, char *buf, size_t n)
{
    if (dm.sym > 0)
        snprintf(buf, n, "%s", ir_graph_sym_name(g, dm.sym));
    else
        snprintf(buf, n, "%lld", (long long)dm.v);
}

/* t as text, a symbol by its name (every scope shares the top level's
 * ids), an unknown dim as ?. */
static void type_text(const ir_graph *g, const ir_type *t, char *buf, size_t n)
{
    if (t->rank < 0) {
        snprintf(buf, n, "%s of unknown rank", ir_dtype_name(t->dtype));
        return;
    }
    size_t at = (size_t)snprintf(buf, n, "%s[", ir_dtype_name(t->dtype));
    for (int k = 0; k < t->rank && at < n; k++) {
        char d[128] = "?";
        if (t->dims[k].sym >= 0)
            dim_text(g, t->dims[k], d, sizeof d);
        at += (size_t)snprintf(buf + at, n - at, "%s%s", k ? "," : "", d);
    }
    if (at < n)
        snprintf(buf + at, n - at, "]");
}

static bool type_static(const ir_type *t)
{
    if (t->rank < 0)
        return false;
    for (int k = 0; k < t->rank; k++)
        if (t->dims[k].sym)
            return false;
    return true;
}

/* A known rank and every dim a constant or a symbol (check_values then
 * asks the inputs to bind the symbols). */
static bool type_known(const ir_type *t)
{
    if (t->rank < 0)
        return false;
    for (int k = 0; k < t->rank; k++)
        if (t->dims[k].sym < 0)
            return false;
    return true;
}

/* Attribute list entry j, or def when the list is absent or shorter. */
static int64_t list_at(const ir_node *n, const char *name, int j, int64_t def)
{
    const int64_t *v;
    int cnt = ir_attr_ints(n, name, &v);
    return j < cnt ? v[j] : def;
}

/* An If compiles when its condition is one bool and each output has one
 * type that both branches give (dims constant or symbols the inputs
 * bind): the If's output is sized before either branch runs, so the
 * branch taken at run time must fit it. */
static int check_if(pbuild *c, const ir_node *n)
{
    const ir_type *ct = &n->in[0]->type;
    int64_t numel;
    if (ct->dtype != IR_BOOL || !type_static(ct) || !ir_type_numel(ct, &numel) || numel != 1)
        return ir_node_errorf(c->d, n, "the condition '%.100s' must be one bool to be compiled", n->in[0]->name);
    static const char *const br[2] = {"then_branch", "else_branch"};
    for (int b = 0; b < 2; b++) {
        const ir_graph *sub = ir_attr_graph(n, br[b]);
        if (!sub || sub->noutputs != n->nout)
            return ir_node_errorf(c->d, n, "has no %s of %d outputs", br[b], n->nout);
        for (int i = 0; i < n->nout && !sub->infer_error; i++) {
            const ir_type *bt = &sub->outputs[i]->type, *ot = &n->out[i]->type;
            if (type_known(bt) && ir_type_same(bt, ot))
                continue;
            const ir_graph *other = ir_attr_graph(n, br[!b]);
            char x[160], y[160], hint[500];
            type_text(c->g, bt, x, sizeof x);
            type_text(c->g, other && other->noutputs == n->nout ? &other->outputs[i]->type : ot, y, sizeof y);
            if_hint(c, n, hint, sizeof hint);
            /* both printed alike: a dim shape inference could not give ('?') */
            if (!type_known(bt) && !strcmp(x, y))
                return ir_node_errorf(c->d, n, "output %d ('%.100s') is %s in both branches, a dim unknown until "
                                      "a branch runs: an If whose output shape is not known is not compiled "
                                      "yet%s", i, n->out[i]->name, x, hint);
            return ir_node_errorf(c->d, n, "output %d ('%.100s') is %s in the %s and %s in the %s: an If whose "
                                  "branches do not give one shape is not compiled yet%s", i, n->out[i]->name, x,
                                  br[b], y, br[!b], hint);
        }
    }
    return 0;
}

/* One element of dtype dt, of static type (a trip count, a condition). */
static bool is_scalar(const ir_value *v, ir_dtype dt)
{
    int64_t numel;
    return v->type.dtype == dt && type_static(&v->type) && ir_type_numel(&v->type, &numel) && numel == 1;
}

/* Scan output j (of a Loop or a Scan) compiles when the body gives it
 * one type per iteration and the stacked output's is known (symbols
 * allowed). */
static int check_scan_output(pbuild *c, const ir_node *n, int j, const ir_value *e, const ir_value *o)
{
    if (type_known(&e->type) && type_known(&o->type) && o->type.rank == e->type.rank + 1)
        return 0;
    char x[160], y[160];
    type_text(c->g, &e->type, x, sizeof x);
    type_text(c->g, &o->type, y, sizeof y);
    return ir_node_errorf(c->d, n, "scan output %d ('%.100s') is %s per iteration and %s stacked: a scan output "
                          "without one shape is not compiled yet", j, o->name, x, y);
}

/* Loop's carried value or Scan's state i (node input in, body input in
 * too, body output out) keeps one type through the body (symbols
 * allowed), and the body does not pass another such input on as it: the
 * copy back after an iteration goes input by input, so it would read one
 * already copied. */
static int check_carried(pbuild *c, const ir_node *n, const ir_graph *b, const char *what, int i, int in, int out,
                         int formal)
{
    const ir_type *t0 = &n->in[in]->type, *ti = &b->inputs[in]->type;
    const ir_type *to = &b->outputs[out]->type, *tl = &n->out[i]->type;
    if (!type_known(t0) || !ir_type_same(t0, ti) || !ir_type_same(t0, to) || !ir_type_same(t0, tl)) {
        char x[160], y[160];
        type_text(c->g, t0, x, sizeof x);
        type_text(c->g, to, y, sizeof y);
        return ir_node_errorf(c->d, n, "%s %d ('%.100s') is %s before the body and %s after it: a %s whose %ss do "
                              "not keep one shape is not compiled yet", what, i, n->out[i]->name, x, y,
                              n->op == IR_OP_LOOP ? "Loop" : "Scan", what);
    }
    for (int j = 0; j < formal; j++)
        if (b->outputs[out] == b->inputs[j] && j != in)
            return ir_node_errorf(c->d, n, "%s %d is body input %d passed on, which is not compiled yet", what, i, j);
    return 0;
}

/* A Loop compiles when its trip count and condition (each optional) are
 * one int64 and one bool, and every carried value has one static type
 * before, inside and after the body. Its scan outputs have as many rows
 * as it runs iterations: they compile when that is known (a constant trip
 * count and a body that passes its condition on unchanged), or when the
 * model declares their length (a graph output's shape), which the run
 * then checks (add_rows_check). */
static int check_loop(pbuild *c, const ir_node *n)
{
    const ir_graph *b = ir_attr_graph(n, "body");
    int formal = ir_control_formal_inputs(n), N = formal - 2;
    if (!b || formal < 2 || b->ninputs != formal + n->ncap || b->noutputs != 1 + n->nout || N > n->nout)
        return ir_node_errorf(c->d, n, "has no body of %d inputs and %d outputs", formal + n->ncap, 1 + n->nout);
    if (n->in[0] && !is_scalar(n->in[0], IR_I64))
        return ir_node_errorf(c->d, n, "the trip count '%.100s' must be one int64 to be compiled", n->in[0]->name);
    if (n->in[1] && !is_scalar(n->in[1], IR_BOOL))
        return ir_node_errorf(c->d, n, "the condition '%.100s' must be one bool to be compiled", n->in[1]->name);
    if (!is_scalar(b->outputs[0], IR_BOOL))
        return ir_node_errorf(c->d, n, "the body's condition '%.100s' must be one bool to be compiled",
                              b->outputs[0]->name);
    /* a scan output has as many rows as the loop runs iterations: known
     * only for a constant trip count and a loop that cannot stop early,
     * else the model must declare it */
    for (int j = N; j < n->nout && ir_loop_static_trips(n, NULL, NULL) < 0; j++)
        if (!type_known(&n->out[j]->type) || n->out[j]->type.rank < 1 || n->out[j]->type.dims[0].sym)
            return ir_node_errorf(c->d, n, "scan output %d ('%.100s') is not compiled yet: it has as many rows as "
                                  "the loop runs iterations, which only the run knows (%s), and the model does not "
                                  "declare its length", j - N, n->out[j]->name,
                                  n->in[0] && n->in[0]->kind == IR_VAL_CONST ? "the loop may stop early on its "
                                                                              "condition"
                                                                            : "the trip count is not a constant");
    for (int j = 0; j < n->nout - N; j++)
        if (check_scan_output(c, n, j, b->outputs[1 + N + j], n->out[N + j]) < 0)
            return -1;
    for (int i = 0; i < N; i++)
        if (check_carried(c, n, b, "carried value", i, 2 + i, 1 + i, formal) < 0)
            return -1;
    return 0;
}

/* A Scan compiles when its states keep one type and its scan inputs and
 * outputs have known types (symbols allowed) whose scanned dims are one
 * dim: its length, a constant or a symbol. */
static int check_scan(pbuild *c, const ir_node *n)
{
    const ir_graph *b = ir_attr_graph(n, "body");
    int formal = ir_control_formal_inputs(n), M = (int)ir_attr_int(n, "num_scan_inputs", 0), N = formal - M;
    if (!b || M < 1 || N < 0 || N > n->nout || b->ninputs != formal + n->ncap || b->noutputs != n->nout)
        return ir_node_errorf(c->d, n, "has no body of %d inputs and %d outputs", formal + n->ncap, n->nout);
    for (int i = 0; i < N; i++)
        if (check_carried(c, n, b, "state", i, i, i, formal) < 0)
            return -1;
    ir_dim len = {0, -1};
    for (int j = 0; j < M; j++) {
        const ir_value *x = n->in[N + j];
        int64_t ax = list_at(n, "scan_input_axes", j, 0);
        if (!x || !type_known(&x->type) || x->type.rank < 1 || ax < -x->type.rank || ax >= x->type.rank)
            return ir_node_errorf(c->d, n, "scan input %d must have a known shape to be compiled", j);
        ir_dim l = x->type.dims[ax < 0 ? ax + x->type.rank : ax];
        if (j > 0 && !ir_dim_eq(l, len))
            return ir_node_errorf(c->d, n, "scan input %d is scanned along a dim other than scan input 0's, which "
                                  "is not compiled yet", j);
        len = l;
    }
    for (int j = 0; j < n->nout - N; j++)
        if (check_scan_output(c, n, j, b->outputs[N + j], n->out[N + j]) < 0)
            return -1;
    return 0;
}

/* A derived symbol (ir.h, ir_sym_def: a dim computed from symbolic dims,
 * such as a Conv's output height) compiles when the inputs bind its free
 * symbols (find_derived); one over a symbol no input binds is refused,
 * naming the node that makes it and the dim. The input dims decide it, so
 * the way out is pinning them, not binding values. */
static int refuse_derived(pbuild *c, const ir_graph *g, const ir_value *v, int k)
{
    const char *sym = ir_graph_sym_name(g, v->type.dims[k].sym);
    if (v->kind == IR_VAL_NODE)
        return ir_node_errorf(c->d, v->def, "dim %d of '%.200s' is '%.200s', computed from symbolic dims, which "
                              "is not compiled yet: pin the inputs' dims with --shape=NAME:DIMS", k, v->name, sym);
    return ir_errorf(c->d, "value '%.200s' has the dim '%.200s', computed from symbolic dims, which is not compiled "
                     "yet: pin the inputs' dims with --shape=NAME:DIMS", v->name, sym);
}

/* Every dim of g's values static, or a symbol some input decides (every
 * scope shares the top level's ids); a dim left unknown is traced back to
 * where it came from. */
static int check_values(pbuild *c, const ir_graph *g)
{
    const cg_program *p = c->p;
    for (int i = 0; i < g->nvalues; i++) {
        const ir_value *v = g->values[i];
        for (int k = 0; k < v->type.rank; k++) {
            int32_t sym = v->type.dims[k].sym;
            if (sym > 0 && sym < p->nsyms && ir_graph_sym_def(g, sym) && p->sym_desc[sym] < 0)
                return refuse_derived(c, g, v, k);
            if (sym > 0 && (sym >= p->nsyms || p->sym_desc[sym] < 0))
                return ir_errorf(c->d, "value '%.200s' has the symbolic dim '%s', which no input "
                                 "decides: pin it with --shape", v->name, ir_graph_sym_name(g, sym));
        }
        if (has_unknown_dim(v)) {
            /* the hint to bind inputs only where some input's values really
             * decide the dim; otherwise shape inference could not express it
             * from the input dims, and pinning them is what helps */
            const char *what = v->type.rank < 0 ? "an unknown rank" : "a dim";
            const ir_node *o = unknown_origin(v);
            char names[512] = "";
            const ir_type *sq = o && o->op == IR_OP_SQUEEZE && o->nin == 1 && o->in[0] ? &o->in[0]->type : NULL;
            for (int k = 0; sq && k < sq->rank; k++)
                if (sq->dims[k].sym > 0)
                    snprintf(names + strlen(names), sizeof names - strlen(names), "%s'%.60s'", names[0] ? ", " : "",
                             ir_graph_sym_name(g, sq->dims[k].sym));
            if (sq && names[0])
                /* a Squeeze without axes (opsets before 13) drops every dim
                 * of 1: the input's dims decide its rank, not values */
                return ir_errorf(c->d, "value '%.200s' has %s: node '%.100s' (Squeeze without axes) drops every dim "
                                 "of 1, and whether %s is 1 only the run knows: pin it with --shape=NAME:DIMS",
                                 v->name, what, o->name, names);
            if (o)
                value_inputs(g, o, names, sizeof names);
            if (names[0])
                return ir_errorf(c->d, "value '%.200s' has %s that depends on input values: bind the inputs that "
                                 "decide it with --bind=NAME=FILE.npy (%s, through node '%.100s' (%s))", v->name,
                                 what, names, o->name, ir_ops[o->op].name);
            if (o)
                return ir_errorf(c->d, "value '%.200s' has %s that node '%.100s' (%s) cannot give from symbolic "
                                 "dims: pin them with --shape=NAME:DIMS", v->name, what, o->name,
                                 ir_ops[o->op].name);
            return ir_errorf(c->d, "value '%.200s' has %s: pin it with --shape=NAME:DIMS", v->name, what);
        }
    }
    return 0;
}

/* Every node must lower, every dim be static, every intermediate planned,
 * and outputs be node results listed once. All unsupported nodes are
 * reported together, like the frontend's unsupported ops; an If that
 * cannot be compiled is reported first, with the reason. */
static int check_graph(pbuild *c)
{
    const cg_program *p = c->p;
    for (int si = 0; si < c->nscopes; si++) {
        const ir_graph *g = c->scopes[si].g;
        for (int k = 0; k < g->nnodes; k++) {
            const ir_node *n = g->nodes[k];
            if ((n->op == IR_OP_IF && check_if(c, n) < 0) || (n->op == IR_OP_LOOP && check_loop(c, n) < 0) ||
                (n->op == IR_OP_SCAN && check_scan(c, n) < 0))
                return -1;
        }
    }
    for (int si = 0; si < c->nscopes; si++)
        if (check_values(c, c->scopes[si].g) < 0)
            return -1;
    char list[768] = "";
    int bad = 0, symbolic = 0;
    for (int si = 0; si < c->nscopes; si++) {
        const ir_graph *g = c->scopes[si].g;
        const int *root = c->scopes[si].root;
        for (int k = 0; k < g->nnodes; k++) {
            const ir_node *n = g->nodes[k];
            if (n->op == IR_OP_IF || n->op == IR_OP_LOOP || n->op == IR_OP_SCAN)
                continue;   /* checked above */
            if (cg_can_lower(n) && (!p->dynamic || symbolic_ok(n)))
                continue;
            if (p->dynamic && root[k] == k && can_lower_batched(n))
                continue;
            /* an op that compiles with static dims, but dims not static
             * here: say so, the user can pin them */
            bool sym = false;
            for (int i = 0; i < n->nin + n->nout; i++) {
                const ir_value *v = i < n->nin ? n->in[i] : n->out[i - n->nin];
                sym |= v && !ir_type_is_static(&v->type);
            }
            sym = sym && ir_ops[n->op].family != IR_FAM_NONE;
            if (bad < 8)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s ('%.60s'%s)", bad ? ", " : "",
                         ir_ops[n->op].name, n->name, sym ? ", dims not static" : "");
            bad++;
            symbolic += sym;
        }
    }
    if (bad)
        return ir_errorf(c->d, "%d node%s cannot be compiled yet: %s%s%s", bad, bad == 1 ? "" : "s", list,
                         bad > 8 ? ", ..." : "",
                         symbolic ? "; pinning the inputs' dims with --shape=NAME:DIMS may make them static" : "");
    for (int si = 0; si < c->nscopes; si++) {
        const ir_graph *g = c->scopes[si].g;
        const int *root = c->scopes[si].root;
        for (int k = 0; k < g->nnodes; k++)
            for (int i = 0; i < g->nodes[k]->nout; i++) {
                const ir_value *v = g->nodes[k]->out[i];
                bool is_out = false;
                for (int j = 0; j < g->noutputs; j++)
                    is_out |= g->outputs[j] == v;
                if (!is_out && !v->planned && !p->dynamic && root[k] == k && !(si == 0 && (c->at_load[k] || c->view[k])))
                    return ir_errorf(c->d, "value '%.200s' has no arena offset: run the plan pass last", v->name);
            }
    }
    return 0;
}

/* Whether branch output i is computed by one of the branch's nodes and
 * listed there first: then the branch computes it in place, where the
 * If's output lives. */
static bool branch_computes(const ir_graph *sg, int i)
{
    const ir_value *v = sg->outputs[i];
    if (v->kind != IR_VAL_NODE)
        return false;
    for (int j = 0; j < i; j++)
        if (sg->outputs[j] == v)
            return false;
    return true;
}

/* Bindings, and the weights blob: constants in value order, 64-aligned.
 * The blob is only described here (its pieces point into the graph's
 * constants, its checksum hashed piece by piece); cg_program_weights
 * assembles it for a backend that embeds it, cg_program_write_weights
 * streams it to a file. So a model whose weights are mapped from its
 * external data never holds a second copy of them. */
static int bind_values(pbuild *c)
{
    const ir_graph *g = c->g;
    cg_program *p = c->p;
    int nconst = g->nvalues;
    for (int si = 1; si < c->nscopes; si++)
        nconst += c->scopes[si].g->nvalues;
    c->bind = calloc((size_t)g->nvalues + 1, sizeof *c->bind);
    p->wpieces = calloc((size_t)nconst + 1, sizeof *p->wpieces);
    if (!c->bind || !p->wpieces)
        return ir_errorf(c->d, "out of memory");
    int64_t off = 0;
    uint64_t h = FNV_BASIS;
    for (int i = 0; i < g->nvalues; i++) {
        const ir_value *v = g->values[i];
        if (v->kind == IR_VAL_CONST) {
            int64_t n = (int64_t)v->cval.nbytes, padded = (n + 63) & ~(int64_t)63;
            c->bind[i] = (cg_binding){KIR_BUF_WEIGHT, 0, off};
            if (n)
                p->wpieces[p->nwpieces++] = (cg_weight_piece){off, n, v->cval.data};
            h = fnv1a_zeros(fnv1a(h, v->cval.data, n), padded - n);
            off += padded;
        } else if (v->planned) {
            c->bind[i] = (cg_binding){KIR_BUF_ARENA, 0, v->offset};
        }
    }
    for (int i = 0; i < g->ninputs; i++)
        c->bind[g->inputs[i]->id] = (cg_binding){KIR_BUF_INPUT, i, 0};
    /* reshapes of an input read its buffer (ir_graph_input_views) */
    for (int k = 0; k < g->nnodes; k++)
        if (c->view[k])
            c->bind[g->nodes[k]->out[0]->id] = c->bind[g->nodes[k]->in[0]->id];
    /* A node's result listed as several outputs is computed into the
     * first; outputs that are inputs or constants are copies (plan_copies). */
    for (int i = g->noutputs - 1; i >= 0; i--)
        if (g->outputs[i]->kind == IR_VAL_NODE)
            c->bind[g->outputs[i]->id] = (cg_binding){KIR_BUF_OUTPUT, i, 0};
    c->scopes[0].bind = c->bind;
    /* A subgraph's constants join the blob, its planned intermediates sit
     * at their offsets (the plan put them above everything live while its
     * node runs); its inputs and outputs are bound by bind_scopes. */
    for (int si = 1; si < c->nscopes; si++) {
        pscope *sc = &c->scopes[si];
        const ir_graph *sg = sc->g;
        if (!(sc->bind = calloc((size_t)sg->nvalues + 1, sizeof *sc->bind)))
            return ir_errorf(c->d, "out of memory");
        for (int i = 0; i < sg->nvalues; i++) {
            const ir_value *v = sg->values[i];
            if (v->kind == IR_VAL_CONST) {
                int64_t nb = (int64_t)v->cval.nbytes, padded = (nb + 63) & ~(int64_t)63;
                sc->bind[i] = (cg_binding){KIR_BUF_WEIGHT, 0, off};
                if (nb)
                    p->wpieces[p->nwpieces++] = (cg_weight_piece){off, nb, v->cval.data};
                h = fnv1a_zeros(fnv1a(h, v->cval.data, nb), padded - nb);
                off += padded;
            } else if (v->planned) {
                sc->bind[i] = (cg_binding){KIR_BUF_ARENA, 0, v->offset};
            }
        }
    }
    p->weights_bytes = off;
    p->weights_checksum = h;
    return 0;
}

const unsigned char *cg_program_weights(cg_program *p, icc_diag *d)
{
    if (p->weights)
        return p->weights;
    p->weights = calloc(1, (size_t)p->weights_bytes + 1);
    if (!p->weights) {
        ir_errorf(d, "out of memory for %lld bytes of weights", (long long)p->weights_bytes);
        return NULL;
    }
    for (int i = 0; i < p->nwpieces; i++)
        memcpy(p->weights + p->wpieces[i].offset, p->wpieces[i].data, (size_t)p->wpieces[i].bytes);
    return p->weights;
}

/* write(2) all of buf, retrying short writes */
static bool write_all(int fd, const void *buf, size_t n)
{
    const unsigned char *b = buf;
    while (n) {
        ssize_t w = write(fd, b, n > ((size_t)1 << 30) ? (size_t)1 << 30 : n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        b += w;
        n -= (size_t)w;
    }
    return true;
}

int cg_program_write_weights(const cg_program *p, const char *path, icc_diag *d)
{
    size_t n = strlen(path) + 32;
    char *tmp = malloc(n);
    if (!tmp)
        return ir_errorf(d, "out of memory");
    snprintf(tmp, n, "%s.tmp%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        ir_errorf(d, "%s: %s", path, strerror(errno));
        free(tmp);
        return -1;
    }
    static const unsigned char zeros[64];
    bool ok = true;
    int64_t at = 0;
    for (int i = 0; i < p->nwpieces && ok; i++) {
        const cg_weight_piece *w = &p->wpieces[i];
        ok = write_all(fd, zeros, (size_t)(w->offset - at)) && write_all(fd, w->data, (size_t)w->bytes);
        at = w->offset + w->bytes;
    }
    ok = ok && write_all(fd, zeros, (size_t)(p->weights_bytes - at));
    int err = errno;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) < 0) {
        unlink(tmp);
        free(tmp);
        return ir_errorf(d, "%s: write failed: %s", path, strerror(err ? err : errno));
    }
    free(tmp);
    return 0;
}

/* ---- the arena ------------------------------------------------------------------- */

/* Node k (a group's root) is a reshape whose data input has an arena
 * slot and dies at k, of its dtype: its result takes the slot (the same
 * bytes in the same order, as the plan pass does with static sizes; the
 * run checks the element counts first), the slot's value living on until
 * the result's last use. */
static bool arena_view(pbuild *c, int k, int *last)
{
    const ir_node *n = c->g->nodes[k];
    if (!ir_op_is_reshape(n->op) || n->nout != 1 || n->nin < 1 || !n->in[0])
        return false;
    const ir_value *x = n->in[0], *y = n->out[0];
    const cg_binding *b = &c->bind[x->id];
    if (x->kind != IR_VAL_NODE || b->kind != KIR_BUF_ARENA || b->offset < 0 || b->offset >= c->p->nslots ||
        last[x->id] != k || x->type.dtype != y->type.dtype || y->type.rank < 0)
        return false;
    for (int d = 0; d < y->type.rank; d++)
        if (y->type.dims[d].sym < 0)
            return false;
    int uid = c->p->slots[b->offset].value;
    c->bind[y->id] = *b;
    if (last[y->id] > last[uid])
        last[uid] = last[y->id];
    return true;
}

/* A new arena slot of `bytes` for value id `value` of its scope's graph
 * (-1: none, a counter), live with the slots open[0..nopen) and with
 * those among [from, nslots) whose values' lifetimes (def, last: node
 * indices in the same graph) overlap its own [d, l]. Its index, or -1. */
static int add_slot(pbuild *c, int value, cg_size bytes, const int *open, int nopen, int from, const int *def,
                    const int *last, int d, int l)
{
    cg_program *p = c->p;
    int slot = p->nslots, nconf = 0;
    int *conf = malloc(sizeof *conf * ((size_t)nopen + (size_t)(slot - from) + 1));
    if (!conf)
        return ir_errorf(c->d, "out of memory");
    for (int i = 0; i < nopen; i++)
        conf[nconf++] = open[i];
    for (int u = from; u < slot; u++) {
        int uid = p->slots[u].value;
        if (uid < 0 || (def[uid] <= l && d <= last[uid]))
            conf[nconf++] = u;
    }
    conf[nconf] = -1;
    p->slots[slot] = (cg_slot){.value = value, .bytes = bytes, .live_with = conf};
    p->nslots++;
    return slot;
}

/* Slot s's bytes at the cost model's symbol values (sym_estimates: an
 * image's H and W 64), 64-aligned, at least 64. */
static int64_t slot_estimate(const pbuild *c, int s)
{
    const cg_size *z = &c->p->slots[s].bytes;
    double n = (double)z->scale;
    for (int k = 0; k < z->n; k++) {
        int32_t y = z->dims[k].sym;
        n *= y > 0 ? (c->sym_est && y < c->g->nsyms && c->sym_est[y] > 0 ? (double)c->sym_est[y] : 1) : (double)z->dims[k].v;
    }
    n = n < 64 ? 64 : n > 1e15 ? 1e15 : n;
    return ((int64_t)n + 63) & ~(int64_t)63;
}

static int cmp_i64_pair(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Which of two slots live together goes above the other: as a first-fit
 * layout of the slots at their estimated sizes would place them (each at
 * the lowest offset where it overlaps none of the earlier slots it is
 * live with), so a slot freed below a long-lived one is used again. Each
 * slot's live_with becomes the slots live with it placed lower, and
 * slot_order the slots by that offset. (The run's offsets stay safe for
 * any sizes: of two slots live together, one always goes above the
 * other's end.) Taking every slot above all earlier ones it is live with
 * made a symbolic detector's arena 8x its static one at 480x640. */
static int order_slots(pbuild *c)
{
    cg_program *p = c->p;
    int n = p->nslots, ncon = 0;
    for (int s = 0; s < n; s++)
        for (const int *u = p->slots[s].live_with; *u >= 0; u++)
            ncon++;
    int64_t *est = malloc(sizeof *est * ((size_t)n + 1)), *off = malloc(sizeof *off * ((size_t)n + 1));
    int64_t *cand = malloc(sizeof *cand * 2 * ((size_t)(ncon > n ? ncon : n) + 2));
    int *deg = calloc((size_t)n + 1, sizeof *deg), *at = calloc((size_t)n + 2, sizeof *at);
    int *adj = malloc(sizeof *adj * (2 * (size_t)ncon + 1));
    p->slot_order = malloc(sizeof *p->slot_order * ((size_t)n + 1));
    int rc = 0;
    if (!est || !off || !cand || !deg || !at || !adj || !p->slot_order) {
        rc = ir_errorf(c->d, "out of memory");
        goto done;
    }
    /* the symmetric "live together" lists */
    for (int s = 0; s < n; s++)
        for (const int *u = p->slots[s].live_with; *u >= 0; u++)
            deg[s]++, deg[*u]++;
    for (int s = 0; s < n; s++)
        at[s + 1] = at[s] + deg[s], deg[s] = 0;
    for (int s = 0; s < n; s++)
        for (const int *u = p->slots[s].live_with; *u >= 0; u++) {
            adj[at[s] + deg[s]++] = *u;
            adj[at[*u] + deg[*u]++] = s;
        }
    /* first fit in slot order, at the estimated sizes */
    for (int s = 0; s < n; s++) {
        est[s] = slot_estimate(c, s);
        int nc = 0;
        for (const int *u = p->slots[s].live_with; *u >= 0; u++)
            cand[2 * nc] = off[*u], cand[2 * nc + 1] = off[*u] + est[*u], nc++;
        qsort(cand, (size_t)nc, 2 * sizeof *cand, cmp_i64_pair);
        int64_t o = 0;
        for (int i = 0; i < nc; i++) {
            if (cand[2 * i] >= o + est[s])
                break;   /* fits below the next one */
            o = cand[2 * i + 1] > o ? cand[2 * i + 1] : o;
        }
        off[s] = o;
    }
    /* each slot goes above the slots live with it placed lower */
    for (int s = 0; s < n; s++) {
        int m = 0;
        for (int i = at[s]; i < at[s + 1]; i++)
            if (off[adj[i]] < off[s] || (off[adj[i]] == off[s] && adj[i] < s))
                m++;
        int *lw = malloc(sizeof *lw * ((size_t)m + 1));
        if (!lw) {
            rc = ir_errorf(c->d, "out of memory");
            goto done;
        }
        m = 0;
        for (int i = at[s]; i < at[s + 1]; i++)
            if (off[adj[i]] < off[s] || (off[adj[i]] == off[s] && adj[i] < s))
                lw[m++] = adj[i];
        lw[m] = -1;
        free(p->slots[s].live_with);
        p->slots[s].live_with = lw;
    }
    /* by offset (then index): every slot's live_with comes before it */
    for (int s = 0; s < n; s++)
        cand[2 * s] = off[s], cand[2 * s + 1] = s;
    qsort(cand, (size_t)n, 2 * sizeof *cand, cmp_i64_pair);
    for (int s = 0; s < n; s++)
        p->slot_order[s] = (int)cand[2 * s + 1];
done:
    free(est);
    free(off);
    free(cand);
    free(deg);
    free(at);
    free(adj);
    return rc;
}

/* Each value's defining node and last use in g (node indices; a use
 * inside a fused group counts at its root), -1 for neither. */
static void lifetimes(const ir_graph *g, const int *root, int *def, int *last)
{
    for (int i = 0; i < g->nvalues; i++)
        def[i] = last[i] = -1;
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        for (int i = 0; i < n->nin; i++)
            if (n->in[i])
                last[n->in[i]->id] = root[k];
        for (int i = 0; i < n->nout; i++)
            def[n->out[i]->id] = last[n->out[i]->id] = k;
    }
}

static int layout_children(pbuild *c, int si, const int *open, int nopen, int from, const int *def,
                           const int *last);

/* The output of scope sc's control node that its subgraph's output i is
 * computed in (an If's computed outputs, a Loop's carried values, a
 * Scan's states), or -1: passed on (a copy), or in space of its own (a
 * Loop's condition, scan outputs' rows). */
static int output_outside(const pscope *sc, int i)
{
    const ir_node *n = sc->node;
    if (!branch_computes(sc->g, i))
        return -1;
    if (n->op == IR_OP_IF)
        return i < n->nout ? i : -1;
    int formal = ir_control_formal_inputs(n), first = n->op == IR_OP_LOOP ? 1 : 0;
    int N = n->op == IR_OP_LOOP ? formal - 2 : formal - (int)ir_attr_int(n, "num_scan_inputs", 0);
    return i >= first && i - first < N ? i - first : -1;
}

/* The slots of subgraph scope si in a dynamic program, live with open
 * (every slot live while its node runs, in the scopes around it): first
 * those live through the whole subgraph (a Loop's or Scan's body inputs
 * and counter, the body outputs kept in space of their own: what
 * bind_scopes reserves with static sizes), then its intermediates, as at
 * the top level, then its own subgraphs'. An If's two branches never run
 * together, so they may share bytes; so may one body's iterations. */
static int layout_scope(pbuild *c, int si, const int *open, int nopen)
{
    pscope *sc = &c->scopes[si];
    const ir_graph *g = sc->g;
    const ir_node *n = sc->node;
    cg_program *p = c->p;
    int nv = g->nvalues, rc = 0;
    int *def = malloc(sizeof *def * ((size_t)nv + 1)), *last = malloc(sizeof *last * ((size_t)nv + 1));
    int *whole = malloc(sizeof *whole * ((size_t)nopen + (size_t)g->ninputs + (size_t)g->noutputs + 2));
    if (!def || !last || !whole) {
        free(def);
        free(last);
        free(whole);
        return ir_errorf(c->d, "out of memory");
    }
    lifetimes(g, sc->root, def, last);
    if (nopen)
        memcpy(whole, open, sizeof *whole * (size_t)nopen);
    int nwhole = nopen, from = p->nslots;
    if (n->op == IR_OP_LOOP || n->op == IR_OP_SCAN) {
        int formal = ir_control_formal_inputs(n);
        for (int i = 0; i < formal && i < g->ninputs && rc >= 0; i++) {
            const ir_value *v = g->inputs[i];
            if ((rc = add_slot(c, -1, value_size(v), whole, nwhole, p->nslots, def, last, 0, 0)) >= 0) {
                sc->bind[v->id] = (cg_binding){KIR_BUF_ARENA, 0, rc};
                whole[nwhole++] = rc;
            }
        }
        if (n->op == IR_OP_SCAN && rc >= 0 &&
            (rc = add_slot(c, -1, (cg_size){.scale = 8}, whole, nwhole, p->nslots, def, last, 0, 0)) >= 0) {
            sc->counter = (cg_binding){KIR_BUF_ARENA, 0, rc};
            whole[nwhole++] = rc;
        }
        for (int i = 0; i < g->noutputs && rc >= 0; i++) {
            const ir_value *v = g->outputs[i];
            if (!branch_computes(g, i) || output_outside(sc, i) >= 0)
                continue;
            if ((rc = add_slot(c, -1, value_size(v), whole, nwhole, p->nslots, def, last, 0, 0)) >= 0) {
                sc->bind[v->id] = (cg_binding){KIR_BUF_ARENA, 0, rc};
                whole[nwhole++] = rc;
            }
        }
    }
    from = p->nslots;
    for (int k = 0; k < g->nnodes && rc >= 0; k++)
        for (int i = 0; i < g->nodes[k]->nout && rc >= 0; i++) {
            const ir_value *v = g->nodes[k]->out[i];
            bool listed = false;
            for (int j = 0; j < g->noutputs; j++)
                listed |= g->outputs[j] == v;
            if (sc->root[k] != k || listed)
                continue;   /* inside a fused group, or bound above */
            if ((rc = add_slot(c, v->id, value_size(v), whole, nwhole, from, def, last, def[v->id], last[v->id])) >= 0)
                sc->bind[v->id] = (cg_binding){KIR_BUF_ARENA, 0, rc};
        }
    if (rc >= 0)
        rc = layout_children(c, si, whole, nwhole, from, def, last);
    free(def);
    free(last);
    free(whole);
    return rc < 0 ? -1 : 0;
}

/* The subgraphs of scope si's control nodes, each live with open and
 * with the scope's slots [from, nslots) live at its node. */
static int layout_children(pbuild *c, int si, const int *open, int nopen, int from, const int *def,
                           const int *last)
{
    cg_program *p = c->p;
    const ir_graph *g = c->scopes[si].g;
    int *at = malloc(sizeof *at * ((size_t)nopen + (size_t)(p->nslots - from) + 1));
    if (!at)
        return ir_errorf(c->d, "out of memory");
    int rc = 0, end = p->nslots;
    for (int k = 0; k < g->nnodes && rc == 0; k++) {
        const ir_node *n = g->nodes[k];
        if (n->op != IR_OP_IF && n->op != IR_OP_LOOP && n->op != IR_OP_SCAN)
            continue;
        if (nopen)
            memcpy(at, open, sizeof *at * (size_t)nopen);
        int nat = nopen;
        for (int u = from; u < end; u++) {
            int uid = p->slots[u].value;
            if (uid >= 0 && def[uid] <= k && k <= last[uid])
                at[nat++] = u;
        }
        for (int ci = si + 1; ci < c->nscopes && rc == 0; ci++)
            if (c->scopes[ci].parent == si && c->scopes[ci].node == n)
                rc = layout_scope(c, ci, at, nat);
    }
    free(at);
    return rc;
}

/* The arena: where intermediates live and how big it is. Static shapes
 * keep the plan pass's offsets (bind_values bound them) and its size.
 * With symbols the layout is a program run per call: intermediates in
 * definition order become slots, each with the earlier ones live at the
 * same time; order_slots then decides which of two goes above the other,
 * and at run time each goes at the lowest 64-aligned offset above those
 * (valid for any symbol values: values never live together may share
 * bytes), and the slots become the bindings' offsets. The top
 * level's slots come first, then each subgraph's (layout_scope), live
 * with what is live while its node runs. The descriptor's arena_bytes is
 * that layout with every symbol 1, computed the way the run computes it.
 * Runs before lowering: kernels bind the slots. Anything else that needs
 * arena space is sized here too. */
static int layout_arena(pbuild *c)
{
    const ir_graph *g = c->g;
    cg_program *p = c->p;
    if (!p->dynamic) {
        /* subgraphs' intermediates are planned above the top level's */
        p->arena_bytes = 0;
        for (int si = 0; si < c->nscopes; si++) {
            int64_t e = ir_graph_arena_bytes(c->scopes[si].g);
            p->arena_bytes = e > p->arena_bytes ? e : p->arena_bytes;
        }
        return 0;
    }
    int nv = g->nvalues, nall = nv;
    for (int si = 1; si < c->nscopes; si++)
        nall += c->scopes[si].g->nvalues + 1;   /* at most: every value, a counter */
    int *def = malloc(sizeof *def * ((size_t)nv + 1)), *last = malloc(sizeof *last * ((size_t)nv + 1));
    p->slots = calloc((size_t)nall + 1, sizeof *p->slots);
    if (!def || !last || !p->slots) {
        free(def);
        free(last);
        return ir_errorf(c->d, "out of memory");
    }
    lifetimes(g, c->root, def, last);
    int rc = 0;
    for (int k = 0; k < g->nnodes && rc >= 0; k++)
        for (int i = 0; i < g->nodes[k]->nout && rc >= 0; i++) {
            const ir_value *v = g->nodes[k]->out[i];
            if (c->bind[v->id].kind == KIR_BUF_OUTPUT || c->root[k] != k || c->at_load[k] || c->view[k])
                continue;
            if (arena_view(c, k, last)) {
                c->view[k] = true;   /* no kernel: emit_scope */
                continue;
            }
            if ((rc = add_slot(c, v->id, value_size(v), NULL, 0, 0, def, last, def[v->id], last[v->id])) >= 0)
                c->bind[v->id] = (cg_binding){KIR_BUF_ARENA, 0, rc};
        }
    if (rc >= 0)
        rc = layout_children(c, 0, NULL, 0, 0, def, last);
    free(def);
    free(last);
    if (rc < 0 || order_slots(c) < 0)
        return -1;
    int64_t *end = calloc((size_t)p->nslots + 1, sizeof *end), total = 0;
    if (!end)
        return ir_errorf(c->d, "out of memory");
    for (int i = 0; i < p->nslots; i++) {
        int s = p->slot_order[i];
        int64_t off = 0;
        for (const int *u = p->slots[s].live_with; *u >= 0; u++)
            off = end[*u] > off ? end[*u] : off;
        off = (off + 63) & ~(int64_t)63;
        end[s] = off + size_at_one(&p->slots[s].bytes, NULL);
        total = end[s] > total ? end[s] : total;
    }
    free(end);
    p->arena_bytes = (total + 63) & ~(int64_t)63;
    return 0;
}

/* ---- run-time shape checks ------------------------------------------------ */


/* The run's value of a check's size: scale times the dims. */
static kir_expr *size_expr(kir_kernel *k, const cg_size *z)
{
    kir_expr *e = kir_const_i(k, IR_I64, z->scale);
    for (int i = 0; i < z->n && e; i++)
        e = kir_imul(k, e, kir_dim(k, z->dims[i]));
    return e;
}

/* Check ck as a statement of the check kernel c->chk: a FAIL with the
 * message when it does not hold. */
static int check_stmt(pbuild *c, const cg_check *ck, const ir_node *n, const char *what)
{
    kir_kernel *k = c->chk;
    kir_expr *bad;
    if (ck->kind == CG_CHECK_DIM)
        bad = kir_op2(k, KIR_NE, IR_BOOL, kir_dim(k, ck->a), kir_dim(k, ck->b));
    else if (ck->kind == CG_CHECK_LE)
        bad = kir_op2(k, KIR_LT, IR_BOOL, kir_dim(k, ck->b), kir_dim(k, ck->a));
    else
        bad = kir_op2(k, KIR_NE, IR_BOOL, size_expr(k, &ck->ca), size_expr(k, &ck->cb));
    kir_stmt *st = bad ? kir_if(k, c->chk_at, bad) : NULL;
    char msg[1024];
    snprintf(msg, sizeof msg, "node '%.300s' (%s): %.600s", n->name, ir_ops[n->op].name, what);
    if (!st || !kir_fail(k, &st->body, msg))
        return ir_errorf(c->d, "out of memory");
    c->chk_at = &st->orelse;
    return 0;
}

/* Adds check ck (its message naming the node) unless it holds for any
 * symbol values: both sides static and equal. Inside a subgraph, whose
 * nodes may not run at all (an If's other branch), it becomes a
 * statement of the node's check kernel (c->chk) instead of a check of
 * the run's start. */
static int add_check(pbuild *c, cg_check ck, const ir_node *n, const char *what)
{
    cg_program *p = c->p;
    bool fa, fb;
    int64_t a, b;
    if (ck.kind != CG_CHECK_COUNT) {
        fa = ck.a.sym <= 0, fb = ck.b.sym <= 0;
        a = ck.a.v, b = ck.b.v;
    } else {
        a = size_at_one(&ck.ca, &fa);
        b = size_at_one(&ck.cb, &fb);
    }
    if (fa && fb && (ck.kind == CG_CHECK_LE ? a <= b : a == b))
        return 0;
    if (c->chk)
        return check_stmt(c, &ck, n, what);
    cg_check *cks = realloc(p->checks, sizeof *cks * ((size_t)p->nchecks + 1));
    if (!cks)
        return ir_errorf(c->d, "out of memory");
    p->checks = cks;
    if ((ck.message = add_message(c, n, what)) < 0)
        return -1;
    p->checks[p->nchecks++] = ck;
    return 0;
}

/* A window over a symbolic input dim (explicit or VALID padding) must fit
 * in the padded input, as the interpreter's shape function checks on the
 * run's dims: its output dim's definition may fold away the subtraction
 * that would come out negative ((H+2-3)/1+1 is H, even for H = 0). */
static int window_checks(pbuild *c, const ir_node *n)
{
    const ir_type *x = &n->in[0]->type;
    bool pool = n->op != IR_OP_CONV && n->op != IR_OP_CONV_INTEGER;
    int ns = x->rank - 2;
    ir_dim wk[IR_MAX_RANK];
    if (ns < 1 || (!pool && (!n->in[1] || n->in[1]->type.rank != x->rank)))
        return 0;
    for (int i = 0; !pool && i < ns; i++)
        wk[i] = n->in[1]->type.dims[2 + i];
    icc_diag d;
    nn_window w;
    if (nn_window_parse(n, &d, ns, pool ? NULL : wk, &w) < 0 || w.auto_pad == NN_PAD_SAME_UPPER ||
        w.auto_pad == NN_PAD_SAME_LOWER)
        return 0;
    char what[256];
    for (int i = 0; i < ns; i++) {
        int64_t pads = w.auto_pad == NN_PAD_VALID ? 0 : w.pads[i] + w.pads[ns + i];
        int64_t need = (w.kernel[i] - 1) * w.dilation[i] + 1 - pads;
        if (x->dims[2 + i].sym <= 0 || need <= 0)
            continue;
        snprintf(what, sizeof what, "spatial dim %d: the window (%lld wide with dilation) is larger than the padded "
                 "input", i, (long long)((w.kernel[i] - 1) * w.dilation[i] + 1));
        if (add_check(c, (cg_check){.kind = CG_CHECK_LE, .a = ir_dim_const(need), .b = x->dims[2 + i]}, n, what) < 0)
            return -1;
    }
    return 0;
}

/* The same for the blocked convs (ConvNCHWc, ConvDwNCHWc: X [N, C/cb, H,
 * W, cb], the kernel's extents at W's dims 2, 3 or 1, 2, explicit pads
 * [top, left, bottom, right]): the layout pass's zero-padded input (H+2
 * for a 3x3 window) must still hold the window. */
static int blocked_window_checks(pbuild *c, const ir_node *n)
{
    const ir_type *x = &n->in[0]->type, *w = n->nin > 1 && n->in[1] ? &n->in[1]->type : NULL;
    int kd = n->op == IR_OP_CONV_NCHWC ? 2 : 1;
    if (x->rank != 5 || !w || w->rank < kd + 2)
        return 0;
    const int64_t *v;
    int64_t p[4] = {0}, dl[2] = {1, 1};
    int np = ir_attr_ints(n, "pads", &v);
    for (int i = 0; i < np && i < 4; i++)
        p[i] = v[i];
    int nd = ir_attr_ints(n, "dilations", &v);
    for (int i = 0; i < nd && i < 2; i++)
        dl[i] = v[i];
    char what[256];
    for (int i = 0; i < 2; i++) {
        ir_dim k = w->dims[kd + i];
        int64_t span = (k.v - 1) * dl[i] + 1, need = span - p[i] - p[2 + i];
        if (x->dims[2 + i].sym <= 0 || !ir_dim_is_const(k) || need <= 0)
            continue;
        snprintf(what, sizeof what, "spatial dim %d: the window (%lld wide with dilation) is larger than the padded "
                 "input", i, (long long)span);
        if (add_check(c, (cg_check){.kind = CG_CHECK_LE, .a = ir_dim_const(need), .b = x->dims[2 + i]}, n, what) < 0)
            return -1;
    }
    return 0;
}

/* A Split of a symbolic dim: its pieces must add up to it at run time.
 * Constant pieces (a constant split input) must sum to the dim; n equal
 * symbolic chunks (ceil(d/n): shape inference cannot say the smaller last
 * one, ir/ref/movement.c) need n to divide it; the two chunks ceil(d/2)
 * and floor(d/2) always add up. */
static int split_checks(pbuild *c, const ir_node *n)
{
    const ir_type *x = &n->in[0]->type;
    int axis = (int)ir_attr_int(n, "axis", 0);
    axis = axis < 0 ? axis + x->rank : axis;
    if (axis < 0 || axis >= x->rank || x->dims[axis].sym <= 0)
        return 0;
    ir_dim d = x->dims[axis], p0 = n->out[0]->type.dims[axis];
    int64_t sum = 0;
    bool consts = true, equal = n->nout > 1 && p0.sym > 0;
    for (int i = 0; i < n->nout; i++) {
        ir_dim p = n->out[i]->type.dims[axis];
        consts = consts && ir_dim_is_const(p) && ir_add_ok(sum, p.v, &sum);
        equal = equal && p.sym == p0.sym;
    }
    char what[512], xs[128];
    dim_text(c->g, d, xs, sizeof xs);
    if (consts) {
        snprintf(what, sizeof what, "dim %d of '%.100s' (%s) must equal the split's sum %lld", axis, n->in[0]->name,
                 xs, (long long)sum);
        return add_check(c, (cg_check){.kind = CG_CHECK_DIM, .a = d, .b = ir_dim_const(sum)}, n, what);
    }
    if (!equal)
        return 0;
    snprintf(what, sizeof what, "dim %d of '%.100s' (%s) must be a multiple of %d (the compiled split takes equal "
             "parts of a symbolic dim)", axis, n->in[0]->name, xs, n->nout);
    cg_check ck = {.kind = CG_CHECK_COUNT, .ca = {.scale = 1, .n = 1, .dims = {d}},
                   .cb = {.scale = n->nout, .n = 1, .dims = {p0}}};
    return add_check(c, ck, n, what);
}

/* A Slice of a symbolic dim with constant positions (ir_slice_sym_axis):
 * the compiled form holds for the dims in [need, most], which the run
 * checks (the interpreter and ONNX Runtime take any dim). An axis sliced
 * to a symbolic end S keeps S elements only while S is within the data's
 * dim, fixed or another symbol (ir/ref/movement_view.c): checked too. */
static int slice_sym_checks(pbuild *c, const ir_node *n)
{
    const ir_type *x = &n->in[0]->type, *to = &n->out[0]->type;
    ir_slice_entry en[IR_MAX_RANK];
    int cnt;
    if (!ir_slice_entries(n, en, &cnt))
        return 0;
    char what[512], xs[128], ys[128];
    for (int i = 0; i < cnt; i++) {
        ir_dim s = en[i].start, e = en[i].end, ax = en[i].axis, st = en[i].step;
        if (ax.sym || ax.v < -x->rank || ax.v >= x->rank)
            continue;
        int a = (int)(ax.v < 0 ? ax.v + x->rank : ax.v);
        ir_dim d = x->dims[a];
        if (e.sym > 0 && a < to->rank && ir_dim_eq(to->dims[a], e) && !ir_dim_eq(d, to->dims[a])) {
            dim_text(c->g, e, xs, sizeof xs);
            dim_text(c->g, d, ys, sizeof ys);
            snprintf(what, sizeof what, "%s exceeds dim %d of '%.100s' (%s), which the slice cannot extend", xs, a,
                     n->in[0]->name, ys);
            if (add_check(c, (cg_check){.kind = CG_CHECK_LE, .a = e, .b = d}, n, what) < 0)
                return -1;
            continue;
        }
        if (s.sym || e.sym || st.sym)
            continue;
        ir_slice_axis sa;
        if (!ir_slice_sym_axis(NULL, d, s.v, e.v, st.v, &sa))
            continue;
        dim_text(c->g, d, xs, sizeof xs);
        char sl[80];
        snprintf(sl, sizeof sl, st.v == 1 ? "[%lld:%lld]" : "[%lld:%lld:%lld]", (long long)s.v, (long long)e.v,
                 (long long)st.v);
        snprintf(what, sizeof what, "dim %d of '%.100s' (%s) must be at least %lld (the compiled slice %s "
                 "takes that many)", a, n->in[0]->name, xs, (long long)sa.need, sl);
        if (sa.need > 0 &&
            add_check(c, (cg_check){.kind = CG_CHECK_LE, .a = ir_dim_const(sa.need), .b = d}, n, what) < 0)
            return -1;
        snprintf(what, sizeof what, "dim %d of '%.100s' (%s) must be at most %lld (the compiled slice %s "
                 "reads it to its end)", a, n->in[0]->name, xs, (long long)sa.most, sl);
        if (sa.most < INT64_MAX &&
            add_check(c, (cg_check){.kind = CG_CHECK_LE, .a = d, .b = ir_dim_const(sa.most)}, n, what) < 0)
            return -1;
    }
    return 0;
}

/* Adds the check that dim d of n's operand v (in) equals the output's
 * dim out, unless they are the same dim. */
static int check_dim_equal(pbuild *c, const ir_node *n, const ir_value *v, int d, ir_dim in, ir_dim out)
{
    if (in.sym == out.sym && (in.sym > 0 || in.v == out.v))
        return 0;
    char what[512], x[128], y[128];
    dim_text(c->g, in, x, sizeof x);
    dim_text(c->g, out, y, sizeof y);
    snprintf(what, sizeof what, "dim %d of '%.100s' (%s) must equal %s", d, v->name, x, y);
    return add_check(c, (cg_check){.kind = CG_CHECK_DIM, .a = in, .b = out}, n, what);
}

/* Shape inference resolves a symbol against what a node needs (broadcast
 * against a fixed dim, a reshape's element count, a contraction's inner
 * dim); the compiled kernels rely on it, so the run checks it first and
 * refuses inputs that break it, naming the node. */
static int node_checks(pbuild *c, const ir_node *n)
{
    const ir_graph *g = c->g;
    char what[512], x[128], y[128];
    const ir_type *to = &n->out[0]->type;
    bool sym = false;
    for (int i = 0; i < n->nin + n->nout; i++) {
        const ir_value *v = i < n->nin ? n->in[i] : n->out[i - n->nin];
        for (int d = 0; v && d < v->type.rank; d++)
            sym |= v->type.dims[d].sym > 0;
    }
    if (!sym)
        return 0;
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
                if (in.sym <= 0 && in.v == 1)
                    continue;   /* broadcast */
                if (check_dim_equal(c, n, v, d, in, out) < 0)
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
                add_check(c, (cg_check){.kind = CG_CHECK_DIM, .a = ka, .b = kb}, n, what) < 0)
                return -1;
        }
    }
    switch (n->op) {
    case IR_OP_RESHAPE: case IR_OP_FLATTEN: case IR_OP_SQUEEZE: case IR_OP_UNSQUEEZE: {
        const ir_type *ti = &n->in[0]->type;
        cg_check ck = {.kind = CG_CHECK_COUNT, .ca = {.scale = 1, .n = ti->rank},
                       .cb = {.scale = 1, .n = to->rank}};
        for (int d = 0; d < ti->rank; d++)
            ck.ca.dims[d] = ti->dims[d];
        for (int d = 0; d < to->rank; d++)
            ck.cb.dims[d] = to->dims[d];
        snprintf(what, sizeof what, "'%.100s' cannot be reshaped to '%.100s': the element counts differ",
                 n->in[0]->name, n->out[0]->name);
        if (add_check(c, ck, n, what) < 0)
            return -1;
        break;
    }
    case IR_OP_CONV: case IR_OP_CONV_INTEGER: case IR_OP_MAX_POOL: case IR_OP_AVERAGE_POOL:
    case IR_OP_LP_POOL:
        if (window_checks(c, n) < 0)
            return -1;
        break;
    case IR_OP_CONV_NCHWC: case IR_OP_CONV_DW_NCHWC:
        if (blocked_window_checks(c, n) < 0)
            return -1;
        break;
    case IR_OP_SPLIT:
        if (split_checks(c, n) < 0)
            return -1;
        break;
    case IR_OP_CONCAT: case IR_OP_CONCAT_NCHWC: {
        /* every input's dims but the axis are the output's (shape
         * inference took the first input's where symbols differ) */
        int axis = n->op == IR_OP_CONCAT_NCHWC ? 1 : (int)ir_attr_int(n, "axis", 0);
        axis = axis < 0 ? axis + to->rank : axis;
        for (int i = 0; i < n->nin; i++)
            for (int d = 0; n->in[i] && d < to->rank && d < n->in[i]->type.rank; d++)
                if (d != axis && check_dim_equal(c, n, n->in[i], d, n->in[i]->type.dims[d], to->dims[d]) < 0)
                    return -1;
        break;
    }
    case IR_OP_SLICE: {
        if (slice_sym_checks(c, n) < 0)
            return -1;
        break;
    }
    default:
        break;
    }
    return 0;
}

/* The checks of every top-level node, run before the kernels. (A
 * subgraph's nodes check inside their scope: emit_scope.) */
/* The symbols shape inference took equal where an elementwise op met
 * them (ir_graph_sym_alias): the run checks each pair once, naming the
 * node (which a pass may have erased since: its name and op are kept). */
static int alias_checks(pbuild *c)
{
    for (const ir_sym_alias *a = c->g->aliases; a; a = a->next) {
        char what[512], x[128], y[128];
        ir_dim from = {0, a->from}, to = {0, a->to};
        dim_text(c->g, from, x, sizeof x);
        dim_text(c->g, to, y, sizeof y);
        if (a->from >= c->p->nsyms || a->to >= c->p->nsyms || c->p->sym_desc[a->from] < 0 ||
            c->p->sym_desc[a->to] < 0)
            return ir_errorf(c->d, "node '%.200s' (%s): its operands' dims %s and %s are taken equal, but the "
                             "inputs' dims do not give both: pin them with --shape=NAME:DIMS", a->node,
                             ir_ops[a->op].name, x, y);
        snprintf(what, sizeof what, "its operands' dims %s and %s must be equal", x, y);
        ir_node at = {.name = a->node, .op = a->op};
        if (add_check(c, (cg_check){.kind = CG_CHECK_DIM, .a = from, .b = to}, &at, what) < 0)
            return -1;
    }
    return 0;
}

static int find_shape_checks(pbuild *c)
{
    for (int k = 0; k < c->g->nnodes; k++)
        if (node_checks(c, c->g->nodes[k]) < 0)
            return -1;
    return alias_checks(c);
}

/* ---- the descriptor's tensors and the output copies --------------------------- */

static void describe_tensor(const ir_graph *g, const ir_value *v, cg_tensor *t)
{
    *t = (cg_tensor){.name = v->name, .onnx_dtype = ir_dtype_to_onnx(v->type.dtype), .rank = v->type.rank};
    for (int i = 0; i < v->type.rank; i++) {
        int32_t sym = v->type.dims[i].sym;
        t->dims[i] = sym > 0 ? -1 : v->type.dims[i].v;
        t->dim_names[i] = sym > 0 ? ir_graph_sym_name(g, sym) : NULL;
        t->named |= sym > 0;
    }
}

/* The I/O descriptions, and the outputs no kernel writes: a graph input
 * or constant passed through, or a value listed again after its first
 * output slot (copies of no bytes are left out). */
static int describe_io(pbuild *c)
{
    const ir_graph *g = c->g;
    cg_program *p = c->p;
    p->ninputs = g->ninputs;
    p->noutputs = g->noutputs;
    p->inputs = calloc((size_t)g->ninputs + 1, sizeof *p->inputs);
    p->outputs = calloc((size_t)g->noutputs + 1, sizeof *p->outputs);
    p->copies = calloc((size_t)g->noutputs + 1, sizeof *p->copies);
    if (!p->inputs || !p->outputs || !p->copies)
        return ir_errorf(c->d, "out of memory");
    for (int i = 0; i < g->ninputs; i++)
        describe_tensor(g, g->inputs[i], &p->inputs[i]);
    for (int i = 0; i < g->noutputs; i++) {
        const ir_value *v = g->outputs[i];
        describe_tensor(g, v, &p->outputs[i]);
        const cg_binding *bd = &c->bind[v->id];
        if (bd->kind == KIR_BUF_OUTPUT && bd->index == i)
            continue;
        cg_copy cp = {.output = i, .src = *bd, .bytes = value_size(v)};
        bool fixed;
        if (size_at_one(&cp.bytes, &fixed) == 0 && fixed)
            continue;
        p->copies[p->ncopies++] = cp;
    }
    return 0;
}

/* ---- subgraphs' inputs and outputs ------------------------------------------ */

/* bytes of arena space nothing else uses (a Loop's state), 64-aligned;
 * its offset. */
static int64_t reserve(pbuild *c, int64_t bytes)
{
    int64_t off = (c->p->arena_bytes + 63) & ~(int64_t)63;
    c->p->arena_bytes = off + ((bytes + 63) & ~(int64_t)63);
    return off;
}

static int64_t static_bytes(const ir_value *v)
{
    cg_size z = value_size(v);
    return size_at_one(&z, NULL);
}

/* Subgraphs' inputs and outputs, parents first (after the arena is laid
 * out: a Loop's state is reserved above it). Captures are where the
 * captured values are. An If's branch computes each output it computes
 * first where the If's output lives (its other outputs are copies,
 * branch_copies). A Loop's body has its counter, condition and carried
 * inputs in reserved space of their own, computes its carried outputs in
 * the Loop's outputs (copied back into the inputs after each iteration)
 * and its condition into reserved space. In a dynamic program the
 * reserved space is slots layout_scope made (bound there). */
static int bind_scopes(pbuild *c)
{
    for (int si = 1; si < c->nscopes; si++) {
        pscope *sc = &c->scopes[si];
        const ir_graph *sg = sc->g;
        const ir_node *n = sc->node;
        const cg_binding *outer = c->scopes[sc->parent].bind;
        int formal = ir_control_formal_inputs(n);
        for (int j = 0; j < n->ncap && formal >= 0 && formal + j < sg->ninputs; j++)
            sc->bind[sg->inputs[formal + j]->id] = outer[n->in[n->nin - n->ncap + j]->id];
        /* outputs computed in the node's (output_outside); a Loop's
         * condition and scan outputs' rows in space of their own */
        bool slots = c->p->dynamic, loop = n->op == IR_OP_LOOP || n->op == IR_OP_SCAN;
        for (int i = 0; i < formal && loop && !slots && i < sg->ninputs; i++)
            sc->bind[sg->inputs[i]->id] = (cg_binding){KIR_BUF_ARENA, 0, reserve(c, static_bytes(sg->inputs[i]))};
        if (n->op == IR_OP_SCAN && !slots)
            sc->counter = (cg_binding){KIR_BUF_ARENA, 0, reserve(c, 8)};
        for (int i = 0; i < sg->noutputs; i++) {
            int o = output_outside(sc, i);
            if (o >= 0)
                sc->bind[sg->outputs[i]->id] = outer[n->out[o]->id];
            else if (branch_computes(sg, i) && loop && !slots)
                sc->bind[sg->outputs[i]->id] = (cg_binding){KIR_BUF_ARENA, 0, reserve(c, static_bytes(sg->outputs[i]))};
        }
    }
    return 0;
}

/* ---- kernels --------------------------------------------------------------------- */

/* The trip count of k's outermost parallel loop (from 0 to a constant or
 * a symbol); {0, 0} when the kernel runs serially. */
static ir_dim parallel_trips(const kir_kernel *k)
{
    ir_dim none = {0};
    if (k->body.n != 1 || k->body.s[0]->kind != KIR_S_FOR || k->body.s[0]->loop != KIR_PARALLEL)
        return none;
    const kir_stmt *s = k->body.s[0];
    if (s->lo->op != KIR_CONST || s->lo->c.i != 0)
        return none;
    if (s->hi->op == KIR_CONST)
        return s->hi->c.i >= 2 ? ir_dim_const(s->hi->c.i) : none;
    if (s->hi->op != KIR_SYM)
        return none;
    return (ir_dim){.sym = s->hi->var};
}

/* The run-time errors a kernel may report (kir_fail) join the program's
 * messages; the kernel's FAILs are numbered from where they start. */
static int add_fail_messages(cg_program *p, kir_kernel *k, icc_diag *d)
{
    char **m = realloc(p->messages, sizeof *m * ((size_t)p->nmessages + (size_t)k->nfails));
    if (!m)
        return ir_errorf(d, "out of memory");
    p->messages = m;
    k->fail_base = p->nmessages + 1;
    for (int i = 0; i < k->nfails; i++)
        if (!(m[p->nmessages++] = strdup(k->fails[i])))
            return ir_errorf(d, "out of memory");
    return 0;
}

/* Appends a step; its index, or -1 on out of memory. */
static int add_step(pbuild *c, cg_step st)
{
    cg_program *p = c->p;
    if (p->nsteps == c->capsteps) {
        int nc = c->capsteps ? 2 * c->capsteps : 64;
        cg_step *ns = realloc(p->steps, sizeof *ns * (size_t)nc);
        if (!ns)
            return ir_errorf(c->d, "out of memory");
        p->steps = ns;
        c->capsteps = nc;
    }
    p->steps[p->nsteps] = st;
    return p->nsteps++;
}

/* Whether kernel k reads an intermediate of at least `bytes` (symbolic
 * sizes count as large): one that a kernel before it wrote. */
static bool reads_shared(const kir_kernel *k, int64_t bytes)
{
    for (int i = 0; i < k->nbufs; i++) {
        const kir_buf *b = &k->bufs[i];
        int64_t n;
        if (b->kind == KIR_BUF_ARENA && !b->written && (kir_buf_bytes(b, &n) < 0 || n >= bytes))
            return true;
    }
    return false;
}

/* Kernel k (owned from here on) of node n into the program, and its
 * KERNEL step (bsym, item_bytes: lower_one's per-item batch). Its chunks
 * hold at least par_chunk_ops of work, or par_shared_ops when it reads a
 * large intermediate (schedule.h). */
static int add_kernel(pbuild *c, kir_kernel *k, const ir_node *n, int32_t bsym, cg_size *item_bytes)
{
    cg_program *p = c->p;
    int64_t ops = cg_cost_trip_ops_est(k, c->s->lanes, c->sym_est, c->sym_est ? c->g->nsyms : 0);
    int64_t least = reads_shared(k, c->s->par_shared_bytes) ? c->s->par_shared_ops : c->s->par_chunk_ops;
    p->kernels[p->nkernels] = (cg_kernel){.k = k, .node = n, .batch_sym = bsym, .item_bytes = item_bytes,
                                          .trips = parallel_trips(k), .trip_ops = ops,
                                          .min_chunk_trips = (least + ops - 1) / ops};
    p->nkernels++;
    if (k->nfails && add_fail_messages(p, k, c->d) < 0)
        return -1;
    return add_step(c, (cg_step){.kind = CG_STEP_KERNEL, .kernel = p->nkernels - 1}) < 0 ? -1 : 0;
}

/* Node kx of g (fused group root) as one kernel, named kname, and its
 * KERNEL step; per item, for a batch dim the op's lowering takes as
 * static. */
static int lower_one(pbuild *c, const ir_graph *g, const cg_binding *bind, int kx, const char *kname)
{
    cg_program *p = c->p;
    const ir_node *n = g->nodes[kx];
    int32_t bsym = item_symbol(p, n);
    ir_type saved[128];
    if (bsym)
        pin_batch(n, bsym, saved, false);
    kir_kernel *k = NULL;
    int rc = cg_lower_node(g, n, bind, c->s, kname, &k, c->d);
    cg_size *item_bytes = NULL;
    if (rc < 0)
        k = NULL;
    else if (bsym && !(item_bytes = calloc((size_t)(k->nbufs + n->nin + n->nout) + 1, sizeof *item_bytes)))
        rc = ir_errorf(c->d, "out of memory");
    for (int i = 0, kb = 0; bsym && rc == 0 && i < n->nin + n->nout; i++) {
        const ir_value *v = i < n->nin ? n->in[i] : n->out[i - n->nin];
        if (!v)
            continue;
        if (saved[i].rank > 0 && saved[i].dims[0].sym == bsym) {
            item_bytes[kb] = value_size(v);   /* dims pinned: one item (H, W may be symbols) */
        }
        kb++;
    }
    if (bsym)
        pin_batch(n, bsym, saved, true);
    if (rc < 0) {
        kir_kernel_destroy(k);
        return -1;
    }
    return add_kernel(c, k, n, bsym, item_bytes);
}

static int emit_scope(pbuild *c, int si, const char *prefix);

/* The outputs a branch passes on rather than computes (branch_computes):
 * copies into the If's outputs, after the branch's kernels. */
static int branch_copies(pbuild *c, const ir_node *n, int si)
{
    const pscope *sc = &c->scopes[si];
    const cg_binding *outer = c->scopes[sc->parent].bind;
    for (int i = 0; i < n->nout; i++) {
        const ir_value *v = sc->g->outputs[i];
        if (branch_computes(sc->g, i))
            continue;
        cg_step st = {.kind = CG_STEP_COPY, .dst = outer[n->out[i]->id], .src = sc->bind[v->id],
                      .bytes = value_size(n->out[i])};
        if (add_step(c, st) < 0)
            return -1;
    }
    return 0;
}

/* A branch that cannot run on the compiled shapes (ir_graph.infer_error:
 * its shapes do not infer) as one kernel, <kname>, that fails the run
 * with the reason, as the interpreter does when it takes the branch. */
static int add_branch_fail(pbuild *c, const ir_node *n, const char *branch, const char *kname)
{
    const ir_graph *b = ir_attr_graph(n, branch);
    kir_kernel *k = kir_kernel_create(kname, b);
    if (!k || !kir_fail(k, &k->body, b->infer_error)) {   /* "node 'If_0' (If): else_branch: ..." */
        kir_kernel_destroy(k);
        return ir_errorf(c->d, "out of memory");
    }
    return add_kernel(c, k, n, 0, NULL);
}

/* One branch of If n: its steps and copies, or the failing kernel. */
static int emit_branch(pbuild *c, int si, const ir_node *n, int b, const char *kname)
{
    static const char *const br[2] = {"then", "else"};
    char an[16], name[256];
    snprintf(an, sizeof an, "%s_branch", br[b]);
    snprintf(name, sizeof name, "%.200s_%s", kname, br[b]);
    const ir_graph *g = ir_attr_graph(n, an);
    if (g && g->infer_error)
        return add_branch_fail(c, n, an, name);
    int sub = child_scope(c, si, n, an);
    return sub < 0 || emit_scope(c, sub, name) < 0 || branch_copies(c, n, sub) < 0 ? -1 : 0;
}

/* An If: BRANCH (to the else branch when the condition is false), the
 * then branch's steps and copies, JUMP past the else branch's steps and
 * copies. Kernels are named after the If's: <kname>_then_k<node>. */
static int emit_if(pbuild *c, int si, const ir_node *n, const char *kname)
{
    int jb = add_step(c, (cg_step){.kind = CG_STEP_BRANCH, .cond = c->scopes[si].bind[n->in[0]->id]});
    if (jb < 0 || emit_branch(c, si, n, 0, kname) < 0)
        return -1;
    int jj = add_step(c, (cg_step){.kind = CG_STEP_JUMP});
    if (jj < 0)
        return -1;
    c->p->steps[jb].target = c->p->nsteps;
    if (emit_branch(c, si, n, 1, kname) < 0)
        return -1;
    c->p->steps[jj].target = c->p->nsteps;
    return 0;
}

/* A COPY step unless src and dst are one place. */
static int add_copy(pbuild *c, cg_binding dst, cg_binding src, const ir_value *v)
{
    if (dst.kind == src.kind && dst.index == src.index && dst.offset == src.offset)
        return 0;
    return add_step(c, (cg_step){.kind = CG_STEP_COPY, .dst = dst, .src = src, .bytes = value_size(v)});
}

/* A SLICE step between the whole tensor t (scanned from, or stacked
 * into: whole is dst when stack) and one iteration's slice of it along
 * axis ax, at the counter's index (from the end when reverse). */
static int add_slice(pbuild *c, cg_binding dst, cg_binding src, cg_binding counter, const ir_value *t, int ax,
                     bool reverse, bool stack)
{
    const ir_type *ty = &t->type;
    cg_size zl = {.scale = 1, .n = 1, .dims = {ty->dims[ax]}}, zr = {.scale = 1};
    cg_size zi = {.scale = (int64_t)ir_dtype_size(ty->dtype)};
    for (int k = 0; k < ax; k++)
        zr.dims[zr.n++] = ty->dims[k];
    for (int k = ax + 1; k < ty->rank; k++)
        zi.dims[zi.n++] = ty->dims[k];
    bool fl, fr, fi;
    int64_t len = size_at_one(&zl, &fl), rows = size_at_one(&zr, &fr), inner = size_at_one(&zi, &fi);
    cg_slice sl = {.counter = counter, .len = len, .reverse = reverse, .rows = rows, .row_bytes = inner,
                   .sym = !(fl && fr && fi), .stack = stack, .zlen = zl, .zrows = zr, .zrow_bytes = zi};
    return add_step(c, (cg_step){.kind = CG_STEP_SLICE, .dst = dst, .src = src, .slice = sl});
}


/* A Scan: like a Loop of a constant trip count (its scan inputs' length)
 * with no condition, whose counter is its own; before the body each scan
 * input's slice is copied into the body's input, after it each scan
 * output's row into its place in the stacked output (the directions
 * reverse the index). Kernels: <kname>_body_k<node>. */
static int emit_scan(pbuild *c, int si, const ir_node *n, const char *kname)
{
    int bi = child_scope(c, si, n, "body");
    if (bi < 0)
        return -1;
    const cg_binding *outer = c->scopes[si].bind, *bind = c->scopes[bi].bind;
    const ir_graph *b = c->scopes[bi].g;
    int formal = ir_control_formal_inputs(n), M = (int)ir_attr_int(n, "num_scan_inputs", 0), N = formal - M;
    cg_binding iter = c->scopes[bi].counter;
    const ir_type *x0 = &n->in[N]->type;
    int64_t ax0 = list_at(n, "scan_input_axes", 0, 0);
    ir_dim len = x0->dims[ax0 < 0 ? ax0 + x0->rank : ax0];
    if (add_step(c, (cg_step){.kind = CG_STEP_SET, .dst = iter, .value = 0, .width = 8}) < 0)
        return -1;
    for (int i = 0; i < N; i++)
        if (add_copy(c, bind[b->inputs[i]->id], outer[n->in[i]->id], n->in[i]) < 0)
            return -1;
    int head = add_step(c, (cg_step){.kind = CG_STEP_LOOP_TEST, .dst = iter, .has_trips = true, .const_trips = true,
                                     .value = len.sym > 0 ? 1 : len.v, .trips_sym = len.sym > 0 ? len.sym : 0});
    if (head < 0)
        return -1;
    for (int j = 0; j < M; j++) {
        const ir_value *x = n->in[N + j];
        int64_t ax = list_at(n, "scan_input_axes", j, 0);
        if (add_slice(c, bind[b->inputs[N + j]->id], outer[x->id], iter, x, (int)(ax < 0 ? ax + x->type.rank : ax),
                      list_at(n, "scan_input_directions", j, 0) != 0, false) < 0)
            return -1;
    }
    char name[256];
    snprintf(name, sizeof name, "%.200s_body", kname);
    if (emit_scope(c, bi, name) < 0)
        return -1;
    for (int j = 0; j < n->nout - N; j++) {
        const ir_value *o = n->out[N + j];
        int64_t ax = list_at(n, "scan_output_axes", j, 0);
        if (add_slice(c, outer[o->id], bind[b->outputs[N + j]->id], iter, o, (int)(ax < 0 ? ax + o->type.rank : ax),
                      list_at(n, "scan_output_directions", j, 0) != 0, true) < 0)
            return -1;
    }
    for (int i = 0; i < N; i++)
        if (add_copy(c, bind[b->inputs[i]->id], bind[b->outputs[i]->id], b->outputs[i]) < 0)
            return -1;
    if (add_step(c, (cg_step){.kind = CG_STEP_INC, .dst = iter}) < 0 ||
        add_step(c, (cg_step){.kind = CG_STEP_JUMP, .target = head}) < 0)
        return -1;
    c->p->steps[head].target = c->p->nsteps;
    for (int i = 0; i < N; i++)
        if (add_copy(c, outer[n->out[i]->id], bind[b->inputs[i]->id], n->out[i]) < 0)
            return -1;
    return 0;
}

/* A Loop whose trip count only the run knows stacks its scan outputs
 * into the rows the model declares (check_loop): a kernel reads the
 * counter iter inside the loop, before the rows are stored (a row past
 * the declared ones fails the run), or after it (fewer rows than
 * declared fail it), like the interpreter, whose result has another
 * length then. Named <kname>_rows_in and <kname>_rows_out. */
static int add_rows_check(pbuild *c, const ir_graph *g, const ir_node *n, cg_binding iter, int N, bool inside,
                          const char *kname)
{
    char name[256];
    snprintf(name, sizeof name, "%.200s_rows_%s", kname, inside ? "in" : "out");
    kir_kernel *k = kir_kernel_create(name, g);
    if (!k)
        return ir_errorf(c->d, "out of memory");
    ir_type t;
    memset(&t, 0, sizeof t);
    t.dtype = IR_I64;
    t.rank = 1;
    t.dims[0] = ir_dim_const(1);
    int b = kir_add_buf(k, "iter", iter.kind, &t, iter.index, iter.offset);
    kir_expr *z = kir_const_i(k, IR_I64, 0);
    kir_expr *it = b < 0 ? NULL : kir_let(k, &k->body, kir_load(k, b, &z));
    bool ok = it != NULL;
    for (int j = N; ok && j < n->nout; j++) {
        kir_expr *len = kir_const_i(k, IR_I64, n->out[j]->type.dims[0].v);
        kir_stmt *s = kir_if(k, &k->body, inside ? kir_op2(k, KIR_LE, IR_BOOL, len, it)
                                                 : kir_op2(k, KIR_NE, IR_BOOL, it, len));
        char msg[512];
        snprintf(msg, sizeof msg, "node '%.200s' (Loop): the loop ran %s iterations than the %lld rows the model "
                 "declares for scan output %d ('%.100s')", n->name, inside ? "more" : "fewer",
                 (long long)n->out[j]->type.dims[0].v, j - N, n->out[j]->name);
        ok = s && kir_fail(k, &s->body, msg);
    }
    if (!ok) {
        kir_kernel_destroy(k);
        return ir_errorf(c->d, "out of memory");
    }
    return add_kernel(c, k, n, 0, NULL);
}

/* A Loop (program.h, cg_step): the counter and the inputs set, the head's
 * test, the body, the copies back, the counter stepped, the jump back;
 * after it the carried values copied out. Kernels: <kname>_body_k<node>,
 * and the rows checks of add_rows_check. */
static int emit_loop(pbuild *c, int si, const ir_node *n, const char *kname)
{
    int bi = child_scope(c, si, n, "body");
    if (bi < 0)
        return -1;
    const cg_binding *outer = c->scopes[si].bind, *bind = c->scopes[bi].bind;
    const ir_graph *b = c->scopes[bi].g;
    int N = ir_control_formal_inputs(n) - 2;
    cg_binding iter = bind[b->inputs[0]->id], cond = bind[b->inputs[1]->id];
    if (add_step(c, (cg_step){.kind = CG_STEP_SET, .dst = iter, .value = 0, .width = 8}) < 0)
        return -1;
    if (n->in[1] ? add_copy(c, cond, outer[n->in[1]->id], n->in[1]) < 0
                 : add_step(c, (cg_step){.kind = CG_STEP_SET, .dst = cond, .value = 1, .width = 1}) < 0)
        return -1;
    for (int i = 0; i < N; i++)
        if (add_copy(c, bind[b->inputs[2 + i]->id], outer[n->in[2 + i]->id], n->in[2 + i]) < 0)
            return -1;
    int head = add_step(c, (cg_step){.kind = CG_STEP_LOOP_TEST, .dst = iter, .cond = cond, .has_cond = true,
                                     .has_trips = n->in[0] != NULL,
                                     .src = n->in[0] ? outer[n->in[0]->id] : (cg_binding){0}});
    char name[256];
    snprintf(name, sizeof name, "%.200s_body", kname);
    if (head < 0 || emit_scope(c, bi, name) < 0 || add_copy(c, cond, bind[b->outputs[0]->id], b->outputs[0]) < 0)
        return -1;
    bool run_rows = n->nout > N && ir_loop_static_trips(n, NULL, NULL) < 0;
    if (run_rows && add_rows_check(c, b, n, iter, N, true, kname) < 0)
        return -1;
    for (int j = 0; j < n->nout - N; j++)
        if (add_slice(c, outer[n->out[N + j]->id], bind[b->outputs[1 + N + j]->id], iter, n->out[N + j], 0, false,
                      true) < 0)
            return -1;
    for (int i = 0; i < N; i++)
        if (add_copy(c, bind[b->inputs[2 + i]->id], bind[b->outputs[1 + i]->id], b->outputs[1 + i]) < 0)
            return -1;
    if (add_step(c, (cg_step){.kind = CG_STEP_INC, .dst = iter}) < 0 ||
        add_step(c, (cg_step){.kind = CG_STEP_JUMP, .target = head}) < 0)
        return -1;
    c->p->steps[head].target = c->p->nsteps;
    for (int i = 0; i < N; i++)
        if (add_copy(c, outer[n->out[i]->id], bind[b->inputs[2 + i]->id], n->out[i]) < 0)
            return -1;
    return run_rows ? add_rows_check(c, b, n, iter, N, false, kname) : 0;
}

/* Node n is a reshape whose result the plan put in its input's buffer
 * (plan.c): the bytes are already where they belong. */
static bool is_view(const cg_binding *bind, const ir_node *n)
{
    if (!ir_op_is_reshape(n->op) || n->nin < 1 || !n->in[0] || n->nout != 1)
        return false;
    const cg_binding *a = &bind[n->in[0]->id], *b = &bind[n->out[0]->id];
    if (a->kind == KIR_BUF_INPUT && b->kind == KIR_BUF_INPUT)
        return a->index == b->index;   /* ir_graph_input_views */
    return a->kind == KIR_BUF_ARENA && b->kind == KIR_BUF_ARENA && a->offset == b->offset && n->in[0]->planned &&
           n->out[0]->planned;
}

/* A Reshape whose shape is a run-time tensor keeps the dims shape
 * inference gave its output (a declared output, symbols from shape
 * values), so a kernel named <kname>_shape fails the run when the shape's
 * values give others (0 copies the input's dim unless allowzero; -1 takes
 * what the element count leaves), where the interpreter would reshape to
 * them. The element count itself is checked with the shapes. */
static bool reshape_needs_check(const ir_node *n)
{
    const ir_value *s = n->op == IR_OP_RESHAPE && n->nin >= 2 ? n->in[1] : NULL;
    return s && s->kind != IR_VAL_CONST && s->type.rank == 1 && ir_dim_is_const(s->type.dims[0]) &&
           s->type.dims[0].v == n->out[0]->type.rank && n->in[0]->type.rank >= 0;
}

static int add_reshape_check(pbuild *c, const ir_graph *g, const ir_node *n, const cg_binding *bind, const char *kname)
{
    /* an output declared with another element count than the input's
     * fits no shape value: refused here (the interpreter fails each run) */
    int64_t ni, no;
    if (ir_type_is_static(&n->in[0]->type) && ir_type_is_static(&n->out[0]->type) &&
        ir_type_numel(&n->in[0]->type, &ni) && ir_type_numel(&n->out[0]->type, &no) && ni != no)
        return ir_node_errorf(c->d, n, "cannot reshape %lld elements into the %lld of its declared output",
                              (long long)ni, (long long)no);
    char name[300];
    snprintf(name, sizeof name, "%.200s_shape", kname);
    kir_kernel *k = kir_kernel_create(name, g);
    if (!k)
        return ir_errorf(c->d, "out of memory");
    const ir_value *sv = n->in[1];
    const cg_binding *b = &bind[sv->id];
    int sb = kir_add_buf(k, sv->name, b->kind, &sv->type, b->index, b->offset);
    const ir_type *ti = &n->in[0]->type, *to = &n->out[0]->type;
    bool allowzero = ir_attr_int(n, "allowzero", 0) != 0;
    kir_expr *bad = kir_const_i(k, IR_BOOL, 0);
    for (int d = 0; sb >= 0 && d < to->rank; d++) {
        kir_expr *at = kir_const_i(k, IR_I64, d), *v = kir_load(k, sb, &at);
        v = v && v->dtype != IR_I64 ? kir_op1(k, KIR_CAST, IR_I64, v) : v;
        v = kir_let(k, &k->body, v);
        kir_expr *want = v;
        if (!allowzero && d < ti->rank)
            want = kir_op3(k, KIR_SELECT, IR_I64, kir_op2(k, KIR_EQ, IR_BOOL, v, kir_const_i(k, IR_I64, 0)),
                           kir_dim(k, ti->dims[d]), v);
        kir_expr *off = kir_op2(k, KIR_AND, IR_BOOL, kir_op2(k, KIR_NE, IR_BOOL, v, kir_const_i(k, IR_I64, -1)),
                                kir_op2(k, KIR_NE, IR_BOOL, want, kir_dim(k, to->dims[d])));
        bad = kir_op2(k, KIR_OR, IR_BOOL, bad, off);
    }
    kir_stmt *s = sb >= 0 ? kir_if(k, &k->body, bad) : NULL;
    char msg[400];
    snprintf(msg, sizeof msg, "node '%.200s' (Reshape): the shape input does not give the output's shape", n->name);
    if (!s || !kir_fail(k, &s->body, msg)) {
        kir_kernel_destroy(k);
        return ir_errorf(c->d, "out of memory");
    }
    return add_kernel(c, k, n, 0, NULL);
}

/* The steps of scope si: one kernel per fused group, at its root, in
 * node order (named <prefix>_k<node>), and each If's and Loop's. */
/* Whether graph symbol s is a derived symbol only subgraphs use (the run
 * counts a negative value as 0: ICC_SYM_IN_SUBGRAPH). */
static bool sym_in_sub(const cg_program *p, int32_t s)
{
    int i = s > 0 && s < p->nsyms && p->sym_desc[s] >= 0 ? p->sym_desc[s] - (p->nsymbols - p->nderived) : -1;
    return i >= 0 && p->derived_in_sub[i];
}

/* The value of symbol s in check kernel k: the run's, or for one only
 * subgraphs use, its definition computed again from its operands, each
 * such step failing when negative (as the runtime does for the others:
 * operands checked first, so integer division floors). memo[s] keeps
 * what is computed; NULL on out of memory. */
static kir_expr *checked_sym(pbuild *c, kir_kernel *k, const ir_node *n, int32_t s, kir_expr **memo)
{
    if (!sym_in_sub(c->p, s))
        return kir_sym(k, s);
    if (memo[s])
        return kir_letv(k, memo[s]->var);
    const ir_sym_def *df = ir_graph_sym_def(c->g, s);
    kir_expr *a = df->a.sym > 0 ? checked_sym(c, k, n, df->a.sym, memo) : kir_const_i(k, IR_I64, df->a.v);
    kir_expr *b = df->b.sym > 0 ? checked_sym(c, k, n, df->b.sym, memo) : kir_const_i(k, IR_I64, df->b.v);
    kir_expr *v = df->op == IR_SYM_ADD ? kir_iadd(k, a, b) : df->op == IR_SYM_MUL ? kir_imul(k, a, b)
                  : df->op == IR_SYM_FLOORDIV ? kir_op2(k, KIR_DIV, IR_I64, a, b)
                  : kir_op2(k, KIR_DIV, IR_I64, kir_iadd(k, a, kir_const_i(k, IR_I64, df->b.v - 1)), b);
    kir_expr *x = v ? kir_let(k, c->chk_at, v) : NULL;
    kir_stmt *st = x ? kir_if(k, c->chk_at, kir_op2(k, KIR_LT, IR_BOOL, x, kir_const_i(k, IR_I64, 0))) : NULL;
    char msg[600];
    snprintf(msg, sizeof msg, "node '%.300s' (%s): the input dims make the dim '%.200s' negative: a window is larger "
             "than its padded input", n->name, ir_ops[n->op].name, ir_graph_sym_name(c->g, s));
    if (!st || !kir_fail(k, &st->body, msg))
        return NULL;
    c->chk_at = &st->orelse;
    return memo[s] = x;
}

/* A subgraph node's shape checks (node_checks) as a kernel before it,
 * <kname>_check: it runs only where the node runs. With them, the derived
 * symbols only subgraphs use that its results' dims name (checked_sym).
 * None when every check holds for any symbol values. */
static int add_node_checks(pbuild *c, const ir_graph *g, const ir_node *n, const char *kname)
{
    if (n->op == IR_OP_IF || n->op == IR_OP_LOOP || n->op == IR_OP_SCAN || n->nout < 1)
        return 0;
    char name[300];
    snprintf(name, sizeof name, "%.250s_check", kname);
    kir_expr **memo = calloc((size_t)c->p->nsyms + 1, sizeof *memo);
    if (!memo || !(c->chk = kir_kernel_create(name, g))) {
        free(memo);
        return ir_errorf(c->d, "out of memory");
    }
    c->chk_at = &c->chk->body;
    int rc = node_checks(c, n);
    kir_kernel *k = c->chk;
    c->chk = NULL;
    for (int o = 0; o < n->nout && rc == 0; o++)
        for (int d = 0; n->out[o] && d < n->out[o]->type.rank && rc == 0; d++)
            if (sym_in_sub(c->p, n->out[o]->type.dims[d].sym) &&
                !checked_sym(c, k, n, n->out[o]->type.dims[d].sym, memo))
                rc = ir_errorf(c->d, "out of memory");
    free(memo);
    if (rc < 0 || k->body.n == 0) {
        kir_kernel_destroy(k);
        return rc;
    }
    return add_kernel(c, k, n, 0, NULL);
}

static int emit_scope(pbuild *c, int si, const char *prefix)
{
    const pscope *sc = &c->scopes[si];
    const ir_graph *g = sc->g;
    for (int kx = 0; kx < g->nnodes; kx++) {
        if (sc->root[kx] != kx || (si == 0 && c->at_load[kx]))
            continue;   /* a member, or run at load (lower_kernels) */
        char kname[256];
        snprintf(kname, sizeof kname, "%.200s_k%d", prefix, kx);
        if (reshape_needs_check(g->nodes[kx]) && add_reshape_check(c, g, g->nodes[kx], sc->bind, kname) < 0)
            return -1;
        if (si > 0 && c->p->dynamic && add_node_checks(c, g, g->nodes[kx], kname) < 0)
            return -1;
        if (is_view(sc->bind, g->nodes[kx]) || (si == 0 && c->p->dynamic && c->view[kx]))
            continue;   /* a reshape in place (plan.c, arena_view): no kernel */
        int op = g->nodes[kx]->op;
        int rc = op == IR_OP_IF     ? emit_if(c, si, g->nodes[kx], kname)
                 : op == IR_OP_LOOP ? emit_loop(c, si, g->nodes[kx], kname)
                 : op == IR_OP_SCAN ? emit_scan(c, si, g->nodes[kx], kname)
                                    : lower_one(c, g, sc->bind, kx, kname);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* Points the load-time results' bindings at the init buffer as the init
 * function sees it (its arena: they are written there) or as the run does
 * (read-only weights of index CG_WEIGHT_INIT), same offsets. */
static void bind_load_time_as(pbuild *c, kir_buf_kind kind)
{
    const ir_graph *g = c->g;
    for (int k = 0; k < g->nnodes; k++)
        for (int i = 0; c->at_load[k] && i < g->nodes[k]->nout; i++) {
            cg_binding *b = &c->bind[g->nodes[k]->out[i]->id];
            *b = (cg_binding){kind, kind == KIR_BUF_WEIGHT ? CG_WEIGHT_INIT : 0, b->offset};
        }
}

/* The load-time kernels' results in the init buffer, 64-aligned in node
 * order (they all stay: the run reads any of them, and a result only
 * another load-time kernel reads is not told apart yet). Before the arena
 * layout, which leaves them out, and the subgraphs' bindings, whose
 * captures may read them. */
static int bind_load_time(pbuild *c)
{
    const ir_graph *g = c->g;
    cg_program *p = c->p;
    for (int k = 0; k < g->nnodes; k++)
        for (int i = 0; c->at_load[k] && i < g->nodes[k]->nout; i++) {
            const ir_value *v = g->nodes[k]->out[i];
            int64_t bytes = static_bytes(v);
            if (bytes < 0 || bytes > ((int64_t)1 << 46))
                return ir_node_errorf(c->d, g->nodes[k], "result '%.100s' is too large", v->name);
            c->bind[v->id] = (cg_binding){KIR_BUF_WEIGHT, CG_WEIGHT_INIT, p->init_bytes};
            p->init_bytes += (bytes + 63) & ~(int64_t)63;
        }
    return 0;
}

/* The load-time kernels first (kernels [0, ninit_kernels), steps [0,
 * ninit_steps): the init function), then the run's. */
static int lower_kernels(pbuild *c, const char *prefix)
{
    int nodes = 0;   /* a kernel per node at most, a Loop's two rows checks, a Reshape's shape check,
                        a subgraph node's checks */
    for (int si = 0; si < c->nscopes; si++)
        for (int kx = 0; kx < c->scopes[si].g->nnodes; kx++) {
            const ir_node *n = c->scopes[si].g->nodes[kx];
            nodes += 1 + (n->op == IR_OP_LOOP || reshape_needs_check(n)) + (si > 0);
        }
    c->p->kernels = calloc((size_t)nodes + 1, sizeof *c->p->kernels);
    if (!c->p->kernels)
        return ir_errorf(c->d, "out of memory");
    bind_load_time_as(c, KIR_BUF_ARENA);
    int rc = 0;
    for (int kx = 0; kx < c->g->nnodes && rc == 0; kx++)
        if (c->at_load[kx]) {
            char kname[256];
            snprintf(kname, sizeof kname, "%.200s_k%d", prefix, kx);
            rc = lower_one(c, c->g, c->bind, kx, kname);
        }
    bind_load_time_as(c, KIR_BUF_WEIGHT);
    c->p->ninit_kernels = c->p->nkernels;
    c->p->ninit_steps = c->p->nsteps;
    return rc < 0 ? -1 : emit_scope(c, 0, prefix);
}

/* Kernel-scope scratch (kir.h) lives in the arena after what layout_arena
 * sized: kernels run one after another, so all share one region of the
 * largest kernel's size. Runs after lowering, when the kernels have said
 * what they need; fills each such buffer's offset and grows the arena. */
static int reserve_kernel_scratch(pbuild *c)
{
    cg_program *p = c->p;
    int64_t base = (p->arena_bytes + 63) / 64 * 64, most = 0;
    int64_t init_base = (p->init_bytes + 63) / 64 * 64, init_most = 0;
    for (int kx = 0; kx < p->nkernels; kx++) {
        kir_kernel *k = p->kernels[kx].k;
        bool at_load = kx < p->ninit_kernels;   /* its arena is the init buffer */
        int64_t used = 0, bytes;
        for (int i = 0; i < k->nbufs; i++) {
            kir_buf *b = &k->bufs[i];
            if (b->kind != KIR_BUF_SCRATCH || b->space != KIR_SPACE_KERNEL)
                continue;
            if (p->dynamic && !at_load)
                return ir_node_errorf(c->d, p->kernels[kx].node, "kernel-scope scratch '%.100s' in a model with "
                                      "symbolic shapes is not supported yet", b->name);
            if (kir_buf_bytes(b, &bytes) < 0 || bytes > ((int64_t)1 << 40) || used > ((int64_t)1 << 40))
                return ir_node_errorf(c->d, p->kernels[kx].node, "kernel-scope scratch '%.100s' is too large",
                                      b->name);
            b->offset = (at_load ? init_base : base) + used;
            used += (bytes + 63) / 64 * 64;
        }
        if (at_load)
            init_most = used > init_most ? used : init_most;
        else
            most = used > most ? used : most;
    }
    if (most)
        p->arena_bytes = base + most;
    if (init_most)
        p->init_bytes = init_base + init_most;
    return 0;
}

/* ---- the program -------------------------------------------------------------- */

int cg_program_build(const ir_graph *g, const cg_schedule *s, const char *prefix, bool external_weights,
                     cg_program **out, icc_diag *d)
{
    *out = NULL;
    cg_program *p = calloc(1, sizeof *p);
    if (!p)
        return ir_errorf(d, "out of memory");
    p->prefix = prefix && *prefix ? prefix : "model";
    p->external_weights = external_weights;
    pbuild c = {.g = g, .s = s, .d = d, .p = p};
    int rc = find_symbols(&c) < 0 || find_load_time(&c) < 0 || check_graph(&c) < 0 || bind_values(&c) < 0 ||
                     bind_load_time(&c) < 0 || layout_arena(&c) < 0 || bind_scopes(&c) < 0 ||
             (p->dynamic && find_shape_checks(&c) < 0) || describe_io(&c) < 0 || lower_kernels(&c, p->prefix) < 0 ||
                     reserve_kernel_scratch(&c) < 0
                 ? -1 : 0;
    for (int si = 1; si < c.nscopes; si++) {
        free(c.scopes[si].bind);
        free(c.scopes[si].root);
    }
    free(c.scopes);
    free(c.bind);
    free(c.root);
    free(c.at_load);
    free(c.view);
    free(c.sym_est);
    if (rc < 0) {
        cg_program_destroy(p);
        return -1;
    }
    *out = p;
    return 0;
}

void cg_program_destroy(cg_program *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->nkernels; i++) {
        kir_kernel_destroy(p->kernels[i].k);
        free(p->kernels[i].item_bytes);
    }
    free(p->kernels);
    free(p->steps);
    free(p->sym_desc);
    free(p->symbol_names);
    free(p->derived);
    free(p->derived_message);
    free(p->derived_in_sub);
    for (int i = 0; i < p->nslots; i++)
        free(p->slots[i].live_with);
    free(p->slots);
    free(p->slot_order);
    free(p->checks);
    for (int i = 0; i < p->nmessages; i++)
        free(p->messages[i]);
    free(p->messages);
    free(p->weights);
    free(p->wpieces);
    free(p->inputs);
    free(p->outputs);
    free(p->copies);
    for (int i = 0; p->profile && i < p->nkernels; i++) {
        free(p->profile[i].name);
        free(p->profile[i].ops);
        free(p->profile[i].cost[0].terms);
        free(p->profile[i].cost[1].terms);
    }
    free(p->profile);
    free(p);
}

unsigned char *cg_program_take_weights(cg_program *p, int64_t *bytes)
{
    unsigned char *w = (unsigned char *)cg_program_weights(p, NULL);
    *bytes = p->weights_bytes;
    p->weights = NULL;
    return w;
}

char *cg_kernels_text(const ir_graph *g, const cg_schedule *s, const char *prefix, icc_diag *d)
{
    cg_program *p;
    if (cg_program_build(g, s, prefix, true, &p, d) < 0)
        return NULL;
    size_t len = 0, cap = 0;
    char *all = NULL;
    for (int i = 0; i < p->nkernels; i++) {
        char *text = kir_print(p->kernels[i].k);
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
    cg_program_destroy(p);
    return all ? all : calloc(1, 1);
oom:
    ir_errorf(d, "out of memory");
    free(all);
    cg_program_destroy(p);
    return NULL;
}
