/* emit_ext.c - the LLVM backend's part for the kernel IR constructs that
 * come from GPU schedules and precision lowering: scratch buffers (thread-
 * and block-scope ones are entry-block allocas, as each call of a kernel
 * function runs on one thread and a CPU "block" is one thread), GPU loops
 * (run serially, which is one valid schedule of their iterations as long
 * as no barrier orders them), and intrinsic statements: dpbusd and dpbf16
 * map to AVX512-VNNI / AVX-VNNI / AVX512-BF16 instructions when the target
 * has them and to scalar code computing the same otherwise; AMX tile
 * statements to their instructions where the target has AMX (refused
 * elsewhere); mma_sync is refused. Lets and barriers need no code of their own here
 * (emit.c: SSA values, and nothing). See docs/kernel-ir.md. */
#include "codegen/llvm/emit_internal.h"

#include <stdio.h>
#include <string.h>

/* Per kernel, the stack scratch of one call: the worker threads' stacks
 * are the system default, and a kernel wanting more should use kernel-
 * scope scratch (the arena). */
#define STACK_SCRATCH_MAX ((int64_t)256 << 10)

LLVMValueRef em_scratch_base(em *e, int buf, bool *err)
{
    const kir_kernel *k = e->k;
    const kir_buf *b = &k->bufs[buf];
    *err = false;
    if (b->kind != KIR_BUF_SCRATCH || (b->space != KIR_SPACE_THREAD && b->space != KIR_SPACE_BLOCK))
        return NULL;
    int64_t total = 0, bytes;
    for (int i = 0; i <= buf; i++) {
        const kir_buf *o = &k->bufs[i];
        if (o->kind != KIR_BUF_SCRATCH || o->space == KIR_SPACE_KERNEL)
            continue;
        /* verified: constant dims, at most 2 GiB each */
        if (kir_buf_bytes(o, &bytes) < 0 || (total += (bytes + 63) / 64 * 64) > STACK_SCRATCH_MAX) {
            *err = true;
            ir_errorf(e->d, "kernel '%.100s': thread and block scratch exceed %lld bytes (at '%.100s'): "
                      "use kernel-scope scratch", k->name, (long long)STACK_SCRATCH_MAX, o->name);
            return NULL;
        }
    }
    kir_buf_bytes(b, &bytes);
    LLVMValueRef a = LLVMBuildAlloca(e->eb, LLVMArrayType2(e->i8, (uint64_t)(bytes ? bytes : 1)), b->name);
    LLVMSetAlignment(a, 64);
    return a;
}

static bool has_barrier(const kir_block *b)
{
    for (int i = 0; i < b->n; i++) {
        const kir_stmt *s = b->s[i];
        if (s->kind == KIR_S_BARRIER || ((s->kind == KIR_S_FOR || s->kind == KIR_S_IF) &&
                                         (has_barrier(&s->body) || has_barrier(&s->orelse))))
            return true;
    }
    return false;
}

int em_check_gpu_loop(em *e, const kir_stmt *s)
{
    static const char *const names[] = {"grid", "thread", "block", "warp"};
    /* iterations that wait for each other at a barrier cannot run one
     * after another */
    if (has_barrier(&s->body))
        return ir_errorf(e->d, "kernel '%.100s': a %s loop with a barrier inside needs a GPU backend (the LLVM "
                         "backend runs GPU loops serially, which is only valid without barriers)",
                         e->k->name, names[s->loop - KIR_GRID]);
    return 0;
}

/* ---- intrinsics ------------------------------------------------------------ */

/* Whether the target's code may use feature f (LLVM's name). */
bool em_has_feature(const em *e, const char *f)
{
    const char *list = cg_target_required_features(e->t);
    size_t n = strlen(f);
    for (const char *p = list; p && *p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == n && !strncmp(p, f, n))
            return true;
        p = c ? c + 1 : NULL;
    }
    return false;
}

/* The address of element `off` (a constant or i64 value) after p, of
 * elements of type t. */
static LLVMValueRef at(em *e, LLVMTypeRef t, LLVMValueRef p, LLVMValueRef off)
{
    return LLVMBuildInBoundsGEP2(e->b, t, p, &off, 1, "");
}

static LLVMValueRef load_as(em *e, LLVMTypeRef t, LLVMValueRef p, int buf, unsigned align)
{
    LLVMValueRef v = LLVMBuildLoad2(e->b, t, p, "");
    LLVMSetAlignment(v, align);
    em_tag_access(e, v, buf);
    return v;
}

static void store_to(em *e, LLVMValueRef v, LLVMValueRef p, int buf, unsigned align)
{
    LLVMValueRef st = LLVMBuildStore(e->b, v, p);
    LLVMSetAlignment(st, align);
    em_tag_access(e, st, buf);
}

/* A counted loop `for i in [0, n)` around what gen emits for lane block
 * i; loops keep the code small for long lane counts (LLVM unrolls short
 * ones). */
typedef void (*lane_fn)(em *e, const kir_stmt *s, LLVMValueRef *ptr, LLVMValueRef i, void *ctx);

