/* The FP8 kernels again, compiled with AVX512_VBMI so that qmm__e4m3_chunk decodes E4M3 with byte
 * permutes (vpermt2b: 6 instructions per 64 weights instead of 14 through binary16 and vcvtph2ps,
 * whose throughput on Zen 4 is about one per 2 cycles). Installed over the AVX512-BF16 entries when
 * the processor has both. */
#include "avx512_gemm.h"
#include "avx512_gemv.h"

static void gemv_fp8_avx512vbmi(const qmm__cpu_gemv_args *x, size_t t0, size_t t1) { qmm__gemv_tiles(QMM__KIND_FP8, 1, x, t0, t1); }

static void panel_fp8_avx512vbmi(const qmm__cpu_weight *w, size_t col0, size_t k0, size_t kc, uint16_t *panel)
{
    qmm__panel_fill(QMM__KIND_FP8, w, col0, k0, kc, panel);
}

void qmm__cpu_fill_avx512vbmi(qmm__cpu_kernels *k)
{
    k->name = "avx512+bf16+vbmi";
    k->gemv_dot[QMM__KIND_FP8] = gemv_fp8_avx512vbmi;
    k->panel[QMM__KIND_FP8] = panel_fp8_avx512vbmi;
}
