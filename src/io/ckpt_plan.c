/* The files a qmm_checkpoint_quantize() run reads and writes, kept apart (ckpt_plan.h). */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/error.h"
#include "ckpt_plan.h"
#include "fileutil.h"

enum { QMM__CKPT_MAX_DEPTH = 64 };

static bool qmm__ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static char *qmm__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

static qmm_status qmm__oom(const qmm__ckpt *c) { return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", c->fn); }

/* Appends an output; takes rel (NULL: out of memory). */
static qmm_status qmm__ckpt_add_out(qmm__ckpt *c, char *rel, bool dir, bool copied)
{
    qmm__out_entry *grown = rel ? qmm__grow(c->out, &c->out_cap, c->out_count, sizeof *grown) : NULL;
    if (!grown) {
        free(rel);
        return qmm__oom(c);
    }
    c->out = grown;
    qmm__out_entry e = {rel, dir, copied, false, false};
    c->out[c->out_count++] = e;
    return QMM_OK;
}

/* Appends a file the run reads, when it exists; takes path. */
static qmm_status qmm__ckpt_add_input(qmm__ckpt *c, char *path)
{
    qmm__file_id id;
    if (!path) return qmm__oom(c);
    if (!qmm__file_id_of(path, &id)) {
        free(path);
        return QMM_OK;
    }
    qmm__in_entry *grown = qmm__grow(c->inputs, &c->input_cap, c->input_count, sizeof *grown);
    if (!grown) {
        free(path);
        return qmm__oom(c);
    }
    c->inputs = grown;
    qmm__in_entry e = {path, id};
    c->inputs[c->input_count++] = e;
    return QMM_OK;
}

/* Names at the top of the input folder that are not copied: hidden ones, the shards and the files
 * the run writes itself. */
static bool qmm__ckpt_skip_top(const qmm__ckpt *c, const char *name)
{
    if (name[0] == '.' || qmm__ends_with(name, ".safetensors") || strcmp(name, "model.safetensors.index.json") == 0 ||
        strcmp(name, "config.json") == 0 || strcmp(name, "hf_quant_config.json") == 0)
        return true;
    for (size_t s = 0; s < qmm_safetensors_shard_count(c->in); s++)
        if (strcmp(name, qmm_safetensors_shard_name(c->in, s)) == 0) return true;
    return false;
}

/* The other files and folders of the input folder below rel ("" for the top), to be copied. Links are
 * followed (a Hugging Face snapshot is links to its blobs); a folder that is one of its own ancestors
 * (chain[0 .. depth]) is a loop and an error. FIFOs, sockets and devices are not copied. */
static qmm_status qmm__ckpt_collect(qmm__ckpt *c, const char *rel, qmm__file_id *chain, int depth)
{
    char *dir = rel[0] ? qmm__path_join(c->in_dir, rel) : qmm__strdup(c->in_dir);
    if (!dir) return qmm__oom(c);
    DIR *d = opendir(dir);
    if (!d) {
        qmm_status st = qmm__fail(QMM_ERR_IO, "%s: cannot read folder '%s': %s", c->fn, dir, strerror(errno));
        free(dir);
        return st;
    }
    qmm_status st = QMM_OK;
    struct dirent *e;
    while (st == QMM_OK && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (depth == 0 && qmm__ckpt_skip_top(c, e->d_name)) continue;
        char *child_rel = rel[0] ? qmm__path_join(rel, e->d_name) : qmm__strdup(e->d_name);
        char *child = child_rel ? qmm__path_join(c->in_dir, child_rel) : NULL;
        struct stat sb;
        if (!child) {
            st = qmm__oom(c);
        } else if (stat(child, &sb) != 0) {
            /* a dangling link or a race: nothing to copy */
        } else if (S_ISDIR(sb.st_mode)) {
            qmm__file_id id = {sb.st_dev, sb.st_ino};
            for (int i = 0; i <= depth && st == QMM_OK; i++)
                if (qmm__file_id_equal(&id, &chain[i]))
                    st = qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: folder '%s' of the input links back to '%s' (a loop)",
                                   c->fn, child, i == 0 ? c->in_dir : "one of its own ancestors");
            if (st == QMM_OK && depth + 1 >= QMM__CKPT_MAX_DEPTH)
                st = qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: '%s' lies more than %d folders deep in the input", c->fn,
                               child, QMM__CKPT_MAX_DEPTH);
            if (st == QMM_OK) {
                st = qmm__ckpt_add_out(c, qmm__strdup(child_rel), true, true);
                chain[depth + 1] = id;
            }
            if (st == QMM_OK) st = qmm__ckpt_collect(c, child_rel, chain, depth + 1);
        } else if (S_ISREG(sb.st_mode)) {
            st = qmm__ckpt_add_out(c, qmm__strdup(child_rel), false, true);
            if (st == QMM_OK) st = qmm__ckpt_add_input(c, qmm__strdup(child));
        }
        free(child_rel);
        free(child);
    }
    closedir(d);
    free(dir);
    return st;
}

