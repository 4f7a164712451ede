/* qmm bench: time qmm_matmul per format, shape and M against the dense bf16 path (cuBLAS bf16 on CUDA)
 * and the machine's bandwidth, all measured in this process.
 *
 * Method:
 * - weights are random valid codes and scales (tool_random_weight); each weight is copied until the
 *   copies exceed --rotate-mb (default 256 MB, several times a 50-60 MB GPU L2 or a 32 MB CPU L3) and
 *   the timed calls cycle through the copies, so every call reads its weight from memory;
 * - A has `probe` distinct random rows repeated down its M rows, so every output row can be checked
 *   against the reference backend's product of those rows (computed once per format and shape, on all
 *   cores); the check runs before timing and a failure is reported and sets the exit code;
 * - warm-up calls first; then batches of calls between two synchronisations (enough calls to take
 *   ~20 ms, so launch gaps are hidden), 7 batches, median time per call;
 * - the dense bf16 path on the same shape and M is timed the same way in the same run, right before
 *   each M's quantized rows (all of a shape's weights are prepared at once), so that a row and its
 *   baseline run at the same state of the machine; --cool-ms pauses before each row;
 * - after each timed batch the machine's state is read (qmm_context_machine_state): each row reports the
 *   lowest SM clock, the highest power and the clock-lowering reasons seen, where the backend can read
 *   them. On an H200 the compute-heavy rows late in a long run ran at a capped clock (1635-1815 MHz
 *   against 1980, 13-20% slower, its power limit), so a row's clock says which state its time
 *   belongs to.
 * Everything goes through the public API (qmm_buffer_*, qmm_context_synchronize). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "common.h"
#include "parse.h"
#include "bench.h"
#include "qmm_measure.h"

static void bench_usage(FILE *f)
{
    fprintf(f,
            "usage: qmm bench [options]\n\n"
            "Times qmm_matmul per format, shape (N:K) and batch M against the dense bf16 path (cuBLAS bf16\n"
            "on CUDA) and the memory bandwidth, measured in the same run. Results are checked against the\n"
            "reference backend before timing. MHz (JSON: sm_mhz, power_w, clock_reasons): the lowest SM\n"
            "clock over a row's timed batches, where the backend can read it (CUDA with NVML), else '-'.\n"
            "A GPU at its power limit lowers its clock: compare such rows at equal clocks. Each M's dense\n"
            "row runs right before that M's formats (all of a shape's weights are held at once).\n\n"
            "options:\n"
            "  --backend NAME      auto (default), cpu, cuda, reference\n"
            "  --format LIST       nvfp4,mxfp4,fp8_tensor,fp8_channel (default: those four)\n"
            "  --shapes N:K,...    default 4096:14336,14336:4096,6144:18432,28672:8192,8192:28672\n"
            "  --m LIST            default 1,2,4,8,16,32,64,128,256,512,1024,2048,4096,8192\n"
            "  --path NAME         force a path: gemv, fused, materialize (default: the dispatcher's)\n"
            "  --out TYPE          output type bf16 (default), fp16, fp32\n"
            "  --a-type TYPE       activations of the quantized formats: bf16 (default) or fp16 (the same\n"
            "                      values; the dense bf16 baseline keeps bf16 activations)\n"
            "  --threads T         CPU worker threads (default: online cores)\n"
            "  --rotate-mb MB      weight copies cycled per timing (default 256)\n"
            "  --reps R            timed batches, median reported, 1 to 64 (default 7)\n"
            "  --cool-ms MS        pause before each row, so that a GPU's clock recovers from its power\n"
            "                      limit between rows (default 0)\n"
            "  --workspace-mb MB   the CUDA context's workspace (default: the backend's; see qmm_workspace_query)\n"
            "  --moe E:TOPK        mixture of experts instead: stacks of E experts of each N:K (default shapes\n"
            "                      5760:2880,2880:2880, gpt-oss-20b's), M tokens (default 1,4,16,64,256,1024)\n"
            "                      routed to TOPK experts each (seeded, uniform): qmm_matmul_grouped against\n"
            "                      a loop of qmm_matmul per expert, the touched experts' bytes over the time,\n"
            "                      and from 256 tokens the dense GEMM rate of the same path (CPU backends)\n"
            "  --json              one JSON object per line instead of the table\n"
            "  --explain           each row's plan too (qmm_matmul_explain: the path, the rule that chose it and,\n"
            "                      on CUDA, each kernel launched with its grid, shared memory and division of K)\n"
            "  --help              this text\n");
}

static int bench_parse_formats(const char *s, bench_options *o)
{
    o->format_count = 0;
    for (;;) {
        const char *comma = strchr(s, ',');
        const size_t len = comma ? (size_t)(comma - s) : strlen(s);
        char name[32];
        if (o->format_count == 8 || len == 0 || len >= sizeof name) return -1;
        memcpy(name, s, len);
        name[len] = '\0';
        if (qmm_format_from_name(name, &o->formats[o->format_count]) != QMM_OK) return -1;
        o->format_count++;
        if (!comma) return 0;
        s = comma + 1;
    }
}

static int bench_parse_shapes(const char *s, bench_options *o)
{
    o->shape_count = 0;
    for (;;) {
        const char *comma = strchr(s, ',');
        const size_t len = comma ? (size_t)(comma - s) : strlen(s);
        char shape[64];
        if (o->shape_count == BENCH_MAX_LIST || len == 0 || len >= sizeof shape) return -1;
        memcpy(shape, s, len);
        shape[len] = '\0';
        if (!tool_parse_shape(shape, BENCH_MAX_DIM, &o->shapes[o->shape_count][0], &o->shapes[o->shape_count][1]))
            return -1;
        o->shape_count++;
        if (!comma) return 0;
        s = comma + 1;
    }
}

/* bf16, fp16 or (with_fp32) fp32 by the library's names; 0 for anything else */
static qmm_dtype bench_parse_type(const char *v, int with_fp32)
{
    const qmm_dtype types[3] = {QMM_DTYPE_BF16, QMM_DTYPE_FP16, QMM_DTYPE_FP32};
    for (int i = 0; i < (with_fp32 ? 3 : 2); i++)
        if (strcmp(v, qmm_dtype_name(types[i])) == 0) return types[i];
    return (qmm_dtype)0;
}

