/* emit_math.c - integer powers as a square-and-multiply loop (emit_math.h).
 * The f32 exp/log/tanh/erf expansions are target-neutral kernel IR now
 * (codegen/kir_math.c), which the emitter applies before emitting.
 */
#include "codegen/llvm/emit_math.h"

#include <stddef.h>

LLVMValueRef cg_math_ipow(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef y, bool is_signed)
{
    LLVMTypeRef ty = LLVMTypeOf(x);
    LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(b));
    LLVMContextRef cx = LLVMGetTypeContext(ty);
    LLVMValueRef zero = LLVMConstNull(ty), one = LLVMConstInt(ty, 1, 0);
    LLVMValueRef neg = is_signed ? LLVMBuildICmp(b, LLVMIntSLT, y, zero, "") : NULL;
    LLVMValueRef e0 = neg ? LLVMBuildSelect(b, neg, zero, y, "") : y;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
    LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(cx, fn, "pow");
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(cx, fn, "pow.step");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cx, fn, "pow.done");
    LLVMBuildBr(b, head);
    LLVMPositionBuilderAtEnd(b, head);
    LLVMValueRef r = LLVMBuildPhi(b, ty, ""), base = LLVMBuildPhi(b, ty, ""), e = LLVMBuildPhi(b, ty, "");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntNE, e, zero, ""), body, done);
    LLVMPositionBuilderAtEnd(b, body);
    LLVMValueRef odd = LLVMBuildTrunc(b, e, LLVMInt1TypeInContext(cx), "");
    LLVMValueRef r2 = LLVMBuildSelect(b, odd, LLVMBuildMul(b, r, base, ""), r, "");
    LLVMValueRef base2 = LLVMBuildMul(b, base, base, "");
    LLVMValueRef e2 = LLVMBuildLShr(b, e, one, "");
    LLVMBuildBr(b, head);
    LLVMAddIncoming(r, (LLVMValueRef[]){one, r2}, (LLVMBasicBlockRef[]){pre, body}, 2);
    LLVMAddIncoming(base, (LLVMValueRef[]){x, base2}, (LLVMBasicBlockRef[]){pre, body}, 2);
    LLVMAddIncoming(e, (LLVMValueRef[]){e0, e2}, (LLVMBasicBlockRef[]){pre, body}, 2);
    LLVMPositionBuilderAtEnd(b, done);
    if (!neg)
        return r;
    /* 1/x**|y| truncated: 1 for x = 1, +-1 for x = -1 by y's parity, else 0 */
    LLVMValueRef m1 = LLVMConstAllOnes(ty);
    LLVMValueRef yodd = LLVMBuildTrunc(b, y, LLVMInt1TypeInContext(cx), "");
    LLVMValueRef inv = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, x, one, ""), one,
                                       LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, x, m1, ""),
                                                       LLVMBuildSelect(b, yodd, m1, one, ""), zero, ""), "");
    return LLVMBuildSelect(b, neg, inv, r, "");
}
