/* Shared by the NVFP4 wgmma probes in this folder (wgmma_rs.cu, wgmma_split.cu; not part of qmm): one
 * problem in qmm's prepared NVFP4 layout, its references and its timing.
 * - Weights: n / 16 strips of 16 rows, a strip's 64-column tiles contiguous, 512 bytes per tile (lane L's
 *   16 bytes at L * 16), their block scales 64 bytes per tile (lane L's 8 at (L / 4) * 8), random.
 * - Activations: mt rows of K, bf16 in +-[2^-7, 2^-6), both row-major (for the references) and in the
 *   stage order of wgmma's no-swizzle K-major operand (chunk of 64 columns, 8-column group kc, 8-row
 *   group ng, row r, element e: LBO = mt * 16 bytes between 8-column groups, SBO = 128 between 8-row
 *   groups).
 * - References: the sums of a kernel's per-split partials against a double-precision product of the
 *   decoded weights (decoded as the kernels decode them); and each partial bitwise against mma.sync
 *   m16n8k16 with the same split and the same k-tile order on one accumulator per 8 columns.
 * - Timing (median_us, probe_check.cuh): over copies of the weights of at least 512 MB in all (far more
 *   than the 50 MB L2), rotated. */
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "cuda/kernels_mma_wg.cuh" /* the library's mbarrier and wgmma helpers and tile decode */
#include "probe_check.cuh"

using namespace qmm_mma;

/* the A fragments of the tile's four k-tiles, decoded and scaled as the library's kernels do (NVFP4, bf16):
 * a[j][r] holds row g + 8 (r & 1), columns 16 j + 2 t + 8 (r >> 1) and the one after */
__device__ __forceinline__ void decode_tile(const mma_params &p, uint4 d, uint2 sc, uint32_t (&a)[4][4])
{
    const uint32_t w[4] = {d.x, d.y, d.z, d.w};
    const tile_factors fc = factors_of<QMM__ENC_NVFP4>(p, sc);
#pragma unroll
    for (int j = 0; j < 4; j++) decode_ktile<QMM__ENC_NVFP4>(p, w, fc, j, a[j]);
}

/* the products by mma.sync m16n8k16, one warp per strip and split */
template <int MT>
__global__ void mma_sync_kernel(mma_params p, const uint8_t *w, const uint8_t *sc, const uint16_t *act, float *out, int n,
                                int chunks, int cps, int splits, int kk)
{
    const int wid = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31, g = lane >> 2,
              t = lane & 3;
    if (wid >= (n / 16) * splits) return;
    const int strip = wid / splits, split = wid % splits;
    float acc[MT / 8][4] = {};
    for (int c = split * cps; c < (split + 1) * cps; c++) {
        const size_t tile = (size_t)strip * chunks + c;
        const uint4 d = *reinterpret_cast<const uint4 *>(w + tile * 512 + lane * 16);
        const uint2 scv = *reinterpret_cast<const uint2 *>(sc + tile * 64 + g * 8);
        uint32_t a[4][4];
        decode_tile(p, d, scv, a);
        for (int j = 0; j < 4; j++) {
            const int k0 = c * 64 + j * 16;
#pragma unroll
            for (int nb = 0; nb < MT / 8; nb++) {
                const uint16_t *ar = act + (size_t)(nb * 8 + g) * kk + k0 + 2 * t;
                const uint32_t b0 = *reinterpret_cast<const uint32_t *>(ar), b1 = *reinterpret_cast<const uint32_t *>(ar + 8);
                qmm__mma_bf16(acc[nb], a[j], b0, b1);
            }
        }
    }
    float *o = out + (size_t)split * MT * n;
#pragma unroll
    for (int nb = 0; nb < MT / 8; nb++)
        for (int e = 0; e < 4; e++) o[(size_t)(8 * nb + 2 * t + (e & 1)) * n + strip * 16 + g + 8 * (e >> 1)] = acc[nb][e];
}

/* each warp decodes one tile (strip, chunk) as the kernels do and writes the dense weight */
__global__ void dequant_kernel(mma_params p, const uint8_t *w, const uint8_t *sc, float *wd, int chunks, int kk)
{
    const int tile = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31, g = lane >> 2,
              t = lane & 3;
    const int strip = tile / chunks, c = tile % chunks;
    const uint4 d = *reinterpret_cast<const uint4 *>(w + (size_t)tile * 512 + lane * 16);
    const uint2 scv = *reinterpret_cast<const uint2 *>(sc + (size_t)tile * 64 + g * 8);
    uint32_t a[4][4];
    decode_tile(p, d, scv, a);
    for (int j = 0; j < 4; j++)
        for (int r = 0; r < 4; r++) {
            const int row = strip * 16 + g + 8 * (r & 1), col = c * 64 + j * 16 + 2 * t + 8 * (r >> 1);
            const uint32_t v = a[j][r];
            wd[(size_t)row * kk + col] = __uint_as_float(v << 16);
            wd[(size_t)row * kk + col + 1] = __uint_as_float(v & 0xffff0000u);
        }
}
__global__ void ref_kernel(const float *wd, const uint16_t *act, float *ref, int n, int kk, int mt)
{
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n * mt) return;
    const int row = idx % n, m = idx / n;
    double s = 0;
    for (int k = 0; k < kk; k++) s += (double)wd[(size_t)row * kk + k] * __uint_as_float((uint32_t)act[(size_t)m * kk + k] << 16);
    ref[(size_t)m * n + row] = (float)s;
}

