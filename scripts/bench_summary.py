#!/usr/bin/env python3
"""Prints `qmm bench --json` output (one object per line) as a compact table, one row per
(format, path, M, N, K), with the speedup over the dense bf16 path of the same run and the lowest SM
clock of its timed batches where the run read it (sm_mhz)."""
import json
import sys


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
    if not rows:
        print("no results")
        return
    print(f"device: {rows[0]['device']}; copy bandwidth {rows[0]['copy_gbps']:.0f} GB/s")
    print(f"{'format':11} {'path':11} {'M':>5} {'N':>6} {'K':>6} {'us':>9} {'GB/s':>7} {'%bw':>5} {'TFLOP/s':>8} "
          f"{'dense_us':>9} {'speedup':>7} {'rel_err':>8} {'MHz':>5}")
    for r in rows:
        print(f"{r['format']:11} {r['path']:11} {r['M']:5} {r['N']:6} {r['K']:6} {r['us']:9.1f} {r['gbps']:7.0f} "
              f"{r['pct_bw']:5.1f} {r['tflops']:8.1f} {r['dense_us']:9.1f} {r['speedup_vs_dense']:7.2f} {r['rel_err']:8.1e} "
              f"{r.get('sm_mhz', '-'):>5}")


if __name__ == "__main__":
    main()
