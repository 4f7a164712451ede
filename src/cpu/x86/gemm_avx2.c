/* AVX2 GEMM pieces: the FMA register tile (packed fp32 A) and the panel fills from the prepared
 * layout. The tile makes two passes of 16 columns (w0, then w1), each 4 rows x 16 columns in 8 ymm
 * accumulators with the 4 fp32 weight vectors of a k-pair: 14 of the 16 ymm registers. */
#include "avx2_common.h"

#define QMM__MR_FMA_AVX2 4

static void tile_fma_avx2(const qmm__cpu_tile_args *t)
{
    enum { MR = QMM__MR_FMA_AVX2 };
    const float *a = t->a; /* [2 * pairs][MR] */
    const size_t pairs = t->pairs, ws = t->wstride;
    for (size_t half = 0; half < 2; half++) {
        const uint16_t *w = half ? t->w1 : t->w0;
        __m256 acc[MR][2];
        for (int i = 0; i < MR; i++)
            for (int j = 0; j < 2; j++)
                acc[i][j] = t->accumulate && (size_t)i < t->mr ? _mm256_loadu_ps(t->part + (size_t)i * t->ldp + 16 * half + 8 * (size_t)j)
                                                               : _mm256_setzero_ps();
        for (size_t p = 0; p < pairs; p++) {
            const __m256i v0 = _mm256_loadu_si256((const __m256i *)(const void *)(w + p * ws));
            const __m256i v1 = _mm256_loadu_si256((const __m256i *)(const void *)(w + p * ws + 16));
            const __m256 l0 = qmm__pair_lo256(v0), h0 = qmm__pair_hi256(v0), l1 = qmm__pair_lo256(v1), h1 = qmm__pair_hi256(v1);
            const float *ap = a + 2 * p * MR;
            for (int i = 0; i < MR; i++) {
                const __m256 x0 = _mm256_broadcast_ss(ap + i), x1 = _mm256_broadcast_ss(ap + MR + i);
                acc[i][0] = _mm256_fmadd_ps(h0, x1, _mm256_fmadd_ps(l0, x0, acc[i][0]));
                acc[i][1] = _mm256_fmadd_ps(h1, x1, _mm256_fmadd_ps(l1, x0, acc[i][1]));
            }
        }
        for (int i = 0; i < MR && (size_t)i < t->mr; i++)
            for (size_t j = 0; j < 2; j++) {
                const size_t col = t->col0 + 16 * half + 8 * j;
                if (t->epi) {
                    if (col < t->epi->n) qmm__store8(t->epi, t->row0 + (size_t)i, col, acc[i][j]);
                } else {
                    _mm256_storeu_ps(t->part + (size_t)i * t->ldp + 16 * half + 8 * j, acc[i][j]);
                }
            }
    }
}

/* ---- panels: [kc / 2][32][2] bf16 ---- */

/* 8 fp32 values that are bf16 numbers -> their 8 bf16 (exact), in order. */
QMM__INLINE __m128i qmm__bf16x8(__m256 f)
{
    const __m256i b = _mm256_srli_epi32(_mm256_castps_si256(f), 16);
    return _mm_packus_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
}

/* Pairs from fp32 first / second elements whose values are bf16 numbers (exact). */
QMM__INLINE __m256i qmm__pair_from256(__m256 lo, __m256 hi)
{
    return _mm256_or_si256(_mm256_and_si256(_mm256_castps_si256(hi), _mm256_set1_epi32((int)0xFFFF0000u)),
                           _mm256_srli_epi32(_mm256_castps_si256(lo), 16));
}

QMM__INLINE __m256 qmm__e2m1x8_2(__m256i idx)
{
    const __m256 mag = _mm256_permutevar8x32_ps(_mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f), idx);
    return _mm256_xor_ps(mag, _mm256_castsi256_ps(_mm256_and_si256(_mm256_slli_epi32(idx, 28), _mm256_set1_epi32((int)0x80000000u))));
}

