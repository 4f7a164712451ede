/* A persistent pool of worker threads, made with the context. A call hands every thread the same
 * function; the calling thread takes part as thread 0 and returns when all are done. Nothing is
 * allocated and no thread is created per call. */
#ifndef QMM_CPU_THREADPOOL_H
#define QMM_CPU_THREADPOOL_H

#include "qmm.h"

typedef struct qmm__pool qmm__pool;

/* fn(arg, tid, nthreads) with tid in [0, nthreads). */
typedef void (*qmm__pool_fn)(void *arg, int tid, int nthreads);

/* A pool of `nthreads` (>= 1) threads: the caller plus nthreads - 1 workers.
 * Errors: QMM_ERR_OUT_OF_MEMORY (allocation or thread creation failed; nothing is left behind). */
qmm_status qmm__pool_create(int nthreads, qmm__pool **out);

/* Stops and joins the workers. NULL is allowed. */
void qmm__pool_destroy(qmm__pool *pool);

int qmm__pool_size(const qmm__pool *pool);

/* Runs fn on every thread of the pool and waits for all of them. Not reentrant: one caller at a time
 * (a context is used by one thread at a time). */
void qmm__pool_run(qmm__pool *pool, qmm__pool_fn fn, void *arg);

#endif
