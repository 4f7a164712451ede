/* The CUDA backend's prepared layout and decode arithmetic, checked on the host: the tiles built by
 * prepare.c, read back with the same bit operations the kernels use (decode.h), must give exactly the
 * unscaled dequantized weight, for every format, odd shapes, K not a multiple of the block, zero and
 * negative NVFP4 block scales, E4M3-subnormal scales, all-zero MXFP4 blocks; and weights the bit tricks
 * cannot take (NaN scales, NaN FP8 codes, an MXFP4 exponent range over 126) must get a RAW encoding.
 * Needs no GPU: it runs wherever the CUDA backend is built. */
#include "../src/core/convert.h"
#include "../src/cuda/cuda_internal.h"
#include "../src/cuda/decode.h"
#include "harness.h"

static void check_weight(qmm_weight *w, const char *what, qmm__cuda_encoding want_enc)
{
    qmm__cuda_layout l = qmm__cuda_plan_layout(w);
    CHECK(l.enc == want_enc, "%s: encoding %d, want %d", what, (int)l.enc, (int)want_enc);
    if (l.enc >= QMM__ENC_BF16) return; /* RAW and BF16 are not read by the bit-trick decoders */
    const int half = qmm__cuda_half_decode(l.enc, l.mx_half); /* these have an fp16 decode too */
    uint8_t *data = malloc(l.data_bytes), *scales = l.scale_bytes ? malloc(l.scale_bytes) : NULL;
    harness_poison(data, l.data_bytes);
    if (scales) harness_poison(scales, l.scale_bytes);
    qmm__cuda_fill_layout(w, &l, data, scales);
    float *ref = malloc(w->n * w->k * sizeof(float));
    CHECK_OK(qmm_dequantize(w, QMM_DEQUANT_UNSCALED, QMM_DTYPE_FP32, ref, w->k));
    long bad = 0;
    for (size_t r = 0; r < w->n; r++)
        for (size_t c = 0; c < w->k; c++) {
            float got = qmm__cuda_emulate_decode(&l, data, scales, r, c);
            if (got != ref[r * w->k + c] && bad++ < 5)
                CHECK(0, "%s: W[%zu][%zu] decodes to %a, want %a", what, r, c, (double)got, (double)ref[r * w->k + c]);
            if (half) {
                got = qmm__cuda_emulate_decode_f16(&l, data, scales, r, c);
                if (got != ref[r * w->k + c] && bad++ < 5)
                    CHECK(0, "%s: W[%zu][%zu] decodes to %a in fp16, want %a", what, r, c, (double)got, (double)ref[r * w->k + c]);
            }
        }
    CHECK(bad == 0, "%s: %ld elements differ", what, bad);
    /* padding decodes to zero: rows past N and columns past K */
    for (size_t r = w->n; r < l.strips * 16; r++) {
        CHECK(qmm__cuda_emulate_decode(&l, data, scales, r, 0) == 0.0f, "%s: padding row %zu", what, r);
        if (half) CHECK(qmm__cuda_emulate_decode_f16(&l, data, scales, r, 0) == 0.0f, "%s: padding row %zu (fp16)", what, r);
    }
    free(data), free(scales), free(ref);
}

static void random_weight(qmm_weight *w, qmm_format f, size_t n, size_t k, double spread)
{
    float *src = malloc(n * k * sizeof(float));
    for (size_t i = 0; i < n * k; i++) src[i] = (float)(harness_normal() * ldexp(1.0, (int)(harness_uniform() * spread)));
    for (size_t i = 0; i < n * k; i += 1 + harness_next() % 50) src[i] = 0.0f;
    CHECK_OK(qmm_weight_alloc(w, f, n, k));
    CHECK_OK(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src, k, w));
    free(src);
}

/* The kernels build the block factors of two blocks in one register (qmm__*_factor2): each half must be
 * what the one-block factor, checked by the emulation above, gives. Every NVFP4 code pair; every MXFP4
 * code pair whose exponents the layout admits, for several offsets. */
