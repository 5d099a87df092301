#!/usr/bin/env python3
"""LSTM, GRU and RNN, interpreted and compiled, against ONNX Runtime.

(a) Single-op models over the attribute combinations: directions forward,
reverse and bidirectional; sequence_lens with uneven lengths; initial states;
peepholes; clip; input_forget; layout 1; linear_before_reset; non-default
activations with alpha/beta (mixed lists, so the order in which they take
their parameters matters); absent outputs; sizes that are no multiple of a
vector; more steps than one block of projections; weight panels (-O3
transposes W and R into panels of gate rows) whose last one is narrower or
whose gate blocks end inside one; opsets 7, 14 and 22. Each
runs through the interpreter (icc run MODEL.onnx) and compiled at -O0 and
-O3, and must match ONNX Runtime at rtol 1e-4, atol 1e-5. A symbolic batch
(layout 0 and 1) and symbolic steps compile once and run at several sizes. sequence_lens given at run time past
the time steps is refused, compiled and interpreted, in one line; so are bad
attributes and shapes when the model loads.

(b) A CRNN-style text recognizer: three Conv+Relu+MaxPool stages over a
32x128 image, the feature map turned into a [T, N, C] sequence, two
bidirectional LSTM layers and a MatMul classifier, compiled at -O3 against
ONNX Runtime; then its latency, one thread, icc and ONNX Runtime alternating
in one run (--bench; --no-bench skips it).

    python3 tests/models/rnn_vs_ort.py build/icc [--no-bench]
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as P, helper as h, numpy_helper as nh

ort.set_default_logger_severity(3)
RTOL, ATOL = 1e-4, 1e-5
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def rnn_model(path, op, T, B, I, H, attrs=None, inputs=("B",), outputs=("Y", "Y_h"), lens=None, opset=14,
              seed=0, sym_batch=False):
    """A one-node model; X and the initial states are graph inputs, the
    weights initializers. Returns the feeds. With layout 1 it also writes
    its layout-0 twin (same weights) to path + ".l0.onnx": ONNX Runtime
    refuses layout 1, so the oracle runs the twin on transposed data."""
    attrs = dict(attrs or {})
    r = np.random.default_rng(seed)
    D = 2 if attrs.get("direction") == "bidirectional" else 1
    layout = attrs.get("layout", 0)
    G = GATES[op]
    f32 = lambda *s: (r.standard_normal(s) * 0.4).astype(np.float32)
    # R scaled down for large H: a recurrence whose map expands is chaotic, and two correct
    # float implementations part ways after a few dozen steps
    rscale = np.float32(min(1.0, np.sqrt(8.0 / H)))
    inits = [nh.from_array(f32(D, G * H, I), "W"), nh.from_array(f32(D, G * H, H) * rscale, "R")]
    feeds0 = {"X": f32(T, B, I) * 2}
    names = ["X", "W", "R", "", "", "", "", ""]
    if "B" in inputs:
        inits.append(nh.from_array(f32(D, 2 * G * H), "B"))
        names[3] = "B"
    if lens is not None:
        inits.append(nh.from_array(np.array(lens, np.int32), "seq"))
        names[4] = "seq"
    for slot, nm in ((5, "h0"), (6, "c0")):
        if nm in inputs:
            feeds0[nm] = f32(D, B, H)
            names[slot] = nm
    if "P" in inputs:
        inits.append(nh.from_array(f32(D, 3 * H), "P"))
        names[7] = "P"
    while names[-1] == "":
        names.pop()
    outs = [o if o in outputs else "" for o in ("Y", "Y_h", "Y_c")[: 3 if op == "LSTM" else 2]]
    while outs[-1] == "":
        outs.pop()
    bdim = "N" if sym_batch else B

    def write(p, lay):
        a = dict(attrs)
        if opset >= 14:
            a["layout"] = lay
        ins = [h.make_tensor_value_info("X", P.FLOAT, [bdim, T, I] if lay else [T, bdim, I])]
        ins += [h.make_tensor_value_info(nm, P.FLOAT, [bdim, D, H] if lay else [D, bdim, H])
                for nm in ("h0", "c0") if nm in feeds0]
        node = h.make_node(op, names, outs, name="rnn", hidden_size=H, **a)
        g = h.make_graph([node], "rnn", ins, [h.make_tensor_value_info(o, P.FLOAT, None) for o in outs if o], inits)
        onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", opset)]), p)

    write(path, layout)
    if not layout:
        return feeds0
    write(path + ".l0.onnx", 0)
    return {k: np.ascontiguousarray(np.swapaxes(v, 0, 1)) for k, v in feeds0.items()}


def ort_run(path, feeds, layout):
    """ONNX Runtime's outputs (names, values); layout 1 through the twin."""
    if not layout:
        s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        return [o.name for o in s.get_outputs()], s.run(None, feeds)
    s = ort.InferenceSession(path + ".l0.onnx", providers=["CPUExecutionProvider"])
    got = s.run(None, {k: np.ascontiguousarray(np.swapaxes(v, 0, 1)) for k, v in feeds.items()})
    names = [o.name for o in s.get_outputs()]
    # Y [T, D, B, H] -> [B, T, D, H]; Y_h, Y_c [D, B, H] -> [B, D, H]
    return names, [np.transpose(v, (2, 0, 1, 3)) if n == "Y" else np.swapaxes(v, 0, 1) for n, v in zip(names, got)]


