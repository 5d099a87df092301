#!/usr/bin/env python3
"""com.microsoft.DynamicQuantizeLSTM, interpreted and compiled, against
ONNX Runtime and against a numpy model of its arithmetic.

The op quantizes its activations on the fly: X (all S x B rows at once)
and, at every step, the hidden state (all B rows together) to u8 with
DynamicQuantizeLinear's range, multiplies them with the int8 weights in
integers and scales by x_scale * w_scale. icc expands it at import into
those core ops, unrolling the steps (frontend/microsoft.c).

(a) Single-op models over the forms: per-tensor zero points and scales,
per-gate-row scales, initial h and c, peepholes, clip, no bias, no initial
state, reverse and bidirectional, 20 steps. Each runs through the
interpreter and compiled at -O0 and -O3 (-O0 has many small kernels, which
the parallel code generation splits into modules) and must match ONNX
Runtime at rtol 1e-4, atol 1e-5. ONNX Runtime runs on one thread: with
more, it quantizes the hidden state per chunk of batch rows, so its result
depends on its thread count. The weights here use 7 bits: on a CPU without
VNNI, ONNX Runtime multiplies u8 by s8 with vpmaddubsw, whose pairwise
int16 sums saturate for full-range weights.

(b) A float bidirectional LSTM quantized by onnxruntime.quantization's
quantize_dynamic: with reduce_range (7-bit weights) icc must match ONNX
Runtime; with full-range weights icc must match the numpy model of the
documented arithmetic (exact integer products), and be no farther from
the float model than ONNX Runtime's kernel, which may saturate.

(c) Refusals, one line naming the node: sequence_lens, other activations,
a symbolic sequence length.

    python3 tests/models/dq_lstm_vs_ort.py build/icc
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as P, helper as h, numpy_helper as nh

ort.set_default_logger_severity(3)
RTOL, ATOL = 1e-4, 1e-5
ICC = os.path.abspath(sys.argv[1])
TMP = tempfile.mkdtemp(prefix="icc-dqlstm-")
OUTS = ["Y", "Y_h", "Y_c"]
failures = 0


def report(ok, what):
    global failures
    failures += not ok
    print(("ok   " if ok else "FAIL ") + what, flush=True)


def dq_model(S, B, I, H, D=1, bias=True, h0=True, c0=False, peep=False, per_row=False, clip=0.0,
             direction=None, seed=0, seq_sym=False, extra=None, lens=False):
    rng = np.random.default_rng(seed)
    W = rng.integers(-64, 64, (D, I, 4 * H)).astype(np.int8)
    R = rng.integers(-64, 64, (D, H, 4 * H)).astype(np.int8)
    shp = (D, 4 * H) if per_row else (D,)
    ws = (rng.random(shp) * 0.02 + 0.005).astype(np.float32)
    rs = (rng.random(shp) * 0.02 + 0.005).astype(np.float32)
    # ONNX Runtime takes nonzero zero points per tensor only
    wz = (np.zeros(shp) if per_row else np.full(shp, 2)).astype(np.int8)
    rz = (np.zeros(shp) if per_row else np.full(shp, -3)).astype(np.int8)
    inits = [nh.from_array(a, n) for a, n in [(W, "W"), (R, "R"), (ws, "ws"), (wz, "wz"), (rs, "rs"), (rz, "rz")]]
    if bias:
        inits.append(nh.from_array((rng.standard_normal((D, 8 * H)) * 0.1).astype(np.float32), "B"))
    if peep:
        inits.append(nh.from_array((rng.standard_normal((D, 3 * H)) * 0.1).astype(np.float32), "P"))
    vi = [h.make_tensor_value_info("X", P.FLOAT, ["S" if seq_sym else S, B, I])]
    feeds = {"X": rng.standard_normal((S, B, I)).astype(np.float32)}
    if h0:
        vi.append(h.make_tensor_value_info("h0", P.FLOAT, [D, B, H]))
        feeds["h0"] = (rng.standard_normal((D, B, H)) * 0.5).astype(np.float32)
    if c0:
        vi.append(h.make_tensor_value_info("c0", P.FLOAT, [D, B, H]))
        feeds["c0"] = (rng.standard_normal((D, B, H)) * 0.5).astype(np.float32)
    if lens:
        vi.append(h.make_tensor_value_info("lens", P.INT32, [B]))
        feeds["lens"] = np.full((B,), S, np.int32)
    ins = ["X", "W", "R", "B" if bias else "", "lens" if lens else "", "h0" if h0 else "", "c0" if c0 else "",
           "P" if peep else "", "ws", "wz", "rs", "rz"]
    attrs = dict(hidden_size=H, **(extra or {}))
    if clip:
        attrs["clip"] = clip
    if direction:
        attrs["direction"] = direction
    node = h.make_node("DynamicQuantizeLSTM", ins, OUTS, name="dqlstm", domain="com.microsoft", **attrs)
    g = h.make_graph([node], "g", vi, [h.make_tensor_value_info(n, P.FLOAT, None) for n in OUTS], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8
    return m, feeds


def ort_run(m, feeds):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)


def icc_run(path, feeds, tag, level):
    """The outputs, interpreted (level None) or compiled at -O<level>; or the error text."""
    args = []
    for k, v in feeds.items():
        np.save(f"{TMP}/{tag}_{k}.npy", v)
        args.append(f"--input={k}={TMP}/{tag}_{k}.npy")
    model = path
    if level is not None:
        model = f"{TMP}/{tag}_O{level}.so"
        r = subprocess.run([ICC, path, f"-O{level}", "-o", model], capture_output=True, text=True)
        if r.returncode:
            return r.stderr.strip()
    out = f"{TMP}/{tag}_{level}_out"
    r = subprocess.run([ICC, "run", model, *args, "-o", out], capture_output=True, text=True)
    if r.returncode:
        return r.stderr.strip()
    names = [n.name for n in onnx.load(path).graph.output]
    return [np.load(f"{out}/{n}.npy") for n in names]


def close(got, want):
    if isinstance(got, str):
        return False, got
    err = max(float(np.max(np.abs(a - b))) if a.size else 0.0 for a, b in zip(got, want))
    ok = all(a.shape == b.shape and np.allclose(a, b, rtol=RTOL, atol=ATOL) for a, b in zip(got, want))
    return ok, f"max abs {err:.2e}"


def modes(path, feeds, want, tag, what):
    for level in (None, 0, 3):
        ok, msg = close(icc_run(path, feeds, tag, level), want)
        report(ok, f"{what} {'interpreted' if level is None else '-O%d' % level}: {msg}")


# ---- (a) the forms -----------------------------------------------------------
CASES = [
    ("per-tensor, initial h", dict(S=4, B=1, I=6, H=5)),
    ("batch 3", dict(S=5, B=3, I=8, H=4)),
    ("initial c, peepholes", dict(S=3, B=2, I=6, H=5, c0=True, peep=True)),
    ("per-gate-row scales", dict(S=6, B=2, I=7, H=3, per_row=True)),
    ("reverse", dict(S=4, B=2, I=5, H=4, direction="reverse")),
    ("bidirectional", dict(S=4, B=2, I=5, H=4, D=2, direction="bidirectional", c0=True)),
    ("no bias, no initial state", dict(S=5, B=1, I=4, H=6, h0=False, bias=False)),
    ("clip", dict(S=3, B=2, I=4, H=4, clip=0.5)),
    ("20 steps", dict(S=20, B=1, I=16, H=16)),
]
for i, (what, cfg) in enumerate(CASES):
    m, feeds = dq_model(**cfg, seed=i)
    path = f"{TMP}/case{i}.onnx"
    onnx.save(m, path)
    modes(path, feeds, ort_run(m, feeds), f"case{i}", what)


# ---- (b) quantize_dynamic's output ---------------------------------------------
def float_lstm(path, S, B, I, H, rng):
    W = (rng.standard_normal((2, 4 * H, I)) * 0.3).astype(np.float32)
    R = (rng.standard_normal((2, 4 * H, H)) * 0.3).astype(np.float32)
    Bi = (rng.standard_normal((2, 8 * H)) * 0.1).astype(np.float32)
    n = h.make_node("LSTM", ["X", "W", "R", "B"], ["Y", "Y_h"], hidden_size=H, direction="bidirectional")
    g = h.make_graph([n], "g", [h.make_tensor_value_info("X", P.FLOAT, [S, B, I])],
                     [h.make_tensor_value_info(o, P.FLOAT, None) for o in ("Y", "Y_h")],
                     [nh.from_array(W, "W"), nh.from_array(R, "R"), nh.from_array(Bi, "B")])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def dql(x):
    """DynamicQuantizeLinear's u8 quantization, dequantized: (q - zp) * scale."""
    lo, hi = min(0.0, float(x.min())), max(0.0, float(x.max()))
    scale = np.float32((hi - lo) / 255.0)
    if scale == 0:
        return np.zeros_like(x), np.float32(1)
    zp = np.clip(np.round(np.float32(-lo) / scale), 0, 255)
    return np.clip(np.round(x / scale) + zp, 0, 255) - zp, scale


