"""qmm_quantize / qmm_dequantize against numpy statements of the recipes.

The oracles below are written from the recipe definitions (docs/design.md, qmm.h, and the producers they
name), not from qmm's C code:

NVFP4, as TensorRT Model Optimizer's NVFP4QTensor does it, all arithmetic in float32 in this order:
    s2 = amax(|W|) / 2688                       (if that is 0, qmm uses s2 = 1)
    per 16-block:  sb = amax_b / (6 * s2);  sb[sb == 0] = 1;  clamp to [2^-9, 448];  E4M3 (RNE)
    scale = fp32(sb_e4m3) * s2;  q = x / scale  (fp32; a scale that underflows to 0 gives +-inf / NaN)
    code = modelopt's _cast_fp4(q): sign bit (q < 0), searchsorted on the E2M1 bounds (NaN sorts past
    every bound), +1 on the odd-index bounds, i.e. round-half-even. The sign is that of q, the scaled
    value, as in modelopt's NVFP4QTensor.quantize (it calls _cast_fp4 on input / scale): a negative x
    whose quotient underflows to -0.0 encodes as +0.
MXFP4 (OCP MX v1.0): per 32-block
    floor: e = floor(log2(amax_b)) - 2      rceil: e = ceil(log2(fp32(amax_b / 6)))
    computed exactly (frexp), amax 0 -> -127, clamped to [-127, 127]; scale code e + 127;
    code = E2M1 RNE of x * 2^-e, IEEE sign (so -0.0 -> 0x8), saturating at +-6
FP8 amax: s = amax / 448 (tensor, or per row), 1 where 0; code = E4M3(clip(x / s, -448, 448)), fp32.
Dequantization: element * block scale [* tensor or channel scale] in float64 (exact), rounded once.
"""

import ctypes

import ml_dtypes
import numpy as np
import pytest

from conftest import DTYPES as DTYPE_IDS
from conftest import FORMATS as FORMAT_IDS
from conftest import (DEQUANT_UNSCALED, E2M1_VALUES, QMM_ERR_INVALID_ARGUMENT, QMM_ERR_NON_FINITE,
                      QMM_ERR_UNSUPPORTED, QMM_OK, SRC_DTYPES, bits_f32, e4m3_values, e8m0_values, f32_bits,
                      f64_to_bf16_bits, f64_to_f32_bits, pack_e2m1, set_weight_tensor_scale_bits, unpack_e2m1)

F32 = np.float32
F32_MAX = np.finfo(np.float32).max
F32_TINY = np.finfo(np.float32).tiny            # 2^-126
F32_SUB_MIN = np.float32(2.0 ** -149)

# (format, recipe) pairs; "default" is checked separately against the explicit recipe
RECIPES = [("nvfp4", "modelopt"), ("mxfp4", "floor"), ("mxfp4", "rceil"), ("fp8_tensor", "amax"),
           ("fp8_channel", "amax")]
RECIPE_IDS = [f"{f}-{r}" for f, r in RECIPES]
DEFAULT_RECIPE = {"nvfp4": "modelopt", "mxfp4": "floor", "fp8_tensor": "amax", "fp8_channel": "amax"}
FORMATS = ["nvfp4", "mxfp4", "fp8_tensor", "fp8_channel"]
BLOCK = {"nvfp4": 16, "mxfp4": 32}

E2M1_BOUNDS = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0], np.float32)
E2M1_ODD_BOUNDS = E2M1_BOUNDS[1::2]             # 0.75, 1.75, 3.5: ties that round up (to even)
E2M1_MIDPOINTS = E2M1_BOUNDS.astype(np.float64)
E2M1_POINTS = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


