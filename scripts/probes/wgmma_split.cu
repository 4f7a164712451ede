/* Probe, not part of qmm (BENCHMARKS.md, the cause of the M = 64 target): at
 * M = 64, can decode warps that write bf16 weights to shared memory by stmatrix, for a warpgroup that
 * only issues shared-memory wgmma (SS), beat the library's 64-row WG kernel, whose warpgroups decode
 * into wgmma's register A operand and multiply in lockstep (70.1 us on (8192, 28672), NVFP4)?
 *
 * A CTA owns NW weight rows (NW / 16 strips of qmm's prepared NVFP4 layout) over one of `splits` equal
 * ranges of K, and 64 rows of activations. Its warps:
 * - MMA warpgroups (first). ORIENT 0: one warpgroup, wgmma m64nNWk16 with the activations as A (64 rows)
 *   and the decoded weights as B (NW rows), both from shared memory. ORIENT 1: NW / 64 warpgroups, each
 *   wgmma m64n64k16 with its 64 weight rows as A and the activations as B (the library's orientation).
 *   Per group of G chunks (64 columns of K each): wait for the slots, 4 G wgmmas (k-tiles in order),
 *   commit, wait until the group before is complete and release its slots.
 * - ND decode warps, each owning NW / 16 / ND strips: a register ring of the next D tiles (and scale words)
 *   per strip from global memory (evict-first loads, as the library's GEMV), each tile decoded as the
 *   library decodes (decode_ktile) into m16n8k16 A fragments, which are exactly stmatrix.x4's four 8x8
 *   matrices; stored into the slot in wgmma's no-swizzle K-major layout (8x8 core matrices of 128
 *   contiguous bytes: LBO = NW * 16 bytes between 8-column groups, SBO = 128 between 8-row groups, so
 *   each stmatrix matrix is one conflict-free 128-byte row of banks), then fence.proxy.async and one
 *   arrival per warp on the slot's full barrier.
 * - No producer warp (a 13th warp would cap every thread at 128 registers: a quarter of the register
 *   file per 4-warp partition): MMA warp 0 copies each chunk's activations (8 KB, laid out beforehand in
 *   the same core-matrix order) by one bulk copy into a ring of SA slots of their own, SA chunks ahead,
 *   once every MMA warp has released the slot. The whole warp waits for that release: with lane 0
 *   waiting alone (while the other 31 lanes go on to the next chunk's waits) set 2's MODE 3 hangs on
 *   the H200, and with the wait in a C++ loop that gives up after 2^20 tries every configuration runs
 *   1.25-1.9x slower.
 * The decode warps' slots hold G chunks of NW x 64 decoded weights (S slots), the activations' slots G
 * chunks too (SA slots): one hand-over (barrier round trip, commit group of 4 G wgmmas) per G chunks
 * (set 3; G = 1 elsewhere). MODE 0 is the whole kernel; MODE 1 the same with the decode warps' global
 * loads and decode left out (they store the same registers every chunk: the MMAs, stores and
 * activations alone); MODE 2 leaves the stores out too
 * (the MMAs and activations alone); MODE 3 is the whole kernel without the MMAs (each slot released once
 * it is full: the loads, decode and stores alone). On the H200, (8192, 28672): 82.0 us at best at
 * MODE 0, the MMA side alone (MODE 2, ORIENT 0) 51-56 us, the loads, decode and stores alone (MODE 3)
 * 58-64 us, and ORIENT 1's MMAs alone 78 us (twice the shared bytes per wgmma). Those figures come from
 * a variant with one ring for weights and activations (SA = S) and lane 0 alone waiting for the release;
 * this one, with the activations' own ring and the whole warp waiting, takes 0.99-1.24x their time.
 *
 * Checks (MODE 0): the sums of the splits' partials against a double-precision reference, and each
 * partial bitwise against mma.sync m16n8k16 with the same split and k-tile order (nvfp4_problem.cuh).
 * Timing: the median of 20 launches after 5, over copies of the weights of 512 MB or more, rotated; the
 * copy bandwidth measured in the same process. Prints registers and spills (ptxas) and CTAs per SM.
 * Build: nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -Isrc -Iinclude -Iscripts/probes
 * scripts/probes/wgmma_split.cu */
#include <cstdlib>

