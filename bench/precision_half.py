#!/usr/bin/env python3
"""bf16/fp16 weights (--precision, docs/precision.md): latency and .so size
against fp32, side by side in one run.

Models: the BERT-base layer (tests/models/make_bert_layer.py, seq 128), the
onnx package's light_resnet50, and one MatMul 1x768 @ 768x3072 (a
transformer's FFN at batch 1, bound by reading the weights). Each is compiled
at fp32, bf16 and fp16 (every contraction lowered: --no-default-keep, unless
--default-keep) and timed with examples/runner/icc_runner: p50 of --runs
after a warm-up, at --threads threads; the three take turns --rounds times and
each keeps its best p50.

    python3 bench/precision_half.py [--icc build/icc] [--threads 1] [--runs 20] [--rounds 3] [--level=-O2]
                                    [--default-keep] [MODEL-SUBSTRING ...]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

PRECISIONS = ["fp32", "bf16", "fp16"]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/light")


def matmul_model(path, m=1, k=768, n=3072):
    w = (np.random.default_rng(0).standard_normal((k, n)) * 0.02).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "mm",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])],
                          [numpy_helper.from_array(w, "w")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def shapes(path):
    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    return ["--shape=%s:%s" % (i.name, "x".join(str(d.dim_value if d.HasField("dim_value") else 1)
                                                for d in i.type.tensor_type.shape.dim))
            for i in m.graph.input if i.name not in inits]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--icc", default=os.path.join(ROOT, "build/icc"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3, help="times each variant is timed, taking turns (best p50)")
    ap.add_argument("--level", default="-O2")
    ap.add_argument("--default-keep", action="store_true", help="keep softmax, norms and the last layer fp32")
    ap.add_argument("only", nargs="*", help="models whose name contains one of these (default: all)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    runner = os.path.join(tmp, "icc_runner")
    build = os.path.dirname(os.path.abspath(a.icc))
    subprocess.run(["cc", "-O2", "-I" + os.path.join(ROOT, "include"), os.path.join(ROOT, "examples/runner/icc_runner.c"),
                    os.path.join(build, "libiccrt.a"), "-lpthread", "-ldl", "-o", runner], check=True)
    subprocess.run([sys.executable, os.path.join(ROOT, "tests/models/make_bert_layer.py"), tmp, "--seq", "128"],
                   check=True, capture_output=True)
    mm = os.path.join(tmp, "matmul_1x768x3072.onnx")
    matmul_model(mm)
    models = [os.path.join(tmp, "bert_layer.onnx"), os.path.join(LIGHT, "light_resnet50.onnx"), mm]
    keep = [] if a.default_keep else ["--no-default-keep"]
    print("threads: %d, runs: %d (p50 after one warm-up, best of %d rounds), icc %s, %s\n" % (
        a.threads, a.runs, a.rounds, a.level, "default keep list" if a.default_keep else "--no-default-keep"))
    print("| model | fp32 (ms) | bf16 (ms) | fp16 (ms) | fp32 .so (MB) | bf16 .so (MB) | fp16 .so (MB) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for path in models:
        name = os.path.basename(path)[:-5]
        if a.only and not any(o in name for o in a.only):
            continue
        sos, mb = {}, {}
        for p in PRECISIONS:
            so = os.path.join(tmp, "%s_%s.so" % (name, p))
            r = subprocess.run([a.icc, path, *shapes(path), a.level, "--precision=" + p, *keep, "-o", so],
                               capture_output=True, text=True)
            if r.returncode:
                print("| %s | %s failed: %s |" % (name, p, r.stderr.strip()[:200]))
                break
            sos[p], mb[p] = so, os.path.getsize(so) / 1e6
        else:
            # the variants take turns, --rounds times; each keeps its best p50
            # (a shared machine's noise only ever adds time)
            ms = {p: float("inf") for p in PRECISIONS}
            for _ in range(a.rounds):
                for p in PRECISIONS:
                    out = subprocess.run([runner, sos[p], "--runs=%d" % a.runs, "--threads=%d" % a.threads],
                                         capture_output=True, text=True)
                    m = re.search(r"p50 ([0-9.]+) ms", out.stdout)
                    ms[p] = min(ms[p], float(m.group(1)) if m else float("nan"))
            print("| %s | %.2f | %.2f (%.2fx) | %.2f (%.2fx) | %.2f | %.2f | %.2f |" % (
                name, ms["fp32"], ms["bf16"], ms["fp32"] / ms["bf16"], ms["fp16"], ms["fp32"] / ms["fp16"],
                mb["fp32"], mb["bf16"], mb["fp16"]))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