SEQ3 = [5, 2, 4]  # uneven lengths of a batch of 3 over T = 5
CASES = [
    ("LSTM defaults, all outputs", "LSTM", 4, 2, 3, 5, {}, ("B",), ("Y", "Y_h", "Y_c"), None, 14),
    ("LSTM bidirectional, initial h and c, peepholes", "LSTM", 5, 3, 7, 9, {"direction": "bidirectional"},
     ("B", "h0", "c0", "P"), ("Y", "Y_h", "Y_c"), None, 14),
    ("LSTM reverse, uneven sequence_lens, initial states", "LSTM", 5, 3, 4, 6, {"direction": "reverse"},
     ("B", "h0", "c0"), ("Y", "Y_h", "Y_c"), SEQ3, 14),
    ("LSTM bidirectional, uneven sequence_lens, layout 1, peepholes", "LSTM", 5, 3, 6, 8,
     {"direction": "bidirectional", "layout": 1}, ("B", "h0", "c0", "P"), ("Y", "Y_h", "Y_c"), SEQ3, 14),
    ("LSTM clip 0.5, input_forget", "LSTM", 6, 2, 5, 7, {"clip": 0.5, "input_forget": 1}, ("B", "P"),
     ("Y", "Y_h", "Y_c"), None, 14),
    ("LSTM activations HardSigmoid/LeakyRelu/Softsign with alpha, beta", "LSTM", 4, 2, 3, 5,
     {"activations": ["HardSigmoid", "LeakyRelu", "Softsign"], "activation_alpha": [0.3, 0.05],
      "activation_beta": [0.45]}, ("B",), ("Y", "Y_h", "Y_c"), None, 14),
    ("LSTM bidirectional, six activations (ScaledTanh, Affine, Elu, Softplus...)", "LSTM", 4, 2, 3, 6,
     {"direction": "bidirectional",
      "activations": ["Sigmoid", "ScaledTanh", "Affine", "HardSigmoid", "Elu", "Softplus"],
      "activation_alpha": [0.9, 0.7, 0.25, 0.8], "activation_beta": [1.1, 0.1, 0.55]},
     ("B", "h0", "c0"), ("Y", "Y_h", "Y_c"), None, 14),
    ("LSTM Y_h only (Y absent), opset 7", "LSTM", 3, 2, 4, 4, {}, ("B", "h0", "c0"), ("Y_h",), None, 7),
    ("LSTM Y_c only, opset 22", "LSTM", 3, 2, 4, 4, {"direction": "bidirectional"}, ("B",), ("Y_c",), None, 22),
    ("LSTM T=100, H=128: two blocks of projections", "LSTM", 100, 1, 32, 128,
     {"direction": "bidirectional"}, ("B",), ("Y", "Y_h", "Y_c"), None, 14),
    ("GRU T=100, H=128, bidirectional, lengths across the blocks", "GRU", 100, 3, 16, 128,
     {"direction": "bidirectional"}, ("B", "h0"), ("Y", "Y_h"), [100, 37, 81], 14),
    ("GRU defaults", "GRU", 4, 2, 3, 5, {}, ("B",), ("Y", "Y_h"), None, 14),
    ("GRU linear_before_reset, bidirectional, initial h", "GRU", 5, 3, 4, 9,
     {"direction": "bidirectional", "linear_before_reset": 1}, ("B", "h0"), ("Y", "Y_h"), None, 14),
    ("GRU reverse, uneven sequence_lens, clip 0.7", "GRU", 5, 3, 6, 7, {"direction": "reverse", "clip": 0.7},
     ("B", "h0"), ("Y", "Y_h"), SEQ3, 14),
    ("GRU layout 1, sequence_lens, HardSigmoid/Softsign with alpha, beta", "GRU", 5, 3, 5, 6,
     {"layout": 1, "activations": ["HardSigmoid", "Softsign"], "activation_alpha": [0.35],
      "activation_beta": [0.4]}, ("B", "h0"), ("Y", "Y_h"), SEQ3, 14),
    ("GRU linear_before_reset, layout 1, bidirectional, sequence_lens", "GRU", 5, 3, 3, 4,
     {"layout": 1, "direction": "bidirectional", "linear_before_reset": 1}, ("B", "h0"), ("Y", "Y_h"), SEQ3, 22),
    ("GRU no bias, opset 7", "GRU", 3, 2, 4, 6, {}, ("h0",), ("Y", "Y_h"), None, 7),
    ("RNN defaults", "RNN", 4, 2, 3, 5, {}, ("B",), ("Y", "Y_h"), None, 14),
    ("RNN bidirectional Relu/Tanh, initial h", "RNN", 5, 2, 4, 11,
     {"direction": "bidirectional", "activations": ["Relu", "Tanh"]}, ("B", "h0"), ("Y", "Y_h"), None, 14),
    ("RNN reverse, layout 1, uneven sequence_lens, ThresholdedRelu", "RNN", 5, 3, 4, 6,
     {"direction": "reverse", "layout": 1, "activations": ["ThresholdedRelu"], "activation_alpha": [0.2]},
     ("B", "h0"), ("Y", "Y_h"), SEQ3, 14),
    ("RNN clip 0.3, Affine", "RNN", 4, 2, 3, 5, {"clip": 0.3, "activations": ["Affine"],
                                                 "activation_alpha": [1.5], "activation_beta": [-0.2]},
     ("B",), ("Y", "Y_h"), None, 22),
    ("RNN I=70, H=37 (no multiple of a vector)", "RNN", 6, 2, 70, 37, {}, ("B", "h0"), ("Y", "Y_h"), None, 14),
    # -O3 stores W and R transposed in panels of gate rows (pack-b, weights_t): a last panel
    # narrower than the others, and GRU's z/r/h boundaries inside a panel
    ("LSTM H=20, I=33: 80 gate rows, a narrower last weight panel, peepholes", "LSTM", 7, 2, 33, 20,
     {"direction": "bidirectional"}, ("B", "h0", "c0", "P"), ("Y", "Y_h", "Y_c"), None, 14),
    ("GRU H=50: gate blocks that end inside a weight panel", "GRU", 6, 2, 12, 50,
     {"direction": "bidirectional"}, ("B", "h0"), ("Y", "Y_h"), [6, 3], 14),
    ("GRU H=50, linear_before_reset: gate blocks that end inside a weight panel", "GRU", 6, 2, 12, 50,
     {"linear_before_reset": 1}, ("B", "h0"), ("Y", "Y_h"), None, 14),
]


