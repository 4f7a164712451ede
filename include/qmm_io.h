/*
 * qmm_io: safetensors files and the conventions of quantized checkpoints (modelopt NVFP4 and FP8, dense
 * MXFP4, gpt-oss MXFP4 experts, sharding through an index), and whole checkpoints quantized.
 *
 * The conventions of qmm.h hold here too (a status from every function that can fail, nothing written
 * on failure, qmm_last_error() says why, nothing aborts or prints). Files are written atomically (a
 * temporary beside the target, then a rename), so a failure leaves no partial output.
 */
#ifndef QMM_IO_H
#define QMM_IO_H

#include "qmm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The element types of the safetensors format (every one it defines; values are qmm's own). */
typedef enum qmm_st_dtype {
    QMM_ST_BOOL = 1,
    QMM_ST_U8 = 2,
    QMM_ST_I8 = 3,
    QMM_ST_U16 = 4,
    QMM_ST_I16 = 5,
    QMM_ST_U32 = 6,
    QMM_ST_I32 = 7,
    QMM_ST_U64 = 8,
    QMM_ST_I64 = 9,
    QMM_ST_F16 = 10,
    QMM_ST_BF16 = 11,
    QMM_ST_F32 = 12,
    QMM_ST_F64 = 13,
    QMM_ST_C64 = 14,         /* complex: two F32 */
    QMM_ST_F8_E5M2 = 15,
    QMM_ST_F8_E4M3 = 16,     /* E4M3 "fn" (torch.float8_e4m3fn) */
    QMM_ST_F8_E8M0 = 17,
    QMM_ST_F8_E4M3FNUZ = 18,
    QMM_ST_F8_E5M2FNUZ = 19,
    QMM_ST_F4 = 20,          /* E2M1, two per byte */
    QMM_ST_F6_E2M3 = 21,     /* 6-bit types, packed: a tensor's bits must fill whole bytes */
    QMM_ST_F6_E3M2 = 22
} qmm_st_dtype;

/* The format's name of a dtype ("BF16", "F8_E4M3", ...), or NULL for an unknown value. */
QMM_API const char *qmm_st_dtype_name(qmm_st_dtype dtype);

/* Bits of one element (4, 6, 8, 16, 32 or 64), or 0 for an unknown value. */
QMM_API int qmm_st_dtype_bits(qmm_st_dtype dtype);

/* Looks a dtype up by the format's name (case-sensitive). Errors: QMM_ERR_NULL_POINTER, QMM_ERR_NOT_FOUND. */
QMM_API qmm_status qmm_st_dtype_from_name(const char *name, qmm_st_dtype *out);

/* An open checkpoint: one safetensors file, or every shard named by a model.safetensors.index.json. */
typedef struct qmm_safetensors qmm_safetensors;

/* One tensor of an open checkpoint. Every pointer points into the checkpoint (its memory map) and stays
 * valid until qmm_safetensors_close(); the data is read-only and not aligned beyond the byte. */
typedef struct qmm_tensor_view {
    const char *name;     /* UTF-8, NUL-terminated (names holding U+0000 are rejected) */
    qmm_st_dtype dtype;
    size_t ndim;          /* 0 for a scalar */
    const size_t *shape;  /* ndim extents */
    size_t elements;      /* product of the extents (1 for a scalar) */
    const void *data;     /* the tensor's bytes (not NULL, also when bytes is 0) */
    size_t bytes;         /* elements * bits / 8 */
    size_t shard;         /* index of the file that holds it (0 for a single file) */
} qmm_tensor_view;

/* The largest safetensors header accepted (the format's reference reader's limit). */
#define QMM_SAFETENSORS_MAX_HEADER 100000000u

/* Opens `path` read-only and memory-maps it: a .safetensors file, a model.safetensors.index.json (every
 * shard it names, resolved in its folder), or a folder holding either (the index is preferred). The
 * whole header is checked before anything is returned: 8-byte little-endian length no larger than
 * QMM_SAFETENSORS_MAX_HEADER and within the file; a JSON object (nesting at most 64 deep, valid UTF-8)
 * starting with '{' and padded with whitespace only; unique names; every entry a dtype of the format, a
 * shape of non-negative integers and data_offsets [begin, end] with begin <= end and end - begin the
 * shape's size; the entries' ranges tile the data area exactly (no gap, no overlap, nothing left over);
 * "__metadata__" an object of strings. An index must be {"weight_map": {name: file}} (plus anything
 * else), file names without '/' or "..", each shard valid, each tensor in exactly the shard it is mapped
 * to, no tensor in two shards. Tensor views are zero-copy. Close with qmm_safetensors_close().
 * Errors: QMM_ERR_NULL_POINTER, QMM_ERR_NOT_FOUND (no such file, or a folder without a checkpoint),
 * QMM_ERR_IO (open, stat, mmap or read failed), QMM_ERR_MALFORMED (anything above, with the reason and
 * the byte offset in qmm_last_error()), QMM_ERR_OUT_OF_MEMORY. */
