/* Bit-exact decoding of the prepared weight layout (docs/cuda.md) into bf16 pairs, shared by
 * the CUDA kernels and by a host emulation that tests the layout on machines without a GPU.
 *
 * The element codes are placed straight into bf16 bit fields, which gives each value times a constant
 * power of two; a bf16 multiply by a per-block factor then yields element * block scale times 2^-fix,
 * exactly (products have at most 6 significant bits), and 2^fix goes into the epilogue:
 *   E2M1 (s e1 e0 m) -> bf16 bits s<<15 | e1e0m<<6 is the value * 2^-126 (0.5 is the bf16 subnormal
 *     2^-127; bf16 arithmetic keeps subnormals, the GPU test checks it);
 *   NVFP4 block scale, stored as an E5M3 code u of |s| (see prepare.c) -> bf16 bits u<<4 + 236<<7 is
 *     s * 2^118, so the product is w * s * 2^-8 (fix = 8);
 *   MXFP4 block scale code c -> bf16 exponent field c + off with off = 126 - K chosen per weight, so the
 *     product is w * 2^(e - K) (fix = K);
 *   E4M3 (s eeee mmm) -> bf16 bits s<<15 | eeeemmm<<4 is the value * 2^-120, and the factor is 2^120. */
#ifndef QMM_CUDA_DECODE_H
#define QMM_CUDA_DECODE_H

#include <stdint.h>

#if defined(__CUDACC__)
#define QMM__HD static __host__ __device__ __forceinline__
#else
#define QMM__HD static inline
#endif

/* A prepared E2M1 word holds the 8 codes of one lane's four fragment registers (R0..R3, low and high
 * element each), placed so that each register needs few instructions (11 for all four, found by an
 * exhaustive search over shift-and-mask placements; the plain nibble order needs about 20). A code is a
 * sign s and a magnitude e1e0m; in a register the magnitude goes to bf16 bits 8:6 (22:24 for the high
 * element) and the sign to bit 15 (31). In the word:
 *   R0: magnitudes at 5:3 and 21:19, signs at 12 and 28      -> (q << 3) & M
 *   R1: magnitudes at 2:0 and 18:16, signs at 9 and 25       -> (q << 6) & M
 *   R2: magnitudes at 8:6 and 24:22, signs at 10 and 26      -> q & mag | (q << 5) & sign
 *   R3: magnitudes at 15:13 and 31:29, signs at 11 and 27    -> (q >> 7) & mag | (q << 4) & sign
 * Each result is the bf16 pair of the two values times 2^-126. */
#define QMM__E2M1_MAG 0x01c001c0u
#define QMM__E2M1_SIGN 0x80008000u

QMM__HD void qmm__e2m1_word_decode(uint32_t q, uint32_t r[4])
{
    r[0] = (q << 3) & (QMM__E2M1_MAG | QMM__E2M1_SIGN);
    r[1] = (q << 6) & (QMM__E2M1_MAG | QMM__E2M1_SIGN);
    r[2] = (q & QMM__E2M1_MAG) | ((q << 5) & QMM__E2M1_SIGN);
    r[3] = ((q >> 7) & QMM__E2M1_MAG) | ((q << 4) & QMM__E2M1_SIGN);
}

/* The inverse, for prepare: codes[R][e] (4-bit codes of register R, element e = 0 low, 1 high). */
QMM__HD uint32_t qmm__e2m1_word_pack(const uint8_t codes[4][2])
{
    static const int mag_at[4] = {3, 0, 6, 13}, sign_at[4] = {12, 9, 10, 11};
    uint32_t q = 0;
    for (int R = 0; R < 4; R++)
        for (int e = 0; e < 2; e++) {
            const uint32_t c = codes[R][e];
            q |= (c & 7u) << (mag_at[R] + 16 * e);
            q |= ((c >> 3) & 1u) << (sign_at[R] + 16 * e);
        }
    return q;
}

/* Two E4M3 codes at bits [7:0] and [23:16] of x -> bf16x2, each value * 2^-120. */
QMM__HD uint32_t qmm__e4m3x2_to_bf16x2(uint32_t x)
{
    return ((x & 0x007f007fu) << 4) | ((x & 0x00800080u) << 8);
}

/* Two prepared NVFP4 scale codes, one in each half (bits 7:0 and 23:16; each the E5M3 of |s|) -> the
 * bf16 pair of their s * 2^118 (kernels build the factors of two blocks at once this way). */
#define QMM__NVFP4_FACTOR_BIAS 0x76007600u /* 236 << 7 in each half */
QMM__HD uint32_t qmm__nvfp4_factor2(uint32_t u2) { return u2 * 16u + QMM__NVFP4_FACTOR_BIAS; }

/* A prepared NVFP4 scale code u -> s * 2^118 in both halves of a bf16x2. */
QMM__HD uint32_t qmm__nvfp4_factor(uint32_t u) { return qmm__nvfp4_factor2(u * 0x00010001u); }

/* MXFP4, with off = 126 - K: the offset of qmm__mxfp4_factor2 for a weight (computed once). */
QMM__HD uint32_t qmm__mxfp4_bias(int off) { return (uint32_t)(off * 128) * 0x00010001u; }

/* Two MXFP4 scale codes, one in each half -> the bf16 pair of their 2^(c - 127 + 126 - K). Each half is
 * (c + off) << 7, exact while c + off stays in 1 .. 254 (prepare.c chooses K so). */
