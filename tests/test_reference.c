/* The reference backend against a hand-worked product and against an independent computation in the
 * test (long double sums in a different order, epilogue written out again), on odd shapes, M = 1, K not
 * a multiple of the block, every epilogue, every output type, row strides; outputs poisoned first; and
 * each row of C computed alone bitwise equal to the same row computed among others. */
#include "matmul_check.h" /* mm_load, mm_store, mm_elem */

static qmm_context *ref_ctx;

static void test_worked_example(void)
{
    /* FP8 per tensor, amax 448 so s = 1 and every weight is exact: W = [[1, 2, -0.5], [448, 0, -1]] */
    const float wsrc[6] = {1.0f, 2.0f, -0.5f, 448.0f, 0.0f, -1.0f};
    qmm_weight w;
    CHECK_OK(qmm_weight_alloc(&w, QMM_FORMAT_FP8_TENSOR, 2, 3));
    CHECK_OK(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, wsrc, 3, &w));
    const float a[6] = {1.0f, 1.0f, 1.0f, 2.0f, -1.0f, 0.5f};
    float c[4];
    harness_poison(c, sizeof c);
    CHECK_OK(qmm_matmul(ref_ctx, 2, QMM_DTYPE_FP32, a, 3, &w, QMM_DTYPE_FP32, c, 2, NULL));
    /* [1 1 1].[1 2 -0.5] = 2.5, [1 1 1].[448 0 -1] = 447, [2 -1 0.5].[1 2 -0.5] = -0.25, [2 -1 0.5].[448 0 -1] = 895.5 */
    CHECK(c[0] == 2.5f && c[1] == 447.0f && c[2] == -0.25f && c[3] == 895.5f, "C = %g %g %g %g", c[0], c[1], c[2], c[3]);

    /* alpha 2, bias [1, -1], column scale [1, 0.5], beta 1 with C_in = the previous C, relu:
     * relu(2*1*2.5 + 1 + 2.5) = 8.5, relu(2*0.5*447 - 1 + 447) = 893, relu(2*-0.25 + 1 - 0.25) = 0.25,
     * relu(2*0.5*895.5 - 1 + 895.5) = 1790 */
    const float bias[2] = {1.0f, -1.0f}, cs[2] = {1.0f, 0.5f};
    qmm_epilogue e;
    qmm_epilogue_init(&e);
    e.alpha = 2.0f, e.beta = 1.0f, e.bias = bias, e.column_scale = cs, e.activation = QMM_ACT_RELU;
    CHECK_OK(qmm_matmul(ref_ctx, 2, QMM_DTYPE_FP32, a, 3, &w, QMM_DTYPE_FP32, c, 2, &e));
    CHECK(c[0] == 8.5f && c[1] == 893.0f && c[2] == 0.25f && c[3] == 1790.0f, "epilogue C = %g %g %g %g", c[0], c[1], c[2], c[3]);
    /* relu clips: alpha -1 */
    e.alpha = -1.0f, e.beta = 0.0f, e.bias = NULL, e.column_scale = NULL;
    CHECK_OK(qmm_matmul(ref_ctx, 2, QMM_DTYPE_FP32, a, 3, &w, QMM_DTYPE_FP32, c, 2, &e));
    CHECK(c[0] == 0.0f && c[1] == 0.0f && c[2] == 0.25f && c[3] == 0.0f, "relu C = %g %g %g %g", c[0], c[1], c[2], c[3]);
    /* the activations at x = 1 (alpha 1/2.5 makes acc 1 for c[0]): silu(1) = 0.7310585786,
     * gelu_tanh(1) = 0.8411919906, gelu_erf(1) = 0.8413447461 */
    const qmm_activation acts[3] = {QMM_ACT_SILU, QMM_ACT_GELU, QMM_ACT_GELU_ERF};
    const double want[3] = {0.7310585786300049, 0.8411919906082768, 0.8413447460685429};
    for (int i = 0; i < 3; i++) {
        e.alpha = 0.4f, e.activation = acts[i];
        CHECK_OK(qmm_matmul(ref_ctx, 1, QMM_DTYPE_FP32, a, 3, &w, QMM_DTYPE_FP32, c, 2, &e));
        CHECK(fabs(c[0] - want[i]) < 1e-6, "activation %d at 1: %.9f, want %.9f", (int)acts[i], c[0], want[i]);
    }
    /* beta = 0 never reads C: a NaN there does not propagate */
    harness_poison(c, sizeof c);
    CHECK_OK(qmm_matmul(ref_ctx, 2, QMM_DTYPE_FP32, a, 3, &w, QMM_DTYPE_FP32, c, 2, NULL));
    CHECK(c[0] == 2.5f && c[3] == 895.5f, "beta 0 ignores C_in");
    qmm_weight_free(&w);
}

