/* reduce.c - shape functions and reference kernels (stubs until implemented). */
#include "ir/ref/ref.h"

int shape_reduce(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_reduce(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_arg(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_arg(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_cumsum(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_topk(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_topk(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_resize(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_resize(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_einsum(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_einsum(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}
