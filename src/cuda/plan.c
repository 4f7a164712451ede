/* The CUDA backend's plan (plan.h): the table of tunables, the dispatcher's tiers, the kernel variant of
 * the GEMV and fused paths, and the plan's text. The division of K is plan_split.c's, the WG kernel's
 * choice plan_wg.c's. Pure host code: no CUDA call. */
#include "plan.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the tunables ----
 * One table per architecture, each value the crossover or the optimum measured with `qmm bench` (the
 * five default shapes unless named; docs/cuda.md, "The plan" and "Tunables"). Only the H200 was measured:
 * other architectures take its table. */
static const qmm__cuda_tunables qmm__cuda_tunables_h200 = {
    .measured_on = "H200 (sm_90, 132 SMs)",
    /* per encoding (NVFP4, MXFP4, FP8), the largest M of each path; each encoding measured on its own */
    .tiers = {{
                  /* GEMV to M = 8: it beats the fused path at M = 8 on 8 of 10 shape-format pairs (NVFP4
                   * 4096 x 14336: 19.6 against 23.9 us) and loses at M = 12 on all 10 */
                  .gemv_max_m = 8,
                  /* fused without the WG kernel (fp16 A split into bf16 hi + lo) to 192, from 100 Mi
                   * elements to 256: measured with the WG kernel (its 192-row CTAs beat materialize at
                   * M = 160..192 on the 58.7 M-element shapes; on 6144 x 18432 fused wins to M = 256),
                   * not measured again without it */
                  .fused_max_m = 192, .fused_large_elems = (size_t)100 << 20, .fused_large_max_m = 256,
                  /* with the WG kernel to 256: fused beats materialize there on the three smaller shapes
                   * (NVFP4 14336 x 4096: 63.4 against 91.1 us); at 384-512 the two are mixed */
                  .fused_wg_max_m = 256,
                  /* from 200 Mi elements to 1024: on the two 235 M-element shapes fused beats
                   * materialize at M = 1024 (NVFP4 28672 x 8192 616.5 against 765.0 us); mixed at 2048 */
                  .fused_huge_elems = (size_t)200 << 20, .fused_huge_max_m = 1024, .fused_huge_channel_max_m = 0,
                  /* from 400 Mi elements (language-model heads) to 2048: NVFP4 fused 2978.8 against
                   * materialize's 3346.1 us at M = 2048 on 128256 x 4096 */
                  .fused_giant_elems = (size_t)400 << 20, .fused_giant_max_m = 2048,
                  /* past the tiers, the fill rule to 2048: at M = 4096 materialize is level or faster
                   * on three shapes (14336 x 4096 NVFP4 690.6 against 738.4 us) */
                  .fused_fill_max_m = 2048,
              },
              {/* MXFP4: NVFP4's values, measured on their own */
               .gemv_max_m = 8, .fused_max_m = 192, .fused_large_elems = (size_t)100 << 20, .fused_large_max_m = 256,
               .fused_wg_max_m = 256, .fused_huge_elems = (size_t)200 << 20, .fused_huge_max_m = 1024,
               .fused_huge_channel_max_m = 0, .fused_giant_elems = (size_t)400 << 20, .fused_giant_max_m = 2048,
               .fused_fill_max_m = 2048},
              {/* FP8: NVFP4's values but per channel from 200 Mi elements to 2048: materialize pays an fp32
                * round trip for the channel scales (fused 1336.8 against 1652.2 us at M = 2048 on 28672 x
                * 8192); level at 4096 and 8192 */
               .gemv_max_m = 8, .fused_max_m = 192, .fused_large_elems = (size_t)100 << 20, .fused_large_max_m = 256,
               .fused_wg_max_m = 256, .fused_huge_elems = (size_t)200 << 20, .fused_huge_max_m = 1024,
               .fused_huge_channel_max_m = 2048, .fused_giant_elems = (size_t)400 << 20, .fused_giant_max_m = 2048,
               .fused_fill_max_m = 2048}},
    /* the fill rule at 4/5: one split beats materialize or is level at every measured fill of 0.85 and
     * more, and loses at 0.48 and 0.73 (NVFP4 and FP8 per tensor at M = 512..2048) */
    .fill_num = 4, .fill_den = 5,
    /* the GEMV split's start cost: E2M1 11 tiles, the least that picks split 2 on 28672 x 8192 (4-6%
     * faster than 4 at M = 1..4); E4M3 8, the least that picks split 4 on 14336 x 4096 (FP8 at M = 1:
     * 19.2 against 21.9 us for the 7 of a cost of 4) */
    .e2m1_cta_tiles = 11, .fp8_cta_tiles = 8,
    /* at most 16 splits: a bound on the splits' search, not a measured value (the GEMV model picks 16
     * on 4096 x 14336, 5% slower there than 8 at M = 1) */
    .max_splits = 16,
    /* the fused split fills one wave of two CTAs per SM (PIPE's occupancy): on 28672 x 8192 one split
     * against the GEMV model's four gives M = 64 131 against 189 us */
    .fused_split_per_sm = 2,
    /* one split past four 64-row M tiles whose CTAs make two per SM: M = 2048 1.1x-2.0x faster (4096 x
     * 14336 NVFP4 329.2 against 657.9 us); at M = 256 slower on three shapes (32 strip groups fill no
     * wave) */
    .one_split_mtiles = 4, .one_split_per_sm = 2,
    /* the three-CTA GEMV where its one wave fills 7/8 of its slots: 4096 x 14336 (384 of 396) 7-11%
     * faster for E2M1; 14336 x 4096 (336 of 396) 1-6% slower */
    .gemv3_fill_num = 7, .gemv3_fill_den = 8,
    /* the WG kernel's 32-row CTAs up to five splits: 1-8% faster than PIPE at five, 3-9% slower at
     * eight (4096 x 14336) */
    .wg32_max_splits = 5,
    /* long units for 128-row CTAs at M = 65..128: 48 stages (96 E2M1 chunks) or two units or fewer;
     * 8192 x 28672 (four units of 112 chunks) 11-22% faster, 4096 x 14336 (eight of 28) 23% slower */
    .wg_long_stages = 48, .wg_long_splits = 2,
    /* wg_cost's weights, fitted to 8192 x 28672 and 28672 x 8192 at M = 384, 512 and 1024 (NVFP4, FP8),
     * where they pick the plan measured fastest in all six: 256-row CTAs at M = 512 on 8192 x 28672
     * 387 us against 500 in 128-row ones, 64-row ones at 384 on 28672 x 8192 386 against 430 */
    .wg_cost64 = 19, .wg_cost128 = 20, .wg_cost256 = 16,
};

