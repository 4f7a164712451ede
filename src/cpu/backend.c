/* The CPU backend: the qmm__backend_ops table, the context state (instruction set, kernel table,
 * thread pool, workspace) and the glue between the API's validated calls and the driver. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/error.h"
#include "cpu.h"

static qmm_status qmm__cpu_available(void) { return QMM_OK; }

/* The kernel table of `isa`: the portable entries first, then each level's overrides. */
static void qmm__cpu_build_kernels(qmm__cpu_isa isa, const qmm__cpu_features *f, qmm__cpu_kernels *k)
{
    qmm__cpu_fill_generic(k);
#ifdef QMM_CPU_AVX2
    if (isa >= QMM__ISA_AVX2) qmm__cpu_fill_avx2(k);
#endif
#ifdef QMM_CPU_AVX512
    if (isa >= QMM__ISA_AVX512) qmm__cpu_fill_avx512(k);
#endif
#ifdef QMM_CPU_AVX512BF16
    if (isa >= QMM__ISA_AVX512 && f->avx512bf16) qmm__cpu_fill_avx512bf16(k);
#endif
#ifdef QMM_CPU_AVX512VBMI
    if (isa >= QMM__ISA_AVX512 && f->avx512bf16 && f->avx512vbmi) qmm__cpu_fill_avx512vbmi(k);
#endif
    (void)isa, (void)f;
}

static void qmm__cpu_destroy(void *state)
{
    qmm__cpu_state *s = state;
    if (!s) return;
    qmm__pool_destroy(s->pool);
    free(s->thread_ws);
    free(s->a32);
    free(s->apack);
    free(s->agather);
    free(s->grouped_ws);
    free(s);
}

static qmm_status qmm__cpu_create(const qmm_context_options *opts, void **state)
{
    static const char fn[] = "qmm_context_create (cpu)";
    qmm__cpu_features f = qmm__cpu_detect();
    qmm__cpu_isa isa;
    QMM__TRY(qmm__cpu_choose_isa(&f, &isa));
    int nthreads = opts->num_threads;
    if (nthreads == 0) {
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        nthreads = online > 0 ? (int)(online < 1024 ? online : 1024) : 1;
    }
    if (nthreads > 1024) return qmm__fail(QMM_ERR_INVALID_ARGUMENT, "%s: num_threads = %d is more than 1024", fn, nthreads);
    qmm__cpu_state *s = calloc(1, sizeof *s);
    if (!s) return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: cannot allocate the state", fn);
    s->isa = isa;
    s->features = f;
    qmm__cpu_build_kernels(isa, &f, &s->kern);
    s->nthreads = nthreads;
    s->thread_ws_bytes = (qmm__cpu_thread_ws_bytes() + 4095) / 4096 * 4096;
    const size_t ws_bytes = s->thread_ws_bytes * (size_t)nthreads;
    s->thread_ws = aligned_alloc(4096, ws_bytes);
    if (!s->thread_ws) {
        qmm__cpu_destroy(s);
        return qmm__fail(QMM_ERR_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes of workspace", fn, ws_bytes);
    }
    qmm_status st = qmm__pool_create(nthreads, &s->pool);
    if (st != QMM_OK) {
        qmm__cpu_destroy(s);
        return st;
    }
    snprintf(s->description, sizeof s->description, "cpu %s (%d thread%s)", s->kern.name, nthreads, nthreads == 1 ? "" : "s");
    *state = s;
    return QMM_OK;
}

static const char *qmm__cpu_describe(const void *state) { return ((const qmm__cpu_state *)state)->description; }

static bool qmm__cpu_has_path(qmm_path p) { return p == QMM_PATH_GEMV || p == QMM_PATH_MATERIALIZE; }

/* The CPU copy of w, or NULL when w has none (or one made by another backend). */
static const qmm__cpu_weight *qmm__cpu_prepared_of(const qmm_weight *w)
{
    return w->prepared && w->prepared->backend == QMM_BACKEND_CPU ? (const qmm__cpu_weight *)(const void *)w->prepared : NULL;
}

static qmm_path qmm__cpu_plan(const void *state, size_t m, qmm_dtype a_type, const qmm_weight *w)
{
    (void)a_type; /* the CPU kernels convert every activation type alike */
    qmm_weight v = *w;
    if (!qmm__cpu_prepared_of(w)) v.prepared = NULL;
    return qmm__cpu_plan_path(state, m, &v);
}

static qmm_status qmm__cpu_matmul(void *state, const qmm__matmul_args *x)
{
    const qmm__cpu_weight *p = qmm__cpu_prepared_of(x->w);
    if (p && (p->head.format != x->w->format || p->n != x->w->n || p->k != x->w->k))
        return qmm__fail(QMM_ERR_INVALID_WEIGHT, "qmm_matmul (cpu): the descriptor (format %d, %zu x %zu) no longer matches "
                         "its prepared copy (format %d, %zu x %zu)", (int)x->w->format, x->w->n, x->w->k,
                         (int)p->head.format, p->n, p->k);
    qmm__cpu_weight canonical;
    if (!p) {
        qmm__cpu_view_canonical(x->w, &canonical);
        p = &canonical;
    }
    return qmm__cpu_matmul_run(state, x, p);
}

static qmm_status qmm__cpu_matmul_grouped(void *state, const qmm__grouped_args *x)
{
    return qmm__cpu_grouped_run(state, x);
}

static qmm_status qmm__cpu_prepare(void *state, const qmm_weight *w, qmm_prepared **out)
{
    (void)state;
    if (w->experts > 1) return qmm__cpu_prepare_stack(w, out);
    qmm__cpu_weight *p;
    QMM__TRY(qmm__cpu_prepare_weight(w, &p));
    *out = &p->head;
    return QMM_OK;
}

static qmm_status qmm__cpu_measure_rates(void *state, size_t bytes, qmm_machine_rates *out)
{
    return qmm__cpu_measure(state, bytes, out);
}

const qmm__backend_ops qmm__cpu_backend = {
    .id = QMM_BACKEND_CPU,
    .needs_prepare = false,
    .device_pointers = false,
    .fp32_activations = true,
    .available = qmm__cpu_available,
    .create = qmm__cpu_create,
    .destroy = qmm__cpu_destroy,
    .describe = qmm__cpu_describe,
    .has_path = qmm__cpu_has_path,
    .plan = qmm__cpu_plan,
    .matmul = qmm__cpu_matmul,
    .matmul_grouped = qmm__cpu_matmul_grouped,
    .prepare = qmm__cpu_prepare,
    .measure_rates = qmm__cpu_measure_rates,
};
