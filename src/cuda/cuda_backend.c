/* The CUDA backend: context state (device, stream, cuBLASLt, workspace, what the plan reads of the
 * device), weight preparation (upload of the tile layout of docs/cuda.md), and the paths a plan (plan.h)
 * chooses: GEMV and fused (the tensor-core kernels of kernels_mma.cuh, launched as the plan says) and
 * materialize (dequantize into the workspace, then cuBLASLt with its fused epilogue). Nothing in
 * qmm_matmul allocates, synchronizes or copies between host and device, so calls can be captured in a
 * CUDA graph (a form's setup, once per device, runs at its first call). */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../api/context.h"
#include "../core/backend.h"
#include "../core/error.h"
#include "../core/format.h"
#include "cuda_internal.h"
#include "dense.h"
#include "plan.h"

#define QMM__CUDA_DEFAULT_WORKSPACE ((size_t)256 << 20)
#define QMM__CUDA_LT_WORKSPACE ((size_t)32 << 20) /* cuBLAS's recommendation for Hopper */
#define QMM__CUDA_COUNTERS ((size_t)1 << 20)

typedef struct qmm__cuda_state {
    int device;
    int sm_count;
    qmm__cuda_device dev;        /* what the plan reads of the device; its kernel forms set up at their first call */
    qmm__cuda_override override; /* the plan's override (qmm__cuda_context_override): the rules by default */
    cudaStream_t stream; /* the stream of the calls: the context's own, or one the caller gave */
    cudaStream_t own;    /* the context's own stream, made where it needs one; NULL otherwise */
    cudaEvent_t order;   /* orders a new stream after the old one (qmm_context_set_stream) */
    qmm__lt lt;
    char *workspace;
    size_t workspace_bytes;
    unsigned *counters; /* split-K arrival counters, zero between calls */
    qmm__nvml *nvml;    /* opened at the first qmm_context_machine_state (nvml_tried) */
    bool nvml_tried;
    char description[384];
} qmm__cuda_state;

#define QMM__CU(call, what)                                                                                 \
    do {                                                                                                    \
        cudaError_t e_ = (call);                                                                            \
        if (e_ != cudaSuccess)                                                                              \
            return qmm__fail(QMM_ERR_CUDA, "%s: %s (%s)", what, cudaGetErrorString(e_), cudaGetErrorName(e_)); \
    } while (0)

static qmm_status qmm__cuda_use_device(const qmm__cuda_state *st)
{
    int cur = -1;
    if (cudaGetDevice(&cur) != cudaSuccess || cur != st->device) QMM__CU(cudaSetDevice(st->device), "cudaSetDevice");
    return QMM_OK;
}

/* ---- the plan ---- */

extern const qmm__backend_ops qmm__cuda_backend;

/* The call of m rows of A (a, lda: NULL, 0 where not known: taken as aligned) of a_type against w. */
static qmm__cuda_call qmm__cuda_call_of(const qmm__cuda_state *st, size_t m, qmm_dtype a_type, const void *a, size_t lda,
                                        const qmm_weight *w)
{
    const qmm__cuda_prepared *p = (const qmm__cuda_prepared *)w->prepared;
    qmm__cuda_call c;
    memset(&c, 0, sizeof c);
    c.m = m, c.n = w->n, c.k = w->k, c.enc = p->enc, c.mx_half = p->mx_half, c.channel_scales = p->channel_scales != NULL;
    c.strips = p->strips, c.chunks = p->chunks, c.a_type = a_type, c.c_type = QMM_DTYPE_BF16;
    c.a_aligned = a ? qmm__cuda_a_aligned(a, lda) : true;
    c.workspace = st->workspace_bytes, c.counters = QMM__CUDA_COUNTERS;
    return c;
}

/* The dispatcher (qmm__cuda_plan_path): the path only, which needs no kernel set up. */
static qmm_path qmm__cuda_dispatch(const void *state, size_t m, qmm_dtype a_type, const qmm_weight *w)
{
    const qmm__cuda_state *st = state;
    const qmm__cuda_call c = qmm__cuda_call_of(st, m, a_type, NULL, 0, w);
    const char *why;
    return qmm__cuda_plan_path(&c, st->sm_count, qmm__cuda_tunables_for(st->dev.major, 0), &why);
}

