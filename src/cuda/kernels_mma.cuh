/* The tensor-core paths: GEMV (M <= 8) and fused (M = 9 up to 2048, as the plan decides: docs/cuda.md),
 * one kernel family.
 *
 * A CTA of 8 warps owns 8 strips of 16 weight rows (128 rows) over one range of K, and 8 * NB rows of
 * A (an "M tile"). The weight tiles (docs/cuda.md) stream from HBM into registers, kDepth tiles ahead per
 * lane, with the evict-first hint since each byte is used once per M tile; one coalesced 16-byte load
 * per lane fills that lane's A fragments of a whole 16 x 64 (E2M1) or 16 x 32 (E4M3) tile. The codes are
 * decoded by bit placement into bf16 pairs and multiplied by the block factor (decode.h), which gives
 * exactly element * block scale times 2^-fix, then mma.sync m16n8k16 multiplies each fragment with NB
 * groups of 8 rows of A in fp32.
 *
 * Activations go through shared memory in a permuted order: in each group of 32 columns (16 words of
 * bf16 pairs) the four words lane t reads as B fragments of the group's two k-tiles (columns 2t, 2t+8,
 * 16+2t, 24+2t and their neighbours) are adjacent, so one 16-byte shared load feeds two MMAs. Row
 * strides are 16 words modulo 32, so the eight lanes of a load phase (two rows) cover the 32 banks.
 * STEP variant: 128 columns a step, double buffered (step s + 1 is loaded into registers while step s
 * computes; fp16 activations of the bf16-decode kernels (FP16A: MXFP4) are split there into
 * exact bf16 hi + lo planes, and each product is two MMAs). WHOLE variant (NB <= 2): the CTA's whole
 * range of K staged once, and only the rows of A that exist plus one zero row that the missing rows
 * alias, so a GEMV at M = 1 stages two rows, not eight.
 *
 * The instruction budget decides the GEMV's speed (kernels_mma_tile.cuh for the tile's share), so the
 * steady state of the weight ring has no predicates and addresses by immediate offsets from pointers
 * bumped once per ring turn.
 *
 * PIPE variant (fused path, NB >= 2, 16-bit activations in 16-byte aligned rows, not split: bf16, or
 * fp16 for the fp16 decodes of FP8 and NVFP4): activations copied by cp.async into row-major stages
 * of 4 weight tiles, 3 deep, read as B fragments by ldmatrix.x4.
 *
 * Split-K where the strips cannot fill the GPU; partials are reduced deterministically by the last unit
 * of each (M tile, strip) to arrive (an atomic counter it resets), in split order, which also applies
 * the epilogue. The split depends on the path (GEMV or fused) and the weight's shape, never on M, and
 * all variants run the same MMAs in the same order, so on one path row m of C is the same whatever the
 * other rows of A. M tiles of one range of W are adjacent in the grid, so they run together and share W
 * through L2.
 *
 * Contents, in order (the parameters, the per-encoding traits and one tile's decode and MMAs,
 * compute_tile_b, are kernels_mma_tile.cuh): loads and staging of A (load_a8, store_a8, stage_config,
 * whole_stride, compute_tile); the end of a unit (partial_slot, pair mode's
 * pair_stash / pair_join, finish_unit with the split-K reduction); unit_of and ring_start; the kernels
 * STEP (mma_kernel), WHOLE (mma_kernel_whole, with pdl_overlap) and PIPE (mma_kernel_pipe, with its
 * cp.async helpers). The host side: the plan (which variant, which division of K) in plan.h, the setup
 * and the launches in kernels_mma_launch.cuh. */
#ifndef QMM_CUDA_KERNELS_MMA_CUH
#define QMM_CUDA_KERNELS_MMA_CUH

#include <cuda_runtime.h>

#include <type_traits>

#include "kernels_mma_tile.cuh"