#include "nvfp4_problem.cuh"
#include "wgmma_ss_ops.cuh"

constexpr int kM = 64; /* rows of activations */

template <int ORIENT, int NW, int ND>
struct scfg {
    static constexpr int spw = NW / 16 / ND;         /* strips per decode warp */
    static constexpr int nmw = ORIENT ? NW / 64 : 1; /* MMA warpgroups */
    static constexpr int threads = nmw * 128 + ND * 32;
    static constexpr int w_slot = NW * 128; /* one chunk's decoded weights: NW rows x 64 columns of bf16 */
    static constexpr int a_slot = kM * 128; /* one chunk's activations */
    static constexpr int acc = ORIENT ? 32 : NW / 2;
    static_assert(spw * ND * 16 == NW, "the strips divide among the decode warps");
};

struct split_args {
    const uint8_t *w, *sc, *b;
    float *out;
    int n, chunks, cps, splits;
};

__device__ __forceinline__ void stmatrix4(uint32_t addr, const uint32_t (&r)[4])
{
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r[0]), "r"(r[1]),
                 "r"(r[2]), "r"(r[3])
                 : "memory");
}

/* shared memory: S weight slots, SA activation slots, then their full and empty barriers */
template <int ORIENT, int NW, int ND, int S, int SA>
constexpr size_t smem_of(int g) { return (size_t)g * (S * scfg<ORIENT, NW, ND>::w_slot + SA * scfg<ORIENT, NW, ND>::a_slot) + 16 * (S + SA); }

