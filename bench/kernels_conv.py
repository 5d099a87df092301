#!/usr/bin/env python3
"""Convolution-family kernels: icc against ONNX Runtime on single-op models and a
MobileNetV2-style block stack, at 1 and 2 threads, side by side.

Cases: depthwise 3x3 stride 1 and 2 at 32, 144 and 512 channels (MobileNet's
plane sizes), ConvTranspose 4x4 stride 2 (64 -> 32 channels, 32x32 -> 64x64),
Resize x2 nearest and linear (64 channels, 56x56), a MobileNetV2-style
stack (1x1 expand, depthwise 3x3, 1x1 project, residual; 4 blocks on 1x32x56x56),
a 1x1 Conv + MaxPool 3x3 s2 (blocked at -O3), a MobileNetV3 squeeze-excite block,
and dense Conv + Relu at ResNet-50's shapes (conv1 7x7 s2; 3x3 and 1x1 at 56x56,
14x14, 7x7).
Each engine runs in turn per round (see bench/threads.py); the table is the
median over rounds of each burst's p50 (ms). With --base, a baseline icc is
measured alongside (before/after in one run).

    python3 bench/kernels_conv.py [--icc build/icc] [--base OLD/icc] [--rounds 3] [--level -O3] [CASE ...]
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from threads import measure, ROOT  # noqa: E402


def save(nodes, inits, x_shape, path):
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, x_shape)],
                     [h.make_tensor_value_info(nodes[-1].output[0], T.FLOAT, None)], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(onnx.shape_inference.infer_shapes(m), path)


def rnd(rng, name, *shape, scale=0.1):
    return nh.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def depthwise(path, c, hw, s):
    rng = np.random.default_rng(0)
    save([h.make_node("Conv", ["x", "w", "b"], ["y"], group=c, kernel_shape=[3, 3], strides=[s, s], pads=[1] * 4)],
         [rnd(rng, "w", c, 1, 3, 3), rnd(rng, "b", c)], [1, c, hw, hw], path)


def convtranspose(path):
    rng = np.random.default_rng(0)
    save([h.make_node("ConvTranspose", ["x", "w", "b"], ["y"], kernel_shape=[4, 4], strides=[2, 2], pads=[1] * 4)],
         [rnd(rng, "w", 64, 32, 4, 4), rnd(rng, "b", 32)], [1, 64, 32, 32], path)


def resize(path, mode):
    scales = nh.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    save([h.make_node("Resize", ["x", "", "scales"], ["y"], mode=mode)], [scales], [1, 64, 56, 56], path)


def dense(path, c, m, hw, k, s):
    """A ResNet-50 layer's Conv + bias + Relu (blocked at -O3: ConvNCHWc, conv_blocked.c)."""
    rng = np.random.default_rng(0)
    save([h.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k], strides=[s, s], pads=[k // 2] * 4),
          h.make_node("Relu", ["c"], ["y"])],
         [rnd(rng, "w", m, c, k, k), rnd(rng, "b", m)], [1, c, hw, hw], path)


def mobilenet(path):
    rng = np.random.default_rng(0)
    nodes, inits, x, c = [], [], "x", 32
    for i in range(4):
        e = c * 6
        p = "b%d_" % i
        inits += [rnd(rng, p + "we", e, c, 1, 1), rnd(rng, p + "be", e), rnd(rng, p + "wd", e, 1, 3, 3),
                  rnd(rng, p + "bd", e), rnd(rng, p + "wp", c, e, 1, 1), rnd(rng, p + "bp", c)]
        nodes += [h.make_node("Conv", [x, p + "we", p + "be"], [p + "e"], kernel_shape=[1, 1]),
                  h.make_node("Clip", [p + "e", "lo", "hi"], [p + "er"]),
                  h.make_node("Conv", [p + "er", p + "wd", p + "bd"], [p + "d"], group=e, kernel_shape=[3, 3],
                              pads=[1] * 4),
                  h.make_node("Clip", [p + "d", "lo", "hi"], [p + "dr"]),
                  h.make_node("Conv", [p + "dr", p + "wp", p + "bp"], [p + "p"], kernel_shape=[1, 1]),
                  h.make_node("Add", [p + "p", x], [p + "out"])]
        x = p + "out"
    inits += [nh.from_array(np.array(0, np.float32), "lo"), nh.from_array(np.array(6, np.float32), "hi")]
    save(nodes, inits, [1, c, 56, 56], path)


