"""The numpy face: quantize, QuantizedWeight, matmul and Context against numpy's own arithmetic on the
dequantized weight, on fresh random shapes (M = 1, odd sizes, K not a multiple of any block), with
outputs poisoned before each call; and the argument checks, which refuse before any C call."""

import threading

import ml_dtypes
import numpy as np
import pytest

import qmm

BF16 = np.dtype(ml_dtypes.bfloat16)
BACKENDS = ["reference", "cpu"]
# relative error of a product against the fp64 product of the same bf16 weight values: fp32
# accumulation, then the output's rounding
TOL = {np.dtype(np.float32): 1e-5, BF16: 1e-2, np.dtype(np.float16): 2e-3}


def random_shape(rng):
    return int(rng.integers(1, 70)), int(rng.integers(1, 300))


def rel_err(got, want):
    got = np.asarray(got, np.float64)
    return np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300)


def act_ref(x, act):
    if act is None:
        return x
    if act == "relu":
        return np.maximum(x, 0)
    if act == "silu":
        return x / (1 + np.exp(-x))
    if act == "gelu":
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    from math import erf
    return 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))


@pytest.fixture(params=BACKENDS)
def ctx(request):
    if request.param == "cpu":
        try:
            c = qmm.Context("cpu")
        except qmm.BackendUnavailableError:
            pytest.skip("no CPU backend in this build")
    else:
        c = qmm.Context(request.param)
    yield c
    c.close()


