/* Probe, not part of qmm (BENCHMARKS.md, the causes of the M = 1 and M = 16 targets): how
 * fast can a register-ring kernel stream NVFP4 and FP8 weights of (8192, 28672) through the library's
 * own decode and MMAs, with nothing else in the way: no activations staged (the B fragments come from a small
 * shared buffer that never changes), no split-K reduction, no epilogue, one wave of CTAs?
 *
 * A CTA of 8 warps owns 8 strips (qmm's prepared layout: 16 rows x 64 columns per 512-byte tile for E2M1,
 * x 32 for E4M3, a strip's tiles contiguous) over one of S equal ranges of K; each lane keeps the next D tiles and their
 * scale words in registers and reloads a slot after its tile is computed (the library's ring, with the
 * same two loops: turns without tests while a whole turn follows, then a tail). Per tile, by MODE:
 *   0  loads only: the words and scale words folded by XOR (the ceiling of the access pattern);
 *   1  loads and the decode (factors_of, decode_ktile of the tile's k-tiles), the fragments folded by XOR;
 *   2  loads, decode and MMAs: compute_tile_b with NB groups of 8 rows of A (mma.m16n8k16 x 4 k-tiles x NB),
 *      the B fragments read from shared memory by 16-byte loads as WHOLE reads them.
 * Each configuration is timed over five copies of the weights (rotated; 1.17 GB at FP8's size, far larger
 * than the 50 MB L2): the median of 30 launches after 5. The bandwidth counts the weights and their scales; the copy
 * bandwidth is a device-to-device cudaMemcpy of 256 MB in the same process, counted as bytes read plus
 * written, as `qmm bench` counts it. Prints one line per configuration with ptxas's registers and spill
 * bytes and the CTAs per SM the device holds. Checks: the XOR fold of MODE 0 against the host's.
 * Build: nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -Isrc -Iinclude -Iscripts/probes
 * scripts/probes/decode_ceiling.cu */
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda/kernels_mma_tile.cuh"
#include "probe_check.cuh"

using namespace qmm_mma;

constexpr int kStrips = 8192 / 16, kK = 28672, kCopies = 5;
template <int ENC>
__host__ __device__ constexpr int chunks_of() { return kK / enc_traits<ENC>::tile_k; }
template <int ENC>
__host__ __device__ constexpr size_t copy_bytes() { return (size_t)kStrips * chunks_of<ENC>() * (512 + enc_traits<ENC>::scale_tile); }
constexpr int kBTiles = 4; /* tiles of B fragments in shared memory, cycled so that no load is hoisted */

