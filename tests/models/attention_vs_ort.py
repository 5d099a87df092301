#!/usr/bin/env python3
"""Attention written out the way exporters write it, compiled, against ONNX Runtime.

Each model is the decomposed pattern the `attention` pass recognizes

    Q, K, V = Transpose(Reshape(x_q|x_k|x_v, [B, S, H, D]), 0,2,1,3)   (or 4-D inputs)
    S = MatMul(Q, Transpose(K, 0,1,3,2)) scaled by Mul or Div, plus an optional mask
    Y = Reshape(Transpose(MatMul(Softmax(S), V), 0,2,1,3), [B, S, H*D])   (or 4-D Y)

compiled by icc at -O0 (no fusion: the MatMul/Softmax/MatMul kernels) and -O3 (one Attention
kernel: the head splits absorbed, the tiled schedule), and compared with ONNX Runtime
(rtol 1e-4, atol 1e-5). Cases: masks of [1,1,1,T], [B,1,Sq,T] and [B,H,Sq,T] shapes with
-inf entries, no mask, sequence lengths that are not a multiple of the 6-row tile or the
16-key vector, several heads, batch > 1, different query and key lengths, 4-D inputs
and outputs (no head split to absorb), a row whose every key is masked (NaN, like ORT), and
a symbolic sequence length (compiled once without --shape, run at several lengths). It also
checks with --stats that -O3 did fuse the pattern (and absorbed the head splits where the
model has them), so a match that silently stops happening fails here.

The ONNX Attention op itself in f16 (computed in f32, Y summed in an f32 scratch): GQA,
a past key/value cache with its present outputs, causal, one query row, compiled at -O2,
against ONNX Runtime within 2 f16 ulps of the outputs' magnitude (atol 2e-3).

    python3 tests/models/attention_vs_ort.py build/icc
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


def model(path, b, sq, skv, heads, d, mask, split=True, div=True, sym=False):
    """mask: None, 'row' [1,1,1,T], 'query' [B,1,Sq,T] or 'full' [B,H,Sq,T]."""
    inits = [nh.from_array(np.array(np.sqrt(d) if div else 1 / np.sqrt(d), np.float32), "c")]
    nodes = []
    B, SQ, SKV = ("B" if sym else b), ("S" if sym else sq), ("S" if sym else skv)
    if split:
        inits += [nh.from_array(np.array([0, 0, heads, d], np.int64), "split"),
                  nh.from_array(np.array([0, 0, heads * d], np.int64), "merge")]
        ins = [h.make_tensor_value_info(n, P.FLOAT, [B, s, heads * d]) for n, s in (("q", SQ), ("k", SKV), ("v", SKV))]
        for x in "qkv":
            nodes += [h.make_node("Reshape", [x, "split"], [x + "4"]),
                      h.make_node("Transpose", [x + "4"], [x + "h"], perm=[0, 2, 1, 3])]
        q, k, v = "qh", "kh", "vh"
    else:
        ins = [h.make_tensor_value_info(n, P.FLOAT, [B, heads, s, d]) for n, s in (("q", SQ), ("k", SKV), ("v", SKV))]
        q, k, v = "q", "k", "v"
    nodes += [h.make_node("Transpose", [k], ["kt"], perm=[0, 1, 3, 2]),
              h.make_node("MatMul", [q, "kt"], ["s"]),
              h.make_node("Div" if div else "Mul", ["s", "c"], ["s2"])]
    s = "s2"
    if mask:
        shape = {"row": [1, 1, 1, SKV], "query": [B, 1, SQ, SKV], "full": [B, heads, SQ, SKV]}[mask]
        ins.append(h.make_tensor_value_info("mask", P.FLOAT, shape))
        nodes.append(h.make_node("Add", ["s2", "mask"], ["s3"]))
        s = "s3"
    nodes += [h.make_node("Softmax", [s], ["p"], axis=-1), h.make_node("MatMul", ["p", v], ["ctx"])]
    if split:
        nodes += [h.make_node("Transpose", ["ctx"], ["ctxt"], perm=[0, 2, 1, 3]),
                  h.make_node("Reshape", ["ctxt", "merge"], ["y"])]
        out = h.make_tensor_value_info("y", P.FLOAT, None)
    else:
        nodes[-1].output[0] = "y"
        out = h.make_tensor_value_info("y", P.FLOAT, None)
    g = h.make_graph(nodes, "attention", ins, [out], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def feeds(b, sq, skv, heads, d, mask, split, seed, all_masked_row=False):
    r = np.random.default_rng(seed)
    if split:
        f = {"q": r.standard_normal((b, sq, heads * d)), "k": r.standard_normal((b, skv, heads * d)),
             "v": r.standard_normal((b, skv, heads * d))}
    else:
        f = {"q": r.standard_normal((b, heads, sq, d)), "k": r.standard_normal((b, heads, skv, d)),
             "v": r.standard_normal((b, heads, skv, d))}
    f = {k: v.astype(np.float32) for k, v in f.items()}
    if mask:
        shape = {"row": (1, 1, 1, skv), "query": (b, 1, sq, skv), "full": (b, heads, sq, skv)}[mask]
        m = np.where(r.random(shape) < 0.2, -np.inf, r.standard_normal(shape)).astype(np.float32)
        m[..., 0] = 0  # every row keeps a key, unless asked
        if all_masked_row:
            m[..., 0, :] = -np.inf
        f["mask"] = m
    return f


class Runner:
    def __init__(self, icc, t):
        self.icc, self.t, self.failed = icc, t, 0

    def compile(self, path, level, extra=()):
        so = path[:-5] + level.strip("-") + ".so"
        r = subprocess.run([self.icc, path, "-o", so, level] + list(extra), capture_output=True, text=True)
        if r.returncode:
            print("FAIL %s %s does not compile: %s" % (os.path.basename(path), level, r.stderr.strip()))
            self.failed += 1
            return None
        return so

    def fused(self, path, want3d):
        r = subprocess.run([self.icc, "info", path, "-O3", "--stats"], capture_output=True, text=True)
        got = "1 attention patterns fused" in r.stderr
        got3d = "1 head splits and merges absorbed" in r.stderr
        ok = got and got3d == want3d
        print("%s %s: -O3 fuses the pattern%s" % ("ok  " if ok else "FAIL", os.path.basename(path),
                                                 " and absorbs the head splits" if want3d else " (4-D)"))
        self.failed += not ok

    def check(self, path, so, f, label, nan_rows=False):
        want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, f)[0]
        args = [self.icc, "run", so, "-o", os.path.join(self.t, "out")]
        for k, v in f.items():
            np.save(os.path.join(self.t, k + ".npy"), v)
            args += ["--input", "%s=%s" % (k, os.path.join(self.t, k + ".npy"))]
        r = subprocess.run(args, capture_output=True, text=True)
        ok, err = r.returncode == 0, float("nan")
        if ok:
            got = np.load(os.path.join(self.t, "out", "y.npy"))
            ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True)
            if ok and nan_rows:
                ok = bool(np.isnan(want).any())  # the case must really test the NaN rows
            fin = np.isfinite(want)
            err = np.abs(got - want)[fin].max() if got.shape == want.shape and fin.any() else 0.0
        print("%s %s: max abs error %.3g%s" % ("ok  " if ok else "FAIL", label, err,
                                               "" if r.returncode == 0 else " (" + r.stderr.strip() + ")"))
        self.failed += not ok


# (b, sq, skv, heads, d, mask, split, div)
CASES = [
    (1, 128, 128, 12, 64, "row", True, True),      # BERT-base's shape
    (1, 128, 128, 12, 32, "row", True, False),     # MiniLM's, scale by Mul
    (2, 37, 37, 4, 16, "row", True, True),         # batch 2, seq not a multiple of the tile
    (1, 5, 23, 3, 8, "query", True, True),         # fewer queries than the tile, keys not a vector multiple
    (3, 19, 11, 2, 24, "full", True, False),       # a per-head mask, Sq > Skv
    (1, 64, 64, 8, 64, None, True, True),          # no mask
    (2, 17, 40, 5, 32, "row", False, True),        # 4-D inputs and output: nothing to absorb
    (1, 1, 9, 2, 16, "row", True, True),           # one query row
]


# (b, hq, hkv, s, past, d, causal): the ONNX Attention op in f16
F16_CASES = [(1, 4, 4, 7, 0, 16, 0), (2, 8, 2, 5, 3, 32, 1), (1, 2, 2, 1, 9, 64, 0), (1, 4, 1, 19, 0, 8, 1)]


def f16_model(path, b, hq, hkv, s, past, d, causal):
    f16 = P.FLOAT16
    ins = [h.make_tensor_value_info(n, f16, [b, hh, s, d]) for n, hh in (("q", hq), ("k", hkv), ("v", hkv))]
    names, outs = ["q", "k", "v"], ["y"]
    if past:
        ins += [h.make_tensor_value_info(n, f16, [b, hkv, past, d]) for n in ("pk", "pv")]
        names += ["", "pk", "pv"]
        outs += ["prk", "prv"]
    g = h.make_graph([h.make_node("Attention", names, outs, is_causal=causal)], "g", ins,
                     [h.make_tensor_value_info(n, f16, None) for n in outs])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 23)])
    m.ir_version = 10
    onnx.save(m, path)


def main():
    icc = os.path.abspath(sys.argv[1])
    t = tempfile.mkdtemp()
    run = Runner(icc, t)
    for i, (b, sq, skv, heads, d, mask, split, div) in enumerate(CASES):
        path = os.path.join(t, "att%d.onnx" % i)
        model(path, b, sq, skv, heads, d, mask, split, div)
        label = "B %d Sq %d Skv %d H %d D %d, mask %s, %s" % (b, sq, skv, heads, d, mask, "3-D" if split else "4-D")
        run.fused(path, split)
        f = feeds(b, sq, skv, heads, d, mask, split, i)
        for level in ("-O0", "-O3"):
            so = run.compile(path, level)
            if so:
                run.check(path, so, f, "%s %s" % (label, level))

    # a row with every key masked: NaN in the reference and in ORT
    path = os.path.join(t, "masked.onnx")
    model(path, 1, 8, 8, 2, 16, "query")
    so = run.compile(path, "-O3")
    if so:
        run.check(path, so, feeds(1, 8, 8, 2, 16, "query", True, 99, all_masked_row=True),
                  "a query row with every key masked gives NaN, -O3", nan_rows=True)

    # symbolic batch and sequence, compiled once
    path = os.path.join(t, "sym.onnx")
    model(path, 0, 0, 0, 4, 16, "row", sym=True)
    so = run.compile(path, "-O3")
    for b, s in ((1, 1), (2, 7), (1, 64), (3, 13)) if so else ():
        run.check(path, so, feeds(b, s, s, 4, 16, "row", True, s), "symbolic B %d S %d, -O3" % (b, s))

    # the Attention op in f16
    rng = np.random.default_rng(7)
    for i, (b, hq, hkv, sq, past, d, causal) in enumerate(F16_CASES):
        path = os.path.join(t, "f16_%d.onnx" % i)
        f16_model(path, b, hq, hkv, sq, past, d, causal)
        f = {n: rng.standard_normal(shape).astype(np.float16)
             for n, shape in (("q", (b, hq, sq, d)), ("k", (b, hkv, sq, d)), ("v", (b, hkv, sq, d)))}
        if past:
            f["pk"] = rng.standard_normal((b, hkv, past, d)).astype(np.float16)
            f["pv"] = rng.standard_normal((b, hkv, past, d)).astype(np.float16)
        so = run.compile(path, "-O2")
        if not so:
            continue
        want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, f)
        args = [icc, "run", so, "-o", os.path.join(t, "out16")]
        for k, v in f.items():
            np.save(os.path.join(t, k + ".npy"), v)
            args += ["--input", "%s=%s" % (k, os.path.join(t, k + ".npy"))]
        r = subprocess.run(args, capture_output=True, text=True)
        names = ["y"] + (["prk", "prv"] if past else [])
        ok, err = r.returncode == 0, float("nan")
        if ok:
            got = [np.load(os.path.join(t, "out16", n + ".npy")) for n in names]
            ok = all(g.dtype == np.float16 and g.shape == w.shape and
                     np.allclose(g.astype(np.float32), w.astype(np.float32), rtol=0, atol=2e-3)
                     for g, w in zip(got, want))
            err = max(float(np.abs(g.astype(np.float32) - w.astype(np.float32)).max()) for g, w in zip(got, want))
        print("%s Attention f16 B %d Hq %d Hkv %d S %d past %d D %d causal %d: max abs error %.3g%s" %
              ("ok  " if ok else "FAIL", b, hq, hkv, sq, past, d, causal, err,
               "" if r.returncode == 0 else " (" + r.stderr.strip() + ")"))
        run.failed += not ok

    print("attention vs ORT: %s" % ("all passed" if not run.failed else "%d failed" % run.failed))
    return 1 if run.failed else 0


if __name__ == "__main__":
    sys.exit(main())
