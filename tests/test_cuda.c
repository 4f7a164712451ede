/* The CUDA backend against the reference: every path and format on odd shapes (M in 1, 2, 3, 7, 16,
 * 33, 100; N and K not multiples of 128; K not a multiple of the block), bf16 and fp16 activations,
 * every output type and epilogue (and the epilogue's fp32 arithmetic bit for bit), split-K, chunked
 * materialization, the RAW encodings, batch invariance, CUDA graph capture, and bad inputs. Exits 77
 * (skipped) without a usable GPU. */
#include <cuda_runtime_api.h>

#include "../src/cuda/plan.h"
#include "cuda_variants.h"
#include "matmul_check.h"

static qmm_context *ref, *ctx;

/* The plan's override of every CUDA context the tests make: the rules, or a variant's (main). */
static qmm__cuda_override plan_override = QMM__CUDA_OVERRIDE_DEFAULT;

static qmm_context *cuda_context(size_t workspace, void *stream)
{
    qmm_context_options o;
    qmm_context_options_init(&o);
    o.backend = QMM_BACKEND_CUDA;
    o.workspace_bytes = workspace;
    o.cuda_stream = stream;
    qmm_context *c = NULL;
    CHECK_OK(qmm_context_create(&o, &c));
    if (c) CHECK_OK(qmm__cuda_context_override(c, &plan_override));
    return c;
}

static const qmm_format formats[5] = {QMM_FORMAT_NVFP4, QMM_FORMAT_MXFP4, QMM_FORMAT_FP8_TENSOR, QMM_FORMAT_FP8_CHANNEL, QMM_FORMAT_BF16};
static const qmm_dtype atypes[2] = {QMM_DTYPE_BF16, QMM_DTYPE_FP16};
static const qmm_dtype ctypes[3] = {QMM_DTYPE_FP32, QMM_DTYPE_BF16, QMM_DTYPE_FP16};

#include "cuda_exact.h" /* test_exact_epilogue, over the contexts above */

/* Every path x format x M on odd shapes, with random types and epilogues per case. The last two M (the
 * WG variant's 256-row CTAs over two and three M groups on sm_90a) run on the fused path only, which
 * the dispatcher takes past 256 rows only for the largest weights. */
static void test_paths_and_shapes(void)
{
    static const size_t ms[] = {1, 2, 3, 7, 16, 24, 33, 100, 150, 200, 300, 520};
    static const size_t nk[][2] = {{129, 200}, {40, 4111}, {301, 97}, {17, 1000}};
    static const qmm_path paths[4] = {QMM_PATH_AUTO, QMM_PATH_GEMV, QMM_PATH_FUSED, QMM_PATH_MATERIALIZE};
    char label[160];
    for (int p = 0; p < 4; p++) {
        CHECK_OK(qmm_context_set_path(ctx, paths[p]));
        const size_t m_count = sizeof ms / sizeof ms[0] - (paths[p] == QMM_PATH_FUSED ? 0 : 2);
        for (int f = 0; f < 5; f++) {
            if (formats[f] == QMM_FORMAT_BF16 && (paths[p] == QMM_PATH_GEMV || paths[p] == QMM_PATH_FUSED))
                continue; /* bf16 weights run on cuBLASLt */
            for (size_t mi = 0; mi < m_count; mi++)
                for (size_t s = 0; s < sizeof nk / sizeof nk[0]; s++) {
                    mm_case c = {formats[f], ms[mi], nk[s][0], nk[s][1], atypes[harness_next() % 2], ctypes[harness_next() % 3],
                                 (int)(harness_next() % 2), (qmm_activation)(harness_next() % 5), harness_next() % 3, harness_next() % 3};
                    snprintf(label, sizeof label, "path %s format %d m %zu n %zu k %zu", qmm_path_name(paths[p]), (int)formats[f],
                             c.m, c.n, c.k);
                    mm_check(ctx, ref, &c, label);
                }
        }
    }
    CHECK_OK(qmm_context_set_path(ctx, QMM_PATH_AUTO));
}

/* Every activation type x output type x epilogue on both paths, one shape. */
static void test_types_and_epilogues(void)
{
    char label[160];
    const qmm_path paths[3] = {QMM_PATH_GEMV, QMM_PATH_FUSED, QMM_PATH_MATERIALIZE};
    for (int p = 0; p < 3; p++) {
        CHECK_OK(qmm_context_set_path(ctx, paths[p]));
        for (int a = 0; a < 2; a++)
            for (int c = 0; c < 3; c++)
                for (int act = 0; act < 5; act++)
                    for (int full = 0; full < 2; full++) {
                        qmm_format f = formats[harness_next() % 4];
                        mm_case mc = {f, 5, 77, 333, atypes[a], ctypes[c], full, (qmm_activation)act, 1, 2};
                        snprintf(label, sizeof label, "%s %s->%s act %d full %d format %d", qmm_path_name(paths[p]),
                                 qmm_dtype_name(atypes[a]), qmm_dtype_name(ctypes[c]), act, full, (int)f);
                        mm_check(ctx, ref, &mc, label);
                    }
    }
    CHECK_OK(qmm_context_set_path(ctx, QMM_PATH_AUTO));
}

/* Long K: the fused path's 16-row tiles cannot stage their whole K range at once, so every variant
 * of the fused kernel runs: PIPE (bf16 activations in 16-byte aligned rows; on a build with the WG
 * variant, that one) for 12, 40 and 100 rows, STEP for fp16 activations and for unaligned rows. */
