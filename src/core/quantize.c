/* Quantization recipes, bit-exact with the producers of real checkpoints (docs/design.md). Every recipe
 * computes in fp32 in the producer's order; nothing is written before the whole input is checked. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "error.h"
#include "format.h"
#include "weight.h"

/* Row r of the source as fp32 (the source type's own conversion, one loop per type). */
static void qmm__load_row(qmm_dtype type, const void *src, size_t stride, size_t r, size_t k, float *row)
{
    const size_t o = r * stride;
    if (type == QMM_DTYPE_FP32) {
        memcpy(row, (const float *)src + o, k * sizeof(float));
    } else if (type == QMM_DTYPE_BF16) {
        const uint16_t *s = (const uint16_t *)src + o;
        for (size_t c = 0; c < k; c++) row[c] = qmm__bf16_to_fp32(s[c]);
    } else {
        const uint16_t *s = (const uint16_t *)src + o;
        for (size_t c = 0; c < k; c++) row[c] = qmm__fp16_to_fp32(s[c]);
    }
}

/* One pass over the input: every value finite, and the largest magnitude. `row` holds k floats. */
static qmm_status qmm__scan_input(qmm_dtype type, const void *src, size_t stride, size_t n, size_t k, float *row, float *amax)
{
    float m = 0.0f;
    for (size_t r = 0; r < n; r++) {
        qmm__load_row(type, src, stride, r, k, row);
        bool finite = true;
        for (size_t c = 0; c < k; c++) {
            const float a = fabsf(row[c]);
            finite &= isfinite(row[c]) != 0;
            m = a > m ? a : m; /* not fmaxf: a libm call here; a NaN fails the scan anyway */
        }
        if (!finite)
            for (size_t c = 0; c < k; c++)
                if (!isfinite(row[c]))
                    return qmm__fail(QMM_ERR_NON_FINITE, "qmm_quantize: weight[%zu][%zu] is %s", r, c,
                                     isnan(row[c]) ? "NaN" : "infinite");
    }
    *amax = m;
    return QMM_OK;
}

/* The largest |x| of finite values (the input is checked first). */
static float qmm__max_abs(const float *x, size_t len)
{
    float m = 0.0f;
    for (size_t i = 0; i < len; i++) {
        const float a = fabsf(x[i]);
        m = a > m ? a : m;
    }
    return m;
}

/* Codes codes[0 .. len) of columns c0 .. (c0 even) into nibbles, the low nibble first; an odd last code
 * leaves its byte's high nibble zero. */
static void qmm__store_nibbles(uint8_t *row, size_t c0, const uint8_t *codes, size_t len)
{
    uint8_t *o = row + c0 / 2;
    for (size_t i = 0; i + 1 < len; i += 2) o[i / 2] = (uint8_t)(codes[i] | (codes[i + 1] << 4));
    if (len & 1) o[len / 2] = codes[len - 1];
}

/* NVFP4, modelopt: s2 = amax / (6 * 448); sb = E4M3(clamp(amax_b / (6 * s2), 2^-9, 448)) with 1.0 for a
 * zero block; q = E2M1(x / (sb * s2)) with the sign taken as q < 0. */
static void qmm__quantize_nvfp4(const float *row, size_t k, float s2, uint8_t *out, uint8_t *scales)
{
    const float six_s2 = 6.0f * s2;
    for (size_t b0 = 0, blk = 0; b0 < k; b0 += 16, blk++) {
        size_t len = k - b0 < 16 ? k - b0 : 16;
        float sb = qmm__max_abs(row + b0, len) / six_s2;
        if (sb == 0.0f) sb = 1.0f;
        sb = fminf(fmaxf(sb, 0x1p-9f), 448.0f);
        uint8_t code = qmm__fp32_to_e4m3(sb);
        scales[blk] = code;
        const float scale = qmm__e4m3_to_fp32(code) * s2;
        uint8_t codes[16];
        for (size_t i = 0; i < len; i++) {
            float x = row[b0 + i];
            /* modelopt's _cast_fp4 takes the sign from the scaled value: q < 0. A negative x whose
             * quotient underflows to -0.0 therefore encodes as +0, like -0.0 itself. */
            float q = x / scale;
            codes[i] = (uint8_t)(qmm__e2m1_magnitude_code(fabsf(q)) | (q < 0.0f ? 8u : 0u));
        }
        qmm__store_nibbles(out, b0, codes, len);
    }
}

/* MXFP4: the shared exponent of a 32-block by the floor rule (OCP MX v1.0 section 6.3) or the rceil
 * rule (2^e the power of two at or above amax / 6, as PTX cvt.rp.ue8m0 gives). */
