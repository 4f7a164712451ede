/* qmm quantize IN OUT --format F: quantizes every 2-D Linear weight of a bf16 / fp16 / fp32 checkpoint
 * and copies everything else unchanged. IN is a .safetensors file (OUT is then a file, and the config
 * files go beside it) or a checkpoint folder / model.safetensors.index.json (OUT is then a folder that
 * gets the same shards, a new index, the config files and a copy of the other files). Nothing is
 * overwritten without --force; every output file is written atomically by the library, and the shards
 * go under temporary names (SHARD.qmm-partial) that are renamed into place only after every shard, the
 * index and the config files are written: a run that fails (a tensor that cannot be quantized, a full
 * disk) leaves no shard of its own behind, and with --force the previous shards stay as they were. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "common.h"
#include "io_common.h"

/* Embeddings, norms, the output head and MoE routers stay in their source precision (modelopt and
 * gpt-oss leave them unquantized too); matched against the whole tensor name, case-insensitively. */
static const char default_exclude[] =
    "(^|\\.)(lm_head|gate|router|wte|wpe|[^.]*(embed|norm|ln_)[^.]*)\\.weight$";

enum { MAX_EXCLUDES = 32, MAX_THREADS = 64, DEFAULT_THREADS = 16 };

typedef struct quantize_options {
    const char *in, *out;
    qmm_format format;
    bool format_set;
    qmm_recipe recipe;
    bool force;
    regex_t exclude[MAX_EXCLUDES + 1]; /* [0] is the default */
    size_t exclude_count;
    int threads; /* tensors quantized at once */
} quantize_options;

static void quantize_usage(FILE *f)
{
    fprintf(f,
            "usage: qmm quantize IN OUT --format nvfp4|mxfp4|fp8|fp8_channel [options]\n\n"
            "Quantizes every 2-D Linear weight (a tensor named *.weight with two dimensions, in F32, F16 or\n"
            "BF16) of a safetensors checkpoint and copies every other tensor unchanged. Embeddings, norms,\n"
            "lm_head and MoE routers are left as they are. IN is a .safetensors file (OUT is then a file) or\n"
            "a checkpoint folder or its model.safetensors.index.json (OUT is then a folder with the same\n"
            "shards, a new index and a copy of the other files). hf_quant_config.json, and config.json with\n"
            "its quantization_config (when IN's folder has a config.json), are written beside OUT. The\n"
            "shards are written as SHARD.qmm-partial and renamed when all is written: a run that fails\n"
            "(a weight with a NaN, a full disk) leaves none of its shards, and existing ones stay.\n\n"
            "Output tensors keep the source names with the convention's suffixes:\n"
            "  nvfp4 (modelopt)  X.weight U8 (N, K/2), X.weight_scale F8_E4M3 (N, K/16), X.weight_scale_2 F32\n"
            "  mxfp4             X.weight U8 (N, K/2), X.weight_scale U8 E8M0 (N, K/32)\n"
            "  fp8               X.weight F8_E4M3 (N, K), X.weight_scale F32 (scalar; (N, 1) for fp8_channel)\n\n"
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

static void quantize_free_options(quantize_options *o)
{
    for (size_t i = 0; i < o->exclude_count; i++) regfree(&o->exclude[i]);
}

static int quantize_parse(int argc, char **argv, quantize_options *o)
{
    if (regcomp(&o->exclude[0], default_exclude, REG_EXTENDED | REG_ICASE | REG_NOSUB) != 0) return -1;
    o->exclude_count = 1;
    int positional = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) return 1;
        if (strcmp(a, "--force") == 0) {
            o->force = true;
            continue;
        }
        if (strncmp(a, "--", 2) != 0) {
            if (positional == 0) o->in = a;
            else if (positional == 1) o->out = a;
            else {
                fprintf(stderr, "qmm quantize: unexpected argument '%s'\n", a);
                return -1;
            }
            positional++;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "qmm quantize: unknown option or missing value: '%s'\n", a);
            return -1;
        }
        const char *v = argv[++i];
        if (strcmp(a, "--format") == 0) {
            if (qmm_format_from_name(v, &o->format) != QMM_OK || o->format == QMM_FORMAT_BF16) {
                fprintf(stderr, "qmm quantize: unknown format '%s' (nvfp4, mxfp4, fp8, fp8_channel)\n", v);
                return -1;
            }
            o->format_set = true;
        } else if (strcmp(a, "--recipe") == 0) {
            if (qmm_recipe_from_name(v, &o->recipe) != QMM_OK) {
                fprintf(stderr, "qmm quantize: unknown recipe '%s'\n", v);
                return -1;
            }
        } else if (strcmp(a, "--threads") == 0) {
            char *end = NULL;
            long t = strtol(v, &end, 10);
            if (!end || *end || t < 1 || t > MAX_THREADS) {
                fprintf(stderr, "qmm quantize: --threads takes 1 to %d, not '%s'\n", MAX_THREADS, v);
                return -1;
            }
            o->threads = (int)t;
        } else if (strcmp(a, "--exclude") == 0) {
            if (o->exclude_count > MAX_EXCLUDES) {
                fprintf(stderr, "qmm quantize: more than %d --exclude options\n", MAX_EXCLUDES);
                return -1;
            }
            int rc = regcomp(&o->exclude[o->exclude_count], v, REG_EXTENDED | REG_NOSUB);
            if (rc != 0) {
                char msg[128];
                regerror(rc, &o->exclude[o->exclude_count], msg, sizeof msg);
                fprintf(stderr, "qmm quantize: bad --exclude '%s': %s\n", v, msg);
                return -1;
            }
            o->exclude_count++;
        } else {
            fprintf(stderr, "qmm quantize: unknown option '%s'\n", a);
            return -1;
        }
    }
    if (positional != 2 || !o->format_set) {
        fprintf(stderr, "qmm quantize: %s\n", positional != 2 ? "IN and OUT are required" : "--format is required");
        return -1;
    }
    if (o->recipe == QMM_RECIPE_DEFAULT) /* named in the output's metadata and the summary */
        o->recipe = o->format == QMM_FORMAT_NVFP4   ? QMM_RECIPE_NVFP4_MODELOPT
                    : o->format == QMM_FORMAT_MXFP4 ? QMM_RECIPE_MXFP4_FLOOR
                                                    : QMM_RECIPE_FP8_AMAX;
    return 0;
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static char *join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (p) snprintf(p, a + b + 2, "%s/%s", dir, name);
    return p;
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return tool_strip(".", 0);
    if (slash == path) return tool_strip("/", 0);
    return tool_strip(path, strlen(slash));
}

