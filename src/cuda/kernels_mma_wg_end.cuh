/* The end of a unit of the WG variant (kernels_mma_wg.cuh): the splits' sums added, through distributed
 * shared memory in a cluster (wg_reduce_cluster) or through the workspace's partials (wg_finish_unit),
 * and the epilogue, in rows of 8 columns (wg_finish8). Included by kernels_mma_wg.cuh before its kernel,
 * after wg_tile_rows, which it uses. */
#ifndef QMM_CUDA_KERNELS_MMA_WG_END_CUH
#define QMM_CUDA_KERNELS_MMA_WG_END_CUH

#include "kernels_mma.cuh"

namespace qmm_mma {

constexpr int kWgClusterMax = 8; /* splits reduced in a cluster at most (the portable cluster size) */

/* Eight floats from shared memory address `at` of this CTA, read in CTA `k` of the cluster (two 16-byte
 * loads of distributed shared memory) */
__device__ __forceinline__ void wg_cluster_load8(float (&v)[8], uint32_t at, int k)
{
    uint32_t r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(at), "r"(k));
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3]) : "r"(r));
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v[4]), "=f"(v[5]), "=f"(v[6]), "=f"(v[7]) : "r"(r + 16u));
}

/* Eight floats of the workspace at q (16-byte aligned), from L2 (another CTA wrote them) */
__device__ __forceinline__ void wg_ldcg8(float (&v)[8], const float *q)
{
    const float4 a = __ldcg(reinterpret_cast<const float4 *>(q)), c = __ldcg(reinterpret_cast<const float4 *>(q) + 1);
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = c.x, v[5] = c.y, v[6] = c.z, v[7] = c.w;
}

/* The end of a unit, in rows of 8 consecutive columns. A lane of a consumer warp owns columns n0 .. n0 + 7
 * of its strip (n0 = strip * 16 + 8 * ((lane >> 3) & 1)) and, per pass of 16 rows of A, row (lane & 7) +
 * 8 * (lane >> 4) of the pass: wg_lane_row and wg_lane_n0. The column factors and biases of its columns
 * are read once (wg_factors8); each row's eight values are finished by wg_finish8 and stored as one
 * 16-byte piece (bf16, fp16) or two (fp32) where C's rows allow it (wg_c_vec). The arithmetic is
 * qmm__epilogue_finish's, step by step, so the bits are those of every other kernel.
 * The generic end, every value through qmm__epilogue_store on its own (the factor and bias read again,
 * the activation by an indirect branch, a 2- or 4-byte store; the cluster's reduction loading all eight
 * possible splits under predicates), costs about 20 us of a 128-row CTA at M = 128 (NVFP4, N = 14336,
 * K = 512: 34.4 us against 15.5 in rows of 8 columns, measured on an H200). */
__device__ __forceinline__ int wg_lane_row(int lane) { return (lane & 7) + 8 * (lane >> 4); }
__device__ __forceinline__ int wg_lane_n0(int strip, int lane) { return strip * 16 + 8 * ((lane >> 3) & 1); }

/* The factors (alpha_fix, channel and column scales) and biases of columns n0 .. n0 + 7 (those past N: 0) */
__device__ __forceinline__ void wg_factors8(const mma_params &p, int n0, float (&f)[8], float (&b)[8])
{
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const bool in = n0 + i < p.n;
        f[i] = in ? qmm__epilogue_factor(p.e, (size_t)(n0 + i)) : 0.0f;
        b[i] = in && p.e.bias ? p.e.bias[n0 + i] : 0.0f;
    }
}

/* Whether C takes rows of 8 columns from n0 in whole 16-byte pieces (the pointer, ldc and n0 aligned, the
 * 8 columns inside N, no C read back, an output type of 2 or 4 bytes) */
__device__ __forceinline__ bool wg_c_vec(const mma_params &p, int n0)
{
    const qmm__cuda_epilogue &e = p.e;
    const int per16 = e.c_type == QMM_DTYPE_FP32 ? 4 : 8;
    return e.beta == 0.0f && n0 + 8 <= p.n && reinterpret_cast<uintptr_t>(e.c) % 16 == 0 && e.ldc % (size_t)per16 == 0 &&
           (e.c_type == QMM_DTYPE_BF16 || e.c_type == QMM_DTYPE_FP16 || e.c_type == QMM_DTYPE_FP32);
}

/* C[m][n0 + i] = act(v[i] * f[i] + b[i] + beta * C_in[m][n0 + i]), i < 8, columns past N left alone;
 * nothing for rows past M. vec: wg_c_vec's answer for n0. */
