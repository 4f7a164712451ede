/* The GPU's clock, power and clock-lowering reasons now, read through NVML (the NVIDIA driver's
 * management library), for qmm_context_machine_state. The library is opened with dlopen when first
 * asked, so the backend neither links it nor needs its header: a machine without the driver's library
 * (CI, containers without it) reads "unknown" and nothing fails. The few entry points and constants
 * below are NVML's documented C API (nvml.h: nvmlInit_v2, nvmlDeviceGetHandleByPciBusId_v2,
 * nvmlDeviceGetClockInfo with NVML_CLOCK_SM = 1, nvmlDeviceGetPowerUsage in milliwatts,
 * nvmlDeviceGetCurrentClocksThrottleReasons, NVML_SUCCESS = 0). */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

typedef int (*qmm__nvml_init_fn)(void);
typedef int (*qmm__nvml_shutdown_fn)(void);
typedef int (*qmm__nvml_by_pci_fn)(const char *bus_id, void **device);
typedef int (*qmm__nvml_clock_fn)(void *device, int type, unsigned *mhz);
typedef int (*qmm__nvml_power_fn)(void *device, unsigned *milliwatts);
typedef int (*qmm__nvml_reasons_fn)(void *device, unsigned long long *reasons);

struct qmm__nvml {
    void *lib;
    void *device;
    qmm__nvml_shutdown_fn shutdown;
    qmm__nvml_clock_fn clock;
    qmm__nvml_power_fn power;
    qmm__nvml_reasons_fn reasons;
};

#define QMM__NVML_CLOCK_SM 1

qmm__nvml *qmm__nvml_open(const char *pci_bus_id)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return NULL;
    qmm__nvml_init_fn init;
    qmm__nvml_by_pci_fn by_pci;
    qmm__nvml n = {lib, NULL, NULL, NULL, NULL, NULL};
    /* dlsym's object pointers converted to function pointers, which POSIX requires to work */
    init = (qmm__nvml_init_fn)dlsym(lib, "nvmlInit_v2");
    by_pci = (qmm__nvml_by_pci_fn)dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    n.shutdown = (qmm__nvml_shutdown_fn)dlsym(lib, "nvmlShutdown");
    n.clock = (qmm__nvml_clock_fn)dlsym(lib, "nvmlDeviceGetClockInfo");
    n.power = (qmm__nvml_power_fn)dlsym(lib, "nvmlDeviceGetPowerUsage");
    n.reasons = (qmm__nvml_reasons_fn)dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
    if (!init || !by_pci || !n.shutdown || !n.clock || init() != 0) {
        dlclose(lib);
        return NULL;
    }
    qmm__nvml *out = NULL;
    if (by_pci(pci_bus_id, &n.device) == 0 && (out = malloc(sizeof *out)) != NULL) {
        *out = n;
        return out;
    }
    n.shutdown();
    dlclose(lib);
    return NULL;
}

void qmm__nvml_close(qmm__nvml *n)
{
    if (!n) return;
    n->shutdown();
    dlclose(n->lib);
    free(n);
}

bool qmm__nvml_read(const qmm__nvml *n, qmm_machine_state *out)
{
    unsigned mhz = 0, mw = 0;
    unsigned long long reasons = 0;
    if (!n || n->clock(n->device, QMM__NVML_CLOCK_SM, &mhz) != 0) return false;
    memset(out, 0, sizeof *out);
    out->known = 1;
    out->sm_mhz = (double)mhz;
    if (n->power && n->power(n->device, &mw) == 0) out->power_w = mw * 1e-3;
    if (n->reasons && n->reasons(n->device, &reasons) == 0) out->clock_reasons = reasons;
    return true;
}
