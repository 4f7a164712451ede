/* Part of test_cuda.c, included there after its contexts `ref` and `ctx`: the epilogue's exact check.
 */
#ifndef QMM_TEST_CUDA_EXACT_H
#define QMM_TEST_CUDA_EXACT_H

/* The epilogue's fp32 arithmetic, bit for bit, on every path. With activations that are small integers
 * and weights whose dequantized values are small multiples of 1/2 (FP8 codes of 0, +-1 .. 4 with
 * per-channel scales; NVFP4 and MXFP4 with every E2M1 code and block scales 1 and 2, NVFP4's tensor
 * scale random),
 * every sum of products is a multiple of 1/2 below 2^23, so it is exact in fp32 whatever its order or
 * split; C must then equal, to the bit, the formula of src/cuda/device_common.cuh (qmm__epilogue_factor,
 * qmm__epilogue_finish): f = alpha * scale[n] * column[n] (scale: the channel's, or the tensor's),
 * v = acc * f, v = v + bias[n], v = fma(beta, C_in, v), ReLU, one rounding to the output type. (The
 * kernels carry an exact power of two between acc and f, which does not change these roundings away
 * from overflow and subnormals.) A compiler that contracts a product into a sum fails it: nvcc did so
 * once in the materialize path's epilogue kernel, which a tolerance-based check could not see.
 * Activations: none and ReLU (the others go through the device's expf and erfcf). bf16 and fp16 A: the
 * integers are exact in both, and fp16 A takes the fp16 decodes (FP8 everywhere, NVFP4 on the fused
 * path: other powers of two in f; MXFP4 where its scale codes span at most 24, else the split: `wide`
 * gives block 0 of row 0 the scale 2^-27 and zeros A's first 32 columns, so the sums stay exact). Each
 * weight runs with rows of A at lda = K (unaligned for odd K: STEP
 * and WHOLE) and lda = K rounded up to 8 with NaN in the gap (PIPE, whose stages zero the columns past
 * K); K = 4133 splits K on the GEMV and fused paths; M = 24 takes the fused path's 32-row tiles, M = 150
 * and 200 (sm_90a) the WG variant's 192- and 256-row CTAs. NVFP4 and MXFP4 on the materialize path go through cuBLASLt's
 * own epilogue, whose order of operations is not this formula, so there it is left to the tolerance
 * checks. */
static float exact_f32(volatile float x) { return x; } /* one rounding, no contraction across it */