const qmm__cuda_tunables *qmm__cuda_tunables_for(int major, int minor)
{
    (void)major, (void)minor; /* sm_80, sm_89 and sm_100 take the H200's values: not measured there */
    return &qmm__cuda_tunables_h200;
}

/* ---- forms ---- */

static const struct {
    int kenc;
    bool split;
} qmm__cuda_forms[QMM__FORM_COUNT] = {
    [QMM__FORM_NVFP4] = {QMM__ENC_NVFP4, false},      [QMM__FORM_NVFP4_F16] = {QMM__KENC_NVFP4_HALF, false},
    [QMM__FORM_MXFP4] = {QMM__ENC_MXFP4, false},      [QMM__FORM_MXFP4_F16] = {QMM__KENC_MXFP4_HALF, false},
    [QMM__FORM_MXFP4_SPLIT] = {QMM__ENC_MXFP4, true}, [QMM__FORM_FP8] = {QMM__ENC_FP8, false},
    [QMM__FORM_FP8_F16] = {QMM__KENC_FP8_HALF, false},
};
int qmm__cuda_form_kenc(qmm__cuda_form f) { return qmm__cuda_forms[f].kenc; }
bool qmm__cuda_form_split(qmm__cuda_form f) { return qmm__cuda_forms[f].split; }

/* fp16 activations meet an fp16 decode where the encoding has one (qmm__cuda_half_decode), else A is
 * split into bf16 hi + lo */
