/* qmm_context_measure_rates: the backend's own measurement where it has one, else one thread reading
 * host memory. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/error.h"
#include "context.h"

static double qmm__seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Median of 5 passes of summing a buffer of `bytes` (rounded down to 8-byte words). */
static qmm_status qmm__host_read_gbps(size_t bytes, double *gbps)
{
    size_t words = bytes / 8;
    uint64_t *buf = malloc(words * 8);
    if (!buf) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "qmm_context_measure_rates: cannot allocate %zu bytes", bytes);
    for (size_t i = 0; i < words; i++) buf[i] = i;
    double best[5];
    volatile uint64_t sink = 0;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = qmm__seconds();
        uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (size_t i = 0; i + 4 <= words; i += 4) s0 += buf[i], s1 += buf[i + 1], s2 += buf[i + 2], s3 += buf[i + 3];
        sink += s0 + s1 + s2 + s3;
        best[rep] = qmm__seconds() - t0;
    }
    (void)sink;
    /* median of five by sorting */
    for (int i = 1; i < 5; i++)
        for (int j = i; j > 0 && best[j] < best[j - 1]; j--) {
            double t = best[j];
            best[j] = best[j - 1];
            best[j - 1] = t;
        }
    free(buf);
    *gbps = (double)(words * 8) / best[2] * 1e-9;
    return QMM_OK;
}

qmm_status qmm_context_measure_rates(qmm_context *ctx, size_t bytes, qmm_machine_rates *out)
{
    if (!ctx || !out) return qmm__fail(QMM_ERR_NULL_POINTER, "qmm_context_measure_rates: NULL argument");
    if (bytes == 0) bytes = (size_t)512 << 20;
    if (ctx->ops->measure_rates) return ctx->ops->measure_rates(ctx->state, bytes, out);
    qmm_machine_rates r;
    memset(&r, 0, sizeof r);
    QMM__TRY(qmm__host_read_gbps(bytes, &r.copy_gbps));
    *out = r;
    return QMM_OK;
}

qmm_status qmm_context_machine_state(qmm_context *ctx, qmm_machine_state *out)
{
    if (!ctx || !out) return qmm__fail(QMM_ERR_NULL_POINTER, "qmm_context_machine_state: NULL argument");
    qmm_machine_state s;
    memset(&s, 0, sizeof s);
    if (ctx->ops->machine_state && !ctx->ops->machine_state(ctx->state, &s)) memset(&s, 0, sizeof s);
    *out = s;
    return QMM_OK;
}
