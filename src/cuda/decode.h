/* Bit-exact decoding of the prepared weight layout (README.md in this folder) into bf16 pairs, shared by
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

/* Two E2M1 codes at bits [3:0] and [19:16] of x -> bf16x2 (low half from bits 3:0), each value * 2^-126. */
QMM__HD uint32_t qmm__e2m1x2_to_bf16x2(uint32_t x)
{
    return ((x & 0x00070007u) << 6) | ((x & 0x00080008u) << 12);
}

/* Two E4M3 codes at bits [7:0] and [23:16] of x -> bf16x2, each value * 2^-120. */
QMM__HD uint32_t qmm__e4m3x2_to_bf16x2(uint32_t x)
{
    return ((x & 0x007f007fu) << 4) | ((x & 0x00800080u) << 8);
}

/* A prepared NVFP4 scale code u (E5M3 of |s|) -> s * 2^118 in both halves of a bf16x2. */
QMM__HD uint32_t qmm__nvfp4_factor(uint32_t u) { return u * 0x00100010u + 0x76007600u; }

/* An MXFP4 scale code c -> 2^(c - 127 + 126 - K) in both halves, with off = 126 - K. */
QMM__HD uint32_t qmm__mxfp4_factor(uint32_t c, int off) { return (uint32_t)((int)c + off) * 0x00800080u; }

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
