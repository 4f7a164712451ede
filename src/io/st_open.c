/* Opening checkpoints: one safetensors file (memory-mapped), a sharded checkpoint through its
 * model.safetensors.index.json, or bytes in memory; and the accessors of qmm.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/error.h"
#include "fileutil.h"
#include "safetensors.h"

static void qmm__st_release_bytes(qmm__st_shard *sh)
{
    if (sh->mapped) munmap(sh->base, sh->size);
    else free(sh->base);
    sh->base = NULL;
}

void qmm_safetensors_close(qmm_safetensors *f)
{
    if (!f) return;
    for (size_t s = 0; s < f->shard_count; s++) {
        qmm__st_release_bytes(&f->shards[s]);
        qmm__st_shard_free(&f->shards[s]);
    }
    free(f->shards);
    free(f->tensors);
    free(f->by_name);
    free(f);
}

/* Maps a whole file read-only. */
static qmm_status qmm__st_map(const char *fn, const char *path, qmm__st_shard *sh)
{
    int fd;
    QMM__TRY(qmm__open_regular(fn, path, &fd));
    struct stat stb;
    if (fstat(fd, &stb) != 0) {
        close(fd);
        return qmm__fail(QMM_ERR_IO, "%s: cannot stat '%s': %s", fn, path, strerror(errno));
    }
    if ((unsigned long long)stb.st_size > (size_t)-1) {
        close(fd);
        return qmm__fail(QMM_ERR_IO, "%s: '%s' is too large to map", fn, path);
    }
    sh->size = (size_t)stb.st_size;
    if (sh->size < 8) { /* also avoids mapping an empty file, which mmap refuses */
        close(fd);
        return qmm__fail(QMM_ERR_MALFORMED, "%s: '%s' is truncated: %zu bytes, a safetensors file starts with an "
                                            "8-byte header length", fn, path, sh->size);
    }
    void *p = mmap(NULL, sh->size, PROT_READ, MAP_PRIVATE, fd, 0);
    int err = errno;
    close(fd);
    if (p == MAP_FAILED) return qmm__fail(QMM_ERR_IO, "%s: cannot map '%s': %s", fn, path, strerror(err));
    sh->base = p;
    sh->mapped = true;
    return QMM_OK;
}

static int qmm__cmp_by_name_ctx(const qmm__st_tensor *t, size_t a, size_t b)
{
    return strcmp(t[a].name, t[b].name);
}

/* Moves idx[root] down the heap idx[0 .. n) ordered by name. */
static void qmm__st_sift_down(const qmm__st_tensor *t, size_t *idx, size_t root, size_t n)
{
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= n) return;
        if (child + 1 < n && qmm__cmp_by_name_ctx(t, idx[child], idx[child + 1]) < 0) child++;
        if (qmm__cmp_by_name_ctx(t, idx[root], idx[child]) >= 0) return;
        const size_t tmp = idx[root];
        idx[root] = idx[child];
        idx[child] = tmp;
        root = child;
    }
}

/* Heap sort of the name index: qsort has no context argument and global state is avoided. */
static void qmm__st_sort_names(const qmm__st_tensor *t, size_t *idx, size_t n)
{
    for (size_t start = n / 2; start-- > 0;) qmm__st_sift_down(t, idx, start, n);
    for (size_t end = n; end-- > 1;) {
        const size_t tmp = idx[0];
        idx[0] = idx[end];
        idx[end] = tmp;
        qmm__st_sift_down(t, idx, 0, end);
    }
}

/* Builds the name index and rejects a name held by two shards. */
static qmm_status qmm__st_index_names(const char *fn, qmm_safetensors *f)
{
    f->by_name = malloc((f->tensor_count ? f->tensor_count : 1) * sizeof *f->by_name);
    if (!f->by_name) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    for (size_t i = 0; i < f->tensor_count; i++) f->by_name[i] = i;
    qmm__st_sort_names(f->tensors, f->by_name, f->tensor_count);
    for (size_t i = 1; i < f->tensor_count; i++) {
        const qmm__st_tensor *a = &f->tensors[f->by_name[i - 1]], *b = &f->tensors[f->by_name[i]];
        if (strcmp(a->name, b->name) == 0)
            return qmm__fail(QMM_ERR_MALFORMED, "%s: tensor '%.200s' is in two shards ('%s' and '%s')", fn, a->name,
                             f->shards[a->shard].name, f->shards[b->shard].name);
    }
    return QMM_OK;
}

