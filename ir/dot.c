/* dot.c - the graph as Graphviz `dot` text (--emit=dot): graph inputs as
 * ellipses, constants as notes, nodes as boxes with their op, name and
 * output types, edges from producers to users, fused groups as dashed
 * clusters (one per kernel) labelled with their id. */
#include "ir/dot.h"
#include "ir/ops.h"

#include <stdlib.h>
#include <string.h>

/* Writes s as a dot string body: quotes and backslashes escaped, control
 * bytes dropped, long names cut. */
static void esc(FILE *f, const char *s)
{
    size_t n = 0;
    for (; *s && n < 120; s++, n++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fputc('\\', f);
        if (c >= 0x20)
            fputc(c, f);
    }
    if (*s)
        fputs("...", f);
}

static void type_label(FILE *f, const ir_graph *g, const ir_type *t)
{
    fprintf(f, "%s[", ir_dtype_name(t->dtype));
    if (t->rank < 0)
        fputs("*", f);
    for (int i = 0; i < t->rank; i++) {
        ir_dim d = t->dims[i];
        if (i)
            fputc(',', f);
        if (d.sym == 0)
            fprintf(f, "%lld", (long long)d.v);
        else if (d.sym > 0)
            esc(f, ir_graph_sym_name(g, d.sym));
        else
            fputc('?', f);
    }
    fputc(']', f);
}

/* The dot id of a value's source: its producer node, or the value itself. */
static void source_id(FILE *f, const ir_value *v)
{
    if (v->kind == IR_VAL_NODE)
        fprintf(f, "n%d", v->def->id);
    else
        fprintf(f, "v%d", v->id);
}

int ir_print_dot(const ir_graph *g, FILE *f)
{
    fputs("digraph \"", f);
    esc(f, g->name);
    fputs("\" {\n  rankdir=TB;\n  node [fontname=\"monospace\", fontsize=10];\n", f);
    for (int i = 0; i < g->nvalues; i++) {
        const ir_value *v = g->values[i];
        if (v->kind == IR_VAL_NODE)
            continue;
        fprintf(f, "  v%d [shape=%s, label=\"", v->id, v->kind == IR_VAL_INPUT ? "ellipse" : "note");
        esc(f, v->name);
        fputs("\\n", f);
        type_label(f, g, &v->type);
        fputs("\"];\n", f);
    }
    for (int k = 0; k < g->nnodes; k++) {
        const ir_node *n = g->nodes[k];
        fprintf(f, "  n%d [shape=box, style=rounded, label=\"%s", n->id, ir_ops[n->op].name);
        if (*n->name) {
            fputs("\\n", f);
            esc(f, n->name);
        }
        for (int i = 0; i < n->nout; i++) {
            fputs("\\n", f);
            type_label(f, g, &n->out[i]->type);
        }
        fputs("\"];\n", f);
        for (int i = 0; i < n->nin; i++) {
            if (!n->in[i])
                continue;
            fputs("  ", f);
            source_id(f, n->in[i]);
            fprintf(f, " -> n%d;\n", n->id);
        }
    }
    /* Clusters: a node listed inside a subgraph joins it. Members run from
     * the group's first node to its root; first[] finds the start. */
    int *root = malloc(sizeof(int) * (2 * (size_t)g->nnodes + 1));
    if (!root || ir_graph_group_roots(g, root) < 0) {
        free(root);
        return -1;
    }
    int *first = root + g->nnodes;
    for (int k = g->nnodes - 1; k >= 0; k--)
        first[k] = k;
    for (int k = g->nnodes - 1; k >= 0; k--)
        first[root[k]] = k;
    for (int k = 0; k < g->nnodes; k++) {
        if (root[k] != k || g->nodes[k]->group <= 0)
            continue;
        fprintf(f, "  subgraph cluster_g%d {\n    label=\"fused %d\"; style=dashed;\n    ", g->nodes[k]->group,
                g->nodes[k]->group);
        for (int j = first[k]; j <= k; j++)
            if (root[j] == k)
                fprintf(f, "n%d; ", g->nodes[j]->id);
        fputs("\n  }\n", f);
    }
    free(root);
    for (int i = 0; i < g->noutputs; i++) {
        fprintf(f, "  out%d [shape=ellipse, style=bold, label=\"", i);
        esc(f, g->outputs[i]->name);
        fputs("\"];\n  ", f);
        source_id(f, g->outputs[i]);
        fprintf(f, " -> out%d;\n", i);
    }
    fputs("}\n", f);
    return ferror(f) ? -1 : 0;
}
