/* qmm_checkpoint_quantize: a whole safetensors checkpoint quantized into a new one, without ever
 * touching the input. The run first lays out every output (relative to the output folder) and every
 * input it reads, refuses any overlap of the two (ckpt_check), writes everything into a hidden staging
 * folder inside the output folder, and moves the files into place only when all of them are written. */
#include <errno.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/error.h"
#include "../core/format.h"
#include "../core/weight.h"
#include "ckpt_plan.h"
#include "fileutil.h"

enum { QMM__CKPT_MAX_THREADS = 64, QMM__CKPT_DEFAULT_THREADS = 16, QMM__CKPT_MAX_EXCLUDES = 64 };

/* Embeddings, norms, the output head and MoE routers stay in their source precision (modelopt and
 * gpt-oss leave them unquantized too); matched against the whole tensor name, case-insensitively. */
static const char qmm__default_exclude[] = "(^|\\.)(lm_head|gate|router|wte|wpe|[^.]*(embed|norm|ln_)[^.]*)\\.weight$";

void qmm_checkpoint_quantize_options_init(qmm_checkpoint_quantize_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->recipe = QMM_RECIPE_DEFAULT;
}

/* A stack of experts in one 3-D tensor (E, N, K): a float tensor named PREFIX.experts.PROJ (gpt-oss
 * style, no .weight suffix), each expert a Linear weight of N x K. */
static bool qmm__ckpt_is_stack(const qmm_tensor_view *v)
{
    if (v->ndim != 3) return false;
    const char *last = strrchr(v->name, '.');
    if (!last || last - v->name < 8 || strncmp(last - 8, ".experts", 8) != 0) return false;
    return v->dtype == QMM_ST_F32 || v->dtype == QMM_ST_F16 || v->dtype == QMM_ST_BF16;
}

/* The module name of a tensor that is quantized: X of X.weight, or the stack's own name. */
static char *qmm__ckpt_module(const qmm_tensor_view *v)
{
    const size_t len = strlen(v->name) - (v->ndim == 2 ? strlen(".weight") : 0);
    char *m = malloc(len + 1);
    if (m) {
        memcpy(m, v->name, len);
        m[len] = '\0';
    }
    return m;
}

/* What happens to a tensor: quantized (a 2-D Linear weight or a 3-D stack of experts of a float type, not
 * excluded) or copied; *why says why such a tensor is copied. */
static bool qmm__ckpt_should_quantize(const qmm__ckpt *c, const qmm_tensor_view *v, const char **why)
{
    *why = NULL;
    const size_t len = strlen(v->name);
    const bool linear = len >= 7 && strcmp(v->name + len - 7, ".weight") == 0 && v->ndim == 2;
    if (!linear && !qmm__ckpt_is_stack(v)) return false;
    if (v->dtype != QMM_ST_F32 && v->dtype != QMM_ST_F16 && v->dtype != QMM_ST_BF16) return false;
    for (size_t i = 0; i < c->exclude_count; i++)
        if (regexec(&c->exclude[i], v->name, 0, NULL, 0) == 0) {
            *why = "excluded";
            return false;
        }
    const size_t n = v->shape[v->ndim - 2], k = v->shape[v->ndim - 1];
    if (v->elements == 0 || n == 0 || k == 0) {
        *why = "empty";
        return false;
    }
    if (qmm__format_traits(c->format)->element_bits == 4 && k % 2) {
        *why = "odd K cannot be stored as packed nibbles unambiguously";
        return false;
    }
    return true;
}

/* One tensor to quantize: run() may go on any thread (qmm_quantize keeps no state between calls), the
 * main thread adds the results in the order of the source, so the output does not depend on threads. */
typedef struct qmm__ckpt_job {
    const qmm__ckpt *c;
    qmm_tensor_view v;
    qmm_weight q;
    bool allocated;
    qmm_status st;
    char error[768]; /* qmm_last_error() is per thread: the worker's message, for the main thread */
} qmm__ckpt_job;

