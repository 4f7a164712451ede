/* Version, status strings and the per-thread last-error message. */
#include <stdarg.h>
#include <stdio.h>

#include "error.h"

#define QMM__STR2(x) #x
#define QMM__STR(x) QMM__STR2(x)

const char *qmm_version(void)
{
    return QMM__STR(QMM_VERSION_MAJOR) "." QMM__STR(QMM_VERSION_MINOR) "." QMM__STR(QMM_VERSION_PATCH);
}

const char *qmm_status_string(qmm_status status)
{
    switch (status) {
    case QMM_OK: return "success";
    case QMM_ERR_NULL_POINTER: return "a required pointer argument is NULL";
    case QMM_ERR_INVALID_SIZE: return "a dimension is zero or out of range";
    case QMM_ERR_SIZE_OVERFLOW: return "a size computed from the dimensions overflows size_t";
    case QMM_ERR_INVALID_STRIDE: return "a row stride is shorter than the row it steps over";
    case QMM_ERR_INVALID_ENUM: return "an enum argument holds an unknown value";
    case QMM_ERR_NON_FINITE: return "an input that must be finite holds NaN or an infinity";
    case QMM_ERR_BUFFER_TOO_SMALL: return "a buffer is smaller than its size query requires";
    case QMM_ERR_UNSUPPORTED: return "this combination is not supported by the backend or build";
    case QMM_ERR_OUT_OF_MEMORY: return "out of memory";
    case QMM_ERR_BACKEND_UNAVAILABLE: return "the backend is not built in or finds no device";
    case QMM_ERR_NOT_PREPARED: return "the weight must be prepared for this backend first";
    case QMM_ERR_WORKSPACE_TOO_SMALL: return "the context's workspace is too small for this call";
    case QMM_ERR_CUDA: return "a CUDA call failed";
    case QMM_ERR_CUBLAS: return "a cuBLAS call failed";
    case QMM_ERR_IO: return "reading or writing a file failed";
    case QMM_ERR_MALFORMED: return "a file's contents do not follow its format";
    case QMM_ERR_NOT_FOUND: return "not found";
    case QMM_ERR_EXISTS: return "the output exists and overwriting was not asked for";
    case QMM_ERR_INVALID_ARGUMENT: return "invalid argument";
    case QMM_ERR_INVALID_WEIGHT: return "the weight descriptor is inconsistent";
    case QMM_ERR_INTERNAL: return "internal error in qmm";
    }
    return "unknown status code";
}

/* One message per thread, so concurrent contexts do not overwrite each other's explanation. */
static _Thread_local char qmm__last_error[512];

const char *qmm_last_error(void) { return qmm__last_error; }

qmm_status qmm__fail(qmm_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(qmm__last_error, sizeof qmm__last_error, fmt, ap);
    va_end(ap);
    return status;
}
