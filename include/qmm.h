/*
 * qmm: weight-only low-precision matrix multiplication.
 *
 *     C[M,N] = epilogue( A[M,K] @ dequant(W)^T )
 *
 * A holds activations (bf16, fp16 or fp32), W weights quantized offline to NVFP4, MXFP4 or FP8 (E4M3),
 * accumulation is fp32 (fp64 in the reference backend), C is fp32, bf16 or fp16.
 *
 * Conventions that hold for every function below:
 * - Every function that can fail returns a qmm_status. On failure nothing is written to any output
 *   argument or caller buffer, and qmm_last_error() describes the failure in words.
 * - The caller allocates and owns every buffer it passes in; qmm never keeps a pointer to a caller
 *   buffer after a call returns (a weight prepared for a backend holds its own copy).
 * - Weights are N x K with K contiguous (a Linear layer's [out_features, in_features]).
 * - Strides ("ld*", "row_stride") count elements, not bytes, and must be at least the row length.
 * - No function aborts, exits or prints.
 *
 * Checkpoint and safetensors I/O is declared in qmm_io.h, the measurement of the machine for benchmarks
 * in qmm_measure.h; both include this header.
 */
#ifndef QMM_H
#define QMM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(QMM_SHARED_BUILD)
#define QMM_API __declspec(dllexport)
#elif defined(__GNUC__)
#define QMM_API __attribute__((visibility("default")))
#else
#define QMM_API
#endif

/* ------------------------------------------------------------------------------------------------
 * Version
 * ---------------------------------------------------------------------------------------------- */
#define QMM_VERSION_MAJOR 0
#define QMM_VERSION_MINOR 1
#define QMM_VERSION_PATCH 0
#define QMM_VERSION_NUMBER (QMM_VERSION_MAJOR * 10000 + QMM_VERSION_MINOR * 100 + QMM_VERSION_PATCH)

/* The library's version as "MAJOR.MINOR.PATCH" (static storage; never NULL). Compare with the
 * QMM_VERSION_* macros to detect a header/library mismatch. */
QMM_API const char *qmm_version(void);

/* ------------------------------------------------------------------------------------------------
 * Status codes. Append-only: a value, once released, keeps its meaning.
 * ---------------------------------------------------------------------------------------------- */
typedef enum qmm_status {
    QMM_OK = 0,
    QMM_ERR_NULL_POINTER = 1,        /* a required pointer argument is NULL */
    QMM_ERR_INVALID_SIZE = 2,        /* a dimension is zero (or otherwise out of range) */
    QMM_ERR_SIZE_OVERFLOW = 3,       /* a size computed from the dimensions overflows size_t */
    QMM_ERR_INVALID_STRIDE = 4,      /* a row stride is shorter than the row it steps over */
    QMM_ERR_INVALID_ENUM = 5,        /* an enum argument holds a value this library does not know */
    QMM_ERR_NON_FINITE = 6,          /* an input that must be finite holds NaN or an infinity */
    QMM_ERR_BUFFER_TOO_SMALL = 7,    /* a buffer's stated capacity is below what the size query gives */
    QMM_ERR_UNSUPPORTED = 8,         /* a valid combination that this backend or build does not do */
    QMM_ERR_OUT_OF_MEMORY = 9,       /* a host or device allocation failed */
    QMM_ERR_BACKEND_UNAVAILABLE = 10,/* the backend was not built in, or finds no device */
    QMM_ERR_NOT_PREPARED = 11,       /* the backend needs qmm_weight_prepare() for this weight first */
    QMM_ERR_WORKSPACE_TOO_SMALL = 12,/* the context's workspace cannot hold what this call needs */
    QMM_ERR_CUDA = 13,               /* a CUDA runtime call or kernel launch failed */
    QMM_ERR_CUBLAS = 14,             /* a cuBLAS / cuBLASLt call failed */
    QMM_ERR_IO = 15,                 /* reading or writing a file failed */
    QMM_ERR_MALFORMED = 16,          /* a file's contents do not follow its format */
    QMM_ERR_NOT_FOUND = 17,          /* a named file or tensor does not exist */
    QMM_ERR_EXISTS = 18,             /* an output file exists and overwriting was not asked for */
    QMM_ERR_INVALID_ARGUMENT = 19,   /* an argument is invalid in a way no code above names */
    QMM_ERR_INVALID_WEIGHT = 20,     /* a weight descriptor is inconsistent (format, buffers, scales) */
    QMM_ERR_INTERNAL = 21,           /* a bug in qmm: please report it */
    QMM_ERR_UNSAFE_OUTPUT = 22,      /* an output path would replace, modify or sit beside an input file,
                                        or names something qmm does not write (device, FIFO, socket) */
    QMM_ERR_CANCELLED = 23           /* the caller's progress callback asked the work to stop */
} qmm_status;

/* A fixed English description of a status code (static storage; never NULL, also for unknown codes). */
QMM_API const char *qmm_status_string(qmm_status status);

/* A description of the last failure of a qmm function in the calling thread, with the names and values
 * involved ("qmm_quantize: row stride 100 is shorter than k = 128"). The text stays valid until the next
 * qmm call in the same thread; it is "" when no call has failed in this thread yet. Successful calls do
 * not clear it. Never NULL. It is safe to print: control characters and bytes that are not UTF-8 (from
 * names read out of files) appear escaped as \xNN, C1 controls as \u00NN. */
QMM_API const char *qmm_last_error(void);

/* Copies text into out (cap bytes, always NUL-terminated when cap > 0, cut between characters) with
 * every byte that a terminal could act on escaped: C0 controls and DEL as \xNN, C1 controls (U+0080 to
 * U+009F) as \u00NN, bytes that are not part of valid UTF-8 as \xNN; other UTF-8 is kept. For
 * printing names read from files (tensor names, metadata). Returns out ("" when out is NULL or cap is
 * 0); text NULL reads as "(null)". */
QMM_API const char *qmm_text_escape(const char *text, char *out, size_t cap);

/* ------------------------------------------------------------------------------------------------
 * Scalar conversions. Exact, bit-for-bit the same on every platform and backend.
 * Encoders round to nearest, ties to even (except E8M0, below).
 * ---------------------------------------------------------------------------------------------- */

