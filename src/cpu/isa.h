/* Which instruction sets the CPU backend may use here: what the processor and the operating system
 * support (cpuid, xgetbv), what this build compiled, and the QMM_ISA override. */
#ifndef QMM_CPU_ISA_H
#define QMM_CPU_ISA_H

#include <stdbool.h>

#include "qmm.h"

typedef enum qmm__cpu_isa {
    QMM__ISA_GENERIC = 0, /* portable C: any processor */
    QMM__ISA_AVX2 = 1,    /* AVX2 + FMA + F16C */
    QMM__ISA_AVX512 = 2   /* AVX-512 F, BW, VL, DQ + FMA + F16C; bf16 dot products where present */
} qmm__cpu_isa;

typedef struct qmm__cpu_features {
    bool avx2;       /* AVX2, FMA, F16C, and the OS saves ymm state */
    bool avx512;     /* AVX-512 F/BW/VL/DQ on top of avx2, and the OS saves zmm and opmask state */
    bool avx512bf16; /* AVX512_BF16 on top of avx512 */
    bool avx512vbmi; /* AVX512_VBMI on top of avx512 (FP8 decoding with byte permutes) */
} qmm__cpu_features;

/* What the processor and OS support, restricted to the kernels this build contains. */
qmm__cpu_features qmm__cpu_detect(void);

/* The instruction set to run: the best supported, or the one QMM_ISA names ("ref" and "generic" are
 * the portable C kernels, "avx2", "avx512"). Errors: QMM_ERR_INVALID_ARGUMENT for a value QMM_ISA
 * does not know, QMM_ERR_UNSUPPORTED for one this processor, OS or build lacks. */
qmm_status qmm__cpu_choose_isa(const qmm__cpu_features *f, qmm__cpu_isa *out);

const char *qmm__cpu_isa_name(qmm__cpu_isa isa);

#endif