/* The form's setup on this context's device, at its first call (qmm__cuda_mma_setup, once per device). */
static qmm_status qmm__cuda_form_ready(qmm__cuda_state *st, qmm__cuda_form form)
{
    if (st->dev.kernels[form].ready) return QMM_OK;
    const int err = qmm__cuda_mma_setup((int)form, st->sm_count, &st->dev.kernels[form]);
    if (err != 0) return qmm__fail(QMM_ERR_CUDA, "the tensor-core kernels' setup: %s", cudaGetErrorString((cudaError_t)err));
    return QMM_OK;
}

/* The full plan of a call on `path` (QMM_PATH_AUTO: the dispatcher's), its kernels set up. */
static qmm_status qmm__cuda_plan_call(qmm__cuda_state *st, const qmm__cuda_call *c, qmm_path path, qmm__cuda_plan *plan)
{
    const qmm__cuda_form form = qmm__cuda_form_of(c->enc, c->mx_half, c->a_type);
    if (form != QMM__FORM_COUNT) QMM__TRY(qmm__cuda_form_ready(st, form));
    if (!qmm__cuda_plan_make(c, path, &st->dev, &st->override, plan))
        return qmm__fail(QMM_ERR_UNSUPPORTED, "qmm_matmul: the %s path takes NVFP4, MXFP4 and FP8 weights whose scales and "
                         "codes are finite (and an MXFP4 exponent range of at most 126); this weight runs on materialize",
                         path == QMM_PATH_FUSED ? "fused" : "GEMV");
    return QMM_OK;
}

/* qmm_matmul_explain's line: the path (`forced`, or the dispatcher's where QMM_PATH_AUTO), the rule that
 * chose it, and the plan's launches (A taken as 16-byte aligned). */
static qmm_status qmm__cuda_explain(void *state, size_t m, qmm_dtype a_type, const qmm_weight *w, qmm_path forced, char *buf,
                                    size_t cap)
{
    qmm__cuda_state *st = state;
    QMM__TRY(qmm__cuda_use_device(st));
    const qmm__cuda_call c = qmm__cuda_call_of(st, m, a_type, NULL, 0, w);
    qmm__cuda_plan plan;
    QMM__TRY(qmm__cuda_plan_call(st, &c, forced, &plan));
    char launches[512];
    qmm__cuda_plan_describe(&plan, launches, sizeof launches);
    snprintf(buf, cap, "%s (%s)%s%s", qmm_path_name(plan.path), plan.why, plan.mma ? ": " : "", launches);
    return QMM_OK;
}

qmm_status qmm__cuda_context_override(qmm_context *ctx, const qmm__cuda_override *o)
{
    if (!ctx || ctx->ops != &qmm__cuda_backend)
        return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "qmm__cuda_context_override: not a CUDA context");
    static const qmm__cuda_override rules = QMM__CUDA_OVERRIDE_DEFAULT;
    ((qmm__cuda_state *)ctx->state)->override = o ? *o : rules;
    return QMM_OK;
}

static bool qmm__cuda_has_path(qmm_path p) { return p == QMM_PATH_GEMV || p == QMM_PATH_FUSED || p == QMM_PATH_MATERIALIZE; }

/* ---- context ---- */

static qmm_status qmm__cuda_available(void)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0)
        return qmm__fail(QMM_ERR_BACKEND_UNAVAILABLE, "cuda: no usable GPU (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return QMM_OK;
}

static void qmm__cuda_destroy(void *state)
{
    qmm__cuda_state *st = state;
    if (!st) return;
    qmm__cuda_use_device(st);
    if (st->stream) cudaStreamSynchronize(st->stream);
    qmm__lt_destroy(&st->lt);
    cudaFree(st->workspace);
    cudaFree(st->counters);
    if (st->stream && st->stream != st->own) cudaStreamSynchronize(st->stream);
    if (st->own) cudaStreamDestroy(st->own);
    if (st->order) cudaEventDestroy(st->order);
    qmm__nvml_close(st->nvml);
    free(st);
}

