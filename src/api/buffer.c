/* Buffers in the memory a context's backend reads: the backend's own allocator where it has one,
 * 64-byte aligned host memory otherwise. */
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "context.h"

qmm_status qmm_buffer_alloc(qmm_context *ctx, size_t bytes, void **out)
{
    static const char fn[] = "qmm_buffer_alloc";
    if (!ctx || !out) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: NULL argument", fn);
    if (bytes == 0) return qmm__fail(QMM_ERR_INVALID_SIZE, "%s: bytes is 0", fn);
    if (ctx->ops->buffer_alloc) return ctx->ops->buffer_alloc(ctx->state, bytes, out);
    if (bytes > (size_t)-1 - 63) return qmm__fail(QMM_ERR_SIZE_OVERFLOW, "%s: %zu bytes", fn, bytes);
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes", fn, bytes);
    *out = p;
    return QMM_OK;
}

void qmm_buffer_free(qmm_context *ctx, void *ptr)
{
    if (!ctx || !ptr) return;
    if (ctx->ops->buffer_free) ctx->ops->buffer_free(ctx->state, ptr);
    else free(ptr);
}

static qmm_status qmm__buffer_copy(const char *fn, qmm_context *ctx, void *dst, const void *src, size_t bytes,
                                   bool to_device)
{
    if (!ctx || !dst || !src) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: NULL argument", fn);
    if (bytes == 0) return QMM_OK;
    if (ctx->ops->buffer_copy) return ctx->ops->buffer_copy(ctx->state, dst, src, bytes, to_device);
    memmove(dst, src, bytes);
    return QMM_OK;
}

qmm_status qmm_buffer_write(qmm_context *ctx, void *dst, const void *src, size_t bytes)
{
    return qmm__buffer_copy("qmm_buffer_write", ctx, dst, src, bytes, true);
}

qmm_status qmm_buffer_read(qmm_context *ctx, void *dst, const void *src, size_t bytes)
{
    return qmm__buffer_copy("qmm_buffer_read", ctx, dst, src, bytes, false);
}

qmm_status qmm_context_synchronize(qmm_context *ctx)
{
    if (!ctx) return qmm__fail(QMM_ERR_NULL_POINTER, "qmm_context_synchronize: ctx is NULL");
    return ctx->ops->synchronize ? ctx->ops->synchronize(ctx->state) : QMM_OK;
}
