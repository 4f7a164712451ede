/* One weight tile of the tensor-core kernels (kernels_mma.cuh): the kernels' parameters, the per-encoding
 * traits, and what a warp does with the 16 bytes per lane of one tile: the block scales' load, the decode
 * into A fragments (bit placement, the shifts as multiplies, the block factors) and the MMAs against NB
 * groups of 8 rows of A (compute_tile_b), whatever the variant that stages A and streams the tiles.
 *
 * The instruction budget decides the GEMV's speed (the H200 has about 4 issue slots per SM cycle for
 * 28 E2M1 weights arriving per SM cycle at full bandwidth), so this code is written for it: the block
 * factors of two k-tiles are built in one register and selected by half (the selection folds into the
 * bf16 multiply), the decode's shifts go to the FMA pipe as multiplies, and the B fragments come four
 * words at a time.
 *
 * Contents, in order: kPow2Shifts and mma_params; the kernel-side encodings (kEncFp8Half,
 * kEncNvfp4Half, kEncMxfp4Half), enc_traits, mma_w and load_scales; lo_lo / hi_hi; the E2M1 decode
 * (shl, shr, e2m1_decode, its fp16 form e2m1_decode_f16, nvfp4_factor2_lo / hi for both forms); a
 * tile's block factors (factors_of) and one k-tile's A fragment (decode_ktile), which the WG variant
 * (kernels_mma_wg.cuh) shares; compute_tile_b. */
#ifndef QMM_CUDA_KERNELS_MMA_TILE_CUH
#define QMM_CUDA_KERNELS_MMA_TILE_CUH

#include <cuda_runtime.h>

#include "decode.h"
#include "device_common.cuh"