namespace qmm_mma {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kStepK = 128;
constexpr int kRowW = kStepK / 2 + 16; /* words per staged row of a STEP stage: 80, 16 modulo 32 */
constexpr int kWholeMax = 100 * 1024;  /* shared memory of the WHOLE variant: two CTAs per SM fit */

/* Eight consecutive activations of row r at column k (bf16 or fp16 bits), zero past M and K. */
__device__ __forceinline__ uint4 load_a8(const mma_params &p, int r, int k)
{
    if (r >= p.m || k >= p.k) return make_uint4(0u, 0u, 0u, 0u);
    const uint16_t *ar = p.a + (size_t)r * p.lda + k;
    if (p.aligned && k + 8 <= p.k) return __ldg(reinterpret_cast<const uint4 *>(ar));
    uint32_t w[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const uint32_t lo = k + 2 * i < p.k ? __ldg(ar + 2 * i) : 0u, hi = k + 2 * i + 1 < p.k ? __ldg(ar + 2 * i + 1) : 0u;
        w[i] = lo | (hi << 16);
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

/* Stores 8 activations of columns col .. col + 7 (col a multiple of 8) into a staged row in the permuted
 * order: the pair word w = (col % 32) / 2 + i of a 32-column group goes to t * 4 + kt * 2 + h, where
 * w = kt * 8 + h * 4 + t. bf16 as it is; fp16 split into bf16 hi at the row and lo `plane_words` further. */
template <bool FP16A>
__device__ __forceinline__ void store_a8(uint32_t *row, int col, int plane_words, uint4 v)
{
    const int w0 = (col & 31) >> 1; /* 0, 4, 8 or 12: kt = w0 / 8, h = (w0 / 4) % 2, t = 0 .. 3 */
    uint32_t *dst = row + (col >> 5) * 16 + (w0 >> 3) * 2 + ((w0 >> 2) & 1);
    const uint32_t x[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int t = 0; t < 4; t++) {
        if (FP16A) {
            uint32_t hi, lo;
            qmm__fp16x2_split(x[t], hi, lo);
            dst[4 * t] = hi;
            dst[4 * t + plane_words] = lo;
        } else {
            dst[4 * t] = x[t];
        }
    }
}

template <int ENC, bool FP16A, int NB>
struct stage_config {
    static constexpr int rows = 8 * NB;
    static constexpr int planes = FP16A ? 2 : 1;
    static constexpr int words = rows * kRowW;                    /* one plane of one STEP stage */
    static constexpr int bytes = 2 * planes * words * 4;          /* two stages */
    static constexpr int vecs = rows * (kStepK / 8);              /* 16-byte pieces of A per step */
    static constexpr int per_thread = (vecs + kThreads - 1) / kThreads;
    static constexpr int depth = 4;                               /* W tiles in flight per lane */
    static constexpr int tiles_per_step = kStepK / enc_traits<ENC>::tile_k;
    static constexpr int unroll = depth / tiles_per_step;         /* steps per ring turn */
    static constexpr int tile_words = enc_traits<ENC>::tile_k / 2; /* staged words of A per tile */
};

/* Row stride in words of the WHOLE variant for klen staged columns: 16 modulo 32. */
__host__ __device__ __forceinline__ int whole_stride(int klen)
{
    const int s = klen / 2;
    return s % 32 == 0 ? s + 16 : s;
}

/* compute_tile_b with the B fragments from the permuted staging of the STEP and WHOLE variants: rp[nb]
 * points at this lane's words of the tile's columns in the staged row of group nb (plane 1, the fp16
 * low parts, `plane_words` further). */
template <int ENC, bool FP16A, int NB, int CHAINS>
__device__ __forceinline__ void compute_tile(const mma_params &p, uint4 d, uint2 sc, const uint32_t *const (&rp)[NB],
                                             int plane_words, float (&acc)[CHAINS][NB][4])
{
    compute_tile_b<ENC, FP16A, NB, CHAINS>(
        p, d, sc,
        [&](int nb, int gi, int plane) { return *reinterpret_cast<const uint4 *>(rp[nb] + gi * 16 + plane * plane_words); }, acc);
}

/* The split-K partial of one unit: min(rows, M) rows of A x 16 rows of W, row of A major. */
__device__ __forceinline__ float *partial_slot(const mma_params &p, int strip, int split, int mtile, int rows)
{
    const int mstride = min(rows, p.m);
    return p.partials + (((size_t)mtile * p.strips + strip) * p.splits + split) * mstride * 16;
}

/* Pair mode, a unit covering two fine splits (p.half > 0): at the boundary the first one's sum goes to
 * the unit's own partial slot (pair_stash) and the accumulators restart; at the end it is added back
 * (pair_join), first + second, exactly the sum the reduction forms when the fine splits run as units of
 * their own. Every lane reads back only what it wrote itself. */
template <int NB>
__device__ __forceinline__ void pair_stash(const mma_params &p, float (&acc)[1][NB][4], int strip, int split, int mtile, int rows)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int mvalid = min(rows, p.m - mtile * rows);
    float *slot = partial_slot(p, strip, split, mtile, rows);
#pragma unroll
    for (int nb = 0; nb < NB; nb++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int mi = 8 * nb + 2 * t + (i & 1), r = g + 8 * (i >> 1);
            if (mi < mvalid) slot[mi * 16 + r] = acc[0][nb][i];
            acc[0][nb][i] = 0.0f;
        }
}
template <int NB>
__device__ __forceinline__ void pair_join(const mma_params &p, float (&acc)[1][NB][4], int strip, int split, int mtile, int rows)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int mvalid = min(rows, p.m - mtile * rows);
    const float *slot = partial_slot(p, strip, split, mtile, rows);
#pragma unroll
    for (int nb = 0; nb < NB; nb++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int mi = 8 * nb + 2 * t + (i & 1), r = g + 8 * (i >> 1);
            if (mi < mvalid) acc[0][nb][i] = slot[mi * 16 + r] + acc[0][nb][i];
        }
}

/* After a warp has stored its split's partials of unit (strip, mtile): fences them, counts the warp in on
 * the unit's counter, and returns whether it was the last of the p.splits to arrive (then, the others'
 * partials visible, it resets the counter for the next call and reduces). Warp-uniform. */
__device__ __forceinline__ bool last_arrival(const mma_params &p, int strip, int mtile)
{
    const int lane = threadIdx.x & 31;
    __threadfence();
    __syncwarp(); /* every lane's partials are fenced before lane 0 announces them */
    unsigned prev = 0;
    unsigned *counter = p.counters + (size_t)mtile * p.strips + strip;
    if (lane == 0) prev = atomicAdd(counter, 1u);
    prev = __shfl_sync(0xffffffffu, prev, 0);
    if (prev != (unsigned)p.splits - 1) return false;
    __threadfence();
    if (lane == 0) *counter = 0u; /* ready for the next call */
    return true;
}

/* The end of a unit: the epilogue directly, or split-K partials and the last arrival's reduction. */
template <int NB, int CHAINS>
__device__ __forceinline__ void finish_unit(const mma_params &p, const float (&acc)[CHAINS][NB][4], int strip, int split,
                                            int mtile, int rows)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    float sum[NB][4];
#pragma unroll
    for (int nb = 0; nb < NB; nb++)
#pragma unroll
        for (int i = 0; i < 4; i++) sum[nb][i] = CHAINS == 2 ? acc[0][nb][i] + acc[CHAINS - 1][nb][i] : acc[0][nb][i];
    /* sum[nb][0], [1]: W row g, A rows m0 + 8nb + 2t (+1); sum[nb][2], [3]: W row g + 8 */
    const int n0 = strip * 16 + g, m0 = mtile * rows;
    /* one unit: the epilogue straight from the registers (unrolled: a loop here needs the values by
     * index and makes ptxas spill in PIPE's steady loop, 29 local loads instead of 4 at 64 rows of NVFP4) */
    if (p.splits == 1) {
#pragma unroll
        for (int nb = 0; nb < NB; nb++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int m = m0 + 8 * nb + 2 * t + (i & 1), n = n0 + 8 * (i >> 1);
                if (m < p.m && n < p.n) qmm__epilogue_store(p.e, (size_t)m, (size_t)n, sum[nb][i]);
            }
        return;
    }
    const int mstride = min(rows, p.m);     /* rows of A stored per unit */
    const int mvalid = min(rows, p.m - m0); /* rows of A in this tile */
    float *part = partial_slot(p, strip, 0, mtile, rows);
#pragma unroll
    for (int nb = 0; nb < NB; nb++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int mi = 8 * nb + 2 * t + (i & 1), r = g + 8 * (i >> 1);
            if (mi < mvalid) part[(size_t)split * mstride * 16 + mi * 16 + r] = sum[nb][i];
        }
    if (!last_arrival(p, strip, mtile)) return;
    /* The reduction is a loop that is not unrolled, one inlined epilogue in all. Unrolled, its NB * 4
     * copies of the epilogue (activations, output types, bias) are most of the kernel: PIPE at 64 rows
     * has 34800 instructions that way, of which the steady loop is about 3900, and 12000 without them. A
     * CTA reducing while the others on its SM are in their steady loops stalls them on instruction fetch:
     * Nsight on (28672, 8192) NVFP4 M = 64 at split 2 shows 2.06 cycles per issued instruction waiting
     * for an instruction, against 0.45 at split 1, where every CTA ends at once. The loop runs M = 32..128
     * on the fused path up to 1.24x as fast where K is split (measured on an H200). */
    const size_t ps = (size_t)mstride * 16; /* from one split's partial to the next */
    if constexpr (NB > 1) {
        /* One turn per 8-row group nb (the fused path's tiles): the partials of its four values (rows
         * m0 + 8nb + 2t (+1) of A, rows g and g + 8 of W) are loaded eight splits at a time, 32 loads
         * before any is added, so the turn waits on one L2 round trip per eight splits, not one per
         * value; then one epilogue in a loop over the four sums. Sums from the first partial on (not 0
         * + p0, which would turn -0 into +0 where one split stores its sum directly), in split order,
         * or two by two in pair mode: the bits of the value-by-value loop below. The fused path runs up
         * to 9% faster than with that loop (FP8 per channel M = 64, (4096, 14336): 49.9 against 54.9 us,
         * measured on an H200). */
#pragma unroll 1
        for (int nb = 0; nb < NB; nb++) {
            const int mi0 = 8 * nb + 2 * t;
            if (mi0 >= mvalid) continue;
            const float *pp = part + mi0 * 16 + g;
            const int off[4] = {0, 16, 8, 24}; /* value i: row of A mi0 + (i & 1), row of W g + 8 * (i >> 1) */
            const bool ok[4] = {true, mi0 + 1 < mvalid, true, mi0 + 1 < mvalid};
            float tot[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            for (int s0 = 0; s0 < p.splits; s0 += 8) {
                float v[4][8];
#pragma unroll
                for (int k = 0; k < 8; k++)
#pragma unroll
                    for (int i = 0; i < 4; i++) v[i][k] = ok[i] && s0 + k < p.splits ? __ldcg(pp + off[i] + (s0 + k) * ps) : 0.0f;
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    if (p.pairs) {
#pragma unroll
                        for (int k = 0; k < 8; k += 2)
                            if (s0 + k < p.splits) {
                                const float pr = s0 + k + 1 < p.splits ? v[i][k] + v[i][k + 1] : v[i][k];
                                tot[i] = s0 + k == 0 ? pr : tot[i] + pr;
                            }
                    } else {
#pragma unroll
                        for (int k = 0; k < 8; k++)
                            if (s0 + k < p.splits) tot[i] = s0 + k == 0 ? v[i][k] : tot[i] + v[i][k];
                    }
                }
            }
#pragma unroll 1
            for (int i = 0; i < 4; i++) {
                const int n = n0 + 8 * (i >> 1);
                if (ok[i] && n < p.n) qmm__epilogue_store(p.e, (size_t)(m0 + mi0 + (i & 1)), (size_t)n, tot[i]);
            }
        }
    } else {
        /* The GEMV (one 8-row group): value by value, in split order (pair mode and tall pairs never
         * reach it: pair_split and tall_split need NB >= 2). The group form above makes M = 1 0.3-4.6%
         * slower (NVFP4, four of five default shapes, measured on an H200) while M = 8 gains up to 10%;
         * M = 1 is the path's target, so the GEMV keeps this loop. */
#pragma unroll 1
        for (int j = 0; j < 4; j++) {
            const int mi = 2 * t + (j & 1), r = g + 8 * ((j >> 1) & 1);
            if (mi >= mvalid) continue;
            /* from the first partial on (not 0 + p0, which would turn -0 into +0 where one split stores its
             * sum directly) */
            const float *pp = part + mi * 16 + r;
            float tot = __ldcg(pp);
            for (int sp_i = 1; sp_i < p.splits; sp_i++) tot += __ldcg(pp + sp_i * ps);
            const int n = n0 + 8 * ((j >> 1) & 1);
            if (n < p.n) qmm__epilogue_store(p.e, (size_t)(m0 + mi), (size_t)n, tot);
        }
    }
}