/* fp32 -> bf16 (IEEE-style, 8-bit exponent, 7-bit mantissa). Overflow rounds to infinity; subnormals are
 * kept; a NaN becomes the quiet NaN 0x7FC0 with the input's sign (payload dropped, as ml_dtypes does). */
QMM_API uint16_t qmm_fp32_to_bf16(float x);
/* bf16 -> fp32: exact (every bf16 is an fp32; NaNs keep their payload). */
QMM_API float qmm_bf16_to_fp32(uint16_t h);

/* fp32 -> IEEE 754 binary16. Overflow rounds to infinity, subnormals are kept; a NaN becomes the quiet
 * NaN 0x7E00 with the input's sign (payload dropped). */
QMM_API uint16_t qmm_fp32_to_fp16(float x);
/* binary16 -> fp32: exact (NaNs keep their payload, quieted). */
QMM_API float qmm_fp16_to_fp32(uint16_t h);

/* fp32 -> FP8 E4M3 "fn" (bias 7, no infinities, S.1111.111 is NaN; max 448, min subnormal 2^-9).
 * Finite values past 448 and both infinities saturate to +-448 (0x7E / 0xFE), like PTX
 * cvt.rn.satfinite; a NaN becomes 0x7F with the input's sign (0xFF for a negative NaN);
 * -0.0 and negative values that round to zero give 0x80. */
QMM_API uint8_t qmm_fp32_to_e4m3(float x);
/* E4M3 -> fp32: exact; 0x7F and 0xFF give a NaN with the code's sign. */
QMM_API float qmm_e4m3_to_fp32(uint8_t code);

/* fp32 -> FP4 E2M1 code in the low 4 bits (bit 3 sign; magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6).
 * Values past 6 and infinities saturate to +-6. E2M1 has no NaN: a NaN is treated as an infinity of
 * its sign, so it gives +-6 (a choice of qmm's; quantizers reject non-finite input before this).
 * -0.0 and negative values that round to zero give the negative-zero code 0x8. */
QMM_API uint8_t qmm_fp32_to_e2m1(float x);
/* E2M1 code (low 4 bits; the high 4 bits are ignored) -> fp32: exact. */
QMM_API float qmm_e2m1_to_fp32(uint8_t code);

/* fp32 -> E8M0 (unsigned power of two 2^(code - 127), code 0..254; 0xFF is NaN), bit-exact with
 * ml_dtypes' float8_e8m0fnu (0.7 and later): a normal x = 1.f * 2^e gives code e + 127, plus one when
 * f >= 0.5 (ties go up, not to even); an fp32 subnormal gives code 1 from 1.5 * 2^-127 up, else code 0
 * (the same rounding; ml_dtypes before 0.7 gave code 1 to everything above 2^-127); zero,
 * negative values, NaN, infinities and values that round past 2^127 give 0xFF. */
QMM_API uint8_t qmm_fp32_to_e8m0(float x);
/* E8M0 -> fp32: 2^(code - 127), exact (2^-127 is an fp32 subnormal); 0xFF gives NaN. */
QMM_API float qmm_e8m0_to_fp32(uint8_t code);

/* ------------------------------------------------------------------------------------------------
 * Element types and formats
 * ---------------------------------------------------------------------------------------------- */
typedef enum qmm_dtype {
    QMM_DTYPE_FP32 = 1,
    QMM_DTYPE_BF16 = 2,
    QMM_DTYPE_FP16 = 3,
    QMM_DTYPE_E4M3 = 4, /* FP8 E4M3 "fn" */
    QMM_DTYPE_E2M1 = 5, /* FP4, two per byte, low nibble first */
    QMM_DTYPE_E8M0 = 6  /* power-of-two scale */
} qmm_dtype;

/* The name of a dtype ("fp32", "bf16", "fp16", "e4m3", "e2m1", "e8m0"), or NULL for an unknown value. */
QMM_API const char *qmm_dtype_name(qmm_dtype dtype);

typedef enum qmm_format {
    QMM_FORMAT_NVFP4 = 1,       /* E2M1 elements, E4M3 scale per 16 along K, fp32 tensor scale */
    QMM_FORMAT_MXFP4 = 2,       /* E2M1 elements, E8M0 scale per 32 along K (OCP MX v1.0) */
    QMM_FORMAT_FP8_TENSOR = 3,  /* E4M3 elements, one fp32 scale for the tensor */
    QMM_FORMAT_FP8_CHANNEL = 4, /* E4M3 elements, one fp32 scale per output channel (row n) */
    QMM_FORMAT_BF16 = 5         /* dense bf16, not quantized: unquantized layers, and the dense baseline
                                   (cuBLAS bf16 on CUDA) that benchmarks compare against */
} qmm_format;

/* How the scale outside the blocks is stored. */
typedef enum qmm_global_scale {
    QMM_GLOBAL_SCALE_NONE = 0,    /* MXFP4 */
    QMM_GLOBAL_SCALE_TENSOR = 1,  /* one fp32: qmm_weight.tensor_scale */
    QMM_GLOBAL_SCALE_CHANNEL = 2  /* N fp32: qmm_weight.channel_scales */
} qmm_global_scale;

/* What a format is, read from the one table every backend uses. */
typedef struct qmm_format_traits {
    const char *name;               /* "nvfp4", "mxfp4", "fp8_tensor", "fp8_channel", "bf16" */
    qmm_dtype element;              /* QMM_DTYPE_E2M1, QMM_DTYPE_E4M3 or QMM_DTYPE_BF16 */
    int element_bits;               /* 4, 8 or 16 */
    int block_size;                 /* elements along K per block scale; 0 when there are none */
    qmm_dtype block_scale;          /* QMM_DTYPE_E4M3 or QMM_DTYPE_E8M0; 0 when there are none */
    qmm_global_scale global_scale;  /* tensor, channel or none */
    double bits_per_weight;         /* storage per weight for K a multiple of the block, large N */
} qmm_format_traits;

/* Fills *out with the traits of `format`.
 * Errors: QMM_ERR_NULL_POINTER (out), QMM_ERR_INVALID_ENUM (format). */
