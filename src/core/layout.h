/* Block-scale layouts (docs/design.md, "Scale layouts", with their sources): where scale (r, c) of an
 * N x ceil(K/B) scale matrix lives in each layout. Pure index math, shared by the public conversion and by
 * any backend that preshuffles. */
#ifndef QMM_CORE_LAYOUT_H
#define QMM_CORE_LAYOUT_H

#include <stddef.h>

#include "qmm.h"

/* Byte offset of scale (r, c) for a matrix with `cols` scale columns (ceil(K/B), before padding).
 * The layout must be a known one; r and c are within the unpadded matrix. */
static inline size_t qmm__scale_offset(qmm_scale_layout layout, size_t cols, size_t r, size_t c)
{
    switch (layout) {
    case QMM_SCALE_LAYOUT_NV_BLOCKED: {
        /* 128 x 4 tiles of 512 bytes, tiles row-major; inside a tile 32 rows of 16 bytes, each holding
         * the 4 scales of rows r, r+32, r+64, r+96 (cuBLASLt VEC16/VEC32 scale layout). */
        const size_t tiles_per_row = (cols + 3) / 4;
        return ((r / 128) * tiles_per_row + c / 4) * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + (c % 4);
    }
    case QMM_SCALE_LAYOUT_AMD_MFMA: {
        /* 32 x 8 tiles of 256 bytes; a 4-byte cell holds (k_pack, mn_pack) pairs so one lane loads its
         * four scales with one 32-bit read. */
        const size_t ks_padded = (cols + 7) / 8 * 8;
        return (r / 32) * (32 * ks_padded) + (c / 8) * 256 + (c % 4) * 64 + (r % 16) * 4 + ((c / 4) % 2) * 2 +
               (r / 16) % 2;
    }
    default: return r * cols + c;
    }
}

#endif
