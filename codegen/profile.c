/* profile.c - what `icc --profile` tells the descriptor of each kernel:
 * the names and op types of the nodes its fused group holds, and the
 * group's static FLOPs and bytes, so that a profiler can print a roofline
 * line per kernel from the per-kernel times the run records (the LLVM
 * backend's run does, codegen/llvm/model.c).
 */
#include "codegen/program.h"
#include "ir/ops.h"

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

int cg_program_profile(const ir_graph *g, cg_program *p, icc_diag *d)
{
    ir_kernel_cost *kc = NULL;
    int nk = 0;
    int *root = malloc(sizeof *root * ((size_t)g->nnodes + 1));
    if (!root || ir_graph_group_roots(g, root) < 0 || ir_graph_kernel_costs(g, &kc, &nk) < 0) {
        free(root);
        return ir_errorf(d, "out of memory");
    }
    /* one kernel per group root, in node order, as cg_program_build made them */
    if (nk != p->nkernels) {
        free(root);
        free(kc);
        return ir_errorf(d, "--profile: %d kernels in the graph, %d in the program", nk, p->nkernels);
    }
    p->profile = calloc((size_t)nk + 1, sizeof *p->profile);
    int rc = p->profile ? 0 : -1;
    for (int k = 0; k < nk && rc == 0; k++) {
        cg_kernel_info *ki = &p->profile[k];
        size_t nl = 0, ol = 0;
        ki->flops = kc[k].flops;
        ki->bytes = kc[k].bytes;
        for (int j = 0; j <= kc[k].root && rc == 0; j++) {
            if (root[j] != kc[k].root)
                continue;
            const ir_node *n = g->nodes[j];
            char anon[32];
            snprintf(anon, sizeof anon, "#%d", j);   /* an unnamed node: its index */
            rc = join(&ki->name, &nl, n->name[0] ? n->name : anon) | join(&ki->ops, &ol, ir_ops[n->op].name);
        }
    }
    free(root);
    free(kc);
    return rc == 0 ? 0 : ir_errorf(d, "out of memory");
}
