/* Scalar conversions between fp32 and the formats qmm stores, as inline functions for the core and the
 * CPU kernels. The public qmm_fp32_to_* functions (convert.c) wrap these; the header qmm.h states the
 * rounding rules. Everything works on the IEEE bit patterns with integer arithmetic, so the result does
 * not depend on the compiler's floating-point mode. */
#ifndef QMM_CORE_CONVERT_H
#define QMM_CORE_CONVERT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t qmm__f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline float qmm__f32_from_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* Rounds the magnitude m * 2^-s (s >= 1) to an integer, ties to even. Used for subnormal targets. */
static inline uint32_t qmm__shift_rne(uint32_t m, unsigned s)
{
    if (s >= 32) return 0;
    uint32_t r = m >> s;
    uint32_t rem = m & ((1u << s) - 1u);
    uint32_t half = 1u << (s - 1u);
    if (rem > half || (rem == half && (r & 1u))) r++;
    return r;
}

/* ---- bf16 ---- */
static inline uint16_t qmm__fp32_to_bf16(float x)
{
    uint32_t u = qmm__f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(((u >> 16) & 0x8000u) | 0x7fc0u);
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even on the 16 dropped bits */
    return (uint16_t)(u >> 16);
}

static inline float qmm__bf16_to_fp32(uint16_t h) { return qmm__f32_from_bits((uint32_t)h << 16); }

/* ---- fp16 ---- */
static inline uint16_t qmm__fp32_to_fp16(float x)
{
    uint32_t u = qmm__f32_bits(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to infinity */
    if (a < 0x38800000u) {                                    /* below 2^-14: fp16 subnormal or zero */
        uint32_t e = a >> 23;
        if (e == 0) return sign; /* fp32 subnormals are far below 2^-25 */
        uint32_t m = (a & 0x7fffffu) | 0x800000u;
        return (uint16_t)(sign | qmm__shift_rne(m, 126u - e)); /* units of 2^-24 */
    }
    uint32_t r = a - 0x38000000u; /* rebias the exponent from 127 to 15 */
    r = (r + 0xfffu + ((r >> 13) & 1u)) >> 13;
    return (uint16_t)(sign | r);
}

static inline float qmm__fp16_to_fp32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return qmm__f32_from_bits(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u));
    if (e == 0) { /* zero or subnormal: m * 2^-24, exact in fp32 */
        float v = (float)m * 0x1p-24f;
        return sign ? -v : v;
    }
    return qmm__f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

/* ---- FP8 E4M3 "fn" ---- */
static inline uint8_t qmm__fp32_to_e4m3(float x)
{
    uint32_t u = qmm__f32_bits(x);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint8_t)(sign | 0x7fu);
    if (a >= 0x43e00000u) return (uint8_t)(sign | 0x7eu); /* >= 448, infinity included: saturate */
    if (a < 0x3c800000u) {                                 /* below 2^-6: subnormal or zero */
        uint32_t e = a >> 23;
        if (e == 0) return sign;
        uint32_t m = (a & 0x7fffffu) | 0x800000u;
        return (uint8_t)(sign | qmm__shift_rne(m, 141u - e)); /* units of 2^-9 */
    }
    uint32_t r = a - 0x3c000000u; /* rebias 127 -> 7 */
    r = (r + 0x7ffffu + ((r >> 20) & 1u)) >> 20;
    return (uint8_t)(sign | r);
}

static inline float qmm__e4m3_to_fp32(uint8_t c)
{
    uint32_t e = (c >> 3) & 0xfu, m = c & 7u;
    float v;
    if ((c & 0x7fu) == 0x7fu) v = NAN;
    else if (e == 0) v = (float)m * 0x1p-9f;
    else v = qmm__f32_from_bits(((e + 120u) << 23) | (m << 20));
    return (c & 0x80u) ? -v : v;
}

/* ---- FP4 E2M1 ---- */
static const float qmm__e2m1_magnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

/* Magnitude code of |x| >= 0 rounded to nearest even; NaN saturates like an infinity. The midpoints
 * 0.25, 1.25, 2.5 and 5 go down and 0.75, 1.75, 3.5 go up: each to the even code. Counted as the
 * thresholds passed, on the bits (non-negative floats order like their bit patterns, and a NaN's bits
 * lie above every threshold), with no branch: random data mispredicts a chain of comparisons, and
 * integer comparisons vectorize. */
static inline uint8_t qmm__e2m1_magnitude_code(float a)
{
    const uint32_t u = qmm__f32_bits(a);
    return (uint8_t)((u > 0x3e800000u) + (u >= 0x3f400000u) + (u > 0x3fa00000u) + (u >= 0x3fe00000u) + (u > 0x40200000u) +
                     (u >= 0x40600000u) + (u > 0x40a00000u));
}

static inline uint8_t qmm__fp32_to_e2m1(float x)
{
    uint8_t sign = (qmm__f32_bits(x) >> 31) ? 8u : 0u;
    return (uint8_t)(sign | qmm__e2m1_magnitude_code(fabsf(x)));
}

static inline float qmm__e2m1_to_fp32(uint8_t c)
{
    float v = qmm__e2m1_magnitude[c & 7u];
    return (c & 8u) ? -v : v;
}

/* ---- E8M0 ---- */
static inline uint8_t qmm__fp32_to_e8m0(float x)
{
    uint32_t u = qmm__f32_bits(x);
    uint32_t e = (u >> 23) & 0xffu, m = u & 0x7fffffu;
    if ((u >> 31) || (e == 0 && m == 0) || e == 0xffu) return 0xffu;
    if (e == 0) return m >= 0x600000u ? 1u : 0u; /* fp32 subnormal: the nearest of 2^-127 and 2^-126, ties up */
    uint32_t c = e + (m >= 0x400000u ? 1u : 0u);
    return c > 254u ? 0xffu : (uint8_t)c;
}

static inline float qmm__e8m0_to_fp32(uint8_t c)
{
    if (c == 0xffu) return NAN;
    if (c == 0) return 0x1p-127f;
    return qmm__f32_from_bits((uint32_t)c << 23);
}

/* ---- from fp64, rounded once ---- */

/* Rounds d to fp32 with round-to-odd: truncate, then set the last bit if anything was dropped. A
 * second rounding to a format with at most 22 fraction bits (bf16, fp16) is then the same as rounding
 * d directly, so the reference can produce correctly rounded bf16 / fp16 from its fp64 sums. */
static inline float qmm__f64_to_f32_odd(double d)
{
    float f = (float)d;
    if (isnan(d) || isinf(f) || (double)f == d) return f;
    if (fabs((double)f) > fabs(d)) f = nextafterf(f, 0.0f);
    return qmm__f32_from_bits(qmm__f32_bits(f) | 1u);
}

static inline uint16_t qmm__f64_to_bf16(double d) { return qmm__fp32_to_bf16(qmm__f64_to_f32_odd(d)); }
static inline uint16_t qmm__f64_to_fp16(double d) { return qmm__fp32_to_fp16(qmm__f64_to_f32_odd(d)); }

#endif
