"""qmm's scalar converters against ml_dtypes / numpy.

Decoders: every code of every format. Encoders: random fp32 bit patterns over the whole range, random
values inside each target format's range, every tie between consecutive representable values of the
target (and one fp32 ulp either side), the subnormal ranges, and the special values.

Oracles:
  bf16  ml_dtypes.bfloat16, bit for bit, NaN included (0x7FC0 | sign)
  fp16  numpy float16 for non-NaN; a NaN gives a NaN of the same sign (qmm.h: exactly 0x7E00 | sign)
  e4m3  ml_dtypes.float8_e4m3fn(np.clip(x, -448, 448)) for non-NaN (qmm saturates like PTX
        cvt.rn.satfinite); NaN -> 0x7F | sign
  e2m1  ml_dtypes.float4_e2m1fn for non-NaN; NaN -> +-6 (0x7 / 0xF), qmm's documented choice
  e8m0  ml_dtypes.float8_e8m0fnu (0.7 or later: fp32 subnormals round as normals do), bit for bit,
        for everything
"""

import ml_dtypes
import numpy as np
import pytest

from conftest import bits_f32, f32_bits, mismatch_report

ENCODERS = ["bf16", "fp16", "e4m3", "e2m1", "e8m0"]
F32_MAX = np.finfo(np.float32).max


# ------------------------------------------------------------------------------------------------
# Decoders
# ------------------------------------------------------------------------------------------------
def _check_decoded(what, codes, expected, actual, seedtag, width):
    expected = np.asarray(expected, np.float32)
    actual = np.asarray(actual, np.float32)
    en, an = np.isnan(expected), np.isnan(actual)
    assert np.array_equal(en, an), mismatch_report(
        f"{what}: NaN-ness differs {seedtag}", codes, f32_bits(expected), f32_bits(actual), mask=en != an, width=width)
    # NaN codes: a NaN with the code's sign (qmm.h: "NaNs keep their payload" / "a NaN with the code's sign")
    assert np.array_equal(np.signbit(expected[en]), np.signbit(actual[an])), \
        mismatch_report(f"{what}: sign of NaN differs {seedtag}", codes[en], f32_bits(expected[en]),
                        f32_bits(actual[an]), width=width)
    ok = ~en
    assert np.array_equal(f32_bits(expected[ok]), f32_bits(actual[ok])), mismatch_report(
        f"{what}: decoded bits differ {seedtag}", codes[ok], f32_bits(expected[ok]), f32_bits(actual[ok]), width=width)


def test_decode_e2m1_all_codes(qmm, seedtag):
    codes = np.arange(16, dtype=np.uint8)
    expected = codes.view(ml_dtypes.float4_e2m1fn).astype(np.float32)
    _check_decoded("e2m1_to_fp32", codes, expected, qmm.decode("e2m1", codes), seedtag, 2)
    # the high four bits are ignored
    allbytes = np.arange(256, dtype=np.uint8)
    expected = (allbytes & 0xF).view(ml_dtypes.float4_e2m1fn).astype(np.float32)
    _check_decoded("e2m1_to_fp32 (high nibble set)", allbytes, expected, qmm.decode("e2m1", allbytes), seedtag, 2)
    assert f32_bits(qmm.decode("e2m1", [8]))[0] == 0x80000000, f"code 0x8 must decode to -0.0 {seedtag}"


def test_decode_e4m3_all_codes(qmm, seedtag):
    codes = np.arange(256, dtype=np.uint8)
    expected = codes.view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    actual = qmm.decode("e4m3", codes)
    _check_decoded("e4m3_to_fp32", codes, expected, actual, seedtag, 2)
    assert np.isnan(actual[0x7F]) and not np.signbit(actual[0x7F]), f"0x7F must be +NaN {seedtag}"
    assert np.isnan(actual[0xFF]) and np.signbit(actual[0xFF]), f"0xFF must be -NaN {seedtag}"
    assert int(np.sum(np.isnan(actual))) == 2, f"only 0x7F and 0xFF are NaN {seedtag}"


def test_decode_e8m0_all_codes(qmm, seedtag):
    codes = np.arange(256, dtype=np.uint8)
    expected = codes.view(ml_dtypes.float8_e8m0fnu).astype(np.float32)
    actual = qmm.decode("e8m0", codes)
    _check_decoded("e8m0_to_fp32", codes, expected, actual, seedtag, 2)
    exact = np.ldexp(1.0, codes[:255].astype(np.int64) - 127).astype(np.float32)
    assert np.array_equal(f32_bits(actual[:255]), f32_bits(exact)), f"e8m0 codes 0..254 must be 2^(code-127) {seedtag}"
    assert np.isnan(actual[255]), f"0xFF must be NaN {seedtag}"


