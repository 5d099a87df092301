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


def main():
    return run_cases(__doc__, CASES, check, "avx512dq", "vrange")


if __name__ == "__main__":
    sys.exit(main())
