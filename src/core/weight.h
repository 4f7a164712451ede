/* Internal helpers for weight descriptors. */
#ifndef QMM_CORE_WEIGHT_H
#define QMM_CORE_WEIGHT_H

#include "qmm.h"

/* qmm_weight_validate() with the caller's name in the message. */
qmm_status qmm__weight_validate(const char *fn, const qmm_weight *w);

/* qmm_weight_size_query() with the caller's name in the message. */
qmm_status qmm__weight_size(const char *fn, qmm_format format, qmm_scale_layout layout, size_t n, size_t k,
                            qmm_weight_size *out);

#endif
