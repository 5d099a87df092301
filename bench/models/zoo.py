#!/usr/bin/env python3
"""Writes the side-by-side benchmark's synthetic models as ONNX, random weights from fixed seeds.

    python3 bench/models/zoo.py OUTDIR [NAME ...]

NAME (default: all): mlp_b1, mlp_b16 (784-256-256-10), mobilenetv2 (224x224, the paper's
inverted residuals), mobilenetv3 (MobileNetV3-Small-style: squeeze-excite, HardSwish, 224x224),
yolo (a YOLO-style detector at 320x320: SiLU conv stages, an FPN neck with Resize upsampling and
Concat, three 1x1 heads), dbnet (a DBNet-style text detector at 320x320: strided backbone, FPN
of Resize + Add, the probability head upsampled by two ConvTranspose), crnn (a CRNN-style
recognizer: conv stack on a 32x128 line image, then a bidirectional LSTM of 128 and a per-step
classifier of 37), minilm (a 6-layer MiniLM-shaped encoder: hidden 384, 12 heads, FFN 1536,
seq 128), add1, add64, add512 (chains of Add on f32[1,1024]). Each is written as OUTDIR/NAME.onnx
with static shapes, batch 1 unless named.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class G:
    """A graph under construction: constants, nodes, fresh names."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.inits, self.nodes, self.n = [], [], 0

    def name(self, op):
        self.n += 1
        return "%s_%d" % (op.lower(), self.n)

    def w(self, *shape, scale=None):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        scale = scale if scale is not None else (2.0 / max(fan_in, 1)) ** 0.5
        nm = self.name("w")
        self.inits.append(numpy_helper.from_array((self.rng.standard_normal(shape) * scale).astype(np.float32), nm))
        return nm

    def c(self, value, dtype=np.float32):
        nm = self.name("c")
        self.inits.append(numpy_helper.from_array(np.array(value, dtype=dtype), nm))
        return nm

    def op(self, op, ins, nout=1, **attrs):
        outs = [self.name(op) for _ in range(nout)]
        self.nodes.append(helper.make_node(op, ins, outs, name=outs[0], **attrs))
        return outs[0] if nout == 1 else outs

    def model(self, name, ins, outs):
        g = helper.make_graph(self.nodes, name, ins, outs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="icc-bench")
        m.ir_version = 8

        return m

    # ---- CNN pieces (BatchNorm folded into the conv's bias, as exporters do) ----
    def conv(self, x, cin, cout, k=1, s=1, groups=1, act=None, bias=True):
        ins = [x, self.w(cout, cin // groups, k, k)] + ([self.c(np.zeros(cout))] if bias else [])
        y = self.op("Conv", ins, kernel_shape=[k, k], strides=[s, s], pads=[k // 2] * 4, group=groups)
        return self.act(y, act)

    def act(self, y, act):
        if act == "relu":
            return self.op("Relu", [y])
        if act == "relu6":
            return self.op("Clip", [y, self.c(0.0), self.c(6.0)])
        if act == "hswish":
            return self.op("HardSwish", [y])
        if act == "silu":
            return self.op("Mul", [y, self.op("Sigmoid", [y])])
        if act == "leaky":
            return self.op("LeakyRelu", [y], alpha=0.1)
        return y

    def se(self, x, c, r=4):
        s = self.op("GlobalAveragePool", [x])
        s = self.conv(s, c, max(8, c // r), act="relu")
        s = self.op("HardSigmoid", [self.conv(s, max(8, c // r), c)], alpha=1 / 6, beta=0.5)
        return self.op("Mul", [x, s])

    def classifier(self, x, c, classes=1000):
        x = self.op("Flatten", [self.op("GlobalAveragePool", [x])])
        return self.op("Gemm", [x, self.w(classes, c), self.c(np.zeros(classes))], transB=1)

    def upsample(self, x, f=2):
        return self.op("Resize", [x, "", self.c([1, 1, f, f])], mode="nearest")


def image(name="input", c=3, h=224, w=224):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, c, h, w])


def out(name):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, None)


def finish(g, name, ins, ys):
    names = []
    for i, y in enumerate(ys):
        g.nodes.append(helper.make_node("Identity", [y], ["output_%d" % i], name="output_%d" % i))
        names.append(out("output_%d" % i))
    return g.model(name, ins, names)


def mlp(batch):
    g = G(1)
    x = "input"
    for fin, fout, act in ((784, 256, True), (256, 256, True), (256, 10, False)):
        x = g.op("Gemm", [x, g.w(fout, fin), g.c(np.zeros(fout))], transB=1)
        x = g.op("Relu", [x]) if act else x
    return finish(g, "mlp", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 784])], [x])


def mobilenetv2():
    g = G(2)
    x = g.conv("input", 3, 32, 3, 2, act="relu6")
    cin = 32
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1)):
        for i in range(n):
            stride = s if i == 0 else 1
            h = g.conv(x, cin, cin * t, act="relu6") if t != 1 else x
            h = g.conv(h, cin * t, cin * t, 3, stride, groups=cin * t, act="relu6")
            h = g.conv(h, cin * t, c)
            x = g.op("Add", [x, h]) if stride == 1 and cin == c else h
            cin = c
    x = g.conv(x, 320, 1280, act="relu6")
    return finish(g, "mobilenetv2", [image()], [g.classifier(x, 1280)])


def mobilenetv3():
    g = G(3)
    x = g.conv("input", 3, 16, 3, 2, act="hswish")
    cin = 16
    # (kernel, expansion, out, squeeze-excite, activation, stride): MobileNetV3-Small's table
    for k, e, c, se, a, s in ((3, 16, 16, True, "relu", 2), (3, 72, 24, False, "relu", 2),
                              (3, 88, 24, False, "relu", 1), (5, 96, 40, True, "hswish", 2),
                              (5, 240, 40, True, "hswish", 1), (5, 240, 40, True, "hswish", 1),
                              (5, 120, 48, True, "hswish", 1), (5, 144, 48, True, "hswish", 1),
                              (5, 288, 96, True, "hswish", 2), (5, 576, 96, True, "hswish", 1),
                              (5, 576, 96, True, "hswish", 1)):
        h = g.conv(x, cin, e, act=a) if e != cin else x
        h = g.conv(h, e, e, k, s, groups=e, act=a)
        h = g.se(h, e) if se else h
        h = g.conv(h, e, c)
        x = g.op("Add", [x, h]) if s == 1 and cin == c else h
        cin = c
    x = g.conv(x, 96, 576, act="hswish")
    x = g.op("GlobalAveragePool", [x])
    x = g.act(g.conv(x, 576, 1024), "hswish")
    x = g.op("Flatten", [x])
    return finish(g, "mobilenetv3", [image()], [g.op("Gemm", [x, g.w(1000, 1024), g.c(np.zeros(1000))], transB=1)])


def yolo():
    g = G(4)
    x = g.conv("input", 3, 16, 3, 2, act="silu")
    feats, cin = [], 16
    for c in (32, 64, 128, 256):   # strides 4, 8, 16, 32
        x = g.conv(x, cin, c, 3, 2, act="silu")
        h = g.conv(g.conv(x, c, c // 2, act="silu"), c // 2, c, 3, act="silu")
        x = g.op("Add", [x, h])
        feats.append(x)
        cin = c
    p5 = g.conv(feats[3], 256, 128, act="silu")
    p4 = g.conv(g.op("Concat", [g.upsample(p5), feats[2]], axis=1), 256, 128, 3, act="silu")
    p4r = g.conv(p4, 128, 64, act="silu")
    p3 = g.conv(g.op("Concat", [g.upsample(p4r), feats[1]], axis=1), 128, 64, 3, act="silu")
    heads = [g.conv(p, c, 3 * 85) for p, c in ((p3, 64), (p4, 128), (p5, 128))]   # 3 anchors x (4 + 1 + 80)
    return finish(g, "yolo", [image(h=320, w=320)], heads)


def dbnet():
    g = G(5)
    x = g.conv("input", 3, 16, 3, 2, act="relu")
    feats, cin = [], 16
    for c in (24, 48, 96, 192):   # strides 4 .. 32
        x = g.conv(g.conv(x, cin, c, 3, 2, act="relu"), c, c, 3, act="relu")
        feats.append(x)
        cin = c
    lat = [g.conv(f, c, 64) for f, c in zip(feats, (24, 48, 96, 192))]
    p = lat[3]
    outs = [p]
    for i in (2, 1, 0):   # top-down: upsample and add
        p = g.op("Add", [g.upsample(p), lat[i]])
        outs.append(p)
    # each level to 1/4 and concatenated, as DBNet's neck
    ups = [g.upsample(g.conv(o, 64, 16, 3), f) if f > 1 else g.conv(o, 64, 16, 3) for o, f in zip(outs, (8, 4, 2, 1))]
    fuse = g.op("Concat", ups, axis=1)
    h = g.conv(fuse, 64, 16, 3, act="relu")
    h = g.op("Relu", [g.op("ConvTranspose", [h, g.w(16, 16, 2, 2), g.c(np.zeros(16))], kernel_shape=[2, 2],
                           strides=[2, 2])])
    h = g.op("ConvTranspose", [h, g.w(16, 1, 2, 2), g.c(np.zeros(1))], kernel_shape=[2, 2], strides=[2, 2])
    return finish(g, "dbnet", [image(h=320, w=320)], [g.op("Sigmoid", [h])])


def crnn():
    g = G(6)
    x = g.conv("input", 1, 32, 3, act="relu")
    x = g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])          # 16 x 64
    x = g.conv(x, 32, 64, 3, act="relu")
    x = g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])          # 8 x 32
    x = g.conv(g.conv(x, 64, 128, 3, act="relu"), 128, 128, 3, act="relu")
    x = g.op("MaxPool", [x], kernel_shape=[2, 1], strides=[2, 1])          # 4 x 32
    x = g.conv(x, 128, 256, 3, act="relu")
    x = g.op("MaxPool", [x], kernel_shape=[4, 1], strides=[4, 1])          # 1 x 32
    x = g.op("Transpose", [g.op("Squeeze", [x, g.c([2], np.int64)])], perm=[2, 0, 1])   # [32, 1, 256]
    hidden = 128
    y = g.op("LSTM", [x, g.w(2, 4 * hidden, 256, scale=0.05), g.w(2, 4 * hidden, hidden, scale=0.05),
                      g.c(np.zeros((2, 8 * hidden)))], hidden_size=hidden, direction="bidirectional")
    y = g.op("Reshape", [g.op("Transpose", [y], perm=[0, 2, 1, 3]), g.c([32, 1, 2 * hidden], np.int64)])
    y = g.op("Add", [g.op("MatMul", [y, g.w(2 * hidden, 37)]), g.c(np.zeros(37))])
    return finish(g, "crnn", [image(c=1, h=32, w=128)], [y])


