/* Internal view of an open checkpoint, shared by the reader, the conventions and the tests' fuzzer. */
#ifndef QMM_IO_SAFETENSORS_H
#define QMM_IO_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json.h"
#include "qmm_io.h"

typedef struct qmm__st_tensor {
    const char *name;   /* in the shard's JSON arena */
    qmm_st_dtype dtype;
    size_t ndim;
    const size_t *shape;/* in the shard's dims */
    size_t elements;
    size_t begin, end;  /* byte range in the shard's data area */
    size_t shard;
} qmm__st_tensor;

typedef struct qmm__st_shard {
    char *name;              /* file name as the index gives it ("" for memory) */
    uint8_t *base;           /* the whole file */
    size_t size;
    bool mapped;             /* munmap() when closing, else free() */
    size_t data_start;       /* 8 + header length */
    qmm__json doc;           /* the parsed header: owns every string of the shard */
    size_t *dims;            /* every tensor's extents */
    const char **meta_keys;  /* "__metadata__", in the header's order */
    const char **meta_values;
    size_t meta_count;
} qmm__st_shard;

struct qmm_safetensors {
    qmm__st_shard *shards;
    size_t shard_count;
    qmm__st_tensor *tensors; /* by shard, then by begin */
    size_t tensor_count;
    size_t *by_name;         /* tensor indices sorted by name */
};

/* Bits per element of a dtype, 0 when unknown (st_dtype.c). */
int qmm__st_dtype_bits(qmm_st_dtype dtype);

/* Parses and checks the safetensors file in sh->base[0, sh->size) (base and size set by the caller),
 * filling the shard's header fields and appending its tensors, sorted by offset, to *tensors / *count
 * (grown with realloc). On failure the shard's own allocations are freed and *tensors is unchanged in
 * meaning (its first *count entries are kept). */
qmm_status qmm__st_parse(const char *fn, qmm__st_shard *sh, size_t shard_index, qmm__st_tensor **tensors,
                         size_t *count);

/* Frees what qmm__st_parse() allocated for the shard, and the shard's bytes. */
void qmm__st_shard_free(qmm__st_shard *sh);

/* Fills a public view of tensor t of f. */
void qmm__st_view(const qmm_safetensors *f, const qmm__st_tensor *t, qmm_tensor_view *out);

/* The tensor called name, or NULL. */
const qmm__st_tensor *qmm__st_find(const qmm_safetensors *f, const char *name);

/* True when the writer holds a tensor called name. */
bool qmm__st_writer_has(const qmm_safetensors_writer *w, const char *name);

/* qmm_safetensors_writer_add() for a tensor whose bytes are the concatenation of nparts buffers. */
qmm_status qmm__st_writer_add_parts(const char *fn, qmm_safetensors_writer *w, const char *name, qmm_st_dtype dtype,
                                    size_t ndim, const size_t *shape, const void *const *parts,
                                    const size_t *part_bytes, size_t nparts);

#endif