static void test_long_k(void)
{
    char label[160];
    CHECK_OK(qmm_context_set_path(ctx, QMM_PATH_FUSED));
    for (int f = 0; f < 4; f++) {
        static const struct {
            size_t m, lda_pad;
            qmm_dtype a;
        } v[5] = {{12, 7, QMM_DTYPE_BF16}, {12, 0, QMM_DTYPE_FP16}, {40, 7, QMM_DTYPE_BF16}, {40, 0, QMM_DTYPE_BF16},
                  {100, 7, QMM_DTYPE_BF16}};
        for (int i = 0; i < 5; i++) {
            mm_case c = {formats[f], v[i].m, 40, 70001, v[i].a, ctypes[harness_next() % 3], (int)(harness_next() % 2),
                         (qmm_activation)(harness_next() % 5), v[i].lda_pad, 1};
            snprintf(label, sizeof label, "fused long K, format %d, m %zu, lda %zu, %s", (int)formats[f], c.m, c.k + c.lda_pad,
                     qmm_dtype_name(c.a_type));
            mm_check(ctx, ref, &c, label);
        }
        mm_check_batch_invariance(ctx, formats[f], 40, 70000, 9, 30, "fused long K 9 vs 30 (16- and 32-row tiles)");
    }
    CHECK_OK(qmm_context_set_path(ctx, QMM_PATH_AUTO));
}

/* A workspace far smaller than the bf16 weight: materialize runs in chunks of rows. */
static void test_chunked_materialize(void)
{
    qmm_context *small = cuda_context((size_t)40 << 20, NULL);
    if (!small) return;
    CHECK_OK(qmm_context_set_path(small, QMM_PATH_MATERIALIZE));
    for (int f = 0; f < 5; f++) {
        /* 4000 x 8200 bf16 is 66 MB against about 30 MB of workspace after cuBLASLt's share: 3 chunks */
        mm_case c = {formats[f], 9, 4000, 8200, QMM_DTYPE_BF16, QMM_DTYPE_FP32, 1, QMM_ACT_SILU, 0, 0};
        mm_check(small, ref, &c, "chunked materialize");
    }
    /* large M in chunks: every format, fp16 activations (fp16 weights; the MXFP4 one with a scale code
     * 2^-27 in block 0, so that its codes span more than 24 and A is split into bf16 hi + lo, two GEMMs),
     * both cuBLASLt epilogue routes, odd sizes and strides, batch invariance */
    qmm_context *mid = cuda_context((size_t)3 << 20, NULL), *mid8 = cuda_context((size_t)8 << 20, NULL);
    if (mid && mid8) {
        CHECK_OK(qmm_context_set_path(mid, QMM_PATH_MATERIALIZE));
        CHECK_OK(qmm_context_set_path(mid8, QMM_PATH_MATERIALIZE));
        for (int f = 0; f < 4; f++) {
            /* fp16 activations: 8 MB and more rows (room for the split's bf16 hi and lo copies) */
            mm_case c = {formats[f], 600, f % 2 ? 2000 : 1000, 1100, atypes[f % 2], ctypes[f % 3], f % 2, f < 2 ? QMM_ACT_NONE : QMM_ACT_GELU, 0, 0};
            qmm_context *cx = f % 2 ? mid8 : mid;
            qmm_weight w;
            mm_random_weight(&w, formats[f], c.n, c.k);
            if (formats[f] == QMM_FORMAT_MXFP4) w.block_scales[0] = 100;
            CHECK_OK(qmm_weight_prepare(cx, &w));
            mm_check_with(cx, ref, &c, "chunked materialize, large M", &w);
            qmm_weight_free(&w);
        }
        /* fp16 activations against fp16 weights, one GEMM per chunk (NVFP4, MXFP4 of a narrow scale range,
         * FP8), with cuBLASLt's epilogue where it writes the output type and an fp32 result where it does
         * not (bf16 C from fp16 operands: decided before the first chunk, cuBLASLt asked once); 2500 rows of
         * K = 1100 in 3 MB are three chunks, the last one shorter; bf16 C twice, the second call meeting
         * the cached answer */
        for (int f = 0; f < 3; f++)
            for (int t = 0; t < 3; t++) {
                qmm_weight w;
                mm_random_weight(&w, formats[f], 2500, 1100);
                CHECK_OK(qmm_weight_prepare(mid, &w));
                mm_case c = {formats[f], 3, 2500, 1100, QMM_DTYPE_FP16, ctypes[t], 0, QMM_ACT_RELU, 0, 0};
                mm_check_with(mid, ref, &c, "chunked materialize, fp16 A", &w);
                if (ctypes[t] == QMM_DTYPE_BF16) mm_check_with(mid, ref, &c, "chunked materialize, fp16 A, again", &w);
                qmm_weight_free(&w);
            }
        mm_case odd = {QMM_FORMAT_NVFP4, 517, 999, 1003, QMM_DTYPE_BF16, QMM_DTYPE_BF16, 0, QMM_ACT_RELU, 3, 5};
        mm_check(mid, ref, &odd, "chunked materialize, large M, odd sizes");
        /* the same case varied one factor at a time (docs/cuda.md, Materialize): without chunks (the
         * default workspace), small M, even K, no padding, no activation, fp32 output */
        mm_check(ctx, ref, &odd, "materialize, large M, odd sizes, one chunk");
        mm_case v = odd;
        v.m = 100;
        mm_check(mid, ref, &v, "chunked materialize, odd sizes, M = 100");
        v = odd, v.k = 1004;
        mm_check(mid, ref, &v, "chunked materialize, large M, odd sizes, even K");
        v = odd, v.lda_pad = 0, v.ldc_pad = 0;
        mm_check(mid, ref, &v, "chunked materialize, large M, odd sizes, no padding");
        v = odd, v.activation = QMM_ACT_NONE;
        mm_check(mid, ref, &v, "chunked materialize, large M, odd sizes, no activation");
        v = odd, v.c_type = QMM_DTYPE_FP32;
        mm_check(mid, ref, &v, "chunked materialize, large M, odd sizes, fp32 output");
        /* 8 MB: one chunk, but cuBLASLt's share of the workspace is 2 MB, not 32 */
        mm_check(mid8, ref, &odd, "materialize, large M, odd sizes, one chunk, small cuBLASLt workspace");
        mm_check_batch_invariance(mid, QMM_FORMAT_MXFP4, 1000, 1100, 520, 520, "chunked materialize same M");
    }
    if (mid) qmm_context_destroy(mid);
    if (mid8) qmm_context_destroy(mid8);
    size_t need = 0;
    CHECK_OK(qmm_workspace_query(QMM_BACKEND_CUDA, 9, QMM_FORMAT_NVFP4, 4000, 8200, &need));
    CHECK(need > ((size_t)40 << 20) / 2, "workspace query %zu", need);
    qmm_context_destroy(small);
    /* too small for even 16 rows */
    qmm_context *tiny = cuda_context((size_t)64 << 10, NULL);
    if (!tiny) return;
    qmm_weight w;
    mm_random_weight(&w, QMM_FORMAT_NVFP4, 64, 8192);
    CHECK_OK(qmm_weight_prepare(tiny, &w));
    void *a = NULL, *c = NULL;
    CHECK_OK(qmm_buffer_alloc(tiny, 4 * 8192 * 2, &a));
    CHECK_OK(qmm_buffer_alloc(tiny, 4 * 64 * 4, &c));
    CHECK_OK(qmm_context_set_path(tiny, QMM_PATH_MATERIALIZE));
    CHECK_STATUS(qmm_matmul(tiny, 4, QMM_DTYPE_BF16, a, 8192, &w, QMM_DTYPE_FP32, c, 64, NULL), QMM_ERR_WORKSPACE_TOO_SMALL);
    qmm_buffer_free(tiny, a), qmm_buffer_free(tiny, c);
    qmm_weight_free(&w);
    qmm_context_destroy(tiny);
}

