/* A Llama-style MLP run tensor-parallel over two GPUs of one process with qmm and NCCL (the scheme of
 * Megatron-LM): gate and up column-parallel (each GPU holds half of their rows), the SiLU-gated product
 * on each GPU's half of the intermediate features, down row-parallel (each GPU holds the matching half
 * of its columns) and an all-reduce of the two partial outputs.
 *
 *   y = down( silu(gate(x)) * up(x) ),   gate, up: I x H,  down: H x I
 *
 * Each GPU has its own qmm context on its own stream; the three matmuls, the product and the all-reduce
 * are queued with no host synchronisation between them and captured in one CUDA graph per device,
 * replayed for the timed calls. The weights are cut with qmm_weight_shard, so each GPU's parts hold the
 * full weights' exact values, and the two-GPU result is checked against one GPU running the whole MLP.
 *
 *   tp_mlp --check            small sizes, every format, against one GPU: exit 0 / 1,
 *                             77 (skipped) without two GPUs (the CTest test_cuda_tp, label cuda_multi)
 *   tp_mlp [--hidden H --intermediate I --m 1,16,... --format nvfp4,fp8_tensor --reps R]
 *                             time per layer on one GPU and on two, the all-reduce's share, the speedup
 *                             (default: a 70B-class MLP, H 8192, I 28672, M 1, 16, 128, 1024, 4096)
 */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qmm.h"

