/* AVX2 GEMV (fp32 A, FMA), one named kernel per kind, and the AVX2 entries of the kernel table.
 * A tile of 16 rows is two halves of 8 lanes; each half makes its pass over the tile for up to 4 rows
 * of A (the second half finds the tile in L2). E2M1 codes become fp32 through an 8-entry table
 * (vpermps reads the 3 magnitude bits) and the sign bit; E4M3 through binary16 and F16C. */
#include "avx2_common.h"

#define QMM__GEMV2_ROWS 4

/* fp32 of the E2M1 code in bits 0..3 of each lane (the bits above are ignored). */
QMM__INLINE __m256 qmm__e2m1x8(__m256i idx)
{
    const __m256 mag = _mm256_permutevar8x32_ps(_mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f), idx);
    const __m256i sign = _mm256_and_si256(_mm256_slli_epi32(idx, 28), _mm256_set1_epi32((int)0x80000000u));
    return _mm256_xor_ps(mag, _mm256_castsi256_ps(sign));
}

/* One group (64 k from k0) of half h of a tile, rows arow[0 .. MG). */
QMM__INLINE void qmm__gemv2_group(const int kind, const int MG, const uint8_t *td, const uint8_t *ts, size_t h,
                                  const float *const *arow, size_t k0, __m256 acc[][2])
{
    if (kind == QMM__KIND_NVFP4 || kind == QMM__KIND_MXFP4) {
        const int blocks = kind == QMM__KIND_NVFP4 ? 4 : 2, chunks = 8 / blocks;
        for (int b = 0; b < blocks; b++) {
            __m256 s;
            if (kind == QMM__KIND_NVFP4) s = qmm__e4m3x8(ts + 16 * b + 8 * h);
            else {
                const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(ts + 16 * b + 8 * h)));
                s = _mm256_castsi256_ps(_mm256_max_epu32(_mm256_slli_epi32(e, 23), _mm256_set1_epi32(0x00400000)));
            }
            __m256 t[QMM__GEMV2_ROWS];
            for (int i = 0; i < MG; i++) t[i] = _mm256_setzero_ps();
            for (int c = 0; c < chunks; c++) {
                /* lane l: word 2l (k-pair element 0) and word 2l + 1 (element 1); nibble j = pair j */
                const __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(td + 64 * (chunks * b + c) + 32 * h));
                for (int j = 0; j < 4; j++)
                    for (int e = 0; e < 2; e++) {
                        const __m256 w = qmm__e2m1x8(_mm256_srli_epi32(x, (int)(16 * e + 4 * j)));
                        const size_t kk = k0 + (size_t)(8 * (chunks * b + c) + 2 * j + e);
                        for (int i = 0; i < MG; i++) t[i] = _mm256_fmadd_ps(w, _mm256_set1_ps(arow[i][kk]), t[i]);
                    }
            }
            for (int i = 0; i < MG; i++) acc[i][0] = _mm256_fmadd_ps(t[i], s, acc[i][0]);
        }
    } else if (kind == QMM__KIND_FP8) {
        /* bytes 16L + 8q + 2r + s of a chunk: row 4L + r, k 4c + 2q + s; this half holds L = 2h, 2h + 1.
         * Lanes are (row, element of the pair); A's pair is broadcast as one 64-bit value. */
        for (int c = 0; c < 16; c++)
            for (int l2 = 0; l2 < 2; l2++)
                for (int q = 0; q < 2; q++) {
                    const __m256 w = qmm__e4m3x8(td + 64 * c + 32 * h + 16 * l2 + 8 * q);
                    const size_t kk = k0 + (size_t)(4 * c + 2 * q);
                    for (int i = 0; i < MG; i++) {
                        double pair;
                        memcpy(&pair, arow[i] + kk, 8);
                        acc[i][l2] = _mm256_fmadd_ps(w, _mm256_castpd_ps(_mm256_set1_pd(pair)), acc[i][l2]);
                    }
                }
    } else {
        for (int p = 0; p < 32; p++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(td + 64 * p + 32 * h));
            const __m256 lo = qmm__pair_lo256(v), hi = qmm__pair_hi256(v);
            for (int i = 0; i < MG; i++) {
                acc[i][0] = _mm256_fmadd_ps(lo, _mm256_set1_ps(arow[i][k0 + (size_t)(2 * p)]), acc[i][0]);
                acc[i][1] = _mm256_fmadd_ps(hi, _mm256_set1_ps(arow[i][k0 + (size_t)(2 * p + 1)]), acc[i][1]);
            }
        }
    }
}

QMM__INLINE void qmm__gemv2_rows(const int kind, const int MG, const qmm__cpu_gemv_args *x, size_t t, size_t m0)
{
    const qmm__cpu_weight *w = x->w;
    const size_t k = w->k, full = k / QMM__KGROUP, groups = w->kp / QMM__KGROUP;
    const size_t gd = QMM__GROUP_DATA(kind), gs = QMM__GROUP_SCALES(kind);
    const uint8_t *td = w->data + t * w->tile_bytes, *ts = gs ? w->scales + t * w->tile_scale_bytes : NULL;
    const float *arow[QMM__GEMV2_ROWS];
    _Alignas(32) float buf[QMM__GEMV2_ROWS][QMM__KGROUP];
    const float *brow[QMM__GEMV2_ROWS];
    for (int i = 0; i < MG; i++) {
        arow[i] = (const float *)x->a + (m0 + (size_t)i) * x->lda;
        memset(buf[i], 0, sizeof buf[i]);
        if (full < groups) memcpy(buf[i], arow[i] + full * QMM__KGROUP, (k - full * QMM__KGROUP) * sizeof(float));
        brow[i] = buf[i];
    }
    for (size_t h = 0; h < 2; h++) {
        __m256 acc[QMM__GEMV2_ROWS][2];
        for (int i = 0; i < MG; i++) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
        for (size_t g = 0; g < full; g++)
            qmm__gemv2_group(kind, MG, td + g * gd, ts ? ts + g * gs : NULL, h, arow, g * QMM__KGROUP, acc);
        if (full < groups) qmm__gemv2_group(kind, MG, td + full * gd, ts ? ts + full * gs : NULL, h, brow, 0, acc);
        for (int i = 0; i < MG; i++) {
            __m256 r;
            if (kind == QMM__KIND_FP8) { /* pair lanes of rows 0-3 and 4-7 -> rows */
                const __m256 s = _mm256_hadd_ps(acc[i][0], acc[i][1]); /* rows 0 1 4 5 2 3 6 7 */
                r = _mm256_permutevar8x32_ps(s, _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7));
            } else {
                r = _mm256_add_ps(acc[i][0], acc[i][1]);
            }
            qmm__store8(x->epi, m0 + (size_t)i, t * QMM__TILE_ROWS + 8 * h, r);
        }
    }
}

