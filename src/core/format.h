/* The one table of formats (ggml-style type traits): every backend reads a format's constants here. */
#ifndef QMM_CORE_FORMAT_H
#define QMM_CORE_FORMAT_H

#include <stdbool.h>

#include "qmm.h"

/* Traits of a known format, or NULL for an unknown value. */
const qmm_format_traits *qmm__format_traits(qmm_format format);

static inline bool qmm__dtype_is_float(qmm_dtype t)
{
    return t == QMM_DTYPE_FP32 || t == QMM_DTYPE_BF16 || t == QMM_DTYPE_FP16;
}

/* Bytes of one element of FP32 / BF16 / FP16 (0 for other types). */
static inline size_t qmm__dtype_size(qmm_dtype t)
{
    return t == QMM_DTYPE_FP32 ? 4 : (t == QMM_DTYPE_BF16 || t == QMM_DTYPE_FP16) ? 2 : 0;
}

/* The recipe that quantizes to `format`: QMM_RECIPE_DEFAULT becomes the format's default (NVFP4
 * modelopt, MXFP4 floor, FP8 amax). Errors: QMM_ERR_INVALID_ENUM (unknown recipe), QMM_ERR_UNSUPPORTED
 * (a recipe of another format). Defined in quantize.c. */
qmm_status qmm__recipe_resolve(const char *fn, qmm_format format, qmm_recipe *recipe);

/* Reads element i of a FP32 / BF16 / FP16 array as fp32 (exact). */
float qmm__load_float(qmm_dtype t, const void *p, size_t i);

/* a * b into *out; false when it overflows size_t. */
static inline bool qmm__mul_size(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > (size_t)-1 / a) return false;
    *out = a * b;
    return true;
}

#endif
