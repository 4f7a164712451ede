/* The plan's variants that test_cuda runs its tests under again (`test_cuda variants`, ctest
 * test_cuda_variants): those the rules do not reach on its small weights (src/cuda/plan.h,
 * qmm__cuda_override; each the switches of the override it sets). Each runs the paths, the exact
 * epilogue, long K and batch invariance again (suite "pairs"), or all but long K and with graph capture
 * (suite "wg": with a forced split, long K's error bound does not hold: one or two splits of K = 70001
 * put every kernel past it, measured on an H200, relative errors up to 8.4e-5 against 1e-5). On a GPU
 * without sm_90a code the WG kernel's variants run PIPE and STEP. */
#ifndef QMM_TESTS_CUDA_VARIANTS_H
#define QMM_TESTS_CUDA_VARIANTS_H

static const struct {
    const char *name, *override, *suite, *what;
} variants[] = {
    {"pairs", "pairs=1", "pairs", "the fused path's pair mode on every weight (qmm__cuda_pair_split)"},
    {"tall", "tall=2,wg128=0,wg256=0", "pairs",
     "tall pairs' coarse units wherever M > 64 (qmm__cuda_tall_split; by default only where their waves take no "
     "longer), without the WG kernel's 128- and 256-row CTAs that would take NVFP4's and MXFP4's M > 64"},
    {"wg", "tall=2,wg=2,wg128=2,wg256=0,wg_cluster=0", "pairs",
     "the WG kernel also over forced coarse units, as their fine halves or in 128-row CTAs as coarse units, "
     "through the workspace instead of clusters; 128-row CTAs at M = 200 too"},
    {"wg64", "wg=2,wg128=0", "pairs", "the WG kernel's 64-row CTAs past 64 rows"},
    {"wg0", "wg=0", "pairs", "no WG kernel: PIPE and STEP at 32 and 64 rows with the default division"},
    {"spread", "whole16=1,spread=2", "pairs",
     "16-row tiles by WHOLE wherever its staging fits, its shared memory padded to the opt-in size at every "
     "dependent launch"},
    {"pipe32", "wg=0,pipe32=8", "pairs", "PIPE's 32-row tiles at 8-tile stages for every format"},
    {"wgcopy", "wg=2,wg_w_map=0", "pairs", "the WG producer copying each strip on its own (no tensor map of W)"},
    {"wgamap0", "wg=2,wg256=2,wg_a_map=0", "pairs",
     "A laid out by wg_stage_a for rows the producer could copy by tensor map; 256-row CTAs past 64 rows"},
    {"wholeparts", "whole_parts=2", "pairs", "the GEMV's WHOLE staging in two parts wherever a unit has two"},
    {"gemv3", "gemv3=2", "pairs", "the three-CTA GEMV wherever the GEMV runs WHOLE"},
    {"gemv3parts", "gemv3=2,whole_parts=2", "pairs", "the three-CTA GEMV with its staging in two parts"},
    {"wgcl", "wg=2,wg128=2", "pairs", "the WG kernel's splits in clusters, 128-row CTAs for every M > 64"},
    {"wgcl1", "splits=1,wg=2,wg128=2", "wg", "the same at one split of K"},
    {"wgcl2", "splits=2,wg=2,wg128=2", "wg", "the same at two splits of K"},
    {"wgcoarse", "wg=2,wg128=2,wg_coarse=2", "pairs",
     "128-row CTAs over coarse units wherever the fine units have pairs, in clusters"},
    {"wgcoarse0", "wg=2,wg128=2,wg_coarse=2,wg_cluster=0", "pairs", "the same through the workspace"},
    {"wg256", "wg=2,wg256=2", "pairs", "256-row CTAs for every M > 64, in clusters of splits"},
    {"wg256cl0", "wg=2,wg256=2,wg_cluster=0", "pairs", "the same through the workspace"},
    {"wg256coarse", "tall=2,wg=2,wg256=2,wg_coarse=2", "pairs", "256-row CTAs over coarse units wherever the fine units have pairs"},
};

#endif