template <int MODE, int ORIENT, int NW, int ND, int S, int SA, int D, int MINB, int G>
__global__ void __launch_bounds__(scfg<ORIENT, NW, ND>::threads, MINB) split_kernel(mma_params p, split_args q)
{
    using cf = scfg<ORIENT, NW, ND>;
    extern __shared__ __align__(1024) uint8_t sm[];
    constexpr int WS = G * cf::w_slot, AS = G * cf::a_slot; /* a slot holds G chunks */
    uint8_t *const act = sm + S * WS;
    uint64_t *full = reinterpret_cast<uint64_t *>(act + SA * AS), *empty = full + S, *full_a = empty + S,
             *empty_a = full_a + SA;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int split = blockIdx.x % q.splits, sg = blockIdx.x / q.splits;
    const int c0 = split * q.cps, nc = q.cps; /* chunks of this CTA */
    constexpr int kDec0 = cf::nmw * 4;
    if (threadIdx.x == 0) {
        for (int s = 0; s < S; s++) {
            wg_bar_init(&full[s], ND);
            wg_bar_init(&empty[s], cf::nmw * 4);
        }
        for (int s = 0; s < SA; s++) {
            wg_bar_init(&full_a[s], 1);
            wg_bar_init(&empty_a[s], cf::nmw * 4);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    const uint32_t sbase = smem_addr(sm);
    auto copy_act = [&](int i) { /* group i's activations (G chunks) into its slot (MMA warp 0, lane 0) */
        const int s = i % SA;
        wg_bar_expect(&full_a[s], AS);
        wg_copy(act + s * AS, q.b + (size_t)(c0 + i * G) * cf::a_slot, AS, &full_a[s], wg_policy(false));
    };
    if (warp >= kDec0) { /* decode warps */
        constexpr int P = cf::spw;
        constexpr bool kLoad = MODE == 0 || MODE == 3; /* the weights loaded and decoded */
        const int dw = warp - kDec0, g = lane >> 2;
        const uint4 *dq[P];
        const uint8_t *sq[P];
        uint32_t lane_off[P]; /* this lane's stmatrix row address in a slot, k-tile 0: matrix lane / 8, row lane % 8 */
#pragma unroll
        for (int r = 0; r < P; r++) {
            const int ls = dw * P + r; /* the strip within the CTA */
            const size_t t0 = (size_t)(sg * (NW / 16) + ls) * q.chunks + c0;
            dq[r] = reinterpret_cast<const uint4 *>(q.w) + t0 * 32 + lane;
            sq[r] = q.sc + t0 * 64 + g * 8;
            lane_off[r] = (uint32_t)((((lane >> 4) * (NW / 8)) + 2 * ls + ((lane >> 3) & 1)) * 128 + (lane & 7) * 16);
        }
        uint4 ring[D][P];
        uint2 sring[D][P];
#pragma unroll
        for (int k = 0; k < D; k++)
#pragma unroll
            for (int r = 0; r < P; r++) {
                ring[k][r] = make_uint4(lane, k, r, 0x3f803f80u);
                sring[k][r] = make_uint2(0x7f7f7f7fu, 0x7f7f7f7fu);
                if (kLoad && k < nc) {
                    ring[k][r] = __ldcs(dq[r] + k * 32);
                    sring[k][r] = load_scales<QMM__ENC_NVFP4>(sq[r] + k * 64);
                }
            }
        auto tile = [&](int i, const uint4 (&d)[P], const uint2 (&sc)[P]) {
            uint32_t a[P][4][4];
#pragma unroll
            for (int r = 0; r < P; r++) {
                if constexpr (kLoad) {
                    decode_tile(p, d[r], sc[r], a[r]);
                } else {
#pragma unroll
                    for (int j = 0; j < 4; j++) a[r][j][0] = d[r].x, a[r][j][1] = d[r].y, a[r][j][2] = d[r].z, a[r][j][3] = d[r].w;
                }
            }
            const int gi = i / G, within = i % G, s = gi % S; /* chunk i's group, place in it, slot */
            if (within == 0 && gi >= S) wg_bar_wait(&empty[s], ((gi / S) - 1) & 1);
            if constexpr (MODE != 2) {
                const uint32_t slot = sbase + s * WS + within * cf::w_slot;
#pragma unroll
                for (int r = 0; r < P; r++)
#pragma unroll
                    for (int j = 0; j < 4; j++) stmatrix4(slot + lane_off[r] + j * 2 * (NW / 8) * 128, a[r][j]);
                if (within == G - 1) asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
            }
            if (within == G - 1) {
                __syncwarp();
                if (lane == 0) wg_bar_arrive(&full[s]);
            }
        };
        auto reload = [&](int k, int i) {
            if constexpr (kLoad) {
#pragma unroll
                for (int r = 0; r < P; r++) {
                    ring[k][r] = __ldcs(dq[r] + i * 32);
                    sring[k][r] = load_scales<QMM__ENC_NVFP4>(sq[r] + i * 64);
                }
            }
        };
        int c = 0;
#pragma unroll 1
        for (; c + 2 * D <= nc; c += D)
#pragma unroll
            for (int k = 0; k < D; k++) {
                tile(c + k, ring[k], sring[k]);
                reload(k, c + k + D);
            }
#pragma unroll 1
        for (; c < nc; c += D)
#pragma unroll
            for (int k = 0; k < D; k++)
                if (c + k < nc) {
                    tile(c + k, ring[k], sring[k]);
                    if (c + k + D < nc) reload(k, c + k + D);
                }
        return;
    }
    /* the MMA warpgroups */
    const int mw = warp >> 2, w4 = warp & 3, g = lane >> 2, t = lane & 3;
    float acc[cf::acc];
#pragma unroll
    for (int i = 0; i < cf::acc; i++) acc[i] = 0.0f;
    const int ng = nc / G; /* groups of G chunks: one hand-over each */
    if (warp == 0 && lane == 0)
        for (int i = 0; i < SA && i < ng; i++) copy_act(i);
    /* group i's slots are free: one arrival per MMA warp; warp 0 then refills the activations' slot */
    auto release = [&](int i) {
        if (lane == 0) {
            wg_bar_arrive(&empty[i % S]);
            wg_bar_arrive(&empty_a[i % SA]);
        }
        if (warp == 0 && i + SA < ng) { /* the whole warp waits: no lane spins apart from the others */
            wg_bar_wait(&empty_a[i % SA], (i / SA) & 1);
            if (lane == 0) copy_act(i + SA);
        }
        __syncwarp();
    };
#pragma unroll 1
    for (int i = 0; i < ng; i++) {
        const int s = i % S;
        wg_bar_wait(&full[s], (i / S) & 1);
        wg_bar_wait(&full_a[i % SA], (i / SA) & 1);
        if constexpr (MODE == 3) {
            release(i);
            continue;
        }
        const uint32_t ws = sbase + s * WS, as = smem_addr(act) + (i % SA) * AS;
        wg_fence();
        wg_fence_acc(acc);
#pragma unroll
        for (int j = 0; j < 4 * G; j++) { /* k-tile j % 4 of the group's chunk j / 4 */
            const uint32_t h = j / 4, jj = j % 4;
            const uint64_t da = desc_of(as + h * cf::a_slot + jj * 2 * (kM / 8) * 128, kM * 16, 128);
            const uint64_t dwt = desc_of(ws + h * cf::w_slot + mw * 8 * 128 + jj * 2 * (NW / 8) * 128, NW * 16, 128);
            if constexpr (ORIENT == 0) wgmma_ss<NW>(acc, da, dwt);
            else wgmma_ss<64>(acc, dwt, da);
        }
        wg_commit();
        wg_fence_acc(acc);
        wg_wait<1>();
        wg_fence_acc(acc);
        if (i > 0) release(i - 1);
    }
    wg_wait<0>();
    wg_fence_acc(acc);
    /* acc[4j + e]: the fragment's row 16 w4 + g + 8 (e >> 1), column 8 j + 2 t + (e & 1) */
    float *o = q.out + (size_t)split * kM * q.n;
#pragma unroll
    for (int j = 0; j < cf::acc / 4; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int fr = 16 * w4 + g + 8 * (e >> 1), fc = 8 * j + 2 * t + (e & 1);
            if constexpr (ORIENT == 0) o[(size_t)fr * q.n + sg * NW + fc] = acc[4 * j + e];
            else o[(size_t)fc * q.n + sg * NW + 64 * mw + fr] = acc[4 * j + e];
        }
}

static double g_copy_gbs;

template <int MODE, int ORIENT, int NW, int ND, int S, int SA, int D, int MINB, int G = 1>
static void run(nvfp4_problem &pb, int splits, const mma_params &p)
{
    using cf = scfg<ORIENT, NW, ND>;
    auto kern = split_kernel<MODE, ORIENT, NW, ND, S, SA, D, MINB, G>;
    /* a slot is released one group late (after the next group's MMAs are issued), so one weight slot
     * deadlocks (S = 1 hangs) */
    static_assert(S >= 2 && SA >= 2, "two slots or more in each ring");
    const int n = pb.n;
    if (pb.chunks % (splits * G) || n % NW) {
        std::printf("skip: %d chunks in %d splits, %d rows in CTAs of %d\n", pb.chunks, splits, n, NW);
        return;
    }
    float *dout;
    CK(cudaMalloc(&dout, (size_t)splits * kM * n * 4));
    CK(cudaMemset(dout, 0xff, (size_t)splits * kM * n * 4));
    split_args q{pb.dw, pb.ds, reinterpret_cast<const uint8_t *>(pb.db), dout, n, pb.chunks, pb.chunks / splits, splits};
    const size_t smem = smem_of<ORIENT, NW, ND, S, SA>(G);
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, kern));
    int held = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&held, kern, cf::threads, smem));
    const int grid = (n / NW) * splits;
    kern<<<grid, cf::threads, smem>>>(p, q);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    char check[96] = "no check (MODE > 0)";
    if (MODE == 0) {
        const double rel = pb.rel_err(dout, splits);
        const long long diff = pb.sync_diff<kM>(p, dout, splits);
        std::snprintf(check, sizeof check, "rel err %.2g %s, %lld of %lld partials differ from mma.sync", rel,
                      rel < 1e-4 ? "OK" : "BAD", diff, (long long)splits * kM * n);
    }
    const int nrot = pb.rotations();
    const double us = median_us([&](int r) {
        split_args qr = q;
        qr.w = pb.rw[r % nrot], qr.sc = pb.rs[r % nrot];
        kern<<<grid, cf::threads, smem>>>(p, qr);
    });
    const double gbs = pb.weight_bytes() / us * 1e-3;
    std::printf("MODE=%d ORIENT=%d NW=%d ND=%d S=%d SA=%d D=%d MINB=%d G=%d splits=%d grid=%d: %d regs, %d B spilled, %d CTAs/SM held | "
                "%.1f us, %.0f TFLOP/s, %.0f GB/s (%.1f%% copy) | %s\n",
                MODE, ORIENT, NW, ND, S, SA, D, MINB, G, splits, grid, fa.numRegs, (int)fa.localSizeBytes, held, us,
                2.0 * kM * n * pb.kk / us * 1e-6, gbs, 100.0 * gbs / g_copy_gbs, check);
    cudaFree(dout);
}

