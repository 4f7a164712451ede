/* The CPU backend's internal contract: the prepared weight layout (src/cpu/README.md draws it), the
 * epilogue and argument blocks, and the kernel table that each instruction set fills (BLIS style: the
 * portable table is filled first, then an instruction set overrides the entries it has). */
#ifndef QMM_CPU_KERNELS_H
#define QMM_CPU_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/prepared.h"
#include "qmm_measure.h"

/* Formats that share a data layout share a kind. */
typedef enum qmm__cpu_kind {
    QMM__KIND_NVFP4 = 0, /* E2M1, E4M3 scale per 16 along K */
    QMM__KIND_MXFP4 = 1, /* E2M1, E8M0 scale per 32 along K */
    QMM__KIND_FP8 = 2,   /* E4M3 (tensor or channel scale: both only in the epilogue) */
    QMM__KIND_BF16 = 3,  /* dense bf16 */
    QMM__KIND_COUNT = 4
} qmm__cpu_kind;

/* Rows of W per tile: one 64-byte vector of bf16 pairs holds one k-pair of 16 rows. */
#define QMM__TILE_ROWS 16
/* K is padded with zero weights to a multiple of this in the prepared layout (one scale group). */
#define QMM__KGROUP 64
/* Bytes of one group (QMM__KGROUP values of K of one tile's 16 rows) in the prepared data and scale
 * streams (layout.c). */
#define QMM__GROUP_DATA(kind) ((kind) == QMM__KIND_BF16 ? 2048 : (kind) == QMM__KIND_FP8 ? 1024 : 512)
#define QMM__GROUP_SCALES(kind) ((kind) == QMM__KIND_NVFP4 ? 64 : (kind) == QMM__KIND_MXFP4 ? 32 : 0)

/* E4M3 values (FP8 elements, NVFP4 block scales) are decoded as E4M3 * 2^-8: the bits shifted into
 * binary16 give exactly that, subnormals included (README). The epilogue multiplies by 2^8. */
#define QMM__E4M3_UNIT 0x1p-8f

/* A weight prepared for the CPU backend (qmm_weight_prepare), or a canonical one described the same
 * way (prepared = false: data and scales point at the caller's canonical buffers). */
typedef struct qmm__cpu_weight {
    qmm_prepared head;          /* must be first */
    bool prepared;              /* tiles below; false: canonical buffers */
    qmm__cpu_kind kind;
    size_t n, k;
    size_t kp;                  /* K padded to QMM__KGROUP */
    size_t tiles;               /* ceil(N / 16) */
    size_t tile_bytes;          /* data bytes of one tile: 16 rows x kp elements */
    size_t tile_scale_bytes;    /* block-scale bytes of one tile: 16 x kp / B (0 without) */
    const uint8_t *data;        /* prepared: tiles x tile_bytes; canonical: N rows */
    const uint8_t *scales;      /* prepared: tiles x tile_scale_bytes; canonical: N x ceil(K/B) */
    float tensor_scale;         /* NVFP4 weight_scale_2, FP8_TENSOR scale; 1 otherwise */
    const float *channel_scales;/* FP8_CHANNEL: N floats; NULL otherwise */
    float unit;                 /* the decoded values are this times the true ones: 2^-8 or 1 */
    const float *poison;        /* N floats, NaN for a row holding a NaN code (E4M3 element or block
                                   scale, E8M0 0xFF), else 0; NULL when there is none. The kernels
                                   decode NaN codes as finite numbers and the epilogue adds this. */
    void *storage;              /* prepared: the one allocation behind data, scales, channel_scales */
} qmm__cpu_weight;

/* The epilogue of one call, as the store functions apply it to an fp32 sum `acc` of decoded values:
 *   C[m, n] = out_scale(m) * act( (acc + poison(n)) * inv_unit * row_scale(n) * alpha * column_scale(n) + bias(n)
 *                                 + beta * C_in )
 * with row_scale(n) = row_scales[n] when set, else row_scale (the weight's tensor or channel scale), and
 * out_scale(m) = out_scale[m] when set (the routing weight of row m of a grouped call), else 1, in this
 * order of operations. */
typedef struct qmm__cpu_epi {
    const float *poison;
    float inv_unit;
    float row_scale;
    const float *row_scales;
    float alpha, beta;
    const float *column_scale, *bias;
    qmm_activation act;
    const float *out_scale;     /* one per row of C, or NULL */
    qmm_dtype c_type;
    void *c;
    size_t ldc, n;
} qmm__cpu_epi;