static void *qmm__ckpt_job_run(void *arg)
{
    qmm__ckpt_job *j = arg;
    const qmm_tensor_view *v = &j->v;
    const qmm_dtype src = v->dtype == QMM_ST_F32 ? QMM_DTYPE_FP32 : v->dtype == QMM_ST_F16 ? QMM_DTYPE_FP16 : QMM_DTYPE_BF16;
    const size_t esize = v->dtype == QMM_ST_F32 ? 4 : 2, experts = v->ndim == 3 ? v->shape[0] : 1;
    const size_t n = v->shape[v->ndim - 2], k = v->shape[v->ndim - 1];
    /* tensor data is only byte-aligned in the file: an unaligned one is copied before it is read */
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
    j->st = v->ndim == 3 ? qmm_weight_alloc_experts(&j->q, j->c->format, experts, n, k) : qmm_weight_alloc(&j->q, j->c->format, n, k);
    j->allocated = j->st == QMM_OK;
    if (j->st == QMM_OK) j->st = qmm_quantize(j->c->recipe, src, data, k, &j->q);
    if (j->st != QMM_OK) snprintf(j->error, sizeof j->error, "%s", qmm_last_error());
    free(copy);
    return NULL;
}

/* Reports progress; QMM_ERR_CANCELLED when the caller's callback asks to stop. */
static qmm_status qmm__ckpt_progress(qmm__ckpt *c, const char *name)
{
    if (!c->o->progress) return QMM_OK;
    qmm_checkpoint_progress p = {c->done, c->r.quantized, name};
    if (c->o->progress(c->o->progress_user, &p) != 0)
        return qmm__fail(QMM_ERR_CANCELLED, "%s: stopped by the progress callback after %zu of %zu tensors", c->fn, c->done,
                         c->r.quantized);
    return QMM_OK;
}

/* A quantized stack of experts in the convention of its format: MXFP4 with whole 32-element blocks as
 * gpt-oss's name_blocks / name_scales; otherwise (modelopt NVFP4 and FP8, MXFP4 with a partial block)
 * expert by expert as PREFIX.experts.E.PROJ Linear weights. */
static qmm_status qmm__ckpt_add_stack(const qmm__ckpt *c, qmm_safetensors_writer *w, const char *name, const qmm_weight *q)
{
    qmm_weight *each = malloc(q->experts * sizeof *each);
    if (!each) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", c->fn);
    for (size_t e = 0; e < q->experts; e++) qmm__weight_expert(q, e, &each[e]);
    qmm_status st = QMM_OK;
    if (q->format == QMM_FORMAT_MXFP4 && q->k % 32 == 0) {
        st = qmm_safetensors_writer_add_experts(w, name, each, q->experts);
    } else {
        const char *proj = strrchr(name, '.') + 1; /* the name is PREFIX.experts.PROJ */
        const size_t head = (size_t)(proj - name);
        char *module = malloc(head + 24 + strlen(proj));
        for (size_t e = 0; module && st == QMM_OK && e < q->experts; e++) {
            snprintf(module, head + 24 + strlen(proj), "%.*s%zu.%s", (int)head, name, e, proj);
            st = qmm_safetensors_writer_add_weight(w, module, &each[e]);
        }
        if (!module) st = qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", c->fn);
        free(module);
    }
    free(each);
    return st;
}

/* Quantizes jobs[0 .. count) at once, one thread each, then adds them to w in order. */
static qmm_status qmm__ckpt_batch(qmm__ckpt *c, qmm_safetensors_writer *w, qmm__ckpt_job *jobs, size_t count)
{
    pthread_t tid[QMM__CKPT_MAX_THREADS];
    bool started[QMM__CKPT_MAX_THREADS] = {false};
    for (size_t i = 1; i < count; i++) started[i] = pthread_create(&tid[i], NULL, qmm__ckpt_job_run, &jobs[i]) == 0;
    qmm__ckpt_job_run(&jobs[0]);
    for (size_t i = 1; i < count; i++) {
        if (started[i]) pthread_join(tid[i], NULL);
        else qmm__ckpt_job_run(&jobs[i]); /* no thread to be had: here instead */
    }
    qmm_status st = QMM_OK;
    for (size_t i = 0; i < count; i++) {
        if (st == QMM_OK && jobs[i].st != QMM_OK)
            st = qmm__fail(jobs[i].st, "%s: tensor '%.200s': %s", c->fn, jobs[i].v.name, jobs[i].error);
        if (st == QMM_OK) {
            char *module = qmm__ckpt_module(&jobs[i].v);
            st = !module ? qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", c->fn)
                 : jobs[i].q.experts > 1 ? qmm__ckpt_add_stack(c, w, module, &jobs[i].q)
                                         : qmm_safetensors_writer_add_weight(w, module, &jobs[i].q);
            free(module);
            if (st == QMM_OK) {
                c->done++;
                st = qmm__ckpt_progress(c, jobs[i].v.name);
            }
        }
        if (jobs[i].allocated) qmm_weight_free(&jobs[i].q);
    }
    return st;
}

