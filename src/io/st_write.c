/* Writing safetensors files. Tensor bytes are appended to a temporary data file as they are added, so
 * memory holds only the header entries; finish writes the header (padded with spaces to a multiple of
 * 8 bytes, so the data area starts 8-byte aligned) and copies the data behind it into a second
 * temporary file, which is then moved into place. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/error.h"
#include "../core/format.h"
#include "fileutil.h"
#include "safetensors.h"

typedef struct qmm__st_entry {
    char *name;
    qmm_st_dtype dtype;
    size_t ndim;
    size_t *shape;
    uint64_t begin, end;
} qmm__st_entry;

struct qmm_safetensors_writer {
    char *path;
    bool overwrite;
    FILE *data;          /* the temporary data file */
    char *data_path;
    uint64_t data_len;
    bool broken;         /* an earlier write failed: the data file can no longer be trusted */
    qmm__st_entry *entries;
    size_t count, cap;
    char **names_hash;   /* open addressing over entry names, for uniqueness */
    size_t hash_cap;
    char **meta;         /* key, value, key, value, ... */
    size_t meta_count;
};

static size_t qmm__hash(const char *s)
{
    size_t h = 1469598103934665603ull & (size_t)-1; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * (size_t)1099511628211ull;
    return h;
}

/* Inserts name into the set; false when it is there already. The set never fills past half. */
static bool qmm__names_insert(qmm_safetensors_writer *w, char *name)
{
    size_t mask = w->hash_cap - 1;
    for (size_t i = qmm__hash(name) & mask;; i = (i + 1) & mask) {
        if (!w->names_hash[i]) {
            w->names_hash[i] = name;
            return true;
        }
        if (strcmp(w->names_hash[i], name) == 0) return false;
    }
}

static bool qmm__names_contains(const qmm_safetensors_writer *w, const char *name)
{
    size_t mask = w->hash_cap - 1;
    for (size_t i = qmm__hash(name) & mask; w->names_hash[i]; i = (i + 1) & mask)
        if (strcmp(w->names_hash[i], name) == 0) return true;
    return false;
}

static bool qmm__names_grow(qmm_safetensors_writer *w)
{
    if (w->count + 1 <= w->hash_cap / 2) return true;
    size_t cap = w->hash_cap ? w->hash_cap * 2 : 64;
    char **old = w->names_hash;
    size_t old_cap = w->hash_cap;
    w->names_hash = calloc(cap, sizeof *w->names_hash);
    if (!w->names_hash) {
        w->names_hash = old;
        return false;
    }
    w->hash_cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i]) qmm__names_insert(w, old[i]);
    free(old);
    return true;
}

static char *qmm__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

void qmm_safetensors_writer_discard(qmm_safetensors_writer *w)
{
    if (!w) return;
    if (w->data) fclose(w->data);
    if (w->data_path) unlink(w->data_path);
    free(w->data_path);
    free(w->path);
    for (size_t i = 0; i < w->count; i++) {
        free(w->entries[i].name);
        free(w->entries[i].shape);
    }
    free(w->entries);
    free(w->names_hash);
    for (size_t i = 0; i < 2 * w->meta_count; i++) free(w->meta[i]);
    free(w->meta);
    free(w);
}

qmm_status qmm_safetensors_writer_create(const char *path, unsigned flags, qmm_safetensors_writer **out)
{
    static const char fn[] = "qmm_safetensors_writer_create";
    if (!path || !out) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: %s is NULL", fn, path ? "out" : "path");
    if (flags & ~QMM_WRITE_OVERWRITE) return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: unknown flags 0x%x", fn, flags);
    const bool overwrite = flags & QMM_WRITE_OVERWRITE;
    if (!overwrite && qmm__path_exists(path))
        return qmm__fail(QMM_ERR_EXISTS, "%s: '%s' exists (overwriting was not asked for)", fn, path);
    qmm_safetensors_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->path = qmm__strdup(path))) {
        free(w);
        return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    w->overwrite = overwrite;
    qmm_status st = qmm__temp_create(fn, path, &w->data, &w->data_path);
    if (st != QMM_OK) {
        qmm_safetensors_writer_discard(w);
        return st;
    }
    *out = w;
    return QMM_OK;
}

