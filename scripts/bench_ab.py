#!/usr/bin/env python3
"""Compares two `qmm bench --json` runs (A, B) row by row: time and speedup over dense bf16 of each,
and B's time relative to A's."""
import json
import sys


def load(path):
    rows = {}
    for line in open(path):
        if line.startswith("{"):
            r = json.loads(line)
            rows[(r["format"], r["path"], r["M"], r["N"], r["K"])] = r
    return rows


def main():
    a, b = load(sys.argv[1]), load(sys.argv[2])
    print(f"{'format':11} {'path':11} {'M':>5} {'N':>6} {'K':>6} {'A us':>8} {'B us':>8} {'B/A':>6} {'A x':>6} {'B x':>6}")
    for key, ra in a.items():
        rb = b.get(key)
        if not rb:
            continue
        print(f"{key[0]:11} {key[1]:11} {key[2]:5} {key[3]:6} {key[4]:6} {ra['us']:8.1f} {rb['us']:8.1f} "
              f"{rb['us'] / ra['us']:6.3f} {ra['speedup_vs_dense']:6.2f} {rb['speedup_vs_dense']:6.2f}")


if __name__ == "__main__":
    main()
