/* Tool helpers around weights: random quantized weights for benchmarks, row slices, and the reference
 * product computed on several threads (each thread a reference context and a slice of the rows). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

int tool_cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

int tool_random_weight(qmm_weight *w, qmm_format format, size_t n, size_t k, uint64_t seed)
{
    if (qmm_weight_alloc(w, format, n, k) != QMM_OK) return -1;
    tool_rng r;
    tool_rng_seed(&r, seed);
    if (format == QMM_FORMAT_BF16) {
        uint16_t *d = (uint16_t *)(void *)w->data;
        for (size_t i = 0; i < n * k; i++) d[i] = qmm_fp32_to_bf16((float)tool_rng_normal(&r));
        return 0;
    }
    for (size_t i = 0; i < w->data_bytes; i += 8) {
        uint64_t v = tool_rng_next(&r);
        size_t len = w->data_bytes - i < 8 ? w->data_bytes - i : 8;
        memcpy(w->data + i, &v, len);
    }
    if (format == QMM_FORMAT_FP8_TENSOR || format == QMM_FORMAT_FP8_CHANNEL) {
        for (size_t i = 0; i < w->data_bytes; i++)
            if ((w->data[i] & 0x7f) == 0x7f) w->data[i] ^= 1; /* no NaN codes */
    }
    for (size_t i = 0; i < w->block_scale_bytes; i++) {
        uint64_t v = tool_rng_next(&r);
        /* NVFP4: E4M3 codes 0x28..0x47 (0.25 .. 3.75); MXFP4: E8M0 codes 120..131 (2^-7 .. 2^4) */
        w->block_scales[i] = format == QMM_FORMAT_NVFP4 ? (uint8_t)(0x28 + v % 32) : (uint8_t)(120 + v % 12);
    }
    w->tensor_scale = format == QMM_FORMAT_NVFP4 ? 1.0f / 4.0f : 1.0f / 64.0f;
    for (size_t i = 0; i < w->channel_scale_count; i++) w->channel_scales[i] = (float)(0.5 + tool_rng_uniform(&r)) / 64.0f;
    return 0;
}

qmm_weight tool_weight_rows(const qmm_weight *w, size_t r0, size_t rows)
{
    qmm_weight_size s;
    qmm_weight_size_query(w->format, QMM_SCALE_LAYOUT_CANONICAL, w->n, w->k, &s);
    qmm_weight v = *w;
    v.prepared = NULL;
    v.n = rows;
    v.data = w->data + r0 * s.row_bytes;
    v.data_bytes = rows * s.row_bytes;
    if (w->block_scales) {
        v.block_scales = w->block_scales + r0 * s.scales_per_row;
        v.block_scale_bytes = rows * s.scales_per_row;
    }
    if (w->channel_scales) {
        v.channel_scales = w->channel_scales + r0;
        v.channel_scale_count = rows;
    }
    return v;
}

typedef struct ref_job {
    qmm_weight slice;
    const uint16_t *a;
    size_t rows, n_total, col0;
    float *out;
    qmm_status status;
} ref_job;

static void *ref_worker(void *arg)
{
    ref_job *j = arg;
    qmm_context_options o;
    qmm_context_options_init(&o);
    o.backend = QMM_BACKEND_REFERENCE;
    qmm_context *ctx;
    j->status = qmm_context_create(&o, &ctx);
    if (j->status != QMM_OK) return NULL;
    /* each thread writes its own columns of out: C's row stride is the full n */
    j->status = qmm_matmul(ctx, j->rows, QMM_DTYPE_BF16, j->a, j->slice.k, &j->slice, QMM_DTYPE_FP32, j->out + j->col0,
                           j->n_total, NULL);
    qmm_context_destroy(ctx);
    return NULL;
}

qmm_status tool_reference_product(const qmm_weight *w, const uint16_t *a, size_t rows, float *out, int threads)
{
    if (threads < 1) threads = 1;
    if ((size_t)threads > w->n) threads = (int)w->n;
    ref_job *jobs = calloc((size_t)threads, sizeof *jobs);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    if (!jobs || !tid) {
        free(jobs);
        free(tid);
        return QMM_ERR_OUT_OF_MEMORY;
    }
    size_t per = (w->n + (size_t)threads - 1) / (size_t)threads, started = 0;
    for (int t = 0; t < threads; t++) {
        size_t r0 = (size_t)t * per;
        if (r0 >= w->n) break;
        size_t len = w->n - r0 < per ? w->n - r0 : per;
        jobs[t] = (ref_job){tool_weight_rows(w, r0, len), a, rows, w->n, r0, out, QMM_OK};
        if (pthread_create(&tid[t], NULL, ref_worker, &jobs[t]) != 0) {
            jobs[t].status = QMM_ERR_INTERNAL;
            break;
        }
        started++;
    }
    qmm_status st = QMM_OK;
    for (size_t t = 0; t < started; t++) {
        pthread_join(tid[t], NULL);
        if (jobs[t].status != QMM_OK) st = jobs[t].status;
    }
    if (started < (size_t)threads && started * per < w->n && st == QMM_OK) st = QMM_ERR_INTERNAL;
    free(jobs);
    free(tid);
    return st;
}
