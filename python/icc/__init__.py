"""icc from Python: compile ONNX models ahead of time and run the result.

    import icc, numpy as np
    icc.compile("model.onnx", "model.so", shapes={"x": (1, 3, 224, 224)})
    m = icc.load("model.so")
    y = m(x=np.zeros((1, 3, 224, 224), np.float32))

See docs/python.md.
"""
from ._errors import CompileError, Error, LoadError, RunError
from ._compiler import bench, compile, find_icc
from ._model import Model, TensorInfo, load
from ._session import InferenceSession, NodeArg

__version__ = "0.1.0"
__all__ = ["CompileError", "Error", "LoadError", "RunError", "bench", "compile", "find_icc",
           "Model", "TensorInfo", "load", "InferenceSession", "NodeArg"]
