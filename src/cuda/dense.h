/* cuBLASLt for the dense bf16/fp16 GEMMs of the materialize path (dense.c). */
#ifndef QMM_CUDA_DENSE_H
#define QMM_CUDA_DENSE_H

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "qmm.h"

/* D (rows x cols, column-major, ld ldd) = act(alpha * W A^T + beta * D + bias) where W is rows x k
 * row-major (ld k) and A is cols x k row-major (ld lda): in qmm's terms C[m][n] for n in the rows. */
typedef struct qmm__lt_call {
    size_t rows, cols, k;
    const void *w;
    qmm_dtype w_type; /* BF16 or FP16; A has the same type */
    const void *a;
    size_t lda;
    void *d;
    qmm_dtype d_type;
    size_t ldd;
    float alpha, beta;
    const float *bias;      /* device, one per row, or NULL */
    qmm_activation act;     /* NONE or RELU */
    int align_a, align_d;   /* byte alignment (2..16) of A and D pointers and strides */
} qmm__lt_call;

#define QMM__LT_CACHE 24

typedef struct qmm__lt_entry {
    int valid;
    int unsupported; /* cuBLASLt offered no algorithm for this key: remembered, so it is asked once */
    size_t rows, cols, k, lda, ldd;
    int w_type, d_type, epi, align_a, align_d;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
} qmm__lt_entry;

typedef struct qmm__lt {
    cublasLtHandle_t handle;
    qmm__lt_entry cache[QMM__LT_CACHE];
    int next;
} qmm__lt;

qmm_status qmm__lt_create(qmm__lt *lt);
void qmm__lt_destroy(qmm__lt *lt);
/* Whether cuBLASLt has an algorithm for the call's shape, types, alignments and epilogue (its pointers and
 * alpha, beta are not read, only whether bias is set): QMM_OK, QMM_ERR_UNSUPPORTED (the caller falls back
 * to an fp32 result and its own epilogue) or QMM_ERR_CUBLAS. The answer, either way, is cached, so callers
 * ask before doing work that only the call would use. */
qmm_status qmm__lt_check(qmm__lt *lt, const qmm__lt_call *c, size_t ws_bytes);
/* Runs the call: qmm__lt_check's statuses, then QMM_ERR_CUBLAS where the GEMM itself fails. */
qmm_status qmm__lt_matmul(qmm__lt *lt, const qmm__lt_call *c, void *ws, size_t ws_bytes, cudaStream_t stream);

#endif
