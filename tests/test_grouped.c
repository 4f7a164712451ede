/* Stacks of experts and qmm_matmul_grouped, on the reference backend and on the CPU backend (once per
 * instruction set, QMM_ISA as CTest sets it):
 * - a stack quantizes and dequantizes exactly as its experts one by one; its checks refuse short strides
 *   and capacities; a strided stack (gaps between experts) multiplies like a packed one;
 * - random routings (tokens to top-k distinct experts, gathered through a row index, routing weights as
 *   row scales, per-expert bias, every format, activation and type, odd N and K not a multiple of any
 *   block) against the reference backend's grouped call within the fp32 accumulation bound; the
 *   reference's grouped call against qmm_matmul per expert;
 * - all rows on one expert, every expert empty but one, m = 0;
 * - E = 1 gives qmm_matmul's bits; a row's bits do not depend on the other rows of its expert on a path;
 * - bad offsets, row indices and stacks in qmm_matmul are refused with C untouched. */
#include <stdbool.h>

#include "cpu_isa.h"
#include "matmul_check.h"

static const qmm_format formats[] = {QMM_FORMAT_NVFP4, QMM_FORMAT_MXFP4, QMM_FORMAT_FP8_TENSOR, QMM_FORMAT_FP8_CHANNEL,
                                     QMM_FORMAT_BF16};

/* A random stack of `experts` x n x k of format f, each expert with rows of its own magnitudes. */
static void random_stack(qmm_weight *w, qmm_format f, size_t experts, size_t n, size_t k)
{
    float *src = malloc(experts * n * k * sizeof(float));
    for (size_t i = 0; i < experts * n * k; i++)
        src[i] = (float)(harness_normal() * ldexp(1.0, (int)((i / k) % 5) - 2 + (int)(i / (n * k))));
    CHECK_OK(qmm_weight_alloc_experts(w, f, experts, n, k));
    CHECK_OK(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src, k, w));
    free(src);
}

/* A routing of `tokens` tokens to `topk` distinct experts each: the grouped order (rows of expert 0,
 * then 1, ...), the token of each row (row_index) and the offsets. Returns m = tokens * topk. */
static size_t random_routing(size_t tokens, size_t topk, size_t experts, size_t *offsets, int32_t *row_index)
{
    size_t *choice = malloc(tokens * topk * sizeof *choice);
    for (size_t t = 0; t < tokens; t++)
        for (size_t j = 0; j < topk; j++) {
            size_t e;
            int fresh;
            do { /* distinct experts per token */
                e = harness_next() % experts;
                fresh = 1;
                for (size_t i = 0; i < j; i++) fresh &= choice[t * topk + i] != e;
            } while (!fresh);
            choice[t * topk + j] = e;
        }
    size_t m = 0;
    for (size_t e = 0; e < experts; e++) {
        offsets[e] = m;
        for (size_t t = 0; t < tokens; t++)
            for (size_t j = 0; j < topk; j++)
                if (choice[t * topk + j] == e) row_index[m++] = (int32_t)t;
    }
    offsets[experts] = m;
    free(choice);
    return m;
}

typedef struct grouped_case {
    qmm_format format;
    size_t experts, n, k, tokens;
    size_t m;
    size_t *offsets;
    int32_t *row_index;          /* NULL: no gather (A has m rows) */
    qmm_dtype a_type, c_type;
    qmm_grouped_epilogue epi;    /* bias and row_scale set by the case */
} grouped_case;

/* C of the grouped call on ctx (poisoned first; C_in where beta reads it) into a new host array. */
static void *run_grouped(qmm_context *ctx, const grouped_case *g, const qmm_weight *w, const void *a, size_t a_rows,
                         const void *cin, qmm_status *st)
{
    const size_t cb = g->m * g->n * mm_elem(g->c_type);
    void *c = malloc(cb ? cb : 1);
    if (g->epi.beta != 0.0f) memcpy(c, cin, cb);
    else harness_poison(c, cb);
    *st = qmm_matmul_grouped(ctx, g->m, g->offsets, g->row_index, a_rows, g->a_type, a, g->k, w, g->c_type, c, g->n, &g->epi);
    return c;
}

