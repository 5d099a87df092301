#!/usr/bin/env python3
"""`icc verify`'s accuracy report, checked against the same numbers computed in numpy.

A small MLP (x[4,16] -> fc1 -> relu1 -> fc2 -> relu2 -> fc3 -> y[4,10]) is written twice: in
fp32, and by hand in reduced precision with the same value names: its input and weights rounded
to bf16 by Cast nodes, and fc2's input coarsely quantized (Round(4x)/4), so that fc2 is the first
node whose SQNR falls below 30 dB. `icc verify LOWP --reference=FP32 --json` (compiled, and the
interpreter for --per-node and --bisect) must report the max abs/rel error, cosine, SQNR and
top-1/top-5 agreement numpy computes from its own bf16 rounding, per output over several input
sets (worst and mean) and per node; --bisect must name fc2. The error paths of --inputs (a
missing file, a file naming no input, a shape mismatch) must fail with one line. With a real
--precision=bf16 (when the precision pass lowers anything), the per-node and bisect run on the
pass's graph.

    python3 tests/models/verify_precision.py build/icc
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from icc_run import bf16_pairs_host  # noqa: E402

failed = 0


def check(name, ok, detail=""):
    global failed
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else ": " + detail))
    failed += not ok


def bf16(a):
    """Round float32 to bfloat16 (nearest even) and back, as ir_f32_to_bf16 does."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def quant(a):
    return (np.round(a * np.float32(4)) / np.float32(4)).astype(np.float32)


rng = np.random.default_rng(7)
W1 = (rng.standard_normal((16, 32)) * 0.5).astype(np.float32)
W2 = (rng.standard_normal((32, 32)) * 0.3).astype(np.float32)
W3 = (rng.standard_normal((32, 10)) * 0.3).astype(np.float32)


def forward(x, lowp):
    q = bf16 if lowp else (lambda a: a)
    v = {}
    v["h1"] = q(x) @ q(W1)
    v["r1"] = np.maximum(v["h1"], 0)
    v["h2"] = (quant(v["r1"]) if lowp else v["r1"]) @ q(W2)
    v["r2"] = np.maximum(v["h2"], 0)
    v["y"] = q(v["r2"]) @ q(W3)
    return v


def write_models(d):
    def model(lowp):
        nodes, inits = [], []
        for n, w in (("W1", W1), ("W2", W2), ("W3", W3)):
            inits.append(numpy_helper.from_array(w, n))

        def q(name):  # name -> its bf16 rounding (new values), in the reduced model only
            if not lowp:
                return name
            nodes.append(helper.make_node("Cast", [name], [name + "_b"], name=name + "_tobf16", to=TensorProto.BFLOAT16))
            nodes.append(helper.make_node("Cast", [name + "_b"], [name + "_q"], name=name + "_tof32", to=TensorProto.FLOAT))
            return name + "_q"

        nodes.append(helper.make_node("MatMul", [q("x"), q("W1")], ["h1"], name="fc1"))
        nodes.append(helper.make_node("Relu", ["h1"], ["r1"], name="relu1"))
        r1 = "r1"
        if lowp:
            inits.append(numpy_helper.from_array(np.array(4, np.float32), "four"))
            nodes.append(helper.make_node("Mul", ["r1", "four"], ["r1_s"], name="scale"))
            nodes.append(helper.make_node("Round", ["r1_s"], ["r1_r"], name="round"))
            nodes.append(helper.make_node("Div", ["r1_r", "four"], ["r1_c"], name="unscale"))
            r1 = "r1_c"
        nodes.append(helper.make_node("MatMul", [r1, q("W2")], ["h2"], name="fc2"))
        nodes.append(helper.make_node("Relu", ["h2"], ["r2"], name="relu2"))
        nodes.append(helper.make_node("MatMul", [q("r2"), q("W3")], ["y"], name="fc3"))
        g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 10])], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        path = os.path.join(d, "mlp_lowp.onnx" if lowp else "mlp.onnx")
        onnx.save(m, path)
        return path

    return model(False), model(True)


