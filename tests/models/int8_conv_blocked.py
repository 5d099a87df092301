#!/usr/bin/env python3
"""ConvInteger on blocked NCHWc data (passes/layout.c, convert_conv_int;
codegen/lower/conv_blocked.c, the quad kernel).

At -O3 on a target with 512-bit VNNI, a ConvInteger with u8 x, constant i8
w (zero point absent or all zero), a constant scalar x zero point and
channels a multiple of the block becomes the integer ConvNCHWc: x padded
with its zero point, w's taps in quads of input lanes, B = -xz * sum(w[m]),
vpdpbusd on x's quads in place (dpbusd_quads), the requantizing epilogue
fused; W holds w - wz. For each model here (zero points or none, padded, strided, dilated,
1x1, 5x5, a batch of 2, a two-conv chain requantized to u8 in between the
way a QDQ model is, an image's 3 channels and 1 (padded to one block of 4
lanes), w zero points (per channel or scalar, i8 or u8 weights) that keep
w - wz in i8, and ones that do not: then W holds w - 128 (u8) or w (i8) and
s[m] = 128 - wz[m] (or -wz[m]) times each window's sum of x, a second
integer ConvNCHWc of all-one weights, is added in the epilogue; and 5
channels, which stay NCHW):
  - the compiled output equals the interpreter's on the original graph
    exactly (i32 sums; the chain's u8 requantization is the same f32
    arithmetic);
  - on a host whose /proc/cpuinfo has avx512_vnni the optimized IR has the
    expected number of integer ConvNCHWc nodes (2 when shifted) and the kernels use
    dpbusd_quads, or, where it also has amx_int8, AMX tiles (amx_dpbusd: every
    case here has 16 output lanes and tiles of 4+ pixels); for -march=x86-64-v3
    none is blocked, and it is exact too.

    python3 tests/models/int8_conv_blocked.py build/icc
Exits 1 if any check fails.
"""
import os
import re
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from icc_run import compile_and_run, cpu_has, interp_want, run, run_cases

RNG = np.random.default_rng(11)   # one stream over the cases, in order

ORACLE = "shape-infer,simplify,fold,dce"


def conv_node(rng, inits, x, y, c, m, k, zx, zw, stride, pad, dil, tag, wu8=False, wlim=128):
    """A ConvInteger x -> y with constant weights, i8 in [-wlim, wlim), or
    with wu8 u8 in [128 - wlim, 128 + wlim); zw: None, "zero" (all zero per
    channel, u8 too), "nonzero" (per channel, near 0, or near 128 for u8) or
    "scalar" (one, likewise)."""
    w = "W" + tag
    wt, base = (np.uint8, 128) if wu8 else (np.int8, 0)
    inits.append(numpy_helper.from_array((rng.integers(-wlim, wlim, (m, c, k, k)) + base).astype(wt), w))
    ins = [x, w]
    if zx is not None or zw:
        inits.append(numpy_helper.from_array(np.array(zx or 0, dtype=np.uint8), "zx" + tag))
        ins.append("zx" + tag)
    if zw:
        shape = () if zw == "scalar" else (m,)
        zv = np.zeros(shape, np.int64) if zw == "zero" else rng.integers(-5, 6, shape)
        inits.append(numpy_helper.from_array((zv + (0 if zw == "zero" else base)).astype(wt), "zw" + tag))
        ins.append("zw" + tag)
    return helper.make_node("ConvInteger", ins, [y], kernel_shape=[k, k], pads=[pad] * 4, strides=[stride] * 2,
                            dilations=[dil] * 2)


