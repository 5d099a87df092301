/* lower_conv.c - convolution and pooling: nothing yet.
 */
#include "codegen/lower_internal.h"
#include "ir/ops.h"

bool cg_can_lower_conv(const ir_node *n)
{
    (void)n;
    return false;
}

int lower_conv(lctx *c)
{
    (void)c;
    return -1;
}
