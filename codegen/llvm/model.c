/* model.c - the LLVM backend's program assembly: a cg_program
 * (codegen/program.h) to one LLVM module.
 *
 * Each kernel becomes a function (codegen/llvm/emit.c), internal to the
 * module; `<prefix>_run` fills the symbol table from the run's dims, lays
 * out the arena (a dynamic program's slots, through `<prefix>_layout`),
 * checks the shapes, then runs the program's steps (cg_step: kernel calls,
 * and for If and Loop branches, jumps, copies and a loop counter, a basic
 * block per jump target), calling each kernel on its buffer table, per batch item where the program says so, splitting a kernel's
 * parallel outer loop over the runtime's parallel_for through the
 * `<prefix>_par` trampoline; last it copies the outputs no kernel
 * writes. The weights are a 64-aligned constant in .rodata (or mapped by
 * the runtime), and the descriptor `<prefix>_model` is a constant laid
 * out exactly as icc_model_desc. What goes where was decided by
 * cg_program_build; this file only spells it in LLVM IR.
 */
#include "codegen/llvm/model.h"
#include "codegen/llvm/emit.h"
#include "icc/runtime.h"
#include "ir/ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef ICC_VERSION
#define ICC_VERSION "0.1.0"
#endif

typedef struct {
    cg_program *p;
    const cg_target *t;
    const char *prefix;
    icc_diag *d;
    LLVMModuleRef m;
    LLVMContextRef cx;
    LLVMTypeRef ptr, i8, i32, i64, kfn_ty;
    LLVMValueRef layout_fn;    /* i64 layout(const i64 *dims, i64 *offs) */
    LLVMValueRef prof, calls, clock;   /* --profile: the times, the call counts and the clock of this run */
    LLVMTypeRef clock_ty;
    bool timed;                /* the function being emitted times its kernels (the run of a --profile model) */
    LLVMValueRef init;         /* the init buffer (env->init) in the function being emitted */
    /* A CUDA model's host side (cg_llvm_assemble_host): no run or init
     * function, only the descriptor, the weights and this device plan. */
    const void *cuda_plan;
    size_t cuda_plan_bytes;
} mctx;

/* ---- constants in the module ------------------------------------------------ */

static LLVMValueRef global_const(mctx *c, const char *name, LLVMValueRef init, unsigned align)
{
    LLVMValueRef gv = LLVMAddGlobal(c->m, LLVMTypeOf(init), name);
    LLVMSetInitializer(gv, init);
    LLVMSetGlobalConstant(gv, 1);
    LLVMSetLinkage(gv, LLVMPrivateLinkage);
    if (align)
        LLVMSetAlignment(gv, align);
    return gv;
}

static LLVMValueRef cstr(mctx *c, const char *s)
{
    return global_const(c, "str", LLVMConstStringInContext(c->cx, s, (unsigned)strlen(s), 0), 1);
}

static LLVMValueRef ci32(mctx *c, int64_t v) { return LLVMConstInt(c->i32, (unsigned long long)v, 1); }
static LLVMValueRef ci64(mctx *c, int64_t v) { return LLVMConstInt(c->i64, (unsigned long long)v, 1); }

/* One icc_tensor_desc {name, dtype, rank, dims, dim_names}. */
static LLVMValueRef tensor_desc(mctx *c, LLVMTypeRef ty, const cg_tensor *v)
{
    LLVMValueRef dims[IR_MAX_RANK + 1], names[IR_MAX_RANK + 1];
    for (int i = 0; i < v->rank; i++) {
        dims[i] = ci64(c, v->dims[i]);
        names[i] = v->dim_names[i] ? cstr(c, v->dim_names[i]) : LLVMConstPointerNull(c->ptr);
    }
    LLVMValueRef darr = v->rank ? global_const(c, "dims", LLVMConstArray(c->i64, dims, (unsigned)v->rank), 8)
                                : LLVMConstPointerNull(c->ptr);
    LLVMValueRef narr = v->named ? global_const(c, "dim_names", LLVMConstArray(c->ptr, names, (unsigned)v->rank), 8)
                                 : LLVMConstPointerNull(c->ptr);
    LLVMValueRef f[5] = {cstr(c, v->name), ci32(c, v->onnx_dtype), ci32(c, v->rank),
                         darr, narr};
    return LLVMConstNamedStruct(ty, f, 5);
}

/* ---- code ----------------------------------------------------------------------- */

/* void <prefix>_par(void *arg, int64_t i): runs chunk i of a parallel
 * kernel; arg = {kernel, bufs, syms, hi, chunk}. */
static LLVMValueRef emit_trampoline(mctx *c, LLVMTypeRef args_ty)
{
    char name[256];
    snprintf(name, sizeof name, "%s_par", c->prefix);
    LLVMTypeRef params[2] = {c->ptr, c->i64};
    LLVMValueRef fn = LLVMAddFunction(c->m, name, LLVMFunctionType(LLVMVoidTypeInContext(c->cx), params, 2, 0));
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(c->cx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c->cx, fn, "entry"));
    LLVMValueRef arg = LLVMGetParam(fn, 0), i = LLVMGetParam(fn, 1);
    LLVMValueRef f[5];
    LLVMTypeRef ft[5] = {c->ptr, c->ptr, c->ptr, c->i64, c->i64};
    for (unsigned k = 0; k < 5; k++)
        f[k] = LLVMBuildLoad2(b, ft[k], LLVMBuildStructGEP2(b, args_ty, arg, k, ""), "");
    LLVMValueRef begin = LLVMBuildMul(b, i, f[4], "begin");
    LLVMValueRef end = LLVMBuildAdd(b, begin, f[4], "end");
    LLVMValueRef lt = LLVMBuildICmp(b, LLVMIntSLT, end, f[3], "");
    end = LLVMBuildSelect(b, lt, end, f[3], "");
    LLVMValueRef cargs[4] = {f[1], f[2], begin, end};
    LLVMBuildCall2(b, c->kfn_ty, f[0], cargs, 4, "");
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
    return fn;
}

/* The trip count of kernel ck's parallel loop (cg_kernel.trips) as a
 * value of the run function; NULL when the kernel runs serially. */
static LLVMValueRef parallel_trips(mctx *c, LLVMBuilderRef b, const cg_kernel *ck, LLVMValueRef symtab)
{
    if (ck->trips.sym <= 0)
        return ck->trips.v >= 2 ? ci64(c, ck->trips.v) : NULL;
    LLVMValueRef idx = ci64(c, ck->trips.sym);
    return LLVMBuildLoad2(b, c->i64, LLVMBuildGEP2(b, c->i64, symtab, &idx, 1, ""), "trips");
}

/* A cg_size in the run function (symbols from symtab), left to right. */
static LLVMValueRef size_value(mctx *c, LLVMBuilderRef b, const cg_size *z, LLVMValueRef symtab)
{
    LLVMValueRef n = ci64(c, z->scale);
    for (int k = 0; k < z->n; k++) {
        ir_dim dm = z->dims[k];
        LLVMValueRef idx = ci64(c, dm.sym);
        n = LLVMBuildMul(b, n, dm.sym > 0 ? LLVMBuildLoad2(b, c->i64, LLVMBuildGEP2(b, c->i64, symtab, &idx, 1, ""), "")
                                          : ci64(c, dm.v), "");
    }
    return n;
}

/* The graph's symbol table (symtab[id] = symbol id's value, as kernels
 * read it) filled from the descriptor-ordered dims the run receives. */
