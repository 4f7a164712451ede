/* Host side of qmm_weight_prepare for CUDA: the tile layout of docs/cuda.md, and the choice of encoding.
 * Pure C on host memory; cuda_backend.c uploads the result. */
#include <math.h>
#include <string.h>

#include "../core/convert.h"
#include "../core/format.h"
#include "cuda_internal.h"
#include "decode.h"

static size_t qmm__ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

static uint8_t qmm__code_e2m1(const qmm_weight *w, size_t r, size_t c)
{
    if (r >= w->n || c >= w->k) return 0;
    uint8_t b = w->data[r * (w->k / 2 + (w->k & 1)) + c / 2];
    return (uint8_t)((c & 1) ? b >> 4 : b & 0xf);
}

static uint8_t qmm__code_e4m3(const qmm_weight *w, size_t r, size_t c)
{
    return (r < w->n && c < w->k) ? w->data[r * w->k + c] : 0;
}

static size_t qmm__spr(const qmm_weight *w, size_t b) { return w->k / b + (w->k % b != 0); }

/* MXFP4 blocks whose codes are all zero: their scale does not matter. */
static int qmm__mx_block_is_zero(const qmm_weight *w, size_t r, size_t blk)
{
    const size_t row_bytes = w->k / 2 + (w->k & 1), b0 = blk * 16, b1 = b0 + 16 < row_bytes ? b0 + 16 : row_bytes;
    const uint8_t *row = w->data + r * row_bytes;
    for (size_t b = b0; b < b1; b++)
        if (row[b] & 0x77) return 0; /* a magnitude bit in either nibble */
    return 1;
}

qmm__cuda_layout qmm__cuda_plan_layout(const qmm_weight *w)
{
    qmm__cuda_layout l;
    memset(&l, 0, sizeof l);
    l.fix = 1.0f;
    l.strips = qmm__ceil_div(w->n, QMM__STRIP);
    switch (w->format) {
    case QMM_FORMAT_NVFP4: {
        l.enc = QMM__ENC_NVFP4;
        const size_t total = w->n * qmm__spr(w, 16);
        for (size_t i = 0; i < total; i++)
            if ((w->block_scales[i] & 0x7f) == 0x7f) l.enc = QMM__ENC_NVFP4_RAW; /* NaN scale */
        l.chunks = qmm__ceil_div(w->k, QMM__CHUNK_FP4);
        l.scale_bytes = l.strips * l.chunks * 64;
        l.fix = ldexpf(1.0f, QMM__NVFP4_FIX);
        break;
    }
    case QMM_FORMAT_MXFP4: {
        /* The bias trick needs every used scale code c in [K + 2, K + 128] for one K (decode.h): a code
         * range of at most 126. Take K = c_max - 128, so the largest products are about 12. */
        int cmin = 255, cmax = -1, nan = 0;
        const size_t spr = qmm__spr(w, 32);
        for (size_t r = 0; r < w->n; r++)
            for (size_t b = 0; b < spr; b++) {
                int c = w->block_scales[r * spr + b];
                if (c == 0xff) nan = 1;
                else if (!qmm__mx_block_is_zero(w, r, b)) {
                    cmin = c < cmin ? c : cmin;
                    cmax = c > cmax ? c : cmax;
                }
            }
        if (cmax < 0) cmin = cmax = 127; /* all blocks zero */
        l.enc = (nan || cmax - cmin > 126) ? QMM__ENC_MXFP4_RAW : QMM__ENC_MXFP4;
        l.mx_half = l.enc == QMM__ENC_MXFP4 && cmax - cmin <= QMM__MXFP4_HALF_RANGE;
        int kfix = cmax - 128;
        l.mx_off = 126 - kfix;
        l.fix = ldexpf(1.0f, kfix);
        l.chunks = qmm__ceil_div(w->k, QMM__CHUNK_FP4);
        l.scale_bytes = l.strips * l.chunks * 32;
        break;
    }
    case QMM_FORMAT_FP8_TENSOR:
    case QMM_FORMAT_FP8_CHANNEL: {
        l.enc = QMM__ENC_FP8;
        for (size_t i = 0; i < w->n * w->k; i++)
            if ((w->data[i] & 0x7f) == 0x7f) l.enc = QMM__ENC_FP8_RAW;
        l.chunks = qmm__ceil_div(w->k, QMM__CHUNK_FP8);
        break;
    }
    default: /* BF16: row-major */
        l.enc = QMM__ENC_BF16;
        l.data_bytes = w->n * w->k * 2;
        return l;
    }
    l.data_bytes = l.strips * l.chunks * QMM__TILE_BYTES;
    return l;
}

