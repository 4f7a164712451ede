/* Epilogue semantics (qmm.h, qmm_epilogue): the activations in fp64 for the reference and in fp32 for
 * the CPU kernels. The CUDA backend states the same formulas with device intrinsics. */
#ifndef QMM_CORE_EPILOGUE_H
#define QMM_CORE_EPILOGUE_H

#include <math.h>

#include "qmm.h"

/* sqrt(2 / pi), from its definition; the constant 0.044715 is the tanh approximation's (Hendrycks and
 * Gimpel 2016, as cuBLASLt and PyTorch's gelu(approximate="tanh") use it).
 * Both GELUs are evaluated in forms that do not cancel for negative x: 0.5 (1 + tanh(y)) is written
 * sigmoid(2y) = 1 / (1 + exp(-2y)) and 0.5 (1 + erf(z)) is written 0.5 erfc(-z). The textbook forms
 * lose every significant bit below x = -6 or so (1 + tanh(y) rounds to 0 or a few ulps of 1). */
#define QMM__SQRT_2_OVER_PI 0.79788456080286535588
#define QMM__SQRT_HALF 0.70710678118654752440

static inline double qmm__activation_f64(double x, qmm_activation act)
{
    switch (act) {
    case QMM_ACT_RELU: return x > 0.0 ? x : 0.0;
    case QMM_ACT_SILU: return x / (1.0 + exp(-x));
    case QMM_ACT_GELU: return x / (1.0 + exp(-2.0 * QMM__SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)));
    case QMM_ACT_GELU_ERF: return 0.5 * x * erfc(-x * QMM__SQRT_HALF);
    default: return x;
    }
}

static inline float qmm__activation_f32(float x, qmm_activation act)
{
    switch (act) {
    case QMM_ACT_RELU: return x > 0.0f ? x : 0.0f;
    case QMM_ACT_SILU: return x / (1.0f + expf(-x));
    case QMM_ACT_GELU: return x / (1.0f + expf(-2.0f * (float)QMM__SQRT_2_OVER_PI * (x + 0.044715f * x * x * x)));
    case QMM_ACT_GELU_ERF: return 0.5f * x * erfcf(-x * (float)QMM__SQRT_HALF);
    default: return x;
    }
}

#endif
