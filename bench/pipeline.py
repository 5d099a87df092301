#!/usr/bin/env python3
"""What the optimization pipeline does to a model, -O0 against -O3, in one run.

For each model: nodes, kernels (and fused groups), the arena against the
sum of all intermediates (from `icc info -O0` and `icc info -O3`), the wall
time of every pass of -O3 (`--time-passes`, the median of --compiles
compiles), the whole compile time, and the compiled model's latency at
-O0 and -O3 (examples/runner/icc_runner, p50 of --runs after a warm-up)
next to ONNX Runtime's with the same thread count. Prints Markdown.

    python3 bench/pipeline.py [--icc build/icc] [--threads 1] [--runs 10] [MODEL.onnx ...]

Default models: the onnx package's light_resnet50 and a BERT-base layer
written by tests/models/make_bert_layer.py.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import LIGHT, ROOT, ort_p50, static_shapes  # noqa: E402


def info(icc, path, opts, level):
    out = subprocess.run([icc, "info", path, *opts, level], capture_output=True, text=True, check=True).stdout
    r = {}
    m = re.search(r"^nodes: (\d+)", out, re.M)
    r["nodes_in"] = int(m.group(1))
    m = re.search(r"^after -O\d: (\d+) nodes", out, re.M)
    r["nodes"] = int(m.group(1)) if m else r["nodes_in"]
    m = re.search(r"^kernels: (\d+)(?: \((\d+) fused groups of (\d+) nodes\))?", out, re.M)
    r["kernels"] = int(m.group(1))
    r["groups"] = "%s groups of %s nodes" % (m.group(2), m.group(3)) if m.group(2) else "no groups"
    m = re.search(r"arena ([0-9.]+ [KMG]?B) for \d+ intermediates totalling ([0-9.]+ [KMG]?B)", out)
    if m:
        r["arena"], r["naive"] = m.group(1), m.group(2)
    else:  # not planned (-O0): the compiled model plans by liveness at load
        m = re.search(r"^intermediates: \d+ totalling ([0-9.]+ [KMG]?B)", out, re.M)
        r["arena"], r["naive"] = "not planned", m.group(1) if m else "-"
    m = re.search(r"memory traffic: ([0-9.]+ [KMG]?B)", out)
    r["traffic"] = m.group(1) if m else "?"
    return r


def compile_so(icc, path, opts, level, so, times=None):
    t0 = time.perf_counter()
    r = subprocess.run([icc, path, *opts, level, "-o", so, "--time-passes"], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode:
        raise SystemExit("icc %s failed: %s" % (path, r.stderr.strip()[:300]))
    if times is not None:
        for line in (r.stdout + r.stderr).splitlines():
            m = re.match(r"#\s+([0-9.]+)\s+[0-9.]+%\s+(\S+)$", line)
            if m and m.group(2) != "total":
                times.append((m.group(2), float(m.group(1))))
    return wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--icc", default=os.path.join(ROOT, "build/icc"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--compiles", type=int, default=3)
    ap.add_argument("models", nargs="*")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    models = a.models
    if not models:
        subprocess.run([sys.executable, os.path.join(ROOT, "tests/models/make_bert_layer.py"), tmp],
                       check=True, capture_output=True)
        models = [os.path.join(LIGHT, "light_resnet50.onnx"), os.path.join(tmp, "bert_layer.onnx")]
    runner = os.path.join(tmp, "icc_runner")
    build = os.path.dirname(os.path.abspath(a.icc))
    subprocess.run(["cc", "-O2", "-I" + os.path.join(ROOT, "include"), os.path.join(ROOT, "examples/runner/icc_runner.c"),
                    os.path.join(build, "libiccrt.a"), "-lpthread", "-ldl", "-o", runner], check=True)
    env = dict(os.environ, ICC_NUM_THREADS=str(a.threads))
    print("threads: %d, runs: %d (p50 after one warm-up), pass times: median of %d compiles\n"
          % (a.threads, a.runs, a.compiles))
    for path in models:
        name = os.path.basename(path)[:-5]
        opts, feeds = static_shapes(path)
        i0, i3 = info(a.icc, path, opts, "-O0"), info(a.icc, path, opts, "-O3")
        lat, walls, passes = {}, [], {}
        for level in ("-O0", "-O3"):
            so = os.path.join(tmp, "%s%s.so" % (name, level))
            times = [] if level == "-O3" else None
            walls_l = [compile_so(a.icc, path, opts, level, so, times)]
            if level == "-O3":
                for _ in range(a.compiles - 1):
                    walls_l.append(compile_so(a.icc, path, opts, level, so, times))
                walls = walls_l
                order = []
                for p, ms in times:
                    if p not in passes:
                        passes[p] = []
                    passes[p].append(ms)
                    order.append(p)
            out = subprocess.run([runner, so, "--runs=%d" % a.runs], capture_output=True, text=True, env=env)
            m = re.search(r"p50 ([0-9.]+) ms", out.stdout)
            lat[level] = float(m.group(1)) if m else float("nan")
        ort_ms = ort_p50(path, feeds, a.threads, a.runs)
        print("### %s\n" % name)
        print("| | -O0 | -O3 |")
        print("| --- | --- | --- |")
        print("| nodes (model: %d) | %d | %d |" % (i0["nodes_in"], i0["nodes"], i3["nodes"]))
        print("| kernels | %d (%s) | %d (%s) |" % (i0["kernels"], i0["groups"], i3["kernels"], i3["groups"]))
        print("| arena / all intermediates | %s / %s | %s / %s |" % (i0["arena"], i0["naive"], i3["arena"], i3["naive"]))
        print("| memory traffic | %s | %s |" % (i0["traffic"], i3["traffic"]))
        print("| latency p50 (ms; ONNX Runtime %.1f) | %.1f | %.1f |" % (ort_ms, lat["-O0"], lat["-O3"]))
        print("\n-O3 compile: %.2f s wall (median of %d); passes (ms, one compile runs a pass once per "
              "appearance in the pipeline, summed here):\n" % (statistics.median(walls), len(walls)))
        print("| pass | ms |")
        print("| --- | --- |")
        total = 0.0
        for p, v in passes.items():
            ms = statistics.median(v) * len(v) / len(walls)
            total += ms
            print("| %s | %.3f |" % (p, ms))
        print("| (the rest: reading the model, lowering, LLVM, linking) | %.0f |" % (statistics.median(walls) * 1e3 - total))
        print()
        sys.stdout.flush()


if __name__ == "__main__":
    main()
