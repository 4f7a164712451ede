/* WG variant of the fused path (sm_90a): bf16 activations against NVFP4, MXFP4 and FP8 weights by wgmma
 * with the decoded weights as its register A operand, in CTAs of 32, 64, 128, 192 or 256 rows of A (ROWS);
 * fp16 activations the same way against the fp16 decodes (the kernel-side encodings kEncFp8Half,
 * kEncNvfp4Half, kEncMxfp4Half: wgmma's f16 form, the epilogue's factor carrying the change of fix).
 *
 * A CTA of 9 warps (12 at 192 and 256 rows) owns 8 strips (128 weight rows, two warpgroups of 64) over
 * one unit of K and one group of M tiles (one of 32 or 64 rows, or two, three or four of 64: wg_config),
 * as in the other variants
 * (unit_of). Warp 8 is the producer: it streams the strips' weight tiles and scales (the prepared
 * layout, docs/cuda.md) and the group's activations into a ring of shared-memory stages of 128 columns of
 * K (wg_config), by bulk copies (one tensor copy of all 8 strips' weights and one of their scales where wg_maps has maps, else one
 * cp.async.bulk per strip; one or two for the activations: below) that complete on the stage's `full`
 * mbarrier;
 * each consumer warp frees a stage on its `empty` mbarrier once the MMAs that read it are complete.
 * Each consumer warp decodes its strip's 16 bytes per lane per tile exactly as the other variants do
 * (decode_ktile) into wgmma's register A fragments (a warp's part of them has mma.m16n8k16's A
 * layout), and its warpgroup issues one wgmma m64nROWSk16 per k-tile; the next half stage is decoded
 * while the one before it multiplies (wgmma.wait_group 1). 32 and 64 rows (one of the fused path's 32-
 * or 64-row M tiles): two CTAs per SM, three stages; 128 rows (two 64-row M tiles): one CTA per SM,
 * four stages, each weight tile decoded once for both M tiles; 192 and 256 rows (three or four M tiles):
 * one CTA per SM of 12 warps (wg_threads: registers moved to the consumers by setmaxnreg), three stages
 * (two for E4M3 at 256 rows), one buffer of A fragments per warp, the two warpgroups taking turns at the
 * MMAs (wg_turn_wait).
 *
 * The activations: each stage's in boxes of 64 columns (kWgBoxK) of the CTA's rows in wgmma's K-major
 * layout with the 128-byte swizzle, rows past M and columns past K zero. Where A's rows are 16-byte
 * aligned the producer copies them from A itself by a tensor map (wg_maps.a; the copy writes the swizzle),
 * else wg_stage_a lays A out that way in the workspace past the partials first and the producer copies
 * that. A descriptor's start address is a box's (a multiple of 1024 bytes) plus 32 bytes per k-tile, its
 * stride byte offset the step between 8-row groups (1024: eight rows of 128 bytes).
 *
 * The end of a unit: where one wave of clusters holds them (wg_plan_of), the splits of one piece of W
 * run as one thread-block cluster and add their sums through distributed shared memory
 * (wg_reduce_cluster); otherwise through partials in the workspace, in the slots and order of the other
 * variants' finish_unit (wg_finish_unit). Either way in rows of 8 columns (wg_finish8). Coarse units (p.half > 0, CTAs of 128 rows or more only, by the launcher's rule) restart
 * their sum at the half as PIPE's do (pair_stash, pair_join).
 *
 * Bits: with the same unit of K and the same k-tile order per accumulator, wgmma's fp32 sums are those
 * of mma.sync m16n8k16, bit for bit (checked on an H200: scripts/probes/wgmma_rs.cu, 16.7 M partials,
 * none different, at N = 64 and 128; and test_cuda's batch invariance against the other variants), so
 * the variant joins the fused path's family without changing any row's bits: same division of K (coarse
 * units or their fine halves, which sum to the same bits), the same additions of the splits' sums
 * and the same epilogue. Measured on an H200: 64-row CTAs run M = 33..64 1-26% faster than PIPE on every
 * default shape, 128-row ones M = 65..128 up to 22% faster than 64-row CTAs or PIPE's coarse units
 * ((8192, 28672) M = 65: 166.4 against 215.5 us), FP8 M = 33..128 3-51% faster than PIPE ((8192, 28672)
 * M = 64: 94.0 against 134.5 us). The loop has no branch per warp and builds its descriptors by one
 * addition (220 instructions per stage, 5-14% faster at M = 33..64 than 266), and NVFP4 (8192, 28672)
 * M = 64 runs in 83.7 us, the time of the standalone probe of the same loop (no epilogue, no layout
 * pass). The kernel is a dependent launch of wg_stage_a (launch_wg_kernel), its first stages' weights
 * requested before it waits for that grid. The plan (plan_wg.c) says where each runs. */