/* 0: parsed; 1: --help; -1: a usage error (reported). */
static int bench_parse(int argc, char **argv, bench_options *o)
{
    tool_seen seen = {{0}, 0};
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i];
        if (strcmp(opt, "--help") == 0 || strcmp(opt, "-h") == 0) return 1;
        if (strcmp(opt, "--json") == 0) {
            o->json = 1;
            continue;
        }
        if (i + 1 >= argc) return fprintf(stderr, "qmm bench: unknown option or missing value '%s'\n", opt), -1;
        const char *v = argv[++i];
        if (!tool_first_time(&seen, "bench", opt)) return -1;
        int ok;
        if (strcmp(opt, "--backend") == 0) ok = qmm_backend_from_name(v, &o->backend) == QMM_OK;
        else if (strcmp(opt, "--format") == 0) ok = bench_parse_formats(v, o) == 0;
        else if (strcmp(opt, "--shapes") == 0) ok = bench_parse_shapes(v, o) == 0;
        else if (strcmp(opt, "--m") == 0) ok = (o->m_count = tool_parse_uint_list(v, 1, BENCH_MAX_DIM, o->ms, BENCH_MAX_LIST)) > 0;
        else if (strcmp(opt, "--path") == 0) ok = qmm_path_from_name(v, &o->path) == QMM_OK;
        else if (strcmp(opt, "--out") == 0) ok = (o->out_type = bench_parse_type(v, 1)) != 0;
        else if (strcmp(opt, "--a-type") == 0) ok = (o->a_type = bench_parse_type(v, 0)) != 0;
        else if (strcmp(opt, "--threads") == 0) ok = tool_parse_int(v, 1, TOOL_MAX_THREADS, &o->threads);
        else if (strcmp(opt, "--reps") == 0) ok = tool_parse_int(v, 1, BENCH_MAX_REPS, &o->reps);
        else if (strcmp(opt, "--rotate-mb") == 0) ok = tool_parse_real(v, 1e-6, 1e6, &o->rotate_mb);
        else if (strcmp(opt, "--cool-ms") == 0) ok = tool_parse_real(v, 0, 600000, &o->cool_ms);
        /* at least one byte: 0 would mean the backend's default */
        else if (strcmp(opt, "--workspace-mb") == 0) ok = tool_parse_real(v, 1.0 / 1048576.0, 1048575.0, &o->workspace_mb);
        else if (strcmp(opt, "--moe") == 0)
            ok = tool_parse_shape(v, 1 << 20, &o->moe_experts, &o->moe_topk) && o->moe_topk <= o->moe_experts;
        else return fprintf(stderr, "qmm bench: unknown option '%s'\n", opt), -1;
        if (!ok) return fprintf(stderr, "qmm bench: bad option '%s %s'\n", opt, v), -1;
    }
    if (o->moe_experts) { /* the mixture-of-experts run's own defaults where none were given */
        bool shapes = false, ms = false;
        for (int i = 0; i < seen.count; i++) {
            shapes |= strcmp(seen.names[i], "--shapes") == 0;
            ms |= strcmp(seen.names[i], "--m") == 0;
        }
        if (!shapes) bench_parse_shapes("5760:2880,2880:2880", o);
        if (!ms) o->m_count = tool_parse_uint_list("1,4,16,64,256,1024", 1, BENCH_MAX_DIM, o->ms, BENCH_MAX_LIST);
    }
    /* what a shape's run holds at once, for its largest shape: every weight's rotation copies (at
     * least two, of a bf16 copy at most), A twice (bf16 and fp16), C on the host and in the context;
     * with --moe, two stacks of E experts, each also prepared as a stack and expert by expert */
    size_t max_m = 0;
    for (int i = 0; i < o->m_count; i++) max_m = o->ms[i] > max_m ? o->ms[i] : max_m;
    for (int s = 0; s < o->shape_count; s++) {
        tool_bytes b = {0, false};
        const size_t n = o->shapes[s][0], k = o->shapes[s][1];
        tool_bytes_add(&b, (size_t)o->format_count + 1, (size_t)(o->rotate_mb * 1048576.0), 1);
        if (o->moe_experts) tool_bytes_add(&b, 2 * 3 * o->moe_experts, n, k * 2);
        else tool_bytes_add(&b, (size_t)o->format_count + 1, n, k * 2 * 2);
        tool_bytes_add(&b, max_m * (o->moe_topk ? o->moe_topk : 1), k, 2 * 2);
        tool_bytes_add(&b, max_m * (o->moe_topk ? o->moe_topk : 1), n, 4 * 2);
        if (!tool_bytes_fit("bench", &b)) return -1;
    }
    return 0;
}

