/* The CPU dispatcher: GEMV for small M, the GEMM (dequantize panels, then register tiles) above.
 *
 * The thresholds are the largest M at which the GEMV was faster than the GEMM in both shapes, from
 *   qmm bench --backend cpu --path gemv        --shapes 4096:14336,14336:4096 --m 1,2,3,4,6,8,12,16,24,32
 *   qmm bench --backend cpu --path materialize --shapes 4096:14336,14336:4096 --m 1,2,3,4,6,8,12,16,24,32
 *   (and --m 32,40,48,64 for the quantized formats)
 * on the development machine (2-core AMD EPYC Zen 4 VM, AVX-512 + BF16 + VBMI, 2 threads, bf16 A and
 * output); docs/cpu-notes.md has the tables. The GEMM computes 12 rows at a time and dequantizes its
 * panels for however few rows there are, so below 12 rows it costs what 12 do; the GEMV decodes each
 * weight once per 8 rows of A and stays ahead up to M = 32 for the quantized formats (the two are
 * within 10% of each other from 32 to 64). Dense bf16 needs no decoding, and its GEMM wins from about
 * M = 8. Without bf16 dot products (avx2, generic, fp16 / fp32 A) the same table is used. */
#include "cpu.h"

static const size_t qmm__cpu_gemv_max_m[QMM__KIND_COUNT] = {
    [QMM__KIND_NVFP4] = 32,
    [QMM__KIND_MXFP4] = 32,
    [QMM__KIND_FP8] = 32,
    [QMM__KIND_BF16] = 6,
};

qmm_path qmm__cpu_plan_path(const qmm__cpu_state *s, size_t m, const qmm_weight *w)
{
    (void)s;
    /* The GEMV reads the prepared tiles; an unprepared weight goes through panels from its canonical
     * buffers, which is the GEMM path. */
    if (!w->prepared) return QMM_PATH_MATERIALIZE;
    return m <= qmm__cpu_gemv_max_m[qmm__cpu_kind_of(w->format)] ? QMM_PATH_GEMV : QMM_PATH_MATERIALIZE;
}
