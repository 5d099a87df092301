#!/usr/bin/env python3
"""bf16/fp16 weights (--precision, docs/precision.md) on real models.

For each model (the onnx package's light_* models and the BERT-base layer that
tests/models/make_bert_layer.py writes), at each of bf16 and fp16:
  - the compiled model matches the interpreter running the same reduced-precision
    graph (`icc run MODEL --passes=<-O2 up to precision> --precision=P`: the
    weights folded and rounded the same way, so only the summation order
    differs): max error / max |output| <= 1e-4 (fp16), 1e-2 (bf16, whose MatMul
    and Attention activations are rounded too: see REL_BY);
  - it agrees with the compiled fp32 model: cosine similarity >= 0.999;
  - the weights it stores narrow take at most 0.55x the bytes of the f32 weights
    they replace (the precision pass's --stats); the .so sizes are printed: a
    light model's fp32 .so computes its ConstantOfShape weights when opened, so
    its reduced-precision .so, which stores them evaluated, is the larger file
    while the weight memory at run time halves.
Inputs are what ONNX's test runner feeds light models: arange(n)/n in f32. A
closing Softmax is dropped and its input (the logits) compared: with the light
models' synthetic weights the probabilities are all but uniform.
Default keep list off (--no-default-keep), so every contraction is lowered.

    python3 tests/models/precision_half.py build/icc [--no-oracle] [FILTER ...]

FILTER picks models by substring (default: bert_layer squeezenet shufflenet
inception_v1 resnet50); --no-oracle skips the interpreter (slow on big models).
Exits 1 if any check fails.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/light")
DEFAULT = ["bert_layer", "squeezenet", "shufflenet", "inception_v1", "resnet50"]
REL, COS = 1e-4, 0.999
# bf16 rounds MatMul's activations too: a value the two sides compute in a
# different order may round to the neighbouring bf16 (2^-8 relative apart)
# before the next contraction, so a few outputs move by a bf16 step times
# their weight's share; an Attention's Q, K and V are rounded too, and a flip
# there moves scores that the softmax exponentiates, and the AMX attention
# kernel rounds the probabilities to bf16 for P·V (2^-9 relative): 1e-2 bounds
# that (the BERT layer: 3.9e-3 with the f32 attention kernel for x86-64-v3,
# 6.2e-3 with the AMX one; a wrong kernel is off by O(1))
REL_BY = {"bf16": 1e-2, "fp16": REL}
# -O2 up to the precision pass: the interpreter then runs the graph the
# compiled model was made from (weights folded, then rounded, the same way;
# the attention pass among them, so the fused Attention's inputs are rounded
# as the compiled model rounds them).
ORACLE = "shape-infer,simplify,fold,fold-bn,attention,recognize,simplify,cse,dce,precision"


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError("%s: %s" % (" ".join(os.path.basename(c) for c in cmd[:2]), r.stderr.strip()))
    return r.stdout


def weight_bytes(stderr):
    """(before, after) from the precision pass's --stats line."""
    for line in stderr.splitlines():
        if line.startswith("# precision:") and "weight bytes before" in line:
            before = int(line.split(" weight bytes before")[0].rsplit(",", 1)[-1].split()[-1])
            after = int(line.split(" weight bytes after")[0].rsplit(",", 1)[-1].split()[-1])
            return before, after
    return None


def logits(path, tmp, name):
    """The model without a closing Softmax (its outputs are near-uniform for
    the light models' synthetic weights, so a cosine there says nothing)."""
    m = onnx.load(path)
    last = m.graph.node[-1]
    if last.op_type != "Softmax" or last.output[0] != m.graph.output[0].name:
        return path
    m.graph.node.remove(last)
    del m.graph.output[:]
    m.graph.output.append(onnx.ValueInfoProto(name=last.input[0]))
    out = os.path.join(tmp, name + "_logits.onnx")
    onnx.save(m, out)
    return out


def inputs(path, tmp, name):
    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    args, shapes = [], []
    for inp in m.graph.input:
        if inp.name in inits:
            continue
        dims = [d.dim_value if d.HasField("dim_value") else 1 for d in inp.type.tensor_type.shape.dim]
        n = int(np.prod(dims))
        f = os.path.join(tmp, "%s_%s.npy" % (name, len(args)))
        np.save(f, (np.arange(n, dtype=np.float64) / n).astype(np.float32).reshape(dims))
        args += ["--input", "%s=%s" % (inp.name, f)]
        shapes.append("--shape=%s:%s" % (inp.name, "x".join(str(d) for d in dims)))
    out = m.graph.output[0].name
    return args, shapes, "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in out)


def main():
    icc = os.path.abspath(sys.argv[1])
    oracle = "--no-oracle" not in sys.argv
    filters = [a for a in sys.argv[2:] if a != "--no-oracle"] or DEFAULT
    tmp = tempfile.mkdtemp()
    models = [(f[:-5], os.path.join(LIGHT, f)) for f in sorted(os.listdir(LIGHT)) if f.endswith(".onnx")]
    if any(s in "bert_layer" for s in filters):
        run([sys.executable, os.path.join(HERE, "make_bert_layer.py"), tmp, "--seq", "128"])
        models.insert(0, ("bert_layer", os.path.join(tmp, "bert_layer.onnx")))
    failed = 0
    for name, path in models:
        if not any(s in name for s in filters):
            continue
        try:
            path = logits(path, tmp, name)
            args, shapes, out = inputs(path, tmp, name)
            res, size, wb = {}, {}, {}
            for p in ["fp32", "bf16", "fp16"]:
                so = os.path.join(tmp, "%s_%s.so" % (name, p))
                r = subprocess.run([icc, path, "--precision=" + p, "--no-default-keep", "--stats", "-o", so] + shapes,
                                   capture_output=True, text=True)
                if r.returncode:
                    raise RuntimeError("icc %s: %s" % (p, r.stderr.strip()[-300:]))
                size[p] = os.path.getsize(so)
                wb[p] = weight_bytes(r.stderr)
                run([icc, "run", so, "-o", os.path.join(tmp, name + p)] + args)
                res[p] = np.load(os.path.join(tmp, name + p, out + ".npy")).astype(np.float64)
            for p in ["bf16", "fp16"]:
                g, f = res[p].ravel(), res["fp32"].ravel()
                cos = float(g @ f / (np.linalg.norm(g) * np.linalg.norm(f)))
                before, after = wb[p] or (0, 0)
                line = "%s %-6s weights %6.2f MB of f32 stored in %6.2f MB (%.2fx); .so %6.2f MB vs fp32 %6.2f MB; " \
                       "cosine vs fp32 %.6f" % (name, p, before / 1e6, after / 1e6, after / max(before, 1),
                                                size[p] / 1e6, size["fp32"] / 1e6, cos)
                ok = cos >= COS and before > 0 and after <= 0.55 * before
                if oracle:
                    d = os.path.join(tmp, name + p + "_ref")
                    run([icc, "run", path, "--passes=" + ORACLE, "--precision=" + p, "--no-default-keep", "-o", d] +
                        args + shapes)
                    want = np.load(os.path.join(d, out + ".npy")).astype(np.float64)
                    rel = float(np.abs(res[p] - want).max() / max(np.abs(want).max(), 1e-30))
                    line += "; vs the interpreter's %s graph %.2g" % (p, rel)
                    ok = ok and rel <= REL_BY[p]
                print("%s %s" % ("ok  " if ok else "FAIL", line), flush=True)
                failed += not ok
        except RuntimeError as e:
            print("FAIL %s: %s" % (name, e), flush=True)
            failed += 1
    print("all passed" if not failed else "%d check(s) failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
