/* The host side of the tensor-core kernels (kernels_mma.cuh), with the split of K per path in
 * kernels_mma_split.cuh: knob_int; launch_kernel;
 * a variant's setup once per device (setup_variant) and its launch (launch_variant, which picks WG,
 * WHOLE, PIPE or STEP; launch_wg; WHOLE's parts, whole_part); the tile height (launch_nb), the body of
 * each entry point. Included by kernels_mma_<enc>.cu and kernels_mma_<enc>_f16.cu. */
#ifndef QMM_CUDA_KERNELS_MMA_LAUNCH_CUH
#define QMM_CUDA_KERNELS_MMA_LAUNCH_CUH

#include <atomic>
#include <cudaTypedefs.h> /* PFN_cuTensorMapEncodeTiled */
#include <cstdlib>
#include <mutex>

#include "kernels_mma_split.cuh"
#include "kernels_mma_wg.cuh"

namespace qmm_mma {

/* The integer value of the environment variable NAME (a tuning or test knob), or fallback where unset. */
static int knob_int(const char *name, int fallback)
{
    const char *v = std::getenv(name);
    return v ? std::atoi(v) : fallback;
}

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

/* The WG producer's tensor maps for CTAs of ROWS rows (wg_maps).
 * - p's weights and scales (maps.on = 0 where either cannot be made: the producer then copies each strip
 *   on its own). One tensor copy per stage for all 8 strips instead of one per strip (and one per
 *   strip's scales), measured on an H200: E2M1 10-22% faster at M = 33..128
 *   on every default shape, E4M3 1-8%; 256-byte L2 promotion changed nothing, so the maps take none.
 *   QMM_CUDA_WGTMAP=0 (a knob for tests and benchmarks): no maps.
 * - A (maps.a_on), where its rows are 16-byte aligned (p.aligned): boxes of kWgBoxK columns and ROWS
 *   rows in the 128-byte swizzle, so that wg_stage_a does not run. QMM_CUDA_WGAMAP=0 (a knob for tests
 *   and benchmarks): wg_stage_a's layout always. */
template <int ENC, int ROWS>
static wg_maps wg_maps_for(const mma_params &p)
{
    static const bool knob = knob_int("QMM_CUDA_WGTMAP", 1) != 0, knob_a = knob_int("QMM_CUDA_WGAMAP", 1) != 0;
    constexpr int chunks = wg_stage_chunks<ENC>(), st = enc_traits<ENC>::scale_tile;
    wg_maps m{};
    m.on = knob &&
           tensor_map_2d(m.w, p.data, CU_TENSOR_MAP_DATA_TYPE_UINT64, (uint64_t)p.chunks * 64, (uint64_t)p.strips,
                         (uint64_t)p.chunks * 512, chunks * 64, kWarps) &&
           (st == 0 || tensor_map_2d(m.s, p.scales, CU_TENSOR_MAP_DATA_TYPE_UINT8, (uint64_t)p.chunks * st,
                                     (uint64_t)p.strips, (uint64_t)p.chunks * st, chunks * st, kWarps));
    const CUtensorMapDataType a_dtype = is_half(ENC) ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    m.a_on = knob_a && p.aligned &&
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

/* What the device holds of the WG kernel of one height at once (wg_setup): `slots` CTAs without
 * clusters (none: that kernel does not run), and clusters[c] clusters of c CTAs (c = 1..kWgClusterMax; 0
 * where it cannot run them). */
struct wg_room {
    long long slots = 0;
    int clusters[kWgClusterMax + 1] = {};
    bool ok() const { return slots > 0; }
};
/* variant_limits::wg's index of the room of CTAs of `rows` rows: 0 for the fused path's tile (32 or 64 rows),
 * 1, 2, 3 for two, three, four 64-row M tiles */
constexpr int wg_room_index(int rows) { return rows <= kWgRows ? 0 : rows / kWgRows - 1; }

/* The shared-memory limits of the WG kernels of ROWS rows (with and without clusters) raised, and what the
 * device holds of them (room; no clusters where the clustered form cannot take its shared memory or a
 * query fails; no slots where the unclustered form cannot run). */
template <int ENC, int ROWS>
static void wg_setup(int optin, int sm_count, wg_room &room)
{
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

/* Whether launch_variant's instance for (ENC, FP16A, NB) has the WG variant: activations as they are
 * (bf16, or fp16 against an fp16 decode; not split, FP16A), 32- or 64-row tiles of A (NB = 4 or 8; CTAs
 * of 8 * NB rows, and of 128, 192 and 256 at NB = 8), NVFP4, MXFP4 or FP8 weights (kernels_mma_wg.cuh) */
template <int ENC, bool FP16A, int NB>
constexpr bool has_wg()
{
    return (NB == 4 || NB == 8) && !FP16A && (is_nvfp4(ENC) || is_mxfp4(ENC) || is_fp8(ENC));
}

/* Whether variant (ENC, NB) has the GEMV's three-CTA WHOLE (gemv_early_split): NB = 1, not FP8 with
 * fp16 activations, whose instance ptxas compiles with a ring load copied between slots (sass_rings) */
template <int ENC, int NB>
constexpr bool has_gemv_early() { return NB == 1 && ENC != kEncFp8Half; }

/* What a variant may use on one device: set up by setup_variant, once per device (launch_variant). */
struct variant_limits {
    bool pipe_ok = false, pdl_able = false;
    /* what the device holds of the WG kernel of 8 * NB rows (wg[0]), and at NB = 8 of 128, 192 and 256
     * rows (wg[1..3]: wg_room_index) */
    wg_room wg[4];
    size_t whole_max = 0;
    size_t smem_sm = 0, smem_reserved = 0; /* shared memory per SM, and what the system takes per CTA */
    size_t optin = 0;                      /* shared memory a CTA may opt into */
};

/* Raises the shared-memory limits of variant (ENC, FP16A, NB)'s kernels on device dev, the current one
 * (cudaFuncSetAttribute acts on the current device only), and reads what the device allows into lim. */
template <int ENC, bool FP16A, int NB>
cudaError_t setup_variant(int dev, int sm_count, variant_limits &lim)
{
    using cfg = stage_config<ENC, FP16A, NB>;
    /* the shared memory a block may opt into bounds WHOLE's staging and decides whether PIPE can run:
     * 227 KB on sm_90 and 163 KB on sm_80, but 99 KB on sm_86, sm_89 and sm_120, where asking for more
     * fails (and would fail every call) */
    int optin = 0, major = 0;
    cudaError_t e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    int smem_sm = 0, reserved = 0;
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev);
    lim.smem_sm = (size_t)smem_sm;
    lim.smem_reserved = (size_t)reserved;
    if (e == cudaSuccess) e = cudaFuncSetAttribute(mma_kernel<ENC, FP16A, NB>, cudaFuncAttributeMaxDynamicSharedMemorySize, cfg::bytes);
    lim.whole_max = optin < kWholeMax ? (size_t)optin : (size_t)kWholeMax;
    lim.optin = (size_t)optin;
    /* WHOLE may take up to the opt-in size: its staging stays within whole_max, the rest is whole_spread's
     * padding */
    if constexpr (NB <= 2)
        if (e == cudaSuccess)
            e = cudaFuncSetAttribute(mma_kernel_whole<ENC, FP16A, NB>, cudaFuncAttributeMaxDynamicSharedMemorySize, optin);
    if constexpr (has_gemv_early<ENC, NB>())
        if (e == cudaSuccess)
            e = cudaFuncSetAttribute(mma_kernel_whole<ENC, FP16A, 1, kGemvEarlyCtas>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, optin);
    if constexpr (!FP16A && NB >= 2)
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
            lim.pipe_ok = e == cudaSuccess;
        }
    /* the WG variant (has_wg: bf16 A, or fp16 A against an fp16 decode): where this build has sm_90a machine
     * code (QMM_CUDA_SM90A, from the gencode flags) and the device runs it (sm_90: its kernels report PTX
     * version 90; a compute_80 PTX that a newer GPU compiles reports 80); wg_setup checks the shared
     * memory */
#ifdef QMM_CUDA_SM90A
    if constexpr (has_wg<ENC, FP16A, NB>()) {
        cudaFuncAttributes wa;
        if (e == cudaSuccess && major == 9 && cudaFuncGetAttributes(&wa, mma_kernel_wg<ENC>) == cudaSuccess &&
            wa.ptxVersion == 90) {
            wg_setup<ENC, 8 * NB>(optin, sm_count, lim.wg[0]);
            if constexpr (NB == 8)
                if (lim.wg[0].ok()) {
                    wg_setup<ENC, 2 * kWgRows>(optin, sm_count, lim.wg[wg_room_index(2 * kWgRows)]);
                    wg_setup<ENC, 3 * kWgRows>(optin, sm_count, lim.wg[wg_room_index(3 * kWgRows)]);
                    wg_setup<ENC, 4 * kWgRows>(optin, sm_count, lim.wg[wg_room_index(4 * kWgRows)]);
                }
        }
        (void)cudaGetLastError(); /* a failed query or setting only leaves the variant off */
    }
#endif
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* reported here, not by a later, unrelated launch check */
        return e;
    }
    /* the dependent launch only where the loaded kernels were compiled from sm_90 code or later, which
     * has the griddepcontrol instructions (a newer GPU running the compute_80 PTX would launch as
     * dependent but never wait); asked of STEP, which exists for every NB (asking WHOLE would
     * instantiate it for NB = 4 and 8, where it never runs) */
    cudaFuncAttributes fa;
    lim.pdl_able = major >= 9 && cudaFuncGetAttributes(&fa, mma_kernel<ENC, FP16A, NB>) == cudaSuccess && fa.ptxVersion >= 90;
    (void)cudaGetLastError(); /* a failed query above only turns the dependent launch off */
    return cudaSuccess;
}

