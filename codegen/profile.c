/* profile.c - what `icc --profile` tells the descriptor of each kernel:
 * the names and op types of the nodes its fused group holds, the group's
 * static FLOPs and bytes, and the kind of arithmetic its code runs on
 * (icc_kernel_kind: f32 FMAs, bf16 or int8 dot products, AMX tiles), so
 * that a profiler can print a roofline line per kernel, against the peak
 * of its kind, from the per-kernel times the run records (the LLVM
 * backend's run does, codegen/llvm/model.c). With symbolic dims the
 * FLOPs and bytes are also fitted as polynomials in the symbols the
 * kernel's values name (fit_costs), which the model evaluates at a run's
 * dims (icc_model_desc.kernel_costs).
 */
#include "codegen/program.h"
#include "ir/ops.h"
#include "ir/stats.h"
#include "ir/target.h"

#include <math.h>
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
    int *stamp, gen;           /* fit_costs' ir_group_cost marks (g->nvalues + 1) */
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
    *c = (graph_costs){.g = g, .root = malloc(sizeof *c->root * ((size_t)g->nnodes + 1)),
                       .stamp = calloc((size_t)g->nvalues + 1, sizeof *c->stamp)};
    if (!c->root || !c->stamp || ir_graph_group_roots(g, c->root) < 0 || ir_graph_kernel_costs(g, &c->kc, &c->nk) < 0)
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

/* f's values on the grid {1, .., B}^nv (B = 2 or 3; digit i of the index
 * in base B is variable i's value - 1) become the coefficients of the
 * polynomial of degree < B in each variable through them, in place (digit
 * i is variable i's power): the line or the quadratic through the points,
 * one variable at a time. */
static void interpolate(double *f, int nv, int npts, int B)
{
    for (int i = 0, s = 1; i < nv; i++, s *= B)
        for (int b = 0; b < npts; b++) {
            if ((b / s) % B)
                continue;
            double f1 = f[b], f2 = f[b + s];
            if (B == 2) {
                f[b] = 2 * f1 - f2, f[b + s] = f2 - f1;
                continue;
            }
            double f3 = f[b + 2 * s];
            double c2 = (f1 - 2 * f2 + f3) / 2, c1 = f2 - f1 - 3 * c2;
            f[b] = f1 - c1 - c2, f[b + s] = c1, f[b + 2 * s] = c2;
        }
}

static double poly_at(const double *c, int nv, int npts, int B, const int64_t *x)
{
    double sum = 0;
    for (int b = 0; b < npts; b++) {
        double t = c[b];
        for (int i = 0, q = b; i < nv && t != 0; i++, q /= B)
            for (int e = 0; e < q % B; e++)
                t *= (double)x[i];
        sum += t;
    }
    return sum;
}

/* The group rooted at node r of g as polynomials in the symbols its
 * values' dims name (at most CG_COST_VARS, all in the program's symbol
 * table): its cost (ir_group_cost, the symbols at the estimates' values,
 * ir/stats.h) at every point of {1, 2, 3}^nv, or of {1, 2}^nv past 6
 * variables (a Concat of several planes: linear in each), interpolated,
 * then checked at another point (5, 7, 11, ...: a formula of higher
 * degree fails it).
 * ki->cost[*].nterms stays -1 when none fits; -1 on out of memory. */
