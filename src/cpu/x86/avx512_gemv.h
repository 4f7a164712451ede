/* The AVX-512 GEMV, written once for every kind and both kinds of A and instantiated by
 * gemv_avx512.c (fp32 A, FMA) and gemv_avx512bf16.c (bf16 A, bf16 dot products).
 *
 * One pass over a tile of 16 rows: each 64-byte load is decoded once into bf16-pair vectors (lane =
 * row) and used for up to 8 rows of A, whose pairs are broadcast. Block-scaled formats sum a block
 * into t with the unscaled elements and apply the 16 rows' scales once per block: acc += t * s.
 * K is walked in groups of 64; the last, partial group reads A from a zero-padded copy. */
#ifndef QMM_CPU_X86_AVX512_GEMV_H
#define QMM_CPU_X86_AVX512_GEMV_H

#include "avx512_common.h"

#define QMM__GEMV_ROWS 8 /* rows of A per pass over a tile */

/* One group: k in [k0, k0 + 64) of the rows arow[0 .. MG). acc[i][0..1]: two partial sums per row. */
QMM__INLINE void qmm__gemv_group(const int kind, const int dot, const int MG, const uint8_t *td, const uint8_t *ts,
                                 const void *const *arow, size_t k0, __m512 acc[][2])
{
    if (kind == QMM__KIND_NVFP4 || kind == QMM__KIND_MXFP4) {
        const __m512i lut = qmm__e2m1_lut();
        const int blocks = kind == QMM__KIND_NVFP4 ? 4 : 2, chunks = 8 / blocks;
        __m512 s[4];
        if (kind == QMM__KIND_NVFP4) {
            qmm__nvfp4_scales2(ts, &s[0], &s[1]);
            qmm__nvfp4_scales2(ts + 32, &s[2], &s[3]);
        } else {
            s[0] = qmm__mxfp4_scales(ts);
            s[1] = qmm__mxfp4_scales(ts + 16);
        }
        for (int b = 0; b < blocks; b++) {
            /* two partial sums per row and block (even and odd k-pairs) halve the dependency chain
             * (M = 1 would wait on it); the same for every MG, or a row's sums would depend on M */
            const int tsplit = 2, asplit = 1;
            __m512 t[QMM__GEMV_ROWS][2];
            for (int i = 0; i < MG; i++) t[i][0] = t[i][1] = _mm512_setzero_ps();
            for (int c = 0; c < chunks; c++) {
                const __m512i chunk = _mm512_loadu_si512(td + 64 * (chunks * b + c));
                for (int j = 0; j < 4; j++) {
                    const __m512i v = qmm__e2m1_pair(chunk, j, lut);
                    const size_t kk = k0 + (size_t)(8 * (chunks * b + c) + 2 * j);
                    for (int i = 0; i < MG; i++) t[i][j % tsplit] = qmm__madd_pair_bcast(dot, t[i][j % tsplit], v, arow[i], kk);
                }
            }
            for (int i = 0; i < MG; i++)
                acc[i][b % asplit] = _mm512_fmadd_ps(tsplit == 2 ? _mm512_add_ps(t[i][0], t[i][1]) : t[i][0], s[b], acc[i][b % asplit]);
        }
    } else {
        for (int p = 0; p < 32; p += 2) {
            __m512i v0, v1;
            if (kind == QMM__KIND_FP8) qmm__e4m3_chunk(td + 32 * p, &v0, &v1);
            else v0 = _mm512_loadu_si512(td + 64 * p), v1 = _mm512_loadu_si512(td + 64 * p + 64);
            for (int i = 0; i < MG; i++) {
                acc[i][0] = qmm__madd_pair(dot, acc[i][0], v0, arow[i], k0 + (size_t)(2 * p));
                acc[i][1] = qmm__madd_pair(dot, acc[i][1], v1, arow[i], k0 + (size_t)(2 * p + 2));
            }
        }
    }
}