__device__ __forceinline__ void wg_finish8(const mma_params &p, int m, int n0, const float (&v)[8], const float (&f)[8],
                                           const float (&b)[8], bool vec)
{
    const qmm__cuda_epilogue &e = p.e;
    if (m >= p.m) return;
    float x[8];
#pragma unroll
    for (int i = 0; i < 8; i++) {
        x[i] = __fmul_rn(v[i], f[i]);
        if (e.bias) x[i] = __fadd_rn(x[i], b[i]);
    }
    const size_t at = (size_t)m * e.ldc + (size_t)n0;
    if (vec) {
        if (e.activation != QMM_ACT_NONE)
#pragma unroll
            for (int i = 0; i < 8; i++) x[i] = qmm__activation(x[i], e.activation);
        if (e.c_type == QMM_DTYPE_FP32) {
            float4 *d = reinterpret_cast<float4 *>(static_cast<float *>(e.c) + at);
            d[0] = make_float4(x[0], x[1], x[2], x[3]);
            d[1] = make_float4(x[4], x[5], x[6], x[7]);
        } else {
            uint32_t w[4];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                if (e.c_type == QMM_DTYPE_BF16) {
                    const __nv_bfloat162 h = __floats2bfloat162_rn(x[2 * i], x[2 * i + 1]);
                    w[i] = *reinterpret_cast<const uint32_t *>(&h);
                } else {
                    const __half2 h = __floats2half2_rn(x[2 * i], x[2 * i + 1]);
                    w[i] = *reinterpret_cast<const uint32_t *>(&h);
                }
            }
            *reinterpret_cast<uint4 *>(static_cast<uint16_t *>(e.c) + at) = make_uint4(w[0], w[1], w[2], w[3]);
        }
        return;
    }
#pragma unroll 1
    for (int i = 0; i < 8; i++) {
        if (n0 + i >= p.n) break;
        float y = x[i];
        if (e.beta != 0.0f) y = __fmaf_rn(e.beta, qmm__load_c(e.c_type, e.c, at + i), y);
        qmm__store_c(e.c_type, e.c, at + i, qmm__activation(y, e.activation));
    }
}

/* Row r of a warp's staging (wg_stage): 16 columns and 4 floats of padding, so that both the fragment
 * stores of wg_stage and the 16-byte loads of a pass (wg_lane_row's eight rows per quarter warp) are free
 * of bank conflicts */
constexpr int kWgStageRow = 20;

/* A consumer warp's sums in its staging `st` (ROWS rows of kWgStageRow floats, row r: row r of the CTA's
 * A, column c: W row strip * 16 + c). acc[4 J + e] is the fragment element of W row g (+8 for e >= 2) and
 * A row 8 J + 2 t + (e & 1) of the CTA's rows (the layout of mma.m16n8k16's D, J over the CTA's 8-row
 * groups). */
template <int ROWS>
__device__ __forceinline__ void wg_stage(float *st, const float (&acc)[ROWS / 2])
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int i = 0; i < ROWS / 2; i++) {
        const int row = 8 * (i / 4) + 2 * t + (i & 1), col = g + 8 * ((i & 3) >> 1);
        st[row * kWgStageRow + col] = acc[i];
    }
}

/* The end of a unit by the cluster of its splits (the WG kernel with CLUSTER): each CTA's consumer warps
 * have staged their sums in its shared memory (wg_stage, warp w's at stg + w * ROWS * kWgStageRow), the
 * cluster has synchronized, and CTA `rank` of `splits` finishes passes rank, rank + splits, ... of 16
 * rows of every strip: per lane 8 columns of one row (wg_lane_row), the partials of all splits loaded from
 * their CTAs' shared memory (distributed shared memory, two 16-byte loads each) and added in split order
 * from the first, or two by two where p.pairs: the additions of finish_unit, so the bits of the other
 * variants, without a round trip through L2, a counter or a fence. The caller synchronizes the cluster
 * before and after (no CTA may leave while another reads its shared memory). */
