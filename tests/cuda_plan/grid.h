/* The grid over which the CUDA backend's plan is checked (tests/cuda_plan/README.md): fixed device
 * profiles, workspaces, shapes, encodings, activation types and M. Shared by the launch recorder
 * (dump.c with mock_cudart.cu: the launchers run against a CUDA runtime that records what they launch)
 * and by tests/test_cuda_plan.c (the plan function alone). */
#ifndef QMM_TESTS_CUDA_PLAN_GRID_H
#define QMM_TESTS_CUDA_PLAN_GRID_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A device as the CUDA runtime describes it to the backend: its attributes, the PTX version its loaded
 * kernels report (90 where the sm_90a machine code runs: dependent launches and the WG kernels; 80
 * where the sm_80 code runs), and what it holds of the WG kernels (occupancy and clusters by CTA height:
 * 32, 64, 128, 192, 256 rows). Representative values, not measurements, except the H200's clusters
 * (scripts/probes/cluster_occupancy.cu, as test_cuda_split uses them): the plan must only be the same
 * function of them before and after a change. */
typedef struct qmm_test_device {
    const char *name;
    int sm_count, major, minor;
    int optin, smem_sm, reserved; /* bytes: a CTA's opt-in shared memory, an SM's, the system's per CTA */
    int ptx;
    int wg_per_sm[5];
    int wg_clusters[5][9];
} qmm_test_device;

#define QMM_TEST_H200_CLUSTERS64 {0, 264, 132, 83, 66, 47, 39, 32, 30}
#define QMM_TEST_H200_CLUSTERS128 {0, 132, 66, 39, 30, 22, 17, 15, 15}
#define QMM_TEST_H100P_CLUSTERS64 {0, 228, 114, 72, 57, 40, 33, 28, 26}
#define QMM_TEST_H100P_CLUSTERS128 {0, 114, 57, 34, 26, 19, 15, 13, 13}

static const qmm_test_device qmm_test_devices[] = {
    /* H200: 132 SMs, 227 KB opt-in, 228 KB per SM, 1 KB reserved per CTA */
    {"h200", 132, 9, 0, 227 * 1024, 228 * 1024, 1024, 90, {2, 2, 1, 1, 1},
     {QMM_TEST_H200_CLUSTERS64, QMM_TEST_H200_CLUSTERS64, QMM_TEST_H200_CLUSTERS128, QMM_TEST_H200_CLUSTERS128,
      QMM_TEST_H200_CLUSTERS128}},
    /* an sm_90 part with fewer SMs (H100 PCIe: 114), its clusters scaled from the H200's */
    {"h100p", 114, 9, 0, 227 * 1024, 228 * 1024, 1024, 90, {2, 2, 1, 1, 1},
     {QMM_TEST_H100P_CLUSTERS64, QMM_TEST_H100P_CLUSTERS64, QMM_TEST_H100P_CLUSTERS128, QMM_TEST_H100P_CLUSTERS128,
      QMM_TEST_H100P_CLUSTERS128}},
    /* sm_80 (A100: 108 SMs, 163 KB opt-in, 164 KB per SM): no WG kernel, no dependent launch */
    {"sm80", 108, 8, 0, 163 * 1024, 164 * 1024, 1024, 80, {0, 0, 0, 0, 0}, {{0}}},
    /* 99 KB opt-in (sm_89, L40S: 142 SMs, 100 KB per SM) */
    {"sm89", 142, 8, 9, 99 * 1024, 100 * 1024, 1024, 80, {0, 0, 0, 0, 0}, {{0}}},
};
#define QMM_TEST_DEVICE_COUNT ((int)(sizeof qmm_test_devices / sizeof qmm_test_devices[0]))

/* The configurations: a device, a workspace (the default 256 MiB, one where splits give way, one where
 * the WG kernels' partials do not fit) and whether A's rows are 16-byte aligned. */
typedef struct qmm_test_config {
    int device;
    size_t workspace;
    int aligned;
} qmm_test_config;
static const qmm_test_config qmm_test_configs[] = {
    {0, (size_t)256 << 20, 1}, {0, (size_t)3 << 20, 1}, {0, (size_t)64 << 10, 1}, {0, (size_t)256 << 20, 0},
    {1, (size_t)256 << 20, 1}, {2, (size_t)256 << 20, 1}, {3, (size_t)256 << 20, 1},
};
#define QMM_TEST_CONFIG_COUNT ((int)(sizeof qmm_test_configs / sizeof qmm_test_configs[0]))

/* the five default shapes of qmm bench, then odd ones, the giant tier (a language-model head) and a
 * very long K */
static const size_t qmm_test_shapes[][2] = {
    {4096, 14336}, {14336, 4096}, {6144, 18432}, {28672, 8192}, {8192, 28672}, {67, 301},  {1000, 1003},
    {4096, 4096},  {2048, 2048},  {8192, 2048},  {128256, 4096}, {40, 120000},
};
#define QMM_TEST_SHAPE_COUNT ((int)(sizeof qmm_test_shapes / sizeof qmm_test_shapes[0]))
#define QMM_TEST_DEFAULT_SHAPES 5

static const size_t qmm_test_ms[] = {1,   2,   3,   4,   5,   6,   7,   8,   9,    12,   15,   16,   17,   24,  31,  32,  33,
                                     40,  48,  63,  64,  65,  96,  100, 127,  128,  129,  150,  160,  192,  200, 224, 255, 256,
                                     257, 300, 384, 511, 512, 513, 520, 768, 1000, 1024, 1025, 1536, 2047, 2048, 2049, 4096, 8192};
#define QMM_TEST_M_COUNT ((int)(sizeof qmm_test_ms / sizeof qmm_test_ms[0]))

/* The weights as prepared (qmm__cuda_prepared): an encoding (qmm__cuda_encoding's values), MXFP4's fp16
 * decode (mx_half: scale codes within 24), FP8's channel scales. */
typedef struct qmm_test_encoding {
    const char *name;
    int enc, mx_half, channel;
} qmm_test_encoding;
static const qmm_test_encoding qmm_test_encodings[] = {
    {"nvfp4", 1, 0, 0}, {"mxfp4", 2, 1, 0}, {"mxfp4_wide", 2, 0, 0}, {"fp8_tensor", 3, 0, 0},
    {"fp8_channel", 3, 0, 1}, {"nvfp4_raw", 5, 0, 0}, {"bf16", 4, 0, 0},
};
#define QMM_TEST_ENCODING_COUNT ((int)(sizeof qmm_test_encodings / sizeof qmm_test_encodings[0]))

/* A group's name: "<device> <workspace> <aligned|unaligned> <N>:<K> <weight> <bf16|fp16>" */
static inline void qmm_test_group_key(const qmm_test_config *c, size_t n, size_t k, const qmm_test_encoding *e, int fp16,
                                      char *buf, size_t cap)
{
    const size_t ws = c->workspace;
    snprintf(buf, cap, "%s %zu%s %s %zu:%zu %s %s", qmm_test_devices[c->device].name, ws >= (1u << 20) ? ws >> 20 : ws >> 10,
             ws >= (1u << 20) ? "M" : "K", c->aligned ? "aligned" : "unaligned", n, k, e->name, fp16 ? "fp16" : "bf16");
}

/* FNV-1a, 64 bits: the fingerprint of one group's lines */
static inline uint64_t qmm_test_fnv(uint64_t h, const char *s)
{
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}
#define QMM_TEST_FNV_START 0xcbf29ce484222325ull

#endif
