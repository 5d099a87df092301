"""INT8 end to end: accuracy of --precision=int8 (calibrated) and int8-dynamic against fp32, and the
interpreter against the compiled code on the rewritten graph.

    python3 tests/models/int8_accuracy.py build/icc [--seq 32] [--keep DIR]

Models: a small ResNet-style CNN (written here) and a BERT-shaped encoder layer
(tests/models/make_bert_layer.py). Calibration sets DIR/0..7/NAME.npy and the test input come from
the same distribution (independent seeds). For each model and mode:
  - the compiled int8 model's output has cosine >= 0.99 against ONNX Runtime's fp32 output;
  - the rewritten graph (`--emit=ir` at -O0: the precision pass's output) run by the interpreter
    and compiled agree: the first contractions (quantizing a graph input) to 1e-5, the model
    output to 2e-3 (a later quantizer's float input may differ by an ulp and move one level);
  - the rewrite did happen (the IR holds MatMulInteger / ConvInteger).
Exits 1 on any failure.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def small_cnn():
    """Conv-Relu x2 (one strided), a residual block, GlobalAveragePool, Gemm: input [1,3,32,32]."""
    rng = np.random.default_rng(7)
    inits, nodes = [], []

    def w(name, *shape, scale=None):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        s = scale if scale is not None else np.sqrt(2.0 / fan_in)
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * s).astype(np.float32), name))
        return name

    def node(op, ins, out, **attrs):
        nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    def conv(x, name, cin, cout, k=3, stride=1):
        return node("Conv", [x, w(name + ".w", cout, cin, k, k), w(name + ".b", cout, scale=0.1)], name,
                    kernel_shape=[k, k], pads=[k // 2] * 4, strides=[stride, stride])

    x = node("Relu", [conv("input", "c1", 3, 16)], "r1")
    x = node("Relu", [conv(x, "c2", 16, 32, stride=2)], "r2")
    y = node("Relu", [conv(x, "c3", 32, 32)], "r3")
    y = conv(y, "c4", 32, 32)
    x = node("Relu", [node("Add", [x, y], "res")], "r4")
    x = node("Relu", [conv(x, "c5", 32, 64, k=1)], "r5")
    x = node("Flatten", [node("GlobalAveragePool", [x], "gap")], "flat")
    node("Gemm", [x, w("fc.w", 10, 64, scale=0.2), w("fc.b", 10, scale=0.1)], "logits", transB=1)
    graph = helper.make_graph(nodes, "small_cnn",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 32, 32])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def cnn_inputs(rng):
    return {"input": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)}


def bert_inputs(seq):
    def make(rng):
        return {"hidden": rng.standard_normal((1, seq, 768)).astype(np.float32),
                "mask": np.zeros((1, 1, 1, seq), np.float32)}
    return make


def write_set(d, feeds):
    os.makedirs(d, exist_ok=True)
    for k, v in feeds.items():
        np.save(os.path.join(d, k + ".npy"), v)


def cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("icc")
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--keep", help="write the files here (kept) instead of a temporary folder")
    ap.add_argument("--only", help="cnn or bert")
    args = ap.parse_args()
    icc = os.path.abspath(args.icc)
    tmp = args.keep or tempfile.mkdtemp(prefix="icc-int8-")
    os.makedirs(tmp, exist_ok=True)
    fails = 0

    models = []
    if args.only in (None, "cnn"):
        onnx.save(small_cnn(), os.path.join(tmp, "cnn.onnx"))
        models.append(("cnn", os.path.join(tmp, "cnn.onnx"), cnn_inputs, "ConvInteger"))
    if args.only in (None, "bert"):
        subprocess.run([sys.executable, os.path.join(HERE, "make_bert_layer.py"), tmp, "--seq", str(args.seq)],
                       check=True, capture_output=True)
        models.append(("bert", os.path.join(tmp, "bert_layer.onnx"), bert_inputs(args.seq), "MatMulInteger"))

    first_outputs = {"cnn": ["c1"], "bert": ["q.out", "k.out", "v.out"]}
    modes = [("int8-minmax", ["--precision=int8", "--calibrate-method=minmax"]),
             ("int8-percentile", ["--precision=int8", "--calibrate-method=percentile=99.99"]),
             ("int8-entropy", ["--precision=int8", "--calibrate-method=entropy"]),
             ("int8-i8", ["--precision=int8", "--int8-activations=i8"]),
             ("int8-dynamic", ["--precision=int8-dynamic"])]

    for name, path, make_inputs, int_op in models:
        mdir = os.path.join(tmp, name)
        calib = os.path.join(mdir, "calib")
        rng = np.random.default_rng(100)
        for s in range(8):
            write_set(os.path.join(calib, str(s)), make_inputs(rng))
        feeds = make_inputs(np.random.default_rng(999))
        write_set(os.path.join(mdir, "test"), feeds)
        in_args = ["--input=%s=%s" % (k, os.path.join(mdir, "test", k + ".npy")) for k in feeds]
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        ref = sess.run(None, feeds)[0]
        out_name = sess.get_outputs()[0].name
        for mode, flags in modes:
            if mode != "int8-dynamic":
                flags = flags + ["--calibrate=" + calib]
            if name == "cnn" and mode == "int8-dynamic":
                flags = flags + ["--keep-fp32=Gemm"]  # Conv stays fp32 in dynamic mode: nothing to compare
                continue
            so = os.path.join(mdir, mode + ".so")
            ir = os.path.join(mdir, mode + ".icc")
            rc, out = run([icc, path, *flags, "-o", so])
            if rc:
                print("FAIL %s %s: compile: %s" % (name, mode, out.strip()))
                fails += 1
                continue
            od = os.path.join(mdir, mode + ".out")
            rc, out = run([icc, "run", so, *in_args, "-o", od])
            if rc:
                print("FAIL %s %s: run: %s" % (name, mode, out.strip()))
                fails += 1
                continue
            y = np.load(os.path.join(od, out_name + ".npy"))
            cos = cosine(y, ref)
            ok = cos >= 0.99
            fails += not ok
            print("%s %s %s: cosine %.5f vs fp32 (ONNX Runtime), max abs err %.4g" %
                  ("ok  " if ok else "FAIL", name, mode, cos, float(np.abs(y - ref).max())))
            # the rewritten graph, interpreter vs compiled
            rc, out = run([icc, path, *flags, "--emit=ir", "-O0", "-o", ir])
            text = open(ir).read() if rc == 0 else ""
            if rc or int_op not in text:
                print("FAIL %s %s: --emit=ir: %s" % (name, mode, out.strip() or "no " + int_op))
                fails += 1
                continue
            # The first contractions quantize a graph input, which both sides read identically: their
            # results must agree to the float epilogue's rounding. Later quantizers read float values
            # the compiled kernels and the interpreter compute to within an ulp or so, which can move
            # a value across a rounding boundary (one quantization level), hence the model output's
            # looser tolerance.
            firsts = first_outputs[name]
            text = text.replace("-> (%%%s)" % out_name, "-> (%s)" % ", ".join("%" + v for v in [out_name] + firsts), 1)
            ir2 = os.path.join(mdir, mode + ".first.icc")
            open(ir2, "w").write(text)
            so2 = os.path.join(mdir, mode + ".first.so")
            ri, oi = run([icc, "run", ir2, *in_args, "-o", os.path.join(mdir, mode + ".interp")])
            rc2, oc = run([icc, ir2, "-o", so2])
            if not (ri or rc2):
                rc2, oc = run([icc, "run", so2, *in_args, "-o", os.path.join(mdir, mode + ".compiled")])
            if ri or rc2:
                print("FAIL %s %s: interpreter/compiled run of the rewritten graph: %s" % (name, mode, (oi + oc).strip()))
                fails += 1
                continue
            worst, all_ok = [], True
            for v, tol in [(out_name, 2e-3)] + [(f, 1e-5) for f in firsts]:
                a = np.load(os.path.join(mdir, mode + ".interp", v.replace("/", "_") + ".npy"))
                b = np.load(os.path.join(mdir, mode + ".compiled", v.replace("/", "_") + ".npy"))
                err = float(np.max(np.abs(a - b) / (1 + np.abs(a))))
                worst.append("%s %.2g (tol %g)" % (v, err, tol))
                all_ok &= err <= tol
            fails += not all_ok
            print("%s %s %s: interpreter vs compiled on the rewritten graph, max |a-b|/(1+|a|): %s" %
                  ("ok  " if all_ok else "FAIL", name, mode, ", ".join(worst)))
    print("%d failed" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
