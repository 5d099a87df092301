#!/usr/bin/env python3
"""icc next to ONNX Runtime and OpenVINO on one machine, in one command.

    python3 bench/side_by_side.py [--icc build/icc] [--threads 1,2] [--quick] [--filter REGEX]
                                  [--rounds 3] [--time 0.25] [--keep DIR]

Engines:
  icc          the compiled .so (icc -O3), called in this process through the project's Python
               package (python/icc: m.run(feeds, out=...)), less the per-call overhead measured on a
               one-Identity model (printed); its outputs come from `icc run MODEL.so` on the
               same .npy inputs the others get. The Add chains (microseconds and less, where
               a Python call's noise is larger than the run) are timed by `icc bench --json`.
  ONNX Runtime CPUExecutionProvider, ORT_ENABLE_ALL, intra_op_num_threads = the thread count,
               inter_op 1; timed around session.run in Python, less the per-call overhead
               measured on a one-Identity model (printed).
  OpenVINO     the CPU plugin, INFERENCE_PRECISION_HINT=f32, PERFORMANCE_HINT=LATENCY,
               INFERENCE_NUM_THREADS = the thread count; an infer request with its input tensors
               set once, timed around req.infer() (its trivial-model time is printed, not
               subtracted: it is mostly the plugin's own per-inference work).

Every workload runs at each thread count with the engines taking turns (per turn each runs for
0.2 s, at least 3 calls, the order rotating) for --rounds rounds of 3 x --time seconds: a
machine shared with noisy neighbours runs 1.5-2x slow for seconds at a time, which moves
separately timed p50s by tens of percent, while turns a few milliseconds apart see the same
machine. A latency is the p50 of all its calls; icc/ORT and icc/OV are the medians of the
per-turn ratios of the turns' medians (the Add chains: ratios of p50s, each engine timed alone
for --time seconds per round). Outputs
are checked against each other (ONNX Runtime is the reference; a mismatch is printed in the
table, not hidden). A model icc cannot compile yet prints "refused: <icc's message>".

Workloads: the MLP 784-256-256-10 at batch 1 and 16; MatMul M x K x N for M in {1, 16, 128},
K = N in {768, 3072}, and 1024^3 (built by bench/matmul.py, B a graph input), and "linear"
MatMuls 1x3072x3072 and 16x768x768 with B a constant weight (as in models); the onnx package's light ResNet-50,
SqueezeNet and ShuffleNet; bench/models/zoo.py's MobileNetV2, MobileNetV3-style, YOLO-style,
DBNet-style, CRNN-style (bidirectional LSTM) and 6-layer MiniLM models; a BERT-base layer
(tests/models/make_bert_layer.py); Add chains of 1, 64 and 512 nodes; and the GPT-2-shaped
static-KV decoder of bench/models/gpt2_static_kv.py (TTFT and TPOT; icc through `icc bench
--generate`, the others through the same greedy loop in Python, with the same tokens checked).

The table gives p50 ms per engine, icc/ORT and icc/OV as time ratios (below 1: icc is faster),
their geometric means per thread count and that of the ratio to the faster peer (the issue's
target measure; an Add chain whose ONNX Runtime time is within its measured per-call time gets
no ORT ratio and stays out of it), and for GEMMs and models icc's GFLOP/s as a share of
the FP32 FMA peak `icc bench --peak --json` measures (one core's at 1 thread, all cores' past
that). --quick: one round, shorter runs, fewer workloads, the quick peak.
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "models"))
sys.path.insert(0, os.path.join(ROOT, "python"))
import matmul as mm_bench  # noqa: E402
import zoo  # noqa: E402
import gpt2_static_kv  # noqa: E402
from models import LIGHT, static_shapes  # noqa: E402

import onnxruntime as ort  # noqa: E402
import icc  # noqa: E402  (python/icc: the runtime API through ctypes)

ort.set_default_logger_severity(3)
try:
    import openvino as ov
except ImportError:   # the table says so
    ov = None


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ---- workloads ------------------------------------------------------------------

def workloads(tmp, quick):
    """(name, path, kind, flops or None): kind 'gemm', 'model' or 'chain'."""
    w = []
    for b in (1, 16):
        w.append(("mlp b%d" % b, lambda b=b: save(zoo.mlp(b), tmp, "mlp_b%d" % b), "model", None))
    shapes = [(m, k, k) for m in (1, 16, 128) for k in (768, 3072)] + [(1024, 1024, 1024)]
    if quick:
        shapes = [(1, 768, 768), (128, 768, 768), (1024, 1024, 1024)]
    for m, k, n in shapes:
        w.append(("matmul %dx%dx%d" % (m, k, n),
                  lambda m=m, k=k, n=n: save(mm_bench.model("MatMul", [[m, k], [k, n]]), tmp, "mm_%d_%d_%d" % (m, k, n)),
                  "gemm", 2.0 * m * k * n))
    # the same products with B a constant weight, as in models (every engine may pack it at load)
    for m, k, n in ([(1, 3072, 3072), (16, 768, 768)] if not quick else [(1, 768, 768)]):
        w.append(("linear %dx%dx%d" % (m, k, n),
                  lambda m=m, k=k, n=n: save(linear(m, k, n), tmp, "lin_%d_%d_%d" % (m, k, n)), "gemm", 2.0 * m * k * n))
    for name in (["resnet50", "squeezenet", "shufflenet"] if not quick else ["squeezenet"]):
        w.append((name, lambda name=name: os.path.join(LIGHT, "light_%s.onnx" % name), "model", None))
    for name in (["mobilenetv2", "mobilenetv3", "yolo", "dbnet", "crnn", "minilm"] if not quick
                 else ["mobilenetv3", "crnn"]):
        w.append((name, lambda name=name: zoo.write(tmp, name), "model", None))
    if not quick:
        w.append(("bert layer", lambda: bert_layer(tmp), "model", None))
    for n in ((1, 64, 512) if not quick else (1, 512)):
        w.append(("add chain %d" % n, lambda n=n: zoo.write(tmp, "add%d" % n), "chain", None))
    return w


def linear(m, k, n):
    """MatMul [m, k] x a constant [k, n] weight."""
    w = np.random.default_rng(0).standard_normal((k, n)).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["a", "w"], ["y"])], "linear",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [m, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])],
                          [onnx.numpy_helper.from_array(w, "w")])
    mo = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    mo.ir_version = 8
    return mo


def save(m, tmp, name):
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(m, path)
    return path


def bert_layer(tmp):
    subprocess.run([sys.executable, os.path.join(ROOT, "tests/models/make_bert_layer.py"), tmp], check=True,
                   capture_output=True)
    return os.path.join(tmp, "bert_layer.onnx")


def feeds_of(path):
    """Deterministic inputs (floats in [0, 1)), each pinned to its static shape."""
    opts, feeds = static_shapes(path)
    rng = np.random.default_rng(42)
    return opts, {k: rng.random(v.shape, dtype=np.float32) for k, v in feeds.items()}


# ---- engines --------------------------------------------------------------------

def ort_session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def ov_compiled(core, path, threads):
    return core.compile_model(path, "CPU", {"INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY",
                                            "INFERENCE_NUM_THREADS": threads})


def ov_request(core, path, threads, feeds):
    """An infer request with its inputs set once (as an app keeps its buffers), so a call is
    req.infer() alone."""
    req = ov_compiled(core, path, threads).create_infer_request()
    for name, arr in feeds.items():
        req.set_tensor(name, ov.Tensor(arr))
    return req


def p50_loop(fn, seconds, min_runs=5):
    fn()
    ts, end = [], time.perf_counter() + seconds
    while len(ts) < min_runs or time.perf_counter() < end:
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def icc_call(so, threads, feeds):
    """A call of the compiled model in this process (the project's Python package, python/icc):
    its outputs written into arrays made once, as an app's loop would."""
    m = icc.load(so, threads=threads)
    out = m.run(feeds)
    return lambda: m.run(feeds, out=out)


def turns(calls, seconds, slice_s=0.2, min_calls=3, min_turns=3):
    """({engine: [ms per call]}, {engine: [each turn's median ms]}): the engines take turns, each
    running for slice_s (at least min_calls calls) per turn, the order rotating, for at least
    `seconds` and min_turns turns. Slices rather than single calls, so that each engine runs
    back to back as an app's loop does, its thread pool awake and its data in cache: in turns
    of 50 ms OpenVINO's 2-thread SqueezeNet read 6.6-9.2 ms against 4.8-5.0 alone, in turns
    of 200 ms 4.5-5.4 against 4.5-5.4."""
    names = list(calls)
    every, med = {e: [] for e in names}, {e: [] for e in names}
    for f in calls.values():
        f()
    end, r = time.perf_counter() + seconds, 0
    while r < min_turns or time.perf_counter() < end:
        for j in range(len(names)):
            e = names[(r + j) % len(names)]
            ts, stop = [], time.perf_counter() + slice_s
            while len(ts) < min_calls or time.perf_counter() < stop:
                t0 = time.perf_counter()
                calls[e]()
                ts.append((time.perf_counter() - t0) * 1e3)
            every[e] += ts
            med[e].append(statistics.median(ts))
        r += 1
    return every, med


def trivial_model(tmp):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "t", [x],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return save(m, tmp, "trivial")


def icc_compile(icc, path, opts, so):
    """None, or icc's one-line refusal. A library newer than icc is reused (--keep: the models are
    deterministic, so a second run skips the compiles)."""
    if os.path.exists(so) and os.path.getmtime(so) > os.path.getmtime(icc):
        return None
    r = subprocess.run([icc, path, *opts, "-O3", "-o", so], capture_output=True, text=True)
    if r.returncode:
        msg = [l for l in r.stderr.splitlines() if l.startswith("icc: error:")]
        return (msg[-1][len("icc: error: "):] if msg else r.stderr.strip()[-300:]).replace("|", "/")
    return None


def icc_p50(icc, so, threads, seconds):
    r = subprocess.run([icc, "bench", so, "--threads=%d" % threads, "--runs=5", "--time=%g" % seconds,
                        "--warmup=%g" % min(seconds, 0.1), "--json"], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(r.stderr.strip()[-300:])
    return json.loads(r.stdout)["results"][0]["p50_ms"]


def icc_outputs(icc, so, feeds, tmp, names):
    """icc's outputs on feeds, by `icc run` (it writes DIR/<name>.npy, '/' made '_')."""
    d = tempfile.mkdtemp(dir=tmp, prefix="out-")
    args = []
    for k, v in feeds.items():
        f = os.path.join(tmp, "in_%s.npy" % re.sub(r"\W", "_", k))
        np.save(f, v)
        args += ["--input", "%s=%s" % (k, f)]
    r = subprocess.run([icc, "run", so, *args, "-o", d], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(r.stderr.strip()[-300:])
    got = []
    for n in names:
        for f in (n, n.replace("/", "_"), re.sub(r"[^\w.-]", "_", n)):
            if os.path.exists(os.path.join(d, f + ".npy")):
                got.append(np.load(os.path.join(d, f + ".npy")))
                break
        else:
            raise RuntimeError("icc run wrote no %s.npy" % n)
    return got


def mismatch(name, ref, got, rtol=1e-3):
    """'' when got matches ref within rtol of ref's largest magnitude, else a note."""
    bad = []
    for i, (a, b) in enumerate(zip(ref, got)):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        if a.shape != b.shape:
            bad.append("output %d shape %s vs %s" % (i, b.shape, a.shape))
            continue
        scale = max(float(np.abs(a).max()) if a.size else 0.0, 1e-6)
        err = float(np.abs(a - b).max()) if a.size else 0.0
        if not err <= rtol * scale:
            bad.append("output %d max err %.3g (of %.3g)" % (i, err, scale))
    return ("%s MISMATCH: %s" % (name, "; ".join(bad))) if bad else ""


def icc_flops(icc, path, opts):
    r = subprocess.run([icc, "info", path, *opts, "-O3"], capture_output=True, text=True)
    m = re.search(r"^FLOPs: (\d+)", r.stdout, re.M)
    return float(m.group(1)) if m else None


# ---- the decoder ----------------------------------------------------------------

def greedy(run_prefill, run_step, past, P, N, V):
    """TTFT (ms), the decode step times (ms) and the tokens of one generation."""
    t0 = time.perf_counter()
    prompt = [(i * 7919 + 13) % V for i in range(P)]
    logits, past = run_prefill(np.array([prompt], np.int64), np.array([list(range(P))], np.int64), past)
    tok = int(np.argmax(logits[0, -1]))
    ttft, steps, toks = (time.perf_counter() - t0) * 1e3, [], [tok]
    for k in range(N):
        s0 = time.perf_counter()
        logits, past = run_step(np.array([[tok]], np.int64), np.array([[P + k]], np.int64), past)
        tok = int(np.argmax(logits[0, -1]))
        steps.append((time.perf_counter() - s0) * 1e3)
        toks.append(tok)
    return ttft, steps, toks


def decoder_row(a, tmp, threads, core, P=16, N=32):
    dec, pre, dyn = (os.path.join(tmp, n) for n in ("gpt2_dec.onnx", "gpt2_pre.onnx", "gpt2_dyn.onnx"))
    if not os.path.exists(dyn):
        onnx.save(gpt2_static_kv.build(seq=1), dec)
        onnx.save(gpt2_static_kv.build(seq=P), pre)
        onnx.save(gpt2_static_kv.build(), dyn)
        for m in ("dec", "pre"):
            err = icc_compile(a.icc, os.path.join(tmp, "gpt2_%s.onnx" % m), [], os.path.join(tmp, "gpt2_%s.so" % m))
            if err:
                return {"refused": err}
    r = subprocess.run([a.icc, "bench", os.path.join(tmp, "gpt2_dec.so"), "--prefill=" + os.path.join(tmp, "gpt2_pre.so"),
                        "--generate=%d" % N, "--prompt-len=%d" % P, "--threads=%d" % threads, "--runs=3",
                        "--time=%g" % a.time, "--warmup=0.2", "--json"], capture_output=True, text=True)
    if r.returncode:
        return {"refused": r.stderr.strip()[-300:]}
    j = json.loads(r.stdout)
    out = {"icc": (j["ttft_ms"]["p50"], j["tpot_ms"]["p50"]), "tokens": j["tokens"], "notes": []}
    V = j["vocab"]

    def engine_loop(run):
        names = ["logits"] + ["present_%s_%d" % (k, i) for i in range(2) for k in ("key", "value")]

        def call(ids, pos, past):
            feed = dict(past, input_ids=ids, position_ids=pos)
            res = dict(zip(names, run(feed)))
            return res["logits"], {"past" + n[7:]: res[n] for n in names[1:]}
        return call

    zero = {"past_%s_%d" % (k, i): np.zeros((1, 4, 128, 64), np.float32) for i in range(2) for k in ("key", "value")}
    s = ort_session(dyn, threads)
    onames = [o.name for o in s.get_outputs()]
    order = ["logits"] + ["present_%s_%d" % (k, i) for i in range(2) for k in ("key", "value")]
    call = engine_loop(lambda f: [dict(zip(onames, s.run(None, f)))[n] for n in order])
    res = [greedy(call, call, dict(zero), P, N, V) for _ in range(3)]
    out["ort"] = (statistics.median(r[0] for r in res), statistics.median(t for r in res for t in r[1]))
    if res[-1][2] != out["tokens"]:
        out["notes"].append("GPT-2 tokens MISMATCH icc vs ORT: %s vs %s" % (out["tokens"][:8], res[-1][2][:8]))
    if core is not None:
        try:
            out["ov"] = ov_decode(core, dyn, threads, order, engine_loop, zero, P, N, V, out)
        except Exception as e:   # noqa: BLE001 - a failing engine is a note
            out["notes"].append("GPT-2 on OpenVINO failed: %s" % str(e).splitlines()[0][:200])
    return out


def ov_decode(core, dyn, threads, order, engine_loop, zero, P, N, V, out):
    """OpenVINO's TTFT and TPOT on the symbolic-seq decoder, by the same greedy loop."""
    cm = ov_compiled(core, dyn, threads)
    req = cm.create_infer_request()
    outs = {n: o for o in cm.outputs for n in o.get_names()}

    def ov_run(f):
        req.infer(f)
        return [req.get_tensor(outs[n]).data.copy() for n in order]
    call = engine_loop(ov_run)
    res = [greedy(call, call, dict(zero), P, N, V) for _ in range(3)]
    if res[-1][2] != out["tokens"]:
        out["notes"].append("GPT-2 tokens MISMATCH icc vs OpenVINO: %s vs %s" % (out["tokens"][:8], res[-1][2][:8]))
    return (statistics.median(r[0] for r in res), statistics.median(t for r in res for t in r[1]))


# ---- the run --------------------------------------------------------------------

def fmt(x, f=None):
    """x in f, or milliseconds to 3 significant places past the point ('-' for none)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f % x if f else "%.5f" % x if x < 0.01 else "%.3f" % x


def geomean(xs):
    xs = [x for x in xs if x and x > 0 and not math.isnan(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--icc", default=os.path.join(ROOT, "build/icc"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--quick", action="store_true", help="one round, short runs, fewer workloads")
    ap.add_argument("--filter", default=None, help="only workloads whose name matches this regex")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--time", type=float, default=None, help="seconds per engine and round")
    ap.add_argument("--keep", default=None, help="write the models and libraries here (default: a temporary folder)")
    a = ap.parse_args()
    a.rounds = a.rounds or (1 if a.quick else 3)
    a.time = a.time or (0.15 if a.quick else 0.25)
    threads = [int(t) for t in a.threads.split(",")]
    tmp = a.keep or tempfile.mkdtemp(prefix="icc-sbs-")
    os.makedirs(tmp, exist_ok=True)
    t_start = time.time()

    peak = json.loads(subprocess.run([a.icc, "bench", "--peak", "--json"] + (["--quick"] if a.quick else []),
                                     capture_output=True, text=True, check=True).stdout)
    core = ov.Core() if ov else None
    triv = trivial_model(tmp)
    over = {}
    triv_so = os.path.join(tmp, "trivial.so")
    icc_compile(a.icc, triv, [], triv_so)
    for t in threads:   # the Python per-call overhead, subtracted from icc's and ORT's times
        x = {"x": np.zeros(1, np.float32)}
        s = ort_session(triv, t)
        over[("ort", t)] = p50_loop(lambda: s.run(None, x), 0.3, 50)
        over[("icc", t)] = p50_loop(icc_call(triv_so, t, x), 0.3, 50)
        if core is not None:
            req = ov_request(core, triv, t, x)
            over[("ov", t)] = p50_loop(req.infer, 0.3, 50)
    log("per-call time of a one-Identity model (ms; icc's and ORT's are subtracted): " +
        ", ".join("%s %d thr %.4f" % (e, t, v) for (e, t), v in over.items()))

    rows, notes = [], []
    for name, make, kind, flops in workloads(tmp, a.quick):
        if a.filter and not re.search(a.filter, name):
            continue
        log("%s (%.0f s so far)" % (name, time.time() - t_start))
        path = make()
        opts, feeds = feeds_of(path)
        so = os.path.join(tmp, re.sub(r"\W", "_", name) + ".so")
        refused = icc_compile(a.icc, path, opts, so)
        flops = flops or icc_flops(a.icc, path, opts)
        ref = ort_session(path, 1).run(None, feeds)
        check = []
        if refused:
            notes.append("%s: icc refused: %s" % (name, refused))
        else:
            try:
                got = icc_outputs(a.icc, so, feeds, tmp, [o.name for o in ort_session(path, 1).get_outputs()])
                check.append(mismatch("icc", ref, got))
            except RuntimeError as e:
                check.append("icc run failed: %s" % str(e).splitlines()[-1][:200])
        sessions = {t: ort_session(path, t) for t in threads}
        ovreq = {}
        if core is not None:
            try:
                for t in threads:
                    ovreq[t] = ov_request(core, path, t, feeds)
                ovreq[threads[0]].infer()
                got = [ovreq[threads[0]].get_output_tensor(i).data.copy() for i in range(len(ref))]
                check.append(mismatch("OpenVINO", ref, got))
            except Exception as e:   # noqa: BLE001 - a failing engine is a table entry
                notes.append("%s: OpenVINO failed: %s" % (name, str(e).splitlines()[0][:200]))
                ovreq = {}
        check = [c for c in check if c]
        notes += ["%s: %s" % (name, c) for c in check]
        times = {(e, t): [] for e in ("icc", "ort", "ov") for t in threads}
        ratio = {}
        unresolved = set()   # thread counts where ORT's time is mostly its Python call's
        if kind == "chain":
            for rnd in range(a.rounds):
                for t in threads:
                    engines = ["icc", "ort", "ov"]
                    engines = engines[rnd % 3:] + engines[:rnd % 3]   # rotate who goes first
                    for e in engines:
                        if e == "icc" and not refused:
                            times[(e, t)].append(icc_p50(a.icc, so, t, a.time))
                        elif e == "ort":
                            s = sessions[t]
                            raw = p50_loop(lambda: s.run(None, feeds), a.time)
                            # less than a quarter left after the per-call time: the
                            # difference is the noise of two measurements, no ratio
                            if raw - over[("ort", t)] < 0.25 * raw:
                                unresolved.add(t)
                            times[(e, t)].append(max(raw - over[("ort", t)], 1e-4))
                        elif e == "ov" and t in ovreq:
                            r = ovreq[t]
                            times[(e, t)].append(p50_loop(r.infer, a.time))
        else:
            for t in threads:
                calls = {"ort": lambda s=sessions[t]: s.run(None, feeds)}
                if not refused:
                    calls["icc"] = icc_call(so, t, feeds)
                if t in ovreq:
                    calls["ov"] = ovreq[t].infer
                per, turn = {e: [] for e in calls}, {e: [] for e in calls}
                for rnd in range(a.rounds):
                    every, med = turns(calls, 3 * a.time)
                    for e in calls:
                        per[e] += every[e]
                        turn[e] += med[e]

                def less(e, v):   # less the Python call's own time (not OpenVINO's: see above)
                    return [max(x - over.get((e, t), 0) if e != "ov" else x, 1e-4) for x in v]
                for e, v in per.items():
                    times[(e, t)] = less(e, v)
                for p in ("ort", "ov"):
                    if "icc" in per and p in per:
                        ratio[(p, t)] = statistics.median(i / o for i, o in zip(less("icc", turn["icc"]),
                                                                                 less(p, turn[p])))
        for t in threads:
            med = {e: statistics.median(times[(e, t)]) if times[(e, t)] else None for e in ("icc", "ort", "ov")}
            for p in ("ort", "ov"):
                med["r_" + p] = ratio.get((p, t), med["icc"] / med[p] if med["icc"] and med[p] else None)
            if t in unresolved:
                med["r_ort"] = None
                notes.append("%s, %d thread%s: ONNX Runtime's time is within its measured per-call time; no "
                             "ratio (left out of the means)" % (name, t, "" if t == 1 else "s"))
            pk = peak["fma_gflops_per_core"] if t == 1 else min(peak["fma_gflops_all_cores"],
                                                               t * peak["fma_gflops_per_core"])
            gfl = flops / (med["icc"] * 1e-3) / 1e9 if med["icc"] and flops else None
            rows.append({"name": name, "threads": t, "kind": kind, "refused": refused, "check": "; ".join(check),
                         "unresolved": t in unresolved,
                         **med, "gflops": gfl, "peak_pct": gfl / pk * 100 if gfl and kind != "chain" else None})
        del sessions, ovreq
    gpt = {}
    if not a.filter or re.search(a.filter, "gpt2 decoder"):
        for t in threads:
            log("gpt2 decoder, %d threads (%.0f s so far)" % (t, time.time() - t_start))
            gpt[t] = decoder_row(a, tmp, t, core)
            notes += gpt[t].get("notes", [])
            if "refused" in gpt[t]:
                notes.append("gpt2 decoder: icc refused: %s" % gpt[t]["refused"])

    # ---- the table
    print("machine: %s cores, FP32 FMA peak %.1f GFLOP/s per core, %.1f on all (icc bench --peak); "
          "DRAM read %.1f GB/s per core\n" % (peak["cores"], peak["fma_gflops_per_core"],
                                               peak["fma_gflops_all_cores"], peak["read_gbs_per_core"]["DRAM"]))
    print("p50 ms of all calls, the engines taking turns of 0.2 s (%d round%s of %.2f s); icc/ORT and icc/OV "
          "are the medians of the per-turn time ratios (< 1: icc faster; Add chains: each engine alone for %.2f s "
          "a round, ratios of the p50s); a one-Identity model's per-call time, icc's and ORT's subtracted from "
          "their rows, OpenVINO's (inputs set once, req.infer()) not: %s\n" % (
              a.rounds, "" if a.rounds == 1 else "s", 3 * a.time, a.time,
              ", ".join("%s %d thr %.1f us" % ({"ort": "ORT", "ov": "OV", "icc": "icc"}[e], t, v * 1e3)
                        for (e, t), v in over.items())))
    print("| workload | threads | icc | ONNX Runtime | OpenVINO | icc/ORT | icc/OV | icc GFLOP/s | % of peak | check |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if r["refused"]:
            print("| %s | %d | refused: %s | %s | %s | | | | | |" % (r["name"], r["threads"], r["refused"][:150],
                                                                   fmt(r["ort"]), fmt(r["ov"])))
            continue
        print("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["name"], r["threads"], fmt(r["icc"]), fmt(r["ort"]), fmt(r["ov"]),
            fmt(r["r_ort"], "%.2f"), fmt(r["r_ov"], "%.2f"),
            fmt(r["gflops"], "%.1f"), fmt(r["peak_pct"], "%.0f%%"), r["check"] or "ok"))
    for t, g in gpt.items():
        if "refused" in g:
            print("| gpt2 decoder | %d | refused: %s | | | | | | | |" % (t, g["refused"][:150]))
            continue
        for i, what in ((0, "TTFT (16-token prompt)"), (1, "TPOT")):
            o = g.get("ort", (None, None))[i]
            v = g.get("ov", (None, None))[i]
            print("| gpt2 decoder %s | %d | %s | %s | %s | %s | %s | | | %s |" % (
                what, t, fmt(g["icc"][i]), fmt(o), fmt(v), fmt(g["icc"][i] / o if o else None, "%.2f"),
                fmt(g["icc"][i] / v if v else None, "%.2f"), "tokens differ" if g["notes"] else "same tokens"))
    print()
    for t in threads:
        sel = [r for r in rows if r["threads"] == t and not r["refused"]]
        go = geomean([r["r_ort"] for r in sel if r["r_ort"]])
        gv = geomean([r["r_ov"] for r in sel if r["r_ov"]])
        # the target's measure: against the faster peer (not where one peer's ratio is
        # unresolved: the faster one is not known there)
        gm = geomean([max(x for x in (r["r_ort"], r["r_ov"]) if x) for r in sel
                      if (r["r_ort"] or r["r_ov"]) and not r["unresolved"]])
        print("geometric mean, %d thread%s: icc/ORT %s, icc/OV %s, max(icc/ORT, icc/OV) %s (%d workloads)" % (
            t, "" if t == 1 else "s", fmt(go, "%.2f"), fmt(gv, "%.2f"), fmt(gm, "%.3f"), len(sel)))
    for n in notes:
        print("note: " + n)
    print("\n%.0f s in all" % (time.time() - t_start))


if __name__ == "__main__":
    main()