QMM_API qmm_status qmm_format_get_traits(qmm_format format, qmm_format_traits *out);

/* Looks a format up by its traits name (case-sensitive; also accepts "fp8" for fp8_tensor).
 * Errors: QMM_ERR_NULL_POINTER, QMM_ERR_NOT_FOUND (unknown name). */
QMM_API qmm_status qmm_format_from_name(const char *name, qmm_format *out);

/* ------------------------------------------------------------------------------------------------
 * Weight descriptor
 * ---------------------------------------------------------------------------------------------- */

/* Order of the block scales in memory. Only the canonical layout is read and written by the functions
 * of this header; the others exist for exchange with other libraries. */
typedef enum qmm_scale_layout {
    QMM_SCALE_LAYOUT_CANONICAL = 0,  /* (N, ceil(K/B)) row-major */
    QMM_SCALE_LAYOUT_NV_BLOCKED = 1, /* cuBLASLt / CUTLASS 128x4 blocked (docs/design.md) */
    QMM_SCALE_LAYOUT_AMD_MFMA = 2    /* CDNA MFMA preshuffle (docs/design.md) */
} qmm_scale_layout;

typedef struct qmm_prepared qmm_prepared; /* a backend's own copy of a weight (qmm_weight_prepare) */

/* A quantized N x K weight. The caller owns the three buffers; the capacity fields say how large each
 * is, and every function checks them against qmm_weight_size_query() before reading or writing.
 *
 *   data            N rows of row_bytes bytes. E2M1: byte j of row n holds code[n][2j] in its low nibble
 *                   and code[n][2j+1] in its high nibble; an odd K leaves the last high nibble 0.
 *                   E4M3: one code per byte. BF16: one little-endian uint16 per weight.
 *   block_scales    NVFP4: E4M3 codes, MXFP4: E8M0 codes, one per block of B = 16 / 32 along K
 *                   (the last block of a row may be partial), in `scale_layout`. NULL for FP8.
 *   tensor_scale    NVFP4 (weight_scale_2) and FP8_TENSOR: multiplies every weight. Ignored otherwise.
 *   channel_scales  FP8_CHANNEL: N floats, channel_scales[n] multiplies row n. NULL otherwise.
 *
 * The real weight is W[n][k] = element * block_scale * tensor_scale (or * channel_scales[n]).
 *
 * A stack of E experts (the Linear layers of a mixture-of-experts layer, each N x K, one format) is one
 * descriptor with experts = E: expert e's data starts at data + e * expert_stride and its block scales
 * at block_scales + e * expert_scale_stride (either stride 0: packed, the size of one expert's);
 * channel_scales holds E x N floats (expert e's at e * N); tensor_scales holds E floats and replaces
 * tensor_scale for NVFP4 and FP8_TENSOR. The capacities count the whole stack. n and k are one
 * expert's. experts 0 reads as 1 (one weight; qmm_weight_init sets 1). A stack is multiplied by
 * qmm_matmul_grouped(); qmm_quantize, qmm_dequantize, qmm_weight_validate, qmm_weight_prepare and
 * qmm_weight_free take stacks too (rows of experts one after another). */
typedef struct qmm_weight {
    qmm_format format;
    qmm_scale_layout scale_layout;
    size_t n;                   /* rows: output features */
    size_t k;                   /* columns: input features, contiguous */
    uint8_t *data;
    size_t data_bytes;          /* capacity of data */
    uint8_t *block_scales;
    size_t block_scale_bytes;   /* capacity of block_scales */
    float *channel_scales;
    size_t channel_scale_count; /* capacity of channel_scales, in floats */
    float tensor_scale;
    qmm_prepared *prepared;     /* set by qmm_weight_prepare(); NULL otherwise */
    size_t experts;             /* E matrices stacked (above); 0 or 1 for one weight */
    size_t expert_stride;       /* bytes between experts' data; 0: packed */
    size_t expert_scale_stride; /* bytes between experts' block scales; 0: packed */
    float *tensor_scales;       /* experts > 1, NVFP4 and FP8_TENSOR: E tensor scales; NULL otherwise */
} qmm_weight;

/* Buffer sizes of an N x K weight in a format. */
typedef struct qmm_weight_size {
    size_t row_bytes;           /* bytes of one row of data: ceil(K/2) for E2M1, K for E4M3, 2K for BF16 */
    size_t data_bytes;          /* N * row_bytes */
    size_t scales_per_row;      /* ceil(K/B); 0 without block scales */
    size_t block_scale_bytes;   /* N * scales_per_row in the canonical layout (padded in others) */
    size_t channel_scale_count; /* N for FP8_CHANNEL, else 0 */
} qmm_weight_size;

/* Sizes of the buffers of an n x k weight of `format` whose block scales are in `layout`.
 * Errors: QMM_ERR_NULL_POINTER (out), QMM_ERR_INVALID_ENUM, QMM_ERR_INVALID_SIZE (n or k is 0),
 * QMM_ERR_SIZE_OVERFLOW (a size does not fit size_t). */
QMM_API qmm_status qmm_weight_size_query(qmm_format format, qmm_scale_layout layout, size_t n, size_t k,
                                         qmm_weight_size *out);

/* Sets *w to an empty descriptor for an n x k weight of `format`: canonical layout, no buffers,
 * tensor_scale 1. It only records the arguments; qmm_weight_size_query() checks them.
 * Errors: QMM_ERR_NULL_POINTER (w), QMM_ERR_INVALID_ENUM (format). */
QMM_API qmm_status qmm_weight_init(qmm_weight *w, qmm_format format, size_t n, size_t k);

/* Convenience: qmm_weight_init() plus malloc of each buffer at its queried size (canonical layout),
 * contents uninitialised. Free with qmm_weight_free(). The buffers are the caller's like any other.
 * Errors: those of qmm_weight_size_query(), QMM_ERR_OUT_OF_MEMORY (nothing stays allocated). */
QMM_API qmm_status qmm_weight_alloc(qmm_weight *w, qmm_format format, size_t n, size_t k);

