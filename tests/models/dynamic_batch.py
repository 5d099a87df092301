#!/usr/bin/env python3
"""Symbolic batch through compiled code, against ONNX Runtime.

A small CNN (Conv, BatchNormalization, Relu, MaxPool, Conv with stride 2,
GlobalAveragePool, Flatten, Gemm, Softmax) with its batch dim left symbolic is
compiled once, then run for batches 1, 2 and 5; each output must match ONNX
Runtime (rtol 1e-4, atol 1e-5). So must an MLP whose rows are the batch
(Gemm, Gemm transB, MatMul) at batches 0 to 64. A model whose Reshape fixes the batch to 1
must refuse a batch of 2 with a message naming the node. The batch split along
dim 0 (opset 18): in two at any batch, in four where 4 divides it (a batch of 6
refused naming the Split; ONNX Runtime there gives a smaller last chunk).
Batched MatMuls over a symbolic batch B and length T ([B, T, 24] x [24, 50],
then [B, T, 50] x [B, 50, T]: per item of B, on the GEMM tile) at batches
1 to 3 and lengths 1 to 40.

    python3 tests/models/dynamic_batch.py build/icc
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as P, helper as h, numpy_helper as nh

ort.set_default_logger_severity(3)


def cnn(path):
    r = np.random.default_rng(0)
    w = lambda name, *shape: nh.from_array((r.standard_normal(shape) * 0.2).astype(np.float32), name)
    inits = [w("w1", 8, 3, 3, 3), w("b1", 8), w("s", 8), w("bb", 8), w("m", 8),
             nh.from_array((r.random(8) + 0.5).astype(np.float32), "v"),
             w("w2", 16, 8, 3, 3), w("fc", 16, 10), w("fcb", 10)]
    nodes = [
        h.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        h.make_node("BatchNormalization", ["c1", "s", "bb", "m", "v"], ["n1"]),
        h.make_node("Relu", ["n1"], ["r1"]),
        h.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        h.make_node("Conv", ["p1", "w2"], ["c2"], strides=[2, 2], pads=[1, 1, 1, 1]),
        h.make_node("GlobalAveragePool", ["c2"], ["g"]),
        h.make_node("Flatten", ["g"], ["f"]),
        h.make_node("Gemm", ["f", "fc", "fcb"], ["z"]),
        h.make_node("Softmax", ["z"], ["y"], axis=1),
    ]
    g = h.make_graph(nodes, "cnn", [h.make_tensor_value_info("x", P.FLOAT, ["N", 3, 12, 12])],
                     [h.make_tensor_value_info("y", P.FLOAT, ["N", 10])], inits)
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)


def fixed(path):
    shape = nh.from_array(np.array([2, 2], np.int64), "shape")
    g = h.make_graph([h.make_node("Reshape", ["x", "shape"], ["y"], name="fix")], "fixed",
                     [h.make_tensor_value_info("x", P.FLOAT, ["N", 4])],
                     [h.make_tensor_value_info("y", P.FLOAT, [2, 2])], [shape])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)


def split(path, parts):
    outs = ["p%d" % i for i in range(parts)]
    g = h.make_graph([h.make_node("Split", ["x"], outs, "sp", axis=0, num_outputs=parts),
                      h.make_node("Neg", [outs[0]], ["y"])], "split",
                     [h.make_tensor_value_info("x", P.FLOAT, ["N", 5])],
                     [h.make_tensor_value_info(o, P.FLOAT, None) for o in ["y"] + outs[1:]])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 18)])
    m.ir_version = 8
    onnx.save(m, path)


def mlp(path):
    """Rows of a symbolic batch through the three contraction forms: Gemm
    (B as [K, N]), Gemm transB (as nn.Linear exports it, dot products along
    k), MatMul; N of 3 is narrower than a vector, 37 not a multiple of one."""
    r = np.random.default_rng(1)
    w = lambda name, *shape: nh.from_array((r.standard_normal(shape) * 0.1).astype(np.float32), name)
    inits = [w("w1", 70, 37), w("b1", 37), w("w2", 64, 37), w("b2", 64), w("w3", 64, 3)]
    nodes = [
        h.make_node("Gemm", ["x", "w1", "b1"], ["g1"]),
        h.make_node("Relu", ["g1"], ["r1"]),
        h.make_node("Gemm", ["r1", "w2", "b2"], ["g2"], transB=1),
        h.make_node("Tanh", ["g2"], ["t2"]),
        h.make_node("MatMul", ["t2", "w3"], ["y"]),
    ]
    g = h.make_graph(nodes, "mlp", [h.make_tensor_value_info("x", P.FLOAT, ["N", 70])],
                     [h.make_tensor_value_info("y", P.FLOAT, ["N", 3])], inits)
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)


def seq_matmul(path):
    r = np.random.default_rng(2)
    nodes = [h.make_node("MatMul", ["x", "w"], ["a"]),
             h.make_node("Transpose", ["a"], ["at"], perm=[0, 2, 1]),
             h.make_node("MatMul", ["a", "at"], ["y"])]
    g = h.make_graph(nodes, "seq", [h.make_tensor_value_info("x", P.FLOAT, ["B", "T", 24])],
                     [h.make_tensor_value_info("y", P.FLOAT, ["B", "T", "T"])],
                     [nh.from_array((r.standard_normal((24, 50)) * 0.2).astype(np.float32), "w")])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)


def main():
    icc = os.path.abspath(sys.argv[1])
    t = tempfile.mkdtemp()
    failed = 0
    cnn(t + "/cnn.onnx")
    subprocess.run([icc, t + "/cnn.onnx", "-o", t + "/cnn.so"], check=True)
    s = ort.InferenceSession(t + "/cnn.onnx", providers=["CPUExecutionProvider"])
    for n in (1, 2, 5):
        x = np.random.default_rng(n).standard_normal((n, 3, 12, 12)).astype(np.float32)
        np.save(t + "/x.npy", x)
        subprocess.run([icc, "run", t + "/cnn.so", "--input", "x=" + t + "/x.npy", "-o", t + "/out"], check=True)
        got, want = np.load(t + "/out/y.npy"), s.run(None, {"x": x})[0]
        ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-5)
        print("%s batch %d: max abs error %.3g" % ("ok  " if ok else "FAIL", n, np.abs(got - want).max()))
        failed += not ok
    mlp(t + "/mlp.onnx")
    s = ort.InferenceSession(t + "/mlp.onnx", providers=["CPUExecutionProvider"])
    for level in ("-O0", "-O3"):
        subprocess.run([icc, t + "/mlp.onnx", level, "-o", t + "/mlp.so"], check=True)
        for n in (0, 1, 3, 17, 64):
            x = np.random.default_rng(n).standard_normal((n, 70)).astype(np.float32)
            np.save(t + "/x.npy", x)
            subprocess.run([icc, "run", t + "/mlp.so", "--input", "x=" + t + "/x.npy", "-o", t + "/out"], check=True)
            got, want = np.load(t + "/out/y.npy"), s.run(None, {"x": x})[0]
            ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-5)
            print("%s MLP %s, batch %d: max abs error %.3g" % ("ok  " if ok else "FAIL", level, n,
                                                               np.abs(got - want).max() if n else 0))
            failed += not ok
    for parts, good, bad in ((2, (2, 4, 7), ()), (4, (4, 8), (6,))):
        path, so = "%s/split%d.onnx" % (t, parts), "%s/split%d.so" % (t, parts)
        split(path, parts)
        subprocess.run([icc, path, "-O3", "-o", so], check=True)
        s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        names = [o.name for o in s.get_outputs()]
        for n in good + bad:
            x = np.random.default_rng(n).standard_normal((n, 5)).astype(np.float32)
            np.save(t + "/x.npy", x)
            r = subprocess.run([icc, "run", so, "--input", "x=" + t + "/x.npy", "-o", t + "/out"],
                               capture_output=True, text=True)
            if n in bad:
                ok = r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and \
                    "node 'sp' (Split)" in r.stderr and "multiple of 4" in r.stderr
                print("%s split in %d, batch %d refused: %s" % ("ok  " if ok else "FAIL", parts, n, r.stderr.strip()))
            else:
                want = s.run(None, {"x": x})
                ok = r.returncode == 0 and all(np.allclose(np.load("%s/out/%s.npy" % (t, nm)), w)
                                               for nm, w in zip(names, want))
                print("%s split in %d, batch %d %s" % ("ok  " if ok else "FAIL", parts, n, r.stderr.strip()))
            failed += not ok
    seq_matmul(t + "/seq.onnx")
    s = ort.InferenceSession(t + "/seq.onnx", providers=["CPUExecutionProvider"])
    for level in ("-O2", "-O3"):
        subprocess.run([icc, t + "/seq.onnx", level, "-o", t + "/seq.so"], check=True)
        for n, tt in ((1, 40), (3, 7), (2, 1)):
            x = np.random.default_rng(n + tt).standard_normal((n, tt, 24)).astype(np.float32)
            np.save(t + "/x.npy", x)
            subprocess.run([icc, "run", t + "/seq.so", "--input", "x=" + t + "/x.npy", "-o", t + "/out"], check=True)
            got, want = np.load(t + "/out/y.npy"), s.run(None, {"x": x})[0]
            ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-5)
            print("%s batched MatMuls %s, B=%d T=%d: max abs error %.3g" % ("ok  " if ok else "FAIL", level, n, tt,
                                                                           np.abs(got - want).max()))
            failed += not ok
    fixed(t + "/fixed.onnx")
    subprocess.run([icc, t + "/fixed.onnx", "-o", t + "/fixed.so"], check=True)
    np.save(t + "/x2.npy", np.zeros((2, 4), np.float32))
    r = subprocess.run([icc, "run", t + "/fixed.so", "--input", "x=" + t + "/x2.npy"], capture_output=True, text=True)
    ok = r.returncode == 1 and "node 'fix' (Reshape)" in r.stderr and "element counts differ" in r.stderr
    print("%s a batch the model's Reshape cannot take is refused: %s" % ("ok  " if ok else "FAIL", r.stderr.strip()))
    failed += not ok
    print("dynamic batch: %s" % ("all passed" if not failed else "%d failed" % failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
