"""qmm.QuantizedWeight and qmm.quantize: a quantized N x K weight held in numpy arrays."""

import ctypes

import numpy as np

from . import _arrays, _lib
from ._lib import lib

FORMATS = ("nvfp4", "mxfp4", "fp8_tensor", "fp8_channel", "bf16")
_ALIASES = {"fp8": "fp8_tensor"}


def _format_code(fmt):
    name = _ALIASES.get(fmt, fmt)
    if name not in _lib.FORMAT:
        raise ValueError(f"unknown format {fmt!r} ({', '.join(FORMATS)})")
    return name, _lib.FORMAT[name]


def _sizes(code, n, k):
    s = _lib.WeightSize()
    _lib.check(lib.qmm_weight_size_query(code, _lib.SCALE_LAYOUT_CANONICAL, n, k, ctypes.byref(s)))
    return s


def format_traits(fmt):
    """The format's traits from the library's one table: element bits, block size, scales."""
    _, code = _format_code(fmt)
    t = _lib.FormatTraits()
    _lib.check(lib.qmm_format_get_traits(code, ctypes.byref(t)))
    return {"name": t.name.decode(), "element_bits": t.element_bits, "block_size": t.block_size,
            "bits_per_weight": t.bits_per_weight}


class QuantizedWeight:
    """An N x K weight in one of qmm's formats, in the library's canonical layout:

    data            uint8 (N, row_bytes): E2M1 codes two per byte, low nibble first (NVFP4, MXFP4); E4M3
                    codes (FP8); little-endian bf16 values (BF16: data.view(ml_dtypes.bfloat16))
    block_scales    uint8 (N, ceil(K / B)): E4M3 codes per 16 (NVFP4), E8M0 codes per 32 (MXFP4); else None
    channel_scales  float32 (N,): FP8 per channel; else None
    tensor_scale    float: NVFP4's weight_scale_2, FP8's per-tensor scale; 1.0 otherwise

    The real weight is element * block_scale * tensor_scale (or * channel_scales[n]). The arrays are
    checked against the library's size query and validated when the object is made; they are used in
    place (never copied), so do not change them afterwards.
    """

    def __init__(self, format, shape, data, block_scales=None, channel_scales=None, tensor_scale=1.0, recipe=None):
        self.format, code = _format_code(format)
        n, k = (int(x) for x in shape)
        if n <= 0 or k <= 0:
            raise ValueError(f"shape {shape} must have two positive sizes")
        size = _sizes(code, n, k)
        _arrays.check_vector(data.reshape(-1) if isinstance(data, np.ndarray) and data.flags.c_contiguous else data,
                             "data", np.dtype(np.uint8), size.data_bytes)
        if size.block_scale_bytes:
            if block_scales is None:
                raise ValueError(f"{self.format} needs block_scales")
            _arrays.check_vector(block_scales.reshape(-1) if isinstance(block_scales, np.ndarray) and
                                 block_scales.flags.c_contiguous else block_scales,
                                 "block_scales", np.dtype(np.uint8), size.block_scale_bytes)
        elif block_scales is not None:
            raise ValueError(f"{self.format} has no block scales")
        if size.channel_scale_count:
            if channel_scales is None:
                raise ValueError(f"{self.format} needs channel_scales")
            _arrays.check_vector(channel_scales, "channel_scales", _arrays.FP32, n)
        elif channel_scales is not None:
            raise ValueError(f"{self.format} has no channel scales")
        self.shape = (n, k)
        self.data = data.reshape(n, size.row_bytes)
        self.block_scales = None if block_scales is None else block_scales.reshape(n, size.scales_per_row)
        self.channel_scales = channel_scales
        self.tensor_scale = float(tensor_scale)
        self.recipe = recipe
        s = _lib.Weight()
        _lib.check(lib.qmm_weight_init(ctypes.byref(s), code, n, k))
        s.data = self.data.ctypes.data_as(_lib.c_u8_p)
        s.data_bytes = size.data_bytes
        if self.block_scales is not None:
            s.block_scales = self.block_scales.ctypes.data_as(_lib.c_u8_p)
            s.block_scale_bytes = size.block_scale_bytes
        if channel_scales is not None:
            s.channel_scales = channel_scales.ctypes.data_as(_lib.c_float_p)
            s.channel_scale_count = n
        s.tensor_scale = self.tensor_scale
        _lib.check(lib.qmm_weight_validate(ctypes.byref(s)))
        self._struct = s

    @classmethod
    def empty(cls, format, shape):
        """A weight of `format` and `shape` with zeroed arrays, for qmm.quantize to fill."""
        name, code = _format_code(format)
        n, k = shape
        size = _sizes(code, n, k)
        data = np.zeros((n, size.row_bytes), np.uint8)
        bs = np.zeros((n, size.scales_per_row), np.uint8) if size.block_scale_bytes else None
        cs = np.ones(n, np.float32) if size.channel_scale_count else None
        return cls(name, (n, k), data, bs, cs, 1.0)

    @property
    def arrays(self):
        """The arrays by the names of the safetensors convention's suffixes."""
        out = {"weight": self.data}
        if self.block_scales is not None:
            out["weight_scale"] = self.block_scales
        if self.channel_scales is not None:
            out["weight_scale"] = self.channel_scales.reshape(-1, 1)
        if self.format in ("nvfp4", "fp8_tensor"):
            out["weight_scale" if self.format == "fp8_tensor" else "weight_scale_2"] = np.float32(self.tensor_scale)
        return out

    @property
    def nbytes(self):
        """Bytes of the weight's arrays (data, block scales, channel scales, tensor scale)."""
        total = self.data.nbytes + (0 if self.block_scales is None else self.block_scales.nbytes)
        total += 0 if self.channel_scales is None else self.channel_scales.nbytes
        return total + (4 if self.format in ("nvfp4", "fp8_tensor") else 0)

    def dequantize(self, dtype="float32", scaled=True):
        """The weight as an (N, K) array of float32 or bfloat16: each value the exact product of element,
        block scale and (scaled=True) tensor or channel scale, rounded once to dtype."""
        dt = _arrays.as_dtype(dtype, "dtype")
        if dt == _arrays.FP16:
            raise TypeError("dequantize: dtype float16 is not offered (float32 or bfloat16)")
        out = np.empty(self.shape, dt)
        flags = 0 if scaled else _lib.DEQUANT_UNSCALED
        _lib.check(lib.qmm_dequantize(ctypes.byref(self._struct), flags, _arrays.FLOAT_DTYPES[dt], out.ctypes.data,
                                      self.shape[1]))
        return out

    def __repr__(self):
        return f"qmm.QuantizedWeight({self.format}, {self.shape[0]} x {self.shape[1]}, {self.nbytes} bytes)"


def quantize(w, format="nvfp4", recipe="default"):
    """Quantizes the (N, K) float32, bfloat16 or float16 array w into a QuantizedWeight.

    format: "nvfp4", "mxfp4", "fp8_tensor" (or "fp8"), "fp8_channel" or "bf16".
    recipe: "default" (NVFP4: modelopt, MXFP4: floor, FP8: amax), "modelopt", "floor", "rceil", "amax";
    bit-exact with the producers of real checkpoints (docs/design.md). A weight holding NaN or an
    infinity raises qmm.NonFiniteError. Rows of w may be strided; w is not copied.
    """
    if recipe not in _lib.RECIPE:
        raise ValueError(f"unknown recipe {recipe!r} ({', '.join(_lib.RECIPE)})")
    stride = _arrays.check_matrix(w, "w", _arrays.FLOAT_DTYPES)
    q = QuantizedWeight.empty(format, w.shape)
    _lib.check(lib.qmm_quantize(_lib.RECIPE[recipe], _arrays.FLOAT_DTYPES[w.dtype], w.ctypes.data, stride,
                                ctypes.byref(q._struct)))
    q.tensor_scale = float(q._struct.tensor_scale)
    q.recipe = recipe
    return q