/* Writes shard `shard` of the output to `path` (in the staging folder); *next walks the input's
 * tensors, which come by shard. */
static qmm_status qmm__ckpt_shard(qmm__ckpt *c, size_t shard, size_t *next, const char *path)
{
    qmm_safetensors_writer *w = NULL;
    QMM__TRY(qmm_safetensors_writer_create(path, 0, &w));
    qmm_status st = QMM_OK;
    for (size_t i = 0; i < qmm_safetensors_metadata_count(c->in, shard) && st == QMM_OK; i++) {
        const char *key, *value;
        qmm_safetensors_metadata_at(c->in, shard, i, &key, &value);
        if (strcmp(key, "quantized_by") != 0) st = qmm_safetensors_writer_set_metadata(w, key, value);
    }
    char by[96];
    snprintf(by, sizeof by, "qmm %s %s (%s)", qmm_version(), qmm__format_traits(c->format)->name, qmm_recipe_name(c->recipe));
    if (st == QMM_OK) st = qmm_safetensors_writer_set_metadata(w, "quantized_by", by);
    const size_t count = qmm_safetensors_tensor_count(c->in);
    qmm__ckpt_job jobs[QMM__CKPT_MAX_THREADS];
    size_t pending = 0; /* consecutive tensors to quantize, flushed before anything else is added */
    for (; st == QMM_OK; (*next)++) {
        qmm_tensor_view v;
        bool more = *next < count;
        if (more) {
            qmm_safetensors_tensor_at(c->in, *next, &v);
            more = v.shard == shard;
        }
        const char *why = NULL;
        const bool quantize = more && qmm__ckpt_should_quantize(c, &v, &why);
        if (pending && (!quantize || pending == (size_t)c->threads)) {
            st = qmm__ckpt_batch(c, w, jobs, pending);
            pending = 0;
            if (st != QMM_OK) break;
        }
        if (!more) break;
        c->r.bytes_in += v.bytes;
        if (quantize) {
            memset(&jobs[pending], 0, sizeof jobs[pending]);
            jobs[pending].c = c, jobs[pending].v = v;
            pending++;
            continue;
        }
        if (why) { /* a weight left unquantized: named in the quantization config */
            char *module = qmm__ckpt_module(&v);
            char **e = realloc(c->excluded, (c->excluded_count + 1) * sizeof *e);
            if (e) c->excluded = e;
            if (!module || !e) {
                free(module);
                st = qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", c->fn);
                break;
            }
            c->excluded[c->excluded_count++] = module;
        }
        st = qmm_safetensors_writer_add(w, v.name, v.dtype, v.ndim, v.shape, v.data, v.bytes);
    }
    if (st != QMM_OK) {
        qmm_safetensors_writer_discard(w);
        return st;
    }
    return qmm_safetensors_writer_finish(w);
}

/* The index of a sharded output lists what the new shards hold, read back from the staged files; the
 * tensor bytes of the output are counted on the way. */