static void lane_loop(em *e, const kir_stmt *s, LLVMValueRef *ptr, int64_t n, lane_fn gen, void *ctx)
{
    if (n <= 0)
        return;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(e->b);
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(e->cx, e->fn, "lanes");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(e->cx, e->fn, "lanes_done");
    LLVMBuildBr(e->b, body);
    LLVMPositionBuilderAtEnd(e->b, body);
    LLVMValueRef i = LLVMBuildPhi(e->b, e->i64, "l");
    gen(e, s, ptr, i, ctx);
    LLVMValueRef next = LLVMBuildNSWAdd(e->b, i, em_ci64(e, 1), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(e->b);
    LLVMBuildCondBr(e->b, LLVMBuildICmp(e->b, LLVMIntSLT, next, em_ci64(e, n), ""), body, done);
    LLVMValueRef in_v[] = {em_ci64(e, 0), next};
    LLVMBasicBlockRef in_b[] = {pre, latch};
    LLVMAddIncoming(i, in_v, in_b, 2);
    LLVMPositionBuilderAtEnd(e->b, done);
}

/* Where a chunk of lanes starts: lanes [first + i*width, ...). */
typedef struct {
    int64_t first;
    unsigned width;
    const char *name;          /* the LLVM intrinsic, NULL: scalar lanes */
} chunk;

static LLVMValueRef lane_of(em *e, const chunk *c, LLVMValueRef i)
{
    return LLVMBuildNSWAdd(e->b, em_ci64(e, c->first), LLVMBuildNSWMul(e->b, i, em_ci64(e, c->width), ""), "");
}

/* A vector chunk of dpbusd or dpbf16: acc, a and b loaded as the LLVM
 * intrinsic's parameter types, the instruction, acc stored back. grp is
 * the elements of a and b per lane (4 bytes, 2 bf16). */
static void vec_chunk(em *e, const kir_stmt *s, LLVMValueRef *ptr, LLVMValueRef i, void *ctx)
{
    const chunk *c = ctx;
    unsigned id = LLVMLookupIntrinsicID(c->name, strlen(c->name));
    LLVMTypeRef fty = LLVMIntrinsicGetType(e->cx, id, NULL, 0);
    LLVMTypeRef pt[3];
    LLVMGetParamTypes(fty, pt);
    LLVMValueRef lane = lane_of(e, c, i);
    bool bf = s->intrin == KIR_IN_DPBF16;
    LLVMTypeRef acc_t = bf ? e->f32 : e->i32, in_t = bf ? e->i16 : e->i8;
    LLVMValueRef grp = em_ci64(e, bf ? 2 : 4);
    LLVMValueRef pacc = at(e, acc_t, ptr[0], lane);
    LLVMValueRef args[3] = {load_as(e, pt[0], pacc, s->args[0].buf, 4)};
    for (int j = 1; j < 3; j++)
        args[j] = load_as(e, pt[j], at(e, in_t, ptr[j], LLVMBuildNSWMul(e->b, lane, grp, "")), s->args[j].buf, 1);
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(e->m, id, NULL, 0);
    store_to(e, LLVMBuildCall2(e->b, fty, f, args, 3, ""), pacc, s->args[0].buf, 4);
}

/* bf16 bits (i16) to the f32 of that value. */
static LLVMValueRef bf16_f32(em *e, LLVMValueRef v)
{
    v = LLVMBuildShl(e->b, LLVMBuildZExt(e->b, v, e->i32, ""), LLVMConstInt(e->i32, 16, 0), "");
    return LLVMBuildBitCast(e->b, v, e->f32, "");
}

/* One lane of dpbusd or dpbf16 in scalar code, the instructions' order of
 * operations (dpbf16: the odd pair first; products of bf16 are exact in
 * f32, so only the two sums round). */
static void scalar_lane(em *e, const kir_stmt *s, LLVMValueRef *ptr, LLVMValueRef i, void *ctx)
{
    const chunk *c = ctx;
    LLVMValueRef lane = lane_of(e, c, i);
    bool bf = s->intrin == KIR_IN_DPBF16;
    int grp = bf ? 2 : 4;
    LLVMTypeRef acc_t = bf ? e->f32 : e->i32, in_t = bf ? e->i16 : e->i8;
    LLVMValueRef pacc = at(e, acc_t, ptr[0], lane);
    LLVMValueRef acc = load_as(e, acc_t, pacc, s->args[0].buf, 4);
    LLVMValueRef base = LLVMBuildNSWMul(e->b, lane, em_ci64(e, grp), "");
    for (int j = grp - 1; j >= 0; j--) {
        LLVMValueRef off = LLVMBuildNSWAdd(e->b, base, em_ci64(e, j), "");
        LLVMValueRef x = load_as(e, in_t, at(e, in_t, ptr[1], off), s->args[1].buf, bf ? 2 : 1);
        LLVMValueRef y = load_as(e, in_t, at(e, in_t, ptr[2], off), s->args[2].buf, bf ? 2 : 1);
        if (bf) {
            acc = LLVMBuildFAdd(e->b, acc, LLVMBuildFMul(e->b, bf16_f32(e, x), bf16_f32(e, y), ""), "");
        } else { /* u8 * s8, summed in i32 (wrapping, as vpdpbusd) */
            LLVMValueRef p = LLVMBuildMul(e->b, LLVMBuildZExt(e->b, x, e->i32, ""), LLVMBuildSExt(e->b, y, e->i32, ""), "");
            acc = LLVMBuildAdd(e->b, acc, p, "");
        }
    }
    store_to(e, acc, pacc, s->args[0].buf, 4);
}

/* dpbusd / dpbf16 over s->lanes lanes: 512-bit chunks, then 256-bit ones,
 * as the target allows, then scalar lanes. */
static int emit_dot(em *e, const kir_stmt *s)
{
    LLVMValueRef ptr[3];
    for (int j = 0; j < 3; j++)
        if (!(ptr[j] = em_elem_ptr(e, s->args[j].buf, s->args[j].nidx, s->args[j].idx)))
            return -1;
    bool bf = s->intrin == KIR_IN_DPBF16, wide = cg_target_vector_bits(e->t) >= 512;
    bool v512, v256;
    if (bf) {
        v512 = em_has_feature(e, "avx512bf16") && wide;
        v256 = em_has_feature(e, "avx512bf16") && em_has_feature(e, "avx512vl");
    } else {
        v512 = em_has_feature(e, "avx512vnni") && wide;
        v256 = em_has_feature(e, "avxvnni") || (em_has_feature(e, "avx512vnni") && em_has_feature(e, "avx512vl"));
    }
    int64_t done = 0, n = s->lanes;
    chunk c;
    if (v512) {
        c = (chunk){0, 16, bf ? "llvm.x86.avx512bf16.dpbf16ps.512" : "llvm.x86.avx512.vpdpbusd.512"};
        lane_loop(e, s, ptr, n / 16, vec_chunk, &c);
        done = n / 16 * 16;
    }
    if (v256 && n - done >= 8) {
        c = (chunk){done, 8, bf ? "llvm.x86.avx512bf16.dpbf16ps.256" : "llvm.x86.avx512.vpdpbusd.256"};
        lane_loop(e, s, ptr, (n - done) / 8, vec_chunk, &c);
        done += (n - done) / 8 * 8;
    }
    c = (chunk){done, 1, NULL};
    lane_loop(e, s, ptr, n - done, scalar_lane, &c);
    return 0;
}

/* ---- pmaddwd: acc[i] += a[0]*ext(b0[i]) + a[1]*ext(b1[i]) ---------------- */

/* Lanes [first, first + w) in one vpmaddwd: the rows b0 and b1 loaded as
 * w bytes each, interleaved (b0[i], b1[i]) and extended to 2w i16, times
 * the broadcast pair (a[0], a[1]), summed pairwise into w i32 and added
 * to acc. Emitted straight-line: the accumulators are scratch that SROA
 * turns into registers only when every access has a constant offset. */
static void madd_chunk(em *e, const kir_stmt *s, LLVMValueRef *ptr, LLVMValueRef apair, int64_t first, unsigned w,
                       const char *name)
{
    bool zx = s->intrin == KIR_IN_PMADDWD_U8;
    LLVMValueRef off = em_ci64(e, first);
    LLVMTypeRef bt = LLVMVectorType(e->i8, w), wt = LLVMVectorType(e->i16, 2 * w), vt = LLVMVectorType(e->i32, w);
    LLVMValueRef b0 = load_as(e, bt, at(e, e->i8, ptr[2], off), s->args[2].buf, 1);
    LLVMValueRef b1 = load_as(e, bt, at(e, e->i8, ptr[3], off), s->args[3].buf, 1);
    LLVMValueRef ix[64];
    for (unsigned i = 0; i < 2 * w; i++)
        ix[i] = LLVMConstInt(e->i32, i / 2 + (i % 2) * w, 0);
    LLVMValueRef bi = LLVMBuildShuffleVector(e->b, b0, b1, LLVMConstVector(ix, 2 * w), "");
    bi = zx ? LLVMBuildZExt(e->b, bi, wt, "") : LLVMBuildSExt(e->b, bi, wt, "");
    LLVMValueRef zero = LLVMConstNull(vt);
    LLVMValueRef av = LLVMBuildShuffleVector(e->b, LLVMBuildInsertElement(e->b, LLVMGetPoison(vt), apair, em_ci64(e, 0), ""),
                                             LLVMGetPoison(vt), zero, "");
    av = LLVMBuildBitCast(e->b, av, wt, "");
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMTypeRef fty = LLVMIntrinsicGetType(e->cx, id, NULL, 0);
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(e->m, id, NULL, 0), args[] = {bi, av};
    LLVMValueRef pacc = at(e, e->i32, ptr[0], off);
    LLVMValueRef acc = load_as(e, vt, pacc, s->args[0].buf, 4);
    store_to(e, LLVMBuildAdd(e->b, acc, LLVMBuildCall2(e->b, fty, f, args, 2, ""), ""), pacc, s->args[0].buf, 4);
}

/* One lane in scalar code (the same sums, wrapping). */
static void madd_lane(em *e, const kir_stmt *s, LLVMValueRef *ptr, LLVMValueRef a0, LLVMValueRef a1, int64_t lane)
{
    bool zx = s->intrin == KIR_IN_PMADDWD_U8;
    LLVMValueRef off = em_ci64(e, lane);
    LLVMValueRef pacc = at(e, e->i32, ptr[0], off), acc = load_as(e, e->i32, pacc, s->args[0].buf, 4);
    LLVMValueRef x[2];
    for (int j = 0; j < 2; j++) {
        x[j] = load_as(e, e->i8, at(e, e->i8, ptr[2 + j], off), s->args[2 + j].buf, 1);
        x[j] = zx ? LLVMBuildZExt(e->b, x[j], e->i32, "") : LLVMBuildSExt(e->b, x[j], e->i32, "");
    }
    acc = LLVMBuildAdd(e->b, acc, LLVMBuildMul(e->b, a0, x[0], ""), "");
    acc = LLVMBuildAdd(e->b, acc, LLVMBuildMul(e->b, a1, x[1], ""), "");
    store_to(e, acc, pacc, s->args[0].buf, 4);
}

static int emit_madd(em *e, const kir_stmt *s)
{
    LLVMValueRef ptr[4];
    for (int j = 0; j < 4; j++)
        if (!(ptr[j] = em_elem_ptr(e, s->args[j].buf, s->args[j].nidx, s->args[j].idx)))
            return -1;
    int64_t n = s->lanes, done = 0;
    if (n > 256)
        return ir_errorf(e->d, "kernel '%.100s': pmaddwd over %lld lanes (at most 256)", e->k->name, (long long)n);
    /* the pair as one i32 (little-endian: a[0] in the low half) */
    LLVMValueRef apair = load_as(e, e->i32, ptr[1], s->args[1].buf, 2);
    if (em_has_feature(e, "avx512bw") && cg_target_vector_bits(e->t) >= 512)
        for (; n - done >= 16; done += 16)
            madd_chunk(e, s, ptr, apair, done, 16, "llvm.x86.avx512.pmaddw.d.512");
    if (em_has_feature(e, "avx2"))
        for (; n - done >= 8; done += 8)
            madd_chunk(e, s, ptr, apair, done, 8, "llvm.x86.avx2.pmadd.wd");
    if (done < n) {
        LLVMValueRef a0 = load_as(e, e->i16, ptr[1], s->args[1].buf, 2);
        LLVMValueRef a1 = load_as(e, e->i16, at(e, e->i16, ptr[1], em_ci64(e, 1)), s->args[1].buf, 2);
        a0 = LLVMBuildSExt(e->b, a0, e->i32, "");
        a1 = LLVMBuildSExt(e->b, a1, e->i32, "");
        for (; done < n; done++)
            madd_lane(e, s, ptr, a0, a1, done);
    }
    return 0;
}

/* ---- dpbusd_rows: acc[i] += sum_j zext(a[j]) * b~[j][i] -------------------- */

/* A call of the (not overloaded) x86 intrinsic `name` on n arguments,
 * each bit-cast to the parameter's type. */
static LLVMValueRef call_x86(em *e, const char *name, LLVMValueRef *args, unsigned n)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMTypeRef fty = LLVMIntrinsicGetType(e->cx, id, NULL, 0);
    LLVMTypeRef pt[4];
    LLVMGetParamTypes(fty, pt);
    for (unsigned i = 0; i < n; i++)
        args[i] = LLVMBuildBitCast(e->b, args[i], pt[i], "");
    return LLVMBuildCall2(e->b, fty, LLVMGetIntrinsicDeclaration(e->m, id, NULL, 0), args, n, "");
}

