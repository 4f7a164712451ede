/* cuBLASLt calls of the CUDA backend. Descriptors and the heuristic's algorithm are cached per shape,
 * types and epilogue, so a repeated call costs a few attribute writes on the host. */
#include <string.h>

#include "../core/error.h"
#include "dense.h"

static cudaDataType_t qmm__lt_type(qmm_dtype t)
{
    return t == QMM_DTYPE_BF16 ? CUDA_R_16BF : t == QMM_DTYPE_FP16 ? CUDA_R_16F : CUDA_R_32F;
}

qmm_status qmm__lt_create(qmm__lt *lt)
{
    memset(lt, 0, sizeof *lt);
    cublasStatus_t st = cublasLtCreate(&lt->handle);
    if (st != CUBLAS_STATUS_SUCCESS)
        return qmm__fail(QMM_ERR_CUBLAS, "cublasLtCreate: %s", cublasLtGetStatusString(st));
    return QMM_OK;
}

static void qmm__lt_entry_free(qmm__lt_entry *e)
{
    e->unsupported = 0;
    if (!e->valid) return;
    cublasLtMatmulDescDestroy(e->op);
    cublasLtMatrixLayoutDestroy(e->la);
    cublasLtMatrixLayoutDestroy(e->lb);
    cublasLtMatrixLayoutDestroy(e->lc);
    e->valid = 0;
}

void qmm__lt_destroy(qmm__lt *lt)
{
    for (int i = 0; i < QMM__LT_CACHE; i++) qmm__lt_entry_free(&lt->cache[i]);
    if (lt->handle) cublasLtDestroy(lt->handle);
    memset(lt, 0, sizeof *lt);
}

static int qmm__lt_epilogue(const qmm__lt_call *c)
{
    int e = c->act == QMM_ACT_RELU ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT;
    if (c->bias) e = e == CUBLASLT_EPILOGUE_DEFAULT ? CUBLASLT_EPILOGUE_BIAS : e | CUBLASLT_EPILOGUE_BIAS;
    return e;
}

#define QMM__LT_TRY(call)                                                                        \
    do {                                                                                         \
        cublasStatus_t s_ = (call);                                                              \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                       \
            qmm__lt_entry_free(e);                                                               \
            return qmm__fail(QMM_ERR_CUBLAS, "cuBLASLt: %s: %s", #call, cublasLtGetStatusString(s_)); \
        }                                                                                        \
    } while (0)

static qmm_status qmm__lt_build(qmm__lt *lt, qmm__lt_entry *e, const qmm__lt_call *c, size_t ws_bytes)
{
    memset(e, 0, sizeof *e);
    e->rows = c->rows, e->cols = c->cols, e->k = c->k, e->lda = c->lda, e->ldd = c->ldd;
    e->w_type = (int)c->w_type, e->d_type = (int)c->d_type, e->epi = qmm__lt_epilogue(c);
    e->align_a = c->align_a, e->align_d = c->align_d;
    cublasStatus_t s0 = cublasLtMatmulDescCreate(&e->op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    if (s0 != CUBLAS_STATUS_SUCCESS) return qmm__fail(QMM_ERR_CUBLAS, "cublasLtMatmulDescCreate: %s", cublasLtGetStatusString(s0));
    e->valid = 1;
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    int32_t epi = e->epi;
    cudaDataType_t bias_type = CUDA_R_32F;
    QMM__LT_TRY(cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    QMM__LT_TRY(cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    QMM__LT_TRY(cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    if (c->bias) {
        QMM__LT_TRY(cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type));
        QMM__LT_TRY(cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &c->bias, sizeof c->bias));
    }
    /* W stored row-major rows x k is column-major k x rows, used transposed; A likewise k x cols */
    QMM__LT_TRY(cublasLtMatrixLayoutCreate(&e->la, qmm__lt_type(c->w_type), c->k, c->rows, (int64_t)c->k));
    QMM__LT_TRY(cublasLtMatrixLayoutCreate(&e->lb, qmm__lt_type(c->w_type), c->k, c->cols, (int64_t)c->lda));
    QMM__LT_TRY(cublasLtMatrixLayoutCreate(&e->lc, qmm__lt_type(c->d_type), c->rows, c->cols, (int64_t)c->ldd));
    cublasLtMatmulPreference_t pref;
    QMM__LT_TRY(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t wsb = ws_bytes;
    /* The heuristic assumes 16-byte aligned operands unless told otherwise; W lives in qmm's own
     * 256-byte aligned memory with rows of 2k bytes. */
    uint32_t align_w = (c->k * 2) % 16 == 0 ? 16 : (c->k * 2) % 8 == 0 ? 8 : (c->k * 2) % 4 == 0 ? 4 : 2;
    uint32_t align_a = (uint32_t)c->align_a, align_d = (uint32_t)c->align_d;
    cublasStatus_t s1 = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb);
    if (s1 == CUBLAS_STATUS_SUCCESS)
        s1 = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_w, sizeof align_w);
    if (s1 == CUBLAS_STATUS_SUCCESS)
        s1 = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_a, sizeof align_a);
    if (s1 == CUBLAS_STATUS_SUCCESS)
        s1 = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_d, sizeof align_d);
    if (s1 == CUBLAS_STATUS_SUCCESS)
        s1 = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_d, sizeof align_d);
    /* Split-K parts are summed in fp32 only: the in-place and output-type reduction schemes add them up
     * in D's type, so a bf16 or fp16 D rounds every part (measured on H200: 517 x 999 x 1003 NVFP4 with
     * a 768 KB cuBLASLt workspace, 3.7% of bf16 outputs 1-8% off where parts cancel). */
    uint32_t schemes = c->d_type == QMM_DTYPE_FP32 ? (uint32_t)CUBLASLT_REDUCTION_SCHEME_MASK
                                                   : (uint32_t)(CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE);
    if (s1 == CUBLAS_STATUS_SUCCESS)
        s1 = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes, sizeof schemes);
    cublasLtMatmulHeuristicResult_t h;
    int found = 0;
    if (s1 == CUBLAS_STATUS_SUCCESS)
        s1 = cublasLtMatmulAlgoGetHeuristic(lt->handle, e->op, e->la, e->lb, e->lc, e->lc, pref, 1, &h, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (s1 != CUBLAS_STATUS_SUCCESS || found == 0) {
        qmm__lt_entry_free(e);
        return qmm__fail(QMM_ERR_UNSUPPORTED, "cuBLASLt has no algorithm for this case (%s)",
                         s1 == CUBLAS_STATUS_SUCCESS ? "none found" : cublasLtGetStatusString(s1));
    }
    e->algo = h.algo;
    return QMM_OK;
}

