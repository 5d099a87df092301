#!/usr/bin/env python3
"""Symbolic dims that stay symbolic through shape arithmetic, against ONNX Runtime.

Each model is built with onnx.helper, compiled ONCE by icc without --shape, and
run at several sizes; every output must match ONNX Runtime (rtol 1e-4,
atol 1e-5):

- a MobileNet-style classifier (Conv stride 2, depthwise Conv, Clip as Relu6,
  HardSwish, GlobalAveragePool, the exporter's flatten
  Shape -> Gather(0) -> Unsqueeze -> Concat([N, -1]) -> Reshape, Gemm) with
  batch 'N' at 1, 2 and 5; the same with the flatten's N sliced from Shape;
- a 1-layer transformer encoder with token ids [B, 'S'] (embedding Gather, a
  position table sliced to S and one gathered by Range(0, S), heads split and merged by Reshapes whose shapes
  are gathered from Shape, MatMul, Softmax, LayerNormalization) at S = 1, 7
  and 64; S = 129 must be refused (the position table has 128 rows);
- ConstantOfShape and Expand by shapes taken from Shape(x) [B, S, 4];
- Tile of [B, 3, W] by constant repeats and of a row by repeats computed
  from Shape(x);
- Slices of a symbolic T with constant positions ([1:], [-3:], [2:5],
  [1:-1], [-4:-1], TF's [0:1e9], and backwards [3::-1], [4:1:-1]); a T
  too short for [2:5] is refused;
- Pad in each mode (reflect, edge, wrap, constant) of two symbolic dims,
  and an empty one in the modes that repeat data: the compiled run fails
  with the interpreter's one-line error;
- every reduction (Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSum,
  LogSumExp) along a symbolic T and along the last axis;
- an ASR front end's power spectrogram through STFT (reflect Pad, Hann
  window, ReduceSumSquare, a mel MatMul) over a symbolic N, real and
  complex signals;
- DFT of symbolic-count frames (zero-padded, onesided) and the inverse
  onesided DFT back, against numpy's f64 FFT (ONNX Runtime's f32 transform
  at a length that is no power of 2 is 25x further off);
- GatherElements and ScatterElements along a symbolic axis, and an index
  past it refused as the interpreter refuses it;
- onnx-asr's resampler: a strided Conv's output cut by a Slice to a length
  computed from Shape(x) ((N + 2 - 1) / 2), and Range over that length;
- Silero VAD's shape: audio and its context concatenated along time, an
  LSTM whose initial state is another input, every batch dim unnamed (one
  dim once the ops relate them), at three sizes; a state of another batch
  refused in one line;
- Pad with crops (negative pads) of symbolic C and T in each mode, and a T
  shorter than its crops refused as the interpreter refuses it;
- Whisper's fixed-length input: N padded or cropped to a constant length by
  pads of (64 - N) computed from Shape(x), at the end and at the start;
- PaddleOCR v4's recognizer neck: [B, H*W, 8] reshaped to [0, 1, W, 8] with
  W from Shape(x) through int32 Casts (compiled with H and W symbolic, run
  at H 1; H 2 fails on the element count, compiled as interpreted).

It also checks the compile errors: a Reshape by an input's values (directly or
through a Cast) says to bind that input and names it; a dim that only dims
decide (a product of two symbols) says to pin them with --shape instead.

    python3 tests/models/symbolic_dims.py build/icc
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


def consts(r):
    def w(name, *shape, s=0.2):
        return nh.from_array((r.standard_normal(shape) * s).astype(np.float32), name)

    def i64(name, v):
        return nh.from_array(np.array(v, np.int64), name)

    return w, i64


def classifier(path, flatten="gather"):
    """flatten: 'gather' (Shape -> Gather -> Unsqueeze -> Concat) or 'slice'
    (Shape -> Slice [0:1] -> Concat)."""
    r = np.random.default_rng(0)
    w, i64 = consts(r)
    inits = [w("w1", 8, 3, 3, 3), w("b1", 8), w("dw", 8, 1, 3, 3), w("db", 8), w("pw", 16, 8, 1, 1),
             w("pb", 16), i64("zero", 0), i64("ax0", [0]), i64("m1", [-1]), i64("s0", [0]), i64("s1", [1]),
             nh.from_array(np.array(0.0, np.float32), "lo"), nh.from_array(np.array(6.0, np.float32), "hi"),
             w("fc", 10, 16), w("fcb", 10)]
    nodes = [
        h.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        h.make_node("Clip", ["c1", "lo", "hi"], ["r1"]),
        h.make_node("Conv", ["r1", "dw", "db"], ["c2"], pads=[1, 1, 1, 1], group=8),
        h.make_node("HardSwish", ["c2"], ["r2"]),
        h.make_node("Conv", ["r2", "pw", "pb"], ["c3"]),
        h.make_node("Clip", ["c3", "lo", "hi"], ["r3"]),
        h.make_node("GlobalAveragePool", ["r3"], ["g"]),
        h.make_node("Shape", ["g"], ["sh"]),
    ]
    if flatten == "gather":
        nodes += [h.make_node("Gather", ["sh", "zero"], ["n"], axis=0),
                  h.make_node("Unsqueeze", ["n", "ax0"], ["nu"]),
                  h.make_node("Concat", ["nu", "m1"], ["ns"], axis=0)]
    elif flatten == "slice":
        nodes += [h.make_node("Slice", ["sh", "s0", "s1"], ["nu"]),
                  h.make_node("Concat", ["nu", "m1"], ["ns"], axis=0)]
    nodes += [h.make_node("Reshape", ["g", "ns"], ["f"]),
              h.make_node("Gemm", ["f", "fc", "fcb"], ["y"], transB=1)]
    g = h.make_graph(nodes, "classifier", [h.make_tensor_value_info("x", P.FLOAT, ["N", 3, 16, 16])],
                     [h.make_tensor_value_info("y", P.FLOAT, ["N", 10])], inits)
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)


def encoder(path, d=32, heads=4, ff=64, vocab=50):
    """Token and position embeddings, one post-norm encoder layer; the heads
    are split by Reshape to [B, S, heads, d/heads] and merged by Reshape to
    [B, S, d], both shapes gathered from Shape(x) as exporters write them."""
    r = np.random.default_rng(2)
    w, i64 = consts(r)
    dh = d // heads
    inits = [w("emb", vocab, d, s=0.5), w("pos", 128, d, s=0.1), w("pos2", 128, d, s=0.1), i64("zero", 0), i64("one", 1),
             i64("ax0", [0]), i64("hd", [heads, dh]), i64("dd", [d]), i64("st0", [0]),
             w("wq", d, d), w("wk", d, d), w("wv", d, d), w("wo", d, d), w("bq", d), w("bo", d),
             nh.from_array(np.array(1.0 / np.sqrt(dh), np.float32), "scale"),
             nh.from_array((1 + 0.1 * r.standard_normal(d)).astype(np.float32), "g1"), w("be1", d),
             nh.from_array((1 + 0.1 * r.standard_normal(d)).astype(np.float32), "g2"), w("be2", d),
             w("w1", d, ff), w("b1", ff), w("w2", ff, d), w("b2", d)]
    nodes = [
        h.make_node("Gather", ["emb", "ids"], ["te"], axis=0),
        h.make_node("Shape", ["ids"], ["ish"]),
        h.make_node("Gather", ["ish", "one"], ["s"], axis=0),
        h.make_node("Unsqueeze", ["s", "ax0"], ["su"]),
        h.make_node("Slice", ["pos", "st0", "su", "ax0"], ["pe"]),
        # a second position term as GPT-2 exports it: Gather(table, Range(0, S))
        h.make_node("Range", ["zero", "s", "one"], ["pids"]),
        h.make_node("Gather", ["pos2", "pids"], ["pe2"], axis=0),
        h.make_node("Add", ["te", "pe"], ["x0"]),
        h.make_node("Add", ["x0", "pe2"], ["x"]),
        h.make_node("Shape", ["x"], ["xs"]),
        h.make_node("Gather", ["xs", "zero"], ["b"], axis=0),
        h.make_node("Gather", ["xs", "one"], ["s2"], axis=0),
        h.make_node("Unsqueeze", ["b", "ax0"], ["bu"]),
        h.make_node("Unsqueeze", ["s2", "ax0"], ["su2"]),
        h.make_node("Concat", ["bu", "su2", "hd"], ["split"], axis=0),
        h.make_node("Concat", ["bu", "su2", "dd"], ["merge"], axis=0),
    ]
    for t, wt in (("q", "wq"), ("k", "wk"), ("v", "wv")):
        nodes += [h.make_node("MatMul", ["x", wt], [t + "m"])]
        src = t + "m"
        if t == "q":
            nodes += [h.make_node("Add", ["qm", "bq"], ["qb"])]
            src = "qb"
        nodes += [h.make_node("Reshape", [src, "split"], [t + "r"]),
                  h.make_node("Transpose", [t + "r"], [t + "t"], perm=[0, 2, 3, 1] if t == "k" else [0, 2, 1, 3])]
    nodes += [
        h.make_node("MatMul", ["qt", "kt"], ["sc0"]),
        h.make_node("Mul", ["sc0", "scale"], ["sc"]),
        h.make_node("Softmax", ["sc"], ["p"], axis=-1),
        h.make_node("MatMul", ["p", "vt"], ["ctx"]),
        h.make_node("Transpose", ["ctx"], ["ctxt"], perm=[0, 2, 1, 3]),
        h.make_node("Reshape", ["ctxt", "merge"], ["att"]),
        h.make_node("MatMul", ["att", "wo"], ["o0"]),
        h.make_node("Add", ["o0", "bo"], ["o"]),
        h.make_node("Add", ["x", "o"], ["res1"]),
        h.make_node("LayerNormalization", ["res1", "g1", "be1"], ["n1"], axis=-1, epsilon=1e-5),
        h.make_node("MatMul", ["n1", "w1"], ["f0"]),
        h.make_node("Add", ["f0", "b1"], ["f1"]),
        h.make_node("Relu", ["f1"], ["f2"]),
        h.make_node("MatMul", ["f2", "w2"], ["f3"]),
        h.make_node("Add", ["f3", "b2"], ["f4"]),
        h.make_node("Add", ["n1", "f4"], ["res2"]),
        h.make_node("LayerNormalization", ["res2", "g2", "be2"], ["y"], axis=-1, epsilon=1e-5),
    ]
    g = h.make_graph(nodes, "encoder", [h.make_tensor_value_info("ids", P.INT64, ["B", "S"])],
                     [h.make_tensor_value_info("y", P.FLOAT, ["B", "S", d])], inits)
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)


def filled(path):
    """ConstantOfShape and Expand by shapes taken from Shape(x): ones of
    [B, S] as a mask, a bias expanded to [B, S, 4] (with Where(Equal(shape,
    -1), 1, shape), as exporters guard Expand)."""
    i64 = lambda name, v: nh.from_array(np.array(v, np.int64), name)
    nodes = [h.make_node("Shape", ["x"], ["sh"]),
             h.make_node("Slice", ["sh", "s0", "s2"], ["bs"]),
             h.make_node("ConstantOfShape", ["bs"], ["ones"], value=nh.from_array(np.array([1.0], np.float32))),
             h.make_node("Unsqueeze", ["ones", "last"], ["mask"]),
             h.make_node("Equal", ["sh", "m1"], ["isneg"]),
             h.make_node("Where", ["isneg", "one3", "sh"], ["eshape"]),
             h.make_node("Expand", ["bias", "eshape"], ["eb"]),
             h.make_node("Mul", ["x", "mask"], ["xm"]),
             h.make_node("Add", ["xm", "eb"], ["y"])]
    g = h.make_graph(nodes, "filled", [h.make_tensor_value_info("x", P.FLOAT, ["B", "S", 4])],
                     [h.make_tensor_value_info("y", P.FLOAT, ["B", "S", 4])],
                     [i64("s0", [0]), i64("s2", [2]), i64("last", [-1]), i64("m1", [-1]), i64("one3", [1, 1, 1]),
                      nh.from_array(np.array([0.5, -1.0, 2.0, 0.25], np.float32), "bias")])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)


def tiled(path):
    """Tile over symbolic dims: x [B, 3, 'W'] by constant repeats [2, 1, 3]
    (the output [2B, 3, 3W], derived symbols), and a [1, 4] row tiled by
    Concat(Shape(x)[0], 1) to [B, 4] (repeats computed: the kernel's loops
    take the run's quotient of the dims, and it checks the repeats)."""
    i64 = lambda name, v: nh.from_array(np.array(v, np.int64), name)
    nodes = [h.make_node("Tile", ["x", "r"], ["y"]),
             h.make_node("Shape", ["x"], ["sh"]),
             h.make_node("Slice", ["sh", "s0", "s1"], ["b"]),
             h.make_node("Concat", ["b", "one"], ["rz"], axis=0),
             h.make_node("Tile", ["z", "rz"], ["t"])]
    g = h.make_graph(nodes, "tiled", [h.make_tensor_value_info("x", P.FLOAT, ["B", 3, "W"]),
                                      h.make_tensor_value_info("z", P.FLOAT, [1, 4])],
                     [h.make_tensor_value_info("y", P.FLOAT, None), h.make_tensor_value_info("t", P.FLOAT, None)],
                     [i64("r", [2, 1, 3]), i64("s0", [0]), i64("s1", [1]), i64("one", [1])])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)


