"""Trains the bundled example model: a small MLP on scikit-learn's 8x8 digits.

Writes digits.onnx (Flatten -> Gemm -> Relu -> Gemm -> Softmax, opset 17),
digits_input.npy (the first 8 test images, float32 [8,1,8,8], pixels 0..1),
digits_labels.txt (their true labels), and the whole held-out set for the C
app: digits_test.f32 (360 images, raw little-endian float32 [360,1,8,8]) and
digits_test.u8 (their labels, one byte each). Plain numpy gradient descent with
a fixed seed, so the result is reproducible. Needs numpy, onnx, scikit-learn;
only to regenerate the files, which are committed.

    python3 examples/digits/train.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from sklearn.datasets import load_digits

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(0)

digits = load_digits()
x = (digits.images / 16.0).astype(np.float32)          # [1797, 8, 8]
y = digits.target
idx = rng.permutation(len(x))
x, y = x[idx], y[idx]
ntest = 360
xtr, ytr, xte, yte = x[ntest:], y[ntest:], x[:ntest], y[:ntest]

H = 32
w1 = (rng.standard_normal((64, H)) * np.sqrt(2 / 64)).astype(np.float32)
b1 = np.zeros(H, np.float32)
w2 = (rng.standard_normal((H, 10)) * np.sqrt(2 / H)).astype(np.float32)
b2 = np.zeros(10, np.float32)


def forward(xb):
    h = np.maximum(xb.reshape(len(xb), 64) @ w1 + b1, 0)
    z = h @ w2 + b2
    z = z - z.max(axis=1, keepdims=True)
    p = np.exp(z)
    return h, p / p.sum(axis=1, keepdims=True)


lr = 0.1
for epoch in range(60):
    order = rng.permutation(len(xtr))
    for i in range(0, len(order), 32):
        b = order[i:i + 32]
        xb, yb = xtr[b].reshape(len(b), 64), ytr[b]
        h, p = forward(xb)
        g = p.copy()
        g[np.arange(len(b)), yb] -= 1
        g /= len(b)
        gw2, gb2 = h.T @ g, g.sum(0)
        gh = (g @ w2.T) * (h > 0)
        gw1, gb1 = xb.T @ gh, gh.sum(0)
        w2 -= lr * gw2; b2 -= lr * gb2; w1 -= lr * gw1; b1 -= lr * gb1

acc = (forward(xte)[1].argmax(1) == yte).mean()
print(f"test accuracy: {acc:.4f} on {ntest} held-out images")

graph = helper.make_graph(
    [
        helper.make_node("Flatten", ["image"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "w1", "b1"], ["h"], name="fc1"),
        helper.make_node("Relu", ["h"], ["hr"], name="relu1"),
        helper.make_node("Gemm", ["hr", "w2", "b2"], ["logits"], name="fc2"),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ],
    "digits_mlp",
    [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 1, 8, 8])],
    [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 10])],
    [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
     numpy_helper.from_array(w2, "w2"), numpy_helper.from_array(b2, "b2")],
)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="icc examples/digits/train.py")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(HERE, "digits.onnx"))
np.save(os.path.join(HERE, "digits_input.npy"), xte[:8].reshape(8, 1, 8, 8))
with open(os.path.join(HERE, "digits_labels.txt"), "w") as f:
    f.write(" ".join(str(v) for v in yte[:8]) + "\n")
xte.reshape(ntest, 1, 8, 8).astype("<f4").tofile(os.path.join(HERE, "digits_test.f32"))
yte.astype(np.uint8).tofile(os.path.join(HERE, "digits_test.u8"))
print("wrote digits.onnx, digits_input.npy, digits_labels.txt, digits_test.f32, digits_test.u8")
