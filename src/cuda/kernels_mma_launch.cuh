/* The host side of the tensor-core kernels (kernels_mma.cuh, kernels_mma_wg.cuh): a form's setup, once
 * per device (setup_form: the kernels' shared-memory limits raised, and what the device holds of the WG
 * kernels, for the plan), and the execution of a plan (launch_plan; launch_wg). Which kernel runs, with
 * which division of K, grid, shared memory and cluster, is the plan's (plan.h); this file only launches
 * it. Included by kernels_mma_<enc>.cu and kernels_mma_<enc>_f16.cu, one form of the kernels each. */
#ifndef QMM_CUDA_KERNELS_MMA_LAUNCH_CUH
#define QMM_CUDA_KERNELS_MMA_LAUNCH_CUH

#include <atomic>
#include <cudaTypedefs.h> /* PFN_cuTensorMapEncodeTiled */
#include <mutex>

#include "kernels_mma_wg.cuh"
#include "plan.h"

namespace qmm_mma {

/* The plan's copy of the kernels' geometry (plan.h) is theirs. */
static_assert(QMM__CUDA_WARPS == kWarps && QMM__CUDA_THREADS == kThreads && QMM__CUDA_WHOLE_MAX == kWholeMax &&
                  QMM__CUDA_GEMV_EARLY_CTAS == kGemvEarlyCtas && QMM__CUDA_WG_ROWS == kWgRows &&
                  QMM__CUDA_WG_CLUSTER_MAX == kWgClusterMax && QMM__CUDA_WG_SMEM_MAX == kWgSmemMax,
              "plan.h's kernel constants");
static_assert(QMM__KENC_FP8_HALF == kEncFp8Half && QMM__KENC_NVFP4_HALF == kEncNvfp4Half && QMM__KENC_MXFP4_HALF == kEncMxfp4Half,
              "plan.h's kernel encodings");
static_assert(qmm__cuda_whole_min_ctas(1) == whole_min_ctas(1) && qmm__cuda_whole_min_ctas(2) == whole_min_ctas(2),
              "plan.h's WHOLE occupancy");

/* The launch configuration of grid CTAs of `threads` threads with smem bytes of dynamic shared memory on
 * s, with the attributes at (which it points to). */
template <int N>
static cudaLaunchConfig_t launch_config(cudaLaunchAttribute (&at)[N], long long grid, int threads, size_t smem, cudaStream_t s)
{
    cudaLaunchConfig_t lc = {};
    lc.gridDim = dim3((unsigned)grid);
    lc.blockDim = dim3(threads);
    lc.dynamicSmemBytes = smem;
    lc.stream = s;
    lc.attrs = at;
    lc.numAttrs = N;
    return lc;
}

/* at as the dependent-launch attribute (the kernels' pdl_overlap or pdl_wait), on or off */
static void pdl_attribute(cudaLaunchAttribute &at, bool pdl)
{
    at.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at.val.programmaticStreamSerializationAllowed = pdl ? 1 : 0;
}

/* Launches KERNEL(args...) on s in grid CTAs of `threads`, as a programmatic dependent launch
 * (pdl_overlap, pdl_wait) when pdl is set. */
template <typename Kernel, typename... Args>
static cudaError_t launch_kernel(Kernel kernel, long long grid, int threads, size_t smem, cudaStream_t s, bool pdl,
                                 Args... args)
{
    if (!pdl) {
        kernel<<<(unsigned)grid, threads, smem, s>>>(args...);
        return cudaSuccess; /* the caller reads cudaGetLastError */
    }
    cudaLaunchAttribute at[1];
    pdl_attribute(at[0], true);
    const cudaLaunchConfig_t lc = launch_config(at, grid, threads, smem, s);
    return cudaLaunchKernelEx(&lc, kernel, args...);
}

/* The launch configuration of grid CTAs of the WG kernel in clusters of `cluster` (at: its three
 * attributes, which the configuration points to), a dependent launch where pdl is set, scheduled by
 * `policy`: the library's launches take the load-balancing one, under which the H200 holds 66 clusters
 * of four 64-row CTAs at once where the default (spread) holds 62, and 83 of three against 79
 * (scripts/probes/cluster_occupancy.cu, which compares the two; docs/cuda.md, "Clusters"). */
static cudaLaunchConfig_t wg_cluster_config(cudaLaunchAttribute (&at)[3], long long grid, int threads, size_t smem,
                                            cudaStream_t s, int cluster, bool pdl = false,
                                            cudaClusterSchedulingPolicy policy = cudaClusterSchedulingPolicyLoadBalancing)
{
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = (unsigned)cluster;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    at[1].id = cudaLaunchAttributeClusterSchedulingPolicyPreference;
    at[1].val.clusterSchedulingPolicyPreference = policy;
    pdl_attribute(at[2], pdl);
    return launch_config(at, grid, threads, smem, s);
}

/* The driver's cuTensorMapEncodeTiled, through the runtime (the library does not link the driver);
 * null where the runtime or the driver lacks it. */
static PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder()
{
    static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
        void *f = nullptr;
#if CUDART_VERSION >= 12050
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess)
            f = nullptr;
        (void)cudaGetLastError(); /* a failed query is not the caller's error */
#endif
        return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
    }();
    return fn;
}

