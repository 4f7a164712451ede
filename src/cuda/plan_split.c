/* The plan's division of K (plan.h): functions of the weight's shape, the SM count and the workspace,
 * never of M (batch invariance), except where named. The GEMV's split (qmm__cuda_split_gemv, with its
 * encodings' start costs) and its three-CTA WHOLE's; the fused path's split, one split past four M
 * tiles, and its units in pairs (pair_units, for pair mode and tall pairs). The numbers in the rules are
 * the tunables' (plan.c), measured on an H200; docs/cuda.md, "Split-K", says what each rule buys. */
#include "plan.h"

static int qmm__ceil(int a, int b) { return (a + b - 1) / b; }

/* Strip groups: the CTAs of one M tile and one split, QMM__CUDA_WARPS strips of 16 weight rows each. */
int qmm__cuda_strip_groups(int strips) { return qmm__ceil(strips, QMM__CUDA_WARPS); }

/* The split of K on the GEMV path (NB = 1): a cost model of the shape and the SM count, fitted to the
 * GEMV on the H200 (NVFP4, M = 1 and 8, splits 1 to 8 forced on four default shapes): the busiest SM
 * runs ceil(CTAs / SMs) CTAs one after another, per_sm_min at a time (four: whole_min_ctas; the
 * three-CTA WHOLE's three), and fewer resident CTAs leave it as slow as per_sm_min would (too few warps
 * to cover the latency), so the time goes as max(ceil(CTAs / SMs), per_sm_min) * (tiles per split +
 * cta_tiles), cta_tiles standing for a CTA's start and split-K reduction (the tunables'
 * e2m1_cta_tiles and fp8_cta_tiles). Ties go to fewer splits; at least two steps per split. */
int qmm__cuda_split_gemv(int strips, int chunks, int tiles_per_step, int sm_count, int cta_tiles, int per_sm_min,
                         const qmm__cuda_tunables *t)
{
    const long long groups = qmm__cuda_strip_groups(strips);
    const int max_splits = chunks / (2 * tiles_per_step) > 1 ? chunks / (2 * tiles_per_step) : 1;
    int best = 1;
    long long best_cost = -1;
    for (int sp = 1; sp <= max_splits && sp <= t->max_splits; sp++) {
        const int cps = qmm__ceil(chunks, sp);
        if (qmm__ceil(chunks, cps) != sp) continue; /* no empty splits */
        const long long per_sm = (groups * sp + sm_count - 1) / sm_count;
        const long long cost = (per_sm > per_sm_min ? per_sm : per_sm_min) * (cps + cta_tiles);
        if (best_cost < 0 || cost < best_cost) best_cost = cost, best = sp;
    }
    return best;
}

/* The split of K on the fused path (NB >= 2): the most splits whose CTAs still fit in one wave of
 * fused_split_per_sm per SM (PIPE's occupancy), at least one. Cutting a strip group's K range costs
 * ~40% at M = 64 within one wave too (stream-K's 232 spans on (28672, 8192): 191 against 138 us). A
 * function of the shape and the SM count only, so the fused path is batch invariant across its tile
 * heights. */
int qmm__cuda_split_fused(int strips, int chunks, int tiles_per_step, int sm_count, const qmm__cuda_tunables *t)
{
    const int groups = qmm__cuda_strip_groups(strips);
    const int max_splits = chunks / (2 * tiles_per_step) > 1 ? chunks / (2 * tiles_per_step) : 1;
    int best = 1;
    for (int sp = 2; sp <= max_splits && sp <= t->max_splits; sp++) {
        const int cps = qmm__ceil(chunks, sp);
        if (qmm__ceil(chunks, cps) != sp) continue; /* no empty splits */
        if ((long long)groups * sp <= (long long)t->fused_split_per_sm * sm_count) best = sp;
    }
    return best;
}

