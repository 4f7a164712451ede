/* Bad input to every public function: each returns its own status, sets a message and writes nothing.
 * Outputs are poisoned before each call and compared byte for byte afterwards. */
#include "matmul_errors.h"

#define UNTOUCHED(p, bytes) CHECK(harness_all_bytes((p), (bytes), 0xff), "output was written on failure")

static void test_names_and_status(void)
{
    CHECK(strcmp(qmm_version(), "0.1.0") == 0 || qmm_version()[0] != '\0', "version string");
    for (int a = 0; a <= QMM_ERR_CANCELLED; a++) {
        CHECK(qmm_status_string((qmm_status)a) != NULL, "status %d has a string", a);
        for (int b = 0; b < a; b++)
            CHECK(strcmp(qmm_status_string((qmm_status)a), qmm_status_string((qmm_status)b)) != 0, "statuses %d and %d share a string", a, b);
    }
    CHECK(strcmp(qmm_status_string((qmm_status)999), "unknown status code") == 0, "unknown status");
    CHECK(qmm_dtype_name((qmm_dtype)0) == NULL && qmm_dtype_name((qmm_dtype)99) == NULL && qmm_dtype_name(QMM_DTYPE_BF16) != NULL, "dtype names");
    CHECK(qmm_recipe_name((qmm_recipe)-1) == NULL && qmm_backend_name((qmm_backend)9) == NULL && qmm_path_name((qmm_path)9) == NULL, "names of unknown values");

    uint8_t poison[64];
    harness_poison(poison, sizeof poison);
    CHECK_STATUS(qmm_format_get_traits((qmm_format)0, (qmm_format_traits *)poison), QMM_ERR_INVALID_ENUM);
    CHECK_STATUS(qmm_format_get_traits((qmm_format)6, (qmm_format_traits *)poison), QMM_ERR_INVALID_ENUM);
    CHECK_STATUS(qmm_format_get_traits(QMM_FORMAT_NVFP4, NULL), QMM_ERR_NULL_POINTER);
    CHECK(strlen(qmm_last_error()) > 0, "a failure leaves a message");
    CHECK_STATUS(qmm_format_from_name("nvfp5", (qmm_format *)poison), QMM_ERR_NOT_FOUND);
    CHECK_STATUS(qmm_format_from_name(NULL, (qmm_format *)poison), QMM_ERR_NULL_POINTER);
    CHECK_STATUS(qmm_recipe_from_name("round", (qmm_recipe *)poison), QMM_ERR_NOT_FOUND);
    CHECK_STATUS(qmm_backend_from_name("tpu", (qmm_backend *)poison), QMM_ERR_NOT_FOUND);
    CHECK_STATUS(qmm_path_from_name("fast", (qmm_path *)poison), QMM_ERR_NOT_FOUND);
    CHECK_STATUS(qmm_path_from_name("gemv", NULL), QMM_ERR_NULL_POINTER);
    UNTOUCHED(poison, sizeof poison);
    /* names round-trip */
    qmm_format f;
    qmm_recipe r;
    qmm_backend b;
    qmm_path p;
    CHECK_OK(qmm_format_from_name("mxfp4", &f));
    CHECK(f == QMM_FORMAT_MXFP4, "mxfp4");
    CHECK_OK(qmm_format_from_name("fp8", &f));
    CHECK(f == QMM_FORMAT_FP8_TENSOR, "fp8 alias");
    CHECK_OK(qmm_recipe_from_name("rceil", &r));
    CHECK(r == QMM_RECIPE_MXFP4_RCEIL, "rceil");
    CHECK_OK(qmm_backend_from_name("ref", &b));
    CHECK(b == QMM_BACKEND_REFERENCE, "ref alias");
    CHECK_OK(qmm_path_from_name("materialize", &p));
    CHECK(p == QMM_PATH_MATERIALIZE, "materialize");
}

