/* The quantization description of a checkpoint folder: modelopt's hf_quant_config.json and the
 * "quantization_config" member of config.json (modelopt style for NVFP4 / FP8, gpt-oss style for MXFP4). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "../core/format.h"
#include "fileutil.h"
#include "json.h"
#include "qmm_io.h"

#define QMM__CONFIG_MAX (64u << 20) /* config files are kilobytes; anything past this is not one */

typedef struct qmm__algo {
    const char *name;
    qmm_format format;
    int group_size;
} qmm__algo;

static const qmm__algo qmm__algos[] = {
    {"NVFP4", QMM_FORMAT_NVFP4, 16},
    {"MXFP4", QMM_FORMAT_MXFP4, 32},
    {"FP8", QMM_FORMAT_FP8_TENSOR, 0},
    {"FP8_PER_CHANNEL_PER_TOKEN", QMM_FORMAT_FP8_CHANNEL, 0},
};

static const qmm__algo *qmm__algo_by_name(const char *name)
{
    for (size_t i = 0; i < sizeof qmm__algos / sizeof qmm__algos[0]; i++)
        if (strcmp(qmm__algos[i].name, name) == 0) return &qmm__algos[i];
    return NULL;
}

static const qmm__algo *qmm__algo_by_format(qmm_format f)
{
    for (size_t i = 0; i < sizeof qmm__algos / sizeof qmm__algos[0]; i++)
        if (qmm__algos[i].format == f) return &qmm__algos[i];
    return NULL;
}

/* Fills *out from a quantization object: {quant_algo, group_size, exclude_modules} (modelopt) or
 * {quant_method: "mxfp4" | "fp8", modules_to_not_convert} (config.json). */
static qmm_status qmm__config_from(const char *fn, const char *path, const qmm__json *doc, const char *text, size_t obj,
                                   qmm_quant_config *out)
{
    qmm_quant_config r;
    memset(&r, 0, sizeof r);
    if (doc->v[obj].type != QMM__JSON_OBJECT)
        return qmm__fail(QMM_ERR_MALFORMED, "%s: the quantization of '%s' is not an object", fn, path);
    size_t algo = qmm__json_member(doc, obj, "quant_algo"), method = qmm__json_member(doc, obj, "quant_method");
    const char *name = NULL;
    if (algo != QMM__JSON_NONE && doc->v[algo].type == QMM__JSON_STRING) name = qmm__json_str(doc, algo);
    else if (method != QMM__JSON_NONE && doc->v[method].type == QMM__JSON_STRING) {
        const char *m = qmm__json_str(doc, method);
        name = strcmp(m, "mxfp4") == 0 ? "MXFP4" : strcmp(m, "fp8") == 0 ? "FP8" : m;
    }
    if (!name) return qmm__fail(QMM_ERR_MALFORMED, "%s: '%s' names no quant_algo or quant_method", fn, path);
    const qmm__algo *a = qmm__algo_by_name(name);
    if (!a) return qmm__fail(QMM_ERR_UNSUPPORTED, "%s: '%s' names quantization '%.64s', which qmm does not read", fn, path, name);
    r.format = a->format;
    r.group_size = a->group_size;
    snprintf(r.quant_algo, sizeof r.quant_algo, "%s", name);
    size_t gs = qmm__json_member(doc, obj, "group_size");
    uint64_t g;
    if (gs != QMM__JSON_NONE && doc->v[gs].type != QMM__JSON_NULL) {
        if (!qmm__json_u64(doc, text, gs, &g) || g > 1u << 20)
            return qmm__fail(QMM_ERR_MALFORMED, "%s: group_size in '%s' is not a small integer", fn, path);
        r.group_size = (int)g;
    }
    size_t ex = qmm__json_member(doc, obj, "exclude_modules");
    if (ex == QMM__JSON_NONE) ex = qmm__json_member(doc, obj, "modules_to_not_convert");
    if (ex != QMM__JSON_NONE && doc->v[ex].type == QMM__JSON_ARRAY) r.exclude_count = doc->v[ex].count;
    else if (ex != QMM__JSON_NONE && doc->v[ex].type != QMM__JSON_NULL)
        return qmm__fail(QMM_ERR_MALFORMED, "%s: the excluded modules in '%s' are not a list", fn, path);
    *out = r;
    return QMM_OK;
}

