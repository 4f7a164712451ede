/* The tensor-core kernels' variants for FP8 (E4M3) weights against fp16 activations, through the fp16
 * decode (kEncFp8Half) (kernels_mma.cuh, launched by kernels_mma_launch.cuh): one translation unit per
 * encoding and form of A, so that they compile in parallel. */
#include "kernels_mma_launch.cuh"

namespace qmm_mma {
cudaError_t launch_fp8_f16(const mma_params &p, int nb, int sm, size_t pf, size_t cc, cudaStream_t s)
{
    return launch_nb<kEncFp8Half, false>(p, nb, sm, pf, cc, s);
}
} // namespace qmm_mma