static qmm_status qmm__cuda_create(const qmm_context_options *o, void **out)
{
    QMM__TRY(qmm__cuda_available());
    int count = 0;
    cudaGetDeviceCount(&count);
    if (o->cuda_device >= count)
        return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "qmm_context_create: cuda_device %d, but %d device(s)", o->cuda_device, count);
    qmm__cuda_state *st = calloc(1, sizeof *st);
    if (!st) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "qmm_context_create: cuda state");
    st->device = o->cuda_device;
    static const qmm__cuda_override rules = QMM__CUDA_OVERRIDE_DEFAULT;
    st->override = rules;
    qmm_status s = QMM_OK;
    cudaError_t e = cudaSetDevice(st->device);
    struct cudaDeviceProp prop;
    if (e == cudaSuccess) e = cudaGetDeviceProperties(&prop, st->device);
    if (e == cudaSuccess) {
        st->sm_count = prop.multiProcessorCount;
        st->dev.sm_count = prop.multiProcessorCount, st->dev.major = prop.major;
        st->dev.optin = prop.sharedMemPerBlockOptin, st->dev.smem_sm = prop.sharedMemPerMultiprocessor;
        st->dev.reserved = prop.reservedSharedMemPerBlock;
        if (o->cuda_stream) st->stream = (cudaStream_t)o->cuda_stream;
        else if ((e = cudaStreamCreateWithFlags(&st->own, cudaStreamNonBlocking)) == cudaSuccess) st->stream = st->own;
    }
    st->workspace_bytes = o->workspace_bytes ? o->workspace_bytes : QMM__CUDA_DEFAULT_WORKSPACE;
    if (e == cudaSuccess) e = cudaMalloc((void **)&st->workspace, st->workspace_bytes);
    if (e == cudaSuccess) e = cudaMalloc((void **)&st->counters, QMM__CUDA_COUNTERS * sizeof(unsigned));
    if (e == cudaSuccess) e = cudaMemsetAsync(st->counters, 0, QMM__CUDA_COUNTERS * sizeof(unsigned), st->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(st->stream);
    if (e != cudaSuccess) s = qmm__fail(e == cudaErrorMemoryAllocation ? QMM_ERR_OUT_OF_MEMORY : QMM_ERR_CUDA,
                                        "qmm_context_create (cuda): %s", cudaGetErrorString(e));
    if (s == QMM_OK) s = qmm__lt_create(&st->lt);
    if (s != QMM_OK) {
        qmm__cuda_destroy(st);
        return s;
    }
    snprintf(st->description, sizeof st->description, "cuda %s (sm_%d%d, %d SMs, %.0f GiB), workspace %zu MiB", prop.name,
             prop.major, prop.minor, prop.multiProcessorCount, (double)prop.totalGlobalMem / (1u << 30),
             st->workspace_bytes >> 20);
    *out = st;
    return QMM_OK;
}

static const char *qmm__cuda_describe(const void *state) { return ((const qmm__cuda_state *)state)->description; }

/* Later calls run on `stream` (NULL: the context's own, made now where the context was created on a
 * caller's stream), after everything already queued on the current one: an event recorded there and
 * waited for on the new one, so the workspace and the split-K counters, which every call uses, are never
 * used by two streams at once, with no host synchronisation (both steps are captured into a graph). */
static qmm_status qmm__cuda_set_stream(void *state, void *stream)
{
    qmm__cuda_state *st = state;
    QMM__TRY(qmm__cuda_use_device(st));
    cudaStream_t next = (cudaStream_t)stream;
    if (!next) {
        if (!st->own) QMM__CU(cudaStreamCreateWithFlags(&st->own, cudaStreamNonBlocking), "qmm_context_set_stream");
        next = st->own;
    }
    if (next == st->stream) return QMM_OK;
    if (!st->order) QMM__CU(cudaEventCreateWithFlags(&st->order, cudaEventDisableTiming), "qmm_context_set_stream");
    QMM__CU(cudaEventRecord(st->order, st->stream), "qmm_context_set_stream: recording the old stream's end");
    QMM__CU(cudaStreamWaitEvent(next, st->order, 0), "qmm_context_set_stream: ordering the new stream");
    st->stream = next;
    return QMM_OK;
}

