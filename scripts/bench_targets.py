#!/usr/bin/env python3
"""The CUDA speed targets of BENCHMARKS.md read off one `qmm bench --backend cuda --json` run (the
default shapes and M): each target's rows, the range of their speedups (or shares of the copy bandwidth),
and which rows miss it. The ratios are the benchmark's own (each against the dense row of the same run
and M).

Usage: scripts/bench_targets.py BENCH.jsonl"""
import json
import sys

FP4 = ("nvfp4", "mxfp4")
FP8 = ("fp8_tensor", "fp8_channel")
LARGE = ((28672, 8192), (8192, 28672))
FUSED_FP4 = {16: 3.3, 32: 3.0, 64: 2.5, 128: 1.6, 256: 1.1}


def report(title, rows, value, target, fmt="{:.2f}x"):
    """One target: how many rows reach it, the range, and the rows below it."""
    if not rows:
        print(f"{title}: no rows in this run")
        return
    vals = [value(r) for r in rows]
    miss = [(r, v) for r, v in zip(rows, vals) if v < target]
    verdict = "met" if not miss else "missed"
    print(f"{title} (target {fmt.format(target)}): {verdict}: {len(rows) - len(miss)} of {len(rows)} rows reach it; "
          f"{fmt.format(min(vals))} to {fmt.format(max(vals))}")
    for r, v in miss:
        print(f"    {r['format']:<12} ({r['N']}, {r['K']}) M = {r['M']}: {fmt.format(v)}"
              f" ({r['us']:.1f} us, {r.get('sm_mhz', 0)} MHz)")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
    q = [r for r in rows if r["format"] != "bf16" and r.get("backend") == "cuda"]
    if not q:
        sys.exit(f"{sys.argv[1]}: no CUDA rows of a quantized format")
    speed = lambda r: r["speedup_vs_dense"]
    sel = lambda fmts, m, shapes=None: [r for r in q if r["format"] in fmts and r["M"] == m and
                                         (shapes is None or (r["N"], r["K"]) in shapes)]
    cool = sum(1 for r in rows if r.get("sm_mhz", 0) >= 1980)
    print(f"{len(rows)} rows, {cool} of them at 1980 MHz or more; copy bandwidth {rows[0].get('copy_gbps', 0):.0f} GB/s")
    print("GEMV and large M:")
    report("  NVFP4/MXFP4 M = 1 on (28672, 8192), (8192, 28672), % of copy bandwidth",
           sel(FP4, 1, LARGE), lambda r: r["pct_bw"], 85.0, "{:.1f}%")
    report("  FP8 M = 1, all shapes", sel(FP8, 1), speed, 1.9)
    for m in (2048, 4096, 8192):
        report(f"  every format M = {m}", sel(FP4 + FP8, m), speed, 0.93)
    print("Fused path:")
    for m, t in FUSED_FP4.items():
        report(f"  NVFP4/MXFP4 M = {m}", sel(FP4, m), speed, t)
    for m in (2, 4, 8, 16, 32, 64):
        report(f"  FP8 M = {m}", sel(FP8, m), speed, 1.8)


if __name__ == "__main__":
    main()