/* One group (64 k) of one tile into panel columns [16 * th, 16 * th + 16). */
QMM__INLINE void qmm__panel2_group(const int kind, const uint8_t *td, const uint8_t *ts, uint16_t *dst)
{
    for (size_t hh = 0; hh < 2; hh++) { /* rows 8hh .. 8hh + 7 of the tile */
        if (kind == QMM__KIND_NVFP4 || kind == QMM__KIND_MXFP4) {
            for (int c = 0; c < 8; c++) {
                const int b = kind == QMM__KIND_NVFP4 ? c / 2 : c / 4;
                __m256 s;
                if (kind == QMM__KIND_NVFP4) s = qmm__e4m3x8(ts + 16 * b + 8 * hh);
                else {
                    const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(ts + 16 * b + 8 * hh)));
                    s = _mm256_castsi256_ps(_mm256_max_epu32(_mm256_slli_epi32(e, 23), _mm256_set1_epi32(0x00400000)));
                }
                const __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(td + 64 * c + 32 * hh));
                for (int j = 0; j < 4; j++) {
                    const __m256 lo = _mm256_mul_ps(qmm__e2m1x8_2(_mm256_srli_epi32(x, 4 * j)), s);
                    const __m256 hi = _mm256_mul_ps(qmm__e2m1x8_2(_mm256_srli_epi32(x, 16 + 4 * j)), s);
                    _mm256_storeu_si256((__m256i *)(void *)(dst + 64 * (4 * c + j) + 16 * hh), qmm__pair_from256(lo, hi));
                }
            }
        } else if (kind == QMM__KIND_FP8) {
            for (int c = 0; c < 16; c++)
                for (int l2 = 0; l2 < 2; l2++)
                    for (int q = 0; q < 2; q++) /* rows 8hh + 4 l2 + r, k-pair 2c + q: 4 pairs */
                        _mm_storeu_si128((__m128i *)(void *)(dst + 64 * (2 * c + q) + 16 * hh + 8 * l2),
                                         qmm__bf16x8(qmm__e4m3x8(td + 64 * c + 32 * hh + 16 * l2 + 8 * q)));
        } else {
            for (int p = 0; p < 32; p++)
                _mm256_storeu_si256((__m256i *)(void *)(dst + 64 * p + 16 * hh),
                                    _mm256_loadu_si256((const __m256i *)(const void *)(td + 64 * p + 32 * hh)));
        }
    }
}

QMM__INLINE void qmm__panel2_fill(const int kind, const qmm__cpu_weight *w, size_t col0, size_t k0, size_t kc, uint16_t *panel)
{
    const size_t gd = QMM__GROUP_DATA(kind), gs = QMM__GROUP_SCALES(kind);
    for (size_t th = 0; th < 2; th++) {
        const size_t t = col0 / QMM__TILE_ROWS + th;
        for (size_t g = k0 / QMM__KGROUP; g < (k0 + kc) / QMM__KGROUP; g++) {
            uint16_t *dst = panel + 64 * ((g * QMM__KGROUP - k0) / 2) + 32 * th;
            if (t >= w->tiles) {
                for (int p = 0; p < QMM__KGROUP / 2; p++) memset(dst + 64 * p, 0, 64);
                continue;
            }
            qmm__panel2_group(kind, w->data + t * w->tile_bytes + g * gd, gs ? w->scales + t * w->tile_scale_bytes + g * gs : NULL, dst);
        }
    }
}

static void panel_nvfp4_avx2(const qmm__cpu_weight *w, size_t c0, size_t k0, size_t kc, uint16_t *p) { qmm__panel2_fill(QMM__KIND_NVFP4, w, c0, k0, kc, p); }
static void panel_mxfp4_avx2(const qmm__cpu_weight *w, size_t c0, size_t k0, size_t kc, uint16_t *p) { qmm__panel2_fill(QMM__KIND_MXFP4, w, c0, k0, kc, p); }
static void panel_fp8_avx2(const qmm__cpu_weight *w, size_t c0, size_t k0, size_t kc, uint16_t *p) { qmm__panel2_fill(QMM__KIND_FP8, w, c0, k0, kc, p); }
static void panel_bf16_avx2(const qmm__cpu_weight *w, size_t c0, size_t k0, size_t kc, uint16_t *p) { qmm__panel2_fill(QMM__KIND_BF16, w, c0, k0, kc, p); }

void qmm__cpu_fill_avx2_gemm(qmm__cpu_kernels *k);
void qmm__cpu_fill_avx2_gemm(qmm__cpu_kernels *k)
{
    k->panel[QMM__KIND_NVFP4] = panel_nvfp4_avx2;
    k->panel[QMM__KIND_MXFP4] = panel_mxfp4_avx2;
    k->panel[QMM__KIND_FP8] = panel_fp8_avx2;
    k->panel[QMM__KIND_BF16] = panel_bf16_avx2;
    k->tile_fma = tile_fma_avx2;
    k->mr_fma = QMM__MR_FMA_AVX2;
}
