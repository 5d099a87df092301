#!/usr/bin/env python3
"""The quantization ops, bit for bit, against the ONNX reference implementation.

Each case is a one-node model (QuantizeLinear, DequantizeLinear,
DynamicQuantizeLinear, QLinearMatMul, QLinearConv) with seeded random inputs
that include exact rounding ties (x = (k + 0.5) * scale) and values past the
output type's range. icc runs it through its interpreter (`icc run M.onnx`, no
passes, and -O3, where lower-quant has rewritten the node into core ops) and
compiled (`icc M.onnx -O0/-O2 -o X.so`, `icc run X.so`); every output must equal
onnx.reference.ReferenceEvaluator's exactly (floats compared bit for bit).
Quotients past 2^31 (and inf, NaN), where the reference's cast is undefined,
are judged by icc's own interpreter instead. Prints one line per case and
mode; exits 1 on any difference.

    python3 tests/models/quant_ops_exact.py build/icc [FILTER ...]
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as P, helper as h, numpy_helper as nh
from onnx.reference import ReferenceEvaluator

R = np.random.default_rng(42)
NP = {np.float32: P.FLOAT, np.float16: P.FLOAT16, np.uint8: P.UINT8, np.int8: P.INT8, np.uint16: P.UINT16,
      np.int16: P.INT16, np.int32: P.INT32}


def tp(a):
    return NP[a.dtype.type]


def model(op, inputs, consts, outputs, opset, **attrs):
    """A one-node model: inputs (name -> array) are graph inputs, consts
    initializers, outputs (name, dtype code)."""
    # the node's input order: _order when given, else inputs then consts
    order = attrs.pop("_order", None) or list(inputs) + list(consts)
    node = h.make_node(op, order, [o for o, _ in outputs], name="n", **attrs)
    g = h.make_graph([node], op, [h.make_tensor_value_info(k, tp(v), v.shape) for k, v in inputs.items()],
                     [h.make_tensor_value_info(o, t, None) for o, t in outputs],
                     [nh.from_array(v, k) for k, v in consts.items()])
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])


def with_ties(shape, scale):
    """Random values around the quantized range plus exact .5 ties of scale."""
    x = R.standard_normal(shape) * 200 * np.max(scale)
    ties = (R.integers(-300, 300, shape) + 0.5) * np.broadcast_to(scale, shape)
    return np.where(R.random(shape) < 0.5, ties, x)


def cases():
    out = []
    # QuantizeLinear: per tensor for each output type, with ties
    for zt in (np.uint8, np.int8, np.uint16, np.int16):
        s = np.float32(0.037)
        x = with_ties((4, 33), s).astype(np.float32)
        z = np.array(3 if zt in (np.uint8, np.uint16) else -5, zt)
        out.append(("quantize_tensor_%s" % zt.__name__, model("QuantizeLinear", {"x": x}, {"s": np.array(s), "z": z},
                                                              [("y", NP[zt])], 21), {"x": x}))
    # every magnitude (compiled: x / scale by a reciprocal and a correction
    # where |x| is within 2^-42..2^60, elementwise.c rounded_quotient; the
    # product alone outside): random bit patterns from subnormals up, the
    # range's edges and the f32 neighbours of exact ties. The reference casts
    # to int32 before it clips (garbage past 2^31) and its NaN cast is the
    # platform's, so it judges quotients below 2^31 and icc's interpreter
    # (which clips, then casts) the rest, inf and NaN too
    bits = R.integers(0, 2 ** 32, 4096, dtype=np.uint64).astype(np.uint32).view(np.float32)
    for zt, s in ((np.uint8, np.float32(0.037)), (np.int8, np.float32(1 / 255)), (np.int16, np.float32(3e-5))):
        ties = ((R.integers(-40000, 40000, 512) + 0.5) * np.float64(s)).astype(np.float32)
        near = np.concatenate([np.nextafter(ties, np.float32(np.inf)), np.nextafter(ties, np.float32(-np.inf)), ties])
        edges = np.array([0.0, -0.0, 2.0 ** -42, -(2.0 ** -42), np.nextafter(np.float32(2.0 ** -42), 0), 1e-45],
                         np.float32)
        small = bits[np.abs(bits.astype(np.float64)) < 2.0 ** 30 * float(s)]
        x = np.concatenate([small, edges, near]).astype(np.float32)
        z = np.array(3 if zt == np.uint8 else -5, zt)
        q = model("QuantizeLinear", {"x": x}, {"s": np.array(s), "z": z}, [("y", NP[zt])], 21)
        out.append(("quantize_magnitudes_%s" % zt.__name__, q, {"x": x}))
        big = np.concatenate([bits, np.array([2.0 ** 60, -(2.0 ** 60), np.nextafter(np.float32(2.0 ** 60), np.inf),
                                              np.inf, -np.inf, np.nan, 3e38], np.float32)])
        q = model("QuantizeLinear", {"x": big}, {"s": np.array(s), "z": z}, [("y", NP[zt])], 21)
        out.append(("quantize_all_magnitudes_%s" % zt.__name__, q, {"x": big}, "interp"))
    # per tensor with a [1] scale and a scalar zero point, as ORT's quantizer writes a bias
    qb = R.integers(-100, 100, 64).astype(np.int8)
    out.append(("dequantize_scale_1_zp_scalar", model("DequantizeLinear", {"q": qb},
                                                      {"s": np.array([0.02], np.float32), "z": np.array(3, np.int8)},
                                                      [("y", P.FLOAT)], 21), {"q": qb}))
    # a power-of-two scale makes every tie exact: k + 0.5 must round to even
    x = ((np.arange(-40, 40) + 0.5) * 0.25).astype(np.float32)
    out.append(("quantize_ties", model("QuantizeLinear", {"x": x}, {"s": np.array(0.25, np.float32),
                                                               "z": np.array(-1, np.int8)}, [("y", P.INT8)], 21),
                {"x": x}))
    # per axis, axis 1 of [3, 4, 5], i8
    s = (R.random(4) * 0.1 + 0.01).astype(np.float32)
    x = with_ties((3, 4, 5), s.reshape(1, 4, 1)).astype(np.float32)
    z = R.integers(-10, 10, 4).astype(np.int8)
    out.append(("quantize_axis", model("QuantizeLinear", {"x": x}, {"s": s, "z": z}, [("y", P.INT8)], 21, axis=1),
                {"x": x}))
    # blocked along axis 1 with a remainder block (7 = 3 + 3 + 1)
    s = (R.random((2, 3)) * 0.1 + 0.01).astype(np.float32)
    x = with_ties((2, 7), np.repeat(s, 3, axis=1)[:, :7]).astype(np.float32)
    z = R.integers(0, 255, (2, 3)).astype(np.uint8)
    out.append(("quantize_blocked", model("QuantizeLinear", {"x": x}, {"s": s, "z": z}, [("y", P.UINT8)], 21,
                                          axis=1, block_size=3), {"x": x}))
    # f16 data and scale: the division in f16
    s = np.float16(0.0371)
    x = with_ties((64,), np.float32(s)).astype(np.float16)
    out.append(("quantize_f16", model("QuantizeLinear", {"x": x}, {"s": np.array(s), "z": np.array(7, np.uint8)},
                                      [("y", P.UINT8)], 21), {"x": x}))
    # f16 data, f32 scale: the division in f32
    s = np.float32(0.0371)
    x = with_ties((64,), s).astype(np.float16)
    out.append(("quantize_f16_f32scale", model("QuantizeLinear", {"x": x}, {"s": np.array(s)}, [("y", P.UINT8)], 21),
                {"x": x}))
    # DequantizeLinear
    x = R.integers(0, 256, (5, 6)).astype(np.uint8)
    out.append(("dequantize_tensor", model("DequantizeLinear", {"x": x},
                                           {"s": np.array(0.0173, np.float32), "z": np.array(131, np.uint8)},
                                           [("y", P.FLOAT)], 21), {"x": x}))
    x = R.integers(-32768, 32768, (3, 4, 2)).astype(np.int16)
    out.append(("dequantize_axis_i16", model("DequantizeLinear", {"x": x},
                                             {"s": (R.random(4) * 0.01).astype(np.float32),
                                              "z": R.integers(-100, 100, 4).astype(np.int16)},
                                             [("y", P.FLOAT)], 21, axis=1), {"x": x}))
    x = R.integers(-2**31, 2**31, (17,), dtype=np.int64).astype(np.int32)
    out.append(("dequantize_i32", model("DequantizeLinear", {"x": x}, {"s": np.array(0.001, np.float32)},
                                        [("y", P.FLOAT)], 21), {"x": x}))
    x = R.integers(-128, 128, (2, 7)).astype(np.int8)
    out.append(("dequantize_blocked_f16", model("DequantizeLinear", {"x": x},
                                                {"s": (R.random((2, 3)) * 0.1).astype(np.float16),
                                                 "z": R.integers(-5, 5, (2, 3)).astype(np.int8)},
                                                [("y", P.FLOAT16)], 21, axis=1, block_size=3), {"x": x}))
    # DynamicQuantizeLinear: mixed, all positive, all negative
    for nm, x in (("mixed", R.standard_normal((4, 9)) * 3), ("positive", R.random((4, 9)) * 5 + 1),
                  ("negative", -R.random((4, 9)) * 5 - 1)):
        x = x.astype(np.float32)
        out.append(("dynamic_%s" % nm, model("DynamicQuantizeLinear", {"x": x}, {},
                                             [("y", P.UINT8), ("ys", P.FLOAT), ("yz", P.UINT8)], 11), {"x": x}))
    # QLinearMatMul (u8 x i8, per-column b scale) and QLinearConv (per-channel w, bias, pads, strides)
    a = R.integers(0, 256, (2, 5, 16)).astype(np.uint8)
    b = R.integers(-128, 128, (16, 6)).astype(np.int8)
    consts = {"as": np.array(0.02, np.float32), "az": np.array(120, np.uint8), "b": b,
              "bs": (R.random(6) * 0.01 + 0.001).astype(np.float32), "bz": np.zeros(6, np.int8),
              "ys": np.array(0.05, np.float32), "yz": np.array(100, np.uint8)}
    out.append(("qlinear_matmul", model("QLinearMatMul", {"a": a}, consts, [("y", P.UINT8)], 21,
                                        _order=["a", "as", "az", "b", "bs", "bz", "ys", "yz"]), {"a": a}))
    x = R.integers(0, 256, (1, 3, 9, 9)).astype(np.uint8)
    consts = {"xs": np.array(0.03, np.float32), "xz": np.array(128, np.uint8),
              "w": R.integers(-128, 128, (4, 3, 3, 3)).astype(np.int8),
              "ws": (R.random(4) * 0.01 + 0.001).astype(np.float32), "wz": np.zeros(4, np.int8),
              "ys": np.array(0.1, np.float32), "yz": np.array(-3, np.int8),
              "B": R.integers(-5000, 5000, 4).astype(np.int32)}
    out.append(("qlinear_conv", model("QLinearConv", {"x": x}, consts, [("y", P.INT8)], 10,
                                      _order=["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "B"],
                                      pads=[1, 1, 1, 1], strides=[2, 2]), {"x": x}))
    # ConvInteger over strides, asymmetric pads, dilations, 1-D and 3-D windows and inputs of
    # several chunks (the im2col by output rows), u8 and i8, with zero points
    for nm, xs, ws, at in (
            ("s2p1", (2, 40, 30, 30), (24, 40, 3, 3), dict(pads=[1, 1, 1, 1], strides=[2, 2])),
            ("s23_asym_dil", (1, 5, 17, 19), (7, 5, 3, 2), dict(pads=[2, 0, 1, 1], strides=[2, 3], dilations=[2, 1])),
            ("valid_s1", (1, 6, 12, 14), (9, 6, 3, 3), dict(pads=[0, 0, 0, 0], strides=[1, 1])),
            ("pad_big", (1, 3, 5, 6), (4, 3, 3, 3), dict(pads=[3, 2, 3, 4], strides=[1, 2])),
            ("1d_s2", (2, 8, 37), (5, 8, 5), dict(pads=[2, 1], strides=[2])),
            ("3d_s2", (1, 4, 7, 8, 9), (6, 4, 3, 3, 3), dict(pads=[1, 1, 1, 1, 1, 1], strides=[2, 2, 2]))):
        for xt, wt in ((np.uint8, np.int8), (np.int8, np.uint8)):
            lo, hi = (0, 256) if xt == np.uint8 else (-128, 128)
            x = R.integers(lo, hi, xs).astype(xt)
            wlo, whi = (-128, 128) if wt == np.int8 else (0, 256)
            consts = {"w": R.integers(wlo, whi, ws).astype(wt),
                      "xz": np.array(R.integers(lo, hi), xt), "wz": np.array(R.integers(wlo, whi), wt)}
            out.append(("convinteger_%s_%s%s" % (nm, xt.__name__, wt.__name__),
                        model("ConvInteger", {"x": x}, consts, [("y", P.INT32)], 10,
                              _order=["x", "w", "xz", "wz"], **at), {"x": x}))
    # MatMulInteger: 2-D and batched B (the attention's products), A 2-D or batched, N past a
    # whole vector, odd K, u8/i8, scalar and per-column zero points
    for nm, ash, bsh, per_col in (("2d", (3, 17, 33), (33, 20), True), ("batched", (2, 3, 19, 16), (2, 3, 16, 24), False),
                                  ("batched_a2d", (21, 9), (4, 9, 16), False), ("batched3", (3, 40, 64), (3, 64, 8), False)):
        for at, bt in ((np.uint8, np.int8), (np.int8, np.uint8)):
            alo, ahi = (0, 256) if at == np.uint8 else (-128, 128)
            blo, bhi = (0, 256) if bt == np.uint8 else (-128, 128)
            a = R.integers(alo, ahi, ash).astype(at)
            consts = {"b": R.integers(blo, bhi, bsh).astype(bt), "az": np.array(R.integers(alo, ahi), at),
                      "bz": (R.integers(blo, bhi, bsh[-1]) if per_col else np.array(R.integers(blo, bhi))).astype(bt)}
            out.append(("matmulinteger_%s_%s%s" % (nm, at.__name__, bt.__name__),
                        model("MatMulInteger", {"a": a}, consts, [("y", P.INT32)], 10,
                              _order=["a", "b", "az", "bz"]), {"a": a}))
    return out


def same(got, want):
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if np.issubdtype(want.dtype, np.floating):
        return np.array_equal(got.reshape(-1).view(np.uint8), want.reshape(-1).view(np.uint8))
    return np.array_equal(got, want)


def main():
    icc = os.path.abspath(sys.argv[1])
    filters = sys.argv[2:]
    tmp = tempfile.mkdtemp()
    failed = 0
    for name, m, feeds, *oracle in cases():
        if filters and not any(f in name for f in filters):
            continue
        path = os.path.join(tmp, name + ".onnx")
        onnx.save(m, path)
        args = []
        for k, v in feeds.items():
            f = os.path.join(tmp, "%s_%s.npy" % (name, k))
            np.save(f, v)
            args += ["--input", "%s=%s" % (k, f)]
        modes = ("interp", "interp-O3", "compiled-O0", "compiled-O2")
        if oracle == ["interp"]:   # icc's interpreter (no passes) judges the others
            ref = os.path.join(tmp, name + "_ref")
            subprocess.run([icc, "run", path, *args, "-o", ref], check=True, capture_output=True)
            want = [np.load(os.path.join(ref, o.name + ".npy")) for o in m.graph.output]
            modes = modes[1:]
        else:
            want = ReferenceEvaluator(m).run(None, feeds)
        for mode in modes:
            outdir = os.path.join(tmp, "%s_%s" % (name, mode))
            if mode.startswith("interp"):
                r = subprocess.run([icc, "run", path, *args, *(["-O3"] if mode.endswith("O3") else []), "-o", outdir],
                                   capture_output=True, text=True)
            else:
                so = os.path.join(tmp, "%s_%s.so" % (name, mode))
                r = subprocess.run([icc, path, "-" + mode.split("-")[1], "-o", so], capture_output=True, text=True)
                if r.returncode == 0:
                    r = subprocess.run([icc, "run", so, *args, "-o", outdir], capture_output=True, text=True)
            if r.returncode:
                print("FAIL %s %s: %s" % (name, mode, r.stderr.strip()))
                failed += 1
                continue
            bad = []
            for o, w in zip(m.graph.output, want):
                got = np.load(os.path.join(outdir, o.name + ".npy"))
                if not same(got, np.asarray(w)):
                    n = int(np.sum(got != w)) if got.shape == np.shape(w) else -1
                    bad.append("%s: %d of %d differ" % (o.name, n, np.size(w)))
            print("%s %s %s%s" % ("ok  " if not bad else "FAIL", name, mode, (": " + "; ".join(bad)) if bad else ""))
            failed += bool(bad)
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
