#!/usr/bin/env python3
"""fp32 vs int8 (calibrated) vs int8-dynamic, compiled by icc: latency, .so size and accuracy.

For each model: compile at fp32, --precision=int8 --calibrate=DIR (DIR: --sets random input sets
drawn like the test input), the same with --no-default-keep ("int8 all": the last layer too) and
--precision=int8-dynamic; run each .so through
examples/runner/icc_runner (p50 of --runs after a warm-up, ICC_NUM_THREADS=--threads) and on one
test input through `icc run`, and print a Markdown table with the cosine of each output against
the fp32 .so's.

    python3 bench/int8_models.py [--icc build/icc] [--threads 1] [--runs 5] [--sets 4] [--seq 128]

Models: the BERT-shaped layer (tests/models/make_bert_layer.py, seq --seq) and the onnx package's
light_resnet50 (its batch pinned to 1).
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/light")


def inputs_of(path):
    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    out = []
    for i in m.graph.input:
        if i.name in inits:
            continue
        shape = [d.dim_value if d.dim_value > 0 else 1 for d in i.type.tensor_type.shape.dim]
        out.append((i.name, shape))
    return out, m.graph.output[0].name


def make_feeds(name, ins, rng):
    feeds = {}
    for n, shape in ins:
        if n == "mask":
            feeds[n] = np.zeros(shape, np.float32)
        elif name == "light_resnet50":
            feeds[n] = rng.random(shape, dtype=np.float32)
        else:
            feeds[n] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def save(d, feeds):
    for k, v in feeds.items():
        f = os.path.join(d, k + ".npy")  # a name with '/' (gpu_0/data_0) is a subfolder
        os.makedirs(os.path.dirname(f), exist_ok=True)
        np.save(f, v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--icc", default=os.path.join(ROOT, "build/icc"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--sets", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--method", default="minmax")
    ap.add_argument("--skip-bert", action="store_true")
    ap.add_argument("models", nargs="*")
    a = ap.parse_args()
    a.icc = os.path.abspath(a.icc)
    tmp = tempfile.mkdtemp(prefix="icc-int8-bench-")
    build = os.path.dirname(a.icc)
    runner = os.path.join(tmp, "icc_runner")
    subprocess.run(["cc", "-O2", "-I" + os.path.join(ROOT, "include"), os.path.join(ROOT, "examples/runner/icc_runner.c"),
                    os.path.join(build, "libiccrt.a"), "-lpthread", "-ldl", "-o", runner], check=True)
    env = dict(os.environ, ICC_NUM_THREADS=str(a.threads))
    models = a.models
    if not models:
        subprocess.run([sys.executable, os.path.join(ROOT, "tests/models/make_bert_layer.py"), tmp, "--seq",
                        str(a.seq)], check=True, capture_output=True)
        models = ([] if a.skip_bert else [os.path.join(tmp, "bert_layer.onnx")]) + [
            os.path.join(LIGHT, "light_resnet50.onnx")]
    print("threads: %d, %d rounds of %d runs (after one warm-up each; p50: the median of the rounds' p50s), "
          "calibration: %d sets, %s\n" % (a.threads, a.rounds, a.runs, a.sets, a.method))
    print("| model | precision | compile s | .so MB | p50 ms | min ms | fp32 min / min | cosine vs fp32 |")
    print("|---|---|---|---|---|---|---|---|")
    for path in models:
        name = os.path.basename(path)[:-5]
        ins, out_name = inputs_of(path)
        shape = ["--shape=%s:%s" % (n, "x".join(map(str, s))) for n, s in ins]
        d = os.path.join(tmp, name)
        rng = np.random.default_rng(1)
        for s in range(a.sets):
            save(os.path.join(d, "calib", str(s)), make_feeds(name, ins, rng))
        save(os.path.join(d, "test"), make_feeds(name, ins, np.random.default_rng(99)))
        in_args = ["--input=%s=%s" % (n, os.path.join(d, "test", n + ".npy")) for n, _ in ins]
        built = []
        for prec, flags in [("fp32", []),
                            ("int8", ["--precision=int8", "--calibrate=" + os.path.join(d, "calib"),
                                      "--calibrate-method=" + a.method]),
                            ("int8 all", ["--precision=int8", "--no-default-keep",
                                          "--calibrate=" + os.path.join(d, "calib"), "--calibrate-method=" + a.method]),
                            ("int8-dynamic", ["--precision=int8-dynamic"])]:
            so = os.path.join(d, prec.replace(" ", "_") + ".so")
            t0 = time.perf_counter()
            r = subprocess.run([a.icc, path, *shape, *flags, "-o", so], capture_output=True, text=True)
            tc = time.perf_counter() - t0
            if r.returncode:
                print("| %s | %s | failed: %s |" % (name, prec, r.stderr.strip()[-200:]))
                continue
            od = os.path.join(d, prec.replace(" ", "_") + ".out")
            subprocess.run([a.icc, "run", so, *in_args, "-o", od], capture_output=True, env=env)
            y = np.load(os.path.join(od, out_name.replace("/", "_") + ".npy")).ravel().astype(np.float64)
            built.append((prec, so, tc, y))
        # rounds over all variants in turn, so load from other jobs hits each alike; the min of
        # all runs is the least disturbed measurement
        p50s, mins = {}, {}
        for _ in range(a.rounds):
            for prec, so, _, _ in built:
                o = subprocess.run([runner, so, "--runs=%d" % a.runs], capture_output=True, text=True, env=env)
                m = re.search(r"p50 ([0-9.]+) ms.*min ([0-9.]+) ms", o.stdout)
                p50s.setdefault(prec, []).append(float(m.group(1)) if m else float("nan"))
                mins[prec] = min(mins.get(prec, float("inf")), float(m.group(2)) if m else float("nan"))
        ref = built[0][3] if built and built[0][0] == "fp32" else None
        for prec, so, tc, y in built:
            cos = float(y @ ref / (np.linalg.norm(y) * np.linalg.norm(ref) + 1e-30)) if ref is not None else float("nan")
            print("| %s | %s | %.1f | %.2f | %.1f | %.1f | %.2fx | %.5f |" % (
                name, prec, tc, os.path.getsize(so) / 1e6, float(np.median(p50s[prec])), mins[prec],
                mins.get("fp32", float("nan")) / mins[prec], cos))
            sys.stdout.flush()

if __name__ == "__main__":
    main()
