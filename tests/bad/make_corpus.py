#!/usr/bin/env python3
"""Writes the bad-input corpus: malformed ONNX models (and a few text IR
files and non-regular files) that icc must reject cleanly.

Usage: make_corpus.py OUTDIR

One file per case, named after the case, plus OUTDIR/cases.tsv with one row
per case: relative path, expected error (an extended regex, matched without
regard to case), and the longest acceptable error line. tests/bad/run.sh
reads that table. Models are built with the onnx package where it can
express the defect, and by hand-encoding protobuf bytes where it cannot
(truncation, bad varints, nesting 100,000 deep). Everything is
deterministic and small (a few MB), so the corpus is generated at test time.
"""
import os
import random
import sys

import onnx
from onnx import TensorProto, helper

OPSET = 17
IR_VERSION = 8
DEFAULT_MAXLEN = 1200     # the diag buffer is 1024 bytes, plus prefixes
SHORT_MAXLEN = 400        # cases with huge names: the message must truncate them

CASES = []                # (relative path, expected regex, max line length)


# ---- protobuf wire encoding (for what the onnx package refuses to build) ----

def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wire):
    return varint(field << 3 | wire)


def ld(field, payload):
    """A length-delimited field."""
    return key(field, 2) + varint(len(payload)) + payload


def vi(field, v):
    """A varint field."""
    return key(field, 0) + varint(v)


def nested(fields, inner):
    """Wraps inner in messages, fields listed outermost first. Built inside
    out with lengths computed once, so 100,000 levels take linear time."""
    headers = []
    n = len(inner)
    for f in reversed(fields):
        h = key(f, 2) + varint(n)
        headers.append(h)
        n += len(h)
    return b"".join(reversed(headers)) + inner


def model_header():
    """ModelProto fields before the graph: ir_version, opset_import."""
    return vi(1, IR_VERSION) + ld(8, ld(1, b"") + vi(2, OPSET))


# ---- helpers ------------------------------------------------------------

def add(out, name, data, expect, maxlen=DEFAULT_MAXLEN):
    path = os.path.join(out, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if isinstance(data, onnx.ModelProto):
        data = data.SerializeToString()
    with open(path, "wb") as f:
        f.write(data)
    CASES.append((name, expect, maxlen))


def vinfo(name, dt=TensorProto.FLOAT, shape=(2, 3)):
    return helper.make_tensor_value_info(name, dt, list(shape) if shape is not None else None)


def tensor(name, dt, dims, raw=None, **fields):
    """A TensorProto built field by field: make_tensor checks what we want broken."""
    t = TensorProto()
    t.name = name
    t.data_type = dt
    t.dims.extend(dims)
    if raw is not None:
        t.raw_data = raw
    for k, v in fields.items():
        getattr(t, k).extend(v)
    return t


def model(nodes, inputs, outputs, inits=(), opsets=None, functions=(), name="bad"):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    if opsets is None:
        opsets = [helper.make_opsetid("", OPSET)]
    m = helper.make_model(g, opset_imports=opsets, functions=list(functions))
    m.ir_version = IR_VERSION
    return m


def relu_model(**kw):
    """x[2,3] -> Relu -> y: the valid base most cases break one thing in."""
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [vinfo("x")], [vinfo("y")], **kw)


def init_model(t):
    """y = x + t, t an initializer: for tensor defects."""
    return model([helper.make_node("Add", ["x", t.name], ["y"], name="add")],
                 [vinfo("x")], [vinfo("y")], inits=[t])


def external(name, dims, location=None, offset=None, length=None, extra=()):
    t = tensor(name, TensorProto.FLOAT, dims)
    t.data_location = TensorProto.EXTERNAL
    for k, v in ([("location", location)] if location is not None else []) + \
            ([("offset", str(offset))] if offset is not None else []) + \
            ([("length", str(length))] if length is not None else []) + list(extra):
        e = t.external_data.add()
        e.key = k
        e.value = v
    return t


# ---- the cases ----------------------------------------------------------