/* The unit this warp works on, from the grid of (strip group, split, M tile), M tiles fastest. */
struct unit_info {
    int strip, split, mtile, c0, c1;
    bool active;
};

__device__ __forceinline__ unit_info unit_of(const mma_params &p, int tiles = 1, bool split_fastest = false)
{
    unit_info u;
    /* tiles > 1 (the WG variant's 128-row CTAs): groups of that many M tiles, u.mtile the group's first;
     * split_fastest (the WG variant): the splits of one piece of W adjacent (a cluster), then its M groups */
    const int mgroups = (p.mtiles + tiles - 1) / tiles;
    int mg, rest;
    if (split_fastest) {
        u.split = blockIdx.x % p.splits;
        rest = blockIdx.x / p.splits;
        mg = rest % mgroups;
        rest /= mgroups;
    } else {
        mg = blockIdx.x % mgroups;
        rest = blockIdx.x / mgroups;
        u.split = rest % p.splits;
        rest /= p.splits;
    }
    u.mtile = mg * tiles;
    u.strip = rest * kWarps + (threadIdx.x >> 5);
    u.active = u.strip < p.strips;
    u.c0 = u.split * p.cps;
    u.c1 = min(u.c0 + p.cps, p.chunks);
    return u;
}

/* The first D weight tiles of this lane's unit of n tiles (none for a warp past the last strip) into
 * the ring, and the pointers at the unit's first tile that the later loads offset. */
