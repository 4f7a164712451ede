/* qmm_matmul_grouped: the argument checks of a grouped call over a stack of experts, then the backend's
 * own schedule. */
#include <stdint.h>

#include "../core/error.h"
#include "../core/format.h"
#include "../core/weight.h"
#include "context.h"

void qmm_grouped_epilogue_init(qmm_grouped_epilogue *epi)
{
    if (!epi) return;
    qmm_grouped_epilogue e = {0};
    e.alpha = 1.0f;
    e.activation = QMM_ACT_NONE;
    *epi = e;
}

qmm_status qmm_matmul_grouped(qmm_context *ctx, size_t m, const size_t *group_offsets, const int32_t *row_index,
                              size_t a_rows, qmm_dtype a_type, const void *a, size_t lda, const qmm_weight *w,
                              qmm_dtype c_type, void *c, size_t ldc, const qmm_grouped_epilogue *epi)
{
    static const char fn[] = "qmm_matmul_grouped";
    if (!ctx) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: ctx is NULL", fn);
    if (!group_offsets) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: group_offsets is NULL", fn);
    if (m > 0 && !a) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: a is NULL", fn);
    if (m > 0 && !c) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: c is NULL", fn);
    QMM__TRY(qmm__check_weight(fn, ctx, w));
    if (!ctx->ops->matmul_grouped)
        return qmm__fail(QMM_ERR_UNSUPPORTED, "%s: backend '%s' has no grouped matmul", fn, qmm_backend_name(ctx->ops->id));
    QMM__TRY(qmm__check_a_type(fn, ctx, a_type));
    if (!qmm__dtype_is_float(c_type))
        return qmm__fail(QMM_ERR_INVALID_ENUM, "%s: output type %d is not fp32, bf16 or fp16", fn, (int)c_type);
    const size_t experts = qmm__weight_experts(w), n = w->n, k = w->k;
    /* the groups: from 0 to m, never descending */
    if (group_offsets[0] != 0)
        return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: group_offsets[0] is %zu, not 0", fn, group_offsets[0]);
    for (size_t e = 0; e < experts; e++)
        if (group_offsets[e + 1] < group_offsets[e])
            return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: group_offsets descend at expert %zu (%zu after %zu)", fn, e,
                             group_offsets[e + 1], group_offsets[e]);
    if (group_offsets[experts] != m)
        return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: group_offsets[%zu] is %zu, not m = %zu (one offset per expert "
                         "and one past the last: E + 1 of them)", fn, experts, group_offsets[experts], m);
    if (lda < k) return qmm__fail(QMM_ERR_INVALID_STRIDE, "%s: lda = %zu is shorter than k = %zu", fn, lda, k);
    if (ldc < n) return qmm__fail(QMM_ERR_INVALID_STRIDE, "%s: ldc = %zu is shorter than n = %zu", fn, ldc, n);
    if (!row_index && a_rows < m)
        return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: A has %zu rows, the call reads m = %zu without a row index", fn,
                         a_rows, m);
    /* a row index is read here only where it is host memory (every backend with a grouped call today) */
    for (size_t i = 0; row_index && !ctx->ops->device_pointers && i < m; i++)
        if (row_index[i] < 0 || (size_t)row_index[i] >= a_rows)
            return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: row_index[%zu] = %ld is outside A's %zu rows", fn, i,
                             (long)row_index[i], a_rows);
    qmm__grouped_args x = {.m = m, .n = n, .k = k, .experts = experts, .offsets = group_offsets, .row_index = row_index,
                           .a_type = a_type, .a = a, .lda = lda, .w = w, .c_type = c_type, .c = c, .ldc = ldc,
                           .forced = ctx->forced};
    qmm_grouped_epilogue_init(&x.epi);
    if (epi) x.epi = *epi;
    QMM__TRY(qmm__check_epilogue_scalars(fn, x.epi.alpha, x.epi.beta, x.epi.activation));
    if (m == 0) return QMM_OK;
    QMM__TRY(qmm__check_a_c(fn, a_type, a, row_index ? a_rows : m, k, lda, c_type, c, m, n, ldc));
    return ctx->ops->matmul_grouped(ctx->state, &x);
}