static bool rows_u8(const kir_stmt *s)
{
    return s->intrin == KIR_IN_DPBUSD_ROWS_U8 || s->intrin == KIR_IN_PMADDUBSW_ROWS_U8;
}

static bool rows_ub(const kir_stmt *s)
{
    return s->intrin == KIR_IN_PMADDUBSW_ROWS_S8 || s->intrin == KIR_IN_PMADDUBSW_ROWS_U8;
}

/* Lanes [first, first + w) of 4 rows of b (operand bi, at p, row stride
 * rs elements), loaded as w bytes each and interleaved in quads (b0[i],
 * b1[i], b2[i], b3[i]): 4w i8; u8 rows flip their top bit (b - 128 as an
 * i8). */
static LLVMValueRef quads_of_rows(em *e, const kir_stmt *s, int bi, LLVMValueRef p, LLVMValueRef rs, int64_t first,
                                  unsigned w, bool u8)
{
    LLVMTypeRef bt = LLVMVectorType(e->i8, w);
    LLVMValueRef rows[4], ix[256];
    for (int j = 0; j < 4; j++) {
        LLVMValueRef off = LLVMBuildNSWAdd(e->b, em_ci64(e, first), LLVMBuildNSWMul(e->b, rs, em_ci64(e, j), ""), "");
        rows[j] = load_as(e, bt, at(e, e->i8, p, off), s->args[bi].buf, 1);
    }
    for (unsigned i = 0; i < 2 * w; i++)
        ix[i] = LLVMConstInt(e->i32, i / 2 + (i % 2) * w, 0);
    LLVMValueRef p01 = LLVMBuildShuffleVector(e->b, rows[0], rows[1], LLVMConstVector(ix, 2 * w), "");
    LLVMValueRef p23 = LLVMBuildShuffleVector(e->b, rows[2], rows[3], LLVMConstVector(ix, 2 * w), "");
    for (unsigned i = 0; i < 4 * w; i++) {
        unsigned q = i / 4, j = i % 4;
        ix[i] = LLVMConstInt(e->i32, j < 2 ? 2 * q + j : 2 * w + 2 * q + j - 2, 0);
    }
    LLVMValueRef quads = LLVMBuildShuffleVector(e->b, p01, p23, LLVMConstVector(ix, 4 * w), "");
    if (u8) {
        for (unsigned i = 0; i < 4 * w; i++)
            ix[i] = LLVMConstInt(e->i8, 0x80, 0);
        quads = LLVMBuildXor(e->b, quads, LLVMConstVector(ix, 4 * w), "");
    }
    return quads;
}

