/* AVX-512 GEMM pieces with fp32 activations: the FMA register tile and the panel fills that decode
 * the prepared layout into exact bf16 pairs, block scales applied (avx512_gemm.h has the bodies). */
#include "avx512_gemm.h"

/* 12 rows x 32 columns: 24 accumulators + 4 weight vectors of 32 registers. */
#define QMM__MR_FMA_AVX512 12

static void tile_fma_avx512(const qmm__cpu_tile_args *t)
{
    qmm__tile_rows(0, QMM__MR_FMA_AVX512, t);
}

static void panel_nvfp4_avx512(const qmm__cpu_weight *w, size_t col0, size_t k0, size_t kc, uint16_t *panel)
{
    qmm__panel_fill(QMM__KIND_NVFP4, w, col0, k0, kc, panel);
}
static void panel_mxfp4_avx512(const qmm__cpu_weight *w, size_t col0, size_t k0, size_t kc, uint16_t *panel)
{
    qmm__panel_fill(QMM__KIND_MXFP4, w, col0, k0, kc, panel);
}
static void panel_fp8_avx512(const qmm__cpu_weight *w, size_t col0, size_t k0, size_t kc, uint16_t *panel)
{
    qmm__panel_fill(QMM__KIND_FP8, w, col0, k0, kc, panel);
}
static void panel_bf16_avx512(const qmm__cpu_weight *w, size_t col0, size_t k0, size_t kc, uint16_t *panel)
{
    qmm__panel_fill(QMM__KIND_BF16, w, col0, k0, kc, panel);
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
