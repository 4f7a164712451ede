/* libFuzzer target for the safetensors reader. The first byte chooses what the rest is:
 *   0: a whole file, opened from memory as it is;
 *   1: a header: two bytes of data length d, then the header text, wrapped into a file with a correct
 *      8-byte length and d bytes of data, so the fuzzer explores the JSON and the entry checks instead
 *      of the length field;
 *   2: JSON text for the parser alone.
 * Whatever opens is then walked completely: every byte of every tensor, the metadata, and the
 * checkpoint conventions of every name, so an out-of-bounds view shows up under AddressSanitizer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/io/json.h"
#include "qmm_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(const qmm_safetensors *f)
{
    volatile unsigned sum = 0;
    for (size_t i = 0; i < qmm_safetensors_tensor_count(f); i++) {
        qmm_tensor_view v;
        if (qmm_safetensors_tensor_at(f, i, &v) != QMM_OK) abort();
        for (size_t b = 0; b < v.bytes; b++) sum += ((const uint8_t *)v.data)[b];
        for (size_t d = 0; d < v.ndim; d++) sum += (unsigned)v.shape[d];
        sum += (unsigned)strlen(v.name);
        qmm_tensor_view again;
        if (qmm_safetensors_tensor_find(f, v.name, &again) != QMM_OK || again.data != v.data) abort();
        /* The name as a module, and with the conventions' suffixes cut off. */
        static const char *const suffixes[] = {".weight", ".weight_scale", "_blocks", "_scales"};
        size_t len = strlen(v.name);
        for (size_t s = 0; s < 4; s++) {
            size_t sl = strlen(suffixes[s]);
            if (len < sl || strcmp(v.name + len - sl, suffixes[s]) != 0) continue;
            char *module = malloc(len - sl + 1);
            memcpy(module, v.name, len - sl);
            module[len - sl] = '\0';
            qmm_checkpoint_weight info;
            if (qmm_checkpoint_weight_info(f, module, &info) == QMM_OK && info.n * info.k <= (1u << 20)) {
                qmm_weight w;
                if (qmm_checkpoint_weight_load(f, module, info.count - 1, &w) == QMM_OK) {
                    float *out = malloc(info.n * info.k * sizeof *out);
                    if (out) qmm_dequantize(&w, 0, QMM_DTYPE_FP32, out, info.k);
                    free(out);
                    qmm_weight_free(&w);
                }
            }
            free(module);
        }
    }
    for (size_t s = 0; s < qmm_safetensors_shard_count(f); s++)
        for (size_t i = 0; i < qmm_safetensors_metadata_count(f, s); i++) {
            const char *k, *val;
            if (qmm_safetensors_metadata_at(f, s, i, &k, &val) != QMM_OK) abort();
            sum += (unsigned)(strlen(k) + strlen(val));
        }
    (void)sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const uint8_t mode = data[0] % 3;
    data++, size--;
    if (mode == 2) {
        qmm__json doc;
        if (qmm__json_parse("fuzz", "json", (const char *)data, size, &doc) == QMM_OK) {
            const char *dup;
            for (size_t i = 0; i < doc.count; i++)
                if (doc.v[i].type == QMM__JSON_OBJECT) (void)qmm__json_has_duplicate_key(&doc, i, &dup);
            qmm__json_free(&doc);
        }
        return 0;
    }
    const uint8_t *file = data;
    uint8_t *built = NULL;
    if (mode == 1) {
        if (size < 2) return 0;
        const size_t d = (size_t)data[0] | (size_t)data[1] << 8, h = size - 2;
        built = malloc(8 + h + d);
        if (!built) return 0;
        for (int i = 0; i < 8; i++) built[i] = (uint8_t)((uint64_t)h >> (8 * i));
        memcpy(built + 8, data + 2, h);
        for (size_t i = 0; i < d; i++) built[8 + h + i] = (uint8_t)(i * 37);
        file = built;
        size = 8 + h + d;
    }
    qmm_safetensors *f = NULL;
    if (qmm_safetensors_open_memory(file, size, &f) == QMM_OK) {
        walk(f);
        qmm_safetensors_close(f);
    }
    free(built);
    return 0;
}
