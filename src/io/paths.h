/* File identities and folder relations for the commands that write beside a user's checkpoint: an
 * output is compared with the inputs by device and inode (so a symbolic link, a hard link, ".." or
 * another name of the same file is the same file), never by the text of its path. */
#ifndef QMM_IO_PATHS_H
#define QMM_IO_PATHS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "qmm.h"

/* What stat() says of a path, links followed. */
typedef struct qmm__file_id {
    dev_t dev;
    ino_t ino;
} qmm__file_id;

/* The identity of path (links followed); false when it does not exist or cannot be reached. */
bool qmm__file_id_of(const char *path, qmm__file_id *id);

static inline bool qmm__file_id_equal(const qmm__file_id *a, const qmm__file_id *b)
{
    return a->dev == b->dev && a->ino == b->ino;
}

/* Whether the folder `dir` is the folder `anc` or lies below it, by walking up through ".." (the
 * physical parent, after links) from dir to the root. Errors: QMM_ERR_IO (a folder on the way cannot be
 * read), QMM_ERR_INVALID_ARGUMENT (more than 1024 levels). */
qmm_status qmm__dir_within(const char *fn, const char *dir, const qmm__file_id *anc, bool *within);

/* The last part of a path (after the last '/'); "" when the path ends with '/'. */
const char *qmm__path_basename(const char *path);

/* Removes path and, for a folder, everything below it; symbolic links are removed, not followed.
 * Best effort: used to take back what a failed run wrote. */
void qmm__remove_tree(const char *path);

#endif
