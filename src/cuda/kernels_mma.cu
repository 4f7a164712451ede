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
    const bool fp16 = a_type == QMM_DTYPE_FP16;
    /* FP8 tiles meet fp16 activations as fp16 values times 2^-QMM__FP8_HALF_FIX (kEncFp8Half): an exact
     * power of two, which the epilogue's factor takes back (the fp32 sums round as fp16 MMAs round them,
     * not as the bf16 hi + lo split did) */
    if (w->enc == QMM__ENC_FP8 && fp16) p.e.alpha_fix *= (float)(1 << QMM__FP8_HALF_FIX);
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    switch (w->enc) {
    case QMM__ENC_NVFP4: return (int)launch_nvfp4(p, nb, fp16, sm_count, partial_floats, counter_count, s);
    case QMM__ENC_MXFP4: return (int)launch_mxfp4(p, nb, fp16, sm_count, partial_floats, counter_count, s);
    case QMM__ENC_FP8: return (int)launch_fp8(p, nb, fp16, sm_count, partial_floats, counter_count, s);
    default: return (int)cudaErrorInvalidValue;
    }
}