template <int ENC, int D>
__device__ __forceinline__ void ring_start(const mma_params &p, const unit_info &u, int n, int lane, int g,
                                           const uint4 *&dq, const uint8_t *&sq, uint4 (&ring)[D], uint2 (&sring)[D])
{
    using tr = enc_traits<ENC>;
    const size_t first = ((size_t)(u.active ? u.strip : 0) * p.chunks + u.c0);
    dq = p.data + first * 32 + lane;
    sq = p.scales ? p.scales + first * tr::scale_tile + g * tr::scale_lane : nullptr;
#pragma unroll
    for (int q = 0; q < D; q++)
        if (u.active && q < n) {
            ring[q] = __ldcs(dq + q * 32);
            sring[q] = load_scales<ENC>(sq + q * tr::scale_tile);
        }
}

/* STEP: activations staged 128 columns at a time, double buffered (any NB; a barrier per step). */
template <int ENC, bool FP16A, int NB>
__global__ void __launch_bounds__(kThreads, NB <= 2 ? 3 : 2) mma_kernel(mma_params p)
{
    using cfg = stage_config<ENC, FP16A, NB>;
    using tr = enc_traits<ENC>;
    constexpr int CHAINS = NB == 1 ? 2 : 1;
    extern __shared__ __align__(16) uint32_t smem[];
    const int tid = threadIdx.x, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const unit_info u = unit_of(p);
    const int c0 = u.c0, c1 = u.c1;
    const int steps = (c1 - c0 + cfg::tiles_per_step - 1) / cfg::tiles_per_step;
    const int m0 = u.mtile * cfg::rows;

    const uint4 *dp = p.data + (size_t)(u.active ? u.strip : 0) * p.chunks * 32 + lane;
    const uint8_t *sp = p.scales ? p.scales + (size_t)(u.active ? u.strip : 0) * p.chunks * tr::scale_tile + g * tr::scale_lane : nullptr;
    uint4 ring[cfg::depth];
    uint2 sring[cfg::depth];
#pragma unroll
    for (int q = 0; q < cfg::depth; q++)
        if (u.active && c0 + q < c1) {
            ring[q] = __ldcs(dp + (size_t)(c0 + q) * 32);
            sring[q] = load_scales<ENC>(sp + (size_t)(c0 + q) * tr::scale_tile);
        }

    uint4 stage_regs[cfg::per_thread];
    auto load_step = [&](int s) {
        const int kk = (c0 + s * cfg::tiles_per_step) * tr::tile_k;
#pragma unroll
        for (int i = 0; i < cfg::per_thread; i++) {
            const int v = tid + i * kThreads;
            if (v < cfg::vecs) stage_regs[i] = load_a8(p, m0 + v / (kStepK / 8), kk + (v % (kStepK / 8)) * 8);
        }
    };
    auto store_step = [&](int stage) {
        uint32_t *base = smem + stage * cfg::planes * cfg::words;
#pragma unroll
        for (int i = 0; i < cfg::per_thread; i++) {
            const int v = tid + i * kThreads;
            if (v >= cfg::vecs) continue;
            const int r = v / (kStepK / 8), col = (v % (kStepK / 8)) * 8;
            store_a8<FP16A>(base + r * kRowW, col, cfg::words, stage_regs[i]);
        }
    };
    if (steps > 0) {
        load_step(0);
        store_step(0);
    }
    __syncthreads();

    float acc[CHAINS][NB][4];
#pragma unroll
    for (int c = 0; c < CHAINS; c++)
#pragma unroll
        for (int nb = 0; nb < NB; nb++) acc[c][nb][0] = acc[c][nb][1] = acc[c][nb][2] = acc[c][nb][3] = 0.0f;

    for (int s0 = 0; s0 < steps; s0 += cfg::unroll) {
#pragma unroll
        for (int uu = 0; uu < cfg::unroll; uu++) {
            const int s = s0 + uu;
            if (s >= steps) break;
            if (s + 1 < steps) load_step(s + 1);
            const uint32_t *st = smem + (s & 1) * cfg::planes * cfg::words + g * kRowW + t * 4;
#pragma unroll
            for (int tt = 0; tt < cfg::tiles_per_step; tt++) {
                const int c = c0 + s * cfg::tiles_per_step + tt, q = uu * cfg::tiles_per_step + tt; /* q: ring slot */
                if (!u.active || c >= c1) continue;
                const uint32_t *rp[NB];
#pragma unroll
                for (int nb = 0; nb < NB; nb++) rp[nb] = st + nb * 8 * kRowW + tt * cfg::tile_words;
                if constexpr (NB >= 4) /* pair mode's units of two fine splits: taller tiles only */
                    if (p.half && c - c0 == p.half) pair_stash<NB>(p, acc, u.strip, u.split, u.mtile, cfg::rows);
                compute_tile<ENC, FP16A, NB, CHAINS>(p, ring[q], sring[q], rp, cfg::words, acc);
                if (c + cfg::depth < c1) { /* after the tile: see PIPE */
                    ring[q] = __ldcs(dp + (size_t)(c + cfg::depth) * 32);
                    sring[q] = load_scales<ENC>(sp + (size_t)(c + cfg::depth) * tr::scale_tile);
                }
            }
            if (s + 1 < steps) store_step((s + 1) & 1); /* nobody reads that stage until the barrier */
            __syncthreads();
        }
    }
    if constexpr (NB >= 4)
        if (u.active && p.half && c1 - c0 > p.half) pair_join<NB>(p, acc, u.strip, u.split, u.mtile, cfg::rows);
    if (u.active) finish_unit<NB, CHAINS>(p, acc, u.strip, u.split, u.mtile, cfg::rows);
}

