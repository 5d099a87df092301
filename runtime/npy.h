/* npy.h - reading and writing NumPy .npy files (format versions 1-3). */
#ifndef ICC_NPY_H
#define ICC_NPY_H

#include "ir/ir.h"

/* Reads path into *out; out->data is malloc'd and owned by the caller.
 * Rejects Fortran order, unknown dtypes, and sizes that disagree with the
 * file's length, before allocating. */
int icc_npy_read(const char *path, ir_tensor *out, icc_diag *d);

/* Writes t to path (atomically: a temporary file renamed into place, so
 * a failure never leaves a partial file). */
int icc_npy_write(const char *path, const ir_tensor *t, icc_diag *d);

#endif
