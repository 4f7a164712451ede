/* One harness for every backend's matmul (ggml test-backend-ops style): a random case is run on the
 * backend under test and on the reference, and compared element by element against an error bound
 * derived from fp32 accumulation, plus a relative Frobenius bound. A, C, bias and column scales go
 * through qmm_buffer_* so the same code drives host and device backends; the weight is prepared on the
 * context under test. C is poisoned (NaN bytes) before the call, with C_in written where beta != 0;
 * the gaps between rows (ldc > n) stay poisoned and must not be written. */
#ifndef QMM_TESTS_MATMUL_CHECK_H
#define QMM_TESTS_MATMUL_CHECK_H

#include "harness.h"

typedef struct mm_case {
    qmm_format format;
    size_t m, n, k;
    qmm_dtype a_type, c_type;
    int full_epilogue;         /* alpha, beta with C_in, bias, column scale */
    qmm_activation activation;
    size_t lda_pad, ldc_pad;   /* extra elements per row of A and C */
} mm_case;

static inline size_t mm_elem(qmm_dtype t) { return t == QMM_DTYPE_FP32 ? 4 : 2; }

static inline float mm_load(qmm_dtype t, const void *p, size_t i)
{
    if (t == QMM_DTYPE_FP32) return ((const float *)p)[i];
    if (t == QMM_DTYPE_BF16) return qmm_bf16_to_fp32(((const uint16_t *)p)[i]);
    return qmm_fp16_to_fp32(((const uint16_t *)p)[i]);
}

static inline void mm_store(qmm_dtype t, void *p, size_t i, float v)
{
    if (t == QMM_DTYPE_FP32) ((float *)p)[i] = v;
    else if (t == QMM_DTYPE_BF16) ((uint16_t *)p)[i] = qmm_fp32_to_bf16(v);
    else ((uint16_t *)p)[i] = qmm_fp32_to_fp16(v);
}

/* One unit in the last place of the output type at |v|. */
static inline double mm_ulp(qmm_dtype t, double v)
{
    int bits = t == QMM_DTYPE_FP32 ? 23 : t == QMM_DTYPE_BF16 ? 7 : 10;
    int emin = t == QMM_DTYPE_FP16 ? -14 : -126;
    int e = v != 0 ? ilogb(v) : emin;
    if (e < emin) e = emin;
    return ldexp(1.0, e - bits);
}

/* A random n x k weight with rows of different magnitudes. */
static inline void mm_random_weight(qmm_weight *w, qmm_format f, size_t n, size_t k)
{
    float *src = malloc(n * k * sizeof(float));
    for (size_t i = 0; i < n * k; i++) src[i] = (float)(harness_normal() * ldexp(1.0, (int)((i / k) % 7) - 3));
    CHECK_OK(qmm_weight_alloc(w, f, n, k));
    CHECK_OK(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src, k, w));
    free(src);
}

/* sum_t |x[t]| |y[t]| for x, y already absolute: each product exact in double, four running sums (the
 * bound's sum needs no particular order, and one chain of dependent additions was most of the host time
 * of the large cases). */
static inline double mm_abs_dot(const float *x, const float *y, size_t k)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    const size_t k4 = k - k % 4;
    for (size_t t = 0; t < k4; t += 4) {
        s0 += (double)x[t] * y[t], s1 += (double)x[t + 1] * y[t + 1];
        s2 += (double)x[t + 2] * y[t + 2], s3 += (double)x[t + 3] * y[t + 3];
    }
    for (size_t t = k4; t < k; t++) s0 += (double)x[t] * y[t];
    return (s0 + s1) + (s2 + s3);
}

/* Uploads `bytes` of host data into a new buffer of ctx. */
static inline void *mm_upload(qmm_context *ctx, const void *host, size_t bytes)
{
    void *p = NULL;
    CHECK_OK(qmm_buffer_alloc(ctx, bytes, &p));
    if (p) CHECK_OK(qmm_buffer_write(ctx, p, host, bytes));
    return p;
}

/* Runs case c on ctx and on the reference context ref; returns the relative Frobenius error (or
 * INFINITY when the call failed). `label` prefixes failure messages. If `w_in` is not NULL it is used
 * as the (already prepared) weight instead of a fresh random one. */
