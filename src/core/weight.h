/* Internal helpers for weight descriptors. */
#ifndef QMM_CORE_WEIGHT_H
#define QMM_CORE_WEIGHT_H

#include <stdbool.h>

#include "qmm.h"

/* qmm_weight_validate() with the caller's name in the message. */
qmm_status qmm__weight_validate(const char *fn, const qmm_weight *w);

/* The checks of qmm_weight_validate(); with values false the scales are not read (they are outputs of
 * the quantizers), only the buffers' presence and sizes are checked. */
qmm_status qmm__weight_check(const char *fn, const qmm_weight *w, bool values);

/* qmm_weight_size_query() with the caller's name in the message. */
qmm_status qmm__weight_size(const char *fn, qmm_format format, qmm_scale_layout layout, size_t n, size_t k,
                            qmm_weight_size *out);

/* The experts of w (1 for one weight; experts 0 reads as 1). */
size_t qmm__weight_experts(const qmm_weight *w);

/* Expert e of the validated stack w as a one-expert descriptor over the same buffers (no prepared copy);
 * for one weight, *w itself without its prepared copy. */
void qmm__weight_expert(const qmm_weight *w, size_t e, qmm_weight *out);

/* The bytes spanned by `rows` rows of `cols` elements of `elem` bytes at a stride of `ld` elements,
 * starting at p, into *bytes. Errors: QMM_ERR_SIZE_OVERFLOW (the product overflows size_t),
 * QMM_ERR_INVALID_ARGUMENT (a span no buffer can hold: past PTRDIFF_MAX bytes, or past the end of the
 * address space from p). `what` names the buffer in the message. */
qmm_status qmm__matrix_span(const char *fn, const char *what, const void *p, size_t rows, size_t cols, size_t ld,
                            size_t elem, size_t *bytes);

#endif
