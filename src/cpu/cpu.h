/* The CPU backend's per-context state and the functions its files share. */
#ifndef QMM_CPU_CPU_H
#define QMM_CPU_CPU_H

#include "../core/backend.h"
#include "isa.h"
#include "kernels.h"
#include "threadpool.h"

/* GEMM blocking (BLIS order; src/cpu/README.md). A thread owns blocks of up to QMM__NC columns x up
 * to QMM__MC rows. For each step of QMM__KC along K it dequantizes the block's weights into panels of
 * 32 columns x QMM__KC (24 KB of bf16 each, 6 of them), then for each panel (in L1) runs the MR-row
 * register tiles over the block's packed A (QMM__MC x QMM__KC, 396 KB of bf16, reused by every
 * panel); the partial sums (QMM__MC x QMM__NC fp32, 396 KB) wait between K steps. About 950 KB: the
 * 1 MB L2 of the development machine (Zen 4). Measured against NC in {128, 192, 256, 1024}, MC in
 * {256, 512, 516}, KC in {256, 384, 512} at M = 512, (4096, 14336): within 5% of each other on this
 * noisy VM, this one best in repeated runs (docs/cpu-notes.md). MC = 516 = 43 x 12 rows. */
#define QMM__KC 384
#define QMM__NC 192
#define QMM__MC 516
#define QMM__MR_MAX 16 /* the most rows a register tile has (the partial sums hold QMM__MC + this) */

typedef struct qmm__cpu_state {
    qmm__cpu_isa isa;
    qmm__cpu_features features;
    qmm__cpu_kernels kern;
    qmm__pool *pool;
    int nthreads;
    char description[96];
    uint8_t *thread_ws;         /* nthreads x thread_ws_bytes: panels and partial sums per thread */
    size_t thread_ws_bytes;
    float *a32;                 /* A converted to fp32 for the FMA GEMV; grows to the largest m x k */
    size_t a32_bytes;
    void *apack;                /* A packed for the GEMM tiles; grows to the largest call */
    size_t apack_bytes;
    void *agather;              /* grouped calls: A's rows gathered by the row index */
    size_t agather_bytes;
    void *grouped_ws;           /* grouped calls: the experts' weights and schedule */
    size_t grouped_ws_bytes;
} qmm__cpu_state;

/* dispatch.c: the path for m rows against w, from the measured thresholds. */
qmm_path qmm__cpu_plan_path(const qmm__cpu_state *s, size_t m, const qmm_weight *w);

/* layout.c: the prepared copy, and a view of a canonical weight in the same struct. */
qmm_status qmm__cpu_prepare_weight(const qmm_weight *w, qmm__cpu_weight **out);
void qmm__cpu_view_canonical(const qmm_weight *w, qmm__cpu_weight *out);
qmm__cpu_kind qmm__cpu_kind_of(qmm_format f);

/* driver.c: one matmul through the chosen path; the GEMM workspace each thread needs. */
qmm_status qmm__cpu_matmul_run(qmm__cpu_state *s, const qmm__matmul_args *x, const qmm__cpu_weight *w);
size_t qmm__cpu_thread_ws_bytes(void);

/* grouped.c: a prepared stack of experts; one grouped call. */
qmm_status qmm__cpu_prepare_stack(const qmm_weight *w, qmm_prepared **out);
qmm_status qmm__cpu_grouped_run(qmm__cpu_state *s, const qmm__grouped_args *x);

/* measure.c */
qmm_status qmm__cpu_measure(qmm__cpu_state *s, size_t bytes, qmm_machine_rates *out);

#endif