#ifndef QMM_CUDA_KERNELS_MMA_WG_CUH
#define QMM_CUDA_KERNELS_MMA_WG_CUH

#include <cooperative_groups.h>
#include <cuda.h> /* CUtensorMap, a type only: the library calls the driver through the runtime */

#include "kernels_mma.cuh"

/* the wgmma code exists only in the sm_90a machine code (arch-specific instructions) */
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define QMM_WG_DEVICE 1
#else
#define QMM_WG_DEVICE 0
#endif

namespace qmm_mma {

constexpr int kWgStageK = 128;             /* columns of K per stage: two halves of four k-tiles */
constexpr int kWgRows = 64;                /* rows of A per M tile of the fused path at NB = 8 (unit_of, finish_unit) */
constexpr int kWgThreads = kThreads + 32;  /* two consumer warpgroups and the producer warp */
/* Threads of a CTA of ROWS rows: 192 and 256 rows take the producer's whole warpgroup (its three other warps
 * idle), so that the consumers can take 232 registers each by setmaxnreg, the producer's giving up theirs
 * (ptxas counts a CTA of 9 warps as 12 and gives it 168 registers, too few for 128 accumulators per
 * thread: it serialized the wgmmas) */
template <int ROWS>
__host__ __device__ constexpr int wg_threads() { return ROWS > 2 * kWgRows ? kThreads + 128 : kWgThreads; }
constexpr int kWgSmemMax = 227 * 1024;     /* dynamic shared memory a CTA may opt into on sm_90 */
/* A in shared memory: boxes of kWgBoxK columns of all the CTA's rows, each row 128 bytes in wgmma's
 * 128-byte swizzle (K-major): the 16-byte piece q of row r at q ^ (r % 8), a pattern that repeats every 8
 * rows, 1024 bytes (kWgAlign), from an address that is a multiple of it. The tensor copy writes that
 * layout (CU_TENSOR_MAP_SWIZZLE_128B), and wg_stage_a writes it to global memory where there is no map. */
constexpr int kWgBoxK = 64;
constexpr int kWgAlign = 1024;

/* Chunks (weight tiles of one strip) per stage of the encoding: 2 of 64 columns (E2M1), 4 of 32 (E4M3).
 * A unit that restarts its sum does so at a stage's start, so its half is a multiple of this. */
template <int ENC>
constexpr int wg_stage_chunks() { return kWgStageK / enc_traits<ENC>::tile_k; }

/* Rows of A per M tile of a CTA of `rows` rows: the fused path's tile (32 or 64 rows), two, three or four
 * of them at 128, 192 and 256 */
__host__ __device__ constexpr int wg_tile_rows(int rows) { return rows < kWgRows ? rows : kWgRows; }

/* ROWS: rows of A per CTA, the N of its wgmma: 32 or 64 (one M tile of the fused path's 32- or 64-row
 * tiles, two CTAs per SM, three stages), 128 (two 64-row M tiles, one wgmma m64n128k16 per k-tile, one
 * CTA per SM, four stages), 192 or 256 (three or four M tiles, below). A stage holds `chunks` chunks of each of the 8 strips (and their block
 * scales, none for E4M3) and of A; each half of it, 64 columns (one E2M1 chunk or two E4M3 ones), is
 * decoded into four k-tiles' A fragments. */
template <int ENC, int ROWS = kWgRows>
struct wg_config {
    static_assert(ROWS == 32 || ROWS == kWgRows || ROWS == 2 * kWgRows || ROWS == 3 * kWgRows || ROWS == 4 * kWgRows,
                  "CTAs of 32, 64, 128, 192 or 256 rows");
    static constexpr int scale_tile = enc_traits<ENC>::scale_tile;
    static constexpr int tile_k = enc_traits<ENC>::tile_k;
    static constexpr int ktiles = tile_k / 16;     /* k-tiles of 16 columns per chunk */
    static constexpr int chunks = wg_stage_chunks<ENC>();
    static constexpr int half = chunks / 2;         /* chunks per half stage */
    static constexpr int tile_rows = wg_tile_rows(ROWS); /* rows of A per M tile (p.mtiles) */
    static constexpr int tiles = ROWS / tile_rows;  /* M tiles per CTA */
    static constexpr int chunk_a = ROWS * tile_k * 2; /* bytes of one chunk of laid-out A */
    static constexpr int box_a = ROWS * kWgBoxK * 2;  /* bytes of one box of A (wg_stage_a) */
    static constexpr int a_bytes = chunks * chunk_a;  /* a stage's A (the ring's first part) */
    static constexpr int w_bytes = kWarps * chunks * 512;
    static constexpr int s_bytes = kWarps * chunks * scale_tile;
    static constexpr int ws_bytes = w_bytes + s_bytes; /* a stage's weights and scales (the second part) */
    static constexpr int stage = a_bytes + ws_bytes;
    /* 192 and 256 rows: as many stages as sm_90's 227 KB per CTA hold, at most three (192 rows: E2M1
     * three of 57 KB, E4M3 three of 64 KB; 256 rows: E2M1 three of 73 KB, E4M3 two of 80 KB) */
    static constexpr int fit = (kWgSmemMax - 64) / stage;
    static constexpr int stages = ROWS <= kWgRows ? 3 : ROWS == 2 * kWgRows ? 4 : fit < 3 ? fit : 3;
    /* the ring: every stage's A (each a multiple of kWgAlign bytes, from the start of the CTA's shared
     * memory, which the kernel aligns to kWgAlign), then every stage's weights and scales, then the
     * mbarriers */
    static constexpr int bytes = stages * stage + 2 * stages * 8;
    /* 192 and 256 rows: one buffer of A fragments, the warpgroups taking turns. At 232 registers two buffers
     * compile too (no spill, no serialization), but they run level for E2M1 and 4-7% slower for E4M3
     * (measured on an H200) */
    static constexpr bool single = ROWS > 2 * kWgRows;
    static_assert(half * ktiles == 4 && half * chunk_a == box_a, "a half stage is four k-tiles, one box of A");
    static_assert(stages >= 2 && bytes <= kWgSmemMax, "at least two stages in a CTA's shared memory");
    static_assert(a_bytes % kWgAlign == 0 && kWgStageK % kWgBoxK == 0 && ws_bytes % 128 == 0 && w_bytes % 128 == 0,
                  "A's boxes 1024-byte aligned, the weights and scales 128-byte aligned");
};

/* Lays A out for the WG kernel where its producer cannot copy A by tensor map (wg_maps.a_on = 0: rows of
 * A not 16-byte aligned, or the plan's wg_a_map 0): per tile of ROWS rows, boxes of kWgBoxK columns in the
 * shared-memory layout (kWgBoxK), rows past M and columns past K zero; one 16-byte piece per thread.
 * dst holds ceil(mtiles / wg_config::tiles) * chunks * wg_config::chunk_a bytes (p.mtiles counts tiles of
 * wg_config::tile_rows rows); the producer copies them as they are. */
template <int ENC, int ROWS> /* one instance per translation unit (encoding) */
__global__ void __launch_bounds__(256) wg_stage_a(mma_params p, uint4 *dst)
{
    constexpr int T = wg_config<ENC, ROWS>::tiles, P = kWgBoxK / 8; /* 16-byte pieces per row of a box */
    const size_t v = (size_t)blockIdx.x * 256 + threadIdx.x, per_tile = (size_t)p.chunks * enc_traits<ENC>::tile_k / 8 * ROWS;
    pdl_launch_dependents(); /* the WG kernel, a dependent launch, may start now: it waits before it reads dst */
    if (v >= per_tile * ((p.mtiles + T - 1) / T)) return;
    const int tile = (int)(v / per_tile), rest = (int)(v % per_tile);
    const int b = rest / (ROWS * P), r = (rest / P) % ROWS, q = (rest % P) ^ (r % 8); /* piece rest % P holds q */
    dst[v] = load_a8(p, tile * ROWS + r, b * kWgBoxK + q * 8);
}

/* The PTX of the variant (sm_90, wgmma sm_90a): used only by code compiled for it (the kernel below
 * under QMM_WG_DEVICE, and scripts/probes/wgmma_rs.cu); shared addresses by smem_addr (kernels_mma.cuh) */
__device__ __forceinline__ void wg_bar_init(uint64_t *b, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(b)), "r"(count));
}
__device__ __forceinline__ void wg_bar_expect(uint64_t *b, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void wg_bar_arrive(uint64_t *b)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(b)) : "memory");
}
/* mbarrier waits and shared loads at 32-bit shared addresses (the consumer loop's: computed once, so
 * that ptxas does not rebuild the generic addresses of the shared window at every stage) */