static void test_size_query(void)
{
    qmm_weight_size s;
    harness_poison(&s, sizeof s);
    CHECK_STATUS(qmm_weight_size_query(QMM_FORMAT_NVFP4, QMM_SCALE_LAYOUT_CANONICAL, 4, 16, NULL), QMM_ERR_NULL_POINTER);
    CHECK_STATUS(qmm_weight_size_query((qmm_format)77, QMM_SCALE_LAYOUT_CANONICAL, 4, 16, &s), QMM_ERR_INVALID_ENUM);
    CHECK_STATUS(qmm_weight_size_query(QMM_FORMAT_NVFP4, (qmm_scale_layout)7, 4, 16, &s), QMM_ERR_INVALID_ENUM);
    CHECK_STATUS(qmm_weight_size_query(QMM_FORMAT_NVFP4, QMM_SCALE_LAYOUT_CANONICAL, 0, 16, &s), QMM_ERR_INVALID_SIZE);
    CHECK_STATUS(qmm_weight_size_query(QMM_FORMAT_NVFP4, QMM_SCALE_LAYOUT_CANONICAL, 4, 0, &s), QMM_ERR_INVALID_SIZE);
    CHECK_STATUS(qmm_weight_size_query(QMM_FORMAT_FP8_TENSOR, QMM_SCALE_LAYOUT_CANONICAL, SIZE_MAX / 2, SIZE_MAX / 2, &s), QMM_ERR_SIZE_OVERFLOW);
    CHECK_STATUS(qmm_weight_size_query(QMM_FORMAT_NVFP4, QMM_SCALE_LAYOUT_CANONICAL, SIZE_MAX, 16, &s), QMM_ERR_SIZE_OVERFLOW);
    CHECK_STATUS(qmm_weight_size_query(QMM_FORMAT_NVFP4, QMM_SCALE_LAYOUT_AMD_MFMA, 4, 64, &s), QMM_ERR_UNSUPPORTED);
    CHECK_STATUS(qmm_weight_size_query(QMM_FORMAT_FP8_TENSOR, QMM_SCALE_LAYOUT_NV_BLOCKED, 4, 64, &s), QMM_ERR_UNSUPPORTED);
    UNTOUCHED(&s, sizeof s);
    /* the sizes themselves */
    CHECK_OK(qmm_weight_size_query(QMM_FORMAT_NVFP4, QMM_SCALE_LAYOUT_CANONICAL, 3, 33, &s));
    CHECK(s.row_bytes == 17 && s.data_bytes == 51 && s.scales_per_row == 3 && s.block_scale_bytes == 9 && s.channel_scale_count == 0, "nvfp4 3x33 sizes");
    CHECK_OK(qmm_weight_size_query(QMM_FORMAT_MXFP4, QMM_SCALE_LAYOUT_NV_BLOCKED, 130, 200, &s));
    CHECK(s.scales_per_row == 7 && s.block_scale_bytes == 256 * 8, "nv blocked pads rows to 128 and columns to 4");
    CHECK_OK(qmm_weight_size_query(QMM_FORMAT_MXFP4, QMM_SCALE_LAYOUT_AMD_MFMA, 33, 64, &s));
    CHECK(s.block_scale_bytes == 64 * 8, "amd layout pads rows to 32 and columns to 8");
    CHECK_OK(qmm_weight_size_query(QMM_FORMAT_FP8_CHANNEL, QMM_SCALE_LAYOUT_CANONICAL, 5, 7, &s));
    CHECK(s.row_bytes == 7 && s.data_bytes == 35 && s.block_scale_bytes == 0 && s.channel_scale_count == 5, "fp8 channel sizes");
    qmm_format_traits t;
    CHECK_OK(qmm_format_get_traits(QMM_FORMAT_NVFP4, &t));
    CHECK(t.block_size == 16 && t.element == QMM_DTYPE_E2M1 && t.block_scale == QMM_DTYPE_E4M3 && t.bits_per_weight == 4.5, "nvfp4 traits");
    CHECK_OK(qmm_format_get_traits(QMM_FORMAT_MXFP4, &t));
    CHECK(t.block_size == 32 && t.block_scale == QMM_DTYPE_E8M0 && t.bits_per_weight == 4.25 && t.global_scale == QMM_GLOBAL_SCALE_NONE, "mxfp4 traits");
}