static LLVMValueRef emit_symtab(mctx *c, LLVMBuilderRef b, LLVMValueRef dims)
{
    LLVMValueRef symtab = LLVMBuildArrayAlloca(b, c->i64, ci64(c, c->p->nsyms + 1), "symtab");
    for (int sym = 1; sym < c->p->nsyms; sym++)
        if (c->p->sym_desc[sym] >= 0) {
            LLVMValueRef di = ci64(c, c->p->sym_desc[sym]), si = ci64(c, sym);
            LLVMBuildStore(b, LLVMBuildLoad2(b, c->i64, LLVMBuildGEP2(b, c->i64, dims, &di, 1, ""), ""),
                           LLVMBuildGEP2(b, c->i64, symtab, &si, 1, ""));
        }
    return symtab;
}

/* a OP b for the layout, where OP is llvm.uadd/umul.with.overflow: the
 * result, with *ovf or'ed with the overflow bit. */
static LLVMValueRef checked_op(mctx *c, LLVMBuilderRef b, const char *name, LLVMValueRef x, LLVMValueRef y,
                               LLVMValueRef *ovf)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMTypeRef ovl[1] = {c->i64};
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(c->m, id, ovl, 1);
    LLVMValueRef args[2] = {x, y};
    LLVMValueRef r = LLVMBuildCall2(b, LLVMIntrinsicGetType(c->cx, id, ovl, 1), f, args, 2, "");
    *ovf = LLVMBuildOr(b, *ovf, LLVMBuildExtractValue(b, r, 1, ""), "");
    return LLVMBuildExtractValue(b, r, 0, "");
}

/* size_value with every product checked (the layout's sizes). */
static LLVMValueRef size_value_checked(mctx *c, LLVMBuilderRef b, const cg_size *z, LLVMValueRef symtab,
                                       LLVMValueRef *ovf)
{
    LLVMValueRef n = ci64(c, z->scale);
    for (int k = 0; k < z->n; k++) {
        ir_dim dm = z->dims[k];
        LLVMValueRef idx = ci64(c, dm.sym);
        LLVMValueRef v = dm.sym > 0 ? LLVMBuildLoad2(b, c->i64, LLVMBuildGEP2(b, c->i64, symtab, &idx, 1, ""), "")
                                    : ci64(c, dm.v);
        n = checked_op(c, b, "llvm.umul.with.overflow", n, v, ovf);
    }
    return n;
}

/* i64 <prefix>_layout(const i64 *dims, i64 *offs): the dynamic layout
 * (cg_program.slots) for the run's symbol values; stores each slot's offset and
 * returns the arena bytes. Symbol values that fit the inputs can still
 * make an intermediate overflow 64 bits ([B, heads, S, S] scores): every
 * product and sum is checked, and an overflow, or a total past INT64_MAX,
 * returns UINT64_MAX, which the runtime refuses with ICC_ERR_SHAPE. */
static LLVMValueRef emit_layout(mctx *c)
{
    char name[256];
    snprintf(name, sizeof name, "%s_layout", c->prefix);
    LLVMTypeRef params[2] = {c->ptr, c->ptr};
    LLVMValueRef fn = LLVMAddFunction(c->m, name, LLVMFunctionType(c->i64, params, 2, 0));
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(c->cx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c->cx, fn, "entry"));
    LLVMValueRef dims = LLVMGetParam(fn, 0), offs = LLVMGetParam(fn, 1);
    LLVMValueRef symtab = emit_symtab(c, b, dims);
    LLVMValueRef *end = calloc((size_t)c->p->nslots + 1, sizeof *end), total = ci64(c, 0);
    LLVMValueRef ovf = LLVMConstInt(LLVMInt1TypeInContext(c->cx), 0, 0);
    for (int i = 0; end && i < c->p->nslots; i++) {
        int sl = c->p->slot_order ? c->p->slot_order[i] : i;
        LLVMValueRef off = ci64(c, 0);
        for (const int *u = c->p->slots[sl].live_with; *u >= 0; u++)
            off = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntUGT, end[*u], off, ""), end[*u], off, "");
        off = LLVMBuildAnd(b, checked_op(c, b, "llvm.uadd.with.overflow", off, ci64(c, 63), &ovf),
                           ci64(c, ~(int64_t)63), "");
        LLVMValueRef si = ci64(c, sl);
        LLVMBuildStore(b, off, LLVMBuildGEP2(b, c->i64, offs, &si, 1, ""));
        end[sl] = checked_op(c, b, "llvm.uadd.with.overflow", off,
                             size_value_checked(c, b, &c->p->slots[sl].bytes, symtab, &ovf), &ovf);
        total = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntUGT, end[sl], total, ""), end[sl], total, "");
    }
    free(end);
    total = LLVMBuildAnd(b, checked_op(c, b, "llvm.uadd.with.overflow", total, ci64(c, 63), &ovf),
                         ci64(c, ~(int64_t)63), "");
    ovf = LLVMBuildOr(b, ovf, LLVMBuildICmp(b, LLVMIntSLT, total, ci64(c, 0), ""), "");
    LLVMBuildRet(b, LLVMBuildSelect(b, ovf, ci64(c, -1), total, ""));
    LLVMDisposeBuilder(b);
    return fn;
}

/* uint64_t <prefix>_arena_size(const int64_t *dims): icc_arena_fn. */
static LLVMValueRef emit_arena_size(mctx *c)
{
    char name[256];
    snprintf(name, sizeof name, "%s_arena_size", c->prefix);
    LLVMTypeRef params[1] = {c->ptr};
    LLVMValueRef fn = LLVMAddFunction(c->m, name, LLVMFunctionType(c->i64, params, 1, 0));
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(c->cx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c->cx, fn, "entry"));
    LLVMValueRef offs = LLVMBuildArrayAlloca(b, c->i64, ci64(c, c->p->nslots + 1), "offs");
    LLVMValueRef args[2] = {LLVMGetParam(fn, 0), offs};
    LLVMTypeRef lp[2] = {c->ptr, c->ptr};
    LLVMBuildRet(b, LLVMBuildCall2(b, LLVMFunctionType(c->i64, lp, 2, 0), c->layout_fn, args, 2, ""));
    LLVMDisposeBuilder(b);
    return fn;
}

/* void <prefix>_kernel_costs(const int64_t *dims, u64 *flops, u64 *bytes):
 * icc_costs_fn, each run kernel's fitted polynomials (cg_kernel_info.cost,
 * codegen/profile.c) at the dims in doubles, rounded; the table's value
 * where none was fitted. */
static LLVMValueRef emit_kernel_costs(mctx *c)
{
    const cg_program *p = c->p;
    char name[256];
    snprintf(name, sizeof name, "%s_kernel_costs", c->prefix);
    LLVMTypeRef params[3] = {c->ptr, c->ptr, c->ptr};
    LLVMValueRef fn = LLVMAddFunction(c->m, name, LLVMFunctionType(LLVMVoidTypeInContext(c->cx), params, 3, 0));
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(c->cx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c->cx, fn, "entry"));
    LLVMValueRef symtab = emit_symtab(c, b, LLVMGetParam(fn, 0));
    LLVMTypeRef f64 = LLVMDoubleTypeInContext(c->cx);
    for (int k = p->ninit_kernels; k < p->nkernels; k++) {
        const cg_kernel_info *ki = &p->profile[k];
        for (int w = 0; w < 2; w++) {
            const cg_cost_poly *cp = &ki->cost[w];
            LLVMValueRef v;
            if (cp->nterms < 0) {
                v = ci64(c, w ? ki->bytes : ki->flops);
            } else {
                LLVMValueRef sum = LLVMConstReal(f64, 0.5);
                for (int t = 0; t < cp->nterms; t++) {
                    LLVMValueRef term = LLVMConstReal(f64, cp->terms[t].coef);
                    for (int i = 0; i < cp->terms[t].nf; i++) {
                        LLVMValueRef si = ci64(c, cp->terms[t].sym[i]);
                        LLVMValueRef x = LLVMBuildSIToFP(
                            b, LLVMBuildLoad2(b, c->i64, LLVMBuildGEP2(b, c->i64, symtab, &si, 1, ""), ""), f64, "");
                        for (int e = 0; e < cp->terms[t].pow[i]; e++)
                            term = LLVMBuildFMul(b, term, x, "");
                    }
                    sum = LLVMBuildFAdd(b, sum, term, "");
                }
                /* negative (a fit's rounding) is 0 */
                LLVMValueRef pos = LLVMBuildFCmp(b, LLVMRealOGT, sum, LLVMConstReal(f64, 0), "");
                v = LLVMBuildSelect(b, pos, LLVMBuildFPToUI(b, sum, c->i64, ""), ci64(c, 0), "");
            }
            LLVMValueRef ix = ci64(c, k - p->ninit_kernels);
            LLVMBuildStore(b, v, LLVMBuildGEP2(b, c->i64, LLVMGetParam(fn, 1 + w), &ix, 1, ""));
        }
    }
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
    return fn;
}

