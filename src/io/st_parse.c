/* The safetensors header: parsed and checked completely before any tensor is handed out.
 *
 * Layout of a file: 8 bytes little-endian N, N bytes of JSON (padded with spaces), then the data area.
 * The rules follow the format's reference reader: the header starts with '{', is at most
 * QMM_SAFETENSORS_MAX_HEADER bytes, names are unique, every entry's byte count is what its shape and
 * dtype give, and the entries tile the data area exactly. Every offset is checked against the file
 * size before a pointer is formed from it. */
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "../core/format.h"
#include "safetensors.h"

#define QMM__ST_FAIL(...) qmm__fail(QMM_ERR_MALFORMED, __VA_ARGS__)

static int qmm__cmp_tensor_offset(const void *a, const void *b)
{
    const qmm__st_tensor *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

/* "__metadata__": an object of strings (null counts as none). */
static qmm_status qmm__st_metadata(const char *fn, qmm__st_shard *sh, size_t obj)
{
    const qmm__json *doc = &sh->doc;
    if (doc->v[obj].type == QMM__JSON_NULL) return QMM_OK;
    if (doc->v[obj].type != QMM__JSON_OBJECT) return QMM__ST_FAIL("%s: __metadata__ is not an object", fn);
    const char *dup;
    if (qmm__json_has_duplicate_key(doc, obj, &dup))
        return QMM__ST_FAIL("%s: __metadata__ has the key '%.200s' twice", fn, dup);
    size_t n = doc->v[obj].count;
    if (n == 0) return QMM_OK;
    sh->meta_keys = malloc(n * sizeof *sh->meta_keys);
    sh->meta_values = malloc(n * sizeof *sh->meta_values);
    if (!sh->meta_keys || !sh->meta_values) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    size_t i = obj + 1;
    for (size_t m = 0; m < n; m++, i = doc->v[i + 1].next) {
        if (doc->v[i + 1].type != QMM__JSON_STRING)
            return QMM__ST_FAIL("%s: __metadata__ value of '%.200s' is not a string", fn, qmm__json_str(doc, i));
        sh->meta_keys[m] = qmm__json_str(doc, i);
        sh->meta_values[m] = qmm__json_str(doc, i + 1);
    }
    sh->meta_count = n;
    return QMM_OK;
}

/* One tensor entry {"dtype": ..., "shape": [...], "data_offsets": [begin, end]} (other keys ignored,
 * as the reference reader does). dims points at room for the shape. */
static qmm_status qmm__st_entry(const char *fn, const qmm__st_shard *sh, size_t key, size_t data_len, size_t *dims,
                                qmm__st_tensor *t)
{
    const qmm__json *doc = &sh->doc;
    const char *text = (const char *)sh->base + 8;
    const char *name = qmm__json_str(doc, key);
    const size_t obj = key + 1;
    if (doc->v[obj].type != QMM__JSON_OBJECT) return QMM__ST_FAIL("%s: entry of tensor '%.200s' is not an object", fn, name);
    const char *dup;
    if (qmm__json_has_duplicate_key(doc, obj, &dup))
        return QMM__ST_FAIL("%s: entry of tensor '%.200s' has the key '%.64s' twice", fn, name, dup);
    size_t dt = qmm__json_member(doc, obj, "dtype"), sp = qmm__json_member(doc, obj, "shape"),
           off = qmm__json_member(doc, obj, "data_offsets");
    if (dt == QMM__JSON_NONE || sp == QMM__JSON_NONE || off == QMM__JSON_NONE)
        return QMM__ST_FAIL("%s: tensor '%.200s' lacks %s", fn, name,
                            dt == QMM__JSON_NONE ? "dtype" : sp == QMM__JSON_NONE ? "shape" : "data_offsets");
    if (doc->v[dt].type != QMM__JSON_STRING || qmm_st_dtype_from_name(qmm__json_str(doc, dt), &t->dtype) != QMM_OK)
        return QMM__ST_FAIL("%s: tensor '%.200s' has an unknown dtype", fn, name);
    if (doc->v[sp].type != QMM__JSON_ARRAY) return QMM__ST_FAIL("%s: shape of tensor '%.200s' is not an array", fn, name);
    if (doc->v[off].type != QMM__JSON_ARRAY || doc->v[off].count != 2)
        return QMM__ST_FAIL("%s: data_offsets of tensor '%.200s' is not an array of two integers", fn, name);

    size_t elements = 1;
    bool overflow = false;
    size_t e = sp + 1;
    for (size_t d = 0; d < doc->v[sp].count; d++, e = doc->v[e].next) {
        uint64_t x;
        if (!qmm__json_u64(doc, text, e, &x) || x > SIZE_MAX)
            return QMM__ST_FAIL("%s: shape of tensor '%.200s' holds something other than a size", fn, name);
        dims[d] = (size_t)x;
        if (!qmm__mul_size(elements, (size_t)x, &elements)) overflow = true;
    }
    /* A zero extent makes the tensor empty whatever the others are. */
    for (size_t d = 0; d < doc->v[sp].count; d++)
        if (dims[d] == 0) elements = 0, overflow = false;
    uint64_t b, en;
    if (!qmm__json_u64(doc, text, off + 1, &b) || !qmm__json_u64(doc, text, doc->v[off + 1].next, &en))
        return QMM__ST_FAIL("%s: data_offsets of tensor '%.200s' are not unsigned integers", fn, name);
    if (b > en)
        return QMM__ST_FAIL("%s: data_offsets [%llu, %llu] of tensor '%.200s' are reversed", fn, (unsigned long long)b,
                            (unsigned long long)en, name);
    if (en > data_len)
        return QMM__ST_FAIL("%s: data_offsets [%llu, %llu] of tensor '%.200s' run past the data area of %zu bytes", fn,
                            (unsigned long long)b, (unsigned long long)en, name, data_len);
    const size_t bits = (size_t)qmm__st_dtype_bits(t->dtype);
    size_t total_bits;
    if (overflow || !qmm__mul_size(elements, bits, &total_bits))
        return QMM__ST_FAIL("%s: shape of tensor '%.200s' is too large", fn, name);
    if (total_bits % 8 != 0)
        return QMM__ST_FAIL("%s: tensor '%.200s' of %zu %s elements does not fill whole bytes", fn, name, elements,
                            qmm_st_dtype_name(t->dtype));
    if (total_bits / 8 != en - b)
        return QMM__ST_FAIL("%s: tensor '%.200s': shape and dtype %s give %zu bytes, data_offsets [%llu, %llu] hold %llu",
                            fn, name, qmm_st_dtype_name(t->dtype), total_bits / 8, (unsigned long long)b,
                            (unsigned long long)en, (unsigned long long)(en - b));
    t->name = name;
    t->ndim = doc->v[sp].count;
    t->shape = dims;
    t->elements = elements;
    t->begin = (size_t)b;
    t->end = (size_t)en;
    return QMM_OK;
}

static qmm_status qmm__st_parse_header(const char *fn, qmm__st_shard *sh, size_t shard_index, qmm__st_tensor **tensors,
                                       size_t *count)
{
    if (sh->size < 8)
        return QMM__ST_FAIL("%s: truncated file: %zu bytes, a safetensors file starts with an 8-byte header length", fn,
                            sh->size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | sh->base[i];
    if (n > QMM_SAFETENSORS_MAX_HEADER)
        return QMM__ST_FAIL("%s: header length %llu exceeds the limit of %u bytes", fn, (unsigned long long)n,
                            QMM_SAFETENSORS_MAX_HEADER);
    if (n > sh->size - 8)
        return QMM__ST_FAIL("%s: header length %llu runs past the end of the file (%zu bytes)", fn, (unsigned long long)n,
                            sh->size);
    if (n == 0 || sh->base[8] != '{') return QMM__ST_FAIL("%s: the header does not start with '{'", fn);
    sh->data_start = 8 + (size_t)n;
    const size_t data_len = sh->size - sh->data_start;
    QMM__TRY(qmm__json_parse(fn, "safetensors header", (const char *)sh->base + 8, (size_t)n, &sh->doc));
    const qmm__json *doc = &sh->doc;
    const char *dup;
    if (qmm__json_has_duplicate_key(doc, 0, &dup)) return QMM__ST_FAIL("%s: tensor name '%.200s' appears twice", fn, dup);

    /* Room for every extent at once: no entry has more extents than the document has values. */
    size_t members = doc->v[0].count, total_dims = 0;
    for (size_t i = 1, m = 0; m < members; m++, i = doc->v[i + 1].next) {
        size_t sp = qmm__json_member(doc, i + 1, "shape");
        if (sp != QMM__JSON_NONE && doc->v[sp].type == QMM__JSON_ARRAY) total_dims += doc->v[sp].count;
    }
    sh->dims = malloc((total_dims ? total_dims : 1) * sizeof *sh->dims);
    qmm__st_tensor *all = realloc(*tensors, (*count + members + 1) * sizeof *all);
    if (all) *tensors = all;
    if (!sh->dims || !all) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory for %zu tensors", fn, members);
    qmm__st_tensor *mine = all + *count;
    size_t found = 0, dims_used = 0;
    for (size_t i = 1, m = 0; m < members; m++, i = doc->v[i + 1].next) {
        if (strcmp(qmm__json_str(doc, i), "__metadata__") == 0) {
            QMM__TRY(qmm__st_metadata(fn, sh, i + 1));
            continue;
        }
        qmm__st_tensor t = {0};
        QMM__TRY(qmm__st_entry(fn, sh, i, data_len, sh->dims + dims_used, &t));
        dims_used += t.ndim;
        t.shard = shard_index;
        mine[found++] = t;
    }
    qsort(mine, found, sizeof *mine, qmm__cmp_tensor_offset);
    size_t expected = 0;
    for (size_t j = 0; j < found; j++) {
        if (mine[j].begin != expected)
            return QMM__ST_FAIL("%s: tensor '%.200s' at data_offsets [%zu, %zu] %s", fn, mine[j].name, mine[j].begin,
                                mine[j].end,
                                mine[j].begin < expected ? "overlaps the tensor before it" : "leaves a gap before it");
        expected = mine[j].end;
    }
    if (expected != data_len)
        return QMM__ST_FAIL("%s: the tensors cover %zu bytes of a data area of %zu bytes", fn, expected, data_len);
    *count += found;
    return QMM_OK;
}

qmm_status qmm__st_parse(const char *fn, qmm__st_shard *sh, size_t shard_index, qmm__st_tensor **tensors, size_t *count)
{
    qmm_status st = qmm__st_parse_header(fn, sh, shard_index, tensors, count);
    if (st != QMM_OK) {
        qmm__json_free(&sh->doc);
        free(sh->dims);
        free(sh->meta_keys);
        free(sh->meta_values);
        sh->dims = NULL;
        sh->meta_keys = sh->meta_values = NULL;
        sh->meta_count = 0;
    }
    return st;
}

void qmm__st_shard_free(qmm__st_shard *sh)
{
    qmm__json_free(&sh->doc);
    free(sh->dims);
    free(sh->meta_keys);
    free(sh->meta_values);
    free(sh->name);
}