static int qmm__mx_exponent(float amax, bool rceil)
{
    int e;
    if (rceil) {
        float d = amax / 6.0f;
        if (d == 0.0f) return -127;
        int ex;
        float f = frexpf(d, &ex); /* d = f * 2^ex, f in [0.5, 1) */
        e = f == 0.5f ? ex - 1 : ex;
    } else {
        if (amax == 0.0f) return -127;
        e = ilogbf(amax) - 2; /* floor(log2(amax)) - emax of E2M1 */
    }
    return e < -127 ? -127 : e > 127 ? 127 : e;
}

static void qmm__quantize_mxfp4(const float *row, size_t k, bool rceil, uint8_t *out, uint8_t *scales)
{
    for (size_t b0 = 0, blk = 0; b0 < k; b0 += 32, blk++) {
        size_t len = k - b0 < 32 ? k - b0 : 32;
        int e = qmm__mx_exponent(qmm__max_abs(row + b0, len), rceil);
        scales[blk] = (uint8_t)(e + 127);
        const float inv = ldexpf(1.0f, -e); /* exact: 2^-e is a normal fp32 for e in [-127, 125] */
        uint8_t codes[32];
        for (size_t i = 0; i < len; i++) codes[i] = qmm__fp32_to_e2m1(row[b0 + i] * inv);
        qmm__store_nibbles(out, b0, codes, len);
    }
}

static float qmm__fp8_scale(float amax)
{
    float s = amax / 448.0f;
    return s == 0.0f ? 1.0f : s;
}

static void qmm__quantize_fp8_row(const float *row, size_t k, float s, uint8_t *out)
{
    for (size_t i = 0; i < k; i++) out[i] = qmm__fp32_to_e4m3(row[i] / s);
}

qmm_status qmm__recipe_resolve(const char *fn, qmm_format format, qmm_recipe *recipe)
{
    if ((int)*recipe < QMM_RECIPE_DEFAULT || (int)*recipe > QMM_RECIPE_FP8_AMAX)
        return qmm__fail(QMM_ERR_INVALID_ENUM, "%s: unknown recipe %d", fn, (int)*recipe);
    qmm_recipe r = *recipe;
    bool ok;
    switch (format) {
    case QMM_FORMAT_NVFP4:
        if (r == QMM_RECIPE_DEFAULT) r = QMM_RECIPE_NVFP4_MODELOPT;
        ok = r == QMM_RECIPE_NVFP4_MODELOPT;
        break;
    case QMM_FORMAT_MXFP4:
        if (r == QMM_RECIPE_DEFAULT) r = QMM_RECIPE_MXFP4_FLOOR;
        ok = r == QMM_RECIPE_MXFP4_FLOOR || r == QMM_RECIPE_MXFP4_RCEIL;
        break;
    case QMM_FORMAT_BF16:
        ok = r == QMM_RECIPE_DEFAULT;
        break;
    default:
        if (r == QMM_RECIPE_DEFAULT) r = QMM_RECIPE_FP8_AMAX;
        ok = r == QMM_RECIPE_FP8_AMAX;
        break;
    }
    if (!ok)
        return qmm__fail(QMM_ERR_UNSUPPORTED, "%s: recipe '%s' does not apply to %s", fn, qmm_recipe_name(r),
                         qmm__format_traits(format)->name);
    *recipe = r;
    return QMM_OK;
}

/* Quantizes the one weight *dst (a validated layout) from n rows of src; finite input checked here. */
static qmm_status qmm__quantize_one(const char *fn, qmm_recipe recipe, qmm_dtype src_type, const void *src,
                                   size_t src_stride, qmm_weight *dst)
{
    const size_t n = dst->n, k = dst->k;
    qmm_weight_size size;
    QMM__TRY(qmm__weight_size(fn, dst->format, dst->scale_layout, n, k, &size));
    float *row = malloc(k * sizeof(float));
    if (!row) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: cannot allocate a row of %zu floats", fn, k);
    float amax = 0.0f;
    qmm_status scan = qmm__scan_input(src_type, src, src_stride, n, k, row, &amax);
    if (scan != QMM_OK) {
        free(row);
        return scan;
    }

    /* From here on nothing can fail. NVFP4: if amax / 2688 is 0, s2 = 1 keeps every division finite. */
    float s2 = amax / 2688.0f;
    if (s2 == 0.0f) s2 = 1.0f;
    const float fp8_tensor_scale = qmm__fp8_scale(amax);
    for (size_t r = 0; r < n; r++) {
        qmm__load_row(src_type, src, src_stride, r, k, row);
        uint8_t *out = dst->data + r * size.row_bytes;
        uint8_t *scales = dst->block_scales ? dst->block_scales + r * size.scales_per_row : NULL;
        switch (recipe) {
        case QMM_RECIPE_NVFP4_MODELOPT: qmm__quantize_nvfp4(row, k, s2, out, scales); break;
        case QMM_RECIPE_MXFP4_FLOOR: qmm__quantize_mxfp4(row, k, false, out, scales); break;
        case QMM_RECIPE_MXFP4_RCEIL: qmm__quantize_mxfp4(row, k, true, out, scales); break;
        case QMM_RECIPE_DEFAULT: /* BF16 */
            for (size_t c = 0; c < k; c++) {
                uint16_t h = qmm__fp32_to_bf16(row[c]);
                memcpy(out + 2 * c, &h, 2);
            }
            break;
        default:
            if (dst->format == QMM_FORMAT_FP8_CHANNEL) {
                float s = qmm__fp8_scale(qmm__max_abs(row, k));
                dst->channel_scales[r] = s;
                qmm__quantize_fp8_row(row, k, s, out);
            } else {
                qmm__quantize_fp8_row(row, k, fp8_tensor_scale, out);
            }
            break;
        }
    }
    free(row);
    dst->tensor_scale = dst->format == QMM_FORMAT_NVFP4        ? s2
                        : dst->format == QMM_FORMAT_FP8_TENSOR ? fp8_tensor_scale
                                                               : 1.0f;
    return QMM_OK;
}