const qmm__st_tensor *qmm__st_find(const qmm_safetensors *f, const char *name)
{
    size_t lo = 0, hi = f->tensor_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(f->tensors[f->by_name[mid]].name, name);
        if (c == 0) return &f->tensors[f->by_name[mid]];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* Opens the shards named in `names` (already checked) from folder dir into f. */
static qmm_status qmm__st_open_shards(const char *fn, qmm_safetensors *f, const char *dir, const char *const *names,
                                      size_t count)
{
    f->shards = calloc(count ? count : 1, sizeof *f->shards);
    if (!f->shards) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    for (size_t s = 0; s < count; s++) {
        qmm__st_shard *sh = &f->shards[s];
        char *path = qmm__path_join(dir, names[s]);
        sh->name = malloc(strlen(names[s]) + 1);
        if (!path || !sh->name) {
            free(path);
            free(sh->name);
            sh->name = NULL;
            return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        }
        strcpy(sh->name, names[s]);
        qmm_status st = qmm__st_map(fn, path, sh);
        if (st == QMM_OK) {
            st = qmm__st_parse(fn, sh, s, &f->tensors, &f->tensor_count);
            if (st != QMM_OK) {
                char msg[512];
                snprintf(msg, sizeof msg, "%s", qmm_last_error());
                qmm__fail(st, "%s (in '%s')", msg, path);
                qmm__st_release_bytes(sh);
            }
        }
        free(path);
        if (st != QMM_OK) {
            free(sh->name);
            sh->name = NULL;
            return st;
        }
        f->shard_count = s + 1;
    }
    return qmm__st_index_names(fn, f);
}

static int qmm__cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static bool qmm__shard_name_ok(const char *s)
{
    return *s && !strchr(s, '/') && !strstr(s, "..") && strcmp(s, ".") != 0;
}

/* A sharded checkpoint: {"weight_map": {tensor: shard file}}. */
static qmm_status qmm__st_open_index(const char *fn, const char *path, qmm_safetensors *f)
{
    char *text;
    qmm__json doc;
    QMM__TRY(qmm__json_read_file(fn, path, "shard index", QMM_SAFETENSORS_MAX_HEADER, &text, NULL, &doc));
    qmm_status st = QMM_OK;
    size_t map = qmm__json_member(&doc, 0, "weight_map");
    const char *dup = NULL, **names = NULL;
    size_t entries = 0, distinct = 0;
    if (map == QMM__JSON_NONE || doc.v[map].type != QMM__JSON_OBJECT) {
        st = qmm__fail(QMM_ERR_MALFORMED, "%s: '%s' has no \"weight_map\" object", fn, path);
        goto done;
    }
    if (qmm__json_has_duplicate_key(&doc, map, &dup)) {
        st = qmm__fail(QMM_ERR_MALFORMED, "%s: '%s' maps tensor '%.200s' twice", fn, path, dup);
        goto done;
    }
    entries = doc.v[map].count;
    names = malloc((entries ? entries : 1) * sizeof *names);
    if (!names) {
        st = qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        goto done;
    }
    for (size_t i = map + 1, m = 0; m < entries; m++, i = doc.v[i + 1].next) {
        if (doc.v[i + 1].type != QMM__JSON_STRING || !qmm__shard_name_ok(qmm__json_str(&doc, i + 1))) {
            st = qmm__fail(QMM_ERR_MALFORMED, "%s: '%s' maps tensor '%.200s' to something other than a file name in its "
                                              "folder", fn, path, qmm__json_str(&doc, i));
            goto done;
        }
        names[m] = qmm__json_str(&doc, i + 1);
    }
    qsort(names, entries, sizeof *names, qmm__cmp_str);
    for (size_t m = 0; m < entries; m++)
        if (m == 0 || strcmp(names[m], names[distinct - 1]) != 0) names[distinct++] = names[m];
    char *dir = qmm__path_dirname(path);
    if (!dir) {
        st = qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        goto done;
    }
    st = qmm__st_open_shards(fn, f, dir, names, distinct);
    free(dir);
    if (st != QMM_OK) goto done;
    /* Every mapped tensor is in the shard the index names, and every tensor of the shards is mapped. */
    for (size_t i = map + 1, m = 0; m < entries; m++, i = doc.v[i + 1].next) {
        const qmm__st_tensor *t = qmm__st_find(f, qmm__json_str(&doc, i));
        if (!t || strcmp(f->shards[t->shard].name, qmm__json_str(&doc, i + 1)) != 0) {
            st = qmm__fail(QMM_ERR_MALFORMED, "%s: '%s' maps tensor '%.200s' to '%s', which does not hold it", fn, path,
                           qmm__json_str(&doc, i), qmm__json_str(&doc, i + 1));
            goto done;
        }
    }
    if (f->tensor_count != entries)
        st = qmm__fail(QMM_ERR_MALFORMED, "%s: the shards hold %zu tensors, '%s' maps %zu", fn, f->tensor_count, path,
                       entries);
done:
    free(names);
    qmm__json_free(&doc);
    free(text);
    return st;
}

static qmm_status qmm__st_open_path(const char *fn, const char *path, qmm_safetensors *f)
{
    struct stat stb;
    if (stat(path, &stb) != 0)
        return qmm__fail(errno == ENOENT ? QMM_ERR_NOT_FOUND : QMM_ERR_IO, "%s: cannot open '%s': %s", fn, path,
                         strerror(errno));
    if (!S_ISDIR(stb.st_mode) && !S_ISREG(stb.st_mode))
        return qmm__fail(QMM_ERR_IO, "%s: '%s' is neither a regular file nor a folder", fn, path);
    if (S_ISDIR(stb.st_mode)) {
        static const char *const candidates[] = {"model.safetensors.index.json", "model.safetensors"};
        for (int c = 0; c < 2; c++) {
            char *p = qmm__path_join(path, candidates[c]);
            if (!p) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
            bool exists = stat(p, &stb) == 0;
            qmm_status st = exists ? qmm__st_open_path(fn, p, f) : QMM_OK;
            free(p);
            if (exists) return st;
        }
        return qmm__fail(QMM_ERR_NOT_FOUND, "%s: folder '%s' holds neither model.safetensors.index.json nor "
                                            "model.safetensors", fn, path);
    }
    size_t len = strlen(path);
    if (len >= 5 && strcmp(path + len - 5, ".json") == 0) return qmm__st_open_index(fn, path, f);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *names[1] = {base};
    char *dir = qmm__path_dirname(path);
    if (!dir) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    qmm_status st = qmm__st_open_shards(fn, f, dir, names, 1);
    free(dir);
    return st;
}

qmm_status qmm_safetensors_open(const char *path, qmm_safetensors **out)
{
    static const char fn[] = "qmm_safetensors_open";
    if (!path || !out) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: %s is NULL", fn, path ? "out" : "path");
    qmm_safetensors *f = calloc(1, sizeof *f);
    if (!f) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    qmm_status st = qmm__st_open_path(fn, path, f);
    if (st != QMM_OK) {
        qmm_safetensors_close(f);
        return st;
    }
    *out = f;
    return QMM_OK;
}

qmm_status qmm_safetensors_open_memory(const void *bytes, size_t size, qmm_safetensors **out)
{
    static const char fn[] = "qmm_safetensors_open_memory";
    if (!bytes || !out) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: %s is NULL", fn, bytes ? "out" : "bytes");
    if (size < 8)
        return qmm__fail(QMM_ERR_MALFORMED, "%s: truncated file: %zu bytes, a safetensors file starts with an 8-byte "
                                            "header length", fn, size);
    qmm_safetensors *f = calloc(1, sizeof *f);
    qmm__st_shard *sh = calloc(1, sizeof *sh);
    uint8_t *copy = malloc(size);
    char *name = calloc(1, 1);
    if (!f || !sh || !copy || !name) {
        free(f), free(sh), free(copy), free(name);
        return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: cannot copy %zu bytes", fn, size);
    }
    memcpy(copy, bytes, size);
    sh->base = copy;
    sh->size = size;
    sh->name = name;
    f->shards = sh;
    qmm_status st = qmm__st_parse(fn, sh, 0, &f->tensors, &f->tensor_count);
    if (st == QMM_OK) {
        f->shard_count = 1;
        st = qmm__st_index_names(fn, f);
    }
    if (st != QMM_OK) {
        if (f->shard_count == 0) { /* the shard was not taken over by f */
            free(copy);
            free(name);
        }
        qmm_safetensors_close(f);
        return st;
    }
    *out = f;
    return QMM_OK;
}

size_t qmm_safetensors_tensor_count(const qmm_safetensors *f) { return f ? f->tensor_count : 0; }
size_t qmm_safetensors_shard_count(const qmm_safetensors *f) { return f ? f->shard_count : 0; }

const char *qmm_safetensors_shard_name(const qmm_safetensors *f, size_t shard)
{
    return (f && shard < f->shard_count) ? f->shards[shard].name : NULL;
}

void qmm__st_view(const qmm_safetensors *f, const qmm__st_tensor *t, qmm_tensor_view *out)
{
    const qmm__st_shard *sh = &f->shards[t->shard];
    qmm_tensor_view v;
    v.name = t->name;
    v.dtype = t->dtype;
    v.ndim = t->ndim;
    v.shape = t->shape;
    v.elements = t->elements;
    v.data = sh->base + sh->data_start + t->begin; /* begin <= end <= size - data_start: checked when parsed */
    v.bytes = t->end - t->begin;
    v.shard = t->shard;
    *out = v;
}

qmm_status qmm_safetensors_tensor_at(const qmm_safetensors *f, size_t index, qmm_tensor_view *out)
{
    if (!f || !out) return qmm__fail(QMM_ERR_NULL_POINTER, "qmm_safetensors_tensor_at: NULL argument");
    if (index >= f->tensor_count)
        return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "qmm_safetensors_tensor_at: index %zu, the checkpoint has %zu tensors",
                         index, f->tensor_count);
    qmm__st_view(f, &f->tensors[index], out);
    return QMM_OK;
}

