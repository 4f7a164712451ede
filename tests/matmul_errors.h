/* The argument checks of qmm_matmul, run against any host context: each bad argument returns its own
 * status and C (poisoned here) stays untouched. Shared by test_bad_input (reference backend) and
 * test_cpu_bad_input (CPU backend, unprepared and prepared weights). a holds m x k fp32, c m x n fp32;
 * w is a valid NVFP4 or MXFP4 weight of n x k with block scales. */
#ifndef QMM_TESTS_MATMUL_ERRORS_H
#define QMM_TESTS_MATMUL_ERRORS_H

#include "harness.h"

static inline void check_matmul_argument_errors(qmm_context *ctx, const qmm_weight *w, float *a, float *c, size_t m,
                                                size_t n, size_t k)
{
    const qmm_dtype F = QMM_DTYPE_FP32;
    harness_poison(c, m * n * sizeof(float));
    CHECK_STATUS(qmm_matmul(NULL, m, F, a, k, w, F, c, n, NULL), QMM_ERR_NULL_POINTER);
    CHECK_STATUS(qmm_matmul(ctx, m, F, NULL, k, w, F, c, n, NULL), QMM_ERR_NULL_POINTER);
    CHECK_STATUS(qmm_matmul(ctx, m, F, a, k, NULL, F, c, n, NULL), QMM_ERR_NULL_POINTER);
    CHECK_STATUS(qmm_matmul(ctx, m, F, a, k, w, F, NULL, n, NULL), QMM_ERR_NULL_POINTER);
    CHECK_STATUS(qmm_matmul(ctx, 0, F, a, k, w, F, c, n, NULL), QMM_ERR_INVALID_SIZE);
    CHECK_STATUS(qmm_matmul(ctx, m, QMM_DTYPE_E2M1, a, k, w, F, c, n, NULL), QMM_ERR_INVALID_ENUM);
    CHECK_STATUS(qmm_matmul(ctx, m, QMM_DTYPE_E4M3, a, k, w, F, c, n, NULL), QMM_ERR_INVALID_ENUM);
    CHECK_STATUS(qmm_matmul(ctx, m, F, a, k, w, (qmm_dtype)100, c, n, NULL), QMM_ERR_INVALID_ENUM);
    CHECK_STATUS(qmm_matmul(ctx, m, F, a, k, w, QMM_DTYPE_E8M0, c, n, NULL), QMM_ERR_INVALID_ENUM);
    CHECK_STATUS(qmm_matmul(ctx, m, F, a, k - 1, w, F, c, n, NULL), QMM_ERR_INVALID_STRIDE);
    CHECK_STATUS(qmm_matmul(ctx, m, F, a, k, w, F, c, n - 1, NULL), QMM_ERR_INVALID_STRIDE);
    CHECK_STATUS(qmm_matmul(ctx, SIZE_MAX / 4, F, a, k, w, F, c, n, NULL), QMM_ERR_SIZE_OVERFLOW);
    CHECK_STATUS(qmm_matmul(ctx, SIZE_MAX / 8, F, a, k, w, F, c, n, NULL), QMM_ERR_SIZE_OVERFLOW);
    /* strides that no buffer can span: two rows 2^61 elements apart are 2^63 bytes of fp32 */
    if (m >= 2) {
        CHECK_STATUS(qmm_matmul(ctx, 2, F, a, k, w, F, c, (size_t)1 << 61, NULL), QMM_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(qmm_matmul(ctx, 2, F, a, (size_t)1 << 61, w, F, c, n, NULL), QMM_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(qmm_matmul(ctx, 2, F, a, k, w, F, c, (size_t)3 << 60, NULL), QMM_ERR_INVALID_ARGUMENT);
    }
    CHECK_STATUS(qmm_matmul(ctx, m, F, a, k, w, F, a + 8, n, NULL), QMM_ERR_INVALID_ARGUMENT); /* C overlaps A */
    CHECK_STATUS(qmm_matmul(ctx, m, F, a, k, w, F, a + 4, n, NULL), QMM_ERR_INVALID_ARGUMENT);
    qmm_epilogue e;
    qmm_epilogue_init(&e);
    e.alpha = NAN;
    CHECK_STATUS(qmm_matmul(ctx, m, F, a, k, w, F, c, n, &e), QMM_ERR_NON_FINITE);
    e.alpha = 1.0f, e.beta = -INFINITY;
    CHECK_STATUS(qmm_matmul(ctx, m, F, a, k, w, F, c, n, &e), QMM_ERR_NON_FINITE);
    e.beta = NAN;
    CHECK_STATUS(qmm_matmul(ctx, m, F, a, k, w, F, c, n, &e), QMM_ERR_NON_FINITE);
    e.beta = 0.0f, e.activation = (qmm_activation)17;
    CHECK_STATUS(qmm_matmul(ctx, m, F, a, k, w, F, c, n, &e), QMM_ERR_INVALID_ENUM);
    e.activation = (qmm_activation)9;
    CHECK_STATUS(qmm_matmul(ctx, m, F, a, k, w, F, c, n, &e), QMM_ERR_INVALID_ENUM);
    qmm_weight b = *w;
    b.block_scales = NULL;
    CHECK_STATUS(qmm_matmul(ctx, m, F, a, k, &b, F, c, n, NULL), QMM_ERR_INVALID_WEIGHT);
    b = *w, b.data_bytes = 3;
    CHECK_STATUS(qmm_matmul(ctx, m, F, a, k, &b, F, c, n, NULL), QMM_ERR_BUFFER_TOO_SMALL);
    b = *w, b.scale_layout = QMM_SCALE_LAYOUT_NV_BLOCKED, b.block_scale_bytes = SIZE_MAX;
    CHECK_STATUS(qmm_matmul(ctx, m, F, a, k, &b, F, c, n, NULL), QMM_ERR_UNSUPPORTED);
    CHECK(harness_all_bytes(c, m * n * sizeof(float), 0xff), "a failed qmm_matmul wrote C");
}

#endif