qmm_status qmm_safetensors_writer_set_metadata(qmm_safetensors_writer *w, const char *key, const char *value)
{
    static const char fn[] = "qmm_safetensors_writer_set_metadata";
    if (!w || !key || !value) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: NULL argument", fn);
    if (!qmm__utf8_valid(key, strlen(key)) || !qmm__utf8_valid(value, strlen(value)))
        return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: key or value is not UTF-8", fn);
    for (size_t i = 0; i < w->meta_count; i++)
        if (strcmp(w->meta[2 * i], key) == 0)
            return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: key '%.200s' is set already", fn, key);
    char **m = realloc(w->meta, (2 * w->meta_count + 2) * sizeof *m);
    if (!m) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    w->meta = m;
    char *k = qmm__strdup(key), *v = qmm__strdup(value);
    if (!k || !v) {
        free(k), free(v);
        return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    m[2 * w->meta_count] = k;
    m[2 * w->meta_count + 1] = v;
    w->meta_count++;
    return QMM_OK;
}

bool qmm__st_writer_has(const qmm_safetensors_writer *w, const char *name)
{
    return w->names_hash && qmm__names_contains(w, name);
}

qmm_status qmm__st_writer_add_parts(const char *fn, qmm_safetensors_writer *w, const char *name, qmm_st_dtype dtype,
                                    size_t ndim, const size_t *shape, const void *const *parts,
                                    const size_t *part_bytes, size_t nparts)
{
    if (!w || !name) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: %s is NULL", fn, w ? "name" : "writer");
    if (ndim > 0 && !shape) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: shape is NULL for %zu extents", fn, ndim);
    size_t bytes = 0;
    for (size_t i = 0; i < nparts; i++) {
        if (part_bytes[i] > 0 && !parts[i])
            return qmm__fail(QMM_ERR_NULL_POINTER, "%s: data is NULL for %zu bytes", fn, part_bytes[i]);
        if (part_bytes[i] > (size_t)-1 - bytes) return qmm__fail(QMM_ERR_SIZE_OVERFLOW, "%s: tensor too large", fn);
        bytes += part_bytes[i];
    }
    const int bits = qmm__st_dtype_bits(dtype);
    if (!bits) return qmm__fail(QMM_ERR_INVALID_ENUM, "%s: unknown dtype %d", fn, (int)dtype);
    if (!*name || strcmp(name, "__metadata__") == 0 || !qmm__utf8_valid(name, strlen(name)))
        return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: '%.200s' cannot name a tensor", fn, name);
    if (w->broken) return qmm__fail(QMM_ERR_IO, "%s: an earlier write to '%s' failed", fn, w->path);
    if (qmm__st_writer_has(w, name))
        return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: tensor '%.200s' was added already", fn, name);
    size_t elements = 1, total_bits;
    bool empty = false;
    for (size_t d = 0; d < ndim; d++) {
        if (shape[d] == 0) empty = true;
        else if (!qmm__mul_size(elements, shape[d], &elements))
            return qmm__fail(QMM_ERR_SIZE_OVERFLOW, "%s: shape of '%.200s' overflows", fn, name);
    }
    if (empty) elements = 0;
    if (!qmm__mul_size(elements, (size_t)bits, &total_bits))
        return qmm__fail(QMM_ERR_SIZE_OVERFLOW, "%s: shape of '%.200s' overflows", fn, name);
    if (total_bits % 8 != 0 || total_bits / 8 != bytes)
        return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: tensor '%.200s': %zu elements of %s are %zu bits, %zu bytes given",
                         fn, name, elements, qmm_st_dtype_name(dtype), total_bits, bytes);

    if (!qmm__names_grow(w)) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    qmm__st_entry *grown = qmm__grow(w->entries, &w->cap, w->count, sizeof *grown);
    if (!grown) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    w->entries = grown;
    qmm__st_entry e = {qmm__strdup(name), dtype, ndim, malloc((ndim ? ndim : 1) * sizeof(size_t)), w->data_len,
                       w->data_len + bytes};
    if (!e.name || !e.shape) {
        free(e.name), free(e.shape);
        return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    if (ndim) memcpy(e.shape, shape, ndim * sizeof *shape);
    for (size_t i = 0; i < nparts; i++) {
        if (part_bytes[i] && fwrite(parts[i], 1, part_bytes[i], w->data) != part_bytes[i]) {
            w->broken = true;
            free(e.name), free(e.shape);
            return qmm__fail(QMM_ERR_IO, "%s: cannot write %zu bytes of '%.200s' to a temporary file beside '%s'", fn,
                             bytes, name, w->path);
        }
    }
    w->data_len += bytes;
    w->entries[w->count++] = e;
    qmm__names_insert(w, e.name);
    return QMM_OK;
}

qmm_status qmm_safetensors_writer_add(qmm_safetensors_writer *w, const char *name, qmm_st_dtype dtype, size_t ndim,
                                      const size_t *shape, const void *data, size_t bytes)
{
    const void *parts[1] = {data};
    return qmm__st_writer_add_parts("qmm_safetensors_writer_add", w, name, dtype, ndim, shape, parts, &bytes, 1);
}

/* The header text: __metadata__ first, then the entries in the order they were added. */
static void qmm__st_header(const qmm_safetensors_writer *w, qmm__buf *b)
{
    qmm__buf_str(b, "{");
    bool first = true;
    if (w->meta_count) {
        qmm__buf_str(b, "\"__metadata__\":{");
        for (size_t i = 0; i < w->meta_count; i++) {
            if (i) qmm__buf_str(b, ",");
            qmm__buf_quote(b, w->meta[2 * i]);
            qmm__buf_str(b, ":");
            qmm__buf_quote(b, w->meta[2 * i + 1]);
        }
        qmm__buf_str(b, "}");
        first = false;
    }
    for (size_t i = 0; i < w->count; i++) {
        const qmm__st_entry *e = &w->entries[i];
        if (!first) qmm__buf_str(b, ",");
        first = false;
        qmm__buf_quote(b, e->name);
        qmm__buf_str(b, ":{\"dtype\":\"");
        qmm__buf_str(b, qmm_st_dtype_name(e->dtype));
        qmm__buf_str(b, "\",\"shape\":[");
        for (size_t d = 0; d < e->ndim; d++) {
            if (d) qmm__buf_str(b, ",");
            qmm__buf_u64(b, e->shape[d]);
        }
        qmm__buf_str(b, "],\"data_offsets\":[");
        qmm__buf_u64(b, e->begin);
        qmm__buf_str(b, ",");
        qmm__buf_u64(b, e->end);
        qmm__buf_str(b, "]}");
    }
    qmm__buf_str(b, "}");
    while (b->len % 8) qmm__buf_str(b, " "); /* 8 + header length is then a multiple of 8 */
}

static qmm_status qmm__st_assemble(const char *fn, qmm_safetensors_writer *w, const qmm__buf *header, FILE *out)
{
    uint8_t len8[8];
    uint64_t n = header->len;
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)(n >> (8 * i));
    if (fwrite(len8, 1, 8, out) != 8 || fwrite(header->p, 1, header->len, out) != header->len)
        return qmm__fail(QMM_ERR_IO, "%s: cannot write the header of '%s'", fn, w->path);
    if (fflush(w->data) != 0 || fseek(w->data, 0, SEEK_SET) != 0)
        return qmm__fail(QMM_ERR_IO, "%s: cannot read back the temporary data of '%s'", fn, w->path);
    enum { CHUNK = 1 << 20 };
    char *buf = malloc(CHUNK);
    if (!buf) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    uint64_t copied = 0;
    while (copied < w->data_len) {
        size_t want = w->data_len - copied < CHUNK ? (size_t)(w->data_len - copied) : CHUNK;
        size_t got = fread(buf, 1, want, w->data);
        if (got != want || fwrite(buf, 1, got, out) != got) {
            free(buf);
            return qmm__fail(QMM_ERR_IO, "%s: cannot copy the data of '%s'", fn, w->path);
        }
        copied += got;
    }
    free(buf);
    return QMM_OK;
}