QMM__HD uint32_t qmm__mxfp4_factor2(uint32_t c2, uint32_t bias) { return c2 * 128u + bias; }

/* An MXFP4 scale code c -> 2^(c - 127 + 126 - K) in both halves. */
QMM__HD uint32_t qmm__mxfp4_factor(uint32_t c, int off) { return qmm__mxfp4_factor2(c * 0x00010001u, qmm__mxfp4_bias(off)); }

/* Two E4M3 codes at bits [7:0] and [23:16] of x -> fp16x2, each value * 2^-8 (eeeemmm lands in fp16 bits
 * 13:7, so the exponent bias goes from 7 to 15; E4M3 subnormals land on fp16 subnormals, m * 2^-17). Every
 * such value is an fp16 value, so fp16 activations meet it in one fp16 MMA and 2^8 goes to the epilogue. */
QMM__HD uint32_t qmm__e4m3x2_to_f16x2(uint32_t x)
{
    return ((x & 0x007f007fu) << 7) | ((x & 0x00800080u) << 8);
}
#define QMM__FP8_HALF_FIX 8

/* The same E2M1 word decoded into fp16 pairs (for fp16 activations, one fp16 MMA per product): the
 * magnitude e1e0m goes to fp16 bits 11:9 (27:25), e1e0 the low exponent bits and m the top mantissa bit,
 * so each value is times 2^-14 (0.5 is the fp16 subnormal 2^-15); the sign to bit 15 (31). Magnitude and
 * sign move by different amounts here, so a register takes two shifts and two masks. */
#define QMM__E2M1_MAG16 0x0e000e00u
QMM__HD void qmm__e2m1_word_decode_f16(uint32_t q, uint32_t r[4])
{
    r[0] = ((q << 6) & QMM__E2M1_MAG16) | ((q << 3) & QMM__E2M1_SIGN);
    r[1] = ((q << 9) & QMM__E2M1_MAG16) | ((q << 6) & QMM__E2M1_SIGN);
    r[2] = ((q << 3) & QMM__E2M1_MAG16) | ((q << 5) & QMM__E2M1_SIGN);
    r[3] = ((q >> 4) & QMM__E2M1_MAG16) | ((q << 4) & QMM__E2M1_SIGN);
}

/* Two prepared NVFP4 scale codes (E5M3 of |s|, bits 7:0 and 23:16) -> the fp16 pair of their s * 2^7:
 * u << 7 is the fp16 (1 + m/8) * 2^(e - 15), and 13 more in the exponent makes it s = (1 + m/8) *
 * 2^(e - 9) times 2^7 (e <= 17 for E4M3's 448, so the exponent stays <= 30). A decoded E2M1 value (times
 * 2^-14) times this is w * s * 2^-7 exactly: at most 6 significant bits, between 2^-17 and 21 in
 * magnitude, inside fp16's range and precision (subnormals from 2^-24). */
#define QMM__NVFP4_FACTOR_BIAS16 0x34003400u /* 13 << 10 in each half */
QMM__HD uint32_t qmm__nvfp4_factor2_f16(uint32_t u2) { return u2 * 128u + QMM__NVFP4_FACTOR_BIAS16; }
#define QMM__NVFP4_HALF_FIX 7

/* MXFP4 in fp16, for weights whose used scale codes c span at most 24 (c_max - 24 .. c_max; all-zero
 * blocks and padding take c_max, see prepare.c): the factor is 2^(c - c_max + 15), the fp16 exponent field
 * c - c_max + 30 (6 .. 30, normal), and a decoded E2M1 value (times 2^-14) times it is w * 2^(c - c_max + 1):
 * at least 2^-24 (w = 0.5 at c = c_max - 24, the smallest fp16 subnormal), at most 12, so exact; the same
 * power of two as the bf16 decode (2^(c - c_max + 1) = 2^(c - 127) * 2^-K with K = c_max - 128), so the fix
 * is K as there. Two codes c2 (bits 7:0 and 23:16) -> c2 * 1024 + bias16, with bias16 = (30 - c_max) * 1024
 * in each half, computed modulo 2^32: every half's result fits its 16 bits, so the carries and borrows
 * between the halves cancel. c_max = 254 - off (off = 126 - K, qmm__mxfp4_bias). */
#define QMM__MXFP4_HALF_RANGE 24
QMM__HD uint32_t qmm__mxfp4_bias16(int off) { return (uint32_t)(off - 224) * 1024u * 0x00010001u; }
QMM__HD uint32_t qmm__mxfp4_factor2_f16(uint32_t c2, uint32_t bias16) { return c2 * 1024u + bias16; }

/* 2^120 in both halves: turns an E4M3 decode into the exact E4M3 value. */
#define QMM__FP8_FACTOR 0x7b807b80u

/* The NVFP4 fix: the products carry 2^-8. */
#define QMM__NVFP4_FIX 8

/* Geometry of the prepared layout: 16-row strips, and chunks of K of 64 (E2M1) or 32 (E4M3) elements;
 * one (strip, chunk) tile is 512 bytes, 16 per lane. */
#define QMM__STRIP 16
#define QMM__TILE_BYTES 512
#define QMM__CHUNK_FP4 64
#define QMM__CHUNK_FP8 32

#endif
