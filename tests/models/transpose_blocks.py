#!/usr/bin/env python3
"""Transposes lowered as blocks of transpose_f32 (codegen/lower/movement.c,
transpose_blocks), against ONNX Runtime.

A Transpose of static f32 whose permutation, with the dims that stay
adjacent merged, swaps the last two of [O, A, B] runs as n x n register
transposes (n the f32 lanes: 16 on AVX-512, 8 on x86-64-v3), the last block
of A and of B overlapping the one before it. Each case is compiled for the
host and for -march=x86-64-v3, run, and compared with ONNX Runtime exactly
(a transpose moves values): the blocked layout's reorders, plain 2-D
transposes, sizes that the lanes do not divide, a batch of several
matrices, the smallest sizes that take the form (A or B equal to the lanes)
and ones that do not (below them, the element loop), and a 3-dim swap that
is not this form. With symbolic dims (transpose_blocks_sym): the same
reorders and a matrix over the run's sizes, the blocks wherever A and B
reach the lanes at run time and the element loop where one does not (a
plane of 12 pixels), each size compared exactly.

    python3 tests/models/transpose_blocks.py build/icc
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as P, helper as h

ort.set_default_logger_severity(3)
ICC = sys.argv[1] if len(sys.argv) > 1 else "build/icc"
TMP = tempfile.mkdtemp(prefix="icc_tblocks_")
CASES = [
    # (name, input shape, perm, the merged [A, B] swapped, or None when the
    # permutation is not that form); the block form needs A and B >= lanes
    ("from_blocked", [1, 3, 10, 12, 16], [0, 1, 4, 2, 3], (120, 16)),
    ("to_blocked", [1, 2, 16, 9, 7], [0, 1, 3, 4, 2], (16, 63)),
    ("matrix", [37, 53], [1, 0], (37, 53)),
    ("matrix_exact", [32, 48], [1, 0], (32, 48)),
    ("batched", [3, 20, 17], [0, 2, 1], (20, 17)),
    ("lanes_edge", [16, 16], [1, 0], (16, 16)),
    ("between", [12, 40], [1, 0], (12, 40)),
    ("too_small", [5, 40], [1, 0], (5, 40)),
    ("rotate3", [4, 18, 20, 3], [0, 3, 1, 2], (360, 3)),
    ("not_swap", [17, 19, 4], [1, 0, 2], None),
]
with open("/proc/cpuinfo") as f:
    HOST_LANES = 16 if " avx512f" in f.read() else 8
fails = 0


def report(ok, what):
    global fails
    print(("ok   " if ok else "FAIL ") + what)
    fails += not ok


def save_transpose(name, dims, perm, out_dims):
    """One Transpose x -> y as TMP/name.onnx; its path."""
    g = h.make_graph([h.make_node("Transpose", ["x"], ["y"], perm=perm)], name,
                     [h.make_tensor_value_info("x", P.FLOAT, dims)], [h.make_tensor_value_info("y", P.FLOAT, out_dims)])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    path = f"{TMP}/{name}.onnx"
    onnx.save(m, path)
    return path


for name, shape, perm, ab in CASES:
    path = save_transpose(name, shape, perm, [shape[p] for p in perm])
    x = np.random.default_rng(len(name)).standard_normal(shape).astype(np.float32)
    np.save(f"{TMP}/{name}_x.npy", x)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for march in (None, "x86-64-v3"):
        tag = march or "host"
        extra = [f"-march={march}"] if march else []
        kern = subprocess.run([ICC, path, "-O3", "--emit=kernels"] + extra, capture_output=True, text=True).stdout
        used = "transpose_f32" in kern
        lanes = 8 if march else HOST_LANES
        so = f"{TMP}/{name}_{tag}.so"
        r = subprocess.run([ICC, path, "-O3", "-o", so] + extra, capture_output=True, text=True)
        if r.returncode:
            report(False, f"{name} {tag}: compile failed: {r.stderr.strip()}")
            continue
        rr = subprocess.run([ICC, "run", so, "--input", f"x={TMP}/{name}_x.npy", "-o", f"{TMP}/{name}_{tag}_out"],
                            capture_output=True, text=True)
        got = np.load(f"{TMP}/{name}_{tag}_out/y.npy") if rr.returncode == 0 else None
        ok = got is not None and got.shape == want.shape and np.array_equal(got, want)
        want_used = ab is not None and min(ab) >= lanes
        report(ok and used == want_used,
               f"{name} {tag} {shape} perm {perm}: block transpose {'yes' if used else 'no'} "
               f"(want {'yes' if want_used else 'no'}), exact {ok} {rr.stderr.strip()}")

# (name, input dims (names symbolic), perm, sizes to run)
SYM_CASES = [
    ("sym_from_blocked", ["N", 3, "H", "W", 16], [0, 1, 4, 2, 3],
     [dict(N=1, H=10, W=12), dict(N=2, H=3, W=4), dict(N=1, H=1, W=16), dict(N=3, H=7, W=9)]),
    ("sym_to_blocked", ["N", 2, 16, "H", "W"], [0, 1, 3, 4, 2],
     [dict(N=1, H=9, W=7), dict(N=2, H=3, W=4), dict(N=1, H=17, W=1)]),
    ("sym_matrix", ["R", "C"], [1, 0], [dict(R=37, C=53), dict(R=5, C=40), dict(R=16, C=16), dict(R=1, C=1)]),
]
for name, dims, perm, sizes in SYM_CASES:
    path = save_transpose(name, dims, perm, None)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for march in (None, "x86-64-v3"):
        tag = march or "host"
        extra = [f"-march={march}"] if march else []
        kern = subprocess.run([ICC, path, "-O3", "--emit=kernels"] + extra, capture_output=True, text=True).stdout
        lanes = 8 if march else HOST_LANES
        consts = [d for d in dims if isinstance(d, int)]
        # the block form when no constant side is under the lanes (the
        # lanes dim of a reorder is the whole of its side)
        want_used = name == "sym_matrix" or consts[-1] >= lanes
        so = f"{TMP}/{name}_{tag}.so"
        r = subprocess.run([ICC, path, "-O3", "-o", so] + extra, capture_output=True, text=True)
        if r.returncode:
            report(False, f"{name} {tag}: compile failed: {r.stderr.strip()}")
            continue
        report(("transpose_f32" in kern) == want_used,
               f"{name} {tag}: block transpose {'yes' if 'transpose_f32' in kern else 'no'} (want "
               f"{'yes' if want_used else 'no'})")
        for sz in sizes:
            shape = [sz[d] if isinstance(d, str) else d for d in dims]
            x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
            xf = f"{TMP}/{name}_{tag}_x.npy"
            np.save(xf, x)
            want = sess.run(None, {"x": x})[0]
            out = f"{TMP}/{name}_{tag}_{'x'.join(map(str, shape))}"
            rr = subprocess.run([ICC, "run", so, "--input", f"x={xf}", "-o", out], capture_output=True, text=True)
            got = np.load(f"{out}/y.npy") if rr.returncode == 0 else None
            ok = got is not None and got.shape == want.shape and np.array_equal(got, want)
            report(ok, f"{name} {tag} at {shape}: exact {ok} {rr.stderr.strip()}")

print(f"{fails} failed")
sys.exit(1 if fails else 0)
