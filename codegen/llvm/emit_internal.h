/* emit_internal.h - what the LLVM backend's emitter files share
 * (emit.c: loops, memory and expressions; emit_ext.c: scratch buffers,
 * GPU loops and intrinsic statements): the emission state of one kernel
 * and the helpers both use. Internal to codegen/llvm/.
 */
#ifndef ICC_CG_LLVM_EMIT_INTERNAL_H
#define ICC_CG_LLVM_EMIT_INTERNAL_H

#include <llvm-c/Core.h>

#include "codegen/kir.h"
#include "codegen/llvm/target.h"

typedef struct {
    const kir_expr *key;
    LLVMValueRef val;
} memo_slot;

/* Expression nodes to values, open addressing (emit.c's memo_find). */
typedef struct {
    memo_slot *slot;
    int cap, n;
} memo_table;

typedef struct em {
    const cg_target *t;
    const kir_kernel *k;
    icc_diag *d;
    LLVMContextRef cx;
    LLVMModuleRef m;
    LLVMValueRef fn;
    LLVMBuilderRef b;          /* the code being emitted */
    LLVMBuilderRef eb;         /* the end of the entry block: hoisted loads, allocas */
    LLVMTypeRef i1, i8, i16, i32, i64, f32, f64, half, ptr;
    LLVMValueRef bufs_arg, syms_arg, begin, end;
    LLVMValueRef *base;        /* per buffer: its first element */
    LLVMValueRef (*stride)[IR_MAX_RANK];
    LLVMValueRef *vars;        /* per loop variable: its value where in scope */
    LLVMValueRef *accs;        /* per accumulator: its alloca */
    LLVMValueRef *syms;        /* per symbol id: its value, loaded in the entry block */
    int nsyms;
    LLVMValueRef *scope_md, *noalias_md; /* per buffer: alias.scope / noalias lists */
    unsigned kind_scope, kind_noalias, kind_loop;
    memo_table memo;           /* expression values within one statement */
    memo_table wmemo;          /* inside a widened loop: wdep's answers, as i1 constants */
    memo_table wcmemo;         /* ... and wcheck_expr's, within one statement */
    int libm_calls;            /* calls to libm emitted so far */
    int loops;                 /* loops emitted so far */
    /* A VECTOR loop widened by the emitter itself (see emit_widened):
     * its variable (-1 outside one) holds <wlanes x i64> there. */
    int wvar;
    unsigned wlanes;
    LLVMValueRef wbase;        /* the scalar first lane of the current chunk */
    LLVMValueRef wmask;        /* <wlanes x i1> of the tail chunk, or NULL */
    LLVMValueRef *vaccs;       /* per accumulator: its vector alloca inside one */
    LLVMValueRef *vnans;       /* ... and for a max or min on vrangeps (em_range_red) its lanes' "a NaN was seen" */
    bool no_memo;              /* evaluating with the vector variable scalar */
    unsigned char *wdef;       /* wcheck: per accumulator, set before this point */
    unsigned char *wred;       /* per accumulator: a sum carried across the lanes */
    LLVMValueRef *lets;        /* per let: its value where in scope */
} em;

/* emit.c */
LLVMTypeRef em_reg_type(em *e, ir_dtype dt);   /* f16/bf16 compute in f32, bool is i1 */
LLVMTypeRef em_mem_type(em *e, ir_dtype dt);   /* f16/bf16 as i16, bool as i8 */
LLVMValueRef em_ci64(em *e, int64_t v);
/* Whether the target's required features list f ("avx512dq"). */
bool em_has_feature(const em *e, const char *f);
/* Calls an overloaded intrinsic by name, the overload types given. */
LLVMValueRef em_intr(em *e, const char *name, LLVMTypeRef *ovl, size_t novl, LLVMValueRef *args,
                     unsigned nargs);
/* The address of buf[idx...] (row-major). */
LLVMValueRef em_elem_ptr(em *e, int buf, int nidx, kir_expr *const *idx);
/* Tags a load or store of buf with its alias scopes. */
void em_tag_access(em *e, LLVMValueRef inst, int buf);
/* The value of expression x (NULL with e->d set on failure). */
LLVMValueRef em_eval(em *e, const kir_expr *x);

/* emit_ext.c */
/* Buffer i's base when the function allocates it (thread- and block-scope
 * scratch: a 64-byte aligned entry-block alloca); NULL otherwise, and NULL
 * with e->d set when the kernel's stack scratch exceeds the limit. */
LLVMValueRef em_scratch_base(em *e, int buf, bool *err);
/* 0 when loop s (a GPU kind) may run serially here, else -1 with e->d. */
int em_check_gpu_loop(em *e, const kir_stmt *s);
/* Emits intrinsic statement s: 0, or -1 with e->d. */
int em_intrinsic(em *e, const kir_stmt *s);

#endif
