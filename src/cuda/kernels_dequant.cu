/* Kernels of the materialize path and its helpers:
 * - dequantize: prepared tiles -> row-major bf16 (or fp16) rows of element * block scale, exact, one
 *   element at a time in fp32 (so it also takes the RAW encodings: NaN scales and codes decode to NaN);
 *   a warp decodes one 16 x 64 (or 16 x 32) tile into shared memory and writes it out row by row;
 * - split_fp16: fp16 activations -> bf16 hi + lo (exact), for bf16 weights under fp16 activations;
 * - epilogue: fp32 sums -> C with the qmm epilogue, where cuBLASLt's own epilogue cannot express it;
 * - copy bandwidth: the device-to-device copy that benchmarks compare against. */
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>

#include "decode.h"
#include "device_common.cuh"

namespace {

__device__ __forceinline__ float e4m3_value(uint32_t c)
{
    const uint32_t e = (c >> 3) & 15u, m = c & 7u;
    float v;
    if ((c & 0x7fu) == 0x7fu) v = __int_as_float(0x7fc00000);
    else if (e == 0) v = (float)m * 0x1p-9f;
    else v = __uint_as_float(((e + 120u) << 23) | (m << 20));
    return (c & 0x80u) ? -v : v;
}

/* A lane's scale bytes of a tile (sv: NVFP4 the 8 bytes at g * 8, MXFP4 the 4 at g * 4, g = lane / 4):
 * the code of row g + 8 hi for k-tile j (16 columns). */
__device__ __forceinline__ uint32_t scale_byte(bool nv, uint2 sv, int hi, int j)
{
    if (nv) return ((hi ? sv.y : sv.x) >> (8 * j)) & 0xffu;
    return (sv.x >> (8 * (2 * hi + (j >> 1)))) & 0xffu;
}

/* The scale of row g + 8 hi for k-tile j, exactly, for the RAW encodings (NaN codes give NaN). */
__device__ __forceinline__ float tile_scale(int enc, uint2 sv, int hi, int j)
{
    const bool nv = enc == QMM__ENC_NVFP4 || enc == QMM__ENC_NVFP4_RAW;
    const uint32_t u = scale_byte(nv, sv, hi, j);
    if (enc == QMM__ENC_NVFP4_RAW) return e4m3_value(u);
    if (nv) return ldexpf(1.0f + (float)(u & 7u) * 0.125f, (int)(u >> 3) - 9);
    return u == 0xffu ? __int_as_float(0x7fc00000) : ldexpf(1.0f, (int)u - 127);
}

template <bool HALF>
__device__ __forceinline__ uint16_t to_bits(float v)
{
    if (HALF) return __half_as_ushort(__float2half_rn(v));
    return __bfloat16_as_ushort(__float2bfloat16_rn(v));
}

constexpr int kDqWarps = 8;
constexpr int kDqTiles = 4; /* tiles per warp, their loads issued together */
/* halves per row of a warp's shared tile: 64 plus 8 of padding, so that the decode's 32-bit stores
 * (lane g, t to row g or g + 8, word 8 j + t) fall in 32 different banks (stride 36 words) instead of
 * 4 (stride 32: eight-way conflicts, 128 shared-memory cycles per tile) */
constexpr int kDqRow = 72;

/* Decode one tile (16 rows x ck columns, d = this lane's 16 bytes, sv = its scale bytes, see
 * scale_byte) into the warp's shared tile ts. */
template <bool HALF>
__device__ __forceinline__ void dequant_tile(uint4 d, uint2 sv, int enc, int mx_off, uint32_t fix2, int g, int t,
                                             uint16_t (*ts)[kDqRow])
{
    const uint32_t w[4] = {d.x, d.y, d.z, d.w};
    const bool fp8 = enc == QMM__ENC_FP8 || enc == QMM__ENC_FP8_RAW;
    const bool fast = enc == QMM__ENC_NVFP4 || enc == QMM__ENC_MXFP4 || enc == QMM__ENC_FP8;
    if (fast) {
        /* the kernels' own decode (decode.h): exact bf16 pairs of element * block scale * 2^-fix, then one
         * exact multiply by 2^fix; pairs (k, k + 1) of one row land as one 32-bit word */
        uint32_t(*tw)[kDqRow / 2] = reinterpret_cast<uint32_t(*)[kDqRow / 2]>(ts);
        auto put = [&](int r, int col, uint32_t v) {
            v = qmm__bf16x2_mul(v, fix2);
            if (HALF) {
                float2 f = __bfloat1622float2(*reinterpret_cast<__nv_bfloat162 *>(&v));
                __half2 h = __floats2half2_rn(f.x, f.y);
                v = *reinterpret_cast<uint32_t *>(&h);
            }
            tw[r][col / 2] = v;
        };
        if (fp8) {
#pragma unroll
            for (int wi = 0; wi < 4; wi++) {
                const int col = 16 * (wi >> 1) + 2 * t + 8 * (wi & 1);
                put(g, col, qmm__bf16x2_mul(qmm__e4m3x2_to_bf16x2(w[wi]), QMM__FP8_FACTOR));
                put(g + 8, col, qmm__bf16x2_mul(qmm__e4m3x2_to_bf16x2(w[wi] >> 8), QMM__FP8_FACTOR));
            }
        } else {
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const bool nv = enc == QMM__ENC_NVFP4;
                const uint32_t u0 = scale_byte(nv, sv, 0, j), u1 = scale_byte(nv, sv, 1, j);
                const uint32_t f0 = nv ? qmm__nvfp4_factor(u0) : qmm__mxfp4_factor(u0, mx_off);
                const uint32_t f1 = nv ? qmm__nvfp4_factor(u1) : qmm__mxfp4_factor(u1, mx_off);
                const int col = 16 * j + 2 * t;
                uint32_t r[4];
                qmm__e2m1_word_decode(w[j], r);
                put(g, col, qmm__bf16x2_mul(r[0], f0));
                put(g + 8, col, qmm__bf16x2_mul(r[1], f1));
                put(g, col + 8, qmm__bf16x2_mul(r[2], f0));
                put(g + 8, col + 8, qmm__bf16x2_mul(r[3], f1));
            }
        }
    } else if (fp8) {
#pragma unroll
        for (int wi = 0; wi < 4; wi++)
#pragma unroll
            for (int b = 0; b < 4; b++) {
                const int r = g + 8 * (b & 1), col = 16 * (wi >> 1) + 2 * t + (b >> 1) + 8 * (wi & 1);
                ts[r][col] = to_bits<HALF>(e4m3_value((w[wi] >> (8 * b)) & 0xffu));
            }
    } else {
#pragma unroll
        for (int j = 0; j < 4; j++) {
            uint32_t regs[4];
            qmm__e2m1_word_decode(w[j], regs); /* each half: the code's bits at bf16 positions, value * 2^-126 */
#pragma unroll
            for (int i = 0; i < 8; i++) {
                const int R = i & 3, e = i >> 2, r = g + 8 * (R & 1), col = 16 * j + 2 * t + e + 8 * (R >> 1);
                const uint32_t h = (regs[R] >> (16 * e)) & 0xffffu;
                const float v = __uint_as_float(h << 16) * 0x1p126f * tile_scale(enc, sv, R & 1, j);
                ts[r][col] = to_bits<HALF>(v);
            }
        }
    }
}

