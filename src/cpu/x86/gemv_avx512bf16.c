/* AVX-512 GEMV with bf16 activations through AVX512-BF16 dot products (vdpbf16ps: 16 lanes, each the
 * sum of two bf16 products), one named kernel per kind (avx512_gemv.h has the body). bf16 A and the
 * decoded weights are exact bf16 values, so nothing is rounded before the fp32 sums. */
#include "avx512_gemv.h"

static void gemv_nvfp4_avx512bf16(const qmm__cpu_gemv_args *x, size_t t0, size_t t1) { qmm__gemv_tiles(QMM__KIND_NVFP4, 1, x, t0, t1); }
static void gemv_mxfp4_avx512bf16(const qmm__cpu_gemv_args *x, size_t t0, size_t t1) { qmm__gemv_tiles(QMM__KIND_MXFP4, 1, x, t0, t1); }
static void gemv_fp8_avx512bf16(const qmm__cpu_gemv_args *x, size_t t0, size_t t1) { qmm__gemv_tiles(QMM__KIND_FP8, 1, x, t0, t1); }
static void gemv_bf16_avx512bf16(const qmm__cpu_gemv_args *x, size_t t0, size_t t1) { qmm__gemv_tiles(QMM__KIND_BF16, 1, x, t0, t1); }

/* defined in gemm_avx512bf16.c */
void qmm__cpu_fill_avx512bf16_gemm(qmm__cpu_kernels *k);

/* 12 independent dot-product chains; each vdpbf16ps on zmm is 32 multiply-adds = 64 flop. */
static double dot_loop_avx512bf16(long iters)
{
    __m512 x[12];
    for (int j = 0; j < 12; j++) x[j] = _mm512_set1_ps(0.001f * (float)j);
    const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f803f80), b = (__m512bh)_mm512_set1_epi32(0x33803380);
    for (long i = 0; i < iters; i++)
        for (int j = 0; j < 12; j++) x[j] = _mm512_dpbf16_ps(x[j], a, b);
    __m512 s = x[0];
    for (int j = 1; j < 12; j++) s = _mm512_add_ps(s, x[j]);
    volatile float sink = _mm512_reduce_add_ps(s);
    (void)sink;
    return 12.0 * 64.0 * (double)iters;
}

void qmm__cpu_fill_avx512bf16(qmm__cpu_kernels *k)
{
    k->name = "avx512+bf16";
    k->gemv_dot[QMM__KIND_NVFP4] = gemv_nvfp4_avx512bf16;
    k->gemv_dot[QMM__KIND_MXFP4] = gemv_mxfp4_avx512bf16;
    k->gemv_dot[QMM__KIND_FP8] = gemv_fp8_avx512bf16;
    k->gemv_dot[QMM__KIND_BF16] = gemv_bf16_avx512bf16;
    k->dot_loop = dot_loop_avx512bf16;
    qmm__cpu_fill_avx512bf16_gemm(k);
}
