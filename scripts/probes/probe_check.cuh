/* Shared by the probes in this folder (not part of qmm): CK(call) prints a failed CUDA call's error with
 * its place and exits 1; median_us(launch) times launches; copy_gbs() is the device's copy bandwidth as
 * qmm bench counts it; desc_of builds a no-swizzle wgmma descriptor. */
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

/* The wgmma descriptor of a no-swizzle K-major operand at shared address addr: LBO lbo bytes between
 * 8-column groups, SBO sbo between 8-row groups (the library's kernel reads A in the 128-byte swizzle,
 * wg_desc_sw_of; the probes' layouts are the no-swizzle one) */
__device__ __forceinline__ uint64_t desc_of(uint32_t addr, uint32_t lbo, uint32_t sbo)
{
    return (uint64_t)((addr & 0x3ffff) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32);
}

/* the median time of launch(r) in microseconds: `runs` launches timed after `warm`, by events on stream s
 * (default: the legacy default stream) */
template <class F>
double median_us(F launch, int runs = 20, int warm = 5, cudaStream_t s = 0)
{
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<float> ts;
    for (int r = 0; r < warm + runs; r++) {
        CK(cudaEventRecord(e0, s));
        launch(r);
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        CK(cudaGetLastError());
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r >= warm) ts.push_back(ms * 1000.0f);
    }
    cudaEventDestroy(e0), cudaEventDestroy(e1);
    std::sort(ts.begin(), ts.end());
    return (double)ts[ts.size() / 2];
}

/* the device-to-device copy bandwidth in GB/s, counted as bytes read plus written (as qmm bench counts
 * it): the median of 20 copies of 256 MB after 5, alternating between two destinations */
static inline double copy_gbs()
{
    const size_t cb = (size_t)256 << 20;
    uint8_t *buf = nullptr;
    CK(cudaMalloc(&buf, 3 * cb));
    CK(cudaMemset(buf, 1, 3 * cb));
    const double us = median_us([&](int r) { CK(cudaMemcpyAsync(buf + cb * (r & 1), buf + 2 * cb, cb, cudaMemcpyDeviceToDevice)); });
    CK(cudaFree(buf));
    return 2.0 * cb / (us * 1e-6) / 1e9;
}

#endif