def model(path, rng, c, m, hw, k, zx=None, zw=None, stride=1, pad=1, dil=1, batch=1, chain=False, wu8=False,
          wlim=128):
    """y = ConvInteger(x, W, zx, zw); with chain, the first result is
    requantized to u8 (scale, round, + zero point, clip, as QuantizeLinear
    lowers) and read by a second 3x3 ConvInteger of m output channels."""
    inits, nodes = [], []
    xs = [batch, c, hw, hw]
    out = "y0" if chain else "y"
    nodes.append(conv_node(rng, inits, "x", out, c, m, k, zx, zw, stride, pad, dil, "0", wu8, wlim))
    if chain:
        inits += [numpy_helper.from_array(np.array(1.0 / 4096, np.float32), "s"),
                  numpy_helper.from_array(np.array(3.0, np.float32), "z"),
                  numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
                  numpy_helper.from_array(np.array(255.0, np.float32), "hi")]
        nodes += [helper.make_node("Cast", ["y0"], ["f"], to=TensorProto.FLOAT),
                  helper.make_node("Mul", ["f", "s"], ["fs"]),
                  helper.make_node("Round", ["fs"], ["fr"]),
                  helper.make_node("Add", ["fr", "z"], ["fz"]),
                  helper.make_node("Clip", ["fz", "lo", "hi"], ["fc"]),
                  helper.make_node("Cast", ["fc"], ["q"], to=TensorProto.UINT8)]
        nodes.append(conv_node(rng, inits, "q", "y", m, m, 3, 3, "zero", 1, 1, 1, "1"))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, xs)],
                          [helper.make_tensor_value_info("y", TensorProto.INT32, None)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return rng.integers(0, 256, xs).astype(np.uint8)


# (name, model arguments, integer ConvNCHWc nodes expected with VNNI)
CASES = [
    ("zp_3x3", dict(c=32, m=32, hw=24, k=3, zx=77), 1),
    ("no_zero_points", dict(c=16, m=16, hw=10, k=3), 1),
    ("zw_all_zero", dict(c=16, m=48, hw=13, k=3, zx=128, zw="zero"), 1),
    ("strided_batch2", dict(c=32, m=16, hw=15, k=3, zx=5, stride=2, batch=2), 1),
    ("one_by_one", dict(c=64, m=32, hw=14, k=1, zx=200, pad=0), 1),
    ("one_by_one_strided", dict(c=32, m=64, hw=14, k=1, zx=9, pad=0, stride=2), 1),
    ("dilated_5x5", dict(c=16, m=16, hw=19, k=5, zx=31, pad=4, dil=2), 1),
    ("wide_rows", dict(c=16, m=32, hw=41, k=3, zx=1), 1),
    ("qdq_chain", dict(c=32, m=32, hw=20, k=3, zx=17, chain=True), 2),
    ("zw_within_i8", dict(c=16, m=16, hw=9, k=3, zx=3, zw="nonzero", wlim=120), 1),
    ("u8_w_zp128", dict(c=32, m=16, hw=11, k=3, zx=60, zw="scalar", wu8=True, wlim=120), 1),
    ("zw_shifted", dict(c=16, m=32, hw=9, k=3, zx=3, zw="nonzero"), 2),
    ("u8_w_zp0_shifted", dict(c=16, m=16, hw=11, k=3, zx=60, zw="zero", wu8=True), 2),
    ("u8_w_shifted_strided", dict(c=32, m=48, hw=15, k=3, zx=200, zw="nonzero", wu8=True, stride=2), 2),
    ("u8_w_shifted_image", dict(c=3, m=32, hw=30, k=7, zx=9, zw="zero", wu8=True, stride=2, pad=3), 2),
    ("image_3x3", dict(c=3, m=16, hw=33, k=3, zx=4, stride=2), 1),
    ("image_7x7_stem", dict(c=3, m=32, hw=40, k=7, zx=128, stride=2, pad=3), 1),
    ("one_channel", dict(c=1, m=16, hw=12, k=3, zx=0), 1),
    ("five_channels_stay", dict(c=5, m=16, hw=12, k=3, zx=2), 0),
    # no output channels: an empty result (it failed lowering with "out of memory")
    ("no_output_channels", dict(c=16, m=0, hw=9, k=3, zx=3), 0),
]


def check(icc, tmp, name, kw, expect_blocked):
    """One case: the checks that failed."""
    vnni = cpu_has("avx512_vnni")
    amx = vnni and cpu_has("amx_int8")
    failed = 0
    path = os.path.join(tmp, name + ".onnx")
    x = model(path, RNG, **kw)
    xp, want = interp_want(icc, tmp, name, path, "x", x, ORACLE)
    for march, blocked in [(None, expect_blocked if vnni else 0), ("x86-64-v3", 0)]:
        flags = ["-O3"] + (["-march=" + march] if march else [])
        ir = run([icc, path, "--emit=ir"] + flags)
        nb = len(re.findall(r"= ConvNCHWc\(.*: i32\[", ir))
        kern = run([icc, path, "--emit=kernels"] + flags)
        got = compile_and_run(icc, path, flags, "x", xp, "y", tmp, name + (march or "host"))
        tiles = "amx_dpbusd" in kern
        quads = "dpbusd_quads" in kern or tiles
        same = got.shape == want.shape
        diff = int(np.abs(got.astype(np.int64) - want.astype(np.int64)).max(initial=0)) if same else -1
        ok = diff == 0 and nb == blocked and (quads or not blocked) and tiles == (amx and bool(blocked) and not march)
        print("%s %-20s %-9s %s: %d blocked (want %d), quad kernel %s, AMX %s; max |compiled - interpreter| %d" % (
            "ok  " if ok else "FAIL", name, march or "host", "x".join(str(v) for v in x.shape), nb, blocked,
            "yes" if quads else "no", "yes" if tiles else "no", diff), flush=True)
        failed += not ok
    return failed


def main():
    cases = [(name, (kw, nb)) for name, kw, nb in CASES]
    return run_cases(__doc__, cases, lambda icc, tmp, name, a: check(icc, tmp, name, a[0], a[1]),
                     "avx512_vnni", "the blocked quad kernel")


if __name__ == "__main__":
    sys.exit(main())