/* acc (8 i32) + the quad sums of the broadcast u8 quad av by the i8 quads
 * (32 bytes): vpmaddubsw into i16 pair sums (saturating: the callers
 * keep them in range), vpmaddwd by ones into i32. */
static LLVMValueRef ub_madd(em *e, LLVMValueRef acc, LLVMValueRef av, LLVMValueRef quads)
{
    LLVMValueRef args[2] = {av, quads}; /* the unsigned operand first */
    LLVMValueRef p16 = call_x86(e, "llvm.x86.avx2.pmadd.ub.sw", args, 2);
    LLVMValueRef ones[16];
    for (unsigned i = 0; i < 16; i++)
        ones[i] = LLVMConstInt(e->i16, 1, 0);
    args[0] = p16;
    args[1] = LLVMConstVector(ones, 16);
    LLVMTypeRef vt = LLVMVectorType(e->i32, 8);
    return LLVMBuildAdd(e->b, acc, LLVMBuildBitCast(e->b, call_x86(e, "llvm.x86.avx2.pmadd.wd", args, 2), vt, ""), "");
}

/* The quad a (one u8 quad at p, an i32) broadcast to w lanes. */
static LLVMValueRef bcast_quad(em *e, LLVMValueRef aquad, unsigned w)
{
    LLVMTypeRef vt = LLVMVectorType(e->i32, w);
    LLVMValueRef av = LLVMBuildInsertElement(e->b, LLVMGetPoison(vt), aquad, em_ci64(e, 0), "");
    return LLVMBuildShuffleVector(e->b, av, LLVMGetPoison(vt), LLVMConstNull(vt), "");
}

/* Lanes [first, first + w) in one vpdpbusd (name set), or in vpmaddubsw +
 * vpmaddwd by ones + vpaddd (name NULL, w = 8: pmaddubsw_rows, whose
 * caller keeps the i16 pair sums from saturating), on b's 4 rows
 * interleaved in quads. */
static void rows_chunk(em *e, const kir_stmt *s, LLVMValueRef *ptr, LLVMValueRef rs, LLVMValueRef aquad,
                       int64_t first, unsigned w, const char *name)
{
    LLVMValueRef quads = quads_of_rows(e, s, 2, ptr[2], rs, first, w, rows_u8(s));
    LLVMTypeRef vt = LLVMVectorType(e->i32, w);
    LLVMValueRef av = bcast_quad(e, aquad, w);
    LLVMValueRef pacc = at(e, e->i32, ptr[0], em_ci64(e, first));
    LLVMValueRef acc = load_as(e, vt, pacc, s->args[0].buf, 4);
    if (name) {
        LLVMValueRef args[3] = {acc, av, quads};
        acc = call_x86(e, name, args, 3);
    } else {
        acc = ub_madd(e, acc, av, quads);
    }
    store_to(e, LLVMBuildBitCast(e->b, acc, vt, ""), pacc, s->args[0].buf, 4);
}