/* A stack of `experts` weights of n x k each (see qmm_weight): qmm_weight_init() with experts set and
 * packed strides. Errors: QMM_ERR_NULL_POINTER, QMM_ERR_INVALID_ENUM, QMM_ERR_INVALID_SIZE (experts 0). */
QMM_API qmm_status qmm_weight_init_experts(qmm_weight *w, qmm_format format, size_t experts, size_t n, size_t k);

/* qmm_weight_init_experts() plus malloc of the stack's buffers, packed (tensor_scales too where the format
 * has them, set to 1). Free with qmm_weight_free(). Errors: those of qmm_weight_alloc(),
 * QMM_ERR_INVALID_SIZE (experts 0). */
QMM_API qmm_status qmm_weight_alloc_experts(qmm_weight *w, qmm_format format, size_t experts, size_t n, size_t k);

/* Frees the buffers of a weight made by qmm_weight_alloc() or qmm_weight_alloc_experts() (tensor_scales
 * included) and releases a prepared copy, then empties *w. NULL is allowed. Do not call it on buffers the
 * caller allocated itself. */
QMM_API void qmm_weight_free(qmm_weight *w);

/* Checks that *w is consistent: known format and layout, nonzero n and k, every buffer the format needs
 * present and at least its queried size (for a stack: strides of at least one expert's size, capacities
 * for all E), tensor and channel scales finite.
 * Errors: QMM_ERR_NULL_POINTER, QMM_ERR_INVALID_ENUM, QMM_ERR_INVALID_SIZE, QMM_ERR_SIZE_OVERFLOW,
 * QMM_ERR_BUFFER_TOO_SMALL, QMM_ERR_INVALID_WEIGHT (a required buffer is NULL, a scale not finite). */
QMM_API qmm_status qmm_weight_validate(const qmm_weight *w);

/* ------------------------------------------------------------------------------------------------
 * Tensor parallelism: a weight cut into parts exactly, codes and scales copied, never requantized
 * ---------------------------------------------------------------------------------------------- */

/* How a weight is cut. */
typedef enum qmm_shard_dim {
    QMM_SHARD_N = 0, /* along N, the rows of W: column-parallel (each part gives its own columns of C) */
    QMM_SHARD_K = 1  /* along K: row-parallel (each part gives a partial sum of every element of C) */
} qmm_shard_dim;

/* The shape of part `rank` of `parts` of the n x k weight of `format` cut along `dim`: parts must divide
 * the dimension cut, and a cut along K must fall on the format's block boundaries (every part a whole
 * number of 16- or 32-element blocks for NVFP4 and MXFP4; of bytes for the 4-bit formats). *n_out and
 * *k_out are one part's n and k (each part is the same size). Errors: QMM_ERR_NULL_POINTER,
 * QMM_ERR_INVALID_ENUM (format, dim), QMM_ERR_INVALID_SIZE (n, k or parts 0),
 * QMM_ERR_INVALID_ARGUMENT (rank >= parts, parts not dividing the dimension, a cut inside a block). */
QMM_API qmm_status qmm_weight_shard_shape(qmm_format format, size_t n, size_t k, qmm_shard_dim dim, size_t parts,
                                          size_t rank, size_t *n_out, size_t *k_out);

/* Copies part `rank` of `parts` of the validated canonical weight w (a stack: the same part of each
 * expert) into dst, which must be set up (qmm_weight_init / _alloc, or _init_experts / _alloc_experts for
 * a stack) with w's format and experts and the part's shape (qmm_weight_shard_shape). Element codes and
 * block scales are copied byte for byte, so every dequantized value of the part is the full weight's:
 * rows [rank * n / parts, ...) along N, columns [rank * k / parts, ...) along K. The tensor scale(s) go
 * with every part; FP8 channel scales go with their rows along N and whole along K. A K-parts matmul's
 * partial sums add up to the full product (in exact arithmetic; in fp32 within the summation bound).
 * Errors: those of qmm_weight_shard_shape() and qmm_weight_validate(), QMM_ERR_INVALID_WEIGHT (dst's
 * format, experts or shape), QMM_ERR_BUFFER_TOO_SMALL (dst's buffers), QMM_ERR_UNSUPPORTED (a non-canonical
 * layout). */
QMM_API qmm_status qmm_weight_shard(const qmm_weight *w, qmm_shard_dim dim, size_t parts, size_t rank, qmm_weight *dst);

/* ------------------------------------------------------------------------------------------------
 * Quantization
 * ---------------------------------------------------------------------------------------------- */
typedef enum qmm_recipe {
    QMM_RECIPE_DEFAULT = 0,        /* NVFP4: modelopt; MXFP4: floor; FP8: amax; BF16: round to nearest even */
    QMM_RECIPE_NVFP4_MODELOPT = 1, /* NVIDIA TensorRT Model Optimizer, weight path (docs/design.md) */
    QMM_RECIPE_MXFP4_FLOOR = 2,    /* OCP MX v1.0: e = floor(log2(amax)) - 2 */
    QMM_RECIPE_MXFP4_RCEIL = 3,    /* e = ceil(log2(amax / 6)) (NVIDIA, gpt-oss); elements still RNE */
    QMM_RECIPE_FP8_AMAX = 4        /* s = amax / 448 per tensor or per channel (from the format) */
} qmm_recipe;

/* The name of a recipe ("default", "modelopt", "floor", "rceil", "amax"), or NULL for an unknown value. */
QMM_API const char *qmm_recipe_name(qmm_recipe recipe);

/* Looks a recipe up by name. Errors: QMM_ERR_NULL_POINTER, QMM_ERR_NOT_FOUND. */
QMM_API qmm_status qmm_recipe_from_name(const char *name, qmm_recipe *out);

