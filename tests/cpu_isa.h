/* The CPU tests' context per instruction set: QMM_ISA set to `isa` (NULL: as the environment has it),
 * two threads. NULL, after a SKIPPED line, when the machine lacks the instruction set; *name is the set
 * the context runs. */
#ifndef QMM_TESTS_CPU_ISA_H
#define QMM_TESTS_CPU_ISA_H

#include "harness.h"

static inline qmm_context *cpu_isa_context(const char *test, const char *isa, const char **name)
{
    if (isa) setenv("QMM_ISA", isa, 1);
    *name = isa ? isa : getenv("QMM_ISA");
    qmm_context_options o;
    qmm_context_options_init(&o);
    o.backend = QMM_BACKEND_CPU;
    o.num_threads = 2;
    qmm_context *ctx = NULL;
    qmm_status st = qmm_context_create(&o, &ctx);
    if (st == QMM_ERR_UNSUPPORTED) {
        printf("%s: SKIPPED instruction set %s: %s\n", test, *name, qmm_last_error());
        return NULL;
    }
    CHECK_OK(st);
    if (st != QMM_OK) return NULL;
    printf("%s: %s\n", test, qmm_context_describe(ctx));
    fflush(stdout);
    return ctx;
}

/* run(isa) once per instruction set: the one QMM_ISA names when it is set (run(NULL)), else generic,
 * avx2 and avx512. Returns how many ran (run returns 1 for a set it ran, 0 for one it skipped). */
static inline int cpu_isa_each(int (*run)(const char *isa))
{
    const char *env = getenv("QMM_ISA");
    if (env && *env) return run(NULL);
    static const char *const isas[3] = {"generic", "avx2", "avx512"};
    int ran = 0;
    for (int i = 0; i < 3; i++) ran += run(isas[i]);
    return ran;
}

#endif