def test_decode_bf16_all_patterns(qmm, seedtag):
    codes = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    expected = codes.view(ml_dtypes.bfloat16).astype(np.float32)
    _check_decoded("bf16_to_fp32", codes, expected, qmm.decode("bf16", codes), seedtag, 4)


def test_decode_fp16_all_patterns(qmm, seedtag):
    codes = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    expected = codes.view(np.float16).astype(np.float32)
    _check_decoded("fp16_to_fp32", codes, expected, qmm.decode("fp16", codes), seedtag, 4)


# ------------------------------------------------------------------------------------------------
# Encoder oracles
# ------------------------------------------------------------------------------------------------
def oracle_encode(name, x):
    """(expected codes, mask of elements that must match bit for bit) for float32 x."""
    x = np.asarray(x, np.float32)
    nan = np.isnan(x)
    with np.errstate(all="ignore"):
        if name == "bf16":
            return x.astype(ml_dtypes.bfloat16).view(np.uint16), np.ones(x.shape, bool)
        if name == "fp16":
            return x.astype(np.float16).view(np.uint16), ~nan
        if name == "e4m3":
            return np.clip(x, -448, 448).astype(ml_dtypes.float8_e4m3fn).view(np.uint8), ~nan
        if name == "e2m1":
            return x.astype(ml_dtypes.float4_e2m1fn).view(np.uint8), ~nan
        if name == "e8m0":
            return x.astype(ml_dtypes.float8_e8m0fnu).view(np.uint8), np.ones(x.shape, bool)
    raise ValueError(name)


def check_encoder(qmm, name, x, seedtag, what):
    x = np.asarray(x, np.float32).ravel()
    xb = f32_bits(x)
    actual = qmm.encode(name, x)
    expected, exact = oracle_encode(name, x)
    assert np.array_equal(expected[exact], actual[exact]), mismatch_report(
        f"fp32_to_{name} vs oracle on {what} {seedtag}", xb, expected, actual, mask=exact)
    nan = np.isnan(x)
    neg = np.signbit(x)
    if name == "bf16":
        want = np.where(neg, 0xFFC0, 0x7FC0).astype(np.uint16)
        assert np.array_equal(actual[nan], want[nan]), mismatch_report(
            f"fp32_to_bf16: NaN must give 0x7FC0|sign {seedtag}", xb[nan], want[nan], actual[nan])
    elif name == "fp16":
        got = actual[nan].view(np.float16)
        assert np.all(np.isnan(got)), mismatch_report(
            f"fp32_to_fp16: NaN must give a NaN {seedtag}", xb[nan], np.full(got.size, 0x7E00), actual[nan],
            mask=~np.isnan(got))
        assert np.array_equal(np.signbit(got), neg[nan]), mismatch_report(
            f"fp32_to_fp16: NaN must keep its sign {seedtag}", xb[nan], np.where(neg[nan], 0xFE00, 0x7E00),
            actual[nan])
        want = np.where(neg, 0xFE00, 0x7E00).astype(np.uint16)  # qmm.h: the quiet NaN 0x7E00 with the sign
        assert np.array_equal(actual[nan], want[nan]), mismatch_report(
            f"fp32_to_fp16: NaN must give 0x7E00|sign (qmm.h) {seedtag}", xb[nan], want[nan], actual[nan])
    elif name == "e4m3":
        want = np.where(neg, 0xFF, 0x7F).astype(np.uint8)
        assert np.array_equal(actual[nan], want[nan]), mismatch_report(
            f"fp32_to_e4m3: NaN must give 0x7F|sign {seedtag}", xb[nan], want[nan], actual[nan])
    elif name == "e2m1":
        want = np.where(neg, 0xF, 0x7).astype(np.uint8)
        assert np.array_equal(actual[nan], want[nan]), mismatch_report(
            f"fp32_to_e2m1: NaN must give +-6 (0x7/0xF) {seedtag}", xb[nan], want[nan], actual[nan])
    return x.size


# ------------------------------------------------------------------------------------------------
# Input sets
# ------------------------------------------------------------------------------------------------
def random_bit_patterns(rng, count):
    return bits_f32(rng.integers(0, 2 ** 32, size=count, dtype=np.uint64).astype(np.uint32))


# log2 of the magnitudes spanned by "values inside the format's range" (a little past both ends)
_IN_RANGE_LOG2 = {
    "bf16": (-134.0, 128.0),   # subnormals down to 2^-133, max just below 2^128
    "fp16": (-26.0, 16.0),     # subnormals down to 2^-24, max 65504, overflow at 65520
    "e4m3": (-11.0, 9.0),      # subnormals down to 2^-9, max 448
    "e2m1": (-3.0, 3.0),       # 0.5 .. 6
    "e8m0": (-128.0, 128.0),   # 2^-127 .. 2^127
}


