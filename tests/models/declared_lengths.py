#!/usr/bin/env python3
"""Lengths the run's values decide, compiled into the length the model
declares, against ONNX Runtime.

- Range with start, limit and delta as inputs (f32, i64, and i32 through a
  Cast to a declared f32 output, whose length shape inference copies back):
  runs selecting the declared length match ONNX Runtime; another length, or
  a delta of 0, fails the compiled run in one line naming the node, with no
  output file, where the interpreter gives the range it computes (or, for a
  delta of 0, fails too).
- The same Range whose output length is not declared is refused in one
  line, naming the inputs that decide it.
- Reshape with its shape as an input (the same element count in other
  dims fails; -1 is read as the rest; a declared output of another element
  count is refused at compile time in one line, no partial output), TopK with k as an input, OneHot
  with depth as an input (a float),
  Expand, Tile and ConstantOfShape with their shape (repeats) as an input,
  Slice with starts, ends and steps as inputs, Pad with pads as an input,
  their output shapes declared: values giving those shapes match ONNX
  Runtime (a negative step, a negative start), others fail the compiled run
  in one line naming the node (a step of 0 too).
- NonZero, Compress (with and without an axis) and Unique with declared
  lengths: inputs giving those lengths match ONNX Runtime; others fail the
  compiled run in one line naming the node, where the interpreter gives
  the other length.

    python3 tests/models/declared_lengths.py build/icc
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as P, helper as h

from icc_run import Report

ICC = os.path.abspath(sys.argv[1])
TMP = tempfile.mkdtemp(prefix="icc-declared-")
report = Report()


def run(path, feeds, tag):
    """(output y, None) or (None, the one-line error); a failed run must
    exit 1 with one line and leave no output file."""
    args = [ICC, "run", path, "-o", f"{TMP}/{tag}"]
    for k, v in feeds.items():
        np.save(f"{TMP}/{tag}_{k}.npy", v)
        args.append(f"--input={k}={TMP}/{tag}_{k}.npy")
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode == 0:
        return np.load(f"{TMP}/{tag}/y.npy"), None
    lines = r.stderr.strip().splitlines()
    clean = r.returncode == 1 and len(lines) == 1 and not os.path.exists(f"{TMP}/{tag}/y.npy")
    return None, (lines[0] if clean else f"BAD ERROR (rc {r.returncode}): {r.stderr.strip()}")


def compile_so(path, tag):
    """path compiled to TMP/tag.so, or None (reported)."""
    so = f"{TMP}/{tag}.so"
    r = subprocess.run([ICC, path, "-o", so], capture_output=True, text=True)
    if r.returncode:
        report(False, f"{tag}: compiling failed: {r.stderr.strip()}")
        return None
    return so


def range_model(path, dt, out_dt, length):
    nodes = [h.make_node("Range", ["s", "l", "d"], ["r" if out_dt != dt else "y"], name="range")]
    if out_dt != dt:
        nodes.append(h.make_node("Cast", ["r"], ["y"], name="cast", to=out_dt))
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info(n, dt, []) for n in "sld"],
                     [h.make_tensor_value_info("y", out_dt, None if length is None else [length])])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


CASES = [(P.FLOAT, P.FLOAT, np.float32, (0.5, 3.0, 0.5)), (P.INT64, P.INT64, np.int64, (10, -2, -3)),
         (P.INT32, P.FLOAT, np.int32, (1, 9, 2))]
for dt, out_dt, npt, (s, l, d) in CASES:
    name = onnx.TensorProto.DataType.Name(dt).lower()
    feeds = {"s": np.array(s, npt), "l": np.array(l, npt), "d": np.array(d, npt)}
    ref = f"{TMP}/{name}_ref.onnx"
    range_model(ref, dt, out_dt, None)
    want = ort.InferenceSession(ref, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    path = f"{TMP}/{name}.onnx"
    range_model(path, dt, out_dt, len(want))
    so = compile_so(path, name)
    if not so:
        continue
    got, err = run(so, feeds, f"{name}_c")
    ok = err is None and got.shape == want.shape and np.allclose(got, want, rtol=1e-6)
    report(ok, f"Range {name} {s, l, d}, {len(want)} declared, compiled: {err or 'same as ORT'}")
    longer = dict(feeds, l=np.array(l + 2 * d, npt))
    want2 = ort.InferenceSession(ref, providers=["CPUExecutionProvider"]).run(None, longer)[0]
    got, err = run(so, longer, f"{name}_c2")
    report(got is None and "node 'range' (Range)" in err,
           f"Range {name}, {len(want2)} elements against {len(want)} declared, compiled: {err}")
    got, err = run(path, longer, f"{name}_i2")
    report(err is None and np.allclose(got, want2), f"interpreted: {err or got.shape}")
    zero = dict(feeds, d=np.array(0, npt))
    for p, how in ((so, "compiled"), (path, "interpreted")):
        got, err = run(p, zero, f"{name}_z{how[0]}")
        report(got is None and not err.startswith("BAD") and "'range'" in err,
               f"Range {name}, delta 0, {how}: {err if err else got}")

ref = f"{TMP}/float_ref.onnx"
r = subprocess.run([ICC, ref, "-o", f"{TMP}/refused.so"], capture_output=True, text=True)
lines = r.stderr.strip().splitlines()
report(r.returncode == 1 and len(lines) == 1 and "'s', 'l', 'd'" in lines[0] and
       not os.path.exists(f"{TMP}/refused.so"), f"Range, length not declared: refused: {r.stderr.strip()}")


def one_node(tag, node, x, cond=None):
    """The model of node over x (and a condition input), its output y
    declared with the shape ORT gives for (x, cond); returns the path, the
    reference model's path and the ORT session."""
    ins = [h.make_tensor_value_info("x", P.FLOAT, list(x.shape))]
    if cond is not None:
        ins.append(h.make_tensor_value_info("c", P.BOOL, list(cond.shape)))
    feeds = {"x": x} if cond is None else {"x": x, "c": cond}
    paths = []
    for shape in (None, "declared"):
        if shape:
            want = ort.InferenceSession(paths[0], providers=["CPUExecutionProvider"]).run(None, feeds)[0]
            shape = list(want.shape)
        g = h.make_graph([node], "g", ins, [h.make_tensor_value_info("y", P.INT64 if node.op_type == "NonZero"
                                                                      else P.FLOAT, shape)])
        m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
        m.ir_version = 8
        paths.append(f"{TMP}/{tag}{'_d' if shape else ''}.onnx")
        onnx.save(m, paths[-1])
    return paths[1], ort.InferenceSession(paths[0], providers=["CPUExecutionProvider"])


