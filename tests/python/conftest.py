"""ctypes bindings of libqmm and fixtures for qmm's external-oracle tests.

The library is found through the QMM_LIBRARY environment variable (the path of libqmm.so). A missing
variable or a library that does not load fails every test with a clear message; nothing is skipped.

Random inputs are fresh on every run: the session seed comes from os.urandom, or from QMM_TEST_SEED
when that is set (decimal or 0x-hex). Each test derives its own generator from the session seed and its
node id, so `QMM_TEST_SEED=<seed> pytest <nodeid>` reproduces one failing test. Every assertion message
carries the seed.
"""

import ctypes
import os
import zlib

import ml_dtypes
import numpy as np
import pytest

from qmm_io_ctypes import Weight, WeightSize

# ------------------------------------------------------------------------------------------------
# Constants mirrored from include/qmm.h
# ------------------------------------------------------------------------------------------------
QMM_OK = 0
QMM_ERR_NULL_POINTER = 1
QMM_ERR_INVALID_SIZE = 2
QMM_ERR_INVALID_STRIDE = 4
QMM_ERR_INVALID_ENUM = 5
QMM_ERR_NON_FINITE = 6
QMM_ERR_BUFFER_TOO_SMALL = 7
QMM_ERR_UNSUPPORTED = 8
QMM_ERR_INVALID_ARGUMENT = 19
QMM_ERR_INVALID_WEIGHT = 20

DTYPES = {"fp32": 1, "bf16": 2, "fp16": 3, "e4m3": 4, "e2m1": 5, "e8m0": 6}
FORMATS = {"nvfp4": 1, "mxfp4": 2, "fp8_tensor": 3, "fp8_channel": 4}
RECIPES = {"default": 0, "modelopt": 1, "floor": 2, "rceil": 3, "amax": 4}
SCALE_LAYOUT_CANONICAL = 0
DEQUANT_UNSCALED = 1


BF16 = np.dtype(ml_dtypes.bfloat16)
FP16 = np.dtype(np.float16)
FP32 = np.dtype(np.float32)
SRC_DTYPES = {"fp32": FP32, "bf16": BF16, "fp16": FP16}


def np_to_qmm_dtype(dt):
    dt = np.dtype(dt)
    for name, d in SRC_DTYPES.items():
        if d == dt:
            return DTYPES[name]
    raise ValueError(f"no qmm dtype for numpy dtype {dt}")


# ------------------------------------------------------------------------------------------------
# Seeds
# ------------------------------------------------------------------------------------------------
def _session_seed():
    env = os.environ.get("QMM_TEST_SEED", "").strip()
    if env:
        return int(env, 0)
    return int.from_bytes(os.urandom(8), "little")


SEED = _session_seed()
SEED_TAG = f"QMM_TEST_SEED={SEED}"


def pytest_report_header(config):
    return f"qmm oracle tests: {SEED_TAG} (set it to reproduce); QMM_LIBRARY={os.environ.get('QMM_LIBRARY')}"


@pytest.fixture
def seedtag(request):
    """Text for assertion messages: the seed and the test, enough to reproduce a failure."""
    return f"[{SEED_TAG} {request.node.nodeid}]"


@pytest.fixture
def rng(request):
    """A generator of this test's own, derived from the session seed and the test's node id."""
    return np.random.default_rng([SEED, zlib.crc32(request.node.nodeid.encode())])


# ------------------------------------------------------------------------------------------------
# ctypes mirrors of the public structs (field order and types exactly as in qmm.h)
# ------------------------------------------------------------------------------------------------
# qmm_weight is mirrored once, in qmm_io_ctypes.py (field order and types exactly as in qmm.h)
QmmWeight = Weight


QmmWeightSize = WeightSize


_TENSOR_SCALE_OFFSET = QmmWeight.tensor_scale.offset


def weight_tensor_scale_bits(w):
    """The raw 32 bits of w.tensor_scale (no round trip through a Python float)."""
    return ctypes.c_uint32.from_buffer(w, _TENSOR_SCALE_OFFSET).value


def set_weight_tensor_scale_bits(w, bits):
    ctypes.c_uint32.from_buffer(w, _TENSOR_SCALE_OFFSET).value = int(bits) & 0xFFFFFFFF


def _u8p(a):
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8))


def _f32p(a):
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_float))