/* Where a step's binding points in the run function: an input's or
 * output's buffer, or a byte offset into the weights or the arena (in a
 * dynamic program, offs: the run's slot offsets, an arena offset being
 * the slot's index). */
static LLVMValueRef binding_ptr(mctx *c, LLVMBuilderRef b, const cg_binding *bd, LLVMValueRef inputs,
                                LLVMValueRef outputs, LLVMValueRef weights, LLVMValueRef arena, LLVMValueRef offs)
{
    LLVMValueRef off = ci64(c, bd->offset);
    if (bd->kind == KIR_BUF_ARENA && offs)
        off = LLVMBuildLoad2(b, c->i64, LLVMBuildGEP2(b, c->i64, offs, &off, 1, ""), "");
    if (bd->kind == KIR_BUF_INPUT || bd->kind == KIR_BUF_OUTPUT) {
        LLVMValueRef idx = ci64(c, bd->index);
        LLVMValueRef base = LLVMBuildLoad2(b, c->ptr, LLVMBuildGEP2(b, c->ptr, bd->kind == KIR_BUF_INPUT ? inputs
                                                                                                     : outputs,
                                                                    &idx, 1, ""), "");
        return LLVMBuildGEP2(b, c->i8, base, &off, 1, "");
    }
    if (bd->kind == KIR_BUF_WEIGHT && bd->index == CG_WEIGHT_INIT)
        weights = c->init;
    return LLVMBuildGEP2(b, c->i8, bd->kind == KIR_BUF_WEIGHT ? weights : arena, &off, 1, "");
}

/* The outputs no kernel writes (cg_program.copies). */
static void copy_outputs(mctx *c, LLVMBuilderRef b, LLVMValueRef inputs, LLVMValueRef outputs,
                         LLVMValueRef weights, LLVMValueRef symtab)
{
    for (int i = 0; i < c->p->ncopies; i++) {
        const cg_copy *cp = &c->p->copies[i];
        const cg_binding *bd = &cp->src;
        LLVMValueRef bytes = size_value(c, b, &cp->bytes, symtab);
        LLVMValueRef src;
        if (bd->kind == KIR_BUF_WEIGHT) {
            LLVMValueRef off = ci64(c, bd->offset);
            src = LLVMBuildGEP2(b, c->i8, bd->index == CG_WEIGHT_INIT ? c->init : weights, &off, 1, "");
        } else {
            LLVMValueRef idx = ci64(c, bd->index);
            src = LLVMBuildLoad2(b, c->ptr, LLVMBuildGEP2(b, c->ptr, bd->kind == KIR_BUF_INPUT ? inputs : outputs,
                                                          &idx, 1, ""), "");
        }
        LLVMValueRef oi = ci64(c, cp->output);
        LLVMValueRef dst = LLVMBuildLoad2(b, c->ptr, LLVMBuildGEP2(b, c->ptr, outputs, &oi, 1, ""), "");
        LLVMBuildMemCpy(b, dst, 1, src, 1, bytes);
    }
}

/* ---- run-time shape checks ------------------------------------------------ */

/* A dim's value in the run function. */
static LLVMValueRef dim_value(mctx *c, LLVMBuilderRef b, ir_dim dm, LLVMValueRef symtab)
{
    if (dm.sym <= 0)
        return ci64(c, dm.v);
    LLVMValueRef idx = ci64(c, dm.sym);
    return LLVMBuildLoad2(b, c->i64, LLVMBuildGEP2(b, c->i64, symtab, &idx, 1, ""), "");
}

/* if !(a PRED v) return ICC_ERR_SHAPE | (message << 8). */
static void check_cmp(mctx *c, LLVMBuilderRef b, LLVMValueRef run, LLVMIntPredicate pred, LLVMValueRef a,
                      LLVMValueRef v, int message)
{
    LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(c->cx, run, "bad_shape");
    LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(c->cx, run, "shape_ok");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, pred, a, v, ""), ok, bad);
    LLVMPositionBuilderAtEnd(b, bad);
    LLVMBuildRet(b, ci32(c, ICC_ERR_SHAPE | (message << 8)));
    LLVMPositionBuilderAtEnd(b, ok);
}

/* After a kernel that may fail (kir_fail): if (*status) return *status. */
static void check_status(mctx *c, LLVMBuilderRef b, LLVMValueRef run, LLVMValueRef status)
{
    LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(c->cx, run, "kernel_failed");
    LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(c->cx, run, "kernel_ok");
    LLVMValueRef v = LLVMBuildLoad2(b, c->i32, status, "status");
    LLVMSetOrdering(v, LLVMAtomicOrderingMonotonic);
    LLVMSetAlignment(v, 4);
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, v, ci32(c, 0), ""), ok, bad);
    LLVMPositionBuilderAtEnd(b, bad);
    LLVMBuildRet(b, v);
    LLVMPositionBuilderAtEnd(b, ok);
}

/* The program's shape checks (cg_program.checks), first thing in the run:
 * the kernels rely on what shape inference resolved. */
static void emit_shape_checks(mctx *c, LLVMBuilderRef b, LLVMValueRef run, LLVMValueRef symtab)
{
    for (int i = 0; i < c->p->nchecks; i++) {
        const cg_check *ck = &c->p->checks[i];
        if (ck->kind != CG_CHECK_COUNT) {
            check_cmp(c, b, run, ck->kind == CG_CHECK_LE ? LLVMIntSLE : LLVMIntEQ, dim_value(c, b, ck->a, symtab),
                      dim_value(c, b, ck->b, symtab), ck->message);
        } else {
            LLVMValueRef ni = size_value(c, b, &ck->ca, symtab);
            LLVMValueRef no = size_value(c, b, &ck->cb, symtab);
            check_cmp(c, b, run, LLVMIntEQ, ni, no, ck->message);
        }
    }
}

/* ---- --profile: per-kernel timing -------------------------------------------- */

/* i64 <prefix>_noclock(void) = 0: the clock of a run whose env gives none. */
static LLVMValueRef emit_noclock(mctx *c)
{
    char name[256];
    snprintf(name, sizeof name, "%s_noclock", c->prefix);
    LLVMValueRef fn = LLVMAddFunction(c->m, name, c->clock_ty);
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(c->cx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c->cx, fn, "entry"));
    LLVMBuildRet(b, ci64(c, 0));
    LLVMDisposeBuilder(b);
    return fn;
}

/* The counters (env->profile_ns) and the clock (env->clock_ns) of this
 * run; where the env has none, a stack array and a clock that reads 0,
 * so the timing code needs no branches. */
