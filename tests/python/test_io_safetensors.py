"""qmm's safetensors reader and writer against the Python `safetensors` package (the format's
reference implementation, Rust underneath): files written by one are read by the other and every value
is compared; modelopt NVFP4 and gpt-oss MXFP4 checkpoints built here independently load with the right
values and export back bit for bit; the scale layouts follow the formulas of docs/design.md."""

import json
import struct

import ml_dtypes
import numpy as np
import pytest
import safetensors
import safetensors.numpy as stnp
from safetensors import TensorSpec

from qmm_io_ctypes import (CheckpointWeight, FORMATS, LAYOUTS, QMM_ERR_MALFORMED, QMM_OK, ST_BITS, WeightSize, io_rng, qmm_io,
                           unpack_e2m1)

# The Python package's dtype names (torch style) and the format's names.
PY_DTYPES = {"bool": "BOOL", "int8": "I8", "uint8": "U8", "int16": "I16", "uint16": "U16", "int32": "I32",
             "uint32": "U32", "int64": "I64", "uint64": "U64", "float16": "F16", "float32": "F32", "float64": "F64",
             "bfloat16": "BF16", "float8_e4m3fn": "F8_E4M3", "float8_e4m3fnuz": "F8_E4M3FNUZ", "float8_e5m2": "F8_E5M2",
             "float8_e5m2fnuz": "F8_E5M2FNUZ", "float8_e8m0fnu": "F8_E8M0", "float4_e2m1fn_x2": "F4",
             "complex64": "C64"}


def py_serialize(path, tensors, metadata=None):
    """tensors: {name: (format dtype name, shape, bytes)} written by the safetensors package."""
    keep, specs = [], {}
    by_format = {v: k for k, v in PY_DTYPES.items()}
    for name, (dtype, shape, data) in tensors.items():
        buf = np.frombuffer(data, dtype=np.uint8).copy() if data else np.zeros(1, dtype=np.uint8)
        keep.append(buf)
        py_shape = list(shape)
        if dtype == "F4":  # the package takes the storage shape of packed F4 (two per byte)
            py_shape[-1] //= 2
        specs[name] = TensorSpec(dtype=by_format[dtype], shape=tuple(py_shape), data_ptr=buf.ctypes.data,
                                 data_len=len(data))
    safetensors.serialize_file(specs, str(path), metadata=metadata)


def py_deserialize(path):
    with open(path, "rb") as f:
        raw = f.read()
    return {name: (t["dtype"], tuple(t["shape"]), bytes(t["data"])) for name, t in safetensors.deserialize(raw)}, raw


def random_tensors(rng, dtypes, scalar=True):
    out = {}
    for i, dtype in enumerate(dtypes):
        bits = ST_BITS[dtype]
        shape = (int(rng.integers(1, 5)), int(rng.integers(1, 7)) * 2)
        nbytes = shape[0] * shape[1] * bits // 8
        out[f"layer.{i}.{dtype.lower()}"] = (dtype, shape, rng.integers(0, 256, nbytes, dtype=np.uint8).tobytes())
    if scalar:
        out["scalar.f32"] = ("F32", (), struct.pack("<f", 1.5))
        out["empty.bf16"] = ("BF16", (0, 4), b"")
        out["unicode.\u00e9\u4e2d\U0001f600"] = ("U8", (3,), b"abc")
    return out


def test_reads_every_dtype_written_by_safetensors(tmp_path):
    io = qmm_io()
    rng, tag = io_rng("reads_every_dtype")
    tensors = random_tensors(rng, sorted(set(PY_DTYPES.values())))
    meta = {"format": "pt", "note": "quote \" backslash \\ newline \n \u00e9"}
    path = tmp_path / "py.safetensors"
    py_serialize(path, tensors, meta)
    got, got_meta, _ = io.read_all(path)
    assert got_meta == meta, tag
    assert set(got) == set(tensors), tag
    for name, (dtype, shape, data) in tensors.items():
        assert got[name] == (dtype, shape, data), f"{tag} {name}: {got[name][:2]} vs {(dtype, shape)}"


def test_reads_numpy_values(tmp_path):
    io = qmm_io()
    rng, tag = io_rng("reads_numpy_values")
    arrays = {"a.f32": rng.standard_normal((7, 5)).astype(np.float32), "b.f16": rng.standard_normal(9).astype(np.float16),
              "c.i64": rng.integers(-2**62, 2**62, (2, 3, 4)), "d.f64": rng.standard_normal(3),
              "e.bool": rng.integers(0, 2, 6).astype(bool), "f.u16": rng.integers(0, 65535, 5, dtype=np.uint16)}
    path = tmp_path / "np.safetensors"
    stnp.save_file(arrays, str(path), metadata={"k": "v"})
    got, meta, _ = io.read_all(path)
    assert meta == {"k": "v"}
    for name, a in arrays.items():
        dtype, shape, data = got[name]
        assert shape == a.shape, tag
        back = np.frombuffer(data, dtype=a.dtype).reshape(a.shape)
        np.testing.assert_array_equal(back, a, err_msg=f"{tag} {name}")


