/* Device helpers shared by the CUDA kernels: the bf16 tensor-core product, exact bf16 multiplies,
 * activation loads, and the epilogue store (the formulas of src/core/epilogue.h, in fp32). */
#ifndef QMM_CUDA_DEVICE_COMMON_CUH
#define QMM_CUDA_DEVICE_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "cuda_internal.h"

/* D += A (16x16 bf16, row) * B (16x8 bf16, col), fp32 accumulators (PTX mma.m16n8k16). */
static __device__ __forceinline__ void qmm__mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* D += A (16x16 fp16, row) * B (16x8 fp16, col), fp32 accumulators. */
static __device__ __forceinline__ void qmm__mma_f16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* a * b on bf16 pairs, rounded to nearest (exact for the products the decoders form). The addend -0
 * keeps the sign of zero products. */
static __device__ __forceinline__ uint32_t qmm__bf16x2_mul(uint32_t a, uint32_t b)
{
    uint32_t d;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(0x80008000u));
    return d;
}

/* a * b on fp16 pairs, the same for the fp16 decode of NVFP4 (exact, subnormals kept: PTX's f16
 * arithmetic has no flush to zero). */
static __device__ __forceinline__ uint32_t qmm__f16x2_mul(uint32_t a, uint32_t b)
{
    uint32_t d;
    asm("fma.rn.f16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(0x80008000u));
    return d;
}

/* fp16 pair -> bf16 hi + bf16 lo with hi + lo equal to the pair exactly (11 significant bits split into
 * 8 and at most 4), so fp16 activations feed bf16 tensor cores without rounding. */
static __device__ __forceinline__ void qmm__fp16x2_split(uint32_t x, uint32_t &hi, uint32_t &lo)
{
    __half2 h = *reinterpret_cast<__half2 *>(&x);
    float2 f = __half22float2(h);
    __nv_bfloat162 bh = __floats2bfloat162_rn(f.x, f.y);
    float2 fh = __bfloat1622float2(bh);
    __nv_bfloat162 bl = __floats2bfloat162_rn(f.x - fh.x, f.y - fh.y);
    hi = *reinterpret_cast<uint32_t *>(&bh);
    lo = *reinterpret_cast<uint32_t *>(&bl);
}

static __device__ __forceinline__ float qmm__load_c(int type, const void *c, size_t i)
{
    if (type == QMM_DTYPE_BF16) return __bfloat162float(reinterpret_cast<const __nv_bfloat16 *>(c)[i]);
    if (type == QMM_DTYPE_FP16) return __half2float(reinterpret_cast<const __half *>(c)[i]);
    return reinterpret_cast<const float *>(c)[i];
}

static __device__ __forceinline__ void qmm__store_c(int type, void *c, size_t i, float v)
{
    if (type == QMM_DTYPE_BF16) reinterpret_cast<__nv_bfloat16 *>(c)[i] = __float2bfloat16_rn(v);
    else if (type == QMM_DTYPE_FP16) reinterpret_cast<__half *>(c)[i] = __float2half_rn(v);
    else reinterpret_cast<float *>(c)[i] = v;
}

/* The activations in the forms of src/core/epilogue.h (no cancellation for negative x). */
static __device__ __forceinline__ float qmm__activation(float x, int act)
{
    switch (act) {
    case QMM_ACT_RELU: return x > 0.0f ? x : 0.0f;
    case QMM_ACT_SILU: return x / (1.0f + expf(-x));
    case QMM_ACT_GELU: return x / (1.0f + expf(-2.0f * 0.7978845608028654f * (x + 0.044715f * x * x * x)));
    case QMM_ACT_GELU_ERF: return 0.5f * x * erfcf(-x * 0.7071067811865476f);
    default: return x;
    }
}

/* The column factor of the epilogue: alpha_fix * channel[n] * column[n] (read once per column where a
 * kernel stores many rows of one column). */
static __device__ __forceinline__ float qmm__epilogue_factor(const qmm__cuda_epilogue &e, size_t n)
{
    float f = e.alpha_fix;
    if (e.channel_scales) f *= e.channel_scales[n];
    if (e.column_scale) f *= e.column_scale[n];
    return f;
}

/* C[i] = act(acc * f + bias + beta * C_in[i]), f and bias those of C[i]'s column (bias unread when
 * e.bias is NULL, so -0 stays -0). The roundings are spelled out (a product, a sum, then beta * C_in
 * added in one fused step), so every kernel that inlines this gives the same bits whatever the compiler
 * would contract: left to itself, nvcc fused acc * f + bias into one FMA in the epilogue kernel of
 * kernels_dequant.cu but not in the tensor-core kernels. */
static __device__ __forceinline__ void qmm__epilogue_finish(const qmm__cuda_epilogue &e, size_t i, float acc, float f,
                                                            float bias)
{
    float v = __fmul_rn(acc, f);
    if (e.bias) v = __fadd_rn(v, bias);
    if (e.beta != 0.0f) v = __fmaf_rn(e.beta, qmm__load_c(e.c_type, e.c, i), v);
    /* none by a uniform branch: qmm__activation's switch is an indirect branch (BRX) per value. The GEMV
     * and PIPE ends (finish_unit) take 0.1-0.4 us less with it (N = 14336, K = 512: M = 16 9.2 against
     * 9.6 us, measured on an H200). The WG end does not come here. */
    qmm__store_c(e.c_type, e.c, i, e.activation == QMM_ACT_NONE ? v : qmm__activation(v, e.activation));
}

/* C[m][n] = act(acc * alpha_fix * channel[n] * column[n] + bias[n] + beta * C_in[m][n]). */
static __device__ __forceinline__ void qmm__epilogue_store(const qmm__cuda_epilogue &e, size_t m, size_t n, float acc)
{
    qmm__epilogue_finish(e, m * e.ldc + n, acc, qmm__epilogue_factor(e, n), e.bias ? e.bias[n] : 0.0f);
}

#endif