static void check_factor_pairs(void)
{
    long bad = 0;
    for (uint32_t a = 0; a < 256; a++)
        for (uint32_t b = 0; b < 256; b++) {
            const uint32_t want = (qmm__nvfp4_factor(a) & 0xffffu) | (qmm__nvfp4_factor(b) & 0xffff0000u);
            if (qmm__nvfp4_factor2(a | b << 16) != want && bad++ < 5) CHECK(0, "nvfp4 factor pair %u, %u", a, b);
        }
    /* the fp16 factors (fp16 activations): every E5M3 code an E4M3 scale can have (exponent up to 17, for
     * 448) is s * 2^7 as an fp16 value, alone and in pairs */
    for (uint32_t a = 0; a < 18 * 8; a++) {
        const double s = (1.0 + (a & 7) / 8.0) * ldexp(1.0, (int)(a >> 3) - 9);
        const uint32_t f = qmm__nvfp4_factor2_f16(a * 0x00010001u);
        if ((double)qmm__fp16_to_fp32((uint16_t)f) != s * 128.0 && bad++ < 5) CHECK(0, "nvfp4 fp16 factor %u", a);
        for (uint32_t b = 0; b < 18 * 8; b++) {
            const uint32_t want = (f & 0xffffu) | (qmm__nvfp4_factor2_f16(b * 0x00010001u) & 0xffff0000u);
            if (qmm__nvfp4_factor2_f16(a | b << 16) != want && bad++ < 5) CHECK(0, "nvfp4 fp16 factor pair %u, %u", a, b);
        }
    }
    static const int offs[] = {-127, -60, -1, 0, 1, 60, 126};
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++)
        for (uint32_t a = 0; a < 256; a++)
            for (uint32_t b = 0; b < 256; b++) {
                const int off = offs[i];
                if ((int)a + off < 1 || (int)a + off > 254 || (int)b + off < 1 || (int)b + off > 254) continue;
                const uint32_t want = (qmm__mxfp4_factor(a, off) & 0xffffu) | (qmm__mxfp4_factor(b, off) & 0xffff0000u);
                if (qmm__mxfp4_factor2(a | b << 16, qmm__mxfp4_bias(off)) != want && bad++ < 5)
                    CHECK(0, "mxfp4 factor pair %u, %u, offset %d", a, b, off);
            }
    /* MXFP4's fp16 factors: each code of the admitted range c_max - 24 .. c_max is 2^(c - c_max + 15) as an
     * fp16 value, alone and in pairs, for top codes c_max = 254 - off from 24 to 254 */
    static const int offs16[] = {0, 1, 60, 127, 200, 230};
    for (size_t i = 0; i < sizeof offs16 / sizeof offs16[0]; i++) {
        const int off = offs16[i], cmax = 254 - off;
        const uint32_t bias16 = qmm__mxfp4_bias16(off);
        for (int a = cmax - QMM__MXFP4_HALF_RANGE; a <= cmax; a++) {
            if (a < 0) continue;
            const uint32_t f = qmm__mxfp4_factor2_f16((uint32_t)a * 0x00010001u, bias16);
            if (qmm__fp16_to_fp32((uint16_t)f) != ldexpf(1.0f, a - cmax + 15) && bad++ < 5)
                CHECK(0, "mxfp4 fp16 factor %d, offset %d", a, off);
            for (int b = cmax - QMM__MXFP4_HALF_RANGE; b <= cmax; b++) {
                if (b < 0) continue;
                const uint32_t want = (f & 0xffffu) | (qmm__mxfp4_factor2_f16((uint32_t)b * 0x00010001u, bias16) & 0xffff0000u);
                if (qmm__mxfp4_factor2_f16((uint32_t)a | (uint32_t)b << 16, bias16) != want && bad++ < 5)
                    CHECK(0, "mxfp4 fp16 factor pair %d, %d, offset %d", a, b, off);
            }
        }
    }
    CHECK(bad == 0, "%ld factor pairs differ", bad);
}

