/* qmm verify ORIG QUANT: compares a quantized checkpoint with the one it came from. Each quantized
 * weight of QUANT (recognised from its tensors, so files from other producers work too) is
 * dequantized with qmm_dequantize and compared with ORIG's tensor of the same name: relative error
 * ||Q - W|| / ||W||, SQNR = 10 log10(||W||^2 / ||Q - W||^2) and the largest absolute difference. Every
 * other tensor of QUANT must equal ORIG's byte for byte. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "common.h"
#include "io_common.h"
#include "parse.h"

static void verify_usage(FILE *f)
{
    fprintf(f, "usage: qmm verify ORIG QUANT [--max-rel-err X] [--quiet]\n\n"
               "Dequantizes every quantized weight of QUANT and compares it with the tensor of the same name\n"
               "in ORIG (relative error, SQNR in dB, largest absolute difference); checks that every other\n"
               "tensor of QUANT equals ORIG's. Exits 1 when a tensor is missing or differs, when a quantized\n"
               "weight decodes to NaN or an infinity anywhere (an E4M3 NaN code, an E8M0 0xFF scale; the line\n"
               "names the first bad block), when an error is not finite, or when a relative error exceeds\n"
               "--max-rel-err.\n\n"
               "options:\n"
               "  --max-rel-err X   fail when a weight's relative error is above X (a finite number >= 0)\n"
               "  --quiet           print the summary only\n");
}

typedef struct verify_stats {
    size_t weights, copied, problems, over;
    double sum_rel, worst_rel, min_sqnr;
    char worst[512];
} verify_stats;

/* The first value of the n x k matrix v that is not finite: its row and column; false when all are. */
static bool verify_first_non_finite(const float *v, size_t n, size_t k, size_t *row, size_t *col)
{
    for (size_t i = 0; i < n * k; i++)
        if (!isfinite(v[i])) {
            *row = i / k, *col = i % k;
            return true;
        }
    return false;
}

/* Compares matrix `index` of quantized module `module` with the original floats orig (n x k). A
 * quantized value that decodes to NaN or an infinity (an E4M3 NaN code, an E8M0 0xFF scale) is
 * described in bad (empty when every value is finite). */
static qmm_status verify_matrix(const qmm_safetensors *q, const char *module, size_t index, const float *orig, size_t n,
                                size_t k, double *rel, double *sqnr, double *max_abs, char *bad, size_t bad_cap)
{
    qmm_weight w;
    qmm_status st = qmm_checkpoint_weight_load(q, module, index, &w);
    if (st != QMM_OK) return st;
    float *deq = malloc(n * k * sizeof *deq);
    st = deq ? qmm_dequantize(&w, 0, QMM_DTYPE_FP32, deq, k) : QMM_ERR_OUT_OF_MEMORY;
    bad[0] = '\0';
    size_t r, c;
    if (st == QMM_OK && verify_first_non_finite(deq, n, k, &r, &c)) {
        qmm_format_traits t;
        qmm_format_get_traits(w.format, &t);
        if (t.block_size > 0) {
            const size_t b = c / (size_t)t.block_size, c0 = b * (size_t)t.block_size;
            const size_t c1 = c0 + (size_t)t.block_size - 1 < k - 1 ? c0 + (size_t)t.block_size - 1 : k - 1;
            snprintf(bad, bad_cap, "decodes to %s at row %zu, block %zu (columns %zu..%zu): the first bad block",
                     isnan(deq[r * k + c]) ? "NaN" : "an infinity", r, b, c0, c1);
        } else {
            snprintf(bad, bad_cap, "decodes to %s at row %zu, column %zu: the first bad value",
                     isnan(deq[r * k + c]) ? "NaN" : "an infinity", r, c);
        }
    }
    if (st == QMM_OK) {
        double num = 0, den = 0, mx = 0;
        for (size_t i = 0; i < n * k; i++) {
            double d = (double)deq[i] - (double)orig[i];
            num += d * d;
            den += (double)orig[i] * orig[i];
            if (!isnan(mx) && !(fabs(d) <= mx)) mx = fabs(d); /* a NaN, once seen, stays */
        }
        *rel = den > 0 ? sqrt(num / den) : sqrt(num);
        *sqnr = num > 0 ? 10.0 * log10(den / num) : num == 0 ? INFINITY : NAN;
        *max_abs = mx;
    }
    free(deq);
    qmm_weight_free(&w);
    return st;
}

static void verify_problem(verify_stats *s, const char *name, const char *what)
{
    char safe[512];
    fprintf(stderr, "qmm verify: %s: %s\n", qmm_text_escape(name, safe, sizeof safe), what);
    s->problems++;
}

/* For PREFIX.experts.I.PROJ.weight (one expert of a stack that qmm quantize wrote expert by expert), the
 * 3-D stack PREFIX.experts.PROJ of ORIG and I. */
