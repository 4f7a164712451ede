/* The two paths of the CPU backend and how threads share them (src/cpu/README.md):
 * - GEMV (QMM_PATH_GEMV): the 16-row tiles of the prepared weight are split into one contiguous range
 *   per thread; each thread makes one pass over its tiles for all rows of A.
 * - GEMM (QMM_PATH_MATERIALIZE): A is packed once; each thread owns blocks of up to QMM__NC columns x
 *   QMM__MC rows; for each step of QMM__KC along K the block's weights are dequantized into bf16 panels
 *   of 32 columns, then register tiles of MR rows x 32 columns run over them, panel by panel (cpu.h
 *   has the cache plan); partial sums wait in fp32 between K steps and the epilogue is applied in the
 *   store of the last one.
 * Both partitions are static, and a row's sums are formed in the same order whatever M and the thread
 * count are (batch invariant, and 1 thread = N threads bit for bit). */
#include <stdlib.h>
#include <string.h>

#include "../core/convert.h"
#include "../core/error.h"
#include "../core/format.h"
#include "cpu.h"

/* ---- A as fp32 for the FMA kernels ---- */

typedef struct qmm__convert_job {
    const qmm__matmul_args *x;
    float *out;
} qmm__convert_job;

/* Makes *buf (64-byte aligned, *have bytes) hold at least `bytes`; the old contents are not kept.
 * False when the allocation fails (*buf unchanged). */
static bool qmm__grow(void **buf, size_t *have, size_t bytes)
{
    if (bytes <= *have) return true;
    void *p = bytes <= (size_t)-1 - 63 ? aligned_alloc(64, (bytes + 63) / 64 * 64) : NULL;
    if (!p) return false;
    free(*buf);
    *buf = p;
    *have = bytes;
    return true;
}

static void qmm__convert_worker(void *arg, int tid, int nt)
{
    const qmm__convert_job *j = arg;
    const qmm__matmul_args *x = j->x;
    const size_t r0 = x->m * (size_t)tid / (size_t)nt, r1 = x->m * (size_t)(tid + 1) / (size_t)nt;
    for (size_t r = r0; r < r1; r++) {
        const uint16_t *src = (const uint16_t *)x->a + r * x->lda;
        float *dst = j->out + r * x->k;
        if (x->a_type == QMM_DTYPE_BF16)
            for (size_t c = 0; c < x->k; c++) dst[c] = qmm__bf16_to_fp32(src[c]);
        else
            for (size_t c = 0; c < x->k; c++) dst[c] = qmm__fp16_to_fp32(src[c]);
    }
}

/* Points *a / *lda at fp32 A: the caller's when it is fp32, else a converted copy in the context. */
static qmm_status qmm__a_as_fp32(qmm__cpu_state *s, const qmm__matmul_args *x, const void **a, size_t *lda)
{
    if (x->a_type == QMM_DTYPE_FP32) {
        *a = x->a, *lda = x->lda;
        return QMM_OK;
    }
    size_t count, bytes;
    if (!qmm__mul_size(x->m, x->k, &count) || !qmm__mul_size(count, sizeof(float), &bytes) || bytes > (size_t)-1 - 63)
        return qmm__fail(QMM_ERR_SIZE_OVERFLOW, "qmm_matmul (cpu): A of %zu x %zu as fp32 overflows size_t", x->m, x->k);
    void *a32 = s->a32;
    if (!qmm__grow(&a32, &s->a32_bytes, bytes))
        return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "qmm_matmul (cpu): cannot allocate %zu floats for A as fp32", count);
    s->a32 = a32;
    qmm__convert_job j = {x, s->a32};
    qmm__pool_run(s->pool, qmm__convert_worker, &j);
    *a = s->a32, *lda = x->k;
    return QMM_OK;
}

/* ---- GEMV ---- */

typedef struct qmm__gemv_job {
    qmm__cpu_gemv_fn fn;
    qmm__cpu_gemv_args args;
} qmm__gemv_job;

static void qmm__gemv_worker(void *arg, int tid, int nt)
{
    const qmm__gemv_job *j = arg;
    const size_t tiles = j->args.w->tiles;
    const size_t t0 = tiles * (size_t)tid / (size_t)nt, t1 = tiles * (size_t)(tid + 1) / (size_t)nt;
    if (t0 < t1) j->fn(&j->args, t0, t1);
}

/* ---- GEMM ---- */