def sliced(path):
    """Slices of x [B, 'T', 4] along T with constant positions, each to its
    own output: [1:] (T - 1 from 1, a derived dim), [-3:] (the last 3),
    [2:5], [1:-1] (T - 2), [-4:-1], and [0:1000000000] (TF's "to the end":
    T whole, checked to be at most 1e9), and backwards [3::-1] (Kaldi's
    reflected first samples) and [4:1:-1]; each Relu'd (its own kernel)."""
    i64 = lambda name, v: nh.from_array(np.array(v, np.int64), name)
    cases = [(1, 2 ** 63 - 1, 1), (-3, 2 ** 63 - 1, 1), (2, 5, 1), (1, -1, 1), (-4, -1, 1), (0, 1000000000, 1),
             (3, -2 ** 63, -1), (4, 1, -1)]
    nodes, inits, outs = [], [i64("ax", [1])], []
    for i, (a, b, st) in enumerate(cases):
        inits += [i64("s%d" % i, [a]), i64("e%d" % i, [b]), i64("st%d" % i, [st])]
        nodes += [h.make_node("Slice", ["x", "s%d" % i, "e%d" % i, "ax", "st%d" % i], ["p%d" % i]),
                  h.make_node("Relu", ["p%d" % i], ["y%d" % i])]
        outs.append(h.make_tensor_value_info("y%d" % i, P.FLOAT, None))
    g = h.make_graph(nodes, "sliced", [h.make_tensor_value_info("x", P.FLOAT, ["B", "T", 4])], outs, inits)
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)


