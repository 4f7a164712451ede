/* The tensor-core kernels' forms for MXFP4 weights against fp16 activations (kernels_mma.cuh, launched
 * by kernels_mma_launch.cuh): through the fp16 decode (kEncMxfp4Half) where the weight's scale codes allow
 * it, else with A split into bf16 hi + lo (FP16A). One translation unit per encoding and form of A, so
 * that they compile in parallel. */
#include "kernels_mma_launch.cuh"

namespace qmm_mma {
cudaError_t setup_mxfp4_f16(int sm_count, qmm__cuda_kernel_facts &facts) { return setup_once<kEncMxfp4Half, false>(sm_count, facts); }
cudaError_t setup_mxfp4_split(int sm_count, qmm__cuda_kernel_facts &facts) { return setup_once<QMM__ENC_MXFP4, true>(sm_count, facts); }
cudaError_t run_mxfp4_f16(const qmm__cuda_plan &plan, const mma_params &p, size_t partial_floats, cudaStream_t s)
{
    return launch_form<kEncMxfp4Half, false>(plan, p, partial_floats, s);
}
cudaError_t run_mxfp4_split(const qmm__cuda_plan &plan, const mma_params &p, size_t partial_floats, cudaStream_t s)
{
    return launch_form<QMM__ENC_MXFP4, true>(plan, p, partial_floats, s);
}
} // namespace qmm_mma