/* Rows of A the WHOLE variant stages for an M tile with `valid` rows: those, plus one zero row that the
 * missing rows read. */
__host__ __device__ __forceinline__ int whole_rows(int rows, int valid) { return valid < rows ? valid + 1 : rows; }

/* Programmatic dependent launch (sm_90 and later; the plan's default there, its override's pdl = 0 turns
 * it off), called once a CTA's first weight loads are issued: the next kernel on the stream may launch once
 * every CTA got here, and this one waits for the kernel before it to finish only now, so its weights,
 * which no kernel before it writes, are already on their way; A, the partials, the counters and C are
 * touched only after. Without the launch attribute both instructions return at once. Its two halves
 * serve apart where two kernels split them: wg_stage_a (where the WG kernel has no tensor map of A) lets
 * the WG kernel launch, which waits for it only before it reads its output (kernels_mma_wg.cuh). */
__device__ __forceinline__ void pdl_launch_dependents()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_overlap()
{
    pdl_launch_dependents();
    pdl_wait();
}

/* mma_kernel_whole's CTAs per SM by its launch bounds (its registers) for NB 8-row groups: the launch
 * layer's slot arithmetic (whole_part, whole_spread) reads the same number */
__host__ __device__ constexpr int whole_min_ctas(int nb) { return nb == 1 ? 4 : 3; }
/* The GEMV's other WHOLE (the plan's three-CTA GEMV, qmm__cuda_gemv_early_split): three CTAs per SM, 80
 * registers, each ring slot reloaded before its tile is decoded. At 64 registers ptxas issues the four
 * loads of a turn after its last tile's decode (Nsight Compute's source page); at 80, loading first puts
 * them near the turn's start (SASS: instructions 59-75 of 357, no spills). */
