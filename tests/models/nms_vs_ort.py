#!/usr/bin/env python3
"""NonMaxSuppression through icc's interpreter against ONNX Runtime, on
random boxes (both box formats, corners in either order, duplicated boxes
and scores for the tie rules, thresholds given or absent, several batches
and classes), beyond the ONNX node tests. The op is interpreted only (its
result length depends on the values); compiling it is refused in one line.

    python3 tests/models/nms_vs_ort.py build/icc
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as P, helper as h

ICC = os.path.abspath(sys.argv[1])
TMP = tempfile.mkdtemp(prefix="icc-nms-")
failures = 0


def case(i, B, C, N, center, max_out, iou, score):
    rng = np.random.default_rng(i)
    xy = rng.random((B, N, 2)).astype(np.float32) * 10
    wh = rng.random((B, N, 2)).astype(np.float32) * 4
    boxes = np.concatenate([xy, wh], 2) if center else np.concatenate([xy, xy + wh * rng.choice([-1, 1], (B, N, 2))], 2)
    boxes = boxes.astype(np.float32)
    boxes[:, N // 2] = boxes[:, 0]                       # a duplicate box
    scores = rng.random((B, C, N)).astype(np.float32)
    if N > 2:
        scores[:, :, 1] = scores[:, :, 2]                # a tie
    names, feeds, vi = ["boxes", "scores"], {"boxes": boxes, "scores": scores}, []
    for nm, v, dt in (("max_out", max_out, np.int64), ("iou", iou, np.float32), ("score", score, np.float32)):
        if v is None:
            names.append("")
            continue
        names.append(nm)
        feeds[nm] = np.array([v], dt)
    while names[-1] == "":
        names.pop()
    for k, v in feeds.items():
        vi.append(h.make_tensor_value_info(k, P.INT64 if v.dtype == np.int64 else P.FLOAT, list(v.shape)))
    node = h.make_node("NonMaxSuppression", names, ["sel"], name="nms", center_point_box=center)
    g = h.make_graph([node], "g", vi, [h.make_tensor_value_info("sel", P.INT64, None)])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 11)])
    m.ir_version = 7
    path = f"{TMP}/nms{i}.onnx"
    onnx.save(m, path)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    args = []
    for k, v in feeds.items():
        np.save(f"{TMP}/{i}_{k}.npy", v)
        args.append(f"--input={k}={TMP}/{i}_{k}.npy")
    r = subprocess.run([ICC, "run", path, *args, "-o", f"{TMP}/out{i}"], capture_output=True, text=True)
    got = np.load(f"{TMP}/out{i}/sel.npy") if r.returncode == 0 else r.stderr.strip()
    ok = not isinstance(got, str) and got.shape == want.shape and np.array_equal(got, want)
    return ok, f"B={B} C={C} N={N} center={center} max={max_out} iou={iou} score={score}: " + (
        f"{len(want)} selected" if ok else f"icc {got}, ORT {want.tolist()}")


CASES = [(1, 1, 8, 0, 3, 0.5, None), (2, 3, 20, 0, 5, 0.3, 0.2), (1, 2, 30, 1, 10, 0.4, 0.5),
         (3, 1, 16, 1, 100, 0.0, None), (1, 1, 12, 0, None, None, None), (2, 2, 25, 0, 4, 0.7, 0.95),
         (1, 4, 40, 1, 6, 0.2, 0.1), (2, 1, 1, 0, 1, 0.5, 0.0)]
for i, c in enumerate(CASES):
    ok, msg = case(i, *c)
    failures += not ok
    print(("ok   " if ok else "FAIL ") + msg)
r = subprocess.run([ICC, f"{TMP}/nms0.onnx", "-o", f"{TMP}/nms0.so"], capture_output=True, text=True)
lines = r.stderr.strip().splitlines()
ok = r.returncode == 1 and len(lines) == 1 and "NonMaxSuppression" in lines[0] and not os.path.exists(f"{TMP}/nms0.so")
failures += not ok
print(("ok   " if ok else "FAIL ") + "compiling is refused: " + (lines[0] if lines else "(no message)"))
print(f"{failures} failed")
sys.exit(1 if failures else 0)