qmm__cuda_form qmm__cuda_form_of(qmm__cuda_encoding enc, int mx_half, qmm_dtype a_type)
{
    const bool f16 = a_type == QMM_DTYPE_FP16;
    switch (enc) {
    case QMM__ENC_NVFP4: return f16 ? QMM__FORM_NVFP4_F16 : QMM__FORM_NVFP4;
    case QMM__ENC_MXFP4: return !f16 ? QMM__FORM_MXFP4 : mx_half ? QMM__FORM_MXFP4_F16 : QMM__FORM_MXFP4_SPLIT;
    case QMM__ENC_FP8: return f16 ? QMM__FORM_FP8_F16 : QMM__FORM_FP8;
    default: return QMM__FORM_COUNT;
    }
}

/* ---- the dispatcher ---- */

/* Whether the fused path's grid at one split of K, counted in CTAs of 256 rows (the WG kernel's tallest)
 * over a strip group of 128 weight rows, does the tunables' share (4/5) or more of the work its waves of
 * sm_count CTAs could: the rows of A over 256 per CTA, times the CTAs, over the waves' slots. Past four
 * 64-row M tiles the fused path runs one split wherever the M tiles alone make two 64-row tiles per SM
 * (qmm__cuda_one_split_fits), which every grid this rule passes does. The grid's time goes by its waves,
 * whatever rows its last CTAs hold: 4096 x 14336 at one split takes 158.1 us at M = 1024 (128 CTAs, one
 * wave), 140.1 at 512 and 139.4 at 256 (measured on an H200). Hence the rows, not the CTAs: at M = 257 a
 * grid of two 256-row CTAs per strip group takes what M = 512 takes, while materialize takes about half
 * (not measured between multiples of 256). The rows at a fill of 0.73 run 64-row CTAs by wg_cost (334.7
 * us on 4096 x 14336 at M = 1536 against 329.2 for 2048 rows in 256-row CTAs). */
bool qmm__cuda_fused_fills(size_t n, size_t m, int sm_count, const qmm__cuda_tunables *t)
{
    const size_t group_rows = 128, cta_rows = 4 * QMM__CUDA_WG_ROWS;
    if (sm_count <= 0 || n == 0 || m == 0) return false;
    const size_t groups = (n + group_rows - 1) / group_rows, ctas = groups * ((m + cta_rows - 1) / cta_rows);
    const size_t slots = (ctas + (size_t)sm_count - 1) / (size_t)sm_count * (size_t)sm_count;
    return (size_t)t->fill_den * groups * m >= (size_t)t->fill_num * cta_rows * slots;
}

/* The tiers: GEMV to gemv_max_m; fused by the weight's size (N x K elements) and whether the fused path
 * runs the WG kernel (bf16 activations, or fp16 ones against an fp16 decode); past the tiers the fill
 * rule; then materialize. bf16 weights and the raw encodings take materialize. */
qmm_path qmm__cuda_plan_path(const qmm__cuda_call *c, int sm_count, const qmm__cuda_tunables *t, const char **why)
{
    const int row = c->enc == QMM__ENC_NVFP4 ? 0 : c->enc == QMM__ENC_MXFP4 ? 1 : c->enc == QMM__ENC_FP8 ? 2 : -1;
    if (row < 0) {
        *why = "a weight without tiles for the tensor cores (bf16, or raw codes): cuBLASLt";
        return QMM_PATH_MATERIALIZE;
    }
    const qmm__cuda_tiers *tr = &t->tiers[row];
    const bool wg = c->a_type == QMM_DTYPE_BF16 || qmm__cuda_half_decode(c->enc, c->mx_half);
    if (c->m <= tr->gemv_max_m) {
        *why = "gemv_max_m";
        return QMM_PATH_GEMV;
    }
    const size_t elems = c->n * c->k;
    size_t fused_max = tr->fused_max_m;
    *why = "fused_max_m";
    if (tr->fused_large_elems && elems >= tr->fused_large_elems) fused_max = tr->fused_large_max_m, *why = "fused_large_max_m";
    if (wg && tr->fused_wg_max_m > fused_max) fused_max = tr->fused_wg_max_m, *why = "fused_wg_max_m";
    if (wg && tr->fused_huge_elems && elems >= tr->fused_huge_elems) {
        const bool channel = c->channel_scales && tr->fused_huge_channel_max_m;
        fused_max = channel ? tr->fused_huge_channel_max_m : tr->fused_huge_max_m;
        *why = channel ? "fused_huge_channel_max_m" : "fused_huge_max_m";
    }
    if (wg && tr->fused_giant_elems && elems >= tr->fused_giant_elems && tr->fused_giant_max_m > fused_max)
        fused_max = tr->fused_giant_max_m, *why = "fused_giant_max_m";
    if (c->m <= fused_max) return QMM_PATH_FUSED;
    if (wg && c->m <= tr->fused_fill_max_m && qmm__cuda_fused_fills(c->n, c->m, sm_count, t)) {
        *why = "the fill rule";
        return QMM_PATH_FUSED;
    }
    *why = "past the tiers";
    return QMM_PATH_MATERIALIZE;
}