def random_in_range(rng, name, count):
    lo, hi = _IN_RANGE_LOG2[name]
    mags = np.exp2(rng.uniform(lo, hi, size=count))
    mags = np.minimum(mags, float(F32_MAX))
    sign = np.where(rng.random(count) < 0.5, -1.0, 1.0)
    if name == "e8m0":  # the range is positive; keep a few negatives (-> 0xFF)
        sign = np.where(rng.random(count) < 0.05, -1.0, 1.0)
    x = (sign * mags).astype(np.float32)
    if name == "e2m1":  # also dense linear coverage of [-7, 7]
        x[: count // 2] = rng.uniform(-7.0, 7.0, size=count // 2).astype(np.float32)
    if name == "e4m3":
        x[: count // 4] = rng.uniform(-480.0, 480.0, size=count // 4).astype(np.float32)
    return x


def representable_magnitudes(name):
    """All finite non-negative values of the format in increasing order, followed by the value the
    next code would have had (so the last midpoint is the overflow threshold)."""
    if name == "bf16":
        v = np.arange(0, 0x7F80, dtype=np.uint32).astype(np.uint16).view(ml_dtypes.bfloat16).astype(np.float64)
        nxt = 2.0 ** 128
    elif name == "fp16":
        v = np.arange(0, 0x7C00, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float64)
        nxt = 2.0 ** 16
    elif name == "e4m3":
        v = np.arange(0, 0x7F, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
        nxt = 480.0
    elif name == "e2m1":
        v = np.arange(0, 8, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)
        nxt = 8.0
    elif name == "e8m0":
        v = np.ldexp(1.0, np.arange(-127, 128))
        nxt = 2.0 ** 128
    else:
        raise ValueError(name)
    assert np.all(np.diff(v) > 0)
    return np.append(v, nxt)


def ties_and_neighbours(name):
    v = representable_magnitudes(name)
    mids = (v[:-1] + v[1:]) / 2.0
    if name == "e8m0":
        mids = np.append(mids, 2.0 ** -128)  # halfway between 0 and the smallest code (2^-127)
    m32 = mids.astype(np.float32)
    assert np.array_equal(m32.astype(np.float64), mids), "every midpoint is an fp32 value"
    up = np.nextafter(m32, np.float32(np.inf))
    down = np.nextafter(m32, np.float32(0))
    # the largest finite value of the format, exactly and one ulp either side
    top = np.float32(v[-2])
    extra = np.array([top, np.nextafter(top, np.float32(np.inf)), np.nextafter(top, np.float32(0))], np.float32)
    pos = np.concatenate([m32, up, down, extra])
    return np.concatenate([pos, -pos])


_MIN_NORMAL = {"bf16": 2.0 ** -126, "fp16": 2.0 ** -14, "e4m3": 2.0 ** -6, "e2m1": 1.0, "e8m0": 2.0 ** -126}


def subnormal_range(rng, name, count):
    # fp32 subnormals (random mantissas, both signs), plus the target's own subnormal range
    n1 = count // 2
    sub = rng.integers(1, 1 << 23, size=n1, dtype=np.uint64).astype(np.uint32)
    sub |= (rng.random(n1) < 0.5).astype(np.uint32) << 31
    small = np.arange(1, 64, dtype=np.uint32)  # the smallest fp32 subnormals, exactly
    edge = np.array([0x00400000, 0x00400001, 0x003FFFFF, 0x00600000, 0x005FFFFF, 0x00600001,
                     0x007FFFFF, 0x00800000, 0x00200000, 0x00200001, 0x001FFFFF], np.uint32)
    pos = np.concatenate([sub, small, edge])
    fp32_sub = bits_f32(np.concatenate([pos, pos | np.uint32(0x80000000)]))
    mn = _MIN_NORMAL[name]
    tgt = rng.uniform(-mn * 1.01, mn * 1.01, size=count - n1).astype(np.float32)
    return np.concatenate([fp32_sub, tgt])


def special_values():
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FBFFFFF, 0xFFBFFFFF, 0x7FFFFFFF,
                     0xFFFFFFFF, 0x7FC00001, 0xFFC00001, 0x7F800100, 0xFF810000, 0x7FA00000, 0xFFE00000,
                     0x7F80FFFF, 0x7FFF0000, 0xFF80FFFF], np.uint32)
    rnd = np.random.default_rng(12345).integers(1, 1 << 23, size=200, dtype=np.uint64).astype(np.uint32)
    rnd_nans = np.concatenate([rnd | 0x7F800000, rnd | 0xFF800000]).astype(np.uint32)
    bits = np.array([0x00000000, 0x80000000, 0x7F800000, 0xFF800000,   # +-0, +-inf
                     0x7F7FFFFF, 0xFF7FFFFF,                            # +-FLT_MAX
                     0x00800000, 0x80800000, 0x00000001, 0x80000001,    # FLT_MIN, smallest subnormal
                     0x3F800000, 0xBF800000], np.uint32)
    vals = np.array([448, 464, 480, 479.99997, 464.00003, 463.99997, 65504, 65519.996, 65520, 65536,
                     6, 7, 6.9999995, 7.0000005, 8, 1e30, -1e30, 2 ** 127, 1.5 * 2 ** 127,
                     3.3895314e38, 3.3961776e38, 3.4028235e38], np.float32)
    return np.concatenate([bits_f32(nans), bits_f32(rnd_nans), bits_f32(bits), vals, -vals])


# ------------------------------------------------------------------------------------------------
# Encoder tests
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ENCODERS)
def test_encode_random_fp32_bit_patterns(qmm, rng, seedtag, name):
    x = random_bit_patterns(rng, 200_000)
    check_encoder(qmm, name, x, seedtag, "random fp32 bit patterns")


