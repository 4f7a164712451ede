/* AVX-512 GEMM pieces with fp32 activations: the FMA register tile (avx512_gemm.h) and the panel
 * fill that decodes the prepared layout into exact bf16 pairs, block scales applied. */
#include "avx512_gemm.h"

/* 12 rows x 32 columns: 24 accumulators + 4 weight vectors of 32 registers. */
#define QMM__MR_FMA_AVX512 12

static void tile_fma_avx512(const qmm__cpu_tile_args *t)
{
    switch (t->mr) {
    case 1: qmm__tile_rows(0, 1, t); break;
    case 2: qmm__tile_rows(0, 2, t); break;
    case 3: qmm__tile_rows(0, 3, t); break;
    case 4: qmm__tile_rows(0, 4, t); break;
    case 5: qmm__tile_rows(0, 5, t); break;
    case 6: qmm__tile_rows(0, 6, t); break;
    case 7: qmm__tile_rows(0, 7, t); break;
    case 8: qmm__tile_rows(0, 8, t); break;
    case 9: qmm__tile_rows(0, 9, t); break;
    case 10: qmm__tile_rows(0, 10, t); break;
    case 11: qmm__tile_rows(0, 11, t); break;
    default: qmm__tile_rows(0, 12, t); break;
    }
}

/* ---- panels: [kc / 2][32][2] bf16, columns 0..15 from tile col0 / 16, 16..31 from the next ---- */

static void panel_zero_half(uint16_t *panel, size_t half, size_t pairs)
{
    for (size_t p = 0; p < pairs; p++) _mm512_storeu_si512(panel + 64 * p + 32 * half, _mm512_setzero_si512());
}

/* Scaled pairs: element * block scale, both exact in bf16. */
QMM__INLINE void panel_store_scaled(uint16_t *dst, __m512i v, __m512 s)
{
    _mm512_storeu_si512(dst, qmm__pair_from(_mm512_mul_ps(qmm__pair_lo(v), s), _mm512_mul_ps(qmm__pair_hi(v), s)));
}

static void panel_nvfp4_avx512(const qmm__cpu_weight *w, size_t col0, size_t k0, size_t kc, uint16_t *panel)
{
    const __m512i lut = qmm__e2m1_lut();
    for (size_t h = 0; h < 2; h++) {
        const size_t t = col0 / QMM__TILE_ROWS + h;
        if (t >= w->tiles) {
            panel_zero_half(panel, h, kc / 2);
            continue;
        }
        for (size_t g = k0 / QMM__KGROUP; g < (k0 + kc) / QMM__KGROUP; g++) {
            const uint8_t *td = w->data + t * w->tile_bytes + g * 512, *ts = w->scales + t * w->tile_scale_bytes + g * 64;
            __m512 s[4];
            qmm__nvfp4_scales2(ts, &s[0], &s[1]);
            qmm__nvfp4_scales2(ts + 32, &s[2], &s[3]);
            uint16_t *dst = panel + 64 * ((g * QMM__KGROUP - k0) / 2) + 32 * h;
            for (int c = 0; c < 8; c++) {
                const __m512i chunk = _mm512_loadu_si512(td + 64 * c);
                for (int j = 0; j < 4; j++) panel_store_scaled(dst + 64 * (4 * c + j), qmm__e2m1_pair(chunk, j, lut), s[c / 2]);
            }
        }
    }
}

static void panel_mxfp4_avx512(const qmm__cpu_weight *w, size_t col0, size_t k0, size_t kc, uint16_t *panel)
{
    const __m512i lut = qmm__e2m1_lut();
    for (size_t h = 0; h < 2; h++) {
        const size_t t = col0 / QMM__TILE_ROWS + h;
        if (t >= w->tiles) {
            panel_zero_half(panel, h, kc / 2);
            continue;
        }
        for (size_t g = k0 / QMM__KGROUP; g < (k0 + kc) / QMM__KGROUP; g++) {
            const uint8_t *td = w->data + t * w->tile_bytes + g * 512, *ts = w->scales + t * w->tile_scale_bytes + g * 32;
            const __m512 s[2] = {qmm__mxfp4_scales(ts), qmm__mxfp4_scales(ts + 16)};
            uint16_t *dst = panel + 64 * ((g * QMM__KGROUP - k0) / 2) + 32 * h;
            for (int c = 0; c < 8; c++) {
                const __m512i chunk = _mm512_loadu_si512(td + 64 * c);
                for (int j = 0; j < 4; j++) panel_store_scaled(dst + 64 * (4 * c + j), qmm__e2m1_pair(chunk, j, lut), s[c / 4]);
            }
        }
    }
}

static void panel_fp8_avx512(const qmm__cpu_weight *w, size_t col0, size_t k0, size_t kc, uint16_t *panel)
{
    for (size_t h = 0; h < 2; h++) {
        const size_t t = col0 / QMM__TILE_ROWS + h;
        if (t >= w->tiles) {
            panel_zero_half(panel, h, kc / 2);
            continue;
        }
        const uint8_t *td = w->data + t * w->tile_bytes + 32 * (k0 / 2);
        for (size_t p = 0; p < kc / 2; p++) _mm512_storeu_si512(panel + 64 * p + 32 * h, qmm__e4m3_pair(td + 32 * p));
    }
}

static void panel_bf16_avx512(const qmm__cpu_weight *w, size_t col0, size_t k0, size_t kc, uint16_t *panel)
{
    for (size_t h = 0; h < 2; h++) {
        const size_t t = col0 / QMM__TILE_ROWS + h;
        if (t >= w->tiles) {
            panel_zero_half(panel, h, kc / 2);
            continue;
        }
        const uint8_t *td = w->data + t * w->tile_bytes + 64 * (k0 / 2);
        for (size_t p = 0; p < kc / 2; p++) _mm512_storeu_si512(panel + 64 * p + 32 * h, _mm512_loadu_si512(td + 64 * p));
    }
}

void qmm__cpu_fill_avx512_gemm(qmm__cpu_kernels *k);
void qmm__cpu_fill_avx512_gemm(qmm__cpu_kernels *k)
{
    k->panel[QMM__KIND_NVFP4] = panel_nvfp4_avx512;
    k->panel[QMM__KIND_MXFP4] = panel_mxfp4_avx512;
    k->panel[QMM__KIND_FP8] = panel_fp8_avx512;
    k->panel[QMM__KIND_BF16] = panel_bf16_avx512;
    k->tile_fma = tile_fma_avx512;
    k->mr_fma = QMM__MR_FMA_AVX512;
}