__device__ __forceinline__ void wg_bar_wait_at(uint32_t b, uint32_t parity)
{
    asm volatile("{\n.reg .pred p;\nWAIT_%=: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra WAIT_%=;\n}\n" ::"r"(b),
                 "r"(parity)
                 : "memory");
}
__device__ __forceinline__ void wg_bar_wait(uint64_t *b, uint32_t parity) { wg_bar_wait_at(smem_addr(b), parity); }
__device__ __forceinline__ uint4 wg_lds128(uint32_t addr)
{
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
    return v;
}
__device__ __forceinline__ uint2 wg_lds64(uint32_t addr)
{
    uint2 v;
    asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "r"(addr));
    return v;
}
__device__ __forceinline__ uint32_t wg_lds32(uint32_t addr)
{
    uint32_t v;
    asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr));
    return v;
}
/* This lane's block scale codes of one tile at shared address a (load_scales' form) */
template <int ENC>
__device__ __forceinline__ uint2 wg_load_scales(uint32_t a)
{
    if constexpr (is_nvfp4(ENC)) return wg_lds64(a);
    else if constexpr (is_mxfp4(ENC)) return make_uint2(wg_lds32(a), 0u);
    else return make_uint2(0u, 0u);
}
/* bytes from global to shared memory, completing on mbarrier b; evict-first for the weights (read once
 * per M tile), as the other variants load them */
