"""icc.load / icc.Model: description, outputs against ONNX Runtime, zero-copy
inputs, preallocated outputs, DLPack in and out, the GIL released."""
import ctypes
import threading
import time

import numpy as np
import pytest

import icc
from conftest import ort_run

RTOL, ATOL = 1e-4, 1e-5


def test_describe(models):
    m = icc.load(models.two[1])
    assert [t.name for t in m.inputs] == ["a", "b"]
    assert [t.name for t in m.outputs] == ["y", "z"]
    assert m.inputs[0].shape == ("N", 4) and m.inputs[0].dtype == np.float32
    assert m.outputs[1].dtype == np.int64 and m.outputs[1].type == "tensor(int64)"
    assert m.symbols == ("N",)
    assert m.compiler_version


@pytest.mark.parametrize("batch", [1, 3, 8])
def test_cnn_vs_onnxruntime(models, batch):
    onnx_path, so = models.cnn
    m = icc.load(so)
    x = np.random.default_rng(batch).standard_normal((batch, 3, 16, 16)).astype(np.float32)
    y = m(x=x)
    want = ort_run(onnx_path, {"x": x})[0]
    assert y.shape == want.shape == (batch, 10)
    np.testing.assert_allclose(y, want, rtol=RTOL, atol=ATOL)
    # the dict form, same answer
    np.testing.assert_array_equal(m.run({"x": x})[0], y)


def test_transformer_vs_onnxruntime(models):
    onnx_path, so = models.transformer
    m = icc.load(so)
    r = np.random.default_rng(7)
    feeds = {"hidden": r.standard_normal((1, 16, 256)).astype(np.float32),
             "mask": np.where(r.random((1, 1, 1, 16)) < 0.2, -1e4, 0).astype(np.float32)}
    y = m.run(feeds)[0]
    want = ort_run(onnx_path, feeds)[0]
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-4)


def test_two_outputs_and_dtypes(models):
    onnx_path, so = models.two
    m = icc.load(so)
    a = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    y, z = m(a=a, b=b)
    wy, wz = ort_run(onnx_path, {"a": a, "b": b})
    assert z.dtype == np.int64
    np.testing.assert_array_equal(y, wy)
    np.testing.assert_array_equal(z, wz)


def test_contiguous_input_is_not_copied(models):
    m = icc.load(models.cnn[1])
    x = np.ones((2, 3, 16, 16), np.float32)
    assert m._input(0, x) is x
    # a transposed view, another dtype, a list: converted copies, same answers
    xt = np.ascontiguousarray(np.ones((16, 16, 3, 2), np.float32)).transpose(3, 2, 1, 0)
    assert not xt.flags.c_contiguous
    c = m._input(0, xt)
    assert c is not xt and c.flags.c_contiguous
    np.testing.assert_array_equal(m(x=xt), m(x=x))
    np.testing.assert_array_equal(m(x=x.astype(np.float64)), m(x=x))
    np.testing.assert_array_equal(m(x=x.tolist()), m(x=x))
    # read-only memory is read in place too
    ro = np.frombuffer(x.tobytes(), np.float32).reshape(x.shape)
    assert not ro.flags.writeable and m._input(0, ro) is ro
    np.testing.assert_array_equal(m(x=ro), m(x=x))


def test_noncontiguous_values_vs_onnxruntime(models):
    onnx_path, so = models.cnn
    m = icc.load(so)
    big = np.random.default_rng(3).standard_normal((4, 3, 32, 32)).astype(np.float32)
    x = big[::2, :, ::2, 1::2]  # strided view
    want = ort_run(onnx_path, {"x": np.ascontiguousarray(x)})[0]
    np.testing.assert_allclose(m(x=x), want, rtol=RTOL, atol=ATOL)


