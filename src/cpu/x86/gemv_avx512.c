/* AVX-512 GEMV with fp32 activations (FMA), one named kernel per kind (avx512_gemv.h has the body),
 * and the AVX-512 entries of the kernel table. */
#include "avx512_gemv.h"

static void gemv_nvfp4_avx512(const qmm__cpu_gemv_args *x, size_t t0, size_t t1) { qmm__gemv_tiles(QMM__KIND_NVFP4, 0, x, t0, t1); }
static void gemv_mxfp4_avx512(const qmm__cpu_gemv_args *x, size_t t0, size_t t1) { qmm__gemv_tiles(QMM__KIND_MXFP4, 0, x, t0, t1); }
static void gemv_fp8_avx512(const qmm__cpu_gemv_args *x, size_t t0, size_t t1) { qmm__gemv_tiles(QMM__KIND_FP8, 0, x, t0, t1); }
static void gemv_bf16_avx512(const qmm__cpu_gemv_args *x, size_t t0, size_t t1) { qmm__gemv_tiles(QMM__KIND_BF16, 0, x, t0, t1); }

/* defined in gemm_avx512.c */
void qmm__cpu_fill_avx512_gemm(qmm__cpu_kernels *k);

/* ---- measurement loops ---- */

/* Four sequential streams (the quarters of the slice): on the development VM they reach 5-10% more
 * than one stream, as the GEMV's two streams (data and scales) per thread do. */
static uint64_t read_sum_avx512(const void *p, size_t bytes)
{
    const char *q = p;
    const size_t quarter = bytes / 4;
    __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i < quarter; i += 64) {
        s0 = _mm512_add_epi64(s0, _mm512_load_si512(q + i));
        s1 = _mm512_add_epi64(s1, _mm512_load_si512(q + quarter + i));
        s2 = _mm512_add_epi64(s2, _mm512_load_si512(q + 2 * quarter + i));
        s3 = _mm512_add_epi64(s3, _mm512_load_si512(q + 3 * quarter + i));
    }
    return (uint64_t)_mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_add_epi64(s0, s1), _mm512_add_epi64(s2, s3)));
}

/* 12 independent FMA chains: enough to cover a 4-cycle latency at 2 (256-bit) or 1 (512-bit) per cycle. */
static double fma_loop_avx512(long iters)
{
    __m512 x[12];
    for (int j = 0; j < 12; j++) x[j] = _mm512_set1_ps(0.001f * (float)j);
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (long i = 0; i < iters; i++)
        for (int j = 0; j < 12; j++) x[j] = _mm512_fmadd_ps(x[j], a, b);
    __m512 s = x[0];
    for (int j = 1; j < 12; j++) s = _mm512_add_ps(s, x[j]);
    volatile float sink = _mm512_reduce_add_ps(s);
    (void)sink;
    return 12.0 * 32.0 * (double)iters;
}

void qmm__cpu_fill_avx512(qmm__cpu_kernels *k)
{
    k->name = "avx512";
    k->gemv_fma[QMM__KIND_NVFP4] = gemv_nvfp4_avx512;
    k->gemv_fma[QMM__KIND_MXFP4] = gemv_mxfp4_avx512;
    k->gemv_fma[QMM__KIND_FP8] = gemv_fp8_avx512;
    k->gemv_fma[QMM__KIND_BF16] = gemv_bf16_avx512;
    k->read_sum = read_sum_avx512;
    k->fma_loop = fma_loop_avx512;
    qmm__cpu_fill_avx512_gemm(k);
}
