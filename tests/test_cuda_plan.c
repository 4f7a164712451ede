/* The CUDA backend's plan (src/cuda/plan.h) against the launches expected of it: on the grid of
 * tests/cuda_plan/grid.h (7 configurations of device, workspace and alignment of A, 12 shapes, 7 weights,
 * bf16 and fp16 A, 51 M from 1 to 8192), each point's dispatched path and the launches of its GEMV and
 * fused plans, as text (qmm__cuda_plan_describe), must be those of tests/cuda_plan/plans.txt, which
 * tests/cuda_plan/dump.sh records from the launchers themselves: group by group (FNV-1a of the lines)
 * and, for the H200's default shapes, line by line. Every output type must give the same plan. The
 * device facts are those the launchers' setup reads from the mock runtime's profiles (mock_cudart.cc).
 * No GPU: the plan is pure host code.
 * Usage: test_cuda_plan PLANS_TXT */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/cuda/plan.h"
#include "cuda_plan/grid.h"
#include "harness.h"

/* The device as the launchers' setup finds it on profile p (setup_form, kernels_mma_launch.cuh): the
 * WG kernels where the sm_90a code runs (PTX version 90 on sm_90), each height whose shared memory fits
 * the opt-in size, 128 rows and more where 64 rows run; dependent launches from sm_90 code; tensor maps. */
static void device_of(const qmm_test_device *p, qmm__cuda_device *d)
{
    memset(d, 0, sizeof *d);
    d->sm_count = p->sm_count, d->major = p->major;
    d->optin = (size_t)p->optin, d->smem_sm = (size_t)p->smem_sm, d->reserved = (size_t)p->reserved;
    for (int f = 0; f < QMM__FORM_COUNT; f++) {
        qmm__cuda_kernel_facts *k = &d->kernels[f];
        k->ready = true, k->tensor_maps = true, k->pdl = p->major >= 9 && p->ptx >= 90;
        if (qmm__cuda_form_split((qmm__cuda_form)f) || p->major != 9 || p->ptx != 90) continue;
        for (int h = 0; h < QMM__CUDA_WG_HEIGHTS; h++) {
            const int rows = h == 0 ? 32 : QMM__CUDA_WG_ROWS * h;
            if (h >= 2 && k->wg[1].slots <= 0) break;
            if (qmm__cuda_wg_bytes(qmm__cuda_form_kenc((qmm__cuda_form)f), rows) > p->optin || p->wg_per_sm[h] < 1) continue;
            k->wg[h].slots = (long long)p->wg_per_sm[h] * p->sm_count;
            for (int c = 1; c <= QMM__CUDA_WG_CLUSTER_MAX; c++) k->wg[h].clusters[c] = p->wg_clusters[h][c];
        }
    }
}

/* what a path's plan launches, or "unsupported" where it cannot take the weight; the same for every
 * output type */
static void launches(qmm__cuda_call c, qmm_path path, const qmm__cuda_device *d, const qmm__cuda_override *o, char *buf, size_t cap)
{
    static const qmm_dtype ctypes[3] = {QMM_DTYPE_BF16, QMM_DTYPE_FP32, QMM_DTYPE_FP16};
    for (int i = 0; i < 3; i++) {
        char text[1024];
        qmm__cuda_plan plan;
        c.c_type = ctypes[i];
        if (!qmm__cuda_plan_make(&c, path, d, o, &plan)) snprintf(text, sizeof text, "unsupported");
        else qmm__cuda_plan_describe(&plan, text, sizeof text);
        if (i == 0) snprintf(buf, cap, "%s", text);
        else CHECK(strcmp(text, buf) == 0, "output type %d plans '%s', bf16 '%s'", (int)ctypes[i], text, buf);
    }
}

/* plans.txt: `g KEY HASH` and `p KEY LINE` */
typedef struct expected {
    char **lines;
    size_t count;
} expected;

static void load(const char *path, expected *e)
{
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "cannot open %s", path);
    if (!f) return;
    size_t cap = 0;
    char buf[4096];
    while (fgets(buf, sizeof buf, f)) {
        if (buf[0] != 'g' && buf[0] != 'p') continue;
        if (e->count == cap) e->lines = realloc(e->lines, (cap = cap ? 2 * cap : 4096) * sizeof *e->lines);
        e->lines[e->count++] = strdup(buf);
    }
    fclose(f);
}

static bool find(const expected *e, const char *line)
{
    for (size_t i = 0; i < e->count; i++)
        if (strcmp(e->lines[i], line) == 0) return true;
    return false;
}

