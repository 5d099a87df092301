#!/usr/bin/env python3
"""Compiled code refuses what the interpreter refuses.

For each op whose reference kernel rejects some run-time data (an index out
of range, a sequence length past the time axis, the arg of an empty axis),
a one-node model is compiled (`icc MODEL -o X.so`) and run both compiled
(`icc run X.so`) and interpreted (`icc run MODEL`) on good data and on bad
data. Good data: both succeed with equal outputs (and ONNX Runtime agrees).
Bad data: both exit 1 with one "icc: error:" line naming the node, and the
same reason; the compiled run must not return clamped values. Also edge
shapes that are valid (no input channels) compile and agree.

    python3 tests/models/refusals.py build/icc
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

ort.set_default_logger_severity(3)
F, I64 = TensorProto.FLOAT, TensorProto.INT64


def vi(name, dt, shape):
    return helper.make_tensor_value_info(name, dt, shape)


def model(node, inputs, out_dt=F):
    g = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", out_dt, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def model_y(node, inputs, yshape):
    """model() with y's shape declared: an output shape the axes do not fix alone"""
    g = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", F, yshape)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


X = np.arange(20, dtype=np.float32).reshape(4, 5)
# (name, model, feeds that are valid, feeds that the reference rejects, reason in both messages)
CASES = [
    ("gather", model(helper.make_node("Gather", ["x", "i"], ["y"], axis=0, name="n"),
                     [vi("x", F, [4, 5]), vi("i", I64, [3])]),
     {"x": X, "i": np.array([0, -1, 3])}, {"x": X, "i": np.array([0, 4, 1])}, "out of range for a dim of 4"),
    ("gather_axis1", model(helper.make_node("Gather", ["x", "i"], ["y"], axis=1, name="n"),
                           [vi("x", F, [4, 5]), vi("i", I64, [2])]),
     {"x": X, "i": np.array([4, -5])}, {"x": X, "i": np.array([-6, 0])}, "out of range for a dim of 5"),
    ("gather_elements", model(helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1, name="n"),
                              [vi("x", F, [4, 5]), vi("i", I64, [4, 2])]),
     {"x": X, "i": np.array([[0, 4]] * 4)}, {"x": X, "i": np.array([[0, 1], [2, 3], [4, 5], [0, 0]])},
     "out of range for a dim of 5"),
    ("gather_nd", model(helper.make_node("GatherND", ["x", "i"], ["y"], name="n"),
                        [vi("x", F, [4, 5]), vi("i", I64, [2, 2])]),
     {"x": X, "i": np.array([[3, 4], [0, 0]])}, {"x": X, "i": np.array([[3, 4], [4, 0]])},
     "out of range for a dim of 4"),
    ("scatter_elements", model(helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=0, name="n"),
                               [vi("x", F, [4, 5]), vi("i", I64, [1, 5]), vi("u", F, [1, 5])]),
     {"x": X, "i": np.array([[0, 1, 2, 3, -1]]), "u": np.ones((1, 5), np.float32)},
     {"x": X, "i": np.array([[0, 1, 9, 3, 0]]), "u": np.ones((1, 5), np.float32)}, "out of range for a dim of 4"),
    ("scatter_nd", model(helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="n"),
                         [vi("x", F, [4, 5]), vi("i", I64, [2, 1]), vi("u", F, [2, 5])]),
     {"x": X, "i": np.array([[1], [3]]), "u": np.ones((2, 5), np.float32)},
     {"x": X, "i": np.array([[1], [-5]]), "u": np.ones((2, 5), np.float32)}, "out of range for a dim of 4"),
    ("reverse_sequence", model(helper.make_node("ReverseSequence", ["x", "l"], ["y"], time_axis=0, batch_axis=1,
                                                name="n"), [vi("x", F, [4, 5]), vi("l", I64, [5])]),
     {"x": X, "l": np.array([1, 2, 3, 4, 0])}, {"x": X, "l": np.array([1, 2, 5, 4, 0])}, "out of range [0, 4]"),
    # axes given at run time (docs/codegen.md): the compiled kernel checks them
    ("reduce_sum_axes_range", model_y(helper.make_node("ReduceSum", ["x", "a"], ["y"], keepdims=1, name="n"),
                                      [vi("x", F, [4, 5]), vi("a", I64, [1])], [4, 1]),
     {"x": X, "a": np.array([-1])}, {"x": X, "a": np.array([2])}, "is out of range for rank 2"),
    ("reduce_max_axes_twice", model_y(helper.make_node("ReduceMax", ["x", "a"], ["y"], keepdims=1, name="n"),
                                      [vi("x", F, [4, 1, 5]), vi("a", I64, [2])], [4, 1, 1]),
     {"x": X.reshape(4, 1, 5), "a": np.array([2, 1])}, {"x": X.reshape(4, 1, 5), "a": np.array([1, -2])},
     "is listed twice"),
    ("reduce_mean_axes_either", model_y(helper.make_node("ReduceMean", ["x", "a"], ["y"], keepdims=0, name="n"),
                                        [vi("x", F, [4, 4]), vi("a", I64, [1])], [4]),
     {"x": X[:, :4], "a": np.array([0])}, {"x": X[:, :4], "a": np.array([-3])}, "is out of range for rank 2"),
    ("cumsum_axis_range", model(helper.make_node("CumSum", ["x", "a"], ["y"], name="n"),
                                [vi("x", F, [4, 5]), vi("a", I64, [])]),
     {"x": X, "a": np.array(1)}, {"x": X, "a": np.array(-3)}, "is out of range for rank 2"),
    # static shapes: no data is valid (the run always fails, in both)
    ("argmin_empty", model(helper.make_node("ArgMin", ["x"], ["y"], axis=1, name="n"), [vi("x", F, [3, 0])],
                           out_dt=I64),
     None, {"x": np.zeros((3, 0), np.float32)}, "cannot take the argmin of an empty axis"),
]


