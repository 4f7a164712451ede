#include "parse.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool tool_is_digit(char c) { return c >= '0' && c <= '9'; }

bool tool_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    if (!s || !tool_is_digit(*s)) return false;
    uint64_t v = 0;
    for (; *s; s++) {
        if (!tool_is_digit(*s)) return false;
        const uint64_t d = (uint64_t)(*s - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    if (v < min || v > max) return false;
    *out = v;
    return true;
}

bool tool_parse_size(const char *s, size_t min, size_t max, size_t *out)
{
    uint64_t v;
    if (!tool_parse_uint(s, min, max, &v)) return false;
    *out = (size_t)v;
    return true;
}

bool tool_parse_int(const char *s, int min, int max, int *out)
{
    uint64_t v;
    if (min < 0 || !tool_parse_uint(s, (uint64_t)min, (uint64_t)max, &v)) return false;
    *out = (int)v;
    return true;
}

bool tool_parse_real(const char *s, double min, double max, double *out)
{
    if (!s) return false;
    /* the grammar first, so that strtod never sees hex, "inf", "nan", spaces or a locale's forms */
    const char *p = s;
    if (*p == '-') {
        if (!(min < 0)) return false;
        p++;
    }
    int digits = 0;
    while (tool_is_digit(*p)) p++, digits++;
    if (*p == '.') {
        p++;
        while (tool_is_digit(*p)) p++, digits++;
    }
    if (digits == 0) return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!tool_is_digit(*p)) return false;
        while (tool_is_digit(*p)) p++;
    }
    if (*p) return false;
    char *end = NULL;
    const double v = strtod(s, &end);
    if (end != p || !isfinite(v) || v < min || v > max) return false;
    *out = v;
    return true;
}

int tool_parse_uint_list(const char *s, uint64_t min, uint64_t max, size_t *out, int cap)
{
    if (!s || !*s) return -1;
    int count = 0;
    char item[32];
    for (;;) {
        const char *comma = strchr(s, ',');
        const size_t len = comma ? (size_t)(comma - s) : strlen(s);
        uint64_t v;
        if (count == cap || len == 0 || len >= sizeof item) return -1;
        memcpy(item, s, len);
        item[len] = '\0';
        if (!tool_parse_uint(item, min, max, &v) || v > SIZE_MAX) return -1;
        out[count++] = (size_t)v;
        if (!comma) return count;
        s = comma + 1;
    }
}

bool tool_parse_shape(const char *s, uint64_t max, size_t *n, size_t *k)
{
    const char *colon = s ? strchr(s, ':') : NULL;
    char item[32];
    uint64_t a, b;
    if (!colon || (size_t)(colon - s) >= sizeof item) return false;
    memcpy(item, s, (size_t)(colon - s));
    item[colon - s] = '\0';
    if (!tool_parse_uint(item, 1, max, &a) || !tool_parse_uint(colon + 1, 1, max, &b) || a > SIZE_MAX || b > SIZE_MAX)
        return false;
    *n = (size_t)a;
    *k = (size_t)b;
    return true;
}

static bool tool_mul(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a) return false;
    *out = a * b;
    return true;
}

void tool_bytes_add(tool_bytes *b, size_t a, size_t b2, size_t c)
{
    size_t p;
    if (b->overflow || !tool_mul(a, b2, &p) || !tool_mul(p, c, &p) || b->total > SIZE_MAX - p) {
        b->overflow = true;
        return;
    }
    b->total += p;
}

bool tool_bytes_fit(const char *cmd, const tool_bytes *b)
{
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const double memory = pages > 0 && page > 0 ? (double)pages * (double)page : 0.0;
    if (b->overflow) {
        fprintf(stderr, "qmm %s: the sizes asked for need more bytes than this machine can address\n", cmd);
        return false;
    }
    if (memory > 0 && (double)b->total > memory) {
        fprintf(stderr, "qmm %s: the sizes asked for need %.3g GB, more than this machine's %.3g GB of memory\n", cmd,
                (double)b->total * 1e-9, memory * 1e-9);
        return false;
    }
    return true;
}

bool tool_first_time(tool_seen *s, const char *cmd, const char *opt)
{
    for (int i = 0; i < s->count; i++)
        if (strcmp(s->names[i], opt) == 0) {
            fprintf(stderr, "qmm %s: '%s' given twice\n", cmd, opt);
            return false;
        }
    if (s->count < (int)(sizeof s->names / sizeof s->names[0])) s->names[s->count++] = opt;
    return true;
}