qmm_status qmm__ckpt_plan(qmm__ckpt *c, const char *src, const char *dst)
{
    struct stat sb;
    if (stat(src, &sb) != 0) return qmm__fail(QMM_ERR_IO, "%s: cannot reach '%s': %s", c->fn, src, strerror(errno));
    const bool src_dir = S_ISDIR(sb.st_mode);
    c->folder = src_dir || qmm__ends_with(src, ".json");
    if (!c->folder && qmm__path_basename(dst)[0] == '\0')
        return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: the output '%s' names a folder; the output of the single file '%s' "
                         "is a file", c->fn, dst, src);
    c->in_dir = src_dir ? qmm__strdup(src) : qmm__path_dirname(src);
    c->out_dir = c->folder ? qmm__strdup(dst) : qmm__path_dirname(dst);
    c->src_config = c->in_dir ? qmm__path_join(c->in_dir, "config.json") : NULL;
    if (!c->in_dir || !c->out_dir || !c->src_config) return qmm__oom(c);
    c->have_config = stat(c->src_config, &sb) == 0;
    const size_t shards = qmm_safetensors_shard_count(c->in);
    c->indexed = c->folder && (shards > 1 || qmm__ends_with(src, ".json") ||
                               strcmp(qmm_safetensors_shard_name(c->in, 0), "model.safetensors") != 0);
    /* the outputs: shards first, so out[i] is shard i */
    for (size_t i = 0; i < shards; i++)
        QMM__TRY(qmm__ckpt_add_out(c, qmm__strdup(c->folder ? qmm_safetensors_shard_name(c->in, i) : qmm__path_basename(dst)),
                                   false, false));
    if (c->indexed) QMM__TRY(qmm__ckpt_add_out(c, qmm__strdup("model.safetensors.index.json"), false, false));
    QMM__TRY(qmm__ckpt_add_out(c, qmm__strdup("hf_quant_config.json"), false, false));
    if (c->have_config) QMM__TRY(qmm__ckpt_add_out(c, qmm__strdup("config.json"), false, false));
    /* the inputs: shards, the index, config.json and, for a folder, every file copied */
    for (size_t i = 0; i < shards; i++)
        QMM__TRY(qmm__ckpt_add_input(c, c->folder ? qmm__path_join(c->in_dir, qmm_safetensors_shard_name(c->in, i))
                                                  : qmm__strdup(src)));
    if (c->folder)
        QMM__TRY(qmm__ckpt_add_input(c, qmm__ends_with(src, ".json") ? qmm__strdup(src)
                                                                      : qmm__path_join(c->in_dir, "model.safetensors.index.json")));
    QMM__TRY(qmm__ckpt_add_input(c, qmm__strdup(c->src_config)));
    if (c->folder) {
        qmm__file_id chain[QMM__CKPT_MAX_DEPTH];
        if (!qmm__file_id_of(c->in_dir, &chain[0]))
            return qmm__fail(QMM_ERR_IO, "%s: cannot reach folder '%s': %s", c->fn, c->in_dir, strerror(errno));
        QMM__TRY(qmm__ckpt_collect(c, "", chain, 0));
    }
    return QMM_OK;
}

static int qmm__cmp_rel(const void *a, const void *b)
{
    return strcmp((*(const qmm__out_entry *const *)a)->rel, (*(const qmm__out_entry *const *)b)->rel);
}