def metrics(got, ref):
    got, ref = got.astype(np.float64).ravel(), ref.astype(np.float64).ravel()
    e = np.abs(got - ref)
    rel = np.where(ref != 0, e / np.abs(np.where(ref != 0, ref, 1)), np.where(e > 0, np.inf, 0))
    return {"max_abs": e.max(), "max_rel": rel.max(),
            "cosine": (ref @ got) / np.sqrt((ref @ ref) * (got @ got)),
            "sqnr_db": 10 * np.log10((ref @ ref) / ((ref - got) @ (ref - got)))}


def topk(got, ref):
    t1 = int((got.argmax(1) == ref.argmax(1)).sum())
    top5 = np.argsort(-got, axis=1, kind="stable")[:, :5]
    t5 = int(sum(ref.argmax(1)[r] in top5[r] for r in range(ref.shape[0])))
    return t1, t5


def icc(*args, expect=0):
    p = subprocess.run([ICC, *args], capture_output=True, text=True)
    if p.returncode != expect:
        raise AssertionError(f"icc {' '.join(args)}: exit {p.returncode}, expected {expect}\n{p.stdout}{p.stderr}")
    return p


def close(a, b, tol):
    return abs(a - b) <= tol * max(1.0, abs(b))


def main():
    global ICC
    ICC = os.path.abspath(sys.argv[1])
    tmp = tempfile.mkdtemp()
    fp32, lowp = write_models(tmp)
    sets = os.path.join(tmp, "sets")
    xs = [rng.standard_normal((4, 16)).astype(np.float32) * (1 + s) for s in range(3)]
    for s, x in enumerate(xs):
        os.makedirs(os.path.join(sets, str(s)))
        np.save(os.path.join(sets, str(s), "x.npy"), x)

    # outputs over three sets, compiled: worst and mean of each metric, top-k summed over rows
    p = icc("verify", lowp, "--reference=" + fp32, "--inputs=" + sets, "--json", expect=1)
    r = json.loads(p.stdout)
    check("--json: one line of error on stderr, exit 1 below the threshold",
          p.stderr.count("\n") == 1 and "below 30 dB" in p.stderr, p.stderr)
    out = r["outputs"][0]
    per = [metrics(forward(x, True)["y"], forward(x, False)["y"]) for x in xs]
    ok = r["sets"] == 3 and out["name"] == "y" and out["elements"] == 40 and out["sets"] == 3
    for k, tol in (("max_abs", 1e-4), ("max_rel", 1e-3), ("cosine", 1e-6), ("sqnr_db", 1e-3)):
        worst = min(m[k] for m in per) if k in ("cosine", "sqnr_db") else max(m[k] for m in per)
        mean = sum(m[k] for m in per) / 3
        ok &= close(out[k]["worst"], worst, tol) and close(out[k]["mean"], mean, tol)
        if not ok:
            print(f"  {k}: icc {out[k]}, numpy worst {worst} mean {mean}")
    t = [topk(forward(x, True)["y"], forward(x, False)["y"]) for x in xs]
    ok &= out["rows"] == 12 and out["top1"] == sum(a for a, _ in t) and out["top5"] == sum(b for _, b in t)
    check("outputs: max abs/rel error, cosine, SQNR (worst, mean) and top-1/top-5 over 3 sets match numpy", ok,
          f"icc {out}, numpy top-k {t}")
    check("the output's SQNR is below 30 dB, so it is not ok", out["ok"] is False and out["sqnr_db"]["worst"] < 30)

    # per node (interpreter) and bisect, one set
    one = os.path.join(sets, "0")
    p = icc("verify", lowp, "--reference=" + fp32, "--inputs=" + one, "--per-node", "--bisect", "--json", expect=1)
    r = json.loads(p.stdout)
    want = forward(xs[0], True), forward(xs[0], False)
    rows = {row["value"]: row for row in r["per_node"]}
    ok = [row["node"] for row in r["per_node"]] == ["fc1", "relu1", "fc2", "relu2", "fc3"]
    for v in ("h1", "r1", "h2", "r2", "y"):
        m = metrics(want[0][v], want[1][v])
        ok &= v in rows and close(rows[v]["sqnr_db"], m["sqnr_db"], 1e-3) and close(rows[v]["cosine"], m["cosine"], 1e-6)
        if not ok:
            print(f"  {v}: icc {rows.get(v)}, numpy {m}")
    check("--per-node: every named value's SQNR and cosine, topological order, match numpy", ok)
    b = r["bisect"]
    check("--bisect: names fc2, the first node below 30 dB; says it cannot keep it without --precision",
          b["threshold_db"] == 30 and b["steps"][0]["node"] == "fc2" and b["steps"][0]["value"] == "h2" and
          "no --precision" in b.get("stopped", ""), json.dumps(b))
    p = icc("verify", lowp, "--reference=" + fp32, "--inputs=" + one, "--bisect=20", "--json", expect=0)
    b = json.loads(p.stdout)["bisect"]
    check("--bisect=20: a lower threshold no node falls below", b["threshold_db"] == 20 and b["steps"] == [],
          json.dumps(b))

    # the text report
    p = icc("verify", lowp, "--reference=" + fp32, "--inputs=" + sets, "--per-node", expect=1)
    text = p.stdout
    check("text: the output line, the metrics line and the per-node table",
          "  y: 40 elements x 3 sets, max abs error" in text and "BELOW 30 dB" in text and "top-1 " in text and
          "cosine" in text and "per node: SQNR of each node's output against" in text and
          any(" fc2 " in line and "< threshold" in line for line in text.splitlines()), text)

    # the compiled model against the interpreter, with the new metrics
    p = icc("verify", fp32, "--inputs=" + sets, "--json")
    out = json.loads(p.stdout)["outputs"][0]
    check("without --precision: compiled against the interpreter, SQNR > 100 dB, ok",
          out["ok"] and out["sqnr_db"]["worst"] > 100 and out["top1"] == 12, json.dumps(out))

    # a real --precision=bf16: the pass stores fc1's and fc2's weights in bf16 and, where this
    # host's contractions multiply bf16 pairs (icc_run.bf16_pairs_host), rounds their activations
    # to bf16 (fc3, the last layer, stays fp32 by default); numpy rounds the same
    act = bf16 if bf16_pairs_host(ICC, fp32) else (lambda a: a)

    def bf16_forward(x, keep=()):
        v = {"h1": x @ W1 if "fc1" in keep else act(x) @ bf16(W1)}
        v["r1"] = np.maximum(v["h1"], 0)
        v["h2"] = v["r1"] @ W2 if "fc2" in keep else act(v["r1"]) @ bf16(W2)
        v["r2"] = np.maximum(v["h2"], 0)
        v["y"] = v["r2"] @ W3
        return v

    p = subprocess.run([ICC, "verify", fp32, "--precision=bf16", "--inputs=" + sets, "--per-node", "--json"],
                       capture_output=True, text=True)
    if "not supported yet" in p.stderr:
        print("skip --precision=bf16: the precision pass does not lower bf16 on this branch")
    else:
        r = json.loads(p.stdout)
        out = r["outputs"][0]
        per = [metrics(bf16_forward(x)["y"], forward(x, False)["y"]) for x in xs]
        ok = p.returncode == 0 and out["ok"] and r["threshold_db"] == 30 and r["precision"] == "bf16"
        ok &= close(out["sqnr_db"]["worst"], min(m["sqnr_db"] for m in per), 1e-3)
        ok &= close(out["cosine"]["worst"], min(m["cosine"] for m in per), 1e-6)
        check("--precision=bf16: the compiled bf16 output's SQNR and cosine match numpy's bf16 weights (and activations where rounded); ok at 30 dB",
              ok, f"icc {out}, numpy {per}")
        rows = {row["value"]: row for row in r["per_node"] if not row["weight"]}
        ok = [row["value"] for row in r["per_node"] if row["weight"]] == ["W1", "W2"]
        for v in ("h1", "r1", "h2", "r2", "y"):
            worst = min(metrics(bf16_forward(x)[v], forward(x, False)[v])["sqnr_db"] for x in xs)
            ok &= v in rows and close(rows[v]["sqnr_db"], worst, 1e-3)
            if not ok:
                print(f"  {v}: icc {rows.get(v)}, numpy {worst}")
        check("--precision=bf16 --per-node: the pass's graph node by node (worst of 3 sets) matches numpy", ok)
        p = icc("verify", fp32, "--precision=bf16", "--inputs=" + sets, "--bisect=60", "--json", expect=1)
        b = json.loads(p.stdout)["bisect"]
        after = b.get("outputs_after", [{}])[0]
        check("--precision=bf16 --bisect=60: keeps fc1, then fc2, and the output becomes exact",
              [s["node"] for s in b["steps"]] == ["fc1", "fc2"] and b["keep_fp32"] == "fc1,fc2" and
              after.get("sqnr_db", {}).get("worst") == float("inf") and "fixed by --keep-fp32=fc1,fc2" in p.stderr,
              json.dumps(b))
        worst = min(metrics(bf16_forward(x, ("fc1",))["h2"], forward(x, False)["h2"])["sqnr_db"] for x in xs)
        check("--bisect's second step measures the graph with fc1 kept (numpy: fc2's own rounding)",
              close(b["steps"][1]["sqnr_db"], worst, 1e-3), f"icc {b['steps'][1]}, numpy {worst}")
        # a node the pass does not lower (Mul of two lowered MatMuls) is the first below: bisect keeps the
        # lowered node it depends on with the lower SQNR, as numpy ranks them
        Wa = (rng.standard_normal((16, 16)) * 0.5).astype(np.float32)
        Wb = (rng.standard_normal((16, 16)) * 0.5).astype(np.float32)
        Wy = (rng.standard_normal((16, 10)) * 0.3).astype(np.float32)
        nodes = [helper.make_node("MatMul", ["x", "Wa"], ["a"], name="fca"),
                 helper.make_node("MatMul", ["x", "Wb"], ["b"], name="fcb"),
                 helper.make_node("Mul", ["a", "b"], ["m"], name="mul"),
                 helper.make_node("MatMul", ["m", "Wy"], ["y"], name="fcy")]
        g = helper.make_graph(nodes, "branches", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 10])],
                              [numpy_helper.from_array(w, n) for n, w in (("Wa", Wa), ("Wb", Wb), ("Wy", Wy))])
        branches = os.path.join(tmp, "branches.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), branches)
        x = xs[0]
        xb = act(x)  # the activation both contractions read, rounded once (where it is)
        sq = {"fca": metrics(xb @ bf16(Wa), x @ Wa)["sqnr_db"], "fcb": metrics(xb @ bf16(Wb), x @ Wb)["sqnr_db"],
              "mul": metrics((xb @ bf16(Wa)) * (xb @ bf16(Wb)), (x @ Wa) * (x @ Wb))["sqnr_db"]}
        thr = (sq["mul"] + min(sq["fca"], sq["fcb"])) / 2
        p = icc("verify", branches, "--precision=bf16", "--inputs=" + one, f"--bisect={thr:.4f}", "--json", expect=1)
        b = json.loads(p.stdout)["bisect"]
        want = min(("fca", "fcb"), key=lambda n: sq[n])
        check("--bisect: a node that is not lowered is first below; the lowered input with the lower SQNR is kept",
              sq["mul"] < thr < min(sq["fca"], sq["fcb"]) and b["steps"][0]["node"] == "mul" and
              b["steps"][0]["keep"] == want and b["keep_fp32"].split(",")[0] == want, f"numpy {sq}, icc {json.dumps(b)}")

        p = icc("verify", fp32, "--precision=bf16", "--keep-fp32=fc1", "--inputs=" + sets, "--bisect=60", expect=1)
        check("--bisect adds to the user's --keep-fp32", "fix: --keep-fp32=fc1,fc2\n" in p.stdout and
              "first node below 60 dB: 'fc1'" not in p.stdout, p.stdout)

    # int8-dynamic (the int8 helper's rewrite): verify's numbers against numpy's on the two libraries'
    # own outputs (icc run), and --bisect through the int8 graph
    p = subprocess.run([ICC, "verify", fp32, "--precision=int8-dynamic", "--inputs=" + one, "--per-node",
                        "--bisect=60", "--json"], capture_output=True, text=True)
    if "not supported yet" in p.stderr:
        print("skip --precision=int8-dynamic: not on this branch")
    else:
        r = json.loads(p.stdout)
        got = {}
        for prec in ("fp32", "int8-dynamic"):
            so = os.path.join(tmp, prec + ".so")
            icc(fp32, "--precision=" + prec, "-o", so)
            icc("run", so, "--input", "x=" + one + "/x.npy", "-o", os.path.join(tmp, prec))
            got[prec] = np.load(os.path.join(tmp, prec, "y.npy"))
        m = metrics(got["int8-dynamic"], got["fp32"])
        out = r["outputs"][0]
        check("--precision=int8-dynamic: SQNR, cosine, max abs of the int8 library against the fp32 one match numpy",
              close(out["sqnr_db"]["worst"], m["sqnr_db"], 1e-6) and close(out["cosine"]["worst"], m["cosine"], 1e-9)
              and close(out["max_abs"]["worst"], m["max_abs"], 1e-6), f"icc {out}, numpy {m}")
        names = [row["node"] for row in r["per_node"]]
        b = r["bisect"]
        check("--precision=int8-dynamic --per-node and --bisect=60: rows named as the fp32 nodes; fc1, fc2 kept",
              names == ["fc1", "relu1", "fc2", "relu2", "fc3"] and b["keep_fp32"] == "fc1,fc2" and
              b["outputs_after"][0]["sqnr_db"]["worst"] == float("inf"), f"{names} {json.dumps(b)}")

    # error paths: one line, exit 1
    def fails(name, args, needle):
        p = subprocess.run([ICC, "verify", *args], capture_output=True, text=True)
        ok = p.returncode == 1 and p.stderr.count("\n") == 1 and p.stderr.startswith("icc: error: ") and needle in p.stderr
        check(name, ok, f"exit {p.returncode}: {p.stderr.strip()}")

    bad = os.path.join(tmp, "bad")
    for sub, files in (("missing", {}), ("wrongname", {"z.npy": xs[0]}), ("shape", {"x.npy": xs[0][:2]})):
        os.makedirs(os.path.join(bad, sub))
        for f, a in files.items():
            np.save(os.path.join(bad, sub, f), a)
    fails("--inputs: a set without a file for an input", [fp32, "--inputs=" + bad + "/missing"],
          "missing: no x.npy for the model's input 'x'")
    fails("--inputs: a file naming no input", [fp32, "--inputs=" + bad + "/wrongname"],
          "z.npy: the model has no input named 'z' (its inputs: x)")
    fails("--inputs: a shape mismatch", [fp32, "--inputs=" + bad + "/shape"],
          "x.npy: input 'x' is f32[4,16], the file holds f32[2,16]")
    fails("--inputs: no such folder", [fp32, "--inputs=" + bad + "/nope"], "nope: No such file or directory")
    fails("--per-node needs a second precision", [fp32, "--per-node"], "--per-node and --bisect compare two precisions")
    fails("--bisect=DB needs a number", [fp32, "--bisect=x"], "--bisect=DB needs a number")
    fails("--input and --inputs together", [fp32, "--inputs=" + sets, "--input", "x=" + one + "/x.npy"], "not both")
    fails("--reference that is not there", [lowp, "--reference=" + tmp + "/none.onnx"], "none.onnx")

    print(f"{'FAILED' if failed else 'passed'}: verify_precision")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
