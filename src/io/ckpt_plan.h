/* The layout of a qmm_checkpoint_quantize() run: which files it reads, which it writes, the checks
 * that keep the two apart, and the staging folder that makes the output appear all at once. */
#ifndef QMM_IO_CKPT_PLAN_H
#define QMM_IO_CKPT_PLAN_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

#include "paths.h"
#include "qmm_io.h"

/* One output: a file or folder of the run, by its path relative to the output folder. */
typedef struct qmm__out_entry {
    char *rel;
    bool dir;
    bool copied;    /* copied from the input folder, where rel is its path too */
    bool committed; /* moved into place (a file) or made (a folder) by this run */
    bool replaced;  /* a file that replaced one that existed */
} qmm__out_entry;

/* A file the run reads. */
typedef struct qmm__in_entry {
    char *path;
    qmm__file_id id;
} qmm__in_entry;

typedef struct qmm__ckpt {
    const char *fn;
    const qmm_checkpoint_quantize_options *o;
    qmm_format format;
    qmm_recipe recipe;
    regex_t *exclude; /* [0] is the default exclusion */
    size_t exclude_count;
    int threads;
    bool overwrite;
    qmm_safetensors *in;
    bool folder;         /* a folder or index in, a folder out; else a file in, a file out */
    bool indexed;        /* the output gets a model.safetensors.index.json */
    char *in_dir;        /* the input's folder */
    char *out_dir;       /* the folder the outputs go to: dst, or dst's folder */
    char *src_config;    /* in_dir/config.json */
    bool have_config;
    char *stage;         /* the hidden staging folder inside out_dir */
    bool made_out_dir;
    qmm__out_entry *out; /* shards first (out[i] is shard i), then index and configs, then copies */
    size_t out_count, out_cap;
    qmm__in_entry *inputs;
    size_t input_count, input_cap;
    char **excluded;     /* module names of 2-D float weights left unquantized */
    size_t excluded_count;
    qmm_checkpoint_quantize_result r;
    size_t done;         /* tensors quantized so far */
} qmm__ckpt;

/* Lays out the run's outputs and inputs (c->in is open). */
qmm_status qmm__ckpt_plan(qmm__ckpt *c, const char *src, const char *dst);

/* Refuses, before anything is written, every output that would touch an input or is not what qmm
 * writes, and existing outputs without overwriting (see qmm_checkpoint_quantize in qmm.h). */
qmm_status qmm__ckpt_check(qmm__ckpt *c, const char *src, const char *dst);

/* Makes the output folder when missing (one level) and the staging folder inside it. */
qmm_status qmm__ckpt_stage(qmm__ckpt *c);

/* Moves every staged output into place; on failure takes back what it moved that replaced nothing. */
qmm_status qmm__ckpt_commit(qmm__ckpt *c);

/* Removes the staging folder and, after a failure, an output folder the run made. */
void qmm__ckpt_unstage(qmm__ckpt *c, bool ok);

/* Frees what qmm__ckpt_plan() and qmm__ckpt_stage() allocated. */
void qmm__ckpt_plan_free(qmm__ckpt *c);

#endif