int main(void)
{
    harness_begin("test_cuda_layout");
    check_factor_pairs();
    static const size_t shapes[][2] = {{1, 1}, {16, 64}, {17, 65}, {33, 100}, {7, 257}, {40, 31}, {64, 512}};
    static const qmm_format formats[4] = {QMM_FORMAT_NVFP4, QMM_FORMAT_MXFP4, QMM_FORMAT_FP8_TENSOR, QMM_FORMAT_FP8_CHANNEL};
    static const qmm__cuda_encoding encs[4] = {QMM__ENC_NVFP4, QMM__ENC_MXFP4, QMM__ENC_FP8, QMM__ENC_FP8};
    char what[128];
    for (int f = 0; f < 4; f++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            qmm_weight w;
            random_weight(&w, formats[f], shapes[s][0], shapes[s][1], 12.0);
            snprintf(what, sizeof what, "format %d %zux%zu", (int)formats[f], shapes[s][0], shapes[s][1]);
            check_weight(&w, what, encs[f]);
            if (formats[f] == QMM_FORMAT_NVFP4) {
                /* zero, negative and E4M3-subnormal block scales, set by hand */
                size_t spr = (w.k + 15) / 16;
                for (size_t i = 0; i < w.n * spr; i++) {
                    uint64_t v = harness_next() % 6;
                    if (v == 0) w.block_scales[i] = 0x00;
                    else if (v == 1) w.block_scales[i] = 0x80;
                    else if (v == 2) w.block_scales[i] |= 0x80;
                    else if (v == 3) w.block_scales[i] = (uint8_t)(1 + harness_next() % 7);
                }
                snprintf(what, sizeof what, "nvfp4 odd scales %zux%zu", shapes[s][0], shapes[s][1]);
                check_weight(&w, what, QMM__ENC_NVFP4);
                w.block_scales[0] = 0x7f;
                check_weight(&w, "nvfp4 NaN scale", QMM__ENC_NVFP4_RAW);
            }
            if (formats[f] == QMM_FORMAT_FP8_TENSOR) {
                w.data[w.data_bytes - 1] = 0xff;
                check_weight(&w, "fp8 NaN code", QMM__ENC_FP8_RAW);
            }
            qmm_weight_free(&w);
        }
    /* MXFP4: a wide but admissible exponent range (126), all-zero blocks with scale code 0, too wide (127) */
    qmm_weight w;
    random_weight(&w, QMM_FORMAT_MXFP4, 9, 200, 4.0);
    size_t spr = (w.k + 31) / 32;
    for (size_t i = 0; i < w.n * spr; i++) w.block_scales[i] = (uint8_t)(60 + harness_next() % 127);
    w.block_scales[0] = 60, w.block_scales[1] = 186;
    check_weight(&w, "mxfp4 range 126", QMM__ENC_MXFP4);
    memset(w.data + 16 * 2, 0, 16); /* block 2 of row 0 all zero: its scale does not count */
    w.block_scales[2] = 0;
    check_weight(&w, "mxfp4 zero block", QMM__ENC_MXFP4);
    w.block_scales[1] = 187;
    check_weight(&w, "mxfp4 range 127", QMM__ENC_MXFP4_RAW);
    /* MXFP4's fp16 decode: scale codes spanning 24 have it (and decode exactly in fp16, 0.5 at the bottom
     * code the smallest fp16 subnormal), 25 do not */
    for (size_t i = 0; i < w.n * spr; i++) w.block_scales[i] = (uint8_t)(100 + harness_next() % 25);
    w.block_scales[0] = 100, w.block_scales[1] = 124;
    w.data[0] = (uint8_t)((w.data[0] & 0xf0) | 0x01); /* W[0][0] = 0.5 in block 0 (code 100) */
    CHECK(qmm__cuda_plan_layout(&w).mx_half == 1, "mxfp4 range 24: no fp16 decode");
    check_weight(&w, "mxfp4 range 24", QMM__ENC_MXFP4);
    w.block_scales[1] = 125;
    CHECK(qmm__cuda_plan_layout(&w).mx_half == 0, "mxfp4 range 25: an fp16 decode");
    check_weight(&w, "mxfp4 range 25", QMM__ENC_MXFP4);
    w.block_scales[1] = 0xff;
    check_weight(&w, "mxfp4 NaN scale", QMM__ENC_MXFP4_RAW);
    qmm_weight_free(&w);
    return harness_end("test_cuda_layout");
}
