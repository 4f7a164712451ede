"""ctypes bindings of qmm's checkpoint API (safetensors, conventions, scale layouts) for the io tests.

Independent of conftest.py: the library comes from QMM_LIBRARY, the qmm tool from QMM_TOOL. The struct
layouts come from the Python package (qmm._lib).
"""

import ctypes
import os

import numpy as np
import pytest

QMM_OK = 0
QMM_ERR_NULL_POINTER = 1
QMM_ERR_INVALID_ARGUMENT = 19
QMM_ERR_MALFORMED = 16
QMM_ERR_NOT_FOUND = 17
QMM_ERR_EXISTS = 18

FORMATS = {"nvfp4": 1, "mxfp4": 2, "fp8_tensor": 3, "fp8_channel": 4, "bf16": 5}
FORMAT_NAMES = {v: k for k, v in FORMATS.items()}
LAYOUTS = {"canonical": 0, "nv_blocked": 1, "amd_mfma": 2}
DTYPE_FP32 = 1
WRITE_OVERWRITE = 1

# qmm_st_dtype values, in the order of the enum in qmm.h
ST_DTYPES = ["BOOL", "U8", "I8", "U16", "I16", "U32", "I32", "U64", "I64", "F16", "BF16", "F32", "F64", "C64",
             "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F4", "F6_E2M3", "F6_E3M2"]
