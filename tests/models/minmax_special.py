#!/usr/bin/env python3
"""Float max and min reductions on special values: NaN, signed zeros, infinities.

On a target with AVX512DQ and 512-bit vectors a carried max or min of f32/f64
runs on vrangeps/vrangepd, with the NaNs counted beside it (codegen/llvm/emit.c,
em_range_red); elsewhere on llvm.maximum/llvm.minimum. Both mean IEEE 754-2019
maximum and minimum: NaN wins and -0 < +0, as the interpreter's ReduceMax,
ReduceMin, Max and Min do. For each model here (reductions to a scalar, along
the last axis with a masked tail, over the last axis of three, f64) and each kind of input (random normals; all zeros but one -0; zeros
of both signs among positives or negatives; a quiet NaN, a signaling NaN, a
whole column of NaNs; infinities):
  - the compiled output equals the interpreter's: the same NaNs, and every
    other value bit for bit, the sign of a zero included;
  - on a host whose /proc/cpuinfo has avx512dq the reductions are vrange
    (vrangeps/vrangepd in --emit=asm); compiled for -march=x86-64-v3 (no
    AVX-512) they are not, and the output is the same.

Then elementwise bounds by constants, which compile to a compare and a blend
(codegen/lower/internal.h, lw_max_const and lw_min_const) where that is the same
function: Clip with constant bounds (0 and 6; -0 and +0, where the general max and
min stay; 1.5 alone; an upper bound alone), Max and Min with a constant operand, second
or first (a ReLU6 written out; -0 and 1.5), and HardSigmoid (HardSwish multiplies it
by x, with a rounding of its own), on the same kinds of input plus values at the
bounds and zeros of both signs: the compiled output equals the interpreter's bit for
bit, NaNs in place, on the host and x86-64-v3.

    python3 tests/models/minmax_special.py build/icc
Exits 1 if any check fails.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from icc_run import cpu_has, interp_want, run, run_cases, run_lib

RNG = np.random.default_rng(11)

KINDS = ["normal", "one_neg_zero", "zeros_among_positives", "zeros_among_negatives", "quiet_nan",
         "signaling_nan", "nan_column", "infinities"]


def model(path, op, shape, axes, f64):
    """x -> op(x): ReduceMax/ReduceMin over axes, all of them for None."""
    dt = TensorProto.DOUBLE if f64 else TensorProto.FLOAT
    inits, ins = [], ["x"]
    if axes is not None:
        inits.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
        ins.append("axes")
    node = helper.make_node(op, ins, ["y"], keepdims=1)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", dt, shape)],
                          [helper.make_tensor_value_info("y", dt, None)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), path)


def special(kind, shape, f64):
    x = RNG.standard_normal(shape).astype(np.float64 if f64 else np.float32)
    n = x.size
    if kind == "one_neg_zero":
        x[...] = 0
        x.flat[RNG.integers(n)] = -0.0
    elif kind == "zeros_among_positives":
        x = np.abs(x)
        x.flat[RNG.integers(n, size=3)] = 0.0
        x.flat[RNG.integers(n, size=3)] = -0.0
    elif kind == "zeros_among_negatives":
        x = -np.abs(x)
        x.flat[RNG.integers(n, size=3)] = -0.0
        x.flat[RNG.integers(n, size=3)] = 0.0
    elif kind == "quiet_nan":
        x.flat[RNG.integers(n)] = np.nan
    elif kind == "signaling_nan":
        bits = x.view(np.uint64 if f64 else np.uint32)
        bits.flat[RNG.integers(n)] = 0x7FF4000000000000 if f64 else 0x7FA00000
    elif kind == "nan_column":
        x[..., -1] = np.nan
        x[..., 0] = -np.inf
    elif kind == "infinities":
        x.flat[RNG.integers(n, size=4)] = np.inf
        x.flat[RNG.integers(n, size=4)] = -np.inf
    return x


def same(a, b):
    """Equal NaN positions, and every other value bit for bit."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    na, nb = np.isnan(a), np.isnan(b)
    return np.array_equal(na, nb) and np.array_equal(np.where(na, 0, a).view(np.uint8), np.where(nb, 0, b).view(np.uint8))


CASES = [
    ("min_all", dict(op="ReduceMin", shape=[96, 1000], axes=None, f64=False)),
    ("max_all", dict(op="ReduceMax", shape=[3, 4096], axes=None, f64=False)),
    ("max_last_tail", dict(op="ReduceMax", shape=[6, 1000], axes=[1], f64=False)),
    ("min_last_f64", dict(op="ReduceMin", shape=[5, 257], axes=[1], f64=True)),
    ("max_all_f64", dict(op="ReduceMax", shape=[2, 3000], axes=None, f64=True)),
    ("min_last_of_3", dict(op="ReduceMin", shape=[2, 3, 520], axes=[2], f64=False)),
]


