/* The CUDA backend's split of K (src/cuda/plan_split.c) and the WG kernel's plans (plan_wg.c), checked on
 * the host: on random shapes, SM counts and workspaces, the GEMV's and the fused path's splits leave no
 * unit empty and the fused split fits one wave; tall pairs' units of summation (the fine splits) are the
 * same for every M and tile height, decided by the shape and the workspace alone, so the fused path stays
 * batch invariant; coarse units only where the kernels can form the pair (tiles of 32 or 64 rows, several
 * M tiles). Then the decisions measured fastest on an H200 (132 SMs) for the five default shapes, and the
 * WG kernel's plans there. Needs no GPU: the plan is host code. */
#include "../src/cuda/plan.h"
#include "../src/cuda/decode.h"
#include "harness.h"

static const qmm__cuda_tunables *tunables(void) { return qmm__cuda_tunables_for(9, 0); }

/* The plan's rules under the names this test's checks use: weight tiles per step of the kernels for
 * encoding enc (FP8's tiles are half as wide), the GEMV's split and its three-CTA WHOLE's (by the
 * encoding's start cost), the fused split, one split past four M tiles. */
static int qmm_test_tiles_per_step(int enc) { return qmm__kenc_tiles_per_step(enc); }
static int cta_tiles(int enc) { return enc == QMM__ENC_FP8 ? tunables()->fp8_cta_tiles : tunables()->e2m1_cta_tiles; }
static int qmm_test_split_for(int strips, int chunks, int tiles_per_step, int sm_count, int enc)
{
    return qmm__cuda_split_gemv(strips, chunks, tiles_per_step, sm_count, cta_tiles(enc), qmm__cuda_whole_min_ctas(1), tunables());
}
static int qmm_test_gemv_early_split(int strips, int chunks, int tiles_per_step, int sm_count, int enc)
{
    return qmm__cuda_gemv_early_split(strips, chunks, tiles_per_step, sm_count, cta_tiles(enc), false, tunables());
}
static int qmm_test_split_for_fused(int strips, int chunks, int tiles_per_step, int sm_count)
{
    return qmm__cuda_split_fused(strips, chunks, tiles_per_step, sm_count, tunables());
}
static int qmm_test_one_split_fits(int strips, int mtiles, int sm_count)
{
    return qmm__cuda_one_split_fits(strips, mtiles, sm_count, tunables());
}

/* What tall pairs decided: taken, and the division of K where they apply (chunks per unit, units, pairs
 * summed two by two, the fine unit inside a coarse one or 0). */
typedef struct qmm_test_division {
    int taken, cps, splits, pairs, half;
} qmm_test_division;
static qmm_test_division qmm_test_tall_split(int nb, int m, int strips, int chunks, int tiles_per_step, int sm_count,
                                             size_t partial_floats, size_t counter_count, int force)
{
    const qmm__cuda_shape s = {m, strips, chunks, (m + 8 * nb - 1) / (8 * nb)};
    qmm__cuda_division d = {-1, -1, -1, -1, 0};
    qmm_test_division t;
    t.taken = qmm__cuda_tall_split(&s, nb, tiles_per_step, sm_count, partial_floats, counter_count, force != 0, tunables(), &d);
    t.cps = d.cps, t.splits = d.splits, t.pairs = d.pairs, t.half = d.half;
    return t;
}

/* What the WG kernel's choice decided for the division the plan makes at 64-row tiles (32-row ones to
 * M = 32; NVFP4, or FP8 where fp8, whose chunks are 32 columns; bf16 A, the rules, a workspace large
 * enough) on a device that holds slots[r] CTAs of the WG kernel of 64 (r = 0; the 32-row kernel too),
 * 128, 192 and 256 rows, and clusters[r][c] clusters of c CTAs (c = 1..8): taken, the rows of its CTAs,
 * the cluster (0: none) and the division (units, half or 0). */
