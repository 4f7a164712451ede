/* Checkpoint conventions: a weight of every format written with qmm_safetensors_writer_add_weight()
 * (and gpt-oss experts with _add_experts()) reloads bit for bit and is recognised by
 * qmm_checkpoint_weight_info(); inconsistent tensors are rejected; hf_quant_config.json and config.json
 * are written and read back. */
#include "io_harness.h"

static void random_weight(float *w, size_t count)
{
    for (size_t i = 0; i < count; i++) w[i] = (float)(harness_normal() * (harness_next() % 17 == 0 ? 8.0 : 0.05));
}

static int same_weight(const qmm_weight *a, const qmm_weight *b)
{
    qmm_weight_size s;
    if (qmm_weight_size_query(a->format, QMM_SCALE_LAYOUT_CANONICAL, a->n, a->k, &s) != QMM_OK) return 0;
    if (a->format != b->format || a->n != b->n || a->k != b->k) return 0;
    if (memcmp(a->data, b->data, s.data_bytes) != 0) return 0;
    if (s.block_scale_bytes && memcmp(a->block_scales, b->block_scales, s.block_scale_bytes) != 0) return 0;
    if (s.channel_scale_count && memcmp(a->channel_scales, b->channel_scales, 4 * s.channel_scale_count) != 0) return 0;
    qmm_format_traits t;
    qmm_format_get_traits(a->format, &t);
    return t.global_scale != QMM_GLOBAL_SCALE_TENSOR || harness_bits(a->tensor_scale) == harness_bits(b->tensor_scale);
}

static int count_progress(void *user, const qmm_checkpoint_progress *p)
{
    int *calls = user;
    CHECK(p->total == 1 && p->done == (size_t)*calls && p->name != NULL, "progress %zu of %zu", p->done, p->total);
    ++*calls;
    return 0;
}

/* asks to stop at its second call (after the first tensor) */
static int stop_progress(void *user, const qmm_checkpoint_progress *p)
{
    (void)user;
    return p->done > 0;
}