/* The division p with its coarse units as their fine halves (the same bits, pair_units). */
static mma_params fine_units(mma_params p)
{
    if (p.half > 0) {
        p.cps = p.half;
        p.splits = (p.chunks + p.cps - 1) / p.cps;
        p.pairs = 1;
        p.half = 0;
    }
    return p;
}

/* The fine units f (fine_units, with pairs) as coarse units of two that restart at the half (the same
 * bits, pair_units); f itself where it has no pairs. */
static mma_params coarse_units(mma_params f)
{
    if (f.pairs && f.splits >= 2) {
        f.half = f.cps;
        f.cps = 2 * f.half;
        f.splits = (f.chunks + f.cps - 1) / f.cps;
        f.pairs = 0;
    }
    return f;
}

/* A launch of the WG variant: the division p (fine or coarse units), CTAs of `rows` rows (32, 64, 128 or
 * 256), clusters of `cluster` CTAs (the splits of one piece of W; 0: none) and its waves (wg_plan_of). */
struct wg_plan {
    mma_params p;
    int rows;
    int cluster;
    long long waves;
};

/* The WG launch of division q in CTAs of `rows` rows (room: what the device holds of that kernel):
 * its splits reduced in one cluster (wg_reduce_cluster) where the clusters take no more waves than the
 * same CTAs without (clusters of 4, 5 or 8 64-row CTAs that spill into a second wave are up to 1.5x
 * slower: on an H200 (6144, 18432) M = 33 holds 47 clusters of five, not its 48), up to cl_limit CTAs,
 * and for one split only in CTAs of 128 rows or more (the epilogue from shared memory, 3-8% faster at 128
 * rows, 6-7% slower in 64-row CTAs); elsewhere through the workspace (wg_finish_unit). Clusters against
 * the workspace, measured on an H200: two splits ((14336, 4096)) M = 64 37.4 against 49.0 us, M = 128
 * 69.9 against 107.1. */
