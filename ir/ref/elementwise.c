/* elementwise.c - shape functions and reference kernels (stubs until implemented). */
#include "ir/ref/ref.h"

int shape_broadcast(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_binary(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_broadcast_lhs(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_variadic(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_compare(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_unary(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_clip(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_where(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_where(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_cast(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_cast(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}