/* A packed for the register tiles, in blocks of QMM__KC along K: block b holds, for each group of MR
 * rows, its QMM__KC / 2 k-pairs, and for each k-pair the MR rows' values (bf16 pairs [MR][2] for the
 * dot kernel, fp32 [2][MR] for FMA), zero past M and K. Read in place, A's rows (K * 2 bytes apart:
 * 8 or 28 KB in the benchmark shapes) fall into one L1 set and a few L2 sets; packed, a tile's A is
 * one sequential stream and the A of one K step (all row groups) is contiguous in L2. */
typedef struct qmm__pack_job {
    const qmm__matmul_args *x;
    bool dot;
    size_t mr, groups, blocks;
    void *out;
} qmm__pack_job;

#define QMM__KC_PAIRS (QMM__KC / 2)

/* Row r of A, pairs [p0, p0 + n) (values [2 p0, 2 p0 + 2n)), into dst with a stride of mr (dwords for
 * the dot kernel, pairs of floats mr apart for FMA); zero past K. */
static void qmm__pack_row(const qmm__matmul_args *x, bool dot, size_t r, size_t p0, size_t n, size_t mr, void *dst)
{
    const size_t k = x->k;
    if (dot) {
        uint32_t *d = dst;
        const uint16_t *src = (const uint16_t *)x->a + r * x->lda;
        for (size_t p = 0; p < n; p++) {
            const size_t c = 2 * (p0 + p);
            uint32_t v = 0;
            if (c + 1 < k) memcpy(&v, src + c, 4);
            else if (c < k) v = src[c]; /* (a[K-1], 0) */
            d[p * mr] = v;
        }
        return;
    }
    float *d = dst;
    for (size_t p = 0; p < n; p++) {
        for (size_t e = 0; e < 2; e++) {
            const size_t c = 2 * (p0 + p) + e, i = r * x->lda + c;
            float v = 0.0f;
            if (c < k) {
                if (x->a_type == QMM_DTYPE_FP32) v = ((const float *)x->a)[i];
                else if (x->a_type == QMM_DTYPE_BF16) v = qmm__bf16_to_fp32(((const uint16_t *)x->a)[i]);
                else v = qmm__fp16_to_fp32(((const uint16_t *)x->a)[i]);
            }
            d[2 * p * mr + e * mr] = v;
        }
    }
}

static void qmm__pack_worker(void *arg, int tid, int nt)
{
    const qmm__pack_job *j = arg;
    const qmm__matmul_args *x = j->x;
    const size_t g0 = j->groups * (size_t)tid / (size_t)nt, g1 = j->groups * (size_t)(tid + 1) / (size_t)nt;
    const size_t mr = j->mr, esz = j->dot ? 4 : 8; /* bytes of one row's pair */
    const size_t block_bytes = j->groups * QMM__KC_PAIRS * mr * esz;
    for (size_t g = g0; g < g1; g++)
        for (size_t b = 0; b < j->blocks; b++) {
            char *dst = (char *)j->out + b * block_bytes + g * QMM__KC_PAIRS * mr * esz;
            for (size_t i = 0; i < mr; i++) {
                void *d = dst + 4 * i; /* row i: dword i (dot) or float i (FMA) of each k-pair */
                if (g * mr + i < x->m) qmm__pack_row(x, j->dot, g * mr + i, b * QMM__KC_PAIRS, QMM__KC_PAIRS, mr, d);
                else if (j->dot)
                    for (size_t p = 0; p < QMM__KC_PAIRS; p++) ((uint32_t *)d)[p * mr] = 0;
                else
                    for (size_t p = 0; p < 2 * QMM__KC_PAIRS; p++) ((float *)d)[p * mr] = 0.0f;
            }
        }
}

static qmm_status qmm__pack_a(qmm__cpu_state *s, const qmm__matmul_args *x, bool dot, size_t mr)
{
    const size_t groups = (x->m + mr - 1) / mr, blocks = (x->k + QMM__KC - 1) / QMM__KC;
    size_t bytes;
    if (!qmm__mul_size(groups * mr, blocks * QMM__KC * (dot ? 2 : 4), &bytes))
        return qmm__fail(QMM_ERR_SIZE_OVERFLOW, "qmm_matmul (cpu): packed A of %zu x %zu overflows size_t", x->m, x->k);
    if (!qmm__grow(&s->apack, &s->apack_bytes, bytes))
        return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "qmm_matmul (cpu): cannot allocate %zu bytes for packed A", bytes);
    qmm__pack_job j = {x, dot, mr, groups, blocks, s->apack};
    qmm__pool_run(s->pool, qmm__pack_worker, &j);
    return QMM_OK;
}

