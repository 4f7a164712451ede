/* Writing model.safetensors.index.json, the map from tensor names to shard files. */
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "fileutil.h"
#include "json.h"
#include "safetensors.h"

typedef struct qmm__index_pair {
    const char *tensor, *shard;
} qmm__index_pair;

static int qmm__cmp_pair(const void *a, const void *b)
{
    return strcmp(((const qmm__index_pair *)a)->tensor, ((const qmm__index_pair *)b)->tensor);
}

qmm_status qmm_safetensors_index_write(const char *path, const char *const *tensor_names, const char *const *shard_names,
                                       size_t count, uint64_t total_size, unsigned flags)
{
    static const char fn[] = "qmm_safetensors_index_write";
    if (!path || (count && (!tensor_names || !shard_names))) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: NULL argument", fn);
    if (flags & ~QMM_WRITE_OVERWRITE) return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: unknown flags 0x%x", fn, flags);
    for (size_t i = 0; i < count; i++) {
        const char *t = tensor_names[i], *s = shard_names[i];
        if (!t || !s) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: name %zu is NULL", fn, i);
        if (!qmm__utf8_valid(t, strlen(t)) || !qmm__utf8_valid(s, strlen(s)))
            return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: name %zu is not UTF-8", fn, i);
        if (!*s || strchr(s, '/') || strstr(s, ".."))
            return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: shard name '%.200s' is not a file name in the index's folder",
                             fn, s);
    }
    qmm__index_pair *pairs = malloc((count ? count : 1) * sizeof *pairs);
    if (!pairs) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    for (size_t i = 0; i < count; i++) pairs[i] = (qmm__index_pair){tensor_names[i], shard_names[i]};
    qsort(pairs, count, sizeof *pairs, qmm__cmp_pair);
    for (size_t i = 1; i < count; i++)
        if (strcmp(pairs[i - 1].tensor, pairs[i].tensor) == 0) {
            qmm_status st = qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: tensor '%.200s' is named twice", fn, pairs[i].tensor);
            free(pairs);
            return st;
        }
    /* The layout transformers writes: two-space indent, sorted names. */
    qmm__buf b = {0};
    qmm__buf_str(&b, "{\n  \"metadata\": {\n    \"total_size\": ");
    qmm__buf_u64(&b, total_size);
    qmm__buf_str(&b, "\n  },\n  \"weight_map\": {");
    for (size_t i = 0; i < count; i++) {
        qmm__buf_str(&b, i ? ",\n    " : "\n    ");
        qmm__buf_quote(&b, pairs[i].tensor);
        qmm__buf_str(&b, ": ");
        qmm__buf_quote(&b, pairs[i].shard);
    }
    qmm__buf_str(&b, count ? "\n  }\n}\n" : "}\n}\n");
    free(pairs);
    qmm_status st = b.failed ? qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn)
                             : qmm__write_file_atomic(fn, path, b.p, b.len, flags & QMM_WRITE_OVERWRITE);
    qmm__buf_free(&b);
    return st;
}
