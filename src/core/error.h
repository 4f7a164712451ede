/* Internal error reporting: every failing path sets the thread's message and returns its status. */
#ifndef QMM_CORE_ERROR_H
#define QMM_CORE_ERROR_H

#include "qmm.h"

#if defined(__GNUC__)
#define QMM__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define QMM__PRINTF(f, a)
#endif

/* Records "fmt..." as the calling thread's last error and returns `status`, so a failure reads
 * `return qmm__fail(QMM_ERR_INVALID_SIZE, "qmm_quantize: n is 0");`. */
qmm_status qmm__fail(qmm_status status, const char *fmt, ...) QMM__PRINTF(2, 3);

/* Propagates a failure: `QMM__TRY(expr);` returns expr's status when it is not QMM_OK. */
#define QMM__TRY(expr)                          \
    do {                                        \
        qmm_status qmm__st_ = (expr);           \
        if (qmm__st_ != QMM_OK) return qmm__st_; \
    } while (0)

#endif