/* Quantizes the n x k matrix `src` (src_type FP32, BF16 or FP16; row r starts at element r * src_stride)
 * into *dst with `recipe`, bit-exactly as the recipe's producer does (docs/design.md):
 *   NVFP4 modelopt: s2 = amax / 2688; per 16-block sb = E4M3(clamp(amax_b / (6 * s2), 2^-9, 448)),
 *     1.0 for an all-zero block; q = E2M1(x / (sb * s2)) with the sign taken as q < 0 (so -0.0, and a
 *     negative x whose quotient underflows to -0.0, encode as +0, as modelopt's _cast_fp4 does). All
 *     arithmetic in fp32.
 *     Where amax / 2688 is 0 (an all-zero weight, or amax below 2688 * 2^-149), s2 = 1 is used.
 *   MXFP4 floor / rceil: per 32-block an E8M0 scale 2^e; q = E2M1(x * 2^-e); an all-zero block gets
 *     the smallest scale (code 0).
 *   FP8 amax: s = amax / 448 (per tensor, or per row for FP8_CHANNEL), q = E4M3(x / s); s = 1 where
 *     amax / 448 is 0 (an all-zero tensor or row).
 *   BF16: each value rounded to nearest even (exact from a bf16 source).
 * dst must have been set up by qmm_weight_init()/qmm_weight_alloc() with the same format, n and k, the
 * canonical layout and buffers at least their queried size. On success the buffers, tensor_scale and
 * (FP8_CHANNEL) channel_scales are written; every byte of data and block_scales up to the queried sizes
 * is written (padding nibbles 0). A recipe that does not belong to the format is an error.
 * Errors: QMM_ERR_NULL_POINTER, QMM_ERR_INVALID_ENUM, QMM_ERR_INVALID_SIZE, QMM_ERR_SIZE_OVERFLOW,
 * QMM_ERR_INVALID_STRIDE (src_stride < k), QMM_ERR_NON_FINITE (src holds NaN or infinity),
 * QMM_ERR_BUFFER_TOO_SMALL, QMM_ERR_INVALID_WEIGHT (dst does not match), QMM_ERR_UNSUPPORTED
 * (recipe not for this format, or a non-canonical layout). */
QMM_API qmm_status qmm_quantize(qmm_recipe recipe, qmm_dtype src_type, const void *src, size_t src_stride,
                                qmm_weight *dst);

/* Flags of qmm_dequantize(). */
#define QMM_DEQUANT_UNSCALED 1u /* leave out the tensor / channel scale: element * block scale only */

/* Writes the n x k weight as dst_type (FP32 or BF16) into dst, row r at element r * dst_stride.
 * Each value is the exact product element * block_scale * (tensor or channel scale) rounded once to
 * dst_type. With QMM_DEQUANT_UNSCALED the tensor / channel scale is left out; those values are exact
 * in both types whenever they lie in the types' range, which NVFP4, FP8 and BF16 values always do and
 * MXFP4 values do unless element * 2^e passes 2^128 (possible only for block scales near 2^127, e.g. an
 * rceil scale of 2^126 with an element of 4 or 6): such values become infinities, in every backend.
 * Every path of every backend multiplies exactly these bf16 values.
 * Errors: QMM_ERR_NULL_POINTER, QMM_ERR_INVALID_ENUM, QMM_ERR_INVALID_STRIDE, QMM_ERR_INVALID_ARGUMENT
 * (unknown flag), QMM_ERR_UNSUPPORTED (dst_type, or a non-canonical layout), and those of
 * qmm_weight_validate(). */
QMM_API qmm_status qmm_dequantize(const qmm_weight *w, unsigned flags, qmm_dtype dst_type, void *dst,
                                  size_t dst_stride);

/* ------------------------------------------------------------------------------------------------
 * Context and backends
 * ---------------------------------------------------------------------------------------------- */
typedef enum qmm_backend {
    QMM_BACKEND_AUTO = 0,      /* the best present: CUDA, then CPU, then the reference */
    QMM_BACKEND_REFERENCE = 1, /* scalar C, fp64 accumulation: the oracle */
    QMM_BACKEND_CPU = 2,       /* x86 SIMD kernels with threads */
    QMM_BACKEND_CUDA = 3       /* NVIDIA GPUs */
} qmm_backend;

/* The name of a backend ("auto", "reference", "cpu", "cuda"), or NULL for an unknown value. */
QMM_API const char *qmm_backend_name(qmm_backend backend);

/* Looks a backend up by name ("ref" is accepted for "reference"). Errors: QMM_ERR_NULL_POINTER,
 * QMM_ERR_NOT_FOUND. */
QMM_API qmm_status qmm_backend_from_name(const char *name, qmm_backend *out);

/* QMM_OK when `backend` can create a context here (built in and, for CUDA, a device is present),
 * QMM_ERR_BACKEND_UNAVAILABLE when not, QMM_ERR_INVALID_ENUM for an unknown value. AUTO is always
 * available. */
QMM_API qmm_status qmm_backend_available(qmm_backend backend);

/* The kernels a backend may run for one call. AUTO lets the dispatcher choose by (M, N, K). */
typedef enum qmm_path {
    QMM_PATH_AUTO = 0,
    QMM_PATH_REFERENCE = 1,   /* the reference backend's only path */
    QMM_PATH_GEMV = 2,        /* one pass over the weights, no matrix units: small M */
    QMM_PATH_FUSED = 3,       /* tiled kernel that dequantizes in registers: small and mid M */
    QMM_PATH_MATERIALIZE = 4  /* dequantize to bf16, then a dense GEMM: large M */
} qmm_path;

/* The name of a path ("auto", "reference", "gemv", "fused", "materialize"), or NULL. */
QMM_API const char *qmm_path_name(qmm_path path);

/* Looks a path up by name. Errors: QMM_ERR_NULL_POINTER, QMM_ERR_NOT_FOUND. */
QMM_API qmm_status qmm_path_from_name(const char *name, qmm_path *out);

typedef struct qmm_context_options {
    qmm_backend backend;    /* default QMM_BACKEND_AUTO */
    int num_threads;        /* CPU backend: worker threads; 0 (default) = online cores */
    int cuda_device;        /* CUDA backend: device ordinal; default 0. The context's calls make it the
                               calling thread's current CUDA device and leave it so */
    void *cuda_stream;      /* CUDA backend: the cudaStream_t to run on; NULL (default) = the context
                               makes its own non-blocking stream */
    size_t workspace_bytes; /* CUDA backend: workspace allocated with the context; 0 (default) = the
                               backend's default (see qmm_workspace_query) */
    qmm_path path;          /* force one path for every call; default QMM_PATH_AUTO */
} qmm_context_options;

