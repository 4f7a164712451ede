/* Probe, not part of qmm (BENCHMARKS.md, the cause of the M >= 2048 target): can materialize's
 * dequantization hide under cuBLASLt's GEMM at M = 2048? The GEMM is persistent and holds every SM, so
 * the probe asks cuBLASLt for fewer SMs (CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET) and runs a stand-in for the
 * dequantization (reads 0.5 byte and writes 2 bytes per weight element, like NVFP4 -> bf16) on a stream of
 * lower priority, chunk by chunk along N:
 *   dq(0); then GEMM(i) on the high-priority stream while dq(i + 1) runs on the low one.
 * Printed per shape: the GEMM alone at each SM target (whole and in chunks), the stand-in alone, the
 * serial sum (the library's materialize) and each pipelined configuration, all medians of 15 after 3.
 * Build: nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a scripts/probes/overlap_materialize.cu -lcublasLt
 * Run: ./a.out [M] (default 2048; exit 1 on a CUDA or cuBLASLt error) */
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "probe_check.cuh" /* CK, median_us */

#define LK(x)                                                                                                      \
    do {                                                                                                           \
        cublasStatus_t s_ = (x);                                                                                   \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                                         \
            std::printf("cuBLASLt status %d at %s:%d\n", (int)s_, __FILE__, __LINE__);                             \
            std::exit(1);                                                                                          \
        }                                                                                                          \
    } while (0)

/* the stand-in: each thread turns 16 bytes of q into 64 bytes of w (eight nibbles per word -> bf16 bit
 * patterns by shifts and masks), grid-stride, 16-byte loads and stores */
__global__ void dq_standin(const uint4 *__restrict__ q, uint4 *__restrict__ w, size_t n_q16)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n_q16; i += (size_t)gridDim.x * blockDim.x) {
        const uint4 v = __ldcs(q + i);
        const uint32_t in[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const uint32_t x = in[j];
            uint4 o;
            o.x = ((x & 0xfu) << 6) | ((x & 0xf0u) << 18) | 0x3f803f80u;
            o.y = ((x & 0xf00u) >> 2) | ((x & 0xf000u) << 10) | 0x3f803f80u;
            o.z = ((x & 0xf0000u) >> 10) | ((x & 0xf00000u) << 2) | 0x3f803f80u;
            o.w = ((x & 0xf000000u) >> 18) | ((x & 0xf0000000u) >> 6) | 0x3f803f80u;
            w[i * 4 + j] = o;
        }
    }
}

struct Gemm {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, ld;
    cublasLtMatmulAlgo_t algo;
};

static cublasLtHandle_t g_lt;
static void *g_ws;
static const size_t g_ws_bytes = (size_t)64 << 20;

