/* A program built against an installed qmm: quantizes a small weight and multiplies it (qmm.h), opens a
 * safetensors file made in memory (qmm_io.h) and reads the machine's state (qmm_measure.h). */
#include <qmm.h>
#include <qmm_io.h>
#include <qmm_measure.h>
#include <stdio.h>
#include <string.h>

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
    /* the I/O header: a safetensors file built in memory, opened and read back */
    static const char header[] = "{\"w\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}";
    unsigned char file[8 + sizeof header + 2] = {0};
    file[0] = (unsigned char)(sizeof header - 1);
    memcpy(file + 8, header, sizeof header - 1);
    file[8 + sizeof header - 1] = 7;
    qmm_safetensors *f;
    qmm_tensor_view v;
    qmm_machine_state state;
    if (qmm_safetensors_open_memory(file, 8 + sizeof header - 1 + 2, &f) != QMM_OK ||
        qmm_safetensors_tensor_find(f, "w", &v) != QMM_OK || v.bytes != 2 || ((const unsigned char *)v.data)[0] != 7 ||
        qmm_context_machine_state(ctx, &state) != QMM_OK) {
        fprintf(stderr, "consumer: %s\n", qmm_last_error());
        return 1;
    }
    qmm_safetensors_close(f);
    printf("consumer: qmm %s, C = %g %g, %s tensor w, machine state %s\n", qmm_version(), c[0], c[1],
           qmm_st_dtype_name(v.dtype), state.known ? "known" : "not readable");
    qmm_context_destroy(ctx);
    qmm_weight_free(&w);
    return 0;
}
