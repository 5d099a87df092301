#!/usr/bin/env python3
"""Load-time kernels (docs/runtime.md): kernels computed only from constants
run once when the model is loaded, not in every run.

A model whose weights are built by ConstantOfShape (a 1.2 MB splat, over the
fold pass's 1 MB limit, so it stays a node), then Add of a constant and
Transpose (a chain of load-time kernels), feeding a MatMul on the input, an
If whose branch captures a load-time value, and a symbolic batch. Compiled
at -O0, -O2 and -O3, with --weights=external, --precision=bf16, and with the
batch left symbolic; each run through `icc run` is compared with ONNX
Runtime. With --profile, the run's kernel table must not list the load-time
kernels (ConstantOfShape, the Add on it) while it still lists the MatMul.
Last, a model whose load-time result cannot be allocated (2 GiB under a
1.5 GiB address-space limit) must fail to load with one clean error line
(skipped for a sanitizer build, which needs more address space).

    python3 tests/models/load_time.py build/icc
"""
import os
import resource
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ort.set_default_logger_severity(3)
K, N = 512, 600   # the splat is K x N f32 = 1.2 MB


def const(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def model(batch, with_if=True):
    rng = np.random.default_rng(3)
    bias = rng.standard_normal((1, N)).astype(np.float32)
    then_add = rng.standard_normal(K).astype(np.float32)
    nodes = [
        helper.make_node("ConstantOfShape", ["wshape"], ["w0"],
                         value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.01])),
        helper.make_node("Add", ["w0", "bias"], ["w1"]),            # [K, N]
        helper.make_node("Transpose", ["w1"], ["wt"], perm=[1, 0]),  # [N, K]
        helper.make_node("MatMul", ["x", "w1"], ["h"]),              # [B, N]
        helper.make_node("Relu", ["h"], ["y"]),
        helper.make_node("ReduceSum", ["wt", "axis0"], ["ws"], keepdims=0),   # [K], load-time, read by the If
        helper.make_node("If", ["c"], ["z"],
                         then_branch=helper.make_graph(
                             [helper.make_node("Add", ["ws", "then_add"], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", TensorProto.FLOAT, [K])]),
                         else_branch=helper.make_graph(
                             [helper.make_node("Neg", ["ws"], ["e"])], "else", [],
                             [helper.make_tensor_value_info("e", TensorProto.FLOAT, [K])])),
    ]
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, K])]
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, N])]
    if with_if:
        ins.append(helper.make_tensor_value_info("c", TensorProto.BOOL, []))
        outs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, [K]))
    else:   # control flow with symbolic dims is not compiled yet
        nodes = nodes[:-2]
    g = helper.make_graph(
        nodes, "load_time", ins, outs,
        [const("wshape", np.array([K, N], np.int64)), const("bias", bias), const("then_add", then_add),
         const("axis0", np.array([0], np.int64))])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def run_icc(icc, so, inputs, out_dir):
    args = [icc, "run", so, "-o", out_dir]
    for name, path in inputs:
        args += ["--input", "%s=%s" % (name, path)]
    return subprocess.run(args, capture_output=True, text=True)


