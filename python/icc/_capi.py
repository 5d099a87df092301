"""The runtime's C API (include/icc/runtime.h), declared for ctypes.

Every model.so carries the runtime and exports its icc_* functions, so the
model's own library is the one these are bound to: nothing else is loaded.
CDLL (not PyDLL) releases the GIL around each call.
"""
import ctypes
import os

import numpy as np

# The model ABI versions this package reads (include/icc/runtime.h): 2 adds
# the init function and buffer after the fields mirrored here, so both read
# the same.
ABI_VERSION = 2
ABI_VERSION_MIN = 1

# icc_status
OK, ERR_INVALID, ERR_SHAPE, ERR_DTYPE, ERR_NOMEM, ERR_CPU, ERR_IO, ERR_ABI, ERR_INTERNAL, ERR_DEVICE = range(10)

c_int64_p = ctypes.POINTER(ctypes.c_int64)


class TensorDesc(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("dims", c_int64_p), ("dim_names", ctypes.POINTER(ctypes.c_char_p))]


class ModelDesc(ctypes.Structure):
    # The leading fields only: desc_size lets later fields be appended, and
    # this is read through a pointer, never allocated here.
    _fields_ = [("abi_version", ctypes.c_uint32), ("desc_size", ctypes.c_uint32),
                ("compiler_version", ctypes.c_char_p), ("name", ctypes.c_char_p),
                ("cpu_features", ctypes.c_char_p), ("ninputs", ctypes.c_int32),
                ("noutputs", ctypes.c_int32), ("inputs", ctypes.POINTER(TensorDesc)),
                ("outputs", ctypes.POINTER(TensorDesc)), ("nsymbols", ctypes.c_int32),
                ("symbols", ctypes.POINTER(ctypes.c_char_p))]


def _bf16():
    try:
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    except ImportError:  # the raw bits
        return np.dtype(np.uint16)


# ONNX TensorProto.DataType numbering (icc_dtype) <-> numpy
DTYPES = {1: np.dtype(np.float32), 2: np.dtype(np.uint8), 3: np.dtype(np.int8),
          4: np.dtype(np.uint16), 5: np.dtype(np.int16), 6: np.dtype(np.int32),
          7: np.dtype(np.int64), 9: np.dtype(np.bool_), 10: np.dtype(np.float16),
          11: np.dtype(np.float64), 12: np.dtype(np.uint32), 13: np.dtype(np.uint64),
          16: _bf16()}

# ONNX Runtime's type strings, for the InferenceSession shim
ORT_TYPES = {1: "tensor(float)", 2: "tensor(uint8)", 3: "tensor(int8)", 4: "tensor(uint16)",
             5: "tensor(int16)", 6: "tensor(int32)", 7: "tensor(int64)", 9: "tensor(bool)",
             10: "tensor(float16)", 11: "tensor(double)", 12: "tensor(uint32)",
             13: "tensor(uint64)", 16: "tensor(bfloat16)"}


def bind(path):
    """The model library at path, with the runtime's functions typed."""
    lib = ctypes.CDLL(os.path.abspath(path), mode=os.RTLD_LOCAL | os.RTLD_NOW)
    vp, i32 = ctypes.c_void_p, ctypes.c_int
    sigs = {
        "icc_model_open": (i32, [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(vp)]),
        "icc_model_close": (None, [vp]),
        "icc_model_describe": (ctypes.POINTER(ModelDesc), [vp]),
        "icc_model_input": (ctypes.POINTER(TensorDesc), [vp, i32]),
        "icc_model_output": (ctypes.POINTER(TensorDesc), [vp, i32]),
        "icc_context_create": (i32, [vp, vp, ctypes.POINTER(vp)]),
        "icc_context_destroy": (None, [vp]),
        "icc_context_set_threads": (i32, [vp, i32]),
        "icc_context_threads": (i32, [vp]),
        "icc_run": (i32, [vp, vp, vp, vp]),
        "icc_output_dims": (i32, [vp, vp, i32, c_int64_p]),
        "icc_context_error": (ctypes.c_char_p, [vp]),
        "icc_last_error": (ctypes.c_char_p, []),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)  # AttributeError: not a model compiled by icc
        f.restype, f.argtypes = res, args
    return lib