/* One split of K on the fused path (64-row M tiles) past one_split_mtiles M tiles where the M tiles
 * alone make one_split_per_sm 64-row tiles per SM: there the split's partials only cost, a
 * DRAM round trip of 2 x M x N x 4 bytes per split. The split then depends on M: row m's bits differ on
 * either side of the first M where the rule holds (M = 257 on 8192 x K, 1025 on 2048 x K), as they do
 * where a small workspace cuts the split; batch invariance holds on each side (test_cuda). */
bool qmm__cuda_one_split_fits(int strips, int mtiles, int sm_count, const qmm__cuda_tunables *t)
{
    return mtiles > t->one_split_mtiles &&
           (long long)qmm__cuda_strip_groups(strips) * mtiles >= (long long)t->one_split_per_sm * sm_count;
}

/* Units of summation in pairs (pair mode and tall pairs, below): the fine splits of cps_f chunks are the
 * units of summation whatever the tile height, and the reduction adds their partials two by two,
 * (p0 + p1) + (p2 + p3) + ...; a call that runs coarse units covers two fine splits per unit, restarts
 * its sum at the half (the first half's sum waits in the unit's own partial slot, pair_stash) and adds
 * the pair itself at the end (pair_join), so the reduction over its partials performs the same additions
 * in the same order, and every row's bits are those of the fine units. Coarse units need tiles of 32 or
 * 64 rows (WHOLE has no restart). false (d untouched) where there are fewer than two fine splits, or
 * where the workspace cannot hold the partials of max(M, 128) rows at both unit sizes, in 64-row tiles
 * (fine units: only one tile of 16 rows where fine16, pair mode's case): a decision of the shape and the
 * workspace alone for every M up to 128, so that a small workspace cannot give one M pairs and another
 * the plain split (past 128 rows, as for the plain split, a workspace too small changes the grouping). */
static bool pair_units(const qmm__cuda_shape *s, int cps_f, bool coarse, bool fine16, size_t partial_floats, size_t counters,
                       qmm__cuda_division *d)
{
    if (cps_f < 1) return false;
    const int s_f = qmm__ceil(s->chunks, cps_f), cps_c = 2 * cps_f;
    if (s_f < 2) return false;
    const size_t s_c = (size_t)qmm__ceil(s->chunks, cps_c), rows = s->m > 128 ? (size_t)s->m : 128;
    const size_t tiles64 = (rows + 63) / 64;
    const size_t need_f = (fine16 ? 16 : tiles64 * 64) * (size_t)s->strips * (size_t)s_f * 16;
    const size_t need_c = tiles64 * (size_t)s->strips * s_c * 64 * 16;
    if ((need_f > need_c ? need_f : need_c) > partial_floats || tiles64 * (size_t)s->strips > counters) return false;
    d->cps = coarse ? cps_c : cps_f;
    d->splits = qmm__ceil(s->chunks, d->cps);
    d->pairs = coarse ? 0 : 1;
    d->half = coarse ? cps_f : 0;
    return true;
}

/* Pair mode (off unless the override's pairs): 16-row tiles want a finer split than the taller ones
 * (measured on an H200, FP8: the split for one wave of four CTAs per SM takes M = 16 on (8192, 28672)
 * from 129 to 86 us and on (6144, 18432) from 72 to 57, while the same split makes M = 32 and 64 3-32%
 * slower), but the split may not depend on M (batch invariance). So each unit of the usual split (taller
 * tiles) is cut in two halves, the fine splits (pair_units): 16-row tiles run one fine split per unit
 * (twice the CTAs, four per SM), taller tiles the usual units as coarse ones. Off by default: FP8 runs
 * 1-30% faster without it at M = 16..64 on the three large default shapes ((6144, 18432) M = 16: 36.7
 * against 52.7 us), NVFP4 13-27% slower with it at M = 16. */
bool qmm__cuda_pair_split(const qmm__cuda_shape *s, int nb, int tiles_per_step, int sm_count, size_t partial_floats,
                          size_t counters, const qmm__cuda_tunables *t, qmm__cuda_division *d)
{
    const int sc = qmm__cuda_split_fused(s->strips, s->chunks, tiles_per_step, sm_count, t);
    const int cps_c = (qmm__ceil(s->chunks, sc) + 1) / 2 * 2; /* even: two halves */
    return pair_units(s, cps_c / 2, nb != 2, true, partial_floats, counters, d);
}