static wg_plan wg_plan_of(const mma_params &q, int rows, const wg_room &room, int cl_limit)
{
    const int tiles = rows > kWgRows ? rows / kWgRows : 1, S = q.splits;
    const long long grid = (long long)strip_groups(q.strips) * S * ((q.mtiles + tiles - 1) / tiles);
    wg_plan w = {q, rows, 0, (grid + room.slots - 1) / room.slots};
    if (S <= cl_limit && S <= kWgClusterMax && room.clusters[S] > 0 && (S > 1 || rows > kWgRows) &&
        (grid / S + room.clusters[S] - 1) / room.clusters[S] <= w.waves)
        w.cluster = S;
    return w;
}

/* The WG variant (kernels_mma_wg.cuh) as planned (wg_plan_of), in CTAs of ROWS rows of A (64: one M
 * tile; 128: two); the activations copied by tensor map where it can be made (wg_maps_for), else laid
 * out in the workspace after the partials (wg_stage_a). cudaErrorNotSupported (nothing launched) where
 * the workspace cannot hold what it needs: the caller runs PIPE or STEP instead, which give the same
 * bits. pdl: the kernel as a dependent launch (launch_wg_kernel). */
template <int ENC, int ROWS>
cudaError_t launch_wg(const wg_plan &w, size_t partial_floats, cudaStream_t s, bool pdl)
{
    using cf = wg_config<ENC, ROWS>;
    const mma_params &p = w.p;
    const size_t mstride = p.m < cf::tile_rows ? (size_t)p.m : (size_t)cf::tile_rows;
    /* the partials: the splits' sums, and a coarse unit's first half (p.half, pair_stash). One split without
     * halves stores C straight from its registers or its cluster's shared memory and needs none. Asking
     * for that room anyway would send the fused path to PIPE wherever M x N outgrows the workspace (the
     * default 256 MiB at M x N > 2^26, M rounded up to 64: 28672 x 8192 at M = 4096), 2.5x slower there
     * (FP8 per channel: 7190.1 us against materialize's 2895.5, measured on an H200). */
    const bool parts = p.splits > 1 || p.half > 0;
    const size_t part_bytes = parts ? ((size_t)p.mtiles * p.strips * p.splits * mstride * 16 * sizeof(float) + 255) / 256 * 256 : 0;
    const size_t groups = (size_t)(p.mtiles + cf::tiles - 1) / cf::tiles; /* CTAs per (strip group, split) */
    const wg_maps maps = wg_maps_for<ENC, ROWS>(p);
    const size_t laid_bytes = maps.a_on ? 0 : groups * p.chunks * cf::chunk_a; /* wg_stage_a's output */
    if (part_bytes + laid_bytes > partial_floats * sizeof(float)) return cudaErrorNotSupported;
    uint8_t *a_laid = nullptr;
    if (!maps.a_on) {
        a_laid = reinterpret_cast<uint8_t *>(p.partials) + part_bytes;
        const size_t pieces = laid_bytes / 16;
        wg_stage_a<ENC, ROWS><<<(unsigned)((pieces + 255) / 256), 256, 0, s>>>(p, reinterpret_cast<uint4 *>(a_laid));
    }
    const long long grid = (long long)strip_groups(p.strips) * p.splits * (long long)groups;
    const cudaError_t e = launch_wg_kernel<ENC, ROWS>(grid, s, w.cluster, pdl, p, a_laid, maps);
    const cudaError_t last = cudaGetLastError();
    return e != cudaSuccess ? e : last;
}

