/* Format traits and names. A format is declared once, here. */
#include <string.h>

#include "convert.h"
#include "error.h"
#include "format.h"

static const qmm_format_traits qmm__formats[] = {
    [QMM_FORMAT_NVFP4] = {"nvfp4", QMM_DTYPE_E2M1, 4, 16, QMM_DTYPE_E4M3, QMM_GLOBAL_SCALE_TENSOR, 4.5},
    [QMM_FORMAT_MXFP4] = {"mxfp4", QMM_DTYPE_E2M1, 4, 32, QMM_DTYPE_E8M0, QMM_GLOBAL_SCALE_NONE, 4.25},
    [QMM_FORMAT_FP8_TENSOR] = {"fp8_tensor", QMM_DTYPE_E4M3, 8, 0, (qmm_dtype)0, QMM_GLOBAL_SCALE_TENSOR, 8.0},
    [QMM_FORMAT_FP8_CHANNEL] = {"fp8_channel", QMM_DTYPE_E4M3, 8, 0, (qmm_dtype)0, QMM_GLOBAL_SCALE_CHANNEL, 8.0},
    [QMM_FORMAT_BF16] = {"bf16", QMM_DTYPE_BF16, 16, 0, (qmm_dtype)0, QMM_GLOBAL_SCALE_NONE, 16.0},
};

const qmm_format_traits *qmm__format_traits(qmm_format format)
{
    if ((int)format < QMM_FORMAT_NVFP4 || (int)format > QMM_FORMAT_BF16) return NULL;
    return &qmm__formats[format];
}

qmm_status qmm_format_get_traits(qmm_format format, qmm_format_traits *out)
{
    if (!out) return qmm__fail(QMM_ERR_NULL_POINTER, "qmm_format_get_traits: out is NULL");
    const qmm_format_traits *t = qmm__format_traits(format);
    if (!t) return qmm__fail(QMM_ERR_INVALID_ENUM, "qmm_format_get_traits: unknown format %d", (int)format);
    *out = *t;
    return QMM_OK;
}

qmm_status qmm_format_from_name(const char *name, qmm_format *out)
{
    if (!name || !out) return qmm__fail(QMM_ERR_NULL_POINTER, "qmm_format_from_name: NULL argument");
    if (strcmp(name, "fp8") == 0) {
        *out = QMM_FORMAT_FP8_TENSOR;
        return QMM_OK;
    }
    for (int f = QMM_FORMAT_NVFP4; f <= QMM_FORMAT_BF16; f++) {
        if (strcmp(name, qmm__formats[f].name) == 0) {
            *out = (qmm_format)f;
            return QMM_OK;
        }
    }
    return qmm__fail(QMM_ERR_NOT_FOUND, "qmm_format_from_name: no format named '%s'", name);
}

float qmm__load_float(qmm_dtype t, const void *p, size_t i)
{
    switch (t) {
    case QMM_DTYPE_FP32: return ((const float *)p)[i];
    case QMM_DTYPE_BF16: return qmm__bf16_to_fp32(((const uint16_t *)p)[i]);
    case QMM_DTYPE_FP16: return qmm__fp16_to_fp32(((const uint16_t *)p)[i]);
    default: return NAN;
    }
}