/* got against want within the fp32 accumulation bound of each element (as matmul_check.h). */
static void compare(const grouped_case *g, const qmm_weight *w, const void *a, const void *cin, const void *got,
                    const void *want, const char *label)
{
    const size_t n = g->n, k = g->k;
    float *deq = malloc(g->experts * n * k * sizeof(float)), *aabs = malloc(k * sizeof(float));
    qmm_weight host = *w;
    host.prepared = NULL;
    CHECK_OK(qmm_dequantize(&host, 0, QMM_DTYPE_FP32, deq, k));
    long bad = 0;
    for (size_t e = 0; e < g->experts; e++)
        for (size_t i = g->offsets[e]; i < g->offsets[e + 1]; i++) {
            const size_t src = g->row_index ? (size_t)g->row_index[i] : i;
            for (size_t t = 0; t < k; t++) aabs[t] = fabsf(mm_load(g->a_type, a, src * k + t));
            const double rs = g->epi.row_scale ? fabs((double)g->epi.row_scale[i]) : 1.0;
            for (size_t j = 0; j < n; j++) {
                double s = 0; /* sum |a| |w|: bounds the fp32 accumulation error */
                for (size_t t = 0; t < k; t++) s += (double)aabs[t] * fabsf(deq[(e * n + j) * k + t]);
                double other = 0;
                if (g->epi.bias) other += fabs((double)g->epi.bias[e * n + j]);
                if (g->epi.beta != 0.0f) other += fabs((double)g->epi.beta * mm_load(g->c_type, cin, i * n + j));
                const double wv = mm_load(g->c_type, want, i * n + j), gv = mm_load(g->c_type, got, i * n + j);
                const double tol = rs * 1.25 * (16.0 * sqrt((double)k) * 0x1p-24 * fabs((double)g->epi.alpha) * s + 0x1p-21 * other) +
                                   16 * 0x1p-24 * fabs(wv) + mm_ulp(g->c_type, fabs(wv)) + 1e-30;
                if (!(fabs(gv - wv) <= tol) && bad++ < 5)
                    CHECK(0, "%s: C[%zu,%zu] (expert %zu) = %.8g, reference %.8g, bound %.3g (format %d, E %zu, %zu x %zu, %s -> %s)",
                          label, i, j, e, gv, wv, tol, (int)g->format, g->experts, n, k, qmm_dtype_name(g->a_type),
                          qmm_dtype_name(g->c_type));
            }
        }
    CHECK(bad == 0, "%s: %ld elements outside the bound", label, bad);
    free(deq);
    free(aabs);
}

