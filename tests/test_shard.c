/* Tensor-parallel parts of a weight (qmm_weight_shard): on fresh random weights of every format, odd N
 * and K where the cut allows them, stacks of experts too:
 * - the parts reassemble to the original bit for bit, bytes and dequantized values, along N and K;
 * - along N a part's product is the full product's columns, bit for bit on the reference backend and
 *   within the fp32 bound on the CPU; along K the parts' partial sums add up to the full product within
 *   the fp32 summation bound;
 * - a part loaded straight from a checkpoint is the part of the loaded weight;
 * - cuts that do not divide, or fall inside a block, and wrong destinations are refused. */
#include "io_harness.h"
#include "matmul_check.h"

static const qmm_format formats[] = {QMM_FORMAT_NVFP4, QMM_FORMAT_MXFP4, QMM_FORMAT_FP8_TENSOR, QMM_FORMAT_FP8_CHANNEL,
                                     QMM_FORMAT_BF16};

static size_t block_of(qmm_format f)
{
    qmm_format_traits t;
    qmm_format_get_traits(f, &t);
    return t.block_size > 0 ? (size_t)t.block_size : t.element_bits == 4 ? 2 : 1;
}

/* A random stack (experts 1: one weight) of format f. */
static void random_weight(qmm_weight *w, qmm_format f, size_t experts, size_t n, size_t k)
{
    float *src = malloc(experts * n * k * sizeof(float));
    for (size_t i = 0; i < experts * n * k; i++) src[i] = (float)(harness_normal() * ldexp(1.0, (int)((i / k) % 5) - 2));
    if (experts > 1) CHECK_OK(qmm_weight_alloc_experts(w, f, experts, n, k));
    else CHECK_OK(qmm_weight_alloc(w, f, n, k));
    CHECK_OK(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src, k, w));
    free(src);
}

static void alloc_like(qmm_weight *d, const qmm_weight *w, size_t n, size_t k)
{
    if (w->experts > 1) CHECK_OK(qmm_weight_alloc_experts(d, w->format, w->experts, n, k));
    else CHECK_OK(qmm_weight_alloc(d, w->format, n, k));
}

/* Every part of w along dim dequantized and put back where it came from equals w dequantized. */
static void reassemble(const qmm_weight *w, qmm_shard_dim dim, size_t parts)
{
    const size_t e_count = w->experts > 1 ? w->experts : 1, n = w->n, k = w->k;
    float *full = malloc(e_count * n * k * 4), *back = malloc(e_count * n * k * 4);
    CHECK_OK(qmm_dequantize(w, 0, QMM_DTYPE_FP32, full, k));
    memset(back, 0xff, e_count * n * k * 4);
    for (size_t r = 0; r < parts; r++) {
        size_t pn, pk;
        CHECK_OK(qmm_weight_shard_shape(w->format, n, k, dim, parts, r, &pn, &pk));
        qmm_weight part;
        alloc_like(&part, w, pn, pk);
        harness_poison(part.data, part.data_bytes);
        CHECK_OK(qmm_weight_shard(w, dim, parts, r, &part));
        float *d = malloc(e_count * pn * pk * 4);
        CHECK_OK(qmm_dequantize(&part, 0, QMM_DTYPE_FP32, d, pk));
        for (size_t e = 0; e < e_count; e++)
            for (size_t i = 0; i < pn; i++) {
                const size_t row = dim == QMM_SHARD_N ? r * pn + i : i, col0 = dim == QMM_SHARD_K ? r * pk : 0;
                memcpy(back + (e * n + row) * k + col0, d + (e * pn + i) * pk, pk * 4);
            }
        free(d);
        qmm_weight_free(&part);
    }
    CHECK(memcmp(full, back, e_count * n * k * 4) == 0, "parts of format %d (E %zu, %zu x %zu) along %s into %zu reassemble",
          (int)w->format, e_count, n, k, dim == QMM_SHARD_N ? "N" : "K", parts);
    free(full), free(back);
}