/* Rounds of kDqTiles tiles per warp (a round: the CTA's eight warps on 8 * kDqTiles adjacent tiles, the
 * warps on adjacent chunks), all of a round's loads issued first; rows [r0, r0 + rows) of W, r0 a
 * multiple of 16. Each tile is decoded into shared memory and written row by row, a row's ck elements by
 * ck / 8 adjacent lanes in 16-byte pieces, so that one store instruction fills whole 128-byte lines
 * (E2M1: 4 rows of 128 bytes; E4M3: 8 rows of 64). One round per CTA: a looping form over a grid of
 * what the device holds at once, the next round's loads issued before this round's decode and stores,
 * runs 3-13% slower (80 registers, three CTAs per SM against five; measured on an H200). This form (a
 * round's loads and its stores as two lambdas) compiles to 48 registers (58 in another form of the same
 * round) and takes 0-4% less time than that form (Nsight Compute). */
template <bool HALF>
__global__ void __launch_bounds__(kDqWarps * 32)
    dequant_kernel(const uint4 *data, const uint8_t *scales, int enc, int n, int k, int chunks, int strip0,
                   int strip_count, int r0, int rows, uint16_t *dst, int mx_off, uint32_t fix2)
{
    __shared__ __align__(16) uint16_t tile_s[kDqWarps][16][kDqRow];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const long long total = (long long)strip_count * chunks;
    const long long rounds = (total + kDqWarps * kDqTiles - 1) / (kDqWarps * kDqTiles);
    const bool fp8 = enc == QMM__ENC_FP8 || enc == QMM__ENC_FP8_RAW;
    const int ck = fp8 ? 32 : 64;
    const int stile_bytes = fp8 ? 0 : (enc == QMM__ENC_NVFP4 || enc == QMM__ENC_NVFP4_RAW) ? 64 : 32;
    uint4 dv[kDqTiles];
    uint2 sv[kDqTiles];
    /* this warp's tiles of round r into (d, s) */
    auto load = [&](long long r, uint4(&d)[kDqTiles], uint2(&s)[kDqTiles]) {
#pragma unroll
        for (int i = 0; i < kDqTiles; i++) {
            const long long tile = r * kDqWarps * kDqTiles + warp + (long long)i * kDqWarps;
            d[i] = make_uint4(0u, 0u, 0u, 0u), s[i] = make_uint2(0u, 0u);
            if (tile < total) {
                const size_t at = (size_t)strip0 * chunks + (size_t)tile;
                d[i] = __ldcs(data + at * 32 + lane);
                if (stile_bytes == 64) s[i] = *reinterpret_cast<const uint2 *>(scales + at * 64 + g * 8);
                else if (stile_bytes == 32) s[i].x = *reinterpret_cast<const uint32_t *>(scales + at * 32 + g * 4);
            }
        }
    };
    uint16_t(*ts)[kDqRow] = tile_s[warp];
    const int lpr = ck / 8, rpi = 32 / lpr, piece = lane % lpr; /* lanes per row, rows per store */
    /* decode and write out this warp's tiles (d, sc) of round r */
    auto put = [&](long long r, const uint4(&d)[kDqTiles], const uint2(&sc)[kDqTiles]) {
#pragma unroll
        for (int i = 0; i < kDqTiles; i++) {
            const long long tile = r * kDqWarps * kDqTiles + warp + (long long)i * kDqWarps;
            if (tile >= total) break;
            const int strip = strip0 + (int)(tile / chunks), chunk = (int)(tile % chunks);
            __syncwarp(); /* the tile before is written out */
            dequant_tile<HALF>(d[i], sc[i], enc, mx_off, fix2, g, t, ts);
            __syncwarp();
            const int col0 = chunk * ck + piece * 8;
            for (int rr = lane / lpr; rr < 16; rr += rpi) {
                const int row = strip * 16 + rr;
                if (row >= n || row < r0 || row >= r0 + rows) continue;
                uint16_t *out = dst + (size_t)(row - r0) * k + col0;
                if (k % 8 == 0 && col0 + 8 <= k) {
                    *reinterpret_cast<uint4 *>(out) = *reinterpret_cast<const uint4 *>(&ts[rr][piece * 8]);
                } else {
                    for (int c = 0; c < 8; c++)
                        if (col0 + c < k) out[c] = ts[rr][piece * 8 + c];
                }
            }
        }
    };
    const long long r = blockIdx.x;
    if (r >= rounds) return;
    load(r, dv, sv);
    put(r, dv, sv);
}

