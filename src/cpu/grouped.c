/* The CPU backend's grouped call over a stack of experts (qmm_matmul_grouped):
 * - the rows of A are gathered once (when the call has a row index) into a copy in A's type, so each
 *   expert reads its rows as one strided block, as qmm_matmul does;
 * - experts whose rows take the GEMV (few rows) run together in one parallel schedule over (expert,
 *   tile of 16 rows of W) pairs, split into one contiguous range of pairs per thread: when most experts
 *   hold one or two rows (decode), every thread streams its share of the touched weights instead of
 *   waking for each expert;
 * - experts whose rows take the GEMM run one after another, each over all threads (driver.c).
 * A row's sums are formed as in qmm_matmul on the same path, so the call is batch invariant within a
 * path, and with one expert it is qmm_matmul bit for bit. */
#include <stdlib.h>
#include <string.h>

#include "../core/convert.h"
#include "../core/error.h"
#include "../core/format.h"
#include "../core/weight.h"
#include "cpu.h"

/* A prepared stack: one prepared copy per expert. */
typedef struct qmm__cpu_stack {
    qmm_prepared head; /* must be first */
    size_t experts;
    qmm__cpu_weight **each;
} qmm__cpu_stack;

static void qmm__cpu_stack_release(qmm_prepared *self)
{
    qmm__cpu_stack *st = (qmm__cpu_stack *)(void *)self;
    for (size_t e = 0; e < st->experts; e++)
        if (st->each[e]) st->each[e]->head.release(&st->each[e]->head);
    free(st->each);
    free(st);
}

qmm_status qmm__cpu_prepare_stack(const qmm_weight *w, qmm_prepared **out)
{
    const size_t experts = qmm__weight_experts(w);
    qmm__cpu_stack *st = calloc(1, sizeof *st);
    qmm__cpu_weight **each = calloc(experts, sizeof *each);
    if (!st || !each) {
        free(st);
        free(each);
        return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "qmm_weight_prepare (cpu): cannot allocate a stack of %zu experts", experts);
    }
    st->head.release = qmm__cpu_stack_release;
    st->experts = experts;
    st->each = each;
    for (size_t e = 0; e < experts; e++) {
        qmm_weight one;
        qmm__weight_expert(w, e, &one);
        qmm_status s = qmm__cpu_prepare_weight(&one, &each[e]);
        if (s != QMM_OK) {
            qmm__cpu_stack_release(&st->head);
            return s;
        }
    }
    *out = &st->head;
    return QMM_OK;
}

/* One expert's share of a GEMV schedule. */
typedef struct qmm__gemv_segment {
    qmm__cpu_gemv_fn fn;
    qmm__cpu_gemv_args args;
    qmm__cpu_epi epi;
    size_t first; /* its first pair in the schedule; it has args.w->tiles of them */
} qmm__gemv_segment;

typedef struct qmm__grouped_gemv_job {
    const qmm__gemv_segment *seg;
    size_t count, pairs;
} qmm__grouped_gemv_job;

/* Thread tid's share of every expert: its contiguous range of each expert's tiles. Every thread streams
 * part of each expert, as in qmm_matmul's GEMV, so an expert with more rows costs every thread alike. */
static void qmm__grouped_gemv_worker(void *arg, int tid, int nt)
{
    const qmm__grouped_gemv_job *j = arg;
    for (size_t i = 0; i < j->count; i++) {
        const qmm__gemv_segment *g = &j->seg[i];
        const size_t tiles = g->args.w->tiles;
        const size_t a = tiles * (size_t)tid / (size_t)nt, b = tiles * (size_t)(tid + 1) / (size_t)nt;
        if (a < b) g->fn(&g->args, a, b);
    }
}

typedef struct qmm__gather_job {
    const qmm__grouped_args *x;
    void *out;        /* m rows of k: A's type, or fp32 */
    bool fp32;
} qmm__gather_job;

