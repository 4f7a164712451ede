/* qmm bench --moe E:TOPK: the grouped call over a stack of E experts (qmm_matmul_grouped) for M tokens
 * routed to TOPK distinct experts each, drawn uniformly at random with a fixed seed. For each format,
 * shape (one expert's N:K) and M, in one process:
 * - the check first: every output row against the reference backend's product of its token with its
 *   expert (A has BENCH_PROBE_ROWS distinct token rows repeated, so the reference computes each
 *   expert's product with those rows once);
 * - the grouped call, with A read through the routing's row index: its median time, the bytes of the
 *   experts it touches (each read once) over that time, against the same-run read bandwidth;
 * - the naive loop: one qmm_matmul per non-empty expert (its rows gathered beforehand, each expert
 *   prepared as its own weight), timed the same way;
 * - from 256 tokens, the dense GEMM rate of the same path: qmm_matmul of all the routed rows against one
 *   expert, in GFLOP/s, beside the grouped call's.
 * Timing as the dense run's (cmd_bench.c): warm-up, batches of calls between two synchronisations, the
 * median of --reps batches. The experts come from memory, as in a model whose other layers pass between
 * two calls of one layer: the stack is copied until the copies pass --rotate-mb, and the calls cycle
 * through MOE_ROUTINGS routings of the M tokens (each with its own seed) as well as through the copies,
 * so that successive calls touch other experts (MOE_ROUTINGS is odd: with two copies every routing meets
 * both). Touched bytes and GB/s are averages over the routings. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "common.h"

#define MOE_SEED 20261207u
#define MOE_ROUTINGS 7

/* A stack of E random experts: one random weight of E x N rows, described as E experts of N rows. */
static int moe_stack(qmm_weight *w, qmm_format f, size_t experts, size_t n, size_t k, uint64_t seed)
{
    if (tool_random_weight(w, f, experts * n, k, seed) != 0) return -1;
    w->n = n;
    w->experts = experts;
    if (f == QMM_FORMAT_NVFP4 || f == QMM_FORMAT_FP8_TENSOR) {
        w->tensor_scales = malloc(experts * sizeof(float));
        if (!w->tensor_scales) return -1;
        for (size_t e = 0; e < experts; e++) w->tensor_scales[e] = w->tensor_scale;
    }
    return qmm_weight_validate(w) == QMM_OK ? 0 : -1;
}

/* Expert e of stack w as a weight of its own over the stack's buffers. */
static qmm_weight moe_expert(const qmm_weight *w, size_t e)
{
    qmm_weight_size s;
    qmm_weight_size_query(w->format, QMM_SCALE_LAYOUT_CANONICAL, w->n, w->k, &s);
    qmm_weight v = *w;
    v.experts = 1, v.tensor_scales = NULL, v.prepared = NULL;
    v.data = w->data + e * s.data_bytes, v.data_bytes = s.data_bytes;
    v.block_scales = w->block_scales ? w->block_scales + e * s.block_scale_bytes : NULL;
    v.block_scale_bytes = s.block_scale_bytes;
    v.channel_scales = w->channel_scales ? w->channel_scales + e * w->n : NULL;
    v.channel_scale_count = s.channel_scale_count;
    if (w->tensor_scales) v.tensor_scale = w->tensor_scales[e];
    return v;
}

/* The routing of `tokens` tokens to `topk` distinct experts of E: grouped order, offsets, row index. */
static void moe_route(size_t tokens, size_t topk, size_t experts, uint64_t seed, size_t *offsets, int32_t *rows)
{
    tool_rng r;
    tool_rng_seed(&r, seed);
    size_t *choice = malloc(tokens * topk * sizeof *choice), *count = calloc(experts + 1, sizeof *count);
    for (size_t t = 0; t < tokens; t++)
        for (size_t j = 0; j < topk; j++) {
            size_t e;
            int fresh;
            do {
                e = tool_rng_next(&r) % experts;
                fresh = 1;
                for (size_t i = 0; i < j; i++) fresh &= choice[t * topk + i] != e;
            } while (!fresh);
            choice[t * topk + j] = e;
            count[e + 1]++;
        }
    offsets[0] = 0;
    for (size_t e = 0; e < experts; e++) { /* count[e + 1] rows for expert e; count[e] becomes its cursor */
        offsets[e + 1] = offsets[e] + count[e + 1];
        count[e] = offsets[e];
    }
    for (size_t t = 0; t < tokens; t++)
        for (size_t j = 0; j < topk; j++) rows[count[choice[t * topk + j]]++] = (int32_t)t;
    free(choice);
    free(count);
}

