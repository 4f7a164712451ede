/* Quantizers and dequantization: hand-worked vectors (every expected code below was worked out on
 * paper from the recipe), all-zero blocks and tensors, scales exactly on a rounding tie, partial last
 * blocks, odd K, -0.0, extreme magnitudes, the three source types and row strides. The numpy statement
 * of each recipe (tests/python) checks the same quantizers bit for bit on random tensors. */
#include "harness.h"

static unsigned nibble(const qmm_weight *w, size_t r, size_t c)
{
    size_t row_bytes = w->k / 2 + (w->k & 1);
    uint8_t b = w->data[r * row_bytes + c / 2];
    return (c & 1) ? b >> 4 : b & 0xf;
}

static size_t spr(const qmm_weight *w, size_t block) { return w->k / block + (w->k % block != 0); }

/* Allocates w, poisons its buffers, quantizes fp32 `src`; returns the status. */
static qmm_status quantize(qmm_weight *w, qmm_format f, qmm_recipe r, const float *src, size_t n, size_t k)
{
    qmm_status st = qmm_weight_alloc(w, f, n, k);
    if (st != QMM_OK) return st;
    harness_poison(w->data, w->data_bytes);
    if (w->block_scales) harness_poison(w->block_scales, w->block_scale_bytes);
    if (w->channel_scales) harness_poison(w->channel_scales, w->channel_scale_count * 4);
    return qmm_quantize(r, QMM_DTYPE_FP32, src, k, w);
}

static void test_nvfp4_worked(void)
{
    /* amax = 2.625 makes s2 = 2.625 / 2688 = 2^-10 exactly, so every scale below is exact. */
    enum { K = 37 };
    float src[2 * K] = {0};
    const float b0[16] = {2.625f, -1.3125f, 0.65625f, 0.21875f, 0.0f, -0.0f, 0.875f, 1.75f,
                          0.109375f, -0.109375f, 0.328125f, 0.546875f, 0.765625f, 1.09375f, 1.53125f, 2.1875f};
    /* block 0: sb = 2.625 / (6 * 2^-10) = 448 -> E4M3 0x7e; scale 448 * 2^-10 = 0.4375; the elements are
     * 6, -3, 1.5, 0.5, 0, -0, 2, 4 times the scale, then the E2M1 ties 0.25, -0.25, 0.75, 1.25, 1.75,
     * 2.5, 3.5, 5 times the scale. */
    const unsigned c0[16] = {7, 0xd, 3, 1, 0, 0, 4, 6, 0, 8, 2, 2, 4, 4, 6, 6};
    memcpy(src, b0, sizeof b0);
    /* block 1: amax 0.02490234375 = 4.25 * 6 * 2^-10: sb = 4.25, an E4M3 tie between 4 and 4.5 -> 4 (0x48);
     * scale 2^-8: 6.375 -> 6 (7), 2 (4), -1.5 (0xb) */
    src[16] = 0.02490234375f, src[17] = 0.0078125f, src[18] = -0.005859375f;
    /* block 2 (partial, 5 elements): amax 4.75 * 6 * 2^-10: sb = 4.75, tie between 4.5 and 5 -> 5 (0x4a);
     * 0.02783203125 / (5 * 2^-10) = 5.7 -> 6 (7); -0.0 -> 0 */
    src[32] = 0.02783203125f, src[33] = -0.0f;
    /* row 1 is all zeros: every block is an all-zero block with scale 1.0 (0x38) */
    qmm_weight w;
    CHECK_OK(quantize(&w, QMM_FORMAT_NVFP4, QMM_RECIPE_NVFP4_MODELOPT, src, 2, K));
    CHECK(w.tensor_scale == 0x1p-10f, "s2 = %a", (double)w.tensor_scale);
    CHECK(spr(&w, 16) == 3, "3 scales per row");
    CHECK(w.block_scales[0] == 0x7e && w.block_scales[1] == 0x48 && w.block_scales[2] == 0x4a,
          "row 0 scales %02x %02x %02x", w.block_scales[0], w.block_scales[1], w.block_scales[2]);
    CHECK(w.block_scales[3] == 0x38 && w.block_scales[4] == 0x38 && w.block_scales[5] == 0x38, "zero blocks get 1.0");
    for (int i = 0; i < 16; i++) CHECK(nibble(&w, 0, (size_t)i) == c0[i], "block 0 element %d: %x, want %x", i, nibble(&w, 0, (size_t)i), c0[i]);
    CHECK(nibble(&w, 0, 16) == 7 && nibble(&w, 0, 17) == 4 && nibble(&w, 0, 18) == 0xb, "block 1 codes");
    CHECK(nibble(&w, 0, 32) == 7 && nibble(&w, 0, 33) == 0, "block 2 codes");
    CHECK(w.data[0] == (0xd << 4 | 7), "low nibble first: byte 0 = 0x%02x", w.data[0]);
    CHECK(w.data[18] == 0, "odd K: the last byte of row 0 holds one code and a zero high nibble (0x%02x)", w.data[18]);
    CHECK(harness_all_bytes(w.data + 19, 19, 0), "row 1 codes are all zero");
    /* dequantization gives back the exactly representable inputs (-0.0 becomes +0, as modelopt does) */
    float back[2 * K];
    CHECK_OK(qmm_dequantize(&w, 0, QMM_DTYPE_FP32, back, K));
    const int exact[8] = {0, 1, 2, 3, 4, 6, 7, 17};
    for (int i = 0; i < 8; i++) CHECK(back[exact[i]] == src[exact[i]], "dequant[%d] = %g, want %g", exact[i], back[exact[i]], src[exact[i]]);
    CHECK(back[5] == 0.0f && !signbit(back[5]), "-0.0 quantizes to +0");
    CHECK(back[9] == 0.0f && signbit(back[9]), "-0.109375 rounds to the negative-zero code");
    qmm_weight_free(&w);
}