/* ---- prepared weights ---- */

static void qmm__cuda_release(qmm_prepared *self)
{
    qmm__cuda_prepared *p = (qmm__cuda_prepared *)self;
    cudaFree(p->data);
    cudaFree(p->scales);
    cudaFree(p->channel_scales);
    free(p);
}

static qmm_status qmm__cuda_prepare(void *state, const qmm_weight *w, qmm_prepared **out)
{
    qmm__cuda_state *st = state;
    QMM__TRY(qmm__cuda_use_device(st));
    qmm__cuda_layout l = qmm__cuda_plan_layout(w);
    qmm__cuda_prepared *p = calloc(1, sizeof *p);
    uint8_t *hd = malloc(l.data_bytes), *hs = l.scale_bytes ? malloc(l.scale_bytes) : NULL;
    if (!p || !hd || (l.scale_bytes && !hs)) {
        free(p), free(hd), free(hs);
        return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "qmm_weight_prepare: %zu bytes of host staging", l.data_bytes + l.scale_bytes);
    }
    qmm__cuda_fill_layout(w, &l, hd, hs);
    p->head.release = qmm__cuda_release;
    p->enc = l.enc, p->n = w->n, p->k = w->k, p->strips = l.strips, p->chunks = l.chunks;
    p->fix = l.fix, p->mx_off = l.mx_off, p->mx_half = l.mx_half;
    const qmm_format_traits *t = qmm__format_traits(w->format);
    p->tensor_scale = t->global_scale == QMM_GLOBAL_SCALE_TENSOR ? w->tensor_scale : 1.0f;
    cudaError_t e = cudaMalloc(&p->data, l.data_bytes);
    if (e == cudaSuccess) e = cudaMemcpyAsync(p->data, hd, l.data_bytes, cudaMemcpyHostToDevice, st->stream);
    if (e == cudaSuccess && hs) e = cudaMalloc(&p->scales, l.scale_bytes);
    if (e == cudaSuccess && hs) e = cudaMemcpyAsync(p->scales, hs, l.scale_bytes, cudaMemcpyHostToDevice, st->stream);
    if (e == cudaSuccess && t->global_scale == QMM_GLOBAL_SCALE_CHANNEL) {
        e = cudaMalloc((void **)&p->channel_scales, w->n * sizeof(float));
        if (e == cudaSuccess)
            e = cudaMemcpyAsync(p->channel_scales, w->channel_scales, w->n * sizeof(float), cudaMemcpyHostToDevice, st->stream);
    }
    if (e == cudaSuccess) e = cudaStreamSynchronize(st->stream);
    free(hd), free(hs);
    p->bytes = l.data_bytes + l.scale_bytes + (p->channel_scales ? w->n * sizeof(float) : 0);
    if (e != cudaSuccess) {
        cudaGetLastError();
        qmm__cuda_release(&p->head);
        return qmm__fail(e == cudaErrorMemoryAllocation ? QMM_ERR_OUT_OF_MEMORY : QMM_ERR_CUDA, "qmm_weight_prepare (cuda): %s",
                         cudaGetErrorString(e));
    }
    *out = &p->head;
    return QMM_OK;
}

/* ---- matmul ---- */

/* with_fix: the tensor-core kernels' sums carry 2^-fix (decode.h); materialized weights do not. */
static qmm__cuda_epilogue qmm__cuda_make_epilogue(const qmm__matmul_args *x, const qmm__cuda_prepared *p, bool with_fix)
{
    qmm__cuda_epilogue e;
    e.alpha_fix = x->epi.alpha * p->tensor_scale * (with_fix ? p->fix : 1.0f);
    e.channel_scales = p->channel_scales;
    e.column_scale = x->epi.column_scale;
    e.bias = x->epi.bias;
    e.beta = x->epi.beta;
    e.activation = (int)x->epi.activation;
    e.c_type = (int)x->c_type;
    e.c = x->c;
    e.ldc = x->ldc;
    return e;
}