static qmm_status qmm__ckpt_index(qmm__ckpt *c)
{
    const size_t shards = qmm_safetensors_shard_count(c->in);
    qmm_safetensors **opened = calloc(shards, sizeof *opened);
    if (!opened) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", c->fn);
    qmm_status st = QMM_OK;
    size_t entries = 0;
    for (size_t i = 0; i < shards && st == QMM_OK; i++) {
        char *path = qmm__path_join(c->stage, c->out[i].rel);
        st = path ? qmm_safetensors_open(path, &opened[i]) : qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", c->fn);
        free(path);
        for (size_t j = 0; st == QMM_OK && j < qmm_safetensors_tensor_count(opened[i]); j++) {
            qmm_tensor_view v;
            qmm_safetensors_tensor_at(opened[i], j, &v);
            c->r.bytes_out += v.bytes;
            entries++;
        }
    }
    const char **tn = st == QMM_OK ? malloc((entries + 1) * sizeof *tn) : NULL;
    const char **sn = st == QMM_OK ? malloc((entries + 1) * sizeof *sn) : NULL;
    if (st == QMM_OK && (!tn || !sn)) st = qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", c->fn);
    if (st == QMM_OK && c->indexed) {
        size_t e = 0;
        for (size_t i = 0; i < shards; i++)
            for (size_t j = 0; j < qmm_safetensors_tensor_count(opened[i]); j++) {
                qmm_tensor_view v;
                qmm_safetensors_tensor_at(opened[i], j, &v);
                tn[e] = v.name;
                sn[e++] = qmm_safetensors_shard_name(c->in, i);
            }
        char *path = qmm__path_join(c->stage, "model.safetensors.index.json");
        st = path ? qmm_safetensors_index_write(path, tn, sn, e, c->r.bytes_out, 0)
                  : qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", c->fn);
        free(path);
    }
    for (size_t i = 0; i < shards; i++) qmm_safetensors_close(opened[i]);
    free(opened);
    free(tn);
    free(sn);
    return st;
}

/* Copies the regular file `from` to the new file `to` (in the staging folder). */
static qmm_status qmm__ckpt_copy_file(const char *fn, const char *from, const char *to)
{
    int fd;
    QMM__TRY(qmm__open_regular(fn, from, &fd));
    FILE *a = fdopen(fd, "rb");
    if (!a) {
        close(fd);
        return qmm__fail(QMM_ERR_IO, "%s: cannot read '%s': %s", fn, from, strerror(errno));
    }
    FILE *b = fopen(to, "wbx");
    qmm_status st = b ? QMM_OK : qmm__fail(QMM_ERR_IO, "%s: cannot create '%s': %s", fn, to, strerror(errno));
    char buf[1 << 16];
    size_t got;
    while (st == QMM_OK && (got = fread(buf, 1, sizeof buf, a)) > 0)
        if (fwrite(buf, 1, got, b) != got) st = qmm__fail(QMM_ERR_IO, "%s: cannot write '%s': %s", fn, to, strerror(errno));
    if (st == QMM_OK && ferror(a)) st = qmm__fail(QMM_ERR_IO, "%s: cannot read '%s'", fn, from);
    if (b && fclose(b) != 0 && st == QMM_OK) st = qmm__fail(QMM_ERR_IO, "%s: cannot write '%s': %s", fn, to, strerror(errno));
    fclose(a);
    return st;
}

/* Everything of the output, written into the staging folder. */
static qmm_status qmm__ckpt_write(qmm__ckpt *c)
{
    const size_t shards = qmm_safetensors_shard_count(c->in);
    size_t next = 0;
    QMM__TRY(qmm__ckpt_progress(c, ""));
    for (size_t i = 0; i < shards; i++) {
        char *path = qmm__path_join(c->stage, c->out[i].rel);
        qmm_status st = path ? qmm__ckpt_shard(c, i, &next, path) : qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", c->fn);
        free(path);
        QMM__TRY(st);
    }
    QMM__TRY(qmm__ckpt_index(c));
    QMM__TRY(qmm_quant_config_write(c->stage, c->format, (const char *const *)c->excluded, c->excluded_count,
                                    c->have_config ? c->src_config : NULL, 0));
    for (size_t i = 0; i < c->out_count; i++) {
        if (!c->out[i].copied) continue;
        char *from = qmm__path_join(c->in_dir, c->out[i].rel), *to = qmm__path_join(c->stage, c->out[i].rel);
        qmm_status st = !from || !to ? qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", c->fn)
                        : c->out[i].dir ? (mkdir(to, 0755) == 0 ? QMM_OK : qmm__fail(QMM_ERR_IO, "%s: cannot create '%s': %s", c->fn, to, strerror(errno)))
                                        : qmm__ckpt_copy_file(c->fn, from, to);
        free(from);
        free(to);
        QMM__TRY(st);
    }
    return QMM_OK;
}