/* D (rows x m, column-major, ld ldd) = W (rows x k, row-major) A^T (A m x k, row-major): C[m][n] */
static Gemm make_gemm(size_t rows, size_t m, size_t k, size_t ldd, int sm_target)
{
    Gemm g;
    LK(cublasLtMatmulDescCreate(&g.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    LK(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LK(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (sm_target > 0) LK(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &sm_target, sizeof sm_target));
    LK(cublasLtMatrixLayoutCreate(&g.la, CUDA_R_16BF, k, rows, k));
    LK(cublasLtMatrixLayoutCreate(&g.lb, CUDA_R_16BF, k, m, k));
    LK(cublasLtMatrixLayoutCreate(&g.ld, CUDA_R_16BF, rows, m, ldd));
    cublasLtMatmulPreference_t pref;
    LK(cublasLtMatmulPreferenceCreate(&pref));
    LK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &g_ws_bytes, sizeof g_ws_bytes));
    cublasLtMatmulHeuristicResult_t res;
    int n = 0;
    LK(cublasLtMatmulAlgoGetHeuristic(g_lt, g.op, g.la, g.lb, g.ld, g.ld, pref, 1, &res, &n));
    if (n < 1) {
        std::printf("no algorithm for rows %zu target %d\n", rows, sm_target);
        std::exit(1);
    }
    g.algo = res.algo;
    cublasLtMatmulPreferenceDestroy(pref);
    return g;
}

static void run_gemm(const Gemm &g, const void *w, const void *a, void *d, cudaStream_t s)
{
    const float one = 1.0f, zero = 0.0f;
    LK(cublasLtMatmul(g_lt, g.op, &one, w, g.la, a, g.lb, &zero, d, g.ld, d, g.ld, &g.algo, g_ws, g_ws_bytes, s));
}

/* median microseconds of f() on stream s (events on s), 15 runs after 3 (probe_check.cuh) */
static double time_us(cudaStream_t s, const std::function<void()> &f)
{
    return median_us([&](int) { f(); }, 15, 3, s);
}

int main(int argc, char **argv)
{
    const size_t m = argc > 1 ? (size_t)std::atoll(argv[1]) : 2048;
    const size_t shapes[][2] = {{4096, 14336}, {14336, 4096}, {6144, 18432}, {28672, 8192}, {8192, 28672}};
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    int prio_lo = 0, prio_hi = 0;
    CK(cudaDeviceGetStreamPriorityRange(&prio_lo, &prio_hi));
    cudaStream_t lo, hi;
    CK(cudaStreamCreateWithPriority(&lo, cudaStreamNonBlocking, prio_lo));
    CK(cudaStreamCreateWithPriority(&hi, cudaStreamNonBlocking, prio_hi));
    LK(cublasLtCreate(&g_lt));
    CK(cudaMalloc(&g_ws, g_ws_bytes));
    const int targets[] = {0, 128, 124, 120, 116, 112, 104};
    const int n_targets = sizeof targets / sizeof targets[0];
    std::printf("M = %zu, %d SMs, stream priorities low %d high %d\n", m, sms, prio_lo, prio_hi);
    for (auto &sh : shapes) {
        const size_t n = sh[0], k = sh[1];
        void *w, *a, *d;
        uint4 *q;
        CK(cudaMalloc(&w, n * k * 2));
        CK(cudaMalloc(&a, m * k * 2));
        CK(cudaMalloc(&d, m * n * 2));
        CK(cudaMalloc(&q, n * k / 2));
        CK(cudaMemset(w, 0, n * k * 2));
        CK(cudaMemset(a, 0, m * k * 2));
        CK(cudaMemset(q, 0x11, n * k / 2));
        const int big_grid = sms * 8;
        auto dq = [&](size_t r0, size_t rows, int grid, cudaStream_t s) {
            const size_t n16 = rows * k / 32; /* 16-byte pieces of q: 32 elements each */
            dq_standin<<<grid, 256, 0, s>>>(q + r0 * k / 32, (uint4 *)((char *)w + r0 * k * 2), n16);
        };
        std::printf("\nshape (%zu, %zu)\n", n, k);
        const double t_dq = time_us(lo, [&] { dq(0, n, big_grid, lo); });
        std::printf("  stand-in dq alone, whole weight: %.1f us (%.0f GB/s)\n", t_dq, n * k * 2.5 / (t_dq * 1e3));
        double t_full = 0;
        for (int ti = 0; ti < n_targets; ti++) {
            Gemm g = make_gemm(n, m, k, n, targets[ti]);
            const double t = time_us(hi, [&] { run_gemm(g, w, a, d, hi); });
            if (ti == 0) t_full = t;
            std::printf("  GEMM whole, SM target %3d: %.1f us (%.3f of target 0)\n", targets[ti], t, t_full / t);
        }
        std::printf("  serial dq + GEMM (materialize): %.1f us, ratio to GEMM %.3f\n", t_dq + t_full, t_full / (t_dq + t_full));
        for (int chunks = 2; chunks <= 4; chunks++) {
            const size_t step = (n / chunks + 127) / 128 * 128;
            std::vector<size_t> r0s, rcs;
            for (size_t r0 = 0; r0 < n; r0 += step) r0s.push_back(r0), rcs.push_back(std::min(step, n - r0));
            const int nc = (int)r0s.size();
            for (int ti = 0; ti < n_targets; ti++) {
                std::vector<Gemm> gs;
                for (int c = 0; c < nc; c++) gs.push_back(make_gemm(rcs[c], m, k, n, targets[ti]));
                const double t_g = time_us(hi, [&] {
                    for (int c = 0; c < nc; c++) run_gemm(gs[c], (char *)w + r0s[c] * k * 2, a, (char *)d + r0s[c] * 2, hi);
                });
                const int free_sms = targets[ti] ? sms - targets[ti] : 0;
                std::vector<cudaEvent_t> ev(2 * nc + 1);
                for (auto &e : ev) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
                for (int small = 0; small < 2; small++) {
                    const int grid = small && free_sms ? free_sms * 4 : big_grid;
                    if (small && !free_sms) continue;
                    /* lo is the caller's stream: it begins, runs the dequantizations, and ends after hi's last GEMM */
                    const double t_p = time_us(lo, [&] {
                        CK(cudaEventRecord(ev[2 * nc], lo));
                        CK(cudaStreamWaitEvent(hi, ev[2 * nc], 0));
                        dq(r0s[0], rcs[0], big_grid, lo);
                        for (int c = 0; c < nc; c++) {
                            CK(cudaEventRecord(ev[c], lo)); /* dq(c) done */
                            CK(cudaStreamWaitEvent(hi, ev[c], 0));
                            run_gemm(gs[c], (char *)w + r0s[c] * k * 2, a, (char *)d + r0s[c] * 2, hi);
                            CK(cudaEventRecord(ev[nc + c], hi));
                            if (c + 1 < nc) dq(r0s[c + 1], rcs[c + 1], grid, lo);
                        }
                        CK(cudaStreamWaitEvent(lo, ev[2 * nc - 1], 0));
                    });
                    std::printf("  chunks %d (%zu rows), SM target %3d, dq grid %4d: GEMMs alone %.1f us, pipelined %.1f us, "
                                "ratio to whole GEMM %.3f\n",
                                nc, step, targets[ti], grid, t_g, t_p, t_full / t_p);
                }
                for (auto &e : ev) cudaEventDestroy(e);
            }
        }
        cudaFree(w), cudaFree(a), cudaFree(d), cudaFree(q);
    }
    return 0;
}