typedef struct qmm_context qmm_context;

/* Sets *opts to the defaults above. NULL is allowed (does nothing). */
QMM_API void qmm_context_options_init(qmm_context_options *opts);

/* Creates a context: the backend with its threads, stream and workspace, allocated here once so that
 * matmul calls allocate nothing. opts may be NULL (defaults). The context is not thread-safe: use one
 * per thread (weights prepared on a context belong to that context's backend).
 * CPU backend: the environment variable QMM_ISA = ref | generic | avx2 | avx512 forces an instruction
 * set ("ref" and "generic" are the portable C kernels); unset or empty picks the best one the processor
 * and OS support. Its paths are QMM_PATH_GEMV and QMM_PATH_MATERIALIZE.
 * Errors: QMM_ERR_NULL_POINTER (out), QMM_ERR_INVALID_ENUM (backend, path), QMM_ERR_INVALID_ARGUMENT
 * (negative num_threads, more than 1024 CPU threads, a QMM_ISA value not listed above),
 * QMM_ERR_BACKEND_UNAVAILABLE, QMM_ERR_UNSUPPORTED (path not offered by the backend, or QMM_ISA names an
 * instruction set this processor, OS or build lacks), QMM_ERR_OUT_OF_MEMORY (also: a worker thread could
 * not be created), QMM_ERR_CUDA. */
QMM_API qmm_status qmm_context_create(const qmm_context_options *opts, qmm_context **out);

/* Destroys a context and everything it allocated. NULL is allowed. Weights prepared on it must be
 * released (qmm_weight_unprepare) first. */
QMM_API void qmm_context_destroy(qmm_context *ctx);

/* The backend a context runs (never AUTO). Errors: QMM_ERR_NULL_POINTER. */
QMM_API qmm_status qmm_context_get_backend(const qmm_context *ctx, qmm_backend *out);

/* Forces `path` for the following calls on ctx (QMM_PATH_AUTO restores the dispatcher).
 * Errors: QMM_ERR_NULL_POINTER, QMM_ERR_INVALID_ENUM, QMM_ERR_UNSUPPORTED (the backend has no such path). */
QMM_API qmm_status qmm_context_set_path(qmm_context *ctx, qmm_path path);

/* CUDA backend: later calls on ctx run on `stream` (a cudaStream_t; NULL: the context's own stream, made
 * now where the context was created on a caller's), so that a framework runs qmm on its current stream
 * without a context per stream. The new stream is ordered after every call already queued on the old one
 * (an event, no host synchronisation; capturable into a CUDA graph), because every call of a context uses
 * its one workspace: calls on two streams never overlap through one context. The caller keeps its stream
 * alive while the context runs on it (set another, or destroy the context, first). Like every use of a
 * context, from one thread at a time. Errors: QMM_ERR_NULL_POINTER, QMM_ERR_UNSUPPORTED (host backends:
 * no stream), QMM_ERR_CUDA. */
QMM_API qmm_status qmm_context_set_stream(qmm_context *ctx, void *stream);

/* A one-line description of what the context runs on ("reference (scalar C, fp64 accumulation)",
 * "cpu avx512 (2 threads)", "cuda NVIDIA H200 (sm_90, 132 SMs)"). Static to the context; never NULL. */
QMM_API const char *qmm_context_describe(const qmm_context *ctx);

/* Makes the backend's own copy of the validated, canonical weight *w and records it in w->prepared:
 * the CUDA backend uploads it to device memory in the order its kernels read (see docs/cuda.md);
 * the CPU backend repacks it into tiles of 16 rows (src/cpu/README.md; about the size of the weight)
 * and its GEMV path needs that copy: on the CPU an unprepared weight still works, through a slower path
 * that builds panels from the canonical buffers. A copy made on one CPU context serves every CPU
 * context. Backends that read the canonical host buffers directly (the reference) leave w->prepared
 * NULL and return QMM_OK.
 * Preparing an already prepared weight replaces the old copy. After a CUDA prepare the host buffers
 * are no longer read and may be freed; the descriptor's format, n and k must stay as they are.
 * Copies of the struct share the prepared copy: release it once, with qmm_weight_unprepare().
 * Errors: QMM_ERR_NULL_POINTER, QMM_ERR_UNSUPPORTED (non-canonical layout), QMM_ERR_OUT_OF_MEMORY,
 * QMM_ERR_CUDA, and those of qmm_weight_validate(). */
QMM_API qmm_status qmm_weight_prepare(qmm_context *ctx, qmm_weight *w);

/* Releases w->prepared (if any) and sets it to NULL. NULL w is allowed. Call it before destroying the
 * context the weight was prepared on. */
QMM_API void qmm_weight_unprepare(qmm_weight *w);

/* Bytes of workspace one call with m rows of A against an n x k weight of `format` uses on `backend`,
 * so that a context created with qmm_context_options.workspace_bytes of at least this many runs such
 * calls in one piece. A smaller workspace makes the CUDA materialize path dequantize the weight in
 * chunks of rows (slower for large M), or fail with QMM_ERR_WORKSPACE_TOO_SMALL when not even 16 rows
 * fit. Host backends need none (0). The CUDA default, 256 MiB, runs every call with m * k * 4 +
 * m * n * 4 below about 200 MiB, dequantizing weights of more than about 100 M elements in chunks.
 * Errors: QMM_ERR_NULL_POINTER, QMM_ERR_INVALID_ENUM, QMM_ERR_INVALID_SIZE (a size is 0). */
QMM_API qmm_status qmm_workspace_query(qmm_backend backend, size_t m, qmm_format format, size_t n, size_t k, size_t *bytes);

/* ------------------------------------------------------------------------------------------------
 * Buffers: memory a context's backend reads A, C, bias and column scales from. Device memory on the
 * CUDA backend, 64-byte aligned host memory on the others, so one program can drive any backend.
 * ---------------------------------------------------------------------------------------------- */

/* Allocates `bytes` (> 0) of the context's memory into *out (contents undefined).
 * Errors: QMM_ERR_NULL_POINTER, QMM_ERR_INVALID_SIZE (bytes is 0), QMM_ERR_OUT_OF_MEMORY, QMM_ERR_CUDA. */