static qmm_status qmm__cuda_status(int err, const char *what)
{
    if (err == 0) return QMM_OK;
    return qmm__fail(QMM_ERR_CUDA, "%s: %s", what, cudaGetErrorString((cudaError_t)err));
}

/* The GEMV (nb = 1) and fused (nb = 2, 4 or 8 by M) paths: the tensor-core kernels as the plan says. */
static qmm_status qmm__cuda_run_mma(qmm__cuda_state *st, const qmm__matmul_args *x, const qmm__cuda_prepared *p)
{
    qmm__cuda_call c = qmm__cuda_call_of(st, x->m, x->a_type, x->a, x->lda, x->w);
    c.c_type = x->c_type;
    qmm__cuda_plan plan;
    QMM__TRY(qmm__cuda_plan_call(st, &c, x->path, &plan));
    qmm__cuda_epilogue e = qmm__cuda_make_epilogue(x, p, true);
    int err = qmm__cuda_mma_run(&plan, p, x->m, x->a, x->lda, &e, (float *)(void *)st->workspace, st->workspace_bytes / sizeof(float),
                                st->counters, st->stream);
    return qmm__cuda_status(err, x->path == QMM_PATH_FUSED ? "fused kernel launch" : "GEMV kernel launch");
}

/* Takes `bytes` (256-byte aligned) from the front of the remaining workspace. */
static void *qmm__carve(char **cur, size_t *left, size_t bytes)
{
    size_t b = qmm__cuda_round256(bytes);
    if (b > *left) return NULL;
    void *p = *cur;
    *cur += b;
    *left -= b;
    return p;
}

static int qmm__alignment(const void *ptr, size_t stride_bytes)
{
    uintptr_t v = (uintptr_t)ptr | (uintptr_t)stride_bytes;
    return (v & 15) == 0 ? 16 : (v & 7) == 0 ? 8 : (v & 3) == 0 ? 4 : 2;
}

/* Whether the dequantized weights are fp16 values, so fp16 activations can meet fp16 weights in one GEMM:
 * NVFP4 products (element * block scale) lie in [2^-10, 2688] and E4M3 values in [2^-9, 448]; MXFP4 of a
 * narrow scale range (mx_half) as the tensor-core decode's value, element * block scale * 2^-fix, in
 * [2^-24, 12] (decode.h). Other MXFP4 and bf16 weights go through the bf16 hi + lo split of A instead,
 * two GEMMs: with it MXFP4 of a narrow range took 1.05-1.74x NVFP4's time (median 1.35) on the materialize
 * path at M = 256..1024 with fp16 activations (measured on an H200), where one fp16 GEMM runs at NVFP4's. */
static bool qmm__weight_fits_fp16(const qmm__cuda_prepared *p)
{
    return p->enc == QMM__ENC_NVFP4 || p->enc == QMM__ENC_NVFP4_RAW || p->enc == QMM__ENC_FP8 || p->enc == QMM__ENC_FP8_RAW ||
           (p->enc == QMM__ENC_MXFP4 && p->mx_half);
}

