#!/usr/bin/env python3
"""ONNX Runtime's com.microsoft contrib ops, compiled by icc, against ONNX Runtime.

Each case is a small model (onnx.helper, opset_import com.microsoft 1) of one contrib
op in one attribute / input form, with random inputs from a fixed seed; icc compiles it
(`icc MODEL -o X.so`), `icc run` runs it, and every output must match ONNX Runtime's
CPU kernels at rtol 1e-4, atol 1e-5 (shapes and dtypes too). Then a 2-layer BERT with
word/position/segment embeddings and an attention mask, written out in primitive ops
the way exporters write it, goes through onnxruntime.transformers.optimizer
(model_type='bert'), which rewrites it into EmbedLayerNormalization, Attention with a
1-D mask_index, SkipLayerNormalization and BiasGelu; icc compiles both graphs and both
must match ONNX Runtime, as must the optimizer's forms without EmbedLayerNormalization and
with the raw mask. Where ONNX Runtime's CPU kernels lack a form (packed MultiHeadAttention,
BiasAdd, NhwcConv) the oracle is ONNX Runtime on the same data in the equivalent supported
form. Forms icc refuses must fail with a one-line message naming the node. Prints one line
per case; exits 1 if any fails.

    python3 tests/models/ms_ops_vs_ort.py build/icc [FILTER ...] [--bench]

--bench times the optimized and unoptimized BERT compiled by icc against ONNX Runtime,
one thread each, alternating in one run.
"""
import collections
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
MS = "com.microsoft"
RNG = np.random.default_rng(7)
TYPES = {np.dtype(np.float32): P.FLOAT, np.dtype(np.int32): P.INT32, np.dtype(np.int64): P.INT64}


def rand(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def model(nodes, inputs, outputs, inits=(), opset=17, dims=None):
    """inputs: name -> array (graph inputs); inits: name -> array (initializers);
    outputs: names (types left to inference); dims: name -> declared dims (symbolic
    ones as strings) where they differ from the array's shape."""
    dims = dims or {}
    g = h.make_graph(
        nodes, "case",
        [h.make_tensor_value_info(k, TYPES[v.dtype], dims.get(k, v.shape)) for k, v in inputs.items()],
        [h.make_empty_tensor_value_info(o) for o in outputs],
        [nh.from_array(v, k) for k, v in dict(inits).items()])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset), h.make_opsetid(MS, 1)])
    m.ir_version = 8
    return m


class Runner:
    def __init__(self, icc):
        self.icc = icc
        self.tmp = tempfile.mkdtemp()
        self.failed = 0
        self.n = 0

    def compile(self, path, so, extra=()):
        return subprocess.run([self.icc, path, "-o", so, *extra], capture_output=True, text=True)

    def run_so(self, so, feeds, outdir):
        args = [self.icc, "run", so]
        for k, v in feeds.items():
            f = os.path.join(self.tmp, "in_%s.npy" % k)
            np.save(f, v)
            args += ["--input", "%s=%s" % (k, f)]
        r = subprocess.run(args + ["-o", outdir], capture_output=True, text=True)
        return r

    def check(self, name, m, feeds, extra=(), ref=None):
        """Compiles and runs m, compares all outputs with ONNX Runtime's (on ref =
        (model, feeds) instead where ONNX Runtime's CPU kernel lacks m's form)."""
        self.n += 1
        path = os.path.join(self.tmp, name + ".onnx")
        onnx.save(m, path)
        rm, rf = ref or (m, feeds)
        rpath = os.path.join(self.tmp, name + "_ref.onnx")
        onnx.save(rm, rpath)
        want = ort.InferenceSession(rpath, providers=["CPUExecutionProvider"]).run(None, rf)
        so = os.path.join(self.tmp, name + ".so")
        r = self.compile(path, so, extra)
        outdir = os.path.join(self.tmp, name)
        if r.returncode == 0:
            r = self.run_so(so, feeds, outdir)
        if r.returncode:
            print("FAIL %s: %s" % (name, (r.stderr or r.stdout).strip()))
            self.failed += 1
            return
        worst_abs = worst_rel = 0.0
        ok = True
        for o, w in zip(m.graph.output, want):
            safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in o.name)
            got = np.load(os.path.join(outdir, safe + ".npy"))
            if got.shape != w.shape or got.dtype != w.dtype:
                print("FAIL %s: output %s is %s %s, ONNX Runtime's %s %s" %
                      (name, o.name, got.dtype, got.shape, w.dtype, w.shape))
                self.failed += 1
                return
            err = np.abs(got.astype(np.float64) - w.astype(np.float64))
            if err.size:
                worst_abs = max(worst_abs, float(err.max()))
                worst_rel = max(worst_rel, float((err / np.maximum(np.abs(w.astype(np.float64)), 1e-30)).max()))
            ok &= bool(np.allclose(got, w, rtol=RTOL, atol=ATOL))
        print("%s %s: max abs error %.3g, max rel error %.3g" % ("ok  " if ok else "FAIL", name, worst_abs, worst_rel))
        self.failed += not ok
        return worst_abs

    def refuse(self, name, m, what):
        """icc must fail with one line naming the node and saying what."""
        self.n += 1
        path = os.path.join(self.tmp, name + ".onnx")
        onnx.save(m, path)
        r = self.compile(path, os.path.join(self.tmp, name + ".so"))
        msg = r.stderr.strip()
        ok = r.returncode == 1 and "node 'n'" in msg and what in msg and len(msg.splitlines()) == 1
        print("%s %s: %s" % ("ok  " if ok else "FAIL", name, msg or "(compiled)"))
        self.failed += not ok