/* A weight whose buffers are all poisoned, to detect writes. */
static void poisoned_weight(qmm_weight *w, qmm_format f, size_t n, size_t k)
{
    CHECK_OK(qmm_weight_alloc(w, f, n, k));
    harness_poison(w->data, w->data_bytes);
    if (w->block_scales) harness_poison(w->block_scales, w->block_scale_bytes);
    if (w->channel_scales) harness_poison(w->channel_scales, w->channel_scale_count * 4);
    harness_poison(&w->tensor_scale, 4);
}

static void weight_untouched(const qmm_weight *w)
{
    UNTOUCHED(w->data, w->data_bytes);
    if (w->block_scales) UNTOUCHED(w->block_scales, w->block_scale_bytes);
    if (w->channel_scales) UNTOUCHED(w->channel_scales, w->channel_scale_count * 4);
    UNTOUCHED(&w->tensor_scale, 4);
}

static void test_quantize_bad(void)
{
    enum { N = 4, K = 40 };
    float src[N * K];
    for (int i = 0; i < N * K; i++) src[i] = (float)harness_normal();
    static const qmm_format formats[4] = {QMM_FORMAT_NVFP4, QMM_FORMAT_MXFP4, QMM_FORMAT_FP8_TENSOR, QMM_FORMAT_FP8_CHANNEL};
    for (int fi = 0; fi < 4; fi++) {
        qmm_format f = formats[fi];
        qmm_weight w;
        poisoned_weight(&w, f, N, K);
        CHECK_STATUS(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src, K, NULL), QMM_ERR_NULL_POINTER);
        CHECK_STATUS(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, NULL, K, &w), QMM_ERR_NULL_POINTER);
        CHECK_STATUS(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_E4M3, src, K, &w), QMM_ERR_INVALID_ENUM);
        CHECK_STATUS(qmm_quantize(QMM_RECIPE_DEFAULT, (qmm_dtype)0, src, K, &w), QMM_ERR_INVALID_ENUM);
        CHECK_STATUS(qmm_quantize((qmm_recipe)9, QMM_DTYPE_FP32, src, K, &w), QMM_ERR_INVALID_ENUM);
        CHECK_STATUS(qmm_quantize(f == QMM_FORMAT_NVFP4 ? QMM_RECIPE_MXFP4_FLOOR : QMM_RECIPE_NVFP4_MODELOPT, QMM_DTYPE_FP32, src, K, &w), QMM_ERR_UNSUPPORTED);
        CHECK_STATUS(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src, K - 1, &w), QMM_ERR_INVALID_STRIDE);
        CHECK_STATUS(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src, SIZE_MAX / 2, &w), QMM_ERR_SIZE_OVERFLOW);
        /* a span that fits size_t but no buffer: more than PTRDIFF_MAX bytes */
        CHECK_STATUS(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src, (SIZE_MAX / 4 - K) / (N - 1), &w),
                     QMM_ERR_INVALID_ARGUMENT);
        /* non-finite weights anywhere: first, middle, last; NaN and both infinities */
        const size_t where[3] = {0, N * K / 2 + 3, N * K - 1};
        const float bad[3] = {NAN, INFINITY, -INFINITY};
        for (int i = 0; i < 3; i++) {
            float keep = src[where[i]];
            src[where[i]] = bad[i];
            CHECK_STATUS(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src, K, &w), QMM_ERR_NON_FINITE);
            src[where[i]] = keep;
        }
        uint16_t bsrc[N * K];
        for (int i = 0; i < N * K; i++) bsrc[i] = qmm_fp32_to_bf16(src[i]);
        bsrc[7] = 0x7fc0;
        CHECK_STATUS(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_BF16, bsrc, K, &w), QMM_ERR_NON_FINITE);
        bsrc[7] = 0x7c00; /* fp16 infinity */
        CHECK_STATUS(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP16, bsrc, K, &w), QMM_ERR_NON_FINITE);
        /* descriptor problems */
        qmm_weight bad_w = w;
        bad_w.data_bytes--;
        CHECK_STATUS(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src, K, &bad_w), QMM_ERR_BUFFER_TOO_SMALL);
        bad_w = w, bad_w.data = NULL;
        CHECK_STATUS(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src, K, &bad_w), QMM_ERR_NULL_POINTER);
        bad_w = w, bad_w.n = 0;
        CHECK_STATUS(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src, K, &bad_w), QMM_ERR_INVALID_SIZE);
        bad_w = w, bad_w.format = (qmm_format)0;
        CHECK_STATUS(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src, K, &bad_w), QMM_ERR_INVALID_ENUM);
        if (w.block_scales) {
            bad_w = w, bad_w.block_scale_bytes--;
            CHECK_STATUS(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src, K, &bad_w), QMM_ERR_BUFFER_TOO_SMALL);
            bad_w = w, bad_w.block_scales = NULL;
            CHECK_STATUS(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src, K, &bad_w), QMM_ERR_NULL_POINTER);
            bad_w = w, bad_w.scale_layout = QMM_SCALE_LAYOUT_NV_BLOCKED;
            CHECK_STATUS(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src, K, &bad_w), QMM_ERR_UNSUPPORTED);
        }
        if (w.channel_scales) {
            bad_w = w, bad_w.channel_scale_count--;
            CHECK_STATUS(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src, K, &bad_w), QMM_ERR_BUFFER_TOO_SMALL);
        }
        weight_untouched(&w);
        qmm_weight_free(&w);
    }
}

