/* Probe, not part of qmm (docs/cuda.md, "The WG kernel"): can
 * register-A wgmma run the NVFP4 decode of qmm's tile layout near the tensor pipe's rate?
 *
 * A CTA = NWG consumer warpgroups (4 strips of qmm's layout, 64 weight rows, each) + 1 producer warp that
 * streams the weight tiles, their scales and the activations into a ring of S shared-memory stages of CH
 * chunks (64 columns of K) by bulk copies (cp.async.bulk) on mbarriers (full: transaction bytes; empty:
 * one arrival per consumer warp). The activations come pre-laid in wgmma's no-swizzle K-major core-matrix
 * order (chunk, 8-column group, 8-row group, 8 rows x 8 columns; LBO = the step between 8-column groups,
 * SBO = 128 bytes between 8-row groups), as a small pass over A would lay them in the library. Each
 * consumer warp decodes its strip's 16 bytes per lane exactly as qmm's kernels do (e2m1_decode and the
 * NVFP4 factors of kernels_mma_tile.cuh) into wgmma's register A fragments, which have the layout of
 * mma.m16n8k16's A, and issues m64nMTk16 against the stage's activations; the next chunk decodes while
 * the previous chunk's group runs (wgmma.wait_group 1). HALF = 1: groups of two k-tiles, three in flight.
 * CH2 = 1: even and odd k-tiles on two accumulator sets. MINB: CTAs per SM. swap = 1 exchanges LBO and
 * SBO (on the H200 an illegal address: LBO is the step along K).
 *
 * Timing: on the one copy of the weights and rotated over copies of 512 MB or more.
 * Checks: the sums of the per-split partials against a double-precision reference built from the same
 * decode, and (MT <= 128, CH2 = 0) each partial bitwise against mma.sync m16n8k16 with the same k-tile
 * order and split. Timing: median of 20 launches after 5.
 * Build: nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -Isrc -Iinclude -Iscripts/probes
 * scripts/probes/wgmma_rs.cu; run with an argument 0..4 (the sets of configurations in main). */
#include <cstdlib>

#include "nvfp4_problem.cuh" /* the problem, its references and timing; the library's helpers */
#include "wgmma_rs_ops.cuh"

constexpr int CH = 2; /* chunks (64 columns of K) per stage */

template <int MT, int NWG = 2>
struct pcfg {
    static constexpr int strips = 4 * NWG, threads = 128 * NWG + 32;
    static constexpr int w_bytes = strips * CH * 512;
    static constexpr int s_bytes = strips * CH * 64;
    static constexpr int b_chunk = MT * 128; /* MT rows x 64 columns x 2 bytes */
    static constexpr int b_bytes = CH * b_chunk;
    static constexpr int stage = w_bytes + s_bytes + b_bytes;
};

__device__ __forceinline__ void bulk_g2s(void *dst, const void *src, uint32_t bytes, uint64_t *bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                     smem_addr(dst)),
                 "l"(src), "r"(bytes), "r"(smem_addr(bar))
                 : "memory");
}
/* k-tiles j0, j0 + 1 only (the half-group form) */
__device__ __forceinline__ void decode_half(const mma_params &p, uint4 d, uint2 sc, int j0, uint32_t (&a)[2][4])
{
    const uint32_t w[4] = {d.x, d.y, d.z, d.w};
    const tile_factors fc = factors_of<QMM__ENC_NVFP4>(p, sc);
#pragma unroll
    for (int jj = 0; jj < 2; jj++) decode_ktile<QMM__ENC_NVFP4>(p, w, fc, j0 + jj, a[jj]);
}

struct probe_args {
    const uint8_t *w, *sc, *b;
    float *out;
    int n, chunks, cps, splits, swap;
};

