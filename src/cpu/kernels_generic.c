/* The portable kernels: plain C for any processor, the entries every other instruction set starts
 * from, and the simplest statement of what each kernel computes. GCC and Clang vectorize the inner
 * loops over the 16 rows of a tile with the baseline vector unit. */
#include <string.h>

#include "../core/convert.h"
#include "../core/epilogue.h"
#include "kernels.h"

/* ---- the epilogue, one element at a time ---- */

float qmm__cpu_epilogue_value(const qmm__cpu_epi *e, size_t row, size_t col, float acc)
{
    float v = e->poison ? acc + e->poison[col] : acc;
    v *= e->inv_unit;
    v *= e->row_scales ? e->row_scales[col] : e->row_scale;
    v *= e->alpha;
    if (e->column_scale) v *= e->column_scale[col];
    if (e->bias) v += e->bias[col];
    if (e->beta != 0.0f) {
        const size_t i = row * e->ldc + col;
        float cin;
        if (e->c_type == QMM_DTYPE_FP32) cin = ((const float *)e->c)[i];
        else if (e->c_type == QMM_DTYPE_BF16) cin = qmm__bf16_to_fp32(((const uint16_t *)e->c)[i]);
        else cin = qmm__fp16_to_fp32(((const uint16_t *)e->c)[i]);
        v += e->beta * cin;
    }
    v = qmm__activation_f32(v, e->act);
    return e->out_scale ? v * e->out_scale[row] : v;
}

void qmm__cpu_store_value(const qmm__cpu_epi *e, size_t row, size_t col, float v)
{
    const size_t i = row * e->ldc + col;
    if (e->c_type == QMM_DTYPE_FP32) ((float *)e->c)[i] = v;
    else if (e->c_type == QMM_DTYPE_BF16) ((uint16_t *)e->c)[i] = qmm__fp32_to_bf16(v);
    else ((uint16_t *)e->c)[i] = qmm__fp32_to_fp16(v);
}

static void qmm__generic_store(const qmm__cpu_epi *e, size_t row, size_t col0, size_t count, const float *acc)
{
    for (size_t j = 0; j < count && col0 + j < e->n; j++)
        qmm__cpu_store_value(e, row, col0 + j, qmm__cpu_epilogue_value(e, row, col0 + j, acc[j]));
}

/* ---- decoding the prepared layout ---- */

/* Decoded values of every code, built once per call: E2M1, and E4M3 in the weight's unit (2^-8). */
typedef struct qmm__generic_luts {
    float e2m1[16];
    float e4m3[256];
} qmm__generic_luts;

static void qmm__generic_luts_init(qmm__generic_luts *l)
{
    for (unsigned i = 0; i < 16; i++) l->e2m1[i] = qmm__e2m1_to_fp32((uint8_t)i);
    for (unsigned i = 0; i < 256; i++) l->e4m3[i] = qmm__e4m3_to_fp32((uint8_t)i) * QMM__E4M3_UNIT;
}

static uint16_t qmm__u16_at(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return h;
}

