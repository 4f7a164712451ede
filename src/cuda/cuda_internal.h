/* Internal interfaces of the CUDA backend: the per-context state, the prepared weight, and the C
 * launchers of the kernels in the .cu files. Host code is C; kernels are CUDA C. */
#ifndef QMM_CUDA_INTERNAL_H
#define QMM_CUDA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/prepared.h"
#include "decode.h"
#include "qmm_measure.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a prepared weight is encoded on the device. */
typedef enum qmm__cuda_encoding {
    QMM__ENC_NVFP4 = 1, /* tiles of E2M1 + E5M3 scale codes: every path */
    QMM__ENC_MXFP4 = 2, /* tiles of E2M1 + E8M0 scale codes, exponent range fits the bias trick: every path */
    QMM__ENC_FP8 = 3,   /* tiles of E4M3, no NaN codes: every path */
    QMM__ENC_BF16 = 4,  /* row-major bf16: the dense path (cuBLASLt) */
    /* Tiles with the original codes, for weights the bit tricks cannot take (NaN scales or codes, an
     * MXFP4 exponent range over 126): decoded one element at a time by the materialize path only. */
    QMM__ENC_NVFP4_RAW = 5,
    QMM__ENC_MXFP4_RAW = 6,
    QMM__ENC_FP8_RAW = 7
} qmm__cuda_encoding;

typedef struct qmm__cuda_prepared {
    qmm_prepared head;
    qmm__cuda_encoding enc;
    size_t n, k;
    size_t strips, chunks;  /* 16-row strips, K chunks of 64 (E2M1) or 32 (E4M3) */
    void *data;             /* device: tiles, or row-major bf16 */
    void *scales;           /* device: scale tiles (E2M1 formats) */
    float *channel_scales;  /* device: N floats (FP8_CHANNEL) */
    float tensor_scale;     /* NVFP4 weight_scale_2, FP8 per-tensor scale; 1 otherwise */
    float fix;              /* 2^fix multiplies the kernels' sums (see decode.h) */
    int mx_off;             /* MXFP4: 126 - K */
    int mx_half;            /* MXFP4: the scale codes span at most QMM__MXFP4_HALF_RANGE: an fp16 decode */
    size_t bytes;           /* device bytes held */
} qmm__cuda_prepared;

/* Host-side construction of the prepared tiles from a canonical weight (prepare.c). The buffers are
 * host memory of the sizes qmm__cuda_prepared_sizes gives. Returns the encoding chosen. */
typedef struct qmm__cuda_layout {
    qmm__cuda_encoding enc;
    size_t strips, chunks, data_bytes, scale_bytes;
    float fix;
    int mx_off;
    int mx_half; /* MXFP4 whose used scale codes span at most QMM__MXFP4_HALF_RANGE (decode.h) */
} qmm__cuda_layout;

/* Whether fp16 activations meet an fp16 decode of the encoding on the tensor-core paths (one fp16 MMA per
 * product) rather than a split of A into bf16 hi + lo (two bf16 MMAs): FP8, NVFP4, and MXFP4 whose used
 * scale codes span at most QMM__MXFP4_HALF_RANGE (mx_half). */
static inline bool qmm__cuda_half_decode(qmm__cuda_encoding enc, int mx_half)
{
    return enc == QMM__ENC_FP8 || enc == QMM__ENC_NVFP4 || (enc == QMM__ENC_MXFP4 && mx_half);
}

/* What the epilogue's factor (alpha_fix, which holds the weight's 2^fix) is further multiplied by where an
 * fp16 decode runs: the power of two by which its products differ from the bf16 decode's. FP8: 2^8 (the
 * bf16 decode is exact, the fp16 one the value times 2^-QMM__FP8_HALF_FIX); NVFP4: 2^-1 (2^-7 against
 * 2^-8); MXFP4: 1 (the same fix). The kernels' host side and the host emulation both take it from here. */
static inline float qmm__cuda_half_fix(qmm__cuda_encoding enc)
{
    if (enc == QMM__ENC_FP8) return (float)(1u << QMM__FP8_HALF_FIX);
    if (enc == QMM__ENC_NVFP4) return (float)(1u << QMM__NVFP4_HALF_FIX) / (float)(1u << QMM__NVFP4_FIX);
    return 1.0f;
}

qmm__cuda_layout qmm__cuda_plan_layout(const qmm_weight *w);
void qmm__cuda_fill_layout(const qmm_weight *w, const qmm__cuda_layout *l, uint8_t *data, uint8_t *scales);
/* Host emulation of the kernels' decode: the unscaled bf16 value of W[r][c] (element * block scale) read
 * back from the tiles, with the same bit operations as the device. For tests. */
