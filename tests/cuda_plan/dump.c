/* The launch recorder: the CUDA backend (src/cuda/cuda_backend.c, included here so that its dispatcher
 * and its paths can be called on a context state of its own) and the launchers of the library's kernel
 * objects, run against mock_cudart.cc on the grid of grid.h. For every configuration, shape, weight,
 * activation type and M it writes one line:
 *   M <the dispatcher's path> | <what the forced GEMV path launches> | <what the forced fused path launches>
 * each launch as "<kernel> g<grid> t<threads> s<dynamic shared memory>[ c<cluster>][ pdl] <division>"
 * (mock_args.cu), launches joined by " ; ". The lines of a group (one configuration, shape, weight and
 * activation type, every M) are fingerprinted (FNV-1a, 64 bits) as `g` lines; the default
 * configuration's default shapes with NVFP4 and FP8 (per tensor) weights and bf16 activations are
 * written out in full as `p` lines. Output
 * types change no launch: each line is the same for fp32, bf16 and fp16 C (checked here). Last, the
 * shared-memory limits the launchers raised on each device, one `a` line per kernel and size.
 * Usage: dump [-v]   (-v: every line in full, `p` lines only) */
#include "../../src/cuda/cuda_backend.c"

#include <inttypes.h>

#include "grid.h"

size_t qmm_mock_take(char *buf, size_t cap);
void qmm_mock_print_raised(FILE *f);

/* What the recorder never runs: cuBLASLt, NVML, the dequantizer's and the epilogue's kernels. */
qmm_status qmm__lt_create(qmm__lt *lt)
{
    memset(lt, 0, sizeof *lt);
    return QMM_OK;
}
void qmm__lt_destroy(qmm__lt *lt) { (void)lt; }
qmm_status qmm__lt_check(qmm__lt *lt, const qmm__lt_call *c, size_t ws_bytes)
{
    (void)lt, (void)c, (void)ws_bytes;
    return QMM_OK;
}
qmm_status qmm__lt_matmul(qmm__lt *lt, const qmm__lt_call *c, void *ws, size_t ws_bytes, cudaStream_t stream)
{
    (void)lt, (void)c, (void)ws, (void)ws_bytes, (void)stream;
    return QMM_OK;
}
qmm__nvml *qmm__nvml_open(const char *pci_bus_id)
{
    (void)pci_bus_id;
    return NULL;
}
void qmm__nvml_close(qmm__nvml *n) { (void)n; }
bool qmm__nvml_read(const qmm__nvml *n, qmm_machine_state *out)
{
    (void)n, (void)out;
    return false;
}
int qmm__cuda_dequantize(const qmm__cuda_prepared *w, size_t r0, size_t rows, void *dst, int dst_half, int unfixed, void *stream)
{
    (void)w, (void)r0, (void)rows, (void)dst, (void)dst_half, (void)unfixed, (void)stream;
    return 0;
}
int qmm__cuda_split_fp16(const void *a, size_t m, size_t k, size_t lda, void *hi, void *lo, void *stream)
{
    (void)a, (void)m, (void)k, (void)lda, (void)hi, (void)lo, (void)stream;
    return 0;
}
int qmm__cuda_epilogue_apply(const float *acc, size_t ldacc, size_t m, size_t n, size_t n0, const qmm__cuda_epilogue *e,
                             void *stream)
{
    (void)acc, (void)ldacc, (void)m, (void)n, (void)n0, (void)e, (void)stream;
    return 0;
}
int qmm__cuda_copy_gbps(void *buf_a, void *buf_b, size_t bytes, void *stream, double *gbps)
{
    (void)buf_a, (void)buf_b, (void)bytes, (void)stream, (void)gbps;
    return 0;
}

/* A prepared weight as qmm__cuda_prepare leaves it, without its tiles (the launchers read only its shape
 * and encoding; the addresses are never touched). */
static void make_weight(const qmm_test_encoding *e, size_t n, size_t k, const void *state, qmm__cuda_prepared *p, qmm_weight *w)
{
    memset(p, 0, sizeof *p);
    memset(w, 0, sizeof *w);
    const int fp8 = e->enc == QMM__ENC_FP8 || e->enc == QMM__ENC_FP8_RAW, bf16 = e->enc == QMM__ENC_BF16;
    const qmm_format f = bf16 ? QMM_FORMAT_BF16 : fp8 ? (e->channel ? QMM_FORMAT_FP8_CHANNEL : QMM_FORMAT_FP8_TENSOR)
                         : e->enc == QMM__ENC_MXFP4 || e->enc == QMM__ENC_MXFP4_RAW ? QMM_FORMAT_MXFP4 : QMM_FORMAT_NVFP4;
    p->head.backend = QMM_BACKEND_CUDA, p->head.owner = state, p->head.format = f;
    p->head.n = n, p->head.k = k, p->head.experts = 1;
    p->enc = (qmm__cuda_encoding)e->enc, p->n = n, p->k = k;
    p->strips = (n + QMM__STRIP - 1) / QMM__STRIP;
    p->chunks = bf16 ? 0 : (k + (fp8 ? QMM__CHUNK_FP8 : QMM__CHUNK_FP4) - 1) / (fp8 ? QMM__CHUNK_FP8 : QMM__CHUNK_FP4);
    p->data = (void *)((uintptr_t)1 << 44);
    p->scales = fp8 || bf16 ? NULL : (void *)((uintptr_t)2 << 44);
    p->channel_scales = e->channel ? (float *)((uintptr_t)3 << 44) : NULL;
    p->tensor_scale = 1.0f, p->fix = 1.0f, p->mx_half = e->mx_half;
    w->format = f, w->n = n, w->k = k, w->prepared = &p->head, w->tensor_scale = 1.0f;
}