/* Group g (k in [64g, 64g + 64)) of tile t as exact values in the weight's unit: out[kk][row]. */
static void qmm__generic_decode_group(const qmm__cpu_weight *w, const qmm__generic_luts *lut, size_t t, size_t g,
                                      float out[QMM__KGROUP][QMM__TILE_ROWS])
{
    const uint8_t *td = w->data + t * w->tile_bytes;
    switch (w->kind) {
    case QMM__KIND_BF16:
        for (size_t kk = 0; kk < QMM__KGROUP; kk++) {
            const size_t k = 64 * g + kk;
            for (size_t l = 0; l < QMM__TILE_ROWS; l++)
                out[kk][l] = qmm__bf16_to_fp32(qmm__u16_at(td + 64 * (k / 2) + 4 * l + 2 * (k & 1)));
        }
        break;
    case QMM__KIND_FP8:
        for (size_t kk = 0; kk < QMM__KGROUP; kk++)
            for (size_t l = 0; l < QMM__TILE_ROWS; l++) out[kk][l] = lut->e4m3[td[qmm__e4m3_offset(l, 64 * g + kk)]];
        break;
    default: {
        const size_t b = w->kind == QMM__KIND_NVFP4 ? 16 : 32, blocks = QMM__KGROUP / b;
        const uint8_t *ts = w->scales + t * w->tile_scale_bytes + g * blocks * 16;
        float sc[4][QMM__TILE_ROWS];
        for (size_t bl = 0; bl < blocks; bl++)
            for (size_t l = 0; l < QMM__TILE_ROWS; l++)
                sc[bl][l] = w->kind == QMM__KIND_NVFP4 ? lut->e4m3[ts[16 * bl + l]] : qmm__e8m0_to_fp32(ts[16 * bl + l]);
        const uint8_t *gd = td + 512 * g;
        for (size_t c = 0; c < 8; c++) /* chunk c: k in [8c, 8c + 8); word 2l + s holds k = 8c + 2j + s in nibble j */
            for (size_t l = 0; l < QMM__TILE_ROWS; l++) {
                const unsigned w0 = qmm__u16_at(gd + 64 * c + 4 * l), w1 = qmm__u16_at(gd + 64 * c + 4 * l + 2);
                const float s = sc[8 * c / b][l];
                for (unsigned j = 0; j < 4; j++) {
                    out[8 * c + 2 * j][l] = lut->e2m1[(w0 >> (4 * j)) & 15u] * s;
                    out[8 * c + 2 * j + 1][l] = lut->e2m1[(w1 >> (4 * j)) & 15u] * s;
                }
            }
    }
    }
}

/* ---- GEMV ---- */

#define QMM__GENERIC_GEMV_ROWS 8

static void qmm__gemv_generic(const qmm__cpu_gemv_args *x, size_t tile0, size_t tile1)
{
    const qmm__cpu_weight *w = x->w;
    const float *a = x->a;
    const size_t k = w->k, groups = w->kp / QMM__KGROUP;
    float wv[QMM__KGROUP][QMM__TILE_ROWS];
    qmm__generic_luts lut;
    qmm__generic_luts_init(&lut);
    for (size_t t = tile0; t < tile1; t++) {
        for (size_t m0 = 0; m0 < x->m; m0 += QMM__GENERIC_GEMV_ROWS) {
            const size_t mg = x->m - m0 < QMM__GENERIC_GEMV_ROWS ? x->m - m0 : QMM__GENERIC_GEMV_ROWS;
            float acc[QMM__GENERIC_GEMV_ROWS][QMM__TILE_ROWS];
            memset(acc, 0, sizeof acc);
            for (size_t g = 0; g < groups; g++) {
                qmm__generic_decode_group(w, &lut, t, g, wv);
                const size_t kend = k - 64 * g < QMM__KGROUP ? k - 64 * g : QMM__KGROUP;
                for (size_t i = 0; i < mg; i++) {
                    const float *ar = a + (m0 + i) * x->lda + 64 * g;
                    for (size_t kk = 0; kk < kend; kk++)
                        for (size_t l = 0; l < QMM__TILE_ROWS; l++) acc[i][l] += ar[kk] * wv[kk][l];
                }
            }
            for (size_t i = 0; i < mg; i++) qmm__generic_store(x->epi, m0 + i, t * QMM__TILE_ROWS, QMM__TILE_ROWS, acc[i]);
        }
    }
}

/* ---- panels from the prepared layout ---- */