namespace qmm_mma {

/* the powers in mma_params::pow2: left shifts by 3 to 6, and right shifts by 7 and 4 as the high word of
 * a multiply by 2^25 and 2^28 (kernels_mma.cu fills them; see e2m1_decode); then the fp16 decodes' left
 * shifts by 7, 9, 10 and 2 and their right shift by 1 (2^31) */
constexpr int kPow2Shifts[] = {3, 4, 5, 6, 25, 28, 7, 9, 31, 10, 2};
constexpr int kPow2Count = sizeof kPow2Shifts / sizeof kPow2Shifts[0];

struct mma_params {
    const uint4 *data;
    const uint8_t *scales;
    const uint16_t *a;
    size_t lda;
    int m, n, k;
    int strips, chunks, cps, splits, mtiles;
    uint32_t mx_bias; /* MXFP4: qmm__mxfp4_bias of the weight (qmm__mxfp4_bias16 for kEncMxfp4Half) */
    /* 2^kPow2Shifts[i], read from the parameters so that ptxas cannot see them as powers of two: the
     * E2M1 decode's shifts become multiplies (see e2m1_decode) */
    uint32_t pow2[kPow2Count];
    int aligned;      /* A rows and base 16-byte aligned: whole pieces load with one 16-byte load */
    /* split pairs (fused path, see pair_units): `pairs` = 1: the reduction adds the partials two by two,
     * (p0 + p1) + (p2 + p3) + ...; `half` > 0: each unit's sum restarts after `half` tiles, so that its
     * partial is already such a pair (the first half's sum waits in the unit's own partial slot) */
    int pairs, half;
    /* WHOLE: chunks of A staged at a time where the CTA's K range is staged in two parts (a barrier and a
     * second staging between them, whole_part in kernels_mma_launch.cuh); 0: the whole range at once */
    int whole_part;
    float *partials;
    unsigned *counters;
    qmm__cuda_epilogue e;
};

/* FP8, NVFP4 and MXFP4 weights with fp16 activations: the tiles decoded to fp16 (qmm__e4m3x2_to_f16x2,
 * qmm__e2m1_word_decode_f16 with qmm__nvfp4_factor2_f16 or qmm__mxfp4_factor2_f16) for fp16 MMAs, so fp16
 * activations take one MMA per product, as bf16 ones do, and every variant of the bf16 kernels (PIPE
 * included) runs them; the epilogue's factor carries any change of fix (kernels_mma.cu). MXFP4 only for
 * weights whose scale codes span at most QMM__MXFP4_HALF_RANGE (prepare.c's mx_half; wider ones split
 * fp16 A). Kernel-side encodings only, never prepared ones. */
constexpr int kEncFp8Half = 16;
constexpr int kEncNvfp4Half = 17;
constexpr int kEncMxfp4Half = 18;
__host__ __device__ constexpr bool is_fp8(int enc) { return enc == QMM__ENC_FP8 || enc == kEncFp8Half; }
__host__ __device__ constexpr bool is_nvfp4(int enc) { return enc == QMM__ENC_NVFP4 || enc == kEncNvfp4Half; }
__host__ __device__ constexpr bool is_mxfp4(int enc) { return enc == QMM__ENC_MXFP4 || enc == kEncMxfp4Half; }
__host__ __device__ constexpr bool is_half(int enc) { return enc == kEncFp8Half || enc == kEncNvfp4Half || enc == kEncMxfp4Half; }

template <int ENC> struct enc_traits;
template <> struct enc_traits<QMM__ENC_NVFP4> { static constexpr int tile_k = 64, scale_tile = 64, scale_lane = 8; };
template <> struct enc_traits<QMM__ENC_MXFP4> { static constexpr int tile_k = 64, scale_tile = 32, scale_lane = 4; };
template <> struct enc_traits<QMM__ENC_FP8> { static constexpr int tile_k = 32, scale_tile = 0, scale_lane = 0; };
template <> struct enc_traits<kEncFp8Half> : enc_traits<QMM__ENC_FP8> {};
template <> struct enc_traits<kEncNvfp4Half> : enc_traits<QMM__ENC_NVFP4> {};
template <> struct enc_traits<kEncMxfp4Half> : enc_traits<QMM__ENC_MXFP4> {};

/* The MMA of a decoded fragment: fp16 for the fp16 decodes, bf16 otherwise. */
template <int ENC>
__device__ __forceinline__ void mma_w(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    if constexpr (is_half(ENC)) qmm__mma_f16(d, a, b0, b1);
    else qmm__mma_bf16(d, a, b0, b1);
}

/* This lane's block scale codes of one tile (sp already points at its row group's bytes). */
template <int ENC>
__device__ __forceinline__ uint2 load_scales(const uint8_t *sp)
{
    if constexpr (is_nvfp4(ENC)) return *reinterpret_cast<const uint2 *>(sp);
    else if constexpr (is_mxfp4(ENC)) return make_uint2(*reinterpret_cast<const uint32_t *>(sp), 0u);
    else return make_uint2(0u, 0u);
}

/* The two halves of a bf16 pair, each in both halves (folds into the multiply's operand selector). */
__device__ __forceinline__ uint32_t lo_lo(uint32_t x)
{
    uint32_t d;
    asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %1;\nmov.b32 %0, {l, l};\n}\n" : "=r"(d) : "r"(x));
    return d;
}
__device__ __forceinline__ uint32_t hi_hi(uint32_t x)
{
    uint32_t d;
    asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %1;\nmov.b32 %0, {h, h};\n}\n" : "=r"(d) : "r"(x));
    return d;
}

/* The E2M1 decode of the kernels: qmm__e2m1_word_decode (decode.h), with its shifts done as multiplies
 * by p.pow2 (kPow2 = 1, the default: the left shifts; 2: the right ones too, as the high word of a
 * multiply; 0: plain shifts; -DQMM_CUDA_DECODE_POW2=N for A/B runs). q * 2^s is q << s and
 * the high word of q * 2^(32 - s) is q >> s, so the bits are the same. Why: the decode's shifts and
 * masks go to the ALU pipe (LOP3, SHF), which takes two cycles per warp instruction and is the busiest
 * pipe of the E2M1 kernels (Nsight: 59% at M = 16, 63% in the GEMV, against 24% and 46% for the FMA
 * pipe); a multiply by a value ptxas cannot fold goes to the FMA pipe (IMAD, IMAD.HI) instead, and
 * leaves the ALU pipe only the masks. SASS of the steady loops (ptxas 13.0, sm_90a; ALU: LOP3, SHF,
 * IADD3, ISETP; FMA: IMAD, HMUL2), per four tiles of the GEMV (WHOLE, one 8-row group) ALU 170 at
 * kPow2 = 0, 146 at 1, 133 at 2, FMA 116, 139, 168; per eight tiles of PIPE at 16 rows ALU 446, 366, 326,
 * FMA 221, 292, 356 (counted with the factors' high halves built another way; the masked right shift
 * used here takes the GEMV's loop from 327 to 318 instructions at kPow2 = 1). kPow2 = 2 makes the GEMV
 * spill 12 bytes, so 1 is the default. */
