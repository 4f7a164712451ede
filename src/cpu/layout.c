/* The CPU backend's prepared weight: rows in tiles of 16, each tile one sequential stream that the
 * kernels read with 64-byte loads, one load feeding 16 outputs (src/cpu/README.md draws the layouts).
 * Built once by qmm_weight_prepare in portable C; every instruction set reads the same layout. */
#include <stdlib.h>
#include <string.h>

#include "../core/convert.h"
#include "../core/error.h"
#include "../core/format.h"
#include "cpu.h"

qmm__cpu_kind qmm__cpu_kind_of(qmm_format f)
{
    switch (f) {
    case QMM_FORMAT_NVFP4: return QMM__KIND_NVFP4;
    case QMM_FORMAT_MXFP4: return QMM__KIND_MXFP4;
    case QMM_FORMAT_BF16: return QMM__KIND_BF16;
    default: return QMM__KIND_FP8;
    }
}

static size_t qmm__block_of(qmm__cpu_kind kind) { return kind == QMM__KIND_NVFP4 ? 16 : kind == QMM__KIND_MXFP4 ? 32 : 0; }

static void qmm__fill_common(const qmm_weight *w, qmm__cpu_weight *out)
{
    memset(out, 0, sizeof *out);
    out->kind = qmm__cpu_kind_of(w->format);
    out->n = w->n;
    out->k = w->k;
    out->kp = (w->k + QMM__KGROUP - 1) / QMM__KGROUP * QMM__KGROUP;
    out->tiles = (w->n + QMM__TILE_ROWS - 1) / QMM__TILE_ROWS;
    const qmm_format_traits *t = qmm__format_traits(w->format);
    out->tensor_scale = t->global_scale == QMM_GLOBAL_SCALE_TENSOR ? w->tensor_scale : 1.0f;
    out->unit = (out->kind == QMM__KIND_NVFP4 || out->kind == QMM__KIND_FP8) ? QMM__E4M3_UNIT : 1.0f;
}

void qmm__cpu_view_canonical(const qmm_weight *w, qmm__cpu_weight *out)
{
    qmm__fill_common(w, out);
    out->prepared = false;
    out->data = w->data;
    out->scales = w->block_scales;
    out->channel_scales = w->format == QMM_FORMAT_FP8_CHANNEL ? w->channel_scales : NULL;
}

/* E2M1 tiles: chunk c (64 bytes) holds k in [8c, 8c + 8) of the 16 rows; 16-bit word i = 2 * row + s
 * holds in its nibble j the code of W[row][8c + 2j + s]. A 16-lane bf16-pair vector then comes from
 * one word-table lookup per nibble (vpermw on the word shifted right by 4j).
 * The 4 canonical bytes of a row's chunk hold the nibbles n0..n7 (k = 8c + i) in order; the row's
 * two words are the even nibbles and the odd ones, which two swaps of bit fields produce (an
 * "unshuffle", Hacker's Delight 7-2, on nibbles). */
static uint32_t qmm__unshuffle_nibbles(uint32_t x)
{
    uint32_t t = (x ^ (x >> 4)) & 0x00F000F0u; /* n1 <-> n2, n5 <-> n6 */
    x ^= t ^ (t << 4);
    t = (x ^ (x >> 8)) & 0x0000FF00u; /* byte 1 <-> byte 2 */
    return x ^ t ^ (t << 8);           /* low half n6 n4 n2 n0, high half n7 n5 n3 n1 */
}

