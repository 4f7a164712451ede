/* qmm verify ORIG QUANT: compares a quantized checkpoint with the one it came from. Each quantized
 * weight of QUANT (recognised from its tensors, so files from other producers work too) is
 * dequantized with qmm_dequantize and compared with ORIG's tensor of the same name: relative error
 * ||Q - W|| / ||W||, SQNR = 10 log10(||W||^2 / ||Q - W||^2) and the largest absolute difference. Every
 * other tensor of QUANT must equal ORIG's byte for byte. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "common.h"
#include "io_common.h"

static void verify_usage(FILE *f)
{
    fprintf(f, "usage: qmm verify ORIG QUANT [--max-rel-err X] [--quiet]\n\n"
               "Dequantizes every quantized weight of QUANT and compares it with the tensor of the same name\n"
               "in ORIG (relative error, SQNR in dB, largest absolute difference); checks that every other\n"
               "tensor of QUANT equals ORIG's. Exits 1 when a tensor is missing or differs, or when a relative\n"
               "error exceeds --max-rel-err.\n\n"
               "options:\n"
               "  --max-rel-err X   fail when a weight's relative error is above X\n"
               "  --quiet           print the summary only\n");
}

typedef struct verify_stats {
    size_t weights, copied, problems, over;
    double sum_rel, worst_rel, min_sqnr;
    char worst[256];
} verify_stats;

/* Compares matrix `index` of quantized module `module` with the original floats orig (n x k). */
static qmm_status verify_matrix(const qmm_safetensors *q, const char *module, size_t index, const float *orig, size_t n,
                                size_t k, double *rel, double *sqnr, double *max_abs)
{
    qmm_weight w;
    qmm_status st = qmm_checkpoint_weight_load(q, module, index, &w);
    if (st != QMM_OK) return st;
    float *deq = malloc(n * k * sizeof *deq);
    st = deq ? qmm_dequantize(&w, 0, QMM_DTYPE_FP32, deq, k) : QMM_ERR_OUT_OF_MEMORY;
    if (st == QMM_OK) {
        double num = 0, den = 0, mx = 0;
        for (size_t i = 0; i < n * k; i++) {
            double d = (double)deq[i] - (double)orig[i];
            num += d * d;
            den += (double)orig[i] * orig[i];
            if (fabs(d) > mx) mx = fabs(d);
        }
        *rel = den > 0 ? sqrt(num / den) : sqrt(num);
        *sqnr = num > 0 ? 10.0 * log10(den / num) : INFINITY;
        *max_abs = mx;
    }
    free(deq);
    qmm_weight_free(&w);
    return st;
}

static void verify_problem(verify_stats *s, const char *name, const char *what)
{
    fprintf(stderr, "qmm verify: %s: %s\n", name, what);
    s->problems++;
}

/* A quantized weight (a module of QUANT whose '.weight' or '_blocks' this is). */
static void verify_weight(const qmm_safetensors *orig, const qmm_safetensors *q, const char *module,
                          const qmm_checkpoint_weight *info, const char *orig_name, double max_rel, bool quiet,
                          verify_stats *s)
{
    qmm_tensor_view ov;
    if (qmm_safetensors_tensor_find(orig, orig_name, &ov) != QMM_OK) {
        verify_problem(s, orig_name, "not in ORIG");
        return;
    }
    const size_t nd = ov.ndim;
    bool shape_ok = info->count == 1 ? (nd == 2 && ov.shape[0] == info->n && ov.shape[1] == info->k)
                                     : (nd >= 3 && ov.shape[nd - 2] == info->n && ov.shape[nd - 1] == info->k &&
                                        ov.elements == info->count * info->n * info->k);
    float *w = shape_ok ? tool_view_floats(&ov) : NULL;
    if (!w) {
        verify_problem(s, orig_name, shape_ok ? "ORIG is not F32, F16 or BF16" : "shape differs from the quantized weight");
        return;
    }
    qmm_format_traits t;
    qmm_format_get_traits(info->format, &t);
    for (size_t e = 0; e < info->count; e++) {
        double rel, sqnr, max_abs;
        qmm_status st = verify_matrix(q, module, e, w + e * info->n * info->k, info->n, info->k, &rel, &sqnr, &max_abs);
        if (st != QMM_OK) {
            verify_problem(s, orig_name, qmm_last_error());
            break;
        }
        if (!quiet) {
            if (info->count > 1) printf("%-56s[%3zu] ", orig_name, e);
            else printf("%-61s ", orig_name);
            printf("%-12s %6zu x %-6zu %12.4e %9.2f %12.4e\n", t.name, info->n, info->k, rel, sqnr, max_abs);
        }
        s->weights++;
        s->sum_rel += rel;
        if (s->weights == 1 || sqnr < s->min_sqnr) s->min_sqnr = sqnr;
        if (rel > s->worst_rel || s->weights == 1) {
            s->worst_rel = rel;
            snprintf(s->worst, sizeof s->worst, "%s", orig_name);
        }
        if (max_rel > 0 && rel > max_rel) s->over++;
    }
    free(w);
}

int cmd_verify(int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL};
    double max_rel = 0;
    bool quiet = false;
    int positional = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            verify_usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--quiet") == 0) quiet = true;
        else if (strcmp(argv[i], "--max-rel-err") == 0 && i + 1 < argc) max_rel = strtod(argv[++i], NULL);
        else if (argv[i][0] != '-' && positional < 2) paths[positional++] = argv[i];
        else {
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
        bool quantized = part && qmm_checkpoint_weight_info(q, module, &info) == QMM_OK && info.format != QMM_FORMAT_BF16;
        if (quantized) {
            if (strcmp(part, ".weight") == 0) verify_weight(orig, q, module, &info, v.name, max_rel, quiet, &s);
            else if (strcmp(part, "_blocks") == 0) verify_weight(orig, q, module, &info, module, max_rel, quiet, &s);
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