/* |s| of an E4M3 scale code as the E5M3 code u: |s| = (1 + (u & 7) / 8) * 2^((u >> 3) - 9). */
static uint8_t qmm__e5m3_of_e4m3(uint8_t code)
{
    int e = (code >> 3) & 15, m = code & 7, E;
    if (e > 0) {
        E = e - 7;
    } else { /* subnormal m * 2^-9: normalise */
        E = -6;
        m <<= 0;
        while (m < 8) m <<= 1, E--;
        m &= 7;
    }
    return (uint8_t)(((E + 9) << 3) | m);
}

/* The E2M1 code of (r, c) as it goes into the tile: NVFP4 blocks with a zero scale become zero codes
 * and blocks with a negative scale get their signs flipped, so the tile scale can be |s| (FAST only). */
static uint8_t qmm__tile_e2m1(const qmm_weight *w, const qmm__cuda_layout *l, size_t r, size_t c)
{
    uint8_t code = qmm__code_e2m1(w, r, c);
    if (l->enc != QMM__ENC_NVFP4 || r >= w->n || c >= w->k) return code;
    uint8_t s = w->block_scales[r * qmm__spr(w, 16) + c / 16];
    if ((s & 0x7f) == 0) return 0;
    return (s & 0x80) ? (uint8_t)(code ^ 8) : code;
}

static uint8_t qmm__tile_scale(const qmm_weight *w, const qmm__cuda_layout *l, size_t r, size_t blk)
{
    if (l->enc == QMM__ENC_NVFP4 || l->enc == QMM__ENC_NVFP4_RAW) {
        if (r >= w->n || blk >= qmm__spr(w, 16)) return l->enc == QMM__ENC_NVFP4 ? qmm__e5m3_of_e4m3(0x38) : 0x38;
        uint8_t s = w->block_scales[r * qmm__spr(w, 16) + blk];
        if (l->enc == QMM__ENC_NVFP4_RAW) return s;
        return (s & 0x7f) == 0 ? qmm__e5m3_of_e4m3(0x38) : qmm__e5m3_of_e4m3((uint8_t)(s & 0x7f));
    }
    /* MXFP4: padding and all-zero blocks take code 127 + K... any code in range; use the weight's own
     * top code through l->fix: c_max = K + 128. */
    int cmax = (int)(ilogbf(l->fix)) + 128;
    if (r >= w->n || blk >= qmm__spr(w, 32)) return (uint8_t)cmax;
    if (l->enc == QMM__ENC_MXFP4 && qmm__mx_block_is_zero(w, r, blk)) return (uint8_t)cmax;
    return w->block_scales[r * qmm__spr(w, 32) + blk];
}

/* Does row r need the NVFP4 sign / zero transform anywhere (a zero or negative block scale)? */
static int qmm__row_plain(const qmm_weight *w, const qmm__cuda_layout *l, size_t r)
{
    if (l->enc != QMM__ENC_NVFP4) return 1;
    const size_t spr = qmm__spr(w, 16);
    for (size_t b = 0; b < spr; b++) {
        uint8_t s = w->block_scales[r * spr + b];
        if ((s & 0x7f) == 0 || (s & 0x80)) return 0;
    }
    return 1;
}

/* Interior E2M1 tiles (16 full rows, 64 columns inside K, no transform): codes k and k + 1 of a row share
 * a byte, so each register's two codes are one byte of row r0 or r0 + 8. */
static void qmm__fill_fp4_fast(const qmm_weight *w, size_t s, size_t ch, uint8_t *tile)
{
    const size_t row_bytes = w->k / 2 + (w->k & 1);
    for (int lane = 0; lane < 32; lane++) {
        const size_t g = (size_t)lane >> 2, t = (size_t)lane & 3;
        const uint8_t *p0 = w->data + (s * 16 + g) * row_bytes + ch * 32 + t, *p1 = p0 + 8 * row_bytes;
        uint32_t words[4];
        for (int j = 0; j < 4; j++) {
            const uint8_t b[4] = {p0[8 * j], p1[8 * j], p0[8 * j + 4], p1[8 * j + 4]}; /* R0..R3 */
            uint8_t codes[4][2];
            for (int R = 0; R < 4; R++) codes[R][0] = (uint8_t)(b[R] & 15), codes[R][1] = (uint8_t)(b[R] >> 4);
            words[j] = qmm__e2m1_word_pack(codes);
        }
        memcpy(tile + lane * 16, words, 16);
    }
}