/* ---- the variant of the GEMV and fused paths ---- */

/* mma_kernel_whole's CTAs per SM with `bytes` of dynamic shared memory: as many as its launch bounds
 * (minb) allow, fewer where the shared memory holds fewer (where the SM's size is not known, minb) */
static long long whole_per_sm(size_t bytes, const qmm__cuda_device *d, int minb)
{
    if (d->smem_sm == 0) return minb;
    const long long by_smem = (long long)(d->smem_sm / (bytes + d->reserved));
    return by_smem < minb ? by_smem : minb;
}

/* WHOLE's dynamic shared memory where it runs as a dependent launch and its grid is one wave smaller
 * than the CTAs the device holds: padded so that an SM holds at most ceil(grid / SMs) of its CTAs. A
 * dependent launch's CTAs start in the slots the kernel before it left free and the rest as its CTAs
 * end, so in a sequence of calls each grid lands where the one before it was not, and some SMs hold
 * three of its CTAs while others hold one (an ordinary launch places breadth-first:
 * scripts/probes/cta_placement.cu). Measured on an H200: the 16-row WHOLE on (6144, 18432) at M = 9 (240
 * CTAs, 75 KB, three per SM) takes 41.2 us unpadded, 31.4 padded (two per SM); the two 58.7 M-element
 * shapes' M = 9..16 run 16-24% faster. Grids of at most one CTA per SM are left as they are (not
 * measured). The padding changes nothing else: no sum, no bit. */
static size_t whole_spread(size_t bytes, long long grid, const qmm__cuda_device *d, bool pdl, int minb, const qmm__cuda_override *o)
{
    if (o->spread == 0 || !pdl || d->smem_sm == 0 || d->sm_count <= 0) return bytes;
    if (o->spread == 2) return d->optin > bytes ? d->optin : bytes;
    const long long holds = whole_per_sm(bytes, d, minb);
    const long long want = (grid + d->sm_count - 1) / d->sm_count;
    if (want < 2 || want >= holds) return bytes;
    const size_t padded = (d->smem_sm / (size_t)want - d->reserved) / 128 * 128;
    return padded > bytes && padded <= d->optin ? padded : bytes;
}

/* WHOLE's staged bytes for units of `chunks` chunks */
typedef struct whole_geometry {
    int planes, srows, tile_k;
} whole_geometry;
static size_t whole_bytes(const whole_geometry *g, int chunks)
{
    return (size_t)g->planes * g->srows * (size_t)qmm__cuda_whole_stride(chunks * g->tile_k) * 4;
}

/* The GEMV's WHOLE staging in two parts: half the CTA's chunks (rounded up to the ring's depth) at a
 * time where staging them all at once would hold fewer CTAs per SM than its registers allow and the
 * grid has more CTAs than the device then holds, and the halves would hold more: (28672, 8192) at split
 * 2 from M = 6 (WHOLE stages M + 1 rows of 4096 columns, 57.8 KB: three CTAs per SM, 396 slots for 448
 * CTAs). The parts change no sum (the same tiles in the same order), so M may decide them. 0: all at
 * once. */