qmm_status qmm_checkpoint_quantize(const char *src, const char *dst, const qmm_checkpoint_quantize_options *o,
                                   qmm_checkpoint_quantize_result *result)
{
    static const char fn[] = "qmm_checkpoint_quantize";
    if (!src || !dst || !o) return qmm__fail(QMM_ERR_NULL_POINTER, "%s: %s is NULL", fn, !src ? "src" : !dst ? "dst" : "o");
    if (!src[0] || !dst[0]) return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: the %s path is empty", fn, !src[0] ? "input" : "output");
    const qmm_format_traits *t = qmm__format_traits(o->format);
    if (!t || o->format == QMM_FORMAT_BF16)
        return qmm__fail(QMM_ERR_INVALID_ENUM, "%s: format %d is not a quantized format", fn, (int)o->format);
    qmm_recipe recipe = o->recipe;
    QMM__TRY(qmm__recipe_resolve(fn, o->format, &recipe));
    if (o->threads < 0 || o->threads > QMM__CKPT_MAX_THREADS)
        return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: threads = %d (0 to %d)", fn, o->threads, QMM__CKPT_MAX_THREADS);
    if (o->flags & ~QMM_WRITE_OVERWRITE) return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: unknown flags 0x%x", fn, o->flags);
    if (o->exclude_count > QMM__CKPT_MAX_EXCLUDES || (o->exclude_count && !o->exclude))
        return qmm__fail(o->exclude_count > QMM__CKPT_MAX_EXCLUDES ? QMM_ERR_INVALID_ARGUMENT : QMM_ERR_NULL_POINTER,
                         "%s: %zu exclusions (at most %d, not NULL)", fn, o->exclude_count, QMM__CKPT_MAX_EXCLUDES);

    qmm__ckpt c;
    memset(&c, 0, sizeof c);
    c.fn = fn;
    c.o = o;
    c.format = o->format;
    c.recipe = recipe;
    c.overwrite = o->flags & QMM_WRITE_OVERWRITE;
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    c.threads = o->threads ? o->threads : cores < 1 ? 1 : cores > QMM__CKPT_DEFAULT_THREADS ? QMM__CKPT_DEFAULT_THREADS : (int)cores;
    c.exclude = calloc(o->exclude_count + 1, sizeof *c.exclude);
    qmm_status st = c.exclude ? QMM_OK : qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    for (size_t i = 0; st == QMM_OK && i <= o->exclude_count; i++) {
        const char *re = i == 0 ? qmm__default_exclude : o->exclude[i - 1];
        int rc = re ? regcomp(&c.exclude[i], re, REG_EXTENDED | REG_NOSUB | (i == 0 ? REG_ICASE : 0)) : REG_BADPAT;
        if (rc != 0) {
            char msg[128] = "NULL";
            if (re) regerror(rc, &c.exclude[i], msg, sizeof msg);
            st = qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: exclusion '%.200s': %s", fn, re ? re : "(null)", msg);
        } else {
            c.exclude_count++;
        }
    }
    if (st == QMM_OK) st = qmm_safetensors_open(src, &c.in);
    if (st == QMM_OK && qmm_safetensors_tensor_count(c.in) == 0)
        st = qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: '%s' holds no tensors", fn, src);
    if (st == QMM_OK) st = qmm__ckpt_plan(&c, src, dst);
    if (st == QMM_OK) st = qmm__ckpt_check(&c, src, dst);
    if (st == QMM_OK) st = qmm__ckpt_stage(&c);
    c.r.tensors = qmm_safetensors_tensor_count(c.in);
    c.r.recipe = recipe;
    for (size_t i = 0; st == QMM_OK && i < c.r.tensors; i++) {
        qmm_tensor_view v;
        const char *why;
        qmm_safetensors_tensor_at(c.in, i, &v);
        if (qmm__ckpt_should_quantize(&c, &v, &why)) c.r.quantized++;
    }
    if (st == QMM_OK) st = qmm__ckpt_write(&c);
    if (st == QMM_OK) st = qmm__ckpt_commit(&c);
    qmm__ckpt_unstage(&c, st == QMM_OK);
    if (st == QMM_OK && result) {
        c.r.unquantized = c.excluded_count;
        *result = c.r;
    }
    for (size_t i = 0; i < c.exclude_count; i++) regfree(&c.exclude[i]);
    free(c.exclude);
    for (size_t i = 0; i < c.excluded_count; i++) free(c.excluded[i]);
    free(c.excluded);
    qmm__ckpt_plan_free(&c);
    qmm_safetensors_close(c.in);
    return st;
}
