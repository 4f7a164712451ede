/* Bit-exactness of the scalar conversions. Decoders are checked on every code against formulas
 * written from the format definitions; encoders against an independent oracle that searches the sorted
 * table of a format's values for the nearest one (ties to the even code), on every midpoint, one ulp
 * either side of it, the special values and a large random sample. */
#include "harness.h"

/* ---- decoders from the definitions ---- */

static double ieee_like(unsigned sign, unsigned e, unsigned m, int bias, int mbits)
{
    double v = e == 0 ? ldexp((double)m, 1 - bias - mbits) : ldexp((double)((1u << mbits) + m), (int)e - bias - mbits);
    return sign ? -v : v;
}

static void test_decoders(void)
{
    static const double e2m1[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    for (unsigned c = 0; c < 256; c++) {
        float got = qmm_e2m1_to_fp32((uint8_t)c);
        double want = (c & 8) ? -e2m1[c & 7] : e2m1[c & 7];
        CHECK(got == want && !!signbit(got) == !!signbit(want), "e2m1 code 0x%02x: %g, want %g", c, got, want);
    }
    for (unsigned c = 0; c < 256; c++) {
        float got = qmm_e4m3_to_fp32((uint8_t)c);
        if ((c & 0x7f) == 0x7f) {
            CHECK(isnan(got) && !!signbit(got) == !!(c & 0x80), "e4m3 code 0x%02x must be NaN with its sign", c);
            continue;
        }
        double want = ieee_like(c >> 7, (c >> 3) & 15, c & 7, 7, 3);
        CHECK(got == want && !!signbit(got) == !!signbit(want), "e4m3 code 0x%02x: %g, want %g", c, got, want);
    }
    for (unsigned c = 0; c < 256; c++) {
        float got = qmm_e8m0_to_fp32((uint8_t)c);
        if (c == 255) CHECK(isnan(got), "e8m0 0xff must be NaN");
        else CHECK(got == ldexp(1.0, (int)c - 127), "e8m0 code %u: %g", c, got);
    }
    for (unsigned h = 0; h < 65536; h++) {
        unsigned s = h >> 15, e = (h >> 7) & 0xff, m = h & 0x7f;
        float got = qmm_bf16_to_fp32((uint16_t)h);
        if (e == 0xff) {
            CHECK(m ? isnan(got) : (isinf(got) && !!signbit(got) == !!s), "bf16 0x%04x special", h);
            if (m) CHECK(harness_bits(got) == (uint32_t)h << 16, "bf16 NaN 0x%04x keeps its payload", h);
        } else {
            double want = ieee_like(s, e, m, 127, 7);
            CHECK(got == want && !!signbit(got) == !!signbit(want), "bf16 0x%04x: %g, want %g", h, got, want);
        }
        s = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
        got = qmm_fp16_to_fp32((uint16_t)h);
        if (e == 0x1f) {
            CHECK(m ? isnan(got) : (isinf(got) && !!signbit(got) == !!s), "fp16 0x%04x special", h);
        } else {
            double want = ieee_like(s, e, m, 15, 10);
            CHECK(got == want && !!signbit(got) == !!signbit(want), "fp16 0x%04x: %g, want %g", h, got, want);
        }
    }
}

/* ---- the encoder oracle ---- */

/* A format's non-negative finite values in code order (codes 0..count-1 increase with the value), and
 * what happens past the largest: saturate, or round to infinity (code `count`) at the midpoint between
 * the largest value and `next_power`. */
typedef struct oracle_format {
    const char *name;
    double *values;
    unsigned count;
    int saturate;
    double next_power;
    unsigned sign_bit;
    unsigned (*encode)(float);
} oracle_format;

static unsigned enc_bf16(float x) { return qmm_fp32_to_bf16(x); }
static unsigned enc_fp16(float x) { return qmm_fp32_to_fp16(x); }
static unsigned enc_e4m3(float x) { return qmm_fp32_to_e4m3(x); }
static unsigned enc_e2m1(float x) { return qmm_fp32_to_e2m1(x); }

/* Nearest value to |x| (finite), ties to the even code. */
static unsigned oracle_magnitude(const oracle_format *f, double a)
{
    double top = f->values[f->count - 1];
    if (a >= top) {
        if (f->saturate) return f->count - 1;
        double mid = (top + f->next_power) / 2;
        return a >= mid ? f->count : f->count - 1; /* the tie goes to the even code: infinity's */
    }
    unsigned lo = 0, hi = f->count - 1; /* values[lo] <= a < values[hi] */
    while (hi - lo > 1) {
        unsigned mid = (lo + hi) / 2;
        if (f->values[mid] <= a) lo = mid;
        else hi = mid;
    }
    double mid = (f->values[lo] + f->values[hi]) / 2; /* exact in fp64 */
    if (a < mid) return lo;
    if (a > mid) return hi;
    return (lo & 1) ? hi : lo;
}

static void oracle_check(const oracle_format *f, float x)
{
    unsigned got = f->encode(x);
    unsigned sign = signbit(x) ? f->sign_bit : 0;
    if (isnan(x)) return; /* NaN rules are checked one by one below */
    double a = fabs((double)x);
    unsigned want;
    if (isinf(x)) want = f->saturate ? f->count - 1 : f->count;
    else want = oracle_magnitude(f, a);
    want |= sign;
    CHECK(got == want, "%s(%a) = 0x%x, want 0x%x", f->name, (double)x, got, want);
}

static void oracle_sweep(const oracle_format *f)
{
    /* every midpoint and one fp32 ulp either side, both signs; also every value itself */
    for (unsigned i = 0; i + 1 < f->count; i++) {
        float mid = (float)((f->values[i] + f->values[i + 1]) / 2);
        float probes[5] = {mid, nextafterf(mid, 0.0f), nextafterf(mid, INFINITY), (float)f->values[i],
                           (float)f->values[i + 1]};
        for (int p = 0; p < 5; p++) {
            oracle_check(f, probes[p]);
            oracle_check(f, -probes[p]);
        }
    }
    /* past the largest value */
    double top = f->values[f->count - 1];
    double mid = f->saturate ? top * 1.5 : (top + f->next_power) / 2;
    float edge[6] = {(float)mid, nextafterf((float)mid, 0.0f), nextafterf((float)mid, INFINITY), 3.0e38f, INFINITY,
                     0x1p-149f};
    for (int p = 0; p < 6; p++) {
        oracle_check(f, edge[p]);
        oracle_check(f, -edge[p]);
    }
    /* random fp32 bit patterns over the whole range, and random values inside the format's range */
    for (int i = 0; i < 400000; i++) oracle_check(f, harness_f32_from_bits(harness_u32()));
    for (int i = 0; i < 200000; i++) {
        double v = harness_uniform() * top * 1.1;
        if (i & 1) v = ldexp(harness_uniform(), -(int)(harness_next() % 40)) * top;
        oracle_check(f, (float)((harness_next() & 1) ? -v : v));
    }
}

static double *table_of(float (*decode)(uint16_t), unsigned count)
{
    double *v = malloc(count * sizeof *v);
    for (unsigned c = 0; c < count; c++) v[c] = decode((uint16_t)c);
    return v;
}

static float dec_e4m3(uint16_t c) { return qmm_e4m3_to_fp32((uint8_t)c); }
static float dec_e2m1(uint16_t c) { return qmm_e2m1_to_fp32((uint8_t)c); }

static void test_encoders(void)
{
    oracle_format formats[4] = {
        {"bf16", table_of(qmm_bf16_to_fp32, 0x7f80), 0x7f80, 0, 0x1p128, 0x8000, enc_bf16},
        {"fp16", table_of(qmm_fp16_to_fp32, 0x7c00), 0x7c00, 0, 65536.0, 0x8000, enc_fp16},
        {"e4m3", table_of(dec_e4m3, 0x7f), 0x7f, 1, 0, 0x80, enc_e4m3},
        {"e2m1", table_of(dec_e2m1, 8), 8, 1, 0, 0x8, enc_e2m1},
    };
    for (int i = 0; i < 4; i++) {
        oracle_sweep(&formats[i]);
        free(formats[i].values);
    }

    /* NaN rules (qmm.h): bf16 and fp16 give the canonical quiet NaN with the sign, E4M3 0x7F | sign,
     * E2M1 saturates like an infinity of the NaN's sign. */
    const uint32_t nans[4] = {0x7fc00000u, 0x7f800001u, 0xffc00000u, 0xff812345u};
    for (int i = 0; i < 4; i++) {
        float x = harness_f32_from_bits(nans[i]);
        unsigned neg = nans[i] >> 31;
        CHECK(qmm_fp32_to_bf16(x) == (neg ? 0xffc0 : 0x7fc0), "bf16 of NaN 0x%08x", nans[i]);
        CHECK(qmm_fp32_to_fp16(x) == (neg ? 0xfe00 : 0x7e00), "fp16 of NaN 0x%08x", nans[i]);
        CHECK(qmm_fp32_to_e4m3(x) == (neg ? 0xff : 0x7f), "e4m3 of NaN 0x%08x", nans[i]);
        CHECK(qmm_fp32_to_e2m1(x) == (neg ? 0xf : 0x7), "e2m1 of NaN 0x%08x", nans[i]);
    }
    /* a few values worked by hand, as a cross-check of the oracle itself */
    CHECK(qmm_fp32_to_e2m1(0.25f) == 0 && qmm_fp32_to_e2m1(0.75f) == 2 && qmm_fp32_to_e2m1(1.25f) == 2 &&
              qmm_fp32_to_e2m1(1.75f) == 4 && qmm_fp32_to_e2m1(2.5f) == 4 && qmm_fp32_to_e2m1(3.5f) == 6 &&
              qmm_fp32_to_e2m1(5.0f) == 6 && qmm_fp32_to_e2m1(-0.0f) == 8 && qmm_fp32_to_e2m1(-7.0f) == 0xf,
          "e2m1 worked examples");
    CHECK(qmm_fp32_to_e4m3(464.0f) == 0x7e && qmm_fp32_to_e4m3(-1e9f) == 0xfe && qmm_fp32_to_e4m3(0x1p-10f) == 0 &&
              qmm_fp32_to_e4m3(0x1.0002p-10f) == 1 && qmm_fp32_to_e4m3(-0x1p-11f) == 0x80 &&
              qmm_fp32_to_e4m3(1.0f) == 0x38,
          "e4m3 worked examples");
    CHECK(qmm_fp32_to_fp16(65519.99f) == 0x7bff && qmm_fp32_to_fp16(65520.0f) == 0x7c00 &&
              qmm_fp32_to_fp16(0x1p-25f) == 0 && qmm_fp32_to_fp16(0x1.000002p-25f) == 1,
          "fp16 worked examples");
    CHECK(qmm_fp32_to_bf16(1.00390625f) == 0x3f80 && qmm_fp32_to_bf16(1.01171875f) == 0x3f82 &&
              qmm_fp32_to_bf16(3.4e38f) == 0x7f80,
          "bf16 worked examples (ties to even, overflow)");
}

/* E8M0 as ml_dtypes rounds: stated here with frexp rather than bit fields. */
static unsigned e8m0_oracle(float x)
{
    if (!(x > 0.0f) || isinf(x)) return 0xff;
    if (x < 0x1p-126f) return x >= 0x1.8p-127f ? 1 : 0; /* fp32 subnormals: the same rounding (ml_dtypes 0.7) */
    int e;
    double f = frexp((double)x, &e); /* x = f * 2^e, f in [0.5, 1): floor(log2 x) = e - 1 */
    int code = e - 1 + 127 + (f >= 0.75 ? 1 : 0);
    return code > 254 ? 0xff : (unsigned)code;
}

static void test_e8m0_encoder(void)
{
    for (int i = 0; i < 1000000; i++) {
        float x = harness_f32_from_bits(harness_u32());
        CHECK(qmm_fp32_to_e8m0(x) == e8m0_oracle(x), "e8m0(%a) = 0x%02x, want 0x%02x", (double)x,
              qmm_fp32_to_e8m0(x), e8m0_oracle(x));
    }
    for (int c = 0; c < 255; c++) {
        float p = ldexpf(1.0f, c - 127);
        CHECK(qmm_fp32_to_e8m0(p) == c, "e8m0 of 2^%d", c - 127);
        float probes[4] = {p * 1.5f, nextafterf(p * 1.5f, 0.0f), nextafterf(p * 1.5f, INFINITY), nextafterf(p, INFINITY)};
        for (int j = 0; j < 4; j++)
            CHECK(qmm_fp32_to_e8m0(probes[j]) == e8m0_oracle(probes[j]), "e8m0(%a)", (double)probes[j]);
    }
    CHECK(qmm_fp32_to_e8m0(3.0f) == 129 && qmm_fp32_to_e8m0(0.75f) == 127 && qmm_fp32_to_e8m0(1.4999999f) == 127,
          "e8m0 ties go up");
    CHECK(qmm_fp32_to_e8m0(0.0f) == 0xff && qmm_fp32_to_e8m0(-0.0f) == 0xff && qmm_fp32_to_e8m0(-1.0f) == 0xff &&
              qmm_fp32_to_e8m0(INFINITY) == 0xff && qmm_fp32_to_e8m0(NAN) == 0xff,
          "e8m0 of zero, negatives, infinity and NaN is 0xff");
    CHECK(qmm_fp32_to_e8m0(0x1p127f) == 254 && qmm_fp32_to_e8m0(0x1.8p127f) == 0xff &&
              qmm_fp32_to_e8m0(0x1p-127f) == 0 && qmm_fp32_to_e8m0(nextafterf(0x1p-127f, 1.0f)) == 0 &&
              qmm_fp32_to_e8m0(nextafterf(0x1.8p-127f, 0.0f)) == 0 && qmm_fp32_to_e8m0(0x1.8p-127f) == 1 &&
              qmm_fp32_to_e8m0(0x1p-149f) == 0,
          "e8m0 range ends");
}

/* decode then encode gives back every non-NaN code */
static void test_round_trips(void)
{
    for (unsigned h = 0; h < 65536; h++) {
        float b = qmm_bf16_to_fp32((uint16_t)h), f = qmm_fp16_to_fp32((uint16_t)h);
        if (!isnan(b)) CHECK(qmm_fp32_to_bf16(b) == h, "bf16 0x%04x round trip", h);
        if (!isnan(f)) CHECK(qmm_fp32_to_fp16(f) == h, "fp16 0x%04x round trip", h);
    }
    for (unsigned c = 0; c < 256; c++) {
        float v = qmm_e4m3_to_fp32((uint8_t)c);
        if (!isnan(v)) CHECK(qmm_fp32_to_e4m3(v) == c, "e4m3 0x%02x round trip", c);
        if (c < 16) CHECK(qmm_fp32_to_e2m1(qmm_e2m1_to_fp32((uint8_t)c)) == c, "e2m1 0x%x round trip", c);
        if (c < 255) CHECK(qmm_fp32_to_e8m0(qmm_e8m0_to_fp32((uint8_t)c)) == c, "e8m0 %u round trip", c);
    }
}

int main(void)
{
    harness_begin("test_convert");
    test_decoders();
    test_encoders();
    test_e8m0_encoder();
    test_round_trips();
    return harness_end("test_convert");
}
