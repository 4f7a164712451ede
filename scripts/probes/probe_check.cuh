/* Shared by the probes in this folder (not part of qmm): CK(call) prints a failed CUDA call's error with
 * its place and exits 1. */
#ifndef QMM_PROBE_CHECK_CUH
#define QMM_PROBE_CHECK_CUH

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                                                      \
    do {                                                                                                           \
        cudaError_t e_ = (x);                                                                                      \
        if (e_ != cudaSuccess) {                                                                                   \
            std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__);                   \
            std::exit(1);                                                                                          \
        }                                                                                                          \
    } while (0)

#endif