static inline double mm_check_with(qmm_context *ctx, qmm_context *ref, const mm_case *c, const char *label, qmm_weight *w_in)
{
    const size_t m = c->m, n = c->n, k = c->k, lda = k + c->lda_pad, ldc = n + c->ldc_pad;
    qmm_weight wl, *w = w_in;
    if (!w) {
        w = &wl;
        mm_random_weight(w, c->format, n, k);
        CHECK_OK(qmm_weight_prepare(ctx, w));
    }
    qmm_weight host = *w;
    host.prepared = NULL;
    float *deq = malloc(n * k * sizeof(float)), *bias = malloc(n * 4), *cs = malloc(n * 4);
    void *a = malloc(m * lda * mm_elem(c->a_type)), *cin = malloc(m * ldc * mm_elem(c->c_type));
    void *c_ref = malloc(m * ldc * mm_elem(c->c_type)), *c_got = malloc(m * ldc * mm_elem(c->c_type));
    for (size_t i = 0; i < m * lda; i++) mm_store(c->a_type, a, i, (float)harness_normal());
    for (size_t j = 0; j < n; j++) bias[j] = (float)harness_normal(), cs[j] = (float)(0.5 + harness_uniform());
    harness_poison(cin, m * ldc * mm_elem(c->c_type));
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) mm_store(c->c_type, cin, i * ldc + j, (float)harness_normal());
    CHECK_OK(qmm_dequantize(&host, 0, QMM_DTYPE_FP32, deq, k));

    qmm_epilogue e;
    qmm_epilogue_init(&e);
    e.activation = c->activation;
    if (c->full_epilogue) e.alpha = 0.75f, e.beta = -0.5f, e.bias = bias, e.column_scale = cs;
    /* the reference on host memory */
    memcpy(c_ref, cin, m * ldc * mm_elem(c->c_type));
    CHECK_OK(qmm_matmul(ref, m, c->a_type, a, lda, &host, c->c_type, c_ref, ldc, &e));
    /* the backend under test on its own buffers; C_in where beta reads it, poison everywhere else */
    memcpy(c_got, cin, m * ldc * mm_elem(c->c_type));
    if (!c->full_epilogue)
        for (size_t i = 0; i < m; i++) harness_poison((char *)c_got + i * ldc * mm_elem(c->c_type), n * mm_elem(c->c_type));
    void *a_buf = mm_upload(ctx, a, m * lda * mm_elem(c->a_type));
    void *c_buf = mm_upload(ctx, c_got, m * ldc * mm_elem(c->c_type));
    void *bias_buf = mm_upload(ctx, bias, n * 4), *cs_buf = mm_upload(ctx, cs, n * 4);
    qmm_epilogue ed = e;
    if (c->full_epilogue) ed.bias = bias_buf, ed.column_scale = cs_buf;
    qmm_status st = qmm_matmul(ctx, m, c->a_type, a_buf, lda, w, c->c_type, c_buf, ldc, &ed);
    CHECK(st == QMM_OK, "%s: qmm_matmul failed: %s", label, qmm_last_error());
    if (st == QMM_OK) CHECK_OK(qmm_buffer_read(ctx, c_got, c_buf, m * ldc * mm_elem(c->c_type)));

    double num = 0, den = 0;
    long bad = 0;
    /* |A| as floats (exact: bf16 and fp16 values) and |W| in place, for the bound's sums */
    float *a_abs = malloc(m * k * sizeof(float));
    for (size_t i = 0; i < m; i++)
        for (size_t t = 0; t < k; t++) a_abs[i * k + t] = fabsf(mm_load(c->a_type, a, i * lda + t));
    for (size_t i = 0; i < n * k; i++) deq[i] = fabsf(deq[i]);
    for (size_t i = 0; i < m && st == QMM_OK; i++) {
        for (size_t j = 0; j < n; j++) {
            /* sum |a| |w| bounds the fp32 accumulation error of this element */
            const double s = mm_abs_dot(a_abs + i * k, deq + j * k, k);
            double other = 0, mul = 1;
            if (c->full_epilogue) {
                mul = 0.75 * cs[j];
                other = fabs((double)bias[j]) + 0.5 * fabs((double)mm_load(c->c_type, cin, i * ldc + j));
            }
            double want = mm_load(c->c_type, c_ref, i * ldc + j), got = mm_load(c->c_type, c_got, i * ldc + j);
            double tol = 1.25 * (16.0 * sqrt((double)k) * 0x1p-24 * mul * s + 0x1p-21 * other) + 8 * 0x1p-24 * fabs(want) +
                         mm_ulp(c->c_type, fabs(want)) + 1e-30;
            if (!(fabs(got - want) <= tol)) {
                if (bad++ < 5)
                    CHECK(0, "%s: C[%zu,%zu] = %.8g, reference %.8g, bound %.3g (format %d, %zux%zux%zu, %s -> %s, act %d)", label,
                          i, j, got, want, tol, (int)c->format, m, n, k, qmm_dtype_name(c->a_type), qmm_dtype_name(c->c_type),
                          (int)c->activation);
            }
            num += (got - want) * (got - want);
            den += want * want;
        }
        /* the gap after each row stays poisoned */
        if (c->ldc_pad && !c->full_epilogue)
            CHECK(harness_all_bytes((char *)c_got + (i * ldc + n) * mm_elem(c->c_type), c->ldc_pad * mm_elem(c->c_type), 0xff),
                  "%s: the gap after row %zu of C was written", label, i);
    }
    CHECK(bad == 0, "%s: %ld elements outside the bound", label, bad);
    double rel = st == QMM_OK ? (den > 0 ? sqrt(num / den) : sqrt(num)) : INFINITY;
    double rel_bound = c->c_type == QMM_DTYPE_FP32 ? 1e-5 : c->c_type == QMM_DTYPE_BF16 ? 6e-3 : 1e-3;
    CHECK(rel <= rel_bound, "%s: relative error %.3g over %.1g", label, rel, rel_bound);
    if (bad || !(rel <= rel_bound)) /* one line per failing case, past the harness's message limit */
        fprintf(stderr, "FAILED CASE: %s (%zux%zux%zu, %s -> %s, act %d, full %d): %ld bad, rel %.3g\n", label, m, n, k,
                qmm_dtype_name(c->a_type), qmm_dtype_name(c->c_type), (int)c->activation, c->full_epilogue, bad, rel);
    qmm_buffer_free(ctx, a_buf), qmm_buffer_free(ctx, c_buf), qmm_buffer_free(ctx, bias_buf), qmm_buffer_free(ctx, cs_buf);
    free(deq), free(a_abs), free(bias), free(cs), free(a), free(cin), free(c_ref), free(c_got);
    if (!w_in) qmm_weight_free(w);
    return rel;
}

