/* The tensor-core kernels' variants for NVFP4 weights against fp16 activations, through the fp16 decode
 * (kEncNvfp4Half) (kernels_mma.cuh, launched by kernels_mma_launch.cuh): one translation unit per encoding
 * and form of A, so that they compile in parallel. */
#include "kernels_mma_launch.cuh"

namespace qmm_mma {
cudaError_t launch_nvfp4_f16(const mma_params &p, int nb, int sm, size_t pf, size_t cc, cudaStream_t s)
{
    return launch_nb<kEncNvfp4Half, false>(p, nb, sm, pf, cc, s);
}
} // namespace qmm_mma
