/* The plan's choice of the WG kernel (plan.h, kernels_mma_wg.cuh): whether it runs a division of K of
 * the fused path, in CTAs of how many rows, in clusters of how many. The rules were measured on NVFP4 and
 * MXFP4 (an H200); FP8 takes them in columns of K. Either way the bits are those of PIPE and STEP: the
 * WG kernel runs the same units of K (coarse units or their fine halves, which sum to the same bits).
 * - 64-row CTAs where the division has no coarse units (tall pairs' coarse units run as their fine
 *   halves there, twice the CTAs): M = 33 and 64 1-26% faster than PIPE on every default shape (NVFP4
 *   (8192, 28672) M = 64: 105.0 against 123.1 us), M = 100..128 12-21% faster where there are no coarse
 *   units, but up to 22% slower than PIPE's coarse units ((14336, 4096) M = 128: 88.3 against 68.9).
 * - 128-row CTAs (two M tiles, one CTA per SM) for M = 65..128, also where the division has coarse
 *   units, over its fine units where they are long (wg_long_stages stages or more) or wg_long_splits or
 *   fewer, or over coarse units (wg_prefer_coarse): (8192, 28672) M = 65..128 11-22% faster (M = 65:
 *   166.4 against 215.5 us), (28672, 8192) 6-11%, (14336, 4096) level to 6% faster; over short and many
 *   fine units it loses ((4096, 14336), eight splits of 28 chunks: M = 128 95.0 against 77.0).
 * - 128-row CTAs over coarse units where their waves times their units' length is no more than the
 *   fine plan's: fewer waves for the same work per SM, half the partials, and a cluster one wave can
 *   hold ((8192, 28672) M = 128: 140.5 against 190.4 us). At two or four M tiles: at three one 128-row
 *   group is half empty.
 * - 256-row CTAs (192 rows at three M tiles) past two M tiles where their plan takes one wave: (8192,
 *   28672) M = 224..256 280 against 424-428 us; in two waves they lose ((6144, 18432): 236.9 against
 *   208.7).
 * - Past four M tiles (M > 256) where no one-wave plan of 256-row CTAs exists: CTAs of 256, 128 or 64
 *   rows, whichever costs least by wg_cost.
 * - 32-row CTAs (M = 17..32) where K is split in at most wg32_max_splits units: one split 10-19% faster
 *   than PIPE, two 7-19%, four 10-22%, five 1-8%, eight 3-9% slower (cause not known). */
#include "plan.h"

static int qmm__ceil(int a, int b) { return (a + b - 1) / b; }

/* The division d with its coarse units as their fine halves (the same bits, pair_units). */
static qmm__cuda_division fine_units(qmm__cuda_division d, int chunks)
{
    if (d.half > 0) {
        d.cps = d.half;
        d.splits = qmm__ceil(chunks, d.cps);
        d.pairs = 1;
        d.half = 0;
    }
    return d;
}

/* The fine units f as coarse units of two that restart at the half (the same bits); f itself where it
 * has no pairs. */
static qmm__cuda_division coarse_units(qmm__cuda_division f, int chunks)
{
    if (f.pairs && f.splits >= 2) {
        f.half = f.cps;
        f.cps = 2 * f.half;
        f.splits = qmm__ceil(chunks, f.cps);
        f.pairs = 0;
    }
    return f;
}

/* The launch of division q in CTAs of `rows` rows (room: what the device holds of that kernel): its
 * splits reduced in one cluster where the clusters take no more waves than the same CTAs without
 * (clusters of 4, 5 or 8 64-row CTAs that spill into a second wave are up to 1.5x slower: on an H200
 * (6144, 18432) M = 33 holds 47 clusters of five, not its 48), up to cl_limit CTAs, and for one split
 * only in CTAs of 128 rows or more (the epilogue from shared memory, 3-8% faster at 128 rows, 6-7%
 * slower in 64-row CTAs); elsewhere through the workspace. Clusters against the workspace, measured on
 * an H200: two splits ((14336, 4096)) M = 64 37.4 against 49.0 us, M = 128 69.9 against 107.1. */
