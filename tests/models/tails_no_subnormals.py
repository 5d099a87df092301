#!/usr/bin/env python3
"""Sigmoid, SiLU (x * Sigmoid(x)) and Gelu with approximate = "tanh" over their
whole range, compiled by icc, against the exact functions.

On f32 the compiled forms never make a subnormal: each one is a microcode
assist on x86, in the op and in every kernel that reads it (a byte classifier's
tanh Gelu over its conv outputs spent 3 ns an element). Where the true result
is about 2^-126 or less (Sigmoid below x = -87.33; the tanh Gelu below z =
-43.5, where it is under |x| 2^-125) they may give 0 (-0 for the Gelu);
everywhere else they match the exact function (numpy in f64, the tanh Gelu as
x / (1 + e^-2z), which does not cancel) within 2e-6 relative (the Gelu: plus
what z's own f32 rounding makes of e^2z, 2|z| 2^-24). ONNX Runtime is
no oracle in these tails: its Sigmoid is 0 from x = -87 on, where the true
value is still a normal number. Inputs: a dense sweep of [-120, 120], the
binades from 2^-30 to 2^7 of both signs, +-0, +-inf and NaN.

    python3 tests/models/tails_no_subnormals.py build/icc
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as P, helper as h

TINY = np.float32(2.0 ** -126)


def model(path, op):
    x = h.make_tensor_value_info("x", P.FLOAT, ["N"])
    y = h.make_tensor_value_info("y", P.FLOAT, ["N"])
    if op == "silu":
        nodes = [h.make_node("Sigmoid", ["x"], ["s"]), h.make_node("Mul", ["x", "s"], ["y"])]
    elif op == "gelu_tanh":
        nodes = [h.make_node("Gelu", ["x"], ["y"], approximate="tanh")]
    else:
        nodes = [h.make_node("Sigmoid", ["x"], ["y"])]
    g = h.make_graph(nodes, op, [x], [y])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 20)]), path)


def inputs():
    b = [np.float32(2.0 ** e) * m for e in range(-30, 8) for m in (1.0, 1.25, 1.5, 1.75)]
    v = np.concatenate([np.linspace(-120, 120, 48001, dtype=np.float32), np.array(b, np.float32),
                        -np.array(b, np.float32), np.array([0.0, -0.0, np.inf, -np.inf, np.nan], np.float32)])
    return v.astype(np.float32)


def main():
    icc = os.path.abspath(sys.argv[1])
    t = tempfile.mkdtemp()
    x = inputs()
    np.save(os.path.join(t, "x.npy"), x)
    failed = 0
    for op in ("sigmoid", "silu", "gelu_tanh"):
        path = os.path.join(t, op + ".onnx")
        model(path, op)
        so = os.path.join(t, op + ".so")
        r = subprocess.run([icc, path, "-O3", "-o", so], capture_output=True, text=True)
        if r.returncode:
            print("FAIL %s: compile: %s" % (op, r.stderr.strip()))
            failed += 1
            continue
        out = os.path.join(t, op + "_out")
        r = subprocess.run([icc, "run", so, "--input", "x=" + os.path.join(t, "x.npy"), "-o", out],
                           capture_output=True, text=True)
        if r.returncode:
            print("FAIL %s: run: %s" % (op, r.stderr.strip()))
            failed += 1
            continue
        y = np.load(os.path.join(out, "y.npy"))
        xd = x.astype(np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            if op == "gelu_tanh":
                z = np.sqrt(2 / np.pi) * (xd + 0.044715 * xd ** 3)
                ref = xd / (1 + np.exp(-2 * z))
                bound = np.abs(xd) * 2.0 ** -125
                # z itself is rounded to f32 (2^-24 relative), which e^2z
                # carries as 2|z| 2^-24 relative: 9.5e-6 at x = -10
                rtol = 2e-6 + 4 * np.abs(z) * 2.0 ** -24
            else:
                ref = 1 / (1 + np.exp(-xd))
                bound = np.full_like(xd, 1.006 * 2.0 ** -126)
                rtol = np.full_like(xd, 2e-6)
                if op == "silu":
                    ref = xd * ref
                    bound = np.abs(xd) * bound
        ref[np.isnan(xd)] = np.nan
        if op != "sigmoid":
            ref[xd == -np.inf] = np.nan   # -inf * 0
        nan_ok = np.array_equal(np.isnan(y), np.isnan(ref))
        fin = ~np.isnan(ref)
        a, e, bd, rt = y[fin].astype(np.float64), ref[fin], bound[fin], rtol[fin]
        with np.errstate(invalid="ignore"):
            close = (a == e) | (np.abs(a - e) <= rt * np.abs(e)) | ((a == 0) & (np.abs(e) < bd))
        sub = int(np.sum((y != 0) & (np.abs(y) < TINY)))
        ok = nan_ok and bool(close.all()) and sub == 0
        small = (a == e) | (np.abs(e) < bd)
        with np.errstate(invalid="ignore"):
            rel = np.where(small, 0, np.abs(a - e) / np.maximum(rt * np.abs(e), 1e-300))
        with np.errstate(invalid="ignore"):
            worst = float(np.max(rel))
        print("%s %s over %d inputs: worst error %.2f of its bound, %d subnormal results, NaNs %s" % (
            "ok  " if ok else "FAIL", op, x.size, worst, sub, "match" if nan_ok else "DIFFER"))
        if not ok:
            bad = np.where(~close)[0][:5]
            print("     first mismatches: x %s icc %s exact %s" % (x[fin][bad], y[fin][bad], ref[fin][bad]))
        failed += not ok
    print("tails without subnormals: %s" % ("all passed" if not failed else "%d failed" % failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