/* Whether the WG variant runs division p of launch_variant (bf16 A, NB = 8; stage_chunks: the
 * encoding's wg_stage_chunks), and its plan: the knobs as read there (tests and benchmarks; 1 the
 * default rule for each). The rules were measured on NVFP4 and MXFP4; FP8 takes them in columns of K.
 * - The WG variant for 64-row tiles where the division has no coarse units (tall pairs' coarse units
 *   run as their fine halves there, twice the CTAs). Measured on an H200, it runs M = 33 and 64 1-26%
 *   faster than PIPE on every default shape (NVFP4 (8192, 28672) M = 64: 105.0 against 123.1 us), and
 *   M = 100..128 12-21% faster where there are no coarse units, but up to 22% slower than PIPE's coarse
 *   units ((14336, 4096) M = 128: 88.3 against 68.9). k.wg (QMM_CUDA_WG): 0 off, 2 also where there are
 *   coarse units. Either way the bits are those of PIPE.
 * - Its 128-row CTAs (two M tiles, one wgmma m64n128k16 per k-tile, one CTA per SM) for M = 65..128,
 *   also where the division has coarse units, over its fine units where they are long (96 chunks or
 *   more) or two or fewer, or over coarse units (below). Measured on an H200 (NVFP4) against 64-row CTAs
 *   or PIPE's coarse units: (8192, 28672) M = 65..128 11-22% faster (M = 65: 166.4 against 215.5 us),
 *   (28672, 8192) 6-11%, (14336, 4096) level to 6% faster; over short and many fine units it loses
 *   ((4096, 14336), eight splits of 28 chunks: M = 128 95.0 against 77.0; (6144, 18432), five of 58: 136.8
 *   against 121.8), and at M = 192 and 256 on most shapes. k.wg128 (QMM_CUDA_WG128): 0 keeps 64-row
 *   CTAs, 2 takes 128-row ones for every M > 64.
 * - 128-row CTAs over coarse units (two fine splits each, the sum restarting at the half: the same bits)
 *   where their waves times their units' length is no more than the fine plan's: fewer waves for the
 *   same work per SM, half the partials, and a cluster that one wave can hold where the fine plan's
 *   cannot ((8192, 28672) M = 128: 64 clusters of two in one wave against 256 128-row CTAs in two, for
 *   which an H200 holds only 30 clusters of four; 140.5 against 190.4 us). At two or four M tiles: at
 *   three one 128-row group is half empty, and forced there it loses on every default shape; at four
 *   (M = 193..256) it beats PIPE's plan wherever this rule takes it ((8192, 28672) M = 224..256 280
 *   against 424-428 us; (4096, 14336) and (14336, 4096) M = 256 144.2 against 155.5 and 127.7 against
 *   132.9) and loses where it does not ((6144, 18432): 236.9 against 208.7).
 *   k.coarse (QMM_CUDA_WGCOARSE): 2 wherever the fine units have pairs and M > 64, 0 never.
 * - k.cl (QMM_CUDA_WGCL): the largest cluster (wg_plan_of), kWgClusterMax by default, 0 none.
 * - Past four M tiles (M > 256) where no one-wave plan of 256-row CTAs exists, under the default knobs:
 *   CTAs of 256 rows (over coarse units where they take fewer waves), 128 or 64 rows, whichever costs
 *   least by wg_cost (its waves times the rows and chunks of one wave, 256-row CTAs a fifth cheaper per
 *   row-chunk). 64-row tiles alone would be PIPE where the division has coarse units ((8192, 28672)
 *   M = 384: 644.7 us, against 371.9 in 128-row CTAs, measured on an H200).
 * - 32-row tiles (tile_rows 32, M = 17..32; 32-row CTAs, one wgmma m64n32k16 per k-tile) where K is split
 *   in at most kWg32MaxSplits fine units (k.wg 2: wherever the units are whole half stages). Against
 *   PIPE's 32-row tiles, measured on an H200 (NVFP4 and FP8, M = 17, 24, 32): one split ((28672, 8192))
 *   10-19% faster, two ((14336, 4096)) 7-19%, four ((8192, 28672))
 *   10-22%, five ((6144, 18432)) 1-8%, eight ((4096, 14336)) 3-9% slower, with or without clusters (the
 *   cause of the loss with many splits is not known). */
constexpr int kWg32MaxSplits = 5;
/* The WG variant's knobs for tests and benchmarks, not for use (launch_variant reads them from QMM_CUDA_WG,
 * _WG128, _WG192, _WG256, _WGCOARSE and _WGCL; wg_choose says what each does): the defaults are the rule. */
struct wg_knobs {
    int wg = 1, wg128 = 1, wg192 = 1, wg256 = 1, coarse = 1, cl = kWgClusterMax;
};
/* plan, or the coarse units of its fine units f (two per unit, the sum restarting at the half: the same
 * bits) in CTAs of `rows` rows (room) where their waves times their length is no more than plan's, or
 * wherever k.coarse is 2; only where f has pairs and each half is whole stages (the restart sits at a
 * stage's start, mma_kernel_wg) */
static wg_plan wg_prefer_coarse(const wg_plan &plan, const mma_params &f, int rows, const wg_room &room, int stage_chunks,
                                const wg_knobs &k)
{
    if (!f.pairs || f.splits < 2 || f.cps % stage_chunks != 0) return plan;
    const wg_plan c = wg_plan_of(coarse_units(f), rows, room, k.cl);
    return k.coarse == 2 || c.waves * c.p.cps <= plan.waves * plan.p.cps ? c : plan;
}
/* What plan w costs in CTAs of w.rows rows on a device that holds room of them (slots): its waves times what
 * one wave covers (each slot's rows times its unit's chunks), weighted by what a row-chunk costs in CTAs
 * of that many rows, relative to 128 rows: 256-row CTAs 0.8, 64-row ones 0.95. Fitted on an H200 to
 * (8192, 28672) and (28672, 8192) at M = 384, 512 and 1024, NVFP4 and FP8, where it picks the plan
 * measured fastest in each of the six: 256-row CTAs at M = 512
 * on (8192, 28672) 387 us against 500 in 128-row ones, 128-row CTAs at 384 there 372 against 386, 64-row
 * ones at 384 on (28672, 8192) 386 against 430 and 508. */