constexpr int kGemvEarlyCtas = 3;

/* WHOLE: the CTA's whole K range of activations staged once, then every warp streams its tiles with no
 * further barrier (NB = 1 and 2, when it fits in shared memory). The ring's steady state runs with no
 * predicate: a turn of `depth` tiles loads the next turn's, while two turns remain; the last two turns
 * are peeled. p.whole_part > 0 (a multiple of depth): the range is staged p.whole_part chunks at a
 * time in two parts, the second once every warp is past the first part's tiles (two barriers at that
 * turn), so fewer bytes of shared memory hold more CTAs per SM; the tiles, their order and the sums are
 * the same. */
template <int ENC, bool FP16A, int NB, int MINB = whole_min_ctas(NB)>
__global__ void __launch_bounds__(kThreads, MINB) mma_kernel_whole(mma_params p)
{
    constexpr bool early = NB == 1 && MINB == kGemvEarlyCtas; /* reload each slot before its tile */
    using cfg = stage_config<ENC, FP16A, NB>;
    using tr = enc_traits<ENC>;
    constexpr int CHAINS = NB == 1 ? 2 : 1;
    constexpr int D = cfg::depth, TW = cfg::tile_words, ST = tr::scale_tile;
    extern __shared__ __align__(16) uint32_t smem[];
    const int tid = threadIdx.x, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const unit_info u = unit_of(p);
    const int c0 = u.c0, n = u.c1 - u.c0;
    const int m0 = u.mtile * cfg::rows;
    const int srows = whole_rows(cfg::rows, min(cfg::rows, p.m - m0));
    const int part = NB == 1 && p.whole_part > 0 ? p.whole_part : p.cps; /* chunks staged at a time */
    const int klen = part * tr::tile_k, stride = whole_stride(klen), plane_words = srows * stride;
    /* the turn at which the second part is staged (a multiple of D; past n: none); the GEMV's only
     * (NB = 1: whole_part), so NB = 2's code has no second part */
    const int turn2 = NB == 1 && p.whole_part > 0 && p.whole_part < n ? p.whole_part : n + D;

    const uint4 *dq;
    const uint8_t *sq;
    uint4 ring[D];
    uint2 sring[D];
    ring_start<ENC>(p, u, n, lane, g, dq, sq, ring, sring);
    pdl_overlap();
    /* stage A[m0 .. m0 + srows) x [(c0 + from) * tile_k, + klen): rows past M load as zeros (and columns
     * past K: a part may reach past the unit's range, whose staged columns nothing reads) */
    const int per_row = klen / 8;
    auto stage = [&](int from) {
        const int kbase = (c0 + from) * tr::tile_k;
        for (int v = tid; v < srows * per_row; v += kThreads) {
            const int r = v / per_row, col = (v % per_row) * 8;
            store_a8<FP16A>(smem + r * stride, col, plane_words, load_a8(p, m0 + r, kbase + col));
        }
    };
    stage(0);
    __syncthreads();
    if (!u.active) { /* its share of the second part's staging and barriers, nothing else */
        if (NB == 1 && turn2 < n) {
            __syncthreads();
            stage(turn2);
            __syncthreads();
        }
        return;
    }

    const uint32_t *rp[NB];
#pragma unroll
    for (int nb = 0; nb < NB; nb++) rp[nb] = smem + min(8 * nb + g, srows - 1) * stride + t * 4;
    float acc[CHAINS][NB][4];
#pragma unroll
    for (int c = 0; c < CHAINS; c++)
#pragma unroll
        for (int nb = 0; nb < NB; nb++) acc[c][nb][0] = acc[c][nb][1] = acc[c][nb][2] = acc[c][nb][3] = 0.0f;

    auto tile = [&](int q, uint4 d, uint2 sc) {
        const uint32_t *rq[NB];
#pragma unroll
        for (int nb = 0; nb < NB; nb++) rq[nb] = rp[nb] + q * TW;
        compute_tile<ENC, FP16A, NB, CHAINS>(p, d, sc, rq, plane_words, acc);
    };
    auto advance = [&]() {
        dq += D * 32;
        if (ST) sq += D * ST;
#pragma unroll
        for (int nb = 0; nb < NB; nb++) rp[nb] += D * TW;
    };
    auto turn = [&]() {
#pragma unroll
        for (int q = 0; q < D; q++) {
            if constexpr (early) {
                const uint4 cur = ring[q];
                const uint2 scur = sring[q];
                ring[q] = __ldcs(dq + (D + q) * 32);
                sring[q] = load_scales<ENC>(sq + (D + q) * ST);
                tile(q, cur, scur);
            } else {
                tile(q, ring[q], sring[q]); /* then the slot's next load: its registers are free, no copies */
                ring[q] = __ldcs(dq + (D + q) * 32);
                sring[q] = load_scales<ENC>(sq + (D + q) * ST);
            }
        }
        advance();
    };
    /* the second part: staged where the first part's tiles are done, read from the staging's start */
    auto second_part = [&](int c) {
        if (NB > 1 || c != turn2) return;
        __syncthreads();
        stage(turn2);
        __syncthreads();
#pragma unroll
        for (int nb = 0; nb < NB; nb++) rp[nb] -= turn2 * TW; /* advance() moved them turn2 tiles on */
    };
    int c = 0; /* two loops (the check inside one loop spilled ptxas's registers in it) */
#pragma unroll 1
    for (; c + 2 * D <= n && (NB > 1 || c < turn2); c += D) turn();
    second_part(c);
#pragma unroll 1
    for (; c + 2 * D <= n; c += D) turn();
#pragma unroll
    for (int q = 0; q < D; q++)
        if (c + q < n) {
            tile(q, ring[q], sring[q]);
            if (c + q + D < n) {
                ring[q] = __ldcs(dq + (D + q) * 32);
                sring[q] = load_scales<ENC>(sq + (D + q) * ST);
            }
        }
    c += D;
    advance();
    second_part(c);
#pragma unroll
    for (int q = 0; q < D; q++)
        if (c + q < n) tile(q, ring[q], sring[q]);
    finish_unit<NB, CHAINS>(p, acc, u.strip, u.split, u.mtile, cfg::rows);
}