qmm_status qmm_safetensors_tensor_find(const qmm_safetensors *f, const char *name, qmm_tensor_view *out)
{
    if (!f || !name || !out) return qmm__fail(QMM_ERR_NULL_POINTER, "qmm_safetensors_tensor_find: NULL argument");
    const qmm__st_tensor *t = qmm__st_find(f, name);
    if (!t) return qmm__fail(QMM_ERR_NOT_FOUND, "qmm_safetensors_tensor_find: no tensor named '%.200s'", name);
    qmm__st_view(f, t, out);
    return QMM_OK;
}

size_t qmm_safetensors_metadata_count(const qmm_safetensors *f, size_t shard)
{
    return (f && shard < f->shard_count) ? f->shards[shard].meta_count : 0;
}

qmm_status qmm_safetensors_metadata_at(const qmm_safetensors *f, size_t shard, size_t index, const char **key,
                                       const char **value)
{
    if (!f || !key || !value) return qmm__fail(QMM_ERR_NULL_POINTER, "qmm_safetensors_metadata_at: NULL argument");
    if (shard >= f->shard_count || index >= f->shards[shard].meta_count)
        return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "qmm_safetensors_metadata_at: shard %zu entry %zu does not exist",
                         shard, index);
    *key = f->shards[shard].meta_keys[index];
    *value = f->shards[shard].meta_values[index];
    return QMM_OK;
}

qmm_status qmm_safetensors_metadata_find(const qmm_safetensors *f, const char *key, const char **value)
{
    if (!f || !key || !value) return qmm__fail(QMM_ERR_NULL_POINTER, "qmm_safetensors_metadata_find: NULL argument");
    for (size_t s = 0; s < f->shard_count; s++)
        for (size_t i = 0; i < f->shards[s].meta_count; i++)
            if (strcmp(f->shards[s].meta_keys[i], key) == 0) {
                *value = f->shards[s].meta_values[i];
                return QMM_OK;
            }
    return qmm__fail(QMM_ERR_NOT_FOUND, "qmm_safetensors_metadata_find: no metadata key '%.200s'", key);
}
