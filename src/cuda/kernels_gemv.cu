/* The GEMV path (small M): one pass over the prepared weight tiles, each weight byte read once.
 *
 * Work unit = one warp on one 16-row strip of W over one range of K chunks (split-K where the strips
 * alone cannot fill the GPU). Each lane loads its 16 bytes of a tile with one coalesced 16-byte load
 * (a warp reads 512 contiguous bytes), kDepth tiles ahead, with the streaming (evict-first) cache hint
 * because every byte is used once; the scales come in one 8- or 4-byte load per tile. The codes are
 * decoded by bit placement into bf16 pairs (decode.h) and multiplied by the block factor, which gives
 * exactly element * block scale (times 2^-fix), and mma.sync m16n8k16 multiplies them with 8 rows of A
 * in fp32: the tensor core is the dot-product engine. (A CUDA-core FMA needs a decode, a conversion and
 * an FMA per weight, over 4 instructions, against a budget of about 3.9 instructions per weight at HBM
 * speed on an H200: 132 SMs x 4 schedulers x 1.98 GHz over 8.4 G weights/s.)
 *
 * M > 8 runs in groups of 8 rows (blockIdx.y), each re-reading W: forcing the path works for any M.
 * Split-K partial sums are reduced deterministically: every unit stores its partials, and the last unit
 * of a strip (an atomic counter per strip and group, reset by that unit) adds them in split order and
 * applies the epilogue, so results do not depend on timing, and row m of C does not depend on the other
 * rows of A. */
#include <cuda_runtime.h>

#include "decode.h"
#include "device_common.cuh"

namespace {

constexpr int kWarps = 4;  /* units per CTA */
constexpr int kDepth = 8;  /* tiles in flight per lane: 8 x 16 B */

struct gemv_params {
    const uint4 *data;
    const uint8_t *scales;
    const uint16_t *a;
    size_t lda;
    int m, n, k;
    int strips, chunks, cps, splits;
    int mx_off;
    float *partials;
    unsigned *counters;
    qmm__cuda_epilogue e;
};

template <int ENC> struct enc_traits;
template <> struct enc_traits<QMM__ENC_NVFP4> { static constexpr int scale_tile = 64, scale_lane = 8; };
template <> struct enc_traits<QMM__ENC_MXFP4> { static constexpr int scale_tile = 32, scale_lane = 4; };
template <> struct enc_traits<QMM__ENC_FP8> { static constexpr int scale_tile = 0, scale_lane = 0; };

/* Two consecutive activations of row `ar` at k and k + 1, zero past K. */
__device__ __forceinline__ uint32_t load_pair_checked(const uint16_t *ar, int k, int K)
{
    uint32_t lo = k < K ? __ldg(ar + k) : 0u, hi = k + 1 < K ? __ldg(ar + k + 1) : 0u;
    return lo | (hi << 16);
}

/* The B fragment (8 rows of A, 16 k) of lane (g, t) for the k-tile at k0: rows g + row0, k = k0 + 2t,
 * k0 + 2t + 8 (+1). Rows past M and columns past K read as zero. */
template <bool FP16A, bool ALIGNED>
__device__ __forceinline__ void load_b(const gemv_params &p, int row, int k0, int t, uint32_t (&hi)[2], uint32_t (&lo)[2])
{
    uint32_t x0 = 0, x1 = 0;
    if (row < p.m) {
        const uint16_t *ar = p.a + (size_t)row * p.lda;
        const int k = k0 + 2 * t;
        if (ALIGNED && k0 + 16 <= p.k) {
            x0 = __ldg(reinterpret_cast<const unsigned *>(ar + k));
            x1 = __ldg(reinterpret_cast<const unsigned *>(ar + k + 8));
        } else {
            x0 = load_pair_checked(ar, k, p.k);
            x1 = load_pair_checked(ar, k + 8, p.k);
        }
    }
    if (FP16A) {
        qmm__fp16x2_split(x0, hi[0], lo[0]);
        qmm__fp16x2_split(x1, hi[1], lo[1]);
    } else {
        hi[0] = x0, hi[1] = x1;
    }
}

template <bool FP16A, bool ALIGNED>
__device__ __forceinline__ void mma_ktile(const gemv_params &p, const uint32_t (&a)[4], int row, int k0, int t, float (&acc)[4])
{
    uint32_t bh[2], bl[2];
    load_b<FP16A, ALIGNED>(p, row, k0, t, bh, bl);
    qmm__mma_bf16(acc, a, bh[0], bh[1]);
    if (FP16A) qmm__mma_bf16(acc, a, bl[0], bl[1]);
}

/* One tile of this lane: decode its 16 bytes into A fragments, multiply by the block factors, and
 * accumulate the products with the matching rows of A. */
template <int ENC, bool FP16A, bool ALIGNED>
__device__ __forceinline__ void tile_mma(const gemv_params &p, uint4 d, uint2 s, int chunk, int row, int t, float (&acc)[4])
{
    const uint32_t w[4] = {d.x, d.y, d.z, d.w};
    if constexpr (ENC == QMM__ENC_FP8) {
#pragma unroll
        for (int j = 0; j < 2; j++) {
            uint32_t a[4];
            a[0] = qmm__bf16x2_mul(qmm__e4m3x2_to_bf16x2(w[2 * j]), QMM__FP8_FACTOR);
            a[1] = qmm__bf16x2_mul(qmm__e4m3x2_to_bf16x2(w[2 * j] >> 8), QMM__FP8_FACTOR);
            a[2] = qmm__bf16x2_mul(qmm__e4m3x2_to_bf16x2(w[2 * j + 1]), QMM__FP8_FACTOR);
            a[3] = qmm__bf16x2_mul(qmm__e4m3x2_to_bf16x2(w[2 * j + 1] >> 8), QMM__FP8_FACTOR);
            mma_ktile<FP16A, ALIGNED>(p, a, row, chunk * 32 + 16 * j, t, acc);
        }
    } else {
#pragma unroll
        for (int j = 0; j < 4; j++) {
            uint32_t f0, f1;
            if constexpr (ENC == QMM__ENC_NVFP4) {
                f0 = qmm__nvfp4_factor((s.x >> (8 * j)) & 0xffu);
                f1 = qmm__nvfp4_factor((s.y >> (8 * j)) & 0xffu);
            } else {
                f0 = qmm__mxfp4_factor((s.x >> (8 * (j >> 1))) & 0xffu, p.mx_off);
                f1 = qmm__mxfp4_factor((s.x >> (16 + 8 * (j >> 1))) & 0xffu, p.mx_off);
            }
            uint32_t a[4];
            a[0] = qmm__bf16x2_mul(qmm__e2m1x2_to_bf16x2(w[j]), f0);
            a[1] = qmm__bf16x2_mul(qmm__e2m1x2_to_bf16x2(w[j] >> 4), f1);
            a[2] = qmm__bf16x2_mul(qmm__e2m1x2_to_bf16x2(w[j] >> 8), f0);
            a[3] = qmm__bf16x2_mul(qmm__e2m1x2_to_bf16x2(w[j] >> 12), f1);
            mma_ktile<FP16A, ALIGNED>(p, a, row, chunk * 64 + 16 * j, t, acc);
        }
    }
}

template <int ENC>
__device__ __forceinline__ uint2 load_scales(const uint8_t *sp, int chunk)
{
    constexpr int tile = enc_traits<ENC>::scale_tile;
    if constexpr (ENC == QMM__ENC_NVFP4) return *reinterpret_cast<const uint2 *>(sp + (size_t)chunk * tile);
    else if constexpr (ENC == QMM__ENC_MXFP4) return make_uint2(*reinterpret_cast<const uint32_t *>(sp + (size_t)chunk * tile), 0u);
    else return make_uint2(0u, 0u);
}

template <int ENC, bool FP16A, bool ALIGNED>
__global__ void __launch_bounds__(kWarps * 32) gemv_kernel(gemv_params p)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int unit = blockIdx.x * kWarps + (threadIdx.x >> 5);
    if (unit >= p.strips * p.splits) return;
    const int group = blockIdx.y; /* rows 8 * group .. 8 * group + 7 of A */
    const int strip = unit / p.splits, split = unit - strip * p.splits;
    const int c0 = split * p.cps, c1 = min(c0 + p.cps, p.chunks);
    const int row = 8 * group + g;

