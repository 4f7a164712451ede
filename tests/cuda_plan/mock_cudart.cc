/* A CUDA runtime without a GPU, for the launch recorder (dump.c): the backend and its launchers, compiled
 * as they are into the library's objects, are linked against these definitions instead of cudart. The
 * device's attributes and the WG kernels' occupancy come from a profile (grid.h); memory is addresses
 * that are never touched; every kernel launch is recorded as text (its kernel, grid, threads, dynamic
 * shared memory, cluster, dependent launch and its division of K), which qmm_mock_take hands out. Host
 * code only: no kernel runs. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>

#include "grid.h"

extern "C" void qmm_mock_division(const char *name, void **args, char *buf, size_t cap); /* mock_args.cu */

namespace {

int current_device = 0;
uintptr_t next_address = (uintptr_t)1 << 40; /* cudaMalloc's bump allocator: addresses only */
std::map<const void *, std::string> kernel_names; /* host stub -> the kernel's name, e.g. "pipe<1,8,4,2>" */
std::string record;                               /* the launches since the last qmm_mock_take */
std::set<std::string> raised; /* "<device> <kernel> <bytes>": the shared-memory limits raised (cudaFuncSetAttribute) */

const qmm_test_device &device() { return qmm_test_devices[current_device]; }

/* "void qmm_mma::mma_kernel_pipe<1, 8, 4, 2>(qmm_mma::mma_params)" -> "pipe<1,8,4,2>" */
std::string short_name(const char *mangled)
{
    int status = 0;
    char *d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
    std::string s = status == 0 && d ? d : mangled;
    std::free(d);
    static const struct {
        const char *from, *to;
    } names[] = {{"qmm_mma::mma_kernel_whole<", "whole<"}, {"qmm_mma::mma_kernel_pipe<", "pipe<"},
                 {"qmm_mma::mma_kernel_wg<", "wg<"},       {"qmm_mma::wg_stage_a<", "stage_a<"},
                 {"qmm_mma::mma_kernel<", "step<"}};
    for (const auto &n : names) {
        const size_t at = s.find(n.from);
        if (at == std::string::npos) continue;
        const size_t open = at + std::strlen(n.from), close = s.find('>', open);
        std::string args = s.substr(open, close - open), out;
        for (size_t i = 0; i < args.size();) {
            if (args.compare(i, 4, "true") == 0) out += '1', i += 4;
            else if (args.compare(i, 5, "false") == 0) out += '0', i += 5;
            else if (args[i] == ' ') i++;
            else out += args[i++];
        }
        return std::string(n.to) + out + ">";
    }
    return s;
}

const std::string &name_of(const void *fn)
{
    static const std::string unknown = "unknown";
    auto it = kernel_names.find(fn);
    return it == kernel_names.end() ? unknown : it->second;
}

/* rows of A per CTA of a WG kernel ("wg<E,ROWS,CL>"), as grid.h's index 0..4 */
int wg_rows_index(const std::string &name)
{
    const size_t c = name.find(',');
    const int rows = std::atoi(name.c_str() + c + 1);
    return rows <= 32 ? 0 : rows <= 64 ? 1 : rows <= 128 ? 2 : rows <= 192 ? 3 : 4;
}

void launch(const void *fn, dim3 grid, dim3 block, size_t smem, void **args, int cluster, int pdl)
{
    const std::string &name = name_of(fn);
    char buf[160];
    snprintf(buf, sizeof buf, "%s g%u t%u s%zu", name.c_str(), grid.x, block.x, smem);
    if (!record.empty()) record += " ; ";
    record += buf;
    if (cluster) record += " c" + std::to_string(cluster);
    if (pdl) record += " pdl";
    char div[192];
    qmm_mock_division(name.c_str(), args, div, sizeof div);
    record += div;
}

} // namespace