static long long wg_cost(const wg_plan &w, const wg_room &room)
{
    const long long weight = w.rows > 2 * kWgRows ? 16 : w.rows > kWgRows ? 20 : 19;
    return w.waves * w.p.cps * w.rows * room.slots * weight;
}
static bool wg_choose(const mma_params &p, const variant_limits &lim, int stage_chunks, const wg_knobs &k, wg_plan &plan,
                      int tile_rows = kWgRows)
{
    const mma_params f = fine_units(p);
    /* units of whole half stages (mma_kernel_wg): for E4M3 an even number of chunks */
    const int hs = stage_chunks / 2;
    if (!lim.wg[0].ok() || f.cps % hs != 0 || p.chunks % hs != 0) return false;
    if (tile_rows < kWgRows && k.wg != 2 && f.splits > kWg32MaxSplits) return false;
    /* long units: 96 chunks of 64 columns (E2M1), 192 of 32 (E4M3), or two or fewer */
    const bool long_units = f.cps >= 48 * stage_chunks || f.splits <= 2;
    /* the plan in CTAs of `rows` rows (more than 64), over fine or coarse units (wg_prefer_coarse) */
    auto tall_plan = [&](int rows) {
        const wg_room &room = lim.wg[wg_room_index(rows)];
        const wg_plan w = wg_plan_of(f, rows, room, k.cl);
        return k.coarse != 0 ? wg_prefer_coarse(w, f, rows, room, stage_chunks, k) : w;
    };
    /* 256-row CTAs (192-row ones at three M tiles) past two M tiles where their plan takes one wave
     * (k.wg256 1), past one M tile (2) or two (3) whatever it takes, never (0); over fine or coarse
     * units (wg_prefer_coarse) */
    if (k.wg != 0 && k.wg256 != 0 && lim.wg[wg_room_index(4 * kWgRows)].ok() && tile_rows == kWgRows &&
        p.mtiles >= (k.wg256 == 2 ? 2 : 3)) {
        /* three M tiles (M = 129..192): 192-row CTAs, the same CTAs as 256 rows with a quarter fewer MMAs,
         * unless QMM_CUDA_WG192=0; also in more than one wave where the fine units are long (as for 128
         * rows) */
        const bool r192 = p.mtiles == 3 && lim.wg[wg_room_index(3 * kWgRows)].ok() && k.wg192 != 0;
        const wg_plan w = tall_plan(r192 ? 3 * kWgRows : 4 * kWgRows);
        if (k.wg256 != 1 || w.waves == 1 || (r192 && long_units)) {
            plan = w;
            return true;
        }
    }
    /* past four M tiles (M > 256, fused only on the largest weights: qmm__cuda_plan) under the default
     * knobs: CTAs of 256, 128 or 64 rows (64 only where the WG variant runs them, p.half == 0; else PIPE
     * would), whichever plan costs least by wg_cost */
    if (k.wg == 1 && k.wg128 == 1 && k.wg256 == 1 && tile_rows == kWgRows && p.mtiles > 4) {
        bool any = false;
        long long best = 0;
        auto consider = [&](const wg_plan &w) {
            const long long c = wg_cost(w, lim.wg[wg_room_index(w.rows)]);
            if (!any || c < best) plan = w, best = c, any = true;
        };
        if (lim.wg[wg_room_index(4 * kWgRows)].ok()) consider(tall_plan(4 * kWgRows));
        const wg_room &r128 = lim.wg[wg_room_index(2 * kWgRows)];
        if (r128.ok()) consider(wg_plan_of(f, 2 * kWgRows, r128, k.cl));
        if (p.half == 0) consider(wg_plan_of(f, kWgRows, lim.wg[0], k.cl));
        if (any) return true;
    }
    /* 128-row CTAs at all: past one M tile, unless QMM_CUDA_WG128=0; at two M tiles over long units */
    const bool can128 = lim.wg[wg_room_index(2 * kWgRows)].ok() && p.m > kWgRows && k.wg128 != 0;
    const bool rows128 = can128 && (k.wg128 == 2 || (k.wg128 == 1 && p.mtiles == 2 && long_units));
    const int rows = rows128 ? 2 * kWgRows : tile_rows;
    plan = wg_plan_of(f, rows, lim.wg[wg_room_index(rows)], k.cl);
    if (can128 && (k.coarse == 2 || (k.coarse == 1 && (p.mtiles == 2 || p.mtiles == 4))))
        plan = wg_prefer_coarse(plan, f, 2 * kWgRows, lim.wg[wg_room_index(2 * kWgRows)], stage_chunks, k);
    return k.wg == 2 || (k.wg == 1 && (p.half == 0 || plan.rows > kWgRows));
}

/* mma_kernel_whole's CTAs per SM (NB 8-row groups) with `bytes` of dynamic shared memory: as many as its
 * launch bounds allow, fewer where the shared memory holds fewer (where the SM's size is not known, the
 * launch bounds') */
template <int NB>
static long long whole_per_sm(size_t bytes, const variant_limits &lim, int minb = whole_min_ctas(NB))
{
    const long long regs = minb;
    if (lim.smem_sm == 0) return regs;
    const long long by_smem = (long long)(lim.smem_sm / (bytes + lim.smem_reserved));
    return by_smem < regs ? by_smem : regs;
}

