/* The CPU backend's decoding is exact, on every instruction set (QMM_ISA, or all in turn) and path:
 * - multiplying by the identity (A = I, fp32 C) returns each dequantized weight W[n][k] with its
 *   tensor / channel scale rounded once, equal to qmm_dequantize's fp32 output, for A in bf16, fp16
 *   and fp32 (one nonzero product per sum: nothing else is rounded);
 * - NaN codes (an E4M3 element 0x7F / 0xFF, an NVFP4 block scale 0x7F, an MXFP4 scale 0xFF) make
 *   exactly the reference's outputs NaN, and the other columns stay right. */
#include "matmul_check.h"
#include "cpu_isa.h"

static qmm_context *ref_ctx;
static const qmm_format formats[5] = {QMM_FORMAT_NVFP4, QMM_FORMAT_MXFP4, QMM_FORMAT_FP8_TENSOR, QMM_FORMAT_FP8_CHANNEL,
                                      QMM_FORMAT_BF16};

static void test_identity(qmm_context *ctx, const char *isa)
{
    const size_t n = 37, k = 75;
    static const qmm_dtype types[3] = {QMM_DTYPE_BF16, QMM_DTYPE_FP16, QMM_DTYPE_FP32};
    for (int fi = 0; fi < 5; fi++) {
        qmm_weight w;
        mm_random_weight(&w, formats[fi], n, k);
        float *deq = malloc(n * k * 4), *c = malloc(k * n * 4);
        CHECK_OK(qmm_dequantize(&w, 0, QMM_DTYPE_FP32, deq, k));
        for (int prep = 0; prep < 2; prep++) {
            if (prep) CHECK_OK(qmm_weight_prepare(ctx, &w));
            for (int path = 0; path < 2; path++) {
                CHECK_OK(qmm_context_set_path(ctx, path ? QMM_PATH_MATERIALIZE : QMM_PATH_GEMV));
                for (int ti = 0; ti < 3; ti++) {
                    const size_t es = mm_elem(types[ti]);
                    void *a = calloc(k * k, es);
                    for (size_t i = 0; i < k; i++) mm_store(types[ti], a, i * k + i, 1.0f);
                    harness_poison(c, k * n * 4);
                    CHECK_OK(qmm_matmul(ctx, k, types[ti], a, k, &w, QMM_DTYPE_FP32, c, n, NULL));
                    long bad = 0;
                    for (size_t i = 0; i < k; i++)
                        for (size_t j = 0; j < n; j++)
                            if (!(c[i * n + j] == deq[j * k + i]) && bad++ < 3)
                                CHECK(0, "%s %s %s A %s: C[%zu,%zu] = %a, dequantized W[%zu,%zu] = %a", isa,
                                      prep ? "prepared" : "canonical", path ? "materialize" : "gemv", qmm_dtype_name(types[ti]),
                                      i, j, c[i * n + j], j, i, deq[j * k + i]);
                    CHECK(bad == 0, "%s: identity product of format %d: %ld values differ", isa, (int)formats[fi], bad);
                    free(a);
                }
            }
        }
        CHECK_OK(qmm_context_set_path(ctx, QMM_PATH_AUTO));
        free(deq), free(c);
        qmm_weight_free(&w);
    }
}

/* C from ctx and from the reference for a weight with NaN codes: NaN exactly where the reference has
 * NaN, elsewhere within a generous fp32 bound (the other tests hold the tight one). */
