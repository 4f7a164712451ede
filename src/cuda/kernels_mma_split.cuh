/* The split of K of the tensor-core kernels (kernels_mma.cuh), on the host: functions of the weight's
 * shape, the SM count and the workspace, never of M (batch invariance). The GEMV's split (split_for,
 * with its encodings' start costs) and its three-CTA WHOLE's (gemv_early_fit); the fused path's
 * (split_for_fused) and its units in pairs (pair_units, for pair mode's pair_split and tall_split).
 * Included by kernels_mma_launch.cuh, which launches what these decide. */
#ifndef QMM_CUDA_KERNELS_MMA_SPLIT_CUH
#define QMM_CUDA_KERNELS_MMA_SPLIT_CUH

#include <cstddef>

#include "kernels_mma.cuh"

namespace qmm_mma {

/* Strip groups: the CTAs of one M tile and one split, kWarps strips of 16 weight rows each. */
static int strip_groups(int strips) { return (strips + kWarps - 1) / kWarps; }

/* The split of K on the GEMV path (NB = 1): a function of the weight's shape and the SM count only,
 * never of M or of the kernel variant, so every row's sums are grouped the same way whatever the batch
 * (batch invariance). Cost model, fitted to the GEMV on the H200 (NVFP4, M = 1 and 8, splits 1 to
 * 8 forced on four default shapes): the busiest SM runs ceil(CTAs / SMs) CTAs one after another, four
 * at a time, and fewer than four resident CTAs leave it as slow as four would (too few warps to cover
 * the latency), so the time goes as max(ceil(CTAs / SMs), 4) * (tiles per split + 4), the 4 standing
 * for a CTA's start and split-K reduction. Ties go to fewer splits; at least two steps per split. It
 * picks the measured fastest split for (28672, 8192), (8192, 28672) and (14336, 4096) and 16 for
 * (4096, 14336), 5% slower there than 8 at M = 1 and 11% at M = 8. cta_tiles: that start's cost in
 * tiles, 4 as fitted; E2M1 takes kE2m1CtaTiles, the least that picks split 2 on (28672, 8192): with
 * WHOLE's staging in two parts (whole_part) that split is 4-6% faster than split 4 at M = 1..4 and 3-4%
 * at M = 6..8 for NVFP4 and MXFP4, and (18432, 6144) at 3 rather than 4 splits 0-2% (measured on an
 * H200). */
constexpr int kE2m1CtaTiles = 11;
/* E4M3's start cost in tiles: 8, the least that picks split 4 on (14336, 4096), the fastest there of
 * 2, 4, 6, 8, 12 and 16 forced and the 7 that a cost of 4 picks (FP8 per tensor at M = 1, 2, 4, 8:
 * 19.2, 20.6, 21.0, 21.8 against 21.9, 24.3, 24.5, 25.5 us, measured on an H200); the other default
 * shapes get the splits a cost of 4 gives them (16, 11, 4, 8); (18432, 6144), not measured, gets 4
 * where a cost of 4 gives 6. */
constexpr int kFp8CtaTiles = 8;
/* The start cost in tiles of encoding enc's GEMV CTAs (split_for's cta_tiles). */
constexpr int gemv_cta_tiles(int enc) { return is_fp8(enc) ? kFp8CtaTiles : kE2m1CtaTiles; }
/* per_sm_min: the CTAs per SM that the kernel holds (four, whole_min_ctas; the three-CTA WHOLE's three). */
static int split_for(int strips, int chunks, int tiles_per_step, int sm_count, int cta_tiles, int per_sm_min = whole_min_ctas(1))
{
    const long long groups = strip_groups(strips);
    const int max_splits = chunks / (2 * tiles_per_step) > 1 ? chunks / (2 * tiles_per_step) : 1;
    int best = 1;
    long long best_cost = -1;
    for (int sp = 1; sp <= max_splits && sp <= 16; sp++) {
        const int cps = (chunks + sp - 1) / sp;
        if ((chunks + cps - 1) / cps != sp) continue; /* no empty splits */
        const long long per_sm = (groups * sp + sm_count - 1) / sm_count;
        const long long cost = (per_sm > per_sm_min ? per_sm : per_sm_min) * (cps + cta_tiles);
        if (best_cost < 0 || cost < best_cost) best_cost = cost, best = sp;
    }
    return best;
}

/* The split of K on the fused path (NB >= 2): the most splits whose CTAs still fit in one wave of two
 * per SM (the PIPE variant's occupancy), at least one. Measured on an H200 (NVFP4, forced splits): on
 * (28672, 8192) one split against the GEMV model's four gives M = 64 131 against 189 us and M = 128 251
 * against 314 (M = 16 83 against 71); on (4096, 14336) eight against sixteen gives M = 16 24 against 32 us
 * and M = 64 66 against 95. Not for want of a second wave alone: cutting a strip group's K range costs
 * ~40% at M = 64 within one wave too (stream-K's 232 spans on (28672, 8192): 191 against 138 us), about
 * half of it instruction fetch of an unrolled reduction (the reduction is a loop, finish_unit); split 2
 * on that shape is still slower than split 1 (M = 64 149.7 against 123.5 us), for a reason not known. A
 * function of the shape and the SM count only, like split_for, so the fused path is batch invariant
 * across its tile heights. */
static int split_for_fused(int strips, int chunks, int tiles_per_step, int sm_count)
{
    const int groups = strip_groups(strips);
    const int max_splits = chunks / (2 * tiles_per_step) > 1 ? chunks / (2 * tiles_per_step) : 1;
    int best = 1;
    for (int sp = 2; sp <= max_splits && sp <= 16; sp++) {
        const int cps = (chunks + sp - 1) / sp;
        if ((chunks + cps - 1) / cps != sp) continue; /* no empty splits */
        if ((long long)groups * sp <= 2LL * sm_count) best = sp;
    }
    return best;
}

/* One split of K on the fused path (NB = 8, 64-row M tiles) past four M tiles where the M tiles alone
 * make two waves of 64-row tiles (two per SM): there the split's partials only cost, a DRAM round trip
 * of 2 x M x N x 4 bytes per split. Measured on an H200 (NVFP4 and FP8 per tensor, one split forced
 * against the default): at M = 2048 1.1x-2.0x faster on the four default shapes that split (4096 x 14336
 * 329.2 against 657.9 us), at M = 512 and 1024 faster on 15 of 16 rows (slower: 6144 x 18432 NVFP4 at
 * 1024, 458.8 against 419.6); at M = 256 slower on three of those four shapes (4096 x 14336 139.4 against
 * 74.1: 32 strip groups fill no wave), hence the four M tiles and two waves. The split then depends on M: row m's bits differ on either side of the first M where the rule
 * holds (M = 257 on 8192 x K, 1025 on 2048 x K), as they do where a small workspace cuts the split;
 * batch invariance holds on each side (test_cuda). */
static bool one_split_fits(int strips, int mtiles, int sm_count)
{
    return mtiles > 4 && (long long)strip_groups(strips) * mtiles >= 2LL * sm_count;
}

/* Units of summation in pairs (pair mode and tall pairs, below): the fine splits of cps_f chunks are the
 * units of summation whatever the tile height, and the reduction adds their partials two by two,
 * (p0 + p1) + (p2 + p3) + ...; a call that runs coarse units covers two fine splits per unit, restarts
 * its sum at the half (the first half's sum waits in the unit's own partial slot, pair_stash) and adds
 * the pair itself at the end (pair_join), so the reduction over its partials performs the same additions
 * in the same order, and every row's bits are those of the fine units. Coarse units need tiles of 32 or
 * 64 rows (WHOLE has no restart). Returns false (and leaves p as it is) where there are fewer than two
 * fine splits, or where the workspace cannot hold the partials of max(M, 128) rows at both unit sizes,
 * in 64-row tiles (fine units: only one tile of 16 rows where fine16, pair mode's case): a decision of
 * the shape and the workspace alone for every M up to 128, so that a small workspace cannot give one M
 * pairs and another the plain split (past 128 rows, as for the plain split, a workspace too small changes
 * the grouping). */
static bool pair_units(mma_params &p, int cps_f, bool coarse, bool fine16, size_t partial_floats, size_t counter_count)
{
    if (cps_f < 1) return false;
    const int s_f = (p.chunks + cps_f - 1) / cps_f, cps_c = 2 * cps_f;
    if (s_f < 2) return false;
    const size_t s_c = (size_t)(p.chunks + cps_c - 1) / cps_c, rows = p.m > 128 ? p.m : 128;
    const size_t tiles64 = (rows + 63) / 64;
    const size_t need_f = (fine16 ? 16 : tiles64 * 64) * p.strips * s_f * 16;
    const size_t need_c = tiles64 * p.strips * s_c * 64 * 16;
    if ((need_f > need_c ? need_f : need_c) > partial_floats || tiles64 * p.strips > counter_count) return false;
    p.cps = coarse ? cps_c : cps_f;
    p.splits = (p.chunks + p.cps - 1) / p.cps;
    p.pairs = coarse ? 0 : 1;
    p.half = coarse ? cps_f : 0;
    return true;
}

/* Pair mode of the fused path (off unless QMM_CUDA_PAIRS=1, see launch_variant): 16-row tiles want a finer split
 * than the taller ones (measured on an H200, FP8: the split for one wave of four CTAs per SM takes M = 16
 * on (8192, 28672) from 129 to 86 us and on (6144, 18432) from 72 to 57, while the same split makes M = 32
 * and 64 3-32% slower), but the split may not depend on M (batch invariance). So each unit of the usual
 * split (split_for_fused, taller tiles) is cut in two halves, the fine splits (pair_units): 16-row tiles
 * run one fine split per unit (twice the CTAs, four per SM), taller tiles the usual units as coarse ones.
 * A fine split of its own (rounded to 8 tiles) would unbalance the taller tiles' units: (6144, 18432)
 * M = 32 and 64 8-10% slower. */
template <int NB>
static bool pair_split(mma_params &p, int tiles_per_step, int sm_count, size_t partial_floats, size_t counter_count)
{
    const int sc = split_for_fused(p.strips, p.chunks, tiles_per_step, sm_count);
    const int cps_c = ((p.chunks + sc - 1) / sc + 1) / 2 * 2; /* even: two halves */
    return pair_units(p, cps_c / 2, NB != 2, true, partial_floats, counter_count);
}

/* Tall pairs (QMM_CUDA_TALL, see launch_variant): the usual split (split_for_fused) fills one wave of
 * two CTAs per SM with one 64-row M tile, and two or more M tiles (M > 64) make it two waves or more.
 * Half the split is 11-30% faster at M = 128 where it brings back one wave (NVFP4, forced splits,
 * measured on an H200: (14336, 4096) 66.5 against 95.7 us, (4096, 14336) 78.5 against 97.1, (8192, 28672)
 * 218.0 against 244.2), and slower where it does not ((6144, 18432), split 3 against 5: 161.0 against
 * 149.8). The split may not depend on M, so the usual split's units are the fine splits of pair_units
 * for every M, and a call with several M tiles runs coarse units of two where their waves take no longer
 * than the fine ones' (which M may decide: both give the same bits). force: coarse units wherever there are
 * several M tiles (QMM_CUDA_TALL=2, for the tests, whose small weights fill one wave either way). */
template <int NB>
static bool tall_split(mma_params &p, int tiles_per_step, int sm_count, size_t partial_floats, size_t counter_count,
                       bool force)
{
    /* split_for_fused leaves no split empty, so its sc splits of cps_f chunks are the fine units */
    const int sc = split_for_fused(p.strips, p.chunks, tiles_per_step, sm_count), cps_f = (p.chunks + sc - 1) / sc;
    const int s_c = (p.chunks + 2 * cps_f - 1) / (2 * cps_f);
    const long long ctas = (long long)strip_groups(p.strips) * p.mtiles, slots = 2LL * sm_count;
    /* a coarse unit takes twice as long as a fine one: coarse where their waves take no longer, and fewer
     * units (less filling of the pipeline, fewer partials) win the tie. Coarse units wherever they need
     * fewer waves would run (6144, 18432) at M = 256 (4 waves of fine units, 3 of coarse ones) 9% slower
     * (measured on an H200) */
    const long long waves_f = (ctas * sc + slots - 1) / slots, waves_c = (ctas * s_c + slots - 1) / slots;
    /* coarse units restart their sum at the half: PIPE and STEP at 32 or 64 rows (not WHOLE) */
    const bool coarse = NB >= 4 && p.mtiles > 1 && (force || 2 * waves_c <= waves_f);
    return pair_units(p, cps_f, coarse, false, partial_floats, counter_count);
}

/* The GEMV's split for the three-CTA WHOLE (kGemvEarlyCtas): split_for's at three CTAs per SM where always
 * is set or the rule below holds, else 0 (it does not run; gemv_early_split in kernels_mma_launch.cuh sets
 * always by its knob). The rule: split_for's model at three CTAs per SM gives a grid of one wave that
 * fills at least 7/8 of the three-CTA slots. Measured on an H200 at M = 1..8 against the four-CTA kernel
 * at its own split: (4096, 14336), 384 CTAs of 396
 * slots, 7-11% faster for E2M1 and 1-4% for E4M3 (split 12 alone, on the four-CTA kernel: 3-6% faster, FP8
 * 2-5% slower); (6144, 18432), 384, 3-5% and 2-3%; (8192, 28672), 384, a median 2% and 1%; but (14336,
 * 4096), 336 of 396, 1-6% slower, hence the fill (cause not found: the four-CTA kernel's 448 of 528 fill
 * the same share). (28672, 8192), 224 strip groups, and (18432, 6144) reach no such grid at any split and
 * keep the four-CTA kernel. */
static int gemv_early_fit(int strips, int chunks, int tiles_per_step, int sm_count, int cta_tiles, bool always)
{
    const int sp = split_for(strips, chunks, tiles_per_step, sm_count, cta_tiles, kGemvEarlyCtas);
    const long long grid = (long long)strip_groups(strips) * sp, slots = (long long)kGemvEarlyCtas * sm_count;
    return always || (8 * grid >= 7 * slots && grid <= slots) ? sp : 0;
}

} // namespace qmm_mma

#endif
