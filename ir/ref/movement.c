/* movement.c - shape functions and reference kernels (stubs until implemented). */
#include "ir/ref/ref.h"

int shape_reshape(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_copy(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_flatten(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_transpose(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_transpose(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_squeeze(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_unsqueeze(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_concat(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_concat(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_split(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_split(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_slice(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_slice(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_gather(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_gather(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_gather_elements(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_gather_elements(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_scatter_nd(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_expand(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_expand(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_tile(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_tile(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_pad(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_pad(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_shape(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_shape(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_size(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_size(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_constant_of_shape(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_constant_of_shape(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_range(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_range(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_dropout(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_dropout(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_depth_to_space(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_depth_to_space(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int shape_space_to_depth(ir_shape_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_space_to_depth(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}

int ref_trilu(ir_ref_ctx *c)
{
    return ir_node_errorf(c->diag, c->node, "not implemented yet");
}