@pytest.mark.parametrize("name", ENCODERS)
def test_encode_random_values_in_range(qmm, rng, seedtag, name):
    x = random_in_range(rng, name, 200_000)
    check_encoder(qmm, name, x, seedtag, f"random values in the {name} range")


@pytest.mark.parametrize("name", ENCODERS)
def test_encode_ties_and_neighbours(qmm, seedtag, name):
    x = ties_and_neighbours(name)
    n = check_encoder(qmm, name, x, seedtag, f"{name} ties (+-1 fp32 ulp)")
    assert n >= 30, seedtag


@pytest.mark.parametrize("name", ENCODERS)
def test_encode_subnormal_range(qmm, rng, seedtag, name):
    x = subnormal_range(rng, name, 40_000)
    check_encoder(qmm, name, x, seedtag, "subnormal range")


@pytest.mark.parametrize("name", ENCODERS)
def test_encode_special_values(qmm, seedtag, name):
    check_encoder(qmm, name, special_values(), seedtag, "special values")


def test_encode_documented_special_cases(qmm, seedtag):
    """Spot checks of the rules spelled out in qmm.h, independent of ml_dtypes."""
    z, nz, inf, ninf = bits_f32([0x00000000, 0x80000000, 0x7F800000, 0xFF800000])
    e = lambda name, v: int(qmm.encode(name, [v])[0])  # noqa: E731
    assert e("e4m3", inf) == 0x7E and e("e4m3", ninf) == 0xFE, f"E4M3 saturates infinities {seedtag}"
    assert e("e4m3", 1e30) == 0x7E and e("e4m3", -1e30) == 0xFE, f"E4M3 saturates overflow {seedtag}"
    assert e("e4m3", nz) == 0x80 and e("e4m3", -1e-30) == 0x80, f"E4M3 negative zero {seedtag}"
    assert e("e2m1", inf) == 0x7 and e("e2m1", ninf) == 0xF, f"E2M1 saturates infinities {seedtag}"
    assert e("e2m1", nz) == 0x8 and e("e2m1", -0.1) == 0x8, f"E2M1 negative zero {seedtag}"
    assert e("e2m1", z) == 0x0, seedtag
    for v in (z, nz, -1.0, inf, ninf, np.float32(np.nan), np.float32(2.0 ** 128 * 0.99999)):
        assert e("e8m0", v) == 0xFF, f"E8M0 of {v!r} must be 0xFF {seedtag}"
    assert e("e8m0", 1.5) == 128 and e("e8m0", 0.75) == 127, f"E8M0 ties go up {seedtag}"
    assert e("bf16", inf) == 0x7F80 and e("bf16", np.float32(3.3961776e38)) == 0x7F80, f"bf16 overflow {seedtag}"
    assert e("fp16", 65520.0) == 0x7C00 and e("fp16", 65519.996) == 0x7BFF, f"fp16 overflow threshold {seedtag}"


def test_encode_decode_round_trip(qmm, seedtag):
    """encode(decode(code)) == code for every non-NaN code (canonical codes only for E2M1/E4M3 zeros)."""
    for name, ncodes, nan_codes in (("e4m3", 256, {0x7F, 0xFF}), ("e2m1", 16, set()),
                                    ("e8m0", 255, set()), ("bf16", 65536, None), ("fp16", 65536, None)):
        codes = np.arange(ncodes, dtype=np.uint32)
        vals = qmm.decode(name, codes)
        keep = ~np.isnan(vals)
        codes, vals = codes[keep], vals[keep]
        back = qmm.encode(name, vals).astype(np.uint32)
        assert np.array_equal(back, codes), mismatch_report(
            f"{name}: encode(decode(code)) != code {seedtag}", codes, codes, back, width=4)
