/* The C entry point of the tensor-core kernels (kernels_mma.cuh): GEMV (NB = 1) and fused (NB = 2, 4, 8). */
#include <cmath>
#include <cstdlib>

#include "kernels_mma.cuh"

using namespace qmm_mma;

/* NVFP4 with fp16 activations: the fp16 decode (one fp16 MMA per product) on the fused path, where it
 * halves the MMAs of the split (fused M = 16-64 2.1-2.9x faster on the H200, BENCHMARKS.md row 44). The
 * GEMV keeps the split: its limit is the ALU pipe, not the MMAs, and the fp16 decode takes more ALU
 * instructions per register (two shifts and masks, the sign moving apart from the magnitude).
 * QMM_CUDA_GEMV_HALF=1 (a knob for benchmarks, not for use) gives the GEMV the fp16 decode too. */
static bool nvfp4_half(int nb)
{
    static const bool gemv_half = std::getenv("QMM_CUDA_GEMV_HALF") && std::atoi(std::getenv("QMM_CUDA_GEMV_HALF")) == 1;
    return nb >= 2 || gemv_half;
}

extern "C" int qmm__cuda_mma(const qmm__cuda_prepared *w, int nb, size_t m, int a_type, const void *a, size_t lda,
                             const qmm__cuda_epilogue *e, float *partials, size_t partial_floats, unsigned *counters,
                             size_t counter_count, int sm_count, void *stream)
{
    mma_params p;
    p.data = static_cast<const uint4 *>(w->data);
    p.scales = static_cast<const uint8_t *>(w->scales);
    p.a = static_cast<const uint16_t *>(a);
    p.lda = lda;
    p.m = (int)m;
    p.n = (int)w->n;
    p.k = (int)w->k;
    p.strips = (int)w->strips;
    p.chunks = (int)w->chunks;
    p.mx_bias = qmm__mxfp4_bias(w->mx_off);
    for (int i = 0; i < kPow2Count; i++) p.pow2[i] = 1u << kPow2Shifts[i];
    p.e = *e;
    p.mtiles = (int)((m + 8 * (size_t)nb - 1) / (8 * (size_t)nb));
    p.partials = partials;
    p.counters = counters;
    p.splits = 1;
    p.cps = p.chunks;
    p.pairs = 0;
    p.half = 0;
    p.aligned = ((uintptr_t)a % 16 == 0) && (lda % 8 == 0);
    /* fp16 activations meet an fp16 decode where there is one (FP8; NVFP4 but in the GEMV) and are split
     * into bf16 hi + lo otherwise. The fp16 decodes carry another power of two than the bf16 ones: FP8
     * tiles become fp16 values times 2^-QMM__FP8_HALF_FIX (the bf16 decode is exact), NVFP4 products
     * w * s times 2^-QMM__NVFP4_HALF_FIX (2^-QMM__NVFP4_FIX in bf16); the epilogue's factor takes the
     * difference back, exactly (the fp32 sums round as fp16 MMAs round them, not as the split's). */
    a_form form = kABf16;
    if (a_type == QMM_DTYPE_FP16) {
        form = w->enc == QMM__ENC_FP8 || (w->enc == QMM__ENC_NVFP4 && nvfp4_half(nb)) ? kAFp16Half : kAFp16Split;
        if (form == kAFp16Half)
            p.e.alpha_fix *= w->enc == QMM__ENC_FP8 ? ldexpf(1.0f, QMM__FP8_HALF_FIX) : ldexpf(1.0f, QMM__NVFP4_HALF_FIX - QMM__NVFP4_FIX);
    }
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    switch (w->enc) {
    case QMM__ENC_NVFP4: return (int)launch_nvfp4(p, nb, form, sm_count, partial_floats, counter_count, s);
    case QMM__ENC_MXFP4: return (int)launch_mxfp4(p, nb, form, sm_count, partial_floats, counter_count, s);
    case QMM__ENC_FP8: return (int)launch_fp8(p, nb, form, sm_count, partial_floats, counter_count, s);
    default: return (int)cudaErrorInvalidValue;
    }
}
