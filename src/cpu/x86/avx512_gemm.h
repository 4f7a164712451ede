/* The AVX-512 GEMM register tile and panel fill, written once and instantiated by gemm_avx512.c
 * (fp32 A, FMA) and gemm_avx512bf16.c (bf16 A, bf16 dot products).
 *
 * The tile is MR rows x 32 columns in 2 * MR zmm accumulators. Per k-pair it loads the two 64-byte
 * pair vectors of W (columns 0..15 and 16..31) and, for each row, broadcasts A's pair (bf16) or its
 * two values (fp32) from packed A: 2 loads + MR broadcasts for 2 * MR dot products (4 * MR FMAs).
 * The full MR rows are always computed (packed A is zero past M), so there is one code path and a
 * row's sums never depend on how many rows the tile holds. */
#ifndef QMM_CPU_X86_AVX512_GEMM_H
#define QMM_CPU_X86_AVX512_GEMM_H

#include "../cpu.h"
#include "avx512_common.h"

QMM__INLINE void qmm__tile_rows(const int dot, const int MR, const qmm__cpu_tile_args *t)
{
    __m512 c0[16], c1[16];
    for (int i = 0; i < MR; i++) {
        c0[i] = t->accumulate && (size_t)i < t->mr ? _mm512_loadu_ps(t->part + (size_t)i * t->ldp) : _mm512_setzero_ps();
        c1[i] = t->accumulate && (size_t)i < t->mr ? _mm512_loadu_ps(t->part + (size_t)i * t->ldp + 16) : _mm512_setzero_ps();
    }
    const size_t pairs = t->pairs, ws = t->wstride;
    const uint16_t *w0 = t->w0, *w1 = t->w1;
    if (dot) {
        const uint32_t *a = t->a; /* [pairs][MR] bf16 pairs */
        for (size_t p = 0; p < pairs; p++) {
            /* the next row group's A, which follows this one in the packed block: about 4% at M = 512 */
            _mm_prefetch((const char *)(a + (p + QMM__KC / 2) * (size_t)MR), _MM_HINT_T0);
            const __m512i v0 = _mm512_loadu_si512(w0 + p * ws), v1 = _mm512_loadu_si512(w1 + p * ws);
            for (int i = 0; i < MR; i++) {
                c0[i] = qmm__madd_pair(1, c0[i], v0, a + p * (size_t)MR + i, 0);
                c1[i] = qmm__madd_pair(1, c1[i], v1, a + p * (size_t)MR + i, 0);
            }
        }
    } else {
        const float *a = t->a; /* [2 * pairs][MR] */
        for (size_t p = 0; p < pairs; p++) {
            const __m512i v0 = _mm512_loadu_si512(w0 + p * ws), v1 = _mm512_loadu_si512(w1 + p * ws);
            const __m512 l0 = qmm__pair_lo(v0), h0 = qmm__pair_hi(v0), l1 = qmm__pair_lo(v1), h1 = qmm__pair_hi(v1);
            const float *ap = a + 2 * p * (size_t)MR;
            _mm_prefetch((const char *)(ap + QMM__KC * (size_t)MR), _MM_HINT_T0);
            for (int i = 0; i < MR; i++) {
                const __m512 x0 = _mm512_set1_ps(ap[i]), x1 = _mm512_set1_ps(ap[MR + i]);
                c0[i] = _mm512_fmadd_ps(h0, x1, _mm512_fmadd_ps(l0, x0, c0[i]));
                c1[i] = _mm512_fmadd_ps(h1, x1, _mm512_fmadd_ps(l1, x0, c1[i]));
            }
        }
    }
    for (int i = 0; i < MR && (size_t)i < t->mr; i++) {
        if (t->epi) {
            qmm__store16(t->epi, t->row0 + (size_t)i, t->col0, c0[i]);
            if (t->col0 + 16 < t->epi->n) qmm__store16(t->epi, t->row0 + (size_t)i, t->col0 + 16, c1[i]);
        } else {
            _mm512_storeu_ps(t->part + (size_t)i * t->ldp, c0[i]);
            _mm512_storeu_ps(t->part + (size_t)i * t->ldp + 16, c1[i]);
        }
    }
}

/* ---- panels: [kc / 2][32][2] bf16, columns 0..15 from tile col0 / 16, 16..31 from the next ---- */

/* Scaled pairs: element * block scale, both exact in bf16. */
QMM__INLINE __m512i qmm__pair_scaled(__m512i v, __m512 s)
{
    return qmm__pair_from(_mm512_mul_ps(qmm__pair_lo(v), s), _mm512_mul_ps(qmm__pair_hi(v), s));
}

/* One group (64 k) of tile td/ts into the panel half at dst (row stride 64 uint16 per k-pair). */
QMM__INLINE void qmm__panel_group(const int kind, const uint8_t *td, const uint8_t *ts, uint16_t *dst)
{
    if (kind == QMM__KIND_NVFP4 || kind == QMM__KIND_MXFP4) {
        const __m512i lut = qmm__e2m1_lut();
        __m512 s[4];
        if (kind == QMM__KIND_NVFP4) {
            qmm__nvfp4_scales2(ts, &s[0], &s[1]);
            qmm__nvfp4_scales2(ts + 32, &s[2], &s[3]);
        } else {
            s[0] = s[1] = qmm__mxfp4_scales(ts);
            s[2] = s[3] = qmm__mxfp4_scales(ts + 16);
        }
        for (int c = 0; c < 8; c++) { /* chunk c: k in [8c, 8c + 8), block c / 2 (NVFP4) or c / 4 (MXFP4) */
            const __m512i chunk = _mm512_loadu_si512(td + 64 * c);
            for (int j = 0; j < 4; j++)
                _mm512_storeu_si512(dst + 64 * (4 * c + j), qmm__pair_scaled(qmm__e2m1_pair(chunk, j, lut), s[c / 2]));
        }
    } else if (kind == QMM__KIND_FP8) {
        for (int c = 0; c < 16; c++) {
            __m512i q0, q1;
            qmm__e4m3_chunk(td + 64 * c, &q0, &q1);
            _mm512_storeu_si512(dst + 64 * (2 * c), q0);
            _mm512_storeu_si512(dst + 64 * (2 * c + 1), q1);
        }
    } else {
        for (int p = 0; p < 32; p++) _mm512_storeu_si512(dst + 64 * p, _mm512_loadu_si512(td + 64 * p));
    }
}

QMM__INLINE void qmm__panel_fill(const int kind, const qmm__cpu_weight *w, size_t col0, size_t k0, size_t kc, uint16_t *panel)
{
    const size_t gd = QMM__GROUP_DATA(kind), gs = QMM__GROUP_SCALES(kind);
    for (size_t h = 0; h < 2; h++) {
        const size_t t = col0 / QMM__TILE_ROWS + h;
        for (size_t g = k0 / QMM__KGROUP; g < (k0 + kc) / QMM__KGROUP; g++) {
            uint16_t *dst = panel + 64 * ((g * QMM__KGROUP - k0) / 2) + 32 * h;
            if (t >= w->tiles) {
                for (int p = 0; p < QMM__KGROUP / 2; p++) _mm512_storeu_si512(dst + 64 * p, _mm512_setzero_si512());
                continue;
            }
            qmm__panel_group(kind, w->data + t * w->tile_bytes + g * gd, gs ? w->scales + t * w->tile_scale_bytes + g * gs : NULL, dst);
        }
    }
}

#endif