/* WHOLE's dynamic shared memory where it runs as a dependent launch (pdl) and its grid is one wave
 * smaller than the CTAs the device holds (whole_per_sm per SM): padded so that an SM holds at most
 * ceil(grid / SMs) of its CTAs. The block scheduler places a grid breadth-first
 * (scripts/probes/cta_placement.cu: 240 CTAs at three per SM land 2 or 1 per SM), but a dependent
 * launch's CTAs start as soon as every CTA of the kernel before them has begun, in the slots that kernel
 * left free, and the rest as its CTAs end; so in a sequence of calls each grid lands where the one
 * before it was not, and some SMs hold three of its CTAs while others hold one. Measured on an H200: the
 * 16-row WHOLE on (6144, 18432) at M = 9 (240 CTAs, 75 KB, three per SM) takes 41.2 us unpadded, 31.4
 * padded (two per SM), and 33.4 or 33.0 without the dependent launch either way; the two 58.7 M-element
 * shapes' M = 9..16 run 16-24% faster. PIPE, faster still, runs the 16-row tiles wherever it can, so the
 * padding acts where WHOLE runs: 16 rows of split fp16 A or of unaligned rows, and GEMV grids between
 * one and four CTAs per SM. Grids of at most one
 * CTA per SM are left as they are. The padding changes nothing else: no sum, no bit. QMM_CUDA_SPREAD (a
 * knob for tests and benchmarks): 0 off, 1 by this rule (default), 2 every dependent launch padded to
 * the opt-in size (one CTA per SM). */
template <int NB>
static size_t whole_spread(size_t bytes, long long grid, int sm_count, const variant_limits &lim, bool pdl,
                           int minb = whole_min_ctas(NB))
{
    static const int knob = knob_int("QMM_CUDA_SPREAD", 1);
    if (knob == 0 || !pdl || lim.smem_sm == 0 || sm_count <= 0) return bytes;
    if (knob == 2) return lim.optin > bytes ? lim.optin : bytes;
    const long long holds = whole_per_sm<NB>(bytes, lim, minb);
    const long long want = (grid + sm_count - 1) / sm_count;
    if (want < 2 || want >= holds) return bytes; /* grids of one CTA per SM or fewer: not measured */
    const size_t padded = (lim.smem_sm / (size_t)want - lim.smem_reserved) / 128 * 128;
    return padded > bytes && padded <= lim.optin ? padded : bytes;
}

/* The GEMV's WHOLE staging in two parts (p.whole_part, mma_kernel_whole): half the CTA's chunks (rounded
 * up to the ring's depth D) at a time where staging them all at once would hold fewer CTAs per SM than
 * its registers allow (whole_min_ctas) and the grid has more CTAs than the device then holds, and the
 * halves would hold more: (28672, 8192) at split 2 from M = 6 (WHOLE stages M + 1 rows of 4096 columns,
 * 57.8 KB: three CTAs per SM, 396 slots for 448 CTAs). 0: all at once. The
 * parts change no sum (the same tiles in the same order), so M may decide them. QMM_CUDA_WHOLEPARTS (a
 * knob for tests and benchmarks): 0 never, 1 by this rule (default), 2 wherever a unit has two parts. */
template <int D, typename Bytes>
static int whole_part(int cps, long long grid, int sm_count, const variant_limits &lim, Bytes whole_bytes,
                      int minb = whole_min_ctas(1))
{
    static const int knob = knob_int("QMM_CUDA_WHOLEPARTS", 1);
    const int h = ((cps + 1) / 2 + D - 1) / D * D;
    if (knob == 0 || h >= cps) return 0;
    if (knob == 2) return h;
    auto slots = [&](size_t bytes) { return whole_per_sm<1>(bytes, lim, minb) * sm_count; };
    const long long all = slots(whole_bytes(cps));
    return all < grid && slots(whole_bytes(h)) > all ? h : 0;
}

/* The GEMV's split for the three-CTA WHOLE, or 0 where it does not run: gemv_early_fit's rule
 * (kernels_mma_split.cuh) as QMM_CUDA_GEMV3 asks (a knob for tests and benchmarks): 0 never, 1 the rule
 * (default), 2 wherever the GEMV runs WHOLE (test_cuda_gemv3). */
static int gemv_early_split(int strips, int chunks, int tiles_per_step, int sm_count, int cta_tiles)
{
    static const int knob = knob_int("QMM_CUDA_GEMV3", 1);
    return knob == 1 || knob == 2 ? gemv_early_fit(strips, chunks, tiles_per_step, sm_count, cta_tiles, knob == 2) : 0;
}

/* Launch one variant: its setup once per device, then the grid of (strip group, split, M tile) with the
 * M tiles of one piece of W adjacent. */
