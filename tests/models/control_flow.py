#!/usr/bin/env python3
"""Control flow (If, Loop) end to end, against ONNX Runtime.

A voice-activity-detector-shaped model: a top-level If on `sr == 16000` (sr
an int64 input) whose branches hold Conv, MatMul and Sigmoid, read the
model's weights and state input from the outer scope, and each hold a
nested If whose condition also depends on sr. It runs through the
interpreter for three rates; compiled with --bind=sr=F.npy every If folds
away (fold-if), and compiled without the bind (at -O0, -O2, -O3) the Ifs
are compiled and the run takes the branches; each .so must match ONNX
Runtime. A second If passes on a captured input and a constant in one
branch and one computed value twice in the other (the copies), for both
conditions; an If whose branches give different shapes must be refused
in one line naming it.

A Scan over non-default axes and directions (two scan inputs, two scan
outputs, reversed ones) checks the slicing and stacking, interpreted and
compiled at -O0, -O2, -O3; an RNN cell as a Scan with captured weights too.
Loops with scan outputs compile when the trip count is a constant (an
initializer, or the RNN's trip count bound with --bind) and the body passes
its condition on: for 4, 1, 0 and -2 trips, and the RNN for 5 and 2 steps;
one whose body computes its condition is refused, saying it may stop early.
`icc bench --profile` names a body's kernels with their path and counts
them once per iteration.

An If whose branches read outer initializers as Reshape's shape, Slice's
starts and ends and Unsqueeze's axes compiles (a captured small integer
constant becomes the subgraph's own), for both conditions.

A Loop model runs a small RNN cell over a sequence (the trip count an
input, the input slice taken with Gather of the iteration number) with a
running sum as second carried value and the hidden states as a scan
output, through the interpreter; compiled, its scan output must be
refused while the model does not declare its length; declared (5 rows),
the compiled Loop must match ONNX Runtime for 5 steps and fail in one line
for 3 and 8 (the interpreter gives 3 and 8 rows); without the scan output
the compiled Loop must match ONNX Runtime for 5, 1, 0 and -1 steps. A while loop (no trip count, the body computes the
condition) is compiled and checked for conditions that stop it at once,
after a few iterations and never at the start.

Everything at rtol 1e-4, atol 1e-5.

    python3 tests/models/control_flow.py build/icc
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as P, helper as h, numpy_helper as nh

from icc_run import run_feed

ort.set_default_logger_severity(3)
OPSET = [h.make_opsetid("", 17)]


def vi(name, dt, shape):
    return h.make_tensor_value_info(name, dt, shape)


def const(name, value):
    return h.make_node("Constant", [], [name], value=nh.from_array(np.asarray(value), name))


def nested_if(name, cmp_op, rate, x, then_op, else_op, out):
    """An If on (sr CMP rate) inside a branch: sr and x come from outside."""
    t = h.make_graph([h.make_node(then_op, [x], [name + "_t"])], name + "_then", [],
                     [vi(name + "_t", P.FLOAT, [1, 16])])
    e = h.make_graph([h.make_node(else_op, [x], [name + "_e"])], name + "_else", [],
                     [vi(name + "_e", P.FLOAT, [1, 16])])
    return [const(name + "_rate", np.int64(rate)),
            h.make_node(cmp_op, ["sr", name + "_rate"], [name + "_c"]),
            h.make_node("If", [name + "_c"], [out], name=name, then_branch=t, else_branch=e)]


def vad(path):
    r = np.random.default_rng(0)
    w = lambda name, *shape: nh.from_array((r.standard_normal(shape) * 0.3).astype(np.float32), name)
    inits = [w("w16", 8, 1, 5), w("b16", 8), w("W16", 240, 16), w("w8", 8, 1, 3), w("W8", 8, 16),
             w("Wo", 16, 1), nh.from_array(np.array([1, 240], np.int64), "flat")]
    # 16 kHz: strided Conv, flatten, MatMul, state added, nested If on sr > 12000.
    then_nodes = [
        h.make_node("Conv", ["x", "w16", "b16"], ["c16"], strides=[2]),
        h.make_node("Reshape", ["c16", "flat"], ["f16"]),
        h.make_node("MatMul", ["f16", "W16"], ["m16"]),
        h.make_node("Add", ["m16", "h"], ["s16"]),
        *nested_if("hi", "Greater", 12000, "s16", "Tanh", "Relu", "t16"),
        h.make_node("MatMul", ["t16", "Wo"], ["z16"]),
        h.make_node("Sigmoid", ["z16"], ["p16"]),
    ]
    then_g = h.make_graph(then_nodes, "sr16k", [], [vi("p16", P.FLOAT, [1, 1]), vi("t16", P.FLOAT, [1, 16])])
    # 8 kHz: padded Conv, mean over time, MatMul, nested If on sr < 4000.
    else_nodes = [
        h.make_node("Conv", ["x", "w8"], ["c8"], pads=[1, 1]),
        h.make_node("ReduceMean", ["c8"], ["r8"], axes=[2], keepdims=0),
        h.make_node("MatMul", ["r8", "W8"], ["m8"]),
        h.make_node("Add", ["m8", "h"], ["s8"]),
        *nested_if("lo", "Less", 4000, "s8", "Neg", "Sigmoid", "t8"),
        h.make_node("MatMul", ["t8", "Wo"], ["z8"]),
        h.make_node("Sigmoid", ["z8"], ["p8"]),
    ]
    else_g = h.make_graph(else_nodes, "sr8k", [], [vi("p8", P.FLOAT, [1, 1]), vi("t8", P.FLOAT, [1, 16])])
    nodes = [const("k16", np.int64(16000)),
             h.make_node("Equal", ["sr", "k16"], ["is16"]),
             h.make_node("If", ["is16"], ["prob", "state"], name="rate", then_branch=then_g,
                         else_branch=else_g)]
    g = h.make_graph(nodes, "vad",
                     [vi("x", P.FLOAT, [1, 1, 64]), vi("sr", P.INT64, []), vi("h", P.FLOAT, [1, 16])],
                     [vi("prob", P.FLOAT, [1, 1]), vi("state", P.FLOAT, [1, 16])], inits)
    onnx.save(h.make_model(g, opset_imports=OPSET), path)


def rnn_loop(path, scan=True, hs_shape=None):
    """With scan=False the hidden states are not stacked (carried values
    only), and the Unsqueeze axes are the body's own constant; hs_shape:
    the stacked states' declared shape."""
    r = np.random.default_rng(1)
    w = lambda name, *shape: nh.from_array((r.standard_normal(shape) * 0.4).astype(np.float32), name)
    inits = [w("Wx", 4, 8), w("Wh", 8, 8), w("b", 8), nh.from_array(np.array([0], np.int64), "ax0")]
    nodes = [
        h.make_node("Gather", ["xs", "i"], ["xt"], axis=0),
        h.make_node("Unsqueeze", ["xt", "ax0"], ["x1"]),
        h.make_node("MatMul", ["x1", "Wx"], ["a"]),
        h.make_node("MatMul", ["hp", "Wh"], ["bh"]),
        h.make_node("Add", ["a", "bh"], ["ab"]),
        h.make_node("Add", ["ab", "b"], ["pre"]),
        h.make_node("Tanh", ["pre"], ["hn"]),
        h.make_node("ReduceSum", ["hn"], ["hs"], keepdims=0),
        h.make_node("Add", ["accp", "hs"], ["accn"]),
        h.make_node("Identity", ["cond"], ["cond_out"]),
    ]
    outs = [vi("cond_out", P.BOOL, []), vi("hn", P.FLOAT, [1, 8]), vi("accn", P.FLOAT, [])]
    if scan:
        nodes.append(h.make_node("Identity", ["hn"], ["hscan"]))
        outs.append(vi("hscan", P.FLOAT, [1, 8]))
    body = h.make_graph(nodes, "cell", [vi("i", P.INT64, []), vi("cond", P.BOOL, []), vi("hp", P.FLOAT, [1, 8]),
                                        vi("accp", P.FLOAT, [])], outs,
                        [] if scan else [nh.from_array(np.array([0], np.int64), "ax0")])
    nodes = [const("true", np.bool_(True)),
             h.make_node("Loop", ["T", "true", "h0", "acc0"], ["hT", "acc"] + (["hs"] if scan else []), name="rnn",
                         body=body)]
    g = h.make_graph(nodes, "rnn",
                     [vi("T", P.INT64, []), vi("xs", P.FLOAT, ["S", 4]), vi("h0", P.FLOAT, [1, 8]),
                      vi("acc0", P.FLOAT, [])],
                     [vi("hT", P.FLOAT, [1, 8]), vi("acc", P.FLOAT, [])] + ([vi("hs", P.FLOAT, hs_shape)] if scan else []),
                     inits if scan else inits[:3])
    onnx.save(h.make_model(g, opset_imports=OPSET), path)