#define CK(call)                                                                                     \
    do {                                                                                             \
        cudaError_t e_ = (call);                                                                     \
        if (e_ != cudaSuccess) {                                                                     \
            fprintf(stderr, "tp_mlp: %s: %s (%s:%d)\n", #call, cudaGetErrorString(e_), __FILE__, __LINE__); \
            exit(1);                                                                                 \
        }                                                                                            \
    } while (0)
#define QK(call)                                                                                     \
    do {                                                                                             \
        qmm_status s_ = (call);                                                                      \
        if (s_ != QMM_OK) {                                                                          \
            fprintf(stderr, "tp_mlp: %s: %s: %s\n", #call, qmm_status_string(s_), qmm_last_error()); \
            exit(1);                                                                                 \
        }                                                                                            \
    } while (0)
#define NK(call)                                                                                     \
    do {                                                                                             \
        ncclResult_t r_ = (call);                                                                    \
        if (r_ != ncclSuccess) {                                                                     \
            fprintf(stderr, "tp_mlp: %s: %s\n", #call, ncclGetErrorString(r_));                     \
            exit(1);                                                                                 \
        }                                                                                            \
    } while (0)

enum { MAX_GPUS = 2 };

/* h = silu(g) * u in place of g (bf16): the gate's SiLU is qmm's epilogue, the product is this kernel. */
__global__ void gated_product(__nv_bfloat16 *g, const __nv_bfloat16 *u, size_t count)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x)
        g[i] = __float2bfloat16(__bfloat162float(g[i]) * __bfloat162float(u[i]));
}

/* One GPU's share of the MLP: its parts of the three weights, its buffers, context and stream. */
typedef struct gpu_part {
    int device;
    cudaStream_t stream;
    qmm_context *ctx;
    qmm_weight gate, up, down;
    __nv_bfloat16 *x, *g, *u; /* M x H input, M x I/P gated and up outputs */
    float *y;                 /* M x H partial output, summed over the GPUs in place */
    cudaGraphExec_t graph;
} gpu_part;

/* Queues the MLP of m rows on part q (gpus GPUs: an all-reduce of y after the down projection). */
static void queue_mlp(gpu_part *q, size_t m, size_t hidden, size_t inter_part, int gpus, ncclComm_t comm)
{
    qmm_epilogue silu;
    qmm_epilogue_init(&silu);
    silu.activation = QMM_ACT_SILU;
    QK(qmm_matmul(q->ctx, m, QMM_DTYPE_BF16, q->x, hidden, &q->gate, QMM_DTYPE_BF16, q->g, inter_part, &silu));
    QK(qmm_matmul(q->ctx, m, QMM_DTYPE_BF16, q->x, hidden, &q->up, QMM_DTYPE_BF16, q->u, inter_part, NULL));
    const size_t count = m * inter_part;
    gated_product<<<(unsigned)((count + 255) / 256 < 4096 ? (count + 255) / 256 : 4096), 256, 0, q->stream>>>(q->g, q->u, count);
    CK(cudaGetLastError());
    QK(qmm_matmul(q->ctx, m, QMM_DTYPE_BF16, q->g, inter_part, &q->down, QMM_DTYPE_FP32, q->y, hidden, NULL));
    if (gpus > 1) NK(ncclAllReduce(q->y, q->y, m * hidden, ncclFloat, ncclSum, comm, q->stream));
}

/* Makes part `rank` of `gpus` on device `device`: the weights cut (gate and up along N, down along K),
 * prepared there, and the buffers for up to max_m rows. */
static void make_part(gpu_part *q, int device, int rank, int gpus, const qmm_weight *gate, const qmm_weight *up,
                      const qmm_weight *down, size_t max_m)
{
    const size_t hidden = gate->k, inter = gate->n, inter_part = inter / (size_t)gpus;
    q->device = device;
    CK(cudaSetDevice(device));
    CK(cudaStreamCreateWithFlags(&q->stream, cudaStreamNonBlocking));
    qmm_context_options o;
    qmm_context_options_init(&o);
    o.backend = QMM_BACKEND_CUDA;
    o.cuda_device = device;
    o.cuda_stream = q->stream;
    QK(qmm_context_create(&o, &q->ctx));
    const qmm_weight *full[3] = {gate, up, down};
    qmm_weight *part[3] = {&q->gate, &q->up, &q->down};
    for (int i = 0; i < 3; i++) {
        const qmm_shard_dim dim = i < 2 ? QMM_SHARD_N : QMM_SHARD_K;
        size_t n, k;
        QK(qmm_weight_shard_shape(full[i]->format, full[i]->n, full[i]->k, dim, (size_t)gpus, (size_t)rank, &n, &k));
        QK(qmm_weight_alloc(part[i], full[i]->format, n, k));
        QK(qmm_weight_shard(full[i], dim, (size_t)gpus, (size_t)rank, part[i]));
        QK(qmm_weight_prepare(q->ctx, part[i]));
    }
    CK(cudaMalloc((void **)&q->x, max_m * hidden * 2));
    CK(cudaMalloc((void **)&q->g, max_m * inter_part * 2));
    CK(cudaMalloc((void **)&q->u, max_m * inter_part * 2));
    CK(cudaMalloc((void **)&q->y, max_m * hidden * 4));
    q->graph = NULL;
}

static void free_part(gpu_part *q)
{
    CK(cudaSetDevice(q->device));
    if (q->graph) cudaGraphExecDestroy(q->graph);
    qmm_weight_free(&q->gate), qmm_weight_free(&q->up), qmm_weight_free(&q->down);
    qmm_context_destroy(q->ctx);
    cudaFree(q->x), cudaFree(q->g), cudaFree(q->u), cudaFree(q->y);
    cudaStreamDestroy(q->stream);
}

/* Captures the MLP of m rows on each part into one graph per device (NCCL's all-reduce inside). */
static void capture(gpu_part *parts, int gpus, ncclComm_t *comms, size_t m, size_t hidden, size_t inter)
{
    for (int r = 0; r < gpus; r++) {
        CK(cudaSetDevice(parts[r].device));
        if (parts[r].graph) CK(cudaGraphExecDestroy(parts[r].graph));
        CK(cudaStreamBeginCapture(parts[r].stream, cudaStreamCaptureModeThreadLocal));
    }
    NK(ncclGroupStart()); /* the all-reduces of both devices as one group, queued from one thread */
    for (int r = 0; r < gpus; r++) {
        CK(cudaSetDevice(parts[r].device));
        queue_mlp(&parts[r], m, hidden, inter / (size_t)gpus, gpus, gpus > 1 ? comms[r] : NULL);
    }
    NK(ncclGroupEnd());
    for (int r = 0; r < gpus; r++) {
        cudaGraph_t g;
        CK(cudaSetDevice(parts[r].device));
        CK(cudaStreamEndCapture(parts[r].stream, &g));
        CK(cudaGraphInstantiate(&parts[r].graph, g, 0));
        CK(cudaGraphDestroy(g));
    }
}

/* Replays each device's graph once; waits for all when `wait`. */
static void replay(gpu_part *parts, int gpus, bool wait)
{
    for (int r = 0; r < gpus; r++) {
        CK(cudaSetDevice(parts[r].device));
        CK(cudaGraphLaunch(parts[r].graph, parts[r].stream));
    }
    for (int r = 0; wait && r < gpus; r++) {
        CK(cudaSetDevice(parts[r].device));
        CK(cudaStreamSynchronize(parts[r].stream));
    }
}

/* A random n x k weight of format f. */
static void random_weight(qmm_weight *w, qmm_format f, size_t n, size_t k, unsigned seed)
{
    float *src = (float *)malloc(n * k * sizeof(float));
    srand(seed);
    for (size_t i = 0; i < n * k; i++) src[i] = ((float)rand() / (float)RAND_MAX - 0.5f) * 0.05f;
    QK(qmm_weight_alloc(w, f, n, k));
    QK(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src, k, w));
    free(src);
}