static int whole_part(int cps, long long grid, const qmm__cuda_device *d, const whole_geometry *g, int minb,
                      const qmm__cuda_override *o)
{
    const int D = QMM__CUDA_RING_DEPTH, h = ((cps + 1) / 2 + D - 1) / D * D;
    if (o->whole_parts == 0 || h >= cps) return 0;
    if (o->whole_parts == 2) return h;
    const long long all = whole_per_sm(whole_bytes(g, cps), d, minb) * d->sm_count;
    return all < grid && whole_per_sm(whole_bytes(g, h), d, minb) * d->sm_count > all ? h : 0;
}

static int qmm__min(int a, int b) { return a < b ? a : b; }

/* The WG kernel's launch of choice w in CTAs of `rows` rows, false where the workspace cannot hold its
 * partials and its laid-out A: one split without halves stores C from its registers or its cluster's
 * shared memory and needs no partials (asking for them anyway would send the fused path to PIPE wherever
 * M x N outgrows the workspace: 28672 x 8192 at M = 4096 in the default 256 MiB, FP8 per channel 2.5x
 * slower there than materialize, measured on an H200). */
static bool wg_launch(const qmm__cuda_call *c, const qmm__cuda_shape *s, const qmm__cuda_wg_choice *w, int rows, int kenc,
                      const qmm__cuda_kernel_facts *kf, bool pdl, const qmm__cuda_override *o, qmm__cuda_launch *l)
{
    const qmm__cuda_division *q = &w->div;
    const size_t mstride = (size_t)qmm__min(s->m, qmm__cuda_wg_tile_rows(rows));
    const bool parts = q->splits > 1 || q->half > 0;
    const size_t part_bytes = parts ? ((size_t)s->mtiles * s->strips * q->splits * mstride * 16 * sizeof(float) + 255) / 256 * 256 : 0;
    const size_t groups = (size_t)((s->mtiles + qmm__cuda_wg_tiles(rows) - 1) / qmm__cuda_wg_tiles(rows));
    const bool a_map = o->wg_a_map && c->a_aligned && kf->tensor_maps;
    const size_t laid_bytes = a_map ? 0 : groups * (size_t)s->chunks * (size_t)qmm__cuda_wg_chunk_a(kenc, rows);
    if (part_bytes + laid_bytes > c->workspace / sizeof(float) * sizeof(float)) return false;
    memset(l, 0, sizeof *l);
    l->variant = QMM__CUDA_WG, l->rows = rows, l->cluster = w->cluster, l->mtiles = s->mtiles;
    l->grid = (long long)qmm__cuda_strip_groups(s->strips) * q->splits * (long long)groups;
    l->threads = qmm__cuda_wg_threads(rows), l->smem = (size_t)qmm__cuda_wg_bytes(kenc, rows), l->pdl = pdl;
    l->div = *q;
    l->w_map = o->wg_w_map && kf->tensor_maps, l->a_map = a_map;
    l->part_bytes = part_bytes, l->laid_bytes = laid_bytes;
    return true;
}

/* The GEMV (nb = 1) and fused (nb = 2, 4, 8) paths: the division of K (a fixed split, pair mode, tall
 * pairs, the three-CTA GEMV's or the usual one, fewer where the workspace cannot hold the partials), the
 * WG kernel where plan_wg.c takes it and the workspace holds it, else WHOLE where its staging fits (the
 * GEMV; 16-row tiles only where PIPE cannot run them), PIPE (A not split, in 16-byte aligned rows; 20-35%
 * faster than STEP at M = 32..256), else STEP. 16-row tiles by PIPE rather than WHOLE, measured on an
 * H200 at M = 9, 12, 16: with bf16 A NVFP4 and MXFP4 9-16% faster on (4096, 14336), (14336, 4096) and
 * (6144, 18432), FP8 15-16% on (6144, 18432), with fp16 A 9-19% (WHOLE stages the unit's rows of A before
 * its first MMA, after the wait for the kernel before it, where PIPE's ring streams them). */
