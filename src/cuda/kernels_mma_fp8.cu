/* The tensor-core kernels' form for FP8 weights against bf16 activations (kernels_mma.cuh, launched
 * by kernels_mma_launch.cuh): one translation unit per encoding and form of A, so that they compile in
 * parallel. */
#include "kernels_mma_launch.cuh"

namespace qmm_mma {
cudaError_t setup_fp8(int sm_count, qmm__cuda_kernel_facts &facts) { return setup_once<QMM__ENC_FP8, false>(sm_count, facts); }
cudaError_t run_fp8(const qmm__cuda_plan &plan, const mma_params &p, size_t partial_floats, cudaStream_t s)
{
    return launch_form<QMM__ENC_FP8, false>(plan, p, partial_floats, s);
}
} // namespace qmm_mma