QMM_API qmm_status qmm_safetensors_open(const char *path, qmm_safetensors **out);

/* Like qmm_safetensors_open() for the `size` bytes of a safetensors file in memory. The bytes are
 * copied: the caller's buffer is not used after the call. Errors: those of qmm_safetensors_open()
 * except QMM_ERR_NOT_FOUND and QMM_ERR_IO. */
QMM_API qmm_status qmm_safetensors_open_memory(const void *bytes, size_t size, qmm_safetensors **out);

/* Unmaps and frees everything of f; every view of it becomes invalid. NULL is allowed. */
QMM_API void qmm_safetensors_close(qmm_safetensors *f);

/* Number of tensors, in all shards (0 for NULL). */
QMM_API size_t qmm_safetensors_tensor_count(const qmm_safetensors *f);

/* The index-th tensor, in file order: by shard, then by position in the file.
 * Errors: QMM_ERR_NULL_POINTER, QMM_ERR_INVALID_ARGUMENT (index >= count). */
QMM_API qmm_status qmm_safetensors_tensor_at(const qmm_safetensors *f, size_t index, qmm_tensor_view *out);

/* The tensor called `name`. Errors: QMM_ERR_NULL_POINTER, QMM_ERR_NOT_FOUND. */
QMM_API qmm_status qmm_safetensors_tensor_find(const qmm_safetensors *f, const char *name, qmm_tensor_view *out);

/* Number of files (1 for a single file, 0 for NULL). */
QMM_API size_t qmm_safetensors_shard_count(const qmm_safetensors *f);

/* The file name of a shard as the index names it (the file's own name, without folders, for a single
 * file; "" for memory). NULL when f is NULL or shard is out of range. Valid until close. */
QMM_API const char *qmm_safetensors_shard_name(const qmm_safetensors *f, size_t shard);

/* Number of "__metadata__" entries of a shard (0 when it has none, for NULL or out of range). */
QMM_API size_t qmm_safetensors_metadata_count(const qmm_safetensors *f, size_t shard);

/* The index-th "__metadata__" entry of a shard (in the header's order); strings valid until close.
 * Errors: QMM_ERR_NULL_POINTER, QMM_ERR_INVALID_ARGUMENT (shard or index out of range). */
QMM_API qmm_status qmm_safetensors_metadata_at(const qmm_safetensors *f, size_t shard, size_t index,
                                               const char **key, const char **value);

/* The value of metadata `key` in the first shard that has it. Errors: QMM_ERR_NULL_POINTER,
 * QMM_ERR_NOT_FOUND. */
QMM_API qmm_status qmm_safetensors_metadata_find(const qmm_safetensors *f, const char *key, const char **value);

/* A safetensors file being written. Tensors are added one by one (their bytes go to a temporary file
 * beside the target, so memory stays bounded); finish writes the header and renames into place. */
typedef struct qmm_safetensors_writer qmm_safetensors_writer;

/* Flag of the functions that write files: replace an existing file instead of failing. */
#define QMM_WRITE_OVERWRITE 1u

/* Starts writing the safetensors file `path`. Without QMM_WRITE_OVERWRITE an existing path is an error
 * (checked now and again when finishing). Errors: QMM_ERR_NULL_POINTER, QMM_ERR_INVALID_ARGUMENT
 * (unknown flag), QMM_ERR_EXISTS, QMM_ERR_IO (the temporary file cannot be created), QMM_ERR_OUT_OF_MEMORY. */
QMM_API qmm_status qmm_safetensors_writer_create(const char *path, unsigned flags, qmm_safetensors_writer **out);

/* Adds "__metadata__" entry key: value (both UTF-8 strings, copied; a key may be set once).
 * Errors: QMM_ERR_NULL_POINTER, QMM_ERR_INVALID_ARGUMENT (a key set twice, invalid UTF-8),
 * QMM_ERR_OUT_OF_MEMORY. */
QMM_API qmm_status qmm_safetensors_writer_set_metadata(qmm_safetensors_writer *w, const char *key, const char *value);

