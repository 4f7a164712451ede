/* Inline pieces shared by the AVX-512 kernel units (gemv_avx512*.c, gemm_avx512*.c): decoding the
 * prepared layout into 16-lane vectors of bf16 pairs (lane = row, pair = two consecutive k), the
 * epilogue fused into the store, and exp for SiLU / GELU. Included only by units compiled with
 * AVX-512 F/BW/VL/DQ + FMA + F16C; the bf16 dot product is used only where __AVX512BF16__ is on. */
#ifndef QMM_CPU_X86_AVX512_COMMON_H
#define QMM_CPU_X86_AVX512_COMMON_H

#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "../../core/epilogue.h"
#include "../kernels.h"

#define QMM__INLINE static inline __attribute__((always_inline))

/* ---- decoding ---- */

/* bf16 of the E2M1 codes 0..15, twice (vpermw reads 5 index bits; the 5th is a neighbour's). */
QMM__INLINE __m512i qmm__e2m1_lut(void)
{
    return _mm512_set_epi16((short)0xC0C0, (short)0xC080, (short)0xC040, (short)0xC000, (short)0xBFC0, (short)0xBF80,
                            (short)0xBF00, (short)0x8000, 0x40C0, 0x4080, 0x4040, 0x4000, 0x3FC0, 0x3F80, 0x3F00, 0,
                            (short)0xC0C0, (short)0xC080, (short)0xC040, (short)0xC000, (short)0xBFC0, (short)0xBF80,
                            (short)0xBF00, (short)0x8000, 0x40C0, 0x4080, 0x4040, 0x4000, 0x3FC0, 0x3F80, 0x3F00, 0);
}

/* Pair j (0..3) of an E2M1 chunk: word i of the chunk holds in nibble j the code of row i / 2, k-pair
 * j, element i % 2 (layout.c), so one shift and one word-table lookup give the 32 bf16 values. */
QMM__INLINE __m512i qmm__e2m1_pair(__m512i chunk, int j, __m512i lut)
{
    return _mm512_permutexvar_epi16(j ? _mm512_srli_epi16(chunk, (unsigned)(4 * j)) : chunk, lut);
}

/* E4M3 codes (32 bytes) as binary16 bits equal to E4M3 * 2^-8, exactly: the sign-extended byte shifted
 * left by 7 puts exponent and mantissa in place (subnormals included) and bit 14, a copy of the sign,
 * is cleared. NaN codes come out finite (the epilogue's poison restores them). */
QMM__INLINE __m512i qmm__e4m3_to_half_bits(const uint8_t *p)
{
    const __m512i sx = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(const void *)p));
    return _mm512_and_si512(_mm512_slli_epi16(sx, 7), _mm512_set1_epi16((short)0xBFFF));
}

#ifdef __AVX512VBMI__
/* bf16 of E4M3 magnitude code c (0..127) times 2^-8, high and low bytes (code 0x7F, NaN, as 1.875:
 * the epilogue's poison marks its row). Generated from the definition of E4M3 (bias 7, subnormals
 * m * 2^-9). */
static const uint8_t qmm__e4m3_bf16_hi[128] = {
    0x00, 0x37, 0x37, 0x37, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38,
    0x39, 0x39, 0x39, 0x39, 0x39, 0x39, 0x39, 0x39, 0x39, 0x39, 0x39, 0x39, 0x39, 0x39, 0x39, 0x39,
    0x3a, 0x3a, 0x3a, 0x3a, 0x3a, 0x3a, 0x3a, 0x3a, 0x3a, 0x3a, 0x3a, 0x3a, 0x3a, 0x3a, 0x3a, 0x3a,
    0x3b, 0x3b, 0x3b, 0x3b, 0x3b, 0x3b, 0x3b, 0x3b, 0x3b, 0x3b, 0x3b, 0x3b, 0x3b, 0x3b, 0x3b, 0x3b,
    0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c,
    0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d,
    0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e,
    0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3b,
};
static const uint8_t qmm__e4m3_bf16_lo[128] = {
    0x00, 0x00, 0x80, 0xc0, 0x00, 0x20, 0x40, 0x60, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
    0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
};

