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
    case QMM_ERR_UNSAFE_OUTPUT: return "an output would touch an input, or is not a file qmm writes";
    case QMM_ERR_CANCELLED: return "cancelled by the caller";
    }
    return "unknown status code";
}

/* One message per thread, so concurrent contexts do not overwrite each other's explanation. */
static _Thread_local char qmm__last_error[2048];

const char *qmm_last_error(void) { return qmm__last_error; }

/* Names in messages come from files: escaped, a checkpoint cannot send escape sequences to the
 * terminal that prints a message. */
const char *qmm_text_escape(const char *text, char *out, size_t cap)
{
    if (!out || cap == 0) return "";
    if (!text) text = "(null)";
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)text;
    size_t o = 0;
    while (*s) {
        char esc[8];
        size_t len = 0, take = 1;
        const unsigned c = s[0];
        size_t seq = 0; /* bytes of the UTF-8 sequence at s; 0 when it is not valid UTF-8 */
        if (c < 0x80) seq = 1;
        else if (c >= 0xC2 && c <= 0xDF) seq = 2;
        else if (c >= 0xE0 && c <= 0xEF) seq = 3;
        else if (c >= 0xF0 && c <= 0xF4) seq = 4;
        for (size_t i = 1; i < seq; i++)
            if ((s[i] & 0xC0) != 0x80) seq = 0; /* also stops at the NUL */
        if (seq == 3 && ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0))) seq = 0; /* overlong, surrogate */
        if (seq == 4 && ((c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] >= 0x90))) seq = 0; /* overlong, > U+10FFFF */
        if (c < 0x20 || c == 0x7F || seq == 0) {
            esc[0] = '\\', esc[1] = 'x', esc[2] = hex[c >> 4], esc[3] = hex[c & 15];
            len = 4;
        } else if (seq == 2 && c == 0xC2 && s[1] < 0xA0) {
            esc[0] = '\\', esc[1] = 'u', esc[2] = '0', esc[3] = '0', esc[4] = hex[s[1] >> 4], esc[5] = hex[s[1] & 15];
            len = 6, take = 2;
        } else {
            for (size_t i = 0; i < seq; i++) esc[i] = (char)s[i];
            len = take = seq;
        }
        if (o + len >= cap) break;
        for (size_t i = 0; i < len; i++) out[o++] = esc[i];
        s += take;
    }
    out[o] = '\0';
    return out;
}

qmm_status qmm__fail(qmm_status status, const char *fmt, ...)
{
    char raw[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    qmm_text_escape(raw, qmm__last_error, sizeof qmm__last_error);
    return status;
}
