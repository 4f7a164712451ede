/* Block-scale layouts: the index formulas of docs/design.md checked on worked examples (offsets computed by
 * hand below), every layout pair round-tripped on odd shapes, padding zero-filled, bad input rejected
 * with nothing written. */
#include "harness.h"

/* Offsets worked out by hand from
 *   NV:  off(r, c) = ((r/128)*ceil(C/4) + c/4)*512 + (r%32)*16 + ((r%128)/32)*4 + (c%4)
 *   AMD: off(mn, ks) = (mn/32)*(32*KS) + (ks/8)*256 + (ks%4)*64 + (mn%16)*4 + ((ks/4)%2)*2 + (mn/16)%2 */
typedef struct worked {
    size_t r, c, off;
} worked;

/* Places a distinct value at each worked (r, c) of a canonical matrix, converts, and checks the byte at
 * each hand-computed offset. */
static void check_worked(qmm_format f, size_t n, size_t k, qmm_scale_layout layout, size_t expect_size,
                         const worked *w, size_t count)
{
    qmm_weight_size canon, padded;
    CHECK_OK(qmm_weight_size_query(f, QMM_SCALE_LAYOUT_CANONICAL, n, k, &canon));
    CHECK_OK(qmm_weight_size_query(f, layout, n, k, &padded));
    CHECK(padded.block_scale_bytes == expect_size, "layout %d size %zu, expected %zu", (int)layout,
          padded.block_scale_bytes, expect_size);
    uint8_t *src = calloc(canon.block_scale_bytes, 1), *dst = malloc(padded.block_scale_bytes);
    for (size_t i = 0; i < count; i++) src[w[i].r * canon.scales_per_row + w[i].c] = (uint8_t)(i + 1);
    CHECK_OK(qmm_scales_convert(f, n, k, QMM_SCALE_LAYOUT_CANONICAL, src, canon.block_scale_bytes, layout, dst,
                                padded.block_scale_bytes));
    size_t nonzero = 0;
    for (size_t i = 0; i < padded.block_scale_bytes; i++) nonzero += dst[i] != 0;
    CHECK(nonzero == count, "layout %d: %zu nonzero bytes, expected %zu", (int)layout, nonzero, count);
    for (size_t i = 0; i < count; i++)
        CHECK(w[i].off < padded.block_scale_bytes && dst[w[i].off] == i + 1,
              "layout %d: scale (%zu, %zu) expected at offset %zu", (int)layout, w[i].r, w[i].c, w[i].off);
    free(src);
    free(dst);
}

static void test_worked_examples(void)
{
    /* NVFP4 130 x 112: C = 7 scale columns, ceil(C/4) = 2 tiles across, rows padded to 256. */
    static const worked nv[] = {
        {0, 0, 0},      {1, 0, 16},      {32, 0, 4},  {64, 0, 8}, {96, 0, 12}, {0, 1, 1},
        {0, 4, 512},    {33, 5, 533},    /* (0*2 + 1)*512 + 1*16 + 1*4 + 1 */
        {127, 3, 511},  /* 31*16 + 3*4 + 3 */
        {129, 6, 1554}, /* (1*2 + 1)*512 + 1*16 + 0*4 + 2 */
        {128, 0, 1024}, {100, 2, 4 * 16 + 3 * 4 + 2},
    };
    check_worked(QMM_FORMAT_NVFP4, 130, 112, QMM_SCALE_LAYOUT_NV_BLOCKED, 256 * 8, nv, sizeof nv / sizeof nv[0]);
    /* MXFP4 33 x 288: 9 scale columns, KS = 16, rows padded to 64. */
    static const worked amd[] = {
        {0, 0, 0},    {1, 0, 4},     {16, 0, 1}, {0, 1, 64}, {0, 4, 2}, {0, 8, 256},
        {17, 5, 71},  /* 1*64 + 1*4 + 1*2 + 1 */
        {31, 7, 3 * 64 + 15 * 4 + 2 + 1},
        {32, 8, 768}, /* 1*(32*16) + 1*256 */
        {15, 3, 3 * 64 + 15 * 4},
    };
    check_worked(QMM_FORMAT_MXFP4, 33, 288, QMM_SCALE_LAYOUT_AMD_MFMA, 64 * 16, amd, sizeof amd / sizeof amd[0]);
    /* MXFP4 in the NV layout: 32-element blocks, same tiling. */
    static const worked nv_mx[] = {{0, 0, 0}, {127, 0, 31 * 16 + 12}, {5, 3, 5 * 16 + 3}};
    check_worked(QMM_FORMAT_MXFP4, 128, 128, QMM_SCALE_LAYOUT_NV_BLOCKED, 128 * 4, nv_mx, 3);
}