def numpy_dq_lstm(m, x):
    """The op's arithmetic (bidirectional, per-tensor, default activations)."""
    t = {i.name: nh.to_array(i) for i in m.graph.initializer}
    node = m.graph.node[-1]
    W, R, Bi = (t[node.input[k]] for k in (1, 2, 3))
    ws, wz, rs, rz = (t[node.input[k]] for k in (8, 9, 10, 11))
    S, B, _ = x.shape
    H = R.shape[1]
    sig = lambda v: 1 / (1 + np.exp(-v))
    xq, xs = dql(x.reshape(S * B, -1))
    ys = np.zeros((S, 2, B, H), np.float32)
    for d in range(2):
        wi = W[d].astype(np.int64) - wz[d]
        ri = R[d].astype(np.int64) - rz[d]
        xw = ((xq.astype(np.int64) @ wi).astype(np.float32) * np.float32(xs * ws[d])).reshape(S, B, -1)
        xw = xw + Bi[d, :4 * H] + Bi[d, 4 * H:]
        hh = np.zeros((B, H), np.float32)
        c = np.zeros((B, H), np.float32)
        for k in range(S):
            step = S - 1 - k if d else k
            g = xw[step]
            if k:
                hq, hs = dql(hh)
                g = g + (hq.astype(np.int64) @ ri).astype(np.float32) * np.float32(hs * rs[d])
            i, o, f, cc = np.split(g, 4, axis=1)
            c = sig(f) * c + sig(i) * np.tanh(cc)
            hh = sig(o) * np.tanh(c)
            ys[step, d] = hh
    return ys