/* A weight and its rotation copies, prepared on the context. */
typedef struct bench_weight {
    qmm_weight *copies;
    int count;
    size_t bytes; /* data + block scales (+ channel scales) of one copy */
} bench_weight;

static void bench_weight_free(bench_weight *b)
{
    for (int i = 0; i < b->count; i++) {
        qmm_weight_unprepare(&b->copies[i]);
        if (i == 0) qmm_weight_free(&b->copies[0]);
        else free(b->copies[i].data), free(b->copies[i].block_scales), free(b->copies[i].channel_scales);
    }
    free(b->copies);
    memset(b, 0, sizeof *b);
}

static qmm_status bench_weight_make(qmm_context *ctx, qmm_format f, size_t n, size_t k, double rotate_mb, bench_weight *b)
{
    memset(b, 0, sizeof *b);
    qmm_weight w;
    if (tool_random_weight(&w, f, n, k, 1000 + (uint64_t)f) != 0) return QMM_ERR_OUT_OF_MEMORY;
    b->bytes = w.data_bytes + w.block_scale_bytes + w.channel_scale_count * sizeof(float);
    int count = (int)ceil(rotate_mb * 1048576.0 / (double)b->bytes);
    if (count < 2) count = 2;
    b->copies = calloc((size_t)count, sizeof *b->copies);
    if (!b->copies) return qmm_weight_free(&w), QMM_ERR_OUT_OF_MEMORY;
    b->copies[0] = w;
    b->count = 1;
    for (int i = 1; i < count; i++) {
        qmm_weight c = w;
        c.data = malloc(w.data_bytes);
        c.block_scales = w.block_scale_bytes ? malloc(w.block_scale_bytes) : NULL;
        c.channel_scales = w.channel_scale_count ? malloc(w.channel_scale_count * sizeof(float)) : NULL;
        if (!c.data || (w.block_scale_bytes && !c.block_scales) || (w.channel_scale_count && !c.channel_scales)) {
            free(c.data), free(c.block_scales), free(c.channel_scales);
            bench_weight_free(b);
            return QMM_ERR_OUT_OF_MEMORY;
        }
        memcpy(c.data, w.data, w.data_bytes);
        if (c.block_scales) memcpy(c.block_scales, w.block_scales, w.block_scale_bytes);
        if (c.channel_scales) memcpy(c.channel_scales, w.channel_scales, w.channel_scale_count * sizeof(float));
        b->copies[b->count++] = c;
    }
    for (int i = 0; i < b->count; i++) {
        qmm_status st = qmm_weight_prepare(ctx, &b->copies[i]);
        if (st != QMM_OK) {
            bench_weight_free(b);
            return st;
        }
    }
    return QMM_OK;
}