def run_icc(icc, model, feeds, outdir, names):
    args = [icc, "run", model, "-o", outdir]
    for k, v in feeds.items():
        np.save(os.path.join(outdir, "in_" + k + ".npy"), v)
        args += ["--input", "%s=%s" % (k, os.path.join(outdir, "in_" + k + ".npy"))]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        return None, r.stderr.strip()
    return [np.load(os.path.join(outdir, n + ".npy")) for n in names], ""


def compare(got, want):
    worst = 0.0
    for a, b in zip(got, want):
        if a.shape != b.shape or not np.allclose(a, b, rtol=RTOL, atol=ATOL):
            return False, np.abs(a - b).max() if a.shape == b.shape else float("inf")
        worst = max(worst, float(np.abs(a - b).max()) if a.size else 0.0)
    return True, worst


def single_ops(icc, t):
    failed = 0
    for i, (title, op, T, B, I, H, attrs, inputs, outputs, lens, opset) in enumerate(CASES):
        path = os.path.join(t, "case%d.onnx" % i)
        feeds = rnn_model(path, op, T, B, I, H, attrs, inputs, outputs, lens, opset, seed=i)
        names, want = ort_run(path, feeds, attrs.get("layout", 0))
        res = []
        for mode in ("interp", "-O0", "-O3"):
            model = path
            if mode != "interp":
                model = os.path.join(t, "case%d%s.so" % (i, mode))
                c = subprocess.run([icc, path, mode, "-o", model], capture_output=True, text=True)
                if c.returncode:
                    print("FAIL %s: %s does not compile: %s" % (title, mode, c.stderr.strip()))
                    failed += 1
                    continue
            got, err = run_icc(icc, model, feeds, t, names)
            ok, e = compare(got, want) if got is not None else (False, float("inf"))
            if not ok:
                print("FAIL %s, %s: %s" % (title, mode, err or "max abs error %.3g" % e))
                failed += 1
            res.append("%s %.1e" % (mode, e))
        print("%s %s: max abs error %s" % ("ok  " if len(res) == 3 else "FAIL", title, ", ".join(res)))
    return failed