/* Along N each part's product is its columns of the full one; along K the partial sums add up. */
static void products(qmm_context *ctx, qmm_context *ref, qmm_format f)
{
    const size_t parts = 1 + harness_next() % 4, m = 1 + harness_next() % 9, b = block_of(f);
    const size_t n = parts * (1 + harness_next() % 20), k = parts * b * (1 + harness_next() % (f == QMM_FORMAT_BF16 ? 60 : 6));
    qmm_weight w;
    random_weight(&w, f, 1, n, k);
    float *a = malloc(m * k * 4), *c = malloc(m * n * 4), *cr = malloc(m * n * 4), *sum = calloc(m * n, sizeof(float));
    for (size_t i = 0; i < m * k; i++) a[i] = (float)harness_normal();
    CHECK_OK(qmm_matmul(ref, m, QMM_DTYPE_FP32, a, k, &w, QMM_DTYPE_FP32, cr, n, NULL));
    /* sum |a| |w| per element: fp32 accumulation in any order is within 16 sqrt(k) 2^-24 of it */
    float *deq = malloc(n * k * 4);
    double *abs_dot = malloc(m * n * sizeof(double));
    CHECK_OK(qmm_dequantize(&w, 0, QMM_DTYPE_FP32, deq, k));
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double s = 0;
            for (size_t t = 0; t < k; t++) s += fabs((double)a[i * k + t] * deq[j * k + t]);
            abs_dot[i * n + j] = s;
        }
    for (size_t r = 0; r < parts; r++) {
        qmm_weight part;
        /* along N: rows r * n / parts ... */
        CHECK_OK(qmm_weight_alloc(&part, f, n / parts, k));
        CHECK_OK(qmm_weight_shard(&w, QMM_SHARD_N, parts, r, &part));
        float *cp = malloc(m * (n / parts) * 4);
        CHECK_OK(qmm_matmul(ref, m, QMM_DTYPE_FP32, a, k, &part, QMM_DTYPE_FP32, cp, n / parts, NULL));
        for (size_t i = 0; i < m; i++)
            CHECK(memcmp(cp + i * (n / parts), cr + i * n + r * (n / parts), (n / parts) * 4) == 0,
                  "format %d: part %zu of %zu along N gives its columns of the product bit for bit", (int)f, r, parts);
        CHECK_OK(qmm_weight_prepare(ctx, &part));
        CHECK_OK(qmm_matmul(ctx, m, QMM_DTYPE_FP32, a, k, &part, QMM_DTYPE_FP32, cp, n / parts, NULL));
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n / parts; j++) {
                const size_t at = i * n + r * (n / parts) + j;
                const double want = cr[at], got = cp[i * (n / parts) + j];
                const double tol = 16.0 * sqrt((double)k) * 0x1p-24 * abs_dot[at] + 1e-30;
                CHECK(fabs(got - want) <= tol, "CPU part along N: %g against %g (bound %g)", got, want, tol);
            }
        free(cp);
        qmm_weight_free(&part);
        /* along K: columns r * k / parts ..., A's matching columns */
        CHECK_OK(qmm_weight_alloc(&part, f, n, k / parts));
        CHECK_OK(qmm_weight_shard(&w, QMM_SHARD_K, parts, r, &part));
        CHECK_OK(qmm_matmul(ctx, m, QMM_DTYPE_FP32, a + r * (k / parts), k, &part, QMM_DTYPE_FP32, c, n, NULL));
        for (size_t i = 0; i < m * n; i++) sum[i] += c[i];
        qmm_weight_free(&part);
    }
    /* the fp32 bound of the whole sum: 16 sqrt(k) 2^-24 sum |a| |w|, and the parts' own additions */
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            const double tol = (16.0 * sqrt((double)k) + 4.0 * (double)parts) * 0x1p-24 * abs_dot[i * n + j] + 1e-30;
            CHECK(fabs((double)sum[i * n + j] - cr[i * n + j]) <= tol, "format %d: K parts sum to %g, full %g (bound %g)",
                  (int)f, sum[i * n + j], cr[i * n + j], tol);
        }
    qmm_weight_free(&w);
    free(a), free(c), free(cr), free(sum), free(deq), free(abs_dot);
}