def padded(path, mode):
    """Pad in mode (reflect, edge, wrap, constant) of x [B, 'C', 'T']: C by 1
    before and 2 after, T by 2 and 3, both symbolic (an audio model's
    reflect padding of its samples), then Relu."""
    pads = nh.from_array(np.array([0, 1, 2, 0, 2, 3], np.int64), "pads")
    g = h.make_graph([h.make_node("Pad", ["x", "pads"], ["p"], mode=mode), h.make_node("Relu", ["p"], ["y"])],
                     "padded", [h.make_tensor_value_info("x", P.FLOAT, ["B", "C", "T"])],
                     [h.make_tensor_value_info("y", P.FLOAT, None)], [pads])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 19)]), path)


def cropped(path, mode):
    """Pad with negative pads (crops) in mode of x [B, 'C', 'T']: C shifted
    by one (begin 1, end -1: Kaldi's pre-emphasis in edge mode), T cropped
    by 2 in front and padded by 1 at the end, then Relu."""
    pads = nh.from_array(np.array([0, 1, -2, 0, -1, 1], np.int64), "pads")
    g = h.make_graph([h.make_node("Pad", ["x", "pads"], ["p"], mode=mode), h.make_node("Relu", ["p"], ["y"])],
                     "cropped", [h.make_tensor_value_info("x", P.FLOAT, ["B", "C", "T"])],
                     [h.make_tensor_value_info("y", P.FLOAT, None)], [pads])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 19)]), path)


def fixed_length(path):
    """Whisper's front end: x [B, 'N'] padded or cropped to a fixed length by
    pads computed from Shape(x): y to 64 at the end ((64 - N) * [0, 0, 0, 1],
    constant mode), z to 48 at the start in edge mode; both lengths are
    constants once compiled."""
    nodes = [h.make_node("Shape", ["x"], ["n"], start=1),
             h.make_node("Sub", ["l64", "n"], ["d64"]), h.make_node("Mul", ["d64", "end"], ["p64"]),
             h.make_node("Pad", ["x", "p64"], ["y"]),
             h.make_node("Sub", ["l48", "n"], ["d48"]), h.make_node("Mul", ["d48", "begin"], ["p48"]),
             h.make_node("Pad", ["x", "p48"], ["z"], mode="edge")]
    inits = [nh.from_array(np.array(v, np.int64), k) for k, v in
             (("l64", 64), ("l48", 48), ("end", [0, 0, 0, 1]), ("begin", [0, 1, 0, 0]))]
    g = h.make_graph(nodes, "fixed_length", [h.make_tensor_value_info("x", P.FLOAT, ["B", "N"])],
                     [h.make_tensor_value_info("y", P.FLOAT, None), h.make_tensor_value_info("z", P.FLOAT, None)],
                     inits)
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 19)]), path)


def by_input_values(path):
    """A Reshape whose shape is an input: only its values decide the dims."""
    g = h.make_graph([h.make_node("Reshape", ["x", "shape"], ["y"], name="r")], "byvalue",
                     [h.make_tensor_value_info("x", P.FLOAT, ["N", 4]),
                      h.make_tensor_value_info("shape", P.INT64, [2])],
                     [h.make_tensor_value_info("y", P.FLOAT, None)])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)


def by_data_values(path):
    """A Reshape by a shape computed from data (x's values cast to int)."""
    g = h.make_graph([h.make_node("Cast", ["s"], ["si"], to=P.INT64),
                      h.make_node("Reshape", ["x", "si"], ["y"], name="r")], "bydata",
                     [h.make_tensor_value_info("x", P.FLOAT, ["N", 4]),
                      h.make_tensor_value_info("s", P.FLOAT, [2])],
                     [h.make_tensor_value_info("y", P.FLOAT, None)])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)