typedef struct qmm_test_wg {
    int taken, rows, cluster, splits, half;
} qmm_test_wg;
static qmm_test_wg qmm_test_wg_choose(int fp8, int m, int strips, int chunks, int sm_count, const long long slots[4],
                                      const int clusters[4][9])
{
    const int enc = fp8 ? QMM__ENC_FP8 : QMM__ENC_NVFP4, rows = m <= 32 ? 32 : QMM__CUDA_WG_ROWS;
    const qmm__cuda_shape s = {m, strips, chunks, (m + rows - 1) / rows};
    const int tps = qmm__kenc_tiles_per_step(enc);
    /* the plan's division: one split past four 64-row M tiles where one_split_fits, else tall pairs
     * where they are taken, else the usual split */
    const bool one = rows == QMM__CUDA_WG_ROWS && qmm__cuda_one_split_fits(strips, s.mtiles, sm_count, tunables());
    qmm__cuda_division d = {chunks, 1, 0, 0, 0};
    if (rows == 32 || one || !qmm__cuda_tall_split(&s, 8, tps, sm_count, (size_t)1 << 40, (size_t)1 << 30, false, tunables(), &d)) {
        const int sp = one ? 1 : qmm__cuda_split_fused(strips, chunks, tps, sm_count, tunables());
        d.cps = (chunks + sp - 1) / sp;
        d.splits = (chunks + d.cps - 1) / d.cps;
        d.pairs = 0, d.half = 0;
    }
    qmm__cuda_wg_room wg[QMM__CUDA_WG_HEIGHTS];
    memset(wg, 0, sizeof wg);
    for (int h = 0; h < QMM__CUDA_WG_HEIGHTS; h++) {
        const int r = h == 0 ? 0 : h - 1;
        wg[h].slots = slots[r];
        for (int c = 1; c <= QMM__CUDA_WG_CLUSTER_MAX; c++) wg[h].clusters[c] = clusters[r][c];
    }
    const qmm__cuda_override rules = QMM__CUDA_OVERRIDE_DEFAULT;
    qmm__cuda_wg_choice w;
    memset(&w, 0, sizeof w);
    qmm_test_wg t;
    t.taken = qmm__cuda_wg_choose(&s, &d, wg, qmm__cuda_wg_stage_chunks(enc), rows, &rules, tunables(), &w);
    t.rows = w.rows, t.cluster = w.cluster, t.splits = w.div.splits, t.half = w.div.half;
    return t;
}

static int ceil_div(int a, int b) { return (a + b - 1) / b; }

/* A random integer in [lo, hi], spread over the powers of two between them. */
static int random_size(int lo, int hi)
{
    for (;;) {
        const double x = exp(log((double)lo) + harness_uniform() * (log((double)hi + 1.0) - log((double)lo)));
        const int v = (int)x;
        if (v >= lo && v <= hi) return v;
    }
}

static void check_splits(int strips, int chunks, int tps, int sm, int enc)
{
    const int groups = ceil_div(strips, 8);
    const int sf = qmm_test_split_for_fused(strips, chunks, tps, sm);
    CHECK(sf >= 1 && sf <= 16, "split_for_fused(%d, %d, %d, %d) = %d", strips, chunks, tps, sm, sf);
    if (sf >= 1) {
        const int cps = ceil_div(chunks, sf);
        CHECK(ceil_div(chunks, cps) == sf, "fused split %d of %d chunks leaves a unit empty", sf, chunks);
        CHECK(sf == 1 || (long long)groups * sf <= 2LL * sm, "fused split %d of %d groups over %d SMs: more than one wave", sf,
              groups, sm);
    }
    const int sg = qmm_test_split_for(strips, chunks, tps, sm, enc);
    CHECK(sg >= 1 && sg <= 16, "split_for(%d, %d, %d, %d) = %d", strips, chunks, tps, sm, sg);
    if (sg >= 1) CHECK(ceil_div(chunks, ceil_div(chunks, sg)) == sg, "GEMV split %d of %d chunks leaves a unit empty", sg, chunks);
    /* the three-CTA GEMV: one wave of at least 7/8 of its slots, no empty unit */
    const int se = qmm_test_gemv_early_split(strips, chunks, tps, sm, enc);
    if (se > 0) {
        CHECK(ceil_div(chunks, ceil_div(chunks, se)) == se, "three-CTA GEMV split %d of %d chunks leaves a unit empty", se, chunks);
        CHECK(8LL * groups * se >= 21LL * sm && (long long)groups * se <= 3LL * sm, "three-CTA GEMV: %d x %d CTAs on %d SMs", groups,
              se, sm);
    }
}

