/* qmm_context_measure_rates on the CPU backend, with the context's own threads and kernel table:
 * - read bandwidth: every thread sums its own slice of one buffer far beyond the caches (first
 *   touched by the thread that reads it) in four sequential streams; bytes read / time of the slowest
 *   thread, median of 9 passes;
 * - fp32 FMA peak: every thread runs independent FMA chains (enough to cover the latency); best of 5;
 * - bf16 dot-product peak (AVX512-BF16 only): the same with vdpbf16ps, 64 flop per zmm instruction
 *   (32 bf16 products, each multiply and add counted), as the GEMM's GFLOP/s are counted. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/error.h"
#include "cpu.h"

static double qmm__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum { QMM__MEASURE_MAX_THREADS = 1024 };

typedef struct qmm__measure_job {
    const qmm__cpu_kernels *kern;
    uint8_t *buf;
    size_t slice;       /* bytes per thread, a multiple of 4096 */
    int what;           /* 0 touch, 1 read, 2 fma, 3 dot */
    long iters;
    double seconds[QMM__MEASURE_MAX_THREADS];
    double flops[QMM__MEASURE_MAX_THREADS];
    uint64_t sink[QMM__MEASURE_MAX_THREADS];
} qmm__measure_job;

static void qmm__measure_worker(void *arg, int tid, int nt)
{
    (void)nt;
    qmm__measure_job *j = arg;
    uint8_t *mine = j->buf + (size_t)tid * j->slice;
    const double t0 = qmm__now();
    switch (j->what) {
    case 0:
        for (size_t i = 0; i < j->slice; i += 8) {
            const uint64_t v = i;
            memcpy(mine + i, &v, 8);
        }
        break;
    case 1: j->sink[tid] = j->kern->read_sum(mine, j->slice); break;
    case 2: j->flops[tid] = j->kern->fma_loop(j->iters); break;
    default: j->flops[tid] = j->kern->dot_loop(j->iters); break;
    }
    j->seconds[tid] = qmm__now() - t0;
}

static double qmm__max_seconds(const qmm__measure_job *j, int nt)
{
    double m = 0;
    for (int i = 0; i < nt; i++) m = j->seconds[i] > m ? j->seconds[i] : m;
    return m;
}

static int qmm__cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* GFLOP/s of all threads: the best of 5 runs of about 50 ms each (iterations sized by a first run). */
static double qmm__peak_gflops(qmm__cpu_state *s, qmm__measure_job *j, int what)
{
    const int nt = s->nthreads;
    j->what = what;
    j->iters = 100000;
    qmm__pool_run(s->pool, qmm__measure_worker, j);
    const double t = qmm__max_seconds(j, nt);
    j->iters = (long)((double)j->iters * 0.05 / (t > 1e-6 ? t : 1e-6)) + 1;
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        qmm__pool_run(s->pool, qmm__measure_worker, j);
        double flops = 0;
        for (int i = 0; i < nt; i++) flops += j->flops[i];
        const double g = flops / qmm__max_seconds(j, nt) * 1e-9;
        best = g > best ? g : best;
    }
    return best;
}

qmm_status qmm__cpu_measure(qmm__cpu_state *s, size_t bytes, qmm_machine_rates *out)
{
    const int nt = s->nthreads;
    if (nt > QMM__MEASURE_MAX_THREADS) return qmm__fail(QMM_ERR_UNSUPPORTED, "qmm_context_measure_rates: more than %d threads", QMM__MEASURE_MAX_THREADS);
    qmm__measure_job *j = calloc(1, sizeof *j);
    size_t slice = (bytes / (size_t)nt) / 4096 * 4096;
    if (slice == 0) slice = 4096; /* a tiny request still measures something (and from cache) */
    uint8_t *buf = aligned_alloc(4096, slice * (size_t)nt);
    if (!j || !buf) {
        free(j), free(buf);
        return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "qmm_context_measure_rates: cannot allocate %zu bytes", bytes);
    }
    j->kern = &s->kern;
    j->buf = buf;
    j->slice = slice;
    j->what = 0;
    qmm__pool_run(s->pool, qmm__measure_worker, j);
    double gbps[9];
    j->what = 1;
    qmm__pool_run(s->pool, qmm__measure_worker, j); /* warm-up */
    for (int rep = 0; rep < 9; rep++) {
        qmm__pool_run(s->pool, qmm__measure_worker, j);
        gbps[rep] = (double)(slice * (size_t)nt) / qmm__max_seconds(j, nt) * 1e-9;
    }
    qsort(gbps, 9, sizeof gbps[0], qmm__cmp_double);
    free(buf);
    qmm_machine_rates r;
    memset(&r, 0, sizeof r);
    r.copy_gbps = gbps[4];
    r.fp32_gflops = qmm__peak_gflops(s, j, 2);
    r.bf16_gflops = s->kern.dot_loop ? qmm__peak_gflops(s, j, 3) : 0.0;
    free(j);
    *out = r;
    return QMM_OK;
}
