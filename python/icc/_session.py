"""icc.InferenceSession: ONNX Runtime's InferenceSession, as far as running
goes, over a compiled model.

An .onnx is compiled on first use into a cache (ICC_CACHE_DIR, else
$XDG_CACHE_HOME/icc, else ~/.cache/icc), keyed by the model's bytes, the
compile options and the icc executable (its --version, size and mtime), so
a rebuilt compiler or changed options compile again; an .so is loaded as it is.
"""
import hashlib
import os
import subprocess

from ._compiler import compile as _compile, find_icc
from ._model import Model


class NodeArg:
    """An input or output as onnxruntime.NodeArg has it: name, shape (ints and
    strings for symbolic dims), type ('tensor(float)')."""
    __slots__ = ("name", "shape", "type")

    def __init__(self, t):
        self.name, self.shape, self.type = t.name, list(t.shape), t.type

    def __repr__(self):
        return "NodeArg(name=%r, type=%r, shape=%r)" % (self.name, self.type, self.shape)


def cache_dir():
    d = os.environ.get("ICC_CACHE_DIR")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "icc")
    return d


def _cached(path, compile_kw):
    icc = find_icc()
    st = os.stat(icc)
    ver = subprocess.run([icc, "--version"], stdout=subprocess.PIPE, text=True).stdout.strip()
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    h.update(repr((sorted(compile_kw.items()), ver, st.st_size, st.st_mtime_ns)).encode())
    d = cache_dir()
    os.makedirs(d, exist_ok=True)
    so = os.path.join(d, "%s-%s.so" % (os.path.splitext(os.path.basename(path))[0], h.hexdigest()[:24]))
    if not os.path.exists(so):  # icc writes a temporary and renames it: never half a file
        _compile(path, so, **compile_kw)
    return so


class InferenceSession:
    """InferenceSession("model.onnx" | "model.so"). sess_options and providers
    are accepted and ignored (icc runs on this CPU); compile_kw goes to
    icc.compile (opt, shapes, precision, ...) for an .onnx."""

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None,
                 threads=None, **compile_kw):
        if isinstance(path_or_bytes, (bytes, bytearray)):
            raise TypeError("icc.InferenceSession takes a path to an .onnx or .so, not bytes")
        path = os.fspath(path_or_bytes)
        so = path if path.endswith(".so") else _cached(path, compile_kw)
        self._model = Model(so, threads=threads)
        self._inputs = [NodeArg(t) for t in self._model.inputs]
        self._outputs = [NodeArg(t) for t in self._model.outputs]
        self._out_index = {t.name: i for i, t in enumerate(self._model.outputs)}

    @property
    def model(self):
        """The icc.Model underneath."""
        return self._model

    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def get_providers(self):
        return ["CPUExecutionProvider"]

    def run(self, output_names, input_feed, run_options=None):
        """The outputs named (all, in order, when None) as a list of numpy arrays."""
        outs = self._model.run(input_feed)
        if not output_names:
            return outs
        res = []
        for name in output_names:
            j = self._out_index.get(name)
            if j is None:
                raise ValueError("unknown output '%s' (the model's outputs: %s)"
                                 % (name, ", ".join(self._out_index)))
            res.append(outs[j])
        return res