/* The cache entry of the call's key, built (or found unsupported) on first use; NULL with the status set
 * where cuBLASLt has no algorithm or fails. */
static qmm__lt_entry *qmm__lt_entry_for(qmm__lt *lt, const qmm__lt_call *c, size_t ws_bytes, qmm_status *status)
{
    const int epi = qmm__lt_epilogue(c);
    qmm__lt_entry *e = NULL;
    for (int i = 0; i < QMM__LT_CACHE && !e; i++) {
        qmm__lt_entry *x = &lt->cache[i];
        if ((x->valid || x->unsupported) && x->rows == c->rows && x->cols == c->cols && x->k == c->k &&
            x->lda == c->lda && x->ldd == c->ldd && x->w_type == (int)c->w_type && x->d_type == (int)c->d_type &&
            x->epi == epi && x->align_a == c->align_a && x->align_d == c->align_d)
            e = x;
    }
    if (!e) {
        e = &lt->cache[lt->next];
        lt->next = (lt->next + 1) % QMM__LT_CACHE;
        qmm__lt_entry_free(e);
        *status = qmm__lt_build(lt, e, c, ws_bytes);
        /* qmm__lt_build wrote the key before asking the heuristic and freed only the descriptors */
        if (*status == QMM_ERR_UNSUPPORTED) e->unsupported = 1;
        if (*status != QMM_OK) return NULL;
    }
    if (e->unsupported) {
        *status = qmm__fail(QMM_ERR_UNSUPPORTED, "cuBLASLt has no algorithm for this case (cached)");
        return NULL;
    }
    *status = QMM_OK;
    return e;
}

qmm_status qmm__lt_check(qmm__lt *lt, const qmm__lt_call *c, size_t ws_bytes)
{
    qmm_status s;
    qmm__lt_entry_for(lt, c, ws_bytes, &s);
    return s;
}

qmm_status qmm__lt_matmul(qmm__lt *lt, const qmm__lt_call *c, void *ws, size_t ws_bytes, cudaStream_t stream)
{
    qmm_status s;
    qmm__lt_entry *e = qmm__lt_entry_for(lt, c, ws_bytes, &s);
    if (!e) return s;
    if (c->bias) QMM__LT_TRY(cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &c->bias, sizeof c->bias));
    const float beta = c->beta;
    cublasStatus_t st = cublasLtMatmul(lt->handle, e->op, &c->alpha, c->w, e->la, c->a, e->lb, &beta, c->d, e->lc, c->d, e->lc,
                                       &e->algo, ws, ws_bytes, stream);
    if (st != CUBLAS_STATUS_SUCCESS) return qmm__fail(QMM_ERR_CUBLAS, "cublasLtMatmul: %s", cublasLtGetStatusString(st));
    return QMM_OK;
}