static void errors(void)
{
    size_t n, k;
    CHECK_STATUS(qmm_weight_shard_shape(QMM_FORMAT_NVFP4, 64, 48, QMM_SHARD_K, 2, 0, &n, &k), QMM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(qmm_weight_shard_shape(QMM_FORMAT_MXFP4, 64, 96, QMM_SHARD_K, 2, 0, &n, &k), QMM_ERR_INVALID_ARGUMENT);
    CHECK_OK(qmm_weight_shard_shape(QMM_FORMAT_MXFP4, 64, 128, QMM_SHARD_K, 2, 1, &n, &k));
    CHECK(n == 64 && k == 64, "mxfp4 128 -> 2 x 64");
    CHECK_STATUS(qmm_weight_shard_shape(QMM_FORMAT_FP8_TENSOR, 63, 48, QMM_SHARD_N, 2, 0, &n, &k), QMM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(qmm_weight_shard_shape(QMM_FORMAT_FP8_TENSOR, 64, 48, QMM_SHARD_N, 0, 0, &n, &k), QMM_ERR_INVALID_SIZE);
    CHECK_STATUS(qmm_weight_shard_shape(QMM_FORMAT_FP8_TENSOR, 64, 48, QMM_SHARD_N, 2, 2, &n, &k), QMM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(qmm_weight_shard_shape(QMM_FORMAT_FP8_TENSOR, 64, 48, (qmm_shard_dim)5, 2, 0, &n, &k), QMM_ERR_INVALID_ENUM);
    CHECK_STATUS(qmm_weight_shard_shape(QMM_FORMAT_FP8_TENSOR, 64, 48, QMM_SHARD_N, 2, 0, NULL, &k), QMM_ERR_NULL_POINTER);
    qmm_weight w, d;
    random_weight(&w, QMM_FORMAT_NVFP4, 1, 32, 64);
    CHECK_OK(qmm_weight_alloc(&d, QMM_FORMAT_NVFP4, 16, 32)); /* the shape of neither cut */
    harness_poison(d.data, d.data_bytes);
    CHECK_STATUS(qmm_weight_shard(&w, QMM_SHARD_N, 2, 0, &d), QMM_ERR_INVALID_WEIGHT);
    CHECK(harness_all_bytes(d.data, d.data_bytes, 0xff), "a refused part writes nothing");
    qmm_weight_free(&d);
    CHECK_OK(qmm_weight_alloc(&d, QMM_FORMAT_NVFP4, 16, 64));
    d.data_bytes -= 1;
    CHECK_STATUS(qmm_weight_shard(&w, QMM_SHARD_N, 2, 0, &d), QMM_ERR_BUFFER_TOO_SMALL);
    d.data_bytes += 1;
    CHECK_STATUS(qmm_weight_shard(NULL, QMM_SHARD_N, 2, 0, &d), QMM_ERR_NULL_POINTER);
    qmm_weight_free(&d);
    qmm_weight_free(&w);
}

/* Parts loaded straight from a checkpoint equal the parts of the loaded weights. */
static void from_checkpoint(void)
{
    const char *path = io_path("tp.safetensors");
    qmm_safetensors_writer *wr;
    qmm_weight ws[3];
    const char *names[3] = {"l.nvfp4", "l.fp8c", "l.mxfp4"};
    const qmm_format fs[3] = {QMM_FORMAT_NVFP4, QMM_FORMAT_FP8_CHANNEL, QMM_FORMAT_MXFP4};
    CHECK_OK(qmm_safetensors_writer_create(path, QMM_WRITE_OVERWRITE, &wr));
    for (int i = 0; i < 3; i++) {
        random_weight(&ws[i], fs[i], 1, 48, 128);
        CHECK_OK(qmm_safetensors_writer_add_weight(wr, names[i], &ws[i]));
    }
    qmm_weight ex[2];
    for (int e = 0; e < 2; e++) random_weight(&ex[e], QMM_FORMAT_MXFP4, 1, 32, 64);
    CHECK_OK(qmm_safetensors_writer_add_experts(wr, "moe.experts.up", ex, 2));
    CHECK_OK(qmm_safetensors_writer_finish(wr));
    qmm_safetensors *f = NULL;
    CHECK_OK(qmm_safetensors_open(path, &f));
    if (!f) return;
    for (int i = 0; i < 4; i++) {
        const char *name = i < 3 ? names[i] : "moe.experts.up";
        const qmm_weight *full = i < 3 ? &ws[i] : &ex[1];
        for (int dim = 0; dim < 2; dim++)
            for (size_t r = 0; r < 2; r++) {
                qmm_weight a, b;
                size_t n, k;
                CHECK_OK(qmm_weight_shard_shape(full->format, full->n, full->k, (qmm_shard_dim)dim, 2, r, &n, &k));
                CHECK_OK(qmm_checkpoint_weight_load_shard(f, name, i < 3 ? 0 : 1, (qmm_shard_dim)dim, 2, r, &a));
                CHECK_OK(qmm_weight_alloc(&b, full->format, n, k));
                CHECK_OK(qmm_weight_shard(full, (qmm_shard_dim)dim, 2, r, &b));
                CHECK(a.n == n && a.k == k && memcmp(a.data, b.data, b.data_bytes) == 0 &&
                          (!b.block_scales || memcmp(a.block_scales, b.block_scales, b.block_scale_bytes) == 0) &&
                          (!b.channel_scales || memcmp(a.channel_scales, b.channel_scales, n * 4) == 0) &&
                          a.tensor_scale == b.tensor_scale,
                      "%s part %zu along %s loaded from the file", name, r, dim ? "K" : "N");
                qmm_weight_free(&a);
                qmm_weight_free(&b);
            }
    }
    qmm_weight none;
    CHECK_STATUS(qmm_checkpoint_weight_load_shard(f, "l.nvfp4", 0, QMM_SHARD_K, 3, 0, &none), QMM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(qmm_checkpoint_weight_load_shard(f, "moe.experts.up", 2, QMM_SHARD_N, 2, 0, &none), QMM_ERR_INVALID_ARGUMENT);
    qmm_safetensors_close(f);
    for (int i = 0; i < 3; i++) qmm_weight_free(&ws[i]);
    for (int e = 0; e < 2; e++) qmm_weight_free(&ex[e]);
}

int main(void)
{
    harness_begin("test_shard");
    io_make_dir();
    for (int rep = 0; rep < 4; rep++)
        for (size_t fi = 0; fi < 5; fi++) {
            const qmm_format f = formats[fi];
            const size_t parts = 1 + harness_next() % 4, b = block_of(f), experts = 1 + harness_next() % 3;
            const size_t n = parts * (1 + harness_next() % 17), k = parts * b * (1 + harness_next() % 5);
            qmm_weight w;
            random_weight(&w, f, experts, n, k);
            reassemble(&w, QMM_SHARD_N, parts);
            reassemble(&w, QMM_SHARD_K, parts);
            qmm_weight_free(&w);
            /* odd N along K, and odd K along N (a partial last block) */
            random_weight(&w, f, 1, 2 * (1 + harness_next() % 9) + 1, parts * b * 3);
            reassemble(&w, QMM_SHARD_K, parts);
            qmm_weight_free(&w);
            const size_t odd_k = f == QMM_FORMAT_NVFP4 || f == QMM_FORMAT_MXFP4 ? 2 * (1 + harness_next() % 40) + 1 + 1 : 77;
            random_weight(&w, f, 1, parts * 3, odd_k);
            reassemble(&w, QMM_SHARD_N, parts);
            qmm_weight_free(&w);
        }
    qmm_context_options o;
    qmm_context_options_init(&o);
    o.backend = QMM_BACKEND_REFERENCE;
    qmm_context *ref, *ctx;
    CHECK_OK(qmm_context_create(&o, &ref));
    o.backend = qmm_backend_available(QMM_BACKEND_CPU) == QMM_OK ? QMM_BACKEND_CPU : QMM_BACKEND_REFERENCE;
    CHECK_OK(qmm_context_create(&o, &ctx));
    for (int rep = 0; rep < 3; rep++)
        for (size_t fi = 0; fi < 5; fi++) products(ctx, ref, formats[fi]);
    errors();
    from_checkpoint();
    qmm_context_destroy(ctx);
    qmm_context_destroy(ref);
    io_remove_tree(io_dir);
    return harness_end("test_shard");
}
