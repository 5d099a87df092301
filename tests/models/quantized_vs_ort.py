#!/usr/bin/env python3
"""Quantized models from onnxruntime.quantization, compiled by icc, against
ONNX Runtime on the same quantized model.

Two float models are built with onnx.helper: a small CNN (Conv+Relu twice,
MaxPool, GlobalAveragePool, Flatten, Gemm) and a transformer-style block
(Q/K/V projections, Q K^T, Softmax, P V, output projection, residual Add,
MatMul+Relu+MatMul feed-forward). Each is quantized three ways:

  qdq      quantize_static, QDQ format (QuantizeLinear/DequantizeLinear around
           the float ops; icc's qdq pass runs the contractions as integer ones),
           with a CalibrationDataReader over a few random inputs
  qop      quantize_static, QOperator format (QLinearConv, QLinearMatMul...),
           the same calibration
  dynamic  quantize_dynamic (DynamicQuantizeLinear + MatMulInteger/ConvInteger)

and each quantized model is compiled (`icc MODEL -O2 -o X.so`, or the level
given), run (`icc run
X.so`) and compared with ONNX Runtime on the same input: max abs error and
cosine similarity of each output, cosine >= 0.999 required (integer outputs:
at most 1 apart); at -O2/-O3 the QDQ models must have no float Conv, MatMul or
Gemm left (qdq made them integer contractions). A model icc cannot load is a failure, not a skip. The
latency of icc (examples/runner/icc_runner, p50) next to ONNX Runtime's (p50,
1 thread) is printed, not asserted. Exits 1 on any failure.

    python3 tests/models/quantized_vs_ort.py build/icc [-O0..-O3] [FILTER ...]
"""
import logging
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as P, helper as h, numpy_helper as nh
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic,
                                      quantize_static)

ort.set_default_logger_severity(3)
logging.getLogger().setLevel(logging.ERROR)  # quantize_static's "consider pre-processing" advice
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COSINE_MIN = 0.999
RUNS = 20


def cnn(path):
    r = np.random.default_rng(0)
    w = lambda name, *shape: nh.from_array((r.standard_normal(shape) * 0.3).astype(np.float32), name)
    inits = [w("w1", 8, 3, 3, 3), w("b1", 8), w("w2", 16, 8, 3, 3), w("b2", 16), w("fc", 16, 10), w("fcb", 10)]
    nodes = [
        h.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        h.make_node("Relu", ["c1"], ["r1"]),
        h.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        h.make_node("Conv", ["p1", "w2", "b2"], ["c2"], strides=[2, 2], pads=[1, 1, 1, 1]),
        h.make_node("Relu", ["c2"], ["r2"]),
        h.make_node("GlobalAveragePool", ["r2"], ["g"]),
        h.make_node("Flatten", ["g"], ["f"]),
        h.make_node("Gemm", ["f", "fc", "fcb"], ["y"]),
    ]
    g = h.make_graph(nodes, "cnn", [h.make_tensor_value_info("x", P.FLOAT, [1, 3, 32, 32])],
                     [h.make_tensor_value_info("y", P.FLOAT, [1, 10])], inits)
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)
    return {"x": (1, 3, 32, 32)}


def transformer(path, s=32, d=64, ff=128):
    r = np.random.default_rng(1)
    w = lambda name, *shape: nh.from_array((r.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32), name)
    inits = [w("wq", d, d), w("wk", d, d), w("wv", d, d), w("wo", d, d), w("w1", d, ff), w("w2", ff, d),
             nh.from_array((r.standard_normal(ff) * 0.1).astype(np.float32), "b1"),
             nh.from_array(np.array(1 / np.sqrt(d), np.float32), "scale")]
    nodes = [
        h.make_node("MatMul", ["x", "wq"], ["q"]),
        h.make_node("MatMul", ["x", "wk"], ["k"]),
        h.make_node("MatMul", ["x", "wv"], ["v"]),
        h.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        h.make_node("MatMul", ["q", "kt"], ["qk"]),
        h.make_node("Mul", ["qk", "scale"], ["qks"]),
        h.make_node("Softmax", ["qks"], ["p"], axis=-1),
        h.make_node("MatMul", ["p", "v"], ["a"]),
        h.make_node("MatMul", ["a", "wo"], ["o"]),
        h.make_node("Add", ["o", "x"], ["res"]),
        h.make_node("MatMul", ["res", "w1"], ["f1"]),
        h.make_node("Add", ["f1", "b1"], ["f1b"]),
        h.make_node("Relu", ["f1b"], ["f1r"]),
        h.make_node("MatMul", ["f1r", "w2"], ["f2"]),
        h.make_node("Add", ["f2", "res"], ["y"]),
    ]
    g = h.make_graph(nodes, "block", [h.make_tensor_value_info("x", P.FLOAT, [1, s, d])],
                     [h.make_tensor_value_info("y", P.FLOAT, [1, s, d])], inits)
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)
    return {"x": (1, s, d)}


class Reader(CalibrationDataReader):
    """A few random inputs (seeded) for calibration."""

    def __init__(self, shapes, n=8):
        r = np.random.default_rng(7)
        self.data = iter([{k: r.standard_normal(s).astype(np.float32) for k, s in shapes.items()} for _ in range(n)])

    def get_next(self):
        return next(self.data, None)


