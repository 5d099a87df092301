#!/usr/bin/env python3
"""bf16 convolutions of two bf16 operands (--precision=bf16, docs/precision.md).

--precision=bf16 rounds a Conv's input (one group) to bf16 as well as its
weight; at -O3 the layout pass makes it a blocked ConvNCHWc, and on a target
with AVX512-BF16 the pack-b pass stores the weight's taps in pairs of input
lanes and the convolution runs on vdpbf16ps (codegen/lower/conv_blocked.c, the
pair kernel), the activation read in bf16 (padded in bf16, and written in bf16
by the kernel before it when nothing else reads it). For each model here
(single Convs with bias and Relu over shapes that exercise the kernel's paths:
3x3 padded, strided, dilated, 1x1 over the flat plane, 1x1 strided, an image's
3 channels, channel counts that leave a partial block or tile, a batch of 2;
and chains of Convs with a residual Add):
  - the compiled model (-O3) matches the interpreter running the same bf16
    graph without the layout pass for the same -march (both operands rounded
    where that target multiplies bf16 pairs, the input left f32 where it
    widens to FMAs): single Convs within max error / max
    |output| <= 1e-5 (only the order of
    the f32 sums differs); chains within 2e-3 (an intermediate activation one
    bf16 step apart where the two orders round differently);
  - on a host whose /proc/cpuinfo has avx512_bf16 (and a vdpbf16ps icc
    measured at 0.75 of the FMA's rate or more, or AMX: icc_run.bf16_pairs_host;
    else compiled for -march=cooperlake) the Convs run on the pair
    kernel (dpbf16_pairs in --emit=kernels), an image's 3 or 1 channels
    re-blocked as one block of 4 or 2 lanes; elsewhere not, with the same
    results; where it also has amx_bf16, the Convs of even input and 16 output
    lanes whose tiles of 8 to 16 pixels fit (stride 1, or output rows of 8 or
    more) run on AMX tiles instead (amx_dpbf16ps), and no others;
  - compiled for -march=x86-64-v3 (no vdpbf16ps) the results match too, and
    the IR packed in pairs for -march=znver4 compiled for x86-64-v3 (the f32
    kernel reading packed_k = 2 weights) as well.

    python3 tests/models/bf16_conv.py build/icc
Exits 1 if any check fails.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from icc_run import bf16_pairs_host, compile_and_run, cpu_has, interp_per_march, run, run_cases

RNG = np.random.default_rng(11)   # one stream over the cases, in order

ORACLE = "shape-infer,simplify,fold,fold-bn,recognize,simplify,cse,dce,precision"


def model(path, rng, c, m, hw, k=3, stride=1, pad=None, dil=1, batch=1, chain=0):
    """x[batch, c, hw, hw] -> Conv(m, k x k) + bias -> Relu; chain = j: then j
    more 3x3 Convs (m -> m, padded) with the first Relu added back after them
    (a residual, so that activation has two readers)."""
    pad = (k // 2) * dil if pad is None else pad
    inits, nodes = [], []

    def conv(x, cin, cout, kk, s, p, d, name):
        w = (rng.standard_normal((cout, cin, kk, kk)) * (2.0 / (cin * kk * kk)) ** 0.5).astype(np.float32)
        inits.append(numpy_helper.from_array(w, name + "_w"))
        inits.append(numpy_helper.from_array((rng.standard_normal(cout) * 0.1).astype(np.float32), name + "_b"))
        nodes.append(helper.make_node("Conv", [x, name + "_w", name + "_b"], [name], kernel_shape=[kk, kk],
                                      strides=[s, s], pads=[p] * 4, dilations=[d, d]))
        return name

    y = conv("x", c, m, k, stride, pad, dil, "c0")
    nodes.append(helper.make_node("Relu", [y], ["r0"]))
    y = "r0"
    for i in range(chain):
        y = conv(y, m, m, 3, 1, 1, 1, "c%d" % (i + 1))
        nodes.append(helper.make_node("Relu", [y], ["r%d" % (i + 1)]))
        y = "r%d" % (i + 1)
    if chain:
        nodes.append(helper.make_node("Add", [y, "r0"], ["sum"]))
        y = "sum"
    nodes.append(helper.make_node("Identity", [y], ["y"]))
    xs = [batch, c, hw, hw]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, xs)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return rng.standard_normal(xs).astype(np.float32)


# (name, model arguments, whether the pair kernel is expected on a bf16 host)
# (name, (model args, blocked in pairs, on AMX tiles where the host has AMX-BF16:
#  even input lanes, 16 or 32 output lanes (32: --precision=bf16 blocks by 32
#  on AMX when every conv has channels in 32s), and tiles of 8 to 16 pixels along the
#  stride-1 extended plane or a strided output row))
CASES = [
    ("3x3_pad", (dict(c=32, m=32, hw=20), True, True)),
    ("3x3_stride2", (dict(c=16, m=64, hw=23, stride=2), True, True)),     # tiles of 12 rows, X's pixels odd
    ("3x3_stride2_wide", (dict(c=16, m=32, hw=40, stride=2), True, True)),
    ("3x3_dilated", (dict(c=32, m=16, hw=17, dil=2), True, True)),
    ("1x1_flat", (dict(c=64, m=48, hw=14, k=1), True, True)),
    ("1x1_stride2", (dict(c=32, m=32, hw=13, k=1, stride=2), True, True)),  # tiles of 7 rows
    ("1x1_stride2_wide", (dict(c=32, m=32, hw=37, k=1, stride=2), True, True)),
    ("5x5_unpadded", (dict(c=16, m=16, hw=12, k=5, pad=0), True, True)),
    ("image_3ch", (dict(c=3, m=32, hw=33, stride=2), True, True)),
    ("image_1ch_7x7", (dict(c=1, m=16, hw=30, k=7, stride=2, pad=3), True, True)),  # 7 taps a product
    ("image_3ch_7x7", (dict(c=3, m=64, hw=64, k=7, stride=2, pad=3), True, True)),   # ResNet's stem
    ("wide_rows", (dict(c=16, m=16, hw=61), True, True)),
    ("padded", (dict(c=32, m=40, hw=11), True, True)),  # 40 output channels: padded to 48
    ("not_blocked", (dict(c=20, m=20, hw=11), False, False)),  # 20 channels: padding to 32 would cost 1.6x
    ("batch2", (dict(c=32, m=32, hw=9, batch=2), True, True)),
    ("chain_residual", (dict(c=32, m=32, hw=24, chain=2), True, True)),
]


def check(icc, tmp, name, kw):
    """One case (icc_run.run_cases): the checks that failed."""
    args, expect_pairs, expect_amx = kw
    pairs = cpu_has("avx512_bf16") and expect_pairs
    tiles = pairs and expect_amx and cpu_has("amx_bf16")
    rel_max = 2e-3 if args.get("chain") else 1e-5
    failed = 0
    path = os.path.join(tmp, name + ".onnx")
    x = model(path, RNG, **args)
    common = ["--precision=bf16", "--no-default-keep"]
    want_for = interp_per_march(icc, tmp, name, path, "x", x, ORACLE, common)

    def compare(got, what, label, has, expect, march):
        want = want_for(march)[1]
        got = got.astype(np.float64)
        rel = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)) if got.shape == want.shape else 1e30
        ok = rel <= rel_max and has == expect
        print("%s %-15s %-30s vs the interpreter's bf16 graph %.2g; %s %s" % (
            "ok  " if ok else "FAIL", name, what, rel, label, "yes" if has else "no"), flush=True)
        return not ok

    # the host's own choice (icc_run.bf16_pairs_host); where its vdpbf16ps is
    # slow, cooperlake (nothing measured) still runs the pair kernel here
    host = bf16_pairs_host(icc, path)
    marches = [(None, pairs and host)] + ([("cooperlake", pairs)] if pairs and not host else [])
    for march, expect in marches + [("x86-64-v3", False)]:
        flags = common + ["-O3"] + (["-march=" + march] if march else [])
        xp = want_for(march)[0]
        kern = run([icc, path, "--emit=kernels"] + flags)
        got = compile_and_run(icc, path, flags, "x", xp, "y", tmp, name + (march or "host"))
        has = "dpbf16_pairs" in kern or "amx_dpbf16ps" in kern
        failed += compare(got, march or "host", "pair or AMX kernel", has, expect, march)
        if not march:
            failed += compare(got, "host", "AMX tiles", "amx_dpbf16ps" in kern, tiles, march)
    # packed in pairs for znver4 (IR only), compiled for x86-64-v3: the f32
    # blocked kernel reads the pair order
    packed = os.path.join(tmp, name + "_packed.icc")
    run([icc, path, "--emit=ir", "-O3", "-march=znver4", "-o", packed] + common)
    with open(packed) as f:
        has = "packed_k = 2" in f.read()
    got = compile_and_run(icc, packed, ["-march=x86-64-v3"], "x", want_for("znver4")[0], "y", tmp, name + "_packed")
    failed += compare(got, "packed for znver4, run on v3", "packed in pairs", has, expect_pairs, "znver4")
    return failed


def main():
    return run_cases(__doc__, CASES, check, "avx512_bf16", "the pair kernel (on the host where its vdpbf16ps is fast, else for -march=cooperlake)")


if __name__ == "__main__":
    sys.exit(main())