/* The dispatcher's table (qmm__cuda_thresholds) on a small weight: the GEMV to M = 8, the fused path to
 * M = 192, materialize past it, for both activation types; bf16 weights always on materialize. */
static void test_dispatch_table(void)
{
    static const struct {
        size_t m;
        qmm_dtype at;
        qmm_path want;
    } rows[] = {{1, QMM_DTYPE_BF16, QMM_PATH_GEMV},         {8, QMM_DTYPE_BF16, QMM_PATH_GEMV},
                {9, QMM_DTYPE_BF16, QMM_PATH_FUSED},        {256, QMM_DTYPE_BF16, QMM_PATH_FUSED},
                {257, QMM_DTYPE_BF16, QMM_PATH_MATERIALIZE}, {4096, QMM_DTYPE_BF16, QMM_PATH_MATERIALIZE},
                {8, QMM_DTYPE_FP16, QMM_PATH_GEMV},         {256, QMM_DTYPE_FP16, QMM_PATH_FUSED},
                {257, QMM_DTYPE_FP16, QMM_PATH_MATERIALIZE}};
    for (int f = 0; f < 5; f++) {
        qmm_weight w;
        mm_random_weight(&w, formats[f], 300, 1000);
        CHECK_OK(qmm_weight_prepare(ctx, &w));
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
            qmm_path path;
            CHECK_OK(qmm_matmul_plan(ctx, rows[i].m, rows[i].at, &w, &path));
            const qmm_path want = formats[f] == QMM_FORMAT_BF16 ? QMM_PATH_MATERIALIZE : rows[i].want;
            CHECK(path == want, "format %d %s M = %zu plans %s, want %s", (int)formats[f], qmm_dtype_name(rows[i].at), rows[i].m,
                  qmm_path_name(path), qmm_path_name(want));
        }
        qmm_weight_free(&w);
    }
}

/* The table's tier for weights of 200 Mi elements or more (8192 x 28672): fused to M = 1024 where the
 * fused path runs wgmma for the activations (bf16; fp16 against an fp16 decode), to 2048 for FP8 per
 * channel, to 256 where it cannot (fp16 against an MXFP4 weight whose scale codes span more than
 * QMM__MXFP4_HALF_RANGE, which splits A); the giant tier of 400 Mi elements or more (language-model
 * heads), fused to 2048 for every format where wgmma runs; and past the tiers, up to M = 2048, the fill
 * rule (qmm__cuda_fused_fills, whose values at the H200's points test_cuda_split checks): fused where
 * wgmma runs and the one-split grid fills its waves on this device. Each case at its tier's edge and at
 * M = 257..2049. The weights' values do not matter to the plan: constant codes and scales, no
 * quantization. */
