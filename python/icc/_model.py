"""A compiled model loaded through its own runtime: icc.load / icc.Model.

The model is opened once and is immutable; each Python thread that runs it
gets its own runtime context on first use (threading.local), made and kept
until the thread ends or the model is closed, so one Model serves a thread
pool. Inputs are passed to icc_run by address: a C-contiguous, aligned numpy
array of the input's dtype is used as it is; anything else is converted to
one first (a copy).
"""
import ctypes
import os
import threading

import numpy as np

from . import _capi
from ._errors import LoadError, RunError


class TensorInfo:
    """One input or output: name, dtype (numpy), shape (ints, and strings for
    symbolic dims), and type (ONNX Runtime's spelling, e.g. 'tensor(float)')."""
    __slots__ = ("name", "dtype", "shape", "type", "_code")

    def __init__(self, d):
        self.name = d.name.decode()
        self._code = d.dtype
        self.dtype = _capi.DTYPES.get(d.dtype)
        self.type = _capi.ORT_TYPES.get(d.dtype, "tensor(%d)" % d.dtype)
        self.shape = tuple(d.dims[k] if d.dims[k] >= 0 else d.dim_names[k].decode()
                           for k in range(d.rank))

    @property
    def rank(self):
        return len(self.shape)

    def __repr__(self):
        dims = ",".join(str(s) for s in self.shape)
        return "TensorInfo(%r, %s[%s])" % (self.name, self.dtype, dims)


_from_buffer, _addressof = ctypes.c_char.from_buffer, ctypes.addressof


def _address(a):
    """The address of a C-contiguous array's data. from_buffer is several
    times quicker than a.ctypes.data but needs a writeable, non-empty buffer."""
    try:
        return _addressof(_from_buffer(a))
    except (TypeError, ValueError, BufferError):
        return a.ctypes.data


def _castable(src, dst):
    """The conversions made for an input of another dtype: numpy's safe casts,
    and any bool, integer or float to a float (rounding, as astype does).
    Nothing that could wrap (int64 to int32, uint64 to int64) or truncate
    (float to int)."""
    if np.can_cast(src, dst, "safe"):
        return True
    return dst.kind == "f" and src.kind in "biuf"


class _Core:
    """The open model and every live context; what a context's finalizer
    needs, without a reference back to the Model (so no cycle)."""

    def __init__(self, lib, handle):
        self.lib, self.handle = lib, handle
        self.lock = threading.RLock()  # a finalizer may run while this thread holds it
        self.live = set()

    def drop(self, ctx):
        with self.lock:
            if ctx in self.live:
                self.live.discard(ctx)
                self.lib.icc_context_destroy(ctx)

    def close(self):
        with self.lock:
            if self.handle is None:
                return
            for ctx in self.live:
                self.lib.icc_context_destroy(ctx)
            self.live.clear()
            self.lib.icc_model_close(self.handle)
            self.handle = None
            # The runtime dlclose()d its own reference; ctypes never drops its
            # one, so loading many models would keep every library mapped.
            if _dlclose:
                _dlclose(self.lib._handle)
            self.lib = None


try:
    from _ctypes import dlclose as _dlclose
except ImportError:  # not POSIX
    _dlclose = None


class _Ctx:
    """One thread's runtime context and the argument arrays icc_run reads."""
    __slots__ = ("core", "handle", "ins", "dims", "dimp", "outs", "__weakref__")

    def __init__(self, core, inputs, noutputs, threads):
        self.core, self.handle = core, None
        h = ctypes.c_void_p()
        with core.lock:
            if core.handle is None:
                raise ValueError("the model is closed")
            st = core.lib.icc_context_create(core.handle, None, ctypes.byref(h))
            if st != _capi.OK:
                raise RunError(core.lib.icc_last_error().decode())
            core.live.add(h.value)
        self.handle = h.value
        if threads is not None and core.lib.icc_context_set_threads(self.handle, threads) != _capi.OK:
            raise ValueError(core.lib.icc_context_error(self.handle).decode())
        n = len(inputs)
        self.ins = (ctypes.c_void_p * n)()
        self.dims = [(ctypes.c_int64 * max(t.rank, 1))() for t in inputs]
        self.dimp = (ctypes.c_void_p * n)(*[ctypes.addressof(d) for d in self.dims])
        self.outs = (ctypes.c_void_p * max(noutputs, 1))()

    def __del__(self):
        if self.handle is not None:
            self.core.drop(self.handle)


