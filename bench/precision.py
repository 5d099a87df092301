#!/usr/bin/env python3
"""Reduced precision, side by side in one run: icc at each --precision against
ONNX Runtime (FP32, its own quantize_static QDQ model, its quantize_dynamic
model) and OpenVINO (FP32 hint, and its default precision), on the same
machine, thread count and inputs.

For each model and engine variant it prints the p50 latency, the .so size (icc),
and the accuracy of the output against ONNX Runtime FP32 on the same input
(cosine similarity and SQNR in dB). icc also compiles the two ONNX Runtime
quantized models, and its output on those is compared with ONNX Runtime's on
the same quantized model ("vs ORT same model").

    python3 bench/precision.py [--icc build/icc] [--threads 1] [--runs 20] [--models bert,cnn,resnet50]
        [--precisions fp32,bf16,fp16,int8,int8-dynamic] [--calib-sets 8] [--base ICC]

--base ICC (e.g. a baseline build) adds an "icc base" row after each icc one: the same
compile with that binary, its latency measured alternately with this icc's (best of two
rounds each; the icc row's latency is then its best of two as well).

A variant icc refuses (an unknown precision, an unsupported op) prints its
one-line error instead of numbers. Models: "bert" is the BERT-base layer of
tests/models/make_bert_layer.py (seq 128), "cnn" a small ResNet-style CNN on
96x96 images written here, "resnet50" the onnx package's light_resnet50.
Calibration sets (for --precision=int8 and for ONNX Runtime's quantize_static)
are drawn from the same distribution as the measured input.
"""
import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ort.set_default_logger_severity(3)
logging.getLogger().setLevel(logging.ERROR)  # quantize_static's "consider pre-processing" advice
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/light")


# ---- models -------------------------------------------------------------------

def make_cnn(path):
    """A small ResNet-style CNN: stem conv, two residual blocks per stage over
    three stages (32, 64, 128 channels), global pooling, a classifier."""
    rng = np.random.default_rng(7)
    inits, nodes = [], []
    uid = [0]

    def name(p):
        uid[0] += 1
        return "%s%d" % (p, uid[0])

    def conv(x, cin, cout, k, stride, relu=True):
        w = name("w")
        b = name("b")
        inits.append(numpy_helper.from_array(
            (rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))).astype(np.float32), w))
        inits.append(numpy_helper.from_array((rng.standard_normal(cout) * 0.01).astype(np.float32), b))
        y = name("conv")
        nodes.append(helper.make_node("Conv", [x, w, b], [y], pads=[k // 2] * 4, strides=[stride] * 2,
                                      kernel_shape=[k, k], name=y))
        if relu:
            r = name("relu")
            nodes.append(helper.make_node("Relu", [y], [r], name=r))
            return r
        return y

    x = conv("x", 3, 32, 3, 2)
    c = 32
    for stage, cout in enumerate((32, 64, 128)):
        for blk in range(2):
            stride = 2 if blk == 0 and stage > 0 else 1
            h = conv(x, c, cout, 3, stride)
            h = conv(h, cout, cout, 3, 1, relu=False)
            sc = x if (stride == 1 and c == cout) else conv(x, c, cout, 1, stride, relu=False)
            a = name("add")
            nodes.append(helper.make_node("Add", [h, sc], [a], name=a))
            r = name("relu")
            nodes.append(helper.make_node("Relu", [a], [r], name=r))
            x, c = r, cout
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"], name="gap"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flat"))
    inits.append(numpy_helper.from_array((rng.standard_normal((c, 10)) * 0.1).astype(np.float32), "fc_w"))
    inits.append(numpy_helper.from_array(np.zeros(10, np.float32), "fc_b"))
    nodes.append(helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], name="fc"))
    g = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 96, 96])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(m, path)


def model_paths(names, tmp):
    """(name, path, feeds_fn, shape options) per model."""
    out = []
    for n in names:
        if n == "bert":
            subprocess.run([sys.executable, os.path.join(ROOT, "tests/models/make_bert_layer.py"), tmp],
                           check=True, capture_output=True)
            out.append((n, os.path.join(tmp, "bert_layer.onnx")))
        elif n == "cnn":
            p = os.path.join(tmp, "cnn.onnx")
            make_cnn(p)
            out.append((n, p))
        elif n == "resnet50":
            out.append((n, os.path.join(LIGHT, "light_resnet50.onnx")))
        else:
            sys.exit("unknown model %r" % n)
    return out


def input_specs(path):
    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    specs = []
    for i in m.graph.input:
        if i.name in inits:
            continue
        dims = [d.dim_value if d.HasField("dim_value") else 1 for d in i.type.tensor_type.shape.dim]
        specs.append((i.name, dims))
    return specs


