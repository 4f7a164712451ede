/* qmm_matmul: argument checks shared by every backend, then the dispatcher's choice of path. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../core/error.h"
#include "../core/format.h"
#include "../core/prepared.h"
#include "../core/weight.h"
#include "context.h"

void qmm_epilogue_init(qmm_epilogue *epi)
{
    if (!epi) return;
    qmm_epilogue e = {0};
    e.alpha = 1.0f;
    e.activation = QMM_ACT_NONE;
    *epi = e;
}

/* The weight as the backend will read it: the prepared copy where the backend needs one, else the
 * canonical host buffers. Where a backend that reads host buffers has its own prepared copy, the scales'
 * values were checked when the copy was made and the copy holds its own: a call checks the descriptor's
 * buffers and sizes without a pass over E x N channel scales. */
qmm_status qmm__check_weight(const char *fn, const qmm_context *ctx, const qmm_weight *w)
{
    if (!w) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: w is NULL", fn);
    const bool own_copy = w->prepared && w->prepared->backend == ctx->ops->id;
    if (!ctx->ops->needs_prepare && own_copy) {
        const qmm_prepared *p = w->prepared;
        QMM__TRY(qmm__weight_check(fn, w, false));
        if (w->scale_layout != QMM_SCALE_LAYOUT_CANONICAL)
            return qmm__fail(QMM_ERR_UNSUPPORTED, "%s: block scales must be in the canonical layout", fn);
        if (p->format != w->format || p->n != w->n || p->k != w->k || p->experts != qmm__weight_experts(w))
            return qmm__fail(QMM_ERR_INVALID_WEIGHT, "%s: the descriptor (format %d, %zu x %zu x %zu) no longer matches its "
                             "prepared copy (format %d, %zu x %zu x %zu)", fn, (int)w->format, qmm__weight_experts(w), w->n,
                             w->k, (int)p->format, p->experts, p->n, p->k);
        return QMM_OK;
    }
    if (!ctx->ops->needs_prepare || !w->prepared) {
        if (ctx->ops->needs_prepare)
            return qmm__fail(QMM_ERR_NOT_PREPARED, "%s: backend '%s' needs qmm_weight_prepare() on this weight first",
                             fn, qmm_backend_name(ctx->ops->id));
        QMM__TRY(qmm__weight_validate(fn, w));
        if (w->scale_layout != QMM_SCALE_LAYOUT_CANONICAL)
            return qmm__fail(QMM_ERR_UNSUPPORTED, "%s: block scales must be in the canonical layout", fn);
        return QMM_OK;
    }
    const qmm_prepared *p = w->prepared;
    if (p->backend != ctx->ops->id || p->owner != ctx->state)
        return qmm__fail(QMM_ERR_NOT_PREPARED, "%s: the weight was prepared on another context", fn);
    if (p->format != w->format || p->n != w->n || p->k != w->k || p->experts != qmm__weight_experts(w))
        return qmm__fail(QMM_ERR_INVALID_WEIGHT, "%s: the descriptor (format %d, %zu x %zu x %zu) no longer matches its "
                         "prepared copy (format %d, %zu x %zu x %zu)", fn, (int)w->format, qmm__weight_experts(w), w->n,
                         w->k, (int)p->format, p->experts, p->n, p->k);
    return QMM_OK;
}

/* An activation type the backend of ctx takes. */
qmm_status qmm__check_a_type(const char *fn, const qmm_context *ctx, qmm_dtype a_type)
{
    if (!qmm__dtype_is_float(a_type))
        return qmm__fail(QMM_ERR_INVALID_ENUM, "%s: activation type %d is not fp32, bf16 or fp16", fn, (int)a_type);
    if (a_type == QMM_DTYPE_FP32 && !ctx->ops->fp32_activations)
        return qmm__fail(QMM_ERR_UNSUPPORTED, "%s: backend '%s' takes bf16 or fp16 activations, not fp32", fn,
                         qmm_backend_name(ctx->ops->id));
    return QMM_OK;
}

qmm_status qmm_matmul_plan(const qmm_context *ctx, size_t m, qmm_dtype a_type, const qmm_weight *w, qmm_path *out)
{
    static const char fn[] = "qmm_matmul_plan";
    if (!ctx || !out) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: NULL argument", fn);
    if (m == 0) return qmm__fail(QMM_ERR_INVALID_SIZE, "%s: m is 0", fn);
    QMM__TRY(qmm__check_a_type(fn, ctx, a_type));
    QMM__TRY(qmm__check_weight(fn, ctx, w));
    *out = ctx->forced != QMM_PATH_AUTO ? ctx->forced : ctx->ops->plan(ctx->state, m, a_type, w);
    return QMM_OK;
}

