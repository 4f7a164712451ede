/* Writes a small model checkpoint for the tool tests, through the public writer:
 *   DIR/sharded/  two shards + model.safetensors.index.json + config.json + tokenizer.json + sub/extra.txt
 *   DIR/single.safetensors (and DIR/config.json beside it)
 *   DIR/experts.safetensors (bf16 experts (E, N, K)) and DIR/experts_mxfp4.safetensors (the same experts
 *   quantized to MXFP4 in the gpt-oss convention, *_blocks / *_scales), for `qmm verify` on experts
 *   DIR/bad/  the two shards and the index of sharded/ (other values), with a NaN in a weight of the
 *   second shard, which `qmm quantize` must refuse without leaving a shard behind
 * with Linear weights in bf16, fp16 and fp32, embeddings, norms, lm_head, a router, a 3-D tensor and
 * a weight with an odd K, seeded so every run writes the same bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "qmm_io.h"

static unsigned long long state = 42;
static const char *poison_name; /* the tensor whose first element add() makes a NaN */

static double uniform(void)
{
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return ((double)(state >> 11) + 0.5) * 0x1p-53;
}

static int add(qmm_safetensors_writer *w, const char *name, qmm_st_dtype dtype, size_t ndim, const size_t *shape)
{
    size_t count = 1;
    for (size_t i = 0; i < ndim; i++) count *= shape[i];
    const size_t esize = dtype == QMM_ST_F32 ? 4 : 2;
    unsigned char *data = malloc(count * esize + 1);
    for (size_t i = 0; i < count; i++) {
        float v = (float)((uniform() - 0.5) * 0.2 * (i % 97 == 0 ? 10.0 : 1.0));
        if (i == 0 && poison_name && strcmp(name, poison_name) == 0) v = __builtin_nanf("");
        if (dtype == QMM_ST_F32) memcpy(data + 4 * i, &v, 4);
        else {
            uint16_t h = dtype == QMM_ST_BF16 ? qmm_fp32_to_bf16(v) : qmm_fp32_to_fp16(v);
            memcpy(data + 2 * i, &h, 2);
        }
    }
    qmm_status st = qmm_safetensors_writer_add(w, name, dtype, ndim, shape, data, count * esize);
    free(data);
    if (st != QMM_OK) fprintf(stderr, "make_checkpoint: %s\n", qmm_last_error());
    return st == QMM_OK ? 0 : 1;
}