static void exact_case(qmm_format f, size_t n, size_t k, int wide)
{
    static const uint8_t codes[9] = {0x00, 0x38, 0x40, 0x44, 0x48, 0xb8, 0xc0, 0xc4, 0xc8}; /* 0, +-1, 2, 3, 4 */
    static const float values[9] = {0, 1, 2, 3, 4, -1, -2, -3, -4};
    static const float e2m1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
    static const size_t ms[] = {1, 5, 16, 24, 33, 100, 150, 200};
    static const qmm_path paths[4] = {QMM_PATH_AUTO, QMM_PATH_GEMV, QMM_PATH_FUSED, QMM_PATH_MATERIALIZE};
    const int nv = f == QMM_FORMAT_NVFP4, mx = f == QMM_FORMAT_MXFP4;
    const size_t ldc = n + 3, mmax = 200, lda_max = (k + 7) / 8 * 8;
    qmm_weight w;
    CHECK_OK(qmm_weight_alloc(&w, f, n, k));
    float *q = malloc(n * k * sizeof(float)); /* the dequantized weight without the tensor scale */
    if (nv || mx) {
        const size_t rb = (k + 1) / 2, bs = nv ? 16 : 32, spr = (k + bs - 1) / bs;
        const uint8_t one = nv ? 0x38 : 127, two = nv ? 0x40 : 128; /* E4M3 or E8M0 codes of 1 and 2 */
        memset(w.data, 0, n * rb);
        for (size_t j = 0; j < n; j++) {
            for (size_t b = 0; b < spr; b++) w.block_scales[j * spr + b] = harness_next() % 2 ? two : one;
            if (wide && j == 0) w.block_scales[0] = 100; /* 2^-27: a code range of 28 */
            for (size_t t = 0; t < k; t++) {
                const unsigned c = (unsigned)(harness_next() % 16);
                w.data[j * rb + t / 2] |= (uint8_t)(c << (t % 2 * 4));
                const uint8_t sc = w.block_scales[j * spr + t / bs];
                q[j * k + t] = e2m1[c] * (sc == two ? 2.0f : sc == one ? 1.0f : 0x1p-27f);
            }
        }
        if (nv) w.tensor_scale = (float)(harness_normal() * ldexp(1.0, (int)(harness_next() % 9) - 4));
    } else {
        for (size_t i = 0; i < n * k; i++) {
            const int c = (int)(harness_next() % 9);
            w.data[i] = codes[c];
            q[i] = values[c];
        }
        for (size_t j = 0; j < n; j++) w.channel_scales[j] = (float)(harness_normal() * ldexp(1.0, (int)(harness_next() % 9) - 4));
    }
    CHECK_OK(qmm_weight_prepare(ctx, &w));
    /* A (mmax x K integers in -3 .. 3) at both strides, bf16 and fp16; the gap of the padded rows NaN */
    float *af = malloc(mmax * k * sizeof(float));
    for (size_t i = 0; i < mmax * k; i++) af[i] = wide && i % k < 32 ? 0.0f : (float)((int)(harness_next() % 7) - 3);
    void *a_bufs[2][2] = {{NULL, NULL}, {NULL, NULL}};
    uint16_t *ah = malloc(mmax * lda_max * 2);
    for (int pad = 0; pad < 2; pad++)
        for (int t = 0; t < 2; t++) {
            const size_t lda = pad ? lda_max : k;
            memset(ah, 0xff, mmax * lda * 2); /* NaN in bf16 and fp16 */
            for (size_t i = 0; i < mmax; i++)
                for (size_t c = 0; c < k; c++) ah[i * lda + c] = t ? qmm_fp32_to_fp16(af[i * k + c]) : qmm_fp32_to_bf16(af[i * k + c]);
            a_bufs[pad][t] = mm_upload(ctx, ah, mmax * lda * 2);
        }
    /* the exact sums, once */
    double *acc = malloc(mmax * n * sizeof(double));
    for (size_t i = 0; i < mmax; i++)
        for (size_t j = 0; j < n; j++) {
            double sum = 0;
            for (size_t t = 0; t < k; t++) sum += (double)af[i * k + t] * q[j * k + t];
            acc[i * n + j] = sum;
        }
    float *bias = malloc(n * 4), *cs = malloc(n * 4);
    for (size_t j = 0; j < n; j++) bias[j] = (float)harness_normal(), cs[j] = (float)(0.5 + harness_uniform());
    void *bias_buf = mm_upload(ctx, bias, n * 4), *cs_buf = mm_upload(ctx, cs, n * 4);
    const size_t cbytes = mmax * ldc * 4;
    void *cin = malloc(cbytes), *got = malloc(cbytes), *c_buf = NULL;
    CHECK_OK(qmm_buffer_alloc(ctx, cbytes, &c_buf));
    char label[200];
    for (int p = 0; p < 4; p++) {
        if ((nv || mx) && paths[p] == QMM_PATH_MATERIALIZE) continue;
        for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
            for (int variant = 0; variant < 16; variant++) {
                const size_t m = ms[mi];
                const int pad = variant / 8, t = variant / 4 % 2;
                const qmm_dtype at = atypes[t];
                void *a_buf = a_bufs[pad][t];
                const size_t lda = pad ? lda_max : k;
                const qmm_dtype ct = ctypes[harness_next() % 3];
                const size_t el = mm_elem(ct);
                qmm_epilogue e;
                qmm_epilogue_init(&e);
                e.alpha = variant % 4 == 0 ? 1.0f : (float)(0.5 + harness_uniform());
                e.activation = variant & 1 ? QMM_ACT_RELU : QMM_ACT_NONE;
                if (variant % 4 >= 2) e.beta = -0.625f, e.bias = bias_buf, e.column_scale = cs_buf;
                harness_poison(cin, cbytes);
                if (e.beta != 0.0f)
                    for (size_t i = 0; i < m; i++)
                        for (size_t j = 0; j < n; j++) mm_store(ct, cin, i * ldc + j, (float)harness_normal());
                if (!a_buf || !c_buf) break;
                CHECK_OK(qmm_buffer_write(ctx, c_buf, cin, m * ldc * el));
                CHECK_OK(qmm_context_set_path(ctx, paths[p]));
                snprintf(label, sizeof label, "exact epilogue: format %d n %zu k %zu lda %zu path %s m %zu A %s C %s variant %d",
                         (int)f, n, k, lda, qmm_path_name(paths[p]), m, qmm_dtype_name(at), qmm_dtype_name(ct), variant % 4);
                qmm_status st = qmm_matmul(ctx, m, at, a_buf, lda, &w, ct, c_buf, ldc, &e);
                CHECK(st == QMM_OK, "%s: qmm_matmul failed: %s", label, qmm_last_error());
                if (st != QMM_OK) continue;
                CHECK_OK(qmm_buffer_read(ctx, got, c_buf, m * ldc * el));
                long bad = 0;
                for (size_t i = 0; i < m; i++) {
                    for (size_t j = 0; j < n; j++) {
                        float fj = mx ? e.alpha : exact_f32(e.alpha * (nv ? w.tensor_scale : w.channel_scales[j]));
                        if (e.column_scale) fj = exact_f32(fj * cs[j]);
                        float v = exact_f32((float)acc[i * n + j] * fj);
                        if (e.bias) v = exact_f32(v + bias[j]);
                        if (e.beta != 0.0f) v = fmaf(e.beta, mm_load(ct, cin, i * ldc + j), v);
                        if (e.activation == QMM_ACT_RELU) v = v > 0.0f ? v : 0.0f;
                        uint8_t want[4];
                        mm_store(ct, want, 0, v);
                        if (memcmp(want, (char *)got + (i * ldc + j) * el, el) != 0 && bad++ < 3)
                            CHECK(0, "%s: C[%zu,%zu] = %.9g, want %.9g (acc %.1f)", label, i, j,
                                  (double)mm_load(ct, got, i * ldc + j), (double)mm_load(ct, want, 0), acc[i * n + j]);
                    }
                    /* the gap after the row was poison in C_in too and must still be */
                    CHECK(harness_all_bytes((char *)got + (i * ldc + n) * el, (ldc - n) * el, 0xff),
                          "%s: the gap after row %zu of C was written", label, i);
                }
                CHECK(bad == 0, "%s: %ld elements differ", label, bad);
            }
    }
    CHECK_OK(qmm_context_set_path(ctx, QMM_PATH_AUTO));
    for (int pad = 0; pad < 2; pad++) qmm_buffer_free(ctx, a_bufs[pad][0]), qmm_buffer_free(ctx, a_bufs[pad][1]);
    qmm_buffer_free(ctx, bias_buf), qmm_buffer_free(ctx, cs_buf), qmm_buffer_free(ctx, c_buf);
    qmm_weight_free(&w);
    free(q), free(af), free(ah), free(acc), free(bias), free(cs), free(cin), free(got);
}

static void test_exact_epilogue(void)
{
    exact_case(QMM_FORMAT_FP8_CHANNEL, 77, 333, 0);
    exact_case(QMM_FORMAT_NVFP4, 77, 333, 0);
    exact_case(QMM_FORMAT_MXFP4, 77, 333, 0);
    exact_case(QMM_FORMAT_MXFP4, 77, 333, 1);
    exact_case(QMM_FORMAT_FP8_CHANNEL, 45, 4133, 0);
    exact_case(QMM_FORMAT_NVFP4, 45, 4133, 0);
    exact_case(QMM_FORMAT_MXFP4, 45, 4133, 0);
}

#endif