static void test_round_trip_formats(void)
{
    static const qmm_format formats[] = {QMM_FORMAT_NVFP4, QMM_FORMAT_MXFP4, QMM_FORMAT_FP8_TENSOR, QMM_FORMAT_FP8_CHANNEL,
                                         QMM_FORMAT_BF16};
    static const size_t shapes[][2] = {{1, 2}, {3, 64}, {17, 100}, {64, 288}};
    const char *path = io_path("formats.safetensors");
    qmm_weight q[5][4];
    qmm_safetensors_writer *w;
    CHECK_OK(qmm_safetensors_writer_create(path, QMM_WRITE_OVERWRITE, &w));
    char name[64];
    for (size_t f = 0; f < 5; f++)
        for (size_t s = 0; s < 4; s++) {
            const size_t n = shapes[s][0], k = shapes[s][1];
            float *src = malloc(n * k * sizeof *src);
            random_weight(src, n * k);
            CHECK_OK(qmm_weight_alloc(&q[f][s], formats[f], n, k));
            CHECK_OK(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src, k, &q[f][s]));
            snprintf(name, sizeof name, "model.layers.%zu.f%zu.proj", s, f);
            CHECK_OK(qmm_safetensors_writer_add_weight(w, name, &q[f][s]));
            free(src);
        }
    /* an activation scale, as modelopt writes one */
    const float in_scale = 0.125f;
    CHECK_OK(qmm_safetensors_writer_add(w, "model.layers.0.f0.proj.input_scale", QMM_ST_F32, 0, NULL, &in_scale, 4));
    /* adding a weight whose tensor names are taken fails and adds nothing */
    CHECK_STATUS(qmm_safetensors_writer_add_weight(w, "model.layers.0.f0.proj", &q[0][0]), QMM_ERR_INVALID_ARGUMENT);
    qmm_weight bad = q[0][0];
    bad.scale_layout = QMM_SCALE_LAYOUT_NV_BLOCKED;
    CHECK_STATUS(qmm_safetensors_writer_add_weight(w, "other", &bad), QMM_ERR_BUFFER_TOO_SMALL);
    bad = q[0][0];
    bad.data = NULL;
    CHECK_STATUS(qmm_safetensors_writer_add_weight(w, "other", &bad), QMM_ERR_INVALID_WEIGHT);
    CHECK_OK(qmm_safetensors_writer_finish(w));

    qmm_safetensors *f = NULL;
    CHECK_OK(qmm_safetensors_open(path, &f));
    if (!f) return;
    CHECK(qmm_safetensors_tensor_count(f) == 4 * (3 + 2 + 2 + 2 + 1) + 1, "tensor count %zu", qmm_safetensors_tensor_count(f));
    for (size_t fi = 0; fi < 5; fi++)
        for (size_t s = 0; s < 4; s++) {
            snprintf(name, sizeof name, "model.layers.%zu.f%zu.proj", s, fi);
            qmm_checkpoint_weight info;
            CHECK_OK(qmm_checkpoint_weight_info(f, name, &info));
            const size_t n = shapes[s][0], k = shapes[s][1];
            CHECK(info.format == formats[fi] && info.n == n && info.k == k && info.count == 1, "%s: info %d %zu x %zu",
                  name, (int)info.format, info.n, info.k);
            CHECK(info.has_input_scale == (fi == 0 && s == 0), "%s: input scale", name);
            if (info.has_input_scale) CHECK(info.input_scale == 0.125f, "input scale value");
            qmm_weight back;
            CHECK_OK(qmm_checkpoint_weight_load(f, name, 0, &back));
            CHECK(same_weight(&q[fi][s], &back), "%s reloads bit for bit", name);
            qmm_weight_free(&back);
            CHECK_STATUS(qmm_checkpoint_weight_load(f, name, 1, &back), QMM_ERR_INVALID_ARGUMENT);
        }
    /* the tensors follow the conventions */
    qmm_tensor_view v;
    CHECK_OK(qmm_safetensors_tensor_find(f, "model.layers.2.f0.proj.weight_scale", &v));
    CHECK(v.dtype == QMM_ST_F8_E4M3 && v.ndim == 2 && v.shape[0] == 17 && v.shape[1] == 7, "nvfp4 weight_scale (N, K/16)");
    CHECK_OK(qmm_safetensors_tensor_find(f, "model.layers.2.f0.proj.weight_scale_2", &v));
    CHECK(v.dtype == QMM_ST_F32 && v.ndim == 0, "nvfp4 weight_scale_2 scalar");
    CHECK_OK(qmm_safetensors_tensor_find(f, "model.layers.2.f1.proj.weight", &v));
    CHECK(v.dtype == QMM_ST_U8 && v.shape[0] == 17 && v.shape[1] == 50, "mxfp4 weight U8 (N, K/2)");
    CHECK_OK(qmm_safetensors_tensor_find(f, "model.layers.2.f1.proj.weight_scale", &v));
    CHECK(v.dtype == QMM_ST_U8 && v.shape[1] == 4, "mxfp4 weight_scale U8 (N, K/32)");
    CHECK_OK(qmm_safetensors_tensor_find(f, "model.layers.2.f3.proj.weight_scale", &v));
    CHECK(v.dtype == QMM_ST_F32 && v.ndim == 2 && v.shape[0] == 17 && v.shape[1] == 1, "fp8 channel scales (N, 1)");
    qmm_checkpoint_weight info;
    CHECK_STATUS(qmm_checkpoint_weight_info(f, "nothing", &info), QMM_ERR_NOT_FOUND);
    CHECK_STATUS(qmm_checkpoint_weight_info(f, NULL, &info), QMM_ERR_NULL_POINTER);
    qmm_safetensors_close(f);
    for (size_t fi = 0; fi < 5; fi++)
        for (size_t s = 0; s < 4; s++) qmm_weight_free(&q[fi][s]);
}