static inline double mm_check(qmm_context *ctx, qmm_context *ref, const mm_case *c, const char *label)
{
    return mm_check_with(ctx, ref, c, label, NULL);
}

/* Batch invariance: row r of C is bitwise the same whatever the other rows of A are, on one path.
 * Runs m1 rows and m2 rows whose row r0 (< both) is the same, with activations of type `at` (bf16 or
 * fp16) in rows of lda >= k elements and fp32 output, on the weight w, prepared on ctx. */
static inline void mm_check_batch_invariance_w(qmm_context *ctx, const qmm_weight *w, qmm_dtype at, size_t lda, size_t m1,
                                               size_t m2, const char *label)
{
    const size_t n = w->n;
    size_t mm = m1 > m2 ? m1 : m2, r0 = (m1 < m2 ? m1 : m2) - 1;
    uint16_t *a1 = malloc(mm * lda * 2), *a2 = malloc(mm * lda * 2);
    float *c1 = malloc(mm * n * 4), *c2 = malloc(mm * n * 4);
    for (size_t i = 0; i < mm * lda; i++) {
        const float x1 = (float)harness_normal(), x2 = (float)harness_normal();
        a1[i] = at == QMM_DTYPE_FP16 ? qmm_fp32_to_fp16(x1) : qmm_fp32_to_bf16(x1);
        a2[i] = at == QMM_DTYPE_FP16 ? qmm_fp32_to_fp16(x2) : qmm_fp32_to_bf16(x2);
    }
    memcpy(a2 + r0 * lda, a1 + r0 * lda, lda * 2);
    void *ab1 = mm_upload(ctx, a1, m1 * lda * 2), *ab2 = mm_upload(ctx, a2, m2 * lda * 2);
    void *cb1 = NULL, *cb2 = NULL;
    CHECK_OK(qmm_buffer_alloc(ctx, m1 * n * 4, &cb1));
    CHECK_OK(qmm_buffer_alloc(ctx, m2 * n * 4, &cb2));
    CHECK_OK(qmm_matmul(ctx, m1, at, ab1, lda, w, QMM_DTYPE_FP32, cb1, n, NULL));
    CHECK_OK(qmm_matmul(ctx, m2, at, ab2, lda, w, QMM_DTYPE_FP32, cb2, n, NULL));
    CHECK_OK(qmm_buffer_read(ctx, c1, cb1, m1 * n * 4));
    CHECK_OK(qmm_buffer_read(ctx, c2, cb2, m2 * n * 4));
    CHECK(memcmp(c1 + r0 * n, c2 + r0 * n, n * 4) == 0, "%s: row %zu differs between M = %zu and M = %zu", label, r0, m1, m2);
    qmm_buffer_free(ctx, ab1), qmm_buffer_free(ctx, ab2), qmm_buffer_free(ctx, cb1), qmm_buffer_free(ctx, cb2);
    free(a1), free(a2), free(c1), free(c2);
}

/* The same on a fresh random weight of format f, n x k. */
static inline void mm_check_batch_invariance_at(qmm_context *ctx, qmm_format f, qmm_dtype at, size_t lda, size_t n, size_t k,
                                                size_t m1, size_t m2, const char *label)
{
    qmm_weight w;
    mm_random_weight(&w, f, n, k);
    CHECK_OK(qmm_weight_prepare(ctx, &w));
    mm_check_batch_invariance_w(ctx, &w, at, lda, m1, m2, label);
    qmm_weight_free(&w);
}

/* The same with bf16 activations in rows of k elements. */
static inline void mm_check_batch_invariance(qmm_context *ctx, qmm_format f, size_t n, size_t k, size_t m1, size_t m2, const char *label)
{
    mm_check_batch_invariance_at(ctx, f, QMM_DTYPE_BF16, k, n, k, m1, m2, label);
}

#endif