class QuantResult:
    """What qmm_quantize left in caller-owned numpy buffers, plus the descriptor pointing at them."""

    def __init__(self, status, fmt, n, k, weight, size, data, block_scales, channel_scales, error):
        self.status = status
        self.fmt = fmt
        self.n = n
        self.k = k
        self.weight = weight                  # QmmWeight; its pointers point into the arrays below
        self.size = size                      # QmmWeightSize
        self.data = data                      # uint8 (n, row_bytes)
        self.block_scales = block_scales      # uint8 (n, scales_per_row) or None
        self.channel_scales = channel_scales  # float32 (n,) or None
        self.error = error                    # qmm_last_error() text after a failure, else ""

    @property
    def tensor_scale_bits(self):
        return weight_tensor_scale_bits(self.weight)

    @property
    def tensor_scale(self):
        return np.array([self.tensor_scale_bits], np.uint32).view(np.float32)[0]


class Qmm:
    """The library, with argtypes/restypes declared for every function the tests call."""

    def __init__(self, lib, path):
        self.lib = lib
        self.path = path
        c = ctypes
        L = lib

        def decl(name, restype, argtypes):
            fn = getattr(L, name)
            fn.restype = restype
            fn.argtypes = argtypes
            return fn

        decl("qmm_version", c.c_char_p, [])
        decl("qmm_status_string", c.c_char_p, [c.c_int])
        decl("qmm_last_error", c.c_char_p, [])
        # scalar conversions
        self.fp32_to_bf16 = decl("qmm_fp32_to_bf16", c.c_uint16, [c.c_float])
        self.bf16_to_fp32 = decl("qmm_bf16_to_fp32", c.c_float, [c.c_uint16])
        self.fp32_to_fp16 = decl("qmm_fp32_to_fp16", c.c_uint16, [c.c_float])
        self.fp16_to_fp32 = decl("qmm_fp16_to_fp32", c.c_float, [c.c_uint16])
        self.fp32_to_e4m3 = decl("qmm_fp32_to_e4m3", c.c_uint8, [c.c_float])
        self.e4m3_to_fp32 = decl("qmm_e4m3_to_fp32", c.c_float, [c.c_uint8])
        self.fp32_to_e2m1 = decl("qmm_fp32_to_e2m1", c.c_uint8, [c.c_float])
        self.e2m1_to_fp32 = decl("qmm_e2m1_to_fp32", c.c_float, [c.c_uint8])
        self.fp32_to_e8m0 = decl("qmm_fp32_to_e8m0", c.c_uint8, [c.c_float])
        self.e8m0_to_fp32 = decl("qmm_e8m0_to_fp32", c.c_float, [c.c_uint8])
        # weights
        decl("qmm_weight_size_query", c.c_int,
             [c.c_int, c.c_int, c.c_size_t, c.c_size_t, c.POINTER(QmmWeightSize)])
        decl("qmm_weight_init", c.c_int, [c.POINTER(QmmWeight), c.c_int, c.c_size_t, c.c_size_t])
        decl("qmm_weight_validate", c.c_int, [c.POINTER(QmmWeight)])
        decl("qmm_quantize", c.c_int,
             [c.c_int, c.c_int, c.c_void_p, c.c_size_t, c.POINTER(QmmWeight)])
        decl("qmm_dequantize", c.c_int,
             [c.POINTER(QmmWeight), c.c_uint, c.c_int, c.c_void_p, c.c_size_t])

    # -- status ------------------------------------------------------------------------------------
    def version(self):
        return self.lib.qmm_version().decode()

    def last_error(self):
        return self.lib.qmm_last_error().decode(errors="replace")

    def status_string(self, status):
        return self.lib.qmm_status_string(status).decode(errors="replace")

    def describe(self, status):
        return f"status {status} ({self.status_string(status)}): {self.last_error()!r}"

    # -- scalar conversions, element by element ----------------------------------------------------
    def encode(self, name, x):
        """Apply the fp32 encoder `name` (e.g. "bf16") to every element of the float32 array x.

        Each value is handed over as a ctypes c_float built on x's own bytes, so the exact fp32 bit
        pattern reaches the C function (a signalling NaN stays signalling, payloads are kept)."""
        fn = getattr(self, f"fp32_to_{name}")
        x = np.array(x, dtype=np.float32, copy=True).ravel()  # own, contiguous, writable
        out_type = np.uint16 if name in ("bf16", "fp16") else np.uint8
        cf = ctypes.c_float.from_buffer
        return np.fromiter((fn(cf(x, 4 * i)) for i in range(x.size)), dtype=out_type, count=x.size)

    def decode(self, name, codes):
        """Apply the decoder `name`_to_fp32 to every code; returns float32 (NaN payloads may be quieted
        by the double round trip through a Python float; sign and value are exact)."""
        fn = getattr(self, f"{name}_to_fp32")
        codes = np.asarray(codes).ravel()
        return np.array([fn(int(cd)) for cd in codes], dtype=np.float64).astype(np.float32)

    # -- weights -------------------------------------------------------------------------------------
    def size_query(self, fmt, n, k):
        out = QmmWeightSize()
        st = self.lib.qmm_weight_size_query(FORMATS[fmt], SCALE_LAYOUT_CANONICAL, n, k, ctypes.byref(out))
        if st != QMM_OK:
            raise AssertionError(f"qmm_weight_size_query({fmt}, {n}, {k}): {self.describe(st)}")
        return out

    def make_weight(self, fmt, n, k, poison=0xA5, channel_poison=-7.25):
        """qmm_weight_init plus numpy buffers of exactly the queried sizes, filled with poison."""
        size = self.size_query(fmt, n, k)
        w = QmmWeight()
        st = self.lib.qmm_weight_init(ctypes.byref(w), FORMATS[fmt], n, k)
        if st != QMM_OK:
            raise AssertionError(f"qmm_weight_init({fmt}, {n}, {k}): {self.describe(st)}")
        data = np.full(size.data_bytes, poison, dtype=np.uint8)
        w.data = _u8p(data)
        w.data_bytes = size.data_bytes
        block_scales = None
        if size.block_scale_bytes:
            block_scales = np.full(size.block_scale_bytes, poison ^ 0xFF, dtype=np.uint8)
            w.block_scales = _u8p(block_scales)
            w.block_scale_bytes = size.block_scale_bytes
        channel_scales = None
        if size.channel_scale_count:
            channel_scales = np.full(size.channel_scale_count, channel_poison, dtype=np.float32)
            w.channel_scales = _f32p(channel_scales)
            w.channel_scale_count = size.channel_scale_count
        return w, size, data, block_scales, channel_scales

    def quantize(self, fmt, src, recipe="default", stride=None, pad_value=np.nan, poison=0xA5,
                 tensor_scale_bits=None, channel_poison=-7.25):
        """qmm_quantize of the 2-D array src (float32, bfloat16 or float16), rows `stride` elements
        apart (default K); the elements between K and the stride hold pad_value. The output buffers
        start filled with `poison` (block scales with poison ^ 0xFF, channel scales with
        channel_poison) and, when tensor_scale_bits is given, tensor_scale holds those 32 bits."""
        src = np.asarray(src)
        assert src.ndim == 2
        n, k = src.shape
        stride = k if stride is None else stride
        buf = np.empty((n, stride), dtype=src.dtype)
        if stride > k:
            buf[:, k:] = np.asarray(pad_value, dtype=np.float32).astype(src.dtype)
        buf[:, :k] = src
        w, size, data, bs, cs = self.make_weight(fmt, n, k, poison=poison, channel_poison=channel_poison)
        if tensor_scale_bits is not None:
            set_weight_tensor_scale_bits(w, tensor_scale_bits)
        st = self.lib.qmm_quantize(RECIPES[recipe], np_to_qmm_dtype(src.dtype), buf.ctypes.data_as(ctypes.c_void_p),
                                   stride, ctypes.byref(w))
        err = self.last_error() if st != QMM_OK else ""
        return QuantResult(st, fmt, n, k, w, size,
                           data.reshape(n, size.row_bytes),
                           None if bs is None else bs.reshape(n, size.scales_per_row),
                           cs, err)

    def dequantize(self, qr, dst="fp32", flags=0, stride=None, poison_bits=0xDEADBEEF):
        """qmm_dequantize of the weight in qr into a fresh poisoned buffer; returns (status, array) with
        the array float32 (n, stride) or, for bf16, uint16 bit patterns (n, stride)."""
        n, k = qr.n, qr.k
        stride = k if stride is None else stride
        if dst == "fp32":
            out = np.full((n, stride), poison_bits & 0xFFFFFFFF, dtype=np.uint32).view(np.float32)
        elif dst == "bf16":
            out = np.full((n, stride), poison_bits & 0xFFFF, dtype=np.uint16)
        else:
            raise ValueError(dst)
        st = self.lib.qmm_dequantize(ctypes.byref(qr.weight), flags, DTYPES[dst],
                                     out.ctypes.data_as(ctypes.c_void_p), stride)
        return st, out