template <int ENC, bool FP16A, int NB>
cudaError_t launch_variant(mma_params p, int sm_count, size_t partial_floats, size_t counter_count, cudaStream_t s)
{
    using cfg = stage_config<ENC, FP16A, NB>;
    /* WHOLE and PIPE are launched as programmatic dependent launches on sm_90 and later, so that their
     * start (the first weight loads) overlaps the end of the kernel before them on the stream, where that
     * kernel allows it (qmm's own WHOLE and PIPE do): M = 1 2-11% faster for back-to-back calls (measured
     * on an H200). QMM_CUDA_PDL=0 (a knob for benchmarks) launches it plainly. */
    static const bool pdl_knob = !(std::getenv("QMM_CUDA_PDL") && std::getenv("QMM_CUDA_PDL")[0] == '0');
    /* the setup of the calling thread's current device, which the backend sets to the context's; a
     * device past the table is set up on every call (the calls are idempotent); a failed setup is
     * tried again by the next call */
    constexpr int kMaxDevices = 64;
    static struct {
        std::mutex mu;
        std::atomic<bool> done{false};
        variant_limits lim;
    } setups[kMaxDevices];
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return e;
    variant_limits lim;
    if (dev >= 0 && dev < kMaxDevices) {
        auto &t = setups[dev];
        if (!t.done.load(std::memory_order_acquire)) {
            std::lock_guard<std::mutex> lock(t.mu);
            if (!t.done.load(std::memory_order_relaxed)) {
                if ((e = setup_variant<ENC, FP16A, NB>(dev, sm_count, t.lim)) != cudaSuccess) return e;
                t.done.store(true, std::memory_order_release);
            }
        }
        lim = t.lim;
    } else if ((e = setup_variant<ENC, FP16A, NB>(dev, sm_count, lim)) != cudaSuccess) {
        return e;
    }
    const bool pipe_ok = lim.pipe_ok, pdl = pdl_knob && lim.pdl_able;
    const size_t whole_max = lim.whole_max;
    cudaError_t launch_err = cudaSuccess;
    /* QMM_CUDA_SPLITS (a tuning knob for benchmarks, not for use): the split of K, forced */
    static const int forced_splits = knob_int("QMM_CUDA_SPLITS", 0);
    /* QMM_CUDA_PAIRS=1 (a knob for tests and benchmarks, not for use): pair mode on any weight where the
     * split has halves; by default it is off */
    static const bool pairs_knob = knob_int("QMM_CUDA_PAIRS", 0) == 1;
    /* off by default: FP8 runs 1-30% faster without it at M = 16..64 on the three large default shapes
     * ((6144, 18432) M = 16: 36.7 against 52.7 us), NVFP4 13-27% slower with it at M = 16 (measured on an
     * H200, with the weight rings holding `depth` tiles in flight: docs/cuda.md, "Weight rings") */
    /* QMM_CUDA_TALL (a knob for tests and benchmarks, not for use): tall pairs, 1 (default) where the
     * coarse units' waves take no longer, 2 coarse units wherever there are several M tiles, 0 off */
    static const int tall_knob = knob_int("QMM_CUDA_TALL", 1);
    /* QMM_CUDA_ONESPLIT=0 (a knob for benchmarks, not for use): no one-split rule (one_split_fits) */
    static const bool one_knob = knob_int("QMM_CUDA_ONESPLIT", 1) != 0;
    /* the split of K where it is fixed, with no pair mode, tall pairs or three-CTA GEMV: forced by
     * QMM_CUDA_SPLITS, or one past four 64-row M tiles (one_split_fits); 0 where the rules below choose */
    const int fixed_splits = forced_splits > 0 ? forced_splits
                             : NB == 8 && one_knob && one_split_fits(p.strips, p.mtiles, sm_count) ? 1 : 0;
    const bool pair_wanted = NB >= 2 && fixed_splits <= 0 && pairs_knob;
    const bool pair = pair_wanted && pair_split<NB>(p, cfg::tiles_per_step, sm_count, partial_floats, counter_count);
    const bool tall = !pair && NB >= 2 && fixed_splits <= 0 && tall_knob != 0 &&
                      tall_split<NB>(p, cfg::tiles_per_step, sm_count, partial_floats, counter_count, tall_knob == 2);
    const int cta_tiles = gemv_cta_tiles(ENC);
    const int early_split = has_gemv_early<ENC, NB>() && fixed_splits <= 0
                                ? gemv_early_split(p.strips, p.chunks, cfg::tiles_per_step, sm_count, cta_tiles) : 0;
    if (!pair && !tall) {
        int splits = fixed_splits > 0 ? (fixed_splits < p.chunks ? fixed_splits : p.chunks)
                     : early_split > 0 ? early_split
                     : NB == 1 ? split_for(p.strips, p.chunks, cfg::tiles_per_step, sm_count, cta_tiles)
                                              : split_for_fused(p.strips, p.chunks, cfg::tiles_per_step, sm_count);
        const size_t mstride = p.m < cfg::rows ? (size_t)p.m : (size_t)cfg::rows;
        /* a workspace too small for the partials: fewer splits (only then, where a small workspace turns
         * pair mode off, and where one_split_fits starts, can a row's bits depend on M) */
        while (splits > 1 && ((size_t)p.mtiles * p.strips * splits * mstride * 16 > partial_floats ||
                              (size_t)p.mtiles * p.strips > counter_count))
            splits--;
        p.cps = (p.chunks + splits - 1) / splits;
        p.splits = (p.chunks + p.cps - 1) / p.cps;
    }
    static const wg_knobs knobs = {knob_int("QMM_CUDA_WG", 1),        knob_int("QMM_CUDA_WG128", 1),
                                   knob_int("QMM_CUDA_WG192", 1),     knob_int("QMM_CUDA_WG256", 1),
                                   knob_int("QMM_CUDA_WGCOARSE", 1),  knob_int("QMM_CUDA_WGCL", kWgClusterMax)};
    if constexpr (has_wg<ENC, FP16A, NB>()) {
        wg_plan plan;
        if (wg_choose(p, lim, wg_stage_chunks<ENC>(), knobs, plan, cfg::rows)) {
            cudaError_t we;
            if constexpr (NB == 8)
                we = plan.rows == 4 * kWgRows   ? launch_wg<ENC, 4 * kWgRows>(plan, partial_floats, s, pdl)
                     : plan.rows == 3 * kWgRows ? launch_wg<ENC, 3 * kWgRows>(plan, partial_floats, s, pdl)
                     : plan.rows == 2 * kWgRows ? launch_wg<ENC, 2 * kWgRows>(plan, partial_floats, s, pdl)
                                                : launch_wg<ENC, kWgRows>(plan, partial_floats, s, pdl);
            else
                we = launch_wg<ENC, 8 * NB>(plan, partial_floats, s, pdl);
            if (we != cudaErrorNotSupported) return we;
        }
    }
    const long long grid = (long long)strip_groups(p.strips) * p.splits * p.mtiles;
    /* the three-CTA GEMV runs at its split only (not where a small workspace cut the splits) */
    const bool early = early_split > 0 && p.splits == early_split;
    const int srows = whole_rows(cfg::rows, p.m < cfg::rows ? p.m : cfg::rows);
    auto whole_bytes = [&](int chunks) {
        return (size_t)cfg::planes * srows * (size_t)whole_stride(chunks * enc_traits<ENC>::tile_k) * 4;
    };
    size_t whole = whole_bytes(p.cps);
    if constexpr (NB == 1) {
        p.whole_part = whole_part<cfg::depth>(p.cps, grid, sm_count, lim, whole_bytes, early ? kGemvEarlyCtas : whole_min_ctas(1));
        if (p.whole_part > 0) whole = whole_bytes(p.whole_part);
    }
    /* WHOLE where it fits (the GEMV, NB = 1; 16-row tiles only where PIPE cannot run them), then PIPE
     * (activations not split, in 16-byte aligned rows; 20-35% faster than STEP at M = 32..256), then
     * STEP. 16-row tiles (NB = 2) run PIPE wherever it can run them (the same bits), WHOLE only where it
     * cannot (split fp16 activations, rows not 16-byte aligned): measured on an H200 (M = 9, 12, 16,
     * against WHOLE where its staging fits), with bf16 activations NVFP4 and MXFP4 run 9-16% faster on
     * (4096, 14336), (14336, 4096) and (6144, 18432), FP8 15-16% on (6144, 18432), with fp16 activations
     * 9-19% (NVFP4, FP8). WHOLE stages the unit's rows of A before its first MMA, after the wait for the
     * kernel before it, where PIPE's ring streams them. QMM_CUDA_WHOLE16 (a knob for tests and
     * benchmarks): 0 this rule (default), 1 WHOLE wherever its staging fits. */
    bool launched = false;
    static const int whole16_knob = knob_int("QMM_CUDA_WHOLE16", 0);
    /* QMM_CUDA_PIPE32 (a knob for tests and benchmarks): the weight tiles per stage of PIPE's 32-row tiles,
     * 0 (default) pipe_tiles (8 for FP8, 4 for E2M1), 4 or 8 forced (any other value: the default) */
    static const int pipe32_knob = knob_int("QMM_CUDA_PIPE32", 0);
    const bool pipe_can = !FP16A && NB >= 2 && p.aligned && pipe_ok; /* PIPE's own condition */
    const bool whole_off = NB == 2 && whole16_knob == 0 && pipe_can;
    if constexpr (NB <= 2)
        if (whole <= whole_max && !whole_off) {
            const size_t smem = whole_spread<NB>(whole, grid, sm_count, lim, pdl, early ? kGemvEarlyCtas : whole_min_ctas(NB));
            if constexpr (has_gemv_early<ENC, NB>())
                if (early) {
                    launch_err = launch_kernel(mma_kernel_whole<ENC, FP16A, NB, kGemvEarlyCtas>, grid, kThreads, smem, s, pdl, p);
                    launched = true;
                }
            if (!launched)
                launch_err = launch_kernel(mma_kernel_whole<ENC, FP16A, NB>, grid, kThreads, smem, s, pdl, p);
            launched = true;
        }
    if constexpr (!FP16A && NB >= 2)
        if (!launched && pipe_can) {
            void (*pipe_kernel)(mma_params) = mma_kernel_pipe<ENC, NB>;
            size_t pipe_bytes = pipe_config<ENC, NB>::bytes;
            if constexpr (NB == 2)
                if (pair) { /* the fine split fills four CTAs per SM: 4-tile stages, 64 registers */
                    pipe_kernel = mma_kernel_pipe<ENC, 2, 4, 4>;
                    pipe_bytes = pipe_config<ENC, 2, 4>::bytes;
                }
            if constexpr (NB == 4)
                if (pipe32_knob == pipe32_other(ENC)) { /* 32-row tiles at the other depth (QMM_CUDA_PIPE32) */
                    pipe_kernel = mma_kernel_pipe<ENC, 4, pipe32_other(ENC)>;
                    pipe_bytes = pipe_config<ENC, 4, pipe32_other(ENC)>::bytes;
                }
            launch_err = launch_kernel(pipe_kernel, grid, kThreads, pipe_bytes, s, pdl, p);
            launched = true;
        }
    if (!launched) launch_err = launch_kernel(mma_kernel<ENC, FP16A, NB>, grid, kThreads, cfg::bytes, s, false, p);
    const cudaError_t last = cudaGetLastError(); /* also clears the error a failed launch left */
    return launch_err != cudaSuccess ? launch_err : last;
}

/* The variant for NB of kernels (ENC, FP16A). */
template <int ENC, bool FP16A>
cudaError_t launch_nb(const mma_params &p, int nb, int sm, size_t pf, size_t cc, cudaStream_t s)
{
    switch (nb) {
    case 1: return launch_variant<ENC, FP16A, 1>(p, sm, pf, cc, s);
    case 2: return launch_variant<ENC, FP16A, 2>(p, sm, pf, cc, s);
    case 4: return launch_variant<ENC, FP16A, 4>(p, sm, pf, cc, s);
    default: return launch_variant<ENC, FP16A, 8>(p, sm, pf, cc, s);
    }
}

} // namespace qmm_mma

#endif