/* Tall pairs on one shape and workspace at every M up to 128 (and past it where the workspace holds the
 * rows): the same decision, the same fine units, coarse units made of two of them. */
static void check_tall(int strips, int chunks, int tps, int sm, size_t partial_floats, size_t counters, int force)
{
    const int sf = qmm_test_split_for_fused(strips, chunks, tps, sm), fine_want = ceil_div(chunks, sf);
    static const int fixed_m[] = {1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128};
    int taken = -1, bad = 0;
    for (int i = 0; i < 24 && bad < 3; i++) {
        const int m = i < 14 ? fixed_m[i] : 1 + (int)(harness_next() % 128);
        const int nb = qmm__cuda_fused_nb((size_t)m), mtiles = ceil_div(m, 8 * nb);
        const qmm_test_division d = qmm_test_tall_split(nb, m, strips, chunks, tps, sm, partial_floats, counters, force);
        if (taken < 0) taken = d.taken;
        CHECK(d.taken == taken, "shape (%d strips, %d chunks), %d SMs, workspace %zu/%zu: tall pairs %s at M = %d, %s before",
              strips, chunks, sm, partial_floats, counters, d.taken ? "taken" : "not taken", m, taken ? "taken" : "not taken");
        if (d.taken != taken) bad++;
        if (!d.taken) continue;
        const int coarse = d.half > 0;
        const int fine = coarse ? d.half : d.cps;
        CHECK(sf >= 2, "tall pairs taken at split %d", sf);
        CHECK(fine == fine_want, "M = %d: fine units of %d chunks, want split_for_fused's %d", m, fine, fine_want);
        if (fine != fine_want) bad++;
        CHECK(d.pairs == !coarse, "M = %d: pairs %d with half %d", m, d.pairs, d.half);
        CHECK(!coarse || d.cps == 2 * d.half, "M = %d: coarse unit of %d chunks, half %d", m, d.cps, d.half);
        CHECK(!coarse || (nb >= 4 && mtiles > 1), "M = %d: coarse units at %d rows per tile, %d M tiles", m, 8 * nb, mtiles);
        CHECK(!force || coarse == (nb >= 4 && mtiles > 1), "M = %d, forced: coarse %d", m, coarse);
        CHECK(d.splits == ceil_div(chunks, d.cps) && (d.splits - 1) * d.cps < chunks, "M = %d: %d units of %d chunks for %d", m,
              d.splits, d.cps, chunks);
    }
    /* a workspace that holds every partial: taken wherever there are two fine splits */
    if (partial_floats >= ((size_t)1 << 40)) CHECK(taken == (sf >= 2), "split %d with room: tall pairs %d", sf, taken);
}

/* The decisions measured on the H200 (NVFP4, 132 SMs) for one default shape: the GEMV's split (0: not
 * checked), the fused split, and whether M = 128 and 256 run coarse units. */
static void check_default(int n, int k, int gemv_split, int fused_split, int coarse128, int coarse256)
{
    const int tps = qmm_test_tiles_per_step(QMM__ENC_NVFP4), strips = n / QMM__STRIP, chunks = k / QMM__CHUNK_FP4;
    const size_t pf = (size_t)64 << 20, counters = (size_t)1 << 16;
    if (gemv_split) {
        const int s = qmm_test_split_for(strips, chunks, tps, 132, QMM__ENC_NVFP4);
        CHECK(s == gemv_split, "(%d, %d): GEMV split %d, measured best %d", n, k, s, gemv_split);
    }
    const int f = qmm_test_split_for_fused(strips, chunks, tps, 132);
    CHECK(f == fused_split, "(%d, %d): fused split %d, want %d", n, k, f, fused_split);
    const qmm_test_division d128 = qmm_test_tall_split(8, 128, strips, chunks, tps, 132, pf, counters, 0);
    const qmm_test_division d256 = qmm_test_tall_split(8, 256, strips, chunks, tps, 132, pf, counters, 0);
    CHECK(d128.taken == (fused_split > 1), "(%d, %d): tall pairs %d at split %d", n, k, d128.taken, fused_split);
    CHECK((d128.taken && d128.half > 0) == coarse128, "(%d, %d) M = 128: coarse %d, want %d", n, k, d128.taken && d128.half > 0,
          coarse128);
    CHECK((d256.taken && d256.half > 0) == coarse256, "(%d, %d) M = 256: coarse %d, want %d", n, k, d256.taken && d256.half > 0,
          coarse256);
}