/* One measured thing: the call-th call (its routing and copy of the weights). */
typedef qmm_status (*moe_call)(void *arg, int call);

/* The median time of one call of each of `count` things in us: a warm-up of each, then --reps rounds in
 * which each thing runs one batch of calls between two synchronisations. The things alternate within a
 * round, so that their ratio holds one state of the machine (a VM's bandwidth drifts by tens of per cent
 * between runs). */
static qmm_status moe_time(qmm_context *ctx, const bench_options *o, const moe_call *calls, int count, void *arg, double *us)
{
    int batch[3], next = 0;
    double times[3][BENCH_MAX_REPS];
    qmm_status st = QMM_OK;
    for (int t = 0; t < count && st == QMM_OK; t++) {
        const double t0 = tool_now();
        for (int i = 0; i < 2 && st == QMM_OK; i++) st = calls[t](arg, next++);
        if (st == QMM_OK) st = qmm_context_synchronize(ctx);
        const double per = (tool_now() - t0) / 2;
        batch[t] = (int)(o->batch_ms * 1e-3 / (per > 1e-7 ? per : 1e-7));
        batch[t] = batch[t] < 1 ? 1 : batch[t] > 2000 ? 2000 : batch[t];
    }
    for (int rep = 0; rep < o->reps && st == QMM_OK; rep++)
        for (int t = 0; t < count && st == QMM_OK; t++) {
            const double t0 = tool_now();
            for (int i = 0; i < batch[t] && st == QMM_OK; i++) st = calls[t](arg, next++ % (MOE_ROUTINGS * 64));
            if (st == QMM_OK) st = qmm_context_synchronize(ctx);
            times[t][rep] = (tool_now() - t0) / batch[t];
        }
    for (int t = 0; t < count && st == QMM_OK; t++) us[t] = tool_median(times[t], o->reps) * 1e6;
    return st;
}

typedef struct moe_run {
    qmm_context *ctx;
    qmm_weight *stacks;   /* copies */
    qmm_weight **experts; /* copies x E, each prepared on its own (the naive loop) */
    int copies;
    size_t experts_count, m, n, k, tokens;
    size_t *offsets;      /* MOE_ROUTINGS x (E + 1) */
    int32_t *rows;        /* MOE_ROUTINGS x m */
    const uint16_t *a;    /* the tokens, bf16 */
    uint16_t *ag;         /* MOE_ROUTINGS x the routed rows gathered, for the naive loop */
    void *c;
    qmm_dtype c_type;
} moe_run;

/* Call i's routing and copy of the weights. */
static size_t moe_routing(int call) { return (size_t)call % MOE_ROUTINGS; }
static int moe_copy(const moe_run *r, int call) { return call % r->copies; }

static qmm_status moe_grouped(void *arg, int call)
{
    const moe_run *r = arg;
    const size_t q = moe_routing(call);
    return qmm_matmul_grouped(r->ctx, r->m, r->offsets + q * (r->experts_count + 1), r->rows + q * r->m, r->tokens,
                              QMM_DTYPE_BF16, r->a, r->k, &r->stacks[moe_copy(r, call)], r->c_type, r->c, r->n, NULL);
}

static qmm_status moe_loop(void *arg, int call)
{
    const moe_run *r = arg;
    const size_t csize = bench_elem(r->c_type), q = moe_routing(call);
    const size_t *offsets = r->offsets + q * (r->experts_count + 1);
    const uint16_t *ag = r->ag + q * r->m * r->k;
    for (size_t e = 0; e < r->experts_count; e++) {
        const size_t r0 = offsets[e], cnt = offsets[e + 1] - r0;
        if (!cnt) continue;
        qmm_status st = qmm_matmul(r->ctx, cnt, QMM_DTYPE_BF16, ag + r0 * r->k, r->k, &r->experts[moe_copy(r, call)][e],
                                   r->c_type, (char *)r->c + r0 * r->n * csize, r->n, NULL);
        if (st != QMM_OK) return st;
    }
    return QMM_OK;
}