static qmm_status qmm__cuda_run_materialize(qmm__cuda_state *st, const qmm__matmul_args *x, const qmm__cuda_prepared *p)
{
    const size_t m = x->m, n = x->n, k = x->k;
    const bool a_fp16 = x->a_type == QMM_DTYPE_FP16;
    const bool w_half = a_fp16 && qmm__weight_fits_fp16(p);
    /* MXFP4 in fp16 keeps its 2^-fix (its exact value may lie outside fp16's range); alpha carries 2^fix */
    const bool unfixed = w_half && p->enc == QMM__ENC_MXFP4;
    qmm__cuda_epilogue e = qmm__cuda_make_epilogue(x, p, unfixed);
    const bool split_a = a_fp16 && !w_half;
    const bool per_column = p->channel_scales || x->epi.column_scale;
    /* cuBLASLt's per-row alpha vector costs its GEMM up to 40% at M = 2048 (measured on an H200, FP8 per
     * channel, 2086 us against 1588 us per tensor), and against this fp32 result plus qmm's epilogue it is
     * 1-12% slower at M = 2048..8192 on the five default shapes (cuBLASLt 13). */
    /* cuBLASLt's GELU epilogue is not the tanh formula of qmm.h (measured on H200: bf16 results a few ulps
     * apart), so GELU, like SiLU and GELU-erf, runs in qmm's epilogue kernel. */
    bool lt_epi = !split_a && !per_column &&
                  (x->epi.activation == QMM_ACT_NONE || x->epi.activation == QMM_ACT_RELU);
    const qmm_dtype gemm_type = w_half ? QMM_DTYPE_FP16 : QMM_DTYPE_BF16;

    char *cur = st->workspace;
    size_t left = st->workspace_bytes;
    const size_t lt_bytes = left / 4 < QMM__CUDA_LT_WORKSPACE ? left / 4 : QMM__CUDA_LT_WORKSPACE;
    void *lt_ws = qmm__carve(&cur, &left, lt_bytes);
    const size_t csize = qmm__dtype_size(x->c_type);
    const int align_c = qmm__alignment(x->c, x->ldc * csize); /* also each chunk's: r0 * csize is a multiple of 32 */
    /* the GEMM writing C with cuBLASLt's epilogue, one call per chunk of rows */
    qmm__lt_call lt_c;
    memset(&lt_c, 0, sizeof lt_c);
    lt_c.cols = m, lt_c.k = k, lt_c.w_type = gemm_type, lt_c.a = x->a, lt_c.lda = x->lda, lt_c.d_type = x->c_type;
    lt_c.ldd = x->ldc, lt_c.alpha = e.alpha_fix, lt_c.beta = x->epi.beta, lt_c.bias = x->epi.bias, lt_c.act = x->epi.activation;
    lt_c.align_a = qmm__alignment(x->a, x->lda * 2), lt_c.align_d = align_c;
    /* Where cuBLASLt has no such GEMM (fp16 operands with a bf16 C, for one), fall back to the fp32 result
     * before the first chunk is dequantized: asked after it, the fallback would dequantize that chunk twice
     * and ask the heuristic again on every call (measured on an H200: fp16 A, NVFP4 8192 x 28672, bf16 C,
     * M = 256, 480 us that way against 347 with an fp32 C). Both chunk heights are asked: the chunks' and
     * the last one's. */
    if (lt_epi) {
        const size_t rows0 = qmm__cuda_chunk_rows(left, p->enc != QMM__ENC_BF16 ? k * 2 : 0, 0, n);
        const size_t heights[2] = {rows0 < n ? rows0 : n, rows0 && n % rows0 ? n % rows0 : 0};
        for (int i = 0; i < 2 && lt_epi; i++) {
            if (heights[i] == 0) continue;
            lt_c.rows = heights[i];
            const qmm_status s = qmm__lt_check(&st->lt, &lt_c, lt_bytes);
            if (s == QMM_ERR_UNSUPPORTED) lt_epi = false;
            else QMM__TRY(s);
        }
    }
    void *a_hi = split_a ? qmm__carve(&cur, &left, m * k * 2) : NULL;
    void *a_lo = split_a ? qmm__carve(&cur, &left, m * k * 2) : NULL;
    if (split_a && (!a_hi || !a_lo))
        return qmm__fail(QMM_ERR_WORKSPACE_TOO_SMALL, "qmm_matmul: the workspace (%zu bytes) cannot hold the operands of "
                         "m = %zu, k = %zu (see qmm_workspace_query)", st->workspace_bytes, m, k);
    const size_t rows = qmm__cuda_chunk_rows(left, p->enc != QMM__ENC_BF16 ? k * 2 : 0, lt_epi ? 0 : m * sizeof(float), n);
    if (rows == 0)
        return qmm__fail(QMM_ERR_WORKSPACE_TOO_SMALL, "qmm_matmul: the workspace (%zu bytes) cannot hold 16 weight rows of "
                         "k = %zu for m = %zu (see qmm_workspace_query)", st->workspace_bytes, k, m);
    void *w_chunk = p->enc != QMM__ENC_BF16 ? qmm__carve(&cur, &left, rows * k * 2) : NULL;
    float *scratch = lt_epi ? NULL : qmm__carve(&cur, &left, rows * m * sizeof(float));

    if (split_a) QMM__TRY(qmm__cuda_status(qmm__cuda_split_fp16(x->a, m, k, x->lda, a_hi, a_lo, st->stream), "fp16 split"));
    for (size_t r0 = 0; r0 < n; r0 += rows) {
        const size_t rc = n - r0 < rows ? n - r0 : rows;
        const void *wp;
        if (p->enc == QMM__ENC_BF16) {
            wp = (const char *)p->data + r0 * k * 2;
        } else {
            QMM__TRY(qmm__cuda_status(qmm__cuda_dequantize(p, r0, rc, w_chunk, w_half, unfixed, st->stream), "dequantize kernel"));
            wp = w_chunk;
        }
        qmm__lt_call c;
        if (lt_epi) {
            c = lt_c;
            c.rows = rc, c.w = wp, c.d = (char *)x->c + r0 * csize;
            c.bias = x->epi.bias ? x->epi.bias + r0 : NULL;
            QMM__TRY(qmm__lt_matmul(&st->lt, &c, lt_ws, lt_bytes, st->stream));
            continue;
        }
        memset(&c, 0, sizeof c);
        c.rows = rc, c.cols = m, c.k = k, c.w = wp, c.w_type = gemm_type;
        /* fp32 sums into the scratch (rc x m column-major = m rows of rc), then qmm's epilogue */
        c.d = scratch, c.d_type = QMM_DTYPE_FP32, c.ldd = rc, c.alpha = 1.0f, c.beta = 0.0f, c.act = QMM_ACT_NONE;
        c.align_d = qmm__alignment(scratch, rc * 4);
        c.a = split_a ? a_hi : x->a, c.lda = split_a ? k : x->lda, c.align_a = qmm__alignment(c.a, c.lda * 2);
        QMM__TRY(qmm__lt_matmul(&st->lt, &c, lt_ws, lt_bytes, st->stream));
        if (split_a) {
            c.a = a_lo, c.beta = 1.0f;
            QMM__TRY(qmm__lt_matmul(&st->lt, &c, lt_ws, lt_bytes, st->stream));
        }
        QMM__TRY(qmm__cuda_status(qmm__cuda_epilogue_apply(scratch, rc, m, rc, r0, &e, st->stream), "epilogue kernel"));
    }
    return QMM_OK;
}

