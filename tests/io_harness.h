/* Helpers of the io tests: a scratch folder removed at the end, building safetensors bytes by hand,
 * and reading files. Header-only like harness.h. */
#ifndef QMM_TESTS_IO_HARNESS_H
#define QMM_TESTS_IO_HARNESS_H

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "qmm_io.h"

static char io_dir[256];

static inline const char *io_path(const char *name)
{
    static char buf[4][512];
    static int next;
    char *p = buf[next++ % 4];
    snprintf(p, 512, "%s/%s", io_dir, name);
    return p;
}

static inline void io_make_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(io_dir, sizeof io_dir, "%s/qmm-io-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(io_dir)) {
        perror("mkdtemp");
        exit(1);
    }
}

static inline void io_remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            size_t len = strlen(path) + strlen(e->d_name) + 2;
            char *sub = malloc(len);
            snprintf(sub, len, "%s/%s", path, e->d_name);
            io_remove_tree(sub);
            free(sub);
        }
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* Number of entries of a folder (temporary files left behind show up here). */
static inline int io_count_entries(const char *path)
{
    DIR *d = opendir(path);
    int n = 0;
    if (!d) return -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* 8-byte length + header + data_len bytes of data (byte i = i & 0xff), malloc'd. */
static inline unsigned char *io_file_bytes(const char *header, size_t data_len, size_t *size)
{
    size_t h = strlen(header);
    *size = 8 + h + data_len;
    unsigned char *b = malloc(*size + 1);
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(b + 8, header, h);
    for (size_t i = 0; i < data_len; i++) b[8 + h + i] = (unsigned char)i;
    return b;
}

static inline unsigned char *io_read(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    *size = fread(b, 1, (size_t)n, f);
    b[*size] = 0;
    fclose(f);
    return b;
}

static inline void io_write(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    fwrite(data, 1, size, f);
    fclose(f);
}

#endif
