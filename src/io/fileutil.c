/* Paths, bounded whole-file reads and atomic writes for the io layer. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/error.h"
#include "fileutil.h"

void *qmm__grow(void *items, size_t *cap, size_t count, size_t size)
{
    if (count < *cap) return items;
    const size_t n = *cap ? 2 * *cap : 16;
    if (n < *cap || n > SIZE_MAX / size) return NULL;
    void *p = realloc(items, n * size);
    if (p) *cap = n;
    return p;
}

char *qmm__path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    bool bare = a == 0 || strcmp(dir, ".") == 0;
    char *p = malloc(a + b + 2);
    if (!p) return NULL;
    if (bare) {
        memcpy(p, name, b + 1);
    } else {
        memcpy(p, dir, a);
        size_t n = a;
        if (dir[a - 1] != '/') p[n++] = '/';
        memcpy(p + n, name, b + 1);
    }
    return p;
}

char *qmm__path_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (slash == path ? 1 : (size_t)(slash - path)) : 1;
    char *d = malloc(n + 1);
    if (!d) return NULL;
    if (slash) memcpy(d, path, n);
    else d[0] = '.';
    d[n] = '\0';
    return d;
}

bool qmm__path_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

qmm_status qmm__open_regular(const char *fn, const char *path, int *fd)
{
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer; it changes nothing
     * for the regular files that are read here */
    int d = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (d < 0)
        return qmm__fail(errno == ENOENT ? QMM_ERR_NOT_FOUND : QMM_ERR_IO, "%s: cannot open '%s': %s", fn, path,
                         strerror(errno));
    struct stat st;
    if (fstat(d, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(d);
        return qmm__fail(QMM_ERR_IO, "%s: '%s' is not a regular file", fn, path);
    }
    *fd = d;
    return QMM_OK;
}

qmm_status qmm__read_file(const char *fn, const char *path, size_t max, char **text, size_t *len)
{
    int fd;
    QMM__TRY(qmm__open_regular(fn, path, &fd));
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return qmm__fail(QMM_ERR_IO, "%s: cannot read '%s': %s", fn, path, strerror(errno));
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    qmm_status st = QMM_OK;
    while (buf) {
        if (n == cap) {
            if (cap > max) break;
            char *b = realloc(buf, cap * 2 + 1);
            if (!b) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    if (!buf) st = qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory reading '%s'", fn, path);
    else if (ferror(f)) st = qmm__fail(QMM_ERR_IO, "%s: cannot read '%s'", fn, path);
    else if (n > max) st = qmm__fail(QMM_ERR_MALFORMED, "%s: '%s' is larger than %zu bytes", fn, path, max);
    fclose(f);
    if (st != QMM_OK) {
        free(buf);
        return st;
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return QMM_OK;
}

qmm_status qmm__temp_create(const char *fn, const char *path, FILE **file, char **tmp_path)
{
    static const char suffix[] = ".qmm-tmp-XXXXXX";
    size_t n = strlen(path);
    char *tmp = malloc(n + sizeof suffix);
    if (!tmp) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    memcpy(tmp, path, n);
    memcpy(tmp + n, suffix, sizeof suffix);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        qmm_status st = qmm__fail(QMM_ERR_IO, "%s: cannot create a temporary file beside '%s': %s", fn, path,
                                  strerror(errno));
        free(tmp);
        return st;
    }
    fchmod(fd, 0644); /* mkstemp makes 0600; the finished file should read like any other */
    FILE *f = fdopen(fd, "w+b");
    if (!f) {
        close(fd);
        unlink(tmp);
        free(tmp);
        return qmm__fail(QMM_ERR_IO, "%s: cannot open a temporary file", fn);
    }
    *file = f;
    *tmp_path = tmp;
    return QMM_OK;
}

qmm_status qmm__temp_commit(const char *fn, char *tmp_path, const char *path, bool overwrite)
{
    qmm_status st = QMM_OK;
    if (overwrite) {
        if (rename(tmp_path, path) != 0)
            st = qmm__fail(QMM_ERR_IO, "%s: cannot rename into '%s': %s", fn, path, strerror(errno));
    } else if (link(tmp_path, path) != 0) {
        if (errno == EEXIST) {
            st = qmm__fail(QMM_ERR_EXISTS, "%s: '%s' exists (overwriting was not asked for)", fn, path);
        } else if (qmm__path_exists(path)) {
            st = qmm__fail(QMM_ERR_EXISTS, "%s: '%s' exists (overwriting was not asked for)", fn, path);
        } else if (rename(tmp_path, path) != 0) { /* a file system without hard links */
            st = qmm__fail(QMM_ERR_IO, "%s: cannot rename into '%s': %s", fn, path, strerror(errno));
        }
    }
    unlink(tmp_path); /* after a rename it is gone already; after a link it is the second name */
    free(tmp_path);
    return st;
}

qmm_status qmm__write_file_atomic(const char *fn, const char *path, const void *data, size_t len, bool overwrite)
{
    if (!overwrite && qmm__path_exists(path))
        return qmm__fail(QMM_ERR_EXISTS, "%s: '%s' exists (overwriting was not asked for)", fn, path);
    FILE *f;
    char *tmp;
    QMM__TRY(qmm__temp_create(fn, path, &f, &tmp));
    bool ok = fwrite(data, 1, len, f) == len;
    ok = (fclose(f) == 0) && ok;
    if (!ok) {
        unlink(tmp);
        free(tmp);
        return qmm__fail(QMM_ERR_IO, "%s: cannot write '%s'", fn, path);
    }
    return qmm__temp_commit(fn, tmp, path, overwrite);
}