static int layer(qmm_safetensors_writer *w, int l)
{
    char name[128];
    const size_t sq[2] = {64, 64}, up[2] = {96, 64}, down[2] = {64, 96}, norm[1] = {64}, odd[2] = {8, 33};
    int rc = 0;
    snprintf(name, sizeof name, "model.layers.%d.input_layernorm.weight", l);
    rc |= add(w, name, QMM_ST_BF16, 1, norm);
    snprintf(name, sizeof name, "model.layers.%d.self_attn.q_proj.weight", l);
    rc |= add(w, name, QMM_ST_BF16, 2, sq);
    snprintf(name, sizeof name, "model.layers.%d.self_attn.q_proj.bias", l);
    rc |= add(w, name, QMM_ST_BF16, 1, norm);
    snprintf(name, sizeof name, "model.layers.%d.mlp.up_proj.weight", l);
    rc |= add(w, name, QMM_ST_F16, 2, up);
    snprintf(name, sizeof name, "model.layers.%d.mlp.down_proj.weight", l);
    rc |= add(w, name, QMM_ST_F32, 2, down);
    snprintf(name, sizeof name, "model.layers.%d.mlp.gate.weight", l);
    rc |= add(w, name, QMM_ST_BF16, 2, (const size_t[2]){4, 64});
    snprintf(name, sizeof name, "model.layers.%d.odd.weight", l);
    rc |= add(w, name, QMM_ST_BF16, 2, odd);
    return rc;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* DIR/SUB/: two shards (embeddings and layer 0; layer 1, norm, a 3-D tensor and lm_head) and their index. */
static int write_sharded(const char *dir, const char *sub)
{
    char path[1024];
    static const char *const shard_names[2] = {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"};
    const size_t emb[2] = {128, 64}, head[2] = {128, 64}, conv[3] = {4, 4, 8}, norm[1] = {64};
    int rc = 0;
    for (int s = 0; s < 2 && rc == 0; s++) {
        qmm_safetensors_writer *w;
        snprintf(path, sizeof path, "%s/%s/%s", dir, sub, shard_names[s]);
        if (qmm_safetensors_writer_create(path, QMM_WRITE_OVERWRITE, &w) != QMM_OK) return 1;
        qmm_safetensors_writer_set_metadata(w, "format", "pt");
        if (s == 0) {
            rc |= add(w, "model.embed_tokens.weight", QMM_ST_BF16, 2, emb);
            rc |= layer(w, 0);
        } else {
            rc |= layer(w, 1);
            rc |= add(w, "model.norm.weight", QMM_ST_BF16, 1, norm);
            rc |= add(w, "model.conv.weight", QMM_ST_BF16, 3, conv);
            rc |= add(w, "lm_head.weight", QMM_ST_BF16, 2, head);
        }
        if (qmm_safetensors_writer_finish(w) != QMM_OK) rc = 1;
    }
    /* the index, from what the shards hold */
    qmm_safetensors *f;
    const char *tn[64], *sn[64];
    size_t count = 0;
    for (int s = 0; s < 2 && rc == 0; s++) {
        char p[1024];
        snprintf(p, sizeof p, "%s/%s/%s", dir, sub, shard_names[s]);
        if (qmm_safetensors_open(p, &f) != QMM_OK) return 1;
        for (size_t i = 0; i < qmm_safetensors_tensor_count(f) && count < 64; i++) {
            qmm_tensor_view v;
            qmm_safetensors_tensor_at(f, i, &v);
            tn[count] = strdup(v.name);
            sn[count++] = shard_names[s];
        }
        qmm_safetensors_close(f);
    }
    snprintf(path, sizeof path, "%s/%s/model.safetensors.index.json", dir, sub);
    if (rc == 0 && qmm_safetensors_index_write(path, tn, sn, count, 0, QMM_WRITE_OVERWRITE) != QMM_OK) rc = 1;
    for (size_t i = 0; i < count; i++) free((void *)tn[i]);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_checkpoint DIR\n");
        return 2;
    }
    char path[1024];
    const char *dir = argv[1];
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/sharded", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/sharded/sub", dir);
    mkdir(path, 0755);
    static const char config[] = "{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 64\n}\n";
    snprintf(path, sizeof path, "%s/sharded/config.json", dir);
    write_text(path, config);
    snprintf(path, sizeof path, "%s/config.json", dir);
    write_text(path, config);
    snprintf(path, sizeof path, "%s/sharded/tokenizer.json", dir);
    write_text(path, "{\"version\": \"1.0\"}\n");
    snprintf(path, sizeof path, "%s/sharded/sub/extra.txt", dir);
    write_text(path, "copied as it is\n");

    int rc = write_sharded(dir, "sharded");
    /* a single file */
    const size_t emb[2] = {128, 64}, head[2] = {128, 64};
    qmm_safetensors_writer *w;
    snprintf(path, sizeof path, "%s/single.safetensors", dir);
    if (rc == 0 && qmm_safetensors_writer_create(path, QMM_WRITE_OVERWRITE, &w) == QMM_OK) {
        rc |= add(w, "model.embed_tokens.weight", QMM_ST_BF16, 2, emb);
        rc |= layer(w, 0);
        rc |= add(w, "lm_head.weight", QMM_ST_F32, 2, head);
        if (qmm_safetensors_writer_finish(w) != QMM_OK) rc = 1;
    }
    /* experts: the same bf16 values in the original file and, quantized, in the gpt-oss convention */
    enum { E = 3, N = 16, K = 64 };
    uint16_t *ew = malloc(E * N * K * sizeof *ew);
    qmm_weight q[E];
    int made = 0;
    for (size_t i = 0; ew && i < E * N * K; i++) ew[i] = qmm_fp32_to_bf16((float)((uniform() - 0.5) * 0.1));
    for (; ew && rc == 0 && made < E; made++)
        if (qmm_weight_alloc(&q[made], QMM_FORMAT_MXFP4, N, K) != QMM_OK ||
            qmm_quantize(QMM_RECIPE_MXFP4_RCEIL, QMM_DTYPE_BF16, ew + (size_t)made * N * K, K, &q[made]) != QMM_OK)
            rc = 1;
    const size_t eshape[3] = {E, N, K};
    snprintf(path, sizeof path, "%s/experts.safetensors", dir);
    if (rc == 0 && qmm_safetensors_writer_create(path, QMM_WRITE_OVERWRITE, &w) == QMM_OK) {
        if (qmm_safetensors_writer_add(w, "model.layers.0.mlp.experts.gate_up_proj", QMM_ST_BF16, 3, eshape, ew,
                                       E * N * K * 2) != QMM_OK)
            rc = 1;
        if (qmm_safetensors_writer_finish(w) != QMM_OK) rc = 1;
    }
    snprintf(path, sizeof path, "%s/experts_mxfp4.safetensors", dir);
    if (rc == 0 && qmm_safetensors_writer_create(path, QMM_WRITE_OVERWRITE, &w) == QMM_OK) {
        if (qmm_safetensors_writer_add_experts(w, "model.layers.0.mlp.experts.gate_up_proj", q, E) != QMM_OK) rc = 1;
        if (qmm_safetensors_writer_finish(w) != QMM_OK) rc = 1;
    }
    for (int i = 0; i < made; i++) qmm_weight_free(&q[i]);
    free(ew);
    /* last, so that the files above keep their bytes */
    snprintf(path, sizeof path, "%s/bad", dir);
    mkdir(path, 0755);
    poison_name = "model.layers.1.self_attn.q_proj.weight";
    if (rc == 0) rc = write_sharded(dir, "bad");
    poison_name = NULL;
    if (rc) fprintf(stderr, "make_checkpoint: failed: %s\n", qmm_last_error());
    return rc;
}
