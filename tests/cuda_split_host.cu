/* Host-side entry points to the split of K of the GEMV and fused paths (split_for, gemv_early_fit,
 * split_for_fused, tall_split in src/cuda/kernels_mma_split.cuh; wg_choose in kernels_mma_launch.cuh),
 * for test_cuda_split.c: the same functions the launches call, with C linkage. Runs no kernel and needs
 * no GPU. */
#include "../src/cuda/kernels_mma_launch.cuh"

#include "cuda_split_host.h"

using namespace qmm_mma;

/* Weight tiles per step of the kernels for encoding enc (FP8's tiles are half as wide). */
extern "C" int qmm_test_tiles_per_step(int enc)
{
    return enc == QMM__ENC_FP8 ? stage_config<QMM__ENC_FP8, false, 8>::tiles_per_step
                               : stage_config<QMM__ENC_NVFP4, false, 8>::tiles_per_step;
}

extern "C" int qmm_test_split_for(int strips, int chunks, int tiles_per_step, int sm_count, int enc)
{
    return split_for(strips, chunks, tiles_per_step, sm_count, gemv_cta_tiles(enc));
}

extern "C" int qmm_test_gemv_early_split(int strips, int chunks, int tiles_per_step, int sm_count, int enc)
{
    return gemv_early_fit(strips, chunks, tiles_per_step, sm_count, gemv_cta_tiles(enc), false);
}

extern "C" int qmm_test_one_split_fits(int strips, int mtiles, int sm_count)
{
    return one_split_fits(strips, mtiles, sm_count);
}

extern "C" int qmm_test_split_for_fused(int strips, int chunks, int tiles_per_step, int sm_count)
{
    return split_for_fused(strips, chunks, tiles_per_step, sm_count);
}

extern "C" qmm_test_division qmm_test_tall_split(int nb, int m, int strips, int chunks, int tiles_per_step, int sm_count,
                                                 size_t partial_floats, size_t counter_count, int force)
{
    mma_params p = {};
    p.m = m;
    p.strips = strips;
    p.chunks = chunks;
    p.mtiles = (m + 8 * nb - 1) / (8 * nb);
    p.cps = -1, p.splits = -1, p.pairs = -1, p.half = -1;
    bool taken = false;
    switch (nb) {
    case 2: taken = tall_split<2>(p, tiles_per_step, sm_count, partial_floats, counter_count, force != 0); break;
    case 4: taken = tall_split<4>(p, tiles_per_step, sm_count, partial_floats, counter_count, force != 0); break;
    default: taken = tall_split<8>(p, tiles_per_step, sm_count, partial_floats, counter_count, force != 0); break;
    }
    qmm_test_division d;
    d.taken = taken;
    d.cps = p.cps, d.splits = p.splits, d.pairs = p.pairs, d.half = p.half;
    return d;
}

/* qmm_test_wg_choose for the encoding ENC (its split's steps and its WG stages). */
template <int ENC>
static qmm_test_wg wg_choose_of(int m, int strips, int chunks, int sm_count, const long long slots[4], const int clusters[4][9])
{
    mma_params p = {};
    p.m = m;
    p.strips = strips;
    p.chunks = chunks;
    const int rows = m <= 32 ? 32 : kWgRows; /* the fused path's tiles: 32 rows (NB = 4) to M = 32 */
    p.mtiles = (m + rows - 1) / rows;
    const int tps = stage_config<ENC, false, 8>::tiles_per_step; /* kStepK / tile_k, the same for every NB */
    /* launch_variant's division: one split past four 64-row M tiles where one_split_fits, else tall pairs
     * where they are taken, else the usual split */
    const bool one = rows == kWgRows && one_split_fits(strips, p.mtiles, sm_count);
    if (rows == 32 || one || !tall_split<8>(p, tps, sm_count, (size_t)1 << 40, (size_t)1 << 30, false)) {
        const int sp = one ? 1 : split_for_fused(strips, chunks, tps, sm_count);
        p.cps = (chunks + sp - 1) / sp;
        p.splits = (chunks + p.cps - 1) / p.cps;
        p.pairs = 0, p.half = 0;
    }
    variant_limits lim;
    for (int r = 0; r < 4; r++) {
        lim.wg[r].slots = slots[r];
        for (int c = 1; c <= kWgClusterMax; c++) lim.wg[r].clusters[c] = clusters[r][c];
    }
    wg_plan plan;
    qmm_test_wg t;
    t.taken = wg_choose(p, lim, wg_stage_chunks<ENC>(), wg_knobs{}, plan, rows);
    t.rows = plan.rows, t.cluster = plan.cluster, t.splits = plan.p.splits, t.half = plan.p.half;
    return t;
}

extern "C" qmm_test_wg qmm_test_wg_choose(int fp8, int m, int strips, int chunks, int sm_count, const long long slots[4],
                                          const int clusters[4][9])
{
    return fp8 ? wg_choose_of<QMM__ENC_FP8>(m, strips, chunks, sm_count, slots, clusters)
               : wg_choose_of<QMM__ENC_NVFP4>(m, strips, chunks, sm_count, slots, clusters);
}