    const uint4 *dp = p.data + (size_t)strip * p.chunks * 32 + lane;
    const uint8_t *sp = p.scales ? p.scales + (size_t)strip * p.chunks * enc_traits<ENC>::scale_tile + g * enc_traits<ENC>::scale_lane : nullptr;

    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    uint4 buf[kDepth];
    uint2 sbuf[kDepth];
#pragma unroll
    for (int u = 0; u < kDepth; u++) {
        if (c0 + u < c1) {
            buf[u] = __ldcs(dp + (size_t)(c0 + u) * 32);
            sbuf[u] = load_scales<ENC>(sp, c0 + u);
        }
    }
    for (int c = c0; c < c1; c += kDepth) {
#pragma unroll
        for (int u = 0; u < kDepth; u++) {
            if (c + u < c1) {
                const uint4 d = buf[u];
                const uint2 s = sbuf[u];
                if (c + u + kDepth < c1) {
                    buf[u] = __ldcs(dp + (size_t)(c + u + kDepth) * 32);
                    sbuf[u] = load_scales<ENC>(sp, c + u + kDepth);
                }
                tile_mma<ENC, FP16A, ALIGNED>(p, d, s, c + u, row, t, acc);
            }
        }
    }

    /* acc[0], acc[1]: W row g, A rows 2t, 2t + 1 of the group; acc[2], acc[3]: W row g + 8. */
    const int mrow = 8 * group + 2 * t;
    const int n0 = strip * 16 + g;
    if (p.splits == 1) {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int m = mrow + (i & 1), n = n0 + 8 * (i >> 1);
            if (m < p.m && n < p.n) qmm__epilogue_store(p.e, (size_t)m, (size_t)n, acc[i]);
        }
        return;
    }
    /* split-K: partials[group][strip][split][m in group][16 rows] */
    const int mstride = min(8, p.m);            /* rows stored per unit: M when M <= 8 */
    const int mg = min(8, p.m - 8 * group);     /* rows of A in this group */
    float *part = p.partials + (((size_t)group * p.strips + strip) * p.splits) * mstride * 16;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int mi = 2 * t + (i & 1), r = g + 8 * (i >> 1);
        if (mi < mg) part[(size_t)split * mstride * 16 + mi * 16 + r] = acc[i];
    }
    __threadfence();
    __syncwarp(); /* every lane's partials are fenced before lane 0 announces them */
    unsigned prev = 0;
    unsigned *counter = p.counters + (size_t)group * p.strips + strip;
    if (lane == 0) prev = atomicAdd(counter, 1u);
    prev = __shfl_sync(0xffffffffu, prev, 0);
    if (prev != (unsigned)p.splits - 1) return;
    __threadfence();
    float tot[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int sp_i = 0; sp_i < p.splits; sp_i++) {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int mi = 2 * t + (i & 1), r = g + 8 * (i >> 1);
            if (mi < mg) tot[i] += __ldcg(part + (size_t)sp_i * mstride * 16 + mi * 16 + r);
        }
    }
    if (lane == 0) *counter = 0u; /* ready for the next call */
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int m = mrow + (i & 1), n = n0 + 8 * (i >> 1);
        if (m < p.m && n < p.n) qmm__epilogue_store(p.e, (size_t)m, (size_t)n, tot[i]);
    }
}