static void plan_mma(const qmm__cuda_call *c, const qmm__cuda_device *d, const qmm__cuda_override *o, const qmm__cuda_tunables *t,
                     qmm__cuda_plan *pl)
{
    const int kenc = qmm__cuda_form_kenc(pl->form), nb = pl->nb, rows = 8 * nb;
    const bool fp16a = qmm__cuda_form_split(pl->form);
    const qmm__cuda_kernel_facts *kf = &d->kernels[pl->form];
    const int tps = qmm__kenc_tiles_per_step(kenc), strips = (int)c->strips, chunks = (int)c->chunks, sm = d->sm_count;
    const size_t pf = c->workspace / sizeof(float), cc = c->counters;
    const qmm__cuda_shape s = {(int)c->m, strips, chunks, (int)((c->m + (size_t)rows - 1) / (size_t)rows)};
    const bool pdl = o->pdl && kf->pdl;
    const bool pipe_ok = !fp16a && nb >= 2 && (size_t)qmm__cuda_pipe_bytes(kenc, nb, qmm__cuda_pipe_tiles(kenc, nb)) <= d->optin;
    const size_t whole_max = d->optin < QMM__CUDA_WHOLE_MAX ? d->optin : QMM__CUDA_WHOLE_MAX;

    qmm__cuda_division div = {chunks, 1, 0, 0, 0};
    const int fixed = o->splits > 0 ? o->splits : nb == 8 && o->one_split && qmm__cuda_one_split_fits(strips, s.mtiles, sm, t) ? 1 : 0;
    const bool pair = nb >= 2 && fixed <= 0 && o->pairs == 1 && qmm__cuda_pair_split(&s, nb, tps, sm, pf, cc, t, &div);
    const bool tall = !pair && nb >= 2 && fixed <= 0 && o->tall != 0 && qmm__cuda_tall_split(&s, nb, tps, sm, pf, cc, o->tall == 2, t, &div);
    const int cta_tiles = qmm__kenc_fp8(kenc) ? t->fp8_cta_tiles : t->e2m1_cta_tiles;
    const bool has_early = nb == 1 && kenc != QMM__KENC_FP8_HALF; /* not compiled there: sass_rings */
    const int early_split = has_early && fixed <= 0 && (o->gemv3 == 1 || o->gemv3 == 2)
                                ? qmm__cuda_gemv_early_split(strips, chunks, tps, sm, cta_tiles, o->gemv3 == 2, t) : 0;
    if (!pair && !tall) {
        int splits = fixed > 0 ? qmm__min(fixed, chunks) : early_split > 0 ? early_split
                     : nb == 1 ? qmm__cuda_split_gemv(strips, chunks, tps, sm, cta_tiles, qmm__cuda_whole_min_ctas(1), t)
                               : qmm__cuda_split_fused(strips, chunks, tps, sm, t);
        const size_t mstride = (size_t)qmm__min(s.m, rows);
        /* a workspace too small for the partials: fewer splits (only then, where a small workspace turns
         * tall pairs off, and where one_split_fits starts, can a row's bits depend on M) */
        while (splits > 1 && ((size_t)s.mtiles * strips * splits * mstride * 16 > pf || (size_t)s.mtiles * strips > cc)) splits--;
        div.cps = (chunks + splits - 1) / splits;
        div.splits = (chunks + div.cps - 1) / div.cps;
    }

    /* the WG kernel: bf16 A, or fp16 A against an fp16 decode; 32- or 64-row tiles of A */
    qmm__cuda_wg_choice w;
    if ((nb == 4 || nb == 8) && !fp16a && qmm__cuda_wg_choose(&s, &div, kf->wg, qmm__cuda_wg_stage_chunks(kenc), rows, o, t, &w))
        pl->wg = wg_launch(c, &s, &w, nb == 8 ? w.rows : rows, kenc, kf, pdl, o, &pl->wg_launch);

    qmm__cuda_launch *l = &pl->launch;
    l->rows = rows, l->mtiles = s.mtiles, l->threads = QMM__CUDA_THREADS;
    l->grid = (long long)qmm__cuda_strip_groups(strips) * div.splits * s.mtiles;
    /* the three-CTA GEMV runs at its split only (not where a small workspace cut the splits) */
    const bool early = early_split > 0 && div.splits == early_split;
    const whole_geometry g = {fp16a ? 2 : 1, qmm__cuda_whole_rows(rows, qmm__min(s.m, rows)), qmm__kenc_tile_k(kenc)};
    size_t whole = whole_bytes(&g, div.cps);
    const int whole_minb = early ? QMM__CUDA_GEMV_EARLY_CTAS : qmm__cuda_whole_min_ctas(nb);
    if (nb == 1) {
        div.whole_part = whole_part(div.cps, l->grid, d, &g, whole_minb, o);
        if (div.whole_part > 0) whole = whole_bytes(&g, div.whole_part);
    }
    l->div = div;
    const bool pipe_can = !fp16a && nb >= 2 && c->a_aligned && pipe_ok;
    const bool whole_off = nb == 2 && o->whole16 == 0 && pipe_can;
    if (nb <= 2 && whole <= whole_max && !whole_off) {
        l->variant = QMM__CUDA_WHOLE, l->minb = whole_minb, l->pdl = pdl;
        l->smem = whole_spread(whole, l->grid, d, pdl, whole_minb, o);
    } else if (pipe_can) {
        l->variant = QMM__CUDA_PIPE, l->minb = 2, l->pdl = pdl, l->tiles = qmm__cuda_pipe_tiles(kenc, nb);
        if (nb == 2 && pair) l->tiles = 4, l->minb = 4; /* the fine split fills four CTAs per SM: 4-tile stages, 64 registers */
        if (nb == 4 && o->pipe32 == qmm__cuda_pipe32_other(kenc)) l->tiles = o->pipe32;
        l->smem = (size_t)qmm__cuda_pipe_bytes(kenc, nb, l->tiles);
    } else {
        l->variant = QMM__CUDA_STEP, l->smem = (size_t)qmm__cuda_step_bytes(fp16a, nb); /* a plain launch */
    }
}