template <int ROWS>
__device__ __forceinline__ void wg_reduce_cluster(const mma_params &p, const float *stg, int splits, int rank, int strip,
                                                  int mtile)
{
    constexpr int TR = wg_tile_rows(ROWS);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int n0 = wg_lane_n0(strip, lane), lr = wg_lane_row(lane);
    float f[8], b[8];
    wg_factors8(p, n0, f, b);
    const bool vec = wg_c_vec(p, n0);
    /* this lane's first float of its row in the warp's staging, as a shared::cluster address of CTA k */
    const uint32_t mine = smem_addr(stg + (warp * ROWS + lr) * kWgStageRow + 8 * ((lane >> 3) & 1));
    const int step = p.pairs ? 2 : 1;
#pragma unroll 1
    for (int pass = rank; pass < ROWS / 16; pass += splits) {
        const uint32_t off = (uint32_t)(pass * 16 * kWgStageRow * 4);
        float tot[8];
#pragma unroll 1
        for (int k = 0; k < splits; k += step) {
            float v[8];
            wg_cluster_load8(v, mine + off, k);
            if (step == 2 && k + 1 < splits) {
                float w[8];
                wg_cluster_load8(w, mine + off, k + 1);
#pragma unroll
                for (int i = 0; i < 8; i++) v[i] = v[i] + w[i];
            }
#pragma unroll
            for (int i = 0; i < 8; i++) tot[i] = k == 0 ? v[i] : tot[i] + v[i];
        }
        wg_finish8(p, mtile * TR + pass * 16 + lr, n0, tot, f, b, vec);
    }
}

/* The end of a unit without a cluster (the WG kernel without CLUSTER), per M tile h of the CTA (TR rows,
 * from acc + TR / 2 * h): one split, the epilogue straight from the registers, the factors of the lane's
 * two columns read once; else finish_unit's split-K partials (the same slots), last_arrival, and
 * the last arrival's reduction in passes of 16 rows as in wg_reduce_cluster, the partials loaded from the
 * workspace 16 bytes at a time. The bits of finish_unit. */
template <int TR>
__device__ __forceinline__ void wg_finish_unit(const mma_params &p, const float *acc, int strip, int split, int mtile)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int m0 = mtile * TR, mvalid = min(TR, p.m - m0);
    if (p.splits == 1) {
        float f[2], b[2];
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int n = strip * 16 + g + 8 * h;
            f[h] = n < p.n ? qmm__epilogue_factor(p.e, (size_t)n) : 0.0f;
            b[h] = n < p.n && p.e.bias ? p.e.bias[n] : 0.0f;
        }
#pragma unroll
        for (int i = 0; i < TR / 2; i++) {
            const int mi = 8 * (i / 4) + 2 * t + (i & 1), h = (i & 3) >> 1, n = strip * 16 + g + 8 * h;
            if (mi < mvalid && n < p.n) qmm__epilogue_finish(p.e, (size_t)(m0 + mi) * p.e.ldc + (size_t)n, acc[i], f[h], b[h]);
        }
        return;
    }
    const int mstride = min(TR, p.m); /* rows of A stored per unit */
    float *part = partial_slot(p, strip, 0, mtile, TR);
    const size_t ps = (size_t)mstride * 16; /* from one split's partial to the next */
#pragma unroll
    for (int i = 0; i < TR / 2; i++) {
        const int mi = 8 * (i / 4) + 2 * t + (i & 1), r = g + 8 * ((i & 3) >> 1);
        if (mi < mvalid) part[(size_t)split * ps + mi * 16 + r] = acc[i];
    }
    if (!last_arrival(p, strip, mtile)) return;
    const int n0 = wg_lane_n0(strip, lane), lr = wg_lane_row(lane);
    float f[8], b[8];
    wg_factors8(p, n0, f, b);
    const bool vec = wg_c_vec(p, n0);
    const int step = p.pairs ? 2 : 1;
#pragma unroll 1
    for (int pass = 0; pass < TR / 16; pass++) {
        const int mi = pass * 16 + lr;
        if (mi >= mvalid) continue;
        const float *pp = part + (size_t)mi * 16 + 8 * ((lane >> 3) & 1);
        float tot[8];
#pragma unroll 1
        for (int k = 0; k < p.splits; k += step) {
            float v[8];
            wg_ldcg8(v, pp + (size_t)k * ps);
            if (step == 2 && k + 1 < p.splits) {
                float w[8];
                wg_ldcg8(w, pp + (size_t)(k + 1) * ps);
#pragma unroll
                for (int i = 0; i < 8; i++) v[i] = v[i] + w[i];
            }
#pragma unroll
            for (int i = 0; i < 8; i++) tot[i] = k == 0 ? v[i] : tot[i] + v[i];
        }
        wg_finish8(p, m0 + mi, n0, tot, f, b, vec);
    }
}

} // namespace qmm_mma

#endif