#ifndef QMM_CUDA_DECODE_POW2
#define QMM_CUDA_DECODE_POW2 1
#endif
constexpr int kPow2 = QMM_CUDA_DECODE_POW2;
__host__ __device__ constexpr int pow2_slot(int shift, int i = 0) { return kPow2Shifts[i] == shift ? i : pow2_slot(shift, i + 1); }

template <int S>
__device__ __forceinline__ uint32_t shl(const mma_params &p, uint32_t q)
{
    constexpr int i = pow2_slot(S);
    if constexpr (kPow2 >= 1) return q * p.pow2[i];
    else return q << S;
}
template <int S>
__device__ __forceinline__ uint32_t shr(const mma_params &p, uint32_t q)
{
    constexpr int i = pow2_slot(32 - S);
    if constexpr (kPow2 >= 2) return __umulhi(q, p.pow2[i]);
    else return q >> S;
}
__device__ __forceinline__ void e2m1_decode(const mma_params &p, uint32_t q, uint32_t r[4])
{
    constexpr uint32_t MS = QMM__E2M1_MAG | QMM__E2M1_SIGN;
    r[0] = shl<3>(p, q) & MS;
    r[1] = shl<6>(p, q) & MS;
    r[2] = (q & QMM__E2M1_MAG) | (shl<5>(p, q) & QMM__E2M1_SIGN);
    r[3] = (shr<7>(p, q) & QMM__E2M1_MAG) | (shl<4>(p, q) & QMM__E2M1_SIGN);
}
/* The fp16 form (kEncNvfp4Half, kEncMxfp4Half): qmm__e2m1_word_decode_f16 */
__device__ __forceinline__ void e2m1_decode_f16(const mma_params &p, uint32_t q, uint32_t r[4])
{
    constexpr uint32_t M = QMM__E2M1_MAG16, S = QMM__E2M1_SIGN;
    const uint32_t q3 = shl<3>(p, q), q6 = shl<6>(p, q);
    r[0] = (q6 & M) | (q3 & S);
    r[1] = (shl<9>(p, q) & M) | (q6 & S);
    r[2] = (q3 & M) | (shl<5>(p, q) & S);
    r[3] = (shr<4>(p, q) & M) | (shl<4>(p, q) & S);
}
/* qmm__nvfp4_factor2 (F16: qmm__nvfp4_factor2_f16) of the codes in bytes 0 and 2 (lo) or 1 and 3 (hi) of
 * u: ((u >> 8) & 0x00ff00ff) * 16 is (u & 0xff00ff00) >> 4, and * 128 is >> 1 */
template <bool F16>
__device__ __forceinline__ uint32_t nvfp4_factor2_lo(const mma_params &p, uint32_t u)
{
    return shl<F16 ? 7 : 4>(p, u & 0x00ff00ffu) + (F16 ? QMM__NVFP4_FACTOR_BIAS16 : QMM__NVFP4_FACTOR_BIAS);
}
template <bool F16>
__device__ __forceinline__ uint32_t nvfp4_factor2_hi(const mma_params &p, uint32_t u)
{
    return shr<F16 ? 1 : 4>(p, u & 0xff00ff00u) + (F16 ? QMM__NVFP4_FACTOR_BIAS16 : QMM__NVFP4_FACTOR_BIAS);
}

/* The block factors of one tile from this lane's scale codes (none for FP8). NVFP4: x0, x1 of row g for
 * k-tiles (0, 2) and (1, 3), y0, y1 the same of row g + 8; MXFP4: x0, x1 the (row g, row g + 8) factors
 * of the first and the second 32-column block. */