def test_safetensors_reads_what_qmm_writes(tmp_path):
    io = qmm_io()
    rng, tag = io_rng("reads_what_qmm_writes")
    tensors = random_tensors(rng, sorted(set(PY_DTYPES.values())))
    meta = {"format": "pt", "producer": "qmm \u00e9"}
    path = tmp_path / "qmm.safetensors"
    io.write(path, [(n, *t) for n, t in tensors.items()], meta)
    got, raw = py_deserialize(path)
    assert set(got) == set(tensors), tag
    for name, (dtype, shape, data) in tensors.items():
        assert got[name] == (dtype, shape, data), f"{tag} {name}"
    # header: 8-byte aligned data area, __metadata__ written
    (n,) = struct.unpack("<Q", raw[:8])
    assert (8 + n) % 8 == 0
    header = json.loads(raw[8:8 + n])
    assert header["__metadata__"] == meta
    # the numpy loader agrees on the values it can represent
    np_path = tmp_path / "np.safetensors"
    a = rng.standard_normal((4, 6)).astype(np.float32)
    io.write(np_path, [("a", "F32", a.shape, a.tobytes())])
    np.testing.assert_array_equal(stnp.load_file(str(np_path))["a"], a)


def test_malformed_variants_of_a_real_file(tmp_path):
    """Every truncation and every corrupted length of a file written by safetensors is rejected cleanly."""
    io = qmm_io()
    rng, tag = io_rng("malformed_variants")
    path = tmp_path / "py.safetensors"
    py_serialize(path, random_tensors(rng, ["F32", "BF16", "U8"], scalar=False))
    raw = path.read_bytes()
    assert io.open_memory_status(raw) == QMM_OK
    (n,) = struct.unpack("<Q", raw[:8])
    for cut in sorted(set([0, 1, 7, 8, 9, n // 2, 8 + n - 1, 8 + n, len(raw) - 1])):
        st = io.open_memory_status(raw[:cut])
        assert st == QMM_ERR_MALFORMED, f"{tag} truncated to {cut}: {st} {io.error()}"
    for bad_n in [0, 1, n - 1, n + 1, len(raw), 2**40, 2**64 - 1]:
        st = io.open_memory_status(struct.pack("<Q", bad_n) + raw[8:])
        assert st == QMM_ERR_MALFORMED, f"{tag} header length {bad_n}: {st} {io.error()}"
    # flipping bytes of the header: never a crash, and whatever opens is a consistent file
    for _ in range(300):
        b = bytearray(raw)
        b[int(rng.integers(8, 8 + n))] = int(rng.integers(0, 256))
        assert io.open_memory_status(bytes(b)) in (QMM_OK, QMM_ERR_MALFORMED)


def nvfp4_reference(packed, scales, s2, k):
    """W = E2M1 * E4M3 block scale * s2, exact in float64, rounded once to float32."""
    vals = unpack_e2m1(packed, k)
    sb = scales.view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    return (vals * np.repeat(sb, 16, axis=1)[:, :k] * np.float64(s2)).astype(np.float32)


def test_modelopt_nvfp4_loads_and_exports_bit_exactly(tmp_path):
    """A modelopt-style NVFP4 checkpoint built here (not by qmm) loads with the right values, and qmm's
    export of what it loaded is the same file content, tensor for tensor."""
    io = qmm_io()
    rng, tag = io_rng("modelopt_nvfp4")
    n, k = 48, 96
    packed = rng.integers(0, 256, (n, k // 2), dtype=np.uint8)
    # finite positive E4M3 codes only (0x7F is NaN)
    scales = rng.integers(0x08, 0x7E, (n, k // 16), dtype=np.uint8)
    s2 = np.float32(rng.uniform(1e-4, 1e-2))
    src = {
        "model.layers.0.mlp.down_proj.weight": ("U8", (n, k // 2), packed.tobytes()),
        "model.layers.0.mlp.down_proj.weight_scale": ("F8_E4M3", (n, k // 16), scales.tobytes()),
        "model.layers.0.mlp.down_proj.weight_scale_2": ("F32", (), s2.tobytes()),
        "model.layers.0.mlp.down_proj.input_scale": ("F32", (), np.float32(0.25).tobytes()),
    }
    path = tmp_path / "modelopt.safetensors"
    py_serialize(path, src, {"format": "pt"})
    h = io.open(path)
    try:
        info = CheckpointWeight()
        assert io.qmm_checkpoint_weight_info(h, b"model.layers.0.mlp.down_proj", info) == QMM_OK, io.error()
        assert (info.format, info.n, info.k, info.count) == (FORMATS["nvfp4"], n, k, 1)
        assert info.has_input_scale == 1 and info.input_scale == 0.25
        w = io.load_weight(h, "model.layers.0.mlp.down_proj")
        np.testing.assert_array_equal(io.dequantize(w), nvfp4_reference(packed, scales, s2, k), err_msg=tag)
        out = tmp_path / "export.safetensors"
        io.write(out, [("model.layers.0.mlp.down_proj.input_scale", "F32", (), np.float32(0.25).tobytes())],
                 {"format": "pt"}, weights=[("model.layers.0.mlp.down_proj", w)])
        io.qmm_weight_free(w)
    finally:
        io.qmm_safetensors_close(h)
    got, _ = py_deserialize(out)
    want, _ = py_deserialize(path)
    assert got == want, tag


def test_gpt_oss_experts_load(tmp_path):
    """gpt-oss *_blocks (E, N, K/32, 16) and *_scales (E, N, K/32), low nibble first, E8M0 scales."""
    io = qmm_io()
    rng, tag = io_rng("gpt_oss")
    e, n, k = 3, 10, 128
    blocks = rng.integers(0, 256, (e, n, k // 32, 16), dtype=np.uint8)
    scales = rng.integers(110, 140, (e, n, k // 32), dtype=np.uint8)
    path = tmp_path / "gptoss.safetensors"
    py_serialize(path, {"block.0.mlp.mlp1_weight_blocks": ("U8", blocks.shape, blocks.tobytes()),
                        "block.0.mlp.mlp1_weight_scales": ("U8", scales.shape, scales.tobytes())})
    h = io.open(path)
    try:
        for x in range(e):
            w = io.load_weight(h, "block.0.mlp.mlp1_weight", x)
            assert (w.format, w.n, w.k) == (FORMATS["mxfp4"], n, k)
            vals = unpack_e2m1(blocks[x].reshape(n, k // 2), k)
            ref = (vals * np.repeat(np.exp2(scales[x].astype(np.float64) - 127), 32, axis=1)).astype(np.float32)
            np.testing.assert_array_equal(io.dequantize(w), ref, err_msg=f"{tag} expert {x}")
            io.qmm_weight_free(w)
    finally:
        io.qmm_safetensors_close(h)


def nv_offset(r, c, cols):
    return ((r // 128) * ((cols + 3) // 4) + c // 4) * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + (c % 4)


def amd_offset(mn, ks, cols):
    kp = (cols + 7) // 8 * 8
    return (mn // 32) * (32 * kp) + (ks // 8) * 256 + (ks % 4) * 64 + (mn % 16) * 4 + ((ks // 4) % 2) * 2 + (mn // 16) % 2


@pytest.mark.parametrize("fmt,layout", [("nvfp4", "nv_blocked"), ("mxfp4", "nv_blocked"), ("mxfp4", "amd_mfma")])
def test_scale_layouts_follow_the_formulas(fmt, layout):
    io = qmm_io()
    rng, tag = io_rng(f"layouts_{fmt}_{layout}")
    block = 16 if fmt == "nvfp4" else 32
    offset = nv_offset if layout == "nv_blocked" else amd_offset
    for _ in range(6):
        n, k = int(rng.integers(1, 300)), int(rng.integers(1, 1200))
        cols = -(-k // block)
        size = WeightSize()
        assert io.qmm_weight_size_query(FORMATS[fmt], LAYOUTS[layout], n, k, size) == QMM_OK
        src = rng.integers(1, 256, (n, cols), dtype=np.uint8)
        dst = np.full(size.block_scale_bytes, 0xEE, dtype=np.uint8)
        st = io.qmm_scales_convert(FORMATS[fmt], n, k, 0, src.ctypes.data, src.nbytes, LAYOUTS[layout], dst.ctypes.data,
                                   dst.nbytes)
        assert st == QMM_OK, io.error()
        expect = np.zeros_like(dst)
        r, c = np.meshgrid(np.arange(n), np.arange(cols), indexing="ij")
        expect[offset(r, c, cols).ravel()] = src.ravel()
        np.testing.assert_array_equal(dst, expect, err_msg=f"{tag} {n} x {k}")