static void test_experts(void)
{
    enum { E = 3, N = 5, K = 96 };
    qmm_weight q[E];
    for (int e = 0; e < E; e++) {
        float src[N * K];
        random_weight(src, N * K);
        CHECK_OK(qmm_weight_alloc(&q[e], QMM_FORMAT_MXFP4, N, K));
        CHECK_OK(qmm_quantize(QMM_RECIPE_MXFP4_RCEIL, QMM_DTYPE_FP32, src, K, &q[e]));
    }
    const char *path = io_path("experts.safetensors");
    qmm_safetensors_writer *w;
    CHECK_OK(qmm_safetensors_writer_create(path, QMM_WRITE_OVERWRITE, &w));
    CHECK_OK(qmm_safetensors_writer_add_experts(w, "model.layers.0.mlp.experts.gate_up_proj", q, E));
    CHECK_STATUS(qmm_safetensors_writer_add_experts(w, "x", q, 0), QMM_ERR_INVALID_SIZE);
    qmm_weight odd;
    CHECK_OK(qmm_weight_alloc(&odd, QMM_FORMAT_MXFP4, N, 40));
    float src40[N * 40];
    random_weight(src40, N * 40);
    CHECK_OK(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src40, 40, &odd));
    CHECK_STATUS(qmm_safetensors_writer_add_experts(w, "y", &odd, 1), QMM_ERR_UNSUPPORTED);
    qmm_weight mixed[2] = {q[0], odd};
    CHECK_STATUS(qmm_safetensors_writer_add_experts(w, "z", mixed, 2), QMM_ERR_INVALID_WEIGHT);
    qmm_weight_free(&odd);
    CHECK_OK(qmm_safetensors_writer_finish(w));
    qmm_safetensors *f = NULL;
    CHECK_OK(qmm_safetensors_open(path, &f));
    if (!f) return;
    CHECK(qmm_safetensors_tensor_count(f) == 2, "blocks and scales only");
    qmm_tensor_view v;
    CHECK_OK(qmm_safetensors_tensor_find(f, "model.layers.0.mlp.experts.gate_up_proj_blocks", &v));
    CHECK(v.dtype == QMM_ST_U8 && v.ndim == 4 && v.shape[0] == E && v.shape[1] == N && v.shape[2] == K / 32 && v.shape[3] == 16,
          "blocks (E, N, K/32, 16)");
    CHECK_OK(qmm_safetensors_tensor_find(f, "model.layers.0.mlp.experts.gate_up_proj_scales", &v));
    CHECK(v.ndim == 3 && v.shape[0] == E && v.shape[2] == K / 32, "scales (E, N, K/32)");
    qmm_checkpoint_weight info;
    CHECK_OK(qmm_checkpoint_weight_info(f, "model.layers.0.mlp.experts.gate_up_proj", &info));
    CHECK(info.format == QMM_FORMAT_MXFP4 && info.count == E && info.n == N && info.k == K, "experts info");
    for (int e = 0; e < E; e++) {
        qmm_weight back;
        CHECK_OK(qmm_checkpoint_weight_load(f, "model.layers.0.mlp.experts.gate_up_proj", (size_t)e, &back));
        CHECK(same_weight(&q[e], &back), "expert %d reloads bit for bit", e);
        qmm_weight_free(&back);
    }
    qmm_weight back;
    CHECK_STATUS(qmm_checkpoint_weight_load(f, "model.layers.0.mlp.experts.gate_up_proj", E, &back), QMM_ERR_INVALID_ARGUMENT);
    /* the stack as one weight: a view of the file's bytes, and a copy; each expert as written */
    qmm_weight view, stack;
    CHECK_OK(qmm_checkpoint_experts_view(f, "model.layers.0.mlp.experts.gate_up_proj", &view));
    CHECK_OK(qmm_checkpoint_experts_load(f, "model.layers.0.mlp.experts.gate_up_proj", &stack));
    CHECK(view.experts == E && view.n == N && view.k == K && stack.experts == E, "stack shape");
    CHECK_OK(qmm_checkpoint_weight_info(f, "model.layers.0.mlp.experts.gate_up_proj", &info));
    CHECK_OK(qmm_safetensors_tensor_find(f, "model.layers.0.mlp.experts.gate_up_proj_blocks", &v));
    CHECK((const void *)view.data == v.data, "the view reads the file's bytes in place");
    for (int e = 0; e < E; e++) {
        CHECK(memcmp(view.data + (size_t)e * q[e].data_bytes, q[e].data, q[e].data_bytes) == 0 &&
              memcmp(stack.data + (size_t)e * q[e].data_bytes, q[e].data, q[e].data_bytes) == 0 &&
              memcmp(stack.block_scales + (size_t)e * q[e].block_scale_bytes, q[e].block_scales, q[e].block_scale_bytes) == 0,
              "expert %d of the stack", e);
    }
    qmm_weight_free(&stack);
    CHECK_STATUS(qmm_checkpoint_experts_view(f, "nothing", &view), QMM_ERR_NOT_FOUND);
    qmm_safetensors_close(f);
    for (int e = 0; e < E; e++) qmm_weight_free(&q[e]);
}