/* The WG variant's plans on the H200 (132 SMs; what it holds of the WG kernels, clusters under the
 * load-balancing policy, measured by scripts/probes/cluster_occupancy.cu) for
 * the default shapes: the plans measured fastest there. Clusters only where one wave holds them ((6144,
 * 18432): 48 clusters of five, 47 held; (4096, 14336): 32 of eight, 30 held); coarse 128-row units at
 * two or four M tiles where they take fewer waves for the same work ((6144, 18432) M = 256: three waves
 * against the fine plan's four, for twice the work, so not there); 256-row CTAs past two M tiles where
 * their plan takes one wave (not (6144, 18432) nor (28672, 8192), whose 240 and 224 CTAs take two), 192-row
 * ones (as many CTAs) at three M tiles, there also in two waves over long units ((28672, 8192), not the
 * five units of 58 chunks of (6144, 18432)); past four M tiles, where no one-wave plan of 256-row CTAs
 * exists, the cheapest of 64-, 128- and 256-row CTAs by wg_cost. */
static void check_wg_plans(void)
{
    /* 64, 128, 192 and 256 rows: two CTAs per SM at 64 rows, one at 128 and more (192 and 256 rows: 12 warps) */
    static const long long slots[4] = {264, 132, 132, 132};
    static const int clusters[4][9] = {{0, 264, 132, 83, 66, 47, 39, 32, 30},
                                       {0, 132, 66, 39, 30, 22, 17, 15, 15},
                                       {0, 132, 66, 39, 30, 22, 17, 15, 15},
                                       {0, 132, 66, 39, 30, 22, 17, 15, 15}};
    static const struct {
        int n, k, m, rows, cluster, splits, half;
    } want[] = {
        {8192, 28672, 64, 64, 4, 4, 0},   {8192, 28672, 128, 128, 2, 2, 112}, {8192, 28672, 256, 256, 2, 2, 112},
        {8192, 28672, 192, 192, 2, 2, 112}, {8192, 28672, 129, 192, 2, 2, 112},
        {28672, 8192, 160, 192, 1, 1, 0},   {6144, 18432, 160, 64, 0, 5, 0},
        {6144, 18432, 64, 64, 0, 5, 0},   {6144, 18432, 128, 64, 0, 5, 0},    {6144, 18432, 256, 64, 0, 5, 0},
        {4096, 14336, 64, 64, 0, 8, 0},   {4096, 14336, 128, 128, 0, 4, 28},  {4096, 14336, 256, 256, 0, 4, 28},
        {14336, 4096, 64, 64, 2, 2, 0},   {14336, 4096, 128, 128, 1, 1, 32},  {14336, 4096, 256, 256, 1, 1, 32},
        {28672, 8192, 64, 64, 0, 1, 0},   {28672, 8192, 128, 128, 1, 1, 0},   {28672, 8192, 256, 64, 0, 1, 0},
        /* past four M tiles: one split where the M tiles make two waves of 64-row tiles (one_split_fits;
         * measured on an H200: at M = 512 and 1024 one split took 310.5 and 621.7 us on (8192, 28672)
         * against 342.7 and 699.7 for the split plans), then the cheapest plan by wg_cost */
        {8192, 28672, 384, 256, 1, 1, 0}, {8192, 28672, 512, 256, 1, 1, 0},   {8192, 28672, 1024, 256, 1, 1, 0},
        {28672, 8192, 384, 64, 0, 1, 0},  {28672, 8192, 512, 256, 1, 1, 0},   {28672, 8192, 1024, 256, 1, 1, 0},
        /* and test_cuda's weights for them (batch invariance past four M tiles): one split on 8192 x 2048,
         * the split of K on 2048 x 2048 (16 strip groups: two waves of 64-row tiles past M = 1024) in
         * wg_cost's plans: 256-row CTAs over fine units (M = 200) and coarse ones (384, 1000), 64-row ones
         * in clusters of eight (520) */
        {8192, 2048, 200, 256, 2, 2, 8},  {8192, 2048, 384, 256, 1, 1, 0},    {8192, 2048, 520, 64, 0, 1, 0},
        {8192, 2048, 1000, 256, 1, 1, 0},
        {2048, 2048, 200, 256, 0, 8, 0},  {2048, 2048, 384, 256, 0, 4, 4},    {2048, 2048, 520, 64, 8, 8, 0},
        {2048, 2048, 1000, 256, 0, 4, 4},
    };
    /* 32-row tiles (M = 17..32) where K is split in at most five units: not (4096, 14336)'s eight */
    static const struct {
        int n, k, taken, splits;
    } want32[] = {{8192, 28672, 1, 4}, {6144, 18432, 1, 5}, {4096, 14336, 0, 8}, {14336, 4096, 1, 2}, {28672, 8192, 1, 1}};
    for (size_t i = 0; i < sizeof want32 / sizeof want32[0]; i++) {
        const int n = want32[i].n, k = want32[i].k;
        const qmm_test_wg t = qmm_test_wg_choose(0, 24, n / 16, ceil_div(k, 64), 132, slots, clusters);
        CHECK(t.taken == want32[i].taken && (!t.taken || (t.rows == 32 && t.splits == want32[i].splits)),
              "(%d, %d) M = 24: WG %d, CTAs of %d rows, %d units; want WG %d, 32, %d", n, k, t.taken, t.rows, t.splits,
              want32[i].taken, want32[i].splits);
    }
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const int n = want[i].n, k = want[i].k, m = want[i].m;
        const qmm_test_wg t = qmm_test_wg_choose(0, m, n / 16, ceil_div(k, 64), 132, slots, clusters);
        CHECK(t.taken && t.rows == want[i].rows && t.cluster == want[i].cluster && t.splits == want[i].splits &&
                  t.half == want[i].half,
              "(%d, %d) M = %d: WG %d, CTAs of %d rows, cluster %d, %d units, half %d; want WG 1, %d, %d, %d, %d", n, k, m,
              t.taken, t.rows, t.cluster, t.splits, t.half, want[i].rows, want[i].cluster, want[i].splits, want[i].half);
    }
    /* FP8 (chunks of 32 columns, four per stage) on the same room: units of whole half stages only (an
     * even number of chunks, K a multiple of 64 and the fine units' chunks even), the plans of the E2M1
     * rule counted in columns ((8192, 28672): fine units of 224 chunks, 7168 columns, as NVFP4's 112) */
    static const struct {
        int n, k, m, taken, rows, cluster, splits, half;
    } want8[] = {
        {8192, 28672, 64, 1, 64, 4, 4, 0}, {8192, 28672, 128, 1, 128, 2, 2, 224}, {28672, 8192, 128, 1, 128, 1, 1, 0},
        {8192, 28672, 256, 1, 256, 2, 2, 224}, {8192, 28672, 160, 1, 192, 2, 2, 224},
        {8192, 28672, 384, 1, 256, 1, 1, 0},   {8192, 28672, 512, 1, 256, 1, 1, 0},   {28672, 8192, 384, 1, 64, 0, 1, 0},
        {28672, 8192, 512, 1, 256, 1, 1, 0},   {8192, 2048, 384, 1, 256, 1, 1, 0},    {8192, 2048, 520, 1, 64, 0, 1, 0},
        {8192, 2048, 1000, 1, 256, 1, 1, 0},   {2048, 2048, 384, 1, 256, 0, 4, 8},    {2048, 2048, 520, 1, 64, 8, 8, 0},
        {2048, 2048, 1000, 1, 256, 0, 4, 8},
        {4096, 4112, 64, 0, 0, 0, 0, 0},   /* 129 chunks: the last unit odd */
        {4096, 14592, 64, 0, 0, 0, 0, 0},  /* 456 chunks in eight units of 57 */
    };
    for (size_t i = 0; i < sizeof want8 / sizeof want8[0]; i++) {
        const int n = want8[i].n, k = want8[i].k, m = want8[i].m;
        const qmm_test_wg t = qmm_test_wg_choose(1, m, n / 16, ceil_div(k, 32), 132, slots, clusters);
        CHECK(t.taken == want8[i].taken &&
                  (!t.taken || (t.rows == want8[i].rows && t.cluster == want8[i].cluster &&
                                t.splits == want8[i].splits && t.half == want8[i].half)),
              "FP8 (%d, %d) M = %d: WG %d, CTAs of %d rows, cluster %d, %d units, half %d; want WG %d, %d, %d, %d, %d", n, k,
              m, t.taken, t.rows, t.cluster, t.splits, t.half, want8[i].taken, want8[i].rows, want8[i].cluster,
              want8[i].splits, want8[i].half);
    }
}

