/* qmm run: the tool's default run. Quantizes a default weight (a seeded random bf16 matrix shaped like
 * a Llama-8B down projection, N = 4096, K = 14336, with heavy tails and outlier rows) in every format,
 * multiplies it with a batch of activations on the best backend present, and prints a table of bits
 * per weight, time and error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "common.h"
#include "parse.h"

static void run_usage(FILE *f)
{
    fprintf(f,
            "usage: qmm run [options]\n\n"
            "Quantizes a default weight in every format, multiplies it with M rows of bf16 activations on\n"
            "the best backend present, and prints, per format: bits per weight, quantization time, time per\n"
            "matmul call (median), the relative error against the fp64 product with the unquantized weight\n"
            "(the quantization error) and against the reference backend with the same quantized weight\n"
            "(the kernel's own error, which must be at fp32 rounding level).\n\n"
            "options:\n"
            "  --backend NAME   auto (default), reference, cpu, cuda\n"
            "  --m M            rows of activations (default 8)\n"
            "  --n N            output features (default 4096)\n"
            "  --k K            input features (default 14336)\n"
            "  --seed S         seed of the weight and activations (default 1)\n"
            "  --threads T      CPU worker threads (default: online cores)\n"
            "  --help           this text\n");
}

typedef struct run_options {
    qmm_backend backend;
    size_t m, n, k;
    uint64_t seed;
    int threads;
} run_options;

/* Largest --m, --n and --k: far past any real shape; the memory check below is the real limit. */
#define RUN_MAX_DIM ((size_t)1 << 40)

/* 0: parsed; 1: --help; -1: a usage error (reported). */
static int run_parse(int argc, char **argv, run_options *o)
{
    tool_seen seen = {{0}, 0};
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i];
        if (strcmp(opt, "--help") == 0 || strcmp(opt, "-h") == 0) return 1;
        if (i + 1 >= argc) {
            fprintf(stderr, "qmm run: unknown option or missing value: '%s'\n", opt);
            return -1;
        }
        const char *v = argv[++i];
        if (!tool_first_time(&seen, "run", opt)) return -1;
        bool ok;
        if (strcmp(opt, "--backend") == 0) ok = qmm_backend_from_name(v, &o->backend) == QMM_OK;
        else if (strcmp(opt, "--m") == 0) ok = tool_parse_size(v, 1, RUN_MAX_DIM, &o->m);
        else if (strcmp(opt, "--n") == 0) ok = tool_parse_size(v, 1, RUN_MAX_DIM, &o->n);
        else if (strcmp(opt, "--k") == 0) ok = tool_parse_size(v, 1, RUN_MAX_DIM, &o->k);
        else if (strcmp(opt, "--seed") == 0) ok = tool_parse_uint(v, 0, UINT64_MAX, &o->seed);
        else if (strcmp(opt, "--threads") == 0) ok = tool_parse_int(v, 1, TOOL_MAX_THREADS, &o->threads);
        else {
            fprintf(stderr, "qmm run: unknown option '%s'\n", opt);
            return -1;
        }
        if (!ok) {
            fprintf(stderr, "qmm run: bad value '%s' for %s\n", v, opt);
            return -1;
        }
    }
    /* what the run allocates: the bf16 weight and activations, the fp64 exact product and its fp64
     * copies of A and a row of W, two fp32 outputs, the context's A and C, the quantized weight */
    tool_bytes b = {0, false};
    tool_bytes_add(&b, o->n, o->k, 3);
    tool_bytes_add(&b, o->m, o->k, 12);
    tool_bytes_add(&b, o->m, o->n, 20);
    tool_bytes_add(&b, o->k, 8, 1);
    return tool_bytes_fit("run", &b) ? 0 : -1;
}

typedef struct run_row {
    double quantize_s, matmul_s, err_exact, err_ref;
} run_row;

/* Times ctx's matmul on the weight: one warm-up call, then calls until 1 s or 25 calls; the median. */
static qmm_status run_time_matmul(qmm_context *ctx, const run_options *o, const void *a, qmm_weight *w, void *c,
                                  double *median_s)
{
    double t[25];
    int count = 0;
    double start = tool_now();
    qmm_status st = qmm_matmul(ctx, o->m, QMM_DTYPE_BF16, a, o->k, w, QMM_DTYPE_FP32, c, o->n, NULL);
    if (st == QMM_OK) st = qmm_context_synchronize(ctx);
    while (st == QMM_OK && count < 25 && (count < 3 || tool_now() - start < 1.0)) {
        double t0 = tool_now();
        st = qmm_matmul(ctx, o->m, QMM_DTYPE_BF16, a, o->k, w, QMM_DTYPE_FP32, c, o->n, NULL);
        if (st == QMM_OK) st = qmm_context_synchronize(ctx);
        t[count++] = tool_now() - t0;
    }
    *median_s = tool_median(t, count);
    return st;
}