static void test_dispatch_huge(void)
{
    int dev = 0, sm = 0, major = 0;
    CHECK(cudaGetDevice(&dev) == cudaSuccess && cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess &&
              cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess,
          "the SM count");
    const qmm__cuda_tunables *t = qmm__cuda_tunables_for(major, 0);
    static const struct {
        qmm_format f;
        int wide; /* MXFP4 scale codes 100 and 140: no fp16 decode */
        size_t n, k, bf16_max, fp16_max;
    } cases[] = {{QMM_FORMAT_NVFP4, 0, 8192, 28672, 1024, 1024},
                 {QMM_FORMAT_FP8_TENSOR, 0, 8192, 28672, 1024, 1024},
                 {QMM_FORMAT_FP8_CHANNEL, 0, 8192, 28672, 2048, 2048},
                 {QMM_FORMAT_MXFP4, 0, 8192, 28672, 1024, 1024},
                 {QMM_FORMAT_MXFP4, 1, 8192, 28672, 1024, 256},
                 /* the giant tier (400 Mi elements and more: language-model heads), just past its edge */
                 {QMM_FORMAT_NVFP4, 0, 102401, 4096, 2048, 2048},
                 {QMM_FORMAT_FP8_TENSOR, 0, 102401, 4096, 2048, 2048},
                 {QMM_FORMAT_MXFP4, 1, 102401, 4096, 2048, 256},
                 /* just below it: the huge tier */
                 {QMM_FORMAT_NVFP4, 0, 102399, 4096, 1024, 1024},
                 /* the fill rule on smaller weights (the WG tier, 256) */
                 {QMM_FORMAT_NVFP4, 0, 4096, 14336, 256, 256},
                 {QMM_FORMAT_FP8_TENSOR, 0, 6144, 18432, 256, 256},
                 {QMM_FORMAT_MXFP4, 0, 14336, 4096, 256, 256}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        qmm_weight w;
        CHECK_OK(qmm_weight_alloc(&w, cases[i].f, cases[i].n, cases[i].k));
        memset(w.data, 0x23, w.data_bytes);
        if (w.block_scales) {
            memset(w.block_scales, cases[i].f == QMM_FORMAT_NVFP4 ? 0x38 : 120, w.block_scale_bytes);
            if (cases[i].wide) w.block_scales[0] = 100, w.block_scales[1] = 140;
        }
        if (w.channel_scales)
            for (size_t n = 0; n < w.n; n++) w.channel_scales[n] = 0.5f;
        CHECK_OK(qmm_weight_prepare(ctx, &w));
        for (int half = 0; half < 2; half++) {
            const size_t tier = half ? cases[i].fp16_max : cases[i].bf16_max;
            const bool wg = !(half && cases[i].wide);
            const size_t ms[] = {tier, tier + 1, 257, 512, 1024, 1025, 1536, 2048, 2049};
            for (size_t r = 0; r < sizeof ms / sizeof ms[0]; r++) {
                const size_t m = ms[r];
                const qmm_dtype at = half ? QMM_DTYPE_FP16 : QMM_DTYPE_BF16;
                const qmm_path want = m <= tier || (wg && m <= 2048 && qmm__cuda_fused_fills(cases[i].n, m, sm, t))
                                          ? QMM_PATH_FUSED : QMM_PATH_MATERIALIZE;
                qmm_path path;
                CHECK_OK(qmm_matmul_plan(ctx, m, at, &w, &path));
                CHECK(path == want, "format %d%s %zu x %zu %s M = %zu plans %s, want %s", (int)cases[i].f, cases[i].wide ? " (wide)" : "",
                      cases[i].n, cases[i].k, qmm_dtype_name(at), m, qmm_path_name(path), qmm_path_name(want));
            }
        }
        qmm_weight_free(&w);
    }
}

/* The fused path in a workspace too small for any split's partials (64 KiB against 266 KB for one split
 * at M = 300 on N = 200): one split, whose units store C straight from their registers and need no
 * partials, so the WG variant (sm_90a) may run there (three M tiles at M = 130, more than four at 300),
 * where before the launch fell back to PIPE; either way the result must be the reference's. */
static void test_fused_small_workspace(void)
{
    qmm_context *tiny = cuda_context((size_t)64 << 10, NULL);
    if (!tiny) return;
    CHECK_OK(qmm_context_set_path(tiny, QMM_PATH_FUSED));
    for (int f = 0; f < 4; f++) {
        mm_case c = {formats[f], f % 2 ? 300 : 130, 200, 2048, QMM_DTYPE_BF16, ctypes[f % 3], f % 2, f < 2 ? QMM_ACT_NONE : QMM_ACT_RELU, 0, 0};
        mm_check(tiny, ref, &c, "fused, one split in a small workspace");
    }
    qmm_context_destroy(tiny);
}

/* Weights the bit tricks cannot take run on materialize, exactly: an MXFP4 exponent range of 127,
 * and NVFP4 with a NaN block scale (its row is NaN, the others are right). */
static void test_raw_encodings(void)
{
    qmm_weight w;
    mm_random_weight(&w, QMM_FORMAT_MXFP4, 33, 96);
    w.block_scales[0] = 10, w.block_scales[1] = 137;
    CHECK_OK(qmm_weight_prepare(ctx, &w));
    qmm_path path;
    CHECK_OK(qmm_matmul_plan(ctx, 1, QMM_DTYPE_BF16, &w, &path));
    CHECK(path == QMM_PATH_MATERIALIZE, "a wide MXFP4 range plans materialize (%s)", qmm_path_name(path));
    CHECK_OK(qmm_matmul_plan(ctx, 100, QMM_DTYPE_BF16, &w, &path));
    CHECK(path == QMM_PATH_MATERIALIZE, "a wide MXFP4 range plans materialize at every M (%s)", qmm_path_name(path));
    mm_case c = {QMM_FORMAT_MXFP4, 3, 33, 96, QMM_DTYPE_BF16, QMM_DTYPE_FP32, 0, QMM_ACT_NONE, 0, 0};
    mm_check_with(ctx, ref, &c, "mxfp4 raw", &w);
    CHECK_OK(qmm_context_set_path(ctx, QMM_PATH_GEMV));
    void *a = NULL, *cb = NULL;
    CHECK_OK(qmm_buffer_alloc(ctx, 96 * 2, &a));
    CHECK_OK(qmm_buffer_alloc(ctx, 33 * 4, &cb));
    CHECK_STATUS(qmm_matmul(ctx, 1, QMM_DTYPE_BF16, a, 96, &w, QMM_DTYPE_FP32, cb, 33, NULL), QMM_ERR_UNSUPPORTED);
    CHECK_OK(qmm_context_set_path(ctx, QMM_PATH_AUTO));
    qmm_weight_free(&w);

    mm_random_weight(&w, QMM_FORMAT_NVFP4, 33, 96);
    w.block_scales[7] = 0x7f; /* row 1 */
    CHECK_OK(qmm_weight_prepare(ctx, &w));
    uint16_t ah[96];
    float out[33];
    for (int i = 0; i < 96; i++) ah[i] = qmm_fp32_to_bf16((float)harness_normal());
    CHECK_OK(qmm_buffer_write(ctx, a, ah, sizeof ah));
    CHECK_OK(qmm_matmul(ctx, 1, QMM_DTYPE_BF16, a, 96, &w, QMM_DTYPE_FP32, cb, 33, NULL));
    CHECK_OK(qmm_buffer_read(ctx, out, cb, sizeof out));
    CHECK(isnan(out[1]) && !isnan(out[0]) && !isnan(out[2]), "a NaN scale gives its row NaN only");
    qmm_buffer_free(ctx, a), qmm_buffer_free(ctx, cb);
    qmm_weight_free(&w);
}