/* Tall pairs: the usual split fills one wave of two CTAs per SM with one 64-row M tile, and two or more
 * M tiles (M > 64) make it two waves or more. Half the split is 11-30% faster at M = 128 where it brings
 * back one wave (NVFP4, forced splits, measured on an H200: (14336, 4096) 66.5 against 95.7 us), and
 * slower where it does not ((6144, 18432), split 3 against 5: 161.0 against 149.8). The split may not
 * depend on M, so the usual split's units are the fine splits of pair_units for every M, and a call with
 * several M tiles runs coarse units of two where their waves take no longer than the fine ones' (which M
 * may decide: both give the same bits). force: coarse units wherever there are several M tiles (for the
 * tests, whose small weights fill one wave either way). */
bool qmm__cuda_tall_split(const qmm__cuda_shape *s, int nb, int tiles_per_step, int sm_count, size_t partial_floats,
                          size_t counters, bool force, const qmm__cuda_tunables *t, qmm__cuda_division *d)
{
    /* the fused split leaves no split empty, so its sc splits of cps_f chunks are the fine units */
    const int sc = qmm__cuda_split_fused(s->strips, s->chunks, tiles_per_step, sm_count, t), cps_f = qmm__ceil(s->chunks, sc);
    const int s_c = qmm__ceil(s->chunks, 2 * cps_f);
    const long long ctas = (long long)qmm__cuda_strip_groups(s->strips) * s->mtiles, slots = 2LL * sm_count;
    /* a coarse unit takes twice as long as a fine one: coarse where their waves take no longer, and fewer
     * units (less filling of the pipeline, fewer partials) win the tie. Coarse units wherever they need
     * fewer waves would run (6144, 18432) at M = 256 (4 waves of fine units, 3 of coarse ones) 9% slower
     * (measured on an H200) */
    const long long waves_f = (ctas * sc + slots - 1) / slots, waves_c = (ctas * s_c + slots - 1) / slots;
    /* coarse units restart their sum at the half: PIPE and STEP at 32 or 64 rows (not WHOLE) */
    const bool coarse = nb >= 4 && s->mtiles > 1 && (force || 2 * waves_c <= waves_f);
    return pair_units(s, cps_f, coarse, false, partial_floats, counters, d);
}

/* The GEMV's split for the three-CTA WHOLE (QMM__CUDA_GEMV_EARLY_CTAS): the GEMV's split at three CTAs
 * per SM where `always` is set or its grid is one wave that fills at least the tunables' share of the
 * three-CTA slots; else 0 (it does not run). Measured on an H200 at M = 1..8 against the four-CTA
 * kernel at its own split: (4096, 14336), 384 CTAs of 396 slots, 7-11% faster for E2M1 and 1-4% for
 * E4M3; (6144, 18432), 384, 3-5% and 2-3%; (8192, 28672), 384, a median 2% and 1%; but (14336, 4096),
 * 336 of 396, 1-6% slower, hence the fill (cause not found: the four-CTA kernel's 448 of 528 fill the
 * same share). (28672, 8192), 224 strip groups, and (18432, 6144) reach no such grid at any split and
 * keep the four-CTA kernel. */
int qmm__cuda_gemv_early_split(int strips, int chunks, int tiles_per_step, int sm_count, int cta_tiles, bool always,
                               const qmm__cuda_tunables *t)
{
    const int sp = qmm__cuda_split_gemv(strips, chunks, tiles_per_step, sm_count, cta_tiles, QMM__CUDA_GEMV_EARLY_CTAS, t);
    const long long grid = (long long)qmm__cuda_strip_groups(strips) * sp, slots = (long long)QMM__CUDA_GEMV_EARLY_CTAS * sm_count;
    return always || (t->gemv3_fill_den * grid >= t->gemv3_fill_num * slots && grid <= slots) ? sp : 0;
}