QMM__INLINE void qmm__gemv2_tiles(const int kind, const qmm__cpu_gemv_args *x, size_t tile0, size_t tile1)
{
    for (size_t t = tile0; t < tile1; t++)
        for (size_t m0 = 0; m0 < x->m; m0 += QMM__GEMV2_ROWS) {
            switch (x->m - m0 >= QMM__GEMV2_ROWS ? QMM__GEMV2_ROWS : x->m - m0) {
            case 1: qmm__gemv2_rows(kind, 1, x, t, m0); break;
            case 2: qmm__gemv2_rows(kind, 2, x, t, m0); break;
            case 3: qmm__gemv2_rows(kind, 3, x, t, m0); break;
            default: qmm__gemv2_rows(kind, 4, x, t, m0); break;
            }
        }
}

static void gemv_nvfp4_avx2(const qmm__cpu_gemv_args *x, size_t t0, size_t t1) { qmm__gemv2_tiles(QMM__KIND_NVFP4, x, t0, t1); }
static void gemv_mxfp4_avx2(const qmm__cpu_gemv_args *x, size_t t0, size_t t1) { qmm__gemv2_tiles(QMM__KIND_MXFP4, x, t0, t1); }
static void gemv_fp8_avx2(const qmm__cpu_gemv_args *x, size_t t0, size_t t1) { qmm__gemv2_tiles(QMM__KIND_FP8, x, t0, t1); }
static void gemv_bf16_avx2(const qmm__cpu_gemv_args *x, size_t t0, size_t t1) { qmm__gemv2_tiles(QMM__KIND_BF16, x, t0, t1); }

/* defined in gemm_avx2.c */
void qmm__cpu_fill_avx2_gemm(qmm__cpu_kernels *k);

/* Four sequential streams, as read_sum_avx512. */
static uint64_t read_sum_avx2(const void *p, size_t bytes)
{
    const char *q = p;
    const size_t quarter = bytes / 4;
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i < quarter; i += 64) {
        s0 = _mm256_add_epi64(s0, _mm256_load_si256((const __m256i *)(const void *)(q + i)));
        s1 = _mm256_add_epi64(s1, _mm256_load_si256((const __m256i *)(const void *)(q + quarter + i)));
        s2 = _mm256_add_epi64(s2, _mm256_load_si256((const __m256i *)(const void *)(q + 2 * quarter + i)));
        s3 = _mm256_add_epi64(s3, _mm256_load_si256((const __m256i *)(const void *)(q + 3 * quarter + i)));
        s0 = _mm256_add_epi64(s0, _mm256_load_si256((const __m256i *)(const void *)(q + i + 32)));
        s1 = _mm256_add_epi64(s1, _mm256_load_si256((const __m256i *)(const void *)(q + quarter + i + 32)));
        s2 = _mm256_add_epi64(s2, _mm256_load_si256((const __m256i *)(const void *)(q + 2 * quarter + i + 32)));
        s3 = _mm256_add_epi64(s3, _mm256_load_si256((const __m256i *)(const void *)(q + 3 * quarter + i + 32)));
    }
    uint64_t out[4];
    _mm256_storeu_si256((__m256i *)(void *)out, _mm256_add_epi64(_mm256_add_epi64(s0, s1), _mm256_add_epi64(s2, s3)));
    return out[0] + out[1] + out[2] + out[3];
}

static double fma_loop_avx2(long iters)
{
    __m256 x[12];
    for (int j = 0; j < 12; j++) x[j] = _mm256_set1_ps(0.001f * (float)j);
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    for (long i = 0; i < iters; i++)
        for (int j = 0; j < 12; j++) x[j] = _mm256_fmadd_ps(x[j], a, b);
    __m256 s = x[0];
    for (int j = 1; j < 12; j++) s = _mm256_add_ps(s, x[j]);
    float out[8];
    _mm256_storeu_ps(out, s);
    volatile float sink = out[0] + out[7];
    (void)sink;
    return 12.0 * 16.0 * (double)iters;
}

void qmm__cpu_fill_avx2(qmm__cpu_kernels *k)
{
    k->name = "avx2";
    k->gemv_fma[QMM__KIND_NVFP4] = gemv_nvfp4_avx2;
    k->gemv_fma[QMM__KIND_MXFP4] = gemv_mxfp4_avx2;
    k->gemv_fma[QMM__KIND_FP8] = gemv_fp8_avx2;
    k->gemv_fma[QMM__KIND_BF16] = gemv_bf16_avx2;
    k->read_sum = read_sum_avx2;
    k->fma_loop = fma_loop_avx2;
    qmm__cpu_fill_avx2_gemm(k);
}
