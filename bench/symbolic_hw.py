#!/usr/bin/env python3
"""What a symbolic height and width costs: the same model compiled with H and W symbolic
(one library for every image size) and pinned by --shape, next to ONNX Runtime on the
symbolic model, in one run.

    python3 bench/symbolic_hw.py [--icc build/icc] [--threads 1,2] [--rounds 3] [--time 0.5]
                                 [--models yolo,dbnet,mobilenetv2,mobilenetv3]
                                 [--onnx PATH=NxCxHxW[,NAME:DIMS]] ...

The models are bench/models/zoo.py's, their input's dims 2 and 3 renamed H and W. Each is
compiled at -O3 twice: symbolic (run with --dim=H=S --dim=W=S, S the model's size) and pinned
(--shape=input:1x3xSxS). icc is timed by `icc bench --json` (p50), ONNX Runtime around
session.run; the engines alternate over --rounds rounds and a latency is the median of the
rounds' p50s. The symbolic library's outputs are checked against ONNX Runtime's at that size.
--onnx adds a model of one image input from a file (e.g. PaddleOCR's detector from `pip download
rapidocr-onnxruntime --no-deps`; nothing here downloads it), run at the given size, compiled as
exported or with the --shape given after the comma (names keep dims symbolic: x:Bx3x48xW), and
pinned to the size; its symbols' run values come from `icc info` of the symbolic library.
The table gives p50 ms, symbolic/pinned and symbolic/ORT (below 1: icc's symbolic library is
faster).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "models"))
import zoo  # noqa: E402


def icc_p50(icc, so, threads, seconds, dims):
    r = subprocess.run([icc, "bench", so, "--threads=%d" % threads, "--time=%g" % seconds, "--warmup=0.2", "--json"]
                       + ["--dim=%s=%d" % kv for kv in dims], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(r.stderr.strip()[-300:])
    return json.loads(r.stdout)["results"][0]["p50_ms"]


def ort_p50(sess, feeds, seconds):
    sess.run(None, feeds)
    t = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(t) < 5:
        t0 = time.perf_counter()
        sess.run(None, feeds)
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--icc", default="build/icc")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--time", type=float, default=0.5)
    ap.add_argument("--models", default="yolo,dbnet,mobilenetv2,mobilenetv3")
    ap.add_argument("--onnx", action="append", default=[])
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="icc_symhw_bench_")
    rows = []
    jobs = []
    for name in [n for n in a.models.split(",") if n]:
        m = zoo.MODELS[name]()
        d = m.graph.input[0].type.tensor_type.shape.dim
        size = d[2].dim_value
        d[2].dim_param, d[3].dim_param = "H", "W"
        path = os.path.join(tmp, name + ".onnx")
        onnx.save(m, path)
        jobs.append((name, path, (1, 3, size, size), []))
    for spec in a.onnx:
        path, rest = spec.split("=", 1)
        sizes, _, shape = rest.partition(",")
        jobs.append((os.path.basename(path).rsplit(".", 1)[0], path, tuple(int(v) for v in sizes.split("x")),
                     ["--shape=" + shape] if shape else []))
    for name, path, shp, sym_opts in jobs:
        inp = onnx.load(path, load_external_data=False).graph.input[0].name
        size = "%dx%d" % shp[2:]
        sym, pin = os.path.join(tmp, name + "_sym.so"), os.path.join(tmp, name + "_pin.so")
        for so, extra in ((sym, sym_opts), (pin, ["--shape=%s:%s" % (inp, "x".join(map(str, shp)))])):
            r = subprocess.run([a.icc, path, "-O3", "-o", so] + extra, capture_output=True, text=True)
            if r.returncode:
                sys.exit("%s: %s" % (name, r.stderr.strip()))
        # the symbolic library's input dims, by position: the run values of its symbols
        info = subprocess.run([a.icc, "info", sym], capture_output=True, text=True).stdout
        line = next(ln for ln in info.splitlines() if ln.strip().startswith(inp + ":"))
        dims = line.split("[", 1)[1].rsplit("]", 1)[0].split(",")
        sym_dims = [(dn, v) for dn, v in zip(dims, shp) if not dn.isdigit()]
        x = np.random.default_rng(0).standard_normal(shp).astype(np.float32)
        xf = os.path.join(tmp, name + "_x.npy")
        np.save(xf, x)
        out = os.path.join(tmp, name + "_out")
        r = subprocess.run([a.icc, "run", sym, "--input", "%s=%s" % (inp, xf), "-o", out], capture_output=True,
                           text=True)
        sess1 = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        want = sess1.run(None, {inp: x})
        names = [o.name for o in sess1.get_outputs()]
        # (icc run names a file after its output, other characters than [A-Za-z0-9._-] as _)
        ok = r.returncode == 0 and all(np.allclose(np.load(os.path.join(out, re.sub(r"[^A-Za-z0-9._-]", "_", n) + ".npy")),
                                                   w, rtol=1e-3, atol=1e-4)
                                       for n, w in zip(names, want))
        for t in [int(v) for v in a.threads.split(",")]:
            so_opts = ort.SessionOptions()
            so_opts.intra_op_num_threads, so_opts.inter_op_num_threads = t, 1
            sess = ort.InferenceSession(path, so_opts, providers=["CPUExecutionProvider"])
            res = {"sym": [], "pin": [], "ort": []}
            for rd in range(a.rounds):
                order = ["sym", "pin", "ort"][rd % 3:] + ["sym", "pin", "ort"][:rd % 3]
                for e in order:
                    if e == "ort":
                        res[e].append(ort_p50(sess, {inp: x}, a.time))
                    else:
                        res[e].append(icc_p50(a.icc, sym if e == "sym" else pin, t, a.time,
                                              sym_dims if e == "sym" else []))
            p = {e: statistics.median(v) for e, v in res.items()}
            rows.append((name, size, t, p["sym"], p["pin"], p["ort"], ok))
            print("%-12s %s %2d thr: symbolic %8.3f  pinned %8.3f  ORT %8.3f ms  sym/pin %.2f  sym/ORT %.2f%s"
                  % (name, size, t, p["sym"], p["pin"], p["ort"], p["sym"] / p["pin"], p["sym"] / p["ort"],
                     "" if ok else "  OUTPUTS DIFFER"), flush=True)
    print("\n| model | size | threads | icc symbolic | icc pinned | ORT (symbolic model) | sym/pinned | sym/ORT |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, size, t, s, p, o, ok in rows:
        print("| %s | %s | %d | %.3f | %.3f | %.3f | %.2f | %.2f%s |"
              % (name, size, t, s, p, o, s / p, s / o, "" if ok else " (outputs differ)"))


if __name__ == "__main__":
    main()