static int emit_rows(em *e, const kir_stmt *s)
{
    LLVMValueRef ptr[3];
    for (int j = 0; j < 3; j++)
        if (!(ptr[j] = em_elem_ptr(e, s->args[j].buf, s->args[j].nidx, s->args[j].idx)))
            return -1;
    const kir_buf *bb = &e->k->bufs[s->args[2].buf];
    if (bb->dtype != IR_U8 && bb->dtype != IR_I8)
        return ir_errorf(e->d, "kernel '%.100s': %s reads rows of u8 or i8, not %s", e->k->name, kir_intrin_name(s->intrin),
                         ir_dtype_name(bb->dtype));
    int64_t n = s->lanes, done = 0;
    if (n > 64)
        return ir_errorf(e->d, "kernel '%.100s': %s over %lld lanes (at most 64)", e->k->name,
                         kir_intrin_name(s->intrin), (long long)n);
    LLVMValueRef rs = e->stride[s->args[2].buf][bb->rank - 2];
    LLVMValueRef aquad = load_as(e, e->i32, ptr[1], s->args[1].buf, 1);
    bool wide = cg_target_vector_bits(e->t) >= 512;
    if (rows_ub(s)) {
        if (em_has_feature(e, "avx2"))
            for (; n - done >= 8; done += 8)
                rows_chunk(e, s, ptr, rs, aquad, done, 8, NULL);
    } else {
        if (em_has_feature(e, "avx512vnni") && wide)
            for (; n - done >= 16; done += 16)
                rows_chunk(e, s, ptr, rs, aquad, done, 16, "llvm.x86.avx512.vpdpbusd.512");
        if (em_has_feature(e, "avxvnni") || (em_has_feature(e, "avx512vnni") && em_has_feature(e, "avx512vl")))
            for (; n - done >= 8; done += 8)
                rows_chunk(e, s, ptr, rs, aquad, done, 8, "llvm.x86.avx512.vpdpbusd.256");
    }
    bool u8 = rows_u8(s);
    for (; done < n; done++) { /* scalar lanes: the same sums */
        LLVMValueRef pacc = at(e, e->i32, ptr[0], em_ci64(e, done)), acc = load_as(e, e->i32, pacc, s->args[0].buf, 4);
        for (int j = 0; j < 4; j++) {
            LLVMValueRef a = load_as(e, e->i8, at(e, e->i8, ptr[1], em_ci64(e, j)), s->args[1].buf, 1);
            LLVMValueRef off = LLVMBuildNSWAdd(e->b, em_ci64(e, done), LLVMBuildNSWMul(e->b, rs, em_ci64(e, j), ""), "");
            LLVMValueRef b = load_as(e, e->i8, at(e, e->i8, ptr[2], off), s->args[2].buf, 1);
            b = u8 ? LLVMBuildSub(e->b, LLVMBuildZExt(e->b, b, e->i32, ""), LLVMConstInt(e->i32, 128, 0), "")
                   : LLVMBuildSExt(e->b, b, e->i32, "");
            acc = LLVMBuildAdd(e->b, acc, LLVMBuildMul(e->b, LLVMBuildZExt(e->b, a, e->i32, ""), b, ""), "");
        }
        store_to(e, acc, pacc, s->args[0].buf, 4);
    }
    return 0;
}

/* ---- pmaddubsw_quads and quad_pack ---------------------------------------- */

/* ---- dpbf16_pairs, dpbusd_quads, pmaddubsw_quads: a broadcast group
 * against packed b ---------------------------------------------------------- */

/* dpbf16_pairs: acc[i] = (acc[i] + a[1]*b[2i+1]) + a[0]*b[2i] (f32);
 * dpbusd_quads and pmaddubsw_quads: acc[i] += sum_j zext(a[j]) *
 * sext(b[4i+j]) (i32). All take a's 4 bytes broadcast and 4 bytes of b
 * per lane: vdpbf16ps or vpdpbusd, 16 lanes (zmm) then 8 (ymm) at a time
 * as the target allows, or (pmaddubsw_quads, with its saturation caveat)
 * vpmaddubsw + vpmaddwd by ones on AVX2, 8 at a time; straight-line
 * (accumulators in scratch at constant offsets become registers); scalar
 * lanes, exact, for the rest and without the instruction. */
