#!/usr/bin/env python3
"""bf16 attention (--precision=bf16, docs/precision.md).

--precision=bf16 rounds an Attention's Q, K and V to bf16 (passes/precision.c);
their Casts join the Attention's kernel, which reads the bf16 values the
linears before it write. On a host whose /proc/cpuinfo has amx_bf16, heads of a
width in 32s over key counts in 32s and at least 32 query rows run on AMX tiles
(codegen/lower/attention.c: Q·Kᵀ and P·V as 32 x 32 blocks of tdpbf16ps, the
softmax in f32, the probabilities rounded to bf16 for P·V); other shapes and
targets run the f32 kernels on the widened bf16 inputs. Each model computes Q, K
and V from one input x by MatMuls (as a transformer's linears do), splits them
into heads, and runs the attention pattern the `attention` pass fuses. Checks:
  - the compiled model matches the interpreter running the same bf16 graph
    (the oracle pipeline fuses the Attention and rounds its inputs too):
    max error / max |output| <= 1e-2 (the probabilities' bf16 rounding, 2^-9
    relative, and the order of the sums), and NaN exactly where it has NaN (a
    query row whose every key is masked);
  - the kernels are the AMX ones (amx_dpbf16ps, pair_pack in --emit=kernels)
    exactly where expected: on a host with amx_bf16, for the shapes above;
  - compiled for -march=x86-64-v3 (no AMX: runs on every host CI uses) they
    are not, and the results match too;
  - at --precision=int8-dynamic the same holds for the Attention after
    quantized linears (passes/precision.c rounds its inputs to bf16 where the
    target has AMX-BF16; for x86-64-v3 it stays f32, within the same bound of
    the host's interpreter graph), and the pass option attention=f32 leaves
    it f32 on the host too.

    python3 tests/models/bf16_attention.py build/icc
Exits 1 if any check fails.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from icc_run import compile_and_run, cpu_has, interp_want, run, run_cases

RNG = np.random.default_rng(11)   # one stream over the cases, in order

ORACLE = "shape-infer,simplify,fold,fold-bn,attention,recognize,simplify,cse,dce,precision"
REL = 1e-2


def model(path, rng, b, s, heads, d, sq=None, mask=None, merge=True):
    """x [b, s, heads*d]; Q = x[:, :sq] Wq (all rows without sq), K = x Wk,
    V = x Wv, each split into heads; softmax(Q Kᵀ / sqrt(d) + mask) V, merged
    back to [b, sq, heads*d] (merge) or left as [b, heads, sq, d]. mask: None,
    'row' ([1,1,1,s]: a few keys -inf) or 'dead' ([1,1,sq,s]: query row 3 has
    every key -inf, the rest random)."""
    e, sq = heads * d, sq or s
    inits, nodes = [], []
    xq = "x"
    if sq != s:
        inits += [numpy_helper.from_array(np.array(v, np.int64), n)
                  for n, v in (("s0", [0]), ("s1", [sq]), ("s_ax", [1]))]
        nodes.append(helper.make_node("Slice", ["x", "s0", "s1", "s_ax"], ["xq"]))
        xq = "xq"
    inits.append(numpy_helper.from_array(np.array([0, 0, heads, d], np.int64), "split"))
    for n, src in (("q", xq), ("k", "x"), ("v", "x")):
        inits.append(numpy_helper.from_array((rng.standard_normal((e, e)) / np.sqrt(e)).astype(np.float32), "W" + n))
        nodes += [helper.make_node("MatMul", [src, "W" + n], [n]),
                  helper.make_node("Reshape", [n, "split"], [n + "4"]),
                  helper.make_node("Transpose", [n + "4"], [n + "h"], perm=[0, 2, 1, 3])]
    inits.append(numpy_helper.from_array(np.array(np.sqrt(d), np.float32), "c"))
    nodes += [helper.make_node("Transpose", ["kh"], ["kt"], perm=[0, 1, 3, 2]),
              helper.make_node("MatMul", ["qh", "kt"], ["sc"]),
              helper.make_node("Div", ["sc", "c"], ["sc2"])]
    last = "sc2"
    if mask:
        m = np.zeros((1, 1, 1, s) if mask == "row" else (1, 1, sq, s), np.float32)
        if mask == "row":
            m[..., rng.choice(s, size=max(1, s // 8), replace=False)] = -np.inf
        else:
            m[:] = rng.standard_normal(m.shape)
            m[0, 0, 3, :] = -np.inf
        inits.append(numpy_helper.from_array(m, "mask"))
        nodes.append(helper.make_node("Add", ["sc2", "mask"], ["sc3"]))
        last = "sc3"
    nodes += [helper.make_node("Softmax", [last], ["p"], axis=-1),
              helper.make_node("MatMul", ["p", "vh"], ["ctx" if merge else "y"])]
    ys = [b, heads, sq, d]
    if merge:
        inits.append(numpy_helper.from_array(np.array([0, 0, e], np.int64), "merge"))
        nodes += [helper.make_node("Transpose", ["ctx"], ["ct"], perm=[0, 2, 1, 3]),
                  helper.make_node("Reshape", ["ct", "merge"], ["y"])]
        ys = [b, sq, e]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [b, s, e])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ys)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return rng.standard_normal((b, s, e)).astype(np.float32)


CASES = [
    # BERT's shape at 4 heads: 128 rows, 128 keys, heads of 64, a padding mask
    ("bert_heads", dict(b=1, s=128, heads=4, d=64, mask="row")),
    # two batches, heads of 32, no mask
    ("batch_narrow_heads", dict(b=2, s=64, heads=3, d=32)),
    # 48 query rows over 64 keys: the last block of 32 rows starts at 16
    # (recomputing rows of the one before); a row with every key masked (NaN)
    ("rows_tail_dead_row", dict(b=1, s=64, heads=2, d=32, sq=48, mask="dead")),
    # the output left as [B, H, Sq, D] (4-D Attention)
    ("four_d_output", dict(b=1, s=32, heads=2, d=64, merge=False)),
    # no AMX: heads of 40 (not whole tiles), 40 keys, 20 rows: the f32 kernels on bf16 inputs
    ("f32_kernel_odd_shapes", dict(b=1, s=40, heads=2, d=40)),
    # int8-dynamic: the linears quantized, the Attention's inputs rounded to
    # bf16 where the target has AMX-BF16 (its tiles), else left f32
    ("int8_dynamic_heads", dict(b=1, s=64, heads=2, d=64, mask="row", mode="int8-dynamic")),
]


def amx_expected(kw):
    s, d = kw["s"], kw["d"]
    return cpu_has("amx_bf16") and d % 32 == 0 and s % 32 == 0 and (kw.get("sq") or s) >= 32


def check(icc, tmp, name, kw):
    """One case (icc_run.run_cases): the checks that failed."""
    failed = 0
    path = os.path.join(tmp, name + ".onnx")
    kw = dict(kw)
    mode = kw.pop("mode", "bf16")
    x = model(path, RNG, **kw)
    common = ["--precision=" + mode, "--no-default-keep"]
    xp, want = interp_want(icc, tmp, name, path, "x", x, ORACLE, common)
    want = want.astype(np.float64)
    for march, expect in [(None, amx_expected(kw)), ("x86-64-v3", False)]:
        flags = common + (["-march=" + march] if march else [])
        kern = run([icc, path, "--emit=kernels"] + flags)
        got = compile_and_run(icc, path, flags, "x", xp, "y", tmp, name + (march or "host"))
        got = got.astype(np.float64)
        nan_ok = bool(np.array_equal(np.isnan(got), np.isnan(want)))
        fin = ~np.isnan(want)
        rel = float(np.abs(got[fin] - want[fin]).max() / max(np.abs(want[fin]).max(), 1e-30))
        amx = "amx_dpbf16ps" in kern and "pair_pack" in kern
        fused = "%att_scores" in kern   # one Attention kernel, whichever schedule
        ok = rel <= REL and nan_ok and amx == expect and fused
        print("%s %-22s %-9s: AMX %s, NaN rows %s, vs the interpreter's bf16 graph %.2g" % (
            "ok  " if ok else "FAIL", name, march or "host", "yes" if amx else "no",
            int(np.isnan(want).any(axis=-1).sum()), rel), flush=True)
        failed += not ok
    if mode != "bf16" and cpu_has("amx_bf16"):
        # the pass's attention=f32 leaves the Attention f32: no Cast to bf16 (to = 16), which nothing
        # else makes in an int8 mode
        ir = {o: run([icc, path, "--passes=shape-infer,simplify,attention,precision{mode=%s,default-keep=0%s}" % (mode, o),
                      "--emit=ir"]) for o in ("", ",attention=f32")}
        ok = "{to = 16}" in ir[""] and "{to = 16}" not in ir[",attention=f32"]
        print("%s %-22s precision{attention=f32} keeps the Attention f32" % ("ok  " if ok else "FAIL", name), flush=True)
        failed += not ok
    return failed


def main():
    return run_cases(__doc__, CASES, check, "amx_bf16", "the AMX attention kernel")


if __name__ == "__main__":
    sys.exit(main())