def merged_rows(path):
    """Reshape of [B, S, 4] to [B*S, 4], the product gathered from Shape: no
    input's values decide it, only dims, so binding inputs would not help."""
    i64 = lambda name, v: nh.from_array(np.array(v, np.int64), name)
    nodes = [h.make_node("Shape", ["x"], ["sh"]),
             h.make_node("Gather", ["sh", "zero"], ["b"], axis=0),
             h.make_node("Gather", ["sh", "one"], ["s"], axis=0),
             h.make_node("Mul", ["b", "s"], ["bs"]),
             h.make_node("Unsqueeze", ["bs", "ax0"], ["bsu"]),
             h.make_node("Concat", ["bsu", "four"], ["shape"], axis=0),
             h.make_node("Reshape", ["x", "shape"], ["y"], name="rows")]
    g = h.make_graph(nodes, "rows", [h.make_tensor_value_info("x", P.FLOAT, ["B", "S", 4])],
                     [h.make_tensor_value_info("y", P.FLOAT, None)],
                     [i64("zero", 0), i64("one", 1), i64("ax0", [0]), i64("four", [4])])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)


def one_row(path):
    """PaddleOCR v4's recognizer neck: x [B, 8, H, W] flattened to [B, H*W, 8]
    (Reshape [0, 8, -1], Transpose), a LayerNormalization, then reshaped to
    [0, 1, W, 8] with W taken from Shape(x)[3] through Casts to int32 and back
    (valid where H is 1, the 48-pixel crop's height there): W is a factor of
    the derived H*W, so the output's dim is W, and a run with H > 1 fails on
    the element count, compiled as interpreted."""
    i64 = lambda name, v: nh.from_array(np.array(v, np.int64), name)
    i32 = lambda name, v: nh.from_array(np.array(v, np.int32), name)
    nodes = [h.make_node("Reshape", ["x", "flat"], ["f"]),
             h.make_node("Transpose", ["f"], ["t"], perm=[0, 2, 1]),
             h.make_node("LayerNormalization", ["t", "g", "b"], ["ln"], axis=-1),
             h.make_node("Shape", ["x"], ["sh"]),
             h.make_node("Cast", ["sh"], ["sh32"], to=P.INT32),
             h.make_node("Slice", ["sh32", "s3", "s4", "ax0"], ["w32"]),
             h.make_node("Cast", ["w32"], ["w64"], to=P.INT64),
             h.make_node("Cast", ["c0"], ["c0l"], to=P.INT64),
             h.make_node("Cast", ["c1"], ["c1l"], to=P.INT64),
             h.make_node("Cast", ["c8"], ["c8l"], to=P.INT64),
             h.make_node("Concat", ["c0l", "c1l", "w64", "c8l"], ["shape"], axis=0),
             h.make_node("Reshape", ["ln", "shape"], ["y"], name="rows")]
    g = h.make_graph(nodes, "one_row", [h.make_tensor_value_info("x", P.FLOAT, ["B", 8, "H", "W"])],
                     [h.make_tensor_value_info("y", P.FLOAT, None)],
                     [i64("flat", [0, 8, -1]), i64("s3", [3]), i64("s4", [4]), i64("ax0", [0]), i32("c0", [0]),
                      i32("c1", [1]), i32("c8", [8]),
                      nh.from_array(np.linspace(0.5, 1.5, 8).astype(np.float32), "g"),
                      nh.from_array(np.linspace(-0.2, 0.2, 8).astype(np.float32), "b")])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)


def anchors(path):
    """YOLOv8's head over symbolic height and width (NudeNet's 320n):
    feature x [B, 4, H, W]; the anchor centres Range(0, Cast(Shape(x)[3] to
    float), 1) + 0.5 (arange(w, dtype=float)), and a ConstantOfShape of
    [Shape(x)[2] * Shape(x)[3], 1] for the strides: the float Range takes W,
    the product is the derived H*W, so the flattened x [B, 4, H*W] times
    the strides is one more output."""
    i64 = lambda name, v: nh.from_array(np.array(v, np.int64), name)
    f32 = lambda name, v: nh.from_array(np.array(v, np.float32), name)
    nodes = [h.make_node("Shape", ["x"], ["sh"]),
             h.make_node("Gather", ["sh", "i2"], ["hh"], axis=0),
             h.make_node("Gather", ["sh", "i3"], ["ww"], axis=0),
             h.make_node("Cast", ["ww"], ["wf"], to=P.FLOAT),
             h.make_node("Range", ["f0", "wf", "f1"], ["sx"]),
             h.make_node("Add", ["sx", "half"], ["cx"]),
             h.make_node("Mul", ["hh", "ww"], ["hw"]),
             h.make_node("Unsqueeze", ["hw", "ax0"], ["hw1"]),
             h.make_node("Concat", ["hw1", "one"], ["cshape"], axis=0),
             h.make_node("ConstantOfShape", ["cshape"], ["stride"], value=nh.from_array(np.array([8.0], np.float32))),
             h.make_node("Transpose", ["stride"], ["st"], perm=[1, 0]),
             h.make_node("Reshape", ["x", "flat"], ["xf"]),
             h.make_node("Mul", ["xf", "st"], ["y"])]
    g = h.make_graph(nodes, "anchors", [h.make_tensor_value_info("x", P.FLOAT, ["B", 4, "H", "W"])],
                     [h.make_tensor_value_info("y", P.FLOAT, None), h.make_tensor_value_info("cx", P.FLOAT, None)],
                     [i64("i2", 2), i64("i3", 3), f32("f0", 0), f32("f1", 1), f32("half", 0.5), i64("ax0", [0]),
                      i64("one", [1]), i64("flat", [0, 4, -1])])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)


