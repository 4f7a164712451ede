#!/usr/bin/env python3
"""Writes wgmma_rs_ops.cuh and wgmma_ss_ops.cuh: the inline-PTX wrappers of wgmma m64nNk16 with A in
registers (for wgmma_rs.cu) and with A and B in shared memory (for wgmma_split.cu). The probes' other
wgmma helpers, wg_fence_acc and the rest, are the library's (src/cuda/kernels_mma_wg.cuh)."""
import pathlib


def wrappers(n):
    nacc = n // 2
    d = ", ".join(f"%{i}" for i in range(nacc))
    a = ", ".join(f"%{nacc + i}" for i in range(4))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(nacc))
    return f'''template <> __device__ __forceinline__ void wgmma_rs<{n}>(float (&d)[{nacc}], const uint32_t (&a)[4], uint64_t desc)
{{
    asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, 1, 0;\\n"
                 "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16 {{{d}}}, {{{a}}}, %{nacc + 4}, p, 1, 1, 0;\\n}}\\n"
                 : {outs}
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}}
'''


def wrappers_ss(n):
    nacc = n // 2
    d = ", ".join(f"%{i}" for i in range(nacc))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(nacc))
    return f'''template <> __device__ __forceinline__ void wgmma_ss<{n}>(float (&d)[{nacc}], uint64_t da, uint64_t db)
{{
    asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, 1, 0;\\n"
                 "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16 {{{d}}}, %{nacc}, %{nacc + 1}, p, 1, 1, 0, 0;\\n}}\\n"
                 : {outs}
                 : "l"(da), "l"(db));
}}
'''


head = """/* wgmma m64nNk16 with A in registers (bf16, fp32 accumulators), N = 32, 64, 128, 256, for
 * scripts/probes/wgmma_rs.cu; written by scripts/probes/wgmma_rs_ops.py */
#pragma once
template <int N> __device__ void wgmma_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc);
"""
text = head + "".join(wrappers(n) for n in (64, 128, 32, 256))
pathlib.Path(__file__).with_name("wgmma_rs_ops.cuh").write_text(text)
head_ss = """/* wgmma m64nNk16 with A and B in shared memory (bf16, K-major, fp32 accumulators), N = 64, 128, 256,
 * for scripts/probes/wgmma_split.cu; written by scripts/probes/wgmma_rs_ops.py */
#pragma once
template <int N> __device__ void wgmma_ss(float (&d)[N / 2], uint64_t da, uint64_t db);
"""
text_ss = head_ss + "".join(wrappers_ss(n) for n in (64, 128, 256))
pathlib.Path(__file__).with_name("wgmma_ss_ops.cuh").write_text(text_ss)