typedef struct qmm__gemm_job {
    const qmm__cpu_state *s;
    const qmm__cpu_weight *w;
    const qmm__cpu_epi *epi;
    qmm__cpu_tile_fn tile;
    size_t mr;
    const char *a;      /* packed A */
    size_t pair_bytes;  /* bytes of one k-pair of a group */
    size_t block_bytes; /* bytes of one K block (all groups) */
    size_t m, mc, n_ic;
    size_t panels, n_chunks; /* 32-column panels of N, and the column chunks they are split into */
} qmm__gemm_job;

#define QMM__PANEL_ELEMS (QMM__KC / 2 * 64) /* uint16 in one panel of 32 columns x QMM__KC */

/* Rows of row block ic x panels [q0, q1): every K step, panels first, then the tiles. */
static void qmm__gemm_block(const qmm__gemm_job *j, uint16_t *panels, float *part, size_t ic, size_t q0, size_t q1)
{
    const qmm__cpu_weight *w = j->w;
    const size_t m0 = ic * j->mc, m1 = m0 + j->mc < j->m ? m0 + j->mc : j->m;
    const size_t k = w->k, ldp = 32 * (q1 - q0);
    const uint16_t *w0[QMM__NC / 32], *w1[QMM__NC / 32];
    size_t wstride[QMM__NC / 32];
    for (size_t pc = 0; pc < k; pc += QMM__KC) {
        const size_t kc = k - pc < QMM__KC ? k - pc : QMM__KC;
        const size_t depth = (kc + QMM__KGROUP - 1) / QMM__KGROUP * QMM__KGROUP;
        for (size_t q = q0; q < q1; q++) {
            const size_t col = 32 * q, t = col / QMM__TILE_ROWS;
            if (w->prepared && w->kind == QMM__KIND_BF16 && t + 1 < w->tiles) {
                /* dense bf16: the prepared tiles are already pair vectors; read them in place */
                w0[q - q0] = (const uint16_t *)(const void *)(w->data + t * w->tile_bytes) + 32 * (pc / 2);
                w1[q - q0] = (const uint16_t *)(const void *)(w->data + (t + 1) * w->tile_bytes) + 32 * (pc / 2);
                wstride[q - q0] = 32;
                continue;
            }
            uint16_t *panel = panels + (q - q0) * QMM__PANEL_ELEMS;
            if (w->prepared) j->s->kern.panel[w->kind](w, col, pc, depth, panel);
            else qmm__cpu_panel_canonical(w, col, pc, depth, panel);
            w0[q - q0] = panel, w1[q - q0] = panel + 32, wstride[q - q0] = 64;
        }
        const bool last = pc + kc == k;
        const char *ablock = j->a + (pc / QMM__KC) * j->block_bytes;
        for (size_t q = q0; q < q1; q++) {
            for (size_t ir = m0; ir < m1; ir += j->mr) {
                qmm__cpu_tile_args t;
                t.a = ablock + (ir / j->mr) * QMM__KC_PAIRS * j->pair_bytes;
                t.mr = m1 - ir < j->mr ? m1 - ir : j->mr;
                t.pairs = (kc + 1) / 2;
                t.w0 = w0[q - q0], t.w1 = w1[q - q0], t.wstride = wstride[q - q0];
                t.part = part + (ir - m0) * ldp + 32 * (q - q0);
                t.ldp = ldp;
                t.accumulate = pc > 0;
                t.epi = last ? j->epi : NULL;
                t.row0 = ir, t.col0 = 32 * q;
                if (pc + kc < k || pc > 0) {
                    /* the next tile's partial sums come from L3 (the block's 2 MB of them are swept every K
                     * step): ask for them now, 3000 cycles of dot products ahead */
                    const size_t nir = ir + j->mr < m1 ? ir + j->mr : m0;
                    const float *next = part + (nir - m0) * ldp + 32 * (q - q0 + (ir + j->mr < m1 ? 0 : 1));
                    for (size_t r = 0; r < j->mr && nir + r < m1; r++) {
                        __builtin_prefetch(next + r * ldp, 1);
                        __builtin_prefetch(next + r * ldp + 16, 1);
                    }
                }
                j->tile(&t);
            }
        }
    }
}