static long double act_ld(long double x, qmm_activation a)
{
    switch (a) {
    case QMM_ACT_RELU: return x > 0 ? x : 0;
    case QMM_ACT_SILU: return x / (1 + expl(-x));
    /* 0.5 (1 + tanh(y)) = 1 / (1 + exp(-2y)) and 0.5 (1 + erf(z)) = 0.5 erfc(-z): no cancellation for x < 0 */
    case QMM_ACT_GELU: {
        long double y = sqrtl(2 / 3.14159265358979323846264338327950288L) * (x + 0.044715L * x * x * x);
        return x / (1 + expl(-2 * y));
    }
    case QMM_ACT_GELU_ERF: return 0.5L * x * erfcl(-x / sqrtl(2.0L));
    default: return x;
    }
}

/* One random case against the long-double oracle. */
static void check_case(qmm_format f, size_t m, size_t n, size_t k, qmm_dtype at, qmm_dtype ct, qmm_activation act, int full_epilogue)
{
    const size_t lda = k + harness_next() % 3, ldc = n + harness_next() % 3;
    float *wsrc = malloc(n * k * 4), *deq = malloc(n * k * 4), *bias = malloc(n * 4), *cs = malloc(n * 4);
    void *a = malloc(m * lda * mm_elem(at)), *c = malloc(m * ldc * mm_elem(ct)), *cin = malloc(m * ldc * mm_elem(ct));
    for (size_t i = 0; i < n * k; i++) wsrc[i] = (float)(harness_normal() * ((i / k) % 5 == 0 ? 4.0 : 0.5));
    for (size_t i = 0; i < m * lda; i++) mm_store(at, a, i, (float)harness_normal());
    for (size_t i = 0; i < n; i++) bias[i] = (float)harness_normal(), cs[i] = (float)(0.5 + harness_uniform());
    for (size_t i = 0; i < m * ldc; i++) mm_store(ct, cin, i, (float)harness_normal());
    qmm_weight w;
    CHECK_OK(qmm_weight_alloc(&w, f, n, k));
    CHECK_OK(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, wsrc, k, &w));
    CHECK_OK(qmm_dequantize(&w, QMM_DEQUANT_UNSCALED, QMM_DTYPE_FP32, deq, k));

    qmm_epilogue e;
    qmm_epilogue_init(&e);
    e.activation = act;
    if (full_epilogue) e.alpha = 0.75f, e.beta = -0.5f, e.bias = bias, e.column_scale = cs;
    memcpy(c, cin, m * ldc * mm_elem(ct));
    /* poison only the elements the call must write: beta reads C_in, the gaps of the stride stay */
    if (!full_epilogue)
        for (size_t i = 0; i < m; i++) harness_poison((char *)c + i * ldc * mm_elem(ct), n * mm_elem(ct));
    CHECK_OK(qmm_matmul(ref_ctx, m, at, a, lda, &w, ct, c, ldc, &e));

    for (size_t j = 0; j < n; j++) {
        long double gs = f == QMM_FORMAT_FP8_CHANNEL ? w.channel_scales[j] : (f == QMM_FORMAT_MXFP4 || f == QMM_FORMAT_BF16) ? 1.0L : w.tensor_scale;
        for (size_t i = 0; i < m; i++) {
            long double s = 0; /* summed from the end, unlike the reference */
            for (size_t t = k; t-- > 0;) s += (long double)mm_load(at, a, i * lda + t) * deq[j * k + t];
            long double v = s * gs;
            if (full_epilogue) v = 0.75L * cs[j] * v + bias[j] - 0.5L * mm_load(ct, cin, i * ldc + j);
            v = act_ld(v, act);
            float got = mm_load(ct, c, i * ldc + j);
            /* fp32: the reference rounds its fp64 result once, so it is within an ulp of the long double
             * value; bf16 / fp16: within one ulp of the output type */
            int bits = ct == QMM_DTYPE_FP32 ? 23 : ct == QMM_DTYPE_BF16 ? 7 : 10;
            long double av = fabsl(v);
            int ex = av > 0 ? ilogbl(av) : -149;
            if (ct == QMM_DTYPE_FP16 && ex < -14) ex = -14;
            long double ulp = ldexpl(1.0L, ex - bits);
            CHECK(fabsl((long double)got - v) <= ulp + 1e-30L, "format %d %zux%zux%zu %s->%s act %d [%zu,%zu]: %.9g, want %.9Lg",
                  (int)f, m, n, k, qmm_dtype_name(at), qmm_dtype_name(ct), (int)act, i, j, got, v);
        }
    }
    qmm_weight_free(&w);
    free(wsrc), free(deq), free(bias), free(cs), free(a), free(c), free(cin);
}

