#!/usr/bin/env python3
"""bf16 contractions of two bf16 operands (--precision=bf16, docs/precision.md).

--precision=bf16 rounds a MatMul's or Gemm's activation to bf16 as well as its
weight; on a target with AVX512-BF16 the pack-b pass stores the weight in pairs
of k and the contraction runs on vdpbf16ps (matmul.c, the pair kernel). For
each model here (single MatMul/Gemm nodes with a fused epilogue, shapes with a
tail panel, a tail row block, batch dims, Gemm's transB, alpha/beta and C):
  - the compiled model matches the interpreter running the same bf16 graph
    for the same -march (both operands rounded the same way where that
    target multiplies bf16 pairs, the activation left f32 where it widens to
    FMAs, so only the order of the f32 sums differs): max error / max
    |output| <= 1e-5;
  - on a host whose /proc/cpuinfo has avx512_bf16 (and where vdpbf16ps runs at
    least 0.75 of the FMA's multiply-adds a second, as icc measured it, or
    there is AMX: icc_run.bf16_pairs_host) the compiled kernels are the pair
    kernel (dpbf16_pairs in --emit=kernels); elsewhere they are not (the f32
    kernels widen both operands) and the results still match; on a host with
    avx512_bf16 whose vdpbf16ps is slower, -march=cooperlake (nothing
    measured) compiles the pair kernel, which must match as well;
  - on a host that also has amx_bf16, products of 32 rows or more (batch dims
    and M together), K >= 32 and a whole panel of 64 columns (or K and N
    multiples of 32: the weight then packed in the tiles' order, packed_t)
    run their blocks of 32 x 32 on AMX tiles (amx_dpbf16ps in --emit=kernels;
    the pair kernel still takes K mod 32, the rows past the last block and the
    tail panel, so where there are none it is absent), and no other product
    does;
  - the activation is rounded to bf16 (%x.bf16 in --emit=kernels) exactly
    where the pair kernel is expected;
  - compiled for -march=x86-64-v3 (AVX2, no vdpbf16ps: runs on every host CI
    uses) the kernels are never the pair kernel, and the results match too;
  - the IR packed in pairs for -march=znver4, compiled for x86-64-v3 (the f32
    kernels reading packed_k = 2), matches too;
  - the IR packed for -march=sapphirerapids (AMX: packed_t = 16 exactly where
    rows >= 32 and K and N are multiples of 32), compiled for x86-64-v3 (the
    f32 kernels reading the tile order), and that IR run by the interpreter
    (which unpacks it), match too.

    python3 tests/models/bf16_pairs.py build/icc
Exits 1 if any check fails.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from icc_run import bf16_pairs_host, compile_and_run, cpu_has, interp_per_march, interp_want, run, run_cases

RNG = np.random.default_rng(7)   # one stream over the cases, in order

ORACLE = "shape-infer,simplify,fold,fold-bn,recognize,simplify,cse,dce,precision"
REL = 1e-5


def model(path, rng, m, k, n, batch=None, gemm=None, then=None):
    """x[batch.., m, k] times a constant W, then + bias and Relu (MatMul), or a
    Gemm with the attributes in gemm (dict), then Relu; then = n2: a second
    MatMul by a [n, n2] weight reads the Relu (whose kernel then writes the
    bf16 activation itself where the pair kernel runs)."""
    xs = [m, k] if batch is None else list(batch) + [m, k]
    ys = xs[:-1] + [n]
    inits, nodes = [], []
    if gemm is None:
        inits.append(numpy_helper.from_array((rng.standard_normal((k, n)) * 0.1).astype(np.float32), "W"))
        inits.append(numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "b"))
        nodes.append(helper.make_node("MatMul", ["x", "W"], ["mm"]))
        nodes.append(helper.make_node("Add", ["mm", "b"], ["pre"]))
    else:
        tb = gemm.get("transB", 0)
        w = (rng.standard_normal((n, k) if tb else (k, n)) * 0.1).astype(np.float32)
        inits.append(numpy_helper.from_array(w, "W"))
        inits.append(numpy_helper.from_array(rng.standard_normal((1, n)).astype(np.float32), "C"))
        nodes.append(helper.make_node("Gemm", ["x", "W", "C"], ["pre"], **gemm))
    nodes.append(helper.make_node("Relu", ["pre"], ["r" if then else "y"]))
    if then:
        inits.append(numpy_helper.from_array((rng.standard_normal((n, then)) * 0.1).astype(np.float32), "W2"))
        nodes.append(helper.make_node("MatMul", ["r", "W2"], ["y"]))
        ys = ys[:-1] + [then]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, xs)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ys)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return rng.standard_normal(xs).astype(np.float32)


CASES = [
    ("tail_panel_and_rows", dict(m=37, k=768, n=200)),
    ("one_row_one_vector", dict(m=1, k=64, n=16)),
    ("batch_dims_long_k", dict(m=128, k=3072, n=768, batch=(2,))),
    ("skinny_wide", dict(m=16, k=768, n=3072)),
    ("narrow_tail_lanes", dict(m=9, k=130, n=72)),  # 72 = 64 + 8: a ymm then no scalar lanes
    ("odd_tail_lanes", dict(m=7, k=34, n=75)),      # 11 lanes past the panel: scalar lanes too
    ("gemm_transB", dict(m=5, k=32, n=100, gemm=dict(transB=1))),
    ("gemm_alpha_beta", dict(m=20, k=96, n=64, gemm=dict(alpha=0.5, beta=2.0))),
    ("chain_bf16_epilogue", dict(m=33, k=256, n=320, then=80)),
    # rows for several row chunks and whole panels: the product an activation B would be
    # packed at run time for (pack-b's run_packable), which must leave a narrow weight alone
    ("row_chunks_whole_panels", dict(m=128, k=256, n=256)),
    # AMX's edges: K mod 32 (the pairs after the tiles'), rows past the last block of 32,
    # a tail panel, blocks over batch dims (A seen as [rows, K]), Gemm's alpha, beta and C
    ("amx_k_tail", dict(m=64, k=784, n=128)),
    ("amx_rows_k_tail", dict(m=45, k=40, n=192)),
    ("amx_batch_tail", dict(m=20, k=64, n=136, batch=(3,))),
    ("amx_gemm", dict(m=70, k=96, n=128, gemm=dict(alpha=0.5, beta=2.0))),
    # chunks of several AMX blocks, each block's epilogue run inside the next one's k loop
    # (row_chunks_whole_panels: 8 steps, 4 rows a step; batch_dims_long_k: 96 steps, 1 row a
    # step; here 1 step, all 32 rows in it) and the chunk's last one after its loops
    ("amx_pipeline_one_step", dict(m=96, k=32, n=256)),
    # the tile order with one panel of 32 columns, and with rows past the last block
    ("amx_tiled_one_panel", dict(m=64, k=64, n=32)),
    ("amx_tiled_rows_tail", dict(m=77, k=128, n=96, then=48)),
    # more than 4 row blocks: chunks of column blocks, their row blocks outer (B resident)
    ("amx_b_resident", dict(m=200, k=64, n=160)),
    ("amx_b_resident_pairs", dict(m=168, k=80, n=192)),
]


def check(icc, tmp, name, kw):
    """One case (icc_run.run_cases): the checks that failed."""
    pairs = cpu_has("avx512_bf16")
    rows = kw["m"] * int(np.prod(kw.get("batch") or (1,)))
    tiled = rows >= 32 and kw["k"] % 32 == 0 and kw["n"] % 32 == 0   # packed_t for an AMX target
    tiles = pairs and cpu_has("amx_bf16") and rows >= 32 and kw["k"] >= 32 and (kw["n"] >= 64 or tiled)
    failed = 0
    path = os.path.join(tmp, name + ".onnx")
    x = model(path, RNG, **kw)
    common = ["--precision=bf16", "--no-default-keep"]
    want_for = interp_per_march(icc, tmp, name, path, "x", x, ORACLE, common)

    host = bf16_pairs_host(icc, path)
    marches = [(None, host)] + ([("cooperlake", True)] if pairs and not host else []) + [("x86-64-v3", False)]
    for march, expect in marches:
        flags = common + (["-march=" + march] if march else [])
        xp, want = want_for(march)
        kern = run([icc, path, "--emit=kernels"] + flags)
        got = compile_and_run(icc, path, flags, "x", xp, "y", tmp, name + (march or "host"))
        got = got.astype(np.float64)
        rel = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))
        has = "dpbf16_pairs" in kern
        amx = "amx_dpbf16ps" in kern
        rounded = "%x.bf16" in kern   # the activation rounded: where bf16 pairs are multiplied
        ok = rel <= REL and (has or amx) == expect and amx == (tiles and not march) and rounded == expect
        print("%s %-22s %-10s %s: pair kernel %s, AMX %s, x rounded %s; vs the interpreter's bf16 graph %.2g" % (
            "ok  " if ok else "FAIL", name, march or "host", "x".join(str(v) for v in x.shape),
            "yes" if has else "no", "yes" if amx else "no", "yes" if rounded else "no", rel), flush=True)
        failed += not ok
    # the weights packed in pairs for -march=znver4 (IR only; for sapphirerapids in
    # the tiles' order where tileable), then compiled for x86-64-v3: the f32 kernels
    # read the packing without vdpbf16ps; the interpreter runs the packed IR too
    for cpu, tag, want_tag in [("znver4", "packed_k = 2", True), ("sapphirerapids", "packed_t = 16", tiled)]:
        packed = os.path.join(tmp, "%s_%s.icc" % (name, cpu))
        xp, want = want_for(cpu)
        run([icc, path, "--emit=ir", "-O2", "-march=" + cpu, "-o", packed] + common)
        got = compile_and_run(icc, packed, ["-march=x86-64-v3"], "x", xp, "y", tmp, name + "_" + cpu)
        rel = float(np.abs(got.astype(np.float64) - want).max() / max(np.abs(want).max(), 1e-30))
        with open(packed) as f:
            ok = (tag in f.read()) == want_tag and rel <= REL
        print("%s %-22s packed for %s (%s: %s), compiled for x86-64-v3: %.2g" % (
            "ok  " if ok else "FAIL", name, cpu, tag, "yes" if want_tag else "no", rel), flush=True)
        failed += not ok
        if cpu == "sapphirerapids":
            _, interp = interp_want(icc, tmp, name + "_" + cpu, packed, "x", x, "dce")
            rel = float(np.abs(interp.astype(np.float64) - want).max() / max(np.abs(want).max(), 1e-30))
            ok = rel <= REL
            print("%s %-22s packed for %s, the interpreter: %.2g" % ("ok  " if ok else "FAIL", name, cpu, rel),
                  flush=True)
            failed += not ok
    return failed


def main():
    return run_cases(__doc__, CASES, check, "avx512_bf16", "the pair kernel (on the host where its vdpbf16ps is fast, else for -march=cooperlake)")


if __name__ == "__main__":
    sys.exit(main())