int main(int argc, char **argv)
{
    mma_params p{};
    for (int i = 0; i < kPow2Count; i++) p.pow2[i] = 1u << kPow2Shifts[i];
    const int which = argc > 1 ? std::atoi(argv[1]) : 0;
    std::setvbuf(stdout, nullptr, _IOLBF, 0); /* each line out before a later configuration can hang */
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    g_copy_gbs = copy_gbs();
    nvfp4_problem pb(p, 8192, 28672, kM);
    std::printf("device %s, %d SMs; copy bandwidth %.0f GB/s; NVFP4 (8192, 28672), M = 64: %.1f MB with scales\n",
                prop.name, prop.multiProcessorCount, g_copy_gbs, pb.weight_bytes() / 1e6);
    if (which == 0) {
        run<0, 0, 256, 8, 4, 4, 4, 1>(pb, 4, p);
        run<0, 0, 256, 8, 4, 4, 6, 1>(pb, 4, p);
        run<0, 0, 128, 4, 4, 4, 4, 2>(pb, 4, p);
        run<0, 0, 128, 8, 6, 6, 8, 1>(pb, 2, p);
        run<0, 1, 128, 8, 4, 4, 8, 1>(pb, 2, p);
        run<1, 0, 256, 8, 4, 4, 4, 1>(pb, 4, p);
        run<2, 0, 256, 8, 4, 4, 4, 1>(pb, 4, p);
        run<1, 0, 128, 4, 4, 4, 4, 2>(pb, 4, p);
        run<2, 0, 128, 4, 4, 4, 4, 2>(pb, 4, p);
        run<1, 1, 128, 8, 4, 4, 8, 1>(pb, 2, p);
        run<2, 1, 128, 8, 4, 4, 8, 1>(pb, 2, p);
    }
    if (which == 2) { /* the activations' ring deeper than the weights'; MODE 3 at 8 and 16 decode warps per SM */
        run<2, 0, 256, 8, 4, 8, 4, 1>(pb, 4, p);
        run<3, 0, 256, 8, 4, 8, 4, 1>(pb, 4, p);
        run<1, 0, 256, 8, 4, 8, 4, 1>(pb, 4, p);
        run<0, 0, 256, 8, 4, 8, 6, 1>(pb, 4, p);
        run<2, 0, 128, 4, 4, 6, 4, 2>(pb, 4, p);
        run<3, 0, 128, 4, 4, 4, 4, 2>(pb, 4, p);
        run<3, 0, 128, 8, 4, 4, 4, 2>(pb, 4, p);
        run<3, 0, 256, 16, 4, 8, 4, 1>(pb, 4, p);
    }
    if (which == 3) { /* G chunks per hand-over (slot, commit group, barrier round trip) */
        run<2, 0, 256, 8, 4, 4, 4, 1, 1>(pb, 4, p);
        run<2, 0, 256, 8, 2, 2, 4, 1, 2>(pb, 4, p);
        run<2, 0, 256, 8, 2, 4, 4, 1, 2>(pb, 4, p);
        run<1, 0, 256, 8, 2, 2, 4, 1, 2>(pb, 4, p);
        run<0, 0, 256, 8, 2, 2, 6, 1, 2>(pb, 4, p);
        run<0, 0, 256, 8, 4, 4, 6, 1, 1>(pb, 4, p);
        run<2, 0, 128, 4, 2, 2, 4, 2, 2>(pb, 4, p);
        run<0, 0, 128, 4, 2, 2, 4, 2, 2>(pb, 4, p);
    }
    if (which == 1) { /* slots and ring depths around set 0's */
        run<0, 0, 256, 8, 5, 5, 4, 1>(pb, 4, p);
        run<0, 0, 256, 8, 3, 3, 4, 1>(pb, 4, p);
        run<0, 0, 128, 8, 6, 6, 6, 1>(pb, 2, p);
        run<0, 0, 128, 8, 4, 4, 8, 1>(pb, 2, p);
        run<0, 0, 128, 4, 4, 4, 2, 2>(pb, 4, p);
        run<0, 0, 128, 4, 3, 3, 4, 2>(pb, 4, p);
    }
    return 0;
}