def node(op, ins, outs, **kw):
    return h.make_node(op, ins, outs, name="n", domain=MS, **kw)


# ---- cases --------------------------------------------------------------------


def activations(t):
    x = rand(2, 3, 8)
    for op, kw in [("Gelu", {}), ("QuickGelu", {}), ("QuickGelu", {"alpha": 1.2}), ("FastGelu", {})]:
        t.check("%s%s" % (op, "_alpha" if kw else ""), model([node(op, ["x"], ["y"], **kw)], {"x": x}, ["y"]), {"x": x})
    b = rand(8)
    t.check("FastGelu_bias", model([node("FastGelu", ["x", "b"], ["y"])], {"x": x}, ["y"], {"b": b}), {"x": x})
    t.check("BiasGelu", model([node("BiasGelu", ["x", "b"], ["y"])], {"x": x}, ["y"], {"b": b}), {"x": x})


def matmuls(t):
    for ta, tb, tba, tbb, alpha, sa, sb in [
            (0, 0, 0, 0, 1.0, (2, 3, 4, 5), (5, 6)),
            (1, 0, 0, 0, 0.5, (2, 5, 4), (5, 6)),
            (0, 1, 0, 0, 2.0, (3, 4, 5), (3, 6, 5)),
            (1, 1, 0, 0, 1.0, (5, 4), (6, 5)),
            (0, 0, 1, 0, 1.0, (4, 2, 3, 5), (2, 3, 5, 6)),
            (1, 0, 1, 0, 1.5, (5, 2, 3, 4), (2, 3, 5, 6)),
            (0, 0, 0, 1, 1.0, (2, 3, 4, 5), (5, 2, 3, 6)),
            (0, 1, 0, 1, 1.0, (2, 3, 4, 5), (6, 2, 3, 5))]:
        a, b = rand(*sa), rand(*sb)
        nm = "FusedMatMul_tA%d_tB%d_tbA%d_tbB%d_alpha%g" % (ta, tb, tba, tbb, alpha)
        m = model([node("FusedMatMul", ["a", "b"], ["y"], transA=ta, transB=tb, transBatchA=tba,
                        transBatchB=tbb, alpha=alpha)], {"a": a, "b": b}, ["y"])
        t.check(nm, m, {"a": a, "b": b})
    a, b = rand(3, 5, 4), rand(3, 5, 6)
    t.check("TransposeMatMul_tA", model([node("TransposeMatMul", ["a", "b"], ["y"], transA=1, alpha=0.5)],
                                        {"a": a, "b": b}, ["y"]), {"a": a, "b": b})
    a, w, c = rand(4, 6), rand(5, 6), rand(5)
    for act, kw in [("Relu", {}), ("LeakyRelu", {"activation_alpha": 0.2}), ("Sigmoid", {}),
                    ("HardSigmoid", {"activation_alpha": 0.3, "activation_beta": 0.4})]:
        m = model([node("FusedGemm", ["a", "w", "c"], ["y"], transB=1, alpha=0.7, beta=0.9, activation=act, **kw)],
                  {"a": a}, ["y"], {"w": w, "c": c})
        t.check("FusedGemm_" + act, m, {"a": a})


