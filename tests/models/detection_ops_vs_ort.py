#!/usr/bin/env python3
"""The detectors' ops, interpreted and compiled, against ONNX Runtime on
random data, beyond the ONNX node tests.

- NonMaxSuppression (its result length depends on the values): both box
  formats, corners in either order, a duplicated box and tied scores for
  the tie rules, thresholds given or absent, several batches and classes,
  one class of 300 boxes, the three scalars as rank-0 tensors. The selected
  indices must be equal. Compiled, the
  model declares the length ORT selects; a run that selects another length
  fails in one line with no output (the interpreter too), and a model whose
  length is not declared is refused in one line with no partial output.
  NaN scores (ordered after every number) compiled against the interpreter.
- RoiAlign: avg and max, half_pixel and output_half_pixel, sampling_ratio 0
  and 2, a spatial scale, regions past the map's edge, several batch items;
  rtol 1e-4, atol 1e-5; a batch index out of range fails the compiled run
  as it fails the interpreter.

    python3 tests/models/detection_ops_vs_ort.py build/icc
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

ort.set_default_logger_severity(3)  # RoiAlign's warning that its max mode differs from earlier releases

ICC = os.path.abspath(sys.argv[1])
TMP = tempfile.mkdtemp(prefix="icc-detect-")
report = Report()


def single_op(tag, node, inputs, out, out_type, opset, ir_version, out_shape=None):
    """Saves a one-node model; inputs: name -> (array, TensorProto type)."""
    vi = [h.make_tensor_value_info(k, t, list(v.shape)) for k, (v, t) in inputs.items()]
    g = h.make_graph([node], "g", vi, [h.make_tensor_value_info(out, out_type, out_shape)])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = ir_version
    path = f"{TMP}/{tag}.onnx"
    onnx.save(m, path)
    return path


def interpreted(path, feeds, tag, out):
    """icc's output `out` (interpreted for an .onnx, compiled for an .so),
    or its error text; an error must be one line with exit 1 and leave no
    output file."""
    args = []
    for k, v in feeds.items():
        np.save(f"{TMP}/{tag}_{k}.npy", v)
        args.append(f"--input={k}={TMP}/{tag}_{k}.npy")
    od = f"{TMP}/{tag}_out"
    r = subprocess.run([ICC, "run", path, *args, "-o", od], capture_output=True, text=True)
    if r.returncode == 0:
        return np.load(f"{od}/{out}.npy")
    lines = r.stderr.strip().splitlines()
    if r.returncode != 1 or len(lines) != 1 or os.path.exists(f"{od}/{out}.npy"):
        return np.array([]) if r.returncode == 0 else f"BAD ERROR (rc {r.returncode}): {r.stderr.strip()}"
    return lines[0]


def compiled(path, tag):
    """The .so of path, or None (the error reported)."""
    so = f"{TMP}/{tag}.so"
    r = subprocess.run([ICC, path, "-o", so], capture_output=True, text=True)
    if r.returncode != 0:
        report(False, f"{tag}: compiling failed: {r.stderr.strip()}")
        return None
    return so


def refused(path, op):
    so = path[:-5] + ".so"
    r = subprocess.run([ICC, path, "-o", so], capture_output=True, text=True)
    lines = r.stderr.strip().splitlines()
    ok = r.returncode == 1 and len(lines) == 1 and op in lines[0] and not os.path.exists(so)
    report(ok, f"{op}: compiling is refused: " + (lines[0] if lines else "(no message)"))


# ---- NonMaxSuppression -----------------------------------------------------------
def nms_case(i, B, C, N, center, max_out, iou, score, scalars=False):
    rng = np.random.default_rng(i)
    xy = rng.random((B, N, 2)).astype(np.float32) * 10
    wh = rng.random((B, N, 2)).astype(np.float32) * 4
    boxes = np.concatenate([xy, wh], 2) if center else np.concatenate([xy, xy + wh * rng.choice([-1, 1], (B, N, 2))], 2)
    boxes = boxes.astype(np.float32)
    boxes[:, N // 2] = boxes[:, 0]                       # a duplicate box
    scores = rng.random((B, C, N)).astype(np.float32)
    if N > 2:
        scores[:, :, 1] = scores[:, :, 2]                # a tie
    names, inputs = ["boxes", "scores"], {"boxes": (boxes, P.FLOAT), "scores": (scores, P.FLOAT)}
    for nm, v, dt, t in (("max_out", max_out, np.int64, P.INT64), ("iou", iou, np.float32, P.FLOAT),
                         ("score", score, np.float32, P.FLOAT)):
        if v is None:
            names.append("")
            continue
        names.append(nm)
        inputs[nm] = (np.array(v, dt) if scalars else np.array([v], dt), t)
    while names[-1] == "":
        names.pop()
    node = h.make_node("NonMaxSuppression", names, ["sel"], name="nms", center_point_box=center)
    path = single_op(f"nms{i}", node, inputs, "sel", P.INT64, 11, 7)
    feeds = {k: v for k, (v, _) in inputs.items()}
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got = interpreted(path, feeds, f"nms{i}", "sel")
    what = f"NonMaxSuppression B={B} C={C} N={N} center={center} max={max_out} iou={iou} score={score}"
    ok = not isinstance(got, str) and got.shape == want.shape and np.array_equal(got, want)
    report(ok, what + ": " + (f"{len(want)} selected" if ok else f"icc {got}, ORT {want.tolist()}"))
    # compiled: the model declares the length ORT selects
    spath = single_op(f"nms{i}s", node, inputs, "sel", P.INT64, 11, 7, list(want.shape))
    so = compiled(spath, f"nms{i}s")
    if so:
        got = interpreted(so, feeds, f"nms{i}s", "sel")
        ok = not isinstance(got, str) and got.shape == want.shape and np.array_equal(got, want)
        report(ok, what + ", compiled: " + ("same" if ok else f"icc {got}, ORT {want.tolist()}"))
    return path, spath, so, feeds


NMS_CASES = [(1, 1, 8, 0, 3, 0.5, None), (2, 3, 20, 0, 5, 0.3, 0.2), (1, 2, 30, 1, 10, 0.4, 0.5),
             (3, 1, 16, 1, 100, 0.0, None), (1, 1, 12, 0, None, None, None), (2, 2, 25, 0, 4, 0.7, 0.95),
             (1, 4, 40, 1, 6, 0.2, 0.1), (2, 1, 1, 0, 1, 0.5, 0.0),
             (1, 1, 300, 0, 50, 0.3, 0.05), (2, 2, 20, 1, 4, 0.5, 0.2, True)]
runs = [nms_case(i, *c) for i, c in enumerate(NMS_CASES)]
# the length not declared: refused in one line, no partial output
refused(runs[0][0], "NonMaxSuppression")
# a run selecting another length than the declared one: interpreted, the
# selection (as ORT); compiled, one line of error and no output
path, spath, so, feeds = runs[1]
fewer = dict(feeds, score=np.array([0.9], np.float32))
want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, fewer)[0]
got = interpreted(spath, fewer, "nms_fewer_i", "sel")
ok = not isinstance(got, str) and np.array_equal(got, want)
report(ok, f"NonMaxSuppression, another length than declared, interpreted: {got if isinstance(got, str) else got.shape}")
got = interpreted(so, fewer, "nms_fewer_c", "sel")
ok = isinstance(got, str) and not got.startswith("BAD") and "'nms'" in got
report(ok, f"NonMaxSuppression, another length than declared, compiled: {got if isinstance(got, str) else got.shape}")
# NaN scores (no score threshold, so they are candidates): after every
# number, compiled as interpreted
i, (B, C, N, center) = 3, NMS_CASES[3][:4]
path, spath, so, feeds = runs[3]
nan = dict(feeds, scores=feeds["scores"].copy())
nan["scores"][:, 0, 3:9] = np.nan
want = interpreted(path, nan, "nms_nan_i", "sel")
node = h.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou"], ["sel"], name="nms",
                   center_point_box=center)
inputs = {k: (v, P.INT64 if v.dtype == np.int64 else P.FLOAT) for k, v in nan.items()}
so = compiled(single_op("nms_nan", node, inputs, "sel", P.INT64, 11, 7, list(want.shape)), "nms_nan")
got = interpreted(so, nan, "nms_nan_c", "sel") if so else "not compiled"
ok = not isinstance(got, str) and np.array_equal(got, want) and np.isin(np.arange(3, 9), want[:, 2]).any()
report(ok, f"NonMaxSuppression with NaN scores, compiled vs interpreted: {got if isinstance(got, str) else 'same'}")

# ---- RoiAlign ----------------------------------------------------------------------
ROI_CASES = [dict(mode="avg", coordinate_transformation_mode="half_pixel", output_height=3, output_width=4),
             dict(mode="max", coordinate_transformation_mode="half_pixel", output_height=2, output_width=2,
                  sampling_ratio=2),
             dict(mode="avg", coordinate_transformation_mode="output_half_pixel", output_height=5, output_width=3,
                  spatial_scale=0.5),
             dict(mode="max", coordinate_transformation_mode="output_half_pixel", output_height=4, output_width=4,
                  sampling_ratio=0, spatial_scale=0.25)]
for i, attrs in enumerate(ROI_CASES):
    rng = np.random.default_rng(i)
    N, C, H, W, R = 2, 3, 9, 11, 5
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    lo = rng.random((R, 2)) * 12 - 2
    rois = np.concatenate([lo, lo + rng.random((R, 2)) * 8], 1).astype(np.float32) / attrs.get("spatial_scale", 1)
    bi = rng.integers(0, N, (R,)).astype(np.int64)
    inputs = {"x": (x, P.FLOAT), "rois": (rois, P.FLOAT), "bi": (bi, P.INT64)}
    node = h.make_node("RoiAlign", ["x", "rois", "bi"], ["y"], name="roi", **attrs)
    path = single_op(f"roi{i}", node, inputs, "y", P.FLOAT, 16, 8)
    feeds = {k: v for k, (v, _) in inputs.items()}
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got = interpreted(path, feeds, f"roi{i}", "y")
    if isinstance(got, str):
        ok, msg = False, got
    else:
        ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-5)
        msg = f"max abs {np.max(np.abs(got - want)):.2e}" if got.shape == want.shape else f"shape {got.shape}"
    report(ok, f"RoiAlign {attrs}: {msg}")
    so = compiled(path, f"roi{i}")
    if so:
        got = interpreted(so, feeds, f"roi{i}c", "y")
        ok = not isinstance(got, str) and got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-5)
        msg = got if isinstance(got, str) else f"max abs {np.max(np.abs(got - want)):.2e}"
        report(ok, f"RoiAlign {attrs}, compiled: {msg}")
    if i == 0 and so:
        bad = dict(feeds, bi=np.array([0, 1, 2, 0, 1], np.int64))
        for p, how in ((path, "interpreted"), (so, "compiled")):
            got = interpreted(p, bad, "roi_bad_" + how[0], "y")
            ok = isinstance(got, str) and not got.startswith("BAD") and "batch_indices" in got
            report(ok, f"RoiAlign, a batch index out of range, {how}: {got if isinstance(got, str) else got.shape}")

print(f"{report.failures} failed")
sys.exit(1 if report.failures else 0)
