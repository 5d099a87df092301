#!/usr/bin/env python3
"""Writes a GPT-2-shaped decoder in the static-KV-cache form AOT users export, with random weights.

    python3 bench/models/gpt2_static_kv.py OUT.onnx [--layers 2] [--hidden 256] [--heads 4]
                                           [--max-len 128] [--vocab 2048] [--seq 0]

Inputs (the contract `icc bench --generate` reads, docs/performance.md):
  input_ids     i64[1, seq]                  the new tokens (seq symbolic; --seq N fixes it)
  position_ids  i64[1, seq]                  their positions in the sequence
  past_key_i, past_value_i  f32[1, heads, max_len, head_dim]   the cache, zeros at the start
Outputs: logits f32[1, seq, vocab], present_key_i, present_value_i (same shape as the past).

Each layer writes its new keys and values into the cache at their positions with a one-hot
placement matrix (Equal of position_ids against 0..max_len-1, so no data-dependent shapes)
and attends over all max_len slots, masking the slots past each query's position: the
fixed-length attention a static cache implies. Pre-LayerNorm, GELU (Erf) MLP of 4 x hidden,
tied output embedding, as GPT-2.
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build(layers=2, hidden=256, heads=4, max_len=128, vocab=2048, seq=0, seed=0):
    rng = np.random.default_rng(seed)
    d = hidden // heads
    inits, nodes = [], []
    count = [0]

    def w(name, *shape, scale=0.02):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def c(name, value, dtype=np.float32):   # a named constant, made once
        if any(t.name == name for t in inits):
            return name
        inits.append(numpy_helper.from_array(np.array(value, dtype=dtype), name))
        return name

    def node(op, ins, **attrs):
        count[0] += 1
        out = "%s_%d" % (op.lower(), count[0])
        nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    def layernorm(x, name):
        return node("LayerNormalization", [x, c(name + ".g", np.ones(hidden)), c(name + ".b", np.zeros(hidden))],
                    axis=-1, epsilon=1e-5)

    def linear(x, name, fin, fout):
        return node("Add", [node("MatMul", [x, w(name + ".w", fin, fout)]), c(name + ".b", np.zeros(fout))])

    def heads_first(x):   # [1, S, hidden] -> [1, heads, S, d]
        return node("Transpose", [node("Reshape", [x, c("shape_bshd", [0, 0, heads, d], np.int64)])],
                    perm=[0, 2, 1, 3])

    wte = w("wte", vocab, hidden)
    x = node("Add", [node("Gather", [wte, "input_ids"], axis=0), node("Gather", [w("wpe", max_len, hidden), "position_ids"], axis=0)])
    slots = c("slots", np.arange(max_len), np.int64)                            # [max_len]
    pos = node("Unsqueeze", ["position_ids", c("axis_last", [-1], np.int64)])   # [1, S, 1]
    place = node("Cast", [node("Equal", [pos, slots])], to=TensorProto.FLOAT)   # [1, S, max_len] one-hot
    place_t = node("Unsqueeze", [node("Transpose", [place], perm=[0, 2, 1]), c("axis_1", [1], np.int64)])  # [1,1,max,S]
    keep = node("Sub", [c("one", 1.0), node("ReduceSum", [place, c("axis_s", [1], np.int64)], keepdims=1)])  # [1,1,max]
    keep = node("Unsqueeze", [keep, c("axis_3", [3], np.int64)])              # [1, 1, max_len, 1]
    visible = node("LessOrEqual", [slots, pos])                                # [1, S, max_len]
    bias = node("Unsqueeze", [node("Where", [visible, c("zero", 0.0), c("neg", -1e9)]), c("axis_1b", [1], np.int64)])
    ins = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, seq or "seq"]),
           helper.make_tensor_value_info("position_ids", TensorProto.INT64, [1, seq or "seq"])]
    outs = []
    kv_shape = [1, heads, max_len, d]
    for i in range(layers):
        h = layernorm(x, "l%d.ln1" % i)
        q = heads_first(linear(h, "l%d.q" % i, hidden, hidden))
        k_new = heads_first(linear(h, "l%d.k" % i, hidden, hidden))
        v_new = heads_first(linear(h, "l%d.v" % i, hidden, hidden))
        present = []
        for kind, new in (("key", k_new), ("value", v_new)):
            past = "past_%s_%d" % (kind, i)
            ins.append(helper.make_tensor_value_info(past, TensorProto.FLOAT, kv_shape))
            p = node("Add", [node("Mul", [past, keep]), node("MatMul", [place_t, new])])
            nodes.append(helper.make_node("Identity", [p], ["present_%s_%d" % (kind, i)], name="present_%s_%d" % (kind, i)))
            outs.append(helper.make_tensor_value_info("present_%s_%d" % (kind, i), TensorProto.FLOAT, kv_shape))
            present.append(p)
        scores = node("Mul", [node("MatMul", [q, node("Transpose", [present[0]], perm=[0, 1, 3, 2])]),
                              c("l%d.scale" % i, 1.0 / np.sqrt(d))])
        att = node("Softmax", [node("Add", [scores, bias])], axis=-1)
        o = node("MatMul", [att, present[1]])                                   # [1, heads, S, d]
        o = node("Reshape", [node("Transpose", [o], perm=[0, 2, 1, 3]), c("shape_bsh", [0, 0, hidden], np.int64)])
        x = node("Add", [x, linear(o, "l%d.o" % i, hidden, hidden)])
        h = linear(layernorm(x, "l%d.ln2" % i), "l%d.fc" % i, hidden, 4 * hidden)
        gelu = node("Mul", [node("Mul", [h, c("half", 0.5)]),
                            node("Add", [c("one_g", 1.0), node("Erf", [node("Mul", [h, c("rsqrt2", 1 / np.sqrt(2))])])])])
        x = node("Add", [x, linear(gelu, "l%d.proj" % i, 4 * hidden, hidden)])
    logits = node("MatMul", [layernorm(x, "ln_f"), node("Transpose", [wte], perm=[1, 0])])
    nodes.append(helper.make_node("Identity", [logits], ["logits"], name="logits"))
    outs.insert(0, helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, seq or "seq", vocab]))
    g = helper.make_graph(nodes, "gpt2_static_kv", ins, outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="icc-bench")
    onnx.checker.check_model(m)
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--seq", type=int, default=0, help="fix the new-token count (0: symbolic 'seq')")
    a = ap.parse_args()
    onnx.save(build(a.layers, a.hidden, a.heads, a.max_len, a.vocab, a.seq), a.out)


if __name__ == "__main__":
    main()