/* Reads dir/file and finds the quantization object (key1, then key2 within it when given). */
static qmm_status qmm__config_read_one(const char *fn, const char *dir, const char *file, const char *key,
                                       qmm_quant_config *out)
{
    char *path = qmm__path_join(dir, file), *text = NULL;
    if (!path) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    qmm__json doc = {0};
    qmm_status st = qmm__json_read_file(fn, path, file, QMM__CONFIG_MAX, &text, NULL, &doc);
    if (st == QMM_OK) {
        size_t obj = qmm__json_member(&doc, 0, key);
        if (doc.v[0].type != QMM__JSON_OBJECT) st = qmm__fail(QMM_ERR_MALFORMED, "%s: '%s' is not a JSON object", fn, path);
        else if (obj == QMM__JSON_NONE || doc.v[obj].type == QMM__JSON_NULL)
            st = qmm__fail(QMM_ERR_NOT_FOUND, "%s: '%s' has no \"%s\"", fn, path, key);
        else st = qmm__config_from(fn, path, &doc, text, obj, out);
    }
    if (st == QMM_OK) snprintf(out->source, sizeof out->source, "%s", file);
    qmm__json_free(&doc);
    free(text);
    free(path);
    return st;
}

qmm_status qmm_quant_config_read(const char *dir, qmm_quant_config *out)
{
    static const char fn[] = "qmm_quant_config_read";
    if (!dir || !out) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: NULL argument", fn);
    qmm_quant_config r;
    qmm_status st = qmm__config_read_one(fn, dir, "hf_quant_config.json", "quantization", &r);
    if (st == QMM_ERR_NOT_FOUND) st = qmm__config_read_one(fn, dir, "config.json", "quantization_config", &r);
    if (st == QMM_ERR_NOT_FOUND)
        return qmm__fail(QMM_ERR_NOT_FOUND, "%s: neither hf_quant_config.json nor config.json in '%s' describes a "
                                            "quantization", fn, dir);
    if (st == QMM_OK) *out = r;
    return st;
}

static void qmm__buf_names(qmm__buf *b, const char *const *names, size_t count)
{
    qmm__buf_str(b, "[");
    for (size_t i = 0; i < count; i++) {
        if (i) qmm__buf_str(b, ", ");
        qmm__buf_quote(b, names[i]);
    }
    qmm__buf_str(b, "]");
}

/* The "quantization_config" object of config.json. */
static void qmm__quantization_config(qmm__buf *b, const qmm__algo *a, const char *const *exclude, size_t count)
{
    if (a->format == QMM_FORMAT_MXFP4) {
        qmm__buf_str(b, "{\n    \"quant_method\": \"mxfp4\",\n    \"modules_to_not_convert\": ");
        qmm__buf_names(b, exclude, count);
        qmm__buf_str(b, "\n  }");
        return;
    }
    qmm__buf_str(b, "{\n    \"quant_method\": \"modelopt\",\n    \"quant_algo\": ");
    qmm__buf_quote(b, a->name);
    if (a->group_size) {
        qmm__buf_str(b, ",\n    \"group_size\": ");
        qmm__buf_u64(b, (uint64_t)a->group_size);
    }
    qmm__buf_str(b, ",\n    \"exclude_modules\": ");
    qmm__buf_names(b, exclude, count);
    qmm__buf_str(b, ",\n    \"producer\": {\"name\": \"qmm\", \"version\": \"");
    qmm__buf_str(b, qmm_version());
    qmm__buf_str(b, "\"}\n  }");
}

