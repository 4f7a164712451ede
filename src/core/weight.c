/* Weight descriptors: size queries, set-up, the convenience allocator and validation. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "error.h"
#include "format.h"
#include "prepared.h"
#include "weight.h"

qmm_status qmm__matrix_span(const char *fn, const char *what, const void *p, size_t rows, size_t cols, size_t ld,
                            size_t elem, size_t *bytes)
{
    size_t s = 0, b;
    if (rows > 0 && (!qmm__mul_size(rows - 1, ld, &s) || s > (size_t)-1 - cols || !qmm__mul_size(s + cols, elem, &b)))
        return qmm__fail(QMM_ERR_SIZE_OVERFLOW, "%s: %zu rows of %s at a stride of %zu overflow size_t", fn, rows, what, ld);
    if (rows == 0) b = 0;
    /* pointer arithmetic is defined within one object, and no object is larger than PTRDIFF_MAX */
    if (b > (size_t)PTRDIFF_MAX || (uintptr_t)p > UINTPTR_MAX - b)
        return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: %zu rows of %s at a stride of %zu span %zu bytes, more than any "
                         "buffer at that address can hold", fn, rows, what, ld, b);
    *bytes = b;
    return QMM_OK;
}

static size_t qmm__round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

qmm_status qmm__weight_size(const char *fn, qmm_format format, qmm_scale_layout layout, size_t n, size_t k,
                            qmm_weight_size *out)
{
    if (!out) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: out is NULL", fn);
    const qmm_format_traits *t = qmm__format_traits(format);
    if (!t) return qmm__fail(QMM_ERR_INVALID_ENUM, "%s: unknown format %d", fn, (int)format);
    if ((int)layout < QMM_SCALE_LAYOUT_CANONICAL || (int)layout > QMM_SCALE_LAYOUT_AMD_MFMA)
        return qmm__fail(QMM_ERR_INVALID_ENUM, "%s: unknown scale layout %d", fn, (int)layout);
    if (n == 0 || k == 0) return qmm__fail(QMM_ERR_INVALID_SIZE, "%s: n = %zu, k = %zu (both must be > 0)", fn, n, k);
    /* Guard every later product: rows padded to 128 and K rounded up must still fit. */
    if (n > (size_t)-1 - 128 || k > (size_t)-1 - 64)
        return qmm__fail(QMM_ERR_SIZE_OVERFLOW, "%s: n = %zu or k = %zu is too large", fn, n, k);

    qmm_weight_size s = {0};
    s.row_bytes = t->element_bits == 4 ? k / 2 + (k & 1) : k * (size_t)(t->element_bits / 8);
    if (!qmm__mul_size(n, s.row_bytes, &s.data_bytes))
        return qmm__fail(QMM_ERR_SIZE_OVERFLOW, "%s: %zu x %zu weight does not fit size_t", fn, n, k);
    if (t->block_size > 0) {
        size_t b = (size_t)t->block_size;
        s.scales_per_row = k / b + (k % b != 0);
        size_t rows = n, cols = s.scales_per_row;
        if (layout == QMM_SCALE_LAYOUT_NV_BLOCKED) {
            rows = qmm__round_up(n, 128);
            cols = qmm__round_up(cols, 4);
        } else if (layout == QMM_SCALE_LAYOUT_AMD_MFMA) {
            if (t->block_size != 32)
                return qmm__fail(QMM_ERR_UNSUPPORTED, "%s: the AMD MFMA layout is for 32-element blocks (%s has %d)",
                                 fn, t->name, t->block_size);
            rows = qmm__round_up(n, 32);
            cols = qmm__round_up(cols, 8);
        }
        if (!qmm__mul_size(rows, cols, &s.block_scale_bytes))
            return qmm__fail(QMM_ERR_SIZE_OVERFLOW, "%s: block scales of %zu x %zu do not fit size_t", fn, n, k);
    } else if (layout != QMM_SCALE_LAYOUT_CANONICAL) {
        return qmm__fail(QMM_ERR_UNSUPPORTED, "%s: %s has no block scales to lay out", fn, t->name);
    }
    if (t->global_scale == QMM_GLOBAL_SCALE_CHANNEL) s.channel_scale_count = n;
    *out = s;
    return QMM_OK;
}

qmm_status qmm_weight_size_query(qmm_format format, qmm_scale_layout layout, size_t n, size_t k, qmm_weight_size *out)
{
    return qmm__weight_size("qmm_weight_size_query", format, layout, n, k, out);
}

