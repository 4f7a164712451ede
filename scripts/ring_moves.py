#!/usr/bin/env python3
"""Checks the weight rings of the tensor-core kernels in SASS (the output of scripts/sass.sh, from a file
or stdin). For every weight load (LDG.E.EF.128, the evict-first 16-byte loads of the weight tiles, and
LDG.E.64, the 8-byte loads of their block scales) it finds the first later instruction that reads one of
its registers on the fall-through path (through labels and conditional branches, up to an unconditional
branch or exit). If that is a register move into the registers of another such load (a ring slot),
ptxas loaded the next tile into spare registers and copies it into the slot, and the copy waits for the
load: the ring then holds about one tile in flight instead of `depth` (with its loads issued before the
tile, PIPE at 16 rows gets all 16 of them copied, about 100 instructions after each). Prints, per kernel,
the loads and those moved; exits 1 when any load is moved.
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
    """The first instruction after ins[i] on the fall-through path that reads one of regs: (opcode,
    destination register), or None."""
    for t in ins[i + 1:]:
        body = t.split(None, 1)[1] if t.startswith("@") else t
        op = body.split()[0]
        toks = [int(x) for x in R.findall(body)]
        # the first register operand is the destination, except for stores and reductions
        srcs = set(toks) if op.startswith(("ST", "RED", "ATOM")) else set(toks[1:])
        if regs & srcs:
            return op, (toks[0] if toks else None)
        if op.startswith(("BRA", "EXIT", "RET")) and not t.startswith("@"):
            return None
    return None


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    src = open(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] != "-" else sys.stdin
    bad = 0
    for name, ins in kernels(src.read().split("\n")):
        found = []
        for i, s in enumerate(ins):
            m = re.search(r"LDG\.E(\.EF\.128|\.64)\s+R(\d+)", s)
            if m:
                found.append((i, {int(m.group(2)) + j for j in range(4 if m.group(1).endswith("128") else 2)}))
        ring = set().union(*(regs for _, regs in found)) if found else set()
        loads, moved = len(found), 0
        for i, regs in found:
            r = first_reader(ins, i, regs)
            # a move of the loaded words into another load's registers, i.e. into a ring slot
            if r and "MOV" in r[0] and r[1] in ring - regs:
                moved += 1
        bad += moved
        print(f"{name[:72]:72s} weight loads {loads:3d}, moved {moved:3d}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