qmm_status qmm_safetensors_writer_finish(qmm_safetensors_writer *w)
{
    static const char fn[] = "qmm_safetensors_writer_finish";
    if (!w) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: writer is NULL", fn);
    qmm_status st = QMM_OK;
    qmm__buf header = {0};
    if (w->broken) st = qmm__fail(QMM_ERR_IO, "%s: an earlier write to '%s' failed", fn, w->path);
    else if (!w->overwrite && qmm__path_exists(w->path))
        st = qmm__fail(QMM_ERR_EXISTS, "%s: '%s' exists (overwriting was not asked for)", fn, w->path);
    if (st == QMM_OK) {
        qmm__st_header(w, &header);
        if (header.failed) st = qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory for the header", fn);
        else if (header.len > QMM_SAFETENSORS_MAX_HEADER)
            st = qmm__fail(QMM_ERR_IO, "%s: the header of '%s' would be %zu bytes, over the format's limit", fn, w->path,
                           header.len);
    }
    if (st == QMM_OK) {
        FILE *out;
        char *tmp;
        st = qmm__temp_create(fn, w->path, &out, &tmp);
        if (st == QMM_OK) {
            st = qmm__st_assemble(fn, w, &header, out);
            if (fclose(out) != 0 && st == QMM_OK) st = qmm__fail(QMM_ERR_IO, "%s: cannot write '%s'", fn, w->path);
            if (st == QMM_OK) {
                st = qmm__temp_commit(fn, tmp, w->path, w->overwrite);
            } else {
                unlink(tmp);
                free(tmp);
            }
        }
    }
    qmm__buf_free(&header);
    qmm_safetensors_writer_discard(w);
    return st;
}