def symbolic_dims(icc, t):
    """Symbolic batch and steps compile once and run at several sizes:
    LSTM with layout 1 and a symbolic batch, GRU with layout 0 and a
    symbolic batch, RNN with symbolic steps (bidirectional, so the reverse
    walk depends on the run's T too)."""
    failed = 0
    for title, op, attrs, sym_axis, sizes in (
            ("LSTM layout 1, symbolic batch", "LSTM", {"layout": 1, "direction": "bidirectional"}, "batch", (1, 3)),
            ("GRU layout 0, symbolic batch", "GRU", {"linear_before_reset": 1}, "batch", (1, 4)),
            ("RNN symbolic steps", "RNN", {"direction": "bidirectional"}, "steps", (5, 2, 9))):
        path = os.path.join(t, "sym.onnx")
        layout = attrs.get("layout", 0)
        rnn_model(path, op, 5, 2, 4, 6, attrs, ("B",), ("Y", "Y_h", "Y_c"), sym_batch=sym_axis == "batch", seed=7)
        for p in (path, path + ".l0.onnx") if layout else (path,):
            if sym_axis == "steps":
                m = onnx.load(p)
                m.graph.input[0].type.tensor_type.shape.dim[1 if layout else 0].dim_param = "T"
                onnx.save(m, p)
        so = os.path.join(t, "sym.so")
        subprocess.run([icc, path, "-O3", "-o", so], check=True)
        for n in sizes:
            T, B = (n, 2) if sym_axis == "steps" else (5, n)
            x = np.random.default_rng(n).standard_normal((B, T, 4) if layout else (T, B, 4)).astype(np.float32)
            names, want = ort_run(path, {"X": x}, layout)
            got, err = run_icc(icc, so, {"X": x}, t, names)
            ok, e = compare(got, want) if got is not None else (False, float("inf"))
            print("%s %s, %s %d: %s" % ("ok  " if ok else "FAIL", title, sym_axis, n, err or "max abs error %.1e" % e))
            failed += not ok
    return failed


