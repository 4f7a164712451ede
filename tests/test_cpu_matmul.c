/* The CPU backend against the reference on odd shapes, for the instruction set named by QMM_ISA (CTest
 * runs this file once per set; without QMM_ISA it runs every set in turn). For each path forced in
 * turn (gemv, materialize) x every format x A in {bf16, fp16, fp32} x C in {fp32, bf16, fp16}: shapes
 * with M = 1, N and K not multiples of 16 / 32 / 64, K not a multiple of the block (1, 15, 33, 100,
 * 257, ...), K beyond one GEMM K step, N beyond one column block, M beyond one row block, padded
 * strides, every epilogue. Plus unprepared weights, batch invariance per path, and 1 vs 2 threads.
 * An instruction set this machine lacks is skipped with a message. */
#include "matmul_check.h"
#include "cpu_isa.h"

static qmm_context *ref_ctx;

static const char *fmt_name(qmm_format f)
{
    qmm_format_traits t;
    return qmm_format_get_traits(f, &t) == QMM_OK ? t.name : "?";
}

static const qmm_format formats[5] = {QMM_FORMAT_NVFP4, QMM_FORMAT_MXFP4, QMM_FORMAT_FP8_TENSOR, QMM_FORMAT_FP8_CHANNEL,
                                      QMM_FORMAT_BF16};
static const qmm_dtype types[3] = {QMM_DTYPE_BF16, QMM_DTYPE_FP16, QMM_DTYPE_FP32};

/* (M, N, K): odd sizes around the kernels' steps (tile 16 rows, panel 32 columns, K group 64, GEMM
 * K step 256 and column block 128, GEMV passes of 8 rows, register tiles of 4 / 6 / 12 rows). */
static const size_t shapes[][3] = {
    {1, 1, 1},   {1, 33, 15},  {3, 17, 33},  {2, 67, 100}, {9, 16, 257}, {13, 45, 64}, {1, 100, 130},
    {8, 31, 2},  {25, 40, 70}, {12, 64, 513}, {4, 150, 31}, {17, 5, 600}, {1, 47, 1000},
};
#define SHAPE_COUNT (sizeof shapes / sizeof shapes[0])

static qmm_context *cpu_context(int threads)
{
    qmm_context_options o;
    qmm_context_options_init(&o);
    o.backend = QMM_BACKEND_CPU;
    o.num_threads = threads;
    qmm_context *ctx = NULL;
    qmm_status st = qmm_context_create(&o, &ctx);
    return st == QMM_OK ? ctx : NULL;
}

static void test_paths(qmm_context *ctx, const char *isa)
{
    static const qmm_path paths[2] = {QMM_PATH_GEMV, QMM_PATH_MATERIALIZE};
    static const qmm_activation acts[5] = {QMM_ACT_NONE, QMM_ACT_RELU, QMM_ACT_SILU, QMM_ACT_GELU, QMM_ACT_GELU_ERF};
    unsigned step = 0;
    for (int pi = 0; pi < 2; pi++) {
        CHECK_OK(qmm_context_set_path(ctx, paths[pi]));
        for (int fi = 0; fi < 5; fi++)
            for (int ai = 0; ai < 3; ai++)
                for (int ci = 0; ci < 3; ci++) {
                    /* every shape for bf16 -> fp32 (the exact-input case), a rotating sample otherwise */
                    const int all = ai == 0 && ci == 0;
                    for (size_t si = 0; si < SHAPE_COUNT; si++) {
                        if (!all && (si + (size_t)(3 * ai + ci)) % 4 != 0) continue;
                        mm_case c = {formats[fi], shapes[si][0], shapes[si][1], shapes[si][2], types[ai], types[ci],
                                     (int)(step % 3 == 1), acts[step % 5], step % 4 == 2 ? 3 : 0, step % 3 == 0 ? 5 : 0};
                        step++;
                        char label[160];
                        snprintf(label, sizeof label, "%s %s %s %zux%zux%zu %s->%s act %d%s", isa, qmm_path_name(paths[pi]),
                                 fmt_name(formats[fi]), c.m, c.n, c.k, qmm_dtype_name(c.a_type),
                                 qmm_dtype_name(c.c_type), (int)c.activation, c.full_epilogue ? " full" : "");
                        mm_check(ctx, ref_ctx, &c, label);
                    }
                }
    }
    /* more rows than one GEMM row block (504 or 512) */
    CHECK_OK(qmm_context_set_path(ctx, QMM_PATH_MATERIALIZE));
    mm_case big = {QMM_FORMAT_NVFP4, 530, 20, 40, QMM_DTYPE_BF16, QMM_DTYPE_FP32, 1, QMM_ACT_NONE, 0, 0};
    mm_check(ctx, ref_ctx, &big, "more rows than a row block");
    CHECK_OK(qmm_context_set_path(ctx, QMM_PATH_AUTO));
}