def while_loop(path):
    """A Loop with no trip count that doubles x until its sum passes a
    limit: the body computes the condition, and the loop may run any
    number of times, none when the condition starts false."""
    body = h.make_graph([h.make_node("Mul", ["x_in", "two"], ["x_out"]),
                         h.make_node("ReduceSum", ["x_out"], ["tot"], keepdims=0),
                         h.make_node("Less", ["tot", "limit"], ["c_out"])],
                        "double", [vi("i", P.INT64, []), vi("c_in", P.BOOL, []), vi("x_in", P.FLOAT, [2, 2])],
                        [vi("c_out", P.BOOL, []), vi("x_out", P.FLOAT, [2, 2])],
                        [h.make_tensor("two", P.FLOAT, [], [2.0])])
    g = h.make_graph([h.make_node("Loop", ["", "go", "x0"], ["x"], name="double", body=body)], "while",
                     [vi("go", P.BOOL, []), vi("x0", P.FLOAT, [2, 2]), vi("limit", P.FLOAT, [])],
                     [vi("x", P.FLOAT, [2, 2])])
    onnx.save(h.make_model(g, opset_imports=OPSET), path)


def passthrough_if(path):
    """An If on a bool input whose then branch returns a copy of a captured
    input and one of its constants (copied into the If's output, not
    computed) and whose else branch returns one computed value twice (the
    second a copy); its results feed a node after the If."""
    t = h.make_graph([h.make_node("Identity", ["x"], ["xi"])], "pass", [],
                     [vi("xi", P.FLOAT, [2, 3]), vi("k", P.FLOAT, [2, 3])],
                     [nh.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "k")])
    e = h.make_graph([h.make_node("Neg", ["x"], ["nx"])], "neg", [],
                     [vi("nx", P.FLOAT, [2, 3]), vi("nx", P.FLOAT, [2, 3])])
    nodes = [h.make_node("If", ["c"], ["a", "b"], name="pick", then_branch=t, else_branch=e),
             h.make_node("Mul", ["a", "b"], ["y"])]
    g = h.make_graph(nodes, "passthrough", [vi("c", P.BOOL, []), vi("x", P.FLOAT, [2, 3])],
                     [vi("y", P.FLOAT, [2, 3]), vi("a", P.FLOAT, [2, 3])])
    onnx.save(h.make_model(g, opset_imports=OPSET), path)