def maxpool_blocked(path):
    """A 1x1 Conv then MaxPool 3x3 s2 (ShuffleNet's stem pool): blocked at -O3."""
    rng = np.random.default_rng(0)
    save([h.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[1, 1]),
          h.make_node("MaxPool", ["c"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)],
         [rnd(rng, "w", 32, 32, 1, 1)], [1, 32, 112, 112], path)


def se_block(path):
    """A MobileNetV3 squeeze-excite block: depthwise 5x5 + HardSwish, GlobalAveragePool,
    1x1 to 60 (no multiple of 8) + Relu, 1x1 back + HardSigmoid, Mul, 1x1 project."""
    rng = np.random.default_rng(0)
    c = 240
    save([h.make_node("Conv", ["x", "wd", "bd"], ["d"], group=c, kernel_shape=[5, 5], pads=[2] * 4),
          h.make_node("HardSwish", ["d"], ["ds"]),
          h.make_node("GlobalAveragePool", ["ds"], ["g"]),
          h.make_node("Conv", ["g", "w1", "b1"], ["s1"], kernel_shape=[1, 1]),
          h.make_node("Relu", ["s1"], ["s1r"]),
          h.make_node("Conv", ["s1r", "w2", "b2"], ["s2"], kernel_shape=[1, 1]),
          h.make_node("HardSigmoid", ["s2"], ["sc"], alpha=1 / 6),
          h.make_node("Mul", ["ds", "sc"], ["m"]),
          h.make_node("Conv", ["m", "wp"], ["y"], kernel_shape=[1, 1])],
         [rnd(rng, "wd", c, 1, 5, 5), rnd(rng, "bd", c), rnd(rng, "w1", 60, c, 1, 1), rnd(rng, "b1", 60),
          rnd(rng, "w2", c, 60, 1, 1), rnd(rng, "b2", c), rnd(rng, "wp", 40, c, 1, 1)], [1, c, 14, 14], path)


CASES = {
    "dw32_112_s1": lambda p: depthwise(p, 32, 112, 1),
    "dw144_56_s2": lambda p: depthwise(p, 144, 56, 2),
    "dw144_56_s1": lambda p: depthwise(p, 144, 56, 1),
    "dw512_14_s1": lambda p: depthwise(p, 512, 14, 1),
    "dw512_14_s2": lambda p: depthwise(p, 512, 14, 2),
    "convT4x4s2": convtranspose,
    "resize_nearest": lambda p: resize(p, "nearest"),
    "resize_linear": lambda p: resize(p, "linear"),
    "mobilenet_blocks": mobilenet,
    "maxpool_blocked": maxpool_blocked,
    "se_block": se_block,
    "conv7x7s2_3_64_224": lambda p: dense(p, 3, 64, 224, 7, 2),
    "conv3x3_64_64_56": lambda p: dense(p, 64, 64, 56, 3, 1),
    "conv1x1_256_64_56": lambda p: dense(p, 256, 64, 56, 1, 1),
    "conv3x3_256_256_14": lambda p: dense(p, 256, 256, 14, 3, 1),
    "conv1x1_1024_256_14": lambda p: dense(p, 1024, 256, 14, 1, 1),
    "conv3x3_512_512_7": lambda p: dense(p, 512, 512, 7, 3, 1),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--icc", default=os.path.join(ROOT, "build/icc"))
    ap.add_argument("--base", help="a baseline icc binary, measured alongside")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--time", type=float, default=0.3)
    ap.add_argument("--level", default="-O3")
    ap.add_argument("cases", nargs="*", default=list(CASES))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    compilers = [("icc", a.icc)] + ([("base", a.base)] if a.base else [])
    cols = [c + t for c, _ in compilers for t in (" 1T", " 2T")] + ["ORT 1T", "ORT 2T"]
    print("icc %s; %d rounds of %.2f s bursts; median of per-burst p50 (ms)\n" % (a.level, a.rounds, a.time))
    extra = " base/icc 1T |" if a.base else ""
    print("| case | " + " | ".join(cols) + " | ORT/icc 1T | ORT/icc 2T |" + extra)
    print("|" + " --- |" * (len(cols) + 3 + bool(a.base)))
    for name in a.cases:
        p = os.path.join(tmp, name + ".onnx")
        CASES[name](p)
        med = measure(p, name, compilers, tmp, a.level, a.rounds, a.time)
        row = "| %s | %s | %.2f | %.2f |" % (name, " | ".join("%.3f" % med[c] for c in cols),
                                            med["ORT 1T"] / med["icc 1T"], med["ORT 2T"] / med["icc 2T"])
        if a.base:
            row += " %.2f |" % (med["base 1T"] / med["icc 1T"])
        print(row)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