def main():
    icc = os.path.abspath(sys.argv[1])
    tmp = tempfile.mkdtemp()
    failed = 0

    def report(ok, what, detail=""):
        nonlocal failed
        print("%s %s%s" % ("ok  " if ok else "FAIL", what, (": " + detail) if detail else ""))
        failed += not ok

    fixed, sym = model(2), model("B", with_if=False)
    paths = {}
    for tag, m in (("fixed", fixed), ("sym", sym)):
        paths[tag] = os.path.join(tmp, tag + ".onnx")
        onnx.save(m, paths[tag])
    rng = np.random.default_rng(5)
    cases = [("-O0", "fixed", [], 2), ("-O2", "fixed", [], 2), ("-O3", "fixed", [], 2),
             ("--weights=external", "fixed", ["--weights=external"], 2),
             ("--precision=bf16", "fixed", ["--precision=bf16"], 2),
             ("symbolic batch, run with 3", "sym", [], 3)]
    for ci, (what, tag, flags, batch) in enumerate(cases):
        so = os.path.join(tmp, "m%d.so" % ci)
        opt = [what] if what.startswith("-O") else []
        r = subprocess.run([icc, paths[tag], "-o", so] + opt + flags, capture_output=True, text=True)
        if r.returncode:
            report(False, what, r.stderr.strip())
            continue
        x = rng.standard_normal((batch, K)).astype(np.float32)
        for cond in (True, False) if tag == "fixed" else (None,):
            xf, cf = os.path.join(tmp, "x.npy"), os.path.join(tmp, "c.npy")
            np.save(xf, x)
            feeds, files = {"x": x}, [("x", xf)]
            if cond is not None:
                np.save(cf, np.array(cond))
                feeds["c"] = np.array(cond)
                files.append(("c", cf))
            out = os.path.join(tmp, "out%d_%d" % (ci, bool(cond)))
            r = run_icc(icc, so, files, out)
            if r.returncode:
                report(False, "%s, c=%s" % (what, cond), r.stderr.strip())
                continue
            want = ort.InferenceSession(paths[tag], providers=["CPUExecutionProvider"]).run(None, feeds)
            tol = 2e-2 if "bf16" in what else 1e-4
            oks = []
            for name, w in zip(("y", "z"), want):
                got = np.load(os.path.join(out, name + ".npy"))
                oks.append(got.shape == w.shape and np.allclose(got, w, rtol=tol, atol=tol))
            report(all(oks), "%s, c=%s: outputs match ONNX Runtime" % (what, cond))

    # The run of a profiled model lists its kernels: the load-time ones are not there.
    so = os.path.join(tmp, "prof.so")
    r = subprocess.run([icc, paths["fixed"], "--profile", "-o", so], capture_output=True, text=True)
    if r.returncode == 0:
        r = subprocess.run([icc, "bench", so, "--profile", "--threads=1", "--runs=1", "--time=0"],
                           capture_output=True, text=True)
    table = r.stdout
    report(r.returncode == 0 and "MatMul" in table and "ConstantOfShape" not in table and "ReduceSum" not in table,
           "--profile: the run's kernels exclude the load-time ones", r.stderr.strip())

    # A load-time result too large to allocate: open fails cleanly.
    big = helper.make_model(helper.make_graph(
        [helper.make_node("ConstantOfShape", ["s"], ["w"],
                          value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
         helper.make_node("ReduceSum", ["w"], ["r"], keepdims=0),
         helper.make_node("Add", ["x", "r"], ["y"])], "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        [const("s", np.array([1 << 19, 1 << 10], np.int64))]),
        opset_imports=[helper.make_opsetid("", 17)])
    bp, bso = os.path.join(tmp, "big.onnx"), os.path.join(tmp, "big.so")
    onnx.save(big, bp)
    r = subprocess.run([icc, bp, "-o", bso], capture_output=True, text=True)
    ldd = subprocess.run(["ldd", icc], capture_output=True, text=True).stdout
    if "libasan" in ldd:   # AddressSanitizer's shadow memory needs more address space than the limit
        print("skip a load-time buffer that cannot be allocated (a sanitizer build)")
    elif r.returncode == 0:
        np.save(os.path.join(tmp, "bx.npy"), np.zeros(1, np.float32))
        lim = 1536 << 20
        r = subprocess.run([icc, "run", bso, "--input", "x=" + os.path.join(tmp, "bx.npy"), "-o",
                            os.path.join(tmp, "bout")], capture_output=True, text=True,
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (lim, lim)))
        err = r.stderr.strip().splitlines()
        report(r.returncode == 1 and len(err) == 1 and "bytes computed at load"
               in err[0], "a load-time buffer that cannot be allocated fails the open", r.stderr.strip()[:300])
    else:
        report(False, "big model compiles", r.stderr.strip())
    print("load-time kernels: all ok" if not failed else "%d check(s) failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