/* One random case on ctx against the reference context ref. */
static void random_case(qmm_context *ctx, qmm_context *ref, qmm_format f, bool prepare, const char *label)
{
    grouped_case g;
    memset(&g, 0, sizeof g);
    g.format = f;
    g.experts = 1 + harness_next() % 9;
    g.n = 1 + harness_next() % 70;
    g.k = 1 + harness_next() % 200;
    g.tokens = 1 + harness_next() % 24;
    const size_t topk = 1 + harness_next() % (g.experts < 4 ? g.experts : 4);
    g.offsets = malloc((g.experts + 1) * sizeof *g.offsets);
    g.row_index = malloc(g.tokens * topk * sizeof *g.row_index);
    g.m = random_routing(g.tokens, topk, g.experts, g.offsets, g.row_index);
    static const qmm_dtype types[3] = {QMM_DTYPE_BF16, QMM_DTYPE_FP16, QMM_DTYPE_FP32};
    g.a_type = types[harness_next() % 3];
    g.c_type = types[harness_next() % 3];
    qmm_grouped_epilogue_init(&g.epi);
    g.epi.activation = (qmm_activation)(harness_next() % 5);
    float *bias = malloc(g.experts * g.n * sizeof(float)), *rs = malloc(g.m * sizeof(float));
    for (size_t i = 0; i < g.experts * g.n; i++) bias[i] = (float)harness_normal();
    for (size_t i = 0; i < g.m; i++) rs[i] = (float)harness_uniform();
    if (harness_next() % 2) g.epi.bias = bias;
    if (harness_next() % 2) g.epi.row_scale = rs;
    if (harness_next() % 3 == 0) g.epi.alpha = 0.75f, g.epi.beta = -0.5f;
    qmm_weight w;
    random_stack(&w, f, g.experts, g.n, g.k);
    if (prepare) CHECK_OK(qmm_weight_prepare(ctx, &w));
    void *a = malloc(g.tokens * g.k * mm_elem(g.a_type)), *cin = malloc(g.m * g.n * mm_elem(g.c_type) + 1);
    for (size_t i = 0; i < g.tokens * g.k; i++) mm_store(g.a_type, a, i, (float)harness_normal());
    for (size_t i = 0; i < g.m * g.n; i++) mm_store(g.c_type, cin, i, (float)harness_normal());
    qmm_status s1, s2;
    qmm_weight host = w;
    host.prepared = NULL;
    void *want = run_grouped(ref, &g, &host, a, g.tokens, cin, &s1);
    void *got = run_grouped(ctx, &g, &w, a, g.tokens, cin, &s2);
    CHECK(s1 == QMM_OK && s2 == QMM_OK, "%s: grouped calls failed (%d, %d): %s", label, (int)s1, (int)s2, qmm_last_error());
    if (s1 == QMM_OK && s2 == QMM_OK) compare(&g, &w, a, cin, got, want, label);
    qmm_weight_free(&w);
    free(a), free(cin), free(want), free(got), free(bias), free(rs), free(g.offsets), free(g.row_index);
}

/* The reference's grouped call against qmm_matmul per expert on its gathered rows: without row scales
 * the same bits (the same arithmetic), with them within a rounding of the output. */
static void reference_against_matmul(qmm_context *ref)
{
    for (int rep = 0; rep < 6; rep++) {
        const qmm_format f = formats[rep % 5];
        const size_t experts = 2 + harness_next() % 5, n = 1 + harness_next() % 40, k = 1 + harness_next() % 100, tokens = 7;
        size_t offsets[8];
        int32_t rows[7 * 2];
        const size_t m = random_routing(tokens, 2, experts, offsets, rows);
        qmm_weight w;
        random_stack(&w, f, experts, n, k);
        float *a = malloc(tokens * k * 4), *c = malloc(m * n * 4), *ce = malloc(m * n * 4), *bias = malloc(experts * n * 4);
        for (size_t i = 0; i < tokens * k; i++) a[i] = (float)harness_normal();
        for (size_t i = 0; i < experts * n; i++) bias[i] = (float)harness_normal();
        qmm_grouped_epilogue ge;
        qmm_grouped_epilogue_init(&ge);
        ge.bias = bias, ge.activation = QMM_ACT_SILU;
        CHECK_OK(qmm_matmul_grouped(ref, m, offsets, rows, tokens, QMM_DTYPE_FP32, a, k, &w, QMM_DTYPE_FP32, c, n, &ge));
        float *ag = malloc(m * k * 4);
        for (size_t i = 0; i < m; i++) memcpy(ag + i * k, a + (size_t)rows[i] * k, k * 4);
        for (size_t e = 0; e < experts; e++) {
            const size_t r0 = offsets[e], cnt = offsets[e + 1] - r0;
            if (!cnt) continue;
            qmm_weight one = w; /* expert e alone: its buffers and scales */
            qmm_weight_size sz;
            CHECK_OK(qmm_weight_size_query(f, QMM_SCALE_LAYOUT_CANONICAL, n, k, &sz));
            one.experts = 1, one.tensor_scales = NULL;
            one.data = w.data + e * sz.data_bytes, one.data_bytes = sz.data_bytes;
            one.block_scales = w.block_scales ? w.block_scales + e * sz.block_scale_bytes : NULL;
            one.block_scale_bytes = sz.block_scale_bytes;
            one.channel_scales = w.channel_scales ? w.channel_scales + e * n : NULL;
            one.channel_scale_count = sz.channel_scale_count;
            if (w.tensor_scales) one.tensor_scale = w.tensor_scales[e];
            qmm_epilogue me;
            qmm_epilogue_init(&me);
            me.bias = bias + e * n, me.activation = QMM_ACT_SILU;
            CHECK_OK(qmm_matmul(ref, cnt, QMM_DTYPE_FP32, ag + r0 * k, k, &one, QMM_DTYPE_FP32, ce + r0 * n, n, &me));
        }
        CHECK(memcmp(c, ce, m * n * 4) == 0, "reference grouped: not qmm_matmul's bits per expert (format %d)", (int)f);
        qmm_weight_free(&w);
        free(a), free(c), free(ce), free(bias), free(ag);
    }
}

