"""The C ABI of libqmm through ctypes: the library, its structs, enums and function prototypes.

Every struct mirrors one of include/qmm.h, qmm_io.h or qmm_measure.h field for field (python/tests/
test_structs.py compares each size and offset with the C compiler's). Nothing here has logic of its
own beyond loading the library and turning a failed status into a qmm.Error.
"""

import ctypes
import os
import sys

from . import _files, errors

c_size = ctypes.c_size_t
c_int = ctypes.c_int
c_float_p = ctypes.POINTER(ctypes.c_float)
c_u8_p = ctypes.POINTER(ctypes.c_uint8)

# ------------------------------------------------------------------------------------------------
# Enums (values of qmm.h; append-only there)
# ------------------------------------------------------------------------------------------------
DTYPE = {"fp32": 1, "bf16": 2, "fp16": 3, "e4m3": 4, "e2m1": 5, "e8m0": 6}
FORMAT = {"nvfp4": 1, "mxfp4": 2, "fp8_tensor": 3, "fp8_channel": 4, "bf16": 5}
FORMAT_NAME = {v: k for k, v in FORMAT.items()}
RECIPE = {"default": 0, "modelopt": 1, "floor": 2, "rceil": 3, "amax": 4}
RECIPE_NAME = {v: k for k, v in RECIPE.items()}
BACKEND = {"auto": 0, "reference": 1, "cpu": 2, "cuda": 3}
BACKEND_NAME = {v: k for k, v in BACKEND.items()}
PATH = {"auto": 0, "reference": 1, "gemv": 2, "fused": 3, "materialize": 4}
ACTIVATION = {None: 0, "none": 0, "relu": 1, "silu": 2, "gelu": 3, "gelu_erf": 4}
SCALE_LAYOUT_CANONICAL = 0
GLOBAL_SCALE_NONE, GLOBAL_SCALE_TENSOR, GLOBAL_SCALE_CHANNEL = 0, 1, 2
DEQUANT_UNSCALED = 1
WRITE_OVERWRITE = 1
ST_DTYPE = {"BOOL": 1, "U8": 2, "I8": 3, "U16": 4, "I16": 5, "U32": 6, "I32": 7, "U64": 8, "I64": 9, "F16": 10,
            "BF16": 11, "F32": 12, "F64": 13, "C64": 14, "F8_E5M2": 15, "F8_E4M3": 16, "F8_E8M0": 17,
            "F8_E4M3FNUZ": 18, "F8_E5M2FNUZ": 19, "F4": 20, "F6_E2M3": 21, "F6_E3M2": 22}
ST_DTYPE_NAME = {v: k for k, v in ST_DTYPE.items()}


# ------------------------------------------------------------------------------------------------
# Structs
# ------------------------------------------------------------------------------------------------
class FormatTraits(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("element", c_int), ("element_bits", c_int), ("block_size", c_int),
                ("block_scale", c_int), ("global_scale", c_int), ("bits_per_weight", ctypes.c_double)]


class Weight(ctypes.Structure):
    _fields_ = [("format", c_int), ("scale_layout", c_int), ("n", c_size), ("k", c_size), ("data", c_u8_p),
                ("data_bytes", c_size), ("block_scales", c_u8_p), ("block_scale_bytes", c_size),
                ("channel_scales", c_float_p), ("channel_scale_count", c_size), ("tensor_scale", ctypes.c_float),
                ("prepared", ctypes.c_void_p), ("experts", c_size), ("expert_stride", c_size),
                ("expert_scale_stride", c_size), ("tensor_scales", c_float_p)]


class WeightSize(ctypes.Structure):
    _fields_ = [("row_bytes", c_size), ("data_bytes", c_size), ("scales_per_row", c_size),
                ("block_scale_bytes", c_size), ("channel_scale_count", c_size)]


class ContextOptions(ctypes.Structure):
    _fields_ = [("backend", c_int), ("num_threads", c_int), ("cuda_device", c_int), ("cuda_stream", ctypes.c_void_p),
                ("workspace_bytes", c_size), ("path", c_int)]


class Epilogue(ctypes.Structure):
    _fields_ = [("alpha", ctypes.c_float), ("beta", ctypes.c_float), ("bias", c_float_p), ("column_scale", c_float_p),
                ("activation", c_int)]


