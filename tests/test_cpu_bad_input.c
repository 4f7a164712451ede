/* Bad input to the CPU backend: QMM_ISA values, thread counts and paths it does not offer, the core's
 * matmul argument errors on a CPU context (each returns its status and writes nothing), a prepared
 * weight whose descriptor changed, qmm_context_measure_rates and qmm_context_machine_state. */
#include "matmul_errors.h"
#include "qmm_measure.h"

#define UNTOUCHED(p, bytes) CHECK(harness_all_bytes((p), (bytes), 0xff), "output was written on failure")

static qmm_status create_cpu(int threads, qmm_context **ctx)
{
    qmm_context_options o;
    qmm_context_options_init(&o);
    o.backend = QMM_BACKEND_CPU;
    o.num_threads = threads;
    return qmm_context_create(&o, ctx);
}

static void test_isa_variable(void)
{
    qmm_context *ctx = (qmm_context *)(uintptr_t)0x1;
    setenv("QMM_ISA", "bogus", 1);
    CHECK_STATUS(create_cpu(1, &ctx), QMM_ERR_INVALID_ARGUMENT);
    CHECK(strstr(qmm_last_error(), "QMM_ISA") != NULL, "the message names QMM_ISA: %s", qmm_last_error());
    CHECK(ctx == (qmm_context *)(uintptr_t)0x1, "a failed create leaves *out alone");
    setenv("QMM_ISA", "AVX512", 1); /* case-sensitive */
    CHECK_STATUS(create_cpu(1, &ctx), QMM_ERR_INVALID_ARGUMENT);
    static const char *known[4] = {"ref", "generic", "avx2", "avx512"};
    for (int i = 0; i < 4; i++) {
        setenv("QMM_ISA", known[i], 1);
        qmm_status st = create_cpu(1, &ctx);
        CHECK(st == QMM_OK || (st == QMM_ERR_UNSUPPORTED && i >= 2), "QMM_ISA=%s: status %d (%s)", known[i], (int)st,
              qmm_last_error());
        if (st == QMM_OK) {
            const char *d = qmm_context_describe(ctx);
            const char *want = i < 2 ? "generic" : known[i];
            CHECK(strstr(d, want) != NULL, "QMM_ISA=%s runs %s", known[i], d);
            qmm_context_destroy(ctx);
        } else {
            printf("test_cpu_bad_input: QMM_ISA=%s is not available here: %s\n", known[i], qmm_last_error());
        }
    }
    setenv("QMM_ISA", "", 1); /* empty: the best available */
    CHECK_OK(create_cpu(1, &ctx));
    qmm_context_destroy(ctx);
    unsetenv("QMM_ISA");
}