/* E = 1 without gather or row scale is qmm_matmul bit for bit; a row's bits do not depend on the other
 * rows of its expert within a path (GEMV up to 32 rows, GEMM from 33 on the CPU). */
static void bits_and_invariance(qmm_context *ctx, const char *label)
{
    for (size_t fi = 0; fi < 5; fi++) {
        const qmm_format f = formats[fi];
        const size_t n = 37, k = 150;
        qmm_weight w1, w3;
        random_stack(&w1, f, 1, n, k);
        random_stack(&w3, f, 3, n, k);
        CHECK_OK(qmm_weight_prepare(ctx, &w1));
        CHECK_OK(qmm_weight_prepare(ctx, &w3));
        const size_t ms[3] = {1, 9, 40};
        uint16_t *a = malloc(80 * k * 2);
        float *c1 = malloc(80 * n * 4), *c2 = malloc(80 * n * 4), *bias = malloc(3 * n * 4);
        for (size_t i = 0; i < 80 * k; i++) a[i] = qmm_fp32_to_bf16((float)harness_normal());
        for (size_t i = 0; i < 3 * n; i++) bias[i] = (float)harness_normal();
        for (int t = 0; t < 3; t++) {
            const size_t m = ms[t], offs[2] = {0, m};
            qmm_epilogue e;
            qmm_epilogue_init(&e);
            e.bias = bias, e.activation = QMM_ACT_GELU;
            qmm_grouped_epilogue ge;
            qmm_grouped_epilogue_init(&ge);
            ge.bias = bias, ge.activation = QMM_ACT_GELU;
            harness_poison(c1, m * n * 4), harness_poison(c2, m * n * 4);
            CHECK_OK(qmm_matmul(ctx, m, QMM_DTYPE_BF16, a, k, &w1, QMM_DTYPE_FP32, c1, n, &e));
            CHECK_OK(qmm_matmul_grouped(ctx, m, offs, NULL, m, QMM_DTYPE_BF16, a, k, &w1, QMM_DTYPE_FP32, c2, n, &ge));
            CHECK(memcmp(c1, c2, m * n * 4) == 0, "%s: E = 1 is not qmm_matmul bit for bit (format %d, m %zu)", label, (int)f, m);
        }
        /* row 0 of expert 1: alone and among 20 (both GEMV; dense bf16 takes the GEMV to 6 rows), among 40
         * and 60 (both GEMM) */
        const size_t counts[4] = {1, f == QMM_FORMAT_BF16 ? 5 : 20, 40, 60};
        float *first[4];
        for (int t = 0; t < 4; t++) {
            const size_t cnt = counts[t], offs[4] = {0, 5, 5 + cnt, 5 + cnt + 2}, m = offs[3];
            int32_t *rows = malloc(m * sizeof *rows);
            for (size_t i = 0; i < m; i++) rows[i] = (int32_t)(harness_next() % 80);
            rows[5] = 3; /* the row watched */
            float *c = malloc(m * n * 4);
            CHECK_OK(qmm_matmul_grouped(ctx, m, offs, rows, 80, QMM_DTYPE_BF16, a, k, &w3, QMM_DTYPE_FP32, c, n, NULL));
            first[t] = malloc(n * 4);
            memcpy(first[t], c + 5 * n, n * 4);
            free(rows);
            free(c);
        }
        CHECK(memcmp(first[0], first[1], n * 4) == 0, "%s: a row's bits change with the other rows (GEMV, format %d)", label, (int)f);
        CHECK(memcmp(first[2], first[3], n * 4) == 0, "%s: a row's bits change with the other rows (GEMM, format %d)", label, (int)f);
        for (int t = 0; t < 4; t++) free(first[t]);
        qmm_weight_free(&w1);
        qmm_weight_free(&w3);
        free(a), free(c1), free(c2), free(bias);
    }
}