static void profile_setup(mctx *c, LLVMBuilderRef b, LLVMTypeRef env_ty, LLVMValueRef env)
{
    c->clock_ty = LLVMFunctionType(c->i64, NULL, 0, 0);
    LLVMValueRef prof = LLVMBuildLoad2(b, c->ptr, LLVMBuildStructGEP2(b, env_ty, env, 5, ""), "profile_ns");
    LLVMValueRef clock = LLVMBuildLoad2(b, c->ptr, LLVMBuildStructGEP2(b, env_ty, env, 6, ""), "clock_ns");
    LLVMValueRef flag = LLVMBuildLoad2(b, c->i32, LLVMBuildStructGEP2(b, env_ty, env, 3, ""), "profile_calls");
    LLVMValueRef spare = LLVMBuildArrayAlloca(b, c->i64, ci64(c, 2 * c->p->nkernels + 1), "spare_ns");
    c->prof = LLVMBuildSelect(b, LLVMBuildIsNull(b, prof, ""), spare, prof, "prof");
    /* the call counts follow the times, where the runtime made room (for
     * the run's kernels: the load-time ones are not timed) */
    LLVMValueRef nk = ci64(c, c->p->nkernels - c->p->ninit_kernels);
    LLVMValueRef room = LLVMBuildAnd(b, LLVMBuildIsNotNull(b, prof, ""),
                                     LLVMBuildICmp(b, LLVMIntNE, flag, ci32(c, 0), ""), "");
    c->calls = LLVMBuildSelect(b, room, LLVMBuildGEP2(b, c->i64, prof, &nk, 1, ""),
                               LLVMBuildGEP2(b, c->i64, spare, &nk, 1, ""), "calls");
    c->clock = LLVMBuildSelect(b, LLVMBuildIsNull(b, clock, ""), emit_noclock(c), clock, "clock");
}

/* The clock before kernel kx; NULL when the program is not profiled. */
static LLVMValueRef profile_start(mctx *c, LLVMBuilderRef b)
{
    return c->timed ? LLVMBuildCall2(b, c->clock_ty, c->clock, NULL, 0, "t0") : NULL;
}

/* prof[kx] += clock() - t0; calls[kx] += 1. */
static void profile_end(mctx *c, LLVMBuilderRef b, int kx, LLVMValueRef t0)
{
    if (!t0)
        return;
    LLVMValueRef dt = LLVMBuildSub(b, LLVMBuildCall2(b, c->clock_ty, c->clock, NULL, 0, "t1"), t0, "dt");
    LLVMValueRef idx = ci64(c, kx);
    LLVMValueRef at = LLVMBuildGEP2(b, c->i64, c->prof, &idx, 1, "");
    LLVMBuildStore(b, LLVMBuildAdd(b, LLVMBuildLoad2(b, c->i64, at, ""), dt, ""), at);
    at = LLVMBuildGEP2(b, c->i64, c->calls, &idx, 1, "");
    LLVMBuildStore(b, LLVMBuildAdd(b, LLVMBuildLoad2(b, c->i64, at, ""), ci64(c, 1), ""), at);
}

/* The descriptor's kernel table (icc_kernel_info): the run's kernels (the
 * load-time ones run before any counter exists), or NULL. */
static LLVMValueRef kernel_table(mctx *c)
{
    const cg_program *p = c->p;
    int n = p->nkernels - p->ninit_kernels;
    if (!p->profile || n <= 0)
        return LLVMConstPointerNull(c->ptr);
    LLVMTypeRef ki_ty = LLVMStructTypeInContext(c->cx, (LLVMTypeRef[]){c->ptr, c->ptr, c->i64, c->i64}, 4, 0);
    LLVMValueRef *el = calloc((size_t)n, sizeof *el);
    if (!el)
        return NULL;
    for (int k = 0; k < n; k++) {
        const cg_kernel_info *ki = &p->profile[p->ninit_kernels + k];
        LLVMValueRef f[4] = {cstr(c, ki->name), cstr(c, ki->ops), ci64(c, ki->flops), ci64(c, ki->bytes)};
        el[k] = LLVMConstStructInContext(c->cx, f, 4, 0);
    }
    LLVMValueRef t = global_const(c, "kernels", LLVMConstArray(ki_ty, el, (unsigned)n), 8);
    free(el);
    return t;
}

/* The descriptor's kernel kinds (icc_kernel_kind, one int32 per entry
 * of the kernel table), or a null pointer without the table; NULL on out
 * of memory. */
static LLVMValueRef kind_table(mctx *c)
{
    const cg_program *p = c->p;
    int n = p->nkernels - p->ninit_kernels;
    if (!p->profile || n <= 0)
        return LLVMConstPointerNull(c->ptr);
    LLVMValueRef *el = calloc((size_t)n, sizeof *el);
    if (!el)
        return NULL;
    for (int k = 0; k < n; k++)
        el[k] = ci32(c, p->profile[p->ninit_kernels + k].kind);
    LLVMValueRef t = global_const(c, "kernel_kinds", LLVMConstArray(c->i32, el, (unsigned)n), 4);
    free(el);
    return t;
}

/* A SLICE step (program.h, cg_slice): the iteration's base on each side,
 * then one memcpy, or a loop of them over the rows. Leaves b at the end. */
static void emit_slice(mctx *c, LLVMBuilderRef b, LLVMValueRef run, const cg_step *st, LLVMValueRef dst,
                       LLVMValueRef src, LLVMValueRef counter, LLVMValueRef symtab)
{
    const cg_slice *sl = &st->slice;
    LLVMValueRef t = LLVMBuildLoad2(b, c->i64, counter, "t");
    LLVMValueRef len = size_value(c, b, &sl->zlen, symtab), rows = size_value(c, b, &sl->zrows, symtab);
    LLVMValueRef inner = size_value(c, b, &sl->zrow_bytes, symtab), whole = LLVMBuildMul(b, len, inner, "");
    if (sl->reverse)
        t = LLVMBuildSub(b, LLVMBuildSub(b, len, ci64(c, 1), ""), t, "");
    /* the whole tensor's side strides len x row_bytes and steps row_bytes
     * per iteration, the other side is contiguous */
    LLVMValueRef step = LLVMBuildMul(b, t, inner, "");
    LLVMValueRef src_stride = sl->stack ? inner : whole, dst_stride = sl->stack ? whole : inner;
    if (sl->stack)
        dst = LLVMBuildGEP2(b, c->i8, dst, &step, 1, "");
    else
        src = LLVMBuildGEP2(b, c->i8, src, &step, 1, "");
    if (!sl->sym && (sl->rows <= 1 || sl->row_bytes == 0)) {
        LLVMBuildMemCpy(b, dst, 1, src, 1, ci64(c, sl->rows == 1 ? sl->row_bytes : 0));
        return;
    }
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->cx, run, "slice");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c->cx, run, "slice_done");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSGT, rows, ci64(c, 0), ""), body, done);
    LLVMPositionBuilderAtEnd(b, body);
    LLVMValueRef r = LLVMBuildPhi(b, c->i64, "row");
    LLVMValueRef sr = LLVMBuildMul(b, r, src_stride, ""), dr = LLVMBuildMul(b, r, dst_stride, "");
    LLVMBuildMemCpy(b, LLVMBuildGEP2(b, c->i8, dst, &dr, 1, ""), 1, LLVMBuildGEP2(b, c->i8, src, &sr, 1, ""), 1, inner);
    LLVMValueRef next = LLVMBuildAdd(b, r, ci64(c, 1), "");
    LLVMValueRef zero = ci64(c, 0);
    LLVMAddIncoming(r, &zero, &pre, 1);
    LLVMAddIncoming(r, &next, &body, 1);
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, next, rows, ""), body, done);
    LLVMPositionBuilderAtEnd(b, done);
}
/* An array of n ty in the run's entry block, so that a kernel's buffer
 * table is one stack slot however often its step runs. */