__device__ __forceinline__ void wg_copy(void *dst, const void *src, uint32_t bytes, uint64_t *b, uint64_t policy)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;\n" ::"r"(
                     smem_addr(dst)),
                 "l"(src), "r"(bytes), "r"(smem_addr(b)), "l"(policy)
                 : "memory");
}
/* The WG producer's tensor maps (wg_maps_for): the prepared weights and their block scales as 2-D tensors of
 * p.strips rows (a strip's tiles are one row of p.chunks * 512 bytes, its scales one of p.chunks *
 * scale_tile), so that one bulk tensor copy brings a stage of all 8 strips of a CTA, where one copy per
 * strip did. on = 0: no maps (unavailable or switched off), one copy per strip. And A as a 2-D tensor
 * of M rows of K bf16 (a_on; its rows 16-byte aligned), read in boxes of kWgBoxK columns and ROWS rows in the
 * 128-byte swizzle, so that no layout pass runs before the kernel; a_on = 0: wg_stage_a's layout, copied as
 * it is. */
struct wg_maps {
    CUtensorMap w, s, a;
    int on, a_on;
};
/* box (x, y) of a 2-D tensor map to shared memory, completing on mbarrier b (as wg_copy; boxes past the
 * tensor's edge are filled with zeros and count in full) */
__device__ __forceinline__ void wg_copy_2d(void *dst, const CUtensorMap *map, int x, int y, uint64_t *b, uint64_t policy)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
                 " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(smem_addr(dst)),
                 "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(smem_addr(b)), "l"(policy)
                 : "memory");
}
__device__ __forceinline__ uint64_t wg_policy(bool evict_first)
{
    uint64_t pol;
    if (evict_first) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(pol));
    else asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(pol));
    return pol;
}
/* The descriptor of a box of A (kWgBoxK: K-major, the 128-byte swizzle) at shared address addr, a multiple
 * of kWgAlign, as its low word (LBO 1: this layout does not read it), and the descriptor of a low word
 * (SBO 1024, the step between 8-row groups; layout type 1, the 128-byte swizzle, in bits 62-63). A k-tile
 * 16 columns further along a box starts 32 bytes later: 2 in the address field, within the row, where the
 * swizzle (of address bits 4-6 by bits 7-9) stays the box's. The descriptors of a run of operands at fixed
 * steps are then one addition each: the address field (bits 13:0, in 16 bytes) takes the step as long as
 * the address stays below 2^18, which the 228 KB of shared memory guarantees. */
__device__ __forceinline__ uint32_t wg_desc_sw_lo(uint32_t addr) { return ((addr & 0x3ffff) >> 4) | (1u << 16); }
__device__ __forceinline__ uint64_t wg_desc_sw_of(uint32_t lo)
{
    return (uint64_t)lo | ((uint64_t)((kWgAlign >> 4) | (1u << 30)) << 32);
}
/* The turns of the two consumer warpgroups (192- and 256-row CTAs): warpgroup w waits for its turn on
 * named barrier 1 + w, which completes when the other warpgroup's 128 threads have passed it the turn
 * (bar.arrive). The barrier's number is a register, not a branch between two constants: with the branch
 * ptxas serializes the wgmmas of the fp16 FP8 instances (C7520, "compiler-inserted WG.AR in divergent
 * path"; the bf16 ones' times are level either way) */
__device__ __forceinline__ void wg_turn_wait(int w)
{
    asm volatile("bar.sync %0, 256;\n" ::"r"(1 + w) : "memory");
}
__device__ __forceinline__ void wg_turn_pass(int w)
{
    asm volatile("bar.arrive %0, 256;\n" ::"r"(2 - w) : "memory");
}
/* wgmma's ordering: the fence before a group's first MMA, the end of a group, the wait until at most N
 * groups are still running */
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wg_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
/* the accumulators as operands that the compiler may not move across the asynchronous MMAs */
template <int N>
__device__ __forceinline__ void wg_fence_acc(float (&d)[N])
{
#pragma unroll
    for (int i = 0; i < N; i++) asm volatile("" : "+f"(d[i])::"memory");
}
/* the operand lists of wg_mma: accumulators d[b .. b + 15], and their numbers in the instruction's text */
#define QMM_WG_D4(b) "+f"(d[b]), "+f"(d[(b) + 1]), "+f"(d[(b) + 2]), "+f"(d[(b) + 3])
#define QMM_WG_D16(b) QMM_WG_D4(b), QMM_WG_D4((b) + 4), QMM_WG_D4((b) + 8), QMM_WG_D4((b) + 12)
#define QMM_WG_N0 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
#define QMM_WG_N16 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define QMM_WG_N32 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47"
#define QMM_WG_N48 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define QMM_WG_N64 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79"
#define QMM_WG_N80 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define QMM_WG_N96 "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111"
#define QMM_WG_N112 "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
/* D (64 x N, fp32) += A (64 x 16, registers) * B (16 x N, shared memory, K-major), N = 32, 64, 128, 192,
 * 256; A and B bf16, or fp16 where F16 (the fp16 decodes against fp16 activations) */
