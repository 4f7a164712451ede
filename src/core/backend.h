/* The contract between the public API (src/api) and a backend. The API layer checks every argument
 * before it calls a backend, so a backend receives only consistent, validated calls. */
#ifndef QMM_CORE_BACKEND_H
#define QMM_CORE_BACKEND_H

#include <stdbool.h>

#include "qmm_measure.h"

/* One validated qmm_matmul call. */
typedef struct qmm__matmul_args {
    size_t m, n, k;
    qmm_dtype a_type;
    const void *a;
    size_t lda;
    const qmm_weight *w; /* validated; w->prepared belongs to this backend when the backend needs one */
    qmm_dtype c_type;
    void *c;
    size_t ldc;
    qmm_epilogue epi;    /* defaults filled in */
    qmm_path path;       /* resolved: never QMM_PATH_AUTO */
    const float *row_scale; /* m floats multiplying each row of C after the activation (one expert's
                               part of a grouped call); NULL for qmm_matmul */
} qmm__matmul_args;

/* One validated qmm_matmul_grouped call (m > 0). */
typedef struct qmm__grouped_args {
    size_t m, n, k, experts;
    const size_t *offsets;     /* experts + 1, from 0 to m */
    const int32_t *row_index;  /* m or NULL */
    qmm_dtype a_type;
    const void *a;
    size_t lda;
    const qmm_weight *w;       /* a validated stack (or one weight); w->prepared as for qmm_matmul */
    qmm_dtype c_type;
    void *c;
    size_t ldc;
    qmm_grouped_epilogue epi;  /* defaults filled in */
    qmm_path forced;           /* QMM_PATH_AUTO: each expert's path by its rows */
} qmm__grouped_args;

typedef struct qmm__backend_ops {
    qmm_backend id;
    bool needs_prepare;     /* matmul reads only w->prepared, never the host buffers */
    bool device_pointers;   /* A, C, bias and column_scale live in device memory */
    bool fp32_activations;  /* accepts a_type FP32 */
    /* QMM_OK when the backend can run here. */
    qmm_status (*available)(void);
    /* Makes the per-context state (threads, stream, workspace). */
    qmm_status (*create)(const qmm_context_options *opts, void **state);
    void (*destroy)(void *state);
    const char *(*describe)(const void *state);
    bool (*has_path)(qmm_path path);
    /* The dispatcher: the path for m rows of A of type a_type against w (both validated). */
    qmm_path (*plan)(const void *state, size_t m, qmm_dtype a_type, const qmm_weight *w);
    /* Optional (NULL: the path's name): qmm_matmul_explain's line, on the path `forced` (QMM_PATH_AUTO: the
     * backend's own choice, and why). */
    qmm_status (*explain)(void *state, size_t m, qmm_dtype a_type, const qmm_weight *w, qmm_path forced, char *buf, size_t cap);
    qmm_status (*matmul)(void *state, const qmm__matmul_args *args);
    /* Optional (NULL: QMM_ERR_UNSUPPORTED, and stacks of experts cannot be prepared). */
    qmm_status (*matmul_grouped)(void *state, const qmm__grouped_args *args);
    /* Optional: a backend copy of a validated canonical weight. */
    qmm_status (*prepare)(void *state, const qmm_weight *w, qmm_prepared **out);
    /* Optional, for backends with their own memory (NULL: aligned host memory and memcpy). */
    qmm_status (*buffer_alloc)(void *state, size_t bytes, void **out);
    void (*buffer_free)(void *state, void *ptr);
    qmm_status (*buffer_copy)(void *state, void *dst, const void *src, size_t bytes, bool to_device);
    qmm_status (*synchronize)(void *state);
    /* Optional (NULL: QMM_ERR_UNSUPPORTED): the stream of later calls (qmm_context_set_stream). */
    qmm_status (*set_stream)(void *state, void *stream);
    /* Optional (NULL: one thread reading host memory, no peak). */
    qmm_status (*measure_rates)(void *state, size_t bytes, qmm_machine_rates *out);
    /* Optional (NULL: not known): qmm_context_machine_state; false where it cannot be read now. */
    bool (*machine_state)(void *state, qmm_machine_state *out);
    /* Optional (NULL: 0): device workspace bytes for one call of m rows against an n x k weight. */
    size_t (*workspace_need)(size_t m, qmm_format format, size_t n, size_t k);
} qmm__backend_ops;

extern const qmm__backend_ops qmm__reference_backend;

#endif