/* Work items: row block x column chunk, chunk-major; a thread takes a contiguous range of them. */
static void qmm__gemm_worker(void *arg, int tid, int nt)
{
    const qmm__gemm_job *j = arg;
    uint8_t *ws = j->s->thread_ws + (size_t)tid * j->s->thread_ws_bytes;
    uint16_t *panels = (uint16_t *)(void *)ws;
    float *part = (float *)(void *)(ws + (QMM__NC / 32) * QMM__PANEL_ELEMS * sizeof(uint16_t));
    const size_t items = j->n_ic * j->n_chunks;
    const size_t i0 = items * (size_t)tid / (size_t)nt, i1 = items * (size_t)(tid + 1) / (size_t)nt;
    for (size_t it = i0; it < i1; it++) {
        const size_t c = it / j->n_ic, ic = it % j->n_ic;
        qmm__gemm_block(j, panels, part, ic, j->panels * c / j->n_chunks, j->panels * (c + 1) / j->n_chunks);
    }
}

size_t qmm__cpu_thread_ws_bytes(void)
{
    return (QMM__NC / 32) * QMM__PANEL_ELEMS * sizeof(uint16_t) + (size_t)(QMM__MC + QMM__MR_MAX) * QMM__NC * sizeof(float);
}

/* ---- one call ---- */

qmm_status qmm__cpu_matmul_run(qmm__cpu_state *s, const qmm__matmul_args *x, const qmm__cpu_weight *w)
{
    const qmm__cpu_kernels *kern = &s->kern;
    qmm__cpu_epi e;
    e.poison = w->poison;
    e.inv_unit = 1.0f / w->unit;
    e.row_scale = w->tensor_scale;
    e.row_scales = w->channel_scales;
    e.alpha = x->epi.alpha, e.beta = x->epi.beta;
    e.column_scale = x->epi.column_scale, e.bias = x->epi.bias;
    e.act = x->epi.activation;
    e.out_scale = x->row_scale;
    e.c_type = x->c_type, e.c = x->c, e.ldc = x->ldc, e.n = x->n;

    const bool gemv = x->path == QMM_PATH_GEMV && w->prepared;
    if (gemv) {
        const bool dot = x->a_type == QMM_DTYPE_BF16 && kern->gemv_dot[w->kind] != NULL;
        const void *a = x->a;
        size_t lda = x->lda;
        if (!dot) QMM__TRY(qmm__a_as_fp32(s, x, &a, &lda));
        qmm__gemv_job j;
        j.fn = dot ? kern->gemv_dot[w->kind] : kern->gemv_fma[w->kind];
        j.args.w = w, j.args.m = x->m, j.args.a = a, j.args.lda = lda, j.args.epi = &e;
        qmm__pool_run(s->pool, qmm__gemv_worker, &j);
        return QMM_OK;
    }
    const bool dot = x->a_type == QMM_DTYPE_BF16 && kern->tile_dot != NULL;
    qmm__gemm_job j;
    j.s = s, j.w = w, j.epi = &e;
    j.tile = dot ? kern->tile_dot : kern->tile_fma;
    j.mr = dot ? kern->mr_dot : kern->mr_fma;
    QMM__TRY(qmm__pack_a(s, x, dot, j.mr));
    j.a = s->apack;
    j.pair_bytes = j.mr * 4 * (dot ? 1 : 2);
    j.block_bytes = (x->m + j.mr - 1) / j.mr * QMM__KC_PAIRS * j.pair_bytes;
    j.m = x->m;
    /* Columns: chunks of at most QMM__NC, their count a multiple of the threads when there are enough
     * panels, so that every thread gets the same share. Rows: blocks of at most QMM__MC, more of them
     * when there are too few chunks to occupy every thread. */
    const size_t nt = (size_t)s->nthreads;
    j.panels = (w->n + 31) / 32;
    size_t chunks = (j.panels + QMM__NC / 32 - 1) / (QMM__NC / 32);
    if (j.panels >= nt) chunks = (chunks + nt - 1) / nt * nt;
    j.n_chunks = chunks < j.panels ? chunks : j.panels;
    size_t n_ic = (x->m + QMM__MC - 1) / QMM__MC;
    if (n_ic * j.n_chunks < nt) n_ic = (nt + j.n_chunks - 1) / j.n_chunks;
    size_t mc = (x->m + n_ic - 1) / n_ic;
    mc = (mc + j.mr - 1) / j.mr * j.mr; /* <= QMM__MC rounded up to MR rows: the partial sums hold that */
    j.mc = mc;
    j.n_ic = (x->m + mc - 1) / mc;
    qmm__pool_run(s->pool, qmm__gemm_worker, &j);
    return QMM_OK;
}