static void test_validate_and_dequantize_bad(void)
{
    enum { N = 3, K = 50 };
    float src[N * K], out[N * K];
    for (int i = 0; i < N * K; i++) src[i] = (float)harness_normal();
    qmm_weight w;
    CHECK_OK(qmm_weight_alloc(&w, QMM_FORMAT_NVFP4, N, K));
    CHECK_OK(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src, K, &w));
    CHECK_OK(qmm_weight_validate(&w));
    harness_poison(out, sizeof out);
    CHECK_STATUS(qmm_weight_validate(NULL), QMM_ERR_NULL_POINTER);
    CHECK_STATUS(qmm_dequantize(NULL, 0, QMM_DTYPE_FP32, out, K), QMM_ERR_NULL_POINTER);
    CHECK_STATUS(qmm_dequantize(&w, 0, QMM_DTYPE_FP32, NULL, K), QMM_ERR_NULL_POINTER);
    CHECK_STATUS(qmm_dequantize(&w, 8, QMM_DTYPE_FP32, out, K), QMM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(qmm_dequantize(&w, 0, (qmm_dtype)42, out, K), QMM_ERR_INVALID_ENUM);
    CHECK_STATUS(qmm_dequantize(&w, 0, QMM_DTYPE_FP16, out, K), QMM_ERR_UNSUPPORTED);
    CHECK_STATUS(qmm_dequantize(&w, 0, QMM_DTYPE_FP32, out, K - 1), QMM_ERR_INVALID_STRIDE);
    CHECK_STATUS(qmm_dequantize(&w, 0, QMM_DTYPE_FP32, out, SIZE_MAX / 2), QMM_ERR_SIZE_OVERFLOW);
    CHECK_STATUS(qmm_dequantize(&w, 0, QMM_DTYPE_FP32, out, (SIZE_MAX / 4 - K) / (N - 1)), QMM_ERR_INVALID_ARGUMENT);
    qmm_weight b = w;
    b.tensor_scale = NAN;
    CHECK_STATUS(qmm_weight_validate(&b), QMM_ERR_INVALID_WEIGHT);
    CHECK_STATUS(qmm_dequantize(&b, 0, QMM_DTYPE_FP32, out, K), QMM_ERR_INVALID_WEIGHT);
    b = w, b.data = NULL;
    CHECK_STATUS(qmm_weight_validate(&b), QMM_ERR_INVALID_WEIGHT);
    b = w, b.block_scales = NULL;
    CHECK_STATUS(qmm_weight_validate(&b), QMM_ERR_INVALID_WEIGHT);
    b = w, b.data_bytes = 1;
    CHECK_STATUS(qmm_weight_validate(&b), QMM_ERR_BUFFER_TOO_SMALL);
    b = w, b.block_scale_bytes = 8;
    CHECK_STATUS(qmm_dequantize(&b, 0, QMM_DTYPE_FP32, out, K), QMM_ERR_BUFFER_TOO_SMALL);
    b = w, b.k = SIZE_MAX;
    CHECK_STATUS(qmm_weight_validate(&b), QMM_ERR_SIZE_OVERFLOW);
    b = w, b.format = (qmm_format)-3;
    CHECK_STATUS(qmm_weight_validate(&b), QMM_ERR_INVALID_ENUM);
    UNTOUCHED(out, sizeof out);
    qmm_weight_free(&w);

    CHECK_OK(qmm_weight_alloc(&w, QMM_FORMAT_FP8_CHANNEL, N, K));
    CHECK_OK(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src, K, &w));
    w.channel_scales[1] = INFINITY;
    CHECK_STATUS(qmm_weight_validate(&w), QMM_ERR_INVALID_WEIGHT);
    float *cs = w.channel_scales;
    w.channel_scales = NULL;
    CHECK_STATUS(qmm_weight_validate(&w), QMM_ERR_INVALID_WEIGHT);
    w.channel_scales = cs;
    qmm_weight_free(&w);

    /* init / alloc / free */
    CHECK_STATUS(qmm_weight_init(NULL, QMM_FORMAT_NVFP4, 1, 1), QMM_ERR_NULL_POINTER);
    CHECK_STATUS(qmm_weight_init(&w, (qmm_format)0, 1, 1), QMM_ERR_INVALID_ENUM);
    CHECK_STATUS(qmm_weight_alloc(&w, QMM_FORMAT_NVFP4, 0, 16), QMM_ERR_INVALID_SIZE);
    CHECK_STATUS(qmm_weight_alloc(NULL, QMM_FORMAT_NVFP4, 1, 16), QMM_ERR_NULL_POINTER);
    qmm_status st = qmm_weight_alloc(&w, QMM_FORMAT_FP8_TENSOR, (size_t)1 << 40, (size_t)1 << 20);
    CHECK(st == QMM_ERR_OUT_OF_MEMORY || st == QMM_ERR_SIZE_OVERFLOW, "a 2^60-byte weight fails cleanly (%d)", (int)st);
    qmm_weight_free(NULL);
}

