/* Contexts and the choice of backend. The only file that knows which backends are built in. */
#include <stdlib.h>

#include "../core/error.h"
#include "context.h"

#ifdef QMM_HAVE_CPU_BACKEND
extern const qmm__backend_ops qmm__cpu_backend;
#endif
#ifdef QMM_HAVE_CUDA_BACKEND
extern const qmm__backend_ops qmm__cuda_backend;
#endif

const qmm__backend_ops *qmm__backend_ops_of(qmm_backend backend)
{
    switch (backend) {
    case QMM_BACKEND_REFERENCE: return &qmm__reference_backend;
#ifdef QMM_HAVE_CPU_BACKEND
    case QMM_BACKEND_CPU: return &qmm__cpu_backend;
#endif
#ifdef QMM_HAVE_CUDA_BACKEND
    case QMM_BACKEND_CUDA: return &qmm__cuda_backend;
#endif
    default: return NULL;
    }
}

static bool qmm__backend_known(qmm_backend b) { return (int)b >= QMM_BACKEND_AUTO && (int)b <= QMM_BACKEND_CUDA; }

qmm_status qmm_backend_available(qmm_backend backend)
{
    if (!qmm__backend_known(backend))
        return qmm__fail(QMM_ERR_INVALID_ENUM, "qmm_backend_available: unknown backend %d", (int)backend);
    if (backend == QMM_BACKEND_AUTO) return QMM_OK;
    const qmm__backend_ops *ops = qmm__backend_ops_of(backend);
    if (!ops)
        return qmm__fail(QMM_ERR_BACKEND_UNAVAILABLE, "backend '%s' is not built into this library",
                         qmm_backend_name(backend));
    return ops->available();
}

void qmm_context_options_init(qmm_context_options *opts)
{
    if (!opts) return;
    qmm_context_options o = {0};
    o.backend = QMM_BACKEND_AUTO;
    o.path = QMM_PATH_AUTO;
    *opts = o;
}

/* AUTO picks the first available of CUDA, CPU, reference. */
static const qmm__backend_ops *qmm__choose_backend(qmm_backend requested)
{
    if (requested != QMM_BACKEND_AUTO) return qmm__backend_ops_of(requested);
    static const qmm_backend order[] = {QMM_BACKEND_CUDA, QMM_BACKEND_CPU, QMM_BACKEND_REFERENCE};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        const qmm__backend_ops *ops = qmm__backend_ops_of(order[i]);
        if (ops && ops->available() == QMM_OK) return ops;
    }
    return &qmm__reference_backend;
}

static bool qmm__path_known(qmm_path p) { return (int)p >= QMM_PATH_AUTO && (int)p <= QMM_PATH_MATERIALIZE; }

qmm_status qmm_context_create(const qmm_context_options *opts, qmm_context **out)
{
    static const char fn[] = "qmm_context_create";
    if (!out) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: out is NULL", fn);
    qmm_context_options o;
    qmm_context_options_init(&o);
    if (opts) o = *opts;
    if (!qmm__backend_known(o.backend)) return qmm__fail(QMM_ERR_INVALID_ENUM, "%s: unknown backend %d", fn, (int)o.backend);
    if (!qmm__path_known(o.path)) return qmm__fail(QMM_ERR_INVALID_ENUM, "%s: unknown path %d", fn, (int)o.path);
    if (o.num_threads < 0) return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: num_threads = %d is negative", fn, o.num_threads);
    if (o.cuda_device < 0) return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: cuda_device = %d is negative", fn, o.cuda_device);
    if (o.backend != QMM_BACKEND_AUTO) QMM__TRY(qmm_backend_available(o.backend));
    const qmm__backend_ops *ops = qmm__choose_backend(o.backend);
    if (o.path != QMM_PATH_AUTO && !ops->has_path(o.path))
        return qmm__fail(QMM_ERR_UNSUPPORTED, "%s: backend '%s' has no path '%s'", fn, qmm_backend_name(ops->id),
                         qmm_path_name(o.path));
    qmm_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: cannot allocate the context", fn);
    qmm_status st = ops->create(&o, &ctx->state);
    if (st != QMM_OK) {
        free(ctx);
        return st;
    }
    ctx->ops = ops;
    ctx->forced = o.path;
    *out = ctx;
    return QMM_OK;
}

void qmm_context_destroy(qmm_context *ctx)
{
    if (!ctx) return;
    ctx->ops->destroy(ctx->state);
    free(ctx);
}

qmm_status qmm_context_get_backend(const qmm_context *ctx, qmm_backend *out)
{
    if (!ctx || !out) return qmm__fail(QMM_ERR_NULL_POINTER, "qmm_context_get_backend: NULL argument");
    *out = ctx->ops->id;
    return QMM_OK;
}

qmm_status qmm_context_set_path(qmm_context *ctx, qmm_path path)
{
    static const char fn[] = "qmm_context_set_path";
    if (!ctx) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: ctx is NULL", fn);
    if (!qmm__path_known(path)) return qmm__fail(QMM_ERR_INVALID_ENUM, "%s: unknown path %d", fn, (int)path);
    if (path != QMM_PATH_AUTO && !ctx->ops->has_path(path))
        return qmm__fail(QMM_ERR_UNSUPPORTED, "%s: backend '%s' has no path '%s'", fn, qmm_backend_name(ctx->ops->id),
                         qmm_path_name(path));
    ctx->forced = path;
    return QMM_OK;
}

qmm_status qmm_context_set_stream(qmm_context *ctx, void *stream)
{
    static const char fn[] = "qmm_context_set_stream";
    if (!ctx) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: ctx is NULL", fn);
    if (!ctx->ops->set_stream)
        return qmm__fail(QMM_ERR_UNSUPPORTED, "%s: backend '%s' runs on the calling threads, with no stream", fn,
                         qmm_backend_name(ctx->ops->id));
    return ctx->ops->set_stream(ctx->state, stream);
}

const char *qmm_context_describe(const qmm_context *ctx)
{
    return ctx ? ctx->ops->describe(ctx->state) : "(no context)";
}

qmm_status qmm_workspace_query(qmm_backend backend, size_t m, qmm_format format, size_t n, size_t k, size_t *bytes)
{
    static const char fn[] = "qmm_workspace_query";
    if (!bytes) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: bytes is NULL", fn);
    if (!qmm__backend_known(backend)) return qmm__fail(QMM_ERR_INVALID_ENUM, "%s: unknown backend %d", fn, (int)backend);
    qmm_weight_size s;
    QMM__TRY(qmm_weight_size_query(format, QMM_SCALE_LAYOUT_CANONICAL, n, k, &s));
    if (m == 0) return qmm__fail(QMM_ERR_INVALID_SIZE, "%s: m is 0", fn);
    const qmm__backend_ops *ops = backend == QMM_BACKEND_AUTO ? qmm__choose_backend(backend) : qmm__backend_ops_of(backend);
    *bytes = (ops && ops->workspace_need) ? ops->workspace_need(m, format, n, k) : 0;
    return QMM_OK;
}
