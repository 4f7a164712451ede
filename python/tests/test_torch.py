"""qmm.torch on CPU tensors: Linear.from_linear against the dequantized weight, state_dict and .to(),
replace_linear, the op under torch.compile(fullgraph=True). Skipped where torch cannot be imported
(make test does not install it; `pip install torch` into the venv runs these)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import qmm  # noqa: E402
import qmm.torch as qt  # noqa: E402

FORMATS = ["nvfp4", "mxfp4", "fp8_tensor", "fp8_channel", "bf16"]


def reference(layer, x, q):
    w = torch.from_numpy(q.dequantize()).double()
    y = x.double() @ w.T
    if layer.bias is not None:
        y = y + layer.bias.double()
    return y


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_linear_matches_the_dequantized_weight(fmt, dtype, rng):
    torch.manual_seed(int(rng.integers(1 << 31)))
    k, n = int(rng.integers(1, 200)), int(rng.integers(1, 90))
    lin = torch.nn.Linear(k, n)
    layer = qt.Linear.from_linear(lin, format=fmt)
    q = qmm.quantize(lin.weight.detach().numpy(), format=fmt)
    for shape in [(1, k), (3, 5, k), (int(rng.integers(2, 40)), k)]:
        x = torch.randn(shape).to(dtype)
        y = layer(x)
        assert y.shape == (*shape[:-1], n) and y.dtype == dtype
        want = reference(layer, x.reshape(-1, k), q).reshape(*shape[:-1], n)
        tol = {torch.float32: 1e-5, torch.bfloat16: 1e-2, torch.float16: 2e-3}[dtype]
        err = (y.double() - want).norm() / want.norm()
        assert err < tol, f"{fmt} {dtype} {shape}: {err}"


def test_state_dict_and_to_keep_the_weight(rng):
    lin = torch.nn.Linear(96, 40)
    layer = qt.Linear.from_linear(lin, format="fp8_channel")
    x = torch.randn(4, 96)
    y = layer(x)
    fresh = qt.Linear(96, 40, format="fp8_channel")
    fresh.load_state_dict(layer.state_dict())
    torch.testing.assert_close(fresh(x), y, rtol=0, atol=0)
    half = layer.to(torch.bfloat16)  # casts the bias, not the codes or the scales' bits
    assert half.qweight.dtype == torch.uint8 and half.channel_scales.dtype == torch.int32
    torch.testing.assert_close(half(x), y, rtol=1e-2, atol=1e-2)
    assert set(layer.state_dict()) == {"qweight", "channel_scales", "tensor_scale", "bias"}


def test_replace_linear_and_compile(rng):
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.SiLU(), torch.nn.Linear(128, 64))
    model.lm_head = torch.nn.Linear(64, 10)
    x = torch.randn(7, 64)
    qmodel = qt.replace_linear(model, "nvfp4")
    assert isinstance(qmodel[0], qt.Linear) and isinstance(qmodel[2], qt.Linear)
    assert type(qmodel.lm_head) is torch.nn.Linear  # skipped by default
    eager = qmodel[2](qmodel[1](qmodel[0](x)))
    compiled = torch.compile(lambda t: qmodel[2](qmodel[1](qmodel[0](t))), fullgraph=True)
    torch.testing.assert_close(compiled(x), eager, rtol=0, atol=0)


def test_op_is_registered_with_a_fake_kernel():
    from torch._subclasses.fake_tensor import FakeTensorMode
    layer = qt.Linear(32, 16, format="mxfp4")
    with FakeTensorMode() as mode:
        x = mode.from_tensor(torch.randn(5, 32))
        args = [mode.from_tensor(t) if t is not None else None
                for t in (layer.qweight, layer.block_scales, layer.channel_scales, layer.tensor_scale, layer.bias)]
        y = torch.ops.qmm.linear(x, *args, 2, 16, 32, 0)
        assert y.shape == (5, 16)


def test_bad_input():
    layer = qt.Linear(32, 16)
    with pytest.raises(ValueError):
        layer(torch.randn(2, 31))
    with pytest.raises(TypeError):
        layer(torch.randn(2, 32, dtype=torch.float64))
