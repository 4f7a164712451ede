/* Conventions of quantized checkpoints: which tensors make up one quantized Linear weight.
 *   modelopt NVFP4  X.weight U8 (N, K/2), X.weight_scale F8_E4M3 (N, K/16), X.weight_scale_2 F32 scalar,
 *                   X.input_scale F32 scalar (the activation scale)
 *   dense MXFP4     X.weight U8 (N, K/2), X.weight_scale U8 / F8_E8M0 (N, K/32)
 *   modelopt FP8    X.weight F8_E4M3 (N, K), X.weight_scale F32 scalar (or per channel, (N) / (N, 1))
 *   gpt-oss MXFP4   X_blocks U8 (E, N, K/32, 16), X_scales U8 (E, N, K/32): E experts of N x K
 * Nibbles are low first in every one of them, as in qmm's own layout, so the bytes are copied as they
 * are and a round trip is exact. Scalars are read with memcpy: tensor data is only byte-aligned. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "../core/format.h"
#include "../core/weight.h"
#include "safetensors.h"

typedef struct qmm__ckpt_parts {
    qmm_tensor_view weight, scale, scale2, blocks;
    bool gpt_oss;
} qmm__ckpt_parts;

/* name + suffix into buf (names longer than buf are not found, which is what they are). */
static const qmm__st_tensor *qmm__find_suffixed(const qmm_safetensors *f, const char *name, const char *suffix,
                                                qmm_tensor_view *view)
{
    size_t a = strlen(name), b = strlen(suffix);
    char *full = malloc(a + b + 1);
    if (!full) return NULL;
    memcpy(full, name, a);
    memcpy(full + a, suffix, b + 1);
    const qmm__st_tensor *t = qmm__st_find(f, full);
    free(full);
    if (t) qmm__st_view(f, t, view);
    return t;
}

static bool qmm__is_scalar(const qmm_tensor_view *v) { return v->elements == 1 && v->ndim <= 2; }

static float qmm__read_f32(const void *p)
{
    float x;
    memcpy(&x, p, sizeof x); /* safetensors is little-endian, as every host qmm builds for */
    return x;
}

