/* The C entry point of the tensor-core kernels (kernels_mma.cuh): GEMV (NB = 1) and fused (NB = 2, 4, 8). */
#include "kernels_mma.cuh"

using namespace qmm_mma;


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
    /* fp16 activations meet an fp16 decode where there is one (FP8, NVFP4, MXFP4 whose scale codes span
     * at most QMM__MXFP4_HALF_RANGE: one fp16 MMA per product) and are split into bf16 hi + lo otherwise
     * (two bf16 MMAs). On the H200 the fp16 decode made NVFP4's and MXFP4's fused path 1.9-2.9x faster at
     * M = 16-64, and their GEMV take 6-41% less time at M = 1-8 (BENCHMARKS.md, rows 45-46). The fp16 decodes may carry another
     * power of two than the bf16 ones: FP8 tiles become fp16 values times 2^-QMM__FP8_HALF_FIX (the bf16
     * decode is exact), NVFP4 products w * s times 2^-QMM__NVFP4_HALF_FIX (2^-QMM__NVFP4_FIX in bf16),
     * MXFP4 the same as in bf16; the epilogue's factor takes the difference back, exactly (the fp32 sums
     * round as fp16 MMAs round them, not as the split's). */
    a_form form = kABf16;
    if (a_type == QMM_DTYPE_FP16) {
        form = qmm__cuda_half_decode(w->enc, w->mx_half) ? kAFp16Half : kAFp16Split;
        if (form == kAFp16Half) {
            p.e.alpha_fix *= qmm__cuda_half_fix(w->enc); /* as the host emulation that test_cuda_layout checks */
            if (w->enc == QMM__ENC_MXFP4) p.mx_bias = qmm__mxfp4_bias16(w->mx_off);
        }
    }
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    switch (w->enc) {
    case QMM__ENC_NVFP4: return (int)launch_nvfp4(p, nb, form, sm_count, partial_floats, counter_count, s);
    case QMM__ENC_MXFP4: return (int)launch_mxfp4(p, nb, form, sm_count, partial_floats, counter_count, s);
    case QMM__ENC_FP8: return (int)launch_fp8(p, nb, form, sm_count, partial_floats, counter_count, s);
    default: return (int)cudaErrorInvalidValue;
    }
}