class Model:
    """A model.so compiled by icc. m.inputs / m.outputs describe it; m.run(feeds)
    and m(**feeds) run it. threads: the runtime's thread count for each
    context (caller included; default ICC_NUM_THREADS, else every CPU)."""

    def __init__(self, path, prefix=None, threads=None):
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 0):
            raise ValueError("threads: a positive count, or 0 or None for the default, not %r" % (threads,))
        self.path = os.path.abspath(os.fspath(path))
        if not os.path.isfile(self.path):
            raise LoadError("%s: no such file" % path)
        try:
            lib = _capi.bind(self.path)
        except OSError as e:
            raise LoadError("%s: cannot load: %s" % (path, e)) from None
        except AttributeError:
            raise LoadError("%s: not a model compiled by icc (no icc_* runtime API)" % path) from None
        h = ctypes.c_void_p()
        pfx = prefix.encode() if prefix else None
        if lib.icc_model_open(self.path.encode(), pfx, ctypes.byref(h)) != _capi.OK:
            raise LoadError(lib.icc_last_error().decode())
        self._core = _Core(lib, h.value)
        self._threads = threads
        d = lib.icc_model_describe(h).contents
        abi = d.abi_version  # (read before close: the descriptor lives in the library)
        if not _capi.ABI_VERSION_MIN <= abi <= _capi.ABI_VERSION:  # the struct layouts _capi mirrors
            self.close()
            lo, hi = _capi.ABI_VERSION_MIN, _capi.ABI_VERSION
            raise LoadError("%s: model ABI version %d, this package reads %s"
                            % (path, abi, hi if lo == hi else "%d to %d" % (lo, hi)))
        self.name = d.name.decode() if d.name else ""
        self.compiler_version = d.compiler_version.decode() if d.compiler_version else ""
        self.cpu_features = d.cpu_features.decode() if d.cpu_features else ""
        self.symbols = tuple(d.symbols[k].decode() for k in range(d.nsymbols))
        self.inputs = tuple(TensorInfo(lib.icc_model_input(h, i).contents) for i in range(d.ninputs))
        self.outputs = tuple(TensorInfo(lib.icc_model_output(h, i).contents) for i in range(d.noutputs))
        for t in self.inputs + self.outputs:
            if t.dtype is None:
                self.close()
                raise LoadError("%s: '%s' has dtype %d, which numpy cannot hold" % (path, t.name, t._code))
        self._index = {t.name: i for i, t in enumerate(self.inputs)}
        self._out_index = {t.name: i for i, t in enumerate(self.outputs)}
        self._local = threading.local()
        # Output shapes by input shapes (fixed when the model has no symbols).
        self._fixed_out = None if self.symbols else [t.shape for t in self.outputs]
        self._shapes = {}

    # ---- lifetime ----------------------------------------------------------

    def close(self):
        """Destroys every context and closes the model; runs after this raise
        ValueError. No run may be in progress on another thread."""
        core = getattr(self, "_core", None)
        if core is not None:
            core.close()

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<icc.Model %s inputs=%r outputs=%r>" % (self.path, self.inputs, self.outputs)

    # ---- running -----------------------------------------------------------

    def _ctx(self):
        ctx = getattr(self._local, "ctx", None)
        if ctx is None or ctx.core.handle is None:
            if self._core.handle is None:
                raise ValueError("%s: the model is closed" % self.path)
            ctx = self._local.ctx = _Ctx(self._core, self.inputs, len(self.outputs), self._threads)
        return ctx

    def _input(self, i, v):
        t = self.inputs[i]
        if isinstance(v, np.ndarray):
            a = v
        elif hasattr(v, "__dlpack__"):
            try:
                a = np.from_dlpack(v)
            except (TypeError, BufferError, RuntimeError) as e:
                raise ValueError("input '%s': cannot read it through DLPack: %s" % (t.name, e)) from None
        else:
            a = np.asarray(v)
        if a.dtype != t.dtype:
            if not _castable(a.dtype, t.dtype):
                raise ValueError("input '%s' has dtype %s, the model wants %s" % (t.name, a.dtype, t.dtype))
            a = np.ascontiguousarray(a, dtype=t.dtype)
        elif not (a.flags.c_contiguous and a.flags.aligned):
            a = np.ascontiguousarray(a)
        if a.ndim != t.rank:
            raise ValueError("input '%s' has rank %d (shape %s), the model wants %d (%s)"
                             % (t.name, a.ndim, a.shape, t.rank, ",".join(map(str, t.shape))))
        return a

    def _output_shapes(self, ctx, arrays):
        key = tuple(a.shape for a in arrays)
        shapes = self._shapes.get(key)
        if shapes is None:
            lib = self._core.lib
            shapes = []
            for j, t in enumerate(self.outputs):
                d = (ctypes.c_int64 * max(t.rank, 1))()
                if lib.icc_output_dims(self._core.handle, ctx.dimp, j, d) != _capi.OK:
                    raise ValueError(lib.icc_last_error().decode())
                shapes.append(tuple(d[:t.rank]))
            if len(self._shapes) > 256:
                self._shapes.clear()
            self._shapes[key] = shapes
        return shapes

    def run(self, feeds, out=None, dlpack=False):
        """Runs the model on feeds (input name -> array, or any object with
        __dlpack__, or anything np.asarray takes) and returns the outputs as
        a list of numpy arrays in m.outputs' order. out: arrays to write the
        outputs into (a list in that order, or a dict by name), each of the
        output's dtype and shape, C-contiguous and writeable; they are
        returned. dlpack=True returns DLPack capsules instead of arrays."""
        ctx = self._ctx()
        n = len(self.inputs)
        arrays = [None] * n
        index = self._index
        for name, v in feeds.items():
            i = index.get(name)
            if i is None:
                raise ValueError("unknown input '%s' (the model's inputs: %s)"
                                 % (name, ", ".join(index)))
            arrays[i] = self._input(i, v)
        ins, dims = ctx.ins, ctx.dims
        for i in range(n):
            a = arrays[i]
            if a is None:
                raise ValueError("missing input '%s'" % self.inputs[i].name)
            ins[i] = _address(a)
            dims[i][:a.ndim] = a.shape
        shapes = self._fixed_out or self._output_shapes(ctx, arrays)
        results = self._outputs(shapes, out)
        outs = ctx.outs
        for j, r in enumerate(results):
            outs[j] = _address(r)
        core = self._core
        st = core.lib.icc_run(ctx.handle, ins, ctx.dimp, outs)
        if st != _capi.OK:
            msg = core.lib.icc_context_error(ctx.handle).decode()
            if st in (_capi.ERR_SHAPE, _capi.ERR_DTYPE, _capi.ERR_INVALID):
                raise ValueError(msg)
            if st == _capi.ERR_NOMEM:
                raise MemoryError(msg)
            raise RunError(msg)
        if dlpack:
            return [r.__dlpack__() for r in results]
        return results

    def _outputs(self, shapes, out):
        if out is None:
            return [np.empty(s, t.dtype) for s, t in zip(shapes, self.outputs)]
        if isinstance(out, dict):
            for name in out:
                if name not in self._out_index:
                    raise ValueError("out: unknown output '%s' (the model's outputs: %s)"
                                     % (name, ", ".join(self._out_index)))
            given = [out.get(t.name) for t in self.outputs]
        else:
            given = list(out)
            if len(given) != len(self.outputs):
                raise ValueError("out: %d arrays for %d outputs" % (len(given), len(self.outputs)))
        res = []
        for s, t, a in zip(shapes, self.outputs, given):
            if a is None:
                a = np.empty(s, t.dtype)
            elif not isinstance(a, np.ndarray) or a.dtype != t.dtype or a.shape != tuple(s) \
                    or not (a.flags.c_contiguous and a.flags.writeable and a.flags.aligned):
                what = ("%s%s" % (a.dtype, list(a.shape))) if isinstance(a, np.ndarray) else type(a).__name__
                raise ValueError("out: output '%s' needs a C-contiguous, writeable %s%s array, not %s"
                                 % (t.name, t.dtype, list(s), what))
            res.append(a)
        return res

    def __call__(self, out=None, dlpack=False, **feeds):
        """m(x=arr): run(); the output itself when the model has one, else a tuple."""
        r = self.run(feeds, out=out, dlpack=dlpack)
        return r[0] if len(r) == 1 else tuple(r)

    @property
    def threads(self):
        """The thread count this thread's context runs with (caller included)."""
        return self._core.lib.icc_context_threads(self._ctx().handle)


def load(path, prefix=None, threads=None):
    """Opens a model.so compiled by icc (see Model)."""
    return Model(path, prefix=prefix, threads=threads)
