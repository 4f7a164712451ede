/*
 * qmm_measure: what the machine behind a context can do and what state it is in, measured in the
 * running process, for benchmarks that compare a call's time with the machine's bandwidth and peak
 * (qmm bench). Nothing here is needed to multiply.
 *
 * The conventions of qmm.h hold here too.
 */
#ifndef QMM_MEASURE_H
#define QMM_MEASURE_H

#include "qmm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the machine behind a context can do, measured now (for benchmarks and the tool's reports). */
typedef struct qmm_machine_rates {
    double copy_gbps;    /* CUDA: device-to-device copy, bytes read + written per second. Host backends:
                            read bandwidth of all the context's threads over a buffer far beyond the caches */
    double fp32_gflops;  /* host backends: fp32 FMA peak of all threads (0 where not measured) */
    double bf16_gflops;  /* host backends: bf16 dot-product peak (AVX512-BF16) of all threads, 0 without */
} qmm_machine_rates;

/* Measures the rates above with buffers of `bytes` (0: a default several times the last-level cache).
 * Takes a second or so. Errors: QMM_ERR_NULL_POINTER, QMM_ERR_OUT_OF_MEMORY, QMM_ERR_CUDA. */
QMM_API qmm_status qmm_context_measure_rates(qmm_context *ctx, size_t bytes, qmm_machine_rates *out);

/* The state of the machine behind a context now, where its backend can read it: on CUDA, through the
 * NVIDIA driver's management library (NVML) where it is installed. For benchmarks: a GPU near its power
 * limit lowers its clock, and compute-bound calls then run slower than on the same GPU cool. */
typedef struct qmm_machine_state {
    int known;                        /* 1: the fields below were read; 0: not readable here (host
                                         backends, or no NVML), and the fields are 0 */
    double sm_mhz;                    /* CUDA: the SM clock */
    double power_w;                   /* CUDA: the board's power draw (0 where NVML does not report it) */
    unsigned long long clock_reasons; /* CUDA: NVML's reasons the clock is below its maximum, a bit mask
                                         (nvmlClocksThrottleReasons: 0x1 idle, 0x4 software power cap,
                                         0x8 hardware slowdown, 0x20 / 0x40 software / hardware thermal) */
} qmm_machine_state;

/* Reads *out (above), with no device work and no synchronisation: fast enough to call between timed
 * batches, except the first call on a CUDA context, which opens NVML (tens to hundreds of milliseconds).
 * A backend that cannot read it returns QMM_OK with out->known = 0. Errors: QMM_ERR_NULL_POINTER. */
QMM_API qmm_status qmm_context_machine_state(qmm_context *ctx, qmm_machine_state *out);

#ifdef __cplusplus
}
#endif

#endif /* QMM_MEASURE_H */
