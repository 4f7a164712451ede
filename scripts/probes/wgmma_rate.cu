/* Probe, not part of qmm (docs/cuda.md, "Ceilings"): what
 * one register-A wgmma m64nNk16 (bf16, fp32 accumulators) costs the tensor pipe of an SM, by N, with
 * nothing else running: no decode, no copies. The fused path's WG kernels issue one per k-tile per
 * warpgroup and M tile, 229 K of them per SM-wave on (8192, 28672) (128 strip groups of 64 rows x 1792
 * k-tiles over 132 SMs: 1737 per SM); if each costs a + b N cycles, a is the part that no decode work
 * can hide at small N.
 *
 * One CTA per SM of W warpgroups; each warpgroup runs `iters` groups of four wgmmas (A: four constant
 * registers, B: a constant no-swizzle K-major operand in shared memory), as the library's loop does:
 *   CHAINS 1: one accumulator set, wait_group 1 after each group (the library's pattern);
 *   CHAINS 2: two accumulator sets taking turns by group, wait_group 1 (two independent chains).
 * Prints the SM cycles per wgmma per SM (clock64 over the loop, CTA 0..131's median, divided by the
 * wgmmas the SM ran) and the ideal (N / 2 cycles: 4096 bf16 FLOP per cycle per SM), and the sums' check
 * (A and B of ones: each wgmma adds 16 to every accumulator, so each thread's accumulators sum to
 * 16 x 4 x iters x N / 2 over both chains).
 * Build: nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -Isrc -Iinclude -Iscripts/probes
 * scripts/probes/wgmma_rate.cu */
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda/kernels_mma_wg.cuh"
#include "probe_check.cuh"

using namespace qmm_mma;

/* m64n16k16, which the library does not use */
__device__ __forceinline__ void mma16(float (&d)[8], const uint32_t (&a)[4], uint64_t desc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7}, "
                 "{%8, %9, %10, %11}, %12, p, 1, 1, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}
template <int N>
__device__ __forceinline__ void mma_n(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc)
{
    if constexpr (N == 16) mma16(d, a, desc);
    else wg_mma<N>(d, a, desc);
}

template <int N, int W, int CHAINS>
__global__ void __launch_bounds__(128 * W, 1) rate_kernel(int iters, long long *cycles, float *out)
{
    __shared__ __align__(128) uint16_t b[N * 16]; /* one k-tile of B: N rows x 16 columns, bf16 ones */
    for (int i = threadIdx.x; i < N * 16; i += blockDim.x) b[i] = 0x3f80;
    __syncthreads();
    const uint32_t a1 = 0x3f803f80u;
    const uint32_t a[4] = {a1, a1, a1, a1};
    const uint64_t desc = desc_of(smem_addr(b), N * 16, 128); /* probe_check.cuh: no swizzle */
    float d0[N / 2], d1[CHAINS == 2 ? N / 2 : 1];
#pragma unroll
    for (int i = 0; i < N / 2; i++) d0[i] = 0.0f;
#pragma unroll
    for (int i = 0; i < (CHAINS == 2 ? N / 2 : 1); i++) d1[i] = 0.0f;
    __syncthreads();
    const long long t0 = clock64();
    auto group = [&](float(&d)[N / 2]) {
        wg_fence();
        wg_fence_acc(d);
#pragma unroll
        for (int j = 0; j < 4; j++) mma_n<N>(d, a, desc); /* the same B: LBO/SBO as the library's, any content */
        wg_commit();
        wg_fence_acc(d);
        wg_wait<1>();
        wg_fence_acc(d);
    };
#pragma unroll 1
    for (int i = 0; i < iters; i++) {
        if constexpr (CHAINS == 2) {
            if (i & 1) group(d1);
            else group(d0);
        } else {
            group(d0);
        }
    }
    wg_wait<0>();
    wg_fence_acc(d0);
    if constexpr (CHAINS == 2) wg_fence_acc(d1);
    __syncthreads();
    const long long t1 = clock64();
    if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < N / 2; i++) s += d0[i];
    if constexpr (CHAINS == 2)
#pragma unroll
        for (int i = 0; i < N / 2; i++) s += d1[i];
    out[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = s;
}

struct probe {
    int n, w, chains;
    void (*kernel)(int, long long *, float *);
};
template <int N, int W, int CHAINS>
probe make()
{
    return {N, W, CHAINS, rate_kernel<N, W, CHAINS>};
}

int main()
{
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    const int sms = prop.multiProcessorCount, iters = 4096;
    long long *cyc = nullptr;
    float *out = nullptr;
    CK(cudaMalloc(&cyc, sms * sizeof(long long)));
    CK(cudaMalloc(&out, (size_t)sms * 512 * sizeof(float)));
    const probe all[] = {make<16, 1, 1>(),  make<16, 2, 1>(),  make<16, 4, 1>(),  make<32, 1, 1>(),  make<32, 2, 1>(),
                         make<32, 4, 1>(),  make<64, 1, 1>(),  make<64, 2, 1>(),  make<64, 4, 1>(),  make<64, 1, 2>(),
                         make<64, 2, 2>(),  make<128, 1, 1>(), make<128, 2, 1>(), make<128, 4, 1>(), make<128, 1, 2>(),
                         make<192, 2, 1>(), make<256, 1, 1>(), make<256, 2, 1>()};
    std::printf("device %s, %d SMs; %d groups of four wgmmas per warpgroup\n", prop.name, sms, iters);
    std::printf("%4s %3s %6s %14s %14s %10s %6s\n", "N", "WGs", "chains", "cycles/wgmma", "ideal (N/2)", "of peak", "check");
    for (const probe &pr : all) {
        std::vector<long long> c(sms);
        for (int rep = 0; rep < 3; rep++) { /* the last of three launches */
            pr.kernel<<<sms, 128 * pr.w>>>(iters, cyc, out);
            CK(cudaGetLastError());
            CK(cudaDeviceSynchronize());
        }
        CK(cudaMemcpy(c.data(), cyc, sms * sizeof(long long), cudaMemcpyDeviceToHost));
        std::sort(c.begin(), c.end());
        const double per = (double)c[sms / 2] / ((double)iters * 4 * pr.w);
        std::vector<float> o((size_t)sms * 128 * pr.w);
        CK(cudaMemcpy(o.data(), out, o.size() * sizeof(float), cudaMemcpyDeviceToHost));
        /* each accumulator: 16 products of ones per wgmma, 4 per group, over the groups its chain ran */
        const double want = 16.0 * 4 * iters * (pr.n / 2);
        int bad = 0;
        for (float v : o) bad += v != (float)want;
        std::printf("%4d %3d %6d %14.1f %14.1f %9.0f%% %6s\n", pr.n, pr.w, pr.chains, per, pr.n / 2.0,
                    100.0 * (pr.n / 2.0) / per, bad ? "FAIL" : "ok");
    }
    return 0;
}