/* What happens to a tensor: quantized (a 2-D Linear weight of a float type, not excluded) or copied. */
static bool should_quantize(const quantize_options *o, const qmm_tensor_view *v, const char **why)
{
    *why = NULL;
    if (!tool_ends_with(v->name, ".weight") || v->ndim != 2) return false;
    if (v->dtype != QMM_ST_F32 && v->dtype != QMM_ST_F16 && v->dtype != QMM_ST_BF16) return false;
    for (size_t i = 0; i < o->exclude_count; i++)
        if (regexec(&o->exclude[i], v->name, 0, NULL, 0) == 0) {
            *why = i == 0 ? "default exclusion" : "--exclude";
            return false;
        }
    qmm_format_traits t;
    qmm_format_get_traits(o->format, &t);
    if (v->shape[0] == 0 || v->shape[1] == 0) {
        *why = "empty";
        return false;
    }
    if (t.element_bits == 4 && v->shape[1] % 2) {
        *why = "odd K cannot be stored as packed nibbles unambiguously";
        return false;
    }
    return true;
}

typedef struct quantize_stats {
    size_t tensors, quantized, done;
    double bytes_in, bytes_out;
    char **excluded; /* module names of 2-D float weights left unquantized */
    size_t excluded_count;
} quantize_stats;

/* One tensor to quantize: run() may go on any thread (qmm_quantize keeps no state between calls), add()
 * goes on the main thread in the order of the source, so the output does not depend on the threads. */
typedef struct quantize_job {
    const quantize_options *o;
    qmm_tensor_view v;
    qmm_weight q;
    bool allocated;
    qmm_status st;
    char error[512]; /* qmm_last_error() is per thread: the worker's message, for the main thread */
} quantize_job;