static void test_context_bad(void)
{
    qmm_context *ctx = (qmm_context *)(uintptr_t)0x1;
    qmm_context_options o;
    qmm_context_options_init(&o);
    CHECK_STATUS(qmm_context_create(&o, NULL), QMM_ERR_NULL_POINTER);
    o.backend = (qmm_backend)9;
    CHECK_STATUS(qmm_context_create(&o, &ctx), QMM_ERR_INVALID_ENUM);
    qmm_context_options_init(&o);
    o.path = (qmm_path)-1;
    CHECK_STATUS(qmm_context_create(&o, &ctx), QMM_ERR_INVALID_ENUM);
    qmm_context_options_init(&o);
    o.num_threads = -2;
    CHECK_STATUS(qmm_context_create(&o, &ctx), QMM_ERR_INVALID_ARGUMENT);
    qmm_context_options_init(&o);
    o.backend = QMM_BACKEND_REFERENCE, o.path = QMM_PATH_GEMV;
    CHECK_STATUS(qmm_context_create(&o, &ctx), QMM_ERR_UNSUPPORTED);
    if (qmm_backend_available(QMM_BACKEND_CUDA) != QMM_OK) {
        qmm_context_options_init(&o);
        o.backend = QMM_BACKEND_CUDA;
        CHECK_STATUS(qmm_context_create(&o, &ctx), QMM_ERR_BACKEND_UNAVAILABLE);
    }
    CHECK_STATUS(qmm_backend_available((qmm_backend)12), QMM_ERR_INVALID_ENUM);
    CHECK(ctx == (qmm_context *)(uintptr_t)0x1, "failed creates leave *out alone");
    qmm_context_destroy(NULL);
    qmm_context_options_init(NULL);
    qmm_epilogue_init(NULL);
    CHECK_STATUS(qmm_context_set_path(NULL, QMM_PATH_AUTO), QMM_ERR_NULL_POINTER);
    CHECK_STATUS(qmm_context_synchronize(NULL), QMM_ERR_NULL_POINTER);
    CHECK(qmm_context_describe(NULL) != NULL, "describe(NULL)");
}

