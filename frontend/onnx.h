/* onnx.h - the ONNX frontend: ModelProto bytes -> ir_graph.
 *
 * The loader checks nesting depth on the raw bytes before protobuf-c
 * unpacks anything (protobuf-c recurses without a limit), checks every
 * tensor's declared size against the bytes that back it before
 * allocating, resolves external data inside the model's folder only, and
 * reports every unsupported op at once. Errors are one line:
 *   "model.onnx: node 'conv1' (Conv): kernel_shape has 3 dims, input has rank 4"
 */
#ifndef ICC_FRONTEND_ONNX_H
#define ICC_FRONTEND_ONNX_H

#include "ir/ir.h"

/* Loads the model at path. Returns a graph the caller owns
 * (ir_graph_destroy), shapes inferred and verified, or NULL with d set. */
ir_graph *icc_onnx_load_file(const char *path, icc_diag *d);

/* As icc_onnx_load_file, calling pin(ctx, g, d) once the main graph's
 * inputs exist, before any node is imported (-1 fails the load): input
 * dims pinned there (--shape) are static for the frontend's own
 * expansions too, such as DynamicQuantizeLSTM's unrolled steps. */
typedef int (*icc_onnx_pin_fn)(void *ctx, ir_graph *g, icc_diag *d);
ir_graph *icc_onnx_load_file_pinned(const char *path, icc_onnx_pin_fn pin, void *ctx, icc_diag *d);

/* Same from a buffer. base_dir is where external data is resolved (NULL:
 * external data is rejected); display is the name used in messages. */
ir_graph *icc_onnx_load_buffer(const void *buf, size_t len, const char *base_dir,
                               const char *display, icc_diag *d);

/* Loads a serialized TensorProto file (the ONNX test data format).
 * On success *out holds malloc'd data the caller frees (free(out->data)),
 * and *name (if non-NULL) a malloc'd copy of the tensor's name. */
int icc_onnx_load_tensor_file(const char *path, ir_tensor *out, char **name, icc_diag *d);

/* Newest opset of the default domain whose semantics icc implements
 * (that of onnx 1.22); a model importing a newer one is rejected. */
#define ICC_ONNX_MAX_OPSET 27

/* Maximum nesting depth of protobuf messages accepted. */
#define ICC_ONNX_MAX_DEPTH 64

#endif
