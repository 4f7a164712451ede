/* The tensor-core kernels' variants for FP8 (E4M3) weights against bf16 activations (kernels_mma.cuh,
 * launched by kernels_mma_launch.cuh): one translation unit per encoding and form of A, so that they
 * compile in parallel. */
#include "kernels_mma_launch.cuh"

namespace qmm_mma {
cudaError_t launch_fp8(const mma_params &p, int nb, int sm, size_t pf, size_t cc, cudaStream_t s)
{
    return launch_nb<QMM__ENC_FP8, false>(p, nb, sm, pf, cc, s);
}
} // namespace qmm_mma
