/* qmm_scales_convert: block scales from one layout to another. Every valid scale is moved by the index
 * formulas of layout.h; the padding of the destination is zero-filled, that of the source never read. */
#include <stdint.h>
#include <string.h>

#include "error.h"
#include "format.h"
#include "layout.h"
#include "weight.h"

static int qmm__ranges_overlap(const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len)
{
    uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;
    return a0 < b0 + b_len && b0 < a0 + a_len;
}

qmm_status qmm_scales_convert(qmm_format format, size_t n, size_t k, qmm_scale_layout src_layout, const uint8_t *src,
                              size_t src_bytes, qmm_scale_layout dst_layout, uint8_t *dst, size_t dst_bytes)
{
    static const char fn[] = "qmm_scales_convert";
    if (!src || !dst) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: %s is NULL", fn, src ? "dst" : "src");
    qmm_weight_size src_size, dst_size;
    QMM__TRY(qmm__weight_size(fn, format, src_layout, n, k, &src_size));
    QMM__TRY(qmm__weight_size(fn, format, dst_layout, n, k, &dst_size));
    if (src_size.scales_per_row == 0)
        return qmm__fail(QMM_ERR_UNSUPPORTED, "%s: %s has no block scales", fn, qmm__format_traits(format)->name);
    if (src_bytes < src_size.block_scale_bytes)
        return qmm__fail(QMM_ERR_BUFFER_TOO_SMALL, "%s: source holds %zu bytes, %zu x %zu scales in layout %d need %zu",
                         fn, src_bytes, n, src_size.scales_per_row, (int)src_layout, src_size.block_scale_bytes);
    if (dst_bytes < dst_size.block_scale_bytes)
        return qmm__fail(QMM_ERR_BUFFER_TOO_SMALL, "%s: destination holds %zu bytes, layout %d needs %zu", fn, dst_bytes,
                         (int)dst_layout, dst_size.block_scale_bytes);
    if (qmm__ranges_overlap(src, src_size.block_scale_bytes, dst, dst_size.block_scale_bytes))
        return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: source and destination overlap", fn);

    const size_t cols = src_size.scales_per_row;
    if (src_layout == QMM_SCALE_LAYOUT_CANONICAL && dst_layout == QMM_SCALE_LAYOUT_CANONICAL) {
        memcpy(dst, src, dst_size.block_scale_bytes);
        return QMM_OK;
    }
    /* Padded layouts, also to the same one: the source's padding is not trusted, so it is zeroed. */
    memset(dst, 0, dst_size.block_scale_bytes);
    for (size_t r = 0; r < n; r++)
        for (size_t c = 0; c < cols; c++)
            dst[qmm__scale_offset(dst_layout, cols, r, c)] = src[qmm__scale_offset(src_layout, cols, r, c)];
    return QMM_OK;
}