rng = np.random.default_rng(0)
x = rng.standard_normal((3, 4)).astype(np.float32)
x[x < 0.3] = 0
x2 = x.copy()
x2[0, :] = [11.0, 12.0, 13.0, 14.0]
cond, cond2 = np.array([True, False, True]), np.array([True, True, True])
OPS = [("nonzero", h.make_node("NonZero", ["x"], ["y"], name="nz"), None, None, "'nz' (NonZero)"),
       ("compress_axis", h.make_node("Compress", ["x", "c"], ["y"], name="cmp", axis=0), cond, cond2,
        "'cmp' (Compress)"),
       ("compress_flat", h.make_node("Compress", ["x", "c"], ["y"], name="cmp"), cond, cond2, "'cmp' (Compress)"),
       ("unique", h.make_node("Unique", ["x"], ["y"], name="uq", sorted=1), None, None, "'uq' (Unique)")]
for tag, node, c, c2, who in OPS:
    path, sess = one_node(tag, node, x, c)
    so = compile_so(path, tag)
    if not so:
        continue
    feeds = {"x": x} if c is None else {"x": x, "c": c}
    other = {"x": x2} if c is None else {"x": x, "c": c2}
    got, err = run(so, feeds, f"{tag}_c")
    want = sess.run(None, feeds)[0]
    report(err is None and got.shape == want.shape and np.array_equal(got, want),
           f"{tag}, the declared length, compiled: {err or 'same as ORT'}")
    got, err = run(so, other, f"{tag}_c2")
    report(got is None and not err.startswith("BAD") and who in err, f"{tag}, another length, compiled: {err}")
    got, err = run(path, other, f"{tag}_i2")
    want = sess.run(None, other)[0]
    report(err is None and np.array_equal(got, want), f"{tag}, another length, interpreted: {err or got.shape}")


def io_model(path, node, ins, out_shape):
    outs = [h.make_tensor_value_info("y", P.FLOAT, out_shape)]
    if node.op_type == "TopK":
        outs.append(h.make_tensor_value_info("yi", P.INT64, out_shape))
    g = h.make_graph([node], "g", [h.make_tensor_value_info(n, t, shp) for n, t, shp in ins], outs)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 18)])
    m.ir_version = 8
    onnx.save(m, path)


