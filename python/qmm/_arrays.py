"""Checks of numpy arrays before they reach C: dtype, shape and strides, with an error that says which
argument and why. Arrays are never copied here: a caller's array is passed to C as it is, row stride
included, or refused."""

import ctypes

import ml_dtypes
import numpy as np

BF16 = np.dtype(ml_dtypes.bfloat16)
FP16 = np.dtype(np.float16)
FP32 = np.dtype(np.float32)

# numpy dtype -> qmm_dtype of the float types qmm reads and writes
FLOAT_DTYPES = {FP32: 1, BF16: 2, FP16: 3}
DTYPE_NAMES = {"float32": FP32, "fp32": FP32, "bfloat16": BF16, "bf16": BF16, "float16": FP16, "fp16": FP16}


def as_dtype(dtype, what):
    """A numpy dtype qmm reads and writes (float32, bfloat16, float16), from a dtype or its name."""
    try:
        dt = DTYPE_NAMES[dtype] if isinstance(dtype, str) else np.dtype(dtype)
    except (KeyError, TypeError):
        raise TypeError(f"{what}: unknown dtype {dtype!r} (float32, bfloat16 or float16)") from None
    if dt not in FLOAT_DTYPES:
        raise TypeError(f"{what}: dtype {dt} is not float32, bfloat16 or float16")
    return dt


def check_matrix(x, what, dtypes=None, rows=None, cols=None, writable=False):
    """x must be a 2-D numpy array whose rows are contiguous (any row stride that is a whole number of
    elements, at least a row); returns its row stride in elements."""
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{what}: expected a numpy array, got {type(x).__name__}")
    shape, strides, dtype = x.shape, x.strides, x.dtype
    if len(shape) != 2:
        raise ValueError(f"{what}: expected 2 dimensions, got shape {shape}")
    if dtypes is not None and dtype not in dtypes:
        names = ", ".join(str(d) for d in dtypes)
        raise TypeError(f"{what}: dtype {dtype} is not one of {names}")
    r, c = shape
    if (rows is not None and r != rows) or (cols is not None and c != cols):
        raise ValueError(f"{what}: shape {shape}, expected ({rows if rows is not None else 'M'}, "
                         f"{cols if cols is not None else 'N'})")
    if r == 0 or c == 0:
        raise ValueError(f"{what}: shape {shape} is empty")
    item = dtype.itemsize
    if c > 1 and strides[1] != item:
        raise ValueError(f"{what}: its rows are not contiguous (strides {strides}); pass np.ascontiguousarray(...)")
    if r > 1 and (strides[0] % item or strides[0] < c * item):
        raise ValueError(f"{what}: row stride {strides[0]} bytes is not a whole number of elements of at least a row")
    flags = x.flags
    if not flags.aligned:
        raise ValueError(f"{what}: the array is not aligned to its element size")
    if writable and not flags.writeable:
        raise ValueError(f"{what}: the array is read-only")
    return strides[0] // item if r > 1 else c


_char = ctypes.c_char
_addressof = ctypes.addressof


def address(x):
    """The address of x's first element. Through the buffer protocol where x is writable and
    contiguous (a third of the time of x.ctypes.data, which counts on small calls), else x.ctypes.data."""
    try:
        return _addressof(_char.from_buffer(x))
    except (TypeError, ValueError, BufferError):
        return x.ctypes.data


def check_vector(x, what, dtype, length):
    """x must be a contiguous 1-D array of `dtype` and `length` (bias, column scales)."""
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{what}: expected a numpy array, got {type(x).__name__}")
    if x.dtype != dtype:
        raise TypeError(f"{what}: dtype {x.dtype}, expected {dtype}")
    if x.shape != (length,):
        raise ValueError(f"{what}: shape {x.shape}, expected ({length},)")
    if not x.flags.c_contiguous or not x.flags.aligned:
        raise ValueError(f"{what}: expected a contiguous, aligned array")
