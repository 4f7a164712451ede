#!/usr/bin/env python3
"""Markdown tables from `qmm bench --json` output: one table per shape, one row per M, for each format
the time in microseconds, the path and the speedup over the dense bf16 path of the same run; and the
weight bandwidth as a share of the same run's copy bandwidth at M = 1."""
import collections
import json
import sys


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
    formats = [f for f in ["nvfp4", "mxfp4", "fp8_tensor", "fp8_channel"] if any(r["format"] == f for r in rows)]
    by = collections.defaultdict(dict)
    for r in rows:
        by[(r["N"], r["K"])][(r["format"], r["M"])] = r
    print(f"Copy bandwidth measured in the run: {rows[0]['copy_gbps']:.0f} GB/s. Device: {rows[0]['device']}.\n")
    for (n, k), d in by.items():
        ms = sorted({m for (_, m) in d})
        print(f"**N = {n}, K = {k}** (time in us; speedup over cuBLAS bf16 in the same run; path)\n")
        print("| M | cuBLAS bf16 us | " + " | ".join(formats) + " |")
        print("|---:|---:|" + "---|" * len(formats))
        for m in ms:
            dense = d.get(("bf16", m))
            cells = []
            for f in formats:
                r = d.get((f, m))
                cells.append(f"{r['us']:.1f} ({r['speedup_vs_dense']:.2f}x, {r['path']})" if r else "-")
            print(f"| {m} | {dense['us']:.1f} | " + " | ".join(cells) + " |" if dense else f"| {m} | - | " + " | ".join(cells) + " |")
        line = []
        for f in formats:
            r = d.get((f, 1))
            if r:
                line.append(f"{f} {r['gbps']:.0f} GB/s = {r['pct_bw']:.1f}%")
        print("\nM = 1 weight bandwidth (weights plus scales over time): " + "; ".join(line) + "\n")


if __name__ == "__main__":
    main()
