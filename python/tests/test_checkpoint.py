"""Checkpoints through the package: quantize_checkpoint (the library's, input untouched), open_checkpoint
with zero-copy views, quantized weights of each convention (modelopt NVFP4 / FP8, dense and gpt-oss
MXFP4) as QuantizedWeight, and the errors."""

import gc
import hashlib
import json
import struct

import ml_dtypes
import numpy as np
import pytest

import qmm

ST = {np.dtype(np.float32): "F32", np.dtype(ml_dtypes.bfloat16): "BF16", np.dtype(np.float16): "F16",
      np.dtype(np.uint8): "U8"}


def save(path, tensors, metadata=None):
    """A safetensors file written here, independently of the library's writer."""
    header, blobs, off = {}, [], 0
    for name, a in tensors.items():
        b = np.ascontiguousarray(a).tobytes()
        header[name] = {"dtype": ST[a.dtype], "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    path.write_bytes(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def make_model(folder, rng):
    folder.mkdir()
    t = {"model.embed_tokens.weight": rng.standard_normal((40, 64)).astype(ml_dtypes.bfloat16),
         "model.layers.0.self_attn.q_proj.weight": (rng.standard_normal((48, 64)) * 0.05).astype(ml_dtypes.bfloat16),
         "model.layers.0.mlp.up_proj.weight": (rng.standard_normal((80, 64)) * 0.05).astype(np.float32),
         "model.layers.0.mlp.down_proj.weight": (rng.standard_normal((64, 80)) * 0.05).astype(np.float16),
         "model.norm.weight": np.ones(64, ml_dtypes.bfloat16)}
    save(folder / "model.safetensors", t, {"format": "pt"})
    (folder / "config.json").write_text('{"model_type": "llama"}\n')
    (folder / "tokenizer.json").write_text("{}\n")
    return t


def digest(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("fmt", ["nvfp4", "mxfp4", "fp8_tensor", "fp8_channel"])
def test_quantize_and_read_back(fmt, tmp_path, rng, seedtag):
    src = tmp_path / "src"
    t = make_model(src, rng)
    before = digest(src)
    calls = []
    r = qmm.quantize_checkpoint(src, tmp_path / "out", format=fmt, progress=lambda *p: calls.append(p))
    assert digest(src) == before, seedtag
    assert r["tensors"] == 5 and r["quantized"] == 3 and r["unquantized"] == 1, seedtag
    assert [c[0] for c in calls] == [0, 1, 2, 3] and all(c[1] == 3 for c in calls), calls
    with qmm.open_checkpoint(tmp_path / "out") as ck:
        assert set(ck.names) >= {"model.embed_tokens.weight", "model.norm.weight"}, seedtag
        assert ck.weights() == {m: fmt for m in ("model.layers.0.self_attn.q_proj", "model.layers.0.mlp.up_proj",
                                                 "model.layers.0.mlp.down_proj")}, seedtag
        emb = ck.tensor("model.embed_tokens.weight")
        assert emb.dtype == ml_dtypes.bfloat16 and not emb.flags.writeable, seedtag
        np.testing.assert_array_equal(emb, t["model.embed_tokens.weight"])
        assert ck.metadata["quantized_by"].startswith("qmm ") and ck.quant_config["format"] in (fmt, "fp8_tensor")
        for module in ck.weights():
            q = ck.weight(module)
            orig = t[module + ".weight"].astype(np.float64)
            assert q.format == fmt and q.shape == orig.shape, seedtag
            err = np.linalg.norm(q.dequantize() - orig) / np.linalg.norm(orig)
            assert err < (0.2 if fmt in ("nvfp4", "mxfp4") else 0.05), f"{seedtag} {module} {err}"
            # the same bytes as quantizing here
            src_w = t[module + ".weight"]
            again = qmm.quantize(src_w, format=fmt)
            np.testing.assert_array_equal(q.data, again.data, err_msg=seedtag)
    assert (tmp_path / "out" / "tokenizer.json").exists() and (tmp_path / "out" / "hf_quant_config.json").exists()


def test_gpt_oss_experts(tmp_path, rng, seedtag):
    e, n, k = 3, 24, 96
    w = (rng.standard_normal((e, n, k)) * 0.05).astype(np.float32)
    qs = [qmm.quantize(w[i], format="mxfp4", recipe="rceil") for i in range(e)]
    save(tmp_path / "experts.safetensors",
         {"mlp.experts.down_proj_blocks": np.stack([q.data.reshape(n, k // 32, 16) for q in qs]),
          "mlp.experts.down_proj_scales": np.stack([q.block_scales for q in qs])})
    with qmm.open_checkpoint(tmp_path / "experts.safetensors") as ck:
        assert ck.weights() == {"mlp.experts.down_proj": "mxfp4"}
        info = ck.info("mlp.experts.down_proj")
        assert (info["n"], info["k"], info["count"]) == (n, k, e)
        for i in range(e):
            np.testing.assert_array_equal(ck.weight("mlp.experts.down_proj", i).dequantize(), qs[i].dequantize(),
                                          err_msg=seedtag)
        with pytest.raises(qmm.InvalidArgumentError):
            ck.weight("mlp.experts.down_proj", e)


def test_views_outlive_close(tmp_path, rng):
    t = make_model(tmp_path / "src", rng)
    ck = qmm.open_checkpoint(tmp_path / "src" / "model.safetensors")
    v = ck.tensor("model.layers.0.mlp.up_proj.weight")
    ck.close()
    del ck
    gc.collect()
    np.testing.assert_array_equal(v, t["model.layers.0.mlp.up_proj.weight"])


def test_errors(tmp_path, rng):
    src = tmp_path / "src"
    make_model(src, rng)
    qmm.quantize_checkpoint(src, tmp_path / "out", format="nvfp4", progress=False)
    with pytest.raises(qmm.ExistsError):
        qmm.quantize_checkpoint(src, tmp_path / "out", format="nvfp4", progress=False)
    qmm.quantize_checkpoint(src, tmp_path / "out", format="mxfp4", progress=False, force=True)
    before = digest(src)
    with pytest.raises(qmm.UnsafeOutputError) as e:
        qmm.quantize_checkpoint(src, src / "q", format="nvfp4", progress=False, force=True)
    assert str(src) in e.value.message
    with pytest.raises(qmm.UnsafeOutputError):
        qmm.quantize_checkpoint(src / "model.safetensors", src / "q.safetensors", format="nvfp4", progress=False)
    assert digest(src) == before
    with pytest.raises(qmm.NotFoundError):
        qmm.open_checkpoint(tmp_path / "missing.safetensors")
    with pytest.raises(ValueError):
        qmm.quantize_checkpoint(src, tmp_path / "x", format="int4")

    def stop(done, total, name):
        raise KeyboardInterrupt("stop")

    with pytest.raises(KeyboardInterrupt):
        qmm.quantize_checkpoint(src, tmp_path / "y", format="nvfp4", progress=stop)
    assert not (tmp_path / "y").exists()  # a run stopped by its callback leaves nothing