/* PIPE (fused path, NB >= 2, activations not split (bf16, or fp16 with an fp16 decode) whose rows are 16-byte
 * aligned): activations copied into
 * shared memory by cp.async in row-major stages of pipe_tiles weight tiles (4 or 8), kPipeStages deep, so
 * no register holds them on the way and a barrier comes once a stage; the B
 * fragments are read with ldmatrix.x4 (two k-tiles per instruction, in the order compute_tile_b takes).
 * Rows are padded by 8 columns (16 bytes), so the 8 rows of one 8x8 matrix hit 8 different 16-byte
 * bank groups. The MMAs are those of the other variants in the same order, so the bits are too. */
constexpr int kPipeStages = 3;

/* PIPE's weight tiles per stage by default, also the depth of each lane's weight ring (pipe_config::tiles):
 * - 8 for one 16-row tile of A, whose short per-tile work needs more weight bytes in flight (the fused
 *   split fills one wave of two CTAs per SM, about 14 warps);
 * - 8 for FP8's 32-row tiles: an E4M3 tile holds half the columns of an E2M1 tile in the same 512 bytes,
 *   so half the MMAs per byte in flight. Measured on an H200: 8 tiles run M = 17..32 4-6% faster than 4
 *   on (4096, 14336) with bf16 activations, and up to 5% faster on the five default shapes with fp16
 *   ones (two rows level). E2M1's 32-row tiles at 8 run 1-19% slower; ptxas spills 8 bytes at 128
 *   registers there, not profiled as the cause;
 * - 4 for the other tiles, and for 16-row tiles at four CTAs per SM (pair mode, launched with TILES = 4). */
__host__ __device__ constexpr int pipe_tiles(int enc, int nb) { return nb == 2 || (nb == 4 && is_fp8(enc)) ? 8 : 4; }
/* The other depth of the 32-row tiles, which the plan's override (pipe32) can ask: 4 where pipe_tiles is 8, else 8. */
__host__ __device__ constexpr int pipe32_other(int enc) { return pipe_tiles(enc, 4) == 8 ? 4 : 8; }

template <int ENC, int NB, int TILES = pipe_tiles(ENC, NB)>
struct pipe_config {
    static constexpr int rows = 8 * NB;
    static constexpr int tiles = TILES; /* pipe_tiles */
    static constexpr int cols = tiles * enc_traits<ENC>::tile_k; /* columns of A per stage */
    static constexpr int stride = cols + 8;                              /* bf16 per staged row */
    static constexpr int stage_elems = rows * stride;
    static constexpr int bytes = kPipeStages * stage_elems * 2;
    static constexpr int pieces = rows * cols / 8; /* 16-byte copies per stage */
    static_assert(pieces % kThreads == 0 && kThreads % (cols / 8) == 0, "whole passes of rows per stage");
    static constexpr int per_thread = pieces / kThreads;
};

/* The 32-bit shared-window address of a pointer into shared memory (for PTX operands). */
__device__ __forceinline__ uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* 16 bytes from global to shared, the last 16 - src_bytes of them zero. */
__device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ uint4 ldmatrix_x4(uint32_t addr)
{
    uint4 r;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "r"(addr));
    return r;
}

