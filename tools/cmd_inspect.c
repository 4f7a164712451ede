/* qmm inspect FILE: the tensors of a checkpoint (file, folder or index) with dtype, shape, size and,
 * for the parts of quantized weights, the format they belong to; then totals per format. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "common.h"
#include "io_common.h"

static void inspect_usage(FILE *f)
{
    fprintf(f, "usage: qmm inspect FILE\n\n"
               "Lists the tensors of a safetensors checkpoint (a file, a folder or a model.safetensors.index.json):\n"
               "name, dtype, shape, bytes, and for the tensors of a quantized weight its format and role\n"
               "(weight, block scales, tensor scale, input scale). Ends with the metadata, the quantization\n"
               "config of the folder and totals per format.\n");
}

typedef struct format_total {
    size_t weights;
    double bytes;
} format_total;

/* The role of a tensor in a quantized weight, e.g. "nvfp4 block scales"; "" when it is none. */
static const char *inspect_role(const qmm_safetensors *f, const char *name, qmm_format *format, bool *is_weight,
                                char *buf, size_t cap)
{
    char *module = NULL;
    const char *part = tool_weight_part(name, &module);
    qmm_checkpoint_weight w;
    buf[0] = '\0';
    *is_weight = false;
    if (part && qmm_checkpoint_weight_info(f, module, &w) == QMM_OK && w.format != QMM_FORMAT_BF16) {
        qmm_format_traits t;
        qmm_format_get_traits(w.format, &t);
        const char *role = strcmp(part, ".weight") == 0 || strcmp(part, "_blocks") == 0 ? "weight"
                           : strcmp(part, ".weight_scale_2") == 0                        ? "tensor scale"
                           : strcmp(part, ".input_scale") == 0                           ? "input scale"
                           : w.format == QMM_FORMAT_FP8_TENSOR                           ? "tensor scale"
                           : w.format == QMM_FORMAT_FP8_CHANNEL                          ? "channel scales"
                                                                                         : "block scales";
        if (strcmp(role, "weight") == 0) {
            *is_weight = true;
            if (w.count > 1) snprintf(buf, cap, "%s %zu x %zu x %zu", t.name, w.count, w.n, w.k);
            else snprintf(buf, cap, "%s %zu x %zu", t.name, w.n, w.k);
        } else {
            snprintf(buf, cap, "%s %s", t.name, role);
        }
        *format = w.format;
    }
    free(module);
    return buf;
}

/* A stack of experts: modelopt's experts stored one by one (PREFIX.experts.<i>.PROJ, shown with '*' for
 * i), gpt-oss's in one tensor pair (X_blocks), or an unquantized 3-D PREFIX.experts.PROJ. */
typedef struct inspect_stack {
    char *name;
    size_t experts, n, k;
    const char *format;
} inspect_stack;

/* The stack a tensor belongs to (added to, or counted in, stacks[0 .. *count)). */
static void inspect_collect(const qmm_safetensors *f, const qmm_tensor_view *v, inspect_stack **stacks, size_t *count)
{
    char *module = NULL, *pattern = NULL;
    const char *part = tool_weight_part(v->name, &module);
    qmm_checkpoint_weight w;
    const char *digits = module ? strstr(module, ".experts.") : NULL;
    size_t experts = 1, n = 0, k = 0;
    const char *format = NULL;
    const bool quantized = part && qmm_checkpoint_weight_info(f, module, &w) == QMM_OK;
    if (quantized && strcmp(part, ".weight") != 0 && strcmp(part, "_blocks") != 0) {
        /* a scale tensor: counted through its weight */
    } else if (quantized) {
        qmm_format_traits t;
        qmm_format_get_traits(w.format, &t);
        format = t.name, n = w.n, k = w.k, experts = w.count;
        if (w.count > 1) {
            pattern = tool_strip(module, 0);
        } else if (digits) { /* PREFIX.experts.<i>.PROJ: the i as '*' */
            const char *num = digits + strlen(".experts."), *end = num;
            while (*end >= '0' && *end <= '9') end++;
            if (end > num && *end == '.') {
                pattern = malloc(strlen(module) + 2);
                if (pattern) sprintf(pattern, "%.*s*%s", (int)(num - module), module, end);
            }
        }
    } else if (v->ndim == 3 && (v->dtype == QMM_ST_F32 || v->dtype == QMM_ST_F16 || v->dtype == QMM_ST_BF16) &&
               strstr(v->name, ".experts.") && !strchr(strstr(v->name, ".experts.") + 9, '.')) {
        format = "unquantized", experts = v->shape[0], n = v->shape[1], k = v->shape[2];
        pattern = tool_strip(v->name, 0);
    }
    free(module);
    if (!pattern) return;
    for (size_t i = 0; i < *count; i++)
        if (strcmp((*stacks)[i].name, pattern) == 0) {
            (*stacks)[i].experts++;
            free(pattern);
            return;
        }
    inspect_stack *grown = realloc(*stacks, (*count + 1) * sizeof *grown);
    if (!grown) {
        free(pattern);
        return;
    }
    *stacks = grown;
    inspect_stack s = {pattern, experts, n, k, format};
    (*stacks)[(*count)++] = s;
}