def ragged_if(path):
    """An If whose branches give outputs of different shapes: compiled
    programs have fixed buffers, so icc must refuse it, naming the If."""
    t = h.make_graph([h.make_node("Slice", ["x", "s0", "e2"], ["t"])], "two", [], [vi("t", P.FLOAT, [2])])
    e = h.make_graph([h.make_node("Identity", ["x"], ["u"])], "all", [], [vi("u", P.FLOAT, [3])])
    g = h.make_graph([h.make_node("If", ["c"], ["y"], name="ragged", then_branch=t, else_branch=e)], "ragged",
                     [vi("c", P.BOOL, []), vi("x", P.FLOAT, [3])], [vi("y", P.FLOAT, None)],
                     [nh.from_array(np.array([0], np.int64), "s0"), nh.from_array(np.array([2], np.int64), "e2")])
    onnx.save(h.make_model(g, opset_imports=OPSET), path)


def unknown_if(path):
    """An If whose branches both give [?, 1]: each Reshapes x by the values of
    the shape input (unknown until a run), as a VAD's If on its sample rate
    gives a dim shape inference cannot know; icc must refuse it, saying the
    dim is unknown rather than printing two equal types as different."""
    t = h.make_graph([h.make_node("Reshape", ["x", "s"], ["t"])], "one", [], [vi("t", P.FLOAT, None)])
    e = h.make_graph([h.make_node("Neg", ["x"], ["xn"]), h.make_node("Reshape", ["xn", "s"], ["u"])], "two", [],
                     [vi("u", P.FLOAT, None)])
    g = h.make_graph([h.make_node("If", ["c"], ["y"], name="unknown", then_branch=t, else_branch=e)], "unknown",
                     [vi("c", P.BOOL, []), vi("x", P.FLOAT, [6]), vi("s", P.INT64, [2])], [vi("y", P.FLOAT, None)])
    onnx.save(h.make_model(g, opset_imports=OPSET), path)