template <int ENC, int NB, int TILES = pipe_tiles(ENC, NB), int MINB = 2>
__global__ void __launch_bounds__(kThreads, MINB) mma_kernel_pipe(mma_params p)
{
    using cfg = pipe_config<ENC, NB, TILES>;
    using tr = enc_traits<ENC>;
    constexpr int D = cfg::tiles, ST = tr::scale_tile;
    extern __shared__ __align__(16) uint16_t smem_a[];
    const int tid = threadIdx.x, lane = tid & 31, g = lane >> 2;
    const unit_info u = unit_of(p);
    const int c0 = u.c0, n = u.c1 - u.c0;
    const int steps = (n + D - 1) / D;
    const int m0 = u.mtile * cfg::rows;
    const int kbase = c0 * tr::tile_k;

    /* stage s: columns kbase + s * cols .. of rows m0 .. m0 + rows, into slot s % kPipeStages. Thread
     * tid copies 16 bytes at column colt of rows row0 + i * kRowsPass: one source pointer and one
     * byte count per stage. Rows past M are not copied (their stale words only reach their own output
     * rows, which are never stored); columns past K are zero-filled (the weight's padding codes are 0,
     * and 0 times a stale NaN would not be). */
    constexpr int P = cfg::cols / 8, kRowsPass = kThreads / P;
    const int row0 = tid / P, colt = (tid % P) * 8;
    const int nvalid = p.m - m0 - row0 <= 0 ? 0 : (p.m - m0 - row0 + kRowsPass - 1) / kRowsPass;
    const uint16_t *arow = p.a + (size_t)min(m0 + row0, p.m - 1) * p.lda;
    const size_t rstride_bytes = (size_t)kRowsPass * p.lda * 2;
    const uint32_t dst0 = smem_addr(smem_a + row0 * cfg::stride + colt);
    auto issue = [&](int s) {
        if (s < steps) {
            const int gk = kbase + s * cfg::cols + colt;
            const int bytes = gk < p.k ? min(8, p.k - gk) * 2 : 0;
            const char *src = reinterpret_cast<const char *>(arow + (gk < p.k ? gk : 0));
            const uint32_t dst = dst0 + (uint32_t)((s % kPipeStages) * cfg::stage_elems * 2);
#pragma unroll
            for (int i = 0; i < cfg::per_thread; i++, src += rstride_bytes)
                if (i < nvalid) cp_async16(dst + (uint32_t)(i * kRowsPass * cfg::stride * 2), src, bytes);
        }
        cp_async_commit(); /* an empty group past the end keeps the counting uniform */
    };

    const uint4 *dq;
    const uint8_t *sq;
    uint4 ring[D];
    uint2 sring[D];
    ring_start<ENC>(p, u, n, lane, g, dq, sq, ring, sring);
    pdl_overlap();
#pragma unroll
    for (int s = 0; s < kPipeStages - 1; s++) issue(s);

    float acc[1][NB][4];
#pragma unroll
    for (int nb = 0; nb < NB; nb++) acc[0][nb][0] = acc[0][nb][1] = acc[0][nb][2] = acc[0][nb][3] = 0.0f;
    /* this lane's ldmatrix row address in a slot: matrix j = lane / 8 (columns 8j ..), row lane % 8 */
    const uint32_t a_lane = smem_addr(smem_a) + (uint32_t)(((lane & 7) * cfg::stride + (lane >> 3) * 8) * 2);

    for (int s = 0; s < steps; s++) {
        cp_async_wait<kPipeStages - 2>();
        __syncthreads(); /* stage s is in; every warp is done with the slot the next issue overwrites */
        issue(s + kPipeStages - 1);
        if (!u.active) continue;
        const uint32_t a_slot = a_lane + (uint32_t)((s % kPipeStages) * cfg::stage_elems * 2);
        /* one turn of the ring; FULL: the next step's tiles all exist, so neither the end of the unit
         * nor the loads' predicates are tested per tile (two copies of the turn: about 5 integer
         * instructions less per tile in the steady state, where the ALU pipe is the busiest) */
        auto turn = [&](auto full_c) {
            constexpr bool FULL = decltype(full_c)::value;
#pragma unroll
            for (int q = 0; q < D; q++) {
                const int c = s * D + q;
                if (!FULL && c >= n) break;
                if constexpr (NB >= 4) /* pair mode's units of two fine splits: the second one starts */
                    if (c == p.half && c > 0) pair_stash<NB>(p, acc, u.strip, u.split, u.mtile, cfg::rows);
                compute_tile_b<ENC, false, NB, 1>(
                    p, ring[q], sring[q],
                    [&](int nb, int gi, int) {
                        return ldmatrix_x4(a_slot + (uint32_t)((nb * 8 * cfg::stride + q * tr::tile_k + gi * 32) * 2));
                    },
                    acc);
                /* then the slot's next load, into registers the tile no longer needs: loaded before the
                 * tile, ptxas keeps the old words live beside it and copies the new ones back into the
                 * slot at the end of the tile, a move that waits for the load just issued (one tile in
                 * flight) */
                if (FULL || c + D < n) {
                    ring[q] = __ldcs(dq + (D + q) * 32);
                    sring[q] = load_scales<ENC>(sq + (D + q) * ST);
                }
            }
        };
        /* not for FP8 at 64 rows, where ptxas spills 28 bytes with the two copies (none with one) */
        constexpr bool kTwoTurns = !(is_fp8(ENC) && NB == 8);
        if (kTwoTurns && (s + 2) * D <= n)
            turn(std::true_type{});
        else
            turn(std::false_type{});
        dq += D * 32;
        if (ST) sq += D * ST;
    }
    cp_async_wait<0>();
    if constexpr (NB >= 4)
        if (u.active && p.half && n > p.half) pair_join<NB>(p, acc, u.strip, u.split, u.mtile, cfg::rows);
    if (u.active) finish_unit<NB, 1>(p, acc, u.strip, u.split, u.mtile, cfg::rows);
}

} // namespace qmm_mma

#endif
