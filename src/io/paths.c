/* File identities, folder containment and the removal of a run's own files (paths.h). */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/error.h"
#include "fileutil.h"
#include "paths.h"

bool qmm__file_id_of(const char *path, qmm__file_id *id)
{
    struct stat st;
    if (stat(path, &st) != 0) return false;
    id->dev = st.st_dev;
    id->ino = st.st_ino;
    return true;
}

qmm_status qmm__dir_within(const char *fn, const char *dir, const qmm__file_id *anc, bool *within)
{
    enum { MAX_LEVELS = 1024 };
    /* dir, then dir/.., dir/../.., ...: each ".." is resolved by the kernel after the links before it,
     * so the walk follows the physical parents; it needs search permission only, not read */
    size_t len = strlen(dir), cap = len + 3 * MAX_LEVELS + 1;
    char *p = malloc(cap);
    if (!p) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    memcpy(p, dir, len + 1);
    qmm__file_id cur;
    if (!qmm__file_id_of(p, &cur)) {
        qmm_status st = qmm__fail(QMM_ERR_IO, "%s: cannot reach folder '%s': %s", fn, dir, strerror(errno));
        free(p);
        return st;
    }
    for (int level = 0; level < MAX_LEVELS; level++) {
        if (qmm__file_id_equal(&cur, anc)) {
            free(p);
            *within = true;
            return QMM_OK;
        }
        memcpy(p + len, "/..", 4);
        len += 3;
        qmm__file_id up;
        if (!qmm__file_id_of(p, &up)) {
            qmm_status st = qmm__fail(QMM_ERR_IO, "%s: cannot reach a parent of folder '%s': %s", fn, dir, strerror(errno));
            free(p);
            return st;
        }
        if (qmm__file_id_equal(&up, &cur)) { /* the root is its own parent */
            free(p);
            *within = false;
            return QMM_OK;
        }
        cur = up;
    }
    free(p);
    return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: folder '%s' lies more than %d levels deep", fn, dir, MAX_LEVELS);
}

const char *qmm__path_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

void qmm__remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return;
    if (!S_ISDIR(st.st_mode)) {
        unlink(path);
        return;
    }
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            char *child = qmm__path_join(path, e->d_name);
            if (child) qmm__remove_tree(child);
            free(child);
        }
        closedir(d);
    }
    rmdir(path);
}