static int emit_bcast_dot(em *e, const kir_stmt *s)
{
    LLVMValueRef ptr[3];
    for (int j = 0; j < 3; j++)
        if (!(ptr[j] = em_elem_ptr(e, s->args[j].buf, s->args[j].nidx, s->args[j].idx)))
            return -1;
    int64_t n = s->lanes, done = 0;
    if (n > 256)
        return ir_errorf(e->d, "kernel '%.100s': %s over %lld lanes (at most 256)", e->k->name,
                         kir_intrin_name(s->intrin), (long long)n);
    bool bf = s->intrin == KIR_IN_DPBF16_PAIRS, ub = s->intrin == KIR_IN_PMADDUBSW_QUADS;
    bool wide = cg_target_vector_bits(e->t) >= 512;
    bool z = bf ? em_has_feature(e, "avx512bf16") && wide : !ub && em_has_feature(e, "avx512vnni") && wide;
    bool y = bf ? em_has_feature(e, "avx512bf16") && em_has_feature(e, "avx512vl")
           : ub ? em_has_feature(e, "avx2")
                : em_has_feature(e, "avxvnni") || (em_has_feature(e, "avx512vnni") && em_has_feature(e, "avx512vl"));
    LLVMTypeRef acc_t = bf ? e->f32 : e->i32;
    LLVMValueRef agrp = load_as(e, e->i32, ptr[1], s->args[1].buf, bf ? 2 : 1);
    for (unsigned w = 16; w >= 8; w /= 2) {
        if (w == 16 ? !z : !y)
            continue;
        if (ub) {
            LLVMTypeRef vt = LLVMVectorType(e->i32, 8), qt = LLVMVectorType(e->i8, 32);
            for (; n - done >= 8; done += 8) {
                LLVMValueRef quads = load_as(e, qt, at(e, e->i8, ptr[2], em_ci64(e, 4 * done)), s->args[2].buf, 1);
                LLVMValueRef pacc = at(e, e->i32, ptr[0], em_ci64(e, done));
                LLVMValueRef acc = load_as(e, vt, pacc, s->args[0].buf, 4);
                store_to(e, ub_madd(e, acc, bcast_quad(e, agrp, 8), quads), pacc, s->args[0].buf, 4);
            }
            continue;
        }
        const char *name = bf ? (w == 16 ? "llvm.x86.avx512bf16.dpbf16ps.512" : "llvm.x86.avx512bf16.dpbf16ps.256")
                              : (w == 16 ? "llvm.x86.avx512.vpdpbusd.512" : "llvm.x86.avx512.vpdpbusd.256");
        unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
        LLVMTypeRef fty = LLVMIntrinsicGetType(e->cx, id, NULL, 0), pt[3];
        LLVMGetParamTypes(fty, pt);
        LLVMValueRef f = LLVMGetIntrinsicDeclaration(e->m, id, NULL, 0);
        LLVMValueRef av = LLVMBuildBitCast(e->b, bcast_quad(e, agrp, w), pt[1], "");
        for (; n - done >= w; done += w) {
            LLVMValueRef pacc = at(e, acc_t, ptr[0], em_ci64(e, done));
            LLVMValueRef args[3] = {load_as(e, pt[0], pacc, s->args[0].buf, 4), av,
                                    load_as(e, pt[2], at(e, e->i8, ptr[2], em_ci64(e, 4 * done)), s->args[2].buf, bf ? 2 : 1)};
            store_to(e, LLVMBuildCall2(e->b, fty, f, args, 3, ""), pacc, s->args[0].buf, 4);
        }
    }
    for (; done < n; done++) { /* scalar lanes: the instruction's sums */
        LLVMValueRef pacc = at(e, acc_t, ptr[0], em_ci64(e, done)), acc = load_as(e, acc_t, pacc, s->args[0].buf, 4);
        if (bf) { /* dpbf16's order: the odd pair first; bf16 products are exact in f32 */
            for (int j = 1; j >= 0; j--) {
                LLVMValueRef a = load_as(e, e->i16, at(e, e->i16, ptr[1], em_ci64(e, j)), s->args[1].buf, 2);
                LLVMValueRef b = load_as(e, e->i16, at(e, e->i16, ptr[2], em_ci64(e, 2 * done + j)), s->args[2].buf, 2);
                acc = LLVMBuildFAdd(e->b, acc, LLVMBuildFMul(e->b, bf16_f32(e, a), bf16_f32(e, b), ""), "");
            }
        } else {
            for (int j = 0; j < 4; j++) {
                LLVMValueRef a = load_as(e, e->i8, at(e, e->i8, ptr[1], em_ci64(e, j)), s->args[1].buf, 1);
                LLVMValueRef b = load_as(e, e->i8, at(e, e->i8, ptr[2], em_ci64(e, 4 * done + j)), s->args[2].buf, 1);
                acc = LLVMBuildAdd(e->b, acc,
                                   LLVMBuildMul(e->b, LLVMBuildZExt(e->b, a, e->i32, ""), LLVMBuildSExt(e->b, b, e->i32, ""), ""),
                                   "");
            }
        }
        store_to(e, acc, pacc, s->args[0].buf, 4);
    }
    return 0;
}

/* dst[4i+j] = b~[j][i]: 8 lanes at a time by dpbusd_rows' shuffles (plain
 * vector IR, any target), the rest one byte at a time. */
static int emit_quad_pack(em *e, const kir_stmt *s)
{
    LLVMValueRef ptr[2];
    for (int j = 0; j < 2; j++)
        if (!(ptr[j] = em_elem_ptr(e, s->args[j].buf, s->args[j].nidx, s->args[j].idx)))
            return -1;
    const kir_buf *bb = &e->k->bufs[s->args[1].buf];
    if (bb->dtype != IR_U8 && bb->dtype != IR_I8)
        return ir_errorf(e->d, "kernel '%.100s': %s reads rows of u8 or i8, not %s", e->k->name,
                         kir_intrin_name(s->intrin), ir_dtype_name(bb->dtype));
    int64_t n = s->lanes, done = 0;
    if (n > 64)
        return ir_errorf(e->d, "kernel '%.100s': %s over %lld lanes (at most 64)", e->k->name,
                         kir_intrin_name(s->intrin), (long long)n);
    bool u8 = s->intrin == KIR_IN_QUAD_PACK_U8;
    LLVMValueRef rs = e->stride[s->args[1].buf][bb->rank - 2];
    for (; n - done >= 8; done += 8) {
        LLVMValueRef quads = quads_of_rows(e, s, 1, ptr[1], rs, done, 8, u8);
        store_to(e, quads, at(e, e->i8, ptr[0], em_ci64(e, 4 * done)), s->args[0].buf, 1);
    }
    for (; done < n; done++)
        for (int j = 0; j < 4; j++) {
            LLVMValueRef off = LLVMBuildNSWAdd(e->b, em_ci64(e, done), LLVMBuildNSWMul(e->b, rs, em_ci64(e, j), ""), "");
            LLVMValueRef b = load_as(e, e->i8, at(e, e->i8, ptr[1], off), s->args[1].buf, 1);
            if (u8)
                b = LLVMBuildXor(e->b, b, LLVMConstInt(e->i8, 0x80, 0), "");
            store_to(e, b, at(e, e->i8, ptr[0], em_ci64(e, 4 * done + j)), s->args[0].buf, 1);
        }
    return 0;
}

