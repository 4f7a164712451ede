/* The CUDA backend's plan: from one call (N, K, M, the weight's encoding, the types of A and C, whether
 * A's rows are aligned, the workspace) and the device (its attributes and what it holds of each kernel)
 * to what runs: the path, and on the GEMV and fused paths the kernel variant, its tile height, division
 * of K, CTA rows, cluster, grid, shared memory and dependent launch. A pure function (plan.c), so that a
 * host test checks it on any grid of inputs (tests/test_cuda_plan.c); the launchers
 * (kernels_mma_launch.cuh) only execute a plan. The rules are in plan.c (the path, the variant),
 * plan_split.c (the division of K) and plan_wg.c (the WG kernel); their measured values in one table
 * per architecture (qmm__cuda_tunables_for); tests and experiments change a plan only through
 * qmm__cuda_override. docs/cuda.md, "The plan", says why each rule is what it is. */
#ifndef QMM_CUDA_PLAN_H
#define QMM_CUDA_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "cuda_internal.h"

#ifdef __cplusplus
extern "C" {
#define QMM__CUDA_CONSTEXPR constexpr
#else
#define QMM__CUDA_CONSTEXPR
#endif

/* ---- the kernels' geometry: the numbers of kernels_mma.cuh and kernels_mma_wg.cuh that a plan needs.
 * kernels_mma_launch.cuh checks each against the templates at compile time (static_assert). ---- */

/* The kernel-side encodings (kernels_mma_tile.cuh): the prepared ones, and their fp16 decodes. */
enum { QMM__KENC_FP8_HALF = 16, QMM__KENC_NVFP4_HALF = 17, QMM__KENC_MXFP4_HALF = 18 };
#define QMM__CUDA_WARPS 8         /* warps of a CTA, one strip each: a strip group is 128 weight rows */
#define QMM__CUDA_THREADS 256
#define QMM__CUDA_WHOLE_MAX (100 * 1024) /* WHOLE's staging at most: two CTAs per SM fit */
#define QMM__CUDA_RING_DEPTH 4    /* weight tiles in flight per lane in STEP and WHOLE */
#define QMM__CUDA_GEMV_EARLY_CTAS 3 /* the three-CTA WHOLE of the GEMV (its launch bounds) */
#define QMM__CUDA_WG_ROWS 64      /* rows of a 64-row M tile of the fused path; the WG kernel's CTA unit */
#define QMM__CUDA_WG_CLUSTER_MAX 8 /* splits reduced in one cluster at most (the portable cluster size) */
#define QMM__CUDA_WG_SMEM_MAX (227 * 1024) /* the WG kernels' shared memory at most (sm_90's opt-in) */
#define QMM__CUDA_WG_HEIGHTS 5    /* the WG kernels' CTA heights: 32, 64, 128, 192, 256 rows */

static inline QMM__CUDA_CONSTEXPR bool qmm__kenc_fp8(int kenc) { return kenc == QMM__ENC_FP8 || kenc == QMM__KENC_FP8_HALF; }
static inline QMM__CUDA_CONSTEXPR bool qmm__kenc_nvfp4(int kenc) { return kenc == QMM__ENC_NVFP4 || kenc == QMM__KENC_NVFP4_HALF; }
/* columns of K per tile (enc_traits::tile_k), scale bytes per tile (enc_traits::scale_tile) */
static inline QMM__CUDA_CONSTEXPR int qmm__kenc_tile_k(int kenc) { return qmm__kenc_fp8(kenc) ? 32 : 64; }
static inline QMM__CUDA_CONSTEXPR int qmm__kenc_scale_tile(int kenc) { return qmm__kenc_fp8(kenc) ? 0 : qmm__kenc_nvfp4(kenc) ? 64 : 32; }
/* weight tiles per 128-column step (stage_config::tiles_per_step) */
static inline QMM__CUDA_CONSTEXPR int qmm__kenc_tiles_per_step(int kenc) { return 128 / qmm__kenc_tile_k(kenc); }
/* STEP's dynamic shared memory (stage_config::bytes): two stages of 8 * nb rows of 80 words per plane */
static inline QMM__CUDA_CONSTEXPR int qmm__cuda_step_bytes(bool fp16a, int nb) { return 2 * (fp16a ? 2 : 1) * (8 * nb * 80) * 4; }
/* WHOLE's row stride in words for klen staged columns (whole_stride), its staged rows (whole_rows) and its
 * CTAs per SM by its launch bounds (whole_min_ctas) */
static inline QMM__CUDA_CONSTEXPR int qmm__cuda_whole_stride(int klen) { return klen / 2 % 32 == 0 ? klen / 2 + 16 : klen / 2; }
static inline QMM__CUDA_CONSTEXPR int qmm__cuda_whole_rows(int rows, int valid) { return valid < rows ? valid + 1 : rows; }
static inline QMM__CUDA_CONSTEXPR int qmm__cuda_whole_min_ctas(int nb) { return nb == 1 ? 4 : 3; }
/* PIPE's weight tiles per stage by default (pipe_tiles), the other depth of its 32-row tiles
 * (pipe32_other) and its dynamic shared memory (pipe_config::bytes: three stages) */
static inline QMM__CUDA_CONSTEXPR int qmm__cuda_pipe_tiles(int kenc, int nb) { return nb == 2 || (nb == 4 && qmm__kenc_fp8(kenc)) ? 8 : 4; }
static inline QMM__CUDA_CONSTEXPR int qmm__cuda_pipe32_other(int kenc) { return qmm__cuda_pipe_tiles(kenc, 4) == 8 ? 4 : 8; }
static inline QMM__CUDA_CONSTEXPR int qmm__cuda_pipe_bytes(int kenc, int nb, int tiles) { return 3 * (8 * nb) * (tiles * qmm__kenc_tile_k(kenc) + 8) * 2; }
/* The WG kernel of `rows` rows per CTA (wg_config): chunks per stage, rows per M tile, M tiles per CTA,
 * bytes of one chunk of laid-out A, dynamic shared memory, threads */
static inline QMM__CUDA_CONSTEXPR int qmm__cuda_wg_stage_chunks(int kenc) { return 128 / qmm__kenc_tile_k(kenc); }
static inline QMM__CUDA_CONSTEXPR int qmm__cuda_wg_tile_rows(int rows) { return rows < QMM__CUDA_WG_ROWS ? rows : QMM__CUDA_WG_ROWS; }
static inline QMM__CUDA_CONSTEXPR int qmm__cuda_wg_tiles(int rows) { return rows / qmm__cuda_wg_tile_rows(rows); }
static inline QMM__CUDA_CONSTEXPR int qmm__cuda_wg_chunk_a(int kenc, int rows) { return rows * qmm__kenc_tile_k(kenc) * 2; }
static inline QMM__CUDA_CONSTEXPR int qmm__cuda_wg_bytes(int kenc, int rows)
{
    const int chunks = qmm__cuda_wg_stage_chunks(kenc);
    const int stage = chunks * qmm__cuda_wg_chunk_a(kenc, rows) + QMM__CUDA_WARPS * chunks * (512 + qmm__kenc_scale_tile(kenc));
    const int fit = (QMM__CUDA_WG_SMEM_MAX - 64) / stage;
    const int stages = rows <= QMM__CUDA_WG_ROWS ? 3 : rows == 2 * QMM__CUDA_WG_ROWS ? 4 : fit < 3 ? fit : 3;
    return stages * stage + 2 * stages * 8;
}
static inline QMM__CUDA_CONSTEXPR int qmm__cuda_wg_threads(int rows) { return rows > 2 * QMM__CUDA_WG_ROWS ? 384 : 288; }
/* index of a CTA height in qmm__cuda_kernel_facts::wg */
static inline QMM__CUDA_CONSTEXPR int qmm__cuda_wg_height(int rows) { return rows <= 32 ? 0 : rows / QMM__CUDA_WG_ROWS; }

/* ---- the kernel forms: one translation unit each (kernels_mma_<enc>[_f16].cu) ---- */

/* How the activations meet a weight's tiles: bf16 A; fp16 A against the fp16 decode; fp16 A split into
 * bf16 hi + lo (MXFP4 whose scale codes span more than QMM__MXFP4_HALF_RANGE). */
typedef enum qmm__cuda_form {
    QMM__FORM_NVFP4, QMM__FORM_NVFP4_F16, QMM__FORM_MXFP4, QMM__FORM_MXFP4_F16, QMM__FORM_MXFP4_SPLIT,
    QMM__FORM_FP8, QMM__FORM_FP8_F16, QMM__FORM_COUNT
} qmm__cuda_form;
/* the kernel encoding (template argument ENC) and whether A is split (FP16A) of each form */
int qmm__cuda_form_kenc(qmm__cuda_form f);
bool qmm__cuda_form_split(qmm__cuda_form f);

/* ---- the inputs ---- */

/* What the device holds of the WG kernel of one height at once: `slots` CTAs without clusters (0: that
 * kernel does not run) and clusters[c] clusters of c CTAs (0 where it cannot run them). */
typedef struct qmm__cuda_wg_room {
    long long slots;
    int clusters[QMM__CUDA_WG_CLUSTER_MAX + 1];
} qmm__cuda_wg_room;

/* What the launcher's setup of one form found on a device (qmm__cuda_mma_setup, once per device). */
typedef struct qmm__cuda_kernel_facts {
    bool ready;       /* set up */
    bool pdl;         /* its kernels carry sm_90 code or later (griddepcontrol): dependent launches work */
    bool tensor_maps; /* the driver encodes tensor maps (cuTensorMapEncodeTiled) */
    qmm__cuda_wg_room wg[QMM__CUDA_WG_HEIGHTS]; /* the WG kernels of 32, 64, 128, 192, 256 rows */
} qmm__cuda_kernel_facts;

typedef struct qmm__cuda_device {
    int sm_count, major;
    size_t optin;    /* shared memory a CTA may opt into */
    size_t smem_sm;  /* shared memory per SM */
    size_t reserved; /* shared memory the system takes per CTA */
    qmm__cuda_kernel_facts kernels[QMM__FORM_COUNT];
} qmm__cuda_device;

/* One call. */
typedef struct qmm__cuda_call {
    size_t m, n, k;
    qmm__cuda_encoding enc;
    int mx_half;          /* MXFP4 with an fp16 decode */
    bool channel_scales;  /* FP8 per channel */
    size_t strips, chunks;
    qmm_dtype a_type, c_type;
    bool a_aligned;       /* A's base and rows 16-byte aligned */
    size_t workspace;     /* bytes: the split-K partials and laid-out A take it as floats */
    size_t counters;      /* split-K arrival counters */
} qmm__cuda_call;

/* The plan's switches for tests and experiments (tests/test_cuda.c loops over the variants through
 * them); QMM__CUDA_OVERRIDE_DEFAULT is the rules. Set per context: qmm__cuda_context_override. */
typedef struct qmm__cuda_override {
    int splits;      /* > 0: the split of K, forced (no pair mode, tall pairs, one-split rule or three-CTA GEMV) */
    int one_split;   /* 1: one split past four 64-row M tiles where the rule holds (one_split_fits); 0: never */
    int pairs;       /* 1: pair mode wherever the split has halves; 0: off (the rule) */
    int tall;        /* tall pairs: 1 the rule, 2 coarse units wherever there are several M tiles, 0 off */
    int wg;          /* the WG kernel: 1 the rule, 2 also where the rule keeps PIPE (coarse units, 32-row tiles of many splits), 0 off */
    int wg128;       /* its 128-row CTAs: 1 the rule, 2 for every M > 64, 0 never */
    int wg192;       /* its 192-row CTAs at three M tiles: 1 the rule, 0 never (256 rows there) */
    int wg256;       /* its 256-row CTAs: 1 past two M tiles where they take one wave, 2 past one M tile, 3 past two, 0 never */
    int wg_coarse;   /* its tall CTAs over coarse units: 1 the rule, 2 wherever the fine units have pairs, 0 never */
    int wg_cluster;  /* its largest cluster: QMM__CUDA_WG_CLUSTER_MAX, 0 none */
    int wg_w_map;    /* 1: its weights by tensor map where the driver makes one; 0: one copy per strip */
    int wg_a_map;    /* 1: A by tensor map where its rows are aligned; 0: wg_stage_a's layout always */
    int pipe32;      /* PIPE's tiles per stage at 32 rows: 0 pipe_tiles, else that depth where it is the other one (4, 8) */
    int whole16;     /* 0: 16-row tiles by PIPE where it runs (the rule); 1: by WHOLE wherever its staging fits */
    int whole_parts; /* the GEMV's WHOLE staging in two parts: 1 the rule, 2 wherever a unit has two, 0 never */
    int gemv3;       /* the three-CTA GEMV: 1 the rule, 2 wherever the GEMV runs WHOLE, 0 never */
    int spread;      /* WHOLE's padding of dependent launches: 1 the rule, 2 to the opt-in size always, 0 none */
    int pdl;         /* 1: dependent launches where the kernels have sm_90 code; 0: none */
} qmm__cuda_override;
#define QMM__CUDA_OVERRIDE_DEFAULT {0, 1, 0, 1, 1, 1, 1, 1, 1, QMM__CUDA_WG_CLUSTER_MAX, 1, 1, 0, 0, 1, 1, 1, 1}
/* Parses "name=value,..." (the field names above) over *o; false (o partly set) on an unknown name or a
 * value that is not an integer. */
bool qmm__cuda_override_parse(const char *spec, qmm__cuda_override *o);

/* ---- the tunables: the measured values of the rules, one table per architecture ---- */

/* The dispatcher's tiers for one encoding (plan.c, qmm__cuda_plan_path). */
typedef struct qmm__cuda_tiers {
    size_t gemv_max_m, fused_max_m, fused_large_elems, fused_large_max_m, fused_wg_max_m, fused_huge_elems, fused_huge_max_m;
    size_t fused_huge_channel_max_m; /* fused_huge_max_m for weights with channel scales; 0: the same */
    size_t fused_giant_elems, fused_giant_max_m;
    size_t fused_fill_max_m; /* past the tiers, fused up to this M where its one-split grid fills its waves */
} qmm__cuda_tiers;

typedef struct qmm__cuda_tunables {
    const char *measured_on;
    qmm__cuda_tiers tiers[3]; /* NVFP4, MXFP4, FP8 */
    int fill_num, fill_den;   /* the fill rule's share of the waves */
    int e2m1_cta_tiles, fp8_cta_tiles; /* the GEMV split's start cost of a CTA, in tiles */
    int max_splits;           /* the most splits of K */
    int fused_split_per_sm;   /* the fused split: CTAs per SM in its one wave */
    int one_split_mtiles, one_split_per_sm; /* one split past this many 64-row M tiles, of this many per SM */
    int gemv3_fill_num, gemv3_fill_den;    /* the three-CTA GEMV where its wave fills this share */
    int wg32_max_splits;      /* the WG kernel's 32-row CTAs up to this many splits */
    int wg_long_stages;       /* units of at least this many stages are long (128-row CTAs at M = 65..128) */
    int wg_long_splits;       /* ... as are two or fewer units */
    int wg_cost64, wg_cost128, wg_cost256; /* wg_cost's weight of a row-chunk in CTAs of 64, 128, 256 rows */
} qmm__cuda_tunables;

/* The table for a device of compute capability major.minor. */
const qmm__cuda_tunables *qmm__cuda_tunables_for(int major, int minor);

/* ---- the plan ---- */

typedef enum qmm__cuda_variant { QMM__CUDA_STEP, QMM__CUDA_WHOLE, QMM__CUDA_PIPE, QMM__CUDA_WG } qmm__cuda_variant;

/* A division of K into units (kernels_mma.cuh, "Split-K"): chunks per unit, units, partials added two by
 * two, the restart of a coarse unit (its fine half, or 0), WHOLE's staging part (or 0). */
typedef struct qmm__cuda_division {
    int cps, splits, pairs, half, whole_part;
} qmm__cuda_division;

/* One launch of a tensor-core kernel. */
typedef struct qmm__cuda_launch {
    qmm__cuda_variant variant;
    int minb;   /* WHOLE and PIPE: the CTAs per SM of its launch bounds (its template's MINB) */
    int tiles;  /* PIPE: weight tiles per stage */
    int rows;   /* rows of A per CTA */
    int cluster; /* WG: CTAs per cluster; 0: the kernel without clusters */
    int mtiles; /* M tiles (of 8 * nb rows; the WG kernel's of 32 or 64) */
    long long grid;
    int threads;
    size_t smem;
    bool pdl;
    qmm__cuda_division div;
    bool w_map, a_map;          /* WG: weights and A by tensor map (where the driver makes them) */
    size_t part_bytes, laid_bytes; /* WG: its partials; A laid out by wg_stage_a where it has no map */
} qmm__cuda_launch;

typedef struct qmm__cuda_plan {
    qmm_path path;
    const char *why;     /* the rule that chose the path */
    bool mma;            /* GEMV or fused: the tensor-core kernels run */
    qmm__cuda_form form;
    int nb;              /* 8-row groups per M tile: 1 (the GEMV), 2, 4, 8 */
    bool wg;             /* wg_launch runs (after wg_stage_a where a_map is off) */
    qmm__cuda_launch wg_launch;
    /* WHOLE, PIPE or STEP: what runs where wg is off, or where the WG kernel finds at launch that the
     * driver refuses a map of A and the workspace cannot hold A laid out */
    qmm__cuda_launch launch;
} qmm__cuda_plan;

/* The path of the dispatcher's tiers for a call on a device of sm_count SMs (why: the tier). */
qmm_path qmm__cuda_plan_path(const qmm__cuda_call *c, int sm_count, const qmm__cuda_tunables *t, const char **why);
/* The plan of call c on device d (whose kernels[qmm__cuda_form_of(...)] must be ready for a GEMV or fused
 * path) under override o, on the path `forced` (QMM_PATH_AUTO: the dispatcher's). false where the forced
 * path cannot take the weight (GEMV and fused: NVFP4, MXFP4 and FP8 encodings only). */
bool qmm__cuda_plan_make(const qmm__cuda_call *c, qmm_path forced, const qmm__cuda_device *d, const qmm__cuda_override *o,
                         qmm__cuda_plan *out);
/* The form of the kernels for a call (the GEMV and fused paths), QMM__FORM_COUNT for other encodings. */
qmm__cuda_form qmm__cuda_form_of(qmm__cuda_encoding enc, int mx_half, qmm_dtype a_type);
/* The launches of a plan as one line of text (tests/cuda_plan/README.md gives the form), "" for
 * materialize; the length it needs (snprintf's contract). */
size_t qmm__cuda_plan_describe(const qmm__cuda_plan *p, char *buf, size_t cap);

/* The fused path's tile height for m rows of A, in 8-row groups (nb): 16, 32 or 64 rows. The split of K
 * does not depend on it (batch invariance; tests/test_cuda_split.c checks the split at each height). */
static inline int qmm__cuda_fused_nb(size_t m) { return m <= 16 ? 2 : m <= 32 ? 4 : 8; }
/* The fill rule (plan.c): whether the fused path's one-split grid of 256-row CTAs over 128 weight rows
 * fills its waves of sm_count CTAs to the tunables' share. */
bool qmm__cuda_fused_fills(size_t n, size_t m, int sm_count, const qmm__cuda_tunables *t);

/* Whether A's base and rows are 16-byte aligned (PIPE's and the WG kernel's tensor map's condition). */
static inline bool qmm__cuda_a_aligned(const void *a, size_t lda) { return (uintptr_t)a % 16 == 0 && lda % 8 == 0; }

/* ---- the launchers that execute a plan (kernels_mma.cu); each returns a cudaError_t value ---- */

/* Form `form`'s setup on the current device, once per device: its kernels' shared-memory limits raised,
 * and what the plan reads of them (*facts). */
int qmm__cuda_mma_setup(int form, int sm_count, qmm__cuda_kernel_facts *facts);
/* The GEMV or fused path's plan for m rows of A (lda apart) against w, in the workspace's partials and
 * counters, on stream. */
int qmm__cuda_mma_run(const qmm__cuda_plan *plan, const qmm__cuda_prepared *w, size_t m, const void *a, size_t lda,
                      const qmm__cuda_epilogue *e, float *partials, size_t partial_floats, unsigned *counters, void *stream);

/* The override of a CUDA context's plans (NULL: the rules), for tests and experiments (cuda_backend.c).
 * QMM_ERR_INVALID_ARGUMENT where ctx is not a CUDA context. */
qmm_status qmm__cuda_context_override(qmm_context *ctx, const qmm__cuda_override *o);

/* ---- the rules' parts (plan_split.c, plan_wg.c), for the plan and its tests ---- */

/* A shape as the split rules see it: rows of A, 16-row strips of W, chunks of K, M tiles. */
typedef struct qmm__cuda_shape {
    int m, strips, chunks, mtiles;
} qmm__cuda_shape;

int qmm__cuda_strip_groups(int strips);
/* The GEMV's split (per_sm_min: the CTAs per SM of its WHOLE), the fused path's, one split past four M
 * tiles, and the three-CTA GEMV's split (0: it does not run; always: wherever it can) */
int qmm__cuda_split_gemv(int strips, int chunks, int tiles_per_step, int sm_count, int cta_tiles, int per_sm_min,
                         const qmm__cuda_tunables *t);
int qmm__cuda_split_fused(int strips, int chunks, int tiles_per_step, int sm_count, const qmm__cuda_tunables *t);
bool qmm__cuda_one_split_fits(int strips, int mtiles, int sm_count, const qmm__cuda_tunables *t);
int qmm__cuda_gemv_early_split(int strips, int chunks, int tiles_per_step, int sm_count, int cta_tiles, bool always,
                               const qmm__cuda_tunables *t);
/* Pair mode and tall pairs: true where they apply, with the division in *d (untouched otherwise). */
bool qmm__cuda_pair_split(const qmm__cuda_shape *s, int nb, int tiles_per_step, int sm_count, size_t partial_floats,
                          size_t counters, const qmm__cuda_tunables *t, qmm__cuda_division *d);
bool qmm__cuda_tall_split(const qmm__cuda_shape *s, int nb, int tiles_per_step, int sm_count, size_t partial_floats,
                          size_t counters, bool force, const qmm__cuda_tunables *t, qmm__cuda_division *d);

/* The WG kernel's choice (plan_wg.c): whether it runs division d of shape s in tiles of tile_rows (32 or
 * 64) rows on a device that holds rooms wg[] of it, and its CTA rows, cluster and division. */
typedef struct qmm__cuda_wg_choice {
    qmm__cuda_division div;
    int rows, cluster;
    long long waves;
} qmm__cuda_wg_choice;
bool qmm__cuda_wg_choose(const qmm__cuda_shape *s, const qmm__cuda_division *d, const qmm__cuda_wg_room wg[QMM__CUDA_WG_HEIGHTS],
                         int stage_chunks, int tile_rows, const qmm__cuda_override *o, const qmm__cuda_tunables *t,
                         qmm__cuda_wg_choice *out);

#ifdef __cplusplus
}
#endif

#endif
