#!/usr/bin/env python3
"""RoiAlign through icc's interpreter against ONNX Runtime on random maps
and regions (avg and max, half_pixel and output_half_pixel, sampling_ratio
0 and 2, a spatial scale, regions past the map's edge, several batch
items), beyond the three ONNX node tests. Interpreted only: compiling it
is refused in one line.

    python3 tests/models/roialign_vs_ort.py build/icc
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as P, helper as h

ort.set_default_logger_severity(3)  # its warning that its max mode differs from earlier releases

ICC = os.path.abspath(sys.argv[1])
TMP = tempfile.mkdtemp(prefix="icc-roialign-")
failures = 0
CASES = [dict(mode="avg", coordinate_transformation_mode="half_pixel", output_height=3, output_width=4),
         dict(mode="max", coordinate_transformation_mode="half_pixel", output_height=2, output_width=2, sampling_ratio=2),
         dict(mode="avg", coordinate_transformation_mode="output_half_pixel", output_height=5, output_width=3,
              spatial_scale=0.5),
         dict(mode="max", coordinate_transformation_mode="output_half_pixel", output_height=4, output_width=4,
              sampling_ratio=0, spatial_scale=0.25)]
for i, attrs in enumerate(CASES):
    rng = np.random.default_rng(i)
    N, C, H, W, R = 2, 3, 9, 11, 5
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    lo = rng.random((R, 2)) * 12 - 2
    rois = np.concatenate([lo, lo + rng.random((R, 2)) * 8], 1).astype(np.float32) / attrs.get("spatial_scale", 1)
    bi = rng.integers(0, N, (R,)).astype(np.int64)
    node = h.make_node("RoiAlign", ["x", "rois", "bi"], ["y"], name="roi", **attrs)
    g = h.make_graph([node], "g", [h.make_tensor_value_info("x", P.FLOAT, list(x.shape)),
                                   h.make_tensor_value_info("rois", P.FLOAT, [R, 4]),
                                   h.make_tensor_value_info("bi", P.INT64, [R])],
                     [h.make_tensor_value_info("y", P.FLOAT, None)])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 16)])
    m.ir_version = 8
    path = f"{TMP}/roi{i}.onnx"
    onnx.save(m, path)
    feeds = {"x": x, "rois": rois, "bi": bi}
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    args = []
    for k, v in feeds.items():
        np.save(f"{TMP}/{i}_{k}.npy", v)
        args.append(f"--input={k}={TMP}/{i}_{k}.npy")
    r = subprocess.run([ICC, "run", path, *args, "-o", f"{TMP}/out{i}"], capture_output=True, text=True)
    if r.returncode:
        ok, msg = False, r.stderr.strip()
    else:
        got = np.load(f"{TMP}/out{i}/y.npy")
        ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-5)
        msg = f"max abs {np.max(np.abs(got - want)):.2e}" if got.shape == want.shape else f"shape {got.shape}"
    failures += not ok
    print(("ok   " if ok else "FAIL ") + f"{attrs}: {msg}")
r = subprocess.run([ICC, f"{TMP}/roi0.onnx", "-o", f"{TMP}/roi0.so"], capture_output=True, text=True)
lines = r.stderr.strip().splitlines()
ok = r.returncode == 1 and len(lines) == 1 and "RoiAlign" in lines[0] and not os.path.exists(f"{TMP}/roi0.so")
failures += not ok
print(("ok   " if ok else "FAIL ") + "compiling is refused: " + (lines[0] if lines else "(no message)"))
print(f"{failures} failed")
sys.exit(1 if failures else 0)