def captured_if(path):
    """An If whose branches read outer initializers as attributes: Reshape's
    shape and Slice's starts, ends and axes in one, ReduceMax's and
    Unsqueeze's axes in the other."""
    t = h.make_graph([h.make_node("Reshape", ["x", "shape"], ["r"]),
                      h.make_node("Slice", ["r", "st", "en", "ax"], ["tt"])], "reshape", [], [vi("tt", P.FLOAT, [2, 1, 3])])
    e = h.make_graph([h.make_node("ReduceMax", ["x", "ax"], ["m"], keepdims=0),
                      h.make_node("Unsqueeze", ["m", "ax"], ["ee"])], "unsqueeze", [], [vi("ee", P.FLOAT, [2, 1, 3])])
    g = h.make_graph([h.make_node("If", ["c"], ["y"], name="shapes", then_branch=t, else_branch=e)], "captured",
                     [vi("c", P.BOOL, []), vi("x", P.FLOAT, [2, 2, 3])], [vi("y", P.FLOAT, [2, 1, 3])],
                     [nh.from_array(np.array([2, 2, 3], np.int64), "shape"), nh.from_array(np.array([1], np.int64), "st"),
                      nh.from_array(np.array([2], np.int64), "en"), nh.from_array(np.array([1], np.int64), "ax")])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 18)]), path)


def refused(icc, model, t, want):
    """icc refuses model with exit 1 and one line containing want."""
    r = subprocess.run([icc, model, "-o", t + "/refused.so"], capture_output=True, text=True, timeout=120)
    msg = r.stderr.strip()
    return r.returncode == 1 and want in msg and len(msg.splitlines()) == 1, msg


def scan_axes(path):
    """Scan over axis 1 of one input (reversed) and axis 0 of another, a
    running state, and two scan outputs: one stacked along axis 1, one along
    axis 0 in reverse."""
    body = h.make_graph([
        h.make_node("Add", ["s", "a"], ["s1"]),
        h.make_node("Mul", ["s1", "b"], ["s2"]),
        h.make_node("Identity", ["s2"], ["o1"]),
        h.make_node("Sub", ["a", "b"], ["o2"]),
    ], "step", [vi("s", P.FLOAT, [3]), vi("a", P.FLOAT, [3]), vi("b", P.FLOAT, [3])],
        [vi("s2", P.FLOAT, [3]), vi("o1", P.FLOAT, [3]), vi("o2", P.FLOAT, [3])])
    n = h.make_node("Scan", ["s0", "A", "B"], ["sT", "O1", "O2"], name="scan", body=body, num_scan_inputs=2,
                    scan_input_axes=[1, 0], scan_input_directions=[1, 0], scan_output_axes=[1, 0],
                    scan_output_directions=[0, 1])
    g = h.make_graph([n], "scan", [vi("s0", P.FLOAT, [3]), vi("A", P.FLOAT, [3, 4]), vi("B", P.FLOAT, [4, 3])],
                     [vi("sT", P.FLOAT, [3]), vi("O1", P.FLOAT, [3, 4]), vi("O2", P.FLOAT, [4, 3])])
    onnx.save(h.make_model(g, opset_imports=OPSET), path)


def scan_rnn(path):
    """An RNN cell as a Scan over axis 0 of one input, its weights captured
    from the outer scope, the hidden state carried and stacked."""
    r = np.random.default_rng(3)
    w = lambda name, *shape: nh.from_array((r.standard_normal(shape) * 0.4).astype(np.float32), name)
    body = h.make_graph([
        h.make_node("MatMul", ["xt", "Wx"], ["a"]),
        h.make_node("MatMul", ["hp", "Wh"], ["bh"]),
        h.make_node("Add", ["a", "bh"], ["ab"]),
        h.make_node("Tanh", ["ab"], ["hn"]),
        h.make_node("Identity", ["hn"], ["ho"]),
    ], "cell", [vi("hp", P.FLOAT, [1, 8]), vi("xt", P.FLOAT, [1, 4])],
        [vi("hn", P.FLOAT, [1, 8]), vi("ho", P.FLOAT, [1, 8])])
    n = h.make_node("Scan", ["h0", "xs"], ["hT", "hs"], name="scan_rnn", body=body, num_scan_inputs=1)
    g = h.make_graph([n, h.make_node("Relu", ["hs"], ["y"])], "scan_rnn",
                     [vi("h0", P.FLOAT, [1, 8]), vi("xs", P.FLOAT, [6, 1, 4])],
                     [vi("hT", P.FLOAT, [1, 8]), vi("y", P.FLOAT, [6, 1, 8])], [w("Wx", 4, 8), w("Wh", 8, 8)])
    onnx.save(h.make_model(g, opset_imports=OPSET), path)