def minilm(layers=6, hidden=384, heads=12, ffn=1536, seq=128):
    g = G(7)
    d = hidden // heads
    x = "input"

    def ln(x):
        return g.op("LayerNormalization", [x, g.c(np.ones(hidden)), g.c(np.zeros(hidden))], axis=-1, epsilon=1e-12)

    def lin(x, fin, fout):
        return g.op("Add", [g.op("MatMul", [x, g.w(fin, fout, scale=0.02)]), g.c(np.zeros(fout))])

    def split_heads(x):
        return g.op("Transpose", [g.op("Reshape", [x, g.c([1, seq, heads, d], np.int64)])], perm=[0, 2, 1, 3])

    for _ in range(layers):
        q, k, v = (split_heads(lin(x, hidden, hidden)) for _ in range(3))
        s = g.op("Mul", [g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])]), g.c(1 / np.sqrt(d))])
        a = g.op("MatMul", [g.op("Softmax", [g.op("Add", [s, "mask"])], axis=-1), v])
        a = g.op("Reshape", [g.op("Transpose", [a], perm=[0, 2, 1, 3]), g.c([1, seq, hidden], np.int64)])
        x = ln(g.op("Add", [x, lin(a, hidden, hidden)]))
        h = lin(x, hidden, ffn)
        h = g.op("Mul", [g.op("Mul", [h, g.c(0.5)]), g.op("Add", [g.c(1.0), g.op("Erf", [g.op("Mul", [h, g.c(1 / np.sqrt(2))])])])])
        x = ln(g.op("Add", [x, lin(h, ffn, hidden)]))
    ins = [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, seq, hidden]),
           helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, 1, 1, seq])]
    return finish(g, "minilm", ins, [x])


def add_chain(n):
    g = G(8)
    x = "input"
    for _ in range(n):
        x = g.op("Add", [x, g.c(np.full((1, 1024), 1e-3))])
    return finish(g, "add%d" % n, [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 1024])], [x])


MODELS = {
    "mlp_b1": lambda: mlp(1), "mlp_b16": lambda: mlp(16), "mobilenetv2": mobilenetv2, "mobilenetv3": mobilenetv3,
    "yolo": yolo, "dbnet": dbnet, "crnn": crnn, "minilm": minilm,
    "add1": lambda: add_chain(1), "add64": lambda: add_chain(64), "add512": lambda: add_chain(512),
}


def write(outdir, name):
    path = os.path.join(outdir, name + ".onnx")
    onnx.save(MODELS[name](), path)
    return path


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    os.makedirs(sys.argv[1], exist_ok=True)
    for name in sys.argv[2:] or MODELS:
        if name not in MODELS:
            sys.exit("zoo.py: unknown model '%s' (known: %s)" % (name, ", ".join(MODELS)))
        print(write(sys.argv[1], name))


if __name__ == "__main__":
    main()
