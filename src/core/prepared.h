/* The common head of every backend's prepared weight. A backend allocates its own struct with this as
 * the first member; the core releases it through `release` without knowing which backend made it. */
#ifndef QMM_CORE_PREPARED_H
#define QMM_CORE_PREPARED_H

#include "qmm.h"

struct qmm_prepared {
    qmm_backend backend;                  /* who made it */
    const void *owner;                    /* the backend state (per context) it belongs to */
    qmm_format format;                    /* what it holds, for validation without host buffers */
    size_t n, k;
    size_t experts;                       /* matrices: 1, or the E of a stack */
    void (*release)(qmm_prepared *self);  /* frees everything, `self` included */
};

#endif