static void test_batch_invariance(void)
{
    CHECK_OK(qmm_context_set_path(ctx, QMM_PATH_GEMV));
    for (int f = 0; f < 4; f++) {
        mm_check_batch_invariance(ctx, formats[f], 200, 3000, 3, 7, "gemv 3 vs 7");
        mm_check_batch_invariance(ctx, formats[f], 100, 1000, 5, 21, "gemv 5 vs 21 (groups)");
    }
    CHECK_OK(qmm_context_set_path(ctx, QMM_PATH_FUSED));
    for (int f = 0; f < 4; f++) {
        mm_check_batch_invariance(ctx, formats[f], 300, 3000, 9, 30, "fused 9 vs 30 (16- and 32-row tiles)");
        mm_check_batch_invariance(ctx, formats[f], 200, 2000, 40, 130, "fused 40 vs 130 (one and three 64-row tiles)");
        /* on sm_90a NVFP4 and MXFP4 run 64-row tiles of bf16 rows by wgmma (the WG variant) and 32-row
         * tiles by mma.sync (PIPE), or by wgmma too where K has at most five splits or the override's wg = 2
         * (`test_cuda variants`: the WG variant's 32-row CTAs): the same bits (as
         * "unaligned 12 vs 40" below checks against WHOLE) */
        mm_check_batch_invariance(ctx, formats[f], 300, 3000, 30, 40, "fused 30 vs 40 (32- and 64-row tiles)");
        /* and the WG variant's 64-row CTAs against its 128-row ones (two M tiles, one wgmma m64n128k16) */
        mm_check_batch_invariance(ctx, formats[f], 300, 2000, 64, 100, "fused 64 vs 100 (WG 64- and 128-row CTAs)");
        /* and its 128-row CTAs against its 256-row ones (four M tiles, one wgmma m64n256k16) */
        mm_check_batch_invariance(ctx, formats[f], 300, 2000, 100, 200, "fused 100 vs 200 (WG 128- and 256-row CTAs)");
        /* and its 192-row CTAs (three M tiles, one wgmma m64n192k16) */
        mm_check_batch_invariance(ctx, formats[f], 300, 2000, 100, 150, "fused 100 vs 150 (WG 128- and 192-row CTAs)");
        /* FP8 takes the WG variant only over units of an even number of 32-column chunks (wg_choose), which
         * the two shapes above do not have (94 chunks in units of 9; 63): K = 2048 is 64 chunks in units
         * of 8, so FP8 runs WG there against 32-row tiles (PIPE, or WG where it takes them), and 64-
         * against 128-row CTAs */
        mm_check_batch_invariance(ctx, formats[f], 300, 2048, 30, 40, "fused K = 2048 30 vs 40 (32- and 64-row tiles)");
        mm_check_batch_invariance(ctx, formats[f], 300, 2048, 64, 100, "fused K = 2048 64 vs 100 (WG 64 and 128 rows)");
        mm_check_batch_invariance(ctx, formats[f], 300, 2048, 100, 200, "fused K = 2048 100 vs 200 (WG 128 and 256 rows)");
        mm_check_batch_invariance(ctx, formats[f], 300, 2048, 150, 200, "fused K = 2048 150 vs 200 (WG 192 and 256 rows)");
        /* past four M tiles: on a weight whose M tiles make two waves of 64-row tiles (64 strip groups)
         * one split of K (one_split_fits), on sm_90a in 256-row CTAs at M = 384 and 1000 and 64-row ones at
         * 520; on a narrower one (16 strip groups) the split of K to M = 1024, in the plans of wg_cost
         * (test_cuda_split checks these plans), each against the plan before it, in its last M group. Row
         * m's bits differ between M <= 256 and M > 256 on the first (the split), by design. */
        static const struct {
            size_t n, m1, m2;
            const char *what;
        } big_cases[] = {{8192, 384, 520, "fused 8192 x 2048 384 vs 520 (one split, 256 and 64 rows)"},
                         {8192, 520, 1000, "fused 8192 x 2048 520 vs 1000 (one split, 64 and 256 rows)"},
                         {2048, 200, 384, "fused 2048 x 2048 200 vs 384"},
                         {2048, 384, 520, "fused 2048 x 2048 384 vs 520"},
                         {2048, 520, 1000, "fused 2048 x 2048 520 vs 1000"}};
        for (int b = 0; b < 2; b++) {
            qmm_weight big;
            mm_random_weight(&big, formats[f], b ? 2048 : 8192, 2048); /* one weight for its cases (its quantization is the host's time) */
            CHECK_OK(qmm_weight_prepare(ctx, &big));
            for (size_t i = 0; i < sizeof big_cases / sizeof big_cases[0]; i++)
                if (big_cases[i].n == big.n)
                    mm_check_batch_invariance_w(ctx, &big, QMM_DTYPE_BF16, 2048, big_cases[i].m1, big_cases[i].m2, big_cases[i].what);
            qmm_weight_free(&big);
        }
        /* fp16 activations (the fp16 decodes): in rows not 16-byte aligned (lda 1500) WHOLE at 9 rows
         * (PIPE takes aligned rows only) against 70 rows (the WG variant, wgmma's f16 form, over
         * wg_stage_a's layout where wg_choose takes it, else STEP); in aligned rows the WG variant's CTAs
         * of 32 and 64, 64 and 128, 128 and 256, 192 and 256 rows against each other, as above */
        mm_check_batch_invariance_at(ctx, formats[f], QMM_DTYPE_FP16, 1500, 300, 1500, 9, 70, "fused fp16 9 vs 70");
        mm_check_batch_invariance_at(ctx, formats[f], QMM_DTYPE_FP16, 2048, 300, 2048, 30, 40, "fused fp16 K = 2048 30 vs 40");
        mm_check_batch_invariance_at(ctx, formats[f], QMM_DTYPE_FP16, 2048, 300, 2048, 64, 100, "fused fp16 K = 2048 64 vs 100");
        mm_check_batch_invariance_at(ctx, formats[f], QMM_DTYPE_FP16, 2048, 300, 2048, 100, 200, "fused fp16 K = 2048 100 vs 200");
        mm_check_batch_invariance_at(ctx, formats[f], QMM_DTYPE_FP16, 2048, 300, 2048, 150, 200, "fused fp16 K = 2048 150 vs 200");
        /* the STEP variant: bf16 rows that are not 16-byte aligned */
        mm_check_batch_invariance_at(ctx, formats[f], QMM_DTYPE_BF16, 1503, 300, 1501, 12, 40, "fused unaligned 12 vs 40");
        /* K so long that 16 staged rows of one split pass WHOLE's 100 KB even at pair mode's half split:
         * PIPE at 16 rows (4-tile stages in pair mode; WHOLE stages only M + 1 rows, so M = 16) against
         * 32-row tiles */
        mm_check_batch_invariance(ctx, formats[f], 40, 120000, 16, 30, "fused very long K 16 vs 30");
    }
    /* materialize: the same M, other rows different */
    CHECK_OK(qmm_context_set_path(ctx, QMM_PATH_MATERIALIZE));
    mm_check_batch_invariance(ctx, QMM_FORMAT_NVFP4, 300, 500, 64, 64, "materialize same M");
    CHECK_OK(qmm_context_set_path(ctx, QMM_PATH_AUTO));
}