extern "C" {

/* ---- the recorder's interface (dump.c) ---- */

/* The launches since the last call, as one line (empty where none). */
size_t qmm_mock_take(char *buf, size_t cap)
{
    const size_t n = record.size() < cap - 1 ? record.size() : cap - 1;
    std::memcpy(buf, record.data(), n);
    buf[n] = '\0';
    record.clear();
    return n;
}

/* Every shared-memory limit raised so far, one "a <device> <kernel> <bytes>" line each, sorted. */
void qmm_mock_print_raised(FILE *f)
{
    for (const auto &r : raised) std::fprintf(f, "a %s\n", r.c_str());
}

/* ---- registration of the kernels (nvcc's host stubs) ---- */

void **__cudaRegisterFatBinary(void *) { static void *handle = nullptr; return &handle; }
void __cudaRegisterFatBinaryEnd(void **) {}
void __cudaUnregisterFatBinary(void **) {}
void __cudaRegisterFunction(void **, const char *host_fun, char *device_fun, const char *, int, uint3 *, uint3 *, dim3 *,
                            dim3 *, int *)
{
    kernel_names[host_fun] = short_name(device_fun);
}
void __cudaRegisterVar(void **, char *, char *, const char *, int, size_t, int, int) {}

/* ---- launches ---- */

struct launch_config_saved {
    dim3 grid, block;
    size_t smem;
};
static launch_config_saved pushed;
unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t smem, struct CUstream_st *)
{
    pushed = {grid, block, smem};
    return 0;
}
cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block, size_t *smem, void *stream)
{
    *grid = pushed.grid, *block = pushed.block, *smem = pushed.smem;
    *static_cast<cudaStream_t *>(stream) = nullptr;
    return cudaSuccess;
}
cudaError_t __cudaGetKernel(cudaKernel_t *k, const void *fn)
{
    *k = (cudaKernel_t)const_cast<void *>(fn);
    return cudaSuccess;
}
cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 grid, dim3 block, void **args, size_t smem, cudaStream_t)
{
    launch((const void *)k, grid, block, smem, args, 0, 0);
    return cudaSuccess;
}
cudaError_t cudaLaunchKernel(const void *fn, dim3 grid, dim3 block, void **args, size_t smem, cudaStream_t)
{
    launch(fn, grid, block, smem, args, 0, 0);
    return cudaSuccess;
}
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *c, const void *fn, void **args)
{
    int cluster = 0, pdl = 0;
    for (unsigned i = 0; i < c->numAttrs; i++) {
        const cudaLaunchAttribute &a = c->attrs[i];
        if (a.id == cudaLaunchAttributeClusterDimension) cluster = (int)a.val.clusterDim.x;
        if (a.id == cudaLaunchAttributeProgrammaticStreamSerialization) pdl = a.val.programmaticStreamSerializationAllowed;
        if (a.id == cudaLaunchAttributeClusterSchedulingPolicyPreference &&
            a.val.clusterSchedulingPolicyPreference != cudaClusterSchedulingPolicyLoadBalancing)
            record += " [policy not load-balancing]";
    }
    launch(fn, c->gridDim, c->blockDim, c->dynamicSmemBytes, args, cluster, pdl);
    return cudaSuccess;
}

/* ---- kernels' attributes and occupancy ---- */

cudaError_t cudaFuncSetAttribute(const void *fn, cudaFuncAttribute attr, int value)
{
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaErrorInvalidValue;
    raised.insert(std::string(device().name) + " " + name_of(fn) + " " + std::to_string(value) +
                  (value > device().optin ? " refused" : ""));
    return value > device().optin ? cudaErrorInvalidValue : cudaSuccess;
}
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *a, const void *)
{
    std::memset(a, 0, sizeof *a);
    a->ptxVersion = device().ptx;
    a->binaryVersion = device().ptx;
    return cudaSuccess;
}
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *n, const void *fn, int, size_t, unsigned int)
{
    const std::string &name = name_of(fn);
    *n = name.compare(0, 3, "wg<") == 0 ? device().wg_per_sm[wg_rows_index(name)] : 1;
    return cudaSuccess;
}
cudaError_t cudaOccupancyMaxActiveClusters(int *n, const void *fn, const cudaLaunchConfig_t *c)
{
    int cluster = 1;
    for (unsigned i = 0; i < c->numAttrs; i++)
        if (c->attrs[i].id == cudaLaunchAttributeClusterDimension) cluster = (int)c->attrs[i].val.clusterDim.x;
    const std::string &name = name_of(fn);
    *n = name.compare(0, 3, "wg<") == 0 && cluster <= 8 ? device().wg_clusters[wg_rows_index(name)][cluster] : 0;
    return cudaSuccess;
}

