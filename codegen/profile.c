/* profile.c - what `icc --profile` tells the descriptor of each kernel:
 * the names and op types of the nodes its fused group holds, the group's
 * static FLOPs and bytes, and the kind of arithmetic its code runs on
 * (icc_kernel_kind: f32 FMAs, bf16 or int8 dot products, AMX tiles), so
 * that a profiler can print a roofline line per kernel, against the peak
 * of its kind, from the per-kernel times the run records (the LLVM
 * backend's run does, codegen/llvm/model.c).
 */
#include "codegen/program.h"
#include "ir/ops.h"
#include "ir/target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends s to *buf (length *len), with '+' first when *buf is not
 * empty; -1 on out of memory. */
static int join(char **buf, size_t *len, const char *s)
{
    size_t n = strlen(s);
    char *b = realloc(*buf, *len + n + 2);
    if (!b)
        return -1;
    if (*len)
        b[(*len)++] = '+';
    memcpy(b + *len, s, n + 1);
    *len += n;
    *buf = b;
    return 0;
}

/* The costs and fused groups of one graph the program's kernels come
 * from (the top level, or a branch or body). */
typedef struct {
    const ir_graph *g;
    int *root;
    ir_kernel_cost *kc;
    int nk;
} graph_costs;

/* The path of a node of subgraph g: "<control node>/<attribute>/" for
 * each enclosing control node, outermost first (empty at the top). */
static void node_path(const ir_graph *g, char *buf, size_t n)
{
    buf[0] = 0;
    const ir_graph *pg = g ? g->parent : NULL;
    if (!pg)
        return;
    for (int k = 0; k < pg->nnodes; k++) {
        const ir_node *cn = pg->nodes[k];
        for (int a = 0; a < cn->nattr; a++)
            if (cn->attrs[a].kind == IR_ATTR_GRAPH && cn->attrs[a].graph == g) {
                node_path(pg, buf, n);
                size_t at = strlen(buf);
                char anon[32];
                snprintf(anon, sizeof anon, "#%d", k);
                snprintf(buf + at, n - at, "%s/%s/", cn->name[0] ? cn->name : anon, cn->attrs[a].name);
                return;
            }
    }
}

static graph_costs *costs_of(graph_costs **gc, int *ngc, const ir_graph *g)
{
    for (int i = 0; i < *ngc; i++)
        if ((*gc)[i].g == g)
            return &(*gc)[i];
    graph_costs *ng = realloc(*gc, sizeof *ng * ((size_t)*ngc + 1));
    if (!ng)
        return NULL;
    *gc = ng;
    graph_costs *c = &ng[(*ngc)++];
    *c = (graph_costs){.g = g, .root = malloc(sizeof *c->root * ((size_t)g->nnodes + 1))};
    if (!c->root || ir_graph_group_roots(g, c->root) < 0 || ir_graph_kernel_costs(g, &c->kc, &c->nk) < 0)
        return NULL;
    return c;
}

/* Whether t has one of the features in f ("a|b", LLVM's names). */
static bool has_any_feature(const icc_target_desc *t, const char *f)
{
    for (const char *p = f; p && *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        for (int i = 0; i < ICC_TF_COUNT; i++) {
            const char *nm = icc_target_feature_name((icc_target_feature)i);
            if (strlen(nm) == len && !strncmp(nm, p, len) && icc_target_has(t, (icc_target_feature)i))
                return true;
        }
        p = bar ? bar + 1 : NULL;
    }
    return false;
}

/* AMX tiles above dot products above f32: a kernel is measured against
 * the fastest unit it uses. */
static int kind_rank(icc_kernel_kind k)
{
    return k == ICC_KERNEL_AMX_BF16 || k == ICC_KERNEL_AMX_INT8 ? 2 : k == ICC_KERNEL_F32 ? 0 : 1;
}

/* The kind of the intrinsics in b and its nested blocks that t runs on
 * their instruction (kir_intrin_kind), the highest ranked, into *kind. */
static void block_kind(const kir_block *b, const icc_target_desc *t, icc_kernel_kind *kind)
{
    for (int i = 0; i < b->n; i++) {
        const kir_stmt *s = b->s[i];
        if (s->kind == KIR_S_FOR || s->kind == KIR_S_IF) {
            block_kind(&s->body, t, kind);
            block_kind(&s->orelse, t, kind);
        } else if (s->kind == KIR_S_INTRINSIC) {
            icc_kernel_kind k = kir_intrin_kind(s->intrin);
            if (kind_rank(k) > kind_rank(*kind) && has_any_feature(t, kir_intrin_feature(s->intrin)))
                *kind = k;
        }
    }
}

/* What kernel k's arithmetic runs on for target t: the dot-product
 * intrinsics in its code decide, not its op types (a bf16 MatMul without
 * vdpbf16ps widens to f32 FMAs: f32). */
static icc_kernel_kind kernel_kind(const kir_kernel *k, const icc_target_desc *t)
{
    icc_kernel_kind kind = ICC_KERNEL_F32;
    if (k && t)
        block_kind(&k->body, t, &kind);
    return kind;
}

/* Each kernel is one fused group of the graph its root node is in: a
 * subgraph's nodes are named with their path (If_0/then_branch/Conv_3). */
int cg_program_profile(const ir_graph *g, cg_program *p, const icc_target_desc *t, icc_diag *d)
{
    (void)g;
    graph_costs *gc = NULL;
    int ngc = 0, rc = 0;
    p->profile = calloc((size_t)p->nkernels + 1, sizeof *p->profile);
    if (!p->profile)
        return ir_errorf(d, "out of memory");
    for (int kx = 0; kx < p->nkernels && rc == 0; kx++) {
        const ir_node *rn = p->kernels[kx].node;
        const ir_graph *kg = rn->graph;
        graph_costs *c = costs_of(&gc, &ngc, kg);
        if (!c) {
            rc = -1;
            break;
        }
        int r = 0;
        while (r < kg->nnodes && kg->nodes[r] != rn)
            r++;
        if (r == kg->nnodes) {
            free(p->profile);
            p->profile = NULL;
            rc = -2;
            break;
        }
        cg_kernel_info *ki = &p->profile[kx];
        ki->kind = kernel_kind(p->kernels[kx].k, t);
        for (int i = 0; i < c->nk; i++)
            if (c->kc[i].root == c->root[r]) {
                ki->flops = c->kc[i].flops;
                ki->bytes = c->kc[i].bytes;
            }
        char path[512];
        node_path(kg, path, sizeof path);
        size_t nl = 0, ol = 0, pl = strlen(path);
        for (int j = 0; j < kg->nnodes && rc == 0; j++) {
            if (c->root[j] != c->root[r])
                continue;
            const ir_node *n = kg->nodes[j];
            char name[1024];
            if (n->name[0])
                snprintf(name, sizeof name, "%.*s%.400s", (int)pl, path, n->name);
            else
                snprintf(name, sizeof name, "%.*s#%d", (int)pl, path, j);   /* an unnamed node: its index */
            rc = join(&ki->name, &nl, name) | join(&ki->ops, &ol, ir_ops[n->op].name);
        }
    }
    for (int i = 0; i < ngc; i++) {
        free(gc[i].root);
        free(gc[i].kc);
    }
    free(gc);
    if (rc == -2)
        return ir_errorf(d, "--profile: a kernel's node is not in its graph");
    return rc == 0 ? 0 : ir_errorf(d, "out of memory");
}