class GroupedEpilogue(ctypes.Structure):
    _fields_ = [("alpha", ctypes.c_float), ("beta", ctypes.c_float), ("bias", c_float_p), ("row_scale", c_float_p),
                ("activation", c_int)]


class MachineRates(ctypes.Structure):
    _fields_ = [("copy_gbps", ctypes.c_double), ("fp32_gflops", ctypes.c_double), ("bf16_gflops", ctypes.c_double)]


class MachineState(ctypes.Structure):
    _fields_ = [("known", c_int), ("sm_mhz", ctypes.c_double), ("power_w", ctypes.c_double),
                ("clock_reasons", ctypes.c_ulonglong)]


class TensorView(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", c_int), ("ndim", c_size), ("shape", ctypes.POINTER(c_size)),
                ("elements", c_size), ("data", ctypes.c_void_p), ("bytes", c_size), ("shard", c_size)]


class CheckpointWeight(ctypes.Structure):
    _fields_ = [("format", c_int), ("n", c_size), ("k", c_size), ("count", c_size), ("has_input_scale", c_int),
                ("input_scale", ctypes.c_float)]


class CheckpointProgress(ctypes.Structure):
    _fields_ = [("done", c_size), ("total", c_size), ("name", ctypes.c_char_p)]


ProgressFn = ctypes.CFUNCTYPE(c_int, ctypes.c_void_p, ctypes.POINTER(CheckpointProgress))


class CheckpointQuantizeOptions(ctypes.Structure):
    _fields_ = [("format", c_int), ("recipe", c_int), ("exclude", ctypes.POINTER(ctypes.c_char_p)),
                ("exclude_count", c_size), ("threads", c_int), ("flags", ctypes.c_uint), ("progress", ProgressFn),
                ("progress_user", ctypes.c_void_p)]


class CheckpointQuantizeResult(ctypes.Structure):
    _fields_ = [("tensors", c_size), ("quantized", c_size), ("unquantized", c_size), ("bytes_in", ctypes.c_uint64),
                ("bytes_out", ctypes.c_uint64), ("recipe", c_int)]


class QuantConfig(ctypes.Structure):
    _fields_ = [("format", c_int), ("group_size", c_int), ("quant_algo", ctypes.c_char * 32),
                ("source", ctypes.c_char * 32), ("exclude_count", c_size)]


# The structs by their C names, for the layout test.
STRUCTS = {"qmm_format_traits": FormatTraits, "qmm_weight": Weight, "qmm_weight_size": WeightSize,
           "qmm_context_options": ContextOptions, "qmm_epilogue": Epilogue, "qmm_grouped_epilogue": GroupedEpilogue,
           "qmm_machine_rates": MachineRates,
           "qmm_machine_state": MachineState, "qmm_tensor_view": TensorView,
           "qmm_checkpoint_weight": CheckpointWeight, "qmm_checkpoint_progress": CheckpointProgress,
           "qmm_checkpoint_quantize_options": CheckpointQuantizeOptions,
           "qmm_checkpoint_quantize_result": CheckpointQuantizeResult, "qmm_quant_config": QuantConfig}

# ------------------------------------------------------------------------------------------------
# The library
# ------------------------------------------------------------------------------------------------
_LIB_NAMES = {"linux": "libqmm.so", "darwin": "libqmm.dylib", "win32": "qmm.dll"}


def library_path():
    """Where libqmm is loaded from: $QMM_LIBRARY, else the one installed with this package."""
    env = os.environ.get("QMM_LIBRARY")
    if env:
        return env
    name = _LIB_NAMES.get(sys.platform, "libqmm.so")
    found = _files.installed(name)
    if found is None:
        raise ImportError(f"qmm: {name} is not installed with the package and QMM_LIBRARY is not set; install "
                          "the package with `pip install .` from a qmm checkout")
    return found


def _load():
    path = library_path()
    try:
        return ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(f"qmm: cannot load {path!r}: {e}") from e


lib = _load()

