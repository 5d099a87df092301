/* onnx.c - ModelProto -> ir_graph (stub until implemented). */
#include "frontend/onnx.h"

ir_graph *icc_onnx_load_buffer(const void *buf, size_t len, const char *base_dir,
                               const char *display, icc_diag *d)
{
    (void)buf;
    (void)len;
    (void)base_dir;
    ir_errorf(d, "%s: the ONNX frontend is not implemented yet", display);
    return NULL;
}

ir_graph *icc_onnx_load_file(const char *path, icc_diag *d)
{
    return icc_onnx_load_buffer(NULL, 0, NULL, path, d);
}

int icc_onnx_load_tensor_file(const char *path, ir_tensor *out, char **name, icc_diag *d)
{
    (void)out;
    (void)name;
    return ir_errorf(d, "%s: the ONNX frontend is not implemented yet", path);
}