/* Adds tensor `name` (UTF-8, not "__metadata__", unique in the file): ndim extents (shape may be NULL
 * when ndim is 0), and `bytes` bytes of data, which must be exactly elements * bits / 8 of dtype. The
 * bytes are copied before the call returns; data may be NULL when bytes is 0. Tensors are stored in the
 * order they are added, without gaps; the header is padded with spaces to a multiple of 8 bytes.
 * Errors: QMM_ERR_NULL_POINTER, QMM_ERR_INVALID_ENUM (dtype), QMM_ERR_INVALID_ARGUMENT (name empty,
 * reserved, repeated or not UTF-8; bytes not matching the shape; bits not filling whole bytes),
 * QMM_ERR_SIZE_OVERFLOW, QMM_ERR_IO, QMM_ERR_OUT_OF_MEMORY. */
QMM_API qmm_status qmm_safetensors_writer_add(qmm_safetensors_writer *w, const char *name, qmm_st_dtype dtype,
                                              size_t ndim, const size_t *shape, const void *data, size_t bytes);

/* Adds the validated, canonical-layout weight *q as the tensors of the Linear module `name` (the
 * tensor names are name + suffix):
 *   NVFP4 (modelopt)  .weight U8 (N, ceil(K/2)), .weight_scale F8_E4M3 (N, ceil(K/16)),
 *                     .weight_scale_2 F32 scalar (the tensor scale)
 *   MXFP4             .weight U8 (N, ceil(K/2)), .weight_scale U8 (N, ceil(K/32)) holding E8M0 codes
 *   FP8_TENSOR        .weight F8_E4M3 (N, K), .weight_scale F32 scalar
 *   FP8_CHANNEL       .weight F8_E4M3 (N, K), .weight_scale F32 (N, 1)
 *   BF16              .weight BF16 (N, K)
 * Errors: those of qmm_safetensors_writer_add() and qmm_weight_validate(), QMM_ERR_UNSUPPORTED (a
 * non-canonical scale layout). */
QMM_API qmm_status qmm_safetensors_writer_add_weight(qmm_safetensors_writer *w, const char *name, const qmm_weight *q);

/* Adds `count` MXFP4 weights of one shape (the experts of a mixture-of-experts layer) in the gpt-oss
 * convention: name + "_blocks" U8 (count, N, K/32, 16) and name + "_scales" U8 (count, N, K/32).
 * Errors: those of qmm_safetensors_writer_add_weight(), QMM_ERR_INVALID_SIZE (count is 0),
 * QMM_ERR_INVALID_WEIGHT (not all MXFP4 of one shape), QMM_ERR_UNSUPPORTED (K not a multiple of 32). */
QMM_API qmm_status qmm_safetensors_writer_add_experts(qmm_safetensors_writer *w, const char *name,
                                                      const qmm_weight *experts, size_t count);

/* Writes the header and the tensors to `path` (replacing it only with QMM_WRITE_OVERWRITE) and frees w,
 * whether it succeeds or not; on failure nothing is left at path (an existing file is kept as it was)
 * and no temporary file remains. Errors: QMM_ERR_NULL_POINTER, QMM_ERR_EXISTS, QMM_ERR_IO,
 * QMM_ERR_OUT_OF_MEMORY. */
QMM_API qmm_status qmm_safetensors_writer_finish(qmm_safetensors_writer *w);

/* Frees w and removes its temporary file without writing anything. NULL is allowed. */
QMM_API void qmm_safetensors_writer_discard(qmm_safetensors_writer *w);

/* Writes a model.safetensors.index.json at `path`: {"metadata": {"total_size": total_size},
 * "weight_map": {tensor_names[i]: shard_names[i], ...}} with the names sorted.
 * Errors: QMM_ERR_NULL_POINTER, QMM_ERR_INVALID_ARGUMENT (unknown flag, a name repeated or not UTF-8, a
 * shard name with '/' or ".."), QMM_ERR_EXISTS, QMM_ERR_IO, QMM_ERR_OUT_OF_MEMORY. */
QMM_API qmm_status qmm_safetensors_index_write(const char *path, const char *const *tensor_names,
                                               const char *const *shard_names, size_t count,
                                               uint64_t total_size, unsigned flags);

