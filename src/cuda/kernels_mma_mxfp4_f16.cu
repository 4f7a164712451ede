/* The tensor-core kernels' variants for MXFP4 weights against fp16 activations (kernels_mma.cuh, launched
 * by kernels_mma_launch.cuh): through the fp16 decode (kEncMxfp4Half) where the weight's scale codes allow
 * it, else with A split into bf16 hi + lo (FP16A). One translation unit per encoding and form of A, so
 * that they compile in parallel. */
#include "kernels_mma_launch.cuh"

namespace qmm_mma {
cudaError_t launch_mxfp4_f16(const mma_params &p, int nb, int sm, size_t pf, size_t cc, cudaStream_t s)
{
    return launch_nb<kEncMxfp4Half, false>(p, nb, sm, pf, cc, s);
}
cudaError_t launch_mxfp4_split(const mma_params &p, int nb, int sm, size_t pf, size_t cc, cudaStream_t s)
{
    return launch_nb<QMM__ENC_MXFP4, true>(p, nb, sm, pf, cc, s);
}
} // namespace qmm_mma