/* Every valid scale lands on its own offset inside the buffer; everything else is padding. */
static void test_bijection(qmm_format f, size_t n, size_t k, qmm_scale_layout layout)
{
    qmm_weight_size canon, padded;
    CHECK_OK(qmm_weight_size_query(f, QMM_SCALE_LAYOUT_CANONICAL, n, k, &canon));
    CHECK_OK(qmm_weight_size_query(f, layout, n, k, &padded));
    /* Round trip with random nonzero scales, destinations poisoned. */
    uint8_t *src = malloc(canon.block_scale_bytes), *mid = malloc(padded.block_scale_bytes),
            *back = malloc(canon.block_scale_bytes), *mid2 = malloc(padded.block_scale_bytes);
    for (size_t i = 0; i < canon.block_scale_bytes; i++) src[i] = (uint8_t)(1 + harness_next() % 255);
    harness_poison(mid, padded.block_scale_bytes);
    harness_poison(back, canon.block_scale_bytes);
    CHECK_OK(qmm_scales_convert(f, n, k, QMM_SCALE_LAYOUT_CANONICAL, src, canon.block_scale_bytes, layout, mid,
                                padded.block_scale_bytes));
    CHECK_OK(qmm_scales_convert(f, n, k, layout, mid, padded.block_scale_bytes, QMM_SCALE_LAYOUT_CANONICAL, back,
                                canon.block_scale_bytes));
    CHECK(memcmp(src, back, canon.block_scale_bytes) == 0, "round trip %zu x %zu layout %d", n, k, (int)layout);
    size_t zeros = 0;
    for (size_t i = 0; i < padded.block_scale_bytes; i++) zeros += mid[i] == 0;
    CHECK(zeros == padded.block_scale_bytes - canon.block_scale_bytes,
          "%zu x %zu layout %d: %zu zero bytes, padding is %zu", n, k, (int)layout, zeros,
          padded.block_scale_bytes - canon.block_scale_bytes);
    /* Same layout on both sides: the padding of a dirty source is zeroed in the copy. */
    uint8_t *dirty = malloc(padded.block_scale_bytes);
    memcpy(dirty, mid, padded.block_scale_bytes);
    for (size_t i = 0; i < padded.block_scale_bytes; i++)
        if (dirty[i] == 0) dirty[i] = 0x5a;
    CHECK_OK(qmm_scales_convert(f, n, k, layout, dirty, padded.block_scale_bytes, layout, mid2, padded.block_scale_bytes));
    CHECK(memcmp(mid, mid2, padded.block_scale_bytes) == 0, "padding of the source is not copied");
    free(dirty);
    free(src);
    free(mid);
    free(back);
    free(mid2);
}

static void test_round_trips(void)
{
    static const size_t ns[] = {1, 31, 32, 33, 127, 128, 129, 300};
    static const size_t ks[] = {1, 17, 32, 64, 100, 257, 512, 1000};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++) {
            test_bijection(QMM_FORMAT_NVFP4, ns[i], ks[j], QMM_SCALE_LAYOUT_NV_BLOCKED);
            test_bijection(QMM_FORMAT_MXFP4, ns[i], ks[j], QMM_SCALE_LAYOUT_NV_BLOCKED);
            test_bijection(QMM_FORMAT_MXFP4, ns[i], ks[j], QMM_SCALE_LAYOUT_AMD_MFMA);
        }
    /* NV blocked <-> AMD directly equals going through the canonical layout. */
    const size_t n = 77, k = 200;
    qmm_weight_size c, nv, amd;
    CHECK_OK(qmm_weight_size_query(QMM_FORMAT_MXFP4, QMM_SCALE_LAYOUT_CANONICAL, n, k, &c));
    CHECK_OK(qmm_weight_size_query(QMM_FORMAT_MXFP4, QMM_SCALE_LAYOUT_NV_BLOCKED, n, k, &nv));
    CHECK_OK(qmm_weight_size_query(QMM_FORMAT_MXFP4, QMM_SCALE_LAYOUT_AMD_MFMA, n, k, &amd));
    uint8_t *src = malloc(c.block_scale_bytes), *a = malloc(nv.block_scale_bytes), *b = malloc(amd.block_scale_bytes),
            *b2 = malloc(amd.block_scale_bytes);
    for (size_t i = 0; i < c.block_scale_bytes; i++) src[i] = (uint8_t)harness_next();
    CHECK_OK(qmm_scales_convert(QMM_FORMAT_MXFP4, n, k, QMM_SCALE_LAYOUT_CANONICAL, src, c.block_scale_bytes,
                                QMM_SCALE_LAYOUT_NV_BLOCKED, a, nv.block_scale_bytes));
    CHECK_OK(qmm_scales_convert(QMM_FORMAT_MXFP4, n, k, QMM_SCALE_LAYOUT_NV_BLOCKED, a, nv.block_scale_bytes,
                                QMM_SCALE_LAYOUT_AMD_MFMA, b, amd.block_scale_bytes));
    CHECK_OK(qmm_scales_convert(QMM_FORMAT_MXFP4, n, k, QMM_SCALE_LAYOUT_CANONICAL, src, c.block_scale_bytes,
                                QMM_SCALE_LAYOUT_AMD_MFMA, b2, amd.block_scale_bytes));
    CHECK(memcmp(b, b2, amd.block_scale_bytes) == 0, "NV -> AMD equals canonical -> AMD");
    free(src), free(a), free(b), free(b2);
}

