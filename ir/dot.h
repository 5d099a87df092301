/* dot.h - the graph as Graphviz text (icc --emit=dot). */
#ifndef ICC_DOT_H
#define ICC_DOT_H

#include <stdio.h>
#include "ir/ir.h"

/* Writes g to f as a `dot` digraph; -1 on a write error. */
int ir_print_dot(const ir_graph *g, FILE *f);

#endif
