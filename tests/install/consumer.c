/* A program built against an installed qmm: quantizes a small weight and multiplies it. */
#include <qmm.h>
#include <stdio.h>

int main(void)
{
    float w_src[2 * 16], a[16], c[2];
    for (int i = 0; i < 32; i++) w_src[i] = (float)(i % 7) - 3.0f;
    for (int i = 0; i < 16; i++) a[i] = 1.0f;
    qmm_weight w;
    qmm_context *ctx;
    qmm_context_options o;
    qmm_context_options_init(&o);
    o.backend = QMM_BACKEND_REFERENCE;
    if (qmm_weight_alloc(&w, QMM_FORMAT_NVFP4, 2, 16) != QMM_OK ||
        qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, w_src, 16, &w) != QMM_OK ||
        qmm_context_create(&o, &ctx) != QMM_OK ||
        qmm_matmul(ctx, 1, QMM_DTYPE_FP32, a, 16, &w, QMM_DTYPE_FP32, c, 2, NULL) != QMM_OK) {
        fprintf(stderr, "consumer: %s\n", qmm_last_error());
        return 1;
    }
    printf("consumer: qmm %s, C = %g %g\n", qmm_version(), c[0], c[1]);
    qmm_context_destroy(ctx);
    qmm_weight_free(&w);
    return 0;
}