static int run_format(qmm_context *ctx, qmm_context *ref, const run_options *o, qmm_format f, const uint16_t *w_bf16,
                      const uint16_t *a_host, void *a_buf, void *c_buf, const double *exact, run_row *row)
{
    const size_t mn = o->m * o->n;
    qmm_weight w;
    qmm_status st = qmm_weight_alloc(&w, f, o->n, o->k);
    if (st != QMM_OK) return tool_report("run", st);
    double t0 = tool_now();
    st = qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_BF16, w_bf16, o->k, &w);
    row->quantize_s = tool_now() - t0;
    if (st == QMM_OK) st = qmm_weight_prepare(ctx, &w); /* uploads on CUDA, repacks on the CPU */
    float *c = malloc(mn * sizeof(float)), *c_ref = malloc(mn * sizeof(float));
    if (st == QMM_OK && (!c || !c_ref)) st = QMM_ERR_OUT_OF_MEMORY;
    if (st == QMM_OK) st = run_time_matmul(ctx, o, a_buf, &w, c_buf, &row->matmul_s);
    if (st == QMM_OK) st = qmm_buffer_read(ctx, c, c_buf, mn * sizeof(float));
    if (st == QMM_OK) {
        row->err_exact = tool_rel_error(c, exact, mn);
        qmm_backend b;
        qmm_context_get_backend(ctx, &b);
        if (b == QMM_BACKEND_REFERENCE) {
            row->err_ref = 0.0; /* this run is the reference */
        } else {
            qmm_weight host = w;
            host.prepared = NULL; /* the reference reads the canonical host buffers */
            st = qmm_matmul(ref, o->m, QMM_DTYPE_BF16, a_host, o->k, &host, QMM_DTYPE_FP32, c_ref, o->n, NULL);
            row->err_ref = tool_rel_error_f32(c, c_ref, mn);
        }
    }
    free(c);
    free(c_ref);
    qmm_weight_free(&w);
    return st == QMM_OK ? 0 : tool_report("run", st);
}

int cmd_run(int argc, char **argv)
{
    run_options o = {QMM_BACKEND_AUTO, 8, 4096, 14336, 1, 0};
    const int p = run_parse(argc, argv, &o);
    if (p != 0) {
        if (p > 0) run_usage(stdout);
        else fprintf(stderr, "'qmm run --help' lists the options\n");
        return p > 0 ? 0 : 2;
    }
    qmm_context_options opts;
    qmm_context_options_init(&opts);
    opts.backend = o.backend;
    opts.num_threads = o.threads;
    qmm_context *ctx = NULL, *ref = NULL;
    qmm_status st = qmm_context_create(&opts, &ctx);
    if (st != QMM_OK) return tool_report("run", st);
    opts.backend = QMM_BACKEND_REFERENCE;
    st = qmm_context_create(&opts, &ref);
    if (st != QMM_OK) {
        qmm_context_destroy(ctx);
        return tool_report("run", st);
    }

    printf("qmm %s run: backend %s\n", qmm_version(), qmm_context_describe(ctx));
    printf("weight %zu x %zu (seeded random bf16, Student-t tails, outlier rows), activations %zu x %zu bf16, "
           "output fp32\n", o.n, o.k, o.m, o.k);
    fflush(stdout);
    uint16_t *w = malloc(o.n * o.k * sizeof *w), *a = malloc(o.m * o.k * sizeof *a);
    double *exact = malloc(o.m * o.n * sizeof *exact);
    void *a_buf = NULL, *c_buf = NULL;
    int rc = 0;
    if (!w || !a || !exact) {
        fprintf(stderr, "qmm run: out of memory\n");
        rc = 1;
        goto done;
    }
    tool_default_weight(w, o.n, o.k, o.seed);
    tool_random_bf16(a, o.m * o.k, o.seed + 1);
    tool_exact_product(a, w, o.m, o.n, o.k, exact);
    st = qmm_buffer_alloc(ctx, o.m * o.k * 2, &a_buf);
    if (st == QMM_OK) st = qmm_buffer_alloc(ctx, o.m * o.n * 4, &c_buf);
    if (st == QMM_OK) st = qmm_buffer_write(ctx, a_buf, a, o.m * o.k * 2);
    if (st != QMM_OK) {
        rc = tool_report("run", st);
        goto done;
    }

    printf("\n%-12s %6s %12s %12s %16s %16s\n", "format", "bits/w", "quantize ms", "matmul ms", "err vs fp64",
           "err vs reference");
    static const qmm_format formats[] = {QMM_FORMAT_NVFP4, QMM_FORMAT_MXFP4, QMM_FORMAT_FP8_TENSOR,
                                         QMM_FORMAT_FP8_CHANNEL};
    for (size_t i = 0; i < sizeof formats / sizeof formats[0] && rc == 0; i++) {
        qmm_format_traits t;
        qmm_format_get_traits(formats[i], &t);
        run_row row = {0};
        rc = run_format(ctx, ref, &o, formats[i], w, a, a_buf, c_buf, exact, &row);
        if (rc == 0)
            printf("%-12s %6.2f %12.1f %12.3f %16.3e %16.3e\n", t.name, t.bits_per_weight, row.quantize_s * 1e3,
                   row.matmul_s * 1e3, row.err_exact, row.err_ref);
        fflush(stdout);
    }
    if (rc == 0)
        printf("\nerr vs fp64: ||C - A W^T|| / ||A W^T|| with the unquantized bf16 weight, in fp64 (quantization error)\n"
               "err vs reference: against the reference backend on the same quantized weight (fp32 rounding level)\n");
done:
    qmm_buffer_free(ctx, a_buf);
    qmm_buffer_free(ctx, c_buf);
    free(w);
    free(a);
    free(exact);
    qmm_context_destroy(ref);
    qmm_context_destroy(ctx);
    return rc;
}
