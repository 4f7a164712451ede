"""Checkpoints: qmm.open_checkpoint (safetensors files, folders and sharded folders, read in place) and
qmm.quantize_checkpoint (a whole checkpoint quantized by the library, the input never touched)."""

import ctypes
import os
import sys

import ml_dtypes
import numpy as np

from . import _lib
from ._lib import lib
from .weight import QuantizedWeight

# safetensors dtypes as numpy dtypes; the others (F4, F6, FNUZ types) come as raw uint8 bytes
_NP = {"BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "U16": np.uint16, "I16": np.int16, "U32": np.uint32,
       "I32": np.int32, "U64": np.uint64, "I64": np.int64, "F16": np.float16, "BF16": ml_dtypes.bfloat16,
       "F32": np.float32, "F64": np.float64, "C64": np.complex64, "F8_E5M2": ml_dtypes.float8_e5m2,
       "F8_E4M3": ml_dtypes.float8_e4m3fn}
if hasattr(ml_dtypes, "float8_e8m0fnu"):
    _NP["F8_E8M0"] = ml_dtypes.float8_e8m0fnu


class _Handle:
    """Owns an open qmm_safetensors; arrays read from the file keep it (and so the mapping) alive."""

    def __init__(self, path):
        self.ptr = None
        h = ctypes.c_void_p()
        _lib.check(lib.qmm_safetensors_open(os.fsencode(path), ctypes.byref(h)))
        self.ptr = h

    def __del__(self):
        if self.ptr is not None and lib is not None:
            lib.qmm_safetensors_close(self.ptr)
            self.ptr = None


