/* The test harness shared by every C test: checks that count and report, fresh random seeds that are
 * printed (QMM_TEST_SEED=... reproduces a run), poisoning, and exit codes CTest understands
 * (0 pass, 1 fail, 77 skipped). Header-only so each test is one executable from one file. */
#ifndef QMM_TESTS_HARNESS_H
#define QMM_TESTS_HARNESS_H

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qmm.h"

static long harness_checks, harness_failures;

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        harness_checks++;                                                                      \
        if (!(cond)) {                                                                         \
            if (++harness_failures <= 40) {                                                    \
                fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);       \
                fprintf(stderr, __VA_ARGS__);                                                  \
                fputc('\n', stderr);                                                           \
            }                                                                                  \
        }                                                                                      \
    } while (0)

/* A status check that prints the library's message on failure. */
#define CHECK_STATUS(expr, expected)                                                           \
    do {                                                                                       \
        qmm_status st_ = (expr);                                                               \
        CHECK(st_ == (expected), "%s returned %d (%s: %s), expected %d", #expr, (int)st_,      \
              qmm_status_string(st_), qmm_last_error(), (int)(expected));                      \
    } while (0)

#define CHECK_OK(expr) CHECK_STATUS(expr, QMM_OK)

static uint64_t harness_state;

static inline uint64_t harness_next(void)
{
    uint64_t z = (harness_state += 0x9e3779b97f4a7c15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline double harness_uniform(void) { return ((double)(harness_next() >> 11) + 0.5) * 0x1p-53; }

static inline double harness_normal(void)
{
    return sqrt(-2.0 * log(harness_uniform())) * cos(6.283185307179586 * harness_uniform());
}

static inline uint32_t harness_u32(void) { return (uint32_t)(harness_next() >> 32); }

static inline float harness_f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint32_t harness_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Seeds from QMM_TEST_SEED or from the clock and address-space randomness, and prints the seed. */
static inline void harness_begin(const char *name)
{
    const char *env = getenv("QMM_TEST_SEED");
    uint64_t seed;
    if (env && *env) {
        seed = strtoull(env, NULL, 0);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)&ts;
    }
    harness_state = seed;
    printf("%s: seed %" PRIu64 " (QMM_TEST_SEED=%" PRIu64 " reproduces this run)\n", name, seed, seed);
    fflush(stdout);
}

static inline int harness_end(const char *name)
{
    printf("%s: %ld checks, %ld failed\n", name, harness_checks, harness_failures);
    return harness_failures ? 1 : 0;
}

/* Fills a buffer with a byte pattern that is NaN for fp32, bf16 and fp16 (0xFF bytes). */
static inline void harness_poison(void *p, size_t bytes) { memset(p, 0xff, bytes); }

/* Returns 1 when every byte of p equals `byte`. */
static inline int harness_all_bytes(const void *p, size_t bytes, uint8_t byte)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < bytes; i++)
        if (b[i] != byte) return 0;
    return 1;
}

#endif