static int fit_costs(const ir_graph *g, const int *root, int r, const cg_program *p, int *stamp, int *gen,
                     cg_kernel_info *ki)
{
    ki->cost[0].nterms = ki->cost[1].nterms = -1;
    int32_t var[CG_COST_VARS];
    int nv = 0, nm = 0, rc = 0;
    for (int k = 0; k < g->nnodes; k++)
        nm += root[k] == r;
    int *mem = malloc(sizeof *mem * ((size_t)nm + 1));
    int64_t *vals = NULL, x[CG_COST_VARS];
    double *f = NULL;
    if (!mem)
        return -1;
    nm = 0;
    for (int k = 0; k < g->nnodes; k++)
        if (root[k] == r)
            mem[nm++] = k;
    for (int m = 0; m < nm; m++) {
        const ir_node *n = g->nodes[mem[m]];
        for (int i = 0; i < n->nin + n->nout; i++) {
            const ir_value *v = i < n->nin ? n->in[i] : n->out[i - n->nin];
            for (int d = 0; v && d < v->type.rank; d++) {
                int32_t s = v->type.dims[d].sym;
                if (s <= 0)
                    continue;
                if (s >= p->nsyms || p->sym_desc[s] < 0)
                    goto done;   /* no value at run time */
                int j = 0;
                while (j < nv && var[j] != s)
                    j++;
                if (j == nv && nv == CG_COST_VARS)
                    goto done;
                if (j == nv)
                    var[nv++] = s;
            }
        }
    }
    if (!nv)
        goto done;   /* static: the table's values are exact */
    int npts = 1, B = nv <= 6 ? 3 : 2;
    for (int i = 0; i < nv; i++)
        npts *= B;
    vals = calloc((size_t)g->nsyms + 1, sizeof *vals);
    f = malloc(sizeof *f * 2 * (size_t)npts);
    if (!vals || !f) {
        rc = -1;
        goto done;
    }
    for (int s = 0; s < g->nsyms; s++)
        vals[s] = 1;
    ir_stats_set_syms(vals, g->nsyms);
    ir_kernel_cost kc;
    for (int b = 0; b < npts; b++) {
        for (int i = 0, q = b; i < nv; i++, q /= B)
            vals[var[i]] = 1 + q % B;
        ir_group_cost(g, mem, nm, r, stamp, ++*gen, &kc);
        f[b] = (double)kc.flops, f[npts + b] = (double)kc.bytes;
    }
    static const int64_t probe[CG_COST_VARS] = {5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43};
    for (int i = 0; i < nv; i++)
        vals[var[i]] = x[i] = probe[i];
    ir_group_cost(g, mem, nm, r, stamp, ++*gen, &kc);
    ir_stats_set_syms(NULL, 0);
    double want[2] = {(double)kc.flops, (double)kc.bytes};
    for (int w = 0; w < 2; w++) {
        double *c = f + (size_t)w * (size_t)npts;
        interpolate(c, nv, npts, B);
        double got = poly_at(c, nv, npts, B, x);
        if (fabs(got - want[w]) > 1e-9 * fabs(want[w]) + 0.5)
            continue;   /* not a polynomial of degree <= 2 in each */
        int nt = 0;
        for (int b = 0; b < npts; b++)
            nt += fabs(c[b]) > 1e-6;
        cg_cost_term *t = calloc((size_t)nt + 1, sizeof *t);
        if (!t) {
            rc = -1;
            goto done;
        }
        nt = 0;
        for (int b = 0; b < npts; b++) {
            if (fabs(c[b]) <= 1e-6)
                continue;
            cg_cost_term *tm = &t[nt++];
            tm->coef = c[b];
            for (int i = 0, q = b; i < nv; i++, q /= B)
                if (q % B)
                    tm->sym[tm->nf] = var[i], tm->pow[tm->nf++] = q % B;
        }
        ki->cost[w] = (cg_cost_poly){nt, t};
    }
done:
    ir_stats_set_syms(NULL, 0);
    free(mem);
    free(vals);
    free(f);
    return rc;
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
        if (p->dynamic && fit_costs(kg, c->root, c->root[r], p, c->stamp, &c->gen, ki) < 0) {
            rc = -1;
            break;
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
        free(gc[i].stamp);
    }
    free(gc);
    if (rc == -2)
        return ir_errorf(d, "--profile: a kernel's node is not in its graph");
    return rc == 0 ? 0 : ir_errorf(d, "out of memory");
}
