/* The options of `qmm bench` and what its dense and mixture-of-experts runs share. */
#ifndef QMM_TOOLS_BENCH_H
#define QMM_TOOLS_BENCH_H

#include <stddef.h>

#include "qmm.h"
#include "qmm_measure.h"

#define BENCH_MAX_LIST 32
#define BENCH_PROBE_ROWS 3
#define BENCH_MAX_REPS 64               /* timed batches: the size of the timing arrays */
#define BENCH_MAX_DIM ((size_t)1 << 40) /* --m and --shapes; the memory check is the real limit */

typedef struct bench_options {
    qmm_backend backend;
    qmm_format formats[8];
    int format_count;
    size_t shapes[BENCH_MAX_LIST][2];
    int shape_count;
    size_t ms[BENCH_MAX_LIST];
    int m_count;
    qmm_path path;
    qmm_dtype out_type, a_type;
    int json, threads, reps;
    double rotate_mb, batch_ms, workspace_mb, cool_ms;
    size_t moe_experts, moe_topk; /* --moe E:TOPK; 0: the dense run */
} bench_options;

/* Bytes of one element of a float type. */
size_t bench_elem(qmm_dtype t);

/* Tolerance of the pre-timing check: the output type's rounding plus fp32 accumulation. */
double bench_tolerance(qmm_dtype t);

/* Sleeps ms milliseconds (the --cool-ms pause before a row); nothing where ms <= 0. */
void bench_pause(double ms);

/* `qmm bench --moe E:TOPK`: grouped calls over stacks of E experts with a seeded uniform top-k routing
 * of each M tokens (cmd_bench_moe.c). Returns the exit code. */
int bench_moe(qmm_context *ctx, const bench_options *o, const qmm_machine_rates *rates);

#endif
