/* qmm_weight_shard: one part of a weight cut along N or K for tensor parallelism. Codes and block scales
 * are copied as bytes, so a part's dequantized values are the full weight's; a cut along K falls on
 * block boundaries, where the block scales cut cleanly and, for E2M1, on whole bytes. */
#include <string.h>

#include "error.h"
#include "format.h"
#include "weight.h"

qmm_status qmm_weight_shard_shape(qmm_format format, size_t n, size_t k, qmm_shard_dim dim, size_t parts, size_t rank,
                                  size_t *n_out, size_t *k_out)
{
    static const char fn[] = "qmm_weight_shard_shape";
    if (!n_out || !k_out) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: NULL argument", fn);
    const qmm_format_traits *t = qmm__format_traits(format);
    if (!t) return qmm__fail(QMM_ERR_INVALID_ENUM, "%s: unknown format %d", fn, (int)format);
    if ((int)dim != QMM_SHARD_N && (int)dim != QMM_SHARD_K)
        return qmm__fail(QMM_ERR_INVALID_ENUM, "%s: unknown dimension %d", fn, (int)dim);
    if (n == 0 || k == 0 || parts == 0)
        return qmm__fail(QMM_ERR_INVALID_SIZE, "%s: n = %zu, k = %zu, parts = %zu (each must be > 0)", fn, n, k, parts);
    if (rank >= parts) return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: rank %zu of %zu parts", fn, rank, parts);
    if (dim == QMM_SHARD_N) {
        if (n % parts)
            return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: %zu parts do not divide n = %zu", fn, parts, n);
        *n_out = n / parts, *k_out = k;
        return QMM_OK;
    }
    /* along K: whole blocks (16 or 32 elements), or whole bytes of packed E2M1 pairs */
    const size_t unit = t->block_size > 0 ? (size_t)t->block_size : t->element_bits == 4 ? 2 : 1;
    if (k % parts || (k / parts) % unit)
        return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: k = %zu cannot be cut into %zu parts on %s's %zu-element %s", fn,
                         k, parts, t->name, unit, t->block_size > 0 ? "block boundaries" : "byte boundaries");
    *n_out = n, *k_out = k / parts;
    return QMM_OK;
}

/* Part `rank` of the one weight w (validated) into the one weight d (checked: its shape is the part's). */
static void qmm__shard_one(const qmm_weight *w, qmm_shard_dim dim, size_t rank, qmm_weight *d)
{
    qmm_weight_size ws, ds;
    qmm__weight_size("qmm_weight_shard", w->format, w->scale_layout, w->n, w->k, &ws);
    qmm__weight_size("qmm_weight_shard", d->format, d->scale_layout, d->n, d->k, &ds);
    if (dim == QMM_SHARD_N) { /* whole rows: contiguous in every buffer */
        const size_t r0 = rank * d->n;
        memcpy(d->data, w->data + r0 * ws.row_bytes, ds.data_bytes);
        if (ds.block_scale_bytes) memcpy(d->block_scales, w->block_scales + r0 * ws.scales_per_row, ds.block_scale_bytes);
        if (ds.channel_scale_count) memcpy(d->channel_scales, w->channel_scales + r0, d->n * sizeof(float));
    } else { /* a block of columns of each row: bytes and scale columns, both whole at the cut */
        const size_t byte0 = rank * ds.row_bytes, scale0 = rank * ds.scales_per_row;
        for (size_t r = 0; r < w->n; r++) {
            memcpy(d->data + r * ds.row_bytes, w->data + r * ws.row_bytes + byte0, ds.row_bytes);
            if (ds.block_scale_bytes)
                memcpy(d->block_scales + r * ds.scales_per_row, w->block_scales + r * ws.scales_per_row + scale0,
                       ds.scales_per_row);
        }
        if (ds.channel_scale_count) memcpy(d->channel_scales, w->channel_scales, w->n * sizeof(float));
    }
    d->tensor_scale = w->tensor_scale;
}

qmm_status qmm_weight_shard(const qmm_weight *w, qmm_shard_dim dim, size_t parts, size_t rank, qmm_weight *dst)
{
    static const char fn[] = "qmm_weight_shard";
    if (!w || !dst) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: %s is NULL", fn, w ? "dst" : "w");
    QMM__TRY(qmm__weight_validate(fn, w));
    if (w->scale_layout != QMM_SCALE_LAYOUT_CANONICAL || dst->scale_layout != QMM_SCALE_LAYOUT_CANONICAL)
        return qmm__fail(QMM_ERR_UNSUPPORTED, "%s: block scales must be in the canonical layout", fn);
    size_t n, k;
    QMM__TRY(qmm_weight_shard_shape(w->format, w->n, w->k, dim, parts, rank, &n, &k));
    const size_t experts = qmm__weight_experts(w);
    if (dst->format != w->format || dst->n != n || dst->k != k || qmm__weight_experts(dst) != experts)
        return qmm__fail(QMM_ERR_INVALID_WEIGHT, "%s: dst is format %d, %zu x %zu x %zu; part %zu of %zu needs format %d, "
                         "%zu x %zu x %zu", fn, (int)dst->format, qmm__weight_experts(dst), dst->n, dst->k, rank, parts,
                         (int)w->format, experts, n, k);
    QMM__TRY(qmm__weight_check(fn, dst, false));
    for (size_t e = 0; e < experts; e++) {
        qmm_weight from, to;
        qmm__weight_expert(w, e, &from);
        qmm__weight_expert(dst, e, &to);
        qmm__shard_one(&from, dim, rank, &to);
        if (experts > 1 && dst->tensor_scales) dst->tensor_scales[e] = from.tensor_scale;
        else if (experts == 1) dst->tensor_scale = from.tensor_scale;
    }
    return QMM_OK;
}
