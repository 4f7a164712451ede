/* The C entry points of the tensor-core kernels (kernels_mma.cuh): a form's setup on the current device
 * (qmm__cuda_mma_setup) and the execution of a plan of the GEMV or fused path (qmm__cuda_mma_run), each
 * handed to the form's translation unit. */
#include "kernels_mma_launch.cuh"

using namespace qmm_mma;

extern "C" int qmm__cuda_mma_setup(int form, int sm_count, qmm__cuda_kernel_facts *facts)
{
    switch ((qmm__cuda_form)form) {
    case QMM__FORM_NVFP4: return (int)setup_nvfp4(sm_count, *facts);
    case QMM__FORM_NVFP4_F16: return (int)setup_nvfp4_f16(sm_count, *facts);
    case QMM__FORM_MXFP4: return (int)setup_mxfp4(sm_count, *facts);
    case QMM__FORM_MXFP4_F16: return (int)setup_mxfp4_f16(sm_count, *facts);
    case QMM__FORM_MXFP4_SPLIT: return (int)setup_mxfp4_split(sm_count, *facts);
    case QMM__FORM_FP8: return (int)setup_fp8(sm_count, *facts);
    case QMM__FORM_FP8_F16: return (int)setup_fp8_f16(sm_count, *facts);
    default: return (int)cudaErrorInvalidValue;
    }
}

extern "C" int qmm__cuda_mma_run(const qmm__cuda_plan *plan, const qmm__cuda_prepared *w, size_t m, const void *a, size_t lda,
                                 const qmm__cuda_epilogue *e, float *partials, size_t partial_floats, unsigned *counters,
                                 void *stream)
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
    p.mtiles = (int)((m + 8 * (size_t)plan->nb - 1) / (8 * (size_t)plan->nb));
    p.partials = partials;
    p.counters = counters;
    p.splits = 1;
    p.cps = p.chunks;
    p.pairs = 0;
    p.half = 0;
    p.whole_part = 0;
    p.aligned = qmm__cuda_a_aligned(a, lda);
    /* fp16 activations meet an fp16 decode where the encoding has one (the forms _F16: one fp16 MMA per
     * product; NVFP4 and MXFP4 1.9-2.9x faster than the split at M = 16-64, measured on an H200), else a
     * split of A into bf16 hi + lo; the epilogue's factor takes back the fp16 decode's other power of two
     * (qmm__cuda_half_fix) */
    if (plan->form == QMM__FORM_NVFP4_F16 || plan->form == QMM__FORM_MXFP4_F16 || plan->form == QMM__FORM_FP8_F16) {
        p.e.alpha_fix *= qmm__cuda_half_fix(w->enc); /* as the host emulation that test_cuda_layout checks */
        if (w->enc == QMM__ENC_MXFP4) p.mx_bias = qmm__mxfp4_bias16(w->mx_off);
    }
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    switch (plan->form) {
    case QMM__FORM_NVFP4: return (int)run_nvfp4(*plan, p, partial_floats, s);
    case QMM__FORM_NVFP4_F16: return (int)run_nvfp4_f16(*plan, p, partial_floats, s);
    case QMM__FORM_MXFP4: return (int)run_mxfp4(*plan, p, partial_floats, s);
    case QMM__FORM_MXFP4_F16: return (int)run_mxfp4_f16(*plan, p, partial_floats, s);
    case QMM__FORM_MXFP4_SPLIT: return (int)run_mxfp4_split(*plan, p, partial_floats, s);
    case QMM__FORM_FP8: return (int)run_fp8(*plan, p, partial_floats, s);
    case QMM__FORM_FP8_F16: return (int)run_fp8_f16(*plan, p, partial_floats, s);
    default: return (int)cudaErrorInvalidValue;
    }
}