/* The output folder against the input folder (see qmm_checkpoint_quantize in qmm.h). */
static qmm_status qmm__ckpt_check_dirs(qmm__ckpt *c, const char *src, const char *dst)
{
    qmm__file_id in_id, out_id;
    if (!qmm__file_id_of(c->in_dir, &in_id))
        return qmm__fail(QMM_ERR_IO, "%s: cannot reach folder '%s': %s", c->fn, c->in_dir, strerror(errno));
    struct stat lb, sb;
    bool within;
    if (lstat(c->out_dir, &lb) == 0) {
        if (stat(c->out_dir, &sb) != 0)
            return qmm__fail(QMM_ERR_UNSAFE_OUTPUT, "%s: the output folder '%s' is a broken link", c->fn, c->out_dir);
        if (!S_ISDIR(sb.st_mode)) {
            if (c->folder && S_ISREG(sb.st_mode))
                return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: the output '%s' is a file; a checkpoint folder '%s' is "
                                 "quantized into a folder", c->fn, dst, src);
            return qmm__fail(QMM_ERR_UNSAFE_OUTPUT, "%s: the output folder '%s' is not a folder", c->fn, c->out_dir);
        }
        out_id.dev = sb.st_dev, out_id.ino = sb.st_ino;
        if (!c->folder) {
            if (qmm__file_id_equal(&out_id, &in_id))
                return qmm__fail(QMM_ERR_UNSAFE_OUTPUT, "%s: the output '%s' is in the folder of the input '%s'; qmm does "
                                 "not write beside a single-file input (its config files would go there)", c->fn, dst, src);
            return QMM_OK;
        }
        QMM__TRY(qmm__dir_within(c->fn, c->out_dir, &in_id, &within));
        if (within)
            return qmm__fail(QMM_ERR_UNSAFE_OUTPUT, "%s: the output folder '%s' is the input folder '%s' or lies inside it",
                             c->fn, dst, c->in_dir);
        QMM__TRY(qmm__dir_within(c->fn, c->in_dir, &out_id, &within));
        if (within)
            return qmm__fail(QMM_ERR_UNSAFE_OUTPUT, "%s: the output folder '%s' contains the input folder '%s'", c->fn, dst,
                             c->in_dir);
        return QMM_OK;
    }
    /* a folder to make, one level below one that exists */
    char *parent = qmm__path_dirname(c->out_dir);
    if (!parent) return qmm__oom(c);
    qmm_status st = QMM_OK;
    if (stat(parent, &sb) != 0 || !S_ISDIR(sb.st_mode))
        st = qmm__fail(QMM_ERR_NOT_FOUND, "%s: the folder '%s' that would hold the output '%s' does not exist", c->fn,
                       parent, dst);
    else if (c->folder && (st = qmm__dir_within(c->fn, parent, &in_id, &within)) == QMM_OK && within)
        st = qmm__fail(QMM_ERR_UNSAFE_OUTPUT, "%s: the output folder '%s' would lie inside the input folder '%s'", c->fn,
                       dst, c->in_dir);
    free(parent);
    return st;
}

qmm_status qmm__ckpt_check(qmm__ckpt *c, const char *src, const char *dst)
{
    /* no two outputs of one name (a shard called config.json, an output file named like a config) */
    qmm__out_entry **sorted = malloc(c->out_count * sizeof *sorted);
    if (!sorted) return qmm__oom(c);
    for (size_t i = 0; i < c->out_count; i++) sorted[i] = &c->out[i];
    qsort(sorted, c->out_count, sizeof *sorted, qmm__cmp_rel);
    const char *dup = NULL;
    for (size_t i = 1; i < c->out_count && !dup; i++)
        if (strcmp(sorted[i - 1]->rel, sorted[i]->rel) == 0) dup = sorted[i]->rel;
    free(sorted);
    if (dup)
        return qmm__fail(QMM_ERR_UNSAFE_OUTPUT, "%s: two outputs of '%s' would both be named '%s' in '%s'", c->fn, src, dup,
                         c->out_dir);
    QMM__TRY(qmm__ckpt_check_dirs(c, src, dst));
    qmm__file_id in_id;
    if (!qmm__file_id_of(c->in_dir, &in_id))
        return qmm__fail(QMM_ERR_IO, "%s: cannot reach folder '%s': %s", c->fn, c->in_dir, strerror(errno));
    for (size_t i = 0; i < c->out_count; i++) {
        const qmm__out_entry *e = &c->out[i];
        char *path = qmm__path_join(c->out_dir, e->rel);
        if (!path) return qmm__oom(c);
        struct stat lb, sb;
        qmm_status st = QMM_OK;
        if (lstat(path, &lb) != 0) {
            /* nothing there */
        } else if (stat(path, &sb) != 0) { /* a broken link: replaced as a file, never followed */
            if (e->dir) st = qmm__fail(QMM_ERR_UNSAFE_OUTPUT, "%s: the output folder '%s' is a broken link", c->fn, path);
            else if (!c->overwrite) st = qmm__fail(QMM_ERR_EXISTS, "%s: '%s' exists", c->fn, path);
        } else if (e->dir) {
            bool within = false;
            if (!S_ISDIR(sb.st_mode))
                st = qmm__fail(QMM_ERR_UNSAFE_OUTPUT, "%s: the output '%s' exists and is not a folder", c->fn, path);
            else if ((st = qmm__dir_within(c->fn, path, &in_id, &within)) == QMM_OK && within)
                st = qmm__fail(QMM_ERR_UNSAFE_OUTPUT, "%s: the output folder '%s' leads into the input folder '%s'", c->fn,
                               path, c->in_dir);
        } else if (!S_ISREG(sb.st_mode)) {
            st = qmm__fail(QMM_ERR_UNSAFE_OUTPUT, "%s: the output '%s' is %s; qmm replaces regular files only", c->fn, path,
                           S_ISDIR(sb.st_mode) ? "a folder" : "a FIFO, socket or device");
        } else {
            const qmm__file_id id = {sb.st_dev, sb.st_ino};
            for (size_t j = 0; j < c->input_count && st == QMM_OK; j++)
                if (qmm__file_id_equal(&id, &c->inputs[j].id))
                    st = qmm__fail(QMM_ERR_UNSAFE_OUTPUT, "%s: the output '%s' is the input file '%s' under another name",
                                   c->fn, path, c->inputs[j].path);
            if (st == QMM_OK && !c->overwrite) st = qmm__fail(QMM_ERR_EXISTS, "%s: '%s' exists", c->fn, path);
        }
        free(path);
        QMM__TRY(st);
    }
    return QMM_OK;
}