static qmm_status qmm__ckpt_find(const char *fn, const qmm_safetensors *f, const char *name, qmm_checkpoint_weight *info,
                                 qmm__ckpt_parts *parts)
{
    qmm_checkpoint_weight r = {0};
    qmm__ckpt_parts p = {0};
    r.count = 1;
    if (qmm__find_suffixed(f, name, ".weight", &p.weight)) {
        const qmm_tensor_view *w = &p.weight;
        if (w->ndim != 2 || w->shape[0] == 0 || w->shape[1] == 0)
            return qmm__fail(QMM_ERR_MALFORMED, "%s: '%.200s.weight' is not a non-empty 2-D tensor", fn, name);
        r.n = w->shape[0];
        bool has_scale = qmm__find_suffixed(f, name, ".weight_scale", &p.scale) != NULL;
        if (w->dtype == QMM_ST_U8) {
            if (!has_scale)
                return qmm__fail(QMM_ERR_MALFORMED, "%s: packed U8 '%.200s.weight' has no weight_scale", fn, name);
            if (w->shape[1] > (size_t)-1 / 2 - 64) return qmm__fail(QMM_ERR_MALFORMED, "%s: '%.200s' too wide", fn, name);
            r.k = 2 * w->shape[1];
            if (p.scale.dtype == QMM_ST_F8_E4M3) {
                r.format = QMM_FORMAT_NVFP4;
                if (!qmm__find_suffixed(f, name, ".weight_scale_2", &p.scale2))
                    return qmm__fail(QMM_ERR_MALFORMED, "%s: NVFP4 '%.200s' has no weight_scale_2", fn, name);
            } else if (p.scale.dtype == QMM_ST_U8 || p.scale.dtype == QMM_ST_F8_E8M0) {
                r.format = QMM_FORMAT_MXFP4;
            } else {
                return qmm__fail(QMM_ERR_MALFORMED, "%s: '%.200s.weight_scale' has dtype %s, not F8_E4M3, U8 or F8_E8M0", fn,
                                 name, qmm_st_dtype_name(p.scale.dtype));
            }
            const size_t block = r.format == QMM_FORMAT_NVFP4 ? 16 : 32, spr = (r.k + block - 1) / block;
            if (p.scale.ndim != 2 || p.scale.shape[0] != r.n || p.scale.shape[1] != spr)
                return qmm__fail(QMM_ERR_MALFORMED, "%s: '%.200s.weight_scale' is not (%zu, %zu) for a %zu x %zu weight", fn,
                                 name, r.n, spr, r.n, r.k);
        } else if (w->dtype == QMM_ST_F8_E4M3) {
            r.k = w->shape[1];
            if (!has_scale || p.scale.dtype != QMM_ST_F32)
                return qmm__fail(QMM_ERR_MALFORMED, "%s: FP8 '%.200s.weight' has no F32 weight_scale", fn, name);
            /* (N, 1) is per channel even for N = 1; a scalar or [1] is per tensor; (N) is per channel. */
            if (p.scale.ndim == 2 && p.scale.shape[0] == r.n && p.scale.shape[1] == 1) {
                r.format = QMM_FORMAT_FP8_CHANNEL;
            } else if (qmm__is_scalar(&p.scale)) {
                r.format = QMM_FORMAT_FP8_TENSOR;
            } else if (p.scale.ndim == 1 && p.scale.shape[0] == r.n) {
                r.format = QMM_FORMAT_FP8_CHANNEL;
            } else {
                return qmm__fail(QMM_ERR_MALFORMED, "%s: '%.200s.weight_scale' is neither a scalar nor (%zu) / (%zu, 1)", fn,
                                 name, r.n, r.n);
            }
        } else if (w->dtype == QMM_ST_BF16) {
            r.k = w->shape[1];
            r.format = QMM_FORMAT_BF16;
        } else {
            return qmm__fail(QMM_ERR_UNSUPPORTED, "%s: '%.200s.weight' is %s, not a quantized or bf16 weight", fn, name,
                             qmm_st_dtype_name(w->dtype));
        }
        if (r.format == QMM_FORMAT_NVFP4 || r.format == QMM_FORMAT_FP8_TENSOR) {
            const qmm_tensor_view *s = r.format == QMM_FORMAT_NVFP4 ? &p.scale2 : &p.scale;
            if (s->dtype != QMM_ST_F32 || !qmm__is_scalar(s) || !isfinite(qmm__read_f32(s->data)))
                return qmm__fail(QMM_ERR_MALFORMED, "%s: the tensor scale of '%.200s' is not one finite F32", fn, name);
        }
        if (r.format == QMM_FORMAT_FP8_CHANNEL)
            for (size_t i = 0; i < r.n; i++)
                if (!isfinite(qmm__read_f32((const uint8_t *)p.scale.data + 4 * i)))
                    return qmm__fail(QMM_ERR_MALFORMED, "%s: channel scale %zu of '%.200s' is not finite", fn, i, name);
        qmm_tensor_view in;
        if (qmm__find_suffixed(f, name, ".input_scale", &in) && in.dtype == QMM_ST_F32 && qmm__is_scalar(&in)) {
            r.has_input_scale = 1;
            r.input_scale = qmm__read_f32(in.data);
        }
    } else if (qmm__find_suffixed(f, name, "_blocks", &p.blocks)) {
        const qmm_tensor_view *b = &p.blocks;
        p.gpt_oss = true;
        if (!qmm__find_suffixed(f, name, "_scales", &p.scale))
            return qmm__fail(QMM_ERR_MALFORMED, "%s: '%.200s_blocks' has no '_scales'", fn, name);
        const size_t nd = b->ndim;
        if (b->dtype != QMM_ST_U8 || nd < 3 || b->shape[nd - 1] != 16 || b->shape[nd - 2] == 0 || b->shape[nd - 3] == 0)
            return qmm__fail(QMM_ERR_MALFORMED, "%s: '%.200s_blocks' is not U8 (..., N, K/32, 16)", fn, name);
        if ((p.scale.dtype != QMM_ST_U8 && p.scale.dtype != QMM_ST_F8_E8M0) || p.scale.ndim != nd - 1)
            return qmm__fail(QMM_ERR_MALFORMED, "%s: '%.200s_scales' is not U8 (..., N, K/32)", fn, name);
        for (size_t d = 0; d + 1 < nd; d++)
            if (p.scale.shape[d] != b->shape[d])
                return qmm__fail(QMM_ERR_MALFORMED, "%s: shapes of '%.200s_blocks' and '_scales' disagree", fn, name);
        r.format = QMM_FORMAT_MXFP4;
        r.n = b->shape[nd - 3];
        if (b->shape[nd - 2] > ((size_t)-1 - 64) / 32) return qmm__fail(QMM_ERR_MALFORMED, "%s: '%.200s' too wide", fn, name);
        r.k = 32 * b->shape[nd - 2];
        r.count = 1;
        for (size_t d = 0; d + 3 < nd; d++) r.count *= b->shape[d]; /* the product is the tensor's, checked */
        if (r.count == 0) return qmm__fail(QMM_ERR_MALFORMED, "%s: '%.200s_blocks' holds no experts", fn, name);
    } else {
        return qmm__fail(QMM_ERR_NOT_FOUND, "%s: no weight '%.200s' ('.weight' or '_blocks')", fn, name);
    }
    *info = r;
    *parts = p;
    return QMM_OK;
}