int main(int argc, char **argv)
{
    harness_begin("test_cuda_plan");
    expected want = {NULL, 0};
    load(argc > 1 ? argv[1] : "tests/cuda_plan/plans.txt", &want);
    static const qmm_dtype atypes[2] = {QMM_DTYPE_BF16, QMM_DTYPE_FP16};
    const qmm__cuda_override rules = QMM__CUDA_OVERRIDE_DEFAULT;
    size_t points = 0, groups = 0, bad_groups = 0, full_lines = 0;
    for (int ci = 0; ci < QMM_TEST_CONFIG_COUNT; ci++) {
        const qmm_test_config *cf = &qmm_test_configs[ci];
        qmm__cuda_device dev;
        device_of(&qmm_test_devices[cf->device], &dev);
        for (int si = 0; si < QMM_TEST_SHAPE_COUNT; si++)
            for (int ei = 0; ei < QMM_TEST_ENCODING_COUNT; ei++)
                for (int ai = 0; ai < 2; ai++) {
                    const size_t n = qmm_test_shapes[si][0], k = qmm_test_shapes[si][1];
                    const qmm_test_encoding *e = &qmm_test_encodings[ei];
                    const int fp8 = e->enc == QMM__ENC_FP8 || e->enc == QMM__ENC_FP8_RAW, bf16 = e->enc == QMM__ENC_BF16;
                    char key[160];
                    qmm_test_group_key(cf, n, k, e, ai, key, sizeof key);
                    const int full = ci == 0 && si < QMM_TEST_DEFAULT_SHAPES && ai == 0 && (ei == 0 || ei == 3);
                    qmm__cuda_call c;
                    memset(&c, 0, sizeof c);
                    c.n = n, c.k = k, c.enc = (qmm__cuda_encoding)e->enc, c.mx_half = e->mx_half, c.channel_scales = e->channel;
                    c.strips = (n + QMM__STRIP - 1) / QMM__STRIP;
                    c.chunks = bf16 ? 0 : (k + (fp8 ? QMM__CHUNK_FP8 : QMM__CHUNK_FP4) - 1) / (fp8 ? QMM__CHUNK_FP8 : QMM__CHUNK_FP4);
                    c.a_type = atypes[ai], c.a_aligned = cf->aligned != 0, c.workspace = cf->workspace, c.counters = (size_t)1 << 20;
                    uint64_t h = QMM_TEST_FNV_START;
                    char first_line[2300] = "";
                    for (int mi = 0; mi < QMM_TEST_M_COUNT; mi++) {
                        c.m = qmm_test_ms[mi];
                        char gemv[1024], fused[1024], line[2200], pline[2400];
                        qmm__cuda_plan plan;
                        qmm__cuda_plan_make(&c, QMM_PATH_AUTO, &dev, &rules, &plan);
                        launches(c, QMM_PATH_GEMV, &dev, &rules, gemv, sizeof gemv);
                        launches(c, QMM_PATH_FUSED, &dev, &rules, fused, sizeof fused);
                        snprintf(line, sizeof line, "%zu %s | %s | %s\n", c.m, qmm_path_name(plan.path), gemv, fused);
                        h = qmm_test_fnv(h, line);
                        points++;
                        if (full) {
                            snprintf(pline, sizeof pline, "p %s %s", key, line);
                            full_lines++;
                            CHECK(find(&want, pline), "not in plans.txt: %s", pline);
                        }
                        if (!first_line[0]) snprintf(first_line, sizeof first_line, "%s", line);
                    }
                    char gline[256];
                    snprintf(gline, sizeof gline, "g %s %016" PRIx64 "\n", key, h);
                    groups++;
                    if (!find(&want, gline)) {
                        bad_groups++;
                        CHECK(0, "group %s: fingerprint %016" PRIx64 " differs from plans.txt (its M = 1 line: %s)", key, h, first_line);
                    }
                }
    }
    CHECK(groups == (size_t)QMM_TEST_CONFIG_COUNT * QMM_TEST_SHAPE_COUNT * QMM_TEST_ENCODING_COUNT * 2 && full_lines > 0,
          "%zu groups, %zu full lines", groups, full_lines);
    printf("test_cuda_plan: %zu points (%zu groups, %zu different), %zu lines in full\n", points, groups, bad_groups, full_lines);
    for (size_t i = 0; i < want.count; i++) free(want.lines[i]);
    free(want.lines);
    return harness_end("test_cuda_plan");
}
