"""Writes a BERT-base-shaped transformer encoder layer as ONNX, with its expected output.

    python3 tests/models/make_bert_layer.py OUTDIR [--seq 128]

OUTDIR/bert_layer.onnx: hidden 768, 12 heads of 64, FFN 3072, batch 1, the attention, LayerNorm
and GELU written out in primitive ops the way exporters emit them (MatMul, Add, Reshape,
Transpose, Div, Softmax, ReduceMean, Sub, Pow, Sqrt, Erf, ...), random weights from a fixed seed.
Inputs: hidden f32[1,S,768] and an additive attention mask f32[1,1,1,S].
OUTDIR/bert_layer_output_0.pb: ONNX Runtime's output for the inputs ONNX's test runner feeds light
models (arange(n)/n per input), so `icc-conformance --models OUTDIR` checks icc against ONNX Runtime.
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

H, HEADS, FFN = 768, 12, 3072
D = H // HEADS


def build(seq):
    rng = np.random.default_rng(1234)
    inits, nodes = [], []

    def w(name, *shape, scale=0.02):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def c(name, value, dtype=np.float32):
        inits.append(numpy_helper.from_array(np.array(value, dtype=dtype), name))
        return name

    def node(op, ins, out, **attrs):
        nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    def linear(x, name, fin, fout):
        y = node("MatMul", [x, w(name + ".w", fin, fout)], name + ".mm")
        return node("Add", [y, w(name + ".b", fout)], name + ".out")

    def layernorm(x, name):
        mean = node("ReduceMean", [x, c(name + ".axes", [-1], np.int64)], name + ".mean")
        xc = node("Sub", [x, mean], name + ".xc")
        var = node("ReduceMean", [node("Pow", [xc, c(name + ".two", 2.0)], name + ".sq"),
                                  name + ".axes"], name + ".var")
        std = node("Sqrt", [node("Add", [var, c(name + ".eps", 1e-12)], name + ".ve")], name + ".std")
        y = node("Div", [xc, std], name + ".norm")
        y = node("Mul", [y, w(name + ".gamma", H, scale=0.1)], name + ".scaled")
        return node("Add", [y, w(name + ".beta", H)], name + ".out")

    def heads(x, name):  # [1,S,768] -> [1,12,S,64]
        r = node("Reshape", [x, c(name + ".shape", [1, seq, HEADS, D], np.int64)], name + ".r")
        return node("Transpose", [r], name + ".t", perm=[0, 2, 1, 3])

    x, mask = "hidden", "mask"
    q = heads(linear(x, "q", H, H), "qh")
    k = heads(linear(x, "k", H, H), "kh")
    v = heads(linear(x, "v", H, H), "vh")
    kt = node("Transpose", [k], "kt", perm=[0, 1, 3, 2])
    s = node("Div", [node("MatMul", [q, kt], "scores"), c("sqrt_d", float(np.sqrt(D)))], "scaled")
    p = node("Softmax", [node("Add", [s, mask], "masked")], "probs", axis=-1)
    ctx = node("Transpose", [node("MatMul", [p, v], "ctx")], "ctx.t", perm=[0, 2, 1, 3])
    ctx = node("Reshape", [ctx, c("ctx.shape", [1, seq, H], np.int64)], "ctx.r")
    a = layernorm(node("Add", [linear(ctx, "o", H, H), x], "res1"), "ln1")
    h = linear(a, "ffn1", H, FFN)
    # GELU, erf form: 0.5 * h * (1 + erf(h / sqrt(2)))
    e = node("Erf", [node("Div", [h, c("sqrt2", float(np.sqrt(2.0)))], "g.div")], "g.erf")
    g = node("Mul", [node("Mul", [h, node("Add", [e, c("one", 1.0)], "g.add")], "g.mul"),
                     c("half", 0.5)], "gelu")
    out = layernorm(node("Add", [linear(g, "ffn2", FFN, H), a], "res2"), "ln2")
    nodes[-1].output[0] = "output"
    graph = helper.make_graph(
        nodes, "bert_layer",
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, [1, seq, H]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, 1, 1, seq])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, seq, H])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                              producer_name="icc tests/models/make_bert_layer.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--seq", type=int, default=128)
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    model = build(args.seq)
    path = os.path.join(args.outdir, "bert_layer.onnx")
    onnx.save(model, path)
    import onnxruntime as ort
    feeds = {}
    for i in model.graph.input:
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        n = int(np.prod(shape))
        feeds[i.name] = (np.arange(n).reshape(shape) / n).astype(np.float32)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    y = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    with open(os.path.join(args.outdir, "bert_layer_output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(y).SerializeToString())
    print(f"wrote {path} ({len(model.graph.node)} nodes) and its expected output")


if __name__ == "__main__":
    main()