class Checkpoint:
    """An open safetensors checkpoint: one file, or a folder (its model.safetensors.index.json, else its
    model.safetensors), or an index file. Every header is checked when it opens (qmm_safetensors_open).

    names        tensor names, in file order
    tensor(n)    a read-only numpy view of tensor n, zero-copy from the mapped file
    weights()    the modules whose tensors form a quantized weight (modelopt NVFP4 / FP8, dense or
                 gpt-oss MXFP4), with their formats
    weight(m)    module m as a qmm.QuantizedWeight (expert `index` of a gpt-oss stack)
    metadata     the "__metadata__" of the first file
    quant_config what the folder's hf_quant_config.json or config.json says, or None

    The file stays mapped while the Checkpoint or any array read from it is alive; close() releases
    the Checkpoint's own hold.
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        self._h = _Handle(self.path)
        h = self._h.ptr
        count = lib.qmm_safetensors_tensor_count(h)
        self.names = []
        v = _lib.TensorView()
        for i in range(count):
            _lib.check(lib.qmm_safetensors_tensor_at(h, i, ctypes.byref(v)))
            self.names.append(v.name.decode("utf-8"))
        self.metadata = {}
        key, value = ctypes.c_char_p(), ctypes.c_char_p()
        for i in range(lib.qmm_safetensors_metadata_count(h, 0)):
            _lib.check(lib.qmm_safetensors_metadata_at(h, 0, i, ctypes.byref(key), ctypes.byref(value)))
            self.metadata[key.value.decode("utf-8")] = value.value.decode("utf-8")

    def _handle(self):
        if self._h is None:
            raise ValueError("the checkpoint is closed")
        return self._h

    def close(self):
        self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __len__(self):
        return len(self.names)

    def __iter__(self):
        return iter(self.names)

    def __contains__(self, name):
        return name in self.names

    def __getitem__(self, name):
        return self.tensor(name)

    def tensor(self, name):
        """Tensor `name` as a read-only numpy array over the mapped file (no copy)."""
        h = self._handle()
        v = _lib.TensorView()
        _lib.check(lib.qmm_safetensors_tensor_find(h.ptr, name.encode("utf-8"), ctypes.byref(v)))
        dtype = _lib.ST_DTYPE_NAME.get(v.dtype, "U8")
        shape = tuple(v.shape[i] for i in range(v.ndim))
        raw = (ctypes.c_uint8 * v.bytes).from_address(v.data) if v.bytes else (ctypes.c_uint8 * 1)()
        raw._qmm_handle = h  # the view's base holds the mapping
        arr = np.frombuffer(raw, np.uint8, count=v.bytes)
        if dtype in _NP:
            arr = arr.view(_NP[dtype]).reshape(shape)
        arr.flags.writeable = False
        return arr

    def info(self, module):
        """What the quantized weight of `module` is: format, n, k, count (experts), input_scale."""
        w = _lib.CheckpointWeight()
        _lib.check(lib.qmm_checkpoint_weight_info(self._handle().ptr, module.encode("utf-8"), ctypes.byref(w)))
        return {"format": _lib.FORMAT_NAME[w.format], "n": w.n, "k": w.k, "count": w.count,
                "input_scale": w.input_scale if w.has_input_scale else None}

    def weights(self):
        """{module: format} for every quantized weight of the checkpoint (bf16 *.weight tensors excluded)."""
        out = {}
        for name in self.names:
            for suffix in (".weight", "_blocks"):
                if name.endswith(suffix):
                    module = name[: -len(suffix)]
                    w = _lib.CheckpointWeight()
                    if lib.qmm_checkpoint_weight_info(self._handle().ptr, module.encode("utf-8"), ctypes.byref(w)) == 0:
                        if w.format != _lib.FORMAT["bf16"]:
                            out[module] = _lib.FORMAT_NAME[w.format]
        return out

    def weight(self, module, index=0):
        """Module `module` (matrix `index` of an expert stack) as a qmm.QuantizedWeight (copied out)."""
        h = self._handle()
        s = _lib.Weight()
        _lib.check(lib.qmm_checkpoint_weight_load(h.ptr, module.encode("utf-8"), index, ctypes.byref(s)))
        try:
            data = np.ctypeslib.as_array(s.data, (s.data_bytes,)).copy()
            bs = np.ctypeslib.as_array(s.block_scales, (s.block_scale_bytes,)).copy() if s.block_scale_bytes else None
            cs = np.ctypeslib.as_array(s.channel_scales, (s.channel_scale_count,)).copy() if s.channel_scale_count else None
            return QuantizedWeight(_lib.FORMAT_NAME[s.format], (s.n, s.k), data, bs, cs, s.tensor_scale)
        finally:
            lib.qmm_weight_free(ctypes.byref(s))

    @property
    def quant_config(self):
        folder = self.path if os.path.isdir(self.path) else os.path.dirname(self.path) or "."
        c = _lib.QuantConfig()
        if lib.qmm_quant_config_read(os.fsencode(folder), ctypes.byref(c)) != 0:
            return None
        return {"format": _lib.FORMAT_NAME.get(c.format), "group_size": c.group_size,
                "quant_algo": c.quant_algo.decode("utf-8", "replace"), "source": c.source.decode(),
                "exclude_count": c.exclude_count}

    def __repr__(self):
        return f"qmm.Checkpoint({self.path!r}, {len(self.names)} tensors)"


def open_checkpoint(path):
    """Opens a safetensors checkpoint (a file, a folder or its index) for reading: a qmm.Checkpoint."""
    return Checkpoint(path)


def _print_progress(done, total, name):
    if not sys.stderr.isatty():
        return
    if done >= total:
        sys.stderr.write("\r\033[K")
    else:
        safe = name.encode("unicode_escape").decode("ascii")[:100]
        sys.stderr.write(f"\r\033[Kquantize [{done}/{total}] {safe}")
    sys.stderr.flush()


def quantize_checkpoint(src, dst, format, recipe="default", exclude=(), threads=None, force=False, progress=True):
    """Quantizes the checkpoint `src` into `dst` with the library's qmm_checkpoint_quantize (qmm_io.h):
    every 2-D Linear weight to `format` ("nvfp4", "mxfp4", "fp8_tensor", "fp8_channel"), every other
    tensor copied; a file gives a file, a folder or index a folder. `exclude`: regular expressions of
    tensor names to leave unquantized. The input is never touched: an output that would touch it raises
    qmm.UnsafeOutputError, an existing one qmm.ExistsError unless force=True. progress: True draws a
    progress line on a terminal's stderr, a callable gets (done, total, name) after each tensor, False
    nothing. Returns a dict: tensors, quantized, unquantized, bytes_in, bytes_out, recipe.
    """
    fmt = {"fp8": "fp8_tensor"}.get(format, format)
    if fmt not in _lib.FORMAT or fmt == "bf16":
        raise ValueError(f"unknown format {format!r} (nvfp4, mxfp4, fp8_tensor, fp8_channel)")
    if recipe not in _lib.RECIPE:
        raise ValueError(f"unknown recipe {recipe!r} ({', '.join(_lib.RECIPE)})")
    if isinstance(exclude, str):
        exclude = (exclude,)
    o = _lib.CheckpointQuantizeOptions()
    lib.qmm_checkpoint_quantize_options_init(ctypes.byref(o))
    o.format = _lib.FORMAT[fmt]
    o.recipe = _lib.RECIPE[recipe]
    patterns = (ctypes.c_char_p * max(len(exclude), 1))(*[p.encode("utf-8") for p in exclude])
    o.exclude = patterns
    o.exclude_count = len(exclude)
    o.threads = int(threads or 0)
    o.flags = _lib.WRITE_OVERWRITE if force else 0
    report = _print_progress if progress is True else progress if callable(progress) else None
    failure = []

    def on_progress(_user, p):
        if report is None:
            return 0
        try:
            report(p.contents.done, p.contents.total, (p.contents.name or b"").decode("utf-8", "replace"))
        except BaseException as e:  # stops the run; raised again after it, as ctypes cannot unwind C frames
            failure.append(e)
            return 1
        return 0

    o.progress = _lib.ProgressFn(on_progress)
    r = _lib.CheckpointQuantizeResult()
    status = lib.qmm_checkpoint_quantize(os.fsencode(src), os.fsencode(dst), ctypes.byref(o), ctypes.byref(r))
    if report is _print_progress:
        _print_progress(1, 1, "")
    if failure:
        raise failure[0]
    _lib.check(status)
    return {"tensors": r.tensors, "quantized": r.quantized, "unquantized": r.unquantized, "bytes_in": r.bytes_in,
            "bytes_out": r.bytes_out, "recipe": _lib.RECIPE_NAME[r.recipe]}