def const_loop(path, trips, early=False):
    """A Loop of a constant trip count with a carried value and two scan
    outputs (one a body input passed on); with early, the body computes its
    condition, so the loop may stop before the trip count."""
    nodes = [h.make_node("Add", ["x_in", "xs"], ["x_out"]),
             h.make_node("Cast", ["i"], ["fi"], to=P.FLOAT),
             h.make_node("Mul", ["x_out", "fi"], ["sc"])]
    if early:
        nodes += [h.make_node("ReduceSum", ["x_out"], ["tot"], keepdims=0),
                  h.make_node("Less", ["tot", "lim"], ["c_out"])]
    else:
        nodes.append(h.make_node("Identity", ["c_in"], ["c_out"]))
    body = h.make_graph(nodes, "body", [vi("i", P.INT64, []), vi("c_in", P.BOOL, []), vi("x_in", P.FLOAT, [2, 3])],
                        [vi("c_out", P.BOOL, []), vi("x_out", P.FLOAT, [2, 3]), vi("sc", P.FLOAT, [2, 3]),
                         vi("x_in", P.FLOAT, [2, 3])],
                        [h.make_tensor("lim", P.FLOAT, [], [20.0])] if early else [])
    g = h.make_graph([h.make_node("Loop", ["M", "", "x0"], ["x", "S1", "S2"], name="count", body=body),
                      h.make_node("Neg", ["S1"], ["y"])], "const_loop",
                     [vi("x0", P.FLOAT, [2, 3]), vi("xs", P.FLOAT, [2, 3])],
                     [vi("x", P.FLOAT, [2, 3]), vi("y", P.FLOAT, None), vi("S2", P.FLOAT, None)],
                     [nh.from_array(np.array(trips, np.int64), "M")])
    onnx.save(h.make_model(g, opset_imports=OPSET), path)


def endless_loop(path):
    """A Loop with no trip count whose condition stays true: all of it is
    constant, but the compiler must not try to fold it (it would never end)."""
    body = h.make_graph([h.make_node("Identity", ["c_in"], ["c_out"]), h.make_node("Add", ["s_in", "one"], ["s_out"])],
                        "body", [vi("i", P.INT64, []), vi("c_in", P.BOOL, []), vi("s_in", P.FLOAT, [1])],
                        [vi("c_out", P.BOOL, []), vi("s_out", P.FLOAT, [1])],
                        [h.make_tensor("one", P.FLOAT, [1], [1.0])])
    g = h.make_graph([h.make_node("Loop", ["", "cond", "s0"], ["s"], body=body)], "endless", [],
                     [vi("s", P.FLOAT, [1])],
                     [h.make_tensor("cond", P.BOOL, [], [True]), h.make_tensor("s0", P.FLOAT, [1], [0.0])])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8), path)


def run(icc, model, inputs, t, outs):
    args = [icc, "run", model, "-o", t + "/out"]
    for k, v in inputs.items():
        np.save("%s/%s.npy" % (t, k), v)
        args += ["--input", "%s=%s/%s.npy" % (k, t, k)]
    subprocess.run(args, check=True)
    return [np.load("%s/out/%s.npy" % (t, o)) for o in outs]


def compare(label, got, want):
    ok = all(g.shape == w.shape and np.allclose(g, w, rtol=1e-4, atol=1e-5) for g, w in zip(got, want))
    err = max(float(np.abs(g - w).max()) if g.shape == w.shape and g.size else 0.0 for g, w in zip(got, want))
    print("%s %s: max abs error %.3g" % ("ok  " if ok else "FAIL", label, err))
    return not ok