static qmm_status qmm__cuda_matmul(void *state, const qmm__matmul_args *x)
{
    qmm__cuda_state *st = state;
    QMM__TRY(qmm__cuda_use_device(st));
    const qmm__cuda_prepared *p = (const qmm__cuda_prepared *)x->w->prepared;
    if (x->path == QMM_PATH_GEMV || x->path == QMM_PATH_FUSED) return qmm__cuda_run_mma(st, x, p);
    return qmm__cuda_run_materialize(st, x, p);
}

/* ---- buffers and measurements ---- */

static qmm_status qmm__cuda_buffer_alloc(void *state, size_t bytes, void **out)
{
    QMM__TRY(qmm__cuda_use_device(state));
    cudaError_t e = cudaMalloc(out, bytes);
    if (e != cudaSuccess) cudaGetLastError(); /* not sticky: keep it from surfacing at the next launch check */
    if (e == cudaErrorMemoryAllocation) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "qmm_buffer_alloc: %zu bytes of device memory", bytes);
    QMM__CU(e, "qmm_buffer_alloc");
    return QMM_OK;
}

static void qmm__cuda_buffer_free(void *state, void *ptr)
{
    (void)state;
    cudaFree(ptr);
}

static qmm_status qmm__cuda_buffer_copy(void *state, void *dst, const void *src, size_t bytes, bool to_device)
{
    qmm__cuda_state *st = state;
    QMM__TRY(qmm__cuda_use_device(st));
    QMM__CU(cudaMemcpyAsync(dst, src, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, st->stream),
            to_device ? "qmm_buffer_write" : "qmm_buffer_read");
    QMM__CU(cudaStreamSynchronize(st->stream), to_device ? "qmm_buffer_write" : "qmm_buffer_read");
    return QMM_OK;
}