bool qmm__cuda_plan_make(const qmm__cuda_call *c, qmm_path forced, const qmm__cuda_device *d, const qmm__cuda_override *o,
                         qmm__cuda_plan *out)
{
    memset(out, 0, sizeof *out);
    const qmm__cuda_tunables *t = qmm__cuda_tunables_for(d->major, 0);
    const char *why = "forced";
    out->path = forced != QMM_PATH_AUTO ? forced : qmm__cuda_plan_path(c, d->sm_count, t, &why);
    out->why = why;
    if (out->path != QMM_PATH_GEMV && out->path != QMM_PATH_FUSED) return true;
    out->form = qmm__cuda_form_of(c->enc, c->mx_half, c->a_type);
    if (out->form == QMM__FORM_COUNT) return false;
    out->mma = true;
    out->nb = out->path == QMM_PATH_GEMV ? 1 : qmm__cuda_fused_nb(c->m);
    plan_mma(c, d, o, t, out);
    return true;
}

/* ---- the plan as text ---- */

/* One launch: "<kernel> g<grid> t<threads> s<shared memory>[ c<cluster>][ pdl] mt<M tiles> sp<splits>
 * cps<chunks per split>[ pr1][ hf<half>][ wp<whole part>]", and for the WG kernel "map<W><A>" and
 * "laid<offset>" where A is laid out; the kernels by their template arguments (tests/cuda_plan/README.md). */
static void put_launch(const qmm__cuda_plan *p, const qmm__cuda_launch *l, char *buf, size_t cap)
{
    const int kenc = qmm__cuda_form_kenc(p->form), split = qmm__cuda_form_split(p->form);
    char name[48], extra[96] = "";
    switch (l->variant) {
    case QMM__CUDA_STEP: snprintf(name, sizeof name, "step<%d,%d,%d>", kenc, split, p->nb); break;
    case QMM__CUDA_WHOLE: snprintf(name, sizeof name, "whole<%d,%d,%d,%d>", kenc, split, p->nb, l->minb); break;
    case QMM__CUDA_PIPE: snprintf(name, sizeof name, "pipe<%d,%d,%d,%d>", kenc, p->nb, l->tiles, l->minb); break;
    default: snprintf(name, sizeof name, "wg<%d,%d,%d>", kenc, l->rows, l->cluster > 0); break;
    }
    size_t n = 0;
    if (l->div.pairs) n += (size_t)snprintf(extra + n, sizeof extra - n, " pr1");
    if (l->div.half) n += (size_t)snprintf(extra + n, sizeof extra - n, " hf%d", l->div.half);
    if (l->div.whole_part) n += (size_t)snprintf(extra + n, sizeof extra - n, " wp%d", l->div.whole_part);
    if (l->variant == QMM__CUDA_WG) n += (size_t)snprintf(extra + n, sizeof extra - n, " map%d%d", (int)l->w_map, (int)l->a_map);
    if (l->variant == QMM__CUDA_WG && !l->a_map) snprintf(extra + n, sizeof extra - n, " laid%zu", l->part_bytes);
    char cluster[16] = "";
    if (l->cluster) snprintf(cluster, sizeof cluster, " c%d", l->cluster);
    snprintf(buf, cap, "%s g%lld t%d s%zu%s%s mt%d sp%d cps%d%s", name, l->grid, l->threads, l->smem, cluster,
             l->pdl ? " pdl" : "", l->mtiles, l->div.splits, l->div.cps, extra);
}

