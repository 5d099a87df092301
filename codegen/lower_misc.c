/* lower_misc.c - the ops no other family claims: nothing yet.
 */
#include "codegen/lower_internal.h"
#include "ir/ops.h"

bool cg_can_lower_misc(const ir_node *n)
{
    (void)n;
    return false;
}

int lower_misc(lctx *c)
{
    (void)c;
    return -1;
}
