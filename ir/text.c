/* text.c - printer and parser of the textual IR (stub until implemented). */
#include "ir/text.h"

#include <stdlib.h>

int ir_print(const ir_graph *g, FILE *f)
{
    (void)g;
    (void)f;
    return -1;
}

char *ir_print_string(const ir_graph *g, size_t *len)
{
    (void)g;
    (void)len;
    return NULL;
}

ir_graph *ir_parse(const char *text, size_t len, const char *display, icc_diag *d)
{
    (void)text;
    (void)len;
    ir_errorf(d, "%s: the text parser is not implemented yet", display);
    return NULL;
}
