"""`qmm quantize` output read back by the Python `safetensors` package and checked against the
conventions independently: dtypes and shapes of X.weight / X.weight_scale / X.weight_scale_2, values
dequantized here in numpy (low nibble first, E4M3 / E8M0 scales) close to the source, everything else
byte-identical, and the config files valid JSON saying what they should."""

import json
import subprocess

import ml_dtypes
import numpy as np
import pytest

from qmm_io_ctypes import io_rng, qmm_tool, unpack_e2m1
from test_io_safetensors import py_deserialize, py_serialize


def make_checkpoint(folder, rng):
    w = {}
    for name, shape, dtype in [("model.embed_tokens.weight", (64, 32), "BF16"),
                               ("model.layers.0.self_attn.q_proj.weight", (48, 64), "BF16"),
                               ("model.layers.0.mlp.up_proj.weight", (80, 64), "F16"),
                               ("model.layers.0.mlp.down_proj.weight", (64, 80), "F32"),
                               ("model.layers.0.input_layernorm.weight", (64,), "BF16"),
                               ("lm_head.weight", (64, 32), "BF16")]:
        a = (rng.standard_normal(shape) * 0.05).astype(np.float32)
        np_type = {"BF16": ml_dtypes.bfloat16, "F16": np.float16, "F32": np.float32}[dtype]
        w[name] = (dtype, shape, a.astype(np_type).tobytes())
    folder.mkdir()
    py_serialize(folder / "model.safetensors", w, {"format": "pt"})
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 64}, indent=2))
    return w


def as_float(dtype, shape, data):
    np_type = {"BF16": ml_dtypes.bfloat16, "F16": np.float16, "F32": np.float32}[dtype]
    return np.frombuffer(data, dtype=np_type).astype(np.float64).reshape(shape)


def dequantize(fmt, out, module):
    w = out[module + ".weight"]
    if fmt in ("nvfp4", "mxfp4"):
        assert w[0] == "U8"
        n, half = w[1]
        packed = np.frombuffer(w[2], dtype=np.uint8).reshape(n, half)
        sc = out[module + ".weight_scale"]
        if fmt == "nvfp4":
            assert sc[0] == "F8_E4M3" and sc[1] == (n, -(-2 * half // 16))
            s = np.frombuffer(sc[2], dtype=ml_dtypes.float8_e4m3fn).astype(np.float64).reshape(sc[1])
            s2 = out[module + ".weight_scale_2"]
            assert s2[0] == "F32" and s2[1] == ()
            s = s * np.frombuffer(s2[2], dtype=np.float32)[0]
            block = 16
        else:
            assert sc[0] == "U8" and sc[1] == (n, -(-2 * half // 32))
            s = np.exp2(np.frombuffer(sc[2], dtype=np.uint8).astype(np.float64) - 127).reshape(sc[1])
            block = 32
        return unpack_e2m1(packed, 2 * half) * np.repeat(s, block, axis=1)[:, :2 * half]
    assert w[0] == "F8_E4M3"
    q = np.frombuffer(w[2], dtype=ml_dtypes.float8_e4m3fn).astype(np.float64).reshape(w[1])
    sc = out[module + ".weight_scale"]
    assert sc[0] == "F32"
    s = np.frombuffer(sc[2], dtype=np.float32).astype(np.float64)
    if fmt == "fp8":
        assert sc[1] == ()
        return q * s[0]
    assert sc[1] == (w[1][0], 1)
    return q * s[:, None]


BOUNDS = {"nvfp4": 0.15, "mxfp4": 0.25, "fp8": 0.05, "fp8_channel": 0.05}


@pytest.mark.parametrize("fmt", ["nvfp4", "mxfp4", "fp8", "fp8_channel"])
def test_quantize_output_follows_the_conventions(tmp_path, fmt):
    rng, tag = io_rng(f"tool_{fmt}")
    src = make_checkpoint(tmp_path / "src", rng)
    out_dir = tmp_path / "out"
    r = subprocess.run([qmm_tool(), "quantize", str(tmp_path / "src"), str(out_dir), "--format", fmt],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out, raw = py_deserialize(out_dir / "model.safetensors")
    quantized = ["model.layers.0.self_attn.q_proj", "model.layers.0.mlp.up_proj", "model.layers.0.mlp.down_proj"]
    for module in quantized:
        ref = as_float(*src[module + ".weight"])
        deq = dequantize(fmt, out, module)
        rel = np.linalg.norm(deq - ref) / np.linalg.norm(ref)
        assert 0 < rel < BOUNDS[fmt], f"{tag} {module}: relative error {rel}"
    for name in ["model.embed_tokens.weight", "model.layers.0.input_layernorm.weight", "lm_head.weight"]:
        assert out[name] == src[name], f"{name} must be copied unchanged"
    hf = json.loads((out_dir / "hf_quant_config.json").read_text())
    algo = {"nvfp4": "NVFP4", "mxfp4": "MXFP4", "fp8": "FP8", "fp8_channel": "FP8_PER_CHANNEL_PER_TOKEN"}[fmt]
    assert hf["quantization"]["quant_algo"] == algo
    assert set(hf["quantization"]["exclude_modules"]) == {"model.embed_tokens", "lm_head"}
    cfg = json.loads((out_dir / "config.json").read_text())
    assert cfg["model_type"] == "llama" and cfg["hidden_size"] == 64
    qc = cfg["quantization_config"]
    assert qc["quant_method"] == ("mxfp4" if fmt == "mxfp4" else "modelopt")
    # refuses to overwrite, then --force works
    r = subprocess.run([qmm_tool(), "quantize", str(tmp_path / "src"), str(out_dir), "--format", fmt],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "exists" in r.stderr
