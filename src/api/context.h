/* The context as the API layer sees it: a backend's operations plus its per-context state. */
#ifndef QMM_API_CONTEXT_H
#define QMM_API_CONTEXT_H

#include "../core/backend.h"

struct qmm_context {
    const qmm__backend_ops *ops;
    void *state;
    qmm_path forced; /* QMM_PATH_AUTO: the backend's dispatcher chooses */
};

/* The argument checks qmm_matmul and qmm_matmul_grouped share (matmul.c): the weight as the backend
 * will read it, and the activation type. */
qmm_status qmm__check_weight(const char *fn, const qmm_context *ctx, const qmm_weight *w);
qmm_status qmm__check_a_type(const char *fn, const qmm_context *ctx, qmm_dtype a_type);

/* The operations of a backend built into this library, or NULL. */
const qmm__backend_ops *qmm__backend_ops_of(qmm_backend backend);

#endif