static void *quantize_job_run(void *arg)
{
    quantize_job *j = arg;
    const qmm_tensor_view *v = &j->v;
    const qmm_dtype src = v->dtype == QMM_ST_F32 ? QMM_DTYPE_FP32 : v->dtype == QMM_ST_F16 ? QMM_DTYPE_FP16 : QMM_DTYPE_BF16;
    const size_t esize = v->dtype == QMM_ST_F32 ? 4 : 2, n = v->shape[0], k = v->shape[1];
    /* Tensor data is only byte-aligned in the file: an unaligned one is copied before it is read. */
    void *copy = NULL;
    const void *data = v->data;
    if ((uintptr_t)data % esize) {
        copy = malloc(v->bytes);
        if (!copy) {
            j->st = QMM_ERR_OUT_OF_MEMORY;
            snprintf(j->error, sizeof j->error, "cannot copy %zu bytes of tensor data", v->bytes);
            return NULL;
        }
        memcpy(copy, v->data, v->bytes);
        data = copy;
    }
    j->st = qmm_weight_alloc(&j->q, j->o->format, n, k);
    j->allocated = j->st == QMM_OK;
    if (j->st == QMM_OK) j->st = qmm_quantize(j->o->recipe, src, data, k, &j->q);
    if (j->st != QMM_OK) snprintf(j->error, sizeof j->error, "%s", qmm_last_error());
    free(copy);
    return NULL;
}

/* Quantizes jobs[0 .. count) at once, one thread each, then adds them to w in order. */
static int quantize_batch(qmm_safetensors_writer *w, quantize_job *jobs, size_t count)
{
    pthread_t tid[MAX_THREADS];
    bool started[MAX_THREADS] = {false};
    for (size_t i = 1; i < count; i++) started[i] = pthread_create(&tid[i], NULL, quantize_job_run, &jobs[i]) == 0;
    quantize_job_run(&jobs[0]);
    for (size_t i = 1; i < count; i++) {
        if (started[i]) pthread_join(tid[i], NULL);
        else quantize_job_run(&jobs[i]); /* no thread to be had: here instead */
    }
    int rc = 0;
    for (size_t i = 0; i < count; i++) {
        if (rc == 0 && jobs[i].st != QMM_OK) {
            fprintf(stderr, "\nqmm quantize: tensor '%s': %s: %s\n", jobs[i].v.name, qmm_status_string(jobs[i].st), jobs[i].error);
            rc = 1;
        }
        if (rc == 0) {
            char *module = tool_strip(jobs[i].v.name, strlen(".weight"));
            qmm_status st = module ? qmm_safetensors_writer_add_weight(w, module, &jobs[i].q) : QMM_ERR_OUT_OF_MEMORY;
            free(module);
            if (st != QMM_OK) {
                fprintf(stderr, "\nqmm quantize: tensor '%s': ", jobs[i].v.name);
                rc = tool_report("quantize", st);
            }
        }
        if (jobs[i].allocated) qmm_weight_free(&jobs[i].q);
    }
    return rc;
}

/* Writes shard `shard` of the output to `path`, a temporary name of this run (a stale one from a run
 * that was killed is replaced). */