/* qmm__ckpt_find, then matrix `index` of the weight must exist (a stack of experts holds count). */
static qmm_status qmm__ckpt_find_matrix(const char *fn, const qmm_safetensors *f, const char *name, size_t index,
                                        qmm_checkpoint_weight *info, qmm__ckpt_parts *parts)
{
    QMM__TRY(qmm__ckpt_find(fn, f, name, info, parts));
    if (index >= info->count)
        return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: matrix %zu of '%.200s', which has %zu", fn, index, name, info->count);
    return QMM_OK;
}

qmm_status qmm_checkpoint_weight_info(const qmm_safetensors *f, const char *name, qmm_checkpoint_weight *out)
{
    static const char fn[] = "qmm_checkpoint_weight_info";
    if (!f || !name || !out) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: NULL argument", fn);
    qmm__ckpt_parts parts;
    return qmm__ckpt_find(fn, f, name, out, &parts);
}

qmm_status qmm_checkpoint_weight_load(const qmm_safetensors *f, const char *name, size_t index, qmm_weight *out)
{
    static const char fn[] = "qmm_checkpoint_weight_load";
    if (!f || !name || !out) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: NULL argument", fn);
    qmm_checkpoint_weight info;
    qmm__ckpt_parts p;
    QMM__TRY(qmm__ckpt_find_matrix(fn, f, name, index, &info, &p));
    qmm_weight w;
    QMM__TRY(qmm_weight_alloc(&w, info.format, info.n, info.k));
    if (p.gpt_oss) {
        /* Matrix e of the experts starts e matrices into both tensors; every size fits the checked tensors. */
        memcpy(w.data, (const uint8_t *)p.blocks.data + index * w.data_bytes, w.data_bytes);
        memcpy(w.block_scales, (const uint8_t *)p.scale.data + index * w.block_scale_bytes, w.block_scale_bytes);
    } else {
        memcpy(w.data, p.weight.data, w.data_bytes);
        if (w.block_scales) memcpy(w.block_scales, p.scale.data, w.block_scale_bytes);
        if (info.format == QMM_FORMAT_NVFP4) w.tensor_scale = qmm__read_f32(p.scale2.data);
        if (info.format == QMM_FORMAT_FP8_TENSOR) w.tensor_scale = qmm__read_f32(p.scale.data);
        if (info.format == QMM_FORMAT_FP8_CHANNEL) memcpy(w.channel_scales, p.scale.data, info.n * sizeof(float));
    }
    *out = w;
    return QMM_OK;
}

static char *qmm__suffixed(const char *name, const char *suffix)
{
    size_t a = strlen(name), b = strlen(suffix);
    char *s = malloc(a + b + 1);
    if (s) {
        memcpy(s, name, a);
        memcpy(s + a, suffix, b + 1);
    }
    return s;
}

typedef struct qmm__out_tensor {
    const char *suffix;
    qmm_st_dtype dtype;
    size_t ndim;
    size_t shape[4];
    const void *data;
    size_t bytes;
} qmm__out_tensor;

/* Adds the tensors after checking that none of their names is taken, so a failure other than a write
 * error leaves the writer as it was. */
