#!/usr/bin/env python3
"""Checks the weight rings of the tensor-core kernels in SASS (the output of scripts/sass.sh, read from a
file or stdin): for every weight load (LDG.E.EF.128, the evict-first 16-byte loads of the weight tiles, and LDG.E.64,
the 8-byte loads of their block scales)
the first later instruction that reads one of its registers on the fall-through path (through labels
and conditional branches, up to an unconditional branch or exit). If that is a
register move, ptxas loaded the next tile into a spare register and copies it into the ring slot, and
the move waits for the load: the ring then holds one tile in flight instead of `depth` (found in the
ninth session: PIPE at 16 rows moved 12 of its 16 weight loads this way, ~100 instructions after each).
Prints per kernel: weight loads, those moved, and the distances of the moves in instructions; exits 1
when any load is moved.
Usage: scripts/sass.sh TU REGEX [NVCC_FLAGS] | scripts/ring_moves.py [-]"""
import re
import signal
import sys

R = re.compile(r"(?<![A-Z])R(\d+)\b")


def kernels(lines):
    name, body = None, []
    for line in lines:
        if line.startswith("== "):
            if name:
                yield name, body
            name, body = line.split()[1].rstrip(":"), []
        elif name and re.search(r"/\*[0-9a-f]{4,}\*/", line):
            body.append(re.sub(r"/\*[0-9a-f]+\*/", "", line).strip().rstrip(";").strip())
    if name:
        yield name, body


def first_reader(ins, i, regs):
    for t in ins[i + 1:]:
        body = t.split(None, 1)[1] if t.startswith("@") else t
        op = body.split()[0]
        toks = [int(x) for x in R.findall(body)]
        # the first register operand is the destination, except for stores, barriers and reductions
        srcs = set(toks) if op.startswith(("ST", "RED", "ATOM")) else set(toks[1:])
        if regs & srcs:
            return op
        if op.startswith(("BRA", "EXIT", "RET")) and not t.startswith("@"):
            return None
    return None


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    src = open(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] != "-" else sys.stdin
    bad = 0
    for name, ins in kernels(src.read().split("\n")):
        loads, moved, dist = 0, 0, []
        for i, s in enumerate(ins):
            m = re.search(r"LDG\.E(\.EF\.128|\.64)\s+R(\d+)", s)
            if not m:
                continue
            loads += 1
            op = first_reader(ins, i, {int(m.group(2)) + j for j in range(4 if m.group(1).endswith("128") else 2)})
            if op and "MOV" in op:
                moved += 1
        bad += moved
        print(f"{name[:72]:72s} weight loads {loads:3d}, moved {moved:3d}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