static void qmm__fill_fp8_fast(const qmm_weight *w, size_t s, size_t ch, uint8_t *tile)
{
    for (int lane = 0; lane < 32; lane++) {
        const size_t g = (size_t)lane >> 2, t = (size_t)lane & 3;
        const uint8_t *p0 = w->data + (s * 16 + g) * w->k + ch * 32 + 2 * t, *p1 = p0 + 8 * w->k;
        uint32_t words[4];
        for (int j = 0; j < 2; j++)
            for (int second = 0; second < 2; second++) {
                const size_t o = 16 * (size_t)j + 8 * (size_t)second;
                words[2 * j + second] = (uint32_t)p0[o] | (uint32_t)p1[o] << 8 | (uint32_t)p0[o + 1] << 16 | (uint32_t)p1[o + 1] << 24;
            }
        memcpy(tile + lane * 16, words, 16);
    }
}

void qmm__cuda_fill_layout(const qmm_weight *w, const qmm__cuda_layout *l, uint8_t *data, uint8_t *scales)
{
    if (l->enc == QMM__ENC_BF16) {
        memcpy(data, w->data, l->data_bytes);
        return;
    }
    const int fp8 = l->enc == QMM__ENC_FP8 || l->enc == QMM__ENC_FP8_RAW;
    const int nv = l->enc == QMM__ENC_NVFP4 || l->enc == QMM__ENC_NVFP4_RAW;
    for (size_t s = 0; s < l->strips; s++) {
        int strip_plain = (s + 1) * 16 <= w->n;
        for (size_t r = s * 16; strip_plain && r < (s + 1) * 16; r++) strip_plain = qmm__row_plain(w, l, r);
        for (size_t ch = 0; ch < l->chunks; ch++) {
            uint8_t *tile = data + (s * l->chunks + ch) * QMM__TILE_BYTES;
            const size_t ck = fp8 ? QMM__CHUNK_FP8 : QMM__CHUNK_FP4;
            const int fast = strip_plain && (ch + 1) * ck <= w->k;
            if (fast && fp8) qmm__fill_fp8_fast(w, s, ch, tile);
            else if (fast) qmm__fill_fp4_fast(w, s, ch, tile);
            for (int lane = 0; lane < 32 && !fast; lane++) {
                const size_t g = (size_t)lane >> 2, t = (size_t)lane & 3, r0 = s * 16 + g, r1 = r0 + 8;
                uint32_t words[4] = {0, 0, 0, 0};
                if (fp8) {
                    for (int j = 0; j < 2; j++)
                        for (int second = 0; second < 2; second++) {
                            const size_t k = ch * 32 + 16 * (size_t)j + 2 * t + 8 * (size_t)second;
                            /* bytes: (r0, k), (r1, k), (r0, k + 1), (r1, k + 1) */
                            words[2 * j + second] = (uint32_t)qmm__code_e4m3(w, r0, k) | (uint32_t)qmm__code_e4m3(w, r1, k) << 8 |
                                                    (uint32_t)qmm__code_e4m3(w, r0, k + 1) << 16 |
                                                    (uint32_t)qmm__code_e4m3(w, r1, k + 1) << 24;
                        }
                } else {
                    for (int j = 0; j < 4; j++) {
                        const size_t k = ch * 64 + 16 * (size_t)j + 2 * t;
                        /* register R: rows r0 / r1 (R & 1), columns k / k + 8 (R >> 1); element e adds e */
                        uint8_t codes[4][2];
                        for (int R = 0; R < 4; R++)
                            for (int e = 0; e < 2; e++) {
                                const size_t r = (R & 1) ? r1 : r0, c = k + (size_t)e + 8 * (size_t)(R >> 1);
                                codes[R][e] = qmm__tile_e2m1(w, l, r, c);
                            }
                        words[j] = qmm__e2m1_word_pack(codes);
                    }
                }
                memcpy(tile + lane * 16, words, 16);
            }
            if (fp8) continue;
            /* scales: NVFP4 8 bytes per row group g: row g blocks 0..3, row g + 8 blocks 0..3;
             * MXFP4 4 bytes: row g blocks 0..1, row g + 8 blocks 0..1 */
            uint8_t *st = scales + (s * l->chunks + ch) * (nv ? 64 : 32);
            for (size_t g = 0; g < 8; g++)
                for (size_t hi = 0; hi < 2; hi++) {
                    const size_t r = s * 16 + g + 8 * hi;
                    if (nv)
                        for (size_t b = 0; b < 4; b++) st[g * 8 + hi * 4 + b] = qmm__tile_scale(w, l, r, ch * 4 + b);
                    else
                        for (size_t b = 0; b < 2; b++) st[g * 4 + hi * 2 + b] = qmm__tile_scale(w, l, r, ch * 2 + b);
                }
        }
    }
}

