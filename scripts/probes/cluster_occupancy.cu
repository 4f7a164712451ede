/* Probe, not part of qmm (docs/cuda.md, "Clusters"): how many clusters of the WG kernel
 * (kernels_mma_wg.cuh, NVFP4, 64- and 128-row CTAs) the current device holds at once, for cluster sizes
 * 1 to 8, under the default (spread) and the load-balancing scheduling policy
 * (cudaOccupancyMaxActiveClusters), against its CTA slots without clusters
 * (cudaOccupancyMaxActiveBlocksPerMultiprocessor times the SMs). A grid whose clusters exceed that
 * number runs a second wave of clusters where the same CTAs without clusters would have run in one.
 * Build: nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -Isrc -Iinclude
 * scripts/probes/cluster_occupancy.cu */
#include <cuda_runtime.h>

#include <cstdio>

#include "cuda/kernels_mma_launch.cuh"

using namespace qmm_mma;

template <int ROWS>
static void report(int sms)
{
    constexpr size_t smem = wg_config<QMM__ENC_NVFP4, ROWS>::bytes;
    auto plain = mma_kernel_wg<QMM__ENC_NVFP4, ROWS, false>;
    auto clustered = mma_kernel_wg<QMM__ENC_NVFP4, ROWS, true>;
    if (cudaFuncSetAttribute(plain, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess ||
        cudaFuncSetAttribute(clustered, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess) {
        std::printf("rows %d: shared memory attribute failed\n", ROWS);
        return;
    }
    int per_sm = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, plain, wg_threads<ROWS>(), smem);
    std::printf("rows %d: smem %zu B, %d CTAs per SM, %d slots without clusters\n", ROWS, smem, per_sm, per_sm * sms);
    const char *names[2] = {"spread", "load-balancing"};
    const cudaClusterSchedulingPolicy pol[2] = {cudaClusterSchedulingPolicySpread, cudaClusterSchedulingPolicyLoadBalancing};
    for (int k = 0; k < 2; k++) {
        std::printf("  %-14s", names[k]);
        for (int c = 1; c <= 8; c++) {
            cudaLaunchAttribute at[3];
            const cudaLaunchConfig_t lc = wg_cluster_config(at, c, wg_threads<ROWS>(), smem, 0, c, false, pol[k]); /* the library's */
            int n = -1;
            const cudaError_t e = cudaOccupancyMaxActiveClusters(&n, clustered, &lc);
            if (e != cudaSuccess) {
                std::printf("  c%d: %s", c, cudaGetErrorString(e));
                (void)cudaGetLastError();
            } else {
                std::printf("  c%d: %3d (%3d CTAs)", c, n, n * c);
            }
        }
        std::printf("\n");
    }
}

int main()
{
    int dev = 0, sms = 0;
    cudaDeviceProp prop;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
        std::printf("no device\n");
        return 77;
    }
    sms = prop.multiProcessorCount;
    std::printf("%s, %d SMs\n", prop.name, sms);
    report<kWgRows>(sms);
    report<128>(sms);
    return 0;
}