/* The materialize path's chunks of W (qmm__cuda_chunk_rows) for left bytes, w_row and f_row bytes per
 * row, n rows: they fit as the carves round them, are as few as any chunk size that fits allows (the
 * most rows that fit, found by search), equal (multiples of 16 rows, the last one shorter by less than 16
 * rows per chunk), and 0 only where 16 rows do not fit. */
static void check_chunks(size_t left, size_t w_row, size_t f_row, size_t n)
{
    const size_t rows = qmm__cuda_chunk_rows(left, w_row, f_row, n);
    size_t most = n; /* the most rows that fit: n, or a multiple of 16 */
    while (most > 0 && qmm__cuda_round256(most * w_row) + qmm__cuda_round256(most * f_row) > left)
        most -= most % 16 ? most % 16 : 16;
    if (most == 0) {
        CHECK(rows == 0, "chunk_rows(%zu, %zu, %zu, %zu) = %zu where 16 rows do not fit", left, w_row, f_row, n, rows);
        return;
    }
    CHECK(rows > 0 && (rows == n || (rows % 16 == 0 && rows < n)), "chunk_rows(%zu, %zu, %zu, %zu) = %zu", left, w_row,
          f_row, n, rows);
    if (rows == 0) return;
    CHECK(qmm__cuda_round256(rows * w_row) + qmm__cuda_round256(rows * f_row) <= left,
          "chunks of %zu rows (%zu + %zu bytes each) overflow %zu bytes", rows, w_row, f_row, left);
    const size_t chunks = (n + rows - 1) / rows, fewest = (n + most - 1) / most, last = n - (chunks - 1) * rows;
    CHECK(chunks == fewest, "%zu chunks of %zu rows where %zu of %zu would do (n = %zu)", chunks, rows, fewest, most, n);
    CHECK(last > 0 && rows - last < 16 * chunks, "chunks of %zu rows leave a last one of %zu (n = %zu)", rows, last, n);
}