/* An E4M3 chunk (64 bytes: 16 rows x 4 k, layout.c) as the pair vectors of its two k-pairs, values
 * E4M3 * 2^-8 exactly: two 128-entry byte-table lookups (vpermt2b reads the low 7 bits, the
 * magnitude) give the low and high bytes, the sign goes into the high byte, and the unpacks
 * interleave them into bf16. 6 instructions per 64 weights. */
QMM__INLINE void qmm__e4m3_chunk(const uint8_t *p, __m512i *q0, __m512i *q1)
{
    const __m512i hi0 = _mm512_loadu_si512(qmm__e4m3_bf16_hi), hi1 = _mm512_loadu_si512(qmm__e4m3_bf16_hi + 64);
    const __m512i lo0 = _mm512_loadu_si512(qmm__e4m3_bf16_lo), lo1 = _mm512_loadu_si512(qmm__e4m3_bf16_lo + 64);
    const __m512i x = _mm512_loadu_si512(p);
    const __m512i lo = _mm512_permutex2var_epi8(lo0, x, lo1);
    const __m512i hi = _mm512_ternarylogic_epi32(_mm512_permutex2var_epi8(hi0, x, hi1), x, _mm512_set1_epi8((char)0x80),
                                                 0xF8); /* a | (b & c) */
    *q0 = _mm512_unpacklo_epi8(lo, hi);
    *q1 = _mm512_unpackhi_epi8(lo, hi);
}
#else
/* An E4M3 chunk (64 bytes: 16 rows x 4 k, layout.c) as the pair vectors of its two k-pairs, values
 * E4M3 * 2^-8 exactly, without byte permutes: binary16 bits, fp32 (vcvtph2ps), then the high halves
 * gathered into the pair order (the bytes come in unpack order, see layout.c). */
QMM__INLINE void qmm__e4m3_chunk(const uint8_t *p, __m512i *q0, __m512i *q1)
{
    const __m512i h0 = qmm__e4m3_to_half_bits(p), h1 = qmm__e4m3_to_half_bits(p + 32);
    const __m512i f0 = _mm512_castps_si512(_mm512_cvtph_ps(_mm512_castsi512_si256(h0)));
    const __m512i f1 = _mm512_castps_si512(_mm512_cvtph_ps(_mm512_extracti64x4_epi64(h0, 1)));
    const __m512i f2 = _mm512_castps_si512(_mm512_cvtph_ps(_mm512_castsi512_si256(h1)));
    const __m512i f3 = _mm512_castps_si512(_mm512_cvtph_ps(_mm512_extracti64x4_epi64(h1, 1)));
    const __m512i odd = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33, 31, 29, 27, 25, 23,
                                         21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    /* a = [k-pair 0 rows 0-3, pair 1 rows 0-3, pair 0 rows 4-7, pair 1 rows 4-7] (128 bits each), b the same for rows 8-15 */
    const __m512i a = _mm512_permutex2var_epi16(f0, odd, f1), b = _mm512_permutex2var_epi16(f2, odd, f3);
    *q0 = _mm512_shuffle_i64x2(a, b, 0x88);
    *q1 = _mm512_shuffle_i64x2(a, b, 0xDD);
}
#endif

/* Two blocks of NVFP4 scales (2 x 16 rows of E4M3 codes) as fp32 E4M3 * 2^-8. */
QMM__INLINE void qmm__nvfp4_scales2(const uint8_t *p, __m512 *s0, __m512 *s1)
{
    const __m512i h = qmm__e4m3_to_half_bits(p);
    *s0 = _mm512_cvtph_ps(_mm512_castsi512_si256(h));
    *s1 = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1));
}

/* One block of MXFP4 scales (16 rows of E8M0 codes) as fp32 2^(e - 127): the code is the fp32
 * exponent field; code 0 is the subnormal 2^-127 (bit 22). 0xFF gives infinity (the poison makes the
 * row NaN). */
