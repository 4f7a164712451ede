/* Hostile checkpoints for the tool tests (check_hostile.sh), written through the public writer:
 *   hostile_files corrupt IN OUT TENSOR OFFSET BYTE
 *       OUT is IN with byte OFFSET of tensor TENSOR's data set to BYTE (decimal or 0x..): an E4M3 NaN
 *       code, an E8M0 0xFF scale; every other tensor and the metadata copied as they are
 *   hostile_files names OUT
 *       a small bf16 checkpoint whose tensor names and metadata hold terminal control sequences (ESC,
 *       BEL, a C1 CSI as UTF-8), for the checks that the tool escapes what it prints */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qmm_io.h"

static int fail(const char *what)
{
    fprintf(stderr, "hostile_files: %s: %s\n", what, qmm_last_error());
    return 1;
}

static int corrupt(const char *in, const char *out, const char *tensor, size_t offset, unsigned byte)
{
    qmm_safetensors *f;
    qmm_safetensors_writer *w;
    if (qmm_safetensors_open(in, &f) != QMM_OK) return fail("open");
    if (qmm_safetensors_writer_create(out, QMM_WRITE_OVERWRITE, &w) != QMM_OK) {
        qmm_safetensors_close(f);
        return fail("create");
    }
    int rc = 0, found = 0;
    for (size_t i = 0; i < qmm_safetensors_metadata_count(f, 0) && rc == 0; i++) {
        const char *k, *v;
        qmm_safetensors_metadata_at(f, 0, i, &k, &v);
        if (qmm_safetensors_writer_set_metadata(w, k, v) != QMM_OK) rc = fail("metadata");
    }
    for (size_t i = 0; i < qmm_safetensors_tensor_count(f) && rc == 0; i++) {
        qmm_tensor_view v;
        qmm_safetensors_tensor_at(f, i, &v);
        unsigned char *data = malloc(v.bytes + 1);
        if (!data) return fail("out of memory");
        memcpy(data, v.data, v.bytes);
        if (strcmp(v.name, tensor) == 0) {
            if (offset >= v.bytes) {
                fprintf(stderr, "hostile_files: %s has %zu bytes, no byte %zu\n", tensor, v.bytes, offset);
                rc = 1;
            }
            else data[offset] = (unsigned char)byte;
            found = 1;
        }
        if (rc == 0 && qmm_safetensors_writer_add(w, v.name, v.dtype, v.ndim, v.shape, data, v.bytes) != QMM_OK)
            rc = fail("add");
        free(data);
    }
    if (rc == 0 && !found) {
        fprintf(stderr, "hostile_files: no tensor '%s' in %s\n", tensor, in);
        rc = 1;
    }
    if (rc == 0 && qmm_safetensors_writer_finish(w) != QMM_OK) rc = fail("finish");
    if (rc != 0) qmm_safetensors_writer_discard(w);
    qmm_safetensors_close(f);
    return rc;
}

static int names(const char *out)
{
    qmm_safetensors_writer *w;
    if (qmm_safetensors_writer_create(out, QMM_WRITE_OVERWRITE, &w) != QMM_OK) return fail("create");
    uint16_t data[16 * 32];
    for (size_t i = 0; i < sizeof data / sizeof data[0]; i++) data[i] = qmm_fp32_to_bf16((float)((int)(i % 13) - 6) * 0.01f);
    const size_t shape[2] = {16, 32};
    /* ESC [ 2 J clears a terminal, BEL rings it, U+009B (C2 9B) is CSI where C1 controls are honoured */
    static const char *const bad[3] = {"model.\x1b[2Jevil.weight", "model.bell\a.weight", "model.csi\xc2\x9b" "31m.weight"};
    int rc = 0;
    for (int i = 0; i < 3 && rc == 0; i++)
        if (qmm_safetensors_writer_add(w, bad[i], QMM_ST_BF16, 2, shape, data, sizeof data) != QMM_OK) rc = fail("add");
    if (rc == 0 && qmm_safetensors_writer_set_metadata(w, "key\x1b]0;title\a", "value\x1b[31m") != QMM_OK) rc = fail("metadata");
    if (rc == 0 && qmm_safetensors_writer_finish(w) != QMM_OK) rc = fail("finish");
    if (rc != 0) qmm_safetensors_writer_discard(w);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 7 && strcmp(argv[1], "corrupt") == 0)
        return corrupt(argv[2], argv[3], argv[4], strtoull(argv[5], NULL, 0), (unsigned)strtoul(argv[6], NULL, 0));
    if (argc == 3 && strcmp(argv[1], "names") == 0) return names(argv[2]);
    fprintf(stderr, "usage: hostile_files corrupt IN OUT TENSOR OFFSET BYTE | names OUT\n");
    return 2;
}
