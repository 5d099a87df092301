/* nn.c - shape functions and reference kernels (stubs until implemented). */
#include "ir/ref/ref.h"

int shape_matmul(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_matmul(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_gemm(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_gemm(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_conv(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_conv(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_conv_transpose(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_conv_transpose(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_batchnorm(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_batchnorm(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_instancenorm(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_layernorm(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_layernorm(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_pool(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_maxpool(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_avgpool(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_global_pool(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_global_pool(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_softmax(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}
