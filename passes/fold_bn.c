/* fold_bn.c - (not implemented yet). */
#include "passes/pass.h"

int pass_fold_bn(pass_ctx *c)
{
    return ir_errorf(c->diag, "not implemented yet");
}
