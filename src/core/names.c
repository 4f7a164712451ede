/* Names of the public enums, both ways, for the tool, messages and JSON output. */
#include <string.h>

#include "error.h"

static const char *const qmm__dtype_names[] = {NULL, "fp32", "bf16", "fp16", "e4m3", "e2m1", "e8m0"};
static const char *const qmm__recipe_names[] = {"default", "modelopt", "floor", "rceil", "amax"};
static const char *const qmm__backend_names[] = {"auto", "reference", "cpu", "cuda"};
static const char *const qmm__path_names[] = {"auto", "reference", "gemv", "fused", "materialize"};

#define QMM__COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const char *qmm__name_of(const char *const *names, int count, int value)
{
    return (value >= 0 && value < count) ? names[value] : NULL;
}

static int qmm__value_of(const char *const *names, int count, const char *name)
{
    for (int i = 0; i < count; i++)
        if (names[i] && strcmp(names[i], name) == 0) return i;
    return -1;
}

const char *qmm_dtype_name(qmm_dtype d) { return qmm__name_of(qmm__dtype_names, QMM__COUNT(qmm__dtype_names), (int)d); }
const char *qmm_recipe_name(qmm_recipe r) { return qmm__name_of(qmm__recipe_names, QMM__COUNT(qmm__recipe_names), (int)r); }
const char *qmm_backend_name(qmm_backend b) { return qmm__name_of(qmm__backend_names, QMM__COUNT(qmm__backend_names), (int)b); }
const char *qmm_path_name(qmm_path p) { return qmm__name_of(qmm__path_names, QMM__COUNT(qmm__path_names), (int)p); }

qmm_status qmm_recipe_from_name(const char *name, qmm_recipe *out)
{
    if (!name || !out) return qmm__fail(QMM_ERR_NULL_POINTER, "qmm_recipe_from_name: NULL argument");
    int v = qmm__value_of(qmm__recipe_names, QMM__COUNT(qmm__recipe_names), name);
    if (v < 0) return qmm__fail(QMM_ERR_NOT_FOUND, "qmm_recipe_from_name: no recipe named '%s'", name);
    *out = (qmm_recipe)v;
    return QMM_OK;
}

qmm_status qmm_backend_from_name(const char *name, qmm_backend *out)
{
    if (!name || !out) return qmm__fail(QMM_ERR_NULL_POINTER, "qmm_backend_from_name: NULL argument");
    int v = strcmp(name, "ref") == 0 ? (int)QMM_BACKEND_REFERENCE
                                     : qmm__value_of(qmm__backend_names, QMM__COUNT(qmm__backend_names), name);
    if (v < 0) return qmm__fail(QMM_ERR_NOT_FOUND, "qmm_backend_from_name: no backend named '%s'", name);
    *out = (qmm_backend)v;
    return QMM_OK;
}

qmm_status qmm_path_from_name(const char *name, qmm_path *out)
{
    if (!name || !out) return qmm__fail(QMM_ERR_NULL_POINTER, "qmm_path_from_name: NULL argument");
    int v = qmm__value_of(qmm__path_names, QMM__COUNT(qmm__path_names), name);
    if (v < 0) return qmm__fail(QMM_ERR_NOT_FOUND, "qmm_path_from_name: no path named '%s'", name);
    *out = (qmm_path)v;
    return QMM_OK;
}