def make_feeds(specs, seed):
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, dims in specs:
        if "mask" in name:
            feeds[name] = np.zeros(dims, np.float32)
        else:
            feeds[name] = rng.standard_normal(dims).astype(np.float32) * (0.5 if len(dims) == 3 else 1.0)
    return feeds


# ---- metrics ------------------------------------------------------------------

def accuracy(got, want):
    g = got.astype(np.float64).ravel()
    w = want.astype(np.float64).ravel()
    cos = float(g @ w / max(np.linalg.norm(g) * np.linalg.norm(w), 1e-300))
    noise = float(((g - w) ** 2).sum())
    sqnr = float("inf") if noise == 0 else 10 * np.log10(float((w ** 2).sum()) / noise)
    return cos, sqnr


# ---- engines ------------------------------------------------------------------

def ort_session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def time_calls(fn, runs):
    fn()
    t_end = time.perf_counter() + 0.5  # a short warm-up: clocks ramp
    while time.perf_counter() < t_end:
        fn()
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(ts))


def ov_compile(path, threads, hint):
    try:
        import openvino as ov
    except ImportError:
        return None
    core = ov.Core()
    cfg = {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY"}
    if hint:
        cfg["INFERENCE_PRECISION_HINT"] = hint
    return core.compile_model(core.read_model(path), "CPU", cfg)


class Icc:
    def __init__(self, icc, tmp, threads, runs):
        self.icc, self.tmp, self.threads, self.runs = icc, tmp, threads, runs

    def compile(self, path, tag, extra):
        so = os.path.join(self.tmp, tag + ".so")
        shapes = ["--shape=%s:%s" % (n, "x".join(map(str, d))) for n, d in input_specs(path)]
        t0 = time.perf_counter()
        r = subprocess.run([self.icc, path, "-O3", *shapes, *extra, "-o", so], capture_output=True, text=True)
        dt = time.perf_counter() - t0
        if r.returncode:
            return None, (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1], dt
        return so, None, dt

    def latency(self, so):
        """p50 by `icc bench` after the 0.5 s warm-up the peers get (time_calls): the
        runner's single warm-up run left the clocks ramping on short runs."""
        out = subprocess.run([self.icc, "bench", so, "--threads=%d" % self.threads, "--runs=%d" % self.runs,
                              "--time=0.01", "--warmup=0.5", "--json"], capture_output=True, text=True)
        try:
            return float(json.loads(out.stdout)["results"][0]["p50_ms"])
        except (ValueError, KeyError, IndexError):
            return float("nan")

    def outputs(self, so, feeds, tag):
        args = []
        for k, v in feeds.items():
            f = os.path.join(self.tmp, "%s_in_%s.npy" % (tag, "".join(ch if ch.isalnum() else "_" for ch in k)))
            np.save(f, v)
            args += ["--input", "%s=%s" % (k, f)]
        od = os.path.join(self.tmp, tag + "_out")
        r = subprocess.run([self.icc, "run", so, *args, "-o", od], capture_output=True, text=True)
        if r.returncode:
            return None
        return {f[:-4]: np.load(os.path.join(od, f)) for f in os.listdir(od)}


def first_output(outs, onnx_path):
    name = onnx.load(onnx_path, load_external_data=False).graph.output[0].name
    safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in name)
    return outs.get(safe) if outs else None


