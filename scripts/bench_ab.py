#!/usr/bin/env python3
"""Compares two sides of `qmm bench --json` runs (A, B) row by row: time and speedup over dense bf16 of
each, and B's time relative to A's. A side is one file or several joined by commas (runs of the same
build taken in turn with the other side's): then each row's time is the median of its runs, the columns
A.. and B.. show every run, and the last line is the median of B/A over the quantized rows with its
range.
Rows are paired by (format, M, N, K), not by path, so an A/B that changes the dispatcher's path still
pairs its rows: the path column then reads "A-path>B-path" (e.g. "materialize>fused"), and the summary
line counts those rows apart.
Usage: bench_ab.py A.jsonl[,A2.jsonl...] B.jsonl[,B2.jsonl...]"""
import json
import statistics
import sys


def load(path):
    rows = {}
    for line in open(path):
        if line.startswith("{"):
            r = json.loads(line)
            rows[(r["format"], r["M"], r["N"], r["K"])] = r
    return rows


def main():
    a_runs = [load(p) for p in sys.argv[1].split(",")]
    b_runs = [load(p) for p in sys.argv[2].split(",")]
    many = len(a_runs) > 1 or len(b_runs) > 1
    print(f"{'format':11} {'path':11} {'M':>5} {'N':>6} {'K':>6} {'A us':>8} {'B us':>8} {'B/A':>6} {'A x':>6} {'B x':>6}"
          + ("  runs A | B" if many else ""))
    ratios = []
    moved = []
    for key, ra in a_runs[0].items():
        if not all(key in r for r in a_runs + b_runs):
            continue
        ua = statistics.median(r[key]["us"] for r in a_runs)
        ub = statistics.median(r[key]["us"] for r in b_runs)
        xa = statistics.median(r[key]["speedup_vs_dense"] for r in a_runs)
        xb = statistics.median(r[key]["speedup_vs_dense"] for r in b_runs)
        pa = ",".join(sorted({r[key]["path"] for r in a_runs}))
        pb = ",".join(sorted({r[key]["path"] for r in b_runs}))
        path = pa if pa == pb else f"{pa}>{pb}"
        line = f"{key[0]:11} {path:11} {key[1]:5} {key[2]:6} {key[3]:6} {ua:8.1f} {ub:8.1f} {ub / ua:6.3f} {xa:6.2f} {xb:6.2f}"
        if many:
            line += "  " + " ".join(f"{r[key]['us']:.1f}" for r in a_runs) + " | " + " ".join(f"{r[key]['us']:.1f}" for r in b_runs)
        print(line)
        if key[0] != "bf16":
            ratios.append(ub / ua)
            if ">" in path:
                moved.append(ub / ua)
    if many and ratios:
        print(f"B/A over {len(ratios)} quantized rows: median {statistics.median(ratios):.3f} "
              f"({min(ratios):.3f} to {max(ratios):.3f})")
    if moved:
        print(f"B/A over the {len(moved)} rows whose path changed: median {statistics.median(moved):.3f} "
              f"({min(moved):.3f} to {max(moved):.3f})")


if __name__ == "__main__":
    main()