qmm_status qmm_matmul_explain(qmm_context *ctx, size_t m, qmm_dtype a_type, const qmm_weight *w, char *buf, size_t cap)
{
    static const char fn[] = "qmm_matmul_explain";
    if (!ctx || !buf) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: NULL argument", fn);
    if (cap == 0) return qmm__fail(QMM_ERR_INVALID_SIZE, "%s: cap is 0", fn);
    if (m == 0) return qmm__fail(QMM_ERR_INVALID_SIZE, "%s: m is 0", fn);
    QMM__TRY(qmm__check_a_type(fn, ctx, a_type));
    QMM__TRY(qmm__check_weight(fn, ctx, w));
    if (ctx->ops->explain) return ctx->ops->explain(ctx->state, m, a_type, w, ctx->forced, buf, cap);
    const qmm_path path = ctx->forced != QMM_PATH_AUTO ? ctx->forced : ctx->ops->plan(ctx->state, m, a_type, w);
    snprintf(buf, cap, "%s", qmm_path_name(path));
    return QMM_OK;
}

qmm_status qmm__check_a_c(const char *fn, qmm_dtype a_type, const void *a, size_t a_rows, size_t k, size_t lda,
                          qmm_dtype c_type, const void *c, size_t m, size_t n, size_t ldc)
{
    size_t a_bytes, c_bytes;
    QMM__TRY(qmm__matrix_span(fn, "A", a, a_rows, k, lda, qmm__dtype_size(a_type), &a_bytes));
    QMM__TRY(qmm__matrix_span(fn, "C", c, m, n, ldc, qmm__dtype_size(c_type), &c_bytes));
    /* integer addresses: neither sum wraps (qmm__matrix_span), and no pointer leaves its buffer */
    const uintptr_t ab = (uintptr_t)a, cb = (uintptr_t)c;
    if (ab < cb + c_bytes && cb < ab + a_bytes) return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: C overlaps A", fn);
    return QMM_OK;
}

qmm_status qmm__check_epilogue_scalars(const char *fn, float alpha, float beta, qmm_activation activation)
{
    if (!isfinite(alpha) || !isfinite(beta))
        return qmm__fail(QMM_ERR_NON_FINITE, "%s: alpha = %g, beta = %g must be finite", fn, alpha, beta);
    if ((int)activation < QMM_ACT_NONE || (int)activation > QMM_ACT_GELU_ERF)
        return qmm__fail(QMM_ERR_INVALID_ENUM, "%s: unknown activation %d", fn, (int)activation);
    return QMM_OK;
}

qmm_status qmm_matmul(qmm_context *ctx, size_t m, qmm_dtype a_type, const void *a, size_t lda, const qmm_weight *w,
                      qmm_dtype c_type, void *c, size_t ldc, const qmm_epilogue *epi)
{
    static const char fn[] = "qmm_matmul";
    if (!ctx) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: ctx is NULL", fn);
    if (!a) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: a is NULL", fn);
    if (!c) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: c is NULL", fn);
    QMM__TRY(qmm__check_weight(fn, ctx, w));
    if (qmm__weight_experts(w) > 1)
        return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: w is a stack of %zu experts: use qmm_matmul_grouped", fn,
                         qmm__weight_experts(w));
    if (m == 0) return qmm__fail(QMM_ERR_INVALID_SIZE, "%s: m is 0", fn);
    QMM__TRY(qmm__check_a_type(fn, ctx, a_type));
    if (!qmm__dtype_is_float(c_type))
        return qmm__fail(QMM_ERR_INVALID_ENUM, "%s: output type %d is not fp32, bf16 or fp16", fn, (int)c_type);
    const size_t n = w->n, k = w->k;
    if (lda < k) return qmm__fail(QMM_ERR_INVALID_STRIDE, "%s: lda = %zu is shorter than k = %zu", fn, lda, k);
    if (ldc < n) return qmm__fail(QMM_ERR_INVALID_STRIDE, "%s: ldc = %zu is shorter than n = %zu", fn, ldc, n);
    QMM__TRY(qmm__check_a_c(fn, a_type, a, m, k, lda, c_type, c, m, n, ldc));

    qmm__matmul_args x = {.m = m, .n = n, .k = k, .a_type = a_type, .a = a, .lda = lda, .w = w,
                          .c_type = c_type, .c = c, .ldc = ldc, .row_scale = NULL};
    qmm_epilogue_init(&x.epi);
    if (epi) x.epi = *epi;
    QMM__TRY(qmm__check_epilogue_scalars(fn, x.epi.alpha, x.epi.beta, x.epi.activation));
    x.path = ctx->forced != QMM_PATH_AUTO ? ctx->forced : ctx->ops->plan(ctx->state, m, a_type, w);
    return ctx->ops->matmul(ctx->state, &x);
}