/* The two-GPU MLP against one GPU's, for every format, on sizes where every cut falls on a block. */
static int check(int devices[2])
{
    const size_t hidden = 256, inter = 640, m = 37;
    static const qmm_format formats[4] = {QMM_FORMAT_NVFP4, QMM_FORMAT_MXFP4, QMM_FORMAT_FP8_TENSOR, QMM_FORMAT_FP8_CHANNEL};
    ncclComm_t comms[2];
    NK(ncclCommInitAll(comms, 2, devices));
    int failures = 0;
    __nv_bfloat16 *x = (__nv_bfloat16 *)malloc(m * hidden * 2);
    float *y1 = (float *)malloc(m * hidden * 4), *y2 = (float *)malloc(m * hidden * 4);
    srand(7);
    for (size_t i = 0; i < m * hidden; i++) x[i] = __float2bfloat16((float)rand() / (float)RAND_MAX - 0.5f);
    for (int fi = 0; fi < 4; fi++) {
        qmm_weight gate, up, down;
        random_weight(&gate, formats[fi], inter, hidden, 1);
        random_weight(&up, formats[fi], inter, hidden, 2);
        random_weight(&down, formats[fi], hidden, inter, 3);
        gpu_part one, two[2];
        make_part(&one, devices[0], 0, 1, &gate, &up, &down, m);
        for (int r = 0; r < 2; r++) make_part(&two[r], devices[r], r, 2, &gate, &up, &down, m);
        for (int r = 0; r < 2; r++) {
            CK(cudaSetDevice(two[r].device));
            CK(cudaMemcpy(two[r].x, x, m * hidden * 2, cudaMemcpyHostToDevice));
        }
        CK(cudaSetDevice(one.device));
        CK(cudaMemcpy(one.x, x, m * hidden * 2, cudaMemcpyHostToDevice));
        capture(&one, 1, NULL, m, hidden, inter);
        capture(two, 2, comms, m, hidden, inter);
        replay(&one, 1, true);
        replay(two, 2, true);
        CK(cudaSetDevice(one.device));
        CK(cudaMemcpy(y1, one.y, m * hidden * 4, cudaMemcpyDeviceToHost));
        double num = 0, den = 0;
        for (int r = 0; r < 2; r++) { /* both GPUs hold the sum after the all-reduce */
            CK(cudaSetDevice(two[r].device));
            CK(cudaMemcpy(y2, two[r].y, m * hidden * 4, cudaMemcpyDeviceToHost));
            for (size_t i = 0; i < m * hidden; i++) num += (y2[i] - y1[i]) * (y2[i] - y1[i]), den += (double)y1[i] * y1[i];
        }
        /* the two runs differ by the order of fp32 sums (each GPU's plan splits K by its own shape, and the
         * down projection's halves are added last), which can move a bf16 intermediate by one unit where
         * its fp32 value lies next to a rounding boundary: a bound of 1e-3 on the relative error, against
         * the 2^-8 of one bf16 unit on every element */
        const double rel = sqrt(num / (den > 0 ? den : 1));
        const bool ok = rel <= 1e-3;
        printf("tp_mlp --check: %-12s two GPUs against one: relative error %.3e %s\n",
               formats[fi] == QMM_FORMAT_NVFP4 ? "nvfp4" : formats[fi] == QMM_FORMAT_MXFP4 ? "mxfp4"
               : formats[fi] == QMM_FORMAT_FP8_TENSOR ? "fp8_tensor" : "fp8_channel", rel, ok ? "ok" : "FAILED");
        failures += !ok;
        free_part(&one);
        for (int r = 0; r < 2; r++) free_part(&two[r]);
        qmm_weight_free(&gate), qmm_weight_free(&up), qmm_weight_free(&down);
    }
    for (int r = 0; r < 2; r++) ncclCommDestroy(comms[r]);
    free(x), free(y1), free(y2);
    return failures ? 1 : 0;
}

/* The median time of replaying the graphs `reps` times after a warm-up, in us. */
static double time_layer(gpu_part *parts, int gpus, int reps)
{
    for (int i = 0; i < 3; i++) replay(parts, gpus, true);
    double *t = (double *)malloc((size_t)reps * sizeof *t);
    cudaEvent_t a, b;
    CK(cudaSetDevice(parts[0].device));
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < reps; i++) {
        CK(cudaSetDevice(parts[0].device));
        CK(cudaEventRecord(a, parts[0].stream));
        replay(parts, gpus, false);
        CK(cudaSetDevice(parts[0].device));
        CK(cudaEventRecord(b, parts[0].stream)); /* after the all-reduce, which waits for every GPU */
        for (int r = 0; r < gpus; r++) {
            CK(cudaSetDevice(parts[r].device));
            CK(cudaStreamSynchronize(parts[r].stream));
        }
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        t[i] = ms * 1e3;
    }
    for (int i = 1; i < reps; i++) /* median: insertion sort of a few values */
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            const double s = t[j];
            t[j] = t[j - 1], t[j - 1] = s;
        }
    const double med = t[reps / 2];
    free(t);
    cudaEventDestroy(a), cudaEventDestroy(b);
    return med;
}

