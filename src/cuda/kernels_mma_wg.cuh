/* WG variant of the fused path (sm_90a): 64-row tiles of bf16 activations against E2M1 weights (NVFP4,
 * MXFP4) by wgmma with the decoded weights as its register A operand.
 *
 * A CTA of 9 warps owns 8 strips (128 weight rows, two warpgroups of 64) over one unit of K and one
 * 64-row M tile, as in the other variants (unit_of). Warp 8 is the producer: it streams the strips'
 * weight tiles and scales (the prepared layout, README.md) and the M tile's activations into a ring of
 * kWgStages shared-memory stages of kWgChunks chunks, by bulk copies (cp.async.bulk) that complete on
 * the stage's `full` mbarrier; each consumer warp frees a stage on its `empty` mbarrier once the MMAs
 * that read it are complete. Each consumer warp decodes its strip's 16 bytes per lane per tile exactly
 * as the other variants do (decode_ktile) into wgmma's register A fragments (a warp's part of them has
 * mma.m16n8k16's A layout), and its warpgroup issues one wgmma m64n64k16 per k-tile; the next chunk is
 * decoded while the chunk before it multiplies (wgmma.wait_group 1).
 *
 * The activations are laid out first, by wg_stage_a, into the workspace past the partials in wgmma's
 * no-swizzle K-major order: per M tile and chunk, eight 8-column groups, each of eight 8-row core
 * matrices of 128 bytes (rows past M and columns past K zero). A descriptor's leading byte offset is the
 * step between 8-column groups (1024 bytes), its stride byte offset the step between 8-row groups (128).
 *
 * Bits: with the same unit of K and the same k-tile order per accumulator, wgmma's fp32 sums are those
 * of mma.sync m16n8k16, bit for bit (checked on the H200: scripts/probes/wgmma_rs.cu, 16.7 M partials,
 * none different; and test_cuda's batch invariance against the other variants), so the variant joins the
 * fused path's family without changing any row's bits: same division of K (coarse units run as their
 * fine halves, which sum to the same bits), same split-K reduction and epilogue (finish_unit).
 * On the H200 (BENCHMARKS.md, fifteenth session) it ran M = 33..64 1-26% faster than PIPE on every
 * default shape (NVFP4 (8192, 28672) M = 64 123.1 -> 105.0 us); the standalone probe of the same loop
 * (scripts/probes/wgmma_rs.cu, no epilogue, no layout pass) took 83.5 us there. The launcher
 * (launch_variant) takes it where the division of K has no coarse units. */
#ifndef QMM_CUDA_KERNELS_MMA_WG_CUH
#define QMM_CUDA_KERNELS_MMA_WG_CUH

#include "kernels_mma.cuh"

/* the wgmma code exists only in the sm_90a machine code (arch-specific instructions) */
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define QMM_WG_DEVICE 1
#else
#define QMM_WG_DEVICE 0
#endif