typedef struct bench_run {
    double us, rel_err;
    qmm_path path;
    qmm_status status;
    /* the machine over the timed batches, read after each (qmm_context_machine_state): the lowest SM
     * clock, the highest power and every clock-lowering reason seen; known = 0 where not readable */
    qmm_machine_state machine;
} bench_run;

size_t bench_elem(qmm_dtype t) { return t == QMM_DTYPE_FP32 ? 4 : 2; }

/* Relative Frobenius error of C (out_type, m x n) against the reference rows repeated down M. */
static double bench_check(const void *c, qmm_dtype t, size_t m, size_t n, const float *ref)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            size_t idx = i * n + j;
            double got = t == QMM_DTYPE_FP32 ? ((const float *)c)[idx]
                         : t == QMM_DTYPE_BF16 ? qmm_bf16_to_fp32(((const uint16_t *)c)[idx])
                                               : qmm_fp16_to_fp32(((const uint16_t *)c)[idx]);
            double want = ref[(i % BENCH_PROBE_ROWS) * n + j];
            if (isnan(got)) return INFINITY;
            num += (got - want) * (got - want);
            den += want * want;
        }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static bench_run bench_time(qmm_context *ctx, const bench_options *o, bench_weight *bw, size_t m, qmm_dtype a_type,
                            const void *a_buf, void *c_buf, void *c_host, const float *ref)
{
    bench_run r = {0};
    const size_t n = bw->copies[0].n, k = bw->copies[0].k;
    qmm_matmul_plan(ctx, m, a_type, &bw->copies[0], &r.path);
    /* correctness first, with C poisoned */
    memset(c_host, 0xff, m * n * bench_elem(o->out_type));
    r.status = qmm_buffer_write(ctx, c_buf, c_host, m * n * bench_elem(o->out_type));
    if (r.status == QMM_OK) r.status = qmm_matmul(ctx, m, a_type, a_buf, k, &bw->copies[0], o->out_type, c_buf, n, NULL);
    if (r.status == QMM_OK) r.status = qmm_buffer_read(ctx, c_host, c_buf, m * n * bench_elem(o->out_type));
    if (r.status != QMM_OK) return r;
    r.rel_err = ref ? bench_check(c_host, o->out_type, m, n, ref) : 0.0;
    /* warm-up, and the size of a batch */
    int next = 0;
    double t0 = tool_now();
    for (int i = 0; i < 3 && r.status == QMM_OK; i++)
        r.status = qmm_matmul(ctx, m, a_type, a_buf, k, &bw->copies[next++ % bw->count], o->out_type, c_buf, n, NULL);
    if (r.status == QMM_OK) r.status = qmm_context_synchronize(ctx);
    if (r.status != QMM_OK) return r;
    double per = (tool_now() - t0) / 3;
    int batch = (int)(o->batch_ms * 1e-3 / (per > 1e-7 ? per : 1e-7));
    batch = batch < 1 ? 1 : batch > 2000 ? 2000 : batch;
    double times[BENCH_MAX_REPS];
    const int reps = o->reps;
    for (int rep = 0; rep < reps && r.status == QMM_OK; rep++) {
        t0 = tool_now();
        for (int i = 0; i < batch && r.status == QMM_OK; i++)
            r.status = qmm_matmul(ctx, m, a_type, a_buf, k, &bw->copies[next++ % bw->count], o->out_type, c_buf, n, NULL);
        if (r.status == QMM_OK) r.status = qmm_context_synchronize(ctx);
        times[rep] = (tool_now() - t0) / batch;
        qmm_machine_state now;
        if (qmm_context_machine_state(ctx, &now) == QMM_OK && now.known) {
            if (!r.machine.known || now.sm_mhz < r.machine.sm_mhz) r.machine.sm_mhz = now.sm_mhz;
            if (now.power_w > r.machine.power_w) r.machine.power_w = now.power_w;
            r.machine.clock_reasons |= now.clock_reasons;
            r.machine.known = 1;
        }
    }
    r.us = tool_median(times, reps) * 1e6;
    return r;
}

