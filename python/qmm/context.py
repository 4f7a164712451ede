"""qmm.Context: a backend (reference, CPU threads or a CUDA device), and the weights prepared on it."""

import ctypes
import threading
import weakref

from . import _lib
from ._lib import lib


class Context:
    """A qmm context: the backend, its threads, CUDA stream and workspace, allocated once.

    backend: "auto" (the best present: CUDA, then CPU, then the reference), "cpu", "cuda" or "reference".
    threads: CPU worker threads (None: the online cores). device: the CUDA device ordinal.
    workspace_bytes: the CUDA workspace (None: the backend's default).

    A context is not thread-safe: use one per thread (qmm.default_context() keeps one per thread).
    Weights are prepared on a context the first time they are multiplied on it (uploaded to the GPU,
    repacked for the CPU kernels); the context releases those copies when it is closed or when the
    weight is garbage collected.
    """

    def __init__(self, backend="auto", threads=None, device=0, workspace_bytes=None):
        if backend not in _lib.BACKEND:
            raise ValueError(f"unknown backend {backend!r} ({', '.join(_lib.BACKEND)})")
        if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or threads < 1):
            raise ValueError(f"threads must be a positive int or None, not {threads!r}")
        opts = _lib.ContextOptions()
        lib.qmm_context_options_init(ctypes.byref(opts))
        opts.backend = _lib.BACKEND[backend]
        opts.num_threads = threads or 0
        opts.cuda_device = int(device)
        opts.workspace_bytes = int(workspace_bytes or 0)
        handle = ctypes.c_void_p()
        _lib.check(lib.qmm_context_create(ctypes.byref(opts), ctypes.byref(handle)))
        self._handle = handle
        b = ctypes.c_int()
        _lib.check(lib.qmm_context_get_backend(handle, ctypes.byref(b)))
        self.backend = _lib.BACKEND_NAME[b.value]
        self._prepares = self.backend in ("cpu", "cuda")
        self._prepared = {}   # id(weight) -> its qmm_weight struct prepared here
        self._device = {}     # CUDA: scratch device buffers by role -> (pointer, bytes)

    @property
    def handle(self):
        """The qmm_context pointer (a ctypes.c_void_p)."""
        if self._handle is None:
            raise ValueError("the context is closed")
        return self._handle

    def describe(self):
        """What the context runs on, e.g. "cpu avx512 (2 threads)"."""
        return lib.qmm_context_describe(self.handle).decode()

    def set_stream(self, stream):
        """CUDA: later calls run on `stream` (a cudaStream_t as an int, e.g. torch's
        `torch.cuda.current_stream().cuda_stream`; None or 0: the context's own stream), ordered after
        every call already queued here. Host backends raise QmmError (unsupported)."""
        _lib.check(lib.qmm_context_set_stream(self.handle, ctypes.c_void_p(stream or None)))

    def synchronize(self):
        """Waits for every call queued on the context (CUDA); a no-op on host backends."""
        _lib.check(lib.qmm_context_synchronize(self.handle))

    def close(self):
        """Releases the weights prepared here, the scratch buffers, then the context itself."""
        if self._handle is None:
            return
        for s in self._prepared.values():
            lib.qmm_weight_unprepare(ctypes.byref(s))
        self._prepared.clear()
        for ptr, _ in self._device.values():
            lib.qmm_buffer_free(self._handle, ptr)
        self._device.clear()
        lib.qmm_context_destroy(self._handle)
        self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone already
            pass

    def __repr__(self):
        return f"qmm.Context({self.describe() if self._handle is not None else 'closed'})"

    # -- internal ---------------------------------------------------------------------------------
    def weight_struct(self, w):
        """The qmm_weight struct of QuantizedWeight w as this context's backend reads it."""
        if not self._prepares:
            return w._struct
        key = id(w)
        s = self._prepared.get(key)
        if s is None:
            s = _lib.Weight.from_buffer_copy(w._struct)
            _lib.check(lib.qmm_weight_prepare(self.handle, ctypes.byref(s)))
            self._prepared[key] = s
            weakref.finalize(w, Context._forget, weakref.ref(self), key)
        return s

    @staticmethod
    def _forget(ref, key):
        ctx = ref()
        if ctx is not None and ctx._handle is not None:
            s = ctx._prepared.pop(key, None)
            if s is not None:
                lib.qmm_weight_unprepare(ctypes.byref(s))

    def device_buffer(self, role, nbytes):
        """A scratch buffer of the context's memory of at least nbytes, kept for later calls."""
        ptr, size = self._device.get(role, (None, 0))
        if size < nbytes:
            if ptr is not None:
                lib.qmm_buffer_free(self.handle, ptr)
                del self._device[role]
            ptr = ctypes.c_void_p()
            _lib.check(lib.qmm_buffer_alloc(self.handle, max(nbytes, 256), ctypes.byref(ptr)))
            self._device[role] = (ptr, max(nbytes, 256))
        return self._device[role][0]


_local = threading.local()


def default_context():
    """This thread's default context (backend "auto"), made on first use."""
    ctx = getattr(_local, "context", None)
    if ctx is None or ctx._handle is None:
        ctx = _local.context = Context()
    return ctx