def quantized(tmp, name, build):
    """(variant name, path) of each quantized form of the model `build` makes."""
    fp = os.path.join(tmp, name + ".onnx")
    shapes = build(fp)
    out = []
    for variant, fmt in (("qdq", QuantFormat.QDQ), ("qop", QuantFormat.QOperator)):
        qp = os.path.join(tmp, "%s_%s.onnx" % (name, variant))
        # QOperator: only the ops with ONNX-domain QLinear forms (the others
        # become com.microsoft ops such as QGemm and QLinearAdd)
        kinds = None if variant == "qdq" else ["Conv", "MatMul"]
        quantize_static(fp, qp, Reader(shapes), quant_format=fmt, activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8, per_channel=(variant == "qdq"), op_types_to_quantize=kinds)
        out.append((variant, qp))
    qp = os.path.join(tmp, name + "_dynamic.onnx")
    quantize_dynamic(fp, qp, weight_type=QuantType.QUInt8)
    out.append(("dynamic", qp))
    return shapes, out


def ops_of(path):
    m = onnx.load(path)
    return sorted({n.op_type for n in m.graph.node})


def ort_p50(path, feeds):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    s.run(None, feeds)
    ts = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        s.run(None, feeds)
        ts.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(ts))


def compare(got, want):
    """(ok, max abs error, cosine) of one output."""
    if got.shape != want.shape:
        return False, float("inf"), 0.0
    g, w = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
    err = float(np.abs(g - w).max()) if g.size else 0.0
    den = np.linalg.norm(g) * np.linalg.norm(w)
    cos = float(g @ w / den) if den > 0 else (1.0 if err == 0 else 0.0)
    if np.issubdtype(want.dtype, np.integer):
        return err <= 1, err, cos
    return cos >= COSINE_MIN, err, cos


def main():
    icc = os.path.abspath(sys.argv[1])
    levels = [a for a in sys.argv[2:] if a.startswith("-O")]
    level = levels[-1] if levels else "-O2"
    filters = [a for a in sys.argv[2:] if not a.startswith("-O")]
    tmp = tempfile.mkdtemp()
    runner = os.path.join(tmp, "icc_runner")
    build = os.path.dirname(icc)
    rr = subprocess.run(["cc", "-O2", "-I" + os.path.join(ROOT, "include"), os.path.join(ROOT, "examples/runner/icc_runner.c"),
                         os.path.join(build, "libiccrt.a"), "-lpthread", "-ldl", "-lm", "-o", runner],
                        capture_output=True, text=True)
    if rr.returncode:
        runner = None
    failed = 0
    print("| model | ops | max abs err | cosine | icc (ms) | ORT (ms) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, build_fn in (("cnn", cnn), ("transformer", transformer)):
        shapes, variants = quantized(tmp, name, build_fn)
        feeds = {k: np.random.default_rng(3).standard_normal(s).astype(np.float32) for k, s in shapes.items()}
        for variant, path in variants:
            label = "%s_%s" % (name, variant)
            if filters and not any(f in label for f in filters):
                continue
            so = os.path.join(tmp, label + ".so")
            r = subprocess.run([icc, path, level, "-o", so], capture_output=True, text=True)
            args = []
            for k, v in feeds.items():
                f = os.path.join(tmp, "%s_%s.npy" % (label, k))
                np.save(f, v)
                args += ["--input", "%s=%s" % (k, f)]
            outdir = os.path.join(tmp, label)
            if r.returncode == 0:
                r = subprocess.run([icc, "run", so, *args, "-o", outdir], capture_output=True, text=True)
            if r.returncode:
                print("| %s | FAIL: %s |" % (label, r.stderr.strip()[:300]))
                failed += 1
                continue
            if variant == "qdq" and level in ("-O2", "-O3"):
                # every contraction of the quantized models runs on integers
                ir = subprocess.run([icc, path, level, "--emit=ir"], capture_output=True, text=True).stdout
                left = sorted(set(re.findall(r"= (Conv|MatMul|Gemm)\(", ir)))
                if left or not re.search(r"= (ConvInteger|MatMulInteger)\(", ir):
                    print("| %s | FAIL: float contractions left after qdq/lower-quant: %s |" % (label, left))
                    failed += 1
                    continue
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            want = sess.run(None, feeds)
            ok, errs, coss = True, [], []
            for o, wv in zip(sess.get_outputs(), want):
                safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in o.name)
                got = np.load(os.path.join(outdir, safe + ".npy"))
                good, err, cos = compare(got, wv)
                ok &= good
                errs.append(err)
                coss.append(cos)
            icc_ms = float("nan")
            if runner:
                out = subprocess.run([runner, so, "--runs=%d" % RUNS], capture_output=True, text=True,
                                     env=dict(os.environ, ICC_NUM_THREADS="1"))
                m = re.search(r"p50 ([0-9.]+) ms", out.stdout)
                icc_ms = float(m.group(1)) if m else float("nan")
            ort_ms = ort_p50(path, feeds)
            print("| %s%s | %s | %.3g | %.6f | %.3f | %.3f |" % (
                label, "" if ok else " FAIL", ",".join(ops_of(path)), max(errs), min(coss), icc_ms, ort_ms))
            sys.stdout.flush()
            failed += not ok
    if failed:
        print("%d quantized models failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