def bad_lengths(icc, t):
    """sequence_lens as a run-time input: valid lengths agree with ONNX
    Runtime; one past T is refused, compiled and interpreted alike, with
    one line naming the node."""
    r = np.random.default_rng(5)
    w = lambda name, *shape: nh.from_array((r.standard_normal(shape) * 0.4).astype(np.float32), name)
    node = h.make_node("LSTM", ["X", "W", "R", "", "lens"], ["Y", "Y_h"], name="rnn", hidden_size=4)
    g = h.make_graph([node], "g", [h.make_tensor_value_info("X", P.FLOAT, [5, 2, 3]),
                                   h.make_tensor_value_info("lens", P.INT32, [2])],
                     [h.make_tensor_value_info("Y", P.FLOAT, None), h.make_tensor_value_info("Y_h", P.FLOAT, None)],
                     [w("W", 1, 16, 3), w("R", 1, 16, 4)])
    path, so = os.path.join(t, "lens.onnx"), os.path.join(t, "lens.so")
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 14)]), path)
    subprocess.run([icc, path, "-o", so], check=True)
    x = r.standard_normal((5, 2, 3)).astype(np.float32)
    good = {"X": x, "lens": np.array([3, 5], np.int32)}
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, good)
    failed = 0
    for target, tag in ((so, "compiled"), (path, "interpreted")):
        got, err = run_icc(icc, target, good, t, ["Y", "Y_h"])
        ok, e = compare(got, want) if got is not None else (False, float("inf"))
        _, err2 = run_icc(icc, target, {"X": x, "lens": np.array([3, 6], np.int32)}, t, ["Y", "Y_h"])
        lines = err2.splitlines()
        refused = (len(lines) == 1 and lines[0].startswith("icc: error: ") and "node 'rnn' (LSTM)" in lines[0] and
                   "is outside [0, 5]" in lines[0])
        print("%s sequence_lens at run time, %s: good data max abs error %.1e; a length of 6 over 5 steps: %s" % (
            "ok  " if ok and refused else "FAIL", tag, e, err2 or "not refused"))
        failed += not (ok and refused)
    return failed


def malformed(icc, t):
    """Bad attributes and shapes: exit 1, one line naming the node and why."""
    cases = [("a direction that does not exist", {"direction": "sideways"}, None, "direction must be"),
             ("an unknown activation", {"activations": ["Sigmoid", "Swish", "Tanh"]}, None, "'Swish' is not one of"),
             ("two activations for LSTM's three", {"activations": ["Sigmoid", "Tanh"]}, None, "activations lists 2"),
             ("W with GRU's gate count", {}, (1, 15, 3), "W's dim 1: 15 against 20"),
             ("layout 2", {"layout": 2}, None, "layout must be 0 or 1")]
    failed = 0
    for title, attrs, wshape, reason in cases:
        path = os.path.join(t, "bad.onnx")
        rnn_model(path, "LSTM", 4, 2, 3, 5, {})
        m = onnx.load(path)
        node = m.graph.node[0]
        for k, v in attrs.items():
            keep = [a for a in node.attribute if a.name != k]
            del node.attribute[:]
            node.attribute.extend(keep + [h.make_attribute(k, v)])
        if wshape:
            m.graph.initializer[0].CopyFrom(nh.from_array(np.zeros(wshape, np.float32), "W"))
        onnx.save(m, path)
        r = subprocess.run([icc, path, "-o", os.path.join(t, "bad.so")], capture_output=True, text=True)
        lines = r.stderr.strip().splitlines()
        ok = (r.returncode == 1 and len(lines) == 1 and lines[0].startswith("icc: error: ") and
              "node 'rnn' (LSTM)" in lines[0] and reason in lines[0])
        print("%s refused, %s: %s" % ("ok  " if ok else "FAIL", title, r.stderr.strip()))
        failed += not ok
    return failed