/* The GEMV: rows [tile0 * 16, tile1 * 16) of C for all m rows of A, in one pass over those tiles. */
typedef struct qmm__cpu_gemv_args {
    const qmm__cpu_weight *w;   /* prepared */
    size_t m;
    const void *a;              /* bf16 (dot kernels) or fp32 (FMA kernels), k valid columns */
    size_t lda;
    const qmm__cpu_epi *epi;
} qmm__cpu_gemv_args;
typedef void (*qmm__cpu_gemv_fn)(const qmm__cpu_gemv_args *args, size_t tile0, size_t tile1);

/* A panel: 32 columns of W (two tiles) over kc = a multiple of QMM__KGROUP values of K from k0, as
 * bf16 pairs, [kc / 2][32][2]: element (p, c, s) is the decoded W[col0 + c][k0 + 2p + s], exact
 * (element * block scale, in the weight's unit). Columns past N and K past kp are zero. */
typedef void (*qmm__cpu_panel_fn)(const qmm__cpu_weight *w, size_t col0, size_t k0, size_t kc, uint16_t *panel);

/* One register tile of the GEMM: the MR rows of a packed group of A (MR is the kernel's; rows past M
 * are zeros) times 32 columns of W over `pairs` k-pairs; only the first `mr` rows are stored. Packed A
 * holds, for each k-pair, the MR rows' pairs: bf16 [pairs][MR][2] for the dot kernel, fp32
 * [2 * pairs][MR] for the FMA kernel, zero past K. W comes as two column halves of bf16 pairs, w0
 * (columns 0..15) and w1 (16..31), `wstride` uint16 apart per k-pair (64 for a panel, 32 for a
 * prepared bf16 tile). */
typedef struct qmm__cpu_tile_args {
    const void *a;              /* packed A of this row group at the block's first k-pair */
    size_t mr, pairs;
    const uint16_t *w0, *w1;
    size_t wstride;
    float *part;                /* partial sums, mr x 32 at row stride ldp */
    size_t ldp;
    bool accumulate;            /* start from `part` instead of zero */
    const qmm__cpu_epi *epi;    /* NULL: store the sums to `part`; else the final block: store C */
    size_t row0, col0;          /* where the tile sits in C */
} qmm__cpu_tile_args;
typedef void (*qmm__cpu_tile_fn)(const qmm__cpu_tile_args *t);

typedef struct qmm__cpu_kernels {
    const char *name;
    /* GEMV with fp32 A (every instruction set) and with bf16 A through bf16 dot products (NULL
     * without them; the driver then converts A to fp32). */
    qmm__cpu_gemv_fn gemv_fma[QMM__KIND_COUNT];
    qmm__cpu_gemv_fn gemv_dot[QMM__KIND_COUNT];
    /* Panels from the prepared layout. */
    qmm__cpu_panel_fn panel[QMM__KIND_COUNT];
    /* GEMM register tiles: fp32 A with FMA, bf16 A with bf16 dot products (NULL without). */
    qmm__cpu_tile_fn tile_fma, tile_dot;
    size_t mr_fma, mr_dot;
    /* Measurement loops (measure_rates): sum of `bytes` (a multiple of 256) read from p; `iters`
     * iterations of independent FMAs / bf16 dot products, returning the flops done. */
    uint64_t (*read_sum)(const void *p, size_t bytes);
    double (*fma_loop)(long iters);
    double (*dot_loop)(long iters);
} qmm__cpu_kernels;

/* Each instruction set's unit fills its entries. */
void qmm__cpu_fill_generic(qmm__cpu_kernels *k);
void qmm__cpu_fill_avx2(qmm__cpu_kernels *k);
void qmm__cpu_fill_avx512(qmm__cpu_kernels *k);
void qmm__cpu_fill_avx512bf16(qmm__cpu_kernels *k);
void qmm__cpu_fill_avx512vbmi(qmm__cpu_kernels *k);

/* Byte offset of W[row l][k] in an E4M3 tile (layout.c). */
size_t qmm__e4m3_offset(size_t l, size_t k);

/* Panels from canonical (unprepared) weights: portable, every instruction set uses it. */
void qmm__cpu_panel_canonical(const qmm__cpu_weight *w, size_t col0, size_t k0, size_t kc, uint16_t *panel);

/* The portable epilogue of one element (also the reference for the vector versions). */
float qmm__cpu_epilogue_value(const qmm__cpu_epi *e, size_t row, size_t col, float acc);
void qmm__cpu_store_value(const qmm__cpu_epi *e, size_t row, size_t col, float v);

#endif