static qmm_status qmm__add_tensors(const char *fn, qmm_safetensors_writer *w, const char *name,
                                   const qmm__out_tensor *t, size_t count, const qmm_weight *experts, size_t nexp)
{
    char *names[3] = {0};
    qmm_status st = QMM_OK;
    for (size_t i = 0; i < count && st == QMM_OK; i++) {
        names[i] = qmm__suffixed(name, t[i].suffix);
        if (!names[i]) st = qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        else if (qmm__st_writer_has(w, names[i]))
            st = qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: tensor '%.200s' was added already", fn, names[i]);
    }
    const void **parts = NULL;
    size_t *part_bytes = NULL;
    if (st == QMM_OK && nexp) {
        parts = malloc(nexp * sizeof *parts);
        part_bytes = malloc(nexp * sizeof *part_bytes);
        if (!parts || !part_bytes) st = qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    for (size_t i = 0; i < count && st == QMM_OK; i++) {
        if (!nexp) {
            st = qmm__st_writer_add_parts(fn, w, names[i], t[i].dtype, t[i].ndim, t[i].shape, &t[i].data, &t[i].bytes, 1);
            continue;
        }
        for (size_t e = 0; e < nexp; e++) { /* experts: data (i = 0) or block scales (i = 1) of each */
            parts[e] = i == 0 ? (const void *)experts[e].data : (const void *)experts[e].block_scales;
            part_bytes[e] = t[i].bytes;
        }
        st = qmm__st_writer_add_parts(fn, w, names[i], t[i].dtype, t[i].ndim, t[i].shape, parts, part_bytes, nexp);
    }
    free(parts);
    free(part_bytes);
    for (size_t i = 0; i < 3; i++) free(names[i]);
    return st;
}

qmm_status qmm_safetensors_writer_add_weight(qmm_safetensors_writer *w, const char *name, const qmm_weight *q)
{
    static const char fn[] = "qmm_safetensors_writer_add_weight";
    if (!w || !name || !q) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: NULL argument", fn);
    QMM__TRY(qmm__weight_validate(fn, q));
    if (q->scale_layout != QMM_SCALE_LAYOUT_CANONICAL)
        return qmm__fail(QMM_ERR_UNSUPPORTED, "%s: checkpoints hold the canonical scale layout; convert first", fn);
    qmm_weight_size s;
    QMM__TRY(qmm__weight_size(fn, q->format, QMM_SCALE_LAYOUT_CANONICAL, q->n, q->k, &s));
    qmm__out_tensor t[3];
    size_t count = 0;
    const size_t n = q->n;
    switch (q->format) {
    case QMM_FORMAT_NVFP4:
    case QMM_FORMAT_MXFP4: {
        const bool nv = q->format == QMM_FORMAT_NVFP4;
        t[count++] = (qmm__out_tensor){".weight", QMM_ST_U8, 2, {n, s.row_bytes}, q->data, s.data_bytes};
        t[count++] = (qmm__out_tensor){".weight_scale", nv ? QMM_ST_F8_E4M3 : QMM_ST_U8, 2, {n, s.scales_per_row},
                                       q->block_scales, s.block_scale_bytes};
        if (nv) t[count++] = (qmm__out_tensor){".weight_scale_2", QMM_ST_F32, 0, {0}, &q->tensor_scale, 4};
        break;
    }
    case QMM_FORMAT_FP8_TENSOR:
    case QMM_FORMAT_FP8_CHANNEL:
        t[count++] = (qmm__out_tensor){".weight", QMM_ST_F8_E4M3, 2, {n, q->k}, q->data, s.data_bytes};
        if (q->format == QMM_FORMAT_FP8_TENSOR)
            t[count++] = (qmm__out_tensor){".weight_scale", QMM_ST_F32, 0, {0}, &q->tensor_scale, 4};
        else
            t[count++] = (qmm__out_tensor){".weight_scale", QMM_ST_F32, 2, {n, 1}, q->channel_scales, n * sizeof(float)};
        break;
    default: /* BF16 */
        t[count++] = (qmm__out_tensor){".weight", QMM_ST_BF16, 2, {n, q->k}, q->data, s.data_bytes};
        break;
    }
    return qmm__add_tensors(fn, w, name, t, count, NULL, 0);
}

qmm_status qmm_safetensors_writer_add_experts(qmm_safetensors_writer *w, const char *name, const qmm_weight *experts,
                                              size_t count)
{
    static const char fn[] = "qmm_safetensors_writer_add_experts";
    if (!w || !name || !experts) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: NULL argument", fn);
    if (count == 0) return qmm__fail(QMM_ERR_INVALID_SIZE, "%s: no experts", fn);
    for (size_t e = 0; e < count; e++) {
        QMM__TRY(qmm__weight_validate(fn, &experts[e]));
        if (experts[e].format != QMM_FORMAT_MXFP4 || experts[e].n != experts[0].n || experts[e].k != experts[0].k)
            return qmm__fail(QMM_ERR_INVALID_WEIGHT, "%s: expert %zu is not MXFP4 of %zu x %zu like expert 0", fn, e,
                             experts[0].n, experts[0].k);
        if (experts[e].scale_layout != QMM_SCALE_LAYOUT_CANONICAL)
            return qmm__fail(QMM_ERR_UNSUPPORTED, "%s: checkpoints hold the canonical scale layout; convert first", fn);
    }
    const size_t n = experts[0].n, k = experts[0].k;
    if (k % 32 != 0)
        return qmm__fail(QMM_ERR_UNSUPPORTED, "%s: gpt-oss blocks hold whole 32-element blocks; k = %zu", fn, k);
    size_t total;
    if (!qmm__mul_size(count, n * (k / 2), &total))
        return qmm__fail(QMM_ERR_SIZE_OVERFLOW, "%s: %zu experts of %zu x %zu overflow", fn, count, n, k);
    const qmm__out_tensor t[2] = {
        {"_blocks", QMM_ST_U8, 4, {count, n, k / 32, 16}, NULL, n * (k / 2)},
        {"_scales", QMM_ST_U8, 3, {count, n, k / 32}, NULL, n * (k / 32)},
    };
    return qmm__add_tensors(fn, w, name, t, 2, experts, count);
}

qmm_status qmm_checkpoint_experts_view(const qmm_safetensors *f, const char *name, qmm_weight *out)
{
    static const char fn[] = "qmm_checkpoint_experts_view";
    if (!f || !name || !out) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: NULL argument", fn);
    qmm_checkpoint_weight info;
    qmm__ckpt_parts p;
    QMM__TRY(qmm__ckpt_find(fn, f, name, &info, &p));
    if (!p.gpt_oss)
        return qmm__fail(QMM_ERR_UNSUPPORTED, "%s: '%.200s' is not a stack of experts in one tensor (name_blocks); "
                         "qmm_checkpoint_experts_load gathers experts stored one by one", fn, name);
    qmm_weight w;
    QMM__TRY(qmm_weight_init_experts(&w, QMM_FORMAT_MXFP4, info.count, info.n, info.k));
    /* the file's bytes, borrowed: the mapping is read-only and lives until qmm_safetensors_close */
    w.data = (uint8_t *)(uintptr_t)p.blocks.data;
    w.data_bytes = p.blocks.bytes;
    w.block_scales = (uint8_t *)(uintptr_t)p.scale.data;
    w.block_scale_bytes = p.scale.bytes;
    QMM__TRY(qmm__weight_validate(fn, &w));
    *out = w;
    return QMM_OK;
}

/* pattern with its one '*' replaced by the decimal i, malloc'd. */
static char *qmm__expert_name(const char *pattern, size_t i)
{
    const char *star = strchr(pattern, '*');
    char num[24];
    const int len = snprintf(num, sizeof num, "%zu", i);
    const size_t a = (size_t)(star - pattern), b = strlen(star + 1);
    char *s = malloc(a + (size_t)len + b + 1);
    if (!s) return NULL;
    memcpy(s, pattern, a);
    memcpy(s + a, num, (size_t)len);
    memcpy(s + a + (size_t)len, star + 1, b + 1);
    return s;
}

qmm_status qmm_checkpoint_experts_load(const qmm_safetensors *f, const char *name, qmm_weight *out)
{
    static const char fn[] = "qmm_checkpoint_experts_load";
    if (!f || !name || !out) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: NULL argument", fn);
    const char *star = strchr(name, '*');
    if (!star) { /* one tensor holding the stack: a copy of its view */
        qmm_weight v, w;
        QMM__TRY(qmm_checkpoint_experts_view(f, name, &v));
        QMM__TRY(qmm_weight_alloc_experts(&w, v.format, v.experts, v.n, v.k));
        memcpy(w.data, v.data, w.data_bytes);
        memcpy(w.block_scales, v.block_scales, w.block_scale_bytes);
        *out = w;
        return QMM_OK;
    }
    if (strchr(star + 1, '*')) return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: '%.200s' has more than one '*'", fn, name);
    /* experts stored one by one (modelopt): name with '*' = 0, 1, 2, ... until one is missing */
    qmm_checkpoint_weight first = {0};
    size_t experts = 0;
    for (;; experts++) {
        char *module = qmm__expert_name(name, experts);
        if (!module) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        qmm_checkpoint_weight info;
        qmm__ckpt_parts p;
        const qmm_status st = qmm__ckpt_find(fn, f, module, &info, &p);
        const bool same = st == QMM_OK && (experts == 0 || (info.format == first.format && info.n == first.n &&
                                                            info.k == first.k)) && info.count == 1;
        free(module);
        if (st == QMM_ERR_NOT_FOUND) break;
        if (st != QMM_OK) return st;
        if (!same) return qmm__fail(QMM_ERR_MALFORMED, "%s: expert %zu of '%.200s' differs from expert 0 in format or shape",
                                    fn, experts, name);
        if (experts == 0) first = info;
    }
    if (experts == 0) return qmm__fail(QMM_ERR_NOT_FOUND, "%s: no expert '%.200s' (the '*' from 0)", fn, name);
    qmm_weight w;
    QMM__TRY(qmm_weight_alloc_experts(&w, first.format, experts, first.n, first.k));
    for (size_t e = 0; e < experts; e++) {
        char *module = qmm__expert_name(name, e);
        qmm_weight one;
        const qmm_status st = module ? qmm_checkpoint_weight_load(f, module, 0, &one)
                                     : qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        free(module);
        if (st != QMM_OK) {
            qmm_weight_free(&w);
            return st;
        }
        memcpy(w.data + e * one.data_bytes, one.data, one.data_bytes);
        if (one.block_scales) memcpy(w.block_scales + e * one.block_scale_bytes, one.block_scales, one.block_scale_bytes);
        if (one.channel_scales) memcpy(w.channel_scales + e * w.n, one.channel_scales, w.n * sizeof(float));
        if (w.tensor_scales) w.tensor_scales[e] = one.tensor_scale;
        qmm_weight_free(&one);
    }
    *out = w;
    return QMM_OK;
}

qmm_status qmm_checkpoint_weight_load_shard(const qmm_safetensors *f, const char *name, size_t index, qmm_shard_dim dim,
                                            size_t parts, size_t rank, qmm_weight *out)
{
    static const char fn[] = "qmm_checkpoint_weight_load_shard";
    if (!f || !name || !out) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: NULL argument", fn);
    qmm_checkpoint_weight info;
    qmm__ckpt_parts p;
    QMM__TRY(qmm__ckpt_find_matrix(fn, f, name, index, &info, &p));
    size_t n, k;
    QMM__TRY(qmm_weight_shard_shape(info.format, info.n, info.k, dim, parts, rank, &n, &k));
    /* the whole matrix as a view of the mapped file (codes and block scales are bytes: any alignment),
     * so that cutting it reads only the part's bytes; channel scales are copied (floats need alignment) */
    qmm_weight view, part;
    qmm_weight_size s;
    QMM__TRY(qmm_weight_init(&view, info.format, info.n, info.k));
    QMM__TRY(qmm__weight_size(fn, info.format, QMM_SCALE_LAYOUT_CANONICAL, info.n, info.k, &s));
    const uint8_t *data = p.gpt_oss ? (const uint8_t *)p.blocks.data + index * s.data_bytes : (const uint8_t *)p.weight.data;
    const uint8_t *scales = s.block_scale_bytes ? (const uint8_t *)p.scale.data + (p.gpt_oss ? index * s.block_scale_bytes : 0)
                                                : NULL;
    view.data = (uint8_t *)(uintptr_t)data, view.data_bytes = s.data_bytes;
    view.block_scales = (uint8_t *)(uintptr_t)scales, view.block_scale_bytes = s.block_scale_bytes;
    float *channels = NULL;
    if (info.format == QMM_FORMAT_NVFP4) view.tensor_scale = qmm__read_f32(p.scale2.data);
    if (info.format == QMM_FORMAT_FP8_TENSOR) view.tensor_scale = qmm__read_f32(p.scale.data);
    if (info.format == QMM_FORMAT_FP8_CHANNEL) {
        if (!(channels = malloc(info.n * sizeof(float)))) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        memcpy(channels, p.scale.data, info.n * sizeof(float));
        view.channel_scales = channels, view.channel_scale_count = info.n;
    }
    qmm_status st = qmm_weight_alloc(&part, info.format, n, k);
    if (st == QMM_OK) {
        st = qmm_weight_shard(&view, dim, parts, rank, &part);
        if (st != QMM_OK) qmm_weight_free(&part);
    }
    free(channels);
    if (st == QMM_OK) *out = part;
    return st;
}
