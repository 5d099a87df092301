#!/usr/bin/env python3
"""Load-time kernels (docs/runtime.md): two icc builds side by side on the
onnx package's light models whose weights are computed from constants
(ConstantOfShape), e.g. this branch against a baseline build.

Each model is compiled by both; then, for --rounds rounds, alternating the
two, `icc bench X.so --threads=T --time=S` gives the p50 of each, and a
ctypes harness times icc_model_open + the first context + the first run
(in a fresh process, so the peak RSS is that of one model). Prints the
medians over rounds and the ratios new/base (p50 below 1 is faster).

    python3 bench/load_time.py --new build/icc --base /path/to/base/icc \\
        [--models light_resnet50,light_squeezenet] [--threads 1,2] [--rounds 3] [--time 3]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnx

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/light")

OPEN = r'''
import ctypes, resource, sys, time
import numpy as np
so, n = sys.argv[1], int(sys.argv[2])
lib = ctypes.CDLL(so)
m, ctx = ctypes.c_void_p(), ctypes.c_void_p()
t0 = time.perf_counter()
assert lib.icc_model_open(so.encode(), None, ctypes.byref(m)) == 0
t1 = time.perf_counter()
assert lib.icc_context_create(m, None, ctypes.byref(ctx)) == 0
x = np.zeros(n, np.float32)
y = np.zeros(1 << 20, np.float32)
ins = (ctypes.c_void_p * 1)(x.ctypes.data)
outs = (ctypes.c_void_p * 1)(y.ctypes.data)
lib.icc_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
t2 = time.perf_counter()
assert lib.icc_run(ctx, ins, None, outs) == 0
t3 = time.perf_counter()
print("%.3f %.3f %d" % ((t1 - t0) * 1e3, (t3 - t2) * 1e3, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
'''


def p50(icc, so, threads, secs):
    r = subprocess.run([icc, "bench", so, "--threads=%d" % threads, "--time=%g" % secs],
                       capture_output=True, text=True, check=True)
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) > 4 and f[0] == str(threads) and f[1] == "1":
            return float(f[3])
    raise RuntimeError("no p50 in: " + r.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--new", required=True)
    ap.add_argument("--base", required=True)
    ap.add_argument("--models", default="light_resnet50,light_squeezenet")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--time", type=float, default=3)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    engines = (("base", os.path.abspath(a.base)), ("new", os.path.abspath(a.new)))
    for name in a.models.split(","):
        path = os.path.join(LIGHT, name + ".onnx")
        m = onnx.load(path, load_external_data=False)
        inits = {i.name for i in m.graph.initializer}
        inp = [i for i in m.graph.input if i.name not in inits][0]
        dims = [d.dim_value if d.HasField("dim_value") else 1 for d in inp.type.tensor_type.shape.dim]
        shape = "--shape=%s:%s" % (inp.name, "x".join(map(str, dims)))
        so = {}
        for tag, icc in engines:
            so[tag] = os.path.join(tmp, "%s_%s.so" % (name, tag))
            subprocess.run([icc, path, shape, "-o", so[tag]], check=True, capture_output=True)
        res = {}
        for r in range(a.rounds):
            for tag, icc in engines if r % 2 == 0 else engines[::-1]:
                o = subprocess.run([sys.executable, "-c", OPEN, so[tag], str(int(np.prod(dims)))],
                                   capture_output=True, text=True, check=True).stdout.split()
                res.setdefault((tag, "open"), []).append(float(o[0]))
                res.setdefault((tag, "first"), []).append(float(o[1]))
                res.setdefault((tag, "rss"), []).append(float(o[2]) / 1024)
                for t in map(int, a.threads.split(",")):
                    res.setdefault((tag, t), []).append(p50(icc, so[tag], t, a.time))
        med = {k: statistics.median(v) for k, v in res.items()}
        print("%s (%d rounds, medians):" % (name, a.rounds))
        for t in map(int, a.threads.split(",")):
            print("  p50 threads %d: base %.2f ms, new %.2f ms, new/base %.3f" %
                  (t, med[("base", t)], med[("new", t)], med[("new", t)] / med[("base", t)]))
        print("  open: base %.2f ms, new %.2f ms; first run: base %.2f ms, new %.2f ms" %
              (med[("base", "open")], med[("new", "open")], med[("base", "first")], med[("new", "first")]))
        print("  peak RSS (open + one run): base %.1f MB, new %.1f MB" % (med[("base", "rss")], med[("new", "rss")]))


if __name__ == "__main__":
    main()