static void qmm__panel_generic(const qmm__cpu_weight *w, size_t col0, size_t k0, size_t kc, uint16_t *panel)
{
    float wv[QMM__KGROUP][QMM__TILE_ROWS];
    qmm__generic_luts lut;
    qmm__generic_luts_init(&lut);
    for (size_t h = 0; h < 2; h++) {
        const size_t t = col0 / QMM__TILE_ROWS + h;
        for (size_t g = k0 / QMM__KGROUP; g < (k0 + kc) / QMM__KGROUP; g++) {
            if (t < w->tiles) qmm__generic_decode_group(w, &lut, t, g, wv);
            else memset(wv, 0, sizeof wv);
            for (size_t kk = 0; kk < QMM__KGROUP; kk++) {
                const size_t k = 64 * g + kk - k0;
                for (size_t l = 0; l < QMM__TILE_ROWS; l++)
                    panel[64 * (k / 2) + 2 * (16 * h + l) + (k & 1)] = (uint16_t)(qmm__f32_bits(wv[kk][l]) >> 16); /* exact */
            }
        }
    }
}

/* ---- the GEMM register tile: packed fp32 A, 4 rows x 32 columns ---- */

#define QMM__GENERIC_MR 4

static void qmm__tile_fma_generic(const qmm__cpu_tile_args *t)
{
    enum { MR = QMM__GENERIC_MR };
    float acc[MR][32];
    const float *a = t->a; /* [2 * pairs][MR] */
    for (size_t i = 0; i < MR; i++)
        for (size_t c = 0; c < 32; c++) acc[i][c] = t->accumulate && i < t->mr ? t->part[i * t->ldp + c] : 0.0f;
    for (size_t p = 0; p < t->pairs; p++) {
        float w0[32], w1[32];
        for (size_t c = 0; c < 16; c++) {
            w0[c] = qmm__bf16_to_fp32(t->w0[p * t->wstride + 2 * c]), w1[c] = qmm__bf16_to_fp32(t->w0[p * t->wstride + 2 * c + 1]);
            w0[16 + c] = qmm__bf16_to_fp32(t->w1[p * t->wstride + 2 * c]), w1[16 + c] = qmm__bf16_to_fp32(t->w1[p * t->wstride + 2 * c + 1]);
        }
        const float *ap = a + 2 * p * MR;
        for (size_t i = 0; i < MR; i++)
            for (size_t c = 0; c < 32; c++) acc[i][c] += ap[i] * w0[c] + ap[MR + i] * w1[c];
    }
    for (size_t i = 0; i < MR && i < t->mr; i++) {
        if (t->epi) qmm__generic_store(t->epi, t->row0 + i, t->col0, 32, acc[i]);
        else memcpy(t->part + i * t->ldp, acc[i], sizeof acc[i]);
    }
}

/* ---- measurement loops ---- */

static uint64_t qmm__read_sum_generic(const void *p, size_t bytes)
{
    const uint64_t *q = p;
    const size_t quarter = bytes / 32; /* words per stream: four sequential streams */
    uint64_t s[8] = {0};
    for (size_t i = 0; i < quarter; i += 2)
        for (int j = 0; j < 4; j++) s[2 * j] += q[j * quarter + i], s[2 * j + 1] += q[j * quarter + i + 1];
    return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

static double qmm__fma_loop_generic(long iters)
{
    float x[32];
    for (int j = 0; j < 32; j++) x[j] = (float)j;
    for (long i = 0; i < iters; i++)
        for (int j = 0; j < 32; j++) x[j] = x[j] * 0.999999f + 1e-7f;
    volatile float sink = x[0] + x[31];
    (void)sink;
    return 2.0 * 32.0 * (double)iters;
}

void qmm__cpu_fill_generic(qmm__cpu_kernels *k)
{
    memset(k, 0, sizeof *k);
    k->name = "generic";
    for (int i = 0; i < QMM__KIND_COUNT; i++) k->gemv_fma[i] = qmm__gemv_generic, k->panel[i] = qmm__panel_generic;
    k->tile_fma = qmm__tile_fma_generic;
    k->mr_fma = QMM__GENERIC_MR;
    k->read_sum = qmm__read_sum_generic;
    k->fma_loop = qmm__fma_loop_generic;
}