int cmd_inspect(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        inspect_usage(stdout);
        return 0;
    }
    if (argc != 2) {
        inspect_usage(stderr);
        return 2;
    }
    qmm_safetensors *f;
    qmm_status st = qmm_safetensors_open(argv[1], &f);
    if (st != QMM_OK) return tool_report("inspect", st);
    const size_t count = qmm_safetensors_tensor_count(f), shards = qmm_safetensors_shard_count(f);
    char path[1024];
    printf("%s: %zu tensors in %zu file%s\n\n", qmm_text_escape(argv[1], path, sizeof path), count, shards,
           shards == 1 ? "" : "s");
    printf("%-60s %-8s %-22s %12s  %s\n", "name", "dtype", "shape", "bytes", "format");
    format_total totals[QMM_FORMAT_BF16 + 1] = {{0}};
    double total = 0, plain = 0;
    for (size_t i = 0; i < count; i++) {
        qmm_tensor_view v;
        qmm_safetensors_tensor_at(f, i, &v);
        char shape[96], role[96], safe[1024];
        qmm_format fmt = QMM_FORMAT_BF16;
        bool is_weight;
        inspect_role(f, v.name, &fmt, &is_weight, role, sizeof role);
        printf("%-60s %-8s %-22s %12zu  %s\n", qmm_text_escape(v.name, safe, sizeof safe), qmm_st_dtype_name(v.dtype),
               tool_shape_text(&v, shape, sizeof shape), v.bytes, role[0] ? role : "-");
        total += (double)v.bytes;
        if (role[0]) {
            totals[fmt].weights += is_weight;
            totals[fmt].bytes += (double)v.bytes;
        } else {
            plain += (double)v.bytes;
        }
    }
    char a[32];
    printf("\ntotal %s", tool_bytes_text(total, a, sizeof a));
    for (int fmt = QMM_FORMAT_NVFP4; fmt < QMM_FORMAT_BF16; fmt++) {
        if (!totals[fmt].weights) continue;
        qmm_format_traits t;
        qmm_format_get_traits((qmm_format)fmt, &t);
        printf("; %zu %s weights %s", totals[fmt].weights, t.name, tool_bytes_text(totals[fmt].bytes, a, sizeof a));
    }
    printf("; other tensors %s\n", tool_bytes_text(plain, a, sizeof a));
    for (size_t s = 0; s < shards; s++)
        for (size_t i = 0; i < qmm_safetensors_metadata_count(f, s); i++) {
            const char *key, *value;
            qmm_safetensors_metadata_at(f, s, i, &key, &value);
            char k[256], v[256], shard[256];
            printf("metadata%s%s: %s = %s\n", shards > 1 ? " of " : "",
                   shards > 1 ? qmm_text_escape(qmm_safetensors_shard_name(f, s), shard, sizeof shard) : "",
                   qmm_text_escape(key, k, sizeof k), qmm_text_escape(value, v, sizeof v));
        }
    /* Stacks of experts, however stored. */
    inspect_stack *stacks = NULL;
    size_t stack_count = 0;
    for (size_t i = 0; i < count; i++) {
        qmm_tensor_view v;
        qmm_safetensors_tensor_at(f, i, &v);
        inspect_collect(f, &v, &stacks, &stack_count);
    }
    for (size_t i = 0; i < stack_count; i++) {
        char safe[512];
        printf("expert stack %s: %zu experts, %s %zu x %zu\n", qmm_text_escape(stacks[i].name, safe, sizeof safe),
               stacks[i].experts, stacks[i].format, stacks[i].n, stacks[i].k);
        free(stacks[i].name);
    }
    free(stacks);
    /* The folder's quantization config, when there is one. */
    char *dir = NULL;
    const char *slash = strrchr(argv[1], '/');
    if (tool_ends_with(argv[1], ".safetensors") || tool_ends_with(argv[1], ".json"))
        dir = slash ? tool_strip(argv[1], strlen(slash)) : tool_strip(".", 0);
    else dir = tool_strip(argv[1], 0);
    qmm_quant_config qc;
    char algo[128];
    if (dir && qmm_quant_config_read(dir, &qc) == QMM_OK)
        printf("quantization (%s): %s, group size %d, %zu modules excluded\n", qc.source,
               qmm_text_escape(qc.quant_algo, algo, sizeof algo), qc.group_size, qc.exclude_count);
    free(dir);
    qmm_safetensors_close(f);
    return 0;
}