__global__ void split_fp16_kernel(const __half *a, size_t m, size_t k, size_t lda, __nv_bfloat16 *hi, __nv_bfloat16 *lo)
{
    const size_t total = m * k;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        const size_t r = i / k, c = i % k;
        const float f = __half2float(a[r * lda + c]);
        const __nv_bfloat16 h = __float2bfloat16_rn(f);
        hi[i] = h;
        lo[i] = __float2bfloat16_rn(f - __bfloat162float(h));
    }
}

/* The epilogue of the materialize path: one thread per column of C (n of the weight), kEpiRows rows
 * of A per block row, so a column's factors are read once per kEpiRows rows, no index is divided, and
 * a warp's loads (128 bytes) and stores are contiguous. (One element per thread, with its row and
 * column divided out of a 64-bit index, spends its time on instructions.) */
constexpr int kEpiRows = 8, kEpiThreads = 256;

__global__ void __launch_bounds__(kEpiThreads) epilogue_kernel(const float *acc, size_t ldacc, size_t m, size_t n,
                                                               size_t n0, qmm__cuda_epilogue e)
{
    const size_t c = (size_t)blockIdx.x * kEpiThreads + threadIdx.x;
    if (c >= n) return;
    const float f = qmm__epilogue_factor(e, n0 + c);
    const float bias = e.bias ? e.bias[n0 + c] : 0.0f;
    for (size_t r0 = (size_t)blockIdx.y * kEpiRows; r0 < m; r0 += (size_t)gridDim.y * kEpiRows) {
        float v[kEpiRows];
#pragma unroll
        for (int j = 0; j < kEpiRows; j++) /* all loads first: kEpiRows in flight per thread */
            if (r0 + j < m) v[j] = acc[(r0 + j) * ldacc + c];
#pragma unroll
        for (int j = 0; j < kEpiRows; j++)
            if (r0 + j < m) qmm__epilogue_finish(e, (r0 + j) * e.ldc + n0 + c, v[j], f, bias);
    }
}