static int quantize_shard(const quantize_options *o, const qmm_safetensors *in, size_t shard, size_t *next,
                          const char *path, quantize_stats *s)
{
    qmm_safetensors_writer *w = NULL;
    qmm_status st = qmm_safetensors_writer_create(path, QMM_WRITE_OVERWRITE, &w);
    if (st != QMM_OK) return tool_report("quantize", st);
    for (size_t i = 0; i < qmm_safetensors_metadata_count(in, shard) && st == QMM_OK; i++) {
        const char *key, *value;
        qmm_safetensors_metadata_at(in, shard, i, &key, &value);
        if (strcmp(key, "quantized_by") != 0) st = qmm_safetensors_writer_set_metadata(w, key, value);
    }
    char by[96];
    qmm_format_traits t;
    qmm_format_get_traits(o->format, &t);
    snprintf(by, sizeof by, "qmm %s %s (%s)", qmm_version(), t.name, qmm_recipe_name(o->recipe));
    if (st == QMM_OK) st = qmm_safetensors_writer_set_metadata(w, "quantized_by", by);
    if (st != QMM_OK) {
        qmm_safetensors_writer_discard(w);
        return tool_report("quantize", st);
    }
    const size_t count = qmm_safetensors_tensor_count(in);
    quantize_job jobs[MAX_THREADS];
    size_t pending = 0; /* consecutive tensors to quantize, flushed before anything else is added */
    for (;; (*next)++) {
        qmm_tensor_view v;
        bool more = *next < count;
        if (more) {
            qmm_safetensors_tensor_at(in, *next, &v);
            more = v.shard == shard;
        }
        const char *why = NULL;
        const bool quantize = more && should_quantize(o, &v, &why);
        if (pending && (!quantize || pending == (size_t)o->threads)) {
            const int rc = quantize_batch(w, jobs, pending);
            pending = 0;
            if (rc != 0) {
                qmm_safetensors_writer_discard(w);
                return 1;
            }
        }
        if (!more) break;
        s->bytes_in += (double)v.bytes;
        if (quantize) {
            tool_progress("quantize", s->done++, s->quantized, v.name);
            memset(&jobs[pending], 0, sizeof jobs[pending]);
            jobs[pending].o = o, jobs[pending].v = v;
            pending++;
            continue;
        }
        if (why && tool_ends_with(v.name, ".weight") && v.ndim == 2) {
            char *module = tool_strip(v.name, strlen(".weight"));
            char **e = realloc(s->excluded, (s->excluded_count + 1) * sizeof *e);
            if (!module || !e) {
                free(module);
                if (e) s->excluded = e;
                qmm_safetensors_writer_discard(w);
                return tool_report("quantize", QMM_ERR_OUT_OF_MEMORY);
            }
            s->excluded = e;
            s->excluded[s->excluded_count++] = module;
        }
        st = qmm_safetensors_writer_add(w, v.name, v.dtype, v.ndim, v.shape, v.data, v.bytes);
        if (st != QMM_OK) {
            qmm_safetensors_writer_discard(w);
            return tool_report("quantize", st);
        }
    }
    st = qmm_safetensors_writer_finish(w);
    if (st != QMM_OK) return tool_report("quantize", st);
    return 0;
}

/* The other files of a checkpoint folder (tokenizer, README, sub-folders), copied as they are. With
 * dry_run nothing is written and *conflict names the first target that exists. */
static bool skip_in_copy(const char *name)
{
    return name[0] == '.' || tool_ends_with(name, ".safetensors") || strcmp(name, "model.safetensors.index.json") == 0 ||
           strcmp(name, "config.json") == 0 || strcmp(name, "hf_quant_config.json") == 0;
}

static int copy_file(const char *from, const char *to)
{
    FILE *a = fopen(from, "rb"), *b = a ? fopen(to, "wb") : NULL;
    int rc = (a && b) ? 0 : 1;
    char buf[1 << 16];
    size_t got;
    while (rc == 0 && (got = fread(buf, 1, sizeof buf, a)) > 0)
        if (fwrite(buf, 1, got, b) != got) rc = 1;
    if (a && ferror(a)) rc = 1;
    if (b && fclose(b) != 0) rc = 1;
    if (a) fclose(a);
    if (rc) fprintf(stderr, "qmm quantize: cannot copy '%s' to '%s': %s\n", from, to, strerror(errno));
    return rc;
}

static int copy_tree(const char *from, const char *to, bool top, bool dry_run, char **conflict)
{
    DIR *d = opendir(from);
    if (!d) return 0;
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (top && skip_in_copy(e->d_name)) continue;
        char *src = join(from, e->d_name), *dst = join(to, e->d_name);
        struct stat st;
        if (!src || !dst || stat(src, &st) != 0) {
            /* a dangling link or a race: nothing to copy */
        } else if (S_ISDIR(st.st_mode)) {
            if (!dry_run && !is_dir(dst) && mkdir(dst, 0755) != 0) {
                fprintf(stderr, "qmm quantize: cannot create '%s': %s\n", dst, strerror(errno));
                rc = 1;
            }
            if (rc == 0) rc = copy_tree(src, dst, false, dry_run, conflict);
        } else if (S_ISREG(st.st_mode)) {
            if (dry_run) {
                if (exists(dst) && !*conflict) *conflict = tool_strip(dst, 0);
            } else {
                rc = copy_file(src, dst);
            }
        }
        free(src);
        free(dst);
    }
    closedir(d);
    return rc;
}

static int refuse_existing(const char *path)
{
    fprintf(stderr, "qmm quantize: '%s' exists; use --force to replace it\n", path);
    return 1;
}

