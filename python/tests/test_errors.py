"""Every bad input raises ValueError with a message naming the thing; load
and compile failures raise icc's errors with one-line messages."""
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto as P, helper as h

import icc
from conftest import save


def one_line(e):
    s = str(e.value)
    assert s and "\n" not in s, repr(s)
    return s


@pytest.fixture(scope="module")
def two(models):
    return icc.load(models.two[1])


A = np.zeros((3, 4), np.float32)


@pytest.mark.parametrize("feeds, words", [
    ({"a": A}, ["missing input 'b'"]),
    ({"a": A, "b": A, "c": A}, ["unknown input 'c'", "a, b"]),
    ({"a": A, "b": np.zeros((3, 4), np.complex64)}, ["input 'b'", "complex64", "float32"]),
    ({"a": A, "b": np.array([["x"] * 4] * 3)}, ["input 'b'", "float32"]),
    ({"a": A, "b": np.zeros((3, 4, 1), np.float32)}, ["input 'b'", "rank 3", "wants 2"]),
    ({"a": A, "b": np.zeros(4, np.float32)}, ["input 'b'", "rank 1"]),
    ({"a": A, "b": np.zeros((3, 5), np.float32)}, ["input 'b' dim 1", "5", "4"]),  # a fixed dim
    ({"a": A, "b": np.zeros((2, 4), np.float32)}, ["'b' dim 0 (N)", "2", "'a'"]),  # N disagrees
])
def test_bad_inputs(two, feeds, words):
    with pytest.raises(ValueError) as e:
        two.run(feeds)
    s = one_line(e)
    for w in words:
        assert w in s, (w, s)


def test_bad_out(two):
    feeds = {"a": A, "b": A}
    cases = [([np.empty((3, 4), np.float32)], "1 arrays for 2 outputs"),
             ({"q": np.empty((3, 4), np.float32)}, "unknown output 'q'"),
             ({"y": np.empty((3, 4), np.float64)}, "output 'y'"),
             ({"y": np.empty((4, 3), np.float32)}, "output 'y'"),
             ({"y": np.empty((4, 3), np.float32).T}, "C-contiguous"),
             ({"z": np.empty((3, 4), np.int32)}, "output 'z'"),
             ({"y": [[0.0] * 4] * 3}, "not list")]
    ro = np.empty((3, 4), np.float32)
    ro.flags.writeable = False
    cases.append(({"y": ro}, "writeable"))
    for out, word in cases:
        with pytest.raises(ValueError) as e:
            two.run(feeds, out=out)
        assert word in one_line(e), (word, str(e.value))


def test_closed_model(models):
    m = icc.load(models.mlp[1])
    m.close()
    m.close()  # twice is fine
    with pytest.raises(ValueError, match="closed"):
        m(x=np.zeros((1, 784), np.float32))


def test_load_errors(tmp_path):
    with pytest.raises(icc.LoadError) as e:
        icc.load(tmp_path / "nope.so")
    assert "no such file" in one_line(e)
    text = tmp_path / "text.so"
    text.write_text("not a library\n")
    with pytest.raises(icc.LoadError) as e:
        icc.load(text)
    assert "cannot load" in one_line(e)
    # a real shared library that is not a model: libm, as this process has it mapped
    with open("/proc/self/maps") as f:
        libm = next(ln.split()[-1] for ln in f if "/libm.so" in ln or "/libm-" in ln)
    with pytest.raises(icc.LoadError) as e:
        icc.load(libm)
    assert "not a model compiled by icc" in one_line(e)


def test_wrong_prefix(models):
    with pytest.raises(icc.LoadError) as e:
        icc.load(models.mlp[1], prefix="other")
    assert "other_model" in one_line(e)


def test_compile_errors(tmp_path):
    with pytest.raises(icc.CompileError) as e:
        icc.compile(tmp_path / "missing.onnx", tmp_path / "m.so")
    s = one_line(e)
    assert s.startswith("icc: error:") and "missing.onnx" in s
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x08\x07garbage")
    with pytest.raises(icc.CompileError) as e:
        icc.compile(junk, tmp_path / "m.so")
    assert "junk.onnx" in one_line(e)
    # a node whose attribute the compiler refuses, named by the message
    bad = save([h.make_node("Conv", ["x", "w"], ["y"], name="conv1", kernel_shape=[3, 3, 3])],
               [h.make_tensor_value_info("x", P.FLOAT, [1, 1, 8, 8]),
                h.make_tensor_value_info("w", P.FLOAT, [1, 1, 3, 3])],
               [h.make_tensor_value_info("y", P.FLOAT, None)], [], str(tmp_path / "bad.onnx"))
    with pytest.raises(icc.CompileError) as e:
        icc.compile(bad, tmp_path / "m.so")
    assert "conv1" in one_line(e)
    assert not (tmp_path / "m.so").exists()
    # options reach the compiler
    with pytest.raises(icc.CompileError) as e:
        icc.compile(bad, tmp_path / "m.so", precision="int3")
    assert "int3" in one_line(e)