def spectrogram(path, complex_signal=False):
    """An ASR front end's power spectrogram: x [B, 'N'] reflect-padded by
    32 each side, STFT of 64-sample Hann-windowed frames every 16 samples
    ([B, N] real, as onnx-asr's exports give it; or a complex [B, N, 2]
    with onesided 0), the squares of re and im summed, and a 33 x 8 "mel"
    matrix; compiled as a strided Conv (passes/signal.c)."""
    r = np.random.default_rng(5)
    w, i64 = consts(r)
    n = 64
    hann = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n)).astype(np.float32)
    bins = n if complex_signal else n // 2 + 1
    mel = nh.from_array(np.abs(r.standard_normal((bins, 8))).astype(np.float32), "mel")
    nodes = [h.make_node("Pad", ["x", "pads"], ["xp"], mode="reflect"),
             h.make_node("STFT", ["xp", "hop", "win"], ["spec"], onesided=0 if complex_signal else 1),
             h.make_node("ReduceSumSquare", ["spec", "last"], ["pw"], keepdims=0),
             h.make_node("MatMul", ["pw", "mel"], ["y"])]
    x = h.make_tensor_value_info("x", P.FLOAT, ["B", "N", 2] if complex_signal else ["B", "N"])
    pads = [0, 32, 0, 0, 32, 0] if complex_signal else [0, 32, 0, 32]
    g = h.make_graph(nodes, "spectrogram", [x], [h.make_tensor_value_info("y", P.FLOAT, None)],
                     [i64("pads", pads), i64("hop", 16), nh.from_array(hann, "win"), i64("last", [-1]), mel])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 18)]), path)


def dft_frames(path):
    """Frames x [B, 'F', 64] (wespeaker's front end): Unsqueeze to a real
    [B, F, 64, 1], DFT along axis -2 at dft_length 80 (zero-padded)
    onesided -> y [B, F, 41, 2], then its inverse onesided at length 80
    -> z [B, F, 80, 1] (the frames back, padded): each a MatMul by the
    transform's matrix once compiled (passes/signal.c)."""
    i64 = lambda name, v: nh.from_array(np.array(v, np.int64), name)
    nodes = [h.make_node("Unsqueeze", ["x", "last"], ["xr"]),
             h.make_node("DFT", ["xr", "n", "axis"], ["y"], onesided=1),
             h.make_node("DFT", ["y", "n", "axis"], ["z"], onesided=1, inverse=1)]
    g = h.make_graph(nodes, "dft_frames", [h.make_tensor_value_info("x", P.FLOAT, ["B", "F", 64])],
                     [h.make_tensor_value_info("y", P.FLOAT, None), h.make_tensor_value_info("z", P.FLOAT, None)],
                     [i64("last", [-1]), i64("n", 80), i64("axis", -2)])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 20)]), path)


def elements(path):
    """GatherElements and ScatterElements along a symbolic N of x [B, 'N']
    with indices i [B, 3] (negative ones count from the end): y = x's
    elements at i, z = x with 2 y written back there (Kaldi's reflected
    edges)."""
    nodes = [h.make_node("GatherElements", ["x", "i"], ["y"], axis=1),
             h.make_node("Add", ["y", "y"], ["y2"]),
             h.make_node("ScatterElements", ["x", "i", "y2"], ["z"], axis=1)]
    g = h.make_graph(nodes, "elements", [h.make_tensor_value_info("x", P.FLOAT, ["B", "N"]),
                                         h.make_tensor_value_info("i", P.INT64, ["B", 3])],
                     [h.make_tensor_value_info("y", P.FLOAT, None), h.make_tensor_value_info("z", P.FLOAT, None)])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 18)]), path)


def resampler(path):
    """onnx-asr's resampler: x [B, 'N'] through a strided 1 x 5 Conv (W =
    N / 2 + 1 columns), cut to new_len = (N + 2 - 1) / 2 computed from
    Shape(x) (a shape value (N + 2) - 1 is N + 1, then halved), plus
    Range(0, new_len) as a float row: the Slice ends at a symbol of its
    own over the Conv's derived W (the run checks new_len <= W)."""
    r = np.random.default_rng(4)
    w, i64 = consts(r)
    nodes = [h.make_node("Unsqueeze", ["x", "ax12"], ["xu"]),
             h.make_node("Conv", ["xu", "k"], ["conv"], pads=[0, 2, 0, 3], strides=[1, 2]),
             h.make_node("Reshape", ["conv", "flat"], ["wide"]),
             h.make_node("Shape", ["x"], ["sh"], start=1, end=2),
             h.make_node("Squeeze", ["sh"], ["n"]),
             h.make_node("Add", ["n", "two"], ["n2"]),
             h.make_node("Sub", ["n2", "one"], ["n1"]),
             h.make_node("Div", ["n1", "two"], ["new_len"]),
             h.make_node("Unsqueeze", ["new_len", "ax0"], ["end"]),
             h.make_node("Slice", ["wide", "zero", "end", "one1"], ["y"]),
             h.make_node("Range", ["zs", "new_len", "os"], ["idx"]),
             h.make_node("Cast", ["idx"], ["idxf"], to=P.FLOAT),
             h.make_node("Add", ["y", "idxf"], ["z"])]
    g = h.make_graph(nodes, "resampler", [h.make_tensor_value_info("x", P.FLOAT, ["B", "N"])],
                     [h.make_tensor_value_info("y", P.FLOAT, None), h.make_tensor_value_info("z", P.FLOAT, None)],
                     [w("k", 1, 1, 1, 5), i64("ax12", [1, 2]), i64("ax0", [0]), i64("flat", [0, -1]), i64("two", 2),
                      i64("one", 1), i64("zero", [0]), i64("one1", [1]), i64("zs", 0), i64("os", 1)])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)


def stateful(path):
    """Silero VAD's shape: audio x [N, 'T', 8] behind its context ctx [N, 'C',
    8] (Concat along time), run through an LSTM (time-major, hidden 16)
    whose initial state comes from state [2, N, 16]; the inputs' batch
    dims unnamed (the frontend names them x_dim0, ctx_dim0, state_dim1),
    as exporters leave them. Only the ops relate them: the Concat and the
    LSTM require one batch, so icc makes them one dim (ir/unify.c) and
    the model compiles without --shape."""
    r = np.random.default_rng(3)
    w, i64 = consts(r)
    nodes = [h.make_node("Concat", ["ctx", "x"], ["cx"], axis=1),
             h.make_node("Transpose", ["cx"], ["tm"], perm=[1, 0, 2]),
             h.make_node("Slice", ["state", "z", "o", "z"], ["h0"]),
             h.make_node("Slice", ["state", "o", "two", "z"], ["c0"]),
             h.make_node("LSTM", ["tm", "W", "R", "B", "", "h0", "c0"], ["Y", "Yh", "Yc"], hidden_size=16),
             h.make_node("Concat", ["Yh", "Yc"], ["stateN"], axis=0),
             h.make_node("Squeeze", ["Yh", "z"], ["last"]),
             h.make_node("MatMul", ["last", "head"], ["y"])]
    g = h.make_graph(nodes, "stateful",
                     [h.make_tensor_value_info("x", P.FLOAT, [None, "T", 8]),
                      h.make_tensor_value_info("ctx", P.FLOAT, [None, "C", 8]),
                      h.make_tensor_value_info("state", P.FLOAT, [2, None, 16])],
                     [h.make_tensor_value_info("y", P.FLOAT, None), h.make_tensor_value_info("stateN", P.FLOAT, None)],
                     [w("W", 1, 64, 8), w("R", 1, 64, 16), w("B", 1, 128), w("head", 16, 1),
                      i64("z", [0]), i64("o", [1]), i64("two", [2])])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)