ST_DTYPE_VALUE = {name: i + 1 for i, name in enumerate(ST_DTYPES)}
ST_BITS = {"BOOL": 8, "U8": 8, "I8": 8, "U16": 16, "I16": 16, "U32": 32, "I32": 32, "U64": 64, "I64": 64, "F16": 16,
           "BF16": 16, "F32": 32, "F64": 64, "C64": 64, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
           "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6}


# The struct mirrors are the package's (python/qmm/_lib.py, checked field by field against the C
# compiler by python/tests/test_structs.py).
from qmm._lib import CheckpointWeight, TensorView, Weight, WeightSize  # noqa: E402,F401


class QmmIo:
    """The library's checkpoint functions with their signatures declared."""

    def __init__(self, path):
        self.lib = lib = ctypes.CDLL(path)
        P, S, I, V = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_char_p

        def decl(name, restype, argtypes):
            f = getattr(lib, name)
            f.restype, f.argtypes = restype, argtypes
            setattr(self, name, f)

        decl("qmm_last_error", ctypes.c_char_p, [])
        decl("qmm_safetensors_open", I, [V, ctypes.POINTER(P)])
        decl("qmm_safetensors_open_memory", I, [ctypes.c_char_p, S, ctypes.POINTER(P)])
        decl("qmm_safetensors_close", None, [P])
        decl("qmm_safetensors_tensor_count", S, [P])
        decl("qmm_safetensors_tensor_at", I, [P, S, ctypes.POINTER(TensorView)])
        decl("qmm_safetensors_tensor_find", I, [P, V, ctypes.POINTER(TensorView)])
        decl("qmm_safetensors_shard_count", S, [P])
        decl("qmm_safetensors_metadata_count", S, [P, S])
        decl("qmm_safetensors_metadata_at", I, [P, S, S, ctypes.POINTER(V), ctypes.POINTER(V)])
        decl("qmm_safetensors_writer_create", I, [V, ctypes.c_uint, ctypes.POINTER(P)])
        decl("qmm_safetensors_writer_set_metadata", I, [P, V, V])
        decl("qmm_safetensors_writer_add", I, [P, V, I, S, ctypes.POINTER(S), ctypes.c_char_p, S])
        decl("qmm_safetensors_writer_add_weight", I, [P, V, ctypes.POINTER(Weight)])
        decl("qmm_safetensors_writer_finish", I, [P])
        decl("qmm_checkpoint_weight_info", I, [P, V, ctypes.POINTER(CheckpointWeight)])
        decl("qmm_checkpoint_weight_load", I, [P, V, S, ctypes.POINTER(Weight)])
        decl("qmm_weight_free", None, [ctypes.POINTER(Weight)])
        decl("qmm_weight_size_query", I, [I, I, S, S, ctypes.POINTER(WeightSize)])
        decl("qmm_dequantize", I, [ctypes.POINTER(Weight), ctypes.c_uint, I, P, S])
        decl("qmm_scales_convert", I, [I, S, S, I, P, S, I, P, S])

    def error(self):
        return self.qmm_last_error().decode(errors="replace")

    def check(self, status, what):
        assert status == QMM_OK, f"{what}: status {status}: {self.error()}"

    # -- reading ------------------------------------------------------------------------------------
    def open(self, path):
        h = ctypes.c_void_p()
        self.check(self.qmm_safetensors_open(str(path).encode(), ctypes.byref(h)), f"open {path}")
        return h

    def read_all(self, path):
        """{name: (dtype name, shape tuple, bytes)}, {metadata key: value} of shard 0, tensor names in file order."""
        h = self.open(path)
        try:
            tensors, order = {}, []
            for i in range(self.qmm_safetensors_tensor_count(h)):
                v = TensorView()
                self.check(self.qmm_safetensors_tensor_at(h, i, ctypes.byref(v)), "tensor_at")
                name = v.name.decode()
                shape = tuple(v.shape[d] for d in range(v.ndim))
                tensors[name] = (ST_DTYPES[v.dtype - 1], shape, ctypes.string_at(v.data, v.bytes) if v.bytes else b"")
                order.append(name)
            meta = {}
            for i in range(self.qmm_safetensors_metadata_count(h, 0)):
                k, val = ctypes.c_char_p(), ctypes.c_char_p()
                self.check(self.qmm_safetensors_metadata_at(h, 0, i, ctypes.byref(k), ctypes.byref(val)), "metadata")
                meta[k.value.decode()] = val.value.decode()
            return tensors, meta, order
        finally:
            self.qmm_safetensors_close(h)

    def open_memory_status(self, data):
        h = ctypes.c_void_p()
        st = self.qmm_safetensors_open_memory(data, len(data), ctypes.byref(h))
        if st == QMM_OK:
            self.qmm_safetensors_close(h)
        return st

    def load_weight(self, handle, module, index=0):
        w = Weight()
        self.check(self.qmm_checkpoint_weight_load(handle, module.encode(), index, ctypes.byref(w)), f"load {module}")
        return w

    def dequantize(self, w):
        out = np.empty((w.n, w.k), dtype=np.float32)
        self.check(self.qmm_dequantize(ctypes.byref(w), 0, DTYPE_FP32, out.ctypes.data, w.k), "dequantize")
        return out

    # -- writing ------------------------------------------------------------------------------------
    def write(self, path, tensors, metadata=None, weights=None, flags=WRITE_OVERWRITE):
        """tensors: [(name, dtype name, shape, bytes)]; weights: [(module, Weight)] added by add_weight."""
        h = ctypes.c_void_p()
        self.check(self.qmm_safetensors_writer_create(str(path).encode(), flags, ctypes.byref(h)), "writer_create")
        for k, v in (metadata or {}).items():
            self.check(self.qmm_safetensors_writer_set_metadata(h, k.encode(), v.encode()), "set_metadata")
        for name, dtype, shape, data in tensors:
            shp = (ctypes.c_size_t * max(1, len(shape)))(*shape)
            self.check(self.qmm_safetensors_writer_add(h, name.encode(), ST_DTYPE_VALUE[dtype], len(shape), shp, data,
                                                       len(data)), f"add {name}")
        for module, w in weights or []:
            self.check(self.qmm_safetensors_writer_add_weight(h, module.encode(), ctypes.byref(w)), f"add_weight {module}")
        self.check(self.qmm_safetensors_writer_finish(h), "finish")


_IO = None


def qmm_io():
    """The bindings, loaded once; a missing or broken QMM_LIBRARY fails the test with the reason."""
    global _IO
    if _IO is None:
        path = os.environ.get("QMM_LIBRARY")
        if not path:
            pytest.fail("QMM_LIBRARY is not set: point it at libqmm.so", pytrace=False)
        try:
            _IO = QmmIo(path)
        except (OSError, AttributeError) as e:
            pytest.fail(f"QMM_LIBRARY={path!r} does not provide the checkpoint API: {e}", pytrace=False)
    return _IO


def qmm_tool():
    """Path of the qmm tool (QMM_TOOL); fails the test when it is not set."""
    path = os.environ.get("QMM_TOOL")
    if not path or not os.path.exists(path):
        pytest.fail("QMM_TOOL is not set to the qmm executable (the CTest python_oracle sets it)", pytrace=False)
    return path


def io_rng(name):
    """A generator per test, seeded from QMM_TEST_SEED when set (printed in failures), else fresh."""
    env = os.environ.get("QMM_TEST_SEED", "").strip()
    seed = int(env, 0) if env else int.from_bytes(os.urandom(8), "little")
    return np.random.default_rng([seed, sum(name.encode())]), f"QMM_TEST_SEED={seed}"


# -- independent statements of the formats, for checking what qmm wrote ----------------------------
E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], dtype=np.float64)


def unpack_e2m1(packed, k):
    """(N, ceil(K/2)) uint8, low nibble first -> (N, K) float64."""
    lo, hi = packed & 0xF, packed >> 4
    codes = np.empty((packed.shape[0], packed.shape[1] * 2), dtype=np.uint8)
    codes[:, 0::2], codes[:, 1::2] = lo, hi
    return E2M1[codes[:, :k]]