struct tile_factors {
    uint32_t x0, x1, y0, y1;
};
template <int ENC>
__device__ __forceinline__ tile_factors factors_of(const mma_params &p, uint2 sc)
{
    tile_factors f = {0, 0, 0, 0};
    if constexpr (is_nvfp4(ENC)) {
        f.x0 = nvfp4_factor2_lo<is_half(ENC)>(p, sc.x);
        f.x1 = nvfp4_factor2_hi<is_half(ENC)>(p, sc.x);
        f.y0 = nvfp4_factor2_lo<is_half(ENC)>(p, sc.y);
        f.y1 = nvfp4_factor2_hi<is_half(ENC)>(p, sc.y);
    } else if constexpr (ENC == QMM__ENC_MXFP4) {
        f.x0 = qmm__mxfp4_factor2(sc.x & 0x00ff00ffu, p.mx_bias);
        f.x1 = qmm__mxfp4_factor2((sc.x >> 8) & 0x00ff00ffu, p.mx_bias);
    } else if constexpr (ENC == kEncMxfp4Half) {
        /* qmm__mxfp4_factor2_f16: ((u >> 8) & 0x00ff00ff) * 1024 is (u & 0xff00ff00) * 4 modulo 2^32, and
         * modulo 2^32 is all the factors need */
        f.x0 = shl<10>(p, sc.x & 0x00ff00ffu) + p.mx_bias;
        f.x1 = shl<2>(p, sc.x & 0xff00ff00u) + p.mx_bias;
    }
    return f;
}

/* The A fragment of k-tile j (0 .. 3) of a tile whose lane words are w: decoded, times its block factors
 * (the layout of mma.m16n8k16's A, which is also a warp's part of wgmma's register A). */
template <int ENC>
__device__ __forceinline__ void decode_ktile(const mma_params &p, const uint32_t (&w)[4], const tile_factors &fc, int j,
                                             uint32_t (&a)[4])
{
    if constexpr (is_fp8(ENC)) {
        /* two E4M3 codes (bytes 0 and 2 of x) as an fp16 pair times 2^-8, or the exact bf16 pair */
        auto e4m3x2 = [](uint32_t x) {
            if constexpr (is_half(ENC)) return qmm__e4m3x2_to_f16x2(x);
            else return qmm__bf16x2_mul(qmm__e4m3x2_to_bf16x2(x), QMM__FP8_FACTOR);
        };
        const uint32_t w0 = w[2 * j], w1 = w[2 * j + 1];
        a[0] = e4m3x2(w0);
        a[1] = e4m3x2(w0 >> 8);
        a[2] = e4m3x2(w1);
        a[3] = e4m3x2(w1 >> 8);
    } else {
        uint32_t f0, f1;
        if constexpr (is_nvfp4(ENC)) {
            f0 = j == 0 ? lo_lo(fc.x0) : j == 1 ? lo_lo(fc.x1) : j == 2 ? hi_hi(fc.x0) : hi_hi(fc.x1);
            f1 = j == 0 ? lo_lo(fc.y0) : j == 1 ? lo_lo(fc.y1) : j == 2 ? hi_hi(fc.y0) : hi_hi(fc.y1);
        } else {
            f0 = j < 2 ? lo_lo(fc.x0) : lo_lo(fc.x1);
            f1 = j < 2 ? hi_hi(fc.x0) : hi_hi(fc.x1);
        }
        auto mul = [](uint32_t x, uint32_t f) {
            if constexpr (is_half(ENC)) return qmm__f16x2_mul(x, f);
            else return qmm__bf16x2_mul(x, f);
        };
        if constexpr (is_half(ENC)) e2m1_decode_f16(p, w[j], a);
        else e2m1_decode(p, w[j], a);
        a[0] = mul(a[0], f0);
        a[1] = mul(a[1], f1);
        a[2] = mul(a[2], f0);
        a[3] = mul(a[3], f1);
    }
}