def crnn(path, N=1):
    """Conv+Relu+MaxPool x3 over [N, 1, 32, 128] -> [N, 128, 4, 32] -> the
    sequence [T=32, N, 512] -> 2 bidirectional LSTM layers (H 128) ->
    MatMul + Add to 37 classes per step: [32, N, 37]."""
    r = np.random.default_rng(42)
    inits = []

    def w(name, *shape, scale=None):
        fan = np.prod(shape[1:]) if len(shape) > 1 else shape[0]
        a = r.standard_normal(shape) * (scale if scale is not None else np.sqrt(2.0 / fan))
        inits.append(nh.from_array(a.astype(np.float32), name))
        return name

    def const(name, v):
        inits.append(nh.from_array(np.array(v, np.int64), name))
        return name

    nodes, x, cin = [], "image", 1
    for i, (cout, pool) in enumerate(((32, [2, 2]), (64, [2, 2]), (128, [2, 1]))):
        nodes += [h.make_node("Conv", [x, w("cw%d" % i, cout, cin, 3, 3), w("cb%d" % i, cout, scale=0.05)],
                              ["c%d" % i], pads=[1, 1, 1, 1]),
                  h.make_node("Relu", ["c%d" % i], ["r%d" % i]),
                  h.make_node("MaxPool", ["r%d" % i], ["p%d" % i], kernel_shape=pool, strides=pool)]
        x, cin = "p%d" % i, cout
    H, C = 128, 128 * 4
    nodes += [h.make_node("Reshape", [x, const("s0", [N, C, 32])], ["f"]),
              h.make_node("Transpose", ["f"], ["seq"], perm=[2, 0, 1])]
    x, I = "seq", C
    for l in range(2):
        s = 1.0 / np.sqrt(H)
        nodes += [h.make_node("LSTM", [x, w("W%d" % l, 2, 4 * H, I, scale=s), w("R%d" % l, 2, 4 * H, H, scale=s),
                                       w("B%d" % l, 2, 8 * H, scale=0.1)], ["Y%d" % l],
                              name="lstm%d" % l, hidden_size=H, direction="bidirectional"),
                  h.make_node("Transpose", ["Y%d" % l], ["Yt%d" % l], perm=[0, 2, 1, 3]),
                  h.make_node("Reshape", ["Yt%d" % l, const("s%d" % (l + 1), [32, N, 2 * H])], ["o%d" % l])]
        x, I = "o%d" % l, 2 * H
    nodes += [h.make_node("MatMul", [x, w("fc", 2 * H, 37, scale=0.1)], ["mm"]),
              h.make_node("Add", ["mm", w("fcb", 37, scale=0.1)], ["logits"])]
    g = h.make_graph(nodes, "crnn", [h.make_tensor_value_info("image", P.FLOAT, [N, 1, 32, 128])],
                     [h.make_tensor_value_info("logits", P.FLOAT, [32, N, 37])], inits)
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)


def icc_latency_ms(icc, so, seconds):
    """(p50, min) of icc bench on one thread."""
    r = subprocess.run([icc, "bench", so, "--threads=1", "--time=%g" % seconds, "--warmup=0.3", "--json"],
                       capture_output=True, text=True, check=True)
    j = json.loads(r.stdout)["results"][0]
    return float(j["p50_ms"]), float(j["min_ms"])


def ort_latency_ms(sess, feeds, seconds):
    times, end = [], time.perf_counter() + seconds
    sess.run(None, feeds)
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times)), float(min(times))


def crnn_check(icc, t, bench):
    path, so = os.path.join(t, "crnn.onnx"), os.path.join(t, "crnn.so")
    crnn(path)
    subprocess.run([icc, path, "-O3", "-o", so], check=True)
    feeds = {"image": np.random.default_rng(3).random((1, 1, 32, 128)).astype(np.float32)}
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    s = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    want = s.run(None, feeds)
    got, err = run_icc(icc, so, feeds, t, ["logits"])
    ok, e = compare(got, want) if got is not None else (False, float("inf"))
    print("%s CRNN (3 Conv stages, 2 bidirectional LSTM layers, H 128, T 32), -O3: %s" % (
        "ok  " if ok else "FAIL", err or "max abs error %.1e (outputs up to %.2f)" % (e, np.abs(want[0]).max())))
    if bench and ok:
        a, b = [], []
        for _ in range(5):  # alternating, so both see the same machine load
            a.append(icc_latency_ms(icc, so, 1))
            b.append(ort_latency_ms(s, feeds, 1))
        print("     CRNN latency, 1 thread, 5 alternating rounds: icc p50 %.2f ms (best %.2f), ONNX Runtime p50 "
              "%.2f ms (best %.2f)" % (float(np.median([x[0] for x in a])), min(x[1] for x in a),
                                      float(np.median([x[0] for x in b])), min(x[1] for x in b)))
    return not ok


def main():
    icc = os.path.abspath(sys.argv[1])
    bench = "--no-bench" not in sys.argv[2:]
    t = tempfile.mkdtemp()
    failed = single_ops(icc, t) + symbolic_dims(icc, t) + bad_lengths(icc, t) + malformed(icc, t) + crnn_check(icc, t, bench)
    print("rnn vs ONNX Runtime: %s" % ("all passed" if not failed else "%d failed" % failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