static LLVMValueRef entry_alloca(mctx *c, LLVMBasicBlockRef entry, LLVMTypeRef ty, int n, const char *name)
{
    LLVMBuilderRef eb = LLVMCreateBuilderInContext(c->cx);
    LLVMPositionBuilder(eb, entry, LLVMGetFirstInstruction(entry));
    LLVMValueRef a = LLVMBuildArrayAlloca(eb, ty, ci32(c, n > 0 ? n : 1), name);
    LLVMDisposeBuilder(eb);
    return a;
}

/* The body of an entry function (icc_entry_fn): the run (steps [lo, hi) =
 * [ninit_steps, nsteps): symbols, layout, shape checks, timing, output
 * copies), or with init the model's init function (the load-time steps
 * [0, ninit_steps), on the init buffer passed as its arena). */
static int emit_steps(mctx *c, LLVMValueRef run, int lo, int hi, bool init, LLVMTypeRef env_ty, LLVMTypeRef args_ty,
                      LLVMValueRef par, LLVMTypeRef pf_ty)
{
    cg_program *p = c->p;
    LLVMBuilderRef b = LLVMCreateBuilderInContext(c->cx);
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(c->cx, run, "entry");
    LLVMPositionBuilderAtEnd(b, entry);
    LLVMValueRef inputs = LLVMGetParam(run, 0), outputs = LLVMGetParam(run, 1), dims = LLVMGetParam(run, 2);
    LLVMValueRef arena = LLVMGetParam(run, 3), env = LLVMGetParam(run, 4);
    LLVMValueRef pfn = LLVMBuildLoad2(b, c->ptr, LLVMBuildStructGEP2(b, env_ty, env, 0, ""), "parallel_for");
    LLVMValueRef pool = LLVMBuildLoad2(b, c->ptr, LLVMBuildStructGEP2(b, env_ty, env, 1, ""), "pool");
    LLVMValueRef nthreads = LLVMBuildLoad2(b, c->i32, LLVMBuildStructGEP2(b, env_ty, env, 2, ""), "nthreads");
    LLVMValueRef weights = LLVMBuildLoad2(b, c->ptr, LLVMBuildStructGEP2(b, env_ty, env, 4, ""), "weights");
    c->init = LLVMBuildLoad2(b, c->ptr, LLVMBuildStructGEP2(b, env_ty, env, 7, ""), "init");
    /* Parallel when the pool has more than one thread and a parallel_for. */
    LLVMValueRef threaded = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSGT, nthreads, ci32(c, 1), ""),
                                         LLVMBuildIsNotNull(b, pfn, ""), "threaded");
    LLVMValueRef nthreads64 = LLVMBuildSExt(b, nthreads, c->i64, "");
    /* Kernels read symbol k at syms[k] (graph ids); the run gets them in
     * the descriptor's order. With symbols, the arena layout is computed
     * for this run's values. */
    LLVMValueRef symtab = init ? LLVMBuildArrayAlloca(b, c->i64, ci64(c, p->nsyms + 1), "symtab")
                               : emit_symtab(c, b, dims);   /* load-time kernels read no symbol */
    LLVMValueRef offs = NULL;
    if (p->dynamic && !init) {
        offs = LLVMBuildArrayAlloca(b, c->i64, ci64(c, c->p->nslots + 1), "offs");
        LLVMValueRef largs[2] = {dims, offs};
        LLVMTypeRef lp[2] = {c->ptr, c->ptr};
        LLVMBuildCall2(b, LLVMFunctionType(c->i64, lp, 2, 0), c->layout_fn, largs, 2, "");
    }
    /* The status word kernels that may fail set (KIR_BUF_STATUS). */
    LLVMValueRef status = LLVMBuildAlloca(b, c->i32, "status");
    LLVMSetAlignment(LLVMBuildStore(b, ci32(c, 0), status), 4);
    if (p->dynamic && !init)
        emit_shape_checks(c, b, run, symtab);
    c->timed = p->profile && !init;
    if (c->timed)
        profile_setup(c, b, env_ty, env);

    /* The steps' jump targets (target nsteps: the output copies). */
    LLVMBasicBlockRef *at = calloc((size_t)p->nsteps + 1, sizeof *at);
    if (!at)
        return ir_errorf(c->d, "out of memory");
    for (int sx = lo; sx < hi; sx++)
        if (p->steps[sx].kind == CG_STEP_BRANCH || p->steps[sx].kind == CG_STEP_JUMP ||
            p->steps[sx].kind == CG_STEP_LOOP_TEST)
            if (!at[p->steps[sx].target])
                at[p->steps[sx].target] = LLVMAppendBasicBlockInContext(c->cx, run, "step");
    for (int sx = lo; sx < hi; sx++)   /* a loop's head, which its JUMP goes back to */
        if (p->steps[sx].kind == CG_STEP_LOOP_TEST && !at[sx])
            at[sx] = LLVMAppendBasicBlockInContext(c->cx, run, "loop");
    int rc = 0;
    for (int sx = lo; sx <= hi && rc == 0; sx++) {
        if (at[sx]) {
            LLVMBuildBr(b, at[sx]);
            LLVMPositionBuilderAtEnd(b, at[sx]);
        }
        if (sx == hi)
            break;
        const cg_step *st = &p->steps[sx];
        if (st->kind == CG_STEP_BRANCH) {
            /* the condition is one bool byte: nonzero runs on, zero jumps */
            LLVMValueRef cp = binding_ptr(c, b, &st->cond, inputs, outputs, weights, arena, offs);
            LLVMValueRef cv = LLVMBuildLoad2(b, c->i8, cp, "cond");
            LLVMBasicBlockRef on = LLVMAppendBasicBlockInContext(c->cx, run, "taken");
            LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntNE, cv, LLVMConstInt(c->i8, 0, 0), ""), on, at[st->target]);
            LLVMPositionBuilderAtEnd(b, on);
            continue;
        }
        if (st->kind == CG_STEP_JUMP) {
            LLVMBuildBr(b, at[st->target]);
            LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c->cx, run, "after"));
            continue;
        }
        if (st->kind == CG_STEP_SET) {
            LLVMTypeRef ty = st->width == 8 ? c->i64 : c->i8;
            LLVMBuildStore(b, LLVMConstInt(ty, (unsigned long long)st->value, 1),
                           binding_ptr(c, b, &st->dst, inputs, outputs, weights, arena, offs));
            continue;
        }
        if (st->kind == CG_STEP_INC) {
            LLVMValueRef ip = binding_ptr(c, b, &st->dst, inputs, outputs, weights, arena, offs);
            LLVMBuildStore(b, LLVMBuildAdd(b, LLVMBuildLoad2(b, c->i64, ip, ""), ci64(c, 1), ""), ip);
            continue;
        }
        if (st->kind == CG_STEP_LOOP_TEST) {
            /* leave when counter >= trip count, or the condition is false */
            LLVMValueRef iv = LLVMBuildLoad2(
                b, c->i64, binding_ptr(c, b, &st->dst, inputs, outputs, weights, arena, offs), "iter");
            LLVMValueRef stop = LLVMConstInt(LLVMInt1TypeInContext(c->cx), 0, 0);
            if (st->has_trips) {
                LLVMValueRef ti = ci64(c, st->trips_sym);
                LLVMValueRef m = st->const_trips && st->trips_sym > 0
                                     ? LLVMBuildLoad2(b, c->i64, LLVMBuildGEP2(b, c->i64, symtab, &ti, 1, ""), "trips")
                                 : st->const_trips ? ci64(c, st->value)
                                                 : LLVMBuildLoad2(b, c->i64, binding_ptr(c, b, &st->src, inputs,
                                                                                         outputs, weights, arena, offs),
                                                                  "trips");
                stop = LLVMBuildOr(b, stop, LLVMBuildICmp(b, LLVMIntSGE, iv, m, ""), "");
            }
            if (st->has_cond) {
                LLVMValueRef cv = LLVMBuildLoad2(b, c->i8, binding_ptr(c, b, &st->cond, inputs, outputs, weights,
                                                                       arena, offs), "cond");
                stop = LLVMBuildOr(b, stop, LLVMBuildICmp(b, LLVMIntEQ, cv, LLVMConstInt(c->i8, 0, 0), ""), "");
            }
            LLVMBasicBlockRef on = LLVMAppendBasicBlockInContext(c->cx, run, "iteration");
            LLVMBuildCondBr(b, stop, at[st->target], on);
            LLVMPositionBuilderAtEnd(b, on);
            continue;
        }
        if (st->kind == CG_STEP_SLICE) {
            emit_slice(c, b, run, st, binding_ptr(c, b, &st->dst, inputs, outputs, weights, arena, offs),
                       binding_ptr(c, b, &st->src, inputs, outputs, weights, arena, offs),
                       binding_ptr(c, b, &st->slice.counter, inputs, outputs, weights, arena, offs), symtab);
            continue;
        }
        if (st->kind == CG_STEP_COPY) {
            LLVMValueRef dst = binding_ptr(c, b, &st->dst, inputs, outputs, weights, arena, offs);
            LLVMValueRef src = binding_ptr(c, b, &st->src, inputs, outputs, weights, arena, offs);
            LLVMBuildMemCpy(b, dst, 1, src, 1, size_value(c, b, &st->bytes, symtab));
            continue;
        }
        int kx = st->kernel;
        const cg_kernel *ck = &p->kernels[kx];
        kir_kernel *k = ck->k;
        const ir_node *n = ck->node;
        int32_t bsym = ck->batch_sym;
        const cg_size *item_bytes = ck->item_bytes;
        LLVMValueRef kfn;
        if (cg_llvm_emit_kernel(c->t, c->m, k, &kfn, c->d) < 0) {
            ir_diag_prefix(c->d, "node '%.200s' (%s)", n->name, ir_ops[n->op].name);
            rc = -1;
            break;
        }
        LLVMSetLinkage(kfn, LLVMInternalLinkage);
        /* The buffer table, filled from the run's arguments. */
        LLVMValueRef bufs = entry_alloca(c, entry, c->ptr, k->nbufs, "bufs");
        for (int i = 0; i < k->nbufs; i++) {
            const kir_buf *kb = &k->bufs[i];
            LLVMValueRef bp;
            switch (kb->kind) {
            case KIR_BUF_INPUT:
            case KIR_BUF_OUTPUT: {
                LLVMValueRef base = kb->kind == KIR_BUF_INPUT ? inputs : outputs;
                LLVMValueRef idx = ci64(c, kb->index);
                bp = LLVMBuildLoad2(b, c->ptr, LLVMBuildGEP2(b, c->ptr, base, &idx, 1, ""), "");
                break;
            }
            default: {
                LLVMValueRef idx = ci64(c, kb->offset);
                if (kb->kind == KIR_BUF_ARENA && p->dynamic && !init)   /* offset = the value's slot */
                    idx = LLVMBuildLoad2(b, c->i64, LLVMBuildGEP2(b, c->i64, offs, &idx, 1, ""), "");
                if (kb->kind == KIR_BUF_STATUS)
                    bp = status;
                else if (kb->kind == KIR_BUF_SCRATCH && kb->space != KIR_SPACE_KERNEL)
                    bp = LLVMConstPointerNull(c->ptr);   /* on the kernel's stack */
                else
                    bp = LLVMBuildGEP2(b, c->i8, kb->kind != KIR_BUF_WEIGHT ? arena
                                                 : kb->index == CG_WEIGHT_INIT ? c->init : weights, &idx, 1, "");
            }
            }
            LLVMValueRef slot_idx = ci64(c, i);
            LLVMBuildStore(b, bp, LLVMBuildGEP2(b, c->ptr, bufs, &slot_idx, 1, ""));
        }
        LLVMValueRef t0 = profile_start(c, b);   /* the whole kernel: every item, every thread */
        LLVMBasicBlockRef bloop = NULL, bdone = NULL;
        LLVMValueRef item = NULL, item_slot = NULL;
        if (bsym) {
            /* for item in [0, S): the buffer table at that item */
            LLVMValueRef si = ci64(c, bsym);
            LLVMValueRef count = LLVMBuildLoad2(b, c->i64, LLVMBuildGEP2(b, c->i64, symtab, &si, 1, ""), "items");
            LLVMValueRef base = bufs;
            bufs = entry_alloca(c, entry, c->ptr, k->nbufs, "item_bufs");
            item_slot = entry_alloca(c, entry, c->i64, 1, "item");
            LLVMBuildStore(b, ci64(c, 0), item_slot);
            bloop = LLVMAppendBasicBlockInContext(c->cx, run, "item");
            LLVMBasicBlockRef bbody = LLVMAppendBasicBlockInContext(c->cx, run, "item_body");
            bdone = LLVMAppendBasicBlockInContext(c->cx, run, "items_done");
            LLVMBuildBr(b, bloop);
            LLVMPositionBuilderAtEnd(b, bloop);
            item = LLVMBuildLoad2(b, c->i64, item_slot, "");
            LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, item, count, ""), bbody, bdone);
            LLVMPositionBuilderAtEnd(b, bbody);
            for (int i = 0; i < k->nbufs; i++) {
                LLVMValueRef slot_idx = ci64(c, i);
                LLVMValueRef bp = LLVMBuildLoad2(b, c->ptr, LLVMBuildGEP2(b, c->ptr, base, &slot_idx, 1, ""), "");
                if (item_bytes[i].scale) {
                    LLVMValueRef off = LLVMBuildMul(b, item, size_value(c, b, &item_bytes[i], symtab), "");
                    bp = LLVMBuildGEP2(b, c->i8, bp, &off, 1, "");
                }
                LLVMBuildStore(b, bp, LLVMBuildGEP2(b, c->ptr, bufs, &slot_idx, 1, ""));
            }
        }
        LLVMValueRef trips = parallel_trips(c, b, ck, symtab);
        LLVMValueRef direct_args[4] = {bufs, symtab, ci64(c, 0), ci64(c, INT64_MAX)};
        if (!trips) {
            LLVMBuildCall2(b, c->kfn_ty, kfn, direct_args, 4, "");
            if (k->nfails)
                check_status(c, b, run, status);
            if (bsym) {
                LLVMBuildStore(b, LLVMBuildAdd(b, item, ci64(c, 1), ""), item_slot);
                LLVMBuildBr(b, bloop);
                LLVMPositionBuilderAtEnd(b, bdone);
            }
            profile_end(c, b, kx - p->ninit_kernels, t0);
            continue;
        }
        /* chunks = min(trips, 4 * threads); chunk = ceil(trips / chunks),
         * at least the kernel's min_chunk_trips (cost.h: smaller pieces do
         * not pay for the fork/join); serial when single-threaded, under 2
         * trips, or when that leaves one chunk */
        LLVMBasicBlockRef bpar = LLVMAppendBasicBlockInContext(c->cx, run, "par");
        LLVMBasicBlockRef bser = LLVMAppendBasicBlockInContext(c->cx, run, "ser");
        LLVMBasicBlockRef bnext = LLVMAppendBasicBlockInContext(c->cx, run, "next");
        int64_t mct = ck->min_chunk_trips > 1 ? ck->min_chunk_trips : 1;
        LLVMValueRef enough = LLVMBuildICmp(b, LLVMIntSGT, trips, ci64(c, mct > 1 ? mct : 1), "");
        LLVMBuildCondBr(b, LLVMBuildAnd(b, threaded, enough, ""), bpar, bser);
        LLVMPositionBuilderAtEnd(b, bser);
        LLVMBuildCall2(b, c->kfn_ty, kfn, direct_args, 4, "");
        LLVMBuildBr(b, bnext);
        LLVMPositionBuilderAtEnd(b, bpar);
        LLVMValueRef want = LLVMBuildMul(b, nthreads64, ci64(c, 4), "");
        LLVMValueRef chunks = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, want, trips, ""), want, trips, "chunks");
        LLVMValueRef tm1 = LLVMBuildSub(b, trips, ci64(c, 1), "");
        LLVMValueRef chunk = LLVMBuildSDiv(b, LLVMBuildAdd(b, tm1, chunks, ""), chunks, "");
        chunk = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, chunk, ci64(c, mct), ""), ci64(c, mct), chunk,
                                "chunk");
        LLVMValueRef nchunks = LLVMBuildSDiv(b, LLVMBuildAdd(b, tm1, chunk, ""), chunk, "");
        /* in the entry block: this point may be inside a per-item loop */
        LLVMBuilderRef eb = LLVMCreateBuilderInContext(c->cx);
        LLVMPositionBuilder(eb, entry, LLVMGetFirstInstruction(entry));
        LLVMValueRef args = LLVMBuildAlloca(eb, args_ty, "args");
        LLVMDisposeBuilder(eb);
        LLVMValueRef fields[5] = {kfn, bufs, symtab, trips, chunk};
        for (unsigned f = 0; f < 5; f++)
            LLVMBuildStore(b, fields[f], LLVMBuildStructGEP2(b, args_ty, args, f, ""));
        LLVMValueRef pargs[4] = {pool, nchunks, par, args};
        LLVMBuildCall2(b, pf_ty, pfn, pargs, 4, "");
        LLVMBuildBr(b, bnext);
        LLVMPositionBuilderAtEnd(b, bnext);
        if (k->nfails)
            check_status(c, b, run, status);
        if (bsym) {
            LLVMBuildStore(b, LLVMBuildAdd(b, item, ci64(c, 1), ""), item_slot);
            LLVMBuildBr(b, bloop);
            LLVMPositionBuilderAtEnd(b, bdone);
        }
        profile_end(c, b, kx - p->ninit_kernels, t0);
    }
    free(at);
    if (rc == 0) {
        if (!init)
            copy_outputs(c, b, inputs, outputs, weights, symtab);
        LLVMBuildRet(b, ci32(c, 0));
    }
    LLVMDisposeBuilder(b);
    return rc < 0 ? -1 : 0;
}