def convs(t):
    x, w, b = rand(1, 3, 9, 9), rand(8, 3, 3, 3, scale=0.3), rand(8)
    z = rand(1, 8, 9, 9)
    for act, params in [(None, None), ("Relu", None), ("Tanh", None), ("Sigmoid", None),
                        ("LeakyRelu", [0.1]), ("Clip", [-0.5, 0.5]), ("HardSigmoid", [0.3, 0.4])]:
        kw = {"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}
        if act:
            kw["activation"] = act
        if params:
            kw["activation_params"] = params
        m = model([node("FusedConv", ["x", "w", "b"], ["y"], **kw)], {"x": x}, ["y"], {"w": w, "b": b})
        t.check("FusedConv_%s" % (act or "none"), m, {"x": x})
    m = model([node("FusedConv", ["x", "w", "b", "z"], ["y"], pads=[1, 1, 1, 1], activation="Relu")],
              {"x": x, "z": z}, ["y"], {"w": w, "b": b})
    t.check("FusedConv_Relu_sum_Z", m, {"x": x, "z": z})
    w2 = rand(6, 1, 3, 3, scale=0.3)
    x2 = rand(1, 6, 8, 8)
    m = model([node("FusedConv", ["x", "w"], ["y"], group=6, strides=[2, 2], dilations=[1, 1], activation="Relu")],
              {"x": x2}, ["y"], {"w": w2})
    t.check("FusedConv_depthwise_stride2", m, {"x": x2})


def no_cpu_kernel(t):
    """BiasAdd and NhwcConv have no CPU kernel in ONNX Runtime: checked against ONNX
    Runtime running the documented equivalent in standard ops (Add + Add; Transposes
    around Conv, weights [M, kH, kW, C/group])."""
    x, bias, skip = rand(2, 9, 8), rand(8), rand(2, 9, 8)
    ref = model([h.make_node("Add", ["x", "bias"], ["t"]), h.make_node("Add", ["t", "skip"], ["y"])],
                {"x": x, "skip": skip}, ["y"], {"bias": bias})
    t.check("BiasAdd", model([node("BiasAdd", ["x", "bias", "skip"], ["y"])], {"x": x, "skip": skip}, ["y"],
                             {"bias": bias}), {"x": x, "skip": skip}, ref=(ref, {"x": x, "skip": skip}))
    xn, wn, b = rand(1, 9, 9, 6), rand(4, 3, 3, 3, scale=0.3), rand(4)
    ref = model([h.make_node("Transpose", ["x"], ["xt"], perm=[0, 3, 1, 2]),
                 h.make_node("Transpose", ["w"], ["wt"], perm=[0, 3, 1, 2]),
                 h.make_node("Conv", ["xt", "wt", "b"], ["yt"], group=2, strides=[2, 1], pads=[1, 1, 1, 1]),
                 h.make_node("Transpose", ["yt"], ["y"], perm=[0, 2, 3, 1])], {"x": xn}, ["y"], {"w": wn, "b": b})
    m = model([node("NhwcConv", ["x", "w", "b"], ["y"], group=2, strides=[2, 1], pads=[1, 1, 1, 1])], {"x": xn}, ["y"],
              {"w": wn, "b": b})
    t.check("NhwcConv_grouped_strided", m, {"x": xn}, ref=(ref, {"x": xn}))


def norms(t):
    x, s = rand(2, 5, 16), rand(2, 5, 16)
    g, bt, bias = rand(16), rand(16), rand(16)
    t.check("SkipLayerNormalization", model([node("SkipLayerNormalization", ["x", "s", "g", "bt"], ["y"], epsilon=1e-5)],
                                            {"x": x, "s": s}, ["y"], {"g": g, "bt": bt}), {"x": x, "s": s})
    t.check("SkipLayerNormalization_nobeta", model([node("SkipLayerNormalization", ["x", "s", "g"], ["y"])],
                                                   {"x": x, "s": s}, ["y"], {"g": g}), {"x": x, "s": s})
    m = model([node("SkipLayerNormalization", ["x", "s", "g", "bt", "bias"], ["y", "mean", "isd", "sum"], epsilon=1e-6)],
              {"x": x, "s": s}, ["y", "mean", "isd", "sum"], {"g": g, "bt": bt, "bias": bias})
    t.check("SkipLayerNormalization_bias_all_outputs", m, {"x": x, "s": s})
    m = model([node("SkipLayerNormalization", ["x", "s", "g", "", "bias"], ["y", "", "", "sum"])],
              {"x": x, "s": s}, ["y", "sum"], {"g": g, "bias": bias})
    t.check("SkipLayerNormalization_bias_sum_output", m, {"x": x, "s": s})
    s2 = rand(5, 16)
    t.check("SkipLayerNormalization_2d_skip", model([node("SkipLayerNormalization", ["x", "s", "g", "bt"], ["y"])],
                                                    {"x": x, "s": s2}, ["y"], {"g": g, "bt": bt}), {"x": x, "s": s2})
    m = model([node("SkipSimplifiedLayerNormalization", ["x", "s", "g"], ["y"], epsilon=1e-6)],
              {"x": x, "s": s}, ["y"], {"g": g})
    t.check("SkipSimplifiedLayerNormalization", m, {"x": x, "s": s})
    m = model([node("SkipSimplifiedLayerNormalization", ["x", "s", "g", "bias"], ["y", "", "isd", "sum"])],
              {"x": x, "s": s}, ["y", "isd", "sum"], {"g": g, "bias": bias})
    t.check("SkipSimplifiedLayerNormalization_bias_outputs", m, {"x": x, "s": s})
    m = model([h.make_node("SimplifiedLayerNormalization", ["x", "g"], ["y"], name="n", axis=-1, epsilon=1e-6)],
              {"x": x}, ["y"], {"g": g})
    t.check("SimplifiedLayerNormalization", m, {"x": x})
    m = model([h.make_node("SimplifiedLayerNormalization", ["x", "g2"], ["y", "isd"], name="n", axis=1)],
              {"x": x}, ["y", "isd"], {"g2": rand(5, 16)})
    t.check("SimplifiedLayerNormalization_axis1_invstd", m, {"x": x})


def embed(t):
    B, S, Hd, V = 2, 7, 16, 30
    ids = RNG.integers(0, V, (B, S)).astype(np.int32)
    seg = RNG.integers(0, 2, (B, S)).astype(np.int32)
    mask = np.ones((B, S), np.int32)
    mask[1, 4:] = 0
    inits = {"we": rand(V, Hd), "pe": rand(16, Hd), "se": rand(2, Hd), "g": rand(Hd), "b": rand(Hd)}
    m = model([node("EmbedLayerNormalization", ["ids", "seg", "we", "pe", "se", "g", "b", "mask"], ["y", "mi"], epsilon=1e-5)],
              {"ids": ids, "seg": seg, "mask": mask}, ["y", "mi"], inits)
    t.check("EmbedLayerNormalization_mask", m, {"ids": ids, "seg": seg, "mask": mask})
    m = model([node("EmbedLayerNormalization", ["ids", "", "we", "pe", "", "g", "b"], ["y", "mi", "sum"])],
              {"ids": ids}, ["y", "mi", "sum"], inits)
    t.check("EmbedLayerNormalization_noseg_sum", m, {"ids": ids})
    pos = np.array([[3, 1, 4, 1, 5, 9, 2]] * B, np.int32)
    m = model([node("EmbedLayerNormalization", ["ids", "seg", "we", "pe", "se", "g", "b", "", "pos"], ["y", "mi"])],
              {"ids": ids, "seg": seg, "pos": pos}, ["y", "mi"], inits)
    t.check("EmbedLayerNormalization_position_ids", m, {"ids": ids, "seg": seg, "pos": pos})


def attention(t):
    B, S, Din, N = 2, 6, 16, 4
    x = rand(B, S, Din)
    w, b = rand(Din, 3 * Din, scale=0.3), rand(3 * Din)
    inits = {"w": w, "b": b}

    def att(name, extra_in=(), feeds=None, outs=("y",), **kw):
        ins = ["x", "w", "b"] + list(extra_in)
        fd = {"x": x}
        fd.update(feeds or {})
        m = model([node("Attention", ins, list(outs), num_heads=N, **kw)], fd, [o for o in outs if o], inits)
        t.check(name, m, fd)

    att("Attention")
    # declared with symbolic batch and sequence, pinned at compile time (--shape): the
    # key positions are Range(0, Shape(K)[2]), which fold makes a constant (-O1 and up)
    lens = np.array([4, 6], np.int32)
    for lvl in ("-O1", "-O2"):
        m = model([node("Attention", ["x", "w", "b", "lens"], ["y"], num_heads=N, unidirectional=1)],
                  {"x": x, "lens": lens}, ["y"], inits, dims={"x": ["B", "S", Din], "lens": ["B"]})
        t.check("Attention_symbolic_dims_pinned_mask_1d_unidirectional" + lvl, m, {"x": x, "lens": lens},
                extra=(lvl, "--shape=x:%dx%dx%d" % (B, S, Din), "--shape=lens:%d" % B))
    att("Attention_unidirectional", unidirectional=1)
    att("Attention_scale", scale=0.3)
    lens = np.array([4, 6], np.int32)
    att("Attention_mask_1d_lengths", ["lens"], {"lens": lens})
    se = np.array([5, 6, 1, 0], np.int32)
    att("Attention_mask_1d_end_start", ["se"], {"se": se})
    raw = np.ones((B, S), np.int32)
    raw[0, 2] = raw[1, 4:] = 0
    att("Attention_mask_2d", ["raw"], {"raw": raw})
    att("Attention_mask_2d_unidirectional_filter", ["raw"], {"raw": raw}, unidirectional=1, mask_filter_value=-1e4)
    m3 = (RNG.random((B, S, S)) > 0.3).astype(np.int32)
    m3[:, :, 0] = 1
    att("Attention_mask_3d", ["m3"], {"m3": m3})
    ab = rand(1, N, S, S)
    att("Attention_attention_bias", ["", "", "ab"], {"ab": ab})
    # K/Q 16 wide, V 8 wide
    wq = rand(Din, 40, scale=0.3)
    m = model([node("Attention", ["x", "wq", "bq"], ["y"], num_heads=N, qkv_hidden_sizes=[16, 16, 8])],
              {"x": x}, ["y"], {"wq": wq, "bq": rand(40)})
    t.check("Attention_qkv_hidden_sizes", m, {"x": x})
    # past and present (GPT-2)
    P_ = 3
    past = rand(2, B, N, P_, Din // N)
    att("Attention_past_present_unidirectional", ["", "past"], {"past": past}, outs=("y", "present"), unidirectional=1)
    lens_t = np.array([9, 7], np.int32)
    att("Attention_past_mask_1d", ["lens", "past"], {"lens": lens_t, "past": past}, outs=("y", "present"))


def mha(t):
    B, S, L, Hd, N = 2, 5, 7, 16, 4
    q, k, v = rand(B, S, Hd), rand(B, L, Hd), rand(B, L, Hd)
    bias = rand(3 * Hd)

    def mk(ins, feeds, inits=None, outs=("y",), **kw):
        return model([node("MultiHeadAttention", ins, list(outs), num_heads=N, **kw)], feeds,
                     [o for o in outs if o], inits or {})

    def run(name, ins, feeds, inits=None, outs=("y",), ref=None, **kw):
        t.check(name, mk(ins, feeds, inits, outs, **kw), feeds, ref=ref)

    run("MultiHeadAttention", ["q", "k", "v"], {"q": q, "k": k, "v": v})
    run("MultiHeadAttention_bias", ["q", "k", "v", "bias"], {"q": q, "k": k, "v": v}, {"bias": bias})
    raw = np.ones((B, L), np.int32)
    raw[1, 5:] = 0
    run("MultiHeadAttention_key_padding_mask_2d", ["q", "k", "v", "", "m"], {"q": q, "k": k, "v": v, "m": raw})
    lens = np.array([7, 3], np.int32)
    run("MultiHeadAttention_key_padding_mask_1d", ["q", "k", "v", "", "m"], {"q": q, "k": k, "v": v, "m": lens})
    ab = rand(B, 1, S, L)
    run("MultiHeadAttention_attention_bias", ["q", "k", "v", "", "", "ab"], {"q": q, "k": k, "v": v, "ab": ab}, scale=0.2)
    qs, ks, vs = rand(B, S, Hd), rand(B, S, Hd), rand(B, S, Hd)
    run("MultiHeadAttention_self_unidirectional", ["q", "k", "v"], {"q": qs, "k": ks, "v": vs}, unidirectional=1)
    # ONNX Runtime's CPU kernel lacks the packed forms: they are checked against its
    # results on the same data unpacked
    qkv = rand(B, S, N, 3, Hd // N)
    up = {n_: qkv[:, :, :, i].reshape(B, S, Hd) for i, n_ in enumerate("qkv")}
    run("MultiHeadAttention_packed_qkv", ["qkv"], {"qkv": qkv}, ref=(mk(["q", "k", "v"], up), up))
    kv = rand(B, L, N, 2, Hd // N)
    up = {"q": q, "k": kv[:, :, :, 0].reshape(B, L, Hd), "v": kv[:, :, :, 1].reshape(B, L, Hd)}
    run("MultiHeadAttention_packed_kv", ["q", "kv"], {"q": q, "kv": kv}, ref=(mk(["q", "k", "v"], up), up))
    k4, v4 = rand(B, N, L, Hd // N), rand(B, N, L, Hd // N)
    run("MultiHeadAttention_bnsh_kv", ["q", "k4", "v4"], {"q": q, "k4": k4, "v4": v4})
    pk, pv = rand(B, N, 3, Hd // N), rand(B, N, 3, Hd // N)
    run("MultiHeadAttention_past_present", ["q", "k", "v", "bias", "", "", "pk", "pv"],
        {"q": qs, "k": ks, "v": vs, "pk": pk, "pv": pv}, {"bias": bias}, outs=("y", "pres_k", "pres_v"), unidirectional=1)


def rotary(t):
    B, S, N, Hd, M = 2, 5, 3, 8, 12
    ang = RNG.random((M, Hd // 2)).astype(np.float32) * 3
    cos, sin = np.cos(ang), np.sin(ang)
    pos2 = RNG.integers(0, M, (B, S)).astype(np.int64)
    pos1 = np.array([4], np.int64)
    for inter in (0, 1):
        for layout in ("bsh", "bnsh"):
            x = rand(B, S, N * Hd) if layout == "bsh" else rand(B, N, S, Hd)
            for pname, pos in (("pos2d", pos2), ("pos1d", pos1)):
                kw = {"interleaved": inter}
                if layout == "bsh":
                    kw["num_heads"] = N
                m = model([node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], **kw)],
                          {"x": x, "pos": pos}, ["y"], {"cos": cos, "sin": sin})
                t.check("RotaryEmbedding_%s_%s_interleaved%d" % (layout, pname, inter), m, {"x": x, "pos": pos})
    # partial rotation: rotary_embedding_dim 4 of head size 8
    c4, s4 = cos[:, :2].copy(), sin[:, :2].copy()
    x = rand(B, S, N * Hd)
    for inter in (0, 1):
        m = model([node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], num_heads=N, rotary_embedding_dim=4,
                        interleaved=inter)], {"x": x, "pos": pos2}, ["y"], {"cos": c4, "sin": s4})
        t.check("RotaryEmbedding_partial_interleaved%d" % inter, m, {"x": x, "pos": pos2})


def onnx_rotary(t):
    """ONNX's own RotaryEmbedding (opset 23), not a registry op: the same expansion."""
    B, S, N, Hd, M = 2, 5, 3, 8, 12
    ang = RNG.random((M, Hd // 2)).astype(np.float32) * 3
    cos, sin = np.cos(ang), np.sin(ang)
    pos = RNG.integers(0, M, (B, S)).astype(np.int64)
    for inter in (0, 1):
        x = rand(B, S, N * Hd)
        m = model([h.make_node("RotaryEmbedding", ["x", "cos", "sin", "pos"], ["y"], name="n", num_heads=N,
                               interleaved=inter)], {"x": x, "pos": pos}, ["y"], {"cos": cos, "sin": sin}, opset=23)
        t.check("onnx_RotaryEmbedding_3d_pos_interleaved%d" % inter, m, {"x": x, "pos": pos})
        x4 = rand(B, N, S, Hd)
        c3, s3 = cos[pos], sin[pos]
        m = model([h.make_node("RotaryEmbedding", ["x", "cos", "sin"], ["y"], name="n", interleaved=inter)],
                  {"x": x4}, ["y"], {"cos": c3, "sin": s3}, opset=23)
        t.check("onnx_RotaryEmbedding_4d_per_token_caches_interleaved%d" % inter, m, {"x": x4})
    x = rand(B, S, N * Hd)
    m = model([h.make_node("RotaryEmbedding", ["x", "cos", "sin", "pos"], ["y"], name="n", num_heads=N,
                           rotary_embedding_dim=4)], {"x": x, "pos": pos}, ["y"],
              {"cos": cos[:, :2].copy(), "sin": sin[:, :2].copy()}, opset=23)
    t.check("onnx_RotaryEmbedding_partial", m, {"x": x, "pos": pos})


def refusals(t):
    x = rand(2, 4, 8)
    w = rand(8, 24)
    t.refuse("refuse_Attention_do_rotary", model([node("Attention", ["x", "w"], ["y"], num_heads=2, do_rotary=1)],
                                                {"x": x}, ["y"], {"w": w}), "do_rotary")
    mi = np.zeros(8, np.int32)
    t.refuse("refuse_Attention_mask_3b2", model([node("Attention", ["x", "w", "", "m"], ["y"], num_heads=2)],
                                               {"x": x, "m": np.zeros(8, np.int32)}, ["y"], {"w": w}), "3 * batch + 2")
    del mi
    m4 = np.ones((2, 1, 8, 8), np.int32)
    t.refuse("refuse_Attention_mask_4d", model([node("Attention", ["x", "w", "", "m"], ["y"], num_heads=2)],
                                              {"x": x, "m": m4}, ["y"], {"w": w}), "rank 4")
    t.refuse("refuse_FusedConv_activation", model([node("FusedConv", ["c", "cw"], ["y"], activation="Softplus")],
                                                 {"c": rand(1, 2, 4, 4)}, ["y"], {"cw": rand(2, 2, 1, 1)}), "Softplus")
    t.refuse("refuse_unknown_attribute", model([node("Gelu", ["x"], ["y"], approximate="tanh")], {"x": x}, ["y"]),
             "approximate")
    # malformed input forms: a message, never a crash
    t.refuse("refuse_Attention_weights_rank", model([node("Attention", ["x", "w1"], ["y"], num_heads=2)],
                                                   {"x": x}, ["y"], {"w1": rand(24)}), "rank 1")
    t.refuse("refuse_Attention_heads", model([node("Attention", ["x", "w"], ["y"], num_heads=5)],
                                            {"x": x}, ["y"], {"w": w}), "heads")
    t.refuse("refuse_SkipLayerNormalization_no_gamma", model([node("SkipLayerNormalization", ["x", "x"], ["y"])],
                                                            {"x": x}, ["y"]), "gamma")
    t.refuse("refuse_MultiHeadAttention_key_only", model([node("MultiHeadAttention", ["x", "x"], ["y"], num_heads=2)],
                                                        {"x": x}, ["y"]), "key and value")
    t.refuse("refuse_RotaryEmbedding_empty_cache",
             model([node("RotaryEmbedding", ["x", "p", "c", "c"], ["y"], num_heads=2)], {"x": x}, ["y"],
                   {"p": np.zeros((2, 4), np.int64), "c": np.zeros((4, 0), np.float32)}), "positive")
    t.refuse("refuse_FusedMatMul_trans_1d", model([node("FusedMatMul", ["v", "v"], ["y"], transA=1)],
                                                 {"v": rand(8)}, ["y"]), "rank-1")
    t.refuse("refuse_MultiHeadAttention_qk", model([node("MultiHeadAttention", ["x", "x", "x"], ["y", "", "", "qk"], num_heads=2)],
                                                   {"x": x}, ["y", "qk"]), "qk")


# ---- BERT through onnxruntime.transformers.optimizer ---------------------------


def build_bert(layers=2, hidden=128, heads=4, ffn=512, vocab=200, maxpos=128, seq=32, batch=2, types=2):
    """Hugging Face's BERT export, in primitive ops: embeddings with the position ids a
    slice of a [1, maxpos] constant, LayerNorm as ReduceMean/Sub/Pow/Sqrt/Div, the mask
    as (1 - mask) * -10000, GELU as Erf. types: rows of the segment table (the bench
    uses 4: examples/runner/icc_runner feeds integers in [0, 4), and a compiled Gather
    fails the run on an index out of range)."""
    r = np.random.default_rng(11)
    inits, nodes = [], []
    D = hidden // heads
    cnt = [0]

    def w(name, *shape, scale=0.05):
        inits.append(nh.from_array((r.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def c(name, v, dt=np.float32):
        inits.append(nh.from_array(np.array(v, dtype=dt), name))
        return name

    def op(o, ins, **kw):
        cnt[0] += 1
        out = "%s_%d" % (o.lower(), cnt[0])
        nodes.append(h.make_node(o, ins, [out], name=out, **kw))
        return out

    def ln(x, p):
        d = op("Sub", [x, op("ReduceMean", [x], axes=[-1])])
        v = op("ReduceMean", [op("Pow", [d, c(p + ".two", 2.0)])], axes=[-1])
        s = op("Sqrt", [op("Add", [v, c(p + ".eps", 1e-12)])])
        return op("Add", [op("Mul", [op("Div", [d, s]), w(p + ".g", hidden, scale=0.1)]), w(p + ".b", hidden)])

    def lin(x, p, fi, fo):
        return op("Add", [op("MatMul", [x, w(p + ".w", fi, fo)]), w(p + ".b", fo)])

    ids, seg, mask = "input_ids", "token_type_ids", "attention_mask"
    we = op("Gather", [w("word_emb", vocab, hidden), ids])
    un = op("Unsqueeze", [op("Gather", [op("Shape", [ids]), c("one_i", 1, np.int64)])], axes=[0])
    pid = op("Slice", [c("pos_ids", np.arange(maxpos)[None, :], np.int64), c("s0", [0], np.int64), un,
                       c("ax1", [1], np.int64), c("st1", [1], np.int64)])
    pe = op("Gather", [w("pos_emb", maxpos, hidden), pid])
    se = op("Gather", [w("seg_emb", types, hidden), seg])
    x = ln(op("Add", [op("Add", [we, se]), pe]), "emb")
    mf = op("Cast", [op("Unsqueeze", [op("Unsqueeze", [mask], axes=[1])], axes=[2])], to=P.FLOAT)
    mb = op("Mul", [op("Sub", [c("onef", 1.0), mf]), c("neg", -10000.0)])
    for L in range(layers):
        p = "l%d" % L

        def split(t_):
            return op("Transpose", [op("Reshape", [t_, c(p + ".hs%d" % cnt[0], [0, 0, heads, D], np.int64)])],
                      perm=[0, 2, 1, 3])
        q, k, v = (split(lin(x, p + n_, hidden, hidden)) for n_ in (".q", ".k", ".v"))
        s = op("Div", [op("MatMul", [q, op("Transpose", [k], perm=[0, 1, 3, 2])]), c(p + ".sd", float(np.sqrt(D)))])
        pr = op("Softmax", [op("Add", [s, mb])], axis=-1)
        ctx = op("Transpose", [op("MatMul", [pr, v])], perm=[0, 2, 1, 3])
        ctx = op("Reshape", [ctx, c(p + ".cs", [0, 0, hidden], np.int64)])
        a = ln(op("Add", [lin(ctx, p + ".o", hidden, hidden), x]), p + ".ln1")
        f = lin(a, p + ".f1", hidden, ffn)
        e = op("Erf", [op("Div", [f, c(p + ".s2", float(np.sqrt(2.0)))])])
        g = op("Mul", [op("Mul", [f, op("Add", [e, c(p + ".one", 1.0)])]), c(p + ".half", 0.5)])
        x = ln(op("Add", [lin(g, p + ".f2", ffn, hidden), a]), p + ".ln2")
    nodes.append(h.make_node("Identity", [x], ["output"], name="output"))
    g = h.make_graph(nodes, "bert", [h.make_tensor_value_info(n_, P.INT64, [batch, seq]) for n_ in (ids, seg, mask)],
                     [h.make_tensor_value_info("output", P.FLOAT, [batch, seq, hidden])], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 12)])
    m.ir_version = 7
    onnx.checker.check_model(m)
    return m


def bert_feeds(batch, seq, vocab=200):
    r = np.random.default_rng(5)
    mask = np.ones((batch, seq), np.int64)
    for b in range(1, batch):                       # right padding: what a 1-D mask_index can say
        mask[b, seq - 3 * b:] = 0
    return {"input_ids": r.integers(0, vocab, (batch, seq)).astype(np.int64),
            "token_type_ids": (np.arange(seq)[None, :] >= seq // 2).astype(np.int64).repeat(batch, 0),
            "attention_mask": mask}


def bert(t, bench, shape):
    from onnxruntime.transformers import optimizer
    layers, hidden, heads, ffn, seq, batch = shape
    base = os.path.join(t.tmp, "bert.onnx")
    onnx.save(build_bert(layers, hidden, heads, ffn, seq=seq, batch=batch, types=4 if bench else 2), base)
    opt = optimizer.optimize_model(base, model_type="bert", num_heads=heads, hidden_size=hidden, opt_level=0)
    optp = os.path.join(t.tmp, "bert_opt.onnx")
    opt.save_model_to_file(optp)
    mo = onnx.load(optp)
    ops = collections.Counter(("%s." % n_.domain if n_.domain else "") + n_.op_type for n_ in mo.graph.node)
    print("     optimizer wrote: " + ", ".join("%s x%d" % kv for kv in sorted(ops.items())))
    for need in ("com.microsoft.EmbedLayerNormalization", "com.microsoft.Attention", "com.microsoft.SkipLayerNormalization"):
        if need not in ops:
            print("FAIL bert: the optimizer wrote no %s" % need)
            t.failed += 1
    feeds = bert_feeds(batch, seq)
    t.check("bert_%dlayer_unoptimized" % layers, onnx.load(base), feeds)
    # optimized inputs are the same names (Cast to int32 inside the graph)
    t.check("bert_%dlayer_optimized" % layers, mo, feeds)
    if bench:
        bench_bert(t, base, optp, feeds)
        return
    # the optimizer's other forms: without EmbedLayerNormalization (a LayerNormalization of
    # opset 12, ONNX Runtime's registration, and mask_index from ReduceSum), and with the
    # raw [B, S] mask given to Attention
    from onnxruntime.transformers.fusion_options import FusionOptions
    for tag in ("no_embed_layernorm", "raw_mask"):
        fo = FusionOptions("bert")
        if tag == "raw_mask":
            fo.use_raw_attention_mask(True)
        else:
            fo.enable_embed_layer_norm = False
        o = optimizer.optimize_model(base, model_type="bert", num_heads=heads, hidden_size=hidden, opt_level=0,
                                     optimization_options=fo)
        p_ = os.path.join(t.tmp, "bert_%s.onnx" % tag)
        o.save_model_to_file(p_)
        t.check("bert_%dlayer_optimized_%s" % (layers, tag), onnx.load(p_), feeds)


def bench_bert(t, base, optp, feeds, runs=10, rounds=4):
    """Latency (min, and p50 of each round), one thread: icc's compiled models (examples/runner/icc_runner, fed its
    own pattern: integers in [0, 4)) and ONNX Runtime (its default graph optimizations),
    alternating, rounds times."""
    import re
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    runner = os.path.join(t.tmp, "icc_runner")
    build = os.path.dirname(t.icc)
    subprocess.run(["cc", "-O2", "-I" + os.path.join(root, "include"), os.path.join(root, "examples/runner/icc_runner.c"),
                    os.path.join(build, "libiccrt.a"), "-lpthread", "-ldl", "-o", runner], check=True)
    so = {}
    for nm, path in (("unoptimized", base), ("optimized", optp)):
        so[nm] = os.path.join(t.tmp, "bench_%s.so" % nm)
        r = t.compile(path, so[nm])
        if r.returncode:
            print("FAIL bench compile %s: %s" % (nm, r.stderr.strip()))
            t.failed += 1
            return
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    sess = {nm: ort.InferenceSession(p, opts, providers=["CPUExecutionProvider"])
            for nm, p in (("unoptimized", base), ("optimized", optp))}
    env = dict(os.environ, ICC_NUM_THREADS="1")
    res = collections.defaultdict(list)
    for _ in range(rounds):
        for nm in ("unoptimized", "optimized"):
            out = subprocess.run([runner, so[nm], "--runs=%d" % runs, "--threads=1"], capture_output=True, text=True,
                                 env=env).stdout
            m = re.search(r"p50 ([0-9.]+) ms, p90 [0-9.]+ ms, min ([0-9.]+) ms", out)
            res["icc, " + nm].append((float(m.group(1)), float(m.group(2))) if m else (float("nan"),) * 2)
            s_ = sess[nm]
            s_.run(None, feeds)
            ts = []
            for _ in range(runs):
                t0 = time.perf_counter()
                s_.run(None, feeds)
                ts.append((time.perf_counter() - t0) * 1e3)
            res["ONNX Runtime, " + nm].append((float(np.median(ts)), min(ts)))
    for k, v in res.items():
        print("     %-28s min %7.2f ms   p50 per round %s ms" % (k, min(x[1] for x in v), " / ".join("%.1f" % x[0] for x in v)))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    bench = "--bench" in sys.argv
    t = Runner(os.path.abspath(args[0]))
    filters = args[1:]
    groups = [("activations", activations), ("matmul", matmuls), ("conv", convs), ("nocpu", no_cpu_kernel),
              ("norm", norms),
              ("embed", embed), ("attention", attention), ("mha", mha), ("rotary", rotary), ("onnx_rotary", onnx_rotary),
              ("refusals", refusals)]
    for name, fn in groups:
        if not filters or any(f in name for f in filters):
            fn(t)
    if not filters or any(f in "bert" for f in filters):
        bert(t, False, (2, 128, 4, 512, 32, 2))
    if bench:   # two BERT-base layers, sequence 128
        bert(t, True, (2, 768, 12, 3072, 128, 1))
    print("all %d contrib-op cases match ONNX Runtime (rtol %g, atol %g)" % (t.n, RTOL, ATOL) if not t.failed
          else "%d of %d case(s) failed" % (t.failed, t.n))
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main())
