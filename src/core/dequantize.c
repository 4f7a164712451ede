/* Dequantization: exact products of element and block scale, optionally times the tensor / channel
 * scale rounded once. */
#include <stdlib.h>

#include "convert.h"
#include "dequant.h"
#include "error.h"
#include "format.h"
#include "weight.h"

void qmm__dequant_row_unscaled(const qmm_weight *w, size_t r, float *out)
{
    const qmm_format_traits *t = qmm__format_traits(w->format);
    const size_t k = w->k;
    if (t->element_bits == 16) {
        const uint16_t *row = (const uint16_t *)(const void *)(w->data + r * k * 2);
        for (size_t c = 0; c < k; c++) out[c] = qmm__bf16_to_fp32(row[c]);
        return;
    }
    if (t->element_bits == 8) {
        const uint8_t *row = w->data + r * k;
        for (size_t c = 0; c < k; c++) out[c] = qmm__e4m3_to_fp32(row[c]);
        return;
    }
    const size_t b = (size_t)t->block_size, spr = k / b + (k % b != 0);
    const uint8_t *row = w->data + r * (k / 2 + (k & 1));
    const uint8_t *scales = w->block_scales + r * spr;
    for (size_t c = 0; c < k; c++) {
        uint8_t code = (uint8_t)((c & 1) ? row[c / 2] >> 4 : row[c / 2] & 0xfu);
        uint8_t sc = scales[c / b];
        float s = t->block_scale == QMM_DTYPE_E4M3 ? qmm__e4m3_to_fp32(sc) : qmm__e8m0_to_fp32(sc);
        out[c] = qmm__e2m1_to_fp32(code) * s;
    }
}

float qmm__row_scale(const qmm_weight *w, size_t r)
{
    switch (qmm__format_traits(w->format)->global_scale) {
    case QMM_GLOBAL_SCALE_TENSOR: return w->tensor_scale;
    case QMM_GLOBAL_SCALE_CHANNEL: return w->channel_scales[r];
    default: return 1.0f;
    }
}

qmm_status qmm_dequantize(const qmm_weight *w, unsigned flags, qmm_dtype dst_type, void *dst, size_t dst_stride)
{
    static const char fn[] = "qmm_dequantize";
    QMM__TRY(qmm__weight_validate(fn, w));
    if (!dst) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: dst is NULL", fn);
    if (flags & ~QMM_DEQUANT_UNSCALED) return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: unknown flags 0x%x", fn, flags);
    if ((int)dst_type < QMM_DTYPE_FP32 || (int)dst_type > QMM_DTYPE_E8M0)
        return qmm__fail(QMM_ERR_INVALID_ENUM, "%s: unknown dtype %d", fn, (int)dst_type);
    if (dst_type != QMM_DTYPE_FP32 && dst_type != QMM_DTYPE_BF16)
        return qmm__fail(QMM_ERR_UNSUPPORTED, "%s: output type %s (fp32 or bf16 only)", fn, qmm_dtype_name(dst_type));
    if (w->scale_layout != QMM_SCALE_LAYOUT_CANONICAL)
        return qmm__fail(QMM_ERR_UNSUPPORTED, "%s: block scales must be in the canonical layout", fn);
    if (dst_stride < w->k)
        return qmm__fail(QMM_ERR_INVALID_STRIDE, "%s: output row stride %zu is shorter than k = %zu", fn, dst_stride, w->k);
    const size_t experts = qmm__weight_experts(w);
    size_t rows, span;
    if (!qmm__mul_size(experts, w->n, &rows))
        return qmm__fail(QMM_ERR_SIZE_OVERFLOW, "%s: %zu experts of %zu rows overflow size_t", fn, experts, w->n);
    QMM__TRY(qmm__matrix_span(fn, "the output", dst, rows, w->k, dst_stride, qmm__dtype_size(dst_type), &span));
    float *row = malloc(w->k * sizeof(float));
    if (!row) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: cannot allocate a row of %zu floats", fn, w->k);

    const int scaled = !(flags & QMM_DEQUANT_UNSCALED);
    for (size_t e = 0; e < experts; e++) {
        qmm_weight one; /* rows of experts one after another */
        qmm__weight_expert(w, e, &one);
        for (size_t r = 0; r < w->n; r++) {
            qmm__dequant_row_unscaled(&one, r, row);
            const double s = qmm__row_scale(&one, r);
            const size_t o = (e * w->n + r) * dst_stride;
            for (size_t c = 0; c < w->k; c++) {
                /* element * block scale has at most 6 significant bits and the scale 24: the fp64 product
                 * is exact, so each output is rounded exactly once. */
                double v = scaled ? (double)row[c] * s : (double)row[c];
                if (dst_type == QMM_DTYPE_FP32) ((float *)dst)[o + c] = (float)v;
                else ((uint16_t *)dst)[o + c] = qmm__f64_to_bf16(v);
            }
        }
    }
    free(row);
    return QMM_OK;
}
