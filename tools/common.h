/* Helpers shared by the qmm tool's commands: random numbers, timing, option parsing, test matrices. */
#ifndef QMM_TOOLS_COMMON_H
#define QMM_TOOLS_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qmm.h"

/* xoshiro256** (Blackman and Vigna, 2018), seeded through splitmix64. */
typedef struct tool_rng {
    uint64_t s[4];
} tool_rng;

void tool_rng_seed(tool_rng *r, uint64_t seed);
uint64_t tool_rng_next(tool_rng *r);
double tool_rng_uniform(tool_rng *r); /* in (0, 1) */
double tool_rng_normal(tool_rng *r);  /* standard normal, Box-Muller */

double tool_now(void); /* monotonic seconds */
double tool_median(double *v, int count);

/* Largest --threads of the commands that take one. */
#define TOOL_MAX_THREADS 1024

/* Prints "qmm <what>: <status string>: <last error>" to stderr and returns 1 (an exit code). */
int tool_report(const char *what, qmm_status st);

/* The tool's default weight: a seeded random n x k bf16 matrix shaped like an LLM projection, with
 * Student-t (4 degrees of freedom) tails and 1 row in 64 an outlier row scaled by 8. */
void tool_default_weight(uint16_t *w, size_t n, size_t k, uint64_t seed);

/* Standard normal bf16 activations. */
void tool_random_bf16(uint16_t *a, size_t count, uint64_t seed);

/* ||x - y|| / ||y|| over count values (fp64 norms). */
double tool_rel_error(const float *x, const double *y, size_t count);
double tool_rel_error_f32(const float *x, const float *y, size_t count);

/* C = A @ W^T in fp64 for bf16 A (m x k) and bf16 W (n x k): the product with the unquantized weight. */
void tool_exact_product(const uint16_t *a, const uint16_t *w, size_t m, size_t n, size_t k, double *c);

#endif

/* A weight of `format` filled with random valid codes and scales (no quantization pass, so large
 * benchmark weights are made in milliseconds): E2M1 / E4M3 codes uniform (E4M3 NaN codes excluded),
 * block scales in a moderate range, tensor and channel scales that keep products near 1. */
int tool_random_weight(qmm_weight *w, qmm_format format, size_t n, size_t k, uint64_t seed);

/* A weight that shares another's buffers: rows [r0, r0 + rows). */
qmm_weight tool_weight_rows(const qmm_weight *w, size_t r0, size_t rows);

/* out[rows x n] = the reference backend's fp32 product of bf16 rows `a` (rows x k) with w, computed on
 * `threads` threads, each on a slice of w's rows. Returns the status. */
qmm_status tool_reference_product(const qmm_weight *w, const uint16_t *a, size_t rows, float *out, int threads);

/* Online CPUs (at least 1). */
int tool_cpu_count(void);
