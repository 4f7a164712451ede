#include "io_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool tool_ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

char *tool_strip(const char *s, size_t cut)
{
    size_t n = strlen(s);
    n = cut < n ? n - cut : 0;
    char *p = malloc(n + 1);
    if (!p) return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

float *tool_view_floats(const qmm_tensor_view *v)
{
    if (v->dtype != QMM_ST_F32 && v->dtype != QMM_ST_F16 && v->dtype != QMM_ST_BF16) return NULL;
    float *out = malloc((v->elements ? v->elements : 1) * sizeof *out);
    if (!out) return NULL;
    const unsigned char *p = v->data;
    for (size_t i = 0; i < v->elements; i++) {
        if (v->dtype == QMM_ST_F32) {
            memcpy(&out[i], p + 4 * i, 4);
        } else {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            out[i] = v->dtype == QMM_ST_BF16 ? qmm_bf16_to_fp32(h) : qmm_fp16_to_fp32(h);
        }
    }
    return out;
}

const char *tool_shape_text(const qmm_tensor_view *v, char *buf, size_t cap)
{
    size_t pos = 0;
    pos += (size_t)snprintf(buf, cap, "(");
    for (size_t d = 0; d < v->ndim && pos < cap; d++)
        pos += (size_t)snprintf(buf + pos, cap - pos, "%s%zu", d ? ", " : "", v->shape[d]);
    if (pos < cap) snprintf(buf + pos, cap - pos, ")");
    return buf;
}

const char *tool_bytes_text(double bytes, char *buf, size_t cap)
{
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB"};
    int u = 0;
    while (bytes >= 1000.0 && u < 4) bytes /= 1000.0, u++;
    snprintf(buf, cap, u ? "%.2f %s" : "%.0f %s", bytes, units[u]);
    return buf;
}

void tool_progress(const char *what, size_t done, size_t total, const char *name)
{
    if (!isatty(STDERR_FILENO)) return;
    if (done >= total) {
        fprintf(stderr, "\r\033[K");
    } else {
        char safe[128];
        fprintf(stderr, "\r\033[K%s [%zu/%zu] %s", what, done, total, qmm_text_escape(name, safe, sizeof safe));
    }
    fflush(stderr);
}

const char *tool_weight_part(const char *name, char **module)
{
    static const char *const parts[] = {".weight_scale_2", ".weight_scale", ".input_scale", ".weight", "_blocks", "_scales"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (tool_ends_with(name, parts[i])) {
            *module = tool_strip(name, strlen(parts[i]));
            return *module ? parts[i] : NULL;
        }
    }
    return NULL;
}
