#!/usr/bin/env python3
"""ConvInteger on the VNNI quad kernel (codegen/lower/qgemm.c, lower_qconv).

On a target with VNNI the im2col chunk of x~ is interleaved in quads of k
(quad_pack, x - 128 for u8 x) and the weights' quads (w + 128 for i8 w) are
broadcast against it by vpdpbusd (dpbusd_quads); the shifts come back out
through row and column sums. Without VNNI the pair kernel (vpmaddwd) runs.
For each model here (u8 and i8 x, i8 and u8 w, scalar x zero point and
per-channel w zero points or none, K = C x taps a multiple of 4 or not (an
image's 3 channels: K = 27), padded and strided windows, 1x1, a batch of 2,
pixel counts that leave a partial panel):
  - the compiled output equals the interpreter's exactly (i32, wrapping);
  - on a host whose /proc/cpuinfo has avx512_vnni the kernel uses
    dpbusd_quads; for -march=x86-64-v3 it does not, and is exact too.

    python3 tests/models/int8_conv_quads.py build/icc
Exits 1 if any check fails.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from icc_run import compile_and_run, cpu_has, interp_want, run, run_cases

RNG = np.random.default_rng(5)   # one stream over the cases, in order

ORACLE = "shape-infer,simplify,fold,dce"
DT = {"u8": (np.uint8, TensorProto.UINT8, 0, 256), "i8": (np.int8, TensorProto.INT8, -128, 128)}


def model(path, rng, c, m, hw, k, xdt, wdt, zx, zw, stride=1, pad=1, batch=1):
    """y = ConvInteger(x, W, x_zero_point, w_zero_point), W a constant."""
    xt, xproto, xlo, xhi = DT[xdt]
    wt, _, wlo, whi = DT[wdt]
    inits = [numpy_helper.from_array(rng.integers(wlo, whi, (m, c, k, k)).astype(wt), "W")]
    ins = ["x", "W"]
    if zx or zw:
        inits.append(numpy_helper.from_array(np.array(rng.integers(xlo, xhi) if zx else 0).astype(xt), "zx"))
        ins.append("zx")
    if zw:
        inits.append(numpy_helper.from_array(rng.integers(wlo, whi, (m,)).astype(wt), "zw"))
        ins.append("zw")
    xs = [batch, c, hw, hw]
    node = helper.make_node("ConvInteger", ins, ["y"], kernel_shape=[k, k], pads=[pad] * 4, strides=[stride] * 2)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", xproto, xs)],
                          [helper.make_tensor_value_info("y", TensorProto.INT32, None)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return rng.integers(xlo, xhi, xs).astype(xt)


CASES = [
    ("u8x_i8w_3x3_zps", dict(c=32, m=32, hw=24, k=3, xdt="u8", wdt="i8", zx=True, zw=True)),
    ("u8x_i8w_no_zw", dict(c=16, m=24, hw=17, k=3, xdt="u8", wdt="i8", zx=True, zw=False)),
    ("image_k27", dict(c=3, m=16, hw=33, k=3, xdt="u8", wdt="i8", zx=True, zw=False, stride=2)),
    ("i8x_u8w", dict(c=8, m=16, hw=12, k=3, xdt="i8", wdt="u8", zx=True, zw=True)),
    ("no_zero_points", dict(c=16, m=16, hw=10, k=3, xdt="u8", wdt="i8", zx=False, zw=False)),
    ("one_by_one", dict(c=64, m=32, hw=14, k=1, xdt="u8", wdt="i8", zx=True, zw=False, pad=0)),
    ("strided_batch2", dict(c=16, m=32, hw=15, k=3, xdt="u8", wdt="i8", zx=True, zw=True, stride=2, batch=2)),
    ("5x5_unpadded", dict(c=4, m=8, hw=9, k=5, xdt="u8", wdt="i8", zx=True, zw=False, pad=0)),
]


def check(icc, tmp, name, kw):
    """One case (icc_run.run_cases): the checks that failed."""
    vnni = cpu_has("avx512_vnni")
    failed = 0
    path = os.path.join(tmp, name + ".onnx")
    x = model(path, RNG, **kw)
    xp, want = interp_want(icc, tmp, name, path, "x", x, ORACLE)
    for march, expect in [(None, vnni), ("x86-64-v3", False)]:
        flags = ["-O2"] + (["-march=" + march] if march else [])
        kern = run([icc, path, "--emit=kernels"] + flags)
        got = compile_and_run(icc, path, flags, "x", xp, "y", tmp, name + (march or "host"))
        has = "dpbusd_quads" in kern
        diff = int(np.abs(got.astype(np.int64) - want.astype(np.int64)).max()) if got.shape == want.shape else -1
        ok = diff == 0 and has == expect
        print("%s %-18s %-9s %s: quad kernel %s; max |compiled - interpreter| %d" % (
            "ok  " if ok else "FAIL", name, march or "host", "x".join(str(v) for v in x.shape),
            "yes" if has else "no", diff), flush=True)
        failed += not ok
    return failed


def main():
    return run_cases(__doc__, CASES, check, "avx512_vnni", "the quad kernel")


if __name__ == "__main__":
    sys.exit(main())