/* Tile t for rows [m0, m0 + MG) of A. */
QMM__INLINE void qmm__gemv_rows(const int kind, const int dot, const int MG, const qmm__cpu_gemv_args *x, size_t t, size_t m0)
{
    const qmm__cpu_weight *w = x->w;
    const size_t esz = dot ? 2 : 4, k = w->k, full = k / QMM__KGROUP, groups = w->kp / QMM__KGROUP;
    const uint8_t *td = w->data + t * w->tile_bytes;
    const uint8_t *ts = QMM__GROUP_SCALES(kind) ? w->scales + t * w->tile_scale_bytes : NULL;
    const void *arow[QMM__GEMV_ROWS];
    __m512 acc[QMM__GEMV_ROWS][2];
    for (int i = 0; i < MG; i++) {
        arow[i] = (const char *)x->a + (m0 + (size_t)i) * x->lda * esz;
        acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    }
    for (size_t g = 0; g < full; g++) {
        /* Software prefetch 4 KB ahead in the tile (and its scales). The loop body of a group is ~130
         * instructions for 512 bytes, so the out-of-order window alone keeps only ~1.5 KB of loads in
         * flight per core; measured from memory with 2 threads: NVFP4 M = 1 +18%, FP8 +9%, MXFP4 and
         * bf16 unchanged (docs/cpu-notes.md). Past the tile's end it touches the next tile. */
        for (size_t l = 0; l < QMM__GROUP_DATA(kind); l += 64)
            _mm_prefetch((const char *)td + g * QMM__GROUP_DATA(kind) + 4096 + l, _MM_HINT_T0);
        if (ts) _mm_prefetch((const char *)ts + g * QMM__GROUP_SCALES(kind) + 512, _MM_HINT_T0);
        qmm__gemv_group(kind, dot, MG, td + g * QMM__GROUP_DATA(kind), ts ? ts + g * QMM__GROUP_SCALES(kind) : NULL, arow,
                        g * QMM__KGROUP, acc);
    }
    if (full < groups) { /* the last, partial group: A from a zero-padded copy */
        _Alignas(64) unsigned char buf[QMM__GEMV_ROWS][QMM__KGROUP * 4];
        const void *brow[QMM__GEMV_ROWS];
        const size_t rest = (k - full * QMM__KGROUP) * esz;
        for (int i = 0; i < MG; i++) {
            memset(buf[i], 0, sizeof buf[i]);
            memcpy(buf[i], (const char *)arow[i] + full * QMM__KGROUP * esz, rest);
            brow[i] = buf[i];
        }
        qmm__gemv_group(kind, dot, MG, td + full * QMM__GROUP_DATA(kind),
                        ts ? ts + full * QMM__GROUP_SCALES(kind) : NULL, brow, 0, acc);
    }
    for (int i = 0; i < MG; i++)
        qmm__store16(x->epi, m0 + (size_t)i, t * QMM__TILE_ROWS, _mm512_add_ps(acc[i][0], acc[i][1]));
}

QMM__INLINE void qmm__gemv_tiles(const int kind, const int dot, const qmm__cpu_gemv_args *x, size_t tile0, size_t tile1)
{
    for (size_t t = tile0; t < tile1; t++) {
        for (size_t m0 = 0; m0 < x->m; m0 += QMM__GEMV_ROWS) {
            switch (x->m - m0 >= QMM__GEMV_ROWS ? QMM__GEMV_ROWS : x->m - m0) {
            case 1: qmm__gemv_rows(kind, dot, 1, x, t, m0); break;
            case 2: qmm__gemv_rows(kind, dot, 2, x, t, m0); break;
            case 3: qmm__gemv_rows(kind, dot, 3, x, t, m0); break;
            case 4: qmm__gemv_rows(kind, dot, 4, x, t, m0); break;
            case 5: qmm__gemv_rows(kind, dot, 5, x, t, m0); break;
            case 6: qmm__gemv_rows(kind, dot, 6, x, t, m0); break;
            case 7: qmm__gemv_rows(kind, dot, 7, x, t, m0); break;
            default: qmm__gemv_rows(kind, dot, 8, x, t, m0); break;
            }
        }
    }
}

#endif
