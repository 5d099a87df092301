#!/usr/bin/env python3
"""The onnx package's light_* models, compiled by icc, against ONNX Runtime.

Each model is compiled (`icc MODEL --shape=...(symbolic dims pinned to 1) -o
X.so`), run through the runtime (`icc run X.so`), and its output compared with
ONNX Runtime's on the same input (the pattern ONNX's test runner feeds:
arange(n)/n in float32), with rtol 1e-4 and atol 1e-5. Prints one line per
model with the max abs/rel error; exits 1 if any model fails.

    python3 tests/models/compiled_vs_ort.py build/icc [FILTER ...]
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

ort.set_default_logger_severity(3)
LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/light")
RTOL, ATOL = 1e-4, 1e-5


def main():
    icc = os.path.abspath(sys.argv[1])
    filters = sys.argv[2:]
    tmp = tempfile.mkdtemp()
    failed = 0
    for f in sorted(os.listdir(LIGHT)):
        if not f.endswith(".onnx") or (filters and not any(s in f for s in filters)):
            continue
        path = os.path.join(LIGHT, f)
        name = f[:-5]
        m = onnx.load(path, load_external_data=False)
        inits = {i.name for i in m.graph.initializer}
        inp = [i for i in m.graph.input if i.name not in inits][0]
        dims = [d.dim_value if d.HasField("dim_value") else 1 for d in inp.type.tensor_type.shape.dim]
        n = int(np.prod(dims))
        x = (np.arange(n, dtype=np.float64) / n).astype(np.float32).reshape(dims)
        xf = os.path.join(tmp, name + "_x.npy")
        np.save(xf, x)
        so = os.path.join(tmp, name + ".so")
        shape = "--shape=%s:%s" % (inp.name, "x".join(str(d) for d in dims))
        r = subprocess.run([icc, path, shape, "-o", so], capture_output=True, text=True)
        if r.returncode == 0:
            r = subprocess.run([icc, "run", so, "--input", "%s=%s" % (inp.name, xf), "-o", os.path.join(tmp, name)],
                               capture_output=True, text=True)
        if r.returncode:
            print("FAIL %s: %s" % (name, r.stderr.strip()))
            failed += 1
            continue
        out = m.graph.output[0].name
        safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in out)
        got = np.load(os.path.join(tmp, name, safe + ".npy"))
        want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {inp.name: x})[0]
        err = np.abs(got.astype(np.float64) - want)
        rel = float((err / np.maximum(np.abs(want), 1e-30)).max())
        ok = got.shape == want.shape and np.allclose(got, want, rtol=RTOL, atol=ATOL)
        print("%s %s: max abs error %.3g, max rel error %.3g" % ("ok  " if ok else "FAIL", name, err.max(), rel))
        failed += not ok
    print("%s" % ("all light models match ONNX Runtime (rtol %g, atol %g)" % (RTOL, ATOL) if not failed
                  else "%d model(s) failed" % failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