static void test_mxfp4_worked(void)
{
    enum { K = 40 };
    float src[2 * K] = {0};
    /* row 0 block 0: amax 5: floor(log2 5) - 2 = 0 (code 127) and ceil(log2(5/6)) = 0: both rules agree.
     * 5 -> 4 (tie, code 6), 0.25 -> 0, 0.75 -> 1 (code 2), 2.5 -> 2 (4), 3.5 -> 4 (6), -1.25 -> -1 (0xa),
     * -0.0 -> 8, 1 -> 2 */
    const float b0[8] = {5.0f, 0.25f, 0.75f, 2.5f, 3.5f, -1.25f, -0.0f, 1.0f};
    const unsigned c0[8] = {6, 0, 2, 4, 6, 0xa, 8, 2};
    memcpy(src, b0, sizeof b0);
    /* row 0 block 1 (partial, 8 elements): amax 0.1.
     *   floor: floor(log2 0.1) - 2 = -6 (code 121): 6.4 -> 6 (7), 3.2 -> 3 (5), -1.28 -> -1.5 (0xb)
     *   rceil: ceil(log2(0.1 / 6)) = -5 (code 122): 3.2 -> 3 (5), 1.6 -> 1.5 (3), -0.64 -> -0.5 (9) */
    src[32] = 0.1f, src[33] = 0.05f, src[34] = -0.02f;
    /* row 1 block 0: amax 7: floor e = 0 (127), 7 saturates to 6 (7); rceil e = 1 (128), 3.5 -> 4 (6).
     * row 1 block 1 is all zeros: the smallest scale, code 0 */
    src[K] = 7.0f;
    qmm_weight w;
    CHECK_OK(quantize(&w, QMM_FORMAT_MXFP4, QMM_RECIPE_MXFP4_FLOOR, src, 2, K));
    CHECK(w.block_scales[0] == 127 && w.block_scales[1] == 121 && w.block_scales[2] == 127 && w.block_scales[3] == 0,
          "floor scales %u %u %u %u", w.block_scales[0], w.block_scales[1], w.block_scales[2], w.block_scales[3]);
    for (int i = 0; i < 8; i++) CHECK(nibble(&w, 0, (size_t)i) == c0[i], "floor element %d: %x want %x", i, nibble(&w, 0, (size_t)i), c0[i]);
    CHECK(nibble(&w, 0, 32) == 7 && nibble(&w, 0, 33) == 5 && nibble(&w, 0, 34) == 0xb, "floor block 1 codes");
    CHECK(nibble(&w, 1, 0) == 7, "floor saturates 7 to 6");
    CHECK(w.tensor_scale == 1.0f, "MXFP4 has no tensor scale");
    qmm_weight_free(&w);

    CHECK_OK(quantize(&w, QMM_FORMAT_MXFP4, QMM_RECIPE_MXFP4_RCEIL, src, 2, K));
    CHECK(w.block_scales[0] == 127 && w.block_scales[1] == 122 && w.block_scales[2] == 128 && w.block_scales[3] == 0,
          "rceil scales %u %u %u %u", w.block_scales[0], w.block_scales[1], w.block_scales[2], w.block_scales[3]);
    for (int i = 0; i < 8; i++) CHECK(nibble(&w, 0, (size_t)i) == c0[i], "rceil element %d", i);
    CHECK(nibble(&w, 0, 32) == 5 && nibble(&w, 0, 33) == 3 && nibble(&w, 0, 34) == 9, "rceil block 1 codes");
    CHECK(nibble(&w, 1, 0) == 6, "rceil: 7 / 2 = 3.5 ties to 4");
    qmm_weight_free(&w);

    /* the rules' boundaries: amax exactly a power of two, and just below */
    float edge[2 * 32] = {0};
    edge[0] = 4.0f;                      /* floor(log2 4) = 2: e = 0 */
    edge[32] = nextafterf(4.0f, 0.0f);   /* floor(log2) = 1: e = -1 */
    CHECK_OK(quantize(&w, QMM_FORMAT_MXFP4, QMM_RECIPE_MXFP4_FLOOR, edge, 2, 32));
    CHECK(w.block_scales[0] == 127 && w.block_scales[1] == 126, "floor at a power of two: %u %u", w.block_scales[0], w.block_scales[1]);
    qmm_weight_free(&w);
    edge[0] = 6.0f;                      /* amax / 6 = 1 exactly: e = 0 */
    edge[32] = nextafterf(6.0f, 7.0f);   /* just above: e = 1 */
    CHECK_OK(quantize(&w, QMM_FORMAT_MXFP4, QMM_RECIPE_MXFP4_RCEIL, edge, 2, 32));
    CHECK(w.block_scales[0] == 127 && w.block_scales[1] == 128, "rceil at 6 * 2^0: %u %u", w.block_scales[0], w.block_scales[1]);
    qmm_weight_free(&w);
}