static void test_bad_input(void)
{
    uint8_t src[4096], dst[4096];
    for (size_t i = 0; i < sizeof src; i++) src[i] = (uint8_t)i;
    harness_poison(dst, sizeof dst);
    const qmm_scale_layout C = QMM_SCALE_LAYOUT_CANONICAL, NV = QMM_SCALE_LAYOUT_NV_BLOCKED, AMD = QMM_SCALE_LAYOUT_AMD_MFMA;
    CHECK_STATUS(qmm_scales_convert(QMM_FORMAT_NVFP4, 4, 64, C, NULL, 16, NV, dst, sizeof dst), QMM_ERR_NULL_POINTER);
    CHECK_STATUS(qmm_scales_convert(QMM_FORMAT_NVFP4, 4, 64, C, src, 16, NV, NULL, sizeof dst), QMM_ERR_NULL_POINTER);
    CHECK_STATUS(qmm_scales_convert((qmm_format)0, 4, 64, C, src, 16, NV, dst, sizeof dst), QMM_ERR_INVALID_ENUM);
    CHECK_STATUS(qmm_scales_convert(QMM_FORMAT_NVFP4, 4, 64, (qmm_scale_layout)9, src, 16, NV, dst, sizeof dst), QMM_ERR_INVALID_ENUM);
    CHECK_STATUS(qmm_scales_convert(QMM_FORMAT_NVFP4, 0, 64, C, src, 16, NV, dst, sizeof dst), QMM_ERR_INVALID_SIZE);
    CHECK_STATUS(qmm_scales_convert(QMM_FORMAT_NVFP4, 4, 0, C, src, 16, NV, dst, sizeof dst), QMM_ERR_INVALID_SIZE);
    CHECK_STATUS(qmm_scales_convert(QMM_FORMAT_NVFP4, SIZE_MAX / 2, 64, C, src, 16, NV, dst, sizeof dst), QMM_ERR_SIZE_OVERFLOW);
    CHECK_STATUS(qmm_scales_convert(QMM_FORMAT_FP8_TENSOR, 4, 64, C, src, 16, C, dst, sizeof dst), QMM_ERR_UNSUPPORTED);
    CHECK_STATUS(qmm_scales_convert(QMM_FORMAT_NVFP4, 4, 64, C, src, 16, AMD, dst, sizeof dst), QMM_ERR_UNSUPPORTED);
    CHECK_STATUS(qmm_scales_convert(QMM_FORMAT_NVFP4, 4, 64, C, src, 15, NV, dst, sizeof dst), QMM_ERR_BUFFER_TOO_SMALL);
    CHECK_STATUS(qmm_scales_convert(QMM_FORMAT_NVFP4, 4, 64, C, src, 16, NV, dst, 511), QMM_ERR_BUFFER_TOO_SMALL);
    CHECK_STATUS(qmm_scales_convert(QMM_FORMAT_NVFP4, 4, 64, C, dst + 100, 16, NV, dst, sizeof dst), QMM_ERR_INVALID_ARGUMENT);
    CHECK(harness_all_bytes(dst, sizeof dst, 0xff), "output written on failure");
    CHECK(strlen(qmm_last_error()) > 0, "message set");
}

int main(void)
{
    harness_begin("test_layout");
    test_worked_examples();
    test_round_trips();
    test_bad_input();
    return harness_end("test_layout");
}