/* Weights never prepared: the canonical buffers through panels, whatever path is asked. */
static void test_unprepared(qmm_context *ctx, const char *isa)
{
    for (int fi = 0; fi < 5; fi++) {
        for (int path = 0; path < 2; path++) {
            CHECK_OK(qmm_context_set_path(ctx, path ? QMM_PATH_MATERIALIZE : QMM_PATH_GEMV));
            mm_case c = {formats[fi], path ? 14 : 1, 37, 77, types[fi % 3], types[(fi + 1) % 3], fi & 1, QMM_ACT_SILU, 1, 2};
            qmm_weight w;
            mm_random_weight(&w, c.format, c.n, c.k);
            qmm_path plan = QMM_PATH_AUTO;
            CHECK_OK(qmm_context_set_path(ctx, QMM_PATH_AUTO));
            CHECK_OK(qmm_matmul_plan(ctx, 1, QMM_DTYPE_BF16, &w, &plan));
            CHECK(plan == QMM_PATH_MATERIALIZE, "an unprepared weight plans the materialize path (%d)", (int)plan);
            CHECK_OK(qmm_context_set_path(ctx, path ? QMM_PATH_MATERIALIZE : QMM_PATH_GEMV));
            char label[96];
            snprintf(label, sizeof label, "%s unprepared %s", isa, fmt_name(c.format));
            mm_check_with(ctx, ref_ctx, &c, label, &w);
            qmm_weight_free(&w);
        }
    }
    CHECK_OK(qmm_context_set_path(ctx, QMM_PATH_AUTO));
}

static void test_batch_invariance(qmm_context *ctx, const char *isa)
{
    for (int fi = 0; fi < 5; fi++) {
        char label[96];
        CHECK_OK(qmm_context_set_path(ctx, QMM_PATH_GEMV));
        snprintf(label, sizeof label, "%s gemv batch invariance %s", isa, fmt_name(formats[fi]));
        mm_check_batch_invariance(ctx, formats[fi], 45, 300, 3, 11, label);
        CHECK_OK(qmm_context_set_path(ctx, QMM_PATH_MATERIALIZE));
        snprintf(label, sizeof label, "%s materialize batch invariance %s", isa, fmt_name(formats[fi]));
        mm_check_batch_invariance(ctx, formats[fi], 70, 300, 7, 30, label);
    }
    CHECK_OK(qmm_context_set_path(ctx, QMM_PATH_AUTO));
}

/* 1 and 2 threads partition the same sums the same way: the results agree bit for bit (which is
 * within the fp32 reordering bound a fortiori). */
static void test_threads(const char *isa)
{
    qmm_context *c1 = cpu_context(1), *c2 = cpu_context(2), *c3 = cpu_context(3);
    CHECK(c1 && c2 && c3, "%s: contexts with 1, 2 and 3 threads", isa);
    if (!c1 || !c2 || !c3) return;
    const size_t m_list[2] = {3, 29}, n = 150, k = 333;
    for (int fi = 0; fi < 5; fi++) {
        qmm_weight w1, w2, w3;
        mm_random_weight(&w1, formats[fi], n, k);
        w2 = w1, w3 = w1;
        w2.prepared = w3.prepared = NULL;
        CHECK_OK(qmm_weight_prepare(c1, &w1));
        CHECK_OK(qmm_weight_prepare(c2, &w2));
        CHECK_OK(qmm_weight_prepare(c3, &w3));
        for (int mi = 0; mi < 2; mi++)
            for (int path = 0; path < 2; path++) {
                const size_t m = m_list[mi];
                const qmm_path p = path ? QMM_PATH_MATERIALIZE : QMM_PATH_GEMV;
                CHECK_OK(qmm_context_set_path(c1, p));
                CHECK_OK(qmm_context_set_path(c2, p));
                CHECK_OK(qmm_context_set_path(c3, p));
                uint16_t *a = malloc(m * k * 2);
                float *o1 = malloc(m * n * 4), *o2 = malloc(m * n * 4), *o3 = malloc(m * n * 4);
                for (size_t i = 0; i < m * k; i++) a[i] = qmm_fp32_to_bf16((float)harness_normal());
                CHECK_OK(qmm_matmul(c1, m, QMM_DTYPE_BF16, a, k, &w1, QMM_DTYPE_FP32, o1, n, NULL));
                CHECK_OK(qmm_matmul(c2, m, QMM_DTYPE_BF16, a, k, &w2, QMM_DTYPE_FP32, o2, n, NULL));
                CHECK_OK(qmm_matmul(c3, m, QMM_DTYPE_BF16, a, k, &w3, QMM_DTYPE_FP32, o3, n, NULL));
                CHECK(memcmp(o1, o2, m * n * 4) == 0 && memcmp(o1, o3, m * n * 4) == 0,
                      "%s: 1, 2 and 3 threads differ (%s, m = %zu, %s)", isa, fmt_name(formats[fi]), m,
                      qmm_path_name(p));
                free(a), free(o1), free(o2), free(o3);
            }
        qmm_weight_unprepare(&w2);
        qmm_weight_unprepare(&w3);
        qmm_weight_free(&w1);
    }
    qmm_context_destroy(c1), qmm_context_destroy(c2), qmm_context_destroy(c3);
}

static int run_isa(const char *isa)
{
    const char *name;
    qmm_context *ctx = cpu_isa_context("test_cpu_matmul", isa, &name);
    if (!ctx) return 0;
    test_paths(ctx, name);
    test_unprepared(ctx, name);
    test_batch_invariance(ctx, name);
    test_threads(name);
    qmm_context_destroy(ctx);
    return 1;
}

int main(void)
{
    harness_begin("test_cpu_matmul");
    qmm_context_options o;
    qmm_context_options_init(&o);
    o.backend = QMM_BACKEND_REFERENCE;
    if (qmm_context_create(&o, &ref_ctx) != QMM_OK) return 1;
    if (qmm_backend_available(QMM_BACKEND_CPU) != QMM_OK) {
        printf("test_cpu_matmul: SKIPPED: the CPU backend is not built in\n");
        return 77;
    }
    const int ran = cpu_isa_each(run_isa);
    qmm_context_destroy(ref_ctx);
    int rc = harness_end("test_cpu_matmul");
    return rc ? rc : ran ? 0 : 77;
}
