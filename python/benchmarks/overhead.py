"""What qmm.matmul costs on top of the C call it makes, on a tiny shape where the call itself is short.

    python python/benchmarks/overhead.py [--m 1] [--n 64] [--k 64] [--backend cpu]

Both are timed in this process, alternately, on the same prepared weight and arrays: qmm.matmul(a, w, c=c)
(argument checks, the prepared weight's lookup, the epilogue, the status check) and the bare ctypes call
of qmm_matmul with every argument built beforehand. The result is checked against numpy first; each
figure is the median over repetitions of a loop of calls, after a warm-up.
"""

import argparse
import ctypes
import statistics
import time

import numpy as np

import qmm
from qmm import _lib


def per_call(fn, calls):
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--m", type=int, default=1)
    p.add_argument("--n", type=int, default=64)
    p.add_argument("--k", type=int, default=64)
    p.add_argument("--backend", default="cpu")
    p.add_argument("--reps", type=int, default=31)
    p.add_argument("--calls", type=int, default=2000)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    ctx = qmm.Context(args.backend)
    w = qmm.quantize(rng.standard_normal((args.n, args.k)).astype(np.float32), format="nvfp4")
    a = rng.standard_normal((args.m, args.k)).astype(np.float32)
    c = np.full((args.m, args.n), np.nan, np.float32)
    qmm.matmul(a, w, c=c, context=ctx)
    want = a.astype(np.float64) @ w.dequantize().astype(np.float64).T
    err = np.linalg.norm(c - want) / np.linalg.norm(want)
    assert err < 1e-5, f"check failed: relative error {err}"

    s = ctx.weight_struct(w)
    fn = _lib.lib.qmm_matmul
    h, ap, cp, wref = ctx.handle, a.ctypes.data, c.ctypes.data, ctypes.byref(s)
    m, k, n = args.m, args.k, args.n

    def bare():
        if fn(h, m, 1, ap, k, wref, 1, cp, n, None) != 0:
            raise RuntimeError(_lib.last_error())

    def wrapped():
        qmm.matmul(a, w, c=c, context=ctx)

    for f in (bare, wrapped):
        per_call(f, args.calls)  # warm-up
    t_bare, t_wrapped = [], []
    for _ in range(args.reps):
        t_bare.append(per_call(bare, args.calls))
        t_wrapped.append(per_call(wrapped, args.calls))
    b, wr = statistics.median(t_bare) * 1e6, statistics.median(t_wrapped) * 1e6
    print(f"qmm {qmm.__version__} python overhead: {ctx.describe()}, nvfp4 {n} x {k}, M = {m}, fp32 in and out")
    print(f"bare ctypes qmm_matmul {b:.2f} us, qmm.matmul {wr:.2f} us, overhead {wr - b:.2f} us per call "
          f"(median of {args.reps} x {args.calls} calls)")


if __name__ == "__main__":
    main()
