/* The AVX-512 GEMM register tile and panel fill, written once and instantiated by gemm_avx512.c
 * (fp32 A, FMA) and gemm_avx512bf16.c (bf16 A, bf16 dot products).
 *
 * The tile is MR rows x 32 columns in 2 * MR zmm accumulators. Per k-pair it loads the two 64-byte
 * pair vectors of W (columns 0..15 and 16..31) and, for each row, broadcasts A's pair (bf16) or its
 * two values (fp32) from memory: 2 loads + MR broadcasts for 2 * MR dot products (4 * MR FMAs). */
#ifndef QMM_CPU_X86_AVX512_GEMM_H
#define QMM_CPU_X86_AVX512_GEMM_H

#include "avx512_common.h"

QMM__INLINE void qmm__tile_rows(const int dot, const int MR, const qmm__cpu_tile_args *t)
{
    __m512 c0[16], c1[16];
    for (int i = 0; i < MR; i++) {
        c0[i] = t->accumulate ? _mm512_loadu_ps(t->part + (size_t)i * t->ldp) : _mm512_setzero_ps();
        c1[i] = t->accumulate ? _mm512_loadu_ps(t->part + (size_t)i * t->ldp + 16) : _mm512_setzero_ps();
    }
    const size_t pairs = t->kc / 2, ws = t->wstride;
    const uint16_t *w0 = t->w0, *w1 = t->w1;
    if (dot) {
        const uint16_t *a = t->a;
        const size_t lda = t->lda;
        for (size_t p = 0; p < pairs; p++) {
            const __m512i v0 = _mm512_loadu_si512(w0 + p * ws), v1 = _mm512_loadu_si512(w1 + p * ws);
            for (int i = 0; i < MR; i++) {
                c0[i] = qmm__madd_pair(1, c0[i], v0, a + (size_t)i * lda, 2 * p);
                c1[i] = qmm__madd_pair(1, c1[i], v1, a + (size_t)i * lda, 2 * p);
            }
        }
        if (t->kc & 1) { /* the last k alone: the pair (a, 0) */
            const __m512i v0 = _mm512_loadu_si512(w0 + pairs * ws), v1 = _mm512_loadu_si512(w1 + pairs * ws);
            for (int i = 0; i < MR; i++) {
                const uint16_t pair[2] = {a[(size_t)i * lda + 2 * pairs], 0};
                c0[i] = qmm__madd_pair(1, c0[i], v0, pair, 0);
                c1[i] = qmm__madd_pair(1, c1[i], v1, pair, 0);
            }
        }
    } else {
        const float *a = t->a;
        const size_t lda = t->lda;
        for (size_t p = 0; p < pairs; p++) {
            const __m512i v0 = _mm512_loadu_si512(w0 + p * ws), v1 = _mm512_loadu_si512(w1 + p * ws);
            const __m512 l0 = qmm__pair_lo(v0), h0 = qmm__pair_hi(v0), l1 = qmm__pair_lo(v1), h1 = qmm__pair_hi(v1);
            for (int i = 0; i < MR; i++) {
                const __m512 x0 = _mm512_set1_ps(a[(size_t)i * lda + 2 * p]), x1 = _mm512_set1_ps(a[(size_t)i * lda + 2 * p + 1]);
                c0[i] = _mm512_fmadd_ps(h0, x1, _mm512_fmadd_ps(l0, x0, c0[i]));
                c1[i] = _mm512_fmadd_ps(h1, x1, _mm512_fmadd_ps(l1, x0, c1[i]));
            }
        }
        if (t->kc & 1) {
            const __m512 l0 = qmm__pair_lo(_mm512_loadu_si512(w0 + pairs * ws)), l1 = qmm__pair_lo(_mm512_loadu_si512(w1 + pairs * ws));
            for (int i = 0; i < MR; i++) {
                const __m512 x0 = _mm512_set1_ps(a[(size_t)i * lda + 2 * pairs]);
                c0[i] = _mm512_fmadd_ps(l0, x0, c0[i]);
                c1[i] = _mm512_fmadd_ps(l1, x0, c1[i]);
            }
        }
    }
    for (int i = 0; i < MR; i++) {
        if (t->epi) {
            qmm__store16(t->epi, t->row0 + (size_t)i, t->col0, c0[i]);
            if (t->col0 + 16 < t->epi->n) qmm__store16(t->epi, t->row0 + (size_t)i, t->col0 + 16, c1[i]);
        } else {
            _mm512_storeu_ps(t->part + (size_t)i * t->ldp, c0[i]);
            _mm512_storeu_ps(t->part + (size_t)i * t->ldp + 16, c1[i]);
        }
    }
}

#endif