/* dst[i][j] = src[j][i] for i, j < n: n rows loaded as vectors, then per
 * round of block size b (n/2, n/4, ... 1) each pair of rows r, r + b
 * ((r & b) == 0) becomes r' = r where (c & b) == 0 else (r + b)[c - b],
 * (r + b)' = r[c + b] where (c & b) == 0 else (r + b)[c]: the off-diagonal
 * b x b blocks of every 2b x 2b block swap, which after the last round
 * (b = 1) is the transpose. n a power of two up to 64. */
static int emit_transpose(em *e, const kir_stmt *s)
{
    LLVMValueRef ptr[2];
    for (int j = 0; j < 2; j++) {
        if (!(ptr[j] = em_elem_ptr(e, s->args[j].buf, s->args[j].nidx, s->args[j].idx)))
            return -1;
        if (e->k->bufs[s->args[j].buf].dtype != IR_F32)
            return ir_errorf(e->d, "kernel '%.100s': transpose_f32 on %s rows", e->k->name,
                             ir_dtype_name(e->k->bufs[s->args[j].buf].dtype));
    }
    int n = s->lanes;
    if (n < 1 || n > 64 || (n & (n - 1)))
        return ir_errorf(e->d, "kernel '%.100s': transpose_f32 of %d lanes (a power of two up to 64)", e->k->name, n);
    LLVMTypeRef ft = e->f32, vt = LLVMVectorType(ft, (unsigned)n);
    const kir_buf *db = &e->k->bufs[s->args[0].buf], *sb = &e->k->bufs[s->args[1].buf];
    LLVMValueRef ds = s->args[0].rows ? em_eval(e, s->args[0].rows) : e->stride[s->args[0].buf][db->rank - 2];
    LLVMValueRef ss = s->args[1].rows ? em_eval(e, s->args[1].rows) : e->stride[s->args[1].buf][sb->rank - 2];
    if (!ds || !ss)
        return -1;
    LLVMValueRef row[64], mask[128];
    for (int j = 0; j < n; j++)
        row[j] = load_as(e, vt, at(e, ft, ptr[1], LLVMBuildNSWMul(e->b, ss, em_ci64(e, j), "")), s->args[1].buf, 4);
    for (int b = n / 2; b >= 1; b /= 2)
        for (int r = 0; r < n; r++) {
            if (r & b)
                continue;
            LLVMValueRef lo, hi;
            for (int c = 0; c < n; c++)
                mask[c] = LLVMConstInt(e->i32, (unsigned)((c & b) ? n + c - b : c), 0);
            lo = LLVMBuildShuffleVector(e->b, row[r], row[r + b], LLVMConstVector(mask, (unsigned)n), "");
            for (int c = 0; c < n; c++)
                mask[c] = LLVMConstInt(e->i32, (unsigned)((c & b) ? n + c : c + b), 0);
            hi = LLVMBuildShuffleVector(e->b, row[r], row[r + b], LLVMConstVector(mask, (unsigned)n), "");
            row[r] = lo;
            row[r + b] = hi;
        }
    for (int i = 0; i < n; i++)
        store_to(e, row[i], at(e, ft, ptr[0], LLVMBuildNSWMul(e->b, ds, em_ci64(e, i), "")), s->args[0].buf, 4);
    return 0;
}

/* dst[2i+j] = b[j][i]: the two rows loaded as vectors of up to 32 i16,
 * interleaved by one shuffle each half (vpunpcklwd/hwd and a permute on
 * AVX-512), stored as one run of 2n. */
static int emit_pair_pack(em *e, const kir_stmt *s)
{
    LLVMValueRef ptr[2];
    for (int j = 0; j < 2; j++)
        if (!(ptr[j] = em_elem_ptr(e, s->args[j].buf, s->args[j].nidx, s->args[j].idx)))
            return -1;
    const kir_buf *bb = &e->k->bufs[s->args[1].buf];
    if (bb->dtype != IR_BF16)
        return ir_errorf(e->d, "kernel '%.100s': pair_pack reads rows of bf16, not %s", e->k->name,
                         ir_dtype_name(bb->dtype));
    int64_t n = s->lanes;
    LLVMValueRef rs = e->stride[s->args[1].buf][bb->rank - 2];
    for (int64_t done = 0; done < n;) {
        int64_t w = n - done >= 32 ? 32 : n - done >= 16 ? 16 : n - done >= 8 ? 8 : 1;
        LLVMTypeRef vt = LLVMVectorType(e->i16, (unsigned)w);
        LLVMValueRef r0 = load_as(e, vt, at(e, e->i16, ptr[1], em_ci64(e, done)), s->args[1].buf, 2);
        LLVMValueRef r1 = load_as(e, vt, at(e, e->i16, ptr[1], LLVMBuildNSWAdd(e->b, rs, em_ci64(e, done), "")),
                                  s->args[1].buf, 2);
        LLVMValueRef mask[64];
        for (int64_t i = 0; i < 2 * w; i++)
            mask[i] = LLVMConstInt(e->i32, (unsigned)(i / 2 + (i % 2) * w), 0);
        LLVMValueRef v = LLVMBuildShuffleVector(e->b, r0, r1, LLVMConstVector(mask, (unsigned)(2 * w)), "");
        store_to(e, v, at(e, e->i16, ptr[0], em_ci64(e, 2 * done)), s->args[0].buf, 2);
        done += w;
    }
    return 0;
}

/* ---- AMX tiles ------------------------------------------------------------- */

/* The tile configuration amx_config(d, r) loads (lanes = d | r << 8):
 * palette 1, tiles 0..3 r rows of 64 bytes, 4 and 5 r rows of d bytes, 6
 * and 7 d/4 rows of 64 (d = 0: 64, r = 0: 16), the others unused (colsb:
 * 16-bit, from byte 16; rows: bytes 48..63). A private constant of the
 * module per shape, 64-byte aligned. */