def reductions(path):
    """Every reduction over x [B, 'T', 5] with both dims symbolic: along T
    (keepdims 0) and along the last axis (keepdims 1), each its own output
    (an ASR front end's ReduceSumSquare of spectrogram frames)."""
    i64 = lambda name, v: nh.from_array(np.array(v, np.int64), name)
    ops = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
           "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"]
    nodes, outs = [], []
    for op in ops:
        for ax, keep in (("t", 0), ("last", 1)):
            y = "%s_%s" % (op, ax)
            nodes.append(h.make_node(op, ["x", ax], [y], keepdims=keep))
            outs.append(h.make_tensor_value_info(y, P.FLOAT, None))
    g = h.make_graph(nodes, "reductions", [h.make_tensor_value_info("x", P.FLOAT, ["B", "T", 5])], outs,
                     [i64("t", [1]), i64("last", [-1])])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 18)]), path)


class Runner:
    def __init__(self, icc, t):
        self.icc, self.t, self.failed = icc, t, 0

    def compile(self, name, *flags):
        onnx_path, so = os.path.join(self.t, name + ".onnx"), os.path.join(self.t, name + ".so")
        r = subprocess.run([self.icc, onnx_path, "-o", so] + list(flags), capture_output=True, text=True)
        if r.returncode != 0:
            print("FAIL %s does not compile: %s" % (name, r.stderr.strip()))
            self.failed += 1
            return None
        return so

    def check(self, name, so, feeds, label):
        sess = ort.InferenceSession(os.path.join(self.t, name + ".onnx"), providers=["CPUExecutionProvider"])
        want = sess.run(None, feeds)
        args = [self.icc, "run", so, "-o", os.path.join(self.t, "out")]
        for k, v in feeds.items():
            np.save(os.path.join(self.t, k + ".npy"), v)
            args += ["--input", "%s=%s" % (k, os.path.join(self.t, k + ".npy"))]
        r = subprocess.run(args, capture_output=True, text=True)
        ok, err = r.returncode == 0, float("nan")
        if ok:
            for o, wv in zip(sess.get_outputs(), want):
                got = np.load(os.path.join(self.t, "out", o.name + ".npy"))
                ok &= got.shape == wv.shape and np.allclose(got, wv, rtol=1e-4, atol=1e-5)
                err = np.abs(got - wv).max() if got.shape == wv.shape and got.size else 0.0
        print("%s %s: max abs error %.3g%s" % ("ok  " if ok else "FAIL", label, err,
                                               "" if r.returncode == 0 else " (" + r.stderr.strip() + ")"))
        self.failed += not ok

    def same_refusal(self, name, so, x, want, label):
        """Input x (for input 'x') makes the compiled run and the interpreter
        fail alike: exit 1, one line each, both holding want."""
        np.save(os.path.join(self.t, "x.npy"), x)
        msgs = [subprocess.run([self.icc, "run", lib, "--input", "x=" + os.path.join(self.t, "x.npy")],
                               capture_output=True, text=True) for lib in (so, os.path.join(self.t, name + ".onnx"))]
        ok = all(r.returncode == 1 and r.stderr.count("\n") == 1 and want in r.stderr for r in msgs)
        print("%s %s: %s" % ("ok  " if ok else "FAIL", label, " / ".join(r.stderr.strip() for r in msgs)))
        self.failed += not ok

    def expect_error(self, name, want, unwanted, label):
        onnx_path, so = os.path.join(self.t, name + ".onnx"), os.path.join(self.t, name + ".so")
        r = subprocess.run([self.icc, onnx_path, "-o", so], capture_output=True, text=True)
        msg = r.stderr.strip()
        ok = r.returncode == 1 and msg.count("\n") == 0 and all(s in msg for s in want) and \
            not any(s in msg for s in unwanted)
        print("%s %s: %s" % ("ok  " if ok else "FAIL", label, msg))
        self.failed += not ok