struct nvfp4_problem {
    int n, kk, mt, chunks, strips;
    std::vector<uint8_t> hw, hs;
    std::vector<uint16_t> ha, hb;
    uint8_t *dw = nullptr, *ds = nullptr, *db = nullptr;
    uint16_t *da = nullptr;
    float *dref = nullptr;
    std::vector<uint8_t *> rw, rs; /* the rotated copies of the weights and scales (rotate()) */

    nvfp4_problem(const mma_params &p, int n_, int kk_, int mt_)
        : n(n_), kk(kk_), mt(mt_), chunks(kk_ / 64), strips(n_ / 16), hw((size_t)strips * chunks * 512),
          hs((size_t)strips * chunks * 64), ha((size_t)mt * kk), hb((size_t)mt * kk)
    {
        uint32_t x = 12345u + n + kk + mt;
        auto rnd = [&]() { x ^= x << 13; x ^= x >> 17; x ^= x << 5; return x; };
        for (auto &v : hw) v = (uint8_t)rnd();
        for (auto &v : hs) v = (uint8_t)(64 + rnd() % 72);
        for (auto &v : ha) v = (uint16_t)(0x3c00 + rnd() % 0x0800) ^ (uint16_t)((rnd() & 1) << 15); /* +-[2^-7, 2^-6) */
        for (int m = 0; m < mt; m++)
            for (int k = 0; k < kk; k++) {
                const int c = k / 64, kc = (k % 64) / 8, e = k % 8, ng = m / 8, r = m % 8;
                hb[(size_t)c * mt * 64 + ((size_t)(kc * (mt / 8) + ng) * 8 + r) * 8 + e] = ha[(size_t)m * kk + k];
            }
        float *dwd;
        CK(cudaMalloc(&dw, hw.size()));
        CK(cudaMalloc(&ds, hs.size()));
        CK(cudaMalloc(&db, hb.size() * 2));
        CK(cudaMalloc(&da, ha.size() * 2));
        CK(cudaMalloc(&dref, (size_t)mt * n * 4));
        CK(cudaMalloc(&dwd, (size_t)n * kk * 4));
        CK(cudaMemcpy(dw, hw.data(), hw.size(), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(ds, hs.data(), hs.size(), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(db, hb.data(), hb.size() * 2, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(da, ha.data(), ha.size() * 2, cudaMemcpyHostToDevice));
        dequant_kernel<<<strips * chunks / 8, 256>>>(p, dw, ds, dwd, chunks, kk);
        ref_kernel<<<(n * mt + 255) / 256, 256>>>(dwd, da, dref, n, kk, mt);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        CK(cudaFree(dwd));
    }
    ~nvfp4_problem()
    {
        for (size_t r = 0; r < rw.size(); r++) cudaFree(rw[r]), cudaFree(rs[r]);
        cudaFree(dw), cudaFree(ds), cudaFree(db), cudaFree(da), cudaFree(dref);
    }
    size_t weight_bytes() const { return hw.size() + hs.size(); }

    /* the largest |sum of the splits' partials - reference| over the largest |reference| */
    double rel_err(const float *dout, int splits) const
    {
        std::vector<float> out((size_t)splits * mt * n), ref((size_t)mt * n);
        CK(cudaMemcpy(out.data(), dout, out.size() * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(ref.data(), dref, ref.size() * 4, cudaMemcpyDeviceToHost));
        double maxerr = 0, maxref = 0;
        for (size_t i = 0; i < ref.size(); i++) {
            float s = 0;
            for (int sp = 0; sp < splits; sp++) s += out[(size_t)sp * mt * n + i];
            maxerr = std::max(maxerr, (double)std::fabs(s - ref[i]));
            maxref = std::max(maxref, (double)std::fabs(ref[i]));
        }
        return maxerr / maxref;
    }

    /* how many of the splits' partials differ bitwise from mma.sync's (MT = mt) */
    template <int MT>
    long long sync_diff(const mma_params &p, const float *dout, int splits) const
    {
        float *dsync;
        CK(cudaMalloc(&dsync, (size_t)splits * MT * n * 4));
        mma_sync_kernel<MT><<<((n / 16) * splits + 7) / 8, 256>>>(p, dw, ds, da, dsync, n, chunks, chunks / splits, splits, kk);
        CK(cudaGetLastError());
        std::vector<float> sy((size_t)splits * MT * n), out(sy.size());
        CK(cudaMemcpy(sy.data(), dsync, sy.size() * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(out.data(), dout, out.size() * 4, cudaMemcpyDeviceToHost));
        long long diff = 0;
        for (size_t i = 0; i < sy.size(); i++) diff += std::memcmp(&sy[i], &out[i], 4) != 0;
        cudaFree(dsync);
        return diff;
    }

    /* copies of the weights and scales for rotate(r): at least 512 MB in all, and two */
    int rotations()
    {
        if (rw.empty()) {
            const int nrot = (int)std::max<size_t>(2, (512u << 20) / weight_bytes() + 1);
            rw.resize(nrot), rs.resize(nrot);
            for (int r = 0; r < nrot; r++) {
                CK(cudaMalloc(&rw[r], hw.size()));
                CK(cudaMalloc(&rs[r], hs.size()));
                CK(cudaMemcpy(rw[r], dw, hw.size(), cudaMemcpyDeviceToDevice));
                CK(cudaMemcpy(rs[r], ds, hs.size(), cudaMemcpyDeviceToDevice));
            }
        }
        return (int)rw.size();
    }
};