static void test_fp8_worked(void)
{
    const float src[3 * 6] = {448.0f, -1.0f, 0.5f, 3.0f, -0.0f, 0.001f,
                              896.0f, 2.0f, -0.25f, 0.0f, 0.0f, 0.0f,
                              0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    qmm_weight w;
    /* per tensor: amax 896 -> s = 2: 224 = 1.75 * 2^7 (0x76), -0.5 (0xb0), 0.25 (0x28), 1.5 (0x3c),
     * -0 (0x80), 0.0005 -> 0.0005 / 2^-9 = 0.256 subnormal units -> 0; row 1: 448 (0x7e), 1 (0x38),
     * -0.125 (0xa0) */
    CHECK_OK(quantize(&w, QMM_FORMAT_FP8_TENSOR, QMM_RECIPE_DEFAULT, src, 3, 6));
    const uint8_t t0[6] = {0x76, 0xb0, 0x28, 0x3c, 0x80, 0x00};
    CHECK(w.tensor_scale == 2.0f, "tensor scale %g", w.tensor_scale);
    CHECK(memcmp(w.data, t0, 6) == 0, "per-tensor codes %02x %02x %02x %02x %02x %02x", w.data[0], w.data[1],
          w.data[2], w.data[3], w.data[4], w.data[5]);
    CHECK(w.data[6] == 0x7e && w.data[7] == 0x38 && w.data[8] == 0xa0, "row 1 codes %02x %02x %02x", w.data[6], w.data[7], w.data[8]);
    qmm_weight_free(&w);
    /* per channel: s = 1, 2, and 1 for the all-zero row. 0.001 -> 0.512 subnormal units -> 1 */
    CHECK_OK(quantize(&w, QMM_FORMAT_FP8_CHANNEL, QMM_RECIPE_FP8_AMAX, src, 3, 6));
    const uint8_t c0[6] = {0x7e, 0xb8, 0x30, 0x44, 0x80, 0x01};
    CHECK(memcmp(w.data, c0, 6) == 0, "per-channel row 0 codes");
    CHECK(w.data[6] == 0x7e && w.data[7] == 0x38 && w.data[8] == 0xa0, "per-channel row 1 codes");
    CHECK(harness_all_bytes(w.data + 12, 6, 0), "all-zero row gives zero codes");
    CHECK(w.channel_scales[0] == 1.0f && w.channel_scales[1] == 2.0f && w.channel_scales[2] == 1.0f,
          "channel scales %g %g %g", w.channel_scales[0], w.channel_scales[1], w.channel_scales[2]);
    qmm_weight_free(&w);
}

/* All-zero tensors: NVFP4 s2 = 1 and 1.0 block scales, MXFP4 code 0, FP8 s = 1; all codes 0. */
static void test_all_zero(void)
{
    float src[3 * 50] = {0};
    static const qmm_format formats[4] = {QMM_FORMAT_NVFP4, QMM_FORMAT_MXFP4, QMM_FORMAT_FP8_TENSOR, QMM_FORMAT_FP8_CHANNEL};
    for (int f = 0; f < 4; f++) {
        qmm_weight w;
        CHECK_OK(quantize(&w, formats[f], QMM_RECIPE_DEFAULT, src, 3, 50));
        CHECK(harness_all_bytes(w.data, w.data_bytes, 0), "format %d: zero codes", f);
        if (formats[f] == QMM_FORMAT_NVFP4) CHECK(harness_all_bytes(w.block_scales, w.block_scale_bytes, 0x38) && w.tensor_scale == 1.0f, "nvfp4 zero scales");
        if (formats[f] == QMM_FORMAT_MXFP4) CHECK(harness_all_bytes(w.block_scales, w.block_scale_bytes, 0), "mxfp4 zero scales");
        if (formats[f] == QMM_FORMAT_FP8_TENSOR) CHECK(w.tensor_scale == 1.0f, "fp8 zero scale");
        float back[150];
        CHECK_OK(qmm_dequantize(&w, 0, QMM_DTYPE_FP32, back, 50));
        int zeros = 1;
        for (int i = 0; i < 150; i++) zeros &= back[i] == 0.0f;
        CHECK(zeros, "format %d: dequantizes to zeros", f);
        qmm_weight_free(&w);
    }
}

/* Random data through every format: every byte written (the buffers were poisoned), the three source
 * types give the same bits for the same values, a longer row stride changes nothing, and the
 * dequantized weight is close to the input (quantization error only). */
static void test_sources_strides_and_error(void)
{
    static const qmm_format formats[4] = {QMM_FORMAT_NVFP4, QMM_FORMAT_MXFP4, QMM_FORMAT_FP8_TENSOR, QMM_FORMAT_FP8_CHANNEL};
    static const size_t ks[6] = {1, 15, 17, 33, 63, 250};
    for (int f = 0; f < 4; f++) {
        for (int ki = 0; ki < 6; ki++) {
            const size_t n = 1 + harness_next() % 9, k = ks[ki], stride = k + harness_next() % 5;
            float *src = malloc(n * stride * 4);
            uint16_t *bf = malloc(n * stride * 2), *hf = malloc(n * stride * 2);
            for (size_t i = 0; i < n * stride; i++) {
                /* values exact in bf16 and fp16: 8 significant bits, exponents in fp16's normal range */
                float v = (float)ldexp((double)(int)(harness_next() % 256) - 128.0, -(int)(harness_next() % 12));
                src[i] = v;
                bf[i] = qmm_fp32_to_bf16(v);
                hf[i] = qmm_fp32_to_fp16(v);
            }
            qmm_weight w[3];
            const void *srcs[3] = {src, bf, hf};
            const qmm_dtype types[3] = {QMM_DTYPE_FP32, QMM_DTYPE_BF16, QMM_DTYPE_FP16};
            for (int t = 0; t < 3; t++) {
                CHECK_OK(qmm_weight_alloc(&w[t], formats[f], n, k));
                harness_poison(w[t].data, w[t].data_bytes);
                if (w[t].block_scales) harness_poison(w[t].block_scales, w[t].block_scale_bytes);
                CHECK_OK(qmm_quantize(QMM_RECIPE_DEFAULT, types[t], srcs[t], stride, &w[t]));
            }
            for (int t = 1; t < 3; t++) {
                CHECK(memcmp(w[0].data, w[t].data, w[0].data_bytes) == 0, "format %d k %zu: %s source differs", f, k, qmm_dtype_name(types[t]));
                if (w[0].block_scales) CHECK(memcmp(w[0].block_scales, w[t].block_scales, w[0].block_scale_bytes) == 0, "scales differ");
                CHECK(w[0].tensor_scale == w[t].tensor_scale, "tensor scales differ");
            }
            /* padding nibbles are zero, not poison */
            if (formats[f] <= QMM_FORMAT_MXFP4 && (k & 1))
                for (size_t r = 0; r < n; r++) CHECK(nibble(&w[0], r, k) == 0, "pad nibble of row %zu", r);
            /* quantization error of the dequantized weight, per format (values here have a modest range) */
            float *back = malloc(n * k * 4);
            CHECK_OK(qmm_dequantize(&w[0], 0, QMM_DTYPE_FP32, back, k));
            double num = 0, den = 0;
            for (size_t r = 0; r < n; r++)
                for (size_t c = 0; c < k; c++) {
                    double d = (double)back[r * k + c] - src[r * stride + c];
                    num += d * d;
                    den += (double)src[r * stride + c] * src[r * stride + c];
                }
            double rel = den > 0 ? sqrt(num / den) : 0.0;
            double bound = formats[f] <= QMM_FORMAT_MXFP4 ? 0.25 : 0.05;
            CHECK(rel < bound, "format %d k %zu: dequantization error %.3g over %.2g", f, k, rel, bound);
            free(back);
            for (int t = 0; t < 3; t++) qmm_weight_free(&w[t]);
            free(src);
            free(bf);
            free(hf);
        }
    }
}

/* Very large and very small (fp32 subnormal) weights stay finite and close. */
static void test_extreme_magnitudes(void)
{
    static const qmm_format formats[4] = {QMM_FORMAT_NVFP4, QMM_FORMAT_MXFP4, QMM_FORMAT_FP8_TENSOR, QMM_FORMAT_FP8_CHANNEL};
    const double magnitudes[3] = {3.0e38, 1.0e-30, 1.0e-40};
    for (int f = 0; f < 4; f++) {
        for (int m = 0; m < 3; m++) {
            enum { N = 4, K = 64 };
            float src[N * K], back[N * K];
            for (int i = 0; i < N * K; i++) src[i] = (float)(magnitudes[m] * (harness_uniform() * 2 - 1));
            src[5] = (float)magnitudes[m];
            qmm_weight w;
            CHECK_OK(quantize(&w, formats[f], QMM_RECIPE_DEFAULT, src, N, K));
            CHECK_OK(qmm_dequantize(&w, 0, QMM_DTYPE_FP32, back, K));
            double num = 0, den = 0;
            int finite = 1;
            for (int i = 0; i < N * K; i++) {
                finite &= isfinite(back[i]);
                num += ((double)back[i] - src[i]) * ((double)back[i] - src[i]);
                den += (double)src[i] * src[i];
            }
            CHECK(finite, "format %d magnitude %g: dequantized values are finite", f, magnitudes[m]);
            if (formats[f] == QMM_FORMAT_MXFP4 && magnitudes[m] < 0x1p-128) {
                /* below MXFP4's smallest value 0.5 * 2^-127: the scale clamps at 2^-127, all codes round to 0 */
                CHECK(num == den && w.block_scales[0] == 0, "mxfp4 underflows to zero with scale code 0");
                qmm_weight_free(&w);
                continue;
            }
            /* fp32 subnormal tensor scales keep few bits, so the tiny case is allowed more */
            double bound = magnitudes[m] < 1e-38 ? 0.5 : formats[f] <= QMM_FORMAT_MXFP4 ? 0.25 : 0.05;
            CHECK(sqrt(num / den) < bound, "format %d magnitude %g: error %.3g", f, magnitudes[m], sqrt(num / den));
            qmm_weight_free(&w);
        }
    }
}

/* Unscaled dequantization is element * block scale exactly; bf16 output equals fp32 output then. */
static void test_dequantize_exact(void)
{
    static const qmm_format formats[4] = {QMM_FORMAT_NVFP4, QMM_FORMAT_MXFP4, QMM_FORMAT_FP8_TENSOR, QMM_FORMAT_FP8_CHANNEL};
    for (int f = 0; f < 4; f++) {
        enum { N = 5, K = 77 };
        float src[N * K], u32[N * K], s32[N * K];
        uint16_t u16[N * K], s16[N * K];
        for (int i = 0; i < N * K; i++) src[i] = (float)(harness_normal() * ldexp(1.0, (int)(harness_next() % 20) - 10));
        qmm_weight w;
        CHECK_OK(quantize(&w, formats[f], QMM_RECIPE_DEFAULT, src, N, K));
        CHECK_OK(qmm_dequantize(&w, QMM_DEQUANT_UNSCALED, QMM_DTYPE_FP32, u32, K));
        CHECK_OK(qmm_dequantize(&w, QMM_DEQUANT_UNSCALED, QMM_DTYPE_BF16, u16, K));
        CHECK_OK(qmm_dequantize(&w, 0, QMM_DTYPE_FP32, s32, K));
        CHECK_OK(qmm_dequantize(&w, 0, QMM_DTYPE_BF16, s16, K));
        for (int r = 0; r < N; r++) {
            double gs = formats[f] == QMM_FORMAT_FP8_CHANNEL ? w.channel_scales[r] : formats[f] == QMM_FORMAT_MXFP4 ? 1.0 : w.tensor_scale;
            for (int c = 0; c < K; c++) {
                int i = r * K + c;
                double elem, scale = 1.0;
                if (formats[f] <= QMM_FORMAT_MXFP4) {
                    elem = qmm_e2m1_to_fp32((uint8_t)nibble(&w, (size_t)r, (size_t)c));
                    uint8_t sc = w.block_scales[(size_t)r * spr(&w, formats[f] == QMM_FORMAT_NVFP4 ? 16 : 32) + (size_t)c / (formats[f] == QMM_FORMAT_NVFP4 ? 16 : 32)];
                    scale = formats[f] == QMM_FORMAT_NVFP4 ? qmm_e4m3_to_fp32(sc) : qmm_e8m0_to_fp32(sc);
                } else {
                    elem = qmm_e4m3_to_fp32(w.data[i]);
                }
                double exact = elem * scale;
                CHECK(u32[i] == exact && qmm_bf16_to_fp32(u16[i]) == exact, "format %d [%d,%d]: unscaled %g / %g, want %g", f, r, c, u32[i], qmm_bf16_to_fp32(u16[i]), exact);
                CHECK(s32[i] == (float)(exact * gs), "format %d [%d,%d]: scaled fp32", f, r, c);
                /* bf16: the fp64 product rounded once; check it is the nearest bf16 (within half an ulp) */
                double b = qmm_bf16_to_fp32(s16[i]), want = exact * gs;
                double ulp = want == 0 ? 0 : ldexp(1.0, ilogb(want) - 7);
                CHECK(fabs(b - want) <= ulp / 2, "format %d [%d,%d]: scaled bf16 %g for %g", f, r, c, b, want);
            }
        }
        qmm_weight_free(&w);
    }
}

/* The dense bf16 format: each value rounded to nearest even, exactly what qmm_fp32_to_bf16 gives. */
static void test_bf16_format(void)
{
    enum { N = 3, K = 29 };
    float src[N * K], back[N * K];
    for (int i = 0; i < N * K; i++) src[i] = harness_f32_from_bits(harness_u32() & 0xbfffffffu); /* finite */
    qmm_weight w;
    CHECK_OK(quantize(&w, QMM_FORMAT_BF16, QMM_RECIPE_DEFAULT, src, N, K));
    CHECK(w.data_bytes == N * K * 2 && w.block_scales == NULL, "bf16 sizes");
    CHECK_OK(qmm_dequantize(&w, 0, QMM_DTYPE_FP32, back, K));
    for (int i = 0; i < N * K; i++) {
        uint16_t h;
        memcpy(&h, w.data + 2 * i, 2);
        CHECK(h == qmm_fp32_to_bf16(src[i]) && back[i] == qmm_bf16_to_fp32(h), "bf16 element %d", i);
    }
    CHECK_STATUS(qmm_quantize(QMM_RECIPE_FP8_AMAX, QMM_DTYPE_FP32, src, K, &w), QMM_ERR_UNSUPPORTED);
    qmm_weight_free(&w);
}

int main(void)
{
    harness_begin("test_quantize");
    test_bf16_format();
    test_nvfp4_worked();
    test_mxfp4_worked();
    test_fp8_worked();
    test_all_zero();
    test_sources_strides_and_error();
    test_extreme_magnitudes();
    test_dequantize_exact();
    return harness_end("test_quantize");
}
