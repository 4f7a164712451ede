/* Epilogue semantics (qmm.h, qmm_epilogue): the activations in fp64 for the reference and in fp32 for
 * the CPU kernels. The CUDA backend states the same formulas with device intrinsics. */
#ifndef QMM_CORE_EPILOGUE_H
#define QMM_CORE_EPILOGUE_H

#include <math.h>

#include "qmm.h"

/* sqrt(2 / pi), from its definition; the constant 0.044715 is the tanh approximation's (Hendrycks and
 * Gimpel 2016, as cuBLASLt and PyTorch's gelu(approximate="tanh") use it). */
#define QMM__SQRT_2_OVER_PI 0.79788456080286535588
#define QMM__SQRT_HALF 0.70710678118654752440

static inline double qmm__activation_f64(double x, qmm_activation act)
{
    switch (act) {
    case QMM_ACT_RELU: return x > 0.0 ? x : 0.0;
    case QMM_ACT_SILU: return x / (1.0 + exp(-x));
    case QMM_ACT_GELU: return 0.5 * x * (1.0 + tanh(QMM__SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)));
    case QMM_ACT_GELU_ERF: return 0.5 * x * (1.0 + erf(x * QMM__SQRT_HALF));
    default: return x;
    }
}

static inline float qmm__activation_f32(float x, qmm_activation act)
{
    switch (act) {
    case QMM_ACT_RELU: return x > 0.0f ? x : 0.0f;
    case QMM_ACT_SILU: return x / (1.0f + expf(-x));
    case QMM_ACT_GELU:
        return 0.5f * x * (1.0f + tanhf((float)QMM__SQRT_2_OVER_PI * (x + 0.044715f * x * x * x)));
    case QMM_ACT_GELU_ERF: return 0.5f * x * (1.0f + erff(x * (float)QMM__SQRT_HALF));
    default: return x;
    }
}

#endif