/* A quantized weight found in a checkpoint by qmm_checkpoint_weight_info(). */
typedef struct qmm_checkpoint_weight {
    qmm_format format;
    size_t n, k;          /* each matrix is n x k; k is twice the packed columns for 4-bit elements */
    size_t count;         /* matrices: 1 for a Linear, the experts for gpt-oss *_blocks */
    int has_input_scale;  /* modelopt: an .input_scale (the activation scale) is present */
    float input_scale;    /* its value (0 when absent); it cancels for bf16 activations */
} qmm_checkpoint_weight;

/* Recognises the quantized weight of module `name` in f, from the tensors present:
 *   name.weight U8 + .weight_scale F8_E4M3 + .weight_scale_2 F32 scalar or [1]   NVFP4 (modelopt)
 *   name.weight U8 + .weight_scale U8 or F8_E8M0                                   MXFP4 (dense)
 *   name.weight F8_E4M3 + .weight_scale F32 (N, 1), or (N) with N > 1                FP8_CHANNEL
 *   name.weight F8_E4M3 + .weight_scale F32 scalar or [1]                           FP8_TENSOR
 *   name.weight BF16 (N, K)                                                         BF16
 *   name_blocks U8 (..., N, K/32, 16) + name_scales U8 (..., N, K/32)               MXFP4 (gpt-oss)
 * and checks that every shape agrees. Errors: QMM_ERR_NULL_POINTER, QMM_ERR_NOT_FOUND (no such module),
 * QMM_ERR_UNSUPPORTED (a weight of another dtype, e.g. F32), QMM_ERR_MALFORMED (shapes or dtypes that
 * do not agree, a scale that is not finite). */
QMM_API qmm_status qmm_checkpoint_weight_info(const qmm_safetensors *f, const char *name, qmm_checkpoint_weight *out);

/* Loads matrix `index` (< count; 0 for a Linear) of module `name` into a new weight allocated as by
 * qmm_weight_alloc() (canonical layout, free with qmm_weight_free()): the bytes are copied exactly, so a
 * weight written with qmm_safetensors_writer_add_weight() / _add_experts() reloads bit for bit.
 * Errors: those of qmm_checkpoint_weight_info(), QMM_ERR_INVALID_ARGUMENT (index >= count),
 * QMM_ERR_OUT_OF_MEMORY. */
QMM_API qmm_status qmm_checkpoint_weight_load(const qmm_safetensors *f, const char *name, size_t index, qmm_weight *out);

/* Part `rank` of `parts` of matrix `index` of module `name` (as qmm_checkpoint_weight_load()), cut as
 * qmm_weight_shard() cuts, into a new weight of the part's shape (free with qmm_weight_free()): only the
 * part's bytes of the mapped file are read, so one rank of a tensor-parallel run loads its part of every
 * weight without reading the others' parts. Errors: those of qmm_checkpoint_weight_load() and
 * qmm_weight_shard_shape(). */
QMM_API qmm_status qmm_checkpoint_weight_load_shard(const qmm_safetensors *f, const char *name, size_t index,
                                                    qmm_shard_dim dim, size_t parts, size_t rank, qmm_weight *out);

/* Stack `name` of experts held in one tensor pair (gpt-oss: name_blocks U8 (E, N, K/32, 16) and
 * name_scales U8 (E, N, K/32)) as a stacked MXFP4 weight whose buffers are the file's own bytes, without a
 * copy: read-only (never quantize into it), valid until qmm_safetensors_close(f), not to be freed with
 * qmm_weight_free() (qmm_weight_unprepare() releases a prepared copy). Errors: those of
 * qmm_checkpoint_weight_info(), QMM_ERR_UNSUPPORTED (name is not such a stack). */
QMM_API qmm_status qmm_checkpoint_experts_view(const qmm_safetensors *f, const char *name, qmm_weight *out);

/* A stack of experts copied out of f into a new stacked weight (free with qmm_weight_free()):
 *   name with one '*': the experts stored one by one, '*' standing for 0, 1, 2, ... up to the first that
 *     is missing (modelopt: "model.layers.0.mlp.experts.*.gate_proj" for ...experts.0.gate_proj.weight,
 *     .weight_scale, .weight_scale_2, ...); every expert must be of one format and shape, each keeps its
 *     tensor scale;
 *   name without '*': a stack in one tensor pair, as qmm_checkpoint_experts_view().
 * Errors: those of qmm_checkpoint_weight_load(), QMM_ERR_NOT_FOUND (no expert 0), QMM_ERR_MALFORMED
 * (experts of different formats or shapes), QMM_ERR_INVALID_ARGUMENT (more than one '*'). */
QMM_API qmm_status qmm_checkpoint_experts_load(const qmm_safetensors *f, const char *name, qmm_weight *out);