def quantize_with_ort(path, specs, calib, tmp, name):
    """ORT's own QDQ (quantize_static) and dynamic (quantize_dynamic) models."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(calib)

        def get_next(self):
            return next(self.it, None)

    pre = os.path.join(tmp, name + "_pre.onnx")
    m = onnx.load(path)
    for i in m.graph.input:  # pin symbolic dims so ORT's shape inference sees them
        for d, v in zip(i.type.tensor_type.shape.dim, dict(specs).get(i.name, [])):
            d.ClearField("dim_param")
            d.dim_value = v
    onnx.save(m, pre)
    qdq = os.path.join(tmp, name + "_qdq.onnx")
    dyn = os.path.join(tmp, name + "_dyn.onnx")
    out = {}
    try:
        quantize_static(pre, qdq, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
        out["qdq"] = qdq
    except Exception as e:  # noqa: BLE001 - report and go on
        print("  (ORT quantize_static failed on %s: %s)" % (name, str(e).splitlines()[0]))
    try:
        quantize_dynamic(pre, dyn, weight_type=QuantType.QInt8)
        out["dynamic"] = dyn
    except Exception as e:  # noqa: BLE001
        print("  (ORT quantize_dynamic failed on %s: %s)" % (name, str(e).splitlines()[0]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--icc", default=os.path.join(ROOT, "build/icc"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--models", default="bert,cnn,resnet50")
    ap.add_argument("--precisions", default="fp32,bf16,fp16,int8,int8-dynamic")
    ap.add_argument("--calib-sets", type=int, default=8)
    ap.add_argument("--base", default=None, help="a second icc binary, measured alternately")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    icc = Icc(a.icc, tmp, a.threads, a.runs)
    if a.base:
        os.makedirs(os.path.join(tmp, "base"))
    base = Icc(a.base, os.path.join(tmp, "base"), a.threads, a.runs) if a.base else None

    def lat(so, tag, path, extra):
        """icc's latency of so, and with --base the base's of the same compile (None
        otherwise or when it refuses), alternating two rounds."""
        if not base:
            return icc.latency(so), None
        bso, _, _ = base.compile(path, tag, extra)
        if not bso:
            return icc.latency(so), None
        t, tb = [], []
        for _ in range(2):
            t.append(icc.latency(so))
            tb.append(base.latency(bso))
        return min(t), (min(tb), os.path.getsize(bso))
    print("threads: %d, runs: %d (p50 after a warm-up)\n" % (a.threads, a.runs))
    print("| model | engine | precision | latency p50 (ms) | .so (MB) | cosine | SQNR (dB) | note |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")

    def row(model, engine, prec, ms, size, acc, note=""):
        cos, sq = acc if acc else (float("nan"), float("nan"))
        print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            model, engine, prec, "%.2f" % ms if ms == ms else "-", "%.2f" % (size / 1e6) if size else "-",
            "%.6f" % cos if cos == cos else "-", "%.1f" % sq if sq == sq else "-", note))
        sys.stdout.flush()

    for model, path in model_paths(a.models.split(","), tmp):
        specs = input_specs(path)
        feeds = make_feeds(specs, 0)
        calib = [make_feeds(specs, 100 + i) for i in range(a.calib_sets)]
        cdir = os.path.join(tmp, model + "_calib")
        for i, c in enumerate(calib):
            os.makedirs(os.path.join(cdir, str(i)), exist_ok=True)
            for k, v in c.items():   # names as icc run -o writes them ('/' and the like as '_')
                safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in k)
                np.save(os.path.join(cdir, str(i), safe + ".npy"), v)
        s = ort_session(path, a.threads)
        ref = s.run(None, feeds)[0]
        row(model, "ONNX Runtime", "fp32", time_calls(lambda: s.run(None, feeds), a.runs), 0, None)
        for hint, label in (("f32", "fp32 (hint)"), (None, "default")):
            cm = ov_compile(path, a.threads, hint)
            if cm is None:
                break
            req = cm.create_infer_request()
            got = req.infer(feeds)[cm.outputs[0]]
            row(model, "OpenVINO", label, time_calls(lambda: req.infer(feeds), a.runs), 0, accuracy(got, ref),
                "inference precision %s" % cm.get_property("INFERENCE_PRECISION_HINT").get_type_name())
        for prec in a.precisions.split(","):
            extra = [] if prec == "fp32" else ["--precision=" + prec]
            if prec == "int8":
                extra.append("--calibrate=" + cdir)
            so, err, _ = icc.compile(path, "%s_%s" % (model, prec), extra)
            if not so:
                row(model, "icc", prec, float("nan"), 0, None, "refused: " + err[:120])
                continue
            got = first_output(icc.outputs(so, feeds, "%s_%s" % (model, prec)), path)
            ms, b = lat(so, "%s_%s" % (model, prec), path, extra)
            row(model, "icc", prec, ms, os.path.getsize(so),
                accuracy(got, ref) if got is not None else None, "" if got is not None else "run failed")
            if b:
                row(model, "icc base", prec, b[0], b[1], None, "icc / base latency %.2f" % (ms / b[0]))
        for kind, qpath in quantize_with_ort(path, specs, calib, tmp, model).items():
            qs = ort_session(qpath, a.threads)
            qref = qs.run(None, feeds)[0]
            row(model, "ONNX Runtime", "int8 " + kind, time_calls(lambda: qs.run(None, feeds), a.runs), 0,
                accuracy(qref, ref))
            so, err, _ = icc.compile(qpath, "%s_ort_%s" % (model, kind), [])
            if not so:
                row(model, "icc (ORT's model)", "int8 " + kind, float("nan"), 0, None, "refused: " + err[:120])
                continue
            got = first_output(icc.outputs(so, feeds, "%s_ort_%s" % (model, kind)), qpath)
            note = ""
            if got is not None:
                c2, s2 = accuracy(got, qref)
                note = "vs ORT same model: cosine %.6f, SQNR %.1f dB" % (c2, s2)
            ms, b = lat(so, "%s_ort_%s" % (model, kind), qpath, [])
            row(model, "icc (ORT's model)", "int8 " + kind, ms, os.path.getsize(so),
                accuracy(got, ref) if got is not None else None, note)
            if b:
                row(model, "icc base (ORT's model)", "int8 " + kind, b[0], b[1], None,
                    "icc / base latency %.2f" % (ms / b[0]))


if __name__ == "__main__":
    main()