/* One weight tile of this lane against the staged activations: decode the 16 bytes into fragments,
 * multiply by the block factors, and accumulate with NB groups of 8 rows of A. bfetch(nb, gi, plane)
 * gives this lane's B fragments of the tile's 32-column group gi for row group nb (plane 1: the fp16
 * low parts): b0, b1 of the group's first k-tile, then of its second. With CHAINS = 2 the even and odd
 * k-tiles go to two accumulator sets, halving the dependent MMA chain of the one-group GEMV. */
template <int ENC, bool FP16A, int NB, int CHAINS, typename BF>
__device__ __forceinline__ void compute_tile_b(const mma_params &p, uint4 d, uint2 sc, BF bfetch, float (&acc)[CHAINS][NB][4])
{
    static_assert(!(is_half(ENC) && FP16A), "an fp16 decode meets fp16 activations as they are, never split");
    constexpr int groups = enc_traits<ENC>::tile_k / 32; /* 32-column groups: one 16-byte B load each */
    const uint32_t w[4] = {d.x, d.y, d.z, d.w};
    const tile_factors fc = factors_of<ENC>(p, sc);
    auto decode = [&](int j, uint32_t (&a)[4]) { decode_ktile<ENC>(p, w, fc, j, a); };
    /* fp16 A with NB >= 4 (STEP only): both k-tiles of a group decoded first, then the row groups of A
     * in two halves, so only half of the B fragments (hi and lo parts, NB x 4 registers) are live at a
     * time: STEP at 64 rows spills 308 bytes in one pass, 172 in halves (NVFP4's instance, sm_90a; FP8's
     * and NVFP4's fp16 activations take their fp16 decodes, so this runs for MXFP4 of a wide scale
     * range). Each accumulator still takes its k-tiles in the same order, so the bits are those of the one
     * pass. Not for bf16 A: there PIPE at 32 rows would copy one weight-ring load (scripts/ring_moves.py)
     * and PIPE at 64 rows keeps its 16-byte spill. */
    constexpr int HALVES = FP16A && NB >= 4 ? 2 : 1, NBH = NB / HALVES;
#pragma unroll
    for (int gi = 0; gi < groups; gi++) {
        if constexpr (HALVES == 1) {
            uint4 b[NB], bl[NB];
#pragma unroll
            for (int nb = 0; nb < NB; nb++) {
                b[nb] = bfetch(nb, gi, 0);
                if (FP16A) bl[nb] = bfetch(nb, gi, 1);
            }
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int j = gi * 2 + h; /* k-tile within the tile */
                uint32_t a[4];
                decode(j, a);
                float(&ac)[NB][4] = acc[j % CHAINS];
#pragma unroll
                for (int nb = 0; nb < NB; nb++) {
                    mma_w<ENC>(ac[nb], a, h ? b[nb].z : b[nb].x, h ? b[nb].w : b[nb].y);
                    if (FP16A) qmm__mma_bf16(ac[nb], a, h ? bl[nb].z : bl[nb].x, h ? bl[nb].w : bl[nb].y);
                }
            }
        } else {
            uint32_t a2[2][4];
            decode(gi * 2, a2[0]);
            decode(gi * 2 + 1, a2[1]);
#pragma unroll
            for (int hv = 0; hv < HALVES; hv++) {
                uint4 b[NBH], bl[NBH];
#pragma unroll
                for (int i = 0; i < NBH; i++) {
                    b[i] = bfetch(hv * NBH + i, gi, 0);
                    if (FP16A) bl[i] = bfetch(hv * NBH + i, gi, 1);
                }
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    float(&ac)[NB][4] = acc[(gi * 2 + h) % CHAINS];
#pragma unroll
                    for (int i = 0; i < NBH; i++) {
                        const int nb = hv * NBH + i;
                        mma_w<ENC>(ac[nb], a2[h], h ? b[i].z : b[i].x, h ? b[i].w : b[i].y);
                        if (FP16A) qmm__mma_bf16(ac[nb], a2[h], h ? bl[i].z : bl[i].x, h ? bl[i].w : bl[i].y);
                    }
                }
            }
        }
    }
}

} // namespace qmm_mma

#endif
