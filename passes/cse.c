/* cse.c - (not implemented yet). */
#include "passes/pass.h"

int pass_cse(pass_ctx *c)
{
    return ir_errorf(c->diag, "not implemented yet");
}
