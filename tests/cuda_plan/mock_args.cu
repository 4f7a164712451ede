/* The launch recorder's reading of a tensor-core kernel's arguments (mock_cudart.cc): the division of K
 * in its mma_params and, for the WG kernel, its tensor maps and where its laid-out A lies in the
 * workspace. Compiled by nvcc for the kernels' own structs; host code only. */
#include <cstdio>
#include <string>

#include "../../src/cuda/kernels_mma_wg.cuh"

using qmm_mma::mma_params;
using qmm_mma::wg_maps;

/* " mt<mtiles> sp<splits> cps<chunks per split>[ pr1][ hf<half>][ wp<whole part>]", and for the WG kernel
 * " map<weights><A>[ laid<offset of the laid-out A past the partials>]"; for wg_stage_a " laid<offset>" */
extern "C" void qmm_mock_division(const char *name, void **args, char *buf, size_t cap)
{
    const std::string n = name;
    const mma_params &p = *static_cast<const mma_params *>(args[0]);
    if (n.compare(0, 8, "stage_a<") == 0) {
        const uint4 *dst = *static_cast<uint4 *const *>(args[1]);
        snprintf(buf, cap, " laid%lld", (long long)((const char *)dst - (const char *)p.partials));
        return;
    }
    std::string s = " mt" + std::to_string(p.mtiles) + " sp" + std::to_string(p.splits) + " cps" + std::to_string(p.cps);
    if (p.pairs) s += " pr1";
    if (p.half) s += " hf" + std::to_string(p.half);
    if (p.whole_part) s += " wp" + std::to_string(p.whole_part);
    if (n.compare(0, 3, "wg<") == 0) {
        const uint8_t *laid = *static_cast<const uint8_t *const *>(args[1]);
        const wg_maps &m = *static_cast<const wg_maps *>(args[2]);
        s += " map" + std::to_string(m.on) + std::to_string(m.a_on);
        if (laid) s += " laid" + std::to_string((long long)((const char *)laid - (const char *)p.partials));
    }
    snprintf(buf, cap, "%s", s.c_str());
}