try:
    from onnxruntime.quantization import QuantType, quantize_dynamic
except ImportError:  # pragma: no cover - onnxruntime always ships it
    quantize_dynamic = None
report(quantize_dynamic is not None, "onnxruntime.quantization is importable")
if quantize_dynamic is not None:
    rng = np.random.default_rng(7)
    S, B, I, H = 12, 1, 16, 24
    fpath = f"{TMP}/float_lstm.onnx"
    float_lstm(fpath, S, B, I, H, rng)
    x = rng.standard_normal((S, B, I)).astype(np.float32)
    ref = ort.InferenceSession(fpath, providers=["CPUExecutionProvider"]).run(None, {"X": x})[0]
    for rr in (True, False):
        qpath = f"{TMP}/q_rr{int(rr)}.onnx"
        quantize_dynamic(fpath, qpath, weight_type=QuantType.QInt8, reduce_range=rr)
        qm = onnx.load(qpath)
        ops = [n.op_type for n in qm.graph.node]
        report("DynamicQuantizeLSTM" in ops, f"quantize_dynamic(reduce_range={rr}) writes DynamicQuantizeLSTM: {ops}")
        want = ort_run(qm, {"X": x})
        if rr:
            modes(qpath, {"X": x}, want, f"qrr{int(rr)}", "quantize_dynamic, reduce_range (7-bit weights)")
            continue
        emul = numpy_dq_lstm(qm, x)
        got = icc_run(qpath, {"X": x}, "qfull", 3)
        ok, msg = close(got[:1] if not isinstance(got, str) else got, [emul])
        report(ok, f"quantize_dynamic, full-range weights, -O3 vs the numpy model: {msg}")
        if not isinstance(got, str):
            e_icc = float(np.max(np.abs(got[0] - ref)))
            e_ort = float(np.max(np.abs(want[0] - ref)))
            sat = float(np.max(np.abs(want[0] - emul)))
            report(e_icc <= e_ort + 1e-5, f"  distance from the float LSTM: icc {e_icc:.3g}, ONNX Runtime {e_ort:.3g} "
                   f"(ONNX Runtime vs the numpy model: {sat:.3g})")