static void bench_print_header(const bench_options *o, qmm_context *ctx, const qmm_machine_rates *rates)
{
    if (o->json) return;
    printf("qmm %s bench: %s\n", qmm_version(), qmm_context_describe(ctx));
    printf("measured: copy/read bandwidth %.1f GB/s", rates->copy_gbps);
    if (rates->fp32_gflops > 0) printf(", fp32 FMA peak %.0f GFLOP/s", rates->fp32_gflops);
    if (rates->bf16_gflops > 0) printf(", bf16 dot peak %.0f GFLOP/s", rates->bf16_gflops);
    printf("\nactivations %s, output %s; weights rotated over >= %.0f MB; median of %d batches\n\n",
           qmm_dtype_name(o->a_type), qmm_dtype_name(o->out_type), o->rotate_mb, o->reps);
    printf("%-12s %-11s %6s %6s %6s %10s %9s %6s %9s %9s %6s %10s %8s %9s %6s\n", "format", "path", "M", "N", "K", "us", "GB/s",
           "%bw", "GFLOP/s", "TFLOP/s", "%peak", "dense_us", "speedup", "rel_err", "MHz");
    fflush(stdout);
}

/* plan: the row's qmm_matmul_explain line (--explain), or NULL */
static void bench_print_row(const bench_options *o, qmm_context *ctx, const qmm_machine_rates *rates, qmm_format f,
                            qmm_dtype a_type, const bench_run *r, size_t m, size_t n, size_t k, size_t bytes, double dense_us,
                            const char *plan)
{
    qmm_format_traits t;
    qmm_format_get_traits(f, &t);
    qmm_backend b;
    qmm_context_get_backend(ctx, &b);
    double gbps = (double)bytes / (r->us * 1e-6) * 1e-9;
    double tflops = 2.0 * (double)m * (double)n * (double)k / (r->us * 1e-6) * 1e-12;
    double peak = rates->bf16_gflops > 0 ? rates->bf16_gflops : rates->fp32_gflops;
    double pct_peak = peak > 0 ? 100.0 * tflops * 1e3 / peak : 0.0;
    double speedup = dense_us > 0 ? dense_us / r->us : 0.0;
    double pct_bw = rates->copy_gbps > 0 ? 100.0 * gbps / rates->copy_gbps : 0.0;
    if (o->json) {
        printf("{\"backend\":\"%s\",\"device\":\"%s\",\"format\":\"%s\",\"path\":\"%s\",\"M\":%zu,\"N\":%zu,\"K\":%zu,"
               "\"us\":%.3f,\"weight_bytes\":%zu,\"gbps\":%.2f,\"pct_bw\":%.1f,\"copy_gbps\":%.1f,\"tflops\":%.4f,"
               "\"pct_peak\":%.1f,\"dense_us\":%.3f,\"speedup_vs_dense\":%.3f,\"rel_err\":%.3e,\"out\":\"%s\","
               "\"gflops\":%.2f,\"peak_gflops\":%.1f,\"a_type\":\"%s\"",
               qmm_backend_name(b), qmm_context_describe(ctx), t.name, qmm_path_name(r->path), m, n, k, r->us, bytes, gbps,
               pct_bw, rates->copy_gbps, tflops, pct_peak, dense_us, speedup, r->rel_err, qmm_dtype_name(o->out_type),
               tflops * 1e3, peak, qmm_dtype_name(a_type));
        if (r->machine.known)
            printf(",\"sm_mhz\":%.0f,\"power_w\":%.1f,\"clock_reasons\":%llu", r->machine.sm_mhz, r->machine.power_w,
                   r->machine.clock_reasons);
        if (plan) printf(",\"plan\":\"%s\"", plan); /* no quote or backslash in a plan's text */
        printf("}\n");
    } else {
        char pk[16] = "-", mhz[16] = "-";
        if (peak > 0) snprintf(pk, sizeof pk, "%.1f", pct_peak);
        if (r->machine.known) snprintf(mhz, sizeof mhz, "%.0f", r->machine.sm_mhz);
        printf("%-12s %-11s %6zu %6zu %6zu %10.2f %9.1f %6.1f %9.1f %9.3f %6s %10.2f %8.2f %9.2e %6s\n", t.name,
               qmm_path_name(r->path), m, n, k, r->us, gbps, pct_bw, tflops * 1e3, tflops, pk, dense_us, speedup, r->rel_err,
               mhz);
        if (plan) printf("    plan: %s\n", plan);
    }
    fflush(stdout);
}