static bool verify_find_stack(const qmm_safetensors *orig, const char *name, qmm_tensor_view *ov, size_t *index)
{
    const char *ex = strstr(name, ".experts.");
    if (!ex || !tool_ends_with(name, ".weight")) return false;
    const char *num = ex + strlen(".experts."), *end = num;
    while (*end >= '0' && *end <= '9') end++;
    if (end == num || *end != '.') return false;
    char stack[1024];
    const int len = snprintf(stack, sizeof stack, "%.*s%.*s", (int)(num - name), name,
                             (int)(strlen(end + 1) - strlen(".weight")), end + 1);
    if (len < 0 || (size_t)len >= sizeof stack || qmm_safetensors_tensor_find(orig, stack, ov) != QMM_OK) return false;
    *index = (size_t)strtoull(num, NULL, 10);
    return ov->ndim == 3;
}

/* A quantized weight (a module of QUANT whose '.weight' or '_blocks' this is). */
static void verify_weight(const qmm_safetensors *orig, const qmm_safetensors *q, const char *module,
                          const qmm_checkpoint_weight *info, const char *orig_name, double max_rel, bool check_rel,
                          bool quiet, verify_stats *s)
{
    qmm_tensor_view ov;
    size_t slice = 0; /* expert `slice` of a 3-D stack in ORIG, for one expert of it in QUANT */
    if (qmm_safetensors_tensor_find(orig, orig_name, &ov) != QMM_OK && !verify_find_stack(orig, orig_name, &ov, &slice)) {
        verify_problem(s, orig_name, "not in ORIG");
        return;
    }
    const size_t nd = ov.ndim;
    bool shape_ok = info->count == 1 ? (nd == 2 && ov.shape[0] == info->n && ov.shape[1] == info->k) ||
                                           (nd == 3 && slice < ov.shape[0] && ov.shape[1] == info->n && ov.shape[2] == info->k)
                                     : (nd >= 3 && ov.shape[nd - 2] == info->n && ov.shape[nd - 1] == info->k &&
                                        ov.elements == info->count * info->n * info->k);
    float *all = shape_ok ? tool_view_floats(&ov) : NULL;
    if (!all) {
        verify_problem(s, orig_name, shape_ok ? "ORIG is not F32, F16 or BF16" : "shape differs from the quantized weight");
        return;
    }
    float *w = all + (info->count == 1 && nd == 3 ? slice * info->n * info->k : 0);
    qmm_format_traits t;
    qmm_format_get_traits(info->format, &t);
    char safe[512], where[600], bad[200];
    qmm_text_escape(orig_name, safe, sizeof safe);
    size_t r, c;
    if (verify_first_non_finite(w, info->count * info->n, info->k, &r, &c)) {
        snprintf(where, sizeof where, "ORIG holds NaN or an infinity (matrix %zu, row %zu, column %zu): no error can "
                 "be measured", r / info->n, r % info->n, c);
        verify_problem(s, orig_name, where);
        free(all);
        return;
    }
    for (size_t e = 0; e < info->count; e++) {
        double rel, sqnr, max_abs;
        qmm_status st = verify_matrix(q, module, e, w + e * info->n * info->k, info->n, info->k, &rel, &sqnr, &max_abs,
                                      bad, sizeof bad);
        if (st != QMM_OK) {
            verify_problem(s, orig_name, qmm_last_error());
            break;
        }
        if (!quiet) {
            if (info->count > 1) printf("%-56s[%3zu] ", safe, e);
            else printf("%-61s ", safe);
            printf("%-12s %6zu x %-6zu %12.4e %9.2f %12.4e\n", t.name, info->n, info->k, rel, sqnr, max_abs);
        }
        if (info->count > 1) snprintf(where, sizeof where, "%s[%zu]", orig_name, e);
        else snprintf(where, sizeof where, "%s", orig_name);
        if (bad[0]) verify_problem(s, where, bad);
        else if (!isfinite(rel) || isnan(sqnr)) verify_problem(s, where, "the error is not finite");
        s->weights++;
        s->sum_rel += rel;
        if (s->weights == 1 || sqnr < s->min_sqnr) s->min_sqnr = sqnr;
        if (rel > s->worst_rel || s->weights == 1) {
            s->worst_rel = rel;
            snprintf(s->worst, sizeof s->worst, "%s", safe);
        }
        if (check_rel && !(rel <= max_rel)) s->over++;
    }
    free(all);
}

/* Whether module has the scale tensors of a quantized weight (X.weight_scale or X_scales). */
static bool verify_has_scales(const qmm_safetensors *q, const char *module)
{
    static const char *const suffixes[2] = {".weight_scale", "_scales"};
    for (int i = 0; i < 2; i++) {
        char name[1024];
        qmm_tensor_view v;
        if ((size_t)snprintf(name, sizeof name, "%s%s", module, suffixes[i]) < sizeof name &&
            qmm_safetensors_tensor_find(q, name, &v) == QMM_OK)
            return true;
    }
    return false;
}

