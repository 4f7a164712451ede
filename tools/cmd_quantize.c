/* qmm quantize IN OUT --format F: quantizes every 2-D Linear weight of a bf16 / fp16 / fp32 checkpoint
 * and copies everything else unchanged, through qmm_checkpoint_quantize() (which owns the rules that keep
 * the input untouched: qmm.h). This file parses the options and prints progress and the summary. */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "common.h"
#include "io_common.h"
#include "parse.h"

enum { MAX_EXCLUDES = 32, MAX_THREADS = 64, DEFAULT_THREADS = 16 };

typedef struct quantize_options {
    const char *in, *out;
    qmm_checkpoint_quantize_options lib;
    const char *exclude[MAX_EXCLUDES];
} quantize_options;

static void quantize_usage(FILE *f)
{
    fprintf(f,
            "usage: qmm quantize IN OUT --format nvfp4|mxfp4|fp8|fp8_channel [options]\n\n"
            "Quantizes every 2-D Linear weight (a tensor named *.weight with two dimensions, in F32, F16 or\n"
            "BF16) and every stack of experts (a 3-D tensor PREFIX.experts.PROJ of E x N x K) of a safetensors\n"
            "checkpoint and copies every other tensor unchanged. Embeddings, norms,\n"
            "lm_head and MoE routers are left as they are. IN is a .safetensors file (OUT is then a file) or\n"
            "a checkpoint folder or its model.safetensors.index.json (OUT is then a folder with the same\n"
            "shards, a new index and a copy of the other files). hf_quant_config.json, and config.json with\n"
            "its quantization_config (when IN's folder has a config.json), are written beside OUT.\n\n"
            "The input is never touched: OUT may not be an input file under any name (links included), a\n"
            "folder that is, holds or lies in IN's folder, or a file in the folder of a single-file IN; an\n"
            "existing OUT that is not a regular file or folder is refused even with --force. Everything is\n"
            "written to a hidden folder inside OUT's folder and moved into place when all is written: a run\n"
            "that fails (a weight with a NaN, a full disk) leaves nothing behind, and existing files stay.\n\n"
            "Output tensors keep the source names with the convention's suffixes:\n"
            "  nvfp4 (modelopt)  X.weight U8 (N, K/2), X.weight_scale F8_E4M3 (N, K/16), X.weight_scale_2 F32\n"
            "  mxfp4             X.weight U8 (N, K/2), X.weight_scale U8 E8M0 (N, K/32)\n"
            "  fp8               X.weight F8_E4M3 (N, K), X.weight_scale F32 (scalar; (N, 1) for fp8_channel)\n"
            "  expert stacks     mxfp4: PREFIX.experts.PROJ_blocks U8 (E, N, K/32, 16), _scales U8 (E, N, K/32)\n"
            "                    (gpt-oss); nvfp4, fp8: PREFIX.experts.I.PROJ.weight ... for each expert I\n\n"
            "options:\n"
            "  --format F        nvfp4, mxfp4, fp8 (per tensor) or fp8_channel (required)\n"
            "  --recipe R        default (nvfp4: modelopt, mxfp4: floor, fp8: amax), modelopt, floor, rceil, amax\n"
            "  --exclude REGEX   also leave tensors whose name matches REGEX (POSIX extended) unquantized;\n"
            "                    may be given up to %d times\n"
            "  --force           replace output files that exist\n"
            "  --threads T       tensors quantized at once, 1 to %d (default: the online cores, at most %d);\n"
            "                    the output is the same for every T\n"
            "  --help            this text\n",
            MAX_EXCLUDES, MAX_THREADS, DEFAULT_THREADS);
}

