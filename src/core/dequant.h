/* Dequantization of one row, shared by qmm_dequantize and the reference backend. */
#ifndef QMM_CORE_DEQUANT_H
#define QMM_CORE_DEQUANT_H

#include "qmm.h"

/* Writes the k values element * block_scale of row r of a validated, canonical weight into out.
 * Exact: every such product is a bf16 (and so an fp32) value. */
void qmm__dequant_row_unscaled(const qmm_weight *w, size_t r, float *out);

/* The factor outside the blocks for row r: tensor_scale, channel_scales[r], or 1 (MXFP4). */
float qmm__row_scale(const qmm_weight *w, size_t r);

#endif