/* Calls captured in a CUDA graph give the same bits as direct calls: a GEMV call and a materialize call
 * of M2 rows (with a small workspace, in chunks). With `set_stream`, the context starts on its own stream
 * and moves to the caller's with qmm_context_set_stream, then back to its own for a last direct call. */
static void graph_capture_case(size_t workspace, size_t N, size_t K, size_t M2, int set_stream)
{
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess, "stream");
    qmm_context *g = cuda_context(workspace, set_stream ? NULL : s);
    if (!g) return;
    if (set_stream) CHECK_OK(qmm_context_set_stream(g, s));
    const size_t M1 = 2;
    qmm_weight w;
    mm_random_weight(&w, QMM_FORMAT_NVFP4, N, K);
    CHECK_OK(qmm_weight_prepare(g, &w));
    uint16_t *ah = malloc((size_t)M2 * K * 2);
    for (size_t i = 0; i < (size_t)M2 * K; i++) ah[i] = qmm_fp32_to_bf16((float)harness_normal());
    void *a = mm_upload(g, ah, (size_t)M2 * K * 2), *c1 = NULL, *c2 = NULL;
    const size_t cbytes = (size_t)(M1 + M2) * N * 4;
    CHECK_OK(qmm_buffer_alloc(g, cbytes, &c1));
    CHECK_OK(qmm_buffer_alloc(g, cbytes, &c2));
    float *d1 = malloc(cbytes), *d2 = malloc(cbytes);
    /* direct */
    CHECK_OK(qmm_matmul(g, M1, QMM_DTYPE_BF16, a, K, &w, QMM_DTYPE_FP32, c1, N, NULL));
    CHECK_OK(qmm_matmul(g, M2, QMM_DTYPE_BF16, a, K, &w, QMM_DTYPE_FP32, (char *)c1 + (size_t)M1 * N * 4, N, NULL));
    CHECK_OK(qmm_buffer_read(g, d1, c1, cbytes));
    /* captured: a GEMV call and a materialize or fused call */
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess, "begin capture");
    CHECK_OK(qmm_matmul(g, M1, QMM_DTYPE_BF16, a, K, &w, QMM_DTYPE_FP32, c2, N, NULL));
    CHECK_OK(qmm_matmul(g, M2, QMM_DTYPE_BF16, a, K, &w, QMM_DTYPE_FP32, (char *)c2 + (size_t)M1 * N * 4, N, NULL));
    CHECK(cudaStreamEndCapture(s, &graph) == cudaSuccess, "end capture");
    CHECK(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess, "instantiate");
    for (int rep = 0; rep < 3; rep++) CHECK(cudaGraphLaunch(exec, s) == cudaSuccess, "launch");
    CHECK_OK(qmm_buffer_read(g, d2, c2, cbytes));
    CHECK(memcmp(d1, d2, cbytes) == 0, "graph replay differs from direct calls");
    if (set_stream) {
        CHECK_OK(qmm_context_set_stream(g, NULL));
        CHECK_OK(qmm_matmul(g, M2, QMM_DTYPE_BF16, a, K, &w, QMM_DTYPE_FP32, c2, N, NULL));
        CHECK_OK(qmm_buffer_read(g, d2, c2, (size_t)M2 * N * 4));
        CHECK(memcmp((char *)d1 + (size_t)M1 * N * 4, d2, (size_t)M2 * N * 4) == 0, "own stream after set_stream");
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    qmm_buffer_free(g, a), qmm_buffer_free(g, c1), qmm_buffer_free(g, c2);
    free(ah), free(d1), free(d2);
    qmm_weight_free(&w);
    qmm_context_destroy(g);
    cudaStreamDestroy(s);
}

static void test_graph_capture(void)
{
    graph_capture_case(0, 300, 2000, 200, 1);
    graph_capture_case((size_t)3 << 20, 1000, 1100, 600, 0);
    /* the fused path (M = 100; on sm_90a the WG variant, which launches its layout pass and its kernel,
     * in clusters where the splits reduce in one: the variants wgcl1 and wgcl2 run this with one and two
     * splits) */
    graph_capture_case(0, 300, 2000, 100, 0);
}