static void test_random_cases(void)
{
    static const qmm_format formats[5] = {QMM_FORMAT_NVFP4, QMM_FORMAT_MXFP4, QMM_FORMAT_FP8_TENSOR, QMM_FORMAT_FP8_CHANNEL, QMM_FORMAT_BF16};
    static const qmm_dtype types[3] = {QMM_DTYPE_FP32, QMM_DTYPE_BF16, QMM_DTYPE_FP16};
    static const size_t shapes[][3] = {{1, 1, 1}, {1, 7, 33}, {3, 5, 16}, {2, 9, 47}, {7, 13, 100}, {1, 3, 257}, {16, 17, 31}};
    for (int f = 0; f < 5; f++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int at = 0; at < 3; at++)
                for (int ct = 0; ct < 3; ct++) {
                    qmm_activation act = (qmm_activation)(harness_next() % 5);
                    check_case(formats[f], shapes[s][0], shapes[s][1], shapes[s][2], types[at], types[ct], act, (int)(harness_next() & 1));
                }
}

/* Each row of C is the same bits whether the reference computes it among others (four rows of A at a
 * time) or alone (one row: the order of the original loop): every element is summed in the same order. */
static void test_rows_alone(void)
{
    static const qmm_format formats[3] = {QMM_FORMAT_NVFP4, QMM_FORMAT_FP8_CHANNEL, QMM_FORMAT_BF16};
    for (int f = 0; f < 3; f++) {
        const size_t m = 7 + harness_next() % 6, n = 5 + harness_next() % 9, k = 17 + harness_next() % 300;
        float *wsrc = malloc(n * k * 4), *a = malloc(m * k * 4), *c = malloc(m * n * 4), *c1 = malloc(n * 4);
        for (size_t i = 0; i < n * k; i++) wsrc[i] = (float)harness_normal();
        for (size_t i = 0; i < m * k; i++) a[i] = (float)harness_normal();
        qmm_weight w;
        CHECK_OK(qmm_weight_alloc(&w, formats[f], n, k));
        CHECK_OK(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, wsrc, k, &w));
        harness_poison(c, m * n * 4);
        CHECK_OK(qmm_matmul(ref_ctx, m, QMM_DTYPE_FP32, a, k, &w, QMM_DTYPE_FP32, c, n, NULL));
        for (size_t i = 0; i < m; i++) {
            harness_poison(c1, n * 4);
            CHECK_OK(qmm_matmul(ref_ctx, 1, QMM_DTYPE_FP32, a + i * k, k, &w, QMM_DTYPE_FP32, c1, n, NULL));
            CHECK(memcmp(c1, c + i * n, n * 4) == 0, "format %d %zux%zux%zu: row %zu alone differs", (int)formats[f], m, n, k, i);
        }
        qmm_weight_free(&w);
        free(wsrc), free(a), free(c), free(c1);
    }
}

int main(void)
{
    harness_begin("test_reference");
    qmm_context_options o;
    qmm_context_options_init(&o);
    o.backend = QMM_BACKEND_REFERENCE;
    if (qmm_context_create(&o, &ref_ctx) != QMM_OK) {
        fprintf(stderr, "cannot create the reference context: %s\n", qmm_last_error());
        return 1;
    }
    test_worked_example();
    test_random_cases();
    test_rows_alone();
    qmm_context_destroy(ref_ctx);
    return harness_end("test_reference");
}