static void qmm__prepare_e2m1(const qmm_weight *w, qmm__cpu_weight *p, uint8_t *data, uint8_t *scales)
{
    const size_t n = w->n, k = w->k, row_bytes = k / 2 + (k & 1), b = qmm__block_of(p->kind);
    const size_t spr = k / b + (k % b != 0), chunks = (row_bytes + 3) / 4;
    for (size_t t = 0; t < p->tiles; t++) {
        uint8_t *td = data + t * p->tile_bytes, *ts = scales + t * p->tile_scale_bytes;
        for (size_t l = 0; l < QMM__TILE_ROWS && t * QMM__TILE_ROWS + l < n; l++) {
            const size_t r = t * QMM__TILE_ROWS + l;
            const uint8_t *row = w->data + r * row_bytes;
            for (size_t c = 0; c < chunks; c++) {
                uint8_t bytes[4] = {0, 0, 0, 0};
                memcpy(bytes, row + 4 * c, row_bytes - 4 * c < 4 ? row_bytes - 4 * c : 4);
                const uint32_t v = qmm__unshuffle_nibbles((uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 |
                                                          (uint32_t)bytes[2] << 16 | (uint32_t)bytes[3] << 24);
                const uint8_t out[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
                memcpy(td + 64 * c + 4 * l, out, 4);
            }
            for (size_t bl = 0; bl < spr; bl++) ts[16 * bl + l] = w->block_scales[r * spr + bl];
        }
    }
}

/* bf16 tiles: for each k-pair p, 16 rows x 2 consecutive k: element 2 * row + s is W[row][2p + s]. */
static void qmm__prepare_bf16(const qmm_weight *w, qmm__cpu_weight *p, uint8_t *data)
{
    const size_t n = w->n, k = w->k;
    for (size_t t = 0; t < p->tiles; t++) {
        uint8_t *td = data + t * p->tile_bytes;
        for (size_t l = 0; l < QMM__TILE_ROWS && t * QMM__TILE_ROWS + l < n; l++) {
            const uint8_t *row = w->data + (t * QMM__TILE_ROWS + l) * k * 2;
            for (size_t kk = 0; kk < k; kk += 2) memcpy(td + 64 * (kk / 2) + 4 * l, row + 2 * kk, kk + 1 < k ? 4 : 2);
        }
    }
}

/* E4M3 tiles: chunk c (64 bytes) holds k in [4c, 4c + 4) of the 16 rows in the order of the byte
 * unpack instructions: byte 16L + 8q + 2i + s is W[4L + i][4c + 2q + s] (L, i < 4; q, s < 2), so two
 * byte-table lookups (low and high bytes of the bf16 values) and one unpack per half give the pair
 * vectors of k-pairs 2c (unpacklo) and 2c + 1 (unpackhi). */
size_t qmm__e4m3_offset(size_t l, size_t kk)
{
    return 64 * (kk / 4) + 16 * (l / 4) + 8 * ((kk / 2) & 1) + 2 * (l % 4) + (kk & 1);
}

static void qmm__prepare_e4m3(const qmm_weight *w, qmm__cpu_weight *p, uint8_t *data)
{
    const size_t n = w->n, k = w->k;
    for (size_t t = 0; t < p->tiles; t++) {
        uint8_t *td = data + t * p->tile_bytes;
        for (size_t l = 0; l < QMM__TILE_ROWS && t * QMM__TILE_ROWS + l < n; l++) {
            const uint8_t *row = w->data + (t * QMM__TILE_ROWS + l) * k;
            for (size_t kk = 0; kk < k; kk += 2) /* a pair is two adjacent bytes */
                memcpy(td + qmm__e4m3_offset(l, kk), row + kk, kk + 1 < k ? 2 : 1);
        }
    }
}

/* Marks with NaN the rows that hold a NaN code; true when there is one. */
static bool qmm__find_nan_codes(const qmm_weight *w, qmm__cpu_kind kind, float *poison)
{
    bool any = false;
    const size_t k = w->k;
    for (size_t r = 0; r < w->n; r++) {
        bool nan = false;
        if (kind == QMM__KIND_FP8) {
            for (size_t kk = 0; kk < k && !nan; kk++) nan = (w->data[r * k + kk] & 0x7fu) == 0x7fu;
        } else if (kind != QMM__KIND_BF16) {
            const size_t b = qmm__block_of(kind), spr = k / b + (k % b != 0);
            for (size_t bl = 0; bl < spr && !nan; bl++) {
                const uint8_t sc = w->block_scales[r * spr + bl];
                nan = kind == QMM__KIND_NVFP4 ? (sc & 0x7fu) == 0x7fu : sc == 0xffu;
            }
        }
        poison[r] = nan ? NAN : 0.0f;
        any = any || nan;
    }
    return any;
}

static void qmm__cpu_release(qmm_prepared *self)
{
    qmm__cpu_weight *p = (qmm__cpu_weight *)self;
    free(p->storage);
    free(p);
}

qmm_status qmm__cpu_prepare_weight(const qmm_weight *w, qmm__cpu_weight **out)
{
    static const char fn[] = "qmm_weight_prepare (cpu)";
    qmm__cpu_weight *p = calloc(1, sizeof *p);
    if (!p) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: cannot allocate the descriptor", fn);
    qmm__fill_common(w, p);
    const size_t elem_bits = p->kind == QMM__KIND_BF16 ? 16 : p->kind == QMM__KIND_FP8 ? 8 : 4;
    const size_t b = qmm__block_of(p->kind);
    size_t data_bytes = 0, scale_bytes = 0, total = 0;
    bool ok = qmm__mul_size(p->kp, QMM__TILE_ROWS * elem_bits / 8, &p->tile_bytes) &&
              qmm__mul_size(p->tiles, p->tile_bytes, &data_bytes);
    p->tile_scale_bytes = b ? QMM__TILE_ROWS * (p->kp / b) : 0;
    ok = ok && qmm__mul_size(p->tiles, p->tile_scale_bytes, &scale_bytes);
    const size_t channel_bytes = w->format == QMM_FORMAT_FP8_CHANNEL ? w->n * sizeof(float) : 0;
    const size_t poison_bytes = w->n * sizeof(float);
    ok = ok && data_bytes <= (size_t)-1 - scale_bytes - channel_bytes - poison_bytes - 512;
    if (!ok) {
        free(p);
        return qmm__fail(QMM_ERR_SIZE_OVERFLOW, "%s: the prepared copy of %zu x %zu overflows size_t", fn, w->n, w->k);
    }
    const size_t scale_off = (data_bytes + 63) / 64 * 64, channel_off = scale_off + (scale_bytes + 63) / 64 * 64;
    const size_t poison_off = channel_off + (channel_bytes + 63) / 64 * 64;
    total = poison_off + (poison_bytes + 63) / 64 * 64 + 64;
    uint8_t *mem = aligned_alloc(64, total);
    if (!mem) {
        free(p);
        return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes for the prepared copy", fn, total);
    }
    memset(mem, 0, total); /* padding rows and K past the end are zero weights with zero scales */
    if (p->kind == QMM__KIND_NVFP4 || p->kind == QMM__KIND_MXFP4) qmm__prepare_e2m1(w, p, mem, mem + scale_off);
    else if (p->kind == QMM__KIND_FP8) qmm__prepare_e4m3(w, p, mem);
    else qmm__prepare_bf16(w, p, mem);
    if (channel_bytes) memcpy(mem + channel_off, w->channel_scales, channel_bytes);
    float *poison = (float *)(void *)(mem + poison_off);
    p->poison = qmm__find_nan_codes(w, p->kind, poison) ? poison : NULL;
    p->prepared = true;
    p->storage = mem;
    p->data = mem;
    p->scales = b ? mem + scale_off : NULL;
    p->channel_scales = channel_bytes ? (const float *)(const void *)(mem + channel_off) : NULL;
    p->head.release = qmm__cpu_release;
    *out = p;
    return QMM_OK;
}

/* ---- panels from canonical weights (portable; the slow path for unprepared weights) ---- */

void qmm__cpu_panel_canonical(const qmm__cpu_weight *w, size_t col0, size_t k0, size_t kc, uint16_t *panel)
{
    const size_t k = w->k, kend = k0 + kc < k ? k0 + kc : k;
    float e4m3[256], e2m1[16];
    for (unsigned i = 0; i < 256; i++) e4m3[i] = qmm__e4m3_to_fp32((uint8_t)i) * QMM__E4M3_UNIT;
    for (unsigned i = 0; i < 16; i++) e2m1[i] = qmm__e2m1_to_fp32((uint8_t)i);
    memset(panel, 0, kc / 2 * 64 * sizeof(uint16_t));
    for (size_t c = 0; c < 32 && col0 + c < w->n; c++) {
        const size_t r = col0 + c;
        uint16_t *dst = panel + 2 * c;
        for (size_t kk = k0; kk < kend; kk++) {
            float v; /* the decoded value in the weight's unit: exact in bf16 */
            if (w->kind == QMM__KIND_BF16) {
                uint16_t h;
                memcpy(&h, w->data + 2 * (r * k + kk), 2);
                dst[64 * ((kk - k0) / 2) + (kk & 1)] = h;
                continue;
            }
            if (w->kind == QMM__KIND_FP8) v = e4m3[w->data[r * k + kk]];
            else {
                const size_t b = qmm__block_of(w->kind), spr = k / b + (k % b != 0), row_bytes = k / 2 + (k & 1);
                const uint8_t byte = w->data[r * row_bytes + kk / 2], sc = w->scales[r * spr + kk / b];
                v = e2m1[(kk & 1) ? byte >> 4 : byte & 0xfu] * (w->kind == QMM__KIND_NVFP4 ? e4m3[sc] : qmm__e8m0_to_fp32(sc));
            }
            dst[64 * ((kk - k0) / 2) + (kk & 1)] = (uint16_t)(qmm__f32_bits(v) >> 16);
        }
    }
}