static qmm_status qmm__cuda_synchronize(void *state)
{
    qmm__cuda_state *st = state;
    QMM__CU(cudaStreamSynchronize(st->stream), "qmm_context_synchronize");
    return QMM_OK;
}

static qmm_status qmm__cuda_measure_rates(void *state, size_t bytes, qmm_machine_rates *out)
{
    qmm__cuda_state *st = state;
    QMM__TRY(qmm__cuda_use_device(st));
    void *a = NULL, *b = NULL;
    cudaError_t e = cudaMalloc(&a, bytes);
    if (e == cudaSuccess) e = cudaMalloc(&b, bytes);
    if (e == cudaSuccess) e = cudaMemsetAsync(a, 1, bytes, st->stream);
    double gbps = 0.0;
    if (e == cudaSuccess) e = (cudaError_t)qmm__cuda_copy_gbps(a, b, bytes, st->stream, &gbps);
    cudaFree(a);
    cudaFree(b);
    if (e != cudaSuccess) cudaGetLastError();
    QMM__CU(e, "qmm_context_measure_rates");
    memset(out, 0, sizeof *out);
    out->copy_gbps = gbps;
    return QMM_OK;
}

/* The device's clock and power through NVML, opened once per context (qmm__nvml_open; a context whose
 * machine has no NVML tries once and then reports unknown without a call). */
static bool qmm__cuda_machine_state(void *state, qmm_machine_state *out)
{
    qmm__cuda_state *st = state;
    if (!st->nvml_tried) {
        st->nvml_tried = true;
        char bus[32];
        if (cudaDeviceGetPCIBusId(bus, (int)sizeof bus, st->device) == cudaSuccess)
            st->nvml = qmm__nvml_open(bus);
        else
            cudaGetLastError();
    }
    return qmm__nvml_read(st->nvml, out);
}

/* qmm_workspace_query's answer: room for every call of m rows in one chunk. The n * 512 bytes are a
 * per-row slack that qmm__cuda_chunk_rows does not need (the final 4096 cover the carves' rounding); they
 * stay so that the answer does not change. */
static size_t qmm__cuda_workspace_need(size_t m, qmm_format f, size_t n, size_t k)
{
    size_t bytes = QMM__CUDA_LT_WORKSPACE + n * sizeof(float) + 2 * m * k * 2 + m * n * sizeof(float) + n * 512;
    if (f != QMM_FORMAT_BF16) bytes += n * k * 2;
    return bytes + 4096;
}

const qmm__backend_ops qmm__cuda_backend = {
    .id = QMM_BACKEND_CUDA,
    .needs_prepare = true,
    .device_pointers = true,
    .fp32_activations = false,
    .available = qmm__cuda_available,
    .create = qmm__cuda_create,
    .destroy = qmm__cuda_destroy,
    .describe = qmm__cuda_describe,
    .has_path = qmm__cuda_has_path,
    .plan = qmm__cuda_dispatch,
    .explain = qmm__cuda_explain,
    .matmul = qmm__cuda_matmul,
    .prepare = qmm__cuda_prepare,
    .set_stream = qmm__cuda_set_stream,
    .buffer_alloc = qmm__cuda_buffer_alloc,
    .buffer_free = qmm__cuda_buffer_free,
    .buffer_copy = qmm__cuda_buffer_copy,
    .synchronize = qmm__cuda_synchronize,
    .measure_rates = qmm__cuda_measure_rates,
    .machine_state = qmm__cuda_machine_state,
    .workspace_need = qmm__cuda_workspace_need,
};