# Valid data of edge shapes that once crashed the compiler (a Conv with no
# input channels: a division by the channel count): compiled at -O0 and -O3,
# equal to the interpreter and to the result the spec gives (an empty sum:
# the bias, or zeros; ONNX Runtime 1.32 returns uninitialized memory for the
# ConvInteger case, so numpy is the oracle). (name, model, feeds, expected)
U8, I32 = TensorProto.UINT8, TensorProto.INT32
EDGES = [
    ("conv_no_channels", helper.make_model(helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="n")], "g", [vi("x", F, [1, 0, 5, 5])],
        [vi("y", F, None)], [helper.make_tensor("w", F, [4, 0, 3, 3], []),
                             helper.make_tensor("b", F, [4], [1.0, 2.0, 3.0, 4.0])]),
        opset_imports=[helper.make_opsetid("", 17)]), {"x": np.zeros((1, 0, 5, 5), np.float32)},
     np.broadcast_to(np.arange(1, 5, dtype=np.float32).reshape(1, 4, 1, 1), (1, 4, 3, 3))),
    ("conv_transpose_no_channels", helper.make_model(helper.make_graph(
        [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], name="n")], "g", [vi("x", F, [1, 0, 3, 3])],
        [vi("y", F, None)], [helper.make_tensor("w", F, [0, 4, 3, 3], []),
                             helper.make_tensor("b", F, [4], [1.0, 2.0, 3.0, 4.0])]),
        opset_imports=[helper.make_opsetid("", 17)]), {"x": np.zeros((1, 0, 3, 3), np.float32)},
     np.broadcast_to(np.arange(1, 5, dtype=np.float32).reshape(1, 4, 1, 1), (1, 4, 5, 5))),
    ("conv_integer_no_channels", helper.make_model(helper.make_graph(
        [helper.make_node("ConvInteger", ["x", "w"], ["y"], name="n")], "g", [vi("x", U8, [1, 0, 5, 5])],
        [vi("y", I32, None)], [helper.make_tensor("w", TensorProto.INT8, [4, 0, 3, 3], [])]),
        opset_imports=[helper.make_opsetid("", 17)]), {"x": np.zeros((1, 0, 5, 5), np.uint8)},
     np.zeros((1, 4, 3, 3), np.int32)),
]