/* A second device, after the first has run every kernel variant: the kernels' shared-memory limits are
 * raised per device, so a process with contexts on two GPUs must work on both (on one GPU: nothing). */
static void test_second_device(void)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) {
        printf("test_cuda: one device, the second-device case skipped\n");
        return;
    }
    qmm_context_options o;
    qmm_context_options_init(&o);
    o.backend = QMM_BACKEND_CUDA;
    o.cuda_device = 1;
    qmm_context *d1 = NULL;
    CHECK_OK(qmm_context_create(&o, &d1));
    if (!d1) return;
    printf("test_cuda: second device: %s\n", qmm_context_describe(d1));
    char label[160];
    static const size_t ms[] = {1, 7, 16, 24, 40, 100};
    const qmm_path paths[3] = {QMM_PATH_GEMV, QMM_PATH_FUSED, QMM_PATH_MATERIALIZE};
    for (int p = 0; p < 3; p++) {
        CHECK_OK(qmm_context_set_path(d1, paths[p]));
        for (int f = 0; f < 4; f++)
            for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
                /* bf16 rows 16-byte aligned: PIPE for 40 and 100 rows, whose stages pass the default 48 KB
                 * of dynamic shared memory (it fails on a device whose limit was not raised) */
                mm_case c = {formats[f], ms[mi], 300, 4104, QMM_DTYPE_BF16, QMM_DTYPE_FP32, 0, QMM_ACT_NONE, 0, 0};
                snprintf(label, sizeof label, "device 1 %s format %d m %zu", qmm_path_name(paths[p]), (int)formats[f], c.m);
                mm_check(d1, ref, &c, label);
            }
    }
    /* the other variants past 48 KB: STEP (fp16 activations of NVFP4 and MXFP4; FP8's take PIPE), WHOLE
     * and PIPE at 16 rows on long K */
    CHECK_OK(qmm_context_set_path(d1, QMM_PATH_FUSED));
    for (int f = 0; f < 4; f++) {
        mm_case h = {formats[f], 40, 300, 4104, QMM_DTYPE_FP16, QMM_DTYPE_FP32, 0, QMM_ACT_NONE, 0, 0};
        snprintf(label, sizeof label, "device 1 fused fp16 format %d", (int)formats[f]);
        mm_check(d1, ref, &h, label);
        mm_case l = {formats[f], 16, 40, 70001, QMM_DTYPE_BF16, QMM_DTYPE_FP32, 0, QMM_ACT_NONE, 0, 0};
        snprintf(label, sizeof label, "device 1 fused long K format %d", (int)formats[f]);
        mm_check(d1, ref, &l, label);
    }
    qmm_context_destroy(d1);
}

static void test_bad_inputs(void)
{
    qmm_weight w;
    mm_random_weight(&w, QMM_FORMAT_NVFP4, 32, 64);
    void *a = NULL, *c = NULL;
    CHECK_OK(qmm_buffer_alloc(ctx, 4 * 64 * 4, &a));
    CHECK_OK(qmm_buffer_alloc(ctx, 4 * 32 * 4, &c));
    float poison[4 * 32];
    harness_poison(poison, sizeof poison);
    CHECK_OK(qmm_buffer_write(ctx, c, poison, sizeof poison));
    CHECK_STATUS(qmm_matmul(ctx, 4, QMM_DTYPE_BF16, a, 64, &w, QMM_DTYPE_FP32, c, 32, NULL), QMM_ERR_NOT_PREPARED);
    qmm_context *other = cuda_context(0, NULL);
    CHECK_OK(qmm_weight_prepare(other, &w));
    CHECK_STATUS(qmm_matmul(ctx, 4, QMM_DTYPE_BF16, a, 64, &w, QMM_DTYPE_FP32, c, 32, NULL), QMM_ERR_NOT_PREPARED);
    CHECK_OK(qmm_weight_prepare(ctx, &w)); /* replaces the other context's copy */
    CHECK_STATUS(qmm_matmul(ctx, 4, QMM_DTYPE_FP32, a, 64, &w, QMM_DTYPE_FP32, c, 32, NULL), QMM_ERR_UNSUPPORTED);
    qmm_path plan = (qmm_path)99;
    CHECK_STATUS(qmm_matmul_plan(ctx, 4, QMM_DTYPE_FP32, &w, &plan), QMM_ERR_UNSUPPORTED);
    CHECK(plan == (qmm_path)99, "a refused plan writes nothing");
    qmm_weight changed = w;
    changed.k = 65;
    CHECK_STATUS(qmm_matmul(ctx, 4, QMM_DTYPE_BF16, a, 65, &changed, QMM_DTYPE_FP32, c, 32, NULL), QMM_ERR_INVALID_WEIGHT);
    CHECK_OK(qmm_buffer_read(ctx, poison, c, sizeof poison));
    CHECK(harness_all_bytes(poison, sizeof poison, 0xff), "failed calls wrote C");
    void *huge = NULL;
    CHECK_STATUS(qmm_buffer_alloc(ctx, (size_t)1 << 50, &huge), QMM_ERR_OUT_OF_MEMORY);
    qmm_context_options o;
    qmm_context_options_init(&o);
    o.backend = QMM_BACKEND_CUDA, o.cuda_device = 999;
    qmm_context *bad = NULL;
    CHECK_STATUS(qmm_context_create(&o, &bad), QMM_ERR_INVALID_ARGUMENT);
    qmm_machine_rates r;
    CHECK_OK(qmm_context_measure_rates(ctx, (size_t)64 << 20, &r));
    CHECK(r.copy_gbps > 10.0, "copy bandwidth %.1f GB/s", r.copy_gbps);
    /* the GPU's clock through NVML where the driver's library is present (always with a driver; known = 0
     * is allowed, then with zeros); asked twice, as a benchmark does between batches */
    for (int i = 0; i < 2; i++) {
        qmm_machine_state ms;
        harness_poison(&ms, sizeof ms);
        CHECK_OK(qmm_context_machine_state(ctx, &ms));
        CHECK(ms.known ? ms.sm_mhz > 0.0 && ms.sm_mhz < 1e5 && ms.power_w >= 0.0 && ms.power_w < 1e4
                       : ms.sm_mhz == 0.0 && ms.power_w == 0.0 && ms.clock_reasons == 0,
              "machine state %d: %g MHz, %g W, reasons 0x%llx", ms.known, ms.sm_mhz, ms.power_w, ms.clock_reasons);
    }
    qmm_buffer_free(ctx, a), qmm_buffer_free(ctx, c);
    qmm_weight_free(&w);
    qmm_context_destroy(other);
}