QMM__INLINE __m512 qmm__mxfp4_scales(const uint8_t *p)
{
    const __m512i e = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)p));
    return _mm512_castsi512_ps(_mm512_max_epu32(_mm512_slli_epi32(e, 23), _mm512_set1_epi32(0x00400000)));
}

/* The fp32 values of the first and second elements of each pair (exact). */
QMM__INLINE __m512 qmm__pair_lo(__m512i v) { return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)); }
QMM__INLINE __m512 qmm__pair_hi(__m512i v)
{
    return _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32((int)0xFFFF0000u)));
}

/* Pairs back from two fp32 vectors whose values are bf16 numbers (exact: only zero bits dropped). */
QMM__INLINE __m512i qmm__pair_from(__m512 lo, __m512 hi)
{
    return _mm512_ternarylogic_epi32(_mm512_castps_si512(hi), _mm512_srli_epi32(_mm512_castps_si512(lo), 16),
                                     _mm512_set1_epi32((int)0xFFFF0000u), 0xE4); /* c ? a : b */
}

/* A pair of A values broadcast to every lane: bf16 (a[k], a[k + 1]) as one 32-bit word. */
QMM__INLINE __m512i qmm__bcast_pair(const uint16_t *a)
{
    uint32_t u;
    memcpy(&u, a, 4);
    return _mm512_set1_epi32((int)u);
}

#ifdef __AVX512BF16__
/* t += pair . v for every lane, the pair read from memory and broadcast by the dot product itself
 * ({1to16}: one instruction instead of a broadcast and a dot product; GCC 12 does not fold the
 * broadcast into vdpbf16ps on its own). Used where each pair of A meets one weight vector. */
QMM__INLINE __m512 qmm__dot_bcast(__m512 t, __m512i v, const uint16_t *pair)
{
#if defined(__GNUC__) && !defined(QMM_NO_INLINE_ASM)
    __asm__("vdpbf16ps %2%{1to16%}, %1, %0" : "+v"(t) : "v"(v), "m"(*(const uint32_t *)(const void *)pair));
    return t;
#else
    return _mm512_dpbf16_ps(t, (__m512bh)v, (__m512bh)qmm__bcast_pair(pair));
#endif
}
#endif

/* t += pair(a[k], a[k + 1]) . v for every lane: a bf16 dot product where the unit has them and A is
 * bf16 (dot = 1), else two FMAs on fp32 A (dot = 0). */
QMM__INLINE __m512 qmm__madd_pair(const int dot, __m512 t, __m512i v, const void *a, size_t k)
{
#ifdef __AVX512BF16__
    if (dot) return _mm512_dpbf16_ps(t, (__m512bh)qmm__bcast_pair((const uint16_t *)a + k), (__m512bh)v);
#endif
    (void)dot;
    const float *af = (const float *)a + k;
    t = _mm512_fmadd_ps(qmm__pair_lo(v), _mm512_set1_ps(af[0]), t);
    return _mm512_fmadd_ps(qmm__pair_hi(v), _mm512_set1_ps(af[1]), t);
}

/* qmm__madd_pair with the broadcast folded into the dot product (qmm__dot_bcast). In the E2M1 GEMV it
 * saves a fifth of the instructions (+5% in cache); where many accumulators are live (the FP8 and bf16
 * GEMV with 8 rows) GCC then allocates registers worse and spills, so those keep qmm__madd_pair. */
QMM__INLINE __m512 qmm__madd_pair_bcast(const int dot, __m512 t, __m512i v, const void *a, size_t k)
{
#ifdef __AVX512BF16__
    if (dot) return qmm__dot_bcast(t, v, (const uint16_t *)a + k);
#endif
    return qmm__madd_pair(dot, t, v, a, k);
}

/* ---- the epilogue ---- */

/* exp(x) in fp32: x = n ln2 + r, |r| <= ln2 / 2, a degree-6 polynomial (Cephes expf, about 1 ulp),
 * then scalef by 2^n, which gives infinity and zero past the ends of the range. */
