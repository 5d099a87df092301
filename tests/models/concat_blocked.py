#!/usr/bin/env python3
"""Channel Concats of blocked parts that are not whole blocks (ConcatNCHWc:
passes/layout.c move_concat, codegen/lower/movement.c, ir/ref/movement.c),
against ONNX Runtime.

Each case: parts made by convs of channel counts no multiple of 8 (28, 36,
44, 52: padded to whole blocks of 8 or 16 lanes, so a later part starts
mid-block), concatenated along the channels, then read by a padded 3x3
conv (fuse's pad-out: the Concat stores into the padded buffer) or a Relu
(the graph output, through the reorder back), sometimes with a part read
twice or a 2-part Concat whose first part is whole blocks. Static and
symbolic H x W. Each model is compiled at -O3 (and for -march=x86-64-v3,
8-lane blocks), its optimized IR must hold the ConcatNCHWc, and the
compiled outputs and the interpreter's run of that optimized IR (icc run
on the --emit=ir text: the reference ConcatNCHWc) must match ONNX Runtime.

    python3 tests/models/concat_blocked.py build/icc
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
ICC = sys.argv[1] if len(sys.argv) > 1 else "build/icc"
TMP = tempfile.mkdtemp(prefix="icc_concat_blocked_")
fails = 0


def report(ok, what):
    global fails
    print(("ok   " if ok else "FAIL ") + what)
    fails += not ok


def build(path, rng, cin, parts, tail, hw, sym):
    inits, nodes, names = [], [], []
    for i, c in enumerate(parts):
        k = 3 if i % 2 else 1
        inits.append(nh.from_array((rng.standard_normal((c, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float32),
                                   "w%d" % i))
        inits.append(nh.from_array(rng.standard_normal(c).astype(np.float32), "b%d" % i))
        nodes.append(h.make_node("Conv", ["x", "w%d" % i, "b%d" % i], ["c%d" % i], pads=[k // 2] * 4))
        nodes.append(h.make_node("Relu", ["c%d" % i], ["p%d" % i]))
        names.append("p%d" % i)
    nodes.append(h.make_node("Concat", names, ["cat"], axis=1))
    total = sum(parts)
    outs = []
    if tail == "conv":
        inits.append(nh.from_array((rng.standard_normal((32, total, 3, 3)) / np.sqrt(total * 9)).astype(np.float32),
                                   "wt"))
        nodes.append(h.make_node("Conv", ["cat", "wt"], ["y"], pads=[1, 1, 1, 1]))
    else:
        nodes.append(h.make_node("Relu", ["cat"], ["y"]))
    outs.append(h.make_tensor_value_info("y", P.FLOAT, None))
    if tail == "conv" and len(parts) > 2:
        # a part read twice: by the Concat and, blocked, by a pool
        nodes.append(h.make_node("MaxPool", ["p1"], ["z"], kernel_shape=[2, 2], strides=[2, 2]))
        outs.append(h.make_tensor_value_info("z", P.FLOAT, None))
    dims = [1, cin, "H", "W"] if sym else [1, cin, hw[0], hw[1]]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", P.FLOAT, dims)], outs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def run_icc(args, what):
    r = subprocess.run([ICC] + args, capture_output=True, text=True)
    if r.returncode:
        report(False, "%s: %s" % (what, (r.stderr or r.stdout).strip()[:300]))
    return r


def main():
    rng = np.random.default_rng(7)
    cases = [
        ("two parts 28 + 36 -> padded conv", 16, [28, 36], "conv", (9, 13), False),
        ("three parts 44 + 28 + 36 -> conv, a part also pooled", 32, [44, 28, 36], "conv", (8, 11), False),
        ("four parts 28 + 52 + 36 + 28 -> Relu output", 16, [28, 52, 36, 28], "relu", (7, 10), False),
        ("first part whole blocks 32 + 28 + 36 -> conv", 16, [32, 28, 36], "conv", (6, 6), False),
        ("symbolic H x W (an image: 1-channel blocks), 36 + 28 -> conv", 3, [36, 28], "conv", None, True),
    ]
    for name, cin, parts, tail, hw, sym in cases:
        path = os.path.join(TMP, "m.onnx")
        build(path, rng, cin, parts, tail, hw, sym)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        sizes = [(9, 13), (5, 17)] if sym else [hw]
        for march in ([], ["-march=x86-64-v3"]):
            tag = "%s%s" % (name, " (x86-64-v3)" if march else "")
            ir = run_icc([path, "-O3", "--emit=ir"] + march + ["-o", os.path.join(TMP, "opt.icc")], tag + ": -O3 IR")
            if ir.returncode:
                continue
            text = open(os.path.join(TMP, "opt.icc")).read()
            report("= ConcatNCHWc(" in text, "%s: the Concat runs on the blocked parts (ConcatNCHWc)" % tag)
            so = os.path.join(TMP, "m.so")
            if run_icc([path, "-O3", "-o", so] + march, tag + ": compile").returncode:
                continue
            for hh, ww in sizes:
                x = rng.standard_normal((1, cin, hh, ww)).astype(np.float32)
                xp = os.path.join(TMP, "x.npy")
                np.save(xp, x)
                ref = sess.run(None, {"x": x})
                for what, model in (("compiled", so), ("interpreter on the -O3 IR", os.path.join(TMP, "opt.icc"))):
                    od = os.path.join(TMP, "out")
                    os.makedirs(od, exist_ok=True)
                    for f in os.listdir(od):
                        os.remove(os.path.join(od, f))
                    if run_icc(["run", model, "--input", "x=" + xp, "-o", od], "%s: %s" % (tag, what)).returncode:
                        continue
                    worst = 0.0
                    for name_o, want in zip(["y", "z"], ref):
                        got = np.load(os.path.join(od, name_o + ".npy"))
                        if got.shape != want.shape:
                            worst = float("inf")
                            break
                        worst = max(worst, float(np.max(np.abs(got - want)) / (np.max(np.abs(want)) + 1e-6)))
                    report(worst <= 2e-5, "%s at %dx%d, %s: max error / max %.2g" % (tag, hh, ww, what, worst))
    print("%d failures" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