def test_out_preallocated(models):
    m = icc.load(models.two[1])
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    b = np.full((2, 4), 3, np.float32)
    y = np.full((2, 4), np.nan, np.float32)
    z = np.full((2, 4), -7, np.int64)
    res = m.run({"a": a, "b": b}, out=[y, z])
    assert res[0] is y and res[1] is z
    np.testing.assert_array_equal(y, a + b)
    np.testing.assert_array_equal(z, (a < b).astype(np.int64))
    # by name, one given and one made
    y2 = np.empty((2, 4), np.float32)
    r2 = m.run({"a": a, "b": b}, out={"y": y2})
    assert r2[0] is y2
    np.testing.assert_array_equal(r2[1], z)


class DLPackOnly:
    """Exposes an array through the DLPack protocol and nothing else."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kw):
        return self._a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_dlpack_input(models):
    onnx_path, so = models.cnn
    m = icc.load(so)
    x = np.random.default_rng(4).standard_normal((2, 3, 16, 16)).astype(np.float32)
    y = m(x=DLPackOnly(x))
    np.testing.assert_allclose(y, ort_run(onnx_path, {"x": x})[0], rtol=RTOL, atol=ATOL)
    # it was read in place: np.from_dlpack shares the memory
    assert np.shares_memory(m._input(0, DLPackOnly(x)), x)


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


def read_capsule(cap):
    """The tensor a DLPack capsule holds, read by hand (DLManagedTensor starts
    with its DLTensor), as a numpy copy."""
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    assert get_name(cap) == b"dltensor"
    get_ptr = ctypes.pythonapi.PyCapsule_GetPointer
    get_ptr.restype, get_ptr.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    t = DLTensor.from_address(get_ptr(cap, b"dltensor"))
    assert t.device_type == 1  # kDLCPU
    shape = tuple(t.shape[k] for k in range(t.ndim))
    dtype = {(2, 32): np.float32, (0, 64): np.int64}[(t.code, t.bits)]
    n = int(np.prod(shape))
    buf = (ctypes.c_char * (n * np.dtype(dtype).itemsize)).from_address(t.data + t.byte_offset)
    return np.frombuffer(bytes(buf), dtype).reshape(shape)


def test_dlpack_outputs(models):
    m = icc.load(models.two[1])
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.full((3, 4), 5, np.float32)
    caps = m.run({"a": a, "b": b}, dlpack=True)
    assert len(caps) == 2
    np.testing.assert_array_equal(read_capsule(caps[0]), a + b)
    np.testing.assert_array_equal(read_capsule(caps[1]), (a < b).astype(np.int64))
    # the default outputs speak DLPack themselves
    y, _ = m(a=a, b=b)
    np.testing.assert_array_equal(np.from_dlpack(y), a + b)


def test_gil_released_during_run(models, monkeypatch):
    """While one thread is inside icc_run another runs Python: a thread that
    sleeps 0.5 ms and counts (holding the GIL only to count) moves many times
    during one long call. Were the GIL held through the call it could count only
    when the caller's few lines of Python around it let go: twice at most."""
    monkeypatch.setenv("ICC_NUM_THREADS", "1")
    m = icc.load(models.cnn[1])
    # ctypes releases the GIL for CDLL functions (not PyDLL's, flagged PYTHONAPI)
    assert not m._core.lib.icc_run._flags_ & ctypes._FUNCFLAG_PYTHONAPI
    feeds = {"x": np.ones((4096, 3, 16, 16), np.float32)}  # a call of ~10 ms (512 took 1.6 ms: flaky)
    m.run(feeds)
    count, stop = [0], threading.Event()

    def counter():
        while not stop.is_set():
            time.sleep(0.0005)
            count[0] += 1

    inside = []
    th = threading.Thread(target=counter)
    th.start()
    try:
        for _ in range(100):
            before = count[0]
            m.run(feeds)
            inside.append(count[0] - before)
            if max(inside) >= 8:
                break
    finally:
        stop.set()
        th.join()
    assert max(inside) >= 8, inside
