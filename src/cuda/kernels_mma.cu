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
    p.whole_part = 0;
    p.aligned = ((uintptr_t)a % 16 == 0) && (lda % 8 == 0);
    /* fp16 activations meet an fp16 decode where the encoding has one (qmm__cuda_half_decode: one fp16 MMA
     * per product; NVFP4 and MXFP4 1.9-2.9x faster than the split at M = 16-64, measured on an H200),
     * else a split of A into bf16 hi + lo; the epilogue's factor takes back the fp16 decode's other power
     * of two (qmm__cuda_half_fix) */
    a_form form = kABf16;
    if (a_type == QMM_DTYPE_FP16) {
        form = qmm__cuda_half_decode(w->enc, w->mx_half) ? kAFp16Half : kAFp16Split;
        if (form == kAFp16Half) {
            p.e.alpha_fix *= qmm__cuda_half_fix(w->enc); /* as the host emulation that test_cuda_layout checks */
            if (w->enc == QMM__ENC_MXFP4) p.mx_bias = qmm__mxfp4_bias16(w->mx_off);
        }
    }
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    const size_t pf = partial_floats, cc = counter_count;
    switch (w->enc) {
    case QMM__ENC_NVFP4:
        return (int)(form == kABf16       ? launch_nvfp4(p, nb, sm_count, pf, cc, s)
                     : form == kAFp16Half ? launch_nvfp4_f16(p, nb, sm_count, pf, cc, s)
                                          : cudaErrorInvalidValue);
    case QMM__ENC_MXFP4:
        return (int)(form == kABf16       ? launch_mxfp4(p, nb, sm_count, pf, cc, s)
                     : form == kAFp16Half ? launch_mxfp4_f16(p, nb, sm_count, pf, cc, s)
                                          : launch_mxfp4_split(p, nb, sm_count, pf, cc, s));
    case QMM__ENC_FP8:
        return (int)(form == kABf16       ? launch_fp8(p, nb, sm_count, pf, cc, s)
                     : form == kAFp16Half ? launch_fp8_f16(p, nb, sm_count, pf, cc, s)
                                          : cudaErrorInvalidValue);
    default: return (int)cudaErrorInvalidValue;
    }
}