template <int N, bool F16 = false>
__device__ void wg_mma(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc);
/* wg_mma<N, F16> (QMM_WG_MMA_T, T the operands' type in the instruction) for both types (QMM_WG_MMA): ACC
 * the accumulators' operand numbers, A_DESC those of A's four registers and the descriptor, then the
 * accumulators' operands */
#define QMM_WG_MMA_T(N, F16, T, ACC, A_DESC, ...)                                                             \
    template <>                                                                                                \
    __device__ __forceinline__ void wg_mma<N, F16>(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc)   \
    {                                                                                                          \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                                \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." T "." T " {" ACC "}, " A_DESC           \
                     ", p, 1, 1, 0;\n}\n"                                                                      \
                     : __VA_ARGS__                                                                             \
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));                                 \
    }
#define QMM_WG_MMA(N, ACC, A_DESC, ...)                                                                        \
    QMM_WG_MMA_T(N, false, "bf16", ACC, A_DESC, __VA_ARGS__)                                                   \
    QMM_WG_MMA_T(N, true, "f16", ACC, A_DESC, __VA_ARGS__)
QMM_WG_MMA(32, QMM_WG_N0, "{%16, %17, %18, %19}, %20", QMM_WG_D16(0))
QMM_WG_MMA(64, QMM_WG_N0 ", " QMM_WG_N16, "{%32, %33, %34, %35}, %36", QMM_WG_D16(0), QMM_WG_D16(16))
QMM_WG_MMA(128, QMM_WG_N0 ", " QMM_WG_N16 ", " QMM_WG_N32 ", " QMM_WG_N48, "{%64, %65, %66, %67}, %68",
           QMM_WG_D16(0), QMM_WG_D16(16), QMM_WG_D16(32), QMM_WG_D16(48))
QMM_WG_MMA(192, QMM_WG_N0 ", " QMM_WG_N16 ", " QMM_WG_N32 ", " QMM_WG_N48 ", " QMM_WG_N64 ", " QMM_WG_N80,
           "{%96, %97, %98, %99}, %100", QMM_WG_D16(0), QMM_WG_D16(16), QMM_WG_D16(32), QMM_WG_D16(48), QMM_WG_D16(64),
           QMM_WG_D16(80))
QMM_WG_MMA(256,
           QMM_WG_N0 ", " QMM_WG_N16 ", " QMM_WG_N32 ", " QMM_WG_N48 ", " QMM_WG_N64 ", " QMM_WG_N80 ", " QMM_WG_N96
                     ", " QMM_WG_N112,
           "{%128, %129, %130, %131}, %132", QMM_WG_D16(0), QMM_WG_D16(16), QMM_WG_D16(32), QMM_WG_D16(48),
           QMM_WG_D16(64), QMM_WG_D16(80), QMM_WG_D16(96), QMM_WG_D16(112))
#undef QMM_WG_MMA
#undef QMM_WG_MMA_T
#undef QMM_WG_N0
#undef QMM_WG_N16
#undef QMM_WG_N32
#undef QMM_WG_N48
#undef QMM_WG_N64
#undef QMM_WG_N80
#undef QMM_WG_N96
#undef QMM_WG_N112
#undef QMM_WG_D16
#undef QMM_WG_D4

} // namespace qmm_mma

#include "kernels_mma_wg_end.cuh" /* the end of a unit: kWgClusterMax, wg_reduce_cluster, wg_finish_unit */