int cmd_verify(int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL};
    double max_rel = 0;
    bool quiet = false, check_rel = false;
    int positional = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            verify_usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--quiet") == 0) {
            quiet = true;
        } else if (strcmp(argv[i], "--max-rel-err") == 0 && i + 1 < argc) {
            if (check_rel) {
                fprintf(stderr, "qmm verify: '--max-rel-err' given twice\n");
                return 2;
            }
            if (!tool_parse_real(argv[++i], 0, DBL_MAX, &max_rel)) {
                fprintf(stderr, "qmm verify: --max-rel-err takes a finite number >= 0, not '%s'\n", argv[i]);
                return 2;
            }
            check_rel = true;
        } else if (argv[i][0] != '-' && positional < 2) {
            paths[positional++] = argv[i];
        } else {
            verify_usage(stderr);
            return 2;
        }
    }
    if (positional != 2) {
        verify_usage(stderr);
        return 2;
    }
    qmm_safetensors *orig = NULL, *q = NULL;
    qmm_status st = qmm_safetensors_open(paths[0], &orig);
    if (st == QMM_OK) st = qmm_safetensors_open(paths[1], &q);
    if (st != QMM_OK) {
        qmm_safetensors_close(orig);
        return tool_report("verify", st);
    }
    verify_stats s;
    memset(&s, 0, sizeof s);
    if (!quiet)
        printf("%-61s %-12s %15s %12s %9s %12s\n", "tensor", "format", "shape", "rel err", "SQNR dB", "max abs err");
    double bytes_orig = 0, bytes_q = 0;
    for (size_t i = 0; i < qmm_safetensors_tensor_count(orig); i++) {
        qmm_tensor_view v;
        qmm_safetensors_tensor_at(orig, i, &v);
        bytes_orig += (double)v.bytes;
    }
    for (size_t i = 0; i < qmm_safetensors_tensor_count(q); i++) {
        qmm_tensor_view v;
        qmm_safetensors_tensor_at(q, i, &v);
        bytes_q += (double)v.bytes;
        char *module = NULL;
        const char *part = tool_weight_part(v.name, &module);
        qmm_checkpoint_weight info;
        const qmm_status ist = part ? qmm_checkpoint_weight_info(q, module, &info) : QMM_ERR_NOT_FOUND;
        const bool quantized = ist == QMM_OK && info.format != QMM_FORMAT_BF16;
        if (ist == QMM_ERR_MALFORMED && verify_has_scales(q, module)) {
            /* the parts of a quantized weight that do not agree, or a scale that is not finite: once, on
             * the weight's own tensor */
            if (strcmp(part, ".weight") == 0 || strcmp(part, "_blocks") == 0) verify_problem(&s, v.name, qmm_last_error());
        } else if (quantized) {
            if (strcmp(part, ".weight") == 0) verify_weight(orig, q, module, &info, v.name, max_rel, check_rel, quiet, &s);
            else if (strcmp(part, "_blocks") == 0) verify_weight(orig, q, module, &info, module, max_rel, check_rel, quiet, &s);
            /* scale tensors are checked through their weight */
        } else {
            qmm_tensor_view ov;
            if (qmm_safetensors_tensor_find(orig, v.name, &ov) != QMM_OK) verify_problem(&s, v.name, "not in ORIG");
            else if (ov.dtype != v.dtype || ov.ndim != v.ndim || ov.bytes != v.bytes ||
                     (v.ndim && memcmp(ov.shape, v.shape, v.ndim * sizeof *v.shape) != 0) ||
                     memcmp(ov.data, v.data, v.bytes) != 0)
                verify_problem(&s, v.name, "differs from ORIG (it should be copied unchanged)");
            else s.copied++;
        }
        free(module);
    }
    char a[32], b[32];
    printf("\n%zu quantized weights: mean rel err %.4e, worst %.4e (%s), min SQNR %.2f dB\n", s.weights,
           s.weights ? s.sum_rel / (double)s.weights : 0.0, s.worst_rel, s.weights ? s.worst : "-",
           s.weights ? s.min_sqnr : 0.0);
    printf("%zu tensors copied unchanged; %zu problems; size %s -> %s (%.3f)\n", s.copied, s.problems,
           tool_bytes_text(bytes_orig, a, sizeof a), tool_bytes_text(bytes_q, b, sizeof b),
           bytes_orig > 0 ? bytes_q / bytes_orig : 0.0);
    if (s.over) printf("%zu weights have a relative error above %g\n", s.over, max_rel);
    qmm_safetensors_close(orig);
    qmm_safetensors_close(q);
    return (s.problems || s.over) ? 1 : 0;
}