/* All the routed rows against one expert (another for each routing): the dense GEMM of the same rows. */
static qmm_status moe_dense(void *arg, int call)
{
    const moe_run *r = arg;
    return qmm_matmul(r->ctx, r->m, QMM_DTYPE_BF16, r->ag + moe_routing(call) * r->m * r->k, r->k,
                      &r->experts[moe_copy(r, call)][moe_routing(call) % r->experts_count], r->c_type, r->c, r->n, NULL);
}

/* The relative error of C (grouped order, routing 0) against the reference rows ref[e][token % probes]. */
static double moe_check(const moe_run *r, const float *ref)
{
    double num = 0, den = 0;
    for (size_t e = 0; e < r->experts_count; e++)
        for (size_t i = r->offsets[e]; i < r->offsets[e + 1]; i++) {
            const float *want = ref + (e * BENCH_PROBE_ROWS + (size_t)r->rows[i] % BENCH_PROBE_ROWS) * r->n;
            for (size_t j = 0; j < r->n; j++) {
                const size_t idx = i * r->n + j;
                const double got = r->c_type == QMM_DTYPE_FP32 ? ((const float *)r->c)[idx]
                                   : r->c_type == QMM_DTYPE_BF16 ? qmm_bf16_to_fp32(((const uint16_t *)r->c)[idx])
                                                                 : qmm_fp16_to_fp32(((const uint16_t *)r->c)[idx]);
                if (isnan(got)) return INFINITY;
                num += (got - want[j]) * (got - want[j]);
                den += (double)want[j] * want[j];
            }
        }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* The reference products of the probe rows with every expert: ref[e][p][n], one grouped call. */
static qmm_status moe_reference(const qmm_weight *stack, const uint16_t *probe, float *ref)
{
    qmm_context_options opts;
    qmm_context_options_init(&opts);
    opts.backend = QMM_BACKEND_REFERENCE;
    qmm_context *ref_ctx;
    qmm_status st = qmm_context_create(&opts, &ref_ctx);
    if (st != QMM_OK) return st;
    const size_t experts = stack->experts, m = experts * BENCH_PROBE_ROWS;
    size_t *offsets = malloc((experts + 1) * sizeof *offsets);
    int32_t *rows = malloc(m * sizeof *rows);
    qmm_weight host = *stack;
    host.prepared = NULL;
    st = offsets && rows ? QMM_OK : QMM_ERR_OUT_OF_MEMORY;
    for (size_t e = 0; st == QMM_OK && e <= experts; e++) offsets[e] = e * BENCH_PROBE_ROWS;
    for (size_t i = 0; st == QMM_OK && i < m; i++) rows[i] = (int32_t)(i % BENCH_PROBE_ROWS);
    if (st == QMM_OK)
        st = qmm_matmul_grouped(ref_ctx, m, offsets, rows, BENCH_PROBE_ROWS, QMM_DTYPE_BF16, probe, stack->k, &host,
                                QMM_DTYPE_FP32, ref, stack->n, NULL);
    free(offsets);
    free(rows);
    qmm_context_destroy(ref_ctx);
    return st;
}

static void moe_print(const bench_options *o, qmm_context *ctx, const qmm_machine_rates *rates, qmm_format f,
                      const moe_run *r, double us, double touched, double loop_us, double dense_us, double rel_err)
{
    qmm_format_traits t;
    qmm_format_get_traits(f, &t);
    const double gbps = touched / (us * 1e-6) * 1e-9, gflops = 2.0 * (double)r->m * (double)r->n * (double)r->k / (us * 1e3);
    const double dense_gflops = dense_us > 0 ? 2.0 * (double)r->m * (double)r->n * (double)r->k / (dense_us * 1e3) : 0;
    const double pct_bw = rates->copy_gbps > 0 ? 100.0 * gbps / rates->copy_gbps : 0;
    if (o->json) {
        printf("{\"backend\":\"cpu\",\"device\":\"%s\",\"format\":\"%s\",\"E\":%zu,\"topk\":%zu,\"N\":%zu,\"K\":%zu,\"M\":%zu,"
               "\"rows\":%zu,\"us\":%.3f,\"touched_bytes\":%.0f,\"gbps\":%.2f,\"pct_bw\":%.1f,\"copy_gbps\":%.1f,"
               "\"loop_us\":%.3f,\"speedup_vs_loop\":%.3f,\"gflops\":%.2f,\"dense_us\":%.3f,\"dense_gflops\":%.2f,"
               "\"pct_dense\":%.1f,\"rel_err\":%.3e}\n",
               qmm_context_describe(ctx), t.name, r->experts_count, o->moe_topk, r->n, r->k, r->tokens, r->m, us, touched,
               gbps, pct_bw, rates->copy_gbps, loop_us, loop_us / us, gflops, dense_us, dense_gflops,
               dense_gflops > 0 ? 100.0 * gflops / dense_gflops : 0.0, rel_err);
    } else {
        char dense[32] = "-", pct[16] = "-";
        if (dense_us > 0) snprintf(dense, sizeof dense, "%.1f", dense_gflops), snprintf(pct, sizeof pct, "%.0f", 100.0 * gflops / dense_gflops);
        printf("%-12s %4zu %4zu %6zu %6zu %6zu %11.1f %9.1f %6.1f %11.1f %7.2f %9.1f %9s %6s %9.2e\n", t.name, r->experts_count,
               o->moe_topk, r->n, r->k, r->tokens, us, gbps, pct_bw, loop_us, loop_us / us, gflops, dense, pct, rel_err);
    }
    fflush(stdout);
}

/* Every M for one format and shape. */
static int moe_shape(qmm_context *ctx, const bench_options *o, const qmm_machine_rates *rates, qmm_format f, size_t n, size_t k)
{
    const size_t experts = o->moe_experts, topk = o->moe_topk;
    size_t max_tokens = 0;
    for (int i = 0; i < o->m_count; i++) max_tokens = o->ms[i] > max_tokens ? o->ms[i] : max_tokens;
    const size_t max_rows = max_tokens * topk;
    qmm_weight_size sz;
    qmm_weight_size_query(f, QMM_SCALE_LAYOUT_CANONICAL, n, k, &sz);
    const double expert_bytes = (double)sz.data_bytes + (double)sz.block_scale_bytes + 4.0 * (double)sz.channel_scale_count;
    int copies = (int)ceil(o->rotate_mb * 1048576.0 / (expert_bytes * (double)experts));
    copies = copies < 2 ? 2 : copies;
    moe_run r = {.ctx = ctx, .experts_count = experts, .n = n, .k = k, .c_type = o->out_type, .copies = copies};
    r.stacks = calloc((size_t)copies, sizeof *r.stacks);
    r.experts = calloc((size_t)copies, sizeof *r.experts);
    r.offsets = malloc(MOE_ROUTINGS * (experts + 1) * sizeof *r.offsets);
    r.rows = malloc(MOE_ROUTINGS * max_rows * sizeof *r.rows);
    r.ag = malloc(MOE_ROUTINGS * max_rows * k * 2);
    uint16_t *probe = malloc(BENCH_PROBE_ROWS * k * 2), *a = malloc(max_tokens * k * 2);
    float *ref = malloc(experts * BENCH_PROBE_ROWS * n * sizeof(float));
    r.c = malloc(max_rows * n * 4);
    qmm_status st = (r.stacks && r.experts && r.offsets && r.rows && r.ag && probe && a && ref && r.c) ? QMM_OK
                                                                                                    : QMM_ERR_OUT_OF_MEMORY;
    for (int c = 0; c < copies && st == QMM_OK; c++) {
        if (moe_stack(&r.stacks[c], f, experts, n, k, 1000 + (uint64_t)f) != 0) st = QMM_ERR_OUT_OF_MEMORY;
        if (st == QMM_OK && !(r.experts[c] = calloc(experts, sizeof **r.experts))) st = QMM_ERR_OUT_OF_MEMORY;
        for (size_t e = 0; st == QMM_OK && e < experts; e++) {
            r.experts[c][e] = moe_expert(&r.stacks[c], e);
            st = qmm_weight_prepare(ctx, &r.experts[c][e]);
        }
        if (st == QMM_OK) st = qmm_weight_prepare(ctx, &r.stacks[c]);
    }
    if (st == QMM_OK) {
        tool_random_bf16(probe, BENCH_PROBE_ROWS * k, 77);
        for (size_t t = 0; t < max_tokens; t++) memcpy(a + t * k, probe + (t % BENCH_PROBE_ROWS) * k, k * 2);
        st = moe_reference(&r.stacks[0], probe, ref);
    }
    int failures = 0;
    for (int mi = 0; mi < o->m_count && st == QMM_OK; mi++) {
        r.tokens = o->ms[mi];
        r.m = r.tokens * topk;
        r.a = a;
        double touched = 0;
        for (size_t q = 0; q < MOE_ROUTINGS; q++) {
            size_t *offsets = r.offsets + q * (experts + 1);
            int32_t *rows = r.rows + q * r.m;
            moe_route(r.tokens, topk, experts, MOE_SEED + MOE_ROUTINGS * r.tokens + q, offsets, rows);
            for (size_t i = 0; i < r.m; i++) memcpy(r.ag + (q * r.m + i) * k, a + (size_t)rows[i] * k, k * 2);
            for (size_t e = 0; e < experts; e++) touched += offsets[e + 1] > offsets[e] ? expert_bytes / MOE_ROUTINGS : 0;
        }
        bench_pause(o->cool_ms);
        /* the check, on a poisoned C */
        memset(r.c, 0xff, r.m * n * bench_elem(r.c_type));
        st = moe_grouped(&r, 0);
        const double rel_err = st == QMM_OK ? moe_check(&r, ref) : INFINITY;
        if (st == QMM_OK && !(rel_err <= bench_tolerance(r.c_type))) {
            qmm_format_traits t;
            qmm_format_get_traits(f, &t);
            fprintf(stderr, "qmm bench: CHECK FAILED: moe %s E=%zu topk=%zu M=%zu N=%zu K=%zu rel_err %.3e\n", t.name, experts,
                    topk, r.tokens, n, k, rel_err);
            failures++;
        }
        double us[3] = {0, 0, 0};
        const moe_call calls[3] = {moe_grouped, moe_loop, moe_dense};
        if (st == QMM_OK) st = moe_time(ctx, o, calls, r.tokens >= 256 ? 3 : 2, &r, us);
        if (st == QMM_OK) moe_print(o, ctx, rates, f, &r, us[0], touched, us[1], us[2], rel_err);
    }
    for (int c = 0; r.stacks && c < copies; c++) {
        for (size_t e = 0; r.experts && r.experts[c] && e < experts; e++) qmm_weight_unprepare(&r.experts[c][e]);
        if (r.experts) free(r.experts[c]);
        qmm_weight_free(&r.stacks[c]);
    }
    free(r.stacks), free(r.experts), free(r.offsets), free(r.rows), free(probe), free(a), free(r.ag), free(ref), free(r.c);
    if (st != QMM_OK) return tool_report("bench", st);
    return failures ? 1 : 0;
}

int bench_moe(qmm_context *ctx, const bench_options *o, const qmm_machine_rates *rates)
{
    if (!o->json) {
        printf("qmm %s bench --moe %zu:%zu: %s\n", qmm_version(), o->moe_experts, o->moe_topk, qmm_context_describe(ctx));
        printf("measured: read bandwidth %.1f GB/s; bf16 activations, output %s; median of %d batches\n",
               rates->copy_gbps, qmm_dtype_name(o->out_type), o->reps);
        printf("GB/s: bytes of the experts touched (each read once) over the grouped call's time; loop: one qmm_matmul\n"
               "per non-empty expert; dense: qmm_matmul of all the routed rows against one expert (from 256 tokens)\n\n");
        printf("%-12s %4s %4s %6s %6s %6s %11s %9s %6s %11s %7s %9s %9s %6s %9s\n", "format", "E", "topk", "N", "K", "tokens",
               "us", "GB/s", "%bw", "loop_us", "vs loop", "GFLOP/s", "dense", "%dense", "rel_err");
        fflush(stdout);
    }
    int rc = 0;
    for (int s = 0; s < o->shape_count; s++)
        for (int fi = 0; fi < o->format_count; fi++)
            rc |= moe_shape(ctx, o, rates, o->formats[fi], o->shapes[s][0], o->shapes[s][1]);
    return rc;
}