static void qmm__gather_worker(void *arg, int tid, int nt)
{
    const qmm__gather_job *j = arg;
    const qmm__grouped_args *x = j->x;
    const size_t esize = qmm__dtype_size(x->a_type), r0 = x->m * (size_t)tid / (size_t)nt;
    const size_t r1 = x->m * (size_t)(tid + 1) / (size_t)nt;
    for (size_t r = r0; r < r1; r++) {
        const size_t src = x->row_index ? (size_t)x->row_index[r] : r;
        const char *from = (const char *)x->a + src * x->lda * esize;
        if (!j->fp32) {
            memcpy((char *)j->out + r * x->k * esize, from, x->k * esize);
            continue;
        }
        float *to = (float *)j->out + r * x->k;
        for (size_t c = 0; c < x->k; c++) to[c] = qmm__load_float(x->a_type, from, c);
    }
}

/* Grows a context buffer (64-byte aligned) to hold `bytes`. */
static qmm_status qmm__grow_buffer(void **buf, size_t *have, size_t bytes, const char *what)
{
    if (bytes <= *have) return QMM_OK;
    void *p = bytes <= (size_t)-1 - 63 ? aligned_alloc(64, (bytes + 63) / 64 * 64) : NULL;
    if (!p) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "qmm_matmul_grouped (cpu): cannot allocate %zu bytes for %s", bytes, what);
    free(*buf);
    *buf = p;
    *have = bytes;
    return QMM_OK;
}