x = np.arange(60, dtype=np.float32).reshape(6, 10)
I64 = P.INT64
RT = [("reshape", h.make_node("Reshape", ["x", "sh"], ["y"], name="rsh"),
       [("x", P.FLOAT, [6, 10]), ("sh", I64, [3])],
       {"sh": [3, -1, 5]},
       [{"sh": [5, 4, 3]}, {"sh": [3, 5, -1]}]),
      ("topk", h.make_node("TopK", ["x", "kk"], ["y", "yi"], name="tk"),
       [("x", P.FLOAT, [6, 10]), ("kk", I64, [1])],
       {"kk": [4]},
       [{"kk": [3]}]),
      ("onehot", h.make_node("OneHot", ["ind", "dep", "vals"], ["y"], name="oh"),
       [("ind", I64, [5]), ("dep", P.FLOAT, []), ("vals", P.FLOAT, [2])],
       {},
       [{}]),
      ("slice", h.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"], name="sl"),
       [("x", P.FLOAT, [6, 10]), ("s", I64, [2]), ("e", I64, [2]), ("a", I64, [2]), ("st", I64, [2])],
       {"s": [1, -2], "e": [4, 0], "a": [0, 1], "st": [1, -3]},   # rows 1..3, columns 8, 5, 2
       [{"s": [1, -2], "e": [5, 0], "a": [0, 1], "st": [1, -3]}, {"s": [1, -2], "e": [4, 0], "a": [0, 1], "st": [0, -3]}]),
      ("expand", h.make_node("Expand", ["x1", "sh"], ["y"], name="ex"),
       [("x1", P.FLOAT, [6, 1]), ("sh", I64, [3])],
       {"sh": [2, 1, 5]},
       [{"sh": [2, 1, 4]}, {"sh": [2, 3, 5]}]),
      ("tile", h.make_node("Tile", ["x", "rep"], ["y"], name="tl"),
       [("x", P.FLOAT, [6, 10]), ("rep", I64, [2])],
       {"rep": [2, 3]},
       [{"rep": [3, 2]}]),
      ("cos", h.make_node("ConstantOfShape", ["sh"], ["y"], name="cs",
                          value=onnx.numpy_helper.from_array(np.array([2.5], np.float32))),
       [("sh", I64, [2])],
       {"sh": [3, 7]},
       [{"sh": [7, 3]}]),
      ("pad", h.make_node("Pad", ["x", "p"], ["y"], name="pd", mode="reflect"),
       [("x", P.FLOAT, [6, 10]), ("p", I64, [4])],
       {"p": [1, 2, 2, 0]},
       [{"p": [1, 2, 1, 1]}])]
x1 = np.arange(6, dtype=np.float32).reshape(6, 1)
xs = rng.standard_normal((6, 10)).astype(np.float32)
FIXED = {"x": x, "x1": x1, "ind": np.array([0, 3, -1, 5, 2], np.int64), "dep": np.array(7.5, np.float32),
         "vals": np.array([0.5, 2.0], np.float32)}
for tag, node, ins, good, bads in RT:
    base = {n: FIXED[n] for n, _, _ in ins if n in FIXED}
    if tag == "topk":
        base["x"] = xs
    feeds = {**base, **{k: np.array(v, np.int64) for k, v in good.items()}}
    ref = f"{TMP}/{tag}_ref.onnx"
    io_model(ref, node, ins, None)
    sess = ort.InferenceSession(ref, providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)[0]
    path = f"{TMP}/{tag}.onnx"
    io_model(path, node, ins, list(want.shape))
    so = compile_so(path, tag)
    if not so:
        continue
    got, err = run(so, feeds, f"{tag}_c")
    report(err is None and got.shape == want.shape and np.array_equal(got, want),
           f"{tag} with run-time operands, {list(want.shape)} declared, compiled: {err or 'same as ORT'}")
    for j, bad in enumerate(bads):
        f = {**base, **{k: np.array(v, np.int64) for k, v in bad.items()}}
        if tag == "onehot":
            f["dep"] = np.array(6.0, np.float32)
        got, err = run(so, f, f"{tag}_b{j}")
        report(got is None and not err.startswith("BAD") and f"'{node.name}'" in err,
               f"{tag} {bad}, compiled: {err}")

# a Reshape whose declared output has another element count than its input
bad = f"{TMP}/reshape_count.onnx"
io_model(bad, h.make_node("Reshape", ["x", "sh"], ["y"], name="rsh"), [("x", P.FLOAT, [6, 10]), ("sh", I64, [2])],
         [7, 7])
r = subprocess.run([ICC, bad, "-o", f"{TMP}/reshape_count.so"], capture_output=True, text=True)
lines = r.stderr.strip().splitlines()
report(r.returncode == 1 and len(lines) == 1 and "'rsh' (Reshape)" in lines[0] and
       not os.path.exists(f"{TMP}/reshape_count.so"), f"reshape of 60 elements declared [7, 7]: refused: {r.stderr.strip()}")

print(f"{report.failures} failed")
sys.exit(1 if report.failures else 0)
