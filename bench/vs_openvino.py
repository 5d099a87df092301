#!/usr/bin/env python3
"""icc against OpenVINO's default precision, alternating in rounds.

OpenVINO compiles to bf16 by default where the CPU has AMX or AVX512-BF16; on
shared machines whose neighbours also use the AMX unit, latency flips between
two levels for seconds at a time, so a single side-by-side pair can compare a
fast window with a slow one. This script compiles MODEL with icc (-O3 and the
given flags), then alternates `icc bench` (p50 of --runs calls after a short
warm-up) with OpenVINO's synchronous infer (p50 of as many calls) for --rounds
rounds, and prints each round's pair and ratio, then the median ratio, the
best (both engines' minimum p50 over the rounds) and the fastest single runs
(each engine's minimum over every run: the figure a 2-3x slow stretch of the
host moves least).

    python3 bench/vs_openvino.py MODEL.onnx [--icc build/icc] [--threads 1,2]
        [--rounds 4] [--runs 200] [--flags="--precision=bf16"]
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--icc", default=os.path.join(os.path.dirname(__file__), "..", "build", "icc"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--flags", default="--precision=bf16")
    a = ap.parse_args()
    import openvino as ov
    tmp = tempfile.mkdtemp(prefix="icc-vs-ov-")
    so = os.path.join(tmp, "model.so")
    r = subprocess.run([a.icc, a.model, "-O3", *shlex.split(a.flags), "-o", so], capture_output=True, text=True)
    if r.returncode:
        sys.exit("icc: " + (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1])
    core = ov.Core()
    print("model %s, icc %s; OpenVINO %s, its default precision" % (a.model, a.flags, ov.__version__))
    for threads in [int(t) for t in a.threads.split(",")]:
        cm = core.compile_model(a.model, "CPU", {"INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": 1,
                                                  "PERFORMANCE_HINT": "LATENCY"})
        req = cm.create_infer_request()
        rng = np.random.default_rng(0)
        feeds = {i.get_any_name(): rng.standard_normal([d if d > 0 else 1 for d in i.get_shape()]).astype(np.float32)
                 for i in cm.inputs}

        def ov_p50():
            t_end = time.perf_counter() + 0.3
            while time.perf_counter() < t_end:
                req.infer(feeds)
            ts = []
            for _ in range(a.runs):
                t = time.perf_counter()
                req.infer(feeds)
                ts.append(time.perf_counter() - t)
            return float(np.median(ts)) * 1e3, min(ts) * 1e3

        def icc_p50():
            out = subprocess.run([a.icc, "bench", so, "--threads=%d" % threads, "--runs=%d" % a.runs, "--time=0.01",
                                  "--warmup=0.3", "--json"], capture_output=True, text=True)
            res = json.loads(out.stdout)["results"][0]
            return float(res["p50_ms"]), float(res["min_ms"])

        pairs, mins = [], []
        for rd in range(a.rounds):
            (x, xm), (y, ym) = icc_p50(), ov_p50()
            pairs.append((x, y))
            mins.append((xm, ym))
            print("threads %d round %d: icc %.3f ms, OpenVINO %.3f ms, icc/OpenVINO %.2f" % (threads, rd, x, y, x / y),
                  flush=True)
        ratios = sorted(x / y for x, y in pairs)
        bi, bo = min(x for x, _ in pairs), min(y for _, y in pairs)
        mi, mo = min(x for x, _ in mins), min(y for _, y in mins)
        print("threads %d: median icc/OpenVINO %.2f; best icc %.3f ms, best OpenVINO %.3f ms (%.2f); "
              "fastest runs icc %.3f ms, OpenVINO %.3f ms (%.2f)" % (
                  threads, ratios[len(ratios) // 2], bi, bo, bi / bo, mi, mo, mi / mo), flush=True)


if __name__ == "__main__":
    main()
