/* The pool's workers spin on a generation counter for a while after each job, then sleep on a
 * condition variable. Decode-time GEMV calls take 50 .. 2000 us and come back to back, so a worker is
 * almost always still spinning when the next call arrives and starts within a few hundred
 * nanoseconds; a worker that went to sleep costs one futex wake-up (tens of microseconds) once.
 * The spin is bounded so that an idle context does not keep its cores busy.
 *
 * Both spins yield the processor every few microseconds. Measured on the development VM (2 vCPUs): the
 * scheduler often wakes a worker on the caller's CPU, and a spin with pause alone then holds that CPU
 * for its whole budget while the thread it waits for cannot run (2 to 4.5 ms per call instead of
 * 10 to 20 us); with sched_yield in the loop the other thread runs at once and the load balancer soon
 * moves one of them to the idle CPU (0.15 us per call back to back). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "../core/error.h"
#include "threadpool.h"

/* How long a worker spins for the next job before it sleeps (about 2 ms: longer than the gap between
 * two matmul calls of one decode step, shorter than anything a person would notice as load). */
#define QMM__POOL_SPIN_NS 2000000L

struct qmm__pool {
    int nthreads;
    pthread_t *threads;
    /* the job */
    qmm__pool_fn fn;
    void *arg;
    atomic_uint generation; /* bumped once per job; workers run the job when it changes */
    atomic_int remaining;   /* workers that have not finished the current job */
    atomic_int sleepers;    /* workers waiting (or about to wait) on `wake` */
    atomic_bool stop;
    pthread_mutex_t mutex;
    pthread_cond_t wake;
};

typedef struct qmm__pool_worker_arg {
    qmm__pool *pool;
    int tid;
} qmm__pool_worker_arg;

static inline void qmm__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static long qmm__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* Waits until the generation differs from `seen`: spin first, then sleep. */
static unsigned qmm__pool_wait_job(qmm__pool *p, unsigned seen)
{
    long start = qmm__now_ns();
    for (unsigned spins = 0;; spins++) {
        unsigned g = atomic_load_explicit(&p->generation, memory_order_acquire);
        if (g != seen) return g;
        qmm__cpu_relax();
        if ((spins & 63u) == 63u) {
            if (qmm__now_ns() - start > QMM__POOL_SPIN_NS) break;
            sched_yield();
        }
    }
    pthread_mutex_lock(&p->mutex);
    /* Dekker-style handshake with qmm__pool_run: we announce ourselves, then look at the generation;
     * the caller bumps the generation, then looks for sleepers. One of the two sees the other. */
    atomic_fetch_add(&p->sleepers, 1);
    unsigned g;
    while ((g = atomic_load(&p->generation)) == seen) pthread_cond_wait(&p->wake, &p->mutex);
    atomic_fetch_sub(&p->sleepers, 1);
    pthread_mutex_unlock(&p->mutex);
    return g;
}

static void *qmm__pool_worker(void *varg)
{
    qmm__pool_worker_arg a = *(qmm__pool_worker_arg *)varg;
    free(varg);
    qmm__pool *p = a.pool;
    unsigned seen = 0;
    for (;;) {
        seen = qmm__pool_wait_job(p, seen);
        if (atomic_load_explicit(&p->stop, memory_order_acquire)) break;
        p->fn(p->arg, a.tid, p->nthreads);
        atomic_fetch_sub_explicit(&p->remaining, 1, memory_order_release);
    }
    return NULL;
}

static void qmm__pool_signal(qmm__pool *p)
{
    atomic_fetch_add(&p->generation, 1); /* sequentially consistent: ordered before the load below */
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mutex);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mutex);
    }
}

void qmm__pool_destroy(qmm__pool *p)
{
    if (!p) return;
    atomic_store(&p->stop, true);
    qmm__pool_signal(p);
    for (int i = 1; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mutex);
    free(p->threads);
    free(p);
}

qmm_status qmm__pool_create(int nthreads, qmm__pool **out)
{
    qmm__pool *p = calloc(1, sizeof *p);
    pthread_t *threads = calloc((size_t)nthreads, sizeof *threads);
    if (!p || !threads || pthread_mutex_init(&p->mutex, NULL) != 0) {
        free(p), free(threads);
        return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "qmm_context_create: cannot allocate a pool of %d threads", nthreads);
    }
    if (pthread_cond_init(&p->wake, NULL) != 0) {
        pthread_mutex_destroy(&p->mutex);
        free(p), free(threads);
        return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "qmm_context_create: cannot create a condition variable");
    }
    p->threads = threads;
    atomic_init(&p->generation, 0u);
    atomic_init(&p->remaining, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->stop, false);
    p->nthreads = 1;
    for (int i = 1; i < nthreads; i++) {
        qmm__pool_worker_arg *a = malloc(sizeof *a);
        if (a) a->pool = p, a->tid = i;
        if (!a || pthread_create(&threads[i], NULL, qmm__pool_worker, a) != 0) {
            free(a);
            qmm__pool_destroy(p); /* joins the workers made so far */
            return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "qmm_context_create: cannot create worker thread %d of %d", i, nthreads);
        }
        p->nthreads = i + 1;
    }
    p->nthreads = nthreads;
    *out = p;
    return QMM_OK;
}

int qmm__pool_size(const qmm__pool *p) { return p->nthreads; }

void qmm__pool_run(qmm__pool *p, qmm__pool_fn fn, void *arg)
{
    if (p->nthreads == 1) {
        fn(arg, 0, 1);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    atomic_store_explicit(&p->remaining, p->nthreads - 1, memory_order_relaxed);
    qmm__pool_signal(p);
    fn(arg, 0, p->nthreads);
    /* the workers finish at about the same time as we do; yield only if one was descheduled */
    for (unsigned spins = 0; atomic_load_explicit(&p->remaining, memory_order_acquire) > 0; spins++) {
        qmm__cpu_relax();
        if ((spins & 63u) == 63u) sched_yield();
    }
}