template <int ENC, bool FP16A>
cudaError_t launch_aligned(const gemv_params &p, bool aligned, dim3 grid, cudaStream_t s)
{
    if (aligned) gemv_kernel<ENC, FP16A, true><<<grid, kWarps * 32, 0, s>>>(p);
    else gemv_kernel<ENC, FP16A, false><<<grid, kWarps * 32, 0, s>>>(p);
    return cudaGetLastError();
}

template <int ENC>
cudaError_t launch_enc(const gemv_params &p, bool fp16, bool aligned, dim3 grid, cudaStream_t s)
{
    return fp16 ? launch_aligned<ENC, true>(p, aligned, grid, s) : launch_aligned<ENC, false>(p, aligned, grid, s);
}

} // namespace

extern "C" int qmm__cuda_gemv(const qmm__cuda_prepared *w, size_t m, int a_type, const void *a, size_t lda,
                              const qmm__cuda_epilogue *e, float *partials, size_t partial_floats, unsigned *counters,
                              size_t counter_count, int sm_count, void *stream)
{
    gemv_params p;
    p.data = static_cast<const uint4 *>(w->data);
    p.scales = static_cast<const uint8_t *>(w->scales);
    p.a = static_cast<const uint16_t *>(a);
    p.lda = lda;
    p.m = (int)m;
    p.n = (int)w->n;
    p.k = (int)w->k;
    p.strips = (int)w->strips;
    p.chunks = (int)w->chunks;
    p.mx_off = w->mx_off;
    p.e = *e;
    const int groups = (int)((m + 7) / 8);
    /* Split K until there are about 48 warps per SM (two waves of 24 resident ones, so the block
     * scheduler evens out the SMs), keeping at least 4 tiles (2 KB) per warp. The split does not depend
     * on M, so a row's sums are the same whatever the batch. */
    int splits = (int)((48LL * sm_count + p.strips - 1) / p.strips);
    int max_splits = p.chunks / 4 > 1 ? p.chunks / 4 : 1;
    if (splits > max_splits) splits = max_splits;
    if (splits < 1) splits = 1;
    const size_t mg = m < 8 ? m : 8;
    while (splits > 1 && ((size_t)groups * p.strips * splits * mg * 16 > partial_floats ||
                          (size_t)groups * p.strips > counter_count))
        splits--;
    p.splits = splits;
    p.cps = (p.chunks + splits - 1) / splits;
    p.splits = (p.chunks + p.cps - 1) / p.cps; /* no empty splits */
    p.partials = partials;
    p.counters = counters;
    const bool aligned = ((uintptr_t)a % 4 == 0) && (lda % 2 == 0);
    const bool fp16 = a_type == QMM_DTYPE_FP16;
    dim3 grid((unsigned)((p.strips * p.splits + kWarps - 1) / kWarps), (unsigned)groups);
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    switch (w->enc) {
    case QMM__ENC_NVFP4: return (int)launch_enc<QMM__ENC_NVFP4>(p, fp16, aligned, grid, s);
    case QMM__ENC_MXFP4: return (int)launch_enc<QMM__ENC_MXFP4>(p, fp16, aligned, grid, s);
    case QMM__ENC_FP8: return (int)launch_enc<QMM__ENC_FP8>(p, fp16, aligned, grid, s);
    default: return (int)cudaErrorInvalidValue;
    }
}
