#!/usr/bin/env python3
"""MatMul and Gemm over many shapes, compiled, against numpy and ONNX Runtime.

The contraction schedules branch on the shape: skinny M (1 to 16 rows get
their own register tile and stream B), the 6-row tile with its clamped last
block (M = 17, 100), N narrower than a vector or not a multiple of one, odd
K, several reduction blocks (K > 128), transposed operands, alpha/beta, C
broadcast from [N], [M, 1] and [1, 1], batch broadcasting (a 2-D B under a
batched A: the items' rows flattened into one matrix), rank-1 operands,
and B both a graph input and a constant weight; skinny M split between
column chunks for threads; GEMV-like products (M < 8) over a constant B
packed in wide panels, 8 to 16 rows over packed panels, and B an input
packed once at run time. Each case is one node of one model (its own
inputs and output), compiled at -O2 and -O3 and run through `icc run` at 1
and 2 threads (ICC_NUM_THREADS); every output must match numpy in float64 and ONNX Runtime
(rtol 1e-4, atol 1e-4 x sqrt(K)).

    python3 tests/models/gemm_shapes.py build/icc
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


def cases():
    """(name, op, A shape, B shape, C shape or None, attrs, B constant)."""
    out = []
    for m in (1, 2, 3, 5, 7, 16, 17, 100):
        for k, n in ((37, 5), (129, 70), (300, 33), (8, 256)):
            for const in (False, True):
                out.append(("mm_%dx%dx%d_%s" % (m, k, n, "w" if const else "in"), "MatMul", [m, k], [k, n], None, {}, const))
    # skinny M from 8 rows split the columns between chunks (2, 4, 8 of
    # them; panels with tails), run at 1 and 2 threads; a reduction of 3+
    # blocks on the 6-row tile (first, middle and last block loops)
    out += [
        ("mm_split_8x300x512", "MatMul", [8, 300], [300, 512], None, {}, False),
        ("mm_split_12x300x1100", "MatMul", [12, 300], [300, 1100], None, {}, True),
        ("mm_split_16x129x2048", "MatMul", [16, 129], [129, 2048], None, {}, True),
        ("mm_split_batch", "MatMul", [3, 16, 100], [3, 100, 600], None, {}, False),
        ("gemm_split_16x300x1030", "Gemm", [16, 300], [300, 1030], [1030], dict(alpha=0.5, beta=2.0), True),
        ("mm_nosplit_7x300x1024", "MatMul", [7, 300], [300, 1024], None, {}, True),
        ("mm_17x600x40", "MatMul", [17, 600], [600, 40], None, {}, False),
        # fewer than 8 rows split only when B is larger than the last-level
        # cache (32 MB at most): 34.8 MB, 3000 columns in 2 chunks with tails
        ("mm_dram_3x2900x3000", "MatMul", [3, 2900], [2900, 3000], None, {}, False),
        # B an input that the tile copies: one row chunk of 4 column chunks
        # of 3 panels (B copied once), 3 reduction blocks; chunks of one
        # panel whose hints run ahead to the next reduction block
        ("mm_bcopy_128x700x768", "MatMul", [128, 700], [700, 768], None, {}, False),
        ("mm_onepanel_40x700x768", "MatMul", [40, 700], [700, 768], None, {}, False),
    ]
    for m in (1, 3, 16, 17):
        out.append(("mm_n3_%d" % m, "MatMul", [m, 41], [41, 3], None, {}, True))
        out.append(("mm_n1_%d" % m, "MatMul", [m, 19], [19, 1], None, {}, False))
    # batches: both operands batched, B broadcast, A broadcast, rank-1 operands
    out += [
        ("mm_batch", "MatMul", [2, 3, 5, 33], [2, 3, 33, 20], None, {}, False),
        ("mm_bcast_b", "MatMul", [4, 7, 70], [70, 45], None, {}, True),
        # a 2-D B shared by the batch: the items' rows are one matrix (a
        # time-major classifier's 32 one-row items; rank 4)
        ("mm_flat_rows", "MatMul", [32, 1, 256], [256, 37], None, {}, False),
        ("mm_flat_rows_w", "MatMul", [32, 1, 256], [256, 37], None, {}, True),
        ("mm_flat_rank4", "MatMul", [2, 3, 5, 64], [64, 100], None, {}, True),
        ("mm_bcast_b1", "MatMul", [4, 16, 70], [1, 70, 45], None, {}, False),
        ("mm_bcast_a", "MatMul", [1, 3, 130], [5, 130, 24], None, {}, False),
        ("mm_vec_a", "MatMul", [300], [300, 40], None, {}, True),
        ("mm_vec_b", "MatMul", [9, 30], [30], None, {}, False),
    ]
    for m in (1, 2, 5, 16, 17, 100):
        for ta, tb in ((0, 0), (0, 1), (1, 0), (1, 1)):
            for const in (False, True):
                a = [70, m] if ta else [m, 70]
                b = [37, 70] if tb else [70, 37]
                out.append(("gemm_%d_t%d%d_%s" % (m, ta, tb, "w" if const else "in"), "Gemm", a, b, [37],
                            dict(transA=ta, transB=tb), const))
    for m in (1, 7, 100):
        out += [
            ("gemm_ab_%d" % m, "Gemm", [m, 150], [150, 29], [m, 29], dict(alpha=0.5, beta=-2.0), True),
            ("gemm_cm1_%d" % m, "Gemm", [m, 150], [150, 29], [m, 1], dict(beta=0.25), False),
            ("gemm_c11_%d" % m, "Gemm", [m, 150], [29, 150], [1, 1], dict(alpha=1.5, transB=1), True),
            ("gemm_noc_%d" % m, "Gemm", [m, 150], [150, 29], None, dict(alpha=2.0), True),
            ("gemm_beta0_%d" % m, "Gemm", [m, 150], [150, 29], [29], dict(beta=0.0), False),
        ]
    # constant B packed at compile time (pack-b: M > 16, N wider than a
    # panel): odd N, N not a multiple of the panel width, K not a multiple
    # of the reduction block (and of one block only), batched and
    # broadcast constant B, transB and transA Gemm
    out += [
        ("pk_odd_n", "MatMul", [40, 300], [300, 1001], None, {}, True),
        ("pk_n17", "MatMul", [23, 77], [77, 17], None, {}, True),
        ("pk_k_blocks", "MatMul", [50, 700], [700, 48], None, {}, True),
        ("pk_batched", "MatMul", [3, 40, 130], [3, 130, 50], None, {}, True),
        ("pk_bcast1", "MatMul", [2, 3, 20, 70], [3, 70, 45], None, {}, True),
        ("pk_bcast_b1", "MatMul", [4, 20, 70], [1, 70, 45], None, {}, True),
        ("pk_rank3_a", "MatMul", [2, 30, 64], [64, 100], None, {}, True),
        ("pk_gemm_tb", "Gemm", [100, 300], [53, 300], [53], dict(transB=1, alpha=0.5), True),
        ("pk_gemm_tab", "Gemm", [300, 33], [53, 300], [33, 53], dict(transA=1, transB=1, beta=0.5), True),
        ("pk_gemm_ta", "Gemm", [129, 18], [129, 40], None, dict(transA=1), True),
    ]
    # GEMV-like products (M < 8) with a constant B, packed in wide panels
    # that the kernel runs whole (a tail panel, transB weights, a batch of
    # matrices), and 8 to 16 rows packed in the tile's panels: each of
    # these must come out packed (PACKED below)
    out += [
        ("gv_1x300x1000", "MatMul", [1, 300], [300, 1000], None, {}, True),
        ("gv_3x129x200", "MatMul", [3, 129], [129, 200], None, {}, True),
        ("gv_gemm_tb_1", "Gemm", [1, 300], [500, 300], [500], dict(transB=1, alpha=0.5, beta=2.0), True),
        ("gv_gemm_tb_6", "Gemm", [6, 64], [130, 64], None, dict(transB=1), True),
        ("gv_batched_2", "MatMul", [3, 2, 70], [3, 70, 150], None, {}, True),
        ("gv_m8_200x300", "MatMul", [8, 200], [200, 300], None, {}, True),
        ("gv_m12_gemm_tb", "Gemm", [12, 100], [70, 100], [70], dict(transB=1), True),
    ]
    # B a graph input that several row chunks would each copy: packed once
    # at run time by a Transpose before the product (pack-b), rank 2,
    # batched, and broadcast over A's batch; each must come out packed (2 x 100
    # rows batched took 2 x 2 chunks, which copy B twice, and is not packed)
    out += [
        ("rp_300x200x256", "MatMul", [300, 200], [200, 256], None, {}, False),
        ("rp_batched", "MatMul", [2, 300, 64], [2, 64, 128], None, {}, False),
        ("rp_bcast", "MatMul", [2, 300, 70], [70, 192], None, {}, False),
    ]
    return out


# the cases whose B the pack-b pass must pack (packed_b in the IR)
PACKED = ("gv_", "rp_")


def reference(op, a, b, c, attrs):
    a, b = a.astype(np.float64), b.astype(np.float64)
    if op == "MatMul":
        return np.matmul(a, b)
    a = a.T if attrs.get("transA") else a
    b = b.T if attrs.get("transB") else b
    y = attrs.get("alpha", 1.0) * (a @ b)
    if c is not None:
        y = y + attrs.get("beta", 1.0) * c.astype(np.float64)
    return y


def build(path, cs, rng):
    nodes, ins, outs, inits, feeds = [], [], [], [], {}
    for name, op, sa, sb, sc, attrs, const in cs:
        a = rng.standard_normal(sa).astype(np.float32)
        b = rng.standard_normal(sb).astype(np.float32)
        names = [name + "_a", name + "_b"]
        ins.append(h.make_tensor_value_info(names[0], P.FLOAT, sa))
        feeds[names[0]] = a
        if const:
            inits.append(nh.from_array(b, names[1]))
        else:
            ins.append(h.make_tensor_value_info(names[1], P.FLOAT, sb))
            feeds[names[1]] = b
        c = None
        if sc is not None:
            c = rng.standard_normal(sc).astype(np.float32)
            names.append(name + "_c")
            inits.append(nh.from_array(c, names[2]))
        nodes.append(h.make_node(op, names, [name], name=name, **attrs))
        outs.append(h.make_tensor_value_info(name, P.FLOAT, None))
        yield name, sa[-2] if attrs.get("transA") else sa[-1], reference(op, a, b, c, attrs)
    g = h.make_graph(nodes, "gemm_shapes", ins, outs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    build.feeds = feeds


def main():
    icc = os.path.abspath(sys.argv[1])
    t = tempfile.mkdtemp()
    path = os.path.join(t, "g.onnx")
    cs = cases()
    refs = list(build(path, cs, np.random.default_rng(0)))
    feeds = build.feeds
    args = []
    for n, v in feeds.items():
        np.save(os.path.join(t, n + ".npy"), v)
        args += ["--input", "%s=%s" % (n, os.path.join(t, n + ".npy"))]
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    want_ort = dict(zip([o.name for o in s.get_outputs()], s.run(None, feeds)))
    failed = 0
    r = subprocess.run([icc, path, "-O2", "--emit=ir"], capture_output=True, text=True)
    packed = {ln.split(" = ")[0].strip().lstrip("%") for ln in r.stdout.splitlines() if "packed_b = " in ln}
    for name, _, _ in refs:
        if name.startswith(PACKED) and name not in packed:
            print("FAIL %s: B not packed (no packed_b in --emit=ir -O2)" % name)
            failed += 1
    # each level at 1 and 2 threads (ICC_NUM_THREADS): chunks that share
    # a kernel's columns run on both
    for level, threads in (("-O2", "1"), ("-O2", "2"), ("-O3", "1"), ("-O3", "2")):
        so = os.path.join(t, "g%s.so" % level)
        if not os.path.exists(so):
            r = subprocess.run([icc, path, level, "-o", so], capture_output=True, text=True)
            if r.returncode:
                print("FAIL compile %s: %s" % (level, r.stderr.strip()))
                failed += 1
                continue
        od = os.path.join(t, "out%s_t%s" % (level, threads))
        env = dict(os.environ, ICC_NUM_THREADS=threads)
        r = subprocess.run([icc, "run", so, "-o", od] + args, capture_output=True, text=True, env=env)
        level = "%s (%s threads)" % (level, threads)
        if r.returncode:
            print("FAIL run %s: %s" % (level, r.stderr.strip()))
            failed += 1
            continue
        bad = 0
        for name, k, ref in refs:
            got = np.load(os.path.join(od, name + ".npy"))
            atol = 1e-4 * np.sqrt(k)
            ok = (got.shape == ref.shape and np.allclose(got, ref, rtol=1e-4, atol=atol) and
                  np.allclose(got, want_ort[name], rtol=1e-4, atol=atol))
            if not ok:
                err = np.abs(got - ref).max() if got.shape == ref.shape else float("nan")
                print("FAIL %s %s: shape %s (want %s), max abs error vs numpy %.3g" %
                      (level, name, got.shape, ref.shape, err))
                bad += 1
        print("%s %s: %d cases, %d failed" % ("ok  " if not bad else "FAIL", level, len(refs), bad))
        failed += bad
    print("gemm shapes: %s" % ("all passed" if not failed else "%d failed" % failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