/* Each test function's wall time on stdout (ctest keeps it in Testing/Temporary/LastTest.log), so that
 * the slow ones can be found: every `ctest -L cuda` waits for this program. */
static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
#define TIMED(call)                                                             \
    do {                                                                        \
        const double t0_ = seconds_now();                                       \
        call;                                                                   \
        printf("test_cuda: %-28s %6.1f s\n", #call, seconds_now() - t0_);      \
        fflush(stdout);                                                         \
    } while (0)

/* One suite on ctx (made with the current variant's override). */
static void run_suite(const char *suite)
{
    const int wg = strcmp(suite, "wg") == 0, full = strcmp(suite, "full") == 0;
    TIMED(test_paths_and_shapes());
    if (full) TIMED(test_types_and_epilogues());
    TIMED(test_exact_epilogue());
    if (!wg) TIMED(test_long_k());
    if (full) {
        TIMED(test_chunked_materialize());
        TIMED(test_raw_encodings());
        TIMED(test_dispatch_table());
        TIMED(test_dispatch_huge());
        TIMED(test_fused_small_workspace());
    }
    TIMED(test_batch_invariance());
    if (full || wg) TIMED(test_graph_capture());
    if (full) {
        TIMED(test_second_device());
        TIMED(test_bad_inputs());
    }
}

/* Pair mode's small run for compute-sanitizer (scripts/gpu_check.sh): the fused path on a short and a
 * very long K at 12, 16 and 40 rows, FP8 and NVFP4. */
static void test_pairs_small(void)
{
    static const size_t nk[2][2] = {{300, 1000}, {16, 60000}}, ms[3] = {12, 16, 40};
    static const qmm_format fs[2] = {QMM_FORMAT_FP8_TENSOR, QMM_FORMAT_NVFP4};
    CHECK_OK(qmm_context_set_path(ctx, QMM_PATH_FUSED));
    for (int s = 0; s < 2; s++)
        for (int f = 0; f < 2; f++)
            for (int i = 0; i < 3; i++) {
                mm_case c = {fs[f], ms[i], nk[s][0], nk[s][1], QMM_DTYPE_BF16, QMM_DTYPE_BF16, 0, QMM_ACT_NONE, 0, 0};
                mm_check(ctx, ref, &c, "pair mode, small");
            }
    CHECK_OK(qmm_context_set_path(ctx, QMM_PATH_AUTO));
}

/* Usage: test_cuda                  every test under the plan's rules (ctest test_cuda)
 *        test_cuda variants [NAME]  each variant of `variants` in turn, or only NAME (test_cuda_variants)
 *        test_cuda pairs-small      pair mode's small run (for compute-sanitizer) */
int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    const int var = strcmp(mode, "variants") == 0, small = strcmp(mode, "pairs-small") == 0;
    const char *only = var && argc > 2 ? argv[2] : NULL;
    const char *name = var ? "test_cuda variants" : small ? "test_cuda pairs-small" : "test_cuda";
    harness_begin(name);
    if (!var && !small && mode[0]) {
        fprintf(stderr, "test_cuda: unknown mode '%s' (variants [NAME], pairs-small)\n", mode);
        return 2;
    }
    if (qmm_backend_available(QMM_BACKEND_CUDA) != QMM_OK) {
        printf("test_cuda: skipped: %s\n", qmm_last_error());
        return 77;
    }
    qmm_context_options o;
    qmm_context_options_init(&o);
    o.backend = QMM_BACKEND_REFERENCE;
    CHECK_OK(qmm_context_create(&o, &ref));
    if (!ref) return harness_end(name);
    if (!var) {
        if (small) CHECK(qmm__cuda_override_parse("pairs=1", &plan_override), "the pair mode override");
        ctx = cuda_context(0, NULL);
        if (!ctx) return harness_end(name);
        printf("test_cuda: %s\n", qmm_context_describe(ctx));
        if (small) test_pairs_small();
        else run_suite("full");
        qmm_context_destroy(ctx);
    }
    int ran = 0;
    for (size_t i = 0; var && i < sizeof variants / sizeof variants[0]; i++) {
        if (only && strcmp(only, variants[i].name) != 0) continue;
        const qmm__cuda_override rules = QMM__CUDA_OVERRIDE_DEFAULT;
        plan_override = rules;
        CHECK(qmm__cuda_override_parse(variants[i].override, &plan_override), "variant %s: override '%s'", variants[i].name,
              variants[i].override);
        ctx = cuda_context(0, NULL);
        if (!ctx) break;
        printf("test_cuda: variant %s (%s): %s\n", variants[i].name, variants[i].override, variants[i].what);
        fflush(stdout);
        const long failed = harness_failures;
        const double t0 = seconds_now();
        run_suite(variants[i].suite);
        printf("test_cuda: variant %s: %s in %.1f s\n", variants[i].name, harness_failures == failed ? "passed" : "FAILED",
               seconds_now() - t0);
        qmm_context_destroy(ctx);
        ran++;
    }
    CHECK(!var || ran > 0, "no variant named '%s'", only ? only : "");
    qmm_context_destroy(ref);
    return harness_end(name);
}
