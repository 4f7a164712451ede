"""qmm.matmul: C = act(alpha * A @ W^T + beta * C + bias) for numpy arrays."""

import ctypes

import numpy as np

from . import _arrays, _lib
from ._lib import lib
from .context import default_context
from .weight import QuantizedWeight

_byref = ctypes.byref


def matmul(a, w, *, bias=None, alpha=1.0, beta=0.0, c=None, activation=None, out_dtype=None, path=None,
           context=None):
    """C = act(alpha * a @ W^T + beta * c + bias) with the quantized weight w (a QuantizedWeight, N x K).

    a:          (M, K) or (K,) float32, bfloat16 or float16 (float32 on CPU backends only); rows may
                be strided, the array is never copied.
    bias:       (N,) float32, or None.
    c:          the output, (M, N) (or (N,) for a 1-D a) of out_dtype; made when None. It is read only
                when beta != 0. Returned either way.
    activation: None, "relu", "silu", "gelu" (tanh form) or "gelu_erf" (exact).
    out_dtype:  float32, bfloat16 or float16 (default: c's dtype, else a's).
    path:       None (the dispatcher's choice) or "gemv", "fused", "materialize" (what the backend has).
    context:    a qmm.Context (default: this thread's, qmm.default_context()). On a CUDA context the
                arrays are copied to the device and back.
    Raises qmm.Error subclasses for what the library refuses, TypeError / ValueError for arrays of the
    wrong dtype, shape or layout (checked before any C call).
    """
    if not isinstance(w, QuantizedWeight):
        raise TypeError(f"w: expected a qmm.QuantizedWeight, got {type(w).__name__}")
    ctx = default_context() if context is None else context
    n, k = w.shape
    vector = isinstance(a, np.ndarray) and a.ndim == 1
    a2 = a.reshape(1, -1) if vector else a
    lda = _arrays.check_matrix(a2, "a", _arrays.FLOAT_DTYPES, cols=k)
    m = a2.shape[0]
    if out_dtype is not None:
        out_dt = _arrays.as_dtype(out_dtype, "out_dtype")
    elif c is None:
        out_dt = a2.dtype  # checked above
    elif isinstance(c, np.ndarray):
        out_dt = _arrays.as_dtype(c.dtype, "c")
    else:
        raise TypeError(f"c: expected a numpy array, got {type(c).__name__}")
    if c is None:
        if beta != 0:
            raise ValueError("beta != 0 reads c: pass c")
        c = np.empty((n,) if vector else (m, n), out_dt)
    c2 = c.reshape(1, -1) if isinstance(c, np.ndarray) and c.ndim == 1 else c
    ldc = _arrays.check_matrix(c2, "c", (out_dt,), rows=m, cols=n, writable=True)
    if activation not in _lib.ACTIVATION:
        raise ValueError(f"unknown activation {activation!r} (None, 'relu', 'silu', 'gelu', 'gelu_erf')")
    if bias is not None:
        _arrays.check_vector(bias, "bias", _arrays.FP32, n)
    act = _lib.ACTIVATION[activation]
    identity = bias is None and act == 0 and alpha == 1.0 and beta == 0
    if path is not None and path not in _lib.PATH:
        raise ValueError(f"unknown path {path!r} ({', '.join(_lib.PATH)})")
    s = ctx.weight_struct(w)
    a_type = _arrays.FLOAT_DTYPES[a2.dtype]
    c_type = _arrays.FLOAT_DTYPES[out_dt]
    if path is not None:
        _lib.check(lib.qmm_context_set_path(ctx.handle, _lib.PATH[path]))
    try:
        if ctx.backend == "cuda":
            _matmul_device(ctx, m, n, k, a2, a_type, s, c2, c_type, bias, alpha, beta, act)
        else:
            epi = None
            if not identity:
                epi = _lib.Epilogue(alpha, beta, None if bias is None else bias.ctypes.data_as(_lib.c_float_p), None, act)
                epi = _byref(epi)
            status = lib.qmm_matmul(ctx.handle, m, a_type, _arrays.address(a2), lda, _byref(s), c_type,
                                    _arrays.address(c2), ldc, epi)
            if status:
                _lib.check(status)
    finally:
        if path is not None:
            lib.qmm_context_set_path(ctx.handle, 0)
    return c


def _to_device(ctx, role, x):
    """x (C-contiguous) copied into the context's scratch buffer `role`."""
    ptr = ctx.device_buffer(role, x.nbytes)
    _lib.check(lib.qmm_buffer_write(ctx.handle, ptr, x.ctypes.data, x.nbytes))
    return ptr


def _matmul_device(ctx, m, n, k, a, a_type, s, c, c_type, bias, alpha, beta, act):
    """The CUDA context reads device memory: A, C and bias go through contiguous scratch buffers."""
    a_dev = _to_device(ctx, "a", np.ascontiguousarray(a))
    c_dev = _to_device(ctx, "c", np.ascontiguousarray(c)) if beta != 0 else ctx.device_buffer("c", m * n * c.itemsize)
    bias_dev = _to_device(ctx, "bias", bias) if bias is not None else None
    epi = _lib.Epilogue(alpha, beta, ctypes.cast(bias_dev, _lib.c_float_p) if bias_dev is not None else None, None, act)
    _lib.check(lib.qmm_matmul(ctx.handle, m, a_type, a_dev, k, _byref(s), c_type, c_dev, n, _byref(epi)))
    out = c if c.flags.c_contiguous else np.empty((m, n), c.dtype)
    _lib.check(lib.qmm_buffer_read(ctx.handle, out.ctypes.data, c_dev, out.nbytes))
    if out is not c:
        c[...] = out