/* bf16 * bf16 as the device's fma.rn.bf16x2 computes it for the decoders' exact products. */
static float qmm__bf16_mul(uint16_t a, uint16_t b)
{
    return qmm__bf16_to_fp32(qmm__fp32_to_bf16(qmm__bf16_to_fp32(a) * qmm__bf16_to_fp32(b)));
}

/* fp16 * fp16 as fma.rn.f16x2 computes it (the fp32 product is exact, one rounding to fp16). */
static float qmm__f16_mul(uint16_t a, uint16_t b)
{
    return qmm__fp16_to_fp32(qmm__fp32_to_fp16(qmm__fp16_to_fp32(a) * qmm__fp16_to_fp32(b)));
}

/* Both emulations: half = 0 the bf16 decode, 1 the fp16 one (where qmm__cuda_half_decode), each with the
 * power of two the kernels' epilogue factor undoes (l->fix, times qmm__cuda_half_fix for fp16). */
static float qmm__emulate(const qmm__cuda_layout *l, const uint8_t *data, const uint8_t *scales, size_t r, size_t c, int half)
{
    const size_t s = r / 16, gr = r % 16, g = gr % 8, hi = gr / 8;
    const int fp8 = l->enc == QMM__ENC_FP8 || l->enc == QMM__ENC_FP8_RAW;
    const size_t ck = fp8 ? 32 : 64, ch = c / ck, kin = c % ck, j = kin / 16, kt = kin % 16;
    const size_t t = (kt % 8) / 2, lane = g * 4 + t, elem = kt % 2, second = kt / 8;
    const uint8_t *tile = data + (s * l->chunks + ch) * QMM__TILE_BYTES + lane * 16;
    /* the element's register pair and its block factors (f2: the kernels' pair form, both halves) */
    uint32_t pair, f2;
    if (fp8) {
        uint32_t word;
        memcpy(&word, tile + 4 * (2 * j + second), 4);
        pair = half ? qmm__e4m3x2_to_f16x2(hi ? word >> 8 : word) : qmm__e4m3x2_to_bf16x2(hi ? word >> 8 : word);
        f2 = half ? 0x3c003c00u /* fp16 1.0: the kernels multiply by nothing */ : QMM__FP8_FACTOR;
    } else {
        uint32_t word;
        memcpy(&word, tile + 4 * j, 4);
        uint32_t regs[4];
        if (half) qmm__e2m1_word_decode_f16(word, regs);
        else qmm__e2m1_word_decode(word, regs);
        pair = regs[hi + 2 * second];
        if (l->enc == QMM__ENC_NVFP4) {
            const uint32_t u = scales[(s * l->chunks + ch) * 64 + g * 8 + hi * 4 + j];
            f2 = half ? qmm__nvfp4_factor2_f16(u * 0x00010001u) : qmm__nvfp4_factor(u);
        } else {
            const uint32_t c8 = scales[(s * l->chunks + ch) * 32 + g * 4 + hi * 2 + j / 2];
            f2 = half ? qmm__mxfp4_factor2_f16(c8 * 0x00010001u, qmm__mxfp4_bias16(l->mx_off)) : qmm__mxfp4_factor(c8, l->mx_off);
        }
    }
    const uint16_t h = (uint16_t)(elem ? pair >> 16 : pair & 0xffff), f = (uint16_t)(elem ? f2 >> 16 : f2 & 0xffff);
    /* undo the fix: the product carries 2^-fix, and the fp16 decodes their further power of two */
    return half ? qmm__f16_mul(h, f) * (l->fix * qmm__cuda_half_fix(l->enc)) : qmm__bf16_mul(h, f) * l->fix;
}

float qmm__cuda_emulate_decode(const qmm__cuda_layout *l, const uint8_t *data, const uint8_t *scales, size_t r, size_t c)
{
    return qmm__emulate(l, data, scales, r, c, 0);
}

float qmm__cuda_emulate_decode_f16(const qmm__cuda_layout *l, const uint8_t *data, const uint8_t *scales, size_t r, size_t c)
{
    return qmm__emulate(l, data, scales, r, c, 1);
}
