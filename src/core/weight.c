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
    e.experts = 1;
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

qmm_status qmm_weight_init_experts(qmm_weight *w, qmm_format format, size_t experts, size_t n, size_t k)
{
    QMM__TRY(qmm_weight_init(w, format, n, k));
    if (experts == 0) return qmm__fail(QMM_ERR_INVALID_SIZE, "qmm_weight_init_experts: experts is 0");
    w->experts = experts;
    return QMM_OK;
}

qmm_status qmm_weight_alloc_experts(qmm_weight *w, qmm_format format, size_t experts, size_t n, size_t k)
{
    static const char fn[] = "qmm_weight_alloc_experts";
    if (!w) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: w is NULL", fn);
    if (experts == 0) return qmm__fail(QMM_ERR_INVALID_SIZE, "%s: experts is 0", fn);
    qmm_weight_size s = {0};
    QMM__TRY(qmm__weight_size(fn, format, QMM_SCALE_LAYOUT_CANONICAL, n, k, &s));
    size_t data, scales, channels, tensors;
    if (!qmm__mul_size(experts, s.data_bytes, &data) || !qmm__mul_size(experts, s.block_scale_bytes, &scales) ||
        !qmm__mul_size(experts, s.channel_scale_count, &channels) || !qmm__mul_size(channels, sizeof(float), &channels) ||
        !qmm__mul_size(experts, sizeof(float), &tensors))
        return qmm__fail(QMM_ERR_SIZE_OVERFLOW, "%s: %zu experts of %zu x %zu do not fit size_t", fn, experts, n, k);
    const bool has_tensor = qmm__format_traits(format)->global_scale == QMM_GLOBAL_SCALE_TENSOR;
    qmm_weight e;
    QMM__TRY(qmm_weight_init_experts(&e, format, experts, n, k));
    e.data = malloc(data);
    e.block_scales = scales ? malloc(scales) : NULL;
    e.channel_scales = channels ? malloc(channels) : NULL;
    e.tensor_scales = has_tensor ? malloc(tensors) : NULL;
    if (!e.data || (scales && !e.block_scales) || (channels && !e.channel_scales) || (has_tensor && !e.tensor_scales)) {
        free(e.data);
        free(e.block_scales);
        free(e.channel_scales);
        free(e.tensor_scales);
        return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes for %zu experts of %zu x %zu", fn,
                         data + scales, experts, n, k);
    }
    for (size_t i = 0; has_tensor && i < experts; i++) e.tensor_scales[i] = 1.0f;
    e.data_bytes = data;
    e.block_scale_bytes = scales;
    e.channel_scale_count = experts * s.channel_scale_count;
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
    free(w->tensor_scales);
    qmm_weight e = {0};
    *w = e;
}

/* One weight's buffers (the descriptor's experts ignored): present, large enough, and with `values`,
 * its tensor and channel scales finite. */
static qmm_status qmm__weight_check_one(const char *fn, const qmm_weight *w, const qmm_weight_size *s, bool values)
{
    const qmm_format_traits *t = qmm__format_traits(w->format);
    if (!w->data) return qmm__fail(QMM_ERR_INVALID_WEIGHT, "%s: weight data is NULL", fn);
    if (w->data_bytes < s->data_bytes)
        return qmm__fail(QMM_ERR_BUFFER_TOO_SMALL, "%s: weight data holds %zu bytes, %s %zu x %zu needs %zu", fn,
                         w->data_bytes, t->name, w->n, w->k, s->data_bytes);
    if (s->block_scale_bytes) {
        if (!w->block_scales) return qmm__fail(QMM_ERR_INVALID_WEIGHT, "%s: %s needs block scales, got NULL", fn, t->name);
        if (w->block_scale_bytes < s->block_scale_bytes)
            return qmm__fail(QMM_ERR_BUFFER_TOO_SMALL, "%s: block scales hold %zu bytes, %zu needed", fn,
                             w->block_scale_bytes, s->block_scale_bytes);
    }
    if (values && t->global_scale == QMM_GLOBAL_SCALE_TENSOR && !isfinite(w->tensor_scale))
        return qmm__fail(QMM_ERR_INVALID_WEIGHT, "%s: tensor scale is not finite", fn);
    if (s->channel_scale_count) {
        if (!w->channel_scales) return qmm__fail(QMM_ERR_INVALID_WEIGHT, "%s: %s needs channel scales, got NULL", fn, t->name);
        if (w->channel_scale_count < s->channel_scale_count)
            return qmm__fail(QMM_ERR_BUFFER_TOO_SMALL, "%s: %zu channel scales given, %zu needed", fn,
                             w->channel_scale_count, s->channel_scale_count);
        for (size_t i = 0; values && i < s->channel_scale_count; i++)
            if (!isfinite(w->channel_scales[i]))
                return qmm__fail(QMM_ERR_INVALID_WEIGHT, "%s: channel scale %zu is not finite", fn, i);
    }
    return QMM_OK;
}