def check(icc, tmp, name, kw):
    """One case (icc_run.run_cases): the checks that failed."""
    dq = cpu_has("avx512dq")
    failed = 0
    path = os.path.join(tmp, name + ".onnx")
    model(path, **kw)
    insn = "vrangepd" if kw["f64"] else "vrangeps"
    # each kind of input and the interpreter's output on it, once for both targets
    inputs = []
    for kind in KINDS:
        xp, want = interp_want(icc, tmp, name + kind, path, "x", special(kind, kw["shape"], kw["f64"]), "shape-infer")
        inputs.append((kind, xp, want))
    for march in [None, "x86-64-v3"]:
        flags = ["-march=" + march] if march else []
        tag = name + "_" + (march or "host")
        asm, so = os.path.join(tmp, tag + ".s"), os.path.join(tmp, tag + ".so")
        run([icc, path, "--emit=asm", "-o", asm] + flags)
        with open(asm) as f:
            has = insn in f.read()
        run([icc, path, "-o", so] + flags)
        bad = [kind for kind, xp, want in inputs if not same(run_lib(icc, so, "x", xp, "y", tmp, tag), want)]
        expect = dq and not march
        ok = not bad and has == expect
        print("%s %-14s %-9s %s %s; vs the interpreter on %d kinds of input: %s" % (
            "ok  " if ok else "FAIL", name, march or "host", insn, "yes" if has else "no", len(KINDS),
            "all the same" if not bad else "differ on " + ", ".join(bad)), flush=True)
        failed += not ok
    return failed


BOUNDS = [
    ("clip_relu6", dict(op="Clip", lo=0.0, hi=6.0)),
    ("clip_signed_zeros", dict(op="Clip", lo=-0.0, hi=0.0)),
    ("clip_lo_only", dict(op="Clip", lo=1.5, hi=None)),
    ("clip_hi_only", dict(op="Clip", lo=None, hi=-0.5)),
    ("hard_sigmoid", dict(op="HardSigmoid", lo=None, hi=None)),
    ("max_min_consts", dict(op="MaxMin", lo=0.0, hi=6.0)),
    ("const_first", dict(op="MaxMin", lo=-0.0, hi=1.5, first=True)),
]


def bound_model(path, op, lo, hi, first=False):
    """x [7, 300] -> op(x), Clip's bounds constants (absent: ""); MaxMin:
    Min(Max(x, lo), hi) with the constants second (first: first)."""
    if op == "MaxMin":
        inits = [numpy_helper.from_array(np.array(lo, np.float32), "lo"),
                 numpy_helper.from_array(np.array(hi, np.float32), "hi")]
        pair = (lambda a, b: [b, a]) if first else (lambda a, b: [a, b])
        nodes = [helper.make_node("Max", pair("x", "lo"), ["m"]), helper.make_node("Min", pair("m", "hi"), ["y"])]
        g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [7, 300])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
        return
    inits, ins = [], ["x"]
    for nm, v in (("lo", lo), ("hi", hi)):
        if op == "Clip":
            if v is not None:
                inits.append(numpy_helper.from_array(np.array(v, np.float32), nm))
            ins.append(nm if v is not None else "")
    while ins and ins[-1] == "":
        ins.pop()
    node = helper.make_node(op, ins, ["y"])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [7, 300])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def check_bounds(icc, tmp, name, kw):
    failed = 0
    path = os.path.join(tmp, name + ".onnx")
    bound_model(path, **kw)
    inputs = []
    for kind in KINDS + ["at_bounds"]:
        if kind == "at_bounds":
            x = np.array([0.0, -0.0, 6.0, -6.0, 1.5, -0.5, 3.0, -3.0, 0.5, np.nan] * 210, np.float32).reshape(7, 300)
        else:
            x = special(kind, [7, 300], False)
        xp, want = interp_want(icc, tmp, name + kind, path, "x", x, "shape-infer")
        inputs.append((kind, xp, want))
    for march in [None, "x86-64-v3"]:
        flags = ["-march=" + march] if march else []
        tag = name + "_" + (march or "host")
        so = os.path.join(tmp, tag + ".so")
        run([icc, path, "-o", so] + flags)
        bad = [kind for kind, xp, want in inputs if not same(run_lib(icc, so, "x", xp, "y", tmp, tag), want)]
        print("%s %-17s %-9s vs the interpreter on %d kinds of input: %s" % (
            "ok  " if not bad else "FAIL", name, march or "host", len(inputs),
            "all the same" if not bad else "differ on " + ", ".join(bad)), flush=True)
        failed += bool(bad)
    return failed


def main():
    rc = run_cases(__doc__, CASES, check, "avx512dq", "vrange")
    return max(rc, run_cases(__doc__, BOUNDS, check_bounds, "avx512f", "the bounds' compare and blend"))


if __name__ == "__main__":
    sys.exit(main())
