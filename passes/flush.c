/* flush.c - the flush-weights pass: subnormal values in the constant f32
 * operands of Conv, ConvTranspose, MatMul and Gemm (weights, biases)
 * become zeros of their sign.
 *
 * A multiply or add with a subnormal operand takes a microcode assist on
 * x86 cores (about 100x the cycles of the instruction), and trained
 * weights can hold many: PP-OCRv6's small detector has 256 K of them,
 * 63% of two 1x1 convs' weights and 62% of their biases, which ran at 1-3
 * GFLOP/s (ONNX Runtime is as slow; OpenVINO sets the CPU's
 * denormals-are-zero for the whole run). A term with a subnormal factor is
 * below 2^-126 times the other factor, lost in any sum of normal terms, so
 * the results move by less than that. The layout pass's packing flushed
 * the blocked convs' weights already; this pass reaches the convs that
 * stay NCHW (a symbolic detector's) and the MatMul/Gemm weights pack-b
 * packs. A constant is copied once (its other readers keep the original)
 * and only when it holds a subnormal.
 */
#include "passes/pass.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool contraction(const ir_node *n)
{
    return n->op == IR_OP_CONV || n->op == IR_OP_CONV_TRANSPOSE || n->op == IR_OP_MATMUL || n->op == IR_OP_GEMM;
}

static int64_t subnormals(const ir_value *v)
{
    const float *f = v->cval.data;
    int64_t n = 0;
    for (int64_t i = 0; i < v->cval.numel; i++)
        n += f[i] != 0 && fabsf(f[i]) < FLT_MIN;
    return n;
}

int pass_flush_weights(pass_ctx *c)
{
    ir_graph *g = c->g;
    int nv = g->nvalues;
    ir_value **flushed = calloc((size_t)nv + 1, sizeof *flushed);
    if (!flushed)
        return ir_errorf(c->diag, "out of memory");
    int64_t consts = 0, values = 0;
    for (int k = 0; k < g->nnodes; k++) {
        ir_node *n = g->nodes[k];
        if (!contraction(n))
            continue;
        for (int i = 0; i < n->nin; i++) {
            ir_value *v = n->in[i];
            if (!v || v->kind != IR_VAL_CONST || v->type.dtype != IR_F32 || v->id >= nv)
                continue;
            if (!flushed[v->id]) {
                int64_t cnt = subnormals(v);
                if (!cnt)
                    continue;
                char buf[256];
                ir_value *p = ir_graph_add_const(g, ir_graph_fresh_name(g, v->name, "_flushed", buf, sizeof buf),
                                                 &v->type, NULL, c->diag);
                if (!p) {
                    free(flushed);
                    return -1;
                }
                const float *src = v->cval.data;
                float *dst = p->cval.data;
                for (int64_t j = 0; j < v->cval.numel; j++)
                    dst[j] = fabsf(src[j]) < FLT_MIN ? copysignf(0.0f, src[j]) : src[j];
                flushed[v->id] = p;
                consts++;
                values += cnt;
            }
            n->in[i] = flushed[v->id];
            c->changed = true;
        }
    }
    free(flushed);
    pass_stat(c, "constants flushed", consts);
    pass_stat(c, "subnormal values made zero", values);
    return 0;
}