unsigned grid_for(size_t total, unsigned block)
{
    size_t g = (total + block - 1) / block;
    return (unsigned)std::min<size_t>(std::max<size_t>(g, 1), 65535u * 16u);
}

} // namespace

extern "C" int qmm__cuda_dequantize(const qmm__cuda_prepared *w, size_t r0, size_t rows, void *dst, int dst_half,
                                    int unfixed, void *stream)
{
    const int strip0 = (int)(r0 / 16), strip_end = (int)((r0 + rows + 15) / 16);
    const long long tiles = (long long)(strip_end - strip0) * (long long)w->chunks;
    const unsigned grid = (unsigned)((tiles + kDqWarps * kDqTiles - 1) / (kDqWarps * kDqTiles));
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    const uint4 *data = static_cast<const uint4 *>(w->data);
    const uint8_t *sc = static_cast<const uint8_t *>(w->scales);
    /* 2^fix as a bf16 pair (a power of two in bf16's range: normal, or subnormal down to 2^-133) */
    uint32_t fix_bits;
    memcpy(&fix_bits, &w->fix, 4);
    const int e = (int)((fix_bits >> 23) & 0xff) - 127;
    const uint32_t fb = e >= -126 ? (fix_bits >> 16) : (0x40u >> (-126 - e));
    const uint32_t fix2 = unfixed ? 0x3f803f80u : fb | (fb << 16); /* unfixed: times 1.0, the decode's own value */
    auto kernel = dst_half ? dequant_kernel<true> : dequant_kernel<false>;
    kernel<<<grid, kDqWarps * 32, 0, s>>>(data, sc, (int)w->enc, (int)w->n, (int)w->k, (int)w->chunks, strip0,
                                          strip_end - strip0, (int)r0, (int)rows, static_cast<uint16_t *>(dst), w->mx_off,
                                          fix2);
    return (int)cudaGetLastError();
}

extern "C" int qmm__cuda_split_fp16(const void *a, size_t m, size_t k, size_t lda, void *hi, void *lo, void *stream)
{
    split_fp16_kernel<<<grid_for(m * k, 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const __half *>(a), m, k, lda, static_cast<__nv_bfloat16 *>(hi), static_cast<__nv_bfloat16 *>(lo));
    return (int)cudaGetLastError();
}

extern "C" int qmm__cuda_epilogue_apply(const float *acc, size_t ldacc, size_t m, size_t n, size_t n0,
                                        const qmm__cuda_epilogue *e, void *stream)
{
    const dim3 grid((unsigned)((n + kEpiThreads - 1) / kEpiThreads),
                    (unsigned)std::min<size_t>(std::max<size_t>((m + kEpiRows - 1) / kEpiRows, 1), 65535u));
    epilogue_kernel<<<grid, kEpiThreads, 0, static_cast<cudaStream_t>(stream)>>>(acc, ldacc, m, n, n0, *e);
    return (int)cudaGetLastError();
}

extern "C" int qmm__cuda_copy_gbps(void *buf_a, void *buf_b, size_t bytes, void *stream, double *gbps)
{
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    cudaEvent_t e0, e1;
    cudaError_t err = cudaEventCreate(&e0);
    if (err != cudaSuccess) return (int)err;
    if ((err = cudaEventCreate(&e1)) != cudaSuccess) {
        cudaEventDestroy(e0);
        return (int)err;
    }
    float times[7];
    for (int i = 0; i < 9 && err == cudaSuccess; i++) { /* two warm-ups, then seven timed copies */
        err = cudaEventRecord(e0, s);
        if (err == cudaSuccess) err = cudaMemcpyAsync(buf_b, buf_a, bytes, cudaMemcpyDeviceToDevice, s);
        if (err == cudaSuccess) err = cudaEventRecord(e1, s);
        if (err == cudaSuccess) err = cudaEventSynchronize(e1);
        if (err == cudaSuccess && i >= 2) err = cudaEventElapsedTime(&times[i - 2], e0, e1);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    if (err != cudaSuccess) return (int)err;
    std::sort(times, times + 7);
    *gbps = 2.0 * (double)bytes / (times[3] * 1e-3) * 1e-9; /* bytes read + bytes written */
    return 0;
}