/* The descriptor's derived-symbol table (icc_sym_def, operands as
 * descriptor symbol indices), or a null pointer when there is none;
 * NULL on out of memory. */
static LLVMValueRef derived_table(mctx *c)
{
    const cg_program *p = c->p;
    if (!p->nderived)
        return LLVMConstPointerNull(c->ptr);
    LLVMTypeRef ty = LLVMStructTypeInContext(c->cx, (LLVMTypeRef[]){c->i32, c->i32, c->i32, c->i32, c->i64, c->i64},
                                             6, 0);
    LLVMValueRef *el = calloc((size_t)p->nderived, sizeof *el);
    if (!el)
        return NULL;
    static const int ops[] = {[IR_SYM_ADD] = ICC_SYM_ADD, [IR_SYM_MUL] = ICC_SYM_MUL,
                              [IR_SYM_FLOORDIV] = ICC_SYM_FLOORDIV, [IR_SYM_CEILDIV] = ICC_SYM_CEILDIV};
    for (int i = 0; i < p->nderived; i++) {
        const ir_sym_def *df = &p->derived[i];
        int op = ops[df->op] | (p->derived_in_sub && p->derived_in_sub[i] ? ICC_SYM_IN_SUBGRAPH : 0);
        LLVMValueRef f[6] = {ci32(c, op), ci32(c, df->a.sym > 0 ? p->sym_desc[df->a.sym] : -1),
                             ci32(c, df->b.sym > 0 ? p->sym_desc[df->b.sym] : -1),
                             ci32(c, p->derived_message ? p->derived_message[i] : 0),
                             ci64(c, df->a.sym > 0 ? 0 : df->a.v), ci64(c, df->b.sym > 0 ? 0 : df->b.v)};
        el[i] = LLVMConstStructInContext(c->cx, f, 6, 0);
    }
    LLVMValueRef t = global_const(c, "derived", LLVMConstArray(ty, el, (unsigned)p->nderived), 8);
    free(el);
    return t;
}

