/* The nvfp4 variants of the tensor-core kernels (kernels_mma.cuh, launched by kernels_mma_launch.cuh),
 * one translation unit per encoding so they compile in parallel. */
#include "kernels_mma_launch.cuh"

namespace qmm_mma {
cudaError_t launch_nvfp4(const mma_params &p, int nb, a_form form, int sm, size_t pf, size_t cc, cudaStream_t s)
{
    return launch_encoding<QMM__ENC_NVFP4>(p, nb, form, sm, pf, cc, s);
}
} // namespace qmm_mma
