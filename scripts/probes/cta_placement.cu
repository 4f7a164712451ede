/* Probe, not part of qmm (docs/cuda.md, "Programmatic dependent launch"): how the block scheduler places
 * a grid that is smaller than the device's CTA slots. Each CTA records its SM (%smid) and holds it for
 * about 100 us, so the whole grid is resident at once; the probe prints, per configuration (grid, CTAs
 * per SM allowed by shared memory), how many SMs received 0, 1, 2, ... CTAs. Breadth-first placement
 * gives every SM floor or ceil(grid / SMs); depth-first packing leaves SMs idle while others hold the
 * most that fit. On the H200 an ordinary launch places breadth-first; the question arose from the 16-row
 * WHOLE kernel on (6144, 18432), 40.9 us at M = 9 (75 KB: three CTAs per SM, 240 CTAs) against 32.9 at
 * M = 12 (97 KB: two per SM), which packing would explain and a dependent launch's placement does.
 * Build: nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a scripts/probes/cta_placement.cu
 * Run: ./a.out (prints one line per configuration; exit 1 on a CUDA error) */
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

__global__ void hold(unsigned *smid, long long cycles)
{
    extern __shared__ unsigned char pad[];
    if (threadIdx.x == 0) {
        unsigned s;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
        smid[blockIdx.x] = s;
        pad[0] = (unsigned char)s; /* the shared memory is the point, keep it used */
    }
    const long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}

static int check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
        return 1;
    }
    return 0;
}

int main()
{
    int dev = 0, sms = 0, smem_sm = 0, reserved = 0, optin = 0, clock_khz = 0;
    if (check(cudaGetDevice(&dev), "device") ||
        check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "attribute") ||
        check(cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev), "attribute") ||
        check(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev), "attribute") ||
        check(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), "attribute") ||
        check(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev), "attribute") ||
        check(cudaFuncSetAttribute(hold, cudaFuncAttributeMaxDynamicSharedMemorySize, optin), "smem attribute"))
        return 1;
    std::printf("%d SMs, %d B shared memory per SM, %d reserved per CTA\n", sms, smem_sm, reserved);
    /* (grid, CTAs per SM): the fused and GEMV grids of the default shapes that do not fill their slots */
    const int cfg[][2] = {{240, 3}, {240, 2}, {224, 3}, {224, 2}, {256, 3}, {256, 2}, {448, 4}, {448, 5}, {264, 2}};
    unsigned *d = nullptr;
    if (check(cudaMalloc(&d, 4096 * sizeof(unsigned)), "malloc")) return 1;
    const long long cycles = (long long)clock_khz * 100 / 1000; /* about 100 us */
    for (const auto &c : cfg) {
        const int grid = c[0], per_sm = c[1];
        const size_t smem = (size_t)(smem_sm / per_sm - reserved) / 128 * 128;
        int occ = 0;
        if (check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, hold, 256, smem), "occupancy")) return 1;
        hold<<<grid, 256, smem>>>(d, cycles);
        if (check(cudaGetLastError(), "launch") || check(cudaDeviceSynchronize(), "run")) return 1;
        std::vector<unsigned> ids(grid);
        if (check(cudaMemcpy(ids.data(), d, grid * sizeof(unsigned), cudaMemcpyDeviceToHost), "copy")) return 1;
        std::vector<int> per(sms, 0);
        for (unsigned s : ids)
            if ((int)s < sms) per[s]++;
        std::vector<int> hist(17, 0);
        for (int n : per) hist[n < 16 ? n : 16]++;
        std::printf("grid %d, %d per SM (smem %zu B, occupancy %d): SMs with", grid, per_sm, smem, occ);
        for (int n = 0; n <= 16; n++)
            if (hist[n]) std::printf(" %d CTAs: %d;", n, hist[n]);
        std::printf(" (breadth-first: %d with %d, %d with %d)\n", sms - grid % sms, grid / sms, grid % sms,
                    grid / sms + 1);
    }
    cudaFree(d);
    return 0;
}