size_t qmm__cuda_plan_describe(const qmm__cuda_plan *p, char *buf, size_t cap)
{
    char text[640] = "", first[160] = "";
    if (p->mma) {
        const qmm__cuda_launch *l = p->wg ? &p->wg_launch : &p->launch;
        if (p->wg && !l->a_map) /* wg_stage_a first: one 16-byte piece per thread, 256 threads per CTA */
            snprintf(first, sizeof first, "stage_a<%d,%d> g%zu t256 s0 laid%zu ; ", qmm__cuda_form_kenc(p->form), l->rows,
                     (l->laid_bytes / 16 + 255) / 256, l->part_bytes);
        put_launch(p, l, text, sizeof text);
    }
    const int n = snprintf(buf, cap, "%s%s", first, text);
    return n < 0 ? 0 : (size_t)n;
}

/* ---- the override ---- */

bool qmm__cuda_override_parse(const char *spec, qmm__cuda_override *o)
{
    static const struct {
        const char *name;
        size_t offset;
    } fields[] = {
        {"splits", offsetof(qmm__cuda_override, splits)},       {"one_split", offsetof(qmm__cuda_override, one_split)},
        {"pairs", offsetof(qmm__cuda_override, pairs)},         {"tall", offsetof(qmm__cuda_override, tall)},
        {"wg", offsetof(qmm__cuda_override, wg)},               {"wg128", offsetof(qmm__cuda_override, wg128)},
        {"wg192", offsetof(qmm__cuda_override, wg192)},         {"wg256", offsetof(qmm__cuda_override, wg256)},
        {"wg_coarse", offsetof(qmm__cuda_override, wg_coarse)}, {"wg_cluster", offsetof(qmm__cuda_override, wg_cluster)},
        {"wg_w_map", offsetof(qmm__cuda_override, wg_w_map)},   {"wg_a_map", offsetof(qmm__cuda_override, wg_a_map)},
        {"pipe32", offsetof(qmm__cuda_override, pipe32)},       {"whole16", offsetof(qmm__cuda_override, whole16)},
        {"whole_parts", offsetof(qmm__cuda_override, whole_parts)}, {"gemv3", offsetof(qmm__cuda_override, gemv3)},
        {"spread", offsetof(qmm__cuda_override, spread)},       {"pdl", offsetof(qmm__cuda_override, pdl)},
    };
    while (spec && *spec) {
        const char *eq = strchr(spec, '='), *end = strchr(spec, ',');
        if (!end) end = spec + strlen(spec);
        if (!eq || eq > end) return false;
        size_t i = 0;
        while (i < sizeof fields / sizeof fields[0] &&
               !(strlen(fields[i].name) == (size_t)(eq - spec) && strncmp(fields[i].name, spec, (size_t)(eq - spec)) == 0))
            i++;
        if (i == sizeof fields / sizeof fields[0]) return false;
        char *stop = NULL;
        const long v = strtol(eq + 1, &stop, 10);
        if (stop != end || stop == eq + 1 || v < -1000000 || v > 1000000) return false;
        *(int *)(void *)((char *)o + fields[i].offset) = (int)v;
        spec = *end ? end + 1 : end;
    }
    return true;
}
