/* The CPU dispatcher: GEMV for small M, the GEMM (dequantize panels, then register tiles) above.
 *
 * The thresholds are the largest M at which the GEMV was still faster than the GEMM, measured with
 *   qmm bench --backend cpu --path gemv        --shapes 4096:14336,14336:4096 --m 1,2,...,32
 *   qmm bench --backend cpu --path materialize --shapes 4096:14336,14336:4096 --m 1,2,...,32
 * on the development machine (2-core AMD EPYC Zen 4 VM, AVX-512 + BF16, 2 threads, bf16 A), both
 * shapes agreeing; see docs/cpu-notes.md for the tables. Without bf16 dot products (avx2, generic,
 * fp16 / fp32 A) the same numbers are used: the GEMV and the GEMM lose the same factor there. */
#include "cpu.h"

static const size_t qmm__cpu_gemv_max_m[QMM__KIND_COUNT] = {
    [QMM__KIND_NVFP4] = 8,
    [QMM__KIND_MXFP4] = 8,
    [QMM__KIND_FP8] = 8,
    [QMM__KIND_BF16] = 8,
};

qmm_path qmm__cpu_plan_path(const qmm__cpu_state *s, size_t m, const qmm_weight *w)
{
    (void)s;
    /* The GEMV reads the prepared tiles; an unprepared weight goes through panels from its canonical
     * buffers, which is the GEMM path. */
    if (!w->prepared) return QMM_PATH_MATERIALIZE;
    return m <= qmm__cpu_gemv_max_m[qmm__cpu_kind_of(w->format)] ? QMM_PATH_GEMV : QMM_PATH_MATERIALIZE;
}