# ---- (c) refusals --------------------------------------------------------------
REFUSE = [
    ("sequence_lens", dict(lens=True), "input 4 (sequence_lens) is not supported"),
    ("activations", dict(extra=dict(activations=["Sigmoid", "Relu", "Tanh"])), "activation 'Relu' is not supported"),
    ("symbolic steps", dict(seq_sym=True), "needs a static sequence length"),
]
for what, cfg, msg in REFUSE:
    m, feeds = dq_model(S=3, B=1, I=4, H=4, **cfg)
    path = f"{TMP}/refuse_{what.replace(' ', '_')}.onnx"
    onnx.save(m, path)
    r = subprocess.run([ICC, path, "-O3", "-o", f"{TMP}/refused.so"], capture_output=True, text=True)
    lines = r.stderr.strip().splitlines()
    ok = r.returncode == 1 and len(lines) == 1 and msg in lines[0] and "'dqlstm'" in lines[0]
    report(ok, f"refused: {what}: {lines[0] if lines else '(no message)'}")
    report(not os.path.exists(f"{TMP}/refused.so"), f"  no partial output for {what}")

# ---- (d) a symbolic sequence length pinned with --shape -----------------------
# --shape applies as the frontend creates the inputs, before it unrolls the
# steps, so the pinned length is static there; the value_info of X's
# readers keeps "S" and takes the pinned 3 (ddddocr's older captcha model)
m, feeds = dq_model(S=3, B=1, I=4, H=4, seq_sym=True)
m.graph.node.insert(0, h.make_node("Identity", ["X"], ["X_id"]))
m.graph.node[1].input[0] = "X_id"
m.graph.value_info.append(h.make_tensor_value_info("X_id", P.FLOAT, ["S", 1, 4]))
path = f"{TMP}/pinned_steps.onnx"
onnx.save(m, path)
want = ort_run(m, feeds)
args = []
for k, v in feeds.items():
    np.save(f"{TMP}/pin_{k}.npy", v)
    args.append(f"--input={k}={TMP}/pin_{k}.npy")
r = subprocess.run([ICC, path, "-O3", "--shape=X:3x1x4", "-o", f"{TMP}/pinned.so"], capture_output=True, text=True)
if r.returncode:
    report(False, f"symbolic steps pinned with --shape: {r.stderr.strip()}")
else:
    os.makedirs(f"{TMP}/pin_out", exist_ok=True)
    r = subprocess.run([ICC, "run", f"{TMP}/pinned.so", *args, "-o", f"{TMP}/pin_out"], capture_output=True, text=True)
    got = r.stderr.strip() if r.returncode else [np.load(f"{TMP}/pin_out/{o.name}.npy") for o in m.graph.output]
    ok, msg = close(got, want)
    report(ok, f"symbolic steps pinned with --shape=X:3x1x4, -O3: {msg}")

print(f"{failures} failed")
sys.exit(1 if failures else 0)
