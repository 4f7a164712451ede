/* Shared by the probes in this folder (not part of qmm): CK(call) prints a failed CUDA call's error with
 * its place and exits 1; copy_gbs() is the device's copy bandwidth as qmm bench counts it. */
#ifndef QMM_PROBE_CHECK_CUH
#define QMM_PROBE_CHECK_CUH

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                                      \
    do {                                                                                                           \
        cudaError_t e_ = (x);                                                                                      \
        if (e_ != cudaSuccess) {                                                                                   \
            std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__);                   \
            std::exit(1);                                                                                          \
        }                                                                                                          \
    } while (0)

/* the device-to-device copy bandwidth in GB/s, counted as bytes read plus written (as qmm bench counts
 * it): the median of 20 copies of 256 MB after 5, alternating between two destinations */
static inline double copy_gbs()
{
    const size_t cb = (size_t)256 << 20;
    uint8_t *buf = nullptr;
    CK(cudaMalloc(&buf, 3 * cb));
    CK(cudaMemset(buf, 1, 3 * cb));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<float> ct;
    for (int r = 0; r < 25; r++) {
        CK(cudaEventRecord(e0));
        CK(cudaMemcpyAsync(buf + cb * (r & 1), buf + 2 * cb, cb, cudaMemcpyDeviceToDevice));
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r >= 5) ct.push_back(ms);
    }
    cudaEventDestroy(e0), cudaEventDestroy(e1);
    CK(cudaFree(buf));
    std::sort(ct.begin(), ct.end());
    return 2.0 * cb / (ct[ct.size() / 2] * 1e-3) / 1e9;
}

#endif