/* ---- the driver's tensor maps: made wherever the driver would check them (16-byte base and strides) ---- */

static CUresult fake_encode_tiled(CUtensorMap *m, CUtensorMapDataType, cuuint32_t rank, void *base, const cuuint64_t *,
                                  const cuuint64_t *strides, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                                  CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill)
{
    if ((uintptr_t)base % 16 != 0) return CUDA_ERROR_INVALID_VALUE;
    for (cuuint32_t i = 0; i + 1 < rank; i++)
        if (strides[i] % 16 != 0) return CUDA_ERROR_INVALID_VALUE;
    std::memset(m, 0, sizeof *m);
    return CUDA_SUCCESS;
}
cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned int, unsigned long long,
                                             cudaDriverEntryPointQueryResult *q)
{
    const bool known = std::strcmp(symbol, "cuTensorMapEncodeTiled") == 0;
    *fn = known ? reinterpret_cast<void *>(&fake_encode_tiled) : nullptr;
    if (q) *q = known ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
    return known ? cudaSuccess : cudaErrorSymbolNotFound;
}

/* ---- devices ---- */

cudaError_t cudaGetDeviceCount(int *n)
{
    *n = QMM_TEST_DEVICE_COUNT;
    return cudaSuccess;
}
cudaError_t cudaGetDevice(int *d)
{
    *d = current_device;
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int d)
{
    if (d < 0 || d >= QMM_TEST_DEVICE_COUNT) return cudaErrorInvalidDevice;
    current_device = d;
    return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr attr, int dev)
{
    if (dev < 0 || dev >= QMM_TEST_DEVICE_COUNT) return cudaErrorInvalidDevice;
    const qmm_test_device &d = qmm_test_devices[dev];
    switch (attr) {
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = d.optin; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *v = d.smem_sm; break;
    case cudaDevAttrReservedSharedMemoryPerBlock: *v = d.reserved; break;
    case cudaDevAttrComputeCapabilityMajor: *v = d.major; break;
    case cudaDevAttrComputeCapabilityMinor: *v = d.minor; break;
    case cudaDevAttrMultiProcessorCount: *v = d.sm_count; break;
    default: std::fprintf(stderr, "mock_cudart: attribute %d not mocked\n", (int)attr); std::abort();
    }
    return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int dev)
{
    if (dev < 0 || dev >= QMM_TEST_DEVICE_COUNT) return cudaErrorInvalidDevice;
    const qmm_test_device &d = qmm_test_devices[dev];
    std::memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "mock %s", d.name);
    p->major = d.major, p->minor = d.minor, p->multiProcessorCount = d.sm_count;
    p->sharedMemPerBlockOptin = (size_t)d.optin, p->sharedMemPerMultiprocessor = (size_t)d.smem_sm;
    p->reservedSharedMemPerBlock = (size_t)d.reserved;
    p->totalGlobalMem = (size_t)80 << 30;
    return cudaSuccess;
}
cudaError_t cudaDeviceGetPCIBusId(char *bus, int len, int dev)
{
    snprintf(bus, (size_t)len, "0000:%02x:00.0", dev);
    return cudaSuccess;
}

/* ---- memory, streams and events: addresses only ---- */

cudaError_t cudaMalloc(void **p, size_t bytes)
{
    *p = reinterpret_cast<void *>(next_address);
    next_address += (bytes + 4095) / 4096 * 4096 + 4096;
    return cudaSuccess;
}
cudaError_t cudaFree(void *) { return cudaSuccess; }
cudaError_t cudaMemsetAsync(void *, int, size_t, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaMemcpyAsync(void *, const void *, size_t, cudaMemcpyKind, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int)
{
    *s = reinterpret_cast<cudaStream_t>(next_address);
    next_address += 4096;
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int) { return cudaSuccess; }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *ev, unsigned int)
{
    *ev = reinterpret_cast<cudaEvent_t>(next_address);
    next_address += 4096;
    return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
cudaError_t cudaPeekAtLastError(void) { return cudaSuccess; }
const char *cudaGetErrorString(cudaError_t) { return "mock error"; }
const char *cudaGetErrorName(cudaError_t) { return "mockError"; }

} // extern "C"