template <int MT, int S, int HALF, int MINB = 1, int CH2 = 0, int NWG = 2>
__global__ void __launch_bounds__(128 * NWG + 32, MINB) probe_kernel(mma_params p, probe_args q)
{
    using cf = pcfg<MT, NWG>;
    extern __shared__ __align__(1024) uint8_t sm[];
    uint64_t *full = reinterpret_cast<uint64_t *>(sm + S * cf::stage), *empty = full + S;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int split = blockIdx.x % q.splits, sg = blockIdx.x / q.splits;
    const int c0 = split * q.cps, nst = q.cps / CH;
    if (threadIdx.x == 0) {
        for (int s = 0; s < S; s++) {
            wg_bar_init(&full[s], 1);
            wg_bar_init(&empty[s], cf::strips);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (warp == cf::strips) { /* producer */
        for (int i = 0; i < nst; i++) {
            const int s = i % S, c = c0 + i * CH;
            if (i >= S) wg_bar_wait(&empty[s], ((i / S) - 1) & 1);
            uint8_t *st = sm + s * cf::stage;
            if (lane == 0) wg_bar_expect(&full[s], cf::stage);
            __syncwarp();
            for (int ci = lane; ci < 2 * cf::strips + 1; ci += 32) {
                if (ci < cf::strips) {
                    const int strip = sg * cf::strips + ci;
                    bulk_g2s(st + ci * CH * 512, q.w + ((size_t)strip * q.chunks + c) * 512, CH * 512, &full[s]);
                } else if (ci < 2 * cf::strips) {
                    const int strip = sg * cf::strips + ci - cf::strips;
                    bulk_g2s(st + cf::w_bytes + (ci - cf::strips) * CH * 64, q.sc + ((size_t)strip * q.chunks + c) * 64,
                             CH * 64, &full[s]);
                } else {
                    bulk_g2s(st + cf::w_bytes + cf::s_bytes, q.b + (size_t)c * cf::b_chunk, cf::b_bytes, &full[s]);
                }
            }
        }
        return;
    }
    /* consumers: warp w decodes strip sg * 8 + w; warpgroup warp / 4 owns rows 64 * (warp / 4) .. + 63 */
    float acc[MT / 2], acc2[CH2 ? MT / 2 : 1];
#pragma unroll
    for (int i = 0; i < MT / 2; i++) acc[i] = 0.0f;
#pragma unroll
    for (int i = 0; i < (CH2 ? MT / 2 : 1); i++) acc2[i] = 0.0f;
    const uint32_t lbo = q.swap ? 128u : (uint32_t)(MT / 8) * 128u, sbo = q.swap ? (uint32_t)(MT / 8) * 128u : 128u;
    uint32_t a0[4][4], a1[4][4];
    auto issue = [&](const uint32_t(&a)[4][4], uint32_t bsm) {
        wg_fence();
        wg_fence_acc(acc);
        if constexpr (CH2) wg_fence_acc(acc2);
#pragma unroll
        for (int j = 0; j < 4; j++) {
            if constexpr (CH2) {
                if (j & 1) wgmma_rs<MT>(acc2, a[j], desc_of(bsm + j * 2 * (MT / 8) * 128, lbo, sbo));
                else wgmma_rs<MT>(acc, a[j], desc_of(bsm + j * 2 * (MT / 8) * 128, lbo, sbo));
            } else {
                wgmma_rs<MT>(acc, a[j], desc_of(bsm + j * 2 * (MT / 8) * 128, lbo, sbo));
            }
        }
        wg_commit();
        wg_fence_acc(acc);
        if constexpr (CH2) wg_fence_acc(acc2);
    };
    if constexpr (HALF) {
        /* half groups (two k-tiles each), four register buffers, up to three groups in flight while the
         * next half decodes; stage i - 1 is released once its last half group is complete */
        uint32_t hb[4][2][4];
        for (int i = 0; i < nst; i++) {
            const int s = i % S;
            wg_bar_wait(&full[s], (i / S) & 1);
            const uint8_t *st = sm + s * cf::stage;
            const uint32_t bsm = smem_addr(st + cf::w_bytes + cf::s_bytes);
            uint4 d;
            uint2 scv;
#pragma unroll
            for (int hh = 0; hh < 4; hh++) {
                const int ch = hh >> 1;
                if ((hh & 1) == 0) {
                    d = *reinterpret_cast<const uint4 *>(st + warp * CH * 512 + ch * 512 + lane * 16);
                    scv = *reinterpret_cast<const uint2 *>(st + cf::w_bytes + warp * CH * 64 + ch * 64 + g * 8);
                }
                wg_wait<3>();
                wg_fence_acc(acc);
                if (hh == 3 && i > 0 && lane == 0) wg_bar_arrive(&empty[(i - 1) % S]);
                decode_half(p, d, scv, 2 * (hh & 1), hb[hh]);
                wg_fence();
                wg_fence_acc(acc);
#pragma unroll
                for (int jj = 0; jj < 2; jj++) {
                    const int j = 2 * (hh & 1) + jj;
                    wgmma_rs<MT>(acc, hb[hh][jj], desc_of(bsm + ch * cf::b_chunk + j * 2 * (MT / 8) * 128, lbo, sbo));
                }
                wg_commit();
                wg_fence_acc(acc);
            }
        }
    } else {
    for (int i = 0; i < nst; i++) {
            const int s = i % S;
            wg_bar_wait(&full[s], (i / S) & 1);
            const uint8_t *st = sm + s * cf::stage;
            const uint32_t bsm = smem_addr(st + cf::w_bytes + cf::s_bytes);
            {
                const uint4 d = *reinterpret_cast<const uint4 *>(st + warp * CH * 512 + lane * 16);
                const uint2 scv = *reinterpret_cast<const uint2 *>(st + cf::w_bytes + warp * CH * 64 + g * 8);
                decode_tile(p, d, scv, a0);
            }
            issue(a0, bsm);
            wg_wait<1>();
            wg_fence_acc(acc);
            if (i > 0 && lane == 0) wg_bar_arrive(&empty[(i - 1) % S]);
            {
                const uint4 d = *reinterpret_cast<const uint4 *>(st + warp * CH * 512 + 512 + lane * 16);
                const uint2 scv = *reinterpret_cast<const uint2 *>(st + cf::w_bytes + warp * CH * 64 + 64 + g * 8);
                decode_tile(p, d, scv, a1);
            }
            issue(a1, bsm + cf::b_chunk);
            wg_wait<1>();
            wg_fence_acc(acc);
        }
    }
    wg_wait<0>();
    wg_fence_acc(acc);
    if constexpr (CH2) {
        wg_fence_acc(acc2);
#pragma unroll
        for (int i = 0; i < MT / 2; i++) acc[i] += acc2[i];
    }
    /* acc[4j + e]: weight row 16 * warp + g (+8 for e >= 2), batch row 8j + 2t + (e & 1) */
    float *o = q.out + (size_t)split * MT * q.n;
    const int n0 = sg * cf::strips * 16 + warp * 16 + g;
#pragma unroll
    for (int j = 0; j < MT / 8; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) o[(size_t)(8 * j + 2 * t + (e & 1)) * q.n + n0 + 8 * (e >> 1)] = acc[4 * j + e];
    (void)t;
}

template <int MT, int S, int HALF, int MINB = 1, int CH2 = 0, int NWG = 2>
static void run(int n, int kk, int splits, int swap, const mma_params &p)
{
    using cf = pcfg<MT, NWG>;
    const int chunks = kk / 64;
    if (chunks % splits || (chunks / splits) % CH) {
        std::printf("skip: %d chunks do not divide into %d splits of whole stages\n", chunks, splits);
        return;
    }
    nvfp4_problem pb(p, n, kk, MT);
    float *dout;
    CK(cudaMalloc(&dout, (size_t)splits * MT * n * 4));
    CK(cudaMemset(dout, 0xff, (size_t)splits * MT * n * 4));
    probe_args q{pb.dw, pb.ds, pb.db, dout, n, chunks, chunks / splits, splits, swap};
    const size_t smem = (size_t)S * cf::stage + 2 * S * 8;
    CK(cudaFuncSetAttribute(probe_kernel<MT, S, HALF, MINB, CH2, NWG>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const int grid = (n / (cf::strips * 16)) * splits;
    probe_kernel<MT, S, HALF, MINB, CH2, NWG><<<grid, cf::threads, smem>>>(p, q);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    const double rel = pb.rel_err(dout, splits);
    long long diff = -1;
    if constexpr (!CH2 && MT <= 128) diff = pb.sync_diff<MT>(p, dout, splits); /* bitwise against mma.sync */
    /* on the one copy of the weights (which L2 may partly hold from one launch to the next) and rotated
     * over copies of at least 512 MB in all, as qmm bench does */
    const int nrot = pb.rotations();
    auto timed = [&](bool rotate) {
        return median_us([&](int r) {
            probe_args qr = q;
            if (rotate) qr.w = pb.rw[r % nrot], qr.sc = pb.rs[r % nrot];
            probe_kernel<MT, S, HALF, MINB, CH2, NWG><<<grid, cf::threads, smem>>>(p, qr);
        });
    };
    const double us = timed(false), us_rot = timed(true), tf = 2.0 * MT * n * kk / us * 1e-6;
    const double gbs = pb.weight_bytes() / us * 1e-3;
    std::printf("probe MT=%d NWG=%d S=%d HALF=%d MINB=%d CH2=%d N=%d K=%d splits=%d grid=%d swap=%d: rel err %.2g %s, %lld partials differ bitwise from mma.sync | "
                "%.1f us (rotated over %d copies: %.1f us), %.0f TFLOP/s, weights %.0f GB/s\n",
                MT, NWG, S, HALF, MINB, CH2, n, kk, splits, grid, swap, rel, rel < 1e-4 ? "OK" : "BAD", diff,
                us, nrot, us_rot, tf, gbs);
    cudaFree(dout);
}

int main(int argc, char **argv)
{
    mma_params p{};
    for (int i = 0; i < kPow2Count; i++) p.pow2[i] = 1u << kPow2Shifts[i];
    const int which = argc > 1 ? std::atoi(argv[1]) : 0;
    if (which == 4) { /* the WG variant's configuration, one copy against rotated */
        run<64, 3, 0, 2>(8192, 28672, 4, 0, p);
        run<64, 3, 0, 2>(28672, 8192, 1, 0, p);
        run<128, 4, 0>(8192, 28672, 2, 0, p);
    }
    if (which == 3) {
        run<64, 3, 0, 2>(8192, 28672, 4, 0, p);
        run<128, 4, 0>(8192, 28672, 4, 0, p);
        run<64, 3, 0, 2>(1024, 4096, 1, 0, p);
        run<128, 4, 0>(1024, 4096, 2, 0, p);
    }
    if (which == 2) {
        run<64, 3, 0, 2>(8192, 28672, 4, 0, p);
        run<64, 4, 0, 1, 0, 4>(8192, 28672, 4, 0, p);
        run<64, 2, 0, 3>(8192, 28672, 6, 0, p);
        run<64, 3, 0, 2>(28672, 8192, 1, 0, p);
        run<64, 4, 0, 1, 0, 4>(28672, 8192, 1, 0, p);
        run<64, 4, 0, 1, 0, 4>(28672, 8192, 2, 0, p);
        run<64, 3, 0, 2>(6144, 18432, 6, 0, p);
        run<64, 4, 0, 1, 0, 4>(6144, 18432, 12, 0, p);
        run<64, 3, 0, 2>(14336, 4096, 2, 0, p);
        run<64, 4, 0, 1, 0, 4>(14336, 4096, 4, 0, p);
        run<128, 4, 0>(6144, 18432, 4, 0, p);
        run<128, 4, 0>(14336, 4096, 1, 0, p);
        run<256, 3, 1>(4096, 14336, 4, 0, p);
        run<256, 3, 1>(14336, 4096, 1, 0, p);
        run<256, 3, 1>(6144, 18432, 4, 0, p);
    }
    if (which == 1) {
        run<64, 6, 0>(8192, 28672, 2, 0, p);
        run<64, 6, 0, 1, 1>(8192, 28672, 2, 0, p);
        run<64, 3, 0, 2>(8192, 28672, 4, 0, p);
        run<64, 3, 0, 2, 1>(8192, 28672, 4, 0, p);
        run<128, 4, 0>(8192, 28672, 2, 0, p);
        run<128, 4, 0, 1, 1>(8192, 28672, 2, 0, p);
        run<128, 2, 0, 2>(8192, 28672, 4, 0, p);
        run<64, 3, 0, 2>(28672, 8192, 1, 0, p);
        run<64, 3, 0, 2, 1>(28672, 8192, 1, 0, p);
        run<128, 2, 0, 2>(28672, 8192, 1, 0, p);
        run<64, 3, 0, 2>(4096, 14336, 8, 0, p);
        run<64, 3, 0, 2, 1>(4096, 14336, 8, 0, p);
        run<128, 2, 0, 2>(4096, 14336, 8, 0, p);
    }
    if (which == 0) {
        run<64, 6, 0>(8192, 28672, 2, 0, p);
        run<64, 6, 1>(8192, 28672, 2, 0, p);
        run<128, 4, 0>(8192, 28672, 2, 0, p);
        run<128, 4, 1>(8192, 28672, 2, 0, p);
        run<256, 3, 0>(8192, 28672, 2, 0, p);
        run<256, 3, 1>(8192, 28672, 2, 0, p);
        run<64, 6, 1>(28672, 8192, 1, 0, p);
        run<128, 4, 1>(28672, 8192, 1, 0, p);
        run<256, 3, 1>(28672, 8192, 1, 0, p);
        run<64, 6, 1>(28672, 8192, 2, 0, p);
        run<128, 4, 1>(28672, 8192, 2, 0, p);
        run<64, 6, 1>(4096, 14336, 4, 0, p);
        run<128, 4, 1>(4096, 14336, 4, 0, p);
        run<64, 6, 1>(14336, 4096, 2, 0, p);
        run<128, 4, 1>(14336, 4096, 2, 0, p);
        run<64, 6, 1>(6144, 18432, 3, 0, p);
        run<128, 4, 1>(6144, 18432, 3, 0, p);
    }
    return 0;
}