float qmm__cuda_emulate_decode(const qmm__cuda_layout *l, const uint8_t *data, const uint8_t *scales, size_t r, size_t c);
/* The same for the fp16 decode of the kernels with fp16 activations (FP8, NVFP4, and MXFP4 layouts with
 * mx_half): the fp16 value, with its other power of two undone. */
float qmm__cuda_emulate_decode_f16(const qmm__cuda_layout *l, const uint8_t *data, const uint8_t *scales, size_t r, size_t c);

/* The epilogue as the kernels see it (device pointers). */
typedef struct qmm__cuda_epilogue {
    float alpha_fix;            /* alpha * tensor scale * 2^fix (the tensor-core kernels may scale it by a further
                                 * power of two for their fp16 decode, kernels_mma.cu) */
    const float *channel_scales;/* N, or NULL */
    const float *column_scale;  /* N, or NULL */
    const float *bias;          /* N, or NULL */
    float beta;
    int activation;             /* qmm_activation */
    int c_type;                 /* qmm_dtype */
    void *c;
    size_t ldc;
} qmm__cuda_epilogue;

/* bytes rounded up to the 256-byte alignment of the workspace's carves (cuda_backend.c) */
static inline size_t qmm__cuda_round256(size_t bytes) { return (bytes + 255) & ~(size_t)255; }

/* The rows of W per chunk of the materialize path: as few chunks as `left` bytes allow for each chunk's
 * w_row bytes of dequantized weight and f_row bytes of fp32 sums per row (rounded as qmm__carve rounds
 * them), all of one size (a multiple of 16 rows; the last one shorter by less than 16 rows per chunk);
 * 0 where not even 16 rows fit. Equal chunks keep a last chunk of a few rows from running a GEMM of its
 * own: chunks of the most rows would cut (8192, 28672) at M = 2048 in the default workspace into 4048,
 * 4048 and 96 rows, and the last one's dequantization and GEMM take 11 + 34 us of the call's 1345
 * (measured on an H200); equal chunks make two of 4096. cuda_backend.c carves them; test_cuda_split
 * checks this rule on the host. */
static inline size_t qmm__cuda_chunk_rows(size_t left, size_t w_row, size_t f_row, size_t n)
{
    const size_t per_row = w_row + f_row;
    size_t rows = per_row ? left / per_row : n;
    if (rows >= n) rows = n;
    else rows -= rows % 16;
    while (rows > 0 && qmm__cuda_round256(rows * w_row) + qmm__cuda_round256(rows * f_row) > left)
        rows -= rows % 16 ? rows % 16 : 16;
    if (rows == 0 || rows == n) return rows;
    const size_t chunks = (n + rows - 1) / rows, even = (n + chunks - 1) / chunks;
    return (even + 15) / 16 * 16; /* at most rows: rows is a multiple of 16 and even <= rows */
}

/* Launchers (kernels_*.cu; the tensor-core kernels' are in plan.h). Each returns a cudaError_t value (0 =
 * success) after checking the launch. */
/* Writes the unscaled weight rows [r0, r0 + rows) as row-major bf16 (dst_half = 0) or fp16 (1), k columns:
 * element * block scale, or with unfixed = 1 (NVFP4, MXFP4 and FP8 only) that times 2^-fix, the tensor-core
 * decode's own value, which the caller's alpha then multiplies by w->fix. */
int qmm__cuda_dequantize(const qmm__cuda_prepared *w, size_t r0, size_t rows, void *dst, int dst_half, int unfixed,
                         void *stream);
/* Splits fp16 A (m x k, stride lda) into bf16 hi and lo parts (each m x k, stride k): a = hi + lo exactly. */
int qmm__cuda_split_fp16(const void *a, size_t m, size_t k, size_t lda, void *hi, void *lo, void *stream);
/* Applies the epilogue to fp32 sums acc (m x n, stride ldacc) and writes C. */
int qmm__cuda_epilogue_apply(const float *acc, size_t ldacc, size_t m, size_t n, size_t n0, const qmm__cuda_epilogue *e,
                             void *stream);
/* Device-to-device copy bandwidth in GB/s (bytes read + written), median of several copies. */
int qmm__cuda_copy_gbps(void *buf_a, void *buf_b, size_t bytes, void *stream, double *gbps);

/* NVML (nvml.c): the clock, power and clock-lowering reasons of the GPU at pci_bus_id (the form
 * cudaDeviceGetPCIBusId writes). qmm__nvml_open: NULL where the driver's library is missing or does
 * not know the device. qmm__nvml_read: false where the clock cannot be read (out untouched). */
typedef struct qmm__nvml qmm__nvml;
qmm__nvml *qmm__nvml_open(const char *pci_bus_id);
void qmm__nvml_close(qmm__nvml *n);
bool qmm__nvml_read(const qmm__nvml *n, qmm_machine_state *out);

#ifdef __cplusplus
}
#endif

#endif