/* Experts stored one by one (modelopt: PREFIX.experts.I.PROJ) gathered into a stack by their pattern. */
static void test_experts_one_by_one(void)
{
    enum { E = 4, N = 6, K = 48 };
    const qmm_format formats[3] = {QMM_FORMAT_NVFP4, QMM_FORMAT_FP8_CHANNEL, QMM_FORMAT_FP8_TENSOR};
    for (int fi = 0; fi < 3; fi++) {
        qmm_weight q[E];
        const char *path = io_path("experts_modelopt.safetensors");
        qmm_safetensors_writer *w;
        CHECK_OK(qmm_safetensors_writer_create(path, QMM_WRITE_OVERWRITE, &w));
        for (int e = 0; e < E; e++) {
            float src[N * K];
            random_weight(src, N * K);
            for (int i = 0; i < N * K; i++) src[i] *= (float)(e + 1);
            CHECK_OK(qmm_weight_alloc(&q[e], formats[fi], N, K));
            CHECK_OK(qmm_quantize(QMM_RECIPE_DEFAULT, QMM_DTYPE_FP32, src, K, &q[e]));
            char name[64];
            snprintf(name, sizeof name, "model.layers.1.mlp.experts.%d.down_proj", e);
            CHECK_OK(qmm_safetensors_writer_add_weight(w, name, &q[e]));
        }
        CHECK_OK(qmm_safetensors_writer_finish(w));
        qmm_safetensors *f = NULL;
        CHECK_OK(qmm_safetensors_open(path, &f));
        if (!f) return;
        qmm_weight st;
        CHECK_OK(qmm_checkpoint_experts_load(f, "model.layers.1.mlp.experts.*.down_proj", &st));
        CHECK(st.experts == E && st.format == formats[fi] && st.n == N && st.k == K, "gathered stack");
        for (int e = 0; e < E; e++) {
            CHECK(memcmp(st.data + (size_t)e * q[e].data_bytes, q[e].data, q[e].data_bytes) == 0, "expert %d data", e);
            if (st.tensor_scales) CHECK(st.tensor_scales[e] == q[e].tensor_scale, "expert %d tensor scale", e);
            if (st.channel_scales) CHECK(memcmp(st.channel_scales + e * N, q[e].channel_scales, N * 4) == 0, "channels %d", e);
            qmm_weight_free(&q[e]);
        }
        qmm_weight_free(&st);
        qmm_weight none;
        CHECK_STATUS(qmm_checkpoint_experts_load(f, "model.layers.1.mlp.experts.*.up_proj", &none), QMM_ERR_NOT_FOUND);
        CHECK_STATUS(qmm_checkpoint_experts_load(f, "model.*.mlp.experts.*.down_proj", &none), QMM_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(qmm_checkpoint_experts_view(f, "model.layers.1.mlp.experts.0.down_proj", &none), QMM_ERR_UNSUPPORTED);
        qmm_safetensors_close(f);
    }
}

/* A checkpoint built tensor by tensor, to break the conventions one way at a time. */
static void expect_convention(const char *what, qmm_status expected, const char *n1, qmm_st_dtype d1, size_t nd1,
                              const size_t *s1, const char *n2, qmm_st_dtype d2, size_t nd2, const size_t *s2)
{
    qmm_safetensors_writer *w;
    const char *path = io_path("conv.safetensors");
    CHECK_OK(qmm_safetensors_writer_create(path, QMM_WRITE_OVERWRITE, &w));
    static uint8_t zeros[1 << 12];
    size_t e1 = 1, e2 = 1;
    for (size_t i = 0; i < nd1; i++) e1 *= s1[i];
    for (size_t i = 0; i < nd2; i++) e2 *= s2[i];
    CHECK_OK(qmm_safetensors_writer_add(w, n1, d1, nd1, s1, zeros, e1 * (size_t)qmm_st_dtype_bits(d1) / 8));
    if (n2) CHECK_OK(qmm_safetensors_writer_add(w, n2, d2, nd2, s2, zeros, e2 * (size_t)qmm_st_dtype_bits(d2) / 8));
    CHECK_OK(qmm_safetensors_writer_finish(w));
    qmm_safetensors *f;
    CHECK_OK(qmm_safetensors_open(path, &f));
    qmm_checkpoint_weight info;
    qmm_status st = qmm_checkpoint_weight_info(f, "m", &info);
    CHECK(st == expected, "%s: status %d (%s), expected %d", what, (int)st, qmm_last_error(), (int)expected);
    qmm_safetensors_close(f);
}

static void test_bad_conventions(void)
{
    const size_t w2[2] = {4, 8}, s2[2] = {4, 1}, s3[2] = {4, 2}, v1[1] = {4}, b4[4] = {2, 4, 1, 16}, b3[3] = {2, 4, 2},
                 one[1] = {1};
    expect_convention("U8 weight without scales", QMM_ERR_MALFORMED, "m.weight", QMM_ST_U8, 2, w2, NULL, 0, 0, NULL);
    expect_convention("NVFP4 without weight_scale_2", QMM_ERR_MALFORMED, "m.weight", QMM_ST_U8, 2, w2, "m.weight_scale",
                      QMM_ST_F8_E4M3, 2, s2);
    expect_convention("MXFP4 scales of the wrong shape", QMM_ERR_MALFORMED, "m.weight", QMM_ST_U8, 2, w2, "m.weight_scale",
                      QMM_ST_U8, 2, s3);
    expect_convention("MXFP4 dense", QMM_OK, "m.weight", QMM_ST_U8, 2, w2, "m.weight_scale", QMM_ST_F8_E8M0, 2, s2);
    expect_convention("scale of another dtype", QMM_ERR_MALFORMED, "m.weight", QMM_ST_U8, 2, w2, "m.weight_scale",
                      QMM_ST_F16, 2, s2);
    expect_convention("FP8 without scale", QMM_ERR_MALFORMED, "m.weight", QMM_ST_F8_E4M3, 2, w2, NULL, 0, 0, NULL);
    expect_convention("FP8 channel scales (N)", QMM_OK, "m.weight", QMM_ST_F8_E4M3, 2, w2, "m.weight_scale", QMM_ST_F32, 1, v1);
    expect_convention("FP8 scale [1]", QMM_OK, "m.weight", QMM_ST_F8_E4M3, 2, w2, "m.weight_scale", QMM_ST_F32, 1, one);
    expect_convention("FP8 scale of the wrong shape", QMM_ERR_MALFORMED, "m.weight", QMM_ST_F8_E4M3, 2, w2,
                      "m.weight_scale", QMM_ST_F32, 2, s3);
    expect_convention("F32 weight", QMM_ERR_UNSUPPORTED, "m.weight", QMM_ST_F32, 2, w2, NULL, 0, 0, NULL);
    expect_convention("1-D weight", QMM_ERR_MALFORMED, "m.weight", QMM_ST_BF16, 1, v1, NULL, 0, 0, NULL);
    expect_convention("blocks without scales", QMM_ERR_MALFORMED, "m_blocks", QMM_ST_U8, 4, b4, NULL, 0, 0, NULL);
    expect_convention("blocks and scales disagree", QMM_ERR_MALFORMED, "m_blocks", QMM_ST_U8, 4, b4, "m_scales", QMM_ST_U8, 3, b3);
    /* a NaN tensor scale */
    qmm_safetensors_writer *w;
    const char *path = io_path("nan.safetensors");
    CHECK_OK(qmm_safetensors_writer_create(path, QMM_WRITE_OVERWRITE, &w));
    uint8_t data[32] = {0};
    float nan = NAN;
    CHECK_OK(qmm_safetensors_writer_add(w, "m.weight", QMM_ST_F8_E4M3, 2, w2, data, 32));
    CHECK_OK(qmm_safetensors_writer_add(w, "m.weight_scale", QMM_ST_F32, 0, NULL, &nan, 4));
    CHECK_OK(qmm_safetensors_writer_finish(w));
    qmm_safetensors *f;
    CHECK_OK(qmm_safetensors_open(path, &f));
    qmm_weight q;
    harness_poison(&q, sizeof q);
    CHECK_STATUS(qmm_checkpoint_weight_load(f, "m", 0, &q), QMM_ERR_MALFORMED);
    CHECK(harness_all_bytes(&q, sizeof q, 0xff), "nothing written on failure");
    qmm_safetensors_close(f);
}

static void test_quant_config(void)
{
    static const char src[] = "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"hidden_size\": 64\n}\n";
    static const char src_old[] = "{\"a\": 1, \"quantization_config\": {\"quant_method\": \"gptq\"}, \"z\": [1, 2]}";
    io_write(io_path("src_config.json"), src, strlen(src));
    io_write(io_path("src_old.json"), src_old, strlen(src_old));
    static const qmm_format formats[] = {QMM_FORMAT_NVFP4, QMM_FORMAT_MXFP4, QMM_FORMAT_FP8_TENSOR, QMM_FORMAT_FP8_CHANNEL};
    static const char *const algos[] = {"NVFP4", "MXFP4", "FP8", "FP8_PER_CHANNEL_PER_TOKEN"};
    static const int groups[] = {16, 32, 0, 0};
    const char *exclude[2] = {"lm_head", "model.embed_tokens"};
    for (int i = 0; i < 4; i++) {
        char dir[600];
        snprintf(dir, sizeof dir, "%s/cfg%d", io_dir, i);
        mkdir(dir, 0755);
        CHECK_OK(qmm_quant_config_write(dir, formats[i], exclude, 2, io_path("src_config.json"), 0));
        CHECK_STATUS(qmm_quant_config_write(dir, formats[i], exclude, 2, NULL, 0), QMM_ERR_EXISTS);
        qmm_quant_config c;
        CHECK_OK(qmm_quant_config_read(dir, &c));
        CHECK(c.format == formats[i] && c.group_size == groups[i] && strcmp(c.quant_algo, algos[i]) == 0 &&
                  c.exclude_count == 2 && strcmp(c.source, "hf_quant_config.json") == 0,
              "hf_quant_config.json of %s", algos[i]);
        /* config.json alone: keeps the source text, adds quantization_config */
        char hf[700];
        snprintf(hf, sizeof hf, "%s/hf_quant_config.json", dir);
        unlink(hf);
        CHECK_OK(qmm_quant_config_read(dir, &c));
        CHECK(strcmp(c.source, "config.json") == 0 && c.format == (formats[i] == QMM_FORMAT_FP8_CHANNEL ? QMM_FORMAT_FP8_CHANNEL
                                                                                                       : formats[i]),
              "config.json of %s", algos[i]);
        char cfg[700];
        snprintf(cfg, sizeof cfg, "%s/config.json", dir);
        size_t size;
        unsigned char *text = io_read(cfg, &size);
        CHECK(text && memcmp(text, src, 62) == 0, "config.json keeps the source members");
        CHECK(text && strstr((char *)text, i == 1 ? "\"quant_method\": \"mxfp4\"" : "\"quant_method\": \"modelopt\""),
              "quant_method of %s", algos[i]);
        free(text);
    }
    /* an existing quantization_config is replaced, the rest kept */
    char dir[600];
    snprintf(dir, sizeof dir, "%s/cfg_old", io_dir);
    mkdir(dir, 0755);
    CHECK_OK(qmm_quant_config_write(dir, QMM_FORMAT_NVFP4, NULL, 0, io_path("src_old.json"), 0));
    char cfg[700];
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    size_t size;
    unsigned char *text = io_read(cfg, &size);
    CHECK(text && strncmp((char *)text, "{\"a\": 1, \"quantization_config\": {", 33) == 0 && !strstr((char *)text, "gptq") &&
              strstr((char *)text, "}, \"z\": [1, 2]}"),
          "quantization_config replaced in place: %s", text ? (char *)text : "(none)");
    free(text);
    /* errors */
    qmm_quant_config c;
    CHECK_STATUS(qmm_quant_config_read(io_path("nowhere"), &c), QMM_ERR_NOT_FOUND);
    CHECK_STATUS(qmm_quant_config_write(dir, QMM_FORMAT_BF16, NULL, 0, NULL, QMM_WRITE_OVERWRITE), QMM_ERR_INVALID_ENUM);
    CHECK_STATUS(qmm_quant_config_write(dir, (qmm_format)42, NULL, 0, NULL, QMM_WRITE_OVERWRITE), QMM_ERR_INVALID_ENUM);
    CHECK_STATUS(qmm_quant_config_write(dir, QMM_FORMAT_NVFP4, NULL, 1, NULL, QMM_WRITE_OVERWRITE), QMM_ERR_NULL_POINTER);
    io_write(io_path("array.json"), "[1]", 3);
    CHECK_STATUS(qmm_quant_config_write(dir, QMM_FORMAT_NVFP4, NULL, 0, io_path("array.json"), QMM_WRITE_OVERWRITE),
                 QMM_ERR_MALFORMED);
    snprintf(dir, sizeof dir, "%s/cfg_bad", io_dir);
    mkdir(dir, 0755);
    char hf[700];
    snprintf(hf, sizeof hf, "%s/hf_quant_config.json", dir);
    io_write(hf, "{\"quantization\": {\"quant_algo\": \"W4A16_AWQ\"}}", 45);
    CHECK_STATUS(qmm_quant_config_read(dir, &c), QMM_ERR_UNSUPPORTED);
    io_write(hf, "{\"quantization\": {\"quant_algo\": \"NVFP4\", \"group_size\": \"16\"}}", 61);
    CHECK_STATUS(qmm_quant_config_read(dir, &c), QMM_ERR_MALFORMED);
    io_write(hf, "{\"quantization\": ", 17);
    CHECK_STATUS(qmm_quant_config_read(dir, &c), QMM_ERR_MALFORMED);
}

/* qmm_checkpoint_quantize's argument checks; the command line's hostile cases are in tool/check_hostile.sh. */
static void test_quantize_arguments(void)
{
    qmm_checkpoint_quantize_options o;
    qmm_checkpoint_quantize_options_init(&o);
    CHECK(o.format == 0 && o.recipe == QMM_RECIPE_DEFAULT && o.threads == 0 && o.flags == 0 && !o.progress, "defaults");
    qmm_checkpoint_quantize_result r;
    memset(&r, 0xff, sizeof r);
    const char *in = io_path("args_in.safetensors"), *out = io_path("args_out/q.safetensors");
    const float w[4 * 32] = {0.5f};
    qmm_safetensors_writer *wr;
    CHECK_OK(qmm_safetensors_writer_create(in, 0, &wr));
    CHECK_OK(qmm_safetensors_writer_add(wr, "l.weight", QMM_ST_F32, 2, (const size_t[2]){4, 32}, w, sizeof w));
    CHECK_OK(qmm_safetensors_writer_finish(wr));
    o.format = QMM_FORMAT_NVFP4;
    CHECK_STATUS(qmm_checkpoint_quantize(NULL, out, &o, &r), QMM_ERR_NULL_POINTER);
    CHECK_STATUS(qmm_checkpoint_quantize(in, NULL, &o, &r), QMM_ERR_NULL_POINTER);
    CHECK_STATUS(qmm_checkpoint_quantize(in, out, NULL, &r), QMM_ERR_NULL_POINTER);
    CHECK_STATUS(qmm_checkpoint_quantize(in, "", &o, &r), QMM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(qmm_checkpoint_quantize("", out, &o, &r), QMM_ERR_INVALID_ARGUMENT);
    o.format = QMM_FORMAT_BF16;
    CHECK_STATUS(qmm_checkpoint_quantize(in, out, &o, &r), QMM_ERR_INVALID_ENUM);
    o.format = (qmm_format)9;
    CHECK_STATUS(qmm_checkpoint_quantize(in, out, &o, &r), QMM_ERR_INVALID_ENUM);
    o.format = QMM_FORMAT_NVFP4, o.recipe = QMM_RECIPE_MXFP4_FLOOR;
    CHECK_STATUS(qmm_checkpoint_quantize(in, out, &o, &r), QMM_ERR_UNSUPPORTED);
    o.recipe = QMM_RECIPE_DEFAULT, o.threads = 65;
    CHECK_STATUS(qmm_checkpoint_quantize(in, out, &o, &r), QMM_ERR_INVALID_ARGUMENT);
    o.threads = -1;
    CHECK_STATUS(qmm_checkpoint_quantize(in, out, &o, &r), QMM_ERR_INVALID_ARGUMENT);
    o.threads = 0, o.flags = 2;
    CHECK_STATUS(qmm_checkpoint_quantize(in, out, &o, &r), QMM_ERR_INVALID_ARGUMENT);
    o.flags = 0, o.exclude_count = 1;
    CHECK_STATUS(qmm_checkpoint_quantize(in, out, &o, &r), QMM_ERR_NULL_POINTER);
    const char *bad_re[1] = {"(("};
    o.exclude = bad_re;
    CHECK_STATUS(qmm_checkpoint_quantize(in, out, &o, &r), QMM_ERR_INVALID_ARGUMENT);
    CHECK(harness_all_bytes(&r, sizeof r, 0xff), "nothing written on failure");
    CHECK(access(io_path("args_out"), F_OK) != 0, "no output folder made by a refused call");
    /* and one that works, with its progress: a start and one call per tensor */
    const char *exclude[1] = {"^nothing$"};
    o.exclude = exclude;
    int calls = 0;
    o.progress = count_progress, o.progress_user = &calls;
    CHECK_OK(qmm_checkpoint_quantize(in, out, &o, &r));
    CHECK(r.tensors == 1 && r.quantized == 1 && r.unquantized == 0 && r.recipe == QMM_RECIPE_NVFP4_MODELOPT, "result");
    CHECK(r.bytes_in == sizeof w && r.bytes_out == 4 * 16 + 4 * 2 + 4, "bytes %llu -> %llu", (unsigned long long)r.bytes_in,
          (unsigned long long)r.bytes_out);
    CHECK(calls == 2, "progress called %d times", calls);
    CHECK_STATUS(qmm_checkpoint_quantize(in, out, &o, &r), QMM_ERR_EXISTS);
    /* a callback that asks to stop: cancelled, and nothing left behind */
    o.progress = stop_progress;
    const char *out2 = io_path("args_out2/q.safetensors");
    CHECK_STATUS(qmm_checkpoint_quantize(in, out2, &o, &r), QMM_ERR_CANCELLED);
    CHECK(access(io_path("args_out2"), F_OK) != 0, "a cancelled run leaves nothing behind");
}

int main(void)
{
    harness_begin("test_checkpoint");
    io_make_dir();
    test_round_trip_formats();
    test_experts();
    test_experts_one_by_one();
    test_bad_conventions();
    test_quant_config();
    test_quantize_arguments();
    io_remove_tree(io_dir);
    return harness_end("test_checkpoint");
}