size_t qmm__weight_experts(const qmm_weight *w) { return w->experts > 1 ? w->experts : 1; }

void qmm__weight_expert(const qmm_weight *w, size_t e, qmm_weight *out)
{
    qmm_weight v = *w;
    v.experts = 1;
    v.expert_stride = v.expert_scale_stride = 0;
    v.tensor_scales = NULL;
    v.prepared = NULL;
    if (w->experts > 1) {
        qmm_weight_size s;
        qmm__weight_size("qmm__weight_expert", w->format, w->scale_layout, w->n, w->k, &s); /* validated */
        const size_t ds = w->expert_stride ? w->expert_stride : s.data_bytes;
        const size_t ss = w->expert_scale_stride ? w->expert_scale_stride : s.block_scale_bytes;
        v.data = w->data + e * ds;
        v.data_bytes = s.data_bytes;
        v.block_scales = w->block_scales ? w->block_scales + e * ss : NULL;
        v.block_scale_bytes = s.block_scale_bytes;
        v.channel_scales = w->channel_scales ? w->channel_scales + e * w->n : NULL;
        v.channel_scale_count = s.channel_scale_count;
        if (w->tensor_scales) v.tensor_scale = w->tensor_scales[e];
    }
    *out = v;
}

/* a * (e - 1) + b <= cap, without overflow: the bytes of e experts at stride a, the last b long */
static bool qmm__stack_fits(size_t e, size_t a, size_t b, size_t cap)
{
    size_t span;
    return qmm__mul_size(e - 1, a, &span) && span <= (size_t)-1 - b && span + b <= cap;
}

qmm_status qmm__weight_check(const char *fn, const qmm_weight *w, bool values)
{
    if (!w) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: weight is NULL", fn);
    qmm_weight_size s = {0};
    QMM__TRY(qmm__weight_size(fn, w->format, w->scale_layout, w->n, w->k, &s));
    if (w->experts <= 1) return qmm__weight_check_one(fn, w, &s, values);
    /* a stack: the strides hold one expert, the capacities all of them, then each expert as one weight */
    const qmm_format_traits *t = qmm__format_traits(w->format);
    const size_t e = w->experts, ds = w->expert_stride ? w->expert_stride : s.data_bytes;
    const size_t ss = w->expert_scale_stride ? w->expert_scale_stride : s.block_scale_bytes;
    if (!w->data) return qmm__fail(QMM_ERR_INVALID_WEIGHT, "%s: weight data is NULL", fn);
    if (ds < s.data_bytes || (s.block_scale_bytes && ss < s.block_scale_bytes))
        return qmm__fail(QMM_ERR_INVALID_WEIGHT, "%s: expert strides %zu / %zu are shorter than one %s %zu x %zu expert "
                         "(%zu / %zu bytes)", fn, ds, ss, t->name, w->n, w->k, s.data_bytes, s.block_scale_bytes);
    if (!qmm__stack_fits(e, ds, s.data_bytes, w->data_bytes))
        return qmm__fail(QMM_ERR_BUFFER_TOO_SMALL, "%s: weight data holds %zu bytes, %zu experts at a stride of %zu need "
                         "more", fn, w->data_bytes, e, ds);
    if (s.block_scale_bytes && w->block_scales && !qmm__stack_fits(e, ss, s.block_scale_bytes, w->block_scale_bytes))
        return qmm__fail(QMM_ERR_BUFFER_TOO_SMALL, "%s: block scales hold %zu bytes, %zu experts at a stride of %zu need "
                         "more", fn, w->block_scale_bytes, e, ss);
    size_t channels;
    if (s.channel_scale_count && (!qmm__mul_size(e, w->n, &channels) || w->channel_scale_count < channels))
        return qmm__fail(QMM_ERR_BUFFER_TOO_SMALL, "%s: %zu channel scales given, %zu experts x %zu needed", fn,
                         w->channel_scale_count, e, w->n);
    if (t->global_scale == QMM_GLOBAL_SCALE_TENSOR && !w->tensor_scales)
        return qmm__fail(QMM_ERR_INVALID_WEIGHT, "%s: a stack of %s experts needs tensor_scales, got NULL", fn, t->name);
    for (size_t i = 0; i < e; i++) {
        qmm_weight one;
        qmm__weight_expert(w, i, &one);
        qmm_status st = qmm__weight_check_one(fn, &one, &s, values);
        if (st != QMM_OK) return qmm__fail(st, "%s (expert %zu)", qmm_last_error(), i);
    }
    return QMM_OK;
}

qmm_status qmm__weight_validate(const char *fn, const qmm_weight *w) { return qmm__weight_check(fn, w, true); }

qmm_status qmm_weight_validate(const qmm_weight *w) { return qmm__weight_validate("qmm_weight_validate", w); }
