#!/usr/bin/env python3
"""Whole-model benchmark: icc's compiled model vs its reference interpreter vs
ONNX Runtime, side by side in one run, on the same machine and inputs.

For each model: icc's compile time (`icc MODEL -o X.so`, wall), the .so size,
the compiled model's latency (examples/runner/icc_runner, p50 of --runs after a
warm-up), one interpreter run (from `icc verify`, which also checks that the
compiled outputs match the interpreter's), and ONNX Runtime's p50 with the same
thread count. Prints a Markdown table (ratios are ORT time / icc time: > 1
means icc is faster).

    python3 bench/models.py [--icc build/icc] [--threads 1] [--runs 20] [--level -O3] [MODEL.onnx ...]

Default models: the onnx package's light_resnet50 and light_squeezenet (their
symbolic dims pinned to 1).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort

ort.set_default_logger_severity(3)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/light")


def static_shapes(path):
    """--shape options pinning every symbolic input dim to 1, and the feeds."""
    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    opts, feeds = [], {}
    for i in m.graph.input:
        if i.name in inits:
            continue
        dims = [d.dim_value if d.HasField("dim_value") else 1 for d in i.type.tensor_type.shape.dim]
        opts.append("--shape=%s:%s" % (i.name, "x".join(str(d) for d in dims)))
        feeds[i.name] = np.random.default_rng(0).random(dims, dtype=np.float32)
    return opts, feeds


def ort_p50(path, feeds, threads, runs):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    s.run(None, feeds)
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        s.run(None, feeds)
        ts.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(ts))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--icc", default=os.path.join(ROOT, "build/icc"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--level", default="-O3", help="icc's optimization level (-O0..-O3)")
    ap.add_argument("models", nargs="*")
    a = ap.parse_args()
    models = a.models or [os.path.join(LIGHT, m + ".onnx") for m in ("light_resnet50", "light_squeezenet")]
    tmp = tempfile.mkdtemp()
    runner = os.path.join(tmp, "icc_runner")
    build = os.path.dirname(os.path.abspath(a.icc))
    subprocess.run(["cc", "-O2", "-I" + os.path.join(ROOT, "include"), os.path.join(ROOT, "examples/runner/icc_runner.c"),
                    os.path.join(build, "libiccrt.a"), "-lpthread", "-ldl", "-o", runner], check=True)
    env = dict(os.environ, ICC_NUM_THREADS=str(a.threads))
    print("threads: %d, runs: %d (p50 after one warm-up), icc %s\n" % (a.threads, a.runs, a.level))
    print("| model | compile (s) | .so (MB) | icc compiled (ms) | icc interpreter (ms) | ONNX Runtime (ms) | ORT / icc |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for path in models:
        name = os.path.basename(path)[:-5]
        opts, feeds = static_shapes(path)
        so = os.path.join(tmp, name + ".so")
        t0 = time.perf_counter()
        r = subprocess.run([a.icc, path, *opts, a.level, "-o", so], capture_output=True, text=True)
        tc = time.perf_counter() - t0
        if r.returncode:
            print("| %s | failed: %s |" % (name, r.stderr.strip()[:200]))
            continue
        out = subprocess.run([runner, so, "--runs=%d" % a.runs], capture_output=True, text=True, env=env)
        m = re.search(r"p50 ([0-9.]+) ms", out.stdout)
        icc_ms = float(m.group(1)) if m else float("nan")
        v = subprocess.run([a.icc, "verify", path, *opts, a.level, "--rtol=1e-3", "--atol=1e-4"], capture_output=True,
                           text=True, env=env)
        m = re.search(r"([0-9.]+) ms interpreted", v.stdout)
        interp_ms = float(m.group(1)) if m else float("nan")
        ok = "" if v.returncode == 0 else " (verify: MISMATCH)"
        ort_ms = ort_p50(path, feeds, a.threads, a.runs)
        print("| %s%s | %.1f | %.2f | %.1f | %.0f | %.1f | %.2f |" % (
            name, ok, tc, os.path.getsize(so) / 1e6, icc_ms, interp_ms, ort_ms, ort_ms / icc_ms))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
