#!/usr/bin/env bash
# Nsight Compute's per-instruction view on the lent GPU machine: build (sm_90a), profile one launch of the
# kernel matching REGEX in `qmm bench --path PATH` on one shape at one M (the source counters and warp
# states: stall samples per SASS instruction, at the application clocks), then print the SASS
# instructions with the most stall samples, with the ten before each, so that what a warp waits on can
# be read off. The whole source page goes to $OUT/sass_source.csv.
# Usage: scripts/gpu_ncu_sass.sh SHAPE PATH REGEX M [ENV...]
#   e.g. scripts/gpu_ncu_sass.sh 8192:28672 fused mma_kernel_wgpc 64 QMM_CUDA_WG_PC=1
set -uo pipefail
. "$(dirname "$0")/gpu_lib.sh"
shape=$1 path=$2 re=$3 m=$4; shift 4
stamp build
gpu_build . build.log qmm || exit 1
stamp "ncu $re M=$m $*"
( [ $# -gt 0 ] && export "$@"
  gpu_ncu_bench "$re" "$shape" "$m" "$path" --section SourceCounters --section WarpStateStats --section LaunchStats \
    -o "$OUT/sass" -f > "$OUT/ncu_sass.log" 2>&1 )
echo "ncu rc=$?"; tail -3 "$OUT/ncu_sass.log"
ncu --import "$OUT/sass.ncu-rep" --page source --csv --print-source sass > "$OUT/sass_source.csv" 2> "$OUT/sass_source.err"
echo "source page rc=$? $(wc -l < "$OUT/sass_source.csv") lines"; head -3 "$OUT/sass_source.err"
python3 - "$OUT/sass_source.csv" <<'EOF'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
head = next((i for i, r in enumerate(rows) if any("Source" == c or "Address" == c for c in r)), None)
if head is None:
    print("no header found; first lines:", rows[:3]); sys.exit(0)
h = rows[head]; body = [r for r in rows[head + 1:] if len(r) == len(h)]
print("columns:", h)
src = next(i for i, c in enumerate(h) if c == "Source")
cand = [i for i, c in enumerate(h) if "Stall Sampling (All" in c] or [i for i, c in enumerate(h) if "Sampl" in c]
if not cand:
    sys.exit(0)
k = cand[0]
def num(s):
    try: return float(s.replace(",", ""))
    except ValueError: return 0.0
total = sum(num(r[k]) for r in body) or 1.0
print(f"stall samples ({h[k]}): {total:.0f} over {len(body)} instructions")
top = sorted(range(len(body)), key=lambda i: -num(body[i][k]))[:12]
for i in top:
    print(f"--- {100 * num(body[i][k]) / total:5.1f}%  #{i}: {body[i][src]}")
    for j in range(max(0, i - 10), i):
        print(f"        {num(body[j][k]):7.0f}  {body[j][src]}")
EOF
stamp done