qmm_status qmm__cpu_grouped_run(qmm__cpu_state *s, const qmm__grouped_args *x)
{
    static const char fn[] = "qmm_matmul_grouped (cpu)";
    const qmm__cpu_stack *stack = NULL;
    const qmm_prepared *p = x->w->prepared;
    if (p && p->backend == QMM_BACKEND_CPU) {
        if (p->format != x->w->format || p->n != x->n || p->k != x->k || p->experts != x->experts)
            return qmm__fail(QMM_ERR_INVALID_WEIGHT, "%s: the descriptor no longer matches its prepared copy", fn);
        if (x->experts > 1) stack = (const qmm__cpu_stack *)(const void *)p;
    }
    const size_t e_count = x->experts, csize = qmm__dtype_size(x->c_type), esize = qmm__dtype_size(x->a_type);
    /* per expert: its CPU weight (prepared, or a view of its canonical buffers) and its path */
    const size_t per_expert = sizeof(qmm__cpu_weight) + sizeof(qmm__gemv_segment) + sizeof(qmm_path);
    QMM__TRY(qmm__grow_buffer(&s->grouped_ws, &s->grouped_ws_bytes, e_count * per_expert, "the experts' plan"));
    qmm__cpu_weight *views = s->grouped_ws;
    qmm__gemv_segment *seg = (qmm__gemv_segment *)(void *)(views + e_count);
    qmm_path *path = (qmm_path *)(void *)(seg + e_count);
    bool any_gemv = false;
    for (size_t e = 0; e < e_count; e++) {
        qmm_weight one;
        qmm__weight_expert(x->w, e, &one);
        const qmm__cpu_weight *pw = stack ? stack->each[e]
                                   : (x->experts == 1 && p && p->backend == QMM_BACKEND_CPU)
                                       ? (const qmm__cpu_weight *)(const void *)p
                                       : NULL;
        if (!pw) {
            qmm__cpu_view_canonical(&one, &views[e]);
        } else {
            views[e] = *pw;
            one.prepared = (qmm_prepared *)(void *)&views[e]; /* for the dispatcher: prepared */
        }
        const size_t rows = x->offsets[e + 1] - x->offsets[e];
        path[e] = rows == 0 ? QMM_PATH_AUTO : x->forced != QMM_PATH_AUTO ? x->forced : qmm__cpu_plan_path(s, rows, &one);
        if (path[e] == QMM_PATH_GEMV && !views[e].prepared) path[e] = QMM_PATH_MATERIALIZE; /* as qmm_matmul */
        any_gemv |= path[e] == QMM_PATH_GEMV;
    }
    /* A: the caller's rows in place without a row index, else gathered; fp32 for the FMA GEMV */
    const qmm__cpu_kernels *kern = &s->kern;
    const bool dot = x->a_type == QMM_DTYPE_BF16;
    const void *a = x->a;
    size_t lda = x->lda;
    if (x->row_index) {
        size_t bytes;
        if (!qmm__mul_size(x->m, x->k * esize, &bytes))
            return qmm__fail(QMM_ERR_SIZE_OVERFLOW, "%s: %zu gathered rows overflow size_t", fn, x->m);
        QMM__TRY(qmm__grow_buffer(&s->agather, &s->agather_bytes, bytes, "the gathered rows of A"));
        qmm__gather_job g = {x, s->agather, false};
        qmm__pool_run(s->pool, qmm__gather_worker, &g);
        a = s->agather, lda = x->k;
    }
    const void *a32 = NULL;
    bool need_fp32 = false;
    for (size_t e = 0; e < e_count; e++)
        if (path[e] == QMM_PATH_GEMV && !(dot && kern->gemv_dot[views[e].kind])) need_fp32 = true;
    if (any_gemv && need_fp32) {
        size_t bytes;
        if (!qmm__mul_size(x->m, x->k * sizeof(float), &bytes))
            return qmm__fail(QMM_ERR_SIZE_OVERFLOW, "%s: %zu rows of A as fp32 overflow size_t", fn, x->m);
        QMM__TRY(qmm__grow_buffer((void **)&s->a32, &s->a32_bytes, bytes, "A as fp32"));
        qmm__grouped_args from = *x;
        from.a = a, from.lda = lda, from.row_index = NULL;
        qmm__gather_job g = {&from, s->a32, true};
        qmm__pool_run(s->pool, qmm__gather_worker, &g);
        a32 = s->a32;
    }
    /* the GEMV experts, all in one schedule */
    size_t count = 0, pairs = 0;
    for (size_t e = 0; e < e_count; e++) {
        if (path[e] != QMM_PATH_GEMV) continue;
        const size_t r0 = x->offsets[e], rows = x->offsets[e + 1] - r0;
        qmm__gemv_segment *g = &seg[count++];
        const qmm__cpu_weight *w = &views[e];
        const bool use_dot = dot && kern->gemv_dot[w->kind];
        g->fn = use_dot ? kern->gemv_dot[w->kind] : kern->gemv_fma[w->kind];
        g->epi.poison = w->poison;
        g->epi.inv_unit = 1.0f / w->unit;
        g->epi.row_scale = w->tensor_scale;
        g->epi.row_scales = w->channel_scales;
        g->epi.alpha = x->epi.alpha, g->epi.beta = x->epi.beta;
        g->epi.column_scale = NULL;
        g->epi.bias = x->epi.bias ? x->epi.bias + e * x->n : NULL;
        g->epi.act = x->epi.activation;
        g->epi.out_scale = x->epi.row_scale ? x->epi.row_scale + r0 : NULL;
        g->epi.c_type = x->c_type, g->epi.c = (char *)x->c + r0 * x->ldc * csize, g->epi.ldc = x->ldc, g->epi.n = x->n;
        g->args.w = w, g->args.m = rows;
        g->args.a = use_dot ? (const void *)((const char *)a + r0 * lda * esize) : (const void *)((const float *)a32 + r0 * x->k);
        g->args.lda = use_dot ? lda : x->k;
        g->args.epi = &g->epi;
        g->first = pairs;
        pairs += w->tiles;
    }
    if (count) {
        qmm__grouped_gemv_job j = {seg, count, pairs};
        qmm__pool_run(s->pool, qmm__grouped_gemv_worker, &j);
    }
    /* the GEMM experts, one after another over all threads */
    for (size_t e = 0; e < e_count; e++) {
        if (path[e] != QMM_PATH_MATERIALIZE) continue;
        const size_t r0 = x->offsets[e], rows = x->offsets[e + 1] - r0;
        qmm_weight one;
        qmm__weight_expert(x->w, e, &one);
        qmm__matmul_args m = {.m = rows, .n = x->n, .k = x->k, .a_type = x->a_type, .a = (const char *)a + r0 * lda * esize,
                              .lda = lda, .w = &one, .c_type = x->c_type, .c = (char *)x->c + r0 * x->ldc * csize,
                              .ldc = x->ldc, .path = QMM_PATH_MATERIALIZE,
                              .row_scale = x->epi.row_scale ? x->epi.row_scale + r0 : NULL};
        qmm_epilogue_init(&m.epi);
        m.epi.alpha = x->epi.alpha, m.epi.beta = x->epi.beta, m.epi.activation = x->epi.activation;
        m.epi.bias = x->epi.bias ? x->epi.bias + e * x->n : NULL;
        QMM__TRY(qmm__cpu_matmul_run(s, &m, &views[e]));
    }
    return QMM_OK;
}