static void test_matmul_bad(void)
{
    enum { M = 3, N = 5, K = 40 };
    qmm_context_options o;
    qmm_context_options_init(&o);
    o.backend = QMM_BACKEND_REFERENCE;
    qmm_context *ctx;
    CHECK_OK(qmm_context_create(&o, &ctx));
    CHECK_STATUS(qmm_context_set_path(ctx, (qmm_path)11), QMM_ERR_INVALID_ENUM);
    CHECK_STATUS(qmm_context_set_path(ctx, QMM_PATH_FUSED), QMM_ERR_UNSUPPORTED);
    CHECK_STATUS(qmm_context_set_stream(ctx, NULL), QMM_ERR_UNSUPPORTED);
    CHECK_STATUS(qmm_context_set_stream(NULL, NULL), QMM_ERR_NULL_POINTER);
    float src[N * K], a[M * K], c[M * N];
    for (int i = 0; i < N * K; i++) src[i] = (float)harness_normal();
    for (int i = 0; i < M * K; i++) a[i] = (float)harness_normal();
    qmm_weight w;
    CHECK_OK(qmm_weight_alloc(&w, QMM_FORMAT_MXFP4, N, K));
    CHECK_OK(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src, K, &w));
    check_matmul_argument_errors(ctx, &w, a, c, M, N, K);
    qmm_path p = (qmm_path)99;
    CHECK_STATUS(qmm_matmul_plan(ctx, 0, QMM_DTYPE_BF16, &w, &p), QMM_ERR_INVALID_SIZE);
    CHECK_STATUS(qmm_matmul_plan(ctx, 1, QMM_DTYPE_BF16, NULL, &p), QMM_ERR_NULL_POINTER);
    CHECK_STATUS(qmm_matmul_plan(ctx, 1, (qmm_dtype)99, &w, &p), QMM_ERR_INVALID_ENUM);
    CHECK(p == (qmm_path)99, "plan writes nothing on failure");
    CHECK_OK(qmm_matmul_plan(ctx, 1, QMM_DTYPE_BF16, &w, &p));
    CHECK(p == QMM_PATH_REFERENCE, "reference plan");
    void *buf = (void *)(uintptr_t)0x1;
    CHECK_STATUS(qmm_buffer_alloc(ctx, 0, &buf), QMM_ERR_INVALID_SIZE);
    CHECK_STATUS(qmm_buffer_alloc(NULL, 16, &buf), QMM_ERR_NULL_POINTER);
    CHECK_STATUS(qmm_buffer_write(ctx, NULL, a, 4), QMM_ERR_NULL_POINTER);
    CHECK(buf == (void *)(uintptr_t)0x1, "buffer_alloc writes nothing on failure");
    qmm_buffer_free(ctx, NULL);
    /* the valid call works after all this */
    CHECK_OK(qmm_matmul(ctx, M, QMM_DTYPE_FP32, a, K, &w, QMM_DTYPE_FP32, c, N, NULL));
    qmm_weight_free(&w);
    qmm_context_destroy(ctx);
}

int main(void)
{
    harness_begin("test_bad_input");
    test_names_and_status();
    test_size_query();
    test_quantize_bad();
    test_validate_and_dequantize_bad();
    test_context_bad();
    test_matmul_bad();
    return harness_end("test_bad_input");
}