static void check_nan_weight(qmm_context *ctx, qmm_weight *w, const char *label)
{
    const size_t m = 5, n = w->n, k = w->k;
    uint16_t *a = malloc(m * k * 2);
    float *got = malloc(m * n * 4), *want = malloc(m * n * 4);
    for (size_t i = 0; i < m * k; i++) a[i] = qmm_fp32_to_bf16((float)harness_normal());
    qmm_weight host = *w;
    host.prepared = NULL;
    qmm_epilogue e;
    qmm_epilogue_init(&e);
    for (int act = 0; act < 2; act++) {
        e.activation = act ? QMM_ACT_RELU : QMM_ACT_NONE; /* relu(NaN) = 0 */
        CHECK_OK(qmm_matmul(ref_ctx, m, QMM_DTYPE_BF16, a, k, &host, QMM_DTYPE_FP32, want, n, &e));
        for (int path = 0; path < 2; path++) {
            CHECK_OK(qmm_context_set_path(ctx, path ? QMM_PATH_MATERIALIZE : QMM_PATH_GEMV));
            harness_poison(got, m * n * 4);
            CHECK_OK(qmm_matmul(ctx, m, QMM_DTYPE_BF16, a, k, w, QMM_DTYPE_FP32, got, n, &e));
            long nans = 0, bad = 0;
            for (size_t i = 0; i < m * n; i++) {
                nans += isnan(want[i]);
                const int ok = isnan(want[i]) ? isnan(got[i]) : fabs((double)got[i] - want[i]) <= 1e-4 * (1.0 + fabs(want[i]));
                if (!ok && bad++ < 3) CHECK(0, "%s path %d act %d: C[%zu] = %g, reference %g", label, path, act, i, got[i], want[i]);
            }
            CHECK(bad == 0, "%s: %ld outputs differ", label, bad);
            CHECK(act || nans == (long)(2 * m), "%s: the reference has %ld NaN outputs, expected %zu", label, nans, 2 * m);
        }
    }
    CHECK_OK(qmm_context_set_path(ctx, QMM_PATH_AUTO));
    free(a), free(got), free(want);
}

static void test_nan_codes(qmm_context *ctx, const char *isa)
{
    const size_t n = 40, k = 90;
    char label[96];
    for (int fi = 0; fi < 3; fi++) {
        const qmm_format f = formats[fi];
        qmm_weight w;
        mm_random_weight(&w, f, n, k);
        if (f == QMM_FORMAT_FP8_TENSOR) {
            w.data[3 * k + 5] = 0x7f;
            w.data[30 * k + 70] = 0xff;
        } else {
            const size_t spr = (k + (f == QMM_FORMAT_NVFP4 ? 15 : 31)) / (f == QMM_FORMAT_NVFP4 ? 16 : 32);
            w.block_scales[2 * spr + 1] = f == QMM_FORMAT_NVFP4 ? 0x7f : 0xff;
            w.block_scales[33 * spr + spr - 1] = f == QMM_FORMAT_NVFP4 ? 0xff : 0xff; /* the last, partial block */
        }
        for (int prep = 0; prep < 2; prep++) {
            if (prep) CHECK_OK(qmm_weight_prepare(ctx, &w));
            snprintf(label, sizeof label, "%s NaN codes, format %d, %s", isa, (int)f, prep ? "prepared" : "canonical");
            check_nan_weight(ctx, &w, label);
        }
        qmm_weight_free(&w);
    }
}

static int run_isa(const char *isa)
{
    const char *name;
    qmm_context *ctx = cpu_isa_context("test_cpu_exact", isa, &name);
    if (!ctx) return 0;
    test_identity(ctx, name);
    test_nan_codes(ctx, name);
    qmm_context_destroy(ctx);
    return 1;
}

int main(void)
{
    harness_begin("test_cpu_exact");
    (void)mm_check, (void)mm_check_batch_invariance; /* this file needs only the harness's helpers */
    if (qmm_backend_available(QMM_BACKEND_CPU) != QMM_OK) {
        printf("test_cpu_exact: SKIPPED: the CPU backend is not built in\n");
        return 77;
    }
    qmm_context_options o;
    qmm_context_options_init(&o);
    o.backend = QMM_BACKEND_REFERENCE;
    if (qmm_context_create(&o, &ref_ctx) != QMM_OK) return 1;
    const int ran = cpu_isa_each(run_isa);
    qmm_context_destroy(ref_ctx);
    const int rc = harness_end("test_cpu_exact");
    return rc ? rc : ran ? 0 : 77;
}
