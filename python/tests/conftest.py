"""Shared fixtures: the models the tests compile once per session, and ONNX
Runtime (the oracle). icc is found as the package finds it (ICC, PATH, the
build tree beside python/)."""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as P, helper as h, numpy_helper as nh

import icc

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
ort.set_default_logger_severity(3)


def save(nodes, inputs, outputs, inits, path, opset=17):
    g = h.make_graph(nodes, os.path.basename(path), inputs, outputs, inits)
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", opset)]), path)
    return path


def make_cnn(path):
    """Conv, BatchNorm, Relu, MaxPool, strided Conv, GlobalAveragePool,
    Flatten, Gemm, Softmax, with a symbolic batch N."""
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
    return save(nodes, [h.make_tensor_value_info("x", P.FLOAT, ["N", 3, 16, 16])],
                [h.make_tensor_value_info("y", P.FLOAT, ["N", 10])], inits, path)


def make_mlp(path):
    """784-256-256-10 with ReLUs, a symbolic batch N (the overhead model)."""
    r = np.random.default_rng(1)
    sizes = [784, 256, 256, 10]
    inits, nodes, x = [], [], "x"
    for k in range(3):
        inits += [nh.from_array((r.standard_normal((sizes[k], sizes[k + 1])) * 0.05).astype(np.float32), "w%d" % k),
                  nh.from_array((r.standard_normal(sizes[k + 1]) * 0.05).astype(np.float32), "b%d" % k)]
        y = "y" if k == 2 else "h%d" % k
        nodes.append(h.make_node("Gemm", [x, "w%d" % k, "b%d" % k], [y]))
        if k < 2:
            nodes.append(h.make_node("Relu", [y], ["r%d" % k]))
            x = "r%d" % k
    return save(nodes, [h.make_tensor_value_info("x", P.FLOAT, ["N", 784])],
                [h.make_tensor_value_info("y", P.FLOAT, ["N", 10])], inits, path)


def make_two_inputs(path):
    """Two inputs a, b: f32[N, 4] (the symbol N must agree) and two outputs,
    y = a + b (f32) and z = (a < b) as int64."""
    nodes = [h.make_node("Add", ["a", "b"], ["y"]),
             h.make_node("Less", ["a", "b"], ["lt"]),
             h.make_node("Cast", ["lt"], ["z"], to=P.INT64)]
    return save(nodes, [h.make_tensor_value_info("a", P.FLOAT, ["N", 4]),
                        h.make_tensor_value_info("b", P.FLOAT, ["N", 4])],
                [h.make_tensor_value_info("y", P.FLOAT, ["N", 4]),
                 h.make_tensor_value_info("z", P.INT64, ["N", 4])], [], path)


def make_cast(path):
    """An int64 input: y = float(i) * 2."""
    nodes = [h.make_node("Cast", ["i"], ["f"], to=P.FLOAT),
             h.make_node("Add", ["f", "f"], ["y"])]
    return save(nodes, [h.make_tensor_value_info("i", P.INT64, ["N"])],
                [h.make_tensor_value_info("y", P.FLOAT, ["N"])], [], path)


def make_transformer(path, seq=16):
    """tests/models/make_bert_layer.py's encoder layer at hidden 256, 4 heads,
    FFN 1024 (BERT-base is 768/12/3072: the same graph, smaller weights)."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
    try:
        import make_bert_layer as b
    finally:
        sys.path.pop(0)
    saved = (b.H, b.HEADS, b.FFN, b.D)
    b.H, b.HEADS, b.FFN = 256, 4, 1024
    b.D = b.H // b.HEADS
    try:
        onnx.save(b.build(seq), path)
    finally:
        b.H, b.HEADS, b.FFN, b.D = saved
    return path


@pytest.fixture(scope="session")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("icc")


class Models:
    """Each model compiled on first use, once per session."""

    def __init__(self, d):
        self.d = d
        self.paths = {}

    def _get(self, name, make):
        if name not in self.paths:
            onnx_path = make(str(self.d / (name + ".onnx")))
            so = str(self.d / (name + ".so"))
            icc.compile(onnx_path, so)
            self.paths[name] = (onnx_path, so)
        return self.paths[name]

    cnn = property(lambda self: self._get("cnn", make_cnn))
    mlp = property(lambda self: self._get("mlp", make_mlp))
    two = property(lambda self: self._get("two", make_two_inputs))
    cast = property(lambda self: self._get("cast", make_cast))
    transformer = property(lambda self: self._get("transformer", make_transformer))


@pytest.fixture(scope="session")
def models(workdir):
    return Models(workdir)


def ort_run(onnx_path, feeds):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"]).run(None, feeds)
