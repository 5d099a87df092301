#!/usr/bin/env python3
"""Per-call overhead of icc's Python package: m(x=...) next to a bare icc_run
from C (examples/runner/icc_runner.c) and onnxruntime.InferenceSession.run,
on the MLP 784-256-256-10 at batch 1, one thread each; and the ctypes call
of icc_run alone, its arguments prepared once (what any ctypes binding costs).

    PYTHONPATH=python python3 bench/python_overhead.py [--build build] [--rounds 5] [--runs 3000]

The three alternate, round by round, in one run (a noisy machine slows all
of them alike); each round times every call on its own, and the table shows
the median over rounds of each round's p50 and min, in microseconds. The
Python package's overhead is its time less C's.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "python", "tests"))


def per_call(f, runs):
    t = np.empty(runs)
    clock = time.perf_counter_ns
    for i in range(runs):
        t0 = clock()
        f()
        t[i] = clock() - t0
    return np.percentile(t, 50) / 1e3, t.min() / 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3000)
    a = ap.parse_args()
    os.environ["ICC_NUM_THREADS"] = "1"
    os.environ.setdefault("ICC", os.path.join(a.build, "icc"))
    import icc
    import onnxruntime as ort
    from conftest import make_mlp

    d = tempfile.mkdtemp()
    onnx_path = make_mlp(os.path.join(d, "mlp.onnx"))
    so = icc.compile(onnx_path, os.path.join(d, "mlp.so"))
    runner = os.path.join(d, "icc_runner")
    subprocess.run(["cc", "-O2", "-I" + os.path.join(ROOT, "include"),
                    os.path.join(ROOT, "examples", "runner", "icc_runner.c"),
                    os.path.join(a.build, "libiccrt.a"), "-lpthread", "-ldl", "-lm", "-o", runner], check=True)

    m = icc.load(so, threads=1)
    x = np.random.default_rng(0).standard_normal((1, 784)).astype(np.float32)
    out = [np.empty((1, 10), np.float32)]
    so_opts = ort.SessionOptions()
    so_opts.intra_op_num_threads = so_opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(onnx_path, so_opts, providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": x})[0]
    np.testing.assert_allclose(m(x=x), want, rtol=1e-4, atol=1e-5)

    def c_runner():
        txt = subprocess.run([runner, so, "--threads=1", "--runs=%d" % a.runs], check=True,
                             stdout=subprocess.PIPE, text=True).stdout
        p50, mn = re.search(r"p50 ([0-9.]+) ms.*min ([0-9.]+) ms", txt).groups()
        return float(p50) * 1e3, float(mn) * 1e3

    # the floor of any ctypes binding: icc_run alone, its arguments made once
    import ctypes
    ctx = m._ctx()
    y = out[0]
    ctx.ins[0], ctx.outs[0] = x.ctypes.data, y.ctypes.data
    ctx.dims[0][:2] = x.shape
    bare = (m._core.lib.icc_run, ctypes.c_void_p(ctx.handle), ctx.ins, ctx.dimp, ctx.outs)

    cases = [("C: icc_run (icc_runner)", c_runner),
             ("ctypes: icc_run, arguments prepared", lambda: per_call(lambda: bare[0](*bare[1:]), a.runs)),
             ("Python: m(x=x)", lambda: per_call(lambda: m(x=x), a.runs)),
             ("Python: m.run({'x': x}, out=out)", lambda: per_call(lambda: m.run({"x": x}, out=out), a.runs)),
             ("onnxruntime: sess.run(None, {'x': x})", lambda: per_call(lambda: sess.run(None, {"x": x}), a.runs))]
    for _, f in cases[1:]:
        f()  # warm
    res = {name: [] for name, _ in cases}
    for _ in range(a.rounds):
        for name, f in cases:
            res[name].append(f())
    base = np.median([p for p, _ in res[cases[0][0]]])
    print("MLP 784-256-256-10, batch 1, 1 thread, %d rounds x %d calls (us; median over rounds)"
          % (a.rounds, a.runs))
    print("| %-40s | %8s | %8s | %12s |" % ("call", "p50", "min", "p50 - C p50"))
    print("| %s | %s | %s | %s |" % ("-" * 40, "-" * 8, "-" * 8, "-" * 12))
    for name, _ in cases:
        p50 = np.median([p for p, _ in res[name]])
        mn = np.median([q for _, q in res[name]])
        print("| %-40s | %8.1f | %8.1f | %12.1f |" % (name, p50, mn, p50 - base))


if __name__ == "__main__":
    main()