namespace qmm_mma {

constexpr int kWgChunks = 2;                  /* chunks per stage */
constexpr int kWgStages = 3;                  /* stages in the ring: two CTAs per SM */
constexpr int kWgRows = 64;                   /* rows of A per M tile */
constexpr int kWgThreads = kThreads + 32;     /* two consumer warpgroups and the producer warp */
constexpr int kWgChunkA = kWgRows * 64 * 2;   /* bytes of one chunk of one M tile of laid-out A */

template <int ENC>
struct wg_config {
    static constexpr int scale_tile = enc_traits<ENC>::scale_tile;
    static constexpr int w_bytes = kWarps * kWgChunks * 512;
    static constexpr int s_bytes = kWarps * kWgChunks * scale_tile;
    static constexpr int stage = w_bytes + s_bytes + kWgChunks * kWgChunkA;
    static constexpr int bytes = kWgStages * stage + 2 * kWgStages * 8; /* and the mbarriers */
};

/* Lays the 64-row M tiles of A out for the WG kernel: one 16-byte piece (8 columns of one row) per
 * thread; dst holds mtiles * chunks * kWgChunkA bytes. */
template <int ENC> /* one instance per translation unit (encoding) */
__global__ void __launch_bounds__(256) wg_stage_a(mma_params p, uint4 *dst)
{
    const size_t v = (size_t)blockIdx.x * 256 + threadIdx.x, per_tile = (size_t)p.chunks * (kWgChunkA / 16);
    if (v >= per_tile * p.mtiles) return;
    const int mtile = (int)(v / per_tile), rest = (int)(v % per_tile);
    const int c = rest / 512, kc = (rest / 64) % 8, ng = (rest / 8) % 8, r = rest % 8;
    dst[v] = load_a8(p, mtile * kWgRows + ng * 8 + r, c * 64 + kc * 8);
}

/* The PTX of the variant (sm_90, wgmma sm_90a): used only by code compiled for it (the kernel below
 * under QMM_WG_DEVICE, and scripts/probes/wgmma_rs.cu) */
__device__ __forceinline__ uint32_t wg_smem(const void *ptr) { return (uint32_t)__cvta_generic_to_shared(ptr); }
__device__ __forceinline__ void wg_bar_init(uint64_t *b, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(wg_smem(b)), "r"(count));
}
__device__ __forceinline__ void wg_bar_expect(uint64_t *b, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(wg_smem(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void wg_bar_arrive(uint64_t *b)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(wg_smem(b)) : "memory");
}
__device__ __forceinline__ void wg_bar_wait(uint64_t *b, uint32_t parity)
{
    asm volatile("{\n.reg .pred p;\nWAIT_%=: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra WAIT_%=;\n}\n" ::"r"(
                     wg_smem(b)),
                 "r"(parity)
                 : "memory");
}
/* bytes from global to shared memory, completing on mbarrier b; evict-first for the weights (read once
 * per M tile), as the other variants load them */
__device__ __forceinline__ void wg_copy(void *dst, const void *src, uint32_t bytes, uint64_t *b, uint64_t policy)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;\n" ::"r"(
                     wg_smem(dst)),
                 "l"(src), "r"(bytes), "r"(wg_smem(b)), "l"(policy)
                 : "memory");
}
__device__ __forceinline__ uint64_t wg_policy(bool evict_first)
{
    uint64_t pol;
    if (evict_first) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(pol));
    else asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(pol));
    return pol;
}
/* the descriptor of a no-swizzle K-major operand at shared address addr (README of the variant above) */
__device__ __forceinline__ uint64_t wg_desc(uint32_t addr)
{
    constexpr uint64_t lbo = 1024 >> 4, sbo = 128 >> 4;
    return (uint64_t)((addr & 0x3ffff) >> 4) | (lbo << 16) | (sbo << 32);
}
/* the accumulators as operands that the compiler may not move across the asynchronous MMAs */
__device__ __forceinline__ void wg_fence_acc(float (&d)[32])
{
#pragma unroll
    for (int i = 0; i < 32; i++) asm volatile("" : "+f"(d[i])::"memory");
}
/* D (64 x 64, fp32) += A (64 x 16 bf16, registers) * B (16 x 64 bf16, shared memory, K-major) */
__device__ __forceinline__ void wg_mma(float (&d)[32], const uint32_t (&a)[4], uint64_t desc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
                 "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
                 "%31}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
                   "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}

/* The WG kernel (see the top of this file). a_laid: wg_stage_a's output. */
template <int ENC>
__global__ void __launch_bounds__(kWgThreads, 2) mma_kernel_wg(mma_params p, const uint8_t *a_laid)
{
#if QMM_WG_DEVICE
    using cf = wg_config<ENC>;
    extern __shared__ __align__(128) uint8_t smem_wg[];
    uint64_t *full = reinterpret_cast<uint64_t *>(smem_wg + kWgStages * cf::stage), *empty = full + kWgStages;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2;
    /* the CTA's unit (unit_of; the producer warp's strip is one past the group's last) */
    const unit_info u = unit_of(p);
    const int mtile = u.mtile, split = u.split, strip0 = u.strip - warp, c0 = u.c0, c1 = u.c1;
    const int nst = (c1 - c0 + kWgChunks - 1) / kWgChunks;
    if (threadIdx.x == 0) {
        for (int s = 0; s < kWgStages; s++) {
            wg_bar_init(&full[s], 1);
            wg_bar_init(&empty[s], kWarps);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (warp == kWarps) { /* the producer */
        const int nstrips = min(kWarps, p.strips - strip0);
        const uint64_t pol_w = wg_policy(true), pol_a = wg_policy(false);
        for (int i = 0; i < nst; i++) {
            const int s = i % kWgStages, c = c0 + i * kWgChunks, nch = min(kWgChunks, c1 - c);
            if (i >= kWgStages) wg_bar_wait(&empty[s], (i / kWgStages - 1) & 1);
            uint8_t *st = smem_wg + s * cf::stage;
            if (lane == 0) wg_bar_expect(&full[s], (uint32_t)(nstrips * nch * (512 + cf::scale_tile) + nch * kWgChunkA));
            __syncwarp();
            if (lane < nstrips) {
                const size_t tile = (size_t)(strip0 + lane) * p.chunks + c;
                wg_copy(st + lane * kWgChunks * 512, reinterpret_cast<const uint8_t *>(p.data) + tile * 512, nch * 512,
                        &full[s], pol_w);
                wg_copy(st + cf::w_bytes + lane * kWgChunks * cf::scale_tile, p.scales + tile * cf::scale_tile,
                        nch * cf::scale_tile, &full[s], pol_w);
            } else if (lane == kWarps) {
                wg_copy(st + cf::w_bytes + cf::s_bytes, a_laid + ((size_t)mtile * p.chunks + c) * kWgChunkA,
                        nch * kWgChunkA, &full[s], pol_a);
            }
        }
        return;
    }
    /* consumers: warp w decodes strip strip0 + w (zeros past the last strip: the warpgroup's MMAs need
     * all four warps) */
    const bool active = strip0 + warp < p.strips;
    float acc[32];
#pragma unroll
    for (int i = 0; i < 32; i++) acc[i] = 0.0f;
    uint32_t a0[4][4], a1[4][4];
    auto decode = [&](const uint8_t *st, int ch, uint32_t(&a)[4][4]) {
        if (active) {
            const uint4 d = *reinterpret_cast<const uint4 *>(st + warp * kWgChunks * 512 + ch * 512 + lane * 16);
            const uint2 sc = load_scales<ENC>(st + cf::w_bytes + (warp * kWgChunks + ch) * cf::scale_tile +
                                              g * enc_traits<ENC>::scale_lane);
            const uint32_t w[4] = {d.x, d.y, d.z, d.w};
            const tile_factors fc = factors_of<ENC>(p, sc);
#pragma unroll
            for (int j = 0; j < 4; j++) decode_ktile<ENC>(p, w, fc, j, a[j]);
        } else {
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int r = 0; r < 4; r++) a[j][r] = 0u;
        }
    };
    auto issue = [&](const uint32_t(&a)[4][4], uint32_t b) {
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        wg_fence_acc(acc);
#pragma unroll
        for (int j = 0; j < 4; j++) wg_mma(acc, a[j], wg_desc(b + j * 2 * 1024));
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        wg_fence_acc(acc);
    };
    for (int i = 0; i < nst; i++) {
        const int s = i % kWgStages, nch = min(kWgChunks, c1 - (c0 + i * kWgChunks));
        wg_bar_wait(&full[s], (i / kWgStages) & 1);
        const uint8_t *st = smem_wg + s * cf::stage;
        const uint32_t b = wg_smem(st + cf::w_bytes + cf::s_bytes);
        decode(st, 0, a0);
        issue(a0, b);
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory"); /* the stage before is done */
        wg_fence_acc(acc);
        if (i > 0 && lane == 0) wg_bar_arrive(&empty[(i - 1) % kWgStages]);
        if (nch > 1) {
            decode(st, 1, a1);
            issue(a1, b + kWgChunkA);
            asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
            wg_fence_acc(acc);
        }
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    wg_fence_acc(acc);
    /* acc[4 j + e] is the fragment the other variants hold as acc[0][j][e]: W row g (+8 for e >= 2), A row
     * 8 j + 2 t + (e & 1) of the tile */
    if (active) finish_unit<8, 1>(p, reinterpret_cast<const float(&)[1][8][4]>(acc), strip0 + warp, split, mtile, kWgRows);
#else
    (void)p;
    (void)a_laid;
    __trap(); /* never launched: the host checks for sm_90a code first (setup_variant) */
#endif
}

} // namespace qmm_mma

#endif
