/* C declarations of tests/cuda_split_host.cu: the CUDA backend's split of K, called on the host. */
#ifndef QMM_TESTS_CUDA_SPLIT_HOST_H
#define QMM_TESTS_CUDA_SPLIT_HOST_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What tall_split decided: taken (tall pairs apply), and the launch's division of K where they do
 * (chunks per unit, units, pairs summed two by two, the fine unit inside a coarse one or 0). */
typedef struct qmm_test_division {
    int taken, cps, splits, pairs, half;
} qmm_test_division;

int qmm_test_tiles_per_step(int enc);
int qmm_test_split_for(int strips, int chunks, int tiles_per_step, int sm_count, int enc);
/* The GEMV's split for its three-CTA WHOLE by the default rule (gemv_early_fit), 0 where it does not run. */
int qmm_test_gemv_early_split(int strips, int chunks, int tiles_per_step, int sm_count, int enc);
int qmm_test_split_for_fused(int strips, int chunks, int tiles_per_step, int sm_count);
/* Whether the fused path runs one split of K at mtiles 64-row M tiles (one_split_fits). */
int qmm_test_one_split_fits(int strips, int mtiles, int sm_count);
qmm_test_division qmm_test_tall_split(int nb, int m, int strips, int chunks, int tiles_per_step, int sm_count,
                                      size_t partial_floats, size_t counter_count, int force);

/* What wg_choose decided for the division that launch_variant makes at 64-row tiles (NVFP4, or FP8
 * where fp8, whose chunks are 32 columns; bf16 A, default knobs, a workspace large enough) on a device
 * that holds slots[r] CTAs of the WG kernel of 64 (r = 0), 128 (r = 1), 192 (r = 2) and 256 (r = 3) rows,
 * and clusters[r][c] clusters of c CTAs (c = 1..8): taken (the WG variant runs), the rows of its CTAs (32,
 * 64, 128, 192 or 256), the cluster (0: none) and the division (units, half or 0). */
typedef struct qmm_test_wg {
    int taken, rows, cluster, splits, half;
} qmm_test_wg;
qmm_test_wg qmm_test_wg_choose(int fp8, int m, int strips, int chunks, int sm_count, const long long slots[4],
                               const int clusters[4][9]);

#ifdef __cplusplus
}
#endif

#endif