static LLVMValueRef amx_config_global(em *e, int lanes)
{
    int d = kir_amx_depth(lanes), r = kir_amx_rows(lanes);
    char name[40];
    snprintf(name, sizeof name, "icc.amx.config.%dx%d", d, r);
    LLVMValueRef g = LLVMGetNamedGlobal(e->m, name);
    if (g)
        return g;
    unsigned char cfg[64] = {1};
    for (int t = 0; t < 8; t++) {
        cfg[16 + 2 * t] = (unsigned char)(t == 4 || t == 5 ? d : 64);
        cfg[48 + t] = (unsigned char)(t >= 6 ? d / 4 : r);
    }
    LLVMValueRef bytes[64];
    for (int i = 0; i < 64; i++)
        bytes[i] = LLVMConstInt(e->i8, cfg[i], 0);
    g = LLVMAddGlobal(e->m, LLVMArrayType2(e->i8, 64), name);
    LLVMSetInitializer(g, LLVMConstArray2(e->i8, bytes, 64));
    LLVMSetGlobalConstant(g, 1);
    LLVMSetLinkage(g, LLVMPrivateLinkage);
    LLVMSetAlignment(g, 64);
    return g;
}

/* An AMX statement as its instruction: the tile numbers are immediates,
 * a window's address is its first element and its stride the buffer's
 * row pitch in bytes. No scalar form: the schedule uses tiles only on a
 * target that has them (and the runtime asks the OS for their state when
 * the library is opened), so a target without is refused here. */
static int emit_amx(em *e, const kir_stmt *s)
{
    const char *feat = kir_intrin_feature(s->intrin);
    if (!em_has_feature(e, feat) || !em_has_feature(e, "amx-tile"))
        return ir_errorf(e->d, "kernel '%.100s': intrinsic %s needs the target feature %s, which this target "
                         "lacks (AMX has no scalar form)", e->k->name, kir_intrin_name(s->intrin), feat);
    LLVMValueRef args[3];
    const char *name;
    unsigned n = 0;
    switch (s->intrin) {
    case KIR_IN_AMX_CONFIG:
        name = "llvm.x86.ldtilecfg";
        args[n++] = amx_config_global(e, s->lanes);
        break;
    case KIR_IN_AMX_RELEASE:
        name = "llvm.x86.tilerelease";
        break;
    case KIR_IN_AMX_ZERO:
        name = "llvm.x86.tilezero";
        args[n++] = LLVMConstInt(e->i8, (unsigned)s->args[0].tile, 0);
        break;
    case KIR_IN_AMX_DPBF16PS:
    case KIR_IN_AMX_DPBSSD:
    case KIR_IN_AMX_DPBUSD:
        name = s->intrin == KIR_IN_AMX_DPBF16PS ? "llvm.x86.tdpbf16ps"
             : s->intrin == KIR_IN_AMX_DPBSSD   ? "llvm.x86.tdpbssd" : "llvm.x86.tdpbusd";
        for (int i = 0; i < 3; i++)
            args[n++] = LLVMConstInt(e->i8, (unsigned)s->args[i].tile, 0);
        break;
    default: { /* load: (tile, window); store: (window, tile) */
        bool load = s->intrin == KIR_IN_AMX_LOAD;
        const kir_iarg *w = &s->args[load ? 1 : 0];
        const kir_buf *b = &e->k->bufs[w->buf];
        LLVMValueRef p = em_elem_ptr(e, w->buf, w->nidx, w->idx);
        if (!p)
            return -1;
        name = load ? "llvm.x86.tileloadd64" : "llvm.x86.tilestored64";
        args[n++] = LLVMConstInt(e->i8, (unsigned)s->args[load ? 0 : 1].tile, 0);
        args[n++] = p;
        args[n++] = LLVMBuildNSWMul(e->b, e->stride[w->buf][b->rank - 2],
                                    em_ci64(e, (int64_t)ir_dtype_size(b->dtype)), "");
        break;
    }
    }
    call_x86(e, name, args, n);
    return 0;
}

int em_intrinsic(em *e, const kir_stmt *s)
{
    const char *nm = kir_intrin_name(s->intrin);
    switch (s->intrin) {
    case KIR_IN_PMADDWD_S8:
    case KIR_IN_PMADDWD_U8:
        return emit_madd(e, s);
    case KIR_IN_DPBUSD_ROWS_S8:
    case KIR_IN_DPBUSD_ROWS_U8:
    case KIR_IN_PMADDUBSW_ROWS_S8:
    case KIR_IN_PMADDUBSW_ROWS_U8:
        return emit_rows(e, s);
    case KIR_IN_QUAD_PACK_S8:
    case KIR_IN_QUAD_PACK_U8:
        return emit_quad_pack(e, s);
    case KIR_IN_TRANSPOSE_F32:
        return emit_transpose(e, s);
    case KIR_IN_PAIR_PACK:
        return emit_pair_pack(e, s);
    case KIR_IN_DPBUSD:
    case KIR_IN_DPBF16:
        return emit_dot(e, s);
    case KIR_IN_DPBF16_PAIRS:
    case KIR_IN_DPBUSD_QUADS:
    case KIR_IN_PMADDUBSW_QUADS:
        return emit_bcast_dot(e, s);
    case KIR_IN_MMA_SYNC:
        return ir_errorf(e->d, "kernel '%.100s': intrinsic %s is a CUDA warp operation: the LLVM backend refuses it",
                         e->k->name, nm);
    case KIR_IN_AMX_CONFIG:
    case KIR_IN_AMX_ZERO:
    case KIR_IN_AMX_LOAD:
    case KIR_IN_AMX_STORE:
    case KIR_IN_AMX_DPBF16PS:
    case KIR_IN_AMX_DPBSSD:
    case KIR_IN_AMX_DPBUSD:
    case KIR_IN_AMX_RELEASE:
        return emit_amx(e, s);
    default:
        return ir_errorf(e->d, "kernel '%.100s': intrinsic %s (%s) is not supported by the LLVM backend yet",
                         e->k->name, nm, kir_intrin_feature(s->intrin));
    }
}
