#!/usr/bin/env python3
"""Threads: does a second thread make a model faster? icc at 1 and 2 threads
against ONNX Runtime at 1 and 2 (intra_op_num_threads), side by side.

For each model the four engines (icc 1T, icc 2T, ORT 1T, ORT 2T; with --base,
also a baseline icc's 1T and 2T) run in turn, --rounds times, each a short
timed burst (`icc bench X.so --threads=1,2` for icc, the same loop in-process
for ORT), so a load spike on a shared machine hits all of them alike. Prints
the median over rounds of each burst's p50, in ms, and the 2T/1T ratios.

    python3 bench/threads.py [--icc build/icc] [--base OLD/icc] [--rounds 5] [--time 0.4] [MODEL ...]

Models (default all): mlp1 and mlp16 (MLP 784-256-256-10 at batch 1 and 16),
bert (tests/models/make_bert_layer.py, seq 128), cnn (a small ResNet-style
CNN on 1x3x64x64: a stride-2 stem, two residual blocks of 3x3 convs at 32
and 64 channels, global average pool, a 10-way Gemm).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

ort.set_default_logger_severity(3)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def save(nodes, inits, inputs, outputs, path):
    g = h.make_graph(nodes, "g", inputs, outputs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def mlp(path, batch):
    rng = np.random.default_rng(0)
    dims = [784, 256, 256, 10]
    nodes, inits, x = [], [], "x"
    for i in range(3):
        inits += [nh.from_array((rng.standard_normal((dims[i], dims[i + 1])) * 0.05).astype(np.float32), "w%d" % i),
                  nh.from_array((rng.standard_normal(dims[i + 1]) * 0.05).astype(np.float32), "b%d" % i)]
        nodes += [h.make_node("MatMul", [x, "w%d" % i], ["m%d" % i]), h.make_node("Add", ["m%d" % i, "b%d" % i], ["a%d" % i])]
        x = "a%d" % i
        if i < 2:
            nodes.append(h.make_node("Relu", [x], ["r%d" % i]))
            x = "r%d" % i
    save(nodes, inits, [h.make_tensor_value_info("x", T.FLOAT, [batch, 784])],
         [h.make_tensor_value_info(x, T.FLOAT, [batch, 10])], path)


def cnn(path):
    rng = np.random.default_rng(0)
    nodes, inits = [], []
    count = [0]

    def conv(x, cin, cout, k, stride, relu=True):
        count[0] += 1
        n = "c%d" % count[0]
        inits.append(nh.from_array((rng.standard_normal((cout, cin, k, k)) * (2.0 / (cin * k * k)) ** 0.5)
                                   .astype(np.float32), n + "_w"))
        inits.append(nh.from_array((rng.standard_normal(cout) * 0.01).astype(np.float32), n + "_b"))
        nodes.append(h.make_node("Conv", [x, n + "_w", n + "_b"], [n], kernel_shape=[k, k], strides=[stride, stride],
                                 pads=[k // 2] * 4))
        if not relu:
            return n
        nodes.append(h.make_node("Relu", [n], [n + "_r"]))
        return n + "_r"

    def block(x, cin, cout, stride):
        y = conv(conv(x, cin, cout, 3, stride), cout, cout, 3, 1, relu=False)
        sc = x if cin == cout and stride == 1 else conv(x, cin, cout, 1, stride, relu=False)
        nodes.append(h.make_node("Add", [y, sc], [y + "_add"]))
        nodes.append(h.make_node("Relu", [y + "_add"], [y + "_out"]))
        return y + "_out"

    x = conv("x", 3, 32, 3, 2)
    x = block(x, 32, 32, 1)
    x = block(x, 32, 64, 2)
    nodes.append(h.make_node("GlobalAveragePool", [x], ["gap"]))
    nodes.append(h.make_node("Flatten", ["gap"], ["flat"]))
    inits.append(nh.from_array((rng.standard_normal((10, 64)) * 0.1).astype(np.float32), "fc_w"))
    inits.append(nh.from_array(np.zeros(10, np.float32), "fc_b"))
    nodes.append(h.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["y"], transB=1))
    save(nodes, inits, [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 64, 64])],
         [h.make_tensor_value_info("y", T.FLOAT, [1, 10])], path)


def feeds_of(path):
    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    rng = np.random.default_rng(0)
    return {i.name: rng.random([d.dim_value for d in i.type.tensor_type.shape.dim], dtype=np.float32)
            for i in m.graph.input if i.name not in inits}


def ort_session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def ort_p50(sess, feeds, seconds):
    sess.run(None, feeds)
    ts, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end or len(ts) < 5:
        t0 = time.perf_counter()
        sess.run(None, feeds)
        ts.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(ts))


def icc_p50s(icc, so, seconds):
    r = subprocess.run([icc, "bench", so, "--threads=1,2", "--json", "--warmup=0.1", "--time=%g" % seconds,
                        "--runs=5"], capture_output=True, text=True, check=True)
    res = json.loads(r.stdout)["results"]
    return {x["threads"]: x["p50_ms"] for x in res}


def measure(p, name, compilers, tmp, level, rounds, seconds):
    """Compiles p with each (cname, icc) of compilers and times it at 1 and 2
    threads against ONNX Runtime, the engines alternating over the rounds:
    the median of the per-burst p50s (ms) per column ('icc 1T', ..., 'ORT 2T')."""
    sos = {}
    for cname, icc in compilers:
        so = os.path.join(tmp, "%s_%s.so" % (name, cname))
        subprocess.run([icc, p, level, "-o", so], check=True, capture_output=True)
        sos[cname] = (icc, so)
    feeds = feeds_of(p)
    sess = {t: ort_session(p, t) for t in (1, 2)}
    got = {}
    for _ in range(rounds):
        for cname, (icc, so) in sos.items():
            r = icc_p50s(icc, so, seconds)
            got.setdefault(cname + " 1T", []).append(r[1])
            got.setdefault(cname + " 2T", []).append(r[2])
        for t in (1, 2):
            got.setdefault("ORT %dT" % t, []).append(ort_p50(sess[t], feeds, seconds))
    return {c: float(np.median(v)) for c, v in got.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--icc", default=os.path.join(ROOT, "build/icc"))
    ap.add_argument("--base", help="a baseline icc binary, measured alongside")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--time", type=float, default=0.4, help="seconds per burst")
    ap.add_argument("--level", default="-O3")
    ap.add_argument("models", nargs="*", default=["mlp1", "mlp16", "bert", "cnn"])
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    paths = {}
    for name in a.models:
        p = os.path.join(tmp, name + ".onnx")
        if name == "mlp1":
            mlp(p, 1)
        elif name == "mlp16":
            mlp(p, 16)
        elif name == "cnn":
            cnn(p)
        elif name == "bert":
            subprocess.run([sys.executable, os.path.join(ROOT, "tests/models/make_bert_layer.py"), tmp], check=True,
                           capture_output=True)
            p = os.path.join(tmp, "bert_layer.onnx")
        else:
            p = name
        paths[name] = p
    compilers = [("icc", a.icc)] + ([("base", a.base)] if a.base else [])
    print("rounds: %d x %.2f s bursts, icc %s; median of per-burst p50 (ms)\n" % (a.rounds, a.time, a.level))
    cols = [c + t for c, _ in compilers for t in (" 1T", " 2T")] + ["ORT 1T", "ORT 2T"]
    print("| model | " + " | ".join(cols) + " | icc 2T/1T | ORT 2T/1T | ORT 2T / icc 2T |")
    print("|" + " --- |" * (len(cols) + 4))
    for name, p in paths.items():
        med = measure(p, name, compilers, tmp, a.level, a.rounds, a.time)
        print("| %s | %s | %.2f | %.2f | %.2f |" % (
            name, " | ".join("%.3f" % med[c] for c in cols), med["icc 2T"] / med["icc 1T"],
            med["ORT 2T"] / med["ORT 1T"], med["ORT 2T"] / med["icc 2T"]))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
