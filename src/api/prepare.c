/* qmm_weight_prepare: hands a validated canonical weight to the backend for its own copy. */
#include "../core/error.h"
#include "../core/prepared.h"
#include "../core/weight.h"
#include "context.h"

qmm_status qmm_weight_prepare(qmm_context *ctx, qmm_weight *w)
{
    static const char fn[] = "qmm_weight_prepare";
    if (!ctx) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: ctx is NULL", fn);
    QMM__TRY(qmm__weight_validate(fn, w));
    if (w->scale_layout != QMM_SCALE_LAYOUT_CANONICAL)
        return qmm__fail(QMM_ERR_UNSUPPORTED, "%s: block scales must be in the canonical layout", fn);
    if (qmm__weight_experts(w) > 1 && !ctx->ops->matmul_grouped)
        return qmm__fail(QMM_ERR_UNSUPPORTED, "%s: backend '%s' does not multiply stacks of experts", fn,
                         qmm_backend_name(ctx->ops->id));
    if (!ctx->ops->prepare) return QMM_OK; /* this backend reads the host buffers as they are */
    qmm_prepared *p = NULL;
    QMM__TRY(ctx->ops->prepare(ctx->state, w, &p));
    p->backend = ctx->ops->id;
    p->owner = ctx->state;
    p->format = w->format;
    p->n = w->n;
    p->k = w->k;
    p->experts = qmm__weight_experts(w);
    qmm_weight_unprepare(w);
    w->prepared = p;
    return QMM_OK;
}

void qmm_weight_unprepare(qmm_weight *w)
{
    if (!w || !w->prepared) return;
    w->prepared->release(w->prepared);
    w->prepared = NULL;
}