class LibraryNotLoaded(Exception):
    pass


_LIBRARY = None


def _load_library():
    global _LIBRARY
    if _LIBRARY is not None:
        return _LIBRARY
    path = os.environ.get("QMM_LIBRARY")
    if not path:
        raise LibraryNotLoaded("QMM_LIBRARY is not set: point it at libqmm.so "
                               "(e.g. QMM_LIBRARY=build/libqmm.so python -m pytest tests/python)")
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise LibraryNotLoaded(f"QMM_LIBRARY={path!r} does not load: {e}") from e
    try:
        _LIBRARY = Qmm(lib, path)
    except AttributeError as e:
        raise LibraryNotLoaded(f"QMM_LIBRARY={path!r} lacks a qmm symbol: {e}") from e
    return _LIBRARY


def pytest_sessionstart(session):
    # Not a skip: without the library the suite fails at once, with the reason (exit status 1).
    try:
        _load_library()
    except LibraryNotLoaded as e:
        pytest.exit(f"qmm tests cannot run: {e}", returncode=1)


@pytest.fixture(scope="session")
def qmm():
    try:
        return _load_library()
    except LibraryNotLoaded as e:
        pytest.fail(str(e), pytrace=False)


# ------------------------------------------------------------------------------------------------
# Numpy helpers shared by the test files (oracles of formats, not of recipes)
# ------------------------------------------------------------------------------------------------
def f32_bits(x):
    return np.asarray(x, dtype=np.float32).view(np.uint32)