qmm_status qmm_weight_init(qmm_weight *w, qmm_format format, size_t n, size_t k)
{
    if (!w) return qmm__fail(QMM_ERR_NULL_POINTER, "qmm_weight_init: w is NULL");
    if (!qmm__format_traits(format)) return qmm__fail(QMM_ERR_INVALID_ENUM, "qmm_weight_init: unknown format %d", (int)format);
    qmm_weight e = {0};
    e.format = format;
    e.scale_layout = QMM_SCALE_LAYOUT_CANONICAL;
    e.n = n;
    e.k = k;
    e.tensor_scale = 1.0f;
    *w = e;
    return QMM_OK;
}

qmm_status qmm_weight_alloc(qmm_weight *w, qmm_format format, size_t n, size_t k)
{
    if (!w) return qmm__fail(QMM_ERR_NULL_POINTER, "qmm_weight_alloc: w is NULL");
    qmm_weight_size s = {0};
    QMM__TRY(qmm__weight_size("qmm_weight_alloc", format, QMM_SCALE_LAYOUT_CANONICAL, n, k, &s));
    qmm_weight e;
    QMM__TRY(qmm_weight_init(&e, format, n, k));
    e.data = malloc(s.data_bytes);
    e.block_scales = s.block_scale_bytes ? malloc(s.block_scale_bytes) : NULL;
    e.channel_scales = s.channel_scale_count ? malloc(s.channel_scale_count * sizeof(float)) : NULL;
    if (!e.data || (s.block_scale_bytes && !e.block_scales) || (s.channel_scale_count && !e.channel_scales)) {
        free(e.data);
        free(e.block_scales);
        free(e.channel_scales);
        return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "qmm_weight_alloc: cannot allocate %zu bytes for a %zu x %zu weight",
                         s.data_bytes + s.block_scale_bytes, n, k);
    }
    e.data_bytes = s.data_bytes;
    e.block_scale_bytes = s.block_scale_bytes;
    e.channel_scale_count = s.channel_scale_count;
    *w = e;
    return QMM_OK;
}

void qmm_weight_free(qmm_weight *w)
{
    if (!w) return;
    if (w->prepared) w->prepared->release(w->prepared);
    free(w->data);
    free(w->block_scales);
    free(w->channel_scales);
    qmm_weight e = {0};
    *w = e;
}

qmm_status qmm__weight_validate(const char *fn, const qmm_weight *w)
{
    if (!w) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: weight is NULL", fn);
    qmm_weight_size s = {0};
    QMM__TRY(qmm__weight_size(fn, w->format, w->scale_layout, w->n, w->k, &s));
    const qmm_format_traits *t = qmm__format_traits(w->format);
    if (!w->data) return qmm__fail(QMM_ERR_INVALID_WEIGHT, "%s: weight data is NULL", fn);
    if (w->data_bytes < s.data_bytes)
        return qmm__fail(QMM_ERR_BUFFER_TOO_SMALL, "%s: weight data holds %zu bytes, %s %zu x %zu needs %zu", fn,
                         w->data_bytes, t->name, w->n, w->k, s.data_bytes);
    if (s.block_scale_bytes) {
        if (!w->block_scales) return qmm__fail(QMM_ERR_INVALID_WEIGHT, "%s: %s needs block scales, got NULL", fn, t->name);
        if (w->block_scale_bytes < s.block_scale_bytes)
            return qmm__fail(QMM_ERR_BUFFER_TOO_SMALL, "%s: block scales hold %zu bytes, %zu needed", fn,
                             w->block_scale_bytes, s.block_scale_bytes);
    }
    if (t->global_scale == QMM_GLOBAL_SCALE_TENSOR && !isfinite(w->tensor_scale))
        return qmm__fail(QMM_ERR_INVALID_WEIGHT, "%s: tensor scale is not finite", fn);
    if (s.channel_scale_count) {
        if (!w->channel_scales) return qmm__fail(QMM_ERR_INVALID_WEIGHT, "%s: %s needs channel scales, got NULL", fn, t->name);
        if (w->channel_scale_count < s.channel_scale_count)
            return qmm__fail(QMM_ERR_BUFFER_TOO_SMALL, "%s: %zu channel scales given, %zu needed", fn,
                             w->channel_scale_count, s.channel_scale_count);
        for (size_t i = 0; i < s.channel_scale_count; i++)
            if (!isfinite(w->channel_scales[i]))
                return qmm__fail(QMM_ERR_INVALID_WEIGHT, "%s: channel scale %zu is not finite", fn, i);
    }
    return QMM_OK;
}

qmm_status qmm_weight_validate(const qmm_weight *w) { return qmm__weight_validate("qmm_weight_validate", w); }