/* config.json: the source text with "quantization_config" replaced, or added as the last member. */
static qmm_status qmm__config_json(const char *fn, const char *src_path, const qmm__algo *a, const char *const *exclude,
                                   size_t count, qmm__buf *out)
{
    char *text;
    size_t len;
    qmm__json doc;
    QMM__TRY(qmm__json_read_file(fn, src_path, "config.json", QMM__CONFIG_MAX, &text, &len, &doc));
    qmm_status st = QMM_OK;
    qmm__buf q = {0};
    qmm__quantization_config(&q, a, exclude, count);
    if (doc.v[0].type != QMM__JSON_OBJECT) {
        st = qmm__fail(QMM_ERR_MALFORMED, "%s: '%s' is not a JSON object", fn, src_path);
    } else {
        size_t old = qmm__json_member(&doc, 0, "quantization_config");
        if (old != QMM__JSON_NONE) {
            qmm__buf_put(out, text, doc.v[old].start);
            qmm__buf_put(out, q.p ? q.p : "", q.len);
            qmm__buf_put(out, text + doc.v[old].end, len - doc.v[old].end);
        } else {
            size_t close = doc.v[0].end - 1; /* the root's '}' */
            size_t at = close;
            if (doc.v[0].count) { /* after the last member's value */
                size_t i = 1, last = 1;
                for (size_t m = 0; m < doc.v[0].count; m++, i = doc.v[i + 1].next) last = i + 1;
                at = doc.v[last].end;
                qmm__buf_put(out, text, at);
                qmm__buf_str(out, ",\n  \"quantization_config\": ");
            } else {
                qmm__buf_put(out, text, at);
                qmm__buf_str(out, "\n  \"quantization_config\": ");
            }
            qmm__buf_put(out, q.p ? q.p : "", q.len);
            if (!doc.v[0].count) qmm__buf_str(out, "\n");
            qmm__buf_put(out, text + at, len - at);
        }
        if (out->failed || q.failed) st = qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    qmm__buf_free(&q);
    qmm__json_free(&doc);
    free(text);
    return st;
}

qmm_status qmm_quant_config_write(const char *dir, qmm_format format, const char *const *exclude, size_t exclude_count,
                                  const char *config_json, unsigned flags)
{
    static const char fn[] = "qmm_quant_config_write";
    if (!dir || (exclude_count && !exclude)) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: NULL argument", fn);
    if (flags & ~QMM_WRITE_OVERWRITE) return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: unknown flags 0x%x", fn, flags);
    const qmm__algo *a = qmm__algo_by_format(format);
    if (!a) {
        if (!qmm__format_traits(format)) return qmm__fail(QMM_ERR_INVALID_ENUM, "%s: unknown format %d", fn, (int)format);
        return qmm__fail(QMM_ERR_INVALID_ENUM, "%s: %s is not a quantized format", fn, qmm__format_traits(format)->name);
    }
    for (size_t i = 0; i < exclude_count; i++)
        if (!exclude[i] || !qmm__utf8_valid(exclude[i], strlen(exclude[i])))
            return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: excluded module %zu is NULL or not UTF-8", fn, i);
    const bool overwrite = flags & QMM_WRITE_OVERWRITE;
    char *hf_path = qmm__path_join(dir, "hf_quant_config.json"), *cfg_path = qmm__path_join(dir, "config.json");
    qmm__buf hf = {0}, cfg = {0};
    qmm_status st = QMM_OK;
    if (!hf_path || !cfg_path) st = qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    else if (!overwrite && qmm__path_exists(hf_path))
        st = qmm__fail(QMM_ERR_EXISTS, "%s: '%s' exists (overwriting was not asked for)", fn, hf_path);
    else if (!overwrite && config_json && qmm__path_exists(cfg_path))
        st = qmm__fail(QMM_ERR_EXISTS, "%s: '%s' exists (overwriting was not asked for)", fn, cfg_path);
    if (st == QMM_OK && config_json) st = qmm__config_json(fn, config_json, a, exclude, exclude_count, &cfg);
    if (st == QMM_OK) {
        qmm__buf_str(&hf, "{\n  \"producer\": {\n    \"name\": \"qmm\",\n    \"version\": \"");
        qmm__buf_str(&hf, qmm_version());
        qmm__buf_str(&hf, "\"\n  },\n  \"quantization\": {\n    \"quant_algo\": ");
        qmm__buf_quote(&hf, a->name);
        qmm__buf_str(&hf, ",\n    \"kv_cache_quant_algo\": null");
        if (a->group_size) {
            qmm__buf_str(&hf, ",\n    \"group_size\": ");
            qmm__buf_u64(&hf, (uint64_t)a->group_size);
        }
        qmm__buf_str(&hf, ",\n    \"exclude_modules\": ");
        qmm__buf_names(&hf, exclude, exclude_count);
        qmm__buf_str(&hf, "\n  }\n}\n");
        if (hf.failed) st = qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    if (st == QMM_OK) st = qmm__write_file_atomic(fn, hf_path, hf.p, hf.len, overwrite);
    if (st == QMM_OK && config_json) st = qmm__write_file_atomic(fn, cfg_path, cfg.p, cfg.len, overwrite);
    qmm__buf_free(&hf);
    qmm__buf_free(&cfg);
    free(hf_path);
    free(cfg_path);
    return st;
}