/* What a forced path launches for one call, or "unsupported" / "error". */
static void forced(qmm__cuda_state *st, qmm_path path, size_t m, qmm_dtype at, int aligned, const qmm_weight *w, char *buf,
                   size_t cap)
{
    static const qmm_dtype ctypes[3] = {QMM_DTYPE_BF16, QMM_DTYPE_FP32, QMM_DTYPE_FP16};
    char other[1024];
    for (int c = 0; c < 3; c++) {
        qmm__matmul_args x;
        memset(&x, 0, sizeof x);
        x.m = m, x.n = w->n, x.k = w->k, x.a_type = at, x.w = w, x.c_type = ctypes[c], x.path = path;
        x.lda = (w->k + 7) / 8 * 8, x.ldc = w->n;
        x.a = (const void *)(((uintptr_t)5 << 44) + (aligned ? 0 : 2));
        x.c = (void *)((uintptr_t)6 << 44);
        qmm_epilogue_init(&x.epi);
        const qmm_status s = qmm__cuda_matmul(st, &x);
        char *out = c == 0 ? buf : other;
        const size_t n = qmm_mock_take(out, c == 0 ? cap : sizeof other);
        if (s != QMM_OK) snprintf(out, c == 0 ? cap : sizeof other, "%s", s == QMM_ERR_UNSUPPORTED ? "unsupported" : "error");
        else if (n == 0) snprintf(out, c == 0 ? cap : sizeof other, "nothing");
        if (c > 0 && strcmp(other, buf) != 0) {
            fprintf(stderr, "dump: output type %d launches '%s', bf16 '%s'\n", (int)ctypes[c], other, buf);
            exit(1);
        }
    }
}

int main(int argc, char **argv)
{
    const int verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
    static const qmm_dtype atypes[2] = {QMM_DTYPE_BF16, QMM_DTYPE_FP16};
    printf("# tests/cuda_plan/dump: the CUDA backend's launches on the grid of tests/cuda_plan/grid.h\n");
    for (int ci = 0; ci < QMM_TEST_CONFIG_COUNT; ci++) {
        const qmm_test_config *cf = &qmm_test_configs[ci];
        qmm_context_options o;
        qmm_context_options_init(&o);
        o.backend = QMM_BACKEND_CUDA, o.cuda_device = cf->device, o.workspace_bytes = cf->workspace;
        void *state = NULL;
        if (qmm__cuda_create(&o, &state) != QMM_OK) {
            fprintf(stderr, "dump: context on %s: %s\n", qmm_test_devices[cf->device].name, qmm_last_error());
            return 1;
        }
        for (int si = 0; si < QMM_TEST_SHAPE_COUNT; si++)
            for (int ei = 0; ei < QMM_TEST_ENCODING_COUNT; ei++)
                for (int ai = 0; ai < 2; ai++) {
                    const size_t n = qmm_test_shapes[si][0], k = qmm_test_shapes[si][1];
                    const qmm_test_encoding *e = &qmm_test_encodings[ei];
                    char key[160];
                    qmm_test_group_key(cf, n, k, e, atypes[ai] == QMM_DTYPE_FP16, key, sizeof key);
                    const int full = ci == 0 && si < QMM_TEST_DEFAULT_SHAPES && ai == 0 && (ei == 0 || ei == 3);
                    qmm__cuda_prepared p;
                    qmm_weight w;
                    make_weight(e, n, k, state, &p, &w);
                    uint64_t h = QMM_TEST_FNV_START;
                    for (int mi = 0; mi < QMM_TEST_M_COUNT; mi++) {
                        const size_t m = qmm_test_ms[mi];
                        char gemv[1024], fused[1024], line[2200];
                        const qmm_path path = qmm__cuda_backend.plan(state, m, atypes[ai], &w);
                        forced(state, QMM_PATH_GEMV, m, atypes[ai], cf->aligned, &w, gemv, sizeof gemv);
                        forced(state, QMM_PATH_FUSED, m, atypes[ai], cf->aligned, &w, fused, sizeof fused);
                        snprintf(line, sizeof line, "%zu %s | %s | %s\n", m, qmm_path_name(path), gemv, fused);
                        h = qmm_test_fnv(h, line);
                        if (full || verbose) printf("p %s %s", key, line);
                    }
                    if (!verbose) printf("g %s %016" PRIx64 "\n", key, h);
                }
        qmm__cuda_destroy(state);
    }
    qmm_mock_print_raised(stdout);
    return 0;
}
