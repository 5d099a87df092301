#!/usr/bin/env python3
"""Symbolic height and width (derived symbols, docs/ir.md), against ONNX Runtime.

Each model has input x f32[1, 3, 'H', 'W']. For each:
- `icc info` must print the output's dims as derived symbols (no '?') where
  shape inference can express them;
- `icc run` (the interpreter) at three H/W values must match ONNX Runtime
  (rtol 1e-4, atol 1e-5);
- compiled without --shape, at -O2 and -O3, the library must match ONNX
  Runtime at the same three sizes (the runtime computes the derived dims
  from the input's), or, for the forms not compiled yet, be refused in one
  line that names the node and says to pin with --shape (never --bind: no
  input's values decide these dims);
- compiled with --shape pinned at one size it must match ONNX Runtime there.
SAME padding at a stride > 1 (Conv, depthwise Conv, MaxPool, AveragePool
counting the padding or not), whose pads follow from the run's size, is
checked at more sizes: odd and even, 1, and the stride.
The DBNet-, YOLO- and MobileNet-style models of bench/models/zoo.py, with H
and W made symbolic, must print derived output dims and match ONNX Runtime
interpreted and compiled (-O3, not pinned) at two sizes. An H that makes a
window larger than its padded input must fail in one line, exit 1, as the
interpreter's Conv/MaxPool shape check says, and so must the compiled
library, naming the node and the dim that came out negative; sizes whose
branches disagree (an upsampled H/2*2 added to an odd H) fail both in ONNX
Runtime and in the library, which names the node. Split of a symbolic dim
(opset 18): two chunks at any size, three where 3 divides it (other sizes
refused in one line naming the Split), constant sizes where they add up.
A symbolic batch beside the symbolic H and W: the NCHW convolutions and
pools per item of the batch, a BatchNormalization after a pool, at batches
1 to 3.

    python3 tests/models/symbolic_hw.py build/icc
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
TMP = tempfile.mkdtemp(prefix="icc_symhw_")
SIZES = [(17, 23), (32, 32), (9, 40)]
fails = 0


def report(ok, what):
    global fails
    print(("ok   " if ok else "FAIL ") + what)
    fails += not ok


def weights(r, name, *shape):
    return nh.from_array((r.standard_normal(shape) * 0.3).astype(np.float32), name)


def save(tag, nodes, inits, c=3, batch=1):
    """The model x f32[batch, c, H, W] -> y, saved under TMP."""
    g = h.make_graph(nodes, tag, [h.make_tensor_value_info("x", P.FLOAT, [batch, c, "H", "W"])],
                     [h.make_tensor_value_info("y", P.FLOAT, None)], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    path = f"{TMP}/{tag}.onnx"
    onnx.save(m, path)
    return path


# The forms compiled with a symbolic H/W refuse in one line (none now).
REFUSED = set()
# SAME padding at a stride > 1 depends on the input's size mod the stride
# (computed at run time): more sizes, odd and even, 1 and the stride.
SAME_SIZES = SIZES + [(16, 15), (1, 2), (3, 6), (2, 1), (30, 31), (61, 70)]
EXTRA = {"stride2_same_pool": SAME_SIZES, "same_upper_s2": SAME_SIZES, "same_lower": SAME_SIZES,
         "same_pools": SAME_SIZES,
         # rows narrower than the blocked taps' tile of 10 (3 with AVX2)
         "blocked_taps": SIZES + [(3, 1), (2, 2), (4, 5), (5, 9), (6, 10), (7, 11), (9, 21)]}


def models():
    r = np.random.default_rng(0)
    sc = nh.from_array(np.array([1, 1, 2, 2], np.float32), "sc")
    half = nh.from_array(np.array([1, 1, 0.5, 0.5], np.float32), "half")
    yield "conv_pool_resize", True, [
        h.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        h.make_node("Relu", ["c"], ["r"]),
        h.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        h.make_node("Resize", ["p", "", "sc"], ["y"], mode="nearest")], [weights(r, "w", 8, 3, 3, 3), sc]
    yield "stride2_same_pool", True, [
        h.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
        h.make_node("Sigmoid", ["c"], ["s"]),
        h.make_node("AveragePool", ["s"], ["y"], kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")], \
        [weights(r, "w", 4, 3, 3, 3), weights(r, "b", 4)]
    # SAME at a stride > 1: a 3x3 conv, a depthwise one and a 1x1 (window
    # narrower than the stride: no padding or one at the start) with fused
    # activations
    yield "same_upper_s2", True, [
        h.make_node("Conv", ["x", "w1", "b1"], ["a"], strides=[2, 2], auto_pad="SAME_UPPER"),
        h.make_node("Relu", ["a"], ["ar"]),
        h.make_node("Conv", ["ar", "wd"], ["d"], strides=[2, 2], group=8, auto_pad="SAME_UPPER"),
        h.make_node("Clip", ["d", "lo", "hi"], ["dr"]),
        h.make_node("Conv", ["dr", "wp"], ["y"], strides=[2, 2], auto_pad="SAME_UPPER")], \
        [weights(r, "w1", 8, 3, 3, 3), weights(r, "b1", 8), weights(r, "wd", 8, 1, 3, 3),
         weights(r, "wp", 16, 8, 1, 1), nh.from_array(np.array(0, np.float32), "lo"),
         nh.from_array(np.array(6, np.float32), "hi")]
    # SAME_LOWER: even and odd windows, strides 3 and 2, a depthwise 5x5
    # (ONNX Runtime takes no dilation with SAME)
    yield "same_lower", True, [
        h.make_node("Conv", ["x", "w1"], ["a"], strides=[3, 2], auto_pad="SAME_LOWER"),
        h.make_node("Conv", ["a", "wd", "bd"], ["d"], strides=[2, 2], group=6, auto_pad="SAME_LOWER"),
        h.make_node("Conv", ["d", "w2"], ["y"], strides=[2, 2], auto_pad="SAME_LOWER")], \
        [weights(r, "w1", 6, 3, 4, 3), weights(r, "wd", 6, 1, 5, 5), weights(r, "bd", 6), weights(r, "w2", 4, 6, 2, 2)]
    # the pools at a stride > 1 with SAME padding, counting it or not (SAME
    # ignores ceil_mode)
    yield "same_pools", True, [
        h.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"),
        h.make_node("AveragePool", ["p"], ["q"], kernel_shape=[2, 3], strides=[2, 2], auto_pad="SAME_LOWER",
                    count_include_pad=1, ceil_mode=1),
        h.make_node("AveragePool", ["q"], ["u"], kernel_shape=[3, 3], strides=[2, 3], auto_pad="SAME_LOWER"),
        h.make_node("MaxPool", ["u"], ["y"], kernel_shape=[2, 2], strides=[2, 2], auto_pad="SAME_LOWER")], []
    # 16-channel 3x3 convs on blocks over a symbolic W: each stores into
    # the next one's padded input (fuse's pad-out over symbols) and runs
    # the tile whose taps share broadcasts, its last tile shifted back, or
    # clamped where the row is shorter than the tile
    yield "blocked_taps", True, [
        h.make_node("Conv", ["x", "w0", "b0"], ["a"], kernel_shape=[1, 1]),
        h.make_node("Relu", ["a"], ["ar"]),
        h.make_node("Conv", ["ar", "w1", "b1"], ["c"], pads=[1, 1, 1, 1]),
        h.make_node("Relu", ["c"], ["cr"]),
        h.make_node("Conv", ["cr", "w2"], ["y"], pads=[1, 1, 1, 1])], \
        [weights(r, "w0", 16, 3, 1, 1), weights(r, "b0", 16), weights(r, "w1", 16, 16, 3, 3), weights(r, "b1", 16),
         weights(r, "w2", 16, 16, 3, 3)]
    # two branches halving H the same way: Add and Concat need equal dims
    yield "two_branches", True, [
        h.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1], strides=[2, 2]),
        h.make_node("Conv", ["x", "w2"], ["b"], strides=[2, 2]),
        h.make_node("Add", ["a", "b"], ["s"]),
        h.make_node("Concat", ["s", "b"], ["y"], axis=1)], [weights(r, "w1", 4, 3, 3, 3), weights(r, "w2", 4, 3, 1, 1)]
    yield "concat_spatial_resize_half", True, [
        h.make_node("Concat", ["x", "x"], ["c"], axis=2),
        h.make_node("MaxPool", ["c"], ["p"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
        h.make_node("Resize", ["p", "", "half"], ["y"], mode="linear")], [half]
    # scales that are not integers or their reciprocals: the output dim
    # floor(H * m / 2^e) of the f32 scale m / 2^e (0.3 is 5033165 / 2^24).
    # (Scales whose f32 lies below the decimal, such as 0.7, are avoided:
    # ONNX Runtime rounds dim * scale in f32, so 60 * 0.7 gives 42 there
    # and 41 in the interpreter and ONNX's reference, which multiply in
    # double.)
    yield "resize_fractional", True, [
        h.make_node("Resize", ["x", "", "s15"], ["a"], mode="linear"),
        h.make_node("Resize", ["a", "", "s075"], ["b"], mode="nearest"),
        h.make_node("Resize", ["b", "", "s03"], ["y"], mode="cubic")], \
        [nh.from_array(np.array([1, 1, 1.5, 1.5], np.float32), "s15"),
         nh.from_array(np.array([1, 1, 0.75, 1.25], np.float32), "s075"),
         nh.from_array(np.array([1, 1, 0.3, 0.6], np.float32), "s03")]
    yield "flatten", True, [
        h.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        h.make_node("Flatten", ["c"], ["y"], axis=1)], [weights(r, "w", 8, 3, 3, 3)]
    yield "conv_transpose", True, [
        h.make_node("ConvTranspose", ["x", "wt"], ["t"], strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]),
        h.make_node("ConvTranspose", ["t", "wu"], ["y"], strides=[2, 2], auto_pad="SAME_UPPER")], \
        [weights(r, "wt", 3, 4, 3, 3), weights(r, "wu", 4, 2, 2, 2)]
    # a depthwise and a pointwise conv with fused activations, a global pool
    yield "dw_pw_gap", False, [
        h.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1], strides=[2, 2]),
        h.make_node("Clip", ["a", "lo", "hi"], ["ar"]),
        h.make_node("Conv", ["ar", "wd"], ["d"], pads=[1, 1, 1, 1], group=16),
        h.make_node("Relu", ["d"], ["dr"]),
        h.make_node("Conv", ["dr", "wp"], ["p"]),
        h.make_node("GlobalAveragePool", ["p"], ["y"])], \
        [weights(r, "w1", 16, 3, 3, 3), weights(r, "wd", 16, 1, 3, 3), weights(r, "wp", 24, 16, 1, 1),
         nh.from_array(np.array(0, np.float32), "lo"), nh.from_array(np.array(6, np.float32), "hi")]
    # YOLOv8's C2f and SPPF on blocked data: a channel Split into whole
    # blocks (Split of the blocked twin), window pools over the symbolic
    # plane (pool_blocked.c): 5x5 stride 1, an AveragePool counting its
    # pads at stride 2, a MaxPool at stride 2 with ceil_mode
    yield "c2f_sppf", True, [
        h.make_node("Conv", ["x", "w1", "b1"], ["a"], pads=[1, 1, 1, 1]),
        h.make_node("Sigmoid", ["a"], ["as"]),
        h.make_node("Mul", ["a", "as"], ["a1"]),
        h.make_node("Split", ["a1", "sp"], ["s0", "s1"], axis=1),
        h.make_node("Conv", ["s1", "w2"], ["m"], pads=[1, 1, 1, 1]),
        h.make_node("Add", ["s1", "m"], ["ma"]),
        h.make_node("Concat", ["s0", "s1", "ma"], ["cc"], axis=1),
        h.make_node("Conv", ["cc", "w3"], ["c3"]),
        h.make_node("MaxPool", ["c3"], ["p1"], kernel_shape=[5, 5], pads=[2, 2, 2, 2]),
        h.make_node("MaxPool", ["p1"], ["p2"], kernel_shape=[5, 5], pads=[2, 2, 2, 2]),
        h.make_node("Concat", ["c3", "p1", "p2"], ["sp3"], axis=1),
        h.make_node("Conv", ["sp3", "w4"], ["c4"]),
        h.make_node("AveragePool", ["c4"], ["q"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                    count_include_pad=1),
        h.make_node("MaxPool", ["q"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 0, 0], ceil_mode=1)], \
        [weights(r, "w1", 32, 3, 3, 3), weights(r, "b1", 32), nh.from_array(np.array([16, 16], np.int64), "sp"),
         weights(r, "w2", 16, 16, 3, 3), weights(r, "w3", 32, 48, 1, 1), weights(r, "w4", 16, 96, 1, 1)]
    # an AveragePool counting its pads with ceil_mode over the symbolic plane
    # (NCHW: the last window's divisor stops at the end pad, from the run's size)
    yield "avgpool_ceil_counted", True, [
        h.make_node("AveragePool", ["x"], ["a"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                    ceil_mode=1, count_include_pad=1),
        h.make_node("AveragePool", ["a"], ["y"], kernel_shape=[2, 2], strides=[2, 2], pads=[1, 1, 0, 0],
                    ceil_mode=1, count_include_pad=1)], []
    # the same after a blocked conv: -O3's layout pass leaves that pool NCHW
    # (pool_blocked.c does not take it over a symbolic plane)
    yield "conv_avgpool_ceil_counted", True, [
        h.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        h.make_node("AveragePool", ["c"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                    ceil_mode=1, count_include_pad=1)], [weights(r, "w", 16, 3, 3, 3)]
    # zeros around symbolic dims (the layout pass's padded conv inputs): H+4, W+3
    yield "pad_constant", True, [
        h.make_node("Pad", ["x", "pads"], ["p"]),
        h.make_node("Relu", ["p"], ["y"])], [nh.from_array(np.array([0, 0, 1, 2, 0, 0, 3, 1], np.int64), "pads")]
    # pieces of symbolic lengths along the axis, through a Reshape's -1
    yield "reshape_concat_boxes", True, [
        h.make_node("Conv", ["x", "w1"], ["a"], strides=[2, 2]),
        h.make_node("Conv", ["a", "w2"], ["b"], strides=[2, 2]),
        h.make_node("Reshape", ["a", "s1"], ["ar"]),
        h.make_node("Reshape", ["b", "s1"], ["br"]),
        h.make_node("Concat", ["ar", "br"], ["c"], axis=2),
        h.make_node("Transpose", ["c"], ["y"], perm=[0, 2, 1])], \
        [weights(r, "w1", 6, 3, 1, 1), weights(r, "w2", 6, 6, 1, 1), nh.from_array(np.array([1, 6, -1], np.int64), "s1")]


def interpreted(path, x, tag):
    np.save(f"{TMP}/{tag}_x.npy", x)
    r = subprocess.run([ICC, "run", path, "--input", f"x={TMP}/{tag}_x.npy", "-o", f"{TMP}/{tag}_out"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return np.load(f"{TMP}/{tag}_out/y.npy"), ""


for tag, derived, nodes, inits in models():
    path = save(tag, nodes, inits)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    info = subprocess.run([ICC, "info", path], capture_output=True, text=True).stdout
    yline = next((l for l in info.splitlines() if l.strip().startswith("y:")), "")
    if derived:
        report("?" not in yline and "H" in yline and "W" in yline, f"{tag}: info prints derived dims ({yline.strip()})")
    sizes = EXTRA.get(tag, SIZES)
    for hh, ww in sizes:
        x = np.random.default_rng(hh * ww).standard_normal((1, 3, hh, ww)).astype(np.float32)
        want = sess.run(None, {"x": x})[0]
        got, err = interpreted(path, x, f"{tag}_{hh}x{ww}")
        ok = got is not None and got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-5)
        report(ok, f"{tag}: interpreter vs ORT at H={hh} W={ww} {want.shape} {err}")
    for opt in ("-O2", "-O3"):
        so = f"{TMP}/{tag}{opt}.so"
        r = subprocess.run([ICC, path, opt, "-o", so], capture_output=True, text=True)
        msg = r.stderr.strip()
        if tag in REFUSED:
            report(r.returncode == 1 and len(msg.splitlines()) == 1 and "--bind" not in msg and "'y'" in msg and
                   not os.path.exists(so), f"{tag} {opt}: unpinned compile refused in one line: {msg}")
            continue
        report(r.returncode == 0, f"{tag} {opt}: compiles with symbolic H/W {msg}")
        for hh, ww in sizes if r.returncode == 0 else []:
            x = np.random.default_rng(hh * ww).standard_normal((1, 3, hh, ww)).astype(np.float32)
            got, err = interpreted(so, x, f"{tag}{opt}_{hh}x{ww}")
            want = sess.run(None, {"x": x})[0]
            ok = got is not None and got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-5)
            report(ok, f"{tag} {opt}: compiled vs ORT at H={hh} W={ww} {want.shape} {err}")
    hh, ww = SIZES[0]
    so = f"{TMP}/{tag}_pinned.so"
    r = subprocess.run([ICC, path, f"--shape=x:1x3x{hh}x{ww}", "-o", so], capture_output=True, text=True)
    x = np.random.default_rng(1).standard_normal((1, 3, hh, ww)).astype(np.float32)
    np.save(f"{TMP}/{tag}_px.npy", x)
    rr = subprocess.run([ICC, "run", so, "--input", f"x={TMP}/{tag}_px.npy", "-o", f"{TMP}/{tag}_pout"],
                        capture_output=True, text=True) if r.returncode == 0 else r
    ok = rr.returncode == 0 and np.allclose(np.load(f"{TMP}/{tag}_pout/y.npy"), sess.run(None, {"x": x})[0],
                                            rtol=1e-4, atol=1e-5)
    report(ok, f"{tag}: compiled with --shape=x:1x3x{hh}x{ww} vs ORT {rr.stderr.strip()}")

# the DBNet- and YOLO-style towers of bench/models/zoo.py with H and W made
# symbolic: derived output dims, and the interpreter vs ORT at two sizes
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "models"))
import zoo  # noqa: E402

for name, sizes, dims in (("dbnet", [(128, 192), (64, 96)], "floor((H-1)/32)+1"),
                          ("yolo", [(128, 96), (64, 64)], "floor((H-1)/32)+1"),
                          ("mobilenetv2", [(224, 224), (161, 97)], None),
                          ("mobilenetv3", [(224, 224), (64, 320)], None)):
    m = zoo.MODELS[name]()
    d = m.graph.input[0].type.tensor_type.shape.dim
    d[2].dim_param, d[3].dim_param = "H", "W"
    inp = m.graph.input[0].name
    path = f"{TMP}/{name}_sym.onnx"
    onnx.save(m, path)
    if dims:
        info = subprocess.run([ICC, "info", path], capture_output=True, text=True).stdout
        outs = [l.strip() for l in info.splitlines() if l.strip().startswith("output_")]
        report(outs and all("?" not in l and dims in l for l in outs), f"{name}: info prints {outs}")
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    so = f"{TMP}/{name}_sym.so"
    c = subprocess.run([ICC, path, "-O3", "-o", so], capture_output=True, text=True)
    report(c.returncode == 0, f"{name}: compiles at -O3 with symbolic H/W {c.stderr.strip()}")
    for hh, ww in sizes:
        x = np.random.default_rng(hh).standard_normal((1, 3, hh, ww)).astype(np.float32)
        np.save(f"{TMP}/{name}_x.npy", x)
        want = sess.run(None, {inp: x})
        for what, model in (("interpreter", path), ("compiled", so)):
            if what == "compiled" and c.returncode:
                continue
            r = subprocess.run([ICC, "run", model, "--input", f"{inp}={TMP}/{name}_x.npy", "-o", f"{TMP}/{name}_out"],
                               capture_output=True, text=True)
            ok = r.returncode == 0 and all(np.allclose(np.load(f"{TMP}/{name}_out/{nm}.npy"), w, rtol=1e-4,
                                                       atol=1e-4) for nm, w in zip(names, want))
            report(ok, f"{name}: {what} vs ORT at H={hh} W={ww} {r.stderr.strip()}")

# a window larger than the padded input: one line, exit 1, interpreted and
# compiled (the runtime names the node that first gives the derived dim
# that came out negative, and the dim)
path = f"{TMP}/conv_pool_resize.onnx"
got, err = interpreted(path, np.zeros((1, 3, 1, 5), np.float32), "tiny")
report(got is None and len(err.splitlines()) == 1 and "node 'p' (MaxPool)" in err and "larger than" in err,
       f"H=1 through a 2x2 pool is refused: {err}")
got, err = interpreted(f"{TMP}/conv_pool_resize-O3.so", np.zeros((1, 3, 1, 5), np.float32), "tiny_c")
report(got is None and len(err.splitlines()) == 1 and "node 'p' (MaxPool): the input dims (H=1, W=5)" in err and
       "'H-2' negative" in err, f"compiled: H=1 through a 2x2 pool is refused: {err}")
# branches that disagree at an odd H: ONNX Runtime fails, so does the library,
# naming the node (the compiled Add takes the two derived dims as equal)
path = save("odd_branches", [
    h.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
    h.make_node("Resize", ["p", "", "sc"], ["u"], mode="nearest"),
    h.make_node("Add", ["u", "x"], ["y"])], [nh.from_array(np.array([1, 1, 2, 2], np.float32), "sc")])
so = f"{TMP}/odd_branches.so"
c = subprocess.run([ICC, path, "-O3", "-o", so], capture_output=True, text=True)
report(c.returncode == 0, f"odd_branches compiles {c.stderr.strip()}")
got, err = interpreted(so, np.ones((1, 3, 8, 10), np.float32), "even")
report(got is not None and np.allclose(got, 2), f"odd_branches at 8x10 runs {err}")
got, err = interpreted(so, np.ones((1, 3, 9, 10), np.float32), "odd")
report(got is None and len(err.splitlines()) == 1 and "node 'y' (Add)" in err, f"odd_branches at 9x10 refused: {err}")

# Split of a symbolic dim (opset 18): two chunks are ceil(H/2) and floor(H/2)
# at any H; three are equal parts, so a W that 3 does not divide is refused
# in one line naming the node (ONNX Runtime makes the last chunk smaller, as
# the interpreter does); constant split sizes over a symbolic dim must add
# up to it (ONNX Runtime refuses other sizes too).
def save_multi(tag, nodes, inits, outs):
    g = h.make_graph(nodes, tag, [h.make_tensor_value_info("x", P.FLOAT, [1, 3, "H", "W"])],
                     [h.make_tensor_value_info(o, P.FLOAT, None) for o in outs], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 18)])
    m.ir_version = 8
    path = f"{TMP}/{tag}.onnx"
    onnx.save(m, path)
    return path


def run_multi(model, x, outs, tag):
    np.save(f"{TMP}/{tag}_x.npy", x)
    r = subprocess.run([ICC, "run", model, "--input", f"x={TMP}/{tag}_x.npy", "-o", f"{TMP}/{tag}_out"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return [np.load(f"{TMP}/{tag}_out/{o}.npy") for o in outs], ""


r = np.random.default_rng(3)
split_cases = [
    # halves of H after a stride-2 conv (a derived dim), and a pool of one
    ("split_halves", [
        h.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
        h.make_node("Split", ["c"], ["a", "b"], "sp", axis=2, num_outputs=2),
        h.make_node("MaxPool", ["b"], ["bp"], kernel_shape=[1, 2], strides=[1, 2])],
     [weights(r, "w", 4, 3, 3, 3)], ["a", "bp"], [(17, 23), (32, 32), (9, 40), (3, 5), (5, 6)], []),
    # three equal parts of W: sizes 3 divides, then two it does not
    ("split_thirds", [
        h.make_node("Split", ["x"], ["a", "b", "c"], "sp", axis=3, num_outputs=3),
        h.make_node("Add", ["a", "b"], ["s"])], [], ["s", "c"], [(17, 24), (5, 3), (9, 42)], [(8, 23), (8, 22)]),
    # constant sizes over a symbolic W: only W = 10
    ("split_const", [h.make_node("Split", ["x", "sizes"], ["a", "b"], "sp", axis=3),
                     h.make_node("Relu", ["a"], ["ar"])],
     [nh.from_array(np.array([4, 6], np.int64), "sizes")], ["ar", "b"], [(17, 10), (3, 10)], [(17, 11)]),
]
for tag, nodes, inits, outs, good, bad in split_cases:
    path = save_multi(tag, nodes, inits, outs)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    so = f"{TMP}/{tag}.so"
    c = subprocess.run([ICC, path, "-O3", "-o", so], capture_output=True, text=True)
    report(c.returncode == 0, f"{tag}: compiles at -O3 with symbolic H/W {c.stderr.strip()}")
    for hh, ww in good + bad:
        x = r.standard_normal((1, 3, hh, ww)).astype(np.float32)
        try:
            want, ort_err = sess.run(None, {"x": x}), ""
        except Exception as e:   # noqa: BLE001 (ONNX Runtime refuses the sizes)
            want, ort_err = None, str(e).splitlines()[0]
        for what, model in (("interpreter", path), ("compiled", so)):
            got, err = run_multi(model, x, outs, f"{tag}_{what}_{hh}x{ww}")
            if (hh, ww) in good or (what == "interpreter" and want is not None):
                ok = got is not None and want is not None and all(
                    g.shape == w.shape and np.allclose(g, w, rtol=1e-4, atol=1e-5) for g, w in zip(got, want))
                report(ok, f"{tag}: {what} vs ORT at H={hh} W={ww} {err} {ort_err}")
            else:
                ok = got is None and len(err.splitlines()) == 1 and "node 'sp' (Split)" in err
                report(ok, f"{tag}: {what} refuses H={hh} W={ww}: {err} (ORT: {ort_err or 'runs'})")

# The blocked (NCHWc) layout over symbolic dims (passes/layout.c): channels
# that are whole blocks (16, 32: AVX-512's 16 lanes, AVX2's 8) run ConvNCHWc
# on the run's batch and plane; an image's 3 channels as 1-channel blocks,
# strides 1 and 2, explicit, asymmetric, dilated, SAME (stride 1) and no
# padding, a flattened 1x1, a residual Add; sizes odd and even, smaller
# than the kernel's edge, and a symbolic batch. -O3 against ONNX Runtime.
r = np.random.default_rng(5)
lo6 = [nh.from_array(np.array(0, np.float32), "lo"), nh.from_array(np.array(6, np.float32), "hi")]
blocked_cases = [
    ("blocked_dense", 3, 1, [
        h.make_node("Conv", ["x", "w1", "b1"], ["a"], pads=[1, 1, 1, 1]),
        h.make_node("Relu", ["a"], ["ar"]),
        h.make_node("Conv", ["ar", "w2"], ["b"], pads=[0, 0, 1, 1], strides=[2, 2]),
        h.make_node("Clip", ["b", "lo", "hi"], ["br"]),
        h.make_node("Conv", ["br", "w3", "b3"], ["c"]),
        h.make_node("Add", ["c", "br"], ["s"]),
        h.make_node("Conv", ["s", "w4"], ["d"], pads=[2, 2, 2, 2], dilations=[2, 2]),
        h.make_node("Sigmoid", ["d"], ["ds"]),
        h.make_node("Conv", ["ds", "w5"], ["e"], auto_pad="SAME_UPPER"),
        h.make_node("Conv", ["e", "w6"], ["y"], strides=[2, 2])],
     [weights(r, "w1", 16, 3, 3, 3), weights(r, "b1", 16), weights(r, "w2", 32, 16, 3, 3), weights(r, "w3", 32, 32, 1, 1),
      weights(r, "b3", 32), weights(r, "w4", 16, 32, 3, 3), weights(r, "w5", 16, 16, 3, 3), weights(r, "w6", 16, 16, 3, 3)]
     + lo6, [(6, 7), (17, 23), (32, 32), (9, 40), (13, 6)]),
    ("blocked_tiny", 3, 1, [
        h.make_node("Conv", ["x", "w1"], ["a"], pads=[2, 2, 2, 2]),
        h.make_node("Conv", ["a", "w2"], ["b"], pads=[2, 2, 2, 2]),
        h.make_node("Relu", ["b"], ["br"]),
        h.make_node("Conv", ["br", "w3"], ["y"], pads=[1, 1, 1, 1], strides=[2, 2])],
     [weights(r, "w1", 16, 3, 5, 5), weights(r, "w2", 16, 16, 5, 5), weights(r, "w3", 16, 16, 3, 3)],
     [(1, 1), (1, 2), (2, 1), (3, 3), (4, 5)]),
    ("blocked_batch", 3, "N", [
        h.make_node("Conv", ["x", "w0"], ["x0"], pads=[1, 1, 1, 1]),
        h.make_node("Conv", ["x0", "w1", "b1"], ["a"], pads=[1, 1, 1, 1]),
        h.make_node("Relu", ["a"], ["ar"]),
        h.make_node("Conv", ["ar", "w2"], ["b"]),
        h.make_node("Add", ["b", "x0"], ["y"])],
     [weights(r, "w0", 16, 3, 3, 3), weights(r, "w1", 16, 16, 3, 3), weights(r, "b1", 16),
      weights(r, "w2", 16, 16, 1, 1)],
     [(1, 5, 7), (2, 9, 4), (3, 16, 16)]),
    # a strided conv's NCHW input of 24 channels, padded to whole blocks and
    # reordered (the one new reorder into blocks symbolic dims get)
    ("blocked_strided_pad", 24, 1, [
        h.make_node("Conv", ["x", "w1", "b1"], ["a"], pads=[1, 1, 1, 1], strides=[2, 2]),
        h.make_node("Relu", ["a"], ["ar"]),
        h.make_node("Conv", ["ar", "w2"], ["y"], pads=[1, 1, 1, 1])],
     [weights(r, "w1", 32, 24, 3, 3), weights(r, "b1", 32), weights(r, "w2", 16, 32, 3, 3)],
     [(1, 1), (5, 7), (16, 23), (33, 10)]),
    # depthwise convs blocked (ConvDwNCHWc over the run's plane: the row's
    # interior and its masked ends from the run's W), a squeeze-excite
    # whose global pool is a blocked ReduceMean, strides 1 and 2, a 5x5
    # window wider than the smallest planes
    ("blocked_depthwise", 3, "N", [
        h.make_node("Conv", ["x", "w0"], ["x0"], pads=[1, 1, 1, 1]),
        h.make_node("Conv", ["x0", "wd1", "bd1"], ["d1"], group=32, pads=[1, 1, 1, 1]),
        h.make_node("Relu", ["d1"], ["d1r"]),
        h.make_node("Conv", ["d1r", "wd2"], ["d2"], group=32, pads=[2, 1, 2, 2], strides=[2, 2], kernel_shape=[5, 5]),
        h.make_node("GlobalAveragePool", ["d2"], ["sq"]),
        h.make_node("Conv", ["sq", "ws", "bs"], ["ex"]),
        h.make_node("HardSigmoid", ["ex"], ["exs"]),
        h.make_node("Mul", ["d2", "exs"], ["sc"]),
        h.make_node("Conv", ["sc", "w3"], ["y"])],
     [weights(r, "w0", 32, 3, 3, 3), weights(r, "wd1", 32, 1, 3, 3), weights(r, "bd1", 32),
      weights(r, "wd2", 32, 1, 5, 5), weights(r, "ws", 32, 32, 1, 1), weights(r, "bs", 32),
      weights(r, "w3", 16, 32, 1, 1)],
     [(1, 1, 2), (1, 2, 3), (2, 9, 4), (1, 5, 40), (3, 16, 17)]),
]
for tag, c, batch, nodes, inits, sizes in blocked_cases:
    path = save(tag, nodes, inits, c, batch)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    so = f"{TMP}/{tag}.so"
    cp = subprocess.run([ICC, path, "-O3", "-o", so], capture_output=True, text=True)
    report(cp.returncode == 0, f"{tag}: compiles at -O3 with symbolic dims {cp.stderr.strip()}")
    ir = subprocess.run([ICC, path, "-O3", "--emit=ir"], capture_output=True, text=True).stdout
    report("ConvNCHWc(" in ir, f"{tag}: runs blocked (ConvNCHWc)")
    if tag == "blocked_depthwise":
        report(ir.count("ConvDwNCHWc(") == 2 and "ReduceMean(" in ir and "GlobalAveragePool(" not in ir,
               f"{tag}: depthwise convs blocked (ConvDwNCHWc), the global pool a blocked ReduceMean")
    for sz in sizes if cp.returncode == 0 else []:
        n, hh, ww = sz if len(sz) == 3 else (1,) + sz
        x = r.standard_normal((n, c, hh, ww)).astype(np.float32)
        want = sess.run(None, {"x": x})[0]
        got, err = interpreted(so, x, f"{tag}_{n}x{hh}x{ww}")
        ok = got is not None and got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-4)
        report(ok, f"{tag}: compiled vs ORT at N={n} H={hh} W={ww} {want.shape} {err}")
# A symbolic batch beside a symbolic H and W through the NCHW schedules
# (depthwise conv, ConvTranspose's stride phases, pools, a 5-channel
# conv): each runs per item of the batch (codegen/program.c,
# item_symbol), its buffers one image; a BatchNormalization after a pool
# (nothing to fold it into) runs as a per-channel Mul and Add (fold-bn).
# All must match ONNX Runtime at batches 1 to 3, -O2 and -O3.
r = np.random.default_rng(6)
path = save("nchw_batch", [
    h.make_node("Conv", ["x", "wd"], ["d"], group=5, pads=[1, 1, 1, 1]),
    h.make_node("Relu", ["d"], ["dr"]),
    h.make_node("ConvTranspose", ["dr", "wt", "bt"], ["t"], strides=[2, 2]),
    h.make_node("MaxPool", ["t"], ["m"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    h.make_node("AveragePool", ["m"], ["a"], kernel_shape=[2, 2], strides=[1, 1], pads=[0, 0, 1, 1]),
    h.make_node("BatchNormalization", ["a", "g", "be", "mu", "var"], ["an"]),
    h.make_node("Conv", ["an", "wc", "bc"], ["y"], pads=[1, 1, 1, 1])],
    [weights(r, "wd", 5, 1, 3, 3), weights(r, "wt", 5, 5, 2, 2), weights(r, "bt", 5), weights(r, "wc", 4, 5, 3, 3),
     weights(r, "bc", 4), weights(r, "g", 5), weights(r, "be", 5), weights(r, "mu", 5),
     nh.from_array(np.abs(r.standard_normal(5)).astype(np.float32) + 0.5, "var")], 5, "N")
sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
for opt in ("-O2", "-O3"):
    so = f"{TMP}/nchw_batch{opt}.so"
    cp = subprocess.run([ICC, path, opt, "-o", so], capture_output=True, text=True)
    report(cp.returncode == 0, f"nchw_batch: compiles at {opt} with N, H and W symbolic {cp.stderr.strip()}")
    for n, hh, ww in ((1, 8, 9), (2, 17, 23), (3, 5, 40)):
        x = r.standard_normal((n, 5, hh, ww)).astype(np.float32)
        want = sess.run(None, {"x": x})[0]
        got, err = interpreted(so, x, f"nchw_batch{opt}_{n}x{hh}x{ww}")
        ok = got is not None and got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-4)
        report(ok, f"nchw_batch: compiled {opt} vs ORT at N={n} H={hh} W={ww} {want.shape} {err}")

# a blocked 3x3 window without padding over H = 2: one line naming the conv
path = save("blocked_valid", [h.make_node("Conv", ["x", "w0"], ["a"]), h.make_node("Conv", ["a", "w"], ["y"], "cv")],
                    [weights(r, "w0", 16, 3, 1, 1), weights(r, "w", 16, 16, 3, 3)], 3, 1)
so = f"{TMP}/blocked_valid.so"
cp = subprocess.run([ICC, path, "-O3", "-o", so], capture_output=True, text=True)
got, err = interpreted(so, np.zeros((1, 3, 2, 5), np.float32), "blocked_valid")
report(cp.returncode == 0 and got is None and len(err.splitlines()) == 1 and "'cv'" in err,
       f"blocked 3x3 conv at H=2 is refused: {err}")
got, err = interpreted(so, np.ones((1, 3, 3, 5), np.float32), "blocked_valid3")
report(got is not None and got.shape == (1, 16, 1, 3), f"blocked 3x3 conv at H=3 runs {err}")

print(f"{'FAILED' if fails else 'passed'}: {fails} failures")
sys.exit(1 if fails else 0)