QMM_API qmm_status qmm_buffer_alloc(qmm_context *ctx, size_t bytes, void **out);

/* Frees memory from qmm_buffer_alloc() on the same context. NULL ptr is allowed. */
QMM_API void qmm_buffer_free(qmm_context *ctx, void *ptr);

/* Copies `bytes` from host memory `src` into the context buffer `dst`, complete on return.
 * Errors: QMM_ERR_NULL_POINTER, QMM_ERR_CUDA. */
QMM_API qmm_status qmm_buffer_write(qmm_context *ctx, void *dst, const void *src, size_t bytes);

/* Waits for the work queued on ctx, then copies `bytes` from the context buffer `src` to host `dst`.
 * Errors: QMM_ERR_NULL_POINTER, QMM_ERR_CUDA. */
QMM_API qmm_status qmm_buffer_read(qmm_context *ctx, void *dst, const void *src, size_t bytes);

/* Waits until every call queued on ctx has finished (a no-op on host backends).
 * Errors: QMM_ERR_NULL_POINTER, QMM_ERR_CUDA (including a failure of an earlier asynchronous call). */
QMM_API qmm_status qmm_context_synchronize(qmm_context *ctx);

/* ------------------------------------------------------------------------------------------------
 * Matrix multiplication
 * ---------------------------------------------------------------------------------------------- */
typedef enum qmm_activation {
    QMM_ACT_NONE = 0,
    QMM_ACT_RELU = 1,      /* max(x, 0) */
    QMM_ACT_SILU = 2,      /* x / (1 + exp(-x)) */
    QMM_ACT_GELU = 3,      /* tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as cuBLASLt */
    QMM_ACT_GELU_ERF = 4   /* exact form: 0.5 x (1 + erf(x / sqrt(2))) */
} qmm_activation;

/* The epilogue, in cuBLASLt's convention, applied per element of C after the sum over K:
 *
 *   C[m,n] = act( alpha * column_scale[n] * acc[m,n] + beta * C_in[m,n] + bias[n] )
 *   acc[m,n] = sum_k A[m,k] * W[n,k]      (W the real weight, tensor / channel scale included)
 *
 * column_scale and bias are optional (NULL: 1 and 0); C_in is read only when beta != 0, so a C
 * holding NaNs is fine with beta = 0. A NULL epilogue pointer means alpha 1, beta 0, nothing else. */
typedef struct qmm_epilogue {
    float alpha;                /* default 1 */
    float beta;                 /* default 0 */
    const float *bias;          /* N floats, or NULL */
    const float *column_scale;  /* N floats, or NULL (e.g. per-channel scales applied from outside) */
    qmm_activation activation;  /* default QMM_ACT_NONE */
} qmm_epilogue;

/* Sets *epi to the identity epilogue (alpha 1, beta 0, no bias, no column scale, no activation). */
QMM_API void qmm_epilogue_init(qmm_epilogue *epi);

/* C = epilogue(A @ W^T) for the m x k matrix A and the n x k weight w (see qmm_epilogue).
 *   a: a_type FP32, BF16 or FP16 (FP32 on CPU backends only); row i at element i * lda, lda >= k.
 *   c: c_type FP32, BF16 or FP16; row i at element i * ldc, ldc >= n; written in full, read when
 *      beta != 0. c must not overlap a.
 * On the CPU backend with AVX512-BF16 and bf16 A, the hardware's bf16 dot product treats subnormal bf16
 * values (|x| < 2^-126) in A and in the dequantized weights as zero; every other combination is IEEE.
 * Apart from that, CPU results differ from the reference only by fp32 summation order, and on a given
 * path they are batch invariant (a row of C does not depend on the other rows of A) and the same bit
 * for bit whatever the number of threads.
 * On the CUDA backend a, c, bias and column_scale are device pointers and w must be prepared
 * (qmm_weight_prepare); the call is asynchronous on the context's stream. On sm_90 and later a qmm
 * kernel may start its prepared-weight reads while the kernel before it on the stream is still running
 * (programmatic dependent launch; it reads a, c and the workspace only after that kernel is done), so
 * a kernel of yours that triggers its dependents early (griddepcontrol.launch_dependents) must not
 * write w's device buffers after its trigger.
 * Errors: QMM_ERR_NULL_POINTER (ctx, a, w, c), QMM_ERR_INVALID_SIZE (m is 0), QMM_ERR_INVALID_STRIDE,
 * QMM_ERR_INVALID_ENUM (a_type, c_type, activation), QMM_ERR_NON_FINITE (alpha or beta),
 * QMM_ERR_UNSUPPORTED (a type or path the backend lacks, a non-canonical scale layout),
 * QMM_ERR_NOT_PREPARED, QMM_ERR_WORKSPACE_TOO_SMALL, QMM_ERR_CUDA, QMM_ERR_CUBLAS, QMM_ERR_OUT_OF_MEMORY
 * (CPU: its scratch for packed or converted A grows to the largest call), QMM_ERR_INVALID_WEIGHT (also:
 * the descriptor's format, n or k changed since qmm_weight_prepare), QMM_ERR_INVALID_ARGUMENT (w is a stack
 * of experts: qmm_matmul_grouped), and those of qmm_weight_validate(). */
QMM_API qmm_status qmm_matmul(qmm_context *ctx, size_t m, qmm_dtype a_type, const void *a, size_t lda,
                              const qmm_weight *w, qmm_dtype c_type, void *c, size_t ldc,
                              const qmm_epilogue *epi);

/* The path qmm_matmul() would run on ctx for m rows of A of type a_type and the weight w (after any
 * forced path). The activation type matters where a backend's kernels for it differ (CUDA: fp16
 * activations whose weights have no fp16 decode run the fused path without wgmma, so its table keeps
 * them to smaller M).
 * Errors: QMM_ERR_NULL_POINTER, QMM_ERR_INVALID_SIZE (m is 0), QMM_ERR_INVALID_ENUM (a_type),
 * QMM_ERR_UNSUPPORTED (fp32 activations on a backend that takes none), and those of
 * qmm_weight_validate(); *out is written only on success. */
