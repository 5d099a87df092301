/* header.h - the C header (model.h) that goes with a compiled model.so.
 *
 * The header declares the model's descriptor symbol, one set of macros
 * and a dims array per input and output (index, dtype, rank, name), and,
 * when every input's shape is static, a typed `<prefix>_run` wrapper
 * around icc_run. Tensor names become C identifiers: bytes outside
 * [A-Za-z0-9_] map to '_', a leading digit gets a '_' before it, and
 * names that collide (ignoring case, since macros are upper-cased) get
 * a numeric suffix "_2", "_3", ... in graph order. The output depends
 * only on the graph and the prefix (no dates or paths), so it is
 * reproducible.
 */
#ifndef ICC_CG_HEADER_H
#define ICC_CG_HEADER_H

#include "ir/ir.h"

/* Writes the C header for a model compiled from g with symbol prefix
 * `prefix` (NULL means "model") to path, atomically: a temporary file
 * renamed into place, so a failure never leaves a partial file. Returns
 * 0, or -1 with a one-line message in d (invalid prefix, I/O error). */
int cg_write_header(const ir_graph *g, const char *prefix, const char *path, icc_diag *d);

/* The same header as a malloc'd NUL-terminated string the caller frees;
 * NULL on out of memory or when prefix is not a valid one (see
 * cg_header_prefix_ok). */
char *cg_header_string(const ir_graph *g, const char *prefix);

/* True when prefix can name a model: a C identifier other than "icc"
 * (whose names runtime.h takes). */
bool cg_header_prefix_ok(const char *prefix);

#endif