/* The module: the run function with its helpers, the init function when
 * there are load-time kernels, then the weights, the I/O descriptions and
 * the descriptor. */
static int emit_model(mctx *c)
{
    cg_program *p = c->p;
    LLVMTypeRef env_ty = LLVMStructTypeInContext(c->cx, (LLVMTypeRef[]){c->ptr, c->ptr, c->i32, c->i32, c->ptr, c->ptr,
                                                                        c->ptr, c->ptr}, 8, 0);
    LLVMTypeRef args_ty = LLVMStructTypeInContext(c->cx, (LLVMTypeRef[]){c->ptr, c->ptr, c->ptr, c->i64, c->i64}, 5, 0);
    LLVMTypeRef run_params[5] = {c->ptr, c->ptr, c->ptr, c->ptr, c->ptr};
    LLVMTypeRef entry_ty = LLVMFunctionType(c->i32, run_params, 5, 0);
    char name[256];
    snprintf(name, sizeof name, "%s_run", c->prefix);
    LLVMValueRef run = LLVMConstPointerNull(c->ptr), par = NULL;
    if (!c->cuda_plan) {
        run = LLVMAddFunction(c->m, name, entry_ty);
        LLVMSetLinkage(run, LLVMInternalLinkage);
        par = emit_trampoline(c, args_ty);
    }
    LLVMValueRef arena_fn = LLVMConstPointerNull(c->ptr), symbols = LLVMConstPointerNull(c->ptr);
    LLVMValueRef costs_fn = LLVMConstPointerNull(c->ptr);
    if (p->dynamic) {
        c->layout_fn = emit_layout(c);
        arena_fn = emit_arena_size(c);
        if (p->profile && p->nkernels > p->ninit_kernels)
            costs_fn = emit_kernel_costs(c);
        LLVMValueRef *names = calloc((size_t)p->nsymbols + 1, sizeof *names);
        if (!names)
            return ir_errorf(c->d, "out of memory");
        for (int sym = 1; sym < p->nsyms; sym++)   /* by id: the strings' order is the module's */
            if (p->sym_desc[sym] >= 0)
                names[p->sym_desc[sym]] = cstr(c, p->symbol_names[p->sym_desc[sym]]);
        symbols = global_const(c, "symbols", LLVMConstArray(c->ptr, names, (unsigned)p->nsymbols), 8);
        free(names);
    }
    LLVMTypeRef pf_params[4] = {c->ptr, c->i64, c->ptr, c->ptr};
    LLVMTypeRef pf_ty = LLVMFunctionType(LLVMVoidTypeInContext(c->cx), pf_params, 4, 0);

    if (!c->cuda_plan && emit_steps(c, run, p->ninit_steps, p->nsteps, false, env_ty, args_ty, par, pf_ty) < 0)
        return -1;
    LLVMValueRef init_fn = LLVMConstPointerNull(c->ptr);
    if (p->ninit_steps > 0 && !c->cuda_plan) {
        snprintf(name, sizeof name, "%s_init", c->prefix);
        init_fn = LLVMAddFunction(c->m, name, entry_ty);
        LLVMSetLinkage(init_fn, LLVMInternalLinkage);
        if (emit_steps(c, init_fn, 0, p->ninit_steps, true, env_ty, args_ty, par, pf_ty) < 0)
            return -1;
    }

    /* The weights and the descriptor. */
    LLVMValueRef wglob = LLVMConstPointerNull(c->ptr);
    if (p->weights_bytes && !p->external_weights) {
        char wname[256];
        const unsigned char *w = cg_program_weights(p, c->d);
        if (!w)
            return -1;
        snprintf(wname, sizeof wname, "%s_weights", c->prefix);
        wglob = global_const(c, wname, LLVMConstStringInContext(c->cx, (const char *)w, (unsigned)p->weights_bytes, 1),
                             64);
    }
    LLVMTypeRef td_ty = LLVMStructCreateNamed(c->cx, "icc_tensor_desc");
    LLVMStructSetBody(td_ty, (LLVMTypeRef[]){c->ptr, c->i32, c->i32, c->ptr, c->ptr}, 5, 0);
    LLVMValueRef descs[2];
    for (int io = 0; io < 2; io++) {
        int cnt = io ? p->noutputs : p->ninputs;
        LLVMValueRef *el = calloc((size_t)cnt + 1, sizeof *el);
        if (!el)
            return ir_errorf(c->d, "out of memory");
        for (int i = 0; i < cnt; i++)
            el[i] = tensor_desc(c, td_ty, io ? &p->outputs[i] : &p->inputs[i]);
        descs[io] = cnt ? global_const(c, io ? "outputs" : "inputs", LLVMConstArray(td_ty, el, (unsigned)cnt), 8)
                        : LLVMConstPointerNull(c->ptr);
        free(el);
    }
    LLVMTypeRef desc_ty = LLVMStructCreateNamed(c->cx, "icc_model_desc");
    LLVMTypeRef dfields[32] = {c->i32, c->i32, c->ptr, c->ptr, c->ptr, c->i32, c->i32, c->ptr, c->ptr, c->i32,
                               c->ptr, c->i64, c->ptr, c->i64, c->i64, c->ptr, c->ptr, c->ptr, c->i32, c->i32,
                               c->ptr, c->i32, c->i32, c->i64, c->ptr, c->ptr, c->i32, c->i32, c->ptr, c->ptr,
                               c->i64, c->ptr};
    LLVMStructSetBody(desc_ty, dfields, 32, 0);
    LLVMValueRef plan = LLVMConstPointerNull(c->ptr);
    if (c->cuda_plan) {
        snprintf(name, sizeof name, "%s_cuda_plan", c->prefix);
        plan = global_const(c, name, LLVMConstStringInContext(c->cx, c->cuda_plan, (unsigned)c->cuda_plan_bytes, 1),
                            64);
    }
    LLVMValueRef derived = derived_table(c);
    if (!derived)
        return ir_errorf(c->d, "out of memory");
    LLVMValueRef kernels = kernel_table(c), kinds = kind_table(c);
    if (!kernels || !kinds)
        return ir_errorf(c->d, "out of memory");
    LLVMValueRef msgs = LLVMConstPointerNull(c->ptr);
    if (p->nmessages) {
        LLVMValueRef *el = calloc((size_t)p->nmessages, sizeof *el);
        if (!el)
            return ir_errorf(c->d, "out of memory");
        for (int i = 0; i < p->nmessages; i++)
            el[i] = cstr(c, p->messages[i]);
        msgs = global_const(c, "messages", LLVMConstArray(c->ptr, el, (unsigned)p->nmessages), 8);
        free(el);
    }
    LLVMValueRef dv[32] = {
        ci32(c, ICC_ABI_VERSION), ci32(c, (int64_t)sizeof(icc_model_desc)), cstr(c, ICC_VERSION),
        cstr(c, c->prefix), cstr(c, cg_target_required_features(c->t)), ci32(c, p->ninputs),
        ci32(c, p->noutputs), descs[0], descs[1], ci32(c, p->nsymbols), symbols,
        ci64(c, p->arena_bytes), arena_fn, ci64(c, (int64_t)p->weights_checksum),
        ci64(c, p->weights_bytes), wglob, run, msgs, ci32(c, p->nmessages), ci32(c, 0),
        kernels, ci32(c, p->profile ? p->nkernels - p->ninit_kernels : 0), ci32(c, 0),
        ci64(c, c->cuda_plan ? 0 : p->init_bytes), init_fn, derived, ci32(c, p->nderived), ci32(c, 0), kinds,
        plan, ci64(c, (int64_t)c->cuda_plan_bytes), costs_fn,
    };
    snprintf(name, sizeof name, "%s_model", c->prefix);
    LLVMValueRef desc = LLVMAddGlobal(c->m, desc_ty, name);
    LLVMSetInitializer(desc, LLVMConstNamedStruct(desc_ty, dv, 32));
    LLVMSetGlobalConstant(desc, 1);
    LLVMSetAlignment(desc, 8);
    return 0;
}