int main(void)
{
    harness_begin("test_cuda_split");
    static const int sms[] = {132, 108, 78, 46, 16, 1};
    for (int it = 0; it < 3000; it++) {
        const int enc = (it & 1) ? QMM__ENC_NVFP4 : QMM__ENC_FP8;
        const int tps = qmm_test_tiles_per_step(enc);
        const int strips = random_size(1, 4096), chunks = random_size(1, 2048), sm = sms[harness_next() % 6];
        check_splits(strips, chunks, tps, sm, enc);
        /* workspaces from none to more than any shape needs, and counters from a few to plenty */
        const int w = (int)(harness_next() % 4);
        const size_t pf = w == 0 ? 0 : w == 1 ? (size_t)random_size(1, 1 << 20) : w == 2 ? (size_t)random_size(1, 1 << 28) : (size_t)1 << 40;
        const size_t counters = w == 3 ? (size_t)1 << 30 : (size_t)random_size(1, 1 << 16);
        check_tall(strips, chunks, tps, sm, pf, counters, (int)(harness_next() % 4 == 0));
    }
    for (int it = 0; it < 3000; it++) {
        const size_t n = (size_t)random_size(1, 100000), w_row = (harness_next() % 8 == 0) ? 0 : 2 * (size_t)random_size(1, 70000);
        const size_t f_row = (harness_next() % 2) ? 0 : 4 * (size_t)random_size(1, 10000);
        const size_t left = (size_t)random_size(1, 1 << 30) * (harness_next() % 2 ? 1 : 256);
        check_chunks(left, w_row, f_row, n);
    }
    /* the default 256 MiB workspace less cuBLASLt's 32 MiB, (8192, 28672) at M = 2048: two chunks of 4096
     * rows (4048, 4048 and 96 before) */
    CHECK(qmm__cuda_chunk_rows((size_t)224 << 20, 28672 * 2, 0, 8192) == 4096, "(8192, 28672) M = 2048 in %zu-row chunks",
          qmm__cuda_chunk_rows((size_t)224 << 20, 28672 * 2, 0, 8192));
    /* one split past four 64-row M tiles where the M tiles make two waves of 64-row tiles (132 SMs: 264) */
    static const struct {
        int n, m, want;
    } one[] = {{8192, 256, 0},  {8192, 257, 1},  {8192, 2048, 1},  {4096, 512, 0},   {4096, 513, 1}, {14336, 256, 0},
               {14336, 320, 1}, {6144, 320, 0},  {6144, 384, 1},   {2048, 1024, 0},  {2048, 1025, 1}, {1024, 2048, 0},
               {128, 100000, 1}, {28672, 320, 1}};
    for (size_t i = 0; i < sizeof one / sizeof one[0]; i++) {
        const int mtiles = ceil_div(one[i].m, 64), got = qmm_test_one_split_fits(one[i].n / 16, mtiles, 132);
        CHECK(got == one[i].want, "N = %d M = %d: one split %d, want %d", one[i].n, one[i].m, got, one[i].want);
    }
    /* the dispatcher's fill rule (qmm__cuda_fused_fills) at the points it was fitted to (132 SMs, fills
     * of 256-row CTAs over 128 weight rows): 0.97 and 0.85 fused, 0.73 and 0.48 materialize; between
     * multiples of 256 rows the last CTAs' unused rows count against it (M = 257 on 14336 x 4096: 0.43;
     * 1025 on 8192 x 28672: 0.65; 1793 on 4096 x 14336: 0.85) */
    static const struct {
        size_t n, m;
        bool want;
    } fill[] = {{4096, 2048, true},   {14336, 2048, true},  {6144, 2048, true},  {28672, 2048, true}, {8192, 2048, true},
                {4096, 1024, true},   {4096, 1025, false},  {4096, 1536, false}, {4096, 512, false},  {14336, 512, true},
                {14336, 1024, true},  {14336, 1536, true},  {6144, 1024, false}, {6144, 1536, false}, {6144, 512, false},
                {8192, 1025, false},  {8192, 1536, true},   {28672, 1536, true}, {1, 1, false},       {0, 2048, false},
                {14336, 257, false},  {4096, 769, false},   {4096, 1793, true},  {4096, 1600, false}, {6144, 1100, false},
                {8192, 1200, false},  {8192, 1400, true}};
    for (size_t i = 0; i < sizeof fill / sizeof fill[0]; i++)
        CHECK(qmm__cuda_fused_fills(fill[i].n, fill[i].m, 132, tunables()) == fill[i].want, "N = %zu M = %zu: fills %d, want %d",
              fill[i].n, fill[i].m, (int)qmm__cuda_fused_fills(fill[i].n, fill[i].m, 132, tunables()), (int)fill[i].want);
    CHECK(!qmm__cuda_fused_fills(4096, 2048, 0, tunables()), "no SM count, no fill");
    /* (N, K), GEMV split, fused split, coarse at M = 128, coarse at M = 256 */
    check_default(4096, 14336, 16, 8, 1, 1);
    check_default(14336, 4096, 0, 2, 1, 1);
    check_default(6144, 18432, 0, 5, 0, 0);
    check_default(28672, 8192, 2, 1, 0, 0); /* 4 before WHOLE's two parts (whole_part) */
    check_default(8192, 28672, 8, 4, 1, 1);
    /* the GEMV's three-CTA WHOLE on the default shapes, both encodings (N, K, its split or 0): where it was
     * measured faster on an H200, and not on (14336, 4096), where it was 1-6% slower */
    static const int early[][3] = {{4096, 14336, 12}, {14336, 4096, 0}, {6144, 18432, 8}, {28672, 8192, 0}, {8192, 28672, 6}};
    for (int i = 0; i < 5; i++)
        for (int e = 0; e < 2; e++) {
            const int enc = e ? QMM__ENC_FP8 : QMM__ENC_NVFP4, n = early[i][0], k = early[i][1];
            const int chunks = k / (e ? QMM__CHUNK_FP8 : QMM__CHUNK_FP4);
            const int s = qmm_test_gemv_early_split(n / QMM__STRIP, chunks, qmm_test_tiles_per_step(enc), 132, enc);
            CHECK(s == early[i][2], "(%d, %d) enc %d: three-CTA GEMV split %d, want %d", n, k, enc, s, early[i][2]);
        }
    check_wg_plans();
    return harness_end("test_cuda_split");
}