static qmm__cuda_wg_choice wg_plan_of(const qmm__cuda_shape *s, const qmm__cuda_division *q, int rows, const qmm__cuda_wg_room *room,
                                      int cl_limit)
{
    const int tiles = rows > QMM__CUDA_WG_ROWS ? rows / QMM__CUDA_WG_ROWS : 1, S = q->splits;
    const long long grid = (long long)qmm__cuda_strip_groups(s->strips) * S * qmm__ceil(s->mtiles, tiles);
    qmm__cuda_wg_choice w = {*q, rows, 0, (grid + room->slots - 1) / room->slots};
    if (S <= cl_limit && S <= QMM__CUDA_WG_CLUSTER_MAX && room->clusters[S] > 0 && (S > 1 || rows > QMM__CUDA_WG_ROWS) &&
        (grid / S + room->clusters[S] - 1) / room->clusters[S] <= w.waves)
        w.cluster = S;
    return w;
}

/* w, or the coarse units of its fine units f (two per unit, the sum restarting at the half: the same
 * bits) in CTAs of `rows` rows (room) where their waves times their length is no more than w's, or
 * wherever the override's wg_coarse is 2; only where f has pairs and each half is whole stages (the
 * restart sits at a stage's start, mma_kernel_wg) */
static qmm__cuda_wg_choice wg_prefer_coarse(const qmm__cuda_wg_choice *w, const qmm__cuda_shape *s, const qmm__cuda_division *f,
                                            int rows, const qmm__cuda_wg_room *room, int stage_chunks, const qmm__cuda_override *o)
{
    if (!f->pairs || f->splits < 2 || f->cps % stage_chunks != 0) return *w;
    const qmm__cuda_division cu = coarse_units(*f, s->chunks);
    const qmm__cuda_wg_choice c = wg_plan_of(s, &cu, rows, room, o->wg_cluster);
    return o->wg_coarse == 2 || c.waves * c.div.cps <= w->waves * w->div.cps ? c : *w;
}

/* What w costs in CTAs of w->rows rows on a device that holds room of them: its waves times what one
 * wave covers (each slot's rows times its unit's chunks), weighted by what a row-chunk costs in CTAs of
 * that many rows (the tunables' wg_cost64, wg_cost128, wg_cost256). */
static long long wg_cost(const qmm__cuda_wg_choice *w, const qmm__cuda_wg_room *room, const qmm__cuda_tunables *t)
{
    const long long weight = w->rows > 2 * QMM__CUDA_WG_ROWS ? t->wg_cost256 : w->rows > QMM__CUDA_WG_ROWS ? t->wg_cost128 : t->wg_cost64;
    return w->waves * w->div.cps * w->rows * room->slots * weight;
}

/* the plan in CTAs of `rows` rows (more than 64), over fine or coarse units */
static qmm__cuda_wg_choice tall_plan(const qmm__cuda_shape *s, const qmm__cuda_division *f, int rows,
                                     const qmm__cuda_wg_room wg[QMM__CUDA_WG_HEIGHTS], int stage_chunks, const qmm__cuda_override *o)
{
    const qmm__cuda_wg_room *room = &wg[qmm__cuda_wg_height(rows)];
    const qmm__cuda_wg_choice w = wg_plan_of(s, f, rows, room, o->wg_cluster);
    return o->wg_coarse != 0 ? wg_prefer_coarse(&w, s, f, rows, room, stage_chunks, o) : w;
}