def run(icc, target, feeds, tmp, tag):
    args = []
    for k, v in feeds.items():
        f = os.path.join(tmp, "%s_%s.npy" % (tag, k))
        np.save(f, v)
        args += ["--input", "%s=%s" % (k, f)]
    out = os.path.join(tmp, tag + "_out")
    r = subprocess.run([icc, "run", target, *args, "-o", out], capture_output=True, text=True, timeout=60)
    y = np.load(os.path.join(out, "y.npy")) if r.returncode == 0 else None
    return r, y


def main():
    icc = os.path.abspath(sys.argv[1])
    tmp = tempfile.mkdtemp()
    failed = 0
    for name, m, good, bad, reason in CASES:
        path = os.path.join(tmp, name + ".onnx")
        onnx.save(m, path)
        so = os.path.join(tmp, name + ".so")
        c = subprocess.run([icc, path, "-o", so], capture_output=True, text=True)
        problems = []
        if c.returncode:
            problems.append("compile: " + c.stderr.strip())
        elif good is not None:
            rc, yc = run(icc, so, good, tmp, name + "_gc")
            ri, yi = run(icc, path, good, tmp, name + "_gi")
            want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, good)[0]
            if rc.returncode or ri.returncode:
                problems.append("good data refused: %s %s" % (rc.stderr.strip(), ri.stderr.strip()))
            elif not (np.array_equal(yc, yi) and np.array_equal(yc, want)):
                problems.append("good data: compiled %s, interpreter %s, ORT %s" % (yc.ravel()[:6], yi.ravel()[:6],
                                                                                    want.ravel()[:6]))
        if not c.returncode:
            for target, tag in ((so, "compiled"), (path, "interpreter")):
                r, y = run(icc, target, bad, tmp, name + "_b" + tag[0])
                lines = r.stderr.strip().splitlines()
                ok = (r.returncode == 1 and len(lines) == 1 and lines[0].startswith("icc: error: ") and
                      "node 'n'" in lines[0] and reason in lines[0])
                if not ok:
                    problems.append("bad data, %s: exit %d, %r" % (tag, r.returncode, r.stderr.strip()[:300]))
        print("%s %s%s" % ("ok  " if not problems else "FAIL", name, "" if not problems else ": " + "; ".join(problems)))
        failed += bool(problems)
    for name, m, feeds, want in EDGES:
        path = os.path.join(tmp, name + ".onnx")
        onnx.save(m, path)
        problems = []
        ri, yi = run(icc, path, feeds, tmp, name + "_i")
        for level in ("-O0", "-O3"):
            so = os.path.join(tmp, "%s%s.so" % (name, level))
            c = subprocess.run([icc, path, level, "-o", so], capture_output=True, text=True)
            if c.returncode:
                problems.append("compile %s: exit %d %s" % (level, c.returncode, c.stderr.strip()[:200]))
                continue
            rc, yc = run(icc, so, feeds, tmp, name + level)
            if rc.returncode or ri.returncode or not np.array_equal(yc, yi) or not np.array_equal(yi, want):
                show = lambda a: None if a is None else "%s%s %s" % (a.dtype, list(a.shape), a.ravel()[:6])
                problems.append("%s: compiled (exit %d) %s, interpreter (exit %d) %s, ORT %s" % (
                    level, rc.returncode, show(yc), ri.returncode, show(yi), show(want)))
        print("%s %s%s" % ("ok  " if not problems else "FAIL", name, "" if not problems else ": " + "; ".join(problems)))
        failed += bool(problems)
    print("%d passed, %d failed" % (len(CASES) + len(EDGES) - failed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