/* A 2-D tensor map of `rows` rows of `cols` elements of `type` at base, stride bytes apart,
 * read in boxes of box_cols x box_rows elements (zeros past the edges), written to shared memory in
 * `swizzle`; false where the driver refuses it (e.g. base or stride not a multiple of 16 bytes). */
static bool tensor_map_2d(CUtensorMap &m, const void *base, CUtensorMapDataType type, uint64_t cols, uint64_t rows,
                          uint64_t stride, uint32_t box_cols, uint32_t box_rows,
                          CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE)
{
    const auto encode = tensor_map_encoder();
    const cuuint64_t dim[2] = {cols, rows}, strides[1] = {stride};
    const cuuint32_t box[2] = {box_cols, box_rows}, step[2] = {1, 1};
    return encode && encode(&m, type, 2, const_cast<void *>(base), dim, strides, box, step, CU_TENSOR_MAP_INTERLEAVE_NONE,
                            swizzle, CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

/* The WG producer's tensor maps for CTAs of ROWS rows (wg_maps), where the plan asks for them.
 * - p's weights and scales (maps.on = 0 where either cannot be made: the producer then copies each strip
 *   on its own). One tensor copy per stage for all 8 strips instead of one per strip (and one per
 *   strip's scales), measured on an H200: E2M1 10-22% faster at M = 33..128
 *   on every default shape, E4M3 1-8%; 256-byte L2 promotion changed nothing, so the maps take none.
 * - A (maps.a_on), where its rows are 16-byte aligned (p.aligned): boxes of kWgBoxK columns and ROWS
 *   rows in the 128-byte swizzle, so that wg_stage_a does not run. */
template <int ENC, int ROWS>
static wg_maps wg_maps_for(const mma_params &p, bool w_map, bool a_map)
{
    constexpr int chunks = wg_stage_chunks<ENC>(), st = enc_traits<ENC>::scale_tile;
    wg_maps m{};
    m.on = w_map &&
           tensor_map_2d(m.w, p.data, CU_TENSOR_MAP_DATA_TYPE_UINT64, (uint64_t)p.chunks * 64, (uint64_t)p.strips,
                         (uint64_t)p.chunks * 512, chunks * 64, kWarps) &&
           (st == 0 || tensor_map_2d(m.s, p.scales, CU_TENSOR_MAP_DATA_TYPE_UINT8, (uint64_t)p.chunks * st,
                                     (uint64_t)p.strips, (uint64_t)p.chunks * st, chunks * st, kWarps));
    const CUtensorMapDataType a_dtype = is_half(ENC) ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    m.a_on = a_map && p.aligned &&
             tensor_map_2d(m.a, p.a, a_dtype, (uint64_t)p.k, (uint64_t)p.m, (uint64_t)p.lda * 2, kWgBoxK, ROWS,
                           CU_TENSOR_MAP_SWIZZLE_128B);
    return m;
}

/* The WG kernel's launch (kernels_mma_wg.cuh): grid CTAs of kernel<ENC, ROWS, true> in clusters of
 * `cluster`, the splits of one piece of W, which then reduce their sums in distributed shared memory (a
 * cluster of one: the epilogue from shared memory); cluster 0: kernel<ENC, ROWS, false> without
 * clusters, finish_unit's reduction through the workspace. a_laid: wg_stage_a's output where maps
 * has no map of A. pdl: as a dependent launch of the kernel before it, wg_stage_a or where A has a map
 * the stream's last (the kernel's producer requests its first stages' weights before it waits for that
 * grid). */
template <int ENC, int ROWS>
static cudaError_t launch_wg_kernel(long long grid, cudaStream_t s, int cluster, bool pdl, const mma_params &p,
                                    const uint8_t *a_laid, const wg_maps &maps)
{
    constexpr size_t smem = wg_config<ENC, ROWS>::bytes;
    if (cluster == 0)
        return launch_kernel(mma_kernel_wg<ENC, ROWS, false>, grid, wg_threads<ROWS>(), smem, s, pdl, p, a_laid, maps);
    cudaLaunchAttribute at[3];
    const cudaLaunchConfig_t lc = wg_cluster_config(at, grid, wg_threads<ROWS>(), smem, s, cluster, pdl);
    return cudaLaunchKernelEx(&lc, mma_kernel_wg<ENC, ROWS, true>, p, a_laid, maps);
}

/* What the device holds of the WG kernel of ROWS rows (its limits raised; no clusters where the clustered
 * form cannot take its shared memory or a query fails; no slots where the unclustered form cannot run). */
template <int ENC, int ROWS>
static void wg_setup(int optin, int sm_count, qmm__cuda_wg_room &room)
{
    static_assert(qmm__cuda_wg_bytes(ENC, ROWS) == wg_config<ENC, ROWS>::bytes && qmm__cuda_wg_threads(ROWS) == wg_threads<ROWS>() &&
                      qmm__cuda_wg_tiles(ROWS) == wg_config<ENC, ROWS>::tiles &&
                      qmm__cuda_wg_tile_rows(ROWS) == wg_config<ENC, ROWS>::tile_rows &&
                      qmm__cuda_wg_chunk_a(ENC, ROWS) == wg_config<ENC, ROWS>::chunk_a,
                  "plan.h's WG geometry");
    constexpr int bytes = wg_config<ENC, ROWS>::bytes;
    int per_sm = 0;
    if (bytes > optin ||
        cudaFuncSetAttribute(mma_kernel_wg<ENC, ROWS, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, mma_kernel_wg<ENC, ROWS, false>, wg_threads<ROWS>(), bytes) !=
            cudaSuccess ||
        per_sm < 1)
        return;
    room.slots = (long long)per_sm * sm_count;
    if (cudaFuncSetAttribute(mma_kernel_wg<ENC, ROWS, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) == cudaSuccess)
        for (int c = 1; c <= kWgClusterMax; c++) {
            cudaLaunchAttribute at[3];
            const cudaLaunchConfig_t lc = wg_cluster_config(at, c, wg_threads<ROWS>(), bytes, 0, c);
            int n = 0;
            if (cudaOccupancyMaxActiveClusters(&n, mma_kernel_wg<ENC, ROWS, true>, &lc) != cudaSuccess) break;
            room.clusters[c] = n;
        }
    (void)cudaGetLastError(); /* a failed query only leaves clusters off */
}

/* Whether form (ENC, FP16A) has the WG kernel at NB: activations as they are (bf16, or fp16 against an
 * fp16 decode; not split, FP16A), 32- or 64-row tiles of A (NB = 4 or 8; CTAs of 8 * NB rows, and of 128,
 * 192 and 256 at NB = 8), NVFP4, MXFP4 or FP8 weights (kernels_mma_wg.cuh) */
template <int ENC, bool FP16A, int NB>
constexpr bool has_wg()
{
    return (NB == 4 || NB == 8) && !FP16A && (is_nvfp4(ENC) || is_mxfp4(ENC) || is_fp8(ENC));
}

/* Whether form (ENC, FP16A) at NB has the GEMV's three-CTA WHOLE: NB = 1, not FP8 with fp16 activations,
 * whose instance ptxas compiles with a ring load copied between slots (sass_rings) */
template <int ENC, int NB>
constexpr bool has_gemv_early() { return NB == 1 && ENC != kEncFp8Half; }

/* Tile height NB of form (ENC, FP16A) on device dev, the current one (cudaFuncSetAttribute acts on the
 * current device only): its kernels' shared-memory limits raised (STEP's stages; WHOLE up to the opt-in
 * size, its staging within the plan's bound, the rest whole_spread's padding; PIPE's stages where they fit
 * the opt-in size: 227 KB on sm_90 and 163 KB on sm_80, but 99 KB on sm_86, sm_89 and sm_120, where
 * asking for more fails, and would fail every call), and what the device holds of its WG kernels (32 rows
 * at NB = 4; 64, and 128, 192 and 256 where 64 rows run, at NB = 8) where this build has sm_90a machine
 * code (QMM_CUDA_SM90A, from the gencode flags) and the device runs it (sm_90: its kernels report PTX
 * version 90; a compute_80 PTX that a newer GPU compiles reports 80). */
template <int ENC, bool FP16A, int NB>
static cudaError_t setup_nb(int optin, int major, int sm_count, qmm__cuda_kernel_facts &facts)
{
    using cfg = stage_config<ENC, FP16A, NB>;
    static_assert(qmm__cuda_step_bytes(FP16A, NB) == cfg::bytes && qmm__kenc_tiles_per_step(ENC) == cfg::tiles_per_step &&
                      qmm__kenc_tile_k(ENC) == enc_traits<ENC>::tile_k && qmm__kenc_scale_tile(ENC) == enc_traits<ENC>::scale_tile &&
                      QMM__CUDA_RING_DEPTH == cfg::depth && qmm__cuda_wg_stage_chunks(ENC) == wg_stage_chunks<ENC>() &&
                      qmm__cuda_pipe_tiles(ENC, NB) == pipe_tiles(ENC, NB) && qmm__cuda_pipe32_other(ENC) == pipe32_other(ENC),
                  "plan.h's geometry of the tiles, STEP and PIPE");
    cudaError_t e = cudaFuncSetAttribute(mma_kernel<ENC, FP16A, NB>, cudaFuncAttributeMaxDynamicSharedMemorySize, cfg::bytes);
    if constexpr (NB <= 2)
        if (e == cudaSuccess)
            e = cudaFuncSetAttribute(mma_kernel_whole<ENC, FP16A, NB>, cudaFuncAttributeMaxDynamicSharedMemorySize, optin);
    if constexpr (has_gemv_early<ENC, NB>())
        if (e == cudaSuccess)
            e = cudaFuncSetAttribute(mma_kernel_whole<ENC, FP16A, 1, kGemvEarlyCtas>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, optin);
    if constexpr (!FP16A && NB >= 2) {
        static_assert(qmm__cuda_pipe_bytes(ENC, NB, pipe_tiles(ENC, NB)) == pipe_config<ENC, NB>::bytes &&
                          qmm__cuda_pipe_bytes(ENC, 2, 4) == pipe_config<ENC, 2, 4>::bytes &&
                          qmm__cuda_pipe_bytes(ENC, 4, pipe32_other(ENC)) == pipe_config<ENC, 4, pipe32_other(ENC)>::bytes,
                      "plan.h's PIPE shared memory");
        if (e == cudaSuccess && pipe_config<ENC, NB>::bytes <= optin) {
            e = cudaFuncSetAttribute(mma_kernel_pipe<ENC, NB>, cudaFuncAttributeMaxDynamicSharedMemorySize, pipe_config<ENC, NB>::bytes);
            if constexpr (NB == 2)
                if (e == cudaSuccess)
                    e = cudaFuncSetAttribute(mma_kernel_pipe<ENC, 2, 4, 4>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             pipe_config<ENC, 2, 4>::bytes);
            if constexpr (NB == 4)
                if (e == cudaSuccess)
                    e = cudaFuncSetAttribute(mma_kernel_pipe<ENC, 4, pipe32_other(ENC)>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             pipe_config<ENC, 4, pipe32_other(ENC)>::bytes);
        }
    }
#ifdef QMM_CUDA_SM90A
    if constexpr (has_wg<ENC, FP16A, NB>()) {
        cudaFuncAttributes wa;
        if (e == cudaSuccess && major == 9 && cudaFuncGetAttributes(&wa, mma_kernel_wg<ENC>) == cudaSuccess &&
            wa.ptxVersion == 90) {
            qmm__cuda_wg_room *wg = facts.wg;
            wg_setup<ENC, 8 * NB>(optin, sm_count, wg[qmm__cuda_wg_height(8 * NB)]);
            if constexpr (NB == 8)
                if (wg[qmm__cuda_wg_height(kWgRows)].slots > 0) {
                    wg_setup<ENC, 2 * kWgRows>(optin, sm_count, wg[qmm__cuda_wg_height(2 * kWgRows)]);
                    wg_setup<ENC, 3 * kWgRows>(optin, sm_count, wg[qmm__cuda_wg_height(3 * kWgRows)]);
                    wg_setup<ENC, 4 * kWgRows>(optin, sm_count, wg[qmm__cuda_wg_height(4 * kWgRows)]);
                }
        }
        (void)cudaGetLastError(); /* a failed query or setting only leaves the WG kernel off */
    }
#else
    (void)major, (void)sm_count, (void)facts;
#endif
    return e;
}

/* The plan's WG launch l in CTAs of ROWS rows: the activations copied by tensor map where it can be made
 * (wg_maps_for), else laid out in the workspace after the partials (wg_stage_a). cudaErrorNotSupported
 * (nothing launched) where the driver refused the map of A the plan counted on and the workspace cannot
 * hold A laid out: the caller runs the plan's other launch, which gives the same bits. */
template <int ENC, int ROWS>
cudaError_t launch_wg(const qmm__cuda_launch &l, mma_params p, size_t partial_floats, cudaStream_t s)
{
    using cf = wg_config<ENC, ROWS>;
    p.cps = l.div.cps, p.splits = l.div.splits, p.pairs = l.div.pairs, p.half = l.div.half;
    const wg_maps maps = wg_maps_for<ENC, ROWS>(p, l.w_map, l.a_map);
    const size_t groups = (size_t)(p.mtiles + cf::tiles - 1) / cf::tiles; /* CTAs per (strip group, split) */
    const size_t laid_bytes = maps.a_on ? 0 : groups * p.chunks * cf::chunk_a; /* wg_stage_a's output */
    if (l.part_bytes + laid_bytes > partial_floats * sizeof(float)) return cudaErrorNotSupported;
    uint8_t *a_laid = nullptr;
    if (!maps.a_on) {
        a_laid = reinterpret_cast<uint8_t *>(p.partials) + l.part_bytes;
        const size_t pieces = laid_bytes / 16;
        wg_stage_a<ENC, ROWS><<<(unsigned)((pieces + 255) / 256), 256, 0, s>>>(p, reinterpret_cast<uint4 *>(a_laid));
    }
    const cudaError_t e = launch_wg_kernel<ENC, ROWS>(l.grid, s, l.cluster, l.pdl, p, a_laid, maps);
    const cudaError_t last = cudaGetLastError();
    return e != cudaSuccess ? e : last;
}

/* The plan's launches at NB 8-row groups per M tile: the WG kernel where it plans one, else (or where
 * launch_wg could not run) WHOLE, PIPE or STEP, each as the plan gives it. */
template <int ENC, bool FP16A, int NB>
cudaError_t launch_plan(const qmm__cuda_plan &plan, mma_params p, size_t partial_floats, cudaStream_t s)
{
    static_assert(has_wg<ENC, FP16A, NB>() == ((NB == 4 || NB == 8) && !FP16A), "the plan's rule for the WG kernel");
    static_assert(has_gemv_early<ENC, NB>() == (NB == 1 && ENC != QMM__KENC_FP8_HALF), "the plan's rule for the three-CTA GEMV");
    if constexpr (has_wg<ENC, FP16A, NB>())
        if (plan.wg) {
            const qmm__cuda_launch &w = plan.wg_launch;
            cudaError_t we;
            if constexpr (NB == 8)
                we = w.rows == 4 * kWgRows   ? launch_wg<ENC, 4 * kWgRows>(w, p, partial_floats, s)
                     : w.rows == 3 * kWgRows ? launch_wg<ENC, 3 * kWgRows>(w, p, partial_floats, s)
                     : w.rows == 2 * kWgRows ? launch_wg<ENC, 2 * kWgRows>(w, p, partial_floats, s)
                                             : launch_wg<ENC, kWgRows>(w, p, partial_floats, s);
            else
                we = launch_wg<ENC, 8 * NB>(w, p, partial_floats, s);
            if (we != cudaErrorNotSupported) return we;
        }
    const qmm__cuda_launch &l = plan.launch;
    p.cps = l.div.cps, p.splits = l.div.splits, p.pairs = l.div.pairs, p.half = l.div.half, p.whole_part = l.div.whole_part;
    cudaError_t e = cudaSuccess;
    bool launched = false;
    if constexpr (NB <= 2)
        if (l.variant == QMM__CUDA_WHOLE) {
            if constexpr (has_gemv_early<ENC, NB>())
                if (l.minb == kGemvEarlyCtas) {
                    e = launch_kernel(mma_kernel_whole<ENC, FP16A, NB, kGemvEarlyCtas>, l.grid, kThreads, l.smem, s, l.pdl, p);
                    launched = true;
                }
            if (!launched) e = launch_kernel(mma_kernel_whole<ENC, FP16A, NB>, l.grid, kThreads, l.smem, s, l.pdl, p);
            launched = true;
        }
    if constexpr (!FP16A && NB >= 2)
        if (l.variant == QMM__CUDA_PIPE) {
            void (*pipe_kernel)(mma_params) = mma_kernel_pipe<ENC, NB>;
            if constexpr (NB == 2)
                if (l.minb == 4) pipe_kernel = mma_kernel_pipe<ENC, 2, 4, 4>; /* pair mode's fine split: 4-tile stages, 64 registers */
            if constexpr (NB == 4)
                if (l.tiles == pipe32_other(ENC)) pipe_kernel = mma_kernel_pipe<ENC, 4, pipe32_other(ENC)>;
            e = launch_kernel(pipe_kernel, l.grid, kThreads, l.smem, s, l.pdl, p);
            launched = true;
        }
    if (!launched) e = launch_kernel(mma_kernel<ENC, FP16A, NB>, l.grid, kThreads, l.smem, s, false, p);
    const cudaError_t last = cudaGetLastError(); /* also clears the error a failed launch left */
    return e != cudaSuccess ? e : last;
}

/* A form's tile heights (8-row groups per M tile: 1, the GEMV; 2, 4, 8, the fused path), each with its
 * setup and its launcher, in the order the plan's heights go. */
template <int ENC, bool FP16A>
struct form_height {
    int nb;
    cudaError_t (*setup)(int optin, int major, int sm_count, qmm__cuda_kernel_facts &facts);
    cudaError_t (*launch)(const qmm__cuda_plan &plan, mma_params p, size_t partial_floats, cudaStream_t s);
};
template <int ENC, bool FP16A>
constexpr form_height<ENC, FP16A> form_heights[4] = {
    {1, setup_nb<ENC, FP16A, 1>, launch_plan<ENC, FP16A, 1>},
    {2, setup_nb<ENC, FP16A, 2>, launch_plan<ENC, FP16A, 2>},
    {4, setup_nb<ENC, FP16A, 4>, launch_plan<ENC, FP16A, 4>},
    {8, setup_nb<ENC, FP16A, 8>, launch_plan<ENC, FP16A, 8>},
};

/* Form (ENC, FP16A)'s setup on device dev, the current one: every tile height's (setup_nb), and what the
 * plan reads of the device for it (facts): the WG kernels' rooms, whether its kernels have sm_90 code
 * (griddepcontrol: asked of STEP, which every height has; a newer GPU running the compute_80 PTX would
 * launch as dependent but never wait), whether the driver makes tensor maps. */
template <int ENC, bool FP16A>
cudaError_t setup_form(int dev, int sm_count, qmm__cuda_kernel_facts &facts)
{
    facts = qmm__cuda_kernel_facts{};
    int optin = 0, major = 0;
    cudaError_t e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    for (const auto &h : form_heights<ENC, FP16A>)
        if (e == cudaSuccess) e = h.setup(optin, major, sm_count, facts);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* reported here, not by a later, unrelated launch check */
        return e;
    }
    cudaFuncAttributes fa;
    facts.pdl = major >= 9 && cudaFuncGetAttributes(&fa, mma_kernel<ENC, FP16A, 1>) == cudaSuccess && fa.ptxVersion >= 90;
    (void)cudaGetLastError(); /* a failed query above only turns the dependent launch off */
    facts.tensor_maps = tensor_map_encoder() != nullptr;
    facts.ready = true;
    return cudaSuccess;
}

/* setup_form once per device (the calling thread's current one, which the backend sets to the context's);
 * a device past the table is set up on every call (the calls are idempotent); a failed setup is tried
 * again by the next call. */
template <int ENC, bool FP16A>
cudaError_t setup_once(int sm_count, qmm__cuda_kernel_facts &facts)
{
    constexpr int kMaxDevices = 64;
    static struct {
        std::mutex mu;
        std::atomic<bool> done{false};
        qmm__cuda_kernel_facts facts;
    } setups[kMaxDevices];
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return e;
    if (dev < 0 || dev >= kMaxDevices) return setup_form<ENC, FP16A>(dev, sm_count, facts);
    auto &t = setups[dev];
    if (!t.done.load(std::memory_order_acquire)) {
        std::lock_guard<std::mutex> lock(t.mu);
        if (!t.done.load(std::memory_order_relaxed)) {
            if ((e = setup_form<ENC, FP16A>(dev, sm_count, t.facts)) != cudaSuccess) return e;
            t.done.store(true, std::memory_order_release);
        }
    }
    facts = t.facts;
    return cudaSuccess;
}

/* The plan's launches for form (ENC, FP16A), at the plan's tile height. */
template <int ENC, bool FP16A>
cudaError_t launch_form(const qmm__cuda_plan &plan, const mma_params &p, size_t partial_floats, cudaStream_t s)
{
    for (const auto &h : form_heights<ENC, FP16A>)
        if (h.nb == plan.nb) return h.launch(plan, p, partial_floats, s);
    return cudaErrorInvalidValue;
}

/* The forms' entry points (kernels_mma.cu calls them): one translation unit per encoding and form of A,
 * so that they compile in parallel (kernels_mma_<enc>.cu: bf16 A; kernels_mma_<enc>_f16.cu: fp16 A). Only
 * the forms a plan can choose are instantiated: with fp16 activations FP8 takes kEncFp8Half, NVFP4
 * kEncNvfp4Half, MXFP4 kEncMxfp4Half or the split (FP16A: two MMAs per product). The build waits for its
 * slowest TU: one TU per encoding takes 114-163 s to compile (nvcc 13.0, one core of a Zen 4 VM, cicc
 * about 40% and ptxas 60%), one per encoding and form 0.46-0.54 of that. */
cudaError_t setup_nvfp4(int sm_count, qmm__cuda_kernel_facts &facts);
cudaError_t setup_nvfp4_f16(int sm_count, qmm__cuda_kernel_facts &facts);
cudaError_t setup_mxfp4(int sm_count, qmm__cuda_kernel_facts &facts);
cudaError_t setup_mxfp4_f16(int sm_count, qmm__cuda_kernel_facts &facts);
cudaError_t setup_mxfp4_split(int sm_count, qmm__cuda_kernel_facts &facts);
cudaError_t setup_fp8(int sm_count, qmm__cuda_kernel_facts &facts);
cudaError_t setup_fp8_f16(int sm_count, qmm__cuda_kernel_facts &facts);
cudaError_t run_nvfp4(const qmm__cuda_plan &plan, const mma_params &p, size_t partial_floats, cudaStream_t s);
cudaError_t run_nvfp4_f16(const qmm__cuda_plan &plan, const mma_params &p, size_t partial_floats, cudaStream_t s);
cudaError_t run_mxfp4(const qmm__cuda_plan &plan, const mma_params &p, size_t partial_floats, cudaStream_t s);
cudaError_t run_mxfp4_f16(const qmm__cuda_plan &plan, const mma_params &p, size_t partial_floats, cudaStream_t s);
cudaError_t run_mxfp4_split(const qmm__cuda_plan &plan, const mma_params &p, size_t partial_floats, cudaStream_t s);
cudaError_t run_fp8(const qmm__cuda_plan &plan, const mma_params &p, size_t partial_floats, cudaStream_t s);
cudaError_t run_fp8_f16(const qmm__cuda_plan &plan, const mma_params &p, size_t partial_floats, cudaStream_t s);

} // namespace qmm_mma

#endif