static void test_context(void)
{
    qmm_context *ctx = (qmm_context *)(uintptr_t)0x1;
    CHECK_STATUS(create_cpu(5000, &ctx), QMM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(create_cpu(-1, &ctx), QMM_ERR_INVALID_ARGUMENT);
    qmm_context_options o;
    qmm_context_options_init(&o);
    o.backend = QMM_BACKEND_CPU;
    o.path = QMM_PATH_FUSED;
    CHECK_STATUS(qmm_context_create(&o, &ctx), QMM_ERR_UNSUPPORTED);
    o.path = QMM_PATH_REFERENCE;
    CHECK_STATUS(qmm_context_create(&o, &ctx), QMM_ERR_UNSUPPORTED);
    CHECK(ctx == (qmm_context *)(uintptr_t)0x1, "failed creates leave *out alone");
    CHECK_OK(create_cpu(0, &ctx));
    CHECK(strncmp(qmm_context_describe(ctx), "cpu ", 4) == 0, "describe: %s", qmm_context_describe(ctx));
    qmm_backend b;
    CHECK_OK(qmm_context_get_backend(ctx, &b));
    CHECK(b == QMM_BACKEND_CPU, "backend %d", (int)b);
    CHECK_STATUS(qmm_context_set_path(ctx, QMM_PATH_FUSED), QMM_ERR_UNSUPPORTED);
    CHECK_STATUS(qmm_context_set_path(ctx, QMM_PATH_REFERENCE), QMM_ERR_UNSUPPORTED);
    CHECK_OK(qmm_context_set_path(ctx, QMM_PATH_GEMV));
    CHECK_OK(qmm_context_set_path(ctx, QMM_PATH_MATERIALIZE));
    CHECK_OK(qmm_context_set_path(ctx, QMM_PATH_AUTO));
    qmm_machine_rates r;
    harness_poison(&r, sizeof r);
    CHECK_STATUS(qmm_context_measure_rates(NULL, 0, &r), QMM_ERR_NULL_POINTER);
    CHECK_STATUS(qmm_context_measure_rates(ctx, 0, NULL), QMM_ERR_NULL_POINTER);
    UNTOUCHED(&r, sizeof r);
    CHECK_OK(qmm_context_measure_rates(ctx, (size_t)8 << 20, &r));
    CHECK(r.copy_gbps > 0.1 && r.fp32_gflops > 0.1 && r.bf16_gflops >= 0.0, "rates %g GB/s, %g / %g GFLOP/s", r.copy_gbps,
          r.fp32_gflops, r.bf16_gflops);
    /* the machine's state: not readable on a host backend, which says so with known = 0 and zeros */
    qmm_machine_state ms;
    harness_poison(&ms, sizeof ms);
    CHECK_STATUS(qmm_context_machine_state(NULL, &ms), QMM_ERR_NULL_POINTER);
    CHECK_STATUS(qmm_context_machine_state(ctx, NULL), QMM_ERR_NULL_POINTER);
    UNTOUCHED(&ms, sizeof ms);
    CHECK_OK(qmm_context_machine_state(ctx, &ms));
    CHECK(ms.known == 0 && ms.sm_mhz == 0.0 && ms.power_w == 0.0 && ms.clock_reasons == 0, "host machine state %d %g %g %llu",
          ms.known, ms.sm_mhz, ms.power_w, ms.clock_reasons);
    qmm_context_destroy(ctx);
}

static void test_matmul(void)
{
    enum { M = 3, N = 21, K = 40 };
    qmm_context *ctx;
    CHECK_OK(create_cpu(2, &ctx));
    float src[N * K], a[M * K], c[M * N];
    for (int i = 0; i < N * K; i++) src[i] = (float)harness_normal();
    for (int i = 0; i < M * K; i++) a[i] = (float)harness_normal();
    qmm_weight w;
    CHECK_OK(qmm_weight_alloc(&w, QMM_FORMAT_NVFP4, N, K));
    CHECK_OK(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src, K, &w));
    for (int prep = 0; prep < 2; prep++) {
        if (prep) CHECK_OK(qmm_weight_prepare(ctx, &w));
        check_matmul_argument_errors(ctx, &w, a, c, M, N, K);
        const qmm_dtype F = QMM_DTYPE_FP32;
        qmm_weight b;
        if (prep) { /* the descriptor no longer matches the prepared copy */
            b = w, b.k = K - 8;
            CHECK_STATUS(qmm_matmul(ctx, M, F, a, K, &b, F, c, N, NULL), QMM_ERR_INVALID_WEIGHT);
            b = w, b.n = N - 1;
            CHECK_STATUS(qmm_matmul(ctx, M, F, a, K, &b, F, c, N, NULL), QMM_ERR_INVALID_WEIGHT);
        }
        UNTOUCHED(c, sizeof c);
        CHECK_OK(qmm_matmul(ctx, M, F, a, K, &w, F, c, N, NULL));
        CHECK(!harness_all_bytes(c, sizeof c, 0xff), "a good call writes C");
    }
    /* a weight prepared on one CPU context runs on another, and on the reference through its host buffers */
    qmm_context *other, *ref;
    CHECK_OK(create_cpu(1, &other));
    qmm_context_options o;
    qmm_context_options_init(&o);
    o.backend = QMM_BACKEND_REFERENCE;
    CHECK_OK(qmm_context_create(&o, &ref));
    float c2[M * N], c3[M * N];
    CHECK_OK(qmm_matmul(other, M, QMM_DTYPE_FP32, a, K, &w, QMM_DTYPE_FP32, c2, N, NULL));
    CHECK_OK(qmm_matmul(ref, M, QMM_DTYPE_FP32, a, K, &w, QMM_DTYPE_FP32, c3, N, NULL));
    for (int i = 0; i < M * N; i++) CHECK(fabsf(c2[i] - c3[i]) <= 1e-4f * (1.0f + fabsf(c3[i])), "C[%d] = %g, reference %g", i, c2[i], c3[i]);
    qmm_weight_unprepare(&w);
    qmm_weight_free(&w);
    qmm_context_destroy(other);
    qmm_context_destroy(ref);
    qmm_context_destroy(ctx);
}

int main(void)
{
    harness_begin("test_cpu_bad_input");
    if (qmm_backend_available(QMM_BACKEND_CPU) != QMM_OK) {
        printf("test_cpu_bad_input: SKIPPED: the CPU backend is not built in\n");
        return 77;
    }
    test_isa_variable();
    test_context();
    test_matmul();
    return harness_end("test_cpu_bad_input");
}
