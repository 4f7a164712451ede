#!/usr/bin/env python3
"""Stall reasons and opcodes of an Nsight Compute source page (the sass_source.csv that
scripts/gpu_ncu_sass.sh writes): the share of each stall reason in the kernel's samples, the opcodes
holding the most stall samples against their share of the executed instructions, and the opcodes behind
each main stall reason.
Usage: scripts/ncu_stalls.py sass_source.csv"""
import collections
import csv
import sys

def num(s):
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return 0.0


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1], errors="replace", newline="") as f:
        rows = list(csv.reader(f))
    head = next((i for i, r in enumerate(rows) if "Address" in r and "Source" in r), None)
    if head is None:
        sys.exit(f"{sys.argv[1]}: no header row with Address and Source (did ncu --import fail?)")
    h = rows[head]
    body = [r for r in rows[head + 1:] if len(r) == len(h)]
    short = sum(1 for r in rows[head + 1:] if r and len(r) != len(h))
    if short:
        print(f"({short} rows with another number of columns left out)")
    # column names differ between Nsight versions: the first column that names the sampled stalls
    sampled = [i for i, c in enumerate(h) if "Stall Sampling (All" in c] or [i for i, c in enumerate(h) if "Sampl" in c]
    src = h.index("Source")
    executed = h.index("Instructions Executed") if "Instructions Executed" in h else None

    def opcode(r):
        s = r[src].split()
        if s and s[0].startswith("@"):
            s = s[1:]
        return s[0].split(".")[0] if s else None

    cols = [i for i, c in enumerate(h) if c.startswith("stall_") and "Not Issued" not in c]
    totals = {h[i]: sum(num(r[i]) for r in body) for i in cols}
    all_samples = sum(totals.values()) or 1.0
    print("stall reason (all samples), share of the kernel's samples")
    for k, v in sorted(totals.items(), key=lambda x: -x[1]):
        if v:
            print(f"  {k:26s} {v:8.0f} {100 * v / all_samples:5.1f}%")
    if sampled:
        stalls, execs = collections.defaultdict(float), collections.defaultdict(float)
        for r in body:
            o = opcode(r)
            if o:
                stalls[o] += num(r[sampled[0]])
                execs[o] += num(r[executed]) if executed is not None else 0.0
        s_total, e_total = sum(stalls.values()) or 1.0, sum(execs.values()) or 1.0
        print(f"opcode: share of stall samples, share of executed warp instructions (total {e_total:.0f})")
        for o, v in sorted(stalls.items(), key=lambda x: -x[1])[:16]:
            print(f"  {o:10s} {100 * v / s_total:5.1f}% {100 * execs[o] / e_total:5.1f}%")
    print("top opcodes per stall reason (samples), for the eight largest reasons")
    for reason in sorted(totals, key=totals.get, reverse=True)[:8]:
        if not totals[reason]:
            continue
        ri, d = h.index(reason), collections.defaultdict(float)
        for r in body:
            o = opcode(r)
            if o:
                d[o] += num(r[ri])
        print(" ", reason, sorted(((round(v), o) for o, v in d.items() if v), reverse=True)[:5])


if __name__ == "__main__":
    main()