qmm_status qmm_quantize(qmm_recipe recipe, qmm_dtype src_type, const void *src, size_t src_stride, qmm_weight *dst)
{
    static const char fn[] = "qmm_quantize";
    if (!dst) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: dst is NULL", fn);
    if (!src) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: src is NULL", fn);
    if (!qmm__dtype_is_float(src_type))
        return qmm__fail(QMM_ERR_INVALID_ENUM, "%s: source type %d is not fp32, bf16 or fp16", fn, (int)src_type);
    qmm_weight_size size = {0};
    QMM__TRY(qmm__weight_size(fn, dst->format, dst->scale_layout, dst->n, dst->k, &size));
    QMM__TRY(qmm__recipe_resolve(fn, dst->format, &recipe));
    if (dst->scale_layout != QMM_SCALE_LAYOUT_CANONICAL)
        return qmm__fail(QMM_ERR_UNSUPPORTED, "%s: quantizers write the canonical scale layout only", fn);
    const size_t experts = qmm__weight_experts(dst), k = dst->k;
    size_t rows;
    if (!qmm__mul_size(experts, dst->n, &rows))
        return qmm__fail(QMM_ERR_SIZE_OVERFLOW, "%s: %zu experts of %zu rows overflow size_t", fn, experts, dst->n);
    if (src_stride < k) return qmm__fail(QMM_ERR_INVALID_STRIDE, "%s: source row stride %zu is shorter than k = %zu", fn, src_stride, k);
    size_t span;
    QMM__TRY(qmm__matrix_span(fn, "the source", src, rows, k, src_stride, qmm__dtype_size(src_type), &span));
    if (!dst->data) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: dst->data is NULL", fn);
    if (size.block_scale_bytes && !dst->block_scales) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: dst->block_scales is NULL", fn);
    if (size.channel_scale_count && !dst->channel_scales)
        return qmm__fail(QMM_ERR_NULL_POINTER, "%s: dst->channel_scales is NULL", fn);
    if (experts > 1 && qmm__format_traits(dst->format)->global_scale == QMM_GLOBAL_SCALE_TENSOR && !dst->tensor_scales)
        return qmm__fail(QMM_ERR_NULL_POINTER, "%s: dst->tensor_scales is NULL for a stack of %zu experts", fn, experts);
    QMM__TRY(qmm__weight_check(fn, dst, false));
    if (experts == 1) return qmm__quantize_one(fn, recipe, src_type, src, src_stride, dst);
    /* a stack: every expert's input finite before any is written, then each quantized on its own (its
     * own amax, tensor scale and channel scales) */
    float *row = malloc(k * sizeof(float));
    if (!row) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: cannot allocate a row of %zu floats", fn, k);
    float amax;
    qmm_status st = qmm__scan_input(src_type, src, src_stride, rows, k, row, &amax);
    free(row);
    QMM__TRY(st);
    const size_t expert_elems = dst->n * src_stride * qmm__dtype_size(src_type); /* bytes: within span */
    for (size_t e = 0; e < experts; e++) {
        qmm_weight one;
        qmm__weight_expert(dst, e, &one);
        QMM__TRY(qmm__quantize_one(fn, recipe, src_type, (const char *)src + e * expert_elems, src_stride, &one));
        if (dst->tensor_scales) dst->tensor_scales[e] = one.tensor_scale;
    }
    return QMM_OK;
}