def bytes_cases(out):
    good = relu_model().SerializeToString()
    add(out, "empty.onnx", b"", r"no graph|empty")
    add(out, "garbage_random.onnx", random.Random(1).randbytes(4096), r"malformed")
    add(out, "garbage_ff.onnx", b"\xff" * 64, r"malformed")
    add(out, "garbage_text.onnx", b"this is not an onnx model\n", r"malformed")
    add(out, "garbage_zip.onnx", b"PK\x03\x04" + b"\x00" * 60, r"malformed")
    # Cuts: inside the ir_version varint, inside the graph, the last byte.
    add(out, "truncated_1.onnx", good[:1], r"malformed|truncated")
    add(out, "truncated_mid.onnx", good[:len(good) // 2], r"malformed|truncated")
    add(out, "truncated_last.onnx", good[:-1], r"malformed|truncated")
    gpos = good.index(key(7, 2))
    add(out, "truncated_graph_header.onnx", good[:gpos + 2], r"malformed|truncated")
    add(out, "varint_overlong.onnx", vi(1, 8)[:1] + b"\x80" * 10 + b"\x01", r"malformed")
    add(out, "length_past_end.onnx", model_header() + key(7, 2) + varint(1 << 40) + b"\x0a",
        r"malformed")
    add(out, "group_wire_type.onnx", model_header() + key(7, 3) + key(7, 4), r"malformed|group")
    add(out, "field_number_zero.onnx", model_header() + key(0, 0) + b"\x01", r"malformed")
    # Well-formed wire, wrong types: graph as a varint, ir_version as bytes.
    add(out, "wire_type_mismatch.onnx", model_header() + vi(7, 5), r"malformed|invalid|decode")
    add(out, "tensor_as_model.onnx",
        tensor("t", TensorProto.FLOAT, [2, 2], raw=b"\0" * 16).SerializeToString(),
        r"malformed|invalid|decode")
    # Nesting 100,000 deep: protobuf-c would recurse until the stack dies.
    # Graph -> node -> attribute.g -> graph -> ...
    deep = nested([7] + [1, 5, 6] * 33334, b"")
    add(out, "deep_nesting_subgraph.onnx", model_header() + deep, r"nested deeper")
    # Graph -> input (ValueInfo) -> type -> sequence_type -> elem_type -> ...
    deep = nested([7, 11, 2] + [4, 1] * 50000, b"")
    add(out, "deep_nesting_sequence_type.onnx", model_header() + deep, r"nested deeper")
    # One past the limit of 64 (Model, Graph, ValueInfo, Type, then 61 more).
    deep = nested([7, 11, 2] + [4, 1] * 30 + [4], b"")
    add(out, "deep_nesting_65.onnx", model_header() + deep, r"nested deeper")


def tensor_cases(out):
    F = TensorProto.FLOAT
    add(out, "raw_data_short.onnx",
        init_model(tensor("w", F, [2, 3], raw=b"\0" * 20)), r"'w'.*(bytes|raw_data)")
    add(out, "raw_data_long.onnx",
        init_model(tensor("w", F, [2, 3], raw=b"\0" * 28)), r"'w'.*(bytes|raw_data)")
    add(out, "negative_dim.onnx",
        init_model(tensor("w", F, [-1, 3], raw=b"\0" * 12)), r"negative")
    big = 1 << 40
    for tag, dims in [("a", [big, big, 4]), ("zero_first", [0, big, big]),
                      ("zero_last", [big, big, 0]), ("zero_mid", [big, 0, big]),
                      ("int64max", [2, 0x7FFFFFFFFFFFFFFF])]:
        add(out, f"dims_overflow_{tag}.onnx",
            init_model(tensor("w", F, dims, raw=b"")), r"overflow")
    # 2^62 elements backed by 16 bytes: must be rejected before allocating.
    add(out, "huge_numel_u8.onnx",
        init_model(tensor("w", TensorProto.UINT8, [1 << 31, 1 << 31], raw=b"\0" * 16)),
        r"too large|limit|overflow")
    add(out, "huge_numel_f32.onnx",
        init_model(tensor("w", F, [1 << 31, 1 << 31], raw=b"\0" * 16)),
        r"too large|limit|overflow")
    add(out, "huge_numel_external.onnx",
        init_model(external("w", [1 << 31, 1 << 31], "weights.bin")),
        r"too large|limit|overflow")
    add(out, "float_data_count.onnx",
        init_model(tensor("w", F, [2, 3], float_data=[1.0] * 5)), r"'w'.*(5|float_data)")
    add(out, "int64_data_count.onnx",
        model([helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape")],
              [vinfo("x")], [vinfo("y", shape=(3, 2))],
              inits=[tensor("s", TensorProto.INT64, [2], int64_data=[3, 2, 1])]),
        r"'s'.*(3|int64_data)")
    add(out, "initializer_no_data.onnx",
        init_model(tensor("w", F, [2, 3])), r"'w'")
    add(out, "raw_and_float_data.onnx",
        init_model(tensor("w", F, [2, 3], raw=b"\0" * 24, float_data=[1.0] * 6)),
        r"'w'.*(raw_data|float_data)")
    add(out, "rank_too_high.onnx",
        init_model(tensor("w", F, [1] * 9, raw=b"\0" * 4)), r"rank|dims")
    add(out, "rank_100000.onnx",
        init_model(tensor("w", F, [1] * 100000, raw=b"\0" * 4)), r"rank|dims")
    add(out, "initializer_no_name.onnx",
        model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
              [vinfo("x")], [vinfo("y")], inits=[tensor("", F, [1], raw=b"\0" * 4)]),
        r"name")
    add(out, "duplicate_initializer.onnx",
        model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
              [vinfo("x")], [vinfo("y")],
              inits=[tensor("w", F, [3], raw=b"\0" * 12), tensor("w", F, [3], raw=b"\0" * 12)]),
        r"'w'.*(duplicate|twice|more than once|already)")
    # dtypes: unknown, and known to ONNX but not to the IR.
    for tag, dt, pat in [("99", 99, r"99"), ("string", TensorProto.STRING, r"string"),
                         ("float8", TensorProto.FLOAT8E4M3FN, r"float8")]:
        t = tensor("w", dt, [3], raw=b"\0" * 3)
        if dt == TensorProto.STRING:
            t = tensor("w", dt, [3], string_data=[b"a", b"b", b"c"])
        add(out, f"dtype_{tag}_initializer.onnx",
            model([helper.make_node("Identity", ["w"], ["y"], name="id")], [],
                  [vinfo("y", dt if dt != 99 else F, (3,))], inits=[t]), pat)
        add(out, f"dtype_{tag}_input.onnx",
            model([helper.make_node("Identity", ["x"], ["y"], name="id")],
                  [vinfo("x", dt, (3,))], [vinfo("y", F, (3,))]), pat)
    add(out, "sparse_initializer.onnx", sparse_model(), r"sparse")


def sparse_model():
    m = relu_model()
    s = m.graph.sparse_initializer.add()
    s.values.CopyFrom(tensor("sw", TensorProto.FLOAT, [1], raw=b"\0" * 4))
    s.indices.CopyFrom(tensor("si", TensorProto.INT64, [1], raw=b"\0" * 8))
    s.dims.extend([2, 3])
    m.graph.node[0].input[0] = "sw"
    return m


def external_cases(out):
    with open(os.path.join(out, "weights.bin"), "wb") as f:
        f.write(b"\0" * 24)
    os.makedirs(os.path.join(out, "ext", "dir.bin"), exist_ok=True)
    # Files that exist, so only the path check stands between them and a read.
    add(out, "ext/dotdot.onnx", init_model(external("w", [2, 3], "../weights.bin")),
        r"\.\.|outside|escape")
    add(out, "ext/absolute.onnx",
        init_model(external("w", [2, 3], os.path.abspath(os.path.join(out, "weights.bin")))),
        r"absolute")
    for tag, target in [("rel", "../weights.bin"),
                        ("abs", os.path.abspath(os.path.join(out, "weights.bin")))]:
        link = os.path.join(out, "ext", f"link_{tag}.bin")
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(target, link)
        add(out, f"ext/symlink_{tag}.onnx", init_model(external("w", [2, 3], f"link_{tag}.bin")),
            r"symlink|symbolic link")
    add(out, "ext_past_end.onnx",
        init_model(external("w", [2, 3], "weights.bin", offset=8, length=24)),
        r"beyond|past|exceed|end of|only")
    add(out, "ext_offset_past_end.onnx",
        init_model(external("w", [2, 3], "weights.bin", offset=4096)),
        r"beyond|past|exceed|end of|only")
    add(out, "ext_offset_negative.onnx",
        init_model(external("w", [2, 3], "weights.bin", offset=-8)), r"offset")
    add(out, "ext_offset_huge.onnx",
        init_model(external("w", [2, 3], "weights.bin", offset=(1 << 63) - 4)),
        r"offset|beyond|past|exceed|end of|only")
    add(out, "ext_length_not_number.onnx",
        init_model(external("w", [2, 3], "weights.bin", length="abc")), r"length")
    add(out, "ext_length_mismatch.onnx",
        init_model(external("w", [2, 3], "weights.bin", length=8)), r"length")
    add(out, "ext_missing_file.onnx",
        init_model(external("w", [2, 3], "no_such_weights.bin")),
        r"no_such_weights.bin.*(no such file|cannot open|missing)")
    add(out, "ext_no_location.onnx", init_model(external("w", [2, 3])), r"location")
    add(out, "ext_empty_location.onnx", init_model(external("w", [2, 3], "")), r"location")
    add(out, "ext_location_dir.onnx", init_model(external("w", [2, 3], "ext/dir.bin")),
        r"regular file|directory")
    add(out, "ext/location_dot.onnx", init_model(external("w", [2, 3], ".")),
        r"regular file|directory|location")


def graph_cases(out):
    mk = helper.make_node
    add(out, "cycle.onnx",
        model([mk("Add", ["x", "b"], ["a"], name="A"), mk("Relu", ["a"], ["b"], name="B")],
              [vinfo("x")], [vinfo("b")]), r"cycl")
    add(out, "self_loop.onnx",
        model([mk("Add", ["x", "y"], ["y"], name="A")], [vinfo("x")], [vinfo("y")]), r"cycl")
    add(out, "dangling_input.onnx",
        model([mk("Add", ["x", "nowhere"], ["y"], name="add")], [vinfo("x")], [vinfo("y")]),
        r"'nowhere'")
    add(out, "dangling_output.onnx",
        model([mk("Relu", ["x"], ["y"], name="relu")], [vinfo("x")], [vinfo("nowhere")]),
        r"'nowhere'")
    add(out, "duplicate_output.onnx",
        model([mk("Relu", ["x"], ["y"], name="r1"), mk("Neg", ["x"], ["y"], name="r2")],
              [vinfo("x")], [vinfo("y")]), r"'y'.*(duplicate|twice|more than once|already)")
    add(out, "output_shadows_input.onnx",
        model([mk("Relu", ["x"], ["x"], name="r1")], [vinfo("x")], [vinfo("x")]),
        r"'x'.*(duplicate|twice|more than once|already)|cycl")
    add(out, "no_outputs.onnx",
        model([mk("Relu", ["x"], ["y"], name="relu")], [vinfo("x")], []), r"no outputs")
    add(out, "no_graph.onnx", model_header(), r"no graph")
    add(out, "opset_missing.onnx", relu_model(opsets=[]), r"opset")
    add(out, "opset_too_new.onnx", relu_model(opsets=[helper.make_opsetid("", 1000)]),
        r"opset 1000 .*newer than the newest icc knows")
    add(out, "unknown_ops.onnx",
        model([mk("FooBar", ["x"], ["a"], name="n1"),
               mk("Baz", ["a"], ["y"], name="n2", domain="com.example")],
              [vinfo("x")], [vinfo("y")],
              opsets=[helper.make_opsetid("", OPSET), helper.make_opsetid("com.example", 1)]),
        r"FooBar.*Baz|Baz.*FooBar")
    add(out, "domain_not_imported.onnx",
        model([mk("Relu", ["x"], ["y"], name="relu", domain="com.example")],
              [vinfo("x")], [vinfo("y")]), r"com\.example")
    add(out, "empty_op_type.onnx",
        model([mk("", ["x"], ["y"], name="n")], [vinfo("x")], [vinfo("y")]),
        r"op_type|op type|unknown op|unsupported op|empty")
    add(out, "constant_no_value.onnx",
        model([mk("Constant", [], ["y"], name="c")], [], [vinfo("y")]), r"value")
    add(out, "constant_bad_tensor.onnx",
        model([mk("Constant", [], ["y"], name="c",
                  value=tensor("v", TensorProto.FLOAT, [4], raw=b"\0" * 3))], [],
              [vinfo("y", shape=(4,))]), r"bytes|raw_data")
    # Subgraphs (If, Loop, Scan are supported): broken ones.
    then_g = helper.make_graph([mk("Relu", ["x"], ["t"])], "then", [], [vinfo("t")])
    else2 = helper.make_graph([mk("Neg", ["x"], ["e"]), mk("Abs", ["x"], ["f"])], "else", [],
                              [vinfo("e"), vinfo("f")])
    add(out, "if_branch_outputs.onnx",
        model([mk("If", ["c"], ["y"], name="if", then_branch=then_g, else_branch=else2)],
              [vinfo("x"), vinfo("c", TensorProto.BOOL, ())], [vinfo("y")]),
        r"\bif\b.*(output|branch)|(output|branch).*\bif\b")
    undef = helper.make_graph([mk("Relu", ["nowhere"], ["t"])], "then", [], [vinfo("t")])
    add(out, "if_branch_undefined.onnx",
        model([mk("If", ["c"], ["y"], name="if", then_branch=undef, else_branch=then_g)],
              [vinfo("x"), vinfo("c", TensorProto.BOOL, ())], [vinfo("y")]), r"nowhere")
    body1 = helper.make_graph([mk("Identity", ["v"], ["v2"])], "body", [vinfo("v")], [vinfo("v2")])
    add(out, "loop_body_inputs.onnx",
        model([mk("Loop", ["n", "", "x"], ["y"], name="loop", body=body1)],
              [vinfo("x"), vinfo("n", TensorProto.INT64, ())], [vinfo("y")]),
        r"\bloop\b.*(body|input)|(body|input).*\bloop\b")
    deep = helper.make_graph([mk("Relu", ["x"], ["t"])], "g0", [], [vinfo("t")])
    for i in range(17):        # past the frontend's bound of 16, within protobuf's nesting bound
        deep = helper.make_graph([mk("If", ["c"], ["t"], name="if%d" % i, then_branch=deep, else_branch=deep)],
                                 "g%d" % (i + 1), [], [vinfo("t")])
    add(out, "subgraph_too_deep.onnx",
        model(list(deep.node), [vinfo("x"), vinfo("c", TensorProto.BOOL, ())], [vinfo("t")]),
        r"deep|depth|nest")
    add(out, "input_no_type.onnx",
        model([mk("Relu", ["x"], ["y"], name="relu")],
              [onnx.ValueInfoProto(name="x")], [vinfo("y")]), r"'x'.*type")
    add(out, "input_negative_dim.onnx",
        model([mk("Relu", ["x"], ["y"], name="relu")], [vinfo("x", shape=(2, -3))],
              [vinfo("y")]), r"negative|-3")
    add(out, "input_rank_too_high.onnx",
        model([mk("Relu", ["x"], ["y"], name="relu")], [vinfo("x", shape=(1,) * 9)],
              [vinfo("y", shape=(1,) * 9)]), r"rank")
    add(out, "relu_three_inputs.onnx",
        model([mk("Relu", ["x", "x", "x"], ["y"], name="relu")], [vinfo("x")], [vinfo("y")]),
        r"input")
    add(out, "relu_no_outputs.onnx",
        model([mk("Relu", ["x"], [], name="relu"), mk("Neg", ["x"], ["y"], name="neg")],
              [vinfo("x")], [vinfo("y")]), r"output")
    add(out, "split_no_outputs.onnx",
        model([mk("Split", ["x"], [], name="split"), mk("Relu", ["x"], ["y"], name="relu")],
              [vinfo("x")], [vinfo("y")]), r"output")
    # Opset 6 broadcasting: B aligned from `axis`; axis + rank(B) must not overflow.
    m = model([mk("Add", ["x", "b"], ["y"], name="add", broadcast=1, axis=(1 << 63) - 1)],
              [vinfo("x"), vinfo("b", shape=(3,))], [vinfo("y")],
              opsets=[helper.make_opsetid("", 6)])
    add(out, "legacy_broadcast_axis_huge.onnx", m, r"axis")
    # Recursion through model-local functions must not inline forever.
    rec = helper.make_function("local", "Rec", ["a"], ["b"],
                               [mk("Rec", ["a"], ["b"], domain="local")],
                               [helper.make_opsetid("", OPSET), helper.make_opsetid("local", 1)])
    add(out, "function_recursive.onnx",
        model([mk("Rec", ["x"], ["y"], name="call", domain="local")], [vinfo("x")], [vinfo("y")],
              opsets=[helper.make_opsetid("", OPSET), helper.make_opsetid("local", 1)],
              functions=[rec]), r"recurs")
    fa = helper.make_function("local", "FA", ["a"], ["b"], [mk("FB", ["a"], ["b"], domain="local")],
                              [helper.make_opsetid("", OPSET), helper.make_opsetid("local", 1)])
    fb = helper.make_function("local", "FB", ["a"], ["b"], [mk("FA", ["a"], ["b"], domain="local")],
                              [helper.make_opsetid("", OPSET), helper.make_opsetid("local", 1)])
    add(out, "function_mutual_recursion.onnx",
        model([mk("FA", ["x"], ["y"], name="call", domain="local")], [vinfo("x")], [vinfo("y")],
              opsets=[helper.make_opsetid("", OPSET), helper.make_opsetid("local", 1)],
              functions=[fa, fb]), r"recurs")
    # "Billion laughs": each function calls the one below it 10 times, so
    # 15 levels (under the depth limit) would inline 10^15 nodes.
    local = [helper.make_opsetid("", OPSET), helper.make_opsetid("local", 1)]
    fns = [helper.make_function("local", "F0", ["a"], ["b"], [mk("Relu", ["a"], ["b"])], local)]
    for k in range(1, 15):
        body = [mk(f"F{k - 1}", ["a" if j == 0 else f"t{j - 1}"], ["b" if j == 9 else f"t{j}"],
                   domain="local") for j in range(10)]
        fns.append(helper.make_function("local", f"F{k}", ["a"], ["b"], body, local))
    add(out, "function_exponential.onnx",
        model([mk("F14", ["x"], ["y"], name="call", domain="local")], [vinfo("x")], [vinfo("y")],
              opsets=local, functions=fns), r"more than")
    add(out, "function_too_many_inputs.onnx",
        model([mk("Rec", ["x", "x"], ["y"], name="call", domain="local")], [vinfo("x")],
              [vinfo("y")], opsets=local,
              functions=[helper.make_function("local", "Rec", ["a"], ["b"],
                                              [mk("Relu", ["a"], ["b"])], local)]),
        r"inputs")


def attribute_cases(out):
    mk = helper.make_node
    F = TensorProto.FLOAT
    w = tensor("w", F, [1, 1, 3, 3], raw=b"\0" * 36)
    add(out, "conv_kernel_shape_rank.onnx",
        model([mk("Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[3, 3, 3])],
              [vinfo("x", shape=(1, 1, 5, 5))], [vinfo("y", shape=None)], inits=[w]),
        r"kernel_shape")
    add(out, "transpose_perm_length.onnx",
        model([mk("Transpose", ["x"], ["y"], name="tr", perm=[1, 0])],
              [vinfo("x", shape=(2, 3, 4))], [vinfo("y", shape=None)]), r"perm")
    add(out, "transpose_perm_repeated.onnx",
        model([mk("Transpose", ["x"], ["y"], name="tr", perm=[0, 0, 1])],
              [vinfo("x", shape=(2, 3, 4))], [vinfo("y", shape=None)]), r"perm")
    add(out, "transpose_perm_huge.onnx",
        model([mk("Transpose", ["x"], ["y"], name="tr", perm=[0, 1 << 40, 2])],
              [vinfo("x", shape=(2, 3, 4))], [vinfo("y", shape=None)]), r"perm")
    add(out, "transpose_perm_float.onnx",
        model([mk("Transpose", ["x"], ["y"], name="tr", perm=[1.0, 0.0])],
              [vinfo("x")], [vinfo("y", shape=None)]), r"perm")
    add(out, "reshape_incompatible.onnx",
        model([mk("Reshape", ["x", "s"], ["y"], name="reshape")],
              [vinfo("x")], [vinfo("y", shape=None)],
              inits=[tensor("s", TensorProto.INT64, [2], int64_data=[4, 2])]),
        r"6.*8|8.*6|elements|incompatible|cannot reshape")
    add(out, "reshape_two_minus_one.onnx",
        model([mk("Reshape", ["x", "s"], ["y"], name="reshape")],
              [vinfo("x")], [vinfo("y", shape=None)],
              inits=[tensor("s", TensorProto.INT64, [2], int64_data=[-1, -1])]), r"-1")
    add(out, "gather_index_out_of_range.onnx",
        model([mk("Gather", ["x", "i"], ["y"], name="gather", axis=0)],
              [vinfo("x")], [vinfo("y", shape=None)],
              inits=[tensor("i", TensorProto.INT64, [1], int64_data=[7])]),
        r"out of range|out of bounds")
    add(out, "gather_constant_index_out_of_range.onnx",
        model([mk("Gather", ["d", "i"], ["y"], name="gather", axis=0)],
              [], [vinfo("y", shape=None)],
              inits=[tensor("d", F, [3], float_data=[1, 2, 3]),
                     tensor("i", TensorProto.INT64, [1], int64_data=[-10])]),
        r"out of range|out of bounds")
    add(out, "concat_axis_out_of_range.onnx",
        model([mk("Concat", ["x", "x"], ["y"], name="concat", axis=5)],
              [vinfo("x")], [vinfo("y", shape=None)]), r"axis")
    add(out, "matmul_mismatch.onnx",
        model([mk("MatMul", ["x", "w"], ["y"], name="mm")],
              [vinfo("x")], [vinfo("y", shape=None)],
              inits=[tensor("w", F, [4, 5], raw=b"\0" * 80)]), r"3.*4|4.*3|mismatch|inner")
    add(out, "add_broadcast_mismatch.onnx",
        model([mk("Add", ["x", "w"], ["y"], name="add")],
              [vinfo("x")], [vinfo("y", shape=None)],
              inits=[tensor("w", F, [4], raw=b"\0" * 16)]), r"broadcast")
    # Outputs whose element count overflows: shape inference must say so.
    big = tensor("s", TensorProto.INT64, [3], int64_data=[1 << 40] * 3)
    add(out, "constant_of_shape_huge.onnx",
        model([mk("ConstantOfShape", ["s"], ["y"], name="cos")], [], [vinfo("y", shape=None)],
              inits=[big]), r"too large|overflow|limit")
    add(out, "tile_output_overflow.onnx",
        model([mk("Tile", ["x", "s"], ["y"], name="tile")], [vinfo("x", shape=(2, 3, 4))],
              [vinfo("y", shape=None)], inits=[big]), r"too large|overflow|limit")
    add(out, "expand_output_overflow.onnx",
        model([mk("Expand", ["x", "s"], ["y"], name="expand")], [vinfo("x", shape=(1, 1, 1))],
              [vinfo("y", shape=None)], inits=[big]), r"too large|overflow|limit")
    add(out, "resize_output_too_large.onnx",
        model([mk("Resize", ["x", "", "sc"], ["y"], name="resize")], [vinfo("x", shape=(2, 3, 4))],
              [vinfo("y", shape=None)],
              inits=[tensor("sc", F, [3], float_data=[1.0, 1.0, 1e30])]), r"too large|overflow")
    # Each output dim fits in int64, their product does not (4e10 x 4e10).
    add(out, "resize_output_product_overflow.onnx",
        model([mk("Resize", ["x", "", "sc"], ["y"], name="resize")], [vinfo("x", shape=(1, 1, 4, 4))],
              [vinfo("y", shape=None)],
              inits=[tensor("sc", F, [4], float_data=[1.0, 1.0, 1e10, 1e10])]), r"larger than the limit")
    # (a declared rank or dim that disagrees is taken from the computation
    # with a note, as ONNX Runtime does: tests/cli/run.sh; another dtype
    # is an error there too)
    add(out, "declared_dtype_mismatch.onnx",
        model([mk("Relu", ["x"], ["y"], name="relu")], [vinfo("x")],
              [vinfo("y", dt=TensorProto.INT64, shape=None)]),
        r"declared i64 but computes f32")
    add(out, "cast_to_99.onnx",
        model([mk("Cast", ["x"], ["y"], name="cast", to=99)], [vinfo("x")],
              [vinfo("y", shape=None)]), r"99")
    U8 = TensorProto.UINT8
    add(out, "quantize_output_dtype_int4.onnx",
        model([mk("QuantizeLinear", ["x", "s"], ["y"], name="q", output_dtype=TensorProto.INT4)], [vinfo("x")],
              [vinfo("y", dt=TensorProto.INT4, shape=None)], inits=[tensor("s", F, [], float_data=[0.5])],
              opsets=[helper.make_opsetid("", 21)]), r"output_dtype INT4.*not supported")
    add(out, "quantize_blocked_scale_shape.onnx",
        model([mk("QuantizeLinear", ["x", "s"], ["y"], name="q", axis=1, block_size=2)], [vinfo("x")],
              [vinfo("y", dt=U8, shape=None)], inits=[tensor("s", F, [2, 4], float_data=[1.0] * 8)],
              opsets=[helper.make_opsetid("", 21)]), r"blocked scale dim 1 is 4")
    add(out, "quantize_axis_scale_length.onnx",
        model([mk("QuantizeLinear", ["x", "s"], ["y"], name="q", axis=1)], [vinfo("x")],
              [vinfo("y", dt=U8, shape=None)], inits=[tensor("s", F, [4], float_data=[1.0] * 4)]),
        r"1-D tensor of 3 values")
    add(out, "dequantize_zero_point_dtype.onnx",
        model([mk("DequantizeLinear", ["x", "s", "z"], ["y"], name="dq")], [vinfo("x", dt=U8)],
              [vinfo("y", shape=None)], inits=[tensor("s", F, [], float_data=[0.5]),
                                               tensor("z", TensorProto.INT8, [], int32_data=[0])]),
        r"x_zero_point has dtype i8")
    add(out, "conv_missing_weight_rank.onnx",
        model([mk("Conv", ["x", "w"], ["y"], name="conv")],
              [vinfo("x", shape=(1, 1, 5, 5))], [vinfo("y", shape=None)],
              inits=[tensor("w", F, [3], raw=b"\0" * 12)]), r"rank|weight|dims")


def misc_attribute_cases(out):
    mk = helper.make_node
    n = mk("Relu", ["x"], ["y"], name="relu")
    n.attribute.append(helper.make_attribute("g", helper.make_graph([], "sub", [], [])))
    add(out, "graph_attribute_on_relu.onnx", model([n], [vinfo("x")], [vinfo("y")]),
        r"attribute|subgraph")
    n = mk("Transpose", ["x"], ["y"], name="tr", perm=[1, 0])
    n.attribute[0].type = onnx.AttributeProto.FLOAT
    add(out, "attribute_type_field_lies.onnx", model([n], [vinfo("x")], [vinfo("y", shape=None)]),
        r"perm")
    n = mk("LeakyRelu", ["x"], ["y"], name="lrelu")
    a = n.attribute.add()
    a.name = "alpha"
    a.type = onnx.AttributeProto.FLOAT
    a.ref_attr_name = "outer_alpha"
    add(out, "ref_attr_outside_function.onnx", model([n], [vinfo("x")], [vinfo("y")]),
        r"ref_attr|refer|outer_alpha")
    # NonMaxSuppression: boxes not [batch, boxes, 4], a bad center_point_box
    nms_out = [vinfo("sel", TensorProto.INT64, shape=None)]
    n = mk("NonMaxSuppression", ["b", "s"], ["sel"], name="nms")
    add(out, "nms_boxes_rank2.onnx", model([n], [vinfo("b", shape=(5, 4)), vinfo("s", shape=(1, 1, 5))], nms_out),
        r"nms.*must be 3-D")
    n = mk("NonMaxSuppression", ["b", "s"], ["sel"], name="nms")
    add(out, "nms_boxes_3_coords.onnx", model([n], [vinfo("b", shape=(1, 5, 3)), vinfo("s", shape=(1, 1, 5))],
                                              nms_out), r"nms.*4 coordinates")
    n = mk("NonMaxSuppression", ["b", "s"], ["sel"], name="nms", center_point_box=2)
    add(out, "nms_center_point_box_2.onnx", model([n], [vinfo("b", shape=(1, 5, 4)), vinfo("s", shape=(1, 1, 5))],
                                                  nms_out), r"nms.*center_point_box")
    # RoiAlign: rois not [regions, 4], an unknown mode
    roi_in = [vinfo("x", shape=(1, 2, 4, 4)), vinfo("r", shape=(3, 5)), vinfo("b", TensorProto.INT64, shape=(3,))]
    n = mk("RoiAlign", ["x", "r", "b"], ["y"], name="roi")
    add(out, "roialign_rois_5_coords.onnx", model([n], roi_in, [vinfo("y", shape=None)]), r"roi.*4 coordinates")
    n = mk("RoiAlign", ["x", "r", "b"], ["y"], name="roi", mode="median")
    roi_in[1] = vinfo("r", shape=(3, 4))
    add(out, "roialign_mode_median.onnx", model([n], roi_in, [vinfo("y", shape=None)]), r"roi.*mode must be avg or max")
    c = mk("Constant", [], ["y"], name="c", value=external("v", [2, 3], "../weights.bin"))
    add(out, "ext/constant_dotdot.onnx", model([c], [], [vinfo("y")]), r"\.\.|outside|leaves")


def name_cases(out):
    mk = helper.make_node
    huge = "n" * (1 << 20)
    add(out, "huge_node_name.onnx",
        model([mk("NoSuchOp", ["x"], ["y"], name=huge)], [vinfo("x")], [vinfo("y")]),
        r"NoSuchOp", SHORT_MAXLEN)
    add(out, "huge_value_name.onnx",
        model([mk("Add", ["x", "v" * (1 << 20)], ["y"], name="add")], [vinfo("x")], [vinfo("y")]),
        r"'vvvv", SHORT_MAXLEN)
    add(out, "huge_op_type.onnx",
        model([mk("Op" * (1 << 19), ["x"], ["y"], name="n")], [vinfo("x")], [vinfo("y")]),
        r"OpOp", SHORT_MAXLEN)
    # Control characters in names must not break the one-line message or
    # reach the terminal (run.sh rejects any control byte on stderr).
    add(out, "newline_in_node_name.onnx",
        model([mk("NoSuchOp", ["x"], ["y"], name="bad\nname\r\n")], [vinfo("x")], [vinfo("y")]),
        r"NoSuchOp")
    add(out, "escape_in_node_name.onnx",
        model([mk("NoSuchOp", ["x"], ["y"], name="\x1b[2J\x1b[31mred")], [vinfo("x")], [vinfo("y")]),
        r"NoSuchOp")
    add(out, "newline_in_value_name.onnx",
        model([mk("Add", ["x", "a\nb"], ["y"], name="add")], [vinfo("x")], [vinfo("y")]),
        r"add")
    add(out, "newline_in_op_type.onnx",
        model([mk("No\nSuchOp", ["x"], ["y"], name="n")], [vinfo("x")], [vinfo("y")]),
        r"SuchOp")
    # Names are bytes on the wire; protobuf-c does not check UTF-8.
    add(out, "invalid_utf8_name.onnx",
        relu_model().SerializeToString().replace(b"relu", b"\xff\xfe\xfd\xfc").replace(
            b"Relu", b"N\xffop"),
        r"unsupported|unknown|not supported|utf")


def text_cases(out):
    """The text IR (.icc) goes through the same driver paths as ONNX."""
    head = b"graph @g(%x: f32[2]) -> (%y) {\n"
    for name, text, expect in [
        ("empty", b"", r"expected 'graph'"),
        ("unknown_op", head + b"  %y = Foo(%x) : f32[2]\n}\n", r"unknown op Foo"),
        ("truncated", head + b"  %y = Relu(%x", r"expected"),
        ("undefined_value", head + b"  %y = Relu(%h9) : f32[2]\n}\n", r"undefined value %h9"),
        ("self_use", head + b"  %y = Relu(%y) : f32[2]\n}\n", r"undefined value %y"),
        ("nul_byte", head + b"  %y = Re\0lu(%x) : f32[2]\n}\n", r"unknown op|NUL"),
        ("control_char", head + b'  %y = Relu(%x) "\x1b[31m" : f32[2]\n}\n', r"control character"),
        ("dims_overflow", b"graph @g() -> (%y) {\n  %y = const f32[4611686018427387904,4] @0\n}\n"
         b'data @0 = hex"00"\n', r"overflow|too large"),
        ("data_size", b"graph @g() -> (%y) {\n  %y = const f32[2] @0\n}\n"
         b'data @0 = hex"0000"\n', r"data @0"),
        ("rank_9", b"graph @g(%x: f32[1,1,1,1,1,1,1,1,1]) -> (%x) {\n}\n", r"rank"),
    ]:
        add(out, f"text_{name}.icc", text, expect)
    add(out, "text_huge_name.icc", head + b'  %y = Relu(%"' + b"v" * (1 << 20) + b'") : f32[2]\n}\n',
        r"undefined value", SHORT_MAXLEN)


def special_files(out):
    """Files that are not regular: the reader must not hang or crash."""
    fifo = os.path.join(out, "fifo.onnx")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    CASES.append(("fifo.onnx", r"regular file", DEFAULT_MAXLEN))
    os.makedirs(os.path.join(out, "directory.onnx"), exist_ok=True)
    CASES.append(("directory.onnx", r"regular file|directory", DEFAULT_MAXLEN))
    link = os.path.join(out, "dangling_link.onnx")
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink("no_such_model.onnx", link)
    CASES.append(("dangling_link.onnx", r"no such file|cannot open", DEFAULT_MAXLEN))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_corpus.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    bytes_cases(out)
    tensor_cases(out)
    external_cases(out)
    graph_cases(out)
    attribute_cases(out)
    misc_attribute_cases(out)
    name_cases(out)
    text_cases(out)
    special_files(out)
    names = [c[0] for c in CASES]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        sys.exit(f"make_corpus.py: duplicate case names: {sorted(dup)}")
    with open(os.path.join(out, "cases.tsv"), "w") as f:
        f.write("# file\texpected error (ERE, any case)\tmax line length\n")
        for name, expect, maxlen in CASES:
            assert "\t" not in expect and "\n" not in expect
            f.write(f"{name}\t{expect}\t{maxlen}\n")


if __name__ == "__main__":
    main()