QMM__INLINE __m512 qmm__exp512(__m512 x)
{
    x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(100.0f)), _mm512_set1_ps(-110.0f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, n);
}

QMM__INLINE __m512 qmm__activation512(__m512 v, qmm_activation act)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    switch (act) {
    case QMM_ACT_RELU: return _mm512_max_ps(v, _mm512_setzero_ps()); /* NaN gives 0, as x > 0 ? x : 0 */
    case QMM_ACT_SILU: return _mm512_div_ps(v, _mm512_add_ps(one, qmm__exp512(_mm512_sub_ps(_mm512_setzero_ps(), v))));
    case QMM_ACT_GELU: {
        const __m512 v3 = _mm512_mul_ps(_mm512_mul_ps(v, v), v);
        const __m512 y = _mm512_fmadd_ps(_mm512_set1_ps(0.044715f), v3, v);
        const __m512 z = _mm512_mul_ps(_mm512_set1_ps(-2.0f * (float)QMM__SQRT_2_OVER_PI), y);
        return _mm512_div_ps(v, _mm512_add_ps(one, qmm__exp512(z)));
    }
    case QMM_ACT_GELU_ERF: { /* rare in practice: libm's erfcf per lane */
        float t[16];
        _mm512_storeu_ps(t, v);
        for (int i = 0; i < 16; i++) t[i] = qmm__activation_f32(t[i], QMM_ACT_GELU_ERF);
        return _mm512_loadu_ps(t);
    }
    default: return v;
    }
}

/* fp32 -> bf16 bits, round to nearest even, NaN -> 0x7FC0 with the sign (qmm__fp32_to_bf16; the
 * AVX512-BF16 conversion would flush subnormals). Result in the low 16 bits of each lane. */
QMM__INLINE __m512i qmm__to_bf16_512(__m512 v)
{
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    const __m512i qnan = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x8000)),
                                         _mm512_set1_epi32(0x7fc0));
    return _mm512_mask_mov_epi32(r, nan, qnan);
}

/* Columns [col, col + 16) of row `row` of C (only those below N): the epilogue of acc, then the store. */
QMM__INLINE void qmm__store16(const qmm__cpu_epi *e, size_t row, size_t col, __m512 acc)
{
    const size_t left = e->n - col;
    const __mmask16 m = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);
    __m512 v = e->poison ? _mm512_add_ps(acc, _mm512_maskz_loadu_ps(m, e->poison + col)) : acc;
    v = _mm512_mul_ps(v, _mm512_set1_ps(e->inv_unit));
    v = _mm512_mul_ps(v, e->row_scales ? _mm512_maskz_loadu_ps(m, e->row_scales + col) : _mm512_set1_ps(e->row_scale));
    v = _mm512_mul_ps(v, _mm512_set1_ps(e->alpha));
    if (e->column_scale) v = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, e->column_scale + col));
    if (e->bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, e->bias + col));
    const size_t off = row * e->ldc + col;
    if (e->beta != 0.0f) {
        __m512 cin;
        if (e->c_type == QMM_DTYPE_FP32) cin = _mm512_maskz_loadu_ps(m, (const float *)e->c + off);
        else {
            const __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)e->c + off);
            cin = e->c_type == QMM_DTYPE_BF16 ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16))
                                              : _mm512_cvtph_ps(h);
        }
        v = _mm512_add_ps(v, _mm512_mul_ps(_mm512_set1_ps(e->beta), cin));
    }
    v = qmm__activation512(v, e->act);
    if (e->out_scale) v = _mm512_mul_ps(v, _mm512_set1_ps(e->out_scale[row]));
    if (e->c_type == QMM_DTYPE_FP32) _mm512_mask_storeu_ps((float *)e->c + off, m, v);
    else if (e->c_type == QMM_DTYPE_BF16) _mm256_mask_storeu_epi16((uint16_t *)e->c + off, m, _mm512_cvtepi32_epi16(qmm__to_bf16_512(v)));
    else _mm256_mask_storeu_epi16((uint16_t *)e->c + off, m, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

#endif