/* Progress of qmm_checkpoint_quantize(), given to its callback on the calling thread after each
 * tensor it quantizes (done counts them) and once at the start (done = 0). The callback returns 0 to
 * go on; anything else stops the run, which then fails with QMM_ERR_CANCELLED and leaves nothing
 * behind. */
typedef struct qmm_checkpoint_progress {
    size_t done;       /* tensors quantized so far */
    size_t total;      /* tensors the run quantizes */
    const char *name;  /* the tensor quantized last ("" at the start); valid during the callback */
} qmm_checkpoint_progress;

typedef int (*qmm_checkpoint_progress_fn)(void *user, const qmm_checkpoint_progress *progress);

/* Options of qmm_checkpoint_quantize(); qmm_checkpoint_quantize_options_init() sets the defaults. */
typedef struct qmm_checkpoint_quantize_options {
    qmm_format format;                   /* NVFP4, MXFP4, FP8_TENSOR or FP8_CHANNEL (no default) */
    qmm_recipe recipe;                   /* default QMM_RECIPE_DEFAULT: the format's default recipe */
    const char *const *exclude;          /* POSIX extended regular expressions: a tensor whose whole name
                                            matches one is copied unquantized (NULL when exclude_count is 0) */
    size_t exclude_count;                /* at most 64 */
    int threads;                         /* tensors quantized at once, 1 to 64; 0 (default): the online
                                            cores, at most 16. The output is the same for every value. */
    unsigned flags;                      /* QMM_WRITE_OVERWRITE: replace outputs that exist (default 0) */
    qmm_checkpoint_progress_fn progress; /* may be NULL (default) */
    void *progress_user;                 /* passed to progress */
} qmm_checkpoint_quantize_options;

/* What a run of qmm_checkpoint_quantize() did. */
typedef struct qmm_checkpoint_quantize_result {
    size_t tensors;      /* tensors in the input */
    size_t quantized;    /* of them, quantized */
    size_t unquantized;  /* 2-D float weights named *.weight left as they are (excluded, empty, odd K) */
    uint64_t bytes_in;   /* bytes of the input's tensors */
    uint64_t bytes_out;  /* bytes of the output's tensors */
    qmm_recipe recipe;   /* the recipe used (QMM_RECIPE_DEFAULT resolved) */
} qmm_checkpoint_quantize_result;

/* Sets *o to the defaults above (format 0: the caller must choose one). */
QMM_API void qmm_checkpoint_quantize_options_init(qmm_checkpoint_quantize_options *o);

/* Quantizes every 2-D Linear weight of the safetensors checkpoint `src` (a tensor named *.weight with two
 * dimensions, F32, F16 or BF16) to o->format and copies every other tensor unchanged. Embeddings, norms,
 * lm_head and mixture-of-experts routers stay as they are (names matching
 * (^|\.)(lm_head|gate|router|wte|wpe|[^.]*(embed|norm|ln_)[^.]*)\.weight$, case-insensitively), as do
 * weights with an odd K in the 4-bit formats. Output tensors keep the source names with the suffixes of
 * qmm_safetensors_writer_add_weight(). A 3-D float tensor named PREFIX.experts.PROJ is a stack of experts
 * (E, N, K), each a Linear weight of N x K, quantized expert by expert and written in the convention of the
 * format: MXFP4 as gpt-oss's PREFIX.experts.PROJ_blocks / _scales, NVFP4 and FP8 (and MXFP4 with K not a
 * multiple of 32) as modelopt's PREFIX.experts.I.PROJ.weight, .weight_scale, ... for I = 0 .. E - 1.
 *   src a .safetensors file: dst is a file; hf_quant_config.json, and config.json with its
 *     quantization_config (when src's folder has a config.json), are written beside dst.
 *   src a folder or its model.safetensors.index.json: dst is a folder that gets the same shards, a new
 *     index (when src has one), hf_quant_config.json, config.json (when src has one) and a copy of every
 *     other file and folder of src (not those whose names start with '.').
 * The input is never touched. Before anything is written the run refuses, with QMM_ERR_UNSAFE_OUTPUT and
 * both paths in the message, an output that is an input file under any name (a symbolic or hard link,
 * "..": files are compared by device and inode), a dst folder that is src's folder, lies inside it or
 * contains it, a single-file output in the input file's own folder (where its config files would go),
 * and an output that exists as anything but a regular file (or a folder where a folder is written).
 * Without QMM_WRITE_OVERWRITE an existing output fails with QMM_ERR_EXISTS. Everything is written into a
 * hidden folder inside the output folder and moved into place only when all of it is written, so a run
 * that fails (a weight with a NaN, a full disk) leaves nothing behind and existing outputs as they were;
 * the output folder (one level) is made when missing and removed again on failure.
 * result may be NULL. Errors: QMM_ERR_NULL_POINTER, QMM_ERR_INVALID_ENUM (format, recipe),
 * QMM_ERR_INVALID_ARGUMENT (an empty path, a bad regular expression, threads or exclude_count out of
 * range, unknown flags, an input without tensors, a loop of folder links in src), QMM_ERR_UNSUPPORTED (a
 * recipe of another format), QMM_ERR_UNSAFE_OUTPUT, QMM_ERR_EXISTS, QMM_ERR_NOT_FOUND, QMM_ERR_IO,
 * QMM_ERR_MALFORMED (src is not a valid checkpoint), QMM_ERR_NON_FINITE (a weight holds NaN or an
 * infinity; the message names it), QMM_ERR_CANCELLED (the progress callback returned nonzero),
 * QMM_ERR_OUT_OF_MEMORY. */