def bits_f32(b):
    return np.asarray(b, dtype=np.uint32).view(np.float32)


E2M1_MAGNITUDES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
E2M1_VALUES = np.concatenate([E2M1_MAGNITUDES, -E2M1_MAGNITUDES])  # indexed by the 4-bit code


def e4m3_values(codes):
    """float64 value of each E4M3 code (ml_dtypes float8_e4m3fn)."""
    return np.asarray(codes, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)


def e8m0_values(codes):
    """float64 value of each E8M0 code: 2^(code - 127) (0xFF: NaN)."""
    codes = np.asarray(codes, dtype=np.int64)
    return np.where(codes == 255, np.nan, np.ldexp(1.0, codes - 127))


def unpack_e2m1(data, k):
    """(n, ceil(k/2)) packed bytes, low nibble first -> (n, k) codes."""
    data = np.asarray(data, dtype=np.uint8)
    n = data.shape[0]
    codes = np.empty((n, 2 * data.shape[1]), dtype=np.uint8)
    codes[:, 0::2] = data & 0xF
    codes[:, 1::2] = data >> 4
    return codes[:, :k]


def pack_e2m1(codes):
    """(n, k) 4-bit codes -> (n, ceil(k/2)) bytes, low nibble first, an odd k's last high nibble 0."""
    codes = np.asarray(codes, dtype=np.uint8)
    n, k = codes.shape
    if k % 2:
        codes = np.concatenate([codes, np.zeros((n, 1), np.uint8)], axis=1)
    return (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)


def f64_to_f32_bits(v):
    """float64 -> float32 rounded once to nearest even (numpy's cast is a single IEEE rounding;
    overflow gives infinity)."""
    with np.errstate(over="ignore"):
        return np.asarray(v, dtype=np.float64).astype(np.float32).view(np.uint32)


def f64_to_bf16_bits(v):
    """float64 -> bf16 rounded once to nearest even, subnormals kept, overflow to infinity.

    Written out by hand because ml_dtypes converts float64 to bfloat16 through float32 (two
    roundings). NaN -> 0x7FC0 with the sign."""
    v = np.asarray(v, dtype=np.float64)
    a = np.abs(v)
    finite = np.isfinite(a)
    a0 = np.where(finite, a, 0.0)
    _, ex = np.frexp(a0)                      # a0 = m * 2^ex, m in [0.5, 1)
    ulp_exp = np.maximum(ex - 1, -126) - 7    # bf16: 8 significant bits, min normal 2^-126
    q = np.rint(np.ldexp(a0, -ulp_exp))       # exact scaling, ties to even
    r = np.ldexp(q, ulp_exp)
    r = np.where(r >= 2.0 ** 128, np.inf, r)
    r = np.where(finite, r, a)
    r = np.copysign(r, v)
    bits = (r.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    nan = np.isnan(v)
    bits = np.where(nan, np.where(np.signbit(v), 0xFFC0, 0x7FC0), bits).astype(np.uint16)
    return bits


def mismatch_report(what, inputs_bits, expected, actual, mask=None, limit=12, width=8):
    """Text that lists the first mismatches (input bits, expected, actual) in hex."""
    inputs_bits = np.asarray(inputs_bits).ravel()
    expected = np.asarray(expected).ravel()
    actual = np.asarray(actual).ravel()
    bad = expected != actual if mask is None else (expected != actual) & mask
    idx = np.flatnonzero(bad)
    lines = [f"{what}: {idx.size} mismatches out of {expected.size if mask is None else int(np.sum(mask))}"]
    for i in idx[:limit]:
        lines.append(f"  input 0x{int(inputs_bits[i]):0{width}x}: expected 0x{int(expected[i]):x}, got 0x{int(actual[i]):x}")
    return "\n".join(lines)