int main(int argc, char **argv)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) {
        printf("tp_mlp: SKIPPED: two GPUs are needed, %d found\n", count);
        return 77;
    }
    int devices[2] = {0, 1};
    if (argc > 1 && strcmp(argv[1], "--check") == 0) return check(devices);
    size_t hidden = 8192, inter = 28672, ms[16] = {1, 16, 128, 1024, 4096};
    int m_count = 5, reps = 20;
    const char *format_list = "nvfp4,fp8_tensor";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--hidden") == 0) hidden = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--intermediate") == 0) inter = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--reps") == 0) reps = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--format") == 0) format_list = argv[i + 1];
        else if (strcmp(argv[i], "--m") == 0) {
            m_count = 0;
            for (char *s = argv[i + 1]; *s && m_count < 16; s += *s == ',') ms[m_count++] = strtoull(s, &s, 10);
        } else {
            fprintf(stderr, "usage: tp_mlp [--check] [--hidden H] [--intermediate I] [--m LIST] [--format LIST] [--reps R]\n");
            return 2;
        }
    }
    size_t max_m = 0;
    for (int i = 0; i < m_count; i++) max_m = ms[i] > max_m ? ms[i] : max_m;
    ncclComm_t comms[2];
    NK(ncclCommInitAll(comms, 2, devices));
    printf("tp_mlp: MLP hidden %zu, intermediate %zu, bf16 activations, fp32 output; one GPU against two (NCCL all-reduce)\n",
           hidden, inter);
    printf("%-12s %6s %12s %12s %12s %9s\n", "format", "M", "1 GPU us", "2 GPUs us", "all-reduce", "speedup");
    char list[128];
    snprintf(list, sizeof list, "%s", format_list);
    for (char *name = strtok(list, ","); name; name = strtok(NULL, ",")) {
        qmm_format f;
        QK(qmm_format_from_name(name, &f));
        qmm_weight gate, up, down;
        random_weight(&gate, f, inter, hidden, 1);
        random_weight(&up, f, inter, hidden, 2);
        random_weight(&down, f, hidden, inter, 3);
        gpu_part one, two[2];
        make_part(&one, devices[0], 0, 1, &gate, &up, &down, max_m);
        for (int r = 0; r < 2; r++) make_part(&two[r], devices[r], r, 2, &gate, &up, &down, max_m);
        for (int mi = 0; mi < m_count; mi++) {
            const size_t m = ms[mi];
            capture(&one, 1, NULL, m, hidden, inter);
            capture(two, 2, comms, m, hidden, inter);
            const double t1 = time_layer(&one, 1, reps), t2 = time_layer(two, 2, reps);
            /* the all-reduce alone: the same bytes, captured on its own */
            cudaEvent_t a, b;
            CK(cudaSetDevice(two[0].device));
            CK(cudaEventCreate(&a));
            CK(cudaEventCreate(&b));
            CK(cudaEventRecord(a, two[0].stream));
            NK(ncclGroupStart());
            for (int r = 0; r < 2; r++) {
                CK(cudaSetDevice(two[r].device));
                NK(ncclAllReduce(two[r].y, two[r].y, m * hidden, ncclFloat, ncclSum, comms[r], two[r].stream));
            }
            NK(ncclGroupEnd());
            CK(cudaSetDevice(two[0].device));
            CK(cudaEventRecord(b, two[0].stream));
            for (int r = 0; r < 2; r++) {
                CK(cudaSetDevice(two[r].device));
                CK(cudaStreamSynchronize(two[r].stream));
            }
            float ar_ms;
            CK(cudaEventElapsedTime(&ar_ms, a, b));
            cudaEventDestroy(a), cudaEventDestroy(b);
            printf("%-12s %6zu %12.1f %12.1f %11.0f%% %8.2fx\n", name, m, t1, t2, 100.0 * ar_ms * 1e3 / t2, t1 / t2);
            fflush(stdout);
        }
        free_part(&one);
        for (int r = 0; r < 2; r++) free_part(&two[r]);
        qmm_weight_free(&gate), qmm_weight_free(&up), qmm_weight_free(&down);
    }
    for (int r = 0; r < 2; r++) ncclCommDestroy(comms[r]);
    return 0;
}