double bench_tolerance(qmm_dtype t) { return t == QMM_DTYPE_BF16 ? 1e-2 : t == QMM_DTYPE_FP16 ? 2e-3 : 1e-4; }

/* One weight of a shape's run: the dense bf16 baseline (entry 0) or a quantized format, its rotation
 * copies, and the reference product of the probe rows with it. */
typedef struct bench_entry {
    qmm_format format;
    bench_weight w;
    float *ref;
} bench_entry;

void bench_pause(double ms)
{
    if (ms <= 0) return;
    struct timespec ts = {(time_t)(ms / 1000), (long)(fmod(ms, 1000) * 1e6)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static int bench_shape(qmm_context *ctx, const bench_options *o, const qmm_machine_rates *rates, size_t n, size_t k, int explain)
{
    size_t max_m = 0;
    for (int i = 0; i < o->m_count; i++) max_m = o->ms[i] > max_m ? o->ms[i] : max_m;
    const int entries = o->format_count + 1;
    uint16_t *probe = malloc(BENCH_PROBE_ROWS * k * 2), *a = malloc(max_m * k * 2);
    void *c_host = malloc(max_m * n * 4), *a_buf = NULL, *c_buf = NULL, *aq_buf = NULL;
    bench_entry *e = calloc((size_t)entries, sizeof *e);
    int failures = 0;
    qmm_status st = (probe && a && c_host && e) ? QMM_OK : QMM_ERR_OUT_OF_MEMORY;
    if (st == QMM_OK) {
        tool_random_bf16(probe, BENCH_PROBE_ROWS * k, 77);
        for (size_t i = 0; i < max_m; i++) memcpy(a + i * k, probe + (i % BENCH_PROBE_ROWS) * k, k * 2);
        st = qmm_buffer_alloc(ctx, max_m * k * 2, &a_buf);
    }
    if (st == QMM_OK) st = qmm_buffer_alloc(ctx, max_m * n * 4, &c_buf);
    if (st == QMM_OK) st = qmm_buffer_write(ctx, a_buf, a, max_m * k * 2);
    /* fp16 activations for the quantized formats: the same values (a bf16 value of magnitude 2^-17 to
     * 65504 is an fp16 value; the rare smaller ones of these N(0, 1) draws round to fp16's subnormal
     * grid, far inside the check's tolerance), so the same reference product checks them */
    if (st == QMM_OK && o->a_type == QMM_DTYPE_FP16) {
        for (size_t i = 0; i < max_m * k; i++) a[i] = qmm_fp32_to_fp16(qmm_bf16_to_fp32(a[i]));
        st = qmm_buffer_alloc(ctx, max_m * k * 2, &aq_buf);
        if (st == QMM_OK) st = qmm_buffer_write(ctx, aq_buf, a, max_m * k * 2);
    }
    /* every weight of the shape at once, so that each M's rows (dense first) run back to back, at the
     * same state of the machine: a ratio of two rows timed minutes apart could hold two clocks (a
     * GPU's power cap, above) */
    for (int i = 0; i < entries && st == QMM_OK; i++) {
        e[i].format = i == 0 ? QMM_FORMAT_BF16 : o->formats[i - 1];
        st = bench_weight_make(ctx, e[i].format, n, k, o->rotate_mb, &e[i].w);
        if (st == QMM_OK && !(e[i].ref = malloc(BENCH_PROBE_ROWS * n * sizeof(float)))) st = QMM_ERR_OUT_OF_MEMORY;
        if (st == QMM_OK) st = tool_reference_product(&e[i].w.copies[0], probe, BENCH_PROBE_ROWS, e[i].ref, tool_cpu_count());
    }
    for (int mi = 0; mi < o->m_count && st == QMM_OK; mi++) {
        const size_t m = o->ms[mi];
        double dense_us = 0;
        for (int i = 0; i < entries && st == QMM_OK; i++) {
            /* the dense path is the backend's own choice; the formats take --path */
            st = qmm_context_set_path(ctx, i == 0 ? QMM_PATH_AUTO : o->path);
            if (st != QMM_OK) break;
            /* the dense baseline keeps bf16 activations; the formats take --a-type */
            const qmm_dtype a_type = i == 0 ? QMM_DTYPE_BF16 : o->a_type;
            bench_pause(o->cool_ms);
            const bench_run r = bench_time(ctx, o, &e[i].w, m, a_type, i == 0 || !aq_buf ? a_buf : aq_buf, c_buf, c_host,
                                           e[i].ref);
            st = r.status;
            if (st != QMM_OK) break;
            if (i == 0) dense_us = r.us;
            if (r.rel_err > bench_tolerance(o->out_type)) {
                qmm_format_traits t;
                qmm_format_get_traits(e[i].format, &t);
                fprintf(stderr, "qmm bench: CHECK FAILED: %s %s M=%zu N=%zu K=%zu rel_err %.3e\n", t.name,
                        qmm_path_name(r.path), m, n, k, r.rel_err);
                failures++;
            }
            char plan[640];
            if (explain && qmm_matmul_explain(ctx, m, a_type, &e[i].w.copies[0], plan, sizeof plan) != QMM_OK)
                snprintf(plan, sizeof plan, "(not known: %s)", qmm_last_error());
            bench_print_row(o, ctx, rates, e[i].format, a_type, &r, m, n, k, e[i].w.bytes, dense_us, explain ? plan : NULL);
        }
    }
    qmm_context_set_path(ctx, QMM_PATH_AUTO);
    for (int i = 0; e && i < entries; i++) { /* bench_weight_free takes an unmade (zeroed) weight too */
        bench_weight_free(&e[i].w);
        free(e[i].ref);
    }
    qmm_buffer_free(ctx, a_buf);
    qmm_buffer_free(ctx, aq_buf);
    qmm_buffer_free(ctx, c_buf);
    free(e), free(probe), free(a), free(c_host);
    if (st != QMM_OK) return tool_report("bench", st);
    return failures ? 1 : 0;
}

int cmd_bench(int argc, char **argv)
{
    bench_options o;
    memset(&o, 0, sizeof o);
    o.backend = QMM_BACKEND_AUTO;
    o.out_type = QMM_DTYPE_BF16;
    o.a_type = QMM_DTYPE_BF16;
    o.reps = 7;
    o.rotate_mb = 256;
    o.batch_ms = 20;
    bench_parse_formats("nvfp4,mxfp4,fp8_tensor,fp8_channel", &o);
    bench_parse_shapes("4096:14336,14336:4096,6144:18432,28672:8192,8192:28672", &o);
    o.m_count = tool_parse_uint_list("1,2,4,8,16,32,64,128,256,512,1024,2048,4096,8192", 1, BENCH_MAX_DIM, o.ms, BENCH_MAX_LIST);
    /* --explain, a flag of this run only (bench_options is shared with the mixture-of-experts run) */
    int explain = 0, kept = 0;
    char **args = malloc(((size_t)argc + 1) * sizeof *args);
    if (!args) return tool_report("bench", QMM_ERR_OUT_OF_MEMORY);
    for (int i = 0; i < argc; i++) {
        if (i > 0 && strcmp(argv[i], "--explain") == 0) explain = 1;
        else args[kept++] = argv[i];
    }
    args[kept] = NULL;
    const int p = bench_parse(kept, args, &o);
    free(args);
    if (p != 0) {
        if (p > 0) bench_usage(stdout);
        else fprintf(stderr, "'qmm bench --help' lists the options\n");
        return p > 0 ? 0 : 2;
    }
    qmm_context_options opts;
    qmm_context_options_init(&opts);
    opts.backend = o.backend;
    opts.num_threads = o.threads;
    opts.workspace_bytes = (size_t)(o.workspace_mb * 1048576.0);
    qmm_context *ctx;
    qmm_status st = qmm_context_create(&opts, &ctx);
    if (st != QMM_OK) return tool_report("bench", st);
    if (o.path != QMM_PATH_AUTO && (st = qmm_context_set_path(ctx, o.path)) != QMM_OK) {
        qmm_context_destroy(ctx);
        return tool_report("bench", st);
    }
    qmm_machine_rates rates;
    st = qmm_context_measure_rates(ctx, 0, &rates);
    if (st != QMM_OK) {
        qmm_context_destroy(ctx);
        return tool_report("bench", st);
    }
    int rc = 0;
    if (o.moe_experts) {
        rc = bench_moe(ctx, &o, &rates);
        qmm_context_destroy(ctx);
        return rc;
    }
    bench_print_header(&o, ctx, &rates);
    for (int s = 0; s < o.shape_count; s++) rc |= bench_shape(ctx, &o, &rates, o.shapes[s][0], o.shapes[s][1], explain);
    qmm_context_destroy(ctx);
    return rc;
}
