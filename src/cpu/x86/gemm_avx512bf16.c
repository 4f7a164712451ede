/* The AVX512-BF16 GEMM register tile: bf16 A, bf16 panels, vdpbf16ps (avx512_gemm.h has the body).
 * 12 rows x 32 columns: 24 accumulators, each k-pair 2 weight loads + 12 broadcast A pairs (as memory
 * operands of the dot products) for 24 dot products. */
#include "avx512_gemm.h"

#define QMM__MR_DOT_AVX512 12

static void tile_dot_avx512bf16(const qmm__cpu_tile_args *t)
{
    switch (t->mr) {
    case 1: qmm__tile_rows(1, 1, t); break;
    case 2: qmm__tile_rows(1, 2, t); break;
    case 3: qmm__tile_rows(1, 3, t); break;
    case 4: qmm__tile_rows(1, 4, t); break;
    case 5: qmm__tile_rows(1, 5, t); break;
    case 6: qmm__tile_rows(1, 6, t); break;
    case 7: qmm__tile_rows(1, 7, t); break;
    case 8: qmm__tile_rows(1, 8, t); break;
    case 9: qmm__tile_rows(1, 9, t); break;
    case 10: qmm__tile_rows(1, 10, t); break;
    case 11: qmm__tile_rows(1, 11, t); break;
    default: qmm__tile_rows(1, 12, t); break;
    }
}

void qmm__cpu_fill_avx512bf16_gemm(qmm__cpu_kernels *k);
void qmm__cpu_fill_avx512bf16_gemm(qmm__cpu_kernels *k)
{
    k->tile_dot = tile_dot_avx512bf16;
    k->mr_dot = QMM__MR_DOT_AVX512;
}