bool qmm__cuda_wg_choose(const qmm__cuda_shape *s, const qmm__cuda_division *d, const qmm__cuda_wg_room wg[QMM__CUDA_WG_HEIGHTS],
                         int stage_chunks, int tile_rows, const qmm__cuda_override *o, const qmm__cuda_tunables *t,
                         qmm__cuda_wg_choice *out)
{
    enum { R64 = QMM__CUDA_WG_ROWS, R128 = 2 * QMM__CUDA_WG_ROWS, R192 = 3 * QMM__CUDA_WG_ROWS, R256 = 4 * QMM__CUDA_WG_ROWS };
    const qmm__cuda_wg_room *own = &wg[qmm__cuda_wg_height(tile_rows)], *r128 = &wg[qmm__cuda_wg_height(R128)];
    const qmm__cuda_wg_room *r192 = &wg[qmm__cuda_wg_height(R192)], *r256 = &wg[qmm__cuda_wg_height(R256)];
    const qmm__cuda_division f = fine_units(*d, s->chunks);
    /* units of whole half stages (mma_kernel_wg): for E4M3 an even number of chunks */
    const int hs = stage_chunks / 2;
    if (own->slots <= 0 || f.cps % hs != 0 || s->chunks % hs != 0) return false;
    if (tile_rows < R64 && o->wg != 2 && f.splits > t->wg32_max_splits) return false;
    const bool long_units = f.cps >= t->wg_long_stages * stage_chunks || f.splits <= t->wg_long_splits;
    /* 256-row CTAs (192-row ones at three M tiles) past two M tiles where their plan takes one wave
     * (wg256 1), past one M tile (2) or two (3) whatever it takes, never (0); over fine or coarse units */
    if (o->wg != 0 && o->wg256 != 0 && r256->slots > 0 && tile_rows == R64 && s->mtiles >= (o->wg256 == 2 ? 2 : 3)) {
        /* three M tiles (M = 129..192): 192-row CTAs, the same CTAs as 256 rows with a quarter fewer
         * MMAs; also in more than one wave where the fine units are long (as for 128 rows) */
        const bool rows192 = s->mtiles == 3 && r192->slots > 0 && o->wg192 != 0;
        const qmm__cuda_wg_choice w = tall_plan(s, &f, rows192 ? R192 : R256, wg, stage_chunks, o);
        if (o->wg256 != 1 || w.waves == 1 || (rows192 && long_units)) {
            *out = w;
            return true;
        }
    }
    /* past four M tiles (M > 256, fused only on the largest weights) under the default switches: CTAs of
     * 256, 128 or 64 rows (64 only where the WG kernel runs them, d->half == 0; else PIPE would),
     * whichever costs least by wg_cost. 64-row tiles alone would be PIPE where the division has coarse
     * units ((8192, 28672) M = 384: 644.7 us, against 371.9 in 128-row CTAs, measured on an H200) */
    if (o->wg == 1 && o->wg128 == 1 && o->wg256 == 1 && tile_rows == R64 && s->mtiles > 4) {
        bool any = false;
        long long best = 0;
        qmm__cuda_wg_choice cand[3];
        int count = 0;
        if (r256->slots > 0) cand[count++] = tall_plan(s, &f, R256, wg, stage_chunks, o);
        if (r128->slots > 0) cand[count++] = wg_plan_of(s, &f, R128, r128, o->wg_cluster);
        if (d->half == 0) cand[count++] = wg_plan_of(s, &f, R64, own, o->wg_cluster);
        for (int i = 0; i < count; i++) {
            const long long c = wg_cost(&cand[i], &wg[qmm__cuda_wg_height(cand[i].rows)], t);
            if (!any || c < best) *out = cand[i], best = c, any = true;
        }
        if (any) return true;
    }
    /* 128-row CTAs at all: past one M tile, unless wg128 is 0; at two M tiles over long units */
    const bool can128 = r128->slots > 0 && s->m > R64 && o->wg128 != 0;
    const bool rows128 = can128 && (o->wg128 == 2 || (o->wg128 == 1 && s->mtiles == 2 && long_units));
    const int rows = rows128 ? R128 : tile_rows;
    qmm__cuda_wg_choice plan = wg_plan_of(s, &f, rows, &wg[qmm__cuda_wg_height(rows)], o->wg_cluster);
    if (can128 && (o->wg_coarse == 2 || (o->wg_coarse == 1 && (s->mtiles == 2 || s->mtiles == 4))))
        plan = wg_prefer_coarse(&plan, s, &f, R128, r128, stage_chunks, o);
    *out = plan;
    return o->wg == 2 || (o->wg == 1 && (d->half == 0 || plan.rows > R64));
}
