/* File helpers of the io layer: paths, whole-file reads with a size limit, and atomic writes
 * (a temporary file beside the target, then a rename, or a link when overwriting is not allowed, so
 * an existing file is never replaced by accident and a failure leaves nothing behind). */
#ifndef QMM_IO_FILEUTIL_H
#define QMM_IO_FILEUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "qmm.h"

/* Room for one more item in a malloc'd array of `count` items of `size` bytes with room for *cap:
 * the array, reallocated to twice the room (16 at first) when full. NULL when out of memory (items
 * and *cap as they were). */
void *qmm__grow(void *items, size_t *cap, size_t count, size_t size);

/* dir + "/" + name (name alone when dir is "" or "."), malloc'd; NULL when out of memory. */
char *qmm__path_join(const char *dir, const char *name);

/* The folder part of path ("." when it has none), malloc'd; NULL when out of memory. */
char *qmm__path_dirname(const char *path);

/* True when path exists (as anything). */
bool qmm__path_exists(const char *path);

/* Opens path read-only as a regular file: a FIFO, device, socket or folder is refused without
 * blocking (the open does not wait for a FIFO's writer). *fd is the open descriptor.
 * Errors: QMM_ERR_NOT_FOUND, QMM_ERR_IO (cannot open, or not a regular file). */
qmm_status qmm__open_regular(const char *fn, const char *path, int *fd);

/* Reads the whole file into a malloc'd, NUL-terminated buffer. Errors: QMM_ERR_NOT_FOUND, QMM_ERR_IO,
 * QMM_ERR_MALFORMED (larger than max bytes), QMM_ERR_OUT_OF_MEMORY. */
qmm_status qmm__read_file(const char *fn, const char *path, size_t max, char **text, size_t *len);

/* Creates a temporary file beside `path` (path + ".qmm-tmp-XXXXXX"), open for writing; *tmp_path is
 * malloc'd. Errors: QMM_ERR_IO, QMM_ERR_OUT_OF_MEMORY. */
qmm_status qmm__temp_create(const char *fn, const char *path, FILE **file, char **tmp_path);

/* Moves the finished temporary file to path: rename() with overwrite, else link() + unlink() so that
 * an existing path fails with QMM_ERR_EXISTS. The temporary file is removed in every case. */
qmm_status qmm__temp_commit(const char *fn, char *tmp_path, const char *path, bool overwrite);

/* Writes len bytes to path atomically (see above). */
qmm_status qmm__write_file_atomic(const char *fn, const char *path, const void *data, size_t len, bool overwrite);

#endif
