#!/usr/bin/env python3
"""Stall reasons and opcodes of an Nsight Compute source page (the sass_source.csv that
scripts/gpu_ncu_sass.sh writes): the share of each stall reason in the kernel's samples, the opcodes
holding the most stall samples against their share of the executed instructions, and the opcodes behind
each main stall reason.
Usage: scripts/ncu_stalls.py sass_source.csv"""
import collections
import csv
import sys

REASONS = ["stall_wait", "stall_not_selected", "stall_math", "stall_long_sb", "stall_selected",
           "stall_dispatch", "stall_barrier", "stall_short_sb"]


def num(s):
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return 0.0


def main():
    rows = list(csv.reader(open(sys.argv[1], errors="replace")))
    head = next(i for i, r in enumerate(rows) if "Address" in r and "Source" in r)
    h = rows[head]
    body = [r for r in rows[head + 1:] if len(r) == len(h)]
    src, samples, executed = h.index("Source"), h.index("Warp Stall Sampling (All Samples)"), h.index("Instructions Executed")

    def opcode(r):
        s = r[src].split()
        if not s:
            return None
        return (s[1] if s[0].startswith("@") and len(s) > 1 else s[0]).split(".")[0]

    cols = [i for i, c in enumerate(h) if c.startswith("stall_") and "Not Issued" not in c]
    totals = {h[i]: sum(num(r[i]) for r in body) for i in cols}
    all_samples = sum(totals.values()) or 1.0
    print("stall reason (all samples), share of the kernel's samples")
    for k, v in sorted(totals.items(), key=lambda x: -x[1]):
        if v:
            print(f"  {k:26s} {v:8.0f} {100 * v / all_samples:5.1f}%")
    stalls, execs = collections.defaultdict(float), collections.defaultdict(float)
    for r in body:
        o = opcode(r)
        if o:
            stalls[o] += num(r[samples])
            execs[o] += num(r[executed])
    s_total, e_total = sum(stalls.values()) or 1.0, sum(execs.values()) or 1.0
    print(f"opcode: share of stall samples, share of executed warp instructions (total {e_total:.0f})")
    for o, v in sorted(stalls.items(), key=lambda x: -x[1])[:16]:
        print(f"  {o:10s} {100 * v / s_total:5.1f}% {100 * execs[o] / e_total:5.1f}%")
    print("top opcodes per stall reason (samples)")
    for reason in REASONS:
        if reason not in h:
            continue
        ri, d = h.index(reason), collections.defaultdict(float)
        for r in body:
            o = opcode(r)
            if o:
                d[o] += num(r[ri])
        print(" ", reason, sorted(((round(v), o) for o, v in d.items() if v), reverse=True)[:5])


if __name__ == "__main__":
    main()