namespace qmm_mma {

/* The WG kernel (see the top of this file): ROWS rows of A per CTA (wg_config). maps: the tensor maps of
 * the weights and scales and of A (wg_maps_for), or none; a_laid: where there is none of A, wg_stage_a's
 * output for the same ROWS (else null). */
template <int ENC, int ROWS = kWgRows, bool CLUSTER = false>
__global__ void __launch_bounds__(wg_threads<ROWS>(), ROWS <= kWgRows ? 2 : 1)
    mma_kernel_wg(mma_params p, const uint8_t *a_laid, const __grid_constant__ wg_maps maps)
{
#if QMM_WG_DEVICE
    using cf = wg_config<ENC, ROWS>;
    constexpr int kStages = cf::stages, T = cf::tiles, TR = cf::tile_rows;
    static_assert(kWarps * ROWS * kWgStageRow * 4 <= kStages * cf::stage, "the cluster reduction's staging fits in the ring");
    extern __shared__ __align__(1024) uint8_t smem_wg[]; /* kWgAlign: A's boxes (wg_config) */
    uint64_t *full = reinterpret_cast<uint64_t *>(smem_wg + kStages * cf::stage), *empty = full + kStages;
    uint8_t *const ring_ws = smem_wg + kStages * cf::a_bytes; /* the stages' weights and scales */
    /* unaligned, the swizzle would pair other columns: a failed launch rather than wrong sums */
    if (smem_addr(smem_wg) % kWgAlign != 0) __trap();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2;
    /* the CTA's unit (unit_of over groups of T M tiles, mtile the group's first; the producer warp's
     * strip is one past the group's last): the splits of one piece of W adjacent where they form a
     * cluster, otherwise its M groups, whose CTAs then read the same weights close together in time */
    const unit_info u = unit_of(p, T, CLUSTER);
    const int mtile = u.mtile, split = u.split, strip0 = u.strip - warp, c0 = u.c0, c1 = u.c1;
    const int nst = (c1 - c0 + cf::chunks - 1) / cf::chunks;
    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; s++) {
            wg_bar_init(&full[s], 1);
            wg_bar_init(&empty[s], kWarps);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    /* the producer warp's work */
    auto produce = [&]() {
        const int nstrips = min(kWarps, p.strips - strip0);
        const uint64_t pol_w = wg_policy(true), pol_a = wg_policy(false);
        /* stage i's copies: the weights and scales (w), the activations (a) */
        auto copy = [&](int i, bool w, bool a) {
            const int s = i % kStages, c = c0 + i * cf::chunks, nch = min(cf::chunks, c1 - c);
            uint8_t *st = smem_wg + s * cf::a_bytes, *sw = ring_ws + s * cf::ws_bytes; /* A; weights and scales */
            if (w && lane == 0)
                wg_bar_expect(&full[s], (uint32_t)((maps.on ? cf::w_bytes + cf::s_bytes /* whole boxes */
                                                            : nstrips * nch * (512 + cf::scale_tile)) +
                                                   nch * cf::chunk_a));
            __syncwarp();
            if (maps.on) {
                if (w && lane == 0) {
                    wg_copy_2d(sw, &maps.w, c * 64, strip0, &full[s], pol_w);
                    if constexpr (cf::scale_tile > 0)
                        wg_copy_2d(sw + cf::w_bytes, &maps.s, c * cf::scale_tile, strip0, &full[s], pol_w);
                }
            } else if (w && lane < nstrips) {
                const size_t tile = (size_t)(strip0 + lane) * p.chunks + c;
                wg_copy(sw + lane * cf::chunks * 512, reinterpret_cast<const uint8_t *>(p.data) + tile * 512, nch * 512,
                        &full[s], pol_w);
                if constexpr (cf::scale_tile > 0)
                    wg_copy(sw + cf::w_bytes + lane * cf::chunks * cf::scale_tile, p.scales + tile * cf::scale_tile,
                            nch * cf::scale_tile, &full[s], pol_w);
            }
            if (a && lane == kWarps) {
                if (maps.a_on) /* one tensor copy per box of the stage: the group's rows from its first */
                    for (int b = 0; b * kWgBoxK < nch * cf::tile_k; b++)
                        wg_copy_2d(st + b * cf::box_a, &maps.a, c * cf::tile_k + b * kWgBoxK, mtile * TR, &full[s], pol_a);
                else
                    wg_copy(st, a_laid + ((size_t)(mtile / T) * p.chunks + c) * cf::chunk_a, nch * cf::chunk_a, &full[s], pol_a);
            }
        };
        /* a dependent launch (launch_wg) starts while the kernel before it (wg_stage_a, or where A has a
         * map whatever ran before on the stream) may still run: the first stages' weights, which no
         * kernel of the stream writes, are requested before the wait for it, their activations after */
        const int pre = min(kStages, nst);
        for (int i = 0; i < pre; i++) copy(i, true, false);
        pdl_wait();
        for (int i = 0; i < pre; i++) copy(i, false, true);
        for (int i = pre; i < nst; i++) {
            wg_bar_wait(&empty[i % kStages], (i / kStages - 1) & 1);
            copy(i, true, true);
        }
    };
    if constexpr (cf::single) {
        /* 256 rows: the producer's warpgroup gives up registers for the consumers (64512: 128 threads x 40,
         * 256 x 232). Its path never joins theirs, which ptxas requires to honour setmaxnreg: with
         * CLUSTER it meets them only at the end's barriers (the __syncthreads and the two cluster
         * synchronizations of the consumers' path below). */
        if (warp >= kWarps) {
            asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
            if (warp == kWarps) produce();
            if constexpr (CLUSTER) {
                __syncthreads();
                cooperative_groups::this_cluster().sync();
                cooperative_groups::this_cluster().sync();
            }
            return;
        }
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    } else if (warp == kWarps) { /* the producer */
        produce();
        if constexpr (!CLUSTER) return;
    }
    /* consumers: warp w decodes strip strip0 + w (zeros past the last strip: the warpgroup's MMAs need
     * all four warps); with CLUSTER the producer warp goes on to the end (the synchronizations) */
    const bool active = strip0 + warp < p.strips;
    float acc[ROWS / 2];
#pragma unroll
    for (int i = 0; i < ROWS / 2; i++) acc[i] = 0.0f;
    if (warp < kWarps) {
        uint32_t a0[4][4], a1[4][4]; /* a1 unused where cf::single */
        const int wgi = warp >> 2; /* this warp's warpgroup */
        /* the four k-tiles of half h of the stage at st (chunks h * half .. of it). An inactive warp
         * decodes whatever its strip's slot holds (the producer copies nothing there): a wgmma's rows of
         * D depend only on the same rows of its A, and those rows of an inactive warp are never stored,
         * so no zeros are needed (zeroing them cost 16 instructions and a branch per stage). Units are
         * whole half stages (E4M3: an even number of chunks, the plan's), so that every wgmma is issued
         * unconditionally: one left out under a condition serialized them all (C7520) */
        const uint32_t w_at = smem_addr(ring_ws) + warp * cf::chunks * 512 + lane * 16;
        const uint32_t s_at = smem_addr(ring_ws) + cf::w_bytes + warp * cf::chunks * cf::scale_tile + g * enc_traits<ENC>::scale_lane;
        auto decode = [&](uint32_t so, int h, uint32_t(&a)[4][4]) {
#pragma unroll
            for (int q = 0; q < cf::half; q++) {
                const int ch = h * cf::half + q;
                const uint4 d = wg_lds128(w_at + so + ch * 512);
                const uint2 sc = wg_load_scales<ENC>(s_at + so + ch * cf::scale_tile);
                const uint32_t w[4] = {d.x, d.y, d.z, d.w};
                const tile_factors fc = factors_of<ENC>(p, sc);
#pragma unroll
                for (int j = 0; j < cf::ktiles; j++) decode_ktile<ENC>(p, w, fc, j, a[q * cf::ktiles + j]);
            }
        };
        /* the half stage's four MMAs; lo: the low descriptor word of its box of A, whose k-tiles follow
         * at 32 bytes (wg_desc_sw_lo) */
        auto issue = [&](const uint32_t(&a)[4][4], uint32_t lo) {
            wg_fence();
            wg_fence_acc(acc);
            /* the four descriptors as 64-bit sums on the first: ptxas then adds to the low word only and
             * leaves the high one in place, where a high word rebuilt per descriptor takes two UMOV each */
            const uint64_t d0 = wg_desc_sw_of(lo);
#pragma unroll
            for (int j = 0; j < 4; j++) wg_mma<ROWS, is_half(ENC)>(acc, a[j], d0 + (uint64_t)(j * (32 >> 4)));
            wg_commit();
            wg_fence_acc(acc);
        };
        /* the stages i0 .. i1 - 1 of the unit; the ring's slot, its phase and the descriptor's word
         * advance by steps, not by divisions, and only a unit's last stage may lack its second half */
        const bool short_tail = (c1 - c0) % cf::chunks != 0 && (c1 - c0) % cf::chunks <= cf::half;
        uint32_t lo_ring = wg_desc_sw_lo(smem_addr(smem_wg));
        asm("" : "+r"(lo_ring)); /* kept in a register, not rebuilt from the window's address at every stage */
        const uint32_t full_at = smem_addr(full);
        auto run = [&](int i0, int i1) {
            int s = i0 % kStages, prev = (i0 + kStages - 1) % kStages;
            uint32_t phase = (i0 / kStages) & 1;
            for (int i = i0; i < i1; i++) {
                wg_bar_wait_at(full_at + s * (uint32_t)sizeof(uint64_t), phase); /* &full[s] */
                const uint32_t so = s * cf::ws_bytes;
                /* the stage's descriptor word broadcast from lane 0: ptxas then keeps it, and the eight
                 * descriptors built from it, in uniform registers (UIADD3 and UMOV per wgmma instead of
                 * VIADD, IMAD.MOV and two R2UR) */
                const uint32_t lo = __shfl_sync(0xffffffffu, lo_ring + s * (cf::a_bytes >> 4), 0);
                if constexpr (cf::single) {
                    /* one buffer of A fragments: each half's MMAs complete before the next decode writes it.
                     * The warpgroups take turns (wg_turn): one decodes while the other's MMAs run */
                    auto take_turn = [&](int h) {
                        decode(so, h, a0);
                        wg_turn_wait(wgi);
                        issue(a0, lo + h * (cf::box_a >> 4));
                        wg_turn_pass(wgi);
                        wg_wait<0>();
                        wg_fence_acc(acc);
                    };
                    take_turn(0);
                    if (i + 1 < nst || !short_tail) take_turn(1);
                    if (lane == 0) wg_bar_arrive(&empty[s]); /* the stage's MMAs are complete */
                } else {
                    decode(so, 0, a0);
                    issue(a0, lo);
                    wg_wait<1>(); /* the stage before is done */
                    wg_fence_acc(acc);
                    if (i > 0 && lane == 0) wg_bar_arrive(&empty[prev]);
                    if (i + 1 < nst || !short_tail) {
                        decode(so, 1, a1);
                        issue(a1, lo + (cf::box_a >> 4));
                        wg_wait<1>();
                        wg_fence_acc(acc);
                    } else {
                        /* the unit's last stage, half of it: its MMAs read a0, which a next stage's decode
                         * would write. No stage follows it, but ptxas cannot know that, and without this
                         * wait it serialized every wgmma (C7513) once the decode lost its branch */
                        wg_wait<0>();
                        wg_fence_acc(acc);
                    }
                }
                prev = s;
                if (++s == kStages) {
                    s = 0;
                    phase ^= 1u;
                }
            }
        };
        /* coarse units (p.half > 0; CTAs of 128 or 256 rows only, over a whole number of stages:
         * the plan): the sum restarts at the half, the first half's sum waiting in the unit's
         * partial slot (pair_stash); outside the loop, so that ptxas keeps the MMAs asynchronous (zeroing
         * the accumulators inside it serialized them; in 64-row CTAs the second loop alone did, for want
         * of registers) */
        const int ih = ROWS > kWgRows && p.half > 0 && c1 - c0 > p.half ? p.half / cf::chunks : nst;
        if (cf::single && wgi == 1) wg_turn_pass(1); /* the first turn is warpgroup 0's */
        run(0, ih);
        if (ROWS > kWgRows && ih < nst) {
            wg_wait<0>();
            wg_fence_acc(acc);
            if (active)
#pragma unroll
                for (int h = 0; h < T; h++)
                    if (mtile + h < p.mtiles)
                        pair_stash<8>(p, *reinterpret_cast<float(*)[1][8][4]>(acc + 32 * h), strip0 + warp, split, mtile + h,
                                      TR);
#pragma unroll
            for (int e = 0; e < ROWS / 2; e++) acc[e] = 0.0f;
            run(ih, nst);
        }
        if (cf::single && wgi == 0) wg_turn_wait(0); /* warpgroup 1's last pass: every arrival is waited for */
        wg_wait<0>();
        wg_fence_acc(acc);
        if (ROWS > kWgRows && active && ih < nst) /* the pair: first half + second (pair_join) */
#pragma unroll
            for (int h = 0; h < T; h++)
                if (mtile + h < p.mtiles)
                    pair_join<8>(p, *reinterpret_cast<float(*)[1][8][4]>(acc + 32 * h), strip0 + warp, split, mtile + h, TR);
    }
    /* acc[TR / 2 * h + 4 j + e] is the fragment the other variants hold as acc[0][j][e] for M tile mtile + h: W
     * row g (+8 for e >= 2), A row 8 j + 2 t + (e & 1) of that tile; a group's tiles past the last hold
     * only the zero rows of the layout and are not stored */
    if constexpr (CLUSTER) {
        /* the splits of this piece of W are the CTAs of one cluster (launch_wg): the ring's memory is free
         * once every warpgroup's MMAs are complete (and every copy, which the consumers waited for) */
        float *stg = reinterpret_cast<float *>(smem_wg);
        __syncthreads();
        if (warp < kWarps) wg_stage<ROWS>(stg + warp * ROWS * kWgStageRow, acc);
        cooperative_groups::this_cluster().sync();
        if (warp < kWarps && active) wg_reduce_cluster<ROWS>(p, stg, p.splits, split, strip0 + warp, mtile);
        cooperative_groups::this_cluster().sync();
    } else if (warp < kWarps && active) {
#pragma unroll
        for (int h = 0; h < T; h++)
            if (mtile + h < p.mtiles)
                wg_finish_unit<TR>(p, acc + TR / 2 * h, strip0 + warp, split, mtile + h);
    }
#else
    (void)p;
    (void)a_laid;
    (void)maps;
    __trap(); /* never launched: the host checks for sm_90a code first (setup_variant) */
#endif
}

} // namespace qmm_mma

#endif
