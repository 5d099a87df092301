#!/usr/bin/env python3
"""The direct convolution schedules (codegen/lower/conv_dw.c, convtranspose.c)
against the reference interpreter, over random odd shapes.

Depthwise Conv (group = channels, channel multipliers 1-3) and ConvTranspose
(groups, strides 1-3, pads, output_padding, kernels 1-5) with shapes drawn from a
fixed seed: channel counts not multiples of the vector width, rows narrower than
a vector or than the kernel, strides, pads, dilations, with and without bias and
a fused Relu. Then blocked depthwise Conv (codegen/lower/conv_dw_blocked.c, made
by -O3's layout pass): channels a multiple of 16, kernels 1-7, strides 1-3 and
dilations per axis, pads, a fused Relu, Clip or HardSwish; and MaxPool /
AveragePool on blocked data (codegen/lower/pool_blocked.c) after a 1x1 Conv. Then Resize (codegen/lower/resample.c): nearest with each
nearest_mode, linear and cubic, each coordinate_transformation_mode but
tf_crop_and_resize, integer and fractional scales or sizes, odd shapes; nearest
must match bit for bit. Then dense Conv (group 1), which -O3 blocks (ConvNCHWc,
codegen/lower/conv_blocked.c): kernels 1x1 to 7x7, strides, pads, dilations, odd
block counts. Then fire modules (SqueezeNet/Inception-style): branch convs on one
input, Relu, a channel Concat that -O3 runs on the blocked data (passes/layout.c)
when every part is a whole number of blocks, sometimes a MaxPool, and a 1x1 Conv
reading the Concat; some parts are 12 channels wide, so the Concat stays NCHW.
Then MobileNetV3-style blocks whose channel counts are no multiple of the block
(24, 36, 40, 72, 120: padded to whole blocks by -O3's layout pass; not 20 on
16 lanes, where padding would add more than half again and the convs stay NCHW):
expand 1x1 Conv, depthwise Conv, an optional squeeze-excite, project 1x1 Conv, an
optional residual Add, Concat or MaxPool, and outputs taken inside the block,
one through an Exp (which must not run on the pad lanes); the number of blocked
convs is checked against what the rule predicts for this machine's block (input
channels are padded only for an input that is already blocked, or of a strided
conv). Then a Resize between two convs, which -O3 runs on the blocked data when
the first conv is blocked and the mode nearest or linear (counted too). Last, Transposes
that move a short last dim before the output's last, as from-blocked reorders do,
and Slices that keep the dims after their cut whole (bit for bit). Then convs along a
column ([N, C, H, 1] by a [kh, 1] window), which -O3 runs as convs along a row, and
chains of 1-D convs with Relu, a scalar Mul and residual Adds between them, which -O3 runs
blocked as convs along a row.
Each model is compiled at -O2 and -O3 and run by `icc verify`,
which compares the compiled outputs with the interpreter's.

    python3 tests/models/conv_direct.py build/icc [--cases 24] [--resize 24] [--blocked 24] [--pools 16] [--dense 24]
        [--concat 8] [--padded 16] [--resize-blocked 10] [--transpose 12] [--padout 16] [--pwdw 16] [--columns 12]
        [--conv1d 16]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh


def model(path, node, inits, x_shape, relu, opset=17):
    nodes = [node]
    out = "y"
    if relu:
        nodes.append(h.make_node("Relu", ["y"], ["r"]))
        out = "r"
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, x_shape)],
                     [h.make_tensor_value_info(out, T.FLOAT, None)], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    onnx.save(m, path)


def depthwise(rng, path):
    c = int(rng.integers(1, 20))
    mult = int(rng.choice([1, 1, 2, 3]))
    kh, kw = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    s, d = int(rng.integers(1, 4)), int(rng.choice([1, 1, 2]))
    hh, ww = int(rng.integers(kh * d, 30)), int(rng.integers(max(1, (kw - 1) * d + 1), 40))
    pads = [int(rng.integers(0, kh)), int(rng.integers(0, kw)), int(rng.integers(0, kh)), int(rng.integers(0, kw))]
    bias = bool(rng.integers(0, 2))
    inits = [nh.from_array(rng.standard_normal((c * mult, 1, kh, kw)).astype(np.float32), "w")]
    if bias:
        inits.append(nh.from_array(rng.standard_normal(c * mult).astype(np.float32), "b"))
    node = h.make_node("Conv", ["x", "w"] + (["b"] if bias else []), ["y"], group=c, kernel_shape=[kh, kw],
                       strides=[s, s + int(rng.integers(0, 2))], pads=pads, dilations=[d, d])
    model(path, node, inits, [int(rng.integers(1, 3)), c, hh, ww], bool(rng.integers(0, 2)))
    return "depthwise c=%d x%d k=%dx%d s=%d d=%d in=%dx%d pads=%s" % (c, mult, kh, kw, s, d, hh, ww, pads)


def depthwise_blocked(rng, path):
    """A depthwise Conv that -O3's layout pass makes ConvDwNCHWc (conv_dw_blocked.c):
    channels a multiple of 16 (so blocked with 4, 8 or 16 lanes), multiplier 1,
    followed by Relu, Clip (ReLU6) or HardSwish, fused as its epilogue."""
    c = 16 * int(rng.integers(1, 5))
    kh, kw = int(rng.integers(1, 8)), int(rng.integers(1, 8))
    s = [int(rng.integers(1, 4)), int(rng.integers(1, 4))]
    d = [int(rng.choice([1, 1, 2])), int(rng.choice([1, 1, 3]))]
    hh, ww = int(rng.integers((kh - 1) * d[0] + 1, 30)), int(rng.integers((kw - 1) * d[1] + 1, 40))
    pads = [int(rng.integers(0, kh)), int(rng.integers(0, kw)), int(rng.integers(0, kh)), int(rng.integers(0, kw))]
    bias = bool(rng.integers(0, 2))
    inits = [nh.from_array(rng.standard_normal((c, 1, kh, kw)).astype(np.float32), "w")]
    if bias:
        inits.append(nh.from_array(rng.standard_normal(c).astype(np.float32), "b"))
    nodes = [h.make_node("Conv", ["x", "w"] + (["b"] if bias else []), ["y"], group=c, kernel_shape=[kh, kw],
                         strides=s, pads=pads, dilations=d)]
    act = str(rng.choice(["none", "Relu", "Clip", "HardSwish"]))
    out = "y"
    if act == "Clip":
        inits += [nh.from_array(np.array(0, np.float32), "lo"), nh.from_array(np.array(6, np.float32), "hi")]
        nodes.append(h.make_node("Clip", ["y", "lo", "hi"], ["a"]))
        out = "a"
    elif act != "none":
        nodes.append(h.make_node(act, ["y"], ["a"]))
        out = "a"
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [int(rng.integers(1, 3)), c, hh, ww])],
                     [h.make_tensor_value_info(out, T.FLOAT, None)], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(onnx.shape_inference.infer_shapes(m, strict_mode=True), path)
    return "depthwise blocked c=%d k=%dx%d s=%s d=%s in=%dx%d pads=%s bias=%d %s" % (
        c, kh, kw, s, d, hh, ww, pads, bias, act)


def pool_blocked(rng, path):
    """A 1x1 Conv (16-multiple channels, so blocked at -O3) then MaxPool or AveragePool,
    which layout.c keeps blocked and pool_blocked.c runs with the lanes as the vector:
    kernels 1-5, strides, pads or an auto_pad, dilations (MaxPool), ceil_mode, count_include_pad."""
    c = 16 * int(rng.integers(1, 4))
    op = str(rng.choice(["MaxPool", "AveragePool"]))
    k = [int(rng.integers(1, 6)), int(rng.integers(1, 6))]
    d = [int(rng.choice([1, 1, 2])), int(rng.choice([1, 1, 2]))] if op == "MaxPool" else [1, 1]
    s = [int(rng.integers(1, 4)), int(rng.integers(1, 4))]
    pads = [int(rng.integers(0, k[0])), int(rng.integers(0, k[1])), int(rng.integers(0, k[0])),
            int(rng.integers(0, k[1]))]
    hh, ww = int(rng.integers((k[0] - 1) * d[0] + 1, 24)), int(rng.integers((k[1] - 1) * d[1] + 1, 30))
    attrs = dict(kernel_shape=k, strides=s, pads=pads, ceil_mode=int(rng.integers(0, 2)))
    if op == "MaxPool":
        attrs["dilations"] = d
    else:
        attrs["count_include_pad"] = int(rng.integers(0, 2))
    # an auto_pad (layout.c blocks it with the pads it stands for: PP-OCRv6's SAME_UPPER MaxPool)
    ap = str(rng.choice(["NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"]))
    if ap != "NOTSET":
        del attrs["pads"]
        attrs["auto_pad"] = ap
    inits = [nh.from_array(rng.standard_normal((c, c, 1, 1)).astype(np.float32), "w")]
    nodes = [h.make_node("Conv", ["x", "w"], ["y"]), h.make_node(op, ["y"], ["p"], **attrs),
             h.make_node("Relu", ["p"], ["r"])]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [int(rng.integers(1, 3)), c, hh, ww])],
                     [h.make_tensor_value_info("r", T.FLOAT, None)], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 19)])
    m.ir_version = 9
    # no onnx shape inference: with ceil_mode its rule for a last window that would start
    # in the padding differs from the spec's (which icc follows) in this onnx version
    onnx.save(m, path)
    return "pool blocked %s c=%d in=%dx%d %s" % (op, c, hh, ww, attrs)


def convtranspose(rng, path):
    group = int(rng.choice([1, 1, 2, 3]))
    cg, mg = int(rng.integers(1, 6)), int(rng.integers(1, 5))
    kh, kw = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    s = [int(rng.integers(1, 4)), int(rng.integers(1, 4))]
    pads = [int(rng.integers(0, kh)), int(rng.integers(0, kw)), int(rng.integers(0, kh)), int(rng.integers(0, kw))]
    opad = [int(rng.integers(0, s[0])), int(rng.integers(0, s[1]))]
    if rng.integers(0, 3) == 0:
        # kernel a multiple of the stride, unpadded: every phase spans the same input
        # columns, which convtranspose.c interleaves in one vector loop
        kh, kw = s[0] * int(rng.integers(1, 3)), s[1] * int(rng.integers(1, 3))
        pads, opad = [0, 0, 0, 0], [0, 0]
    hh, ww = int(rng.integers(1, 14)), int(rng.integers(1, 20))
    for i, (n, k) in enumerate(((hh, kh), (ww, kw))):
        if (n - 1) * s[i] + k - pads[i] - pads[i + 2] + opad[i] < 1:
            raise ValueError("no output along dim %d" % i)
    bias = bool(rng.integers(0, 2))
    inits = [nh.from_array(rng.standard_normal((group * cg, mg, kh, kw)).astype(np.float32), "w")]
    if bias:
        inits.append(nh.from_array(rng.standard_normal(group * mg).astype(np.float32), "b"))
    node = h.make_node("ConvTranspose", ["x", "w"] + (["b"] if bias else []), ["y"], group=group,
                       kernel_shape=[kh, kw], strides=s, pads=pads, output_padding=opad)
    model(path, node, inits, [int(rng.integers(1, 3)), group * cg, hh, ww], bool(rng.integers(0, 2)))
    return "convtranspose g=%d c=%d m=%d k=%dx%d s=%s in=%dx%d pads=%s opad=%s" % (
        group, cg, mg, kh, kw, s, hh, ww, pads, opad)


def dense(rng, path):
    """A group-1 Conv the layout pass blocks at -O3 (ConvNCHWc, conv_blocked.c): output
    channels a multiple of 8 (odd block counts too: a 2-block tile's clamped group), input
    channels a multiple of 8 or an image's few, kernels 1x1 to 7x7, strides 1-2, pads,
    dilations, batch 1-2, with and without bias and a fused Relu."""
    k = int(rng.choice([1, 1, 3, 3, 5, 7]))
    kh, kw = k, int(rng.choice([k, k, 1, 3]))
    m = 8 * int(rng.choice([1, 2, 3, 5, 6]))
    c = int(rng.choice([1, 3, 8, 16, 24, 40]))
    s = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
    d = [int(rng.choice([1, 1, 1, 2])), int(rng.choice([1, 1, 2]))]
    pads = [int(rng.integers(0, kh)), int(rng.integers(0, kw)), int(rng.integers(0, kh)), int(rng.integers(0, kw))]
    if rng.integers(0, 3) == 0:
        pads = [kh // 2, kw // 2, kh // 2, kw // 2]
    hh, ww = int(rng.integers((kh - 1) * d[0] + 1, 24)), int(rng.integers((kw - 1) * d[1] + 1, 40))
    bias = bool(rng.integers(0, 2))
    inits = [nh.from_array(rng.standard_normal((m, c, kh, kw)).astype(np.float32), "w")]
    if bias:
        inits.append(nh.from_array(rng.standard_normal(m).astype(np.float32), "b"))
    node = h.make_node("Conv", ["x", "w"] + (["b"] if bias else []), ["y"], kernel_shape=[kh, kw], strides=s,
                       pads=pads, dilations=d)
    model(path, node, inits, [int(rng.integers(1, 3)), c, hh, ww], bool(rng.integers(0, 2)))
    return "dense c=%d m=%d k=%dx%d s=%s d=%s in=%dx%d pads=%s" % (c, m, kh, kw, s, d, hh, ww, pads)


def column(rng, path):
    """A conv along a column, [N, C, H, 1] by a [kh, 1] window (a 1-D conv exported
    as 2-D), which -O3's layout pass turns into the same conv along a row ([N, C, 1, H]
    by [1, kh]) and then may block: kernels 1-7, strides 1-3, dilations 1-2, pads,
    group 1 or depthwise, batch 1-2, with and without bias and a fused Relu."""
    kh = int(rng.integers(1, 8))
    dw = rng.integers(0, 4) == 0
    c = int(rng.choice([3, 8, 16, 24, 32]))
    m = c if dw else 8 * int(rng.choice([1, 2, 3, 4]))
    s, d = int(rng.integers(1, 4)), int(rng.choice([1, 1, 2]))
    pads = [int(rng.integers(0, kh)), 0, int(rng.integers(0, kh)), 0]
    hh = int(rng.integers((kh - 1) * d + 1, 200))
    bias = bool(rng.integers(0, 2))
    inits = [nh.from_array(rng.standard_normal((m, 1 if dw else c, kh, 1)).astype(np.float32), "w")]
    if bias:
        inits.append(nh.from_array(rng.standard_normal(m).astype(np.float32), "b"))
    node = h.make_node("Conv", ["x", "w"] + (["b"] if bias else []), ["y"], kernel_shape=[kh, 1], strides=[s, 1],
                       pads=pads, dilations=[d, 1], group=c if dw else 1)
    model(path, node, inits, [int(rng.integers(1, 3)), c, hh, 1], bool(rng.integers(0, 2)))
    return "column c=%d m=%d k=%dx1 s=%d d=%d h=%d pads=%s%s" % (c, m, kh, s, d, hh, pads, " depthwise" if dw else "")


def conv1d(rng, path):
    """A chain of 1-3 1-D convs ([N, C, L] by [k]), which -O3's layout pass runs as
    convs along a row ([N, C, 1, L] by [1, k]) when they go blocked, the chain (and the
    Relu, the scalar Mul and the residual Add between them) on the blocked data: channels
    multiples of 8 and not, kernels 1-7, strides 1-2, dilations 1-2, pads, a depthwise
    conv sometimes, batch 1-2."""
    c = int(rng.choice([8, 16, 20, 32, 48]))
    n_conv = int(rng.integers(1, 4))
    length0 = length = int(rng.integers(16, 300))
    nodes, inits, prev, ch, what = [], [], "x", c, []
    for i in range(n_conv):
        k = int(rng.integers(1, 8))
        dw = rng.integers(0, 4) == 0
        m = ch if dw else int(rng.choice([8, 16, 24, 32]))
        st, d = int(rng.choice([1, 1, 2])), int(rng.choice([1, 1, 2]))
        if (k - 1) * d + 1 > length:
            k, d = 1, 1
        pads = [int(rng.integers(0, k)), int(rng.integers(0, k))]
        if rng.integers(0, 2):
            pads = [(k - 1) * d // 2, (k - 1) * d - (k - 1) * d // 2]
        inits.append(nh.from_array((rng.standard_normal((m, 1 if dw else ch, k)) * 0.3).astype(np.float32),
                                   "w%d" % i))
        ins = [prev, "w%d" % i]
        if rng.integers(0, 2):
            inits.append(nh.from_array(rng.standard_normal(m).astype(np.float32), "b%d" % i))
            ins.append("b%d" % i)
        nodes.append(h.make_node("Conv", ins, ["c%d" % i], kernel_shape=[k], strides=[st], dilations=[d], pads=pads,
                                 group=ch if dw else 1))
        what.append("%d->%d k%d s%d d%d p%s%s" % (ch, m, k, st, d, pads, " dw" if dw else ""))
        out, before = "c%d" % i, length
        length = (length + pads[0] + pads[1] - (k - 1) * d - 1) // st + 1
        if rng.integers(0, 2):
            nodes.append(h.make_node("Relu", [out], ["r%d" % i]))
            out = "r%d" % i
        if rng.integers(0, 3) == 0:
            inits.append(nh.from_array(np.array(0.5, np.float32), "h%d" % i))
            nodes.append(h.make_node("Mul", [out, "h%d" % i], ["m%d" % i]))
            out = "m%d" % i
        if m == ch and length == before and rng.integers(0, 2):
            nodes.append(h.make_node("Add", [out, prev], ["a%d" % i]))   # a residual
            out = "a%d" % i
            what.append("+res")
        prev, ch = out, m
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [int(rng.integers(1, 3)), c, length0])],
                     [h.make_tensor_value_info(prev, T.FLOAT, None)], inits)
    mo = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    mo.ir_version = 8
    onnx.save(onnx.shape_inference.infer_shapes(mo, strict_mode=True), path)
    return "conv1d L=%d %s" % (length0, " | ".join(what))


def fire(rng, path):
    """Branch convs (1x1, or 3x3 padded by 1) on one input, each with a Relu, their
    channel Concat (axis 1 or -3), maybe a MaxPool, then a 1x1 Conv on the result."""
    c = 16 * int(rng.integers(1, 4))
    odd = rng.integers(0, 4) == 0      # a 12-wide part: no whole number of blocks
    widths = [16 * int(rng.integers(1, 4)) for _ in range(int(rng.integers(2, 4)))]
    if odd:
        widths[-1] = 12
    hh, ww = int(rng.integers(3, 20)), int(rng.integers(3, 24))
    inits = [nh.from_array(rng.standard_normal((c, 3, 1, 1)).astype(np.float32), "w0")]
    nodes = [h.make_node("Conv", ["x", "w0"], ["s"]), h.make_node("Relu", ["s"], ["sr"])]
    parts = []
    for i, m in enumerate(widths):
        k = int(rng.choice([1, 3]))
        inits.append(nh.from_array((rng.standard_normal((m, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32),
                                   "w%d" % (i + 1)))
        inits.append(nh.from_array(rng.standard_normal(m).astype(np.float32), "b%d" % (i + 1)))
        nodes.append(h.make_node("Conv", ["sr", "w%d" % (i + 1), "b%d" % (i + 1)], ["e%d" % i], kernel_shape=[k, k],
                                 pads=[k // 2] * 4))
        nodes.append(h.make_node("Relu", ["e%d" % i], ["er%d" % i]))
        parts.append("er%d" % i)
    axis = int(rng.choice([1, -3]))
    nodes.append(h.make_node("Concat", parts, ["cat"], axis=axis))
    top = "cat"
    pool = bool(rng.integers(0, 2))
    if pool:
        nodes.append(h.make_node("MaxPool", ["cat"], ["pool"], kernel_shape=[3, 3], strides=[2, 2]))
        top = "pool"
    inits.append(nh.from_array(rng.standard_normal((16, sum(widths), 1, 1)).astype(np.float32), "wq"))
    nodes.append(h.make_node("Conv", [top, "wq"], ["y"]))
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [int(rng.integers(1, 3)), 3, hh, ww])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    onnx.save(m, path)
    return "fire c=%d parts=%s axis=%d in=%dx%d pool=%d" % (c, widths, axis, hh, ww, pool)


def padout(rng, path, cb):
    """A blocked conv (1x1 or 3x3, strides 1-2, with a Relu, an Add of a per-channel bias or
    nothing after it), a Concat of two, or a blocked MaxPool, AveragePool or depthwise conv
    after one, read only by a padded conv (k 3 or 5, pads 0 to k - 1
    on each side, not all 0, strides 1-2): the layout pass's explicit Pad joins the producer's
    kernel (fuse's pad-out), which stores into the padded buffer and zeroes its border.
    Returns its description and the number of such groups -O3 should form (1)."""
    n = int(rng.integers(1, 3))
    cin, m1, m2 = cb * int(rng.integers(1, 3)), cb * int(rng.integers(1, 4)), cb * int(rng.integers(1, 3))
    k1, s1 = int(rng.choice([1, 3])), int(rng.integers(1, 3))
    k2, s2 = int(rng.choice([3, 5])), int(rng.integers(1, 3))
    pads = [int(rng.integers(0, k2)) for _ in range(4)]
    if not any(pads):
        pads[int(rng.integers(0, 4))] = 1
    hh, ww = int(rng.integers(k2, 20)), int(rng.integers(k2, 36))
    mid = str(rng.choice(["Relu", "Add", "none", "Concat", "MaxPool", "AveragePool", "Depthwise"]))
    inits, nodes = [], []

    def conv(x, y, cout, cinp, kk, stride, pp):
        inits.append(nh.from_array((rng.standard_normal((cout, cinp, kk, kk)) / np.sqrt(cinp * kk * kk))
                                   .astype(np.float32), "w_" + y))
        inits.append(nh.from_array(rng.standard_normal(cout).astype(np.float32), "b_" + y))
        nodes.append(h.make_node("Conv", [x, "w_" + y, "b_" + y], [y], kernel_shape=[kk, kk], pads=pp,
                                 strides=[stride] * 2))

    conv("x", "c1", m1, cin, k1, s1, [k1 // 2] * 4)
    top = "c1"
    if mid == "Relu":
        nodes.append(h.make_node("Relu", ["c1"], ["r1"]))
        top = "r1"
    elif mid == "Add":
        inits.append(nh.from_array(rng.standard_normal((m1, 1, 1)).astype(np.float32), "bias"))
        nodes.append(h.make_node("Add", ["c1", "bias"], ["r1"]))
        top = "r1"
    elif mid == "Concat":
        conv("x", "c2", m1, cin, k1, s1, [k1 // 2] * 4)
        nodes.append(h.make_node("Concat", ["c1", "c2"], ["r1"], axis=1))
        top, m1 = "r1", 2 * m1
    elif mid in ("MaxPool", "AveragePool"):
        kp = int(rng.choice([2, 3]))
        nodes.append(h.make_node(mid, ["c1"], ["r1"], kernel_shape=[kp, kp], strides=[kp - 1] * 2,
                                 pads=[kp // 2 - (kp == 2)] * 4))
        top = "r1"
    elif mid == "Depthwise":
        inits.append(nh.from_array(rng.standard_normal((m1, 1, 3, 3)).astype(np.float32), "w_dw"))
        nodes.append(h.make_node("Conv", ["c1", "w_dw"], ["r1"], kernel_shape=[3, 3], pads=[1] * 4, group=m1))
        top = "r1"
    conv(top, "y", m2, m1, k2, s2, pads)
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [n, cin, hh, ww])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)], inits)
    mo = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    mo.ir_version = 8
    mo = onnx.shape_inference.infer_shapes(mo, strict_mode=True)
    plane = [d.dim_value for d in [v for v in mo.graph.value_info if v.name == top][0].type.tensor_type.shape.dim][2:]
    if any(plane[i] + pads[i] + pads[i + 2] < k2 for i in range(2)):
        raise ValueError("the padded plane %s is smaller than the window" % plane)
    onnx.save(mo, path)
    return "padout n=%d %d->%d k=%d s=%d %s -> %d k=%d s=%d pads=%s in=%dx%d" % (
        n, cin, m1, k1, s1, mid, m2, k2, s2, pads, hh, ww), 1


def cpad_ok(c, cb):
    """passes/layout.c's pad_ok: whole blocks, or padded by at most half again."""
    cp = (c + cb - 1) // cb * cb
    return c % cb == 0 or (c > cb and cp * 2 <= c * 3)


def padded(rng, path, cb):
    """A MobileNetV3-style block with channel counts that are no multiple of the block.
    Returns its description and how many convs -O3 should block."""
    n = int(rng.integers(1, 3))
    cin = int(rng.choice([16, 32, 24, 40]))
    e = int(rng.choice([24, 40, 72, 120, 20, 36]))
    o = int(rng.choice([cin, 24, 40, 20]))
    k, st = int(rng.choice([3, 5])), int(rng.choice([1, 2]))
    hh, ww = int(rng.integers(k, 16)), int(rng.integers(k, 18))
    act = str(rng.choice(["HardSwish", "Relu"]))
    se = bool(rng.integers(0, 2))
    tail = str(rng.choice(["none", "concat", "pool"]))
    inits, nodes = [], []

    def conv(x, y, cout, cinp, kk, group=1, stride=1, bias=True):
        nm = "w_" + y
        inits.append(nh.from_array((rng.standard_normal((cout, cinp // group, kk, kk)) /
                                    np.sqrt(cinp // group * kk * kk)).astype(np.float32), nm))
        ins = [x, nm]
        if bias:
            inits.append(nh.from_array(rng.standard_normal(cout).astype(np.float32), "b_" + y))
            ins.append("b_" + y)
        nodes.append(h.make_node("Conv", ins, [y], kernel_shape=[kk, kk], pads=[kk // 2] * 4, strides=[stride] * 2,
                                 group=group))

    # the layout pass's rule: a conv's output channels may be padded, its
    # input channels only when the input is already blocked (a twin) or
    # the conv is strided (its NCHW input is then padded and reordered)
    def dense_ok(cinp, cout, twin, stride=1):
        twin = twin or (stride > 1 and cpad_ok(cinp, cb))
        ib = cinp < cb and cinp % cb and not twin
        cp = cinp if ib else (cinp + cb - 1) // cb * cb
        return (cpad_ok(cout, cb) and (cinp % cb == 0 or twin or cinp < cb) and
                (cout + cb - 1) // cb * cb * cp * 2 <= cout * cinp * 3)

    conv("x", "ex", e, cin, 1)
    ex_b = dense_ok(cin, e, False)
    nodes.append(h.make_node(act, ["ex"], ["exa"]))
    conv("exa", "dw", e, e, k, group=e, stride=st)
    dw_b = cpad_ok(e, cb) and (e % cb == 0 or ex_b)
    blocked = ex_b + dw_b
    nodes.append(h.make_node(act, ["dw"], ["dwa"]))
    top = "dwa"
    if se:
        s = max(8, e // 4)
        nodes.append(h.make_node("GlobalAveragePool", ["dwa"], ["gap"]))
        conv("gap", "sq", s, e, 1)
        nodes.append(h.make_node("Relu", ["sq"], ["sqr"]))
        conv("sqr", "ex2", e, s, 1)
        nodes.append(h.make_node("HardSigmoid", ["ex2"], ["gate"], alpha=1.0 / 6, beta=0.5))
        nodes.append(h.make_node("Mul", ["dwa", "gate"], ["scaled"]))
        sq_b = dense_ok(e, s, dw_b)
        blocked += sq_b + dense_ok(s, e, sq_b)
        top = "scaled"
    conv(top, "pr", o, e, 1)
    pr_b = dense_ok(e, o, dw_b)
    y = "pr"
    if st == 1 and o == cin:
        nodes.append(h.make_node("Add", ["pr", "x"], ["res"]))
        y = "res"
    if tail == "concat":
        conv("x", "side", 16, cin, 1, stride=st)
        blocked += dense_ok(cin, 16, False, st)
        nodes.append(h.make_node("Concat", ["side", y], ["cat"], axis=1))
        y = "cat"
    elif tail == "pool":
        nodes.append(h.make_node("MaxPool", [y], ["pool"], kernel_shape=[2, 2], strides=[2, 2]))
        y = "pool"
    # a conv whose padded result is a graph output stays NCHW
    blocked += pr_b and not (o % cb and y == "pr")
    nodes.append(h.make_node("Exp", ["dw"], ["side_exp"]))
    outs = [h.make_tensor_value_info(v, T.FLOAT, None) for v in (y, "exa", "side_exp")]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [n, cin, hh, ww])], outs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    onnx.save(m, path)
    return ("padded cin=%d e=%d o=%d k=%d s=%d in=%dx%d %s se=%d tail=%s" % (cin, e, o, k, st, hh, ww, act, se, tail),
            blocked)


def transpose(rng, path):
    """A Transpose that moves the input's short last dim (up to 64, as a blocked
    layout's lanes) before the output's last dim (8 or more): the lanes become
    the serial loop inside the vector loop (codegen/lower/movement.c)."""
    r = int(rng.integers(3, 6))
    shape = [int(rng.integers(1, 4)) for _ in range(r - 2)] + [int(rng.integers(8, 40)), int(rng.choice([3, 8, 16, 64]))]
    perm = list(range(r))
    q = int(rng.integers(0, r - 1))
    perm.insert(q, perm.pop())   # the last dim to position q
    if perm[-1] == r - 1:
        perm[-1], perm[-2] = perm[-2], perm[-1]
    node = h.make_node("Transpose", ["x"], ["y"], perm=perm)
    model(path, node, [], shape, bool(rng.integers(0, 2)))
    return "transpose %s perm=%s" % (shape, perm)


def slice_runs(rng, path):
    """A unit-step Slice that cuts one dim and keeps the later ones whole (the Slice
    that drops a padded blocked layout's channels): contiguous runs of input
    elements, one when the dims before the cut are 1 (codegen/lower/movement.c)."""
    shape = [int(rng.choice([1, 1, 3])), int(rng.integers(2, 40)), int(rng.integers(4, 20)), int(rng.integers(4, 20))]
    axis = int(rng.choice([1, 1, 2]))
    lo = int(rng.integers(0, shape[axis] - 1))
    hi = int(rng.integers(lo + 1, shape[axis] + 1))
    inits = [nh.from_array(np.array([lo], np.int64), "st"), nh.from_array(np.array([hi], np.int64), "en"),
             nh.from_array(np.array([axis], np.int64), "ax")]
    node = h.make_node("Slice", ["x", "st", "en", "ax"], ["y"])
    model(path, node, inits, shape, bool(rng.integers(0, 2)))
    return "slice %s axis %d [%d, %d)" % (shape, axis, lo, hi)


def resize(rng, path):
    mode = str(rng.choice(["nearest", "nearest", "linear", "cubic"]))
    ctm = str(rng.choice(["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric"]))
    nmode = str(rng.choice(["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]))
    shape = [int(rng.integers(1, 3)), int(rng.integers(1, 6)), int(rng.integers(1, 12)), int(rng.integers(1, 20))]
    # integer factors (the repeat fast path) most often, else fractional up and down
    sc = [1.0, 1.0] + [float(rng.choice([1, 2, 2, 3, 4, 0.5, 1.5, 2.5, 0.75, 1.0001])) for _ in range(2)]
    inputs = ["x", "", "scales"]
    inits = [nh.from_array(np.array(sc, np.float32), "scales")]
    if rng.integers(0, 4) == 0:
        sizes = shape[:2] + [int(rng.integers(1, 2 * d + 4)) for d in shape[2:]]
        inputs, inits, sc = ["x", "", "", "sizes"], [nh.from_array(np.array(sizes, np.int64), "sizes")], sizes
    node = h.make_node("Resize", inputs, ["y"], mode=mode, coordinate_transformation_mode=ctm, nearest_mode=nmode)
    model(path, node, inits, shape, bool(rng.integers(0, 2)), opset=19)
    return "resize %s %s %s in=%s scales/sizes=%s" % (mode, ctm, nmode, shape, sc)


def resize_blocked(rng, path, cb):
    """A Resize between two convs, which -O3 runs on the blocked data when the conv
    before it is blocked and the mode is nearest or linear (scales [1, 1, sh, sw] or
    sizes [N, C, h, w]). Returns its description and how many Resizes -O3 should
    move to blocks."""
    n, cin = int(rng.integers(1, 3)), int(rng.choice([16, 32, 24, 48]))
    c = int(rng.choice([16, 32, 24]))
    hh, ww = int(rng.integers(1, 9)), int(rng.integers(1, 13))
    mode = str(rng.choice(["nearest", "nearest", "linear", "cubic"]))
    ctm = str(rng.choice(["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric"]))
    nmode = str(rng.choice(["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]))
    inits = [nh.from_array((rng.standard_normal((c, cin, 1, 1)) / np.sqrt(cin)).astype(np.float32), "w1"),
             nh.from_array(rng.standard_normal(c).astype(np.float32), "b1"),
             nh.from_array((rng.standard_normal((8, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32), "w2")]
    if rng.integers(0, 3) == 0:
        sc = [n, c, int(rng.integers(1, 2 * hh + 3)), int(rng.integers(1, 2 * ww + 3))]
        inits.append(nh.from_array(np.array(sc, np.int64), "sizes"))
        rin = ["r", "", "", "sizes"]
    else:
        sc = [1.0, 1.0] + [float(rng.choice([2, 2, 3, 0.5, 1.5])) for _ in range(2)]
        inits.append(nh.from_array(np.array(sc, np.float32), "scales"))
        rin = ["r", "", "scales"]
    nodes = [h.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[1, 1]),
             h.make_node("Relu", ["c1"], ["r"]),
             h.make_node("Resize", rin, ["z"], mode=mode, coordinate_transformation_mode=ctm, nearest_mode=nmode),
             h.make_node("Conv", ["z", "w2"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [n, cin, hh, ww])],
                     [h.make_tensor_value_info("y", T.FLOAT, None), h.make_tensor_value_info("z", T.FLOAT, None)],
                     inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 19)])
    m.ir_version = 8
    m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    onnx.save(m, path)
    first = cin % cb == 0 and cpad_ok(c, cb)   # the first conv blocked (its input is NCHW, stride 1)
    return ("resize blocked %s %s %s x=%s c=%d scales/sizes=%s" % (mode, ctm, nmode, [n, cin, hh, ww], c, sc),
            int(first and mode != "cubic"))


def pwdw(rng, path, cb):
    """The front of an inverted residual block: a 1x1 Conv, Relu, Clip,
    HardSwish, SiLU (Mul by its Sigmoid, either order) or nothing, a depthwise Conv (kernels 1-5 per axis, strides 1-2 per axis,
    pads, sometimes dilated), an optional Relu or Clip after it. Compiled with
    pwdw{min-bytes=1}, so the small intermediate is fused anyway. Returns its
    description and how many ConvPwDwNCHWc that pipeline should make: one,
    unless the intermediate is also a graph output or the depthwise conv
    dilated."""
    n = int(rng.integers(1, 3))
    cin = cb * int(rng.integers(1, 3))
    blocks = int(rng.integers(1, 6))   # 4, 3, 2 and 1 channel blocks a trip, and 5 (one)
    e = cb * blocks
    kh, kw = int(rng.choice([1, 3, 3, 5])), int(rng.choice([1, 3, 3, 5]))
    sh, sw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    d = int(rng.choice([1, 1, 1, 1, 2]))
    hh, ww = int(rng.integers((kh - 1) * d + 1, 30)), int(rng.integers((kw - 1) * d + 1, 40))
    pads = [int(rng.integers(0, kh)), int(rng.integers(0, kw)), int(rng.integers(0, kh)), int(rng.integers(0, kw))]
    mid = str(rng.choice(["none", "Relu", "Clip", "ClipLo", "SiLU", "HardSwish"]))
    tail = str(rng.choice(["none", "Relu", "Clip"]))
    both = rng.integers(0, 6) == 0   # the intermediate is an output too
    inits = [nh.from_array((rng.standard_normal((e, cin, 1, 1)) / np.sqrt(cin)).astype(np.float32), "w1"),
             nh.from_array((rng.standard_normal((e, 1, kh, kw)) / 2).astype(np.float32), "w2"),
             nh.from_array(np.array(0.0, np.float32), "lo"), nh.from_array(np.array(1.5, np.float32), "hi")]
    b1, b2 = bool(rng.integers(0, 2)), bool(rng.integers(0, 2))
    if b1:
        inits.append(nh.from_array(rng.standard_normal(e).astype(np.float32) / 4, "b1"))
    if b2:
        inits.append(nh.from_array(rng.standard_normal(e).astype(np.float32) / 4, "b2"))
    nodes = [h.make_node("Conv", ["x", "w1"] + (["b1"] if b1 else []), ["ex"])]
    m = "ex"
    if mid in ("Relu", "HardSwish"):
        nodes.append(h.make_node(mid, ["ex"], ["exa"]))
        m = "exa"
    elif mid == "SiLU":
        nodes.append(h.make_node("Sigmoid", ["ex"], ["exs"]))
        nodes.append(h.make_node("Mul", (["exs", "ex"] if rng.integers(0, 2) else ["ex", "exs"]), ["exa"]))
        m = "exa"
    elif mid.startswith("Clip"):
        nodes.append(h.make_node("Clip", ["ex", "lo"] + (["hi"] if mid == "Clip" else []), ["exa"]))
        m = "exa"
    nodes.append(h.make_node("Conv", [m, "w2"] + (["b2"] if b2 else []), ["dw"], group=e, kernel_shape=[kh, kw],
                             strides=[sh, sw], pads=pads, dilations=[d, d]))
    y = "dw"
    if tail != "none":
        nodes.append(h.make_node(tail, ["dw"] + (["lo", "hi"] if tail == "Clip" else []), ["dwa"]))
        y = "dwa"
    outs = [h.make_tensor_value_info(y, T.FLOAT, None)]
    if both:
        outs.append(h.make_tensor_value_info(m, T.FLOAT, None))
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [n, cin, hh, ww])], outs, inits)
    mo = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    mo.ir_version = 8
    onnx.save(onnx.shape_inference.infer_shapes(mo, strict_mode=True), path)
    what = "pwdw n=%d %d->%d k=%dx%d s=%dx%d d=%d in=%dx%d pads=%s mid=%s tail=%s%s" % (
        n, cin, e, kh, kw, sh, sw, d, hh, ww, pads, mid, tail, " mid-output" if both else "")
    return what, 0 if both or d > 1 else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("icc")
    ap.add_argument("--cases", type=int, default=24)
    ap.add_argument("--resize", type=int, default=24, help="Resize cases, after the convolutions")
    ap.add_argument("--blocked", type=int, default=24, help="blocked depthwise cases, after Resize")
    ap.add_argument("--pools", type=int, default=16, help="blocked pool cases, after those")
    ap.add_argument("--dense", type=int, default=24, help="dense (blocked at -O3) Conv cases, after those")
    ap.add_argument("--concat", type=int, default=8, help="fire modules (a blocked Concat at -O3), after those")
    ap.add_argument("--padded", type=int, default=16, help="MobileNetV3-style blocks with padded channels, after those")
    ap.add_argument("--resize-blocked", type=int, default=10,
                    help="Resizes between convs (on blocked data at -O3), after the padded blocks")
    ap.add_argument("--transpose", type=int, default=12,
                    help="Transposes of a short last dim and Slices of whole trailing dims (reorders), after those")
    ap.add_argument("--padout", type=int, default=16,
                    help="a blocked conv or Concat read only by a padded conv (its Pad in the producer's kernel), "
                         "after those")
    ap.add_argument("--pwdw", type=int, default=16,
                    help="1x1 + depthwise conv pairs (one ConvPwDwNCHWc with pwdw{min-bytes=1}), after those")
    ap.add_argument("--columns", type=int, default=12,
                    help="convs along a column ([N, C, H, 1] by [kh, 1]: a row's at -O3), after those")
    ap.add_argument("--conv1d", type=int, default=16,
                    help="chains of 1-D convs (convs along a row at -O3, blocked), last")
    a = ap.parse_args()
    rng = np.random.default_rng(12)
    tmp = tempfile.mkdtemp()
    bad = 0
    rrng = np.random.default_rng(19)   # its own stream: the convolution cases stay as they were
    brng = np.random.default_rng(23)   # and the blocked depthwise cases theirs
    prng = np.random.default_rng(29)   # and the blocked pools theirs
    drng = np.random.default_rng(31)   # and the dense convolutions theirs
    frng = np.random.default_rng(37)   # and the fire modules theirs
    mrng = np.random.default_rng(41)   # and the padded blocks theirs
    trng = np.random.default_rng(43)   # and the transposes theirs
    zrng = np.random.default_rng(47)   # and the blocked Resizes theirs
    wrng = np.random.default_rng(53)   # and the 1x1 + depthwise pairs theirs
    orng = np.random.default_rng(59)   # and the padded buffers' producers theirs
    crng = np.random.default_rng(61)   # and the column convs theirs
    lrng = np.random.default_rng(67)   # and the 1-D conv chains theirs
    # -O3 with the pwdw pass fusing any size
    o3 = subprocess.run([a.icc, "--list-passes"], capture_output=True, text=True).stdout
    o3 = [l.split(None, 1)[1] for l in o3.splitlines() if l.strip().startswith("-O3 ")][0].strip()
    pw_passes = "--passes=" + o3.replace("pwdw", "pwdw{min-bytes=1}")
    # the layout block -O3 uses here: the f32 vector width (16 lanes with AVX-512)
    cb = 16 if " avx512f " in " " + open("/proc/cpuinfo").read().replace("\n", " ") + " " else 8
    before_po = a.cases + a.resize + a.blocked + a.pools + a.dense + a.concat + a.padded + a.resize_blocked + a.transpose
    before_pw = before_po + a.padout
    before_col = before_pw + a.pwdw
    before_1d = before_col + a.columns
    total = before_1d + a.conv1d
    for i in range(total):
        path = os.path.join(tmp, "case%d.onnx" % i)
        want = None   # (what -O3 should make, its patterns, how many)
        levels = (["-O2"], ["-O3"])
        emit = "-O3"   # the pipeline whose IR `want` counts in
        try:
            if i >= before_1d:
                what = conv1d(lrng, path)
            elif i >= before_col:
                what = column(crng, path)
            elif i >= before_pw:
                what, n = pwdw(wrng, path, cb)
                want = ("fused 1x1 + depthwise convs", ("= ConvPwDwNCHWc(",), n)
                # and for AVX2 (16 registers: smaller tiles, 8-lane blocks)
                levels = ([pw_passes], [pw_passes, "-march=x86-64-v3"])
                emit = pw_passes
            elif i >= before_po:
                what, n = padout(orng, path, cb)
                want = ("Pads stored by their producer", ("_pad]",), n)
                levels = (["-O3"], ["-O3", "-march=x86-64-v3"])
            elif i >= a.cases + a.resize + a.blocked + a.pools + a.dense + a.concat + a.padded + a.resize_blocked:
                what = transpose(trng, path) if i % 2 == 0 else slice_runs(trng, path)
            elif i >= a.cases + a.resize + a.blocked + a.pools + a.dense + a.concat + a.padded:
                what, n = resize_blocked(zrng, path, cb)
                want = ("Resizes on blocked data", ("_nchwc = Resize(",), n)
            elif i >= a.cases + a.resize + a.blocked + a.pools + a.dense + a.concat:
                what, n = padded(mrng, path, cb)
                want = ("blocked convs", ("= ConvNCHWc(", "= ConvDwNCHWc("), n)
            elif i >= a.cases + a.resize + a.blocked + a.pools + a.dense:
                what = fire(frng, path)
            elif i >= a.cases + a.resize + a.blocked + a.pools:
                what = dense(drng, path)
            elif i >= a.cases + a.resize + a.blocked:
                what = pool_blocked(prng, path)
            elif i >= a.cases + a.resize:
                what = depthwise_blocked(brng, path)
            elif i >= a.cases:
                what = resize(rrng, path)
            else:
                what = (depthwise if i % 2 == 0 else convtranspose)(rng, path)
        except Exception as e:   # a drawn shape with no valid output: draw again next time
            print("skip %d: %s" % (i, str(e).splitlines()[0][:100]))
            continue
        for level in levels:
            # nearest copies elements: the compiled output must be bit-identical
            exact = what.startswith(("resize nearest", "transpose", "slice"))   # copies: bit for bit
            tol = ["--rtol=0", "--atol=0"] if exact else ["--rtol=1e-4", "--atol=1e-4"]
            r = subprocess.run([a.icc, "verify", path] + level + tol, capture_output=True, text=True)
            if r.returncode:
                bad += 1
                print("FAIL %s %s\n%s%s" % (what, " ".join(level)[-60:], r.stdout[-600:], r.stderr[-600:]))
        if want is not None:
            label, pats, n = want
            r = subprocess.run([a.icc, "--emit=ir", emit, path], capture_output=True, text=True)
            got = sum(r.stdout.count(p) for p in pats)
            if r.returncode or got != n:
                bad += 1
                print("FAIL %s: %d %s at %s, the rule gives %d (block %d)\n%s" %
                      (what, got, label, emit[:40], n, cb, r.stderr[-600:]))
    print("%d cases, %d failures" % (total, bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