def main():
    icc = os.path.abspath(sys.argv[1])
    t = tempfile.mkdtemp()
    run = Runner(icc, t)

    for flatten in ("gather", "slice"):
        name = "classifier_" + flatten
        classifier(os.path.join(t, name + ".onnx"), flatten)
        so = run.compile(name)
        for n in (1, 2, 5) if so else ():
            x = np.random.default_rng(n).standard_normal((n, 3, 16, 16)).astype(np.float32)
            run.check(name, so, {"x": x}, "classifier (%s flatten), batch %d" % (flatten, n))

    encoder(os.path.join(t, "encoder.onnx"))
    so = run.compile("encoder")
    for b, s in ((1, 1), (2, 7), (1, 64), (3, 5)) if so else ():
        ids = np.random.default_rng(s).integers(0, 50, (b, s)).astype(np.int64)
        run.check("encoder", so, {"ids": ids}, "encoder, B %d S %d" % (b, s))

    if so:
        # the position table has 128 rows: a longer sequence is refused by
        # the run's shape check, naming the Slice, not read out of bounds
        np.save(os.path.join(t, "ids.npy"), np.zeros((1, 129), np.int64))
        r = subprocess.run([icc, "run", so, "--input", "ids=" + os.path.join(t, "ids.npy")],
                           capture_output=True, text=True)
        ok = r.returncode == 1 and "(Slice): S exceeds dim 0 of 'pos' (128)" in r.stderr
        print("%s a sequence longer than the position table is refused: %s" % ("ok  " if ok else "FAIL",
                                                                              r.stderr.strip()))
        run.failed += not ok

    filled(os.path.join(t, "filled.onnx"))
    so = run.compile("filled")
    for b, s in ((1, 1), (2, 7), (3, 64)) if so else ():
        x = np.random.default_rng(s).standard_normal((b, s, 4)).astype(np.float32)
        run.check("filled", so, {"x": x}, "ConstantOfShape and Expand by Shape, B %d S %d" % (b, s))

    tiled(os.path.join(t, "tiled.onnx"))
    so = run.compile("tiled")
    for b, w in ((1, 1), (2, 7), (5, 33)) if so else ():
        rng = np.random.default_rng(b * 100 + w)
        feeds = {"x": rng.standard_normal((b, 3, w)).astype(np.float32),
                 "z": rng.standard_normal((1, 4)).astype(np.float32)}
        run.check("tiled", so, feeds, "Tile by constant and by Shape-computed repeats, B %d W %d" % (b, w))

    sliced(os.path.join(t, "sliced.onnx"))
    so = run.compile("sliced")
    for b, n in ((1, 5), (2, 9), (3, 64)) if so else ():
        x = np.random.default_rng(n).standard_normal((b, n, 4)).astype(np.float32)
        run.check("sliced", so, {"x": x}, "Slices [1:], [-3:], [2:5], [1:-1], [-4:-1], [0:1e9], [3::-1], "
                  "[4:1:-1] of T, B %d T %d" % (b, n))
    if so:
        # T 4 is too short for [2:5], which the compiled slice takes 3 of:
        # refused by the run's shape check, naming the node (the
        # interpreter and ONNX Runtime give the 2 there are)
        np.save(os.path.join(t, "x.npy"), np.zeros((1, 4, 4), np.float32))
        r = subprocess.run([icc, "run", so, "--input", "x=" + os.path.join(t, "x.npy")], capture_output=True, text=True)
        ok = r.returncode == 1 and r.stderr.count("\n") == 1 and "must be at least 5" in r.stderr and "(Slice)" in r.stderr
        print("%s a T shorter than a compiled slice needs is refused: %s" % ("ok  " if ok else "FAIL", r.stderr.strip()))
        run.failed += not ok

    # Pad of symbolic C and T in each mode, grown and cropped; what each
    # cannot take (nothing to repeat, a T shorter than its crops) fails
    # compiled as interpreted, in one line, instead of reading out of bounds
    # (ONNX Runtime's reflect needs the kept part >= 2 and longer than its pads)
    pads = (("pad", padded, "of", ((1, 4, 4), (2, 5, 9), (1, 6, 64)), 0, "cannot pad an empty dim 2 in this mode",
             "of an empty symbolic T fails as the interpreter does"),
            ("crop", cropped, "cropping", ((1, 4, 6), (2, 5, 9), (1, 3, 4)), 1, "negative pads crop 2 from dim 2",
             "a T shorter than its crops fails as the interpreter does"))
    for kind, build, what, sizes, short, refusal, refused in pads:
        for mode in ("reflect", "edge", "wrap", "constant"):
            name = "%s_%s" % (kind, mode)
            build(os.path.join(t, name + ".onnx"), mode)
            so = run.compile(name)
            for b, c, n in sizes if so else ():
                x = np.random.default_rng(c * n).standard_normal((b, c, n)).astype(np.float32)
                run.check(name, so, {"x": x}, "Pad (%s) %s symbolic C and T, B %d C %d T %d" % (mode, what, b, c, n))
            if so and (kind == "crop" or mode != "constant"):
                run.same_refusal(name, so, np.zeros((1, 4, short), np.float32), refusal,
                                 "Pad (%s): %s" % (mode, refused))

    fixed_length(os.path.join(t, "fixed_length.onnx"))
    so = run.compile("fixed_length")
    for b, n in ((1, 10), (2, 64), (1, 100), (3, 1)) if so else ():
        x = np.random.default_rng(n).standard_normal((b, n)).astype(np.float32)
        run.check("fixed_length", so, {"x": x}, "N padded or cropped to 64 and 48 by pads of 64 - N and 48 - N, "
                  "B %d N %d" % (b, n))

    one_row(os.path.join(t, "one_row.onnx"))
    so = run.compile("one_row")
    for b, w in ((1, 40), (2, 7), (3, 1)) if so else ():
        x = np.random.default_rng(w).standard_normal((b, 8, 1, w)).astype(np.float32)
        run.check("one_row", so, {"x": x}, "[B, H*W, 8] reshaped to [0, 1, Shape(x)[3], 8], B %d H 1 W %d" % (b, w))
    if so:
        np.save(os.path.join(t, "x.npy"), np.zeros((1, 8, 2, 5), np.float32))
        msgs = [subprocess.run([icc, "run", lib, "--input", "x=" + os.path.join(t, "x.npy")],
                               capture_output=True, text=True) for lib in (so, os.path.join(t, "one_row.onnx"))]
        ok = all(r.returncode == 1 and r.stderr.count("\n") == 1 and "'rows'" in r.stderr for r in msgs)
        print("%s the same at H 2 fails on the element count, compiled as interpreted: %s" % (
            "ok  " if ok else "FAIL", " / ".join(r.stderr.strip() for r in msgs)))
        run.failed += not ok

    anchors(os.path.join(t, "anchors.onnx"))
    so = run.compile("anchors")
    for b, hh, ww in ((1, 40, 40), (2, 5, 9), (1, 1, 3)) if so else ():
        x = np.random.default_rng(hh * ww).standard_normal((b, 4, hh, ww)).astype(np.float32)
        run.check("anchors", so, {"x": x}, "YOLOv8 anchors: float Range over W, ConstantOfShape [H*W, 1], "
                  "B %d H %d W %d" % (b, hh, ww))

    reductions(os.path.join(t, "reductions.onnx"))
    so = run.compile("reductions")
    for b, n in ((1, 7), (3, 33), (2, 1)) if so else ():
        x = (np.random.default_rng(b * n).random((b, n, 5)) + 0.1).astype(np.float32)
        run.check("reductions", so, {"x": x}, "ten reductions along a symbolic T and the last axis, B %d T %d" % (b, n))

    for cplx in (False, True):
        name = "spectrogram_c" if cplx else "spectrogram"
        spectrogram(os.path.join(t, name + ".onnx"), cplx)
        so = run.compile(name)
        for b, n in ((1, 400), (2, 97), (1, 33)) if so else ():
            x = np.random.default_rng(n).standard_normal((b, n, 2) if cplx else (b, n)).astype(np.float32)
            run.check(name, so, {"x": x}, "%s STFT power spectrogram (64-sample Hann frames every 16), B %d N %d"
                      % ("complex" if cplx else "real", b, n))

    dft_frames(os.path.join(t, "dft_frames.onnx"))
    so = run.compile("dft_frames")
    for b, f in ((1, 3), (2, 17), (1, 1)) if so else ():
        # against numpy's FFT in f64: ONNX Runtime's f32 transform at length
        # 80 (no power of 2) is off by 1.4e-4 of 25, icc's by 5e-6
        x = np.random.default_rng(f).standard_normal((b, f, 64)).astype(np.float32)
        np.save(os.path.join(t, "x.npy"), x)
        r = subprocess.run([icc, "run", so, "--input", "x=" + os.path.join(t, "x.npy"), "-o", os.path.join(t, "out")],
                           capture_output=True, text=True)
        spec = np.fft.rfft(x.astype(np.float64), n=80, axis=-1)
        want = {"y": np.stack([spec.real, spec.imag], -1), "z": np.fft.irfft(spec, n=80, axis=-1)[..., None]}
        ok, err = r.returncode == 0, 0.0
        for k, wv in want.items():
            got = np.load(os.path.join(t, "out", k + ".npy")) if ok else None
            ok = ok and got.shape == wv.shape and np.abs(got - wv).max() <= 2e-6 * np.abs(wv).max() + 1e-6
            err = max(err, float(np.abs(got - wv).max()) if ok else float("nan"))
        print("%s DFT of frames along -2 (zero-padded to 80, onesided) and its inverse vs numpy's f64 FFT, B %d F %d: "
              "max abs error %.3g%s" % ("ok  " if ok else "FAIL", b, f, err, "" if r.returncode == 0 else " (" +
                                        r.stderr.strip() + ")"))
        run.failed += not ok

    elements(os.path.join(t, "elements.onnx"))
    so = run.compile("elements")
    for b, n in ((1, 5), (2, 40), (3, 3)) if so else ():
        rng = np.random.default_rng(n)
        feeds = {"x": rng.standard_normal((b, n)).astype(np.float32),
                 "i": np.stack([rng.permutation(n)[:3] - n * (r % 2) for r in range(b)]).astype(np.int64)}
        run.check("elements", so, feeds, "GatherElements and ScatterElements along a symbolic N, B %d N %d" % (b, n))
    if so:
        # an index past the run's N is refused, compiled as interpreted
        np.save(os.path.join(t, "x.npy"), np.zeros((1, 4), np.float32))
        np.save(os.path.join(t, "i.npy"), np.array([[0, 1, 4]], np.int64))
        msgs = [subprocess.run([icc, "run", lib, "--input", "x=" + os.path.join(t, "x.npy"), "--input",
                                "i=" + os.path.join(t, "i.npy")], capture_output=True, text=True)
                for lib in (so, os.path.join(t, "elements.onnx"))]
        ok = all(r.returncode == 1 and r.stderr.count("\n") == 1 for r in msgs) and \
            "an index is out of range for a dim of N" in msgs[0].stderr
        print("%s an index past a symbolic N is refused as the interpreter refuses it: %s" % (
            "ok  " if ok else "FAIL", " / ".join(r.stderr.strip() for r in msgs)))
        run.failed += not ok

    resampler(os.path.join(t, "resampler.onnx"))
    so = run.compile("resampler")
    for b, n in ((1, 16), (2, 15), (1, 1)) if so else ():
        x = np.random.default_rng(n).standard_normal((b, n)).astype(np.float32)
        run.check("resampler", so, {"x": x}, "a strided Conv's columns cut to (N + 2 - 1) / 2 from Shape, and "
                  "Range over it, B %d N %d" % (b, n))

    stateful(os.path.join(t, "stateful.onnx"))
    so = run.compile("stateful")
    for b, c, n in ((1, 2, 5), (3, 4, 7), (2, 1, 1)) if so else ():
        rng = np.random.default_rng(b * 10 + n)
        feeds = {"x": rng.standard_normal((b, n, 8)).astype(np.float32),
                 "ctx": rng.standard_normal((b, c, 8)).astype(np.float32),
                 "state": rng.standard_normal((2, b, 16)).astype(np.float32)}
        run.check("stateful", so, feeds, "unnamed batch dims joined by Concat and LSTM, N %d C %d T %d" % (b, c, n))
    if so:
        # a state whose batch is not the audio's is refused at the input
        # check, in one line naming both inputs
        np.save(os.path.join(t, "x.npy"), np.zeros((3, 5, 8), np.float32))
        np.save(os.path.join(t, "ctx.npy"), np.zeros((3, 2, 8), np.float32))
        np.save(os.path.join(t, "state.npy"), np.zeros((2, 2, 16), np.float32))
        r = subprocess.run([icc, "run", so] + ["--input=%s=%s" % (k, os.path.join(t, k + ".npy"))
                                               for k in ("x", "ctx", "state")], capture_output=True, text=True)
        ok = r.returncode == 1 and r.stderr.count("\n") == 1 and "input 'state' dim 1" in r.stderr
        print("%s a state of another batch is refused: %s" % ("ok  " if ok else "FAIL", r.stderr.strip()))
        run.failed += not ok

    by_input_values(os.path.join(t, "byvalue.onnx"))
    run.expect_error("byvalue", ["--bind", "'shape'"], [], "a Reshape by an input's values names it for --bind")
    by_data_values(os.path.join(t, "bydata.onnx"))
    run.expect_error("bydata", ["--bind", "'s'"], ["'x'"], "a Reshape by data names the input that decides it")

    merged_rows(os.path.join(t, "rows.onnx"))
    run.expect_error("rows", ["node 'rows' (Reshape)", "--shape"], ["--bind"],
                     "a dim no input value decides gets no --bind hint")

    print("symbolic dims: %s" % ("all passed" if not run.failed else "%d failed" % run.failed))
    return 1 if run.failed else 0


if __name__ == "__main__":
    sys.exit(main())
