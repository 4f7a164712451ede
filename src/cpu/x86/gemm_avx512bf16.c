/* The AVX512-BF16 GEMM register tile: bf16 A, bf16 panels, vdpbf16ps (avx512_gemm.h has the body).
 * 12 rows x 32 columns: 24 accumulators, each k-pair 2 weight loads + 12 broadcast A pairs (as memory
 * operands of the dot products) for 24 dot products. */
#include "avx512_gemm.h"

#define QMM__MR_DOT_AVX512 12

static void tile_dot_avx512bf16(const qmm__cpu_tile_args *t)
{
    qmm__tile_rows(1, QMM__MR_DOT_AVX512, t);
}

void qmm__cpu_fill_avx512bf16_gemm(qmm__cpu_kernels *k);
void qmm__cpu_fill_avx512bf16_gemm(qmm__cpu_kernels *k)
{
    k->tile_dot = tile_dot_avx512bf16;
    k->mr_dot = QMM__MR_DOT_AVX512;
}