template <int ENC, int MODE, int NB, int D, int MINB>
__global__ void __launch_bounds__(256, MINB)
    ceiling_kernel(mma_params p, const uint4 *data, const uint8_t *scales, int splits, int cps, uint32_t *out)
{
    __shared__ __align__(16) uint4 bsh[kBTiles][NB][2][32];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2;
    for (int i = threadIdx.x; i < kBTiles * NB * 2 * 32; i += blockDim.x) {
        const uint32_t v = 0x3f803f80u ^ (uint32_t)(i & 7) << 4; /* bf16 pairs near 1 */
        (&bsh[0][0][0][0])[i] = make_uint4(v, v ^ 0x10u, v ^ 0x20u, v ^ 0x30u);
    }
    __syncthreads();
    const int group = blockIdx.x / splits, split = blockIdx.x % splits, strip = group * 8 + warp;
    constexpr int kChunks = chunks_of<ENC>(), ST = enc_traits<ENC>::scale_tile, SL = enc_traits<ENC>::scale_lane;
    const int c0 = split * cps, n = min(kChunks, c0 + cps) - c0;
    const size_t t0 = (size_t)strip * kChunks + c0;
    const uint4 *dq = data + t0 * 32 + lane;
    const uint8_t *sq = scales + t0 * ST + g * SL;
    uint4 ring[D];
    uint2 sring[D];
#pragma unroll
    for (int q = 0; q < D; q++)
        if (q < n) {
            ring[q] = __ldcs(dq + q * 32);
            sring[q] = load_scales<ENC>(sq + q * ST);
        }
    float acc[1][NB][4];
#pragma unroll
    for (int nb = 0; nb < NB; nb++) acc[0][nb][0] = acc[0][nb][1] = acc[0][nb][2] = acc[0][nb][3] = 0.0f;
    uint32_t x = 0;
    auto tile = [&](int c, uint4 d, uint2 sc) {
        if constexpr (MODE == 0) {
            x ^= d.x ^ d.y ^ d.z ^ d.w ^ sc.x ^ sc.y;
        } else if constexpr (MODE == 1) {
            const uint32_t w[4] = {d.x, d.y, d.z, d.w};
            const tile_factors fc = factors_of<ENC>(p, sc);
#pragma unroll
            for (int j = 0; j < enc_traits<ENC>::tile_k / 16; j++) {
                uint32_t a[4];
                decode_ktile<ENC>(p, w, fc, j, a);
                x ^= a[0] ^ a[1] ^ a[2] ^ a[3];
            }
        } else {
            const int bt = c & (kBTiles - 1);
            auto bfetch = [&](int nb, int gi, int) { return bsh[bt][nb][gi][lane]; };
            compute_tile_b<ENC, false, NB, 1>(p, d, sc, bfetch, acc);
        }
    };
    int c = 0;
#pragma unroll 1
    for (; c + 2 * D <= n; c += D)
#pragma unroll
        for (int q = 0; q < D; q++) {
            tile(c + q, ring[q], sring[q]);
            ring[q] = __ldcs(dq + (c + q + D) * 32);
            sring[q] = load_scales<ENC>(sq + (c + q + D) * ST);
        }
#pragma unroll 1
    for (; c < n; c += D)
#pragma unroll
        for (int q = 0; q < D; q++)
            if (c + q < n) {
                tile(c + q, ring[q], sring[q]);
                if (c + q + D < n) {
                    ring[q] = __ldcs(dq + (c + q + D) * 32);
                    sring[q] = load_scales<ENC>(sq + (c + q + D) * ST);
                }
            }
#pragma unroll
    for (int nb = 0; nb < NB; nb++)
        x += __float_as_uint(acc[0][nb][0] + acc[0][nb][1] + acc[0][nb][2] + acc[0][nb][3]);
    out[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = x;
}

struct probe {
    const char *name;
    int enc, mode, nb, d, minb, splits;
    void (*kernel)(mma_params, const uint4 *, const uint8_t *, int, int, uint32_t *);
};

template <int ENC, int MODE, int NB, int D, int MINB>
probe make(const char *name, int splits)
{
    return {name, ENC, MODE, NB, D, MINB, splits, ceiling_kernel<ENC, MODE, NB, D, MINB>};
}

int main()
{
    const size_t per_copy = std::max(copy_bytes<QMM__ENC_NVFP4>(), copy_bytes<QMM__ENC_FP8>());
    std::vector<uint8_t> h(per_copy);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (auto &b : h) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        b = (uint8_t)s;
    }
    uint8_t *dev = nullptr;
    CK(cudaMalloc(&dev, per_copy * kCopies));
    for (int i = 0; i < kCopies; i++) CK(cudaMemcpy(dev + i * per_copy, h.data(), per_copy, cudaMemcpyHostToDevice));
    uint32_t *out = nullptr;
    CK(cudaMalloc(&out, (size_t)4096 * 256 * 4));
    mma_params p = {};
    for (int i = 0; i < kPow2Count; i++) p.pow2[i] = 1u << kPow2Shifts[i];
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));

    const double copy_gbs = ::copy_gbs(); /* probe_check.cuh */
    std::printf("device %s, %d SMs; copy bandwidth %.0f GB/s; shape (8192, 28672): NVFP4 %.1f MB with scales, FP8 %.1f MB\n",
                prop.name, prop.multiProcessorCount, copy_gbs, copy_bytes<QMM__ENC_NVFP4>() / 1e6,
                copy_bytes<QMM__ENC_FP8>() / 1e6);

    constexpr int NV = QMM__ENC_NVFP4, F8 = QMM__ENC_FP8;
    const probe all[] = {
        make<NV, 0, 1, 4, 4>("loads", 8),    make<NV, 0, 1, 8, 2>("loads", 4),    make<NV, 0, 1, 4, 3>("loads", 6),
        make<NV, 1, 1, 4, 4>("decode", 8),   make<NV, 1, 1, 8, 2>("decode", 4),   make<NV, 1, 1, 4, 3>("decode", 6),
        make<NV, 1, 1, 8, 3>("decode", 6),   make<NV, 2, 1, 4, 4>("mma n8", 8),   make<NV, 2, 1, 4, 3>("mma n8", 6),
        make<NV, 2, 1, 8, 3>("mma n8", 6),   make<NV, 2, 2, 4, 4>("mma n16", 8),  make<NV, 2, 2, 4, 3>("mma n16", 6),
        make<NV, 2, 2, 8, 2>("mma n16", 4),  make<NV, 2, 4, 4, 2>("mma n32", 4),  make<NV, 2, 4, 4, 3>("mma n32", 6),
        make<NV, 2, 8, 4, 2>("mma n64", 4),
        make<F8, 0, 1, 4, 4>("loads", 8),    make<F8, 0, 1, 8, 2>("loads", 4),    make<F8, 1, 1, 4, 4>("decode", 8),
        make<F8, 1, 1, 8, 2>("decode", 4),   make<F8, 2, 1, 4, 4>("mma n8", 8),   make<F8, 2, 2, 4, 4>("mma n16", 8),
        make<F8, 2, 2, 8, 2>("mma n16", 4),  make<F8, 2, 4, 4, 2>("mma n32", 4),  make<F8, 2, 8, 4, 2>("mma n64", 4),
    };
    std::printf("%-6s %-8s %3s %2s %4s %6s %5s %4s %6s %9s %8s %6s\n", "format", "mode", "NB", "D", "MINB", "splits", "held",
                "reg", "spill", "us", "GB/s", "%copy");
    for (const probe &pr : all) {
        const bool nv = pr.enc == NV;
        const int chunks = nv ? chunks_of<NV>() : chunks_of<F8>(), st = nv ? 64 : 0, sl = nv ? 8 : 0;
        const size_t bytes = nv ? copy_bytes<NV>() : copy_bytes<F8>(), wbytes = (size_t)kStrips * chunks * 512;
        cudaFuncAttributes fa;
        CK(cudaFuncGetAttributes(&fa, pr.kernel));
        int held = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&held, pr.kernel, 256, 0));
        const int cps = (chunks + pr.splits - 1) / pr.splits, grid = (kStrips / 8) * pr.splits;
        const double us = median_us( /* probe_check.cuh: the median of 30 launches after 5 */
            [&](int r) {
                const uint8_t *base = dev + (r % kCopies) * per_copy;
                pr.kernel<<<grid, 256>>>(p, reinterpret_cast<const uint4 *>(base), base + wbytes, pr.splits, cps, out);
            },
            30, 5);
        const double gbs = bytes / (us * 1e-6) / 1e9;
        std::printf("%-6s %-8s %3d %2d %4d %6d %5d %4d %6d %9.1f %8.0f %6.1f\n", nv ? "nvfp4" : "fp8", pr.name, pr.nb, pr.d,
                    pr.minb, pr.splits, held, fa.numRegs, (int)fa.localSizeBytes, us, gbs, 100.0 * gbs / copy_gbs);
        if (pr.mode == 0 && pr.splits == 8) { /* MODE 0's fold: warp w of CTA 0 folds strip w's first cps tiles */
            std::vector<uint32_t> got(256);
            CK(cudaMemcpy(got.data(), out, 256 * 4, cudaMemcpyDeviceToHost));
            int bad = 0;
            for (int th = 0; th < 256; th++) {
                const int w = th >> 5, lane = th & 31, g = lane >> 2;
                uint32_t x = 0;
                for (int c = 0; c < cps; c++) {
                    const size_t tile = (size_t)w * chunks + c;
                    const uint32_t *d = reinterpret_cast<const uint32_t *>(h.data() + tile * 512 + lane * 16);
                    x ^= d[0] ^ d[1] ^ d[2] ^ d[3];
                    if (st) {
                        const uint32_t *sc = reinterpret_cast<const uint32_t *>(h.data() + wbytes + tile * st + g * sl);
                        x ^= sc[0] ^ sc[1];
                    }
                }
                bad += got[th] != x;
            }
            std::printf("  check: %d of 256 folds differ from the host's\n", bad);
            if (bad) return 1;
        }
    }
    return 0;
}
