/* The reference backend: scalar C, the exact dequantized weight, fp64 accumulation, the epilogue in
 * fp64 and one rounding into C. It is the oracle of every other kernel, so it favours obviousness
 * over speed. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "convert.h"
#include "dequant.h"
#include "epilogue.h"
#include "error.h"
#include "format.h"
#include "weight.h"

static double qmm__load_c(qmm_dtype t, const void *c, size_t i)
{
    switch (t) {
    case QMM_DTYPE_BF16: return qmm__bf16_to_fp32(((const uint16_t *)c)[i]);
    case QMM_DTYPE_FP16: return qmm__fp16_to_fp32(((const uint16_t *)c)[i]);
    default: return ((const float *)c)[i];
    }
}

static void qmm__store_c(qmm_dtype t, void *c, size_t i, double v)
{
    switch (t) {
    case QMM_DTYPE_BF16: ((uint16_t *)c)[i] = qmm__f64_to_bf16(v); break;
    case QMM_DTYPE_FP16: ((uint16_t *)c)[i] = qmm__f64_to_fp16(v); break;
    default: ((float *)c)[i] = (float)v; break;
    }
}

static qmm_status qmm__reference_matmul(void *state, const qmm__matmul_args *x)
{
    (void)state;
    const size_t m = x->m, n = x->n, k = x->k;
    double *a = malloc(m * k * sizeof(double));
    float *wrow = malloc(k * sizeof(float));
    double *acc = malloc(m * sizeof(double));
    if (!a || !wrow || !acc) {
        free(a);
        free(wrow);
        free(acc);
        return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "qmm_matmul (reference): cannot allocate %zu x %zu doubles", m, k);
    }
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < k; j++) a[i * k + j] = qmm__load_float(x->a_type, x->a, i * x->lda + j);

    const qmm_epilogue *e = &x->epi;
    for (size_t col = 0; col < n; col++) {
        qmm__dequant_row_unscaled(x->w, col, wrow);
        const double row_scale = qmm__row_scale(x->w, col);
        const double mul = (double)e->alpha * (e->column_scale ? (double)e->column_scale[col] : 1.0);
        const double bias = e->bias ? (double)e->bias[col] : 0.0;
        /* four rows of A at a time, each its own sum in order j = 0, 1, ...: the same operations per
         * element as one row at a time, four independent chains of additions instead of one */
        size_t i = 0;
        for (; i + 4 <= m; i += 4) {
            const double *a0 = a + i * k, *a1 = a0 + k, *a2 = a1 + k, *a3 = a2 + k;
            double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
            for (size_t j = 0; j < k; j++) {
                const double wj = (double)wrow[j];
                s0 += a0[j] * wj, s1 += a1[j] * wj, s2 += a2[j] * wj, s3 += a3[j] * wj;
            }
            acc[i] = s0 * row_scale, acc[i + 1] = s1 * row_scale, acc[i + 2] = s2 * row_scale, acc[i + 3] = s3 * row_scale;
        }
        for (; i < m; i++) {
            double s = 0.0;
            for (size_t j = 0; j < k; j++) s += a[i * k + j] * (double)wrow[j];
            acc[i] = s * row_scale;
        }
        for (i = 0; i < m; i++) {
            double v = mul * acc[i] + bias;
            if (e->beta != 0.0f) v += (double)e->beta * qmm__load_c(x->c_type, x->c, i * x->ldc + col);
            v = qmm__activation_f64(v, e->activation);
            if (x->row_scale) v *= (double)x->row_scale[i];
            qmm__store_c(x->c_type, x->c, i * x->ldc + col, v);
        }
    }
    free(a);
    free(wrow);
    free(acc);
    return QMM_OK;
}

/* The grouped call as one reference matmul per expert that holds rows: its rows of A gathered into a
 * copy (in A's type, so the values are the same), its part of C, bias and row scales. */
static qmm_status qmm__reference_grouped(void *state, const qmm__grouped_args *x)
{
    const size_t esize = qmm__dtype_size(x->a_type), csize = qmm__dtype_size(x->c_type);
    size_t most = 0;
    for (size_t e = 0; e < x->experts; e++)
        if (x->offsets[e + 1] - x->offsets[e] > most) most = x->offsets[e + 1] - x->offsets[e];
    char *a = malloc(most * x->k * esize);
    if (!a) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "qmm_matmul_grouped (reference): cannot gather %zu rows of A", most);
    qmm_status st = QMM_OK;
    for (size_t e = 0; e < x->experts && st == QMM_OK; e++) {
        const size_t r0 = x->offsets[e], rows = x->offsets[e + 1] - r0;
        if (rows == 0) continue;
        for (size_t i = 0; i < rows; i++) {
            const size_t src = x->row_index ? (size_t)x->row_index[r0 + i] : r0 + i;
            memcpy(a + i * x->k * esize, (const char *)x->a + src * x->lda * esize, x->k * esize);
        }
        qmm_weight w;
        qmm__weight_expert(x->w, e, &w);
        qmm__matmul_args one = {.m = rows, .n = x->n, .k = x->k, .a_type = x->a_type, .a = a, .lda = x->k, .w = &w,
                                .c_type = x->c_type, .c = (char *)x->c + r0 * x->ldc * csize, .ldc = x->ldc,
                                .path = QMM_PATH_REFERENCE, .row_scale = x->epi.row_scale ? x->epi.row_scale + r0 : NULL};
        qmm_epilogue_init(&one.epi);
        one.epi.alpha = x->epi.alpha, one.epi.beta = x->epi.beta, one.epi.activation = x->epi.activation;
        one.epi.bias = x->epi.bias ? x->epi.bias + e * x->n : NULL;
        st = qmm__reference_matmul(state, &one);
    }
    free(a);
    return st;
}

static qmm_status qmm__reference_available(void) { return QMM_OK; }

static qmm_status qmm__reference_create(const qmm_context_options *opts, void **state)
{
    (void)opts;
    *state = NULL;
    return QMM_OK;
}

static void qmm__reference_destroy(void *state) { (void)state; }

static const char *qmm__reference_describe(const void *state)
{
    (void)state;
    return "reference (scalar C, fp64 accumulation)";
}

static bool qmm__reference_has_path(qmm_path p) { return p == QMM_PATH_REFERENCE; }

static qmm_path qmm__reference_plan(const void *state, size_t m, qmm_dtype a_type, const qmm_weight *w)
{
    (void)state, (void)m, (void)a_type, (void)w;
    return QMM_PATH_REFERENCE;
}

const qmm__backend_ops qmm__reference_backend = {
    .id = QMM_BACKEND_REFERENCE,
    .needs_prepare = false,
    .device_pointers = false,
    .fp32_activations = true,
    .available = qmm__reference_available,
    .create = qmm__reference_create,
    .destroy = qmm__reference_destroy,
    .describe = qmm__reference_describe,
    .has_path = qmm__reference_has_path,
    .plan = qmm__reference_plan,
    .matmul = qmm__reference_matmul,
    .matmul_grouped = qmm__reference_grouped,
    .prepare = NULL,
};