qmm_status qmm__ckpt_stage(qmm__ckpt *c)
{
    struct stat sb;
    if (stat(c->out_dir, &sb) != 0) {
        if (mkdir(c->out_dir, 0755) != 0)
            return qmm__fail(QMM_ERR_IO, "%s: cannot create folder '%s': %s", c->fn, c->out_dir, strerror(errno));
        c->made_out_dir = true;
    }
    c->stage = qmm__path_join(c->out_dir, ".qmm-partial-XXXXXX");
    if (!c->stage) return qmm__oom(c);
    if (!mkdtemp(c->stage)) {
        qmm_status st = qmm__fail(QMM_ERR_IO, "%s: cannot create a staging folder in '%s': %s", c->fn, c->out_dir,
                                  strerror(errno));
        free(c->stage);
        c->stage = NULL;
        return st;
    }
    return QMM_OK;
}

/* Moves the staged file `from` to `to`: rename() when overwriting, else link() + unlink(), so that a file
 * that appeared at `to` since the checks is never replaced. */
static qmm_status qmm__ckpt_move(const qmm__ckpt *c, const char *from, const char *to)
{
    if (c->overwrite) {
        if (rename(from, to) != 0) return qmm__fail(QMM_ERR_IO, "%s: cannot move into '%s': %s", c->fn, to, strerror(errno));
        return QMM_OK;
    }
    if (link(from, to) != 0) {
        if (errno == EEXIST) return qmm__fail(QMM_ERR_EXISTS, "%s: '%s' exists", c->fn, to);
        if (qmm__path_exists(to)) return qmm__fail(QMM_ERR_EXISTS, "%s: '%s' exists", c->fn, to);
        if (rename(from, to) != 0) /* a file system without hard links */
            return qmm__fail(QMM_ERR_IO, "%s: cannot move into '%s': %s", c->fn, to, strerror(errno));
        return QMM_OK;
    }
    unlink(from);
    return QMM_OK;
}

qmm_status qmm__ckpt_commit(qmm__ckpt *c)
{
    qmm_status st = QMM_OK;
    for (size_t i = 0; i < c->out_count && st == QMM_OK; i++) {
        qmm__out_entry *e = &c->out[i];
        char *to = qmm__path_join(c->out_dir, e->rel), *from = qmm__path_join(c->stage, e->rel);
        struct stat sb;
        if (!to || !from) {
            st = qmm__oom(c);
        } else if (e->dir) {
            if (stat(to, &sb) != 0) {
                if (mkdir(to, 0755) != 0) st = qmm__fail(QMM_ERR_IO, "%s: cannot create '%s': %s", c->fn, to, strerror(errno));
                else e->committed = true;
            }
        } else {
            e->replaced = lstat(to, &sb) == 0;
            st = qmm__ckpt_move(c, from, to);
            e->committed = st == QMM_OK;
        }
        free(to);
        free(from);
    }
    if (st == QMM_OK) return QMM_OK;
    /* take back what was moved into place and replaced nothing, then the folders made, deepest first */
    for (size_t i = c->out_count; i-- > 0;) {
        qmm__out_entry *e = &c->out[i];
        if (!e->committed || e->replaced) continue;
        char *to = qmm__path_join(c->out_dir, e->rel);
        if (to && e->dir) rmdir(to);
        else if (to) unlink(to);
        free(to);
    }
    return st;
}

void qmm__ckpt_unstage(qmm__ckpt *c, bool ok)
{
    if (c->stage) qmm__remove_tree(c->stage);
    if (!ok && c->made_out_dir) rmdir(c->out_dir); /* only if nothing else was written there */
}

void qmm__ckpt_plan_free(qmm__ckpt *c)
{
    for (size_t i = 0; i < c->out_count; i++) free(c->out[i].rel);
    free(c->out);
    for (size_t i = 0; i < c->input_count; i++) free(c->inputs[i].path);
    free(c->inputs);
    free(c->in_dir);
    free(c->out_dir);
    free(c->src_config);
    free(c->stage);
}
