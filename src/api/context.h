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
/* A (a_rows x k, stride lda) and C (m x n, stride ldc) within the address space and apart. */
qmm_status qmm__check_a_c(const char *fn, qmm_dtype a_type, const void *a, size_t a_rows, size_t k, size_t lda,
                          qmm_dtype c_type, const void *c, size_t m, size_t n, size_t ldc);
/* The epilogue's alpha and beta finite, its activation one of the enum's. */
qmm_status qmm__check_epilogue_scalars(const char *fn, float alpha, float beta, qmm_activation activation);

/* The operations of a backend built into this library, or NULL. */
const qmm__backend_ops *qmm__backend_ops_of(qmm_backend backend);

#endif