static int assemble(mctx c, LLVMModuleRef *out);

int cg_llvm_assemble(const cg_target *t, cg_program *p, LLVMModuleRef *out, icc_diag *d)
{
    return assemble((mctx){.p = p, .t = t, .prefix = p->prefix, .d = d}, out);
}

int cg_llvm_assemble_host(const cg_target *t, cg_program *p, const void *plan, size_t plan_bytes,
                          LLVMModuleRef *out, icc_diag *d)
{
    if (!plan || !plan_bytes || plan_bytes > UINT32_MAX) {
        *out = NULL;
        return ir_errorf(d, "the device plan is empty or over 4 GB");
    }
    return assemble((mctx){.p = p, .t = t, .prefix = p->prefix, .d = d, .cuda_plan = plan,
                           .cuda_plan_bytes = plan_bytes}, out);
}

static int assemble(mctx c, LLVMModuleRef *out)
{
    c.m = LLVMModuleCreateWithName(c.prefix);
    c.cx = LLVMGetModuleContext(c.m);
    cg_target_setup_module(c.t, c.m);
    c.ptr = LLVMPointerTypeInContext(c.cx, 0);
    c.i8 = LLVMInt8TypeInContext(c.cx);
    c.i32 = LLVMInt32TypeInContext(c.cx);
    c.i64 = LLVMInt64TypeInContext(c.cx);
    LLVMTypeRef kparams[4] = {c.ptr, c.ptr, c.i64, c.i64};
    c.kfn_ty = LLVMFunctionType(LLVMVoidTypeInContext(c.cx), kparams, 4, 0);
    if (emit_model(&c) < 0) {
        LLVMDisposeModule(c.m);
        *out = NULL;
        return -1;
    }
    *out = c.m;
    return 0;
}

int cg_compile_model(const ir_graph *g, const cg_target *t, const char *prefix, LLVMModuleRef *out,
                     icc_diag *d)
{
    return cg_compile_model_ext(g, t, prefix, NULL, NULL, out, d);
}

int cg_compile_model_ext(const ir_graph *g, const cg_target *t, const char *prefix, void **weights,
                         int64_t *weights_bytes, LLVMModuleRef *out, icc_diag *d)
{
    *out = NULL;
    cg_schedule s;
    cg_program *p;
    if (cg_schedule_init(&s, cg_target_desc(t), d) < 0 || cg_program_build(g, &s, prefix, weights != NULL, &p, d) < 0)
        return -1;
    int rc = cg_llvm_assemble(t, p, out, d);
    if (rc == 0 && weights)
        *weights = cg_program_take_weights(p, weights_bytes);
    cg_program_destroy(p);
    return rc;
}