@pytest.mark.parametrize("fmt", qmm.FORMATS)
def test_quantize_arrays_and_dequantize(fmt, rng, seedtag):
    n, k = random_shape(rng)
    w = (rng.standard_normal((n, k)) * 0.05).astype(np.float32)
    q = qmm.quantize(w, format=fmt)
    t = qmm.format_traits(fmt)
    assert q.format == fmt and q.shape == (n, k), seedtag
    row_bytes = (k + 1) // 2 if t["element_bits"] == 4 else k * t["element_bits"] // 8
    assert q.data.dtype == np.uint8 and q.data.shape == (n, row_bytes), seedtag
    if t["block_size"]:
        assert q.block_scales.shape == (n, -(-k // t["block_size"])), seedtag
    else:
        assert q.block_scales is None, seedtag
    assert (q.channel_scales is not None) == (fmt == "fp8_channel"), seedtag
    assert q.nbytes == sum(np.asarray(a).nbytes for a in q.arrays.values()), seedtag
    d = q.dequantize()
    assert d.shape == (n, k) and d.dtype == np.float32, seedtag
    # the quantization error of each format on Gaussian weights
    bound = {"nvfp4": 0.15, "mxfp4": 0.2, "fp8_tensor": 0.05, "fp8_channel": 0.05, "bf16": 0.005}[fmt]
    assert rel_err(d, w) < bound, seedtag
    # unscaled values times the tensor / channel scale are the scaled ones
    u = q.dequantize(scaled=False).astype(np.float64)
    scale = q.channel_scales[:, None] if fmt == "fp8_channel" else q.tensor_scale
    np.testing.assert_allclose(u * scale, d, rtol=1e-6, err_msg=seedtag)
    # bfloat16 output is the float32 one rounded once
    np.testing.assert_array_equal(q.dequantize("bfloat16"), d.astype(BF16), err_msg=seedtag)


@pytest.mark.parametrize("fmt", qmm.FORMATS)
@pytest.mark.parametrize("a_dtype", [np.float32, BF16, np.float16])
def test_matmul_against_numpy(ctx, fmt, a_dtype, rng, seedtag):
    a_dtype = np.dtype(a_dtype)
    n, k = random_shape(rng)
    m = int(rng.choice([1, 2, int(rng.integers(3, 40))]))
    q = qmm.quantize((rng.standard_normal((n, k)) * 0.05).astype(np.float32), format=fmt)
    a = rng.standard_normal((m, k)).astype(np.float32).astype(a_dtype)
    want = a.astype(np.float64) @ q.dequantize().astype(np.float64).T
    for out in (np.float32, BF16):
        c = np.full((m, n), np.nan, out)  # poisoned: every element must be written
        got = qmm.matmul(a, q, c=c, context=ctx)
        assert got is c, seedtag
        assert rel_err(got, want) < TOL[np.dtype(out)], f"{seedtag} out {np.dtype(out)}"
    assert qmm.matmul(a, q, context=ctx).dtype == a_dtype, seedtag


@pytest.mark.parametrize("activation", [None, "relu", "silu", "gelu", "gelu_erf"])
def test_epilogue(ctx, activation, rng, seedtag):
    n, k = random_shape(rng)
    m = int(rng.integers(1, 9))
    q = qmm.quantize((rng.standard_normal((n, k)) * 0.1).astype(np.float32), format="nvfp4")
    a = rng.standard_normal((m, k)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    c0 = rng.standard_normal((m, n)).astype(np.float32)
    alpha, beta = 0.75, -0.5
    acc = a.astype(np.float64) @ q.dequantize().astype(np.float64).T
    want = act_ref(alpha * acc + beta * c0 + bias, activation)
    got = qmm.matmul(a, q, bias=bias, alpha=alpha, beta=beta, c=c0.copy(), activation=activation, context=ctx)
    assert rel_err(got, want) < 1e-5, seedtag


def test_strided_and_vector_inputs(ctx, rng, seedtag):
    n, k = random_shape(rng)
    m = int(rng.integers(2, 20))
    q = qmm.quantize((rng.standard_normal((n, k)) * 0.1).astype(np.float32), format="mxfp4")
    big = rng.standard_normal((m, k + 7)).astype(np.float32)
    a = big[:, :k]  # rows strided by k + 7: passed as is, with lda = k + 7
    cbig = np.full((m, n + 3), np.nan, np.float32)
    c = cbig[:, :n]
    qmm.matmul(a, q, c=c, context=ctx)
    want = a.astype(np.float64) @ q.dequantize().astype(np.float64).T
    assert rel_err(c, want) < 1e-5, seedtag
    assert np.isnan(cbig[:, n:]).all(), f"{seedtag}: the gaps between C's rows were written"
    y = qmm.matmul(a[0], q, context=ctx)
    assert y.shape == (n,) and rel_err(y, want[0]) < 1e-5, seedtag


def test_forced_paths_agree(rng, seedtag):
    try:
        ctx = qmm.Context("cpu", threads=2)
    except qmm.BackendUnavailableError:
        pytest.skip("no CPU backend")
    n, k = random_shape(rng)
    q = qmm.quantize((rng.standard_normal((n, k)) * 0.1).astype(np.float32), format="fp8_channel")
    a = rng.standard_normal((5, k)).astype(np.float32)
    want = a.astype(np.float64) @ q.dequantize().astype(np.float64).T
    for path in ("gemv", "materialize"):
        assert rel_err(qmm.matmul(a, q, path=path, context=ctx), want) < 1e-5, f"{seedtag} {path}"
    with pytest.raises(qmm.UnsupportedError):
        qmm.matmul(a, q, path="fused", context=ctx)
    ctx.close()


def test_argument_checks_refuse_before_c(rng):
    q = qmm.quantize(rng.standard_normal((8, 32)).astype(np.float32), format="nvfp4")
    a = rng.standard_normal((3, 32)).astype(np.float32)
    with pytest.raises(TypeError):
        qmm.matmul(a.astype(np.int32), q)
    with pytest.raises(TypeError):
        qmm.matmul(a.tolist(), q)
    with pytest.raises(TypeError):
        qmm.matmul(a, "w")
    with pytest.raises(ValueError):
        qmm.matmul(a[:, :31], q)  # K does not match
    with pytest.raises(ValueError):
        qmm.matmul(np.asfortranarray(a), q)  # columns strided
    with pytest.raises(ValueError):
        qmm.matmul(a, q, activation="tanh")
    with pytest.raises(ValueError):
        qmm.matmul(a, q, beta=1.0)  # beta reads c
    with pytest.raises(TypeError):
        qmm.matmul(a, q, bias=np.zeros(8, np.float64))
    with pytest.raises(ValueError):
        qmm.matmul(a, q, bias=np.zeros(7, np.float32))
    with pytest.raises(TypeError):
        qmm.matmul(a, q, c=np.zeros((3, 8), np.float64))
    with pytest.raises(ValueError):
        qmm.matmul(a, q, c=np.zeros((3, 8), np.float32)[:, ::-1])
    ro = np.zeros((3, 8), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError):
        qmm.matmul(a, q, c=ro)
    with pytest.raises(ValueError):
        qmm.matmul(a, q, path="fastest")
    with pytest.raises(ValueError):
        qmm.quantize(a, format="int4")
    with pytest.raises(ValueError):
        qmm.quantize(a, recipe="round")
    with pytest.raises(ValueError):
        qmm.Context("tpu")


def test_errors_carry_status_and_message():
    with pytest.raises(qmm.NonFiniteError) as e:
        qmm.quantize(np.array([[1.0, np.inf]], np.float32))
    assert isinstance(e.value, ValueError) and e.value.status == 6 and "inf" in str(e.value).lower()
    with pytest.raises(qmm.UnsupportedError) as e:
        qmm.quantize(np.ones((2, 32), np.float32), format="nvfp4", recipe="floor")
    assert "does not apply" in e.value.message
    for status, cls in qmm.errors.BY_STATUS.items():
        err = qmm.errors.from_status(status, "x")
        assert type(err) is cls and err.status == status and isinstance(err, qmm.Error)
    assert len(qmm.errors.BY_STATUS) == 23


def test_contexts(rng):
    ref = qmm.Context("reference")
    assert ref.backend == "reference" and "reference" in ref.describe()
    with pytest.raises(qmm.UnsupportedError):
        ref.set_stream(None)
    ref.close()
    with pytest.raises(ValueError):
        ref.describe()
    seen = {}

    def worker(i):
        seen[i] = qmm.default_context()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen[0] is not seen[1] and qmm.default_context() is qmm.default_context()
    # a weight prepared on a context that closes, then used on another
    q = qmm.quantize(rng.standard_normal((16, 64)).astype(np.float32), format="fp8_tensor")
    a = rng.standard_normal((2, 64)).astype(np.float32)
    with qmm.Context("auto") as c1:
        y1 = qmm.matmul(a, q, context=c1)
    with qmm.Context("auto") as c2:
        np.testing.assert_allclose(qmm.matmul(a, q, context=c2), y1, rtol=1e-6)
