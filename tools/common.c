#include "common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t tool_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void tool_rng_seed(tool_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) r->s[i] = tool_splitmix64(&seed);
}

static uint64_t tool_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t tool_rng_next(tool_rng *r)
{
    uint64_t *s = r->s;
    const uint64_t result = tool_rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = tool_rotl(s[3], 45);
    return result;
}

double tool_rng_uniform(tool_rng *r) { return ((double)(tool_rng_next(r) >> 11) + 0.5) * 0x1p-53; }

double tool_rng_normal(tool_rng *r)
{
    double u1 = tool_rng_uniform(r), u2 = tool_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

double tool_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int tool_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double tool_median(double *v, int count)
{
    if (count <= 0) return 0.0;
    qsort(v, (size_t)count, sizeof *v, tool_cmp_double);
    return count % 2 ? v[count / 2] : 0.5 * (v[count / 2 - 1] + v[count / 2]);
}

int tool_report(const char *what, qmm_status st)
{
    fprintf(stderr, "qmm %s: %s: %s\n", what, qmm_status_string(st), qmm_last_error());
    return 1;
}

void tool_default_weight(uint16_t *w, size_t n, size_t k, uint64_t seed)
{
    tool_rng r;
    tool_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) {
        const double row_scale = (tool_rng_next(&r) % 64 == 0) ? 8.0 : 1.0;
        for (size_t j = 0; j < k; j++) {
            /* Student-t with 4 degrees of freedom: z / sqrt(chi2_4 / 4), chi2_4 = -2 ln(u1 u2). */
            double z = tool_rng_normal(&r);
            double chi2 = -2.0 * log(tool_rng_uniform(&r) * tool_rng_uniform(&r));
            double v = 0.01 * row_scale * z / sqrt(chi2 / 4.0);
            w[i * k + j] = qmm_fp32_to_bf16((float)v);
        }
    }
}

void tool_random_bf16(uint16_t *a, size_t count, uint64_t seed)
{
    tool_rng r;
    tool_rng_seed(&r, seed);
    for (size_t i = 0; i < count; i++) a[i] = qmm_fp32_to_bf16((float)tool_rng_normal(&r));
}

double tool_rel_error(const float *x, const double *y, size_t count)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < count; i++) {
        double d = (double)x[i] - y[i];
        num += d * d;
        den += y[i] * y[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

double tool_rel_error_f32(const float *x, const float *y, size_t count)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < count; i++) {
        double d = (double)x[i] - (double)y[i];
        num += d * d;
        den += (double)y[i] * (double)y[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

void tool_exact_product(const uint16_t *a, const uint16_t *w, size_t m, size_t n, size_t k, double *c)
{
    double *ad = malloc(m * k * sizeof(double));
    double *wd = malloc(k * sizeof(double));
    if (!ad || !wd) {
        free(ad);
        free(wd);
        for (size_t i = 0; i < m * n; i++) c[i] = NAN;
        return;
    }
    for (size_t i = 0; i < m * k; i++) ad[i] = qmm_bf16_to_fp32(a[i]);
    for (size_t j = 0; j < n; j++) {
        for (size_t t = 0; t < k; t++) wd[t] = qmm_bf16_to_fp32(w[j * k + t]);
        for (size_t i = 0; i < m; i++) {
            double s = 0.0;
            for (size_t t = 0; t < k; t++) s += ad[i * k + t] * wd[t];
            c[i * n + j] = s;
        }
    }
    free(ad);
    free(wd);
}