def main():
    icc = os.path.abspath(sys.argv[1])
    t = tempfile.mkdtemp()
    failed = 0
    vad(t + "/vad.onnx")
    s = ort.InferenceSession(t + "/vad.onnx", providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(2)
    feeds = []
    for sr in (16000, 8000, 3000):
        x = rng.standard_normal((1, 1, 64)).astype(np.float32)
        hh = rng.standard_normal((1, 16)).astype(np.float32)
        feeds.append({"x": x, "sr": np.array(sr, np.int64), "h": hh})
    for feed in feeds:
        sr = int(feed["sr"])
        want = s.run(None, feed)
        failed += compare("VAD sr=%d, interpreter" % sr, run(icc, t + "/vad.onnx", feed, t, ["prob", "state"]), want)
        np.save(t + "/sr.npy", np.array(sr, np.int64))
        so = "%s/vad%d.so" % (t, sr)
        subprocess.run([icc, t + "/vad.onnx", "--bind=sr=" + t + "/sr.npy", "-o", so], check=True)
        got = run(icc, so, {"x": feed["x"], "h": feed["h"]}, t, ["prob", "state"])
        failed += compare("VAD sr=%d, compiled with --bind=sr (every If folded)" % sr, got, want)
    # Without the bind the Ifs are compiled: the run picks the branch, the
    # nested Ifs too (8000 and 3000 take the two sides of the inner one).
    for opt in ("-O0", "-O2", "-O3"):
        so = "%s/vad%s.so" % (t, opt)
        subprocess.run([icc, t + "/vad.onnx", opt, "-o", so], check=True)
        for feed in feeds:
            failed += compare("VAD sr=%d, compiled If %s" % (int(feed["sr"]), opt),
                              run(icc, so, feed, t, ["prob", "state"]), s.run(None, feed))

    # ONNX Runtime (1.32) returns zeros for a subgraph output listed twice,
    # so this one is checked against numpy, and the interpreter.
    passthrough_if(t + "/pass.onnx")
    x = rng.standard_normal((2, 3)).astype(np.float32)
    k = np.arange(6, dtype=np.float32).reshape(2, 3)
    for c in (True, False):
        feed = {"c": np.array(c), "x": x}
        want = [x * k, x] if c else [x * x, -x]
        failed += compare("If returning a constant / one value twice, c=%s, interpreter" % c,
                          run(icc, t + "/pass.onnx", feed, t, ["y", "a"]), want)
        for opt in ("-O0", "-O2", "-O3"):
            so = "%s/pass%s.so" % (t, opt)
            if c:
                subprocess.run([icc, t + "/pass.onnx", opt, "-o", so], check=True)
            failed += compare("If returning a constant / one value twice, c=%s, %s" % (c, opt),
                              run(icc, so, feed, t, ["y", "a"]), want)
    captured_if(t + "/captured.onnx")
    s = ort.InferenceSession(t + "/captured.onnx", providers=["CPUExecutionProvider"])
    x = rng.standard_normal((2, 2, 3)).astype(np.float32)
    for opt in ("-O0", "-O2", "-O3"):
        so = "%s/captured%s.so" % (t, opt)
        subprocess.run([icc, t + "/captured.onnx", opt, "-o", so], check=True)
        for c in (True, False):
            feed = {"c": np.array(c), "x": x}
            failed += compare("If reading captured constants as attributes, c=%s, %s" % (c, opt),
                              run(icc, so, feed, t, ["y"]), s.run(None, feed))
    ragged_if(t + "/ragged.onnx")
    ok, msg = refused(icc, t + "/ragged.onnx", t, "node 'ragged' (If): output 0")
    print("%s an If whose branches give different shapes is refused: %s" % ("ok  " if ok else "FAIL", msg))
    failed += not ok
    unknown_if(t + "/unknown.onnx")
    ok, msg = refused(icc, t + "/unknown.onnx", t, "node 'unknown' (If): output 0 ('y') is")
    ok = ok and "in both branches, a dim unknown until a branch runs" in msg
    print("%s an If whose output dims are unknown in both branches is refused as such: %s" % (
        "ok  " if ok else "FAIL", msg))
    failed += not ok

    rnn_loop(t + "/rnn.onnx")
    s = ort.InferenceSession(t + "/rnn.onnx", providers=["CPUExecutionProvider"])
    for steps in (5, 1, 0):
        feed = {"T": np.array(steps, np.int64), "xs": rng.standard_normal((max(steps, 1), 4)).astype(np.float32),
                "h0": rng.standard_normal((1, 8)).astype(np.float32), "acc0": np.array(0.5, np.float32)}
        want = s.run(None, feed)
        outs = ["hT", "acc"] + (["hs"] if steps else [])
        failed += compare("RNN Loop, %d steps, interpreter" % steps, run(icc, t + "/rnn.onnx", feed, t, outs),
                          want[:len(outs)])
    r = subprocess.run([icc, t + "/rnn.onnx", "--shape=xs:5x4", "-o", t + "/rnn.so"], capture_output=True, text=True)
    msg = r.stderr.strip()
    ok = r.returncode == 1 and "node 'rnn' (Loop): scan output 0" in msg and len(msg.splitlines()) == 1
    print("%s a Loop with scan outputs of a length not declared is refused, naming it: %s" %
          ("ok  " if ok else "FAIL", msg))
    failed += not ok
    # Declared [5, 1, 8], the scan output compiles into those rows; a run of
    # another trip count fails in one line (the interpreter gives its rows).
    rnn_loop(t + "/rnn5.onnx", hs_shape=[5, 1, 8])
    s = ort.InferenceSession(t + "/rnn5.onnx", providers=["CPUExecutionProvider"])
    xs = rng.standard_normal((8, 4)).astype(np.float32)
    for opt in ("-O0", "-O2"):
        so = "%s/rnn5%s.so" % (t, opt)
        subprocess.run([icc, t + "/rnn5.onnx", opt, "--shape=xs:8x4", "-o", so], check=True)
        feed = {"T": np.array(5, np.int64), "xs": xs, "h0": rng.standard_normal((1, 8)).astype(np.float32),
                "acc0": np.array(0.5, np.float32)}
        failed += compare("RNN Loop compiled %s, scan output of 5 declared rows, 5 steps" % opt,
                          run(icc, so, feed, t, ["hT", "acc", "hs"]), s.run(None, feed))
        for steps, what in ((3, "fewer"), (8, "more")):
            feed["T"] = np.array(steps, np.int64)
            rc, msg, outs = run_feed(icc, so, feed, t)
            ok = (rc == 1 and len(msg.splitlines()) == 1 and "node 'rnn' (Loop)" in msg and
                  "ran %s iterations than the 5 rows" % what in msg and not outs)
            print("%s %s, %d steps against 5 declared rows: %s" % ("ok  " if ok else "FAIL", opt, steps, msg))
            failed += not ok
            got = run(icc, t + "/rnn5.onnx", feed, t, ["hs"])[0]
            ok = got.shape == (steps, 1, 8)
            print("%s interpreted, %d steps: hs %s" % ("ok  " if ok else "FAIL", steps, got.shape))
            failed += not ok
    # The RNN with carried values only, compiled: the trip count is read at
    # run time (5, 1, 0 and a negative one: no iteration).
    rnn_loop(t + "/rnn2.onnx", scan=False)
    s = ort.InferenceSession(t + "/rnn2.onnx", providers=["CPUExecutionProvider"])
    xs = rng.standard_normal((5, 4)).astype(np.float32)
    for opt in ("-O0", "-O2", "-O3"):
        so = "%s/rnn2%s.so" % (t, opt)
        subprocess.run([icc, t + "/rnn2.onnx", opt, "--shape=xs:5x4", "-o", so], check=True)
        for steps in (5, 1, 0, -1):
            feed = {"T": np.array(steps, np.int64), "xs": xs, "h0": rng.standard_normal((1, 8)).astype(np.float32),
                    "acc0": np.array(0.5, np.float32)}
            failed += compare("RNN Loop compiled %s, %d steps" % (opt, steps),
                              run(icc, so, feed, t, ["hT", "acc"]), s.run(None, feed))
    while_loop(t + "/while.onnx")
    s = ort.InferenceSession(t + "/while.onnx", providers=["CPUExecutionProvider"])
    for opt in ("-O0", "-O2", "-O3"):
        so = "%s/while%s.so" % (t, opt)
        subprocess.run([icc, t + "/while.onnx", opt, "-o", so], check=True)
        for go, limit in ((True, 100.0), (True, 1e6), (False, 100.0)):
            feed = {"go": np.array(go), "x0": np.abs(rng.standard_normal((2, 2))).astype(np.float32) + 0.1,
                    "limit": np.array(limit, np.float32)}
            failed += compare("while Loop compiled %s, go=%s, limit=%g" % (opt, go, limit),
                              run(icc, so, feed, t, ["x"]), s.run(None, feed))
    scan_axes(t + "/scan.onnx")
    s = ort.InferenceSession(t + "/scan.onnx", providers=["CPUExecutionProvider"])
    feed = {"s0": rng.standard_normal(3).astype(np.float32), "A": rng.standard_normal((3, 4)).astype(np.float32),
            "B": rng.standard_normal((4, 3)).astype(np.float32)}
    want = s.run(None, feed)
    failed += compare("Scan with axes and directions, interpreter",
                      run(icc, t + "/scan.onnx", feed, t, ["sT", "O1", "O2"]), want)
    scan_rnn(t + "/scan_rnn.onnx")
    s2 = ort.InferenceSession(t + "/scan_rnn.onnx", providers=["CPUExecutionProvider"])
    feed2 = {"h0": rng.standard_normal((1, 8)).astype(np.float32),
             "xs": rng.standard_normal((6, 1, 4)).astype(np.float32)}
    for opt in ("-O0", "-O2", "-O3"):
        so = "%s/scan%s.so" % (t, opt)
        subprocess.run([icc, t + "/scan.onnx", opt, "-o", so], check=True)
        failed += compare("Scan with axes and directions compiled %s" % opt,
                          run(icc, so, feed, t, ["sT", "O1", "O2"]), want)
        so = "%s/scan_rnn%s.so" % (t, opt)
        subprocess.run([icc, t + "/scan_rnn.onnx", opt, "-o", so], check=True)
        failed += compare("RNN as a Scan, captured weights, compiled %s" % opt,
                          run(icc, so, feed2, t, ["hT", "y"]), s2.run(None, feed2))
    # Loop scan outputs compiled: the trip count a constant (an initializer,
    # or the RNN's input bound), the condition never stopping it early.
    for trips in (4, 1, 0, -2):
        const_loop(t + "/cloop.onnx", trips)
        s = ort.InferenceSession(t + "/cloop.onnx", providers=["CPUExecutionProvider"])
        feed = {"x0": rng.standard_normal((2, 3)).astype(np.float32),
                "xs": rng.standard_normal((2, 3)).astype(np.float32)}
        want = s.run(None, feed)
        for opt in ("-O0", "-O2", "-O3"):
            so = "%s/cloop%s.so" % (t, opt)
            subprocess.run([icc, t + "/cloop.onnx", opt, "-o", so], check=True)
            failed += compare("Loop scan outputs, %d trips, compiled %s" % (trips, opt),
                              run(icc, so, feed, t, ["x", "y", "S2"]), want)
    s = ort.InferenceSession(t + "/rnn.onnx", providers=["CPUExecutionProvider"])
    for steps in (5, 2):
        np.save(t + "/T.npy", np.array(steps, np.int64))
        feed = {"T": np.array(steps, np.int64), "xs": rng.standard_normal((5, 4)).astype(np.float32),
                "h0": rng.standard_normal((1, 8)).astype(np.float32), "acc0": np.array(0.5, np.float32)}
        want = s.run(None, feed)
        del feed["T"]
        for opt in ("-O0", "-O2", "-O3"):
            so = "%s/rnnT%s.so" % (t, opt)
            subprocess.run([icc, t + "/rnn.onnx", opt, "--bind=T=" + t + "/T.npy", "--shape=xs:5x4", "-o", so],
                           check=True)
            failed += compare("RNN Loop with its scan output, --bind=T (%d), compiled %s" % (steps, opt),
                              run(icc, so, feed, t, ["hT", "acc", "hs"]), want)
    # --profile: a body's kernels are named with their path and counted
    # once per iteration (the Scan's 6, the Loop's 4), the others once.
    const_loop(t + "/cloop.onnx", 4)
    for model, body, calls in (("scan_rnn", "scan_rnn/body/", 6), ("cloop", "count/body/", 4)):
        r = subprocess.run([icc, "bench", "%s/%s.onnx" % (t, model), "--profile", "--json", "--time=0.05",
                            "--warmup=0", "--threads=1"], capture_output=True, text=True, timeout=300)
        try:
            ks = json.loads(r.stdout)["results"][0]["profile"]["kernels"]
        except (ValueError, KeyError, IndexError):
            ks = []
        inner = [k for k in ks if k["name"].startswith(body)]
        ok = r.returncode == 0 and len(inner) >= 2 and len(inner) < len(ks) and \
            all(k.get("calls") == (calls if k["name"].startswith(body) else 1) for k in ks)
        print("%s --profile of %s: %d kernels in the body, each %s calls/run: %s" % (
            "ok  " if ok else "FAIL", model, len(inner), calls,
            ", ".join("%s x%s" % (k["name"], k.get("calls")) for k in ks) or r.stderr.strip()))
        failed += not ok
    const_loop(t + "/early.onnx", 4, early=True)
    ok, msg = refused(icc, t + "/early.onnx", t, "node 'count' (Loop): scan output 0 ('S1') is not compiled yet")
    ok = ok and "stop early" in msg
    print("%s a Loop with scan outputs that may stop early is refused: %s" % ("ok  " if ok else "FAIL", msg))
    failed += not ok
    # A Loop that never ends compiles (it is legal ONNX; running it would
    # not end either), but the compiler must not try to run it.
    endless_loop(t + "/endless.onnx")
    try:
        r = subprocess.run([icc, t + "/endless.onnx", "-o", t + "/endless.so"], capture_output=True, text=True,
                           timeout=60)
        ok = r.returncode == 0 and os.path.exists(t + "/endless.so")
        msg = r.stderr.strip() or "compiled"
    except subprocess.TimeoutExpired:
        ok, msg = False, "the compiler did not finish in 60 s"
    print("%s a Loop with no bound is not folded at compile time: %s" % ("ok  " if ok else "FAIL", msg))
    failed += not ok
    print("control flow: %s" % ("all passed" if not failed else "%d failed" % failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