_P = ctypes.POINTER
_vp = ctypes.c_void_p
_cp = ctypes.c_char_p
_PROTOTYPES = {
    # name: (restype, argtypes); restype c_int is a qmm_status
    "qmm_version": (_cp, []),
    "qmm_status_string": (_cp, [c_int]),
    "qmm_last_error": (_cp, []),
    "qmm_format_get_traits": (c_int, [c_int, _P(FormatTraits)]),
    "qmm_weight_size_query": (c_int, [c_int, c_int, c_size, c_size, _P(WeightSize)]),
    "qmm_weight_init": (c_int, [_P(Weight), c_int, c_size, c_size]),
    "qmm_weight_validate": (c_int, [_P(Weight)]),
    "qmm_quantize": (c_int, [c_int, c_int, _vp, c_size, _P(Weight)]),
    "qmm_dequantize": (c_int, [_P(Weight), ctypes.c_uint, c_int, _vp, c_size]),
    "qmm_backend_available": (c_int, [c_int]),
    "qmm_context_options_init": (None, [_P(ContextOptions)]),
    "qmm_context_create": (c_int, [_P(ContextOptions), _P(_vp)]),
    "qmm_context_destroy": (None, [_vp]),
    "qmm_context_get_backend": (c_int, [_vp, _P(c_int)]),
    "qmm_context_set_path": (c_int, [_vp, c_int]),
    "qmm_context_set_stream": (c_int, [_vp, _vp]),
    "qmm_context_describe": (_cp, [_vp]),
    "qmm_context_synchronize": (c_int, [_vp]),
    "qmm_context_measure_rates": (c_int, [_vp, c_size, _P(MachineRates)]),
    "qmm_weight_prepare": (c_int, [_vp, _P(Weight)]),
    "qmm_weight_unprepare": (None, [_P(Weight)]),
    "qmm_buffer_alloc": (c_int, [_vp, c_size, _P(_vp)]),
    "qmm_buffer_free": (None, [_vp, _vp]),
    "qmm_buffer_write": (c_int, [_vp, _vp, _vp, c_size]),
    "qmm_buffer_read": (c_int, [_vp, _vp, _vp, c_size]),
    "qmm_epilogue_init": (None, [_P(Epilogue)]),
    "qmm_matmul": (c_int, [_vp, c_size, c_int, _vp, c_size, _P(Weight), c_int, _vp, c_size, _P(Epilogue)]),
    "qmm_matmul_plan": (c_int, [_vp, c_size, c_int, _P(Weight), _P(c_int)]),
    "qmm_safetensors_open": (c_int, [_cp, _P(_vp)]),
    "qmm_safetensors_close": (None, [_vp]),
    "qmm_safetensors_tensor_count": (c_size, [_vp]),
    "qmm_safetensors_tensor_at": (c_int, [_vp, c_size, _P(TensorView)]),
    "qmm_safetensors_tensor_find": (c_int, [_vp, _cp, _P(TensorView)]),
    "qmm_safetensors_shard_count": (c_size, [_vp]),
    "qmm_safetensors_shard_name": (_cp, [_vp, c_size]),
    "qmm_safetensors_metadata_count": (c_size, [_vp, c_size]),
    "qmm_safetensors_metadata_at": (c_int, [_vp, c_size, c_size, _P(_cp), _P(_cp)]),
    "qmm_checkpoint_weight_info": (c_int, [_vp, _cp, _P(CheckpointWeight)]),
    "qmm_checkpoint_weight_load": (c_int, [_vp, _cp, c_size, _P(Weight)]),
    "qmm_weight_free": (None, [_P(Weight)]),
    "qmm_checkpoint_quantize_options_init": (None, [_P(CheckpointQuantizeOptions)]),
    "qmm_checkpoint_quantize": (c_int, [_cp, _cp, _P(CheckpointQuantizeOptions), _P(CheckpointQuantizeResult)]),
    "qmm_quant_config_read": (c_int, [_cp, _P(QuantConfig)]),
}
for _name, (_res, _args) in _PROTOTYPES.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args


def last_error():
    """The text of the last failure of a qmm call in this thread."""
    return lib.qmm_last_error().decode("utf-8", "replace")


def check(status, what=None):
    """Raises the qmm.Error subclass of a failed status, with the library's message."""
    if status != 0:
        raise errors.from_status(status, last_error() if what is None else f"{what}: {last_error()}")


def version():
    return lib.qmm_version().decode()
