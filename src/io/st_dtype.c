/* The element types of the safetensors format: names and widths, declared once. */
#include <string.h>

#include "../core/error.h"
#include "safetensors.h"

typedef struct qmm__st_dtype_info {
    const char *name;
    int bits;
} qmm__st_dtype_info;

static const qmm__st_dtype_info qmm__st_dtypes[] = {
    [QMM_ST_BOOL] = {"BOOL", 8},         [QMM_ST_U8] = {"U8", 8},
    [QMM_ST_I8] = {"I8", 8},             [QMM_ST_U16] = {"U16", 16},
    [QMM_ST_I16] = {"I16", 16},          [QMM_ST_U32] = {"U32", 32},
    [QMM_ST_I32] = {"I32", 32},          [QMM_ST_U64] = {"U64", 64},
    [QMM_ST_I64] = {"I64", 64},          [QMM_ST_F16] = {"F16", 16},
    [QMM_ST_BF16] = {"BF16", 16},        [QMM_ST_F32] = {"F32", 32},
    [QMM_ST_F64] = {"F64", 64},          [QMM_ST_C64] = {"C64", 64},
    [QMM_ST_F8_E5M2] = {"F8_E5M2", 8},   [QMM_ST_F8_E4M3] = {"F8_E4M3", 8},
    [QMM_ST_F8_E8M0] = {"F8_E8M0", 8},   [QMM_ST_F8_E4M3FNUZ] = {"F8_E4M3FNUZ", 8},
    [QMM_ST_F8_E5M2FNUZ] = {"F8_E5M2FNUZ", 8}, [QMM_ST_F4] = {"F4", 4},
    [QMM_ST_F6_E2M3] = {"F6_E2M3", 6},   [QMM_ST_F6_E3M2] = {"F6_E3M2", 6},
};

#define QMM__ST_DTYPE_LAST QMM_ST_F6_E3M2

int qmm__st_dtype_bits(qmm_st_dtype dtype)
{
    if ((int)dtype < QMM_ST_BOOL || (int)dtype > QMM__ST_DTYPE_LAST) return 0;
    return qmm__st_dtypes[dtype].bits;
}

int qmm_st_dtype_bits(qmm_st_dtype dtype) { return qmm__st_dtype_bits(dtype); }

const char *qmm_st_dtype_name(qmm_st_dtype dtype)
{
    if ((int)dtype < QMM_ST_BOOL || (int)dtype > QMM__ST_DTYPE_LAST) return NULL;
    return qmm__st_dtypes[dtype].name;
}

qmm_status qmm_st_dtype_from_name(const char *name, qmm_st_dtype *out)
{
    if (!name || !out) return qmm__fail(QMM_ERR_NULL_POINTER, "qmm_st_dtype_from_name: NULL argument");
    for (int d = QMM_ST_BOOL; d <= QMM__ST_DTYPE_LAST; d++) {
        if (strcmp(name, qmm__st_dtypes[d].name) == 0) {
            *out = (qmm_st_dtype)d;
            return QMM_OK;
        }
    }
    return qmm__fail(QMM_ERR_NOT_FOUND, "qmm_st_dtype_from_name: no safetensors dtype named '%.64s'", name);
}
