/* Inline pieces shared by the AVX2 kernel units (gemv_avx2.c, gemm_avx2.c): the epilogue fused into
 * the store of 8 columns, and exp. Included only by units compiled with AVX2 + FMA + F16C. AVX2 has
 * no bf16 dot product, so every AVX2 kernel multiplies fp32 A with FMA (the driver converts A). */
#ifndef QMM_CPU_X86_AVX2_COMMON_H
#define QMM_CPU_X86_AVX2_COMMON_H

#include <immintrin.h>
#include <string.h>

#include "../../core/epilogue.h"
#include "../kernels.h"

#define QMM__INLINE static inline __attribute__((always_inline))

/* exp(x) in fp32 (Cephes expf, about 1 ulp): x = n ln2 + r, a degree-6 polynomial, 2^n built in the
 * exponent field; infinity above 88.72 as expf. Below -87 it returns exp(-87) ~ 1.6e-38: it is only
 * ever added to 1 (SiLU, GELU). */
QMM__INLINE __m256 qmm__exp256(__m256 x)
{
    const __m256 big = _mm256_cmp_ps(x, _mm256_set1_ps(88.72283f), _CMP_GT_OQ);
    const __m256 xc = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(88.0f)), _mm256_set1_ps(-87.0f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), xc);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    const __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    return _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), big);
}

QMM__INLINE __m256 qmm__activation256(__m256 v, qmm_activation act)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    switch (act) {
    case QMM_ACT_RELU: return _mm256_max_ps(v, _mm256_setzero_ps()); /* NaN gives 0, as x > 0 ? x : 0 */
    case QMM_ACT_SILU: return _mm256_div_ps(v, _mm256_add_ps(one, qmm__exp256(_mm256_sub_ps(_mm256_setzero_ps(), v))));
    case QMM_ACT_GELU: {
        const __m256 v3 = _mm256_mul_ps(_mm256_mul_ps(v, v), v);
        const __m256 y = _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), v3, v);
        const __m256 z = _mm256_mul_ps(_mm256_set1_ps(-2.0f * (float)QMM__SQRT_2_OVER_PI), y);
        return _mm256_div_ps(v, _mm256_add_ps(one, qmm__exp256(z)));
    }
    case QMM_ACT_GELU_ERF: {
        float t[8];
        _mm256_storeu_ps(t, v);
        for (int i = 0; i < 8; i++) t[i] = qmm__activation_f32(t[i], QMM_ACT_GELU_ERF);
        return _mm256_loadu_ps(t);
    }
    default: return v;
    }
}

/* fp32 -> bf16 bits (round to nearest even, NaN -> 0x7FC0 with the sign) in the low half of each lane. */
QMM__INLINE __m256i qmm__to_bf16_256(__m256 v)
{
    const __m256i u = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
    const __m256i qnan = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x8000)),
                                         _mm256_set1_epi32(0x7fc0));
    return _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(r), _mm256_castsi256_ps(qnan), _mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
}

/* Columns [col, col + 8) of row `row` of C: the epilogue, then the store. A partial group of columns
 * at the end of a row goes through the portable epilogue. */
QMM__INLINE void qmm__store8(const qmm__cpu_epi *e, size_t row, size_t col, __m256 acc)
{
    if (col + 8 > e->n) {
        float t[8];
        _mm256_storeu_ps(t, acc);
        for (size_t j = 0; col + j < e->n; j++) qmm__cpu_store_value(e, row, col + j, qmm__cpu_epilogue_value(e, row, col + j, t[j]));
        return;
    }
    __m256 v = e->poison ? _mm256_add_ps(acc, _mm256_loadu_ps(e->poison + col)) : acc;
    v = _mm256_mul_ps(v, _mm256_set1_ps(e->inv_unit));
    v = _mm256_mul_ps(v, e->row_scales ? _mm256_loadu_ps(e->row_scales + col) : _mm256_set1_ps(e->row_scale));
    v = _mm256_mul_ps(v, _mm256_set1_ps(e->alpha));
    if (e->column_scale) v = _mm256_mul_ps(v, _mm256_loadu_ps(e->column_scale + col));
    if (e->bias) v = _mm256_add_ps(v, _mm256_loadu_ps(e->bias + col));
    const size_t off = row * e->ldc + col;
    if (e->beta != 0.0f) {
        __m256 cin;
        if (e->c_type == QMM_DTYPE_FP32) cin = _mm256_loadu_ps((const float *)e->c + off);
        else {
            const __m128i h = _mm_loadu_si128((const __m128i *)(const void *)((const uint16_t *)e->c + off));
            cin = e->c_type == QMM_DTYPE_BF16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)) : _mm256_cvtph_ps(h);
        }
        v = _mm256_add_ps(v, _mm256_mul_ps(_mm256_set1_ps(e->beta), cin));
    }
    v = qmm__activation256(v, e->act);
    if (e->out_scale) v = _mm256_mul_ps(v, _mm256_set1_ps(e->out_scale[row]));
    if (e->c_type == QMM_DTYPE_FP32) _mm256_storeu_ps((float *)e->c + off, v);
    else {
        __m128i h;
        if (e->c_type == QMM_DTYPE_BF16) {
            const __m256i b = qmm__to_bf16_256(v);
            h = _mm_packus_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
        } else {
            h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        }
        _mm_storeu_si128((__m128i *)(void *)((uint16_t *)e->c + off), h);
    }
}

/* The fp32 values of the first and second elements of 8 bf16 pairs. */
QMM__INLINE __m256 qmm__pair_lo256(__m256i v) { return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)); }
QMM__INLINE __m256 qmm__pair_hi256(__m256i v)
{
    return _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32((int)0xFFFF0000u)));
}

/* E4M3 codes (8 bytes) as fp32 E4M3 * 2^-8: binary16 bits (layout of avx512_common.h), then F16C. */
QMM__INLINE __m256 qmm__e4m3x8(const uint8_t *p)
{
    const __m128i sx = _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)p));
    return _mm256_cvtph_ps(_mm_and_si128(_mm_slli_epi16(sx, 7), _mm_set1_epi16((short)0xBFFF)));
}

#endif