/* All rows on one expert, all experts empty but one, m = 0, and the argument checks. */
static void edges_and_errors(qmm_context *ctx, qmm_context *ref, const char *label)
{
    const size_t experts = 5, n = 19, k = 70, tokens = 6;
    qmm_weight w;
    random_stack(&w, QMM_FORMAT_NVFP4, experts, n, k);
    CHECK_OK(qmm_weight_prepare(ctx, &w));
    qmm_weight host = w;
    host.prepared = NULL;
    float *a = malloc(tokens * k * 4), *c = malloc(tokens * n * 4), *cr = malloc(tokens * n * 4);
    for (size_t i = 0; i < tokens * k; i++) a[i] = (float)harness_normal();
    int32_t rows[6] = {5, 0, 3, 3, 1, 2};
    for (size_t e = 0; e < experts; e++) { /* every row on expert e, the rest empty */
        size_t offs[6];
        for (size_t i = 0; i <= experts; i++) offs[i] = i <= e ? 0 : tokens;
        harness_poison(c, tokens * n * 4);
        CHECK_OK(qmm_matmul_grouped(ctx, tokens, offs, rows, tokens, QMM_DTYPE_FP32, a, k, &w, QMM_DTYPE_FP32, c, n, NULL));
        CHECK_OK(qmm_matmul_grouped(ref, tokens, offs, rows, tokens, QMM_DTYPE_FP32, a, k, &host, QMM_DTYPE_FP32, cr, n, NULL));
        double num = 0, den = 0;
        for (size_t i = 0; i < tokens * n; i++) num += (c[i] - cr[i]) * (c[i] - cr[i]), den += (double)cr[i] * cr[i];
        CHECK(den > 0 && sqrt(num / den) < 1e-5, "%s: all rows on expert %zu: error %.3g", label, e, sqrt(num / (den + 1e-300)));
    }
    const size_t zero[6] = {0, 0, 0, 0, 0, 0};
    CHECK_OK(qmm_matmul_grouped(ctx, 0, zero, NULL, 0, QMM_DTYPE_FP32, NULL, k, &w, QMM_DTYPE_FP32, NULL, n, NULL));

    harness_poison(c, tokens * n * 4);
    const size_t good[6] = {0, 1, 1, 3, 5, 6}, descending[6] = {0, 2, 1, 3, 5, 6}, not_zero[6] = {1, 1, 1, 3, 5, 6},
                 past[6] = {0, 1, 1, 3, 5, 7}, short_[6] = {0, 1, 1, 3, 5, 5};
    const qmm_dtype F = QMM_DTYPE_FP32;
    CHECK_STATUS(qmm_matmul_grouped(ctx, tokens, descending, rows, tokens, F, a, k, &w, F, c, n, NULL), QMM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(qmm_matmul_grouped(ctx, tokens, not_zero, rows, tokens, F, a, k, &w, F, c, n, NULL), QMM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(qmm_matmul_grouped(ctx, tokens, past, rows, tokens, F, a, k, &w, F, c, n, NULL), QMM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(qmm_matmul_grouped(ctx, tokens, short_, rows, tokens, F, a, k, &w, F, c, n, NULL), QMM_ERR_INVALID_ARGUMENT);
    int32_t bad_rows[6] = {5, 0, 3, 6, 1, 2}, negative[6] = {5, 0, -1, 3, 1, 2};
    CHECK_STATUS(qmm_matmul_grouped(ctx, tokens, good, bad_rows, tokens, F, a, k, &w, F, c, n, NULL), QMM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(qmm_matmul_grouped(ctx, tokens, good, negative, tokens, F, a, k, &w, F, c, n, NULL), QMM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(qmm_matmul_grouped(ctx, tokens, good, NULL, tokens - 1, F, a, k, &w, F, c, n, NULL), QMM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(qmm_matmul_grouped(ctx, tokens, NULL, rows, tokens, F, a, k, &w, F, c, n, NULL), QMM_ERR_NULL_POINTER);
    CHECK_STATUS(qmm_matmul_grouped(ctx, tokens, good, rows, tokens, F, NULL, k, &w, F, c, n, NULL), QMM_ERR_NULL_POINTER);
    CHECK_STATUS(qmm_matmul_grouped(ctx, tokens, good, rows, tokens, F, a, k - 1, &w, F, c, n, NULL), QMM_ERR_INVALID_STRIDE);
    CHECK_STATUS(qmm_matmul_grouped(ctx, tokens, good, rows, tokens, F, a, k, &w, F, a, n, NULL), QMM_ERR_INVALID_ARGUMENT);
    qmm_grouped_epilogue ge;
    qmm_grouped_epilogue_init(&ge);
    ge.alpha = NAN;
    CHECK_STATUS(qmm_matmul_grouped(ctx, tokens, good, rows, tokens, F, a, k, &w, F, c, n, &ge), QMM_ERR_NON_FINITE);
    CHECK_STATUS(qmm_matmul(ctx, 2, F, a, k, &w, F, c, n, NULL), QMM_ERR_INVALID_ARGUMENT); /* a stack */
    CHECK(harness_all_bytes(c, tokens * n * 4, 0xff), "%s: a refused grouped call wrote C", label);
    qmm_weight_free(&w);
    free(a), free(c), free(cr);
}

/* Stacks against their experts one by one, their checks, and a strided stack. */
static void stacks(qmm_context *ctx)
{
    for (size_t fi = 0; fi < 5; fi++) {
        const qmm_format f = formats[fi];
        const size_t experts = 3, n = 9, k = 45;
        float *src = malloc(experts * n * k * 4), *d1 = malloc(experts * n * k * 4), *d2 = malloc(n * k * 4);
        for (size_t i = 0; i < experts * n * k; i++) src[i] = (float)(harness_normal() * (1 + (double)(i / (n * k))));
        qmm_weight st, one;
        CHECK_OK(qmm_weight_alloc_experts(&st, f, experts, n, k));
        CHECK_OK(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src, k, &st));
        CHECK_OK(qmm_dequantize(&st, 0, QMM_DTYPE_FP32, d1, k));
        qmm_weight_size sz;
        CHECK_OK(qmm_weight_size_query(f, QMM_SCALE_LAYOUT_CANONICAL, n, k, &sz));
        for (size_t e = 0; e < experts; e++) {
            CHECK_OK(qmm_weight_alloc(&one, f, n, k));
            CHECK_OK(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src + e * n * k, k, &one));
            CHECK(memcmp(one.data, st.data + e * sz.data_bytes, sz.data_bytes) == 0, "stack data of expert %zu (format %d)", e, (int)f);
            if (sz.block_scale_bytes)
                CHECK(memcmp(one.block_scales, st.block_scales + e * sz.block_scale_bytes, sz.block_scale_bytes) == 0,
                      "stack scales of expert %zu", e);
            if (st.tensor_scales) CHECK(one.tensor_scale == st.tensor_scales[e], "tensor scale of expert %zu", e);
            if (sz.channel_scale_count)
                CHECK(memcmp(one.channel_scales, st.channel_scales + e * n, n * 4) == 0, "channel scales of expert %zu", e);
            CHECK_OK(qmm_dequantize(&one, 0, QMM_DTYPE_FP32, d2, k));
            CHECK(memcmp(d2, d1 + e * n * k, n * k * 4) == 0, "stack dequantized rows of expert %zu", e);
            qmm_weight_free(&one);
        }
        /* checks */
        qmm_weight b = st;
        b.data_bytes -= 1;
        CHECK_STATUS(qmm_weight_validate(&b), QMM_ERR_BUFFER_TOO_SMALL);
        b = st, b.expert_stride = sz.data_bytes - 1;
        CHECK_STATUS(qmm_weight_validate(&b), QMM_ERR_INVALID_WEIGHT);
        if (st.tensor_scales) {
            b = st, b.tensor_scales = NULL;
            CHECK_STATUS(qmm_weight_validate(&b), QMM_ERR_INVALID_WEIGHT);
            b = st, st.tensor_scales[1] = INFINITY;
            CHECK_STATUS(qmm_weight_validate(&b), QMM_ERR_INVALID_WEIGHT);
            st.tensor_scales[1] = 1.0f;
        }
        if (sz.channel_scale_count) {
            b = st, b.channel_scale_count = experts * n - 1;
            CHECK_STATUS(qmm_weight_validate(&b), QMM_ERR_BUFFER_TOO_SMALL);
        }
        /* the same experts at a stride with gaps multiply as the packed stack */
        const size_t gap = 24;
        qmm_weight sp = st;
        sp.expert_stride = sz.data_bytes + gap;
        sp.data = malloc(experts * sp.expert_stride);
        sp.data_bytes = experts * sp.expert_stride;
        memset(sp.data, 0x77, sp.data_bytes);
        for (size_t e = 0; e < experts; e++) memcpy(sp.data + e * sp.expert_stride, st.data + e * sz.data_bytes, sz.data_bytes);
        CHECK_OK(qmm_weight_validate(&sp));
        const size_t offs[4] = {0, 2, 2, 5};
        const int32_t rows[5] = {1, 0, 2, 2, 0};
        float a[3 * 45], c1[5 * 9], c2[5 * 9];
        for (size_t i = 0; i < 3 * k; i++) a[i] = (float)harness_normal();
        CHECK_OK(qmm_matmul_grouped(ctx, 5, offs, rows, 3, QMM_DTYPE_FP32, a, k, &st, QMM_DTYPE_FP32, c1, n, NULL));
        CHECK_OK(qmm_matmul_grouped(ctx, 5, offs, rows, 3, QMM_DTYPE_FP32, a, k, &sp, QMM_DTYPE_FP32, c2, n, NULL));
        CHECK(memcmp(c1, c2, sizeof c1) == 0, "a strided stack multiplies as the packed one (format %d)", (int)f);
        free(sp.data);
        qmm_weight_free(&st);
        free(src), free(d1), free(d2);
    }
}

static qmm_context *ref_ctx;

static int run_cpu(const char *isa)
{
    const char *name;
    qmm_context *ctx = cpu_isa_context("test_grouped", isa, &name);
    if (!ctx) return 0;
    char label[64];
    snprintf(label, sizeof label, "cpu %s", name ? name : "auto");
    for (int rep = 0; rep < 30; rep++) random_case(ctx, ref_ctx, formats[rep % 5], rep % 6 != 5, label);
    bits_and_invariance(ctx, label);
    edges_and_errors(ctx, ref_ctx, label);
    stacks(ctx);
    qmm_context_destroy(ctx);
    return 1;
}

int main(void)
{
    harness_begin("test_grouped");
    qmm_context_options o;
    qmm_context_options_init(&o);
    o.backend = QMM_BACKEND_REFERENCE;
    CHECK_OK(qmm_context_create(&o, &ref_ctx));
    reference_against_matmul(ref_ctx);
    stacks(ref_ctx);
    edges_and_errors(ref_ctx, ref_ctx, "reference");
    if (qmm_backend_available(QMM_BACKEND_CPU) == QMM_OK) cpu_isa_each(run_cpu);
    else printf("test_grouped: SKIPPED the CPU backend: not built in\n");
    qmm_context_destroy(ref_ctx);
    return harness_end("test_grouped");
}