QMM_API qmm_status qmm_matmul_plan(const qmm_context *ctx, size_t m, qmm_dtype a_type, const qmm_weight *w,
                                   qmm_path *out);
/* Writes to buf (cap bytes, truncated, NUL-terminated) one line on what qmm_matmul() would run on ctx for
 * m rows of A of type a_type and the weight w: its path and, where the backend says more, why and what it
 * launches (CUDA: the rule that chose the path, then each kernel with its grid, shared memory and division
 * of K, for rows of A that are 16-byte aligned; the format is docs/cuda.md's, for people, not parsers).
 * May set up the backend's kernels for that weight, as the first such qmm_matmul() would.
 * Errors: those of qmm_matmul_plan(), QMM_ERR_NULL_POINTER (buf), QMM_ERR_INVALID_SIZE (cap is 0). */
QMM_API qmm_status qmm_matmul_explain(qmm_context *ctx, size_t m, qmm_dtype a_type, const qmm_weight *w, char *buf,
                                      size_t cap);

/* ------------------------------------------------------------------------------------------------
 * Mixture of experts: one call over a stack of expert weights, rows grouped by expert
 * ---------------------------------------------------------------------------------------------- */

/* The epilogue of qmm_matmul_grouped(): for output row i of expert e,
 *   C[i,n] = row_scale[i] * act( alpha * acc[i,n] + beta * C_in[i,n] + bias[e * N + n] )
 * bias (E x N floats) and row_scale (m floats: the routing weight of each row) are optional (NULL: 0 and
 * 1); the rest is qmm_epilogue's. */
typedef struct qmm_grouped_epilogue {
    float alpha;                /* default 1 */
    float beta;                 /* default 0 */
    const float *bias;          /* E x N floats, expert e's at e * N; or NULL */
    const float *row_scale;     /* m floats, one per output row; or NULL */
    qmm_activation activation;  /* default QMM_ACT_NONE */
} qmm_grouped_epilogue;

/* Sets *epi to the identity (alpha 1, beta 0, no bias, no row scale, no activation). NULL is allowed. */
QMM_API void qmm_grouped_epilogue_init(qmm_grouped_epilogue *epi);

/* C = epilogue(A_e @ W_e^T) for each expert e of the stack w (E = w->experts), its rows grouped:
 *   group_offsets  E + 1 row indices of C: 0 = group_offsets[0] <= group_offsets[1] <= ... <=
 *                  group_offsets[E] = m; expert e's output rows are [group_offsets[e], group_offsets[e+1])
 *                  (empty groups are allowed, and so is m = 0, which does nothing)
 *   row_index      m entries or NULL: output row i reads row row_index[i] of A (0 <= row_index[i] < a_rows),
 *                  the gather of a routing step, so A need not be permuted; NULL: row i reads row i
 *                  (a_rows >= m)
 *   a              a_rows rows of a_type at stride lda (as in qmm_matmul)
 *   c              m rows of c_type at stride ldc, in the grouped order
 * The output types, epilogue rules and argument errors are qmm_matmul's. With E = 1, no row_index and
 * no row_scale the result is qmm_matmul's bit for bit. The path of each expert (GEMV or GEMM on the CPU)
 * is chosen by its row count as qmm_matmul chooses it by M (or forced with qmm_context_set_path), and a
 * row's result does not depend on the other rows of its expert within a path. The CPU backend runs the
 * experts of few rows in one parallel schedule over (expert, tile of 16 rows of W) pairs, so every
 * thread works when most experts hold one or two rows; prepare the stack (qmm_weight_prepare) for that.
 * The CUDA backend returns QMM_ERR_UNSUPPORTED.
 * Errors: those of qmm_matmul(), QMM_ERR_INVALID_ARGUMENT (offsets not ascending from 0 to m, a row index
 * out of range, a_rows < m without row_index, C overlapping A), QMM_ERR_UNSUPPORTED. */
QMM_API qmm_status qmm_matmul_grouped(qmm_context *ctx, size_t m, const size_t *group_offsets, const int32_t *row_index,
                                      size_t a_rows, qmm_dtype a_type, const void *a, size_t lda, const qmm_weight *w,
                                      qmm_dtype c_type, void *c, size_t ldc, const qmm_grouped_epilogue *epi);

/* ------------------------------------------------------------------------------------------------
 * Block-scale layouts: the canonical one of qmm_weight, and those of other libraries' kernels.
 * ---------------------------------------------------------------------------------------------- */

/* Copies the block scales of an n x k weight of `format` from one layout to another (docs/design.md):
 *   CANONICAL   (N, ceil(K/B)) row-major.
 *   NV_BLOCKED  rows padded to 128, scale columns C padded to 4, scale (r, c) at
 *               ((r/128)*ceil(C/4) + c/4)*512 + (r%32)*16 + ((r%128)/32)*4 + (c%4).
 *   AMD_MFMA    MXFP4 only: rows padded to 32, scale columns padded to KS (a multiple of 8), scale
 *               (mn, ks) at (mn/32)*(32*KS) + (ks/8)*256 + (ks%4)*64 + (mn%16)*4 + ((ks/4)%2)*2 + (mn/16)%2.
 * The sizes are those of qmm_weight_size_query(format, layout, n, k).block_scale_bytes; src_bytes and
 * dst_bytes are the capacities. Every byte of dst up to its size is written: the padding with zeros.
 * The padding of src is not read. src and dst must not overlap.
 * Errors: QMM_ERR_NULL_POINTER, QMM_ERR_INVALID_ENUM, QMM_ERR_INVALID_SIZE, QMM_ERR_SIZE_OVERFLOW,
 * QMM_ERR_UNSUPPORTED (a format without block scales, AMD_MFMA for NVFP4), QMM_ERR_BUFFER_TOO_SMALL,
 * QMM_ERR_INVALID_ARGUMENT (src and dst overlap). */
QMM_API qmm_status qmm_scales_convert(qmm_format format, size_t n, size_t k, qmm_scale_layout src_layout,
                                      const uint8_t *src, size_t src_bytes, qmm_scale_layout dst_layout,
                                      uint8_t *dst, size_t dst_bytes);

#ifdef __cplusplus
}
#endif

#endif /* QMM_H */
