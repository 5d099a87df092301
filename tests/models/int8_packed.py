#!/usr/bin/env python3
"""MatMulInteger on a constant i8 B packed in quads of k (the pack-b pass,
packed_k = 4) for the VNNI quad kernel (codegen/lower/qgemm.c).

On a 512-bit VNNI target the pass stores B [K, N] (K a multiple of 4, N of the
64-column panel) as panels [K/4, 64, 4], which the kernel reads with one
vpdpbusd per 16 lanes (dpbusd_quads) and whose column sums it takes with the
same instruction. For each model here (u8 and i8 A, scalar and per-row A zero
points, scalar and per-column B zero points, M of 1, a tail row block and a
batch dim, K and N of BERT's shapes):
  - the compiled output equals the interpreter's exactly (i32);
  - on a host whose /proc/cpuinfo has avx512_vnni the kernels use dpbusd_quads
    (and the IR shows packed_k = 4); for -march=x86-64-v3 (no VNNI, runs on
    every host CI uses) they do not, and the output is exact too;
  - on a host that also has amx_int8, products of 32 rows or more (batch dims
    and M together) and 64 <= K <= 5120 run on AMX tiles (amx_dpbusd), and no
    others; with K a multiple of 64 each panel's epilogue runs inside the
    next panel's k loop (u8_scalar_zps: a tail block of clamped rows;
    amx_panels: several panels a row block; amx_batch_rows: rows over a
    batch dim);
  - the IR packed for -march=znver4, compiled for x86-64-v3 (the packed B read
    without VNNI), is exact too;
  - a u8 B becomes i8 with its zero point (both less 128), and a B whose N is
    no multiple of 64 two products, the whole panels packed and the rest read
    in place, concatenated: exact, and the quad kernel used.

    python3 tests/models/int8_packed.py build/icc
Exits 1 if any check fails.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from icc_run import compile_and_run, cpu_has, interp_want, run, run_cases

RNG = np.random.default_rng(11)   # one stream over the cases, in order

ORACLE = "shape-infer,simplify,fold,dce"
DT = {"u8": (np.uint8, TensorProto.UINT8), "i8": (np.int8, TensorProto.INT8)}


def model(path, rng, m, k, n, adt, za, zb, batch=None, bdt="i8"):
    """y = MatMulInteger(a, B, a_zero_point, b_zero_point), B a constant i8 (or u8)."""
    at, aproto = DT[adt]
    bt = DT[bdt][0]
    xs = [m, k] if batch is None else list(batch) + [m, k]
    lo, hi = (0, 256) if adt == "u8" else (-128, 128)
    blo, bhi = (0, 256) if bdt == "u8" else (-128, 128)
    inits = [numpy_helper.from_array(rng.integers(blo, bhi, (k, n)).astype(bt), "B")]
    ins = ["a", "B"]
    if za is not None:
        inits.append(numpy_helper.from_array(np.array(rng.integers(lo, hi, za)).astype(at), "za"))
        ins.append("za")
    if zb is not None:
        ins += [] if za is not None else [""]
        inits.append(numpy_helper.from_array(np.array(rng.integers(blo, bhi, zb)).astype(bt), "zb"))
        ins.append("zb")
    g = helper.make_graph([helper.make_node("MatMulInteger", ins, ["y"])], "g",
                          [helper.make_tensor_value_info("a", aproto, xs)],
                          [helper.make_tensor_value_info("y", TensorProto.INT32, xs[:-1] + [n])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return rng.integers(lo, hi, xs).astype(at)


CASES = [
    ("u8_scalar_zps", dict(m=37, k=768, n=768, adt="u8", za=(), zb=())),
    ("u8_row_zp_col_zb", dict(m=20, k=64, n=128, adt="u8", za=(20,), zb=(128,))),
    ("i8_a_no_zps", dict(m=13, k=132, n=64, adt="i8", za=None, zb=None)),
    ("one_row", dict(m=1, k=768, n=3072, adt="u8", za=(), zb=None)),
    ("batch_dim", dict(m=9, k=256, n=192, adt="u8", za=(), zb=(), batch=(3,))),
    # K > 8192: packed all the same, but past the quad kernel's scratch: the scalar loop reads the packing
    ("k_past_quad_kernel", dict(m=2, k=8196, n=64, adt="u8", za=(), zb=())),
    # AMX-INT8's edges: K mod 64 (quads after the tiles'), rows past the last block of 32
    # (clamped), A's rows over batch dims, zero points per row and per column
    ("amx_k_tail_i8", dict(m=70, k=196, n=128, adt="i8", za=(70,), zb=(128,))),
    ("amx_batch_rows", dict(m=12, k=256, n=64, adt="u8", za=(), zb=(), batch=(4,))),
    # several AMX panels a chunk's row block (one a~ packing read by each), and with a K tail
    ("amx_panels", dict(m=64, k=320, n=512, adt="u8", za=(), zb=(512,))),
    ("amx_panels_k_tail", dict(m=96, k=200, n=512, adt="i8", za=(96,), zb=(512,))),
    # K a multiple of 1024: a~'s rows a line longer than K (off the L1 sets of 1 KiB apart)
    ("amx_k_1024", dict(m=40, k=1024, n=128, adt="i8", za=(40,), zb=())),
    # B the quads cannot take as it is (pack-b's quads_split): u8, made i8 with its zero
    # point (b - 128, zb - 128); N no multiple of 64, split into whole panels (packed) and
    # the rest of at least 16 columns (read in place), their results concatenated
    ("u8_b_whole_panels", dict(m=32, k=256, n=128, adt="u8", za=(), zb=(), bdt="u8")),
    ("u8_b_tail_columns", dict(m=32, k=1024, n=210, adt="u8", za=(), zb=(), bdt="u8")),
    ("u8_b_no_zero_points", dict(m=7, k=128, n=100, adt="u8", za=None, zb=None, bdt="u8")),
    ("i8_b_col_zb_short_tail", dict(m=17, k=64, n=200, adt="i8", za=(17,), zb=(200,))),
]


def check(icc, tmp, name, kw):
    """One case (icc_run.run_cases): the checks that failed."""
    vnni = cpu_has("avx512_vnni")
    failed = 0
    path = os.path.join(tmp, name + ".onnx")
    a = model(path, RNG, **kw)
    ap, want = interp_want(icc, tmp, name, path, "a", a, ORACLE)
    quad = kw["k"] <= 8192
    rows = kw["m"] * int(np.prod(kw.get("batch") or (1,)))
    tiles = vnni and cpu_has("amx_int8") and rows >= 32 and 64 <= kw["k"] <= 5120
    for march, expect in [(None, vnni), ("x86-64-v3", False)]:
        flags = ["-march=" + march] if march else []
        kern = run([icc, path, "--emit=kernels"] + flags)
        ir = run([icc, path, "--emit=ir", "-O2"] + flags)
        got = compile_and_run(icc, path, flags, "a", ap, "y", tmp, name + (march or "host"))
        amx = "amx_dpbusd" in kern
        has = "dpbusd_quads" in kern or amx
        ok = got.dtype == np.int32 and np.array_equal(got, want) and has == (expect and quad) and \
            ("packed_k = 4" in ir) == expect and amx == (tiles and not march)
        # a u8 B rewritten for the quads leaves no copy of itself in the weights
        ok = ok and not (expect and kw.get("bdt") == "u8" and "%B = const" in ir)
        print("%s %-18s %-9s %s: packed quad kernel %s, AMX %s; %s" % (
            "ok  " if ok else "FAIL", name, march or "host", "x".join(str(v) for v in a.shape),
            "yes" if has else "no", "yes" if amx else "no", "exact" if np.array_equal(got, want) else
            "max |diff| %d" % int(np.abs(got.astype(np.int64) - want).max())), flush=True)
        failed += not ok
    # B packed for a 512-bit VNNI target (-march=znver4, IR only), then compiled for
    # x86-64-v3: the quad kernel on 8 lanes without VNNI (dpbusd_quads' scalar form)
    # or, where the panels do not fit it, the scalar loop, reads the same packing
    packed = os.path.join(tmp, name + "_packed.icc")
    run([icc, path, "--emit=ir", "-O2", "-march=znver4", "-o", packed])
    got = compile_and_run(icc, packed, ["-march=x86-64-v3"], "a", ap, "y", tmp, name + "_packed")
    with open(packed) as f:
        ok = "packed_k = 4" in f.read() and np.array_equal(got, want)
    print("%s %-18s %-9s packed for znver4, compiled for x86-64-v3: %s" % (
        "ok  " if ok else "FAIL", name, "", "exact" if np.array_equal(got, want) else "wrong"), flush=True)
    failed += not ok
    return failed


def main():
    return run_cases(__doc__, CASES, check, "avx512_vnni", "the packed quad kernel")


if __name__ == "__main__":
    sys.exit(main())
