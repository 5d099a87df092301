/* text.h - the textual IR (.icc): printer and parser, specified in
 * docs/ir.md. print -> parse -> print yields identical text. */
#ifndef ICC_TEXT_H
#define ICC_TEXT_H

#include <stdio.h>
#include "ir/ir.h"

/* Writes g to f. Returns 0, or -1 on a write error. */
int ir_print(const ir_graph *g, FILE *f);

/* Returns g as a malloc'd NUL-terminated string (caller frees), or NULL
 * on out of memory; *len (if non-NULL) receives its length. */
char *ir_print_string(const ir_graph *g, size_t *len);

/* Parses text (len bytes, need not be NUL-terminated). display names the
 * source in messages: "x.icc:12:5: expected ')'". Returns a verified graph
 * the caller owns, or NULL with d set. */
ir_graph *ir_parse(const char *text, size_t len, const char *display, icc_diag *d);

#endif