def test_icc_not_found(monkeypatch, tmp_path):
    monkeypatch.setenv("ICC", str(tmp_path / "no-icc"))
    with pytest.raises(icc.Error) as e:
        icc.compile("x.onnx", tmp_path / "x.so")
    assert "ICC=" in one_line(e)


def test_compile_options(models, tmp_path):
    """shapes pins a symbol; name sets the prefix."""
    onnx_path = models.mlp[0]
    so = icc.compile(onnx_path, tmp_path / "pinned.so", opt=3, shapes={"x": (2, 784)}, name="mlp")
    with pytest.raises(icc.LoadError):
        icc.load(so)  # the prefix is mlp now
    m = icc.load(so, prefix="mlp")
    assert m.inputs[0].shape == (2, 784) and m.symbols == ()
    x = np.random.default_rng(5).standard_normal((2, 784)).astype(np.float32)
    np.testing.assert_allclose(m(x=x), icc.load(models.mlp[1])(x=x), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="dim 0"):
        m(x=np.zeros((3, 784), np.float32))


def test_external_weights(models, tmp_path):
    """weights="external" writes model.weights beside the .so; loading maps it."""
    so = icc.compile(models.cnn[0], tmp_path / "ext.so", weights="external")
    assert (tmp_path / "ext.weights").stat().st_size > 0
    x = np.random.default_rng(6).standard_normal((2, 3, 16, 16)).astype(np.float32)
    np.testing.assert_array_equal(icc.load(so)(x=x), icc.load(models.cnn[1])(x=x))
    os.remove(tmp_path / "ext.weights")
    with pytest.raises(icc.LoadError) as e:
        icc.load(so)
    assert "ext.weights" in one_line(e)


def test_abi_version_checked(models, monkeypatch):
    """The package reads descriptors of the ABI versions it mirrors, no other."""
    from icc import _capi
    monkeypatch.setattr(_capi, "ABI_VERSION_MIN", 3)
    monkeypatch.setattr(_capi, "ABI_VERSION", 3)
    with pytest.raises(icc.LoadError) as e:
        icc.load(models.mlp[1])
    assert "ABI version 2, this package reads 3" in one_line(e)
    monkeypatch.setattr(_capi, "ABI_VERSION_MIN", 1)
    monkeypatch.setattr(_capi, "ABI_VERSION", 1)
    with pytest.raises(icc.LoadError) as e:
        icc.load(models.mlp[1])
    assert "ABI version 2, this package reads 1" in one_line(e)


def test_dtype_rule_same_kind(models):
    """Safe casts are made (a copy), and anything to a float; nothing that
    could wrap or truncate."""
    m = icc.load(models.cast[1])
    want = np.array([0, 2, -4], np.float32)
    np.testing.assert_array_equal(m(i=np.array([0, 1, -2], np.int64)), want)
    np.testing.assert_array_equal(m(i=np.array([0, 1, -2], np.int8)), want)   # int8 -> int64
    np.testing.assert_array_equal(m(i=np.array([0, 1, 2], np.uint32)), [0, 2, 4])
    np.testing.assert_array_equal(m(i=np.array([True, False])), [2, 0])
    np.testing.assert_array_equal(m(i=[0, 1, -2]), want)                      # a list
    for bad in (np.array([0.0, 1.0]), np.array([0, 1], np.float32), np.array([0, 1], np.uint64)):
        with pytest.raises(ValueError) as e:
            m(i=bad)
        assert "input 'i' has dtype %s, the model wants int64" % bad.dtype in one_line(e)


def test_to_float_inputs_convert(models):
    """int64 and float64 into a float32 input: converted, as astype would."""
    onnx_path, so = models.two
    m = icc.load(so)
    a = np.arange(8).reshape(2, 4)                 # int64
    b = np.linspace(0, 1, 8).reshape(2, 4)         # float64
    y, _ = m(a=a, b=b)
    np.testing.assert_array_equal(y, a.astype(np.float32) + b.astype(np.float32))


def test_bad_threads(models):
    for bad in (-1, 1.5, "2", True):
        with pytest.raises(ValueError) as e:
            icc.load(models.mlp[1], threads=bad)
        assert "threads" in one_line(e)
    assert icc.load(models.mlp[1], threads=2).threads == 2