QMM_API qmm_status qmm_checkpoint_quantize(const char *src, const char *dst, const qmm_checkpoint_quantize_options *o,
                                           qmm_checkpoint_quantize_result *result);

/* What a checkpoint folder says about its quantization. */
typedef struct qmm_quant_config {
    qmm_format format;      /* NVFP4, MXFP4 or FP8_TENSOR */
    int group_size;         /* elements per block scale (16, 32), 0 for FP8 */
    char quant_algo[32];    /* as written: "NVFP4", "FP8", "MXFP4" (truncated to fit) */
    char source[32];        /* "hf_quant_config.json" or "config.json" */
    size_t exclude_count;   /* entries of exclude_modules / modules_to_not_convert */
} qmm_quant_config;

/* Reads the quantization of the checkpoint folder `dir`: hf_quant_config.json ("quantization":
 * {"quant_algo", "group_size", "exclude_modules"}) when present, else the "quantization_config" of
 * config.json ({"quant_method": "modelopt", "quant_algo": ...} or {"quant_method": "mxfp4"} or
 * {"quant_method": "fp8"}). Errors: QMM_ERR_NULL_POINTER, QMM_ERR_NOT_FOUND (neither file says),
 * QMM_ERR_IO, QMM_ERR_MALFORMED (bad JSON, or fields of the wrong type), QMM_ERR_UNSUPPORTED (an
 * algorithm qmm does not know), QMM_ERR_OUT_OF_MEMORY. */
QMM_API qmm_status qmm_quant_config_read(const char *dir, qmm_quant_config *out);

/* Writes the quantization of a checkpoint quantized by qmm to `format` into folder `dir`:
 * hf_quant_config.json {"producer": {"name": "qmm", ...}, "quantization": {"quant_algo": "NVFP4" |
 * "MXFP4" | "FP8", "kv_cache_quant_algo": null, "group_size": 16 | 32 (block formats), "exclude_modules":
 * [...]}}, and, when config_json is not NULL (the path of the source model's config.json), dir/config.json:
 * that file with its "quantization_config" set (replaced when present, otherwise added as the last member;
 * the rest of the text kept byte for byte): modelopt style {"quant_method": "modelopt", "quant_algo", ...}
 * for NVFP4 and FP8, gpt-oss style {"quant_method": "mxfp4", "modules_to_not_convert": [...]} for MXFP4.
 * exclude lists the module names left unquantized (may be NULL when exclude_count is 0).
 * Both texts are built before either file is written; each file is written atomically, hf_quant_config.json
 * first, so only an I/O failure on config.json can leave hf_quant_config.json written alone.
 * Errors: QMM_ERR_NULL_POINTER, QMM_ERR_INVALID_ENUM, QMM_ERR_INVALID_ARGUMENT (unknown flag, a name not
 * UTF-8), QMM_ERR_EXISTS (a target exists, without QMM_WRITE_OVERWRITE; nothing is written), QMM_ERR_IO,
 * QMM_ERR_MALFORMED (config_json is not a JSON object), QMM_ERR_OUT_OF_MEMORY. */
QMM_API qmm_status qmm_quant_config_write(const char *dir, qmm_format format, const char *const *exclude,
                                          size_t exclude_count, const char *config_json, unsigned flags);

#ifdef __cplusplus
}
#endif

#endif /* QMM_IO_H */