# ------------------------------------------------------------------------------------------------
# Oracles
# ------------------------------------------------------------------------------------------------
def block_amax(absw, b):
    n, k = absw.shape
    nb = -(-k // b)
    padded = np.zeros((n, nb * b), np.float32)
    padded[:, :k] = absw
    return padded.reshape(n, nb, b).max(axis=2)


def expand_blocks(per_block, b, k):
    return np.repeat(per_block, b, axis=1)[:, :k]


def modelopt_cast_fp4(q):
    """modelopt's _cast_fp4: sign = (q < 0); ord = searchsorted(bounds, |q|) (side left); +1 where |q|
    equals a bound at an odd index. NaN sorts past every bound (ord 7)."""
    q = np.asarray(q, np.float32)
    sign = (q < 0).astype(np.uint8)
    a = np.abs(q)
    ordv = np.searchsorted(E2M1_BOUNDS, a, side="left").astype(np.uint8)
    rnd = np.isin(a, E2M1_ODD_BOUNDS).astype(np.uint8)
    return ((sign << 3) | (ordv + rnd)).astype(np.uint8)


def oracle_nvfp4(w):
    w = np.asarray(w, np.float32)
    n, k = w.shape
    absw = np.abs(w)
    amax = absw.max()
    s2 = F32(amax) / F32(2688.0)
    if s2 == 0:
        s2 = F32(1.0)
    amax_b = block_amax(absw, 16)
    sb = amax_b / (F32(6.0) * s2)
    sb[sb == 0] = F32(1.0)
    sb = np.clip(sb, F32(2.0 ** -9), F32(448.0))
    assert sb.dtype == np.float32
    sb_e4m3 = sb.astype(ml_dtypes.float8_e4m3fn)
    scale = sb_e4m3.astype(np.float32) * s2
    assert scale.dtype == np.float32
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q = w / expand_blocks(scale, 16, k)
    assert q.dtype == np.float32
    codes = modelopt_cast_fp4(q)
    return {"data": pack_e2m1(codes), "block_scales": sb_e4m3.view(np.uint8),
            "tensor_scale": np.array([s2], np.float32).view(np.uint32)[0], "channel_scales": None,
            "codes": codes}


def mx_exponent(amax_b, rule):
    amax_b = np.asarray(amax_b, np.float32)
    if rule == "floor":
        _, ex = np.frexp(amax_b.astype(np.float64))   # amax = m * 2^ex, m in [0.5, 1)
        e = ex.astype(np.int64) - 1 - 2                # floor(log2(amax)) - 2, exactly
        e = np.where(amax_b == 0, -127, e)
    elif rule == "rceil":
        d = amax_b / F32(6.0)                          # fp32 division
        assert d.dtype == np.float32
        m, ex = np.frexp(d.astype(np.float64))
        e = np.where(m == 0.5, ex - 1, ex).astype(np.int64)  # ceil(log2(d)), exactly
        e = np.where(d == 0, -127, e)
    else:
        raise ValueError(rule)
    return np.clip(e, -127, 127)


def oracle_mxfp4(w, rule):
    w = np.asarray(w, np.float32)
    n, k = w.shape
    e = mx_exponent(block_amax(np.abs(w), 32), rule)
    x = np.ldexp(w.astype(np.float64), -expand_blocks(e, 32, k))  # exact
    # x is an fp32 value times a power of two: exact in fp32 unless it is below 2^-149, where E2M1 gives
    # a (signed) zero either way; the cast to fp32 first avoids ml_dtypes' float64 path.
    x = np.clip(x, -6.0, 6.0).astype(np.float32)
    codes = x.astype(ml_dtypes.float4_e2m1fn).view(np.uint8)
    return {"data": pack_e2m1(codes), "block_scales": (e + 127).astype(np.uint8), "tensor_scale": None,
            "channel_scales": None, "codes": codes}


def oracle_fp8(w, per_channel):
    w = np.asarray(w, np.float32)
    absw = np.abs(w)
    amax = absw.max(axis=1, keepdims=True) if per_channel else np.full((1, 1), absw.max(), np.float32)
    s = amax / F32(448.0)
    s[s == 0] = F32(1.0)
    with np.errstate(over="ignore"):
        q = w / s
    assert q.dtype == np.float32 and s.dtype == np.float32
    codes = np.clip(q, -448, 448).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    return {"data": codes, "block_scales": None,
            "tensor_scale": None if per_channel else s.view(np.uint32)[0, 0],
            "channel_scales": s[:, 0].copy() if per_channel else None, "codes": codes}


def oracle_quantize(fmt, recipe, w):
    if fmt == "nvfp4":
        assert recipe == "modelopt"
        return oracle_nvfp4(w)
    if fmt == "mxfp4":
        return oracle_mxfp4(w, recipe)
    assert recipe == "amax"
    return oracle_fp8(w, per_channel=(fmt == "fp8_channel"))


def oracle_dequant_f64(fmt, k, data, block_scales, tensor_scale, channel_scales, unscaled):
    """The exact real weight as float64 (every product here is exact in float64)."""
    if fmt in ("nvfp4", "mxfp4"):
        el = E2M1_VALUES[unpack_e2m1(data, k)]
        bs = e4m3_values(block_scales) if fmt == "nvfp4" else e8m0_values(block_scales)
        v = el * expand_blocks(bs, BLOCK[fmt], k)
        if fmt == "nvfp4" and not unscaled:
            v = v * np.float64(tensor_scale)
        return v
    v = e4m3_values(data)
    if not unscaled:
        if fmt == "fp8_tensor":
            v = v * np.float64(tensor_scale)
        else:
            v = v * np.asarray(channel_scales, np.float64)[:, None]
    return v


# ------------------------------------------------------------------------------------------------
# Comparison
# ------------------------------------------------------------------------------------------------
def _hexlist(a):
    return "[" + ", ".join(f"0x{int(v):08x}" for v in np.asarray(a).ravel()) + "]"


def _explain(fmt, w32, row, col_elems):
    """Inputs of the block around the first mismatch, as fp32 bit patterns, to reproduce it."""
    k = w32.shape[1]
    b = BLOCK.get(fmt)
    if b is None:
        lo, hi = max(0, col_elems - 4), min(k, col_elems + 4)
        ctx = f"row {row} elements {lo}..{hi - 1}"
    else:
        lo = (col_elems // b) * b
        hi = min(k, lo + b)
        ctx = f"row {row} block {col_elems // b} (elements {lo}..{hi - 1})"
    return (f"{ctx} fp32 bits {_hexlist(f32_bits(w32[row, lo:hi]))}; tensor amax bits "
            f"0x{int(f32_bits(np.abs(w32).max())):08x}; row amax bits 0x{int(f32_bits(np.abs(w32[row]).max())):08x}")


def check_quantize(qmm, fmt, recipe, src, seedtag, what, stride=None, qr=None):
    """Quantizes src with qmm and with the oracle; every output byte and scale bit must agree."""
    src = np.asarray(src)
    n, k = src.shape
    w32 = src.astype(np.float32)
    assert np.all(np.isfinite(w32)), "test bug: non-finite input"
    if qr is None:
        qr = qmm.quantize(fmt, src, recipe, stride=stride)
    tag = f"{fmt}/{recipe} {what} src={src.dtype} N={n} K={k} stride={stride} {seedtag}"
    assert qr.status == QMM_OK, f"qmm_quantize failed: {qmm.describe(qr.status)} [{tag}]"
    exp = oracle_quantize(fmt, recipe, w32)

    if not np.array_equal(qr.data, exp["data"]):
        r, c = np.argwhere(qr.data != exp["data"])[0]
        nbad = int(np.sum(qr.data != exp["data"]))
        el = c * 2 if fmt in ("nvfp4", "mxfp4") else c
        raise AssertionError(
            f"data differs in {nbad} bytes; first at row {r} byte {c}: expected 0x{int(exp['data'][r, c]):02x}, "
            f"got 0x{int(qr.data[r, c]):02x}; {_explain(fmt, w32, r, el)} [{tag}]")
    if exp["block_scales"] is not None:
        if not np.array_equal(qr.block_scales, exp["block_scales"]):
            r, c = np.argwhere(qr.block_scales != exp["block_scales"])[0]
            nbad = int(np.sum(qr.block_scales != exp["block_scales"]))
            raise AssertionError(
                f"block scales differ in {nbad} places; first at row {r} block {c}: expected "
                f"0x{int(exp['block_scales'][r, c]):02x}, got 0x{int(qr.block_scales[r, c]):02x}; "
                f"{_explain(fmt, w32, r, c * BLOCK[fmt])} [{tag}]")
    if exp["tensor_scale"] is not None:
        assert qr.tensor_scale_bits == exp["tensor_scale"], (
            f"tensor scale bits: expected 0x{int(exp['tensor_scale']):08x}, got 0x{qr.tensor_scale_bits:08x}; "
            f"tensor amax bits 0x{int(f32_bits(np.abs(w32).max())):08x} [{tag}]")
    if exp["channel_scales"] is not None:
        eb, ab = f32_bits(exp["channel_scales"]), f32_bits(qr.channel_scales)
        if not np.array_equal(eb, ab):
            r = int(np.flatnonzero(eb != ab)[0])
            raise AssertionError(
                f"channel scale of row {r}: expected 0x{int(eb[r]):08x}, got 0x{int(ab[r]):08x}; row amax "
                f"bits 0x{int(f32_bits(np.abs(w32[r]).max())):08x} [{tag}]")
    return qr, exp


# ------------------------------------------------------------------------------------------------
# Input generators
# ------------------------------------------------------------------------------------------------
_SRC_MAX = {"fp32": float(F32_MAX), "bf16": float(ml_dtypes.finfo(ml_dtypes.bfloat16).max),
            "fp16": 65504.0}
# decimal exponents of "wide dynamic range" (fp16 cannot hold 1e+-30)
_WIDE = {"fp32": (-30.0, 30.0), "bf16": (-30.0, 30.0), "fp16": (-7.5, 4.8)}
_K_CHOICES = [1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 47, 48, 63, 64, 65, 95, 96, 127, 129, 160, 255, 257, 300]


def to_src(x64, src):
    """float64 values -> the source dtype, clipped to its finite range (values stay finite)."""
    m = _SRC_MAX[src]
    x = np.clip(np.asarray(x64, np.float64), -m, m)
    with np.errstate(over="ignore"):
        out = x.astype(np.float32).astype(SRC_DTYPES[src])
    assert np.all(np.isfinite(out.astype(np.float32)))
    return out


def random_finite_bits(rng, shape, src):
    if src == "fp32":
        b = rng.integers(0, 2 ** 32, size=shape, dtype=np.uint64).astype(np.uint32)
        exp_mask, exp_shift, exp_all, view = 0x7F800000, 23, 0xFF, np.float32
        dt = np.uint32
    else:
        b = rng.integers(0, 2 ** 16, size=shape, dtype=np.uint32).astype(np.uint16)
        if src == "bf16":
            exp_mask, exp_shift, exp_all, view = 0x7F80, 7, 0xFF, ml_dtypes.bfloat16
        else:
            exp_mask, exp_shift, exp_all, view = 0x7C00, 10, 0x1F, np.float16
        dt = np.uint16
    bad = ((b & exp_mask) >> exp_shift) == exp_all
    b[bad] &= dt(~exp_mask & (0xFFFFFFFF if dt == np.uint32 else 0xFFFF))  # non-finite -> exponent 0
    return b.view(view)


def gen_matrix(rng, dist, n, k, src):
    lo, hi = _WIDE[src]
    if dist == "normal":
        x = rng.standard_normal((n, k)) * 10.0 ** rng.uniform(-3, 3)
    elif dist == "heavy":
        x = rng.standard_t(1.3, size=(n, k)) * 10.0 ** rng.uniform(-2, 2)
    elif dist == "wide_rows":
        x = rng.standard_normal((n, k)) * 10.0 ** rng.uniform(lo, hi, size=(n, 1))
    elif dist == "wide_elems":
        x = np.where(rng.random((n, k)) < 0.5, -1.0, 1.0) * 10.0 ** rng.uniform(lo, hi, size=(n, k))
    elif dist == "bits":
        return random_finite_bits(rng, (n, k), src)
    elif dist == "sparse":
        # zeros, -0.0, all-zero blocks and rows, tiny and huge values mixed with normal ones
        x = rng.standard_normal((n, k))
        x[rng.random((n, k)) < 0.3] = 0.0
        x[rng.random((n, k)) < 0.1] = -0.0
        for b in range(0, k, 16):
            if rng.random() < 0.3:
                x[:, b:b + 16] = 0.0
        x[rng.random((n, k)) < 0.05] *= 10.0 ** rng.uniform(lo, hi)
        if n > 1 and rng.random() < 0.5:
            x[rng.integers(n)] = -0.0
    else:
        raise ValueError(dist)
    return to_src(x, src)


def random_shape(rng, max_n=64):
    n = int(rng.integers(1, max_n + 1))
    k = int(rng.choice(_K_CHOICES)) if rng.random() < 0.6 else int(rng.integers(1, 301))
    return n, k


# ------------------------------------------------------------------------------------------------
# Size query
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", FORMATS)
def test_size_query(qmm, rng, seedtag, fmt):
    for _ in range(20):
        n, k = int(rng.integers(1, 1000)), int(rng.integers(1, 5000))
        s = qmm.size_query(fmt, n, k)
        row = -(-k // 2) if fmt in ("nvfp4", "mxfp4") else k
        spr = -(-k // BLOCK[fmt]) if fmt in BLOCK else 0
        got = (s.row_bytes, s.data_bytes, s.scales_per_row, s.block_scale_bytes, s.channel_scale_count)
        want = (row, n * row, spr, n * spr, n if fmt == "fp8_channel" else 0)
        assert got == want, f"size query {fmt} n={n} k={k}: got {got}, want {want} {seedtag}"


# ------------------------------------------------------------------------------------------------
# Quantization: random tensors
# ------------------------------------------------------------------------------------------------
DISTS = ["normal", "heavy", "wide_rows", "wide_elems", "bits", "sparse"]


@pytest.mark.parametrize("src", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("dist", DISTS)
@pytest.mark.parametrize("fmt,recipe", RECIPES, ids=RECIPE_IDS)
def test_quantize_random(qmm, rng, seedtag, fmt, recipe, dist, src):
    for _ in range(8):
        n, k = random_shape(rng)
        check_quantize(qmm, fmt, recipe, gen_matrix(rng, dist, n, k, src), seedtag, dist)


@pytest.mark.parametrize("fmt,recipe", RECIPES, ids=RECIPE_IDS)
def test_quantize_every_partial_block_k(qmm, rng, seedtag, fmt, recipe):
    ks = [1, 2, 3, 5, 7, 9, 15, 16, 17, 31, 32, 33, 35, 47, 48, 49, 63, 64, 65, 95, 97, 127, 129, 191, 255,
          299, 300]
    for k in ks:
        n = int(rng.integers(1, 9))
        src = rng.choice(["fp32", "bf16", "fp16"])
        check_quantize(qmm, fmt, recipe, gen_matrix(rng, rng.choice(DISTS), n, k, src), seedtag, f"K={k}")


@pytest.mark.parametrize("fmt", FORMATS)
def test_default_recipe_is_the_formats_own(qmm, rng, seedtag, fmt):
    n, k = random_shape(rng)
    w = gen_matrix(rng, "normal", n, k, "fp32")
    a = qmm.quantize(fmt, w, "default")
    b = qmm.quantize(fmt, w, DEFAULT_RECIPE[fmt])
    assert a.status == QMM_OK and b.status == QMM_OK, f"{qmm.describe(a.status)} {seedtag}"
    assert np.array_equal(a.data, b.data), f"{fmt}: default recipe data differs from {DEFAULT_RECIPE[fmt]} {seedtag}"
    if a.block_scales is not None:
        assert np.array_equal(a.block_scales, b.block_scales), seedtag
    if a.channel_scales is not None:
        assert np.array_equal(f32_bits(a.channel_scales), f32_bits(b.channel_scales)), seedtag
    assert a.tensor_scale_bits == b.tensor_scale_bits, seedtag
    check_quantize(qmm, fmt, DEFAULT_RECIPE[fmt], w, seedtag, "default recipe", qr=a)


@pytest.mark.parametrize("fmt,wrong", [("nvfp4", "floor"), ("nvfp4", "amax"), ("mxfp4", "modelopt"),
                                       ("mxfp4", "amax"), ("fp8_tensor", "rceil"), ("fp8_channel", "modelopt")])
def test_recipe_of_another_format_is_rejected(qmm, rng, seedtag, fmt, wrong):
    w = gen_matrix(rng, "normal", 3, 40, "fp32")
    qr = qmm.quantize(fmt, w, wrong, poison=0x5A)
    assert qr.status == QMM_ERR_UNSUPPORTED, f"{fmt} with recipe {wrong}: {qmm.describe(qr.status)} {seedtag}"
    assert np.all(qr.data == 0x5A), f"data written on failure {seedtag}"
    if qr.block_scales is not None:
        assert np.all(qr.block_scales == 0x5A ^ 0xFF), f"block scales written on failure {seedtag}"


# ------------------------------------------------------------------------------------------------
# Quantization: adversarial tensors
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt,recipe", RECIPES, ids=RECIPE_IDS)
def test_quantize_all_zero(qmm, rng, seedtag, fmt, recipe):
    for src in ("fp32", "bf16", "fp16"):
        n, k = random_shape(rng, 16)
        z = np.zeros((n, k), np.float32)
        check_quantize(qmm, fmt, recipe, z.astype(SRC_DTYPES[src]), seedtag, "all +0")
        nz = np.where(rng.random((n, k)) < 0.5, np.float32(-0.0), np.float32(0.0)).astype(np.float32)
        qr, _ = check_quantize(qmm, fmt, recipe, nz.astype(SRC_DTYPES[src]), seedtag, "all +-0")
        if fmt == "nvfp4":  # modelopt: sign from x < 0, so -0.0 is +0; the zero block scale is 1.0
            assert np.all(qr.data == 0) and np.all(qr.block_scales == 0x38), seedtag
        if fmt == "mxfp4":  # smallest scale for an all-zero block
            assert np.all(qr.block_scales == 0), seedtag


@pytest.mark.parametrize("fmt,recipe", RECIPES, ids=RECIPE_IDS)
def test_quantize_zero_blocks_and_negative_zero(qmm, rng, seedtag, fmt, recipe):
    for _ in range(4):
        n, k = random_shape(rng, 32)
        x = rng.standard_normal((n, k)).astype(np.float32)
        b = BLOCK.get(fmt, 16)
        for j in range(0, k, b):
            if rng.random() < 0.4:
                x[:, j:j + b] = 0.0
        x[rng.random((n, k)) < 0.25] = np.float32(-0.0)
        if n > 2:
            x[rng.integers(n)] = 0.0
            x[rng.integers(n)] = np.float32(-0.0)
        check_quantize(qmm, fmt, recipe, x, seedtag, "zero blocks, -0.0")


def _extreme_matrix(rng, n, k, src):
    if src == "fp32":
        specials = np.array([F32_MAX, -F32_MAX, F32_TINY, -F32_TINY, F32_SUB_MIN, -F32_SUB_MIN,
                             bits_f32(0x007FFFFF), bits_f32(0x807FFFFF), bits_f32(0x00000003), 0.0, -0.0,
                             bits_f32(0x7F7FFFFE), 1.0, -1.0], np.float32)
        sub = bits_f32(rng.integers(1, 1 << 23, size=(n, k), dtype=np.uint64).astype(np.uint32))
        base = np.where(rng.random((n, k)) < 0.5, sub, rng.standard_normal((n, k)).astype(np.float32))
    else:
        dt = SRC_DTYPES[src]
        fi = ml_dtypes.finfo(dt)
        sm = np.array([fi.smallest_subnormal], dt).astype(np.float32)[0]
        specials = np.array([fi.max, -fi.max, fi.smallest_normal, -fi.smallest_normal, sm, -sm, 0.0, -0.0,
                             1.0, -1.0], np.float32)
        base = random_finite_bits(rng, (n, k), src).astype(np.float32)
    x = base.astype(np.float32)
    pick = rng.random((n, k)) < 0.3
    x[pick] = rng.choice(specials, size=int(pick.sum()))
    return x.astype(SRC_DTYPES[src])


@pytest.mark.parametrize("src", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("fmt,recipe", RECIPES, ids=RECIPE_IDS)
def test_quantize_extreme_values(qmm, rng, seedtag, fmt, recipe, src):
    for _ in range(3):
        n, k = random_shape(rng, 24)
        check_quantize(qmm, fmt, recipe, _extreme_matrix(rng, n, k, src), seedtag, "extreme values")
    # a tensor whose only nonzero value is the largest finite one (of either sign)
    n, k = random_shape(rng, 8)
    x = np.zeros((n, k), np.float32)
    x[rng.integers(n), rng.integers(k)] = np.float32(_SRC_MAX[src]) * rng.choice([-1, 1])
    check_quantize(qmm, fmt, recipe, x.astype(SRC_DTYPES[src]), seedtag, "single max value")


@pytest.mark.parametrize("fmt,recipe", RECIPES, ids=RECIPE_IDS)
def test_quantize_tiny_tensors(qmm, rng, seedtag, fmt, recipe):
    """Tensors of only fp32-subnormal or barely normal values: s2 / s underflow to 0 or nearly."""
    for top_bits in (0x00000001, 0x00000007, 0x00000400, 0x00000A7F, 0x00000A80, 0x00001000, 0x00100000,
                     0x00800000, 0x02000000, 0x04000000, 0x06000000):
        n, k = random_shape(rng, 8)
        hi = int(top_bits)
        bits = rng.integers(0, hi + 1, size=(n, k), dtype=np.uint64).astype(np.uint32)
        bits[rng.random((n, k)) < 0.5] >>= np.uint32(rng.integers(0, 12))
        x = bits_f32(bits | (rng.integers(0, 2, size=(n, k), dtype=np.uint64).astype(np.uint32) << np.uint32(31)))
        x.flat[rng.integers(x.size)] = bits_f32(hi)
        check_quantize(qmm, fmt, recipe, x, seedtag, f"tiny values up to bits 0x{hi:08x}")


def _nudge(rng, x):
    """Moves about a fifth of the nonzero values one fp32 ulp up or down (zeros stay: a zero nudged to
    +-2^-149 is another test's subject)."""
    nudge = rng.random(x.shape)
    nz = x != 0
    x = np.where(nz & (nudge < 0.1), np.nextafter(x, np.float32(np.inf)), x)
    x = np.where(nz & (nudge > 0.9), np.nextafter(x, np.float32(-np.inf)), x)
    return x.astype(np.float32)


def _e4m3_positive_values():
    return np.arange(1, 0x7F, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)  # 2^-9 .. 448


def test_nvfp4_block_scale_ties(qmm, rng, seedtag):
    """Blocks whose amax_b / (6 s2) is exactly an E4M3 midpoint, or one fp32 ulp of amax_b off it, or
    below the 2^-9 clamp; s2 is a power of two so the fp32 arithmetic is exact."""
    v = _e4m3_positive_values()
    mids = (v[:-1] + v[1:]) / 2.0
    sbs = np.concatenate([mids, [2.0 ** -10, 2.0 ** -9 * 0.75, 2.0 ** -9 * 1.5, 2.0 ** -12, 447.0, 448.0]])
    for _ in range(3):
        j = int(rng.integers(-100, 100))
        s2 = 2.0 ** j
        amax_b = (sbs * 6.0 * s2).astype(np.float32)
        assert np.array_equal(amax_b.astype(np.float64), sbs * 6.0 * s2)
        amax_b = np.concatenate([amax_b, np.nextafter(amax_b, np.float32(np.inf)),
                                 np.nextafter(amax_b, np.float32(0))])
        amax_b = np.minimum(amax_b, np.float32(2688.0 * s2))
        nblk = amax_b.size
        kb = int(rng.integers(1, 9))               # blocks per row
        k = 16 * kb - int(rng.integers(0, 16))     # maybe a partial last block
        n = -(-nblk // kb) + 1
        x = np.zeros((n, kb * 16), np.float32)
        blocks = x.reshape(n, kb, 16)
        order = rng.permutation(nblk)
        for idx, t in enumerate(order):
            r, c = divmod(idx + kb, kb)  # row 0 block 0 holds the tensor amax
            if r >= n:
                break
            width = 16 if (c < kb - 1) else 16 - (kb * 16 - k)
            a = amax_b[t]
            blocks[r, c, :width] = (rng.uniform(-1, 1, size=width) * a).astype(np.float32)
            blocks[r, c, rng.integers(width)] = a * rng.choice([-1, 1])
        blocks[0, 0, 0] = np.float32(2688.0 * s2)
        check_quantize(qmm, "nvfp4", "modelopt", x[:, :k], seedtag, f"E4M3 scale ties, s2=2^{j}")


def test_nvfp4_element_ties(qmm, rng, seedtag):
    """Elements exactly at E2M1 midpoints (and on the points, and one fp32 ulp off) after scaling."""
    v = _e4m3_positive_values()
    pts = np.concatenate([E2M1_MIDPOINTS, E2M1_POINTS])
    for _ in range(4):
        j = int(rng.integers(-60, 60))
        s2 = 2.0 ** j
        n, kb = int(rng.integers(2, 33)), int(rng.integers(1, 12))
        sb = rng.choice(v, size=(n, kb))
        sb[0, 0] = 448.0
        scale = (sb * s2)[:, :, None]
        vals = rng.choice(pts, size=(n, kb, 16)) * rng.choice([-1.0, 1.0], size=(n, kb, 16))
        x = (vals * scale).astype(np.float32)
        assert np.array_equal(x.astype(np.float64), vals * scale), "ties must be exact fp32 values"
        x = _nudge(rng, x)
        x[:, :, 0] = (6.0 * scale[:, :, 0]).astype(np.float32)  # pins each block's amax (sb exact)
        x = x.reshape(n, kb * 16)
        k = kb * 16 - int(rng.integers(0, 16))
        if k < 16 * (kb - 1) + 1:
            k = kb * 16
        check_quantize(qmm, "nvfp4", "modelopt", x[:, :k], seedtag, f"E2M1 ties, s2=2^{j}")


@pytest.mark.parametrize("rule", ["floor", "rceil"])
def test_mxfp4_scale_boundaries(qmm, rng, seedtag, rule):
    """Block amax at and next to powers of two and 6 * 2^p (where floor / ceil of log2 jump), down to
    the -127 clamp."""
    for _ in range(3):
        n, kb = int(rng.integers(4, 40)), int(rng.integers(1, 6))
        p = rng.integers(-150, 126, size=(n, kb)).astype(np.float64)
        base = rng.choice([1.0, 6.0, 3.0, 1.5, 7.0, 4.0, 5.0, 6.5], size=(n, kb))
        a = (np.ldexp(base, p.astype(np.int64)))
        a = np.clip(a, float(F32_SUB_MIN), float(F32_MAX)).astype(np.float32)
        side = rng.integers(-1, 2, size=(n, kb))
        a = np.where(side > 0, np.nextafter(a, np.float32(np.inf)), np.where(side < 0, np.nextafter(a, np.float32(0)), a))
        x = (rng.uniform(-1, 1, size=(n, kb, 32)) * a[:, :, None].astype(np.float64)).astype(np.float32)
        x[:, :, 0] = a * rng.choice([-1, 1], size=(n, kb)).astype(np.float32)
        x = x.reshape(n, kb * 32)
        k = kb * 32 - int(rng.integers(0, 31))
        check_quantize(qmm, "mxfp4", rule, x[:, :k], seedtag, "scale boundaries")


@pytest.mark.parametrize("rule", ["floor", "rceil"])
def test_mxfp4_element_ties(qmm, rng, seedtag, rule):
    """Block amax 6 * 2^e gives scale 2^e under both rules; elements at E2M1 midpoints times 2^e,
    including e below the -127 clamp (the scaled values then tie at other points)."""
    pts = np.concatenate([E2M1_MIDPOINTS, E2M1_POINTS])
    for _ in range(3):
        n, kb = int(rng.integers(2, 33)), int(rng.integers(1, 6))
        e = rng.integers(-135, 125, size=(n, kb))
        scale = np.ldexp(1.0, e)[:, :, None]
        vals = rng.choice(pts, size=(n, kb, 32)) * rng.choice([-1.0, 1.0], size=(n, kb, 32))
        x64 = vals * scale
        x = x64.astype(np.float32)
        x = _nudge(rng, x)
        x[:, :, 0] = (6.0 * scale[:, :, 0]).astype(np.float32)
        x = x.reshape(n, kb * 32)
        k = kb * 32 - int(rng.integers(0, 31))
        check_quantize(qmm, "mxfp4", rule, x[:, :k], seedtag, "E2M1 ties")


@pytest.mark.parametrize("fmt", ["fp8_tensor", "fp8_channel"])
def test_fp8_element_ties(qmm, rng, seedtag, fmt):
    """amax = 448 * 2^j makes s = 2^j exact; elements at every E4M3 midpoint times s, and one ulp off."""
    v = _e4m3_positive_values()
    mids = np.concatenate([(v[:-1] + v[1:]) / 2.0, [2.0 ** -10, 2.0 ** -11, 3 * 2.0 ** -11], v])
    for _ in range(3):
        n, k = int(rng.integers(1, 40)), int(rng.integers(8, 300))
        j = rng.integers(-100, 100, size=(n, 1)) if fmt == "fp8_channel" else np.full((n, 1), rng.integers(-100, 100))
        s = np.ldexp(1.0, j)
        x = (rng.choice(mids, size=(n, k)) * rng.choice([-1.0, 1.0], size=(n, k)) * s).astype(np.float32)
        x = _nudge(rng, x)
        x[:, 0] = (448.0 * s[:, 0]).astype(np.float32)
        check_quantize(qmm, fmt, "amax", x, seedtag, "E4M3 ties")


@pytest.mark.parametrize("src", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("fmt,recipe", RECIPES, ids=RECIPE_IDS)
def test_quantize_row_stride(qmm, rng, seedtag, fmt, recipe, src):
    """src_stride > K: the elements past K in each row are not part of the matrix (here NaN / inf)."""
    for pad in (np.nan, np.inf, -np.inf):
        n, k = random_shape(rng, 32)
        stride = k + int(rng.integers(1, 40))
        w = gen_matrix(rng, rng.choice(DISTS), n, k, src)
        qr, _ = check_quantize(qmm, fmt, recipe, w, seedtag, f"stride with {pad} padding", stride=stride)
        dense = qmm.quantize(fmt, w, recipe)
        assert np.array_equal(qr.data, dense.data), f"stride changed the data {seedtag}"


# ------------------------------------------------------------------------------------------------
# Non-finite input
# ------------------------------------------------------------------------------------------------
_NONFINITE = {
    "fp32": [0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFBFFFFF, 0x7F800000, 0xFF800000],
    "bf16": [0x7FC0, 0xFFC0, 0x7F81, 0x7F80, 0xFF80],
    "fp16": [0x7E00, 0xFE00, 0x7C01, 0x7C00, 0xFC00],
}


@pytest.mark.parametrize("src", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("fmt,recipe", RECIPES, ids=RECIPE_IDS)
def test_quantize_rejects_non_finite(qmm, rng, seedtag, fmt, recipe, src):
    """NaN or an infinity anywhere in the matrix: QMM_ERR_NON_FINITE, and every output buffer, the
    tensor scale and the descriptor stay exactly as they were."""
    for bad in _NONFINITE[src]:
        n, k = random_shape(rng, 24)
        w = gen_matrix(rng, "normal", n, k, src)
        raw = w.view(np.uint32 if src == "fp32" else np.uint16)
        where = str(rng.choice(["first", "last", "random", "many"]))
        if where == "first":
            raw[0, 0] = bad
        elif where == "last":
            raw[-1, -1] = bad
        elif where == "random":
            raw[rng.integers(n), rng.integers(k)] = bad
        else:
            raw[rng.random((n, k)) < 0.2] = bad
            raw[rng.integers(n), rng.integers(k)] = bad
        poison = int(rng.integers(0, 256))
        ts_bits = int(rng.integers(0, 2 ** 32))    # any bit pattern; it must come back unchanged
        stride = None if rng.random() < 0.5 else k + int(rng.integers(1, 9))
        qr = qmm.quantize(fmt, w, recipe, stride=stride, poison=poison, tensor_scale_bits=ts_bits,
                          channel_poison=-3.5)
        tag = f"{fmt}/{recipe} src={src} bad=0x{bad:x} at {where} N={n} K={k} stride={stride} {seedtag}"
        assert qr.status == QMM_ERR_NON_FINITE, f"expected QMM_ERR_NON_FINITE (6), got {qmm.describe(qr.status)} [{tag}]"
        assert qr.error != "", f"qmm_last_error() is empty after a failure [{tag}]"
        assert np.all(qr.data == poison), f"data written on failure [{tag}]"
        if qr.block_scales is not None:
            assert np.all(qr.block_scales == poison ^ 0xFF), f"block scales written on failure [{tag}]"
        if qr.channel_scales is not None:
            assert np.all(f32_bits(qr.channel_scales) == f32_bits(np.float32(-3.5))), \
                f"channel scales written on failure [{tag}]"
        assert qr.tensor_scale_bits == ts_bits, \
            f"tensor_scale written on failure: 0x{ts_bits:08x} -> 0x{qr.tensor_scale_bits:08x} [{tag}]"
        wt = qr.weight
        assert (wt.n, wt.k, wt.format, wt.scale_layout, bool(wt.prepared)) == (n, k, FORMAT_IDS[fmt], 0, False), \
            f"descriptor changed on failure [{tag}]"


# ------------------------------------------------------------------------------------------------
# Dequantization
# ------------------------------------------------------------------------------------------------
def check_dequantize(qmm, qr, seedtag, what, stride_extra=0, rng=None):
    fmt, n, k = qr.fmt, qr.n, qr.k
    ts = qr.tensor_scale
    for dst in ("fp32", "bf16"):
        for unscaled in (False, True):
            stride = k + stride_extra
            st, out = qmm.dequantize(qr, dst, DEQUANT_UNSCALED if unscaled else 0, stride=stride)
            tag = f"{fmt} {what} dst={dst} unscaled={unscaled} N={n} K={k} stride={stride} {seedtag}"
            assert st == QMM_OK, f"qmm_dequantize failed: {qmm.describe(st)} [{tag}]"
            v = oracle_dequant_f64(fmt, k, qr.data, qr.block_scales, ts, qr.channel_scales, unscaled)
            if dst == "fp32":
                exp = f64_to_f32_bits(v)
                got = out.view(np.uint32)
                poison = 0xDEADBEEF
            else:
                exp = f64_to_bf16_bits(v)
                got = out
                poison = 0xBEEF
            if stride > k:
                assert np.all(got[:, k:] == poison), f"dequantize wrote past K in a row's stride gap [{tag}]"
            got = got[:, :k]
            if not np.array_equal(got, exp):
                r, c = np.argwhere(got != exp)[0]
                nbad = int(np.sum(got != exp))
                b = BLOCK.get(fmt)
                if fmt in ("nvfp4", "mxfp4"):
                    code = int(unpack_e2m1(qr.data, k)[r, c])
                    parts = f"E2M1 code 0x{code:x}, block scale code 0x{int(qr.block_scales[r, c // b]):02x}"
                else:
                    parts = f"E4M3 code 0x{int(qr.data[r, c]):02x}"
                if not unscaled:
                    if fmt in ("nvfp4", "fp8_tensor"):
                        parts += f", tensor scale bits 0x{qr.tensor_scale_bits:08x}"
                    elif fmt == "fp8_channel":
                        parts += f", channel scale bits 0x{int(f32_bits(qr.channel_scales[r])):08x}"
                raise AssertionError(
                    f"dequantized value differs in {nbad} places; first at ({r}, {c}): {parts}: exact "
                    f"{v[r, c]!r}, expected 0x{int(exp[r, c]):x}, got 0x{int(got[r, c]):x} [{tag}]")


@pytest.mark.parametrize("fmt,recipe", RECIPES, ids=RECIPE_IDS)
def test_dequantize_quantized(qmm, rng, seedtag, fmt, recipe):
    for dist in DISTS:
        n, k = random_shape(rng, 32)
        src = rng.choice(["fp32", "bf16", "fp16"])
        qr, _ = check_quantize(qmm, fmt, recipe, gen_matrix(rng, dist, n, k, src), seedtag, dist)
        if fmt in ("mxfp4", "fp8_channel"):
            # the tensor scale is ignored by these formats: a stray value must not change anything
            set_weight_tensor_scale_bits(qr.weight, 0x40400000)  # 3.0
        check_dequantize(qmm, qr, seedtag, f"quantized {dist}", stride_extra=int(rng.integers(0, 3)) * 7)


def _craft_weight(qmm, rng, fmt, n, k):
    """A weight with random (valid, non-NaN) codes and scales, filled in directly."""
    qr = qmm.quantize(fmt, np.zeros((n, k), np.float32), DEFAULT_RECIPE[fmt])
    assert qr.status == QMM_OK
    if fmt in ("nvfp4", "mxfp4"):
        codes = rng.integers(0, 16, size=(n, k), dtype=np.uint8)
        qr.data[...] = pack_e2m1(codes)
        spr = qr.block_scales.shape[1]
        if fmt == "nvfp4":
            sc = rng.integers(0, 0x7F, size=(n, spr), dtype=np.uint8)     # 0 .. 448
            neg = rng.random((n, spr)) < 0.1
            sc[neg] |= 0x80                                              # a few negative scales
        else:
            sc = rng.integers(0, 255, size=(n, spr), dtype=np.uint8)     # 2^-127 .. 2^127
        qr.block_scales[...] = sc
    else:
        c = rng.integers(0, 256, size=(n, k), dtype=np.uint8)
        c[(c & 0x7F) == 0x7F] &= 0xFE                                    # no NaN codes
        qr.data[...] = c

    def rnd_scale(size):
        e = np.where(rng.random(size) < 0.5, rng.uniform(-20, 20, size), rng.uniform(-149, 128, size))
        s = (np.exp2(e) * np.where(rng.random(size) < 0.1, -1.0, 1.0))
        return np.clip(s, -float(F32_MAX), float(F32_MAX)).astype(np.float32)

    if fmt == "fp8_channel":
        qr.channel_scales[...] = rnd_scale(n)
    else:
        set_weight_tensor_scale_bits(qr.weight, int(f32_bits(rnd_scale(1))[0]))
    return qr


@pytest.mark.parametrize("fmt", FORMATS)
def test_dequantize_crafted_weights(qmm, rng, seedtag, fmt):
    for _ in range(12):
        n, k = random_shape(rng, 64)
        qr = _craft_weight(qmm, rng, fmt, n, k)
        assert qmm.lib.qmm_weight_validate(ctypes.byref(qr.weight)) == QMM_OK, seedtag
        check_dequantize(qmm, qr, seedtag, "crafted", stride_extra=int(rng.integers(0, 5)))


def _double_rounding_scales(rng, products, want):
    """fp32 scales t for which p * t rounded once to bf16 differs from rounding it to fp32 first: t is
    taken next to T / p for bf16 midpoints T, so that p * t lands within half an fp32 ulp of a tie."""
    found = []
    for p in products:
        m = rng.integers(128, 256, size=4000).astype(np.float64)
        ties = (m + 0.5) / 128.0 * np.ldexp(1.0, rng.integers(-3, 4, size=m.size))
        t0 = (ties / p).astype(np.float32)
        cand = np.concatenate([t0, np.nextafter(t0, np.float32(np.inf)), np.nextafter(t0, np.float32(0))])
        exact = p * cand.astype(np.float64)
        once = f64_to_bf16_bits(exact)
        twice = f64_to_bf16_bits(exact.astype(np.float32).astype(np.float64))
        hit = np.unique(cand[once != twice])
        found.extend((float(p), float(t)) for t in rng.permutation(hit)[:want])
    return found


def test_dequantize_bf16_rounds_once(qmm, rng, seedtag):
    """Scaled bf16 output must be the exact product rounded once: pick tensor / channel scales for which
    rounding through fp32 first would give a different bf16."""
    # FP8 per channel: row r holds one E4M3 value v and channel scale t_r with v * t_r a double-rounding case
    e4m3_vals = np.array([1.125, 1.375, 1.625, 1.875, 1.75, 1.25, 1.5])
    cases = _double_rounding_scales(rng, e4m3_vals, 6)
    assert len(cases) >= 20, f"search found too few double-rounding cases {seedtag}"
    n, k = len(cases), 17
    qr = qmm.quantize("fp8_channel", np.zeros((n, k), np.float32), "amax")
    for r, (p, t) in enumerate(cases):
        code = np.array([p], np.float32).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)[0]
        qr.data[r, :] = code
        qr.data[r, rng.integers(k)] = code | 0x80
        qr.channel_scales[r] = np.float32(t) * np.float32(2.0 ** int(rng.integers(-30, 30)))
    check_dequantize(qmm, qr, seedtag, "fp8_channel double-rounding scales")
    # NVFP4 / FP8 per tensor: one scale per tensor, so one weight per case
    el_bs = np.array([1.5 * 1.125, 3.0 * 1.375, 1.5 * 1.875, 6.0 * 1.625, 0.5 * 1.75 * 1.5])
    cases = _double_rounding_scales(rng, el_bs, 2)
    for p, t in cases[:8]:
        for fmt in ("nvfp4", "fp8_tensor"):
            n, k = int(rng.integers(1, 5)), int(rng.integers(16, 70))
            qr = qmm.quantize(fmt, np.zeros((n, k), np.float32), DEFAULT_RECIPE[fmt])
            if fmt == "nvfp4":
                # p = e2m1 * e4m3 with e2m1 in {0.5, 1.5, 3, 6}
                for el in (1.5, 3.0, 6.0, 0.5):
                    bs = p / el
                    bsc = np.array([bs], np.float32).astype(ml_dtypes.float8_e4m3fn)
                    if float(bsc.astype(np.float64)[0]) == bs:
                        break
                else:
                    continue
                code = int(np.array([el], np.float32).astype(ml_dtypes.float4_e2m1fn).view(np.uint8)[0])
                codes = np.full((n, k), code, np.uint8)
                codes[rng.random((n, k)) < 0.3] |= 0x8
                qr.data[...] = pack_e2m1(codes)
                qr.block_scales[...] = bsc.view(np.uint8)[0]
            else:
                bsc = np.array([p], np.float32).astype(ml_dtypes.float8_e4m3fn)
                if float(bsc.astype(np.float64)[0]) != p:
                    continue
                qr.data[...] = bsc.view(np.uint8)[0]
            set_weight_tensor_scale_bits(qr.weight, int(f32_bits(np.float32(t))))
            check_dequantize(qmm, qr, seedtag, f"{fmt} double-rounding tensor scale")


def _assert_unscaled_exact(qmm, qr, seedtag, what):
    v = oracle_dequant_f64(qr.fmt, qr.k, qr.data, qr.block_scales, None, qr.channel_scales, True)
    for dst in ("fp32", "bf16"):
        st, out = qmm.dequantize(qr, dst, DEQUANT_UNSCALED)
        assert st == QMM_OK, f"{qmm.describe(st)} {seedtag}"
        back = out.astype(np.float64) if dst == "fp32" else out.view(ml_dtypes.bfloat16).astype(np.float64)
        if not np.array_equal(back, v):
            r, c = np.argwhere(back != v)[0]
            raise AssertionError(f"{what}: unscaled {dst} value at ({r}, {c}) is {back[r, c]!r}, the exact "
                                 f"product is {v[r, c]!r} {seedtag}")


def test_dequantize_unscaled_values_are_exact(qmm, rng, seedtag):
    """qmm.h: without the tensor / channel scale the dequantized values of quantized weights are exact
    in fp32 and bf16 (here for weights up to 1e30; see the rceil test below for the top of the range)."""
    for fmt, recipe in RECIPES:
        for dist in ("normal", "heavy", "wide_rows", "wide_elems", "sparse"):
            n, k = random_shape(rng, 16)
            qr = qmm.quantize(fmt, gen_matrix(rng, dist, n, k, "fp32"), recipe)
            assert qr.status == QMM_OK, seedtag
            _assert_unscaled_exact(qmm, qr, seedtag, f"{fmt}/{recipe} {dist}")


def test_mxfp4_rceil_top_of_range_overflows_to_infinity(qmm, seedtag):
    """qmm.h: unscaled dequantized values are exact where they lie in the type's range; MXFP4 values past
    2^128 become infinities. rceil gives a block with amax = FLT_MAX the scale 2^ceil(log2(FLT_MAX / 6))
    = 2^126, and FLT_MAX * 2^-126 = 3.9999998 rounds to the E2M1 value 4, whose real weight 4 * 2^126 =
    2^128 is past fp32 and bf16: it must come out as +inf (the correctly rounded value), the 1.0 next to
    it exactly."""
    w = bits_f32(np.array([[0x7F7FFFFF, 0x3F800000]], np.uint32))  # FLT_MAX, 1.0
    qr, _ = check_quantize(qmm, "mxfp4", "rceil", w, seedtag, "FLT_MAX")
    assert int(qr.block_scales[0, 0]) == 126 + 127 and int(qr.data[0, 0]) & 0xF == 0x6, seedtag
    for dst in ("fp32", "bf16"):
        st, out = qmm.dequantize(qr, dst, DEQUANT_UNSCALED)
        assert st == QMM_OK, f"{qmm.describe(st)} {seedtag}"
        back = out.astype(np.float64) if dst == "fp32" else out.view(ml_dtypes.bfloat16).astype(np.float64)
        assert back[0, 0] == np.inf, f"{dst}: 4 * 2^126 must overflow to +inf, got {back[0, 0]!r} {seedtag}"
        v = oracle_dequant_f64(qr.fmt, qr.k, qr.data, qr.block_scales, None, qr.channel_scales, True)
        assert back[0, 1] == v[0, 1], f"{dst}: the in-range value must be exact {seedtag}"


def test_nvfp4_sign_follows_the_scaled_value(qmm, seedtag):
    """modelopt's _cast_fp4 takes the sign bit from the scaled value q = x / scale (sign_bit = q < 0). A
    negative x so small against the block scale that q underflows to -0.0 therefore encodes as +0 (code
    0), not -0 (code 8). Minimal case: W = [[FLT_MAX, -2^-149]] (one 16-block, K = 2): s2 = FLT_MAX / 2688,
    block scale 0x7E (448), q = -2^-149 / (448 * s2) = -0.0 -> byte 0x07 (FLT_MAX -> 6 in the low nibble,
    +0 in the high one)."""
    cases = [
        [0x7F7FFFFF, 0x80000001],                # FLT_MAX, -2^-149
        [0x6D07B9B5, 0x99DB54A5],                # 2.6e27, -2.3e-23: block scale 0x7E, q underflows
        [0x7F000000, 0x3F800000, 0x80000005],    # 2^127, 1.0, -5 * 2^-149
    ]
    for bits in cases:
        w = bits_f32(np.array([bits], np.uint32))
        check_quantize(qmm, "nvfp4", "modelopt", w, seedtag, f"sign of an underflowing quotient {bits}")


def test_nvfp4_tiny_scale_follows_fp32_arithmetic(qmm, seedtag):
    """Corners of the fp32 arithmetic that the oracle states literally: s2 = amax / 2688 is 0 (qmm then
    uses s2 = 1, so sb = amax_b / 6 clamps to 2^-9: code 0x01), and a block scale sb * s2 that underflows
    to 0 (x / 0: +-inf -> +-6, and 0 / 0 = NaN -> 6, as searchsorted does)."""
    w = bits_f32(np.array([[0x00000007, 0x80000003, 0x00000000]], np.uint32))      # amax 7 * 2^-149: s2 == 0
    qr, _ = check_quantize(qmm, "nvfp4", "modelopt", w, seedtag, "s2 == 0")
    assert qr.tensor_scale_bits == 0x3F800000, seedtag
    w = np.zeros((1, 32), np.float32)
    w.view(np.uint32)[0, 0] = 2688               # amax 2688 * 2^-149: s2 = 2^-149
    w.view(np.uint32)[0, 16] = 3                 # block 1: sb = 0.5, 0.5 * 2^-149 rounds to 0
    w.view(np.uint32)[0, 17] = 0x80000002
    w[0, 18] = np.float32(-0.0)
    check_quantize(qmm, "nvfp4", "modelopt", w, seedtag, "block scale underflows")


def test_dequantize_rejects_bad_arguments(qmm, rng, seedtag):
    n, k = random_shape(rng, 8)
    qr = qmm.quantize("nvfp4", gen_matrix(rng, "normal", n, k, "fp32"), "modelopt")
    assert qr.status == QMM_OK, seedtag
    st, out = qmm.dequantize(qr, "fp32", flags=2)
    assert st == QMM_ERR_INVALID_ARGUMENT, f"unknown flag: {qmm.describe(st)} {seedtag}"
    assert np.all(out.view(np.uint32) == 0xDEADBEEF), f"output written on failure {seedtag}"
    out16 = np.full((n, k), 0x1234, np.uint16)
    st = qmm.lib.qmm_dequantize(ctypes.byref(qr.weight), 0, DTYPE_IDS["fp16"], out16.ctypes.data_as(ctypes.c_void_p), k)
    assert st == QMM_ERR_UNSUPPORTED, f"fp16 output: {qmm.describe(st)} {seedtag}"
    assert np.all(out16 == 0x1234), f"output written on failure {seedtag}"