static int quantize_run(quantize_options *o)
{
    qmm_safetensors *in = NULL;
    qmm_status st = qmm_safetensors_open(o->in, &in);
    if (st != QMM_OK) return tool_report("quantize", st);
    if (qmm_safetensors_tensor_count(in) == 0) {
        fprintf(stderr, "qmm quantize: '%s' holds no tensors\n", o->in);
        qmm_safetensors_close(in);
        return 1;
    }
    const bool folder = is_dir(o->in) || tool_ends_with(o->in, ".json");
    char *in_dir = is_dir(o->in) ? tool_strip(o->in, 0) : dir_of(o->in);
    char *out_dir = folder ? tool_strip(o->out, 0) : dir_of(o->out);
    char *src_config = in_dir ? join(in_dir, "config.json") : NULL;
    const size_t shards = qmm_safetensors_shard_count(in), count = qmm_safetensors_tensor_count(in);
    const bool indexed = folder && (shards > 1 || tool_ends_with(o->in, ".json") ||
                                    strcmp(qmm_safetensors_shard_name(in, 0), "model.safetensors") != 0);
    char **outs = calloc(shards, sizeof *outs), **tmps = calloc(shards, sizeof *tmps);
    char *index_path = out_dir ? join(out_dir, "model.safetensors.index.json") : NULL;
    char *hf_path = out_dir ? join(out_dir, "hf_quant_config.json") : NULL;
    char *cfg_path = out_dir ? join(out_dir, "config.json") : NULL;
    quantize_stats s = {0};
    int rc = (in_dir && out_dir && src_config && outs && tmps && index_path && hf_path && cfg_path) ? 0 : 1;
    for (size_t i = 0; rc == 0 && i < shards; i++) {
        outs[i] = folder ? join(o->out, qmm_safetensors_shard_name(in, i)) : tool_strip(o->out, 0);
        tmps[i] = outs[i] ? malloc(strlen(outs[i]) + sizeof ".qmm-partial") : NULL;
        if (tmps[i]) sprintf(tmps[i], "%s.qmm-partial", outs[i]);
        if (!tmps[i]) rc = 1;
    }
    if (rc) fprintf(stderr, "qmm quantize: out of memory\n");
    const bool have_config = rc == 0 && exists(src_config);
    if (rc == 0 && folder && exists(o->out) && !is_dir(o->out)) {
        fprintf(stderr, "qmm quantize: '%s' is not a folder\n", o->out);
        rc = 1;
    }
    /* Refuse before writing anything. */
    if (rc == 0 && !o->force) {
        for (size_t i = 0; rc == 0 && i < shards; i++)
            if (exists(outs[i])) rc = refuse_existing(outs[i]);
        if (rc == 0 && indexed && exists(index_path)) rc = refuse_existing(index_path);
        if (rc == 0 && exists(hf_path)) rc = refuse_existing(hf_path);
        if (rc == 0 && have_config && exists(cfg_path)) rc = refuse_existing(cfg_path);
        char *conflict = NULL;
        if (rc == 0 && folder) copy_tree(in_dir, o->out, true, true, &conflict);
        if (conflict) rc = refuse_existing(conflict);
        free(conflict);
    }
    /* The output folder (or the folder of the output file) is made when missing, one level deep. */
    bool made_dir = false;
    if (rc == 0 && !is_dir(out_dir)) {
        if (mkdir(out_dir, 0755) != 0) {
            fprintf(stderr, "qmm quantize: cannot create '%s': %s\n", out_dir, strerror(errno));
            rc = 1;
        } else {
            made_dir = true;
        }
    }
    for (size_t i = 0; rc == 0 && i < count; i++) {
        qmm_tensor_view v;
        const char *why;
        qmm_safetensors_tensor_at(in, i, &v);
        if (should_quantize(o, &v, &why)) s.quantized++;
    }
    s.tensors = count;
    double t0 = tool_now();
    size_t next = 0;
    for (size_t i = 0; rc == 0 && i < shards; i++) rc = quantize_shard(o, in, i, &next, tmps[i], &s);
    tool_progress("quantize", s.quantized, s.quantized, "");

    /* The index of a sharded output lists what the new shards hold: read back from the files. */
    for (size_t i = 0; rc == 0 && i < shards; i++) {
        qmm_safetensors *out;
        st = qmm_safetensors_open(tmps[i], &out);
        if (st != QMM_OK) {
            rc = tool_report("quantize", st);
            break;
        }
        for (size_t j = 0; j < qmm_safetensors_tensor_count(out); j++) {
            qmm_tensor_view v;
            qmm_safetensors_tensor_at(out, j, &v);
            s.bytes_out += (double)v.bytes;
        }
        qmm_safetensors_close(out);
    }
    if (rc == 0 && indexed) {
        const char **tn = malloc((count * 3 + 1) * sizeof *tn), **sn = malloc((count * 3 + 1) * sizeof *sn);
        qmm_safetensors **opened = calloc(shards, sizeof *opened);
        size_t entries = 0;
        rc = (tn && sn && opened) ? 0 : 1;
        for (size_t i = 0; rc == 0 && i < shards; i++) {
            st = qmm_safetensors_open(tmps[i], &opened[i]);
            if (st != QMM_OK) {
                rc = tool_report("quantize", st);
                break;
            }
            for (size_t j = 0; j < qmm_safetensors_tensor_count(opened[i]) && entries < count * 3 + 1; j++) {
                qmm_tensor_view v;
                qmm_safetensors_tensor_at(opened[i], j, &v);
                tn[entries] = v.name;
                sn[entries++] = qmm_safetensors_shard_name(in, i);
            }
        }
        if (rc == 0) {
            st = qmm_safetensors_index_write(index_path, tn, sn, entries, (uint64_t)s.bytes_out,
                                             o->force ? QMM_WRITE_OVERWRITE : 0);
            if (st != QMM_OK) rc = tool_report("quantize", st);
        }
        for (size_t i = 0; opened && i < shards; i++) qmm_safetensors_close(opened[i]);
        free(opened);
        free(tn);
        free(sn);
    }
    if (rc == 0) {
        st = qmm_quant_config_write(out_dir, o->format, (const char *const *)s.excluded, s.excluded_count,
                                    have_config ? src_config : NULL, o->force ? QMM_WRITE_OVERWRITE : 0);
        if (st != QMM_OK) rc = tool_report("quantize", st);
    }
    if (rc == 0 && folder) {
        char *conflict = NULL;
        rc = copy_tree(in_dir, o->out, true, false, &conflict);
    }
    /* the shards into place, or, after a failure, away */
    for (size_t i = 0; rc == 0 && i < shards; i++)
        if (rename(tmps[i], outs[i]) != 0) {
            fprintf(stderr, "qmm quantize: cannot rename '%s' to '%s': %s\n", tmps[i], outs[i], strerror(errno));
            rc = 1;
        }
    if (rc != 0) {
        for (size_t i = 0; tmps && i < shards; i++)
            if (tmps[i]) unlink(tmps[i]);
        if (made_dir) rmdir(out_dir); /* only if nothing else was written there */
    }
    if (rc == 0) {
        char a[32], b[32];
        qmm_format_traits t;
        qmm_format_get_traits(o->format, &t);
        printf("qmm quantize: %zu of %zu tensors quantized to %s (%s) in %.1f s, %zu left unquantized, %s -> %s\n",
               s.quantized, s.tensors, t.name, qmm_recipe_name(o->recipe), tool_now() - t0, s.excluded_count,
               tool_bytes_text(s.bytes_in, a, sizeof a), tool_bytes_text(s.bytes_out, b, sizeof b));
        printf("wrote %s\n", o->out);
    }
    for (size_t i = 0; outs && i < shards; i++) free(outs[i]);
    for (size_t i = 0; tmps && i < shards; i++) free(tmps[i]);
    free(tmps);
    for (size_t i = 0; i < s.excluded_count; i++) free(s.excluded[i]);
    free(s.excluded);
    free(outs);
    free(index_path);
    free(hf_path);
    free(cfg_path);
    free(src_config);
    free(in_dir);
    free(out_dir);
    qmm_safetensors_close(in);
    return rc;
}

int cmd_quantize(int argc, char **argv)
{
    quantize_options o;
    memset(&o, 0, sizeof o);
    o.recipe = QMM_RECIPE_DEFAULT;
    /* the online cores, at most DEFAULT_THREADS: each holds a quantized tensor until its turn to be written */
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    o.threads = cores < 1 ? 1 : cores > DEFAULT_THREADS ? DEFAULT_THREADS : (int)cores;
    int p = quantize_parse(argc, argv, &o);
    if (p != 0) {
        quantize_usage(p > 0 ? stdout : stderr);
        quantize_free_options(&o);
        return p > 0 ? 0 : 2;
    }
    int rc = quantize_run(&o);
    quantize_free_options(&o);
    return rc;
}