/* 0: parsed; 1: --help; -1: a usage error (reported). */
static int quantize_parse(int argc, char **argv, quantize_options *o)
{
    tool_seen seen = {{0}, 0};
    int positional = 0;
    bool format_set = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) return 1;
        if (strcmp(a, "--force") == 0) {
            o->lib.flags |= QMM_WRITE_OVERWRITE;
            continue;
        }
        if (strncmp(a, "--", 2) != 0) {
            if (positional == 0) o->in = a;
            else if (positional == 1) o->out = a;
            else return fprintf(stderr, "qmm quantize: unexpected argument '%s'\n", a), -1;
            positional++;
            continue;
        }
        if (i + 1 >= argc) return fprintf(stderr, "qmm quantize: unknown option or missing value: '%s'\n", a), -1;
        const char *v = argv[++i];
        if (strcmp(a, "--exclude") == 0) {
            if (o->lib.exclude_count == MAX_EXCLUDES)
                return fprintf(stderr, "qmm quantize: more than %d --exclude options\n", MAX_EXCLUDES), -1;
            regex_t re; /* checked here, so that a bad expression is a usage error */
            const int rc = regcomp(&re, v, REG_EXTENDED | REG_NOSUB);
            if (rc != 0) {
                char msg[128];
                regerror(rc, &re, msg, sizeof msg);
                return fprintf(stderr, "qmm quantize: bad --exclude '%s': %s\n", v, msg), -1;
            }
            regfree(&re);
            o->exclude[o->lib.exclude_count++] = v;
            continue;
        }
        if (!tool_first_time(&seen, "quantize", a)) return -1;
        if (strcmp(a, "--format") == 0) {
            if (qmm_format_from_name(v, &o->lib.format) != QMM_OK || o->lib.format == QMM_FORMAT_BF16)
                return fprintf(stderr, "qmm quantize: unknown format '%s' (nvfp4, mxfp4, fp8, fp8_channel)\n", v), -1;
            format_set = true;
        } else if (strcmp(a, "--recipe") == 0) {
            if (qmm_recipe_from_name(v, &o->lib.recipe) != QMM_OK)
                return fprintf(stderr, "qmm quantize: unknown recipe '%s'\n", v), -1;
        } else if (strcmp(a, "--threads") == 0) {
            uint64_t t;
            if (!tool_parse_uint(v, 1, MAX_THREADS, &t))
                return fprintf(stderr, "qmm quantize: --threads takes 1 to %d, not '%s'\n", MAX_THREADS, v), -1;
            o->lib.threads = (int)t;
        } else {
            return fprintf(stderr, "qmm quantize: unknown option '%s'\n", a), -1;
        }
    }
    if (positional != 2 || !format_set)
        return fprintf(stderr, "qmm quantize: %s\n", positional != 2 ? "IN and OUT are required" : "--format is required"), -1;
    o->lib.exclude = o->exclude;
    return 0;
}

static int quantize_progress(void *user, const qmm_checkpoint_progress *p)
{
    (void)user;
    tool_progress("quantize", p->done, p->total, p->name);
    return 0;
}

int cmd_quantize(int argc, char **argv)
{
    quantize_options o;
    memset(&o, 0, sizeof o);
    qmm_checkpoint_quantize_options_init(&o.lib);
    const int p = quantize_parse(argc, argv, &o);
    if (p != 0) {
        if (p > 0) quantize_usage(stdout);
        else fprintf(stderr, "'qmm quantize --help' lists the options\n");
        return p > 0 ? 0 : 2;
    }
    o.lib.progress = quantize_progress;
    qmm_checkpoint_quantize_result r;
    const double t0 = tool_now();
    const qmm_status st = qmm_checkpoint_quantize(o.in, o.out, &o.lib, &r);
    tool_progress("quantize", 1, 1, ""); /* clears the progress line */
    if (st == QMM_ERR_EXISTS) {
        fprintf(stderr, "qmm quantize: %s; use --force to replace it\n", qmm_last_error());
        return 1;
    }
    if (st != QMM_OK) return tool_report("quantize", st);
    char a[32], b[32];
    qmm_format_traits t;
    qmm_format_get_traits(o.lib.format, &t);
    printf("qmm quantize: %zu of %zu tensors quantized to %s (%s) in %.1f s, %zu left unquantized, %s -> %s\n",
           r.quantized, r.tensors, t.name, qmm_recipe_name(r.recipe), tool_now() - t0, r.unquantized,
           tool_bytes_text((double)r.bytes_in, a, sizeof a), tool_bytes_text((double)r.bytes_out, b, sizeof b));
    printf("wrote %s\n", o.out);
    return 0;
}
