/* Instruction-set detection. cpuid says what the processor implements; xgetbv says whether the OS
 * saves the wider registers on a context switch (without that, AVX-512 instructions fault even on a
 * processor that has them). Only this file knows the cpuid bit numbers. */
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "isa.h"

#if defined(QMM_CPU_X86) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>

static unsigned long long qmm__xgetbv0(void)
{
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

qmm__cpu_features qmm__cpu_detect(void)
{
    qmm__cpu_features f;
    memset(&f, 0, sizeof f);
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    const bool fma = (c >> 12) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, f16c = (c >> 29) & 1;
    if (!osxsave || !avx) return f;
    const unsigned long long xcr0 = qmm__xgetbv0();
    const bool os_ymm = (xcr0 & 0x6) == 0x6;   /* SSE and AVX state */
    const bool os_zmm = (xcr0 & 0xe6) == 0xe6; /* plus opmask, ZMM_Hi256, Hi16_ZMM */
    if (__get_cpuid_max(0, NULL) < 7) return f;
    __cpuid_count(7, 0, a, b, c, d);
    const bool avx2 = (b >> 5) & 1, avx512f = (b >> 16) & 1, avx512dq = (b >> 17) & 1;
    const bool avx512bw = (b >> 30) & 1, avx512vl = (b >> 31) & 1, vbmi = (c >> 1) & 1;
    const unsigned max_sub = a;
    bool bf16 = false;
    if (max_sub >= 1) {
        __cpuid_count(7, 1, a, b, c, d);
        bf16 = (a >> 5) & 1;
    }
#ifdef QMM_CPU_AVX2
    f.avx2 = avx2 && fma && f16c && os_ymm;
#endif
#ifdef QMM_CPU_AVX512
    f.avx512 = f.avx2 && avx512f && avx512dq && avx512bw && avx512vl && os_zmm;
#endif
#ifdef QMM_CPU_AVX512VBMI
    f.avx512vbmi = f.avx512 && vbmi;
#else
    (void)vbmi;
#endif
#ifdef QMM_CPU_AVX512BF16
    f.avx512bf16 = f.avx512 && bf16;
#else
    (void)bf16;
#endif
    return f;
}
#else
qmm__cpu_features qmm__cpu_detect(void)
{
    qmm__cpu_features f;
    memset(&f, 0, sizeof f);
    return f;
}
#endif

const char *qmm__cpu_isa_name(qmm__cpu_isa isa)
{
    switch (isa) {
    case QMM__ISA_AVX2: return "avx2";
    case QMM__ISA_AVX512: return "avx512";
    default: return "generic";
    }
}

qmm_status qmm__cpu_choose_isa(const qmm__cpu_features *f, qmm__cpu_isa *out)
{
    const char *env = getenv("QMM_ISA");
    if (!env || !*env) {
        *out = f->avx512 ? QMM__ISA_AVX512 : f->avx2 ? QMM__ISA_AVX2 : QMM__ISA_GENERIC;
        return QMM_OK;
    }
    if (strcmp(env, "ref") == 0 || strcmp(env, "generic") == 0) {
        *out = QMM__ISA_GENERIC;
        return QMM_OK;
    }
    if (strcmp(env, "avx2") == 0 || strcmp(env, "avx512") == 0) {
        const bool want512 = env[3] == '5';
        if (want512 ? !f->avx512 : !f->avx2)
            return qmm__fail(QMM_ERR_UNSUPPORTED, "qmm_context_create: QMM_ISA=%s, but this processor, its operating "
                             "system or this build of qmm lacks it", env);
        *out = want512 ? QMM__ISA_AVX512 : QMM__ISA_AVX2;
        return QMM_OK;
    }
    return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "qmm_context_create: QMM_ISA=%.40s is not one of ref, generic, avx2, avx512",
                     env);
}
